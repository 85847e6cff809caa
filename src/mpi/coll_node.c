/*
 * Collectives through a shared-memory area per communicator and node
 * (coll_node.h; seed 001 section 3.5: Sun MPI's local exchange and node
 * leaders): this file keeps the area, its lines, cells and steps;
 * coll_node_local.c the algorithms on one node, coll_node_nodes.c the
 * entry points and the algorithms across nodes (coll_node_impl.h).
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
 * the cell (a broadcast in pieces of about a quarter of the message, which
 * take the cell's slots in turn, so that copy-in and copy-out overlap).  A
 * rank writes its line or cell only once every local rank is past the
 * last phase that reads it (the previous piece's or collective's), which
 * each collective ends with; the exception is the one-phase calls of
 * payloads of up to 4 KB, which alternate between two halves of the line
 * or of the cell, call by call, and have a rule of their own
 * (coll_node_local.c).
 *
 * Waiting is the engine's (spin, yield, sleep on the doorbell); a rank
 * that stores a step wakes the local ranks that sleep.
 *
 * Single copy (node_cma): instead of writing into its cell, a rank
 * publishes in its line its pid and the address of its buffer, and the
 * others read from it with process_vm_readv (only where every rank of a
 * node could read its leader's memory when the area was made).
 *
 * Between nodes: coll_node_nodes.c.
 */
#include <postbox/rsm.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi/coll_node_impl.h"
#include "mpi/engine/cma.h"
#include "mpi/p2p.h"

static pb_coll_node_t *states;
static size_t area_bytes_made;

/* ---- steps ------------------------------------------------------------------------ */

/* This rank is past one more phase: its data before, with release order;
 * then the local ranks that sleep are woken. */
void pb_coll_node_post(pb_coll_node_t *cn)
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

/* Wait until local rank @j is past @step; every local rank (pb_coll_node_wait_all);
 * every other local rank (pb_coll_node_wait_others). */
void pb_coll_node_wait_one(const pb_coll_node_t *cn, int j, uint64_t step)
{
    wait_for((wait_arg_t){cn, j, j + 1, -1, step});
}

void pb_coll_node_wait_all(const pb_coll_node_t *cn, uint64_t step)
{
    wait_for((wait_arg_t){cn, 0, cn->n, -1, step});
}

void pb_coll_node_wait_others(const pb_coll_node_t *cn, uint64_t step)
{
    wait_for((wait_arg_t){cn, 0, cn->n, cn->me, step});
}

/* The first collective after a one-phase exchange (pb_coll_node_exchange_halves) that
 * writes this rank's line: the others read their halves after they
 * posted, so one more phase lets every rank finish reading first. */
void pb_coll_node_settle_halves(pb_coll_node_t *cn)
{
    if (cn->halves_end != 0 && cn->halves_end == cn->step) {
        pb_coll_node_post(cn);
        pb_coll_node_wait_all(cn, cn->step);
    }
}

void pb_coll_node_publish2(pb_coll_node_t *cn, const void *addr, uint64_t addr2)
{
    pb_coll_node_published_t p = {(uint32_t)getpid(), 0, (uint64_t)(uintptr_t)addr, addr2};

    memcpy(line_data(cn, cn->me), &p, sizeof(p));
}

void pb_coll_node_publish(pb_coll_node_t *cn, const void *addr)
{
    pb_coll_node_publish2(cn, addr, 0);
}

void pb_coll_node_publish_unreadable(pb_coll_node_t *cn)
{
    pb_coll_node_published_t p = {(uint32_t)getpid(), 1, 0, 0};

    memcpy(line_data(cn, cn->me), &p, sizeof(p));
}

pb_coll_node_published_t pb_coll_node_published(const pb_coll_node_t *cn, int j)
{
    pb_coll_node_published_t p;

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

/* Across nodes: the requests of the steps between nodes (every rank) and
 * the leaders' communicator (a leader).  @return 0, or -1 out of memory. */
static int make_leaders(pb_coll_node_t *cn, pb_comm_t *c)
{
    pb_comm_t *l;

    if (cn->nodes < 2)
        return 0;
    cn->reqs = malloc((size_t)(2 * cn->nodes) * sizeof(MPI_Request));
    if (cn->reqs == NULL)
        return -1;
    if (cn->me != 0)
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
    free(cn->reqs);
    cn->reqs = NULL;
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
        pb_coll_node_wait_all(cn, cn->step);
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
            pb_coll_node_publish(cn, &cn->size); /* what the others try to read */
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
            pb_coll_node_published_t p = pb_coll_node_published(cn, 0);
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
pb_coll_node_t *pb_coll_node_state(pb_comm_t *c)
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

/* Unpack @len packed bytes into bytes [@offset, @offset + @len) of the
 * @count elements of @type at @buf, cut to what they hold: ranks whose
 * counts disagree make an erroneous call, which must not write past the
 * buffer.  @return MPI_SUCCESS, or MPI_ERR_TRUNCATE when cut. */
int pb_coll_node_unpack(const void *src, size_t len, void *buf, MPI_Count count, MPI_Datatype type,
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
