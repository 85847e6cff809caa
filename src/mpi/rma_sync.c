/*
 * RMA synchronization (win.h): fence, post-start-complete-wait, and the
 * passive-target locks and flushes.
 *
 * A fence completes this rank's operations at their targets (toward
 * another node, running the batch the epoch's operations waited in), then
 * is a barrier.  PSCW counts in the control blocks: MPI_Win_post adds one to
 * post[me] in each origin's block, MPI_Win_start waits for those counts
 * to pass what it consumed, MPI_Win_complete adds one to complete[me] in
 * each target's block after the epoch's operations (which reach the
 * target first: the same path, in order), MPI_Win_wait waits for them.
 * A lock is the target's lock word, taken by an atomic on the node or by
 * an RSM call that the target's service thread answers; a rank that finds
 * it taken tries again, spinning, then yielding, then sleeping a little
 * longer each time (at most a millisecond).
 */
#include <stdlib.h>
#include <time.h>

#include "mpi/engine/engine.h"
#include "mpi/engine/lock.h"
#include "mpi/win.h"
#include "util/compiler.h"

#define RMA_SLEEP_MAX_NS 1000000L

typedef int (*rma_ready_t)(pb_win_t *win, void *arg);

/* Make progress until @ready(@win, @arg). */
static int rma_wait(pb_win_t *win, rma_ready_t ready, void *arg)
{
    long sleep_ns = 1000;
    int spins = 0, rc;

    while ((rc = ready(win, arg)) == 0) {
        unsigned levels;

        if (pb_eng_progress() > 0)
            continue;
        /* each stage lets this process's other threads run (engine/lock.h) */
        if (spins < 100) {
            spins++;
            pb_eng_lock_relax();
            continue;
        }
        if (spins < 200) {
            spins++;
            pb_eng_lock_yield();
            continue;
        }
        levels = pb_eng_lock_suspend();
        nanosleep(&(struct timespec){0, sleep_ns}, NULL);
        pb_eng_lock_resume(levels);
        if (sleep_ns < RMA_SLEEP_MAX_NS)
            sleep_ns *= 2;
    }
    return rc < 0 ? MPI_ERR_OTHER : MPI_SUCCESS;
}

/* The window ranks of @group's members, in *@ranks_p.  @return
 * MPI_SUCCESS, MPI_ERR_GROUP (not a group, or a member not in the
 * window) or MPI_ERR_NO_MEM. */
static int group_ranks(pb_win_t *win, MPI_Group group, int **ranks_p, int *n_p)
{
    MPI_Group wgroup;
    int n, *in, *out;

    if (PMPI_Group_size(group, &n) != MPI_SUCCESS)
        return MPI_ERR_GROUP;
    in = malloc(((size_t)n + 1) * sizeof(int));
    out = malloc(((size_t)n + 1) * sizeof(int));
    if (in == NULL || out == NULL) {
        free(in);
        free(out);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < n; i++)
        in[i] = i;
    if (PMPI_Comm_group(win->comm->handle, &wgroup) != MPI_SUCCESS ||
        PMPI_Group_translate_ranks(group, n, in, wgroup, out) != MPI_SUCCESS) {
        free(in);
        free(out);
        return MPI_ERR_GROUP;
    }
    PMPI_Group_free(&wgroup);
    free(in);
    for (int i = 0; i < n; i++) {
        if (out[i] == MPI_UNDEFINED) {
            free(out);
            return MPI_ERR_GROUP;
        }
    }
    *ranks_p = out;
    *n_p = n;
    return MPI_SUCCESS;
}

/* Add one to counts[@index] of @rank's control block. */
static int count_add(pb_win_t *win, int rank, uint32_t index)
{
    pb_win_target_t *t = &win->targets[rank];
    pb_win_call_t call = {.kind = PB_WIN_CALL_COUNT, .arg = index};

    if (t->mode != PB_WIN_TCP) {
        atomic_fetch_add_explicit(&t->ctl->counts[index], 1, memory_order_release);
        return MPI_SUCCESS;
    }
    return pb_win_call(win, rank, &call, sizeof(call), NULL, 0, NULL);
}

static int assert_check(pb_win_t *win, const char *func, int assertion, int allowed)
{
    if ((assertion & ~allowed) == 0)
        return MPI_SUCCESS;
    return pb_mpi_win_raise(win, MPI_ERR_ASSERT, func,
                            "assert %#x has bits this call does not know", (unsigned)assertion);
}

/* ---- active target: batches ------------------------------------------------------------ */

