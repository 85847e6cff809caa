/*
 * mpi_coll: collective bench of any MPI library (suite "coll").
 *
 * Written to the standard MPI C API only, so that every library's own mpicc
 * builds it (Postbox's postbox-cc, MPICH, Open MPI), together with the bench
 * engine (engine.c).  Every rank runs the same list of figures (a test at a
 * size), decided by the command line alone; rank 0 writes the results.
 *
 * The conventions are the Intel MPI Benchmarks' (IMB-MPI1, IMB-NBC):
 *   - size is the bytes of one rank's block (Gather, Scatter, Allgather; for
 *     Alltoall the block to each rank) or of the whole vector (Bcast, the
 *     reductions; Reduce_scatter the vector before it is scattered); the
 *     reductions reduce MPI_FLOAT with MPI_SUM (size / 4 floats); the -v
 *     forms move what their plain forms move; roots rotate with the call;
 *   - t_min / t_max / t_avg: over the ranks, of each rank's mean time per
 *     call;
 *   - the nonblocking collectives: t_pure (start and wait), t_ovrl (start,
 *     compute for about t_pure, wait), t_cpu (that computation alone) and
 *     overlap = 100 * max(0, min(1, (t_pure + t_cpu - t_ovrl) / min(t_pure,
 *     t_cpu))) percent.
 * Beyond IMB: every call is timed on its own, after one and the same
 * barrier for every library (--sync: by default the bench's own
 * dissemination barrier of zero-byte MPI_Sendrecv on a communicator of its
 * own, so a library's MPI_Barrier does not shape its other figures); every
 * call's send buffer changes before the call (one word in each 64-byte line
 * gets a new value, so no rank reads lines left in its cache by the call
 * before); the number of calls adapts to the time a call takes (at most
 * --reps-cap-ms per figure, between CALLS_MIN and CALLS_MAX calls).  The
 * record's median, min and max are over the calls of the per-call time
 * averaged over the ranks.
 *
 * On one node (all ranks in one MPI_COMM_TYPE_SHARED communicator, the
 * on-node path) the test floor_barrier measures, the same way, the node's
 * floor for a barrier, a barrier of bare flags: each rank stores its count
 * of calls in its own cache line of an MPI_Win_allocate_shared window and
 * waits until every line holds it, with bare loads (as the bench's raw
 * probes) where the cores are enough for the ranks, yielding the CPU after
 * each look where the ranks outnumber them; no MPI call inside.  It is
 * what a barrier costs with no library around it (one store and one
 * cache-line trip per rank and, where ranks outnumber the cores, the
 * context switches), beside which each library's MPI_Barrier is read; not
 * a strict bound, as the kernel may move the ranks between the two.
 *
 * The nonblocking collectives are built only with -DHAVE_NBC (the runner
 * sets it after a test link with the library's mpicc: a library may lack
 * them).  Rank 0 also measures, while the other ranks sleep, two machine
 * references: one 4 MB memcpy and one 4 MB float vector add (a[i] += b[i]).
 *
 * Unless --no-check, one more call of every figure runs with patterned data
 * (small integers, whose float sums are exact) and every rank verifies its
 * result; a mismatch is printed and the figure is not recorded.
 */
#include <mpi.h>

#include "engine.h"
#include "mpi_common.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_SYNC 201
#define TAG_GATE 202

#define CALLS_MIN 4    /* timed calls of a figure, at least */
#define CALLS_MAX 1000 /* and at most (IMB's default) */
#define LINE 64        /* one stamp per LINE bytes of a send buffer */
#define IDLE_POLL_NS 200000
#define PROBE_SLOW_NS 200000000 /* a probe normally takes ~10 ms */
#define SIZE_MAX_DEFAULT ((size_t)4 << 20)
#define REF_BYTES ((size_t)4 << 20) /* the machine references' size */
#define REF_REPS 21
#define REPS_CAP_MS_DEFAULT 150.0
#define REPS_CAP_MS_QUICK 25.0
#define GIVE_UP_MS_DEFAULT 2000.0
#define GIVE_UP_MS_QUICK 250.0
#define MPI_COLL_DONE "# mpi_coll: done, status" /* rank 0's last line */
#define FLOOR_LINE 128 /* floor_barrier: each rank's line, a prefetched pair of lines apart */

enum coll {
    C_BARRIER,
    C_FLOOR_BARRIER,
    C_BCAST,
    C_REDUCE,
    C_ALLREDUCE,
    C_GATHER,
    C_GATHERV,
    C_SCATTER,
    C_SCATTERV,
    C_ALLGATHER,
    C_ALLGATHERV,
    C_ALLTOALL,
    C_ALLTOALLV,
    C_REDUCE_SCATTER,
    C_REDUCE_SCATTER_BLOCK,
    C_SCAN,
    C_EXSCAN,
    C_IBARRIER,
    C_IBCAST,
    C_IREDUCE,
    C_IALLREDUCE,
    C_IALLGATHER,
    C_IALLTOALL,
    NCOLL
};

/* Which sizes a test measures in the quick profile. */
enum quick_set {
    Q_NONE, /* barriers: size 0 only */
    Q_GRID, /* the acceptance grid's sizes, and 4 B */
    Q_PART, /* Q_GRID and the blocks m / ranks of Bcast(m) <= Scatter + Allgather */
    Q_FEW,  /* 4 MB: the large size of seed 001's Table 2 */
    Q_NBC   /* 8 B, 1 MB */
};

typedef struct {
    const char *name;
    enum coll op;
    bool reduction; /* MPI_FLOAT, MPI_SUM; otherwise MPI_BYTE */
    bool nbc;       /* nonblocking: needs HAVE_NBC */
    enum quick_set quick;
    const char *what;
} test_t;

