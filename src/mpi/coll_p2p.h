/*
 * The point-to-point algorithms of the blocking collectives (coll_p2p.c),
 * which coll.c chooses among (its "choosing an algorithm").  Each runs on
 * a pb_comm_t over the point-to-point of p2p.h on the communicator's
 * collective context, every rank of it calling the same algorithm with
 * the arguments the standard requires to agree, and returns MPI_SUCCESS
 * or an error class: MPI_ERR_TRUNCATE (a block longer than its receive
 * buffer), MPI_ERR_NO_MEM (a scratch buffer), or a transfer's error.
 * MPI_IN_PLACE is what each comment says: most take it as the standard
 * places it; the reductions take it resolved (@sendbuf = @recvbuf).
 *
 * The algorithms, for P ranks:
 *
 *   Barrier          dissemination: ceil(log2 P) rounds of empty messages
 *   Bcast            binomial tree from the root; long messages on 9 ranks
 *                    or more: binomial scatter of P pieces, then ring
 *                    allgather (van de Geijn)
 *   Reduce           binomial tree toward the root; a non-commutative op goes
 *                    toward rank 0, combining in rank order, and rank 0 then
 *                    sends the result to the root.  Long vectors of a
 *                    commutative op: reduce-scatter by recursive halving,
 *                    then a binomial gather of the pieces to the root
 *                    (Rabenseifner), so every rank does 1/P of the arithmetic
 *   Allreduce        recursive doubling (the ranks beyond the largest power
 *                    of two first fold into a neighbour); partial results
 *                    always combine as (lower ranks) op (higher ranks), so
 *                    non-commutative ops are right and every rank ends with
 *                    the same bits.  Long vectors of a commutative op:
 *                    reduce-scatter by recursive halving, then recursive
 *                    doubling allgather (Rabenseifner); each element is
 *                    combined on one rank only, so all get the same bits
 *   Gather(v), Scatter(v)   direct: the root posts one receive (send) per rank
 *   Allgather(v)     ring: P-1 steps, each passing one block to the right;
 *                    Allgather of short blocks on a power of two ranks:
 *                    recursive doubling (log2 P steps)
 *   Alltoall(v)      direct: every receive and send posted at once
 *   Reduce_scatter(_block)  commutative op: recursive halving, each rank's
 *                    block reduced where it ends (long vectors on P not a
 *                    power of two: pairwise exchange, P-1 steps, no fold);
 *                    non-commutative: Reduce to rank 0, then Scatterv
 *   Scan, Exscan     recursive doubling (MPICH's scheme), in rank order
 */
#ifndef PB_MPI_COLL_P2P_H
#define PB_MPI_COLL_P2P_H

#include "mpi/coll_util.h"
#include "mpi/comm.h"

/* Dissemination barrier. */
int pb_coll_barrier_dissemination(pb_comm_t *c);

/* Binomial tree broadcast from @root. */
int pb_coll_bcast_binomial(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c);

/* Broadcast by binomial scatter and ring allgather (van de Geijn); needs
 * @count >= the communicator's size. */
int pb_coll_bcast_scatter_allgather(void *buf, MPI_Count count, MPI_Datatype type, int root,
                                    pb_comm_t *c);

/* Binomial tree reduction to @root (through rank 0, in rank order, for a
 * non-commutative @op). */
int pb_coll_reduce_binomial(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                            MPI_Op op, int root, pb_comm_t *c);

/* Reduction to @root by reduce-scatter and binomial gather
 * (Rabenseifner); needs a commutative @op, 2 ranks or more and @count >=
 * their number. */
int pb_coll_reduce_rabenseifner(const void *sendbuf, void *recvbuf, MPI_Count count,
                                MPI_Datatype type, MPI_Op op, int root, pb_comm_t *c);

/* Recursive doubling allreduce (any @op, rank order kept). */
int pb_coll_allreduce_recursive_doubling(const void *sendbuf, void *recvbuf, MPI_Count count,
                                         MPI_Datatype type, MPI_Op op, pb_comm_t *c);

/* Allreduce by reduce-scatter and allgather (Rabenseifner); needs what
 * pb_coll_reduce_rabenseifner needs. */
int pb_coll_allreduce_rabenseifner(const void *sendbuf, void *recvbuf, MPI_Count count,
                                   MPI_Datatype type, MPI_Op op, pb_comm_t *c);

/* Direct gather (Gather, Gatherv) of blocks @recv to @root. */
int pb_coll_gatherv_direct(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                           int root, pb_comm_t *c);

/* Direct scatter (Scatter, Scatterv) of blocks @send from @root. */
int pb_coll_scatterv_direct(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                            pb_comm_t *c);

/* Ring allgather (Allgather, Allgatherv) into blocks @recv. */
int pb_coll_allgatherv_ring(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                            pb_comm_t *c);

/* Recursive doubling allgather of equal blocks; needs a power of two
 * ranks. */
int pb_coll_allgather_recursive_doubling(const void *sendbuf, MPI_Count sendcount,
                                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                         MPI_Datatype recvtype, pb_comm_t *c);

/* Direct all-to-all (Alltoall, Alltoallv). */
int pb_coll_alltoallv_direct(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                             void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                             pb_comm_t *c);

/* Reduce_scatter by recursive halving, rank i's block @counts[i] of the
 * whole vector at @sendbuf; needs a commutative @op and 2 ranks or more. */
int pb_coll_reduce_scatter_halving(const void *sendbuf, void *recvbuf, const pb_coll_vec_t *counts,
                                   MPI_Datatype type, MPI_Op op, pb_comm_t *c);

/* Reduce_scatter by pairwise exchange; needs what
 * pb_coll_reduce_scatter_halving needs. */
int pb_coll_reduce_scatter_pairwise(const void *sendbuf, void *recvbuf, const pb_coll_vec_t *counts,
                                    MPI_Datatype type, MPI_Op op, pb_comm_t *c);

/* Recursive doubling inclusive (Scan) and exclusive (Exscan) scans, in
 * rank order. */
int pb_coll_scan_recursive_doubling(const void *sendbuf, void *recvbuf, MPI_Count count,
                                    MPI_Datatype type, MPI_Op op, pb_comm_t *c);
int pb_coll_exscan_recursive_doubling(const void *sendbuf, void *recvbuf, MPI_Count count,
                                      MPI_Datatype type, MPI_Op op, pb_comm_t *c);

#endif
