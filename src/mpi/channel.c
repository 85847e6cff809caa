/*
 * Channels between ranks: each node's postbox area, connections made on
 * first use, postbox rings and buffer pools with flow control, and
 * sleeping (channel.h).
 *
 * Every node has one *area* (Sun MPI's remote buffer placement, seed 001
 * §3.1): in it each sender of the job owns a memory area that it alone
 * allocates from, used for messages to *any* rank of that node.  Layout of
 * the area of a node with n ranks, in a job of N (page aligned):
 *
 *   lines    a 64-byte line per rank of the node (index i, ranks in job
 *            order): its sleeping word
 *   acks     for each rank a of the node and each job rank p, 16 bytes: the
 *            count of a's postboxes p consumed, then its complement
 *            (written by p; a reader takes the pair only when they agree,
 *            so a put torn by the transport is never believed)
 *   senders  for each job rank s: its rings toward each rank of the node
 *            (pbx_params.postboxes postboxes each), then its pool:
 *            POSTBOX_POOL_BLOCKS blocks (s on this node) or
 *            POSTBOX_POOL_BLOCKS_NET (s elsewhere) that any receiver here
 *            may be sent through, plus PBX_RESERVE_BLOCKS per receiver that
 *            only messages to that receiver use
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
#include "mpi/channel.h"

#include <postbox/job.h>
#include <postbox/rsm.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/config.h"
#include "util/log.h"

#define PBX_KVS_AREA "pbx-area-%u" /* node id -> the area's shm segment id */
#define PBX_KVS_RANK "pbx-rank-%d" /* rank -> "doorbell id:tcp id" */
#define PBX_LINE 64
#define PBX_ACK_SIZE 16
/* blocks of a sender's pool only messages to one receiver use: with them a
 * message always finds room once its own receiver has consumed, whatever
 * the node's other receivers hold */
#define PBX_RESERVE_BLOCKS 2

typedef enum {
    OUT_NONE = 0,
    OUT_SELF,
    OUT_SHM,
    OUT_TCP,
    OUT_FAILED
} out_kind_t;

/* This rank's pool in one node's area. */
typedef struct {
    size_t base;    /* its offset in that area */
    int shared;     /* blocks [0, shared) serve every receiver */
    int nblocks;    /* shared + PBX_RESERVE_BLOCKS per receiver */
    int cursor;     /* where the next search for free blocks starts */
    uint64_t *used; /* a bit per block */
    size_t my_area; /* this rank's area in that node's area */
} pbx_pool_t;

/* this rank's side of the channel toward one destination */
typedef struct {
    out_kind_t kind;
    rsm_memseg_import_handle_t im;   /* tcp: the destination's export of its area */
    rsm_memseg_import_handle_t bell; /* shm: its doorbell, imported on first wake */
    pbx_pool_t *pool;                /* this rank's pool on the destination's node */
    size_t ring;                     /* offset of the ring in that area */
    uint64_t written;                /* postboxes written */
    uint64_t acked;                  /* postboxes the destination said it consumed */
    uint64_t freed;                  /* postboxes whose blocks went back to the pool */
    uint32_t *slot_first;            /* blocks of postbox k: at k % postboxes */
    uint32_t *slot_blocks;
    uint32_t next_first, next_blocks; /* what pbx_block_room found for the next piece */
    char *scratch;                    /* packing room for puts of non-contiguous data */
} pbx_out_t;

/* this rank's side of the channel from one source */
typedef struct {
    const char *ring;  /* the source's ring toward this rank, in this node's area */
    const char *pool;  /* its pool there */
    uint64_t consumed; /* postboxes handled */
    uint64_t ack_sent; /* consumed as last written to the source */
    int remote;        /* the source is on another node: acknowledgements wait */
    int shared;        /* the source's pool blocks below this are shared, the
                          rest reserved per receiver */
    int ack_blocks;    /* blocks owed that make an acknowledgement go at once */
    int blocks_owed;   /* pool blocks consumed since ack_sent */
} pbx_in_t;

pbx_params_t pbx_params;

static struct {
    int rank, size, nodes;
    rsm_node_id_t node;
    int local;       /* this rank's index among its node's ranks */
    int *node_of;    /* [size]: each rank's node */
    int *local_of;   /* [size]: its index there */
    int *node_ranks; /* [nodes]: ranks per node */
    char *area;      /* this node's area, mapped */
    size_t area_size;
    size_t ring_size;
    rsmapi_controller_handle_t shm_ctl, tcp_ctl;
    rsm_memseg_export_handle_t area_ex; /* the node's first rank: the area on shm */
    rsm_memseg_import_handle_t area_im; /* the others: their import of it */
    rsm_memseg_export_handle_t bell_ex, tcp_ex;
    rsm_memseg_id_t area_id, bell_id, tcp_id;
    char *bell;
    struct pollfd fds[2];
    void *fd_segs[2];
    int nfds;
    pbx_out_t *out;
    pbx_in_t *in;
    pbx_pool_t **pools; /* [nodes]: made on first use */
    int tcp_claimed;    /* this rank polls its tcp traffic itself (network_claim) */
} pbx;

