/*
 * The tcp transport's connections: the connection objects, the outgoing
 * queue of the progress engine, blocking writes of application threads,
 * the frames' MACs as they go out, the exporter side of the handshake
 * (HELLO, AUTH, WELCOME), accepting importers, and the configuration every
 * connection shares (addresses, socket options, the key, payload MACs).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "boot/identity.h"
#include "boot/pmi.h"
#include "rsm/tcp/tcp_impl.h"
#include "util/config.h"
#include "util/log.h"
#include "util/random.h"
#include "util/time.h"

long pb_tcp_timeout_ms(void)
{
    long ms = pb_config_get_long("POSTBOX_TCP_TIMEOUT_MS");

    return ms > 0 ? ms : 2000;
}

int pb_tcp_request_timeout_ms(void)
{
    long ms = pb_config_get_long("POSTBOX_TCP_REQUEST_TIMEOUT_MS");

    return ms > 0 && ms < INT32_MAX ? (int)ms : 5000;
}

int64_t pb_tcp_reply_deadline(void)
{
    return pb_tcp.reply_timeout_ms > 0 ? pb_time_now_ms() + pb_tcp.reply_timeout_ms : -1;
}

void pb_tcp_socket_tune(int fd)
{
    int one = 1, idle = 1, count = 3;
    unsigned timeout = (unsigned)pb_tcp_timeout_ms();
    int interval = (int)(timeout / 3000) > 0 ? (int)(timeout / 3000) : 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof(timeout));
}

void pb_tcp_key_of_job(uint8_t key[PB_TCP_KEY_LEN])
{
    /* a launched job's secret, or the solo job's per-user key (boot.md) */
    memcpy(key, pb_boot_identity_get()->secret, PB_TCP_KEY_LEN);
}

int pb_tcp_parse_addrs(const char *text, uint32_t addrs[TCP_MAX_RAILS])
{
    int count = 0;

    while (*text != '\0') {
        char one[INET_ADDRSTRLEN];
        size_t len = strcspn(text, ",");
        struct in_addr in;

        if (count == TCP_MAX_RAILS || len == 0 || len >= sizeof(one))
            return 0;
        memcpy(one, text, len);
        one[len] = '\0';
        if (inet_pton(AF_INET, one, &in) != 1)
            return 0;
        addrs[count++] = in.s_addr;
        text += len;
        if (*text == ',')
            text++;
    }
    return count;
}

int pb_tcp_local_addrs(uint32_t addrs[TCP_MAX_RAILS])
{
    const char *text = pb_config_get_string("POSTBOX_TCP_ADDR");
    uint32_t routed = pb_boot_pmi_local_ipv4();
    int count;

    if (text == NULL || text[0] == '\0')
        text = getenv("POSTBOX_NETNS_RAILS");
    if (text == NULL || text[0] == '\0')
        text = getenv("POSTBOX_NETNS_ADDR");
    if ((text == NULL || text[0] == '\0') && routed != 0) {
        /* started by a launcher on another host (--hosts, srun): the
         * address this host reaches it from, which the other hosts reach */
        addrs[0] = routed;
        return 1;
    }
    if (text == NULL || text[0] == '\0')
        text = "127.0.0.1";
    count = pb_tcp_parse_addrs(text, addrs);
    if (count == 0)
        pb_error("POSTBOX_TCP_ADDR: '%s' is not a list of at most %d IPv4 addresses", text,
                 TCP_MAX_RAILS);
    return count;
}

/* Whether @addr (network order) is in the /16 of one of the --netns
 * addresses the launcher gave this process: a node of the same job on
 * this host (--netns runs every node on one host). */
static int tcp_netns_neighbour(uint32_t addr)
{
    const char *text = getenv("POSTBOX_NETNS_RAILS");
    uint32_t mine[TCP_MAX_RAILS];
    int count;

    if (text == NULL || text[0] == '\0')
        text = getenv("POSTBOX_NETNS_ADDR");
    if (text == NULL || text[0] == '\0')
        return 0;
    count = pb_tcp_parse_addrs(text, mine);
    for (int i = 0; i < count; i++) {
        if ((ntohl(mine[i]) & 0xffff0000u) == (ntohl(addr) & 0xffff0000u))
            return 1;
    }
    return 0;
}

