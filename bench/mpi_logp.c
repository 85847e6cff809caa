/*
 * mpi_logp: LogP parameters of any MPI library (suite "logp").
 *
 * Written to the standard MPI C API only, so that every library's own mpicc
 * builds it (Postbox's postbox-cc, MPICH, Open MPI), with the bench engine
 * (engine.c) and mpi_common.c.  Rank 0 measures, rank 1 mirrors (other
 * ranks wait for the end).  Rank 0 drives: before every batch it sends the
 * mirror a command (what to do, the size, how many times), the mirror
 * answers "go" with a 0-byte message, and rank 0 starts its clock only
 * after that.  Rank 0 writes the records.
 *
 * Two methods, both on blocking MPI_Send / MPI_Recv of MPI_BYTE:
 *
 * plogp: the parameterized LogP of Kielmann, Bal and Verstoep (IPDPS 2000
 *   workshops), as their logp_mpi computes it.  For each size m:
 *   - rtt:  m bytes forward, a 0-byte reply; the round trip, timed by rank 0;
 *   - o_s:  in the same loop, the time of the MPI_Send call alone;
 *   - o_r:  0 bytes forward, m bytes back; rank 0 spins 1.2 RTT(m) (at least
 *           100 clock reads) so the message has surely arrived, then times
 *           MPI_Recv;
 *   - g_sat: the saturation method: `runs` messages of m bytes back to back,
 *           then a 0-byte reply; runs starts at 10 and doubles until the
 *           time per send changes by less than 1 % (1.5 % above 64 KiB, 8 %
 *           from maxruns/4 on), with at least 20 runs, the round trip less
 *           than eps/2 of the total and the total about twice the previous
 *           one (maxruns = 2560); g_sat is the time per send of the last
 *           step.  At size 0 always; at every size with --flood (the full
 *           profile), else only where --flood-sizes lists it.
 *   Rounds of 10 iterations (after a first round of 2, not kept, up to
 *   64 KiB) go on until the 95 % confidence interval of the mean of rtt and
 *   o_s (o_r) is within 2 eps of it, or --max-iters, or the time cap
 *   (--reps-cap-ms) per figure.  Every time is less the timer's own cost.
 *   g(m) = RTT(m) - RTT(0) + g(0) and L = RTT(0)/2 - g(0) are derived by
 *   the reader (python/postbox/logpfit.py).
 *
 * prtt: netgauge's LogGP pattern (Hoefler et al.).  PRTT(n, d, m): rank 0
 *   sends n messages of m bytes, spinning d between consecutive sends; the
 *   mirror receives all n, then replies with one message of m bytes; rank 0
 *   times the whole exchange.  For each size: PRTT(1, 0, m), PRTT(n, 0, m),
 *   and PRTT(n, d, m) with d = PRTT(1, 0, m); and o_r_server: the mirror,
 *   sent n messages back to back, spins d before each MPI_Recv and times
 *   the call.  n = 10 (--prtt-n); each PRTT --prtt-reps times (20, quick 5;
 *   at least 3 when the time cap ends it first).  The reader fits g and G to
 *   (PRTT(n,0,m) - PRTT(1,0,m)) / (n - 1) = g + (m - 1) G, takes
 *   o_s(m) = (PRTT(n,d,m) - PRTT(1,0,m)) / (n - 1) - d and L from PRTT(1,0,0).
 *
 * Records: suite "logp", test "plogp" (metrics rtt, o_s, o_r, g_sat) or
 * "prtt" (metrics prtt_1_0, prtt_n_0, prtt_n_d, o_r_server), unit "us";
 * median, min and max over the iterations, plus mean and conf_int (plogp),
 * runs, total_us, rtt_us, steps and saturated (g_sat), n and d_us (prtt).
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

#define MEASURER 0
#define MIRROR 1
#define TAG_CMD 401
#define TAG_DATA 402
#define TAG_GO 403
#define TAG_RESULT 404

#define SIZE_MAX_DEFAULT ((size_t)1 << 20)
#define SAMPLES_MAX 2048        /* iterations kept per figure */
#define ROUND_ITERS 10          /* iterations per round of a plogp figure */
#define WARMUP_ITERS 2          /* a first round, not kept, for sizes <= 64 KiB */
#define SAT_START_RUNS 10       /* the saturation method's first step */
#define SAT_MAX_RUNS (128 * 20) /* ... and its largest */
#define SAT_STEPS_MAX 16
#define PRTT_N_DEFAULT 10
#define PRTT_REPS_MAX 256
#define PRTT_REPS_MIN 3   /* repetitions of a PRTT figure whatever the time cap */
#define CONFIDENCE_Z 1.96 /* two-sided 95 % of the normal distribution */
#define EPS_DEFAULT 0.02
#define EPS_QUICK 0.05
#define MAX_ITERS_DEFAULT 1000
#define MAX_ITERS_QUICK 200
#define REPS_CAP_MS_DEFAULT 200.0
#define REPS_CAP_MS_QUICK 15.0
#define PRTT_REPS_DEFAULT 20
#define PRTT_REPS_QUICK 5
#define MPI_LOGP_DONE "# mpi_logp: done, status" /* rank 0's last line */

