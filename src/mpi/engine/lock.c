/*
 * The library lock of MPI_THREAD_MULTIPLE (lock.h).
 *
 * The lock is a word taken with one atomic exchange and given back with a
 * release store: an MPI call of a thread alone pays one atomic operation
 * (a pthread mutex pays two).  A thread that finds it taken spins a little,
 * then yields the CPU until it is free: the library holds it only while it
 * works, never while it waits (the waits give it up), so nobody holds it
 * long.  The threads waiting for their turn to sleep (pb_eng_lock_wait_turn)
 * sleep on a futex of their own, woken when a thread leaves the library.
 */
#include "mpi/engine/lock.h"

#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Atomic int pb_eng_lock_users;

/* spins of a thread that finds the lock taken, before each yield */
#define TAKE_SPINS 64

static struct {
    _Atomic uint32_t held; /* 1 while a thread holds the lock */
    _Atomic int blocked;   /* threads waiting to take it */
    _Atomic uint32_t turn; /* counts the wake-ups of pb_eng_lock_wait_turn */
    int turn_waiters;      /* threads in pb_eng_lock_wait_turn (under the lock) */
    int doorbell_claimed;  /* a thread sleeps on the doorbell */
    void (*wake)(void);    /* wakes it (pb_eng_lock_set_wake) */
} lock;

/* this thread's levels of hold (0: it does not hold the lock); initial-exec:
 * read on every call, without a call to find it */
static _Thread_local unsigned depth __attribute__((tls_model("initial-exec")));

static void take(void)
{
    if (!atomic_exchange_explicit(&lock.held, 1, memory_order_acquire))
        return;
    atomic_fetch_add_explicit(&lock.blocked, 1, memory_order_relaxed);
    for (;;) {
        for (int i = 0; i < TAKE_SPINS; i++) {
            if (!atomic_load_explicit(&lock.held, memory_order_relaxed) &&
                !atomic_exchange_explicit(&lock.held, 1, memory_order_acquire)) {
                atomic_fetch_sub_explicit(&lock.blocked, 1, memory_order_relaxed);
                return;
            }
            pb_cpu_relax();
        }
        sched_yield();
    }
}

static void give(void)
{
    atomic_store_explicit(&lock.held, 0, memory_order_release);
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
    atomic_fetch_add_explicit(&pb_eng_lock_users, on ? 1 : -1, memory_order_relaxed);
}

void pb_eng_lock_acquire(void)
{
    if (depth++ == 0)
        take();
}

void pb_eng_lock_set_wake(void (*wake)(void))
{
    lock.wake = wake;
}

void pb_eng_lock_release(void)
{
    if (--depth > 0)
        return;
    if (lock.doorbell_claimed && lock.wake != NULL)
        lock.wake();
    wake_turn_waiters();
    give();
}

unsigned pb_eng_lock_suspend(void)
{
    unsigned levels = depth;

    if (levels > 0) {
        depth = 0;
        give();
    }
    return levels;
}

void pb_eng_lock_resume(unsigned levels)
{
    if (levels > 0) {
        take();
        depth = levels;
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

    if (depth == 0) { /* nobody to wait for: the caller holds no lock */
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
    if (depth == 0)
        return 1;
    if (lock.doorbell_claimed)
        return 0;
    lock.doorbell_claimed = 1;
    return 1;
}

void pb_eng_lock_doorbell_done(void)
{
    if (depth == 0)
        return;
    lock.doorbell_claimed = 0;
    wake_turn_waiters();
}
