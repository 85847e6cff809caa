/*
 * What every source of libmpi_abi.so.1 shares.
 *
 * Each MPI function is defined once, under its profiling name PMPI_<name>,
 * and exported; MPI_<name> is a weak alias of it, so a profiling library
 * (or the program) may define MPI_<name> itself and call PMPI_<name>.
 * The library is built with hidden visibility: only the PMPI_ definitions
 * (PB_EXPORT) and the MPI_ aliases leave it.
 */
#ifndef PB_MPI_IMPL_H
#define PB_MPI_IMPL_H

#include <mpi.h>
#include <stdint.h>

#include "mpi/engine/lock.h" /* PB_MPI_THREAD_GUARD */
#include "util/compiler.h"

/* Make @mpi_name (MPI_X) a weak, exported alias of @pmpi_name (PMPI_X),
 * which must be defined above in the same file.  Both names are written out
 * so that grep finds each one. */
#define PB_MPI_WEAK_ALIAS(mpi_name, pmpi_name)                                                     \
    extern __typeof__(pmpi_name) mpi_name                                                          \
        __attribute__((weak, alias(#pmpi_name), visibility("default")))

/* Raise error @code (an error class) found by MPI function @func (its
 * standard name, "MPI_Send") on @comm, with a message saying what was
 * wrong.  @comm is the communicator the call concerns; MPI_COMM_NULL for a
 * call that concerns none (datatype, op, request calls), whose errors go to
 * MPI_COMM_SELF's handler as the standard says.  Under MPI_ERRORS_ARE_FATAL
 * (the default) and MPI_ERRORS_ABORT it prints "postbox mpi: <func>: <class
 * message>: <message>" and ends the job; under MPI_ERRORS_RETURN it returns
 * @code.  MPI_SUCCESS is returned at once.  (comm.c, beside the
 * communicators' error handlers) */
int pb_mpi_raise(MPI_Comm comm, int code, const char *func, const char *fmt, ...) PB_PRINTF(4, 5);

/* Print "postbox mpi: rank R: <func>: <class message>: <message>" for
 * error @code and end the job, whatever handler is set (a window's
 * MPI_ERRORS_ARE_FATAL).  Does not return.  (comm.c) */
void pb_mpi_fatal(int code, const char *func, const char *fmt, ...) PB_PRINTF(3, 4)
    __attribute__((noreturn));

/* 1 while the engine runs: between MPI_Init and MPI_Finalize, or while a
 * session is live (comm.h, pb_mpi_instance_start). */
int pb_mpi_active(void);

/* The thread level the program asked MPI_Init_thread for
 * (MPI_THREAD_SINGLE for MPI_Init). */
int pb_mpi_thread_requested(void);

/* The library's part of MPI_Status (the 5 MPI_internal ints): the byte
 * count of the message (64 bits in two ints) and the cancelled flag. */
static inline void pb_mpi_status_set_bytes(MPI_Status *status, uint64_t bytes)
{
    status->MPI_internal[0] = (int)(uint32_t)bytes;
    status->MPI_internal[1] = (int)(uint32_t)(bytes >> 32);
}

static inline uint64_t pb_mpi_status_bytes(const MPI_Status *status)
{
    return (uint64_t)(uint32_t)status->MPI_internal[0] | (uint64_t)(uint32_t)status->MPI_internal[1]
                                                             << 32;
}

static inline void pb_mpi_status_set_cancelled(MPI_Status *status, int cancelled)
{
    status->MPI_internal[2] = cancelled;
}

static inline int pb_mpi_status_cancelled(const MPI_Status *status)
{
    return status->MPI_internal[2];
}

#endif
