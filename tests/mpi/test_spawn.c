/*
 * pbt-mpi-spawn: MPI_Comm_spawn over `postbox run -n 2 --universe 7`
 * (also with --nodes 2).  The two parents:
 *
 *   1. spawn 2 processes of this program ("child A", info wdir = /tmp):
 *      point-to-point between every parent and child both ways,
 *      MPI_Bcast from parent 0 to the children, MPI_Allreduce across the
 *      intercommunicator, MPI_Intercomm_merge and an MPI_Allreduce on the
 *      merged communicator, a connection over a port the parents publish
 *      (MPI_Publish_name, MPI_Lookup_name, MPI_Comm_accept/connect), the
 *      children's MPI_Comm_get_parent, their MPI_APPNUM, MPI_UNIVERSE_SIZE
 *      and working directory;
 *   2. MPI_Comm_spawn_multiple of two commands, 1 process of this program
 *      ("child B") and 2 of pbt-mpi-spawn-other (this source, another
 *      program): every child reports its appnum, rank, size and arguments
 *      to parent 0, and the children reduce over their own MPI_COMM_WORLD;
 *      array_of_errcodes is all MPI_SUCCESS;
 *   3. spawn past the universe (every slot is taken): MPI_ERR_SPAWN, each
 *      errcode MPI_ERR_SPAWN, MPI_COMM_NULL.
 *
 * Each child sends its failures to parent 0, which prints "spawn: ok".
 *
 * With the argument "nested" (`-n 2 --universe 6`) the parents spawn 3
 * children, child 0 spawns a grandchild, and once that is done the parents
 * send each child a message and end while the children go on among
 * themselves; the children's rank 0 prints "spawn nested: ok".
 *
 * With the argument "fatal" rank 0 spawns one process more than the
 * universe holds under the default error handler: the job must end with
 * a message naming --universe (run also without --universe).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define UNIVERSE 7
#define TAG_FAILURES 99

/* @rc's error class must be @expected */
#define CHECK_CLASS(rc, expected, what)                                                            \
    do {                                                                                           \
        int class_ = -1, rc_ = (rc);                                                               \
        MPI_Error_class(rc_, &class_);                                                             \
        CHECK(rc_ != MPI_SUCCESS && class_ == (expected), "%s: class %d, expected %d (%s)", what,  \
              class_, expected, #expected);                                                        \
    } while (0)

/* The predefined attribute @keyval of MPI_COMM_WORLD, or -1. */
static int world_attr(int keyval)
{
    int *value, flag = 0;

    MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, &value, &flag);
    return flag ? *value : -1;
}

/* ---- the children ------------------------------------------------------------------- */

/* Across worlds by the name service: parent 0 publishes a port, child 0
 * looks it up once a barrier over @spawned (the spawn's intercommunicator)
 * says it is there, and the groups connect over their MPI_COMM_WORLDs
 * (@parents: accept); the roots trade a number; everyone disconnects. */
static void connect_by_name(MPI_Comm spawned, int parents)
{
    char port[MPI_MAX_PORT_NAME] = "";
    int value = parents ? 31 : 32, got = -1;
    MPI_Comm inter = MPI_COMM_NULL;

    if (parents && rank == 0) {
        OK(MPI_Open_port(MPI_INFO_NULL, port));
        OK(MPI_Publish_name("pbt-spawn", MPI_INFO_NULL, port));
    }
    OK(MPI_Barrier(spawned));
    if (parents) {
        OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    } else {
        if (rank == 0)
            OK(MPI_Lookup_name("pbt-spawn", MPI_INFO_NULL, port));
        OK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    }
    if (rank == 0 && inter != MPI_COMM_NULL)
        OK(MPI_Sendrecv(&value, 1, MPI_INT, 0, 5, &got, 1, MPI_INT, 0, 5, inter,
                        MPI_STATUS_IGNORE));
    CHECK(rank != 0 || got == (parents ? 32 : 31), "over the named port: %d", got);
    if (inter != MPI_COMM_NULL)
        OK(MPI_Comm_disconnect(&inter));
    if (parents && rank == 0) {
        OK(MPI_Unpublish_name("pbt-spawn", MPI_INFO_NULL, port));
        OK(MPI_Close_port(port));
    }
}

