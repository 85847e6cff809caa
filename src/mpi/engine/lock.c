/*
 * The library lock of MPI_THREAD_MULTIPLE (lock.h).
 *
 * The lock starts biased toward the thread that was granted
 * MPI_THREAD_MULTIPLE: while no other thread has entered the library, that
 * thread takes it with a plain store of the "busy" word and a load of the
 * "revoked" word (inline, in lock.h), no atomic read-modify-write and no
 * fence.  The first other thread to enter revokes the bias for good: it
 * takes the word (below), sets "revoked", makes every running thread of
 * the process execute a full memory barrier (membarrier(2), private
 * expedited), then waits until the owner is not busy.  That barrier is
 * the owner's missing fence (the asymmetric Dekker pattern): either the
 * revoker sees the owner's busy store, or the owner sees "revoked" and
 * takes the word like everyone else.  Without membarrier there is no bias.
 *
 * The word is taken with one atomic exchange and given back with a
 * release store (a pthread mutex pays two atomic operations).  A thread
 * that finds it taken spins a little, then yields the CPU until it is
 * free: the library holds it only while it works, never while it waits
 * (the waits give it up), so nobody holds it long.  But a thread that
 * calls MPI in a loop (MPI_Test, MPI_Iprobe) gives the word back and takes
 * it again within a few instructions, and a waiter that seldom gets a CPU
 * (it yielded it to other processes) may never look in that moment: it
 * starved for seconds on a loaded host.  So a waiter that has yielded
 * HUNGRY_YIELDS times says it is hungry, and while a waiter is hungry only
 * hungry waiters take the word.  The threads waiting for their turn to
 * sleep (pb_eng_lock_wait_turn) sleep on a futex of their own, woken when
 * a thread leaves the library.
 */
#include "mpi/engine/lock.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Atomic int pb_eng_lock_users;
struct pb_eng_lock_bias pb_eng_lock_bias;
_Thread_local unsigned pb_eng_lock_depth __attribute__((tls_model("initial-exec")));

/* spins of a thread that finds the lock taken, before each yield */
#define TAKE_SPINS 64
/* yields of a thread waiting for the word before it is hungry */
#define HUNGRY_YIELDS 4

static struct {
    _Alignas(64) _Atomic uint32_t held; /* 1 while a thread holds the lock by the word */
    _Atomic uint32_t hungry;            /* hungry waiters: nobody else takes the word */
    _Atomic int blocked;                /* threads waiting to take it (word or bias) */
    _Atomic uint32_t turn;              /* counts the wake-ups of pb_eng_lock_wait_turn */
    int turn_waiters;                   /* threads in pb_eng_lock_wait_turn (under the lock) */
    int doorbell_claimed;               /* a thread sleeps on the doorbell */
    void (*wake)(void);                 /* wakes it (pb_eng_lock_set_wake) */
} lock;

static void take_word(void)
{
    int yields = 0, hungry = 0;

    if (!atomic_load_explicit(&lock.hungry, memory_order_relaxed) &&
        !atomic_exchange_explicit(&lock.held, 1, memory_order_acquire))
        return;
    atomic_fetch_add_explicit(&lock.blocked, 1, memory_order_relaxed);
    for (;;) {
        for (int i = 0; i < TAKE_SPINS; i++) {
            if (!atomic_load_explicit(&lock.held, memory_order_relaxed) &&
                (hungry || !atomic_load_explicit(&lock.hungry, memory_order_relaxed)) &&
                !atomic_exchange_explicit(&lock.held, 1, memory_order_acquire)) {
                if (hungry)
                    atomic_fetch_sub_explicit(&lock.hungry, 1, memory_order_relaxed);
                atomic_fetch_sub_explicit(&lock.blocked, 1, memory_order_relaxed);
                return;
            }
            pb_cpu_relax();
        }
        if (!hungry && ++yields == HUNGRY_YIELDS) {
            hungry = 1;
            atomic_fetch_add_explicit(&lock.hungry, 1, memory_order_relaxed);
        }
        sched_yield();
    }
}

/* End the bias for good (the caller holds the word): see the file's
 * comment. */
static void revoke_bias(void)
{
    atomic_store_explicit(&pb_eng_lock_bias.revoked, 1, memory_order_relaxed);
    /* registered when the bias was given, so it cannot fail; without it
     * the owner's next plain take could miss revoked */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        static const char why[] = "postbox: membarrier(2) failed after it was registered: the "
                                  "MPI library lock's bias cannot be revoked safely\n";

        (void)!write(STDERR_FILENO, why, sizeof(why) - 1);
        abort();
    }
    /* the owner gives the lock up in its next wait or at its return */
    atomic_fetch_add_explicit(&lock.blocked, 1, memory_order_relaxed);
    while (atomic_load_explicit(&pb_eng_lock_bias.busy, memory_order_acquire))
        sched_yield();
    atomic_fetch_sub_explicit(&lock.blocked, 1, memory_order_relaxed);
}

