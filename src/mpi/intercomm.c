/*
 * Intercommunicators (MPI-5.0 section 7.6): MPI_Intercomm_create,
 * MPI_Intercomm_merge, the queries, the split, and the blocking
 * collectives (intercomm.h).
 *
 * An intercommunicator is a pb_comm_t whose size, world and local are its
 * remote group's and whose local_group is a hidden intracommunicator of
 * its local group (comm.h), so point-to-point on it is that of an
 * intracommunicator.  A new intercommunicator's context is agreed on by
 * both groups: each group's largest next free id reaches its leader (rank
 * 0 of the group, or the local leader of MPI_Intercomm_create), the two
 * leaders exchange theirs, and each tells its group the larger.
 */
#include "mpi/intercomm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/coll_p2p.h"
#include "mpi/datatype.h"
#include "mpi/p2p.h"

/* the tags of the messages between the groups, on the intercommunicator's
 * collective context (clear of coll_p2p.c's, coll_node.c's, the
 * neighborhood collectives' and the schedules', sched.h) */
enum {
    TAG_INTER_CONTEXT = 64,
    TAG_INTER_TABLE,
    TAG_INTER_BARRIER,
    TAG_INTER_BCAST,
    TAG_INTER_GATHER,
    TAG_INTER_SCATTER,
    TAG_INTER_ALLGATHER,
    TAG_INTER_ALLTOALL,
    TAG_INTER_REDUCE,
    TAG_INTER_ALLREDUCE,
    TAG_INTER_REDUCE_SCATTER
};

/* ---- requests ---------------------------------------------------------------------- */

/* Sends and receives started together and waited for together. */
typedef struct {
    MPI_Request *reqs;
    int n, max;
    int rc; /* the first error starting one */
} reqs_t;

static int reqs_init(reqs_t *r, int max)
{
    r->reqs = malloc((size_t)(max > 0 ? max : 1) * sizeof(MPI_Request));
    r->n = 0;
    r->max = max;
    r->rc = r->reqs != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    return r->rc;
}

/* Start a send (@send) or a receive on @c's collective context (@coll) or
 * its point-to-point one. */
static void reqs_start(reqs_t *r, int send, const void *buf, MPI_Count count, MPI_Datatype type,
                       int peer, int tag, pb_comm_t *c, int coll)
{
    int rc;

    if (r->rc != MPI_SUCCESS || r->n == r->max)
        return;
    rc = send ? pb_mpi_isend_on(buf, count, type, peer, tag, c, coll, &r->reqs[r->n])
              : pb_mpi_irecv_on((void *)buf, count, type, peer, tag, c, coll, &r->reqs[r->n]);
    if (rc == MPI_SUCCESS)
        r->n++;
    else
        r->rc = rc;
}

/* Wait for every request started; free them.  @return the first error. */
static int reqs_wait(reqs_t *r)
{
    int rc = r->n > 0 ? pb_mpi_wait_requests(r->n, r->reqs) : MPI_SUCCESS;

    free(r->reqs);
    r->reqs = NULL;
    return r->rc != MPI_SUCCESS ? r->rc : rc;
}

/* Send @scount elements at @sbuf to @peer of @c and receive @rcount at
 * @rbuf from it, on @c's collective context (@coll) or point-to-point one,
 * both at once. */
static int sendrecv(const void *sbuf, MPI_Count scount, void *rbuf, MPI_Count rcount,
                    MPI_Datatype type, int peer, int tag, pb_comm_t *c, int coll)
{
    reqs_t r;

    if (reqs_init(&r, 2) != MPI_SUCCESS)
        return r.rc;
    reqs_start(&r, 1, sbuf, scount, type, peer, tag, c, coll);
    reqs_start(&r, 0, rbuf, rcount, type, peer, tag, c, coll);
    return reqs_wait(&r);
}

static int send_one(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                    pb_comm_t *c)
{
    reqs_t r;

    if (reqs_init(&r, 1) != MPI_SUCCESS)
        return r.rc;
    reqs_start(&r, 1, buf, count, type, dest, tag, c, 1);
    return reqs_wait(&r);
}

