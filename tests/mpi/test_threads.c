/*
 * MPI_THREAD_MULTIPLE (issue 16): any thread calls any function at once.
 *
 *   pbt-mpi-threads [--session] [THREADS [ITERATIONS]]   (default 4 threads, 2000 rounds)
 *
 * Every rank runs THREADS threads, each on a communicator of its own (a
 * duplicate of MPI_COMM_WORLD), each for ITERATIONS rounds of: a ring
 * exchange of a checked message (MPI_Isend + MPI_Irecv + MPI_Waitall),
 * and now and then a probe and its receive (MPI_Probe, MPI_Improbe +
 * MPI_Mrecv), a rendezvous-size message, an MPI_Allreduce, an
 * MPI_Barrier, and one-sided rounds on a window of the thread's (a put
 * between fences, a fetch-and-add under MPI_Win_lock_all), and new
 * communicators made at once by every thread (MPI_Comm_dup, _split: their
 * context ids must not collide) and used, and local objects (datatypes,
 * info objects, keyvals and attributes, names) made and freed at once.  Besides, all threads
 * exchange on MPI_COMM_WORLD at once with a tag each (one matching queue, many threads); one thread
 * blocks in MPI_Recv while the main thread must still get in to send it its message (a waiting
 * thread lets the others run); a generalized request is completed by another thread than the
 * one waiting for it; and, first of all, a second thread starts sending while the main thread
 * (the one the library lock is biased toward) is busy in MPI calls, so the bias is revoked
 * under way; then a thread that gets its CPU only now and then must still get in while the
 * main thread calls MPI_Testall in a loop.
 *
 * With --session the program never calls MPI_Init: a session asks for
 * MPI_THREAD_MULTIPLE and the same runs on its communicators of
 * mpi://WORLD and mpi://SELF.  The threads check with check.h's CHECK and
 * OK, whose count is atomic.
 */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define THREADS_MAX 16
#define LARGE_INTS (64 * 1024) /* 256 KiB: over every eager threshold */
#define TAG_RING 1
#define TAG_PROBE 2
#define TAG_LARGE 3
#define TAG_WORLD 10 /* + the thread's index */
#define TAG_SELF 99
#define TAG_BIAS 98
#define BIAS_MESSAGES 2000
#define TAG_STARVE 97
#define STARVE_REQUESTS 20000
#define STARVE_MESSAGES 100
#define STARVE_SECONDS 20 /* well under a second when nobody starves */

static int size, nthreads, iterations;
static MPI_Comm comms[THREADS_MAX];
/* MPI_COMM_WORLD and MPI_COMM_SELF, or the session's communicators of
 * mpi://WORLD and mpi://SELF (--session) */
static MPI_Comm world_comm, self_comm;

/* the value that rank @from's thread @t sends in round @i, word @k */
static int64_t pattern(int from, int t, int i, int k)
{
    return ((int64_t)from << 40) ^ ((int64_t)t << 32) ^ ((int64_t)i << 8) ^ k;
}

static void ring_round(MPI_Comm comm, int t, int i)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int64_t out[4], in[4];
    MPI_Request reqs[2];
    MPI_Status st[2];

    for (int k = 0; k < 4; k++)
        out[k] = pattern(rank, t, i, k);
    OK(MPI_Irecv(in, 4, MPI_INT64_T, left, TAG_RING, comm, &reqs[0]));
    OK(MPI_Isend(out, 4, MPI_INT64_T, right, TAG_RING, comm, &reqs[1]));
    OK(MPI_Waitall(2, reqs, st));
    for (int k = 0; k < 4; k++)
        CHECK(in[k] == pattern(left, t, i, k), "thread %d round %d: word %d from %d wrong", t, i, k,
              left);
}

