/*
 * Large copies with a second thread (copy.h).
 *
 * One job at a time: the thread that holds job_lock publishes the job's
 * addresses, then its generation and first piece in `next` (generation in
 * the high 32 bits, the next piece in the low ones), then the generation in
 * `posted`, the word the helper sleeps on.  Both threads take pieces from
 * `next`; the helper by compare-and-swap, so that a helper still holding an
 * older generation can never take a piece of a newer job.  The caller
 * counts the pieces it took itself and waits until `helped` (reset for each
 * job before it is published) accounts for the rest.
 */
#include "mpi/engine/copy.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi/engine/stats.h"
#include "mpi/engine/tunables.h"
#include "util/compiler.h"
#include "util/futex.h"
#include "util/log.h"
#include "util/thread.h"

/* The bytes of one piece: small enough that two threads share a copy
 * evenly and that the caller's wait for the helper's last piece is short
 * (a few microseconds), large enough that taking one costs nothing. */
#define PIECE ((size_t)64 << 10)

/* How long the helper polls for the next job before it sleeps: a program's
 * next large put usually follows at once. */
#define HELPER_POLL_NS 30000

/* A job posted while the helper was awake where it copied less than
 * 1 / HELPER_SHARE_MIN of the pieces, or where the caller spent more than
 * 1 / HELPER_WAIT_MAX of the job waiting for the helper's last pieces,
 * shows that the helper had no processor of its own (the node's cores are
 * busy, and it was taken off its processor in the middle of a piece): the
 * next large copies then go without it, 1, 3, 7 ... up to SKIP_MAX of them,
 * before it is tried again; a job where it did its share in time ends the
 * back-off. */
#define HELPER_SHARE_MIN 4
#define HELPER_WAIT_MAX 3
#define SKIP_MAX 255

/* Polls of the caller waiting for the helper's last pieces before each
 * sched_yield (the helper may share its core). */
#define CALLER_POLLS 256

static struct {
    pthread_mutex_t job_lock; /* one job at a time; taken with trylock */
    pthread_t thread;
    pid_t owner;               /* the process that started it: a fork's child has none */
    int started;               /* the helper runs (under job_lock) */
    int unavailable;           /* one CPU only, or the thread could not start */
    uint32_t gen;              /* the last job's generation (under job_lock) */
    unsigned skip, skip_left;  /* the back-off (under job_lock) */
    _Atomic uint32_t posted;   /* the helper's futex word: the generation */
    _Atomic uint32_t sleeping; /* the helper is (about to be) asleep */
    _Atomic int stop;
    _Atomic(char *) dst; /* the job */
    _Atomic(const char *) src;
    _Atomic size_t len;
    _Atomic uint64_t next;   /* generation << 32 | next piece */
    _Atomic uint32_t helped; /* pieces the helper finished of this job */
} copy = {.job_lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static size_t pieces_of(size_t len)
{
    return (len + PIECE - 1) / PIECE;
}

static void copy_piece(char *dst, const char *src, size_t len, size_t piece)
{
    size_t at = piece * PIECE, n = len - at < PIECE ? len - at : PIECE;

    memcpy(dst + at, src + at, n);
}

/* Take and copy the pieces of the job published with generation @gen while
 * any is left.  @return 1 if that job was found (pieces left or not). */
static int helper_work(uint32_t gen)
{
    uint64_t v = atomic_load_explicit(&copy.next, memory_order_acquire);

    if ((uint32_t)(v >> 32) != gen)
        return 0;
    for (;;) {
        char *dst = atomic_load_explicit(&copy.dst, memory_order_relaxed);
        const char *src = atomic_load_explicit(&copy.src, memory_order_relaxed);
        size_t len = atomic_load_explicit(&copy.len, memory_order_relaxed);

        if ((uint32_t)(v >> 32) != gen || (uint32_t)v >= pieces_of(len))
            return 1;
        /* the addresses read above are this job's if the piece is */
        if (!atomic_compare_exchange_weak_explicit(&copy.next, &v, v + 1, memory_order_acquire,
                                                   memory_order_acquire))
            continue;
        copy_piece(dst, src, len, (uint32_t)v);
        pb_eng_stat_add(&pb_eng_stats.copy_helper_bytes,
                        len - (uint32_t)v * PIECE < PIECE ? len - (uint32_t)v * PIECE : PIECE);
        atomic_fetch_add_explicit(&copy.helped, 1, memory_order_release);
        v++;
    }
}

static void *helper_main(void *unused)
{
    uint32_t seen = atomic_load_explicit(&copy.posted, memory_order_acquire);

    (void)unused;
    while (!atomic_load_explicit(&copy.stop, memory_order_acquire)) {
        uint64_t until = now_ns() + HELPER_POLL_NS;
        uint32_t gen;

        while ((gen = atomic_load_explicit(&copy.posted, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&copy.stop, memory_order_relaxed) && now_ns() < until)
            for (int i = 0; i < 32; i++)
                pb_cpu_relax();
        if (gen == seen) {
            atomic_store(&copy.sleeping, 1);
            if (atomic_load(&copy.posted) == seen && !atomic_load(&copy.stop))
                pb_futex_wait(&copy.posted, seen, -1);
            atomic_store(&copy.sleeping, 0);
            continue;
        }
        helper_work(gen);
        seen = gen;
    }
    return NULL;
}

/* Start the helper (under job_lock).  @return 1 when it runs. */
static int helper_start(void)
{
    cpu_set_t cpus;
    int err;

    if (copy.started && copy.owner != getpid())
        copy.started = 0; /* this is a fork's child: the thread stayed with the parent */
    if (copy.started)
        return 1;
    if (copy.unavailable)
        return 0;
    if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) < 2) {
        copy.unavailable = 1; /* bound to one CPU: a second thread only competes */
        return 0;
    }
    atomic_store(&copy.stop, 0);
    /* joinable: pb_eng_copy_finalize stops it */
    err = pb_thread_start_masked(helper_main, NULL, 0, 0, &copy.thread);
    if (err != 0) {
        errno = err;
        pb_warn("the copy helper thread could not start (%m): large copies use one thread");
        copy.unavailable = 1;
        return 0;
    }
    pthread_setname_np(copy.thread, "postbox-copy");
    copy.owner = getpid();
    copy.started = 1;
    return 1;
}

