/*
 * pbt-mpi-dynamic: dynamic processes within one job, run under `postbox
 * run -n N [--nodes K]` (N >= 2).  MPI_COMM_WORLD splits into a server
 * group (world ranks 0..L-1) and a client group (the others); the
 * server's rank 0 opens a port (MPI_Open_port) and publishes it
 * (MPI_Publish_name), the clients find it (MPI_Lookup_name) and connect
 * (MPI_Comm_connect / MPI_Comm_accept); point-to-point, collectives and
 * MPI_Intercomm_merge on the intercommunicator are checked, then
 * MPI_Comm_disconnect.  A second
 * connection has the last rank of each group as root, on a port of the
 * last server.  Then the name service's errors (a name not published,
 * published twice), the port errors (a malformed port, another job's, a
 * closed one, one never opened, another process's), MPI_Comm_join between world ranks 0
 * and N-1 over a TCP socket and its errors, MPI_Comm_spawn and
 * _spawn_multiple (MPI_ERR_SPAWN: no free slots without `postbox run
 * --universe`; Hydra and a singleton have none either) and
 * MPI_Comm_get_parent.
 * First of all, before MPI_Init, the processes of a session connect.
 *
 * Started alone with the argument "singleton" it checks that the name
 * service calls say there is none (MPI_ERR_UNSUPPORTED_OPERATION) and
 * that ports and accept/connect still reject bad ports.  Rank 0 prints
 * "dynamic: ok".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#define SERVICE "pbt-dynamic service"

static int nworld;

/* @rc's error class must be @expected */
#define CHECK_CLASS(rc, expected, what)                                                            \
    do {                                                                                           \
        int class_ = -1, rc_ = (rc);                                                               \
        MPI_Error_class(rc_, &class_);                                                             \
        CHECK(rc_ != MPI_SUCCESS && class_ == (expected), "%s: class %d, expected %d (%s)", what,  \
              class_, expected, #expected);                                                        \
    } while (0)

/* The world rank of rank @r of the remote group of @inter. */
static int remote_world_rank(MPI_Comm inter, int r)
{
    MPI_Group remote, world;
    int w = -1;

    MPI_Comm_remote_group(inter, &remote);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_translate_ranks(remote, 1, &r, world, &w);
    MPI_Group_free(&remote);
    MPI_Group_free(&world);
    return w;
}

/* Check @inter between the servers (world 0..@servers-1) and the clients:
 * shape, every pair of processes by point-to-point, MPI_Bcast from the
 * server group's @root, MPI_Allreduce. */
static void check_link(MPI_Comm inter, int server, int servers, int root)
{
    int lsize = -1, rsize = -1, flag = 0, lrank = -1, value, sum;
    int want_lsize = server ? servers : nworld - servers, want_rsize = nworld - want_lsize;
    int first_remote = server ? servers : 0;
    MPI_Request *reqs;
    int *in;

    OK(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag, "not an intercommunicator");
    OK(MPI_Comm_size(inter, &lsize));
    OK(MPI_Comm_remote_size(inter, &rsize));
    OK(MPI_Comm_rank(inter, &lrank));
    CHECK(lsize == want_lsize && rsize == want_rsize, "sizes %d/%d, expected %d/%d", lsize, rsize,
          want_lsize, want_rsize);
    CHECK(lrank == rank - (server ? 0 : servers), "rank %d in the intercommunicator", lrank);
    for (int r = 0; r < rsize; r++)
        CHECK(remote_world_rank(inter, r) == first_remote + r, "remote rank %d is world %d", r,
              remote_world_rank(inter, r));
    /* every process sends its world rank * 10 + the receiver's rank to each remote one */
    reqs = malloc((size_t)rsize * sizeof(MPI_Request));
    in = malloc((size_t)rsize * sizeof(int));
    for (int r = 0; r < rsize; r++) {
        OK(MPI_Irecv(&in[r], 1, MPI_INT, r, 7, inter, &reqs[r]));
    }
    for (int r = 0; r < rsize; r++) {
        int out = rank * 10 + r;

        OK(MPI_Send(&out, 1, MPI_INT, r, 7, inter));
    }
    OK(MPI_Waitall(rsize, reqs, MPI_STATUSES_IGNORE));
    for (int r = 0; r < rsize; r++)
        CHECK(in[r] == (first_remote + r) * 10 + lrank, "from remote %d: %d", r, in[r]);
    free(in);
    free(reqs);
    /* the server group's root broadcasts to the clients */
    value = server ? -1 : -2;
    if (server && lrank == root)
        value = 4242;
    OK(MPI_Bcast(&value, 1, MPI_INT, server ? (lrank == root ? MPI_ROOT : MPI_PROC_NULL) : root,
                 inter));
    CHECK(value == (server ? (lrank == root ? 4242 : -1) : 4242), "bcast gave %d", value);
    /* each group gets the sum of the other's world ranks */
    value = rank;
    OK(MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, inter));
    {
        int want = 0;

        for (int r = 0; r < rsize; r++)
            want += first_remote + r;
        CHECK(sum == want, "allreduce gave %d, expected %d", sum, want);
    }
    /* merged, the servers (high false) first: every process has its world rank */
    {
        MPI_Comm merged;
        int mrank = -1, msize = -1;

        OK(MPI_Intercomm_merge(inter, !server, &merged));
        OK(MPI_Comm_rank(merged, &mrank));
        OK(MPI_Comm_size(merged, &msize));
        CHECK(mrank == rank && msize == nworld, "merged: rank %d of %d", mrank, msize);
        OK(MPI_Comm_free(&merged));
    }
}

