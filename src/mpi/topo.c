/*
 * Process topologies (topo.h; MPI-5.0 chapter 8).
 *
 * A topology is one allocation: the struct, then every array it keeps, so
 * MPI_Comm_dup copies it with one memcpy.  A Cartesian rank is the
 * row-major index of its coordinates (the last dimension varies fastest).
 * The communicator of a new topology takes its ranks in the old
 * communicator's order, except a Cartesian one made with reorder, whose
 * ranks are placed by node, each node's ranks in one box of the grid
 * where they can be (ranks_by_node); the ranks of the old communicator agree on
 * its context first, as MPI_Comm_split does, so the ranks left out
 * (MPI_COMM_NULL) take part in the call too.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/bindings.h"
#include "mpi/engine/channel.h"
#include "mpi/p2p.h"
#include "mpi/topo.h"

/* the collective context of pb_mpi_isend_on/pb_mpi_irecv_on */
#define COLL 1

/* Tags of MPI_Dist_graph_create's exchange of edges on the collective
 * context (src/mpi/coll_p2p.c's are 16-25, coll_neighbor.c's 40 and 64 up). */
enum {
    TAG_EDGE_COUNT = 42,
    TAG_EDGES
};

struct pb_topo {
    int kind;     /* MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH */
    size_t bytes; /* of the whole allocation */
    /* MPI_CART: the grid and this rank's coordinates */
    int ndims;
    int *dims, *periods, *coords;
    /* MPI_GRAPH: the whole graph (index[i]: the edges of nodes 0..i) */
    int nnodes, nedges;
    int *index, *edges;
    /* MPI_DIST_GRAPH: the weights of this rank's edges */
    int weighted;
    int *sourceweights, *destweights;
    /* every kind: this rank's neighbours (topo.h) */
    int indegree, outdegree;
    int *sources, *destinations, *in_tag, *out_tag;
};

/* Copy @n ints from @src to @dst (either may be NULL when @n is 0). */
static void copy_ints(int *dst, const int *src, int n)
{
    if (n > 0)
        memcpy(dst, src, (size_t)n * sizeof(int));
}

/* A topology of @kind with room for its arrays (zeroed), or NULL. */
static pb_topo_t *topo_alloc(int kind, int ndims, int nnodes, int nedges, int indegree,
                             int outdegree)
{
    size_t ints = 3 * (size_t)ndims + (size_t)nnodes + (size_t)nedges + 3 * (size_t)indegree +
                  3 * (size_t)outdegree;
    size_t bytes = sizeof(pb_topo_t) + ints * sizeof(int);
    pb_topo_t *t = calloc(1, bytes);
    int *p;

    if (t == NULL)
        return NULL;
    p = (int *)(t + 1);
    t->kind = kind;
    t->bytes = bytes;
    t->ndims = ndims;
    t->nnodes = nnodes;
    t->nedges = nedges;
    t->indegree = indegree;
    t->outdegree = outdegree;
    t->dims = p, p += ndims;
    t->periods = p, p += ndims;
    t->coords = p, p += ndims;
    t->index = p, p += nnodes;
    t->edges = p, p += nedges;
    t->sources = p, p += indegree;
    t->sourceweights = p, p += indegree;
    t->in_tag = p, p += indegree;
    t->destinations = p, p += outdegree;
    t->destweights = p, p += outdegree;
    t->out_tag = p;
    return t;
}

int pb_mpi_topo_dup(const pb_topo_t *topo, pb_topo_t **copy_p)
{
    pb_topo_t *t;

    *copy_p = NULL;
    if (topo == NULL)
        return MPI_SUCCESS;
    t = topo_alloc(topo->kind, topo->ndims, topo->nnodes, topo->nedges, topo->indegree,
                   topo->outdegree);
    if (t == NULL)
        return MPI_ERR_NO_MEM;
    memcpy(t + 1, topo + 1, topo->bytes - sizeof(*topo));
    t->weighted = topo->weighted;
    *copy_p = t;
    return MPI_SUCCESS;
}

void pb_mpi_topo_free(pb_topo_t *topo)
{
    free(topo);
}

int pb_mpi_topo_neighbors(const pb_comm_t *c, pb_topo_neighbors_t *neighbors_p)
{
    const pb_topo_t *t = c->topo;

    if (t == NULL)
        return MPI_ERR_TOPOLOGY;
    *neighbors_p = (pb_topo_neighbors_t){t->indegree,     t->outdegree, t->sources,
                                         t->destinations, t->in_tag,    t->out_tag};
    return MPI_SUCCESS;
}

/* The topology of @c if it is of @kind, in *@topo_p; else
 * MPI_ERR_TOPOLOGY raised for @func. */
static int topo_of(pb_comm_t *c, int kind, MPI_Comm comm, const char *func, pb_topo_t **topo_p)
{
    static const char *names[] = {"a Cartesian", "a graph", "a distributed graph"};

    *topo_p = c->topo;
    if (c->topo == NULL || c->topo->kind != kind)
        return pb_mpi_raise(comm, MPI_ERR_TOPOLOGY, func, "the communicator has no %s topology",
                            names[kind - MPI_CART]);
    return MPI_SUCCESS;
}

/* ---- making the communicator ------------------------------------------------------- */

/* The new communicator of a topology, of the @members world ranks @world
 * in its rank order (some or all of @c's), with @topo (built for this
 * rank, taken over; NULL on the ranks left out), in *@newcomm_p:
 * MPI_COMM_NULL on those.  Collective over @c. */
