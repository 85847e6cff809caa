/*
 * Info objects (info.c) as the other parts of the library read them: the
 * argument check of a call that takes an MPI_Info, and a key's value.
 */
#ifndef PB_MPI_INFO_H
#define PB_MPI_INFO_H

#include "mpi/mpi_impl.h"

/* Check @info, argument of @func: a live info, MPI_INFO_ENV, or
 * MPI_INFO_NULL when @null_ok.  @return MPI_SUCCESS, or MPI_ERR_INFO raised
 * on @comm. */
int pb_mpi_info_check(MPI_Comm comm, MPI_Info info, int null_ok, const char *func);

/* 1 when @info is a live info object or MPI_INFO_ENV (no error raised:
 * for the tools interface, whose calls never call an error handler). */
int pb_mpi_info_valid(MPI_Info info);

/* The value of @key in @info (checked), or NULL when @info is
 * MPI_INFO_NULL or lacks @key.  The string lives until the key is set,
 * deleted or the info freed. */
const char *pb_mpi_info_value(MPI_Info info, const char *key);

#endif
