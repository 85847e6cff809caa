/*
 * The receiving side of the protocol (protocol.h): matching (a receive
 * takes the earliest unexpected message that matches, an arriving envelope
 * the earliest posted receive that matches, and a channel is handled in
 * order, so messages between a pair on one context and tag never
 * overtake), the answers a postbox asks for, the single and split copies
 * (the path's read_peer and write_peer), probing and cancelling.
 */
#include <postbox/job.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi/engine/path.h"
#include "mpi/engine/protocol.h"
#include "util/log.h"

static int matches(MPI_Request r, int source, int tag, uint32_t context)
{
    return r->context == context && (r->peer < 0 || r->peer == source) &&
           (r->tag == MPI_ANY_TAG || r->tag == tag);
}

static inline void recv_finish(MPI_Request r)
{
    if (r->expecting) {
        r->expecting = 0;
        pb_eng.expect[r->peer]--;
    }
    r->status.MPI_ERROR = r->total > r->bytes ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
    pb_mpi_status_set_bytes(&r->status, r->total > r->bytes ? r->bytes : r->total);
    pb_eng_request_complete(r);
}

void pb_eng_recv_finish(MPI_Request r)
{
    recv_finish(r);
}

/* Bytes of a message arriving for receive @r, in order. */
static void recv_deliver(MPI_Request r, const void *data, size_t len)
{
    size_t offset = r->moved;

    r->moved += len;
    if (offset < r->bytes) {
        size_t n = len < r->bytes - offset ? len : r->bytes - offset;

        if (pb_eng_type_is_contiguous(r->type))
            memcpy((char *)((uintptr_t)r->buf + (uintptr_t)pb_eng_type_true_lb(r->type) + offset),
                   data, n);
        else
            pb_eng_type_unpack_range(data, n, r->buf, r->count, r->type, offset);
    }
    if (r->moved == r->total)
        recv_finish(r);
}

/* Receive @r matched a message of @total bytes from world rank @source. */
static void recv_matched(MPI_Request r, int source, int tag, size_t total)
{
    r->total = total;
    r->moved = 0;
    r->status.MPI_SOURCE = source;
    r->status.MPI_TAG = tag;
    r->peer = source;
}

static void ask_for_data(int source, uint64_t sreq, MPI_Request r)
{
    pb_eng_postbox_t cts = {.kind = PB_ENG_CTS};

    if (r->total > 0) {
        r->expecting = 1; /* its RNDV_DATA */
        pb_eng.expect[source]++;
    }
    cts.u.ids.sreq = sreq;
    cts.u.ids.rreq = (uint64_t)(uintptr_t)r;
    pb_eng_send_control(source, &cts);
}

/* A refusal of the system (not a bad address) holds for every later
 * message too: stop offering single copy. */
static void refuse_single_copy(int result)
{
    if (result == PB_ENG_PEER_COPY_REFUSED)
        pb_eng.single_copy_off = 1;
}

/* A split copy's two parts are in: answer FIN; the receive is complete. */
static void split_check(int source, MPI_Request r)
{
    pb_eng_postbox_t fin = {.kind = PB_ENG_RNDV_FIN};

    if (!r->split_read || !r->split_written || r->split_stream)
        return;
    fin.u.ids.sreq = r->split_sreq;
    pb_eng_send_control(source, &fin);
    r->moved = r->total;
    recv_finish(r);
}

/* Receive @r matched an RTS from @source: read the data at once when the
 * sender offered it (@pid != 0) and the receive buffer is contiguous (from
 * POSTBOX_SPLIT_COPY bytes only its first half, while the sender writes
 * the second), else ask for it to be streamed. */
