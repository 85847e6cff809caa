/*
 * The blocking neighborhood collectives (MPI_Neighbor_allgather(v),
 * MPI_Neighbor_alltoall(v,w)) and MPI_Alltoallw, each with its _c form
 * (docs/mpi.md, "Collectives" and "Process topologies").
 *
 * All are one exchange of blocks: a receive from each peer posted, then a
 * send to each, then a wait for all, over the point-to-point of p2p.h on
 * the communicator's collective context.  The peers of a neighborhood
 * collective are the neighbours of topo.h in the standard's order, its
 * messages tagged TAG_NEIGHBOR plus the neighbour's tag offset (so the
 * two blocks a periodic Cartesian dimension of 1 or 2 ranks exchanges
 * with one rank land in the right places); those of MPI_Alltoallw are
 * all ranks.  A peer MPI_PROC_NULL is skipped: its receive block stays as
 * it was.  Messages of successive collectives stay apart as coll_p2p.c's do
 * (same order on every rank, no overtaking on one source, tag, context).
 *
 * The nonblocking (MPI_Ineighbor_*) and persistent (MPI_Neighbor_*_init)
 * forms are the same exchange as one round of a schedule (sched.h), whose
 * messages all carry the schedule's one tag.  There, on a Cartesian
 * topology, the direction of a message is told by order instead of by
 * tag: a rank sends, in each dimension, its block toward +1 before its
 * block toward -1, and receives from its -1 neighbour before its +1
 * neighbour; between two ranks messages match in the order they were
 * posted, so the block sent toward +1 fills the receiver's block from -1
 * even when one rank is both neighbours.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi/bindings.h"
#include "mpi/coll_util.h"
#include "mpi/datatype.h"
#include "mpi/info.h"
#include "mpi/p2p.h"
#include "mpi/sched.h"
#include "mpi/topo.h"

/* the collective context of pb_mpi_isend_on/pb_mpi_irecv_on */
#define COLL 1

/* Tags on the collective context (coll_p2p.c uses 16-25, topo.c 42-43):
 * MPI_Alltoallw's, and the first of the neighborhood collectives' (plus
 * the neighbour's offset, 0 .. 2 ndims - 1). */
enum {
    TAG_ALLTOALLW = 40,
    TAG_NEIGHBOR = 64
};

/*
 * One side (send or receive) of an exchange: where block j lies, how many
 * elements of which datatype.  Blocks come one after another (one count
 * and type), or at per-block displacements in elements (v forms) or in
 * bytes (w forms, per-block types); or every block is the buffer itself
 * (the send side of an allgather).
 */
typedef struct {
    const void *buf;
    MPI_Count count;           /* every block's, without counts */
    pb_mpi_counts_t counts;    /* per-block counts, or none */
    pb_mpi_displs_t displs;    /* per-block displacements, or none */
    int byte_displs;           /* 1: displs are in bytes */
    MPI_Datatype type;         /* every block's, without types */
    const MPI_Datatype *types; /* per-block datatypes, or NULL */
    int same;                  /* 1: every block is @buf itself */
    int arrays;                /* 1: per-block counts (and displacements) */
} side_t;

static side_t side_blocks(const void *buf, MPI_Count count, MPI_Datatype type, int same)
{
    return (side_t){buf, count, {NULL, NULL}, {NULL, NULL}, 0, type, NULL, same, 0};
}

static side_t side_v(const void *buf, pb_mpi_counts_t counts, pb_mpi_displs_t displs,
                     MPI_Datatype type)
{
    return (side_t){buf, 0, counts, displs, 0, type, NULL, 0, 1};
}

static side_t side_w(const void *buf, pb_mpi_counts_t counts, pb_mpi_displs_t displs,
                     const MPI_Datatype *types)
{
    return (side_t){buf, 0, counts, displs, 1, MPI_DATATYPE_NULL, types, 0, 1};
}

static MPI_Count side_count(const side_t *s, int j)
{
    return s->arrays ? pb_mpi_counts_at(s->counts, j) : s->count;
}

