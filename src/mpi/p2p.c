/*
 * Point-to-point: requests, matching, the protocols, progress, waiting
 * (p2p.h; docs/mpi.md, "The engine").
 *
 * Protocols, as Sun MPI over RSM (seed 001 §3), on the channels of
 * channel.c:
 *
 *   inline     a message of at most 32 bytes travels inside its postbox
 *   eager      the envelope postbox carries the first piece of the data in
 *              pool blocks; PBX_EAGER_MORE postboxes carry the rest, in
 *              order, before the sender starts another envelope to that rank
 *   rendezvous from POSTBOX_RENDEZVOUS bytes: an RTS postbox; the receiver
 *              answers CTS when a receive matches, and the sender then streams
 *              PBX_RNDV_DATA pieces naming the receiver's request
 *   synchronous  an eager synchronous send asks for PBX_SYNC_ACK on match
 *   single copy  on the node, a contiguous message of POSTBOX_SINGLE_COPY
 *              bytes or more sends an RTS with its address; the receiver
 *              reads it with process_vm_readv straight into the receive
 *              buffer and answers PBX_RNDV_FIN (if the kernel refuses, or
 *              the receive buffer is not contiguous, it answers CTS and the
 *              data streams through the pool instead)
 *   split copy   from POSTBOX_SPLIT_COPY bytes the receiver first sends
 *              PBX_CTS_WRITE asking the sender to write the second half into
 *              the receive buffer (process_vm_writev), reads the first half
 *              itself meanwhile, and answers RNDV_FIN once the sender's
 *              PBX_WRITE_DONE came: two cores copy at once.  If either copy
 *              fails the whole message streams through the pool (CTS).
 *
 * Matching follows the standard: a receive takes the earliest unexpected
 * message that matches, an arriving envelope the earliest posted receive
 * that matches, and a channel is handled in order, so messages between a
 * pair on one communicator and tag never overtake.
 *
 * Waiting (wait_until): poll, spinning POSTBOX_SPIN times, then yield the
 * CPU POSTBOX_YIELDS times, then sleep on the doorbell's RSM signal until a
 * peer writes (peers on the node signal only a rank that announced it
 * sleeps; tcp peers always signal), so an idle rank holds no core.
 */
#include "mpi/p2p.h"

#include <postbox/job.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mpi/channel.h"
#include "mpi/handle.h"
#include "util/log.h"

/* a sleeping rank re-checks at least this often (lost-wake-up insurance) */
#define SLEEP_CAP_MS 100

enum {
    REQ_SEND = 1,
    REQ_RECV
};
enum {
    MODE_STANDARD,
    MODE_SYNC,
    MODE_READY,
    MODE_BUFFERED
};
enum {
    SEND_ENVELOPE,
    SEND_EAGER_STREAM,
    SEND_WAIT_CTS,
    SEND_RNDV_STREAM,
    SEND_SENT
};

struct MPI_ABI_Request {
    int kind, mode;
    MPI_Request next; /* in a queue: posted receives, a destination's sends */
    int complete;     /* status is final */
    int freed;        /* MPI_Request_free'd or library-owned: release when complete */
    int cancelled;
    pb_comm_t *comm;
    pb_datatype_t *type; /* retained while the request lives */
    void *buf;
    MPI_Count count;
    int peer; /* world rank; -1: MPI_ANY_SOURCE */
    int tag;
    uint32_t context;
    size_t bytes; /* send: the message; receive: room in the buffer */
    size_t moved; /* bytes written (send) or received (receive) */
    /* send */
    int phase, rndv, sync_acked;
    int single; /* rendezvous offered for a single copy */
    uint64_t rreq;
    void *copy; /* buffered mode: the message's copy */
    /* receive */
    size_t total;  /* the matched message's bytes */
    int expecting; /* rendezvous data asked for (counted in p2p.expect) */
    /* a split single copy: the receiver reads the first part, the sender
     * writes the rest; FIN goes once both are done */
    int split, split_read, split_written, split_stream;
    uint64_t split_sreq;
    MPI_Status status;
};

/* control postboxes waiting for room toward a rank */
typedef struct control {
    struct control *next;
    pbx_postbox_t pb;
} control_t;

/* a message that arrived before its receive was posted */
typedef struct unexpected {
    struct unexpected *next;
    int source, tag;
    uint32_t context;
    size_t total, got;
    char *data;    /* eager: the bytes so far */
    int rts, sync; /* rendezvous; synchronous eager */
    uint64_t sreq;
    uint64_t addr; /* single copy offered: the data in the sender */
    uint32_t pid;
} unexpected_t;

/* where the pieces of the eager message a channel is in the middle of go */
typedef struct {
    MPI_Request recv;
    unexpected_t *unexp;
} stream_t;

typedef struct {
    MPI_Request head, tail;
} queue_t;

static struct {
    int size;
    queue_t posted; /* receives waiting for a message */
    unexpected_t *unexp, **unexp_tail;
    queue_t *sends;       /* per destination: sends still writing postboxes */
    control_t **controls; /* per destination: control postboxes to write */
    stream_t *streams;    /* per source */
    int *expect;          /* per peer: answers or data still to come from it */
    int probing;          /* a probe waits: probe_source is polled too */
    int probe_source;     /* world rank, or -1 for any */
    int single_copy_off;  /* the kernel refused process_vm_readv once */
    long sends_open;      /* sends started and not complete, freed ones too */
    char *bsend_buf;      /* MPI_Buffer_attach */
    size_t bsend_size, bsend_used;
    MPI_Request spare; /* released requests kept for reuse (list by next) */
    int spares;
} p2p;

/* released requests kept for the next ones: a calloc and a free less per
 * message */
#define REQUEST_SPARES_MAX 64

static const pb_datatype_t *byte_type;

/* ---- queues -------------------------------------------------------------------- */

static void queue_push(queue_t *q, MPI_Request r)
{
    r->next = NULL;
    if (q->tail != NULL)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
}

static void queue_remove(queue_t *q, MPI_Request r)
{
    MPI_Request prev = NULL;

    for (MPI_Request it = q->head; it != NULL; prev = it, it = it->next) {
        if (it != r)
            continue;
        if (prev != NULL)
            prev->next = it->next;
        else
            q->head = it->next;
        if (q->tail == it)
            q->tail = prev;
        it->next = NULL;
        return;
    }
}

static void control_push(int dest, const pbx_postbox_t *pb)
{
    control_t *c = malloc(sizeof(*c)), **p;

    if (c == NULL)
        pbx_fatal("out of memory for a control message");
    c->next = NULL;
    c->pb = *pb;
    for (p = &p2p.controls[dest]; *p != NULL; p = &(*p)->next)
        ;
    *p = c;
}

/* ---- requests ------------------------------------------------------------------ */

static MPI_Request request_new(int kind, pb_comm_t *comm, const void *buf, MPI_Count count,
                               MPI_Datatype type, int peer, int tag, int coll)
{
    MPI_Request r = p2p.spare;

    if (r != NULL) {
        p2p.spare = r->next;
        p2p.spares--;
        memset(r, 0, sizeof(*r));
        pb_mpi_handle_revive(PB_MPI_HANDLE_REQUEST, r);
    } else {
        r = pb_mpi_handle_new(PB_MPI_HANDLE_REQUEST, sizeof(*r));
        if (r == NULL)
            return NULL;
    }
    r->kind = kind;
    r->comm = comm;
    pb_mpi_comm_retain(comm); /* MPI_Comm_free may come before completion */
    r->buf = (void *)buf;
    r->count = count;
    r->type = pb_mpi_datatype(type);
    pb_eng_type_retain(r->type); /* MPI_Type_free may come before completion */
    r->peer = peer;
    r->tag = tag;
    r->context = comm->context + (uint32_t)coll;
    r->bytes = (size_t)count * pb_eng_type_size(r->type);
    return r;
}

static void request_release(MPI_Request r)
{
    if (r->copy != NULL) {
        free(r->copy);
        p2p.bsend_used -= r->bytes + MPI_BSEND_OVERHEAD;
    }
    pb_mpi_comm_release(r->comm);
    pb_eng_type_release(r->type);
    pb_mpi_handle_retire(PB_MPI_HANDLE_REQUEST, r);
    if (p2p.spares < REQUEST_SPARES_MAX) {
        r->next = p2p.spare;
        p2p.spare = r;
        p2p.spares++;
    } else {
        pb_mpi_handle_delete(PB_MPI_HANDLE_REQUEST, r);
    }
}

