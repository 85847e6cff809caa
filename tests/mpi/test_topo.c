/*
 * pbt-mpi-topo: process topologies (src/mpi/topo.c), the neighborhood
 * collectives and MPI_Alltoallw (src/mpi/coll_neighbor.c), run by CTest
 * under `postbox run -n N [--nodes K]` (any N >= 1).  Written to the
 * standard API only.  The topology functions against the standard's
 * examples (MPI-5.0 chapter 8: MPI_Dims_create's table, Cart_shift,
 * the four-node graph, distributed graphs with and without weights), the
 * collectives against values computed here from the neighbours, and the
 * errors the standard names, under MPI_ERRORS_RETURN.  Every rank prints
 * one line per failure; rank 0 prints "topo: ok" at the end.
 *
 *   pbt-mpi-topo [case ...]   run the named cases (default: all)
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int size;

#define SENTINEL (-7)

/* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are addresses of no array: read
 * through a volatile so the compiler does not check them as arrays */
static int *volatile unweighted, *volatile weights_empty;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        printf("topo FAIL rank %d: out of memory for %zu bytes\n", rank, n);
        exit(1);
    }
    return p;
}

/* @call must fail with error class @expected */
static void expect_class(int rc, int expected, const char *what)
{
    int cls = -1;

    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == expected, "%s: returned %d (class %d), expected class %d",
          what, rc, cls, expected);
}

/* ---- MPI_Dims_create ------------------------------------------------------------------- */

static void dims_case(int nnodes, int ndims, const int *in, const int *want)
{
    int dims[8];

    memcpy(dims, in, (size_t)ndims * sizeof(int));
    OK(MPI_Dims_create(nnodes, ndims, dims));
    for (int i = 0; i < ndims; i++)
        CHECK(dims[i] == want[i], "Dims_create(%d, %d): dims[%d] = %d, expected %d", nnodes, ndims,
              i, dims[i], want[i]);
}

static void case_dims(void)
{
    int dims[4] = {0, 3, 0, 0};

    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    /* the standard's table */
    dims_case(6, 2, (int[]){0, 0}, (int[]){3, 2});
    dims_case(7, 2, (int[]){0, 0}, (int[]){7, 1});
    dims_case(6, 3, (int[]){0, 3, 0}, (int[]){2, 3, 1});
    expect_class(MPI_Dims_create(7, 3, dims), MPI_ERR_DIMS, "Dims_create(7, (0,3,0))");
    /* balanced, non-increasing */
    dims_case(16, 3, (int[]){0, 0, 0}, (int[]){4, 2, 2});
    dims_case(12, 2, (int[]){0, 0}, (int[]){4, 3});
    dims_case(36, 2, (int[]){0, 0}, (int[]){6, 6});
    dims_case(30, 3, (int[]){0, 0, 0}, (int[]){5, 3, 2});
    dims_case(1024, 3, (int[]){0, 0, 0}, (int[]){16, 8, 8});
    dims_case(24, 4, (int[]){0, 0, 0, 0}, (int[]){3, 2, 2, 2});
    dims_case(1, 3, (int[]){0, 0, 0}, (int[]){1, 1, 1});
    dims_case(8, 3, (int[]){2, 0, 2}, (int[]){2, 2, 2});
    dims_case(12, 2, (int[]){0, 2}, (int[]){6, 2});
    dims_case(2000006, 2, (int[]){0, 0}, (int[]){1000003, 2}); /* 2 x a prime */
    dims_case(1, 0, (int[]){0}, (int[]){0});
    expect_class(MPI_Dims_create(5, 0, NULL), MPI_ERR_DIMS, "Dims_create(5, 0 dims)");
    /* errors */
    dims[0] = -1;
    expect_class(MPI_Dims_create(4, 1, dims), MPI_ERR_DIMS, "Dims_create dims[0] -1");
    dims[0] = 0;
    expect_class(MPI_Dims_create(4, -1, dims), MPI_ERR_DIMS, "Dims_create ndims -1");
    expect_class(MPI_Dims_create(0, 1, dims), MPI_ERR_ARG, "Dims_create nnodes 0");
    dims[0] = 2, dims[1] = 3;
    expect_class(MPI_Dims_create(5, 2, dims), MPI_ERR_DIMS, "Dims_create (2,3) for 5");
    expect_class(MPI_Dims_create(4, 2, NULL), MPI_ERR_ARG, "Dims_create NULL dims");
}

/* ---- Cartesian ------------------------------------------------------------------------- */

/* The rank at @coords of the row-major grid @dims[@ndims] (-1: off a
 * non-periodic edge). */
static int grid_rank(int ndims, const int *dims, const int *periods, const int *coords)
{
    int r = 0;

    for (int i = 0; i < ndims; i++) {
        int c = coords[i];

        if (periods[i])
            c = ((c % dims[i]) + dims[i]) % dims[i];
        if (c < 0 || c >= dims[i])
            return MPI_PROC_NULL;
        r = r * dims[i] + c;
    }
    return r;
}

static void grid_coords(int ndims, const int *dims, int r, int *coords)
{
    for (int i = ndims - 1; i >= 0; i--) {
        coords[i] = r % dims[i];
        r /= dims[i];
    }
}

/* The rank @disp steps along @dir from @coords. */
static int grid_step(int ndims, const int *dims, const int *periods, const int *coords, int dir,
                     int disp)
{
    int c[8];

    memcpy(c, coords, (size_t)ndims * sizeof(int));
    c[dir] += disp;
    return grid_rank(ndims, dims, periods, c);
}

