/*
 * Dynamic processes (MPI-5.0 chapter 11, "Process Initialization,
 * Creation, and Management"): ports, MPI_Comm_accept/connect,
 * MPI_Comm_disconnect, the name service, MPI_Comm_join, and MPI_Comm_spawn
 * (over the launcher's universe of slots: docs/mpi.md, "Spawning").
 *
 * A port names one process of the job (its slot, pb_mpi_slots), a number
 * it chose, and whether the launcher's name service records it open:
 * "postbox-port:<slot>:<port id>:<recorded 0|1>:<job id>".  The connecting
 * group's root sends its request to that process on MPI_COMM_WORLD's
 * collective context (over pb_mpi_comm_universe, which reaches the slots
 * of other worlds too), tag TAG_PORT_FIRST + the port id; the accepting
 * root takes the first request of its port and answers.  The two roots trade their
 * groups' context proposals (intercomm.h's agreement), sizes and world
 * ranks, and each tells its group, which then makes the intercommunicator
 * as MPI_Intercomm_create does.  Only processes of one job connect: the
 * engine knows the processes of its job alone (docs/mpi.md, "Dynamic
 * processes").  An open port is recorded in the launcher's name service
 * when it has one, so that a connect to a recorded port closed since is
 * MPI_ERR_PORT; one to an open port whose process never accepts waits (the
 * standard allows a time-out; Postbox has none), and so does one to a
 * closed port that was not recorded.
 *
 * The name service is the launcher's (postbox/job.h postbox_job_name_*,
 * PMI publish/lookup/unpublish).
 */
#include <errno.h>
#include <postbox/job.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mpi/bindings.h"
#include "mpi/coll_node.h"
#include "mpi/coll_p2p.h"
#include "mpi/comm.h"
#include "mpi/engine/handle.h"
#include "mpi/info.h"
#include "mpi/intercomm.h"
#include "mpi/p2p.h"

#define PORT_PREFIX "postbox-port:"

/* the tags of the messages between the roots, on MPI_COMM_WORLD's
 * collective context: above every collective's (coll_p2p.c, intercomm.c,
 * sched.h) */
enum {
    TAG_PORT_REPLY = (1 << 24) - 2, /* the accepting root's answer */
    TAG_PORT_GROUP = (1 << 24) - 1, /* the world ranks of each group */
    TAG_PORT_FIRST = 1 << 24,       /* + the port id: a connect request */
    PORT_ID_MAX = (1 << 24) - 1
};

/* ---- ports --------------------------------------------------------------------------- */

static struct {
    int *open; /* the ids of this process's open ports */
    int count, cap;
    int last_id; /* the last id given */
} ports;

/* A port name, taken apart. */
typedef struct {
    int world_rank, id;
    int recorded; /* in the launcher's name service (port_record) */
} port_t;

/* Parse @name into *@p.  @return NULL, or what is wrong with it. */
static const char *port_parse(const char *name, port_t *p)
{
    const char *job = postbox_job_id();
    int rank, id, recorded, used = 0;

    if (name == NULL)
        return "is NULL";
    if (strnlen(name, MPI_MAX_PORT_NAME) == MPI_MAX_PORT_NAME)
        return "is longer than MPI_MAX_PORT_NAME";
    if (sscanf(name, PORT_PREFIX "%d:%d:%d:%n", &rank, &id, &recorded, &used) != 3 || used == 0 ||
        (recorded != 0 && recorded != 1))
        return "is not a port name of MPI_Open_port";
    if (job == NULL || strcmp(name + used, job) != 0)
        return "names a process of another job (connecting jobs is not built yet)";
    if (rank < 0 || rank >= pb_mpi_slots() || id < 1 || id > PORT_ID_MAX)
        return "names no process of this job";
    p->world_rank = rank;
    p->recorded = recorded;
    p->id = id;
    return NULL;
}

/* The index of port @id among this process's open ones, or -1. */
static int port_find(int id)
{
    for (int i = 0; i < ports.count; i++) {
        if (ports.open[i] == id)
            return i;
    }
    return -1;
}

/* What port_record does. */
enum {
    PORT_RECORD_OPEN,
    PORT_RECORD_CLOSE,
    PORT_RECORD_LOOKUP
};

/* Record port @name open in the launcher's name service (under a service
 * name of its own, "pb-open-port/<port>"), withdraw it, or look it up, so
 * that a connect to a port closed or never opened fails (MPI_ERR_PORT)
 * instead of waiting.  @return postbox_job_name_*'s result. */