static void rendezvous_start(int source, uint64_t sreq, uint64_t addr, uint32_t pid, MPI_Request r)
{
    const pb_eng_path_ops_t *path = pid != 0 ? pb_eng_channel_path(source) : NULL;

    if (path != NULL && path->read_peer != NULL && !pb_eng.single_copy_off &&
        pb_eng_type_is_contiguous(r->type)) {
        size_t n = r->total < r->bytes ? r->total : r->bytes;
        void *dst = (char *)((uintptr_t)r->buf + (uintptr_t)pb_eng_type_true_lb(r->type));
        size_t half = (n / 2) & ~(size_t)4095;
        pb_eng_postbox_t fin = {.kind = PB_ENG_RNDV_FIN};
        int err;

        /* the sender writes a half only while it has no message of this
         * rank's to read: with both directions at once both cores copy
         * already, and it would come to its half only after its own */
        if (pb_eng_params.split_copy > 0 && n >= pb_eng_params.split_copy && half > 0 &&
            n - half <= UINT32_MAX && pb_eng.offered[source] == 0) {
            pb_eng_postbox_t ask = {
                .kind = PB_ENG_CTS_WRITE, .len = (uint32_t)(n - half), .total = half};

            ask.u.ids.sreq = sreq;
            ask.u.ids.rreq = (uint64_t)(uintptr_t)r;
            ask.u.ids.addr = (uint64_t)(uintptr_t)dst;
            ask.u.ids.pid = (uint32_t)getpid();
            r->split = 1;
            r->split_sreq = sreq;
            pb_eng.expect[source]++; /* its WRITE_DONE */
            pb_eng_send_control(source, &ask);
            pb_eng_send_push(source); /* the sender starts on its half now */
            err = path->read_peer(pid, addr, dst, half);
            if (err == PB_ENG_PEER_COPY_OK) {
                r->split_read = 1;
                split_check(source, r);
                return;
            }
            /* the whole message streams instead (it rewrites whatever the
             * sender's half put there with the same bytes) */
            refuse_single_copy(err);
            r->split_stream = 1;
            ask_for_data(source, sreq, r);
            return;
        }
        err = path->read_peer(pid, addr, dst, n);
        if (err == PB_ENG_PEER_COPY_OK) {
            fin.u.ids.sreq = sreq;
            pb_eng_send_control(source, &fin);
            /* the FIN, and this rank's own sends queued toward @source, go
             * now: the next postboxes may hold more copies, and the peer
             * would wait for them meanwhile */
            pb_eng_send_push(source);
            r->moved = r->total;
            recv_finish(r);
            return;
        }
        /* the sender streams it (it offered both) */
        refuse_single_copy(err);
    }
    ask_for_data(source, sreq, r);
}

static void ack_sync(int source, uint64_t sreq)
{
    pb_eng_postbox_t ack = {.kind = PB_ENG_SYNC_ACK};

    ack.u.ids.sreq = sreq;
    pb_eng_send_control(source, &ack);
}

static void on_envelope(int source, const pb_eng_postbox_t *pb)
{
    const void *data =
        pb->kind == PB_ENG_ENV_INLINE ? pb->u.data : pb_eng_channel_piece_data(source, pb);
    MPI_Request r;

    for (r = pb_eng.posted.head; r != NULL; r = r->next) {
        if (matches(r, source, pb->tag, pb->context))
            break;
    }
    if (r != NULL) {
        pb_eng_queue_remove(&pb_eng.posted, r);
        recv_matched(r, source, pb->tag, pb->total);
        if (pb->kind == PB_ENG_RTS) {
            rendezvous_start(source, pb->u.ids.sreq, pb->u.ids.addr, pb->u.ids.pid, r);
            return;
        }
        if (pb->flags & PB_ENG_FLAG_SYNC)
            ack_sync(source, pb->u.ids.sreq);
        if (pb->total == 0) {
            recv_finish(r);
            return;
        }
        if (pb->len < pb->total)
            pb_eng.streams[source] = (pb_eng_stream_t){.recv = r};
        recv_deliver(r, data, pb->len);
        return;
    }
    /* nobody waits for it yet */
    pb_eng_unexpected_t *u = calloc(1, sizeof(*u));

    if (u == NULL ||
        (pb->kind != PB_ENG_RTS && (u->data = malloc(pb->total ? pb->total : 1)) == NULL))
        pb_eng_fatal("out of memory for an unexpected message");
    u->source = source;
    u->seq = pb_eng_channel.in[source].consumed;
    u->tag = pb->tag;
    u->context = pb->context;
    u->total = pb->total;
    u->rts = pb->kind == PB_ENG_RTS;
    u->sync = (pb->flags & PB_ENG_FLAG_SYNC) != 0;
    u->sreq = pb->u.ids.sreq;
    if (u->rts) {
        u->addr = pb->u.ids.addr;
        u->pid = pb->u.ids.pid;
    } else {
        memcpy(u->data, data, pb->len);
        u->got = pb->len;
        if (u->got < u->total)
            pb_eng.streams[source] = (pb_eng_stream_t){.unexp = u};
    }
    *pb_eng.unexp_tail = u;
    pb_eng.unexp_tail = &u->next;
    pb_eng_stat_unexpected(1);
    pb_eng_unexpected_hook_t *hook =
        atomic_load_explicit(&pb_eng_unexpected_hook, memory_order_relaxed);
    if (PB_UNLIKELY(hook != NULL))
        hook(source, u->tag, u->total);
}

