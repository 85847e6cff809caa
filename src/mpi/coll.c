/*
 * Collectives (docs/mpi.md, "Collectives"): MPI_Barrier, MPI_Bcast, the
 * gathers, scatters and all-to-alls, and the reductions, each with its
 * large-count form MPI_X_c, over the point-to-point of p2p.h on each
 * communicator's collective context (so no collective message ever matches
 * a receive of the program's).
 *
 * Every collective has four layers:
 *
 *   PMPI_X          (src/mpi/bindings.c, generated from the checks of
 *                   src/mpi/api/functions.txt) checks the arguments, errors
 *                   through pb_mpi_raise, then calls
 *   pb_mpi_x_impl   ("the MPI calls" below), which resolves MPI_IN_PLACE
 *                   and calls
 *   coll_x          the one place that chooses the algorithm ("choosing an
 *                   algorithm" below: one per collective today; tuned,
 *                   size-dependent and node-aware ones plug in there), which
 *                   calls
 *   pb_coll_x_<algorithm>  the point-to-point algorithm on a pb_comm_t
 *                   (coll_p2p.h), or the node path (coll_node.h),
 *                   returning an error class.
 *
 * The algorithms are coll_p2p.h's (the list is there) and the node
 * path's; Reduce_scatter of a non-commutative op is a Reduce and a
 * Scatterv, as this file chooses them.  The sizes where the long-message
 * algorithms take over are measured
 * (docs/notes/2026-11-26-collective-algorithms-measured.md).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi/bindings.h"
#include "mpi/coll_node.h"
#include "mpi/coll_p2p.h"
#include "mpi/coll_table.h"
#include "mpi/coll_util.h"
#include "mpi/datatype.h"
#include "mpi/intercomm.h"
#include "mpi/op.h"

/* ---- choosing an algorithm -------------------------------------------------------- */

/*
 * The one place each collective's algorithm is chosen (by size, node
 * layout, op ...).  Arguments are checked and MPI_IN_PLACE resolved as each
 * algorithm's comment says; every call returns MPI_SUCCESS or an error class.
 */

/* Where the point-to-point algorithms for long messages take over is the
 * algorithm table's (src/mpi/coll_table.txt; measured at 2 and 4 ranks on
 * one node and 4 across two,
 * docs/notes/2026-11-26-collective-algorithms-measured.md): Allreduce
 * splits over the ranks from 32 KB on, Reduce from 512 KB on (its gather
 * costs a round more than the tree), Allgather doubles below 64 KB in all,
 * and Bcast by scatter and allgather, which copies more bytes in all than
 * the tree and lost at every size up to 8 ranks on this 2-core machine,
 * runs only on larger communicators, for long messages.  Reduce_scatter
 * is not in the table: a commutative op halves, but on a number of ranks
 * not a power of two exchanges pairwise from 64 KB on (no fold). */
#define REDUCE_SCATTER_PAIRWISE_MIN 65536

static size_t coll_bytes(MPI_Count count, MPI_Datatype type)
{
    return (size_t)count * pb_eng_type_size(pb_mpi_datatype(type));
}

/* 1 when a reduction of @count elements can be split over the ranks
 * (reduce-scatter first): a commutative op and at least one element per
 * rank. */
static int coll_split_applies(MPI_Count count, MPI_Op op, pb_comm_t *c)
{
    return c->size > 1 && count >= c->size && pb_mpi_op_is_commutative(op);
}

static int is_node_alg(pb_coll_alg_t alg)
{
    return alg == PB_ALG_NODE || alg == PB_ALG_NODE_CMA || alg == PB_ALG_NODE_AUTO;
}

/* Each collective runs the algorithm the table chooses (coll_table.h) when
 * it applies; the node path may decline (coll_node.h), and an algorithm
 * that does not apply (a split of a non-commutative op, doubling on a
 * number of ranks not a power of two) gives way to the collective's first
 * point-to-point one.  The algorithm that ran is counted. */
