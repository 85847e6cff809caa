/*
 * pbt-mpi-p2p_more: the rest of point-to-point, run under `postbox run -n N
 * [--nodes K]` (N >= 2): persistent sends and receives (MPI_Send_init ..
 * MPI_Start), matched probe (MPI_Mprobe .. MPI_Imrecv), MPI_Isendrecv(_replace),
 * MPI_Request_get_status_all/any/some, send cancellation, and MPI_PROC_NULL
 * with MPI_DATATYPE_NULL.  Written to the standard API only.  Every rank
 * prints one line per failure; rank 0 prints "p2p_more: ok" at the end.
 *
 *   pbt-mpi-p2p_more [case ...]   run the named cases (default: all)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int size;
static MPI_Comm quiet; /* a duplicate of MPI_COMM_WORLD for separate() alone */

/* sizes across the protocols: inline, eager in one block and in several,
 * single copy on the node, split copy, rendezvous */
static const int sizes[] = {0, 8, 32, 33, 5000, 70000, 200000, (1 << 20) + 8};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))
#define MAXSIZE ((1 << 20) + 8)

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

static int status_count(const MPI_Status *st)
{
    int count = -1;

    MPI_Get_count(st, MPI_BYTE, &count);
    return count;
}

/* the empty status the standard gives for MPI_REQUEST_NULL and inactive
 * persistent requests */
static int status_is_empty(const MPI_Status *st)
{
    int cancelled = 1;

    MPI_Test_cancelled(st, &cancelled);
    return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG &&
           st->MPI_ERROR == MPI_SUCCESS && status_count(st) == 0 && !cancelled;
}

/* a barrier of point-to-point messages on a communicator of its own */
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

/* a token from @from to @to on quiet's tag 1 (a handshake inside a case) */
static void token(int from, int to)
{
    if (rank == from)
        MPI_Send(NULL, 0, MPI_BYTE, to, 1, quiet);
    else if (rank == to)
        MPI_Recv(NULL, 0, MPI_BYTE, from, 1, quiet, MPI_STATUS_IGNORE);
}

/* ---- persistent requests -------------------------------------------------------------- */

/* each rank sends to the next and receives from the previous one, every
 * size, through one persistent pair started 3 times with new data each
 * time (the buffers are read at each start) */
static void persistent_ring(const char *mode)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    unsigned char *out = malloc(MAXSIZE), *in = malloc(MAXSIZE);

    for (int s = 0; s < NSIZES; s++) {
        int n = sizes[s];
        MPI_Request rq[2];
        MPI_Status st[2];

        OK(MPI_Recv_init(in, n, MPI_BYTE, strcmp(mode, "any") == 0 ? MPI_ANY_SOURCE : prev, 40 + s,
                         MPI_COMM_WORLD, &rq[0]));
        if (strcmp(mode, "ssend") == 0)
            OK(MPI_Ssend_init(out, n, MPI_BYTE, next, 40 + s, MPI_COMM_WORLD, &rq[1]));
        else if (strcmp(mode, "large") == 0)
            OK(MPI_Send_init_c(out, (MPI_Count)n, MPI_BYTE, next, 40 + s, MPI_COMM_WORLD, &rq[1]));
        else
            OK(MPI_Send_init(out, n, MPI_BYTE, next, 40 + s, MPI_COMM_WORLD, &rq[1]));
        for (int round = 0; round < 3; round++) {
            fill(out, (size_t)n, rank * 10 + round);
            memset(in, 0, (size_t)n);
            OK(MPI_Startall(2, rq));
            OK(MPI_Waitall(2, rq, st));
            CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL,
                  "%s: a persistent request was freed by its wait", mode);
            CHECK(first_bad(in, (size_t)n, prev * 10 + round) == (size_t)n,
                  "%s %d B round %d: wrong at byte %zu", mode, n, round,
                  first_bad(in, (size_t)n, prev * 10 + round));
            CHECK(st[0].MPI_SOURCE == prev && st[0].MPI_TAG == 40 + s && status_count(&st[0]) == n,
                  "%s %d B round %d: status %d/%d/%d", mode, n, round, st[0].MPI_SOURCE,
                  st[0].MPI_TAG, status_count(&st[0]));
        }
        /* inactive now: a wait and a test give the empty status at once */
        {
            MPI_Status e;
            int flag = 0;

            OK(MPI_Wait(&rq[0], &e));
            CHECK(status_is_empty(&e) && rq[0] != MPI_REQUEST_NULL,
                  "%s: the wait of an inactive request", mode);
            OK(MPI_Test(&rq[1], &flag, &e));
            CHECK(flag && status_is_empty(&e), "%s: the test of an inactive request", mode);
        }
        OK(MPI_Request_free(&rq[0]));
        OK(MPI_Request_free(&rq[1]));
        CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "%s: free", mode);
    }
    free(out);
    free(in);
}