static int comm_with_topo(pb_comm_t *c, MPI_Comm comm, const char *func, int members,
                          const int *world, pb_topo_t *topo, MPI_Comm *newcomm_p)
{
    uint32_t context;
    pb_comm_t *n;
    int rc = pb_mpi_agree_context(c, &context);

    if (rc != MPI_SUCCESS) {
        pb_mpi_topo_free(topo);
        return pb_mpi_raise(comm, rc, func, "the ranks could not agree on a context");
    }
    if (topo == NULL) {
        *newcomm_p = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    n = pb_mpi_comm_make(members, world, context, c->errhandler);
    if (n == NULL) {
        pb_mpi_topo_free(topo);
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    }
    n->topo = topo;
    n->session = c->session;
    *newcomm_p = n->handle;
    return MPI_SUCCESS;
}

/* The world ranks of ranks 0 .. @members - 1 of @c, or NULL (no memory). */
static int *first_ranks(const pb_comm_t *c, int members)
{
    int *world = malloc((size_t)(members > 0 ? members : 1) * sizeof(int));

    if (world != NULL)
        copy_ints(world, c->world, members);
    return world;
}

/* ---- Cartesian ------------------------------------------------------------------------ */

/* Check a grid of @ndims dimensions @dims and @periods for a communicator
 * of @size ranks; its number of ranks in *@cells_p. */
static int check_grid(MPI_Comm comm, const char *func, int ndims, const int dims[],
                      const int periods[], int size, int *cells_p)
{
    long long cells = 1;

    if (ndims < 0)
        return pb_mpi_raise(comm, MPI_ERR_DIMS, func, "ndims %d is negative", ndims);
    if (ndims > 0 && (dims == NULL || periods == NULL))
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "%s is NULL",
                            dims == NULL ? "dims" : "periods");
    for (int i = 0; i < ndims; i++) {
        if (dims[i] <= 0)
            return pb_mpi_raise(comm, MPI_ERR_DIMS, func, "dims[%d], %d, is not positive", i,
                                dims[i]);
        cells *= dims[i];
        if (cells > size)
            return pb_mpi_raise(comm, MPI_ERR_TOPOLOGY, func,
                                "the grid has more cells than the communicator's %d ranks", size);
    }
    *cells_p = (int)cells;
    return MPI_SUCCESS;
}

/* The coordinates of Cartesian rank @rank of @t (row-major). */
static void cart_coords_of(const pb_topo_t *t, int rank, int *coords)
{
    for (int i = t->ndims - 1; i >= 0; i--) {
        coords[i] = rank % t->dims[i];
        rank /= t->dims[i];
    }
}

/* The rank @disp steps from this rank along @dir, or MPI_PROC_NULL off a
 * non-periodic edge. */
static int cart_step(const pb_topo_t *t, int dir, long long disp)
{
    long long at = t->coords[dir] + disp, n = t->dims[dir];
    int rank = 0;

    if (t->periods[dir])
        at = ((at % n) + n) % n;
    else if (at < 0 || at >= n)
        return MPI_PROC_NULL;
    for (int i = 0; i < t->ndims; i++)
        rank = rank * t->dims[i] + (i == dir ? (int)at : t->coords[i]);
    return rank;
}

/* A Cartesian topology of @ndims @dims and @periods for Cartesian rank
 * @rank, with its neighbours; NULL when out of memory. */
static pb_topo_t *cart_new(int ndims, const int dims[], const int periods[], int rank)
{
    pb_topo_t *t = topo_alloc(MPI_CART, ndims, 0, 0, 2 * ndims, 2 * ndims);

    if (t == NULL)
        return NULL;
    for (int i = 0; i < ndims; i++) {
        t->dims[i] = dims[i];
        t->periods[i] = periods[i] != 0;
    }
    cart_coords_of(t, rank, t->coords);
    for (int d = 0; d < ndims; d++) {
        for (int side = 0; side < 2; side++) {
            int j = 2 * d + side;

            t->sources[j] = t->destinations[j] = cart_step(t, d, side ? 1 : -1);
            t->out_tag[j] = j;    /* the direction it travels ... */
            t->in_tag[j] = j ^ 1; /* ... and from -1 it travels toward +1 */
        }
    }
    return t;
}

typedef struct {
    int node, rank;
} node_rank_t;