/* A child of spawn 1: the exchanges of the parents' check_first. */
static void child_first(MPI_Comm parent, int size)
{
    int nparents = 0, value, data[3] = {0, 0, 0}, sum = 0, merged_rank = -1, total = 0;
    char cwd[PATH_MAX];
    MPI_Comm merged;

    MPI_Comm_remote_size(parent, &nparents);
    CHECK(nparents == 2 && size == 2, "%d parents, %d children (expected 2 and 2)", nparents, size);
    CHECK(getcwd(cwd, sizeof(cwd)) != NULL && strcmp(cwd, "/tmp") == 0,
          "working directory %s, not the info's wdir /tmp", cwd);
    for (int p = 0; p < nparents; p++) {
        OK(MPI_Recv(&value, 1, MPI_INT, p, 1, parent, MPI_STATUS_IGNORE));
        CHECK(value == 100 * p + rank, "from parent %d: %d, expected %d", p, value, 100 * p + rank);
        value = 10 * rank + 7 + p;
        OK(MPI_Send(&value, 1, MPI_INT, p, 2, parent));
    }
    OK(MPI_Bcast(data, 3, MPI_INT, 0, parent));
    CHECK(data[0] == 4242 && data[1] == -1 && data[2] == 7, "broadcast %d %d %d", data[0], data[1],
          data[2]);
    value = rank + 1;
    OK(MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, parent));
    CHECK(sum == 3000, "allreduce across: %d, expected the parents' 3000", sum);
    OK(MPI_Intercomm_merge(parent, 1, &merged));
    MPI_Comm_rank(merged, &merged_rank);
    CHECK(merged_rank == 2 + rank, "merged rank %d, expected %d (parents first)", merged_rank,
          2 + rank);
    OK(MPI_Allreduce(&merged_rank, &total, 1, MPI_INT, MPI_SUM, merged));
    CHECK(total == 6, "merged allreduce %d, expected 6", total);
    OK(MPI_Comm_free(&merged));
    connect_by_name(parent, 0);
}

/* A child of spawn 2 (this program's, or pbt-mpi-spawn-other's): report
 * to parent 0; reduce over the children's world. */
static void child_second(MPI_Comm parent, int size, int argc, char **argv, int other)
{
    int report[6], sum = -1;

    report[0] = world_attr(MPI_APPNUM);
    report[1] = rank;
    report[2] = size;
    report[3] = world_attr(MPI_UNIVERSE_SIZE);
    report[4] = other;
    report[5] = argc == 3 && strcmp(argv[2], other ? "second" : "B") == 0;
    OK(MPI_Send(report, 6, MPI_INT, 0, 3, parent));
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == 3, "the children's own allreduce: %d, expected 0 + 1 + 2", sum);
    OK(MPI_Barrier(parent));
}

static int child(int argc, char **argv, int other)
{
    MPI_Comm parent = MPI_COMM_NULL, again = MPI_COMM_NULL;
    int size = 0, mine, second = other || (argc > 2 && strcmp(argv[2], "B") == 0);

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Comm_get_parent(&parent));
    CHECK(parent != MPI_COMM_NULL, "spawned, but MPI_Comm_get_parent gives MPI_COMM_NULL");
    if (parent == MPI_COMM_NULL)
        return 1;
    OK(MPI_Comm_get_parent(&again));
    CHECK(again == parent, "MPI_Comm_get_parent gives another handle the second time");
    CHECK(world_attr(MPI_UNIVERSE_SIZE) == UNIVERSE, "MPI_UNIVERSE_SIZE %d, expected %d",
          world_attr(MPI_UNIVERSE_SIZE), UNIVERSE);
    if (!second) {
        CHECK(world_attr(MPI_APPNUM) == 0, "MPI_APPNUM %d, expected 0", world_attr(MPI_APPNUM));
        child_first(parent, size);
    } else {
        child_second(parent, size, argc, argv, other);
    }
    /* this child's failures, to parent 0 */
    mine = failures;
    OK(MPI_Send(&mine, 1, MPI_INT, 0, TAG_FAILURES, parent));
    OK(MPI_Comm_disconnect(&parent));
    OK(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "MPI_Comm_get_parent after its disconnect: not MPI_COMM_NULL");
    MPI_Finalize();
    return failures != 0;
}

/* ---- nested spawns, and parents that end first ----------------------------------------- */

#define NESTED_UNIVERSE 6
#define NESTED_CHILDREN 3
#define NESTED_BYTES (1 << 18)

