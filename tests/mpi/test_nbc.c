/*
 * pbt-mpi-nbc: the nonblocking collectives (MPI_Ibarrier .. MPI_Iexscan)
 * and the persistent ones (MPI_Barrier_init .. MPI_Exscan_init, MPI_Start,
 * MPI_Startall) of src/mpi/nbc.c, run under `postbox run -n N [--nodes K]`
 * (any N >= 1; tests/mpi/CMakeLists.txt).  Written to the standard API
 * only.
 *
 * Every collective in both forms is checked against a serial reference
 * (each rank computes what every rank contributed) with several counts,
 * every root, MPI_IN_PLACE, derived datatypes, a large-count form, a
 * non-commutative user op in rank order; on MPI_COMM_WORLD and on a split
 * communicator whose ranks are in reverse order.  A persistent request runs
 * several times with new buffer contents each time.  Then: several
 * collectives in flight at once on one communicator and on two, completed
 * by MPI_Waitall, _any, _some and MPI_Test loops; point-to-point traffic
 * while they are in flight; a blocking collective started while a
 * nonblocking one is in flight; an MPI_Ibarrier that must complete while
 * its rank waits in MPI_Recv for a message that is sent only after the
 * barrier completed elsewhere (progress without a wait on the barrier);
 * and the errors (MPI_Cancel, MPI_Request_free of an active collective,
 * MPI_Start of a non-persistent request, bad arguments).  Rank 0 prints
 * "nbc: ok" at the end.
 *
 *   pbt-mpi-nbc [case ...]   run the named cases (default: all)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static MPI_Comm comm; /* the communicator under test */
static int me, np;    /* rank and size in it */

#define SENTINEL (-7)
#define ITERS 3 /* starts of each persistent request */

static const int counts[] = {0, 1, 1000, 40000};
#define NCOUNTS ((int)(sizeof(counts) / sizeof(counts[0])))

/* how a collective runs: MPI_IX and a wait, or MPI_X_init and MPI_Start */
enum {
    NB,
    PERSIST
};

static const char *const mode_name[] = {"nonblocking", "persistent"};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        printf("nbc FAIL rank %d: out of memory for %zu bytes\n", rank, n);
        exit(1);
    }
    return p;
}

static int *ints(size_t n, int value)
{
    int *p = xmalloc(n * sizeof(int));

    for (size_t i = 0; i < n; i++)
        p[i] = value;
    return p;
}

/* element @i of rank @r's data in iteration @it */
static int val(int r, long i, int it)
{
    return (r + 1) * 1000 + (int)i * 7 + it * 13;
}

/* element @i of the block rank @src sends rank @dst */
static int val2(int src, int dst, long i, int it)
{
    return src * 7919 + dst * 104729 + (int)i * 3 + it * 11;
}

/* the count of rank @r's block in the v-collectives */
static int vcount(int r, int n)
{
    return n + r % 3;
}

/* the displacements of the v-collectives: blocks in rank order with a gap
 * of 1 element; @return the total elements */
static int vdispls(int n, int *displs)
{
    int at = 0;

    for (int r = 0; r < np; r++) {
        displs[r] = at;
        at += vcount(r, n) + 1;
    }
    return at;
}

/* The persistent request (PERSIST) or the nonblocking one of iteration
 * @it: made by @icall, or @initcall once then MPI_Start each iteration. */
#define INIT(initcall)                                                                             \
    do {                                                                                           \
        if (mode == PERSIST)                                                                       \
            OK(initcall);                                                                          \
    } while (0)
#define START(icall)                                                                               \
    do {                                                                                           \
        if (mode == NB)                                                                            \
            OK(icall);                                                                             \
        else                                                                                       \
            OK(MPI_Start(&req));                                                                   \
    } while (0)
#define COMPLETE()                                                                                 \
    do {                                                                                           \
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));                                                     \
        CHECK((req == MPI_REQUEST_NULL) == (mode == NB), "%s: request after MPI_Wait",             \
              mode_name[mode]);                                                                    \
    } while (0)
#define FREE()                                                                                     \
    do {                                                                                           \
        if (mode == PERSIST)                                                                       \
            OK(MPI_Request_free(&req));                                                            \
        CHECK(req == MPI_REQUEST_NULL, "request not freed");                                       \
    } while (0)
#define ITERATIONS (mode == PERSIST ? ITERS : 1)

/* ---- barrier, bcast ------------------------------------------------------------ */

static void t_barrier(int mode)
{
    MPI_Request req = MPI_REQUEST_NULL;

    INIT(MPI_Barrier_init(comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        START(MPI_Ibarrier(comm, &req));
        COMPLETE();
    }
    FREE();
}

static void t_bcast(int mode, int n, int root)
{
    int *buf = ints((size_t)n, SENTINEL);
    MPI_Request req = MPI_REQUEST_NULL;

    INIT(MPI_Bcast_init(buf, n, MPI_INT, root, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n; i++)
            buf[i] = me == root ? val(root, i, it) : SENTINEL;
        START(MPI_Ibcast(buf, n, MPI_INT, root, comm, &req));
        COMPLETE();
        for (int i = 0; i < n; i++) {
            if (buf[i] != val(root, i, it)) {
                CHECK(0, "%s bcast n %d root %d it %d: [%d] = %d", mode_name[mode], n, root, it, i,
                      buf[i]);
                break;
            }
        }
    }
    FREE();
    free(buf);
}

/* a strided datatype (every other int) and the large-count form */
static void t_bcast_derived(int mode, int n)
{
    int *buf = ints(2 * (size_t)n, SENTINEL);
    MPI_Datatype every_other;
    MPI_Request req = MPI_REQUEST_NULL;

    OK(MPI_Type_vector(n, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));
    INIT(MPI_Bcast_init_c(buf, 1, every_other, np - 1, comm, MPI_INFO_NULL, &req));
    /* the program may free the type while the collective uses it */
    OK(MPI_Type_free(&every_other));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < 2 * n; i++)
            buf[i] = me == np - 1 && i % 2 == 0 ? val(0, i, it) : SENTINEL;
        if (mode == NB) {
            OK(MPI_Type_vector(n, 1, 2, MPI_INT, &every_other));
            OK(MPI_Type_commit(&every_other));
        }
        START(MPI_Ibcast_c(buf, 1, every_other, np - 1, comm, &req));
        if (mode == NB)
            OK(MPI_Type_free(&every_other));
        COMPLETE();
        for (int i = 0; i < 2 * n; i++) {
            int want = i % 2 == 0 ? val(0, i, it) : SENTINEL;

            if (buf[i] != want) {
                CHECK(0, "%s strided bcast n %d: [%d] = %d, not %d", mode_name[mode], n, i, buf[i],
                      want);
                break;
            }
        }
    }
    FREE();
    free(buf);
}

