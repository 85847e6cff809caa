/*
 * The MPI tool information interface, MPI_T (tools.c; docs/mpi.md, "The
 * tools interface (MPI_T)").
 *
 * Control variables: every POSTBOX_* tunable of the two tables (the RSM
 * layer's, src/util/config.c, then the MPI engine's,
 * src/mpi/engine/tunables.c), in their order, each described once more in
 * tools.c with what MPI_T adds (datatype, verbosity, category, scope, its
 * enumeration, whether a write is safe at run time).  A tunable tools.c does
 * not describe is not a control variable, which the test of the tools
 * interface (tests/python/test_mpi_mpit.py) reports.
 *
 * Performance variables: what the engine counts (engine/stats.h: messages
 * and bytes per protocol, the unexpected queue, time spent waiting) and the
 * collectives' algorithm counts (coll_table.h).
 *
 * Events (tools_event.c): the unexpected messages and the collectives'
 * algorithm runs; one time source, the process's monotonic clock in
 * nanoseconds.
 *
 * Every MPI_T_ function takes one mutex: any thread may call them at any
 * time, before MPI_Init and after MPI_Finalize too.  They return their
 * error codes (MPI_T_ERR_*) and never call an error handler, as the
 * standard says.
 */
#ifndef PB_MPI_TOOLS_H
#define PB_MPI_TOOLS_H

/* The count of a control variable of type MPI_CHAR: its buffer holds this
 * many chars, the terminating null included; a longer value (a path in
 * the environment) is read cut to it. */
#define PB_MPI_T_STRING_MAX 4096

#endif
