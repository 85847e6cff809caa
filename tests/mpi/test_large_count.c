/*
 * pbt-mpi-large-count: the large-count (_c) forms, called by name with
 * small counts, each checked against the result its int form gives, and
 * the environment calls no other program names (MPI_Init_thread,
 * MPI_Query_thread, MPI_Is_thread_main, names, MPI-1 attributes, the
 * MPI_T event calls).  Run under `postbox run -n N [--nodes K]` (N >= 1).
 * Written to the standard API only; rank 0 prints "large_count: ok".
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define K 3 /* elements per rank */

static int size;

/* value of element @i of rank @r's data */
static int val(int r, int i)
{
    return 1000 * r + i + 1;
}

static void fill(int *v, int n, int r)
{
    for (int i = 0; i < n; i++)
        v[i] = val(r, i);
}

static void case_p2p(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[K], in[K], want[K];
    static char space[4 * (K * sizeof(int) + MPI_BSEND_OVERHEAD)];
    void *got = NULL;
    MPI_Count got_size = 0;
    MPI_Request r[2];

    fill(out, K, rank);
    fill(want, K, left);
    OK(MPI_Buffer_attach_c(space, (MPI_Count)sizeof(space)));
    OK(MPI_Bsend_c(out, K, MPI_INT, right, 1, MPI_COMM_WORLD));
    OK(MPI_Recv_c(in, K, MPI_INT, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Bsend_c");
    OK(MPI_Ibsend_c(out, K, MPI_INT, right, 2, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Recv_c(in, K, MPI_INT, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Ibsend_c");
    OK(MPI_Buffer_detach_c(&got, &got_size));
    CHECK(got == space && got_size == (MPI_Count)sizeof(space), "MPI_Buffer_detach_c");

    /* ready mode: the receive is posted before the sender passes the barrier */
    memset(in, 0, sizeof(in));
    OK(MPI_Irecv_c(in, K, MPI_INT, left, 3, MPI_COMM_WORLD, &r[1]));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Rsend_c(out, K, MPI_INT, right, 3, MPI_COMM_WORLD));
    OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Rsend_c");
    memset(in, 0, sizeof(in));
    OK(MPI_Irecv_c(in, K, MPI_INT, left, 4, MPI_COMM_WORLD, &r[1]));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Irsend(out, K, MPI_INT, right, 4, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Irsend");
    memset(in, 0, sizeof(in));
    OK(MPI_Irecv_c(in, K, MPI_INT, left, 5, MPI_COMM_WORLD, &r[1]));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Irsend_c(out, K, MPI_INT, right, 5, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Irsend_c");

    memset(in, 0, sizeof(in));
    OK(MPI_Irecv_c(in, K, MPI_INT, left, 6, MPI_COMM_WORLD, &r[1]));
    OK(MPI_Ssend_c(out, K, MPI_INT, right, 6, MPI_COMM_WORLD));
    OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Ssend_c");
    memset(in, 0, sizeof(in));
    OK(MPI_Issend_c(out, K, MPI_INT, right, 7, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Recv_c(in, K, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Issend_c");

    memset(in, 0, sizeof(in));
    OK(MPI_Sendrecv_c(out, K, MPI_INT, right, 8, in, K, MPI_INT, left, 8, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Sendrecv_c");
    memcpy(in, out, sizeof(in));
    OK(MPI_Sendrecv_replace_c(in, K, MPI_INT, right, 9, left, 9, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Sendrecv_replace_c");
    memcpy(in, out, sizeof(in));
    OK(MPI_Isendrecv_replace_c(in, K, MPI_INT, right, 10, left, 10, MPI_COMM_WORLD, &r[0]));
    OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    CHECK(memcmp(in, want, sizeof(in)) == 0, "MPI_Isendrecv_replace_c");

    /* a matched probe's message received by MPI_Imrecv_c */
    {
        MPI_Message msg = MPI_MESSAGE_NULL;

        memset(in, 0, sizeof(in));
        OK(MPI_Isend(out, K, MPI_INT, right, 11, MPI_COMM_WORLD, &r[0]));
        OK(MPI_Mprobe(left, 11, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE));
        OK(MPI_Imrecv_c(in, K, MPI_INT, &msg, &r[1]));
        OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        CHECK(memcmp(in, want, sizeof(in)) == 0 && msg == MPI_MESSAGE_NULL, "MPI_Imrecv_c");
    }
}

/* the persistent forms: a receive of each send mode, started twice */
static void case_persistent(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out[K], in[K], want[K];
    static char space[4 * (K * sizeof(int) + MPI_BSEND_OVERHEAD)];
    MPI_Request r[2];
    void *got;
    int got_size;

    fill(out, K, rank);
    fill(want, K, left);
    OK(MPI_Buffer_attach(space, (int)sizeof(space)));
    for (int mode = 0; mode < 3; mode++) {
        const char *what[] = {"MPI_Ssend_init_c", "MPI_Bsend_init_c", "MPI_Rsend_init_c"};

        OK(MPI_Recv_init_c(in, K, MPI_INT, left, 20 + mode, MPI_COMM_WORLD, &r[1]));
        if (mode == 0)
            OK(MPI_Ssend_init_c(out, K, MPI_INT, right, 20, MPI_COMM_WORLD, &r[0]));
        else if (mode == 1)
            OK(MPI_Bsend_init_c(out, K, MPI_INT, right, 21, MPI_COMM_WORLD, &r[0]));
        else
            OK(MPI_Rsend_init_c(out, K, MPI_INT, right, 22, MPI_COMM_WORLD, &r[0]));
        for (int round = 0; round < 2; round++) {
            memset(in, 0, sizeof(in));
            OK(MPI_Start(&r[1]));
            MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted (ready mode) */
            OK(MPI_Start(&r[0]));
            OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
            CHECK(memcmp(in, want, sizeof(in)) == 0, "%s, round %d", what[mode], round);
        }
        OK(MPI_Request_free(&r[0]));
        OK(MPI_Request_free(&r[1]));
    }
    OK(MPI_Buffer_detach(&got, &got_size));
}

/* The collectives' _c forms (blocking, nonblocking, persistent) against
 * the values their int forms must give. */
static void case_collectives(void)
{
    int n = size, out[K], *all = malloc((size_t)(n * K) * sizeof(int)),
        *in = malloc((size_t)(n * K) * sizeof(int)), sum[K], scan[K];
    MPI_Count *counts = malloc((size_t)n * sizeof(MPI_Count)),
              *displs = malloc((size_t)n * sizeof(MPI_Count));
    MPI_Aint *wdispls = malloc((size_t)n * sizeof(MPI_Aint));
    MPI_Datatype *types = malloc((size_t)n * sizeof(MPI_Datatype));
    MPI_Request req;

    if (all == NULL || in == NULL || counts == NULL || displs == NULL || wdispls == NULL ||
        types == NULL) {
        CHECK(0, "out of memory");
        return;
    }
    fill(out, K, rank);
    for (int r = 0; r < n; r++) {
        fill(all + r * K, K, r);
        counts[r] = K;
        displs[r] = r * K;
        wdispls[r] = (MPI_Aint)(r * K * (int)sizeof(int));
        types[r] = MPI_INT;
    }
    for (int i = 0; i < K; i++) {
        sum[i] = 0;
        scan[i] = 0;
        for (int r = 0; r < n; r++) {
            sum[i] += val(r, i);
            if (r <= rank)
                scan[i] += val(r, i);
        }
    }
#define GATHERED(what) CHECK(memcmp(in, all, (size_t)(n * K) * sizeof(int)) == 0, "%s", what)

    memset(in, 0, (size_t)(n * K) * sizeof(int));
    OK(MPI_Allgather_c(out, K, MPI_INT, in, K, MPI_INT, MPI_COMM_WORLD));
    GATHERED("MPI_Allgather_c");
    memset(in, 0, (size_t)(n * K) * sizeof(int));
    OK(MPI_Allgatherv_c(out, K, MPI_INT, in, counts, displs, MPI_INT, MPI_COMM_WORLD));
    GATHERED("MPI_Allgatherv_c");
    memset(in, 0, (size_t)(n * K) * sizeof(int));
    OK(MPI_Iallgather_c(out, K, MPI_INT, in, K, MPI_INT, MPI_COMM_WORLD, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    GATHERED("MPI_Iallgather_c");
    memset(in, 0, (size_t)(n * K) * sizeof(int));
    OK(MPI_Iallgatherv_c(out, K, MPI_INT, in, counts, displs, MPI_INT, MPI_COMM_WORLD, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    GATHERED("MPI_Iallgatherv_c");
    memset(in, 0, (size_t)(n * K) * sizeof(int));
    OK(MPI_Allgather_init_c(out, K, MPI_INT, in, K, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    OK(MPI_Start(&req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Request_free(&req));
    GATHERED("MPI_Allgather_init_c");
    memset(in, 0, (size_t)(n * K) * sizeof(int));
    OK(MPI_Allgatherv_init_c(out, K, MPI_INT, in, counts, displs, MPI_INT, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &req));
    OK(MPI_Start(&req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Request_free(&req));
    GATHERED("MPI_Allgatherv_init_c");

    /* gather at rank 0, then scatter the whole back */
    memset(in, 0, (size_t)(n * K) * sizeof(int));
    OK(MPI_Gather_c(out, K, MPI_INT, in, K, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        GATHERED("MPI_Gather_c");
    memset(in, 0, (size_t)(n * K) * sizeof(int));
    OK(MPI_Igather_c(out, K, MPI_INT, in, K, MPI_INT, 0, MPI_COMM_WORLD, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    if (rank == 0)
        GATHERED("MPI_Igather_c");
    memset(in, 0, (size_t)(n * K) * sizeof(int));
    OK(MPI_Gather_init_c(out, K, MPI_INT, in, K, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    OK(MPI_Start(&req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Request_free(&req));
    if (rank == 0)
        GATHERED("MPI_Gather_init_c");

    {
        int mine[K], want[K];

        fill(want, K, rank);
        memset(mine, 0, sizeof(mine));
        OK(MPI_Scatter_c(all, K, MPI_INT, mine, K, MPI_INT, 0, MPI_COMM_WORLD));
        CHECK(memcmp(mine, want, sizeof(mine)) == 0, "MPI_Scatter_c");
        memset(mine, 0, sizeof(mine));
        OK(MPI_Scatterv_c(all, counts, displs, MPI_INT, mine, K, MPI_INT, 0, MPI_COMM_WORLD));
        CHECK(memcmp(mine, want, sizeof(mine)) == 0, "MPI_Scatterv_c");
        memset(mine, 0, sizeof(mine));
        OK(MPI_Iscatter_c(all, K, MPI_INT, mine, K, MPI_INT, 0, MPI_COMM_WORLD, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(memcmp(mine, want, sizeof(mine)) == 0, "MPI_Iscatter_c");
        memset(mine, 0, sizeof(mine));
        OK(MPI_Iscatterv_c(all, counts, displs, MPI_INT, mine, K, MPI_INT, 0, MPI_COMM_WORLD,
                           &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(memcmp(mine, want, sizeof(mine)) == 0, "MPI_Iscatterv_c");
        memset(mine, 0, sizeof(mine));
        OK(MPI_Scatter_init_c(all, K, MPI_INT, mine, K, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req));
        OK(MPI_Start(&req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&req));
        CHECK(memcmp(mine, want, sizeof(mine)) == 0, "MPI_Scatter_init_c");
        memset(mine, 0, sizeof(mine));
        OK(MPI_Scatterv_init_c(all, counts, displs, MPI_INT, mine, K, MPI_INT, 0, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &req));
        OK(MPI_Start(&req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&req));
        CHECK(memcmp(mine, want, sizeof(mine)) == 0, "MPI_Scatterv_init_c");
    }

    /* all-to-all: every rank sends block j = its values to rank j; rank r
     * receives from each rank s the values of s */
    {
        int *send = malloc((size_t)(n * K) * sizeof(int));

        if (send == NULL) {
            CHECK(0, "out of memory");
            return;
        }
        for (int j = 0; j < n; j++)
            fill(send + j * K, K, rank);
        memset(in, 0, (size_t)(n * K) * sizeof(int));
        OK(MPI_Alltoall_c(send, K, MPI_INT, in, K, MPI_INT, MPI_COMM_WORLD));
        GATHERED("MPI_Alltoall_c");
        memset(in, 0, (size_t)(n * K) * sizeof(int));
        OK(MPI_Alltoallv_c(send, counts, displs, MPI_INT, in, counts, displs, MPI_INT,
                           MPI_COMM_WORLD));
        GATHERED("MPI_Alltoallv_c");
        memset(in, 0, (size_t)(n * K) * sizeof(int));
        OK(MPI_Ialltoall_c(send, K, MPI_INT, in, K, MPI_INT, MPI_COMM_WORLD, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        GATHERED("MPI_Ialltoall_c");
        memset(in, 0, (size_t)(n * K) * sizeof(int));
        OK(MPI_Ialltoallv_c(send, counts, displs, MPI_INT, in, counts, displs, MPI_INT,
                            MPI_COMM_WORLD, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        GATHERED("MPI_Ialltoallv_c");
        memset(in, 0, (size_t)(n * K) * sizeof(int));
        OK(MPI_Ialltoallw_c(send, counts, wdispls, types, in, counts, wdispls, types,
                            MPI_COMM_WORLD, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        GATHERED("MPI_Ialltoallw_c");
        memset(in, 0, (size_t)(n * K) * sizeof(int));
        OK(MPI_Alltoall_init_c(send, K, MPI_INT, in, K, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                               &req));
        OK(MPI_Start(&req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&req));
        GATHERED("MPI_Alltoall_init_c");
        memset(in, 0, (size_t)(n * K) * sizeof(int));
        OK(MPI_Alltoallv_init_c(send, counts, displs, MPI_INT, in, counts, displs, MPI_INT,
                                MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        OK(MPI_Start(&req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&req));
        GATHERED("MPI_Alltoallv_init_c");
        memset(in, 0, (size_t)(n * K) * sizeof(int));
        OK(MPI_Alltoallw_init_c(send, counts, wdispls, types, in, counts, wdispls, types,
                                MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        OK(MPI_Start(&req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&req));
        GATHERED("MPI_Alltoallw_init_c");
        free(send);
    }

    /* reductions */
    {
        int got[K], want_ex[K], block[K];

        for (int i = 0; i < K; i++)
            want_ex[i] = scan[i] - val(rank, i);
#define SAME(buf, ref, what) CHECK(memcmp(buf, ref, sizeof(got)) == 0, "%s", what)
        memset(got, 0, sizeof(got));
        OK(MPI_Reduce_c(out, got, K, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
        if (rank == 0)
            SAME(got, sum, "MPI_Reduce_c");
        memset(got, 0, sizeof(got));
        OK(MPI_Ireduce_c(out, got, K, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (rank == 0)
            SAME(got, sum, "MPI_Ireduce_c");
        memset(got, 0, sizeof(got));
        OK(MPI_Reduce_init_c(out, got, K, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                             &req));
        OK(MPI_Start(&req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&req));
        if (rank == 0)
            SAME(got, sum, "MPI_Reduce_init_c");
        memset(got, 0, sizeof(got));
        OK(MPI_Scan_c(out, got, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        SAME(got, scan, "MPI_Scan_c");
        memset(got, 0, sizeof(got));
        OK(MPI_Iscan_c(out, got, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        SAME(got, scan, "MPI_Iscan_c");
        memset(got, 0, sizeof(got));
        OK(MPI_Scan_init_c(out, got, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        OK(MPI_Start(&req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&req));
        SAME(got, scan, "MPI_Scan_init_c");
        memset(got, 0, sizeof(got));
        OK(MPI_Exscan_c(out, got, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        if (rank > 0)
            SAME(got, want_ex, "MPI_Exscan_c");
        memset(got, 0, sizeof(got));
        OK(MPI_Iexscan_c(out, got, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (rank > 0)
            SAME(got, want_ex, "MPI_Iexscan_c");
        memset(got, 0, sizeof(got));
        OK(MPI_Exscan_init_c(out, got, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        OK(MPI_Start(&req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        OK(MPI_Request_free(&req));
        if (rank > 0)
            SAME(got, want_ex, "MPI_Exscan_init_c");

        /* reduce-scatter: every rank gives n blocks of its values; rank r
         * gets block r summed: sum[] */
        {
            int *send = malloc((size_t)(n * K) * sizeof(int));

            if (send == NULL) {
                CHECK(0, "out of memory");
                return;
            }
            for (int j = 0; j < n; j++)
                fill(send + j * K, K, rank);
            memset(block, 0, sizeof(block));
            OK(MPI_Reduce_scatter_block_c(send, block, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            SAME(block, sum, "MPI_Reduce_scatter_block_c");
            memset(block, 0, sizeof(block));
            OK(MPI_Reduce_scatter_c(send, block, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            SAME(block, sum, "MPI_Reduce_scatter_c");
            memset(block, 0, sizeof(block));
            OK(MPI_Ireduce_scatter_block_c(send, block, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
            OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            SAME(block, sum, "MPI_Ireduce_scatter_block_c");
            memset(block, 0, sizeof(block));
            OK(MPI_Ireduce_scatter_c(send, block, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req));
            OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            SAME(block, sum, "MPI_Ireduce_scatter_c");
            memset(block, 0, sizeof(block));
            OK(MPI_Reduce_scatter_block_init_c(send, block, K, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                               MPI_INFO_NULL, &req));
            OK(MPI_Start(&req));
            OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            OK(MPI_Request_free(&req));
            SAME(block, sum, "MPI_Reduce_scatter_block_init_c");
            memset(block, 0, sizeof(block));
            OK(MPI_Reduce_scatter_init_c(send, block, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                         MPI_INFO_NULL, &req));
            OK(MPI_Start(&req));
            OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            OK(MPI_Request_free(&req));
            SAME(block, sum, "MPI_Reduce_scatter_init_c");
            free(send);
        }
#undef SAME
    }
#undef GATHERED
    free(all);
    free(in);
    free(counts);
    free(displs);
    free(wdispls);
    free(types);
}

/* The neighborhood _c and _init forms on a periodic ring: left and right
 * neighbours, in that order. */
static void case_neighbors(void)
{
    int dims[1] = {size}, periods[1] = {1}, left, right, out[K], in[2 * K], want[2 * K];
    MPI_Count counts[2] = {K, K}, displs[2] = {0, K};
    MPI_Aint wdispls[2] = {0, (MPI_Aint)(K * sizeof(int))};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT};
    int icounts[2] = {K, K}, idispls[2] = {0, K};
    MPI_Comm ring;
    MPI_Request req;

    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    OK(MPI_Cart_shift(ring, 0, 1, &left, &right));
    fill(out, K, rank);
    fill(want, K, left);
    fill(want + K, K, right);
#define RECEIVED(what) CHECK(memcmp(in, want, sizeof(in)) == 0, "%s", what)
#define PERSISTENT(call, what)                                                                     \
    do {                                                                                           \
        memset(in, 0, sizeof(in));                                                                 \
        OK(call);                                                                                  \
        OK(MPI_Start(&req));                                                                       \
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));                                                     \
        OK(MPI_Request_free(&req));                                                                \
        RECEIVED(what);                                                                            \
    } while (0)
    memset(in, 0, sizeof(in));
    OK(MPI_Ineighbor_allgather_c(out, K, MPI_INT, in, K, MPI_INT, ring, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    RECEIVED("MPI_Ineighbor_allgather_c");
    memset(in, 0, sizeof(in));
    OK(MPI_Neighbor_allgatherv_c(out, K, MPI_INT, in, counts, displs, MPI_INT, ring));
    RECEIVED("MPI_Neighbor_allgatherv_c");
    memset(in, 0, sizeof(in));
    OK(MPI_Ineighbor_allgatherv_c(out, K, MPI_INT, in, counts, displs, MPI_INT, ring, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    RECEIVED("MPI_Ineighbor_allgatherv_c");
    PERSISTENT(
        MPI_Neighbor_allgather_init(out, K, MPI_INT, in, K, MPI_INT, ring, MPI_INFO_NULL, &req),
        "MPI_Neighbor_allgather_init");
    PERSISTENT(
        MPI_Neighbor_allgather_init_c(out, K, MPI_INT, in, K, MPI_INT, ring, MPI_INFO_NULL, &req),
        "MPI_Neighbor_allgather_init_c");
    PERSISTENT(MPI_Neighbor_allgatherv_init_c(out, K, MPI_INT, in, counts, displs, MPI_INT, ring,
                                              MPI_INFO_NULL, &req),
               "MPI_Neighbor_allgatherv_init_c");

    /* all-to-all: the same block to both neighbours */
    {
        int send[2 * K];

        fill(send, K, rank);
        fill(send + K, K, rank);
        memset(in, 0, sizeof(in));
        OK(MPI_Ineighbor_alltoall_c(send, K, MPI_INT, in, K, MPI_INT, ring, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        RECEIVED("MPI_Ineighbor_alltoall_c");
        memset(in, 0, sizeof(in));
        OK(MPI_Ineighbor_alltoallv_c(send, counts, displs, MPI_INT, in, counts, displs, MPI_INT,
                                     ring, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        RECEIVED("MPI_Ineighbor_alltoallv_c");
        memset(in, 0, sizeof(in));
        OK(MPI_Ineighbor_alltoallw_c(send, counts, wdispls, types, in, counts, wdispls, types, ring,
                                     &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        RECEIVED("MPI_Ineighbor_alltoallw_c");
        PERSISTENT(MPI_Neighbor_alltoall_init_c(send, K, MPI_INT, in, K, MPI_INT, ring,
                                                MPI_INFO_NULL, &req),
                   "MPI_Neighbor_alltoall_init_c");
        PERSISTENT(MPI_Neighbor_alltoallv_init(send, icounts, idispls, MPI_INT, in, icounts,
                                               idispls, MPI_INT, ring, MPI_INFO_NULL, &req),
                   "MPI_Neighbor_alltoallv_init");
        PERSISTENT(MPI_Neighbor_alltoallv_init_c(send, counts, displs, MPI_INT, in, counts, displs,
                                                 MPI_INT, ring, MPI_INFO_NULL, &req),
                   "MPI_Neighbor_alltoallv_init_c");
        PERSISTENT(MPI_Neighbor_alltoallw_init_c(send, counts, wdispls, types, in, counts, wdispls,
                                                 types, ring, MPI_INFO_NULL, &req),
                   "MPI_Neighbor_alltoallw_init_c");
    }
#undef PERSISTENT
#undef RECEIVED
    OK(MPI_Comm_free(&ring));
}

/* The datatype constructors' _c forms against their int forms: the same
 * size, extent and true extent (and the _x queries agree). */
static void case_types(void)
{
    MPI_Datatype a, b;
    MPI_Count size_c, lb_c, extent_c, tlb_c, textent_c;
    MPI_Aint lb, extent;
    int sz, blens[2] = {2, 3}, displs_i[2] = {0, 5};
    MPI_Count blens_c[2] = {2, 3}, displs_c[2] = {0, 5};
    MPI_Aint hdispls[2] = {0, 40};
    MPI_Count hdispls_c[2] = {0, 40};

#define SAME_TYPE(int_call, c_call, what)                                                          \
    do {                                                                                           \
        OK(int_call);                                                                              \
        OK(c_call);                                                                                \
        OK(MPI_Type_size(a, &sz));                                                                 \
        OK(MPI_Type_size_x(b, &size_c));                                                           \
        OK(MPI_Type_get_extent(a, &lb, &extent));                                                  \
        OK(MPI_Type_get_extent_x(b, &lb_c, &extent_c));                                            \
        OK(MPI_Type_get_true_extent_x(b, &tlb_c, &textent_c));                                     \
        CHECK(size_c == sz && lb_c == lb && extent_c == extent && textent_c >= size_c,             \
              "%s: size %lld extent %lld against %d and %ld", what, (long long)size_c,             \
              (long long)extent_c, sz, (long)extent);                                              \
        OK(MPI_Type_free(&a));                                                                     \
        OK(MPI_Type_free(&b));                                                                     \
    } while (0)
    SAME_TYPE(MPI_Type_contiguous(4, MPI_INT, &a), MPI_Type_contiguous_c(4, MPI_INT, &b),
              "MPI_Type_contiguous_c");
    SAME_TYPE(MPI_Type_vector(3, 2, 4, MPI_INT, &a), MPI_Type_vector_c(3, 2, 4, MPI_INT, &b),
              "MPI_Type_vector_c");
    SAME_TYPE(MPI_Type_create_hindexed(2, blens, hdispls, MPI_INT, &a),
              MPI_Type_create_hindexed_c(2, blens_c, hdispls_c, MPI_INT, &b),
              "MPI_Type_create_hindexed_c");
    SAME_TYPE(MPI_Type_create_indexed_block(2, 2, displs_i, MPI_INT, &a),
              MPI_Type_create_indexed_block_c(2, 2, displs_c, MPI_INT, &b),
              "MPI_Type_create_indexed_block_c");
    SAME_TYPE(MPI_Type_create_hindexed_block(2, 2, hdispls, MPI_INT, &a),
              MPI_Type_create_hindexed_block_c(2, 2, hdispls_c, MPI_INT, &b),
              "MPI_Type_create_hindexed_block_c");
#undef SAME_TYPE
    (void)blens_c;

    /* external32 through the _c forms */
    {
        int v[2] = {0x01020304, -2}, back[2] = {0, 0};
        unsigned char ext[8];
        MPI_Aint need = 0;
        MPI_Count need_c = 0, pos = 0, at = 0;

        OK(MPI_Pack_external_size("external32", 2, MPI_INT, &need));
        OK(MPI_Pack_external_size_c("external32", 2, MPI_INT, &need_c));
        CHECK(need == 8 && need_c == 8, "external32 sizes %ld and %lld", (long)need,
              (long long)need_c);
        OK(MPI_Pack_external_c("external32", v, 2, MPI_INT, ext, (MPI_Count)sizeof(ext), &pos));
        CHECK(pos == 8 && ext[0] == 1 && ext[3] == 4 && ext[7] == 0xfe,
              "MPI_Pack_external_c wrote %lld bytes, %02x..%02x", (long long)pos, ext[0], ext[7]);
        OK(MPI_Unpack_external_c("external32", ext, (MPI_Count)sizeof(ext), &at, back, 2, MPI_INT));
        CHECK(back[0] == v[0] && back[1] == v[1], "MPI_Unpack_external_c gave %d %d", back[0],
              back[1]);
    }
}

static int delete_calls;

static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)value, (void)extra;
    delete_calls++;
    return MPI_SUCCESS;
}

static int count_win_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)win, (void)keyval, (void)value, (void)extra;
    delete_calls++;
    return MPI_SUCCESS;
}

/* The environment's calls no other test names. */
static void case_environment(int provided)
{
    int level = -1, main_thread = 0, len = 0, keyval = MPI_KEYVAL_INVALID, flag = 0, *got;
    char name[MPI_MAX_OBJECT_NAME];
    static int value = 7;
    MPI_Comm dup;
    MPI_Win win;
    MPI_Errhandler eh;

    OK(MPI_Query_thread(&level));
    CHECK(level == provided, "MPI_Query_thread says %d, MPI_Init_thread gave %d", level, provided);
    CHECK(provided == MPI_THREAD_FUNNELED, "MPI_Init_thread gave %d for MPI_THREAD_FUNNELED",
          provided);
    OK(MPI_Is_thread_main(&main_thread));
    CHECK(main_thread == 1, "MPI_Is_thread_main says %d in the main thread", main_thread);

    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_name(dup, "large-count dup"));
    OK(MPI_Comm_get_name(dup, name, &len));
    CHECK(strcmp(name, "large-count dup") == 0 && len == (int)strlen(name),
          "MPI_Comm_get_name: \"%s\" (%d)", name, len);
    OK(MPI_Comm_get_errhandler(dup, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "a dup of MPI_COMM_WORLD does not keep MPI_ERRORS_RETURN");
    OK(MPI_Errhandler_free(&eh));

    /* MPI-1 attributes: put, get, delete (the delete callback runs once) */
    delete_calls = 0;
    OK(MPI_Keyval_create(MPI_NULL_COPY_FN, count_delete, &keyval, NULL));
    OK(MPI_Attr_put(dup, keyval, &value));
    OK(MPI_Attr_get(dup, keyval, &got, &flag));
    CHECK(flag && got == &value, "MPI_Attr_get after MPI_Attr_put");
    OK(MPI_Attr_delete(dup, keyval));
    OK(MPI_Attr_get(dup, keyval, &got, &flag));
    CHECK(!flag && delete_calls == 1, "MPI_Attr_delete: flag %d, %d delete calls", flag,
          delete_calls);
    OK(MPI_Keyval_free(&keyval));
    OK(MPI_Comm_free(&dup));

    /* a window attribute deleted by MPI_Win_delete_attr */
    delete_calls = 0;
    OK(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_win_delete, &keyval, NULL));
    OK(MPI_Win_set_attr(win, keyval, &value));
    OK(MPI_Win_delete_attr(win, keyval));
    OK(MPI_Win_get_attr(win, keyval, &got, &flag));
    CHECK(!flag && delete_calls == 1, "MPI_Win_delete_attr: flag %d, %d delete calls", flag,
          delete_calls);
    OK(MPI_Win_free_keyval(&keyval));
    OK(MPI_Win_free(&win));
}

/* The MPI_T event calls given no registration or instance (NULL) refuse
 * it with the class the standard names (tests/mpi/test_mpit.c raises the
 * events themselves). */
static void case_events(void)
{
    int provided = 0, num = -1;
    MPI_T_event_registration handle = NULL;
    MPI_T_event_instance instance = NULL;
    MPI_Info info = MPI_INFO_NULL;
    MPI_Count stamp = 0;
    char buf[8];

    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    OK(MPI_T_event_get_num(&num));
    CHECK(num == 2, "MPI_T_event_get_num says %d", num);
    CHECK(MPI_T_event_handle_get_info(handle, &info) == MPI_T_ERR_INVALID_HANDLE,
          "MPI_T_event_handle_get_info");
    CHECK(MPI_T_event_handle_set_info(handle, MPI_INFO_NULL) == MPI_T_ERR_INVALID_HANDLE,
          "MPI_T_event_handle_set_info");
    CHECK(MPI_T_event_callback_get_info(handle, MPI_T_CB_REQUIRE_NONE, &info) ==
              MPI_T_ERR_INVALID_HANDLE,
          "MPI_T_event_callback_get_info");
    CHECK(MPI_T_event_callback_set_info(handle, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL) ==
              MPI_T_ERR_INVALID_HANDLE,
          "MPI_T_event_callback_set_info");
    CHECK(MPI_T_event_set_dropped_handler(handle, NULL) == MPI_T_ERR_INVALID_HANDLE,
          "MPI_T_event_set_dropped_handler");
    CHECK(MPI_T_event_read(instance, 0, buf) == MPI_T_ERR_INVALID_HANDLE, "MPI_T_event_read");
    CHECK(MPI_T_event_copy(instance, buf) == MPI_T_ERR_INVALID_HANDLE, "MPI_T_event_copy");
    CHECK(MPI_T_event_get_timestamp(instance, &stamp) == MPI_T_ERR_INVALID_HANDLE,
          "MPI_T_event_get_timestamp");
    OK(MPI_T_finalize());
}

int main(int argc, char **argv)
{
    int provided = -1;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    case_p2p();
    case_persistent();
    case_collectives();
    case_neighbors();
    case_types();
    case_environment(provided);
    case_events();
    int status = check_summary("large_count", MPI_COMM_WORLD, 99);

    MPI_Finalize();
    return status;
}