void pb_eng_lock_take(void)
{
    if (atomic_load_explicit(&pb_eng_lock_bias.owner, memory_order_relaxed) == &pb_eng_lock_depth) {
        /* the owner found the bias revoked: from now on, the word */
        atomic_store_explicit(&pb_eng_lock_bias.busy, 0, memory_order_release);
        atomic_store_explicit(&pb_eng_lock_bias.owner, NULL, memory_order_relaxed);
    }
    take_word();
    if (PB_UNLIKELY(!atomic_load_explicit(&pb_eng_lock_bias.revoked, memory_order_relaxed)))
        revoke_bias();
}

/* Take the outermost level, by the bias or by the word. */
static void take(void)
{
    if (atomic_load_explicit(&pb_eng_lock_bias.owner, memory_order_relaxed) == &pb_eng_lock_depth) {
        atomic_store_explicit(&pb_eng_lock_bias.busy, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&pb_eng_lock_bias.revoked, memory_order_acquire) == 0)
            return;
    }
    pb_eng_lock_take();
}

/* Give the outermost level back, by the bias or by the word. */
static void give(void)
{
    if (pb_eng_lock_by_bias())
        atomic_store_explicit(&pb_eng_lock_bias.busy, 0, memory_order_release);
    else
        atomic_store_explicit(&lock.held, 0, memory_order_release);
}

/* Bias the lock toward the calling thread, if the kernel offers the
 * barrier that revoking needs and the bias was never revoked. */
static void bias_to_caller(void)
{
    static int registered;

    if (atomic_load_explicit(&pb_eng_lock_bias.revoked, memory_order_relaxed))
        return;
    if (!registered) {
        long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
            syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) {
            atomic_store_explicit(&pb_eng_lock_bias.revoked, 1, memory_order_relaxed);
            return;
        }
        registered = 1;
    }
    atomic_store_explicit(&pb_eng_lock_bias.owner, &pb_eng_lock_depth, memory_order_relaxed);
}

/* Wake the threads in pb_eng_lock_wait_turn (the lock held). */
static void wake_turn_waiters(void)
{
    if (lock.turn_waiters == 0)
        return;
    atomic_fetch_add_explicit(&lock.turn, 1, memory_order_relaxed);
    syscall(SYS_futex, &lock.turn, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

void pb_eng_lock_use(int on)
{
    /* the first grant, by a thread that holds nothing: bias it */
    if (on && atomic_load_explicit(&pb_eng_lock_users, memory_order_relaxed) == 0 &&
        pb_eng_lock_depth == 0)
        bias_to_caller();
    atomic_fetch_add_explicit(&pb_eng_lock_users, on ? 1 : -1, memory_order_relaxed);
}

void pb_eng_lock_set_wake(void (*wake)(void))
{
    lock.wake = wake;
}

void pb_eng_lock_give(void)
{
    if (lock.doorbell_claimed && lock.wake != NULL)
        lock.wake();
    wake_turn_waiters();
    give();
}

unsigned pb_eng_lock_suspend(void)
{
    unsigned levels = pb_eng_lock_depth;

    if (levels > 0) {
        pb_eng_lock_depth = 0;
        give();
    }
    return levels;
}

void pb_eng_lock_resume(unsigned levels)
{
    if (levels > 0) {
        take();
        pb_eng_lock_depth = levels;
    }
}

void pb_eng_lock_relax(void)
{
    unsigned levels;

    /* a spin gives the lock up only to a thread that waits for it: alone,
     * the waiting thread polls as fast as a single-threaded one */
    if (atomic_load_explicit(&lock.blocked, memory_order_relaxed) == 0) {
        pb_cpu_relax();
        return;
    }
    levels = pb_eng_lock_suspend();
    pb_cpu_relax();
    pb_eng_lock_resume(levels);
}

void pb_eng_lock_yield(void)
{
    unsigned levels = pb_eng_lock_suspend();

    sched_yield();
    pb_eng_lock_resume(levels);
}

void pb_eng_lock_wait_turn(int timeout_ms)
{
    struct timespec limit = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    unsigned levels;
    uint32_t seen;

    if (pb_eng_lock_depth == 0) { /* nobody to wait for: the caller holds no lock */
        sched_yield();
        return;
    }
    seen = atomic_load_explicit(&lock.turn, memory_order_relaxed);
    lock.turn_waiters++;
    levels = pb_eng_lock_suspend();
    /* a wake-up between the suspend and the wait changed the word: no sleep */
    syscall(SYS_futex, &lock.turn, FUTEX_WAIT_PRIVATE, seen, &limit, NULL, 0);
    pb_eng_lock_resume(levels);
    lock.turn_waiters--;
}

int pb_eng_lock_doorbell_claim(void)
{
    if (pb_eng_lock_depth == 0)
        return 1;
    if (lock.doorbell_claimed)
        return 0;
    lock.doorbell_claimed = 1;
    return 1;
}

void pb_eng_lock_doorbell_done(void)
{
    if (pb_eng_lock_depth == 0)
        return;
    lock.doorbell_claimed = 0;
    wake_turn_waiters();
}
