/*
 * mpi_traffic: uniform random traffic and permutation traffic of any MPI
 * library (suite "traffic"), after §V-E and §VI-E of seed 000 (Qian et al.,
 * the Sun Fire Link evaluation: Figs. 14 and 15).
 *
 * Written to the standard MPI C API only (and POSIX sched_yield/nanosleep),
 * so that every library's own mpicc builds it, together with the bench
 * engine (engine.c) and mpi_common.c.
 *
 * Every rank is a sender and a receiver.  A sender draws, from a seeded
 * generator of its own (splitmix64, its state started from --seed and the
 * rank), for each message a destination, a size and the gap before the next
 * one:
 *   - destination: "uniform": uniform among the other ranks; a permutation
 *     test: the one fixed rank the permutation gives (below);
 *   - size (mean S = --mean-size): uniform, an integer in [1, 2S - 1];
 *     exponential, round(-S ln(1 - u)) kept within [1, 16 S];
 *   - gap (mean T): uniform in [0, 2T); exponential, -T ln(1 - u).
 * The offered load sets T = S / (load per rank).  For --window-ms the
 * sender posts each message (MPI_Isend) at its scheduled time, at most
 * SEND_SLOTS outstanding (a message due while every slot is busy waits, its
 * time kept: the sender falls behind); then it posts whatever of its
 * schedule is left.  At "saturation" there is no schedule: a sender keeps
 * its SEND_SLOTS sends outstanding for the whole window.  Receivers keep
 * RECV_SLOTS receives posted for each rank that sends to them (no
 * MPI_ANY_SOURCE: a library may fall behind on wildcard receives under this
 * load); each sender ends with one message to every other rank saying how
 * many it sent there, so every rank knows when it has everything.  Every
 * wait (the traffic, the bench's own barrier and gathers) polls with
 * MPI_Test*: SPINS polls, then sched_yield between polls, then short sleeps,
 * so that 8 ranks on 2 cores end promptly whatever the library does when
 * it waits.
 *
 *   offered  = the bytes generated / the window          (MB/s = 10^6 B/s)
 *   accepted = the bytes received / the time until the last of them arrived
 * both summed over the ranks; the time is the longest of the ranks' own
 * (each from the barrier before the window to its last receive).  Below the
 * network's capacity accepted follows offered; above it, the sender falls
 * behind, the run outlasts the window and accepted levels off (Fig. 14).
 * Each test first measures saturation; its loads are then fractions
 * (--loads) of that accepted bandwidth, so every library is swept across
 * its own knee.
 *
 * The permutations (seed 000 §V-E), for P = 2^n ranks with the rank's
 * binary digits a_{n-1} ... a_0:
 *   baseline stage i:  the low i+1 digits rotate right by one
 *                      (a_{n-1}..a_{i+1} a_0 a_i .. a_1)
 *   butterfly stage i: digits i and 0 swap
 *   cube stage i:      digit i complemented
 *   *_single: the highest stage, i = n - 1; *_multi: every stage, i = 0
 *   first, then 1, ..., n - 1, composed (the full-stage permutation: the
 *   multi-stage cube is the complement, the multi-stage butterfly the
 *   perfect shuffle)
 *   bit_reversal:      a_0 a_1 ... a_{n-1}
 * and, defined for any P (and the seed's for P = 2^n):
 *   complement:        P - 1 - r            (2^n: every digit complemented)
 *   perfect_shuffle:   the first ceil(P/2) ranks to the even ranks 2r, the
 *                      rest to the odd ones 2(r - ceil(P/2)) + 1
 *                      (2^n: the digits rotate left by one)
 *   matrix_transpose:  r = i C + j of an R x C matrix, C the largest
 *                      divisor of P with C^2 <= P, R = P / C, goes to
 *                      j R + i (4^k: the two halves of the digits swap;
 *                      2^n: the low floor(n/2) digits move to the top, as
 *                      the seed's a_{n/2-1}..a_0 a_{n-1}..a_{n/2})
 *   neighbor:          r XOR 1 (0 with 1, 2 with 3, ...)
 * A rank the permutation maps to itself (or, for neighbor with P odd, the
 * last rank) sends nothing.  A permutation is not applicable ("n/a": not
 * measured, not recorded) when P is not a power of two for the bit-digit
 * ones, or when it maps every rank to itself (P = 2: baseline, butterfly,
 * bit_reversal, perfect_shuffle, matrix_transpose).  --print-permutations
 * LIST prints every table without MPI; python/postbox/trafficbench.py
 * computes the same tables (and the same generator) for the tests.
 */
#include <mpi.h>

#include "engine.h"
#include "mpi_common.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_DATA 301
#define TAG_END 302
#define TAG_SYNC 303
#define TAG_GATHER 304

#define SEND_SLOTS 8 /* outstanding sends of a sender */
#define RECV_SLOTS 4 /* posted receives of a receiver from each sender to it */
#define EXP_CAP 16   /* exponential sizes kept below EXP_CAP x the mean */
#define SPINS 64     /* idle polls before yielding the CPU */
#define YIELDS 2000  /* idle yields before sleeping between polls */
#define IDLE_SLEEP_NS 20000
#define MEAN_SIZE_DEFAULT 8192
#define WINDOW_MS_DEFAULT 100.0
#define WINDOW_MS_QUICK 30.0
#define REPS_DEFAULT 3
#define REPS_QUICK 1
#define RUN_LIMIT_S 20.0 /* a window that has not ended by then ends the program */
#define MPI_TRAFFIC_DONE "# mpi_traffic: done, status"

/* ---- the patterns --------------------------------------------------------- */

enum pattern {
    P_UNIFORM,
    P_BASELINE_SINGLE,
    P_BASELINE_MULTI,
    P_BIT_REVERSAL,
    P_BUTTERFLY_SINGLE,
    P_BUTTERFLY_MULTI,
    P_COMPLEMENT,
    P_CUBE_SINGLE,
    P_CUBE_MULTI,
    P_MATRIX_TRANSPOSE,
    P_NEIGHBOR,
    P_PERFECT_SHUFFLE,
    NPATTERNS
};

