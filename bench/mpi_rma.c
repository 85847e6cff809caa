/*
 * mpi_rma: one-sided (RMA) bench of any MPI library (suite "rma").
 *
 * Written to the standard MPI C API only, so that every library's own mpicc
 * builds it (Postbox's postbox-cc, MPICH, Open MPI), with the bench engine
 * (engine.c) and mpi_common.c.  Rank 0 is the origin, rank 1 the target;
 * both hold a window of WIN_BYTES on a communicator of the two (other ranks
 * wait for the end).  Every rank runs the same list of figures (a test at a
 * size in a synchronization mode), decided by the command line alone; rank
 * 0 times and writes the results.
 *
 * Tests (after the OSU one-sided benchmarks and IMB-RMA):
 *   put_latency, get_latency     one MPI_Put / MPI_Get of the size per epoch
 *   put_bandwidth, get_bandwidth an epoch of --window (64) operations of the
 *       size to consecutive slots of the window (MB = 10^6 B)
 *   accumulate       MPI_Accumulate, MPI_SUM on MPI_DOUBLE (8 B .. 64 KB)
 *   get_accumulate   MPI_Get_accumulate, MPI_SUM on MPI_DOUBLE (8 B .. 64 KB)
 *   fetch_and_op     MPI_Fetch_and_op, MPI_SUM on MPI_INT64_T
 *   compare_and_swap MPI_Compare_and_swap on MPI_INT64_T (each one succeeds)
 *   progress         the origin makes --epochs (1000) lock(exclusive) /
 *       8-byte put / unlock epochs toward the target while the target
 *       computes for --compute-s (2) seconds without calling MPI, then
 *       enters MPI_Barrier; recorded: when the origin's epochs were done,
 *       from the start of the target's computation (both start right after
 *       the same barrier), and the target's compute time.  A library whose
 *       passive target progresses without the target finishes long before
 *       the computation ends; one that needs the target's MPI calls finishes
 *       just after it.
 *
 * Synchronization modes (record key sync; --sync), for the put and get
 * tests; the atomics run in lock_all only:
 *   lock      MPI_Win_lock(MPI_LOCK_EXCLUSIVE) / ops / MPI_Win_unlock
 *   lock_all  MPI_Win_lock_all once per figure; ops then MPI_Win_flush
 *   fence     ops then MPI_Win_fence on both ranks
 *   pscw      the target MPI_Win_post / MPI_Win_wait, the origin
 *             MPI_Win_start / ops / MPI_Win_complete
 * The window's flavour (record key flavor; --flavor): allocate
 * (MPI_Win_allocate, default) or create (MPI_Win_create on memory of the
 * program's own).
 *
 * Timing: a figure is a few samples (at least SAMPLES_MIN; SAMPLES_MAX for
 * bandwidth), each a batch of epochs timed together by the origin; the
 * batch size fits the samples in --reps-cap-ms.  Before each batch both ranks pass one and the same
 * barrier (zero-byte MPI_Sendrecv on a communicator of their own), whatever the library; after it
 * they pass it again (the target's MPI call there is where a library that needs the target's help
 * progresses: the passive figures measure the library at its best, the progress test at its worst).
 * The origin's buffer changes before every operation (its first word, or
 * every element of an atomic operand).  t_min / t_max / t_avg: over the
 * samples, of the time per epoch; the record's median, min and max are in
 * the record's unit (latency: time per epoch; bandwidth: bytes of an epoch
 * over its time).
 *
 * Unless --no-check, each figure ends with a checked epoch of patterned
 * data (puts and gets: the bytes read back; atomics: the target's value
 * after every operation of the figure); a mismatch is printed and the
 * figure is not recorded.
 */
#include <mpi.h>

#include "engine.h"
#include "mpi_common.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_SYNC 301
#define TAG_PROGRESS 302

#define WIN_BYTES ((size_t)4 << 20) /* each rank's window: the largest size */
#define SIZE_MIN 8
#define ATOMIC_SIZE_MAX ((size_t)64 << 10)
#define WINDOW_DEFAULT 64 /* operations per bandwidth epoch (OSU's window) */
#define SAMPLES_MIN 5
#define SAMPLES_MAX 15
#define ITERS_MAX 100000
#define ESTIMATE_NS 1e6 /* a warm-up epoch longer than this is the estimate */
#define REPS_CAP_MS_DEFAULT 100.0
#define REPS_CAP_MS_QUICK 20.0
#define COMPUTE_S_DEFAULT 2.0
#define EPOCHS_DEFAULT 1000
#define ORIGIN 0
#define TARGET 1
#define MPI_RMA_DONE "# mpi_rma: done, status" /* rank 0's last line */