static int node_rank_order(const void *a, const void *b)
{
    const node_rank_t *x = a, *y = b;

    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The search for the box a node's @per ranks fill in the grid @dims:
 * each side divides its dimension, and the box whose faces cut the fewest
 * grid edges (per box, @per / side for each dimension it does not span)
 * wins. */
typedef struct {
    int ndims, per;
    const int *dims;
    int *cur, *best;
    long long best_cut; /* -1: none found yet */
} box_search_t;

/* Fill cur[depth ..] with sides whose product is @left. */
static void box_search(box_search_t *s, int depth, int left)
{
    if (depth == s->ndims) {
        long long cut = 0;

        if (left != 1)
            return;
        for (int i = 0; i < s->ndims; i++)
            cut += s->cur[i] < s->dims[i] ? s->per / s->cur[i] : 0;
        if (s->best_cut < 0 || cut < s->best_cut) {
            s->best_cut = cut;
            copy_ints(s->best, s->cur, s->ndims);
        }
        return;
    }
    for (int side = 1; side <= s->dims[depth] && side <= left; side++) {
        if (s->dims[depth] % side == 0 && left % side == 0) {
            s->cur[depth] = side;
            box_search(s, depth + 1, left / side);
        }
    }
}

/* Where grid cell @q of @dims goes when boxes of sides @box fill the grid
 * in row-major order, each box's cells in row-major order: its index in
 * that filling. */
static int box_place(int ndims, const int *dims, const int *box, int q)
{
    int boxes = 0, inner = 0, volume = 1, below = 1;

    for (int i = 0; i < ndims; i++) {
        volume *= box[i];
        below *= dims[i];
    }
    for (int i = 0; i < ndims; i++) {
        int x;

        below /= dims[i]; /* the cells of one step in dimension i */
        x = q / below;
        q %= below;
        boxes = boxes * (dims[i] / box[i]) + x / box[i];
        inner = inner * box[i] + x % box[i];
    }
    return boxes * volume + inner;
}

/* The number of ranks of each node in @all (@n, sorted by node) when
 * every node has as many; else 0. */
static int ranks_per_node(const node_rank_t *all, int n)
{
    int per = 0;

    while (per < n && all[per].node == all[0].node)
        per++;
    if (per == 0 || n % per != 0)
        return 0;
    for (int i = 0; i < n; i += per) {
        if (all[i + per - 1].node != all[i].node ||
            (i + per < n && all[i + per].node == all[i].node))
            return 0;
    }
    return per;
}

/* The world ranks of @c in the order of a grid @dims reordered so that a
 * node's ranks are near each other: sorted by node, then by rank (every
 * rank computes the same from the job's map), the first ones making the
 * grid; and when the grid takes every rank and each node has the same
 * number, each node's ranks fill one box of the grid (the one that cuts
 * the fewest edges between nodes).  This rank's place in *@me_p.  NULL
 * when out of memory. */
static int *ranks_by_node(const pb_comm_t *c, int ndims, const int *dims, int cells, int *me_p)
{
    node_rank_t *all = malloc((size_t)c->size * sizeof(*all));
    int *world = malloc((size_t)c->size * sizeof(int));
    int *box = malloc((size_t)(2 * ndims + 1) * sizeof(int)), per;

    if (all == NULL || world == NULL || box == NULL) {
        free(all);
        free(world);
        free(box);
        return NULL;
    }
    for (int r = 0; r < c->size; r++) {
        int w = c->world[r];

        all[r] = (node_rank_t){pb_eng_channel.node_of != NULL ? pb_eng_channel.node_of[w] : 0, r};
    }
    qsort(all, (size_t)c->size, sizeof(*all), node_rank_order);
    per = ranks_per_node(all, c->size);
    if (cells == c->size && per > 1 && per < c->size) {
        box_search_t s = {ndims, per, dims, box, box + ndims, -1};

        box_search(&s, 0, per);
        if (s.best_cut >= 0) {
            node_rank_t *placed = malloc((size_t)c->size * sizeof(*placed));

            if (placed == NULL) {
                free(all);
                free(world);
                free(box);
                return NULL;
            }
            for (int q = 0; q < cells; q++)
                placed[q] = all[box_place(ndims, dims, s.best, q)];
            free(all);
            all = placed;
        }
    }
    for (int i = 0; i < c->size; i++) {
        world[i] = c->world[all[i].rank];
        if (all[i].rank == c->rank)
            *me_p = i;
    }
    free(all);
    free(box);
    return world;
}

int pb_mpi_cart_create_impl(const char *func, MPI_Comm comm_old, int ndims, const int dims[],
                            const int periods[], int reorder, MPI_Comm *comm_cart, pb_comm_t *c)
{
    pb_topo_t *t = NULL;
    int cells, me = c->rank, *world;
    int rc = check_grid(comm_old, func, ndims, dims, periods, c->size, &cells);

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_comm_check_intra(comm_old, func, c);
    if (rc != MPI_SUCCESS)
        return rc;
    world = reorder ? ranks_by_node(c, ndims, dims, cells, &me) : first_ranks(c, cells);
    if (world != NULL && me < cells)
        t = cart_new(ndims, dims, periods, me);
    if (world == NULL || (me < cells && t == NULL)) {
        free(world);
        pb_mpi_topo_free(t);
        return pb_mpi_raise(comm_old, MPI_ERR_NO_MEM, func, "out of memory");
    }
    rc = comm_with_topo(c, comm_old, func, cells, world, t, comm_cart);
    free(world);
    return rc;
}

int pb_mpi_cart_map_impl(const char *func, MPI_Comm comm, int ndims, const int dims[],
                         const int periods[], int *newrank, pb_comm_t *c)
{
    int cells, me = c->rank, *world;
    int rc = check_grid(comm, func, ndims, dims, periods, c->size, &cells);

    if (rc != MPI_SUCCESS)
        return rc;
    /* where MPI_Cart_create with reorder puts this rank */
    world = ranks_by_node(c, ndims, dims, cells, &me);
    if (world == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    free(world);
    *newrank = me < cells ? me : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int pb_mpi_cartdim_get_impl(const char *func, MPI_Comm comm, int *ndims, pb_comm_t *c)
{
    pb_topo_t *t;
    int rc = topo_of(c, MPI_CART, comm, func, &t);

    if (rc == MPI_SUCCESS)
        *ndims = t->ndims;
    return rc;
}

/* @maxdims of @what for a topology of @ndims: MPI_ERR_ARG when too few or
 * NULL. */
static int check_room(MPI_Comm comm, const char *func, const char *what, const void *array, int max,
                      int needed)
{
    if (max < needed)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "room for %d %s, fewer than the %d needed",
                            max, what, needed);
    if (needed > 0 && array == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the array of %s is NULL", what);
    return MPI_SUCCESS;
}

int pb_mpi_cart_get_impl(const char *func, MPI_Comm comm, int maxdims, int dims[], int periods[],
                         int coords[], pb_comm_t *c)
{
    pb_topo_t *t;
    int rc = topo_of(c, MPI_CART, comm, func, &t);

    if (rc == MPI_SUCCESS)
        rc = check_room(comm, func, "dims", dims, maxdims, t->ndims);
    if (rc == MPI_SUCCESS)
        rc = check_room(comm, func, "periods", periods, maxdims, t->ndims);
    if (rc == MPI_SUCCESS)
        rc = check_room(comm, func, "coords", coords, maxdims, t->ndims);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < t->ndims; i++) {
        dims[i] = t->dims[i];
        periods[i] = t->periods[i];
        coords[i] = t->coords[i];
    }
    return MPI_SUCCESS;
}

int pb_mpi_cart_rank_impl(const char *func, MPI_Comm comm, const int coords[], int *rank,
                          pb_comm_t *c)
{
    pb_topo_t *t;
    int rc = topo_of(c, MPI_CART, comm, func, &t), at = 0;

    if (rc == MPI_SUCCESS)
        rc = check_room(comm, func, "coords", coords, t->ndims, t->ndims);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < t->ndims; i++) {
        int n = t->dims[i], x = t->periods[i] ? ((coords[i] % n) + n) % n : coords[i];

        if (x < 0 || x >= n)
            return pb_mpi_raise(comm, MPI_ERR_ARG, func,
                                "coords[%d], %d, is off the grid (0..%d, not periodic)", i,
                                coords[i], n - 1);
        at = at * n + x;
    }
    *rank = at;
    return MPI_SUCCESS;
}

int pb_mpi_cart_coords_impl(const char *func, MPI_Comm comm, int rank, int maxdims, int coords[],
                            pb_comm_t *c)
{
    pb_topo_t *t;
    int rc = topo_of(c, MPI_CART, comm, func, &t);

    if (rc == MPI_SUCCESS && (rank < 0 || rank >= c->size))
        rc = pb_mpi_raise(comm, MPI_ERR_RANK, func, "rank %d is not in 0..%d", rank, c->size - 1);
    if (rc == MPI_SUCCESS)
        rc = check_room(comm, func, "coords", coords, maxdims, t->ndims);
    if (rc == MPI_SUCCESS)
        cart_coords_of(t, rank, coords);
    return rc;
}

int pb_mpi_cart_shift_impl(const char *func, MPI_Comm comm, int direction, int disp,
                           int *rank_source, int *rank_dest, pb_comm_t *c)
{
    pb_topo_t *t;
    int rc = topo_of(c, MPI_CART, comm, func, &t);

    if (rc == MPI_SUCCESS && (direction < 0 || direction >= t->ndims))
        rc = pb_mpi_raise(comm, MPI_ERR_DIMS, func,
                          "direction %d is not a dimension of the grid (it has %d)", direction,
                          t->ndims);
    if (rc != MPI_SUCCESS)
        return rc;
    *rank_source = cart_step(t, direction, -(long long)disp);
    *rank_dest = cart_step(t, direction, disp);
    return MPI_SUCCESS;
}

int pb_mpi_cart_sub_impl(const char *func, MPI_Comm comm, const int remain_dims[],
                         MPI_Comm *newcomm, pb_comm_t *c)
{
    pb_topo_t *t, *sub = NULL;
    int rc = topo_of(c, MPI_CART, comm, func, &t), kept = 0, members = 0, me = 0, cells = c->size;
    int *dims, *periods, *world, *coords;

    if (rc == MPI_SUCCESS && t->ndims > 0 && remain_dims == NULL)
        rc = pb_mpi_raise(comm, MPI_ERR_ARG, func, "remain_dims is NULL");
    if (rc != MPI_SUCCESS)
        return rc;
    dims = malloc(3 * (size_t)(t->ndims + 1) * sizeof(int));
    world = malloc((size_t)cells * sizeof(int));
    if (dims == NULL || world == NULL) {
        free(dims);
        free(world);
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    }
    periods = dims + t->ndims + 1;
    coords = periods + t->ndims + 1;
    for (int i = 0; i < t->ndims; i++) {
        if (remain_dims[i]) {
            dims[kept] = t->dims[i];
            periods[kept++] = t->periods[i];
        }
    }
    /* this rank's subgrid: the ranks whose dropped coordinates are its,
     * in Cartesian order, which is the subgrid's row-major order */
    for (int r = 0; r < cells; r++) {
        int same = 1;

        cart_coords_of(t, r, coords);
        for (int i = 0; i < t->ndims; i++)
            same &= remain_dims[i] || coords[i] == t->coords[i];
        if (same) {
            if (r == c->rank)
                me = members;
            world[members++] = c->world[r];
        }
    }
    sub = cart_new(kept, dims, periods, me);
    free(dims);
    if (sub == NULL) {
        free(world);
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    }
    rc = comm_with_topo(c, comm, func, members, world, sub, newcomm);
    free(world);
    return rc;
}

/* ---- MPI_Dims_create ------------------------------------------------------------------ */

/* The search for the most balanced factorization: @k non-increasing
 * factors of a number whose divisors are @divs (ascending), the one
 * whose largest and smallest factors differ least. */
typedef struct {
    int k, ndivs;
    const int *divs;
    int *cur, *best;
    int best_spread; /* -1: none found yet */
} dims_search_t;

/* Fill cur[depth ..] with factors of @n, each at most @max. */
static void dims_search(dims_search_t *s, int depth, int n, int max)
{
    int left = s->k - depth;

    if (left == 0) {
        int spread = s->k > 0 ? s->cur[0] - s->cur[s->k - 1] : 0;

        if (n == 1 && (s->best_spread < 0 || spread < s->best_spread)) {
            s->best_spread = spread;
            copy_ints(s->best, s->cur, s->k);
        }
        return;
    }
    for (int i = s->ndivs - 1; i >= 0; i--) {
        int f = s->divs[i];
        long long reach = 1;

        if (f > max || f > n || n % f != 0)
            continue;
        /* the factors after this one are at most f: f^left must reach n,
         * and the spread only grows as f falls */
        for (int j = 0; j < left && reach < n; j++)
            reach *= f;
        if (reach < n)
            break;
        if (depth > 0 && s->best_spread >= 0 && s->cur[0] - f >= s->best_spread)
            break;
        s->cur[depth] = f;
        dims_search(s, depth + 1, n / f, f);
    }
}

/* Fill the zero entries of @dims[@ndims] so that their product with the
 * others is @nnodes, as balanced as possible and in non-increasing order
 * (MPI-5.0 section 8.5.2: 6 ranks in (0,0) give (3,2), 7 give (7,1), 6 in
 * (0,3,0) give (2,3,1)).  @return MPI_SUCCESS; MPI_ERR_ARG (nnodes not
 * positive, dims NULL); MPI_ERR_DIMS (ndims or an entry negative, or
 * nnodes not a multiple of the product of the nonzero entries). */
PB_EXPORT int PMPI_Dims_create(int nnodes, int ndims, int dims[])
{
    PB_MPI_THREAD_GUARD;
    static const char func[] = "MPI_Dims_create";
    dims_search_t s = {0, 0, NULL, NULL, NULL, -1};
    long long fixed = 1;
    int rest, *divs;

    if (nnodes <= 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "nnodes %d is not positive", nnodes);
    if (ndims < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_DIMS, func, "ndims %d is negative", ndims);
    if (ndims > 0 && dims == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "dims is NULL");
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_DIMS, func, "dims[%d], %d, is negative", i,
                                dims[i]);
        if (dims[i] > 0 && fixed <= nnodes)
            fixed *= dims[i];
        s.k += dims[i] == 0;
    }
    if (nnodes % fixed != 0 || (s.k == 0 && fixed != nnodes))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_DIMS, func,
                            "the nonzero dims multiply to %s%lld, which %s %d",
                            fixed > nnodes ? "more than " : "", fixed,
                            s.k == 0 ? "is not nnodes," : "does not divide nnodes,", nnodes);
    rest = nnodes / (int)fixed;
    /* room for the divisors of rest (an int has at most 1536), cur and best */
    divs = malloc((size_t)(1536 + 2 * (s.k + 1)) * sizeof(int));
    if (divs == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
    s.cur = divs + 1536;
    s.best = s.cur + s.k + 1;
    /* the divisors of rest, ascending */
    for (int d = 1; (long long)d * d <= rest; d++) {
        if (rest % d == 0)
            divs[s.ndivs++] = d;
    }
    for (int i = s.ndivs - 1; i >= 0; i--) {
        if (divs[i] != rest / divs[i])
            divs[s.ndivs++] = rest / divs[i];
    }
    s.divs = divs;
    dims_search(&s, 0, rest, rest);
    for (int i = 0, j = 0; i < ndims; i++) {
        if (dims[i] == 0)
            dims[i] = s.best[j++];
    }
    free(divs);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Dims_create, PMPI_Dims_create);

