/*
 * The ofi transport's importer side: the rendezvous handshake (on the
 * node's abstract socket, or over TCP with an exporter of another node),
 * puts and gets as RMA writes and reads, barriers and signals as messages
 * that follow the writes before them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/identity.h"
#include "rsm/ofi/ofi_impl.h"
#include "rsm/rendezvous.h"
#include "rsm/tcp.h"
#include "util/log.h"
#include "util/random.h"
#include "util/sock.h"
#include "util/time.h"

/* ---- the rendezvous ------------------------------------------------------------------ */

/* Dial the exporter's rendezvous over TCP at @peer before @deadline: the
 * connection in *@fd_p (non-blocking).  @return PB_OK, PB_ERR_NOT_PUBLISHED
 * (refused: the process is gone), PB_ERR_UNREACHABLE (no route, no
 * answer), PB_ERR_TIMEOUT, PB_ERR_NO_RESOURCE. */
static pb_status_t ofi_rv_dial(const struct sockaddr_in *peer, int64_t deadline, int *fd_p)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1, err;

    if (fd < 0)
        return PB_ERR_NO_RESOURCE;
    if (pb_sock_connect(fd, (const struct sockaddr *)peer, sizeof(*peer), deadline, &err) ==
        PB_ERR_TIMEOUT) {
        close(fd);
        return PB_ERR_TIMEOUT;
    }
    if (err != 0) {
        char where[INET_ADDRSTRLEN];

        close(fd);
        inet_ntop(AF_INET, &peer->sin_addr, where, sizeof(where));
        pb_debug("ofi: the rendezvous at %s:%u: %s", where, ntohs(peer->sin_port), strerror(err));
        return err == ECONNREFUSED || err == ECONNRESET ? PB_ERR_NOT_PUBLISHED : PB_ERR_UNREACHABLE;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* an exporter whose host died is noticed by the import's next operation
     * on the fabric; keep-alive closes the connection too */
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    *fd_p = fd;
    return PB_OK;
}

/* Find the exporter of (@node, @segid) on a node whose abstract sockets
 * this process cannot see: the tcp transport's LOOKUP, relayed by a
 * process of that node, says where it takes rendezvous connections over
 * TCP; dial it.  @return as ofi_rv_dial, or the lookup's error. */
static pb_status_t ofi_rv_connect_remote(rsm_node_id_t node, rsm_memseg_id_t segid,
                                         int64_t deadline, int *fd_p)
{
    struct sockaddr_in peer;
    pb_status_t status = pb_tcp_ofi_lookup(node, segid, deadline, &peer);

    if (status != PB_OK)
        return status;
    return ofi_rv_dial(&peer, deadline, fd_p);
}

/* Connect to the rendezvous of (@node, @segid): a socket of this user's
 * process, in *@fd_p.  @return PB_OK, PB_ERR_NOT_PUBLISHED,
 * PB_ERR_PERMISSION (another user holds the name). */
static pb_status_t ofi_rv_connect(rsm_node_id_t node, rsm_memseg_id_t segid, int *fd_p)
{
    struct sockaddr_un addr;
    socklen_t len;
    struct ucred cred;
    socklen_t cred_len = sizeof(cred);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0)
        return PB_ERR_NO_RESOURCE;
    pb_rsm_rendezvous_name(&addr, &len, OFI_RENDEZVOUS_PREFIX, node, segid);
    if (connect(fd, (struct sockaddr *)&addr, len) != 0 && errno != EINPROGRESS) {
        close(fd);
        return PB_ERR_NOT_PUBLISHED;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 || cred.uid != geteuid()) {
        pb_warn("ofi: the rendezvous of segment %#x of node %u is held by another user", segid,
                node);
        close(fd);
        return PB_ERR_PERMISSION;
    }
    *fd_p = fd;
    return PB_OK;
}

/* The handshake on @fd, before @deadline: the exporter's nonce, our
 * request, its checked answer in *@reply.  @return PB_OK or the
 * exporter's refusal. */