/*
 * In an access epoch of fence or PSCW, the operations toward a target on
 * another node wait in its batch, as in a lock epoch, until the fence or
 * MPI_Win_complete that ends the epoch runs it: one call that the target
 * runs whole (without a lock) instead of one each.  Not on dynamic
 * windows (win.h).
 */
static void batching_open(pb_win_t *win, int rank)
{
    if (win->targets[rank].mode == PB_WIN_TCP && win->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        win->targets[rank].batching = 1;
}

/* Run @rank's batch, if any, and complete what went outside it. */
static int batch_complete(pb_win_t *win, int rank)
{
    pb_win_target_t *t = &win->targets[rank];
    int rc = MPI_SUCCESS;

    if (t->batching && pb_win_batch_pending(t))
        rc = pb_win_batch_run(win, rank, 0);
    if (rc == MPI_SUCCESS)
        rc = pb_win_flush_target(win, rank);
    return rc;
}

/* Leave a fence epoch for another kind: what its batches hold runs (a
 * fence should have ended it; an epoch of locks or PSCW batches its own
 * way). */
static int fence_batches_close(pb_win_t *win)
{
    int rc = MPI_SUCCESS;

    if (win->epoch != PB_WIN_EPOCH_FENCE)
        return MPI_SUCCESS;
    for (int r = 0; r < win->size; r++) {
        pb_win_target_t *t = &win->targets[r];
        int one =
            t->batching && pb_win_batch_pending(t) ? pb_win_batch_run(win, r, 0) : MPI_SUCCESS;

        t->batching = 0;
        if (rc == MPI_SUCCESS)
            rc = one;
    }
    return rc;
}

/* ---- fence ---------------------------------------------------------------------------- */

static int flush_all(pb_win_t *win)
{
    int rc = MPI_SUCCESS;

    for (int r = 0; r < win->size; r++) {
        int one = batch_complete(win, r);

        if (rc == MPI_SUCCESS)
            rc = one;
    }
    return rc;
}

int pb_mpi_win_fence_impl(const char *func, int assertion, MPI_Win win, pb_win_t *w)
{
    int rc =
        assert_check(w, func, assertion,
                     MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED);

    if (rc != MPI_SUCCESS)
        return rc;
    if (w->epoch != PB_WIN_EPOCH_NONE && w->epoch != PB_WIN_EPOCH_FENCE)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "a lock or PSCW access epoch is open on the window");
    if (w->exposure)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "a PSCW exposure epoch (MPI_Win_post) is open on the window");
    rc = flush_all(w);
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "a target is unreachable (see the log)");
    rc = PMPI_Barrier(w->comm->handle);
    if (rc != MPI_SUCCESS)
        return rc;
    pb_win_served_acquire(w);
    w->epoch = (assertion & MPI_MODE_NOSUCCEED) ? PB_WIN_EPOCH_NONE : PB_WIN_EPOCH_FENCE;
    for (int r = 0; r < w->size; r++) {
        w->targets[r].batching = 0;
        if (w->epoch == PB_WIN_EPOCH_FENCE)
            batching_open(w, r);
    }
    return MPI_SUCCESS;
}

/* ---- post, start, complete, wait ---------------------------------------------------------- */

int pb_mpi_win_post_impl(const char *func, MPI_Group group, int assertion, MPI_Win win, pb_win_t *w)
{
    int rc = assert_check(w, func, assertion, MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT);
    int *ranks, n;

    if (rc != MPI_SUCCESS)
        return rc;
    if (w->exposure)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "an exposure epoch is open already (MPI_Win_wait first)");
    rc = group_ranks(w, group, &ranks, &n);
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "the group is not a group of the window's ranks");
    /* the program's stores to its window are visible before the post */
    atomic_thread_fence(memory_order_seq_cst);
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        if (!(assertion & MPI_MODE_NOCHECK))
            rc = count_add(w, ranks[i], 2u * (unsigned)w->rank);
    }
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = pb_win_flush_target(w, ranks[i]);
    if (rc != MPI_SUCCESS) {
        free(ranks);
        return pb_mpi_win_raise(w, rc, func, "an origin is unreachable (see the log)");
    }
    free(w->post_ranks);
    w->post_ranks = ranks;
    w->npost = n;
    w->exposure = 1;
    return MPI_SUCCESS;
}