static const char *const pattern_names[NPATTERNS] = {
    "uniform",          "baseline_single",  "baseline_multi", "bit_reversal",
    "butterfly_single", "butterfly_multi",  "complement",     "cube_single",
    "cube_multi",       "matrix_transpose", "neighbor",       "perfect_shuffle",
};

/* n when @ranks = 2^n (n >= 1), else -1. */
static int digits_of(int ranks)
{
    for (int n = 1; n < 31; n++)
        if (ranks == 1 << n)
            return n;
    return -1;
}

static unsigned baseline_stage(unsigned x, int i)
{
    unsigned mask = (2u << i) - 1u;

    return (x & ~mask) | ((x & mask) >> 1) | ((x & 1u) << i);
}

static unsigned butterfly_stage(unsigned x, int i)
{
    unsigned low = x & 1u, high = (x >> i) & 1u;

    return (x & ~(1u | (1u << i))) | (low << i) | high;
}

static unsigned cube_stage(unsigned x, int i)
{
    return x ^ (1u << i);
}

static unsigned reverse_digits(unsigned x, int n)
{
    unsigned y = 0;

    for (int i = 0; i < n; i++)
        y |= ((x >> i) & 1u) << (n - 1 - i);
    return y;
}

/* The rank @r of @ranks sends to under permutation @p (itself: it sends
 * nothing), or -1 when @p is not defined at @ranks ranks (see the top). */
static int perm_dest_raw(enum pattern p, int r, int ranks)
{
    int n = digits_of(ranks);
    unsigned x = (unsigned)r;

    switch (p) {
    case P_COMPLEMENT: return ranks - 1 - r;
    case P_NEIGHBOR: return (r ^ 1) < ranks ? r ^ 1 : r;
    case P_PERFECT_SHUFFLE: {
        int half = (ranks + 1) / 2;

        return r < half ? 2 * r : 2 * (r - half) + 1;
    }
    case P_MATRIX_TRANSPOSE: {
        int cols = 1;

        for (int c = 1; c * c <= ranks; c++)
            if (ranks % c == 0)
                cols = c;
        return (r % cols) * (ranks / cols) + r / cols;
    }
    default: break;
    }
    if (n < 0)
        return -1;
    switch (p) {
    case P_BASELINE_SINGLE: return (int)baseline_stage(x, n - 1);
    case P_BUTTERFLY_SINGLE: return (int)butterfly_stage(x, n - 1);
    case P_CUBE_SINGLE: return (int)cube_stage(x, n - 1);
    case P_BASELINE_MULTI:
    case P_BUTTERFLY_MULTI:
    case P_CUBE_MULTI:
        for (int i = 0; i < n; i++)
            x = p == P_BASELINE_MULTI    ? baseline_stage(x, i)
                : p == P_BUTTERFLY_MULTI ? butterfly_stage(x, i)
                                         : cube_stage(x, i);
        return (int)x;
    case P_BIT_REVERSAL: return (int)reverse_digits(x, n);
    default: return -1;
    }
}

/* Whether permutation @p is measured at @ranks ranks: defined there, and
 * some rank sends. */
static bool perm_applies(enum pattern p, int ranks)
{
    if (p == P_UNIFORM)
        return ranks >= 2;
    if (ranks < 2)
        return false;
    for (int r = 0; r < ranks; r++) {
        int d = perm_dest_raw(p, r, ranks);

        if (d < 0)
            return false;
        if (d != r)
            return true;
    }
    return false;
}

/* ---- the generator -------------------------------------------------------- */

typedef struct {
    uint64_t state;
} rng_t;

/* The stream of rank @rank for seed @seed. */
static void rng_seed(rng_t *g_, uint64_t seed, int rank)
{
    g_->state = seed + 0x632BE59BD9B4E019ull * (uint64_t)(rank + 1);
}

