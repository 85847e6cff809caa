/*
 * Progress and waiting (engine.h).
 *
 * Waiting (pb_eng_wait_until): poll, spinning POSTBOX_SPIN times, then
 * yield the CPU POSTBOX_YIELDS times, then sleep on the doorbell's RSM
 * signal until a peer writes (peers on the node signal only a rank that
 * announced it sleeps; tcp peers always signal), so an idle rank holds no
 * core.  Under MPI_THREAD_MULTIPLE one waiting thread sleeps on the
 * doorbell and the others wait for it (lock.h).
 *
 * The spin adapts (spin_budget): a rank that spins while the peer it waits
 * for is runnable on the same core (more ranks than free cores: other work
 * on the machine) only delays that peer, by the whole spin (2000 polls are
 * about 55 us of PAUSE on the development VM's EPYC).  A sched_yield that
 * gave the processor away, taking longer than YIELD_GAVE_AWAY_NS, is the
 * sign: the budget halves, down to SPIN_FLOOR polls; a wait that ends
 * while spinning doubles it again, up to POSTBOX_SPIN.
 */

#include "mpi/engine/lock.h"
#include "mpi/engine/protocol.h"
#include "util/time.h"

static pb_eng_progress_hook_t hooks[PB_ENG_PROGRESS_HOOKS];
static int nhooks;

void pb_eng_progress_hook_add(pb_eng_progress_hook_t hook)
{
    for (int i = 0; i < nhooks; i++) {
        if (hooks[i] == hook)
            return;
    }
    if (nhooks == PB_ENG_PROGRESS_HOOKS)
        pb_eng_fatal("more progress hooks than PB_ENG_PROGRESS_HOOKS");
    hooks[nhooks++] = hook;
}

void pb_eng_progress_hooks_clear(void)
{
    nhooks = 0;
}

void pb_eng_progress_hook_remove(pb_eng_progress_hook_t hook)
{
    for (int i = 0; i < nhooks; i++) {
        if (hooks[i] == hook) {
            hooks[i] = hooks[--nhooks];
            return;
        }
    }
}

/* a sleeping rank re-checks at least this often (lost-wake-up insurance) */
#define SLEEP_CAP_MS 100
/* the fewest polls the adaptive spin keeps, and how long a sched_yield
 * takes when it let another thread run (returning at once costs < 1 us) */
#define SPIN_FLOOR 32
#define YIELD_GAVE_AWAY_NS 20000

/* polls a waiting rank spins before it yields, between
 * min(SPIN_FLOOR, POSTBOX_SPIN) and POSTBOX_SPIN; -1 until the first wait.
 * Threads of a rank share it (relaxed: a lost update only slows the
 * adaptation). */
static _Atomic int spin_budget = -1;

static int spin_limit(void)
{
    int budget = atomic_load_explicit(&spin_budget, memory_order_relaxed);

    if (budget < 0 || budget > pb_eng_params.spin)
        budget = pb_eng_params.spin;
    return budget;
}

/* The wait just ended while spinning (@spun) or after a yield that gave
 * the processor away (!@spun): more spin next time, or less. */
static void spin_adapt(int spun)
{
    int max = pb_eng_params.spin, floor = max < SPIN_FLOOR ? max : SPIN_FLOOR;
    int budget = spin_limit();

    budget =
        spun ? (budget > max / 2 ? max : 2 * budget) : (budget / 2 < floor ? floor : budget / 2);
    if (budget < floor)
        budget = floor;
    atomic_store_explicit(&spin_budget, budget, memory_order_relaxed);
}

/* Past its POSTBOX_YIELDS yields (@yields so far), a waiting rank still
 * yields rather than sleeps until POSTBOX_YIELD_US have passed since the
 * last of them (*@yield_start, taken then): a sleeper's wake-up costs tens
 * of microseconds, a yield that finds nobody to run well under one. */
static int still_yielding(int yields, int64_t *yield_start)
{
    int64_t now;

    if (pb_eng_params.yield_us <= 0)
        return 0;
    now = pb_time_now_ns();
    if (yields == pb_eng_params.yields)
        *yield_start = now;
    return now - *yield_start < (int64_t)pb_eng_params.yield_us * 1000;
}

/* MPI_THREAD_MULTIPLE: pb_eng.completed when the thread asleep on the
 * doorbell went to sleep.  Another thread that leaves the library after
 * requests completed, or with messages to this rank in its own ring, wakes
 * it (its own doorbell): it may be what the sleeper waits for (a
 * generalized request that thread completed, a message it sent to this
 * rank, a receive its progress matched). */
static uint64_t sleeper_saw;

static void wake_sleeper(void)
{
    if (pb_eng.completed != sleeper_saw || pb_eng_channel_peek(pb_eng_channel.rank) != NULL) {
        sleeper_saw = pb_eng.completed;
        pb_eng_channel_wake(pb_eng_channel.rank);
    }
}