/* ---- graphs ----------------------------------------------------------------------------- */

/* Check the graph @nnodes, @index, @edges for a communicator of @size
 * ranks. */
static int check_graph(MPI_Comm comm, const char *func, int nnodes, const int index[],
                       const int edges[], int size)
{
    if (nnodes < 0)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "nnodes %d is negative", nnodes);
    if (nnodes > size)
        return pb_mpi_raise(comm, MPI_ERR_TOPOLOGY, func,
                            "the graph has more nodes (%d) than the communicator has ranks (%d)",
                            nnodes, size);
    if (nnodes > 0 && index == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "index is NULL");
    for (int i = 0; i < nnodes; i++) {
        if (index[i] < (i > 0 ? index[i - 1] : 0))
            return pb_mpi_raise(comm, MPI_ERR_ARG, func,
                                "index[%d], %d, is below the index before it", i, index[i]);
    }
    if (nnodes > 0 && index[nnodes - 1] > 0 && edges == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "edges is NULL");
    for (int k = 0; nnodes > 0 && k < index[nnodes - 1]; k++) {
        if (edges[k] < 0 || edges[k] >= nnodes)
            return pb_mpi_raise(comm, MPI_ERR_TOPOLOGY, func,
                                "edges[%d], %d, is not a node of the graph (0..%d)", k, edges[k],
                                nnodes - 1);
    }
    return MPI_SUCCESS;
}