/* ---- gathers and scatters ------------------------------------------------------------ */

static void t_gather(int mode, int n, int root, int in_place)
{
    int *send = ints((size_t)n, 0), *recv = ints((size_t)n * np, SENTINEL);
    const void *sb = in_place && me == root ? MPI_IN_PLACE : send;
    MPI_Request req = MPI_REQUEST_NULL;

    INIT(MPI_Gather_init(sb, n, MPI_INT, recv, n, MPI_INT, root, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n; i++)
            send[i] = val(me, i, it);
        for (int i = 0; i < n * np; i++)
            recv[i] = in_place && me == root && i / n == root ? val(root, i % n, it) : SENTINEL;
        START(MPI_Igather(sb, n, MPI_INT, recv, n, MPI_INT, root, comm, &req));
        COMPLETE();
        for (int i = 0; me == root && i < n * np; i++) {
            if (recv[i] != val(i / n, i % n, it)) {
                CHECK(0, "%s gather n %d root %d in_place %d: [%d] = %d", mode_name[mode], n, root,
                      in_place, i, recv[i]);
                break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
}

static void t_gatherv(int mode, int n, int root)
{
    int *displs = ints((size_t)np, 0), *rc = ints((size_t)np, 0);
    int total = vdispls(n, displs);
    int *send = ints((size_t)vcount(me, n), 0), *recv = ints((size_t)total, SENTINEL);
    MPI_Request req = MPI_REQUEST_NULL;

    for (int r = 0; r < np; r++)
        rc[r] = vcount(r, n);
    INIT(MPI_Gatherv_init(send, vcount(me, n), MPI_INT, recv, rc, displs, MPI_INT, root, comm,
                          MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < vcount(me, n); i++)
            send[i] = val(me, i, it);
        START(MPI_Igatherv(send, vcount(me, n), MPI_INT, recv, rc, displs, MPI_INT, root, comm,
                           &req));
        COMPLETE();
        for (int r = 0; me == root && r < np; r++) {
            for (int i = 0; i <= vcount(r, n); i++) {
                int want = i < vcount(r, n) ? val(r, i, it) : SENTINEL;

                CHECK(recv[displs[r] + i] == want, "%s gatherv n %d root %d: rank %d [%d] = %d",
                      mode_name[mode], n, root, r, i, recv[displs[r] + i]);
                if (recv[displs[r] + i] != want)
                    break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
    free(displs);
    free(rc);
}

/* the large-count form with MPI_Count and MPI_Aint arrays; a strided send
 * type against a contiguous receive */
static void t_gatherv_c(int mode, int n)
{
    MPI_Count *rc = xmalloc((size_t)np * sizeof(MPI_Count));
    MPI_Aint *displs = xmalloc((size_t)np * sizeof(MPI_Aint));
    int *send = ints(2 * (size_t)n, SENTINEL), *recv = ints((size_t)n * np, SENTINEL);
    MPI_Datatype every_other;
    MPI_Request req = MPI_REQUEST_NULL;

    OK(MPI_Type_vector(n, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));
    for (int r = 0; r < np; r++) {
        rc[r] = n;
        displs[r] = (MPI_Aint)(np - 1 - r) * n; /* blocks in reverse order */
    }
    INIT(MPI_Gatherv_init_c(send, 1, every_other, recv, rc, displs, MPI_INT, 0, comm, MPI_INFO_NULL,
                            &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n; i++)
            send[2 * i] = val(me, i, it);
        START(MPI_Igatherv_c(send, 1, every_other, recv, rc, displs, MPI_INT, 0, comm, &req));
        COMPLETE();
        for (int i = 0; me == 0 && i < n * np; i++) {
            int r = np - 1 - i / n;

            if (recv[i] != val(r, i % n, it)) {
                CHECK(0, "%s gatherv_c n %d: [%d] = %d", mode_name[mode], n, i, recv[i]);
                break;
            }
        }
    }
    FREE();
    OK(MPI_Type_free(&every_other));
    free(send);
    free(recv);
    free(rc);
    free(displs);
}

static void t_scatter(int mode, int n, int root, int in_place)
{
    int *send = ints((size_t)n * np, 0), *recv = ints((size_t)n, SENTINEL);
    void *rb = in_place && me == root ? MPI_IN_PLACE : recv;
    MPI_Request req = MPI_REQUEST_NULL;

    INIT(MPI_Scatter_init(send, n, MPI_INT, rb, n, MPI_INT, root, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n * np; i++)
            send[i] = val(i / n, i % n, it);
        for (int i = 0; i < n; i++)
            recv[i] = SENTINEL;
        START(MPI_Iscatter(send, n, MPI_INT, rb, n, MPI_INT, root, comm, &req));
        COMPLETE();
        for (int i = 0; i < n && rb != MPI_IN_PLACE; i++) {
            if (recv[i] != val(me, i, it)) {
                CHECK(0, "%s scatter n %d root %d: [%d] = %d", mode_name[mode], n, root, i,
                      recv[i]);
                break;
            }
        }
        for (int i = 0; rb == MPI_IN_PLACE && i < n * np; i++)
            CHECK(send[i] == val(i / n, i % n, it), "in-place scatter changed the send buffer");
    }
    FREE();
    free(send);
    free(recv);
}

static void t_scatterv(int mode, int n, int root)
{
    int *displs = ints((size_t)np, 0), *sc = ints((size_t)np, 0);
    int total = vdispls(n, displs);
    int *send = ints((size_t)total, SENTINEL), *recv = ints((size_t)vcount(me, n) + 1, SENTINEL);
    MPI_Request req = MPI_REQUEST_NULL;

    for (int r = 0; r < np; r++)
        sc[r] = vcount(r, n);
    INIT(MPI_Scatterv_init(send, sc, displs, MPI_INT, recv, vcount(me, n), MPI_INT, root, comm,
                           MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int r = 0; r < np; r++) {
            for (int i = 0; i < vcount(r, n); i++)
                send[displs[r] + i] = val(r, i, it);
        }
        START(MPI_Iscatterv(send, sc, displs, MPI_INT, recv, vcount(me, n), MPI_INT, root, comm,
                            &req));
        COMPLETE();
        for (int i = 0; i <= vcount(me, n); i++) {
            int want = i < vcount(me, n) ? val(me, i, it) : SENTINEL;

            if (recv[i] != want) {
                CHECK(0, "%s scatterv n %d root %d: [%d] = %d", mode_name[mode], n, root, i,
                      recv[i]);
                break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
    free(displs);
    free(sc);
}

static void t_allgather(int mode, int n, int in_place)
{
    int *send = ints((size_t)n, 0), *recv = ints((size_t)n * np, SENTINEL);
    const void *sb = in_place ? MPI_IN_PLACE : send;
    MPI_Request req = MPI_REQUEST_NULL;

    INIT(MPI_Allgather_init(sb, n, MPI_INT, recv, n, MPI_INT, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n; i++)
            send[i] = val(me, i, it);
        for (int i = 0; i < n * np; i++)
            recv[i] = in_place && i / n == me ? val(me, i % n, it) : SENTINEL;
        START(MPI_Iallgather(sb, n, MPI_INT, recv, n, MPI_INT, comm, &req));
        COMPLETE();
        for (int i = 0; i < n * np; i++) {
            if (recv[i] != val(i / n, i % n, it)) {
                CHECK(0, "%s allgather n %d in_place %d: [%d] = %d", mode_name[mode], n, in_place,
                      i, recv[i]);
                break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
}

static void t_allgatherv(int mode, int n)
{
    int *displs = ints((size_t)np, 0), *rc = ints((size_t)np, 0);
    int total = vdispls(n, displs);
    int *send = ints((size_t)vcount(me, n), 0), *recv = ints((size_t)total, SENTINEL);
    MPI_Request req = MPI_REQUEST_NULL;

    for (int r = 0; r < np; r++)
        rc[r] = vcount(r, n);
    INIT(MPI_Allgatherv_init(send, vcount(me, n), MPI_INT, recv, rc, displs, MPI_INT, comm,
                             MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < vcount(me, n); i++)
            send[i] = val(me, i, it);
        START(MPI_Iallgatherv(send, vcount(me, n), MPI_INT, recv, rc, displs, MPI_INT, comm, &req));
        COMPLETE();
        for (int r = 0; r < np; r++) {
            for (int i = 0; i <= vcount(r, n); i++) {
                int want = i < vcount(r, n) ? val(r, i, it) : SENTINEL;

                CHECK(recv[displs[r] + i] == want, "%s allgatherv n %d: rank %d [%d] = %d",
                      mode_name[mode], n, r, i, recv[displs[r] + i]);
                if (recv[displs[r] + i] != want)
                    break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
    free(displs);
    free(rc);
}

/* ---- all-to-all ---------------------------------------------------------------------- */

static void t_alltoall(int mode, int n, int in_place)
{
    int *send = ints((size_t)n * np, 0), *recv = ints((size_t)n * np, SENTINEL);
    const void *sb = in_place ? MPI_IN_PLACE : send;
    MPI_Request req = MPI_REQUEST_NULL;

    INIT(MPI_Alltoall_init(sb, n, MPI_INT, recv, n, MPI_INT, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n * np; i++) {
            send[i] = val2(me, i / n, i % n, it);
            recv[i] = in_place ? send[i] : SENTINEL;
        }
        START(MPI_Ialltoall(sb, n, MPI_INT, recv, n, MPI_INT, comm, &req));
        COMPLETE();
        for (int i = 0; i < n * np; i++) {
            if (recv[i] != val2(i / n, me, i % n, it)) {
                CHECK(0, "%s alltoall n %d in_place %d: [%d] = %d", mode_name[mode], n, in_place, i,
                      recv[i]);
                break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
}

/* the count rank @src sends rank @dst in alltoallv/w */
static int pair_count(int src, int dst, int n)
{
    return n + (src + 2 * dst) % 3;
}

static void t_alltoallv(int mode, int n)
{
    int *sc = ints((size_t)np, 0), *sd = ints((size_t)np, 0);
    int *rc = ints((size_t)np, 0), *rd = ints((size_t)np, 0);
    int stotal = 0, rtotal = 0;
    int *send, *recv;
    MPI_Request req = MPI_REQUEST_NULL;

    for (int r = 0; r < np; r++) {
        sc[r] = pair_count(me, r, n);
        rc[r] = pair_count(r, me, n);
    }
    for (int r = np - 1; r >= 0; r--) { /* blocks in reverse order, with a gap */
        sd[r] = stotal;
        stotal += sc[r] + 1;
        rd[r] = rtotal;
        rtotal += rc[r] + 1;
    }
    send = ints((size_t)stotal, SENTINEL);
    recv = ints((size_t)rtotal, SENTINEL);
    INIT(MPI_Alltoallv_init(send, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, comm, MPI_INFO_NULL,
                            &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int r = 0; r < np; r++) {
            for (int i = 0; i < sc[r]; i++)
                send[sd[r] + i] = val2(me, r, i, it);
        }
        START(MPI_Ialltoallv(send, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, comm, &req));
        COMPLETE();
        for (int r = 0; r < np; r++) {
            for (int i = 0; i <= rc[r]; i++) {
                int want = i < rc[r] ? val2(r, me, i, it) : SENTINEL;

                CHECK(recv[rd[r] + i] == want, "%s alltoallv n %d: from %d [%d] = %d",
                      mode_name[mode], n, r, i, recv[rd[r] + i]);
                if (recv[rd[r] + i] != want)
                    break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* per-peer datatypes (odd peers' blocks as one derived element each) and
 * byte displacements; in place too, where the counts must be symmetric */
static void t_alltoallw(int mode, int n, int in_place)
{
#define W_COUNT(src, dst) (in_place ? n + ((src) + (dst)) % 3 : pair_count(src, dst, n))
    int *sc = ints((size_t)np, 0), *sd = ints((size_t)np, 0);
    int *rc = ints((size_t)np, 0), *rd = ints((size_t)np, 0);
    MPI_Datatype *st = xmalloc((size_t)np * sizeof(MPI_Datatype));
    MPI_Datatype *rt = xmalloc((size_t)np * sizeof(MPI_Datatype));
    int stotal = 0, rtotal = 0;
    int *send, *recv;
    MPI_Request req = MPI_REQUEST_NULL;

    for (int r = 0; r < np; r++) {
        int scount = W_COUNT(me, r);

        sc[r] = scount;
        st[r] = MPI_INT;
        rc[r] = W_COUNT(r, me);
        rt[r] = MPI_INT;
        if (r % 2) { /* one element of a contiguous type of the count */
            OK(MPI_Type_contiguous(rc[r], MPI_INT, &rt[r]));
            OK(MPI_Type_commit(&rt[r]));
            rc[r] = 1;
        }
        sd[r] = stotal * (int)sizeof(int);
        stotal += scount + 1;
        rd[r] = rtotal * (int)sizeof(int);
        rtotal += W_COUNT(r, me) + 1;
    }
    send = ints((size_t)stotal, SENTINEL);
    recv = ints((size_t)rtotal, SENTINEL);
    const void *sb = in_place ? MPI_IN_PLACE : send;

    INIT(MPI_Alltoallw_init(sb, sc, sd, st, recv, rc, rd, rt, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int r = 0; r < np; r++) {
            int *block =
                in_place ? recv + rd[r] / (int)sizeof(int) : send + sd[r] / (int)sizeof(int);

            for (int i = 0; i < W_COUNT(me, r); i++)
                block[i] = val2(me, r, i, it);
        }
        START(MPI_Ialltoallw(sb, sc, sd, st, recv, rc, rd, rt, comm, &req));
        COMPLETE();
        for (int r = 0; r < np; r++) {
            int m = W_COUNT(r, me), *block = recv + rd[r] / (int)sizeof(int);

            for (int i = 0; i <= m; i++) {
                int want = i < m ? val2(r, me, i, it) : SENTINEL;

                CHECK(block[i] == want, "%s alltoallw n %d in_place %d: from %d [%d] = %d",
                      mode_name[mode], n, in_place, r, i, block[i]);
                if (block[i] != want)
                    break;
            }
        }
    }
    FREE();
    for (int r = 0; r < np; r++) {
        if (rt[r] != MPI_INT)
            OK(MPI_Type_free(&rt[r]));
    }
    free(send);
    free(recv);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(st);
    free(rt);
#undef W_COUNT
}

/* ---- reductions --------------------------------------------------------------------- */

/* A non-commutative op: affine maps x -> a x + b (mod 2^32), composed in
 * rank order ("apply the lower rank's map first"). */
typedef struct {
    uint32_t a, b;
} affine_t;

static void compose(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const affine_t *f = in;
    affine_t *g = inout;

    (void)type;
    for (int i = 0; i < *len; i++) {
        affine_t h = {f[i].a * g[i].a, f[i].b * g[i].a + g[i].b};

        g[i] = h;
    }
}

static MPI_Datatype affine_type;
static MPI_Op affine_op;

static affine_t affine_val(int r, long i, int it)
{
    return (affine_t){2u * (uint32_t)(r + it) + 1u, (uint32_t)(r * 31 + i + it)};
}

/* the composition of ranks @first .. @last's maps, in rank order */
static affine_t affine_fold(int first, int last, long i, int it)
{
    affine_t acc = {1, 0};

    for (int r = first; r <= last; r++) {
        affine_t f = affine_val(r, i, it);

        acc = (affine_t){acc.a * f.a, acc.b * f.a + f.b};
    }
    return acc;
}

/* the sum of val(r, i, it) over ranks @first .. @last */
static int sum_fold(int first, int last, long i, int it)
{
    int s = 0;

    for (int r = first; r <= last; r++)
        s += val(r, i, it);
    return s;
}

/* The reductions: kind 0 Reduce (to @root), 1 Allreduce, 2 Scan, 3 Exscan;
 * @affine: the non-commutative op, else MPI_SUM on int. */
enum {
    K_REDUCE,
    K_ALLREDUCE,
    K_SCAN,
    K_EXSCAN
};
static const char *const kind_name[] = {"reduce", "allreduce", "scan", "exscan"};

static void t_reduction(int mode, int kind, int n, int root, int in_place, int affine)
{
    size_t unit = affine ? sizeof(affine_t) : sizeof(int);
    MPI_Datatype type = affine ? affine_type : MPI_INT;
    MPI_Op op = affine ? affine_op : MPI_SUM;
    char *send = xmalloc((size_t)n * unit), *recv = xmalloc((size_t)n * unit);
    int use_in_place = in_place && (kind != K_REDUCE || me == root);
    const void *sb = use_in_place ? MPI_IN_PLACE : send;
    MPI_Request req = MPI_REQUEST_NULL;

    if (kind == K_REDUCE)
        INIT(MPI_Reduce_init(sb, recv, n, type, op, root, comm, MPI_INFO_NULL, &req));
    else if (kind == K_ALLREDUCE)
        INIT(MPI_Allreduce_init(sb, recv, n, type, op, comm, MPI_INFO_NULL, &req));
    else if (kind == K_SCAN)
        INIT(MPI_Scan_init(sb, recv, n, type, op, comm, MPI_INFO_NULL, &req));
    else
        INIT(MPI_Exscan_init(sb, recv, n, type, op, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n; i++) {
            if (affine)
                ((affine_t *)send)[i] = affine_val(me, i, it);
            else
                ((int *)send)[i] = val(me, i, it);
        }
        if (use_in_place)
            memcpy(recv, send, (size_t)n * unit);
        else
            memset(recv, 0x5a, (size_t)n * unit);
        if (kind == K_REDUCE)
            START(MPI_Ireduce(sb, recv, n, type, op, root, comm, &req));
        else if (kind == K_ALLREDUCE)
            START(MPI_Iallreduce(sb, recv, n, type, op, comm, &req));
        else if (kind == K_SCAN)
            START(MPI_Iscan(sb, recv, n, type, op, comm, &req));
        else
            START(MPI_Iexscan(sb, recv, n, type, op, comm, &req));
        COMPLETE();
        if ((kind == K_REDUCE && me != root) || (kind == K_EXSCAN && me == 0))
            continue;
        for (int i = 0; i < n; i++) {
            int last = kind == K_SCAN ? me : kind == K_EXSCAN ? me - 1 : np - 1;
            int good;

            if (affine) {
                affine_t want = affine_fold(0, last, i, it), got = ((affine_t *)recv)[i];

                good = want.a == got.a && want.b == got.b;
            } else {
                good = ((int *)recv)[i] == sum_fold(0, last, i, it);
            }
            if (!good) {
                CHECK(0, "%s %s n %d root %d in_place %d affine %d it %d: wrong at [%d]",
                      mode_name[mode], kind_name[kind], n, root, in_place, affine, it, i);
                break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
}

/* Reduce_scatter_block (@block) or Reduce_scatter with vcount blocks. */
static void t_reduce_scatter(int mode, int n, int block, int in_place, int affine)
{
    size_t unit = affine ? sizeof(affine_t) : sizeof(int);
    MPI_Datatype type = affine ? affine_type : MPI_INT;
    MPI_Op op = affine ? affine_op : MPI_SUM;
    int *rc = ints((size_t)np, 0), total = 0, first = 0;
    char *send, *recv;
    MPI_Request req = MPI_REQUEST_NULL;

    for (int r = 0; r < np; r++) {
        rc[r] = block ? n : vcount(r, n);
        if (r < me)
            first += rc[r];
        total += rc[r];
    }
    send = xmalloc((size_t)total * unit);
    recv = xmalloc((size_t)total * unit);
    const void *sb = in_place ? MPI_IN_PLACE : send;

    if (block)
        INIT(MPI_Reduce_scatter_block_init(sb, recv, n, type, op, comm, MPI_INFO_NULL, &req));
    else
        INIT(MPI_Reduce_scatter_init(sb, recv, rc, type, op, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < total; i++) {
            if (affine)
                ((affine_t *)send)[i] = affine_val(me, i, it);
            else
                ((int *)send)[i] = val(me, i, it);
        }
        if (in_place)
            memcpy(recv, send, (size_t)total * unit);
        if (block)
            START(MPI_Ireduce_scatter_block(sb, recv, n, type, op, comm, &req));
        else
            START(MPI_Ireduce_scatter(sb, recv, rc, type, op, comm, &req));
        COMPLETE();
        for (int i = 0; i < rc[me]; i++) {
            int good;

            if (affine) {
                affine_t want = affine_fold(0, np - 1, first + i, it), got = ((affine_t *)recv)[i];

                good = want.a == got.a && want.b == got.b;
            } else {
                good = ((int *)recv)[i] == sum_fold(0, np - 1, first + i, it);
            }
            if (!good) {
                CHECK(0, "%s reduce_scatter%s n %d in_place %d affine %d: wrong at [%d]",
                      mode_name[mode], block ? "_block" : "", n, in_place, affine, i);
                break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
    free(rc);
}

/* the large-count forms of the reductions, with a predefined op on double */
static void t_allreduce_c(int mode, int n)
{
    double *send = xmalloc((size_t)n * sizeof(double)), *recv = xmalloc((size_t)n * sizeof(double));
    MPI_Request req = MPI_REQUEST_NULL;

    INIT(MPI_Allreduce_init_c(send, recv, n, MPI_DOUBLE, MPI_MAX, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n; i++)
            send[i] = (double)((me * 37 + i + it) % np) + 0.5;
        START(MPI_Iallreduce_c(send, recv, n, MPI_DOUBLE, MPI_MAX, comm, &req));
        COMPLETE();
        for (int i = 0; i < n; i++) {
            double want = 0;

            for (int r = 0; r < np; r++) {
                double v = (double)((r * 37 + i + it) % np) + 0.5;

                want = v > want ? v : want;
            }
            if (recv[i] != want) {
                CHECK(0, "%s allreduce_c MAX n %d: [%d] = %g", mode_name[mode], n, i, recv[i]);
                break;
            }
        }
    }
    FREE();
    free(send);
    free(recv);
}

/* a predefined op on a strided datatype (the packed reduction path), the
 * gaps left untouched */
static void t_allreduce_derived(int mode, int n)
{
    int *send = ints(2 * (size_t)n, SENTINEL), *recv = ints(2 * (size_t)n, SENTINEL);
    MPI_Datatype every_other;
    MPI_Request req = MPI_REQUEST_NULL;

    OK(MPI_Type_vector(n, 1, 2, MPI_INT, &every_other));
    OK(MPI_Type_commit(&every_other));
    INIT(MPI_Allreduce_init(send, recv, 1, every_other, MPI_SUM, comm, MPI_INFO_NULL, &req));
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < n; i++)
            send[2 * i] = val(me, i, it);
        START(MPI_Iallreduce(send, recv, 1, every_other, MPI_SUM, comm, &req));
        COMPLETE();
        for (int i = 0; i < 2 * n; i++) {
            int want = i % 2 ? SENTINEL : sum_fold(0, np - 1, i / 2, it);

            if (recv[i] != want) {
                CHECK(0, "%s strided allreduce n %d: [%d] = %d, not %d", mode_name[mode], n, i,
                      recv[i], want);
                break;
            }
        }
    }
    FREE();
    OK(MPI_Type_free(&every_other));
    free(send);
    free(recv);
}

/* ---- the cases ------------------------------------------------------------------ */

/* the roots the rooted collectives run with: 0, 1, the last rank and the
 * middle one (every rank up to 4) */
static int next_root(int root)
{
    if (root < 1)
        return root + 1;
    if (root < np / 2)
        return np / 2;
    return root < np - 1 ? np - 1 : np;
}

/* every collective in both forms, with counts up to @max_count */
static void run_each(int max_count)
{
    for (int mode = NB; mode <= PERSIST; mode++) {
        t_barrier(mode);
        for (int c = 0; c < NCOUNTS && counts[c] <= max_count; c++) {
            int n = counts[c];

            for (int root = 0; root < np; root = next_root(root)) {
                t_bcast(mode, n, root);
                t_gather(mode, n, root, root % 2);
                t_gatherv(mode, n, root);
                t_scatter(mode, n, root, root % 2);
                t_scatterv(mode, n, root);
                t_reduction(mode, K_REDUCE, n, root, root % 2, 0);
                t_reduction(mode, K_REDUCE, n, root, 0, 1);
            }
            t_bcast_derived(mode, n);
            t_gatherv_c(mode, n);
            t_allgather(mode, n, 0);
            t_allgather(mode, n, 1);
            t_allgatherv(mode, n);
            t_alltoall(mode, n, 0);
            t_alltoall(mode, n, 1);
            t_alltoallv(mode, n);
            t_alltoallw(mode, n, 0);
            t_alltoallw(mode, n, 1);
            for (int kind = K_ALLREDUCE; kind <= K_EXSCAN; kind++) {
                for (int in_place = 0; in_place <= 1; in_place++) {
                    t_reduction(mode, kind, n, 0, in_place, 0);
                    t_reduction(mode, kind, n, 0, in_place, 1);
                }
            }
            for (int block = 0; block <= 1; block++) {
                t_reduce_scatter(mode, n, block, 0, 0);
                t_reduce_scatter(mode, n, block, 1, 1);
            }
            t_allreduce_c(mode, n);
            if (n > 0) /* (a vector of no ints has no basic type: MPI_ERR_OP) */
                t_allreduce_derived(mode, n);
        }
    }
}

/* (beyond 4 ranks without the largest count: the other cases move
 * messages that large, and the tests stay short) */
static void case_each(void)
{
    run_each(np > 4 ? 1000 : counts[NCOUNTS - 1]);
}

/* Run every collective with counts up to @max_count on @c. */
static void run_each_on(MPI_Comm c, int max_count)
{
    MPI_Comm world = comm;
    int world_np = np;

    comm = c;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    run_each(max_count);
    comm = world;
    np = world_np;
    MPI_Comm_rank(comm, &me);
}

/* The same on a communicator whose ranks are those of world in reverse,
 * and on the halves of a split (even and odd world ranks: sizes P/2 rounded
 * both ways, each half's collectives in flight beside the other's). */
static void case_split(void)
{
    MPI_Comm reversed, half;

    OK(MPI_Comm_split(comm, 0, np - me, &reversed));
    run_each_on(reversed, 1000);
    OK(MPI_Comm_free(&reversed));
    OK(MPI_Comm_split(comm, me % 2, me, &half));
    run_each_on(half, 1);
    OK(MPI_Comm_free(&half));
}

/* Several collectives in flight on one communicator and on a duplicate of
 * it, started in one order and completed in others: by MPI_Waitall, by
 * MPI_Waitany, by MPI_Testsome polling, by MPI_Test polling. */
static void case_in_flight(void)
{
    enum {
        N = 5000,
        K = 6
    };
    MPI_Comm dup;
    int *bc = ints(N, SENTINEL), *bc2 = ints(N, SENTINEL), *ar = ints(N, 0), *ar2 = ints(N, 0);
    int *a2a_s = ints((size_t)N * np, 0), *a2a_r = ints((size_t)N * np, SENTINEL);
    int *mine = ints(N, 0);
    MPI_Request reqs[K];
    int root = np - 1;

    OK(MPI_Comm_dup(comm, &dup));
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < N; i++) {
            mine[i] = val(me, i, round);
            bc[i] = me == 0 ? val(0, i, round) : SENTINEL;
            bc2[i] = me == root ? val(root, i, round + 1) : SENTINEL;
        }
        for (int i = 0; i < N * np; i++)
            a2a_s[i] = val2(me, i / N, i % N, round);
        /* one order on comm, interleaved with another on dup */
        OK(MPI_Ibcast(bc, N, MPI_INT, 0, comm, &reqs[0]));
        OK(MPI_Iallreduce(mine, ar, N, MPI_INT, MPI_SUM, dup, &reqs[1]));
        OK(MPI_Ibarrier(comm, &reqs[2]));
        OK(MPI_Ialltoall(a2a_s, N, MPI_INT, a2a_r, N, MPI_INT, dup, &reqs[3]));
        OK(MPI_Iallreduce(mine, ar2, N, MPI_INT, MPI_SUM, comm, &reqs[4]));
        OK(MPI_Ibcast(bc2, N, MPI_INT, root, comm, &reqs[5]));
        if (round == 0) {
            OK(MPI_Waitall(K, reqs, MPI_STATUSES_IGNORE));
        } else if (round == 1) {
            for (int done = 0; done < K; done++) {
                int index = -1;

                OK(MPI_Waitany(K, reqs, &index, MPI_STATUS_IGNORE));
                CHECK(index >= 0 && index < K, "MPI_Waitany index %d", index);
            }
        } else if (round == 2) {
            int left = K, outcount, indices[K];

            while (left > 0) {
                OK(MPI_Testsome(K, reqs, &outcount, indices, MPI_STATUSES_IGNORE));
                CHECK(outcount != MPI_UNDEFINED, "MPI_Testsome: none active with %d left", left);
                if (outcount == MPI_UNDEFINED)
                    break;
                left -= outcount;
            }
        } else {
            for (int k = K - 1; k >= 0; k--) { /* in reverse order */
                int flag = 0;

                while (!flag)
                    OK(MPI_Test(&reqs[k], &flag, MPI_STATUS_IGNORE));
            }
        }
        for (int k = 0; k < K; k++)
            CHECK(reqs[k] == MPI_REQUEST_NULL, "round %d: request %d not freed", round, k);
        for (int i = 0; i < N; i++) {
            if (bc[i] != val(0, i, round) || bc2[i] != val(root, i, round + 1) ||
                ar[i] != sum_fold(0, np - 1, i, round) || ar2[i] != ar[i]) {
                CHECK(0, "round %d: a collective in flight is wrong at [%d]", round, i);
                break;
            }
        }
        for (int i = 0; i < N * np; i++) {
            if (a2a_r[i] != val2(i / N, me, i % N, round)) {
                CHECK(0, "round %d: alltoall in flight wrong at [%d]", round, i);
                break;
            }
        }
    }
    OK(MPI_Comm_free(&dup));
    free(bc);
    free(bc2);
    free(ar);
    free(ar2);
    free(a2a_s);
    free(a2a_r);
    free(mine);
}

/* Point-to-point traffic on the same communicator while collectives are
 * in flight, and a blocking collective started in the middle. */
static void case_overlap(void)
{
    enum {
        N = 20000
    };
    int *mine = ints(N, 0), *sum = ints(N, 0), *bc = ints(N, SENTINEL), *blocking = ints(N, 0);
    int *out = ints(N, 0), *in = ints(N, SENTINEL);
    int right = (me + 1) % np, left = (me - 1 + np) % np;
    MPI_Request reqs[2], p2p[2];

    for (int i = 0; i < N; i++) {
        mine[i] = val(me, i, 5);
        out[i] = val2(me, right, i, 0);
        bc[i] = me == 0 ? val(0, i, 9) : SENTINEL;
    }
    OK(MPI_Iallreduce(mine, sum, N, MPI_INT, MPI_SUM, comm, &reqs[0]));
    /* the program's own messages, with tags the collectives might use */
    for (int tag = 0; tag < 2; tag++) {
        OK(MPI_Irecv(in, N, MPI_INT, left, 1024 + tag, comm, &p2p[0]));
        OK(MPI_Isend(out, N, MPI_INT, right, 1024 + tag, comm, &p2p[1]));
        OK(MPI_Waitall(2, p2p, MPI_STATUSES_IGNORE));
        for (int i = 0; i < N; i++) {
            if (in[i] != val2(left, me, i, 0)) {
                CHECK(0, "point-to-point beside a collective wrong at [%d]", i);
                break;
            }
        }
    }
    OK(MPI_Ibcast(bc, N, MPI_INT, 0, comm, &reqs[1]));
    /* a blocking collective while two nonblocking ones are in flight */
    OK(MPI_Allreduce(mine, blocking, N, MPI_INT, MPI_SUM, comm));
    OK(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; i++) {
        if (sum[i] != sum_fold(0, np - 1, i, 5) || blocking[i] != sum[i] || bc[i] != val(0, i, 9)) {
            CHECK(0, "overlap: wrong at [%d]: %d %d %d", i, sum[i], blocking[i], bc[i]);
            break;
        }
    }
    free(mine);
    free(sum);
    free(bc);
    free(blocking);
    free(out);
    free(in);
}

/* MPI_Ibarrier progresses while its rank waits for something else: rank 0
 * starts the barrier and waits in MPI_Recv for a message that rank 1
 * sends only once its own barrier completed, which needs rank 0's later
 * barrier rounds (P >= 3) to be sent from inside that MPI_Recv. */
static void case_progress(void)
{
    MPI_Request req;
    int token = 0;

    if (np < 2)
        return;
    OK(MPI_Ibarrier(comm, &req));
    if (me == 0) {
        OK(MPI_Recv(&token, 1, MPI_INT, 1, 77, comm, MPI_STATUS_IGNORE));
        CHECK(token == 42, "token %d", token);
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (me == 1) {
            token = 42;
            OK(MPI_Send(&token, 1, MPI_INT, 0, 77, comm));
        }
    }
}

/* Persistent requests started together (MPI_Startall), many times, with
 * their inactive states as the standard says. */
static void case_startall(void)
{
    enum {
        N = 3000,
        K = 3,
        STARTS = 20
    };
    int *mine = ints(N, 0), *sum = ints(N, 0), *bc = ints(N, SENTINEL);
    MPI_Request reqs[K];
    MPI_Status status;
    int flag = 0, index = 0;

    OK(MPI_Allreduce_init(mine, sum, N, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &reqs[0]));
    OK(MPI_Bcast_init(bc, N, MPI_INT, np / 2, comm, MPI_INFO_NULL, &reqs[1]));
    OK(MPI_Barrier_init(comm, MPI_INFO_NULL, &reqs[2]));
    /* inactive: complete at once, empty status, not active for _any */
    OK(MPI_Test(&reqs[0], &flag, &status));
    CHECK(flag && reqs[0] != MPI_REQUEST_NULL, "inactive persistent request: flag %d", flag);
    CHECK(status.MPI_SOURCE == MPI_ANY_SOURCE && status.MPI_TAG == MPI_ANY_TAG,
          "inactive persistent request: status not empty");
    OK(MPI_Waitany(K, reqs, &index, MPI_STATUS_IGNORE));
    CHECK(index == MPI_UNDEFINED, "MPI_Waitany of inactive requests gave %d", index);
    OK(MPI_Request_get_status(reqs[1], &flag, MPI_STATUS_IGNORE));
    CHECK(flag, "inactive persistent request: MPI_Request_get_status flag 0");
    for (int start = 0; start < STARTS; start++) {
        for (int i = 0; i < N; i++) {
            mine[i] = val(me, i, start);
            bc[i] = me == np / 2 ? val(np / 2, i, start + 1) : SENTINEL;
        }
        OK(MPI_Startall(K, reqs));
        OK(MPI_Waitall(K, reqs, MPI_STATUSES_IGNORE));
        for (int k = 0; k < K; k++)
            CHECK(reqs[k] != MPI_REQUEST_NULL, "persistent request %d freed by MPI_Waitall", k);
        for (int i = 0; i < N; i++) {
            if (sum[i] != sum_fold(0, np - 1, i, start) || bc[i] != val(np / 2, i, start + 1)) {
                CHECK(0, "start %d: wrong at [%d]", start, i);
                break;
            }
        }
    }
    for (int k = 0; k < K; k++)
        OK(MPI_Request_free(&reqs[k]));
    free(mine);
    free(sum);
    free(bc);
}

/* The errors, under MPI_ERRORS_RETURN. */
static void case_errors(void)
{
    MPI_Comm c;
    MPI_Request req = MPI_REQUEST_NULL, p2p;
    MPI_Info info, bad_info;
    int buf[4] = {0}, rc;
    int counts4[1] = {-1};

    OK(MPI_Comm_dup(comm, &c));
    OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    /* cancelling or freeing an active collective request is erroneous */
    OK(MPI_Ibarrier(c, &req));
    rc = MPI_Cancel(&req);
    CHECK(rc == MPI_ERR_REQUEST, "MPI_Cancel of a collective request: %d", rc);
    rc = MPI_Request_free(&req);
    CHECK(rc == MPI_ERR_REQUEST && req != MPI_REQUEST_NULL,
          "MPI_Request_free of an active collective request: %d", rc);
    rc = MPI_Start(&req);
    CHECK(rc == MPI_ERR_REQUEST, "MPI_Start of a nonblocking collective request: %d", rc);
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    /* MPI_Start of a point-to-point request that is not persistent */
    OK(MPI_Irecv(buf, 1, MPI_INT, MPI_PROC_NULL, 0, c, &p2p));
    rc = MPI_Start(&p2p);
    CHECK(rc == MPI_ERR_REQUEST, "MPI_Start of a receive: %d", rc);
    rc = MPI_Startall(1, &p2p);
    CHECK(rc == MPI_ERR_REQUEST, "MPI_Startall of a receive: %d", rc);
    OK(MPI_Wait(&p2p, MPI_STATUS_IGNORE));
    req = MPI_REQUEST_NULL;
    rc = MPI_Start(&req);
    CHECK(rc == MPI_ERR_REQUEST, "MPI_Start of MPI_REQUEST_NULL: %d", rc);
    /* an active persistent request cannot start again */
    OK(MPI_Barrier_init(c, MPI_INFO_NULL, &req));
    OK(MPI_Start(&req));
    rc = MPI_Start(&req);
    CHECK(rc == MPI_ERR_REQUEST, "MPI_Start of an active request: %d", rc);
    rc = MPI_Request_free(&req);
    CHECK(rc == MPI_ERR_REQUEST, "MPI_Request_free of an active persistent collective: %d", rc);
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Request_free(&req));
    /* the arguments, as the blocking collectives check them */
    rc = MPI_Ibcast(buf, 1, MPI_INT, np, c, &req);
    CHECK(rc == MPI_ERR_ROOT, "MPI_Ibcast root %d: %d", np, rc);
    rc = MPI_Ibcast(buf, 1, MPI_INT, 0, c, NULL);
    CHECK(rc == MPI_ERR_ARG, "MPI_Ibcast request NULL: %d", rc);
    rc = MPI_Iallreduce(buf, buf, 1, MPI_INT, MPI_SUM, c, &req);
    CHECK(rc == MPI_ERR_BUFFER, "MPI_Iallreduce aliased: %d", rc);
    rc = MPI_Iallreduce(buf, buf + 1, 1, MPI_INT, MPI_OP_NULL, c, &req);
    CHECK(rc == MPI_ERR_OP, "MPI_Iallreduce MPI_OP_NULL: %d", rc);
    rc = MPI_Ireduce_scatter(buf, buf + 1, counts4, MPI_INT, MPI_SUM, c, &req);
    CHECK(rc == MPI_ERR_COUNT, "MPI_Ireduce_scatter negative count: %d", rc);
    rc = MPI_Ialltoallw(buf, NULL, NULL, NULL, buf + 1, NULL, NULL, NULL, c, &req);
    CHECK(rc == MPI_ERR_ARG, "MPI_Ialltoallw NULL arrays: %d", rc);
    rc = MPI_Igather(buf, -1, MPI_INT, buf + 1, 1, MPI_INT, 0, c, &req);
    CHECK(rc == MPI_ERR_COUNT, "MPI_Igather count -1: %d", rc);
    OK(MPI_Info_create(&info));
    bad_info = info; /* the handle of an info freed */
    OK(MPI_Info_free(&info));
    rc = MPI_Barrier_init(c, bad_info, &req);
    CHECK(rc == MPI_ERR_INFO, "MPI_Barrier_init with a freed info: %d", rc);
    rc = MPI_Allreduce_init(buf, buf + 1, 1, MPI_DATATYPE_NULL, MPI_SUM, c, MPI_INFO_NULL, &req);
    CHECK(rc == MPI_ERR_TYPE, "MPI_Allreduce_init MPI_DATATYPE_NULL: %d", rc);
    /* the ranks' counts disagree: every rank sends 2 ints, the root takes 1
     * of each; the root's request fails (MPI_Wait, and MPI_Waitall with the
     * error in the status), the others' complete */
    {
        int two[2] = {1, 2}, *all = ints((size_t)np, SENTINEL);
        MPI_Status st;

        OK(MPI_Igather(two, 2, MPI_INT, all, 1, MPI_INT, 0, c, &req));
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(rc == (me == 0 ? MPI_ERR_TRUNCATE : MPI_SUCCESS), "truncated Igather: MPI_Wait %d",
              rc);
        CHECK(req == MPI_REQUEST_NULL, "truncated Igather: request not freed");
        OK(MPI_Igather(two, 2, MPI_INT, all, 1, MPI_INT, 0, c, &req));
        rc = MPI_Waitall(1, &req, &st);
        CHECK(rc == (me == 0 ? MPI_ERR_IN_STATUS : MPI_SUCCESS),
              "truncated Igather: MPI_Waitall %d", rc);
        CHECK(me != 0 || st.MPI_ERROR == MPI_ERR_TRUNCATE, "truncated Igather: status error %d",
              st.MPI_ERROR);
        free(all);
    }
    /* the communicator still works: the failed calls took no tag on some
     * ranks only */
    OK(MPI_Ibarrier(c, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Comm_free(&c));
}

/* ---- main ------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"each", case_each},       {"split", case_split},       {"in_flight", case_in_flight},
    {"overlap", case_overlap}, {"progress", case_progress}, {"startall", case_startall},
    {"errors", case_errors},
};

int main(int argc, char **argv)
{
    int status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    comm = MPI_COMM_WORLD;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    MPI_Type_contiguous(2, MPI_UINT32_T, &affine_type);
    MPI_Type_commit(&affine_type);
    MPI_Op_create(compose, 0, &affine_op);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int wanted = argc <= 1;

        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], cases[i].name) == 0;
        if (wanted)
            cases[i].run();
    }
    MPI_Op_free(&affine_op);
    MPI_Type_free(&affine_type);
    /* summed by point-to-point, not by the collectives under test */
    status = check_summary("nbc", MPI_COMM_WORLD, 1 << 21);
    MPI_Finalize();
    return status;
}