/* the two connections between the halves of MPI_COMM_WORLD */
static void check_accept_connect(void)
{
    int servers = (nworld + 1) / 2, server = rank < servers, last;
    char port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME], port2[MPI_MAX_PORT_NAME];
    MPI_Comm half, inter;

    OK(MPI_Comm_split(MPI_COMM_WORLD, server, rank, &half));
    memset(port, 0, sizeof(port));
    if (rank == 0) {
        OK(MPI_Open_port(MPI_INFO_NULL, port));
        CHECK(strlen(port) > 0 && strlen(port) < MPI_MAX_PORT_NAME, "port '%s'", port);
        OK(MPI_Publish_name(SERVICE, MPI_INFO_NULL, port));
    }
    /* everyone learns the port to check the lookup */
    OK(MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD));
    inter = MPI_COMM_NULL;
    if (server) {
        OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    } else {
        memset(found, 0, sizeof(found));
        OK(MPI_Lookup_name(SERVICE, MPI_INFO_NULL, found));
        CHECK(strcmp(found, port) == 0, "lookup found '%s', published '%s'", found, port);
        OK(MPI_Comm_connect(found, MPI_INFO_NULL, 0, half, &inter));
    }
    check_link(inter, server, servers, 0);
    OK(MPI_Comm_disconnect(&inter));
    CHECK(inter == MPI_COMM_NULL, "MPI_Comm_disconnect left the handle");

    /* again, the roots the last rank of each group, the port the last server's */
    last = server ? servers - 1 : nworld - servers - 1;
    if (rank == servers - 1) {
        OK(MPI_Open_port(MPI_INFO_NULL, port2));
        CHECK(servers == 1 || strcmp(port2, port) != 0, "two ports named '%s'", port2);
    }
    OK(MPI_Bcast(port2, MPI_MAX_PORT_NAME, MPI_CHAR, servers - 1, MPI_COMM_WORLD));
    if (rank == 0 && servers == 1)
        CHECK(strcmp(port2, port) != 0, "a second port of rank 0 has the first one's name");
    if (server)
        OK(MPI_Comm_accept(rank == servers - 1 ? port2 : NULL, MPI_INFO_NULL, last, half, &inter));
    else
        OK(MPI_Comm_connect(rank == nworld - 1 ? port2 : NULL, MPI_INFO_NULL, last, half, &inter));
    check_link(inter, server, servers, servers - 1);
    OK(MPI_Comm_disconnect(&inter));
    if (rank == servers - 1)
        OK(MPI_Close_port(port2));
    if (rank == 0) {
        OK(MPI_Unpublish_name(SERVICE, MPI_INFO_NULL, port));
        OK(MPI_Close_port(port));
    }
    OK(MPI_Comm_free(&half));
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* the name service's errors; @have_service: under `postbox run` */
static void check_names(int have_service)
{
    char found[MPI_MAX_PORT_NAME];
    int rc;

    if (!have_service) {
        CHECK_CLASS(MPI_Publish_name("x", MPI_INFO_NULL, "p"), MPI_ERR_UNSUPPORTED_OPERATION,
                    "MPI_Publish_name without a name service");
        CHECK_CLASS(MPI_Lookup_name("x", MPI_INFO_NULL, found), MPI_ERR_UNSUPPORTED_OPERATION,
                    "MPI_Lookup_name without a name service");
        CHECK_CLASS(MPI_Unpublish_name("x", MPI_INFO_NULL, "p"), MPI_ERR_UNSUPPORTED_OPERATION,
                    "MPI_Unpublish_name without a name service");
        return;
    }
    /* every rank: the service of check_accept_connect is gone */
    CHECK_CLASS(MPI_Lookup_name(SERVICE, MPI_INFO_NULL, found), MPI_ERR_NAME,
                "lookup of an unpublished name");
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK_CLASS(MPI_Unpublish_name(SERVICE, MPI_INFO_NULL, "p"), MPI_ERR_SERVICE,
                    "unpublish of an unpublished name");
        OK(MPI_Publish_name("pbt-twice", MPI_INFO_NULL, "port-a"));
        CHECK_CLASS(MPI_Publish_name("pbt-twice", MPI_INFO_NULL, "port-b"), MPI_ERR_SERVICE,
                    "a name published twice");
        CHECK_CLASS(MPI_Unpublish_name("pbt-twice", MPI_INFO_NULL, "port-b"), MPI_ERR_SERVICE,
                    "unpublish with another port");
        rc = MPI_Lookup_name("pbt-twice", MPI_INFO_NULL, found);
        CHECK(rc == MPI_SUCCESS && strcmp(found, "port-a") == 0, "lookup: %d '%s'", rc, found);
        OK(MPI_Unpublish_name("pbt-twice", MPI_INFO_NULL, "port-a"));
        CHECK_CLASS(MPI_Publish_name("", MPI_INFO_NULL, "p"), MPI_ERR_ARG, "an empty name");
        {
            char *long_name = malloc(600), *long_port = malloc(MPI_MAX_PORT_NAME + 1);

            memset(long_name, 's', 599);
            long_name[599] = '\0';
            memset(long_port, 'p', MPI_MAX_PORT_NAME);
            long_port[MPI_MAX_PORT_NAME] = '\0';
            CHECK_CLASS(MPI_Publish_name(long_name, MPI_INFO_NULL, "p"), MPI_ERR_ARG,
                        "a name of 599 bytes");
            CHECK_CLASS(MPI_Lookup_name(long_name, MPI_INFO_NULL, found), MPI_ERR_ARG,
                        "lookup of a name of 599 bytes");
            CHECK_CLASS(MPI_Publish_name("pbt-long", MPI_INFO_NULL, long_port), MPI_ERR_ARG,
                        "a port of MPI_MAX_PORT_NAME bytes");
            /* the longest of each, every byte one PMI-1 escapes, still goes through */
            memset(long_name, ' ', 512);
            long_name[512] = '\0';
            memset(long_port, '=', MPI_MAX_PORT_NAME - 1);
            long_port[MPI_MAX_PORT_NAME - 1] = '\0';
            OK(MPI_Publish_name(long_name, MPI_INFO_NULL, long_port));
            rc = MPI_Lookup_name(long_name, MPI_INFO_NULL, found);
            CHECK(rc == MPI_SUCCESS && strcmp(found, long_port) == 0, "lookup of the longest: %d",
                  rc);
            OK(MPI_Unpublish_name(long_name, MPI_INFO_NULL, long_port));
            free(long_name);
            free(long_port);
        }
    }
}

