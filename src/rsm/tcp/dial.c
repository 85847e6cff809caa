/*
 * The tcp transport's way to an exporter: the node's rendezvous socket
 * (an abstract Unix socket named after the segment), the importer's side
 * of the handshake, and, for nodes whose rendezvous sockets this process
 * cannot see, a LOOKUP asked over tcp of a process of that node, which
 * relays it to its own node's rendezvous socket.  The same LOOKUP, flagged
 * PB_TCP_FLAG_OFI, finds an ofi transport's exporter on such a node (its
 * node's ofi rendezvous socket says where the exporter listens on TCP).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <postbox/job.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "boot/identity.h"
#include "rsm/ofi/rendezvous_msg.h"
#include "rsm/rendezvous.h"
#include "rsm/tcp/tcp_impl.h"
#include "util/log.h"
#include "util/random.h"
#include "util/sock.h"
#include "util/time.h"

/* Connect to the rendezvous socket of (@node, @segid) under @prefix (this
 * transport's, or the ofi transport's for a relayed LOOKUP), if it is on
 * a node whose abstract sockets this process sees: *fd_p then waits for
 * the directory message, or the ofi exporter's HELLO (non-blocking).  While its backlog is full the
 * connect waits up to @timeout_ms for room (0: not at all; only an
 * importer's own lookup, which holds no lock, waits: the kernel wakes it
 * when room is made, ahead of a flood of non-blocking connects).  Any
 * local user can bind an abstract name, so the process that bound it must
 * be of this user (SO_PEERCRED).
 * @return PB_OK, PB_ERR_NOT_PUBLISHED (no such name), PB_ERR_UNREACHABLE
 * (not a node of the job), PB_ERR_PERMISSION (another user bound the
 * name; logged), PB_ERR_TIMEOUT (its backlog stayed full),
 * PB_ERR_NO_RESOURCE. */