static void complete(MPI_Request r)
{
    if (r->kind == REQ_SEND && r->peer >= 0)
        p2p.sends_open--;
    r->complete = 1;
    if (r->freed)
        request_release(r);
}

static void send_check_done(MPI_Request r)
{
    if (r->phase == SEND_SENT && (r->mode != MODE_SYNC || r->rndv || r->sync_acked)) {
        r->status.MPI_ERROR = MPI_SUCCESS;
        complete(r);
    }
}

/* ---- the receiving side --------------------------------------------------------- */

static int matches(MPI_Request r, int source, int tag, uint32_t context)
{
    return r->context == context && (r->peer < 0 || r->peer == source) &&
           (r->tag == MPI_ANY_TAG || r->tag == tag);
}

static void recv_finish(MPI_Request r)
{
    if (r->expecting) {
        r->expecting = 0;
        p2p.expect[r->peer]--;
    }
    r->status.MPI_ERROR = r->total > r->bytes ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
    pb_mpi_status_set_bytes(&r->status, r->total > r->bytes ? r->bytes : r->total);
    complete(r);
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
    r->status.MPI_SOURCE = r->comm->local[source];
    r->status.MPI_TAG = tag;
    r->peer = source;
}

static void ask_for_data(int source, uint64_t sreq, MPI_Request r)
{
    pbx_postbox_t cts = {.kind = PBX_CTS};

    if (r->total > 0) {
        r->expecting = 1; /* its RNDV_DATA */
        p2p.expect[source]++;
    }
    cts.u.ids.sreq = sreq;
    cts.u.ids.rreq = (uint64_t)(uintptr_t)r;
    control_push(source, &cts);
}

/* Read @len bytes at @addr of process @pid into @dst.  @return 0, or an
 * errno value (EPERM, ENOSYS: the kernel refuses single copy). */
