/*
 * pbt-mpi-soak: the randomized point-to-point soak, run by CTest under
 * `postbox run` on one node (shm), on two (tcp) and with 8 ranks on 2
 * cores, for a few seconds each, and for longer by `make soak`.  Written
 * to the standard API only.
 *
 * The run is a sequence of rounds.  Every rank draws the same plan of a
 * round from the seed: for each ordered pair of ranks, a few messages of
 * random size (0 bytes to --max-size, most of them small), random tag and
 * send mode (standard, synchronous, and in rounds where every receive is
 * posted first, blocking as well as nonblocking).  A receiver posts its
 * receives in a shuffled order, some of them after its sends (the message
 * then comes unexpected), some with MPI_ANY_TAG; for each receiver a few
 * senders send on a tag of their own that the receiver takes with
 * MPI_ANY_SOURCE.  Matching stays checkable: messages from one sender
 * match its receives in an order that does not depend on timing (the
 * receiver computes it from the plan), and those taken with MPI_ANY_SOURCE
 * are those of the sender the status names, in that sender's order.
 *
 * Every byte of every message comes from a pattern derived from (sender,
 * receiver, sequence number of the message between them); the receiver
 * checks every byte, the status, the count, and that the bytes after the
 * message in its buffer did not change.  Each failure prints one line;
 * rank 0 prints the seed first (rerun a failure with --seed) and
 * "soak: ok" with the totals at the end.
 *
 * With --cpus N every rank first restricts itself to the first N processors
 * it may run on, so that a job of more ranks than N runs on N cores
 * whatever the machine: the engine then sees more ranks than cores, and
 * its waiting ranks yield and sleep rather than spin.
 *
 *   pbt-mpi-soak [--seconds S] [--seed N] [--max-size BYTES] [--cpus N]
 *                (defaults: 5 s, a seed from the clock, 4 MiB, every processor)
 */
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define MAX_PER_PAIR 4    /* messages from one rank to another in a round, at most */
#define BUDGET (8u << 20) /* bytes a rank sends, and receives, in one round, at most */
#define TAG_SPACE 16384   /* ordinary tags are below; MPI_ANY_SOURCE ones above */
#define GUARD 16          /* bytes after a receive buffer's message that must stay */
#define UNTOUCHED 0xa5    /* what a receive buffer holds before the receive */

enum {
    MODE_ISEND,
    MODE_ISSEND,
    MODE_SEND,
    MODE_SSEND,
    NMODES
};
static const char *const mode_names[NMODES] = {"MPI_Isend", "MPI_Issend", "MPI_Send", "MPI_Ssend"};

/* one message of a round's plan */
typedef struct {
    int source, dest;
    size_t size;
    int tag;
    int mode;
    uint64_t seq; /* its number among the messages from source to dest */
} message_t;

/* one receive this rank posts */
typedef struct {
    int source;              /* a rank, or MPI_ANY_SOURCE */
    int tag;                 /* a tag, or MPI_ANY_TAG */
    int late;                /* posted after this rank's sends */
    size_t cap;              /* buffer bytes the receive offers */
    const message_t *expect; /* the message it must get (NULL for MPI_ANY_SOURCE) */
    unsigned char *buf;
    MPI_Request req;
} recv_t;

static int size;
static MPI_Comm traffic; /* the soak's messages; MPI_COMM_WORLD for the control */
static uint64_t seed;
static size_t max_size = 4u << 20;
static uint64_t *sent_seq, *recv_seq; /* per peer: messages sent to it, received from it */
static long messages;                 /* messages this rank received and checked */
static uint64_t bytes;                /* ... and their bytes */

/* ---- randomness and the pattern ------------------------------------------ */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t next(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return mix(*state);
}

/* a number in 0..n-1 */
static uint64_t below(uint64_t *state, uint64_t n)
{
    return n == 0 ? 0 : next(state) % n;
}

static uint64_t pattern_key(const message_t *m)
{
    return mix(mix(mix(seed ^ (uint64_t)m->source) ^ (uint64_t)m->dest) ^ m->seq);
}

/* byte @i of the message with key @key */
static unsigned char pattern_byte(uint64_t key, size_t i)
{
    return (unsigned char)(mix(key + i / 8) >> (8 * (i % 8)));
}

