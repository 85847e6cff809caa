/*
 * Paths: the ways a channel (channel.h) reaches a destination, one ops
 * table each, chosen once when the channel is made:
 *
 *   self  (path_self.c)  the rank itself: stores into this node's area
 *   shm   (path_shm.c)   a rank of this node: stores through the mapping,
 *                        then rings its doorbell if it sleeps; copies
 *                        between the two processes' buffers by the kernel
 *                        single copy (cma.c)
 *   tcp   (path_tcp.c)   a rank of another node: puts into its export of
 *                        its node's area, over RSM's tcp controller
 *
 * The channel calls the ops and never names a path after connecting.
 */
#ifndef PB_ENG_PATH_H
#define PB_ENG_PATH_H

#include <string.h>

#include "mpi/engine/channel.h"

/* Connect @o toward @dest (the pool and ring are set).  @return
 * MPI_SUCCESS or MPI_ERR_OTHER (logged). */
typedef int (*pb_eng_path_connect_func_t)(pb_eng_out_t *o, int dest);

/* Undo pb_eng_path_connect_func_t (at MPI_Finalize; also after a partial
 * connect). */
typedef void (*pb_eng_path_disconnect_func_t)(pb_eng_out_t *o);

/* Write postbox @pb as number @seq - 1 of @o's ring at @slot_off of the
 * destination's area, with pb->len bytes of @src into its blocks at
 * @data_off (0: none); the sequence word lands last, then the destination
 * learns of it.  @return MPI_SUCCESS or MPI_ERR_OTHER (logged). */
typedef int (*pb_eng_path_post_func_t)(pb_eng_out_t *o, int dest, pb_eng_postbox_t *pb,
                                       uint32_t seq, size_t slot_off, const pb_eng_src_t *src,
                                       size_t data_off);

/* Write the acknowledgement @count (this rank consumed @count of @dest's
 * postboxes) at o->ack_at of @dest's node's area.  Ends the job when it cannot
 * (the sender would wait for it forever). */
typedef void (*pb_eng_path_ack_func_t)(pb_eng_out_t *o, int dest, uint64_t count);

/* What a copy straight between two processes' buffers gave. */
enum {
    PB_ENG_PEER_COPY_OK = 0,
    PB_ENG_PEER_COPY_FAILED,  /* this copy failed (a bad address): stream the message */
    PB_ENG_PEER_COPY_REFUSED, /* the system refuses such copies to this process
                                 altogether (a refused read is logged): stop
                                 offering them */
};

/* Read @len bytes at address @addr of the peer process @pid into @dst.
 * @return a PB_ENG_PEER_COPY_* value. */
typedef int (*pb_eng_path_read_peer_func_t)(uint32_t pid, uint64_t addr, void *dst, size_t len);

/* Write @len bytes of @src to address @addr of the peer process @pid.
 * @return a PB_ENG_PEER_COPY_* value. */
typedef int (*pb_eng_path_write_peer_func_t)(uint32_t pid, uint64_t addr, const void *src,
                                             size_t len);

struct pb_eng_path_ops {
    const char *name; /* for POSTBOX_SHOW_TRANSPORTS: "self", "shm", "tcp" */
    pb_eng_path_connect_func_t connect;
    pb_eng_path_disconnect_func_t disconnect;
    pb_eng_path_post_func_t post;
    pb_eng_path_ack_func_t ack;
    /* single copy: NULL both, for a path whose peers' memory this process
     * cannot reach (the rendezvous then streams through the pool) */
    pb_eng_path_read_peer_func_t read_peer;
    pb_eng_path_write_peer_func_t write_peer;
};

/* The three paths. */
extern const pb_eng_path_ops_t pb_eng_path_self_ops;
extern const pb_eng_path_ops_t pb_eng_path_shm_ops;
extern const pb_eng_path_ops_t pb_eng_path_tcp_ops;

/* Connect and disconnect for a path that needs neither. */
int pb_eng_path_connect_none(pb_eng_out_t *o, int dest);
void pb_eng_path_disconnect_none(pb_eng_out_t *o);

/* Store @pb into this node's area at @slot_off, with pb->len bytes of
 * @src at @data_off first (0: none), its sequence word @seq last with
 * release order: the self and shm paths' write. */
static inline void pb_eng_path_store(pb_eng_postbox_t *pb, uint32_t seq, size_t slot_off,
                                     const pb_eng_src_t *src, size_t data_off)
{
    pb_eng_postbox_t *box = (pb_eng_postbox_t *)(pb_eng_channel.area + slot_off);

    if (data_off != 0)
        pb_eng_channel_copy_piece(pb_eng_channel.area + data_off, src, pb->len);
    memcpy((char *)box + sizeof(box->seq), (const char *)pb + sizeof(pb->seq),
           PB_ENG_POSTBOX_SIZE - sizeof(pb->seq));
    /* release: the data and the postbox's other words before its number */
    atomic_store_explicit(&box->seq, seq, memory_order_release);
}

/* Store the acknowledgement pair @count at @at of this node's area. */
static inline void pb_eng_path_store_ack(size_t at, uint64_t count)
{
    _Atomic uint64_t *pair = (_Atomic uint64_t *)(pb_eng_channel.area + at);

    atomic_store_explicit(&pair[0], count, memory_order_relaxed);
    /* release: the count before its complement, which makes the pair whole */
    atomic_store_explicit(&pair[1], ~count, memory_order_release);
}

#endif