static int port_record(const char *name, int what)
{
    char service[sizeof("pb-open-port/") + MPI_MAX_PORT_NAME], found[8];

    snprintf(service, sizeof(service), "pb-open-port/%s", name);
    switch (what) {
    case PORT_RECORD_OPEN: return postbox_job_name_publish(service, "1");
    case PORT_RECORD_CLOSE: return postbox_job_name_unpublish(service);
    default: return postbox_job_name_lookup(service, found, sizeof(found));
    }
}

/* The error raised when the engine is not running (the calls that take no
 * communicator), or MPI_SUCCESS. */
static int need_engine(const char *func)
{
    if (pb_mpi_comm_world() != NULL)
        return MPI_SUCCESS;
    return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                        "called outside MPI_Init .. MPI_Finalize and every session");
}

int pb_mpi_open_port_impl(const char *func, MPI_Info info, char *port_name)
{
    int rc = need_engine(func);

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_info_check(MPI_COMM_NULL, info, 1, func);
    if (rc != MPI_SUCCESS)
        return rc;
    if (ports.last_id == PORT_ID_MAX)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_PORT, func,
                            "this process opened %d ports, the most it can", PORT_ID_MAX);
    if (ports.count == ports.cap) {
        int cap = ports.cap > 0 ? 2 * ports.cap : 8;
        int *open = realloc(ports.open, (size_t)cap * sizeof(int));

        if (open == NULL)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
        ports.open = open;
        ports.cap = cap;
    }
    /* recorded if the launcher takes the record; else a connect to it once
     * closed cannot be told (it waits) */
    for (int recorded = 1; recorded >= 0; recorded--) {
        snprintf(port_name, MPI_MAX_PORT_NAME, PORT_PREFIX "%d:%d:%d:%s", pb_mpi_my_slot(),
                 ports.last_id + 1, recorded, postbox_job_id());
        if (recorded == 0 || port_record(port_name, PORT_RECORD_OPEN) == 0)
            break;
    }
    ports.open[ports.count++] = ++ports.last_id;
    return MPI_SUCCESS;
}

int pb_mpi_close_port_impl(const char *func, const char *port_name)
{
    port_t p;
    const char *why;
    int i, rc = need_engine(func);

    if (rc != MPI_SUCCESS)
        return rc;
    why = port_parse(port_name, &p);
    if (why != NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_PORT, func, "port_name %s", why);
    i = p.world_rank == pb_mpi_my_slot() ? port_find(p.id) : -1;
    if (i < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_PORT, func,
                            "port %s is not open in this process", port_name);
    if (p.recorded)
        port_record(port_name, PORT_RECORD_CLOSE);
    ports.open[i] = ports.open[--ports.count];
    return MPI_SUCCESS;
}

/* ---- accept and connect ---------------------------------------------------------------- */

/* What the root of an accept or connect learns from the other root. */
typedef struct {
    pb_comm_t *local;
    port_t port;
    int bad_port; /* the root's port_name is not one it can use */
    int remote_size;
    int *remote; /* malloc'ed world ranks */
} link_t;

/* Send to and receive from slots (pb_mpi_slots) on MPI_COMM_WORLD's
 * collective context, waited for. */
static int world_exchange(const void *sbuf, int scount, int dest, int stag, void *rbuf, int rcount,
                          int source, int rtag)
{
    pb_comm_t *w = pb_mpi_comm_universe();
    MPI_Request reqs[2];
    int n = 0, rc = MPI_SUCCESS;

    if (rbuf != NULL)
        rc = pb_mpi_irecv_on(rbuf, rcount, MPI_INT32_T, source, rtag, w, 1, &reqs[n]);
    if (rc == MPI_SUCCESS && rbuf != NULL)
        n++;
    if (rc == MPI_SUCCESS && sbuf != NULL)
        rc = pb_mpi_isend_on(sbuf, scount, MPI_INT32_T, dest, stag, w, 1, &reqs[n]);
    if (rc == MPI_SUCCESS && sbuf != NULL)
        n++;
    if (n > 0) {
        int wrc = pb_mpi_wait_requests(n, reqs);

        if (rc == MPI_SUCCESS)
            rc = wrc;
    }
    return rc;
}

/* Trade the two groups' world ranks with the other root @peer: ours out,
 * theirs (@l->remote_size of them) into @l->remote. */