static pb_status_t tcp_rendezvous_connect(const char *prefix, rsm_node_id_t node,
                                          rsm_memseg_id_t segid, int timeout_ms, int *fd_p)
{
    struct sockaddr_un addr;
    struct timeval wait = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    struct ucred cred = {.pid = -1, .uid = (uid_t)-1};
    socklen_t len, cred_len = sizeof(cred);
    int fd =
        socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | (timeout_ms > 0 ? 0 : SOCK_NONBLOCK), 0);
    int ret;

    if (fd < 0)
        return PB_ERR_NO_RESOURCE;
    if (timeout_ms > 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
    pb_rsm_rendezvous_name(&addr, &len, prefix, node, segid);
    do {
        ret = connect(fd, (struct sockaddr *)&addr, len);
    } while (ret != 0 && errno == EINTR);
    if (ret == 0 && timeout_ms > 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
        ret = -1;
    if (ret != 0) {
        int job_nodes = postbox_job_node_count();
        int err = errno;

        close(fd);
        if (err == EAGAIN || err == EINPROGRESS)
            return PB_ERR_TIMEOUT;
        if (err != ECONNREFUSED && err != ENOENT) {
            pb_error("tcp: rendezvous with segment %#x failed: %s", segid, strerror(err));
            return PB_ERR_NO_RESOURCE;
        }
        /* outside a launched job any node may exist; inside, only its own */
        return job_nodes > 0 && (int64_t)node >= job_nodes ? PB_ERR_UNREACHABLE
                                                           : PB_ERR_NOT_PUBLISHED;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 || cred.uid != geteuid()) {
        pb_log_limited(&pb_tcp.log_refusal, TCP_LOG_INTERVAL_MS,
                       "tcp: the rendezvous name of segment %#x on node %u is held by "
                       "another user's process (uid %d, pid %d): refused",
                       segid, node, (int)cred.uid, (int)cred.pid);
        close(fd);
        return PB_ERR_PERMISSION;
    }
    *fd_p = fd;
    return PB_OK;
}

/* Whether @got bytes read from a rendezvous socket into @dir are a
 * directory message.  @return PB_OK, PB_ERR_NOT_PUBLISHED (closed without
 * one: the exporter went away), PB_ERR_PROTOCOL (something else). */
static pb_status_t tcp_directory_check(rsm_memseg_id_t segid, ssize_t got,
                                       const pb_tcp_directory_t *dir)
{
    if (got != (ssize_t)sizeof(*dir))
        return PB_ERR_NOT_PUBLISHED;
    if (!pb_tcp_msg_hdr_ok(&dir->hdr, PB_TCP_MSG_DIRECTORY)) {
        pb_warn("tcp: the rendezvous of segment %#x answered in a foreign format", segid);
        return PB_ERR_PROTOCOL;
    }
    return PB_OK;
}

pb_status_t pb_tcp_lookup(rsm_node_id_t node, rsm_memseg_id_t segid, pb_tcp_directory_t *dir,
                          int timeout_ms)
{
    int64_t deadline = pb_time_now_ms() + timeout_ms;
    struct pollfd pfd = {.events = POLLIN};
    pb_status_t status =
        tcp_rendezvous_connect(TCP_RENDEZVOUS_PREFIX, node, segid, timeout_ms, &pfd.fd);
    ssize_t got;

    if (status != PB_OK)
        return status;
    if (poll(&pfd, 1, pb_time_remaining_ms(deadline, -1)) != 1) {
        close(pfd.fd);
        return PB_ERR_TIMEOUT;
    }
    got = recv(pfd.fd, dir, sizeof(*dir), MSG_DONTWAIT);
    close(pfd.fd);
    return tcp_directory_check(segid, got, dir);
}

pb_status_t pb_tcp_dial(const struct sockaddr_in *peer, const uint8_t key[PB_TCP_KEY_LEN],
                        uint32_t node, int64_t deadline, int *fd_p, pb_tcp_seal_t *to_exporter,
                        pb_tcp_seal_t *to_importer)
{
    const pb_boot_identity_t *job = pb_boot_identity_get();
    pb_tcp_hello_t hello;
    pb_tcp_auth_t auth = {0};
    pb_tcp_welcome_t welcome;
    struct sockaddr_in source;
    socklen_t source_len = sizeof(source);
    pb_status_t status;
    const char *why;
    int fd, err;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return PB_ERR_NO_RESOURCE;
    pb_tcp_socket_tune(fd);
    status = pb_sock_connect(fd, (const struct sockaddr *)peer, sizeof(*peer), deadline, &err);
    if (status == PB_ERR_TIMEOUT) {
        pb_debug("tcp: connect to port %u: no answer before the deadline", ntohs(peer->sin_port));
        goto err;
    }
    if (err == 0 && getsockname(fd, (struct sockaddr *)&source, &source_len) != 0)
        err = errno;
    if (err != 0) {
        /* no route or no answer: the node is out of reach; otherwise the
         * process is gone (refused, reset), and its segment with it */
        pb_debug("tcp: connect to port %u: %s", ntohs(peer->sin_port), strerror(err));
        status = err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == ENETDOWN ||
                         err == EHOSTDOWN
                     ? PB_ERR_UNREACHABLE
                     : PB_ERR_NOT_PUBLISHED;
        goto err;
    }
    /* (closed before its HELLO: PB_ERR_CONN_ABORTED, see tcp_impl.h) */
    status = pb_sock_recv_msg(fd, &hello, sizeof(hello), deadline);
    if (status != PB_OK)
        goto err;
    if (!pb_tcp_msg_hdr_ok(&hello.hdr, PB_TCP_MSG_HELLO)) {
        status = PB_ERR_PROTOCOL;
        goto err;
    }
    pb_tcp_msg_hdr_set(&auth.hdr, PB_TCP_MSG_AUTH);
    auth.node = job->node_id;
    auth.pid = (uint32_t)getpid();
    snprintf(auth.job_id, sizeof(auth.job_id), "%s", job->id);
    if (pb_random_bytes(auth.nonce, sizeof(auth.nonce)) != 0) {
        status = PB_ERR_NO_RESOURCE;
        goto err;
    }
    /* what this process means to reach, and from where: a relay between
     * it and the exporter changes one or the other */
    auth.dial_addr = peer->sin_addr.s_addr;
    auth.dial_port = peer->sin_port;
    auth.source_addr = source.sin_addr.s_addr;
    auth.source_port = source.sin_port;
    auth.flags = pb_tcp_payload_mac_wanted(peer->sin_addr.s_addr) ? PB_TCP_HS_PAYLOAD_MAC : 0;
    auth.mac = pb_tcp_auth_mac(key, hello.nonce, &auth);
    status = pb_sock_send_msg(fd, &auth, sizeof(auth), deadline);
    if (status == PB_OK)
        status = pb_sock_recv_msg(fd, &welcome, sizeof(welcome), deadline);
    if (status == PB_ERR_CONN_ABORTED)
        status = PB_ERR_NOT_PUBLISHED; /* the exporter died meanwhile */
    if (status != PB_OK)
        goto err;
    if (pb_tcp_msg_hdr_ok(&welcome.hdr, PB_TCP_MSG_REFUSED)) {
        /* unauthenticated (an exporter MACs nothing for a peer it does not
         * admit), but believing it costs nothing a close would not */
        pb_warn("tcp: the process at port %u refused our connection: not of this job, or "
                "it did not see the address we dialed (a relay, or address translation)",
                ntohs(peer->sin_port));
        status = PB_ERR_PERMISSION;
        goto err;
    }
    why = pb_tcp_welcome_check(&welcome, key, hello.nonce, &auth, node);
    if (why != NULL) {
        /* not a process of this job: trust nothing it says */
        pb_warn("tcp: the process at port %u does not authenticate: %s", ntohs(peer->sin_port),
                why);
        status = PB_ERR_PERMISSION;
        goto err;
    }
    /* blocking from now on: see conn.c, tcp_conn_write */
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        status = PB_ERR_IO;
        goto err;
    }
    pb_tcp_session_derive(key, hello.nonce, &auth, welcome.flags & PB_TCP_HS_PAYLOAD_MAC,
                          to_exporter, to_importer);
    *fd_p = fd;
    return PB_OK;

err:
    close(fd);
    return status;
}