int pb_tcp_payload_mac_wanted(uint32_t addr)
{
    const char *mode = pb_config_get_string("POSTBOX_TCP_PAYLOAD_MAC");
    uint32_t mine[TCP_MAX_RAILS];
    int count;

    if (strcmp(mode, "off") == 0)
        return 0;
    if (strcmp(mode, "auto") != 0) {
        static atomic_flag warned = ATOMIC_FLAG_INIT;

        if (strcmp(mode, "on") != 0 && !atomic_flag_test_and_set(&warned))
            pb_warn("POSTBOX_TCP_PAYLOAD_MAC: '%s' is not auto, on or off: taken as on", mode);
        return 1;
    }
    /* on this host nobody without privileges can write into an
     * established TCP stream: the header MACs and their sequence numbers
     * bind the frames to the session */
    if ((ntohl(addr) >> 24) == 127 || tcp_netns_neighbour(addr))
        return 0;
    count = pb_tcp_local_addrs(mine);
    for (int i = 0; i < count; i++) {
        if (mine[i] == addr)
            return 0;
    }
    return 1;
}

/* Copy a queued frame's payload (a GET's reply: bytes of an exported
 * segment) into the send queue; a function of its own that calls nothing
 * else, never inlined, which tests/tsan.supp names. */
PB_NOINLINE static void tcp_outq_copy_payload(char *to, const void *from, size_t len)
{
    memcpy(to, from, len);
}

static int tcp_outq_append(pb_tcp_outq_t *q, const void *a, size_t a_len, const void *b,
                           size_t b_len, size_t room)
{
    size_t need = a_len + b_len + room;

    if (q->head == q->tail)
        q->head = q->sealed = q->tail = 0;
    if (q->cap - q->tail < need) {
        size_t used = q->tail - q->head;
        size_t cap = q->cap ? q->cap : 4096;
        char *grown;

        while (cap < used + need)
            cap *= 2;
        grown = malloc(cap);
        if (grown == NULL)
            return 0;
        if (used > 0)
            memcpy(grown, q->buf + q->head, used);
        free(q->buf);
        q->buf = grown;
        q->cap = cap;
        q->sealed -= q->head;
        q->head = 0;
        q->tail = used;
    }
    memcpy(q->buf + q->tail, a, a_len);
    if (b_len > 0)
        tcp_outq_copy_payload(q->buf + q->tail + a_len, b, b_len);
    q->tail += need;
    return 1;
}

/* Write the MACs of the frames queued on @c since the last seal, taking
 * their sequence numbers: right before they go out, after everything the
 * connection sent before them.  Caller holds pb_tcp.lock and c->send_lock. */
static void tcp_outq_seal(pb_tcp_conn_t *c)
{
    pb_tcp_outq_t *q = &c->outq;

    while (q->sealed < q->tail) {
        uint8_t *header = (uint8_t *)q->buf + q->sealed;
        uint64_t seq = pb_tcp_header_seal(&c->tx, header);
        uint32_t length;

        memcpy(&length, header + 24, 4);
        length = le32toh(length);
        q->sealed += PB_TCP_FRAME_HEADER_SIZE + length;
        if (c->tx.payload_mac && length > 0) {
            uint64_t mac =
                htole64(pb_tcp_payload_mac(&c->tx, seq, header + PB_TCP_FRAME_HEADER_SIZE, length));

            memcpy(q->buf + q->sealed, &mac, sizeof(mac));
            q->sealed += sizeof(mac);
        }
    }
}

static pb_tcp_conn_t *tcp_conn_new(int fd, int at_exporter)
{
    pb_tcp_conn_t *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->staging = malloc(TCP_STAGING_SIZE);
    if (c->staging == NULL) {
        free(c);
        return NULL;
    }
    c->fd = fd;
    c->at_exporter = at_exporter;
    c->next_tag = 1;
    pthread_mutex_init(&c->send_lock, NULL);
    return c;
}