static pb_status_t ofi_rv_handshake(pb_ofi_import_t *ti, int fd, int64_t deadline,
                                    pb_ofi_rv_reply_t *reply)
{
    pb_rsm_import_t *im = ti->im;
    pb_ofi_rv_hello_t hello;
    pb_ofi_rv_request_t req = {.magic = PB_OFI_RV_MAGIC, .type = OFI_RV_REQUEST};
    pb_status_t status = pb_sock_recv_msg(fd, &hello, sizeof(hello), deadline);

    if (status == PB_ERR_CONN_ABORTED) {
        /* closed: the exporter withdrew the segment or died meanwhile */
        return PB_ERR_NOT_PUBLISHED;
    }
    if (status != PB_OK)
        return status;
    if (hello.magic != PB_OFI_RV_MAGIC || hello.type != OFI_RV_HELLO)
        return PB_ERR_PROTOCOL;
    req.node = pb_boot_identity_get()->node_id;
    req.segid = im->segid;
    req.perm = im->perm;
    req.import_token = ti->token;
    req.name_len = (uint32_t)pb_ofi.name_len;
    memcpy(req.name, pb_ofi.name, pb_ofi.name_len);
    if (pb_random_bytes(req.nonce, sizeof(req.nonce)) != 0)
        return PB_ERR_NO_RESOURCE;
    req.mac = pb_ofi_request_mac(hello.nonce, &req);
    /* (a fresh connection's buffer holds it whole, on either socket) */
    if (send(fd, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req))
        return PB_ERR_NOT_PUBLISHED;
    status = pb_sock_recv_msg(fd, reply, sizeof(*reply), deadline);
    if (status == PB_ERR_CONN_ABORTED) {
        /* closed without a reply: a refusal of our MAC (another job) */
        return PB_ERR_PERMISSION;
    }
    if (status != PB_OK)
        return status;
    if (reply->magic != PB_OFI_RV_MAGIC || reply->type != OFI_RV_REPLY ||
        reply->mac != pb_ofi_reply_mac(req.nonce, reply)) {
        pb_warn("ofi: the answer of segment %#x of node %u fails its MAC", im->segid, im->node);
        return PB_ERR_PERMISSION;
    }
    if (reply->status != PB_OK)
        return (pb_status_t)reply->status;
    if (reply->size == 0 || reply->size > PB_OFI_MAX_SEGMENT_SIZE || reply->name_len == 0 ||
        reply->name_len > PB_OFI_NAME_MAX) {
        pb_error("ofi: segment %#x of node %u announces a size of %llu bytes or a bad address",
                 im->segid, im->node, (unsigned long long)reply->size);
        return PB_ERR_CONN_ABORTED;
    }
    return PB_OK;
}

static pb_status_t ofi_import_connect(pb_rsm_import_t *im);

pb_status_t pb_ofi_import_connect(pb_rsm_import_t *im)
{
    pb_status_t status;

    pthread_mutex_lock(&pb_ofi.lock);
    pb_ofi.connecting++;
    pthread_mutex_unlock(&pb_ofi.lock);
    status = ofi_import_connect(im);
    pthread_mutex_lock(&pb_ofi.lock);
    pb_ofi.connecting--;
    pthread_mutex_unlock(&pb_ofi.lock);
    if (status != PB_OK) {
        pthread_mutex_lock(&pb_rsm_lock);
        pb_ofi_close_if_idle();
        pthread_mutex_unlock(&pb_rsm_lock);
    }
    return status;
}

static pb_status_t ofi_import_connect(pb_rsm_import_t *im)
{
    pb_status_t status = pb_ofi_start(0);
    int64_t deadline = pb_time_now_ms() + PB_OFI_CONNECT_TIMEOUT_MS;
    pb_ofi_rv_reply_t reply;
    pb_ofi_import_t *ti;
    int fd;

    if (status != PB_OK)
        return status;
    ti = calloc(1, sizeof(*ti));
    if (ti == NULL)
        return PB_ERR_NO_MEMORY;
    ti->im = im;
    pthread_mutex_init(&ti->fd_lock, NULL);
    pthread_mutex_lock(&pb_ofi.lock);
    ti->token = pb_ofi.next_token++;
    pthread_mutex_unlock(&pb_ofi.lock);
    status = ofi_rv_connect(im->node, im->segid, &fd);
    if (status == PB_ERR_NOT_PUBLISHED && im->node != pb_boot_identity_get()->node_id) {
        /* a node of the job in another network namespace or on another host */
        status = ofi_rv_connect_remote(im->node, im->segid, deadline, &fd);
    }
    if (status != PB_OK) {
        pthread_mutex_destroy(&ti->fd_lock);
        free(ti);
        return status;
    }
    status = ofi_rv_handshake(ti, fd, deadline, &reply);
    if (status == PB_OK) {
        pthread_mutex_lock(&pb_ofi.lock);
        ti->peer = pb_ofi_peer_get(reply.name, reply.name_len);
        if (ti->peer == NULL) {
            status = PB_ERR_NO_RESOURCE;
        } else {
            ti->next = pb_ofi.imports;
            pb_ofi.imports = ti;
        }
        pthread_mutex_unlock(&pb_ofi.lock);
    }
    if (status != PB_OK) {
        close(fd);
        pthread_mutex_destroy(&ti->fd_lock);
        free(ti);
        return status;
    }
    ti->fd = fd;
    ti->key = reply.key;
    ti->base = reply.base;
    ti->attach_token = reply.attach_token;
    im->size = reply.size;
    /* (the exporter may grant more than asked; the import keeps its own) */
    im->tl = ti;
    return PB_OK;
}