static void on_eager_more(int source, const pb_eng_postbox_t *pb)
{
    pb_eng_stream_t *s = &pb_eng.streams[source];
    const void *data = pb_eng_channel_piece_data(source, pb);

    if (s->recv != NULL) {
        MPI_Request r = s->recv;

        if (r->moved + pb->len >= r->total)
            *s = (pb_eng_stream_t){0};
        recv_deliver(r, data, pb->len);
    } else if (s->unexp != NULL) {
        pb_eng_unexpected_t *u = s->unexp;

        if (!u->cancelled)
            memcpy(u->data + u->got, data, pb->len);
        u->got += pb->len;
        if (u->got == u->total) {
            *s = (pb_eng_stream_t){0};
            if (u->cancelled) {
                free(u->data);
                free(u);
            }
        }
    }
}

/* The sender @source asks for its message whose envelope was its postbox
 * number @seq back: taken out of the unexpected queue if there (its
 * pieces still to come are dropped), else it was matched already. */
static void on_cancel(int source, uint64_t seq, uint64_t sreq)
{
    pb_eng_postbox_t answer = {.kind = PB_ENG_CANCEL_ANSWER};

    for (pb_eng_unexpected_t **p = &pb_eng.unexp; *p != NULL; p = &(*p)->next) {
        pb_eng_unexpected_t *u = *p;

        if (u->source != source || u->seq != seq)
            continue;
        *p = u->next;
        if (pb_eng.unexp_tail == &u->next)
            pb_eng.unexp_tail = p;
        pb_eng_stat_unexpected(0);
        if (pb_eng.streams[source].unexp == u) {
            u->cancelled = 1;
        } else {
            free(u->data);
            free(u);
        }
        answer.flags = 1;
        break;
    }
    answer.u.ids.sreq = sreq;
    pb_eng_send_control(source, &answer);
}