static void case_persistent(void)
{
    persistent_ring("send");
    persistent_ring("ssend");
    persistent_ring("any");
    persistent_ring("large");
}

/* ready mode: the receive is started before the sender is told to send;
 * buffered mode: from the attached buffer, complete at once */
static void case_persistent_modes(void)
{
    int peer = size - 1;
    int v[4] = {0}, w[4] = {0};
    MPI_Request r;
    MPI_Status st;

    if (rank == 0) {
        OK(MPI_Recv_init(v, 4, MPI_INT, peer, 7, MPI_COMM_WORLD, &r));
        for (int round = 0; round < 3; round++) {
            OK(MPI_Start(&r));
            token(0, peer);
            OK(MPI_Wait(&r, &st));
            CHECK(v[0] == round && v[3] == round + 3 && st.MPI_SOURCE == peer,
                  "ready round %d: %d %d from %d", round, v[0], v[3], st.MPI_SOURCE);
        }
        MPI_Request_free(&r);
    } else if (rank == peer) {
        OK(MPI_Rsend_init(w, 4, MPI_INT, 0, 7, MPI_COMM_WORLD, &r));
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 4; i++)
                w[i] = round + i;
            token(0, peer);
            OK(MPI_Start(&r));
            OK(MPI_Wait(&r, &st));
        }
        MPI_Request_free(&r);
    }
    separate();
    /* buffered */
    if (rank == 0) {
        int got[3] = {0};

        for (int round = 0; round < 3; round++) {
            OK(MPI_Recv(got, 3, MPI_INT, peer, 8, MPI_COMM_WORLD, &st));
            CHECK(got[0] == 100 + round && got[2] == 102 + round, "buffered round %d: %d %d", round,
                  got[0], got[2]);
        }
    } else if (rank == peer) {
        int size_needed = 3 * (int)sizeof(int) + MPI_BSEND_OVERHEAD, got_size;
        void *attached = malloc((size_t)size_needed), *back;

        MPI_Buffer_attach(attached, size_needed);
        OK(MPI_Bsend_init(w, 3, MPI_INT, 0, 8, MPI_COMM_WORLD, &r));
        for (int round = 0; round < 3; round++) {
            int flag = 0;

            for (int i = 0; i < 3; i++)
                w[i] = 100 + round + i;
            OK(MPI_Start(&r));
            OK(MPI_Test(&r, &flag, &st));
            CHECK(flag, "a started buffered send is complete at once");
            MPI_Buffer_detach(&back, &got_size); /* waits for the copy to go */
            MPI_Buffer_attach(attached, size_needed);
        }
        MPI_Request_free(&r);
        MPI_Buffer_detach(&back, &got_size);
        free(attached);
    }
    separate();
}

/* MPI_Request_free of an active persistent send: it still completes, and
 * the receiver gets the data; MPI_Start of an active request is an error;
 * persistent requests toward MPI_PROC_NULL */
