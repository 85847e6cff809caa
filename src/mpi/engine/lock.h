/*
 * MPI_THREAD_MULTIPLE: the library lock.
 *
 * While some instance (the world model, a session) was granted
 * MPI_THREAD_MULTIPLE, every exported MPI function holds one process-wide
 * lock from its first statement to its return (PB_MPI_THREAD_GUARD), and
 * every place that waits for another process gives it up while it waits:
 * the spinning, yielding and sleeping stages of pb_eng_wait_until and the
 * one-sided retry loops.  So any thread may call any function at any time;
 * a thread blocked in MPI_Recv, MPI_Wait or a collective lets the others
 * run, and the others' progress completes its work as well as their own.
 *
 * Below MPI_THREAD_MULTIPLE the guard is one load of a flag and a branch
 * that is never taken: the single-threaded path stays as it was.
 *
 * The lock is recursive per thread (a callback the library calls, such as
 * an attribute's delete function or an error handler, may call MPI).  A
 * spinning wait gives it up only when a thread is blocked taking it, so
 * one thread alone polls as fast as under MPI_THREAD_FUNNELED.  Of
 * the threads that reach the sleeping stage of a wait, one sleeps on the
 * channel's doorbell, the others on a condition variable that a thread
 * leaving the library, or the doorbell's sleeper waking, broadcasts.
 *
 * Decision and its measurements: docs/mpi.md, "MPI_THREAD_MULTIPLE".
 */
#ifndef PB_ENG_LOCK_H
#define PB_ENG_LOCK_H

#include <stdatomic.h>

#include "util/compiler.h"

/* The number of live instances granted MPI_THREAD_MULTIPLE; the lock is
 * taken while it is not 0.  Read with pb_eng_lock_enter. */
extern _Atomic int pb_eng_lock_users;

/* Take the library lock for the calling thread (recursive). */
void pb_eng_lock_acquire(void);

/* Give back one level of the calling thread's hold (the last one unlocks
 * and wakes the threads waiting for their turn to sleep). */
void pb_eng_lock_release(void);

/* 1 when the lock is in force (MPI_THREAD_MULTIPLE granted). */
static PB_ALWAYS_INLINE int pb_eng_lock_active(void)
{
    return PB_UNLIKELY(atomic_load_explicit(&pb_eng_lock_users, memory_order_relaxed) > 0);
}

/* Enter the library: take the lock if it is in force.  @return 1 when it
 * was taken (pb_eng_lock_leave gives it back), else 0. */
static PB_ALWAYS_INLINE int pb_eng_lock_enter(void)
{
    if (PB_LIKELY(!pb_eng_lock_active()))
        return 0;
    pb_eng_lock_acquire();
    return 1;
}

/* Leave the library: give the lock back if *@held (the cleanup of
 * PB_MPI_THREAD_GUARD). */
static PB_ALWAYS_INLINE void pb_eng_lock_leave(const int *held)
{
    if (PB_UNLIKELY(*held))
        pb_eng_lock_release();
}

/* The first statement of every exported MPI function: holds the library
 * lock until the function returns (after its return value is computed). */
#define PB_MPI_THREAD_GUARD                                                                        \
    const int pb_mpi_thread_guard_held __attribute__((cleanup(pb_eng_lock_leave))) =               \
        pb_eng_lock_enter()

/* Count one more (@on 1) or one fewer (@on 0) instance granted
 * MPI_THREAD_MULTIPLE. */
void pb_eng_lock_use(int on);

/* The stages of a wait, each of which lets other threads of this process
 * run (when the calling thread holds the lock: it gives it up meanwhile):
 * pause the CPU a moment; yield the CPU; or, when another thread already
 * sleeps on the doorbell, sleep until a thread leaves the library, the
 * sleeper wakes, or @timeout_ms pass. */
void pb_eng_lock_relax(void);
void pb_eng_lock_yield(void);
void pb_eng_lock_wait_turn(int timeout_ms);

/* While the lock is held: claim the doorbell for this thread's sleep.
 * @return 1 when claimed (pb_eng_lock_doorbell_done gives it back), 0 when
 * another thread sleeps on it (wait with pb_eng_lock_wait_turn).  Without
 * the lock in force, always 1. */
int pb_eng_lock_doorbell_claim(void);
void pb_eng_lock_doorbell_done(void);

/* Have @wake called when a thread leaves the library (under the lock)
 * while another sleeps on the doorbell: it wakes the sleeper if the
 * leaving thread's work may have completed what the sleeper waits for. */
void pb_eng_lock_set_wake(void (*wake)(void));

/* Give the lock up entirely (every level of this thread's hold) around a
 * blocking call: @return the levels given up, for pb_eng_lock_resume.
 * 0 when the thread held nothing. */
unsigned pb_eng_lock_suspend(void);
void pb_eng_lock_resume(unsigned levels);

#endif