/* splitmix64 */
static uint64_t rng_next(rng_t *g_)
{
    uint64_t z = (g_->state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits. */
static double rng_unit(rng_t *g_)
{
    return (double)(rng_next(g_) >> 11) * 0x1.0p-53;
}

enum dist {
    D_UNIFORM,
    D_EXPONENTIAL
};
static const char *const dist_names[] = {"uniform", "exponential"};

typedef struct {
    enum dist size_dist, time_dist;
    double mean_size; /* S, bytes */
    double mean_gap;  /* T, ns; 0: saturation */
} gen_params_t;

typedef struct {
    int dest;
    size_t size;
    double gap_ns;
} draw_t;

/* One message of rank @rank of @ranks: destination (@fixed_dest >= 0: that
 * one; else uniform among the others), size, then the gap after it. */
static draw_t draw_message(rng_t *g_, const gen_params_t *gp, int rank, int ranks, int fixed_dest)
{
    draw_t d;
    double u;

    if (fixed_dest >= 0) {
        d.dest = fixed_dest;
    } else {
        d.dest = (int)(rng_unit(g_) * (double)(ranks - 1));
        if (d.dest >= rank)
            d.dest++;
    }
    u = rng_unit(g_);
    if (gp->size_dist == D_UNIFORM) {
        d.size = 1 + (size_t)(u * (2.0 * gp->mean_size - 1.0));
    } else {
        double s = llround(-gp->mean_size * log(1.0 - u));

        d.size = s < 1.0                       ? 1
                 : s > EXP_CAP * gp->mean_size ? (size_t)(EXP_CAP * gp->mean_size)
                                               : (size_t)s;
    }
    u = rng_unit(g_);
    d.gap_ns = gp->time_dist == D_UNIFORM ? u * 2.0 * gp->mean_gap : -gp->mean_gap * log(1.0 - u);
    return d;
}

static size_t max_message(const gen_params_t *gp)
{
    return gp->size_dist == D_UNIFORM ? (size_t)(2.0 * gp->mean_size)
                                      : (size_t)(EXP_CAP * gp->mean_size) + 1;
}

/* ---- state ---------------------------------------------------------------- */

typedef struct {
    const char *test;
    enum pattern pattern;
    enum dist size_dist, time_dist;
} figure_kind_t;

static struct {
    pb_bench_opts_t opts;
    pb_mpi_bench_t b;
    int ranks, rank;
    MPI_Comm comm; /* the traffic and the bench's own synchronization */
    bool selected[NPATTERNS];
    uint64_t seed;
    double mean_size;
    double window_ms;
    int reps;
    double loads[16], perm_loads[16];
    unsigned nloads, nperm_loads;
    bool loads_given, perm_loads_given, window_given;
    bool size_dist_given[2], time_dist_given[2];
    char *hosts; /* every rank's processor name (MPI_MAX_PROCESSOR_NAME each) */
} g = {.b = PB_MPI_BENCH_INIT("mpi_traffic"), .seed = 1, .mean_size = MEAN_SIZE_DEFAULT};

static const double loads_full[] = {0.2, 0.4, 0.6, 0.8, 0.9, 1.0, 1.2, 1.5};
static const double loads_quick[] = {0.5, 1.0};
/* the permutations' loads without --quick: below and at the knee */
static const double perm_loads_full[] = {0.5, 1.0};
/* the permutations' loads under --quick: none, saturation only (Fig. 15) */

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "mpi_traffic: rank %d: %s\n", g.rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void *alloc_or_die(size_t bytes)
{
    void *p = calloc(1, bytes > 0 ? bytes : 1);

    if (p == NULL)
        die("out of memory");
    return p;
}

/* ---- waiting without spinning forever --------------------------------------- */

typedef struct {
    unsigned idle;
} idler_t;

/* After a poll that found nothing to do: spin SPINS times, then yield the
 * CPU, then (after YIELDS yields) sleep a little between polls, so that 8
 * ranks on 2 cores all get their turn. */
static void idle_step(idler_t *w)
{
    w->idle++;
    if (w->idle <= SPINS)
        return;
    if (w->idle <= SPINS + YIELDS) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, IDLE_SLEEP_NS};
    nanosleep(&ts, NULL);
}

/* MPI_Waitall by polling MPI_Test with idle_step between polls. */
static void wait_all(int n, MPI_Request *reqs)
{
    idler_t w = {0};

    for (int k = 0; k < n;) {
        int flag = 0;

        MPI_Test(&reqs[k], &flag, MPI_STATUS_IGNORE);
        if (flag) {
            k++;
            w.idle = 0;
        } else {
            idle_step(&w);
        }
    }
}

/* A dissemination barrier of zero-byte messages, waited for with wait_all. */
static void barrier(void)
{
    for (int dist = 1; dist < g.ranks; dist <<= 1) {
        MPI_Request r[2];
        int to = (g.rank + dist) % g.ranks, from = (g.rank - dist + g.ranks) % g.ranks;

        MPI_Irecv(NULL, 0, MPI_BYTE, from, TAG_SYNC, g.comm, &r[0]);
        MPI_Isend(NULL, 0, MPI_BYTE, to, TAG_SYNC, g.comm, &r[1]);
        wait_all(2, r);
    }
}

/* Rank 0 gets @n doubles of every rank into @all (ranks x @n); the others
 * send theirs. */
static void gather(const double *mine, int n, double *all)
{
    MPI_Request *r = alloc_or_die((size_t)g.ranks * sizeof(*r));

    if (g.rank == 0) {
        memcpy(all, mine, (size_t)n * sizeof(double));
        for (int k = 1; k < g.ranks; k++)
            MPI_Irecv(all + (size_t)k * (size_t)n, n, MPI_DOUBLE, k, TAG_GATHER, g.comm, &r[k - 1]);
        wait_all(g.ranks - 1, r);
    } else {
        MPI_Isend(mine, n, MPI_DOUBLE, 0, TAG_GATHER, g.comm, &r[0]);
        wait_all(1, r);
    }
    free(r);
}

/* Rank 0's @n doubles @v to every rank. */
static void share(double *v, int n)
{
    MPI_Request *r = alloc_or_die((size_t)g.ranks * sizeof(*r));

    if (g.rank == 0) {
        for (int k = 1; k < g.ranks; k++)
            MPI_Isend(v, n, MPI_DOUBLE, k, TAG_GATHER, g.comm, &r[k - 1]);
        wait_all(g.ranks - 1, r);
    } else {
        MPI_Irecv(v, n, MPI_DOUBLE, 0, TAG_GATHER, g.comm, &r[0]);
        wait_all(1, r);
    }
    free(r);
}

/* The largest of every rank's @v, on every rank. */
static int max_over_ranks(int v)
{
    double mine = v, best = v,
           *all = g.rank == 0 ? alloc_or_die((size_t)g.ranks * sizeof(double)) : NULL;

    gather(&mine, 1, all);
    for (int k = 0; g.rank == 0 && k < g.ranks; k++)
        best = all[k] > best ? all[k] : best;
    share(&best, 1);
    free(all);
    return (int)best;
}

/* ---- one window of traffic -------------------------------------------------- */

/* What one rank did in one window. */
enum {
    M_SENT_BYTES,
    M_SENT_MSGS,
    M_RECV_BYTES,
    M_RECV_MSGS,
    M_ELAPSED_NS, /* barrier to last receive (0 when it got nothing) */
    M_OFF_NODE_BYTES,
    M_LATE_MSGS, /* messages posted after their scheduled time */
    M_BAD,       /* messages that failed their check */
    M_COUNT
};

/* One window of pattern @p (fixed destinations from @perm, or uniform) with
 * generator @gp (mean_gap 0: saturation); fills @m for this rank.  Every
 * rank takes part; the ones without a destination only receive. */
static void traffic_window(enum pattern p, const gen_params_t *gp, uint64_t stream, double *m)
{
    const int P = g.ranks, nsend = SEND_SLOTS, nrecv = RECV_SLOTS * P;
    const int nreq = nrecv + P + nsend + P;
    MPI_Request *req = alloc_or_die((size_t)nreq * sizeof(*req));
    MPI_Status *st = alloc_or_die((size_t)nreq * sizeof(*st));
    int *idx = alloc_or_die((size_t)nreq * sizeof(*idx));
    int64_t *sent_to = alloc_or_die((size_t)P * sizeof(int64_t));
    int64_t *expect = alloc_or_die((size_t)P * sizeof(int64_t));
    int64_t *got_from = alloc_or_die((size_t)P * sizeof(int64_t));
    bool *end_seen = alloc_or_die((size_t)P * sizeof(bool));
    size_t maxmsg = max_message(gp);
    char *rbuf = alloc_or_die((size_t)nrecv * maxmsg), *sbuf = alloc_or_die((size_t)nsend * maxmsg);
    int fixed = -1, from_fixed = -1;
    bool sender, schedule_done, ends_posted = false;
    uint64_t window_ns = (uint64_t)(g.window_ms * 1e6), t0, now, last_recv = 0;
    double next_at = 0.0; /* ns after t0 of the next message */
    draw_t next;
    rng_t rng;
    idler_t w = {0};
    int ends_missing = P - 1;

    memset(m, 0, M_COUNT * sizeof(double));
    for (int k = 0; k < nreq; k++)
        req[k] = MPI_REQUEST_NULL;
    if (p != P_UNIFORM) {
        fixed = perm_dest_raw(p, g.rank, P);
        for (int r = 0; r < P; r++)
            if (r != g.rank && perm_dest_raw(p, r, P) == g.rank)
                from_fixed = r;
    }
    sender = p == P_UNIFORM || fixed != g.rank;
    rng_seed(&rng, g.seed + stream * 0x9E3779B97F4A7C15ull, g.rank);
    next = draw_message(&rng, gp, g.rank, P, fixed);
    next_at = next.gap_ns; /* the first message after one gap */
    if (gp->mean_gap <= 0.0)
        next_at = 0.0;
    schedule_done = !sender;
    /* RECV_SLOTS receives from each rank that sends here (no MPI_ANY_SOURCE:
     * some libraries lose track of wildcard receives under this load) */
    for (int k = 0; k < nrecv; k++)
        if (k / RECV_SLOTS != g.rank && (p == P_UNIFORM || k / RECV_SLOTS == from_fixed))
            MPI_Irecv(rbuf + (size_t)k * maxmsg, (int)maxmsg, MPI_BYTE, k / RECV_SLOTS, TAG_DATA,
                      g.comm, &req[k]);
    for (int r = 0; r < P; r++)
        if (r != g.rank)
            MPI_Irecv(&expect[r], 1, MPI_INT64_T, r, TAG_END, g.comm, &req[nrecv + r]);
    barrier();
    t0 = pb_bench_time_now();
    for (;;) {
        bool busy = false;
        int outcount = 0;

        now = pb_bench_time_now() - t0;
        /* post what is due, while a send slot is free */
        while (!schedule_done) {
            int slot = -1;

            if (gp->mean_gap > 0.0 ? next_at >= (double)window_ns : now >= window_ns) {
                schedule_done = true;
                break;
            }
            if (gp->mean_gap > 0.0 && next_at > (double)now)
                break;
            for (int k = 0; k < nsend && slot < 0; k++)
                if (req[nrecv + P + k] == MPI_REQUEST_NULL)
                    slot = k;
            if (slot < 0)
                break;
            char *buf = sbuf + (size_t)slot * maxmsg;
            int32_t head[2] = {g.rank, (int32_t)next.size};

            memcpy(buf, head, next.size < sizeof(head) ? next.size : sizeof(head));
            MPI_Isend(buf, (int)next.size, MPI_BYTE, next.dest, TAG_DATA, g.comm,
                      &req[nrecv + P + slot]);
            if (gp->mean_gap > 0.0 && (double)now > next_at + 1e5)
                m[M_LATE_MSGS] += 1.0;
            m[M_SENT_BYTES] += (double)next.size;
            m[M_SENT_MSGS] += 1.0;
            if (strncmp(g.hosts + (size_t)g.rank * MPI_MAX_PROCESSOR_NAME,
                        g.hosts + (size_t)next.dest * MPI_MAX_PROCESSOR_NAME,
                        MPI_MAX_PROCESSOR_NAME) != 0)
                m[M_OFF_NODE_BYTES] += (double)next.size;
            sent_to[next.dest]++;
            busy = true;
            next = draw_message(&rng, gp, g.rank, P, fixed);
            next_at += next.gap_ns;
        }
        if (schedule_done && !ends_posted) {
            bool sends_left = false;

            for (int k = 0; k < nsend; k++)
                sends_left = sends_left || req[nrecv + P + k] != MPI_REQUEST_NULL;
            if (!sends_left) {
                for (int r = 0; r < P; r++)
                    if (r != g.rank)
                        MPI_Isend(&sent_to[r], 1, MPI_INT64_T, r, TAG_END, g.comm,
                                  &req[nrecv + P + nsend + r]);
                ends_posted = true;
                busy = true;
            }
        }
        MPI_Testsome(nreq, req, &outcount, idx, st);
        if (outcount == MPI_UNDEFINED)
            outcount = 0;
        for (int k = 0; k < outcount; k++) {
            int i = idx[k];

            busy = true;
            if (i < nrecv) {
                int count = 0, src = st[k].MPI_SOURCE;
                const char *b = rbuf + (size_t)i * maxmsg;

                MPI_Get_count(&st[k], MPI_BYTE, &count);
                last_recv = pb_bench_time_now() - t0;
                m[M_RECV_BYTES] += count;
                m[M_RECV_MSGS] += 1.0;
                got_from[src]++;
                if (g.b.check) {
                    int32_t head[2] = {src, count};

                    if (memcmp(b, head,
                               (size_t)count < sizeof(head) ? (size_t)count : sizeof(head)) != 0 ||
                        (from_fixed >= 0 && src != from_fixed) ||
                        (p != P_UNIFORM && from_fixed < 0))
                        m[M_BAD] += 1.0;
                }
                MPI_Irecv(rbuf + (size_t)i * maxmsg, (int)maxmsg, MPI_BYTE, src, TAG_DATA, g.comm,
                          &req[i]);
            } else if (i < nrecv + P) {
                end_seen[i - nrecv] = true;
                ends_missing--;
            }
        }
        if (ends_posted && ends_missing == 0) {
            bool complete = true;

            for (int r = 0; r < P && complete; r++)
                complete = r == g.rank || got_from[r] == expect[r];
            for (int k = nrecv + P + nsend; k < nreq && complete; k++)
                complete = req[k] == MPI_REQUEST_NULL;
            if (complete)
                break;
        }
        if (busy) {
            w.idle = 0;
        } else {
            if (now > (uint64_t)(RUN_LIMIT_S * 1e9) + window_ns) {
                int sends_left = 0;

                for (int k = nrecv + P; k < nreq; k++)
                    sends_left += req[k] != MPI_REQUEST_NULL;
                fprintf(stderr,
                        "mpi_traffic: rank %d: %s: %.0f messages sent, %.0f received, %d "
                        "send(s) and %d end message(s) not complete\n",
                        g.rank, pattern_names[p], m[M_SENT_MSGS], m[M_RECV_MSGS], sends_left,
                        ends_missing);
                die("a traffic window did not end within its time limit");
            }
            /* a message due soon must not wait for a sleep: yield only */
            if (!schedule_done && gp->mean_gap > 0.0 &&
                next_at - (double)now <= 2.0 * IDLE_SLEEP_NS)
                sched_yield();
            else
                idle_step(&w);
        }
    }
    /* a rank that received nothing (a permutation's idle rank) does not
     * set the time */
    m[M_ELAPSED_NS] = (double)last_recv;
    for (int k = 0; k < nrecv; k++) {
        if (req[k] == MPI_REQUEST_NULL)
            continue;
        MPI_Cancel(&req[k]);
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
    }
    (void)end_seen;
    free(req);
    free(st);
    free(idx);
    free(sent_to);
    free(expect);
    free(got_from);
    free(end_seen);
    free(rbuf);
    free(sbuf);
}

/* ---- figures ------------------------------------------------------------------- */

typedef struct {
    double accepted[8], offered[8]; /* MB/s, per rep */
    double msgs, off_node, late, bad, elapsed_ms, senders;
    int reps;
} result_t;

/* @reps windows of @p with @gp; the sums over the ranks on every rank. */
static void measure(enum pattern p, const gen_params_t *gp, uint64_t *stream, result_t *res)
{
    double m[M_COUNT], *all = NULL, sums[M_COUNT + 2] = {0};
    int reps = g.reps > 8 ? 8 : g.reps;

    memset(res, 0, sizeof(*res));
    res->reps = reps;
    if (g.rank == 0)
        all = alloc_or_die((size_t)g.ranks * M_COUNT * sizeof(double));
    for (int k = 0; k < reps; k++) {
        traffic_window(p, gp, ++*stream, m);
        gather(m, M_COUNT, all);
        if (g.rank == 0) {
            double elapsed = 0.0, recv = 0.0, sent = 0.0;

            memset(sums, 0, sizeof(sums));
            for (int r = 0; r < g.ranks; r++) {
                const double *x = all + (size_t)r * M_COUNT;

                recv += x[M_RECV_BYTES];
                sent += x[M_SENT_BYTES];
                elapsed = x[M_ELAPSED_NS] > elapsed ? x[M_ELAPSED_NS] : elapsed;
                sums[M_SENT_MSGS] += x[M_SENT_MSGS];
                sums[M_OFF_NODE_BYTES] += x[M_OFF_NODE_BYTES];
                sums[M_LATE_MSGS] += x[M_LATE_MSGS];
                sums[M_BAD] += x[M_BAD];
                sums[M_COUNT] += x[M_SENT_MSGS] > 0.0;
            }
            res->accepted[k] = elapsed > 0.0 ? recv / elapsed * 1e3 : 0.0;
            res->offered[k] = sent / (g.window_ms * 1e6) * 1e3;
            res->msgs += sums[M_SENT_MSGS];
            res->off_node += sent > 0.0 ? sums[M_OFF_NODE_BYTES] / sent : 0.0;
            res->late += sums[M_LATE_MSGS];
            res->bad += sums[M_BAD];
            res->elapsed_ms += elapsed * 1e-6;
            res->senders = sums[M_COUNT];
        }
    }
    if (g.rank == 0) {
        res->msgs /= reps;
        res->off_node /= reps;
        res->late /= reps;
        res->elapsed_ms /= reps;
        free(all);
    }
}

static double median_of(double *v, int n)
{
    pb_bench_stats_t st;
    double copy[8];

    memcpy(copy, v, (size_t)n * sizeof(double));
    pb_bench_stats_from_samples(copy, (unsigned)n, 1, &st);
    return st.median;
}

/* Record one point (rank 0). */
static void emit(pb_bench_out_t *out, const figure_kind_t *fk, const gen_params_t *gp,
                 const result_t *res, double load, double nominal)
{
    double acc[8];
    pb_bench_record_t rec = {
        .suite = "traffic",
        .test = fk->test,
        .library = g.b.library,
        .transport = g.b.transport,
        .placement = g.b.placement,
        .ranks = g.ranks,
        .nodes = g.b.nodes,
        .pairs = 1,
        .size = (size_t)gp->mean_size,
        .metric = "accepted_bandwidth",
        .unit = "MB/s",
        .probe_before = -1.0,
        .probe_after = -1.0,
    };

    memcpy(acc, res->accepted, sizeof(acc));
    pb_bench_stats_from_samples(acc, (unsigned)res->reps, 1, &rec.stats);
    pb_mpi_bench_record_identity(&rec, &g.b);
    pb_bench_record_add_str(&rec, "size_dist", dist_names[gp->size_dist]);
    pb_bench_record_add_str(&rec, "time_dist",
                            gp->mean_gap > 0.0 ? dist_names[gp->time_dist] : "none");
    pb_bench_record_add_str(&rec, "load", load > 0.0 ? "fraction" : "saturation");
    if (load > 0.0) {
        pb_bench_record_add_num(&rec, "load_fraction", load);
        pb_bench_record_add_num(&rec, "offered_nominal", nominal);
    }
    pb_bench_record_add_num(&rec, "offered", median_of((double *)res->offered, res->reps));
    pb_bench_record_add_num(&rec, "messages", res->msgs);
    pb_bench_record_add_num(&rec, "senders", res->senders);
    pb_bench_record_add_num(&rec, "off_node_share", res->off_node);
    pb_bench_record_add_num(&rec, "late_messages", res->late);
    pb_bench_record_add_num(&rec, "elapsed_ms", res->elapsed_ms);
    pb_bench_record_add_num(&rec, "window_ms", g.window_ms);
    pb_bench_record_add_num(&rec, "seed", (double)g.seed);
    pb_bench_record_add_bool(&rec, "checked", g.b.check);
    printf("%-17s %-4s %-4s %10s %12.1f %12.1f %9.0f %8.2f %9.1f\n", fk->test,
           fk->size_dist == D_UNIFORM ? "U" : "E",
           gp->mean_gap <= 0.0          ? "-"
           : gp->time_dist == D_UNIFORM ? "U"
                                        : "E",
           load > 0.0 ? "" : "saturation", median_of((double *)res->offered, res->reps),
           rec.stats.median, res->msgs, res->off_node, res->elapsed_ms);
    if (load > 0.0)
        printf("%-17s %-4s %-4s %10.2f   (nominal offered %.1f MB/s)\n", "", "", "", load, nominal);
    pb_bench_record_emit(out, &rec);
}

/* Pattern @p with sizes @size_dist: saturation, then each load with each
 * chosen gap distribution.  Returns the number of points whose check
 * failed (rank 0; 0 elsewhere). */
static int run_pattern(pb_bench_out_t *out, enum pattern p, enum dist size_dist, uint64_t *stream)
{
    gen_params_t gp = {size_dist, D_UNIFORM, g.mean_size, 0.0};
    figure_kind_t fk = {pattern_names[p], p, size_dist, D_UNIFORM};
    result_t res;
    double shared[2] = {0.0, 0.0}; /* saturation MB/s, senders */
    int failures = 0;

    measure(p, &gp, stream, &res);
    if (g.rank == 0) {
        shared[0] = median_of(res.accepted, res.reps);
        shared[1] = res.senders;
        if (res.bad > 0.0) {
            fprintf(stderr, "mpi_traffic: %s at saturation: %.0f message(s) failed their check\n",
                    fk.test, res.bad);
            failures++;
        } else {
            emit(out, &fk, &gp, &res, 0.0, 0.0);
        }
    }
    share(shared, 2);
    const double *loads = p == P_UNIFORM ? g.loads : g.perm_loads;
    unsigned nloads = p == P_UNIFORM ? g.nloads : g.nperm_loads;

    for (int t = 0; t < 2; t++) {
        /* the permutations: one gap distribution, the first chosen */
        if (!g.time_dist_given[t] || (p != P_UNIFORM && t == 1 && g.time_dist_given[0]))
            continue;
        fk.time_dist = gp.time_dist = (enum dist)t;
        for (unsigned k = 0; k < nloads && shared[0] > 0.0 && shared[1] > 0.0; k++) {
            double per_rank = loads[k] * shared[0] / shared[1]; /* MB/s */

            gp.mean_gap = g.mean_size / (per_rank * 1e6) * 1e9;
            measure(p, &gp, stream, &res);
            if (g.rank != 0)
                continue;
            if (res.bad > 0.0) {
                fprintf(stderr,
                        "mpi_traffic: %s at load %.2f: %.0f message(s) failed their check\n",
                        fk.test, loads[k], res.bad);
                failures++;
                continue;
            }
            emit(out, &fk, &gp, &res, loads[k], loads[k] * shared[0]);
        }
    }
    return failures;
}

static int run_all(void)
{
    pb_bench_out_t out = {0};
    uint64_t stream = 0;
    int status = 0;

    if (g.rank == 0) {
        if (pb_bench_out_open(&out, &g.opts) != 0)
            status = 2;
        else
            printf("# mpi_traffic: library %s, %s, ranks %d (%d on this host, %d CPUs), nodes %d, "
                   "transport %s, placement %s, path %s%s%s, seed %llu, mean size %.0f B, "
                   "window %.0f ms, %d rep(s), check %s\n",
                   g.b.library, g.b.version, g.ranks, g.b.host_ranks, g.b.cores, g.b.nodes,
                   g.b.transport, g.b.placement, g.b.path, g.b.path_how != NULL ? " " : "",
                   g.b.path_how != NULL ? g.b.path_how : "", (unsigned long long)g.seed,
                   g.mean_size, g.window_ms, g.reps, g.b.check ? "on" : "off");
    }
    status = max_over_ranks(status);
    if (status != 0)
        return status;
    for (int p = 0; p < NPATTERNS; p++) {
        if (!g.selected[p])
            continue;
        if (!perm_applies((enum pattern)p, g.ranks)) {
            if (g.rank == 0)
                printf("\n# traffic %s: n/a at %d ranks (not measured)\n", pattern_names[p],
                       g.ranks);
            continue;
        }
        if (g.rank == 0) {
            printf("\n# traffic %s (%s, %d ranks)", pattern_names[p], g.b.library, g.ranks);
            if (p != P_UNIFORM) {
                printf(": destinations");
                for (int r = 0; r < g.ranks; r++)
                    printf(" %d", perm_dest_raw((enum pattern)p, r, g.ranks));
            }
            printf("\n%-17s %-4s %-4s %10s %12s %12s %9s %8s %9s\n", "#test", "S", "T", "load",
                   "offered", "accepted", "messages", "off-node", "time[ms]");
            fflush(stdout);
        }
        for (int s = 0; s < 2; s++) {
            /* the permutations: one size distribution, the first chosen */
            if (!g.size_dist_given[s] || (p != P_UNIFORM && s == 1 && g.size_dist_given[0]))
                continue;
            if (run_pattern(&out, (enum pattern)p, (enum dist)s, &stream) != 0)
                status = 1;
        }
    }
    if (g.rank == 0)
        pb_bench_out_close(&out);
    return max_over_ranks(status);
}

/* ---- without MPI: the tables and the generator -------------------------------- */

/* --print-permutations LIST: every pattern's destination table at each
 * rank count of LIST ("2,3,4,8"; or "A-B"). */
static int print_permutations(const char *list)
{
    char buf[256], *save = NULL;

    if (strlen(list) >= sizeof(buf))
        return 2;
    strcpy(buf, list);
    printf("# mpi_traffic permutations: pattern ranks destination of rank 0, 1, ... (itself: "
           "sends nothing; n/a: not applicable)\n");
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long lo = strtol(tok, &end, 10), hi = lo;

        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        if (*end != '\0' || lo < 1 || hi < lo || hi > 4096) {
            fprintf(stderr, "mpi_traffic: bad --print-permutations '%s' (want e.g. 2,3,4-16)\n",
                    list);
            return 2;
        }
        for (long ranks = lo; ranks <= hi; ranks++)
            for (int p = 1; p < NPATTERNS; p++) {
                printf("%s %ld", pattern_names[p], ranks);
                if (!perm_applies((enum pattern)p, (int)ranks))
                    printf(" n/a");
                else
                    for (int r = 0; r < ranks; r++)
                        printf(" %d", perm_dest_raw((enum pattern)p, r, (int)ranks));
                printf("\n");
            }
    }
    return 0;
}