enum sync_mode {
    S_LOCK,
    S_LOCK_ALL,
    S_FENCE,
    S_PSCW,
    NSYNC
};
static const char *const sync_names[NSYNC] = {"lock", "lock_all", "fence", "pscw"};
static const char *const sync_what[NSYNC] = {
    "MPI_Win_lock(exclusive) / op / MPI_Win_unlock", "MPI_Win_lock_all once, op then MPI_Win_flush",
    "op then MPI_Win_fence on both ranks", "MPI_Win_post/wait, MPI_Win_start / op / complete"};

enum rma_op {
    OP_PUT,
    OP_GET,
    OP_ACC,
    OP_GET_ACC,
    OP_FOP,
    OP_CAS
};

enum kind {
    K_LATENCY,
    K_BANDWIDTH,
    K_PROGRESS
};

typedef struct {
    const char *name;
    enum rma_op op;
    enum kind kind;
    size_t size_max;      /* 0: no sizes (the progress test) */
    const size_t *quick;  /* the sizes under --quick */
    const char *datatype; /* record key datatype */
    bool every_sync;      /* the put and get tests: every --sync mode */
    const char *what;
} test_t;

static const size_t quick_latency[] = {8, 4096, 65536, 0};
static const size_t quick_bandwidth[] = {8, 65536, 4194304, 0};
static const size_t quick_atomic[] = {8, 4096, 0};
static const size_t quick_word[] = {8, 0};

static const test_t tests[] = {
    {"put_latency", OP_PUT, K_LATENCY, WIN_BYTES, quick_latency, "MPI_BYTE", true,
     "one MPI_Put per epoch"},
    {"get_latency", OP_GET, K_LATENCY, WIN_BYTES, quick_latency, "MPI_BYTE", true,
     "one MPI_Get per epoch"},
    {"put_bandwidth", OP_PUT, K_BANDWIDTH, WIN_BYTES, quick_bandwidth, "MPI_BYTE", true,
     "an epoch of W MPI_Put (MB = 10^6 B)"},
    {"get_bandwidth", OP_GET, K_BANDWIDTH, WIN_BYTES, quick_bandwidth, "MPI_BYTE", true,
     "an epoch of W MPI_Get (MB = 10^6 B)"},
    {"accumulate", OP_ACC, K_LATENCY, ATOMIC_SIZE_MAX, quick_atomic, "MPI_DOUBLE", false,
     "MPI_Accumulate, MPI_SUM on MPI_DOUBLE"},
    {"get_accumulate", OP_GET_ACC, K_LATENCY, ATOMIC_SIZE_MAX, quick_atomic, "MPI_DOUBLE", false,
     "MPI_Get_accumulate, MPI_SUM on MPI_DOUBLE"},
    {"fetch_and_op", OP_FOP, K_LATENCY, 8, quick_word, "MPI_INT64_T", false,
     "MPI_Fetch_and_op, MPI_SUM on MPI_INT64_T"},
    {"compare_and_swap", OP_CAS, K_LATENCY, 8, quick_word, "MPI_INT64_T", false,
     "MPI_Compare_and_swap on MPI_INT64_T"},
    {"progress", OP_PUT, K_PROGRESS, 0, NULL, "MPI_BYTE", false,
     "lock(exclusive) / 8-byte put / unlock epochs while the target computes"},
};

#define NTESTS (sizeof(tests) / sizeof(tests[0]))

static struct {
    pb_bench_opts_t opts;
    pb_mpi_bench_t b;
    int rank, ranks;
    MPI_Comm pair;      /* ranks 0 and 1: the window's */
    MPI_Comm sync_comm; /* the bench's own barrier, the batch sizes */
    MPI_Group origin_group, target_group;
    bool selected[NTESTS];
    bool sync_on[NSYNC];
    bool create;     /* --flavor create */
    unsigned window; /* --window */
    double compute_s;
    unsigned epochs;
    bool cap_given;
    MPI_Win win;
    char *base;      /* this rank's window memory */
    char *mem;       /* --flavor create: the memory given to MPI_Win_create */
    char *src, *dst; /* the origin's buffers, WIN_BYTES each */
    int64_t stamp;   /* grows with every operation of the run */
} g = {.b = PB_MPI_BENCH_INIT("mpi_rma"),
       .window = WINDOW_DEFAULT,
       .compute_s = COMPUTE_S_DEFAULT,
       .epochs = EPOCHS_DEFAULT};

/* ---- helpers ------------------------------------------------------------ */

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "mpi_rma: rank %d: %s\n", g.rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static char *alloc_touched(size_t bytes)
{
    void *p = NULL;

    if (posix_memalign(&p, 4096, bytes) != 0)
        die("out of memory");
    memset(p, 0, bytes);
    return p;
}

/* The barrier before and after every batch, the same for every library:
 * one zero-byte MPI_Sendrecv each way between the two ranks. */
static void sync_pair(void)
{
    int other = 1 - g.rank;

    MPI_Sendrecv(NULL, 0, MPI_BYTE, other, TAG_SYNC, NULL, 0, MPI_BYTE, other, TAG_SYNC,
                 g.sync_comm, MPI_STATUS_IGNORE);
}

