/*
 * Collectives through a shared-memory area per communicator and node
 * (coll_node.h; seed 001 section 3.5: Sun MPI's local exchange and node
 * leaders).
 *
 * The area.  At a communicator's first collective that may use it, the
 * communicator's first rank on each node (the node's *leader*) maps an
 * area and exports it over RSM (shm); the communicator's other ranks on
 * that node import and map it; every rank then agrees, through a
 * point-to-point allreduce, that all nodes have theirs, or none is used.
 * For the n ranks of the node (local index 0 .. n-1 in rank order):
 *
 *   0            64 * n (rounded up to a page)
 *   +---------+--+---------+----------+----------+
 *   | line 0  |..| line n-1| cell 0   | .. n-1   |
 *   +---------+--+---------+----------+----------+
 *   line i: | step (8 bytes) | inline data (56 bytes) |
 *
 * Line i and cell i are written by local rank i only.  step is rank i's
 * count of phases done; it only grows (no reset, no race between one
 * collective's flags and the next's).  Every local rank takes part in
 * every phase of a collective, so after each collective all of them have
 * the same count: phase k of a collective that starts at count b is
 * b + k on every rank, and "rank j is past phase k" is step_j >= b + k
 * (acquire load; the writer stores with release after its data).
 * Payloads of at most 56 bytes travel in the writer's own line (one cache
 * line carries flag and data); larger ones in its cell, in pieces of
 * the cell (or half of it, to pipeline a broadcast).  A rank writes its
 * line or cell only once every local rank is past the last phase that
 * reads it (the previous piece's or collective's), which each collective
 * ends with.
 *
 * Waiting is the engine's (spin, yield, sleep on the doorbell); a rank
 * that stores a step wakes the local ranks that sleep.
 *
 * Single copy (node_cma): instead of writing into its cell, a rank
 * publishes in its line its pid and the address of its buffer, and the
 * others read from it with process_vm_readv (only where every rank of a
 * node could read its leader's memory when the area was made).
 *
 * Between nodes, the leaders run the algorithm coll.c's table chooses on
 * a communicator of their own (one rank per node, so point-to-point; same
 * context ids as the parent: a collective is all node path or all
 * point-to-point on every rank, so their messages cannot meet another
 * collective's out of order).  Where each node's ranks are consecutive
 * (and, for some, equally many) Barrier, Bcast, Gather, Scatter and
 * Alltoall need no leaders' communicator: the ranks that cross the
 * network (a rooted collective's root, ranks of the same local index)
 * talk on the parent's collective context directly.
 */
#include "mpi/coll_node.h"

#include <postbox/rsm.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi/coll_util.h"
#include "mpi/datatype.h"
#include "mpi/engine/cma.h"
#include "mpi/engine/engine.h"
#include "mpi/op.h"
#include "mpi/p2p.h"
#include "util/log.h"

#define LINE 64
#define INLINE_MAX (LINE - 8)
/* payloads of at most this many bytes alternate between the two halves of
 * the line, call by call, and need one phase (exchange_halves) */
#define HALF_MAX (INLINE_MAX / 2)
#define PAGE 4096
/* reductions of at most this many bytes are done whole by each rank that
 * needs the result (two phases); longer ones by slices, each rank one
 * slice (three phases per piece) */
#define REDUCE_WHOLE_MAX 4096
/* across nodes, a Bcast shorter than this goes by point-to-point in a
 * tree in node order (bcast_tree), a longer one through the areas
 * (docs/notes/2026-11-27-collectives-across-nodes.md) */
#define BCAST_TREE_BELOW 65536
/* and a Reduce of a commutative op shorter than this in the mirror tree
 * (reduce_tree), a longer one by the leaders */
#define REDUCE_TREE_BELOW 524288

/* tags on the collective context (coll_p2p.c's are 16-25) */
enum {
    TAG_NODE_SETUP = 30,
    TAG_NODE_MOVE,
    TAG_NODE_BARRIER
};

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
    char *area;
    size_t size, cell, cells_at;
    rsm_memseg_export_handle_t ex;
    rsm_memseg_import_handle_t im;
    uint64_t step;       /* this rank's phases done (= every local rank's, between collectives) */
    uint64_t halves_end; /* the step after the last one-phase exchange (exchange_halves) */
    int cma; /* the ranks of every node can read each other's memory (process_vm_readv) */
    pb_comm_t *comm;
    struct pb_coll_node *next; /* every state made (pb_coll_node_finalize) */
} pb_coll_node_t;

static pb_coll_node_t *states;
static size_t area_bytes_made;

/* ---- steps ------------------------------------------------------------------------ */

static _Atomic uint64_t *step_of(const pb_coll_node_t *cn, int i)
{
    return (_Atomic uint64_t *)(cn->area + (size_t)i * LINE);
}

static char *line_data(const pb_coll_node_t *cn, int i)
{
    return cn->area + (size_t)i * LINE + 8;
}

static char *cell(const pb_coll_node_t *cn, int i)
{
    return cn->area + cn->cells_at + (size_t)i * cn->cell;
}

/* Where rank i's payload of @bytes goes: its line (one cache line carries
 * the step and the data: a reader takes one line's transfer) or its
 * cell. */
static char *slot(const pb_coll_node_t *cn, int i, size_t bytes)
{
    return bytes <= INLINE_MAX ? line_data(cn, i) : cell(cn, i);
}

/* This rank is past one more phase: its data before, with release order;
 * then the local ranks that sleep are woken. */
static void post(pb_coll_node_t *cn)
{
    if (cn->n == 1) { /* alone on its node: no area, nobody to tell */
        cn->step++;
        return;
    }
    atomic_store_explicit(step_of(cn, cn->me), ++cn->step, memory_order_release);
    for (int j = 0; j < cn->n; j++) {
        if (j != cn->me)
            pb_eng_channel_wake(cn->comm->world[cn->local_comm[j]]);
    }
}

typedef struct {
    const pb_coll_node_t *cn;
    int first, last; /* local ranks first .. last - 1 */
    int skip;        /* but this one (-1: none) */
    uint64_t step;
} wait_arg_t;

static int past(void *arg)
{
    const wait_arg_t *w = arg;

    for (int j = w->first; j < w->last; j++) {
        if (j != w->skip && atomic_load_explicit(step_of(w->cn, j), memory_order_acquire) < w->step)
            return 0;
    }
    return 1;
}

static void wait_for(wait_arg_t w)
{
    if (w.cn->n > 1 && !past(&w))
        pb_eng_wait_until(past, &w);
}

/* Wait until local rank @j is past @step; every local rank (wait_all);
 * every other local rank (wait_others). */
static void wait_one(const pb_coll_node_t *cn, int j, uint64_t step)
{
    wait_for((wait_arg_t){cn, j, j + 1, -1, step});
}

static void wait_all(const pb_coll_node_t *cn, uint64_t step)
{
    wait_for((wait_arg_t){cn, 0, cn->n, -1, step});
}

static void wait_others(const pb_coll_node_t *cn, uint64_t step)
{
    wait_for((wait_arg_t){cn, 0, cn->n, cn->me, step});
}

/* The first collective after a one-phase exchange (exchange_halves) that
 * writes this rank's line: the others read their halves after they
 * posted, so one more phase lets every rank finish reading first. */
static void settle_halves(pb_coll_node_t *cn)
{
    if (cn->halves_end != 0 && cn->halves_end == cn->step) {
        post(cn);
        wait_all(cn, cn->step);
    }
}

/* What a rank publishes in its line for the others to read with one
 * kernel copy (process_vm_readv): its pid and the address of its data. */
typedef struct {
    uint32_t pid;
    uint32_t unused;
    uint64_t addr;
    uint64_t addr2; /* a reduction's result */
} published_t;

static void publish2(pb_coll_node_t *cn, const void *addr, uint64_t addr2)
{
    published_t p = {(uint32_t)getpid(), 0, (uint64_t)(uintptr_t)addr, addr2};

    memcpy(line_data(cn, cn->me), &p, sizeof(p));
}

static void publish(pb_coll_node_t *cn, const void *addr)
{
    publish2(cn, addr, 0);
}

static published_t published(const pb_coll_node_t *cn, int j)
{
    published_t p;

    memcpy(&p, line_data(cn, j), sizeof(p));
    return p;
}

/* ---- the area ---------------------------------------------------------------------- */

static int node_index_of(const pb_coll_node_t *cn, int node_id)
{
    for (int k = 0; k < cn->nodes; k++) {
        if (pb_eng_channel.node_of[cn->comm->world[cn->node_first[k]]] == node_id)
            return k;
    }
    return -1;
}

/* Who is where: the nodes the communicator spans, in the order of their
 * first ranks, and this node's ranks.  @return 0, or -1 out of memory. */
static int layout(pb_coll_node_t *cn, pb_comm_t *c)
{
    int my_node = pb_eng_channel.node_of[c->world[c->rank]];

    cn->rank_node = malloc((size_t)c->size * sizeof(int));
    cn->node_first = malloc((size_t)c->size * sizeof(int));
    cn->local_comm = malloc((size_t)c->size * sizeof(int));
    if (cn->rank_node == NULL || cn->node_first == NULL || cn->local_comm == NULL)
        return -1;
    cn->blocked = 1;
    for (int r = 0; r < c->size; r++) {
        int node = pb_eng_channel.node_of[c->world[r]];
        int k = node_index_of(cn, node);

        if (k < 0) {
            k = cn->nodes++;
            cn->node_first[k] = r;
        }
        /* nodes are numbered as they first appear: a node's ranks are
         * consecutive exactly when the numbers never go down */
        if (r > 0 && k < cn->rank_node[r - 1])
            cn->blocked = 0;
        cn->rank_node[r] = k;
        if (node == my_node) {
            if (r == c->rank)
                cn->me = cn->n;
            cn->local_comm[cn->n++] = r;
        }
    }
    cn->node = cn->rank_node[c->rank];
    cn->even = cn->blocked;
    for (int k = 0; k < cn->nodes; k++) {
        int kn = 0;

        for (int r = 0; r < c->size; r++)
            kn += cn->rank_node[r] == k;
        cn->most = kn > cn->most ? kn : cn->most;
        if (kn != cn->n)
            cn->even = 0;
    }
    return 0;
}

