/*
 * Postbox bench engine: timer, collectors, raw probe, options and output.
 * See engine.h for the interface.
 */
#include "engine.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Samples a collector aims for, and the fewest it takes whatever the cap. */
#define SAMPLES_TARGET 21
#define SAMPLES_MIN 5

#define REPS_CAP_MS_DEFAULT 200.0
#define REPS_CAP_MS_QUICK 60.0

/* ---- timer -------------------------------------------------------------- */

uint64_t pb_bench_time_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median_of(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), double_cmp);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double pb_bench_time_overhead(void)
{
    static double overhead = -1.0;
    double v[101];

    if (overhead >= 0.0)
        return overhead;
    for (unsigned i = 0; i < 101; i++) {
        uint64_t t0 = pb_bench_time_now();
        uint64_t t1 = pb_bench_time_now();
        v[i] = (double)(t1 - t0);
    }
    overhead = median_of(v, 101);
    return overhead;
}

/* ---- options ------------------------------------------------------------ */

/* Parse "4096", "64K", "4M", "1G" (binary multiples) into *@v_p. */
static int parse_size(const char *s, size_t *v_p)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    switch (*end) {
    case 'k':
    case 'K':
        v <<= 10;
        end++;
        break;
    case 'm':
    case 'M':
        v <<= 20;
        end++;
        break;
    case 'g':
    case 'G':
        v <<= 30;
        end++;
        break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || v > SIZE_MAX)
        return -1;
    *v_p = (size_t)v;
    return 0;
}

static int parse_size_list(const char *arg, pb_bench_opts_t *opts)
{
    char buf[1024];
    char *save = NULL;

    if (strlen(arg) >= sizeof(buf))
        return -1;
    strcpy(buf, arg);
    opts->nsizes = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (opts->nsizes == PB_BENCH_SIZES_MAX || parse_size(tok, &opts->sizes[opts->nsizes]) != 0)
            return -1;
        opts->nsizes++;
    }
    return opts->nsizes > 0 ? 0 : -1;
}

static void print_usage(FILE *f, const char *prog, const char *what, const char *example)
{
    fprintf(f,
            "Usage: %s [options]\n"
            "%s\n"
            "\n"
            "Options:\n"
            "  --json FILE        append one JSON line per measurement to FILE\n"
            "  --quick            fewer sizes and shorter measurements\n"
            "  --sizes a,b,c      measure only these sizes (bytes; K, M, G suffixes)\n"
            "  --max-size N       largest size to measure (bytes; K, M, G suffixes)\n"
            "  --reps-cap-ms N    time spent on one figure, in ms (default %.0f, quick %.0f)\n"
            "  --no-probe         skip the cache-line probes around each measurement\n"
            "  --help             show this help\n"
            "\n"
            "Each figure is the median over timed samples (each the mean of a batch).\n"
            "probe_before/probe_after are the raw cache-line ping-pong half round trip\n"
            "(ns) just before and after; compare figures only within one probe state.\n"
            "\n"
            "Example:\n"
            "  %s\n",
            prog, what, REPS_CAP_MS_DEFAULT, REPS_CAP_MS_QUICK, example);
}