static void check_cart(MPI_Comm cart, int ndims, const int *dims, const int *periods)
{
    int n = -1, status = -1, d[8], p[8], coords[8], c2[8], r = -1, crank, csize;

    MPI_Comm_rank(cart, &crank);
    MPI_Comm_size(cart, &csize);
    OK(MPI_Topo_test(cart, &status));
    CHECK(status == MPI_CART, "Topo_test %d, expected MPI_CART", status);
    OK(MPI_Cartdim_get(cart, &n));
    CHECK(n == ndims, "Cartdim_get %d, expected %d", n, ndims);
    OK(MPI_Cart_get(cart, 8, d, p, coords));
    grid_coords(ndims, dims, crank, c2);
    for (int i = 0; i < ndims; i++) {
        CHECK(d[i] == dims[i] && !p[i] == !periods[i] && coords[i] == c2[i],
              "Cart_get dim %d: %d %d %d, expected %d %d %d", i, d[i], p[i], coords[i], dims[i],
              periods[i], c2[i]);
    }
    for (int q = 0; q < csize; q++) {
        OK(MPI_Cart_coords(cart, q, 8, coords));
        grid_coords(ndims, dims, q, c2);
        CHECK(memcmp(coords, c2, (size_t)ndims * sizeof(int)) == 0, "Cart_coords(%d)", q);
        OK(MPI_Cart_rank(cart, c2, &r));
        CHECK(r == q, "Cart_rank(coords of %d) = %d", q, r);
    }
    /* every shift, both ways, as the standard defines them */
    grid_coords(ndims, dims, crank, c2);
    for (int dir = 0; dir < ndims; dir++) {
        for (int disp = -3; disp <= 3; disp++) {
            int src = -2, dst = -2;

            OK(MPI_Cart_shift(cart, dir, disp, &src, &dst));
            CHECK(src == grid_step(ndims, dims, periods, c2, dir, -disp) &&
                      dst == grid_step(ndims, dims, periods, c2, dir, disp),
                  "Cart_shift(%d, %d) = (%d, %d)", dir, disp, src, dst);
        }
    }
}

static void case_cart(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 0}, status = -1, n = -1;
    MPI_Comm cart, dup, split;

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Dims_create(size, 2, dims));
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    CHECK(cart != MPI_COMM_NULL, "Cart_create gave MPI_COMM_NULL");
    if (cart == MPI_COMM_NULL)
        return;
    check_cart(cart, 2, dims, periods);
    {
        int coords[2], r = -1, c2[2];

        /* a periodic coordinate wraps; a non-periodic one off the grid is an error */
        grid_coords(2, dims, rank, coords);
        c2[0] = coords[0] + 2 * dims[0], c2[1] = coords[1];
        OK(MPI_Cart_rank(cart, c2, &r));
        CHECK(r == rank, "Cart_rank wrapped = %d", r);
        c2[0] = coords[0], c2[1] = dims[1];
        expect_class(MPI_Cart_rank(cart, c2, &r), MPI_ERR_ARG, "Cart_rank off the grid");
        expect_class(MPI_Cart_shift(cart, 2, 1, &r, &r), MPI_ERR_DIMS, "Cart_shift direction 2");
        expect_class(MPI_Cart_coords(cart, size, 2, coords), MPI_ERR_RANK, "Cart_coords rank");
        expect_class(MPI_Cart_coords(cart, 0, 1, coords), MPI_ERR_ARG, "Cart_coords maxdims 1");
        expect_class(MPI_Graphdims_get(cart, &r, &r), MPI_ERR_TOPOLOGY, "Graphdims_get on cart");
    }
    /* MPI_Comm_dup copies the topology; MPI_Comm_split does not */
    OK(MPI_Comm_dup(cart, &dup));
    check_cart(dup, 2, dims, periods);
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_split(cart, 0, rank, &split));
    OK(MPI_Topo_test(split, &status));
    CHECK(status == MPI_UNDEFINED, "Topo_test of a split %d", status);
    expect_class(MPI_Cartdim_get(split, &n), MPI_ERR_TOPOLOGY, "Cartdim_get without topology");
    OK(MPI_Comm_free(&split));
    OK(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CHECK(status == MPI_UNDEFINED, "Topo_test of MPI_COMM_WORLD %d", status);
    OK(MPI_Comm_free(&cart));
}

/* The standard's example of MPI_Cart_shift: a periodic 2-D grid, each
 * column shifted by its coordinate in dimension 1 (an array skewed). */
static void case_cart_shift_example(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 1}, coords[2], src, dst, v, got = SENTINEL;
    MPI_Comm cart;

    OK(MPI_Dims_create(size, 2, dims));
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart));
    OK(MPI_Comm_rank(cart, &v));
    OK(MPI_Cart_coords(cart, v, 2, coords));
    OK(MPI_Cart_shift(cart, 0, coords[1], &src, &dst));
    CHECK(src == grid_step(2, dims, periods, coords, 0, -coords[1]) &&
              dst == grid_step(2, dims, periods, coords, 0, coords[1]),
          "skew shift (%d, %d)", src, dst);
    OK(MPI_Sendrecv(&v, 1, MPI_INT, dst, 9, &got, 1, MPI_INT, src, 9, cart, MPI_STATUS_IGNORE));
    CHECK(got == src, "skewed value %d from %d", got, src);
    OK(MPI_Comm_free(&cart));
}

/* A grid smaller than the communicator, the zero-dimensional grid,
 * MPI_Cart_sub, MPI_Cart_map and the errors of MPI_Cart_create. */