/* the errors of bad ports, on MPI_COMM_SELF; @have_service: under a launcher
 * with a name service, which knows which ports are open */
static void check_port_errors(int have_service)
{
    char port[MPI_MAX_PORT_NAME], bad[MPI_MAX_PORT_NAME + 64];
    MPI_Comm inter = MPI_COMM_WORLD;
    int other = (rank + 1) % nworld;

    CHECK_CLASS(MPI_Comm_connect("nonsense", MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), MPI_ERR_PORT,
                "connect to a malformed port");
    CHECK(inter == MPI_COMM_NULL, "a failed connect left the handle");
    CHECK_CLASS(
        MPI_Comm_connect("postbox-port:0:1:0:another-job", MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter),
        MPI_ERR_PORT, "connect to another job's port");
    OK(MPI_Open_port(MPI_INFO_NULL, port));
    /* the same port with a process number past the job's */
    snprintf(bad, sizeof(bad), "postbox-port:%d%s", nworld, strchr(port + 13, ':'));
    CHECK_CLASS(MPI_Comm_connect(bad, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), MPI_ERR_PORT,
                "connect to a process outside the job");
    /* a port of another process cannot be accepted on here */
    snprintf(bad, sizeof(bad), "postbox-port:%d%s", other, strchr(port + 13, ':'));
    if (other != rank)
        CHECK_CLASS(MPI_Comm_accept(bad, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), MPI_ERR_PORT,
                    "accept on another process's port");
    CHECK_CLASS(MPI_Close_port("nonsense"), MPI_ERR_PORT, "close of a malformed port");
    OK(MPI_Close_port(port));
    CHECK_CLASS(MPI_Close_port(port), MPI_ERR_PORT, "close of a closed port");
    CHECK_CLASS(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), MPI_ERR_PORT,
                "accept on a closed port");
    if (have_service) {
        /* the launcher knows the port is closed (a singleton's connect would wait) */
        CHECK_CLASS(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), MPI_ERR_PORT,
                    "connect to a closed port");
        snprintf(bad, sizeof(bad), "postbox-port:%d:%d%s", other, 1 << 23,
                 strchr(strchr(port + 13, ':') + 1, ':'));
        CHECK_CLASS(MPI_Comm_connect(bad, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter), MPI_ERR_PORT,
                    "connect to a port never opened");
    }
    CHECK_CLASS(MPI_Comm_disconnect(&inter), MPI_ERR_COMM, "disconnect of MPI_COMM_NULL");
    inter = MPI_COMM_WORLD;
    CHECK_CLASS(MPI_Comm_disconnect(&inter), MPI_ERR_COMM, "disconnect of MPI_COMM_WORLD");
}

