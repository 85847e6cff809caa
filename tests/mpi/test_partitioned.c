/*
 * pbt-mpi-partitioned: partitioned point-to-point communication
 * (MPI_Psend_init, MPI_Precv_init, MPI_Pready, _range, _list,
 * MPI_Parrived, started by MPI_Start/MPI_Startall, completed by MPI_Wait
 * and MPI_Test) of src/mpi/part.c, run under `postbox run -n N [--nodes K]`
 * (any N >= 1; tests/mpi/CMakeLists.txt).  Written to the standard API
 * only.
 *
 * Every rank sends to the next rank of a ring and receives from the
 * previous one.  Checked: the data of several rounds of one request pair
 * (new contents each round, partitions marked ready in scattered order by
 * each of the three calls); send and receive partition counts that differ
 * (a receive partition spanning several send partitions and the other way
 * round, and cuts inside elements: a derived receive datatype); the
 * statuses (source, tag, MPI_Get_count); that a partition arrives while
 * the sender still holds the others back (the receiver sees partition 0
 * with MPI_Parrived before the sender marks partition 1 ready, and
 * partition 1 not yet); that two request pairs with one tag match in the
 * order of their initialization calls whatever order they are started in;
 * pairs on a communicator with the world's ranks reversed and on the world
 * at once, with one tag; partitioned requests and a persistent collective
 * started by one
 * MPI_Startall and completed by MPI_Waitsome and MPI_Testany; MPI_PROC_NULL; a partitioned message
 * beside ordinary ones of the same tag; a longer send than the receive (MPI_ERR_TRUNCATE); and the
 * errors (MPI_Pready on an inactive request, an out-of-range or repeated partition, on a receive
 * request; MPI_Request_free and MPI_Cancel of an active request; MPI_ANY_SOURCE).  Rank 0 prints
 * "partitioned: ok".
 *
 *   pbt-mpi-partitioned [case ...]   run the named cases (default: all)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int np, next, prev;

#define ROUNDS 3
#define WAIT_LIMIT 20.0 /* seconds a polling loop waits before it fails */

static int value(int sender, int round, long i)
{
    return sender * 100003 + round * 1009 + (int)i;
}

/* The error class of @rc. */
static int class_of(int rc)
{
    int cls = -1;

    MPI_Error_class(rc, &cls);
    return cls;
}

/* One pair: @sp send partitions of @sc ints, @rp receive partitions of @rc
 * ints (sp * sc == rp * rc), @rounds rounds, marking ready with @how
 * (0: MPI_Pready one by one from the last, 1: MPI_Pready_range halves,
 * 2: MPI_Pready_list in a scattered order). */