/* the right neighbour's message found by a probe, then received */
static void probe_round(MPI_Comm comm, int t, int i)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int n = 1 + i % 7, count = -1, flag = 0;
    int64_t out[8], in[8];
    MPI_Request req;
    MPI_Status st;
    MPI_Message msg;

    for (int k = 0; k < n; k++)
        out[k] = pattern(rank, t, i, k);
    OK(MPI_Isend(out, n, MPI_INT64_T, right, TAG_PROBE, comm, &req));
    if (i % 2 == 0) {
        OK(MPI_Probe(left, TAG_PROBE, comm, &st));
        OK(MPI_Get_count(&st, MPI_INT64_T, &count));
        CHECK(count == n, "thread %d round %d: probe counts %d, not %d", t, i, count, n);
        OK(MPI_Recv(in, count, MPI_INT64_T, left, TAG_PROBE, comm, MPI_STATUS_IGNORE));
    } else {
        while (!flag)
            OK(MPI_Improbe(left, TAG_PROBE, comm, &flag, &msg, &st));
        OK(MPI_Get_count(&st, MPI_INT64_T, &count));
        CHECK(count == n, "thread %d round %d: improbe counts %d, not %d", t, i, count, n);
        OK(MPI_Mrecv(in, count, MPI_INT64_T, &msg, MPI_STATUS_IGNORE));
    }
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int k = 0; k < n && k < count; k++)
        CHECK(in[k] == pattern(left, t, i, k), "thread %d round %d: probed word %d wrong", t, i, k);
}

static void large_round(MPI_Comm comm, int t, int i, int *out, int *in)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    for (int k = 0; k < LARGE_INTS; k++)
        out[k] = (int)pattern(rank, t, i, k);
    OK(MPI_Sendrecv(out, LARGE_INTS, MPI_INT, right, TAG_LARGE, in, LARGE_INTS, MPI_INT, left,
                    TAG_LARGE, comm, MPI_STATUS_IGNORE));
    for (int k = 0; k < LARGE_INTS; k += 997)
        CHECK(in[k] == (int)pattern(left, t, i, k), "thread %d round %d: large word %d wrong", t, i,
              k);
}

static void reduce_round(MPI_Comm comm, int t, int i)
{
    int64_t mine[2] = {rank + t + i, (int64_t)rank * i}, sum[2] = {0, 0};
    int64_t want0 = (int64_t)size * (t + i) + (int64_t)size * (size - 1) / 2;
    int64_t want1 = (int64_t)i * size * (size - 1) / 2;

    OK(MPI_Allreduce(mine, sum, 2, MPI_INT64_T, MPI_SUM, comm));
    CHECK(sum[0] == want0 && sum[1] == want1, "thread %d round %d: allreduce gave %lld %lld", t, i,
          (long long)sum[0], (long long)sum[1]);
}

/* all threads on the world's communicator at once, a tag each */
static void world_round(int t, int i)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int64_t out = pattern(rank, t, i, 0), in = -1;

    OK(MPI_Sendrecv(&out, 1, MPI_INT64_T, right, TAG_WORLD + t, &in, 1, MPI_INT64_T, left,
                    TAG_WORLD + t, world_comm, MPI_STATUS_IGNORE));
    CHECK(in == pattern(left, t, i, 0), "thread %d round %d: world message wrong", t, i);
}

/* the library's local objects made and freed by every thread at once:
 * datatypes, info objects, a keyval and its attribute, names */
static void local_round(MPI_Comm comm, int t, int i)
{
    MPI_Datatype vec;
    MPI_Info info;
    int keyval, flag = 0, len = 0, bytes = -1;
    int *got = NULL;
    char value[32], name[MPI_MAX_OBJECT_NAME];

    OK(MPI_Type_vector(3, 2, 4, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    OK(MPI_Type_size(vec, &bytes));
    CHECK(bytes == 6 * (int)sizeof(int), "thread %d: the vector's size is %d", t, bytes);
    OK(MPI_Info_create(&info));
    snprintf(value, sizeof(value), "%d-%d", t, i);
    OK(MPI_Info_set(info, "round", value));
    len = (int)sizeof(name);
    OK(MPI_Info_get_string(info, "round", &len, name, &flag));
    CHECK(flag && strcmp(name, value) == 0, "thread %d: the info says %s", t, name);
    OK(MPI_Info_free(&info));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL));
    OK(MPI_Comm_set_attr(comm, keyval, &comms[t]));
    OK(MPI_Comm_get_attr(comm, keyval, &got, &flag));
    CHECK(flag && got == (int *)&comms[t], "thread %d: the attribute is lost", t);
    OK(MPI_Comm_delete_attr(comm, keyval));
    OK(MPI_Comm_free_keyval(&keyval));
    snprintf(value, sizeof(value), "thread-%d", t);
    OK(MPI_Comm_set_name(comm, value));
    OK(MPI_Comm_get_name(comm, name, &len));
    CHECK(strcmp(name, value) == 0, "thread %d: the communicator is named %s", t, name);
}

/* one-sided on the thread's window: a put between fences, then a
 * fetch-and-add on rank 0's counter under a shared lock of every rank */
