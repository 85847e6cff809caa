/*
 * Groups (group.c) as the other parts of the library use them: the
 * sessions' process sets and MPI_Comm_create_from_group.
 */
#ifndef PB_MPI_GROUP_H
#define PB_MPI_GROUP_H

#include "mpi/mpi_impl.h"

/* The members of group @handle: how many in *@size_p, their world ranks
 * in group order in *@world_p (NULL for none; owned by the group), this
 * process's rank in it (or MPI_UNDEFINED) in *@rank_p.  Raises nothing.
 * @return 1, or 0 when @handle is no group (MPI_GROUP_NULL, freed, made
 * up). */
int pb_mpi_group_members(MPI_Group handle, int *size_p, const int **world_p, int *rank_p);

/* Store in *@out a new group of the @n world ranks @world (copied), of
 * @session (NULL: none).  Raises nothing.  @return MPI_SUCCESS, or
 * MPI_ERR_NO_MEM. */
int pb_mpi_group_make(int n, const int *world, void *session, MPI_Group *out);

/* The session group @handle came from (a process set, or a group or
 * communicator made from one), or NULL (none, or not a group). */
void *pb_mpi_group_session(MPI_Group handle);

/* MPI_Comm_split_type's color for MPI_COMM_TYPE_RESOURCE_GUIDED with
 * process set @name (session.c): one color per set (each process its own
 * for mpi://SELF), the same in every process; MPI_UNDEFINED when world
 * rank @world_rank is not in the set or no set has that name. */
int pb_mpi_pset_color(const char *name, int world_rank);

#endif