/* --print-samples N: the first N draws of rank --sample-rank of
 * --sample-ranks ranks ("dest size gap_ns"), with the mean gap
 * --sample-gap-ns. */
static int print_samples(long n, int rank, int ranks, double gap_ns)
{
    gen_params_t gp = {g.size_dist_given[0] ? D_UNIFORM : D_EXPONENTIAL,
                       g.time_dist_given[0] ? D_UNIFORM : D_EXPONENTIAL, g.mean_size, gap_ns};
    rng_t rng;

    if (rank < 0 || ranks < 2 || rank >= ranks || n < 1 || !(gap_ns > 0.0)) {
        fprintf(stderr, "mpi_traffic: --print-samples needs N >= 1, --sample-ranks >= 2, "
                        "0 <= --sample-rank < ranks, --sample-gap-ns > 0\n");
        return 2;
    }
    printf("# mpi_traffic samples: seed %llu, rank %d of %d, sizes %s mean %.0f, gaps %s mean "
           "%.1f ns: dest size gap_ns\n",
           (unsigned long long)g.seed, rank, ranks, dist_names[gp.size_dist], gp.mean_size,
           dist_names[gp.time_dist], gap_ns);
    rng_seed(&rng, g.seed, rank);
    for (long k = 0; k < n; k++) {
        draw_t d = draw_message(&rng, &gp, rank, ranks, -1);

        printf("%d %zu %.6f\n", d.dest, d.size, d.gap_ns);
    }
    return 0;
}

