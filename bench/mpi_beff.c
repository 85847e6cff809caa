/*
 * mpi_beff: effective bandwidth (b_eff), distance sensitivity and the dense
 * communication algorithms of any MPI library (suites "beff" and "dense").
 *
 * Written to the standard MPI C API only, so that every library's own mpicc
 * builds it (Postbox's postbox-cc, MPICH, Open MPI), with the bench engine
 * (engine.c) and mpi_common.c.  Every rank runs the same list of
 * measurements, decided by the command line alone; rank 0 prints and
 * records them.  Tests (--tests, default beff,distance):
 *
 *   beff       b_eff of Rabenseifner and Koniges as b_eff.c 3.6 defines it
 *       (Fatoohi, Saini and Ciotti 2006 report it in their Table 1):
 *       21 message sizes L: 1, 2, 4 .. 4096 B, then 4096 * a^k, k = 1..8,
 *       a = (Lmax / 4096)^(1/8) rounded to whole bytes, the last Lmax;
 *       6 ring patterns (ring sizes 2, 4, 8, max(16, P/4), max(32, P/2), P,
 *       each at most P; max(1, min(int(P/size + 0.4), P/2)) rings laid out
 *       contiguously, uneven ones one member more or less) and --random (30)
 *       random patterns (one ring through a random permutation of the
 *       ranks); each rank sends L bytes to its next and its previous
 *       neighbour (a ring of two: to its one neighbour once); three methods:
 *       MPI_Sendrecv, MPI_Alltoallv with only the neighbours' counts
 *       non-zero, MPI_Irecv + MPI_Isend + MPI_Waitall.  b(pattern, L,
 *       method) = L * (messages of the pattern per loop) * loops / (the
 *       slowest rank's time of the loops), the maximum over --reps
 *       repetitions.  A pattern that sends exactly what another sends (the
 *       same neighbours for every rank: a random ring equal to a ring
 *       pattern, the few distinct rings of a small P) is measured once and
 *       recorded with how many of the 6 rings and of the random patterns it
 *       stands for (record keys rings, randoms), so the averages weigh it
 *       as the definition does.  One record per distinct pattern and size,
 *       with b of each method (sendrecv, alltoallv, nonblocking) and their
 *       maximum as the value; the averages are postbox.beffbench's.  Then
 *       the one ping-pong pair (ranks 0 and 1, MPI_Send / MPI_Recv): the
 *       latency (half the round trip of 1 byte) and the bandwidth at Lmax
 *       (Lmax / half the round trip).
 *   distance   ping-pong of rank 0 with rank d for every d = 1, 2, 4, .. and
 *       P-1 (IMB PingPong: bandwidth = size / half the round trip; Fatoohi
 *       et al. Figs. 2-3), and ping-ping of ranks 0 and 1 (both send at
 *       once, MPI_Isend + MPI_Recv + MPI_Wait; Fig. 1's bidirectional
 *       curve), with whether d shares rank 0's node (MPI_Get_processor_name).
 *   dense      the four dense algorithms of Fatoohi et al. Sec. 3.3, phase
 *       by phase (one MPI_Sendrecv per rank and loop; the slowest rank's
 *       time): aapc, phase k = 1..P-1: send to r+k, receive from r-k (mod
 *       P); pairwise, phase k = 1..Q-1 (Q the power of two >= P): exchange
 *       with r XOR k (idle when that is not a rank); cumulative, phase j =
 *       1..P/2: the pairs (i, i + P/2) for i < j exchange; random, --phases
 *       (P-1) phases: a new random permutation each phase, its ranks paired
 *       two by two.  Per phase and size: the bandwidth per communicating
 *       process (size * loops / slowest time) and the aggregate (times the
 *       ranks communicating).
 *
 * Random permutations (random patterns, random pairs) come from splitmix64
 * seeded with --seed (recorded): for i = 0..P-1, j = floor(u * P) with u
 * the next double in [0, 1), moved on to the next free slot, slot j gets i
 * (b_eff.c's construction with drand48).  The random patterns take the
 * first --random permutations of the stream of seed S, the dense random
 * pairs those of seed S + 1.  postbox.beffbench makes the same ones.
 *
 * Loop lengths adapt to --loop-ms per measurement (b_eff.c: 500 ms; here 20,
 * --quick 1): the first size of a pattern and method runs 10 loops, every
 * next one (target / the last time per loop / growth of the size) loops, at
 * least 1, at most 10000.  One loop before the timed ones warms up the
 * sizes of the first 18 (--quick: the first size only).  b_eff times its
 * three methods back to back and reduces their slowest times in one
 * MPI_Allreduce; the measurements that leave ranks out (the ping-pongs, a
 * phase with idle ranks) let those ranks wait asleep, polling every 200 us,
 * for a word of the lowest rank measured.
 */
#include <mpi.h>

#include "engine.h"
#include "mpi_common.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSIZES 21
#define POW2_SIZES 13 /* 2^0 .. 2^12 */
#define NRINGS 6
#define RANDOM_DEFAULT 30
#define REPS_DEFAULT 2
#define REPS_QUICK 1
#define LOOP_MS_DEFAULT 20.0
#define LOOP_MS_QUICK 1.0
#define FIRST_LOOPS 10
#define LOOPS_MAX 10000
#define WITH_PRELOOP 18
#define LMAX_QUICK ((size_t)256 << 10)
#define LMAX_CAP ((size_t)4 << 20)
#define LMAX_LEAST ((size_t)4096)
#define DIST_SIZE_MAX ((size_t)4 << 20)
#define TAG_PING 401
#define TAG_PONG 402
#define TAG_DENSE 403
#define TAG_GATE 404
#define IDLE_POLL_NS 200000 /* a rank left out of a measurement polls this often */
#define MPI_BEFF_DONE "# mpi_beff: done, status" /* rank 0's last line */

