/*
 * pbt-mpi-p2p: point-to-point conformance, run by tests/python/test_mpi_p2p.py
 * under `postbox run -n N [--nodes K]` (N >= 2).  Written to the standard
 * API only.  Every rank prints one line per failure and exits non-zero if
 * any; rank 0 prints "p2p: ok" at the end.
 *
 *   pbt-mpi-p2p [case ...]   run the named cases (default: all)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "check.h"

static int size;
static MPI_Comm quiet; /* a duplicate of MPI_COMM_WORLD for separate() alone */

static unsigned char pattern(size_t i, int seed)
{
    return (unsigned char)(i * 131u + (unsigned)seed * 7u + (i >> 8));
}

static void fill(unsigned char *buf, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern(i, seed);
}

static size_t first_bad(const unsigned char *buf, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != pattern(i, seed))
            return i;
    }
    return n;
}

/* sizes around the protocol's boundaries at their defaults: inline (32 B),
 * one block (4 KB), single copy (64 KB), split copy (128 KB), the
 * rendezvous threshold (1 MB); test_thresholds.c moves each of them */
static const size_t sizes[] = {0,      1,       8,       31,      32,     33,     4095,
                               4096,   4097,    65535,   65536,   65537,  131071, 131072,
                               131073, 1048575, 1048576, 1048577, 4 << 20};

typedef int (*send_func_t)(const void *, int, MPI_Datatype, int, int, MPI_Comm);

/* ping-pong between rank 0 and rank @peer with every size, in one send mode */
static void pingpong_mode(const char *name, send_func_t send, int peer)
{
    size_t max = 4 << 20;
    unsigned char *buf = malloc(max);

    if (rank != 0 && rank != peer) {
        free(buf);
        return;
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        MPI_Status st;
        int count = -1;

        if (rank == 0) {
            fill(buf, n, (int)s);
            send(buf, (int)n, MPI_BYTE, peer, (int)s, MPI_COMM_WORLD);
            memset(buf, 0, n);
            MPI_Recv(buf, (int)n, MPI_BYTE, peer, (int)s, MPI_COMM_WORLD, &st);
            CHECK(first_bad(buf, n, (int)s + 1) == n, "%s: %zu B came back wrong at byte %zu", name,
                  n, first_bad(buf, n, (int)s + 1));
        } else {
            memset(buf, 0, n);
            MPI_Recv(buf, (int)n, MPI_BYTE, 0, (int)s, MPI_COMM_WORLD, &st);
            CHECK(first_bad(buf, n, (int)s) == n, "%s: %zu B arrived wrong at byte %zu", name, n,
                  first_bad(buf, n, (int)s));
            CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == (int)s, "%s: status %d/%d", name,
                  st.MPI_SOURCE, st.MPI_TAG);
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == (int)n, "%s: count %d for %zu B", name, count, n);
            fill(buf, n, (int)s + 1);
            send(buf, (int)n, MPI_BYTE, 0, (int)s, MPI_COMM_WORLD);
        }
    }
    free(buf);
}

static int bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    int size_needed = count + MPI_BSEND_OVERHEAD, got;
    void *attached = malloc((size_t)size_needed), *back;
    int rc;

    MPI_Buffer_attach(attached, size_needed);
    rc = MPI_Bsend(buf, count, type, dest, tag, comm);
    MPI_Buffer_detach(&back, &got);
    CHECK(back == attached && got == size_needed, "detach gave back %p/%d", back, got);
    free(attached);
    return rc;
}

