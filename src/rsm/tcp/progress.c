/*
 * Progress of the tcp transport: reading the sockets, the progress token,
 * the RSM service thread's callbacks and the watchdog of progress claims,
 * and waiting (spinning, then sleeping in epoll_wait or on a futex word)
 * for replies and signals.  See tcp_impl.h for who reads the sockets.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rsm/service.h"
#include "rsm/tcp/tcp_impl.h"
#include "util/futex.h"
#include "util/log.h"
#include "util/time.h"

_Atomic int pb_tcp_sleepers;
_Atomic int pb_tcp_epoll_sleepers;

void pb_tcp_futex_wake(_Atomic uint32_t *word)
{
    /* the token holder sleeping in epoll_wait is another thread than the
     * caller: the holder itself changes words only once awake */
    if (atomic_load(&pb_tcp_epoll_sleepers) > 0)
        eventfd_write(pb_tcp.wake_fd, 1);
    if (atomic_load(&pb_tcp_sleepers) == 0 && atomic_load(&pb_rsm_event_sleepers) == 0)
        return;
    /* shared (no FUTEX_PRIVATE_FLAG): rsm_intr_signal_wait_pollfd waits on
     * event words with futex_waitv in shared mode */
    pb_futex_wake_all(word);
}

/* Sleep while @word holds @expected, at most @timeout_ms.
 * @return 0, or -1 if a signal handler ran during the wait */
static int tcp_futex_wait(_Atomic uint32_t *word, uint32_t expected, int timeout_ms)
{
    int interrupted = 0;

    atomic_fetch_add(&pb_tcp_sleepers, 1);
    if (atomic_load(word) == expected && pb_futex_wait(word, expected, timeout_ms) != 0 &&
        errno == EINTR)
        interrupted = 1;
    atomic_fetch_sub(&pb_tcp_sleepers, 1);
    return interrupted ? -1 : 0;
}

void pb_tcp_word_bump(_Atomic uint32_t *word)
{
    atomic_fetch_add_explicit(word, 1, memory_order_seq_cst);
    pb_tcp_futex_wake(word);
}

/* Whether @buf, where pb_tcp_rx_next said the next bytes of @c go, is
 * segment memory: a put's payload at the exporter (not a word-last put's,
 * which lands aside first). */
static int tcp_lands_in_segment(const pb_tcp_conn_t *c, const char *buf)
{
    const pb_tcp_rx_t *rx = &c->rx;

    return c->at_exporter && rx->in_payload && rx->frame.type == PB_TCP_PUT &&
           !(rx->frame.flags & PB_TCP_FLAG_WORD_LAST) && rx->dest != NULL && buf >= rx->dest &&
           buf < rx->dest + rx->frame.length;
}

/* The two ways a put's payload lands in an exported segment, each a
 * function of its own that calls nothing else, never inlined: tests/tsan.supp
 * names them (what orders these stores against the exporter's threads is
 * the importer's side of the protocol, which ThreadSanitizer cannot see). */
PB_NOINLINE static ssize_t tcp_segment_recv(int fd, char *to, size_t len)
{
    return recv(fd, to, len, MSG_DONTWAIT);
}

PB_NOINLINE static void tcp_segment_copy(char *to, const char *from, size_t len)
{
    memcpy(to, from, len);
}

/* Read what @c has, up to TCP_READS_PER_PASS receives.  Every staged byte
 * is consumed before returning: epoll reports the socket again only if it
 * has more, so bytes left in staging would wait forever.  Caller holds
 * pb_rsm_lock and pb_tcp.lock.  @return 1 if it read or handled bytes, 0
 * if the socket had none. */