static const test_t tests[] = {
    {"barrier", C_BARRIER, false, false, Q_NONE, "MPI_Barrier"},
    {"floor_barrier", C_FLOOR_BARRIER, false, false, Q_NONE,
     "the node's floor: a barrier of bare flags in a shared window, no MPI call (one node)"},
    {"bcast", C_BCAST, false, false, Q_GRID, "MPI_Bcast, root rotating"},
    {"reduce", C_REDUCE, true, false, Q_GRID, "MPI_Reduce, float sum, root rotating"},
    {"allreduce", C_ALLREDUCE, true, false, Q_GRID, "MPI_Allreduce, float sum"},
    {"gather", C_GATHER, false, false, Q_GRID, "MPI_Gather, size per rank, root rotating"},
    {"gatherv", C_GATHERV, false, false, Q_FEW, "MPI_Gatherv, size per rank"},
    {"scatter", C_SCATTER, false, false, Q_PART, "MPI_Scatter, size per rank, root rotating"},
    {"scatterv", C_SCATTERV, false, false, Q_FEW, "MPI_Scatterv, size per rank"},
    {"allgather", C_ALLGATHER, false, false, Q_PART, "MPI_Allgather, size per rank"},
    {"allgatherv", C_ALLGATHERV, false, false, Q_FEW, "MPI_Allgatherv, size per rank"},
    {"alltoall", C_ALLTOALL, false, false, Q_GRID, "MPI_Alltoall, size to each rank"},
    {"alltoallv", C_ALLTOALLV, false, false, Q_FEW, "MPI_Alltoallv, size to each rank"},
    {"reduce_scatter", C_REDUCE_SCATTER, true, false, Q_FEW,
     "MPI_Reduce_scatter, float sum, size before scattering"},
    {"reduce_scatter_block", C_REDUCE_SCATTER_BLOCK, true, false, Q_FEW,
     "MPI_Reduce_scatter_block, float sum, size before scattering"},
    {"scan", C_SCAN, true, false, Q_FEW, "MPI_Scan, float sum"},
    {"exscan", C_EXSCAN, true, false, Q_FEW, "MPI_Exscan, float sum"},
    {"ibarrier", C_IBARRIER, false, true, Q_NONE, "MPI_Ibarrier + MPI_Wait"},
    {"ibcast", C_IBCAST, false, true, Q_NBC, "MPI_Ibcast + MPI_Wait, root rotating"},
    {"ireduce", C_IREDUCE, true, true, Q_NONE, "MPI_Ireduce + MPI_Wait, float sum"},
    {"iallreduce", C_IALLREDUCE, true, true, Q_NBC, "MPI_Iallreduce + MPI_Wait, float sum"},
    {"iallgather", C_IALLGATHER, false, true, Q_NONE, "MPI_Iallgather + MPI_Wait"},
    {"ialltoall", C_IALLTOALL, false, true, Q_NBC, "MPI_Ialltoall + MPI_Wait"},
};

#define NTESTS (sizeof(tests) / sizeof(tests[0]))

static const size_t quick_grid[] = {4, 8, 1024, 65536, 1048576, 4194304};
static const size_t quick_part[] = {4,      8,      1024,    16384,   65536,
                                    262144, 524288, 1048576, 2097152, 4194304};
static const size_t quick_few[] = {4194304};
static const size_t quick_nbc[] = {8, 1048576};

enum sync_kind {
    SYNC_DISSEMINATION,
    SYNC_MPI_BARRIER,
    SYNC_NONE
};
static const char *const sync_names[] = {"dissemination", "mpi_barrier", "none"};

/* One figure's buffers and counts, the same on every rank. */
typedef struct {
    const test_t *t;
    size_t size;
    int count;         /* elements of the size (bytes, or floats) */
    int block;         /* elements of one rank's block (reduce_scatter_block) */
    char *send, *recv; /* send and receive buffers */
    size_t sbytes, rbytes;
    int *counts, *displs; /* the -v forms and reduce_scatter, one per rank */
    unsigned failures;    /* failed checks on this rank */
} fig_t;

static struct {
    pb_bench_opts_t opts;
    pb_mpi_bench_t b; /* what the records describe, the job's shape */
    int ranks, rank;
    bool nbc, refs;
    enum sync_kind sync;
    MPI_Comm sync_comm; /* the bench's own barrier runs here */
    bool selected[NTESTS];
    double probe_last;  /* rank 0: the probe of the last gate */
    bool cap_given;     /* --reps-cap-ms on the command line */
    double give_up_ms;  /* a longer warm-up call ends the test */
    bool probe_stopped; /* rank 0: a probe was too slow, no more of them */
    MPI_Win floor_win;  /* floor_barrier's lines (MPI_WIN_NULL: not on one node) */
    char *floor_lines;
    uint64_t floor_step;
    int floor_yields; /* the ranks outnumber the cores: a waiting rank yields */
} g = {.b = PB_MPI_BENCH_INIT("mpi_coll"),
       .refs = true,
       .sync = SYNC_DISSEMINATION,
       .probe_last = -1.0,
       .floor_win = MPI_WIN_NULL};

/* ---- helpers ------------------------------------------------------------ */

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};

    nanosleep(&ts, NULL);
}

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "mpi_coll: rank %d: %s\n", g.rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void *alloc_touched(size_t bytes)
{
    void *p = NULL;

    if (posix_memalign(&p, 4096, bytes > 0 ? bytes : 64) != 0)
        die("out of memory");
    memset(p, 0, bytes > 0 ? bytes : 64);
    return p;
}

/* Wait for a zero-byte message from rank 0 on the sync communicator without
 * spinning a core (rank 0 may be measuring the probe or a reference). */
static void gate_wait(void)
{
    int flag = 0;

    for (;;) {
        MPI_Iprobe(0, TAG_GATE, g.sync_comm, &flag, MPI_STATUS_IGNORE);
        if (flag)
            break;
        sleep_ns(IDLE_POLL_NS);
    }
    MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_GATE, g.sync_comm, MPI_STATUS_IGNORE);
}

/* Between figures: rank 0 measures the probe while the others sleep, then
 * lets them go.  Without probes nothing happens.  A probe that takes far
 * longer than its ~10 ms (its helper shares a core with a spinning process)
 * is the last of the run: the rest of the records have none. */
static void gate(void)
{
    uint64_t t0;

    if (g.opts.no_probe)
        return;
    if (g.rank != 0) {
        gate_wait();
        return;
    }
    if (g.probe_stopped) {
        g.probe_last = -1.0;
    } else {
        t0 = pb_bench_time_now();
        g.probe_last = pb_bench_probe_measure();
        if (pb_bench_time_now() - t0 > PROBE_SLOW_NS) {
            g.probe_stopped = true;
            printf("# mpi_coll: a probe took %.0f ms (its helper waits for a core); no more "
                   "probes in this run\n",
                   (double)(pb_bench_time_now() - t0) * 1e-6);
        }
    }
    for (int r = 1; r < g.ranks; r++)
        MPI_Send(NULL, 0, MPI_BYTE, r, TAG_GATE, g.sync_comm);
}

/* The barrier before every timed call: the same for every library. */
static void sync_ranks(void)
{
    switch (g.sync) {
    case SYNC_DISSEMINATION:
        /* round k: send to rank + 2^k, receive from rank - 2^k */
        for (int dist = 1; dist < g.ranks; dist <<= 1) {
            int to = (g.rank + dist) % g.ranks, from = (g.rank - dist + g.ranks) % g.ranks;

            MPI_Sendrecv(NULL, 0, MPI_BYTE, to, TAG_SYNC, NULL, 0, MPI_BYTE, from, TAG_SYNC,
                         g.sync_comm, MPI_STATUS_IGNORE);
        }
        break;
    case SYNC_MPI_BARRIER: MPI_Barrier(g.sync_comm); break;
    case SYNC_NONE: break;
    }
}