static void case_cart_more(void)
{
    int dims[3] = {size, 1, 1}, periods[3] = {0, 1, 0}, n = -1, newrank = -2, r;
    MPI_Comm cart, sub;

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    /* size - 1 cells (size > 1): the last rank gets MPI_COMM_NULL */
    if (size > 1) {
        int small = size - 1;

        OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &small, periods, 0, &cart));
        CHECK((cart == MPI_COMM_NULL) == (rank == size - 1), "Cart_create of %d cells: %s", small,
              cart == MPI_COMM_NULL ? "MPI_COMM_NULL" : "a communicator");
        if (cart != MPI_COMM_NULL) {
            check_cart(cart, 1, &small, periods);
            OK(MPI_Comm_free(&cart));
        }
        OK(MPI_Cart_map(MPI_COMM_WORLD, 1, &small, periods, &newrank));
        CHECK(newrank == (rank < small ? rank : MPI_UNDEFINED), "Cart_map %d", newrank);
    }
    /* zero dimensions: one rank */
    OK(MPI_Cart_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &cart));
    CHECK((cart == MPI_COMM_NULL) == (rank != 0), "Cart_create of 0 dims");
    if (cart != MPI_COMM_NULL) {
        OK(MPI_Cartdim_get(cart, &n));
        CHECK(n == 0, "Cartdim_get of 0 dims: %d", n);
        OK(MPI_Comm_size(cart, &n));
        CHECK(n == 1, "size of the 0-dim grid %d", n);
        OK(MPI_Comm_free(&cart));
    }
    /* Cart_sub: a 3-D grid (size x 1 x 1) cut along each dimension */
    OK(MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart));
    {
        int keep0[3] = {1, 0, 0}, keep12[3] = {0, 1, 1}, none[3] = {0, 0, 0};

        OK(MPI_Cart_sub(cart, keep0, &sub));
        OK(MPI_Comm_size(sub, &n));
        OK(MPI_Comm_rank(sub, &r));
        CHECK(n == size && r == rank, "Cart_sub keep 0: size %d rank %d", n, r);
        check_cart(sub, 1, dims, periods);
        OK(MPI_Comm_free(&sub));
        OK(MPI_Cart_sub(cart, keep12, &sub));
        OK(MPI_Comm_size(sub, &n));
        CHECK(n == 1, "Cart_sub keep 1, 2: size %d", n);
        check_cart(sub, 2, dims + 1, periods + 1);
        OK(MPI_Comm_free(&sub));
        OK(MPI_Cart_sub(cart, none, &sub));
        OK(MPI_Cartdim_get(sub, &n));
        CHECK(n == 0, "Cart_sub keep none: %d dims", n);
        OK(MPI_Comm_free(&sub));
    }
    OK(MPI_Comm_free(&cart));
    /* a 2-D grid of rows: each row its own communicator */
    if (size % 2 == 0) {
        int d2[2] = {size / 2, 2}, p2[2] = {0, 1}, keep1[2] = {0, 1}, keep0[2] = {1, 0};

        OK(MPI_Cart_create(MPI_COMM_WORLD, 2, d2, p2, 0, &cart));
        OK(MPI_Cart_sub(cart, keep1, &sub));
        OK(MPI_Comm_size(sub, &n));
        OK(MPI_Comm_rank(sub, &r));
        CHECK(n == 2 && r == rank % 2, "row: size %d rank %d", n, r);
        check_cart(sub, 1, d2 + 1, p2 + 1);
        OK(MPI_Comm_free(&sub));
        OK(MPI_Cart_sub(cart, keep0, &sub));
        OK(MPI_Comm_size(sub, &n));
        OK(MPI_Comm_rank(sub, &r));
        CHECK(n == size / 2 && r == rank / 2, "column: size %d rank %d", n, r);
        OK(MPI_Comm_free(&sub));
        OK(MPI_Comm_free(&cart));
    }
    /* errors */
    dims[0] = size + 1;
    expect_class(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart), MPI_ERR_TOPOLOGY,
                 "Cart_create larger than the communicator");
    dims[0] = 0;
    expect_class(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart), MPI_ERR_DIMS,
                 "Cart_create dims 0");
    dims[0] = -2;
    expect_class(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart), MPI_ERR_DIMS,
                 "Cart_create dims -2");
    expect_class(MPI_Cart_create(MPI_COMM_WORLD, -1, dims, periods, 0, &cart), MPI_ERR_DIMS,
                 "Cart_create ndims -1");
    expect_class(MPI_Cart_create(MPI_COMM_NULL, 1, dims, periods, 0, &cart), MPI_ERR_COMM,
                 "Cart_create MPI_COMM_NULL");
    dims[0] = 1;
    expect_class(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, NULL), MPI_ERR_ARG,
                 "Cart_create NULL comm_cart");
    dims[0] = size + 1;
    expect_class(MPI_Cart_map(MPI_COMM_WORLD, 1, dims, periods, &newrank), MPI_ERR_TOPOLOGY,
                 "Cart_map larger than the communicator");
}

/* ---- graphs ------------------------------------------------------------------------------ */

/* The standard's example: four nodes, 0-1, 0-3, 2-3 (both ways). */
static const int ex_index[4] = {2, 3, 4, 6};
static const int ex_edges[6] = {1, 3, 0, 3, 0, 2};

static void case_graph(void)
{
    int nodes = -1, nedges = -1, index[4], edges[6], n = -1, nb[4], status = -1, newrank = -2;
    MPI_Comm graph, dup;

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    if (size < 4) {
        /* one node per rank, each its own neighbour */
        int idx[6], e[6];

        for (int i = 0; i < size; i++)
            idx[i] = i + 1, e[i] = i;
        OK(MPI_Graph_create(MPI_COMM_WORLD, size, idx, e, 0, &graph));
        OK(MPI_Graph_neighbors(graph, rank, 4, nb));
        CHECK(nb[0] == rank, "self loop %d", nb[0]);
        OK(MPI_Comm_free(&graph));
        expect_class(MPI_Graph_create(MPI_COMM_WORLD, 4, ex_index, ex_edges, 0, &graph),
                     MPI_ERR_TOPOLOGY, "Graph_create of 4 nodes on fewer ranks");
        return;
    }
    OK(MPI_Graph_create(MPI_COMM_WORLD, 4, ex_index, ex_edges, 0, &graph));
    CHECK((graph == MPI_COMM_NULL) == (rank >= 4), "Graph_create: ranks beyond 4 get NULL");
    OK(MPI_Graph_map(MPI_COMM_WORLD, 4, ex_index, ex_edges, &newrank));
    CHECK(newrank == (rank < 4 ? rank : MPI_UNDEFINED), "Graph_map %d", newrank);
    if (graph != MPI_COMM_NULL) {
        OK(MPI_Comm_dup(graph, &dup));
        OK(MPI_Topo_test(dup, &status));
        CHECK(status == MPI_GRAPH, "Topo_test %d, expected MPI_GRAPH", status);
        OK(MPI_Graphdims_get(dup, &nodes, &nedges));
        CHECK(nodes == 4 && nedges == 6, "Graphdims_get (%d, %d)", nodes, nedges);
        OK(MPI_Graph_get(dup, 4, 6, index, edges));
        CHECK(memcmp(index, ex_index, sizeof(index)) == 0 &&
                  memcmp(edges, ex_edges, sizeof(edges)) == 0,
              "Graph_get");
        for (int node = 0; node < 4; node++) {
            int first = node > 0 ? ex_index[node - 1] : 0;

            OK(MPI_Graph_neighbors_count(dup, node, &n));
            CHECK(n == ex_index[node] - first, "Graph_neighbors_count(%d) = %d", node, n);
            OK(MPI_Graph_neighbors(dup, node, 4, nb));
            CHECK(memcmp(nb, ex_edges + first, (size_t)n * sizeof(int)) == 0, "Graph_neighbors(%d)",
                  node);
        }
        expect_class(MPI_Graph_neighbors_count(dup, 4, &n), MPI_ERR_RANK,
                     "Graph_neighbors_count node 4");
        expect_class(MPI_Cartdim_get(dup, &n), MPI_ERR_TOPOLOGY, "Cartdim_get on a graph");
        OK(MPI_Comm_free(&dup));
        OK(MPI_Comm_free(&graph));
    }
    {
        int bad[6] = {1, 3, 0, 4, 0, 2}, down[4] = {2, 1, 4, 6};

        expect_class(MPI_Graph_create(MPI_COMM_WORLD, 4, ex_index, bad, 0, &graph),
                     MPI_ERR_TOPOLOGY, "Graph_create edge to node 4");
        expect_class(MPI_Graph_create(MPI_COMM_WORLD, 4, down, ex_edges, 0, &graph), MPI_ERR_ARG,
                     "Graph_create decreasing index");
        expect_class(MPI_Graph_create(MPI_COMM_WORLD, -1, ex_index, ex_edges, 0, &graph),
                     MPI_ERR_ARG, "Graph_create nnodes -1");
    }
    /* no nodes: MPI_COMM_NULL everywhere */
    OK(MPI_Graph_create(MPI_COMM_WORLD, 0, NULL, NULL, 0, &graph));
    CHECK(graph == MPI_COMM_NULL, "Graph_create of no nodes");
}