static void pair(int sp, int sc, int rp, int rc, int how)
{
    long total = (long)sp * sc;
    int *sbuf = malloc((size_t)(total ? total : 1) * sizeof(int));
    int *rbuf = malloc((size_t)(total ? total : 1) * sizeof(int));
    int *list = malloc((size_t)(sp ? sp : 1) * sizeof(int));
    MPI_Request reqs[2];
    int tag = 10 + how;

    OK(MPI_Precv_init(rbuf, rp, rc, MPI_INT, prev, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    OK(MPI_Psend_init(sbuf, sp, sc, MPI_INT, next, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Status st[2];
        int count = -1, flag = 0;

        for (long i = 0; i < total; i++) {
            sbuf[i] = value(rank, round, i);
            rbuf[i] = -1;
        }
        OK(MPI_Startall(2, reqs));
        if (how == 0) {
            for (int j = sp - 1; j >= 0; j--)
                OK(MPI_Pready(j, reqs[1]));
        } else if (how == 1 && sp > 0) {
            OK(MPI_Pready_range(sp / 2, sp - 1, reqs[1]));
            if (sp / 2 > 0)
                OK(MPI_Pready_range(0, sp / 2 - 1, reqs[1]));
        } else if (how == 2) {
            for (int k = 0; k < sp; k++)
                list[k] = (k * 7 + 3) % sp; /* a permutation when 7 and sp are coprime */
            OK(MPI_Pready_list(sp, list, reqs[1]));
        }
        OK(MPI_Waitall(2, reqs, st));
        for (long i = 0; i < total; i++) {
            if (rbuf[i] != value(prev, round, i)) {
                CHECK(0, "%dx%d -> %dx%d round %d: element %ld is %d, not %d", sp, sc, rp, rc,
                      round, i, rbuf[i], value(prev, round, i));
                break;
            }
        }
        CHECK(st[0].MPI_SOURCE == prev && st[0].MPI_TAG == tag,
              "receive status source %d tag %d, not %d %d", st[0].MPI_SOURCE, st[0].MPI_TAG, prev,
              tag);
        MPI_Get_count(&st[0], MPI_INT, &count);
        CHECK(count == total, "MPI_Get_count says %d, not %ld", count, total);
        for (int i = 0; i < rp; i++) {
            OK(MPI_Parrived(reqs[0], i, &flag)); /* inactive now: true */
            CHECK(flag, "MPI_Parrived on the inactive request says false");
        }
    }
    OK(MPI_Request_free(&reqs[0]));
    OK(MPI_Request_free(&reqs[1]));
    CHECK(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL,
          "MPI_Request_free left a handle");
    free(sbuf);
    free(rbuf);
    free(list);
}

static void case_data(void)
{
    pair(4, 100, 4, 100, 0);
    pair(8, 50, 2, 200, 1);
    pair(2, 200, 8, 50, 2);
    pair(3, 7, 7, 3, 2);
    pair(5, 20000, 4, 25000, 0); /* rendezvous-sized partitions */
    pair(1, 0, 3, 0, 0);         /* empty partitions */
    pair(0, 5, 0, 5, 1);         /* no partitions */
}

/* A derived receive type (pairs of ints 3 apart) whose elements the send
 * partitions cut in the middle: staged and unpacked per partition. */
static void case_derived(void)
{
    enum {
        SP = 5,
        SC = 3,
        RP = 3,
        RC = 5
    }; /* 15 pairs = 30 ints each side */
    int sbuf[2 * SP * SC], rbuf[3 * RP * RC];
    MPI_Datatype spaced;
    MPI_Request reqs[2];
    MPI_Status st;
    int count = -1;

    MPI_Type_vector(2, 1, 2, MPI_INT, &spaced);
    MPI_Type_create_resized(spaced, 0, 3 * (MPI_Aint)sizeof(int), &spaced);
    MPI_Type_commit(&spaced);
    /* the sender's partitions are 6 ints: 3 pairs, the receiver's 5 pairs */
    OK(MPI_Precv_init(rbuf, RP, RC, spaced, prev, 20, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    OK(MPI_Psend_init(sbuf, SP, 2 * SC, MPI_INT, next, 20, MPI_COMM_WORLD, MPI_INFO_NULL,
                      &reqs[1]));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 2 * SP * SC; i++)
            sbuf[i] = value(rank, round, i);
        for (int i = 0; i < 3 * RP * RC; i++)
            rbuf[i] = -1;
        OK(MPI_Start(&reqs[0]));
        OK(MPI_Start(&reqs[1]));
        OK(MPI_Pready_range(0, SP - 1, reqs[1]));
        OK(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE));
        OK(MPI_Wait(&reqs[0], &st));
        for (int k = 0; k < RP * RC; k++) {
            CHECK(rbuf[3 * k] == value(prev, round, 2 * k) &&
                      rbuf[3 * k + 2] == value(prev, round, 2 * k + 1) && rbuf[3 * k + 1] == -1,
                  "round %d pair %d: %d %d %d", round, k, rbuf[3 * k], rbuf[3 * k + 1],
                  rbuf[3 * k + 2]);
        }
        MPI_Get_count(&st, spaced, &count);
        CHECK(count == RP * RC, "MPI_Get_count of the derived type says %d", count);
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    MPI_Type_free(&spaced);
}

/* Partition 0 arrives while the sender holds partition 1 back until the
 * receiver said it saw partition 0. */
static void case_early(void)
{
    enum {
        N = 1000
    };
    int *sbuf = malloc(2 * N * sizeof(int)), *rbuf = malloc(2 * N * sizeof(int));
    MPI_Request send, recv;
    int flag = 0, seen = 0;
    double until;

    for (int i = 0; i < 2 * N; i++) {
        sbuf[i] = value(rank, 7, i);
        rbuf[i] = -1;
    }
    OK(MPI_Psend_init(sbuf, 2, N, MPI_INT, next, 30, MPI_COMM_WORLD, MPI_INFO_NULL, &send));
    OK(MPI_Precv_init(rbuf, 2, N, MPI_INT, prev, 30, MPI_COMM_WORLD, MPI_INFO_NULL, &recv));
    OK(MPI_Start(&recv));
    OK(MPI_Start(&send));
    OK(MPI_Pready(0, send));
    until = MPI_Wtime() + WAIT_LIMIT;
    while (!flag && MPI_Wtime() < until)
        OK(MPI_Parrived(recv, 0, &flag));
    CHECK(flag, "partition 0 did not arrive before the sender marked partition 1 ready");
    OK(MPI_Parrived(recv, 1, &flag));
    CHECK(!flag, "partition 1 arrived before the sender marked it ready");
    CHECK(rbuf[0] == value(prev, 7, 0) && rbuf[N - 1] == value(prev, 7, N - 1),
          "partition 0 arrived without its data");
    CHECK(rbuf[N] == -1, "partition 1's data is there already");
    if (np > 1) { /* tell the sender, then wait for my receiver's word */
        OK(MPI_Send(&seen, 1, MPI_INT, prev, 31, MPI_COMM_WORLD));
        OK(MPI_Recv(&seen, 1, MPI_INT, next, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    OK(MPI_Pready(1, send));
    OK(MPI_Wait(&send, MPI_STATUS_IGNORE));
    flag = 0;
    until = MPI_Wtime() + WAIT_LIMIT;
    while (!flag && MPI_Wtime() < until)
        OK(MPI_Test(&recv, &flag, MPI_STATUS_IGNORE));
    CHECK(flag, "the receive did not complete");
    CHECK(rbuf[2 * N - 1] == value(prev, 7, 2 * N - 1), "partition 1's data is wrong");
    MPI_Request_free(&send);
    MPI_Request_free(&recv);
    free(sbuf);
    free(rbuf);
}

/* Two pairs with one tag match in the order of the init calls, though the
 * receiver starts them the other way round; an ordinary message with the
 * same tag goes beside them. */
static void case_order(void)
{
    int s1[4], s2[4], r1[4] = {0}, r2[4] = {0}, plain = -1, mine = rank;
    MPI_Request a, b, ra, rb, ps;

    for (int i = 0; i < 4; i++) {
        s1[i] = value(rank, 1, i);
        s2[i] = value(rank, 2, i);
    }
    OK(MPI_Psend_init(s1, 2, 2, MPI_INT, next, 40, MPI_COMM_WORLD, MPI_INFO_NULL, &a));
    OK(MPI_Psend_init(s2, 4, 1, MPI_INT, next, 40, MPI_COMM_WORLD, MPI_INFO_NULL, &b));
    OK(MPI_Precv_init(r1, 1, 4, MPI_INT, prev, 40, MPI_COMM_WORLD, MPI_INFO_NULL, &ra));
    OK(MPI_Precv_init(r2, 2, 2, MPI_INT, prev, 40, MPI_COMM_WORLD, MPI_INFO_NULL, &rb));
    OK(MPI_Isend(&mine, 1, MPI_INT, next, 40, MPI_COMM_WORLD, &ps));
    OK(MPI_Start(&rb));
    OK(MPI_Start(&b));
    OK(MPI_Pready_range(0, 3, b));
    OK(MPI_Start(&a));
    OK(MPI_Pready_list(2, (int[]){1, 0}, a));
    OK(MPI_Start(&ra));
    OK(MPI_Recv(&plain, 1, MPI_INT, prev, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Waitall(4, (MPI_Request[]){a, b, ra, rb}, MPI_STATUSES_IGNORE));
    OK(MPI_Wait(&ps, MPI_STATUS_IGNORE));
    CHECK(plain == prev, "the ordinary message carried %d, not %d", plain, prev);
    for (int i = 0; i < 4; i++) {
        CHECK(r1[i] == value(prev, 1, i), "the first receive got %d at %d", r1[i], i);
        CHECK(r2[i] == value(prev, 2, i), "the second receive got %d at %d", r2[i], i);
    }
    MPI_Request_free(&a);
    MPI_Request_free(&b);
    MPI_Request_free(&ra);
    MPI_Request_free(&rb);
}

/* A pair on a communicator whose ranks are the world's in reverse, while
 * a pair with the same tag and ranks runs on MPI_COMM_WORLD: neither
 * matches the other. */
static void case_comm(void)
{
    int me, n, cnext, cprev, sw[8], rw[8] = {0}, sc[8], rc[8] = {0};
    MPI_Comm rev;
    MPI_Request reqs[4];

    MPI_Comm_split(MPI_COMM_WORLD, 0, np - rank, &rev);
    MPI_Comm_rank(rev, &me);
    MPI_Comm_size(rev, &n);
    CHECK(me == np - 1 - rank, "rank %d in the reversed communicator", me);
    cnext = (me + 1) % n;
    cprev = (me + n - 1) % n;
    for (int i = 0; i < 8; i++) {
        sw[i] = value(rank, 5, i);
        sc[i] = value(rank, 6, i);
    }
    OK(MPI_Precv_init(rc, 4, 2, MPI_INT, cprev, 95, rev, MPI_INFO_NULL, &reqs[0]));
    OK(MPI_Precv_init(rw, 2, 4, MPI_INT, prev, 95, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    OK(MPI_Psend_init(sw, 8, 1, MPI_INT, next, 95, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[2]));
    OK(MPI_Psend_init(sc, 2, 4, MPI_INT, cnext, 95, rev, MPI_INFO_NULL, &reqs[3]));
    OK(MPI_Startall(4, reqs));
    OK(MPI_Pready_range(0, 1, reqs[3]));
    OK(MPI_Pready_range(0, 7, reqs[2]));
    OK(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 8; i++) {
        /* world: from rank - 1; reversed: from its previous, world rank + 1 */
        CHECK(rw[i] == value(prev, 5, i), "the world pair got %d at %d", rw[i], i);
        CHECK(rc[i] == value((rank + 1) % np, 6, i), "the reversed pair got %d at %d", rc[i], i);
    }
    for (int i = 0; i < 4; i++)
        MPI_Request_free(&reqs[i]);
    MPI_Comm_free(&rev);
}

/* Partitioned requests started by one MPI_Startall with a persistent
 * collective, completed by MPI_Waitsome and MPI_Testany loops. */
static void case_mixed(void)
{
    int sbuf[6], rbuf[6], sum = 0, one = 1;
    MPI_Request reqs[3];

    for (int round = 0; round < 2; round++) {
        int left = 3, outcount = 0, indices[3];

        for (int i = 0; i < 6; i++) {
            sbuf[i] = value(rank, round, i);
            rbuf[i] = -1;
        }
        if (round == 0) {
            OK(MPI_Psend_init(sbuf, 3, 2, MPI_INT, next, 80, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &reqs[0]));
            OK(MPI_Allreduce_init(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                  &reqs[1]));
            OK(MPI_Precv_init(rbuf, 2, 3, MPI_INT, prev, 80, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &reqs[2]));
        }
        OK(MPI_Startall(3, reqs));
        OK(MPI_Pready_list(3, (int[]){2, 0, 1}, reqs[0]));
        if (round == 0) {
            while (left > 0) {
                OK(MPI_Waitsome(3, reqs, &outcount, indices, MPI_STATUSES_IGNORE));
                CHECK(outcount > 0, "MPI_Waitsome completed nothing");
                left -= outcount > 0 ? outcount : left;
            }
        } else {
            double until = MPI_Wtime() + WAIT_LIMIT;

            while (left > 0 && MPI_Wtime() < until) {
                int index = -1, flag = 0;

                OK(MPI_Testany(3, reqs, &index, &flag, MPI_STATUS_IGNORE));
                if (flag && index != MPI_UNDEFINED)
                    left--;
            }
            CHECK(left == 0, "MPI_Testany left %d requests", left);
        }
        CHECK(sum == np, "the persistent allreduce gave %d", sum);
        for (int i = 0; i < 6; i++)
            CHECK(rbuf[i] == value(prev, round, i), "round %d element %d is %d", round, i, rbuf[i]);
    }
    for (int i = 0; i < 3; i++)
        OK(MPI_Request_free(&reqs[i]));
}

static void case_proc_null(void)
{
    int buf[4] = {1, 2, 3, 4};
    MPI_Request s, r;
    MPI_Status st;
    int flag = 0, count = -1;

    OK(MPI_Psend_init(buf, 2, 2, MPI_INT, MPI_PROC_NULL, 50, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    OK(MPI_Precv_init(buf, 2, 2, MPI_INT, MPI_PROC_NULL, 50, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    OK(MPI_Startall(2, (MPI_Request[]){s, r}));
    OK(MPI_Pready_range(0, 1, s));
    OK(MPI_Parrived(r, 1, &flag));
    CHECK(flag, "a receive from MPI_PROC_NULL has not arrived");
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0,
          "status of MPI_PROC_NULL: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
    CHECK(buf[0] == 1 && buf[3] == 4, "a receive from MPI_PROC_NULL changed the buffer");
    MPI_Request_free(&s);
    MPI_Request_free(&r);

    /* count 0 of MPI_DATATYPE_NULL toward MPI_PROC_NULL is allowed */
    OK(MPI_Psend_init(NULL, 2, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 51, MPI_COMM_WORLD,
                      MPI_INFO_NULL, &s));
    OK(MPI_Precv_init(NULL, 2, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 51, MPI_COMM_WORLD,
                      MPI_INFO_NULL, &r));
    OK(MPI_Startall(2, (MPI_Request[]){s, r}));
    OK(MPI_Pready_range(0, 1, s));
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "MPI_DATATYPE_NULL from MPI_PROC_NULL: source %d",
          st.MPI_SOURCE);
    MPI_Request_free(&s);
    MPI_Request_free(&r);
}

static void case_truncate(void)
{
    int sbuf[8], rbuf[6];
    MPI_Request s, r;
    MPI_Status st;
    int rc;

    for (int i = 0; i < 8; i++)
        sbuf[i] = value(rank, 3, i);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    OK(MPI_Psend_init(sbuf, 2, 4, MPI_INT, next, 60, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    OK(MPI_Precv_init(rbuf, 2, 3, MPI_INT, prev, 60, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    OK(MPI_Start(&r));
    OK(MPI_Start(&s));
    OK(MPI_Pready_range(0, 1, s));
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    rc = MPI_Wait(&r, &st);
    CHECK(class_of(rc) == MPI_ERR_TRUNCATE, "a longer partitioned send gave %d", rc);
    for (int i = 0; i < 6; i++)
        CHECK(rbuf[i] == value(prev, 3, i), "the truncated receive's element %d is %d", i, rbuf[i]);
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void case_errors(void)
{
    int buf[4] = {0}, rbuf[4], flag = 0, rc;
    MPI_Request s, r, plain;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    OK(MPI_Psend_init(buf, 4, 1, MPI_INT, next, 70, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    OK(MPI_Precv_init(rbuf, 4, 1, MPI_INT, prev, 70, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    rc = MPI_Pready(0, s);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "MPI_Pready on an inactive request gave %d", rc);
    rc = MPI_Pready_range(0, 3, s);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "MPI_Pready_range on an inactive request gave %d", rc);
    OK(MPI_Parrived(r, 0, &flag));
    CHECK(flag, "MPI_Parrived on an inactive request says false");
    OK(MPI_Parrived(MPI_REQUEST_NULL, 0, &flag));
    CHECK(flag, "MPI_Parrived on MPI_REQUEST_NULL says false");
    OK(MPI_Start(&s));
    OK(MPI_Start(&r));
    rc = MPI_Pready(4, s);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Pready of partition 4 of 4 gave %d", rc);
    rc = MPI_Pready(-1, s);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Pready of partition -1 gave %d", rc);
    rc = MPI_Pready_range(2, 1, s);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Pready_range 2..1 gave %d", rc);
    rc = MPI_Pready_range(3, 4, s);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Pready_range 3..4 gave %d", rc);
    rc = MPI_Pready_list(2, (int[]){0, 9}, s);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Pready_list with partition 9 gave %d", rc);
    rc = MPI_Pready(0, r);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "MPI_Pready on a receive request gave %d", rc);
    rc = MPI_Parrived(r, 4, &flag);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Parrived of partition 4 of 4 gave %d", rc);
    rc = MPI_Parrived(s, 0, &flag);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "MPI_Parrived on a send request gave %d", rc);
    rc = MPI_Request_free(&s);
    CHECK(class_of(rc) == MPI_ERR_REQUEST && s != MPI_REQUEST_NULL,
          "MPI_Request_free of an active partitioned request gave %d", rc);
    rc = MPI_Cancel(&r);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "MPI_Cancel of an active partitioned request gave %d",
          rc);
    rc = MPI_Start(&s);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "MPI_Start of an active request gave %d", rc);
    OK(MPI_Pready(2, s));
    rc = MPI_Pready(2, s);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Pready of a partition twice gave %d", rc);
    OK(MPI_Pready_list(3, (int[]){3, 0, 1}, s));
    OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    rc = MPI_Precv_init(rbuf, 4, 1, MPI_INT, MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    CHECK(class_of(rc) == MPI_ERR_RANK, "MPI_Precv_init from MPI_ANY_SOURCE gave %d", rc);
    rc = MPI_Psend_init(buf, -1, 1, MPI_INT, next, 70, MPI_COMM_WORLD, MPI_INFO_NULL, &s);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Psend_init of -1 partitions gave %d", rc);
    rc = MPI_Psend_init(buf, 1, -1, MPI_INT, next, 70, MPI_COMM_WORLD, MPI_INFO_NULL, &s);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "MPI_Psend_init of count -1 gave %d", rc);
    rc = MPI_Psend_init(buf, 1, 1, MPI_INT, next, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &s);
    CHECK(class_of(rc) == MPI_ERR_TAG, "MPI_Psend_init with MPI_ANY_TAG gave %d", rc);
    /* a request not partitioned */
    OK(MPI_Irecv(rbuf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &plain));
    rc = MPI_Pready(0, plain);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "MPI_Pready on an MPI_Irecv request gave %d", rc);
    OK(MPI_Wait(&plain, MPI_STATUS_IGNORE));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"data", case_data},           {"derived", case_derived},   {"early", case_early},
    {"order", case_order},         {"mixed", case_mixed},       {"comm", case_comm},
    {"proc_null", case_proc_null}, {"truncate", case_truncate}, {"errors", case_errors},
};

int main(int argc, char **argv)
{
    int status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    next = (rank + 1) % np;
    prev = (rank + np - 1) % np;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int wanted = argc <= 1;

        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], cases[i].name) == 0;
        if (wanted)
            cases[i].run();
    }
    status = check_summary("partitioned", MPI_COMM_WORLD, 1 << 21);
    MPI_Finalize();
    return status;
}