enum method {
    M_SENDRECV,
    M_ALLTOALLV,
    M_NONBLOCKING,
    NMETHODS
};
static const char *const method_names[NMETHODS] = {"sendrecv", "alltoallv", "nonblocking"};

enum test {
    T_BEFF,
    T_DISTANCE,
    T_DENSE,
    NTESTS
};
static const char *const test_names[NTESTS] = {"beff", "distance", "dense"};

enum dense_alg {
    D_AAPC,
    D_PAIRWISE,
    D_CUMULATIVE,
    D_RANDOM,
    NDENSE
};
static const char *const dense_names[NDENSE] = {"dense_aapc", "dense_pairwise", "dense_cumulative",
                                                "dense_random"};

/* One communication pattern of b_eff: each rank's next and previous
 * neighbour. */
typedef struct {
    int *next, *prev;
    char name[32];
    char *order; /* random patterns: the permutation, "0 2 1 3" */
    int rings;   /* of the 6 ring patterns, how many this one is */
    int randoms; /* of the random patterns, how many this one is */
    long messages;
} pattern_t;

static struct {
    pb_bench_opts_t opts;
    pb_mpi_bench_t b;
    int rank, ranks;
    bool selected[NTESTS];
    size_t lmax;
    double memory_mb; /* --memory-mb, or 0: measured */
    int nrandom, reps, phases;
    double loop_ms;
    bool reps_given, loop_given;
    uint64_t seed;
    char *sbuf, *rbuf;
    bool *active; /* the ranks of a measurement that only some take part in */
    int *scounts, *rcounts, *sdispls, *rdispls;
} g = {.b = PB_MPI_BENCH_INIT("mpi_beff"), .nrandom = RANDOM_DEFAULT, .seed = 1};

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "mpi_beff: rank %d: %s\n", g.rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void *alloc_or_die(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);

    if (p == NULL)
        die("out of memory");
    return p;
}

/* ---- random permutations ----------------------------------------------- */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The next random permutation of 0..@n-1 of the stream @state into @perm. */
static void random_permutation(uint64_t *state, int n, int *perm)
{
    for (int i = 0; i < n; i++)
        perm[i] = -1;
    for (int i = 0; i < n; i++) {
        double u = (double)(splitmix64(state) >> 11) * 0x1.0p-53;
        int j = (int)(u * n);

        while (perm[j] != -1)
            j = (j + 1) % n;
        perm[j] = i;
    }
}

/* ---- message sizes and Lmax -------------------------------------------- */

static void beff_sizes(size_t lmax, size_t *sizes)
{
    double lng = 4096.0, factor = pow((double)lmax / 4096.0, 1.0 / (NSIZES - POW2_SIZES));

    for (int i = 0; i < POW2_SIZES; i++)
        sizes[i] = (size_t)1 << i;
    for (int i = POW2_SIZES; i < NSIZES; i++) {
        lng *= factor;
        sizes[i] = (size_t)(lng + 0.5);
    }
    sizes[NSIZES - 1] = lmax;
}

/* Memory per process: --memory-mb, or the machine's memory over the ranks
 * on rank 0's host. */
static double memory_per_process(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int host_ranks = g.b.host_ranks > 0 ? g.b.host_ranks : g.ranks;

    if (g.memory_mb > 0.0)
        return g.memory_mb * 1048576.0;
    if (pages <= 0 || page <= 0)
        return 128.0 * 1048576.0;
    return (double)pages * (double)page / host_ranks;
}

/* ---- patterns ----------------------------------------------------------- */

static void pattern_count(pattern_t *p)
{
    p->messages = 0;
    for (int r = 0; r < g.ranks; r++)
        p->messages += p->next[r] == p->prev[r] ? 1 : 2;
}

/* Ring pattern @i (0..5) of b_eff.c: rings of about @size ranks. */
static void ring_pattern(int i, pattern_t *p)
{
    int P = g.ranks, want[NRINGS] = {2, 4, 8, P / 4 > 16 ? P / 4 : 16, P / 2 > 32 ? P / 2 : 32, P};
    int size = want[i] < P ? want[i] : P;
    int rings = (int)(1.0 * P / size + 0.4), low, high_count, low_count, first, second, first_count,
        second_count;

    rings = rings < P / 2 ? rings : P / 2;
    rings = rings > 1 ? rings : 1;
    low = P / rings;
    high_count = P - low * rings;
    low_count = rings - high_count;
    if ((low % 2) && high_count > 0) {
        first = low + 1, second = low, first_count = high_count, second_count = low_count;
    } else {
        first = low, second = low + 1, first_count = low_count, second_count = high_count;
    }
    snprintf(p->name, sizeof(p->name), "ring-%d*%d%s", rings, first,
             second_count == 0 ? "fix"
             : second > first  ? "&+1"
                               : "&-1");
    for (int r = 0; r < P; r++) {
        int ring, base;

        if (r < first_count * first) {
            ring = first;
            base = r / ring * ring;
        } else {
            ring = second;
            base = (r - first_count * first) / ring * ring + first_count * first;
        }
        p->next[r] = (r - base + 1) % ring + base;
        p->prev[r] = (r - base + ring - 1) % ring + base;
    }
}