static void case_persistent_edges(void)
{
    int peer = size - 1, v = 0, rc;
    MPI_Request r, n[2];
    MPI_Status st[2];
    MPI_Comm comm;

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (rank == 0) {
        static unsigned char big[300000];

        fill(big, sizeof(big), 5);
        OK(MPI_Send_init(big, (int)sizeof(big), MPI_BYTE, peer, 3, comm, &r));
        OK(MPI_Start(&r));
        rc = MPI_Start(&r);
        CHECK(rc == MPI_ERR_REQUEST, "MPI_Start of an active request: %d", rc);
        OK(MPI_Request_free(&r));
        token(peer, 0); /* big lives until the receiver has it */
    } else if (rank == peer) {
        unsigned char *in = malloc(300000);

        OK(MPI_Recv(in, 300000, MPI_BYTE, 0, 3, comm, &st[0]));
        CHECK(first_bad(in, 300000, 5) == 300000 && status_count(&st[0]) == 300000,
              "the freed active send arrived wrong");
        free(in);
        token(peer, 0);
    }
    OK(MPI_Send_init(&v, 1, MPI_INT, MPI_PROC_NULL, 1, comm, &n[0]));
    OK(MPI_Recv_init(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 1, comm, &n[1]));
    for (int round = 0; round < 2; round++) {
        OK(MPI_Startall(2, n));
        OK(MPI_Waitall(2, n, st));
        CHECK(st[1].MPI_SOURCE == MPI_PROC_NULL && st[1].MPI_TAG == MPI_ANY_TAG &&
                  status_count(&st[1]) == 0,
              "persistent receive from MPI_PROC_NULL: %d/%d/%d", st[1].MPI_SOURCE, st[1].MPI_TAG,
              status_count(&st[1]));
    }
    /* the -any and -some forms skip inactive requests: one started of two */
    {
        int index = -1, outcount = -1, indices[2];

        OK(MPI_Start(&n[1]));
        OK(MPI_Waitany(2, n, &index, &st[0]));
        CHECK(index == 1 && st[0].MPI_SOURCE == MPI_PROC_NULL, "Waitany: index %d", index);
        OK(MPI_Waitany(2, n, &index, &st[0]));
        CHECK(index == MPI_UNDEFINED && status_is_empty(&st[0]), "Waitany of inactive: %d", index);
        OK(MPI_Testsome(2, n, &outcount, indices, st));
        CHECK(outcount == MPI_UNDEFINED, "Testsome of inactive: %d", outcount);
    }
    MPI_Request_free(&n[0]);
    MPI_Request_free(&n[1]);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN); /* (no communicator) */
    rc = MPI_Start(&n[0]);
    CHECK(rc == MPI_ERR_REQUEST, "MPI_Start of MPI_REQUEST_NULL: %d", rc);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&comm);
}

/* ---- matched probe ----------------------------------------------------------------------- */

/* rank 1 (the last rank) sends two messages with one tag; rank 0 takes the
 * first with a matched probe, and an MPI_ANY_SOURCE receive posted after
 * must get the second (the first is out of matching) */