static int link_trade_groups(link_t *l, int peer)
{
    int world_size = pb_mpi_slots(), rc;

    if (l->remote_size < 1 || l->remote_size > world_size)
        return MPI_ERR_INTERN;
    l->remote = malloc((size_t)l->remote_size * sizeof(int));
    if (l->remote == NULL)
        return MPI_ERR_NO_MEM;
    rc = world_exchange(l->local->world, l->local->size, peer, TAG_PORT_GROUP, l->remote,
                        l->remote_size, peer, TAG_PORT_GROUP);

    for (int i = 0; rc == MPI_SUCCESS && i < l->remote_size; i++) {
        if (l->remote[i] < 0 || l->remote[i] >= world_size || l->local->local[l->remote[i]] >= 0)
            rc = MPI_ERR_INTERN;
    }
    return rc;
}

/* The accepting root's part of the context agreement: take the first
 * request to the port, answer it, trade the groups. */
static int exchange_accept(uint32_t *mine_theirs, void *arg)
{
    link_t *l = arg;
    int32_t request[3], answer[2] = {(int32_t)*mine_theirs, l->local->size};
    int rc;

    if (l->bad_port || port_find(l->port.id) < 0)
        return MPI_ERR_PORT;
    rc = world_exchange(NULL, 0, 0, 0, request, 3, MPI_ANY_SOURCE, TAG_PORT_FIRST + l->port.id);
    if (rc != MPI_SUCCESS)
        return rc;
    if (request[0] < 0 || request[0] >= pb_mpi_slots())
        return MPI_ERR_INTERN;
    rc = world_exchange(answer, 2, request[0], TAG_PORT_REPLY, NULL, 0, 0, 0);
    l->remote_size = request[2];
    if (rc == MPI_SUCCESS)
        rc = link_trade_groups(l, request[0]);
    *mine_theirs = (uint32_t)request[1];
    return rc;
}

/* The connecting root's part: send the request, take the answer, trade
 * the groups. */
static int exchange_connect(uint32_t *mine_theirs, void *arg)
{
    link_t *l = arg;
    int32_t request[3] = {pb_mpi_my_slot(), (int32_t)*mine_theirs, l->local->size};
    int32_t answer[2];
    int rc;

    if (l->bad_port)
        return MPI_ERR_PORT;
    rc = world_exchange(request, 3, l->port.world_rank, TAG_PORT_FIRST + l->port.id, answer, 2,
                        l->port.world_rank, TAG_PORT_REPLY);
    if (rc != MPI_SUCCESS)
        return rc;
    l->remote_size = answer[1];
    rc = link_trade_groups(l, l->port.world_rank);
    *mine_theirs = (uint32_t)answer[0];
    return rc;
}

/* MPI_Comm_accept (@accept) or MPI_Comm_connect of the group of @c. */
static int port_link(const char *func, int accept, const char *port_name, MPI_Info info, int root,
                     MPI_Comm comm, MPI_Comm *newcomm, pb_comm_t *c)
{
    link_t l = {c, {0, 0, 0}, 0, 0, NULL};
    const char *why = NULL;
    uint32_t context;
    int info_size[2] = {MPI_SUCCESS, 0}, rc = pb_mpi_comm_check_intra(comm, func, c), brc;
    pb_comm_t *n;

    if (rc != MPI_SUCCESS)
        return rc;
    *newcomm = MPI_COMM_NULL;
    if (c->rank == root) {
        rc = pb_mpi_info_check(comm, info, 1, func);
        if (rc != MPI_SUCCESS)
            return rc;
        why = port_parse(port_name, &l.port);
        if (why == NULL && accept && l.port.world_rank != pb_mpi_my_slot())
            why = "names a port of another process";
        if (why == NULL && !accept && l.port.recorded &&
            port_record(port_name, PORT_RECORD_LOOKUP) == POSTBOX_JOB_NAME_NOT_FOUND)
            why = "is not open (closed, or never opened)";
        l.bad_port = why != NULL;
    }
    /* a bad port fails the root's exchange, and so every process of the group */
    rc = pb_mpi_group_agree_context(c, root, accept ? exchange_accept : exchange_connect, &l,
                                    &context);
    if (why != NULL || rc != MPI_SUCCESS) {
        free(l.remote);
        if (why != NULL)
            return pb_mpi_raise(comm, MPI_ERR_PORT, func, "port_name %s", why);
        if (c->rank == root && rc == MPI_ERR_PORT)
            return pb_mpi_raise(comm, rc, func, "port %s is not open in this process", port_name);
        return pb_mpi_raise(comm, rc, func, "the root could not %s the other group",
                            accept ? "accept" : "connect to");
    }
    /* the other group, from the root to its group */
    info_size[1] = l.remote_size;
    rc = pb_coll_bcast_binomial(info_size, 2, MPI_INT, root, c);
    if (rc == MPI_SUCCESS && c->rank != root) {
        l.remote_size = info_size[1];
        l.remote = malloc((size_t)l.remote_size * sizeof(int));
        if (l.remote == NULL)
            rc = MPI_ERR_NO_MEM;
    }
    /* every process takes part in the broadcast */
    brc = pb_coll_bcast_binomial(l.remote != NULL ? l.remote : (void *)&info_size[1],
                                 l.remote != NULL ? info_size[1] : 0, MPI_INT, root, c);
    if (rc == MPI_SUCCESS)
        rc = brc;
    n = rc == MPI_SUCCESS ? pb_mpi_comm_make_inter(l.remote_size, l.remote, c->size, c->world,
                                                   context, c->errhandler)
                          : NULL;
    free(l.remote);
    if (rc != MPI_SUCCESS || n == NULL)
        return pb_mpi_raise(comm, rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM, func,
                            "the other group did not reach every process");
    n->session = c->session;
    *newcomm = n->handle;
    return MPI_SUCCESS;
}