/* ---- one figure --------------------------------------------------------- */

typedef struct {
    const test_t *t;
    enum sync_mode sync;
    size_t size;
    unsigned ops;   /* operations per epoch: 1, or the window */
    size_t slots;   /* slots of @size in the window */
    int count;      /* elements of one operation */
    double sum0;    /* accumulates: what the target's element 0 should hold */
    int64_t total;  /* accumulates: operations so far; fop: sum; cas: value */
    unsigned wrong; /* cas: results that were not the value compared */
} fig_t;

/* The target's side of the figure before its first batch: window contents
 * known to both (zero for atomics, a pattern for gets), then the mode's
 * opening call. */
static void fig_open(fig_t *f)
{
    if (g.rank == TARGET) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, g.win);
        if (f->t->op == OP_GET)
            for (size_t i = 0; i < WIN_BYTES; i += 64)
                g.base[i] = (char)(i / 64 * 7 + 3);
        else
            memset(g.base, 0, f->t->op == OP_PUT ? 64 : ATOMIC_SIZE_MAX);
        MPI_Win_unlock(TARGET, g.win);
    }
    sync_pair();
    if (f->sync == S_LOCK_ALL && g.rank == ORIGIN)
        MPI_Win_lock_all(0, g.win);
    if (f->sync == S_FENCE)
        MPI_Win_fence(MPI_MODE_NOPRECEDE, g.win);
}

static void fig_close(fig_t *f)
{
    if (f->sync == S_LOCK_ALL && g.rank == ORIGIN)
        MPI_Win_unlock_all(g.win);
    if (f->sync == S_FENCE)
        MPI_Win_fence(MPI_MODE_NOSUCCEED, g.win);
}

/* Operation @j of an epoch, from the origin, its operand changed first. */
static void origin_op(fig_t *f, unsigned j)
{
    size_t slot = (size_t)(j % f->slots) * f->size;
    char *src = g.src + slot, *dst = g.dst + slot;
    MPI_Aint disp = (MPI_Aint)slot;
    int64_t k = ++g.stamp;

    switch (f->t->op) {
    case OP_PUT:
        memcpy(src, &k, f->size < sizeof(k) ? f->size : sizeof(k));
        MPI_Put(src, f->count, MPI_BYTE, TARGET, disp, f->count, MPI_BYTE, g.win);
        break;
    case OP_GET: MPI_Get(dst, f->count, MPI_BYTE, TARGET, disp, f->count, MPI_BYTE, g.win); break;
    case OP_ACC:
    case OP_GET_ACC: {
        double *v = (double *)(void *)g.src, first = (double)(k & 3);

        v[0] = first; /* the other elements stay 1.0 */
        f->sum0 += first;
        f->total++;
        if (f->t->op == OP_ACC)
            MPI_Accumulate(v, f->count, MPI_DOUBLE, TARGET, 0, f->count, MPI_DOUBLE, MPI_SUM,
                           g.win);
        else
            MPI_Get_accumulate(v, f->count, MPI_DOUBLE, g.dst, f->count, MPI_DOUBLE, TARGET, 0,
                               f->count, MPI_DOUBLE, MPI_SUM, g.win);
        break;
    }
    case OP_FOP: {
        int64_t add = (k & 3) + 1, *old = (int64_t *)(void *)g.dst;

        f->total += add;
        MPI_Fetch_and_op(&add, old, MPI_INT64_T, TARGET, 0, MPI_SUM, g.win);
        break;
    }
    case OP_CAS: {
        int64_t want = f->total, next = f->total + 1, *old = (int64_t *)(void *)g.dst;

        MPI_Compare_and_swap(&next, &want, old, MPI_INT64_T, TARGET, 0, g.win);
        f->total = next;
        break;
    }
    }
}

/* One epoch of @f's operations on the origin. */
static void origin_epoch(fig_t *f)
{
    switch (f->sync) {
    case S_LOCK: MPI_Win_lock(MPI_LOCK_EXCLUSIVE, TARGET, 0, g.win); break;
    case S_PSCW: MPI_Win_start(g.target_group, 0, g.win); break;
    default: break;
    }
    for (unsigned j = 0; j < f->ops; j++)
        origin_op(f, j);
    switch (f->sync) {
    case S_LOCK: MPI_Win_unlock(TARGET, g.win); break;
    case S_LOCK_ALL: MPI_Win_flush(TARGET, g.win); break;
    case S_FENCE: MPI_Win_fence(0, g.win); break;
    case S_PSCW: MPI_Win_complete(g.win); break;
    case NSYNC: break;
    }
    if (f->t->op == OP_CAS && *(int64_t *)(void *)g.dst != f->total - 1)
        f->wrong++;
}

