/*
 * parmacs_dsm.h: the PARMACS macros of SPLASH-2 programs on Postbox's
 * distributed shared memory (postbox/dsm.h).  Include it through
 * postbox/parmacs.h with -DPOSTBOX_PARMACS_DSM=1; the same program builds on
 * plain threads with postbox/parmacs_pthreads.h.
 *
 * Every process of the job runs main up to MAIN_INITENV, which joins the
 * DSM; there every process but process 0 serves the DSM until process 0's
 * MAIN_END, then exits.  Process 0 alone goes on: it allocates shared
 * memory, creates the locks and barriers and the threads (which the DSM
 * places on the job's processes), and ends the job at MAIN_END.
 *
 * Locks, barriers and self-scheduling subscripts are handles that main
 * creates (LOCKINIT, BARINIT, GSINIT) before CREATE, in G_MALLOC memory.
 * Every macro that can fail prints what failed on stderr and ends the
 * program with status 2.
 */
#ifndef POSTBOX_PARMACS_DSM_H
#define POSTBOX_PARMACS_DSM_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "postbox/dsm.h"

/* The environment MAIN_INITENV makes: process 0's main's own, never shared. */
typedef struct pb_parmacs_env {
    postbox_dsm_thread_t *threads; /* the threads CREATE made, in order */
    int capacity;                  /* slots of threads */
    int created;                   /* threads CREATE made */
    int joined;                    /* threads WAIT_FOR_END joined */
} pb_parmacs_env_t;

/* A global self-scheduling subscript (GETSUB), in shared memory. */
typedef struct pb_parmacs_gs {
    int lock;     /* a DSM lock */
    int next;     /* the next subscript handed out */
    int finished; /* threads that found the subscripts exhausted */
} pb_parmacs_gs_t;

extern pb_parmacs_env_t *pb_parmacs_env;

/* Print "parmacs: " and the message on stderr and end the program
 * (status 2). */