/* A random pattern: one ring through @perm (position i sends to i+1). */
static void random_pattern(const int *perm, pattern_t *p)
{
    int P = g.ranks;

    for (int i = 0; i < P; i++) {
        p->next[perm[i]] = perm[(i + 1) % P];
        p->prev[perm[i]] = perm[(i + P - 1) % P];
    }
}

/* Whether @a and @b send the same messages: every rank has the same two
 * neighbours (a ring walked the other way round sends the same). */
static bool pattern_same(const pattern_t *a, const pattern_t *b)
{
    for (int r = 0; r < g.ranks; r++) {
        bool same = a->next[r] == b->next[r] && a->prev[r] == b->prev[r];
        bool turned = a->next[r] == b->prev[r] && a->prev[r] == b->next[r];

        if (!same && !turned)
            return false;
    }
    return true;
}

/* The distinct patterns of b_eff into @pats (room for NRINGS + nrandom);
 * @return how many. */
static int make_patterns(pattern_t *pats)
{
    int n = 0, P = g.ranks, *perm = alloc_or_die(sizeof(int) * (size_t)P);
    uint64_t state = g.seed;
    pattern_t cand;

    cand.next = alloc_or_die(sizeof(int) * (size_t)P);
    cand.prev = alloc_or_die(sizeof(int) * (size_t)P);
    for (int i = 0; i < NRINGS + g.nrandom; i++) {
        int k;

        cand.order = NULL;
        if (i < NRINGS) {
            ring_pattern(i, &cand);
        } else {
            size_t len = 0, room = (size_t)P * 12 + 1;

            random_permutation(&state, P, perm);
            random_pattern(perm, &cand);
            snprintf(cand.name, sizeof(cand.name), "random-%d", i - NRINGS + 1);
            cand.order = alloc_or_die(room);
            for (int r = 0; r < P; r++)
                len += (size_t)snprintf(cand.order + len, room - len, r ? " %d" : "%d", perm[r]);
        }
        for (k = 0; k < n && !pattern_same(&pats[k], &cand); k++)
            ;
        if (k == n) {
            pats[n] = cand;
            pats[n].next = alloc_or_die(sizeof(int) * (size_t)P);
            pats[n].prev = alloc_or_die(sizeof(int) * (size_t)P);
            memcpy(pats[n].next, cand.next, sizeof(int) * (size_t)P);
            memcpy(pats[n].prev, cand.prev, sizeof(int) * (size_t)P);
            pats[n].rings = pats[n].randoms = 0;
            pattern_count(&pats[n]);
            n++;
        } else {
            free(cand.order);
        }
        if (i < NRINGS)
            pats[k].rings++;
        else
            pats[k].randoms++;
    }
    free(cand.next);
    free(cand.prev);
    free(perm);
    return n;
}

/* ---- timing ------------------------------------------------------------- */

typedef void (*step_fn)(void *ctx);

/* @loops steps of @fn on this rank (one untimed first when @warm); @return
 * their time in seconds.  The
 * loops start right after the MPI_Allreduce of the measurement before,
 * which the ranks leave together (no barrier of its own: with more ranks
 * than cores every synchronisation costs a time slice). */
static double loop_time(step_fn fn, void *ctx, long loops, bool warm)
{
    uint64_t t0;

    if (warm)
        fn(ctx);
    t0 = pb_bench_time_now();
    for (long i = 0; i < loops; i++)
        fn(ctx);
    return (double)(pb_bench_time_now() - t0) * 1e-9;
}

/* The ranks not in @active (NULL: every rank is) wait for a word of the
 * lowest active rank, asleep between polls, so that with more ranks than
 * cores they leave the cores to the ranks measured. */
static void idle_gate(const bool *active)
{
    int leader = 0;

    if (active == NULL)
        return;
    while (leader < g.ranks && !active[leader])
        leader++;
    if (leader == g.ranks)
        return;
    if (g.rank == leader) {
        for (int r = 0; r < g.ranks; r++)
            if (!active[r])
                MPI_Send(NULL, 0, MPI_BYTE, r, TAG_GATE, MPI_COMM_WORLD);
    } else if (!active[g.rank]) {
        struct timespec nap = {0, IDLE_POLL_NS};
        MPI_Request rq;
        int done = 0;

        MPI_Irecv(NULL, 0, MPI_BYTE, leader, TAG_GATE, MPI_COMM_WORLD, &rq);
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        while (!done) {
            nanosleep(&nap, NULL);
            MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        }
    }
}

/* loop_time on the ranks of @active (NULL: all), then the slowest rank's
 * time (seconds) on every rank. */