int pb_bench_opts_parse(pb_bench_opts_t *opts, int argc, char **argv, const char *what,
                        const char *example)
{
    static const struct option longopts[] = {
        {"json", required_argument, NULL, 'j'},
        {"quick", no_argument, NULL, 'q'},
        {"sizes", required_argument, NULL, 's'},
        {"max-size", required_argument, NULL, 'm'},
        {"reps-cap-ms", required_argument, NULL, 'r'},
        {"no-probe", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *prog = argc > 0 ? argv[0] : "bench";
    bool cap_set = false;
    char *end;
    int c;

    memset(opts, 0, sizeof(*opts));
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': opts->json_path = optarg; break;
        case 'q': opts->quick = true; break;
        case 's':
            if (parse_size_list(optarg, opts) != 0) {
                fprintf(stderr, "%s: bad --sizes '%s' (want e.g. 8,64,4K)\n", prog, optarg);
                return -1;
            }
            break;
        case 'm':
            if (parse_size(optarg, &opts->max_size) != 0 || opts->max_size == 0) {
                fprintf(stderr, "%s: bad --max-size '%s' (want e.g. 1M)\n", prog, optarg);
                return -1;
            }
            break;
        case 'r':
            errno = 0;
            opts->reps_cap_ms = strtod(optarg, &end);
            if (errno != 0 || *end != '\0' || !(opts->reps_cap_ms > 0.0)) {
                fprintf(stderr, "%s: bad --reps-cap-ms '%s' (want ms > 0)\n", prog, optarg);
                return -1;
            }
            cap_set = true;
            break;
        case 'n': opts->no_probe = true; break;
        case 'h': print_usage(stdout, prog, what, example); return 1;
        default:
            fprintf(stderr, "%s: unknown or incomplete option '%s'\n", prog, argv[optind - 1]);
            print_usage(stderr, prog, what, example);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, argv[optind]);
        return -1;
    }
    if (!cap_set)
        opts->reps_cap_ms = opts->quick ? REPS_CAP_MS_QUICK : REPS_CAP_MS_DEFAULT;
    return 0;
}

unsigned pb_bench_sizes_make(const pb_bench_opts_t *opts, size_t lo, size_t hi, size_t step,
                             size_t quick_step, size_t *sizes)
{
    unsigned n = 0;

    if (opts->max_size != 0 && opts->max_size < hi)
        hi = opts->max_size;
    if (opts->nsizes > 0) {
        for (unsigned i = 0; i < opts->nsizes; i++)
            if (opts->sizes[i] >= lo && opts->sizes[i] <= hi)
                sizes[n++] = opts->sizes[i];
        return n;
    }
    if (opts->quick)
        step = quick_step;
    for (size_t s = lo; s <= hi && n < PB_BENCH_SIZES_MAX; s *= step) {
        sizes[n++] = s;
        if (s > hi / step)
            break;
    }
    if (n > 0 && sizes[n - 1] != hi && n < PB_BENCH_SIZES_MAX)
        sizes[n++] = hi;
    return n;
}

/* ---- statistics and collectors ----------------------------------------- */

void pb_bench_stats_from_samples(double *v, unsigned n, uint64_t iters, pb_bench_stats_t *st)
{
    st->median = median_of(v, n);
    st->min = v[0];
    st->max = v[n - 1];
    st->reps = n;
    st->iters = iters;
}

void pb_bench_stats_scale(pb_bench_stats_t *st, double factor)
{
    st->median *= factor;
    st->min *= factor;
    st->max *= factor;
}

void pb_bench_stats_to_bandwidth(pb_bench_stats_t *st, size_t bytes)
{
    /* B/ns * 1000 = MB/s with MB = 10^6 B */
    double b = (double)bytes * 1000.0;
    double slowest = st->max;

    st->median = b / st->median;
    st->max = b / st->min;
    st->min = b / slowest;
}

/* Choose samples (at most SAMPLES_TARGET) and the iterations averaged in
 * each, for ops of @per_ns each, within the cap. */
static void plan_samples(const pb_bench_opts_t *opts, double per_ns, unsigned *nsamp_p,
                         uint64_t *batch_p)
{
    double cap_ns = opts->reps_cap_ms * 1e6;
    double batch = cap_ns / (SAMPLES_TARGET * (per_ns > 1.0 ? per_ns : 1.0));
    double n;

    if (batch >= 1.0) {
        *nsamp_p = SAMPLES_TARGET;
        *batch_p = batch > 1e9 ? 1000000000u : (uint64_t)batch;
        return;
    }
    n = cap_ns / per_ns;
    *nsamp_p = n < SAMPLES_MIN ? SAMPLES_MIN : (unsigned)n;
    *batch_p = 1;
}

