/*
 * Intercommunicators (intercomm.c): how they are made and agree on
 * contexts, and their blocking collectives, which coll.c calls when the
 * communicator is one.
 *
 * The collectives follow the standard's definitions for
 * intercommunicators: a rooted one moves data between the root (MPI_ROOT)
 * and every process of the other group (its own group passes
 * MPI_PROC_NULL and takes no part); the others move data between the two
 * groups, each group's result made of the other group's data.  Each runs
 * over point-to-point on the intercommunicator's collective context
 * (directly between the processes, or between the two groups' rank 0, the
 * leaders) and the point-to-point algorithms of coll_p2p.h on each local
 * group.  MPI_IN_PLACE is not allowed on an intercommunicator
 * (MPI_ERR_BUFFER).  Each returns MPI_SUCCESS or an error class.  The
 * nonblocking and persistent ones are the same algorithms as schedules
 * (nbc.c).
 */
#ifndef PB_MPI_INTERCOMM_H
#define PB_MPI_INTERCOMM_H

#include "mpi/coll_util.h"
#include "mpi/comm.h"

/* Agree with every process of intercommunicator @c (both groups) on a
 * context id none of them uses, in *@context_p; the new communicator uses
 * it and the next, its local groups the two after.  Collective over @c.
 * @return MPI_SUCCESS or an error class. */
int pb_mpi_inter_agree_context(pb_comm_t *c, uint32_t *context_p);

/* The agreement of one group of a new intercommunicator whose other group
 * is reached by @leader alone: every process of @group proposes its next
 * free context id, @leader gets the largest and calls @exchange(&id, @arg)
 * to trade it for the other group's (or fail with an error class), and
 * the group learns the larger of the two, in *@context_p, or the error.
 * The new communicator uses the id and the next, its local groups the two
 * after.  Collective over @group.  @return MPI_SUCCESS or an error class
 * (the exchange's, at every process). */
typedef int (*pb_mpi_leader_exchange_func_t)(uint32_t *mine_theirs, void *arg);
int pb_mpi_group_agree_context(pb_comm_t *group, int leader, pb_mpi_leader_exchange_func_t exchange,
                               void *arg, uint32_t *context_p);

/* MPI_Comm_split of intercommunicator @c (@func the name called): each
 * group splits by @color and @key, and the processes of one color in both
 * groups make a new intercommunicator; a process whose color is
 * MPI_UNDEFINED, or has no process of its color in the other group, gets
 * MPI_COMM_NULL.  @return MPI_SUCCESS or the error raised. */
int pb_mpi_intercomm_split(pb_comm_t *c, const char *func, int color, int key, MPI_Comm *newcomm);

/* Store in *@out a new group of the @n world ranks @world (copied), of
 * @session (or NULL), for @func.  @return MPI_SUCCESS or the raised
 * MPI_ERR_NO_MEM.  (group.c; group.h's pb_mpi_group_make raises nothing) */
int pb_mpi_group_from_world(int n, const int *world, void *session, const char *func,
                            MPI_Group *out);

int pb_coll_inter_barrier(pb_comm_t *c);
int pb_coll_inter_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c);
int pb_coll_inter_gatherv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype, int root,
                          pb_comm_t *c);
int pb_coll_inter_scatterv(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                           pb_comm_t *c);
/* Every process gets the block of each process of the other group. */
int pb_coll_inter_allgatherv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                             pb_comm_t *c);
/* Block j of each process goes to process j of the other group. */
int pb_coll_inter_alltoallv(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                            void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                            pb_comm_t *c);
/* The root gets the reduction of the other group's @sendbuf. */
int pb_coll_inter_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                         MPI_Op op, int root, pb_comm_t *c);
/* Every process gets the reduction of the other group's @sendbuf. */
int pb_coll_inter_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                            MPI_Op op, pb_comm_t *c);
/* The reduction of the other group's vectors of @total elements (the sum
 * of @counts, one per process of this group) is scattered over this
 * group, process i getting its @counts[i] elements. */
int pb_coll_inter_reduce_scatter(const void *sendbuf, void *recvbuf, const pb_coll_vec_t *counts,
                                 MPI_Count total, MPI_Datatype type, MPI_Op op, pb_comm_t *c);

#endif
