/*
 * Channels between ranks: each node's postbox area, connections made on
 * first use, postbox rings and buffer pools with flow control, and
 * sleeping (channel.h).  The paths (path.h) do the writing; this file
 * chooses one per channel when it is made and never names them after.
 *
 * Every node has one *area* (Sun MPI's remote buffer placement, in
 * "Ultra-High Performance Communication with MPI and the Sun Fire Link
 * Interconnect", section 3.1): in it each sender of the job owns a memory
 * area that it alone allocates from, used for messages to *any* rank of
 * that node.  Layout of the area of a node with n ranks, in a job of N
 * (page aligned; the postbox and acknowledgement layouts are in channel.h):
 *
 *   lines    a 64-byte line per rank of the node (index i, ranks in job
 *            order): its sleeping word
 *   acks     for each rank a of the node and each job rank p, 16 bytes: the
 *            count of a's postboxes p consumed, then its complement
 *            (written by p; a reader takes the pair only when they agree,
 *            so a put torn by the transport is never believed)
 *   senders  for each job rank s: its rings toward each rank of the node
 *            (pb_eng_params.postboxes postboxes each), then its pool:
 *            POSTBOX_POOL_BLOCKS blocks (s on this node) or
 *            POSTBOX_POOL_BLOCKS_NET (s elsewhere) that any receiver here
 *            may be sent through, plus PB_ENG_RESERVE_BLOCKS per receiver
 *            that only messages to that receiver use
 *
 * The node's first rank exports the area on shm; every rank of the node
 * maps it, and exports its mapping on tcp, so a sender on another node
 * puts into the receiver's own export: the frames are applied by the
 * receiving process, which polls for them.  So the pools a node holds grow
 * with the job's size, not with its square.
 *
 * Sender s alone writes its rings (postbox k toward r at slot k % postboxes,
 * its sequence word k + 1 last) and allocates its pool's blocks (a bitmap
 * in s's memory); blocks go back as the receivers' acknowledgement counts
 * pass the postboxes that carried them, in any order across receivers.  On
 * the node the sender stores through the mapping; toward another node it
 * puts (data, an acknowledgement owed, the postbox, as one putv whose last
 * word lands last, with the signal).
 *
 * Each rank also exports a one-page *doorbell* on shm: a rank of its node
 * that finds it asleep posts the doorbell's signal.
 */
#include "mpi/engine/channel.h"

#include <postbox/job.h>
#include <postbox/rsm.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi/engine/path.h"
#include "util/config.h"
#include "util/log.h"

#define CHANNEL_KVS_AREA "pb-mpi-area-%d" /* node id -> the area's shm segment id */
#define CHANNEL_KVS_RANK "pb-mpi-rank-%d" /* rank -> "doorbell id:tcp id" */
/* How long a waiting rank yields before it sleeps on a host with more
 * ranks than cores but at most two to a core, in a job on one node
 * (POSTBOX_YIELD_US unset): the rank it waits for is
 * often runnable on a shared core, and a yield hands the core over at
 * once, while waking a sleeper costs tens of microseconds; a scheduler's
 * time slice (a few ms) covers the waits within a collective
 * (docs/notes/2026-11-27-collective-waits-on-shared-cores.md). */
#define CROWDED_YIELD_US 5000

pb_eng_channel_t pb_eng_channel;

/* How many times the engine started before in this process: the last
 * MPI_Session_finalize stops it and a later MPI_Session_init starts it
 * again, in every process together.  A key-value space keeps a key once
 * put, so the keys of the k-th start (k > 0) end in "-<k>". */
static unsigned channel_starts;

/* Write the key @format (with the node or rank @id) of this start in @key. */
static void channel_key(char *key, size_t len, const char *format, int id)
{
    int n = snprintf(key, len, format, id);

    if (channel_starts > 0 && n > 0 && (size_t)n < len)
        snprintf(key + n, len - (size_t)n, "-%u", channel_starts);
}

static void network_claim(int claim);
static void send_ack(int source);

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

_Noreturn void pb_eng_fatal(const char *what)
{
    char message[160];

    snprintf(message, sizeof(message), "postbox mpi: rank %d: %s", pb_eng_channel.rank, what);
    postbox_job_abort(MPI_ERR_OTHER, message);
}

/* ---- layout of a node's area ---------------------------------------------- */

static size_t acks_offset(int node)
{
    return (size_t)pb_eng_channel.node_ranks[node] * PB_ENG_LINE;
}

/* Where rank @p acknowledges the postboxes of the @a-th rank of @node. */
static size_t ack_offset(int node, int a, int p)
{
    return acks_offset(node) +
           ((size_t)a * (size_t)pb_eng_channel.size + (size_t)p) * PB_ENG_ACK_SIZE;
}