static int read_remote(pid_t pid, uint64_t addr, void *dst, size_t len)
{
    while (len > 0) {
        struct iovec local = {dst, len}, remote = {(void *)(uintptr_t)addr, len};
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

        if (n <= 0)
            return n < 0 ? errno : EIO;
        dst = (char *)dst + n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

/* Write @len bytes of @src to @addr of process @pid.  @return 0 or an
 * errno value. */
static int write_remote(pid_t pid, uint64_t addr, const void *src, size_t len)
{
    while (len > 0) {
        struct iovec local = {(void *)(uintptr_t)src, len};
        struct iovec remote = {(void *)(uintptr_t)addr, len};
        ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);

        if (n <= 0)
            return n < 0 ? errno : EIO;
        src = (const char *)src + n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

/* A refusal of the kernel (not a bad address) holds for every later
 * message too: stop offering single copy. */
static void refuse_single_copy(int err)
{
    if (err == EPERM || err == ENOSYS || err == EACCES) {
        p2p.single_copy_off = 1;
        pb_warn("process_vm_readv refused (%s): on-node messages move through the pool "
                "(two copies) from now on",
                strerror(err));
    }
}

static int push_sends(int dest);

/* A split copy's two parts are in: answer FIN; the receive is complete. */
static void split_check(int source, MPI_Request r)
{
    pbx_postbox_t fin = {.kind = PBX_RNDV_FIN};

    if (!r->split_read || !r->split_written || r->split_stream)
        return;
    fin.u.ids.sreq = r->split_sreq;
    control_push(source, &fin);
    r->moved = r->total;
    recv_finish(r);
}

/* Receive @r matched an RTS from @source: read the data at once when the
 * sender offered it (@pid != 0) and the receive buffer is contiguous (from
 * POSTBOX_SPLIT_COPY bytes only its first half, while the sender writes
 * the second), else ask for it to be streamed. */
static void rendezvous_start(int source, uint64_t sreq, uint64_t addr, uint32_t pid, MPI_Request r)
{
    if (pid != 0 && !p2p.single_copy_off && pb_eng_type_is_contiguous(r->type)) {
        size_t n = r->total < r->bytes ? r->total : r->bytes;
        void *dst = (char *)((uintptr_t)r->buf + (uintptr_t)pb_eng_type_true_lb(r->type));
        size_t half = (n / 2) & ~(size_t)4095;
        pbx_postbox_t fin = {.kind = PBX_RNDV_FIN};
        int err;

        if (pbx_params.split_copy > 0 && n >= pbx_params.split_copy && half > 0 &&
            n - half <= UINT32_MAX) {
            pbx_postbox_t ask = {.kind = PBX_CTS_WRITE, .len = (uint32_t)(n - half), .total = half};

            ask.u.ids.sreq = sreq;
            ask.u.ids.rreq = (uint64_t)(uintptr_t)r;
            ask.u.ids.addr = (uint64_t)(uintptr_t)dst;
            ask.u.ids.pid = (uint32_t)getpid();
            r->split = 1;
            r->split_sreq = sreq;
            p2p.expect[source]++; /* its WRITE_DONE */
            control_push(source, &ask);
            push_sends(source); /* the sender starts on its half now */
            err = read_remote((pid_t)pid, addr, dst, half);
            if (err == 0) {
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
        err = read_remote((pid_t)pid, addr, dst, n);
        if (err == 0) {
            fin.u.ids.sreq = sreq;
            control_push(source, &fin);
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
    pbx_postbox_t ack = {.kind = PBX_SYNC_ACK};

    ack.u.ids.sreq = sreq;
    control_push(source, &ack);
}

static void on_envelope(int source, const pbx_postbox_t *pb)
{
    const void *data = pb->kind == PBX_ENV_INLINE ? pb->u.data : pbx_piece_data(source, pb);
    MPI_Request r;

    for (r = p2p.posted.head; r != NULL; r = r->next) {
        if (matches(r, source, pb->tag, pb->context))
            break;
    }
    if (r != NULL) {
        queue_remove(&p2p.posted, r);
        recv_matched(r, source, pb->tag, pb->total);
        if (pb->kind == PBX_RTS) {
            rendezvous_start(source, pb->u.ids.sreq, pb->u.ids.addr, pb->u.ids.pid, r);
            return;
        }
        if (pb->flags & PBX_FLAG_SYNC)
            ack_sync(source, pb->u.ids.sreq);
        if (pb->total == 0) {
            recv_finish(r);
            return;
        }
        if (pb->len < pb->total)
            p2p.streams[source] = (stream_t){.recv = r};
        recv_deliver(r, data, pb->len);
        return;
    }
    /* nobody waits for it yet */
    unexpected_t *u = calloc(1, sizeof(*u));

    if (u == NULL || (pb->kind != PBX_RTS && (u->data = malloc(pb->total ? pb->total : 1)) == NULL))
        pbx_fatal("out of memory for an unexpected message");
    u->source = source;
    u->tag = pb->tag;
    u->context = pb->context;
    u->total = pb->total;
    u->rts = pb->kind == PBX_RTS;
    u->sync = (pb->flags & PBX_FLAG_SYNC) != 0;
    u->sreq = pb->u.ids.sreq;
    if (u->rts) {
        u->addr = pb->u.ids.addr;
        u->pid = pb->u.ids.pid;
    } else {
        memcpy(u->data, data, pb->len);
        u->got = pb->len;
        if (u->got < u->total)
            p2p.streams[source] = (stream_t){.unexp = u};
    }
    *p2p.unexp_tail = u;
    p2p.unexp_tail = &u->next;
}

static void on_eager_more(int source, const pbx_postbox_t *pb)
{
    stream_t *s = &p2p.streams[source];
    const void *data = pbx_piece_data(source, pb);

    if (s->recv != NULL) {
        MPI_Request r = s->recv;

        if (r->moved + pb->len >= r->total)
            *s = (stream_t){0};
        recv_deliver(r, data, pb->len);
    } else if (s->unexp != NULL) {
        unexpected_t *u = s->unexp;

        memcpy(u->data + u->got, data, pb->len);
        u->got += pb->len;
        if (u->got == u->total)
            *s = (stream_t){0};
    }
}

static void on_postbox(int source, const pbx_postbox_t *pb)
{
    MPI_Request r;

    switch (pb->kind) {
    case PBX_ENV_INLINE:
    case PBX_ENV_EAGER:
    case PBX_RTS: on_envelope(source, pb); break;
    case PBX_EAGER_MORE: on_eager_more(source, pb); break;
    case PBX_CTS:
        r = (MPI_Request)(uintptr_t)pb->u.ids.sreq;
        r->rreq = pb->u.ids.rreq;
        p2p.expect[source]--;
        if (r->bytes == 0) {
            r->phase = SEND_SENT;
            send_check_done(r);
        } else {
            r->phase = SEND_RNDV_STREAM;
            queue_push(&p2p.sends[source], r);
        }
        break;
    case PBX_RNDV_DATA:
        recv_deliver((MPI_Request)(uintptr_t)pb->u.ids.rreq, pbx_piece_data(source, pb), pb->len);
        break;
    case PBX_SYNC_ACK:
        r = (MPI_Request)(uintptr_t)pb->u.ids.sreq;
        r->sync_acked = 1;
        p2p.expect[source]--;
        send_check_done(r);
        break;
    case PBX_CTS_WRITE: { /* the receiver asks for part of a message, written */
        const char *from;
        pbx_postbox_t done = {.kind = PBX_WRITE_DONE};

        r = (MPI_Request)(uintptr_t)pb->u.ids.sreq;
        from =
            (const char *)((uintptr_t)r->buf + (uintptr_t)pb_eng_type_true_lb(r->type) + pb->total);
        done.flags =
            write_remote((pid_t)pb->u.ids.pid, pb->u.ids.addr + pb->total, from, pb->len) != 0;
        done.u.ids.rreq = pb->u.ids.rreq;
        control_push(source, &done);
        break;
    }
    case PBX_WRITE_DONE: /* the sender wrote its part (or could not) */
        r = (MPI_Request)(uintptr_t)pb->u.ids.rreq;
        p2p.expect[source]--;
        if (pb->flags != 0 && !r->split_stream) {
            r->split_stream = 1;
            ask_for_data(source, r->split_sreq, r);
        } else if (pb->flags == 0) {
            r->split_written = 1;
            split_check(source, r);
        }
        break;
    case PBX_RNDV_FIN: /* the receiver read the data itself */
        r = (MPI_Request)(uintptr_t)pb->u.ids.sreq;
        p2p.expect[source]--;
        r->phase = SEND_SENT;
        send_check_done(r);
        break;
    default: break;
    }
}

/* ---- the sending side ----------------------------------------------------------- */

/* Write what can be written toward @dest now.  @return how many postboxes. */
static int push_sends(int dest)
{
    int posted = 0, room_ok;

    while ((room_ok = pbx_postbox_free(dest)) == 1) {
        control_t *c = p2p.controls[dest];
        MPI_Request r = p2p.sends[dest].head;
        pbx_postbox_t pb = {0};
        pbx_src_t src;
        size_t room;

        if (c != NULL) {
            if (pbx_post(dest, &c->pb, NULL) != MPI_SUCCESS)
                pbx_fatal("the channel to a rank broke");
            p2p.controls[dest] = c->next;
            free(c);
            posted++;
            continue;
        }
        if (r == NULL)
            break;
        src = (pbx_src_t){r->copy != NULL ? r->copy : r->buf,
                          r->copy != NULL ? (MPI_Count)r->bytes : r->count,
                          r->copy != NULL ? byte_type : r->type, r->moved};
        pb.tag = r->tag;
        pb.context = r->context;
        pb.total = r->bytes;
        if (r->phase == SEND_ENVELOPE && r->rndv) {
            pb.kind = PBX_RTS;
            pb.u.ids.sreq = (uint64_t)(uintptr_t)r;
            if (r->single) {
                pb.u.ids.addr =
                    (uint64_t)((uintptr_t)r->buf + (uintptr_t)pb_eng_type_true_lb(r->type));
                pb.u.ids.pid = (uint32_t)getpid();
            }
            if (pbx_post(dest, &pb, &src) != MPI_SUCCESS)
                pbx_fatal("the channel to a rank broke");
            p2p.expect[dest]++; /* its CTS */
            queue_remove(&p2p.sends[dest], r);
            r->phase = SEND_WAIT_CTS;
            posted++;
            continue;
        }
        if (r->phase == SEND_ENVELOPE && r->bytes <= PBX_INLINE_MAX && r->mode != MODE_SYNC) {
            pb.kind = PBX_ENV_INLINE;
            pb.len = (uint32_t)r->bytes;
            room = r->bytes;
        } else {
            room = pbx_block_room(dest, r->bytes - r->moved);
            if (room == 0 && r->bytes > 0)
                break; /* no block free: wait for the receiver's acknowledgement */
            pb.len = (uint32_t)room;
            if (r->phase == SEND_ENVELOPE) {
                pb.kind = PBX_ENV_EAGER;
                pb.flags = r->mode == MODE_SYNC ? PBX_FLAG_SYNC : 0;
                if (r->mode == MODE_SYNC)
                    p2p.expect[dest]++; /* its SYNC_ACK */
                pb.u.ids.sreq = (uint64_t)(uintptr_t)r;
            } else if (r->phase == SEND_EAGER_STREAM) {
                pb.kind = PBX_EAGER_MORE;
            } else {
                pb.kind = PBX_RNDV_DATA;
                pb.u.ids.rreq = r->rreq;
            }
        }
        if (pbx_post(dest, &pb, &src) != MPI_SUCCESS)
            pbx_fatal("the channel to a rank broke");
        posted++;
        r->moved += room;
        if (r->phase == SEND_ENVELOPE)
            r->phase = SEND_EAGER_STREAM;
        if (r->moved == r->bytes) {
            queue_remove(&p2p.sends[dest], r);
            r->phase = SEND_SENT;
            send_check_done(r);
        }
    }
    if (room_ok < 0)
        pbx_fatal("cannot open a channel to a rank");
    return posted;
}

/* ---- progress ------------------------------------------------------------------ */

/* Sources to poll under directed polling (POSTBOX_POLLALL=0): the peers of
 * posted receives (all of them for MPI_ANY_SOURCE), of sends waiting for a
 * CTS or a synchronous acknowledgement, of rendezvous data and eager
 * streams under way.  Others' messages wait in their rings (and their
 * senders, once the ring is full) until a receive names them. */
static int wanted(int source)
{
    if (p2p.expect[source] > 0 || p2p.streams[source].recv != NULL ||
        p2p.streams[source].unexp != NULL)
        return 1;
    if (p2p.probing && (p2p.probe_source < 0 || p2p.probe_source == source))
        return 1;
    for (MPI_Request r = p2p.posted.head; r != NULL; r = r->next) {
        if (r->peer < 0 || r->peer == source)
            return 1;
    }
    return 0;
}

/* One round: write what can be written, read what arrived.
 * @return the number of postboxes moved. */
static int progress(void)
{
    int moved = 0;

    for (int d = 0; d < p2p.size; d++) {
        if (p2p.controls[d] != NULL || p2p.sends[d].head != NULL)
            moved += push_sends(d);
    }
    /* this rank reads its own sockets: it holds the tcp transport's
     * progress claim (pbx_init), so no service thread does it meanwhile */
    pbx_poll_network();
    for (int s = 0; s < p2p.size; s++) {
        const pbx_postbox_t *pb;
        int budget = pbx_params.postboxes;

        if (!pbx_params.pollall && !wanted(s))
            continue;
        while (budget-- > 0 && (pb = pbx_peek(s)) != NULL) {
            on_postbox(s, pb);
            pbx_consume(s, pb);
            moved++;
        }
    }
    /* answers the reading queued (CTS, SYNC_ACK, RNDV_FIN) go out now, not
     * at the next call: the caller may return to compute for a long time */
    for (int d = 0; d < p2p.size; d++) {
        if (p2p.controls[d] != NULL)
            moved += push_sends(d);
    }
    return moved;
}

typedef int (*done_func_t)(void *arg);

/* Make progress until @done(@arg): spin, then yield, then sleep. */
static void wait_until(done_func_t done, void *arg)
{
    int spins = 0, yields = 0;

    while (!done(arg)) {
        if (progress() > 0) {
            spins = yields = 0;
            continue;
        }
        if (spins < pbx_params.spin) {
            spins++;
            pb_cpu_relax();
            continue;
        }
        if (yields < pbx_params.yields) {
            yields++;
            sched_yield();
            continue;
        }
        pbx_sleep_begin();
        if (progress() > 0 || done(arg)) {
            pbx_sleep_cancel();
            continue;
        }
        pbx_sleep(SLEEP_CAP_MS);
    }
}

static int request_done(void *arg)
{
    return ((MPI_Request)arg)->complete;
}

/* ---- starting sends and receives -------------------------------------------- */

static int start_send(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                      pb_comm_t *comm, int coll, int mode, MPI_Request *request)
{
    MPI_Request r;
    int world;

    if (dest == MPI_PROC_NULL) {
        r = request_new(REQ_SEND, comm, buf, 0, MPI_BYTE, -1, tag, coll);
        if (r == NULL)
            return MPI_ERR_NO_MEM;
        r->phase = SEND_SENT;
        r->status.MPI_SOURCE = MPI_PROC_NULL;
        complete(r);
        *request = r;
        return MPI_SUCCESS;
    }
    world = comm->world[dest];
    r = request_new(REQ_SEND, comm, buf, count, type, world, tag, coll);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    r->mode = mode;
    if (mode == MODE_BUFFERED) {
        if (p2p.bsend_used + r->bytes + MPI_BSEND_OVERHEAD > p2p.bsend_size) {
            request_release(r);
            return MPI_ERR_BUFFER;
        }
        r->copy = malloc(r->bytes ? r->bytes : 1);
        if (r->copy == NULL) {
            request_release(r);
            return MPI_ERR_NO_MEM;
        }
        p2p.bsend_used += r->bytes + MPI_BSEND_OVERHEAD;
        pb_eng_type_pack_range(buf, count, r->type, 0, r->copy, r->bytes);
    }
    /* on the node, a contiguous message from POSTBOX_SINGLE_COPY bytes is
     * offered for the receiver to read in one copy */
    r->single = mode != MODE_BUFFERED && pbx_params.single_copy > 0 && !p2p.single_copy_off &&
                r->bytes >= pbx_params.single_copy && world != postbox_job_rank() &&
                pbx_same_node(world) && pb_eng_type_is_contiguous(r->type);
    r->rndv = mode != MODE_BUFFERED && (r->single || r->bytes >= pbx_params.rendezvous);
    r->phase = SEND_ENVELOPE;
    p2p.sends_open++;
    queue_push(&p2p.sends[world], r);
    push_sends(world);
    *request = r;
    return MPI_SUCCESS;
}

static int start_recv(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                      pb_comm_t *comm, int coll, MPI_Request *request)
{
    MPI_Request r;
    int world = source == MPI_ANY_SOURCE ? -1 : source == MPI_PROC_NULL ? -2 : comm->world[source];

    r = request_new(REQ_RECV, comm, buf, count, type, world, tag, coll);
    if (r == NULL)
        return MPI_ERR_NO_MEM;
    *request = r;
    if (world == -2) {
        r->status.MPI_SOURCE = MPI_PROC_NULL;
        r->status.MPI_TAG = MPI_ANY_TAG;
        recv_finish(r);
        return MPI_SUCCESS;
    }
    progress();
    /* the earliest unexpected message that matches */
    for (unexpected_t **p = &p2p.unexp; *p != NULL; p = &(*p)->next) {
        unexpected_t *u = *p;

        if (!matches(r, u->source, u->tag, u->context))
            continue;
        *p = u->next;
        if (p2p.unexp_tail == &u->next)
            p2p.unexp_tail = p;
        recv_matched(r, u->source, u->tag, u->total);
        if (u->rts) {
            rendezvous_start(u->source, u->sreq, u->addr, u->pid, r);
            push_sends(u->source);
        } else {
            if (u->sync) {
                ack_sync(u->source, u->sreq);
                push_sends(u->source);
            }
            if (p2p.streams[u->source].unexp == u)
                p2p.streams[u->source] = (stream_t){.recv = r};
            if (u->total == 0)
                recv_finish(r);
            else if (u->got > 0)
                recv_deliver(r, u->data, u->got);
        }
        free(u->data);
        free(u);
        return MPI_SUCCESS;
    }
    queue_push(&p2p.posted, r);
    return MPI_SUCCESS;
}

int pb_mpi_isend_on(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                    pb_comm_t *comm, int coll, MPI_Request *request)
{
    return start_send(buf, count, type, dest, tag, comm, coll, MODE_STANDARD, request);
}

int pb_mpi_irecv_on(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                    pb_comm_t *comm, int coll, MPI_Request *request)
{
    return start_recv(buf, count, type, source, tag, comm, coll, request);
}

int pb_mpi_wait_requests(int count, MPI_Request requests[])
{
    int rc = MPI_SUCCESS;

    for (int i = 0; i < count; i++) {
        MPI_Request r = requests[i];

        if (r == MPI_REQUEST_NULL)
            continue;
        wait_until(request_done, r);
        if (rc == MPI_SUCCESS && r->kind == REQ_RECV)
            rc = r->status.MPI_ERROR;
        request_release(r);
        requests[i] = MPI_REQUEST_NULL;
    }
    return rc;
}

int pb_mpi_p2p_init(void)
{
    p2p.size = postbox_job_size();
    p2p.unexp_tail = &p2p.unexp;
    p2p.sends = calloc((size_t)p2p.size, sizeof(*p2p.sends));
    p2p.controls = calloc((size_t)p2p.size, sizeof(*p2p.controls));
    p2p.streams = calloc((size_t)p2p.size, sizeof(*p2p.streams));
    p2p.expect = calloc((size_t)p2p.size, sizeof(*p2p.expect));
    byte_type = pb_mpi_datatype(MPI_BYTE);
    if (p2p.sends == NULL || p2p.controls == NULL || p2p.streams == NULL || p2p.expect == NULL)
        return MPI_ERR_NO_MEM;
    return MPI_SUCCESS;
}

void pb_mpi_p2p_finalize(void)
{
    /* buffered sends and acknowledgements still owed go out first */
    for (;;) {
        int busy = p2p.sends_open > 0; /* freed rendezvous sends too */

        for (int d = 0; d < p2p.size; d++)
            busy |= p2p.controls[d] != NULL;
        if (!busy)
            break;
        if (progress() == 0)
            sched_yield();
    }
    while (p2p.unexp != NULL) {
        unexpected_t *u = p2p.unexp;

        p2p.unexp = u->next;
        free(u->data);
        free(u);
    }
    /* receives never matched (freed ones, or a program's left pending):
     * nothing can complete them any more */
    while (p2p.posted.head != NULL) {
        MPI_Request r = p2p.posted.head;

        queue_remove(&p2p.posted, r);
        request_release(r);
    }
    while (p2p.spare != NULL) {
        MPI_Request r = p2p.spare;

        p2p.spare = r->next;
        pb_mpi_handle_delete(PB_MPI_HANDLE_REQUEST, r);
    }
    free(p2p.sends);
    free(p2p.controls);
    free(p2p.streams);
    free(p2p.expect);
    memset(&p2p, 0, sizeof(p2p));
}

/* ---- argument checks ------------------------------------------------------------ */

static int check_buffer(const char *func, MPI_Comm comm, const void *buf, MPI_Count count,
                        MPI_Datatype type)
{
    int rc;

    if (count < 0)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "count %lld is negative", (long long)count);
    rc = pb_mpi_datatype_check(type);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the datatype is not a committed datatype");
    if (buf == NULL && count > 0 && pb_eng_type_size(pb_mpi_datatype(type)) > 0 &&
        pb_eng_type_true_lb(pb_mpi_datatype(type)) == 0)
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func, "buf is NULL with count %lld",
                            (long long)count);
    return MPI_SUCCESS;
}

static int check_send(const char *func, MPI_Comm comm, pb_comm_t **c_p, const void *buf,
                      MPI_Count count, MPI_Datatype type, int dest, int tag)
{
    int rc = pb_mpi_comm_check(comm, func, c_p);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = check_buffer(func, comm, buf, count, type);
    if (rc != MPI_SUCCESS)
        return rc;
    if (dest != MPI_PROC_NULL && (dest < 0 || dest >= (*c_p)->size))
        return pb_mpi_raise(comm, MPI_ERR_RANK, func, "rank %d is not in 0..%d", dest,
                            (*c_p)->size - 1);
    if (tag < 0)
        return pb_mpi_raise(comm, MPI_ERR_TAG, func, "tag %d is negative", tag);
    return MPI_SUCCESS;
}

static int check_recv(const char *func, MPI_Comm comm, pb_comm_t **c_p, const void *buf,
                      MPI_Count count, MPI_Datatype type, int source, int tag)
{
    int rc = pb_mpi_comm_check(comm, func, c_p);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = check_buffer(func, comm, buf, count, type);
    if (rc != MPI_SUCCESS)
        return rc;
    if (source != MPI_PROC_NULL && source != MPI_ANY_SOURCE &&
        (source < 0 || source >= (*c_p)->size))
        return pb_mpi_raise(comm, MPI_ERR_RANK, func, "rank %d is not in 0..%d", source,
                            (*c_p)->size - 1);
    if (tag < 0 && tag != MPI_ANY_TAG)
        return pb_mpi_raise(comm, MPI_ERR_TAG, func, "tag %d is negative", tag);
    return MPI_SUCCESS;
}

static void status_store(MPI_Status *status, MPI_Request r)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    if (r->kind == REQ_RECV) {
        *status = r->status;
    } else {
        status->MPI_SOURCE = MPI_ANY_SOURCE;
        status->MPI_TAG = MPI_ANY_TAG;
        status->MPI_ERROR = MPI_SUCCESS;
        pb_mpi_status_set_bytes(status, 0);
    }
    pb_mpi_status_set_cancelled(status, r->cancelled);
}

static void status_empty(MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->MPI_ERROR = MPI_SUCCESS;
    pb_mpi_status_set_bytes(status, 0);
    pb_mpi_status_set_cancelled(status, 0);
}

/* ---- the MPI calls: sends and receives ------------------------------------------ */

/* A blocking send of at most PBX_INLINE_MAX bytes, in standard or ready
 * mode, with nothing queued before it toward its destination, goes
 * straight into a free postbox: no request to make, queue, complete and
 * free.  @return 1 if it went, 0 if it must take the general path. */
static int send_inline_now(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                           pb_comm_t *comm, int mode)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    size_t bytes = (size_t)count * pb_eng_type_size(t);
    pbx_postbox_t pb = {0};
    pbx_src_t src = {buf, count, t, 0};
    int world;

    if ((mode != MODE_STANDARD && mode != MODE_READY) || dest == MPI_PROC_NULL ||
        bytes > PBX_INLINE_MAX)
        return 0;
    world = comm->world[dest];
    if (p2p.sends[world].head != NULL || p2p.controls[world] != NULL ||
        pbx_postbox_free(world) != 1)
        return 0;
    pb.kind = PBX_ENV_INLINE;
    pb.len = (uint32_t)bytes;
    pb.tag = tag;
    pb.context = comm->context;
    pb.total = bytes;
    if (pbx_post(world, &pb, &src) != MPI_SUCCESS)
        pbx_fatal("the channel to a rank broke");
    return 1;
}

static int send_blocking(const char *func, const void *buf, int count, MPI_Datatype type, int dest,
                         int tag, MPI_Comm comm, int mode)
{
    pb_comm_t *c;
    MPI_Request r;
    int rc = check_send(func, comm, &c, buf, count, type, dest, tag);

    if (rc != MPI_SUCCESS)
        return rc;
    if (send_inline_now(buf, count, type, dest, tag, c, mode))
        return MPI_SUCCESS;
    rc = start_send(buf, count, type, dest, tag, c, 0, mode, &r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func,
                            rc == MPI_ERR_BUFFER ? "the attached buffer has no room"
                                                 : "cannot start the send");
    if (mode == MODE_BUFFERED) {
        r->freed = 1; /* the copy goes out in the background */
        if (r->complete)
            request_release(r);
        return MPI_SUCCESS;
    }
    wait_until(request_done, r);
    request_release(r);
    return MPI_SUCCESS;
}

/* Send @count elements of @type at @buf to rank @dest of @comm with @tag
 * (standard mode: returns once the buffer may be reused).
 * @return MPI_SUCCESS; MPI_ERR_COMM, MPI_ERR_COUNT, MPI_ERR_TYPE,
 *         MPI_ERR_BUFFER, MPI_ERR_RANK, MPI_ERR_TAG (through the handler). */
PB_EXPORT int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm)
{
    return send_blocking("MPI_Send", buf, count, datatype, dest, tag, comm, MODE_STANDARD);
}
PB_MPI_WEAK_ALIAS(MPI_Send, PMPI_Send);

/* MPI_Send that returns only once the receive has matched.  Errors as MPI_Send. */
PB_EXPORT int PMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm)
{
    return send_blocking("MPI_Ssend", buf, count, datatype, dest, tag, comm, MODE_SYNC);
}
PB_MPI_WEAK_ALIAS(MPI_Ssend, PMPI_Ssend);

/* MPI_Send for when the receive is known to be posted (sent as standard).
 * Errors as MPI_Send. */
PB_EXPORT int PMPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm)
{
    return send_blocking("MPI_Rsend", buf, count, datatype, dest, tag, comm, MODE_READY);
}
PB_MPI_WEAK_ALIAS(MPI_Rsend, PMPI_Rsend);

