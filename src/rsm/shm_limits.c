/*
 * The shm transport's limits on what a peer can make this process hold
 * through its rendezvous sockets (docs/security.md, shm segments):
 * connections in their handshake are capped per process and closed after
 * SHM_HANDSHAKE_MS, and running out of descriptors rests the rendezvous
 * sockets instead of spinning.  A timer (the limit tick) runs while a
 * handshake is pending or the sockets rest.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "rsm/service.h"
#include "rsm/shm_impl.h"
#include "util/log.h"
#include "util/time.h"

pb_shm_limits_t pb_shm_limits = {.tick_fd = -1};

void pb_shm_pending_append(pb_shm_conn_t *conn)
{
    conn->pending = 1;
    conn->older = pb_shm_limits.newest;
    conn->newer = NULL;
    if (pb_shm_limits.newest != NULL)
        pb_shm_limits.newest->newer = conn;
    else
        pb_shm_limits.oldest = conn;
    pb_shm_limits.newest = conn;
    pb_shm_limits.pending++;
}

void pb_shm_pending_remove(pb_shm_conn_t *conn)
{
    if (!conn->pending)
        return;
    if (conn->older != NULL)
        conn->older->newer = conn->newer;
    else
        pb_shm_limits.oldest = conn->newer;
    if (conn->newer != NULL)
        conn->newer->older = conn->older;
    else
        pb_shm_limits.newest = conn->older;
    conn->older = conn->newer = NULL;
    conn->pending = 0;
    pb_shm_limits.pending--;
}

/* Start (1) or stop (0) the limit tick. */
void pb_shm_limit_tick(int on)
{
    struct itimerspec period = {0};

    if (pb_shm_limits.tick_fd < 0 || pb_shm_limits.ticking == on)
        return;
    if (on) {
        period.it_interval.tv_nsec = SHM_LIMIT_TICK_MS * 1000000L;
        period.it_value = period.it_interval;
    }
    if (timerfd_settime(pb_shm_limits.tick_fd, 0, &period, NULL) == 0)
        pb_shm_limits.ticking = on;
}

/* Watch (1) or stop watching (0) every rendezvous socket of this process. */
static void shm_accepting_watch(int on)
{
    for (pb_shm_export_t *e = pb_shm_exports; e != NULL; e = e->next) {
        if (e->listening)
            (void)pb_rsm_service_rearm(e->listen_id, on ? EPOLLIN : 0);
    }
}

/* End a rest of the rendezvous sockets, if they rest. */
void pb_shm_accept_resume(void)
{
    if (pb_shm_limits.rest_until != 0) {
        pb_shm_limits.rest_until = 0;
        shm_accepting_watch(1);
    }
}

/* The limit tick fired: close the connections whose handshake took longer
 * than SHM_HANDSHAKE_MS, end a rest that is over, and stop the tick when
 * there is nothing left to watch. */
static void shm_limits_ready(void *arg, uint32_t events)
{
    int64_t now = pb_time_now_ms();
    uint64_t expirations;
    unsigned expired = 0;

    (void)arg;
    (void)events;
    (void)!read(pb_shm_limits.tick_fd, &expirations, sizeof(expirations));
    while (pb_shm_limits.oldest != NULL &&
           now - pb_shm_limits.oldest->accepted_ms >= SHM_HANDSHAKE_MS) {
        pb_shm_conn_close(pb_shm_limits.oldest);
        expired++;
    }
    if (expired > 0)
        pb_log_limited(&pb_shm_limits.log_handshake, SHM_LOG_INTERVAL_MS,
                       "shm: closed %u rendezvous connections that did not finish their "
                       "handshake within %d ms",
                       expired, SHM_HANDSHAKE_MS);
    if (pb_shm_limits.rest_until != 0 && now >= pb_shm_limits.rest_until)
        pb_shm_accept_resume();
    if (pb_shm_limits.pending == 0 && pb_shm_limits.rest_until == 0)
        pb_shm_limit_tick(0);
}

/* A forked child has no service thread, and the parent's descriptors are
 * closed in it (rsm/service.c): forget the tick and the handshakes. */