static void pattern_fill(unsigned char *buf, size_t n, uint64_t key)
{
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t word = mix(key + i / 8);

        memcpy(buf + i, &word, 8); /* little-endian hosts: byte j is bits 8j.. */
    }
    for (; i < n; i++)
        buf[i] = pattern_byte(key, i);
}

/* @return the index of the first byte of @buf that is not the pattern, or @n */
static size_t pattern_first_bad(const unsigned char *buf, size_t n, uint64_t key)
{
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t word = mix(key + i / 8);

        if (memcmp(buf + i, &word, 8) != 0)
            break;
    }
    for (; i < n; i++) {
        if (buf[i] != pattern_byte(key, i))
            return i;
    }
    return n;
}

/* ---- the plan ------------------------------------------------------------ */

/* a message size: most small, some across the protocol's thresholds (64 KB
 * single copy, 1 MB rendezvous), a few up to max_size */
static size_t draw_size(uint64_t *state)
{
    uint64_t r = below(state, 100);
    size_t lo, hi;

    if (r < 30) {
        lo = 0, hi = 64;
    } else if (r < 55) {
        lo = 65, hi = 4096;
    } else if (r < 75) {
        lo = 4097, hi = 65536;
    } else if (r < 90) {
        lo = 65537, hi = 1 << 20;
    } else {
        lo = (1 << 20) + 1, hi = max_size;
    }
    if (hi > max_size)
        hi = max_size;
    if (lo > hi)
        lo = hi / 2;
    return lo + (size_t)below(state, hi - lo + 1);
}

/* The messages of round @round, the same at every rank.  @any_tag_p gets
 * the round's MPI_ANY_SOURCE tag.  @return the count (messages in *@out,
 * ordered by sender, then receiver, then sending order). */
static size_t plan_round(uint64_t round, message_t **out, int *any_tag_p)
{
    uint64_t state = mix(seed ^ mix(round));
    size_t count = 0, cap = (size_t)size * (size_t)size * MAX_PER_PAIR;
    message_t *msgs = malloc(cap * sizeof(*msgs));
    size_t *sent = calloc((size_t)size, sizeof(size_t)),
           *got = calloc((size_t)size, sizeof(size_t));
    int tags[4], any_tag = TAG_SPACE + (int)(round % TAG_SPACE);
    int blocking = below(&state, 2) == 0;
    char *by_any = calloc((size_t)size * (size_t)size, 1);

    for (int t = 0; t < 4; t++)
        tags[t] = (int)below(&state, TAG_SPACE);
    /* which senders each receiver takes with MPI_ANY_SOURCE this round */
    for (int s = 0; s < size; s++) {
        for (int d = 0; d < size; d++)
            by_any[s * size + d] = s != d && below(&state, 4) == 0;
    }
    for (int s = 0; s < size; s++) {
        for (int d = 0; d < size; d++) {
            int n = s == d ? 0 : (int)below(&state, MAX_PER_PAIR + 1);

            for (int k = 0; k < n; k++) {
                message_t *m = &msgs[count++];

                m->source = s;
                m->dest = d;
                m->size = draw_size(&state);
                /* within the round's budget of both sides */
                if (sent[s] + m->size > BUDGET || got[d] + m->size > BUDGET)
                    m->size = (size_t)below(&state, 4097);
                sent[s] += m->size;
                got[d] += m->size;
                m->tag = by_any[s * size + d] ? any_tag : tags[below(&state, 4)];
                m->mode = (int)below(&state, blocking ? NMODES : MODE_SEND);
                m->seq = 0; /* numbered by the two sides */
            }
        }
    }
    /* a receive taken with MPI_ANY_SOURCE offers room for the largest of
     * those messages: their bytes times their count stay within the budget */
    for (int d = 0; d < size; d++) {
        size_t n = 0;

        for (size_t i = 0; i < count; i++)
            n += msgs[i].dest == d && msgs[i].tag == any_tag;
        for (size_t i = 0; i < count && n > 0; i++) {
            if (msgs[i].dest == d && msgs[i].tag == any_tag && msgs[i].size > BUDGET / n)
                msgs[i].size = BUDGET / n;
        }
    }
    free(by_any);
    free(sent);
    free(got);
    *out = msgs;
    *any_tag_p = any_tag;
    return count;
}

/* ---- one round ----------------------------------------------------------- */

/* how a failure names a message */
#define MESSAGE_FMT "message %" PRIu64 " from rank %d (%zu bytes, tag %d, %s)"
#define MESSAGE_ARGS(m) (m)->seq, (m)->source, (m)->size, (m)->tag, mode_names[(m)->mode]