static double timed_max(step_fn fn, void *ctx, long loops, bool warm, const bool *active)
{
    double t = active == NULL || active[g.rank] ? loop_time(fn, ctx, loops, warm) : 0.0;

    idle_gate(active);
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

/* Loops for the next measurement: the target over the time a loop will
 * take (@per_loop seconds so far, the size growing by @growth). */
static long next_loops(double per_loop, double growth)
{
    double want = per_loop > 0.0 ? g.loop_ms * 1e-3 / (per_loop * growth) : LOOPS_MAX;

    return want < 1.0 ? 1 : want > LOOPS_MAX ? LOOPS_MAX : (long)want;
}

/* ---- b_eff -------------------------------------------------------------- */

typedef struct {
    const pattern_t *p;
    size_t len;
    enum method m;
} exchange_t;

static void exchange_step(void *ctx)
{
    const exchange_t *x = ctx;
    int next = x->p->next[g.rank], prev = x->p->prev[g.rank], n = (int)x->len;
    bool two = next != prev;
    char *spong = g.sbuf + g.lmax, *rpong = g.rbuf + g.lmax;
    MPI_Request rq[4];
    MPI_Status st[4];
    int k = 0;

    switch (x->m) {
    case M_SENDRECV:
        MPI_Sendrecv(g.sbuf, n, MPI_BYTE, next, TAG_PING, g.rbuf, n, MPI_BYTE, prev, TAG_PING,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (two)
            MPI_Sendrecv(spong, n, MPI_BYTE, prev, TAG_PONG, rpong, n, MPI_BYTE, next, TAG_PONG,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    case M_ALLTOALLV:
        g.scounts[next] = g.rcounts[prev] = n;
        g.sdispls[next] = g.rdispls[prev] = 0;
        if (two) {
            g.scounts[prev] = g.rcounts[next] = n;
            g.sdispls[prev] = g.rdispls[next] = (int)g.lmax;
        }
        MPI_Alltoallv(g.sbuf, g.scounts, g.sdispls, MPI_BYTE, g.rbuf, g.rcounts, g.rdispls,
                      MPI_BYTE, MPI_COMM_WORLD);
        g.scounts[next] = g.rcounts[prev] = g.scounts[prev] = g.rcounts[next] = 0;
        break;
    case M_NONBLOCKING:
        MPI_Irecv(g.rbuf, n, MPI_BYTE, prev, TAG_PING, MPI_COMM_WORLD, &rq[k++]);
        if (two)
            MPI_Irecv(rpong, n, MPI_BYTE, next, TAG_PONG, MPI_COMM_WORLD, &rq[k++]);
        MPI_Isend(g.sbuf, n, MPI_BYTE, next, TAG_PING, MPI_COMM_WORLD, &rq[k++]);
        if (two)
            MPI_Isend(spong, n, MPI_BYTE, prev, TAG_PONG, MPI_COMM_WORLD, &rq[k++]);
        MPI_Waitall(k, rq, st);
        break;
    case NMETHODS: break;
    }
}

static pb_bench_record_t record_begin(const char *test, size_t size, const char *metric,
                                      const char *unit, int pairs)
{
    pb_bench_record_t rec = {
        .suite = strncmp(test, "dense", 5) == 0 ? "dense" : "beff",
        .test = test,
        .library = g.b.library,
        .transport = g.b.transport,
        .placement = g.b.placement,
        .ranks = g.ranks,
        .nodes = g.b.nodes,
        .pairs = pairs,
        .size = size,
        .metric = metric,
        .unit = unit,
        .probe_before = -1.0,
        .probe_after = -1.0,
    };

    pb_mpi_bench_record_identity(&rec, &g.b);
    return rec;
}

static void set_value(pb_bench_record_t *rec, double v, long loops, unsigned reps)
{
    rec->stats.median = rec->stats.min = rec->stats.max = v;
    rec->stats.reps = reps;
    rec->stats.iters = (uint64_t)loops;
}

/* The ping-pong pair of b_eff: ranks 0 and 1, MPI_Send / MPI_Recv. */
typedef struct {
    int peer; /* rank 0's partner; the others idle */
    size_t len;
    bool both; /* ping-ping: both send at once */
} pingpong_t;

static void pingpong_step(void *ctx)
{
    const pingpong_t *x = ctx;
    int n = (int)x->len;

    if (g.rank != 0 && g.rank != x->peer)
        return;
    if (x->both) {
        MPI_Request rq;
        int other = g.rank == 0 ? x->peer : 0;

        MPI_Isend(g.sbuf, n, MPI_BYTE, other, TAG_PING, MPI_COMM_WORLD, &rq);
        MPI_Recv(g.rbuf, n, MPI_BYTE, other, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else if (g.rank == 0) {
        MPI_Send(g.sbuf, n, MPI_BYTE, x->peer, TAG_PING, MPI_COMM_WORLD);
        MPI_Recv(g.rbuf, n, MPI_BYTE, x->peer, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(g.rbuf, n, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(g.sbuf, n, MPI_BYTE, 0, TAG_PONG, MPI_COMM_WORLD);
    }
}

/* Time of one step of @x on the ranks of @active (seconds; the best of
 * --reps measurements after a one-loop estimate); *@loops_p: the loops of a
 * measurement. */
static double step_time(step_fn fn, void *x, const bool *active, long *loops_p)
{
    double est = timed_max(fn, x, 1, true, active), best = 0.0;
    long loops = next_loops(est, 1.0);

    for (int r = 0; r < g.reps; r++) {
        double t = timed_max(fn, x, loops, false, active) / (double)loops;

        best = r == 0 || t < best ? t : best;
    }
    *loops_p = loops;
    return best;
}

/* g.active for rank 0 and rank @peer. */
static const bool *pair_active(int peer)
{
    for (int r = 0; r < g.ranks; r++)
        g.active[r] = r == 0 || r == peer;
    return g.active;
}

static void pingpong_pair(pb_bench_out_t *out)
{
    pingpong_t x = {.peer = 1, .len = 1};
    long loops;
    double lat = step_time(pingpong_step, &x, pair_active(x.peer), &loops) / 2.0, bw;

    if (g.rank == 0) {
        pb_bench_record_t rec = record_begin("pingpong_latency", 1, "latency", "us", 1);

        set_value(&rec, lat * 1e6, loops, (unsigned)g.reps);
        pb_bench_record_emit(out, &rec);
    }
    x.len = g.lmax;
    bw = (double)g.lmax / (step_time(pingpong_step, &x, pair_active(x.peer), &loops) / 2.0) * 1e-6;
    if (g.rank == 0) {
        pb_bench_record_t rec = record_begin("pingpong_bandwidth", g.lmax, "bandwidth", "MB/s", 1);

        set_value(&rec, bw, loops, (unsigned)g.reps);
        pb_bench_record_add_num(&rec, "lmax", (double)g.lmax);
        pb_bench_record_emit(out, &rec);
        printf("# ping-pong pair (ranks 0 and 1): latency %.3f us, bandwidth at Lmax %.1f MB/s\n",
               lat * 1e6, bw);
        fflush(stdout);
    }
}

/* Whether size @s of a pattern gets one loop before the timed ones: the
 * first 18 (b_eff.c), under --quick the first only (with more ranks than
 * cores a loop is a time slice or more; the first warms the connections). */
static bool warm_up(int s)
{
    return g.opts.quick ? s == 0 : s < WITH_PRELOOP;
}

static int run_beff(pb_bench_out_t *out)
{
    size_t sizes[NSIZES];
    pattern_t *pats = alloc_or_die(sizeof(pattern_t) * (size_t)(NRINGS + g.nrandom));
    int n = make_patterns(pats);

    beff_sizes(g.lmax, sizes);
    if (g.rank == 0) {
        printf("\n# b_eff (%s): %d ranks, Lmax %zu B, %d random patterns (seed %llu), %d "
               "distinct patterns, %d repetition(s), ~%.3g ms per measurement\n",
               g.b.library, g.ranks, g.lmax, g.nrandom, (unsigned long long)g.seed, n, g.reps,
               g.loop_ms);
        printf("%-16s %5s %5s %10s %10s %10s %10s %10s\n", "#pattern", "rings", "rand", "bytes",
               "sendrecv", "alltoallv", "nonblk", "max[MB/s]");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < n; k++) {
        double per_loop[NMETHODS] = {0};
        long loops[NMETHODS];

        for (int m = 0; m < NMETHODS; m++)
            loops[m] = FIRST_LOOPS;
        for (int s = 0; s < NSIZES; s++) {
            double b[NMETHODS] = {0}, best = 0.0;

            for (int m = 0; m < NMETHODS; m++)
                if (s > 0) {
                    double growth = (double)sizes[s] / (double)sizes[s - 1];

                    loops[m] = next_loops(per_loop[m], growth > 1.0 ? growth : 1.0);
                }
            for (int r = 0; r < g.reps; r++) {
                double t[NMETHODS];

                /* the three methods one after the other, one MPI_Allreduce
                 * for their slowest times */
                for (int m = 0; m < NMETHODS; m++) {
                    exchange_t x = {.p = &pats[k], .len = sizes[s], .m = (enum method)m};

                    t[m] = loop_time(exchange_step, &x, loops[m], warm_up(s));
                }
                MPI_Allreduce(MPI_IN_PLACE, t, NMETHODS, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                for (int m = 0; m < NMETHODS; m++) {
                    double bw = (double)sizes[s] * (double)pats[k].messages * (double)loops[m] /
                                t[m] * 1e-6;

                    per_loop[m] = t[m] / (double)loops[m];
                    b[m] = bw > b[m] ? bw : b[m];
                }
            }
            for (int m = 0; m < NMETHODS; m++)
                best = b[m] > best ? b[m] : best;
            if (g.rank != 0)
                continue;

            pb_bench_record_t rec = record_begin("beff_pattern", sizes[s], "bandwidth", "MB/s", 1);

            set_value(&rec, best, loops[M_SENDRECV], (unsigned)g.reps);
            pb_bench_record_add_str(&rec, "pattern", pats[k].name);
            pb_bench_record_add_num(&rec, "rings", pats[k].rings);
            pb_bench_record_add_num(&rec, "randoms", pats[k].randoms);
            pb_bench_record_add_num(&rec, "lmax", (double)g.lmax);
            pb_bench_record_add_num(&rec, "messages", (double)pats[k].messages);
            for (int m = 0; m < NMETHODS; m++)
                pb_bench_record_add_num(&rec, method_names[m], b[m]);
            pb_bench_record_add_num(&rec, "seed", (double)g.seed);
            if (pats[k].order != NULL)
                pb_bench_record_add_str(&rec, "order", pats[k].order);
            pb_bench_record_emit(out, &rec);
            if (s == 0 || s == NSIZES - 1)
                printf("%-16s %5d %5d %10zu %10.2f %10.2f %10.2f %10.2f\n", pats[k].name,
                       pats[k].rings, pats[k].randoms, sizes[s], b[0], b[1], b[2], best);
            fflush(stdout);
        }
    }
    pingpong_pair(out);
    for (int k = 0; k < n; k++) {
        free(pats[k].next);
        free(pats[k].prev);
        free(pats[k].order);
    }
    free(pats);
    return 0;
}

/* ---- distance ----------------------------------------------------------- */

/* Whether rank @d runs on rank 0's node (on rank 0; collective). */
static bool same_node(int d)
{
    char name[MPI_MAX_PROCESSOR_NAME] = {0}, other[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;

    MPI_Get_processor_name(name, &len);
    if (g.rank == d && d != 0)
        MPI_Send(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, TAG_PING, MPI_COMM_WORLD);
    if (g.rank == 0 && d != 0)
        MPI_Recv(other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, d, TAG_PING, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    return strncmp(name, other, MPI_MAX_PROCESSOR_NAME) == 0;
}

static unsigned distance_sizes(size_t *sizes)
{
    static const size_t quick[] = {1, 1024, 65536, (size_t)1 << 20};
    unsigned n = 0;

    if (g.opts.nsizes > 0)
        return pb_bench_sizes_make(&g.opts, 1, DIST_SIZE_MAX, 4, 4, sizes);
    if (g.opts.quick) {
        for (unsigned i = 0; i < sizeof(quick) / sizeof(quick[0]); i++)
            sizes[n++] = quick[i];
        return n;
    }
    return pb_bench_sizes_make(&g.opts, 1, DIST_SIZE_MAX, 4, 4, sizes);
}

static void distance_figure(pb_bench_out_t *out, int d, bool both, const size_t *sizes, unsigned n)
{
    bool near = same_node(d);

    if (g.rank == 0) {
        printf("\n# %s rank 0 with rank %d (%s node): bandwidth = size / %s\n",
               both ? "ping-ping" : "ping-pong", d, near ? "same" : "another",
               both ? "time of one exchange" : "half the round trip");
        printf("%12s %10s %12s %12s\n", "#bytes", "#loops", "time[us]", "MB/s");
    }
    for (unsigned s = 0; s < n; s++) {
        pingpong_t x = {.peer = d, .len = sizes[s], .both = both};
        long loops;
        double t = step_time(pingpong_step, &x, pair_active(x.peer), &loops) / (both ? 1.0 : 2.0);

        if (g.rank != 0)
            continue;

        pb_bench_record_t rec =
            record_begin(both ? "pingping" : "pingpong_distance", sizes[s], "bandwidth", "MB/s", 1);

        set_value(&rec, (double)sizes[s] / t * 1e-6, loops, (unsigned)g.reps);
        pb_bench_record_add_num(&rec, "distance", d);
        pb_bench_record_add_bool(&rec, "same_node", near);
        pb_bench_record_add_num(&rec, "time_us", t * 1e6);
        pb_bench_record_emit(out, &rec);
        printf("%12zu %10ld %12.3f %12.2f\n", sizes[s], loops, t * 1e6,
               (double)sizes[s] / t * 1e-6);
        fflush(stdout);
    }
}

static int run_distance(pb_bench_out_t *out)
{
    size_t sizes[PB_BENCH_SIZES_MAX];
    unsigned n = distance_sizes(sizes);

    int d;

    /* 1, 2, 4, .. below P, then P - 1, the farthest */
    for (d = 1; d < g.ranks; d *= 2)
        distance_figure(out, d, false, sizes, n);
    if (d / 2 != g.ranks - 1)
        distance_figure(out, g.ranks - 1, false, sizes, n);
    distance_figure(out, 1, true, sizes, n);
    return 0;
}

/* ---- dense communication ------------------------------------------------ */

typedef struct {
    int dest, src; /* -1: idle this phase */
    size_t len;
} dense_t;

static void dense_step(void *ctx)
{
    const dense_t *x = ctx;

    if (x->dest < 0)
        return;
    MPI_Sendrecv(g.sbuf, (int)x->len, MPI_BYTE, x->dest, TAG_DENSE, g.rbuf, (int)x->len, MPI_BYTE,
                 x->src, TAG_DENSE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static int pow2_at_least(int n)
{
    int q = 1;

    while (q < n)
        q *= 2;
    return q;
}

/* The phases of algorithm @a. */
static int dense_phases(enum dense_alg a)
{
    switch (a) {
    case D_AAPC: return g.ranks - 1;
    case D_PAIRWISE: return pow2_at_least(g.ranks) - 1;
    case D_CUMULATIVE: return g.ranks / 2;
    case D_RANDOM: return g.phases > 0 ? g.phases : g.ranks - 1;
    case NDENSE: break;
    }
    return 0;
}

/* Every rank's destination and source in phase @k (1-based) of @a into
 * @dest and @src (-1: idle); @perm: the phase's permutation (random). */
static void dense_schedule(enum dense_alg a, int k, const int *perm, int *dest, int *src)
{
    int P = g.ranks;

    for (int r = 0; r < P; r++)
        dest[r] = src[r] = -1;
    switch (a) {
    case D_AAPC:
        for (int r = 0; r < P; r++) {
            dest[r] = (r + k) % P;
            src[r] = (r - k % P + P) % P;
        }
        break;
    case D_PAIRWISE:
        for (int r = 0; r < P; r++)
            if ((r ^ k) < P)
                dest[r] = src[r] = r ^ k;
        break;
    case D_CUMULATIVE:
        for (int i = 0; i < k && i < P / 2; i++) {
            dest[i] = src[i] = i + P / 2;
            dest[i + P / 2] = src[i + P / 2] = i;
        }
        break;
    case D_RANDOM:
        for (int i = 0; i + 1 < P; i += 2) {
            dest[perm[i]] = src[perm[i]] = perm[i + 1];
            dest[perm[i + 1]] = src[perm[i + 1]] = perm[i];
        }
        break;
    case NDENSE: break;
    }
}

static unsigned dense_sizes(size_t *sizes)
{
    static const size_t quick[] = {1024, 65536};
    static const size_t full[] = {8, 1024, 3072, 16384, 65536, 262144, (size_t)1 << 20};
    const size_t *list = g.opts.quick ? quick : full;
    unsigned n = g.opts.quick ? 2 : sizeof(full) / sizeof(full[0]);

    if (g.opts.nsizes > 0)
        return pb_bench_sizes_make(&g.opts, 1, DIST_SIZE_MAX, 2, 2, sizes);
    for (unsigned i = 0; i < n; i++)
        sizes[i] = list[i];
    return n;
}

static int run_dense(pb_bench_out_t *out)
{
    int P = g.ranks, *dest = alloc_or_die(sizeof(int) * (size_t)P),
        *src = alloc_or_die(sizeof(int) * (size_t)P), *perm = alloc_or_die(sizeof(int) * (size_t)P);
    size_t sizes[PB_BENCH_SIZES_MAX];
    unsigned nsizes = dense_sizes(sizes);

    for (int a = 0; a < NDENSE; a++) {
        uint64_t state = g.seed + 1;
        int phases = dense_phases((enum dense_alg)a);

        if (g.rank == 0) {
            printf("\n# %s (%s): %d ranks, %d phases; MB/s per communicating process "
                   "(aggregate)\n",
                   dense_names[a], g.b.library, P, phases);
            printf("%6s %7s %12s %12s %12s\n", "#phase", "active", "bytes", "MB/s", "aggregate");
        }
        for (int k = 1; k <= phases; k++) {
            int active = 0;

            if (a == D_RANDOM)
                random_permutation(&state, P, perm);
            dense_schedule((enum dense_alg)a, k, perm, dest, src);
            for (int r = 0; r < P; r++) {
                g.active[r] = dest[r] >= 0;
                active += g.active[r];
            }
            for (unsigned s = 0; s < nsizes; s++) {
                dense_t x = {.dest = dest[g.rank], .src = src[g.rank], .len = sizes[s]};
                long loops;
                double t = step_time(dense_step, &x, g.active, &loops),
                       bw = (double)sizes[s] / t * 1e-6;

                if (g.rank != 0)
                    continue;

                pb_bench_record_t rec =
                    record_begin(dense_names[a], sizes[s], "bandwidth", "MB/s", active / 2);

                set_value(&rec, bw, loops, (unsigned)g.reps);
                pb_bench_record_add_num(&rec, "phase", k);
                pb_bench_record_add_num(&rec, "phases", phases);
                pb_bench_record_add_num(&rec, "active", active);
                pb_bench_record_add_num(&rec, "aggregate", bw * active);
                pb_bench_record_add_num(&rec, "seed", (double)g.seed);
                pb_bench_record_emit(out, &rec);
                printf("%6d %7d %12zu %12.2f %12.2f\n", k, active, sizes[s], bw, bw * active);
                fflush(stdout);
            }
        }
    }
    free(dest);
    free(src);
    free(perm);
    return 0;
}

/* ---- options and main --------------------------------------------------- */

static const char what[] =
    "b_eff (rings and random patterns, 21 sizes up to Lmax, Sendrecv / Alltoallv /\n"
    "Irecv+Isend+Waitall), ping-pong by rank distance, and the four dense\n"
    "communication algorithms (aapc, pairwise, cumulative, random) of an MPI library\n"
    "(suites beff and dense).  Rank 0 reports.\n"
    "\n"
    "Options of this program (before the common ones):\n"
    "  --library NAME     library name in the records (default: guessed from the library)\n"
    "  --transport NAME   transport in the records (default shm)\n"
    "  --placement NAME   placement in the records (default on-node)\n"
    "  --nodes N          nodes in the records (default 1)\n"
    "  --path NAME        path in the records: on-node (default) or network\n"
    "  --path-how TEXT    how the runner forced that path (record key path_how)\n"
    "  --round N          which of several runs of the same figures this is\n"
    "  --tests a,b        beff, distance, dense (default beff,distance)\n"
    "  --lmax BYTES       b_eff's largest message (default: memory per process / 128,\n"
    "                     at most 4 MiB; --quick 256 KiB); at least 4096\n"
    "  --memory-mb M      memory per process for Lmax (default: the machine's / ranks)\n"
    "  --random N         b_eff's random patterns (default 30)\n"
    "  --reps N           repetitions of each measurement, the best kept (default 2,\n"
    "                     --quick 1)\n"
    "  --loop-ms MS       time of one measurement's loops (default 20, --quick 1)\n"
    "  --seed S           the random permutations' seed (default 1; recorded)\n"
    "  --phases N         dense_random's phases (default ranks - 1)\n"
    "  (--sizes, below: the distance and dense sizes; b_eff's are its 21)";

/* A whole number from @least to @most in *@out; -1 with a message if not. */
static int parse_whole(const char *opt, const char *val, double least, double most, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(val, &end);
    if (errno != 0 || end == val || *end != '\0' || v != floor(v) || v < least || v > most) {
        fprintf(stderr, "mpi_beff: bad %s '%s' (want a whole number from %.0f to %.0f)\n", opt, val,
                least, most);
        return -1;
    }
    *out = v;
    return 0;
}

static int own_options(int argc, char **argv)
{
    static const char *const with_arg[] = {"--tests", "--lmax",    "--memory-mb", "--random",
                                           "--reps",  "--loop-ms", "--seed",      "--phases"};
    int n = 1;

    g.selected[T_BEFF] = g.selected[T_DISTANCE] = true;
    for (int i = 1; i < argc; i++) {
        const char *val = NULL;
        int found = pb_mpi_bench_option(&g.b, argc, argv, &i);
        double v = 0.0;
        unsigned k = 0;

        if (found < 0)
            return -1;
        if (found > 0)
            continue;
        found = pb_mpi_bench_option_in("mpi_beff", with_arg, sizeof(with_arg) / sizeof(with_arg[0]),
                                       argc, argv, &i, &k, &val);
        if (found < 0)
            return -1;
        if (found == 0) {
            argv[n++] = argv[i];
            continue;
        }
        switch (k) {
        case 0:
            if (pb_mpi_bench_select("mpi_beff", val, test_names, NTESTS, g.selected) != 0)
                return -1;
            break;
        case 1:
            if (parse_whole("--lmax", val, (double)LMAX_LEAST, (double)(1u << 30), &v) != 0)
                return -1;
            g.lmax = (size_t)v;
            break;
        case 2:
            if (parse_whole("--memory-mb", val, 1, 1 << 24, &g.memory_mb) != 0)
                return -1;
            break;
        case 3:
            if (parse_whole("--random", val, 0, 1000, &v) != 0)
                return -1;
            g.nrandom = (int)v;
            break;
        case 4:
            if (parse_whole("--reps", val, 1, 100, &v) != 0)
                return -1;
            g.reps = (int)v;
            g.reps_given = true;
            break;
        case 5:
            v = strtod(val, NULL);
            if (!(v > 0.0) || v > 60000.0) {
                fprintf(stderr, "mpi_beff: bad --loop-ms '%s' (want a number > 0)\n", val);
                return -1;
            }
            g.loop_ms = v;
            g.loop_given = true;
            break;
        case 6:
            if (parse_whole("--seed", val, 0, 9007199254740991.0, &v) != 0)
                return -1;
            g.seed = (uint64_t)v;
            break;
        default:
            if (parse_whole("--phases", val, 1, 100000, &v) != 0)
                return -1;
            g.phases = (int)v;
            break;
        }
    }
    argv[n] = NULL;
    return n;
}

static int run_all(void)
{
    pb_bench_out_t out = {0};
    int status = 0;
    size_t buf;

    pb_mpi_bench_job_shape(&g.b, MPI_COMM_WORLD);
    MPI_Bcast(&g.b.host_ranks, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (g.lmax == 0) {
        double want = memory_per_process() / 128.0;

        g.lmax = g.opts.quick                ? LMAX_QUICK
                 : want > (double)LMAX_CAP   ? LMAX_CAP
                 : want < (double)LMAX_LEAST ? LMAX_LEAST
                                             : (size_t)want;
    }
    buf = 2 * (g.lmax > DIST_SIZE_MAX ? g.lmax : DIST_SIZE_MAX);
    g.sbuf = alloc_or_die(buf);
    g.rbuf = alloc_or_die(buf);
    memset(g.sbuf, 0x5a, buf);
    g.active = alloc_or_die(sizeof(bool) * (size_t)g.ranks);
    g.scounts = alloc_or_die(sizeof(int) * (size_t)g.ranks);
    g.rcounts = alloc_or_die(sizeof(int) * (size_t)g.ranks);
    g.sdispls = alloc_or_die(sizeof(int) * (size_t)g.ranks);
    g.rdispls = alloc_or_die(sizeof(int) * (size_t)g.ranks);
    if (g.rank == 0) {
        if (pb_bench_out_open(&out, &g.opts) != 0)
            status = 2;
        else
            printf("# mpi_beff: library %s, %s, ranks %d (%d on this host, %d CPUs), nodes %d, "
                   "transport %s, placement %s, path %s%s%s, Lmax %zu B\n",
                   g.b.library, g.b.version, g.ranks, g.b.host_ranks, g.b.cores, g.b.nodes,
                   g.b.transport, g.b.placement, g.b.path, g.b.path_how != NULL ? " " : "",
                   g.b.path_how != NULL ? g.b.path_how : "", g.lmax);
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (status == 0 && g.selected[T_BEFF])
        status = run_beff(&out);
    if (status == 0 && g.selected[T_DISTANCE])
        status = run_distance(&out);
    if (status == 0 && g.selected[T_DENSE])
        status = run_dense(&out);
    if (g.rank == 0)
        pb_bench_out_close(&out);
    free(g.sbuf);
    free(g.rbuf);
    free(g.active);
    free(g.scounts);
    free(g.rcounts);
    free(g.sdispls);
    free(g.rdispls);
    return status;
}

int main(int argc, char **argv)
{
    int status = pb_mpi_bench_args(argc, argv, own_options, &g.opts, what,
                                   "mpiexec -n 4 mpi_beff --quick --json beff.jsonl");

    if (status >= 0)
        return status;
    if (!g.reps_given)
        g.reps = g.opts.quick ? REPS_QUICK : REPS_DEFAULT;
    if (!g.loop_given)
        g.loop_ms = g.opts.quick ? LOOP_MS_QUICK : LOOP_MS_DEFAULT;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.ranks);
    pb_mpi_bench_identity(&g.b);
    if (g.ranks < 2) {
        fprintf(stderr, "mpi_beff: needs at least 2 ranks (e.g. mpiexec -n 4 %s)\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    status = pb_mpi_bench_done(MPI_BEFF_DONE, g.rank == 0, run_all(), MPI_COMM_WORLD);
    MPI_Finalize();
    return status;
}
