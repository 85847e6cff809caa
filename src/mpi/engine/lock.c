/*
 * The library lock of MPI_THREAD_MULTIPLE (lock.h).
 */
#include "mpi/engine/lock.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

_Atomic int pb_eng_lock_users;

static struct {
    pthread_mutex_t mutex;
    pthread_cond_t turn;  /* a thread left the library, or the doorbell's sleeper woke */
    int turn_waiters;     /* threads in pb_eng_lock_wait_turn */
    int doorbell_claimed; /* a thread sleeps on the doorbell */
    void (*wake)(void);   /* wakes it (pb_eng_lock_set_wake) */
} lock = {.mutex = PTHREAD_MUTEX_INITIALIZER, .turn = PTHREAD_COND_INITIALIZER};

/* this thread's levels of hold (0: it does not hold the lock) */
static _Thread_local unsigned depth;

void pb_eng_lock_use(int on)
{
    atomic_fetch_add_explicit(&pb_eng_lock_users, on ? 1 : -1, memory_order_relaxed);
}

void pb_eng_lock_acquire(void)
{
    if (depth++ == 0)
        pthread_mutex_lock(&lock.mutex);
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
    if (lock.turn_waiters > 0)
        pthread_cond_broadcast(&lock.turn);
    pthread_mutex_unlock(&lock.mutex);
}

unsigned pb_eng_lock_suspend(void)
{
    unsigned levels = depth;

    if (levels > 0) {
        depth = 0;
        pthread_mutex_unlock(&lock.mutex);
    }
    return levels;
}

void pb_eng_lock_resume(unsigned levels)
{
    if (levels > 0) {
        pthread_mutex_lock(&lock.mutex);
        depth = levels;
    }
}

void pb_eng_lock_relax(void)
{
    unsigned levels = pb_eng_lock_suspend();

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
    struct timespec until;

    if (depth == 0) { /* nobody to wait for: the caller holds no lock */
        sched_yield();
        return;
    }
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    lock.turn_waiters++;
    /* the mutex is held once whatever the depth: the wait gives it up whole */
    (void)pthread_cond_timedwait(&lock.turn, &lock.mutex, &until);
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
    if (lock.turn_waiters > 0)
        pthread_cond_broadcast(&lock.turn);
}
