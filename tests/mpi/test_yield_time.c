/*
 * How long a waiting rank yields before it sleeps (POSTBOX_YIELD_US,
 * src/mpi/engine/progress.c): rank 1 sends to rank 0 after WAIT_MS of
 * sleep, and rank 0 watches its MPI_Recv.
 *
 *   pbt-mpi-yield-time sleeps   (POSTBOX_YIELD_US unset) rank 0 sleeps on
 *                               its doorbell after its few yields: almost
 *                               no processor time
 *   pbt-mpi-yield-time yields   (POSTBOX_YIELD_US=YIELD_US) rank 0 yields
 *                               for YIELD_US first, then sleeps
 *
 * Processor time tells a sleeper apart only on an idle machine: a rank
 * that yields while other processes want both cores gets a few percent
 * of one.  So a watcher thread samples the waiting thread's scheduler
 * state every SAMPLE_MS instead: a yielding thread is runnable ('R'),
 * whether or not it holds a core, and a sleeper is not.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define WAIT_MS 600
#define YIELD_US 300000
/* below this, rank 0 slept */
#define BUSY_MS 30
#define SAMPLE_MS 5

static double cpu_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

struct watch {
    pid_t tid;       /* the thread in MPI_Recv */
    atomic_int done; /* MPI_Recv returned */
    int samples, runnable;
};

/* The scheduler state letter of thread @tid of this process, '?' when
 * /proc does not say. */
static char thread_state(pid_t tid)
{
    char path[64], line[512];
    const char *paren;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
    f = fopen(path, "r");
    if (f == NULL)
        return '?';
    paren = fgets(line, sizeof(line), f) != NULL ? strrchr(line, ')') : NULL;
    fclose(f);
    return paren != NULL && paren[1] == ' ' ? paren[2] : '?';
}

static void *watcher(void *arg)
{
    struct watch *w = arg;
    struct timespec pause = {0, SAMPLE_MS * 1000L * 1000L};

    while (!atomic_load(&w->done)) {
        char state = thread_state(w->tid);

        if (state != '?') {
            w->samples++;
            w->runnable += state == 'R';
        }
        nanosleep(&pause, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int yields = argc > 1 && strcmp(argv[1], "yields") == 0, size = 0, word = 1, status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1 && (yields || strcmp(argv[1], "sleeps") == 0),
          "usage: pbt-mpi-yield-time sleeps|yields");
    CHECK(size == 2, "run with 2 ranks, not %d", size);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (size == 2 && rank == 1) {
        struct timespec pause = {0, WAIT_MS * 1000L * 1000L};

        nanosleep(&pause, NULL);
        OK(MPI_Send(&word, 1, MPI_INT, 0, 7, MPI_COMM_WORLD));
    } else if (size == 2) {
        struct watch w = {.tid = (pid_t)syscall(SYS_gettid)};
        pthread_t thread;
        double before = cpu_ms(), used, share;
        int watching = pthread_create(&thread, NULL, watcher, &w) == 0;

        CHECK(watching, "cannot start the watcher thread");
        OK(MPI_Recv(&word, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        used = cpu_ms() - before;
        atomic_store(&w.done, 1);
        if (watching)
            pthread_join(thread, NULL);
        share = w.samples > 0 ? (double)w.runnable / w.samples : 0.0;
        printf("rank 0 waited %d ms in MPI_Recv with %.1f ms of processor time, "
               "runnable in %d of %d samples\n",
               WAIT_MS, used, w.runnable, w.samples);
        CHECK(w.samples >= 10, "only %d samples of the waiting thread's state", w.samples);
        if (yields) {
            /* runnable for YIELD_US of WAIT_MS: half the samples */
            CHECK(share >= 0.25, "runnable in %.0f%% of samples: it slept before %d us",
                  100 * share, YIELD_US);
            CHECK(share <= 0.8, "runnable in %.0f%% of samples: it did not sleep after %d us",
                  100 * share, YIELD_US);
            CHECK(used < 0.5 * YIELD_US / 1e3 + 0.5 * WAIT_MS,
                  "%.1f ms of processor time: it did not sleep after %d us", used, YIELD_US);
        } else {
            CHECK(used < BUSY_MS, "%.1f ms of processor time: it did not sleep", used);
            CHECK(share < 0.25, "runnable in %.0f%% of samples: it did not sleep", 100 * share);
        }
    }
    status = check_summary("yield_time", MPI_COMM_WORLD, 99);
    MPI_Finalize();
    return status;
}