enum cmd_kind {
    CMD_DONE,
    CMD_RTT,     /* count x: receive size, reply 0 */
    CMD_OR,      /* count x: receive 0, reply size */
    CMD_SAT,     /* receive count x size, then reply 0 */
    CMD_PRTT,    /* count x: receive n x size, reply size */
    CMD_PRTT_OR, /* count x: spin delay, time the receive, n x; reply size */
};

static const size_t quick_sizes[] = {0, 16, 256, 4096, 65536};
#define NQUICK (sizeof(quick_sizes) / sizeof(quick_sizes[0]))

static struct {
    pb_bench_opts_t opts;
    pb_mpi_bench_t b;
    int rank, ranks;
    MPI_Comm pair;
    char *buf;
    size_t buf_bytes;
    double clock_ns; /* one timer read */
    double eps;
    unsigned max_iters;
    unsigned prtt_n;
    unsigned prtt_reps;
    bool flood;
    bool cap_given, eps_given, iters_given, reps_given;
    bool do_plogp, do_prtt;
    size_t flood_sizes[PB_BENCH_SIZES_MAX];
    unsigned nflood;
} g = {.b = PB_MPI_BENCH_INIT("mpi_logp"), .prtt_n = PRTT_N_DEFAULT};

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "mpi_logp: rank %d: %s\n", g.rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Spin for @ns nanoseconds without calling MPI. */
static void spin_ns(double ns)
{
    uint64_t end = pb_bench_time_now() + (uint64_t)(ns > 0.0 ? ns : 0.0);

    while (pb_bench_time_now() < end)
        ;
}

/* A timed span less one timer read, never below a nanosecond. */
static double span(uint64_t t0, uint64_t t1)
{
    double ns = (double)(t1 - t0) - g.clock_ns;

    return ns < 1.0 ? 1.0 : ns;
}

static void send_bytes(size_t size, int peer)
{
    MPI_Send(g.buf, (int)size, MPI_BYTE, peer, TAG_DATA, g.pair);
}

static void recv_bytes(size_t size, int peer)
{
    MPI_Recv(g.buf, (int)size, MPI_BYTE, peer, TAG_DATA, g.pair, MPI_STATUS_IGNORE);
}

/* ---- the mirror ---------------------------------------------------------- */

static void mirror(void)
{
    for (;;) {
        int64_t c[5]; /* kind, size, count, n, delay_ns */
        size_t size;

        MPI_Recv(c, 5, MPI_INT64_T, MEASURER, TAG_CMD, g.pair, MPI_STATUS_IGNORE);
        if (c[0] == CMD_DONE)
            return;
        size = (size_t)c[1];
        MPI_Send(NULL, 0, MPI_BYTE, MEASURER, TAG_GO, g.pair);
        switch (c[0]) {
        case CMD_RTT:
            for (int64_t i = 0; i < c[2]; i++) {
                recv_bytes(size, MEASURER);
                send_bytes(0, MEASURER);
            }
            break;
        case CMD_OR:
            for (int64_t i = 0; i < c[2]; i++) {
                recv_bytes(0, MEASURER);
                send_bytes(size, MEASURER);
            }
            break;
        case CMD_SAT:
            for (int64_t i = 0; i < c[2]; i++)
                recv_bytes(size, MEASURER);
            send_bytes(0, MEASURER);
            break;
        case CMD_PRTT:
            for (int64_t r = 0; r < c[2]; r++) {
                for (int64_t k = 0; k < c[3]; k++)
                    recv_bytes(size, MEASURER);
                send_bytes(size, MEASURER);
            }
            break;
        case CMD_PRTT_OR: {
            double mean[PRTT_REPS_MAX];

            for (int64_t r = 0; r < c[2] && r < PRTT_REPS_MAX; r++) {
                double sum = 0.0;

                for (int64_t k = 0; k < c[3]; k++) {
                    uint64_t t0;

                    spin_ns((double)c[4]);
                    t0 = pb_bench_time_now();
                    recv_bytes(size, MEASURER);
                    sum += span(t0, pb_bench_time_now());
                }
                mean[r] = sum / (double)c[3];
                send_bytes(size, MEASURER);
            }
            MPI_Send(mean, (int)c[2], MPI_DOUBLE, MEASURER, TAG_RESULT, g.pair);
            break;
        }
        default: die("unknown command from rank 0");
        }
    }
}

