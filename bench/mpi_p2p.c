/*
 * mpi_p2p: point-to-point bench of any MPI library (suite "p2p").
 *
 * Written to the standard MPI C API only, so that every library's own mpicc
 * builds it (MPICH, Open MPI, later Postbox's postbox-cc), together with the
 * bench engine (engine.c).  Rank 0 times and writes the results; rank 1
 * answers; other ranks wait for the end.
 *
 * Tests (seed 000 section V-B/V-C, IMB PingPong/PingPing, OSU bw/bibw):
 *   pingpong_standard, _synchronous, _ready, _buffered   half round trip in
 *       each send mode (MPI_Send, MPI_Ssend, MPI_Rsend, MPI_Bsend)
 *   pingpong_diffbuf    MPI_Send from a different buffer every time
 *   unidirectional      a stream of MPI_Send, one acknowledgement per batch
 *   pingping            both ranks MPI_Isend + MPI_Recv + MPI_Wait at once
 *   bandwidth_uni, bandwidth_bi   windows of MPI_Isend (and MPI_Irecv)
 *
 * Protocol between rank 0 and rank 1 (tag CTRL): FIGURE(test, size) opens a
 * figure; each BATCH(iters) is answered by a zero-byte READY once rank 1 is
 * set up (for ready mode: its receive pre-posted), then both run @iters
 * iterations; CHECK(seq) is a batch of one with patterned data that both
 * sides verify; END closes the figure and rank 1 answers with its check
 * status; QUIT ends the run.  The engine times only the iterations (its
 * prep callback sends BATCH and waits for READY outside the timed span).
 */
#include <mpi.h>

#include "engine.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_CTRL 101
#define TAG_READY 102
#define TAG_DATA 103
#define TAG_ACK 104
#define TAG_STATUS 105
#define TAG_IDLE 106

#define SIZE_MAX_DEFAULT ((size_t)4 << 20)
#define WINDOW 64                       /* OSU's default window */
#define WINDOW_BYTES ((size_t)64 << 20) /* receive slots of one window, at most */
#define POOL_BYTES ((size_t)32 << 20)   /* send buffers of the diffbuf pool */
#define POOL_MAX 1024
#define CHECKS 2            /* checked exchanges after each figure */
#define IDLE_POLL_NS 200000 /* sleep between polls while idle */

enum cmd {
    CMD_FIGURE,
    CMD_BATCH,
    CMD_CHECK,
    CMD_END,
    CMD_QUIT
};

typedef struct {
    int64_t cmd, test, size, iters, seq;
} ctrl_t;

enum kind {
    K_PINGPONG,
    K_UNIDIR,
    K_BW_UNI,
    K_BW_BI,
    K_PINGPING
};
enum mode {
    M_STANDARD,
    M_SYNC,
    M_READY,
    M_BUFFERED
};

static const char *const mode_names[] = {"standard", "synchronous", "ready", "buffered"};

typedef struct {
    const char *name;
    enum kind kind;
    enum mode mode;
    bool diffbuf;
    const char *metric, *unit;
    const char *what; /* table title */
} test_t;

static const test_t tests[] = {
    {"pingpong_standard", K_PINGPONG, M_STANDARD, false, "latency", "us",
     "half round trip, MPI_Send/MPI_Recv"},
    {"pingpong_synchronous", K_PINGPONG, M_SYNC, false, "latency", "us",
     "half round trip, MPI_Ssend/MPI_Recv"},
    {"pingpong_ready", K_PINGPONG, M_READY, false, "latency", "us",
     "half round trip, MPI_Rsend into a pre-posted MPI_Irecv"},
    {"pingpong_buffered", K_PINGPONG, M_BUFFERED, false, "latency", "us",
     "half round trip, MPI_Bsend with an attached buffer"},
    {"pingpong_diffbuf", K_PINGPONG, M_STANDARD, true, "latency", "us",
     "half round trip, MPI_Send from a different buffer each time"},
    {"unidirectional", K_UNIDIR, M_STANDARD, false, "latency", "us",
     "one-way time per message of a stream of MPI_Send, one ack per batch"},
    {"pingping", K_PINGPING, M_STANDARD, false, "latency", "us",
     "IMB PingPing: both MPI_Isend + MPI_Recv + MPI_Wait at once"},
    {"bandwidth_uni", K_BW_UNI, M_STANDARD, false, "bandwidth", "MB/s",
     "windows of MPI_Isend, one ack per window (MB = 10^6 B)"},
    {"bandwidth_bi", K_BW_BI, M_STANDARD, false, "bandwidth", "MB/s",
     "both ranks send and receive windows at once (MB = 10^6 B)"},
};

