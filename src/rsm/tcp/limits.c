/*
 * The tcp transport's limits on what a peer can make a process hold or
 * do (docs/security.md, Resource limits): connections in their handshake
 * (so many per process and per peer address, each for at most
 * TCP_HANDSHAKE_MS), accepting when descriptors run out (the accepting
 * sockets rest instead of spinning), the replies queued on a connection
 * (back-pressure: a connection whose replies pile up is not read until
 * they drain), LOOKUPs being relayed, and the log lines a peer can cause
 * (rate-limited).  A timer in the epoll set (the limit tick) runs while a
 * handshake is pending or the accepting sockets rest.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rsm/tcp/tcp_impl.h"
#include "util/log.h"
#include "util/time.h"

/* Start (1) or stop (0) the limit tick.  Caller holds pb_tcp.lock. */
static void tcp_limit_tick(int on)
{
    struct itimerspec period = {0};

    if (pb_tcp.limit_fd < 0 || pb_tcp.limit_ticking == on)
        return;
    if (on) {
        period.it_interval.tv_nsec = TCP_LIMIT_TICK_MS * 1000000L;
        period.it_value = period.it_interval;
    }
    if (timerfd_settime(pb_tcp.limit_fd, 0, &period, NULL) == 0)
        pb_tcp.limit_ticking = on;
}

pb_status_t pb_tcp_limits_start(void)
{
    pb_tcp.limit_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (pb_tcp.limit_fd < 0) {
        pb_error("tcp: timerfd_create failed: %m");
        return PB_ERR_NO_RESOURCE;
    }
    if (pb_tcp_source_add(pb_tcp.limit_fd, EPOLLIN, pb_tcp_limits_ready, NULL, 0,
                          &pb_tcp.limit_id) != PB_OK) {
        close(pb_tcp.limit_fd);
        pb_tcp.limit_fd = -1;
        return PB_ERR_NO_RESOURCE;
    }
    pb_tcp.limit_ticking = 0;
    return PB_OK;
}

/* Watch (1) or stop watching (0) every socket that accepts: the listener
 * and each published segment's rendezvous socket. */
static void tcp_accepting_watch(int on)
{
    uint32_t events = on ? EPOLLIN : 0;

    for (int i = 0; i < pb_tcp.listen_count; i++)
        (void)pb_tcp_source_modify(pb_tcp.listen_ids[i], events);
    for (pb_tcp_export_t *te = pb_tcp.published; te != NULL; te = te->next) {
        if (pb_evset_get(&pb_tcp.sources, te->rendezvous_id) != NULL)
            (void)pb_tcp_source_modify(te->rendezvous_id, events);
    }
}

/* Whether @c is an accepted connection still in its handshake. */
static int tcp_conn_pending(const pb_tcp_conn_t *c)
{
    return c->at_exporter && !c->established && atomic_load(&c->failure) == PB_OK;
}

/* Out of descriptors: close the oldest connection in its handshake if it
 * had its TCP_HANDSHAKE_GRACE_MS, so that the connection waiting to be
 * accepted (maybe an importer) gets its descriptor.  @return 1 if one was
 * closed. */
static int tcp_handshake_evict_for_descriptor(void)
{
    pb_tcp_conn_t *oldest = NULL;

    for (pb_tcp_conn_t *c = pb_tcp.conns; c != NULL; c = c->next) {
        if (tcp_conn_pending(c))
            oldest = c;
    }
    if (oldest == NULL || pb_time_now_ms() - oldest->accepted_ms < TCP_HANDSHAKE_GRACE_MS)
        return 0;
    pb_tcp_conn_fail(oldest, PB_ERR_CONN_ABORTED, NULL);
    pb_tcp_reap_failed();
    return 1;
}

int pb_tcp_accept_failed(int err, const char *what)
{
    if ((err == EMFILE || err == ENFILE) && tcp_handshake_evict_for_descriptor()) {
        pb_log_limited(&pb_tcp.log_accept, TCP_LOG_INTERVAL_MS,
                       "tcp: %s: %s; closed the oldest connection in its handshake", what,
                       strerror(err));
        return 1;
    }
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        /* the socket stays readable: watching it would spin.  Rest every
         * accepting socket a while; a closed connection ends the rest early */
        if (pb_tcp.accept_rest_until == 0) {
            tcp_accepting_watch(0);
            tcp_limit_tick(1);
        }
        pb_tcp.accept_rest_until = pb_time_now_ms() + TCP_ACCEPT_REST_MS;
        pb_log_limited(&pb_tcp.log_accept, TCP_LOG_INTERVAL_MS,
                       "tcp: %s: %s; not accepting for %d ms", what, strerror(err),
                       TCP_ACCEPT_REST_MS);
    } else if (err != EAGAIN && err != EINTR && err != ECONNABORTED) {
        pb_log_limited(&pb_tcp.log_accept, TCP_LOG_INTERVAL_MS, "tcp: %s: %s", what, strerror(err));
    }
    return 0;
}

void pb_tcp_accept_resume(void)
{
    if (pb_tcp.accept_rest_until != 0) {
        pb_tcp.accept_rest_until = 0;
        tcp_accepting_watch(1);
    }
}