static void network_claim(int claim);

static long param(const char *name, long min, long max)
{
    long value = pb_config_get_long(name);

    if (value < min || value > max) {
        long fixed = value < min ? min : max;

        pb_warn("%s=%ld is outside %ld..%ld: using %ld", name, value, min, max, fixed);
        return fixed;
    }
    return value;
}

_Noreturn void pbx_fatal(const char *what)
{
    char message[160];

    snprintf(message, sizeof(message), "postbox mpi: rank %d: %s", pbx.rank, what);
    postbox_job_abort(MPI_ERR_OTHER, message);
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* ---- layout of a node's area ---------------------------------------------- */

static size_t acks_offset(int node)
{
    return (size_t)pbx.node_ranks[node] * PBX_LINE;
}

/* Where rank @p acknowledges the postboxes of the @a-th rank of @node. */
static size_t ack_offset(int node, int a, int p)
{
    return acks_offset(node) + ((size_t)a * (size_t)pbx.size + (size_t)p) * PBX_ACK_SIZE;
}

/* The shared blocks of @sender's pool on @node. */
static int shared_blocks(int node, int sender)
{
    return pbx.node_of[sender] == node ? pbx_params.blocks : pbx_params.blocks_net;
}

static size_t pool_size(int node, int sender)
{
    int blocks = shared_blocks(node, sender) + PBX_RESERVE_BLOCKS * pbx.node_ranks[node];

    return (size_t)blocks * pbx_params.block_size;
}

static size_t sender_area_size(int node, int sender)
{
    return round_up((size_t)pbx.node_ranks[node] * pbx.ring_size + pool_size(node, sender),
                    PBX_LINE);
}

/* Where @sender's area starts in @node's area; with @sender = the job's
 * size, where the senders' areas end. */
static size_t area_offset(int node, int sender)
{
    size_t offset = round_up(ack_offset(node, pbx.node_ranks[node], 0), PBX_LINE);

    for (int s = 0; s < sender; s++)
        offset += sender_area_size(node, s);
    return offset;
}

static _Atomic uint32_t *sleeping_word(int local)
{
    return (_Atomic uint32_t *)(pbx.area + (size_t)local * PBX_LINE);
}

/* ---- start and end ---------------------------------------------------------- */

/* Whether this host runs more ranks of the job than this process may use
 * CPUs (virtual nodes share their host's cores).  Then a waiting rank
 * holds a core another rank needs to answer it. */
static int host_oversubscribed(void)
{
    const char *mine = postbox_job_node_name(pbx.node);
    const char *slash = mine != NULL ? strrchr(mine, '/') : NULL;
    int ranks = 0;
    cpu_set_t cpus;

    if (slash == NULL || sched_getaffinity(0, sizeof(cpus), &cpus) != 0)
        return 0;
    /* node names are "<host>/<virtual node>" */
    for (int node = 0; node < pbx.nodes; node++) {
        const char *name = postbox_job_node_name((rsm_node_id_t)node);

        if (name != NULL && strncmp(name, mine, (size_t)(slash - mine) + 1) == 0)
            ranks += pbx.node_ranks[node];
    }
    return ranks > CPU_COUNT(&cpus);
}

/* Learn where every rank runs.  @return 0, or -1 without memory. */
static int job_map(void)
{
    pbx.nodes = postbox_job_node_count();
    pbx.node_of = calloc((size_t)pbx.size, sizeof(int));
    pbx.local_of = calloc((size_t)pbx.size, sizeof(int));
    pbx.node_ranks = calloc((size_t)pbx.nodes, sizeof(int));
    pbx.pools = calloc((size_t)pbx.nodes, sizeof(*pbx.pools));
    if (pbx.node_of == NULL || pbx.local_of == NULL || pbx.node_ranks == NULL || pbx.pools == NULL)
        return -1;
    for (int r = 0; r < pbx.size; r++) {
        int node = (int)postbox_job_node(r);

        pbx.node_of[r] = node;
        pbx.local_of[r] = pbx.node_ranks[node]++;
    }
    pbx.local = pbx.local_of[pbx.rank];
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

    if (pbx.local != 0)
        return MPI_SUCCESS;
    pbx.area =
        mmap(NULL, pbx.area_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pbx.area == MAP_FAILED) {
        pbx.area = NULL;
        pb_error("MPI_Init: no memory for the node's postbox area (%zu bytes)", pbx.area_size);
        return MPI_ERR_NO_MEM;
    }
    if (export_on(pbx.shm_ctl, pbx.area, pbx.area_size, &pbx.area_ex, &pbx.area_id,
                  "the node's postbox area") != RSM_SUCCESS)
        return MPI_ERR_OTHER;
    snprintf(key, sizeof(key), PBX_KVS_AREA, (unsigned)pbx.node);
    snprintf(value, sizeof(value), "%u", (unsigned)pbx.area_id);
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

    if (pbx.local == 0)
        return MPI_SUCCESS;
    snprintf(key, sizeof(key), PBX_KVS_AREA, (unsigned)pbx.node);
    if (postbox_job_kvs_get(key, value, sizeof(value)) != 0 || sscanf(value, "%u", &id) != 1) {
        pb_error("MPI_Init: the node's first rank published no postbox area");
        return MPI_ERR_OTHER;
    }
    rc = rsm_memseg_import_connect(pbx.shm_ctl, pbx.node, id, RSM_PERM_RDWR, &pbx.area_im);
    if (rc == RSM_SUCCESS) {
        rc = rsm_memseg_import_map(pbx.area_im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0,
                                   pbx.area_size);
        if (rc != RSM_SUCCESS) {
            rsm_memseg_import_disconnect(pbx.area_im);
            pbx.area_im = NULL;
        }
    }
    if (rc != RSM_SUCCESS) {
        pb_error("MPI_Init: cannot map the node's postbox area: %s", rsm_strerror(rc));
        return MPI_ERR_OTHER;
    }
    pbx.area = addr;
    return MPI_SUCCESS;
}

int pbx_init(void)
{
    char key[32], value[64];
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t offset;
    int rc, oversubscribed;

    /* this library's copy of the log (src/util/log.c) reads its level */
    pb_log_init();
    pbx_params.postboxes = (int)param("POSTBOX_NUMPOSTBOX", 2, 4096);
    pbx_params.blocks = (int)param("POSTBOX_POOL_BLOCKS", 2, 65536);
    pbx_params.blocks_net = (int)param("POSTBOX_POOL_BLOCKS_NET", 2, 65536);
    pbx_params.block_size = (size_t)param("POSTBOX_BLOCK_SIZE", 256, 1 << 20);
    pbx_params.block_size = round_up(pbx_params.block_size, 64);
    pbx_params.rendezvous = (size_t)param("POSTBOX_RENDEZVOUS", 1, 1L << 40);
    pbx_params.single_copy = (size_t)param("POSTBOX_SINGLE_COPY", 0, 1L << 40);
    pbx_params.split_copy = (size_t)param("POSTBOX_SPLIT_COPY", 0, 1L << 40);
    pbx_params.pollall = (int)param("POSTBOX_POLLALL", 0, 1);
    pbx_params.spin = (int)param("POSTBOX_SPIN", 0, 1 << 30);
    pbx_params.yields = (int)param("POSTBOX_YIELDS", 0, 1 << 30);

    pbx.rank = postbox_job_rank();
    pbx.size = postbox_job_size();
    pbx.node = postbox_job_node(pbx.rank);
    pbx.ring_size = (size_t)pbx_params.postboxes * PBX_POSTBOX_SIZE;
    pbx.out = calloc((size_t)pbx.size, sizeof(*pbx.out));
    pbx.in = calloc((size_t)pbx.size, sizeof(*pbx.in));
    if (pbx.out == NULL || pbx.in == NULL || job_map() != 0) {
        pb_error("MPI_Init: no memory for the channels of %d ranks", pbx.size);
        return MPI_ERR_NO_MEM;
    }
    /* more ranks than cores: a waiting rank yields at once (it spins
     * only when told to) */
    oversubscribed = getenv("POSTBOX_SPIN") == NULL && host_oversubscribed();
    if (oversubscribed)
        pbx_params.spin = 0;
    pbx.area_size = round_up(area_offset((int)pbx.node, pbx.size), page);
    pbx.bell = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pbx.bell == MAP_FAILED) {
        pbx.bell = NULL;
        return MPI_ERR_NO_MEM;
    }
    if (rsm_get_controller("shm", &pbx.shm_ctl) != RSM_SUCCESS)
        return MPI_ERR_OTHER;
    rc = area_create();
    if (rc != MPI_SUCCESS)
        return rc;
    if (postbox_job_fence() != 0) /* the area's id is known */
        return MPI_ERR_OTHER;
    rc = area_map();
    if (rc != MPI_SUCCESS)
        return rc;
    if (pbx.local == 0 && pb_config_get_long("POSTBOX_SHOW_TRANSPORTS") > 0)
        fprintf(stderr,
                "postbox mpi: node %u: postbox area of %zu bytes for its %d ranks: rings and "
                "pools of %d senders; a waiting rank polls %d times before it yields%s\n",
                (unsigned)pbx.node, pbx.area_size, pbx.node_ranks[pbx.node], pbx.size,
                pbx_params.spin, oversubscribed ? " (more ranks than cores on the host)" : "");

    /* where each source's ring toward this rank and its pool are */
    offset = area_offset((int)pbx.node, 0);
    for (int s = 0; s < pbx.size; s++) {
        pbx_in_t *in = &pbx.in[s];
        int shared = shared_blocks((int)pbx.node, s);

        in->ring = pbx.area + offset + (size_t)pbx.local * pbx.ring_size;
        in->pool = pbx.area + offset + (size_t)pbx.node_ranks[pbx.node] * pbx.ring_size;
        in->remote = pbx.node_of[s] != (int)pbx.node;
        in->shared = shared;
        /* the receivers of the node share the pool: each gives back its
         * part of half of it at once */
        in->ack_blocks = shared / (2 * pbx.node_ranks[pbx.node]);
        if (in->ack_blocks < 1)
            in->ack_blocks = 1;
        offset += sender_area_size((int)pbx.node, s);
    }

    /* the doorbell (on shm), and the area as this rank's on tcp */
    if (export_on(pbx.shm_ctl, pbx.bell, page, &pbx.bell_ex, &pbx.bell_id, "the doorbell") !=
        RSM_SUCCESS)
        return MPI_ERR_OTHER;
    pbx.fd_segs[pbx.nfds++] = pbx.bell_ex;
    if (pbx.nodes > 1) {
        if (rsm_get_controller("tcp", &pbx.tcp_ctl) != RSM_SUCCESS ||
            export_on(pbx.tcp_ctl, pbx.area, pbx.area_size, &pbx.tcp_ex, &pbx.tcp_id,
                      "the postbox area on tcp") != RSM_SUCCESS)
            return MPI_ERR_OTHER;
        pbx.fd_segs[pbx.nfds++] = pbx.tcp_ex;
    }
    for (int i = 0; i < pbx.nfds; i++) {
        if (rsm_memseg_get_pollfd(pbx.fd_segs[i], &pbx.fds[i]) != RSM_SUCCESS)
            return MPI_ERR_OTHER;
    }
    snprintf(key, sizeof(key), PBX_KVS_RANK, pbx.rank);
    snprintf(value, sizeof(value), "%u:%u", (unsigned)pbx.bell_id, (unsigned)pbx.tcp_id);
    if (postbox_job_kvs_put(key, value) != 0 || postbox_job_fence() != 0) {
        pb_error("MPI_Init: cannot publish the channels' ids in the job's key-value space");
        return MPI_ERR_OTHER;
    }
    /* every MPI call polls the network (pbx_poll_network): the RSM service
     * thread need not wake for each message meanwhile */
    if (pbx.tcp_ctl != NULL)
        network_claim(1);
    return MPI_SUCCESS;
}