int pb_bench_sample_run(const pb_bench_opts_t *opts, pb_bench_op_func_t op, void *arg,
                        pb_bench_stats_t *st)
{
    return pb_bench_sample_run_prep(opts, op, NULL, arg, st);
}

/* How one sample is taken: @prep (if any) then @op timed here, or @timed
 * timing itself. */
typedef struct {
    pb_bench_op_func_t op, prep;
    pb_bench_timed_op_func_t timed;
    void *arg;
} sampler_t;

/* One call of the sampler's operation; *@t_p receives its ns. */
static int timed_call(const sampler_t *s, uint64_t iters, uint64_t *t_p)
{
    uint64_t t0;
    int ret;

    if (s->timed != NULL)
        return s->timed(s->arg, iters, t_p);
    if (s->prep != NULL && (ret = s->prep(s->arg, iters)) != 0)
        return ret;
    t0 = pb_bench_time_now();
    ret = s->op(s->arg, iters);
    *t_p = pb_bench_time_now() - t0;
    return ret;
}

/* Warm-up, cost estimate, then the planned samples (see engine.h). */
static int sample_run(const pb_bench_opts_t *opts, const sampler_t *s, pb_bench_stats_t *st)
{
    double cap_ns = opts->reps_cap_ms * 1e6;
    double v[SAMPLES_TARGET];
    uint64_t t0, t, batch;
    unsigned nsamp, k = 0;
    int ret;

    /* warm-up: single iterations for ~2% of the cap, at least three */
    t0 = pb_bench_time_now();
    do {
        ret = timed_call(s, 1, &t);
        if (ret != 0)
            return ret;
        k++;
    } while (k < 3 || (k < 100000 && (double)(pb_bench_time_now() - t0) < cap_ns / 50));

    /* estimate the cost of one iteration from a batch lasting ~1% of the cap */
    for (batch = 1;; batch *= 2) {
        ret = timed_call(s, batch, &t);
        if (ret != 0)
            return ret;
        if ((double)t >= cap_ns / 100 || batch >= (1u << 30))
            break;
    }
    plan_samples(opts, (double)t / (double)batch, &nsamp, &batch);

    for (unsigned i = 0; i < nsamp; i++) {
        ret = timed_call(s, batch, &t);
        if (ret != 0)
            return ret;
        v[i] = (double)t / (double)batch;
    }
    pb_bench_stats_from_samples(v, nsamp, batch, st);
    return 0;
}

int pb_bench_sample_run_prep(const pb_bench_opts_t *opts, pb_bench_op_func_t op,
                             pb_bench_op_func_t prep, void *arg, pb_bench_stats_t *st)
{
    sampler_t s = {.op = op, .prep = prep, .arg = arg};

    return sample_run(opts, &s, st);
}

int pb_bench_sample_run_timed(const pb_bench_opts_t *opts, pb_bench_timed_op_func_t op, void *arg,
                              pb_bench_stats_t *st)
{
    sampler_t s = {.timed = op, .arg = arg};

    return sample_run(opts, &s, st);
}

int pb_bench_cycle_run(const pb_bench_opts_t *opts, unsigned nslots, pb_bench_cycle_func_t cycle,
                       void *arg, pb_bench_stats_t *st)
{
    double overhead = pb_bench_time_overhead();
    double *ns = NULL, *acc = NULL, *v = NULL;
    uint64_t t0, batch;
    unsigned nsamp;
    int ret;

    ns = calloc(nslots, sizeof(*ns));
    acc = calloc(nslots, sizeof(*acc));
    if (ns == NULL || acc == NULL) {
        ret = -1;
        goto out;
    }
    ret = cycle(arg, ns); /* warm-up */
    if (ret != 0)
        goto out;
    t0 = pb_bench_time_now();
    ret = cycle(arg, ns);
    if (ret != 0)
        goto out;
    plan_samples(opts, (double)(pb_bench_time_now() - t0), &nsamp, &batch);

    v = calloc((size_t)nslots * nsamp, sizeof(*v));
    if (v == NULL) {
        ret = -1;
        goto out;
    }
    for (unsigned s = 0; s < nsamp; s++) {
        memset(acc, 0, nslots * sizeof(*acc));
        for (uint64_t b = 0; b < batch; b++) {
            ret = cycle(arg, ns);
            if (ret != 0)
                goto out;
            for (unsigned j = 0; j < nslots; j++)
                acc[j] += ns[j];
        }
        for (unsigned j = 0; j < nslots; j++) {
            double x = acc[j] / (double)batch - overhead;
            v[(size_t)j * nsamp + s] = x > 0.0 ? x : 0.0;
        }
    }
    for (unsigned j = 0; j < nslots; j++)
        pb_bench_stats_from_samples(v + (size_t)j * nsamp, nsamp, batch, &st[j]);
out:
    free(v);
    free(acc);
    free(ns);
    return ret;
}