/* The target's part of one epoch: nothing in the passive modes. */
static void target_epoch(const fig_t *f)
{
    if (f->sync == S_FENCE) {
        MPI_Win_fence(0, g.win);
    } else if (f->sync == S_PSCW) {
        MPI_Win_post(g.origin_group, 0, g.win);
        MPI_Win_wait(g.win);
    }
}

/* A batch of @iters epochs between two barriers; the origin's time in ns. */
static double batch(fig_t *f, int64_t iters)
{
    uint64_t t0 = 0, t1 = 0;

    sync_pair();
    if (g.rank == ORIGIN) {
        t0 = pb_bench_time_now();
        for (int64_t i = 0; i < iters; i++)
            origin_epoch(f);
        t1 = pb_bench_time_now();
    } else {
        for (int64_t i = 0; i < iters; i++)
            target_epoch(f);
    }
    sync_pair();
    return (double)(t1 - t0);
}

/* The checked epoch: patterned data, verified by the origin.  Returns the
 * number of wrong values (the same on both ranks). */
static int check_figure(fig_t *f)
{
    int wrong = 0;
    int64_t got[2] = {0, 0};
    double gotd[2] = {0.0, 0.0};

    if (g.rank == ORIGIN) {
        if (f->t->op == OP_PUT)
            for (size_t i = 0; i < f->size; i++)
                g.src[i] = (char)(i * 13 + (size_t)g.stamp);
        memset(g.dst, 0, f->size);
        f->ops = 1;
    }
    batch(f, 1);
    fig_close(f);
    if (g.rank == ORIGIN) {
        /* the target's memory, read back in an epoch of its own */
        MPI_Win_lock(MPI_LOCK_SHARED, TARGET, 0, g.win);
        switch (f->t->op) {
        case OP_PUT:
            MPI_Get(g.dst, f->count, MPI_BYTE, TARGET, 0, f->count, MPI_BYTE, g.win);
            break;
        case OP_ACC:
        case OP_GET_ACC: MPI_Get(gotd, 2, MPI_DOUBLE, TARGET, 0, 2, MPI_DOUBLE, g.win); break;
        case OP_FOP:
        case OP_CAS: MPI_Get(got, 1, MPI_INT64_T, TARGET, 0, 1, MPI_INT64_T, g.win); break;
        case OP_GET: break;
        }
        MPI_Win_unlock(TARGET, g.win);
        switch (f->t->op) {
        case OP_PUT:
            for (size_t i = 0; i < f->size && wrong == 0; i++)
                wrong += g.dst[i] != g.src[i];
            break;
        case OP_GET:
            for (size_t i = 0; i < f->size && wrong == 0; i += 64)
                wrong += g.dst[i] != (char)(i / 64 * 7 + 3);
            break;
        case OP_ACC:
        case OP_GET_ACC:
            wrong = gotd[0] != f->sum0 || (f->count > 1 && gotd[1] != (double)f->total);
            break;
        case OP_FOP:
        case OP_CAS: wrong = got[0] != f->total || f->wrong > 0; break;
        }
        if (wrong)
            fprintf(stderr,
                    "mpi_rma: check failed: %s size %zu sync %s: the target's memory "
                    "does not hold what the origin wrote\n",
                    f->t->name, f->size, sync_names[f->sync]);
    }
    MPI_Bcast(&wrong, 1, MPI_INT, ORIGIN, g.sync_comm);
    return wrong;
}

typedef struct {
    pb_bench_stats_t st; /* ns per epoch */
    double t_min, t_max, t_avg;
    int64_t iters;
    unsigned samples;
} timing_t;

/* Measure @f: a warm-up batch, then the samples. */
static void measure(fig_t *f, timing_t *tm)
{
    double ns[SAMPLES_MAX], est, sum = 0.0;
    int64_t plan[2] = {1, SAMPLES_MIN};
    int short_epochs;

    /* the warm-up (first-touch costs of the library), and the estimate:
     * four more epochs unless one already takes a millisecond */
    est = batch(f, 1);
    short_epochs = est < ESTIMATE_NS;
    MPI_Bcast(&short_epochs, 1, MPI_INT, ORIGIN, g.sync_comm);
    if (short_epochs)
        est = batch(f, 4) / 4.0;
    if (g.rank == ORIGIN) {
        double per_sample = g.opts.reps_cap_ms * 1e6 / SAMPLES_MIN, iters;

        iters = est > 0.0 ? per_sample / est : ITERS_MAX;
        plan[0] = iters < 1.0 ? 1 : iters > ITERS_MAX ? ITERS_MAX : (int64_t)iters;
        /* short epochs: more samples within the same cap; bandwidth
         * (epochs of a memcpy's speed, which drifts most) always */
        plan[1] = f->t->kind == K_BANDWIDTH ||
                          est * (double)plan[0] * SAMPLES_MAX < g.opts.reps_cap_ms * 1e6
                      ? SAMPLES_MAX
                      : SAMPLES_MIN;
    }
    MPI_Bcast(plan, 2, MPI_INT64_T, ORIGIN, g.sync_comm);
    for (int64_t s = 0; s < plan[1]; s++) {
        ns[s] = batch(f, plan[0]) / (double)plan[0];
        sum += ns[s];
    }
    tm->iters = plan[0];
    tm->samples = (unsigned)plan[1];
    if (g.rank != ORIGIN)
        return;
    tm->t_min = tm->t_max = ns[0];
    for (unsigned s = 1; s < tm->samples; s++) {
        tm->t_min = ns[s] < tm->t_min ? ns[s] : tm->t_min;
        tm->t_max = ns[s] > tm->t_max ? ns[s] : tm->t_max;
    }
    tm->t_avg = sum / tm->samples;
    pb_bench_stats_from_samples(ns, tm->samples, (uint64_t)tm->iters, &tm->st);
}

