/*
 * Collectives that know the node (coll_node.c: the area; coll_node_local.c:
 * on one node; coll_node_nodes.c: these entry points and across nodes;
 * docs/mpi.md, "Collectives on a node"): Sun MPI's design, where the
 * ranks of a communicator on one node exchange through one shared-memory
 * area, and one leader per node does the step between nodes over
 * point-to-point.
 *
 * Each pb_coll_node_<x> either runs the collective and returns MPI_SUCCESS
 * or an MPI error class, or returns PB_COLL_NODE_DECLINED, having done
 * nothing, when the node path does not apply (one rank per node, the area
 * could not be made, a layout or size it does not take); the caller then
 * runs a point-to-point algorithm.  Every rank of the communicator declines
 * or not alike: the decision reads only what the standard requires to be
 * the same on all of them (the communicator, the counts and datatypes'
 * sizes of the collective, the root, the op).
 */
#ifndef PB_MPI_COLL_NODE_H
#define PB_MPI_COLL_NODE_H

#include "mpi/coll_table.h"
#include "mpi/comm.h"

#define PB_COLL_NODE_DECLINED (-1)

int pb_coll_node_barrier(pb_comm_t *c);
/* @alg: PB_ALG_NODE (through the area's cells, on any layout),
 * PB_ALG_NODE_CMA (each node's ranks read the root's, or their leader's,
 * buffer) or PB_ALG_NODE_AUTO (on one node whose ranks can read each
 * other: the cells or single copy, whichever the node's recent trials
 * found faster; elsewhere the cells). */
int pb_coll_node_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c,
                       pb_coll_alg_t alg);
/* @alg: PB_ALG_NODE (each node's ranks combine through the cells) or
 * PB_ALG_NODE_CMA (they read each other's buffers); the leaders combine
 * the nodes' results over point-to-point. */
int pb_coll_node_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                        MPI_Op op, int root, pb_comm_t *c, pb_coll_alg_t alg);
int pb_coll_node_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                           MPI_Op op, pb_comm_t *c, pb_coll_alg_t alg);
/* The rooted and all-to-all data movers, for equal blocks (the plain
 * MPI_Gather, MPI_Scatter, MPI_Allgather, MPI_Alltoall; MPI_IN_PLACE as
 * the standard places it), on a communicator within one node, or across
 * nodes whose ranks are consecutive (@alg PB_ALG_NODE; Alltoall: equally
 * many on each node; a node's blocks fitting a cell); @alg
 * PB_ALG_NODE moves blocks that fit a cell through the cells,
 * PB_ALG_NODE_CMA lets each rank read its blocks from the others' buffers
 * (one kernel copy; not Alltoall in place); PB_ALG_NODE_AUTO (Scatter)
 * takes whichever of the two the node's recent trials found faster, on
 * one node whose ranks can read each other and where the blocks fit a
 * cell (else the one that can).  Allgather across nodes of
 * equally many ranks that can read each other's memory, by
 * PB_ALG_NODE_CMA (and by PB_ALG_NODE for blocks of 256 KiB or more):
 * the ranks of the same local index swap their blocks across the nodes,
 * then read the rest from their node's ranks by single copy. */
int pb_coll_node_gather(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                        pb_comm_t *c, pb_coll_alg_t alg);
int pb_coll_node_scatter(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                         pb_comm_t *c, pb_coll_alg_t alg);
int pb_coll_node_allgather(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, pb_comm_t *c,
                           pb_coll_alg_t alg);
int pb_coll_node_alltoall(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, pb_comm_t *c,
                          pb_coll_alg_t alg);

/* Give back @c's area (MPI_Comm_free: collective; waits until every rank
 * of the node is done reading it).  Nothing when it has none. */
void pb_coll_node_release(pb_comm_t *c);

/* Give back every area and node state still held (MPI_Finalize, before
 * the engine stops). */
void pb_coll_node_finalize(void);

/* The collectives of coll.c as the table chooses them, which the leaders
 * run among themselves between nodes (their communicator has one rank per
 * node, so they are point-to-point; counted like the program's).
 * @return MPI_SUCCESS or an error class. */
int pb_coll_p2p_barrier(pb_comm_t *c);
int pb_coll_p2p_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c);
int pb_coll_p2p_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                       MPI_Op op, int root, pb_comm_t *c);
int pb_coll_p2p_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                          MPI_Op op, pb_comm_t *c);

/* The library's own agreement over @c (not counted as a collective):
 * @all[i] = the least of every rank's @mine[i], i < @count.  @return
 * MPI_SUCCESS or an error class. */
int pb_coll_agree_min(const int *mine, int *all, int count, pb_comm_t *c);

#endif
