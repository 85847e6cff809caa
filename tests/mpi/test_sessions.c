/*
 * pbt-mpi-sessions: the Sessions Model and MPI_Comm_create_from_group,
 * run under `postbox run -n N [--nodes K]` (tests/mpi/CMakeLists.txt).
 * Written to the standard API only.  Every rank prints one line per
 * failure and exits non-zero if any; rank 0 prints "sessions: ok" at the
 * end.
 *
 *   pbt-mpi-sessions sessions   sessions only (MPI_Init never called): the
 *                               process sets, communicators from their
 *                               groups, errors and error handlers
 *   pbt-mpi-sessions twice      a session started and finalized twice in a
 *                               row (the engine stops and starts again)
 *   pbt-mpi-sessions mixed      MPI_Session_init before MPI_Init, the world's
 *                               and a session's communicators side by side,
 *                               MPI_Finalize before MPI_Session_finalize
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define NODE_PREFIX "postbox://node/"

/* @call returns error class @class (the handlers are MPI_ERRORS_RETURN) */
#define FAILS(class, call)                                                                         \
    do {                                                                                           \
        int rc_ = (call), class_ = -1;                                                             \
        MPI_Error_class(rc_, &class_);                                                             \
        CHECK(class_ == (class), "%s returned %d, not %s", #call, rc_, #class);                    \
    } while (0)

static int handler_calls, handler_code;
static MPI_Session handler_session;

static void count_errors(MPI_Session *session, int *code, ...)
{
    handler_calls++;
    handler_code = *code;
    handler_session = *session;
}

/* The value of @key in @info as an int, or -1. */
static int info_int(MPI_Info info, const char *key)
{
    char value[64];
    int len = sizeof(value), flag = 0;

    if (MPI_Info_get_string(info, key, &len, value, &flag) != MPI_SUCCESS || !flag)
        return -1;
    return atoi(value);
}

/* A communicator of process set @pset of @session, made by
 * MPI_Comm_create_from_group with @tag. */
static MPI_Comm comm_of_pset(MPI_Session session, const char *pset, const char *tag)
{
    MPI_Group group = MPI_GROUP_NULL;
    MPI_Comm comm = MPI_COMM_NULL;

    OK(MPI_Group_from_session_pset(session, pset, &group));
    OK(MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    OK(MPI_Group_free(&group));
    return comm;
}

/* An allreduce and a ring of sends on @comm, with checked results. */
static void traffic(MPI_Comm comm, int seed)
{
    int me = -1, n = 0, sum = -1, got = -1, ring[256], back[256];

    OK(MPI_Comm_rank(comm, &me));
    OK(MPI_Comm_size(comm, &n));
    OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == n * (n - 1) / 2, "allreduce of the ranks of %d: %d", n, sum);
    for (int i = 0; i < 256; i++)
        ring[i] = me * 1000 + i + seed;
    OK(MPI_Sendrecv(ring, 256, MPI_INT, (me + 1) % n, 7, back, 256, MPI_INT, (me + n - 1) % n, 7,
                    comm, MPI_STATUS_IGNORE));
    for (int i = 0; i < 256; i++) {
        int want = ((me + n - 1) % n) * 1000 + i + seed;

        if (back[i] != want) {
            CHECK(0, "ring element %d is %d, not %d", i, back[i], want);
            break;
        }
    }
    /* a nonblocking collective and a window: the engine's other parts,
     * which a restart must set up again */
    {
        MPI_Request req;
        MPI_Win win;
        int slot = -1, from = me * 10 + seed, max = -1;

        OK(MPI_Iallreduce(&me, &max, 1, MPI_INT, MPI_MAX, comm, &req));
        OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(max == n - 1, "iallreduce max of the ranks of %d: %d", n, max);
        OK(MPI_Win_create(&slot, sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &win));
        OK(MPI_Win_fence(0, win));
        OK(MPI_Put(&from, 1, MPI_INT, (me + 1) % n, 0, 1, MPI_INT, win));
        OK(MPI_Win_fence(0, win));
        CHECK(slot == ((me + n - 1) % n) * 10 + seed, "the window holds %d, not %d", slot,
              ((me + n - 1) % n) * 10 + seed);
        OK(MPI_Win_free(&win));
    }
    if (n > 1) {
        if (me == 0)
            OK(MPI_Send(&seed, 1, MPI_INT, n - 1, 9, comm));
        if (me == n - 1) {
            OK(MPI_Recv(&got, 1, MPI_INT, 0, 9, comm, MPI_STATUS_IGNORE));
            CHECK(got == seed, "received %d, not %d", got, seed);
        }
    }
}

/* The process sets: the three listed (names, lengths, sizes), every
 * node's set covering the world once with this process in the one listed,
 * which is the ranks that share this process's memory. */
static void psets(MPI_Session session, MPI_Comm world)
{
    int count = 0, size = 0, node_total = 0, my_nodes = 0, nodes = 0, len, rc;
    char name[MPI_MAX_PSET_NAME_LEN], mine[MPI_MAX_PSET_NAME_LEN];
    MPI_Info info;
    MPI_Group group;

    OK(MPI_Comm_size(world, &size));
    OK(MPI_Session_get_num_psets(session, MPI_INFO_NULL, &count));
    CHECK(count == 3, "%d process sets listed, not 3", count);
    len = 0;
    OK(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, 0, &len, NULL));
    CHECK(len == (int)strlen("mpi://WORLD") + 1, "the length of set 0's name is %d", len);
    len = sizeof(name);
    OK(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, 0, &len, name));
    CHECK(strcmp(name, "mpi://WORLD") == 0, "set 0 is %s", name);
    len = 4;
    OK(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, 1, &len, name));
    CHECK(strcmp(name, "mpi") == 0 && len == (int)strlen("mpi://SELF") + 1,
          "set 1 cut to 4 bytes: \"%s\", length %d", name, len);
    len = sizeof(mine);
    OK(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, 2, &len, mine));
    CHECK(strncmp(mine, NODE_PREFIX, strlen(NODE_PREFIX)) == 0, "set 2 is %s", mine);

    OK(MPI_Session_get_pset_info(session, "mpi://WORLD", &info));
    CHECK(info_int(info, "mpi_size") == size, "mpi://WORLD's mpi_size is %d, not %d",
          info_int(info, "mpi_size"), size);
    OK(MPI_Info_free(&info));
    OK(MPI_Session_get_pset_info(session, "mpi://self", &info)); /* any case */
    CHECK(info_int(info, "mpi_size") == 1, "mpi://SELF's mpi_size is %d",
          info_int(info, "mpi_size"));
    OK(MPI_Info_free(&info));

    /* every node's set, up to the first index that names none */
    for (int k = 0; k <= size; k++) {
        int members = 0, in = MPI_UNDEFINED;

        snprintf(name, sizeof(name), NODE_PREFIX "%d", k);
        rc = MPI_Session_get_pset_info(session, name, &info);
        if (rc != MPI_SUCCESS) {
            int class = -1;

            MPI_Error_class(rc, &class);
            CHECK(class == MPI_ERR_ARG, "%s: error %d, not MPI_ERR_ARG", name, rc);
            break;
        }
        nodes++;
        node_total += info_int(info, "mpi_size");
        OK(MPI_Info_free(&info));
        OK(MPI_Group_from_session_pset(session, name, &group));
        OK(MPI_Group_size(group, &members));
        OK(MPI_Group_rank(group, &in));
        CHECK(members > 0, "%s is empty", name);
        if (in != MPI_UNDEFINED) {
            my_nodes++;
            CHECK(strcmp(name, mine) == 0, "this process is in %s, but set 2 is %s", name, mine);
        }
        OK(MPI_Group_free(&group));
    }
    CHECK(nodes >= 1 && node_total == size, "%d node sets hold %d processes, the world %d", nodes,
          node_total, size);
    CHECK(my_nodes == 1, "this process is in %d node sets", my_nodes);

    /* this node's processes: every node at once, with the same tag (the
     * groups do not overlap) */
    {
        MPI_Comm node = MPI_COMM_NULL, shared = MPI_COMM_NULL;
        int members = 0, node_size = 0, shared_size = 0;

        OK(MPI_Group_from_session_pset(session, mine, &group));
        OK(MPI_Group_size(group, &members));
        OK(MPI_Comm_create_from_group(group, "pbt.sessions.node", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                      &node));
        OK(MPI_Group_free(&group));
        OK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
        OK(MPI_Comm_size(node, &node_size));
        OK(MPI_Comm_size(shared, &shared_size));
        CHECK(node_size == members && shared_size == members,
              "%s has %d members, its communicator %d, the shared-memory one %d", mine, members,
              node_size, shared_size);
        traffic(node, 11);
        OK(MPI_Comm_free(&node));
        OK(MPI_Comm_free(&shared));
        /* split by the node's set: the same processes */
        OK(MPI_Info_create(&info));
        OK(MPI_Info_set(info, "mpi_pset_name", mine));
        OK(MPI_Comm_split_type(world, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, info, &node));
        node_size = 0;
        if (node != MPI_COMM_NULL) {
            OK(MPI_Comm_size(node, &node_size));
            OK(MPI_Comm_free(&node));
        }
        CHECK(node_size == members, "split by %s: %d ranks, not %d", mine, node_size, members);
        OK(MPI_Info_free(&info));
    }
    /* split by the other sets: each process alone, all of them, none */
    {
        const char *names[] = {"mpi://SELF", "mpi://WORLD", "mpi://NOWHERE"};
        int want[] = {1, size, 0};

        for (int i = 0; i < 3; i++) {
            MPI_Comm part = MPI_COMM_WORLD;
            int got = 0;

            OK(MPI_Info_create(&info));
            OK(MPI_Info_set(info, "mpi_pset_name", names[i]));
            OK(MPI_Comm_split_type(world, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, info, &part));
            if (part != MPI_COMM_NULL) {
                OK(MPI_Comm_size(part, &got));
                OK(MPI_Comm_free(&part));
            }
            CHECK(got == want[i], "split by %s: %d ranks, not %d", names[i], got, want[i]);
            OK(MPI_Info_free(&info));
        }
    }
}