static int make_leaders(pb_coll_node_t *cn, pb_comm_t *c)
{
    pb_comm_t *l;

    if (cn->nodes < 2 || cn->me != 0)
        return 0;
    l = calloc(1, sizeof(*l));
    if (l == NULL)
        return -1;
    l->handle = c->handle;
    l->context = c->context;
    l->size = cn->nodes;
    l->rank = cn->node;
    l->errhandler = c->errhandler;
    l->world = malloc((size_t)cn->nodes * sizeof(int));
    l->local = malloc((size_t)pb_eng.size * sizeof(int));
    if (l->world == NULL || l->local == NULL) {
        free(l->world);
        free(l->local);
        free(l);
        return -1;
    }
    for (int i = 0; i < pb_eng.size; i++)
        l->local[i] = -1;
    for (int k = 0; k < cn->nodes; k++) {
        l->world[k] = c->world[cn->node_first[k]];
        l->local[l->world[k]] = k;
    }
    cn->leaders = l;
    return 0;
}

static void free_leaders(pb_coll_node_t *cn)
{
    if (cn->leaders == NULL)
        return;
    free(cn->leaders->world);
    free(cn->leaders->local);
    free(cn->leaders);
    cn->leaders = NULL;
}

/* The leader: map and export the area.  @return its id, or 0 (logged). */
static rsm_memseg_id_t area_export(pb_coll_node_t *cn)
{
    rsm_memseg_id_t id = 0;
    void *mem;

    if (area_bytes_made + cn->size > pb_eng_params.coll_area_max)
        return 0;
    mem = mmap(NULL, cn->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return 0;
    if (rsm_memseg_export_create(pb_eng_channel.shm_ctl, &cn->ex, mem, cn->size, 0) !=
        RSM_SUCCESS) {
        munmap(mem, cn->size);
        cn->ex = NULL;
        return 0;
    }
    if (rsm_memseg_export_publish(cn->ex, &id, NULL, 0) != RSM_SUCCESS) {
        rsm_memseg_export_destroy(cn->ex);
        munmap(mem, cn->size);
        cn->ex = NULL;
        return 0;
    }
    cn->area = mem;
    area_bytes_made += cn->size;
    return id;
}

static int area_import(pb_coll_node_t *cn, rsm_memseg_id_t id)
{
    void *addr = NULL;

    if (rsm_memseg_import_connect(pb_eng_channel.shm_ctl, pb_eng_channel.node, id, RSM_PERM_RDWR,
                                  &cn->im) != RSM_SUCCESS) {
        cn->im = NULL;
        return -1;
    }
    if (rsm_memseg_import_map(cn->im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, cn->size) !=
        RSM_SUCCESS) {
        rsm_memseg_import_disconnect(cn->im);
        cn->im = NULL;
        return -1;
    }
    cn->area = addr;
    return 0;
}

/* Unmap this rank's view of the area; the leader first waits until every
 * local rank is past its last phase (nobody reads the area any more). */
static void area_drop(pb_coll_node_t *cn)
{
    if (cn->ex != NULL) {
        wait_all(cn, cn->step);
        rsm_memseg_export_unpublish(cn->ex);
        rsm_memseg_export_destroy(cn->ex);
        munmap(cn->area, cn->size);
        area_bytes_made -= cn->size;
        cn->ex = NULL;
    } else if (cn->im != NULL) {
        rsm_memseg_import_unmap(cn->im);
        rsm_memseg_import_disconnect(cn->im);
        cn->im = NULL;
    }
    cn->area = NULL;
}

/* Make the area on every node (collective over @c).  @return MPI_SUCCESS
 * with cn->usable 0 or 1, or an error class of the point-to-point
 * exchange. */
static int area_setup(pb_coll_node_t *cn, pb_comm_t *c)
{
    uint32_t id = 0;
    /* single copy: only where the engine may use it, and where it works */
    int ok, cma = pb_eng_params.single_copy > 0 && !pb_eng.single_copy_off, rc = MPI_SUCCESS;
    int mine[2], all[2] = {0, 0};
    MPI_Request req;

    cn->cell = pb_eng_params.coll_cell;
    cn->cells_at = ((size_t)cn->n * LINE + PAGE - 1) / PAGE * PAGE;
    cn->size = cn->cells_at + (size_t)cn->n * cn->cell;
    if (cn->n > 1 && cn->me == 0) {
        id = (uint32_t)area_export(cn);
        if (id != 0)
            publish(cn, &cn->size); /* what the others try to read */
        for (int j = 1; j < cn->n && rc == MPI_SUCCESS; j++) {
            rc = pb_mpi_isend_on(&id, 1, MPI_UINT32_T, cn->local_comm[j], TAG_NODE_SETUP, c, 1,
                                 &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
        }
        ok = id != 0;
    } else if (cn->n > 1) {
        rc = pb_mpi_irecv_on(&id, 1, MPI_UINT32_T, cn->local_comm[0], TAG_NODE_SETUP, c, 1, &req);
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_wait_requests(1, &req);
        ok = rc == MPI_SUCCESS && id != 0 && area_import(cn, id) == 0;
        if (ok) {
            published_t p = published(cn, 0);
            size_t theirs = 0;

            cma = pb_eng_cma_read(p.pid, p.addr, &theirs, sizeof(theirs)) == PB_ENG_PEER_COPY_OK &&
                  theirs == cn->size;
        }
    } else {
        ok = 1; /* alone on its node: needs no area */
    }
    if (rc == MPI_SUCCESS && make_leaders(cn, c) != 0)
        ok = 0;
    mine[0] = ok;
    mine[1] = cma;
    if (rc == MPI_SUCCESS)
        rc = pb_coll_agree_min(mine, all, 2, c);
    cn->usable = rc == MPI_SUCCESS && all[0];
    cn->cma = all[1];
    if (!cn->usable) {
        if (cn->area != NULL)
            area_drop(cn);
        free_leaders(cn);
    }
    return rc;
}

/* @c's node state, made at its first call (collective over @c); NULL when
 * the node path does not apply or out of memory. */
static pb_coll_node_t *node_state(pb_comm_t *c)
{
    pb_coll_node_t *cn = c->coll_node;
    int multi = 0;

    if (cn != NULL)
        return cn->usable ? cn : NULL;
    if (!pb_eng_params.coll_node || c->size < 2)
        return NULL;
    /* worth an area only when some node holds two ranks of @c: known from
     * the job's layout alone, so every rank decides alike */
    for (int r = 1; r < c->size && !multi; r++) {
        for (int q = 0; q < r && !multi; q++)
            multi = pb_eng_channel.node_of[c->world[r]] == pb_eng_channel.node_of[c->world[q]];
    }
    if (!multi)
        return NULL;
    cn = calloc(1, sizeof(*cn));
    if (cn == NULL)
        return NULL;
    cn->comm = c;
    c->coll_node = cn;
    cn->next = states;
    states = cn;
    if (layout(cn, c) != 0 || area_setup(cn, c) != MPI_SUCCESS)
        cn->usable = 0;
    return cn->usable ? cn : NULL;
}

static void state_free(pb_coll_node_t *cn)
{
    free_leaders(cn);
    free(cn->rank_node);
    free(cn->node_first);
    free(cn->local_comm);
    free(cn);
}

void pb_coll_node_release(pb_comm_t *c)
{
    pb_coll_node_t *cn = c->coll_node;

    if (cn == NULL)
        return;
    for (pb_coll_node_t **p = &states; *p != NULL; p = &(*p)->next) {
        if (*p == cn) {
            *p = cn->next;
            break;
        }
    }
    if (cn->area != NULL)
        area_drop(cn);
    state_free(cn);
    c->coll_node = NULL;
}

void pb_coll_node_finalize(void)
{
    while (states != NULL)
        pb_coll_node_release(states->comm);
}

/* ---- typed data in and out of the area -------------------------------------------- */

static size_t type_bytes(MPI_Count count, MPI_Datatype type)
{
    return (size_t)count * pb_eng_type_size(pb_mpi_datatype(type));
}

/* The address of block @i of @count elements of @type at @buf. */
static void *block_addr(const void *buf, int i, MPI_Count count, MPI_Datatype type)
{
    return (char *)buf + (MPI_Aint)i * count * pb_eng_type_extent(pb_mpi_datatype(type));
}

static void pack(const void *buf, MPI_Count count, MPI_Datatype type, size_t offset, void *dst,
                 size_t len)
{
    pb_eng_type_pack_range(buf, count, pb_mpi_datatype(type), offset, dst, len);
}

/* Unpack @len packed bytes into bytes [@offset, @offset + @len) of the
 * @count elements of @type at @buf, cut to what they hold: ranks whose
 * counts disagree make an erroneous call, which must not write past the
 * buffer.  @return MPI_SUCCESS, or MPI_ERR_TRUNCATE when cut. */
static int unpack(const void *src, size_t len, void *buf, MPI_Count count, MPI_Datatype type,
                  size_t offset)
{
    size_t room = type_bytes(count, type);
    int rc = MPI_SUCCESS;

    if (offset >= room)
        return len > 0 ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
    if (len > room - offset) {
        len = room - offset;
        rc = MPI_ERR_TRUNCATE;
    }
    pb_eng_type_unpack_range(src, len, buf, count, pb_mpi_datatype(type), offset);
    return rc;
}

/* ---- on the node ------------------------------------------------------------------ */

static void node_barrier(pb_coll_node_t *cn)
{
    post(cn);
    wait_all(cn, cn->step);
}

/* Local rank @root's @count elements of @type at @buf to every local rank:
 * inline, or through the root's cell in halves, so the root writes one
 * half while the others read the other. */
static void node_bcast(pb_coll_node_t *cn, void *buf, MPI_Count count, MPI_Datatype type, int root)
{
    size_t bytes = type_bytes(count, type), half = cn->cell / 2;
    uint64_t base = cn->step;

    if (bytes <= INLINE_MAX) {
        if (cn->me == root) {
            wait_all(cn, base);
            pack(buf, count, type, 0, line_data(cn, root), bytes);
        } else {
            wait_one(cn, root, base + 1);
            unpack(line_data(cn, root), bytes, buf, count, type, 0);
        }
        post(cn);
        return;
    }
    for (size_t k = 0, off = 0; off < bytes; k++, off += half) {
        size_t len = bytes - off < half ? bytes - off : half;
        char *piece = cell(cn, root) + (k % 2) * half;

        if (cn->me == root) {
            /* piece k - 2, in the same half, read by all */
            wait_all(cn, k >= 2 ? base + k - 1 : base);
            pack(buf, count, type, off, piece, len);
        } else {
            wait_one(cn, root, base + k + 1);
            unpack(piece, len, buf, count, type, off);
        }
        post(cn);
    }
}

/* A reduction the slices can split: elements one contiguous block of
 * bytes, element i at byte i * size. */
static int sliceable(MPI_Datatype type)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);

    return pb_eng_type_is_contiguous(t) && pb_eng_type_true_lb(t) == 0 &&
           pb_eng_type_extent(t) == (MPI_Aint)pb_eng_type_size(t) && pb_eng_type_size(t) > 0;
}