/* ---- the node's floor for a barrier -------------------------------------- */

static _Atomic uint64_t *floor_line(int rank)
{
    return (_Atomic uint64_t *)(void *)(g.floor_lines + (size_t)rank * FLOOR_LINE);
}

/* Make floor_barrier's window when every rank is on this node and the run
 * takes the on-node path (collective over MPI_COMM_WORLD); else leave it
 * unmade.  @return a line to print on rank 0 saying why, or NULL. */
static const char *floor_setup(void)
{
    MPI_Comm node;
    MPI_Aint bytes;
    int node_ranks, disp_unit, rc;

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_ranks);
    MPI_Comm_free(&node);
    if (node_ranks != g.ranks || g.b.nodes != 1 || strcmp(g.b.path, "on-node") != 0)
        return "the ranks are not on one node, or the run takes the network path";
    /* a library that cannot make the window leaves the test out, not the run */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Win_allocate_shared(g.rank == 0 ? (MPI_Aint)g.ranks * FLOOR_LINE : 0, 1, MPI_INFO_NULL,
                                 MPI_COMM_WORLD, &g.floor_lines, &g.floor_win);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rc != MPI_SUCCESS) {
        g.floor_win = MPI_WIN_NULL;
        return "MPI_Win_allocate_shared failed";
    }
    MPI_Win_shared_query(g.floor_win, 0, &bytes, &disp_unit, &g.floor_lines);
    g.floor_yields = g.b.host_ranks > g.b.cores; /* known on rank 0 */
    MPI_Bcast(&g.floor_yields, 1, MPI_INT, 0, g.sync_comm);
    if (g.rank == 0) {
        for (int r = 0; r < g.ranks; r++)
            atomic_store_explicit(floor_line(r), 0, memory_order_relaxed);
    }
    atomic_thread_fence(memory_order_seq_cst);
    MPI_Barrier(g.sync_comm);
    return NULL;
}

static void floor_free(void)
{
    if (g.floor_win != MPI_WIN_NULL)
        MPI_Win_free(&g.floor_win);
}

/* Publish this rank's count of calls, then wait for every rank's. */
static void floor_barrier(void)
{
    uint64_t step = ++g.floor_step;

    atomic_store_explicit(floor_line(g.rank), step, memory_order_release);
    for (int r = 0; r < g.ranks; r++) {
        while (atomic_load_explicit(floor_line(r), memory_order_acquire) < step) {
            if (g.floor_yields)
                sched_yield();
        }
    }
}

/* ---- figures: buffers, calls, checks ------------------------------------ */

static size_t elem_size(const test_t *t)
{
    return t->reduction ? sizeof(float) : 1;
}

static void fig_setup(fig_t *f, const test_t *t, size_t size)
{
    size_t es = elem_size(t), p = (size_t)g.ranks;

    memset(f, 0, sizeof(*f));
    f->t = t;
    f->size = size;
    f->count = (int)(size / es);
    f->block = f->count / g.ranks;
    f->counts = calloc(p, sizeof(int));
    f->displs = calloc(p, sizeof(int));
    if (f->counts == NULL || f->displs == NULL)
        die("out of memory");
    for (int r = 0; r < g.ranks; r++) {
        f->counts[r] = f->count;
        f->displs[r] = r * f->count;
    }
    switch (t->op) {
    case C_BARRIER:
    case C_FLOOR_BARRIER:
    case C_IBARRIER: break;
    case C_BCAST:
    case C_IBCAST:
    case C_REDUCE:
    case C_IREDUCE:
    case C_ALLREDUCE:
    case C_IALLREDUCE:
    case C_SCAN:
    case C_EXSCAN: f->sbytes = f->rbytes = (size_t)f->count * es; break;
    case C_GATHER:
    case C_GATHERV:
    case C_ALLGATHER:
    case C_ALLGATHERV:
    case C_IALLGATHER:
        f->sbytes = (size_t)f->count;
        f->rbytes = (size_t)f->count * p;
        break;
    case C_SCATTER:
    case C_SCATTERV:
        f->sbytes = (size_t)f->count * p;
        f->rbytes = (size_t)f->count;
        break;
    case C_ALLTOALL:
    case C_ALLTOALLV:
    case C_IALLTOALL: f->sbytes = f->rbytes = (size_t)f->count * p; break;
    case C_REDUCE_SCATTER:
        /* the vector split as evenly as it goes, the first ranks one more */
        for (int r = 0, off = 0; r < g.ranks; r++) {
            f->counts[r] = f->count / g.ranks + (r < f->count % g.ranks);
            f->displs[r] = off;
            off += f->counts[r];
        }
        f->sbytes = (size_t)f->count * es;
        f->rbytes = (size_t)f->counts[g.rank] * es;
        break;
    case C_REDUCE_SCATTER_BLOCK:
        f->sbytes = (size_t)f->block * p * es;
        f->rbytes = (size_t)f->block * es;
        break;
    case NCOLL: break;
    }
    f->send = alloc_touched(f->sbytes);
    f->recv = alloc_touched(f->rbytes);
}

static void fig_teardown(fig_t *f)
{
    free(f->send);
    free(f->recv);
    free(f->counts);
    free(f->displs);
}

/* A new value in every 64-byte line of the send buffer before each call. */
static void stamp(fig_t *f, uint64_t call)
{
    if (f->t->reduction) {
        float v = (float)((call + (uint64_t)g.rank) & 63);

        for (size_t off = 0; off + sizeof(float) <= f->sbytes; off += LINE)
            memcpy(f->send + off, &v, sizeof(v));
    } else {
        unsigned char v = (unsigned char)(call * 7 + (uint64_t)g.rank);

        for (size_t off = 0; off < f->sbytes; off += LINE)
            f->send[off] = (char)v;
    }
}

