/*
 * The MPI engine's tunables: the POSTBOX_* variables of the protocol and
 * the channel, declared once in the table of tunables.c (name, type,
 * default, help).  `postbox info --config` and docs/config.md list them
 * after the library's own (src/util/config.c).
 */
#ifndef PB_ENG_TUNABLES_H
#define PB_ENG_TUNABLES_H

#include <stddef.h>

#include "util/config.h"

/* The values in force, read at MPI_Init (pb_eng_tunables_read). */
typedef struct {
    int postboxes;          /* POSTBOX_NUMPOSTBOX: ring length per sender */
    int blocks;             /* POSTBOX_POOL_BLOCKS: shared pool blocks of a sender on its node */
    int blocks_net;         /* POSTBOX_POOL_BLOCKS_NET: ... of a sender on each other node */
    size_t block_size;      /* POSTBOX_BLOCK_SIZE */
    size_t rendezvous;      /* POSTBOX_RENDEZVOUS: messages this long and longer */
    size_t split_copy;      /* POSTBOX_SPLIT_COPY: single-copy messages this long are
                               copied half by the receiver, half by the sender */
    size_t single_copy;     /* POSTBOX_SINGLE_COPY: on-node messages this long and
                               longer are read by the receiver from the sender */
    size_t single_copy_far; /* POSTBOX_SINGLE_COPY_FAR: ... and from this long toward a
                               rank whose pool copies run slow (far.h) */
    size_t far_copy_rate;   /* POSTBOX_FAR_COPY_RATE: MB/s below which they run slow */
    size_t copy_help;       /* POSTBOX_COPY_HELP: copies this long take a second thread */
    int pollall;            /* POSTBOX_POLLALL */
    int spin;               /* POSTBOX_SPIN: polls before yielding */
    int spin_set;           /* POSTBOX_SPIN is set in the environment */
    int yields;             /* POSTBOX_YIELDS: yields before sleeping */
    int yield_us;           /* POSTBOX_YIELD_US: and yields this long after them */
    int yield_set;          /* POSTBOX_YIELD_US is set in the environment */
    int show;               /* POSTBOX_SHOW_TRANSPORTS */
    int coll_node;          /* POSTBOX_COLL_NODE: collectives may use node areas */
    size_t coll_cell;       /* POSTBOX_COLL_CELL: bytes of a rank's cell there */
    size_t coll_area_max;   /* POSTBOX_COLL_AREA_MAX: bytes of areas this process makes */
} pb_eng_params_t;

extern pb_eng_params_t pb_eng_params;

/* The engine's table, terminated by an entry whose name is NULL. */
const pb_config_entry_t *pb_eng_tunables_table(void);

/* Fill pb_eng_params from the environment; a value out of its range is
 * clamped with a warning, a malformed one gives the default (warned). */
void pb_eng_tunables_read(void);

/* The range of integer tunable @name in *@min_p..*@max_p.  @return 1, or 0
 * when @name is not an integer tunable of the engine's table. */
int pb_eng_tunables_range(const char *name, long *min_p, long *max_p);

#endif