/* ---- raw probe ---------------------------------------------------------- */

/*
 * Shared page of the probe, one 64-byte line per writer:
 *
 *   line 0  ctl   futex word: the parent bumps it to wake the helper;
 *                 PROBE_CTL_EXIT set asks it to exit
 *   line 1  ping  written by the parent (sequence number)
 *   line 2  pong  written by the helper (echo of ping)
 *
 * A ping with PROBE_STOP set sends the helper back to sleep after it echoes.
 */
typedef struct {
    _Alignas(64) _Atomic uint32_t ctl;
    _Alignas(64) _Atomic uint64_t ping;
    _Alignas(64) _Atomic uint64_t pong;
} probe_shm_t;

#define PROBE_CTL_EXIT 0x80000000u
#define PROBE_STOP (UINT64_C(1) << 63)
/* a parent waiting this long for an echo gives up: the helper is gone */
#define PROBE_TIMEOUT_NS 2000000000u
#define PROBE_BATCHES 7
#define PROBE_BATCH_NS 1000000u

static probe_shm_t *probe_shm;
static pid_t probe_pid = -1;
static pid_t probe_owner = -1;
static uint64_t probe_seq;
static bool probe_active;

static void futex_wait_u32(_Atomic uint32_t *addr, uint32_t val)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake_u32(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static _Noreturn void probe_helper_main(probe_shm_t *shm)
{
    uint32_t seen = 0;

    for (;;) {
        /* acquire: pairs with the parent's release bump of ctl */
        uint32_t c = atomic_load_explicit(&shm->ctl, memory_order_acquire);
        uint64_t last;

        if (c == seen) {
            futex_wait_u32(&shm->ctl, seen);
            continue;
        }
        seen = c;
        if (c & PROBE_CTL_EXIT)
            _exit(0);
        last = atomic_load_explicit(&shm->pong, memory_order_relaxed);
        for (;;) {
            uint64_t v = atomic_load_explicit(&shm->ping, memory_order_acquire);

            if (v == last)
                continue;
            /* release: the echo is the only data; keeps the pair ordered */
            atomic_store_explicit(&shm->pong, v, memory_order_release);
            last = v;
            if (v & PROBE_STOP)
                break;
        }
    }
}

/* The helper measures a cache line's trip to another core: a parent bound
 * to one CPU (postbox run --bind-to core) would leave it that CPU alone,
 * so it takes the others the machine has.  When it cannot, the probe
 * times out and says so. */
static void probe_helper_leave_parent_cpu(void)
{
    cpu_set_t mine, others;
    long online = sysconf(_SC_NPROCESSORS_ONLN);

    if (sched_getaffinity(0, sizeof(mine), &mine) != 0 || CPU_COUNT(&mine) != 1 || online < 2)
        return;
    CPU_ZERO(&others);
    for (long c = 0; c < online && c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET((int)c, &mine))
            CPU_SET((int)c, &others);
    }
    if (CPU_COUNT(&others) > 0)
        (void)sched_setaffinity(0, sizeof(others), &others);
}