/* "a.b.c.d[,a.b.c.d...]:port" (a KVS entry) into @addrs and *@port_p.
 * @return the number of addresses, 0 when @text is malformed. */
static int tcp_parse_endpoint(const char *text, uint32_t addrs[TCP_MAX_RAILS], uint16_t *port_p)
{
    char list[TCP_MAX_RAILS * (INET_ADDRSTRLEN + 1)];
    const char *colon = strrchr(text, ':');
    char *end;
    unsigned long port;

    if (colon == NULL || (size_t)(colon - text) >= sizeof(list))
        return 0;
    memcpy(list, text, (size_t)(colon - text));
    list[colon - text] = '\0';
    port = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || port == 0 || port > 65535)
        return 0;
    *port_p = (uint16_t)port;
    return pb_tcp_parse_addrs(list, addrs);
}

/* The addresses (one per rail) and port rank @rank put in the job KVS, if
 * it runs on @node.  @return how many addresses; 0 when it runs elsewhere
 * or put none. */
static int tcp_rank_endpoint(int rank, rsm_node_id_t node, uint32_t addrs[TCP_MAX_RAILS],
                             uint16_t *port_p)
{
    char kvs_key[32], value[128];

    if (postbox_job_node(rank) != node)
        return 0;
    snprintf(kvs_key, sizeof(kvs_key), TCP_KVS_KEY_FMT, rank);
    if (postbox_job_kvs_get(kvs_key, value, sizeof(value)) != 0)
        return 0;
    return tcp_parse_endpoint(value, addrs, port_p);
}

int pb_tcp_node_addrs(rsm_node_id_t node, uint32_t addrs[TCP_MAX_RAILS])
{
    int size = postbox_job_size();

    for (int rank = 0; rank < size; rank++) {
        uint16_t port;
        int count = tcp_rank_endpoint(rank, node, addrs, &port);

        if (count > 0)
            return count;
    }
    return 0;
}

pb_status_t pb_tcp_relay_lookup(rsm_node_id_t node, rsm_memseg_id_t segid, uint16_t flags,
                                const uint8_t key[PB_TCP_KEY_LEN], int64_t deadline,
                                struct sockaddr_in *peer_p)
{
    pb_status_t status = PB_ERR_UNREACHABLE;
    int size = postbox_job_size();

