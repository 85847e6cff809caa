/*
 * pbt-dsm: the DSM (include/postbox/dsm.h) under `postbox run`, on one
 * node and across virtual nodes (tests/dsm/CMakeLists.txt).
 *
 *   pbt-dsm spmd          every process works in main: collective
 *                         allocation, many writers to one page, false
 *                         sharing, barriers in a loop checked after each,
 *                         a lock-protected counter and chain (each entry
 *                         checks the one before, across pages), a relay
 *                         through two locks (transitivity, 3 threads or
 *                         more), a fault storm (every thread reads 64
 *                         pages at once), postbox_dsm_malloc
 *   pbt-dsm threads T     process 0 creates T threads per process in all
 *                         (placed round-robin, several per process when
 *                         T > 1) that reach the shared data through a C
 *                         global set by main; the same checks, and the
 *                         threads' return values through join
 *   pbt-dsm homes         each process writes its own band of pages: it
 *                         becomes their home (the statistics' home_pages)
 *                         and its releases diff none of them, for four
 *                         rounds; from the third, its stores no longer
 *                         fault (hot home pages); every process reads
 *                         every band, a read fault fetching two pages
 *                         (mapping up to 32 from a home on this node)
 *   pbt-dsm unread        each process writes its own band of pages that
 *                         no other process reads: after its second
 *                         release of them they stay writable, even after
 *                         a pause; then its neighbour reads half the
 *                         band, and from then on sees every round's
 *                         values
 *   pbt-dsm nodeshare     pages homed by process 0, written afterwards by
 *                         the other processes of its node only (each its
 *                         own words) and read by all: every process sees
 *                         every store; those writers fetch and diff none
 *                         of them (they map process 0's copy), unless
 *                         POSTBOX_DSM_NODE_SHARE is 0
 *   pbt-dsm nodecache     pages homed by process 0, read by the other
 *                         nodes' processes one after the other: the first
 *                         reader of a node fetches them, the node's later
 *                         ones map the node's cached copy (unless
 *                         POSTBOX_DSM_NODE_SHARE is 0); their stores to
 *                         it reach every process
 *   pbt-dsm nodewrite     pages homed by process 0, written by every
 *                         process, each its own words of every page
 *                         (false sharing): between barriers, and while
 *                         other processes increment a lock-protected
 *                         counter in the same pages (getting them into
 *                         the node's copy that holds those stores);
 *                         then a process's word carried by another's
 *                         diff before its release (the home must see it
 *                         once that release ends; POSTBOX_DSM_TEST_FAIL=
 *                         slow:P:US delays the carrier's diffs);
 *                         every word holds its last writer's value, and
 *                         the other node's processes store into the
 *                         node's cached copy (the statistics'
 *                         node_writes), not each into a copy of its own
 *                         (unless POSTBOX_DSM_NODE_SHARE is 0)
 *   pbt-dsm refetch       (2 processes on 2 nodes) a page written once and
 *                         one written every round, read by the other
 *                         process after each barrier: fetched once and
 *                         each round (write notices), or both each round
 *                         (POSTBOX_DSM_SELF_INVALIDATE=1)
 *   pbt-dsm barriers      each process writes a page and reads its
 *                         neighbour's across BARRIER_ROUNDS barriers (the
 *                         values checked each round); by its
 *                         statistics' round_trips, each process made at
 *                         most 1 barrier round trip a barrier
 *                         (its arrival; the release brings the notices,
 *                         and it and the acknowledgement go without
 *                         reply)
 *   pbt-dsm lockread T    T threads per process (main and T - 1
 *                         pthreads), each the home of its slots of
 *                         pages, whose halves it rewrites and posts
 *                         under its own lock, one after the other, every
 *                         round; each reads its neighbour's slot of the
 *                         round, unread until then, once each half is
 *                         posted (fetched, so marked read, while its
 *                         home writes the second halves; lock acquires,
 *                         so release logs): every half read holds its
 *                         round
 *   pbt-dsm barread T     the same through barriers: each thread reads
 *                         its neighbour's slot's first halves between
 *                         two barriers while their home writes the
 *                         second halves, then those after the second
 *   pbt-dsm barfail       with POSTBOX_DSM_TEST_FAIL=ack:1:3, apply:1:3 or
 *                         arrive:1:3 (process 1 cannot acknowledge, apply
 *                         or arrive at barrier episode 3): every
 *                         process's barrier calls, from
 *                         one of the 3rd to 5th on, return
 *                         POSTBOX_DSM_ERR_COMMUNICATION, at once after
 *                         the first, and the job still finalizes
 *   pbt-dsm errors        bad input gets its error code; allocation limits
 *   pbt-dsm timing        indicative costs (2 processes or more): a page
 *                         fetch, a lock and unlock, a barrier
 *   pbt-dsm killed        process 1 is killed while the others wait for it
 *                         at a barrier (the launcher must end the job)
 *   pbt-dsm segv          a fault outside the shared range still kills
 *                         the process with SIGSEGV (run alone)
 *
 * Process 0 prints "dsm NAME: ok"; any failed check prints a line and
 * makes the process exit 1.
 */
#include <postbox/dsm.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 6
#define INCREMENTS 50
#define PAGE 4096

/* the shared data, reached through this global (set by main before any
 * thread is created, as SPLASH programs do) */
#define CHAIN (256 * INCREMENTS)
#define STORM_PAGES 64
#define RELAY_WORDS (3 * PAGE / sizeof(int))

typedef struct {
    int lock;
    int barrier;
    int nthreads;
    long counter;
    int relay_lock[2];
    int relay_flag[2];
    int chain_count;
    int chain_last;
    char pad[PAGE - 10 * sizeof(long)];
    int one_page[PAGE / sizeof(int)];          /* many writers, one word each */
    int false_sharing[4 * PAGE / sizeof(int)]; /* thread t writes words t, t + n, ... */
    long results[256];
    int chain[CHAIN];       /* appended under the lock: each entry checks the one before */
    int relay[RELAY_WORDS]; /* written by thread 0, read by thread 2 through two locks */
    long storm[STORM_PAGES * PAGE / sizeof(long)]; /* read by every thread at once */
} shared_t;

static shared_t *shared;
/* (an array, not a pointer into argv: the globals go to the processes
 * that run created threads, where argv lies elsewhere) */
static char test_name[32] = "?";
static int me;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL process %d: %s:%d: ", me, __func__, __LINE__);                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fflush(stdout);                                                                        \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

#define OK(call)                                                                                   \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        CHECK(rc_ >= 0, "%s returned %d (%s)", #call, rc_, postbox_dsm_strerror(rc_));             \
    } while (0)

/* wait (asleep between looks) until relay flag @k is up, under its lock */
static void relay_wait(int k)
{
    for (;;) {
        int up;

        OK(postbox_dsm_lock(shared->relay_lock[k]));
        up = shared->relay_flag[k];
        OK(postbox_dsm_unlock(shared->relay_lock[k]));
        if (up)
            return;
        usleep(200);
    }
}

/* Transitivity: thread 0 writes pages thread 2 holds cached, raises flag 0
 * under lock 0; thread 1 sees it and raises flag 1 under lock 1; thread 2
 * sees that and must see thread 0's writes, ordered before it only
 * through the two locks. */
static void relay(int id)
{
    int words = (int)RELAY_WORDS;

    if (id == 2)
        for (int w = 0; w < words; w++)
            CHECK(shared->relay[w] == 0, "relay word %d is %d before the relay", w,
                  shared->relay[w]);
    OK(postbox_dsm_barrier(shared->barrier, shared->nthreads));
    if (id == 0) {
        for (int w = 0; w < words; w++)
            shared->relay[w] = w + 1;
        OK(postbox_dsm_lock(shared->relay_lock[0]));
        shared->relay_flag[0] = 1;
        OK(postbox_dsm_unlock(shared->relay_lock[0]));
    } else if (id == 1) {
        relay_wait(0);
        OK(postbox_dsm_lock(shared->relay_lock[1]));
        shared->relay_flag[1] = 1;
        OK(postbox_dsm_unlock(shared->relay_lock[1]));
    } else if (id == 2) {
        relay_wait(1);
        for (int w = 0; w < words; w++)
            CHECK(shared->relay[w] == w + 1, "relay word %d is %d", w, shared->relay[w]);
    }
}

/* The work of thread @id of @n: every check of the data-race-free
 * patterns. */
