/*
 * Progress and waiting (engine.h).
 *
 * Waiting (pb_eng_wait_until): poll, spinning POSTBOX_SPIN times, then
 * yield the CPU POSTBOX_YIELDS times, then sleep on the doorbell's RSM
 * signal until a peer writes (peers on the node signal only a rank that
 * announced it sleeps; tcp peers always signal), so an idle rank holds no
 * core.  Under MPI_THREAD_MULTIPLE one waiting thread sleeps on the
 * doorbell and the others wait for it (lock.h).
 */

#include "mpi/engine/lock.h"
#include "mpi/engine/protocol.h"

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
    int spins = 0, yields = 0;
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
        if (spins < pb_eng_params.spin) {
            spins++;
            if (pb_eng_lock_active())
                pb_eng_lock_relax();
            else
                pb_cpu_relax();
            continue;
        }
        if (yields < pb_eng_params.yields) {
            yields++;
            pb_eng_lock_yield();
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