static void tcp_conn_free(pb_tcp_conn_t *c)
{
    if (pb_tcp.hot == c)
        pb_tcp.hot = NULL;
    if (pb_tcp.served == c)
        pb_tcp.served = NULL;
    pthread_mutex_destroy(&c->send_lock);
    free(c->outq.buf);
    free(c->staging);
    free(c->slot_imports);
    free(c->abandoned);
    free(c->slots);
    pb_tcp_export_rx_free(&c->export_rx);
    free(c);
}

static void tcp_conn_unlink(pb_tcp_conn_t *c)
{
    for (pb_tcp_conn_t **p = &pb_tcp.conns; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            return;
        }
    }
}

static void tcp_conn_watch(pb_tcp_conn_t *c, uint32_t events)
{
    if (c->events != events) {
        c->events = events;
        (void)pb_tcp_source_modify(c->source_id, events);
    }
}

void pb_tcp_conn_fail(pb_tcp_conn_t *c, pb_status_t status, const char *why)
{
    int32_t ok = PB_OK;

    if (!atomic_compare_exchange_strong(&c->failure, &ok, (int32_t)status))
        return;
    if (c->at_exporter) {
        /* (rate-limited: anyone can connect and send garbage, and a job
         * member malformed frames, again and again) */
        if (why != NULL && !c->established)
            pb_log_limited(&pb_tcp.log_peer, TCP_LOG_INTERVAL_MS,
                           "tcp: closing a connection in its handshake: %s", why);
        else if (why != NULL)
            pb_log_limited(&pb_tcp.log_peer, TCP_LOG_INTERVAL_MS,
                           "tcp: closing the connection from pid %u (node %u): %s", c->peer_pid,
                           c->peer_node, why);
        else if (!c->established)
            pb_debug("tcp: a connection in its handshake closed");
        else
            pb_info("tcp: importer pid %u closed its connection", c->peer_pid);
    } else {
        char addr[INET_ADDRSTRLEN] = "?";

        inet_ntop(AF_INET, &c->peer.sin_addr, addr, sizeof(addr));
        if (why != NULL)
            pb_warn("tcp: closing the connection to %s:%u: %s", addr, ntohs(c->peer.sin_port), why);
        else
            pb_info("tcp: the exporter at %s:%u closed its connection", addr,
                    ntohs(c->peer.sin_port));
    }
    pb_tcp_source_remove(c->source_id);
    shutdown(c->fd, SHUT_RDWR);
    if (!c->at_exporter)
        tcp_conn_unlink(c);
    while (c->requests != NULL) {
        pb_tcp_request_t *req = c->requests;

        c->requests = req->next;
        req->status = status;
        pb_tcp_word_bump(&req->done);
    }
    for (uint32_t i = 0; i < c->slot_import_cap; i++) {
        pb_rsm_import_t *im = c->slot_imports[i];

        if (im != NULL)
            pb_tcp_word_bump(&((pb_tcp_import_t *)im->tl)->generation);
    }
}

void pb_tcp_reap_failed(void)
{
    for (pb_tcp_conn_t **p = &pb_tcp.conns; *p != NULL;) {
        pb_tcp_conn_t *c = *p;

        if (c->at_exporter && atomic_load(&c->failure) != PB_OK) {
            *p = c->next;
            for (pb_tcp_relay_t *relay = pb_tcp.relays, *next; relay != NULL; relay = next) {
                next = relay->next;
                if (relay->conn == c)
                    pb_tcp_relay_end(relay);
            }
            close(c->fd);
            tcp_conn_free(c);
            pb_tcp_accept_resume();
        } else {
            p = &c->next;
        }
    }
}