static void rma_round(MPI_Win win, int64_t *base, int t, int i)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int64_t value = pattern(rank, t, i, 0), one = 1, old = -1;

    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&value, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, win));
    OK(MPI_Win_fence(0, win));
    CHECK(base[0] == pattern(left, t, i, 0), "thread %d round %d: the put brought %llx", t, i,
          (unsigned long long)base[0]);
    OK(MPI_Win_lock_all(0, win));
    OK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 1, MPI_SUM, win));
    OK(MPI_Win_unlock_all(win));
    CHECK(old >= 0, "thread %d round %d: the counter read %lld", t, i, (long long)old);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, flag = -1, rma_rounds = 0;
    int *out = malloc(LARGE_INTS * sizeof(int)), *in = malloc(LARGE_INTS * sizeof(int));
    MPI_Comm comm = comms[t];
    int64_t *base = NULL;
    MPI_Win win;

    CHECK(out != NULL && in != NULL, "out of memory");
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag == 0, "MPI_Is_thread_main says %d in a thread of its own", flag);
    OK(MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm, &base, &win));
    base[0] = base[1] = 0;
    OK(MPI_Barrier(comm));
    for (int i = 0; i < iterations && out != NULL && in != NULL; i++) {
        ring_round(comm, t, i);
        if (i % 16 == t % 16)
            probe_round(comm, t, i);
        if (i % 32 == 5)
            world_round(t, i);
        if (i % 64 == 7)
            reduce_round(comm, t, i);
        if (i % 256 == 9)
            large_round(comm, t, i, out, in);
        if (i % 512 == 11)
            OK(MPI_Barrier(comm));
        if (i % 16 == 3)
            local_round(comm, t, i);
        if (i % 128 == 17) { /* threads make communicators at once: distinct contexts */
            MPI_Comm dup, split;

            OK(MPI_Comm_dup(comm, &dup));
            OK(MPI_Comm_split(comm, rank % 2, -rank, &split));
            ring_round(dup, t, i);
            reduce_round(dup, t, i);
            OK(MPI_Barrier(split));
            OK(MPI_Comm_free(&split));
            OK(MPI_Comm_free(&dup));
        }
        if (i % 128 == 13) {
            rma_round(win, base, t, i);
            rma_rounds++;
        }
    }
    /* every rank added one per round to rank 0's counter */
    OK(MPI_Win_fence(0, win));
    if (rank == 0)
        CHECK(base[1] == (int64_t)rma_rounds * size, "thread %d: the counter is %lld, not %lld", t,
              (long long)base[1], (long long)rma_rounds * size);
    OK(MPI_Win_free(&win));
    free(out);
    free(in);
    return NULL;
}

static void *blocked_receiver(void *arg)
{
    int got = -1;

    (void)arg;
    OK(MPI_Recv(&got, 1, MPI_INT, 0, TAG_SELF, self_comm, MPI_STATUS_IGNORE));
    CHECK(got == 4242, "the blocked receive got %d", got);
    return NULL;
}

static void *bias_sender(void *arg)
{
    (void)arg;
    for (int i = 0; i < BIAS_MESSAGES; i++)
        OK(MPI_Send(&i, 1, MPI_INT, 0, TAG_BIAS, self_comm));
    return NULL;
}

/* the lock starts biased toward the thread granted MPI_THREAD_MULTIPLE
 * (here the main thread); the first other thread to call MPI revokes the
 * bias, here while the main thread is in and out of MPI_Testall: from
 * then on both must hold one lock (the ThreadSanitizer build sees a race
 * in the library if they do not) */
static void test_bias_revoked_while_busy(void)
{
    static int got[BIAS_MESSAGES];
    static MPI_Request requests[BIAS_MESSAGES];
    int done = 0, wrong = 0;
    pthread_t th;

    for (int i = 0; i < BIAS_MESSAGES; i++)
        OK(MPI_Irecv(&got[i], 1, MPI_INT, 0, TAG_BIAS, self_comm, &requests[i]));
    CHECK(pthread_create(&th, NULL, bias_sender, NULL) == 0, "pthread_create");
    while (!done)
        OK(MPI_Testall(BIAS_MESSAGES, requests, &done, MPI_STATUSES_IGNORE));
    pthread_join(th, NULL);
    for (int i = 0; i < BIAS_MESSAGES; i++)
        wrong += got[i] != i;
    CHECK(wrong == 0, "%d of %d messages from one sender arrived out of order", wrong,
          BIAS_MESSAGES);
}