static void shm_limits_atfork_child(void)
{
    while (pb_shm_limits.oldest != NULL)
        pb_shm_pending_remove(pb_shm_limits.oldest);
    pb_shm_limits.tick_fd = -1;
    pb_shm_limits.tick_id = 0;
    pb_shm_limits.ticking = 0;
    pb_shm_limits.rest_until = 0;
}

/* Create the limit tick, once per process.  @return PB_OK or
 * PB_ERR_NO_RESOURCE (logged). */
pb_status_t pb_shm_limits_start(void)
{
    int fd;

    if (pb_shm_limits.tick_fd >= 0)
        return PB_OK;
    if (!pb_shm_limits.atfork_registered) {
        pthread_atfork(NULL, NULL, shm_limits_atfork_child);
        pb_shm_limits.atfork_registered = 1;
    }
    fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (fd < 0) {
        pb_error("shm: timerfd_create failed: %m");
        return PB_ERR_NO_RESOURCE;
    }
    if (pb_rsm_service_add(fd, EPOLLIN, shm_limits_ready, NULL, &pb_shm_limits.tick_id) != PB_OK) {
        close(fd);
        return PB_ERR_NO_RESOURCE;
    }
    pb_shm_limits.tick_fd = fd;
    pb_shm_limits.ticking = 0;
    return PB_OK;
}

/* accept4 on the rendezvous socket of @seg failed with @err.  Out of
 * descriptors, close the oldest connection in its handshake if it had its
 * SHM_HANDSHAKE_GRACE_MS, so that the connection waiting to be accepted
 * (maybe an importer) gets its descriptor, and @return 1 (accept again).
 * Otherwise rest every rendezvous socket SHM_ACCEPT_REST_MS: the socket
 * stays readable, so watching it would spin.  Logged, rate-limited. */
int pb_shm_accept_failed(const pb_rsm_export_t *seg, int err)
{
    const pb_shm_conn_t *oldest = pb_shm_limits.oldest;

    if (err == EAGAIN || err == EINTR || err == ECONNABORTED)
        return 0;
    if ((err == EMFILE || err == ENFILE) && oldest != NULL &&
        pb_time_now_ms() - oldest->accepted_ms >= SHM_HANDSHAKE_GRACE_MS) {
        pb_shm_conn_close(pb_shm_limits.oldest);
        pb_log_limited(&pb_shm_limits.log_accept, SHM_LOG_INTERVAL_MS,
                       "shm: accept on the rendezvous of segment %#x: %s; closed the oldest "
                       "connection in its handshake",
                       seg->segid, strerror(err));
        return 1;
    }
    if (pb_shm_limits.rest_until == 0) {
        shm_accepting_watch(0);
        pb_shm_limit_tick(1);
    }
    pb_shm_limits.rest_until = pb_time_now_ms() + SHM_ACCEPT_REST_MS;
    pb_log_limited(&pb_shm_limits.log_accept, SHM_LOG_INTERVAL_MS,
                   "shm: accept on the rendezvous of segment %#x: %s; not accepting for %d ms",
                   seg->segid, strerror(err), SHM_ACCEPT_REST_MS);
    return 0;
}

/* Whether a new connection to the rendezvous of @seg may start its
 * handshake: below SHM_MAX_HANDSHAKES yes; at the cap the oldest goes for
 * it, unless even the oldest is younger than SHM_HANDSHAKE_GRACE_MS (then
 * the newcomer goes, and its importer dials again).  Logged, rate-limited. */
int pb_shm_handshake_admit(const pb_rsm_export_t *seg)
{
    if (pb_shm_limits.pending < SHM_MAX_HANDSHAKES)
        return 1;
    if (pb_time_now_ms() - pb_shm_limits.oldest->accepted_ms < SHM_HANDSHAKE_GRACE_MS) {
        pb_log_limited(&pb_shm_limits.log_handshake, SHM_LOG_INTERVAL_MS,
                       "shm: turned away a connection to the rendezvous of segment %#x: %u "
                       "connections in their handshake",
                       seg->segid, pb_shm_limits.pending);
        return 0;
    }
    pb_log_limited(&pb_shm_limits.log_handshake, SHM_LOG_INTERVAL_MS,
                   "shm: closed the oldest of %u connections in their handshake for a new "
                   "one (to segment %#x)",
                   pb_shm_limits.pending, seg->segid);
    pb_shm_conn_close(pb_shm_limits.oldest);
    return 1;
}
