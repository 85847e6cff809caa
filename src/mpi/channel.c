/*
 * Channels between ranks: the inbox segment, connections made on first
 * use, postbox rings with flow control, and sleeping (channel.h).
 *
 * Inbox layout (one per rank, page aligned):
 *
 *   header      sleeping word at 0; at 64 * (1 + p): the count of this
 *               rank's postboxes to p that p consumed, then its complement
 *               (written by p; a reader takes the pair only when they
 *               agree, so a put torn by the transport is never believed)
 *   channel s   for each sender s: a ring of pbx_params.postboxes postboxes,
 *               then a pool of POSTBOX_POOL_BLOCKS blocks (a sender on
 *               another node: POSTBOX_POOL_BLOCKS_NET; on the node large
 *               messages go by single copy, over tcp through the pool)
 *
 * Sender s alone writes channel s (postbox k at ring slot k % postboxes,
 * its sequence word k + 1 last); the pool is a ring too, allocated in order
 * and freed in order as postboxes are acknowledged, so one acknowledged
 * count frees both.  On the node the sender stores through a mapping of
 * the receiver's inbox; toward another node it puts (data, then the
 * postbox's body, then its sequence word with a signal: the tcp transport
 * applies a connection's frames in order).
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

#define PBX_KVS_KEY "pbx-inbox-%d"
#define PBX_HEADER_LINE 64

typedef enum {
    OUT_NONE = 0,
    OUT_SELF,
    OUT_SHM,
    OUT_TCP,
    OUT_FAILED
} out_kind_t;

/* this rank's side of the channel toward one destination */
typedef struct {
    out_kind_t kind;
    rsm_memseg_import_handle_t im;
    char *base;        /* the destination's inbox, mapped (self, shm) */
    size_t chan_off;   /* this rank's channel in the destination's inbox */
    int blocks;        /* its pool's blocks */
    uint64_t written;  /* postboxes written */
    uint64_t acked;    /* postboxes the destination said it consumed */
    uint64_t blk_head; /* pool blocks allocated, ever */
    uint64_t *blk_end; /* blk_head after postbox k, at k % postboxes */
    char *scratch;     /* packing room for puts of non-contiguous data */
} pbx_out_t;

/* this rank's side of the channel from one source */
typedef struct {
    size_t chan_off;   /* the source's channel in this inbox */
    int blocks;        /* its pool's blocks */
    uint64_t consumed; /* postboxes handled */
    uint64_t ack_sent; /* consumed as last written to the source */
    int remote;        /* the source is on another node: acknowledgements wait */
    int blocks_owed;   /* pool blocks consumed since ack_sent */
} pbx_in_t;

pbx_params_t pbx_params;