static void case_mprobe(void)
{
    int peer = size - 1;

    if (rank == 0) {
        for (int s = 0; s < NSIZES; s++) {
            int n = sizes[s], flag = 0;
            unsigned char *a = malloc((size_t)n + 1), *b = malloc((size_t)n + 1);
            MPI_Message m = MPI_MESSAGE_NULL;
            MPI_Status st, st2;
            MPI_Request r;

            if (s % 2 == 0) {
                OK(MPI_Mprobe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &m, &st));
            } else {
                while (!flag)
                    OK(MPI_Improbe(peer, 9, MPI_COMM_WORLD, &flag, &m, &st));
            }
            CHECK(m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC, "%d B: no message", n);
            CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 9 && status_count(&st) == n,
                  "%d B: probe status %d/%d/%d", n, st.MPI_SOURCE, st.MPI_TAG, status_count(&st));
            CHECK(MPI_Message_fromint(MPI_Message_toint(m)) == m,
                  "%d B: the message's integer does not convert back", n);
            OK(MPI_Irecv(b, n, MPI_BYTE, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &r));
            if (s % 3 == 0) {
                MPI_Request mr;

                OK(MPI_Imrecv(a, n, MPI_BYTE, &m, &mr));
                OK(MPI_Wait(&mr, &st));
            } else if (s % 3 == 1) {
                OK(MPI_Mrecv_c(a, (MPI_Count)n, MPI_BYTE, &m, &st));
            } else {
                OK(MPI_Mrecv(a, n, MPI_BYTE, &m, &st));
            }
            CHECK(m == MPI_MESSAGE_NULL, "%d B: the message is not MPI_MESSAGE_NULL after", n);
            OK(MPI_Wait(&r, &st2));
            CHECK(first_bad(a, (size_t)n, 2 * s) == (size_t)n,
                  "%d B: the probed message is wrong at %zu", n, first_bad(a, (size_t)n, 2 * s));
            CHECK(first_bad(b, (size_t)n, 2 * s + 1) == (size_t)n,
                  "%d B: the receive posted after the probe got the wrong message (byte %zu)", n,
                  first_bad(b, (size_t)n, 2 * s + 1));
            CHECK(st.MPI_SOURCE == peer && status_count(&st) == n && st2.MPI_SOURCE == peer &&
                      status_count(&st2) == n,
                  "%d B: statuses %d/%d %d/%d", n, st.MPI_SOURCE, status_count(&st), st2.MPI_SOURCE,
                  status_count(&st2));
            free(a);
            free(b);
            token(0, peer);
        }
    } else if (rank == peer) {
        unsigned char *out = malloc(MAXSIZE);

        for (int s = 0; s < NSIZES; s++) {
            fill(out, (size_t)sizes[s], 2 * s);
            MPI_Send(out, sizes[s], MPI_BYTE, 0, 9, MPI_COMM_WORLD);
            fill(out, (size_t)sizes[s], 2 * s + 1);
            MPI_Send(out, sizes[s], MPI_BYTE, 0, 9, MPI_COMM_WORLD);
            token(0, peer);
        }
        free(out);
    }
}

/* MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC; receiving it is a receive from
 * MPI_PROC_NULL; MPI_MESSAGE_NULL is an error; an Improbe that finds
 * nothing says so */
static void case_mprobe_edges(void)
{
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status st;
    MPI_Request r;
    MPI_Comm comm;
    int v = 5, flag = -1, rc;

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    OK(MPI_Mprobe(MPI_PROC_NULL, 0, comm, &m, &st));
    CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL && status_count(&st) == 0,
          "Mprobe from MPI_PROC_NULL: %p %d", (void *)m, st.MPI_SOURCE);
    CHECK(MPI_Message_fromint(MPI_Message_toint(m)) == MPI_MESSAGE_NO_PROC, "NO_PROC's integer");
    OK(MPI_Mrecv(&v, 1, MPI_INT, &m, &st));
    CHECK(m == MPI_MESSAGE_NULL && v == 5 && st.MPI_SOURCE == MPI_PROC_NULL &&
              st.MPI_TAG == MPI_ANY_TAG && status_count(&st) == 0,
          "Mrecv of MPI_MESSAGE_NO_PROC: source %d count %d", st.MPI_SOURCE, status_count(&st));
    OK(MPI_Improbe(MPI_PROC_NULL, 0, comm, &flag, &m, &st));
    CHECK(flag && m == MPI_MESSAGE_NO_PROC, "Improbe from MPI_PROC_NULL");
    OK(MPI_Imrecv(&v, 1, MPI_INT, &m, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && m == MPI_MESSAGE_NULL, "Imrecv of NO_PROC");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    rc = MPI_Mrecv(&v, 1, MPI_INT, &m, &st);
    CHECK(rc == MPI_ERR_REQUEST, "Mrecv of MPI_MESSAGE_NULL: %d", rc);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    flag = -1;
    OK(MPI_Improbe(MPI_ANY_SOURCE, 12345, comm, &flag, &m, &st));
    CHECK(flag == 0 && m == MPI_MESSAGE_NULL, "Improbe found a message never sent");
    MPI_Comm_free(&comm);
}

