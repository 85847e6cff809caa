/*
 * postbox-config-dump: print the library's table of POSTBOX_* tunables as
 * JSON lines, one object per variable:
 *
 *   {"name": "...", "type": "string|int|bool", "default": "..."|null, "help": "..."}
 *
 * `postbox info --config` runs it, and docs/config.md is generated from its
 * output, so the tables (the library's in src/util/config.c, then the MPI
 * engine's in src/mpi/engine/tunables.c) stay the only places a default is
 * written down.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mpi/engine/tunables.h"
#include "util/config.h"

static const char *type_name(pb_config_type_t type)
{
    switch (type) {
    case PB_CONFIG_STRING: return "string";
    case PB_CONFIG_INT: return "int";
    case PB_CONFIG_BOOL: return "bool";
    }
    return "unknown";
}

/* Print @text as a JSON string literal, or null. */
static void put_json_string(const char *text)
{
    if (text == NULL) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
        switch (*p) {
        case '"': fputs("\\\"", stdout); break;
        case '\\': fputs("\\\\", stdout); break;
        case '\n': fputs("\\n", stdout); break;
        case '\r': fputs("\\r", stdout); break;
        case '\t': fputs("\\t", stdout); break;
        default:
            if (*p < 0x20)
                printf("\\u%04x", *p);
            else
                putchar(*p);
        }
    }
    putchar('"');
}

/* Print every entry of @table. */
static void put_table(const pb_config_entry_t *table)
{
    for (const pb_config_entry_t *entry = table; entry->name != NULL; entry++) {
        fputs("{\"name\": ", stdout);
        put_json_string(entry->name);
        fputs(", \"type\": ", stdout);
        put_json_string(type_name(entry->type));
        fputs(", \"default\": ", stdout);
        put_json_string(entry->default_value);
        fputs(", \"help\": ", stdout);
        put_json_string(entry->help);
        fputs("}\n", stdout);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr,
                "usage: %s\n"
                "Print every POSTBOX_* tunable as a JSON line "
                "{name, type, default, help}.\n",
                argv[0]);
        return 2;
    }
    put_table(pb_config_table());
    put_table(pb_eng_tunables_table());
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("postbox-config-dump: stdout");
        return 1;
    }
    return 0;
}