/* The edges of node @rank of graph @t: *@first, and their number. */
static int graph_edges(const pb_topo_t *t, int rank, int *first_p)
{
    *first_p = rank > 0 ? t->index[rank - 1] : 0;
    return t->index[rank] - *first_p;
}

int pb_mpi_graph_create_impl(const char *func, MPI_Comm comm_old, int nnodes, const int index[],
                             const int edges[], int reorder, MPI_Comm *comm_graph, pb_comm_t *c)
{
    pb_topo_t *t = NULL;
    int *world, rc = check_graph(comm_old, func, nnodes, index, edges, c->size);

    (void)reorder;
    if (rc == MPI_SUCCESS)
        rc = pb_mpi_comm_check_intra(comm_old, func, c);
    if (rc != MPI_SUCCESS)
        return rc;
    world = first_ranks(c, nnodes);
    if (world != NULL && c->rank < nnodes) {
        int nedges = index[nnodes - 1], first = c->rank > 0 ? index[c->rank - 1] : 0;
        int degree = index[c->rank] - first;

        t = topo_alloc(MPI_GRAPH, 0, nnodes, nedges, degree, degree);
        if (t != NULL) {
            copy_ints(t->index, index, nnodes);
            copy_ints(t->edges, edges, nedges);
            copy_ints(t->sources, t->edges + first, degree);
            copy_ints(t->destinations, t->edges + first, degree);
        }
    }
    if (world == NULL || (c->rank < nnodes && t == NULL)) {
        free(world);
        pb_mpi_topo_free(t);
        return pb_mpi_raise(comm_old, MPI_ERR_NO_MEM, func, "out of memory");
    }
    rc = comm_with_topo(c, comm_old, func, nnodes, world, t, comm_graph);
    free(world);
    return rc;
}