/* ---- MPI_Isendrecv ----------------------------------------------------------------------- */

static void case_isendrecv(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    unsigned char *out = malloc(MAXSIZE), *in = malloc(MAXSIZE);

    for (int s = 0; s < NSIZES; s++) {
        int n = sizes[s];
        MPI_Request r;
        MPI_Status st;

        fill(out, (size_t)n, rank + s);
        memset(in, 0, (size_t)n);
        OK(MPI_Isendrecv(out, n, MPI_BYTE, next, s, in, n, MPI_BYTE, prev, s, MPI_COMM_WORLD, &r));
        OK(MPI_Wait(&r, &st));
        CHECK(r == MPI_REQUEST_NULL, "Isendrecv's request not freed");
        CHECK(first_bad(in, (size_t)n, prev + s) == (size_t)n, "Isendrecv %d B: wrong at %zu", n,
              first_bad(in, (size_t)n, prev + s));
        CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == s && status_count(&st) == n,
              "Isendrecv %d B: status %d/%d/%d", n, st.MPI_SOURCE, st.MPI_TAG, status_count(&st));
        /* replace: what is in the buffer goes, what arrives replaces it */
        fill(in, (size_t)n, 50 + rank + s);
        OK(MPI_Isendrecv_replace(in, n, MPI_BYTE, next, 100 + s, prev, 100 + s, MPI_COMM_WORLD,
                                 &r));
        OK(MPI_Wait(&r, &st));
        CHECK(first_bad(in, (size_t)n, 50 + prev + s) == (size_t)n,
              "Isendrecv_replace %d B: wrong at %zu", n, first_bad(in, (size_t)n, 50 + prev + s));
        CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 100 + s && status_count(&st) == n,
              "Isendrecv_replace %d B: status %d/%d/%d", n, st.MPI_SOURCE, st.MPI_TAG,
              status_count(&st));
    }
    /* the receive completes first (from MPI_PROC_NULL), the send cannot
     * (a rendezvous the receiver has not matched): the request waits */
    if (rank == 0) {
        MPI_Request r;
        MPI_Status st;
        int flag = -1;

        fill(out, MAXSIZE, 3);
        OK(MPI_Isendrecv_c(out, MAXSIZE, MPI_BYTE, size - 1, 77, in, 0, MPI_BYTE, MPI_PROC_NULL, 77,
                           MPI_COMM_WORLD, &r));
        OK(MPI_Request_get_status(r, &flag, &st));
        CHECK(flag == 0, "Isendrecv complete before its send was received");
        token(0, size - 1);
        OK(MPI_Wait(&r, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && status_count(&st) == 0,
              "Isendrecv from MPI_PROC_NULL: %d", st.MPI_SOURCE);
    } else if (rank == size - 1) {
        MPI_Status st;

        token(0, size - 1);
        MPI_Recv(in, MAXSIZE, MPI_BYTE, 0, 77, MPI_COMM_WORLD, &st);
        CHECK(first_bad(in, MAXSIZE, 3) == MAXSIZE, "Isendrecv's send arrived wrong");
    }
    free(out);
    free(in);
}

/* ---- MPI_Request_get_status_all/any/some ----------------------------------------------- */