/* The grandchild: doubles what child 0 sends, and reports its world. */
static int grandchild(void)
{
    MPI_Comm parent;
    int value[2] = {0, 0};

    MPI_Comm_get_parent(&parent);
    CHECK(parent != MPI_COMM_NULL, "the grandchild has no parent");
    if (parent == MPI_COMM_NULL)
        return 1;
    OK(MPI_Recv(value, 1, MPI_INT, 0, 7, parent, MPI_STATUS_IGNORE));
    value[0] *= 2;
    value[1] = failures;
    OK(MPI_Send(value, 2, MPI_INT, 0, 7, parent));
    OK(MPI_Comm_disconnect(&parent));
    MPI_Finalize();
    return 0;
}

/* A child of "nested": child 0 spawns a grandchild (a spawn from a spawned
 * world) and tells parent 0 when it is done; then the parents send each
 * child a message, free the intercommunicator and end.  The children take
 * the messages once the parents are gone (they then owe acknowledgements to
 * processes that ended, which they never sent anything to) and go on among
 * themselves across the nodes: reductions, a rendezvous message. */
static int child_nested(MPI_Comm parent, const char *self)
{
    char *args[] = {"child", "grand", NULL};
    int size = 0, value[2] = {21, 0}, sum = 0, result;
    MPI_Comm inter;
    unsigned char *big = malloc(NESTED_BYTES);

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == NESTED_CHILDREN && big != NULL, "%d children", size);
    if (rank == 0) {
        OK(MPI_Comm_spawn(self, args, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter,
                          MPI_ERRCODES_IGNORE));
        OK(MPI_Send(value, 1, MPI_INT, 0, 7, inter));
        OK(MPI_Recv(value, 2, MPI_INT, 0, 7, inter, MPI_STATUS_IGNORE));
        CHECK(value[0] == 42 && value[1] == 0, "the grandchild answered %d (%d failures)", value[0],
              value[1]);
        OK(MPI_Comm_disconnect(&inter));
        OK(MPI_Send(value, 1, MPI_INT, 0, 6, parent));
    }
    /* the parents end meanwhile */
    usleep(300 * 1000);
    for (int p = 0; p < 2; p++) {
        OK(MPI_Recv(&value[1], 1, MPI_INT, p, 9, parent, MPI_STATUS_IGNORE));
        CHECK(value[1] == 10 * p + rank, "from parent %d: %d", p, value[1]);
    }
    OK(MPI_Comm_free(&parent));
    /* child 0 waits for the last child long enough to sleep, which first
     * sends the acknowledgements owed */
    if (rank == size - 1) {
        usleep(200 * 1000);
        OK(MPI_Send(&rank, 1, MPI_INT, 0, 10, MPI_COMM_WORLD));
    } else if (rank == 0) {
        OK(MPI_Recv(&value[1], 1, MPI_INT, size - 1, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    for (int i = 0; i < 500; i++) {
        int mine = i + rank, all = 0;

        OK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        sum += all == 3 * i + 3 ? 0 : 1;
    }
    CHECK(sum == 0, "%d of 500 reductions wrong after the parents ended", sum);
    if (big != NULL && size == NESTED_CHILDREN && (rank == 0 || rank == size - 1)) {
        int peer = rank == 0 ? size - 1 : 0, bad = 0;

        for (int i = 0; i < NESTED_BYTES; i++)
            big[i] = (unsigned char)(i * 7 + rank);
        OK(MPI_Sendrecv_replace(big, NESTED_BYTES, MPI_BYTE, peer, 8, peer, 8, MPI_COMM_WORLD,
                                MPI_STATUS_IGNORE));
        for (int i = 0; i < NESTED_BYTES; i++)
            bad += big[i] != (unsigned char)(i * 7 + peer);
        CHECK(bad == 0, "%d bytes wrong from child %d", bad, peer);
    }
    free(big);
    result = check_summary("spawn nested", MPI_COMM_WORLD, 98);
    MPI_Finalize();
    return result;
}

/* The parents of "nested": spawn the children, wait until child 0's
 * grandchild is done (the parents made their nodes' postbox areas, which a
 * process spawned later maps), send each child a message and end. */
static void check_nested(const char *self)
{
    char *args[] = {"child", "nested", NULL};
    MPI_Comm inter = MPI_COMM_NULL;
    int done;

    CHECK(world_attr(MPI_UNIVERSE_SIZE) == NESTED_UNIVERSE, "run with --universe %d",
          NESTED_UNIVERSE);
    OK(MPI_Comm_spawn(self, args, NESTED_CHILDREN, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                      MPI_ERRCODES_IGNORE));
    if (inter == MPI_COMM_NULL)
        return;
    if (rank == 0)
        OK(MPI_Recv(&done, 1, MPI_INT, 0, 6, inter, MPI_STATUS_IGNORE));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int c = 0; c < NESTED_CHILDREN; c++) {
        int value = 10 * rank + c;

        OK(MPI_Send(&value, 1, MPI_INT, c, 9, inter));
    }
    OK(MPI_Comm_free(&inter));
}

/* ---- the parents -------------------------------------------------------------------- */

/* The children's failures, at parent 0. */
static void collect_failures(MPI_Comm inter, int nchildren)
{
    for (int c = 0; rank == 0 && c < nchildren; c++) {
        int theirs = 0;

        OK(MPI_Recv(&theirs, 1, MPI_INT, c, TAG_FAILURES, inter, MPI_STATUS_IGNORE));
        CHECK(theirs == 0, "child %d failed %d checks", c, theirs);
    }
}

static void check_first(const char *self)
{
    char *args[] = {"child", "A", NULL};
    int errcodes[2] = {-1, -1}, nchildren = 0, value, data[3] = {4242, -1, 7}, sum = 0, total = 0;
    int merged_rank = -1, is_inter = 0;
    MPI_Comm inter = MPI_COMM_NULL, merged, parent = MPI_COMM_WORLD;
    MPI_Info info;

    OK(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "a parent, though nothing spawned this process");
    MPI_Info_create(&info);
    MPI_Info_set(info, "wdir", "/tmp");
    OK(MPI_Comm_spawn(self, args, 2, info, 0, MPI_COMM_WORLD, &inter, errcodes));
    MPI_Info_free(&info);
    CHECK(inter != MPI_COMM_NULL, "spawn gave no intercommunicator");
    if (inter == MPI_COMM_NULL)
        return;
    CHECK(errcodes[0] == MPI_SUCCESS && errcodes[1] == MPI_SUCCESS, "errcodes %d %d", errcodes[0],
          errcodes[1]);
    MPI_Comm_test_inter(inter, &is_inter);
    MPI_Comm_remote_size(inter, &nchildren);
    CHECK(is_inter && nchildren == 2, "inter %d, %d children", is_inter, nchildren);
    for (int c = 0; c < nchildren; c++) {
        value = 100 * rank + c;
        OK(MPI_Send(&value, 1, MPI_INT, c, 1, inter));
    }
    for (int c = 0; c < nchildren; c++) {
        MPI_Status status;

        OK(MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 2, inter, &status));
        CHECK(value == 10 * status.MPI_SOURCE + 7 + rank, "from child %d: %d, expected %d",
              status.MPI_SOURCE, value, 10 * status.MPI_SOURCE + 7 + rank);
    }
    OK(MPI_Bcast(data, 3, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
    value = (rank + 1) * 1000;
    OK(MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, inter));
    CHECK(sum == 3, "allreduce across: %d, expected the children's 1 + 2", sum);
    OK(MPI_Intercomm_merge(inter, 0, &merged));
    MPI_Comm_rank(merged, &merged_rank);
    CHECK(merged_rank == rank, "merged rank %d, expected %d", merged_rank, rank);
    OK(MPI_Allreduce(&merged_rank, &total, 1, MPI_INT, MPI_SUM, merged));
    CHECK(total == 6, "merged allreduce %d, expected 6", total);
    OK(MPI_Comm_free(&merged));
    connect_by_name(inter, 1);
    collect_failures(inter, nchildren);
    OK(MPI_Comm_disconnect(&inter));
}

static void check_second(const char *self, const char *other)
{
    char *commands[2] = {(char *)self, (char *)other};
    char *args_self[] = {"child", "B", NULL}, *args_other[] = {"child", "second", NULL};
    char **argvs[2] = {args_self, args_other};
    int maxprocs[2] = {1, 2}, errcodes[3] = {-1, -1, -1}, nchildren = 0;
    MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
    MPI_Comm inter = MPI_COMM_NULL;

    OK(MPI_Comm_spawn_multiple(2, commands, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &inter,
                               errcodes));
    CHECK(inter != MPI_COMM_NULL, "spawn_multiple gave no intercommunicator");
    if (inter == MPI_COMM_NULL)
        return;
    for (int i = 0; i < 3; i++)
        CHECK(errcodes[i] == MPI_SUCCESS, "errcode %d is %d", i, errcodes[i]);
    MPI_Comm_remote_size(inter, &nchildren);
    CHECK(nchildren == 3, "%d children, expected 3", nchildren);
    for (int c = 0; rank == 0 && c < nchildren; c++) {
        int report[6];

        OK(MPI_Recv(report, 6, MPI_INT, c, 3, inter, MPI_STATUS_IGNORE));
        /* command 0 (1 process of this program), then command 1 (2 of the other) */
        CHECK(report[0] == (c == 0 ? 0 : 1) && report[1] == c && report[2] == 3 &&
                  report[3] == UNIVERSE && report[4] == (c > 0) && report[5] == 1,
              "child %d reports appnum %d rank %d size %d universe %d other %d args %d", c,
              report[0], report[1], report[2], report[3], report[4], report[5]);
    }
    OK(MPI_Barrier(inter));
    collect_failures(inter, nchildren);
    OK(MPI_Comm_disconnect(&inter));
}

/* Every slot is taken now: a spawn fails, at every parent. */
static void check_past_universe(const char *self)
{
    int errcodes[2] = {0, 0};
    MPI_Comm inter = MPI_COMM_WORLD;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_CLASS(
        MPI_Comm_spawn(self, MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errcodes),
        MPI_ERR_SPAWN, "spawn past the universe");
    CHECK(inter == MPI_COMM_NULL && errcodes[0] == MPI_ERR_SPAWN && errcodes[1] == MPI_ERR_SPAWN,
          "a refused spawn left %p, errcodes %d %d", (void *)inter, errcodes[0], errcodes[1]);
    /* a command that cannot be found is refused before anything starts */
    CHECK_CLASS(MPI_Comm_spawn("pbt-no-such-program", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 1,
                               MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE),
                MPI_ERR_SPAWN, "spawn of a missing program");
    CHECK_CLASS(MPI_Comm_spawn(self, MPI_ARGV_NULL, 0, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                               MPI_ERRCODES_IGNORE),
                MPI_ERR_ARG, "spawn of 0 processes");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    char self[PATH_MAX], other[PATH_MAX + 32];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash;
    int size = 0, result;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#ifdef SPAWN_OTHER
    return child(argc, argv, 1);
#endif
    if (len <= 0) {
        printf("FAIL rank %d: cannot read /proc/self/exe\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    self[len] = '\0';
    if (argc > 2 && strcmp(argv[1], "child") == 0 && strcmp(argv[2], "grand") == 0)
        return grandchild();
    if (argc > 2 && strcmp(argv[1], "child") == 0 && strcmp(argv[2], "nested") == 0) {
        MPI_Comm parent;

        MPI_Comm_get_parent(&parent);
        return child_nested(parent, self);
    }
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child(argc, argv, 0);
    if (argc > 1 && strcmp(argv[1], "nested") == 0) {
        check_nested(self);
        result = check_summary("spawn parents", MPI_COMM_WORLD, 98);
        MPI_Finalize();
        return result;
    }
    if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
        /* the default handler: the message ends the job */
        MPI_Comm inter;

        MPI_Comm_spawn(self, MPI_ARGV_NULL, UNIVERSE, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                       MPI_ERRCODES_IGNORE);
        printf("FAIL rank %d: a spawn past the universe returned\n", rank);
        MPI_Finalize();
        return 1;
    }
    snprintf(other, sizeof(other), "%s", self);
    slash = strrchr(other, '/');
    snprintf(slash + 1, sizeof(other) - (size_t)(slash + 1 - other), "pbt-mpi-spawn-other");
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "run with -n 2 --universe %d (size %d)", UNIVERSE, size);
    CHECK(world_attr(MPI_UNIVERSE_SIZE) == UNIVERSE && world_attr(MPI_APPNUM) == 0,
          "MPI_UNIVERSE_SIZE %d (expected %d), MPI_APPNUM %d", world_attr(MPI_UNIVERSE_SIZE),
          UNIVERSE, world_attr(MPI_APPNUM));
    check_first(self);
    check_second(self, other);
    check_past_universe(self);
    result = check_summary("spawn", MPI_COMM_WORLD, 98);
    MPI_Finalize();
    return result;
}
