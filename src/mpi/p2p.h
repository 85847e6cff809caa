/*
 * Point-to-point for the API files (p2p.c, request.c, bsend.c), over the
 * engine (engine/engine.h).  The collectives and the communicator
 * constructors use the calls below, on a communicator's collective
 * context.
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

/* The blocking send of @count elements of @t (checked) to @dest of @c in
 * @mode that is not a short contiguous one (p2p_fast.h): packed into a
 * postbox when short, else through a request it waits for.  @return
 * MPI_SUCCESS, or the error raised by @func. */
int pb_mpi_send_wait(const char *func, const void *buf, MPI_Count count, pb_datatype_t *t, int dest,
                     int tag, pb_comm_t *c, int mode);

/* @c is being freed: wait until the messages through its buffer of
 * MPI_Comm_attach_buffer went, then forget the buffer (bsend.c). */
void pb_mpi_bsend_comm_free(pb_comm_t *c);

/* The buffer calls of session @session (valid; errors raised through its
 * handler), for the communicators made from its groups (bsend.c):
 * MPI_Session_attach_buffer (MPI_SUCCESS; MPI_ERR_BUFFER: one attached
 * already, NULL; MPI_ERR_COUNT; MPI_ERR_NO_MEM), _detach_buffer once its
 * messages went (MPI_ERR_BUFFER: none attached; MPI_ERR_ARG), _flush_buffer
 * (waits), _iflush_buffer (a request that completes then; MPI_ERR_ARG,
 * MPI_ERR_NO_MEM), and the session's end (MPI_Session_finalize: waits for
 * its messages, forgets the buffer). */
int pb_mpi_bsend_session_attach(MPI_Session session, void *buffer, MPI_Count size);
int pb_mpi_bsend_session_detach(MPI_Session session, void *buffer_addr, MPI_Count *size);
void pb_mpi_bsend_session_flush(MPI_Session session);
int pb_mpi_bsend_session_iflush(MPI_Session session, MPI_Request *request);
void pb_mpi_bsend_session_end(MPI_Session session);

/* The engine stops: every buffer's messages go out, the communicators' and
 * sessions' buffer records go (the process's buffer stays attached), and
 * waiting flush requests complete (bsend.c). */
void pb_mpi_bsend_finalize(void);

/* Start the inactive persistent send or receive @r (MPI_Start): a
 * buffered send copies its data out (and is complete), the others start
 * in the engine.  @return MPI_SUCCESS, or the error raised by @func
 * (MPI_ERR_BUFFER: the attached buffer has no room). */
int pb_mpi_p2p_start(const char *func, MPI_Request r);

/* Send a copy of @count elements of @t (checked) at @buf to world rank
 * @world (PB_ENG_PROC_NULL: nothing) of @c in the background, accounted
 * against the attached buffer (bsend.c).  @return MPI_SUCCESS, or the
 * error raised by @func (MPI_ERR_BUFFER: no room). */
int pb_mpi_bsend_copy(const char *func, const void *buf, MPI_Count count, pb_datatype_t *t,
                      int world, int tag, pb_comm_t *c);

/* Whether @r is a live request (request.c): the handle registry's
 * look-up (engine/handle.h).  Never dereferences a predefined value. */
int pb_mpi_request_valid(MPI_Request r);

/* The program no longer names @r: drop its communicator (the engine may
 * still complete it). */
void pb_mpi_request_let_go(MPI_Request r);

/* Let a request go for good: its communicator, then the engine's part,
 * which retires its handle and integer (request.c). */
void pb_mpi_request_release(MPI_Request r);

/* Store the status of complete request @r of communicator @c into
 * @status (MPI_STATUS_IGNORE: nothing); the sender's world rank becomes
 * its rank in @c. */
void pb_mpi_status_store(MPI_Status *status, MPI_Request r, const pb_comm_t *c);

/* Store the empty status (MPI_STATUS_IGNORE: nothing). */
void pb_mpi_status_empty(MPI_Status *status);

#endif