static int tcp_conn_read(pb_tcp_conn_t *c)
{
    int reads = 0, drained = 0, got = 0;

    while (atomic_load(&c->failure) == PB_OK) {
        char *buf;
        const char *data; /* where the bytes read are (a dropped payload's stay staged) */
        size_t len, avail = c->staging_tail - c->staging_head;
        const char *why;
        ssize_t n;

        /* a short read emptied the socket: another recv would only say
         * EAGAIN; whatever arrives next is reported again by epoll */
        if (avail == 0 && (drained || reads == TCP_READS_PER_PASS))
            return got;
        /* its replies pile up (a peer that does not read them): its next
         * requests wait in the socket until they drain */
        if (c->rx.header_got == 0 && !c->rx.in_payload && pb_tcp_conn_backlogged(c)) {
            pb_tcp_conn_flush(c);
            return got;
        }
        pb_tcp_rx_next(&c->rx, pb_tcp.scratch, sizeof(pb_tcp.scratch), &buf, &len);
        if (avail > 0) {
            /* from the staging buffer */
            n = (ssize_t)(avail < len ? avail : len);
            data = c->staging + c->staging_head;
            if (tcp_lands_in_segment(c, buf)) {
                tcp_segment_copy(buf, data, (size_t)n);
                data = buf;
            } else if (buf != pb_tcp.scratch) {
                memcpy(buf, data, (size_t)n);
                data = buf;
            }
            c->staging_head += (size_t)n;
        } else {
            int direct = len >= TCP_STAGING_SIZE;

            /* a long payload straight to its place; the rest via staging */
            c->staging_head = c->staging_tail = 0;
            if (direct && tcp_lands_in_segment(c, buf))
                n = tcp_segment_recv(c->fd, buf, len);
            else
                n = recv(c->fd, direct ? buf : c->staging, direct ? len : TCP_STAGING_SIZE,
                         MSG_DONTWAIT);
            reads++;
            if (n == 0) {
                pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL); /* the peer went away */
                return 1;
            }
            if (n < 0) {
                int err = errno;

                if (err == EINTR)
                    continue;
                if (err == ECONNRESET)
                    pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL); /* the peer died */
                else if (err != EAGAIN)
                    pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, strerror(err));
                return got || err != EAGAIN;
            }
            got = 1;
            /* a short read into staging emptied the socket; a long payload
             * keeps coming, so its reads go on until EAGAIN */
            drained = !direct && (size_t)n < TCP_STAGING_SIZE;
            if (!direct) {
                c->staging_tail = (size_t)n;
                continue;
            }
            data = buf;
        }
        got = 1;
        why = pb_tcp_rx_advance(&c->rx, data, (size_t)n);
        if (why != NULL) {
            pb_tcp_conn_fail(c, PB_ERR_PROTOCOL, why);
            return 1;
        }
    }
    return got;
}

void pb_tcp_wake_ready(void *arg, uint32_t events)
{
    eventfd_t drained;

    eventfd_read(pb_tcp.wake_fd, &drained);
}