/* MPI_Send through the buffer of MPI_Buffer_attach: returns at once.
 * Errors as MPI_Send, and MPI_ERR_BUFFER when the buffer has no room. */
PB_EXPORT int PMPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm)
{
    return send_blocking("MPI_Bsend", buf, count, datatype, dest, tag, comm, MODE_BUFFERED);
}
PB_MPI_WEAK_ALIAS(MPI_Bsend, PMPI_Bsend);

static int send_nonblocking(const char *func, const void *buf, int count, MPI_Datatype type,
                            int dest, int tag, MPI_Comm comm, int mode, MPI_Request *request)
{
    pb_comm_t *c;
    int rc = check_send(func, comm, &c, buf, count, type, dest, tag);

    if (rc != MPI_SUCCESS)
        return rc;
    if (request == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "request is NULL");
    if (mode == MODE_BUFFERED) {
        /* local: the data is copied now; the copy goes out through a
         * request of the library's, and the program's is complete */
        MPI_Request copy;

        rc = start_send(buf, count, type, dest, tag, c, 0, mode, &copy);
        if (rc == MPI_SUCCESS) {
            if (copy->complete)
                request_release(copy);
            else
                copy->freed = 1;
            *request = request_new(REQ_SEND, c, buf, 0, MPI_BYTE, -1, tag, 0);
            if (*request == NULL)
                rc = MPI_ERR_NO_MEM;
            else
                complete(*request);
        }
        if (rc != MPI_SUCCESS)
            return pb_mpi_raise(comm, rc, func,
                                rc == MPI_ERR_BUFFER ? "the attached buffer has no room"
                                                     : "cannot start the send");
        return MPI_SUCCESS;
    }
    rc = start_send(buf, count, type, dest, tag, c, 0, mode, request);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func,
                            rc == MPI_ERR_BUFFER ? "the attached buffer has no room"
                                                 : "cannot start the send");
    return MPI_SUCCESS;
}