/* A connected TCP socket between world ranks 0 and @peer (on the loopback):
 * rank 0 listens and sends its port number to @peer.  @return the fd. */
static int join_socket(int peer)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);
    int fd = -1, port = 0;

    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (rank == 0) {
        int listener = socket(AF_INET, SOCK_STREAM, 0);

        CHECK(listener >= 0 && bind(listener, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
                  listen(listener, 1) == 0 &&
                  getsockname(listener, (struct sockaddr *)&addr, &len) == 0,
              "cannot listen on the loopback");
        port = ntohs(addr.sin_port);
        OK(MPI_Send(&port, 1, MPI_INT, peer, 9, MPI_COMM_WORLD));
        fd = accept(listener, NULL, NULL);
        close(listener);
    } else {
        OK(MPI_Recv(&port, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        addr.sin_port = htons((uint16_t)port);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0,
              "cannot connect to rank 0's socket");
    }
    CHECK(fd >= 0, "no socket");
    return fd;
}

static void check_join(void)
{
    int peer = nworld - 1, sv[2], size = 0, value = -1, mine;
    MPI_Comm inter = MPI_COMM_NULL;

    if (rank == 0 || rank == peer) {
        int fd = join_socket(peer);

        OK(MPI_Comm_join(fd, &inter));
        close(fd);
        OK(MPI_Comm_remote_size(inter, &size));
        CHECK(size == 1, "remote size %d", size);
        CHECK(remote_world_rank(inter, 0) == (rank == 0 ? peer : 0), "joined world rank %d",
              remote_world_rank(inter, 0));
        mine = 100 + rank;
        OK(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 3, &value, 1, MPI_INT, 0, 3, inter,
                        MPI_STATUS_IGNORE));
        CHECK(value == 100 + (rank == 0 ? peer : 0), "received %d over the join", value);
        OK(MPI_Comm_disconnect(&inter));
    }
    /* the other end writes something else, or closes */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    {
        char junk[512];

        memset(junk, 'x', sizeof(junk));
        CHECK(write(sv[1], junk, sizeof(junk)) == (ssize_t)sizeof(junk), "write");
        CHECK_CLASS(MPI_Comm_join(sv[0], &inter), MPI_ERR_ARG, "join with a stranger");
        CHECK(inter == MPI_COMM_NULL, "a failed join left the handle");
    }
    close(sv[1]);
    CHECK_CLASS(MPI_Comm_join(sv[0], &inter), MPI_ERR_ARG, "join with a closed socket");
    close(sv[0]);
    CHECK_CLASS(MPI_Comm_join(-1, &inter), MPI_ERR_ARG, "join on fd -1");
}