void pb_eng_recv_postbox(int source, const pb_eng_postbox_t *pb)
{
    MPI_Request r;

    switch (pb->kind) {
    case PB_ENG_ENV_INLINE:
    case PB_ENG_ENV_EAGER:
    case PB_ENG_RTS: on_envelope(source, pb); break;
    case PB_ENG_EAGER_MORE: on_eager_more(source, pb); break;
    case PB_ENG_CTS:
        r = (MPI_Request)(uintptr_t)pb->u.ids.sreq;
        r->rreq = pb->u.ids.rreq;
        pb_eng.expect[source]--;
        if (r->single)
            pb_eng.offered[source]--; /* the receiver asks for a stream instead */
        if (r->bytes == 0) {
            r->phase = SEND_SENT;
            pb_eng_send_check_done(r);
        } else {
            r->phase = SEND_RNDV_STREAM;
            pb_eng_queue_push(&pb_eng.sends[source], r);
        }
        break;
    case PB_ENG_RNDV_DATA:
        recv_deliver((MPI_Request)(uintptr_t)pb->u.ids.rreq, pb_eng_channel_piece_data(source, pb),
                     pb->len);
        break;
    case PB_ENG_SYNC_ACK:
        r = (MPI_Request)(uintptr_t)pb->u.ids.sreq;
        r->sync_acked = 1;
        pb_eng.expect[source]--;
        pb_eng_send_check_done(r);
        break;
    case PB_ENG_CTS_WRITE: { /* the receiver asks for part of a message, written */
        const pb_eng_path_ops_t *path;
        const char *from;
        pb_eng_postbox_t done = {.kind = PB_ENG_WRITE_DONE};

        r = (MPI_Request)(uintptr_t)pb->u.ids.sreq;
        from =
            (const char *)((uintptr_t)r->buf + (uintptr_t)pb_eng_type_true_lb(r->type) + pb->total);
        path = pb_eng_channel_path(source);
        done.flags = path == NULL || path->write_peer == NULL ||
                     path->write_peer(pb->u.ids.pid, pb->u.ids.addr + pb->total, from, pb->len) !=
                         PB_ENG_PEER_COPY_OK;
        done.u.ids.rreq = pb->u.ids.rreq;
        pb_eng_send_control(source, &done);
        break;
    }
    case PB_ENG_WRITE_DONE: /* the sender wrote its part (or could not) */
        r = (MPI_Request)(uintptr_t)pb->u.ids.rreq;
        pb_eng.expect[source]--;
        if (pb->flags != 0 && !r->split_stream) {
            r->split_stream = 1;
            ask_for_data(source, r->split_sreq, r);
        } else if (pb->flags == 0) {
            r->split_written = 1;
            split_check(source, r);
        }
        break;
    case PB_ENG_CANCEL: on_cancel(source, pb->u.ids.addr, pb->u.ids.sreq); break;
    case PB_ENG_CANCEL_ANSWER:
        pb_eng_send_cancel_answer(source, (MPI_Request)(uintptr_t)pb->u.ids.sreq, pb->flags != 0);
        break;
    case PB_ENG_RNDV_FIN: /* the receiver read the data itself */
        r = (MPI_Request)(uintptr_t)pb->u.ids.sreq;
        pb_eng.expect[source]--;
        pb_eng.offered[source]--;
        r->phase = SEND_SENT;
        pb_eng_send_check_done(r);
        break;
    default: break;
    }
}

/* ---- starting receives ---------------------------------------------------------- */

/* Receive @r takes the unexpected message @u, out of the queue already
 * (and frees it). */
static PB_ALWAYS_INLINE void take_unexpected(MPI_Request r, pb_eng_unexpected_t *u)
{
    recv_matched(r, u->source, u->tag, u->total);
    if (u->rts) {
        rendezvous_start(u->source, u->sreq, u->addr, u->pid, r);
        pb_eng_send_push(u->source);
    } else {
        if (u->sync) {
            ack_sync(u->source, u->sreq);
            pb_eng_send_push(u->source);
        }
        if (pb_eng.streams[u->source].unexp == u)
            pb_eng.streams[u->source] = (pb_eng_stream_t){.recv = r};
        if (u->total == 0)
            recv_finish(r);
        else if (u->got > 0)
            recv_deliver(r, u->data, u->got);
    }
    free(u->data);
    free(u);
}

/* Unlink the unexpected message at *@p from the queue. */
static pb_eng_unexpected_t *unexpected_unlink(pb_eng_unexpected_t **p)
{
    pb_eng_unexpected_t *u = *p;

    *p = u->next;
    if (pb_eng.unexp_tail == &u->next)
        pb_eng.unexp_tail = p;
    u->next = NULL;
    pb_eng_stat_unexpected(0);
    return u;
}

static PB_ALWAYS_INLINE void recv_begin(MPI_Request r)
{
    pb_eng_progress();
    for (pb_eng_unexpected_t **p = &pb_eng.unexp; *p != NULL; p = &(*p)->next) {
        if (matches(r, (*p)->source, (*p)->tag, (*p)->context)) {
            take_unexpected(r, unexpected_unlink(p));
            return;
        }
    }
    pb_eng_queue_push(&pb_eng.posted, r);
}

void pb_eng_recv_begin(MPI_Request r)
{
    recv_begin(r);
}

