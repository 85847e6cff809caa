/*
 * Tunables.  Every POSTBOX_* variable is declared once, in the table of the
 * layer that reads it, with its default and a one-line help: the library's
 * in config.c, the MPI engine's in src/mpi/engine/tunables.c.
 * `postbox info --config` prints both tables (tools/postbox_config_dump.c),
 * and docs/config.md is generated from them.
 */
#ifndef PB_UTIL_CONFIG_H
#define PB_UTIL_CONFIG_H

#include <stddef.h>

typedef enum {
    PB_CONFIG_STRING,
    PB_CONFIG_INT,
    PB_CONFIG_BOOL
} pb_config_type_t;

typedef struct {
    const char *name; /* environment variable */
    pb_config_type_t type;
    const char *default_value; /* as text; NULL when unset by default */
    const char *help;          /* one line, without the default */
} pb_config_entry_t;

/* The table, terminated by an entry whose name is NULL. */
const pb_config_entry_t *pb_config_table(void);

/* The value of @name: the environment's, else @table's default.  @name
 * must be in @table (an unknown name aborts: it is a programming error). */
const char *pb_config_table_get_string(const pb_config_entry_t *table, const char *name);

/* As pb_config_table_get_string, parsed as a decimal or 0x integer; a
 * malformed value logs a warning and yields the default. */
long pb_config_table_get_long(const pb_config_entry_t *table, const char *name);

/* The RSM controller to use between nodes (POSTBOX_TRANSPORT: "tcp" or
 * "ofi"), or NULL, with an error logged, for any other value. */
char *pb_config_network_controller(void);

/* pb_config_table_get_string and _long on the library's table. */
const char *pb_config_get_string(const char *name);
long pb_config_get_long(const char *name);

#endif