    for (int rank = 0; rank < size && status != PB_ERR_TIMEOUT; rank++) {
        pb_tcp_lookup_t question = {.node = node, .segid = segid};
        pb_tcp_frame_t frame = {.type = PB_TCP_LOOKUP, .flags = flags, .length = sizeof(question)};
        pb_tcp_location_t where;
        pb_tcp_request_t req = {.dst = (char *)&where, .dst_len = sizeof(where)};
        struct sockaddr_in relay = {.sin_family = AF_INET};
        uint32_t addrs[TCP_MAX_RAILS];
        pb_tcp_conn_t *c = NULL;
        uint16_t port;
        int count = tcp_rank_endpoint(rank, node, addrs, &port);

        if (count == 0)
            continue;
        relay.sin_port = htons(port);
        pthread_mutex_lock(&pb_tcp.connect_lock);
        for (int i = 0; i < count && c == NULL; i++) {
            relay.sin_addr.s_addr = addrs[i];
            status = pb_tcp_conn_get(&relay, key, node, deadline, &c);
            if (status != PB_OK)
                c = NULL;
        }
        pthread_mutex_unlock(&pb_tcp.connect_lock);
        if (c == NULL)
            continue; /* try the node's next process */
        status = pb_tcp_request(c, &frame, &question, &req, deadline);
        pthread_mutex_lock(&pb_tcp.lock);
        pb_tcp_conn_put(c);
        pthread_mutex_unlock(&pb_tcp.lock);
        if (status == PB_OK) {
            *peer_p = (struct sockaddr_in){.sin_family = AF_INET,
                                           .sin_addr.s_addr = where.addr,
                                           .sin_port = htons(where.port)};
            return PB_OK;
        }
        /* a definite answer ends the search; a rank that could not answer
         * (gone) passes it on, while time is left */
        if (status != PB_ERR_CONN_ABORTED && status != PB_ERR_TIMEOUT)
            return status;
        if (pb_time_remaining_ms(deadline, -1) == 0)
            status = PB_ERR_TIMEOUT;
    }
    return status;
}

void pb_tcp_relay_end(pb_tcp_relay_t *relay)
{
    for (pb_tcp_relay_t **p = &pb_tcp.relays; *p != NULL; p = &(*p)->next) {
        if (*p == relay) {
            *p = relay->next;
            break;
        }
    }
    pb_tcp_source_remove(relay->source_id);
    close(relay->fd);
    free(relay);
}

/* The ofi rendezvous socket of a relayed LOOKUP greeted (or closed):
 * answer with where its exporter listens on TCP, and close (the exporter
 * forgets a connection that ends before its request).  Caller holds
 * pb_tcp.lock. */
static void tcp_relay_ofi_ready(pb_tcp_relay_t *relay)
{
    pb_tcp_frame_t request = {.type = PB_TCP_LOOKUP, .tag = relay->tag};
    pb_ofi_rv_hello_t hello;
    ssize_t got = recv(relay->fd, &hello, sizeof(hello), MSG_DONTWAIT);

    if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (got != (ssize_t)sizeof(hello)) {
        /* closed without a greeting: withdrawn meanwhile */
        pb_tcp_reply(relay->conn, &request, PB_ERR_NOT_PUBLISHED, 0, 0, 0, NULL, 0);
    } else if (hello.magic != PB_OFI_RV_MAGIC || hello.type != OFI_RV_HELLO) {
        pb_warn("tcp: the ofi rendezvous of segment %#x answered in a foreign format",
                relay->segid);
        pb_tcp_reply(relay->conn, &request, PB_ERR_PROTOCOL, 0, 0, 0, NULL, 0);
    } else if (hello.tcp_port == 0) {
        /* its exporter takes no connection from other nodes (no job
         * secret, or no address to listen on) */
        pb_tcp_reply(relay->conn, &request, PB_ERR_UNREACHABLE, 0, 0, 0, NULL, 0);
    } else {
        pb_tcp_location_t where = {.addr = hello.tcp_addr, .port = hello.tcp_port};

        pb_tcp_reply(relay->conn, &request, PB_OK, 0, 0, 0, &where, sizeof(where));
    }
    pb_tcp_relay_end(relay);
}

/* The node's rendezvous socket answered (or closed): answer the LOOKUP.
 * Caller holds pb_tcp.lock. */