/* ---- options and main ------------------------------------------------------------ */

static const char what[] =
    "Uniform random and permutation traffic of an MPI library (suite traffic; seed 000's\n"
    "Figs. 14 and 15): every rank sends messages of random size (uniform or exponential)\n"
    "at random gaps (uniform or exponential) to a uniformly random other rank, or to the\n"
    "one rank a permutation gives; accepted bandwidth against offered.  Rank 0 reports.\n"
    "\n"
    "Options of this program (before the common ones):\n"
    "  --library NAME, --transport NAME, --placement NAME, --nodes N, --path NAME,\n"
    "  --path-how TEXT, --round N   what the records describe (as mpi_coll)\n"
    "  --tests a,b        uniform and the permutations baseline_single, baseline_multi,\n"
    "                     bit_reversal, butterfly_single, butterfly_multi, complement,\n"
    "                     cube_single, cube_multi, matrix_transpose, neighbor,\n"
    "                     perfect_shuffle (default: all)\n"
    "  --size-dist LIST   message sizes: uniform,exponential (default both; the\n"
    "                     permutations take the first)\n"
    "  --time-dist LIST   gaps between messages: uniform,exponential (default both; the\n"
    "                     permutations take the first)\n"
    "  --mean-size N      mean message size in bytes (default 8192)\n"
    "  --loads a,b        offered loads as fractions of the saturation accepted bandwidth\n"
    "                     (default 0.2,...,1.5; quick 0.5,1)\n"
    "  --perm-loads LIST  the same for the permutations, or none: saturation only\n"
    "                     (default 0.5,1; quick none)\n"
    "  --window-ms N      time a sender generates messages (default 100, quick 30)\n"
    "  --reps N           windows per point, median taken (default 3, quick 1; at most 8)\n"
    "  --seed N           the generators' seed (default 1)\n"
    "  --no-check         do not check the messages' headers and sources\n"
    "  --print-permutations LIST   print the destination tables for the rank counts\n"
    "                     LIST (e.g. 2-16) and exit, without MPI\n"
    "  --print-samples N  print N draws of the generator and exit, without MPI\n"
    "                     (--sample-rank R, --sample-ranks P, --sample-gap-ns T; the\n"
    "                     first of --size-dist and --time-dist)";