void pb_tcp_conn_ready(void *arg, uint32_t events)
{
    pb_tcp_conn_t *c = arg;

    int kick = c->read_kick;

    if (events & EPOLLOUT)
        pb_tcp_conn_flush(c);
    if (c->at_exporter && !c->established) {
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            pb_tcp_conn_read_auth(c);
    } else if (kick || (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
        /* (kick: reading resumed with frames staged, which no readiness reports) */
        c->read_kick = 0;
        tcp_conn_read(c);
        pb_tcp.hot = c;
        if (c->at_exporter)
            pb_tcp.served = c;
    }
}

/* Handle @count events from epoll_wait on the sources (an event for a
 * source removed since is dropped).  Caller holds pb_rsm_lock and
 * pb_tcp.lock. */
static void tcp_handle_events(const struct epoll_event *events, int count)
{
    pb_evset_dispatch(&pb_tcp.sources, events, count);
    pb_tcp_reap_failed();
}

/* tcp_handle_events for a caller that holds neither pb_rsm_lock nor
 * pb_tcp.lock: it takes both around them. */
static void tcp_handle_events_unlocked(const struct epoll_event *events, int count)
{
    pthread_mutex_lock(&pb_rsm_lock);
    pthread_mutex_lock(&pb_tcp.lock);
    tcp_handle_events(events, count);
    pthread_mutex_unlock(&pb_tcp.lock);
    pthread_mutex_unlock(&pb_rsm_lock);
}

/* Handle what the sockets have now, without waiting.  Caller holds the
 * progress token and pb_rsm_lock (the service thread's callbacks). */
static void tcp_read_ready_locked(void)
{
    struct epoll_event ready[TCP_MAX_EVENTS];
    int count = epoll_wait(pb_tcp.sources.epoll_fd, ready, TCP_MAX_EVENTS, 0);

    if (count > 0) {
        pthread_mutex_lock(&pb_tcp.lock);
        tcp_handle_events(ready, count);
        pthread_mutex_unlock(&pb_tcp.lock);
    }
}

/* Arm the service thread's watch of the sockets again, unless a thread
 * claimed their progress (pb_tcp_progress_claim) and polls them: it arms
 * the watch when its claim ends, the watchdog when it stops polling.  The
 * watch is level-triggered, not one-shot: the service thread that served
 * what woke it need not arm it again (a system call less per request
 * served); it disarms it itself only when it finds the token taken
 * (tcp_service_park).  Caller holds pb_rsm_lock. */
static void tcp_service_arm_locked(void)
{
    if (pb_tcp.claims == 0 || atomic_load(&pb_tcp.lapsed))
        pb_rsm_service_rearm(pb_tcp.service_id, EPOLLIN);
    if (atomic_load(&pb_tcp.blind) > 0 && !pb_tcp.blind_armed) {
        pb_rsm_service_rearm(pb_tcp.blind_id, EPOLLIN);
        pb_tcp.blind_armed = 1;
    }
}

pb_status_t pb_tcp_source_add(int fd, uint32_t events, pb_evset_func_t cb, void *arg, int unserved,
                              uint64_t *id_p)
{
    pb_status_t status = pb_evset_add(&pb_tcp.sources, fd, events, cb, arg, id_p);
    struct epoll_event event = {.events = events, .data.u64 = *id_p};

    if (status != PB_OK || unserved)
        return status;
    if (epoll_ctl(pb_tcp.serve_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
        pb_error("tcp: epoll_ctl(ADD, fd %d) failed: %m", fd);
        pb_evset_remove(&pb_tcp.sources, *id_p);
        return PB_ERR_IO;
    }
    return PB_OK;
}

pb_status_t pb_tcp_source_modify(uint64_t id, uint32_t events)
{
    pb_status_t status = pb_evset_modify(&pb_tcp.sources, id, events);
    struct epoll_event event = {.events = events, .data.u64 = id};

    /* (ENOENT: an unserved source) */
    if (status == PB_OK)
        (void)epoll_ctl(pb_tcp.serve_fd, EPOLL_CTL_MOD, pb_evset_get(&pb_tcp.sources, id)->fd,
                        &event);
    return status;
}

void pb_tcp_source_remove(uint64_t id)
{
    pb_evset_entry_t *entry = pb_evset_get(&pb_tcp.sources, id);

    if (entry == NULL)
        return;
    /* (a failed connection's descriptor stays open a while: the service
     * thread's level-triggered watch must not keep reporting it) */
    (void)epoll_ctl(pb_tcp.serve_fd, EPOLL_CTL_DEL, entry->fd, NULL);
    pb_evset_remove(&pb_tcp.sources, id);
}

void pb_tcp_blind(int delta)
{
    atomic_fetch_add(&pb_tcp.blind, delta);
    /* (stopping: the service thread disarms the watch when it next finds
     * nobody blind, pb_tcp_blind_ready) */
    if (delta < 0)
        return;
    pthread_mutex_lock(&pb_rsm_lock);
    if (pb_tcp.started && !pb_tcp.blind_armed) {
        pb_rsm_service_rearm(pb_tcp.blind_id, EPOLLIN);
        pb_tcp.blind_armed = 1;
    }
    pthread_mutex_unlock(&pb_rsm_lock);
}

/* Arm (1) or disarm (0) the service thread's watch of the sockets.  Caller
 * holds neither pb_rsm_lock nor pb_tcp.lock. */
static void tcp_service_watch(int armed)
{
    pthread_mutex_lock(&pb_rsm_lock);
    if (armed) {
        atomic_store(&pb_tcp.service_parked, 0);
        tcp_service_arm_locked();
    } else {
        pb_rsm_service_rearm(pb_tcp.service_id, TCP_WATCH_OFF);
    }
    pthread_mutex_unlock(&pb_rsm_lock);
}

int pb_tcp_reader_take(void)
{
    return pb_tcp.sources.epoll_fd >= 0 && pthread_mutex_trylock(&pb_tcp.progress) == 0;
}

void pb_tcp_lapse_timer(int on)
{
    struct itimerspec period = {0};

    if (on) {
        period.it_interval.tv_nsec = TCP_CLAIM_LAPSE_MS * 1000000L;
        period.it_value = period.it_interval;
    }
    if (pb_tcp.lapse_fd >= 0)
        timerfd_settime(pb_tcp.lapse_fd, 0, &period, NULL);
}

void pb_tcp_progress_claim(int delta)
{
    pthread_mutex_lock(&pb_rsm_lock);
    pb_tcp.claims += delta;
    atomic_store(&pb_tcp.claimed, pb_tcp.claims > 0);
    atomic_store(&pb_tcp.lapsed, 0);
    if (pb_tcp.started && pb_tcp.claims == (delta > 0 ? 1 : 0)) {
        if (delta > 0) {
            pb_rsm_service_rearm(pb_tcp.service_id, TCP_WATCH_OFF);
        } else {
            atomic_store(&pb_tcp.service_parked, 0);
            tcp_service_arm_locked();
        }
        pb_tcp_lapse_timer(delta > 0);
    }
    pthread_mutex_unlock(&pb_rsm_lock);
}

void pb_tcp_lapse_check(void *arg, uint32_t events)
{
    uint64_t expirations, polls = atomic_load(&pb_tcp.polls);

    (void)arg;
    (void)events;
    if (read(pb_tcp.lapse_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
        return;
    if (pb_tcp.claims > 0 && polls == pb_tcp.lapse_polls && !atomic_load(&pb_tcp.lapsed)) {
        /* the claimant computes: what arrives wakes the service thread
         * until it polls again (tcp_claim_resume) */
        atomic_store(&pb_tcp.lapsed, 1);
        if (pthread_mutex_trylock(&pb_tcp.progress) != 0) {
            /* a waiter reads the sockets: it arms the watch when it lets
             * go (as in tcp_service_park) */
            atomic_store(&pb_tcp.service_parked, 1);
            if (pthread_mutex_trylock(&pb_tcp.progress) != 0) {
                pb_tcp.lapse_polls = polls;
                return;
            }
            atomic_store(&pb_tcp.service_parked, 0);
        }
        tcp_read_ready_locked();
        pthread_mutex_unlock(&pb_tcp.progress);
        tcp_service_arm_locked();
    }
    pb_tcp.lapse_polls = polls;
}

/* A claimant polls again after its claim lapsed: it reads the sockets
 * itself from now on, the service thread's watch is disarmed.  Caller
 * holds nothing. */
PB_NOINLINE static void tcp_claim_resume(void)
{
    pthread_mutex_lock(&pb_rsm_lock);
    if (atomic_exchange(&pb_tcp.lapsed, 0) && pb_tcp.claims > 0)
        pb_rsm_service_rearm(pb_tcp.service_id, TCP_WATCH_OFF);
    pthread_mutex_unlock(&pb_rsm_lock);
}

/* Let the progress token go.  The service thread may have found it taken
 * and left its watch disarmed: arm it again, now that nobody reads the
 * sockets. */
static void tcp_token_release(void)
{
    pthread_mutex_unlock(&pb_tcp.progress);
    if (atomic_exchange(&pb_tcp.service_parked, 0)) {
        pthread_mutex_lock(&pb_rsm_lock);
        tcp_service_arm_locked();
        pthread_mutex_unlock(&pb_rsm_lock);
    }
}

void pb_tcp_reader_give(void)
{
    tcp_token_release();
}

/* One pass: wait up to @timeout_ms (-1: until something happens) for
 * socket events and handle them.  When @word is not NULL the wait is for
 * it to change from @seen, and does not start if it already has.  Caller
 * holds the progress token and nothing else; it takes pb_rsm_lock and
 * pb_tcp.lock to handle what arrived, lets the token go, and re-arms the
 * service thread's watch, which may have fired while the token was taken
 * (unless @watch_held: the caller keeps the watch disarmed and re-arms it
 * when its wait is over, tcp_service_watch).
 * @return 0, or -1 if a signal handler ran during the wait. */
static int tcp_progress_pass(int timeout_ms, int watch_held, _Atomic uint32_t *word, uint32_t seen)
{
    struct epoll_event events[TCP_MAX_EVENTS];
    int count, interrupted;

    if (timeout_ms != 0) {
        /* from here a change of @word by another thread rings wake_fd
         * (pb_tcp_futex_wake), so none is missed between the check and the wait */
        atomic_fetch_add(&pb_tcp_epoll_sleepers, 1);
        if (word != NULL && atomic_load(word) != seen)
            timeout_ms = 0;
        count = epoll_wait(pb_tcp.sources.epoll_fd, events, TCP_MAX_EVENTS, timeout_ms);
        atomic_fetch_sub(&pb_tcp_epoll_sleepers, 1);
    } else {
        count = epoll_wait(pb_tcp.sources.epoll_fd, events, TCP_MAX_EVENTS, 0);
    }
    interrupted = count < 0 && errno == EINTR;

    if (count > 0)
        tcp_handle_events_unlocked(events, count);
    if (watch_held)
        pthread_mutex_unlock(&pb_tcp.progress);
    else
        tcp_token_release();
    return interrupted ? -1 : 0;
}

/* The service thread, woken: read the exporter-side connection it read
 * last (pb_tcp.served) straight, if the last such try found bytes.  What
 * else is ready wakes the thread again (its watch is level-triggered).
 * Caller holds the token and pb_rsm_lock.  @return 1 if the connection
 * had bytes, 0 if the caller must poll the set. */
static int tcp_serve_last(void)
{
    int got = 0;

    pthread_mutex_lock(&pb_tcp.lock);
    if (pb_tcp.served_missed) {
        pb_tcp.served_missed = 0;
    } else if (pb_tcp.served != NULL && atomic_load(&pb_tcp.served->failure) == PB_OK &&
               pb_tcp.served->established && !pb_tcp.served->read_kick) {
        got = tcp_conn_read(pb_tcp.served);
        pb_tcp.served_missed = !got;
        if (got) {
            pb_tcp.hot = pb_tcp.served;
            pb_tcp_reap_failed();
        }
    }
    pthread_mutex_unlock(&pb_tcp.lock);
    return got;
}

/* The service thread, woken by its watch @watch_id, found the progress
 * token taken: disarm that watch (level-triggered, it would report the
 * same bytes again at once) for the holder to re-arm on release
 * (tcp_token_release), clearing *@armed_p with it when not NULL; then try
 * the token again in case the holder let go before seeing the flag, and
 * if it is free now, read the sockets and arm the watches here.  Caller
 * holds pb_rsm_lock. */
static void tcp_service_park(uint64_t watch_id, int *armed_p)
{
    pb_rsm_service_rearm(watch_id, TCP_WATCH_OFF);
    if (armed_p != NULL)
        *armed_p = 0;
    atomic_store(&pb_tcp.service_parked, 1);
    if (pthread_mutex_trylock(&pb_tcp.progress) != 0)
        return;
    atomic_store(&pb_tcp.service_parked, 0);
    tcp_read_ready_locked();
    pthread_mutex_unlock(&pb_tcp.progress);
    tcp_service_arm_locked();
}

void pb_tcp_service_ready(void *arg, uint32_t events)
{
    (void)arg;
    (void)events;
    if (pthread_mutex_trylock(&pb_tcp.progress) != 0) {
        tcp_service_park(pb_tcp.service_id, NULL);
        return;
    }
    /* the watch stays armed: what is left, or comes meanwhile, wakes this
     * thread again.  So the exporter-side connection read last is read
     * straight first (no epoll_wait before its recv: usually the request
     * that woke this thread came on it), unless that missed last time */
    if (!tcp_serve_last())
        tcp_read_ready_locked();
    pthread_mutex_unlock(&pb_tcp.progress);
}

void pb_tcp_blind_ready(void *arg, uint32_t events)
{
    (void)arg;
    (void)events;
    if (pthread_mutex_trylock(&pb_tcp.progress) != 0) {
        /* the holder reads, and re-arms on release */
        tcp_service_park(pb_tcp.blind_id, &pb_tcp.blind_armed);
        return;
    }
    tcp_read_ready_locked();
    pthread_mutex_unlock(&pb_tcp.progress);
    if (atomic_load(&pb_tcp.blind) == 0) {
        /* (pb_tcp_blind arms it again, under pb_rsm_lock held here) */
        pb_rsm_service_rearm(pb_tcp.blind_id, TCP_WATCH_OFF);
        pb_tcp.blind_armed = 0;
    }
}

/* Poll the sockets without sleeping until @ready says the wait is over or
 * POSTBOX_TCP_SPIN_US pass (or @deadline, in ms, if sooner), yielding the
 * processor between polls.  The yield is what makes the spin pay: a
 * socket's wake-up is a synchronous one, so the kernel queues the thread
 * it wakes (the peer's service thread, or the peer itself) on the waker's
 * processor, expecting the waker to sleep; a waiter that spun there
 * without yielding kept it waiting for the whole spin (a get of 4 KB
 * between two virtual nodes took 56-276 us instead of 24 us on a loaded
 * 2-core machine, a put ping-pong 200 us per hop).  With nothing else
 * runnable here the yield returns at once.  Caller holds the progress
 * token and keeps it.  @return what @ready said last (it may consume what
 * it waited for: the caller must not ask again), TCP_NOT_YET when the
 * time is up.  @conn, when not NULL, is the connection what it waits for
 * comes on: it is read straight (one recv, no epoll_wait before it) three
 * polls in four, the whole set the fourth. */
static pb_status_t tcp_spin(pb_tcp_ready_func_t ready, void *arg, int64_t deadline,
                            pb_tcp_conn_t *conn)
{
    int64_t until = pb_time_now_ns() + pb_tcp.spin_ns;
    pb_status_t status;
    unsigned polls = 0;

    if (deadline >= 0 && deadline * 1000000 < until)
        until = deadline * 1000000;
    while (pb_time_now_ns() < until) {
        struct epoll_event events[TCP_MAX_EVENTS];
        int count;

        if (conn != NULL && polls++ % TCP_HOT_POLLS != TCP_HOT_POLLS - 1) {
            pthread_mutex_lock(&pb_rsm_lock);
            pthread_mutex_lock(&pb_tcp.lock);
            if (atomic_load(&conn->failure) == PB_OK)
                tcp_conn_read(conn);
            pthread_mutex_unlock(&pb_tcp.lock);
            pthread_mutex_unlock(&pb_rsm_lock);
            status = ready(arg);
            if (status != TCP_NOT_YET)
                return status;
            sched_yield();
            continue;
        }
        count = epoll_wait(pb_tcp.sources.epoll_fd, events, TCP_MAX_EVENTS, 0);
        if (count > 0)
            tcp_handle_events_unlocked(events, count);
        status = ready(arg);
        if (status != TCP_NOT_YET)
            return status;
        sched_yield();
    }
    return TCP_NOT_YET;
}

pb_status_t pb_tcp_wait(pb_tcp_ready_func_t ready, void *arg, _Atomic uint32_t *word,
                        int timeout_ms, int interruptible, pb_tcp_conn_t *reading)
{
    int64_t deadline = timeout_ms < 0 ? -1 : pb_time_now_ms() + timeout_ms;
    /* (reading: this thread holds the token until a pass lets it go, and
     * leaves the service thread's watch armed: the reply it waits for
     * comes over an importer-side connection, which the service thread
     * does not watch, so disarming it would only cost two system calls) */
    int keep_watch = reading != NULL, watch_held = 0, spun = 0;
    pb_tcp_conn_t *conn = reading;
    pb_status_t status;

    for (;;) {
        uint32_t seen = atomic_load(word);
        int slice;

        status = ready(arg);
        if (status != TCP_NOT_YET)
            break;
        /* no deadline: sleep until an event or a wake_fd ring, with no
         * timer (arming one costs a microsecond or two in a VM) */
        slice = deadline < 0 ? -1 : pb_time_remaining_ms(deadline, TCP_WAIT_SLICE_MS);
        if (slice == 0) {
            /* what has reached this host counts: read it before giving up */
            if (!reading)
                pthread_mutex_lock(&pb_tcp.progress);
            reading = NULL;
            tcp_progress_pass(0, watch_held, NULL, 0);
            status = ready(arg);
            if (status == TCP_NOT_YET)
                status = PB_ERR_TIMEOUT;
            break;
        }
        /* (no epoll set: a forked child's inherited segment, which nothing
         * can reach any more; only the timeout ends its wait) */
        if (reading ||
            (pb_tcp.sources.epoll_fd >= 0 && pthread_mutex_trylock(&pb_tcp.progress) == 0)) {
            reading = NULL;
            /* this thread reads the sockets until it returns: the service
             * thread need not wake for them meanwhile */
            if (!watch_held && !keep_watch) {
                tcp_service_watch(0);
                watch_held = 1;
            }
            /* poll the sockets for a while before sleeping: an answer that
             * comes within POSTBOX_TCP_SPIN_US costs no wake-up */
            if (!spun) {
                spun = 1;
                status = tcp_spin(ready, arg, deadline, conn);
                if (status != TCP_NOT_YET) {
                    if (watch_held)
                        pthread_mutex_unlock(&pb_tcp.progress);
                    else
                        tcp_token_release();
                    break;
                }
            }
            /* (the service thread may have finished it before we took the
             * token: then the pass does not sleep) */
            if (tcp_progress_pass(slice, watch_held, word, seen) != 0 && interruptible) {
                status = PB_ERR_INTERRUPTED;
                break;
            }
        } else {
            int interrupted;

            /* the token's holder reads for us; once it lets go, the
             * service thread must (pb_tcp_blind) */
            pb_tcp_blind(1);
            interrupted =
                tcp_futex_wait(word, seen,
                               slice >= 0 && slice < TCP_FUTEX_SLICE_MS ? slice
                                                                        : TCP_FUTEX_SLICE_MS) != 0;
            pb_tcp_blind(-1);
            if (interrupted && interruptible) {
                status = PB_ERR_INTERRUPTED;
                break;
            }
        }
    }
    if (reading) {
        if (watch_held)
            pthread_mutex_unlock(&pb_tcp.progress);
        else
            tcp_token_release();
    }
    if (watch_held)
        tcp_service_watch(1);
    return status;
}

static pb_status_t tcp_export_event_ready(void *arg)
{
    pb_tcp_export_t *te = arg;
    uint32_t pending = atomic_load(&te->events);

    while (pending > 0) {
        if (atomic_compare_exchange_weak(&te->events, &pending, pending - 1))
            return PB_OK;
    }
    return TCP_NOT_YET;
}

/* Read the connection data came on last, straight: no epoll_wait, a
 * system call less on a message's path when the next comes on it too.
 * Caller holds the progress token.  @return 0 if there is no such
 * connection (then the caller polls the whole set). */
static int tcp_poll_hot(void)
{
    int read = 0;

    pthread_mutex_lock(&pb_rsm_lock);
    pthread_mutex_lock(&pb_tcp.lock);
    if (pb_tcp.hot != NULL && atomic_load(&pb_tcp.hot->failure) == PB_OK) {
        tcp_conn_read(pb_tcp.hot);
        pb_tcp_reap_failed();
        read = 1;
    }
    pthread_mutex_unlock(&pb_tcp.lock);
    pthread_mutex_unlock(&pb_rsm_lock);
    return read;
}

pb_status_t pb_tcp_export_signal_wait(pb_rsm_export_t *seg, int timeout_ms)
{
    pb_tcp_export_t *te = seg->tl;

    if (timeout_ms == 0) {
        /* a poll (an MPI rank's, thousands a millisecond): one pass over
         * the sockets, no clock; what reached this host counts, so a pass
         * another thread is making is waited for.  A claimant, which polls
         * again soon, reads only the connection data came on last three
         * times in four */
        pb_status_t status;

        if (pb_tcp.sources.epoll_fd >= 0) {
            uint64_t polls = atomic_fetch_add_explicit(&pb_tcp.polls, 1, memory_order_relaxed);

            if (PB_UNLIKELY(atomic_load_explicit(&pb_tcp.lapsed, memory_order_relaxed)))
                tcp_claim_resume();

            pthread_mutex_lock(&pb_tcp.progress);
            if (polls % TCP_HOT_POLLS != 0 &&
                atomic_load_explicit(&pb_tcp.claimed, memory_order_relaxed) && tcp_poll_hot())
                tcp_token_release();
            else
                tcp_progress_pass(0, 0, NULL, 0);
        }
        status = tcp_export_event_ready(te);
        return status == TCP_NOT_YET ? PB_ERR_TIMEOUT : status;
    }
    /* posts that reached this host count as made: a non-accumulating one
     * still unread must see the event pending, and be dropped, before the
     * wait consumes it */
    if (atomic_load(&te->events) > 0) {
        pthread_mutex_lock(&pb_tcp.progress);
        tcp_progress_pass(0, 0, NULL, 0);
    }
    return pb_tcp_wait(tcp_export_event_ready, te, &te->events, timeout_ms, 1, NULL);
}

static pb_status_t tcp_import_event_ready(void *arg)
{
    pb_tcp_import_t *ti = arg;
    uint32_t generation = atomic_load(&ti->generation);

    if (pb_tcp_import_state(ti) != PB_OK)
        return PB_ERR_CONN_ABORTED;
    if (generation != ti->seen_generation) {
        ti->seen_generation = generation;
        return PB_OK;
    }
    return TCP_NOT_YET;
}

pb_status_t pb_tcp_import_signal_wait(pb_rsm_import_t *im, int timeout_ms)
{
    pb_tcp_import_t *ti = im->tl;
    pb_status_t status =
        pb_tcp_wait(tcp_import_event_ready, ti, &ti->generation, timeout_ms, 1, NULL);

    if (status == PB_OK) {
        /* a wait consumes every event pending, and events that have reached
         * this host are pending even if no one has read them yet */
        pthread_mutex_lock(&pb_tcp.progress);
        tcp_progress_pass(0, 0, NULL, 0);
        ti->seen_generation = atomic_load(&ti->generation);
    }
    return status;
}

const void *pb_tcp_export_event_word(pb_rsm_export_t *seg)
{
    return &((pb_tcp_export_t *)seg->tl)->events;
}

const void *pb_tcp_import_event_word(pb_rsm_import_t *im)
{
    return &((pb_tcp_import_t *)im->tl)->generation;
}

void pb_tcp_import_event_waiters(pb_rsm_import_t *im, int delta)
{
    (void)im;
    pb_tcp_blind(delta);
}