/* Whether every target of the access epoch has posted. */
static int posted_all(pb_win_t *win, void *arg)
{
    (void)arg;
    for (int i = 0; i < win->nstart; i++) {
        int r = win->start_ranks[i];

        if (atomic_load_explicit(pb_win_post_count(win->ctl, r), memory_order_acquire) <=
            win->post_seen[r])
            return 0;
    }
    return 1;
}

int pb_mpi_win_start_impl(const char *func, MPI_Group group, int assertion, MPI_Win win,
                          pb_win_t *w)
{
    int rc = assert_check(w, func, assertion, MPI_MODE_NOCHECK);
    int *ranks, n;

    if (rc != MPI_SUCCESS)
        return rc;
    if (w->epoch != PB_WIN_EPOCH_NONE && w->epoch != PB_WIN_EPOCH_FENCE)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "an access epoch is open already on the window");
    rc = group_ranks(w, group, &ranks, &n);
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "the group is not a group of the window's ranks");
    rc = fence_batches_close(w);
    if (rc != MPI_SUCCESS) {
        free(ranks);
        return pb_mpi_win_raise(w, rc, func, "a target is unreachable (see the log)");
    }
    free(w->start_ranks);
    w->start_ranks = ranks;
    w->nstart = n;
    for (int i = 0; i < n; i++)
        batching_open(w, ranks[i]);
    if (!(assertion & MPI_MODE_NOCHECK)) {
        rma_wait(w, posted_all, NULL);
        for (int i = 0; i < n; i++)
            w->post_seen[ranks[i]]++;
    }
    w->epoch = PB_WIN_EPOCH_START;
    return MPI_SUCCESS;
}

int pb_mpi_win_complete_impl(const char *func, MPI_Win win, pb_win_t *w)
{
    int rc = MPI_SUCCESS;

    if (w->epoch != PB_WIN_EPOCH_START)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "no access epoch of MPI_Win_start is open");
    atomic_thread_fence(memory_order_seq_cst);
    /* the count follows the epoch's operations (their batch ran) on the
     * same path */
    for (int i = 0; i < w->nstart && rc == MPI_SUCCESS; i++) {
        int r = w->start_ranks[i];

        if (w->targets[r].batching && pb_win_batch_pending(&w->targets[r]))
            rc = pb_win_batch_run(w, r, 0);
        if (rc == MPI_SUCCESS)
            rc = count_add(w, r, 2u * (unsigned)w->rank + 1);
    }
    for (int i = 0; i < w->nstart && rc == MPI_SUCCESS; i++)
        rc = pb_win_flush_target(w, w->start_ranks[i]);
    for (int i = 0; i < w->nstart; i++) {
        pb_win_batch_free(&w->targets[w->start_ranks[i]]);
        w->targets[w->start_ranks[i]].batching = 0;
    }
    w->epoch = PB_WIN_EPOCH_NONE;
    w->nstart = 0;
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "a target is unreachable (see the log)");
    return MPI_SUCCESS;
}

/* Whether every origin of the exposure epoch has completed. */
static int completed_all(pb_win_t *win, void *arg)
{
    (void)arg;
    for (int i = 0; i < win->npost; i++) {
        int r = win->post_ranks[i];

        if (atomic_load_explicit(pb_win_complete_count(win->ctl, r), memory_order_acquire) <=
            win->complete_seen[r])
            return 0;
    }
    return 1;
}

static void exposure_close(pb_win_t *w)
{
    pb_win_served_acquire(w);
    for (int i = 0; i < w->npost; i++)
        w->complete_seen[w->post_ranks[i]]++;
    w->npost = 0;
    w->exposure = 0;
    atomic_thread_fence(memory_order_seq_cst);
}

int pb_mpi_win_wait_impl(const char *func, MPI_Win win, pb_win_t *w)
{
    if (!w->exposure)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "no exposure epoch (MPI_Win_post) is open");
    rma_wait(w, completed_all, NULL);
    exposure_close(w);
    return MPI_SUCCESS;
}

int pb_mpi_win_test_impl(const char *func, MPI_Win win, int *flag, pb_win_t *w)
{
    if (flag == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "flag is NULL");
    if (!w->exposure)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "no exposure epoch (MPI_Win_post) is open");
    pb_eng_progress();
    *flag = completed_all(w, NULL);
    if (*flag)
        exposure_close(w);
    return MPI_SUCCESS;
}

/* ---- passive target --------------------------------------------------------------------- */

typedef struct {
    int rank, lock_type, failed;
} lock_try_t;