/* Start a standard send; complete it with MPI_Wait/Test.  Errors as
 * MPI_Send, and MPI_ERR_ARG for a NULL request. */
PB_EXPORT int PMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm, MPI_Request *request)
{
    return send_nonblocking("MPI_Isend", buf, count, datatype, dest, tag, comm, MODE_STANDARD,
                            request);
}
PB_MPI_WEAK_ALIAS(MPI_Isend, PMPI_Isend);

/* Start a synchronous send.  Errors as MPI_Isend. */
PB_EXPORT int PMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request)
{
    return send_nonblocking("MPI_Issend", buf, count, datatype, dest, tag, comm, MODE_SYNC,
                            request);
}
PB_MPI_WEAK_ALIAS(MPI_Issend, PMPI_Issend);

/* Start a ready send.  Errors as MPI_Isend. */
PB_EXPORT int PMPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request)
{
    return send_nonblocking("MPI_Irsend", buf, count, datatype, dest, tag, comm, MODE_READY,
                            request);
}
PB_MPI_WEAK_ALIAS(MPI_Irsend, PMPI_Irsend);

/* Start a buffered send.  Errors as MPI_Bsend. */
PB_EXPORT int PMPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm, MPI_Request *request)
{
    return send_nonblocking("MPI_Ibsend", buf, count, datatype, dest, tag, comm, MODE_BUFFERED,
                            request);
}
PB_MPI_WEAK_ALIAS(MPI_Ibsend, PMPI_Ibsend);