/* *@acc = x_0 op x_1 op ... op x_{n-1} over @count elements at byte @off
 * of every local rank's data (in its line when @in_line, else its cell),
 * in rank order (so non-commutative ops are right): acc starts as x_{n-1}
 * and takes x_j op acc for j = n-2 .. 0. */
static void combine(const pb_coll_node_t *cn, int in_line, size_t off, void *acc, MPI_Count count,
                    MPI_Datatype type, MPI_Op op)
{
    size_t len = (size_t)count * pb_eng_type_size(pb_mpi_datatype(type));
    int last = cn->n - 1;

    memcpy(acc, (in_line ? line_data(cn, last) : cell(cn, last)) + off, len);
    for (int j = cn->n - 2; j >= 0; j--)
        pb_mpi_op_apply(op, (in_line ? line_data(cn, j) : cell(cn, j)) + off, acc, count, type);
}

/* combine() of short inputs in the lines, this rank's own taken from @own
 * instead of its line. */
static void combine_own(const pb_coll_node_t *cn, const void *own, void *acc, MPI_Count count,
                        MPI_Datatype type, MPI_Op op)
{
    size_t len = (size_t)count * pb_eng_type_size(pb_mpi_datatype(type));
    int last = cn->n - 1;

    memcpy(acc, last == cn->me ? own : line_data(cn, last), len);
    for (int j = cn->n - 2; j >= 0; j--)
        pb_mpi_op_apply(op, j == cn->me ? own : line_data(cn, j), acc, count, type);
}

/* bytes of the accumulator a rank combines its slice of a piece in, a
 * chunk at a time: it stays in the first-level cache */
#define REDUCE_CHUNK 16384

/* Slice @lo .. @hi (elements of @esize bytes, from element @at of the
 * input) of the piece, reduced over every local rank in rank order (acc
 * starts as x_{n-1} and takes x_j op acc for j = n-2 .. 0): this rank's
 * input read from @sendbuf, the others' from their cells; the result
 * written to this rank's cell when @to_cell and to @result when @wants.
 * A chunk at a time, through @acc (REDUCE_CHUNK bytes): each byte of every
 * input is read once, and each of the results written once. */
static void reduce_slice(pb_coll_node_t *cn, const char *sendbuf, char *result, size_t at,
                         MPI_Count lo, MPI_Count hi, size_t esize, MPI_Datatype type, MPI_Op op,
                         int to_cell, int wants, char *acc)
{
    MPI_Count per_chunk = REDUCE_CHUNK / esize > 0 ? (MPI_Count)(REDUCE_CHUNK / esize) : 1;

    for (MPI_Count first = lo; first < hi; first += per_chunk) {
        MPI_Count elems = hi - first < per_chunk ? hi - first : per_chunk;
        size_t off = (size_t)first * esize, len = (size_t)elems * esize;

        for (int j = cn->n - 1; j >= 0; j--) {
            const char *x = j == cn->me ? sendbuf + at + off : cell(cn, j) + off;

            if (j == cn->n - 1)
                memcpy(acc, x, len);
            else
                pb_mpi_op_apply(op, x, acc, elems, type);
        }
        if (to_cell)
            memcpy(cell(cn, cn->me) + off, acc, len);
        if (wants)
            memcpy(result + at + off, acc, len);
    }
}

/*
 * Reduce the local ranks' @count elements at @sendbuf into @result of local
 * rank @root (-1: of every local rank).  Short: every rank copies its input
 * to its slot, and each that needs the result combines all of them (two
 * phases).  Long, in pieces of a cell, rank i reducing slice i of each
 * piece (three phases per piece): every rank copies the slices of its
 * input that others reduce into its cell; rank i combines slice i of its
 * own input and of the others' cells (reduce_slice) into slice i of its
 * cell (when another rank wants the result) and of its result (when it
 * does); those that want the result copy the others' slices from their
 * cells.  Only rank i writes slice i of a result, and it reads slice i of
 * its input first, so MPI_IN_PLACE is safe; its other slices are in its
 * cell before anyone writes them.  @return MPI_SUCCESS or MPI_ERR_NO_MEM.
 */
static int node_reduce(pb_coll_node_t *cn, const void *sendbuf, void *result, MPI_Count count,
                       MPI_Datatype type, MPI_Op op, int root)
{
    size_t esize = pb_eng_type_size(pb_mpi_datatype(type)), bytes = (size_t)count * esize;
    int wants = root < 0 || root == cn->me, others_want = root < 0 || root != cn->me;
    MPI_Count per_piece = (MPI_Count)(cn->cell / esize);
    char *acc;

    if (bytes <= INLINE_MAX && root == cn->me) {
        /* the root of a short one writes nothing, so it need not wait for
         * the others to be done with its line: it combines its own input
         * with the others' lines as they come */
        uint64_t base = cn->step;
        char own[INLINE_MAX];

        memcpy(own, sendbuf, bytes); /* @sendbuf may be @result */
        post(cn);
        wait_others(cn, base + 1);
        combine_own(cn, own, result, count, type, op);
        post(cn);
        return MPI_SUCCESS;
    }
    if (bytes <= REDUCE_WHOLE_MAX) {
        uint64_t base = cn->step;

        wait_all(cn, base);
        memcpy(slot(cn, cn->me, bytes), sendbuf, bytes);
        post(cn);
        if (wants) {
            wait_all(cn, base + 1);
            combine(cn, bytes <= INLINE_MAX, 0, result, count, type, op);
        }
        post(cn);
        return MPI_SUCCESS;
    }
    acc = malloc(REDUCE_CHUNK > esize ? REDUCE_CHUNK : esize);
    if (acc == NULL)
        return MPI_ERR_NO_MEM;
    for (MPI_Count first = 0; first < count; first += per_piece) {
        MPI_Count elems = count - first < per_piece ? count - first : per_piece;
        MPI_Count lo = elems * cn->me / cn->n, hi = elems * (cn->me + 1) / cn->n;
        size_t len = (size_t)elems * esize, at = (size_t)first * esize;
        const char *in = (const char *)sendbuf + at;
        uint64_t base = cn->step;

        wait_all(cn, base);
        /* the slices the others reduce: before and after this rank's */
        memcpy(cell(cn, cn->me), in, (size_t)lo * esize);
        memcpy(cell(cn, cn->me) + (size_t)hi * esize, in + (size_t)hi * esize,
               len - (size_t)hi * esize);
        post(cn);
        wait_all(cn, base + 1);
        reduce_slice(cn, sendbuf, result, at, lo, hi, esize, type, op, others_want, wants, acc);
        post(cn);
        if (wants) {
            wait_all(cn, base + 2);
            for (int j = 0; j < cn->n; j++) {
                MPI_Count jlo = elems * j / cn->n, jhi = elems * (j + 1) / cn->n;

                if (j != cn->me)
                    memcpy((char *)result + at + (size_t)jlo * esize,
                           cell(cn, j) + (size_t)jlo * esize, (size_t)(jhi - jlo) * esize);
            }
        }
        post(cn);
    }
    free(acc);
    return MPI_SUCCESS;
}

/* ---- single copy: ranks read each other's buffers --------------------------------- */

/* Data of @count elements of @type at @buf as one run of bytes others can
 * read: the buffer itself when contiguous, else a packed copy in *@mem_p
 * (to free).  NULL when out of memory. */
static const void *readable(const void *buf, MPI_Count count, MPI_Datatype type, void **mem_p)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    size_t bytes = type_bytes(count, type);

    *mem_p = NULL;
    if (pb_eng_type_is_contiguous(t))
        return (const char *)buf + pb_eng_type_true_lb(t);
    *mem_p = malloc(bytes ? bytes : 1);
    if (*mem_p != NULL)
        pack(buf, count, type, 0, *mem_p, bytes);
    return *mem_p;
}

/* Read @bytes at byte @off of what local rank @j published into the
 * @count elements of @type at @buf.  @return MPI_SUCCESS or MPI_ERR_OTHER
 * (logged). */
