/*
 * What the three files of the node path share: coll_node.c (the shared
 * collective area, its steps and lines; see there for the layout),
 * coll_node_local.c (the algorithms on one node, through the cells or by
 * single copy) and coll_node_nodes.c (the entry points of coll_node.h and
 * the algorithms across nodes).
 */
#ifndef PB_MPI_COLL_NODE_IMPL_H
#define PB_MPI_COLL_NODE_IMPL_H

#include <postbox/rsm.h>
#include <stdint.h>

#include "mpi/coll_node.h"
#include "mpi/datatype.h"
#include "mpi/engine/engine.h"

#define LINE 64
#define INLINE_MAX (LINE - 8)
/* payloads of at most this many bytes alternate between the two halves of
 * the line, call by call, and need one phase (pb_coll_node_exchange_halves);
 * up to ONE_PHASE_MAX bytes they alternate between the halves of the cell */
#define HALF_MAX (INLINE_MAX / 2)
#define ONE_PHASE_MAX 4096
#define PAGE 4096

/* tags on the collective context (coll_p2p.c's are 16-25) */
enum {
    TAG_NODE_SETUP = 30,
    TAG_NODE_MOVE,
    TAG_NODE_BARRIER
};

/* The choice of a path for the calls of one collective and size class
 * under PB_ALG_NODE_AUTO (coll_node_local.c, "The pick"): the times of the
 * last two trials of each path (each the mean over the node's ranks), and
 * the calls of that class so far; the same on every rank of the node. */
typedef struct {
    /* [PB_COLL_NODE_CELLS or _SINGLE_COPY][the later trial, the earlier]; 0: none yet */
    uint64_t ns[2][2];
    uint32_t calls;
} pb_coll_node_pick_t;

#define PB_COLL_NODE_CELLS 0
#define PB_COLL_NODE_SINGLE_COPY 1
/* the collectives that pick (a pick's kind) */
enum {
    PB_COLL_NODE_PICK_BCAST,
    PB_COLL_NODE_PICK_SCATTER,
    PB_COLL_NODE_PICK_REDUCE,
    PB_COLL_NODE_PICK_ALLREDUCE,
    PB_COLL_NODE_PICK_GATHER,
    PB_COLL_NODE_PICK_KINDS
};
/* size classes of the picks: bytes by their power of two */
#define PB_COLL_NODE_PICK_CLASSES 48

typedef struct pb_coll_node {
    int usable;         /* the area is up on every node */
    int n, me;          /* the communicator's ranks on this node; this rank's index */
    int *local_comm;    /* [n]: their ranks in the communicator */
    int nodes;          /* nodes the communicator spans */
    int node;           /* this node's index among them (by its leader's rank) */
    int *rank_node;     /* [size]: each rank's node index */
    int *node_first;    /* [nodes]: each node's leader (its first rank) */
    int blocked;        /* each node's ranks are consecutive, nodes in rank order */
    int most;           /* the most ranks any node holds */
    int even;           /* blocked, and every node holds n ranks */
    pb_comm_t *leaders; /* a leader of a communicator across nodes: the leaders */
    MPI_Request *reqs;  /* across nodes: [2 * nodes], the requests of one collective's
                         * steps between nodes (made with the area: nothing is allocated
                         * in the middle of a collective) */
    char *area;
    size_t size, cell, cells_at;
    rsm_memseg_export_handle_t ex;
    rsm_memseg_import_handle_t im;
    uint64_t step;       /* this rank's phases done (= every local rank's, between collectives) */
    uint64_t halves_end; /* the step after the last one-phase call (coll_node_local.c) */
    int halves_read;     /* in that call this rank waited for every rank's post */
    int cma; /* the ranks of every node can read each other's memory (process_vm_readv) */
    pb_coll_node_pick_t picks[PB_COLL_NODE_PICK_KINDS][PB_COLL_NODE_PICK_CLASSES];
    pb_comm_t *comm;
    struct pb_coll_node *next; /* every state made (pb_coll_node_finalize) */
} pb_coll_node_t;

/* What a rank publishes in its line for the others to read with one
 * kernel copy (process_vm_readv): its pid and the address of its data,
 * or that it has none to give (out of memory for a packed copy: the
 * others read nothing from it and their call fails, but nobody waits). */
typedef struct {
    uint32_t pid;
    uint32_t unreadable;
    uint64_t addr;
    uint64_t addr2; /* a reduction's result */
} pb_coll_node_published_t;

