/*
 * mpi_p2p: point-to-point bench of any MPI library (suite "p2p").
 *
 * Written to the standard MPI C API only, so that every library's own mpicc
 * builds it (MPICH, Open MPI, later Postbox's postbox-cc), together with the
 * bench engine (engine.c).  Rank 0 times and writes the results; rank 1
 * answers; other ranks wait for the end.
 *
 * Tests (Qian, Afsahi, Fredrickson and Zamani, 'Performance Evaluation of the
 * Sun Fire Link SMP Clusters' (2006), sections V-B/V-C; IMB PingPong/PingPing;
 * OSU bw/bibw):
 *   pingpong_standard, _synchronous, _ready, _buffered   half round trip in
 *       each send mode (MPI_Send, MPI_Ssend, MPI_Rsend, MPI_Bsend)
 *   pingpong_diffbuf    MPI_Send from a different buffer every time
 *   unidirectional      a stream of MPI_Send, one acknowledgement per batch
 *   pingping            both ranks MPI_Isend + MPI_Recv + MPI_Wait at once
 *   bandwidth_uni, bandwidth_bi   windows of MPI_Isend (and MPI_Irecv)
 *   pingpong_distance   IMB PingPong bandwidth of rank 0 with rank d, for
 *       every d of the job (distance sensitivity: Fatoohi, Saini and Ciotti,
 *       'Interconnect Performance Evaluation of SGI Altix 3700 BX2, Cray X1,
 *       Cray Opteron Cluster, and Dell PowerEdge' (2006), Fig. 2-3)
 *   multipair           N = ranks/2 pairs (i, i+N) ping-pong at once: the
 *       latency of a pair under load and the aggregate bandwidth (Qian et
 *       al. Fig. 9 and 12; Sistare and Jackson, 'Ultra-High Performance
 *       Communication with MPI and the Sun Fire Link Interconnect' (2002),
 *       Fig. 5-6); records multipair_latency and multipair_bandwidth
 *   msgrate_threads     T threads per rank (--threads, default 4), each on
 *       its own MPI_Comm_dup of the world: windows of MPI_Isend from rank 0's
 *       threads into MPI_Irecv windows of rank 1's, every message's payload
 *       checked; the aggregate messages per second (osu_mbw_mr's measure,
 *       with threads for processes).  Needs MPI_THREAD_MULTIPLE granted
 *       (--thread-level multiple); skipped with a line saying so otherwise.
 *
 * --thread-level single|funneled|serialized|multiple initialises with
 * MPI_Init_thread at that level and exits 3 when the library grants less;
 * every record says the level granted (thread_level).
 *
 * Protocol between rank 0 and its partner (tag CTRL; the partner is rank 1,
 * or rank d for pingpong_distance): FIGURE(test, size, partner) opens a
 * figure; each BATCH(iters) is answered by a zero-byte READY once the
 * partner is set up (for ready mode: its receive pre-posted), then both run
 * @iters iterations; CHECK(seq) is a batch of one with patterned data that
 * both sides verify; END closes the figure and the partner answers with its
 * check status; QUIT (sent to every rank) ends the run.  The engine times
 * only the iterations (its prep callback sends BATCH and waits for READY
 * outside the timed span).  A multipair figure goes to every rank; its
 * commands then travel by MPI_Bcast and each pair's initiator times its own
 * batch (MPI_Gather to rank 0).
 */
#include <mpi.h>

#include "engine.h"
#include "mpi_common.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_CTRL 101
#define TAG_READY 102
#define TAG_DATA 103
#define TAG_ACK 104
#define TAG_STATUS 105

#define SIZE_MAX_DEFAULT ((size_t)4 << 20)
#define WINDOW 64                       /* OSU's default window */
#define WINDOW_BYTES ((size_t)64 << 20) /* receive slots of one window, at most */
#define POOL_BYTES ((size_t)32 << 20)   /* send buffers of the diffbuf pool */
#define POOL_MAX 1024
#define CHECKS 2                      /* checked exchanges after each figure */
#define IDLE_POLL_NS 200000           /* sleep between polls while idle */
#define LLC_DEFAULT ((size_t)8 << 20) /* IMB's default cache size, when unknown */
#define ADD_SIZES_MAX 32
#define MPI_P2P_DONE "# mpi_p2p: done, status" /* rank 0's last line */
#define THREADS_DEFAULT 4                      /* msgrate_threads: threads per rank */
#define THREADS_MAX 64
#define MR_WINDOW 64 /* msgrate_threads: messages per window of a thread */
#define MR_STAMP 8   /* its smallest size: the bytes of a message's stamp */

enum cmd {
    CMD_FIGURE,
    CMD_BATCH,
    CMD_CHECK,
    CMD_END,
    CMD_QUIT
};

typedef struct {
    int64_t cmd, test, size, iters, seq, partner;
} ctrl_t;

enum kind {
    K_PINGPONG,
    K_UNIDIR,
    K_BW_UNI,
    K_BW_BI,
    K_PINGPING,
    K_DISTANCE,
    K_MULTIPAIR,
    K_MSGRATE
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
    {"pingpong_distance", K_DISTANCE, M_STANDARD, false, "bandwidth", "MB/s",
     "IMB PingPong bandwidth (size / half round trip) of rank 0 with rank d"},
    {"multipair", K_MULTIPAIR, M_STANDARD, false, "latency", "us",
     "N pairs (i, i+N) ping-pong at once: latency per pair, aggregate bandwidth"},
    {"msgrate_threads", K_MSGRATE, M_STANDARD, false, "message_rate", "msg/s",
     "threads each on its own communicator, windows of MPI_Isend/MPI_Irecv: messages/s"},
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
    char *recv;           /* nrecv windows of nslots slots, slot_stride apart */
    size_t slot_stride;
    unsigned nslots, window;
    unsigned nrecv, rnext; /* off-cache: receive windows, and the one used next */
    MPI_Request *reqs;     /* 2 * window */
    MPI_Status *stats;     /* 2 * window (a real array: some compilers warn on
                            * MPI_STATUSES_IGNORE passed for an array) */
    MPI_Request pre;       /* ready mode, rank 1: the pre-posted receive */
    char *bsend;           /* buffered mode: the attached buffer */
    int bsend_size;
    unsigned failures; /* failed checks on this rank */
} fig_t;