__attribute__((format(printf, 1, 2), noreturn)) static inline void
pb_parmacs_fail(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("parmacs: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(stdout);
    fflush(stderr);
    _exit(2);
}

/* end the program with "parmacs: WHAT: the DSM's text for RET" */
static inline void pb_parmacs_die(const char *what, int ret)
{
    pb_parmacs_fail("%s: %s", what, postbox_dsm_strerror(ret));
}

/* the environment, or the end of the program if MAIN_INITENV has not run */
static inline pb_parmacs_env_t *pb_parmacs_env_of(const char *macro)
{
    if (pb_parmacs_env == NULL)
        pb_parmacs_fail("%s before MAIN_INITENV", macro);
    return pb_parmacs_env;
}

/* I, an index of an array of COUNT locks, or the end of the program */
static inline long pb_parmacs_index(long i, long count, const char *macro)
{
    if (i < 0 || i >= count)
        pb_parmacs_fail("%s: lock %ld of an array of %ld", macro, i, count);
    return i;
}

static inline void pb_parmacs_check(int ret, const char *what)
{
    if (ret != 0)
        pb_parmacs_die(what, ret);
}

/* The DSM's range is twice GLOBAL_SIZE: postbox_dsm_malloc serves the
 * upper half of it (the lower half is postbox_dsm_alloc's, for collective
 * allocations, which no PARMACS macro makes). */
static inline void pb_parmacs_main_init(size_t global_size)
{
    if (pb_parmacs_env != NULL)
        pb_parmacs_fail("MAIN_INITENV a second time");
    int ret = postbox_dsm_init(2 * global_size);
    if (ret != 0)
        pb_parmacs_die("MAIN_INITENV: postbox_dsm_init", ret);
    if (postbox_dsm_process() != 0) {
        ret = postbox_dsm_serve();
        exit(ret == 0 ? 0 : 2);
    }
    pb_parmacs_env = calloc(1, sizeof *pb_parmacs_env);
    if (pb_parmacs_env == NULL)
        pb_parmacs_die("MAIN_INITENV: calloc", POSTBOX_DSM_ERR_NO_MEMORY);
}

static inline void *pb_parmacs_malloc(size_t size)
{
    pb_parmacs_env_of("G_MALLOC");
    void *p = postbox_dsm_malloc(size);
    if (p == NULL)
        pb_parmacs_fail("G_MALLOC(%zu): %s", size, postbox_dsm_strerror(postbox_dsm_last_error()));
    return p;
}

/* HANDLE, a lock or barrier id, or the end of the program if it is an
 * error code */
static inline int pb_parmacs_handle(int handle, const char *what)
{
    if (handle < 0)
        pb_parmacs_die(what, handle);
    return handle;
}

static inline void *pb_parmacs_start(void *arg)
{
    void (*entry)(void) = (void (*)(void))arg;
    entry();
    return NULL;
}

static inline void pb_parmacs_create(void (*entry)(void))
{
    pb_parmacs_env_t *env = pb_parmacs_env_of("CREATE");
    if (entry == NULL)
        pb_parmacs_fail("CREATE of a NULL function");
    if (env->created == env->capacity) {
        int capacity = env->capacity ? 2 * env->capacity : 16;
        postbox_dsm_thread_t *threads = realloc(env->threads, (size_t)capacity * sizeof *threads);
        if (threads == NULL)
            pb_parmacs_die("CREATE: realloc", POSTBOX_DSM_ERR_NO_MEMORY);
        env->threads = threads;
        env->capacity = capacity;
    }
    pb_parmacs_check(
        postbox_dsm_thread_create(&env->threads[env->created], pb_parmacs_start, (void *)entry),
        "CREATE: postbox_dsm_thread_create");
    env->created++;
}

static inline void pb_parmacs_wait_for_end(int count)
{
    pb_parmacs_env_t *env = pb_parmacs_env_of("WAIT_FOR_END");
    if (count < 0 || count > env->created - env->joined)
        pb_parmacs_fail("WAIT_FOR_END(%d): %d threads are running", count,
                        env->created - env->joined);
    for (int i = 0; i < count; i++)
        pb_parmacs_check(postbox_dsm_thread_join(env->threads[env->joined++], NULL),
                         "WAIT_FOR_END: postbox_dsm_thread_join");
}

static inline void pb_parmacs_gs_init(pb_parmacs_gs_t *gs)
{
    gs->lock = pb_parmacs_handle(postbox_dsm_lock_create(), "GSINIT: postbox_dsm_lock_create");
    gs->next = 0;
    gs->finished = 0;
}

/* The next subscript of 0..MAX, or -1 once they are all handed out; the
 * NPROC-th thread to be told -1 starts the subscripts over. */
static inline int pb_parmacs_getsub(pb_parmacs_gs_t *gs, int max, int nproc)
{
    int sub;
    pb_parmacs_check(postbox_dsm_lock(gs->lock), "GETSUB: postbox_dsm_lock");
    if (gs->next <= max) {
        sub = gs->next++;
    } else {
        sub = -1;
        if (++gs->finished >= nproc) {
            gs->next = 0;
            gs->finished = 0;
        }
    }
    pb_parmacs_check(postbox_dsm_unlock(gs->lock), "GETSUB: postbox_dsm_unlock");
    return sub;
}

/* Microseconds of a monotonic clock (one machine's: compare only times
 * taken by one thread). */
static inline unsigned long pb_parmacs_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long)ts.tv_sec * 1000000UL + (unsigned long)ts.tv_nsec / 1000UL;
}

static inline void pb_parmacs_main_end(int status)
{
    pb_parmacs_env_t *env = pb_parmacs_env_of("MAIN_END");
    if (env->joined != env->created)
        pb_parmacs_fail("MAIN_END: %d threads were never waited for", env->created - env->joined);
    free(env->threads);
    free(env);
    fflush(stdout);
    pb_parmacs_check(postbox_dsm_finalize(), "MAIN_END: postbox_dsm_finalize");
    exit(status);
}

/* --- the macros --------------------------------------------------------- */