/* ---- distributed graphs ------------------------------------------------------------------ */

static void case_dist_graph_adjacent(void)
{
    int left = (rank - 1 + size) % size, right = (rank + 1) % size;
    int src[2] = {left, right}, sw[2] = {10 * left + rank, 10 * right + rank};
    int dst[1] = {right}, dw[1] = {10 * rank + right};
    int in = -1, out = -1, weighted = -1, s[2], w[2] = {SENTINEL, SENTINEL}, d[1], x[1], status;
    MPI_Comm g;

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 1, dst, dw, MPI_INFO_NULL, 0,
                                      &g));
    OK(MPI_Topo_test(g, &status));
    CHECK(status == MPI_DIST_GRAPH, "Topo_test %d", status);
    OK(MPI_Dist_graph_neighbors_count(g, &in, &out, &weighted));
    CHECK(in == 2 && out == 1 && weighted, "neighbors_count (%d, %d, %d)", in, out, weighted);
    OK(MPI_Dist_graph_neighbors(g, 2, s, w, 1, d, x));
    CHECK(s[0] == left && s[1] == right && w[0] == sw[0] && w[1] == sw[1] && d[0] == right &&
              x[0] == dw[0],
          "Dist_graph_neighbors");
    OK(MPI_Comm_free(&g));
    /* unweighted */
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, unweighted, 1, dst, unweighted,
                                      MPI_INFO_NULL, 1, &g));
    OK(MPI_Dist_graph_neighbors_count(g, &in, &out, &weighted));
    CHECK(in == 2 && out == 1 && !weighted, "unweighted count (%d, %d, %d)", in, out, weighted);
    OK(MPI_Dist_graph_neighbors(g, 2, s, unweighted, 1, d, unweighted));
    CHECK(s[0] == left && s[1] == right && d[0] == right, "unweighted neighbours");
    expect_class(MPI_Dist_graph_neighbors(g, 1, s, unweighted, 1, d, unweighted), MPI_ERR_ARG,
                 "Dist_graph_neighbors maxindegree 1 of 2");
    OK(MPI_Comm_free(&g));
    /* no neighbours at all */
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, weights_empty, 0, NULL,
                                      weights_empty, MPI_INFO_NULL, 0, &g));
    OK(MPI_Dist_graph_neighbors_count(g, &in, &out, &weighted));
    CHECK(in == 0 && out == 0, "empty graph (%d, %d)", in, out);
    OK(MPI_Comm_free(&g));
    /* errors */
    src[0] = size;
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 1, dst, dw,
                                                MPI_INFO_NULL, 0, &g),
                 MPI_ERR_RANK, "Dist_graph_create_adjacent source = size");
    src[0] = left;
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, unweighted, 1, dst, dw,
                                                MPI_INFO_NULL, 0, &g),
                 MPI_ERR_ARG, "Dist_graph_create_adjacent one side unweighted");
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, -1, src, sw, 1, dst, dw,
                                                MPI_INFO_NULL, 0, &g),
                 MPI_ERR_ARG, "Dist_graph_create_adjacent indegree -1");
    sw[1] = -1;
    expect_class(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 1, dst, dw,
                                                MPI_INFO_NULL, 0, &g),
                 MPI_ERR_ARG, "Dist_graph_create_adjacent negative weight");
    expect_class(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &in, &out, &weighted),
                 MPI_ERR_TOPOLOGY, "Dist_graph_neighbors_count on MPI_COMM_WORLD");
}

/*
 * The graph MPI_Dist_graph_create's cases build: every rank r has edges
 * r -> r + 1 (twice: two blocks to the same rank) and r -> r + 2 (mod
 * size), weight 100 r + k for its k-th edge.  Given either all by rank 0,
 * or each rank its own.  The neighbours of rank @me, in the order of the
 * ranks that gave the edges, then of their arguments, are computed here.
 */
#define EDGES_PER_RANK 3

static int edge_dest(int r, int k)
{
    return (r + (k < 2 ? 1 : 2)) % size;
}

static void expected_lists(int me, int *in, int *inw, int *nin, int *out, int *outw, int *nout)
{
    /* whichever rank gave them, the edges come in order of source rank */
    *nin = *nout = 0;
    for (int r = 0; r < size; r++) {
        for (int k = 0; k < EDGES_PER_RANK; k++) {
            if (r == me) {
                out[*nout] = edge_dest(r, k);
                outw[(*nout)++] = 100 * r + k;
            }
            if (edge_dest(r, k) == me) {
                in[*nin] = r;
                inw[(*nin)++] = 100 * r + k;
            }
        }
    }
}

/* A distributed graph of the edges above: by_root, all given by rank 0;
 * else each rank gives its own. */
static MPI_Comm make_dist_graph(int by_root)
{
    int n = 0, srcs[64], degs[64], dsts[64 * EDGES_PER_RANK], w[64 * EDGES_PER_RANK];
    MPI_Comm g = MPI_COMM_NULL;

    for (int r = 0; r < size; r++) {
        if (by_root ? rank != 0 : r != rank)
            continue;
        srcs[n] = r;
        degs[n] = EDGES_PER_RANK;
        for (int k = 0; k < EDGES_PER_RANK; k++) {
            dsts[n * EDGES_PER_RANK + k] = edge_dest(r, k);
            w[n * EDGES_PER_RANK + k] = 100 * r + k;
        }
        n++;
    }
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, n, srcs, degs, dsts, w, MPI_INFO_NULL, 0, &g));
    return g;
}