/* The shared blocks of @sender's pool on @node. */
static int shared_blocks(int node, int sender)
{
    return pb_eng_channel.node_of[sender] == node ? pb_eng_params.blocks : pb_eng_params.blocks_net;
}

static size_t pool_size(int node, int sender)
{
    int blocks =
        shared_blocks(node, sender) + PB_ENG_RESERVE_BLOCKS * pb_eng_channel.node_ranks[node];

    return (size_t)blocks * pb_eng_params.block_size;
}

static size_t sender_area_size(int node, int sender)
{
    return round_up((size_t)pb_eng_channel.node_ranks[node] * pb_eng_channel.ring_size +
                        pool_size(node, sender),
                    PB_ENG_LINE);
}

/* Where @sender's area starts in @node's area; with @sender = the job's
 * size, where the senders' areas end. */
static size_t area_offset(int node, int sender)
{
    size_t offset = round_up(ack_offset(node, pb_eng_channel.node_ranks[node], 0), PB_ENG_LINE);

    for (int s = 0; s < sender; s++)
        offset += sender_area_size(node, s);
    return offset;
}

static _Atomic uint32_t *sleeping_word(int local)
{
    return (_Atomic uint32_t *)(pb_eng_channel.area + (size_t)local * PB_ENG_LINE);
}

/* ---- start and end ---------------------------------------------------------- */

/* How many ranks of the job this host runs for each CPU this process may
 * use (virtual nodes share their host's cores): 0 when they are at most
 * as many as the CPUs (or it cannot tell), 1 when at most twice as many,
 * 2 when more.  Past 0 a waiting rank holds a core another rank needs to
 * answer it.  Of a universe of slots (postbox run --universe) the ranks
 * counted are those started before this process and with it: the slots
 * up to the end of its world (the empty slots would make every job with a
 * universe look oversubscribed).  A launcher that binds the ranks says in
 * POSTBOX_CPU_SHARERS how many are bound to this process's CPUs (postbox
 * run --bind-to core, --bind-nodes): those are the ranks counted, as the
 * others run on CPUs this process cannot see. */
static int host_crowding(void)
{
    const char *mine = postbox_job_node_name(pb_eng_channel.node);
    const char *slash = mine != NULL ? strrchr(mine, '/') : NULL;
    const char *sharers = getenv("POSTBOX_CPU_SHARERS");
    int ranks = 0, started = pb_eng_channel.world_end;
    cpu_set_t cpus;

    if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0)
        return 0;
    if (sharers != NULL && *sharers != '\0') {
        char *end;
        long n = strtol(sharers, &end, 10);

        if (*end == '\0' && n > 0 && n <= INT_MAX)
            ranks = (int)n;
        else
            pb_warn("POSTBOX_CPU_SHARERS=%s is not a count of ranks: ignored", sharers);
    }
    if (ranks == 0) {
        if (slash == NULL)
            return 0;
        /* node names are "<host>/<virtual node>" */
        for (int r = 0; r < started; r++) {
            const char *name = postbox_job_node_name((rsm_node_id_t)pb_eng_channel.node_of[r]);

            if (name != NULL && strncmp(name, mine, (size_t)(slash - mine) + 1) == 0)
                ranks++;
        }
    }
    return ranks <= CPU_COUNT(&cpus) ? 0 : ranks <= 2 * CPU_COUNT(&cpus) ? 1 : 2;
}

/* Learn where every rank runs.  @return 0, or -1 without memory. */
static int job_map(void)
{
    pb_eng_channel.nodes = postbox_job_node_count();
    pb_eng_channel.node_of = calloc((size_t)pb_eng_channel.size, sizeof(int));
    pb_eng_channel.local_of = calloc((size_t)pb_eng_channel.size, sizeof(int));
    pb_eng_channel.node_ranks = calloc((size_t)pb_eng_channel.nodes, sizeof(int));
    pb_eng_channel.pools = calloc((size_t)pb_eng_channel.nodes, sizeof(*pb_eng_channel.pools));
    if (pb_eng_channel.node_of == NULL || pb_eng_channel.local_of == NULL ||
        pb_eng_channel.node_ranks == NULL || pb_eng_channel.pools == NULL)
        return -1;
    for (int r = 0; r < pb_eng_channel.size; r++) {
        int node = (int)postbox_job_node(r);

        pb_eng_channel.node_of[r] = node;
        pb_eng_channel.local_of[r] = pb_eng_channel.node_ranks[node]++;
    }
    pb_eng_channel.local = pb_eng_channel.local_of[pb_eng_channel.rank];
    return 0;
}