int pb_eng_recv_start(void *buf, MPI_Count count, pb_datatype_t *type, int world, int tag,
                      uint32_t context, MPI_Request *request_p)
{
    MPI_Request r;

    if (world == PB_ENG_PROC_NULL) { /* @type may be NULL (MPI_DATATYPE_NULL, no data) */
        r = pb_eng_request_new(PB_ENG_REQ_RECV, buf, 0, (pb_datatype_t *)pb_eng.byte_type, world,
                               tag, context);
        if (r == NULL)
            return MPI_ERR_NO_MEM;
        *request_p = r;
        r->status.MPI_SOURCE = MPI_PROC_NULL;
        r->status.MPI_TAG = MPI_ANY_TAG;
        recv_finish(r);
        return MPI_SUCCESS;
    }
    r = pb_eng_request_new(PB_ENG_REQ_RECV, buf, count, type, world, tag, context);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    *request_p = r;
    recv_begin(r);
    return MPI_SUCCESS;
}

void pb_eng_recv_cancel(MPI_Request r)
{
    if (r->kind != PB_ENG_REQ_RECV || r->complete || !pb_eng_queue_remove(&pb_eng.posted, r))
        return;
    r->cancelled = 1;
    r->status.MPI_SOURCE = MPI_ANY_SOURCE;
    r->status.MPI_TAG = MPI_ANY_TAG;
    r->status.MPI_ERROR = MPI_SUCCESS;
    pb_mpi_status_set_bytes(&r->status, 0);
    pb_eng_request_complete(r);
}

/* ---- probing ------------------------------------------------------------------- */

typedef struct {
    uint32_t context;
    int world, tag;
    pb_eng_unexpected_t **found; /* the link to it in the queue */
} probe_t;

/* The earliest unexpected message @arg (a probe_t) looks for. */
static int probe_done(void *arg)
{
    probe_t *p = arg;

    for (p->found = &pb_eng.unexp; *p->found != NULL; p->found = &(*p->found)->next) {
        pb_eng_unexpected_t *u = *p->found;

        if (u->context == p->context && (p->world < 0 || u->source == p->world) &&
            (p->tag == MPI_ANY_TAG || u->tag == p->tag))
            return 1;
    }
    return 0;
}

/* The probe of pb_eng_recv_probe: the link to the message found, or
 * NULL. */
static pb_eng_unexpected_t **probe(uint32_t context, int world, int tag, int wait)
{
    probe_t p = {context, world, tag, NULL};

    pb_eng.probing = 1;
    pb_eng.probe_source = world < 0 ? -1 : world;
    if (wait)
        pb_eng_wait_until(probe_done, &p);
    else
        pb_eng_progress();
    pb_eng.probing = 0;
    return probe_done(&p) ? p.found : NULL;
}

int pb_eng_recv_probe(uint32_t context, int world, int tag, int wait, pb_eng_probe_t *found_p)
{
    pb_eng_unexpected_t **link = probe(context, world, tag, wait);

    if (link == NULL)
        return 0;
    *found_p = (pb_eng_probe_t){(*link)->source, (*link)->tag, (*link)->total};
    return 1;
}

int pb_eng_recv_mprobe(uint32_t context, int world, int tag, int wait, pb_eng_probe_t *found_p,
                       pb_eng_message_t **message_p)
{
    pb_eng_unexpected_t **link = probe(context, world, tag, wait);

    if (link == NULL)
        return 0;
    *found_p = (pb_eng_probe_t){(*link)->source, (*link)->tag, (*link)->total};
    *message_p = unexpected_unlink(link);
    return 1;
}

int pb_eng_recv_message(void *buf, MPI_Count count, pb_datatype_t *type, pb_eng_message_t *message,
                        MPI_Request *request_p)
{
    MPI_Request r = pb_eng_request_new(PB_ENG_REQ_RECV, buf, count, type, message->source,
                                       message->tag, message->context);

    if (r == NULL)
        return MPI_ERR_NO_MEM;
    *request_p = r;
    take_unexpected(r, message);
    return MPI_SUCCESS;
}