static int coll_barrier(pb_comm_t *c)
{
    if (pb_coll_choose(PB_COLL_BARRIER, c, 0) == PB_ALG_NODE) {
        int rc = pb_coll_node_barrier(c);

        if (rc != PB_COLL_NODE_DECLINED) {
            pb_coll_ran(PB_COLL_BARRIER, PB_ALG_NODE);
            return rc;
        }
    }
    pb_coll_ran(PB_COLL_BARRIER, PB_ALG_DISSEMINATION);
    return pb_coll_barrier_dissemination(c);
}

static int coll_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c)
{
    pb_coll_alg_t alg = pb_coll_choose(PB_COLL_BCAST, c, coll_bytes(count, type));

    if (is_node_alg(alg)) {
        int rc = pb_coll_node_bcast(buf, count, type, root, c, alg);

        if (rc != PB_COLL_NODE_DECLINED) {
            pb_coll_ran(PB_COLL_BCAST, alg);
            return rc;
        }
    }
    if (alg == PB_ALG_SCATTER_ALLGATHER && count >= c->size) {
        pb_coll_ran(PB_COLL_BCAST, alg);
        return pb_coll_bcast_scatter_allgather(buf, count, type, root, c);
    }
    pb_coll_ran(PB_COLL_BCAST, PB_ALG_BINOMIAL);
    return pb_coll_bcast_binomial(buf, count, type, root, c);
}

static int coll_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                       MPI_Op op, int root, pb_comm_t *c)
{
    pb_coll_alg_t alg = pb_coll_choose(PB_COLL_REDUCE, c, coll_bytes(count, type));

    if (is_node_alg(alg)) {
        int rc = pb_coll_node_reduce(sendbuf, recvbuf, count, type, op, root, c, alg);

        if (rc != PB_COLL_NODE_DECLINED) {
            pb_coll_ran(PB_COLL_REDUCE, alg);
            return rc;
        }
    }
    if (alg == PB_ALG_RABENSEIFNER && coll_split_applies(count, op, c)) {
        pb_coll_ran(PB_COLL_REDUCE, alg);
        return pb_coll_reduce_rabenseifner(sendbuf, recvbuf, count, type, op, root, c);
    }
    pb_coll_ran(PB_COLL_REDUCE, PB_ALG_BINOMIAL);
    return pb_coll_reduce_binomial(sendbuf, recvbuf, count, type, op, root, c);
}

static int coll_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                          MPI_Op op, pb_comm_t *c)
{
    pb_coll_alg_t alg = pb_coll_choose(PB_COLL_ALLREDUCE, c, coll_bytes(count, type));

    if (is_node_alg(alg)) {
        int rc = pb_coll_node_allreduce(sendbuf, recvbuf, count, type, op, c, alg);

        if (rc != PB_COLL_NODE_DECLINED) {
            pb_coll_ran(PB_COLL_ALLREDUCE, alg);
            return rc;
        }
    }
    if (alg == PB_ALG_RABENSEIFNER && coll_split_applies(count, op, c)) {
        pb_coll_ran(PB_COLL_ALLREDUCE, alg);
        return pb_coll_allreduce_rabenseifner(sendbuf, recvbuf, count, type, op, c);
    }
    pb_coll_ran(PB_COLL_ALLREDUCE, PB_ALG_RECURSIVE_DOUBLING);
    return pb_coll_allreduce_recursive_doubling(sendbuf, recvbuf, count, type, op, c);
}

int pb_coll_agree_min(const int *mine, int *all, int count, pb_comm_t *c)
{
    return pb_coll_allreduce_recursive_doubling(mine, all, count, MPI_INT, MPI_MIN, c);
}

/* The leaders' step between nodes (coll_node.h): the same choice, on the
 * leaders' communicator, which has one rank per node and so never takes
 * the node path. */
int pb_coll_p2p_barrier(pb_comm_t *c)
{
    return coll_barrier(c);
}

int pb_coll_p2p_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c)
{
    return coll_bcast(buf, count, type, root, c);
}

int pb_coll_p2p_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                       MPI_Op op, int root, pb_comm_t *c)
{
    return coll_reduce(sendbuf, recvbuf, count, type, op, root, c);
}

int pb_coll_p2p_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                          MPI_Op op, pb_comm_t *c)
{
    return coll_allreduce(sendbuf, recvbuf, count, type, op, c);
}

