/*
 * postbox-config-dump: print the library's table of POSTBOX_* tunables as
 * JSON lines, one object per variable:
 *
 *   {"name": "...", "type": "string|int|bool", "default": "..."|null, "help": "..."}
 *
 * `postbox info --config` runs it, and docs/config.md is generated from its
 * output, so the table in src/util/config.c stays the only place a default
 * is written down.
 */
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
    const pb_config_entry_t *entry;

    if (argc > 1) {
        fprintf(stderr,
                "usage: %s\n"
                "Print every POSTBOX_* tunable as a JSON line "
                "{name, type, default, help}.\n",
                argv[0]);
        return 2;
    }
    for (entry = pb_config_table(); entry->name != NULL; entry++) {
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
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("postbox-config-dump: stdout");
        return 1;
    }
    return 0;
}