int pb_mpi_comm_accept_impl(const char *func, const char *port_name, MPI_Info info, int root,
                            MPI_Comm comm, MPI_Comm *newcomm, pb_comm_t *c)
{
    return port_link(func, 1, port_name, info, root, comm, newcomm, c);
}

int pb_mpi_comm_connect_impl(const char *func, const char *port_name, MPI_Info info, int root,
                             MPI_Comm comm, MPI_Comm *newcomm, pb_comm_t *c)
{
    return port_link(func, 0, port_name, info, root, comm, newcomm, c);
}

int pb_mpi_comm_disconnect_impl(const char *func, MPI_Comm *comm)
{
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(*comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
        return pb_mpi_raise(*comm, MPI_ERR_COMM, func,
                            "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected");
    /* every process of both groups is here, so what it sent on @comm was
     * matched (the standard's condition); the barrier's own messages are
     * the last */
    rc = pb_mpi_comm_is_inter(c) ? pb_coll_inter_barrier(c) : pb_coll_p2p_barrier(c);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(*comm, rc, func, "the processes could not meet to disconnect");
    return pb_mpi_comm_free_object(comm, c, func);
}

/* ---- the name service ------------------------------------------------------------------ */

/* The error of postbox_job_name_*'s @result for @func on @service. */
static int name_error(const char *func, const char *service, int result)
{
    switch (result) {
    case 0: return MPI_SUCCESS;
    case POSTBOX_JOB_NAME_TAKEN:
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_SERVICE, func,
                            "service '%.200s' is published already", service);
    case POSTBOX_JOB_NAME_NOT_FOUND:
        return pb_mpi_raise(MPI_COMM_NULL,
                            strcmp(func, "MPI_Lookup_name") == 0 ? MPI_ERR_NAME : MPI_ERR_SERVICE,
                            func, "service '%.200s' is not published", service);
    case POSTBOX_JOB_NAME_NO_SERVICE:
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_UNSUPPORTED_OPERATION, func,
                            "no name service: the process was not started by `postbox run` "
                            "(a singleton, or a launcher without PMI publish/lookup)");
    default:
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_SERVICE, func,
                            "the launcher's name service failed for '%.200s'", service);
    }
}

/* the longest service name: with the longest port, every byte escaped,
 * a PMI message still fits (PB_BOOT_PMI_MSG_MAX, 4096 bytes) */
#define SERVICE_NAME_MAX 512

/* The common checks of the name-service calls. */
static int name_args(const char *func, const char *service, MPI_Info info)
{
    int rc = need_engine(func);

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_info_check(MPI_COMM_NULL, info, 1, func);
    if (rc == MPI_SUCCESS && (service == NULL || *service == '\0'))
        rc = pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "service_name is NULL or empty");
    if (rc == MPI_SUCCESS && strnlen(service, SERVICE_NAME_MAX + 1) > SERVICE_NAME_MAX)
        rc = pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "service_name is longer than %d bytes",
                          SERVICE_NAME_MAX);
    return rc;
}

int pb_mpi_publish_name_impl(const char *func, const char *service_name, MPI_Info info,
                             const char *port_name)
{
    int rc = name_args(func, service_name, info);

    if (rc == MPI_SUCCESS && (port_name == NULL || *port_name == '\0' ||
                              strnlen(port_name, MPI_MAX_PORT_NAME) == MPI_MAX_PORT_NAME))
        rc = pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                          "port_name is NULL, empty or longer than MPI_MAX_PORT_NAME - 1");
    if (rc != MPI_SUCCESS)
        return rc;
    return name_error(func, service_name, postbox_job_name_publish(service_name, port_name));
}