static pb_bench_record_t record_begin(const test_t *t, size_t size, const char *metric,
                                      const char *unit)
{
    pb_bench_record_t rec = {
        .suite = "rma",
        .test = t->name,
        .library = g.b.library,
        .transport = g.b.transport,
        .placement = g.b.placement,
        .ranks = g.ranks,
        .nodes = g.b.nodes,
        .pairs = 1,
        .size = size,
        .metric = metric,
        .unit = unit,
        .probe_before = -1.0,
        .probe_after = -1.0,
    };

    pb_mpi_bench_record_identity(&rec, &g.b);
    pb_bench_record_add_bool(&rec, "checked", g.b.check);
    pb_bench_record_add_str(&rec, "flavor", g.create ? "create" : "allocate");
    pb_bench_record_add_str(&rec, "datatype", t->datatype);
    return rec;
}

/* One figure: every rank; rank 0 prints and records it.  Returns 0, or 1
 * when its check failed. */
static int figure(pb_bench_out_t *out, const test_t *t, enum sync_mode sync, size_t size)
{
    fig_t f = {.t = t, .sync = sync, .size = size, .ops = 1, .count = (int)size};
    timing_t tm = {0};
    unsigned window; /* f.ops: the checked epoch has one */

    if (t->kind == K_BANDWIDTH)
        f.ops = g.window;
    if (t->op == OP_ACC || t->op == OP_GET_ACC)
        f.count = (int)(size / sizeof(double));
    if (t->op == OP_FOP || t->op == OP_CAS)
        f.count = 1;
    f.slots = WIN_BYTES / size;
    if (g.rank == ORIGIN && (t->op == OP_ACC || t->op == OP_GET_ACC)) {
        double *v = (double *)(void *)g.src;

        for (int i = 0; i < f.count; i++)
            v[i] = 1.0;
    }
    window = f.ops;
    fig_open(&f);
    measure(&f, &tm);
    if (g.b.check) {
        if (check_figure(&f) != 0)
            return 1;
    } else {
        fig_close(&f);
    }
    if (g.rank != ORIGIN)
        return 0;

    pb_bench_record_t rec = record_begin(t, size, t->kind == K_BANDWIDTH ? "bandwidth" : "latency",
                                         t->kind == K_BANDWIDTH ? "MB/s" : "us");

    rec.stats = tm.st;
    if (t->kind == K_BANDWIDTH)
        pb_bench_stats_to_bandwidth(&rec.stats, size * window);
    else
        pb_bench_stats_scale(&rec.stats, 1e-3);
    pb_bench_record_add_str(&rec, "sync", sync_names[sync]);
    pb_bench_record_add_num(&rec, "t_min", tm.t_min * 1e-3);
    pb_bench_record_add_num(&rec, "t_max", tm.t_max * 1e-3);
    pb_bench_record_add_num(&rec, "t_avg", tm.t_avg * 1e-3);
    if (t->kind == K_BANDWIDTH)
        pb_bench_record_add_num(&rec, "window", window);
    printf("%12zu %8lld %8u %12.2f %12.2f %12.2f %12.2f%s\n", size, (long long)tm.iters, tm.samples,
           tm.t_min * 1e-3, tm.t_max * 1e-3, tm.t_avg * 1e-3, rec.stats.median,
           t->kind == K_BANDWIDTH ? " MB/s" : "");
    fflush(stdout);
    pb_bench_record_emit(out, &rec);
    return 0;
}

/* ---- the progress test -------------------------------------------------- */