static int recv_one(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                    pb_comm_t *c)
{
    reqs_t r;

    if (reqs_init(&r, 1) != MPI_SUCCESS)
        return r.rc;
    reqs_start(&r, 0, buf, count, type, source, tag, c, 1);
    return reqs_wait(&r);
}

/* The address of block @i of the buffer @buf of @type described by @v
 * (@buf may be MPI_BOTTOM: the sum is taken as integers). */
static void *block_addr(const void *buf, const pb_coll_vec_t *v, int i, MPI_Datatype type)
{
    MPI_Aint extent = pb_eng_type_extent(pb_mpi_datatype(type));

    return (void *)((uintptr_t)buf + (uintptr_t)(pb_coll_vec_displ(v, i) * extent));
}

/* ---- contexts ---------------------------------------------------------------------- */

/* The agreement within one group: this process's context proposal
 * (comm.h), the largest at @leader of @group, which calls @exchange to
 * trade it with the other group's leader for theirs, and tells the group
 * the larger of the two (or the error the exchange met); rounds until one
 * decides.  The ids up to the result + 3 are taken. */
static int group_agree_context(pb_comm_t *group, int leader, pb_mpi_leader_exchange_func_t exchange,
                               void *arg, uint32_t *context_p)
{
    for (;;) {
        uint32_t mine = pb_mpi_context_propose(group->context), best = mine, result[2] = {0, 0};
        int rc = pb_coll_reduce_binomial(&mine, &best, 1, MPI_UINT32_T, MPI_MAX, leader, group);

        if (group->rank == leader) {
            uint32_t theirs = best;

            if (rc == MPI_SUCCESS)
                rc = exchange(&theirs, arg);
            result[0] = (uint32_t)rc;
            result[1] = theirs > best ? theirs : best;
        }
        /* the leader's result reaches everyone, also when it failed */
        rc = pb_coll_bcast_binomial(result, 2, MPI_UINT32_T, leader, group);
        if (rc == MPI_SUCCESS)
            rc = (int)result[0];
        if (rc != MPI_SUCCESS) {
            pb_mpi_context_abandon(group->context, mine);
            return rc;
        }
        /* two pairs of ids: the intercommunicator's and its local group's */
        if (pb_mpi_context_settle(group->context, mine,
                                  result[1] == PB_MPI_CONTEXT_RETRY ? PB_MPI_CONTEXT_RETRY
                                                                    : result[1] + 2)) {
            *context_p = result[1];
            return MPI_SUCCESS;
        }
    }
}

int pb_mpi_group_agree_context(pb_comm_t *group, int leader, pb_mpi_leader_exchange_func_t exchange,
                               void *arg, uint32_t *context_p)
{
    return group_agree_context(group, leader, exchange, arg, context_p);
}

/* the leaders' exchange of an intercommunicator: rank 0 with remote rank 0 */
static int exchange_on_inter(uint32_t *mine_theirs, void *arg)
{
    uint32_t mine = *mine_theirs;

    return sendrecv(&mine, 1, mine_theirs, 1, MPI_UINT32_T, 0, TAG_INTER_CONTEXT, arg, 1);
}

int pb_mpi_inter_agree_context(pb_comm_t *c, uint32_t *context_p)
{
    return group_agree_context(c->local_group, 0, exchange_on_inter, c, context_p);
}

/* ---- MPI_Intercomm_create ------------------------------------------------------------ */

/* the leaders' side of MPI_Intercomm_create: the peer communicator */
typedef struct {
    pb_comm_t *peer;
    int remote_leader, tag;
} peer_t;

static int exchange_on_peer(uint32_t *mine_theirs, void *arg)
{
    peer_t *p = arg;
    uint32_t mine = *mine_theirs;

    return sendrecv(&mine, 1, mine_theirs, 1, MPI_UINT32_T, p->remote_leader, p->tag, p->peer, 0);
}

/* The leader's exchange of the groups with the remote leader over @p:
 * this group's size and world ranks out, the other's in (*@remote_p,
 * malloc'ed, of *@remote_size_p). */