/* Rank 0: tell the mirror what comes next and wait for its "go". */
static void command(enum cmd_kind kind, size_t size, int64_t count, int64_t n, double delay_ns)
{
    int64_t c[5] = {kind, (int64_t)size, count, n, (int64_t)delay_ns};

    MPI_Send(c, 5, MPI_INT64_T, MIRROR, TAG_CMD, g.pair);
    if (kind != CMD_DONE)
        MPI_Recv(NULL, 0, MPI_BYTE, MIRROR, TAG_GO, g.pair, MPI_STATUS_IGNORE);
}

/* ---- statistics ---------------------------------------------------------- */

typedef struct {
    double v[SAMPLES_MAX];
    unsigned n;
    double sum, sum2;
} series_t;

static void series_add(series_t *s, double x)
{
    if (s->n < SAMPLES_MAX)
        s->v[s->n++] = x;
    s->sum += x;
    s->sum2 += x * x;
}

static double series_mean(const series_t *s)
{
    return s->n > 0 ? s->sum / s->n : 0.0;
}

/* Half the width of the 95 % confidence interval of the mean. */
static double series_conf_int(const series_t *s)
{
    double mean = series_mean(s), var;

    if (s->n < 2)
        return INFINITY;
    var = (s->sum2 - s->n * mean * mean) / (s->n - 1);
    return CONFIDENCE_Z * sqrt(var > 0.0 ? var : 0.0) / sqrt((double)s->n);
}

static bool series_converged(const series_t *s)
{
    double mean = series_mean(s);

    return mean > 0.0 && series_conf_int(s) / mean <= 2.0 * g.eps;
}

/* ---- records ------------------------------------------------------------- */

static pb_bench_record_t record_begin(const char *test, const char *metric, size_t size)
{
    pb_bench_record_t rec = {
        .suite = "logp",
        .test = test,
        .library = g.b.library,
        .transport = g.b.transport,
        .placement = g.b.placement,
        .ranks = g.ranks,
        .nodes = g.b.nodes,
        .pairs = 1,
        .size = size,
        .metric = metric,
        .unit = "us",
        .probe_before = -1.0,
        .probe_after = -1.0,
    };

    pb_mpi_bench_record_identity(&rec, &g.b);
    return rec;
}

/* Median, min and max of @s in us into @rec (the series is reordered). */
static void record_series(pb_bench_record_t *rec, series_t *s)
{
    double mean = series_mean(s), ci = series_conf_int(s);

    pb_bench_stats_from_samples(s->v, s->n, 1, &rec->stats);
    pb_bench_stats_scale(&rec->stats, 1e-3);
    pb_bench_record_add_num(rec, "mean", mean * 1e-3);
    if (isfinite(ci))
        pb_bench_record_add_num(rec, "conf_int", ci * 1e-3);
}

/* ---- plogp ---------------------------------------------------------------- */

/* Whether the time cap of one figure, started at @t0, is spent. */
static bool capped(uint64_t t0)
{
    return (double)(pb_bench_time_now() - t0) > g.opts.reps_cap_ms * 1e6;
}

/* RTT(size) and o_s(size) in ns. */
static void measure_rtt(size_t size, series_t *rtt, series_t *os)
{
    uint64_t start = pb_bench_time_now();
    bool warm = size > 65536;

    for (;;) {
        unsigned iters = warm ? ROUND_ITERS : WARMUP_ITERS;

        command(CMD_RTT, size, iters, 0, 0.0);
        for (unsigned i = 0; i < iters; i++) {
            uint64_t t0 = pb_bench_time_now(), t1, t2;

            send_bytes(size, MIRROR);
            t1 = pb_bench_time_now();
            recv_bytes(0, MIRROR);
            t2 = pb_bench_time_now();
            if (warm) {
                series_add(rtt, span(t0, t2));
                series_add(os, span(t0, t1));
            }
        }
        if (warm && rtt->n >= ROUND_ITERS &&
            ((series_converged(rtt) && series_converged(os)) || rtt->n >= g.max_iters ||
             capped(start)))
            return;
        warm = true;
    }
}