/* Receive into @count elements of @type at @buf a message from @source
 * (or MPI_ANY_SOURCE) with @tag (or MPI_ANY_TAG) on @comm.
 * @return MPI_SUCCESS; MPI_ERR_TRUNCATE (a longer message: the buffer holds
 *         its start); MPI_ERR_COMM, _COUNT, _TYPE, _BUFFER, _RANK, _TAG. */
PB_EXPORT int PMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                        MPI_Comm comm, MPI_Status *status)
{
    pb_comm_t *c;
    MPI_Request r;
    int rc = check_recv("MPI_Recv", comm, &c, buf, count, datatype, source, tag);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = start_recv(buf, count, datatype, source, tag, c, 0, &r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Recv", "cannot start the receive");
    wait_until(request_done, r);
    status_store(status, r);
    rc = r->status.MPI_ERROR;
    request_release(r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Recv", "the message is longer than the buffer");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Recv, PMPI_Recv);

/* Start a receive; complete it with MPI_Wait/Test.  Errors as MPI_Recv's
 * argument checks, and MPI_ERR_ARG for a NULL request. */
PB_EXPORT int PMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Request *request)
{
    pb_comm_t *c;
    int rc = check_recv("MPI_Irecv", comm, &c, buf, count, datatype, source, tag);

    if (rc != MPI_SUCCESS)
        return rc;
    if (request == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Irecv", "request is NULL");
    rc = start_recv(buf, count, datatype, source, tag, c, 0, request);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Irecv", "cannot start the receive");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Irecv, PMPI_Irecv);

/* Send one message and receive another at once (no deadlock between two
 * ranks exchanging).  Errors as MPI_Send and MPI_Recv. */
PB_EXPORT int PMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                            int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    pb_comm_t *c;
    MPI_Request rr, sr;
    int rc = check_send("MPI_Sendrecv", comm, &c, sendbuf, sendcount, sendtype, dest, sendtag);

    if (rc == MPI_SUCCESS)
        rc = check_recv("MPI_Sendrecv", comm, &c, recvbuf, recvcount, recvtype, source, recvtag);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = start_recv(recvbuf, recvcount, recvtype, source, recvtag, c, 0, &rr);
    if (rc == MPI_SUCCESS)
        rc = start_send(sendbuf, sendcount, sendtype, dest, sendtag, c, 0, MODE_STANDARD, &sr);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Sendrecv", "cannot start the transfers");
    wait_until(request_done, sr);
    request_release(sr);
    wait_until(request_done, rr);
    status_store(status, rr);
    rc = rr->status.MPI_ERROR;
    request_release(rr);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Sendrecv", "the message is longer than the buffer");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Sendrecv, PMPI_Sendrecv);

/* MPI_Sendrecv with one buffer: what was in @buf is sent, what arrives
 * replaces it.  Errors as MPI_Sendrecv, and MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest,
                                    int sendtag, int source, int recvtag, MPI_Comm comm,
                                    MPI_Status *status)
{
    pb_comm_t *c;
    MPI_Request rr, sr;
    size_t bytes;
    void *copy;
    int rc = check_send("MPI_Sendrecv_replace", comm, &c, buf, count, datatype, dest, sendtag);

    if (rc == MPI_SUCCESS)
        rc = check_recv("MPI_Sendrecv_replace", comm, &c, buf, count, datatype, source, recvtag);
    if (rc != MPI_SUCCESS)
        return rc;
    bytes = (size_t)count * pb_eng_type_size(pb_mpi_datatype(datatype));
    copy = malloc(bytes ? bytes : 1);
    if (copy == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, "MPI_Sendrecv_replace", "out of memory");
    pb_eng_type_pack_range(buf, count, pb_mpi_datatype(datatype), 0, copy, bytes);
    /* the copy goes as bytes, whose number may not fit an int */
    rc = start_recv(buf, count, datatype, source, recvtag, c, 0, &rr);
    if (rc == MPI_SUCCESS)
        rc = start_send(copy, (MPI_Count)bytes, MPI_BYTE, dest, sendtag, c, 0, MODE_STANDARD, &sr);
    if (rc != MPI_SUCCESS) {
        free(copy);
        return pb_mpi_raise(comm, rc, "MPI_Sendrecv_replace", "cannot start the transfers");
    }
    wait_until(request_done, sr);
    request_release(sr);
    wait_until(request_done, rr);
    status_store(status, rr);
    rc = rr->status.MPI_ERROR;
    request_release(rr);
    free(copy);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Sendrecv_replace",
                            "the message is longer than the buffer");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Sendrecv_replace, PMPI_Sendrecv_replace);

/* ---- probing ---------------------------------------------------------------------- */

static unexpected_t *probe_match(pb_comm_t *c, int source, int tag)
{
    int world = source == MPI_ANY_SOURCE ? -1 : c->world[source];

    for (unexpected_t *u = p2p.unexp; u != NULL; u = u->next) {
        if (u->context == c->context && (world < 0 || u->source == world) &&
            (tag == MPI_ANY_TAG || u->tag == tag))
            return u;
    }
    return NULL;
}

static void probe_status(MPI_Status *status, pb_comm_t *c, unexpected_t *u)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = c->local[u->source];
    status->MPI_TAG = u->tag;
    status->MPI_ERROR = MPI_SUCCESS;
    pb_mpi_status_set_bytes(status, u->total);
    pb_mpi_status_set_cancelled(status, 0);
}

/* *@flag = whether a message from @source with @tag can be received now;
 * if so, @status describes it.  Errors as MPI_Recv's checks. */
PB_EXPORT int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    pb_comm_t *c;
    unexpected_t *u;
    int rc = check_recv("MPI_Iprobe", comm, &c, NULL, 0, MPI_BYTE, source, tag);

    if (rc != MPI_SUCCESS)
        return rc;
    if (flag == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Iprobe", "flag is NULL");
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        status_empty(status);
        if (status != MPI_STATUS_IGNORE)
            status->MPI_SOURCE = MPI_PROC_NULL;
        return MPI_SUCCESS;
    }
    p2p.probing = 1;
    p2p.probe_source = source == MPI_ANY_SOURCE ? -1 : c->world[source];
    progress();
    p2p.probing = 0;
    u = probe_match(c, source, tag);
    *flag = u != NULL;
    if (u != NULL)
        probe_status(status, c, u);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Iprobe, PMPI_Iprobe);

typedef struct {
    pb_comm_t *comm;
    int source, tag;
    unexpected_t *found;
} probe_t;

static int probe_done(void *arg)
{
    probe_t *p = arg;

    p->found = probe_match(p->comm, p->source, p->tag);
    return p->found != NULL;
}

/* Wait until a message from @source with @tag can be received; @status
 * describes it.  Errors as MPI_Recv's checks. */
PB_EXPORT int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    pb_comm_t *c;
    probe_t p;
    int rc = check_recv("MPI_Probe", comm, &c, NULL, 0, MPI_BYTE, source, tag);

    if (rc != MPI_SUCCESS)
        return rc;
    if (source == MPI_PROC_NULL) {
        status_empty(status);
        if (status != MPI_STATUS_IGNORE)
            status->MPI_SOURCE = MPI_PROC_NULL;
        return MPI_SUCCESS;
    }
    p = (probe_t){c, source, tag, NULL};
    p2p.probing = 1;
    p2p.probe_source = source == MPI_ANY_SOURCE ? -1 : c->world[source];
    wait_until(probe_done, &p);
    p2p.probing = 0;
    probe_status(status, c, p.found);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Probe, PMPI_Probe);