int pb_mpi_graph_map_impl(const char *func, MPI_Comm comm, int nnodes, const int index[],
                          const int edges[], int *newrank, pb_comm_t *c)
{
    int rc = check_graph(comm, func, nnodes, index, edges, c->size);

    if (rc == MPI_SUCCESS)
        *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
    return rc;
}

int pb_mpi_graphdims_get_impl(const char *func, MPI_Comm comm, int *nnodes, int *nedges,
                              pb_comm_t *c)
{
    pb_topo_t *t;
    int rc = topo_of(c, MPI_GRAPH, comm, func, &t);

    if (rc == MPI_SUCCESS) {
        *nnodes = t->nnodes;
        *nedges = t->nedges;
    }
    return rc;
}

int pb_mpi_graph_get_impl(const char *func, MPI_Comm comm, int maxindex, int maxedges, int index[],
                          int edges[], pb_comm_t *c)
{
    pb_topo_t *t;
    int rc = topo_of(c, MPI_GRAPH, comm, func, &t);

    if (rc == MPI_SUCCESS && (maxindex < 0 || maxedges < 0))
        rc = pb_mpi_raise(comm, MPI_ERR_ARG, func, "%s is negative",
                          maxindex < 0 ? "maxindex" : "maxedges");
    if (rc == MPI_SUCCESS && ((index == NULL && maxindex > 0 && t->nnodes > 0) ||
                              (edges == NULL && maxedges > 0 && t->nedges > 0)))
        rc = pb_mpi_raise(comm, MPI_ERR_ARG, func, "%s is NULL", index == NULL ? "index" : "edges");
    if (rc != MPI_SUCCESS)
        return rc;
    /* as much of each array as fits, as the standard allows */
    copy_ints(index, t->index, maxindex < t->nnodes ? maxindex : t->nnodes);
    copy_ints(edges, t->edges, maxedges < t->nedges ? maxedges : t->nedges);
    return MPI_SUCCESS;
}

/* The graph of @c for a question about its node @rank. */
static int graph_node(pb_comm_t *c, MPI_Comm comm, const char *func, int rank, pb_topo_t **t_p)
{
    int rc = topo_of(c, MPI_GRAPH, comm, func, t_p);

    if (rc == MPI_SUCCESS && (rank < 0 || rank >= (*t_p)->nnodes))
        rc = pb_mpi_raise(comm, MPI_ERR_RANK, func, "rank %d is not a node of the graph (0..%d)",
                          rank, (*t_p)->nnodes - 1);
    return rc;
}

int pb_mpi_graph_neighbors_count_impl(const char *func, MPI_Comm comm, int rank, int *nneighbors,
                                      pb_comm_t *c)
{
    pb_topo_t *t;
    int first, rc = graph_node(c, comm, func, rank, &t);

    if (rc == MPI_SUCCESS)
        *nneighbors = graph_edges(t, rank, &first);
    return rc;
}

int pb_mpi_graph_neighbors_impl(const char *func, MPI_Comm comm, int rank, int maxneighbors,
                                int neighbors[], pb_comm_t *c)
{
    pb_topo_t *t;
    int first, degree, rc = graph_node(c, comm, func, rank, &t);

    if (rc != MPI_SUCCESS)
        return rc;
    degree = graph_edges(t, rank, &first);
    if (maxneighbors < 0)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "maxneighbors %d is negative", maxneighbors);
    if (maxneighbors > 0 && degree > 0 && neighbors == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "neighbors is NULL");
    copy_ints(neighbors, t->edges + first, maxneighbors < degree ? maxneighbors : degree);
    return MPI_SUCCESS;
}

/* ---- distributed graphs ------------------------------------------------------------------ */

/* Check @n ranks @ranks of a communicator of @size and their @weights
 * (MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY or @n of them) for @func. */
static int check_edges(MPI_Comm comm, const char *func, const char *what, int n, const int ranks[],
                       const int weights[], int size)
{
    if (n < 0)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the number of %s, %d, is negative", what, n);
    if (n > 0 && ranks == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the array of %s is NULL", what);
    if (n > 0 && (weights == NULL || weights == MPI_WEIGHTS_EMPTY))
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the weights of the %s are %s", what,
                            weights == NULL ? "NULL" : "MPI_WEIGHTS_EMPTY");
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= size)
            return pb_mpi_raise(comm, MPI_ERR_RANK, func, "%s[%d], %d, is not in 0..%d", what, i,
                                ranks[i], size - 1);
        if (weights != MPI_UNWEIGHTED && weights[i] < 0)
            return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the weight of %s[%d], %d, is negative",
                                what, i, weights[i]);
    }
    return MPI_SUCCESS;
}

/* A distributed graph topology of @indegree @sources and @outdegree
 * @destinations, weighted or not; NULL when out of memory. */