static int read_from(const pb_coll_node_t *cn, int j, size_t off, size_t bytes, void *buf,
                     MPI_Count count, MPI_Datatype type)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    published_t p = published(cn, j);
    char chunk[16384];
    int rc = MPI_SUCCESS;

    if (bytes > type_bytes(count, type)) {
        /* counts that disagree (erroneous): never past the buffer */
        bytes = type_bytes(count, type);
        rc = MPI_ERR_TRUNCATE;
    }
    if (pb_eng_type_is_contiguous(t)) {
        if (pb_eng_cma_read(p.pid, p.addr + off, (char *)buf + pb_eng_type_true_lb(t), bytes) ==
            PB_ENG_PEER_COPY_OK)
            return rc;
        goto failed;
    }
    for (size_t done = 0; done < bytes; done += sizeof(chunk)) {
        size_t len = bytes - done < sizeof(chunk) ? bytes - done : sizeof(chunk);

        if (pb_eng_cma_read(p.pid, p.addr + off + done, chunk, len) != PB_ENG_PEER_COPY_OK)
            goto failed;
        unpack(chunk, len, buf, count, type, done);
    }
    return rc;
failed:
    pb_error("a collective could not read a rank's buffer on its node (process_vm_readv)");
    return MPI_ERR_OTHER;
}

/* bytes of the pieces a rank combines its slice in (they stay in cache) */
#define REDUCE_PIECE 65536

/* Piece @first .. @first + @elems of local rank @j's input: this rank's
 * own in place, another's read into @buf.  NULL when the read failed. */
static const void *input_piece(const pb_coll_node_t *cn, int j, const void *sendbuf,
                               MPI_Count first, MPI_Count elems, size_t esize, void *buf)
{
    published_t p;

    if (j == cn->me)
        return (const char *)sendbuf + (size_t)first * esize;
    p = published(cn, j);
    if (pb_eng_cma_read(p.pid, p.addr + (uint64_t)first * esize, buf, (size_t)elems * esize) !=
        PB_ENG_PEER_COPY_OK)
        return NULL;
    return buf;
}

/* Deliver piece @first .. @first + @elems of the result, reduced in @acc,
 * to every local rank that wants it (all, or @root): this rank's own by
 * memcpy, the others' by process_vm_writev into the result they published.
 * @return MPI_SUCCESS or MPI_ERR_OTHER (a write failed). */