/* ---- completion ------------------------------------------------------------------ */

static int check_request_ptr(const char *func, MPI_Request *request)
{
    if (request == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "request is NULL");
    if (*request != MPI_REQUEST_NULL && !pb_mpi_handle_request_valid(*request))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func, "not a request");
    return MPI_SUCCESS;
}

/* Finish the complete request *@request: status out, freed, set to
 * MPI_REQUEST_NULL.  @return the request's error (MPI_ERR_TRUNCATE). */
static int finish(MPI_Request *request, MPI_Status *status)
{
    MPI_Request r = *request;
    int rc = r->kind == REQ_RECV ? r->status.MPI_ERROR : MPI_SUCCESS;

    status_store(status, r);
    request_release(r);
    *request = MPI_REQUEST_NULL;
    return rc;
}

/* Wait for *@request to complete, store its status, free it.
 * @return MPI_SUCCESS; MPI_ERR_REQUEST; MPI_ERR_TRUNCATE. */
PB_EXPORT int PMPI_Wait(MPI_Request *request, MPI_Status *status)
{
    MPI_Comm comm;
    int rc = check_request_ptr("MPI_Wait", request);

    if (rc != MPI_SUCCESS)
        return rc;
    if (*request == MPI_REQUEST_NULL) {
        status_empty(status);
        return MPI_SUCCESS;
    }
    comm = (*request)->comm->handle;
    wait_until(request_done, *request);
    rc = finish(request, status);
    return rc == MPI_SUCCESS
               ? rc
               : pb_mpi_raise(comm, rc, "MPI_Wait", "the message is longer than the buffer");
}
PB_MPI_WEAK_ALIAS(MPI_Wait, PMPI_Wait);

/* *@flag = whether *@request is complete; if so, as MPI_Wait.
 * @return MPI_SUCCESS; MPI_ERR_REQUEST; MPI_ERR_TRUNCATE; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    MPI_Comm comm;
    int rc = check_request_ptr("MPI_Test", request);

    if (rc != MPI_SUCCESS)
        return rc;
    if (flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Test", "flag is NULL");
    if (*request == MPI_REQUEST_NULL) {
        *flag = 1;
        status_empty(status);
        return MPI_SUCCESS;
    }
    if (!(*request)->complete)
        progress();
    *flag = (*request)->complete;
    if (!*flag)
        return MPI_SUCCESS;
    comm = (*request)->comm->handle;
    rc = finish(request, status);
    return rc == MPI_SUCCESS
               ? rc
               : pb_mpi_raise(comm, rc, "MPI_Test", "the message is longer than the buffer");
}
PB_MPI_WEAK_ALIAS(MPI_Test, PMPI_Test);

static int check_requests(const char *func, int count, MPI_Request requests[])
{
    if (count < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "count %d is negative", count);
    if (count > 0 && requests == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "requests is NULL");
    for (int i = 0; i < count; i++) {
        if (requests[i] != MPI_REQUEST_NULL && !pb_mpi_handle_request_valid(requests[i]))
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func,
                                "requests[%d] is not a request", i);
    }
    return MPI_SUCCESS;
}

typedef struct {
    int count;
    MPI_Request *requests;
} set_t;

static int all_done(void *arg)
{
    set_t *s = arg;

    for (int i = 0; i < s->count; i++) {
        if (s->requests[i] != MPI_REQUEST_NULL && !s->requests[i]->complete)
            return 0;
    }
    return 1;
}

static int any_done(void *arg)
{
    set_t *s = arg;
    int active = 0;

    for (int i = 0; i < s->count; i++) {
        if (s->requests[i] == MPI_REQUEST_NULL)
            continue;
        active = 1;
        if (s->requests[i]->complete)
            return 1;
    }
    return !active;
}

/* Finish every complete request of the set into @statuses (or @indices);
 * @return MPI_SUCCESS or MPI_ERR_IN_STATUS when one failed, and then in
 * *@comm_p the communicator of the first that failed (its handler). */
static int finish_all(int count, MPI_Request requests[], MPI_Status statuses[], int *outcount,
                      int indices[], MPI_Comm *comm_p)
{
    int rc = MPI_SUCCESS, done = 0;

    for (int i = 0; i < count; i++) {
        MPI_Status one;

        if (requests[i] == MPI_REQUEST_NULL || !requests[i]->complete) {
            if (outcount == NULL && statuses != MPI_STATUSES_IGNORE)
                status_empty(&statuses[i]);
            continue;
        }
        if (rc == MPI_SUCCESS && requests[i]->kind == REQ_RECV &&
            requests[i]->status.MPI_ERROR != MPI_SUCCESS)
            *comm_p = requests[i]->comm->handle;
        if (finish(&requests[i], &one) != MPI_SUCCESS)
            rc = MPI_ERR_IN_STATUS;
        if (indices != NULL)
            indices[done] = i;
        if (statuses != MPI_STATUSES_IGNORE)
            statuses[outcount != NULL ? done : i] = one;
        done++;
    }
    if (outcount != NULL)
        *outcount = done;
    return rc;
}

/* Wait for every request of @requests; statuses in @statuses.
 * @return MPI_SUCCESS; MPI_ERR_IN_STATUS (see each status's MPI_ERROR);
 *         MPI_ERR_REQUEST; MPI_ERR_COUNT; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    MPI_Comm failed = MPI_COMM_NULL;
    set_t s = {count, requests};
    int rc = check_requests("MPI_Waitall", count, requests);

    if (rc != MPI_SUCCESS)
        return rc;
    wait_until(all_done, &s);
    rc = finish_all(count, requests, statuses, NULL, NULL, &failed);
    return rc == MPI_SUCCESS
               ? rc
               : pb_mpi_raise(failed, rc, "MPI_Waitall", "a message was longer than its buffer");
}
PB_MPI_WEAK_ALIAS(MPI_Waitall, PMPI_Waitall);

/* *@flag = whether every request is complete; if so, as MPI_Waitall.
 * Errors as MPI_Waitall. */
PB_EXPORT int PMPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    MPI_Comm failed = MPI_COMM_NULL;
    set_t s = {count, requests};
    int rc = check_requests("MPI_Testall", count, requests);

    if (rc != MPI_SUCCESS)
        return rc;
    if (flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Testall", "flag is NULL");
    if (!all_done(&s))
        progress();
    *flag = all_done(&s);
    if (!*flag)
        return MPI_SUCCESS;
    rc = finish_all(count, requests, statuses, NULL, NULL, &failed);
    return rc == MPI_SUCCESS
               ? rc
               : pb_mpi_raise(failed, rc, "MPI_Testall", "a message was longer than its buffer");
}
PB_MPI_WEAK_ALIAS(MPI_Testall, PMPI_Testall);

static int first_complete(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    for (int i = 0; i < count; i++) {
        if (requests[i] != MPI_REQUEST_NULL && requests[i]->complete) {
            MPI_Comm comm = requests[i]->comm->handle;
            int rc = finish(&requests[i], status);

            *index = i;
            return rc == MPI_SUCCESS ? rc
                                     : pb_mpi_raise(comm, rc, "MPI_Waitany",
                                                    "the message is longer than the buffer");
        }
    }
    *index = MPI_UNDEFINED;
    status_empty(status);
    return MPI_SUCCESS;
}

/* Wait for one request of @requests (the first complete); *@index is its
 * index, or MPI_UNDEFINED when none is active.  Errors as MPI_Wait. */
PB_EXPORT int PMPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    set_t s = {count, requests};
    int rc = check_requests("MPI_Waitany", count, requests);

    if (rc != MPI_SUCCESS)
        return rc;
    if (index == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Waitany", "index is NULL");
    wait_until(any_done, &s);
    return first_complete(count, requests, index, status);
}
PB_MPI_WEAK_ALIAS(MPI_Waitany, PMPI_Waitany);

/* *@flag = whether one request of @requests is complete (or none is
 * active); if so, as MPI_Waitany.  Errors as MPI_Waitany. */