static void release_export(rsm_memseg_export_handle_t ex)
{
    rsm_memseg_export_unpublish(ex);
    rsm_memseg_export_destroy(ex);
}

void pbx_finalize(void)
{
    pbx_flush_acks();
    if (pbx.tcp_ctl != NULL)
        network_claim(0); /* nobody polls from here: the service thread reads */
    postbox_job_fence();  /* every peer is done writing postboxes and acks */
    for (int d = 0; d < pbx.size; d++) {
        pbx_out_t *o = &pbx.out[d];

        if (o->im != NULL)
            rsm_memseg_import_disconnect(o->im);
        if (o->bell != NULL)
            rsm_memseg_import_disconnect(o->bell);
        free(o->slot_first);
        free(o->slot_blocks);
        free(o->scratch);
    }
    postbox_job_fence(); /* nobody is connected to this rank's exports any more */
    for (int i = 0; i < pbx.nfds; i++) {
        rsm_memseg_release_pollfd(pbx.fd_segs[i]);
        release_export(pbx.fd_segs[i]);
    }
    if (pbx.area_im != NULL) {
        rsm_memseg_import_unmap(pbx.area_im);
        rsm_memseg_import_disconnect(pbx.area_im);
    }
    postbox_job_fence(); /* nobody maps the area any more */
    if (pbx.area_ex != NULL) {
        release_export(pbx.area_ex);
        munmap(pbx.area, pbx.area_size);
    }
    if (pbx.tcp_ctl != NULL)
        rsm_release_controller(pbx.tcp_ctl);
    if (pbx.shm_ctl != NULL)
        rsm_release_controller(pbx.shm_ctl);
    if (pbx.bell != NULL)
        munmap(pbx.bell, (size_t)sysconf(_SC_PAGESIZE));
    for (int n = 0; n < pbx.nodes; n++) {
        if (pbx.pools[n] != NULL)
            free(pbx.pools[n]->used);
        free(pbx.pools[n]);
    }
    free(pbx.pools);
    free(pbx.node_of);
    free(pbx.local_of);
    free(pbx.node_ranks);
    free(pbx.out);
    free(pbx.in);
    memset(&pbx, 0, sizeof(pbx));
}