static MPI_Datatype side_type(const side_t *s, int j)
{
    return s->types != NULL ? s->types[j] : s->type;
}

/* The address of block @j (@buf may be MPI_BOTTOM: sums as integers). */
static void *side_addr(const side_t *s, int j)
{
    MPI_Aint extent = pb_eng_type_extent(pb_mpi_datatype(side_type(s, j))), offset;

    if (s->same)
        offset = 0;
    else if (s->arrays)
        offset = pb_mpi_displs_at(s->displs, j) * (s->byte_displs ? 1 : extent);
    else
        offset = (MPI_Aint)j * (MPI_Aint)s->count * extent;
    return (void *)((uintptr_t)s->buf + (uintptr_t)offset);
}

/* Check the @n blocks of @s for @func: MPI_ERR_ARG (a NULL array), then
 * each as pb_mpi_check_buf. */
static int side_check(const side_t *s, int n, MPI_Comm comm, const char *func, const char *what)
{
    int rc = MPI_SUCCESS;

    if (n == 0)
        return MPI_SUCCESS;
    if (s->arrays && s->counts.i == NULL && s->counts.c == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the %s counts are NULL", what);
    if (s->arrays && s->displs.i == NULL && s->displs.a == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the %s displacements are NULL", what);
    if (s->arrays && s->byte_displs && s->types == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the %s datatypes are NULL", what);
    if (!s->arrays || s->same)
        return pb_mpi_check_buf(comm, func, what, s->buf, s->count, s->type);
    for (int j = 0; j < n && rc == MPI_SUCCESS; j++)
        rc = pb_mpi_check_buf(comm, func, what, s->buf, side_count(s, j), side_type(s, j));
    return rc;
}

/* The peers of an exchange: @n ranks (MPI_PROC_NULL: none), each with its
 * tag, or all ranks 0 .. @n - 1 with one tag. */
typedef struct {
    int n;
    const int *ranks, *tag_offsets; /* NULL: rank j, tag @tag */
    int tag;
} peers_t;

static int peer_rank(const peers_t *p, int j)
{
    return p->ranks != NULL ? p->ranks[j] : j;
}

static int peer_tag(const peers_t *p, int j)
{
    return p->tag + (p->tag_offsets != NULL ? p->tag_offsets[j] : 0);
}

/* Receive block j of @recv from peer j of @from, and send block j of
 * @send to peer j of @to, all at once; wait for all.  @packed (not NULL):
 * the send blocks are packed bytes, block j at @packed + @offs[j].
 * @return MPI_SUCCESS or an error class (MPI_ERR_TRUNCATE, MPI_ERR_NO_MEM). */
static int exchange(pb_comm_t *c, const side_t *send, const peers_t *to, const side_t *recv,
                    const peers_t *from, const char *packed, const size_t *offs)
{
    MPI_Request local[32], *reqs = local;
    int n = 0, rc = MPI_SUCCESS, wait_rc, max = to->n + from->n;

    if (max > (int)PB_ARRAY_SIZE(local)) {
        reqs = malloc((size_t)max * sizeof(MPI_Request));
        if (reqs == NULL)
            return MPI_ERR_NO_MEM;
    }
    for (int j = 0; j < from->n && rc == MPI_SUCCESS; j++) {
        if (peer_rank(from, j) == MPI_PROC_NULL)
            continue;
        rc = pb_mpi_irecv_on(side_addr(recv, j), side_count(recv, j), side_type(recv, j),
                             peer_rank(from, j), peer_tag(from, j), c, COLL, &reqs[n]);
        n += rc == MPI_SUCCESS;
    }
    for (int j = 0; j < to->n && rc == MPI_SUCCESS; j++) {
        if (peer_rank(to, j) == MPI_PROC_NULL)
            continue;
        if (packed != NULL)
            rc = pb_mpi_isend_on(packed + offs[j], (MPI_Count)(offs[j + 1] - offs[j]), MPI_BYTE,
                                 peer_rank(to, j), peer_tag(to, j), c, COLL, &reqs[n]);
        else
            rc = pb_mpi_isend_on(side_addr(send, j), side_count(send, j), side_type(send, j),
                                 peer_rank(to, j), peer_tag(to, j), c, COLL, &reqs[n]);
        n += rc == MPI_SUCCESS;
    }
    /* wait even after a failed start: the started ones use the buffers */
    wait_rc = pb_mpi_wait_requests(n, reqs);
    if (rc == MPI_SUCCESS)
        rc = wait_rc;
    if (reqs != local)
        free(reqs);
    return rc;
}

/* ---- the neighborhood collectives -------------------------------------------------- */

/* @c's neighbours in *@nb, and @send and @recv checked against them for
 * @func.  @return MPI_SUCCESS or the error raised (MPI_ERR_TOPOLOGY: @c
 * has no topology; side_check's). */
static int neighbor_check(const char *func, const side_t *send, const side_t *recv, MPI_Comm comm,
                          pb_comm_t *c, pb_topo_neighbors_t *nb)
{
    int rc;

    if (pb_mpi_topo_neighbors(c, nb) != MPI_SUCCESS)
        return pb_mpi_raise(comm, MPI_ERR_TOPOLOGY, func, "the communicator has no topology");
    rc = side_check(send, nb->outdegree, comm, func, "send");
    if (rc == MPI_SUCCESS)
        rc = side_check(recv, nb->indegree, comm, func, "receive");
    return rc;
}

/* Check @send and @recv against @c's neighbours and exchange them. */
static int neighbor_exchange(const char *func, const side_t *send, const side_t *recv,
                             MPI_Comm comm, pb_comm_t *c)
{
    pb_topo_neighbors_t nb;
    peers_t to, from;
    int rc = neighbor_check(func, send, recv, comm, c, &nb);

    if (rc != MPI_SUCCESS)
        return rc;
    to = (peers_t){nb.outdegree, nb.destinations, nb.out_tag, TAG_NEIGHBOR};
    from = (peers_t){nb.indegree, nb.sources, nb.in_tag, TAG_NEIGHBOR};
    return pb_coll_failed(comm, func, exchange(c, send, &to, recv, &from, NULL, NULL));
}

int pb_mpi_neighbor_allgather_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                   MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                   MPI_Datatype recvtype, MPI_Comm comm, pb_comm_t *c)
{
    side_t send = side_blocks(sendbuf, sendcount, sendtype, 1);
    side_t recv = side_blocks(recvbuf, recvcount, recvtype, 0);

    return neighbor_exchange(func, &send, &recv, comm, c);
}

int pb_mpi_neighbor_allgatherv_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                    MPI_Datatype sendtype, void *recvbuf,
                                    pb_mpi_counts_t recvcounts, pb_mpi_displs_t displs,
                                    MPI_Datatype recvtype, MPI_Comm comm, pb_comm_t *c)
{
    side_t send = side_blocks(sendbuf, sendcount, sendtype, 1);
    side_t recv = side_v(recvbuf, recvcounts, displs, recvtype);

    return neighbor_exchange(func, &send, &recv, comm, c);
}

int pb_mpi_neighbor_alltoall_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                  MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                  MPI_Datatype recvtype, MPI_Comm comm, pb_comm_t *c)
{
    side_t send = side_blocks(sendbuf, sendcount, sendtype, 0);
    side_t recv = side_blocks(recvbuf, recvcount, recvtype, 0);

    return neighbor_exchange(func, &send, &recv, comm, c);
}