/* o_r(size) in ns, the wait before each receive 1.2 RTT(size). */
static void measure_or(size_t size, double rtt_ns, series_t *or_)
{
    uint64_t start = pb_bench_time_now();
    double delta = 1.2 * rtt_ns;
    bool warm = size > 65536;

    if (delta < 100.0 * g.clock_ns)
        delta = 100.0 * g.clock_ns;
    for (;;) {
        unsigned iters = warm ? ROUND_ITERS : WARMUP_ITERS;

        command(CMD_OR, size, iters, 0, 0.0);
        for (unsigned i = 0; i < iters; i++) {
            uint64_t t0;

            send_bytes(0, MIRROR);
            spin_ns(delta);
            t0 = pb_bench_time_now();
            recv_bytes(size, MIRROR);
            if (warm)
                series_add(or_, span(t0, pb_bench_time_now()));
        }
        if (warm && or_->n >= ROUND_ITERS &&
            (series_converged(or_) || or_->n >= g.max_iters || capped(start)))
            return;
        warm = true;
    }
}

typedef struct {
    unsigned runs;
    double avg_ns;   /* time per send */
    double total_ns; /* first send to the reply */
} sat_step_t;

/*
 * The saturation method's stopping rule (Kielmann et al.'s logp_mpi): after
 * a step of @runs sends at @avg_ns each, @total_ns in all, following one at
 * @prev_avg_ns and @prev_total_ns, with the round trip @rtt_ns at this size.
 */
static bool saturated(size_t size, unsigned runs, double avg_ns, double total_ns,
                      double prev_avg_ns, double prev_total_ns, double rtt_ns)
{
    double change = 100.0 * fabs(avg_ns - prev_avg_ns) / prev_avg_ns;
    double most = runs >= SAT_MAX_RUNS / 4 ? 8.0 : (size > 65536 ? 1.5 : 1.0);

    if (runs >= SAT_MAX_RUNS)
        return true;
    return runs >= 2 * SAT_START_RUNS && change < most && rtt_ns / total_ns < g.eps / 2.0 &&
           (2.0 * prev_total_ns - rtt_ns / 2.0) / total_ns < 1.0 + g.eps;
}

/* g(size) by saturation; @steps receives the steps (at most SAT_STEPS_MAX);
 * @return their number; *@done_p false when the time cap cut it short. */
static unsigned measure_sat(size_t size, double rtt_ns, sat_step_t *steps, bool *done_p)
{
    uint64_t start = pb_bench_time_now();
    unsigned runs = SAT_START_RUNS, n = 0;

    *done_p = false;
    for (;;) {
        uint64_t t0, t1, t2;

        command(CMD_SAT, size, runs, 0, 0.0);
        t0 = pb_bench_time_now();
        for (unsigned i = 0; i < runs; i++)
            send_bytes(size, MIRROR);
        t1 = pb_bench_time_now();
        recv_bytes(0, MIRROR);
        t2 = pb_bench_time_now();
        steps[n] = (sat_step_t){runs, span(t0, t1) / runs, span(t0, t2)};
        if (n > 0 && saturated(size, runs, steps[n].avg_ns, steps[n].total_ns, steps[n - 1].avg_ns,
                               steps[n - 1].total_ns, rtt_ns)) {
            *done_p = true;
            return n + 1;
        }
        n++;
        /* the time cap counts double here: the first steps are short */
        if (n == SAT_STEPS_MAX ||
            (double)(pb_bench_time_now() - start) > 2.0 * g.opts.reps_cap_ms * 1e6)
            return n;
        runs *= 2;
    }
}

static bool flood_at(size_t size)
{
    if (size == 0 || g.flood)
        return true;
    for (unsigned i = 0; i < g.nflood; i++)
        if (g.flood_sizes[i] == size)
            return true;
    return false;
}