#define NTESTS (sizeof(tests) / sizeof(tests[0]))

/* One figure: a test at one size, on either rank. */
typedef struct {
    const test_t *t;
    int rank, peer;
    size_t size;
    int count;  /* size as an MPI count */
    char *send; /* npool buffers, stride apart */
    size_t stride;
    unsigned npool, next; /* diffbuf: buffer used next */
    char *recv;           /* nslots slots, slot_stride apart */
    size_t slot_stride;
    unsigned nslots, window;
    MPI_Request *reqs; /* 2 * window */
    MPI_Status *stats; /* 2 * window (a real array: some compilers warn on
                        * MPI_STATUSES_IGNORE passed for an array) */
    MPI_Request pre;   /* ready mode, rank 1: the pre-posted receive */
    char *bsend;       /* buffered mode: the attached buffer */
    int bsend_size;
    unsigned failures; /* failed checks on this rank */
} fig_t;

static struct {
    pb_bench_opts_t opts;
    const char *library, *transport, *placement;
    int nodes, ranks, rank;
    bool check;
    bool selected[NTESTS];
    char version[256]; /* first line of MPI_Get_library_version */
} g = {.transport = "shm", .placement = "on-node", .nodes = 1, .check = true};

/* ---- helpers ------------------------------------------------------------ */

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};

    nanosleep(&ts, NULL);
}

/* Wait for a message (@src, @tag) without spinning a core: the machine has
 * few cores and the probe needs one while rank 0 measures it. */
