/*
 * The MPI bench programs' shared options, identity and job shape (see
 * mpi_common.h).
 */
#include "mpi_common.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pb_mpi_bench_option_value(const char *prog, const char *name, int argc, char **argv, int *i,
                              const char **val_p)
{
    const char *a = argv[*i], *val;
    size_t len = strlen(name);

    if (strncmp(a, name, len) != 0 || (a[len] != '\0' && a[len] != '='))
        return 0;
    val = a[len] == '=' ? a + len + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
    if (val == NULL || *val == '\0') {
        fprintf(stderr, "%s: %s needs a value\n", prog, name);
        return -1;
    }
    *val_p = val;
    return 1;
}

int pb_mpi_bench_option_in(const char *prog, const char *const *names, unsigned n, int argc,
                           char **argv, int *i, unsigned *which_p, const char **val_p)
{
    for (unsigned k = 0; k < n; k++) {
        int found = pb_mpi_bench_option_value(prog, names[k], argc, argv, i, val_p);

        if (found != 0) {
            *which_p = k;
            return found;
        }
    }
    return 0;
}

/* The value @val of option @name, a whole number from @least to 10^6, into
 * *@out.  @return 1, or -1 with a message. */
static int parse_count(const pb_mpi_bench_t *b, const char *name, const char *val, long least,
                       int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(val, &end, 10);
    if (errno != 0 || *end != '\0' || v < least || v > 1000000) {
        fprintf(stderr, "%s: bad %s '%s'\n", b->prog, name, val);
        return -1;
    }
    *out = (int)v;
    return 1;
}

int pb_mpi_bench_option(pb_mpi_bench_t *b, int argc, char **argv, int *i)
{
    static const char *const with_arg[] = {"--library", "--transport", "--placement", "--nodes",
                                           "--path",    "--path-how",  "--round"};
    const char *val = NULL;
    unsigned k = 0;
    int found;

    if (strcmp(argv[*i], "--no-check") == 0) {
        b->check = false;
        return 1;
    }
    found = pb_mpi_bench_option_in(b->prog, with_arg, sizeof(with_arg) / sizeof(with_arg[0]), argc,
                                   argv, i, &k, &val);
    if (found <= 0)
        return found;
    switch (k) {
    case 0: b->library = val; break;
    case 1: b->transport = val; break;
    case 2: b->placement = val; break;
    case 3: return parse_count(b, with_arg[k], val, 1, &b->nodes);
    case 4:
        if (strcmp(val, "on-node") != 0 && strcmp(val, "network") != 0) {
            fprintf(stderr, "%s: bad --path '%s' (on-node or network)\n", b->prog, val);
            return -1;
        }
        b->path = val;
        break;
    case 5: b->path_how = val; break;
    default: return parse_count(b, with_arg[k], val, 0, &b->round);
    }
    return 1;
}

int pb_mpi_bench_args(int argc, char **argv, pb_mpi_bench_own_func_t own, pb_bench_opts_t *opts,
                      const char *what, const char *example)
{
    /* the parsers reorder their copy; the values they keep point into the
     * strings of @argv, not into the copy */
    char **args = calloc((size_t)argc + 1, sizeof(*args));
    int nargs, status = -1;

    if (args == NULL)
        return 1;
    memcpy(args, argv, (size_t)argc * sizeof(*args));
    nargs = own(argc, args);
    if (nargs < 0)
        status = 2;
    else
        switch (pb_bench_opts_parse(opts, nargs, args, what, example)) {
        case 1: status = 0; break;
        case -1: status = 2; break;
        default: break;
        }
    free(args);
    return status;
}

int pb_mpi_bench_done(const char *marker, bool writer, int status, MPI_Comm comm)
{
    if (writer) {
        printf("%s %d\n", marker, status);
        fflush(stdout);
    }
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, comm);
    return status;
}

int pb_mpi_bench_select(const char *prog, const char *list, const char *const *names, unsigned n,
                        bool *selected)
{
    char buf[512], *save = NULL;
    bool any = false;

    if (strlen(list) >= sizeof(buf))
        return -1;
    strcpy(buf, list);
    for (unsigned t = 0; t < n; t++)
        selected[t] = false;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned t;

        for (t = 0; t < n && strcmp(names[t], tok) != 0; t++)
            ;
        if (t == n) {
            fprintf(stderr, "%s: unknown test '%s'; tests:", prog, tok);
            for (t = 0; t < n; t++)
                fprintf(stderr, " %s", names[t]);
            fputc('\n', stderr);
            return -1;
        }
        selected[t] = any = true;
    }
    return any ? 0 : -1;
}

/* --thread-level's names, by level (the MPI constants are ordered:
 * SINGLE < FUNNELED < SERIALIZED < MULTIPLE). */