/* Check the message @m received into @r's buffer with status @st. */
static void check_received(const recv_t *r, const message_t *m, const MPI_Status *st)
{
    int count = -1;
    size_t bad, changed = r->cap + GUARD;

    MPI_Get_count(st, MPI_BYTE, &count);
    CHECK(st->MPI_SOURCE == m->source && st->MPI_TAG == m->tag,
          MESSAGE_FMT ": the status says rank %d, tag %d", MESSAGE_ARGS(m), st->MPI_SOURCE,
          st->MPI_TAG);
    CHECK(count == (int)m->size, MESSAGE_FMT ": count %d", MESSAGE_ARGS(m), count);
    if (count != (int)m->size)
        return;
    bad = pattern_first_bad(r->buf, m->size, pattern_key(m));
    CHECK(bad == m->size, MESSAGE_FMT ": byte %zu is wrong", MESSAGE_ARGS(m), bad);
    for (size_t i = m->size; i < r->cap + GUARD && changed == r->cap + GUARD; i++) {
        if (r->buf[i] != UNTOUCHED)
            changed = i;
    }
    CHECK(changed == r->cap + GUARD,
          MESSAGE_FMT ": byte %zu of the buffer, after the message, changed", MESSAGE_ARGS(m),
          changed);
    messages++;
    bytes += m->size;
}

static void shuffle(recv_t *recvs, size_t n, uint64_t *state)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)below(state, i);
        recv_t t = recvs[i - 1];

        recvs[i - 1] = recvs[j];
        recvs[j] = t;
    }
}

/* Which message each receive from a named source gets: MPI matches a
 * sender's messages, in sending order, each to the first receive posted
 * (in posting order) that matches it, whatever the timing.  A message no
 * receive matches turns an unmatched receive from its sender into an
 * MPI_ANY_TAG one, and the matching is done again.  @ours: this rank's
 * messages in sending order; @recvs in posting order. */
static void match_plan(recv_t *recvs, size_t nrecv, const message_t **ours, size_t nours,
                       uint64_t *state)
{
    for (;;) {
        size_t unmatched = nours;

        for (size_t i = 0; i < nrecv; i++)
            recvs[i].expect = NULL;
        for (size_t k = 0; k < nours && unmatched == nours; k++) {
            const message_t *m = ours[k];
            size_t i = 0;

            if (m->tag >= TAG_SPACE)
                continue; /* taken with MPI_ANY_SOURCE */
            while (i < nrecv && !(recvs[i].expect == NULL && recvs[i].source == m->source &&
                                  (recvs[i].tag == MPI_ANY_TAG || recvs[i].tag == m->tag)))
                i++;
            if (i < nrecv)
                recvs[i].expect = m;
            else
                unmatched = k;
        }
        if (unmatched == nours)
            return;
        {
            /* a random unmatched receive from that sender takes any tag */
            size_t free_ones = 0, pick;

            for (size_t i = 0; i < nrecv; i++)
                free_ones += recvs[i].expect == NULL &&
                             recvs[i].source == ours[unmatched]->source &&
                             recvs[i].tag != MPI_ANY_TAG;
            pick = (size_t)below(state, free_ones);
            for (size_t i = 0; i < nrecv; i++) {
                if (recvs[i].expect == NULL && recvs[i].source == ours[unmatched]->source &&
                    recvs[i].tag != MPI_ANY_TAG && pick-- == 0) {
                    recvs[i].tag = MPI_ANY_TAG;
                    break;
                }
            }
        }
    }
}

/* the @n-th message (from 0) rank @s sent this rank on the MPI_ANY_SOURCE
 * tag, or NULL */
static const message_t *nth_by_any(const message_t **ours, size_t nours, int s, size_t n)
{
    for (size_t k = 0; k < nours; k++) {
        if (ours[k]->source == s && ours[k]->tag >= TAG_SPACE && n-- == 0)
            return ours[k];
    }
    return NULL;
}

static void post(recv_t *r)
{
    r->buf = malloc(r->cap + GUARD);
    memset(r->buf, UNTOUCHED, r->cap + GUARD);
    OK(MPI_Irecv(r->buf, (int)r->cap, MPI_BYTE, r->source, r->tag, traffic, &r->req));
}