int pb_mpi_neighbor_alltoallv_impl(const char *func, const void *sendbuf,
                                   pb_mpi_counts_t sendcounts, pb_mpi_displs_t sdispls,
                                   MPI_Datatype sendtype, void *recvbuf, pb_mpi_counts_t recvcounts,
                                   pb_mpi_displs_t rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                                   pb_comm_t *c)
{
    side_t send = side_v(sendbuf, sendcounts, sdispls, sendtype);
    side_t recv = side_v(recvbuf, recvcounts, rdispls, recvtype);

    return neighbor_exchange(func, &send, &recv, comm, c);
}

int pb_mpi_neighbor_alltoallw_impl(const char *func, const void *sendbuf,
                                   pb_mpi_counts_t sendcounts, const MPI_Aint sdispls[],
                                   const MPI_Datatype sendtypes[], void *recvbuf,
                                   pb_mpi_counts_t recvcounts, const MPI_Aint rdispls[],
                                   const MPI_Datatype recvtypes[], MPI_Comm comm, pb_comm_t *c)
{
    side_t send = side_w(sendbuf, sendcounts, (pb_mpi_displs_t){NULL, sdispls}, sendtypes);
    side_t recv = side_w(recvbuf, recvcounts, (pb_mpi_displs_t){NULL, rdispls}, recvtypes);

    return neighbor_exchange(func, &send, &recv, comm, c);
}