/* The node path of a plain Gather, Scatter, Allgather or Alltoall when the
 * table gives it @alg and it does not decline: its result (counted), else
 * PB_COLL_NODE_DECLINED. */
static int node_mover_ran(pb_coll_kind_t kind, pb_coll_alg_t alg, int rc)
{
    if (rc != PB_COLL_NODE_DECLINED)
        pb_coll_ran(kind, alg);
    return rc;
}

static int coll_gatherv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype, int root,
                        pb_comm_t *c)
{
    return pb_coll_gatherv_direct(sendbuf, sendcount, sendtype, recvbuf, recv, recvtype, root, c);
}

static int coll_scatterv(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                         pb_comm_t *c)
{
    return pb_coll_scatterv_direct(sendbuf, send, sendtype, recvbuf, recvcount, recvtype, root, c);
}

static int coll_allgatherv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                           pb_comm_t *c)
{
    return pb_coll_allgatherv_ring(sendbuf, sendcount, sendtype, recvbuf, recv, recvtype, c);
}

static int coll_alltoallv(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                          void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                          pb_comm_t *c)
{
    return pb_coll_alltoallv_direct(sendbuf, send, sendtype, recvbuf, recv, recvtype, c);
}

/* Reduce-scatter as a reduction of the whole vector to rank 0, which then
 * scatters rank i its @counts[i] elements.  @sendbuf holds the whole
 * vector (the caller resolved MPI_IN_PLACE to @recvbuf). */
static int reduce_scatter_via_root(const void *sendbuf, void *recvbuf, const pb_coll_vec_t *counts,
                                   MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    MPI_Aint *displs = malloc((size_t)c->size * sizeof(*displs));
    MPI_Count total = 0;
    void *tmp_mem = NULL, *tmp = NULL;
    pb_coll_vec_t blocks;
    int rc = MPI_SUCCESS;

    if (displs == NULL)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < c->size; i++) {
        displs[i] = (MPI_Aint)total;
        total += pb_coll_vec_count(counts, i);
    }
    blocks = *counts;
    blocks.displs = (pb_mpi_displs_t){NULL, displs};
    if (total == 0)
        goto out;
    if (c->rank == 0 && (tmp = pb_coll_scratch_alloc(total, type, &tmp_mem)) == NULL)
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = coll_reduce(sendbuf, tmp, total, type, op, 0, c);
    if (rc == MPI_SUCCESS)
        rc = coll_scatterv(tmp, &blocks, type, recvbuf, pb_coll_vec_count(counts, c->rank), type, 0,
                           c);
out:
    pb_coll_scratch_put(tmp_mem);
    free(displs);
    return rc;
}

static int coll_reduce_scatter(const void *sendbuf, void *recvbuf, const pb_coll_vec_t *counts,
                               MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    MPI_Count total = 0;

    if (!pb_mpi_op_is_commutative(op) || c->size == 1)
        return reduce_scatter_via_root(sendbuf, recvbuf, counts, type, op, c);
    for (int i = 0; i < c->size; i++)
        total += pb_coll_vec_count(counts, i);
    if ((c->size & (c->size - 1)) != 0 && coll_bytes(total, type) >= REDUCE_SCATTER_PAIRWISE_MIN)
        return pb_coll_reduce_scatter_pairwise(sendbuf, recvbuf, counts, type, op, c);
    return pb_coll_reduce_scatter_halving(sendbuf, recvbuf, counts, type, op, c);
}

static int coll_scan(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                     MPI_Op op, pb_comm_t *c)
{
    return pb_coll_scan_recursive_doubling(sendbuf, recvbuf, count, type, op, c);
}

static int coll_exscan(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                       MPI_Op op, pb_comm_t *c)
{
    return pb_coll_exscan_recursive_doubling(sendbuf, recvbuf, count, type, op, c);
}

/* ---- the MPI calls (after the checks of src/mpi/bindings.c) ----------------------- */

int pb_mpi_barrier_impl(const char *func, MPI_Comm comm, pb_comm_t *c)
{
    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(comm, func, pb_coll_inter_barrier(c));
    return pb_coll_failed(comm, func, coll_barrier(c));
}