/* Start (nonblocking) or make (blocking) the call of @f with @root. */
static void coll_call(fig_t *f, int root, MPI_Request *req)
{
    MPI_Comm w = MPI_COMM_WORLD;
    char *s = f->send, *r = f->recv;
    int n = f->count;

    *req = MPI_REQUEST_NULL;
    switch (f->t->op) {
    case C_BARRIER: MPI_Barrier(w); break;
    case C_FLOOR_BARRIER: floor_barrier(); break;
    case C_BCAST:
        /* the root sends its send buffer, the others receive into theirs */
        MPI_Bcast(g.rank == root ? s : r, n, MPI_BYTE, root, w);
        break;
    case C_REDUCE: MPI_Reduce(s, r, n, MPI_FLOAT, MPI_SUM, root, w); break;
    case C_ALLREDUCE: MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, w); break;
    case C_GATHER: MPI_Gather(s, n, MPI_BYTE, r, n, MPI_BYTE, root, w); break;
    case C_GATHERV: MPI_Gatherv(s, n, MPI_BYTE, r, f->counts, f->displs, MPI_BYTE, root, w); break;
    case C_SCATTER: MPI_Scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, root, w); break;
    case C_SCATTERV:
        MPI_Scatterv(s, f->counts, f->displs, MPI_BYTE, r, n, MPI_BYTE, root, w);
        break;
    case C_ALLGATHER: MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, w); break;
    case C_ALLGATHERV: MPI_Allgatherv(s, n, MPI_BYTE, r, f->counts, f->displs, MPI_BYTE, w); break;
    case C_ALLTOALL: MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, w); break;
    case C_ALLTOALLV:
        MPI_Alltoallv(s, f->counts, f->displs, MPI_BYTE, r, f->counts, f->displs, MPI_BYTE, w);
        break;
    case C_REDUCE_SCATTER: MPI_Reduce_scatter(s, r, f->counts, MPI_FLOAT, MPI_SUM, w); break;
    case C_REDUCE_SCATTER_BLOCK:
        MPI_Reduce_scatter_block(s, r, f->block, MPI_FLOAT, MPI_SUM, w);
        break;
    case C_SCAN: MPI_Scan(s, r, n, MPI_FLOAT, MPI_SUM, w); break;
    case C_EXSCAN: MPI_Exscan(s, r, n, MPI_FLOAT, MPI_SUM, w); break;
#ifdef HAVE_NBC
    case C_IBARRIER: MPI_Ibarrier(w, req); break;
    case C_IBCAST: MPI_Ibcast(g.rank == root ? s : r, n, MPI_BYTE, root, w, req); break;
    case C_IREDUCE: MPI_Ireduce(s, r, n, MPI_FLOAT, MPI_SUM, root, w, req); break;
    case C_IALLREDUCE: MPI_Iallreduce(s, r, n, MPI_FLOAT, MPI_SUM, w, req); break;
    case C_IALLGATHER: MPI_Iallgather(s, n, MPI_BYTE, r, n, MPI_BYTE, w, req); break;
    case C_IALLTOALL: MPI_Ialltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, w, req); break;
#else
    case C_IBARRIER:
    case C_IBCAST:
    case C_IREDUCE:
    case C_IALLREDUCE:
    case C_IALLGATHER:
    case C_IALLTOALL: die("built without the nonblocking collectives (HAVE_NBC)");
#endif
    case NCOLL: break;
    }
}

/* @n calls of @f, each after the sync barrier, each timed: ns in @t[i]
 * (start to completion).  With @work_ns > 0 (nonblocking tests), the call
 * is started, the rank computes for @work_ns, then waits; @cpu_ns receives
 * the sum of the computing spans; @wall_ns (when not NULL) the mean time of
 * one iteration with its stamp and barrier. */
static void run_calls(fig_t *f, unsigned n, uint64_t *seq, double *t, uint64_t work_ns,
                      double *cpu_ns, double *wall_ns)
{
    double cpu = 0.0;
    uint64_t start = pb_bench_time_now();

    for (unsigned i = 0; i < n; i++) {
        int root = (int)(*seq % (uint64_t)g.ranks);
        MPI_Request req;
        uint64_t t0, t1;

        stamp(f, *seq);
        ++*seq;
        sync_ranks();
        t0 = pb_bench_time_now();
        coll_call(f, root, &req);
        if (work_ns > 0)
            cpu += (double)pb_mpi_bench_compute_for(work_ns);
        if (req != MPI_REQUEST_NULL)
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        t1 = pb_bench_time_now();
        t[i] = (double)(t1 - t0);
    }
    if (cpu_ns != NULL)
        *cpu_ns = cpu;
    if (wall_ns != NULL)
        *wall_ns = (double)(pb_bench_time_now() - start) / n;
}

/* ---- checked calls ------------------------------------------------------ */

/* The byte rank @src sends to rank @dst at index @i in check @seq. */
static unsigned char pat_byte(uint64_t seq, int src, int dst, size_t i)
{
    return (unsigned char)(seq * 13 + (uint64_t)src * 31 + (uint64_t)dst * 17 + i * 7 + (i >> 8));
}

/* The float rank @src contributes at index @i in check @seq: a small
 * integer, so sums over up to thousands of ranks are exact. */
static float pat_float(uint64_t seq, int src, size_t i)
{
    return (float)((seq + (uint64_t)src * 3 + i * 5) % 16);
}

/* The sum over ranks @lo..@hi-1 of pat_float at @i. */
static float pat_sum(uint64_t seq, int lo, int hi, size_t i)
{
    float s = 0.0f;

    for (int r = lo; r < hi; r++)
        s += pat_float(seq, r, i);
    return s;
}

static void check_fill(fig_t *f, uint64_t seq, int root)
{
    const test_t *t = f->t;
    size_t n = (size_t)f->count;

    if (t->reduction) {
        float *s = (float *)(void *)f->send, *r = (float *)(void *)f->recv;

        for (size_t i = 0; i < f->sbytes / sizeof(float); i++)
            s[i] = pat_float(seq, g.rank, i);
        for (size_t i = 0; i < f->rbytes / sizeof(float); i++)
            r[i] = -1.0f;
        return;
    }
    memset(f->recv, 0xA5, f->rbytes);
    switch (t->op) {
    case C_BCAST:
    case C_IBCAST:
        for (size_t i = 0; i < n; i++)
            f->send[i] = (char)pat_byte(seq, root, 0, i);
        /* non-roots receive into recv: scribbled above */
        break;
    case C_GATHER:
    case C_GATHERV:
    case C_ALLGATHER:
    case C_ALLGATHERV:
    case C_IALLGATHER:
        for (size_t i = 0; i < n; i++)
            f->send[i] = (char)pat_byte(seq, g.rank, 0, i);
        break;
    case C_SCATTER:
    case C_SCATTERV:
    case C_ALLTOALL:
    case C_ALLTOALLV:
    case C_IALLTOALL:
        for (int d = 0; d < g.ranks; d++)
            for (size_t i = 0; i < n; i++)
                f->send[(size_t)d * n + i] = (char)pat_byte(seq, g.rank, d, i);
        break;
    default: break;
    }
}