static void case_dist_graph(void)
{
    int ein[64], einw[64], ein_n, eout[64], eoutw[64], eout_n;

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    expected_lists(rank, ein, einw, &ein_n, eout, eoutw, &eout_n);
    for (int by_root = 0; by_root < 2; by_root++) {
        int in = -1, out = -1, weighted = -1, s[64], sw[64], d[64], dw[64];
        MPI_Comm g = make_dist_graph(by_root);

        OK(MPI_Dist_graph_neighbors_count(g, &in, &out, &weighted));
        CHECK(in == ein_n && out == eout_n && weighted, "by_root %d: count (%d, %d, %d)", by_root,
              in, out, weighted);
        if (in != ein_n || out != eout_n) {
            MPI_Comm_free(&g);
            continue;
        }
        OK(MPI_Dist_graph_neighbors(g, 64, s, sw, 64, d, dw));
        /* each list in the order of its edges' source rank, ties in their order */
        for (int i = 0; i < in; i++)
            CHECK(s[i] == ein[i] && sw[i] == einw[i], "by_root %d: source %d: %d (%d)", by_root, i,
                  s[i], sw[i]);
        for (int i = 0; i < out; i++)
            CHECK(d[i] == eout[i] && dw[i] == eoutw[i], "by_root %d: dest %d: %d (%d)", by_root, i,
                  d[i], dw[i]);
        OK(MPI_Comm_free(&g));
    }
    {
        int srcs[1] = {rank}, degs[1] = {1}, bad[1] = {size}, w[1] = {1};
        MPI_Comm g;

        expect_class(
            MPI_Dist_graph_create(MPI_COMM_WORLD, 1, srcs, degs, bad, w, MPI_INFO_NULL, 0, &g),
            MPI_ERR_RANK, "Dist_graph_create destination = size");
        degs[0] = -1;
        expect_class(
            MPI_Dist_graph_create(MPI_COMM_WORLD, 1, srcs, degs, bad, w, MPI_INFO_NULL, 0, &g),
            MPI_ERR_ARG, "Dist_graph_create degree -1");
    }
}

/* ---- neighborhood collectives ------------------------------------------------------------- */

/* The value element @k of the block rank @r sends to its out-neighbour
 * @j (j < 0: the one block of an allgather). */
static int nval(int r, int j, int k)
{
    return r * 100000 + (j + 1) * 100 + k;
}

/*
 * The neighbours of this rank of @comm, in the standard's order, and for
 * each in-neighbour the index of the out-neighbour slot through which it
 * sends here: for a Cartesian topology the opposite direction, for graphs
 * the i-th edge from that rank among its out-neighbours if this is its
 * i-th in-edge from it.
 */
typedef struct {
    int in, out;
    int src[64], dst[64], via[64];
} nbrs_t;

static void cart_neighbours(MPI_Comm comm, nbrs_t *nb)
{
    int ndims = 0;

    MPI_Cartdim_get(comm, &ndims);
    nb->in = nb->out = 2 * ndims;
    for (int d = 0; d < ndims; d++) {
        MPI_Cart_shift(comm, d, 1, &nb->src[2 * d], &nb->src[2 * d + 1]);
        nb->dst[2 * d] = nb->src[2 * d];
        nb->dst[2 * d + 1] = nb->src[2 * d + 1];
        nb->via[2 * d] = 2 * d + 1; /* from -1, which sent toward +1 */
        nb->via[2 * d + 1] = 2 * d;
    }
}

/* For a graph (@outs(@r, list) gives rank r's out-neighbours) */
static void match_edges(nbrs_t *nb, int (*outs)(int r, int *list))
{
    for (int j = 0; j < nb->in; j++) {
        int list[64], n = outs(nb->src[j], list), nth = 0, seen = 0;

        for (int i = 0; i < j; i++)
            nth += nb->src[i] == nb->src[j];
        nb->via[j] = -1;
        for (int i = 0; i < n; i++) {
            if (list[i] == rank && seen++ == nth) {
                nb->via[j] = i;
                break;
            }
        }
    }
}

static int dist_outs(int r, int *list)
{
    int in[64], inw[64], nin, outw[64], nout;

    expected_lists(r, in, inw, &nin, list, outw, &nout);
    return nout;
}

static int example_outs(int r, int *list)
{
    int first = r > 0 ? ex_index[r - 1] : 0;

    memcpy(list, ex_edges + first, (size_t)(ex_index[r] - first) * sizeof(int));
    return ex_index[r] - first;
}

static int ring_outs(int r, int *list)
{
    list[0] = (r + 1) % size;
    list[1] = (r + size - 1) % size;
    return 2;
}

