/*
 * Postbox bench engine: the one timing library every bench program links.
 *
 * It knows nothing about RSM or MPI.  It offers
 *   - a monotonic nanosecond timer,
 *   - sample collectors: batched repetitions of one operation, and cycles of
 *     several calls timed one by one, both bounded by a time cap,
 *   - the raw probe: a cache-line ping-pong with a helper process kept alive
 *     for the whole run, measured before and after every latency figure,
 *   - one option parser, one result record, written as a terminal table and
 *     as JSON lines.
 */
#ifndef PB_BENCH_ENGINE_H
#define PB_BENCH_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- timer -------------------------------------------------------------- */

/* Nanoseconds from CLOCK_MONOTONIC_RAW (an arbitrary origin). */
uint64_t pb_bench_time_now(void);

/* Median cost of one pb_bench_time_now() call, in ns (measured once). */
double pb_bench_time_overhead(void);

/*
 * Every timed spin loop of the bench (the raw probe and the ping-pongs) is a
 * bare acquire load, without a pause instruction: a pause delays each
 * detection by its own latency (tens of cycles on recent x86), which would
 * make the raw limit look slower than the machine is.
 */

/* ---- options ------------------------------------------------------------ */

#define PB_BENCH_SIZES_MAX 64

typedef struct {
    const char *json_path;            /* --json FILE, or NULL */
    bool quick;                       /* --quick */
    size_t sizes[PB_BENCH_SIZES_MAX]; /* --sizes a,b,c */
    unsigned nsizes;                  /* 0: each test uses its default list */
    size_t max_size;                  /* --max-size N; 0: no limit */
    double reps_cap_ms;               /* --reps-cap-ms N: time cap per figure */
    bool no_probe;                    /* --no-probe */
} pb_bench_opts_t;

/*
 * Parse the options shared by every bench program.  @what is a one-line
 * description of the program for --help, @example an example command line.
 * @return 0 to go on, 1 when --help was printed (exit 0), -1 on a bad option
 * (a message was printed; exit 2).
 */
int pb_bench_opts_parse(pb_bench_opts_t *opts, int argc, char **argv, const char *what,
                        const char *example);

/*
 * Fill @sizes (room for PB_BENCH_SIZES_MAX) with the sizes a test measures:
 * @lo, @lo*@step, ... up to @hi (included), with @quick_step under --quick;
 * --max-size caps @hi.  With --sizes, the listed sizes within [@lo, @hi].
 * @return the number of sizes (may be 0).
 */
unsigned pb_bench_sizes_make(const pb_bench_opts_t *opts, size_t lo, size_t hi, size_t step,
                             size_t quick_step, size_t *sizes);

/* ---- statistics and collectors ----------------------------------------- */

typedef struct {
    double median, min, max; /* per iteration (ns, until converted) */
    unsigned reps;           /* samples taken */
    uint64_t iters;          /* iterations averaged in each sample */
} pb_bench_stats_t;

/* Median, min and max of @n values in @v (@v is reordered). */
void pb_bench_stats_from_samples(double *v, unsigned n, uint64_t iters, pb_bench_stats_t *st);

/* Multiply the median, min and max by @factor (e.g. 0.5 for half a round
 * trip, 1e-3 for ns to us). */
void pb_bench_stats_scale(pb_bench_stats_t *st, double factor);

/* Turn times in ns for @bytes each into bandwidth in MB/s (10^6 B/s); the
 * minimum bandwidth comes from the maximum time and vice versa. */
void pb_bench_stats_to_bandwidth(pb_bench_stats_t *st, size_t bytes);

/* An operation repeated @iters times back to back; returns 0, or nonzero to
 * abort the measurement (the collector returns that value). */
typedef int (*pb_bench_op_func_t)(void *arg, uint64_t iters);

/*
 * Warm @op up, then take samples, each the mean time of a batch of
 * iterations, so that the whole takes about opts->reps_cap_ms (at least 5
 * samples whatever the time).  @st receives ns per iteration.
 * @return 0 or the nonzero value @op returned.
 */