static bool check_byte(fig_t *f, const char *where, size_t off, unsigned char want)
{
    unsigned char got = (unsigned char)where[off];

    if (got == want)
        return true;
    fprintf(stderr,
            "mpi_coll: check failed: %s size %zu: rank %d byte %zu = 0x%02x (expected "
            "0x%02x)\n",
            f->t->name, f->size, g.rank, off, got, want);
    f->failures++;
    return false;
}

static bool check_float(fig_t *f, size_t i, float got, float want)
{
    if (got == want)
        return true;
    fprintf(stderr, "mpi_coll: check failed: %s size %zu: rank %d element %zu = %g (expected %g)\n",
            f->t->name, f->size, g.rank, i, (double)got, (double)want);
    f->failures++;
    return false;
}

/* Verify this rank's result of the checked call; stops at the first
 * mismatch (counted in f->failures). */
static void check_verify(fig_t *f, uint64_t seq, int root)
{
    size_t n = (size_t)f->count;
    const float *r = (const float *)(const void *)f->recv;

    switch (f->t->op) {
    case C_BCAST:
    case C_IBCAST:
        if (g.rank != root)
            for (size_t i = 0; i < n; i++)
                if (!check_byte(f, f->recv, i, pat_byte(seq, root, 0, i)))
                    return;
        break;
    case C_GATHER:
    case C_GATHERV:
        if (g.rank != root)
            break;
        /* the root holds every block, as after an allgather */
        /* fall through */
    case C_ALLGATHER:
    case C_ALLGATHERV:
    case C_IALLGATHER:
        for (int s = 0; s < g.ranks; s++)
            for (size_t i = 0; i < n; i++)
                if (!check_byte(f, f->recv, (size_t)s * n + i, pat_byte(seq, s, 0, i)))
                    return;
        break;
    case C_SCATTER:
    case C_SCATTERV:
        for (size_t i = 0; i < n; i++)
            if (!check_byte(f, f->recv, i, pat_byte(seq, root, g.rank, i)))
                return;
        break;
    case C_ALLTOALL:
    case C_ALLTOALLV:
    case C_IALLTOALL:
        for (int s = 0; s < g.ranks; s++)
            for (size_t i = 0; i < n; i++)
                if (!check_byte(f, f->recv, (size_t)s * n + i, pat_byte(seq, s, g.rank, i)))
                    return;
        break;
    case C_REDUCE:
    case C_IREDUCE:
        if (g.rank != root)
            break;
        /* fall through */
    case C_ALLREDUCE:
    case C_IALLREDUCE:
        for (size_t i = 0; i < n; i++)
            if (!check_float(f, i, r[i], pat_sum(seq, 0, g.ranks, i)))
                return;
        break;
    case C_REDUCE_SCATTER:
    case C_REDUCE_SCATTER_BLOCK: {
        size_t mine = f->rbytes / sizeof(float);
        size_t off = f->t->op == C_REDUCE_SCATTER ? (size_t)f->displs[g.rank]
                                                  : (size_t)g.rank * (size_t)f->block;

        for (size_t i = 0; i < mine; i++)
            if (!check_float(f, off + i, r[i], pat_sum(seq, 0, g.ranks, off + i)))
                return;
        break;
    }
    case C_SCAN:
        for (size_t i = 0; i < n; i++)
            if (!check_float(f, i, r[i], pat_sum(seq, 0, g.rank + 1, i)))
                return;
        break;
    case C_EXSCAN:
        /* rank 0's result is undefined */
        for (size_t i = 0; g.rank > 0 && i < n; i++)
            if (!check_float(f, i, r[i], pat_sum(seq, 0, g.rank, i)))
                return;
        break;
    case C_BARRIER:
    case C_FLOOR_BARRIER:
    case C_IBARRIER:
    case NCOLL: break;
    }
}

/* One call with patterned data, verified on every rank; returns the
 * failures summed over the ranks (the same on every rank). */
static int check_figure(fig_t *f, uint64_t *seq)
{
    uint64_t s = ++*seq;
    int root = (int)(s % (uint64_t)g.ranks), mine, all = 0;
    MPI_Request req;

    check_fill(f, s, root);
    sync_ranks();
    coll_call(f, root, &req);
    if (req != MPI_REQUEST_NULL)
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    check_verify(f, s, root);
    mine = (int)f->failures;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, g.sync_comm);
    return all;
}

/* ---- measuring a figure ------------------------------------------------- */

typedef struct {
    double t_min, t_max, t_avg; /* IMB: over the ranks of each rank's mean, ns */
    pb_bench_stats_t per_call;  /* over the calls of the mean over the ranks, ns */
} timing_t;

/* The calls of one figure: the mean per rank, and per call the mean over
 * the ranks (rank 0 gets the statistics). */
static void summarize(const double *t, unsigned n, timing_t *out)
{
    double mean = 0.0, *means = NULL, *all = NULL;

    if (g.rank == 0) {
        means = malloc((size_t)g.ranks * sizeof(double));
        all = malloc(n * sizeof(double));
        if (means == NULL || all == NULL)
            die("out of memory");
    }
    for (unsigned i = 0; i < n; i++)
        mean += t[i];
    mean /= n;
    /* two operations only: a slow library pays for each */
    MPI_Gather(&mean, 1, MPI_DOUBLE, means, 1, MPI_DOUBLE, 0, g.sync_comm);
    MPI_Reduce(t, all, (int)n, MPI_DOUBLE, MPI_SUM, 0, g.sync_comm);
    if (g.rank != 0)
        return;
    out->t_min = out->t_max = means[0];
    out->t_avg = 0.0;
    for (int r = 0; r < g.ranks; r++) {
        out->t_min = means[r] < out->t_min ? means[r] : out->t_min;
        out->t_max = means[r] > out->t_max ? means[r] : out->t_max;
        out->t_avg += means[r] / g.ranks;
    }
    for (unsigned i = 0; i < n; i++)
        all[i] /= g.ranks;
    pb_bench_stats_from_samples(all, n, 1, &out->per_call);
    free(all);
    free(means);
}

/* How many calls fit in the time cap when one takes @wall_ns with its
 * stamp and barrier (the slowest rank's: the same on every rank). */
static unsigned plan_calls(double wall_ns)
{
    double calls = wall_ns > 0.0 ? g.opts.reps_cap_ms * 1e6 / wall_ns : CALLS_MAX;

    return calls < CALLS_MIN ? CALLS_MIN : calls > CALLS_MAX ? CALLS_MAX : (unsigned)calls;
}