static atomic_int main_polls, hog_stop;

/* the other work of a loaded host on the sending thread's CPU, for as
 * long as the sender sends (well under a second): the sender gets the CPU
 * only now and then */
static void *hog(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&hog_stop, memory_order_relaxed))
        ;
    return NULL;
}

static void *late_sender(void *arg)
{
    (void)arg;
    /* the main thread holds the library lock nearly always by now */
    while (!atomic_load(&main_polls))
        sched_yield();
    for (int i = 0; i < STARVE_MESSAGES; i++)
        OK(MPI_Send(&i, 1, MPI_INT, 0, TAG_STARVE, self_comm));
    return NULL;
}

static double seconds_since(const struct timespec *start)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

/* A thread on a CPU of its own polls MPI_Testall in a loop: it gives the
 * library lock back and takes it again within a few instructions.
 * Another thread, on a CPU it shares with a busy thread (it runs a slice
 * now and then), must still get in to send the messages polled for: a
 * waiting thread must not starve. */
static void test_waiter_not_starved(void)
{
    static int got[STARVE_REQUESTS];
    static MPI_Request requests[STARVE_REQUESTS];
    cpu_set_t all, main_cpu, other_cpu;
    pthread_attr_t attr;
    struct timespec start;
    int done = 0, polls = 0, cpus[2], n = 0;
    pthread_t sender, busy;

    CHECK(sched_getaffinity(0, sizeof(all), &all) == 0, "sched_getaffinity");
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++) {
        if (CPU_ISSET(c, &all))
            cpus[n++] = c;
    }
    if (n < 2)
        return; /* one CPU: the sender runs whenever the poller is preempted */
    CPU_ZERO(&main_cpu);
    CPU_SET(cpus[0], &main_cpu);
    CPU_ZERO(&other_cpu);
    CPU_SET(cpus[1], &other_cpu);
    if (pthread_attr_init(&attr) != 0 ||
        pthread_attr_setaffinity_np(&attr, sizeof(other_cpu), &other_cpu) != 0 ||
        sched_setaffinity(0, sizeof(main_cpu), &main_cpu) != 0) {
        CHECK(0, "cannot place the threads on CPUs %d and %d", cpus[0], cpus[1]);
        return;
    }
    /* the requests but the sender's complete at once: each MPI_Testall
     * checks them all, the lock held */
    for (int i = 0; i < STARVE_REQUESTS; i++)
        OK(MPI_Irecv(&got[i], 1, MPI_INT, 0, TAG_STARVE, self_comm, &requests[i]));
    for (int i = 0; i < STARVE_REQUESTS - STARVE_MESSAGES; i++)
        OK(MPI_Send(&i, 1, MPI_INT, 0, TAG_STARVE, self_comm));
    CHECK(pthread_create(&busy, &attr, hog, NULL) == 0, "pthread_create");
    CHECK(pthread_create(&sender, &attr, late_sender, NULL) == 0, "pthread_create");
    pthread_attr_destroy(&attr);
    clock_gettime(CLOCK_MONOTONIC, &start);
    /* (between two calls, only the loop's test: the clock now and then) */
    while (!done && (++polls % 64 != 0 || seconds_since(&start) < STARVE_SECONDS)) {
        OK(MPI_Testall(STARVE_REQUESTS, requests, &done, MPI_STATUSES_IGNORE));
        if (polls == 1)
            atomic_store(&main_polls, 1);
    }
    CHECK(done,
          "a thread waiting for the library lock starved: %d s of MPI_Testall in a loop kept it "
          "out",
          STARVE_SECONDS);
    if (!done)
        OK(MPI_Waitall(STARVE_REQUESTS, requests, MPI_STATUSES_IGNORE));
    atomic_store(&hog_stop, 1);
    pthread_join(sender, NULL);
    pthread_join(busy, NULL);
    CHECK(sched_setaffinity(0, sizeof(all), &all) == 0, "sched_setaffinity");
}

/* a thread blocked in MPI_Recv must not keep the main thread out */
static void test_blocked_receive(void)
{
    pthread_t th;
    int msg = 4242;

    CHECK(pthread_create(&th, NULL, blocked_receiver, NULL) == 0, "pthread_create");
    nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL); /* it is blocked by now */
    OK(MPI_Send(&msg, 1, MPI_INT, 0, TAG_SELF, self_comm));
    pthread_join(th, NULL);
}