int pbx_same_node(int rank)
{
    return postbox_job_node(rank) == pbx.node;
}

const char *pbx_transport_of(int rank)
{
    if (rank == pbx.rank)
        return "self";
    return postbox_job_node(rank) == pbx.node ? "shm" : "tcp";
}

/* ---- pools ------------------------------------------------------------------ */

static int block_used(const pbx_pool_t *p, int b)
{
    return (int)((p->used[b / 64] >> (b % 64)) & 1);
}

static void blocks_mark(pbx_pool_t *p, uint32_t first, uint32_t count, int used)
{
    for (uint32_t b = first; b < first + count; b++) {
        if (used)
            p->used[b / 64] |= (uint64_t)1 << (b % 64);
        else
            p->used[b / 64] &= ~((uint64_t)1 << (b % 64));
    }
}

/* This rank's pool on @node, made on first use (NULL without memory). */
static pbx_pool_t *pool_of(int node)
{
    pbx_pool_t *p = pbx.pools[node];

    if (p != NULL)
        return p;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->my_area = area_offset(node, pbx.rank);
    p->base = p->my_area + (size_t)pbx.node_ranks[node] * pbx.ring_size;
    p->shared = shared_blocks(node, pbx.rank);
    p->nblocks = p->shared + PBX_RESERVE_BLOCKS * pbx.node_ranks[node];
    p->used = calloc(((size_t)p->nblocks + 63) / 64, sizeof(uint64_t));
    if (p->used == NULL) {
        free(p);
        return NULL;
    }
    pbx.pools[node] = p;
    return p;
}