static struct {
    int rank, size;
    rsm_node_id_t node;
    char *inbox;
    size_t inbox_size, header_size, ring_size;
    rsmapi_controller_handle_t shm_ctl, tcp_ctl;
    rsm_memseg_export_handle_t shm_ex, tcp_ex;
    rsm_memseg_id_t shm_id, tcp_id;
    struct pollfd fds[2];
    void *fd_segs[2];
    int nfds;
    pbx_out_t *out;
    pbx_in_t *in;
    int tcp_claimed; /* this rank polls its tcp traffic itself (network_claim) */
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

static _Atomic uint32_t *sleeping_word(char *inbox)
{
    return (_Atomic uint32_t *)inbox;
}

static size_t ack_offset(int peer)
{
    return PBX_HEADER_LINE * (size_t)(1 + peer);
}

/* The pool blocks of the channel between ranks @a and @b (either way). */
static int blocks_between(int a, int b)
{
    return postbox_job_node(a) == postbox_job_node(b) ? pbx_params.blocks : pbx_params.blocks_net;
}

static size_t chan_size_of(int blocks)
{
    return round_up(pbx.ring_size + (size_t)blocks * pbx_params.block_size, PBX_HEADER_LINE);
}

/* Where sender @sender's channel starts in the inbox of rank @owner; with
 * @sender = the job's size, the end of that inbox's channels. */
static size_t chan_offset_in(int owner, int sender)
{
    size_t offset = pbx.header_size;

    for (int s = 0; s < sender; s++)
        offset += chan_size_of(blocks_between(owner, s));
    return offset;
}

static size_t inbox_size_of(int owner)
{
    return round_up(chan_offset_in(owner, pbx.size), (size_t)sysconf(_SC_PAGESIZE));
}

static int export_on(rsmapi_controller_handle_t ctl, rsm_memseg_export_handle_t *ex,
                     rsm_memseg_id_t *id)
{
    int rc = rsm_memseg_export_create(ctl, ex, pbx.inbox, pbx.inbox_size, 0);

    if (rc == RSM_SUCCESS) {
        *id = 0;
        rc = rsm_memseg_export_publish(*ex, id, NULL, 0);
        if (rc != RSM_SUCCESS)
            rsm_memseg_export_destroy(*ex);
    }
    if (rc != RSM_SUCCESS)
        pb_error("MPI_Init: cannot export the inbox: %s", rsm_strerror(rc));
    return rc;
}

int pbx_init(void)
{
    int local = postbox_job_local_ranks(NULL, 0);
    char key[32], value[64];

    pbx_params.postboxes = (int)param("POSTBOX_NUMPOSTBOX", 2, 4096);
    pbx_params.blocks = (int)param("POSTBOX_POOL_BLOCKS", 1, 65536);
    pbx_params.blocks_net = (int)param("POSTBOX_POOL_BLOCKS_NET", 1, 65536);
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
    pbx.header_size = round_up(ack_offset(pbx.size), (size_t)sysconf(_SC_PAGESIZE));
    pbx.ring_size = (size_t)pbx_params.postboxes * PBX_POSTBOX_SIZE;
    pbx.inbox_size = inbox_size_of(pbx.rank);
    pbx.inbox =
        mmap(NULL, pbx.inbox_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pbx.out = calloc((size_t)pbx.size, sizeof(*pbx.out));
    pbx.in = calloc((size_t)pbx.size, sizeof(*pbx.in));
    if (pbx.inbox == MAP_FAILED || pbx.out == NULL || pbx.in == NULL) {
        pb_error("MPI_Init: no memory for an inbox of %zu bytes", pbx.inbox_size);
        return MPI_ERR_NO_MEM;
    }
    for (int s = 0; s < pbx.size; s++) {
        pbx.in[s].chan_off = chan_offset_in(pbx.rank, s);
        pbx.in[s].blocks = blocks_between(pbx.rank, s);
        pbx.in[s].remote = postbox_job_node(s) != pbx.node;
    }
    /* the node's ranks map the inbox; the others put into it */
    if (rsm_get_controller("shm", &pbx.shm_ctl) != RSM_SUCCESS ||
        export_on(pbx.shm_ctl, &pbx.shm_ex, &pbx.shm_id) != RSM_SUCCESS)
        return MPI_ERR_OTHER;
    pbx.fd_segs[pbx.nfds++] = pbx.shm_ex;
    if (local < pbx.size) {
        if (rsm_get_controller("tcp", &pbx.tcp_ctl) != RSM_SUCCESS ||
            export_on(pbx.tcp_ctl, &pbx.tcp_ex, &pbx.tcp_id) != RSM_SUCCESS)
            return MPI_ERR_OTHER;
        pbx.fd_segs[pbx.nfds++] = pbx.tcp_ex;
    }
    for (int i = 0; i < pbx.nfds; i++) {
        if (rsm_memseg_get_pollfd(pbx.fd_segs[i], &pbx.fds[i]) != RSM_SUCCESS)
            return MPI_ERR_OTHER;
    }
    snprintf(key, sizeof(key), PBX_KVS_KEY, pbx.rank);
    snprintf(value, sizeof(value), "%u:%u", (unsigned)pbx.shm_id, (unsigned)pbx.tcp_id);
    if (postbox_job_kvs_put(key, value) != 0 || postbox_job_fence() != 0) {
        pb_error("MPI_Init: cannot publish the inbox's ids in the job's key-value space");
        return MPI_ERR_OTHER;
    }
    /* every MPI call polls the network (pbx_poll_network): the RSM service
     * thread need not wake for each message meanwhile */
    if (pbx.tcp_ctl != NULL)
        network_claim(1);
    return MPI_SUCCESS;
}

void pbx_finalize(void)
{
    pbx_flush_acks();
    if (pbx.tcp_ctl != NULL)
        network_claim(0); /* nobody polls from here: the service thread reads */
    postbox_job_fence();  /* every peer is done writing postboxes and acks */
    for (int d = 0; d < pbx.size; d++) {
        pbx_out_t *o = &pbx.out[d];

        if (o->kind == OUT_SHM)
            rsm_memseg_import_unmap(o->im);
        if (o->kind == OUT_SHM || o->kind == OUT_TCP)
            rsm_memseg_import_disconnect(o->im);
        free(o->blk_end);
        free(o->scratch);
    }
    postbox_job_fence(); /* nobody is connected to this inbox any more */
    for (int i = 0; i < pbx.nfds; i++) {
        rsm_memseg_release_pollfd(pbx.fd_segs[i]);
        rsm_memseg_export_unpublish(pbx.fd_segs[i]);
        rsm_memseg_export_destroy(pbx.fd_segs[i]);
    }
    if (pbx.tcp_ctl != NULL)
        rsm_release_controller(pbx.tcp_ctl);
    rsm_release_controller(pbx.shm_ctl);
    munmap(pbx.inbox, pbx.inbox_size);
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

/* ---- the sending side ------------------------------------------------------ */

static const char *single_copy_text(out_kind_t kind)
{
    static char text[48];

    if (kind != OUT_SHM || pbx_params.single_copy == 0)
        return "off";
    snprintf(text, sizeof(text), "from %zu B (process_vm_readv)", pbx_params.single_copy);
    return text;
}

/* Make the channel toward @dest: map its inbox on this node, import it
 * over tcp otherwise.  @return MPI_SUCCESS or MPI_ERR_OTHER (logged). */
static int out_connect(int dest)
{
    pbx_out_t *o = &pbx.out[dest];
    unsigned shm_id, tcp_id;
    char key[32], value[64];
    int rc;

    o->blk_end = calloc((size_t)pbx_params.postboxes, sizeof(*o->blk_end));
    if (o->blk_end == NULL)
        goto fail;
    o->chan_off = chan_offset_in(dest, pbx.rank);
    o->blocks = blocks_between(dest, pbx.rank);
    if (dest == pbx.rank) {
        o->base = pbx.inbox;
        o->kind = OUT_SELF;
        return MPI_SUCCESS;
    }
    snprintf(key, sizeof(key), PBX_KVS_KEY, dest);
    if (postbox_job_kvs_get(key, value, sizeof(value)) != 0 ||
        sscanf(value, "%u:%u", &shm_id, &tcp_id) != 2) {
        pb_error("rank %d published no inbox (key %s)", dest, key);
        goto fail;
    }
    if (postbox_job_node(dest) == pbx.node) {
        void *addr = NULL;

        rc = rsm_memseg_import_connect(pbx.shm_ctl, pbx.node, shm_id, RSM_PERM_RDWR, &o->im);
        if (rc == RSM_SUCCESS) {
            rc = rsm_memseg_import_map(o->im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0,
                                       inbox_size_of(dest));
            if (rc != RSM_SUCCESS)
                rsm_memseg_import_disconnect(o->im);
        }
        o->base = addr;
        o->kind = OUT_SHM;
    } else {
        rc = rsm_memseg_import_connect(pbx.tcp_ctl, postbox_job_node(dest), tcp_id, RSM_PERM_RDWR,
                                       &o->im);
        if (rc == RSM_SUCCESS) {
            rc = rsm_memseg_import_set_mode(o->im, RSM_BARRIER_MODE_EXPLICIT);
            o->scratch = malloc(pbx_params.block_size * (size_t)o->blocks);
            if (rc == RSM_SUCCESS && o->scratch == NULL)
                rc = RSMERR_INSUFFICIENT_MEM;
            if (rc != RSM_SUCCESS)
                rsm_memseg_import_disconnect(o->im);
        }
        o->kind = OUT_TCP;
    }
    if (rc != RSM_SUCCESS) {
        pb_error("cannot reach the inbox of rank %d: %s", dest, rsm_strerror(rc));
        goto fail;
    }
    if (pb_config_get_long("POSTBOX_SHOW_TRANSPORTS") > 0)
        fprintf(stderr,
                "postbox mpi: rank %d -> %d: %s, %d postboxes, %d blocks of %zu B, "
                "rendezvous from %zu B, single copy %s\n",
                pbx.rank, dest, pbx_transport_of(dest), pbx_params.postboxes, o->blocks,
                pbx_params.block_size, pbx_params.rendezvous, single_copy_text(o->kind));
    return MPI_SUCCESS;

fail:
    o->kind = OUT_FAILED;
    return MPI_ERR_OTHER;
}

/* How many of this rank's postboxes @dest consumed: the acknowledgement
 * pair in this inbox when it is whole and moves forward, else the last
 * value believed. */
static uint64_t acked_by(int dest)
{
    pbx_out_t *o = &pbx.out[dest];
    _Atomic uint64_t *pair = (_Atomic uint64_t *)(pbx.inbox + ack_offset(dest));
    uint64_t check = atomic_load_explicit(&pair[1], memory_order_acquire);
    uint64_t count = atomic_load_explicit(&pair[0], memory_order_relaxed);

    if (count == ~check && count > o->acked && count <= o->written)
        o->acked = count;
    return o->acked;
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
    uint64_t acked = acked_by(dest), freed, free_blocks, start, contiguous;
    size_t room;

    freed = acked == 0 ? 0 : o->blk_end[(acked - 1) % (uint64_t)pbx_params.postboxes];
    free_blocks = (uint64_t)o->blocks - (o->blk_head - freed);
    start = o->blk_head % (uint64_t)o->blocks;
    contiguous = (uint64_t)o->blocks - start;
    if (contiguous > free_blocks)
        contiguous = free_blocks;
    /* at most half the pool per piece: the receiver empties one half while
     * the sender fills the other */
    if (o->blocks >= 2 && contiguous > (uint64_t)o->blocks / 2)
        contiguous = (uint64_t)o->blocks / 2;
    room = (size_t)contiguous * pbx_params.block_size;
    if (room > (size_t)1 << 30) /* a postbox's length is 32 bits */
        room = (size_t)1 << 30;
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

/* Wake @o's receiver if it sleeps (it announced so in its inbox header). */
static void wake_if_asleep(pbx_out_t *o)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(sleeping_word(o->base), memory_order_relaxed))
        rsm_intr_signal_post(o->im, RSM_SIGPOST_NO_ACCUMULATE);
}

int pbx_post(int dest, pbx_postbox_t *pb, const pbx_src_t *src)
{
    pbx_out_t *o = &pbx.out[dest];
    uint64_t k = o->written;
    size_t chan = o->chan_off;
    size_t slot_off = chan + (size_t)(k % (uint64_t)pbx_params.postboxes) * PBX_POSTBOX_SIZE;
    int has_piece =
        pb->kind == PBX_ENV_EAGER || pb->kind == PBX_EAGER_MORE || pb->kind == PBX_RNDV_DATA;
    size_t data_off = 0;
    int rc = RSM_SUCCESS;

    pb->nblocks = 0;
    pb->first_block = 0;
    if (has_piece && pb->len > 0) {
        uint64_t first = o->blk_head % (uint64_t)o->blocks;

        pb->first_block = (uint32_t)first;
        pb->nblocks = (uint16_t)((pb->len + pbx_params.block_size - 1) / pbx_params.block_size);
        o->blk_head += pb->nblocks;
        data_off = chan + pbx.ring_size + (size_t)first * pbx_params.block_size;
    }
    if (pb->kind == PBX_ENV_INLINE && pb->len > 0)
        copy_piece(pb->u.data, src, pb->len);
    o->blk_end[k % (uint64_t)pbx_params.postboxes] = o->blk_head;

    if (o->kind == OUT_TCP) {
        /* one putv, one write: the data, the acknowledgement owed to
         * @dest if any (it rides along instead of costing a frame of its
         * own), and the postbox, whose first word (the sequence word)
         * lands last, with the signal: the receiver reads it all once it
         * sees the word */
        pbx_in_t *in = &pbx.in[dest];
        uint64_t ack[2] = {in->consumed, ~in->consumed};
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
        if (in->consumed != in->ack_sent)
            iov[n++] = (rsm_iovec_t){.io_type = RSM_VA_TYPE,
                                     .local.vaddr = (char *)ack,
                                     .remote_offset = ack_offset(pbx.rank),
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
        in->ack_sent = ack[0];
        in->blocks_owed = 0;
    } else {
        pbx_postbox_t *slot = (pbx_postbox_t *)(o->base + slot_off);

        if (data_off != 0)
            copy_piece(o->base + data_off, src, pb->len);
        memcpy((char *)slot + sizeof(slot->seq), (const char *)pb + sizeof(pb->seq),
               PBX_POSTBOX_SIZE - sizeof(pb->seq));
        atomic_store_explicit(&slot->seq, (uint32_t)(k + 1), memory_order_release);
        if (o->kind == OUT_SHM)
            wake_if_asleep(o);
    }
    o->written = k + 1;
    return MPI_SUCCESS;
}

/* ---- the receiving side ---------------------------------------------------- */

const pbx_postbox_t *pbx_peek(int source)
{
    pbx_in_t *in = &pbx.in[source];
    const pbx_postbox_t *pb =
        (const pbx_postbox_t *)(pbx.inbox + in->chan_off +
                                (size_t)(in->consumed % (uint64_t)pbx_params.postboxes) *
                                    PBX_POSTBOX_SIZE);

    if (atomic_load_explicit(&pb->seq, memory_order_acquire) == (uint32_t)(in->consumed + 1))
        return pb;
    return NULL;
}

const void *pbx_piece_data(int source, const pbx_postbox_t *pb)
{
    return pbx.inbox + pbx.in[source].chan_off + pbx.ring_size +
           (size_t)pb->first_block * pbx_params.block_size;
}

/* Tell @source how many of its postboxes this rank consumed. */
static void send_ack(int source)
{
    pbx_in_t *in = &pbx.in[source];
    pbx_out_t *o = &pbx.out[source];
    uint64_t count = in->consumed;

    if (PB_UNLIKELY(o->kind == OUT_NONE) && out_connect(source) != MPI_SUCCESS)
        pbx_fatal("cannot open the channel to acknowledge to a rank");
    if (o->kind == OUT_TCP) {
        uint64_t pair[2] = {count, ~count};
        rsm_iovec_t iov = {.io_type = RSM_VA_TYPE,
                           .local.vaddr = (char *)pair,
                           .remote_offset = ack_offset(pbx.rank),
                           .transfer_length = sizeof(pair)};
        rsm_scat_gath_t sg = {.local_nodeid = pbx.node,
                              .io_request_count = 1,
                              .flags = RSM_IMPLICIT_SIGPOST,
                              .remote_handle = o->im,
                              .iovec = &iov};

        if (rsm_memseg_import_putv(&sg) != RSM_SUCCESS)
            pbx_fatal("cannot acknowledge to a rank over tcp");
    } else if (o->kind == OUT_SHM || o->kind == OUT_SELF) {
        _Atomic uint64_t *pair = (_Atomic uint64_t *)(o->base + ack_offset(pbx.rank));

        atomic_store_explicit(&pair[0], count, memory_order_relaxed);
        atomic_store_explicit(&pair[1], ~count, memory_order_release);
        if (o->kind == OUT_SHM)
            wake_if_asleep(o);
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
     * ring or half the pool is owed.  Then the sender always has room for
     * a piece (at most half the pool) once this rank consumed its
     * postboxes, and never waits on an acknowledgement left behind. */
    if (in->remote ? in->blocks_owed * 2 >= in->blocks : had_blocks)
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
     * puts to the inbox) instead of leaving them to the RSM service
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
    atomic_store_explicit(sleeping_word(pbx.inbox), 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
}

void pbx_sleep_cancel(void)
{
    atomic_store_explicit(sleeping_word(pbx.inbox), 0, memory_order_relaxed);
}

void pbx_sleep(int timeout_ms)
{
    int ready;

    if (pbx.nfds == 1) {
        rsm_intr_signal_wait(pbx.fd_segs[0], timeout_ms);
    } else {
        /* asleep on both inboxes' words, this thread reads no socket: the
         * RSM service thread must, and wake it */
        network_claim(0);
        rsm_intr_signal_wait_pollfd(pbx.fds, (nfds_t)pbx.nfds, timeout_ms, &ready);
        network_claim(1);
    }
    pbx_sleep_cancel();
}
