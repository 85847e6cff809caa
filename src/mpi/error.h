/*
 * Error classes and codes (error.c) as the rest of the library reads them.
 */
#ifndef PB_MPI_ERROR_H
#define PB_MPI_ERROR_H

#include "mpi/mpi_impl.h"

/* The largest error class or code there is so far: the last predefined
 * one, or the last MPI_Add_error_class or _code handed out (the value of
 * the attribute MPI_LASTUSEDCODE). */
int pb_mpi_error_last_used(void);

#endif
