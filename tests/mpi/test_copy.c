/* The engine's large copies (src/mpi/engine/copy.c): every length and
 * alignment arrives whole, with nothing written around it; the helper
 * thread takes part when the process may use two CPUs, never when it is
 * bound to one or POSTBOX_COPY_HELP is 0; it stops at finalize and starts
 * again, and a fork's child starts its own; copies from several threads at
 * once stay whole.
 *
 * copy.c and the tunables are compiled into this program, which stands for
 * the engine's statistics; nothing here needs MPI_Init. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "mpi/engine/copy.h"
#include "mpi/engine/stats.h"
#include "mpi/engine/tunables.h"

pb_eng_stats_t pb_eng_stats; /* the engine's (engine.c), not linked here */

#define GUARD 64
#define PATTERN_GUARD 0x5a

static unsigned char *buffer(size_t len)
{
    unsigned char *p = malloc(len + 2 * GUARD + 8);

    CHECK(p != NULL);
    return p;
}

/* Copy @len bytes from offset @src_off to offset @dst_off and check the
 * bytes copied and the guards around them. */
static void copy_checked(size_t len, size_t src_off, size_t dst_off, unsigned seed)
{
    unsigned char *src = buffer(len), *dst = buffer(len);
    unsigned char *from = src + GUARD + src_off, *to = dst + GUARD + dst_off;

    for (size_t i = 0; i < len; i++)
        from[i] = (unsigned char)(i * 131u + seed);
    memset(dst, PATTERN_GUARD, len + 2 * GUARD + 8);
    pb_eng_copy(to, from, len);
    for (size_t i = 0; i < len; i++)
        CHECK_MSG(to[i] == (unsigned char)(i * 131u + seed),
                  "%zu bytes (offsets %zu, %zu): byte %zu is %u, expected %u", len, src_off,
                  dst_off, i, to[i], (unsigned char)(i * 131u + seed));
    for (unsigned char *g = dst; g < to; g++)
        CHECK_MSG(*g == PATTERN_GUARD, "%zu bytes: written %td bytes before the destination", len,
                  to - g);
    for (unsigned char *g = to + len; g < dst + len + 2 * GUARD + 8; g++)
        CHECK_MSG(*g == PATTERN_GUARD, "%zu bytes: written %td bytes past the destination", len,
                  g - (to + len));
    free(src);
    free(dst);
}

static void setup(const char *help)
{
    setenv("POSTBOX_COPY_HELP", help, 1);
    pb_eng_tunables_read();
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int two_cpus(void)
{
    cpu_set_t cpus;

    return sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) >= 2;
}

/* Copy 4 MiB again and again until the helper has copied some of it, for
 * at most @limit_s (it may not be scheduled at once on a loaded machine).
 * @return whether it took part. */
static int helper_takes_part(double limit_s)
{
    size_t len = (size_t)4 << 20;
    char *src = malloc(len), *dst = malloc(len);
    uint64_t before = pb_eng_stat_get(&pb_eng_stats.copy_helper_bytes);
    double until = now_s() + limit_s;
    int took = 0;

    CHECK(src != NULL && dst != NULL);
    memset(src, 7, len);
    while (!took && now_s() < until) {
        pb_eng_copy(dst, src, len);
        took = pb_eng_stat_get(&pb_eng_stats.copy_helper_bytes) > before;
    }
    CHECK(memcmp(dst, src, len) == 0);
    free(src);
    free(dst);
    return took;
}

static void case_lengths_and_alignments(void)
{
    static const size_t lengths[] = {0,
                                     1,
                                     4095,
                                     (64 << 10) - 1,
                                     64 << 10,
                                     (128 << 10) - 1,
                                     128 << 10,
                                     (128 << 10) + 1,
                                     (1 << 20) + 13,
                                     (4 << 20) + 4095};
    static const size_t offsets[][2] = {{0, 0}, {1, 3}, {7, 0}, {0, 5}};

    setup("1"); /* every copy is offered to the helper */
    for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++)
        for (size_t o = 0; o < sizeof(offsets) / sizeof(offsets[0]); o++)
            copy_checked(lengths[l], offsets[o][0], offsets[o][1], (unsigned)(l * 4 + o));
    pb_eng_copy_finalize();
}