static void work(int id, int n)
{
    int words = (int)(sizeof(shared->false_sharing) / sizeof(int));

    for (int round = 1; round <= ROUNDS; round++) {
        shared->one_page[id] = round * 1000 + id;
        for (int w = id; w < words; w += n)
            shared->false_sharing[w] = round * 100000 + w;
        OK(postbox_dsm_barrier(shared->barrier, n));
        for (int t = 0; t < n; t++)
            CHECK(shared->one_page[t] == round * 1000 + t, "round %d: word %d is %d", round, t,
                  shared->one_page[t]);
        for (int w = 0; w < words; w++)
            CHECK(shared->false_sharing[w] == round * 100000 + w, "round %d: word %d is %d", round,
                  w, shared->false_sharing[w]);
        OK(postbox_dsm_barrier(shared->barrier, n));
    }
    /* a fault storm: thread 0 writes, then every thread reads every page
     * at once, half of them backwards */
    if (id == 0)
        for (size_t w = 0; w < sizeof(shared->storm) / sizeof(long); w++)
            shared->storm[w] = (long)w * 3 + 1;
    OK(postbox_dsm_barrier(shared->barrier, n));
    for (size_t k = 0; k < sizeof(shared->storm) / sizeof(long); k++) {
        size_t w = id % 2 ? sizeof(shared->storm) / sizeof(long) - 1 - k : k;

        CHECK(shared->storm[w] == (long)w * 3 + 1, "storm word %zu is %ld", w, shared->storm[w]);
    }
    for (int i = 0; i < INCREMENTS; i++) {
        OK(postbox_dsm_lock(shared->lock));
        shared->counter++;
        /* the previous entry may lie on a page another process wrote */
        if (shared->chain_count > 0)
            CHECK(shared->chain[shared->chain_count - 1] == shared->chain_last,
                  "chain entry %d is %d, not %d", shared->chain_count - 1,
                  shared->chain[shared->chain_count - 1], shared->chain_last);
        shared->chain_last = id * 1000 + i + 1;
        shared->chain[shared->chain_count++] = shared->chain_last;
        OK(postbox_dsm_unlock(shared->lock));
    }
    if (n >= 3)
        relay(id);
    OK(postbox_dsm_barrier(shared->barrier, n));
    CHECK(shared->counter == (long)n * INCREMENTS, "the counter is %ld, not %ld", shared->counter,
          (long)n * INCREMENTS);
    OK(postbox_dsm_barrier(shared->barrier, n));
}

static int run_spmd(void)
{
    int n = postbox_dsm_process_count();
    long *block;

    shared = postbox_dsm_alloc(sizeof(*shared));
    CHECK(shared != NULL, "postbox_dsm_alloc: %s", postbox_dsm_strerror(postbox_dsm_last_error()));
    if (me == 0) {
        shared->lock = postbox_dsm_lock_create();
        shared->relay_lock[0] = postbox_dsm_lock_create();
        shared->relay_lock[1] = postbox_dsm_lock_create();
        shared->barrier = postbox_dsm_barrier_create();
        shared->nthreads = n;
        OK(shared->lock);
        OK(shared->relay_lock[0]);
        OK(shared->relay_lock[1]);
        OK(shared->barrier);
    }
    /* (ids 0 are the first of each: every process may use them now) */
    OK(postbox_dsm_barrier(0, n));
    work(me, n);
    /* a block from the allocator, filled by its owner, read by all */
    if (me == 0) {
        block = postbox_dsm_malloc(3 * PAGE);
        CHECK(block != NULL, "postbox_dsm_malloc failed");
        for (int i = 0; i < 3 * PAGE / 8; i++)
            block[i] = i * 7;
        shared->results[0] = (long)(uintptr_t)block;
    }
    OK(postbox_dsm_barrier(shared->barrier, n));
    block = (long *)(uintptr_t)shared->results[0];
    for (int i = 0; i < 3 * PAGE / 8; i++)
        CHECK(block[i] == i * 7, "block word %d is %ld", i, block[i]);
    OK(postbox_dsm_barrier(shared->barrier, n));
    if (me == 0)
        OK(postbox_dsm_free(block));
    return 0;
}

/* First-writer homes: process p writes band p (HOME_BAND pages, which the
 * old round-robin homes in 16-page blocks would have spread over the
 * processes), becomes their home, and diffs none of them at its releases;
 * every process checks every band after the barrier, four rounds.  The
 * band, written at two releases in a row, stays writable: the stores of
 * rounds 2 and 3 take no write fault.  Reading another process's band
 * from its start, each read fault fetches two pages (PB_DSM_FETCH_RUN):
 * half as many faults as pages, each page fetched once; from a process on
 * another node, each fault that reads on where the last run ended fetches
 * twice as many as it, up to HOME_RUN_MAX (PB_DSM_FETCH_RUN_MAX), and the
 * first fault of a band as many as the last streak from that home (the
 * last band's HOME_BAND pages; at round 0 nothing longer than 2 pages):
 * 2, 4, 8, 16, 10 pages at round 0, 32 and 8 after.  Unless
 * POSTBOX_DSM_NODE_SHARE is 0, a band homed by another process of this
 * node is mapped straight from its home's copy instead (node_share): its
 * first read fault maps HOME_RUN_MAX pages, the second the rest, none is
 * fetched, and from round 1 on no read faults, as the mapping never goes
 * stale. */
#define HOME_BAND 40
#define HOME_RUN_MAX 32

/* Are pages homed by another process of this node mapped from its copy
 * (POSTBOX_DSM_NODE_SHARE, default 1)? */
static int node_share(void)
{
    const char *text = getenv("POSTBOX_DSM_NODE_SHARE");

    return text == NULL || atoi(text) > 0;
}

/* Do this process's reads of pages homed on another node go through its
 * node's cache (another process of the job on its node, @nodes[q] the
 * node of each of the @n processes, and POSTBOX_DSM_NODE_SHARE not 0)? */
static int node_cache(const int *nodes, int n)
{
    int others = 0, far = 0;

    for (int q = 0; q < n; q++) {
        others += q != me && nodes[q] == nodes[me];
        far += nodes[q] != nodes[me];
    }
    return node_share() && others > 0 && far > 0;
}

/* the pages fetched to read a band of HOME_BAND pages homed on this
 * node (@local) or on another (at most, with a node cache) */
static int band_fetches(int local)
{
    return local && node_share() ? 0 : HOME_BAND;
}

/* the read faults that read a band of HOME_BAND pages homed on this
 * node (@local) or on another, at round @round */
static int band_faults(int local, int round)
{
    int faults = 0, run = local || round == 0 ? 2 : HOME_BAND;

    if (local && node_share())
        return round == 0 ? (HOME_BAND + HOME_RUN_MAX - 1) / HOME_RUN_MAX : 0;
    run = run < HOME_RUN_MAX ? run : HOME_RUN_MAX;
    for (int left = HOME_BAND; left > 0; left -= run < left ? run : left) {
        if (faults > 0 && !local)
            run = run * 2 < HOME_RUN_MAX ? run * 2 : HOME_RUN_MAX;
        faults++;
    }
    return faults;
}

static long band_value(int round, int owner, long i)
{
    return round * 1000003L + owner * 100000L + i;
}

static int run_homes(void)
{
    int n = postbox_dsm_process_count();
    long words = HOME_BAND * PAGE / sizeof(long);
    long *bands = postbox_dsm_alloc((size_t)n * HOME_BAND * PAGE);
    int *nodes = postbox_dsm_alloc(PAGE);
    postbox_dsm_stats_t before, after, read;

    CHECK(bands != NULL && nodes != NULL, "postbox_dsm_alloc: %s",
          postbox_dsm_strerror(postbox_dsm_last_error()));
    nodes[me] = postbox_dsm_node();
    OK(postbox_dsm_barrier(0, n));
    for (int round = 0; round < 4; round++) {
        long *mine = bands + me * words;
        int faults = 0, fetches = 0;

        for (int q = 0; q < n; q++) {
            if (q != me) {
                faults += band_faults(nodes[q] == nodes[me], round);
                fetches += band_fetches(nodes[q] == nodes[me]);
            }
        }

        OK(postbox_dsm_stats(&before));
        for (long i = 0; i < words; i++)
            mine[i] = band_value(round, me, i);
        OK(postbox_dsm_barrier(0, n));
        OK(postbox_dsm_stats(&after));
        CHECK(after.diffs == before.diffs, "round %d: %llu pages of this process's band diffed",
              round, (unsigned long long)(after.diffs - before.diffs));
        CHECK(after.home_pages - before.home_pages == (round == 0 ? HOME_BAND : 0),
              "round %d: this process became the home of %llu pages, not %d", round,
              (unsigned long long)(after.home_pages - before.home_pages),
              round == 0 ? HOME_BAND : 0);
        CHECK(round < 2 || after.write_faults == before.write_faults,
              "round %d: %llu write faults on this process's own (hot) band", round,
              (unsigned long long)(after.write_faults - before.write_faults));
        for (int q = 0; q < n; q++)
            for (long i = 0; i < words; i++)
                CHECK(bands[q * words + i] == band_value(round, q, i),
                      "round %d: band %d word %ld is %ld, not %ld", round, q, i,
                      bands[q * words + i], band_value(round, q, i));
        OK(postbox_dsm_stats(&read));
        /* (with a node cache, the node's processes read the other node's
         * bands at once: whichever gets a page first fetches it for all) */
        CHECK(read.page_fetches - after.page_fetches == (uint64_t)fetches ||
                  (node_cache(nodes, n) &&
                   read.page_fetches - after.page_fetches <= (uint64_t)fetches),
              "round %d: %llu pages fetched to read the other bands, not %s%d", round,
              (unsigned long long)(read.page_fetches - after.page_fetches),
              node_cache(nodes, n) ? "more than " : "", fetches);
        CHECK(read.read_faults - after.read_faults == (uint64_t)faults,
              "round %d: %llu read faults on the other bands, not %d", round,
              (unsigned long long)(read.read_faults - after.read_faults), faults);
        OK(postbox_dsm_barrier(0, n));
    }
    return 0;
}