void pb_ofi_import_disconnect(pb_rsm_import_t *im)
{
    pb_ofi_import_t *ti = im->tl;

    pthread_mutex_lock(&pb_ofi.lock);
    for (pb_ofi_import_t **p = &pb_ofi.imports; *p != NULL; p = &(*p)->next) {
        if (*p == ti) {
            *p = ti->next;
            break;
        }
    }
    pb_ofi_peer_put(ti->peer);
    pthread_mutex_unlock(&pb_ofi.lock);
    /* the exporter forgets this import when the connection ends */
    close(ti->fd);
    pthread_mutex_destroy(&ti->fd_lock);
    free(ti);
    im->tl = NULL;
    pb_ofi_close_if_idle();
}

/* Mark @ti dead and wake whoever waits on it. */
static void ofi_import_fail(pb_ofi_import_t *ti)
{
    atomic_store(&ti->failure, PB_ERR_CONN_ABORTED);
    atomic_fetch_add(&ti->generation, 1);
    pb_ofi_wake(&ti->generation);
    pb_ofi_wake(&ti->barrier_acked);
}

pb_status_t pb_ofi_import_state(pb_ofi_import_t *ti)
{
    pb_status_t status = atomic_load_explicit(&ti->failure, memory_order_relaxed);

    if (PB_UNLIKELY(status != PB_OK))
        return status;
    /* what the exporter said since: a rebind, a withdrawal, its end (its
     * messages are in our socket before its call returned there) */
    pthread_mutex_lock(&ti->fd_lock);
    for (;;) {
        pb_ofi_rv_notice_t notice;
        ssize_t n = recv(ti->fd, ti->rx + ti->rx_len, sizeof(notice) - ti->rx_len, MSG_DONTWAIT);

        if (n < 0 && errno == EAGAIN)
            break;
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0)
            ti->rx_len += (size_t)n;
        if (n > 0 && ti->rx_len < sizeof(notice))
            continue; /* (over TCP: the rest follows) */
        memcpy(&notice, ti->rx, sizeof(notice));
        ti->rx_len = 0;
        if (n > 0 && notice.magic == PB_OFI_RV_MAGIC && notice.type == OFI_RV_REBASE) {
            atomic_store(&ti->key, notice.key);
            atomic_store(&ti->base, notice.base);
            continue;
        }
        /* withdrawn, ended, or malformed */
        ofi_import_fail(ti);
        break;
    }
    pthread_mutex_unlock(&ti->fd_lock);
    return atomic_load(&ti->failure);
}

void pb_ofi_import_on_msg(const pb_ofi_msg_t *msg)
{
    pb_ofi_import_t *ti;

    for (ti = pb_ofi.imports; ti != NULL; ti = ti->next) {
        if (ti->token == msg->token)
            break;
    }
    if (ti == NULL)
        return; /* (disconnected meanwhile) */
    if (msg->type == OFI_MSG_EVENT) {
        atomic_fetch_add(&ti->generation, 1);
        pb_ofi_wake(&ti->generation);
    } else if (msg->type == OFI_MSG_BARRIER_REPLY) {
        /* replies come in order: the newest answers every older one (a
         * repeated request's second answer changes nothing) */
        if ((int32_t)((uint32_t)msg->a - atomic_load(&ti->barrier_acked)) > 0) {
            atomic_store(&ti->barrier_status, (int)(int32_t)msg->b);
            atomic_store(&ti->barrier_acked, (uint32_t)msg->a);
            pb_ofi_wake(&ti->barrier_acked);
        }
    }
}

/* ---- data -------------------------------------------------------------------------- */

/* @status of an operation of @ti: a failure of the fabric (the exporter
 * died, its region closed) is the import's end, whatever the rendezvous
 * connection says yet (a dead process's sockets close one by one). */