static int parse_double(const char *name, const char *val, double lo, double hi, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(val, &end);
    if (errno != 0 || *end != '\0' || !(v >= lo) || !(v <= hi)) {
        fprintf(stderr, "mpi_traffic: bad %s '%s' (want %g to %g)\n", name, val, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_dists(const char *name, const char *val, bool *given)
{
    char buf[64], *save = NULL;
    bool any = false;

    if (strlen(val) >= sizeof(buf))
        return -1;
    strcpy(buf, val);
    given[0] = given[1] = false;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "uniform") == 0)
            given[0] = any = true;
        else if (strcmp(tok, "exponential") == 0)
            given[1] = any = true;
        else
            any = false, tok = NULL;
        if (tok == NULL)
            break;
    }
    if (!any) {
        fprintf(stderr, "mpi_traffic: bad %s '%s' (uniform, exponential or both)\n", name, val);
        return -1;
    }
    return 0;
}

/* A list of loads @val ("0.5,1", or "none": no loads) into @loads (16 at
 * most), their number into *@n.  Returns 0, or -1 with a message. */
static int parse_loads(const char *name, const char *val, double *loads, unsigned *n)
{
    char buf[256], *save = NULL;

    *n = 0;
    if (strcmp(val, "none") == 0)
        return 0;
    if (strlen(val) >= sizeof(buf)) {
        fprintf(stderr, "mpi_traffic: %s too long\n", name);
        return -1;
    }
    strcpy(buf, val);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n >= 16) {
            fprintf(stderr, "mpi_traffic: %s: at most 16 loads\n", name);
            return -1;
        }
        if (parse_double(name, tok, 0.01, 10.0, &loads[*n]) != 0)
            return -1;
        ++*n;
    }
    if (*n == 0) {
        fprintf(stderr, "mpi_traffic: %s '%s': no load\n", name, val);
        return -1;
    }
    return 0;
}

