/* The store of scratch blocks of the collectives (src/mpi/coll_scratch.c):
 * a large block given back is the one the next request of its size or
 * less gets; the smallest block that fits is taken; small blocks and
 * blocks over the budget are not kept; the budget of four blocks and
 * 64 MB holds, the larger blocks staying; finalize frees every block; and
 * threads taking and giving back at once leave the store consistent.
 *
 * coll_scratch.c is compiled into this program; nothing here needs
 * MPI_Init. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "mpi/coll_scratch.h"

#define KB ((size_t)1024)
#define MB (1024 * KB)

/* A block of @bytes, written through so that its pages are real. */
static char *get_written(size_t bytes)
{
    char *p = pb_coll_scratch_get(bytes);

    CHECK(p != NULL);
    memset(p, 0x5a, bytes);
    return p;
}

static void case_large_block_comes_back(void)
{
    char *p = get_written(MB);

    pb_coll_scratch_put(p);
    CHECK_MSG(pb_coll_scratch_kept() == MB, "kept %zu bytes, expected %zu", pb_coll_scratch_kept(),
              MB);
    CHECK_MSG(pb_coll_scratch_get(MB) == p, "a 1 MB block given back was not reused");
    CHECK(pb_coll_scratch_kept() == 0);
    pb_coll_scratch_put(p);
    CHECK_MSG(pb_coll_scratch_get(512 * KB) == p, "a 512 KB request did not take the 1 MB block");
    pb_coll_scratch_put(p);
    pb_coll_scratch_finalize();
    CHECK(pb_coll_scratch_kept() == 0);
}

static void case_smallest_fit_is_taken(void)
{
    char *small = get_written(256 * KB), *large = get_written(2 * MB);

    pb_coll_scratch_put(large);
    pb_coll_scratch_put(small);
    CHECK_MSG(pb_coll_scratch_get(200 * KB) == small, "200 KB: not the 256 KB block");
    CHECK_MSG(pb_coll_scratch_get(MB) == large, "1 MB: not the 2 MB block");
    pb_coll_scratch_put(small);
    pb_coll_scratch_put(large);
    CHECK(pb_coll_scratch_kept() == 2 * MB + 256 * KB);
    pb_coll_scratch_finalize();
}

static void case_small_and_huge_are_not_kept(void)
{
    pb_coll_scratch_put(get_written(4 * KB));
    pb_coll_scratch_put(get_written(64 * KB - 1));
    CHECK_MSG(pb_coll_scratch_kept() == 0, "kept %zu bytes of small blocks",
              pb_coll_scratch_kept());
    pb_coll_scratch_put(pb_coll_scratch_get(65 * MB)); /* over the whole budget */
    CHECK_MSG(pb_coll_scratch_kept() == 0, "kept a block larger than the budget");
    pb_coll_scratch_put(NULL);
    CHECK(pb_coll_scratch_kept() == 0);
}

static void case_budget_keeps_the_larger(void)
{
    char *b[6];
    size_t sizes[6] = {MB, 2 * MB, 3 * MB, 4 * MB, 5 * MB, 30 * MB};

    for (int i = 0; i < 6; i++)
        b[i] = pb_coll_scratch_get(sizes[i]);
    /* four places: the fifth replaces the smallest (1 MB) */
    for (int i = 0; i < 5; i++)
        pb_coll_scratch_put(b[i]);
    CHECK_MSG(pb_coll_scratch_kept() == 14 * MB, "kept %zu MB, expected 14",
              pb_coll_scratch_kept() / MB);
    /* 30 MB more is 44 MB in four places: it replaces the 2 MB block */
    pb_coll_scratch_put(b[5]);
    CHECK_MSG(pb_coll_scratch_kept() == 42 * MB, "kept %zu MB, expected 42",
              pb_coll_scratch_kept() / MB);
    /* a block smaller than all four kept is not kept */
    pb_coll_scratch_put(pb_coll_scratch_get(2 * MB));
    CHECK(pb_coll_scratch_kept() == 42 * MB);
    CHECK_MSG(pb_coll_scratch_get(30 * MB) == b[5], "the 30 MB block is not the one kept");
    /* 64 MB in all: a 40 MB block pushes out the smaller ones, smallest
     * first, until it fits (3, 4, 5, then 30 MB: 40 + 30 is over) */
    pb_coll_scratch_put(b[5]);
    pb_coll_scratch_put(pb_coll_scratch_get(40 * MB));
    CHECK_MSG(pb_coll_scratch_kept() == 40 * MB, "kept %zu MB after a 40 MB block, expected 40",
              pb_coll_scratch_kept() / MB);
    pb_coll_scratch_finalize();
    CHECK(pb_coll_scratch_kept() == 0);
}

#define THREADS 4

static void *taker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;

    for (int i = 0; i < 200; i++) {
        size_t bytes = (size_t)(64 + (seed * 37 + (unsigned)i * 11) % 512) * KB;
        unsigned char *p = pb_coll_scratch_get(bytes);

        CHECK(p != NULL);
        memset(p, (int)seed, bytes);
        for (size_t j = 0; j < bytes; j += 4096)
            CHECK_MSG(p[j] == (unsigned char)seed, "a block taken by thread %u changed under it",
                      seed);
        pb_coll_scratch_put(p);
    }
    return NULL;
}

static void case_threads_at_once(void)
{
    pthread_t threads[THREADS];

    for (uintptr_t t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, taker, (void *)(t + 1)) == 0);
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK(pb_coll_scratch_kept() <= 64 * MB);
    pb_coll_scratch_finalize();
}

static const pbt_case_t cases[] = {
    PBT_CASE(large_block_comes_back),
    PBT_CASE(smallest_fit_is_taken),
    PBT_CASE(small_and_huge_are_not_kept),
    PBT_CASE(budget_keeps_the_larger),
    PBT_CASE(threads_at_once),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