static int exchange_groups(const pb_comm_t *local, peer_t *p, int *remote_size_p, int **remote_p)
{
    int size = local->size, rc;

    rc = sendrecv(&size, 1, remote_size_p, 1, MPI_INT, p->remote_leader, p->tag, p->peer, 0);
    if (rc != MPI_SUCCESS)
        return rc;
    if (*remote_size_p < 1 || *remote_size_p > pb_mpi_comm(MPI_COMM_WORLD)->size)
        return MPI_ERR_INTERN;
    *remote_p = malloc((size_t)*remote_size_p * sizeof(int));
    if (*remote_p == NULL)
        return MPI_ERR_NO_MEM;
    return sendrecv(local->world, local->size, *remote_p, *remote_size_p, MPI_INT, p->remote_leader,
                    p->tag, p->peer, 0);
}

/* Make *@newintercomm, the intercommunicator between the group of
 * @local_comm and the group whose leader is @remote_leader of @peer_comm
 * (significant at @local_leader only, which talks to it there with @tag).
 * Collective over both groups.
 * @return MPI_SUCCESS; MPI_ERR_COMM (not communicators, @local_comm an
 *         intercommunicator, groups that overlap); MPI_ERR_RANK (a leader
 *         out of range); MPI_ERR_TAG; MPI_ERR_ARG; MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                    int remote_leader, int tag, MPI_Comm *newintercomm)
{
    PB_MPI_THREAD_GUARD;
    static const char func[] = "MPI_Intercomm_create";
    pb_comm_t *l, *p = NULL, *n;
    peer_t peer;
    uint32_t context;
    int rc = pb_mpi_comm_check(local_comm, func, &l), info[2] = {MPI_SUCCESS, 0};
    int *remote = NULL;

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_comm_check_intra(local_comm, func, l);
    if (rc != MPI_SUCCESS)
        return rc;
    if (newintercomm == NULL)
        return pb_mpi_raise(local_comm, MPI_ERR_ARG, func, "newintercomm is NULL");
    if (local_leader < 0 || local_leader >= l->size)
        return pb_mpi_raise(local_comm, MPI_ERR_RANK, func, "local_leader %d is not in 0..%d",
                            local_leader, l->size - 1);
    if (tag < 0)
        return pb_mpi_raise(local_comm, MPI_ERR_TAG, func, "tag %d is negative", tag);
    if (l->rank == local_leader) {
        rc = pb_mpi_comm_check(peer_comm, func, &p);
        if (rc != MPI_SUCCESS)
            return rc;
        if (remote_leader < 0 || remote_leader >= p->size)
            return pb_mpi_raise(peer_comm, MPI_ERR_RANK, func, "remote_leader %d is not in 0..%d",
                                remote_leader, p->size - 1);
    }
    peer = (peer_t){p, remote_leader, tag};
    rc = group_agree_context(l, local_leader, exchange_on_peer, &peer, &context);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(local_comm, rc, func, "the groups could not agree on a context");
    /* the other group, from the leader to its group */
    if (l->rank == local_leader)
        info[0] = exchange_groups(l, &peer, &info[1], &remote);
    rc = pb_coll_bcast_binomial(info, 2, MPI_INT, local_leader, l);
    if (rc == MPI_SUCCESS)
        rc = info[0];
    if (rc == MPI_SUCCESS && l->rank != local_leader &&
        (remote = malloc((size_t)info[1] * sizeof(int))) == NULL)
        rc = MPI_ERR_NO_MEM;
    /* every process takes part in the broadcast once the size is known */
    if (info[0] == MPI_SUCCESS) {
        int brc = pb_coll_bcast_binomial(remote != NULL ? remote : (void *)&info[1],
                                         remote != NULL ? info[1] : 0, MPI_INT, local_leader, l);

        if (rc == MPI_SUCCESS)
            rc = brc;
    }
    for (int i = 0; rc == MPI_SUCCESS && i < info[1]; i++) {
        if (remote[i] < 0 || remote[i] >= pb_mpi_slots())
            rc = MPI_ERR_INTERN;
        else if (l->local[remote[i]] >= 0)
            rc = MPI_ERR_COMM;
    }
    if (rc != MPI_SUCCESS) {
        free(remote);
        return pb_mpi_raise(local_comm, rc, func,
                            rc == MPI_ERR_COMM ? "the two groups have a process in common"
                                               : "the leaders could not exchange the groups");
    }
    n = pb_mpi_comm_make_inter(info[1], remote, l->size, l->world, context, l->errhandler);
    free(remote);
    if (n == NULL)
        return pb_mpi_raise(local_comm, MPI_ERR_NO_MEM, func, "out of memory");
    n->session = l->session;
    *newintercomm = n->handle;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Intercomm_create, PMPI_Intercomm_create);