typedef struct {
    const char *print_perms;
    long print_samples;
    double sample_rank, sample_ranks, sample_gap;
} extra_opts_t;

/* Take this program's own options out of @argv (in place); the rest go to
 * the engine's parser.  Returns the new argc, or -1 on a bad option. */
static int own_options(int argc, char **argv, extra_opts_t *x)
{
    static const char *const with_arg[] = {
        "--tests",         "--size-dist",   "--time-dist",
        "--mean-size",     "--loads",       "--window-ms",
        "--reps",          "--seed",        "--print-permutations",
        "--print-samples", "--sample-rank", "--sample-ranks",
        "--sample-gap-ns", "--perm-loads"};
    int n = 1;

    for (int p = 0; p < NPATTERNS; p++)
        g.selected[p] = true;
    g.size_dist_given[0] = g.size_dist_given[1] = true;
    g.time_dist_given[0] = g.time_dist_given[1] = true;
    for (int i = 1; i < argc; i++) {
        const char *val = NULL;
        int found = pb_mpi_bench_option(&g.b, argc, argv, &i);
        unsigned k = 0;
        double v;

        if (found < 0)
            return -1;
        if (found > 0)
            continue;
        found =
            pb_mpi_bench_option_in("mpi_traffic", with_arg, sizeof(with_arg) / sizeof(with_arg[0]),
                                   argc, argv, &i, &k, &val);
        if (found < 0)
            return -1;
        if (found == 0) {
            argv[n++] = argv[i];
            continue;
        }
        switch (k) {
        case 0:
            if (pb_mpi_bench_select("mpi_traffic", val, pattern_names, NPATTERNS, g.selected) != 0)
                return -1;
            break;
        case 1:
            if (parse_dists("--size-dist", val, g.size_dist_given) != 0)
                return -1;
            break;
        case 2:
            if (parse_dists("--time-dist", val, g.time_dist_given) != 0)
                return -1;
            break;
        case 3:
            if (parse_double("--mean-size", val, 16, 1 << 20, &g.mean_size) != 0)
                return -1;
            g.mean_size = (double)(long)g.mean_size;
            break;
        case 4:
            if (parse_loads("--loads", val, g.loads, &g.nloads) != 0)
                return -1;
            g.loads_given = true;
            break;
        case 5:
            if (parse_double("--window-ms", val, 1.0, 60000.0, &g.window_ms) != 0)
                return -1;
            g.window_given = true;
            break;
        case 6:
            if (parse_double("--reps", val, 1, 8, &v) != 0)
                return -1;
            g.reps = (int)v;
            break;
        case 7:
            if (parse_double("--seed", val, 0, 9007199254740992.0, &v) != 0)
                return -1;
            g.seed = (uint64_t)v;
            break;
        case 8: x->print_perms = val; break;
        case 9:
            if (parse_double("--print-samples", val, 1, 10000000, &v) != 0)
                return -1;
            x->print_samples = (long)v;
            break;
        case 10:
            if (parse_double("--sample-rank", val, 0, 4095, &x->sample_rank) != 0)
                return -1;
            break;
        case 11:
            if (parse_double("--sample-ranks", val, 2, 4096, &x->sample_ranks) != 0)
                return -1;
            break;
        case 12:
            if (parse_double("--sample-gap-ns", val, 1e-3, 1e12, &x->sample_gap) != 0)
                return -1;
            break;
        default:
            if (parse_loads("--perm-loads", val, g.perm_loads, &g.nperm_loads) != 0)
                return -1;
            g.perm_loads_given = true;
            break;
        }
    }
    argv[n] = NULL;
    return n;
}