static void check_spawn(void)
{
    char *commands[2] = {"true", "true"};
    int maxprocs[2] = {1, 2}, errcodes[3] = {0, 0, 0};
    MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
    MPI_Comm parent = MPI_COMM_WORLD, child = MPI_COMM_WORLD;

    OK(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "a parent, though nothing spawned this process");
    CHECK_CLASS(
        MPI_Comm_spawn("true", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_SELF, &child, errcodes),
        MPI_ERR_SPAWN, "MPI_Comm_spawn");
    CHECK(child == MPI_COMM_NULL && errcodes[0] == MPI_ERR_SPAWN && errcodes[1] == MPI_ERR_SPAWN,
          "spawn left %d %d", errcodes[0], errcodes[1]);
    child = MPI_COMM_WORLD;
    CHECK_CLASS(MPI_Comm_spawn_multiple(2, commands, MPI_ARGVS_NULL, maxprocs, infos, 0,
                                        MPI_COMM_SELF, &child, MPI_ERRCODES_IGNORE),
                MPI_ERR_SPAWN, "MPI_Comm_spawn_multiple");
    CHECK(child == MPI_COMM_NULL, "spawn_multiple left the handle");
}

/* Before MPI_Init: a session's processes connect too.  The session's
 * world splits in halves; the first process of the first half opens a
 * port, which reaches the other half's first process over the session's
 * communicator; a message each way between the two roots. */
static void check_session(void)
{
    MPI_Session session;
    MPI_Group group;
    MPI_Comm all, half, inter = MPI_COMM_NULL;
    char port[MPI_MAX_PORT_NAME];
    int me = -1, size = 0, servers, server, value = -1, mine;

    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    OK(MPI_Group_from_session_pset(session, "mpi://WORLD", &group));
    OK(MPI_Comm_create_from_group(group, "pbt-dynamic", MPI_INFO_NULL, MPI_ERRORS_RETURN, &all));
    OK(MPI_Comm_rank(all, &me));
    rank = me;
    OK(MPI_Comm_size(all, &size));
    servers = (size + 1) / 2;
    server = me < servers;
    OK(MPI_Comm_split(all, server, me, &half));
    memset(port, 0, sizeof(port));
    if (me == 0)
        OK(MPI_Open_port(MPI_INFO_NULL, port));
    if (me == 0)
        OK(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, servers, 5, all));
    else if (me == servers)
        OK(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 5, all, MPI_STATUS_IGNORE));
    if (server)
        OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    else
        OK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter));
    if (me == 0 || me == servers) {
        mine = 500 + me;
        OK(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 4, &value, 1, MPI_INT, 0, 4, inter,
                        MPI_STATUS_IGNORE));
        CHECK(value == 500 + (me == 0 ? servers : 0), "session link gave %d", value);
    }
    OK(MPI_Comm_disconnect(&inter));
    if (me == 0)
        OK(MPI_Close_port(port));
    OK(MPI_Comm_free(&half));
    OK(MPI_Comm_free(&all));
    OK(MPI_Group_free(&group));
    OK(MPI_Session_finalize(&session));
}

int main(int argc, char **argv)
{
    int singleton = argc > 1 && strcmp(argv[1], "singleton") == 0;

    if (!singleton)
        check_session();
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nworld);
    if (!singleton) {
        CHECK(nworld >= 2, "run me with 2 ranks or more");
        if (nworld >= 2)
            check_accept_connect();
        if (nworld >= 2)
            check_join();
    }
    check_names(!singleton);
    check_port_errors(!singleton);
    check_spawn();
    int status = check_summary("dynamic", MPI_COMM_WORLD, 99);
    MPI_Finalize();
    return status;
}
