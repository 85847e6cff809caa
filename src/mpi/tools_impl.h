/*
 * What the two files of the tools interface share: tools.c (variables,
 * categories, enumerations, the time source) and tools_event.c (events).
 */
#ifndef PB_MPI_TOOLS_IMPL_H
#define PB_MPI_TOOLS_IMPL_H

#include "mpi/mpi_impl.h"

/* The categories, in the order of MPI_T_category_get_info's indices. */
enum {
    PB_MPI_T_CAT_RSM,
    PB_MPI_T_CAT_ENGINE,
    PB_MPI_T_CAT_P2P,
    PB_MPI_T_CAT_COLL,
    PB_MPI_T_CAT_RMA,
    PB_MPI_T_CATEGORIES
};

typedef struct {
    int value;
    const char *name;
} pb_mpi_t_enum_item_t;

struct MPI_T_enum_t {
    const char *name;
    int count;
    const pb_mpi_t_enum_item_t *items;
};

/* Take the tools interface's mutex: @return MPI_SUCCESS when MPI_T is
 * initialized, else MPI_T_ERR_NOT_INITIALIZED (the mutex is taken either
 * way; pb_mpi_t_leave gives it back). */
int pb_mpi_t_enter(void);

/* Give the mutex back; @return @rc. */
int pb_mpi_t_leave(int rc);

/* Return string @s in @buf of *@len chars by the standard's convention
 * (at most *@len - 1 chars and a null; *@len = strlen(@s) + 1). */
void pb_mpi_t_put_string(const char *s, char *buf, int *len);

/* The enumeration the events use (postbox_coll_run), for
 * MPI_T_enum_get_info and _get_item; NULL before MPI_T_init_thread. */
const struct MPI_T_enum_t *pb_mpi_t_event_enum(void);

/* List the event types (once; under the mutex, from MPI_T_init_thread). */
void pb_mpi_t_events_build(void);

/* The last MPI_T_finalize: every event registration is freed (under the
 * mutex; no callback runs afterwards). */
void pb_mpi_t_events_finalize(void);

/* The events of category @cat: the first @len indices into @indices (when
 * not NULL); @return how many there are. */
int pb_mpi_t_category_events(int cat, int len, int indices[]);

#endif