static pb_topo_t *dist_graph_new(int indegree, int outdegree, int weighted)
{
    pb_topo_t *t = topo_alloc(MPI_DIST_GRAPH, 0, 0, 0, indegree, outdegree);

    if (t != NULL)
        t->weighted = weighted;
    return t;
}

int pb_mpi_dist_graph_create_adjacent_impl(const char *func, MPI_Comm comm_old, int indegree,
                                           const int sources[], const int sourceweights[],
                                           int outdegree, const int destinations[],
                                           const int destweights[], MPI_Info info, int reorder,
                                           MPI_Comm *comm_dist_graph, pb_comm_t *c)
{
    int weighted = sourceweights != MPI_UNWEIGHTED, *world;
    pb_topo_t *t;
    int rc = check_edges(comm_old, func, "sources", indegree, sources, sourceweights, c->size);

    if (pb_mpi_comm_is_inter(c))
        return pb_mpi_comm_check_intra(comm_old, func, c);
    (void)info; /* no hints are understood */
    (void)reorder;
    if (rc == MPI_SUCCESS)
        rc = check_edges(comm_old, func, "destinations", outdegree, destinations, destweights,
                         c->size);
    if (rc == MPI_SUCCESS && (destweights == MPI_UNWEIGHTED) != !weighted)
        rc = pb_mpi_raise(comm_old, MPI_ERR_ARG, func,
                          "only one of sourceweights and destweights is MPI_UNWEIGHTED");
    if (rc != MPI_SUCCESS)
        return rc;
    t = dist_graph_new(indegree, outdegree, weighted);
    world = first_ranks(c, c->size);
    if (t == NULL || world == NULL) {
        pb_mpi_topo_free(t);
        free(world);
        return pb_mpi_raise(comm_old, MPI_ERR_NO_MEM, func, "out of memory");
    }
    copy_ints(t->sources, sources, indegree);
    copy_ints(t->destinations, destinations, outdegree);
    if (weighted) {
        copy_ints(t->sourceweights, sourceweights, indegree);
        copy_ints(t->destweights, destweights, outdegree);
    }
    rc = comm_with_topo(c, comm_old, func, c->size, world, t, comm_dist_graph);
    free(world);
    return rc;
}

/* An edge of MPI_Dist_graph_create, as its two ends receive it. */
typedef struct {
    int source, destination, weight;
} edge_t;

/* Send every rank of @c the @n @edges that start or end at it, and
 * receive theirs: the edges of this rank, each once, in the order of the
 * ranks that gave them and of their arguments (so the edges between two
 * ranks are in the same order at both ends), in *@mine_p (to free),
 * their number in *@count_p. */
