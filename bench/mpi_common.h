/*
 * What the MPI bench programs (mpi_p2p, mpi_coll, mpi_rma) share: the
 * options that say what their records describe (--library, --transport,
 * --placement, --nodes, --path, --path-how, --round, --no-check), the --tests list,
 * the library's identity (MPI_Get_library_version), the job's shape (ranks
 * on rank 0's host, the CPUs rank 0 may use) and the record keys that come
 * from them, the thread support levels by name and MPI initialisation at
 * one of them (mpi_p2p's --thread-level).  Written to the standard MPI C API
 * only, like the programs.
 */
#ifndef PB_BENCH_MPI_COMMON_H
#define PB_BENCH_MPI_COMMON_H

#include <mpi.h>

#include "engine.h"

#include <stdbool.h>
#include <stdint.h>

/* One program's identity and job shape, the same on every rank but
 * host_ranks and cores (rank 0's). */
typedef struct {
    const char *prog; /* "mpi_p2p": the prefix of messages */
    const char *library, *transport, *placement;
    const char *path, *path_how; /* on-node or network, and how it was forced */
    int nodes;
    int round;           /* which of several runs of the same figures (--round), or -1 */
    bool check;          /* verify results (--no-check: false) */
    int thread_required; /* --thread-level: the level asked of MPI_Init_thread, or -1
                          * (MPI_Init) */
    int thread_provided; /* the level the library granted (MPI_Query_thread) */
    int cores;           /* CPUs the ranks of rank 0's host may run on, together */
    int host_ranks;      /* ranks on rank 0's host */
    char version[256];   /* first line of MPI_Get_library_version */
} pb_mpi_bench_t;

/* The defaults of @prog: transport shm, placement and path on-node, one
 * node, checks on. */
#define PB_MPI_BENCH_INIT(prog_name)                                                               \
    {                                                                                              \
        .prog = (prog_name), .transport = "shm", .placement = "on-node", .path = "on-node",        \
        .nodes = 1, .round = -1, .check = true, .thread_required = -1                              \
    }

/*
 * Whether argv[*@i] is the option @name, as "--name VALUE" or "--name=VALUE".
 * @return 1 with *@val_p set (and *@i past a separate value), 0 when it is
 * another argument, -1 when the option has no value (a message was printed).
 */
int pb_mpi_bench_option_value(const char *prog, const char *name, int argc, char **argv, int *i,
                              const char **val_p);

/*
 * Whether argv[*@i] is one of the @n options @names that take a value (as
 * pb_mpi_bench_option_value).
 * @return 1 with *@which_p its index in @names and *@val_p its value (*@i
 * past a separate value), 0 when it is none of them, -1 when it has no
 * value (a message was printed).
 */
int pb_mpi_bench_option_in(const char *prog, const char *const *names, unsigned n, int argc,
                           char **argv, int *i, unsigned *which_p, const char **val_p);

/*
 * Take argv[*@i] when it is one of the common options (--library,
 * --transport, --placement, --nodes, --path, --path-how, --round,
 * --no-check).
 * @return 1 when taken (*@i past its value), 0 when it is not one, -1 on a
 * bad value (a message was printed).
 */
int pb_mpi_bench_option(pb_mpi_bench_t *b, int argc, char **argv, int *i);

/*
 * A program's own options: take them and the common ones
 * (pb_mpi_bench_option) out of @argv, keep argv[0] and the others (the
 * engine's) in order and NULL after them.
 * @return how many are left, or -1 on a bad option (a message was printed).
 */
typedef int (*pb_mpi_bench_own_func_t)(int argc, char **argv);

/*
 * The command line of an MPI bench program: a copy of @argc/@argv (MPI_Init
 * gets the original) through the program's @own options, then the engine's
 * (pb_bench_opts_parse into @opts; --help prints @what and @example).
 * @return -1 to go on, else the exit status: 0 after --help, 2 on a bad
 * option, 1 when out of memory.
 */
int pb_mpi_bench_args(int argc, char **argv, pb_mpi_bench_own_func_t own, pb_bench_opts_t *opts,
                      const char *what, const char *example);

/*
 * The end of a run, on every rank of @comm: the rank that wrote the records
 * (@writer) prints "@marker @status" (every record is written: a runner
 * may end a job that then hangs in MPI_Finalize), then the ranks agree on
 * the largest status.  @return that status.  Collective over @comm.
 */
int pb_mpi_bench_done(const char *marker, bool writer, int status, MPI_Comm comm);

/*
 * Parse --tests @list ("a,b") against the @n names @names into @selected
 * (true for each listed, false for the others).  @return 0, or -1 on an
 * unknown name (the known ones are printed) or an empty list.
 */
int pb_mpi_bench_select(const char *prog, const char *list, const char *const *names, unsigned n,
                        bool *selected);

/*
 * The thread support level named @name (single, funneled, serialized,
 * multiple: --thread-level's values) into *@level (MPI_THREAD_SINGLE ...).
 * @return 0, or -1 on another name (nothing printed).
 */
int pb_mpi_bench_thread_level_parse(const char *name, int *level);

/* The short name of thread support level @level ("multiple"), or
 * "unknown". */
const char *pb_mpi_bench_thread_level_name(int level);

/*
 * Initialise MPI: MPI_Init_thread at @b->thread_required when it is set
 * (--thread-level), else MPI_Init; then @b->thread_provided from
 * MPI_Query_thread.  @return 0, or 3 when the library granted less than
 * was asked: rank 0 then printed both levels, and the caller should
 * MPI_Finalize and exit with that status.
 */
int pb_mpi_bench_init(pb_mpi_bench_t *b, int *argc, char ***argv);

/* Whether the launcher's environment says this process is not rank 0
 * (before MPI_Init: only rank 0 forks the probe helper). */
bool pb_mpi_bench_env_not_rank0(void);

/* Fill @b->version from MPI_Get_library_version (its first line, blanks
 * collapsed) and, without --library, guess @b->library from it. */
void pb_mpi_bench_identity(pb_mpi_bench_t *b);

/* Fill @b->host_ranks (ranks whose MPI_Get_processor_name is rank 0's) and
 * @b->cores (the CPUs those ranks may run on, together) on rank 0;
 * collective over @comm.  Aborts when out of memory. */
void pb_mpi_bench_job_shape(pb_mpi_bench_t *b, MPI_Comm comm);

/* Whether more ranks share rank 0's host than it has CPUs. */
bool pb_mpi_bench_oversubscribed(const pb_mpi_bench_t *b);

/* Busy work for about @ns nanoseconds without any MPI call (the library
 * progresses alone, as in IMB-NBC's CPU exploitation); @return the time it
 * took in nanoseconds. */
uint64_t pb_mpi_bench_compute_for(uint64_t ns);

/* Add library_version, path, path_how (when given), round (when given)
 * and oversubscribed to @rec, in that order. */
void pb_mpi_bench_record_identity(pb_bench_record_t *rec, const pb_mpi_bench_t *b);

#endif /* PB_BENCH_MPI_COMMON_H */