static void plogp_size(pb_bench_out_t *out, size_t size)
{
    static series_t rtt, os, or_;
    sat_step_t steps[SAT_STEPS_MAX];
    unsigned nsteps = 0;
    bool sat_done = false;
    double rtt_mean;

    memset(&rtt, 0, sizeof(rtt));
    memset(&os, 0, sizeof(os));
    memset(&or_, 0, sizeof(or_));
    measure_rtt(size, &rtt, &os);
    rtt_mean = series_mean(&rtt);
    measure_or(size, rtt_mean, &or_);
    if (flood_at(size))
        nsteps = measure_sat(size, rtt_mean, steps, &sat_done);

    pb_bench_record_t r_rtt = record_begin("plogp", "rtt", size);
    pb_bench_record_t r_os = record_begin("plogp", "o_s", size);
    pb_bench_record_t r_or = record_begin("plogp", "o_r", size);

    record_series(&r_rtt, &rtt);
    record_series(&r_os, &os);
    record_series(&r_or, &or_);
    printf("%10zu %7u %11.3f %11.3f %11.3f %11.3f", size, r_rtt.stats.reps, rtt_mean * 1e-3,
           r_rtt.stats.median, r_os.stats.median, r_or.stats.median);
    pb_bench_record_emit(out, &r_rtt);
    pb_bench_record_emit(out, &r_os);
    pb_bench_record_emit(out, &r_or);
    if (nsteps > 0) {
        pb_bench_record_t r_g = record_begin("plogp", "g_sat", size);
        const sat_step_t *last = &steps[nsteps - 1];
        char text[SAT_STEPS_MAX * 48], *at = text;

        text[0] = '\0';
        for (unsigned i = 0; i < nsteps; i++)
            at += snprintf(at, sizeof(text) - (size_t)(at - text), "%s%u:%.4f:%.4f", i ? "," : "",
                           steps[i].runs, steps[i].avg_ns * 1e-3, steps[i].total_ns * 1e-3);
        r_g.stats.median = r_g.stats.min = r_g.stats.max = last->avg_ns * 1e-3;
        r_g.stats.reps = 1;
        r_g.stats.iters = last->runs;
        pb_bench_record_add_num(&r_g, "runs", last->runs);
        pb_bench_record_add_num(&r_g, "total_us", last->total_ns * 1e-3);
        pb_bench_record_add_num(&r_g, "rtt_us", rtt_mean * 1e-3);
        pb_bench_record_add_num(&r_g, "eps", g.eps);
        pb_bench_record_add_str(&r_g, "steps", text);
        pb_bench_record_add_bool(&r_g, "saturated", sat_done);
        printf(" %11.3f%s\n", last->avg_ns * 1e-3, sat_done ? "" : " (not saturated)");
        pb_bench_record_emit(out, &r_g);
    } else {
        printf(" %11s\n", "-");
    }
    fflush(stdout);
}

/* ---- prtt ------------------------------------------------------------------ */

/* Whether a PRTT figure started at @t0 has its @reps repetitions: all of
 * g.prtt_reps, or PRTT_REPS_MIN once the time cap is spent. */
static bool prtt_enough(unsigned reps, uint64_t t0)
{
    return reps >= g.prtt_reps || (reps >= PRTT_REPS_MIN && capped(t0));
}

/* PRTT(@n, @delay_ns, @size), repeated (prtt_enough), into @s (ns); one
 * command per repetition, so the time cap can end the figure. */
static void measure_prtt(size_t size, unsigned n, double delay_ns, series_t *s)
{
    uint64_t start = pb_bench_time_now();

    for (unsigned r = 0; !prtt_enough(r, start); r++) {
        uint64_t t0;

        command(CMD_PRTT, size, 1, n, 0.0);
        t0 = pb_bench_time_now();
        for (unsigned k = 0; k < n; k++) {
            send_bytes(size, MIRROR);
            if (delay_ns > 0.0 && k + 1 < n)
                spin_ns(delay_ns);
        }
        recv_bytes(size, MIRROR);
        series_add(s, span(t0, pb_bench_time_now()));
    }
}

/* The mirror's receive time after waiting @delay_ns, @n messages sent back
 * to back, repeated (prtt_enough): the mirror's mean per repetition into
 * @s (ns). */
static void measure_prtt_or(size_t size, unsigned n, double delay_ns, series_t *s)
{
    uint64_t start = pb_bench_time_now();

    for (unsigned r = 0; !prtt_enough(r, start); r++) {
        double mean;

        command(CMD_PRTT_OR, size, 1, n, delay_ns);
        for (unsigned k = 0; k < n; k++)
            send_bytes(size, MIRROR);
        recv_bytes(size, MIRROR);
        MPI_Recv(&mean, 1, MPI_DOUBLE, MIRROR, TAG_RESULT, g.pair, MPI_STATUS_IGNORE);
        series_add(s, mean);
    }
}