static int export_on(rsmapi_controller_handle_t ctl, void *memory, size_t size,
                     rsm_memseg_export_handle_t *ex, rsm_memseg_id_t *id, const char *what)
{
    int rc = rsm_memseg_export_create(ctl, ex, memory, size, 0);

    if (rc == RSM_SUCCESS) {
        *id = 0;
        rc = rsm_memseg_export_publish(*ex, id, NULL, 0);
        if (rc != RSM_SUCCESS)
            rsm_memseg_export_destroy(*ex);
    }
    if (rc != RSM_SUCCESS)
        pb_error("MPI_Init: cannot export %s: %s", what, rsm_strerror(rc));
    return rc;
}

/* The node's first rank makes the area and exports it on shm; the others
 * map it after the fence that follows.  @return MPI_SUCCESS or an MPI
 * error class (logged). */
static int area_create(void)
{
    char key[32], value[32];

    if (pb_eng_channel.local != 0)
        return MPI_SUCCESS;
    pb_eng_channel.area = mmap(NULL, pb_eng_channel.area_size, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pb_eng_channel.area == MAP_FAILED) {
        pb_eng_channel.area = NULL;
        pb_error("MPI_Init: no memory for the node's postbox area (%zu bytes)",
                 pb_eng_channel.area_size);
        return MPI_ERR_NO_MEM;
    }
    if (export_on(pb_eng_channel.shm_ctl, pb_eng_channel.area, pb_eng_channel.area_size,
                  &pb_eng_channel.area_ex, &pb_eng_channel.area_id,
                  "the node's postbox area") != RSM_SUCCESS)
        return MPI_ERR_OTHER;
    channel_key(key, sizeof(key), CHANNEL_KVS_AREA, (int)pb_eng_channel.node);
    snprintf(value, sizeof(value), "%u", (unsigned)pb_eng_channel.area_id);
    if (postbox_job_kvs_put(key, value) != 0) {
        pb_error("MPI_Init: cannot publish the postbox area's id");
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static int area_map(void)
{
    char key[32], value[32];
    unsigned id;
    void *addr = NULL;
    int rc;

    if (pb_eng_channel.local == 0)
        return MPI_SUCCESS;
    channel_key(key, sizeof(key), CHANNEL_KVS_AREA, (int)pb_eng_channel.node);
    if (postbox_job_kvs_get(key, value, sizeof(value)) != 0 || sscanf(value, "%u", &id) != 1) {
        pb_error("MPI_Init: the node's first rank published no postbox area");
        return MPI_ERR_OTHER;
    }
    rc = rsm_memseg_import_connect(pb_eng_channel.shm_ctl, pb_eng_channel.node, id, RSM_PERM_RDWR,
                                   &pb_eng_channel.area_im);
    if (rc == RSM_SUCCESS) {
        rc = rsm_memseg_import_map(pb_eng_channel.area_im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0,
                                   pb_eng_channel.area_size);
        if (rc != RSM_SUCCESS) {
            rsm_memseg_import_disconnect(pb_eng_channel.area_im);
            pb_eng_channel.area_im = NULL;
        }
    }
    if (rc != RSM_SUCCESS && pb_eng_channel.world_first > 0) {
        int maker = 0;

        while (pb_eng_channel.node_of[maker] != (int)pb_eng_channel.node)
            maker++;
        pb_error("MPI_Init: cannot map the node's postbox area: %s; its maker, slot %d (the "
                 "node's first rank of `postbox run`), has ended: a process can be spawned onto "
                 "a node only while that rank runs",
                 rsm_strerror(rc), maker);
        return MPI_ERR_OTHER;
    }
    if (rc != RSM_SUCCESS) {
        pb_error("MPI_Init: cannot map the node's postbox area: %s", rsm_strerror(rc));
        return MPI_ERR_OTHER;
    }
    pb_eng_channel.area = addr;
    return MPI_SUCCESS;
}

int pb_eng_channel_init(void)
{
    char key[32], value[64];
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t offset;
    int rc, crowding, oversubscribed;

    pb_eng_tunables_read();
    pb_eng_channel.rank = postbox_job_rank();
    pb_eng_channel.size = postbox_job_size();
    pb_eng_channel.node = postbox_job_node(pb_eng_channel.rank);
    pb_eng_channel.world_first = postbox_job_world_first();
    pb_eng_channel.world_end = pb_eng_channel.world_first + postbox_job_world_size();
    pb_eng_channel.ring_size = (size_t)pb_eng_params.postboxes * PB_ENG_POSTBOX_SIZE;
    pb_eng_channel.out = calloc((size_t)pb_eng_channel.size, sizeof(*pb_eng_channel.out));
    pb_eng_channel.in = calloc((size_t)pb_eng_channel.size, sizeof(*pb_eng_channel.in));
    if (pb_eng_channel.out == NULL || pb_eng_channel.in == NULL || job_map() != 0) {
        pb_error("MPI_Init: no memory for the channels of %d ranks", pb_eng_channel.size);
        return MPI_ERR_NO_MEM;
    }
    /* more ranks than cores: a waiting rank yields at once (it spins
     * only when told to); at most two ranks to a core, in a job on one
     * node, it keeps yielding CROWDED_YIELD_US before it sleeps (unless
     * told otherwise): across nodes a yielding rank would take processor
     * time from the ranks that move the messages over the network while
     * it waits for them, and with more ranks to a core from the one rank
     * of its core that works */
    crowding = !pb_eng_params.spin_set || !pb_eng_params.yield_set ? host_crowding() : 0;
    oversubscribed = crowding > 0;
    if (oversubscribed && !pb_eng_params.spin_set)
        pb_eng_params.spin = 0;
    if (crowding == 1 && !pb_eng_params.yield_set && pb_eng_channel.nodes == 1)
        pb_eng_params.yield_us = CROWDED_YIELD_US;
    pb_eng_channel.area_size =
        round_up(area_offset((int)pb_eng_channel.node, pb_eng_channel.size), page);
    pb_eng_channel.bell =
        mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pb_eng_channel.bell == MAP_FAILED) {
        pb_eng_channel.bell = NULL;
        return MPI_ERR_NO_MEM;
    }
    if (rsm_get_controller("shm", &pb_eng_channel.shm_ctl) != RSM_SUCCESS)
        return MPI_ERR_OTHER;
    rc = area_create();
    if (rc != MPI_SUCCESS)
        return rc;
    if (postbox_job_fence() != 0) /* the area's id is known */
        return MPI_ERR_OTHER;
    rc = area_map();
    if (rc != MPI_SUCCESS)
        return rc;
    if (pb_eng_channel.local == 0 && pb_eng_params.show)
        fprintf(stderr,
                "postbox mpi: node %u: postbox area of %zu bytes for its %d ranks: rings and "
                "pools of %d senders; a waiting rank polls %d times before it yields, and "
                "yields %d times and %d us before it sleeps%s\n",
                (unsigned)pb_eng_channel.node, pb_eng_channel.area_size,
                pb_eng_channel.node_ranks[pb_eng_channel.node], pb_eng_channel.size,
                pb_eng_params.spin, pb_eng_params.yields, pb_eng_params.yield_us,
                oversubscribed ? " (more ranks than cores on the host)" : "");

    /* where each source's ring toward this rank and its pool are */
    offset = area_offset((int)pb_eng_channel.node, 0);
    for (int s = 0; s < pb_eng_channel.size; s++) {
        pb_eng_in_t *in = &pb_eng_channel.in[s];
        int shared = shared_blocks((int)pb_eng_channel.node, s);

        in->ring =
            pb_eng_channel.area + offset + (size_t)pb_eng_channel.local * pb_eng_channel.ring_size;
        in->pool =
            pb_eng_channel.area + offset +
            (size_t)pb_eng_channel.node_ranks[pb_eng_channel.node] * pb_eng_channel.ring_size;
        in->remote = pb_eng_channel.node_of[s] != (int)pb_eng_channel.node;
        in->shared = shared;
        /* the receivers of the node share the pool: each gives back its
         * part of half of it at once */
        in->ack_blocks = shared / (2 * pb_eng_channel.node_ranks[pb_eng_channel.node]);
        if (in->ack_blocks < 1)
            in->ack_blocks = 1;
        offset += sender_area_size((int)pb_eng_channel.node, s);
    }

    /* the doorbell (on shm), and the area as this rank's on tcp */
    if (export_on(pb_eng_channel.shm_ctl, pb_eng_channel.bell, page, &pb_eng_channel.bell_ex,
                  &pb_eng_channel.bell_id, "the doorbell") != RSM_SUCCESS)
        return MPI_ERR_OTHER;
    pb_eng_channel.fd_segs[pb_eng_channel.nfds++] = pb_eng_channel.bell_ex;
    if (pb_eng_channel.nodes > 1) {
        /* the network's controller: POSTBOX_TRANSPORT (tcp, ofi) */
        char *net = pb_config_network_controller();

        if (net == NULL || rsm_get_controller(net, &pb_eng_channel.tcp_ctl) != RSM_SUCCESS ||
            export_on(pb_eng_channel.tcp_ctl, pb_eng_channel.area, pb_eng_channel.area_size,
                      &pb_eng_channel.tcp_ex, &pb_eng_channel.tcp_id,
                      "the postbox area on the network controller") != RSM_SUCCESS)
            return MPI_ERR_OTHER;
        pb_eng_channel.fd_segs[pb_eng_channel.nfds++] = pb_eng_channel.tcp_ex;
    }
    for (int i = 0; i < pb_eng_channel.nfds; i++) {
        if (rsm_memseg_get_pollfd(pb_eng_channel.fd_segs[i], &pb_eng_channel.fds[i]) != RSM_SUCCESS)
            return MPI_ERR_OTHER;
    }
    channel_key(key, sizeof(key), CHANNEL_KVS_RANK, pb_eng_channel.rank);
    snprintf(value, sizeof(value), "%u:%u", (unsigned)pb_eng_channel.bell_id,
             (unsigned)pb_eng_channel.tcp_id);
    if (postbox_job_kvs_put(key, value) != 0 || postbox_job_fence() != 0) {
        pb_error("MPI_Init: cannot publish the channels' ids in the job's key-value space");
        return MPI_ERR_OTHER;
    }
    /* every MPI call polls the network (pb_eng_channel_poll_network): the RSM service
     * thread need not wake for each message meanwhile */
    if (pb_eng_channel.tcp_ctl != NULL)
        network_claim(1);
    return MPI_SUCCESS;
}

static void release_export(rsm_memseg_export_handle_t ex)
{
    rsm_memseg_export_unpublish(ex);
    rsm_memseg_export_destroy(ex);
}

void pb_eng_channel_finalize(void)
{
    /* acknowledgements owed to this world's processes, which fence with
     * this one below; those of another world (a universe's spawned
     * processes or parents) may have left already, and met this process in
     * MPI_Finalize's barrier over the connections (dynamic.c), after which
     * neither sends the other anything */
    for (int s = pb_eng_channel.world_first; s < pb_eng_channel.world_end; s++) {
        if (pb_eng_channel.in[s].consumed != pb_eng_channel.in[s].ack_sent)
            send_ack(s);
    }
    if (pb_eng_channel.tcp_ctl != NULL)
        network_claim(0); /* nobody polls from here: the service thread reads */
    postbox_job_fence();  /* every peer is done writing postboxes and acks */
    for (int d = 0; d < pb_eng_channel.size; d++) {
        pb_eng_out_t *o = &pb_eng_channel.out[d];

        if (o->ops != NULL)
            o->ops->disconnect(o);
        /* a doorbell imported by pb_eng_channel_wake alone: a collective's
         * peer's, or this rank's own (a thread waking its sleeper) */
        if (o->bell != NULL)
            rsm_memseg_import_disconnect(o->bell);
        o->bell = NULL;
        free(o->slot_first);
        free(o->slot_blocks);
    }
    postbox_job_fence(); /* nobody is connected to this rank's exports any more */
    for (int i = 0; i < pb_eng_channel.nfds; i++) {
        rsm_memseg_release_pollfd(pb_eng_channel.fd_segs[i]);
        release_export(pb_eng_channel.fd_segs[i]);
    }
    if (pb_eng_channel.area_im != NULL) {
        rsm_memseg_import_unmap(pb_eng_channel.area_im);
        rsm_memseg_import_disconnect(pb_eng_channel.area_im);
    }
    postbox_job_fence(); /* nobody maps the area any more */
    if (pb_eng_channel.area_ex != NULL) {
        release_export(pb_eng_channel.area_ex);
        munmap(pb_eng_channel.area, pb_eng_channel.area_size);
    }
    if (pb_eng_channel.tcp_ctl != NULL)
        rsm_release_controller(pb_eng_channel.tcp_ctl);
    if (pb_eng_channel.shm_ctl != NULL)
        rsm_release_controller(pb_eng_channel.shm_ctl);
    if (pb_eng_channel.bell != NULL)
        munmap(pb_eng_channel.bell, (size_t)sysconf(_SC_PAGESIZE));
    for (int n = 0; n < pb_eng_channel.nodes; n++) {
        if (pb_eng_channel.pools[n] != NULL)
            free(pb_eng_channel.pools[n]->used);
        free(pb_eng_channel.pools[n]);
    }
    free(pb_eng_channel.pools);
    free(pb_eng_channel.node_of);
    free(pb_eng_channel.local_of);
    free(pb_eng_channel.node_ranks);
    free(pb_eng_channel.out);
    free(pb_eng_channel.in);
    memset(&pb_eng_channel, 0, sizeof(pb_eng_channel));
    channel_starts++;
}

/* ---- pools ------------------------------------------------------------------ */

static int block_used(const pb_eng_pool_t *p, int b)
{
    return (int)((p->used[b / 64] >> (b % 64)) & 1);
}

static void blocks_mark(pb_eng_pool_t *p, uint32_t first, uint32_t count, int used)
{
    for (uint32_t b = first; b < first + count; b++) {
        if (used)
            p->used[b / 64] |= (uint64_t)1 << (b % 64);
        else
            p->used[b / 64] &= ~((uint64_t)1 << (b % 64));
    }
}

/* This rank's pool on @node, made on first use (NULL without memory). */
static pb_eng_pool_t *pool_of(int node)
{
    pb_eng_pool_t *p = pb_eng_channel.pools[node];

    if (p != NULL)
        return p;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->my_area = area_offset(node, pb_eng_channel.rank);
    p->base = p->my_area + (size_t)pb_eng_channel.node_ranks[node] * pb_eng_channel.ring_size;
    p->shared = shared_blocks(node, pb_eng_channel.rank);
    p->nblocks = p->shared + PB_ENG_RESERVE_BLOCKS * pb_eng_channel.node_ranks[node];
    p->used = calloc(((size_t)p->nblocks + 63) / 64, sizeof(uint64_t));
    if (p->used == NULL) {
        free(p);
        return NULL;
    }
    pb_eng_channel.pools[node] = p;
    return p;
}

/* The longest run of free blocks in [lo, hi), at most @want long, the
 * search starting at @from and wrapping once; its length (0: none), its
 * first block in *first_p. */
static uint32_t free_run(const pb_eng_pool_t *p, int lo, int hi, int from, uint32_t want,
                         uint32_t *first_p)
{
    int span = hi - lo;

    if (from < lo || from >= hi)
        from = lo;
    for (int i = 0; i < span; i++) {
        int b = lo + (from - lo + i) % span;
        uint32_t len = 0;

        if (block_used(p, b))
            continue;
        while (len < want && b + (int)len < hi && !block_used(p, b + (int)len))
            len++;
        *first_p = (uint32_t)b;
        return len;
    }
    return 0;
}

/* ---- the sending side ------------------------------------------------------ */

static const char *single_copy_text(const pb_eng_path_ops_t *ops)
{
    static char text[96];

    if (ops->read_peer == NULL || pb_eng_params.single_copy == 0)
        return "off";
    if (pb_eng_params.far_copy_rate > 0 && pb_eng_params.single_copy_far > 0 &&
        pb_eng_params.single_copy_far < pb_eng_params.single_copy)
        snprintf(text, sizeof(text), "from %zu B, %zu B if far (process_vm_readv)",
                 pb_eng_params.single_copy, pb_eng_params.single_copy_far);
    else
        snprintf(text, sizeof(text), "from %zu B (process_vm_readv)", pb_eng_params.single_copy);
    return text;
}

int pb_eng_channel_rank_ids(int dest, unsigned *bell_id, unsigned *tcp_id)
{
    char key[32], value[64];

    channel_key(key, sizeof(key), CHANNEL_KVS_RANK, dest);
    if (postbox_job_kvs_get(key, value, sizeof(value)) != 0 ||
        sscanf(value, "%u:%u", bell_id, tcp_id) != 2) {
        pb_error("rank %d published no channel ids (key %s)", dest, key);
        return -1;
    }
    return 0;
}

/* The path toward @dest: the rank itself, a rank of this node, or one of
 * another node. */
static const pb_eng_path_ops_t *path_of(int dest)
{
    if (dest == pb_eng_channel.rank)
        return &pb_eng_path_self_ops;
    if (pb_eng_channel.node_of[dest] == (int)pb_eng_channel.node)
        return &pb_eng_path_shm_ops;
    return &pb_eng_path_tcp_ops;
}

int pb_eng_channel_connect(int dest)
{
    pb_eng_out_t *o = &pb_eng_channel.out[dest];
    const pb_eng_path_ops_t *ops = path_of(dest);
    int node = pb_eng_channel.node_of[dest];
    size_t slots = (size_t)pb_eng_params.postboxes;

    if (o->failed)
        return MPI_ERR_OTHER;
    o->pool = pool_of(node);
    o->slot_first = calloc(slots, sizeof(*o->slot_first));
    o->slot_blocks = calloc(slots, sizeof(*o->slot_blocks));
    if (o->pool == NULL || o->slot_first == NULL || o->slot_blocks == NULL)
        goto fail;
    o->ring = o->pool->my_area + (size_t)pb_eng_channel.local_of[dest] * pb_eng_channel.ring_size;
    o->ack_pair =
        (_Atomic uint64_t *)(pb_eng_channel.area +
                             ack_offset((int)pb_eng_channel.node, pb_eng_channel.local, dest));
    o->ack_at = ack_offset(node, pb_eng_channel.local_of[dest], pb_eng_channel.rank);
    if (ops->connect(o, dest) != MPI_SUCCESS)
        goto fail;
    o->ops = ops;
    if (pb_eng_params.show)
        fprintf(stderr,
                "postbox mpi: rank %d -> %d: %s, %d postboxes, pool of %d blocks of %zu B on "
                "node %d (+%d for each of its %d ranks), rendezvous from %zu B, single copy %s\n",
                pb_eng_channel.rank, dest, ops->name, pb_eng_params.postboxes, o->pool->shared,
                pb_eng_params.block_size, node, PB_ENG_RESERVE_BLOCKS,
                pb_eng_channel.node_ranks[node], pb_eng_params.rendezvous, single_copy_text(ops));
    return MPI_SUCCESS;

fail:
    o->failed = 1;
    return MPI_ERR_OTHER;
}

const pb_eng_path_ops_t *pb_eng_channel_path(int dest)
{
    pb_eng_out_t *o = &pb_eng_channel.out[dest];

    if (o->ops == NULL && pb_eng_channel_connect(dest) != MPI_SUCCESS)
        return NULL;
    return o->ops;
}

void pb_eng_channel_reclaim(int dest)
{
    pb_eng_out_t *o = &pb_eng_channel.out[dest];
    uint64_t acked = pb_eng_channel_acked(o);

    for (; o->freed < acked; o->freed++) {
        size_t slot = (size_t)(o->freed % (uint64_t)pb_eng_params.postboxes);

        blocks_mark(o->pool, o->slot_first[slot], o->slot_blocks[slot], 0);
        o->slot_blocks[slot] = 0;
    }
}

size_t pb_eng_channel_block_room(int dest, size_t want)
{
    pb_eng_out_t *o = &pb_eng_channel.out[dest];
    pb_eng_pool_t *p = o->pool;
    int node = pb_eng_channel.node_of[dest];
    /* at most half the shared blocks per piece: the receiver empties one
     * half while the sender fills the other */
    size_t cap = p->shared >= 2 ? (size_t)p->shared / 2 : 1;
    size_t wanted = want / pb_eng_params.block_size + (want % pb_eng_params.block_size != 0);
    uint32_t blocks, first = 0, len;
    int reserve = p->shared + PB_ENG_RESERVE_BLOCKS * pb_eng_channel.local_of[dest];
    size_t room;

    if (wanted > cap)
        wanted = cap;
    if (wanted > ((size_t)1 << 30) / pb_eng_params.block_size) /* a postbox's length is 32 bits */
        wanted = ((size_t)1 << 30) / pb_eng_params.block_size;
    blocks = (uint32_t)wanted;
    pb_eng_channel_reclaim(dest);
    len = free_run(p, 0, p->shared, p->cursor, blocks, &first);
    if (len == 0) {
        /* what the node's other receivers gave back */
        for (int r = 0; r < pb_eng_channel.size; r++) {
            if (pb_eng_channel.node_of[r] == node && r != dest && pb_eng_channel.out[r].ops != NULL)
                pb_eng_channel_reclaim(r);
        }
        len = free_run(p, 0, p->shared, p->cursor, blocks, &first);
    }
    if (len == 0) /* the shared blocks are all out: this receiver's own */
        len = free_run(p, reserve, reserve + PB_ENG_RESERVE_BLOCKS, reserve,
                       blocks < PB_ENG_RESERVE_BLOCKS ? blocks : PB_ENG_RESERVE_BLOCKS, &first);
    o->next_first = first;
    o->next_blocks = len;
    room = (size_t)len * pb_eng_params.block_size;
    return room < want ? room : want;
}

void pb_eng_channel_copy_piece(void *dst, const pb_eng_src_t *src, size_t len)
{
    if (pb_eng_type_is_contiguous(src->type))
        memcpy(dst,
               (const char *)((uintptr_t)src->buf + (uintptr_t)pb_eng_type_true_lb(src->type) +
                              src->offset),
               len);
    else
        pb_eng_type_pack_range(src->buf, src->count, src->type, src->offset, dst, len);
}

int pb_eng_channel_post(int dest, pb_eng_postbox_t *pb, const pb_eng_src_t *src)
{
    pb_eng_out_t *o = &pb_eng_channel.out[dest];
    uint64_t k = o->written;
    size_t slot = (size_t)(k % (uint64_t)pb_eng_params.postboxes);
    int has_piece = pb->kind == PB_ENG_ENV_EAGER || pb->kind == PB_ENG_EAGER_MORE ||
                    pb->kind == PB_ENG_RNDV_DATA;
    size_t data_off = 0;

    /* slot k's last postbox (k - postboxes) was acknowledged: its blocks
     * go back before the slot forgets them */
    pb_eng_channel_reclaim(dest);
    pb->nblocks = 0;
    pb->first_block = 0;
    if (has_piece && pb->len > 0) {
        uint32_t blocks =
            (uint32_t)((pb->len + pb_eng_params.block_size - 1) / pb_eng_params.block_size);

        /* (pb_eng_channel_block_room found them, and nothing was allocated since) */
        pb->first_block = o->next_first;
        pb->nblocks = (uint16_t)blocks;
        blocks_mark(o->pool, o->next_first, blocks, 1);
        if ((int)o->next_first < o->pool->shared)
            o->pool->cursor = (int)(o->next_first + blocks);
        o->next_blocks = 0;
        data_off = o->pool->base + (size_t)pb->first_block * pb_eng_params.block_size;
    }
    if (pb->kind == PB_ENG_ENV_INLINE && pb->len > 0)
        pb_eng_channel_copy_piece(pb->u.data, src, pb->len);
    o->slot_first[slot] = pb->first_block;
    o->slot_blocks[slot] = pb->nblocks;
    if (o->ops->post(o, dest, pb, (uint32_t)(k + 1), o->ring + slot * PB_ENG_POSTBOX_SIZE, src,
                     data_off) != MPI_SUCCESS)
        return MPI_ERR_OTHER;
    o->written = k + 1;
    return MPI_SUCCESS;
}

/* ---- the receiving side ---------------------------------------------------- */

const void *pb_eng_channel_piece_data(int source, const pb_eng_postbox_t *pb)
{
    return pb_eng_channel.in[source].pool + (size_t)pb->first_block * pb_eng_params.block_size;
}

/* Tell @source how many of its postboxes this rank consumed. */
static void send_ack(int source)
{
    pb_eng_in_t *in = &pb_eng_channel.in[source];
    pb_eng_out_t *o = &pb_eng_channel.out[source];

    if (PB_UNLIKELY(o->ops == NULL)) {
        if (o->failed ||
            (pb_eng_channel_connect(source) != MPI_SUCCESS && !pb_eng_channel_same_world(source))) {
            /* (a process of another world that ended) */
            in->ack_sent = in->consumed;
            in->blocks_owed = 0;
            return;
        }
        if (o->ops == NULL)
            pb_eng_fatal("cannot open the channel to acknowledge to a rank");
    }
    o->ops->ack(o, source, in->consumed);
    in->ack_sent = in->consumed;
    in->blocks_owed = 0;
}

void pb_eng_channel_consume(int source, const pb_eng_postbox_t *pb)
{
    pb_eng_in_t *in = &pb_eng_channel.in[source];
    int had_blocks = pb->nblocks > 0;

    in->consumed++;
    in->blocks_owed += pb->nblocks;
    /* On the node an acknowledgement is a store: blocks, scarcer than
     * postboxes, go back at once.  Across nodes it is a frame: it waits to
     * ride on the next postbox to the source (pb_eng_channel_post), unless half the
     * ring or this rank's share of half the pool is owed, or the blocks
     * were this rank's reserve: then the shared ones are all out (another
     * rank of the node holds them), and the source can send this rank
     * nothing more until they come back. */
    if (in->remote ? in->blocks_owed >= in->ack_blocks ||
                         (had_blocks && (int)pb->first_block >= in->shared)
                   : had_blocks)
        send_ack(source);
    else if (in->consumed - in->ack_sent >= (uint64_t)(pb_eng_params.postboxes + 1) / 2)
        send_ack(source);
}

void pb_eng_channel_flush_acks(void)
{
    for (int s = 0; s < pb_eng_channel.size; s++) {
        if (pb_eng_channel.in[s].consumed != pb_eng_channel.in[s].ack_sent)
            send_ack(s);
    }
}

/* ---- sleeping ---------------------------------------------------------------- */

void pb_eng_channel_poll_network(void)
{
    /* a zero wait reads this process's tcp sockets now (applying peers'
     * puts to the area) instead of leaving them to the RSM service
     * thread, whose wake-up would be on the message's path */
    if (pb_eng_channel.tcp_ex != NULL)
        rsm_intr_signal_wait(pb_eng_channel.tcp_ex, 0);
}

/* Claim (1) or give back (0) the progress of this process's tcp traffic. */
static void network_claim(int claim)
{
    if (pb_eng_channel.tcp_claimed == claim)
        return;
    if (claim)
        pb_eng_channel.tcp_claimed = pb_rsm_progress_claim(pb_eng_channel.tcp_ctl) == RSM_SUCCESS;
    else if (pb_rsm_progress_release(pb_eng_channel.tcp_ctl) == RSM_SUCCESS)
        pb_eng_channel.tcp_claimed = 0;
}

void pb_eng_channel_sleep_begin(void)
{
    pb_eng_channel_flush_acks();
    atomic_store_explicit(sleeping_word(pb_eng_channel.local), 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
}

void pb_eng_channel_sleep_cancel(void)
{
    atomic_store_explicit(sleeping_word(pb_eng_channel.local), 0, memory_order_relaxed);
}

void pb_eng_channel_sleep(int timeout_ms)
{
    int ready;

    if (pb_eng_channel.nfds == 1) {
        rsm_intr_signal_wait(pb_eng_channel.fd_segs[0], timeout_ms);
    } else {
        /* asleep on the doorbell's and the tcp export's words, this thread
         * reads no socket: the RSM service thread must, and wake it */
        network_claim(0);
        rsm_intr_signal_wait_pollfd(pb_eng_channel.fds, (nfds_t)pb_eng_channel.nfds, timeout_ms,
                                    &ready);
        network_claim(1);
    }
    pb_eng_channel_sleep_cancel();
}