int pb_mpi_unpublish_name_impl(const char *func, const char *service_name, MPI_Info info,
                               const char *port_name)
{
    char published[MPI_MAX_PORT_NAME];
    int rc = name_args(func, service_name, info), result;

    if (rc != MPI_SUCCESS)
        return rc;
    /* the service must be published with this port (the PMI request names
     * the service alone) */
    result = postbox_job_name_lookup(service_name, published, sizeof(published));
    if (result == 0 && port_name != NULL && strcmp(published, port_name) != 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_SERVICE, func,
                            "service '%.200s' is published with another port", service_name);
    if (result == 0)
        result = postbox_job_name_unpublish(service_name);
    return name_error(func, service_name, result);
}

int pb_mpi_lookup_name_impl(const char *func, const char *service_name, MPI_Info info,
                            char *port_name)
{
    int rc = name_args(func, service_name, info);

    if (rc != MPI_SUCCESS)
        return rc;
    port_name[0] = '\0';
    return name_error(func, service_name,
                      postbox_job_name_lookup(service_name, port_name, MPI_MAX_PORT_NAME));
}

/* ---- MPI_Comm_join -------------------------------------------------------------------- */

/* what each side of a join writes on the socket */
typedef struct {
    char magic[8]; /* JOIN_MAGIC */
    int32_t world_rank;
    uint32_t context; /* its proposal */
    char job[256];    /* its job id, NUL-terminated */
} join_record_t;

static const char JOIN_MAGIC[8] = "pbjoin1";

/* Write (@out; a socket's closed peer raises no SIGPIPE) or read all @len
 * bytes of @buf on @fd.  @return 0, or -1
 * (errno set; 0 when the peer closed). */
static int join_io(int fd, void *buf, size_t len, int out)
{
    char *p = buf;

    while (len > 0) {
        ssize_t done = out ? send(fd, p, len, MSG_NOSIGNAL) : read(fd, p, len);

        if (done < 0 && out && errno == ENOTSOCK)
            done = write(fd, p, len);

        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0) {
            if (done == 0)
                errno = 0;
            return -1;
        }
        p += done;
        len -= (size_t)done;
    }
    return 0;
}

/* One round of MPI_Comm_join's exchange over @fd: *@mine out, *@theirs in,
 * checked (the same job, another process of it).  @return MPI_SUCCESS or
 * the error raised for @func. */
static int join_exchange(int fd, const char *func, const pb_comm_t *w, join_record_t *mine,
                         join_record_t *theirs)
{
    /* the socket may wait for a while: this process's other threads run
     * meanwhile (engine/lock.h) */
    unsigned levels = pb_eng_lock_suspend();
    int failed =
        join_io(fd, mine, sizeof(*mine), 1) != 0 || join_io(fd, theirs, sizeof(*theirs), 0) != 0;

    pb_eng_lock_resume(levels);
    if (failed)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "fd %d: the exchange with the other process failed: %s", fd,
                            errno != 0 ? strerror(errno) : "the other end closed the socket");
    if (memcmp(theirs->magic, JOIN_MAGIC, sizeof(JOIN_MAGIC)) != 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "fd %d: the other end is not in MPI_Comm_join", fd);
    theirs->job[sizeof(theirs->job) - 1] = '\0';
    if (strcmp(theirs->job, mine->job) != 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_UNSUPPORTED_OPERATION, func,
                            "fd %d: the other process is of job %.100s, this one of %.100s "
                            "(joining two jobs is not built yet)",
                            fd, theirs->job, mine->job);
    if (theirs->world_rank < 0 || theirs->world_rank >= pb_mpi_slots() ||
        theirs->world_rank == pb_mpi_my_slot())
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "fd %d: the other end is %s", fd,
                            theirs->world_rank == pb_mpi_my_slot() ? "this process"
                                                                   : "no process of the job");
    return MPI_SUCCESS;
}