static int exchange_edges(pb_comm_t *c, const edge_t *edges, int n, edge_t **mine_p, int *count_p)
{
    int size = c->size, rc, total = 0, nreqs = 0;
    int *out_count = calloc((size_t)size * 3, sizeof(int)), *in_count, *at;
    edge_t *out = malloc((size_t)(2 * n + 1) * sizeof(edge_t)), *in = NULL;
    MPI_Request *reqs = malloc((size_t)size * 2 * sizeof(MPI_Request));

    *mine_p = NULL;
    if (out_count == NULL || out == NULL || reqs == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    in_count = out_count + size;
    at = in_count + size;
    for (int i = 0; i < n; i++) {
        out_count[edges[i].source]++;
        if (edges[i].destination != edges[i].source)
            out_count[edges[i].destination]++;
    }
    for (int r = 0, sum = 0; r < size; r++) {
        at[r] = sum;
        sum += out_count[r];
    }
    for (int i = 0; i < n; i++) {
        out[at[edges[i].source]++] = edges[i];
        if (edges[i].destination != edges[i].source)
            out[at[edges[i].destination]++] = edges[i];
    }
    for (int r = 0; r < size; r++)
        at[r] -= out_count[r];
    /* how many from each rank, then the edges */
    for (int r = 0; r < size && nreqs == 2 * r; r++) {
        if (pb_mpi_irecv_on(&in_count[r], 1, MPI_INT, r, TAG_EDGE_COUNT, c, COLL, &reqs[nreqs]) ==
            MPI_SUCCESS)
            nreqs++;
        if (pb_mpi_isend_on(&out_count[r], 1, MPI_INT, r, TAG_EDGE_COUNT, c, COLL, &reqs[nreqs]) ==
            MPI_SUCCESS)
            nreqs++;
    }
    rc = pb_mpi_wait_requests(nreqs, reqs);
    if (rc == MPI_SUCCESS && nreqs != 2 * size)
        rc = MPI_ERR_OTHER;
    if (rc != MPI_SUCCESS)
        goto out;
    for (int r = 0; r < size; r++)
        total += in_count[r];
    in = malloc((size_t)(total + 1) * sizeof(edge_t));
    if (in == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    nreqs = 0;
    for (int r = 0, sum = 0; r < size && nreqs == 2 * r; r++) {
        if (pb_mpi_irecv_on(in + sum, 3 * (MPI_Count)in_count[r], MPI_INT, r, TAG_EDGES, c, COLL,
                            &reqs[nreqs]) == MPI_SUCCESS)
            nreqs++;
        if (pb_mpi_isend_on(out + at[r], 3 * (MPI_Count)out_count[r], MPI_INT, r, TAG_EDGES, c,
                            COLL, &reqs[nreqs]) == MPI_SUCCESS)
            nreqs++;
        sum += in_count[r];
    }
    rc = pb_mpi_wait_requests(nreqs, reqs);
    if (rc == MPI_SUCCESS && nreqs != 2 * size)
        rc = MPI_ERR_OTHER;
    if (rc == MPI_SUCCESS) {
        *mine_p = in;
        *count_p = total;
        in = NULL;
    }
out:
    free(in);
    free(out_count);
    free(out);
    free(reqs);
    return rc;
}

int pb_mpi_dist_graph_create_impl(const char *func, MPI_Comm comm_old, int n, const int sources[],
                                  const int degrees[], const int destinations[],
                                  const int weights[], MPI_Info info, int reorder,
                                  MPI_Comm *comm_dist_graph, pb_comm_t *c)
{
    int weighted = weights != MPI_UNWEIGHTED, nedges = 0, count = 0, in = 0, out = 0, *world;
    edge_t *edges = NULL, *mine = NULL;
    pb_topo_t *t = NULL;
    int rc;

    if (pb_mpi_comm_is_inter(c))
        return pb_mpi_comm_check_intra(comm_old, func, c);
    (void)info; /* no hints are understood */
    (void)reorder;
    if (n < 0)
        return pb_mpi_raise(comm_old, MPI_ERR_ARG, func, "n %d is negative", n);
    if (n > 0 && (sources == NULL || degrees == NULL))
        return pb_mpi_raise(comm_old, MPI_ERR_ARG, func, "%s is NULL",
                            sources == NULL ? "sources" : "degrees");
    for (int i = 0; i < n; i++) {
        if (sources[i] < 0 || sources[i] >= c->size)
            return pb_mpi_raise(comm_old, MPI_ERR_RANK, func, "sources[%d], %d, is not in 0..%d", i,
                                sources[i], c->size - 1);
        if (degrees[i] < 0 || degrees[i] > INT_MAX - nedges)
            return pb_mpi_raise(comm_old, MPI_ERR_ARG, func, "degrees[%d], %d, is %s", i,
                                degrees[i], degrees[i] < 0 ? "negative" : "too large");
        nedges += degrees[i];
    }
    rc = check_edges(comm_old, func, "destinations", nedges, destinations, weights, c->size);
    if (rc != MPI_SUCCESS)
        return rc;
    edges = malloc((size_t)(nedges + 1) * sizeof(edge_t));
    if (edges == NULL)
        return pb_mpi_raise(comm_old, MPI_ERR_NO_MEM, func, "out of memory");
    for (int i = 0, k = 0; i < n; i++) {
        for (int j = 0; j < degrees[i]; j++, k++)
            edges[k] = (edge_t){sources[i], destinations[k], weighted ? weights[k] : 1};
    }
    rc = exchange_edges(c, edges, nedges, &mine, &count);
    free(edges);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm_old, rc, func, "exchanging the edges failed");
    for (int i = 0; i < count; i++) {
        in += mine[i].destination == c->rank;
        out += mine[i].source == c->rank;
    }
    t = dist_graph_new(in, out, weighted);
    world = first_ranks(c, c->size);
    if (t == NULL || world == NULL) {
        free(mine);
        free(world);
        pb_mpi_topo_free(t);
        return pb_mpi_raise(comm_old, MPI_ERR_NO_MEM, func, "out of memory");
    }
    in = out = 0;
    for (int i = 0; i < count; i++) {
        if (mine[i].destination == c->rank) {
            t->sources[in] = mine[i].source;
            t->sourceweights[in++] = mine[i].weight;
        }
        if (mine[i].source == c->rank) {
            t->destinations[out] = mine[i].destination;
            t->destweights[out++] = mine[i].weight;
        }
    }
    free(mine);
    rc = comm_with_topo(c, comm_old, func, c->size, world, t, comm_dist_graph);
    free(world);
    return rc;
}

int pb_mpi_dist_graph_neighbors_count_impl(const char *func, MPI_Comm comm, int *indegree,
                                           int *outdegree, int *weighted, pb_comm_t *c)
{
    pb_topo_t *t;
    int rc = topo_of(c, MPI_DIST_GRAPH, comm, func, &t);

    if (rc == MPI_SUCCESS) {
        *indegree = t->indegree;
        *outdegree = t->outdegree;
        *weighted = t->weighted;
    }
    return rc;
}

int pb_mpi_dist_graph_neighbors_impl(const char *func, MPI_Comm comm, int maxindegree,
                                     int sources[], int sourceweights[], int maxoutdegree,
                                     int destinations[], int destweights[], pb_comm_t *c)
{
    pb_topo_t *t;
    int rc = topo_of(c, MPI_DIST_GRAPH, comm, func, &t), in, out;

    if (rc == MPI_SUCCESS)
        rc = check_room(comm, func, "sources", sources, maxindegree, t->indegree);
    if (rc == MPI_SUCCESS)
        rc = check_room(comm, func, "destinations", destinations, maxoutdegree, t->outdegree);
    if (rc != MPI_SUCCESS)
        return rc;
    in = t->indegree, out = t->outdegree;
    copy_ints(sources, t->sources, in);
    copy_ints(destinations, t->destinations, out);
    /* the weights of a weighted graph, where the program asks for them */
    if (t->weighted && in > 0 && sourceweights != NULL && sourceweights != MPI_UNWEIGHTED)
        copy_ints(sourceweights, t->sourceweights, in);
    if (t->weighted && out > 0 && destweights != NULL && destweights != MPI_UNWEIGHTED)
        copy_ints(destweights, t->destweights, out);
    return MPI_SUCCESS;
}

int pb_mpi_topo_test_impl(const char *func, MPI_Comm comm, int *status, pb_comm_t *c)
{
    (void)func;
    (void)comm;
    *status = c->topo != NULL ? c->topo->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
}
