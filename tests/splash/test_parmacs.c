/*
 * test_parmacs: the PARMACS macros of postbox/parmacs_pthreads.h, one case
 * per run (the first argument):
 *
 *   sync           (set up by MAIN_INITENV(, size), the m4 macros' form)
 *                  GETSUB hands out every subscript once per round, then
 *                  -1, and starts over; a lock-protected counter and an
 *                  array of locks count every increment; BARRIER in a loop
 *                  holds every thread until all have arrived (exit 0)
 *   budget         G_MALLOC beyond what MAIN_INITENV declared ends the
 *                  program with status 2 and a message
 *   global-write   a thread writing a C global faults (SIGSEGV)
 *   after-join     main writes a global once every thread is joined (exit 0)
 *   before-init    G_MALLOC before MAIN_INITENV
 *   barrier-zero   BARRIER of 0 threads
 *   alock-range    ALOCK of a lock past the end of its array
 *   alockinit-range  ALOCKINIT of more locks than the array has
 *
 * The last four end the program with status 2 and a message saying what
 * was wrong.
 */
#include "postbox/parmacs.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

MAIN_ENV

#define THREADS 4
#define SUBSCRIPTS 1000
#define ROUNDS 200
#define LOCKS 3

typedef struct global {
    LOCKDEC(id_lock)
    LOCKDEC(count_lock)
    ALOCKDEC(counter_locks, LOCKS)
    BARDEC(bar)
    GSDEC(gs)
    int next_id;
    long count;
    long counters[LOCKS];
    int handed[2][SUBSCRIPTS]; /* per GETSUB round: times each subscript came */
    int wrong;                 /* a thread saw something wrong */
} global_t;

static global_t *Global;
static long written_global = 1;

static void sync_worker(void)
{
    int id, sub;
    LOCK(Global->id_lock);
    id = Global->next_id++;
    UNLOCK(Global->id_lock);

    for (int round = 0; round < 2; round++) {
        while (GETSUB(Global->gs, sub, SUBSCRIPTS - 1, THREADS) >= 0)
            Global->handed[round][sub]++;
        BARRIER(Global->bar, THREADS);
    }
    for (int round = 0; round < ROUNDS; round++) {
        LOCK(Global->count_lock);
        Global->count++;
        UNLOCK(Global->count_lock);
        ALOCK(Global->counter_locks, (id + round) % LOCKS);
        Global->counters[(id + round) % LOCKS]++;
        AULOCK(Global->counter_locks, (id + round) % LOCKS);
        BARRIER(Global->bar, THREADS);
        long seen = Global->count;
        BARRIER(Global->bar, THREADS);
        if (seen != (long)(round + 1) * THREADS) {
            LOCK(Global->count_lock);
            Global->wrong = 1;
            UNLOCK(Global->count_lock);
        }
    }
}

static void global_writer(void)
{
    written_global++;
}

static void global_reader(void)
{
    if (written_global != 1)
        fprintf(stderr, "the thread read %ld, not 1\n", written_global);
}

static void setup(void)
{
    Global = G_MALLOC(sizeof(global_t));
    memset(Global, 0, sizeof *Global);
    LOCKINIT(Global->id_lock);
    LOCKINIT(Global->count_lock);
    ALOCKINIT(Global->counter_locks, LOCKS);
    BARINIT(Global->bar, THREADS);
    GSINIT(Global->gs);
}

static int check_sync(void)
{
    for (int round = 0; round < 2; round++)
        for (int s = 0; s < SUBSCRIPTS; s++)
            if (Global->handed[round][s] != 1) {
                fprintf(stderr, "GETSUB round %d handed out %d %d times\n", round, s,
                        Global->handed[round][s]);
                return 0;
            }
    long total = 0;
    for (int k = 0; k < LOCKS; k++)
        total += Global->counters[k];
    if (Global->count != (long)ROUNDS * THREADS || total != (long)ROUNDS * THREADS ||
        Global->wrong) {
        fprintf(stderr,
                "counted %ld under LOCK, %ld under ALOCK, of %ld; a barrier let a thread "
                "through early: %d\n",
                Global->count, total, (long)ROUNDS * THREADS, Global->wrong);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "sync") == 0) {
        MAIN_INITENV(, sizeof(global_t) + 4096); /* the m4 macros' form */
        setup();
        for (int i = 1; i < THREADS; i++)
            CREATE(sync_worker);
        sync_worker();
        WAIT_FOR_END(THREADS - 1);
        int ok = check_sync();
        printf("sync: %s\n", ok ? "right" : "wrong");
        MAIN_EXIT(ok ? 0 : 1);
    }
    if (strcmp(mode, "budget") == 0) {
        MAIN_INITENV(1000);
        (void)G_MALLOC(512);
        (void)G_MALLOC(1024);
        printf("budget: G_MALLOC beyond the budget returned\n");
        MAIN_EXIT(1);
    }
    if (strcmp(mode, "global-write") == 0 || strcmp(mode, "after-join") == 0) {
        /* the fault must end the program, not a sanitizer's handler */
        signal(SIGSEGV, SIG_DFL);
        MAIN_INITENV(4096);
        int after_join = strcmp(mode, "after-join") == 0;
        CREATE(after_join ? global_reader : global_writer);
        WAIT_FOR_END(1);
        written_global += 10;
        printf("%s: the global is %ld\n", mode, written_global);
        MAIN_EXIT(after_join && written_global == 11 ? 0 : 1);
    }
    if (strcmp(mode, "before-init") == 0) {
        (void)G_MALLOC(64);
        printf("before-init: G_MALLOC returned\n");
        return 1;
    }
    if (strcmp(mode, "barrier-zero") == 0 || strcmp(mode, "alock-range") == 0 ||
        strcmp(mode, "alockinit-range") == 0) {
        MAIN_INITENV(sizeof(global_t) + 4096);
        setup();
        if (strcmp(mode, "barrier-zero") == 0)
            BARRIER(Global->bar, 0);
        else if (strcmp(mode, "alock-range") == 0)
            ALOCK(Global->counter_locks, LOCKS);
        else
            ALOCKINIT(Global->counter_locks, LOCKS + 1);
        printf("%s: the macro returned\n", mode);
        MAIN_EXIT(1);
    }
    fprintf(stderr, "usage: test_parmacs sync|budget|global-write|after-join|before-init|"
                    "barrier-zero|alock-range|alockinit-range\n");
    return 2;
}