/* Errors in session calls, and the session's error handler. */
static void errors(MPI_Session session)
{
    MPI_Errhandler counting, got;
    MPI_Group group = MPI_GROUP_NULL;
    MPI_Info info = MPI_INFO_NULL;
    int count = 0, len = 8;
    char name[8];

    OK(MPI_Session_get_num_psets(session, MPI_INFO_NULL, &count));
    FAILS(MPI_ERR_ARG, MPI_Group_from_session_pset(session, "mpi://NOWHERE", &group));
    FAILS(MPI_ERR_ARG, MPI_Group_from_session_pset(session, NODE_PREFIX "99999", &group));
    FAILS(MPI_ERR_ARG, MPI_Session_get_pset_info(session, "postbox://node/x", &info));
    FAILS(MPI_ERR_ARG, MPI_Session_get_nth_pset(session, MPI_INFO_NULL, count, &len, name));
    FAILS(MPI_ERR_ARG, MPI_Session_get_nth_pset(session, MPI_INFO_NULL, -1, &len, name));
    CHECK(group == MPI_GROUP_NULL && info == MPI_INFO_NULL, "a failed call set its output");

    OK(MPI_Session_create_errhandler(count_errors, &counting));
    OK(MPI_Session_set_errhandler(session, counting));
    OK(MPI_Session_get_errhandler(session, &got));
    CHECK(got == counting, "the session's handler is not the one set");
    handler_calls = 0;
    MPI_Group_from_session_pset(session, "mpi://NOWHERE", &group);
    CHECK(handler_calls == 1 && handler_code == MPI_ERR_ARG && handler_session == session,
          "an unknown set called the session's handler %d times with %d", handler_calls,
          handler_code);
    OK(MPI_Session_call_errhandler(session, MPI_ERR_OTHER));
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER,
          "MPI_Session_call_errhandler called the handler %d times with %d", handler_calls,
          handler_code);
    FAILS(MPI_ERR_ERRHANDLER, MPI_Session_set_errhandler(session, MPI_ERRHANDLER_NULL));
    CHECK(handler_calls == 3, "a bad errhandler did not go through the session's handler");
    OK(MPI_Session_set_errhandler(session, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&counting));
    FAILS(MPI_ERR_SESSION, MPI_Session_call_errhandler(session, MPI_ERR_SESSION));
}