static int isend_wait(const void *buf, int count, MPI_Datatype type, int dest, int tag,
                      MPI_Comm comm)
{
    MPI_Request r;
    int rc = MPI_Isend(buf, count, type, dest, tag, comm, &r);

    return rc != MPI_SUCCESS ? rc : MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static void case_pingpong(void)
{
    int peer = size - 1; /* on another virtual node when --nodes > 1 */

    pingpong_mode("standard", MPI_Send, peer);
    pingpong_mode("synchronous", MPI_Ssend, peer);
    pingpong_mode("ready", MPI_Rsend, peer);
    pingpong_mode("buffered", bsend, peer);
    pingpong_mode("nonblocking", isend_wait, peer);
}

/* messages between a pair on one tag arrive in the order sent, whatever
 * their protocol */
/* Sleep @ms milliseconds (peers run meanwhile). */
static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static void case_order(void)
{
    enum {
        N = 60
    };
    static const size_t lens[] = {4, 40, 5000, 300000, 0, 70000};
    unsigned char *buf = malloc(300000);
    MPI_Request reqs[N];

    if (rank == 1) {
        for (int i = 0; i < N; i++) {
            size_t n = lens[i % 6];
            unsigned char *m = malloc(n + 1);

            fill(m, n, i);
            MPI_Send(m, (int)n, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
            free(m);
        }
    } else if (rank == 0) {
        for (int i = 0; i < N; i++) {
            MPI_Status st;
            int count;

            MPI_Recv(buf, 300000, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == (int)lens[i % 6], "message %d has %d bytes, not %zu", i, count,
                  lens[i % 6]);
            CHECK(first_bad(buf, (size_t)count, i) == (size_t)count, "message %d overtaken", i);
        }
    }
    /* a small blocking send while earlier sends to the same rank wait in
     * the sender's queue (the ring was full when they started) although
     * the receiver has freed postboxes since: it must not go first */
    if (rank == 1) {
        int values[N + 1];

        for (int i = 0; i <= N; i++)
            values[i] = 1000 + i;
        for (int i = 0; i < N; i++)
            MPI_Isend(&values[i], 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &reqs[i]);
        pause_ms(100); /* rank 0 empties the ring meanwhile */
        MPI_Send(&values[N], 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
        MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE);
    } else if (rank == 0) {
        for (int i = 0; i <= N; i++) {
            int value = -1;

            MPI_Recv(&value, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(value == 1000 + i, "message %d of the queued run is %d", i, value);
        }
    }
    free(buf);
}

/* many messages sent before any receive is posted */
static void case_unexpected(void)
{
    enum {
        N = 100
    };
    int token = 0;

    if (rank == 1) {
        for (int i = 0; i < N; i++)
            MPI_Send(&i, 1, MPI_INT, 0, i, MPI_COMM_WORLD);
        MPI_Send(&token, 1, MPI_INT, 0, 10000, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Recv(&token, 1, MPI_INT, 1, 10000, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* receive them in reverse tag order: each matches its own */
        for (int i = N - 1; i >= 0; i--) {
            int v = -1;

            MPI_Recv(&v, 1, MPI_INT, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(v == i, "tag %d carried %d", i, v);
        }
    }
}

static void case_any_source(void)
{
    if (rank == 0) {
        int seen = 0;

        for (int i = 1; i < size; i++) {
            MPI_Status st;
            int v;

            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(v == st.MPI_SOURCE * 10 && st.MPI_TAG == st.MPI_SOURCE + 100,
                  "from %d tag %d carried %d", st.MPI_SOURCE, st.MPI_TAG, v);
            seen |= 1 << st.MPI_SOURCE;
        }
        CHECK(seen == ((1 << size) - 2), "sources seen %#x", seen);
    } else {
        int v = rank * 10;

        MPI_Send(&v, 1, MPI_INT, 0, rank + 100, MPI_COMM_WORLD);
    }
}

static void case_probe(void)
{
    if (rank == 1) {
        double d[7] = {1, 2, 3, 4, 5, 6, 7};

        MPI_Send(d, 7, MPI_DOUBLE, 0, 42, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Status st;
        double d[7] = {0};
        int count = 0, flag = 0;

        MPI_Probe(MPI_ANY_SOURCE, 42, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        CHECK(st.MPI_SOURCE == 1 && count == 7, "probe: source %d count %d", st.MPI_SOURCE, count);
        MPI_Iprobe(1, 42, MPI_COMM_WORLD, &flag, &st);
        CHECK(flag, "iprobe does not see the probed message");
        MPI_Iprobe(1, 43, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "iprobe sees a message with another tag");
        MPI_Recv(d, 7, MPI_DOUBLE, 1, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(d[6] == 7.0, "d[6] = %g", d[6]);
    }
}

static void case_self(void)
{
    int out[100], in[100];
    MPI_Request r;
    MPI_Status st;

    for (int i = 0; i < 100; i++)
        out[i] = rank * 1000 + i;
    MPI_Irecv(in, 100, MPI_INT, rank, 9, MPI_COMM_WORLD, &r);
    MPI_Send(out, 100, MPI_INT, rank, 9, MPI_COMM_WORLD);
    MPI_Wait(&r, &st);
    CHECK(memcmp(in, out, sizeof(in)) == 0 && st.MPI_SOURCE == rank, "a send to self");
}

/* A contiguous datatype whose data lies at @addr (absolute), for buffers
 * of MPI_BOTTOM. */
static MPI_Datatype absolute_ints(void *addr, int n)
{
    int len = n;
    MPI_Aint disp;
    MPI_Datatype type, t = MPI_INT;

    MPI_Get_address(addr, &disp);
    MPI_Type_create_struct(1, &len, &disp, &t, &type);
    MPI_Type_commit(&type);
    return type;
}

/* a short blocking send and receive of data at absolute addresses
 * (MPI_BOTTOM, a NULL pointer): the short path adds the datatype's lower
 * bound to the buffer without pointer arithmetic on NULL */
static void case_bottom(void)
{
    static int out[8], in[8];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Datatype tout = absolute_ints(out, 8), tin = absolute_ints(in, 8);

    for (int i = 0; i < 8; i++)
        out[i] = rank * 100 + i;
    if (rank % 2 == 0) {
        MPI_Send(MPI_BOTTOM, 1, tout, right, 21, MPI_COMM_WORLD);
        MPI_Recv(MPI_BOTTOM, 1, tin, left, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(MPI_BOTTOM, 1, tin, left, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(MPI_BOTTOM, 1, tout, right, 21, MPI_COMM_WORLD);
    }
    CHECK(in[0] == left * 100 && in[7] == left * 100 + 7, "from MPI_BOTTOM: got %d .. %d", in[0],
          in[7]);
    MPI_Type_free(&tout);
    MPI_Type_free(&tin);
}

static void case_sendrecv(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out = rank, in = -1, v = rank;
    MPI_Status st;

    MPI_Sendrecv(&out, 1, MPI_INT, right, 7, &in, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
    CHECK(in == left && st.MPI_SOURCE == left, "ring: got %d from %d", in, st.MPI_SOURCE);
    MPI_Sendrecv_replace(&v, 1, MPI_INT, right, 8, left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(v == left, "replace: got %d", v);
}

static void case_completion(void)
{
    enum {
        N = 8
    };
    MPI_Request reqs[N];
    MPI_Status sts[N];
    int vals[N], index, flag, outcount, indices[N];

    if (rank == 0) {
        for (int i = 0; i < N; i++)
            MPI_Irecv(&vals[i], 1, MPI_INT, 1, i, MPI_COMM_WORLD, &reqs[i]);
        MPI_Send(&flag, 0, MPI_INT, 1, 99, MPI_COMM_WORLD); /* go */
        MPI_Waitany(N, reqs, &index, &sts[0]);
        CHECK(index >= 0 && index < N && vals[index] == index * 3, "waitany: index %d", index);
        MPI_Waitsome(N, reqs, &outcount, indices, sts);
        CHECK(outcount >= 1, "waitsome: %d", outcount);
        MPI_Waitall(N, reqs, sts);
        for (int i = 0; i < N; i++) {
            CHECK(vals[i] == i * 3, "vals[%d] = %d", i, vals[i]);
            CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        }
        MPI_Testany(N, reqs, &index, &flag, MPI_STATUS_IGNORE);
        CHECK(flag && index == MPI_UNDEFINED, "testany on nothing: %d %d", flag, index);
        MPI_Waitsome(N, reqs, &outcount, indices, sts);
        CHECK(outcount == MPI_UNDEFINED, "waitsome on nothing: %d", outcount);
    } else if (rank == 1) {
        MPI_Recv(&flag, 0, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = N - 1; i >= 0; i--) {
            vals[i] = i * 3;
            MPI_Send(&vals[i], 1, MPI_INT, 0, i, MPI_COMM_WORLD);
        }
    }
    if (rank <= 1) {
        int v = 5, got = 0;
        MPI_Request r[2];

        MPI_Irecv(&got, 1, MPI_INT, 1 - rank, 77, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&v, 1, MPI_INT, 1 - rank, 77, MPI_COMM_WORLD, &r[1]);
        do
            MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE);
        while (!flag);
        CHECK(got == 5, "testall exchange got %d", got);
    }
}

static void case_handles(void)
{
    MPI_Request r;
    int v = 0, i;

    CHECK(MPI_Request_toint(MPI_REQUEST_NULL) == (int)(intptr_t)MPI_REQUEST_NULL,
          "MPI_REQUEST_NULL's integer");
    MPI_Irecv(&v, 1, MPI_INT, rank, 4242, MPI_COMM_WORLD, &r);
    i = MPI_Request_toint(r);
    CHECK(i >= 4096 && MPI_Request_toint(r) == i, "a request's integer %d", i);
    CHECK(MPI_Request_fromint(i) == r, "the integer does not give the request back");
    MPI_Send(&v, 1, MPI_INT, rank, 4242, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(MPI_Request_fromint(i) == MPI_REQUEST_NULL, "a freed request's integer still maps");
}

/* a communicator freed while a receive on it is pending: the receive
 * completes, with the sender's rank in it */
static void separate(void);

static void case_free_pending(void)
{
    MPI_Comm dup;
    MPI_Request r;
    MPI_Status st;
    int v = -1;

    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (rank == 1) {
        MPI_Irecv(&v, 1, MPI_INT, 0, 6, dup, &r);
        MPI_Comm_free(&dup);
        MPI_Wait(&r, &st);
        CHECK(v == 5 && st.MPI_SOURCE == 0, "got %d from %d", v, st.MPI_SOURCE);
    } else {
        if (rank == 0) {
            v = 5;
            MPI_Send(&v, 1, MPI_INT, 1, 6, dup);
        }
        MPI_Comm_free(&dup);
    }
}

/* a buffered send is local: MPI_Ibsend's request completes before the
 * receiver posts anything, even for a message larger than the pool; a
 * freed rendezvous send still completes before MPI_Finalize */
static void case_local_and_freed(void)
{
    size_t n = 1 << 20;
    unsigned char *big = malloc(n), *attached = malloc(n + MPI_BSEND_OVERHEAD), *back;
    int small = 0, got;
    MPI_Request r;

    if (rank == 0) {
        fill(big, n, 9);
        MPI_Buffer_attach(attached, (int)n + MPI_BSEND_OVERHEAD);
        MPI_Ibsend(big, (int)n, MPI_BYTE, 1, 10, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE); /* local: no receive is posted yet */
        MPI_Send(&small, 1, MPI_INT, 1, 11, MPI_COMM_WORLD);
        MPI_Buffer_detach(&back, &got);
        /* a rendezvous send let go of at once */
        MPI_Isend(big, (int)n, MPI_BYTE, 1, 12, MPI_COMM_WORLD, &r);
        MPI_Request_free(&r);
    } else if (rank == 1) {
        MPI_Recv(&small, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        memset(big, 0, n);
        MPI_Recv(big, (int)n, MPI_BYTE, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(first_bad(big, n, 9) == n, "buffered message wrong at %zu", first_bad(big, n, 9));
        memset(big, 0, n);
        MPI_Recv(big, (int)n, MPI_BYTE, 0, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(first_bad(big, n, 9) == n, "freed send's message wrong");
    }
    /* rank 0 keeps big alive until the freed send is surely done */
    separate();
    free(big);
    free(attached);
}

static void case_cancel(void)
{
    MPI_Request r;
    MPI_Status st;
    int v, cancelled = 0;

    MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 31337, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled, "an unmatched receive was not cancelled");
}

static void case_errors(void)
{
    int v = 0, rc, cls;
    MPI_Status st;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Send(&v, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_RANK, "send to rank %d: %d", size, rc);
    rc = MPI_Send(&v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TAG, "negative tag: %d", rc);
    rc = MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_COUNT, "negative count: %d", rc);
    rc = MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TYPE, "null datatype: %d", rc);
    rc = MPI_Recv(&v, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, &st);
    CHECK(rc == MPI_ERR_RANK, "receive from rank -7: %d", rc);
    /* a message longer than the buffer */
    if (rank <= 1) {
        int two[2] = {1, 2};

        if (rank == 1) {
            MPI_Send(two, 2, MPI_INT, 0, 55, MPI_COMM_WORLD);
        } else {
            rc = MPI_Recv(&v, 1, MPI_INT, 1, 55, MPI_COMM_WORLD, &st);
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE && v == 1, "truncation: %d, v %d", rc, v);
        }
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void case_proc_null(void)
{
    MPI_Status st;
    int v = 3, count = -1;

    MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0 && v == 3,
          "proc null: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
}

/* the large-count forms: MPI_Send_c and MPI_Isend_c to the next rank,
 * MPI_Recv_c from the previous one, with a count above INT_MAX that the
 * short message fills only in part; a count whose bytes no process can
 * address is MPI_ERR_COUNT */
static void case_large_count(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int64_t out[4], in[8] = {0};
    MPI_Count big = (MPI_Count)INT32_MAX + 5, count = -1;
    MPI_Request r;
    MPI_Status st;
    int rc, icount = 0;

    for (int i = 0; i < 4; i++)
        out[i] = rank * 100 + i;
    MPI_Isend_c(out, 4, MPI_INT64_T, next, 31, MPI_COMM_WORLD, &r);
    MPI_Recv_c(in, 4, MPI_INT64_T, prev, 31, MPI_COMM_WORLD, &st);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Get_count_c(&st, MPI_INT64_T, &count);
    CHECK(in[0] == prev * 100 && in[3] == prev * 100 + 3 && count == 4 && st.MPI_SOURCE == prev &&
              st.MPI_TAG == 31,
          "Isend_c/Recv_c: in %lld..%lld count %lld source %d tag %d", (long long)in[0],
          (long long)in[3], (long long)count, st.MPI_SOURCE, st.MPI_TAG);
    /* the receive's count is an upper bound: above INT_MAX it may hold 3 */
    MPI_Send_c(out, 3, MPI_BYTE, next, 32, MPI_COMM_WORLD);
    MPI_Recv_c(in, big, MPI_BYTE, prev, 32, MPI_COMM_WORLD, &st);
    MPI_Get_count_c(&st, MPI_BYTE, &count);
    MPI_Get_count(&st, MPI_BYTE, &icount);
    CHECK(count == 3 && icount == 3 && memcmp(in, (int64_t[]){prev * 100}, 3) == 0,
          "Send_c/Recv_c, count %lld: got %lld (%d)", (long long)big, (long long)count, icount);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Send_c(out, (MPI_Count)1 << 61, MPI_INT64_T, next, 33, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_COUNT, "Send_c of 2^61 int64: %d", rc);
    rc = MPI_Recv_c(in, -1, MPI_INT64_T, prev, 33, MPI_COMM_WORLD, &st);
    CHECK(rc == MPI_ERR_COUNT, "Recv_c of count -1: %d", rc);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* a message on a duplicate never matches a receive on the original */
static void case_contexts(void)
{
    MPI_Comm dup, half;
    int v = -1, w = -1, hrank, hsize;

    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (rank == 1) {
        int a = 11, b = 22;

        MPI_Send(&a, 1, MPI_INT, 0, 0, dup);
        MPI_Send(&b, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Recv(&w, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&v, 1, MPI_INT, 1, 0, dup, MPI_STATUS_IGNORE);
        CHECK(w == 22 && v == 11, "world got %d, dup got %d", w, v);
    }
    MPI_Comm_free(&dup);
    CHECK(dup == MPI_COMM_NULL, "freed communicator not null");
    /* split into odd and even, reversed order */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    CHECK(hsize == (size + 1 - rank % 2) / 2, "half size %d", hsize);
    CHECK(hrank == hsize - 1 - rank / 2, "half rank %d", hrank);
    if (hsize > 1) {
        int token = rank, got = -1;

        MPI_Sendrecv(&token, 1, MPI_INT, (hrank + 1) % hsize, 1, &got, 1, MPI_INT,
                     (hrank + hsize - 1) % hsize, 1, half, MPI_STATUS_IGNORE);
        CHECK(got % 2 == rank % 2, "half exchange got %d", got);
    }
    MPI_Comm_free(&half);
}

/* every rank exchanges with every other at once, many times: with more
 * ranks than cores this finishes only if waiting ranks give up the CPU */
static void case_crowd(void)
{
    enum {
        ROUNDS = 20
    };
    int *out = malloc(sizeof(int) * (size_t)size), *in = malloc(sizeof(int) * (size_t)size);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)size);

    for (int round = 0; round < ROUNDS; round++) {
        int n = 0;

        for (int p = 0; p < size; p++) {
            out[p] = rank * 100000 + round * 100 + p;
            MPI_Irecv(&in[p], 1, MPI_INT, p, round, MPI_COMM_WORLD, &reqs[n++]);
            MPI_Isend(&out[p], 1, MPI_INT, p, round, MPI_COMM_WORLD, &reqs[n++]);
        }
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        for (int p = 0; p < size; p++)
            CHECK(in[p] == p * 100000 + round * 100 + rank, "round %d from %d: %d", round, p,
                  in[p]);
    }
    free(out);
    free(in);
    free(reqs);
}

/* Rank 0's pool on a node serves every rank there.  Its messages to A
 * (the last rank but one) fill it while A does not read them (with
 * directed polling A reads only B's ring until B's token comes); its
 * message to B (the last rank) must still get through, through B's
 * reserved blocks, while B polls with MPI_Test (never sleeping, so it must
 * give those blocks back by itself), or B never sends the token.  Then A
 * receives everything, in order. */
static void case_shared_pool(void)
{
    enum {
        COUNT = 3,
        BYTES = 900000, /* eager (below 1 MB): COUNT of them fill a 1 MB pool */
        TO_B = 65536
    };
    int a = size - 2, b = size - 1, token = 7;
    unsigned char *buf = malloc((size_t)COUNT * BYTES);

    if (size < 3 || a == 0) {
        free(buf);
        return;
    }
    if (rank == 0) {
        MPI_Request reqs[COUNT];
        unsigned char *to_b = malloc(TO_B);

        for (int i = 0; i < COUNT; i++) {
            fill(buf + (size_t)i * BYTES, BYTES, 60 + i);
            MPI_Isend(buf + (size_t)i * BYTES, BYTES, MPI_BYTE, a, i, MPI_COMM_WORLD, &reqs[i]);
        }
        fill(to_b, TO_B, 70);
        MPI_Send(to_b, TO_B, MPI_BYTE, b, 0, MPI_COMM_WORLD);
        MPI_Waitall(COUNT, reqs, MPI_STATUSES_IGNORE);
        free(to_b);
    } else if (rank == a) {
        MPI_Recv(&token, 1, MPI_INT, b, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(token == 42, "the token from B: %d", token);
        for (int i = 0; i < COUNT; i++) {
            MPI_Recv(buf, BYTES, MPI_BYTE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(first_bad(buf, BYTES, 60 + i) == BYTES, "message %d to A", i);
        }
    } else if (rank == b) {
        MPI_Request req;
        int done = 0;

        MPI_Irecv(buf, TO_B, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &req);
        while (!done)
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        CHECK(first_bad(buf, TO_B, 70) == TO_B, "the message to B");
        token = 42;
        MPI_Send(&token, 1, MPI_INT, a, 0, MPI_COMM_WORLD);
    }
    free(buf);
}

/* a barrier made of point-to-point messages on a communicator of its own
 * (a case's MPI_ANY_TAG receive must not take them) */
static void separate(void)
{
    if (rank == 0) {
        for (int r = 1; r < size; r++)
            MPI_Recv(NULL, 0, MPI_BYTE, r, 0, quiet, MPI_STATUS_IGNORE);
        for (int r = 1; r < size; r++)
            MPI_Send(NULL, 0, MPI_BYTE, r, 0, quiet);
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, 0, 0, quiet);
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 0, quiet, MPI_STATUS_IGNORE);
    }
}

/* Make the kernel refuse system call @nr to this process from now on, as
 * a container's seccomp profile does (Docker's default one refuses
 * process_vm_readv and _writev).  @return 0. */
static int refuse_syscall(int nr)
{
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* rank 1 cannot write into other processes' memory (it stays so): the
 * large on-node messages it sends, each split between rank 0's read and
 * its own write, must still arrive (the write fails, the message streams;
 * rank 0 keeps asking, its reads work) */
static void case_no_split_write(void)
{
    size_t n = 1 << 20;
    unsigned char *buf = malloc(n);

    if (rank == 1) {
        CHECK(refuse_syscall(__NR_process_vm_writev) == 0, "cannot install the seccomp filter");
        fill(buf, n, 78);
        MPI_Send(buf, (int)n, MPI_BYTE, 0, 13, MPI_COMM_WORLD);
        MPI_Send(buf, (int)n, MPI_BYTE, 0, 14, MPI_COMM_WORLD);
    } else if (rank == 0) {
        for (int tag = 13; tag <= 14; tag++) {
            memset(buf, 0, n);
            MPI_Recv(buf, (int)n, MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(first_bad(buf, n, 78) == n, "message %d wrong at byte %zu", tag,
                  first_bad(buf, n, 78));
        }
    }
    free(buf);
}

/* rank 0 cannot read other processes' memory (last case: it stays so):
 * large on-node messages must still arrive, streamed through the pool */
static void case_no_single_copy(void)
{
    size_t n = 1 << 20;
    unsigned char *buf = malloc(n);

    if (rank == 1) {
        fill(buf, n, 77);
        MPI_Send(buf, (int)n, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        MPI_Send(buf, (int)n, MPI_BYTE, 0, 4, MPI_COMM_WORLD);
    } else if (rank == 0) {
        CHECK(refuse_syscall(__NR_process_vm_readv) == 0, "cannot install the seccomp filter");
        for (int tag = 3; tag <= 4; tag++) {
            memset(buf, 0, n);
            MPI_Recv(buf, (int)n, MPI_BYTE, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(first_bad(buf, n, 77) == n, "message %d wrong at byte %zu", tag,
                  first_bad(buf, n, 77));
        }
    }
    free(buf);
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"pingpong", case_pingpong},
    {"order", case_order},
    {"unexpected", case_unexpected},
    {"any_source", case_any_source},
    {"probe", case_probe},
    {"self", case_self},
    {"bottom", case_bottom},
    {"sendrecv", case_sendrecv},
    {"completion", case_completion},
    {"cancel", case_cancel},
    {"errors", case_errors},
    {"proc_null", case_proc_null},
    {"large_count", case_large_count},
    {"contexts", case_contexts},
    {"crowd", case_crowd},
    {"shared_pool", case_shared_pool},
    {"handles", case_handles},
    {"free_pending", case_free_pending},
    {"local_and_freed", case_local_and_freed},
    {"no_split_write", case_no_split_write},
    {"no_single_copy", case_no_single_copy},
};

int main(int argc, char **argv)
{
    int status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            printf("run with at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &quiet);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int wanted = argc <= 1;

        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], cases[i].name) == 0;
        if (!wanted)
            continue;
        cases[i].run();
        separate();
    }
    status = check_summary("p2p", quiet, 1);
    MPI_Comm_free(&quiet);
    MPI_Finalize();
    return status;
}