/* The longest run of free blocks in [lo, hi), at most @want long, the
 * search starting at @from and wrapping once; its length (0: none), its
 * first block in *first_p. */
static uint32_t free_run(const pbx_pool_t *p, int lo, int hi, int from, uint32_t want,
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

static const char *single_copy_text(out_kind_t kind)
{
    static char text[48];

    if (kind != OUT_SHM || pbx_params.single_copy == 0)
        return "off";
    snprintf(text, sizeof(text), "from %zu B (process_vm_readv)", pbx_params.single_copy);
    return text;
}

/* The destination's published ids ("doorbell:tcp").  @return 0 or -1. */
static int rank_ids(int dest, unsigned *bell_id, unsigned *tcp_id)
{
    char key[32], value[64];

    snprintf(key, sizeof(key), PBX_KVS_RANK, dest);
    if (postbox_job_kvs_get(key, value, sizeof(value)) != 0 ||
        sscanf(value, "%u:%u", bell_id, tcp_id) != 2) {
        pb_error("rank %d published no channel ids (key %s)", dest, key);
        return -1;
    }
    return 0;
}

/* Make the channel toward @dest: on this node it writes through this
 * rank's mapping of the area; toward another node it imports @dest's
 * export of its area over tcp.  @return MPI_SUCCESS or MPI_ERR_OTHER
 * (logged). */
static int out_connect(int dest)
{
    pbx_out_t *o = &pbx.out[dest];
    int node = pbx.node_of[dest];
    size_t slots = (size_t)pbx_params.postboxes;
    unsigned bell_id, tcp_id;
    int rc;

    o->pool = pool_of(node);
    o->slot_first = calloc(slots, sizeof(*o->slot_first));
    o->slot_blocks = calloc(slots, sizeof(*o->slot_blocks));
    if (o->pool == NULL || o->slot_first == NULL || o->slot_blocks == NULL)
        goto fail;
    o->ring = o->pool->my_area + (size_t)pbx.local_of[dest] * pbx.ring_size;
    if (dest == pbx.rank) {
        o->kind = OUT_SELF;
    } else if (node == (int)pbx.node) {
        o->kind = OUT_SHM;
    } else {
        if (rank_ids(dest, &bell_id, &tcp_id) != 0)
            goto fail;
        rc = rsm_memseg_import_connect(pbx.tcp_ctl, (rsm_node_id_t)node, tcp_id, RSM_PERM_RDWR,
                                       &o->im);
        if (rc == RSM_SUCCESS) {
            rc = rsm_memseg_import_set_mode(o->im, RSM_BARRIER_MODE_EXPLICIT);
            /* room to pack the largest piece */
            o->scratch =
                malloc(pbx_params.block_size * (size_t)(o->pool->shared / 2 + PBX_RESERVE_BLOCKS));
            if (rc == RSM_SUCCESS && o->scratch == NULL)
                rc = RSMERR_INSUFFICIENT_MEM;
            if (rc != RSM_SUCCESS) {
                rsm_memseg_import_disconnect(o->im);
                o->im = NULL;
            }
        }
        if (rc != RSM_SUCCESS) {
            pb_error("cannot reach the postbox area of rank %d: %s", dest, rsm_strerror(rc));
            goto fail;
        }
        o->kind = OUT_TCP;
    }
    if (pb_config_get_long("POSTBOX_SHOW_TRANSPORTS") > 0)
        fprintf(stderr,
                "postbox mpi: rank %d -> %d: %s, %d postboxes, pool of %d blocks of %zu B on "
                "node %d (+%d for each of its %d ranks), rendezvous from %zu B, single copy %s\n",
                pbx.rank, dest, pbx_transport_of(dest), pbx_params.postboxes, o->pool->shared,
                pbx_params.block_size, node, PBX_RESERVE_BLOCKS, pbx.node_ranks[node],
                pbx_params.rendezvous, single_copy_text(o->kind));
    return MPI_SUCCESS;

fail:
    o->kind = OUT_FAILED;
    return MPI_ERR_OTHER;
}

/* How many of this rank's postboxes @dest consumed: the acknowledgement
 * pair in this node's area when it is whole and moves forward, else the
 * last value believed. */
static uint64_t acked_by(int dest)
{
    pbx_out_t *o = &pbx.out[dest];
    _Atomic uint64_t *pair =
        (_Atomic uint64_t *)(pbx.area + ack_offset((int)pbx.node, pbx.local, dest));
    uint64_t check = atomic_load_explicit(&pair[1], memory_order_acquire);
    uint64_t count = atomic_load_explicit(&pair[0], memory_order_relaxed);

    if (count == ~check && count > o->acked && count <= o->written)
        o->acked = count;
    return o->acked;
}

/* Give back the blocks of @dest's postboxes acknowledged since last time. */
static void reclaim(int dest)
{
    pbx_out_t *o = &pbx.out[dest];
    uint64_t acked = acked_by(dest);

    for (; o->freed < acked; o->freed++) {
        size_t slot = (size_t)(o->freed % (uint64_t)pbx_params.postboxes);

        blocks_mark(o->pool, o->slot_first[slot], o->slot_blocks[slot], 0);
        o->slot_blocks[slot] = 0;
    }
}

int pbx_postbox_free(int dest)
{
    pbx_out_t *o = &pbx.out[dest];

    if (PB_UNLIKELY(o->kind == OUT_NONE) && out_connect(dest) != MPI_SUCCESS)
        return -MPI_ERR_OTHER;
    if (PB_UNLIKELY(o->kind == OUT_FAILED))
        return -MPI_ERR_OTHER;
    return o->written - acked_by(dest) < (uint64_t)pbx_params.postboxes;
}

size_t pbx_block_room(int dest, size_t want)
{
    pbx_out_t *o = &pbx.out[dest];
    pbx_pool_t *p = o->pool;
    int node = pbx.node_of[dest];
    /* at most half the shared blocks per piece: the receiver empties one
     * half while the sender fills the other */
    size_t cap = p->shared >= 2 ? (size_t)p->shared / 2 : 1;
    size_t wanted = want / pbx_params.block_size + (want % pbx_params.block_size != 0);
    uint32_t blocks, first = 0, len;
    int reserve = p->shared + PBX_RESERVE_BLOCKS * pbx.local_of[dest];
    size_t room;

    if (wanted > cap)
        wanted = cap;
    if (wanted > ((size_t)1 << 30) / pbx_params.block_size) /* a postbox's length is 32 bits */
        wanted = ((size_t)1 << 30) / pbx_params.block_size;
    blocks = (uint32_t)wanted;
    reclaim(dest);
    len = free_run(p, 0, p->shared, p->cursor, blocks, &first);
    if (len == 0) {
        /* what the node's other receivers gave back */
        for (int r = 0; r < pbx.size; r++) {
            if (pbx.node_of[r] == node && r != dest && pbx.out[r].kind != OUT_NONE &&
                pbx.out[r].kind != OUT_FAILED)
                reclaim(r);
        }
        len = free_run(p, 0, p->shared, p->cursor, blocks, &first);
    }
    if (len == 0) /* the shared blocks are all out: this receiver's own */
        len = free_run(p, reserve, reserve + PBX_RESERVE_BLOCKS, reserve,
                       blocks < PBX_RESERVE_BLOCKS ? blocks : PBX_RESERVE_BLOCKS, &first);
    o->next_first = first;
    o->next_blocks = len;
    room = (size_t)len * pbx_params.block_size;
    return room < want ? room : want;
}

/* Copy packed bytes of @src to @dst (local memory). */
static void copy_piece(void *dst, const pbx_src_t *src, size_t len)
{
    if (pb_mpi_type_is_contiguous(src->type))
        memcpy(dst,
               (const char *)((uintptr_t)src->buf + (uintptr_t)pb_mpi_type_true_lb(src->type) +
                              src->offset),
               len);
    else
        pb_mpi_pack_range(src->buf, src->count, src->type, src->offset, dst, len);
}

/* Where @len packed bytes of @src can be put from: in place when its type
 * is contiguous, else packed into @o's scratch room. */
static const void *piece_source(pbx_out_t *o, const pbx_src_t *src, size_t len)
{
    if (pb_mpi_type_is_contiguous(src->type))
        return (const char *)((uintptr_t)src->buf + (uintptr_t)pb_mpi_type_true_lb(src->type) +
                              src->offset);
    pb_mpi_pack_range(src->buf, src->count, src->type, src->offset, o->scratch, len);
    return o->scratch;
}

/* Wake @dest, a rank of this node, if it sleeps (it said so in its line of
 * the area): post its doorbell, imported on first use. */
static void wake_if_asleep(int dest)
{
    pbx_out_t *o = &pbx.out[dest];

    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(sleeping_word(pbx.local_of[dest]), memory_order_relaxed))
        return;
    if (o->bell == NULL) {
        unsigned bell_id, tcp_id;

        if (rank_ids(dest, &bell_id, &tcp_id) != 0 ||
            rsm_memseg_import_connect(pbx.shm_ctl, pbx.node, bell_id, RSM_PERM_RDWR, &o->bell) !=
                RSM_SUCCESS)
            pbx_fatal("cannot reach the doorbell of a rank of the node");
    }
    rsm_intr_signal_post(o->bell, RSM_SIGPOST_NO_ACCUMULATE);
}