/* ---- nonblocking and persistent ----------------------------------------------------- */

/* Check the info of a persistent collective (@info; NULL for the
 * nonblocking one, which has none), then @send and @recv against @c's
 * neighbours, build the exchange as a schedule, and make its request in
 * *@request: started (nonblocking), or inactive.  @return MPI_SUCCESS or
 * the error raised by @func. */
static int neighbor_sched(const char *func, const side_t *send, const side_t *recv, MPI_Comm comm,
                          pb_comm_t *c, const MPI_Info *info, MPI_Request *request)
{
    pb_topo_neighbors_t nb;
    pb_sched_t *s;
    int rc = info != NULL ? pb_mpi_info_check(comm, *info, 1, func) : MPI_SUCCESS;
    int cartesian = 1;

    if (rc == MPI_SUCCESS)
        rc = neighbor_check(func, send, recv, comm, c, &nb);
    if (rc != MPI_SUCCESS)
        return rc;
    s = pb_sched_new(c, pb_sched_tag(c));
    if (s == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory for the schedule");
    /* a Cartesian topology's offsets are the directions, 0 .. 2 ndims - 1 */
    for (int j = 0; j < nb.outdegree; j++)
        cartesian = cartesian && nb.out_tag != NULL && nb.out_tag[j] == j;
    cartesian = cartesian && nb.outdegree % 2 == 0 && nb.outdegree > 0;
    for (int j = 0; j < nb.indegree; j++) {
        if (nb.sources[j] != MPI_PROC_NULL)
            pb_sched_recv(s, side_addr(recv, j), side_count(recv, j), side_type(recv, j),
                          nb.sources[j]);
    }
    for (int k = 0; k < nb.outdegree; k++) {
        int j = cartesian ? k ^ 1 : k; /* toward +1 first (above) */

        if (nb.destinations[j] != MPI_PROC_NULL)
            pb_sched_send(s, side_addr(send, j), side_count(send, j), side_type(send, j),
                          nb.destinations[j]);
    }
    if (pb_sched_request(s, info != NULL, request) != MPI_SUCCESS)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory for the schedule");
    return MPI_SUCCESS;
}

int pb_mpi_ineighbor_allgather_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request,
                                    pb_comm_t *c)
{
    side_t send = side_blocks(sendbuf, sendcount, sendtype, 1);
    side_t recv = side_blocks(recvbuf, recvcount, recvtype, 0);

    return neighbor_sched(func, &send, &recv, comm, c, NULL, request);
}

int pb_mpi_neighbor_allgather_init_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                        MPI_Request *request, pb_comm_t *c)
{
    side_t send = side_blocks(sendbuf, sendcount, sendtype, 1);
    side_t recv = side_blocks(recvbuf, recvcount, recvtype, 0);

    return neighbor_sched(func, &send, &recv, comm, c, &info, request);
}