#define MAIN_ENV pb_parmacs_env_t *pb_parmacs_env;
#define EXTERN_ENV
/* the last of one or two macro arguments: (size) or (, size) */
#define PB_PARMACS_SIZE_ARG(...)                                                                   \
    PB_PARMACS_PICK(__VA_ARGS__, PB_PARMACS_SECOND, PB_PARMACS_FIRST)(__VA_ARGS__)
#define PB_PARMACS_PICK(a, b, name, ...) name
#define PB_PARMACS_FIRST(a) (a)
#define PB_PARMACS_SECOND(a, b) (b)

/* join the DSM, with SIZE bytes for all G_MALLOCs together:
 * MAIN_INITENV(size), or the m4 macros' MAIN_INITENV(, size) */
#define MAIN_INITENV(...) pb_parmacs_main_init(PB_PARMACS_SIZE_ARG(__VA_ARGS__))
#define MAIN_END pb_parmacs_main_end(0)
/* Postbox's addition: end the program with STATUS (SPLASH's MAIN_END is 0) */
#define MAIN_EXIT(status) pb_parmacs_main_end(status)

/* start a thread running void fn(void), on a process the DSM chooses */
#define CREATE(fn) pb_parmacs_create(fn)
/* join the N threads CREATE made that are not joined yet */
#define WAIT_FOR_END(n) pb_parmacs_wait_for_end(n)

#define G_MALLOC(size) pb_parmacs_malloc(size)
#define G_FREE(p) postbox_dsm_free(p)

#define LOCKDEC(l) int l;
#define LOCKINIT(l) ((l) = pb_parmacs_handle(postbox_dsm_lock_create(), "LOCKINIT"))
#define LOCK(l) pb_parmacs_check(postbox_dsm_lock(l), "LOCK")
#define UNLOCK(l) pb_parmacs_check(postbox_dsm_unlock(l), "UNLOCK")

#define ALOCKDEC(a, n) int a[n];
#define ALOCKINIT(a, n)                                                                            \
    do {                                                                                           \
        long pb_n_ = (long)(n);                                                                    \
        if (pb_n_ > (long)(sizeof(a) / sizeof((a)[0])))                                            \
            pb_parmacs_fail("ALOCKINIT of %ld locks: the array has %ld", pb_n_,                    \
                            (long)(sizeof(a) / sizeof((a)[0])));                                   \
        for (long pb_i_ = 0; pb_i_ < pb_n_; pb_i_++)                                               \
            (a)[pb_i_] = pb_parmacs_handle(postbox_dsm_lock_create(), "ALOCKINIT");                \
    } while (0)
#define PB_PARMACS_LOCK_OF(a, i, macro)                                                            \
    ((a)[pb_parmacs_index((long)(i), (long)(sizeof(a) / sizeof((a)[0])), macro)])
#define ALOCK(a, i) pb_parmacs_check(postbox_dsm_lock(PB_PARMACS_LOCK_OF(a, i, "ALOCK")), "ALOCK")
#define AULOCK(a, i)                                                                               \
    pb_parmacs_check(postbox_dsm_unlock(PB_PARMACS_LOCK_OF(a, i, "AULOCK")), "AULOCK")

#define BARDEC(b) int b;
/* BARINIT(b) or BARINIT(b, n): the count is BARRIER's */
#define BARINIT(b, ...) ((b) = pb_parmacs_handle(postbox_dsm_barrier_create(), "BARINIT"))
#define BARRIER(b, n) pb_parmacs_check(postbox_dsm_barrier((b), (int)(n)), "BARRIER")

#define GSDEC(gs) pb_parmacs_gs_t gs;
#define GSINIT(gs) pb_parmacs_gs_init(&(gs))
#define GETSUB(gs, sub, max, nproc) ((sub) = pb_parmacs_getsub(&(gs), (max), (nproc)))

#define CLOCK(t) ((t) = pb_parmacs_clock_us())

#endif /* POSTBOX_PARMACS_DSM_H */
