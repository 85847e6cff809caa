/*
 * Choosing a collective's algorithm (coll_table.c; docs/mpi.md, "Choosing
 * algorithms"): one declarative table from (collective, communicator
 * size, ranks per node, nodes, bytes) to an algorithm, read from
 * src/mpi/coll_table.txt (built into the library) or from the file
 * POSTBOX_COLL_TABLE names; POSTBOX_COLL_ALGORITHM forces one algorithm
 * per collective; POSTBOX_COLL_STATS=1 makes MPI_Finalize print how many
 * times each algorithm ran.
 */
#ifndef PB_MPI_COLL_TABLE_H
#define PB_MPI_COLL_TABLE_H

#include <stdatomic.h>
#include <stddef.h>

#include "mpi/comm.h"

/* The collectives the table chooses for. */
typedef enum {
    PB_COLL_BARRIER,
    PB_COLL_BCAST,
    PB_COLL_REDUCE,
    PB_COLL_ALLREDUCE,
    PB_COLL_GATHER,
    PB_COLL_SCATTER,
    PB_COLL_ALLGATHER,
    PB_COLL_ALLTOALL,
    PB_COLL_KINDS
} pb_coll_kind_t;

/* The algorithms, by the names the table uses (coll_table.c lists which
 * collective has which). */
typedef enum {
    PB_ALG_NODE,               /* the node's shared area, leaders between nodes */
    PB_ALG_NODE_CMA,           /* one node: ranks read each other's buffers */
    PB_ALG_NODE_AUTO,          /* Bcast, Scatter, Reduce, Allreduce, Gather on one node:
                                * the cells or single copy, call by call, by the node's
                                * recent times */
    PB_ALG_DISSEMINATION,      /* Barrier */
    PB_ALG_BINOMIAL,           /* Bcast, Reduce */
    PB_ALG_SCATTER_ALLGATHER,  /* Bcast: scatter, then ring allgather */
    PB_ALG_RECURSIVE_DOUBLING, /* Allreduce, Allgather (ranks a power of two) */
    PB_ALG_RABENSEIFNER,       /* Reduce, Allreduce: reduce-scatter by halving first */
    PB_ALG_DIRECT,             /* Gather, Scatter, Alltoall */
    PB_ALG_RING,               /* Allgather */
    PB_ALG_COUNT
} pb_coll_alg_t;

/* The algorithm for collective @kind on @c moving @bytes (the message of
 * Bcast, Reduce and Allreduce; one rank's block of the others; 0 for
 * Barrier): POSTBOX_COLL_ALGORITHM's for @kind if set, else the first
 * rule of the table that matches, else the collective's first
 * point-to-point algorithm.  The same on every rank of @c for the same
 * arguments.  Reads the table at its first call (a bad table is warned
 * about once, and the built-in one used). */
pb_coll_alg_t pb_coll_choose(pb_coll_kind_t kind, pb_comm_t *c, size_t bytes);

/* The point-to-point algorithm @kind falls back to when the node path
 * declines. */
pb_coll_alg_t pb_coll_fallback(pb_coll_kind_t kind);

/* Count a run of @alg for @kind (POSTBOX_COLL_STATS, the MPI_T counters),
 * and call pb_coll_ran_hook when set. */
void pb_coll_ran(pb_coll_kind_t kind, pb_coll_alg_t alg);

/* Called, when set, by pb_coll_ran (the MPI_T event postbox_coll_run,
 * tools_event.c): set while a tool has a callback for that event. */
typedef void pb_coll_ran_hook_t(pb_coll_kind_t kind, pb_coll_alg_t alg);
extern _Atomic(pb_coll_ran_hook_t *) pb_coll_ran_hook;

/* The names of collective @kind and algorithm @alg as the table writes
 * them ("allreduce", "recursive_doubling"). */
const char *pb_coll_kind_name(pb_coll_kind_t kind);
const char *pb_coll_alg_name(pb_coll_alg_t alg);

/* 1 when collective @kind has algorithm @alg, else 0. */
int pb_coll_kind_has_alg(pb_coll_kind_t kind, pb_coll_alg_t alg);

/* How many times @alg ran for @kind since MPI_Init (the MPI_T performance
 * variables coll_<kind>_<alg>, src/mpi/tools.c). */
unsigned long pb_coll_runs(pb_coll_kind_t kind, pb_coll_alg_t alg);

/* Whether MPI_Finalize prints the counts (POSTBOX_COLL_STATS), and set it
 * (the MPI_T control variable; reads the table first if it was not). */
int pb_coll_stats_get(void);
void pb_coll_stats_set(int on);

/* MPI_Finalize: print the counts when POSTBOX_COLL_STATS=1 (one line per
 * rank on stderr). */
void pb_coll_table_finalize(void);

/* Check the table text @text (a file's contents) as the library would
 * read it.  @return the number of the first bad line, or 0 when good;
 * *@why_p says what is wrong. */
int pb_coll_table_check(const char *text, const char **why_p);

#endif