int pb_bench_probe_init(void)
{
    pid_t parent = getpid();
    void *p;

    p = mmap(NULL, sizeof(probe_shm_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("bench probe: mmap");
        return -1;
    }
    probe_shm = p;
    fflush(NULL); /* the child must not repeat buffered output */
    probe_pid = fork();
    if (probe_pid < 0) {
        perror("bench probe: fork");
        munmap(p, sizeof(probe_shm_t));
        probe_shm = NULL;
        return -1;
    }
    if (probe_pid == 0) {
        /* die with the parent, even if it died before prctl took effect */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(1);
        probe_helper_leave_parent_cpu();
        probe_helper_main(probe_shm);
    }
    probe_owner = parent;
    return 0;
}

void pb_bench_probe_fini(void)
{
    if (probe_pid <= 0 || getpid() != probe_owner)
        return;
    pb_bench_probe_stop();
    atomic_fetch_or_explicit(&probe_shm->ctl, PROBE_CTL_EXIT, memory_order_release);
    futex_wake_u32(&probe_shm->ctl);
    waitpid(probe_pid, NULL, 0);
    munmap(probe_shm, sizeof(probe_shm_t));
    probe_shm = NULL;
    probe_pid = -1;
}

/* Send @v and wait for its echo; -1 if none comes within the timeout. */
static int probe_roundtrip(uint64_t v)
{
    uint64_t t0 = 0;
    unsigned spins = 0;

    /* release: nothing else is published; keeps each ping after the last echo */
    atomic_store_explicit(&probe_shm->ping, v, memory_order_release);
    while (atomic_load_explicit(&probe_shm->pong, memory_order_acquire) != v) {
        if (++spins % 4096 != 0)
            continue;
        if (t0 == 0)
            t0 = pb_bench_time_now();
        else if (pb_bench_time_now() - t0 > PROBE_TIMEOUT_NS)
            return -1;
        if (spins >= 1u << 20)
            sched_yield(); /* the helper may be waiting for our core */
    }
    return 0;
}

int pb_bench_probe_start(void)
{
    if (probe_pid <= 0 || getpid() != probe_owner)
        return -1;
    if (probe_active)
        return 0;
    /* release: the helper reads ping/pong only after seeing the bump */
    atomic_fetch_add_explicit(&probe_shm->ctl, 1, memory_order_release);
    futex_wake_u32(&probe_shm->ctl);
    probe_active = true;
    return 0;
}

void pb_bench_probe_stop(void)
{
    if (!probe_active)
        return;
    probe_roundtrip(++probe_seq | PROBE_STOP);
    probe_active = false;
}

int pb_bench_probe_op(void *arg, uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++)
        if (probe_roundtrip(++probe_seq) != 0)
            return -1;
    return 0;
}

double pb_bench_probe_measure(void)
{
    double v[PROBE_BATCHES];

    if (pb_bench_probe_start() != 0)
        return -1.0;
    /* the first round trips pay for the helper's wake-up */
    if (pb_bench_probe_op(NULL, 256) != 0)
        goto fail;
    for (unsigned b = 0; b < PROBE_BATCHES; b++) {
        uint64_t t0 = pb_bench_time_now(), t;
        uint64_t n = 0;

        do {
            if (pb_bench_probe_op(NULL, 64) != 0)
                goto fail;
            n += 64;
            t = pb_bench_time_now() - t0;
        } while (t < PROBE_BATCH_NS);
        v[b] = (double)t / (double)(2 * n);
    }
    pb_bench_probe_stop();
    return median_of(v, PROBE_BATCHES);
fail:
    probe_active = false;
    fprintf(stderr, "bench probe: the helper stopped answering\n");
    return -1.0;
}

/* ---- records, tables and JSON lines ------------------------------------ */

static pb_bench_extra_t *extra_slot(pb_bench_record_t *rec, const char *key)
{
    for (unsigned i = 0; i < PB_BENCH_EXTRA_MAX; i++)
        if (rec->extra[i].key == NULL || strcmp(rec->extra[i].key, key) == 0) {
            rec->extra[i].key = key;
            return &rec->extra[i];
        }
    return NULL;
}