static void record_common(pb_bench_record_t *rec, const fig_t *f, const timing_t *tm,
                          unsigned calls)
{
    pb_mpi_bench_record_identity(rec, &g.b);
    pb_bench_record_add_bool(rec, "checked", g.b.check);
    pb_bench_record_add_str(rec, "sync", sync_names[g.sync]);
    pb_bench_record_add_str(rec, "datatype", f->t->reduction ? "MPI_FLOAT" : "MPI_BYTE");
    pb_bench_record_add_num(rec, "count", f->count);
    pb_bench_record_add_num(rec, "t_min", tm->t_min * 1e-3);
    pb_bench_record_add_num(rec, "t_max", tm->t_max * 1e-3);
    pb_bench_record_add_num(rec, "t_avg", tm->t_avg * 1e-3);
    pb_bench_record_add_num(rec, "calls", calls);
}

static void print_row(const fig_t *f, unsigned calls, const timing_t *tm, const char *more)
{
    printf("%12zu %8u %12.2f %12.2f %12.2f %12.2f%s\n", f->size, calls, tm->t_min * 1e-3,
           tm->t_max * 1e-3, tm->t_avg * 1e-3, tm->per_call.median * 1e-3, more);
    fflush(stdout);
}

/* Measure one figure (every rank) and, on rank 0, emit its record.  When
 * the warm-up call takes longer than --give-up-ms on some rank, that call
 * is the record (gave_up: true) and *@gave_up_p is set: the caller skips
 * the test's larger sizes.  Returns 0, or 1 when a check failed. */
static int figure(pb_bench_out_t *out, const test_t *t, size_t size, uint64_t *seq, bool *gave_up_p)
{
    fig_t f;
    timing_t tm = {0}, ovl = {0};
    double est[1], *times, wall = 0.0, cpu_ns = 0.0, cpu_all = 0.0, target = 0.0, warm = 0.0;
    unsigned calls = 1;
    int failures = 0;
    bool gave_up;
    double before;

    before = g.probe_last;
    fig_setup(&f, t, size);
    run_calls(&f, 1, seq, est, 0, NULL, &wall); /* warm-up */
    {
        double mine[2] = {est[0], wall}, worst[2] = {0.0, 0.0};

        MPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, g.sync_comm);
        warm = worst[0];
        wall = worst[1];
    }
    gave_up = warm > g.give_up_ms * 1e6;
    if (!gave_up) {
        /* the estimate: the shorter of two calls.  A figure's first call
         * may set things up (a library's first collective on a
         * communicator, its first message of a size), and sizing the
         * figure by it alone left some figures at CALLS_MIN calls of that
         * start-up */
        double again = 0.0, worst_again = 0.0;

        run_calls(&f, 1, seq, est, 0, NULL, &again);
        MPI_Allreduce(&again, &worst_again, 1, MPI_DOUBLE, MPI_MAX, g.sync_comm);
        if (worst_again < wall)
            wall = worst_again;
    }
    if (gave_up) {
        summarize(est, 1, &tm);
    } else {
        calls = plan_calls(wall);
        if (t->nbc)
            calls = calls / 2 > CALLS_MIN ? calls / 2 : CALLS_MIN; /* two phases */
        times = malloc(calls * sizeof(double));
        if (times == NULL)
            die("out of memory");
        run_calls(&f, calls, seq, times, 0, NULL, NULL);
        summarize(times, calls, &tm);
        if (t->nbc) {
            double mean = 0.0;

            /* compute for the pure time, averaged over the ranks: the same
             * work on every rank */
            for (unsigned i = 0; i < calls; i++)
                mean += times[i];
            mean /= calls;
            MPI_Allreduce(&mean, &target, 1, MPI_DOUBLE, MPI_SUM, g.sync_comm);
            target /= g.ranks;
            run_calls(&f, calls, seq, times, (uint64_t)target + 1, &cpu_ns, NULL);
            summarize(times, calls, &ovl);
            cpu_ns /= calls;
            MPI_Reduce(&cpu_ns, &cpu_all, 1, MPI_DOUBLE, MPI_SUM, 0, g.sync_comm);
            cpu_all /= g.ranks;
        }
        free(times);
        if (g.b.check)
            failures = check_figure(&f, seq);
    }
    *gave_up_p = gave_up;
    fig_teardown(&f);
    gate(); /* the probe after; it is the next figure's probe before */
    if (g.rank != 0)
        return failures > 0;
    if (failures > 0) {
        fprintf(stderr, "mpi_coll: %s at %zu B: %d rank(s) got wrong results; not recorded\n",
                t->name, size, failures);
        return 1;
    }

    pb_bench_record_t rec = {
        .suite = "coll",
        .test = t->name,
        .library = g.b.library,
        .transport = g.b.transport,
        .placement = g.b.placement,
        .ranks = g.ranks,
        .nodes = g.b.nodes,
        .pairs = 1,
        .size = size,
        .metric = "latency",
        .unit = "us",
        .stats = tm.per_call,
        .probe_before = before,
    };
    char more[160] = "";

    rec.stats.reps = calls;
    pb_bench_stats_scale(&rec.stats, 1e-3);
    record_common(&rec, &f, &tm, calls);
    if (gave_up) {
        pb_bench_record_add_bool(&rec, "gave_up", true);
        snprintf(more, sizeof(more), "  gave up: one call took %.1f ms (> --give-up-ms %g)",
                 warm * 1e-6, g.give_up_ms);
    } else if (t->nbc) {
        /* IMB-NBC's overlap from the means over the ranks */
        double pure = tm.t_avg, ovrl = ovl.t_avg, cpu = cpu_all;
        double lo = pure < cpu ? pure : cpu, overlap = 0.0;

        if (lo > 0.0) {
            overlap = (pure + cpu - ovrl) / lo;
            overlap = overlap < 0.0 ? 0.0 : overlap > 1.0 ? 1.0 : overlap;
        }
        pb_bench_record_add_num(&rec, "t_ovrl", ovrl * 1e-3);
        pb_bench_record_add_num(&rec, "t_cpu", cpu * 1e-3);
        pb_bench_record_add_num(&rec, "overlap", 100.0 * overlap);
        snprintf(more, sizeof(more), " %12.2f %12.2f %8.1f", ovrl * 1e-3, cpu * 1e-3,
                 100.0 * overlap);
    }
    rec.probe_after = g.probe_last;
    print_row(&f, calls, &tm, more);
    pb_bench_record_emit(out, &rec);
    return 0;
}

/* ---- machine references (rank 0, the others asleep) --------------------- */

static void vector_add(float *restrict a, const float *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] += b[i];
}