static int deliver_piece(const pb_coll_node_t *cn, const void *acc, MPI_Count first,
                         MPI_Count elems, size_t esize, void *result, int root)
{
    size_t off = (size_t)first * esize, len = (size_t)elems * esize;

    for (int j = 0; j < cn->n; j++) {
        if (root >= 0 && j != root)
            continue;
        if (j == cn->me) {
            memcpy((char *)result + off, acc, len);
            continue;
        }
        if (pb_eng_cma_write(published(cn, j).pid, published(cn, j).addr2 + off, acc, len) !=
            PB_ENG_PEER_COPY_OK)
            return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

/*
 * Reduce by slices with single copies (@root: local rank, or -1 for every
 * rank): every rank publishes its input and its result buffer; rank i
 * combines slice i of all inputs, reading the others' with
 * process_vm_readv in pieces of REDUCE_PIECE bytes, in rank order (acc
 * starts as x_{n-1} and takes x_j op acc), and writes each piece, still in
 * its cache, into the result of every rank that wants it
 * (deliver_piece); each returns once nobody reads or writes its buffers.
 * Two phases whatever the size.  Only rank i reads and writes slice i of
 * any buffer, and it reads a piece of every input before it writes that
 * piece of a result, so MPI_IN_PLACE is safe.  @return MPI_SUCCESS,
 * MPI_ERR_NO_MEM (before any phase) or MPI_ERR_OTHER (a copy failed).
 */
static int reduce_cma(pb_coll_node_t *cn, const void *sendbuf, void *result, MPI_Count count,
                      MPI_Datatype type, MPI_Op op, int root)
{
    size_t esize = pb_eng_type_size(pb_mpi_datatype(type));
    MPI_Count lo = count * cn->me / cn->n, hi = count * (cn->me + 1) / cn->n;
    MPI_Count per_piece = REDUCE_PIECE / esize > 0 ? (MPI_Count)(REDUCE_PIECE / esize) : 1;
    int wants = root < 0 || root == cn->me, rc = MPI_SUCCESS;
    char *acc = malloc((size_t)per_piece * esize), *tmp = malloc((size_t)per_piece * esize);
    uint64_t base = cn->step;

    if (acc == NULL || tmp == NULL) {
        free(acc);
        free(tmp);
        return MPI_ERR_NO_MEM;
    }
    wait_all(cn, base);
    publish2(cn, sendbuf, wants ? (uint64_t)(uintptr_t)result : 0);
    post(cn);
    wait_others(cn, base + 1);
    for (MPI_Count first = lo; first < hi && rc == MPI_SUCCESS; first += per_piece) {
        MPI_Count elems = hi - first < per_piece ? hi - first : per_piece;
        const void *in = input_piece(cn, cn->n - 1, sendbuf, first, elems, esize, acc);

        if (in != acc && in != NULL)
            memcpy(acc, in, (size_t)elems * esize);
        for (int j = cn->n - 2; j >= 0 && in != NULL; j--) {
            in = input_piece(cn, j, sendbuf, first, elems, esize, tmp);
            if (in != NULL)
                pb_mpi_op_apply(op, in, acc, elems, type);
        }
        rc = in == NULL ? MPI_ERR_OTHER : deliver_piece(cn, acc, first, elems, esize, result, root);
    }
    post(cn);
    wait_others(cn, base + 2);
    if (rc != MPI_SUCCESS)
        pb_error("a reduction could not copy to or from a rank's buffer on its node "
                 "(process_vm_readv/writev)");
    free(acc);
    free(tmp);
    return rc;
}

/* Bcast on one node: the root publishes its buffer, every other rank
 * reads it at once, the root returns once all have. */
static int bcast_cma(pb_coll_node_t *cn, void *buf, MPI_Count count, MPI_Datatype type, int root)
{
    uint64_t base = cn->step;
    int rc = MPI_SUCCESS;

    if (cn->me == root) {
        void *mem;
        const void *data = readable(buf, count, type, &mem);

        if (data == NULL)
            return MPI_ERR_NO_MEM; /* every other rank waits: erroneous from here */
        wait_all(cn, base);
        publish(cn, data);
        post(cn);
        wait_others(cn, base + 1);
        free(mem);
        return MPI_SUCCESS;
    }
    wait_one(cn, root, base + 1);
    rc = read_from(cn, root, 0, type_bytes(count, type), buf, count, type);
    post(cn);
    return rc;
}

/* Gather: every other rank publishes its block, the root reads them all,
 * then lets them go. */
static int gather_cma(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                      MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                      MPI_Datatype recvtype, int root, size_t bytes)
{
    uint64_t base = cn->step;
    int rc = MPI_SUCCESS;

    if (cn->me != root) {
        void *mem;
        const void *data = readable(sendbuf, sendcount, sendtype, &mem);

        if (data == NULL)
            return MPI_ERR_NO_MEM;
        wait_all(cn, base);
        publish(cn, data);
        post(cn);
        wait_one(cn, root, base + 1);
        free(mem);
        return MPI_SUCCESS;
    }
    if (sendbuf != MPI_IN_PLACE)
        rc = pb_coll_copy_typed(sendbuf, sendcount, sendtype,
                                block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount,
                                recvtype);
    wait_others(cn, base + 1);
    for (int j = 0; j < cn->n && rc == MPI_SUCCESS; j++) {
        if (j != cn->me)
            rc = read_from(cn, j, 0, bytes, block_addr(recvbuf, j, recvcount, recvtype), recvcount,
                           recvtype);
    }
    post(cn);
    return rc;
}

/* Scatter: the root publishes its blocks, each rank reads its own. */
static int scatter_cma(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                       MPI_Datatype recvtype, int root, size_t bytes)
{
    uint64_t base = cn->step;
    int rc = MPI_SUCCESS;

    if (cn->me == root) {
        void *mem;
        const void *data = readable(sendbuf, sendcount * cn->n, sendtype, &mem);

        if (data == NULL)
            return MPI_ERR_NO_MEM;
        wait_all(cn, base);
        publish(cn, data);
        post(cn);
        if (recvbuf != MPI_IN_PLACE)
            rc = pb_coll_copy_typed(block_addr(sendbuf, cn->me, sendcount, sendtype), sendcount,
                                    sendtype, recvbuf, recvcount, recvtype);
        wait_others(cn, base + 1);
        free(mem);
        return rc;
    }
    wait_one(cn, root, base + 1);
    rc = read_from(cn, root, (size_t)cn->me * bytes, bytes, recvbuf, recvcount, recvtype);
    post(cn);
    return rc;
}

/* Allgather and Alltoall: every rank publishes its send data and reads
 * its blocks from every other (Allgather: their whole block; Alltoall:
 * block me of theirs), then waits until all have read its own. */
static int exchange_cma(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, size_t bytes, int alltoall)
{
    uint64_t base = cn->step;
    void *mem;
    const void *data;
    int rc = MPI_SUCCESS;

    if (sendbuf == MPI_IN_PLACE) /* Allgather only: its block is in place */
        data =
            readable(block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount, recvtype, &mem);
    else
        data = readable(sendbuf, alltoall ? sendcount * cn->n : sendcount, sendtype, &mem);
    if (data == NULL)
        return MPI_ERR_NO_MEM;
    wait_all(cn, base);
    publish(cn, data);
    post(cn);
    if (sendbuf != MPI_IN_PLACE)
        rc = pb_coll_copy_typed(
            alltoall ? block_addr(sendbuf, cn->me, sendcount, sendtype) : sendbuf, sendcount,
            sendtype, block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount, recvtype);
    wait_others(cn, base + 1);
    for (int j = 0; j < cn->n && rc == MPI_SUCCESS; j++) {
        if (j != cn->me)
            rc = read_from(cn, j, alltoall ? (size_t)cn->me * bytes : 0, bytes,
                           block_addr(recvbuf, j, recvcount, recvtype), recvcount, recvtype);
    }
    post(cn);
    wait_others(cn, base + 2);
    free(mem);
    return rc;
}

/* ---- between nodes, without leaders ------------------------------------------------ */

/* The rank of local index @i on node @k (a blocked layout). */
static int rank_at(const pb_coll_node_t *cn, int k, int i)
{
    return cn->node_first[k] + i;
}

/* The ranks node @k holds (a blocked layout). */
static int node_size(const pb_coll_node_t *cn, pb_comm_t *c, int k)
{
    return (k + 1 < cn->nodes ? cn->node_first[k + 1] : c->size) - cn->node_first[k];
}

/* Send an empty message to @dest and receive one from @source on @c's
 * collective context with @tag, together.  @return MPI_SUCCESS or an
 * error class. */
static int swap_empty(int dest, int source, int tag, pb_comm_t *c)
{
    MPI_Request reqs[2];
    int rc = pb_mpi_irecv_on(NULL, 0, MPI_BYTE, source, tag, c, 1, &reqs[0]);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = pb_mpi_isend_on(NULL, 0, MPI_BYTE, dest, tag, c, 1, &reqs[1]);
    if (rc != MPI_SUCCESS) {
        pb_mpi_wait_requests(1, reqs); /* the peer's message comes anyway */
        return rc;
    }
    return pb_mpi_wait_requests(2, reqs);
}

/* Barrier across nodes that each hold n consecutive ranks: the node's
 * ranks arrive through the area, then local rank i of every node meets
 * local rank i of the others by dissemination over point-to-point (one
 * empty message each way between two nodes), each pair at once.  Nobody
 * relays and nobody waits for a release: a rank that heard from its peers
 * knows their nodes all arrived. */
static int barrier_across(pb_coll_node_t *cn, pb_comm_t *c)
{
    int rc = MPI_SUCCESS;

    node_barrier(cn);
    for (int k = 1; k < cn->nodes && rc == MPI_SUCCESS; k <<= 1)
        rc = swap_empty(rank_at(cn, (cn->node + k) % cn->nodes, cn->me),
                        rank_at(cn, (cn->node - k + cn->nodes) % cn->nodes, cn->me),
                        TAG_NODE_BARRIER, c);
    return rc;
}

/* ---- the collectives ---------------------------------------------------------------- */

int pb_coll_node_barrier(pb_comm_t *c)
{
    pb_coll_node_t *cn = node_state(c);
    int rc = MPI_SUCCESS;

    if (cn == NULL)
        return PB_COLL_NODE_DECLINED;
    if (cn->nodes == 1) {
        node_barrier(cn);
        return MPI_SUCCESS;
    }
    if (cn->even)
        return barrier_across(cn, c);
    /* every local rank arrives; the leader meets the other leaders, then
     * lets its ranks go */
    post(cn);
    if (cn->me == 0) {
        wait_all(cn, cn->step);
        rc = pb_coll_p2p_barrier(cn->leaders);
    } else {
        wait_one(cn, 0, cn->step + 1);
    }
    post(cn);
    return rc;
}

static int local_bcast(pb_coll_node_t *cn, pb_coll_alg_t alg, void *buf, MPI_Count count,
                       MPI_Datatype type, int root)
{
    if (alg == PB_ALG_NODE_CMA)
        return bcast_cma(cn, buf, count, type, root);
    node_bcast(cn, buf, count, type, root);
    return MPI_SUCCESS;
}

/* The local index of rank @r of this node. */
static int local_index(const pb_coll_node_t *cn, int r)
{
    int i = 0;

    while (cn->local_comm[i] != r)
        i++;
    return i;
}

/* Whose data node @k's ranks take from the network in a rooted
 * collective: the root itself on its node, the leader on the others. */
static int agent_of(const pb_coll_node_t *cn, int k, int root, int root_node)
{
    return k == root_node ? root : cn->node_first[k];
}

/* The rank at place @q of the order a node-ordered tree rooted at @root
 * takes (an even layout): nodes from the root's on, and on each node the
 * local ranks from the root's local index on. */
static int tree_rank(const pb_coll_node_t *cn, int root, int q)
{
    int root_node = cn->rank_node[root], root_local = root - cn->node_first[root_node];

    return rank_at(cn, (root_node + q / cn->n) % cn->nodes, (root_local + q % cn->n) % cn->n);
}

/* This rank's place in that order. */
static int tree_place(const pb_coll_node_t *cn, int root)
{
    int root_node = cn->rank_node[root], root_local = root - cn->node_first[root_node];

    return ((cn->node - root_node + cn->nodes) % cn->nodes) * cn->n +
           (cn->me - root_local + cn->n) % cn->n;
}

/* Binomial broadcast over point-to-point in the node order (an even
 * layout): the tree's upper levels cross the nodes, one message into each
 * node, and its lower levels stay on the node, whatever the root. */
static int bcast_tree(pb_coll_node_t *cn, pb_comm_t *c, void *buf, MPI_Count count,
                      MPI_Datatype type, int root)
{
    int size = c->size, q = tree_place(cn, root), mask = 1, nreqs = 0, rc = MPI_SUCCESS;
    MPI_Request reqs[32];

    for (; mask < size; mask <<= 1) {
        if (q & mask) {
            rc = pb_mpi_irecv_on(buf, count, type, tree_rank(cn, root, q - mask), TAG_NODE_MOVE, c,
                                 1, &reqs[0]);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &reqs[0]);
            break;
        }
    }
    for (mask >>= 1; mask > 0 && rc == MPI_SUCCESS; mask >>= 1) {
        if (q + mask < size) {
            rc = pb_mpi_isend_on(buf, count, type, tree_rank(cn, root, q + mask), TAG_NODE_MOVE, c,
                                 1, &reqs[nreqs]);
            if (rc == MPI_SUCCESS)
                nreqs++;
        }
    }
    if (nreqs > 0) {
        int wait_rc = pb_mpi_wait_requests(nreqs, reqs);

        rc = rc == MPI_SUCCESS ? wait_rc : rc;
    }
    return rc;
}

int pb_coll_node_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c,
                       pb_coll_alg_t alg)
{
    pb_coll_node_t *cn = node_state(c);
    int rc = MPI_SUCCESS, root_node, nodes, rel, agent, mask = 1, nreqs = 0;
    MPI_Request reqs[32];

    if (cn == NULL || (alg == PB_ALG_NODE_CMA && !cn->cma))
        return PB_COLL_NODE_DECLINED;
    if (cn->nodes > 1 && alg == PB_ALG_NODE && type_bytes(count, type) < BCAST_TREE_BELOW)
        return cn->even ? bcast_tree(cn, c, buf, count, type, root) : PB_COLL_NODE_DECLINED;
    settle_halves(cn);
    root_node = cn->rank_node[root];
    nodes = cn->nodes;
    /* Between nodes a binomial tree over one rank per node, the root
     * itself on its node (no hop to its leader first), each node's leader
     * on the others; a rank of the tree sends on before it broadcasts on
     * its node, so the network step and the node's run at once. */
    agent = agent_of(cn, cn->node, root, root_node);
    rel = (cn->node - root_node + nodes) % nodes;
    if (nodes > 1 && c->rank == agent) {
        for (; mask < nodes; mask <<= 1) {
            if (rel & mask) {
                rc =
                    pb_mpi_irecv_on(buf, count, type,
                                    agent_of(cn, (rel - mask + root_node) % nodes, root, root_node),
                                    TAG_NODE_MOVE, c, 1, &reqs[0]);
                if (rc == MPI_SUCCESS)
                    rc = pb_mpi_wait_requests(1, &reqs[0]);
                break;
            }
        }
        for (mask >>= 1; mask > 0 && rc == MPI_SUCCESS; mask >>= 1) {
            if (rel + mask < nodes) {
                rc =
                    pb_mpi_isend_on(buf, count, type,
                                    agent_of(cn, (rel + mask + root_node) % nodes, root, root_node),
                                    TAG_NODE_MOVE, c, 1, &reqs[nreqs]);
                if (rc == MPI_SUCCESS)
                    nreqs++;
            }
        }
    }
    if (cn->n > 1) {
        int node_rc = local_bcast(cn, alg, buf, count, type, local_index(cn, agent));

        rc = rc == MPI_SUCCESS ? node_rc : rc;
    }
    if (nreqs > 0) {
        int wait_rc = pb_mpi_wait_requests(nreqs, reqs);

        rc = rc == MPI_SUCCESS ? wait_rc : rc;
    }
    return rc;
}

/* Whether the node path can reduce with @op across the nodes: the leaders
 * combine node results in node order, which is rank order only when each
 * node's ranks are consecutive. */
static int reducible(const pb_coll_node_t *cn, MPI_Datatype type, MPI_Op op)
{
    return sliceable(type) && (cn->nodes == 1 || cn->blocked || pb_mpi_op_is_commutative(op));
}

/* The reduction of the node path @alg: single copies (node_cma) or
 * through the cells. */
static int local_reduce(pb_coll_node_t *cn, pb_coll_alg_t alg, const void *sendbuf, void *result,
                        MPI_Count count, MPI_Datatype type, MPI_Op op, int root)
{
    if (alg == PB_ALG_NODE_CMA)
        return reduce_cma(cn, sendbuf, result, count, type, op, root);
    return node_reduce(cn, sendbuf, result, count, type, op, root);
}