int pb_bench_record_add_str(pb_bench_record_t *rec, const char *key, const char *value)
{
    pb_bench_extra_t *e = extra_slot(rec, key);

    if (e == NULL)
        return -1;
    e->kind = PB_BENCH_EXTRA_STR;
    e->str = value;
    return 0;
}

int pb_bench_record_add_num(pb_bench_record_t *rec, const char *key, double value)
{
    pb_bench_extra_t *e = extra_slot(rec, key);

    if (e == NULL)
        return -1;
    e->kind = PB_BENCH_EXTRA_NUM;
    e->num = value;
    return 0;
}

int pb_bench_record_add_bool(pb_bench_record_t *rec, const char *key, bool value)
{
    pb_bench_extra_t *e = extra_slot(rec, key);

    if (e == NULL)
        return -1;
    e->kind = PB_BENCH_EXTRA_BOOL;
    e->num = value ? 1.0 : 0.0;
    return 0;
}

bool pb_bench_record_settled(const pb_bench_record_t *rec)
{
    double a = rec->probe_before, b = rec->probe_after;

    if (rec->mixed_states || !(a > 0.0) || !(b > 0.0))
        return false;
    return a <= 1.5 * b && b <= 1.5 * a;
}

const char *pb_bench_record_state(const pb_bench_record_t *rec)
{
    if (!(rec->probe_before > 0.0) || !(rec->probe_after > 0.0))
        return "unknown";
    if (rec->probe_before < PB_BENCH_PROBE_FAST_NS && rec->probe_after < PB_BENCH_PROBE_FAST_NS)
        return "fast";
    return "slow";
}