static void reference_record(pb_bench_out_t *out, const char *test, double *ns, double before,
                             const char *what)
{
    pb_bench_record_t rec = {
        .suite = "coll",
        .test = test,
        .library = g.b.library,
        .transport = g.b.transport,
        .placement = g.b.placement,
        .ranks = g.ranks,
        .nodes = g.b.nodes,
        .pairs = 1,
        .size = REF_BYTES,
        .metric = "latency",
        .unit = "us",
        .probe_before = before,
        .note = what,
    };

    pb_bench_stats_from_samples(ns, REF_REPS, 1, &rec.stats);
    pb_bench_stats_scale(&rec.stats, 1e-3);
    rec.probe_after = g.opts.no_probe ? -1.0 : pb_bench_probe_measure();
    pb_bench_record_add_str(&rec, "library_version", g.b.version);
    pb_bench_record_add_str(&rec, "path", g.b.path);
    pb_bench_record_add_bool(&rec, "oversubscribed", pb_mpi_bench_oversubscribed(&g.b));
    printf("%-16s %12zu %8d %12.2f (median us; min %.2f, max %.2f)\n", test, (size_t)REF_BYTES,
           REF_REPS, rec.stats.median, rec.stats.min, rec.stats.max);
    pb_bench_record_emit(out, &rec);
}

/* One 4 MB memcpy and one 4 MB float vector add, timed one by one on rank
 * 0, REF_REPS times each (warm buffers, as an application's). */
static void references(pb_bench_out_t *out)
{
    char *a = alloc_touched(REF_BYTES), *b = alloc_touched(REF_BYTES);
    float *x = (float *)(void *)a, *y = (float *)(void *)b;
    size_t n = REF_BYTES / sizeof(float);
    double ns[REF_REPS], before;

    before = g.opts.no_probe ? -1.0 : pb_bench_probe_measure();
    memset(b, 1, REF_BYTES);
    memcpy(a, b, REF_BYTES);
    for (int i = 0; i < REF_REPS; i++) {
        uint64_t t0 = pb_bench_time_now();

        memcpy(a, b, REF_BYTES);
        ns[i] = (double)(pb_bench_time_now() - t0);
        b[(size_t)i * 4096 % REF_BYTES]++; /* the source changes too */
    }
    printf("\n# coll machine references (rank 0 alone, the other ranks asleep)\n");
    reference_record(out, "ref_memcpy", ns, before, "one 4 MB memcpy between warm buffers");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i & 7), y[i] = 0.5f;
    vector_add(x, y, n);
    before = g.opts.no_probe ? -1.0 : pb_bench_probe_measure();
    for (int i = 0; i < REF_REPS; i++) {
        uint64_t t0 = pb_bench_time_now();

        vector_add(x, y, n);
        ns[i] = (double)(pb_bench_time_now() - t0);
    }
    reference_record(out, "ref_vector_add", ns, before,
                     "one 4 MB float vector add a[i] += b[i] (warm buffers)");
    free(a);
    free(b);
}

/* ---- the run ------------------------------------------------------------ */

/* The sizes @t measures: --sizes when given; else 0 and the powers of two
 * to 4 MB, or under --quick the test's short list; barriers size 0 only. */
static unsigned test_sizes(const test_t *t, size_t *sizes)
{
    const size_t *list = t->quick == Q_GRID   ? quick_grid
                         : t->quick == Q_PART ? quick_part
                         : t->quick == Q_FEW  ? quick_few
                                              : quick_nbc;
    size_t len = t->quick == Q_GRID   ? sizeof(quick_grid) / sizeof(quick_grid[0])
                 : t->quick == Q_PART ? sizeof(quick_part) / sizeof(quick_part[0])
                 : t->quick == Q_FEW  ? sizeof(quick_few) / sizeof(quick_few[0])
                                      : sizeof(quick_nbc) / sizeof(quick_nbc[0]);
    unsigned n = 0;

    if (t->op == C_BARRIER || t->op == C_FLOOR_BARRIER || t->op == C_IBARRIER) {
        sizes[0] = 0;
        return 1;
    }
    if (g.opts.nsizes > 0)
        return pb_bench_sizes_make(&g.opts, 0, SIZE_MAX_DEFAULT, 2, 2, sizes);
    if (!g.opts.quick) {
        sizes[n++] = 0;
        return n + pb_bench_sizes_make(&g.opts, 1, SIZE_MAX_DEFAULT, 2, 2, sizes + n);
    }
    if (t->quick == Q_NONE)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (g.opts.max_size == 0 || list[i] <= g.opts.max_size)
            sizes[n++] = list[i];
    return n;
}

static int run_all(void)
{
    pb_bench_out_t out = {0};
    size_t sizes[PB_BENCH_SIZES_MAX + 1];
    uint64_t seq = 0;
    int status = 0;

    if (g.rank == 0) {
        if (pb_bench_out_open(&out, &g.opts) != 0)
            status = 2;
        else
            printf("# mpi_coll: library %s, %s, ranks %d (%d on this host, %d CPUs), nodes %d, "
                   "transport %s, placement %s, path %s%s%s, sync %s, check %s, nonblocking "
                   "%s\n",
                   g.b.library, g.b.version, g.ranks, g.b.host_ranks, g.b.cores, g.b.nodes,
                   g.b.transport, g.b.placement, g.b.path, g.b.path_how != NULL ? " " : "",
                   g.b.path_how != NULL ? g.b.path_how : "", sync_names[g.sync],
                   g.b.check ? "on" : "off", g.nbc ? "built" : "not built");
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, g.sync_comm);
    if (status != 0)
        return status;
    if (g.refs) {
        if (g.rank == 0) {
            references(&out);
            for (int r = 1; r < g.ranks; r++)
                MPI_Send(NULL, 0, MPI_BYTE, r, TAG_GATE, g.sync_comm);
        } else {
            gate_wait();
        }
    }
    for (unsigned i = 0; i < NTESTS; i++) {
        const char *why;

        if (tests[i].op != C_FLOOR_BARRIER || !g.selected[i])
            continue;
        why = floor_setup();
        if (why != NULL && g.rank == 0)
            printf("\n# coll floor_barrier: not measured (%s)\n", why);
    }
    gate(); /* the first figure's probe before */
    for (unsigned i = 0; i < NTESTS; i++) {
        const test_t *t = &tests[i];
        unsigned n;

        if (!g.selected[i] || (t->nbc && !g.nbc) ||
            (t->op == C_FLOOR_BARRIER && g.floor_win == MPI_WIN_NULL))
            continue;
        n = test_sizes(t, sizes);
        if (n == 0)
            continue;
        if (g.rank == 0) {
            printf("\n# coll %s (%s, %d ranks): %s\n", t->name, g.b.library, g.ranks, t->what);
            printf("%12s %8s %12s %12s %12s %12s%s\n", "#bytes", "#calls", "t_min[us]", "t_max[us]",
                   "t_avg[us]", "median[us]", t->nbc ? "    t_ovrl[us]    t_cpu[us] overlap%" : "");
        }
        for (unsigned k = 0; k < n; k++) {
            bool gave_up = false;

            if (figure(&out, t, sizes[k], &seq, &gave_up) != 0)
                status = 1;
            if (gave_up) {
                if (g.rank == 0 && k + 1 < n)
                    printf("# %s: larger sizes skipped (gave up at %zu B)\n", t->name, sizes[k]);
                break;
            }
        }
    }
    floor_free();
    if (g.rank == 0)
        pb_bench_out_close(&out);
    return status;
}