int pbx_post(int dest, pbx_postbox_t *pb, const pbx_src_t *src)
{
    pbx_out_t *o = &pbx.out[dest];
    uint64_t k = o->written;
    size_t slot = (size_t)(k % (uint64_t)pbx_params.postboxes);
    size_t slot_off = o->ring + slot * PBX_POSTBOX_SIZE;
    int has_piece =
        pb->kind == PBX_ENV_EAGER || pb->kind == PBX_EAGER_MORE || pb->kind == PBX_RNDV_DATA;
    size_t data_off = 0;
    int rc = RSM_SUCCESS;

    /* slot k's last postbox (k - postboxes) was acknowledged: its blocks
     * go back before the slot forgets them */
    reclaim(dest);
    pb->nblocks = 0;
    pb->first_block = 0;
    if (has_piece && pb->len > 0) {
        uint32_t blocks = (uint32_t)((pb->len + pbx_params.block_size - 1) / pbx_params.block_size);

        /* (pbx_block_room found them, and nothing was allocated since) */
        pb->first_block = o->next_first;
        pb->nblocks = (uint16_t)blocks;
        blocks_mark(o->pool, o->next_first, blocks, 1);
        if ((int)o->next_first < o->pool->shared)
            o->pool->cursor = (int)(o->next_first + blocks);
        o->next_blocks = 0;
        data_off = o->pool->base + (size_t)pb->first_block * pbx_params.block_size;
    }
    if (pb->kind == PBX_ENV_INLINE && pb->len > 0)
        copy_piece(pb->u.data, src, pb->len);
    o->slot_first[slot] = pb->first_block;
    o->slot_blocks[slot] = pb->nblocks;

    if (o->kind == OUT_TCP) {
        /* one putv, one write: the data, the acknowledgement owed to
         * @dest (riding along instead of costing a frame of its own), and
         * the postbox, whose first word (the sequence word)
         * lands last, with the signal: the receiver reads it all once it
         * sees the word */
        pbx_in_t *in = &pbx.in[dest];
        uint64_t ack[2] = {in->consumed, ~in->consumed};
        /* it rides once a quarter of what makes it go alone is owed
         * (pbx_consume): a frame less for most messages of a ping-pong */
        int with_ack = in->blocks_owed * 4 >= in->ack_blocks ||
                       in->consumed - in->ack_sent >= (uint64_t)(pbx_params.postboxes + 3) / 4;
        rsm_iovec_t iov[3];
        rsm_scat_gath_t sg = {.local_nodeid = pbx.node,
                              .flags = RSM_IMPLICIT_SIGPOST | PB_RSM_PUT_FIRST_WORD_LAST,
                              .remote_handle = o->im,
                              .iovec = iov};
        int n = 0;

        if (data_off != 0)
            iov[n++] = (rsm_iovec_t){.io_type = RSM_VA_TYPE,
                                     .local.vaddr = (char *)piece_source(o, src, pb->len),
                                     .remote_offset = data_off,
                                     .transfer_length = pb->len};
        if (with_ack)
            iov[n++] = (rsm_iovec_t){
                .io_type = RSM_VA_TYPE,
                .local.vaddr = (char *)ack,
                .remote_offset = ack_offset(pbx.node_of[dest], pbx.local_of[dest], pbx.rank),
                .transfer_length = sizeof(ack)};
        iov[n++] = (rsm_iovec_t){.io_type = RSM_VA_TYPE,
                                 .local.vaddr = (char *)pb,
                                 .remote_offset = slot_off,
                                 .transfer_length = PBX_POSTBOX_SIZE};
        sg.io_request_count = (ulong_t)n;
        atomic_store_explicit(&pb->seq, (uint32_t)(k + 1), memory_order_relaxed);
        rc = rsm_memseg_import_putv(&sg);
        if (rc != RSM_SUCCESS) {
            pb_error("a put to rank %d failed: %s", dest, rsm_strerror(rc));
            return MPI_ERR_OTHER;
        }
        if (with_ack) {
            in->ack_sent = ack[0];
            in->blocks_owed = 0;
        }
    } else {
        pbx_postbox_t *box = (pbx_postbox_t *)(pbx.area + slot_off);

        if (data_off != 0)
            copy_piece(pbx.area + data_off, src, pb->len);
        memcpy((char *)box + sizeof(box->seq), (const char *)pb + sizeof(pb->seq),
               PBX_POSTBOX_SIZE - sizeof(pb->seq));
        atomic_store_explicit(&box->seq, (uint32_t)(k + 1), memory_order_release);
        if (o->kind == OUT_SHM)
            wake_if_asleep(dest);
    }
    o->written = k + 1;
    return MPI_SUCCESS;
}