static int progress_test(pb_bench_out_t *out)
{
    const test_t *t = NULL;
    fig_t f = {.sync = S_LOCK, .size = 8, .ops = 1, .count = 8, .slots = 1};
    double done_ns = 0.0, compute_ns = 0.0, after_ns = 0.0;
    uint64_t t0;
    int wrong = 0;

    for (unsigned i = 0; i < NTESTS; i++)
        if (tests[i].kind == K_PROGRESS)
            t = &tests[i];
    f.t = t;
    fig_open(&f);
    sync_pair();
    t0 = pb_bench_time_now();
    if (g.rank == TARGET) {
        compute_ns = (double)pb_mpi_bench_compute_for((uint64_t)(g.compute_s * 1e9));
        MPI_Barrier(g.pair);
        MPI_Send(&compute_ns, 1, MPI_DOUBLE, ORIGIN, TAG_PROGRESS, g.sync_comm);
    } else {
        for (unsigned e = 0; e < g.epochs; e++)
            origin_epoch(&f);
        done_ns = (double)(pb_bench_time_now() - t0);
        MPI_Barrier(g.pair);
        after_ns = (double)(pb_bench_time_now() - t0);
        MPI_Recv(&compute_ns, 1, MPI_DOUBLE, TARGET, TAG_PROGRESS, g.sync_comm, MPI_STATUS_IGNORE);
    }
    if (g.b.check)
        wrong = check_figure(&f);
    if (wrong != 0)
        return 1;
    if (g.rank != ORIGIN)
        return 0;

    pb_bench_record_t rec = record_begin(t, 8, "time", "s");

    rec.stats.median = rec.stats.min = rec.stats.max = done_ns * 1e-9;
    rec.stats.reps = 1;
    rec.stats.iters = g.epochs;
    pb_bench_record_add_str(&rec, "sync", sync_names[S_LOCK]);
    pb_bench_record_add_num(&rec, "epochs", g.epochs);
    pb_bench_record_add_num(&rec, "epochs_done_s", done_ns * 1e-9);
    pb_bench_record_add_num(&rec, "compute_s", compute_ns * 1e-9);
    pb_bench_record_add_num(&rec, "barrier_done_s", after_ns * 1e-9);
    pb_bench_record_add_num(&rec, "epoch_us", done_ns * 1e-3 / g.epochs);
    pb_bench_record_add_bool(&rec, "done_while_computing", done_ns < compute_ns);
    printf("\n# rma progress (%s): %u epochs of lock(exclusive) / 8-byte put / unlock while the "
           "target computes without calling MPI\n",
           g.b.library, g.epochs);
    printf("# epochs done at %.4f s (target computed %.4f s, then MPI_Barrier; barrier left at "
           "%.4f s): %s\n",
           done_ns * 1e-9, compute_ns * 1e-9, after_ns * 1e-9,
           done_ns < compute_ns ? "progressed while the target computed"
                                : "waited for the target's MPI call");
    fflush(stdout);
    pb_bench_record_emit(out, &rec);
    return 0;
}

/* ---- the run ------------------------------------------------------------ */

/* The sizes @t measures: --sizes within its range, the quick list, or the
 * powers of two from 8 B to its largest. */
static unsigned test_sizes(const test_t *t, size_t *sizes)
{
    unsigned n = 0;

    if (t->size_max == 0)
        return 0;
    if (g.opts.quick && g.opts.nsizes == 0) {
        for (const size_t *s = t->quick; *s != 0; s++)
            if (*s <= t->size_max && (g.opts.max_size == 0 || *s <= g.opts.max_size))
                sizes[n++] = *s;
        return n;
    }
    n = pb_bench_sizes_make(&g.opts, SIZE_MIN, t->size_max, 2, 2, sizes);
    if (t->op == OP_ACC || t->op == OP_GET_ACC) {
        unsigned k = 0;

        /* whole doubles only */
        for (unsigned i = 0; i < n; i++)
            if (sizes[i] % sizeof(double) == 0)
                sizes[k++] = sizes[i];
        n = k;
    }
    if (t->op == OP_FOP || t->op == OP_CAS)
        n = n > 0 && sizes[0] == 8 ? 1 : 0;
    return n;
}

static int run_pair(pb_bench_out_t *out)
{
    size_t sizes[PB_BENCH_SIZES_MAX];
    int status = 0;

    for (unsigned i = 0; i < NTESTS; i++) {
        const test_t *t = &tests[i];

        if (!g.selected[i])
            continue;
        if (t->kind == K_PROGRESS) {
            status |= progress_test(out);
            continue;
        }
        for (unsigned s = 0; s < NSYNC; s++) {
            unsigned n;

            if (t->every_sync ? !g.sync_on[s] : s != S_LOCK_ALL)
                continue;
            n = test_sizes(t, sizes);
            if (n == 0)
                break;
            if (g.rank == ORIGIN) {
                printf("\n# rma %s (%s, %s window, sync %s: %s): %s%s\n", t->name, g.b.library,
                       g.create ? "create" : "allocate", sync_names[s], sync_what[s], t->what,
                       t->kind == K_BANDWIDTH ? "" : "; time per epoch");
                printf("%12s %8s %8s %12s %12s %12s %12s\n", "#bytes", "#iters", "#samples",
                       "t_min[us]", "t_max[us]", "t_avg[us]",
                       t->kind == K_BANDWIDTH ? "median" : "median[us]");
            }
            for (unsigned k = 0; k < n; k++)
                status |= figure(out, t, (enum sync_mode)s, sizes[k]);
        }
    }
    return status;
}