/* Pages homed by process 0 that only the other processes of its node
 * write afterwards (word w of each page by process w), SHARE_ROUNDS
 * rounds, every process reading every word after each barrier.  Unless
 * POSTBOX_DSM_NODE_SHARE is 0, those writers map the pages straight from
 * process 0's copy and store into it: no fetch, no twin, no diff; a
 * process of another node sees their stores only if their releases
 * notice the pages (its cached copy is otherwise never invalidated, as
 * process 0 writes the pages no more). */
#define SHARE_PAGES 4
#define SHARE_ROUNDS 6

static long share_value(int round, int writer, long page)
{
    return round * 1000L + writer * 10L + page;
}

static int run_nodeshare(void)
{
    int n = postbox_dsm_process_count();
    long per_page = PAGE / sizeof(long);
    long *band = postbox_dsm_alloc(SHARE_PAGES * PAGE);
    int *nodes = postbox_dsm_alloc(PAGE);
    postbox_dsm_stats_t before, after;
    int near;

    CHECK(band != NULL && nodes != NULL, "postbox_dsm_alloc: %s",
          postbox_dsm_strerror(postbox_dsm_last_error()));
    nodes[me] = postbox_dsm_node();
    if (me == 0)
        for (long i = 0; i < SHARE_PAGES * per_page; i++)
            band[i] = -1;
    OK(postbox_dsm_barrier(0, n));
    near = me != 0 && nodes[me] == nodes[0];
    for (int round = 0; round < SHARE_ROUNDS; round++) {
        OK(postbox_dsm_stats(&before));
        for (long p = 0; near && p < SHARE_PAGES; p++)
            band[p * per_page + me] = share_value(round, me, p);
        OK(postbox_dsm_barrier(0, n));
        for (long p = 0; p < SHARE_PAGES; p++) {
            for (int w = 0; w < n; w++) {
                long want = w != 0 && nodes[w] == nodes[0] ? share_value(round, w, p) : -1;

                CHECK(band[p * per_page + w] == want, "round %d: page %ld word %d is %ld, not %ld",
                      round, p, w, band[p * per_page + w], want);
            }
        }
        OK(postbox_dsm_stats(&after));
        CHECK(!near || !node_share() || after.page_fetches == before.page_fetches,
              "round %d: %llu pages fetched from process 0 on this node", round,
              (unsigned long long)(after.page_fetches - before.page_fetches));
        CHECK(!near || !node_share() || after.diffs == before.diffs,
              "round %d: %llu pages diffed toward process 0 on this node", round,
              (unsigned long long)(after.diffs - before.diffs));
        OK(postbox_dsm_barrier(0, n));
    }
    return 0;
}

/* Pages homed by process 0, written by another process of its node (the
 * writer: it stores into process 0's copy, as a direct page) and read by
 * the processes of the other nodes one after the other (a barrier between
 * two readers), NCACHE_ROUNDS rounds; then each process of another node
 * stores into word q of the first page (its own word, in its own copy) and
 * every process checks those words.  With the node cache
 * (POSTBOX_DSM_NODE_SHARE not 0, a node of several processes), the first
 * reader of a node fetches the pages and the node's later readers fetch
 * none: they map the node's copy.  (Before the rounds every reader reads
 * the pages once: process 0's release after that notices them once more,
 * as the pages a reader marked, and never again, as it does not write
 * them.) */
#define NCACHE_PAGES 6
#define NCACHE_ROUNDS 4

static long ncache_value(int round, long i)
{
    return round * 100000L + i;
}

static int run_nodecache(void)
{
    int n = postbox_dsm_process_count(), writer = -1;
    long words = NCACHE_PAGES * PAGE / sizeof(long);
    int *nodes = postbox_dsm_alloc(PAGE);
    long *band = postbox_dsm_alloc(NCACHE_PAGES * PAGE);
    long *guard = postbox_dsm_alloc(PAGE);
    postbox_dsm_stats_t before, after;

    CHECK(nodes != NULL && band != NULL && guard != NULL, "postbox_dsm_alloc: %s",
          postbox_dsm_strerror(postbox_dsm_last_error()));
    nodes[me] = postbox_dsm_node();
    if (me == 0)
        for (long i = 0; i < words; i++)
            band[i] = -1;
    if (me == n - 1)
        guard[0] = 1; /* (homed away from process 0: a fetch's run ends at the band's end) */
    OK(postbox_dsm_barrier(0, n));
    for (int q = 1; q < n && writer < 0; q++)
        if (nodes[q] == nodes[0])
            writer = q;
    CHECK(writer > 0 && nodes[n - 1] != nodes[0], "needs 2 processes on process 0's node and "
                                                  "another node");
    if (nodes[me] != nodes[0])
        CHECK(band[words - 1] == -1, "the band's last word is %ld, not -1", band[words - 1]);
    for (int settle = 0; settle < 2; settle++)
        OK(postbox_dsm_barrier(0, n));
    for (int round = 0; round < NCACHE_ROUNDS; round++) {
        int first = 1; /* (no reader of this node yet this round) */

        if (me == writer)
            for (long i = 0; i < words; i++)
                band[i] = ncache_value(round, i);
        OK(postbox_dsm_barrier(0, n));
        for (int q = 0; q < n; q++) {
            if (nodes[q] == nodes[0])
                continue;
            if (q == me) {
                OK(postbox_dsm_stats(&before));
                for (long i = 0; i < words; i++)
                    CHECK(band[i] == ncache_value(round, i), "round %d: word %ld is %ld, not %ld",
                          round, i, band[i], ncache_value(round, i));
                OK(postbox_dsm_stats(&after));
                CHECK(!node_cache(nodes, n) || after.page_fetches - before.page_fetches ==
                                                   (uint64_t)(first ? NCACHE_PAGES : 0),
                      "round %d: %llu pages fetched, not %d (%s reader of its node)", round,
                      (unsigned long long)(after.page_fetches - before.page_fetches),
                      first ? NCACHE_PAGES : 0, first ? "first" : "a later");
            }
            first &= nodes[q] != nodes[me];
            OK(postbox_dsm_barrier(0, n));
        }
        if (nodes[me] != nodes[0])
            band[me] = -me - round * 1000L;
        OK(postbox_dsm_barrier(0, n));
        for (int q = 1; q < n; q++) {
            long want = nodes[q] != nodes[0] ? -q - round * 1000L : ncache_value(round, q);

            CHECK(band[q] == want, "round %d: word %d is %ld, not %ld", round, q, band[q], want);
        }
        OK(postbox_dsm_barrier(0, n));
    }
    return 0;
}

/* Pages homed by process 0, written by every process, each its own words
 * of every page (false sharing), NWRITE_ROUNDS rounds of three phases.
 * Between barriers: process q stores word NWRITE_BAR + q of each page,
 * and after the barrier every process checks every such word.  Then
 * twice, with the processes split by parity: the lockers increment the
 * counter, word 0 of the first page, NWRITE_LOCKED times under a lock,
 * while the others store word NWRITE_FREE + q of each page and wait
 * (NWRITE_WAIT_US) before the barrier without releasing: a locker of
 * their node then gets the pages into the node's copy (the counter was
 * written elsewhere) while it holds their stores, not released yet, and
 * its releases diff that copy; after the barrier every process checks
 * the counter and those words.  With the node cache
 * (POSTBOX_DSM_NODE_SHARE not 0, several processes on a node), the
 * processes of the other node store into the node's copy: each first
 * store into a page in an interval counts as a node write (one per page
 * and round between barriers), and no process copies the page. */
#define NWRITE_PAGES 3
#define NWRITE_ROUNDS 4
#define NWRITE_LOCKED 20
#define NWRITE_WAIT_US 20000
#define NWRITE_RELEASES 200
#define NWRITE_CARRIED 20
#define NWRITE_PAUSE_US 5000
#define NWRITE_BAR 8
#define NWRITE_FREE 64

static long nwrite_value(int round, int q, long page, int step)
{
    return round * 1000000L + step * 10000L + q * 100L + page + 1;
}