static void wait_idle(int src, int tag)
{
    int flag = 0;

    for (;;) {
        MPI_Iprobe(src, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (flag)
            return;
        sleep_ns(IDLE_POLL_NS);
    }
}

static void ctrl_send(int64_t cmd, int64_t test, int64_t size, int64_t iters, int64_t seq)
{
    ctrl_t c = {cmd, test, size, iters, seq};

    MPI_Send(&c, (int)sizeof(c), MPI_BYTE, 1, TAG_CTRL, MPI_COMM_WORLD);
}

static void *alloc_touched(size_t bytes)
{
    void *p = NULL;

    if (posix_memalign(&p, 4096, bytes > 0 ? bytes : 64) != 0) {
        fprintf(stderr, "mpi_p2p: rank %d: out of memory (%zu bytes)\n", g.rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(p, 0, bytes > 0 ? bytes : 64);
    return p;
}

/* The byte at @i of a checked message: depends on the check's sequence
 * number, the size and the sender, so stale or misplaced data shows. */
static uint8_t pattern_byte(uint64_t seq, size_t size, int src, size_t i)
{
    uint64_t base = seq * UINT64_C(0x9E3779B97F4A7C15) ^
                    (uint64_t)size * UINT64_C(0xD6E8FEB86659FD93) ^ ((uint64_t)src << 40);

    base ^= base >> 31;
    return (uint8_t)(base + i * 151u + (i >> 8) * 29u + (i >> 16) * 7u);
}

static void pattern_fill(char *buf, size_t size, uint64_t seq, int src)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = (char)pattern_byte(seq, size, src, i);
}

/* Overwrite a receive buffer with the complement of the expected bytes. */
static void pattern_scribble(char *buf, size_t size, uint64_t seq, int src)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = (char)~pattern_byte(seq, size, src, i);
}

static bool pattern_verify(const fig_t *f, const char *buf, uint64_t seq, int src, unsigned slot)
{
    for (size_t i = 0; i < f->size; i++) {
        uint8_t want = pattern_byte(seq, f->size, src, i), got = (uint8_t)buf[i];

        if (got != want) {
            fprintf(stderr,
                    "mpi_p2p: check failed: %s size %zu: rank %d received byte %zu = 0x%02x "
                    "(expected 0x%02x) in message %u of check %llu\n",
                    f->t->name, f->size, f->rank, i, got, want, slot, (unsigned long long)seq);
            return false;
        }
    }
    return true;
}

/* ---- one figure: buffers, modes, iterations ----------------------------- */

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

static void fig_setup(fig_t *f, unsigned test, size_t size)
{
    memset(f, 0, sizeof(*f));
    f->t = &tests[test];
    f->rank = g.rank;
    f->peer = 1 - g.rank;
    f->size = size;
    f->count = (int)size;
    f->stride = round_up(size, 64) + 64;
    f->npool = 1;
    if (f->t->diffbuf) {
        size_t n = POOL_BYTES / f->stride;

        f->npool = n < 2 ? 2 : n > POOL_MAX ? POOL_MAX : (unsigned)n;
    }
    f->send = alloc_touched(f->stride * f->npool);
    f->slot_stride = round_up(size > 0 ? size : 1, 64);
    f->window = 1;
    if (f->t->kind == K_BW_UNI || f->t->kind == K_BW_BI) {
        /* every receive of a window gets its own slot (concurrent receives
         * into one buffer are not legal MPI); big messages get a smaller
         * window so the slots stay within WINDOW_BYTES */
        size_t w = WINDOW_BYTES / f->slot_stride;

        f->window = w < 1 ? 1 : w > WINDOW ? WINDOW : (unsigned)w;
    }
    f->nslots = f->window;
    f->recv = alloc_touched(f->slot_stride * f->nslots);
    f->reqs = calloc(2 * (size_t)f->window, sizeof(*f->reqs));
    f->stats = calloc(2 * (size_t)f->window, sizeof(*f->stats));
    f->pre = MPI_REQUEST_NULL;
    if (f->reqs == NULL || f->stats == NULL) {
        fprintf(stderr, "mpi_p2p: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (f->t->mode == M_BUFFERED) {
        /* one message in flight each way; room for two and the overheads */
        f->bsend_size = 2 * ((int)size + MPI_BSEND_OVERHEAD) + 4096;
        f->bsend = alloc_touched((size_t)f->bsend_size);
        MPI_Buffer_attach(f->bsend, f->bsend_size);
    }
}

static void fig_teardown(fig_t *f)
{
    if (f->bsend != NULL) {
        void *addr;
        int bytes;

        MPI_Buffer_detach(&addr, &bytes); /* waits for buffered messages */
        free(f->bsend);
    }
    free(f->stats);
    free(f->reqs);
    free(f->recv);
    free(f->send);
}

/* The send buffer of the next message (rotates through the pool). */
static char *send_buf(fig_t *f, bool advance)
{
    char *b = f->send + (size_t)f->next * f->stride;

    if (advance && ++f->next == f->npool)
        f->next = 0;
    return b;
}

static void send_in_mode(const fig_t *f, const char *buf)
{
    switch (f->t->mode) {
    case M_STANDARD: MPI_Send(buf, f->count, MPI_BYTE, f->peer, TAG_DATA, MPI_COMM_WORLD); break;
    case M_SYNC: MPI_Ssend(buf, f->count, MPI_BYTE, f->peer, TAG_DATA, MPI_COMM_WORLD); break;
    case M_READY: MPI_Rsend(buf, f->count, MPI_BYTE, f->peer, TAG_DATA, MPI_COMM_WORLD); break;
    case M_BUFFERED: MPI_Bsend(buf, f->count, MPI_BYTE, f->peer, TAG_DATA, MPI_COMM_WORLD); break;
    }
}

/* Before a batch: rank 1 pre-posts its first receive in ready mode. */
static void batch_prepare(fig_t *f)
{
    if (f->t->mode == M_READY && f->rank == 1)
        MPI_Irecv(f->recv, f->count, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &f->pre);
}

static void run_pingpong(fig_t *f, uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++) {
        char *buf = send_buf(f, true);

        if (f->t->mode == M_READY) {
            if (f->rank == 0) {
                MPI_Request r;

                /* posted before the ping, so the pong may be a ready send */
                MPI_Irecv(f->recv, f->count, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &r);
                MPI_Rsend(buf, f->count, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Wait(&f->pre, MPI_STATUS_IGNORE);
                /* the pong tells rank 0 the next receive is posted */
                if (i + 1 < iters)
                    MPI_Irecv(f->recv, f->count, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &f->pre);
                MPI_Rsend(buf, f->count, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
            }
            continue;
        }
        if (f->rank == 0) {
            send_in_mode(f, buf);
            MPI_Recv(f->recv, f->count, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(f->recv, f->count, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            send_in_mode(f, buf);
        }
    }
}

static void run_iters(fig_t *f, uint64_t iters)
{
    MPI_Comm w = MPI_COMM_WORLD;
    unsigned W = f->window;

    switch (f->t->kind) {
    case K_PINGPONG: run_pingpong(f, iters); break;
    case K_UNIDIR:
        if (f->rank == 0) {
            for (uint64_t i = 0; i < iters; i++)
                MPI_Send(f->send, f->count, MPI_BYTE, 1, TAG_DATA, w);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, w, MPI_STATUS_IGNORE);
        } else {
            for (uint64_t i = 0; i < iters; i++)
                MPI_Recv(f->recv, f->count, MPI_BYTE, 0, TAG_DATA, w, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, w);
        }
        break;
    case K_BW_UNI:
        for (uint64_t i = 0; i < iters; i++) {
            if (f->rank == 0) {
                for (unsigned j = 0; j < W; j++)
                    MPI_Isend(f->send, f->count, MPI_BYTE, 1, TAG_DATA, w, &f->reqs[j]);
                MPI_Waitall((int)W, f->reqs, f->stats);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, w, MPI_STATUS_IGNORE);
            } else {
                for (unsigned j = 0; j < W; j++)
                    MPI_Irecv(f->recv + j * f->slot_stride, f->count, MPI_BYTE, 0, TAG_DATA, w,
                              &f->reqs[j]);
                MPI_Waitall((int)W, f->reqs, f->stats);
                MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, w);
            }
        }
        break;
    case K_BW_BI:
        for (uint64_t i = 0; i < iters; i++) {
            for (unsigned j = 0; j < W; j++)
                MPI_Irecv(f->recv + j * f->slot_stride, f->count, MPI_BYTE, f->peer, TAG_DATA, w,
                          &f->reqs[j]);
            for (unsigned j = 0; j < W; j++)
                MPI_Isend(f->send, f->count, MPI_BYTE, f->peer, TAG_DATA, w, &f->reqs[W + j]);
            MPI_Waitall(2 * (int)W, f->reqs, f->stats);
        }
        break;
    case K_PINGPING:
        for (uint64_t i = 0; i < iters; i++) {
            MPI_Request r;

            MPI_Isend(f->send, f->count, MPI_BYTE, f->peer, TAG_DATA, w, &r);
            MPI_Recv(f->recv, f->count, MPI_BYTE, f->peer, TAG_DATA, w, MPI_STATUS_IGNORE);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        break;
    }
}

/* Whether rank @rank receives data (not just an ack) in this test. */
static bool receives_data(const fig_t *f, int rank)
{
    return rank == 1 || (f->t->kind != K_UNIDIR && f->t->kind != K_BW_UNI);
}

/* Before a checked exchange: fill what this rank sends, spoil what it
 * receives. */
static void check_arm(fig_t *f, uint64_t seq)
{
    pattern_fill(send_buf(f, false), f->size, seq, f->rank);
    if (receives_data(f, f->rank))
        for (unsigned j = 0; j < f->nslots; j++)
            pattern_scribble(f->recv + j * f->slot_stride, f->size, seq, f->peer);
}

/* After it: verify every slot this rank received into. */
static void check_verify(fig_t *f, uint64_t seq)
{
    if (!receives_data(f, f->rank))
        return;
#ifdef MPI_P2P_INJECT_FAULT
    /* test builds only: spoil what rank 1 received, to see the check fail */
    if (f->rank == 1 && f->size > 0)
        f->recv[f->size - 1] ^= 1;
#endif
    for (unsigned j = 0; j < f->nslots; j++)
        if (!pattern_verify(f, f->recv + j * f->slot_stride, seq, f->peer, j)) {
            f->failures++;
            return;
        }
}

/* ---- rank 0: the driver ------------------------------------------------- */

static int prep0(void *arg, uint64_t iters)
{
    (void)arg;
    ctrl_send(CMD_BATCH, 0, 0, (int64_t)iters, 0);
    MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return 0;
}

static int op0(void *arg, uint64_t iters)
{
    run_iters(arg, iters);
    return 0;
}

static double probe(void)
{
    return g.opts.no_probe ? -1.0 : pb_bench_probe_measure();
}

/* The sizes of a test: 0 (latency only), then 1 B doubling to 4 MB. */
static unsigned test_sizes(const test_t *t, size_t *sizes)
{
    size_t lo = t->kind == K_BW_UNI || t->kind == K_BW_BI ? 1 : 0;
    unsigned n = 0;

    if (g.opts.nsizes > 0 || lo > 0)
        n = pb_bench_sizes_make(&g.opts, lo, SIZE_MAX_DEFAULT, 2, 8, sizes);
    else {
        sizes[n++] = 0;
        n += pb_bench_sizes_make(&g.opts, 1, SIZE_MAX_DEFAULT, 2, 8, sizes + 1);
    }
    /* an MPI count is an int */
    for (unsigned i = 0; i < n; i++)
        if (sizes[i] > (size_t)INT32_MAX / 4) {
            n = i;
            break;
        }
    return n;
}

/* Measure one figure and emit its record; returns 0, or 1 when a check
 * failed (the message is printed). */
static int figure(pb_bench_out_t *out, unsigned test, size_t size, uint64_t *seq)
{
    const test_t *t = &tests[test];
    pb_bench_record_t rec = {
        .suite = "p2p",
        .test = t->name,
        .library = g.library,
        .transport = g.transport,
        .placement = g.placement,
        .ranks = g.ranks,
        .nodes = g.nodes,
        .pairs = 1,
        .size = size,
        .metric = t->metric,
        .unit = t->unit,
    };
    fig_t f;
    int peer_failures = 0;

    rec.probe_before = probe();
    ctrl_send(CMD_FIGURE, test, (int64_t)size, 0, 0);
    fig_setup(&f, test, size);
    pb_bench_sample_run_prep(&g.opts, op0, prep0, &f, &rec.stats);
    if (g.check)
        for (unsigned k = 0; k < CHECKS; k++) {
            ++*seq;
            check_arm(&f, *seq);
            ctrl_send(CMD_CHECK, 0, 0, 1, (int64_t)*seq);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            run_iters(&f, 1);
            check_verify(&f, *seq);
        }
    ctrl_send(CMD_END, 0, 0, 0, 0);
    MPI_Recv(&peer_failures, 1, MPI_INT, 1, TAG_STATUS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fig_teardown(&f);
    rec.probe_after = probe();
    if (f.failures > 0 || peer_failures > 0) {
        fprintf(stderr,
                "mpi_p2p: %s at %zu B: received data did not match what was sent; "
                "stopping (exit 1)\n",
                t->name, size);
        return 1;
    }

    switch (t->kind) {
    case K_PINGPONG: pb_bench_stats_scale(&rec.stats, 0.5e-3); break;
    case K_UNIDIR:
    case K_PINGPING: pb_bench_stats_scale(&rec.stats, 1e-3); break;
    case K_BW_UNI: pb_bench_stats_to_bandwidth(&rec.stats, size * f.window); break;
    case K_BW_BI: pb_bench_stats_to_bandwidth(&rec.stats, 2 * size * f.window); break;
    }
    pb_bench_record_add_bool(&rec, "checked", g.check);
    pb_bench_record_add_str(&rec, "library_version", g.version);
    pb_bench_record_add_str(&rec, "mode", mode_names[t->mode]);
    if (t->kind == K_BW_UNI || t->kind == K_BW_BI)
        pb_bench_record_add_num(&rec, "window", f.window);
    if (t->diffbuf)
        pb_bench_record_add_num(&rec, "buffers", f.npool);
    if ((t->kind == K_PINGPONG || t->kind == K_PINGPING) && rec.stats.median > 0.0)
        /* IMB's throughput column: bytes over the reported time, MB = 10^6 B */
        pb_bench_record_add_num(&rec, "throughput_MBps", (double)size / rec.stats.median);
    pb_bench_record_emit(out, &rec);
    return 0;
}

static int driver(void)
{
    pb_bench_out_t out;
    size_t sizes[PB_BENCH_SIZES_MAX + 1];
    uint64_t seq = 0;
    int status = 0;

    if (pb_bench_out_open(&out, &g.opts) != 0) {
        ctrl_send(CMD_QUIT, 0, 0, 0, 0);
        return 1;
    }
    printf("# mpi_p2p: library %s, %s, ranks %d, transport %s, placement %s, check %s\n", g.library,
           g.version, g.ranks, g.transport, g.placement, g.check ? "on" : "off");
    for (unsigned test = 0; test < NTESTS && status == 0; test++) {
        char title[256];
        unsigned n;

        if (!g.selected[test])
            continue;
        n = test_sizes(&tests[test], sizes);
        if (n == 0)
            continue;
        snprintf(title, sizeof(title), "p2p %s (%s): %s", tests[test].name, g.library,
                 tests[test].what);
        pb_bench_table_begin(&out, title, tests[test].unit);
        for (unsigned i = 0; i < n && status == 0; i++)
            status = figure(&out, test, sizes[i], &seq);
    }
    ctrl_send(CMD_QUIT, 0, 0, 0, 0);
    pb_bench_out_close(&out);
    return status;
}

/* ---- rank 1: the responder ---------------------------------------------- */

static int responder(void)
{
    unsigned failures = 0;

    for (;;) {
        ctrl_t c;
        fig_t f;

        wait_idle(0, TAG_CTRL);
        MPI_Recv(&c, (int)sizeof(c), MPI_BYTE, 0, TAG_CTRL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (c.cmd == CMD_QUIT)
            break;
        if (c.cmd != CMD_FIGURE || c.test < 0 || c.test >= (int64_t)NTESTS) {
            fprintf(stderr, "mpi_p2p: rank 1: unexpected command %lld\n", (long long)c.cmd);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fig_setup(&f, (unsigned)c.test, (size_t)c.size);
        for (;;) {
            int nfail;

            MPI_Recv(&c, (int)sizeof(c), MPI_BYTE, 0, TAG_CTRL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (c.cmd == CMD_END) {
                nfail = (int)f.failures;
                MPI_Send(&nfail, 1, MPI_INT, 0, TAG_STATUS, MPI_COMM_WORLD);
                break;
            }
            if (c.cmd == CMD_CHECK)
                check_arm(&f, (uint64_t)c.seq);
            batch_prepare(&f);
            MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
            run_iters(&f, (uint64_t)c.iters);
            if (c.cmd == CMD_CHECK)
                check_verify(&f, (uint64_t)c.seq);
        }
        failures += f.failures;
        fig_teardown(&f);
    }
    return failures > 0 ? 1 : 0;
}

/* ---- options and main --------------------------------------------------- */

static const char what[] =
    "Point-to-point bench of an MPI library (suite p2p): ping-pong in the four send modes\n"
    "and with a different buffer each time, unidirectional latency, IMB PingPing, OSU-style\n"
    "uni- and bidirectional bandwidth.  Run with 2 ranks (more wait idle); rank 0 reports.\n"
    "\n"
    "Options of this program (before the common ones):\n"
    "  --library NAME     library name in the records (default: guessed from the library)\n"
    "  --transport NAME   transport in the records (default shm)\n"
    "  --placement NAME   placement in the records (default on-node)\n"
    "  --nodes N          nodes in the records (default 1)\n"
    "  --tests a,b        only these tests (names as in the records)\n"
    "  --no-check         do not verify the received data (records say checked: false)";

/* Take this program's own options out of @argv (in place); the rest go to
 * the engine's parser.  Returns the new argc, or -1 on a bad option. */
static int own_options(int argc, char **argv)
{
    static const char *const with_arg[] = {"--library", "--transport", "--placement", "--nodes",
                                           "--tests"};
    int n = 1;
    bool any_test = false;

    for (unsigned t = 0; t < NTESTS; t++)
        g.selected[t] = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        unsigned k;

        if (strcmp(a, "--no-check") == 0) {
            g.check = false;
            continue;
        }
        for (k = 0; k < sizeof(with_arg) / sizeof(with_arg[0]); k++) {
            size_t len = strlen(with_arg[k]);

            if (strncmp(a, with_arg[k], len) == 0 && (a[len] == '\0' || a[len] == '='))
                break;
        }
        if (k == sizeof(with_arg) / sizeof(with_arg[0])) {
            argv[n++] = argv[i];
            continue;
        }
        val = strchr(a, '=') != NULL ? strchr(a, '=') + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (val == NULL || *val == '\0') {
            fprintf(stderr, "mpi_p2p: %s needs a value\n", with_arg[k]);
            return -1;
        }
        switch (k) {
        case 0: g.library = val; break;
        case 1: g.transport = val; break;
        case 2: g.placement = val; break;
        case 3: {
            char *end;
            long v;

            errno = 0;
            v = strtol(val, &end, 10);
            if (errno != 0 || *end != '\0' || v < 1 || v > 1000000) {
                fprintf(stderr, "mpi_p2p: bad --nodes '%s'\n", val);
                return -1;
            }
            g.nodes = (int)v;
            break;
        }
        case 4: {
            char buf[512], *save = NULL;

            if (strlen(val) >= sizeof(buf))
                return -1;
            strcpy(buf, val);
            for (unsigned t = 0; t < NTESTS; t++)
                g.selected[t] = false;
            for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                unsigned t;

                for (t = 0; t < NTESTS && strcmp(tests[t].name, tok) != 0; t++)
                    ;
                if (t == NTESTS) {
                    fprintf(stderr, "mpi_p2p: unknown test '%s'; tests:", tok);
                    for (t = 0; t < NTESTS; t++)
                        fprintf(stderr, " %s", tests[t].name);
                    fputc('\n', stderr);
                    return -1;
                }
                g.selected[t] = any_test = true;
            }
            if (!any_test)
                return -1;
            break;
        }
        }
    }
    argv[n] = NULL;
    return n;
}

/* Whether the launcher's environment says this process is not rank 0. */
static bool env_says_not_rank0(void)
{
    static const char *const vars[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                       "POSTBOX_RANK"};

    for (unsigned i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);

        if (v != NULL && *v != '\0')
            return strcmp(v, "0") != 0;
    }
    return false;
}

static void library_identity(void)
{
    char full[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    size_t n;

    MPI_Get_library_version(full, &len);
    full[len < MPI_MAX_LIBRARY_VERSION_STRING ? (len > 0 ? len : 0)
                                              : MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
    /* the first line, blanks collapsed ("MPICH Version:\t4.0.2") */
    n = 0;
    for (const char *p = full; *p != '\0' && *p != '\n' && *p != '\r'; p++) {
        bool blank = *p == ' ' || *p == '\t';

        if (n + 1 >= sizeof(g.version))
            break;
        if (blank && (n == 0 || g.version[n - 1] == ' '))
            continue;
        g.version[n++] = blank ? ' ' : *p;
    }
    while (n > 0 && g.version[n - 1] == ' ')
        n--;
    g.version[n] = '\0';
    if (g.library == NULL)
        g.library = strstr(full, "Open MPI") != NULL  ? "openmpi"
                    : strstr(full, "MPICH") != NULL   ? "mpich"
                    : strstr(full, "Postbox") != NULL ? "postbox"
                                                      : "unknown";
}

int main(int argc, char **argv)
{
    char **args = calloc((size_t)argc + 1, sizeof(*args));
    int nargs, status = 0;
    bool probing = false;

    if (args == NULL)
        return 1;
    memcpy(args, argv, (size_t)argc * sizeof(*args));
    nargs = own_options(argc, args);
    if (nargs < 0)
        return 2;
    switch (pb_bench_opts_parse(&g.opts, nargs, args, what,
                                "mpiexec -n 2 mpi_p2p --quick --json p2p.jsonl")) {
    case 1: return 0;
    case -1: return 2;
    default: break;
    }

    /* the probe helper is forked before MPI_Init: some MPIs dislike fork()
     * once they are initialised; only rank 0 measures it */
    if (!g.opts.no_probe && !env_says_not_rank0()) {
        if (pb_bench_probe_init() != 0)
            g.opts.no_probe = true;
        else
            probing = true;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.ranks);
    library_identity();
    if (g.ranks < 2) {
        if (g.rank == 0)
            fprintf(stderr, "mpi_p2p: needs 2 ranks (e.g. mpiexec -n 2 %s)\n", argv[0]);
        MPI_Finalize();
        if (probing)
            pb_bench_probe_fini();
        return 2;
    }
    if (g.rank == 0) {
        status = driver();
        for (int r = 2; r < g.ranks; r++)
            MPI_Send(NULL, 0, MPI_BYTE, r, TAG_IDLE, MPI_COMM_WORLD);
    } else if (g.rank == 1) {
        status = responder();
    } else {
        wait_idle(0, TAG_IDLE);
        MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_IDLE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    if (probing)
        pb_bench_probe_fini();
    free(args);
    return status;
}