static void run_round(uint64_t round)
{
    message_t *plan;
    int any_tag;
    size_t nplan = plan_round(round, &plan, &any_tag);
    uint64_t state = mix(seed ^ mix(round) ^ mix((uint64_t)rank + 1));
    size_t nrecv = 0, nsend = 0, any_cap = 0;
    const message_t **ours = malloc((nplan + 1) * sizeof(*ours));
    message_t **mine = malloc((nplan + 1) * sizeof(*mine));
    recv_t *recvs = calloc(nplan + 1, sizeof(*recvs));
    MPI_Request *send_reqs = malloc((nplan + 1) * sizeof(*send_reqs));
    unsigned char **send_bufs = malloc((nplan + 1) * sizeof(*send_bufs));
    MPI_Status *st;
    int blocking = 0;

    /* number the messages between each pair, as both sides count them */
    for (size_t i = 0; i < nplan; i++) {
        message_t *m = &plan[i];

        if (m->source == rank) {
            m->seq = sent_seq[m->dest]++;
            mine[nsend++] = m;
            blocking |= m->mode >= MODE_SEND;
        } else if (m->dest == rank) {
            m->seq = recv_seq[m->source]++;
            ours[nrecv] = m;
            recvs[nrecv].source = m->tag >= TAG_SPACE ? MPI_ANY_SOURCE : m->source;
            recvs[nrecv].tag = m->tag >= TAG_SPACE ? any_tag : m->tag;
            if (m->tag < TAG_SPACE && below(&state, 4) == 0)
                recvs[nrecv].tag = MPI_ANY_TAG;
            if (m->tag >= TAG_SPACE && m->size > any_cap)
                any_cap = m->size;
            nrecv++;
        }
    }
    /* posting order: shuffled; when none of this rank's sends blocks, a
     * third of its receives go after its sends (no cycle of waits: a rank
     * with a blocking send posts every receive first) */
    shuffle(recvs, nrecv, &state);
    if (!blocking) {
        size_t early = 0;
        recv_t *sorted = malloc((nrecv + 1) * sizeof(*sorted));

        for (size_t i = 0; i < nrecv; i++)
            recvs[i].late = below(&state, 3) == 0;
        for (size_t i = 0; i < nrecv; i++) {
            if (!recvs[i].late)
                sorted[early++] = recvs[i];
        }
        for (size_t i = 0, late = early; i < nrecv; i++) {
            if (recvs[i].late)
                sorted[late++] = recvs[i];
        }
        memcpy(recvs, sorted, nrecv * sizeof(*recvs));
        free(sorted);
    }
    match_plan(recvs, nrecv, ours, nrecv, &state);
    for (size_t i = 0; i < nrecv; i++) {
        recv_t *r = &recvs[i];

        /* a receive offers up to 64 bytes more than its message */
        r->cap =
            (r->source == MPI_ANY_SOURCE ? any_cap : r->expect->size) + (size_t)below(&state, 65);
        if (!r->late)
            post(r);
    }
    for (size_t i = 0; i < nsend; i++) {
        const message_t *m = mine[i];
        unsigned char *buf = malloc(m->size + 1);

        pattern_fill(buf, m->size, pattern_key(m));
        send_bufs[i] = buf;
        send_reqs[i] = MPI_REQUEST_NULL;
        switch (m->mode) {
        case MODE_ISEND:
            OK(MPI_Isend(buf, (int)m->size, MPI_BYTE, m->dest, m->tag, traffic, &send_reqs[i]));
            break;
        case MODE_ISSEND:
            OK(MPI_Issend(buf, (int)m->size, MPI_BYTE, m->dest, m->tag, traffic, &send_reqs[i]));
            break;
        case MODE_SEND: OK(MPI_Send(buf, (int)m->size, MPI_BYTE, m->dest, m->tag, traffic)); break;
        default: OK(MPI_Ssend(buf, (int)m->size, MPI_BYTE, m->dest, m->tag, traffic)); break;
        }
    }
    for (size_t i = 0; i < nrecv; i++) {
        if (recvs[i].late)
            post(&recvs[i]);
    }
    st = malloc((nrecv + 1) * sizeof(*st));
    for (size_t i = 0; i < nrecv; i++) {
        OK(MPI_Wait(&recvs[i].req, &st[i]));
    }
    OK(MPI_Waitall((int)nsend, send_reqs, MPI_STATUSES_IGNORE));

    /* check, in posting order: the k-th message taken with MPI_ANY_SOURCE
     * from the sender its status names is that sender's k-th on the tag */
    {
        size_t *taken = calloc((size_t)size, sizeof(size_t));

        for (size_t i = 0; i < nrecv; i++) {
            const message_t *m = recvs[i].expect;

            if (recvs[i].source == MPI_ANY_SOURCE) {
                int s = st[i].MPI_SOURCE;

                m = s >= 0 && s < size ? nth_by_any(ours, nrecv, s, taken[s]++) : NULL;
                CHECK(m != NULL,
                      "round %" PRIu64 ": an MPI_ANY_SOURCE receive got a message from rank %d, "
                      "which sent no more on its tag",
                      round, s);
                if (m == NULL)
                    continue;
            }
            check_received(&recvs[i], m, &st[i]);
        }
        free(taken);
    }
    for (size_t i = 0; i < nrecv; i++)
        free(recvs[i].buf);
    for (size_t i = 0; i < nsend; i++)
        free(send_bufs[i]);
    free(st);
    free(send_bufs);
    free(send_reqs);
    free(recvs);
    free(mine);
    free(ours);
    free(plan);
}