static int run_nodewrite(void)
{
    int n = postbox_dsm_process_count(), far, lockers = 0;
    long per_page = PAGE / sizeof(long);
    int *nodes = postbox_dsm_alloc(PAGE);
    long *band = postbox_dsm_alloc(NWRITE_PAGES * PAGE);
    long *guard = postbox_dsm_alloc(PAGE);
    int *lock = &nodes[PAGE / sizeof(int) - 1];
    int *own_locks = &nodes[PAGE / sizeof(int) / 2];
    postbox_dsm_stats_t before, after;

    CHECK(nodes != NULL && band != NULL && guard != NULL, "postbox_dsm_alloc: %s",
          postbox_dsm_strerror(postbox_dsm_last_error()));
    CHECK(n <= NWRITE_FREE - NWRITE_BAR, "at most %d processes", NWRITE_FREE - NWRITE_BAR);
    nodes[me] = postbox_dsm_node();
    if (me == 0) {
        for (long i = 0; i < NWRITE_PAGES * per_page; i++)
            band[i] = -1;
        band[0] = 0;
        *lock = postbox_dsm_lock_create();
        OK(*lock);
        for (int q = 0; q < n; q++) {
            own_locks[q] = postbox_dsm_lock_create();
            OK(own_locks[q]);
        }
    }
    if (me == n - 1)
        guard[0] = 1; /* (homed away from process 0: a fetch's run ends at the band's end) */
    OK(postbox_dsm_barrier(0, n));
    far = nodes[me] != nodes[0];
    CHECK(nodes[n - 1] != nodes[0], "needs processes on another node than process 0's");
    for (int round = 0; round < NWRITE_ROUNDS; round++) {
        uint64_t want_writes;

        OK(postbox_dsm_stats(&before));
        for (long p = 0; p < NWRITE_PAGES; p++)
            band[p * per_page + NWRITE_BAR + me] = nwrite_value(round, me, p, 0);
        OK(postbox_dsm_barrier(0, n));
        OK(postbox_dsm_stats(&after));
        want_writes = far && node_cache(nodes, n) ? NWRITE_PAGES : 0;
        CHECK(after.node_writes - before.node_writes == want_writes,
              "round %d: %llu stores served in the node's copy, not %llu", round,
              (unsigned long long)(after.node_writes - before.node_writes),
              (unsigned long long)want_writes);
        for (long p = 0; p < NWRITE_PAGES; p++)
            for (int q = 0; q < n; q++)
                CHECK(band[p * per_page + NWRITE_BAR + q] == nwrite_value(round, q, p, 0),
                      "round %d: page %ld word %d is %ld, not %ld", round, p, NWRITE_BAR + q,
                      band[p * per_page + NWRITE_BAR + q], nwrite_value(round, q, p, 0));
        OK(postbox_dsm_barrier(0, n));
        for (int half = 0; half < 2; half++) {
            int locker = me % 2 == half;

            OK(postbox_dsm_stats(&before));
            if (locker) {
                for (int step = 0; step < NWRITE_LOCKED; step++) {
                    OK(postbox_dsm_lock(*lock));
                    band[0]++;
                    OK(postbox_dsm_unlock(*lock));
                    usleep(500);
                }
            } else {
                for (long p = 0; p < NWRITE_PAGES; p++)
                    band[p * per_page + NWRITE_FREE + me] = nwrite_value(round, me, p, half + 1);
                usleep(NWRITE_WAIT_US);
            }
            OK(postbox_dsm_barrier(0, n));
            OK(postbox_dsm_stats(&after));
            want_writes = far && node_cache(nodes, n) ? (locker ? 1 : NWRITE_PAGES) : 0;
            CHECK(locker ? after.node_writes - before.node_writes >= want_writes
                         : after.node_writes - before.node_writes == want_writes,
                  "round %d: %llu stores served in the node's copy, not %s%llu", round,
                  (unsigned long long)(after.node_writes - before.node_writes),
                  locker ? "less than " : "", (unsigned long long)want_writes);
            lockers += (n + 1 - half) / 2;
            CHECK(band[0] == (long)lockers * NWRITE_LOCKED, "round %d: the counter is %ld, not %ld",
                  round, band[0], (long)lockers * NWRITE_LOCKED);
            for (long p = 0; p < NWRITE_PAGES; p++)
                for (int q = 1 - half; q < n; q += 2)
                    CHECK(
                        band[p * per_page + NWRITE_FREE + q] == nwrite_value(round, q, p, half + 1),
                        "round %d: page %ld word %d is %ld, not %ld", round, p, NWRITE_FREE + q,
                        band[p * per_page + NWRITE_FREE + q], nwrite_value(round, q, p, half + 1));
            OK(postbox_dsm_barrier(0, n));
        }
    }
    /* releases in quick succession: each process stores its words and
     * releases them under a lock of its own, NWRITE_RELEASES times; each
     * release of a process of the other node diffs the node's copy, with
     * its neighbours' latest words, and each acquire invalidates the
     * pages, whose next store gets them again (merged) */
    for (int step = 0; step < NWRITE_RELEASES; step++) {
        OK(postbox_dsm_lock(own_locks[me]));
        for (long p = 0; p < NWRITE_PAGES; p++)
            band[p * per_page + NWRITE_FREE + me] = nwrite_value(NWRITE_ROUNDS, me, p, step);
        OK(postbox_dsm_unlock(own_locks[me]));
    }
    OK(postbox_dsm_barrier(0, n));
    for (long p = 0; p < NWRITE_PAGES; p++)
        for (int q = 0; q < n; q++)
            CHECK(band[p * per_page + NWRITE_FREE + q] ==
                      nwrite_value(NWRITE_ROUNDS, q, p, NWRITE_RELEASES - 1),
                  "after the releases: page %ld word %d is %ld, not %ld", p, NWRITE_FREE + q,
                  band[p * per_page + NWRITE_FREE + q],
                  nwrite_value(NWRITE_ROUNDS, q, p, NWRITE_RELEASES - 1));
    OK(postbox_dsm_barrier(0, n));
    /* a word carried by another process's diff: process W (the first of
     * the other node) stores word NWRITE_FREE + W of page 0 and, after a
     * pause, raises a flag (page 1) under lock *@lock; meanwhile process
     * L (the last, on W's node) releases its own words of pages 0 and 1
     * again and again, so that its diffs carry W's word before W's
     * release (with POSTBOX_DSM_TEST_FAIL=slow:L:US they take that long
     * to leave), and checks its own words after each release (W's stores
     * get the pages into the node's copy while those diffs are on their
     * way).  Process 0, the home, reads W's word once it sees the flag:
     * W's release must not end before the diff that carries its word
     * arrived, nor its own diff of the flag overtake it. */
    {
        int w = -1, l = n - 1;
        long *word, *flag = &band[per_page + NWRITE_FREE - 1];

        for (int q = 1; q < n && w < 0; q++)
            if (nodes[q] != nodes[0])
                w = q;
        word = &band[NWRITE_FREE + w];
        if (me == 0)
            *flag = -1;
        OK(postbox_dsm_barrier(0, n));
        if (me == w && w != l) {
            for (int k = 0; k < NWRITE_CARRIED; k++) {
                *word = k;
                usleep(NWRITE_PAUSE_US);
                OK(postbox_dsm_lock(*lock));
                *flag = k;
                OK(postbox_dsm_unlock(*lock));
            }
        } else if (me == l && w != l) {
            for (int k = 0; k < 4 * NWRITE_CARRIED; k++) {
                OK(postbox_dsm_lock(own_locks[me]));
                band[NWRITE_FREE + me] = k;
                band[per_page + NWRITE_FREE + me] = k;
                OK(postbox_dsm_unlock(own_locks[me]));
                /* (a get into the node's copy while those diffs were on
                 * their way must not have brought back older values) */
                CHECK(band[NWRITE_FREE + me] == k && band[per_page + NWRITE_FREE + me] == k,
                      "its own words are %ld and %ld after its release, not %d",
                      band[NWRITE_FREE + me], band[per_page + NWRITE_FREE + me], k);
            }
        } else if (me == 0 && w != l) {
            for (int k = 0; k < NWRITE_CARRIED;) {
                long seen, value;

                OK(postbox_dsm_lock(*lock));
                seen = *flag;
                value = *word;
                OK(postbox_dsm_unlock(*lock));
                CHECK(seen < k || value >= seen,
                      "process %d's word is %ld after it raised the flag to %ld", w, value, seen);
                if (seen >= k)
                    k = (int)seen + 1;
                else
                    usleep(200);
            }
        }
        OK(postbox_dsm_barrier(0, n));
        CHECK(w == l || *word == NWRITE_CARRIED - 1, "process %d's word is %ld, not %d", w, *word,
              NWRITE_CARRIED - 1);
        OK(postbox_dsm_barrier(0, n));
    }
    return 0;
}

/* Process 0 writes page ONCE at the start and page EVERY at each of
 * REFETCH_ROUNDS rounds; process 1 (on another node: not a direct page)
 * reads both after each round's barrier, ONCE first.  With write notices
 * (the default) it fetches EVERY alone from the second round on, as only
 * EVERY was written since its last acquire; with
 * POSTBOX_DSM_SELF_INVALIDATE=1 its acquires invalidate every page
 * another process ever wrote, so it fetches both each round.  (Page GAP
 * between them, homed by process 1, ends each fetch's run.) */
#define REFETCH_ROUNDS 5