void pb_tcp_conn_flush(pb_tcp_conn_t *c)
{
    pb_tcp_outq_t *q = &c->outq;

    if (atomic_load(&c->failure) != PB_OK)
        return;
    if (q->head != q->tail && pthread_mutex_trylock(&c->send_lock) == 0) {
        tcp_outq_seal(c);
        while (q->head != q->tail) {
            ssize_t n =
                send(c->fd, q->buf + q->head, q->tail - q->head, MSG_DONTWAIT | MSG_NOSIGNAL);

            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EPIPE || errno == ECONNRESET)
                    pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL); /* the peer went away */
                else if (errno != EAGAIN)
                    pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, strerror(errno));
                break;
            }
            q->head += (size_t)n;
            q->sent += (uint64_t)n;
        }
        pthread_mutex_unlock(&c->send_lock);
    }
    if (q->head == q->tail && q->cap > TCP_OUTQ_PAUSE) {
        /* a long reply grew it: give the memory back */
        free(q->buf);
        *q = (pb_tcp_outq_t){.sent = q->sent};
    }
    if (atomic_load(&c->failure) == PB_OK)
        tcp_conn_watch(c, pb_tcp_conn_watch_events(c));
}

void pb_tcp_conn_queue(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame, const void *payload)
{
    uint8_t header[PB_TCP_FRAME_HEADER_SIZE];

    if (atomic_load(&c->failure) != PB_OK)
        return;
    pb_tcp_frame_encode(frame, header); /* sealed when it goes out */
    if (!tcp_outq_append(&c->outq, header, sizeof(header), payload, frame->length,
                         c->tx.payload_mac && frame->length > 0 ? PB_TCP_PAYLOAD_MAC_SIZE : 0)) {
        pb_tcp_conn_fail(c, PB_ERR_NO_MEMORY, "out of memory for the send queue");
        return;
    }
    pb_tcp_conn_flush(c);
}

/* The caller, about to block in a send, holds the progress token taken by
 * pb_tcp_reader_take (*@reading): it gives it back first, so that this
 * process keeps reading its sockets while the send waits. */
static void tcp_reader_give_before_blocking(int *reading)
{
    if (reading != NULL && *reading) {
        pb_tcp_reader_give();
        *reading = 0;
    }
}

/* Write @iov to @c, blocking until done (connection sockets are blocking;
 * every other send and receive says MSG_DONTWAIT); the caller holds
 * c->send_lock and nothing else (but the progress token while *@reading:
 * then the first write does not block, and the token is given back before
 * any that may), so this process keeps reading meanwhile.
 * A dead peer or link ends the wait with an error (TCP_USER_TIMEOUT), as
 * does pb_tcp_conn_fail's shutdown. */
static pb_status_t tcp_conn_write(pb_tcp_conn_t *c, struct iovec *iov, int iov_count, int *reading)
{
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iov_count};

    while (msg.msg_iovlen > 0) {
        ssize_t n;

        if (atomic_load_explicit(&c->failure, memory_order_relaxed) != PB_OK)
            return PB_ERR_CONN_ABORTED;
        n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | (reading != NULL && *reading ? MSG_DONTWAIT : 0));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN && reading != NULL && *reading) {
                tcp_reader_give_before_blocking(reading);
                continue;
            }
            return PB_ERR_CONN_ABORTED; /* the reader will see why */
        }
        while (msg.msg_iovlen > 0 && (size_t)n >= msg.msg_iov->iov_len) {
            n -= (ssize_t)msg.msg_iov->iov_len;
            msg.msg_iov++;
            msg.msg_iovlen--;
        }
        if (msg.msg_iovlen > 0) {
            msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + n;
            msg.msg_iov->iov_len -= (size_t)n;
            tcp_reader_give_before_blocking(reading); /* the rest may block */
        }
    }
    return PB_OK;
}

/* pb_tcp_conn_send_frames, and pb_tcp_conn_send_reading when @reading is
 * not NULL. */