PB_EXPORT int PMPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
                           MPI_Status *status)
{
    set_t s = {count, requests};
    int rc = check_requests("MPI_Testany", count, requests);

    if (rc != MPI_SUCCESS)
        return rc;
    if (index == NULL || flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Testany", "NULL argument");
    if (!any_done(&s))
        progress();
    *flag = any_done(&s);
    if (!*flag) {
        *index = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    return first_complete(count, requests, index, status);
}
PB_MPI_WEAK_ALIAS(MPI_Testany, PMPI_Testany);

/* Wait until at least one request completes; finish every complete one:
 * their number in *@outcount (MPI_UNDEFINED when none is active), their
 * indices in @indices.  Errors as MPI_Waitall. */
PB_EXPORT int PMPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    MPI_Comm failed = MPI_COMM_NULL;
    set_t s = {incount, requests};
    int rc = check_requests("MPI_Waitsome", incount, requests), active = 0;

    if (rc != MPI_SUCCESS)
        return rc;
    if (outcount == NULL || (incount > 0 && indices == NULL))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Waitsome", "NULL argument");
    for (int i = 0; i < incount; i++)
        active |= requests[i] != MPI_REQUEST_NULL;
    if (!active) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    wait_until(any_done, &s);
    rc = finish_all(incount, requests, statuses, outcount, indices, &failed);
    return rc == MPI_SUCCESS
               ? rc
               : pb_mpi_raise(failed, rc, "MPI_Waitsome", "a message was longer than its buffer");
}
PB_MPI_WEAK_ALIAS(MPI_Waitsome, PMPI_Waitsome);

/* As MPI_Waitsome without waiting: *@outcount may be 0.  Errors as
 * MPI_Waitsome. */
PB_EXPORT int PMPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    MPI_Comm failed = MPI_COMM_NULL;
    int rc = check_requests("MPI_Testsome", incount, requests), active = 0;

    if (rc != MPI_SUCCESS)
        return rc;
    if (outcount == NULL || (incount > 0 && indices == NULL))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Testsome", "NULL argument");
    for (int i = 0; i < incount; i++)
        active |= requests[i] != MPI_REQUEST_NULL;
    if (!active) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    progress();
    rc = finish_all(incount, requests, statuses, outcount, indices, &failed);
    return rc == MPI_SUCCESS
               ? rc
               : pb_mpi_raise(failed, rc, "MPI_Testsome", "a message was longer than its buffer");
}
PB_MPI_WEAK_ALIAS(MPI_Testsome, PMPI_Testsome);

/* Let go of *@request: it completes in the background and is freed then.
 * @return MPI_SUCCESS; MPI_ERR_REQUEST. */
PB_EXPORT int PMPI_Request_free(MPI_Request *request)
{
    int rc = check_request_ptr("MPI_Request_free", request);

    if (rc != MPI_SUCCESS)
        return rc;
    if (*request == MPI_REQUEST_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Request_free",
                            "the request is MPI_REQUEST_NULL");
    if ((*request)->complete)
        request_release(*request);
    else
        (*request)->freed = 1;
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Request_free, PMPI_Request_free);

/* *@flag = whether @request is complete, with its status, without freeing
 * it.  @return MPI_SUCCESS; MPI_ERR_REQUEST; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    if (flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Request_get_status", "flag is NULL");
    if (request == MPI_REQUEST_NULL) {
        *flag = 1;
        status_empty(status);
        return MPI_SUCCESS;
    }
    if (!pb_mpi_handle_request_valid(request))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Request_get_status",
                            "not a request");
    if (!request->complete)
        progress();
    *flag = request->complete;
    if (*flag)
        status_store(status, request);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Request_get_status, PMPI_Request_get_status);

/* Cancel a receive that has not matched yet (its status then says
 * cancelled); a send, or a receive already matched, completes normally.
 * Complete the request with MPI_Wait.  @return MPI_SUCCESS; MPI_ERR_REQUEST. */
PB_EXPORT int PMPI_Cancel(MPI_Request *request)
{
    MPI_Request r;
    int rc = check_request_ptr("MPI_Cancel", request);

    if (rc != MPI_SUCCESS)
        return rc;
    r = *request;
    if (r == MPI_REQUEST_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Cancel",
                            "the request is MPI_REQUEST_NULL");
    if (r->kind != REQ_RECV || r->complete)
        return MPI_SUCCESS;
    for (MPI_Request it = p2p.posted.head; it != NULL; it = it->next) {
        if (it == r) {
            queue_remove(&p2p.posted, r);
            r->cancelled = 1;
            r->status.MPI_SOURCE = MPI_ANY_SOURCE;
            r->status.MPI_TAG = MPI_ANY_TAG;
            r->status.MPI_ERROR = MPI_SUCCESS;
            pb_mpi_status_set_bytes(&r->status, 0);
            complete(r);
            break;
        }
    }
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Cancel, PMPI_Cancel);

/* *@flag = whether the request @status belongs to was cancelled.
 * @return MPI_SUCCESS; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    if (status == NULL || flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Test_cancelled", "NULL argument");
    *flag = pb_mpi_status_cancelled(status);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Test_cancelled, PMPI_Test_cancelled);

/* ---- buffered mode ---------------------------------------------------------------- */

/* Give MPI @size bytes at @buffer for buffered sends (one buffer at a
 * time; Postbox accounts for its use, MPI_BSEND_OVERHEAD per message, and
 * keeps the copies itself).  @return MPI_SUCCESS; MPI_ERR_BUFFER (one is
 * attached already, NULL, negative size). */
PB_EXPORT int PMPI_Buffer_attach(void *buffer, int size)
{
    if (p2p.bsend_buf != NULL || buffer == NULL || size < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_BUFFER, "MPI_Buffer_attach",
                            p2p.bsend_buf != NULL ? "a buffer is attached already"
                                                  : "bad buffer or size");
    p2p.bsend_buf = buffer;
    p2p.bsend_size = (size_t)size;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_attach, PMPI_Buffer_attach);

static int bsends_done(void *arg)
{
    (void)arg;
    return p2p.bsend_used == 0;
}

/* Wait until every buffered send went out, then give the buffer back:
 * *(void **)@buffer_addr and *@size.  @return MPI_SUCCESS; MPI_ERR_BUFFER
 * (none attached); MPI_ERR_ARG. */
PB_EXPORT int PMPI_Buffer_detach(void *buffer_addr, int *size)
{
    if (buffer_addr == NULL || size == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Buffer_detach", "NULL argument");
    if (p2p.bsend_buf == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_BUFFER, "MPI_Buffer_detach",
                            "no buffer is attached");
    wait_until(bsends_done, NULL);
    *(void **)buffer_addr = p2p.bsend_buf;
    *size = (int)p2p.bsend_size;
    p2p.bsend_buf = NULL;
    p2p.bsend_size = 0;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_detach, PMPI_Buffer_detach);

/* ---- handle conversions ---------------------------------------------------------- */

/* The integer of @request (the ABI's conversion for other languages):
 * MPI_REQUEST_NULL's ABI value, or one from PB_MPI_HANDLE_INT_BASE up kept
 * while the request lives.  A bad handle raises MPI_ERR_REQUEST and gives
 * MPI_REQUEST_NULL's. */
PB_EXPORT int PMPI_Request_toint(MPI_Request request)
{
    if (request == MPI_REQUEST_NULL)
        return (int)(uintptr_t)MPI_REQUEST_NULL;
    if (!pb_mpi_handle_request_valid(request)) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Request_toint", "not a request");
        return (int)(uintptr_t)MPI_REQUEST_NULL;
    }
    return pb_mpi_handle_toint(PB_MPI_HANDLE_REQUEST, request);
}
PB_MPI_WEAK_ALIAS(MPI_Request_toint, PMPI_Request_toint);

/* The request of integer @request (MPI_Request_toint), or MPI_REQUEST_NULL
 * when no live request has it. */
PB_EXPORT MPI_Request PMPI_Request_fromint(int request)
{
    MPI_Request r;

    if (request == (int)(uintptr_t)MPI_REQUEST_NULL || request < PB_MPI_HANDLE_INT_BASE)
        return MPI_REQUEST_NULL;
    r = pb_mpi_handle_fromint(PB_MPI_HANDLE_REQUEST, request);
    return r != NULL ? r : MPI_REQUEST_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Request_fromint, PMPI_Request_fromint);