int pb_mpi_ineighbor_allgatherv_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                     MPI_Datatype sendtype, void *recvbuf,
                                     pb_mpi_counts_t recvcounts, pb_mpi_displs_t displs,
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request,
                                     pb_comm_t *c)
{
    side_t send = side_blocks(sendbuf, sendcount, sendtype, 1);
    side_t recv = side_v(recvbuf, recvcounts, displs, recvtype);

    return neighbor_sched(func, &send, &recv, comm, c, NULL, request);
}

int pb_mpi_neighbor_allgatherv_init_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                         MPI_Datatype sendtype, void *recvbuf,
                                         pb_mpi_counts_t recvcounts, pb_mpi_displs_t displs,
                                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                         MPI_Request *request, pb_comm_t *c)
{
    side_t send = side_blocks(sendbuf, sendcount, sendtype, 1);
    side_t recv = side_v(recvbuf, recvcounts, displs, recvtype);

    return neighbor_sched(func, &send, &recv, comm, c, &info, request);
}

int pb_mpi_ineighbor_alltoall_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                   MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request,
                                   pb_comm_t *c)
{
    side_t send = side_blocks(sendbuf, sendcount, sendtype, 0);
    side_t recv = side_blocks(recvbuf, recvcount, recvtype, 0);

    return neighbor_sched(func, &send, &recv, comm, c, NULL, request);
}

int pb_mpi_neighbor_alltoall_init_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                       MPI_Request *request, pb_comm_t *c)
{
    side_t send = side_blocks(sendbuf, sendcount, sendtype, 0);
    side_t recv = side_blocks(recvbuf, recvcount, recvtype, 0);

    return neighbor_sched(func, &send, &recv, comm, c, &info, request);
}

int pb_mpi_ineighbor_alltoallv_impl(const char *func, const void *sendbuf,
                                    pb_mpi_counts_t sendcounts, pb_mpi_displs_t sdispls,
                                    MPI_Datatype sendtype, void *recvbuf,
                                    pb_mpi_counts_t recvcounts, pb_mpi_displs_t rdispls,
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request,
                                    pb_comm_t *c)
{
    side_t send = side_v(sendbuf, sendcounts, sdispls, sendtype);
    side_t recv = side_v(recvbuf, recvcounts, rdispls, recvtype);

    return neighbor_sched(func, &send, &recv, comm, c, NULL, request);
}

int pb_mpi_neighbor_alltoallv_init_impl(const char *func, const void *sendbuf,
                                        pb_mpi_counts_t sendcounts, pb_mpi_displs_t sdispls,
                                        MPI_Datatype sendtype, void *recvbuf,
                                        pb_mpi_counts_t recvcounts, pb_mpi_displs_t rdispls,
                                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                        MPI_Request *request, pb_comm_t *c)
{
    side_t send = side_v(sendbuf, sendcounts, sdispls, sendtype);
    side_t recv = side_v(recvbuf, recvcounts, rdispls, recvtype);

    return neighbor_sched(func, &send, &recv, comm, c, &info, request);
}

int pb_mpi_ineighbor_alltoallw_impl(const char *func, const void *sendbuf,
                                    pb_mpi_counts_t sendcounts, const MPI_Aint sdispls[],
                                    const MPI_Datatype sendtypes[], void *recvbuf,
                                    pb_mpi_counts_t recvcounts, const MPI_Aint rdispls[],
                                    const MPI_Datatype recvtypes[], MPI_Comm comm,
                                    MPI_Request *request, pb_comm_t *c)
{
    side_t send = side_w(sendbuf, sendcounts, (pb_mpi_displs_t){NULL, sdispls}, sendtypes);
    side_t recv = side_w(recvbuf, recvcounts, (pb_mpi_displs_t){NULL, rdispls}, recvtypes);

    return neighbor_sched(func, &send, &recv, comm, c, NULL, request);
}