static struct {
    pb_bench_opts_t opts;
    pb_mpi_bench_t b; /* what the records describe, the job's shape */
    int ranks, rank;
    int partner;      /* rank 0's peer in the current figure */
    bool off_cache;   /* --off-cache: rotate over buffers larger than the LLC */
    size_t llc_bytes; /* the last-level cache, for --off-cache */
    bool selected[NTESTS];
    size_t add_sizes[ADD_SIZES_MAX]; /* --add-sizes: merged into every list */
    unsigned nadd;
    unsigned nthreads;                  /* --threads: msgrate_threads' threads per rank */
    MPI_Comm thread_comms[THREADS_MAX]; /* their communicators (MPI_Comm_dup) */
    unsigned ncomms;
} g = {.b = PB_MPI_BENCH_INIT("mpi_p2p")};

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

static void ctrl_send_to(int dest, int64_t cmd, int64_t test, int64_t size, int64_t iters,
                         int64_t seq)
{
    ctrl_t c = {cmd, test, size, iters, seq, g.partner};

    MPI_Send(&c, (int)sizeof(c), MPI_BYTE, dest, TAG_CTRL, MPI_COMM_WORLD);
}

/* A command to the partner of the current figure. */
static void ctrl_send(int64_t cmd, int64_t test, int64_t size, int64_t iters, int64_t seq)
{
    ctrl_send_to(g.partner, cmd, test, size, iters, seq);
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

/* Buffers that, rotated through, span twice the last-level cache (IMB
 * -off_cache), each @unit bytes: at least 2. */
static unsigned off_cache_count(size_t unit)
{
    size_t n = (2 * g.llc_bytes + unit - 1) / unit;

    return n < 2 ? 2 : n > UINT32_MAX ? UINT32_MAX : (unsigned)n;
}

static void fig_setup(fig_t *f, unsigned test, size_t size, int peer)
{
    memset(f, 0, sizeof(*f));
    f->t = &tests[test];
    f->rank = g.rank;
    f->peer = peer;
    f->size = size;
    f->count = (int)size;
    f->stride = round_up(size, 64) + 64;
    f->npool = 1;
    if (f->t->diffbuf) {
        size_t n = POOL_BYTES / f->stride;

        f->npool = n < 2 ? 2 : n > POOL_MAX ? POOL_MAX : (unsigned)n;
    }
    if (g.off_cache && off_cache_count(f->stride) > f->npool)
        f->npool = off_cache_count(f->stride);
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
    f->nrecv = g.off_cache ? off_cache_count(f->slot_stride * f->nslots) : 1;
    f->recv = alloc_touched(f->slot_stride * f->nslots * f->nrecv);
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

/* The receive window of the next message or window (rotates with
 * --off-cache; always the same one otherwise). */
static char *recv_buf(fig_t *f, bool advance)
{
    char *b = f->recv + (size_t)f->rnext * f->slot_stride * f->nslots;

    if (advance && ++f->rnext == f->nrecv)
        f->rnext = 0;
    return b;
}

/* Back to the first buffers: the checked exchanges use those. */
static void fig_rewind(fig_t *f)
{
    f->next = 0;
    f->rnext = 0;
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

/* Before a batch: the responder pre-posts its first receive in ready mode. */
static void batch_prepare(fig_t *f)
{
    if (f->t->mode == M_READY && f->rank != 0)
        MPI_Irecv(recv_buf(f, false), f->count, MPI_BYTE, f->peer, TAG_DATA, MPI_COMM_WORLD,
                  &f->pre);
}

/* Whether this rank starts each exchange (rank 0, or a pair's first rank). */
static bool initiator(const fig_t *f)
{
    return f->rank < f->peer;
}

static void run_pingpong(fig_t *f, uint64_t iters)
{
    MPI_Comm w = MPI_COMM_WORLD;

    for (uint64_t i = 0; i < iters; i++) {
        char *buf = send_buf(f, true);
        char *in = recv_buf(f, true);

        if (f->t->mode == M_READY) {
            if (initiator(f)) {
                MPI_Request r;

                /* posted before the ping, so the pong may be a ready send */
                MPI_Irecv(in, f->count, MPI_BYTE, f->peer, TAG_DATA, w, &r);
                MPI_Rsend(buf, f->count, MPI_BYTE, f->peer, TAG_DATA, w);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Wait(&f->pre, MPI_STATUS_IGNORE);
                /* the pong tells rank 0 the next receive is posted */
                if (i + 1 < iters)
                    MPI_Irecv(recv_buf(f, false), f->count, MPI_BYTE, f->peer, TAG_DATA, w,
                              &f->pre);
                MPI_Rsend(buf, f->count, MPI_BYTE, f->peer, TAG_DATA, w);
            }
            continue;
        }
        if (initiator(f)) {
            send_in_mode(f, buf);
            MPI_Recv(in, f->count, MPI_BYTE, f->peer, TAG_DATA, w, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(in, f->count, MPI_BYTE, f->peer, TAG_DATA, w, MPI_STATUS_IGNORE);
            send_in_mode(f, buf);
        }
    }
}

static void run_iters(fig_t *f, uint64_t iters)
{
    MPI_Comm w = MPI_COMM_WORLD;
    unsigned W = f->window;

    switch (f->t->kind) {
    case K_PINGPONG:
    case K_DISTANCE:
    case K_MULTIPAIR: run_pingpong(f, iters); break;
    case K_MSGRATE: break; /* its threads run it: mr_batch */
    case K_UNIDIR:
        if (initiator(f)) {
            for (uint64_t i = 0; i < iters; i++)
                MPI_Send(send_buf(f, true), f->count, MPI_BYTE, f->peer, TAG_DATA, w);
            MPI_Recv(NULL, 0, MPI_BYTE, f->peer, TAG_ACK, w, MPI_STATUS_IGNORE);
        } else {
            for (uint64_t i = 0; i < iters; i++)
                MPI_Recv(recv_buf(f, true), f->count, MPI_BYTE, f->peer, TAG_DATA, w,
                         MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, f->peer, TAG_ACK, w);
        }
        break;
    case K_BW_UNI:
        for (uint64_t i = 0; i < iters; i++) {
            if (initiator(f)) {
                for (unsigned j = 0; j < W; j++)
                    MPI_Isend(send_buf(f, true), f->count, MPI_BYTE, f->peer, TAG_DATA, w,
                              &f->reqs[j]);
                MPI_Waitall((int)W, f->reqs, f->stats);
                MPI_Recv(NULL, 0, MPI_BYTE, f->peer, TAG_ACK, w, MPI_STATUS_IGNORE);
            } else {
                char *in = recv_buf(f, true);

                for (unsigned j = 0; j < W; j++)
                    MPI_Irecv(in + j * f->slot_stride, f->count, MPI_BYTE, f->peer, TAG_DATA, w,
                              &f->reqs[j]);
                MPI_Waitall((int)W, f->reqs, f->stats);
                MPI_Send(NULL, 0, MPI_BYTE, f->peer, TAG_ACK, w);
            }
        }
        break;
    case K_BW_BI:
        for (uint64_t i = 0; i < iters; i++) {
            char *in = recv_buf(f, true);

            for (unsigned j = 0; j < W; j++)
                MPI_Irecv(in + j * f->slot_stride, f->count, MPI_BYTE, f->peer, TAG_DATA, w,
                          &f->reqs[j]);
            for (unsigned j = 0; j < W; j++)
                MPI_Isend(send_buf(f, true), f->count, MPI_BYTE, f->peer, TAG_DATA, w,
                          &f->reqs[W + j]);
            MPI_Waitall(2 * (int)W, f->reqs, f->stats);
        }
        break;
    case K_PINGPING:
        for (uint64_t i = 0; i < iters; i++) {
            MPI_Request r;

            MPI_Isend(send_buf(f, true), f->count, MPI_BYTE, f->peer, TAG_DATA, w, &r);
            MPI_Recv(recv_buf(f, true), f->count, MPI_BYTE, f->peer, TAG_DATA, w,
                     MPI_STATUS_IGNORE);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        break;
    }
}

/* Whether this rank receives data (not just an ack) in this test. */
static bool receives_data(const fig_t *f)
{
    return !initiator(f) || (f->t->kind != K_UNIDIR && f->t->kind != K_BW_UNI);
}

/* Before a checked exchange: back to the first buffers; fill what this
 * rank sends (every send buffer a window uses), spoil what it receives. */
static void check_arm(fig_t *f, uint64_t seq)
{
    fig_rewind(f);
    for (unsigned j = 0; j < f->window && j < f->npool; j++)
        pattern_fill(f->send + (size_t)j * f->stride, f->size, seq, f->rank);
    if (receives_data(f))
        for (unsigned j = 0; j < f->nslots; j++)
            pattern_scribble(f->recv + j * f->slot_stride, f->size, seq, f->peer);
}

/* After it: verify every slot this rank received into. */
static void check_verify(fig_t *f, uint64_t seq)
{
    if (!receives_data(f))
        return;
#ifdef MPI_P2P_INJECT_FAULT
    /* test builds only: spoil what the responder received, to see the
     * check fail */
    if (f->rank != 0 && f->size > 0)
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
    MPI_Recv(NULL, 0, MPI_BYTE, g.partner, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
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

static int size_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return (x > y) - (x < y);
}

/* The sizes of a test: 0 (latency tests of two ranks only), then 1 B
 * doubling to 4 MB (x4 for pingpong_distance and multipair, whose
 * bandwidth needs bytes), with the --add-sizes in range merged in. */
static unsigned test_sizes(const test_t *t, size_t *sizes)
{
    bool sparse = t->kind == K_DISTANCE || t->kind == K_MULTIPAIR;
    bool bw = t->kind == K_BW_UNI || t->kind == K_BW_BI || sparse;
    size_t lo = bw ? 1 : 0, hi = SIZE_MAX_DEFAULT;
    unsigned n = 0, m;

    /* a message rate: 8 B (the stamp), or the --sizes from 8 B to 64 KB */
    if (t->kind == K_MSGRATE && g.opts.nsizes > 0)
        return pb_bench_sizes_make(&g.opts, MR_STAMP, 64 << 10, 2, 8, sizes);
    if (t->kind == K_MSGRATE) {
        sizes[0] = MR_STAMP;
        return 1;
    }

    if (g.opts.nsizes > 0 || lo > 0)
        n = pb_bench_sizes_make(&g.opts, lo, hi, sparse ? 4 : 2, sparse ? 16 : 8, sizes);
    else {
        sizes[n++] = 0;
        n += pb_bench_sizes_make(&g.opts, 1, hi, 2, 8, sizes + 1);
    }
    if (g.opts.max_size != 0 && g.opts.max_size < hi)
        hi = g.opts.max_size;
    for (unsigned i = 0; i < g.nadd && n < PB_BENCH_SIZES_MAX; i++)
        if (g.add_sizes[i] >= lo && g.add_sizes[i] <= hi)
            sizes[n++] = g.add_sizes[i];
    qsort(sizes, n, sizeof(*sizes), size_cmp);
    for (m = 0; m < n; m++)
        if (m > 0 && sizes[m] == sizes[m - 1])
            break;
    for (unsigned i = m; i < n; i++)
        if (sizes[i] != sizes[m - 1])
            sizes[m++] = sizes[i];
    n = m;
    /* an MPI count is an int */
    for (unsigned i = 0; i < n; i++)
        if (sizes[i] > (size_t)INT32_MAX / 4) {
            n = i;
            break;
        }
    return n;
}

/* The keys every record of this run carries besides the engine's. */
static void record_common(pb_bench_record_t *rec, const test_t *t)
{
    pb_bench_record_add_bool(rec, "checked", g.b.check);
    pb_bench_record_add_str(rec, "library_version", g.b.version);
    pb_bench_record_add_str(rec, "mode", mode_names[t->mode]);
    pb_bench_record_add_str(rec, "path", g.b.path);
    if (g.b.path_how != NULL)
        pb_bench_record_add_str(rec, "path_how", g.b.path_how);
    pb_bench_record_add_bool(rec, "off_cache", g.off_cache);
    if (g.off_cache)
        pb_bench_record_add_num(rec, "cache_bytes", (double)g.llc_bytes);
    /* more ranks on the host than CPUs rank 0 may use: ranks share cores */
    pb_bench_record_add_bool(rec, "oversubscribed", pb_mpi_bench_oversubscribed(&g.b));
    pb_bench_record_add_str(rec, "thread_level",
                            pb_mpi_bench_thread_level_name(g.b.thread_provided));
    if (g.b.thread_required >= 0)
        pb_bench_record_add_str(rec, "thread_level_required",
                                pb_mpi_bench_thread_level_name(g.b.thread_required));
    if (g.b.round >= 0)
        pb_bench_record_add_num(rec, "round", g.b.round);
}

static pb_bench_record_t record_begin(const test_t *t, const char *test, size_t size)
{
    pb_bench_record_t rec = {
        .suite = "p2p",
        .test = test,
        .library = g.b.library,
        .transport = g.b.transport,
        .placement = g.b.placement,
        .ranks = g.ranks,
        .nodes = g.b.nodes,
        .pairs = 1,
        .size = size,
        .metric = t->metric,
        .unit = t->unit,
    };

    return rec;
}

/* Measure one figure of a two-rank test (rank 0 with g.partner) and emit
 * its record; returns 0, or 1 when a check failed (the message is
 * printed). */
static int figure(pb_bench_out_t *out, unsigned test, size_t size, uint64_t *seq)
{
    const test_t *t = &tests[test];
    pb_bench_record_t rec;
    fig_t f;
    int peer_failures = 0;
    double before = probe();

    ctrl_send(CMD_FIGURE, test, (int64_t)size, 0, 0);
    fig_setup(&f, test, size, g.partner);
    rec = record_begin(t, t->name, size);
    rec.probe_before = before;
    pb_bench_sample_run_prep(&g.opts, op0, prep0, &f, &rec.stats);
    if (g.b.check)
        for (unsigned k = 0; k < CHECKS; k++) {
            ++*seq;
            check_arm(&f, *seq);
            ctrl_send(CMD_CHECK, 0, 0, 1, (int64_t)*seq);
            MPI_Recv(NULL, 0, MPI_BYTE, g.partner, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            run_iters(&f, 1);
            check_verify(&f, *seq);
        }
    ctrl_send(CMD_END, 0, 0, 0, 0);
    MPI_Recv(&peer_failures, 1, MPI_INT, g.partner, TAG_STATUS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fig_teardown(&f);
    rec.probe_after = probe();
    if (f.failures > 0 || peer_failures > 0) {
        fprintf(stderr,
                "mpi_p2p: %s at %zu B (rank 0 with rank %d): received data did not match what "
                "was sent; stopping (exit 1)\n",
                t->name, size, g.partner);
        return 1;
    }

    switch (t->kind) {
    case K_PINGPONG: pb_bench_stats_scale(&rec.stats, 0.5e-3); break;
    case K_UNIDIR:
    case K_PINGPING: pb_bench_stats_scale(&rec.stats, 1e-3); break;
    case K_BW_UNI: pb_bench_stats_to_bandwidth(&rec.stats, size * f.window); break;
    case K_BW_BI: pb_bench_stats_to_bandwidth(&rec.stats, 2 * size * f.window); break;
    case K_DISTANCE:
        /* IMB PingPong: size over the half round trip */
        pb_bench_stats_to_bandwidth(&rec.stats, 2 * size);
        break;
    case K_MULTIPAIR:
    case K_MSGRATE: break; /* figures of their own */
    }
    record_common(&rec, t);
    if (t->kind == K_BW_UNI || t->kind == K_BW_BI)
        pb_bench_record_add_num(&rec, "window", f.window);
    if (t->diffbuf)
        pb_bench_record_add_num(&rec, "buffers", f.npool);
    if (t->kind == K_DISTANCE)
        pb_bench_record_add_num(&rec, "distance", g.partner);
    if ((t->kind == K_PINGPONG || t->kind == K_PINGPING) && rec.stats.median > 0.0)
        /* IMB's throughput column: bytes over the reported time, MB = 10^6 B */
        pb_bench_record_add_num(&rec, "throughput_MBps", (double)size / rec.stats.median);
    pb_bench_record_emit(out, &rec);
    return 0;
}

/* ---- multipair: N pairs (i, i+N) at once --------------------------------- */

/* Samples a multipair figure keeps of the per-call aggregate bandwidth and
 * of the slowest pair; the engine's last reps calls are its samples. */
#define MP_HISTORY 4096

typedef struct {
    fig_t f;
    int npairs;
    bool active; /* in a pair (an odd job leaves its last rank out) */
    double agg[MP_HISTORY], worst[MP_HISTORY];
    unsigned calls;
} mp_t;

static void mp_setup(mp_t *m, unsigned test, size_t size)
{
    int n = g.ranks / 2, peer;

    m->npairs = n;
    m->active = g.rank < 2 * n;
    peer = !m->active ? g.rank : g.rank < n ? g.rank + n : g.rank - n;
    fig_setup(&m->f, test, size, peer);
    m->calls = 0;
}

/* One batch on every rank: @c came by MPI_Bcast.  Each initiator times its
 * pair; rank 0 gathers those times.  Returns the mean over pairs (ns) on
 * rank 0. */
static uint64_t mp_batch(mp_t *m, const ctrl_t *c)
{
    double t = 0.0, *all = NULL;
    uint64_t t0, mean = 0;

    if (g.rank == 0) {
        all = malloc((size_t)g.ranks * sizeof(*all));
        if (all == NULL) {
            fprintf(stderr, "mpi_p2p: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (c->cmd == CMD_CHECK)
        check_arm(&m->f, (uint64_t)c->seq);
    batch_prepare(&m->f);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = pb_bench_time_now();
    if (m->active)
        run_iters(&m->f, (uint64_t)c->iters);
    t = (double)(pb_bench_time_now() - t0);
    if (c->cmd == CMD_CHECK && m->active)
        check_verify(&m->f, (uint64_t)c->seq);
    MPI_Gather(&t, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (g.rank == 0) {
        double sum = 0.0, agg = 0.0, worst = 0.0;

        for (int i = 0; i < m->npairs; i++) {
            sum += all[i];
            /* a pair moves 2 x size per iteration (ping and pong) */
            agg += all[i] > 0.0 ? 2.0 * (double)m->f.size * (double)c->iters / all[i] : 0.0;
            worst = all[i] > worst ? all[i] : worst;
        }
        mean = (uint64_t)(sum / m->npairs);
        m->agg[m->calls % MP_HISTORY] = agg * 1000.0; /* B/ns -> MB/s */
        m->worst[m->calls % MP_HISTORY] = worst / (double)c->iters;
        m->calls++;
        free(all);
    }
    return mean;
}

static int mp_op0(void *arg, uint64_t iters, uint64_t *ns_p)
{
    mp_t *m = arg;
    ctrl_t c = {.cmd = CMD_BATCH, .iters = (int64_t)iters};

    MPI_Bcast(&c, (int)sizeof(c), MPI_BYTE, 0, MPI_COMM_WORLD);
    *ns_p = mp_batch(m, &c);
    return 0;
}

/* Every rank but 0 in a multipair figure: follow the broadcast commands;
 * returns this rank's failed checks. */
static unsigned mp_follow(unsigned test, size_t size)
{
    mp_t *m = calloc(1, sizeof(*m));
    unsigned failures, total = 0;

    if (m == NULL) {
        fprintf(stderr, "mpi_p2p: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    mp_setup(m, test, size);
    for (;;) {
        ctrl_t c;

        MPI_Bcast(&c, (int)sizeof(c), MPI_BYTE, 0, MPI_COMM_WORLD);
        if (c.cmd == CMD_END)
            break;
        mp_batch(m, &c);
    }
    failures = m->f.failures;
    MPI_Reduce(&failures, &total, 1, MPI_UNSIGNED, MPI_SUM, 0, MPI_COMM_WORLD);
    fig_teardown(&m->f);
    free(m);
    return failures;
}

/* Median of the last @n of @v's @calls entries (a ring of MP_HISTORY). */
static void mp_tail_stats(const double *v, unsigned calls, unsigned n, pb_bench_stats_t *st)
{
    double tail[64];
    uint64_t iters = st->iters;

    if (n > calls)
        n = calls;
    if (n > 64)
        n = 64;
    for (unsigned i = 0; i < n; i++)
        tail[i] = v[(calls - n + i) % MP_HISTORY];
    pb_bench_stats_from_samples(tail, n, iters, st);
}

static int multipair_figure(pb_bench_out_t *out, unsigned test, size_t size, uint64_t *seq)
{
    const test_t *t = &tests[test];
    mp_t *m = calloc(1, sizeof(*m));
    pb_bench_record_t lat, bw;
    pb_bench_stats_t worst;
    unsigned failures = 0, mine;
    ctrl_t c = {0};
    double before = probe(), after;

    if (m == NULL) {
        fprintf(stderr, "mpi_p2p: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int r = 1; r < g.ranks; r++)
        ctrl_send_to(r, CMD_FIGURE, test, (int64_t)size, 0, 0);
    mp_setup(m, test, size);
    lat = record_begin(t, "multipair_latency", size);
    pb_bench_sample_run_timed(&g.opts, mp_op0, m, &lat.stats);
    bw = record_begin(t, "multipair_bandwidth", size);
    bw.metric = "bandwidth";
    bw.unit = "MB/s";
    bw.stats.iters = lat.stats.iters;
    mp_tail_stats(m->agg, m->calls, lat.stats.reps, &bw.stats);
    worst.iters = lat.stats.iters;
    mp_tail_stats(m->worst, m->calls, lat.stats.reps, &worst);
    if (g.b.check)
        for (unsigned k = 0; k < CHECKS; k++) {
            c = (ctrl_t){.cmd = CMD_CHECK, .iters = 1, .seq = (int64_t)++ * seq};
            MPI_Bcast(&c, (int)sizeof(c), MPI_BYTE, 0, MPI_COMM_WORLD);
            mp_batch(m, &c);
        }
    c = (ctrl_t){.cmd = CMD_END};
    MPI_Bcast(&c, (int)sizeof(c), MPI_BYTE, 0, MPI_COMM_WORLD);
    mine = m->f.failures;
    MPI_Reduce(&mine, &failures, 1, MPI_UNSIGNED, MPI_SUM, 0, MPI_COMM_WORLD);
    fig_teardown(&m->f);
    after = probe();
    if (failures > 0) {
        fprintf(stderr,
                "mpi_p2p: %s at %zu B: received data did not match what was sent in %u "
                "check(s); stopping (exit 1)\n",
                t->name, size, failures);
        free(m);
        return 1;
    }
    /* per pair: the half round trip, averaged over the pairs */
    pb_bench_stats_scale(&lat.stats, 0.5e-3);
    pb_bench_stats_scale(&worst, 0.5e-3);
    lat.pairs = bw.pairs = m->npairs;
    lat.probe_before = bw.probe_before = before;
    lat.probe_after = bw.probe_after = after;
    record_common(&lat, t);
    record_common(&bw, t);
    pb_bench_record_add_num(&lat, "slowest_pair", worst.median);
    lat.note = "mean over the pairs of each pair's half round trip; slowest_pair: the slowest";
    bw.note = "sum over the pairs of 2 x size / round trip";
    pb_bench_record_emit(out, &lat);
    pb_bench_record_emit(out, &bw);
    free(m);
    return 0;
}

/* ---- msgrate_threads: threads on communicators of their own --------------- */

typedef struct mr mr_t;

/* One thread of a msgrate_threads figure: its communicator, its window of
 * send or receive slots and what it checked. */
typedef struct {
    mr_t *m;
    unsigned index;
    MPI_Comm comm;
    char *slots; /* MR_WINDOW slots, slot_stride apart */
    MPI_Request reqs[MR_WINDOW];
    MPI_Status stats[MR_WINDOW];
    uint64_t checked;  /* messages whose payload it verified */
    unsigned failures; /* messages that did not match */
    pthread_t tid;
} mr_thread_t;

/* One msgrate_threads figure on either rank: rank 0's threads send, its
 * partner's receive; the main thread starts each batch and waits for it. */
struct mr {
    const test_t *t;
    int rank, peer;
    bool sender;
    size_t size, slot_stride;
    int count;
    unsigned nthreads;
    pthread_barrier_t start, done; /* the threads and the main thread */
    /* set by the main thread before each start, read by the threads after */
    uint64_t iters, batch;
    bool full_check; /* a CHECK batch: every byte patterned and verified */
    bool quit;
    mr_thread_t th[THREADS_MAX];
};

/* The stamp in the first 8 bytes of message @j of window @i of thread
 * @thread in batch @batch: a message delivered to another thread, slot or
 * window, or left from an earlier one, does not carry the stamp expected. */
static uint64_t mr_stamp(uint64_t batch, unsigned thread, uint64_t i, unsigned j)
{
    uint64_t x = batch * UINT64_C(0x9E3779B97F4A7C15) ^ ((uint64_t)thread << 56) ^ (i << 8) ^ j;

    x ^= x >> 29;
    x *= UINT64_C(0xBF58476D1CE4E5B9);
    return x ^ (x >> 32);
}

static void mr_send_window(mr_thread_t *th, uint64_t i)
{
    mr_t *m = th->m;

    for (unsigned j = 0; j < MR_WINDOW; j++) {
        char *slot = th->slots + j * m->slot_stride;
        uint64_t stamp = mr_stamp(m->batch, th->index, i, j);

        memcpy(slot, &stamp, sizeof(stamp));
        if (m->full_check)
            for (size_t k = MR_STAMP; k < m->size; k++)
                slot[k] = (char)pattern_byte(stamp, m->size, m->rank, k);
        MPI_Isend(slot, m->count, MPI_BYTE, m->peer, TAG_DATA, th->comm, &th->reqs[j]);
    }
    MPI_Waitall(MR_WINDOW, th->reqs, th->stats);
    MPI_Recv(NULL, 0, MPI_BYTE, m->peer, TAG_ACK, th->comm, MPI_STATUS_IGNORE);
}

/* Whether @slot holds message @j of window @i (its stamp; in a CHECK batch
 * every byte); the first mismatch of a thread is printed. */
static bool mr_verify(mr_thread_t *th, const char *slot, uint64_t i, unsigned j)
{
    mr_t *m = th->m;
    uint64_t want = mr_stamp(m->batch, th->index, i, j), got;
    size_t bad = 0;

    memcpy(&got, slot, sizeof(got));
    if (got != want)
        bad = 1;
    for (size_t k = MR_STAMP; bad == 0 && m->full_check && k < m->size; k++)
        if ((uint8_t)slot[k] != pattern_byte(want, m->size, m->peer, k))
            bad = k + 1;
    if (bad == 0)
        return true;
    if (th->failures == 0)
        fprintf(stderr,
                "mpi_p2p: check failed: %s size %zu: rank %d thread %u received %s in message "
                "%u of window %llu (stamp 0x%016llx, expected 0x%016llx)\n",
                m->t->name, m->size, m->rank, th->index,
                bad == 1 ? "a wrong stamp" : "a wrong byte after the stamp", j,
                (unsigned long long)i, (unsigned long long)got, (unsigned long long)want);
    return false;
}

static void mr_recv_window(mr_thread_t *th, uint64_t i)
{
    mr_t *m = th->m;

    for (unsigned j = 0; j < MR_WINDOW; j++) {
        char *slot = th->slots + j * m->slot_stride;

        if (m->full_check)
            memset(slot, 0, m->size); /* no stamp is 0 but by chance */
        MPI_Irecv(slot, m->count, MPI_BYTE, m->peer, TAG_DATA, th->comm, &th->reqs[j]);
    }
    MPI_Waitall(MR_WINDOW, th->reqs, th->stats);
#ifdef MPI_P2P_INJECT_FAULT
    /* test builds only: spoil one message, to see the check fail */
    if (th->index == m->nthreads - 1 && i == 0)
        th->slots[(MR_WINDOW - 1) * m->slot_stride] ^= 1;
#endif
    if (g.b.check)
        for (unsigned j = 0; j < MR_WINDOW; j++) {
            th->checked++;
            if (!mr_verify(th, th->slots + j * m->slot_stride, i, j))
                th->failures++;
        }
    MPI_Send(NULL, 0, MPI_BYTE, m->peer, TAG_ACK, th->comm);
}

static void *mr_thread(void *arg)
{
    mr_thread_t *th = arg;
    mr_t *m = th->m;

    for (;;) {
        pthread_barrier_wait(&m->start);
        if (m->quit)
            return NULL;
        for (uint64_t i = 0; i < m->iters; i++) {
            if (m->sender)
                mr_send_window(th, i);
            else
                mr_recv_window(th, i);
        }
        pthread_barrier_wait(&m->done);
    }
}

/* Buffers, barriers and g.nthreads threads (each on its own communicator)
 * for a figure of @size bytes with @peer. */
static mr_t *mr_setup(unsigned test, size_t size, int peer)
{
    mr_t *m = calloc(1, sizeof(*m));
    int err;

    if (m == NULL) {
        fprintf(stderr, "mpi_p2p: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    m->t = &tests[test];
    m->rank = g.rank;
    m->peer = peer;
    m->sender = g.rank < peer;
    m->size = size;
    m->count = (int)size;
    m->slot_stride = round_up(size, 64);
    m->nthreads = g.nthreads;
    pthread_barrier_init(&m->start, NULL, m->nthreads + 1);
    pthread_barrier_init(&m->done, NULL, m->nthreads + 1);
    for (unsigned k = 0; k < m->nthreads; k++) {
        mr_thread_t *th = &m->th[k];

        th->m = m;
        th->index = k;
        th->comm = g.thread_comms[k];
        th->slots = alloc_touched(m->slot_stride * MR_WINDOW);
        err = pthread_create(&th->tid, NULL, mr_thread, th);
        if (err != 0) {
            fprintf(stderr, "mpi_p2p: rank %d: cannot start thread %u of %s: %s\n", g.rank, k,
                    m->t->name, strerror(err));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    return m;
}

/* One batch: every thread runs @iters windows (a CHECK batch with @full). */
static void mr_batch(mr_t *m, uint64_t iters, bool full)
{
    m->iters = iters;
    m->full_check = full;
    m->batch++;
    pthread_barrier_wait(&m->start);
    pthread_barrier_wait(&m->done);
}

static int mr_op0(void *arg, uint64_t iters)
{
    mr_batch(arg, iters, false);
    return 0;
}

/* The threads' failed messages, and the messages they checked in *@checked. */
static unsigned mr_failures(const mr_t *m, uint64_t *checked)
{
    unsigned failures = 0;

    *checked = 0;
    for (unsigned k = 0; k < m->nthreads; k++) {
        failures += m->th[k].failures;
        *checked += m->th[k].checked;
    }
    return failures;
}

/* End the threads and free the figure. */
static void mr_teardown(mr_t *m)
{
    m->quit = true;
    pthread_barrier_wait(&m->start);
    for (unsigned k = 0; k < m->nthreads; k++) {
        pthread_join(m->th[k].tid, NULL);
        free(m->th[k].slots);
    }
    pthread_barrier_destroy(&m->start);
    pthread_barrier_destroy(&m->done);
    free(m);
}

/* Rank 0's partner in a msgrate_threads figure: batches until END, then
 * its failures and checked messages to rank 0; returns its failures. */
static unsigned mr_follow(unsigned test, size_t size)
{
    mr_t *m = mr_setup(test, size, 0);
    int64_t status[2];
    uint64_t checked;
    unsigned failures;

    for (;;) {
        ctrl_t c;

        MPI_Recv(&c, (int)sizeof(c), MPI_BYTE, 0, TAG_CTRL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (c.cmd == CMD_END)
            break;
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
        mr_batch(m, (uint64_t)c.iters, c.cmd == CMD_CHECK);
    }
    failures = mr_failures(m, &checked);
    status[0] = failures;
    status[1] = (int64_t)checked;
    MPI_Send(status, 2, MPI_INT64_T, 0, TAG_STATUS, MPI_COMM_WORLD);
    mr_teardown(m);
    return failures;
}

/* Measure one msgrate_threads figure (rank 0's threads send to
 * g.partner's) and emit its record; returns 0, or 1 when a message did
 * not match (the message is printed). */
static int msgrate_figure(pb_bench_out_t *out, unsigned test, size_t size, uint64_t *seq)
{
    const test_t *t = &tests[test];
    pb_bench_record_t rec;
    int64_t peer[2] = {0, 0}; /* its failures and checked messages */
    uint64_t checked;
    unsigned failures;
    double before = probe();
    mr_t *m;

    ctrl_send(CMD_FIGURE, test, (int64_t)size, 0, 0);
    m = mr_setup(test, size, g.partner);
    rec = record_begin(t, t->name, size);
    rec.probe_before = before;
    pb_bench_sample_run_prep(&g.opts, mr_op0, prep0, m, &rec.stats);
    if (g.b.check)
        for (unsigned k = 0; k < CHECKS; k++) {
            ctrl_send(CMD_CHECK, 0, 0, 1, (int64_t)++ * seq);
            MPI_Recv(NULL, 0, MPI_BYTE, g.partner, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            mr_batch(m, 1, true);
        }
    ctrl_send(CMD_END, 0, 0, 0, 0);
    MPI_Recv(peer, 2, MPI_INT64_T, g.partner, TAG_STATUS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    failures = mr_failures(m, &checked);
    mr_teardown(m);
    rec.probe_after = probe();
    if (failures > 0 || peer[0] > 0) {
        fprintf(stderr,
                "mpi_p2p: %s at %zu B (rank 0 with rank %d, %u threads each): %lld of %lld "
                "messages received did not match what was sent; stopping (exit 1)\n",
                t->name, size, g.partner, g.nthreads, (long long)peer[0], (long long)peer[1]);
        return 1;
    }
    /* an iteration is one window of every thread: messages per second */
    pb_bench_stats_to_bandwidth(&rec.stats, (size_t)g.nthreads * MR_WINDOW);
    pb_bench_stats_scale(&rec.stats, 1e6);
    record_common(&rec, t);
    pb_bench_record_add_num(&rec, "threads", g.nthreads);
    pb_bench_record_add_num(&rec, "window", MR_WINDOW);
    pb_bench_record_add_num(&rec, "messages_checked", (double)peer[1]);
    rec.note = "rank 0's threads send, rank 1's receive, each pair of threads on a "
               "communicator of its own; messages per second of all threads";
    pb_bench_record_emit(out, &rec);
    if (g.b.check)
        printf("# mpi_p2p: %s at %zu B: %u threads per rank, %lld messages checked, none "
               "wrong\n",
               t->name, size, g.nthreads, (long long)peer[1]);
    return 0;
}

static int driver(void)
{
    pb_bench_out_t out;
    size_t sizes[PB_BENCH_SIZES_MAX + ADD_SIZES_MAX + 1];
    uint64_t seq = 0;
    int status = 0;

    g.partner = 1;
    if (pb_bench_out_open(&out, &g.opts) != 0) {
        for (int r = 1; r < g.ranks; r++)
            ctrl_send_to(r, CMD_QUIT, 0, 0, 0, 0);
        return 1;
    }
    printf("# mpi_p2p: library %s, %s, ranks %d (%d on this host, %d CPUs), transport %s, "
           "placement %s, path %s%s%s, check %s%s, thread level %s%s%s%s\n",
           g.b.library, g.b.version, g.ranks, g.b.host_ranks, g.b.cores, g.b.transport,
           g.b.placement, g.b.path, g.b.path_how != NULL ? " " : "",
           g.b.path_how != NULL ? g.b.path_how : "", g.b.check ? "on" : "off",
           g.off_cache ? ", off-cache" : "", pb_mpi_bench_thread_level_name(g.b.thread_provided),
           g.b.thread_required >= 0 ? " (asked " : "",
           g.b.thread_required >= 0 ? pb_mpi_bench_thread_level_name(g.b.thread_required) : "",
           g.b.thread_required >= 0 ? ")" : "");
    for (unsigned test = 0; test < NTESTS && status == 0; test++) {
        const test_t *t = &tests[test];
        char title[256];
        unsigned n;
        int dmax = t->kind == K_DISTANCE ? g.ranks - 1 : 1;

        if (!g.selected[test])
            continue;
        if (t->kind == K_MSGRATE && g.ncomms == 0) {
            printf("# mpi_p2p: %s skipped: it needs MPI_THREAD_MULTIPLE, the library granted "
                   "%s (ask with --thread-level multiple)\n",
                   t->name, pb_mpi_bench_thread_level_name(g.b.thread_provided));
            continue;
        }
        n = test_sizes(t, sizes);
        if (n == 0)
            continue;
        for (int d = 1; d <= dmax && status == 0; d++) {
            g.partner = d;
            if (t->kind == K_DISTANCE)
                snprintf(title, sizeof(title), "p2p %s (%s): %s, d = %d", t->name, g.b.library,
                         t->what, d);
            else
                snprintf(title, sizeof(title), "p2p %s (%s): %s", t->name, g.b.library, t->what);
            pb_bench_table_begin(&out, title, t->kind == K_MULTIPAIR ? "us|MB/s" : t->unit);
            for (unsigned i = 0; i < n && status == 0; i++)
                status = t->kind == K_MULTIPAIR ? multipair_figure(&out, test, sizes[i], &seq)
                         : t->kind == K_MSGRATE ? msgrate_figure(&out, test, sizes[i], &seq)
                                                : figure(&out, test, sizes[i], &seq);
        }
        g.partner = 1;
    }
    for (int r = 1; r < g.ranks; r++)
        ctrl_send_to(r, CMD_QUIT, 0, 0, 0, 0);
    pb_bench_out_close(&out);
    return status;
}

/* ---- every other rank: the responder ----------------------------------- */

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
            fprintf(stderr, "mpi_p2p: rank %d: unexpected command %lld\n", g.rank,
                    (long long)c.cmd);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (tests[c.test].kind == K_MULTIPAIR) {
            failures += mp_follow((unsigned)c.test, (size_t)c.size);
            continue;
        }
        if (tests[c.test].kind == K_MSGRATE) {
            failures += mr_follow((unsigned)c.test, (size_t)c.size);
            continue;
        }
        fig_setup(&f, (unsigned)c.test, (size_t)c.size, 0);
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
    "uni- and bidirectional bandwidth (2 ranks: rank 0 with rank 1; other ranks wait);\n"
    "pingpong_distance (rank 0 with each rank d); multipair (N = ranks/2 pairs (i, i+N) at\n"
    "once: latency under load and aggregate bandwidth); msgrate_threads (T threads per rank\n"
    "on communicators of their own: messages per second; needs --thread-level multiple).\n"
    "Rank 0 reports.\n"
    "\n"
    "Options of this program (before the common ones):\n"
    "  --library NAME     library name in the records (default: guessed from the library)\n"
    "  --transport NAME   transport in the records (default shm)\n"
    "  --placement NAME   placement in the records (default on-node)\n"
    "  --nodes N          nodes in the records (default 1)\n"
    "  --path NAME        path in the records: on-node (default) or network\n"
    "  --path-how TEXT    how the runner forced that path (record key path_how)\n"
    "  --round N          which of several runs of the same figures this is (record key round)\n"
    "  --tests a,b        only these tests (names as in the records; multipair for both\n"
    "                     multipair_latency and multipair_bandwidth)\n"
    "  --add-sizes a,b    also these sizes in every test (e.g. protocol thresholds +-1)\n"
    "  --off-cache        rotate over send and receive buffers spanning twice the\n"
    "                     last-level cache, as IMB -off_cache (record key off_cache)\n"
    "  --thread-level L   MPI_Init_thread at L: single, funneled, serialized or multiple\n"
    "                     (exit 3 when the library grants less); records say the level\n"
    "                     granted (thread_level) and the one asked (thread_level_required)\n"
    "  --threads T        msgrate_threads: threads per rank (default 4, at most 64)\n"
    "  --no-check         do not verify the received data (records say checked: false)";

/* Parse "4096", "64K", "4M" into *@v_p; -1 when it is not a size. */
static int parse_size_arg(const char *s, size_t *v_p)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *s == '-')
        return -1;
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    if (*end != '\0')
        return -1;
    *v_p = (size_t)v;
    return 0;
}

static int parse_add_sizes(const char *val)
{
    char buf[512], *save = NULL;

    if (strlen(val) >= sizeof(buf))
        return -1;
    strcpy(buf, val);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (g.nadd == ADD_SIZES_MAX || parse_size_arg(tok, &g.add_sizes[g.nadd]) != 0) {
            fprintf(stderr, "mpi_p2p: bad --add-sizes '%s' (at most %d sizes, e.g. 4095,4097)\n",
                    val, ADD_SIZES_MAX);
            return -1;
        }
        g.nadd++;
    }
    return 0;
}

/* --threads @val: 1 to THREADS_MAX; -1 with a message otherwise. */
static int parse_threads(const char *val)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(val, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1 || v > THREADS_MAX) {
        fprintf(stderr, "mpi_p2p: bad --threads '%s' (1 to %d)\n", val, THREADS_MAX);
        return -1;
    }
    g.nthreads = (unsigned)v;
    return 0;
}

/* Take this program's own options out of @argv (in place); the rest go to
 * the engine's parser.  Returns the new argc, or -1 on a bad option. */
static int own_options(int argc, char **argv)
{
    static const char *const with_arg[] = {"--tests", "--add-sizes", "--thread-level", "--threads"};
    const char *names[NTESTS];
    int n = 1;

    /* every test but the ones that need a job of their own shape or
     * MPI_THREAD_MULTIPLE */
    g.nthreads = THREADS_DEFAULT;
    for (unsigned t = 0; t < NTESTS; t++) {
        g.selected[t] = tests[t].kind != K_MULTIPAIR && tests[t].kind != K_DISTANCE &&
                        tests[t].kind != K_MSGRATE;
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
        if (strcmp(argv[i], "--off-cache") == 0) {
            g.off_cache = true;
            continue;
        }
        found = pb_mpi_bench_option_in("mpi_p2p", with_arg, sizeof(with_arg) / sizeof(with_arg[0]),
                                       argc, argv, &i, &k, &val);
        if (found < 0)
            return -1;
        if (found == 0) {
            argv[n++] = argv[i];
            continue;
        }
        switch (k) {
        case 0:
            if (pb_mpi_bench_select("mpi_p2p", val, names, NTESTS, g.selected) != 0)
                return -1;
            break;
        case 1:
            if (parse_add_sizes(val) != 0)
                return -1;
            break;
        case 2:
            if (pb_mpi_bench_thread_level_parse(val, &g.b.thread_required) != 0) {
                fprintf(stderr,
                        "mpi_p2p: bad --thread-level '%s' (single, funneled, serialized or "
                        "multiple)\n",
                        val);
                return -1;
            }
            break;
        default:
            if (parse_threads(val) != 0)
                return -1;
            break;
        }
    }
    argv[n] = NULL;
    return n;
}

/* The size of the largest cache of CPU 0 (sysfs), or IMB's 8 MB default. */
static size_t last_level_cache(void)
{
    size_t best = 0;

    for (int i = 0; i < 8; i++) {
        char path[96], text[32];
        FILE *f;
        size_t v;

        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(text, sizeof(text), f) != NULL) {
            text[strcspn(text, "\n")] = '\0';
            if (parse_size_arg(text, &v) == 0 && v > best)
                best = v;
        }
        fclose(f);
    }
    return best > 0 ? best : LLC_DEFAULT;
}

int main(int argc, char **argv)
{
    int status = pb_mpi_bench_args(argc, argv, own_options, &g.opts, what,
                                   "mpiexec -n 2 mpi_p2p --quick --json p2p.jsonl");
    bool probing = false;

    if (status >= 0)
        return status;

    /* the probe helper is forked before MPI_Init: some MPIs dislike fork()
     * once they are initialised; only rank 0 measures it */
    if (!g.opts.no_probe && !pb_mpi_bench_env_not_rank0()) {
        if (pb_bench_probe_init() != 0)
            g.opts.no_probe = true;
        else
            probing = true;
    }
    status = pb_mpi_bench_init(&g.b, &argc, &argv);
    if (status != 0) {
        MPI_Finalize();
        if (probing)
            pb_bench_probe_fini();
        return status;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.ranks);
    pb_mpi_bench_identity(&g.b);
    if (g.ranks < 2) {
        if (g.rank == 0)
            fprintf(stderr, "mpi_p2p: needs 2 ranks (e.g. mpiexec -n 2 %s)\n", argv[0]);
        MPI_Finalize();
        if (probing)
            pb_bench_probe_fini();
        return 2;
    }
    pb_mpi_bench_job_shape(&g.b, MPI_COMM_WORLD);
    if (g.off_cache)
        g.llc_bytes = last_level_cache();
    /* msgrate_threads' communicators, one per thread: MPI_Comm_dup is
     * collective, so every rank makes them here, in the same order */
    for (unsigned t = 0; t < NTESTS; t++)
        if (tests[t].kind == K_MSGRATE && g.selected[t] &&
            g.b.thread_provided == MPI_THREAD_MULTIPLE)
            for (; g.ncomms < g.nthreads; g.ncomms++)
                MPI_Comm_dup(MPI_COMM_WORLD, &g.thread_comms[g.ncomms]);
    if (g.rank == 0) {
        status = driver();
        /* every record is written: a runner that sees this line may end a
         * job that then hangs in MPI_Finalize (MPICH 4.0 over UCX's TCP
         * transport sometimes does) */
        printf("%s %d\n", MPI_P2P_DONE, status);
        fflush(stdout);
    } else {
        status = responder();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    while (g.ncomms > 0)
        MPI_Comm_free(&g.thread_comms[--g.ncomms]);
    MPI_Finalize();
    if (probing)
        pb_bench_probe_fini();
    return status;
}
