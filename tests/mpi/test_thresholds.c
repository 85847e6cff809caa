/*
 * pbt-mpi-thresholds: both sides of every boundary of the point-to-point
 * protocol, run by CTest from thresholds.list under `postbox run -n 2`
 * (one node: shm) and `postbox run -n 2 --nodes 2` (tcp), one run per
 * setting of the protocol's variables.  Written to the standard API only.
 *
 * The program reads the thresholds from the variables the run sets (with
 * the defaults of docs/config.md) and sends messages of exactly, one byte
 * below and one byte above each: a postbox's inline data (32 bytes), one
 * pool block (POSTBOX_BLOCK_SIZE), one piece (half the sender's shared
 * blocks, POSTBOX_POOL_BLOCKS on the node, POSTBOX_POOL_BLOCKS_NET across
 * nodes), the whole pool, POSTBOX_RENDEZVOUS, and on the node
 * POSTBOX_SINGLE_COPY and POSTBOX_SPLIT_COPY.  Each size goes both ways in
 * every send mode (standard, synchronous, ready, buffered, nonblocking),
 * contiguous and with a non-contiguous datatype on either side, to a
 * receive posted before and (but ready mode) after the message came; the
 * receiver checks the bytes, that nothing around them changed, the status
 * and the count.  Then bursts of messages received in reverse order fill
 * the ring (POSTBOX_NUMPOSTBOX messages, one below, one above) and the
 * pool (its blocks, one below, up to three above: the receiver's reserve).
 *
 *   pbt-mpi-thresholds [sizes] [bursts]   (default: both)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define INLINE_MAX 32  /* the bytes a postbox carries itself */
#define GUARD 16       /* bytes after a receive buffer's data that must stay */
#define UNTOUCHED 0xee /* what a receive buffer holds before the receive */
#define MAX_BURST 1100 /* messages of one burst, at most */

static int peer;         /* the other rank */
static int on_node;      /* whether it runs on this rank's node */
static MPI_Comm ctl;     /* a duplicate of MPI_COMM_WORLD for the handshakes */
static MPI_Datatype gap; /* one byte in every two: MPI_BYTE with an extent of 2 */
static long transfers;   /* messages this rank checked */

enum {
    STANDARD,
    SYNC,
    READY,
    BUFFERED,
    NONBLOCKING,
    NMODES
};
static const char *const mode_names[NMODES] = {"standard", "sync", "ready", "buffered",
                                               "nonblocking"};

/* which side has the non-contiguous datatype */
enum {
    CONTIGUOUS,
    GAPS_SENT,
    GAPS_RECEIVED,
    NLAYOUTS
};
static const char *const layout_names[NLAYOUTS] = {"contiguous", "gaps-sent", "gaps-received"};

/* The protocol's settings in force: the variable @name, else @fallback
 * (the default of docs/config.md). */
static long setting(const char *name, long fallback)
{
    const char *value = getenv(name);

    return value != NULL && *value != '\0' ? atol(value) : fallback;
}

static unsigned char pattern(size_t i, int seed)
{
    return (unsigned char)(i * 251u + (unsigned)seed * 13u + (i >> 9) + 1);
}

/* ---- the sizes -------------------------------------------------------------- */

static size_t sizes[64];
static int nsizes;

static void add_size(size_t n)
{
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] == n)
            return;
    }
    if (nsizes < (int)(sizeof(sizes) / sizeof(sizes[0])))
        sizes[nsizes++] = n;
}

/* one byte below @t, @t, one byte above (nothing for a threshold of 0:
 * the protocol is off) */
static void add_boundary(size_t t)
{
    if (t == 0)
        return;
    add_size(t - 1);
    add_size(t);
    add_size(t + 1);
}

static int by_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return x < y ? -1 : x > y;
}

static size_t block_size(void)
{
    size_t bs = (size_t)setting("POSTBOX_BLOCK_SIZE", 4096);

    return (bs + 63) & ~(size_t)63; /* the channel rounds it up to 64 */
}

/* the blocks of this rank's pool toward the peer's node */
static long pool_blocks(void)
{
    return on_node ? setting("POSTBOX_POOL_BLOCKS", 64) : setting("POSTBOX_POOL_BLOCKS_NET", 256);
}

static void choose_sizes(void)
{
    size_t bs = block_size();
    long single = setting("POSTBOX_SINGLE_COPY", 65536);

    add_size(0);
    add_boundary(INLINE_MAX);
    add_boundary(bs);
    add_boundary((size_t)(pool_blocks() / 2) * bs); /* one piece */
    add_boundary((size_t)pool_blocks() * bs);
    add_boundary((size_t)setting("POSTBOX_RENDEZVOUS", 1 << 20));
    if (on_node && single > 0) {
        add_boundary((size_t)single);
        add_boundary((size_t)setting("POSTBOX_SPLIT_COPY", 131072));
    }
    qsort(sizes, (size_t)nsizes, sizeof(sizes[0]), by_size);
}

