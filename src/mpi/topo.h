/*
 * Process topologies (MPI-5.0 chapter 8; docs/mpi.md, "Process
 * topologies"): the Cartesian, graph and distributed graph structure a
 * communicator may carry, made by MPI_Cart_create, MPI_Cart_sub,
 * MPI_Graph_create, MPI_Dist_graph_create(_adjacent), and copied by
 * MPI_Comm_dup.  The rank of a process in the new communicator is its
 * rank in the old one, except in a Cartesian one made with reorder, where
 * the ranks of a node are consecutive.
 *
 * Every topology also keeps its neighbours in the standard's order, which
 * the neighborhood collectives (coll_neighbor.c) use: a Cartesian rank's
 * in- and out-neighbours are, for each dimension d, its -1 then its +1
 * neighbour (MPI_PROC_NULL off a non-periodic edge); a graph rank's are
 * its edges, in the order given; a distributed graph rank's are its
 * sources and destinations.
 */
#ifndef PB_MPI_TOPO_H
#define PB_MPI_TOPO_H

#include "mpi/comm.h"

typedef struct pb_topo pb_topo_t;

/* The neighbours of a rank in its communicator's topology, in the
 * standard's order.  A message of a neighborhood collective to
 * out-neighbour j carries tag offset out_tag[j]; the one from in-neighbour
 * j carries in_tag[j].  The offsets are 0 except on a Cartesian topology,
 * where a message takes the offset of the direction it travels (2d toward
 * -1, 2d + 1 toward +1 in dimension d): a periodic dimension of 1 or 2
 * ranks has the same rank as both neighbours, and only the direction tells
 * which block a message fills. */
typedef struct {
    int indegree, outdegree;
    const int *sources;      /* indegree ranks, or MPI_PROC_NULL */
    const int *destinations; /* outdegree ranks, or MPI_PROC_NULL */
    const int *in_tag, *out_tag;
} pb_topo_neighbors_t;

/* The neighbours of this rank of @c (borrowed from @c's topology, valid
 * while @c lives).  @return MPI_SUCCESS; MPI_ERR_TOPOLOGY when @c has no
 * topology. */
int pb_mpi_topo_neighbors(const pb_comm_t *c, pb_topo_neighbors_t *neighbors_p);

/* A copy of @topo for a duplicate of its communicator (MPI_Comm_dup), in
 * *@copy_p (NULL for NULL).  @return MPI_SUCCESS; MPI_ERR_NO_MEM. */
int pb_mpi_topo_dup(const pb_topo_t *topo, pb_topo_t **copy_p);

/* Free @topo (NULL: nothing). */
void pb_mpi_topo_free(pb_topo_t *topo);

#endif