int pb_coll_node_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                           MPI_Op op, pb_comm_t *c, pb_coll_alg_t alg)
{
    pb_coll_node_t *cn = node_state(c);
    int rc, bcast_rc;

    if (cn == NULL || !reducible(cn, type, op) || (alg == PB_ALG_NODE_CMA && !cn->cma))
        return PB_COLL_NODE_DECLINED;
    settle_halves(cn);
    if (cn->nodes == 1)
        return local_reduce(cn, alg, sendbuf, recvbuf, count, type, op, -1);
    rc = cn->n > 1 ? local_reduce(cn, alg, sendbuf, recvbuf, count, type, op, 0) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && cn->n == 1 && sendbuf != recvbuf)
        memcpy(recvbuf, sendbuf, type_bytes(count, type));
    if (rc == MPI_SUCCESS && cn->me == 0)
        rc = pb_coll_p2p_allreduce(recvbuf, recvbuf, count, type, op, cn->leaders);
    if (cn->n > 1) {
        bcast_rc = local_bcast(cn, alg, recvbuf, count, type, 0);
        rc = rc == MPI_SUCCESS ? bcast_rc : rc;
    }
    return rc;
}

/* Binomial reduction of a commutative @op over point-to-point in the node
 * order of bcast_tree (an even layout): each node's ranks combine on the
 * node first, and one message leaves each node, whatever the root.
 * @return MPI_SUCCESS or an error class. */
static int reduce_tree(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf, void *recvbuf,
                       MPI_Count count, MPI_Datatype type, MPI_Op op, int root)
{
    size_t bytes = type_bytes(count, type);
    int q = tree_place(cn, root), rc = MPI_SUCCESS;
    char *acc = malloc(2 * bytes + 1), *tmp = acc + bytes;
    MPI_Request req;

    if (acc == NULL)
        return MPI_ERR_NO_MEM;
    memcpy(acc, sendbuf, bytes); /* at the root @sendbuf may be @recvbuf */
    for (int mask = 1; mask < c->size && rc == MPI_SUCCESS; mask <<= 1) {
        if (q & mask) {
            rc = pb_mpi_isend_on(acc, count, type, tree_rank(cn, root, q - mask), TAG_NODE_MOVE, c,
                                 1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
            break;
        }
        if (q + mask < c->size) {
            rc = pb_mpi_irecv_on(tmp, count, type, tree_rank(cn, root, q + mask), TAG_NODE_MOVE, c,
                                 1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
            if (rc == MPI_SUCCESS)
                pb_mpi_op_apply(op, tmp, acc, count, type);
        }
    }
    if (rc == MPI_SUCCESS && q == 0)
        memcpy(recvbuf, acc, bytes);
    free(acc);
    return rc;
}

int pb_coll_node_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                        MPI_Op op, int root, pb_comm_t *c, pb_coll_alg_t alg)
{
    pb_coll_node_t *cn = node_state(c);
    size_t bytes;
    void *partial;
    int rc = MPI_SUCCESS, root_node;
    MPI_Request req;

    if (cn == NULL || !reducible(cn, type, op) || (alg == PB_ALG_NODE_CMA && !cn->cma))
        return PB_COLL_NODE_DECLINED;
    settle_halves(cn);
    if (cn->nodes == 1) {
        int local_root = 0;

        while (cn->local_comm[local_root] != root)
            local_root++;
        return local_reduce(cn, alg, sendbuf, recvbuf, count, type, op, local_root);
    }
    if (alg == PB_ALG_NODE && type_bytes(count, type) < REDUCE_TREE_BELOW) {
        if (!cn->even || !pb_mpi_op_is_commutative(op))
            return PB_COLL_NODE_DECLINED;
        return reduce_tree(cn, c, sendbuf, recvbuf, count, type, op, root);
    }
    /* each node reduces to its leader, the leaders to the root's leader,
     * which hands the result to the root */
    bytes = type_bytes(count, type);
    root_node = cn->rank_node[root];
    partial = recvbuf;
    if (cn->me == 0 && c->rank != root) {
        partial = malloc(bytes);
        if (partial == NULL)
            rc = MPI_ERR_NO_MEM;
    }
    if (cn->n > 1) {
        int node_rc =
            local_reduce(cn, alg, sendbuf, cn->me == 0 ? partial : NULL, count, type, op, 0);

        rc = rc == MPI_SUCCESS ? node_rc : rc;
    } else if (rc == MPI_SUCCESS && partial != sendbuf) {
        memcpy(partial, sendbuf, bytes);
    }
    if (cn->me == 0) {
        if (rc == MPI_SUCCESS)
            rc = pb_coll_p2p_reduce(partial, partial, count, type, op, root_node, cn->leaders);
        if (rc == MPI_SUCCESS && cn->node == root_node && c->rank != root) {
            rc = pb_mpi_isend_on(partial, count, type, root, TAG_NODE_MOVE, c, 1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
        }
        if (partial != recvbuf)
            free(partial);
    } else if (c->rank == root) {
        rc = pb_mpi_irecv_on(recvbuf, count, type, cn->local_comm[0], TAG_NODE_MOVE, c, 1, &req);
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_wait_requests(1, &req);
    }
    return rc;
}

/* The node path of the data movers: one node; through the cells (@alg
 * PB_ALG_NODE) when @cell_bytes fit one, or by single copy
 * (PB_ALG_NODE_CMA) when the node's ranks can read each other. */
static pb_coll_node_t *mover_state(pb_comm_t *c, pb_coll_alg_t alg, size_t cell_bytes)
{
    pb_coll_node_t *cn = node_state(c);

    if (cn == NULL || cn->nodes != 1)
        return NULL;
    if (alg == PB_ALG_NODE_CMA ? !cn->cma : cell_bytes > cn->cell)
        return NULL;
    return cn;
}

/*
 * Gather across nodes (a blocked layout, each node's blocks fitting a
 * cell): on the root's node the ranks hand their blocks to the root
 * through the area; on each other node to the leader, which sends them
 * to the root in one message.  The root posts those receives first, so
 * the network step and its node's run at once.
 */
static int gather_across(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, int root, size_t bytes)
{
    int root_node = cn->rank_node[root], nreqs = 0, rc = MPI_SUCCESS;
    int agent = local_index(cn, agent_of(cn, cn->node, root, root_node));
    uint64_t base = cn->step;
    MPI_Request *reqs = NULL;
    char *all = NULL;

    if (cn->me != agent) {
        wait_all(cn, base);
        pack(sendbuf, sendcount, sendtype, 0, slot(cn, cn->me, bytes), bytes);
        post(cn);
        return MPI_SUCCESS;
    }
    /* the agent: the root (every node's blocks, in rank order) or a leader
     * (its node's) */
    all = malloc(c->rank == root ? bytes * (size_t)c->size : bytes * (size_t)cn->n);
    reqs = malloc((size_t)cn->nodes * sizeof(MPI_Request));
    if (all == NULL || reqs == NULL) {
        free(all);
        free(reqs);
        return MPI_ERR_NO_MEM; /* erroneous from here: the others wait */
    }
    for (int k = 0; c->rank == root && k < cn->nodes && rc == MPI_SUCCESS; k++) {
        if (k == root_node)
            continue;
        rc = pb_mpi_irecv_on(all + (size_t)cn->node_first[k] * bytes,
                             (MPI_Count)((size_t)node_size(cn, c, k) * bytes), MPI_BYTE,
                             cn->node_first[k], TAG_NODE_MOVE, c, 1, &reqs[nreqs]);
        if (rc == MPI_SUCCESS)
            nreqs++;
    }
    if (c->rank == root) {
        if (sendbuf != MPI_IN_PLACE)
            rc = rc == MPI_SUCCESS
                     ? pb_coll_copy_typed(sendbuf, sendcount, sendtype,
                                          block_addr(recvbuf, c->rank, recvcount, recvtype),
                                          recvcount, recvtype)
                     : rc;
    } else {
        pack(sendbuf, sendcount, sendtype, 0, all, bytes);
    }
    if (cn->n > 1) {
        wait_others(cn, base + 1);
        for (int j = 0; j < cn->n; j++) {
            if (j == cn->me)
                continue;
            if (c->rank != root)
                memcpy(all + (size_t)j * bytes, slot(cn, j, bytes), bytes);
            else if (unpack(slot(cn, j, bytes), bytes,
                            block_addr(recvbuf, cn->local_comm[j], recvcount, recvtype), recvcount,
                            recvtype, 0) != MPI_SUCCESS)
                rc = MPI_ERR_TRUNCATE;
        }
        post(cn);
    }
    if (c->rank != root && rc == MPI_SUCCESS)
        rc = pb_mpi_isend_on(all, (MPI_Count)((size_t)cn->n * bytes), MPI_BYTE, root, TAG_NODE_MOVE,
                             c, 1, &reqs[nreqs++]);
    if (nreqs > 0) {
        int wait_rc = pb_mpi_wait_requests(nreqs, reqs);

        rc = rc == MPI_SUCCESS ? wait_rc : rc;
    }
    for (int r = 0; c->rank == root && r < c->size && rc == MPI_SUCCESS; r++) {
        if (cn->rank_node[r] != root_node)
            rc = unpack(all + (size_t)r * bytes, bytes, block_addr(recvbuf, r, recvcount, recvtype),
                        recvcount, recvtype, 0);
    }
    free(all);
    free(reqs);
    return rc;
}

/*
 * Scatter across nodes (a blocked layout, each node's blocks fitting a
 * cell): the root sends each other node's leader that node's blocks in one
 * message, then hands its own node's ranks theirs through the area; each
 * leader hands its node's ranks theirs the same way.
 */
static int scatter_across(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf,
                          MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                          MPI_Count recvcount, MPI_Datatype recvtype, int root, size_t bytes)
{
    int root_node = cn->rank_node[root], nreqs = 0, rc = MPI_SUCCESS;
    int agent = local_index(cn, agent_of(cn, cn->node, root, root_node));
    size_t node_bytes = bytes * (size_t)cn->n;
    uint64_t base = cn->step;
    MPI_Request *reqs = NULL;
    char *all = NULL;

    if (cn->me != agent) {
        wait_one(cn, agent, base + 1);
        rc = unpack(slot(cn, agent, node_bytes) + (size_t)cn->me * bytes, bytes, recvbuf, recvcount,
                    recvtype, 0);
        post(cn);
        return rc;
    }
    all = malloc(c->rank == root ? bytes * (size_t)c->size : node_bytes);
    reqs = malloc((size_t)cn->nodes * sizeof(MPI_Request));
    if (all == NULL || reqs == NULL) {
        free(all);
        free(reqs);
        return MPI_ERR_NO_MEM; /* erroneous from here: the others wait */
    }
    if (c->rank == root) {
        for (int k = 0; k < cn->nodes && rc == MPI_SUCCESS; k++) {
            int first = cn->node_first[k], kn = node_size(cn, c, k);

            if (k == root_node)
                continue;
            for (int i = 0; i < kn; i++)
                pack(block_addr(sendbuf, first + i, sendcount, sendtype), sendcount, sendtype, 0,
                     all + (size_t)(first + i) * bytes, bytes);
            rc = pb_mpi_isend_on(all + (size_t)first * bytes, (MPI_Count)((size_t)kn * bytes),
                                 MPI_BYTE, first, TAG_NODE_MOVE, c, 1, &reqs[nreqs]);
            if (rc == MPI_SUCCESS)
                nreqs++;
        }
        if (cn->n > 1) {
            wait_all(cn, base);
            for (int j = 0; j < cn->n; j++) {
                if (j != cn->me)
                    pack(block_addr(sendbuf, cn->local_comm[j], sendcount, sendtype), sendcount,
                         sendtype, 0, slot(cn, cn->me, node_bytes) + (size_t)j * bytes, bytes);
            }
            post(cn);
        }
        if (recvbuf != MPI_IN_PLACE) {
            int copy_rc = pb_coll_copy_typed(block_addr(sendbuf, c->rank, sendcount, sendtype),
                                             sendcount, sendtype, recvbuf, recvcount, recvtype);

            rc = rc == MPI_SUCCESS ? copy_rc : rc;
        }
    } else {
        rc = pb_mpi_irecv_on(all, (MPI_Count)node_bytes, MPI_BYTE, root, TAG_NODE_MOVE, c, 1,
                             &reqs[0]);
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_wait_requests(1, &reqs[0]);
        if (cn->n > 1) {
            wait_all(cn, base);
            memcpy(slot(cn, cn->me, node_bytes) + bytes, all + bytes, node_bytes - bytes);
            post(cn);
        }
        if (rc == MPI_SUCCESS)
            rc = unpack(all, bytes, recvbuf, recvcount, recvtype, 0);
    }
    if (nreqs > 0) {
        int wait_rc = pb_mpi_wait_requests(nreqs, reqs);

        rc = rc == MPI_SUCCESS ? wait_rc : rc;
    }
    free(all);
    free(reqs);
    return rc;
}

int pb_coll_node_gather(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                        pb_comm_t *c, pb_coll_alg_t alg)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    size_t bytes = in_place ? type_bytes(recvcount, recvtype) : type_bytes(sendcount, sendtype);
    pb_coll_node_t *cn = node_state(c);
    uint64_t base;
    int rc = MPI_SUCCESS;

    if (cn != NULL && cn->nodes > 1 && cn->blocked && alg == PB_ALG_NODE &&
        bytes * (size_t)cn->most <= cn->cell) {
        settle_halves(cn);
        return gather_across(cn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                             root, bytes);
    }
    cn = mover_state(c, alg, bytes);
    if (cn == NULL)
        return PB_COLL_NODE_DECLINED;
    settle_halves(cn);
    if (alg == PB_ALG_NODE_CMA)
        return gather_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                          bytes);
    base = cn->step;
    if (c->rank != root) {
        wait_all(cn, base);
        pack(sendbuf, sendcount, sendtype, 0, slot(cn, cn->me, bytes), bytes);
        post(cn);
        return MPI_SUCCESS;
    }
    /* the root's own block goes straight across; the others' from their cells */
    if (!in_place)
        rc = pb_coll_copy_typed(sendbuf, sendcount, sendtype,
                                block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount,
                                recvtype);
    wait_others(cn, base + 1);
    for (int j = 0; j < cn->n; j++) {
        if (j != cn->me &&
            unpack(slot(cn, j, bytes), bytes, block_addr(recvbuf, j, recvcount, recvtype),
                   recvcount, recvtype, 0) != MPI_SUCCESS)
            rc = MPI_ERR_TRUNCATE;
    }
    post(cn);
    return rc;
}

