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
 * channel's doorbell, the others on a futex that a thread
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

/* The lock's bias toward one thread (lock.c says how it is revoked), read
 * by the inline fast path below.  Only the owner writes owner (but for the
 * first grant) and busy. */
struct pb_eng_lock_bias {
    _Alignas(64) _Atomic(const void *) owner; /* the owner's &pb_eng_lock_depth; NULL: none */
    _Atomic unsigned busy;                    /* 1 while the owner holds the lock by the bias */
    _Alignas(64) _Atomic unsigned revoked;    /* 1: the bias is over, for good */
};
extern struct pb_eng_lock_bias pb_eng_lock_bias;

/* The calling thread's levels of hold (0: it holds nothing); initial-exec,
 * so reading it costs no call. */
extern _Thread_local unsigned pb_eng_lock_depth __attribute__((tls_model("initial-exec")));

/* The slow paths of pb_eng_lock_enter and pb_eng_lock_leave (the
 * outermost level taken or given back not by the bias). */
void pb_eng_lock_take(void);
void pb_eng_lock_give(void);

/* 1 when the lock is in force (MPI_THREAD_MULTIPLE granted). */
static PB_ALWAYS_INLINE int pb_eng_lock_active(void)
{
    return PB_UNLIKELY(atomic_load_explicit(&pb_eng_lock_users, memory_order_relaxed) > 0);
}

/* 1 when the calling thread is the owner of the bias and holds the lock
 * by it. */
static PB_ALWAYS_INLINE int pb_eng_lock_by_bias(void)
{
    return atomic_load_explicit(&pb_eng_lock_bias.owner, memory_order_relaxed) ==
               &pb_eng_lock_depth &&
           atomic_load_explicit(&pb_eng_lock_bias.busy, memory_order_relaxed);
}

/* Enter the library: take the lock (recursively) if it is in force.
 * @return 1 when it was taken (pb_eng_lock_leave gives it back), else 0.
 * The bias's owner takes it with two plain stores and two loads. */
static PB_ALWAYS_INLINE int pb_eng_lock_enter(void)
{
    if (PB_LIKELY(!pb_eng_lock_active()))
        return 0;
    if (pb_eng_lock_depth++ > 0)
        return 1;
    if (PB_LIKELY(atomic_load_explicit(&pb_eng_lock_bias.owner, memory_order_relaxed) ==
                  &pb_eng_lock_depth)) {
        atomic_store_explicit(&pb_eng_lock_bias.busy, 1, memory_order_relaxed);
        /* no CPU fence: the revoking thread's membarrier stands for it */
        atomic_signal_fence(memory_order_seq_cst);
        if (PB_LIKELY(!atomic_load_explicit(&pb_eng_lock_bias.revoked, memory_order_acquire)))
            return 1;
    }
    pb_eng_lock_take();
    return 1;
}

/* Leave the library: give back one level of the lock if *@held (the
 * cleanup of PB_MPI_THREAD_GUARD). */
static PB_ALWAYS_INLINE void pb_eng_lock_leave(const int *held)
{
    if (PB_LIKELY(!*held) || --pb_eng_lock_depth > 0)
        return;
    if (PB_LIKELY(pb_eng_lock_by_bias())) {
        /* nobody else is in the library while the bias holds: no wake-ups */
        atomic_store_explicit(&pb_eng_lock_bias.busy, 0, memory_order_release);
        return;
    }
    pb_eng_lock_give();
}

/* The first statement of every exported MPI function: holds the library
 * lock until the function returns (after its return value is computed). */
#define PB_MPI_THREAD_GUARD                                                                        \
    const int pb_mpi_thread_guard_held __attribute__((cleanup(pb_eng_lock_leave))) =               \
        pb_eng_lock_enter()

/* Count one more (@on 1) or one fewer (@on 0) instance granted
 * MPI_THREAD_MULTIPLE.  The first grant biases the lock toward the calling
 * thread. */
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