static pb_status_t ofi_import_check(pb_ofi_import_t *ti, pb_status_t status)
{
    if (status == PB_ERR_CONN_ABORTED)
        ofi_import_fail(ti);
    return status;
}

/* The provider is busy (-FI_EAGAIN: its queue is full, or it is still
 * dialing the peer): make progress and say whether to try again, which
 * stops when @ti ended or after PB_OFI_SEND_TIMEOUT_MS (*@deadline_p, -1
 * before the first retry: a peer the provider keeps dialing in vain). */
static int ofi_retry(pb_ofi_import_t *ti, int64_t *deadline_p)
{
    int64_t now = pb_time_now_ms();

    if (*deadline_p < 0)
        *deadline_p = now + PB_OFI_SEND_TIMEOUT_MS;
    if (now >= *deadline_p || pb_ofi_import_state(ti) != PB_OK)
        return 0;
    pb_ofi_progress();
    return 1;
}

/* Start writing @length bytes at @offset without waiting: injected when
 * short, else an op appended to @ops (*@nops of them).  @return PB_OK or
 * PB_ERR_CONN_ABORTED, PB_ERR_NO_MEMORY. */
static pb_status_t ofi_write_start(pb_ofi_import_t *ti, size_t offset, const void *src,
                                   size_t length, pb_ofi_op_t **ops, size_t *nops)
{
    uint64_t addr = atomic_load(&ti->base) + offset;
    uint64_t key = atomic_load(&ti->key);
    int64_t deadline = -1;
    pb_ofi_op_t *op;
    ssize_t rc;

    if (length <= pb_ofi.inject_size) {
        while ((rc = fi_inject_write(pb_ofi.ep, src, length, ti->peer->addr, addr, key)) ==
                   -FI_EAGAIN &&
               ofi_retry(ti, &deadline))
            ;
        return rc == 0 ? PB_OK : PB_ERR_CONN_ABORTED;
    }
    op = calloc(1, sizeof(*op));
    if (op == NULL)
        return PB_ERR_NO_MEMORY;
    op->kind = OFI_CTX_OP;
    while ((rc = fi_write(pb_ofi.ep, src, length, NULL, ti->peer->addr, addr, key, op)) ==
               -FI_EAGAIN &&
           ofi_retry(ti, &deadline))
        ;
    if (rc != 0) {
        free(op);
        return PB_ERR_CONN_ABORTED;
    }
    ops[(*nops)++] = op;
    return PB_OK;
}

/* Write @length bytes at @offset and wait for it, as the caller may reuse
 * @src at once (a short write is injected: the provider keeps a copy). */
static pb_status_t ofi_write(pb_ofi_import_t *ti, size_t offset, const void *src, size_t length)
{
    pb_ofi_op_t *op[1];
    size_t nops = 0;
    pb_status_t status = ofi_write_start(ti, offset, src, length, op, &nops);

    if (status == PB_OK && nops == 1)
        status = pb_ofi_op_wait_free(op[0], ti);
    return ofi_import_check(ti, status);
}

pb_status_t pb_ofi_put_vector(pb_rsm_import_t *im, const pb_rsm_put_entry_t *entries, size_t count,
                              int signal, int word_last)
{
    pb_ofi_import_t *ti = im->tl;
    pb_status_t status = pb_ofi_import_state(ti), waited;
    pb_ofi_op_t *ops[RSM_MAX_SGIOREQS + 1];
    size_t nops = 0;

    if (status != PB_OK)
        return status;
    if (!pb_ofi.ordered_waw || count > RSM_MAX_SGIOREQS) {
        /* writes may land out of order: one at a time, as put does */
        for (size_t i = 0; i < count && status == PB_OK; i++) {
            if (word_last && i == count - 1)
                status = pb_ofi_put_word_last(im, entries[i].offset, entries[i].src,
                                              entries[i].length, signal);
            else
                status = ofi_write(ti, entries[i].offset, entries[i].src, entries[i].length);
        }
        if (status == PB_OK && signal && !word_last)
            status = pb_ofi_import_signal_post(im, 1);
        if (status == PB_OK && !word_last && im->mode == RSM_BARRIER_MODE_IMPLICIT)
            status = pb_ofi_barrier_close(im);
        return status;
    }
    /* every write goes out at once; they land in order (FI_ORDER_WAW), the
     * word-last entry's rest before its word, and the signal after them
     * (FI_ORDER_SAW); then wait for those the caller's buffers hold */
    for (size_t i = 0; i < count && status == PB_OK; i++) {
        const pb_rsm_put_entry_t *e = &entries[i];

        if (word_last && i == count - 1) {
            if (e->length > 4)
                status = ofi_write_start(ti, e->offset + 4, (const char *)e->src + 4, e->length - 4,
                                         ops, &nops);
            if (status == PB_OK)
                status = ofi_write_start(ti, e->offset, e->src, 4, ops, &nops);
        } else {
            status = ofi_write_start(ti, e->offset, e->src, e->length, ops, &nops);
        }
    }
    if (status == PB_OK && signal) {
        pb_ofi_msg_t msg = {.type = OFI_MSG_SIGNAL, .token = ti->attach_token, .a = 1};

        status = pb_ofi_send(ti->peer->addr, &msg);
    }
    for (size_t i = 0; i < nops; i++) {
        waited = pb_ofi_op_wait_free(ops[i], ti);
        if (status == PB_OK)
            status = waited;
    }
    status = ofi_import_check(ti, status);
    if (status == PB_OK && im->mode == RSM_BARRIER_MODE_IMPLICIT)
        status = pb_ofi_barrier_close(im);
    return status;
}