/* ---- MPI_Intercomm_merge --------------------------------------------------------------- */

/* what the leaders of a merge trade: the context proposal, high, and the
 * leader's world rank (which orders two groups of the same high) */
typedef struct {
    pb_comm_t *c;
    int high, first; /* in: this group's high; out: 1 if this group comes first */
} merge_t;

static int exchange_merge(uint32_t *mine_theirs, void *arg)
{
    merge_t *m = arg;
    int32_t mine[3] = {(int32_t)*mine_theirs, m->high, m->c->local_group->world[0]}, theirs[3];
    int rc = sendrecv(mine, 3, theirs, 3, MPI_INT32_T, 0, TAG_INTER_CONTEXT, m->c, 1);

    if (rc != MPI_SUCCESS)
        return rc;
    *mine_theirs = (uint32_t)theirs[0];
    m->first = m->high != theirs[1] ? !m->high : mine[2] < theirs[2];
    return MPI_SUCCESS;
}

/* Make *@newintracomm, the intracommunicator of both groups of
 * @intercomm: the group whose processes passed @high false first, each
 * group in its order (the same @high on both sides: the group with the
 * lower world rank of its rank 0 first).  Collective over both groups.
 * @return MPI_SUCCESS; MPI_ERR_COMM (not an intercommunicator);
 *         MPI_ERR_ARG; MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    PB_MPI_THREAD_GUARD;
    static const char func[] = "MPI_Intercomm_merge";
    merge_t m;
    pb_comm_t *c, *n, *g;
    uint32_t context;
    int rc = pb_mpi_comm_check(intercomm, func, &c), *world, first;

    if (rc != MPI_SUCCESS)
        return rc;
    if (!pb_mpi_comm_is_inter(c))
        return pb_mpi_raise(intercomm, MPI_ERR_COMM, func, "not an intercommunicator");
    if (newintracomm == NULL)
        return pb_mpi_raise(intercomm, MPI_ERR_ARG, func, "newintracomm is NULL");
    g = c->local_group;
    m = (merge_t){c, high != 0, 0};
    rc = group_agree_context(g, 0, exchange_merge, &m, &context);
    first = m.first;
    if (rc == MPI_SUCCESS)
        rc = pb_coll_bcast_binomial(&first, 1, MPI_INT, 0, g);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(intercomm, rc, func, "the groups could not agree on a context");
    world = malloc((size_t)(g->size + c->size) * sizeof(int));
    if (world == NULL)
        return pb_mpi_raise(intercomm, MPI_ERR_NO_MEM, func, "out of memory");
    memcpy(world + (first ? 0 : c->size), g->world, (size_t)g->size * sizeof(int));
    memcpy(world + (first ? g->size : 0), c->world, (size_t)c->size * sizeof(int));
    n = pb_mpi_comm_make(g->size + c->size, world, context, c->errhandler);
    free(world);
    if (n == NULL)
        return pb_mpi_raise(intercomm, MPI_ERR_NO_MEM, func, "out of memory");
    n->session = c->session;
    *newintracomm = n->handle;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Intercomm_merge, PMPI_Intercomm_merge);

/* ---- queries --------------------------------------------------------------------------- */

/* *@flag = whether @comm is an intercommunicator.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_test_inter", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (flag == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_test_inter", "flag is NULL");
    *flag = pb_mpi_comm_is_inter(c);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_test_inter, PMPI_Comm_test_inter);

/* The intercommunicator @comm of @func, or a raised MPI_ERR_COMM. */
static int inter_arg(MPI_Comm comm, const char *func, pb_comm_t **c_p)
{
    int rc = pb_mpi_comm_check(comm, func, c_p);

    if (rc == MPI_SUCCESS && !pb_mpi_comm_is_inter(*c_p))
        rc = pb_mpi_raise(comm, MPI_ERR_COMM, func, "not an intercommunicator");
    return rc;
}