static pb_status_t tcp_conn_send_frames(pb_tcp_conn_t *c, const pb_tcp_frame_t *frames,
                                        const void *const *payloads, int count, int *reading)
{
    uint8_t headers[TCP_GATHER_MAX][PB_TCP_FRAME_HEADER_SIZE];
    uint64_t trailers[TCP_GATHER_MAX];
    struct iovec iov[3 * TCP_GATHER_MAX];
    int iov_count = 0;
    pb_status_t status;

    for (int i = 0; i < count; i++)
        pb_tcp_frame_encode(&frames[i], headers[i]);
    if (reading == NULL || !*reading || pthread_mutex_trylock(&c->send_lock) != 0) {
        tcp_reader_give_before_blocking(reading);
        pthread_mutex_lock(&c->send_lock);
    }
    if (PB_UNLIKELY(c->outq.head != c->outq.tail)) {
        /* rare (a DETACH queued while this thread was sending): flush it
         * first, holding pb_tcp.lock only around non-blocking sends */
        tcp_reader_give_before_blocking(reading);
        for (;;) {
            struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
            int left;

            pthread_mutex_lock(&pb_tcp.lock);
            tcp_outq_seal(c);
            while (c->outq.head != c->outq.tail) {
                ssize_t n = send(c->fd, c->outq.buf + c->outq.head, c->outq.tail - c->outq.head,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n <= 0)
                    break;
                c->outq.head += (size_t)n;
                c->outq.sent += (uint64_t)n;
            }
            left = c->outq.head != c->outq.tail;
            pthread_mutex_unlock(&pb_tcp.lock);
            if (!left || atomic_load(&c->failure) != PB_OK)
                break;
            poll(&pfd, 1, TCP_WAIT_SLICE_MS);
        }
    }
    /* sequence numbers in the order the frames go out: under send_lock,
     * after what was queued before (frames queued from now on are sealed
     * when flushed, after these) */
    for (int i = 0; i < count; i++) {
        uint64_t seq = pb_tcp_header_seal(&c->tx, headers[i]);

        iov[iov_count++] = (struct iovec){headers[i], PB_TCP_FRAME_HEADER_SIZE};
        if (frames[i].length == 0)
            continue;
        iov[iov_count++] = (struct iovec){(void *)payloads[i], frames[i].length};
        if (c->tx.payload_mac) {
            trailers[i] = htole64(pb_tcp_payload_mac(&c->tx, seq, payloads[i], frames[i].length));
            iov[iov_count++] = (struct iovec){&trailers[i], PB_TCP_PAYLOAD_MAC_SIZE};
        }
    }
    status = tcp_conn_write(c, iov, iov_count, reading);
    pthread_mutex_unlock(&c->send_lock);
    return status;
}

pb_status_t pb_tcp_conn_send_frames(pb_tcp_conn_t *c, const pb_tcp_frame_t *frames,
                                    const void *const *payloads, int count)
{
    return tcp_conn_send_frames(c, frames, payloads, count, NULL);
}

pb_status_t pb_tcp_conn_send_reading(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame,
                                     const void *payload, int *reading)
{
    return tcp_conn_send_frames(c, frame, &payload, 1, reading);
}

pb_status_t pb_tcp_conn_send(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame, const void *payload)
{
    return pb_tcp_conn_send_frames(c, frame, &payload, 1);
}