int pb_tcp_handshake_admit(const struct sockaddr_in *from)
{
    pb_tcp_conn_t *oldest = NULL, *oldest_same = NULL;
    unsigned pending = 0, same = 0;
    int64_t now = pb_time_now_ms();
    pb_tcp_conn_t *victim = NULL;
    char addr[INET_ADDRSTRLEN] = "?";

    /* pb_tcp.conns is newest first: the last seen is the oldest */
    for (pb_tcp_conn_t *c = pb_tcp.conns; c != NULL; c = c->next) {
        if (!tcp_conn_pending(c))
            continue;
        pending++;
        oldest = c;
        if (c->peer.sin_addr.s_addr == from->sin_addr.s_addr) {
            same++;
            oldest_same = c;
        }
    }
    if (same >= TCP_MAX_HANDSHAKES_PER_ADDR)
        victim = oldest_same;
    else if (pending >= TCP_MAX_HANDSHAKES)
        victim = oldest;
    inet_ntop(AF_INET, &from->sin_addr, addr, sizeof(addr));
    if (victim != NULL && now - victim->accepted_ms < TCP_HANDSHAKE_GRACE_MS) {
        /* every one of them had too little time to finish: the newcomer
         * goes (its importer dials again) */
        pb_log_limited(&pb_tcp.log_handshake, TCP_LOG_INTERVAL_MS,
                       "tcp: refused a connection from %s: %u connections in their handshake "
                       "(%u from that address)",
                       addr, pending, same);
        return 0;
    }
    if (victim != NULL) {
        pb_log_limited(&pb_tcp.log_handshake, TCP_LOG_INTERVAL_MS,
                       "tcp: dropped the oldest of %u connections in their handshake (%u from "
                       "%s) for a new one",
                       pending, same, addr);
        pb_tcp_conn_fail(victim, PB_ERR_CONN_ABORTED, NULL);
    }
    tcp_limit_tick(1);
    return 1;
}

void pb_tcp_limits_ready(void *arg, uint32_t events)
{
    int64_t now = pb_time_now_ms();
    uint64_t expirations;
    unsigned expired = 0, pending = 0;

    (void)arg;
    (void)events;
    if (read(pb_tcp.limit_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
        return;
    for (pb_tcp_conn_t *c = pb_tcp.conns; c != NULL; c = c->next) {
        if (!tcp_conn_pending(c))
            continue;
        if (now - c->accepted_ms >= TCP_HANDSHAKE_MS) {
            pb_tcp_conn_fail(c, PB_ERR_TIMEOUT, NULL);
            expired++;
        } else {
            pending++;
        }
    }
    if (expired > 0)
        pb_log_limited(&pb_tcp.log_handshake, TCP_LOG_INTERVAL_MS,
                       "tcp: closed %u connections that did not finish their handshake "
                       "within %d ms",
                       expired, TCP_HANDSHAKE_MS);
    for (pb_tcp_relay_t *relay = pb_tcp.relays, *next; relay != NULL; relay = next) {
        next = relay->next;
        if (now - relay->started_ms >= pb_tcp_request_timeout_ms()) {
            pb_tcp_frame_t request = {.type = PB_TCP_LOOKUP, .tag = relay->tag};

            pb_tcp_reply(relay->conn, &request, PB_ERR_TIMEOUT, 0, 0, 0, NULL, 0);
            pb_tcp_relay_end(relay);
        }
    }
    if (pb_tcp.accept_rest_until != 0 && now >= pb_tcp.accept_rest_until)
        pb_tcp_accept_resume();
    if (pending == 0 && pb_tcp.accept_rest_until == 0 && pb_tcp.relays == NULL)
        tcp_limit_tick(0);
    pb_tcp_reap_failed();
}

/* ---- the reply queue -------------------------------------------------------- */

/* Bytes queued on @c, not yet sent. */
static size_t tcp_outq_bytes(const pb_tcp_conn_t *c)
{
    return c->outq.tail - c->outq.head;
}

int pb_tcp_conn_backlogged(pb_tcp_conn_t *c)
{
    if (!c->read_paused && c->at_exporter && tcp_outq_bytes(c) >= TCP_OUTQ_PAUSE)
        c->read_paused = 1;
    return c->read_paused;
}

uint32_t pb_tcp_conn_watch_events(pb_tcp_conn_t *c)
{
    int queued = c->outq.head != c->outq.tail;

    if (c->read_paused && tcp_outq_bytes(c) <= TCP_OUTQ_RESUME) {
        c->read_paused = 0;
        /* frames left in staging: no new byte may come to report them, so
         * writability (at once) makes pb_tcp_conn_ready read them */
        c->read_kick = c->staging_head != c->staging_tail;
    }
    if (c->read_paused)
        return EPOLLOUT; /* replies drain; requests wait in the socket */
    return EPOLLIN | EPOLLRDHUP | (queued || c->read_kick ? EPOLLOUT : 0);
}

/* ---- LOOKUPs relayed --------------------------------------------------------- */

int pb_tcp_relay_admit(void)
{
    unsigned relays = 0;

    for (pb_tcp_relay_t *relay = pb_tcp.relays; relay != NULL; relay = relay->next)
        relays++;
    if (relays < TCP_MAX_RELAYS) {
        tcp_limit_tick(1); /* (their deadline) */
        return 1;
    }
    pb_log_limited(&pb_tcp.log_relay, TCP_LOG_INTERVAL_MS,
                   "tcp: refused a LOOKUP: %u already being relayed", relays);
    return 0;
}