static int run_refetch(void)
{
    enum {
        ONCE = 0,
        GAP = 1,
        EVERY = 2
    };
    int n = postbox_dsm_process_count();
    long per_page = PAGE / sizeof(long);
    long *pages = postbox_dsm_alloc(3 * PAGE);
    const char *text = getenv("POSTBOX_DSM_SELF_INVALIDATE");
    int self_invalidate = text != NULL && atoi(text) > 0;
    postbox_dsm_stats_t before, after;

    CHECK(pages != NULL, "postbox_dsm_alloc: %s", postbox_dsm_strerror(postbox_dsm_last_error()));
    CHECK(n == 2 && postbox_dsm_node_count() == 2, "needs 2 processes on 2 nodes");
    if (me == 0)
        pages[ONCE * per_page] = 7;
    else
        pages[GAP * per_page] = 1;
    for (int round = 0; round < REFETCH_ROUNDS; round++) {
        if (me == 0)
            pages[EVERY * per_page] = round;
        OK(postbox_dsm_barrier(0, n));
        if (me == 1) {
            long expect = round == 0 ? 2 : self_invalidate ? 2 : 1;

            OK(postbox_dsm_stats(&before));
            CHECK(pages[ONCE * per_page] == 7, "round %d: page ONCE holds %ld, not 7", round,
                  pages[ONCE * per_page]);
            CHECK(pages[EVERY * per_page] == round, "round %d: page EVERY holds %ld", round,
                  pages[EVERY * per_page]);
            OK(postbox_dsm_stats(&after));
            CHECK(after.page_fetches - before.page_fetches == (uint64_t)expect,
                  "round %d: %llu pages fetched, not %ld (self-invalidation %s)", round,
                  (unsigned long long)(after.page_fetches - before.page_fetches), expect,
                  self_invalidate ? "on" : "off");
        }
        OK(postbox_dsm_barrier(0, n));
    }
    return 0;
}

/* Barrier messages: BARRIER_ROUNDS barriers of every process, each
 * publishing a page per process that its neighbour reads and checks (so
 * every episode has notices to read).  check_barrier_trips then reads
 * this process's statistics. */
#define BARRIER_ROUNDS 40

static int run_barriers(void)
{
    int n = postbox_dsm_process_count();
    int left = (me + n - 1) % n;
    long *pages = postbox_dsm_alloc((size_t)n * PAGE);

    CHECK(pages != NULL, "postbox_dsm_alloc: %s", postbox_dsm_strerror(postbox_dsm_last_error()));
    OK(postbox_dsm_barrier(0, n));
    for (int round = 0; round < BARRIER_ROUNDS; round++) {
        pages[me * (PAGE / sizeof(long))] = band_value(round, me, 0);
        OK(postbox_dsm_barrier(0, n));
        CHECK(pages[left * (PAGE / sizeof(long))] == band_value(round, left, 0),
              "round %d: process %d's page holds %ld, not %ld", round, left,
              pages[left * (PAGE / sizeof(long))], band_value(round, left, 0));
        OK(postbox_dsm_barrier(0, n));
    }
    return 0;
}

/* This process's statistics after run_barriers: at most 1 barrier round
 * trip a barrier call (its arrival; the last arrival's reply brings the
 * episode's notices, and the departures and acknowledgements go without
 * reply). */
static int check_barrier_trips(const postbox_dsm_stats_t *stats)
{
    unsigned long long barriers = stats->barriers;
    unsigned long long trips = stats->round_trips[POSTBOX_DSM_MSG_BARRIER];

    CHECK(barriers == 2 * BARRIER_ROUNDS + 1, "%llu barrier calls counted, not %d", barriers,
          2 * BARRIER_ROUNDS + 1);
    CHECK(trips <= barriers, "%llu barrier round trips for %llu barriers: more than 1 a barrier",
          trips, barriers);
    if (getenv("PBT_DSM_VERBOSE") != NULL)
        fprintf(stderr, "process %d: %llu barrier round trips for %llu barriers\n", me, trips,
                barriers);
    return 0;
}

/* Unread home pages: process p writes band p (UNREAD_BAND pages), read
 * by no other process, at rounds 0 (the release that claims it) and 1
 * (its second write faults: the band is write-protected after the claim;
 * each fault on the page where the last one's run of writable pages
 * ended opens twice as many, up to UNREAD_RUN_MAX (PB_DSM_WRITE_RUN_MAX):
 * 1, 2, 4, ... pages, so write_run_faults(UNREAD_BAND) faults), then leaves it alone for
 * UNREAD_IDLE releases (that write a page of its own: releases that find nothing written do not age
 * hot pages), more than the PB_DSM_HOT_RELEASES after which a hot page is write-protected again. No
 * other process fetched the band, so its release left it writable and untracked: the stores of
 * every later round take no write fault.  From round UNREAD_READ on process p + 1 reads band p (its
 * first half at that round, which marks those pages read at p, from then on all of it) and sees
 * every round's values. */
#define UNREAD_BAND 8
#define UNREAD_IDLE 6
#define UNREAD_READ 4
#define UNREAD_ROUNDS 8
#define UNREAD_RUN_MAX 32

/* the write faults that write @pages unread home pages from the first */
static int write_run_faults(int pages)
{
    int faults = 0;

    for (int run = 1; pages > 0; run = run * 2 < UNREAD_RUN_MAX ? run * 2 : UNREAD_RUN_MAX) {
        pages -= run;
        faults++;
    }
    return faults;
}

static int run_unread(void)
{
    int n = postbox_dsm_process_count();
    int left = (me + n - 1) % n;
    long words = UNREAD_BAND * PAGE / sizeof(long);
    long *bands = postbox_dsm_alloc((size_t)n * (UNREAD_BAND + 1) * PAGE);
    long *mine = bands + me * words, *theirs = bands + left * words;
    long *tick = bands + n * words + me * (long)(PAGE / sizeof(long));
    postbox_dsm_stats_t before, after;

    CHECK(bands != NULL, "postbox_dsm_alloc: %s", postbox_dsm_strerror(postbox_dsm_last_error()));
    OK(postbox_dsm_barrier(0, n));
    for (int round = 0; round < UNREAD_ROUNDS; round++) {
        OK(postbox_dsm_stats(&before));
        for (long i = 0; i < words; i++)
            mine[i] = band_value(round, me, i);
        OK(postbox_dsm_stats(&after));
        CHECK(round < 2 || round > UNREAD_READ || after.write_faults == before.write_faults,
              "round %d: %llu write faults on this process's band, read by no other", round,
              (unsigned long long)(after.write_faults - before.write_faults));
        CHECK(round != 1 || after.write_faults - before.write_faults ==
                                (uint64_t)write_run_faults(UNREAD_BAND),
              "round 1: %llu write faults on this process's claimed band of %d pages, not %d",
              (unsigned long long)(after.write_faults - before.write_faults), UNREAD_BAND,
              write_run_faults(UNREAD_BAND));
        OK(postbox_dsm_barrier(0, n));
        for (int idle = 0; round == 1 && idle < UNREAD_IDLE; idle++) {
            tick[0] = idle + 1;
            OK(postbox_dsm_barrier(0, n));
        }
        if (round < UNREAD_READ)
            continue;
        for (long i = 0; i < (round == UNREAD_READ ? words / 2 : words); i++)
            CHECK(theirs[i] == band_value(round, left, i),
                  "round %d: band %d word %ld is %ld, not %ld", round, left, i, theirs[i],
                  band_value(round, left, i));
        OK(postbox_dsm_barrier(0, n));
    }
    return 0;
}

/* A hot home page changed and changed back within one interval while a
 * reader fetches it: process 0 homes page P and writes its word VALUE at
 * HOTREV_ROUNDS releases (a new value each; process 1 reads it after
 * each), which leaves P hot at process 0 (writable, compared with a
 * snapshot at each release).  It then stores HOTREV_ROUNDS + 1 (noticed:
 * process 1's copy is invalid after the barrier), and in the next
 * interval stores HOTREV_TRANSIENT, pauses HOTREV_GAP_MS and stores
 * HOTREV_ROUNDS + 1 back.  Process 1 reads word OTHER of P HOTREV_READ_MS
 * into that pause, which fetches P with the transient value, and after
 * the barrier reads VALUE: it must hold HOTREV_ROUNDS + 1, so the release
 * must notice P although P equals its snapshot.  (A reader held up past
 * the pause fetches the final value: the test then passes without
 * testing anything, never fails wrongly.) */
#define HOTREV_ROUNDS 4
#define HOTREV_TRANSIENT 9999
#define HOTREV_GAP_MS 300
#define HOTREV_READ_MS 50

static void sleep_ms(long ms)
{
    nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000}, NULL);
}

static int run_hotrevert(void)
{
    enum {
        VALUE = 0,
        OTHER = 64
    };
    int n = postbox_dsm_process_count();
    volatile long *page = postbox_dsm_alloc(PAGE);

    CHECK(page != NULL, "postbox_dsm_alloc: %s", postbox_dsm_strerror(postbox_dsm_last_error()));
    if (me == 0)
        page[OTHER] = 7;
    OK(postbox_dsm_barrier(0, n));
    for (long round = 1; round <= HOTREV_ROUNDS + 1; round++) {
        if (me == 0)
            page[VALUE] = round;
        OK(postbox_dsm_barrier(0, n));
        if (me == 1 && round <= HOTREV_ROUNDS)
            CHECK(page[VALUE] == round, "round %ld: the page's value is %ld", round, page[VALUE]);
        OK(postbox_dsm_barrier(0, n));
    }
    if (me == 0) {
        page[VALUE] = HOTREV_TRANSIENT;
        sleep_ms(HOTREV_GAP_MS);
        page[VALUE] = HOTREV_ROUNDS + 1;
    } else if (me == 1) {
        sleep_ms(HOTREV_READ_MS);
        CHECK(page[OTHER] == 7, "the page's other word is %ld, not 7", page[OTHER]);
    }
    OK(postbox_dsm_barrier(0, n));
    if (me == 1)
        CHECK(page[VALUE] == HOTREV_ROUNDS + 1,
              "the page's value is %ld, not %d: the transient value fetched before the "
              "release that restored it",
              page[VALUE], HOTREV_ROUNDS + 1);
    OK(postbox_dsm_barrier(0, n));
    return 0;
}

