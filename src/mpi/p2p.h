/*
 * Point-to-point messaging over the channels (docs/mpi.md, "The engine"):
 * requests, matching, the eager and rendezvous protocols, progress and
 * waiting.  The collectives and the communicator constructors use the
 * calls below, on a communicator's collective context.
 */
#ifndef PB_MPI_P2P_H
#define PB_MPI_P2P_H

#include "mpi/comm.h"
#include "mpi/datatype.h"

/* Start a send (standard mode) or a receive on @comm's collective context
 * (@coll = 1) or its point-to-point one (0).  Arguments are not checked:
 * the caller did.  @return MPI_SUCCESS or an error class. */
int pb_mpi_isend_on(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                    pb_comm_t *comm, int coll, MPI_Request *request);
int pb_mpi_irecv_on(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                    pb_comm_t *comm, int coll, MPI_Request *request);

/* Wait for and free @count requests (MPI_Waitall without error handler
 * calls).  @return MPI_SUCCESS or the first error. */
int pb_mpi_wait_requests(int count, MPI_Request requests[]);

/* Set up and tear down the engine (MPI_Init, MPI_Finalize). */
int pb_mpi_p2p_init(void);
void pb_mpi_p2p_finalize(void);

#endif