int pb_mpi_bcast_impl(const char *func, void *buffer, MPI_Count count, MPI_Datatype datatype,
                      int root, MPI_Comm comm, pb_comm_t *c)
{
    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(comm, func, pb_coll_inter_bcast(buffer, count, datatype, root, c));
    if ((size_t)count * pb_eng_type_size(pb_mpi_datatype(datatype)) == 0)
        return MPI_SUCCESS;
    return pb_coll_failed(comm, func, coll_bcast(buffer, count, datatype, root, c));
}

static int gather_intra(const char *func, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t recv = pb_coll_vec_block(recvcount);
    pb_coll_alg_t alg = pb_coll_choose(PB_COLL_GATHER, c,
                                       sendbuf == MPI_IN_PLACE ? coll_bytes(recvcount, recvtype)
                                                               : coll_bytes(sendcount, sendtype));
    int rc = is_node_alg(alg)
                 ? node_mover_ran(PB_COLL_GATHER, alg,
                                  pb_coll_node_gather(sendbuf, sendcount, sendtype, recvbuf,
                                                      recvcount, recvtype, root, c, alg))
                 : PB_COLL_NODE_DECLINED;

    if (rc != PB_COLL_NODE_DECLINED)
        return pb_coll_failed(comm, func, rc);
    pb_coll_ran(PB_COLL_GATHER, PB_ALG_DIRECT);
    return pb_coll_failed(
        comm, func, coll_gatherv(sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, root, c));
}

int pb_mpi_gather_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t recv = pb_coll_vec_block(recvcount);

    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(
            comm, func,
            pb_coll_inter_gatherv(sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, root, c));
    return gather_intra(func, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                        comm, c);
}

int pb_mpi_gatherv_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, pb_mpi_counts_t recvcounts,
                        pb_mpi_displs_t displs, MPI_Datatype recvtype, int root, MPI_Comm comm,
                        pb_comm_t *c)
{
    pb_coll_vec_t recv = pb_coll_vec_arrays(recvcounts, displs);

    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(
            comm, func,
            pb_coll_inter_gatherv(sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, root, c));
    return pb_coll_failed(
        comm, func, coll_gatherv(sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, root, c));
}

static int scatter_intra(const char *func, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t send = pb_coll_vec_block(sendcount);
    pb_coll_alg_t alg = pb_coll_choose(PB_COLL_SCATTER, c,
                                       c->rank == root ? coll_bytes(sendcount, sendtype)
                                                       : coll_bytes(recvcount, recvtype));
    int rc = is_node_alg(alg)
                 ? node_mover_ran(PB_COLL_SCATTER, alg,
                                  pb_coll_node_scatter(sendbuf, sendcount, sendtype, recvbuf,
                                                       recvcount, recvtype, root, c, alg))
                 : PB_COLL_NODE_DECLINED;

    if (rc != PB_COLL_NODE_DECLINED)
        return pb_coll_failed(comm, func, rc);
    pb_coll_ran(PB_COLL_SCATTER, PB_ALG_DIRECT);
    return pb_coll_failed(
        comm, func, coll_scatterv(sendbuf, &send, sendtype, recvbuf, recvcount, recvtype, root, c));
}

int pb_mpi_scatter_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t send = pb_coll_vec_block(sendcount);

    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(comm, func,
                              pb_coll_inter_scatterv(sendbuf, &send, sendtype, recvbuf, recvcount,
                                                     recvtype, root, c));
    return scatter_intra(func, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                         comm, c);
}

int pb_mpi_scatterv_impl(const char *func, const void *sendbuf, pb_mpi_counts_t sendcounts,
                         pb_mpi_displs_t displs, MPI_Datatype sendtype, void *recvbuf,
                         MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                         pb_comm_t *c)
{
    pb_coll_vec_t send = pb_coll_vec_arrays(sendcounts, displs);

    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(comm, func,
                              pb_coll_inter_scatterv(sendbuf, &send, sendtype, recvbuf, recvcount,
                                                     recvtype, root, c));
    return pb_coll_failed(
        comm, func, coll_scatterv(sendbuf, &send, sendtype, recvbuf, recvcount, recvtype, root, c));
}