int pb_bench_sample_run(const pb_bench_opts_t *opts, pb_bench_op_func_t op, void *arg,
                        pb_bench_stats_t *st);

/*
 * pb_bench_sample_run with @prep(@arg, iters) called before every call of
 * @op (warm-up and estimate included), outside the timed span: e.g. to tell
 * a peer process how many iterations the next batch has.  @prep may be NULL;
 * a nonzero return aborts like one from @op.
 */
int pb_bench_sample_run_prep(const pb_bench_opts_t *opts, pb_bench_op_func_t op,
                             pb_bench_op_func_t prep, void *arg, pb_bench_stats_t *st);

/* An operation that times itself: @iters iterations, their duration in ns
 * in *@ns_p (e.g. the mean over the ranks of a job that each timed their
 * own part).  Returns 0, or nonzero to abort the measurement. */
typedef int (*pb_bench_timed_op_func_t)(void *arg, uint64_t iters, uint64_t *ns_p);

/*
 * pb_bench_sample_run with an operation that reports its own duration: the
 * same warm-up, estimate and samples, each sample *@ns_p / iters.  For
 * figures whose time is not the caller's own span (several pairs at once).
 * @return 0 or the nonzero value @op returned.
 */
int pb_bench_sample_run_timed(const pb_bench_opts_t *opts, pb_bench_timed_op_func_t op, void *arg,
                              pb_bench_stats_t *st);

/* One cycle of @nslots calls; stores the duration of each call in ns in
 * @ns_p[0..nslots-1] (pb_bench_time_now around each call).  Returns 0, or
 * nonzero to abort. */
typedef int (*pb_bench_cycle_func_t)(void *arg, double *ns_p);

/*
 * Repeat @cycle (one warm-up cycle first) within the time cap, and give for
 * each of the @nslots calls the statistics of its duration in ns, less the
 * timer's own cost.  Samples average over batches of cycles when a cycle is
 * short.  @st has @nslots entries.
 * @return 0 or the nonzero value @cycle returned.
 */
int pb_bench_cycle_run(const pb_bench_opts_t *opts, unsigned nslots, pb_bench_cycle_func_t cycle,
                       void *arg, pb_bench_stats_t *st);

/* ---- raw probe: cache-line ping-pong with a helper process -------------- */

/* Probes below this half round trip (ns) mark the "fast" state. */
#define PB_BENCH_PROBE_FAST_NS 80.0

/*
 * Fork the probe helper (it sleeps until pinged and dies with its parent).
 * Call before creating threads or other children.
 * @return 0, or -1 with a message printed.
 */
int pb_bench_probe_init(void);

/* Stop and reap the helper; harmless if pb_bench_probe_init failed or was
 * not called. */
void pb_bench_probe_fini(void);

/* Half round trip of the cache-line ping-pong in ns: the median of a few
 * short batches (~10 ms in all).  Returns -1 without a helper. */
double pb_bench_probe_measure(void);

/* Wake the helper so that pb_bench_probe_op can ping it; pair with
 * pb_bench_probe_stop.  Returns 0, or -1 without a helper. */
int pb_bench_probe_start(void);

/* Put the helper back to sleep. */
void pb_bench_probe_stop(void);

/* pb_bench_op_func_t doing @iters cache-line round trips with the started
 * helper (@arg unused).  Returns nonzero if the helper stops answering. */
int pb_bench_probe_op(void *arg, uint64_t iters);

/* ---- records, tables and JSON lines ------------------------------------ */

/* A key of a record beyond the common ones, written after them. */
typedef enum {
    PB_BENCH_EXTRA_STR,
    PB_BENCH_EXTRA_NUM,
    PB_BENCH_EXTRA_BOOL
} pb_bench_extra_kind_t;

typedef struct {
    const char *key; /* NULL: unused slot */
    pb_bench_extra_kind_t kind;
    const char *str; /* PB_BENCH_EXTRA_STR */
    double num;      /* PB_BENCH_EXTRA_NUM; PB_BENCH_EXTRA_BOOL: nonzero is true */
} pb_bench_extra_t;