void pb_eng_copy_large(void *dst, const void *src, size_t len)
{
    size_t pieces, mine = 0;
    uint64_t v;
    uint32_t gen, asleep;
    uint64_t start, waited, end;

    if (len < 2 * PIECE || pieces_of(len) >= UINT32_MAX ||
        pthread_mutex_trylock(&copy.job_lock) != 0) {
        memcpy(dst, src, len);
        return;
    }
    if (copy.skip_left > 0 || !helper_start()) {
        if (copy.skip_left > 0)
            copy.skip_left--;
        pthread_mutex_unlock(&copy.job_lock);
        memcpy(dst, src, len);
        return;
    }
    pieces = pieces_of(len);
    pb_eng_stat_add(&pb_eng_stats.copy_bytes, len);
    gen = ++copy.gen;
    atomic_store_explicit(&copy.helped, 0, memory_order_relaxed);
    atomic_store_explicit(&copy.dst, (char *)dst, memory_order_relaxed);
    atomic_store_explicit(&copy.src, (const char *)src, memory_order_relaxed);
    atomic_store_explicit(&copy.len, len, memory_order_relaxed);
    atomic_store_explicit(&copy.next, (uint64_t)gen << 32, memory_order_release);
    atomic_store(&copy.posted, gen);
    asleep = atomic_load(&copy.sleeping);
    if (asleep)
        pb_futex_wake_all(&copy.posted);
    start = now_ns();
    /* take pieces until none is left; the job's generation cannot change */
    while ((uint32_t)(v = atomic_fetch_add_explicit(&copy.next, 1, memory_order_relaxed)) <
           pieces) {
        copy_piece(dst, src, len, (uint32_t)v);
        mine++;
    }
    waited = now_ns();
    for (int polls = 0; atomic_load_explicit(&copy.helped, memory_order_acquire) < pieces - mine;
         polls++) {
        if (polls % CALLER_POLLS == CALLER_POLLS - 1)
            sched_yield();
        else
            pb_cpu_relax();
    }
    end = now_ns();
    if (asleep) {
        /* a helper woken for this job may well have come too late: no
         * judgement */
    } else if ((pieces - mine) * HELPER_SHARE_MIN < pieces ||
               (end - waited) * HELPER_WAIT_MAX > end - start) {
        copy.skip = copy.skip * 2 + 1 < SKIP_MAX ? copy.skip * 2 + 1 : SKIP_MAX;
        copy.skip_left = copy.skip;
    } else {
        copy.skip = 0;
    }
    pthread_mutex_unlock(&copy.job_lock);
}

void pb_eng_copy_finalize(void)
{
    pthread_mutex_lock(&copy.job_lock);
    if (copy.started && copy.owner == getpid()) {
        atomic_store(&copy.stop, 1);
        /* a generation of its own, so that a restarted helper's first job
         * is new to it */
        copy.gen = atomic_fetch_add(&copy.posted, 1) + 1;
        pb_futex_wake_all(&copy.posted);
        pthread_join(copy.thread, NULL);
    }
    copy.started = 0;
    copy.unavailable = 0;
    copy.skip = copy.skip_left = 0;
    pthread_mutex_unlock(&copy.job_lock);
}