pb_status_t pb_ofi_put(pb_rsm_import_t *im, size_t offset, const void *src, size_t length)
{
    pb_ofi_import_t *ti = im->tl;
    pb_status_t status = pb_ofi_import_state(ti);

    if (status == PB_OK)
        status = ofi_write(ti, offset, src, length);
    if (status == PB_OK && im->mode == RSM_BARRIER_MODE_IMPLICIT)
        status = pb_ofi_barrier_close(im);
    return status;
}

pb_status_t pb_ofi_put_word_last(pb_rsm_import_t *im, size_t offset, const void *src, size_t length,
                                 int signal)
{
    pb_ofi_import_t *ti = im->tl;
    pb_status_t status = pb_ofi_import_state(ti);

    if (status != PB_OK)
        return status;
    if (length > 4) {
        status = ofi_write(ti, offset + 4, (const char *)src + 4, length - 4);
        /* a provider that may reorder writes: the rest lands first */
        if (status == PB_OK && !pb_ofi.ordered_waw)
            status = pb_ofi_barrier_close(im);
    }
    if (status == PB_OK)
        status = ofi_write(ti, offset, src, 4);
    if (status == PB_OK && im->mode == RSM_BARRIER_MODE_IMPLICIT)
        status = pb_ofi_barrier_close(im);
    if (status == PB_OK && signal)
        status = pb_ofi_import_signal_post(im, 1);
    return status;
}

pb_status_t pb_ofi_get(pb_rsm_import_t *im, size_t offset, void *dst, size_t length)
{
    pb_ofi_import_t *ti = im->tl;
    pb_status_t status = pb_ofi_import_state(ti);
    int64_t deadline = -1;
    pb_ofi_op_t *op;
    ssize_t rc;

    if (status != PB_OK)
        return status;
    op = calloc(1, sizeof(*op));
    if (op == NULL)
        return PB_ERR_NO_MEMORY;
    op->kind = OFI_CTX_OP;
    while ((rc = fi_read(pb_ofi.ep, dst, length, NULL, ti->peer->addr,
                         atomic_load(&ti->base) + offset, atomic_load(&ti->key), op)) ==
               -FI_EAGAIN &&
           ofi_retry(ti, &deadline))
        ;
    if (rc != 0) {
        free(op);
        return ofi_import_check(ti, PB_ERR_CONN_ABORTED);
    }
    /* (a read of a withdrawn region fails at the target) */
    return ofi_import_check(ti, pb_ofi_op_wait_free(op, ti));
}

pb_status_t pb_ofi_call(pb_rsm_import_t *im, const void *request, size_t request_len, void *reply,
                        size_t reply_max, size_t *reply_len_p, int no_reply)
{
    /* nothing of the exporter's runs over the fabric (docs/ofi.md) */
    (void)im, (void)request, (void)request_len, (void)reply, (void)reply_max;
    (void)reply_len_p, (void)no_reply;
    return PB_ERR_UNSUPPORTED;
}

pb_status_t pb_ofi_map(pb_rsm_import_t *im, void **address_p, int fixed, int writable,
                       size_t offset, size_t length)
{
    /* no load or store reaches another node's memory */
    (void)im, (void)address_p, (void)fixed, (void)writable, (void)offset, (void)length;
    return PB_ERR_UNSUPPORTED;
}