int pb_coll_node_scatter(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                         pb_comm_t *c, pb_coll_alg_t alg)
{
    int in_place = recvbuf == MPI_IN_PLACE;
    size_t bytes =
        c->rank == root ? type_bytes(sendcount, sendtype) : type_bytes(recvcount, recvtype);
    pb_coll_node_t *cn = node_state(c);
    uint64_t base;
    int rc = MPI_SUCCESS;

    if (cn != NULL && cn->nodes > 1 && cn->blocked && alg == PB_ALG_NODE &&
        bytes * (size_t)cn->most <= cn->cell) {
        settle_halves(cn);
        return scatter_across(cn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                              root, bytes);
    }
    cn = mover_state(c, alg, bytes * (size_t)c->size);
    if (cn == NULL)
        return PB_COLL_NODE_DECLINED;
    settle_halves(cn);
    if (alg == PB_ALG_NODE_CMA)
        return scatter_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                           bytes);
    base = cn->step;
    if (c->rank == root) {
        wait_all(cn, base);
        for (int j = 0; j < cn->n; j++) {
            if (j != cn->me)
                pack(block_addr(sendbuf, j, sendcount, sendtype), sendcount, sendtype, 0,
                     slot(cn, cn->me, bytes * (size_t)cn->n) + (size_t)j * bytes, bytes);
        }
        post(cn);
        if (!in_place)
            return pb_coll_copy_typed(block_addr(sendbuf, cn->me, sendcount, sendtype), sendcount,
                                      sendtype, recvbuf, recvcount, recvtype);
        return MPI_SUCCESS;
    }
    wait_one(cn, root, base + 1);
    rc = unpack(slot(cn, root, bytes * (size_t)cn->n) + (size_t)cn->me * bytes, bytes, recvbuf,
                recvcount, recvtype, 0);
    post(cn);
    return rc;
}

/* Allgather across nodes (each node's ranks consecutive, blocks of
 * @bytes that fit a cell): each node gathers its blocks at its leader,
 * the leaders swap their nodes' parts, and each leader broadcasts the
 * whole on its node; everything moves packed, in rank order. */
static int allgather_nodes(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf,
                           MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, MPI_Datatype recvtype, size_t bytes)
{
    size_t total = bytes * (size_t)c->size;
    char *all = malloc(total ? total : 1);
    uint64_t base = cn->step;
    int rc = MPI_SUCCESS;

    if (all == NULL)
        return MPI_ERR_NO_MEM; /* erroneous from here: the others wait */
    if (cn->n > 1) {
        wait_all(cn, base);
        if (sendbuf == MPI_IN_PLACE)
            pack(block_addr(recvbuf, c->rank, recvcount, recvtype), recvcount, recvtype, 0,
                 slot(cn, cn->me, bytes), bytes);
        else
            pack(sendbuf, sendcount, sendtype, 0, slot(cn, cn->me, bytes), bytes);
        post(cn);
    }
    if (cn->me == 0) {
        int first = cn->local_comm[0], nreqs = 0;
        MPI_Request *reqs = malloc((size_t)(2 * cn->nodes) * sizeof(MPI_Request));

        if (cn->n > 1) {
            wait_all(cn, base + 1);
            for (int j = 0; j < cn->n; j++)
                memcpy(all + (size_t)cn->local_comm[j] * bytes, slot(cn, j, bytes), bytes);
        } else if (sendbuf == MPI_IN_PLACE) {
            pack(block_addr(recvbuf, c->rank, recvcount, recvtype), recvcount, recvtype, 0,
                 all + (size_t)c->rank * bytes, bytes);
        } else {
            pack(sendbuf, sendcount, sendtype, 0, all + (size_t)c->rank * bytes, bytes);
        }
        for (int k = 0; k < cn->nodes && reqs != NULL && rc == MPI_SUCCESS; k++) {
            int kfirst = cn->node_first[k], kn = 0;

            if (k == cn->node)
                continue;
            for (int r = kfirst; r < c->size && cn->rank_node[r] == k; r++)
                kn++;
            rc = pb_mpi_irecv_on(all + (size_t)kfirst * bytes, (MPI_Count)((size_t)kn * bytes),
                                 MPI_BYTE, k, TAG_NODE_MOVE, cn->leaders, 1, &reqs[nreqs]);
            if (rc == MPI_SUCCESS)
                nreqs++;
            if (rc == MPI_SUCCESS)
                rc =
                    pb_mpi_isend_on(all + (size_t)first * bytes, (MPI_Count)((size_t)cn->n * bytes),
                                    MPI_BYTE, k, TAG_NODE_MOVE, cn->leaders, 1, &reqs[nreqs]);
            if (rc == MPI_SUCCESS)
                nreqs++;
        }
        if (reqs == NULL) {
            rc = MPI_ERR_NO_MEM;
        } else {
            int wait_rc = pb_mpi_wait_requests(nreqs, reqs);

            rc = rc == MPI_SUCCESS ? wait_rc : rc;
            free(reqs);
        }
    }
    if (cn->n > 1)
        node_bcast(cn, all, (MPI_Count)total, MPI_BYTE, 0);
    for (int r = 0; r < c->size && rc == MPI_SUCCESS; r++) {
        if (r != c->rank || sendbuf != MPI_IN_PLACE)
            rc = unpack(all + (size_t)r * bytes, bytes, block_addr(recvbuf, r, recvcount, recvtype),
                        recvcount, recvtype, 0);
    }
    free(all);
    return rc;
}