static void prtt_size(pb_bench_out_t *out, size_t size)
{
    static series_t one, burst, spaced, recv;
    const char *metrics[4] = {"prtt_1_0", "prtt_n_0", "prtt_n_d", "o_r_server"};
    series_t *all[4] = {&one, &burst, &spaced, &recv};
    double d;

    for (unsigned i = 0; i < 4; i++)
        memset(all[i], 0, sizeof(series_t));
    command(CMD_PRTT, size, 1, 1, 0.0); /* warm-up */
    send_bytes(size, MIRROR);
    recv_bytes(size, MIRROR);
    measure_prtt(size, 1, 0.0, &one);
    measure_prtt(size, g.prtt_n, 0.0, &burst);
    /* d = PRTT(1, 0, size): its median, like the record */
    {
        pb_bench_stats_t st;
        double copy[SAMPLES_MAX];

        memcpy(copy, one.v, one.n * sizeof(double));
        pb_bench_stats_from_samples(copy, one.n, 1, &st);
        d = st.median;
    }
    measure_prtt(size, g.prtt_n, d, &spaced);
    measure_prtt_or(size, g.prtt_n, d, &recv);

    printf("%10zu %4u %11.3f", size, g.prtt_n, d * 1e-3);
    for (unsigned i = 0; i < 4; i++) {
        pb_bench_record_t rec = record_begin("prtt", metrics[i], size);

        pb_bench_stats_from_samples(all[i]->v, all[i]->n, 1, &rec.stats);
        pb_bench_stats_scale(&rec.stats, 1e-3);
        pb_bench_record_add_num(&rec, "n", i == 0 ? 1 : g.prtt_n);
        pb_bench_record_add_num(&rec, "d_us", i >= 2 ? d * 1e-3 : 0.0);
        printf(" %11.3f", rec.stats.median);
        pb_bench_record_emit(out, &rec);
    }
    printf("\n");
    fflush(stdout);
}

/* ---- the run ------------------------------------------------------------------ */

/* The sizes: --sizes, the quick list, or 0 and the powers of two up to
 * --max-size (1 MiB). */
static unsigned run_sizes(size_t *sizes)
{
    unsigned n = 0;
    size_t top = g.opts.max_size ? g.opts.max_size : SIZE_MAX_DEFAULT;

    if (g.opts.nsizes > 0) {
        for (unsigned i = 0; i < g.opts.nsizes; i++)
            sizes[n++] = g.opts.sizes[i];
        return n;
    }
    if (g.opts.quick) {
        for (unsigned i = 0; i < NQUICK; i++)
            if (quick_sizes[i] <= top)
                sizes[n++] = quick_sizes[i];
        return n;
    }
    sizes[n++] = 0;
    for (size_t s = 1; s <= top && n < PB_BENCH_SIZES_MAX; s *= 2)
        sizes[n++] = s;
    return n;
}

static int run_measurer(void)
{
    pb_bench_out_t out = {0};
    size_t sizes[PB_BENCH_SIZES_MAX];
    unsigned n = run_sizes(sizes);

    if (pb_bench_out_open(&out, &g.opts) != 0) {
        command(CMD_DONE, 0, 0, 0, 0.0);
        return 2;
    }
    printf("# mpi_logp: library %s, %s, ranks %d (%d on this host, %d CPUs), nodes %d, "
           "transport %s, placement %s, path %s%s%s, eps %g, timer %.1f ns\n",
           g.b.library, g.b.version, g.ranks, g.b.host_ranks, g.b.cores, g.b.nodes, g.b.transport,
           g.b.placement, g.b.path, g.b.path_how != NULL ? " " : "",
           g.b.path_how != NULL ? g.b.path_how : "", g.eps, g.clock_ns);
    if (g.do_plogp) {
        printf("\n# logp plogp (%s): parameterized LogP (Kielmann et al.); times in us; g_sat "
               "by saturation\n",
               g.b.library);
        printf("%10s %7s %11s %11s %11s %11s %11s\n", "#bytes", "#iters", "rtt_mean", "rtt", "o_s",
               "o_r", "g_sat");
        for (unsigned i = 0; i < n; i++)
            plogp_size(&out, sizes[i]);
    }
    if (g.do_prtt) {
        printf("\n# logp prtt (%s): netgauge's PRTT(n, d, m), medians of %u (at least %d "
               "within the time cap) in us; d = PRTT(1,0,m)\n",
               g.b.library, g.prtt_reps, PRTT_REPS_MIN);
        printf("%10s %4s %11s %11s %11s %11s %11s\n", "#bytes", "n", "d", "prtt_1_0", "prtt_n_0",
               "prtt_n_d", "o_r_server");
        for (unsigned i = 0; i < n; i++)
            prtt_size(&out, sizes[i]);
    }
    command(CMD_DONE, 0, 0, 0, 0.0);
    pb_bench_out_close(&out);
    return 0;
}