void pb_ofi_unmap(pb_rsm_import_t *im)
{
    (void)im;
}

/* ---- barriers and signals --------------------------------------------------------- */

pb_status_t pb_ofi_barrier_open(pb_rsm_import_t *im)
{
    return pb_ofi_import_state(im->tl);
}

pb_status_t pb_ofi_barrier_order(pb_rsm_import_t *im)
{
    /* writes land in the order they were made where the provider says so;
     * elsewhere an order barrier is a full one */
    if (pb_ofi.ordered_waw)
        return pb_ofi_import_state(im->tl);
    return pb_ofi_barrier_close(im);
}

pb_status_t pb_ofi_barrier_close(pb_rsm_import_t *im)
{
    pb_ofi_import_t *ti = im->tl;
    pb_status_t status = pb_ofi_import_state(ti);
    int64_t spin_until = pb_time_now_ns() + (int64_t)pb_ofi.spin_us * 1000;
    pb_ofi_msg_t msg = {.type = OFI_MSG_BARRIER, .token = ti->attach_token};
    int64_t sent_at;
    uint32_t seq;

    if (status != PB_OK)
        return status;
    /* the exporter answers once the message arrived: after every write
     * sent before it, which lie in its memory then */
    seq = atomic_fetch_add(&ti->barrier_sent, 1) + 1;
    msg.a = seq;
    status = pb_ofi_send(ti->peer->addr, &msg);
    if (status != PB_OK)
        return ofi_import_check(ti, status);
    sent_at = pb_time_now_ms();
    for (;;) {
        uint32_t acked = atomic_load(&ti->barrier_acked);

        if ((int32_t)(acked - seq) >= 0)
            return (pb_status_t)atomic_load(&ti->barrier_status);
        pb_ofi_progress();
        if (pb_time_now_ns() < spin_until)
            continue;
        status = pb_ofi_import_state(ti);
        if (status != PB_OK)
            return status;
        if (pb_time_now_ms() - sent_at >= PB_OFI_BARRIER_RESEND_MS) {
            /* a live exporter that has not answered: ask again (an answer
             * the provider failed to send is lost, not late) */
            status = pb_ofi_send(ti->peer->addr, &msg);
            if (status != PB_OK)
                return ofi_import_check(ti, status);
            sent_at = pb_time_now_ms();
        }
        pb_ofi_sleep(&ti->barrier_acked, acked, pb_ofi.cq_fd >= 0 ? PB_OFI_WAIT_SLICE_MS : 1);
    }
}

pb_status_t pb_ofi_import_signal_post(pb_rsm_import_t *im, int accumulate)
{
    pb_ofi_import_t *ti = im->tl;
    pb_status_t status = pb_ofi_import_state(ti);
    pb_ofi_msg_t msg = {.type = OFI_MSG_SIGNAL, .token = ti->attach_token, .a = accumulate != 0};

    if (status != PB_OK)
        return status;
    return ofi_import_check(ti, pb_ofi_send(ti->peer->addr, &msg));
}

pb_status_t pb_ofi_import_signal_wait(pb_rsm_import_t *im, int timeout_ms)
{
    pb_ofi_import_t *ti = im->tl;
    int64_t deadline = timeout_ms < 0 ? -1 : pb_time_now_ms() + timeout_ms;
    int64_t spin_until = pb_time_now_ns() + (int64_t)pb_ofi.spin_us * 1000;

    for (;;) {
        uint32_t generation;
        pb_status_t status;
        int slice;

        pb_ofi_progress();
        status = pb_ofi_import_state(ti);
        if (status != PB_OK)
            return status;
        generation = atomic_load(&ti->generation);
        if (generation != ti->seen_generation) {
            /* a wait consumes every event pending */
            ti->seen_generation = generation;
            return PB_OK;
        }
        if (timeout_ms == 0)
            return PB_ERR_TIMEOUT;
        if (pb_time_now_ns() < spin_until)
            continue;
        slice = pb_time_remaining_ms(deadline, PB_OFI_WAIT_SLICE_MS);
        if (slice == 0)
            return PB_ERR_TIMEOUT;
        if (pb_ofi_sleep(&ti->generation, generation, slice) != 0)
            return PB_ERR_INTERRUPTED;
    }
}

const void *pb_ofi_import_event_word(pb_rsm_import_t *im)
{
    return &((pb_ofi_import_t *)im->tl)->generation;
}