/* One attempt at @rank's lock word. */
static int lock_once(pb_win_t *win, void *arg)
{
    lock_try_t *l = arg;
    pb_win_target_t *t = &win->targets[l->rank];
    pb_win_call_t call = {.kind = PB_WIN_CALL_LOCK, .arg = (uint32_t)l->lock_type};
    pb_win_reply_t answer;
    size_t got = 0;

    if (t->mode != PB_WIN_TCP)
        return pb_win_lock_try(t->ctl, l->lock_type);
    if (pb_win_call(win, l->rank, &call, sizeof(call), &answer, sizeof(answer), &got) !=
            MPI_SUCCESS ||
        got < sizeof(answer)) {
        l->failed = 1;
        return -1;
    }
    return answer.status == 1;
}

/* Take @rank's lock as @lock_type; toward another node, only note that
 * the epoch's batch will ask for it (rma.c, "lock epochs"). */
static int lock_take(pb_win_t *win, int rank, int lock_type)
{
    lock_try_t l = {rank, lock_type, 0};

    /* (a dynamic window's target checks the addresses: its errors must
     * come back with the call that made them, not at the unlock) */
    if (win->targets[rank].mode == PB_WIN_TCP && win->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        win->targets[rank].batching = 1;
        return MPI_SUCCESS;
    }

    rma_wait(win, lock_once, &l);
    if (l.failed)
        return MPI_ERR_OTHER;
    win->targets[rank].lock_taken = 1;
    return MPI_SUCCESS;
}

/* Complete the operations toward @rank and release the lock held there. */
static int lock_give(pb_win_t *win, int rank)
{
    pb_win_target_t *t = &win->targets[rank];
    pb_win_call_t call = {.kind = PB_WIN_CALL_UNLOCK, .arg = (uint32_t)t->lock};
    int rc = MPI_SUCCESS;

    if (t->batching) {
        /* what is left of the epoch and the release in one round trip;
         * nothing at all for an epoch without operations */
        if (pb_win_batch_pending(t) || t->lock_taken)
            rc = pb_win_batch_run(win, rank, 1);
        t->lock_taken = 0;
    } else if (t->lock_taken) {
        if (t->mode != PB_WIN_TCP) {
            atomic_thread_fence(memory_order_seq_cst);
            pb_win_lock_release(t->ctl, t->lock);
        } else {
            /* the release follows the epoch's operations; one barrier
             * completes both */
            rc = pb_win_call(win, rank, &call, sizeof(call), NULL, 0, NULL);
        }
    }
    if (rc == MPI_SUCCESS)
        rc = pb_win_flush_target(win, rank);
    pb_win_batch_free(t);
    t->lock = 0;
    t->lock_taken = 0;
    t->batching = 0;
    return rc;
}

static int rank_check(pb_win_t *win, const char *func, int rank)
{
    if (rank >= 0 && rank < win->size)
        return MPI_SUCCESS;
    return pb_mpi_win_raise(win, MPI_ERR_RANK, func, "rank %d is not a rank of the window (0..%d)",
                            rank, win->size - 1);
}

int pb_mpi_win_lock_impl(const char *func, int lock_type, int rank, int assertion, MPI_Win win,
                         pb_win_t *w)
{
    int rc = rank_check(w, func, rank);

    if (rc == MPI_SUCCESS)
        rc = assert_check(w, func, assertion, MPI_MODE_NOCHECK);
    if (rc != MPI_SUCCESS)
        return rc;
    if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
        return pb_mpi_win_raise(w, MPI_ERR_LOCKTYPE, func,
                                "lock_type %d is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED",
                                lock_type);
    if (w->epoch != PB_WIN_EPOCH_NONE && w->epoch != PB_WIN_EPOCH_FENCE &&
        w->epoch != PB_WIN_EPOCH_LOCK)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "another access epoch (PSCW or MPI_Win_lock_all) is open");
    if (w->targets[rank].lock != 0)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func, "rank %d is locked already", rank);
    rc = fence_batches_close(w);
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "a target is unreachable (see the log)");
    if (!(assertion & MPI_MODE_NOCHECK)) {
        rc = lock_take(w, rank, lock_type);
        if (rc != MPI_SUCCESS)
            return pb_mpi_win_raise(w, rc, func, "rank %d is unreachable (see the log)", rank);
    }
    w->targets[rank].lock = lock_type;
    w->locks_held++;
    w->epoch = PB_WIN_EPOCH_LOCK;
    return MPI_SUCCESS;
}