/* MPI_Comm_create_from_group's own cases and errors (the handler passed
 * is MPI_ERRORS_RETURN). */
static void create_errors(MPI_Session session, MPI_Comm world)
{
    MPI_Group all, others, reordered;
    MPI_Comm comm = MPI_COMM_WORLD;
    char tag[MPI_MAX_STRINGTAG_LEN + 2];
    int me = -1, n = 0, order[64];

    OK(MPI_Comm_rank(world, &me));
    OK(MPI_Comm_size(world, &n));
    OK(MPI_Group_from_session_pset(session, "mpi://WORLD", &all));
    OK(MPI_Comm_create_from_group(MPI_GROUP_EMPTY, "pbt.sessions.empty", MPI_INFO_NULL,
                                  MPI_ERRORS_RETURN, &comm));
    CHECK(comm == MPI_COMM_NULL, "the empty group gave a communicator");
    FAILS(MPI_ERR_ARG,
          MPI_Comm_create_from_group(all, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    memset(tag, 'x', sizeof(tag) - 1);
    tag[sizeof(tag) - 1] = '\0';
    FAILS(MPI_ERR_ARG,
          MPI_Comm_create_from_group(all, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    FAILS(MPI_ERR_GROUP, MPI_Comm_create_from_group(MPI_GROUP_NULL, "pbt.sessions.bad",
                                                    MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    OK(MPI_Group_excl(all, 1, &me, &others));
    if (n > 1) {
        FAILS(MPI_ERR_GROUP, MPI_Comm_create_from_group(others, "pbt.sessions.bad", MPI_INFO_NULL,
                                                        MPI_ERRORS_RETURN, &comm));
    } else { /* alone: the others are the empty group */
        comm = MPI_COMM_WORLD;
        OK(MPI_Comm_create_from_group(others, "pbt.sessions.bad", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                      &comm));
        CHECK(comm == MPI_COMM_NULL, "the empty group gave a communicator");
    }
    OK(MPI_Group_free(&others));
    /* members that pass the same rank 0 but different orders of the rest
     * all learn that the groups differ */
    if (n >= 3 && n <= 64) {
        for (int i = 0; i < n; i++)
            order[i] = i;
        if (me % 2 == 1) {
            order[1] = 2;
            order[2] = 1;
        }
        OK(MPI_Group_incl(all, n, order, &reordered));
        FAILS(MPI_ERR_GROUP, MPI_Comm_create_from_group(reordered, "pbt.sessions.order",
                                                        MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
        OK(MPI_Group_free(&reordered));
    }
    OK(MPI_Group_free(&all));
}

/* A session with thread_level asked for, its communicator of mpi://WORLD
 * (returned), the process sets and errors. */
/* The session's buffer for buffered sends (MPI-4.1): a communicator of the
 * session, and its dup, send through it with no other buffer attached;
 * flush, iflush and detach; attaching twice and detaching none fail. */
static void buffers(MPI_Session session, MPI_Comm world)
{
    static char space[4096 + 8 * MPI_BSEND_OVERHEAD];
    MPI_Comm dup;
    MPI_Request req;
    void *got = NULL;
    int me = -1, n = 0, in = -1, size = -1;

    OK(MPI_Comm_rank(world, &me));
    OK(MPI_Comm_size(world, &n));
    FAILS(MPI_ERR_BUFFER, MPI_Bsend(&me, 1, MPI_INT, (me + 1) % n, 5, world));
    FAILS(MPI_ERR_BUFFER, MPI_Session_detach_buffer(session, &got, &size));
    OK(MPI_Session_attach_buffer(session, space, (int)sizeof(space)));
    FAILS(MPI_ERR_BUFFER, MPI_Session_attach_buffer(session, space, (int)sizeof(space)));
    OK(MPI_Comm_dup(world, &dup));
    OK(MPI_Bsend(&me, 1, MPI_INT, (me + 1) % n, 5, world));
    OK(MPI_Recv(&in, 1, MPI_INT, (me + n - 1) % n, 5, world, MPI_STATUS_IGNORE));
    CHECK(in == (me + n - 1) % n, "a buffered send through the session's buffer gave %d", in);
    OK(MPI_Bsend(&me, 1, MPI_INT, (me + 1) % n, 6, dup));
    OK(MPI_Recv(&in, 1, MPI_INT, (me + n - 1) % n, 6, dup, MPI_STATUS_IGNORE));
    CHECK(in == (me + n - 1) % n, "a buffered send on a dup of the session's communicator gave %d",
          in);
    OK(MPI_Session_iflush_buffer(session, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Session_flush_buffer(session));
    OK(MPI_Session_detach_buffer(session, &got, &size));
    CHECK(got == space && size == (int)sizeof(space), "detached %p of %d bytes, not %p of %d", got,
          size, (void *)space, (int)sizeof(space));
    /* the large-count forms */
    {
        MPI_Count size_c = 0;

        OK(MPI_Session_attach_buffer_c(session, space, (MPI_Count)sizeof(space)));
        OK(MPI_Session_detach_buffer_c(session, &got, &size_c));
        CHECK(got == space && size_c == (MPI_Count)sizeof(space),
              "MPI_Session_detach_buffer_c gave %p of %lld bytes", got, (long long)size_c);
    }
    FAILS(MPI_ERR_BUFFER, MPI_Bsend(&me, 1, MPI_INT, (me + 1) % n, 7, dup));
    OK(MPI_Comm_free(&dup));
}

static MPI_Session session_start(MPI_Comm *world_p, const char *tag)
{
    MPI_Session session = MPI_SESSION_NULL;
    MPI_Info info, used;
    char value[MPI_MAX_INFO_VAL];
    int len = sizeof(value), flag = 0;

    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "thread_level", "MPI_THREAD_FUNNELED"));
    OK(MPI_Session_init(info, MPI_ERRORS_RETURN, &session));
    OK(MPI_Info_free(&info));
    OK(MPI_Session_get_info(session, &used));
    OK(MPI_Info_get_string(used, "thread_level", &len, value, &flag));
    CHECK(flag && strcmp(value, "MPI_THREAD_FUNNELED") == 0, "the session's thread_level is %s",
          flag ? value : "not set");
    OK(MPI_Info_free(&used));
    *world_p = comm_of_pset(session, "mpi://WORLD", tag);
    OK(MPI_Comm_rank(*world_p, &rank));
    return session;
}

static void session_end(MPI_Session *session, MPI_Comm *world)
{
    OK(MPI_Comm_free(world));
    OK(MPI_Session_finalize(session));
    CHECK(*session == MPI_SESSION_NULL, "MPI_Session_finalize left the handle");
}

static int sessions_only(int rounds)
{
    int status = 0, flag = -1;

    for (int round = 0; round < rounds; round++) {
        MPI_Comm world, self;
        MPI_Session session = session_start(&world, "pbt.sessions.world");
        int self_size = 0;

        OK(MPI_Initialized(&flag));
        CHECK(flag == 0, "MPI_Initialized says %d with sessions only", flag);
        traffic(world, round);
        self = comm_of_pset(session, "mpi://SELF", "pbt.sessions.self");
        OK(MPI_Comm_size(self, &self_size));
        CHECK(self_size == 1, "mpi://SELF's communicator has %d ranks", self_size);
        traffic(self, round);
        OK(MPI_Comm_free(&self));
        psets(session, world);
        buffers(session, world);
        errors(session);
        create_errors(session, world);
        /* the same group and tag again: a communicator of its own */
        {
            MPI_Comm again = comm_of_pset(session, "mpi://WORLD", "pbt.sessions.world");
            int result = -1;

            OK(MPI_Comm_compare(world, again, &result));
            CHECK(result == MPI_CONGRUENT, "two communicators of mpi://WORLD compare %d", result);
            traffic(again, round + 100);
            OK(MPI_Comm_free(&again));
        }
        if (round == rounds - 1)
            status = check_summary(rounds > 1 ? "sessions twice" : "sessions", world, 99);
        session_end(&session, &world);
    }
    return status;
}

static int mixed(int argc, char **argv)
{
    MPI_Comm world, dup;
    MPI_Session session = session_start(&world, "pbt.sessions.mixed");
    MPI_Group bad_group = MPI_GROUP_NULL;
    int result = -1, flag = 0, a = -1, b = -1, me = -1, size = 0, status;

    OK(MPI_Init(&argc, &argv));
    OK(MPI_Initialized(&flag));
    CHECK(flag == 1, "MPI_Initialized says %d after MPI_Init", flag);
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(me == rank, "world rank %d, rank in the session's communicator %d", me, rank);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, world, &result));
    CHECK(result == MPI_CONGRUENT, "MPI_COMM_WORLD and mpi://WORLD's communicator compare %d",
          result);
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    /* the same source and tag on the three communicators: each message
     * stays on its own */
    if (size > 1) {
        int next = (me + 1) % size, prev = (me + size - 1) % size, c = -1, one = 1, two = 2,
            three = 3;
        MPI_Request reqs[3];

        OK(MPI_Isend(&one, 1, MPI_INT, next, 5, MPI_COMM_WORLD, &reqs[0]));
        OK(MPI_Isend(&two, 1, MPI_INT, next, 5, world, &reqs[1]));
        OK(MPI_Isend(&three, 1, MPI_INT, next, 5, dup, &reqs[2]));
        OK(MPI_Recv(&c, 1, MPI_INT, prev, 5, dup, MPI_STATUS_IGNORE));
        OK(MPI_Recv(&b, 1, MPI_INT, prev, 5, world, MPI_STATUS_IGNORE));
        OK(MPI_Recv(&a, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE));
        CHECK(a == 1 && b == 2 && c == 3, "received %d %d %d, not 1 2 3", a, b, c);
    }
    traffic(MPI_COMM_WORLD, 1);
    traffic(world, 2);
    traffic(dup, 3);
    /* no session to raise on: MPI_COMM_SELF's handler */
    FAILS(MPI_ERR_SESSION,
          MPI_Group_from_session_pset(MPI_SESSION_NULL, "mpi://WORLD", &bad_group));
    FAILS(MPI_ERR_SESSION, MPI_Session_get_num_psets((MPI_Session)&flag, MPI_INFO_NULL, &flag));
    /* no handler to raise on yet: MPI_COMM_SELF's */
    {
        MPI_Group all;
        MPI_Comm comm = MPI_COMM_NULL;

        OK(MPI_Comm_group(MPI_COMM_WORLD, &all));
        FAILS(MPI_ERR_ERRHANDLER, MPI_Comm_create_from_group(all, "pbt.sessions.bad", MPI_INFO_NULL,
                                                             MPI_ERRHANDLER_NULL, &comm));
        /* a group from MPI_COMM_WORLD makes a communicator too */
        OK(MPI_Comm_create_from_group(all, "pbt.sessions.from_world", MPI_INFO_NULL,
                                      MPI_ERRORS_RETURN, &comm));
        traffic(comm, 5);
        OK(MPI_Comm_free(&comm));
        OK(MPI_Group_free(&all));
    }
    OK(MPI_Comm_free(&dup));
    OK(MPI_Finalize());
    /* the session keeps the engine running */
    OK(MPI_Finalized(&flag));
    CHECK(flag == 1, "MPI_Finalized says %d after MPI_Finalize", flag);
    traffic(world, 4);
    status = check_summary("sessions mixed", world, 99);
    session_end(&session, &world);
    return status;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "twice") == 0)
        return sessions_only(2);
    if (argc > 1 && strcmp(argv[1], "mixed") == 0)
        return mixed(argc, argv);
    return sessions_only(1);
}