/* ---- one message ------------------------------------------------------------ */

static int send_in_mode(int mode, const void *buf, int count, MPI_Datatype type, int dest, int tag)
{
    MPI_Request r;
    int rc;

    switch (mode) {
    case STANDARD: return MPI_Send(buf, count, type, dest, tag, MPI_COMM_WORLD);
    case SYNC: return MPI_Ssend(buf, count, type, dest, tag, MPI_COMM_WORLD);
    case READY: return MPI_Rsend(buf, count, type, dest, tag, MPI_COMM_WORLD);
    case BUFFERED: return MPI_Bsend(buf, count, type, dest, tag, MPI_COMM_WORLD);
    default:
        rc = MPI_Isend(buf, count, type, dest, tag, MPI_COMM_WORLD, &r);
        return rc != MPI_SUCCESS ? rc : MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
}

/* Check the @n bytes received at @buf (every @stride-th byte) and that
 * nothing else of the buffer (@stride * (@n + GUARD) bytes) changed. */
static void check_received(const unsigned char *buf, size_t n, size_t stride, int seed,
                           const char *what)
{
    size_t len = stride * (n + GUARD);

    for (size_t i = 0; i < len; i++) {
        int data = i % stride == 0 && i / stride < n;
        unsigned char want = data ? pattern(i / stride, seed) : UNTOUCHED;

        if (buf[i] != want) {
            CHECK(0, "%s: byte %zu of the buffer is %#x, not %#x (%s)", what, i, buf[i], want,
                  data ? "data" : "outside the message");
            return;
        }
    }
}

/* Rank @from sends @n bytes to the other in @mode with @layout; the
 * receive is posted before the message comes (@early) or after (the
 * receiver probes for it first).  Both ranks call it. */
static void transfer(int from, size_t n, int mode, int layout, int early, int tag)
{
    int sending = rank == from;
    int gaps = sending ? layout == GAPS_SENT : layout == GAPS_RECEIVED;
    size_t stride = gaps ? 2 : 1;
    MPI_Datatype type = gaps ? gap : MPI_BYTE;
    size_t len = stride * (n + GUARD);
    unsigned char *buf = malloc(len);
    char what[160];

    snprintf(what, sizeof(what), "%zu B %s %s, receive posted %s, rank %d to %d", n,
             mode_names[mode], layout_names[layout], early ? "first" : "last", from, 1 - from);
    if (buf == NULL) {
        CHECK(0, "%s: no memory", what);
        exit(1);
    }
    if (sending) {
        for (size_t i = 0; i < n; i++)
            buf[i * stride] = pattern(i, tag);
        if (early) /* the receiver says its receive is posted */
            MPI_Recv(NULL, 0, MPI_BYTE, peer, tag, ctl, MPI_STATUS_IGNORE);
        OK(send_in_mode(mode, buf, (int)n, type, peer, tag));
    } else {
        MPI_Status st, probed;
        MPI_Request r;
        int count = -1;

        memset(buf, UNTOUCHED, len);
        /* a receive longer than the message (by GUARD elements): only
         * the message's bytes may change */
        if (early) {
            OK(MPI_Irecv(buf, (int)n + GUARD, type, peer, tag, MPI_COMM_WORLD, &r));
            MPI_Send(NULL, 0, MPI_BYTE, peer, tag, ctl);
            OK(MPI_Wait(&r, &st));
        } else {
            OK(MPI_Probe(peer, tag, MPI_COMM_WORLD, &probed));
            MPI_Get_count(&probed, MPI_BYTE, &count);
            CHECK(count == (int)n && probed.MPI_SOURCE == peer && probed.MPI_TAG == tag,
                  "%s: probed %d B from %d tag %d", what, count, probed.MPI_SOURCE, probed.MPI_TAG);
            OK(MPI_Recv(buf, (int)n + GUARD, type, peer, tag, MPI_COMM_WORLD, &st));
        }
        MPI_Get_count(&st, type, &count);
        CHECK(count == (int)n && st.MPI_SOURCE == peer && st.MPI_TAG == tag,
              "%s: status says %d elements from %d tag %d", what, count, st.MPI_SOURCE, st.MPI_TAG);
        check_received(buf, n, stride, tag, what);
        transfers++;
    }
    free(buf);
}

static void case_sizes(void)
{
    int tag = 0;

    for (int s = 0; s < nsizes; s++) {
        for (int mode = 0; mode < NMODES; mode++) {
            for (int layout = 0; layout < NLAYOUTS; layout++) {
                for (int early = 1; early >= (mode == READY ? 1 : 0); early--) {
                    transfer(0, sizes[s], mode, layout, early, tag);
                    transfer(1, sizes[s], mode, layout, early, tag + 1);
                    tag = (tag + 2) % 30000;
                }
            }
        }
    }
}

/* ---- bursts ----------------------------------------------------------------- */

/* Rank 0 starts @k messages of @n bytes at once (nonblocking, in @mode:
 * standard, synchronous or buffered); rank 1 receives them last first, so
 * that every earlier one must be taken out of the ring and the pool as
 * unexpected before the last is found. */
static void burst(int k, size_t n, int mode)
{
    static MPI_Request reqs[MAX_BURST];
    unsigned char *buf = malloc((size_t)k * n + GUARD);
    char what[120];

    snprintf(what, sizeof(what), "burst of %d messages of %zu B, %s", k, n, mode_names[mode]);
    if (buf == NULL) {
        CHECK(0, "%s: no memory", what);
        exit(1);
    }
    if (rank == 0) {
        for (int i = 0; i < k; i++) {
            unsigned char *m = buf + (size_t)i * n;

            for (size_t j = 0; j < n; j++)
                m[j] = pattern(j, i);
            if (mode == SYNC)
                OK(MPI_Issend(m, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD, &reqs[i]));
            else if (mode == BUFFERED)
                OK(MPI_Ibsend(m, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD, &reqs[i]));
            else
                OK(MPI_Isend(m, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD, &reqs[i]));
        }
        OK(MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE));
        /* a buffered message holds its room until it has left */
        MPI_Recv(NULL, 0, MPI_BYTE, peer, 0, ctl, MPI_STATUS_IGNORE);
    } else {
        for (int i = k - 1; i >= 0; i--) {
            MPI_Status st;
            int count = -1;
            char one[160];

            memset(buf, UNTOUCHED, n + GUARD);
            OK(MPI_Recv(buf, (int)n + GUARD, MPI_BYTE, peer, i, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == (int)n && st.MPI_TAG == i, "%s: message %d: %d B, tag %d", what, i,
                  count, st.MPI_TAG);
            snprintf(one, sizeof(one), "%s: message %d", what, i);
            check_received(buf, n, 1, i, one);
            transfers++;
        }
        MPI_Send(NULL, 0, MPI_BYTE, peer, 0, ctl); /* all received */
    }
    free(buf);
}

static void case_bursts(void)
{
    long postboxes = setting("POSTBOX_NUMPOSTBOX", 16), blocks = pool_blocks();
    const int modes[] = {NONBLOCKING, SYNC, BUFFERED};

    for (int m = 0; m < 3; m++) {
        /* one postbox each: the ring */
        for (long k = postboxes - 1; k <= postboxes + 1 && k <= MAX_BURST; k++)
            burst((int)k, INLINE_MAX, modes[m]);
        /* one block each: the shared blocks, then the receiver's reserve */
        for (long k = blocks - 1; k <= blocks + 3 && k <= MAX_BURST; k++)
            burst((int)k, block_size(), modes[m]);
    }
}

/* ---- main ----------------------------------------------------------------- */

/* room for two buffered messages of the largest size or for two of the
 * largest bursts (a buffered message holds its room until it has left,
 * which may be after its request completed) */
static void attach_buffer(void)
{
    size_t largest = sizes[nsizes - 1] + MPI_BSEND_OVERHEAD;
    size_t bursts = (size_t)(pool_blocks() + 3) * (block_size() + MPI_BSEND_OVERHEAD);
    size_t bytes = 2 * (largest > bursts ? largest : bursts);

    MPI_Buffer_attach(malloc(bytes), (int)bytes);
}

static void detach_buffer(void)
{
    void *buf;
    int bytes;

    MPI_Buffer_detach(&buf, &bytes);
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Comm node;
    int size, node_size, status;
    int run_sizes = argc <= 1, run_bursts = argc <= 1;

    for (int a = 1; a < argc; a++) {
        run_sizes |= strcmp(argv[a], "sizes") == 0;
        run_bursts |= strcmp(argv[a], "bursts") == 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            printf("pbt-mpi-thresholds runs on 2 ranks, not %d\n", size);
        MPI_Finalize();
        return 2;
    }
    peer = 1 - rank;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    on_node = node_size == 2;
    MPI_Type_create_resized(MPI_BYTE, 0, 2, &gap);
    MPI_Type_commit(&gap);
    choose_sizes();
    attach_buffer();
    if (rank == 0) {
        printf("thresholds: %s, sizes", on_node ? "one node" : "two nodes");
        for (int s = 0; s < nsizes; s++)
            printf(" %zu", sizes[s]);
        printf("\n");
    }
    if (run_sizes)
        case_sizes();
    if (run_bursts)
        case_bursts();
    detach_buffer();
    MPI_Type_free(&gap);
    printf("thresholds: rank %d checked %ld messages\n", rank, transfers);
    status = check_summary("thresholds", ctl, 1);
    MPI_Comm_free(&ctl);
    MPI_Finalize();
    return status;
}