void pb_tcp_conn_read_auth(pb_tcp_conn_t *c)
{
    const pb_boot_identity_t *job = pb_boot_identity_get();
    struct sockaddr_in local, remote;
    socklen_t local_len = sizeof(local), remote_len = sizeof(remote);
    pb_tcp_welcome_t welcome = {0};
    pb_tcp_seal_t to_exporter, to_importer;
    uint8_t key[PB_TCP_KEY_LEN];
    const char *why;
    ssize_t n;

    n = recv(c->fd, (char *)&c->auth + c->auth_got, sizeof(c->auth) - c->auth_got, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL); /* gave up before it began */
        return;
    }
    if (n < 0)
        return;
    c->auth_got += (size_t)n;
    if (c->auth_got < sizeof(c->auth))
        return;
    if (getsockname(c->fd, (struct sockaddr *)&local, &local_len) != 0 ||
        getpeername(c->fd, (struct sockaddr *)&remote, &remote_len) != 0) {
        pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL); /* the importer went away */
        return;
    }
    pb_tcp_key_of_job(key);
    why = pb_tcp_auth_check(&c->auth, key, c->nonce, job->id, local.sin_addr.s_addr, local.sin_port,
                            remote.sin_addr.s_addr, remote.sin_port);
    if (why != NULL) {
        /* no answer at all, so no MAC made for a peer that is not of the
         * job: it closes as the exporter would if it had died */
        char addr[INET_ADDRSTRLEN] = "?";

        inet_ntop(AF_INET, &remote.sin_addr, addr, sizeof(addr));
        pb_log_limited(&pb_tcp.log_refusal, TCP_LOG_INTERVAL_MS,
                       "tcp: refused a connection from %s:%u (claiming pid %u): %s", addr,
                       ntohs(remote.sin_port), c->auth.pid, why);
        c->peer_pid = c->auth.pid;
        /* no MAC: nothing the peer could not learn from the close */
        pb_tcp_msg_hdr_set(&welcome.hdr, PB_TCP_MSG_REFUSED);
        (void)send(c->fd, &welcome, sizeof(welcome), MSG_DONTWAIT | MSG_NOSIGNAL);
        pb_tcp_conn_fail(c, PB_ERR_PERMISSION, NULL);
        return;
    }
    c->peer_node = c->auth.node;
    c->peer_pid = c->auth.pid;
    pb_tcp_msg_hdr_set(&welcome.hdr, PB_TCP_MSG_WELCOME);
    /* payload MACs when either side wants them */
    if ((c->auth.flags & PB_TCP_HS_PAYLOAD_MAC) ||
        pb_tcp_payload_mac_wanted(remote.sin_addr.s_addr))
        welcome.flags = PB_TCP_HS_PAYLOAD_MAC;
    welcome.node = job->node_id;
    welcome.pid = (uint32_t)getpid();
    welcome.mac = pb_tcp_welcome_mac(key, c->nonce, &c->auth, &welcome);
    pb_tcp_session_derive(key, c->nonce, &c->auth, welcome.flags & PB_TCP_HS_PAYLOAD_MAC,
                          &to_exporter, &to_importer);
    /* the first bytes on a fresh socket: they fit its buffer */
    if (send(c->fd, &welcome, sizeof(welcome), MSG_DONTWAIT | MSG_NOSIGNAL) !=
        (ssize_t)sizeof(welcome)) {
        pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL);
        return;
    }
    c->tx = to_importer;
    pb_tcp_rx_init(&c->rx, 1, &to_exporter, pb_tcp_exporter_on_header, pb_tcp_exporter_on_frame, c);
    c->established = 1;
}

void pb_tcp_accept_ready(void *arg, uint32_t events)
{
    int listen_fd = (int)(intptr_t)arg;

    (void)events;
    for (int accepted = 0; accepted < TCP_ACCEPTS_PER_PASS; accepted++) {
        pb_tcp_hello_t hello;
        struct sockaddr_in from = {0};
        socklen_t from_len = sizeof(from);
        pb_tcp_conn_t *c;
        int fd;

        fd = accept4(listen_fd, (struct sockaddr *)&from, &from_len, SOCK_CLOEXEC);
        if (fd < 0) {
            if (pb_tcp_accept_failed(errno, "accepting an importer"))
                continue;
            return;
        }
        if (!pb_tcp_handshake_admit(&from)) {
            close(fd);
            continue;
        }
        pb_tcp_socket_tune(fd);
        c = tcp_conn_new(fd, 1);
        if (c == NULL || pb_random_bytes(c->nonce, sizeof(c->nonce)) != 0 ||
            pb_tcp_source_add(fd, EPOLLIN | EPOLLRDHUP, pb_tcp_conn_ready, c, 0, &c->source_id) !=
                PB_OK) {
            pb_log_limited(&pb_tcp.log_accept, TCP_LOG_INTERVAL_MS,
                           "tcp: refusing an importer: out of resources");
            if (c != NULL)
                tcp_conn_free(c);
            close(fd);
            continue;
        }
        c->events = EPOLLIN | EPOLLRDHUP;
        c->peer = from;
        c->accepted_ms = pb_time_now_ms();
        c->next = pb_tcp.conns;
        pb_tcp.conns = c;
        pb_tcp_msg_hdr_set(&hello.hdr, PB_TCP_MSG_HELLO);
        memcpy(hello.nonce, c->nonce, sizeof(hello.nonce));
        if (send(fd, &hello, sizeof(hello), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(hello))
            pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL);
    }
}