static const struct {
    const char *name, *mpi_name;
    int level;
} thread_levels[] = {
    {"single", "MPI_THREAD_SINGLE", MPI_THREAD_SINGLE},
    {"funneled", "MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED},
    {"serialized", "MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED},
    {"multiple", "MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE},
};

#define NLEVELS (sizeof(thread_levels) / sizeof(thread_levels[0]))

int pb_mpi_bench_thread_level_parse(const char *name, int *level)
{
    for (unsigned k = 0; k < NLEVELS; k++)
        if (strcmp(name, thread_levels[k].name) == 0) {
            *level = thread_levels[k].level;
            return 0;
        }
    return -1;
}

const char *pb_mpi_bench_thread_level_name(int level)
{
    for (unsigned k = 0; k < NLEVELS; k++)
        if (thread_levels[k].level == level)
            return thread_levels[k].name;
    return "unknown";
}

/* "MPI_THREAD_MULTIPLE" for @level, or "an unknown level". */
static const char *thread_level_mpi_name(int level)
{
    for (unsigned k = 0; k < NLEVELS; k++)
        if (thread_levels[k].level == level)
            return thread_levels[k].mpi_name;
    return "an unknown level";
}

int pb_mpi_bench_init(pb_mpi_bench_t *b, int *argc, char ***argv)
{
    int rank = 0;

    if (b->thread_required < 0)
        MPI_Init(argc, argv);
    else
        MPI_Init_thread(argc, argv, b->thread_required, &b->thread_provided);
    /* MPI_Init's level is the library's choice: ask in both cases */
    MPI_Query_thread(&b->thread_provided);
    if (b->thread_required < 0 || b->thread_provided >= b->thread_required)
        return 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        fprintf(stderr,
                "%s: --thread-level %s: asked MPI_Init_thread for %s, the library granted %s "
                "only; nothing measured (exit 3)\n",
                b->prog, pb_mpi_bench_thread_level_name(b->thread_required),
                thread_level_mpi_name(b->thread_required),
                thread_level_mpi_name(b->thread_provided));
    return 3;
}

bool pb_mpi_bench_env_not_rank0(void)
{
    static const char *const vars[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                       "POSTBOX_RANK"};

    for (unsigned i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);

        if (v != NULL && *v != '\0')
            return strcmp(v, "0") != 0;
    }
    return false;
}

void pb_mpi_bench_identity(pb_mpi_bench_t *b)
{
    char full[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    size_t n = 0;

    MPI_Get_library_version(full, &len);
    full[len < MPI_MAX_LIBRARY_VERSION_STRING ? (len > 0 ? len : 0)
                                              : MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
    /* the first line, blanks collapsed ("MPICH Version:\t4.0.2") */
    for (const char *p = full; *p != '\0' && *p != '\n' && *p != '\r'; p++) {
        bool blank = *p == ' ' || *p == '\t';

        if (n + 1 >= sizeof(b->version))
            break;
        if (blank && (n == 0 || b->version[n - 1] == ' '))
            continue;
        b->version[n++] = blank ? ' ' : *p;
    }
    while (n > 0 && b->version[n - 1] == ' ')
        n--;
    b->version[n] = '\0';
    if (b->library == NULL)
        b->library = strstr(full, "Open MPI") != NULL  ? "openmpi"
                     : strstr(full, "MPICH") != NULL   ? "mpich"
                     : strstr(full, "Postbox") != NULL ? "postbox"
                                                       : "unknown";
}

void pb_mpi_bench_job_shape(pb_mpi_bench_t *b, MPI_Comm comm)
{
    /* each rank's host and the CPUs it may run on */
    typedef struct {
        char name[MPI_MAX_PROCESSOR_NAME];
        cpu_set_t cpus;
    } where_t;
    where_t mine, *all = NULL;
    cpu_set_t host_cpus;
    int len = 0, rank = 0, ranks = 0;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    memset(&mine, 0, sizeof(mine));
    /* MPI_Get_processor_name: MPIR_CVAR_NOLOCAL and the like do not change it */
    MPI_Get_processor_name(mine.name, &len);
    if (sched_getaffinity(0, sizeof(mine.cpus), &mine.cpus) != 0)
        CPU_ZERO(&mine.cpus);
    if (rank == 0 && (all = calloc((size_t)ranks, sizeof(where_t))) == NULL) {
        fprintf(stderr, "%s: out of memory\n", b->prog);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Gather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE, 0, comm);
    if (rank != 0)
        return;
    /* the cores are those the host's ranks may run on, together: a
     * launcher that binds each rank to one CPU leaves each a single one */
    b->host_ranks = 0;
    CPU_ZERO(&host_cpus);
    for (int r = 0; r < ranks; r++) {
        if (strncmp(all[r].name, mine.name, MPI_MAX_PROCESSOR_NAME) != 0)
            continue;
        b->host_ranks++;
        CPU_OR(&host_cpus, &host_cpus, &all[r].cpus);
    }
    free(all);
    b->cores = CPU_COUNT(&host_cpus);
    if (b->cores == 0)
        b->cores = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 1;
}

bool pb_mpi_bench_oversubscribed(const pb_mpi_bench_t *b)
{
    return b->host_ranks > b->cores;
}

void pb_mpi_bench_record_identity(pb_bench_record_t *rec, const pb_mpi_bench_t *b)
{
    pb_bench_record_add_str(rec, "library_version", b->version);
    pb_bench_record_add_str(rec, "path", b->path);
    if (b->path_how != NULL)
        pb_bench_record_add_str(rec, "path_how", b->path_how);
    if (b->round >= 0)
        pb_bench_record_add_num(rec, "round", b->round);
    pb_bench_record_add_bool(rec, "oversubscribed", pb_mpi_bench_oversubscribed(b));
}

uint64_t pb_mpi_bench_compute_for(uint64_t ns)
{
    volatile double sink;
    double x = 1.0, y = 0.5;
    uint64_t t0 = pb_bench_time_now(), t;

    do {
        for (int k = 0; k < 64; k++) {
            x = x * 0.999999 + y;
            y = y * 1.000001 - 0.25 * x;
        }
        t = pb_bench_time_now();
    } while (t - t0 < ns);
    sink = x + y;
    (void)sink;
    return t - t0;
}