static void case_get_status(void)
{
    int peer = size - 1;

    if (rank == 0) {
        int v[3] = {0}, flag = -1, index = -1, outcount = -1, indices[3];
        MPI_Request r[3];
        MPI_Status st[3], one;

        for (int i = 0; i < 3; i++)
            OK(MPI_Irecv(&v[i], 1, MPI_INT, peer, 20 + i, MPI_COMM_WORLD, &r[i]));
        OK(MPI_Request_get_status_any(3, r, &index, &flag, &one));
        CHECK(flag == 0 && index == MPI_UNDEFINED, "get_status_any before any send: %d %d", flag,
              index);
        OK(MPI_Request_get_status_all(3, r, &flag, st));
        CHECK(flag == 0, "get_status_all before the sends");
        token(0, peer); /* send tag 21 */
        do
            OK(MPI_Request_get_status_any(3, r, &index, &flag, &one));
        while (!flag);
        CHECK(index == 1 && one.MPI_TAG == 21 && one.MPI_SOURCE == peer && v[1] == 21,
              "get_status_any: index %d tag %d", index, one.MPI_TAG);
        CHECK(r[1] != MPI_REQUEST_NULL, "get_status_any freed the request");
        OK(MPI_Request_get_status_some(3, r, &outcount, indices, st));
        CHECK(outcount == 1 && indices[0] == 1 && st[0].MPI_TAG == 21, "get_status_some: %d",
              outcount);
        token(0, peer); /* send the others */
        do
            OK(MPI_Request_get_status_all(3, r, &flag, st));
        while (!flag);
        for (int i = 0; i < 3; i++)
            CHECK(st[i].MPI_TAG == 20 + i && v[i] == 20 + i && r[i] != MPI_REQUEST_NULL,
                  "get_status_all [%d]: tag %d v %d", i, st[i].MPI_TAG, v[i]);
        /* the requests are still there, complete, for the program's wait */
        OK(MPI_Waitall(3, r, st));
        for (int i = 0; i < 3; i++)
            CHECK(r[i] == MPI_REQUEST_NULL && st[i].MPI_TAG == 20 + i, "waitall after [%d]", i);
        /* no active request: flag set, MPI_UNDEFINED */
        OK(MPI_Request_get_status_any(3, r, &index, &flag, &one));
        CHECK(flag && index == MPI_UNDEFINED && status_is_empty(&one), "get_status_any of none");
        OK(MPI_Request_get_status_some(3, r, &outcount, indices, st));
        CHECK(outcount == MPI_UNDEFINED, "get_status_some of none: %d", outcount);
    } else if (rank == peer) {
        int t[3] = {20, 21, 22};

        token(0, peer);
        MPI_Send(&t[1], 1, MPI_INT, 0, 21, MPI_COMM_WORLD);
        token(0, peer);
        MPI_Send(&t[0], 1, MPI_INT, 0, 20, MPI_COMM_WORLD);
        MPI_Send(&t[2], 1, MPI_INT, 0, 22, MPI_COMM_WORLD);
    }
}

/* ---- cancelling sends ---------------------------------------------------------------------- */

/* Rank 0 sends the last rank a message of each size on a tag nobody
 * receives and cancels it: before the receiver has read the envelope
 * (@seen 0), or once it sits in its unexpected queue (@seen 1: the
 * receiver probed it).  The wait completes and the status says cancelled;
 * the receiver never gets it, and the next message on that tag is the one
 * it receives. */
static void cancel_unmatched(int synchronous, int seen)
{
    int peer = size - 1;
    unsigned char *buf = malloc(MAXSIZE);

    for (int s = 0; s < NSIZES; s++) {
        int n = sizes[s], tag = 200 + s;

        if (rank == 0) {
            MPI_Request r;
            MPI_Status st;
            int cancelled = 0;

            fill(buf, (size_t)n, s);
            if (synchronous)
                OK(MPI_Issend(buf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r));
            else
                OK(MPI_Isend(buf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r));
            if (seen)
                token(peer, 0);
            OK(MPI_Cancel(&r));
            OK(MPI_Wait(&r, &st));
            OK(MPI_Test_cancelled(&st, &cancelled));
            CHECK(cancelled, "%s %d B%s: not cancelled", synchronous ? "Issend" : "Isend", n,
                  seen ? " (in the unexpected queue)" : "");
            /* the next message on the tag (received after the token) */
            fill(buf, (size_t)n, s + 1);
            OK(MPI_Isend(buf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r));
            token(0, peer);
            OK(MPI_Wait(&r, &st));
        } else if (rank == peer) {
            MPI_Status st;
            int flag = 0;

            if (seen) {
                while (!flag)
                    MPI_Iprobe(0, tag, MPI_COMM_WORLD, &flag, &st);
                token(peer, 0);
            }
            token(0, peer); /* the sender's wait returned */
            memset(buf, 0, (size_t)n);
            MPI_Recv(buf, n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st);
            CHECK(first_bad(buf, (size_t)n, s + 1) == (size_t)n && status_count(&st) == n,
                  "%d B: the receive got the cancelled message (wrong at %zu)", n,
                  first_bad(buf, (size_t)n, s + 1));
            MPI_Iprobe(0, tag, MPI_COMM_WORLD, &flag, &st);
            CHECK(!flag, "%d B: a cancelled message is still there", n);
        }
    }
    free(buf);
}