static int run_all(void)
{
    int status = 0, color = g.rank < 2 ? 0 : MPI_UNDEFINED;
    size_t sizes[PB_BENCH_SIZES_MAX];
    unsigned n = run_sizes(sizes);

    MPI_Comm_split(MPI_COMM_WORLD, color, g.rank, &g.pair);
    if (g.pair == MPI_COMM_NULL)
        return 0; /* ranks beyond the two wait for the end */
    pb_mpi_bench_job_shape(&g.b, g.pair);
    g.buf_bytes = 1;
    for (unsigned i = 0; i < n; i++)
        g.buf_bytes = sizes[i] > g.buf_bytes ? sizes[i] : g.buf_bytes;
    if (posix_memalign((void **)&g.buf, 4096, g.buf_bytes) != 0)
        die("out of memory");
    memset(g.buf, 1, g.buf_bytes);
    g.clock_ns = pb_bench_time_overhead();
    if (g.rank == MEASURER)
        status = run_measurer();
    else
        mirror();
    free(g.buf);
    MPI_Comm_free(&g.pair);
    return status;
}

/* ---- options and main ------------------------------------------------------- */

static const char what[] =
    "LogP bench of an MPI library (suite logp): the parameterized LogP of Kielmann et al.\n"
    "(RTT, o_s, o_r per size, g by saturation) and netgauge's PRTT(n, d, m) for the LogGP\n"
    "fit, between ranks 0 and 1 with blocking MPI_Send/MPI_Recv.  Rank 0 reports.\n"
    "\n"
    "Options of this program (before the common ones):\n"
    "  --library NAME     library name in the records (default: guessed from the library)\n"
    "  --transport NAME   transport in the records (default shm)\n"
    "  --placement NAME   placement in the records (default on-node)\n"
    "  --nodes N          nodes in the records (default 1)\n"
    "  --path NAME        path in the records: on-node (default) or network\n"
    "  --path-how TEXT    how the runner forced that path (record key path_how)\n"
    "  --round N          which of several runs of the same figures this is\n"
    "  --tests a,b        plogp, prtt (default: both)\n"
    "  --eps E            relative precision: the confidence interval's half width within\n"
    "                     2 E of the mean (default 0.02, quick 0.05)\n"
    "  --max-iters N      iterations of a plogp figure at most (default 1000, quick 200)\n"
    "  --flood            g by saturation at every size (default: at size 0 only)\n"
    "  --flood-sizes a,b  ... and at these sizes\n"
    "  --prtt-n N         messages of a PRTT burst (default 10)\n"
    "  --prtt-reps N      repetitions of each PRTT (default 20, quick 5; at most 256; at\n"
    "                     least 3 when the time cap ends a figure first)\n"
    "  (--sizes: default 0 and the powers of two to --max-size, 1 MiB; quick 0,16,256,4096,\n"
    "  65536; --reps-cap-ms: the time cap of a figure, default 200, quick 15)";

/* A number from @lo to @hi in *@v_p; -1 with a message if not. */
static int parse_number(const char *opt, const char *val, double lo, double hi, double *v_p)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(val, &end);
    if (errno != 0 || end == val || *end != '\0' || !(v >= lo) || v > hi) {
        fprintf(stderr, "mpi_logp: bad %s '%s' (want a number from %g to %g)\n", opt, val, lo, hi);
        return -1;
    }
    *v_p = v;
    return 0;
}