static void case_helper_takes_part(void)
{
    setup("1048576");
    if (!two_cpus())
        pbt_skip("this process may use one CPU only");
    CHECK_MSG(helper_takes_part(15), "the helper copied nothing of 4 MiB copies in 15 s");
    CHECK(pb_eng_stat_get(&pb_eng_stats.copy_bytes) >= (4u << 20));
    pb_eng_copy_finalize();
}

static void case_short_copies_stay_alone(void)
{
    setup("1048576");
    copy_checked((1 << 20) - 1, 0, 0, 1);
    CHECK_EQ_U64(pb_eng_stat_get(&pb_eng_stats.copy_bytes), 0);
    CHECK_EQ_U64(pb_eng_stat_get(&pb_eng_stats.copy_helper_bytes), 0);
    pb_eng_copy_finalize();
}

static void case_zero_turns_it_off(void)
{
    setup("0");
    copy_checked((size_t)4 << 20, 0, 0, 2);
    CHECK_EQ_U64(pb_eng_stat_get(&pb_eng_stats.copy_bytes), 0);
    CHECK_EQ_U64(pb_eng_stat_get(&pb_eng_stats.copy_helper_bytes), 0);
    pb_eng_copy_finalize();
}

static void case_one_cpu_copies_alone(void)
{
    cpu_set_t one;

    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    CHECK_SYS(sched_setaffinity(0, sizeof(one), &one));
    setup("1");
    for (int i = 0; i < 20; i++)
        copy_checked((size_t)1 << 20, 0, 0, (unsigned)i);
    CHECK(pb_eng_stat_get(&pb_eng_stats.copy_bytes) == 0);
    CHECK_EQ_U64(pb_eng_stat_get(&pb_eng_stats.copy_helper_bytes), 0);
    pb_eng_copy_finalize();
}

static void case_restarts_after_finalize(void)
{
    setup("1048576");
    if (!two_cpus())
        pbt_skip("this process may use one CPU only");
    for (int round = 0; round < 3; round++) {
        CHECK_MSG(helper_takes_part(15), "round %d: the helper copied nothing in 15 s", round);
        pb_eng_copy_finalize();
    }
    pb_eng_copy_finalize(); /* a second finalize finds nothing to stop */
}

static void case_fork_child_starts_its_own(void)
{
    pid_t child;
    int status;

#if defined(__SANITIZE_THREAD__)
    pbt_skip("ThreadSanitizer cannot start a thread in the child of a multithreaded fork");
#endif
    setup("1048576");
    if (!two_cpus())
        pbt_skip("this process may use one CPU only");
    CHECK_MSG(helper_takes_part(15), "the helper copied nothing in 15 s");
    child = fork();
    CHECK_SYS(child);
    if (child == 0) {
        /* the parent's helper is not here: copies work, a helper of the
         * child's own starts, finalize joins only that one */
        copy_checked((size_t)4 << 20, 0, 0, 9);
        if (!helper_takes_part(15))
            _exit(2);
        pb_eng_copy_finalize();
        _exit(0);
    }
    CHECK_SYS(waitpid(child, &status, 0));
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status %#x",
              status);
    CHECK_MSG(helper_takes_part(15), "the parent's helper copied nothing after the fork");
    pb_eng_copy_finalize();
}

#define THREADS 4

static void *copier(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;

    for (int i = 0; i < 10; i++)
        copy_checked(((size_t)1 << 20) + seed * 4099, seed, i % 3, seed * 100 + (unsigned)i);
    return NULL;
}

static void case_threads_at_once(void)
{
    pthread_t threads[THREADS];

    setup("131072");
    for (uintptr_t t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, copier, (void *)t) == 0);
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);
    pb_eng_copy_finalize();
}

static const pbt_case_t cases[] = {
    PBT_CASE(lengths_and_alignments),    PBT_CASE(helper_takes_part),
    PBT_CASE(short_copies_stay_alone),   PBT_CASE(zero_turns_it_off),
    PBT_CASE(one_cpu_copies_alone),      PBT_CASE(restarts_after_finalize),
    PBT_CASE(fork_child_starts_its_own), PBT_CASE(threads_at_once),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
