/*
 * Generalized requests (MPI_Grequest_start, MPI_Grequest_complete;
 * grequest.c): a request the program completes, whose status, freeing and
 * cancelling call the program's functions.  request.c hands a request of
 * kind PB_ENG_REQ_GREQ to the calls below where the standard says the
 * callbacks run.
 */
#ifndef PB_MPI_GREQUEST_H
#define PB_MPI_GREQUEST_H

#include "mpi/mpi_impl.h"

/* Finish the complete generalized request *@request for a wait or test:
 * its query function fills @status (a status of its own when @status is
 * MPI_STATUS_IGNORE), then its free function runs, then the request is
 * freed and *@request set to MPI_REQUEST_NULL.  @return the query
 * function's error, else the free function's (MPI_SUCCESS when both
 * succeeded); a failing query function's error is also the status's
 * MPI_ERROR. */
int pb_mpi_grequest_finish(MPI_Request *request, MPI_Status *status);

/* The status of the complete generalized request @r by its query function,
 * which runs again at each call (MPI_Request_get_status).  @return the
 * query function's error. */
int pb_mpi_grequest_status(MPI_Request r, MPI_Status *status);

/* MPI_Request_free of generalized request @r: its free function runs now
 * if it is complete (and @r is freed), else at MPI_Grequest_complete.
 * @return the free function's error, or MPI_SUCCESS. */
int pb_mpi_grequest_free(MPI_Request r);

/* MPI_Cancel of generalized request @r: its cancel function runs, told
 * whether MPI_Grequest_complete was called.  @return its error. */
int pb_mpi_grequest_cancel(MPI_Request r);

#endif
