/*
 * The self path (path.h): a rank's messages to itself are stores into its
 * own ring in this node's area, read back by the same process; nothing to
 * connect, nobody to wake.  Also the connect and disconnect of the paths
 * that need none.
 */
#include "mpi/engine/path.h"

int pb_eng_path_connect_none(pb_eng_out_t *o, int dest)
{
    (void)o, (void)dest;
    return MPI_SUCCESS;
}

void pb_eng_path_disconnect_none(pb_eng_out_t *o)
{
    (void)o;
}

static int self_post(pb_eng_out_t *o, int dest, pb_eng_postbox_t *pb, uint32_t seq, size_t slot_off,
                     const pb_eng_src_t *src, size_t data_off)
{
    (void)o, (void)dest;
    pb_eng_path_store(pb, seq, slot_off, src, data_off);
    return MPI_SUCCESS;
}

static void self_ack(pb_eng_out_t *o, int dest, uint64_t count)
{
    (void)dest;
    pb_eng_path_store_ack(o->ack_at, count);
}

const pb_eng_path_ops_t pb_eng_path_self_ops = {
    .name = "self",
    .connect = pb_eng_path_connect_none,
    .disconnect = pb_eng_path_disconnect_none,
    .post = self_post,
    .ack = self_ack,
    .read_peer = NULL, /* (no single copy) */
    .write_peer = NULL,
};
