/*
 * The tcp path (path.h): toward a rank of another node a postbox is one
 * RSM putv into that rank's export of its node's area, over the tcp
 * controller: the piece's data, the acknowledgement owed to it (riding
 * along instead of costing a frame of its own), and the postbox, whose
 * first word (the sequence word) lands last, with the signal.
 */
#include "mpi/engine/path.h"

#include <stdlib.h>

#include "util/log.h"

static void tcp_disconnect(pb_eng_out_t *o)
{
    if (o->im != NULL)
        rsm_memseg_import_disconnect(o->im);
    o->im = NULL;
    free(o->scratch);
    o->scratch = NULL;
}

static int tcp_connect(pb_eng_out_t *o, int dest)
{
    int node = pb_eng_channel.node_of[dest];
    unsigned bell_id, tcp_id;
    int rc;

    if (pb_eng_channel_rank_ids(dest, &bell_id, &tcp_id) != 0)
        return MPI_ERR_OTHER;
    rc = rsm_memseg_import_connect(pb_eng_channel.tcp_ctl, (rsm_node_id_t)node, tcp_id,
                                   RSM_PERM_RDWR, &o->im);
    if (rc == RSM_SUCCESS) {
        rc = rsm_memseg_import_set_mode(o->im, RSM_BARRIER_MODE_EXPLICIT);
        /* room to pack the largest piece */
        o->scratch = malloc(pb_eng_params.block_size *
                            (size_t)(o->pool->shared / 2 + PB_ENG_RESERVE_BLOCKS));
        if (rc == RSM_SUCCESS && o->scratch == NULL)
            rc = RSMERR_INSUFFICIENT_MEM;
        if (rc != RSM_SUCCESS)
            tcp_disconnect(o);
    }
    if (rc != RSM_SUCCESS) {
        /* a rank of another world may have ended (channel.h): its caller
         * says whether that matters */
        if (pb_eng_channel_same_world(dest))
            pb_error("cannot reach the postbox area of rank %d: %s", dest, rsm_strerror(rc));
        else
            pb_debug("cannot reach the postbox area of rank %d (another world's): %s", dest,
                     rsm_strerror(rc));
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

/* Where @len packed bytes of @src can be put from: in place when its type
 * is contiguous, else packed into @o's scratch room. */
static const void *piece_source(pb_eng_out_t *o, const pb_eng_src_t *src, size_t len)
{
    if (pb_eng_type_is_contiguous(src->type))
        return (const char *)((uintptr_t)src->buf + (uintptr_t)pb_eng_type_true_lb(src->type) +
                              src->offset);
    pb_eng_type_pack_range(src->buf, src->count, src->type, src->offset, o->scratch, len);
    return o->scratch;
}

static int tcp_post(pb_eng_out_t *o, int dest, pb_eng_postbox_t *pb, uint32_t seq, size_t slot_off,
                    const pb_eng_src_t *src, size_t data_off)
{
    /* one putv, one write: the receiver reads it all once it sees the
     * sequence word */
    pb_eng_in_t *in = &pb_eng_channel.in[dest];
    uint64_t ack[2] = {in->consumed, ~in->consumed};
    /* the acknowledgement rides once a quarter of what makes it go alone
     * is owed (pb_eng_channel_consume): a frame less for most messages of
     * a ping-pong */
    int with_ack = in->blocks_owed * 4 >= in->ack_blocks ||
                   in->consumed - in->ack_sent >= (uint64_t)(pb_eng_params.postboxes + 3) / 4;
    rsm_iovec_t iov[3];
    rsm_scat_gath_t sg = {.local_nodeid = pb_eng_channel.node,
                          .flags = RSM_IMPLICIT_SIGPOST | PB_RSM_PUT_FIRST_WORD_LAST,
                          .remote_handle = o->im,
                          .iovec = iov};
    int n = 0, rc;

    if (data_off != 0)
        iov[n++] = (rsm_iovec_t){.io_type = RSM_VA_TYPE,
                                 .local.vaddr = (char *)piece_source(o, src, pb->len),
                                 .remote_offset = data_off,
                                 .transfer_length = pb->len};
    if (with_ack)
        iov[n++] = (rsm_iovec_t){.io_type = RSM_VA_TYPE,
                                 .local.vaddr = (char *)ack,
                                 .remote_offset = o->ack_at,
                                 .transfer_length = sizeof(ack)};
    iov[n++] = (rsm_iovec_t){.io_type = RSM_VA_TYPE,
                             .local.vaddr = (char *)pb,
                             .remote_offset = slot_off,
                             .transfer_length = PB_ENG_POSTBOX_SIZE};
    sg.io_request_count = (ulong_t)n;
    atomic_store_explicit(&pb->seq, seq, memory_order_relaxed);
    rc = rsm_memseg_import_putv(&sg);
    if (rc != RSM_SUCCESS) {
        pb_error("a put to rank %d failed: %s", dest, rsm_strerror(rc));
        return MPI_ERR_OTHER;
    }
    if (with_ack) {
        in->ack_sent = ack[0];
        in->blocks_owed = 0;
    }
    return MPI_SUCCESS;
}

static void tcp_ack(pb_eng_out_t *o, int dest, uint64_t count)
{
    uint64_t pair[2] = {count, ~count};
    rsm_iovec_t iov = {.io_type = RSM_VA_TYPE,
                       .local.vaddr = (char *)pair,
                       .remote_offset = o->ack_at,
                       .transfer_length = sizeof(pair)};
    rsm_scat_gath_t sg = {.local_nodeid = pb_eng_channel.node,
                          .io_request_count = 1,
                          .flags = RSM_IMPLICIT_SIGPOST,
                          .remote_handle = o->im,
                          .iovec = &iov};

    if (rsm_memseg_import_putv(&sg) == RSM_SUCCESS)
        return;
    /* a process of another world (a universe's spawned processes and their
     * parents) may end while this one runs: it needs no acknowledgement
     * any more */
    if (!pb_eng_channel_same_world(dest))
        return;
    pb_eng_fatal("cannot acknowledge to a rank over tcp");
}

const pb_eng_path_ops_t pb_eng_path_tcp_ops = {
    .name = "tcp",
    .connect = tcp_connect,
    .disconnect = tcp_disconnect,
    .post = tcp_post,
    .ack = tcp_ack,
    .read_peer = NULL, /* (no single copy) */
    .write_peer = NULL,
};