/* Every blocking neighborhood collective on @comm, checked against @nb. */
static void check_neighbor_colls(MPI_Comm comm, const nbrs_t *nb, const char *what)
{
    enum {
        K = 5
    };
    int sbuf[64 * K * 2], rbuf[64 * K * 2], counts[64], displs[64], rcounts[64], rdispls[64];
    MPI_Aint sbytes[64], rbytes[64];
    MPI_Count ccount[64], crcount[64];
    MPI_Aint cdispl[64], crdispl[64];
    MPI_Datatype stypes[64], rtypes[64], pair;
    int me;

    MPI_Comm_rank(comm, &me);

    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);

    /* allgather: the one block, K elements, to every out-neighbour */
    for (int k = 0; k < K; k++)
        sbuf[k] = nval(me, -1, k);
    for (int form = 0; form < 2; form++) {
        for (int i = 0; i < nb->in * K; i++)
            rbuf[i] = SENTINEL;
        if (form == 0)
            OK(MPI_Neighbor_allgather(sbuf, K, MPI_INT, rbuf, K, MPI_INT, comm));
        else
            OK(MPI_Neighbor_allgather_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, comm));
        for (int j = 0; j < nb->in; j++) {
            for (int k = 0; k < K; k++) {
                int want = nb->src[j] == MPI_PROC_NULL ? SENTINEL : nval(nb->src[j], -1, k);

                CHECK(rbuf[j * K + k] == want, "%s allgather%s block %d [%d] = %d, expected %d",
                      what, form ? "_c" : "", j, k, rbuf[j * K + k], want);
            }
        }
    }
    /* allgatherv: in-neighbour j's block of K ints at element (in - 1 - j) * K */
    for (int j = 0; j < nb->in; j++)
        rcounts[j] = K, rdispls[j] = (nb->in - 1 - j) * K;
    for (int i = 0; i < nb->in * K; i++)
        rbuf[i] = SENTINEL;
    OK(MPI_Neighbor_allgatherv(sbuf, K, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, comm));
    for (int j = 0; j < nb->in; j++) {
        for (int k = 0; k < K; k++) {
            int want = nb->src[j] == MPI_PROC_NULL ? SENTINEL : nval(nb->src[j], -1, k);

            CHECK(rbuf[rdispls[j] + k] == want, "%s allgatherv block %d [%d] = %d", what, j, k,
                  rbuf[rdispls[j] + k]);
        }
    }
    /* alltoall (and its _c form): block j to out-neighbour j */
    for (int form = 0; form < 2; form++) {
        for (int j = 0; j < nb->out; j++)
            for (int k = 0; k < K; k++)
                sbuf[j * K + k] = nval(me, j, k);
        for (int i = 0; i < nb->in * K; i++)
            rbuf[i] = SENTINEL;
        if (form == 0)
            OK(MPI_Neighbor_alltoall(sbuf, K, MPI_INT, rbuf, K, MPI_INT, comm));
        else
            OK(MPI_Neighbor_alltoall_c(sbuf, K, MPI_INT, rbuf, K, MPI_INT, comm));
        for (int j = 0; j < nb->in; j++) {
            for (int k = 0; k < K; k++) {
                int want = nb->src[j] == MPI_PROC_NULL ? SENTINEL : nval(nb->src[j], nb->via[j], k);

                CHECK(rbuf[j * K + k] == want, "%s alltoall%s block %d [%d] = %d, expected %d",
                      what, form ? "_c" : "", j, k, rbuf[j * K + k], want);
            }
        }
    }
    /* alltoallv: block j has j % 3 + 1 ints... but the receiver must know
     * the count: the count of the block a rank sends through out slot j
     * is (j % 3) + 1, so the receiver expects (via % 3) + 1 */
    for (int form = 0; form < 2; form++) {
        int at = 0;

        for (int j = nb->out - 1; j >= 0; j--) { /* laid out backwards */
            counts[j] = j % 3 + 1, displs[j] = at;
            ccount[j] = counts[j], cdispl[j] = at;
            for (int k = 0; k < counts[j]; k++)
                sbuf[at + k] = nval(me, j, k);
            at += counts[j];
        }
        at = 0;
        for (int j = 0; j < nb->in; j++) {
            rcounts[j] = nb->via[j] % 3 + 1, rdispls[j] = at + 1; /* a gap of one */
            crcount[j] = rcounts[j], crdispl[j] = rdispls[j];
            at += rcounts[j] + 1;
        }
        for (int i = 0; i < at; i++)
            rbuf[i] = SENTINEL;
        if (form == 0)
            OK(MPI_Neighbor_alltoallv(sbuf, counts, displs, MPI_INT, rbuf, rcounts, rdispls,
                                      MPI_INT, comm));
        else
            OK(MPI_Neighbor_alltoallv_c(sbuf, ccount, cdispl, MPI_INT, rbuf, crcount, crdispl,
                                        MPI_INT, comm));
        for (int j = 0; j < nb->in; j++) {
            CHECK(rbuf[rdispls[j] - 1] == SENTINEL, "%s alltoallv gap before block %d", what, j);
            for (int k = 0; k < rcounts[j]; k++) {
                int want = nb->src[j] == MPI_PROC_NULL ? SENTINEL : nval(nb->src[j], nb->via[j], k);

                CHECK(rbuf[rdispls[j] + k] == want, "%s alltoallv%s block %d [%d] = %d", what,
                      form ? "_c" : "", j, k, rbuf[rdispls[j] + k]);
            }
        }
    }
    /* alltoallw: 2 ints to each, sent as MPI_INT x 2, received as one pair
     * or two ints alternately, at byte displacements */
    for (int j = 0; j < nb->out; j++) {
        counts[j] = 2, ccount[j] = 2, stypes[j] = MPI_INT;
        sbytes[j] = (MPI_Aint)(j * 2 * sizeof(int));
        sbuf[2 * j] = nval(me, j, 0), sbuf[2 * j + 1] = nval(me, j, 1);
    }
    for (int j = 0; j < nb->in; j++) {
        rcounts[j] = j % 2 ? 1 : 2, crcount[j] = rcounts[j], rtypes[j] = j % 2 ? pair : MPI_INT;
        rbytes[j] = (MPI_Aint)((nb->in - 1 - j) * 2 * sizeof(int));
    }
    for (int form = 0; form < 2; form++) {
        for (int i = 0; i < 2 * nb->in; i++)
            rbuf[i] = SENTINEL;
        if (form == 0)
            OK(MPI_Neighbor_alltoallw(sbuf, counts, sbytes, stypes, rbuf, rcounts, rbytes, rtypes,
                                      comm));
        else
            OK(MPI_Neighbor_alltoallw_c(sbuf, ccount, sbytes, stypes, rbuf, crcount, rbytes, rtypes,
                                        comm));
        for (int j = 0; j < nb->in; j++) {
            int *got = rbuf + (nb->in - 1 - j) * 2;

            for (int k = 0; k < 2; k++) {
                int want = nb->src[j] == MPI_PROC_NULL ? SENTINEL : nval(nb->src[j], nb->via[j], k);

                CHECK(got[k] == want, "%s alltoallw%s block %d [%d] = %d", what, form ? "_c" : "",
                      j, k, got[k]);
            }
        }
    }
    MPI_Type_free(&pair);
}