/* *@size = the number of processes of @comm's remote group.
 * @return MPI_SUCCESS; MPI_ERR_COMM (also an intracommunicator);
 * MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Comm_remote_size(MPI_Comm comm, int *size)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = inter_arg(comm, "MPI_Comm_remote_size", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (size == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_remote_size", "size is NULL");
    *size = c->size;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_remote_size, PMPI_Comm_remote_size);

/* Make *@group, the remote group of @comm in rank order.
 * @return MPI_SUCCESS; MPI_ERR_COMM (also an intracommunicator);
 * MPI_ERR_ARG (NULL); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = inter_arg(comm, "MPI_Comm_remote_group", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (group == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_remote_group", "group is NULL");
    return pb_mpi_group_from_world(c->size, c->world, c->session, "MPI_Comm_remote_group", group);
}
PB_MPI_WEAK_ALIAS(MPI_Comm_remote_group, PMPI_Comm_remote_group);

/* ---- MPI_Comm_split ------------------------------------------------------------------------ */

typedef struct {
    int color, key, rank;
} split_entry_t;

static int split_order(const void *a, const void *b)
{
    const split_entry_t *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The world ranks of the @n processes of @table (group @world) of color
 * @color, in (key, rank) order, into @out; their number. */
static int split_members(split_entry_t *table, int n, const int *world, int color, int *out)
{
    int members = 0;

    for (int i = 0; i < n; i++) {
        if (table[i].color == color)
            table[members++] = table[i];
    }
    qsort(table, (size_t)members, sizeof(*table), split_order);
    for (int i = 0; i < members; i++)
        out[i] = world[table[i].rank];
    return members;
}

int pb_mpi_intercomm_split(pb_comm_t *c, const char *func, int color, int key, MPI_Comm *newcomm)
{
    pb_comm_t *g = c->local_group, *n;
    split_entry_t mine = {color, key, g->rank}, *local, *remote;
    pb_coll_vec_t each = pb_coll_vec_block(3);
    uint32_t context;
    int *lworld, *rworld, lsize, rsize, rc;

    *newcomm = MPI_COMM_NULL;
    local = calloc((size_t)g->size, sizeof(*local));
    remote = calloc((size_t)c->size, sizeof(*remote));
    lworld = malloc((size_t)g->size * sizeof(int));
    rworld = malloc((size_t)c->size * sizeof(int));
    rc = local != NULL && remote != NULL && lworld != NULL && rworld != NULL ? MPI_SUCCESS
                                                                             : MPI_ERR_NO_MEM;
    /* every process of the group gets both groups' colors and keys */
    if (rc == MPI_SUCCESS)
        rc = pb_coll_allgatherv_ring(&mine, 3, MPI_INT, local, &each, MPI_INT, g);
    if (rc == MPI_SUCCESS && g->rank == 0)
        rc = sendrecv(local, 3 * g->size, remote, 3 * c->size, MPI_INT, 0, TAG_INTER_TABLE, c, 1);
    if (rc == MPI_SUCCESS)
        rc = pb_coll_bcast_binomial(remote, 3 * c->size, MPI_INT, 0, g);
    if (rc == MPI_SUCCESS)
        rc = pb_mpi_inter_agree_context(c, &context);
    if (rc != MPI_SUCCESS) {
        rc = pb_mpi_raise(c->handle, rc, func, "exchanging colors failed");
        goto out;
    }
    if (color == MPI_UNDEFINED)
        goto out;
    lsize = split_members(local, g->size, g->world, color, lworld);
    rsize = split_members(remote, c->size, c->world, color, rworld);
    if (rsize == 0)
        goto out;
    n = pb_mpi_comm_make_inter(rsize, rworld, lsize, lworld, context, c->errhandler);
    if (n == NULL) {
        rc = pb_mpi_raise(c->handle, MPI_ERR_NO_MEM, func, "out of memory");
        goto out;
    }
    n->session = c->session;
    *newcomm = n->handle;
out:
    free(local);
    free(remote);
    free(lworld);
    free(rworld);
    return rc;
}

/* ---- collectives ----------------------------------------------------------------------------- */

int pb_coll_inter_barrier(pb_comm_t *c)
{
    pb_comm_t *g = c->local_group;
    char token = 0, theirs = 0;
    int rc = pb_coll_barrier_dissemination(g);

    /* every process of this group has entered; the leaders learn the same
     * of the other group, and tell theirs */
    if (rc == MPI_SUCCESS && g->rank == 0)
        rc = sendrecv(&token, 1, &theirs, 1, MPI_BYTE, 0, TAG_INTER_BARRIER, c, 1);
    if (rc == MPI_SUCCESS)
        rc = pb_coll_bcast_binomial(&token, 1, MPI_BYTE, 0, c->local_group);
    return rc;
}

int pb_coll_inter_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c)
{
    int rc = MPI_SUCCESS;

    if (root == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (root == MPI_ROOT)
        return send_one(buf, count, type, 0, TAG_INTER_BCAST, c);
    if (c->local_group->rank == 0)
        rc = recv_one(buf, count, type, root, TAG_INTER_BCAST, c);
    if (rc == MPI_SUCCESS)
        rc = pb_coll_bcast_binomial(buf, count, type, 0, c->local_group);
    return rc;
}

int pb_coll_inter_gatherv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype, int root,
                          pb_comm_t *c)
{
    reqs_t r;

    if (root == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (root != MPI_ROOT)
        return sendbuf == MPI_IN_PLACE
                   ? MPI_ERR_BUFFER
                   : send_one(sendbuf, sendcount, sendtype, root, TAG_INTER_GATHER, c);
    if (reqs_init(&r, c->size) != MPI_SUCCESS)
        return r.rc;
    for (int i = 0; i < c->size; i++)
        reqs_start(&r, 0, block_addr(recvbuf, recv, i, recvtype), pb_coll_vec_count(recv, i),
                   recvtype, i, TAG_INTER_GATHER, c, 1);
    return reqs_wait(&r);
}

int pb_coll_inter_scatterv(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                           pb_comm_t *c)
{
    reqs_t r;

    if (root == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (root != MPI_ROOT)
        return recvbuf == MPI_IN_PLACE
                   ? MPI_ERR_BUFFER
                   : recv_one(recvbuf, recvcount, recvtype, root, TAG_INTER_SCATTER, c);
    if (reqs_init(&r, c->size) != MPI_SUCCESS)
        return r.rc;
    for (int i = 0; i < c->size; i++)
        reqs_start(&r, 1, block_addr(sendbuf, send, i, sendtype), pb_coll_vec_count(send, i),
                   sendtype, i, TAG_INTER_SCATTER, c, 1);
    return reqs_wait(&r);
}

int pb_coll_inter_allgatherv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                             pb_comm_t *c)
{
    reqs_t r;

    if (sendbuf == MPI_IN_PLACE)
        return MPI_ERR_BUFFER;
    if (reqs_init(&r, 2 * c->size) != MPI_SUCCESS)
        return r.rc;
    for (int i = 0; i < c->size; i++) {
        reqs_start(&r, 0, block_addr(recvbuf, recv, i, recvtype), pb_coll_vec_count(recv, i),
                   recvtype, i, TAG_INTER_ALLGATHER, c, 1);
        reqs_start(&r, 1, sendbuf, sendcount, sendtype, i, TAG_INTER_ALLGATHER, c, 1);
    }
    return reqs_wait(&r);
}

int pb_coll_inter_alltoallv(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                            void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                            pb_comm_t *c)
{
    reqs_t r;

    if (sendbuf == MPI_IN_PLACE)
        return MPI_ERR_BUFFER;
    if (reqs_init(&r, 2 * c->size) != MPI_SUCCESS)
        return r.rc;
    for (int i = 0; i < c->size; i++) {
        reqs_start(&r, 0, block_addr(recvbuf, recv, i, recvtype), pb_coll_vec_count(recv, i),
                   recvtype, i, TAG_INTER_ALLTOALL, c, 1);
        reqs_start(&r, 1, block_addr(sendbuf, send, i, sendtype), pb_coll_vec_count(send, i),
                   sendtype, i, TAG_INTER_ALLTOALL, c, 1);
    }
    return reqs_wait(&r);
}

/* The reduction of this group's @sendbuf at its rank 0, in *@acc_p (a
 * scratch buffer of @count elements there, *@mem_p to give back; NULL
 * elsewhere). */
static int reduce_local_group(const void *sendbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                              pb_comm_t *g, void **acc_p, void **mem_p)
{
    *acc_p = *mem_p = NULL;
    if (sendbuf == MPI_IN_PLACE)
        return MPI_ERR_BUFFER;
    if (g->rank == 0 && (*acc_p = pb_coll_scratch_alloc(count, type, mem_p)) == NULL)
        return MPI_ERR_NO_MEM;
    return pb_coll_reduce_binomial(sendbuf, *acc_p, count, type, op, 0, g);
}

int pb_coll_inter_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                         MPI_Op op, int root, pb_comm_t *c)
{
    void *acc, *mem;
    int rc;

    if (root == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (root == MPI_ROOT)
        return recv_one(recvbuf, count, type, 0, TAG_INTER_REDUCE, c);
    rc = reduce_local_group(sendbuf, count, type, op, c->local_group, &acc, &mem);
    if (rc == MPI_SUCCESS && c->local_group->rank == 0)
        rc = send_one(acc, count, type, root, TAG_INTER_REDUCE, c);
    pb_coll_scratch_put(mem);
    return rc;
}

int pb_coll_inter_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                            MPI_Op op, pb_comm_t *c)
{
    void *acc, *mem;
    int rc = reduce_local_group(sendbuf, count, type, op, c->local_group, &acc, &mem);

    /* the leaders trade their groups' results; each group gets the other's */
    if (rc == MPI_SUCCESS && c->local_group->rank == 0) {
        reqs_t r;

        if (reqs_init(&r, 2) == MPI_SUCCESS) {
            reqs_start(&r, 1, acc, count, type, 0, TAG_INTER_ALLREDUCE, c, 1);
            reqs_start(&r, 0, recvbuf, count, type, 0, TAG_INTER_ALLREDUCE, c, 1);
        }
        rc = reqs_wait(&r);
    }
    pb_coll_scratch_put(mem);
    if (rc == MPI_SUCCESS)
        rc = pb_coll_bcast_binomial(recvbuf, count, type, 0, c->local_group);
    return rc;
}