static int parse_flood_sizes(const char *val)
{
    char buf[512], *save = NULL;

    if (strlen(val) >= sizeof(buf)) {
        fprintf(stderr, "mpi_logp: --flood-sizes too long\n");
        return -1;
    }
    strcpy(buf, val);
    g.nflood = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        double v;

        if (g.nflood == PB_BENCH_SIZES_MAX ||
            parse_number("--flood-sizes", tok, 0, 1 << 30, &v) != 0 || v != (double)(size_t)v)
            return -1;
        g.flood_sizes[g.nflood++] = (size_t)v;
    }
    return 0;
}

/* Take this program's own options out of @argv (in place); the rest go to
 * the engine's parser.  Returns the new argc, or -1 on a bad option. */
static int own_options(int argc, char **argv)
{
    static const char *const with_arg[] = {"--tests",       "--eps",    "--max-iters",
                                           "--flood-sizes", "--prtt-n", "--prtt-reps"};
    static const char *const names[] = {"plogp", "prtt"};
    bool selected[2] = {true, true};
    int n = 1;

    for (int i = 1; i < argc; i++) {
        const char *val = NULL;
        int found = pb_mpi_bench_option(&g.b, argc, argv, &i);
        double v = 0.0;
        unsigned k = 0;

        if (found < 0)
            return -1;
        if (found > 0)
            continue;
        if (strcmp(argv[i], "--flood") == 0) {
            g.flood = true;
            continue;
        }
        if (strncmp(argv[i], "--reps-cap-ms", 13) == 0)
            g.cap_given = true; /* the engine parses it */
        found = pb_mpi_bench_option_in("mpi_logp", with_arg, sizeof(with_arg) / sizeof(with_arg[0]),
                                       argc, argv, &i, &k, &val);
        if (found < 0)
            return -1;
        if (found == 0) {
            argv[n++] = argv[i];
            continue;
        }
        switch (k) {
        case 0:
            if (pb_mpi_bench_select("mpi_logp", val, names, 2, selected) != 0)
                return -1;
            break;
        case 1:
            if (parse_number("--eps", val, 1e-4, 0.5, &g.eps) != 0)
                return -1;
            g.eps_given = true;
            break;
        case 2:
            if (parse_number("--max-iters", val, ROUND_ITERS, SAMPLES_MAX, &v) != 0 ||
                v != (double)(unsigned)v)
                return -1;
            g.max_iters = (unsigned)v;
            g.iters_given = true;
            break;
        case 3:
            if (parse_flood_sizes(val) != 0)
                return -1;
            break;
        case 4:
            if (parse_number("--prtt-n", val, 2, 1000, &v) != 0 || v != (double)(unsigned)v)
                return -1;
            g.prtt_n = (unsigned)v;
            break;
        default:
            if (parse_number("--prtt-reps", val, 1, PRTT_REPS_MAX, &v) != 0 ||
                v != (double)(unsigned)v)
                return -1;
            g.prtt_reps = (unsigned)v;
            g.reps_given = true;
            break;
        }
    }
    g.do_plogp = selected[0];
    g.do_prtt = selected[1];
    argv[n] = NULL;
    return n;
}

int main(int argc, char **argv)
{
    int status = pb_mpi_bench_args(argc, argv, own_options, &g.opts, what,
                                   "mpiexec -n 2 mpi_logp --quick --json logp.jsonl");

    if (status >= 0)
        return status;
    if (!g.cap_given)
        g.opts.reps_cap_ms = g.opts.quick ? REPS_CAP_MS_QUICK : REPS_CAP_MS_DEFAULT;
    if (!g.eps_given)
        g.eps = g.opts.quick ? EPS_QUICK : EPS_DEFAULT;
    if (!g.iters_given)
        g.max_iters = g.opts.quick ? MAX_ITERS_QUICK : MAX_ITERS_DEFAULT;
    if (!g.reps_given)
        g.prtt_reps = g.opts.quick ? PRTT_REPS_QUICK : PRTT_REPS_DEFAULT;
    for (unsigned i = 0; i < g.opts.nsizes; i++)
        if (g.opts.sizes[i] > ((size_t)1 << 30)) {
            fprintf(stderr, "mpi_logp: a size is at most 1 GiB\n");
            return 2;
        }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.ranks);
    pb_mpi_bench_identity(&g.b);
    if (g.ranks < 2) {
        fprintf(stderr, "mpi_logp: needs 2 ranks (e.g. mpiexec -n 2 %s)\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    status = pb_mpi_bench_done(MPI_LOGP_DONE, g.rank == MEASURER, run_all(), MPI_COMM_WORLD);
    MPI_Finalize();
    return status;
}