/* ---- the receiving side ---------------------------------------------------- */

const pbx_postbox_t *pbx_peek(int source)
{
    pbx_in_t *in = &pbx.in[source];
    const pbx_postbox_t *pb =
        (const pbx_postbox_t *)(in->ring + (size_t)(in->consumed % (uint64_t)pbx_params.postboxes) *
                                               PBX_POSTBOX_SIZE);

    if (atomic_load_explicit(&pb->seq, memory_order_acquire) == (uint32_t)(in->consumed + 1))
        return pb;
    return NULL;
}

const void *pbx_piece_data(int source, const pbx_postbox_t *pb)
{
    return pbx.in[source].pool + (size_t)pb->first_block * pbx_params.block_size;
}

/* Tell @source how many of its postboxes this rank consumed. */
static void send_ack(int source)
{
    pbx_in_t *in = &pbx.in[source];
    pbx_out_t *o = &pbx.out[source];
    uint64_t count = in->consumed;
    size_t at = ack_offset(pbx.node_of[source], pbx.local_of[source], pbx.rank);

    if (PB_UNLIKELY(o->kind == OUT_NONE) && out_connect(source) != MPI_SUCCESS)
        pbx_fatal("cannot open the channel to acknowledge to a rank");
    if (o->kind == OUT_TCP) {
        uint64_t pair[2] = {count, ~count};
        rsm_iovec_t iov = {.io_type = RSM_VA_TYPE,
                           .local.vaddr = (char *)pair,
                           .remote_offset = at,
                           .transfer_length = sizeof(pair)};
        rsm_scat_gath_t sg = {.local_nodeid = pbx.node,
                              .io_request_count = 1,
                              .flags = RSM_IMPLICIT_SIGPOST,
                              .remote_handle = o->im,
                              .iovec = &iov};

        if (rsm_memseg_import_putv(&sg) != RSM_SUCCESS)
            pbx_fatal("cannot acknowledge to a rank over tcp");
    } else if (o->kind == OUT_SHM || o->kind == OUT_SELF) {
        _Atomic uint64_t *pair = (_Atomic uint64_t *)(pbx.area + at);

        atomic_store_explicit(&pair[0], count, memory_order_relaxed);
        atomic_store_explicit(&pair[1], ~count, memory_order_release);
        if (o->kind == OUT_SHM)
            wake_if_asleep(source);
    } else {
        return;
    }
    in->ack_sent = count;
    in->blocks_owed = 0;
}