#define PB_BENCH_EXTRA_MAX 16

typedef struct {
    const char *suite, *test, *library, *transport, *placement;
    int ranks, nodes, pairs;
    size_t size;                                /* bytes; 0 where none */
    const char *metric, *unit;                  /* e.g. "latency"/"us" */
    pb_bench_stats_t stats;                     /* in @unit */
    double probe_before, probe_after;           /* ns; negative when not measured */
    bool mixed_states;                          /* figure mixes probe states: never settled */
    const char *note;                           /* extra remark or NULL */
    pb_bench_extra_t extra[PB_BENCH_EXTRA_MAX]; /* more keys (JSON only) */
} pb_bench_record_t;

/* Add a string, number or boolean key to @rec's JSON line (the strings must
 * outlive the record).  Returns 0, or -1 when all extra slots are used. */
int pb_bench_record_add_str(pb_bench_record_t *rec, const char *key, const char *value);
int pb_bench_record_add_num(pb_bench_record_t *rec, const char *key, double value);
int pb_bench_record_add_bool(pb_bench_record_t *rec, const char *key, bool value);

/* Whether the record's probes agree within a factor of 1.5. */
bool pb_bench_record_settled(const pb_bench_record_t *rec);

/* "fast" when both probes are below PB_BENCH_PROBE_FAST_NS, "slow" when
 * measured and not fast, "unknown" without probes. */
const char *pb_bench_record_state(const pb_bench_record_t *rec);

/* Where results go: the terminal and, with --json, a JSON-lines file. */
typedef struct {
    FILE *json;    /* NULL without --json */
    char host[64]; /* this machine's name */
    bool table_open;
} pb_bench_out_t;

/* Open opts->json_path for appending (if set) and note the host name.
 * @return 0, or -1 with a message printed. */
int pb_bench_out_open(pb_bench_out_t *out, const pb_bench_opts_t *opts);

/* Flush and close the JSON file. */
void pb_bench_out_close(pb_bench_out_t *out);

/* Print a table title and a header whose value columns carry @unit. */
void pb_bench_table_begin(pb_bench_out_t *out, const char *title, const char *unit);

/* Write @rec as one JSON line (with settled, state, host, timestamp) and,
 * when a table is open, as one row of it. */
void pb_bench_record_emit(pb_bench_out_t *out, const pb_bench_record_t *rec);

/* ---- acceptance ratios from interleaved pairs -------------------------- */

#define PB_BENCH_RATIO_PAIRS 7       /* pairs measured for a ratio */
#define PB_BENCH_RATIO_PAIRS_QUICK 3 /* the same under --quick */
#define PB_BENCH_RATIO_NOTE_LEN 96

/* One interleaved pair: A measured between probes p0 and p1, B between p1
 * and p2; ratio = A / B of the figures being compared. */
typedef struct {
    double a, b, ratio;
    double p0, p1, p2;
} pb_bench_ratio_pair_t;

/* The number of pairs a ratio takes: PB_BENCH_RATIO_PAIRS, or
 * PB_BENCH_RATIO_PAIRS_QUICK under --quick. */
unsigned pb_bench_ratio_pairs(const pb_bench_opts_t *opts);

/*
 * Print the @n pairs (at most PB_BENCH_RATIO_PAIRS) of ratio rec->test,
 * A = @what_a over B = @what_b (both in @unit_ab), then set @rec's
 * statistics, probes and note from the settled pairs of the commonest probe
 * state (all pairs, marked mixed, when none is settled), and print the
 * verdict against @target (<= with @at_most, else >=).  The caller fills
 * @rec's other fields; @note (PB_BENCH_RATIO_NOTE_LEN bytes) receives the
 * remark rec->note points to.
 */
void pb_bench_ratio_make(const pb_bench_opts_t *opts, const char *what_a, const char *what_b,
                         const char *unit_ab, const pb_bench_ratio_pair_t *p, unsigned n,
                         double target, bool at_most, pb_bench_record_t *rec, char *note);

#endif /* PB_BENCH_ENGINE_H */