/* ---- main ---------------------------------------------------------------- */

/* Run on the first @n processors of this process's affinity mask (before
 * MPI_Init, which counts them).  @return 0, or -1 (with a message). */
static int keep_cpus(int n)
{
    cpu_set_t allowed, kept;
    int left = n;

    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
        perror("pbt-mpi-soak: sched_getaffinity");
        return -1;
    }
    CPU_ZERO(&kept);
    for (int cpu = 0; cpu < CPU_SETSIZE && left > 0; cpu++) {
        if (CPU_ISSET(cpu, &allowed)) {
            CPU_SET(cpu, &kept);
            left--;
        }
    }
    if (sched_setaffinity(0, sizeof(kept), &kept) != 0) {
        perror("pbt-mpi-soak: sched_setaffinity");
        return -1;
    }
    return 0;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = 5, start;
    unsigned long long seed_arg = 0;
    int seed_given = 0, status;
    uint64_t round = 0;
    long total_messages = 0;
    double total_bytes = 0, my_bytes;

    /* (--cpus acts before MPI_Init: the engine reads the mask there) */
    for (int a = 1; a + 1 < argc; a++) {
        if (strcmp(argv[a], "--cpus") == 0 && keep_cpus(atoi(argv[a + 1])) != 0)
            return 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--seconds") == 0 && a + 1 < argc) {
            seconds = atof(argv[++a]);
        } else if (strcmp(argv[a], "--seed") == 0 && a + 1 < argc) {
            seed_arg = strtoull(argv[++a], NULL, 0);
            seed_given = 1;
        } else if (strcmp(argv[a], "--max-size") == 0 && a + 1 < argc) {
            max_size = (size_t)strtoull(argv[++a], NULL, 0);
        } else if (strcmp(argv[a], "--cpus") == 0 && a + 1 < argc) {
            a++; /* done */
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: pbt-mpi-soak [--seconds S] [--seed N] [--max-size B] "
                                "[--cpus N]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (max_size > (size_t)1 << 30)
        max_size = (size_t)1 << 30;
    if (rank == 0)
        seed = seed_given ? seed_arg : (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("soak: seed %" PRIu64 " (rerun with --seed %" PRIu64 "), %d ranks, %g s, "
               "messages up to %zu bytes\n",
               seed, seed, size, seconds, max_size);
        fflush(stdout);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &traffic);
    sent_seq = calloc((size_t)size, sizeof(*sent_seq));
    recv_seq = calloc((size_t)size, sizeof(*recv_seq));
    start = now();
    for (;; round++) {
        int go = failures == 0;

        /* rank 0 keeps the time; a rank that failed stops the run */
        if (rank == 0)
            go = go && now() - start < seconds;
        MPI_Allreduce(MPI_IN_PLACE, &go, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!go)
            break;
        run_round(round);
    }
    my_bytes = (double)bytes;
    MPI_Reduce(&messages, &total_messages, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&my_bytes, &total_bytes, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("soak: %" PRIu64 " rounds, %ld messages, %.1f MB checked in %.1f s (seed %" PRIu64
               ")\n",
               round, total_messages, total_bytes / 1e6, now() - start, seed);
        fflush(stdout);
    }
    status = check_summary("soak", traffic, 1);
    MPI_Comm_free(&traffic);
    MPI_Finalize();
    return status;
}
