/*
 * The nonblocking and persistent neighborhood collectives
 * (MPI_Ineighbor_*, MPI_Neighbor_*_init + MPI_Start) against the blocking
 * ones (which tests/mpi/test_topo.c checks against values computed
 * locally), on the topologies where order matters most: periodic
 * Cartesian dimensions of 1 and 2 ranks (one rank is both neighbours),
 * larger periodic and non-periodic grids, a graph and a distributed graph.
 * A persistent request is started three times with new send data, and
 * several are in flight at once.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define BLK 3   /* ints per block */
#define MAXN 16 /* neighbours at most */

static int sendv[MAXN * BLK], recv_blocking[MAXN * BLK], recv_other[MAXN * BLK];

static void fill(int me, int iter, int n)
{
    for (int j = 0; j < n * BLK; j++)
        sendv[j] = me * 10000 + iter * 100 + j;
}

/* The blocking call's result and the other's agree over @n blocks. */
static void compare(const char *topo, const char *what, int n, int iter)
{
    for (int j = 0; j < n * BLK; j++) {
        if (recv_blocking[j] != recv_other[j]) {
            CHECK(0, "%s: %s, start %d: element %d is %d, the blocking call's %d", topo, what, iter,
                  j, recv_other[j], recv_blocking[j]);
            return;
        }
    }
}

static void reset(void)
{
    memset(recv_blocking, 0xee, sizeof(recv_blocking));
    memset(recv_other, 0xee, sizeof(recv_other));
}

static void on(MPI_Comm comm, const char *topo)
{
    int indeg, outdeg, weighted, me, counts[MAXN], displs[MAXN], scounts[MAXN], sdispls[MAXN];
    MPI_Aint bdispls[MAXN], sbdispls[MAXN];
    MPI_Datatype types[MAXN];
    MPI_Request req[3];
    int topo_kind;

    if (comm == MPI_COMM_NULL)
        return;
    MPI_Comm_rank(comm, &me);
    MPI_Topo_test(comm, &topo_kind);
    if (topo_kind == MPI_CART) {
        int ndims;

        MPI_Cartdim_get(comm, &ndims);
        indeg = outdeg = 2 * ndims;
    } else if (topo_kind == MPI_GRAPH) {
        MPI_Graph_neighbors_count(comm, me, &indeg);
        outdeg = indeg;
    } else {
        MPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
    }
    CHECK(indeg <= MAXN && outdeg <= MAXN, "%s: too many neighbours", topo);
    if (indeg > MAXN || outdeg > MAXN)
        return;
    for (int j = 0; j < MAXN; j++) {
        /* v forms: blocks in reverse order, one int apart */
        counts[j] = scounts[j] = BLK;
        displs[j] = (indeg - 1 - j) * BLK;
        sdispls[j] = (outdeg - 1 - j) * BLK;
        bdispls[j] = (MPI_Aint)displs[j] * (MPI_Aint)sizeof(int);
        sbdispls[j] = (MPI_Aint)sdispls[j] * (MPI_Aint)sizeof(int);
        types[j] = MPI_INT;
    }

    for (int iter = 0; iter < 2; iter++) {
        fill(me, iter, outdeg);
        reset();
        OK(MPI_Neighbor_allgather(sendv, BLK, MPI_INT, recv_blocking, BLK, MPI_INT, comm));
        OK(MPI_Ineighbor_allgather(sendv, BLK, MPI_INT, recv_other, BLK, MPI_INT, comm, &req[0]));
        OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
        compare(topo, "Ineighbor_allgather", indeg, iter);

        reset();
        OK(MPI_Neighbor_alltoall(sendv, BLK, MPI_INT, recv_blocking, BLK, MPI_INT, comm));
        OK(MPI_Ineighbor_alltoall(sendv, BLK, MPI_INT, recv_other, BLK, MPI_INT, comm, &req[0]));
        OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
        compare(topo, "Ineighbor_alltoall", indeg, iter);

        reset();
        OK(MPI_Neighbor_allgatherv(sendv, BLK, MPI_INT, recv_blocking, counts, displs, MPI_INT,
                                   comm));
        OK(MPI_Ineighbor_allgatherv(sendv, BLK, MPI_INT, recv_other, counts, displs, MPI_INT, comm,
                                    &req[0]));
        OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
        compare(topo, "Ineighbor_allgatherv", indeg, iter);

        reset();
        OK(MPI_Neighbor_alltoallv(sendv, scounts, sdispls, MPI_INT, recv_blocking, counts, displs,
                                  MPI_INT, comm));
        OK(MPI_Ineighbor_alltoallv(sendv, scounts, sdispls, MPI_INT, recv_other, counts, displs,
                                   MPI_INT, comm, &req[0]));
        OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
        compare(topo, "Ineighbor_alltoallv", indeg, iter);

        reset();
        OK(MPI_Neighbor_alltoallw(sendv, scounts, sbdispls, types, recv_blocking, counts, bdispls,
                                  types, comm));
        OK(MPI_Ineighbor_alltoallw(sendv, scounts, sbdispls, types, recv_other, counts, bdispls,
                                   types, comm, &req[0]));
        OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
        compare(topo, "Ineighbor_alltoallw", indeg, iter);
    }

    /* persistent: made once, started three times with new data; three in
     * flight at once (alltoall, allgather and an Ibarrier between) */
    OK(MPI_Neighbor_alltoall_init(sendv, BLK, MPI_INT, recv_other, BLK, MPI_INT, comm,
                                  MPI_INFO_NULL, &req[0]));
    for (int iter = 0; iter < 3; iter++) {
        fill(me, 10 + iter, outdeg);
        reset();
        OK(MPI_Neighbor_alltoall(sendv, BLK, MPI_INT, recv_blocking, BLK, MPI_INT, comm));
        OK(MPI_Start(&req[0]));
        OK(MPI_Ibarrier(comm, &req[1]));
        OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        compare(topo, "Neighbor_alltoall_init", indeg, iter);
    }
    OK(MPI_Request_free(&req[0]));
    OK(MPI_Neighbor_allgatherv_init(sendv, BLK, MPI_INT, recv_other, counts, displs, MPI_INT, comm,
                                    MPI_INFO_NULL, &req[0]));
    OK(MPI_Neighbor_alltoallw_init(sendv, scounts, sbdispls, types, recv_blocking, counts, bdispls,
                                   types, comm, MPI_INFO_NULL, &req[1]));
    for (int iter = 0; iter < 3; iter++) {
        static int expect[MAXN * BLK];

        fill(me, 20 + iter, outdeg);
        reset();
        OK(MPI_Startall(2, req));
        OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
        memcpy(expect, recv_blocking, sizeof(expect)); /* the alltoallw's */
        OK(MPI_Neighbor_allgatherv(sendv, BLK, MPI_INT, recv_blocking, counts, displs, MPI_INT,
                                   comm));
        compare(topo, "Neighbor_allgatherv_init", indeg, iter);
        memcpy(recv_other, expect, sizeof(expect));
        OK(MPI_Neighbor_alltoallw(sendv, scounts, sbdispls, types, recv_blocking, counts, bdispls,
                                  types, comm));
        compare(topo, "Neighbor_alltoallw_init", indeg, iter);
    }
    OK(MPI_Request_free(&req[0]));
    OK(MPI_Request_free(&req[1]));
}