/* ---- the lines and cells (coll_node.c's layout) ------------------------------------ */

/* Local rank @i's step: its count of phases done. */
static inline _Atomic uint64_t *step_of(const pb_coll_node_t *cn, int i)
{
    return (_Atomic uint64_t *)(cn->area + (size_t)i * LINE);
}

/* The inline data of local rank @i's line. */
static inline char *line_data(const pb_coll_node_t *cn, int i)
{
    return cn->area + (size_t)i * LINE + 8;
}

/* Local rank @i's cell. */
static inline char *cell(const pb_coll_node_t *cn, int i)
{
    return cn->area + cn->cells_at + (size_t)i * cn->cell;
}

/* Where rank i's payload of @bytes goes: its line (one cache line carries
 * the step and the data: a reader takes one line's transfer) or its
 * cell. */
static inline char *slot(const pb_coll_node_t *cn, int i, size_t bytes)
{
    return bytes <= INLINE_MAX ? line_data(cn, i) : cell(cn, i);
}

/* ---- typed data --------------------------------------------------------------------- */

static inline size_t type_bytes(MPI_Count count, MPI_Datatype type)
{
    return (size_t)count * pb_eng_type_size(pb_mpi_datatype(type));
}

/* The address of block @i of @count elements of @type at @buf. */
static inline void *block_addr(const void *buf, int i, MPI_Count count, MPI_Datatype type)
{
    return (char *)buf + (MPI_Aint)i * count * pb_eng_type_extent(pb_mpi_datatype(type));
}

/* Pack bytes [@offset, @offset + @len) of the @count elements of @type at
 * @buf into @dst. */
static inline void pack(const void *buf, MPI_Count count, MPI_Datatype type, size_t offset,
                        void *dst, size_t len)
{
    pb_eng_type_pack_range(buf, count, pb_mpi_datatype(type), offset, dst, len);
}

/* Unpack @len packed bytes into bytes [@offset, @offset + @len) of the
 * @count elements of @type at @buf, cut to what they hold.  @return
 * MPI_SUCCESS, or MPI_ERR_TRUNCATE when cut. */
int pb_coll_node_unpack(const void *src, size_t len, void *buf, MPI_Count count, MPI_Datatype type,
                        size_t offset);

/* ---- the mechanism (coll_node.c) ---------------------------------------------------- */

/* @c's node state, made at its first call (collective over @c); NULL when
 * the node path does not apply or out of memory. */
pb_coll_node_t *pb_coll_node_state(pb_comm_t *c);

/* This rank is past one more phase (its data stored before); the local
 * ranks that sleep are woken. */
void pb_coll_node_post(pb_coll_node_t *cn);

/* Wait until local rank @j is past @step; every local rank (wait_all);
 * every other local rank (wait_others). */
void pb_coll_node_wait_one(const pb_coll_node_t *cn, int j, uint64_t step);
void pb_coll_node_wait_all(const pb_coll_node_t *cn, uint64_t step);
void pb_coll_node_wait_others(const pb_coll_node_t *cn, uint64_t step);

/* The phase a collective that writes this rank's line takes first after a
 * one-phase exchange (pb_coll_node_exchange_halves); nothing otherwise. */
void pb_coll_node_settle_halves(pb_coll_node_t *cn);

/* Publish in this rank's line its pid, @addr (and @addr2), or that it
 * has nothing the others can read (unreadable); read what local rank @j
 * published. */
void pb_coll_node_publish2(pb_coll_node_t *cn, const void *addr, uint64_t addr2);
void pb_coll_node_publish(pb_coll_node_t *cn, const void *addr);
void pb_coll_node_publish_unreadable(pb_coll_node_t *cn);
pb_coll_node_published_t pb_coll_node_published(const pb_coll_node_t *cn, int j);

/* ---- on one node (coll_node_local.c) ------------------------------------------------ */

/* Every local rank arrives, then goes. */
void pb_coll_node_barrier_local(pb_coll_node_t *cn);

/* Local rank @root's data to every local rank, inline or through the
 * root's cell. */
void pb_coll_node_bcast_cells(pb_coll_node_t *cn, void *buf, MPI_Count count, MPI_Datatype type,
                              int root);

/* Whether the slices of a reduction can split @type's elements. */
int pb_coll_node_sliceable(MPI_Datatype type);