static int allgather_intra(const char *func, const void *sendbuf, MPI_Count sendcount,
                           MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t recv = pb_coll_vec_block(recvcount);
    pb_coll_alg_t alg;
    int rc;

    /* nothing to move (a collective need not synchronize) */
    if (coll_bytes(recvcount, recvtype) == 0 &&
        (sendbuf == MPI_IN_PLACE || coll_bytes(sendcount, sendtype) == 0))
        return MPI_SUCCESS;
    alg = pb_coll_choose(PB_COLL_ALLGATHER, c,
                         sendbuf == MPI_IN_PLACE ? coll_bytes(recvcount, recvtype)
                                                 : coll_bytes(sendcount, sendtype));
    rc = is_node_alg(alg)
             ? node_mover_ran(PB_COLL_ALLGATHER, alg,
                              pb_coll_node_allgather(sendbuf, sendcount, sendtype, recvbuf,
                                                     recvcount, recvtype, c, alg))
             : PB_COLL_NODE_DECLINED;
    if (rc == PB_COLL_NODE_DECLINED && alg == PB_ALG_NODE_CMA) /* no single copy: the cells */
        rc = node_mover_ran(PB_COLL_ALLGATHER, PB_ALG_NODE,
                            pb_coll_node_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                   recvtype, c, PB_ALG_NODE));
    if (rc != PB_COLL_NODE_DECLINED)
        return pb_coll_failed(comm, func, rc);
    if (alg == PB_ALG_RECURSIVE_DOUBLING && (c->size & (c->size - 1)) == 0) {
        pb_coll_ran(PB_COLL_ALLGATHER, alg);
        return pb_coll_failed(comm, func,
                              pb_coll_allgather_recursive_doubling(
                                  sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c));
    }
    pb_coll_ran(PB_COLL_ALLGATHER, PB_ALG_RING);
    return pb_coll_failed(
        comm, func, coll_allgatherv(sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, c));
}

int pb_mpi_allgather_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t recv = pb_coll_vec_block(recvcount);

    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(
            comm, func,
            pb_coll_inter_allgatherv(sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, c));
    return allgather_intra(func, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                           c);
}

int pb_mpi_allgatherv_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                           MPI_Datatype sendtype, void *recvbuf, pb_mpi_counts_t recvcounts,
                           pb_mpi_displs_t displs, MPI_Datatype recvtype, MPI_Comm comm,
                           pb_comm_t *c)
{
    pb_coll_vec_t recv = pb_coll_vec_arrays(recvcounts, displs);

    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(
            comm, func,
            pb_coll_inter_allgatherv(sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, c));
    return pb_coll_failed(
        comm, func, coll_allgatherv(sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, c));
}

static int alltoall_intra(const char *func, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t send = pb_coll_vec_block(sendcount), recv = pb_coll_vec_block(recvcount);
    pb_coll_alg_t alg = pb_coll_choose(PB_COLL_ALLTOALL, c,
                                       sendbuf == MPI_IN_PLACE ? coll_bytes(recvcount, recvtype)
                                                               : coll_bytes(sendcount, sendtype));
    int rc = is_node_alg(alg)
                 ? node_mover_ran(PB_COLL_ALLTOALL, alg,
                                  pb_coll_node_alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                                        recvcount, recvtype, c, alg))
                 : PB_COLL_NODE_DECLINED;

    /* no single copy (or in place): the cells */
    if (rc == PB_COLL_NODE_DECLINED && alg == PB_ALG_NODE_CMA)
        rc = node_mover_ran(PB_COLL_ALLTOALL, PB_ALG_NODE,
                            pb_coll_node_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                  recvtype, c, PB_ALG_NODE));
    if (rc != PB_COLL_NODE_DECLINED)
        return pb_coll_failed(comm, func, rc);
    pb_coll_ran(PB_COLL_ALLTOALL, PB_ALG_DIRECT);
    return pb_coll_failed(comm, func,
                          coll_alltoallv(sendbuf, &send, sendtype, recvbuf, &recv, recvtype, c));
}

int pb_mpi_alltoall_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t send = pb_coll_vec_block(sendcount), recv = pb_coll_vec_block(recvcount);

    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(
            comm, func,
            pb_coll_inter_alltoallv(sendbuf, &send, sendtype, recvbuf, &recv, recvtype, c));
    return alltoall_intra(func, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                          c);
}