/* Unread pages read through locks, while their home writes them: thread
 * w of lockread.nthreads (process me, index t) homes LOCKREAD_ROUNDS slots
 * of LOCKREAD_SLOT pages.  At every round it writes the first half of
 * every page of its slots, posts that (its post word, under lock w),
 * pauses LOCKREAD_GAP_US, writes the second halves and posts them.  From
 * round 2 it also reads slot r of thread w - 1 at round r: the first
 * halves once posted, the second halves once posted (under lock w - 1,
 * waiting asleep between looks), then acknowledges the round (under lock
 * w); a writer starts a round once its reader acknowledged the last.
 * Slot r was read by no other process before round r, so its pages are
 * unread at their home (written, untracked) when the reader fetches them
 * for the first halves, as the home is about to write the second halves:
 * the release that posts those must send the reader a notice of the pages
 * it fetched (it marked them read), or its copy keeps the last round's
 * second halves.  Every half read must hold its round; after the last
 * round every thread reads every slot. */
#define LOCKREAD_SLOT 2
#define LOCKREAD_ROUNDS 24
#define LOCKREAD_GAP_US 3000
#define LOCKREAD_MAX_THREADS 4
#define LOCKREAD_WAIT_S 20

static struct {
    long *slots; /* thread w's slot s at (w * LOCKREAD_ROUNDS + s) * lockread_words() */
    long *posts; /* thread w's post at posts[w * PAGE / sizeof(long)], */
    long *acks;  /* and its acknowledgement at acks[...] (a page each) */
    int *locks;  /* lockread.nthreads lock ids */
    int nthreads, per_process;
} lockread;

static long lockread_words(void)
{
    return LOCKREAD_SLOT * PAGE / sizeof(long);
}

/* the word at @words[@w * PAGE / sizeof(long)], read under lock @w */
static long lockread_word(const long *words, int w)
{
    long value;

    OK(postbox_dsm_lock(lockread.locks[w]));
    value = words[w * (long)(PAGE / sizeof(long))];
    OK(postbox_dsm_unlock(lockread.locks[w]));
    return value;
}

/* is word @i of a slot in its page's second half? */
static int lockread_second(long i)
{
    return i % (long)(PAGE / sizeof(long)) >= (long)(PAGE / sizeof(long) / 2);
}

/* write half @second of every slot of thread @w for @round, then post it */
static void lockread_write(int w, int round, int second)
{
    long n = lockread_words();

    for (int s = 0; s < LOCKREAD_ROUNDS; s++) {
        long *slot = lockread.slots + (w * LOCKREAD_ROUNDS + s) * n;

        for (long i = 0; i < n; i++)
            if (lockread_second(i) == second)
                slot[i] = band_value(round, w, s * n + i);
    }
    OK(postbox_dsm_lock(lockread.locks[w]));
    lockread.posts[w * (long)(PAGE / sizeof(long))] = 2 * round - 1 + second;
    OK(postbox_dsm_unlock(lockread.locks[w]));
}

/* wait until thread @v posted half @second of @round, then check that
 * half of its slot @round (under lock @v) */
static void lockread_read(int v, int round, int second)
{
    long n = lockread_words(), want = 2 * round - 1 + second;
    const long *slot = lockread.slots + (v * LOCKREAD_ROUNDS + round) * n;

    for (time_t start = time(NULL);;) {
        long posted;

        OK(postbox_dsm_lock(lockread.locks[v]));
        posted = lockread.posts[v * (long)(PAGE / sizeof(long))];
        CHECK(posted <= 2 * round && (posted >= want || time(NULL) - start < LOCKREAD_WAIT_S),
              "round %d: thread %d posted %ld, waiting for %ld", round, v, posted, want);
        for (long i = 0; posted >= want && i < n; i++)
            if (lockread_second(i) == second)
                CHECK(slot[i] == band_value(round, v, round * n + i),
                      "round %d: thread %d's slot word %ld is %ld, not %ld (%s half)", round, v, i,
                      slot[i], band_value(round, v, round * n + i), second ? "second" : "first");
        OK(postbox_dsm_unlock(lockread.locks[v]));
        if (posted >= want)
            return;
        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000}, NULL);
    }
}

static int lockread_thread(int t)
{
    int w = me * lockread.per_process + t, all = lockread.nthreads;
    int v = (w + all - 1) % all, reader = (w + 1) % all;
    long n = lockread_words();

    for (int round = 1; round < LOCKREAD_ROUNDS; round++) {
        /* (the reader acknowledged the last round) */
        while (round > 2 && lockread_word(lockread.acks, reader) < round - 1)
            nanosleep(&(struct timespec){.tv_nsec = 100 * 1000}, NULL);
        lockread_write(w, round, 0);
        if (round == 1) /* (every slot homed at its writer before anyone reads it) */
            OK(postbox_dsm_barrier(0, all));
        nanosleep(&(struct timespec){.tv_nsec = LOCKREAD_GAP_US * 1000}, NULL);
        lockread_write(w, round, 1);
        if (round < 2)
            continue;
        lockread_read(v, round, 0);
        lockread_read(v, round, 1);
        OK(postbox_dsm_lock(lockread.locks[w]));
        lockread.acks[w * (long)(PAGE / sizeof(long))] = round;
        OK(postbox_dsm_unlock(lockread.locks[w]));
    }
    OK(postbox_dsm_barrier(0, all));
    for (int q = 0; q < all; q++)
        for (long i = 0; i < LOCKREAD_ROUNDS * n; i++)
            CHECK(lockread.slots[q * LOCKREAD_ROUNDS * n + i] ==
                      band_value(LOCKREAD_ROUNDS - 1, q, i),
                  "thread %d's slot word %ld is %ld after the last round, not %ld", q, i,
                  lockread.slots[q * LOCKREAD_ROUNDS * n + i],
                  band_value(LOCKREAD_ROUNDS - 1, q, i));
    OK(postbox_dsm_barrier(0, all));
    return 0;
}

/* The same through barriers (barread): at round r every thread writes
 * the first halves of its slots, arrives, reads the first halves of slot
 * r of thread w - 1 (while that thread, after LOCKREAD_GAP_US, writes the
 * second halves), arrives, and reads the second halves: the barrier's
 * notices, not release logs, must invalidate the pages it fetched. */
static int barread_thread(int t)
{
    int w = me * lockread.per_process + t, all = lockread.nthreads;
    int v = (w + all - 1) % all;
    long n = lockread_words();

    for (int round = 1; round < LOCKREAD_ROUNDS; round++) {
        for (int second = 0; second < 2; second++) {
            const long *slot = lockread.slots + (v * LOCKREAD_ROUNDS + round) * n;

            if (second)
                nanosleep(&(struct timespec){.tv_nsec = LOCKREAD_GAP_US * 1000}, NULL);
            for (int s = 0; s < LOCKREAD_ROUNDS; s++) {
                long *mine = lockread.slots + (w * LOCKREAD_ROUNDS + s) * n;

                for (long i = 0; i < n; i++)
                    if (lockread_second(i) == second)
                        mine[i] = band_value(round, w, s * n + i);
            }
            OK(postbox_dsm_barrier(0, all));
            for (long i = 0; round > 1 && i < n; i++)
                if (lockread_second(i) == second)
                    CHECK(slot[i] == band_value(round, v, round * n + i),
                          "round %d: thread %d's slot word %ld is %ld, not %ld (%s half)", round, v,
                          i, slot[i], band_value(round, v, round * n + i),
                          second ? "second" : "first");
        }
    }
    OK(postbox_dsm_barrier(0, all));
    return 0;
}

static int barread;

static void *lockread_main(void *arg)
{
    int t = (int)(intptr_t)arg;

    return (void *)(intptr_t)(barread ? barread_thread(t) : lockread_thread(t));
}