static void case_neighbor(void)
{
    nbrs_t nb;
    MPI_Comm comm;

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    /* Cartesian: a periodic ring of every rank (1 or 2 ranks: the same
     * rank both sides), a 2-D grid periodic in one dimension, a 1 x 2 x
     * size/2 grid */
    {
        int d1[1] = {size}, p1[1] = {1};

        OK(MPI_Cart_create(MPI_COMM_WORLD, 1, d1, p1, 0, &comm));
        cart_neighbours(comm, &nb);
        check_neighbor_colls(comm, &nb, "ring");
        MPI_Comm_free(&comm);
    }
    {
        int d2[2] = {0, 0}, p2[2] = {0, 1};

        MPI_Dims_create(size, 2, d2);
        OK(MPI_Cart_create(MPI_COMM_WORLD, 2, d2, p2, 0, &comm));
        cart_neighbours(comm, &nb);
        check_neighbor_colls(comm, &nb, "grid");
        MPI_Comm_free(&comm);
    }
    if (size % 2 == 0) {
        int d3[3] = {1, 2, size / 2}, p3[3] = {1, 1, 0};

        OK(MPI_Cart_create(MPI_COMM_WORLD, 3, d3, p3, 0, &comm));
        cart_neighbours(comm, &nb);
        check_neighbor_colls(comm, &nb, "3-D grid");
        MPI_Comm_free(&comm);
    }
    /* graph: the standard's example (4 ranks and more) or a ring */
    if (size >= 4) {
        OK(MPI_Graph_create(MPI_COMM_WORLD, 4, ex_index, ex_edges, 0, &comm));
        if (comm != MPI_COMM_NULL) {
            nb.in = nb.out = example_outs(rank, nb.src);
            memcpy(nb.dst, nb.src, sizeof(nb.src));
            match_edges(&nb, example_outs);
            check_neighbor_colls(comm, &nb, "graph");
            MPI_Comm_free(&comm);
        }
    } else {
        int idx[3], e[6];

        for (int r = 0; r < size; r++) {
            idx[r] = 2 * (r + 1);
            ring_outs(r, e + 2 * r);
        }
        OK(MPI_Graph_create(MPI_COMM_WORLD, size, idx, e, 0, &comm));
        nb.in = nb.out = ring_outs(rank, nb.src);
        memcpy(nb.dst, nb.src, sizeof(nb.src));
        match_edges(&nb, ring_outs);
        check_neighbor_colls(comm, &nb, "graph ring");
        MPI_Comm_free(&comm);
    }
    /* distributed graph with repeated edges, given by rank 0 */
    {
        int inw[64], outw[64];

        comm = make_dist_graph(1);
        expected_lists(rank, nb.src, inw, &nb.in, nb.dst, outw, &nb.out);
        match_edges(&nb, dist_outs);
        check_neighbor_colls(comm, &nb, "dist graph");
        MPI_Comm_free(&comm);
    }
    /* errors */
    {
        int v[4] = {0}, w[4];

        expect_class(MPI_Neighbor_allgather(v, 1, MPI_INT, w, 1, MPI_INT, MPI_COMM_WORLD),
                     MPI_ERR_TOPOLOGY, "Neighbor_allgather without topology");
        comm = make_dist_graph(0);
        expect_class(MPI_Neighbor_alltoall(v, -1, MPI_INT, w, 1, MPI_INT, comm), MPI_ERR_COUNT,
                     "Neighbor_alltoall count -1");
        expect_class(MPI_Neighbor_alltoall(MPI_IN_PLACE, 1, MPI_INT, w, 1, MPI_INT, comm),
                     MPI_ERR_BUFFER, "Neighbor_alltoall MPI_IN_PLACE");
        expect_class(MPI_Neighbor_alltoall(v, 1, MPI_DATATYPE_NULL, w, 1, MPI_INT, comm),
                     MPI_ERR_TYPE, "Neighbor_alltoall MPI_DATATYPE_NULL");
        expect_class(MPI_Neighbor_alltoallv(v, NULL, NULL, MPI_INT, w, NULL, NULL, MPI_INT, comm),
                     MPI_ERR_ARG, "Neighbor_alltoallv NULL counts");
        MPI_Comm_free(&comm);
    }
}

/* The lowest world rank on this rank's node: the same on a node's ranks. */
static int node_id(void)
{
    MPI_Comm shared;
    int id = rank;

    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    OK(MPI_Allreduce(&rank, &id, 1, MPI_INT, MPI_MIN, shared));
    OK(MPI_Comm_free(&shared));
    return id;
}

/* MPI_Cart_create with reorder on a communicator whose rank order
 * alternates between nodes (the even world ranks, then the odd ones):
 * the grid's ranks come node by node, so a ring crosses between nodes as
 * few times as it can; without reorder it keeps the alternating order. */