static void case_cancel_send(void)
{
    cancel_unmatched(0, 0);
    cancel_unmatched(0, 1);
    cancel_unmatched(1, 0);
    cancel_unmatched(1, 1);
}

/* a send the receiver has matched is not cancelled: the wait completes
 * normally and the data arrived */
static void case_cancel_matched(void)
{
    int peer = size - 1;
    unsigned char *buf = malloc(MAXSIZE);

    for (int s = 0; s < NSIZES; s++) {
        int n = sizes[s];

        if (rank == 0) {
            MPI_Request r;
            MPI_Status st;
            int cancelled = 1;

            fill(buf, (size_t)n, s);
            OK(MPI_Isend(buf, n, MPI_BYTE, peer, 300, MPI_COMM_WORLD, &r));
            token(peer, 0); /* the receiver matched it */
            OK(MPI_Cancel(&r));
            OK(MPI_Wait(&r, &st));
            OK(MPI_Test_cancelled(&st, &cancelled));
            CHECK(!cancelled, "%d B: a matched send was cancelled", n);
            token(peer, 0);
        } else if (rank == peer) {
            MPI_Request r;
            MPI_Status st;
            int flag = 1;

            memset(buf, 0, (size_t)n);
            OK(MPI_Irecv(buf, n, MPI_BYTE, 0, 300, MPI_COMM_WORLD, &r));
            OK(MPI_Wait(&r, &st)); /* (the sender progresses in its token's receive) */
            OK(MPI_Iprobe(0, 300, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag, "%d B: a received message is still probed", n);
            token(peer, 0);
            CHECK(first_bad(buf, (size_t)n, s) == (size_t)n && status_count(&st) == n,
                  "%d B: the matched message arrived wrong (at %zu)", n,
                  first_bad(buf, (size_t)n, s));
            token(peer, 0);
        }
        /* the receive is posted first: the cancel comes right behind the
         * envelope, which matches on arrival */
        if (rank == 0) {
            MPI_Request r;
            MPI_Status st;
            int cancelled = 1;

            fill(buf, (size_t)n, s + 7);
            token(peer, 0);
            OK(MPI_Isend(buf, n, MPI_BYTE, peer, 301, MPI_COMM_WORLD, &r));
            OK(MPI_Cancel(&r));
            OK(MPI_Wait(&r, &st));
            OK(MPI_Test_cancelled(&st, &cancelled));
            CHECK(!cancelled, "%d B: a send matched on arrival was cancelled", n);
        } else if (rank == peer) {
            MPI_Request r;
            MPI_Status st;

            memset(buf, 0, (size_t)n);
            OK(MPI_Irecv(buf, n, MPI_BYTE, 0, 301, MPI_COMM_WORLD, &r));
            token(peer, 0);
            OK(MPI_Wait(&r, &st));
            CHECK(first_bad(buf, (size_t)n, s + 7) == (size_t)n && status_count(&st) == n,
                  "%d B: the message matched on arrival arrived wrong (at %zu)", n,
                  first_bad(buf, (size_t)n, s + 7));
        }
    }
    free(buf);
}

/* a cancelled receive among sends on other tags: nothing hangs, and the
 * others arrive (the case); a send cancelled, its request freed
 * before the answer came */
static void case_cancel_mixed(void)
{
    int peer = size - 1;

    if (rank == 0) {
        int v[3] = {0}, cancelled = 0;
        MPI_Request r, q[2];
        MPI_Status st;

        OK(MPI_Irecv(&v[0], 1, MPI_INT, peer, 400, MPI_COMM_WORLD, &r));
        OK(MPI_Irecv(&v[1], 1, MPI_INT, peer, 401, MPI_COMM_WORLD, &q[0]));
        OK(MPI_Irecv(&v[2], 1, MPI_INT, MPI_ANY_SOURCE, 402, MPI_COMM_WORLD, &q[1]));
        token(0, peer);
        OK(MPI_Cancel(&r));
        OK(MPI_Wait(&r, &st));
        OK(MPI_Test_cancelled(&st, &cancelled));
        CHECK(cancelled, "the receive of tag 400 was not cancelled");
        OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        CHECK(v[0] == 0 && v[1] == 401 && v[2] == 402, "mixed: %d %d %d", v[0], v[1], v[2]);
        token(peer, 0);
        OK(MPI_Recv(&v[0], 1, MPI_INT, peer, 403, MPI_COMM_WORLD, &st));
        CHECK(v[0] == 403, "after the freed cancelled send: %d", v[0]);
    } else if (rank == peer) {
        int a = 401, b = 402, c = 403, d = 999;
        MPI_Request r;

        token(0, peer);
        MPI_Send(&a, 1, MPI_INT, 0, 401, MPI_COMM_WORLD);
        MPI_Send(&b, 1, MPI_INT, 0, 402, MPI_COMM_WORLD);
        OK(MPI_Isend(&d, 1, MPI_INT, 0, 403, MPI_COMM_WORLD, &r));
        OK(MPI_Cancel(&r));
        OK(MPI_Request_free(&r));
        token(peer, 0);
        MPI_Send(&c, 1, MPI_INT, 0, 403, MPI_COMM_WORLD);
    }
}

/* ---- MPI_PROC_NULL with MPI_DATATYPE_NULL ------------------------------------------------- */

static void case_proc_null_type_null(void)
{
    MPI_Request r[3];
    MPI_Status st, sts[3];

    OK(MPI_Recv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && status_count(&st) == 0,
          "Recv: %d/%d/%d", st.MPI_SOURCE, st.MPI_TAG, status_count(&st));
    OK(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[1]));
    OK(MPI_Issend(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[2]));
    OK(MPI_Waitall(3, r, sts));
    CHECK(sts[0].MPI_SOURCE == MPI_PROC_NULL && status_count(&sts[0]) == 0, "Irecv: %d/%d",
          sts[0].MPI_SOURCE, status_count(&sts[0]));
    OK(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Ssend(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Bsend(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Sendrecv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, NULL, 0, MPI_DATATYPE_NULL,
                    MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Sendrecv: %d", st.MPI_SOURCE);
    /* still an error toward a rank */
    {
        MPI_Comm comm;
        int rc;

        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        rc = MPI_Send(NULL, 0, MPI_DATATYPE_NULL, 0, 0, comm);
        CHECK(rc == MPI_ERR_TYPE, "MPI_DATATYPE_NULL toward rank 0: %d", rc);
        rc = MPI_Recv(NULL, 1, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, comm, &st);
        CHECK(rc == MPI_ERR_TYPE, "a count of 1 of MPI_DATATYPE_NULL: %d", rc);
        MPI_Comm_free(&comm);
    }
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"persistent", case_persistent},
    {"persistent_modes", case_persistent_modes},
    {"persistent_edges", case_persistent_edges},
    {"mprobe", case_mprobe},
    {"mprobe_edges", case_mprobe_edges},
    {"isendrecv", case_isendrecv},
    {"get_status", case_get_status},
    {"cancel_send", case_cancel_send},
    {"cancel_matched", case_cancel_matched},
    {"cancel_mixed", case_cancel_mixed},
    {"proc_null_type_null", case_proc_null_type_null},
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
    status = check_summary("p2p_more", quiet, 2);
    MPI_Comm_free(&quiet);
    MPI_Finalize();
    return status;
}