int pb_mpi_win_unlock_impl(const char *func, int rank, MPI_Win win, pb_win_t *w)
{
    int rc = rank_check(w, func, rank);

    if (rc != MPI_SUCCESS)
        return rc;
    if (w->epoch != PB_WIN_EPOCH_LOCK || w->targets[rank].lock == 0)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func, "rank %d is not locked by MPI_Win_lock",
                                rank);
    rc = lock_give(w, rank);
    if (--w->locks_held == 0)
        w->epoch = PB_WIN_EPOCH_NONE;
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "rank %d is unreachable (see the log)", rank);
    return MPI_SUCCESS;
}

int pb_mpi_win_lock_all_impl(const char *func, int assertion, MPI_Win win, pb_win_t *w)
{
    int rc = assert_check(w, func, assertion, MPI_MODE_NOCHECK);

    if (rc != MPI_SUCCESS)
        return rc;
    if (w->epoch != PB_WIN_EPOCH_NONE && w->epoch != PB_WIN_EPOCH_FENCE)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "another access epoch is open on the window");
    rc = fence_batches_close(w);
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "a target is unreachable (see the log)");
    for (int r = 0; r < w->size && rc == MPI_SUCCESS; r++) {
        if (!(assertion & MPI_MODE_NOCHECK))
            rc = lock_take(w, r, MPI_LOCK_SHARED);
        if (rc == MPI_SUCCESS)
            w->targets[r].lock = MPI_LOCK_SHARED;
    }
    w->epoch = PB_WIN_EPOCH_LOCK_ALL;
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "a rank is unreachable (see the log)");
    return MPI_SUCCESS;
}

int pb_mpi_win_unlock_all_impl(const char *func, MPI_Win win, pb_win_t *w)
{
    int rc = MPI_SUCCESS;

    if (w->epoch != PB_WIN_EPOCH_LOCK_ALL)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func, "MPI_Win_lock_all was not called");
    for (int r = 0; r < w->size; r++) {
        int one = w->targets[r].lock != 0 ? lock_give(w, r) : MPI_SUCCESS;

        if (rc == MPI_SUCCESS)
            rc = one;
    }
    w->epoch = PB_WIN_EPOCH_NONE;
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "a rank is unreachable (see the log)");
    return MPI_SUCCESS;
}

/* MPI_Win_flush and its kin: a passive-target epoch toward @rank (-1: all). */
static int flush(pb_win_t *w, const char *func, int rank)
{
    int rc = MPI_SUCCESS;

    if (w->epoch != PB_WIN_EPOCH_LOCK && w->epoch != PB_WIN_EPOCH_LOCK_ALL)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func, "no passive-target epoch is open");
    if (rank >= 0) {
        rc = rank_check(w, func, rank);
        if (rc != MPI_SUCCESS)
            return rc;
        if (w->targets[rank].lock == 0)
            return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func, "rank %d is not locked", rank);
        rc = batch_complete(w, rank);
    } else {
        for (int r = 0; r < w->size; r++) {
            int one = w->targets[r].lock != 0 ? batch_complete(w, r) : MPI_SUCCESS;

            if (rc == MPI_SUCCESS)
                rc = one;
        }
    }
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "a target is unreachable (see the log)");
    return MPI_SUCCESS;
}

int pb_mpi_win_flush_impl(const char *func, int rank, MPI_Win win, pb_win_t *w)
{
    /* a locked target on the node: its loads and stores are done */
    if (PB_LIKELY(rank >= 0 && rank < w->size && w->targets[rank].mode != PB_WIN_TCP &&
                  w->targets[rank].lock != 0 &&
                  (w->epoch == PB_WIN_EPOCH_LOCK || w->epoch == PB_WIN_EPOCH_LOCK_ALL))) {
        atomic_thread_fence(memory_order_release);
        return MPI_SUCCESS;
    }
    return flush(w, func, rank);
}

int pb_mpi_win_flush_all_impl(const char *func, MPI_Win win, pb_win_t *w)
{
    return flush(w, func, -1);
}

int pb_mpi_win_flush_local_impl(const char *func, int rank, MPI_Win win, pb_win_t *w)
{
    return flush(w, func, rank);
}

int pb_mpi_win_flush_local_all_impl(const char *func, MPI_Win win, pb_win_t *w)
{
    return flush(w, func, -1);
}

int pb_mpi_win_sync_impl(const char *func, MPI_Win win, pb_win_t *w)
{
    pb_win_served_acquire(w);
    atomic_thread_fence(memory_order_seq_cst);
    pb_eng_progress();
    return MPI_SUCCESS;
}