/* ---- options and main --------------------------------------------------- */

static const char what[] =
    "Collective bench of an MPI library (suite coll): every blocking collective (Barrier,\n"
    "Bcast, Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v), Alltoall(v),\n"
    "Reduce_scatter(_block), Scan, Exscan) and, when built with -DHAVE_NBC, Ibarrier, Ibcast,\n"
    "Ireduce, Iallreduce, Iallgather, Ialltoall with IMB-NBC's overlap; IMB's t_min/t_max/\n"
    "t_avg over the ranks; each call timed after the same barrier, its send buffer changed.\n"
    "Rank 0 also times one 4 MB memcpy and one 4 MB float vector add.  Rank 0 reports.\n"
    "\n"
    "Options of this program (before the common ones):\n"
    "  --library NAME     library name in the records (default: guessed from the library)\n"
    "  --transport NAME   transport in the records (default shm)\n"
    "  --placement NAME   placement in the records (default on-node)\n"
    "  --nodes N          nodes in the records (default 1)\n"
    "  --path NAME        path in the records: on-node (default) or network\n"
    "  --path-how TEXT    how the runner forced that path (record key path_how)\n"
    "  --round N          which of several runs of the same figures this is (record key round)\n"
    "  --tests a,b        only these tests (default: every one built)\n"
    "  --sync KIND        barrier before each call: dissemination (default: the bench's own,\n"
    "                     zero-byte MPI_Sendrecv), mpi_barrier (MPI_Barrier) or none\n"
    "  --give-up-ms N     a warm-up call slower than N ms (default 2000, quick 250) is the\n"
    "                     figure (gave_up: true) and the test's larger sizes are skipped\n"
    "  (--reps-cap-ms, below: in this program default 150, quick 25)\n"
    "  --no-refs          do not measure the memcpy and vector-add references\n"
    "  --no-check         do not verify the results of a checked call per figure";

/* Take this program's own options out of @argv (in place); the rest go to
 * the engine's parser.  Returns the new argc, or -1 on a bad option. */
static int own_options(int argc, char **argv)
{
    static const char *const with_arg[] = {"--tests", "--sync", "--give-up-ms"};
    const char *names[NTESTS];
    int n = 1;

    for (unsigned t = 0; t < NTESTS; t++) {
        g.selected[t] = true;
        names[t] = tests[t].name;
    }
    for (int i = 1; i < argc; i++) {
        const char *val = NULL;
        int found = pb_mpi_bench_option(&g.b, argc, argv, &i);
        unsigned k = 0;

        if (found < 0)
            return -1;
        if (found > 0)
            continue;
        if (strncmp(argv[i], "--reps-cap-ms", 13) == 0)
            g.cap_given = true; /* the engine parses it */
        if (strcmp(argv[i], "--no-refs") == 0) {
            g.refs = false;
            continue;
        }
        found = pb_mpi_bench_option_in("mpi_coll", with_arg, sizeof(with_arg) / sizeof(with_arg[0]),
                                       argc, argv, &i, &k, &val);
        if (found < 0)
            return -1;
        if (found == 0) {
            argv[n++] = argv[i];
            continue;
        }
        switch (k) {
        case 0:
            if (pb_mpi_bench_select("mpi_coll", val, names, NTESTS, g.selected) != 0)
                return -1;
            break;
        case 1: {
            unsigned s;

            for (s = 0; s < 3 && strcmp(val, sync_names[s]) != 0; s++)
                ;
            if (s == 3) {
                fprintf(stderr, "mpi_coll: bad --sync '%s' (dissemination, mpi_barrier or none)\n",
                        val);
                return -1;
            }
            g.sync = (enum sync_kind)s;
            break;
        }
        default: {
            char *end;

            errno = 0;
            g.give_up_ms = strtod(val, &end);
            if (errno != 0 || *end != '\0' || !(g.give_up_ms > 0.0)) {
                fprintf(stderr, "mpi_coll: bad --give-up-ms '%s' (want ms > 0)\n", val);
                return -1;
            }
            break;
        }
        }
    }
    argv[n] = NULL;
    return n;
}

int main(int argc, char **argv)
{
    int status = pb_mpi_bench_args(argc, argv, own_options, &g.opts, what,
                                   "mpiexec -n 4 mpi_coll --quick --json coll.jsonl");
    bool probing = false;

    if (status >= 0)
        return status;
    if (!g.cap_given)
        g.opts.reps_cap_ms = g.opts.quick ? REPS_CAP_MS_QUICK : REPS_CAP_MS_DEFAULT;
    if (!(g.give_up_ms > 0.0))
        g.give_up_ms = g.opts.quick ? GIVE_UP_MS_QUICK : GIVE_UP_MS_DEFAULT;
#ifdef HAVE_NBC
    g.nbc = true;
#endif
    /* the probe helper is forked before MPI_Init (some MPIs dislike fork()
     * once initialised); only rank 0 measures it */
    if (!g.opts.no_probe && !pb_mpi_bench_env_not_rank0()) {
        if (pb_bench_probe_init() == 0)
            probing = true;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.ranks);
    MPI_Comm_dup(MPI_COMM_WORLD, &g.sync_comm);
    pb_mpi_bench_identity(&g.b);
    /* every rank must agree on whether there are probes (the gates) */
    {
        int have = probing ? 1 : 0;

        MPI_Bcast(&have, 1, MPI_INT, 0, g.sync_comm);
        g.opts.no_probe = have == 0;
    }
    pb_mpi_bench_job_shape(&g.b, g.sync_comm);
    status = pb_mpi_bench_done(MPI_COLL_DONE, g.rank == 0, run_all(), g.sync_comm);
    MPI_Comm_free(&g.sync_comm);
    MPI_Finalize();
    if (probing)
        pb_bench_probe_fini();
    return status;
}