/*
 * Allgather (@n_blocks 1: every rank's one block of @bytes) or Alltoall
 * (@n_blocks n: block j for local rank j) of small payloads in one phase:
 * each rank writes its blocks into one half of its line, the half the
 * call's parity chooses, posts, waits for all, and reads the others'.
 * One post per call is enough because the halves alternate: when a rank
 * writes half h again, two calls later, it has since seen every rank post
 * in the call between, which each does after reading half h.  After any
 * other collective a rank first waits for all to finish it, as the
 * two-phase paths do; and the first other collective after it that
 * writes the line settles first (settle_halves).  @return
 * MPI_SUCCESS or MPI_ERR_TRUNCATE.
 */
static int exchange_halves(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                           MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                           MPI_Datatype recvtype, size_t bytes, int n_blocks, int skip_own)
{
    uint64_t base = cn->step;
    size_t half = (size_t)(base & 1) * HALF_MAX;
    int rc = MPI_SUCCESS;

    if (cn->halves_end != base)
        wait_all(cn, base);
    for (int j = 0; j < n_blocks; j++)
        pack(n_blocks == 1 ? sendbuf : block_addr(sendbuf, j, sendcount, sendtype), sendcount,
             sendtype, 0, line_data(cn, cn->me) + half + (size_t)j * bytes, bytes);
    post(cn);
    wait_all(cn, base + 1);
    for (int j = 0; j < cn->n; j++) {
        const char *from = line_data(cn, j) + half + (n_blocks == 1 ? 0 : (size_t)cn->me * bytes);

        if ((j != cn->me || !skip_own) &&
            unpack(from, bytes, block_addr(recvbuf, j, recvcount, recvtype), recvcount, recvtype,
                   0) != MPI_SUCCESS)
            rc = MPI_ERR_TRUNCATE;
    }
    cn->halves_end = cn->step;
    return rc;
}

int pb_coll_node_allgather(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, pb_comm_t *c,
                           pb_coll_alg_t alg)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    size_t bytes = in_place ? type_bytes(recvcount, recvtype) : type_bytes(sendcount, sendtype);
    pb_coll_node_t *cn = node_state(c);
    uint64_t base;
    int rc = MPI_SUCCESS;

    if (cn != NULL && cn->nodes > 1 && cn->blocked && alg == PB_ALG_NODE && bytes <= cn->cell)
        return allgather_nodes(cn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                               bytes);
    cn = mover_state(c, alg, bytes);
    if (cn == NULL)
        return PB_COLL_NODE_DECLINED;
    if (alg != PB_ALG_NODE_CMA && bytes <= HALF_MAX) {
        if (in_place)
            return exchange_halves(cn, block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount,
                                   recvtype, recvbuf, recvcount, recvtype, bytes, 1, 1);
        return exchange_halves(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                               bytes, 1, 0);
    }
    settle_halves(cn);
    if (alg == PB_ALG_NODE_CMA)
        return exchange_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, bytes,
                            0);
    base = cn->step;
    wait_all(cn, base);
    if (in_place)
        pack(block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount, recvtype, 0,
             slot(cn, cn->me, bytes), bytes);
    else
        pack(sendbuf, sendcount, sendtype, 0, slot(cn, cn->me, bytes), bytes);
    post(cn);
    wait_all(cn, base + 1);
    for (int j = 0; j < cn->n; j++) {
        if ((j != cn->me || !in_place) &&
            unpack(slot(cn, j, bytes), bytes, block_addr(recvbuf, j, recvcount, recvtype),
                   recvcount, recvtype, 0) != MPI_SUCCESS)
            rc = MPI_ERR_TRUNCATE;
    }
    post(cn);
    return rc;
}

/*
 * Alltoall across nodes of equally many consecutive ranks (all blocks of a
 * rank fitting a cell): local rank i of each node sends local rank i of
 * every other node, in one message, its blocks for that node's ranks, all
 * pairs at once; then each rank writes into its cell, for each local rank
 * j, its own block for j and the blocks for j it received, and each rank
 * reads its blocks out of the cells of its node.  Between two nodes of n
 * ranks that is 2n messages on the network where each rank sending each
 * its block makes 2n^2.
 */
static int alltoall_across(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf,
                           MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, MPI_Datatype recvtype, size_t bytes)
{
    int n = cn->n, nodes = cn->nodes, nreqs = 0, rc = MPI_SUCCESS;
    size_t row = bytes * (size_t)n; /* one node's blocks from one rank */
    char *out = malloc(row * (size_t)nodes), *in = malloc(row * (size_t)nodes);
    MPI_Request *reqs = malloc((size_t)(2 * nodes) * sizeof(MPI_Request));
    uint64_t base = cn->step;

    if (out == NULL || in == NULL || reqs == NULL) {
        free(out);
        free(in);
        free(reqs);
        return MPI_ERR_NO_MEM; /* erroneous from here: the others wait */
    }
    /* out[k]: this rank's blocks for node k's ranks; in[k]: those of local
     * rank me of node k for this node's ranks (in[node]: this rank's own) */
    for (int k = 0; k < nodes; k++) {
        for (int j = 0; j < n; j++)
            pack(block_addr(sendbuf, rank_at(cn, k, j), sendcount, sendtype), sendcount, sendtype,
                 0, (k == cn->node ? in : out) + (size_t)k * row + (size_t)j * bytes, bytes);
    }
    for (int d = 1; d < nodes && rc == MPI_SUCCESS; d++) {
        int k = (cn->node + d) % nodes;

        rc = pb_mpi_irecv_on(in + (size_t)k * row, (MPI_Count)row, MPI_BYTE, rank_at(cn, k, cn->me),
                             TAG_NODE_MOVE, c, 1, &reqs[nreqs]);
        if (rc == MPI_SUCCESS)
            nreqs++;
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_isend_on(out + (size_t)k * row, (MPI_Count)row, MPI_BYTE,
                                 rank_at(cn, k, cn->me), TAG_NODE_MOVE, c, 1, &reqs[nreqs]);
        if (rc == MPI_SUCCESS)
            nreqs++;
    }
    if (nreqs > 0) {
        int wait_rc = pb_mpi_wait_requests(nreqs, reqs);

        rc = rc == MPI_SUCCESS ? wait_rc : rc;
    }
    /* the cell: for each local rank j, the blocks for j from local rank me
     * of every node, in node order */
    wait_all(cn, base);
    for (int j = 0; j < n; j++) {
        for (int k = 0; k < nodes; k++)
            memcpy(cell(cn, cn->me) + ((size_t)j * nodes + k) * bytes,
                   in + (size_t)k * row + (size_t)j * bytes, bytes);
    }
    post(cn);
    wait_all(cn, base + 1);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < nodes; k++) {
            if (unpack(cell(cn, i) + ((size_t)cn->me * nodes + k) * bytes, bytes,
                       block_addr(recvbuf, rank_at(cn, k, i), recvcount, recvtype), recvcount,
                       recvtype, 0) != MPI_SUCCESS)
                rc = MPI_ERR_TRUNCATE;
        }
    }
    post(cn);
    free(out);
    free(in);
    free(reqs);
    return rc;
}

int pb_coll_node_alltoall(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, pb_comm_t *c,
                          pb_coll_alg_t alg)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    size_t bytes = in_place ? type_bytes(recvcount, recvtype) : type_bytes(sendcount, sendtype);
    pb_coll_node_t *cn = node_state(c);
    uint64_t base;
    int rc = MPI_SUCCESS;

    if (cn != NULL && cn->nodes > 1 && cn->even && alg == PB_ALG_NODE &&
        bytes * (size_t)c->size <= cn->cell) {
        settle_halves(cn);
        return alltoall_across(cn, c, in_place ? recvbuf : sendbuf,
                               in_place ? recvcount : sendcount, in_place ? recvtype : sendtype,
                               recvbuf, recvcount, recvtype, bytes);
    }
    cn = mover_state(c, alg, bytes * (size_t)c->size);
    if (cn == NULL || (alg == PB_ALG_NODE_CMA && in_place)) /* in place, CMA would read blocks
                                                                being replaced */
        return PB_COLL_NODE_DECLINED;
    if (in_place) {
        sendbuf = recvbuf;
        sendcount = recvcount;
        sendtype = recvtype;
    }
    if (alg != PB_ALG_NODE_CMA && bytes * (size_t)cn->n <= HALF_MAX)
        return exchange_halves(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                               bytes, cn->n, 0);
    settle_halves(cn);
    if (alg == PB_ALG_NODE_CMA)
        return exchange_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, bytes,
                            1);
    base = cn->step;
    wait_all(cn, base);
    for (int j = 0; j < cn->n; j++)
        pack(block_addr(sendbuf, j, sendcount, sendtype), sendcount, sendtype, 0,
             slot(cn, cn->me, bytes * (size_t)cn->n) + (size_t)j * bytes, bytes);
    post(cn);
    wait_all(cn, base + 1);
    for (int j = 0; j < cn->n; j++) {
        if (unpack(slot(cn, j, bytes * (size_t)cn->n) + (size_t)cn->me * bytes, bytes,
                   block_addr(recvbuf, j, recvcount, recvtype), recvcount, recvtype,
                   0) != MPI_SUCCESS)
            rc = MPI_ERR_TRUNCATE;
    }
    post(cn);
    return rc;
}