int main(int argc, char **argv)
{
    char **args = calloc((size_t)argc + 1, sizeof(*args));
    extra_opts_t x = {NULL, 0, 0.0, 2.0, 1000.0};
    int nargs, status;

    if (args == NULL)
        return 1;
    memcpy(args, argv, (size_t)argc * sizeof(*args));
    nargs = own_options(argc, args, &x);
    if (nargs < 0) {
        free(args);
        return 2;
    }
    if (x.print_perms != NULL || x.print_samples > 0) {
        status = x.print_perms != NULL ? print_permutations(x.print_perms) : 0;
        if (status == 0 && x.print_samples > 0)
            status = print_samples(x.print_samples, (int)x.sample_rank, (int)x.sample_ranks,
                                   x.sample_gap);
        free(args);
        return status;
    }
    switch (pb_bench_opts_parse(&g.opts, nargs, args, what,
                                "mpiexec -n 4 mpi_traffic --quick --json traffic.jsonl")) {
    case 1: free(args); return 0;
    case -1: free(args); return 2;
    default: break;
    }
    if (!g.window_given)
        g.window_ms = g.opts.quick ? WINDOW_MS_QUICK : WINDOW_MS_DEFAULT;
    if (g.reps == 0)
        g.reps = g.opts.quick ? REPS_QUICK : REPS_DEFAULT;
    if (!g.loads_given) {
        const double *l = g.opts.quick ? loads_quick : loads_full;
        unsigned n = g.opts.quick ? sizeof(loads_quick) / sizeof(loads_quick[0])
                                  : sizeof(loads_full) / sizeof(loads_full[0]);

        memcpy(g.loads, l, n * sizeof(double));
        g.nloads = n;
    }
    if (!g.perm_loads_given) {
        /* quick: saturation only; else two loads */
        g.nperm_loads = g.opts.quick ? 0 : sizeof(perm_loads_full) / sizeof(perm_loads_full[0]);
        memcpy(g.perm_loads, perm_loads_full, g.nperm_loads * sizeof(double));
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
    MPI_Comm_rank(g.comm, &g.rank);
    MPI_Comm_size(g.comm, &g.ranks);
    pb_mpi_bench_identity(&g.b);
    pb_mpi_bench_job_shape(&g.b, g.comm);
    {
        char name[MPI_MAX_PROCESSOR_NAME] = {0};
        int len = 0;

        MPI_Get_processor_name(name, &len);
        g.hosts = alloc_or_die((size_t)g.ranks * MPI_MAX_PROCESSOR_NAME);
        MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, g.hosts, MPI_MAX_PROCESSOR_NAME,
                      MPI_CHAR, g.comm);
    }
    status = run_all();
    if (g.rank == 0) {
        /* every record is written: a runner may end a job that then hangs
         * in MPI_Finalize */
        printf("%s %d\n", MPI_TRAFFIC_DONE, status);
        fflush(stdout);
    }
    free(g.hosts);
    MPI_Comm_free(&g.comm);
    MPI_Finalize();
    free(args);
    return status;
}