int pb_mpi_comm_join_impl(const char *func, int fd, MPI_Comm *intercomm)
{
    join_record_t mine, theirs;
    pb_comm_t *w, *n;
    uint32_t context;
    int rc = need_engine(func);

    if (rc != MPI_SUCCESS)
        return rc;
    *intercomm = MPI_COMM_NULL;
    w = pb_mpi_comm_world();
    memset(&mine, 0, sizeof(mine));
    memcpy(mine.magic, JOIN_MAGIC, sizeof(mine.magic));
    mine.world_rank = pb_mpi_my_slot();
    snprintf(mine.job, sizeof(mine.job), "%s", postbox_job_id());
    /* rounds of the context agreement (comm.h) over the socket, with
     * MPI_COMM_WORLD's context as priority */
    for (;;) {
        mine.context = pb_mpi_context_propose(w->context);
        rc = join_exchange(fd, func, w, &mine, &theirs);
        if (rc != MPI_SUCCESS) {
            pb_mpi_context_abandon(w->context, mine.context);
            return rc;
        }
        context = mine.context > theirs.context ? mine.context : theirs.context;
        if (pb_mpi_context_settle(w->context, mine.context,
                                  context == PB_MPI_CONTEXT_RETRY ? context : context + 2))
            break;
    }
    n = pb_mpi_comm_make_inter(1, &theirs.world_rank, 1, &mine.world_rank, context,
                               pb_mpi_comm(MPI_COMM_SELF)->errhandler);
    if (n == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
    *intercomm = n->handle;
    return MPI_SUCCESS;
}

/* ---- spawn ---------------------------------------------------------------------------- */

/* the key of a spawned world's key-value space that holds the port its
 * parents' root accepts on (the launcher puts it before they start) */
#define PARENT_PORT_KEY "PARENT_ROOT_PORT_NAME"
/* the longest message a root's refusal carries to its group */
#define SPAWN_WHY_MAX 400

/* MPI_Comm_get_parent's intercommunicator: made at MPI_Init (or the first
 * MPI_Session_init) of a spawned process, MPI_COMM_NULL otherwise, and
 * once freed or disconnected by the program */
static MPI_Comm parent = MPI_COMM_NULL;
static uint32_t parent_context; /* its context: a handle reused names another */
/* whether this process connected to its parents (the first start only) */
static int parent_tried;

int pb_mpi_spawn_start(const char *func)
{
    char port[MPI_MAX_PORT_NAME];
    pb_comm_t *w = pb_mpi_comm_world();
    int rc, found;

    parent = MPI_COMM_NULL;
    if (parent_tried || !postbox_job_universe() || postbox_job_world_first() == 0)
        return MPI_SUCCESS;
    parent_tried = 1;
    /* every process of the world reads the port; the root's is used */
    found = postbox_job_kvs_get(PARENT_PORT_KEY, port, sizeof(port));
    if (found != 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_SPAWN, func,
                            "this process was spawned, but its world's key-value space has no "
                            "%s (was it started by MPI_Comm_spawn?)",
                            PARENT_PORT_KEY);
    rc = port_link(func, 0, port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &parent, w);
    if (rc != MPI_SUCCESS)
        return rc;
    parent_context = ((pb_comm_t *)parent)->context;
    snprintf(((pb_comm_t *)parent)->name, sizeof(((pb_comm_t *)parent)->name), "MPI_COMM_PARENT");
    return MPI_SUCCESS;
}

int pb_mpi_comm_get_parent_impl(const char *func, MPI_Comm *parent_p)
{
    int rc = need_engine(func);

    if (rc != MPI_SUCCESS)
        return rc;
    if (parent != MPI_COMM_NULL && (!pb_eng_handle_valid(PB_ENG_HANDLE_COMM, parent) ||
                                    ((pb_comm_t *)parent)->context != parent_context))
        parent = MPI_COMM_NULL; /* freed or disconnected: the standard's MPI_COMM_NULL */
    *parent_p = parent;
    return MPI_SUCCESS;
}

/* Why this process cannot spawn (its job has no free slots to start
 * processes in), in @why. */
static void spawn_no_universe(char *why, size_t len)
{
    const char *job = postbox_job_id();

    if (job != NULL && strncmp(job, "solo-", 5) == 0)
        snprintf(why, len,
                 "this process runs alone (a singleton), without a launcher to start "
                 "processes: run it with `postbox run -n N --universe U`");
    else if (job != NULL && strncmp(job, "pmix-", 5) == 0)
        snprintf(why, len,
                 "the launcher speaks PMIx (prterun, mpirun of Open MPI, srun --mpi=pmix), "
                 "over which Postbox does not spawn processes: run the program with "
                 "`postbox run -n N --universe U`");
    else if (job != NULL && strncmp(job, "pmi-", 4) == 0)
        snprintf(why, len,
                 "the launcher (mpiexec, srun: not `postbox run`) gives Postbox no "
                 "universe of slots to spawn processes into: run the program with "
                 "`postbox run -n N --universe U`");
    else
        snprintf(why, len,
                 "the job has no free slots: `postbox run` was started without "
                 "`--universe U` (U > N slots for the ranks and the processes they "
                 "spawn)");
}

/* the most commands and info keys a spawn passes (the launcher's limits) */
#define SPAWN_COMMANDS_MAX 64
#define SPAWN_INFO_MAX 64
/* room for one info key and its value */
#define SPAWN_INFO_ROOM (MPI_MAX_INFO_KEY + MPI_MAX_INFO_VAL)

/* The string keys of @info (MPI_INFO_NULL: none) as @cmd's, copied into
 * @text (SPAWN_INFO_MAX * SPAWN_INFO_ROOM bytes), pointed to by @keys and
 * @values (SPAWN_INFO_MAX each). */
static void spawn_info(MPI_Info info, postbox_job_spawn_cmd_t *cmd, const char **keys,
                       const char **values, char *text)
{
    int nkeys = 0, flag, vlen;

    cmd->ninfo = 0;
    cmd->info_keys = keys;
    cmd->info_values = values;
    if (info == MPI_INFO_NULL || PMPI_Info_get_nkeys(info, &nkeys) != MPI_SUCCESS)
        return;
    for (int k = 0; k < nkeys && k < SPAWN_INFO_MAX; k++) {
        char *key = text + (size_t)k * SPAWN_INFO_ROOM, *value = key + MPI_MAX_INFO_KEY;

        vlen = MPI_MAX_INFO_VAL;
        if (PMPI_Info_get_nthkey(info, k, key) != MPI_SUCCESS ||
            PMPI_Info_get_string(info, key, &vlen, value, &flag) != MPI_SUCCESS || !flag)
            continue;
        keys[cmd->ninfo] = key;
        values[cmd->ninfo] = value;
        cmd->ninfo++;
    }
}

/* Check the root's arguments of a spawn; *@total_p = the processes asked
 * for.  @return MPI_SUCCESS, or the error class with @why filled. */
static int spawn_check(int count, char *commands[], const int maxprocs[], const MPI_Info infos[],
                       int *total_p, char *why, size_t len)
{
    long total = 0;

    if (count < 1 || count > SPAWN_COMMANDS_MAX || commands == NULL || maxprocs == NULL) {
        snprintf(why, len, "count %d is not 1 to %d, or array_of_commands or maxprocs is NULL",
                 count, SPAWN_COMMANDS_MAX);
        return MPI_ERR_ARG;
    }
    for (int i = 0; i < count; i++) {
        if (commands[i] == NULL || commands[i][0] == '\0' || maxprocs[i] < 1) {
            snprintf(why, len, "command %d: %s", i,
                     maxprocs[i] < 1 ? "maxprocs is less than 1" : "the command is NULL or empty");
            return MPI_ERR_ARG;
        }
        if (infos != NULL && infos[i] != MPI_INFO_NULL &&
            pb_mpi_info_check(MPI_COMM_SELF, infos[i], 1, "MPI_Comm_spawn") != MPI_SUCCESS) {
            snprintf(why, len, "command %d: the info is no info object", i);
            return MPI_ERR_INFO;
        }
        total += maxprocs[i];
    }
    if (total > INT32_MAX / 2) {
        snprintf(why, len, "%ld processes are too many", total);
        return MPI_ERR_ARG;
    }
    *total_p = (int)total;
    return MPI_SUCCESS;
}

/* The root's part of a spawn: open @port, ask the launcher to start the
 * processes with it.  @return MPI_SUCCESS (every process was started), or
 * the error class with @why filled (the port is closed again). */
static int spawn_root(int count, char *commands[], char **argvs[], const int maxprocs[],
                      const MPI_Info infos[], char *port, char *why, size_t len)
{
    postbox_job_spawn_cmd_t cmds[SPAWN_COMMANDS_MAX];
    const char *pkey = PARENT_PORT_KEY, *pvalue = port, **kv;
    char *text;
    int rc, result;

    if (!postbox_job_universe()) {
        spawn_no_universe(why, len);
        return MPI_ERR_SPAWN;
    }
    text = malloc((size_t)count * SPAWN_INFO_MAX * SPAWN_INFO_ROOM);
    kv = malloc((size_t)count * 2 * SPAWN_INFO_MAX * sizeof(*kv));
    if (text == NULL || kv == NULL) {
        free(text);
        free(kv);
        snprintf(why, len, "out of memory");
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < count; i++) {
        cmds[i].command = commands[i];
        cmds[i].argv = argvs != MPI_ARGVS_NULL && argvs[i] != MPI_ARGV_NULL ? argvs[i] : NULL;
        cmds[i].nprocs = maxprocs[i];
        spawn_info(infos != NULL ? infos[i] : MPI_INFO_NULL, &cmds[i],
                   kv + (size_t)i * 2 * SPAWN_INFO_MAX,
                   kv + (size_t)i * 2 * SPAWN_INFO_MAX + SPAWN_INFO_MAX,
                   text + (size_t)i * SPAWN_INFO_MAX * SPAWN_INFO_ROOM);
    }
    rc = pb_mpi_open_port_impl("MPI_Comm_spawn", MPI_INFO_NULL, port);
    result = rc == MPI_SUCCESS ? postbox_job_spawn(count, cmds, 1, &pkey, &pvalue, why, len) : -1;
    free(text);
    free(kv);
    if (rc != MPI_SUCCESS) {
        snprintf(why, len, "the root could not open a port for the children");
        return rc;
    }
    if (result == 0)
        return MPI_SUCCESS;
    pb_mpi_close_port_impl("MPI_Comm_spawn", port);
    if (result == POSTBOX_JOB_SPAWN_NO_SERVICE)
        spawn_no_universe(why, len);
    else if (result != POSTBOX_JOB_SPAWN_REFUSED)
        snprintf(why, len, "the launcher could not be asked (PMI failed)");
    return MPI_ERR_SPAWN;
}

/* MPI_Comm_spawn_multiple, and MPI_Comm_spawn as its one command: the
 * root starts the processes (postbox_job_spawn, with a port of its own in
 * the children's key-value space), tells its group how it went, and the
 * group accepts the children's MPI_COMM_WORLD on the port (they connect in
 * MPI_Init: pb_mpi_spawn_start). */
static int spawn(const char *func, int count, char *commands[], char **argvs[],
                 const int maxprocs[], const MPI_Info infos[], int root, MPI_Comm comm,
                 MPI_Comm *intercomm, int errcodes[], pb_comm_t *c)
{
    char port[MPI_MAX_PORT_NAME] = "";
    /* the root's outcome: the error class, the processes asked for, why */
    struct {
        int32_t rc, total;
        char why[SPAWN_WHY_MAX];
    } out;
    int rc = pb_mpi_comm_check_intra(comm, func, c);

    if (rc != MPI_SUCCESS)
        return rc;
    *intercomm = MPI_COMM_NULL;
    memset(&out, 0, sizeof(out));
    if (c->rank == root) {
        int total = 0;

        out.rc = spawn_check(count, commands, maxprocs, infos, &total, out.why, sizeof(out.why));
        out.total = total;
        if (out.rc == MPI_SUCCESS)
            out.rc =
                spawn_root(count, commands, argvs, maxprocs, infos, port, out.why, sizeof(out.why));
    }
    rc = pb_coll_bcast_binomial(&out, (int)sizeof(out), MPI_BYTE, root, c);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the root could not tell its group about the spawn");
    for (int i = 0; errcodes != MPI_ERRCODES_IGNORE && i < out.total; i++)
        errcodes[i] = out.rc == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_SPAWN;
    if (out.rc != MPI_SUCCESS) {
        out.why[sizeof(out.why) - 1] = '\0';
        return pb_mpi_raise(comm, out.rc, func, "%s", out.why);
    }
    rc = port_link(func, 1, port, MPI_INFO_NULL, root, comm, intercomm, c);
    if (c->rank == root)
        pb_mpi_close_port_impl(func, port);
    return rc;
}

int pb_mpi_comm_spawn_impl(const char *func, const char *command, char *argv[], int maxprocs,
                           MPI_Info info, int root, MPI_Comm comm, MPI_Comm *intercomm,
                           int array_of_errcodes[], pb_comm_t *c)
{
    char *commands[1] = {(char *)command};
    char **argvs[1] = {argv};

    return spawn(func, 1, commands, argvs, &maxprocs, &info, root, comm, intercomm,
                 array_of_errcodes, c);
}

int pb_mpi_comm_spawn_multiple_impl(const char *func, int count, char *array_of_commands[],
                                    char **array_of_argv[], const int array_of_maxprocs[],
                                    const MPI_Info array_of_info[], int root, MPI_Comm comm,
                                    MPI_Comm *intercomm, int array_of_errcodes[], pb_comm_t *c)
{
    return spawn(func, count, array_of_commands, array_of_argv, array_of_maxprocs, array_of_info,
                 root, comm, intercomm, array_of_errcodes, c);
}