int pb_mpi_neighbor_alltoallw_init_impl(const char *func, const void *sendbuf,
                                        pb_mpi_counts_t sendcounts, const MPI_Aint sdispls[],
                                        const MPI_Datatype sendtypes[], void *recvbuf,
                                        pb_mpi_counts_t recvcounts, const MPI_Aint rdispls[],
                                        const MPI_Datatype recvtypes[], MPI_Comm comm,
                                        MPI_Info info, MPI_Request *request, pb_comm_t *c)
{
    side_t send = side_w(sendbuf, sendcounts, (pb_mpi_displs_t){NULL, sdispls}, sendtypes);
    side_t recv = side_w(recvbuf, recvcounts, (pb_mpi_displs_t){NULL, rdispls}, recvtypes);

    return neighbor_sched(func, &send, &recv, comm, c, &info, request);
}

/* ---- MPI_Alltoallw ------------------------------------------------------------------------ */

/* The blocks @recv (in place) sends to the other ranks, packed into
 * *@packed_p, block j from (*@offs_p)[j] to (*@offs_p)[j + 1] (empty for
 * this rank's own).
 * @return MPI_SUCCESS; MPI_ERR_NO_MEM. */
static int pack_in_place(const side_t *recv, pb_comm_t *c, char **packed_p, size_t **offs_p)
{
    size_t total = 0, *offs = malloc(((size_t)c->size + 1) * sizeof(size_t));
    char *packed;

    if (offs == NULL)
        return MPI_ERR_NO_MEM;
    for (int j = 0; j < c->size; j++) {
        offs[j] = total;
        if (j != c->rank)
            total +=
                (size_t)side_count(recv, j) * pb_eng_type_size(pb_mpi_datatype(side_type(recv, j)));
    }
    offs[c->size] = total;
    packed = malloc(total ? total : 1);
    if (packed == NULL) {
        free(offs);
        return MPI_ERR_NO_MEM;
    }
    for (int j = 0; j < c->size; j++) {
        if (j != c->rank)
            pb_eng_type_pack_range(side_addr(recv, j), side_count(recv, j),
                                   pb_mpi_datatype(side_type(recv, j)), 0, packed + offs[j],
                                   offs[j + 1] - offs[j]);
    }
    *packed_p = packed;
    *offs_p = offs;
    return MPI_SUCCESS;
}

int pb_mpi_alltoallw_impl(const char *func, const void *sendbuf, pb_mpi_counts_t sendcounts,
                          pb_mpi_displs_t sdispls, const MPI_Datatype sendtypes[], void *recvbuf,
                          pb_mpi_counts_t recvcounts, pb_mpi_displs_t rdispls,
                          const MPI_Datatype recvtypes[], MPI_Comm comm, pb_comm_t *c)
{
    side_t send = side_w(sendbuf, sendcounts, sdispls, sendtypes);
    side_t recv = side_w(recvbuf, recvcounts, rdispls, recvtypes);
    peers_t all = {c->size, NULL, NULL, TAG_ALLTOALLW};
    char *packed = NULL;
    size_t *offs = NULL;
    int rc = MPI_SUCCESS, *others = NULL;

    if (pb_mpi_comm_is_inter(c) && sendbuf == MPI_IN_PLACE)
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func,
                            "MPI_IN_PLACE is not allowed on an intercommunicator");
    if (sendbuf != MPI_IN_PLACE)
        rc = side_check(&send, c->size, comm, func, "send");
    if (rc == MPI_SUCCESS)
        rc = side_check(&recv, c->size, comm, func, "receive");
    if (rc != MPI_SUCCESS)
        return rc;
    if (sendbuf == MPI_IN_PLACE) {
        /* this rank's own block stays: no message to itself */
        others = malloc((size_t)c->size * sizeof(int));
        rc = others != NULL ? pack_in_place(&recv, c, &packed, &offs) : MPI_ERR_NO_MEM;
        for (int j = 0; rc == MPI_SUCCESS && j < c->size; j++)
            others[j] = j == c->rank ? MPI_PROC_NULL : j;
        all.ranks = others;
    }
    if (rc == MPI_SUCCESS)
        rc = exchange(c, &send, &all, &recv, &all, packed, offs);
    free(others);
    free(packed);
    free(offs);
    return pb_coll_failed(comm, func, rc);
}