pb_status_t pb_tcp_conn_get(const struct sockaddr_in *peer, const uint8_t key[PB_TCP_KEY_LEN],
                            uint32_t node, int64_t deadline, pb_tcp_conn_t **conn_p)
{
    pb_tcp_seal_t to_exporter, to_importer;
    pb_tcp_conn_t *c;
    pb_status_t status;
    int fd;

    pthread_mutex_lock(&pb_tcp.lock);
    for (c = pb_tcp.conns; c != NULL; c = c->next) {
        if (!c->at_exporter && c->peer.sin_addr.s_addr == peer->sin_addr.s_addr &&
            c->peer.sin_port == peer->sin_port && memcmp(c->key, key, PB_TCP_KEY_LEN) == 0 &&
            atomic_load(&c->failure) == PB_OK) {
            c->refs++;
            *conn_p = c;
            pthread_mutex_unlock(&pb_tcp.lock);
            return PB_OK;
        }
    }
    pthread_mutex_unlock(&pb_tcp.lock);

    /* no lock while dialling: the exporter may be this very process.  An
     * exporter that closes before its HELLO is at its limit of handshakes
     * (or died: then the next dial is refused): dial again while time is
     * left; when none is, it is the deadline that ran out, not the segment */
    for (;;) {
        status = pb_tcp_dial(peer, key, node, deadline, &fd, &to_exporter, &to_importer);
        if (status != PB_ERR_CONN_ABORTED)
            break;
        if (pb_time_remaining_ms(deadline, -1) <= TCP_REDIAL_MS) {
            status = PB_ERR_TIMEOUT;
            break;
        }
        poll(NULL, 0, TCP_REDIAL_MS);
    }
    if (status != PB_OK)
        return status;
    c = tcp_conn_new(fd, 0);
    if (c == NULL) {
        close(fd);
        return PB_ERR_NO_MEMORY;
    }
    c->peer = *peer;
    memcpy(c->key, key, PB_TCP_KEY_LEN);
    c->refs = 1;
    c->tx = to_exporter;
    pb_tcp_rx_init(&c->rx, 0, &to_importer, pb_tcp_importer_on_header, pb_tcp_importer_on_frame, c);
    pthread_mutex_lock(&pb_rsm_lock);
    pthread_mutex_lock(&pb_tcp.lock);
    status = pb_tcp_start();
    if (status == PB_OK)
        status =
            pb_tcp_source_add(fd, EPOLLIN | EPOLLRDHUP, pb_tcp_conn_ready, c, 1, &c->source_id);
    if (status == PB_OK) {
        c->events = EPOLLIN | EPOLLRDHUP;
        c->next = pb_tcp.conns;
        pb_tcp.conns = c;
    }
    pthread_mutex_unlock(&pb_tcp.lock);
    pthread_mutex_unlock(&pb_rsm_lock);
    if (status != PB_OK) {
        close(fd);
        tcp_conn_free(c);
        return status;
    }
    *conn_p = c;
    return PB_OK;
}

void pb_tcp_conn_put(pb_tcp_conn_t *c)
{
    if (--c->refs > 0)
        return;
    if (atomic_load(&c->failure) == PB_OK) {
        pb_tcp_source_remove(c->source_id);
        tcp_conn_unlink(c);
    }
    close(c->fd);
    tcp_conn_free(c);
    pb_tcp_accept_resume();
}
