/*
 * Partitioned point-to-point communication (MPI_Psend_init,
 * MPI_Precv_init, MPI_Pready*, MPI_Parrived; part.c; docs/mpi.md,
 * "Partitioned communication").  A partitioned request is a persistent
 * request of kind PB_ENG_REQ_PSEND or PB_ENG_REQ_PRECV (engine.h), made
 * inactive; request.c starts, completes and frees it through the calls
 * below.
 */
#ifndef PB_MPI_PART_H
#define PB_MPI_PART_H

#include "mpi/mpi_impl.h"

/* Start the inactive partitioned request @r (MPI_Start): a send waits for
 * MPI_Pready of its partitions, a receive posts the receives of its
 * partitions once its sender is known. */
void pb_mpi_part_start(MPI_Request r);

/* The engine stops (MPI_Finalize, the last MPI_Session_finalize): the
 * partitioned requests the program freed while their setup was still
 * under way go, and no list survives into a later start (requests still
 * active, an erroneous program's, are forgotten). */
void pb_mpi_part_finalize(void);

/* Let go of the state of partitioned request @r (inactive), which the
 * program freed: what the library still owes its peer (the matching
 * message) completes in the background. */
void pb_mpi_part_free(MPI_Request r);

/* What went wrong with the complete partitioned receive @r, for the error's
 * message. */
const char *pb_mpi_part_failure(MPI_Request r);

#endif