void pbx_consume(int source, const pbx_postbox_t *pb)
{
    pbx_in_t *in = &pbx.in[source];
    int had_blocks = pb->nblocks > 0;

    in->consumed++;
    in->blocks_owed += pb->nblocks;
    /* On the node an acknowledgement is a store: blocks, scarcer than
     * postboxes, go back at once.  Across nodes it is a frame: it waits to
     * ride on the next postbox to the source (pbx_post), unless half the
     * ring or this rank's share of half the pool is owed, or the blocks
     * were this rank's reserve: then the shared ones are all out (another
     * rank of the node holds them), and the source can send this rank
     * nothing more until they come back. */
    if (in->remote ? in->blocks_owed >= in->ack_blocks ||
                         (had_blocks && (int)pb->first_block >= in->shared)
                   : had_blocks)
        send_ack(source);
    else if (in->consumed - in->ack_sent >= (uint64_t)(pbx_params.postboxes + 1) / 2)
        send_ack(source);
}

void pbx_flush_acks(void)
{
    for (int s = 0; s < pbx.size; s++) {
        if (pbx.in[s].consumed != pbx.in[s].ack_sent)
            send_ack(s);
    }
}

/* ---- sleeping ---------------------------------------------------------------- */

void pbx_poll_network(void)
{
    /* a zero wait reads this process's tcp sockets now (applying peers'
     * puts to the area) instead of leaving them to the RSM service
     * thread, whose wake-up would be on the message's path */
    if (pbx.tcp_ex != NULL)
        rsm_intr_signal_wait(pbx.tcp_ex, 0);
}

/* Claim (1) or give back (0) the progress of this process's tcp traffic. */
static void network_claim(int claim)
{
    if (pbx.tcp_claimed == claim)
        return;
    if (claim)
        pbx.tcp_claimed = pb_rsm_progress_claim(pbx.tcp_ctl) == RSM_SUCCESS;
    else if (pb_rsm_progress_release(pbx.tcp_ctl) == RSM_SUCCESS)
        pbx.tcp_claimed = 0;
}

void pbx_sleep_begin(void)
{
    pbx_flush_acks();
    atomic_store_explicit(sleeping_word(pbx.local), 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
}

void pbx_sleep_cancel(void)
{
    atomic_store_explicit(sleeping_word(pbx.local), 0, memory_order_relaxed);
}

void pbx_sleep(int timeout_ms)
{
    int ready;

    if (pbx.nfds == 1) {
        rsm_intr_signal_wait(pbx.fd_segs[0], timeout_ms);
    } else {
        /* asleep on the doorbell's and the tcp export's words, this thread
         * reads no socket: the RSM service thread must, and wake it */
        network_claim(0);
        rsm_intr_signal_wait_pollfd(pbx.fds, (nfds_t)pbx.nfds, timeout_ms, &ready);
        network_claim(1);
    }
    pbx_sleep_cancel();
}