int pb_mpi_alltoallv_impl(const char *func, const void *sendbuf, pb_mpi_counts_t sendcounts,
                          pb_mpi_displs_t sdispls, MPI_Datatype sendtype, void *recvbuf,
                          pb_mpi_counts_t recvcounts, pb_mpi_displs_t rdispls,
                          MPI_Datatype recvtype, MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t send = pb_coll_vec_arrays(sendcounts, sdispls),
                  recv = pb_coll_vec_arrays(recvcounts, rdispls);

    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(
            comm, func,
            pb_coll_inter_alltoallv(sendbuf, &send, sendtype, recvbuf, &recv, recvtype, c));
    return pb_coll_failed(comm, func,
                          coll_alltoallv(sendbuf, &send, sendtype, recvbuf, &recv, recvtype, c));
}

int pb_mpi_reduce_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                       MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, pb_comm_t *c)
{
    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(comm, func,
                              pb_coll_inter_reduce(sendbuf, recvbuf, count, datatype, op, root, c));
    if (c->rank == root && sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    if (count == 0)
        return MPI_SUCCESS;
    return pb_coll_failed(comm, func, coll_reduce(sendbuf, recvbuf, count, datatype, op, root, c));
}

int pb_mpi_allreduce_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, pb_comm_t *c)
{
    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(comm, func,
                              pb_coll_inter_allreduce(sendbuf, recvbuf, count, datatype, op, c));
    if (sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    if (count == 0)
        return MPI_SUCCESS;
    return pb_coll_failed(comm, func, coll_allreduce(sendbuf, recvbuf, count, datatype, op, c));
}

/* Reduce_scatter(_block) check their counts here: the reduction is over
 * their sum. */
static int reduce_scatter_common(const char *func, const void *sendbuf, void *recvbuf,
                                 const pb_coll_vec_t *counts, MPI_Datatype datatype, MPI_Op op,
                                 MPI_Comm comm, pb_comm_t *c)
{
    MPI_Count total;
    /* an intercommunicator's counts are its local group's */
    int rc = pb_coll_check_reduce_scatter(comm, func, sendbuf, recvbuf, counts, datatype, op,
                                          pb_mpi_comm_is_inter(c) ? c->local_group : c, &total);

    if (rc != MPI_SUCCESS || total == 0)
        return rc;
    if (pb_mpi_comm_is_inter(c))
        return pb_coll_failed(
            comm, func,
            pb_coll_inter_reduce_scatter(sendbuf, recvbuf, counts, total, datatype, op, c));
    if (sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    return pb_coll_failed(comm, func,
                          coll_reduce_scatter(sendbuf, recvbuf, counts, datatype, op, c));
}

int pb_mpi_reduce_scatter_block_impl(const char *func, const void *sendbuf, void *recvbuf,
                                     MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op,
                                     MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t counts = pb_coll_vec_block(recvcount);

    return reduce_scatter_common(func, sendbuf, recvbuf, &counts, datatype, op, comm, c);
}

int pb_mpi_reduce_scatter_impl(const char *func, const void *sendbuf, void *recvbuf,
                               pb_mpi_counts_t recvcounts, MPI_Datatype datatype, MPI_Op op,
                               MPI_Comm comm, pb_comm_t *c)
{
    pb_coll_vec_t counts = pb_coll_vec_arrays(recvcounts, (pb_mpi_displs_t){NULL, NULL});

    return reduce_scatter_common(func, sendbuf, recvbuf, &counts, datatype, op, comm, c);
}

int pb_mpi_scan_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, pb_comm_t *c)
{
    int rc = pb_mpi_comm_check_intra(comm, func, c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    if (count == 0)
        return MPI_SUCCESS;
    return pb_coll_failed(comm, func, coll_scan(sendbuf, recvbuf, count, datatype, op, c));
}

int pb_mpi_exscan_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, pb_comm_t *c)
{
    int rc = pb_mpi_comm_check_intra(comm, func, c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    if (count == 0)
        return MPI_SUCCESS;
    return pb_coll_failed(comm, func, coll_exscan(sendbuf, recvbuf, count, datatype, op, c));
}