static void tcp_relay_ready(void *arg, uint32_t events)
{
    pb_tcp_relay_t *relay = arg;
    pb_tcp_frame_t request = {.type = PB_TCP_LOOKUP, .tag = relay->tag};
    pb_tcp_directory_t dir;
    ssize_t got;
    pb_status_t status;

    if (relay->ofi) {
        tcp_relay_ofi_ready(relay);
        return;
    }
    got = recv(relay->fd, &dir, sizeof(dir), MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    status = tcp_directory_check(relay->segid, got, &dir);
    if (status == PB_OK) {
        pb_tcp_location_t where = {.addr = dir.addr, .port = dir.port};

        pb_tcp_reply(relay->conn, &request, PB_OK, 0, 0, 0, &where, sizeof(where));
    } else {
        pb_tcp_reply(relay->conn, &request, status, 0, 0, 0, NULL, 0);
    }
    pb_tcp_relay_end(relay);
}

void pb_tcp_serve_lookup(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame)
{
    pb_tcp_location_t where = {.addr = pb_tcp.addr, .port = pb_tcp.port};
    int ofi = (frame->flags & PB_TCP_FLAG_OFI) != 0;
    pb_tcp_relay_t *relay;
    pb_status_t status;
    int fd;

    if (c->export_rx.lookup.node != pb_boot_identity_get()->node_id) {
        pb_tcp_reply(c, frame, PB_ERR_UNREACHABLE, 0, 0, 0, NULL, 0); /* ask that node */
        return;
    }
    if (!ofi && pb_tcp_published_find(c->export_rx.lookup.segid) != NULL) {
        pb_tcp_reply(c, frame, PB_OK, 0, 0, 0, &where, sizeof(where));
        return;
    }
    if (!pb_tcp_relay_admit()) {
        pb_tcp_reply(c, frame, PB_ERR_NO_RESOURCE, 0, 0, 0, NULL, 0);
        return;
    }
    status = tcp_rendezvous_connect(ofi ? OFI_RENDEZVOUS_PREFIX : TCP_RENDEZVOUS_PREFIX,
                                    c->export_rx.lookup.node, c->export_rx.lookup.segid, 0, &fd);
    if (status != PB_OK) {
        pb_tcp_reply(c, frame, status, 0, 0, 0, NULL, 0);
        return;
    }
    relay = calloc(1, sizeof(*relay));
    if (relay == NULL ||
        pb_tcp_source_add(fd, EPOLLIN, tcp_relay_ready, relay, 0, &relay->source_id) != PB_OK) {
        free(relay);
        close(fd);
        pb_tcp_reply(c, frame, PB_ERR_NO_RESOURCE, 0, 0, 0, NULL, 0);
        return;
    }
    relay->next = pb_tcp.relays;
    relay->conn = c;
    relay->tag = frame->tag;
    relay->segid = c->export_rx.lookup.segid;
    relay->fd = fd;
    relay->ofi = ofi;
    relay->started_ms = pb_time_now_ms();
    pb_tcp.relays = relay;
}

void pb_tcp_rendezvous_ready(void *arg, uint32_t events)
{
    pb_tcp_export_t *te = arg;
    int listen_fd = pb_evset_get(&pb_tcp.sources, te->rendezvous_id)->fd;

    (void)events;
    /* each is answered and closed at once: none is held; a bounded number
     * per pass, so that a flood of them does not starve the other sockets */
    for (int served = 0; served < TCP_ACCEPTS_PER_PASS; served++) {
        pb_tcp_directory_t dir = {0};
        struct ucred cred = {.pid = -1, .uid = (uid_t)-1};
        socklen_t cred_len = sizeof(cred);
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

        if (fd < 0) {
            if (pb_tcp_accept_failed(errno, "answering a rendezvous"))
                continue;
            return;
        }
        /* only this user's processes learn where the exporter listens */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 ||
            cred.uid != geteuid()) {
            pb_log_limited(&pb_tcp.log_refusal, TCP_LOG_INTERVAL_MS,
                           "tcp: refused a rendezvous for segment %#x from another user's "
                           "process (uid %d, pid %d)",
                           te->segid, (int)cred.uid, (int)cred.pid);
            close(fd);
            continue;
        }
        pb_tcp_msg_hdr_set(&dir.hdr, PB_TCP_MSG_DIRECTORY);
        dir.addr = pb_tcp.addr;
        dir.port = pb_tcp.port;
        if (send(fd, &dir, sizeof(dir), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(dir))
            pb_debug("tcp: rendezvous reply for segment %#x not sent: %m", te->segid);
        close(fd);
    }
}