/* lockread, or barread with @through_barriers */
static int run_lockread(int per_process, int through_barriers)
{
    int n = postbox_dsm_process_count();
    pthread_t threads[LOCKREAD_MAX_THREADS];

    CHECK(per_process >= 1 && per_process <= LOCKREAD_MAX_THREADS, "lockread of %d threads",
          per_process);
    barread = through_barriers;
    lockread.per_process = per_process;
    lockread.nthreads = n * per_process;
    lockread.slots =
        postbox_dsm_alloc((size_t)lockread.nthreads * LOCKREAD_ROUNDS * LOCKREAD_SLOT * PAGE);
    lockread.posts = postbox_dsm_alloc((size_t)lockread.nthreads * PAGE);
    lockread.acks = postbox_dsm_alloc((size_t)lockread.nthreads * PAGE);
    lockread.locks = postbox_dsm_alloc(PAGE);
    CHECK(lockread.slots != NULL && lockread.posts != NULL && lockread.acks != NULL &&
              lockread.locks != NULL,
          "postbox_dsm_alloc: %s", postbox_dsm_strerror(postbox_dsm_last_error()));
    if (me == 0) {
        for (int w = 0; w < lockread.nthreads; w++) {
            lockread.locks[w] = postbox_dsm_lock_create();
            OK(lockread.locks[w]);
        }
    }
    OK(postbox_dsm_barrier(0, n));
    for (int t = 1; t < per_process; t++)
        CHECK(pthread_create(&threads[t], NULL, lockread_main, (void *)(intptr_t)t) == 0,
              "pthread_create failed");
    lockread_main((void *)(intptr_t)0);
    for (int t = 1; t < per_process; t++)
        CHECK(pthread_join(threads[t], NULL) == 0, "pthread_join failed");
    return 0;
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Indicative costs: a page fetch (a read fault on a page another process
 * homes and wrote), an uncontended lock and unlock managed by another
 * process, a barrier of every process. */
static int run_timing(void)
{
    int n = postbox_dsm_process_count(), pages = 512, fetched = 0, reps = 300, lock = 0;
    char *region = postbox_dsm_alloc((size_t)pages * PAGE); /* the range's first pages */
    double t0, fetch_us = 0, lock_us = 0, barrier_us;
    long sum = 0;

    CHECK(region != NULL && n >= 2, "timing needs 2 processes");
    if (me == 0) {
        for (int p = 0; p < pages; p += 1)
            region[(size_t)p * PAGE] = 1;
        lock = postbox_dsm_lock_create();
        while (lock % n != 1)
            lock = postbox_dsm_lock_create();
        *(int *)(region + PAGE) = lock;
    }
    OK(postbox_dsm_barrier(0, n));
    lock = *(int *)(region + PAGE);
    if (me == 1) {
        t0 = now_us();
        /* pages homed at process 0, their first writer (page 1, read
         * above, is valid here already) */
        for (int p = 0; p < pages; p++)
            if (p != 1) {
                sum += region[(size_t)p * PAGE];
                fetched++;
            }
        fetch_us = (now_us() - t0) / fetched;
        CHECK(sum == fetched, "read %ld ones in %d pages", sum, fetched);
        printf("dsm timing: page fetch %.1f us (%d pages)\n", fetch_us, fetched);
        fflush(stdout);
    }
    OK(postbox_dsm_barrier(0, n));
    if (me == 0) {
        t0 = now_us();
        for (int i = 0; i < reps; i++) {
            OK(postbox_dsm_lock(lock));
            OK(postbox_dsm_unlock(lock));
        }
        lock_us = (now_us() - t0) / reps;
        printf("dsm timing: lock and unlock managed by process 1 %.1f us\n", lock_us);
    }
    OK(postbox_dsm_barrier(0, n));
    t0 = now_us();
    for (int i = 0; i < reps; i++)
        OK(postbox_dsm_barrier(0, n));
    barrier_us = (now_us() - t0) / reps;
    if (me == 0)
        printf("dsm timing: barrier of %d processes %.1f us\n", n, barrier_us);
    return 0;
}

static void *thread_work(void *arg)
{
    int id = (int)(intptr_t)arg;

    work(id, shared->nthreads);
    shared->results[id] = 1000 + id;
    if (getenv("PBT_DSM_VERBOSE") != NULL) {
        postbox_dsm_stats_t stats;

        OK(postbox_dsm_stats(&stats));
        fprintf(stderr, "thread %d on process %d: %llu barrier calls, %llu barrier messages\n", id,
                postbox_dsm_process(), (unsigned long long)stats.barriers,
                (unsigned long long)stats.messages[POSTBOX_DSM_MSG_BARRIER]);
    }
    return (void *)(intptr_t)(id * 3);
}

static int run_threads(int per_process)
{
    int n = postbox_dsm_process_count() * per_process;
    postbox_dsm_thread_t threads[256];

    CHECK(n <= 256, "too many threads");
    shared = postbox_dsm_malloc(sizeof(*shared));
    CHECK(shared != NULL, "postbox_dsm_malloc failed");
    shared->lock = postbox_dsm_lock_create();
    shared->relay_lock[0] = postbox_dsm_lock_create();
    shared->relay_lock[1] = postbox_dsm_lock_create();
    shared->barrier = postbox_dsm_barrier_create();
    OK(shared->lock);
    OK(shared->relay_lock[0]);
    OK(shared->relay_lock[1]);
    OK(shared->barrier);
    shared->nthreads = n;
    for (int t = 1; t < n; t++) {
        OK(postbox_dsm_thread_create(&threads[t], thread_work, (void *)(intptr_t)t));
        CHECK(threads[t].process == t % postbox_dsm_process_count(),
              "thread %d placed on process %d", t, threads[t].process);
    }
    thread_work(0);
    for (int t = 1; t < n; t++) {
        void *ret = NULL;

        OK(postbox_dsm_thread_join(threads[t], &ret));
        CHECK((intptr_t)ret == t * 3, "thread %d returned %ld", t, (long)(intptr_t)ret);
        CHECK(shared->results[t] == 1000 + t, "thread %d's result is %ld", t, shared->results[t]);
    }
    {
        void *ret;

        CHECK(postbox_dsm_thread_join(threads[1], &ret) == POSTBOX_DSM_ERR_BAD_THREAD || n < 2,
              "a second join of a thread succeeded");
    }
    return 0;
}

static int run_errors(void)
{
    int id, bar, held;
    void *p;

    CHECK(postbox_dsm_lock(0) == POSTBOX_DSM_ERR_NOT_INITIALIZED, "lock before init");
    CHECK(postbox_dsm_process() == POSTBOX_DSM_ERR_NOT_INITIALIZED, "process before init");
    CHECK(postbox_dsm_alloc(16) == NULL &&
              postbox_dsm_last_error() == POSTBOX_DSM_ERR_NOT_INITIALIZED,
          "alloc before init");
    CHECK(postbox_dsm_init(0) == POSTBOX_DSM_ERR_BAD_ARGUMENT, "init of 0 bytes");
    CHECK(postbox_dsm_init(((size_t)1 << 40) + 1) == POSTBOX_DSM_ERR_BAD_ARGUMENT,
          "init of more than 1 TiB");
    CHECK(postbox_dsm_init((size_t)1 << 40) == POSTBOX_DSM_ERR_NO_MEMORY,
          "init of more than the machine's memory");
    OK(postbox_dsm_init(1 << 20));
    me = postbox_dsm_process();
    if (me != 0)
        return postbox_dsm_serve();
    CHECK(postbox_dsm_init(1 << 20) == POSTBOX_DSM_ERR_ALREADY_INITIALIZED, "a second init");
    CHECK(postbox_dsm_serve() == POSTBOX_DSM_ERR_WRONG_PROCESS, "serve on process 0");
    id = postbox_dsm_lock_create();
    OK(id);
    CHECK(postbox_dsm_lock(id + 1) == POSTBOX_DSM_ERR_BAD_LOCK, "a lock never created");
    CHECK(postbox_dsm_lock(id + 2) == POSTBOX_DSM_ERR_BAD_LOCK, "a lock never created");
    CHECK(postbox_dsm_lock(-1) == POSTBOX_DSM_ERR_BAD_LOCK, "lock -1");
    CHECK(postbox_dsm_lock(POSTBOX_DSM_MAX_LOCKS) == POSTBOX_DSM_ERR_BAD_LOCK, "lock MAX");
    CHECK(postbox_dsm_unlock(id) == POSTBOX_DSM_ERR_NOT_HELD, "unlock of a free lock");
    held = postbox_dsm_lock_create();
    OK(postbox_dsm_lock(held));
    OK(postbox_dsm_unlock(held));
    CHECK(postbox_dsm_unlock(held) == POSTBOX_DSM_ERR_NOT_HELD, "a second unlock");
    CHECK(postbox_dsm_alloc(0) == NULL && postbox_dsm_last_error() == POSTBOX_DSM_ERR_BAD_ARGUMENT,
          "alloc of 0");
    CHECK(postbox_dsm_malloc(0) == NULL && postbox_dsm_last_error() == POSTBOX_DSM_ERR_BAD_ARGUMENT,
          "malloc of 0");
    CHECK(postbox_dsm_malloc((size_t)1 << 30) == NULL &&
              postbox_dsm_last_error() == POSTBOX_DSM_ERR_NO_MEMORY,
          "malloc of more than the range");
    p = postbox_dsm_malloc(100);
    CHECK(p != NULL, "malloc of 100 bytes");
    CHECK(postbox_dsm_free((char *)p + 8) == POSTBOX_DSM_ERR_BAD_POINTER, "free inside a block");
    CHECK(postbox_dsm_free(&id) == POSTBOX_DSM_ERR_BAD_POINTER, "free of a stack address");
    OK(postbox_dsm_free(p));
    CHECK(postbox_dsm_free(p) == POSTBOX_DSM_ERR_BAD_POINTER, "a second free");
    CHECK(postbox_dsm_free(NULL) == 0, "free of NULL");
    /* allocation limits: the 1 MiB range's upper half is the allocator's */
    {
        void *blocks[16];
        int got = 0;

        CHECK(postbox_dsm_malloc(600 << 10) == NULL &&
                  postbox_dsm_last_error() == POSTBOX_DSM_ERR_NO_MEMORY,
              "malloc of more than the allocator's half");
        while (got < 16 && (blocks[got] = postbox_dsm_malloc(64 << 10)) != NULL)
            got++;
        CHECK(got == 8 && postbox_dsm_last_error() == POSTBOX_DSM_ERR_NO_MEMORY,
              "%d blocks of 64 KiB in 512 KiB", got);
        for (int b = 0; b < got; b++)
            OK(postbox_dsm_free(blocks[b]));
        blocks[0] = postbox_dsm_malloc(512 << 10);
        CHECK(blocks[0] != NULL, "the freed blocks did not merge back");
        OK(postbox_dsm_free(blocks[0]));
        CHECK(postbox_dsm_alloc(600 << 10) == NULL &&
                  postbox_dsm_last_error() == POSTBOX_DSM_ERR_NO_MEMORY,
              "alloc of more than the collective half");
        CHECK(postbox_dsm_alloc(256 << 10) != NULL, "alloc of 256 KiB");
        CHECK(postbox_dsm_alloc(256 << 10) != NULL, "alloc of 256 KiB more");
        CHECK(postbox_dsm_alloc(PAGE) == NULL &&
                  postbox_dsm_last_error() == POSTBOX_DSM_ERR_NO_MEMORY,
              "alloc past the collective half");
    }
    bar = postbox_dsm_barrier_create();
    OK(bar);
    CHECK(postbox_dsm_barrier(bar + 1, 1) == POSTBOX_DSM_ERR_BAD_BARRIER, "a barrier never made");
    CHECK(postbox_dsm_barrier(bar, 0) == POSTBOX_DSM_ERR_BAD_ARGUMENT, "a barrier of 0 threads");
    OK(postbox_dsm_barrier(bar, 1));
    CHECK(postbox_dsm_thread_join((postbox_dsm_thread_t){0, 5}, NULL) == POSTBOX_DSM_ERR_BAD_THREAD,
          "join of a thread never created");
    CHECK(postbox_dsm_thread_create(NULL, NULL, NULL) == POSTBOX_DSM_ERR_BAD_ARGUMENT,
          "create with NULLs");
    CHECK(postbox_dsm_stats(NULL) == POSTBOX_DSM_ERR_BAD_ARGUMENT, "stats into NULL");
    CHECK(strcmp(postbox_dsm_strerror(1), "unknown DSM error") == 0, "strerror of 1");
    OK(postbox_dsm_finalize());
    CHECK(postbox_dsm_lock(id) == POSTBOX_DSM_ERR_NOT_INITIALIZED, "lock after finalize");
    printf("dsm errors: ok\n");
    return 0;
}

static int run_barfail(void)
{
    int n = postbox_dsm_process_count(), rc = 0, k = 0;
    struct timespec t0, t1;

    while (rc == 0 && k < 8) {
        k++;
        rc = postbox_dsm_barrier(0, n);
    }
    CHECK(rc == POSTBOX_DSM_ERR_COMMUNICATION, "barrier %d returned %d (%s)", k, rc,
          postbox_dsm_strerror(rc));
    CHECK(k >= 3 && k <= 5, "barrier %d failed, not one of the 3rd to 5th", k);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = postbox_dsm_barrier(0, n);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(rc == POSTBOX_DSM_ERR_COMMUNICATION, "the barrier after the failed one returned %d", rc);
    CHECK(t1.tv_sec - t0.tv_sec < 2, "the barrier after the failed one took %ld s",
          (long)(t1.tv_sec - t0.tv_sec));
    fprintf(stderr, "process %d: barrier %d failed\n", me, k);
    return 0;
}

static int run_segv(void)
{
    volatile uintptr_t low = 64; /* (through a variable: the compiler would refuse a constant) */
    volatile int *outside = (volatile int *)low;

    OK(postbox_dsm_init(1 << 20));
    /* a fault in the shared range is served; one outside it is the program's */
    shared = postbox_dsm_alloc(PAGE);
    shared->lock = 1;
    printf("dsm segv: faulting outside the shared range\n");
    fflush(stdout);
    *outside = 1;
    printf("dsm segv: the fault did not kill the process\n");
    return 1;
}

int main(int argc, char **argv)
{
    postbox_dsm_stats_t stats;
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: pbt-dsm spmd | homes | unread | barriers | barlost | hotrevert | "
                        "nodeshare | nodecache | nodewrite | lockread T "
                        "| barread T | "
                        "threads T | barfail | "
                        "timing | "
                        "killed | errors | segv\n");
        return 2;
    }
    snprintf(test_name, sizeof(test_name), "%s", argv[1]);
    if (strcmp(test_name, "errors") == 0)
        return run_errors();
    if (strcmp(test_name, "segv") == 0)
        return run_segv();
    OK(postbox_dsm_init((size_t)16 << 20));
    me = postbox_dsm_process();
    if (strcmp(test_name, "spmd") == 0) {
        rc = run_spmd();
    } else if (strcmp(test_name, "homes") == 0) {
        rc = run_homes();
    } else if (strcmp(test_name, "unread") == 0) {
        rc = run_unread();
    } else if (strcmp(test_name, "nodeshare") == 0) {
        rc = run_nodeshare();
    } else if (strcmp(test_name, "refetch") == 0) {
        rc = run_refetch();
    } else if (strcmp(test_name, "nodecache") == 0) {
        rc = run_nodecache();
    } else if (strcmp(test_name, "nodewrite") == 0) {
        rc = run_nodewrite();
    } else if (strcmp(test_name, "barriers") == 0 || strcmp(test_name, "barlost") == 0) {
        rc = run_barriers();
    } else if (strcmp(test_name, "hotrevert") == 0) {
        rc = run_hotrevert();
    } else if (strcmp(test_name, "lockread") == 0 && argc > 2) {
        rc = run_lockread(atoi(argv[2]), 0);
    } else if (strcmp(test_name, "barread") == 0 && argc > 2) {
        rc = run_lockread(atoi(argv[2]), 1);
    } else if (strcmp(test_name, "killed") == 0) {
        /* process 1 dies while the others wait at a barrier for it */
        if (me == 1) {
            shared = postbox_dsm_alloc(PAGE);
            shared->lock = 1;
            kill(getpid(), SIGKILL);
        }
        rc = postbox_dsm_barrier(0, postbox_dsm_process_count());
        printf("dsm killed: process %d's barrier returned %d (%s)\n", me, rc,
               postbox_dsm_strerror(rc));
        return 1;
    } else if (strcmp(test_name, "barfail") == 0) {
        rc = run_barfail();
    } else if (strcmp(test_name, "timing") == 0) {
        rc = run_timing();
    } else if (strcmp(test_name, "threads") == 0 && argc > 2) {
        if (me != 0)
            return postbox_dsm_serve() == 0 ? 0 : 1;
        rc = run_threads(atoi(argv[2]));
    } else {
        fprintf(stderr, "pbt-dsm: unknown test %s\n", test_name);
        return 2;
    }
    OK(postbox_dsm_stats(&stats));
    if (getenv("PBT_DSM_VERBOSE") != NULL)
        fprintf(stderr, "process %d: %llu barrier calls, %llu barrier messages\n", me,
                (unsigned long long)stats.barriers,
                (unsigned long long)stats.messages[POSTBOX_DSM_MSG_BARRIER]);
    if (strcmp(test_name, "barriers") == 0)
        OK(check_barrier_trips(&stats));
    if (me == 0 || strcmp(test_name, "spmd") == 0 || strcmp(test_name, "homes") == 0 ||
        strcmp(test_name, "unread") == 0 || strcmp(test_name, "barriers") == 0 ||
        strcmp(test_name, "nodeshare") == 0 || strcmp(test_name, "refetch") == 0 ||
        strcmp(test_name, "nodecache") == 0 || strcmp(test_name, "nodewrite") == 0 ||
        strcmp(test_name, "hotrevert") == 0 || strcmp(test_name, "barlost") == 0 ||
        strcmp(test_name, "lockread") == 0 || strcmp(test_name, "barread") == 0 ||
        strcmp(test_name, "barfail") == 0) {
        /* (an SPMD program's other processes may end with finalize too) */
        OK(postbox_dsm_finalize());
    } else {
        OK(postbox_dsm_serve());
        OK(postbox_dsm_finalize()); /* nothing left to do: 0 */
    }
    if (me == 0) {
        printf("dsm %s: ok (process 0: %llu read faults, %llu write faults, %llu fetches, %llu "
               "diffs, %llu barrier calls, %llu barrier messages)\n",
               test_name, (unsigned long long)stats.read_faults,
               (unsigned long long)stats.write_faults, (unsigned long long)stats.page_fetches,
               (unsigned long long)stats.diffs, (unsigned long long)stats.barriers,
               (unsigned long long)stats.messages[POSTBOX_DSM_MSG_BARRIER]);
    }
    return rc;
}