static int query_fn(void *extra, MPI_Status *status)
{
    (void)extra;
    MPI_Status_set_elements(status, MPI_INT, 3);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS;
}

static void *completer(void *arg)
{
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    OK(MPI_Grequest_complete(*(MPI_Request *)arg));
    return NULL;
}

/* the generalized request a thread completes while main waits for it */
static void test_grequest_other_thread(void)
{
    MPI_Request req;
    MPI_Status st;
    pthread_t th;
    int count = -1;

    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, NULL, &req));
    CHECK(pthread_create(&th, NULL, completer, &req) == 0, "pthread_create");
    OK(MPI_Wait(&req, &st));
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 3, "the generalized request's status counts %d", count);
    pthread_join(th, NULL);
}

/* The session of --session: asks for MPI_THREAD_MULTIPLE in its info, and
 * gives the communicators of mpi://WORLD and mpi://SELF. */
static MPI_Session session_start(void)
{
    MPI_Session session = MPI_SESSION_NULL;
    MPI_Info info, used;
    MPI_Group group;
    char value[MPI_MAX_INFO_VAL];
    int len = (int)sizeof(value), flag = 0;

    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE");
    MPI_Session_init(info, MPI_ERRORS_ARE_FATAL, &session);
    MPI_Info_free(&info);
    MPI_Group_from_session_pset(session, "mpi://WORLD", &group);
    MPI_Comm_create_from_group(group, "threads-world", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL,
                               &world_comm);
    MPI_Group_free(&group);
    MPI_Group_from_session_pset(session, "mpi://SELF", &group);
    MPI_Comm_create_from_group(group, "threads-self", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL,
                               &self_comm);
    MPI_Group_free(&group);
    MPI_Comm_rank(world_comm, &rank);
    OK(MPI_Session_get_info(session, &used));
    OK(MPI_Info_get_string(used, "thread_level", &len, value, &flag));
    CHECK(flag && strcmp(value, "MPI_THREAD_MULTIPLE") == 0, "the session's thread_level is %s",
          flag ? value : "(none)");
    OK(MPI_Info_free(&used));
    return session;
}

/* MPI_Init_thread asking for MPI_THREAD_MULTIPLE, and what it says. */
static void world_start(int *argc, char ***argv)
{
    int provided = -1, level = -1, flag = -1;

    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    world_comm = MPI_COMM_WORLD;
    self_comm = MPI_COMM_SELF;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Init_thread provided %d", provided);
    OK(MPI_Query_thread(&level));
    CHECK(level == MPI_THREAD_MULTIPLE, "MPI_Query_thread says %d", level);
    OK(MPI_Is_thread_main(&flag));
    CHECK(flag == 1, "MPI_Is_thread_main says %d in the main thread", flag);
}

int main(int argc, char **argv)
{
    int use_session = argc > 1 && strcmp(argv[1], "--session") == 0, rc;
    MPI_Session session = MPI_SESSION_NULL;
    pthread_t threads[THREADS_MAX];

    nthreads = argc > 1 + use_session ? atoi(argv[1 + use_session]) : 4;
    iterations = argc > 2 + use_session ? atoi(argv[2 + use_session]) : 2000;
    if (nthreads < 1 || nthreads > THREADS_MAX || iterations < 1) {
        fprintf(stderr, "usage: %s [--session] [THREADS (1-%d) [ITERATIONS]]\n", argv[0],
                THREADS_MAX);
        return 2;
    }
    if (use_session)
        session = session_start();
    else
        world_start(&argc, &argv);
    MPI_Comm_size(world_comm, &size);

    test_bias_revoked_while_busy();
    test_waiter_not_starved();
    test_blocked_receive();
    test_grequest_other_thread();

    for (int t = 0; t < nthreads; t++)
        OK(MPI_Comm_dup(world_comm, &comms[t]));
    for (int t = 0; t < nthreads; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) == 0,
              "pthread_create");
    for (int t = 0; t < nthreads; t++)
        pthread_join(threads[t], NULL);
    for (int t = 0; t < nthreads; t++)
        OK(MPI_Comm_free(&comms[t]));

    rc = check_summary(use_session ? "threads-session" : "threads", world_comm, 77);
    if (use_session) {
        MPI_Comm_free(&world_comm);
        MPI_Comm_free(&self_comm);
        MPI_Session_finalize(&session);
    } else {
        MPI_Finalize();
    }
    return rc;
}