int pb_bench_out_open(pb_bench_out_t *out, const pb_bench_opts_t *opts)
{
    memset(out, 0, sizeof(*out));
    if (gethostname(out->host, sizeof(out->host)) != 0)
        strcpy(out->host, "unknown");
    out->host[sizeof(out->host) - 1] = '\0';
    if (opts->json_path != NULL) {
        out->json = fopen(opts->json_path, "a");
        if (out->json == NULL) {
            fprintf(stderr, "cannot open %s for appending: %s\n", opts->json_path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

void pb_bench_out_close(pb_bench_out_t *out)
{
    if (out->json != NULL)
        fclose(out->json);
    out->json = NULL;
}

static void json_string(FILE *f, const char *key, const char *s)
{
    fprintf(f, "\"%s\": \"", key);
    for (; s != NULL && *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, const char *key, double v)
{
    if (isfinite(v) && v > -1e15 && v < 1e15 && v == (double)(long long)v)
        fprintf(f, ", \"%s\": %.0f", key, v); /* whole numbers exactly (sizes, counts) */
    else if (isfinite(v))
        fprintf(f, ", \"%s\": %.6g", key, v);
    else
        fprintf(f, ", \"%s\": null", key);
}

static void json_probe(FILE *f, const char *key, double v)
{
    if (v > 0.0)
        fprintf(f, ", \"%s\": %.1f", key, v);
    else
        fprintf(f, ", \"%s\": null", key);
}

static void record_write_json(FILE *f, const char *host, const pb_bench_record_t *rec)
{
    char stamp[32];
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);

    fputc('{', f);
    json_string(f, "suite", rec->suite);
    fputs(", ", f);
    json_string(f, "test", rec->test);
    fputs(", ", f);
    json_string(f, "library", rec->library);
    fputs(", ", f);
    json_string(f, "transport", rec->transport);
    fputs(", ", f);
    json_string(f, "placement", rec->placement);
    fprintf(f, ", \"ranks\": %d, \"nodes\": %d, \"pairs\": %d, \"size\": %zu, ", rec->ranks,
            rec->nodes, rec->pairs, rec->size);
    json_string(f, "metric", rec->metric);
    fputs(", ", f);
    json_string(f, "unit", rec->unit);
    json_number(f, "median", rec->stats.median);
    json_number(f, "min", rec->stats.min);
    json_number(f, "max", rec->stats.max);
    fprintf(f, ", \"reps\": %u, \"iters\": %llu", rec->stats.reps,
            (unsigned long long)rec->stats.iters);
    json_probe(f, "probe_before", rec->probe_before);
    json_probe(f, "probe_after", rec->probe_after);
    fprintf(f, ", \"settled\": %s, ", pb_bench_record_settled(rec) ? "true" : "false");
    json_string(f, "state", pb_bench_record_state(rec));
    fputs(", ", f);
    json_string(f, "host", host);
    fputs(", ", f);
    json_string(f, "timestamp", stamp);
    if (rec->note != NULL) {
        fputs(", ", f);
        json_string(f, "note", rec->note);
    }
    for (unsigned i = 0; i < PB_BENCH_EXTRA_MAX && rec->extra[i].key != NULL; i++) {
        const pb_bench_extra_t *e = &rec->extra[i];

        if (e->kind == PB_BENCH_EXTRA_NUM) {
            json_number(f, e->key, e->num);
            continue;
        }
        fputs(", ", f);
        if (e->kind == PB_BENCH_EXTRA_STR)
            json_string(f, e->key, e->str);
        else
            fprintf(f, "\"%s\": %s", e->key, e->num != 0.0 ? "true" : "false");
    }
    fputs("}\n", f);
}

/* A value in a 10-character column, with precision to suit its magnitude. */
static void print_value(double v)
{
    if (!isfinite(v))
        printf(" %10s", "-");
    else if (v >= 1000.0)
        printf(" %10.0f", v);
    else if (v >= 10.0)
        printf(" %10.1f", v);
    else if (v >= 1.0)
        printf(" %10.2f", v);
    else
        printf(" %10.3f", v);
}

void pb_bench_table_begin(pb_bench_out_t *out, const char *title, const char *unit)
{
    char h[3][32];

    snprintf(h[0], sizeof(h[0]), "median[%s]", unit);
    snprintf(h[1], sizeof(h[1]), "min[%s]", unit);
    snprintf(h[2], sizeof(h[2]), "max[%s]", unit);
    printf("\n== %s\n", title);
    printf("%-34s %10s %10s %10s %10s %5s %9s %9s %-5s %s\n", "test", "size[B]", h[0], h[1], h[2],
           "reps", "pre[ns]", "post[ns]", "state", "settled");
    out->table_open = true;
}

void pb_bench_record_emit(pb_bench_out_t *out, const pb_bench_record_t *rec)
{
    if (out->json != NULL) {
        record_write_json(out->json, out->host, rec);
        fflush(out->json);
    }
    if (!out->table_open)
        return;
    printf("%-34s %10zu", rec->test, rec->size);
    print_value(rec->stats.median);
    print_value(rec->stats.min);
    print_value(rec->stats.max);
    printf(" %5u", rec->stats.reps);
    if (rec->probe_before > 0.0 && rec->probe_after > 0.0)
        printf(" %9.1f %9.1f", rec->probe_before, rec->probe_after);
    else
        printf(" %9s %9s", "-", "-");
    printf(" %-5s %s%s%s\n", pb_bench_record_state(rec),
           pb_bench_record_settled(rec) ? "yes" : "no", rec->note != NULL ? "  " : "",
           rec->note != NULL ? rec->note : "");
    fflush(stdout);
}

/* ---- acceptance ratios from interleaved pairs -------------------------- */

unsigned pb_bench_ratio_pairs(const pb_bench_opts_t *opts)
{
    return opts->quick ? PB_BENCH_RATIO_PAIRS_QUICK : PB_BENCH_RATIO_PAIRS;
}

/* Whether two probes were both measured and agree within a factor of 1.5. */
static bool probes_settled(double x, double y)
{
    return x > 0.0 && y > 0.0 && x <= 1.5 * y && y <= 1.5 * x;
}

/* Whether a probe says the fast core-to-core state. */
static bool probe_fast(double x)
{
    return x > 0.0 && x < PB_BENCH_PROBE_FAST_NS;
}

/* Settled pairs whose two halves share one state; 1 fast, 0 slow, -1 none. */
static int pair_state(const pb_bench_ratio_pair_t *p)
{
    bool fa = probe_fast(p->p0) && probe_fast(p->p1);
    bool fb = probe_fast(p->p1) && probe_fast(p->p2);

    if (!probes_settled(p->p0, p->p1) || !probes_settled(p->p1, p->p2) || fa != fb)
        return -1;
    return fa ? 1 : 0;
}

/* Median of @n values of @v (left in place), with their min and max. */
static double median_copy(const double *v, unsigned n, double *min_p, double *max_p)
{
    double w[PB_BENCH_RATIO_PAIRS];
    pb_bench_stats_t st;

    memcpy(w, v, n * sizeof(*w));
    pb_bench_stats_from_samples(w, n, 1, &st);
    *min_p = st.min;
    *max_p = st.max;
    return st.median;
}

void pb_bench_ratio_make(const pb_bench_opts_t *opts, const char *what_a, const char *what_b,
                         const char *unit_ab, const pb_bench_ratio_pair_t *p, unsigned n,
                         double target, bool at_most, pb_bench_record_t *rec, char *note)
{
    unsigned count[2] = {0, 0};
    double r[PB_BENCH_RATIO_PAIRS], pre[PB_BENCH_RATIO_PAIRS], post[PB_BENCH_RATIO_PAIRS], lo, hi;
    int state;
    unsigned k = 0;

    printf("\n%s = %s / %s\n", rec->test, what_a, what_b);
    for (unsigned i = 0; i < n; i++) {
        int s = pair_state(&p[i]);

        if (s >= 0)
            count[s]++;
        printf("  pair %u: %10.3f / %10.3f %s = %7.3f", i + 1, p[i].a, p[i].b, unit_ab, p[i].ratio);
        if (opts->no_probe)
            printf("  (no probes)\n");
        else
            printf("  probes %.1f %.1f %.1f ns  %s\n", p[i].p0, p[i].p1, p[i].p2,
                   s < 0 ? "unsettled or mixed" : (s ? "fast" : "slow"));
    }
    state = count[0] + count[1] == 0 ? -1 : (count[1] >= count[0] ? 1 : 0);
    for (unsigned i = 0; i < n; i++) {
        if (state >= 0 && pair_state(&p[i]) != state)
            continue;
        r[k] = p[i].ratio;
        pre[k] = p[i].p0;
        post[k] = p[i].p2;
        k++;
    }
    if (opts->no_probe) {
        snprintf(note, PB_BENCH_RATIO_NOTE_LEN, "all %u pairs, no probes: states unknown", n);
        rec->mixed_states = true;
    } else if (state < 0) {
        snprintf(note, PB_BENCH_RATIO_NOTE_LEN,
                 "no settled same-state pair: all %u pairs, states mixed", n);
        rec->mixed_states = true;
    } else {
        snprintf(note, PB_BENCH_RATIO_NOTE_LEN, "%u of %u pairs, settled, state %s", k, n,
                 state ? "fast" : "slow");
    }
    rec->stats.median = median_copy(r, k, &rec->stats.min, &rec->stats.max);
    rec->stats.reps = k;
    rec->stats.iters = 1;
    rec->probe_before = median_copy(pre, k, &lo, &hi);
    rec->probe_after = median_copy(post, k, &lo, &hi);
    rec->note = note;
    printf("  => %.3f x (%s); target %s %.2f: %s\n", rec->stats.median, note,
           at_most ? "<=" : ">=", target,
           (at_most ? rec->stats.median <= target : rec->stats.median >= target) ? "met"
                                                                                 : "NOT met");
}