int pb_coll_inter_reduce_scatter(const void *sendbuf, void *recvbuf, const pb_coll_vec_t *counts,
                                 MPI_Count total, MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    pb_comm_t *g = c->local_group;
    void *acc, *mem, *theirs = NULL, *theirs_mem = NULL;
    MPI_Aint *displs = malloc((size_t)g->size * sizeof(*displs));
    pb_coll_vec_t blocks = *counts;
    MPI_Count at = 0;
    int rc = displs != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;

    for (int i = 0; rc == MPI_SUCCESS && i < g->size; i++) {
        displs[i] = (MPI_Aint)at;
        at += pb_coll_vec_count(counts, i);
    }
    blocks.displs = (pb_mpi_displs_t){NULL, displs};
    if (rc == MPI_SUCCESS)
        rc = reduce_local_group(sendbuf, total, type, op, g, &acc, &mem);
    else
        mem = NULL;
    /* the leaders trade their groups' reductions; each scatters the other's */
    if (rc == MPI_SUCCESS && g->rank == 0) {
        theirs = pb_coll_scratch_alloc(total, type, &theirs_mem);
        rc = theirs != NULL
                 ? sendrecv(acc, total, theirs, total, type, 0, TAG_INTER_REDUCE_SCATTER, c, 1)
                 : MPI_ERR_NO_MEM;
    }
    pb_coll_scratch_put(mem);
    if (rc == MPI_SUCCESS)
        rc = pb_coll_scatterv_direct(theirs, &blocks, type, recvbuf,
                                     pb_coll_vec_count(counts, g->rank), type, 0, g);
    pb_coll_scratch_put(theirs_mem);
    free(displs);
    return rc;
}