static void case_cart_reorder(void)
{
    int me = node_id(), *ids = xmalloc((size_t)size * sizeof(int)), d[1] = {size}, p[1] = {0};
    int nodes = 0, crossings, crank, mapped = -1;
    MPI_Comm mixed, cart;
    nbrs_t nb;

    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, (rank % 2) * size + rank, &mixed));
    OK(MPI_Allgather(&me, 1, MPI_INT, ids, 1, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        nodes += ids[r] == r;
    for (int reorder = 0; reorder < 2; reorder++) {
        OK(MPI_Cart_create(mixed, 1, d, p, reorder, &cart));
        OK(MPI_Comm_rank(cart, &crank));
        OK(MPI_Allgather(&me, 1, MPI_INT, ids, 1, MPI_INT, cart));
        crossings = 0;
        for (int r = 1; r < size; r++)
            crossings += ids[r] != ids[r - 1];
        if (reorder) {
            CHECK(crossings == nodes - 1, "reordered ring of %d nodes crosses %d times", nodes,
                  crossings);
            OK(MPI_Cart_map(mixed, 1, d, p, &mapped));
            CHECK(mapped == crank, "Cart_map %d, Cart_create's rank %d", mapped, crank);
        } else {
            int mrank;

            OK(MPI_Comm_rank(mixed, &mrank));
            CHECK(crank == mrank, "without reorder: rank %d, expected %d", crank, mrank);
        }
        /* the reordered communicator works as any other */
        cart_neighbours(cart, &nb);
        check_neighbor_colls(cart, &nb, reorder ? "reordered ring" : "ring of mixed");
        OK(MPI_Comm_free(&cart));
    }
    /* a 2 x size/2 grid: each node's ranks fill a box of it where the
     * nodes have as many ranks, and never cross more than rows would */
    if (size % 2 == 0) {
        int d2[2] = {2, size / 2}, p2[2] = {0, 0}, slab = 0, sorted[32];

        for (int r = 0; r < size; r++) /* rows: the node ids in order */
            sorted[r] = ids[r];
        for (int i = 1; i < size; i++)
            for (int k = i; k > 0 && sorted[k - 1] > sorted[k]; k--) {
                int t = sorted[k];

                sorted[k] = sorted[k - 1], sorted[k - 1] = t;
            }
        OK(MPI_Cart_create(mixed, 2, d2, p2, 1, &cart));
        OK(MPI_Comm_rank(cart, &crank));
        OK(MPI_Allgather(&me, 1, MPI_INT, ids, 1, MPI_INT, cart));
        crossings = 0;
        for (int r = 0; r < size; r++) {
            int right = r % d2[1] + 1 < d2[1] ? r + 1 : -1,
                down = r + d2[1] < size ? r + d2[1] : -1;

            crossings += (right >= 0 && ids[right] != ids[r]) + (down >= 0 && ids[down] != ids[r]);
            slab += (right >= 0 && sorted[right] != sorted[r]) +
                    (down >= 0 && sorted[down] != sorted[r]);
        }
        CHECK(crossings <= slab, "2-D reordered grid crosses nodes %d times, rows %d", crossings,
              slab);
        if (nodes == 2 && size % 4 == 0 && ids[0] != ids[size - 1])
            CHECK(crossings == 2, "2 x %d grid on 2 nodes crosses %d times, 2 expected", size / 2,
                  crossings);
        OK(MPI_Cart_map(mixed, 2, d2, p2, &mapped));
        CHECK(mapped == crank, "2-D Cart_map %d, Cart_create's rank %d", mapped, crank);
        cart_neighbours(cart, &nb);
        check_neighbor_colls(cart, &nb, "reordered 2-D grid");
        OK(MPI_Comm_free(&cart));
    }
    OK(MPI_Comm_free(&mixed));
    free(ids);
}

/* ---- MPI_Alltoallw -------------------------------------------------------------------------- */

static void case_alltoallw(void)
{
    int n = size, total = n * (4 * n + 1);
    int *sbuf = xmalloc((size_t)total * sizeof(int)), *rbuf = xmalloc((size_t)total * sizeof(int));
    int *sc = xmalloc((size_t)n * sizeof(int)), *sd = xmalloc((size_t)n * sizeof(int));
    int *rc = xmalloc((size_t)n * sizeof(int)), *rd = xmalloc((size_t)n * sizeof(int));
    MPI_Count *csc = xmalloc((size_t)n * sizeof(MPI_Count));
    MPI_Count *crc = xmalloc((size_t)n * sizeof(MPI_Count));
    MPI_Aint *csd = xmalloc((size_t)n * sizeof(MPI_Aint));
    MPI_Aint *crd = xmalloc((size_t)n * sizeof(MPI_Aint));
    MPI_Datatype *st = xmalloc((size_t)n * sizeof(MPI_Datatype));
    MPI_Datatype *rt = xmalloc((size_t)n * sizeof(MPI_Datatype)), pair;
    int at = 0, rtotal = 0;

    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    /* ranks r and j exchange 2 (r + j + 1) ints each way: sent as ints,
     * received as ints, or as r + j + 1 pairs from odd r; the send blocks
     * laid out backwards, the receive blocks with a gap of one int before
     * each, at byte displacements */
    for (int j = n - 1; j >= 0; j--) {
        sc[j] = 2 * (rank + j + 1), st[j] = MPI_INT, sd[j] = at * (int)sizeof(int);
        for (int k = 0; k < sc[j]; k++)
            sbuf[at + k] = nval(rank, j, k);
        at += sc[j];
    }
    for (int r = 0; r < n; r++) {
        rc[r] = r % 2 ? rank + r + 1 : 2 * (rank + r + 1), rt[r] = r % 2 ? pair : MPI_INT;
        rd[r] = (rtotal + 1) * (int)sizeof(int);
        rtotal += 2 * (rank + r + 1) + 1;
    }
    for (int form = 0; form < 3; form++) {
        for (int i = 0; i < rtotal; i++)
            rbuf[i] = SENTINEL;
        for (int j = 0; j < n; j++)
            csc[j] = sc[j], csd[j] = sd[j], crc[j] = rc[j], crd[j] = rd[j];
        if (form == 0) {
            OK(MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD));
        } else if (form == 1) {
            OK(MPI_Alltoallw_c(sbuf, csc, csd, st, rbuf, crc, crd, rt, MPI_COMM_WORLD));
        } else {
            /* in place: the block for rank r is where r's block arrives */
            for (int r = 0; r < n; r++)
                for (int k = 0; k < 2 * (rank + r + 1); k++)
                    rbuf[rd[r] / (int)sizeof(int) + k] = nval(rank, r, k) + 7;
            OK(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, rbuf, rc, rd, rt, MPI_COMM_WORLD));
        }
        for (int r = 0; r < n; r++) {
            const int *got = rbuf + rd[r] / (int)sizeof(int);

            CHECK(got[-1] == SENTINEL, "Alltoallw form %d: the gap before block %d", form, r);
            for (int k = 0; k < 2 * (rank + r + 1); k++) {
                int want = nval(r, rank, k) + (form == 2 ? 7 : 0);

                CHECK(got[k] == want, "Alltoallw form %d: block %d [%d] = %d, expected %d", form, r,
                      k, got[k], want);
            }
        }
    }
    expect_class(MPI_Alltoallw(sbuf, sc, sd, NULL, rbuf, rc, rd, rt, MPI_COMM_WORLD), MPI_ERR_ARG,
                 "Alltoallw NULL sendtypes");
    expect_class(MPI_Alltoallw(sbuf, sc, sd, st, rbuf, NULL, rd, rt, MPI_COMM_WORLD), MPI_ERR_ARG,
                 "Alltoallw NULL recvcounts");
    rt[0] = MPI_DATATYPE_NULL;
    expect_class(MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD), MPI_ERR_TYPE,
                 "Alltoallw MPI_DATATYPE_NULL");
    MPI_Type_free(&pair);
    free(sbuf), free(rbuf), free(sc), free(sd), free(rc), free(rd);
    free(csc), free(crc), free(csd), free(crd), free(st), free(rt);
}

/* ---- main ------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"dims", case_dims},
    {"cart", case_cart},
    {"cart_shift_example", case_cart_shift_example},
    {"cart_more", case_cart_more},
    {"graph", case_graph},
    {"dist_graph_adjacent", case_dist_graph_adjacent},
    {"dist_graph", case_dist_graph},
    {"neighbor", case_neighbor},
    {"cart_reorder", case_cart_reorder},
    {"alltoallw", case_alltoallw},
};

int main(int argc, char **argv)
{
    int status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    unweighted = MPI_UNWEIGHTED;
    weights_empty = MPI_WEIGHTS_EMPTY;
    if (size > 32) {
        printf("topo FAIL rank %d: at most 32 ranks\n", rank);
        MPI_Finalize();
        return 1;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int wanted = argc <= 1;

        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], cases[i].name) == 0;
        if (wanted)
            cases[i].run();
    }
    status = check_summary("topo", MPI_COMM_WORLD, 1 << 21);
    MPI_Finalize();
    return status;
}