int main(int argc, char **argv)
{
    int size, dims[3], periods[3] = {1, 1, 1}, rc;
    MPI_Comm cart, graph, dist;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1 x 2 x (P/2) or 1 x 1 x P: dimensions of 1 and 2 ranks, periodic */
    dims[0] = 1;
    dims[1] = size % 2 == 0 ? 2 : 1;
    dims[2] = size / dims[1];
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    on(cart, "periodic 1 x 2 x P/2");
    MPI_Comm_free(&cart);

    /* a balanced grid, not periodic in its first dimension */
    dims[0] = dims[1] = 0;
    periods[0] = 0;
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    on(cart, "grid");
    MPI_Comm_free(&cart);

    /* a graph: a ring with a loop at each rank (the edges of a graph
     * topology must agree at both ends) */
    {
        int index[64], edges[192], e = 0;

        for (int r = 0; r < size && size <= 64; r++) {
            edges[e++] = (r + 1) % size;
            edges[e++] = (r + size - 1) % size;
            edges[e++] = r;
            index[r] = e;
        }
        MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph);
        on(graph, "graph");
        MPI_Comm_free(&graph);
    }

    /* a distributed graph: from r to r + 1 and r + 2 (twice to r + 1) */
    {
        int srcs[3], dsts[3];

        for (int k = 0; k < 3; k++) {
            dsts[k] = (rank + (k == 2 ? 2 : 1)) % size;
            srcs[k] = (rank + size - (k == 2 ? 2 : 1)) % size;
        }
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs, MPI_UNWEIGHTED, 3, dsts,
                                       MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dist);
        on(dist, "distributed graph");
        MPI_Comm_free(&dist);
    }

    /* MPI_ERR_TOPOLOGY without a topology, and no request */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    req = MPI_REQUEST_NULL;
    rc = MPI_Ineighbor_alltoall(sendv, 1, MPI_INT, recv_other, 1, MPI_INT, MPI_COMM_WORLD, &req);
    CHECK(rc == MPI_ERR_TOPOLOGY, "Ineighbor_alltoall without a topology returned %d", rc);
    CHECK(req == MPI_REQUEST_NULL, "Ineighbor_alltoall without a topology made a request");

    rc = check_summary("neighbor_nb", MPI_COMM_WORLD, 99);
    MPI_Finalize();
    return rc;
}