/* Make the window of the chosen flavour; on failure print why and return
 * nonzero (on both ranks). */
static int window_make(void)
{
    char text[MPI_MAX_ERROR_STRING];
    int rc, len = 0, ok;

    MPI_Comm_set_errhandler(g.pair, MPI_ERRORS_RETURN);
    if (g.create) {
        g.mem = alloc_touched(WIN_BYTES);
        rc = MPI_Win_create(g.mem, (MPI_Aint)WIN_BYTES, 1, MPI_INFO_NULL, g.pair, &g.win);
        g.base = g.mem;
    } else {
        rc = MPI_Win_allocate((MPI_Aint)WIN_BYTES, 1, MPI_INFO_NULL, g.pair, &g.base, &g.win);
    }
    ok = rc == MPI_SUCCESS;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, g.sync_comm);
    if (ok)
        return 0;
    if (rc != MPI_SUCCESS) {
        MPI_Error_string(rc, text, &len);
        fprintf(stderr, "mpi_rma: rank %d: %s failed: %s\n", g.rank,
                g.create ? "MPI_Win_create" : "MPI_Win_allocate", text);
    }
    return 1;
}

static int run_all(void)
{
    pb_bench_out_t out = {0};
    int status = 0, color = g.rank < 2 ? 0 : MPI_UNDEFINED;
    MPI_Group world;

    MPI_Comm_split(MPI_COMM_WORLD, color, g.rank, &g.pair);
    if (g.pair == MPI_COMM_NULL)
        return 0; /* ranks beyond the two wait for the end */
    MPI_Comm_dup(g.pair, &g.sync_comm);
    MPI_Comm_group(g.pair, &world);
    MPI_Group_incl(world, 1, (int[]){ORIGIN}, &g.origin_group);
    MPI_Group_incl(world, 1, (int[]){TARGET}, &g.target_group);
    MPI_Group_free(&world);
    pb_mpi_bench_job_shape(&g.b, g.sync_comm);
    if (g.rank == ORIGIN) {
        g.src = alloc_touched(WIN_BYTES);
        g.dst = alloc_touched(WIN_BYTES);
        if (pb_bench_out_open(&out, &g.opts) != 0)
            status = 2;
        else
            printf("# mpi_rma: library %s, %s, ranks %d (%d on this host, %d CPUs), nodes %d, "
                   "transport %s, placement %s, path %s%s%s, window %s, check %s\n",
                   g.b.library, g.b.version, g.ranks, g.b.host_ranks, g.b.cores, g.b.nodes,
                   g.b.transport, g.b.placement, g.b.path, g.b.path_how != NULL ? " " : "",
                   g.b.path_how != NULL ? g.b.path_how : "", g.create ? "create" : "allocate",
                   g.b.check ? "on" : "off");
    }
    MPI_Bcast(&status, 1, MPI_INT, ORIGIN, g.sync_comm);
    if (status == 0 && window_make() != 0)
        status = 3;
    if (status == 0) {
        status = run_pair(&out);
        MPI_Win_free(&g.win);
    }
    if (g.rank == ORIGIN)
        pb_bench_out_close(&out);
    free(g.mem);
    free(g.src);
    free(g.dst);
    MPI_Group_free(&g.origin_group);
    MPI_Group_free(&g.target_group);
    MPI_Comm_free(&g.sync_comm);
    MPI_Comm_free(&g.pair);
    return status;
}

/* ---- options and main --------------------------------------------------- */

static const char what[] =
    "One-sided (RMA) bench of an MPI library (suite rma): put and get latency and bandwidth\n"
    "in each synchronization mode (lock, lock_all + flush, fence, PSCW), accumulate,\n"
    "get_accumulate, fetch_and_op and compare_and_swap latency (lock_all + flush), and the\n"
    "progress test (passive-target epochs toward a target that computes without calling\n"
    "MPI).  Rank 0 is the origin, rank 1 the target; rank 0 reports.\n"
    "\n"
    "Options of this program (before the common ones):\n"
    "  --library NAME     library name in the records (default: guessed from the library)\n"
    "  --transport NAME   transport in the records (default shm)\n"
    "  --placement NAME   placement in the records (default on-node)\n"
    "  --nodes N          nodes in the records (default 1)\n"
    "  --path NAME        path in the records: on-node (default) or network\n"
    "  --path-how TEXT    how the runner forced that path (record key path_how)\n"
    "  --round N          which of several runs of the same figures this is (record key round)\n"
    "  --tests a,b        only these tests (default: every one)\n"
    "  --sync a,b         the modes of the put and get tests: lock, lock_all, fence, pscw\n"
    "                     (default: every one; the atomics run in lock_all only)\n"
    "  --flavor NAME      the window: allocate (MPI_Win_allocate, default) or create\n"
    "                     (MPI_Win_create on memory of the program's own)\n"
    "  --window W         operations per bandwidth epoch (default 64)\n"
    "  --compute-s S      the progress test: the target's compute time (default 2)\n"
    "  --epochs N         the progress test: the origin's epochs (default 1000)\n"
    "  (--reps-cap-ms, below: in this program default 100, quick 20)\n"
    "  --no-check         do not verify the data of a checked epoch per figure";

