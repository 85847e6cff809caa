/*
 * Reduction operations: the predefined ones on the types the standard
 * allows them on, and user operations (MPI_Op_create).
 */
#ifndef PB_MPI_OP_H
#define PB_MPI_OP_H

#include "mpi/datatype.h"

/* Check that @op may reduce elements of @type: MPI_SUCCESS, MPI_ERR_OP
 * (no such op, or a predefined op not defined on that type, e.g. MPI_BAND
 * on MPI_DOUBLE, MPI_MAXLOC on MPI_INT), MPI_ERR_TYPE (bad datatype). */
int pb_mpi_op_check(MPI_Op op, MPI_Datatype type);

/* Like pb_mpi_op_check for the one-sided accumulate calls, where
 * MPI_REPLACE and MPI_NO_OP are also allowed (on every basic kind). */
int pb_mpi_op_check_accumulate(MPI_Op op, MPI_Datatype type);

/* inout[i] = in[i] op inout[i] for @count elements of @type (the order of
 * the standard's MPI_Reduce_local).  Arguments checked by pb_mpi_op_check. */
void pb_mpi_op_apply(MPI_Op op, const void *in, void *inout, MPI_Count count, MPI_Datatype type);

/* inout[i] = in[i] op inout[i] for @n elements of basic @kind in the
 * kind's C layout, @op a predefined op (MPI_REPLACE and MPI_NO_OP too)
 * checked for @kind: the one-sided accumulates, which know the elements'
 * kind but not the program's datatype handle. */
void pb_mpi_op_apply_basic(MPI_Op op, pb_basic_t kind, const void *in, void *inout, size_t n);

/* A loop of a predefined op: inout[i] = in[i] op inout[i] for @n elements. */
typedef void pb_mpi_op_loop_t(const void *in, void *inout, size_t n);

/* The loop of the predefined @op on elements of basic @kind in the kind's
 * C layout, or NULL when there is none (@op not predefined, not defined on
 * @kind, or MPI_REPLACE / MPI_NO_OP, which the caller does itself). */
pb_mpi_op_loop_t *pb_mpi_op_loop(MPI_Op op, pb_basic_t kind);

/* 1 when @op is a predefined op (MPI_SUM ... MPI_REPLACE, MPI_NO_OP). */
int pb_mpi_op_is_predefined(MPI_Op op);

/* 1 when @op is commutative (every predefined op; a user op as created). */
int pb_mpi_op_is_commutative(MPI_Op op);

#endif