/* Sources to poll under directed polling (POSTBOX_POLLALL=0): the peers of
 * posted receives (all of them for MPI_ANY_SOURCE), of sends waiting for a
 * CTS or a synchronous acknowledgement, of rendezvous data and eager
 * streams under way.  Others' messages wait in their rings (and their
 * senders, once the ring is full) until a receive names them. */
static int wanted(int source)
{
    if (pb_eng.expect[source] > 0 || pb_eng.streams[source].recv != NULL ||
        pb_eng.streams[source].unexp != NULL)
        return 1;
    if (pb_eng.probing && (pb_eng.probe_source < 0 || pb_eng.probe_source == source))
        return 1;
    for (MPI_Request r = pb_eng.posted.head; r != NULL; r = r->next) {
        if (r->peer < 0 || r->peer == source)
            return 1;
    }
    return 0;
}

int pb_eng_progress(void)
{
    int moved = 0;

    for (int d = 0; d < pb_eng.size; d++) {
        if (pb_eng.controls[d] != NULL || pb_eng.sends[d].head != NULL)
            moved += pb_eng_send_push(d);
    }
    /* this rank reads its own sockets: it holds the tcp transport's
     * progress claim (pb_eng_channel_init), so no service thread does it meanwhile */
    pb_eng_channel_poll_network();
    for (int s = 0; s < pb_eng.size; s++) {
        const pb_eng_postbox_t *pb;
        int budget = pb_eng_params.postboxes;

        if (!pb_eng_params.pollall && !wanted(s))
            continue;
        while (budget-- > 0 && (pb = pb_eng_channel_peek(s)) != NULL) {
            pb_eng_recv_postbox(s, pb);
            pb_eng_channel_consume(s, pb);
            moved++;
        }
    }
    /* answers the reading queued (CTS, SYNC_ACK, RNDV_FIN) go out now, not
     * at the next call: the caller may return to compute for a long time */
    for (int d = 0; d < pb_eng.size; d++) {
        if (pb_eng.controls[d] != NULL)
            moved += pb_eng_send_push(d);
    }
    /* a hook may remove itself: walk from the end */
    for (int i = nhooks - 1; i >= 0; i--) {
        if (i < nhooks)
            moved += hooks[i]();
    }
    return moved;
}

void pb_eng_wait_until(pb_eng_done_func_t done, void *arg)
{
    int spins = 0, yields = 0, limit = spin_limit(), gave_away = 0;
    int64_t yield_start = 0;
    uint64_t start;

    if (done(arg))
        return;
    /* the MPI_T timer engine_wait_time: only while a tool runs it */
    start = atomic_load_explicit(&pb_eng_stats.timers, memory_order_relaxed) > 0
                ? pb_eng_stats_now_ns()
                : 0;
    /* under MPI_THREAD_MULTIPLE every stage but progress itself gives the
     * library lock up, so that the other threads run meanwhile (lock.h) */
    do {
        unsigned levels;

        if (pb_eng_progress() > 0) {
            spins = yields = 0;
            continue;
        }
        if (spins < limit) {
            spins++;
            if (pb_eng_lock_active())
                pb_eng_lock_relax();
            else
                pb_cpu_relax();
            continue;
        }
        if (yields < pb_eng_params.yields || still_yielding(yields, &yield_start)) {
            int64_t before = gave_away ? 0 : pb_time_now_ns();

            yields++;
            pb_eng_lock_yield();
            if (!gave_away && pb_time_now_ns() - before > YIELD_GAVE_AWAY_NS) {
                gave_away = 1;
                spin_adapt(0);
            }
            continue;
        }
        if (!pb_eng_lock_doorbell_claim()) {
            /* another thread sleeps on the doorbell and will wake us */
            pb_eng_lock_wait_turn(SLEEP_CAP_MS);
            continue;
        }
        pb_eng_channel_sleep_begin();
        if (pb_eng_progress() > 0 || done(arg)) {
            pb_eng_channel_sleep_cancel();
            pb_eng_lock_doorbell_done();
            continue;
        }
        sleeper_saw = pb_eng.completed;
        pb_eng_lock_set_wake(wake_sleeper);
        levels = pb_eng_lock_suspend();
        pb_eng_channel_sleep(SLEEP_CAP_MS);
        pb_eng_lock_resume(levels);
        pb_eng_lock_doorbell_done();
    } while (!done(arg));
    if (spins > 0 && spins < limit && yields == 0 && limit < pb_eng_params.spin)
        spin_adapt(1);
    if (start != 0)
        pb_eng_stat_add(&pb_eng_stats.wait_ns, pb_eng_stats_now_ns() - start);
}

static int request_done(void *arg)
{
    return ((MPI_Request)arg)->complete;
}

void pb_eng_wait(MPI_Request r)
{
    if (!r->complete)
        pb_eng_wait_until(request_done, r);
}