/* Reduce the local ranks' inputs into the result of local rank @root (-1:
 * every local rank's), through the cells or by single copies, with this
 * rank's cell as scratch (nothing allocated; an element fits half a
 * cell).  @return MPI_SUCCESS or (single copy) MPI_ERR_OTHER. */
int pb_coll_node_reduce_cells(pb_coll_node_t *cn, const void *sendbuf, void *result,
                              MPI_Count count, MPI_Datatype type, MPI_Op op, int root);
int pb_coll_node_reduce_cma(pb_coll_node_t *cn, const void *sendbuf, void *result, MPI_Count count,
                            MPI_Datatype type, MPI_Op op, int root);

/* Bcast, Gather, Scatter, Allgather and Alltoall (@alltoall) on one node by
 * single copy.  A rank whose data are not contiguous packs them into
 * memory of its own, or its cell when that fails and they fit; when they
 * do not either, Bcast goes through the cells, and the others return
 * MPI_ERR_NO_MEM on that rank and MPI_ERR_OTHER on the ranks that would
 * have read it (every rank still takes every phase).  @return
 * MPI_SUCCESS or an error class. */
int pb_coll_node_bcast_cma(pb_coll_node_t *cn, void *buf, MPI_Count count, MPI_Datatype type,
                           int root);
/* Scatter through the root's cell (the blocks of all fit one). */
int pb_coll_node_scatter_cells(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                               MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                               MPI_Datatype recvtype, int root, size_t bytes);
/* One call on one node under PB_ALG_NODE_AUTO (coll_node_local.c, "The
 * pick"): pb_coll_node_pick_begin says which path it takes
 * (PB_COLL_NODE_CELLS or PB_COLL_NODE_SINGLE_COPY), the one the node's
 * recent trials of the collective @kind at the call's size class found
 * faster, or the one this call tries; after the path,
 * pb_coll_node_pick_end records the call's time when it was a trial
 * (every rank of the node takes part, so every rank calls both). */
typedef struct {
    pb_coll_node_pick_t *pick;
    int path, trial;
    int64_t start;
} pb_coll_node_call_t;

int pb_coll_node_pick_begin(pb_coll_node_t *cn, int kind, size_t bytes, pb_coll_node_call_t *call);
void pb_coll_node_pick_end(pb_coll_node_t *cn, pb_coll_node_call_t *call);
/* Bcast and Scatter (blocks of @bytes, all of them fitting a cell) on
 * one node under PB_ALG_NODE_AUTO: through the cells or by single copy,
 * as pb_coll_node_pick_begin says.  @return as the path's call. */
int pb_coll_node_bcast_auto(pb_coll_node_t *cn, void *buf, MPI_Count count, MPI_Datatype type,
                            int root);
int pb_coll_node_scatter_auto(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                              MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                              MPI_Datatype recvtype, int root, size_t bytes);
int pb_coll_node_gather_cma(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                            MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                            MPI_Datatype recvtype, int root, size_t bytes);
int pb_coll_node_scatter_cma(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                             MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                             MPI_Datatype recvtype, int root, size_t bytes);
int pb_coll_node_exchange_cma(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                              MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                              MPI_Datatype recvtype, size_t bytes, int alltoall);

/* Read @bytes at byte @off of what local rank @j published into the
 * @count elements of @type at @buf (never past them).  @return
 * MPI_SUCCESS, MPI_ERR_TRUNCATE (cut to the buffer) or MPI_ERR_OTHER (the
 * read failed, or @j published nothing to read; logged). */
int pb_coll_node_read_from(const pb_coll_node_t *cn, int j, size_t off, size_t bytes, void *buf,
                           MPI_Count count, MPI_Datatype type);

/* Whether a rank's @bytes of a one-phase call fit half its line or half
 * its cell (at most ONE_PHASE_MAX). */
int pb_coll_node_one_phase(const pb_coll_node_t *cn, size_t bytes);

/* Reduce (local rank @root, or -1: every local rank) of inputs that
 * pb_coll_node_one_phase takes, in one phase.  @return MPI_SUCCESS. */
int pb_coll_node_reduce_halves(pb_coll_node_t *cn, const void *sendbuf, void *result,
                               MPI_Count count, MPI_Datatype type, MPI_Op op, int root);

/* Allgather or Alltoall of payloads that pb_coll_node_one_phase takes, in
 * one phase.  @return MPI_SUCCESS or MPI_ERR_TRUNCATE. */
int pb_coll_node_exchange_halves(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                                 MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                 MPI_Datatype recvtype, size_t bytes, int n_blocks, int skip_own);

#endif