static int parse_sync(const char *val)
{
    char buf[128], *save = NULL;
    bool any = false;

    if (strlen(val) >= sizeof(buf))
        return -1;
    strcpy(buf, val);
    for (unsigned s = 0; s < NSYNC; s++)
        g.sync_on[s] = false;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned s;

        for (s = 0; s < NSYNC && strcmp(sync_names[s], tok) != 0; s++)
            ;
        if (s == NSYNC) {
            fprintf(stderr, "mpi_rma: bad --sync '%s' (lock, lock_all, fence, pscw)\n", tok);
            return -1;
        }
        g.sync_on[s] = any = true;
    }
    return any ? 0 : -1;
}

/* A positive number of at most @max in *@v_p; -1 with a message if not. */
static int parse_number(const char *opt, const char *val, double max, double *v_p)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(val, &end);
    if (errno != 0 || end == val || *end != '\0' || !(v > 0.0) || v > max) {
        fprintf(stderr, "mpi_rma: bad %s '%s' (want a number > 0, at most %g)\n", opt, val, max);
        return -1;
    }
    *v_p = v;
    return 0;
}

/* Take this program's own options out of @argv (in place); the rest go to
 * the engine's parser.  Returns the new argc, or -1 on a bad option. */
static int own_options(int argc, char **argv)
{
    static const char *const with_arg[] = {"--tests",  "--sync",      "--flavor",
                                           "--window", "--compute-s", "--epochs"};
    const char *names[NTESTS];
    int n = 1;

    for (unsigned t = 0; t < NTESTS; t++) {
        g.selected[t] = true;
        names[t] = tests[t].name;
    }
    for (unsigned s = 0; s < NSYNC; s++)
        g.sync_on[s] = true;
    for (int i = 1; i < argc; i++) {
        const char *val = NULL;
        int found = pb_mpi_bench_option(&g.b, argc, argv, &i);
        double v = 0.0;
        unsigned k = 0;

        if (found < 0)
            return -1;
        if (found > 0)
            continue;
        if (strncmp(argv[i], "--reps-cap-ms", 13) == 0)
            g.cap_given = true; /* the engine parses it */
        found = pb_mpi_bench_option_in("mpi_rma", with_arg, sizeof(with_arg) / sizeof(with_arg[0]),
                                       argc, argv, &i, &k, &val);
        if (found < 0)
            return -1;
        if (found == 0) {
            argv[n++] = argv[i];
            continue;
        }
        switch (k) {
        case 0:
            if (pb_mpi_bench_select("mpi_rma", val, names, NTESTS, g.selected) != 0)
                return -1;
            break;
        case 1:
            if (parse_sync(val) != 0)
                return -1;
            break;
        case 2:
            if (strcmp(val, "allocate") != 0 && strcmp(val, "create") != 0) {
                fprintf(stderr, "mpi_rma: bad --flavor '%s' (allocate or create)\n", val);
                return -1;
            }
            g.create = strcmp(val, "create") == 0;
            break;
        case 3:
            if (parse_number("--window", val, 4096, &v) != 0 || v != (double)(unsigned)v)
                return -1;
            g.window = (unsigned)v;
            break;
        case 4:
            if (parse_number("--compute-s", val, 3600, &g.compute_s) != 0)
                return -1;
            break;
        default:
            if (parse_number("--epochs", val, 10000000, &v) != 0 || v != (double)(unsigned)v)
                return -1;
            g.epochs = (unsigned)v;
            break;
        }
    }
    argv[n] = NULL;
    return n;
}

int main(int argc, char **argv)
{
    int status = pb_mpi_bench_args(argc, argv, own_options, &g.opts, what,
                                   "mpiexec -n 2 mpi_rma --quick --json rma.jsonl");

    if (status >= 0)
        return status;
    if (!g.cap_given)
        g.opts.reps_cap_ms = g.opts.quick ? REPS_CAP_MS_QUICK : REPS_CAP_MS_DEFAULT;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.ranks);
    pb_mpi_bench_identity(&g.b);
    if (g.ranks < 2) {
        fprintf(stderr, "mpi_rma: needs 2 ranks (e.g. mpiexec -n 2 %s)\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    status = pb_mpi_bench_done(MPI_RMA_DONE, g.rank == ORIGIN, run_all(), MPI_COMM_WORLD);
    MPI_Finalize();
    return status;
}
