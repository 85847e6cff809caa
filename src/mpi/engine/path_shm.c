/*
 * The shm path (path.h): toward a rank of this node a postbox and an
 * acknowledgement are stores through this rank's mapping of the node's
 * area; then the destination, if it said it sleeps, is woken through its
 * doorbell (an RSM signal).  Its read_peer and write_peer are the kernel
 * single copy (cma.c): the protocol may read from and write to the peer's
 * buffers.
 */
#include "mpi/engine/cma.h"
#include "mpi/engine/path.h"
#include "util/time.h"

/* Wake @dest if it sleeps (it said so in its line of the area): post its
 * doorbell, imported on first use. */
static void wake_if_asleep(pb_eng_out_t *o, int dest)
{
    _Atomic uint32_t *sleeping =
        (_Atomic uint32_t *)(pb_eng_channel.area +
                             (size_t)pb_eng_channel.local_of[dest] * PB_ENG_LINE);

    /* the postbox stored before the sleeping word is read (the sleeper
     * stores that word before it checks its rings: one of us sees the
     * other) */
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(sleeping, memory_order_relaxed))
        return;
    if (o->bell == NULL) {
        unsigned bell_id, tcp_id;

        if (pb_eng_channel_rank_ids(dest, &bell_id, &tcp_id) != 0 ||
            rsm_memseg_import_connect(pb_eng_channel.shm_ctl, pb_eng_channel.node, bell_id,
                                      RSM_PERM_RDWR, &o->bell) != RSM_SUCCESS)
            pb_eng_fatal("cannot reach the doorbell of a rank of the node");
    }
    rsm_intr_signal_post(o->bell, RSM_SIGPOST_NO_ACCUMULATE);
}

void pb_eng_channel_wake(int dest)
{
    wake_if_asleep(&pb_eng_channel.out[dest], dest);
}

static int shm_post(pb_eng_out_t *o, int dest, pb_eng_postbox_t *pb, uint32_t seq, size_t slot_off,
                    const pb_eng_src_t *src, size_t data_off)
{
    /* a contiguous piece's copy tells whether the destination is far */
    if (data_off != 0 && pb_eng_type_is_contiguous(src->type) &&
        pb_eng_far_time_piece(&o->far, pb->len)) {
        int64_t start = pb_time_now_ns();

        pb_eng_path_store(pb, seq, slot_off, src, data_off);
        pb_eng_far_record(&o->far, pb->len, pb_time_now_ns() - start);
    } else {
        pb_eng_path_store(pb, seq, slot_off, src, data_off);
    }
    wake_if_asleep(o, dest);
    return MPI_SUCCESS;
}

static void shm_ack(pb_eng_out_t *o, int dest, uint64_t count)
{
    pb_eng_path_store_ack(o->ack_at, count);
    wake_if_asleep(o, dest);
}

static void shm_disconnect(pb_eng_out_t *o)
{
    if (o->bell != NULL)
        rsm_memseg_import_disconnect(o->bell);
    o->bell = NULL;
}

const pb_eng_path_ops_t pb_eng_path_shm_ops = {
    .name = "shm",
    .connect = pb_eng_path_connect_none,
    .disconnect = shm_disconnect,
    .post = shm_post,
    .ack = shm_ack,
    .read_peer = pb_eng_cma_read,
    .write_peer = pb_eng_cma_write,
};
