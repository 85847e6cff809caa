/*
 * The entry points of the node path (coll_node.h) and its algorithms
 * across nodes (coll_node_impl.h).  Between nodes, the leaders run the
 * algorithm coll.c's table chooses on a communicator of their own (one
 * rank per node, so point-to-point; same context ids as the parent: a
 * collective is all node path or all point-to-point on every rank, so
 * their messages cannot meet another collective's out of order).  Where
 * each node's ranks are consecutive (and, for some, equally many)
 * Barrier, Bcast, Gather, Scatter and Alltoall need no leaders'
 * communicator: the ranks that cross the network (a rooted collective's
 * root, ranks of the same local index) talk on the parent's collective
 * context directly.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/coll_node_impl.h"
#include "mpi/coll_util.h"
#include "mpi/op.h"
#include "mpi/p2p.h"

/* across nodes, a Bcast shorter than this goes by point-to-point in a
 * tree in node order (bcast_tree), a longer one through the areas
 * (docs/notes/2026-11-27-collectives-across-nodes.md) */
#define BCAST_TREE_BELOW 65536
/* and a Reduce of a commutative op shorter than this in the mirror tree
 * (reduce_tree), a longer one by the leaders */
#define REDUCE_TREE_BELOW 524288
/* and an Allgather of blocks of at least this many bytes, on nodes of
 * equally many ranks that can read each other's memory, in pairs across
 * the nodes (allgather_pairs), a shorter one through the leaders
 * (allgather_nodes) */
#define ALLGATHER_PAIRS_FROM 262144

/* ---- between nodes, without leaders ------------------------------------------------ */

/* The rank of local index @i on node @k (a blocked layout). */
static int rank_at(const pb_coll_node_t *cn, int k, int i)
{
    return cn->node_first[k] + i;
}

/* The ranks node @k holds (a blocked layout). */
static int node_size(const pb_coll_node_t *cn, pb_comm_t *c, int k)
{
    return (k + 1 < cn->nodes ? cn->node_first[k + 1] : c->size) - cn->node_first[k];
}

/* Send an empty message to @dest and receive one from @source on @c's
 * collective context with @tag, together.  @return MPI_SUCCESS or an
 * error class. */
static int swap_empty(int dest, int source, int tag, pb_comm_t *c)
{
    MPI_Request reqs[2];
    int rc = pb_mpi_irecv_on(NULL, 0, MPI_BYTE, source, tag, c, 1, &reqs[0]);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = pb_mpi_isend_on(NULL, 0, MPI_BYTE, dest, tag, c, 1, &reqs[1]);
    if (rc != MPI_SUCCESS) {
        pb_mpi_wait_requests(1, reqs); /* the peer's message comes anyway */
        return rc;
    }
    return pb_mpi_wait_requests(2, reqs);
}

/* Wait for the @nreqs requests at @reqs (none: nothing).  @return @rc
 * when it is an error, else the wait's. */
static int wait_after(int rc, int nreqs, MPI_Request *reqs)
{
    int wait_rc = nreqs > 0 ? pb_mpi_wait_requests(nreqs, reqs) : MPI_SUCCESS;

    return rc == MPI_SUCCESS ? wait_rc : rc;
}

/* Receive or send one message of a collective on @c (TAG_NODE_MOVE) and
 * wait for it.  @return MPI_SUCCESS or an error class. */
static int recv_now(void *buf, MPI_Count count, MPI_Datatype type, int source, pb_comm_t *c)
{
    MPI_Request req;
    int rc = pb_mpi_irecv_on(buf, count, type, source, TAG_NODE_MOVE, c, 1, &req);

    return rc == MPI_SUCCESS ? pb_mpi_wait_requests(1, &req) : rc;
}

static int send_now(const void *buf, MPI_Count count, MPI_Datatype type, int dest, pb_comm_t *c)
{
    MPI_Request req;
    int rc = pb_mpi_isend_on(buf, count, type, dest, TAG_NODE_MOVE, c, 1, &req);

    return rc == MPI_SUCCESS ? pb_mpi_wait_requests(1, &req) : rc;
}

/* Start a receive into @rbuf from @peer, then a send from @sbuf to it, of
 * a collective on @c (TAG_NODE_MOVE), their requests added at
 * @reqs[*@nreqs].  @return MPI_SUCCESS or the error of the first that did
 * not start (then the send is not started). */
static int start_swap(void *rbuf, MPI_Count rcount, MPI_Datatype rtype, const void *sbuf,
                      MPI_Count scount, MPI_Datatype stype, int peer, pb_comm_t *c,
                      MPI_Request *reqs, int *nreqs)
{
    int rc = pb_mpi_irecv_on(rbuf, rcount, rtype, peer, TAG_NODE_MOVE, c, 1, &reqs[*nreqs]);

    if (rc != MPI_SUCCESS)
        return rc;
    (*nreqs)++;
    rc = pb_mpi_isend_on(sbuf, scount, stype, peer, TAG_NODE_MOVE, c, 1, &reqs[*nreqs]);
    if (rc == MPI_SUCCESS)
        (*nreqs)++;
    return rc;
}

/* Barrier across nodes that each hold n consecutive ranks: the node's
 * ranks arrive through the area, then local rank i of every node meets
 * local rank i of the others by dissemination over point-to-point (one
 * empty message each way between two nodes), each pair at once.  Nobody
 * relays and nobody waits for a release: a rank that heard from its peers
 * knows their nodes all arrived. */
static int barrier_across(pb_coll_node_t *cn, pb_comm_t *c)
{
    int rc = MPI_SUCCESS;

    pb_coll_node_barrier_local(cn);
    for (int k = 1; k < cn->nodes && rc == MPI_SUCCESS; k <<= 1)
        rc = swap_empty(rank_at(cn, (cn->node + k) % cn->nodes, cn->me),
                        rank_at(cn, (cn->node - k + cn->nodes) % cn->nodes, cn->me),
                        TAG_NODE_BARRIER, c);
    return rc;
}

/* ---- the collectives ---------------------------------------------------------------- */

int pb_coll_node_barrier(pb_comm_t *c)
{
    pb_coll_node_t *cn = pb_coll_node_state(c);
    int rc = MPI_SUCCESS;

    if (cn == NULL)
        return PB_COLL_NODE_DECLINED;
    if (cn->nodes == 1) {
        pb_coll_node_barrier_local(cn);
        return MPI_SUCCESS;
    }
    if (cn->even)
        return barrier_across(cn, c);
    /* every local rank arrives; the leader meets the other leaders, then
     * lets its ranks go */
    pb_coll_node_post(cn);
    if (cn->me == 0) {
        pb_coll_node_wait_all(cn, cn->step);
        rc = pb_coll_p2p_barrier(cn->leaders);
    } else {
        pb_coll_node_wait_one(cn, 0, cn->step + 1);
    }
    pb_coll_node_post(cn);
    return rc;
}

/* What PB_ALG_NODE_AUTO runs on @cn for data of @cell_bytes in the root's
 * cell: itself where both the cells and single copy can (one node whose
 * ranks can read each other, the data fitting a cell), else the one of
 * them that can (across nodes the cells' algorithms). */
static pb_coll_alg_t auto_path(const pb_coll_node_t *cn, size_t cell_bytes)
{
    if (cn == NULL || cn->nodes > 1 || !cn->cma)
        return PB_ALG_NODE;
    return cell_bytes <= cn->cell ? PB_ALG_NODE_AUTO : PB_ALG_NODE_CMA;
}

static int local_bcast(pb_coll_node_t *cn, pb_coll_alg_t alg, void *buf, MPI_Count count,
                       MPI_Datatype type, int root)
{
    if (alg == PB_ALG_NODE_AUTO)
        return pb_coll_node_bcast_auto(cn, buf, count, type, root);
    if (alg == PB_ALG_NODE_CMA)
        return pb_coll_node_bcast_cma(cn, buf, count, type, root);
    pb_coll_node_bcast_cells(cn, buf, count, type, root);
    return MPI_SUCCESS;
}

/* The local index of rank @r of this node. */
static int local_index(const pb_coll_node_t *cn, int r)
{
    int i = 0;

    while (cn->local_comm[i] != r)
        i++;
    return i;
}

/* Whose data node @k's ranks take from the network in a rooted
 * collective: the root itself on its node, the leader on the others. */
static int agent_of(const pb_coll_node_t *cn, int k, int root, int root_node)
{
    return k == root_node ? root : cn->node_first[k];
}

/* The rank at place @q of the order a node-ordered tree rooted at @root
 * takes (an even layout): nodes from the root's on, and on each node the
 * local ranks from the root's local index on. */
static int tree_rank(const pb_coll_node_t *cn, int root, int q)
{
    int root_node = cn->rank_node[root], root_local = root - cn->node_first[root_node];

    return rank_at(cn, (root_node + q / cn->n) % cn->nodes, (root_local + q % cn->n) % cn->n);
}

/* This rank's place in that order. */
static int tree_place(const pb_coll_node_t *cn, int root)
{
    int root_node = cn->rank_node[root], root_local = root - cn->node_first[root_node];

    return ((cn->node - root_node + cn->nodes) % cn->nodes) * cn->n +
           (cn->me - root_local + cn->n) % cn->n;
}

/* The rank at place @p of the tree over one rank per node of a Bcast
 * from @root (pb_coll_node_bcast): nodes from the root's on, the root
 * itself on its node, the leader on the others. */
static int agent_rank(const pb_coll_node_t *cn, int root, int p)
{
    int root_node = cn->rank_node[root];

    return agent_of(cn, (p + root_node) % cn->nodes, root, root_node);
}

/* Place @q's part of a binomial Bcast from @root over @places places
 * (place 0 holds the data; @rank_of names a place's rank): receive from
 * its parent, then start the sends to its children into @reqs (up to 32),
 * without waiting for them.  @return MPI_SUCCESS or an error class;
 * *@nreqs: the sends started. */
static int bcast_binomial(const pb_coll_node_t *cn, pb_comm_t *c, void *buf, MPI_Count count,
                          MPI_Datatype type, int root, int q, int places,
                          int (*rank_of)(const pb_coll_node_t *, int, int), MPI_Request *reqs,
                          int *nreqs)
{
    int mask = 1, rc = MPI_SUCCESS;

    *nreqs = 0;
    for (; mask < places; mask <<= 1) {
        if (q & mask) {
            rc = recv_now(buf, count, type, rank_of(cn, root, q - mask), c);
            break;
        }
    }
    for (mask >>= 1; mask > 0 && rc == MPI_SUCCESS; mask >>= 1) {
        if (q + mask < places) {
            rc = pb_mpi_isend_on(buf, count, type, rank_of(cn, root, q + mask), TAG_NODE_MOVE, c, 1,
                                 &reqs[*nreqs]);
            if (rc == MPI_SUCCESS)
                (*nreqs)++;
        }
    }
    return rc;
}

/* Binomial broadcast over point-to-point in the node order (an even
 * layout): the tree's upper levels cross the nodes, one message into each
 * node, and its lower levels stay on the node, whatever the root. */
static int bcast_tree(pb_coll_node_t *cn, pb_comm_t *c, void *buf, MPI_Count count,
                      MPI_Datatype type, int root)
{
    MPI_Request reqs[32];
    int nreqs, rc = bcast_binomial(cn, c, buf, count, type, root, tree_place(cn, root), c->size,
                                   tree_rank, reqs, &nreqs);

    return wait_after(rc, nreqs, reqs);
}

int pb_coll_node_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c,
                       pb_coll_alg_t alg)
{
    pb_coll_node_t *cn = pb_coll_node_state(c);
    int rc = MPI_SUCCESS, root_node, agent, nreqs = 0;
    MPI_Request reqs[32];

    if (alg == PB_ALG_NODE_AUTO) /* (the cells pipeline a Bcast of any size) */
        alg = auto_path(cn, 0);
    if (cn == NULL || (alg == PB_ALG_NODE_CMA && !cn->cma))
        return PB_COLL_NODE_DECLINED;
    if (cn->nodes > 1 && alg == PB_ALG_NODE && type_bytes(count, type) < BCAST_TREE_BELOW)
        return cn->even ? bcast_tree(cn, c, buf, count, type, root) : PB_COLL_NODE_DECLINED;
    pb_coll_node_settle_halves(cn);
    root_node = cn->rank_node[root];
    /* Between nodes a binomial tree over one rank per node, the root
     * itself on its node (no hop to its leader first), each node's leader
     * on the others; a rank of the tree sends on before it broadcasts on
     * its node, so the network step and the node's run at once. */
    agent = agent_of(cn, cn->node, root, root_node);
    if (cn->nodes > 1 && c->rank == agent)
        rc = bcast_binomial(cn, c, buf, count, type, root,
                            (cn->node - root_node + cn->nodes) % cn->nodes, cn->nodes, agent_rank,
                            reqs, &nreqs);
    if (cn->n > 1) {
        int node_rc = local_bcast(cn, alg, buf, count, type, local_index(cn, agent));

        rc = rc == MPI_SUCCESS ? node_rc : rc;
    }
    return wait_after(rc, nreqs, reqs);
}

/* Whether the node path can reduce with @op across the nodes: the leaders
 * combine node results in node order, which is rank order only when each
 * node's ranks are consecutive.  An element must fit half a cell: a rank
 * reduces in its own cell (coll_node_local.c). */
static int reducible(const pb_coll_node_t *cn, MPI_Datatype type, MPI_Op op)
{
    return pb_coll_node_sliceable(type) &&
           pb_eng_type_size(pb_mpi_datatype(type)) <= cn->cell / 2 &&
           (cn->nodes == 1 || cn->blocked || pb_mpi_op_is_commutative(op));
}

/* A reduction on the node by single copies (@single_copy) or through the
 * cells; @root -1: every rank takes the result (Allreduce). */
static int reduce_by(pb_coll_node_t *cn, int single_copy, const void *sendbuf, void *result,
                     MPI_Count count, MPI_Datatype type, MPI_Op op, int root)
{
    if (single_copy)
        return pb_coll_node_reduce_cma(cn, sendbuf, result, count, type, op, root);
    return pb_coll_node_reduce_cells(cn, sendbuf, result, count, type, op, root);
}

/* The reduction of the node path @alg: single copies (node_cma), through
 * the cells (node), or whichever of them the node's trials found faster
 * (node_auto, on one node whose ranks can read each other). */
static int local_reduce(pb_coll_node_t *cn, pb_coll_alg_t alg, const void *sendbuf, void *result,
                        MPI_Count count, MPI_Datatype type, MPI_Op op, int root)
{
    pb_coll_node_call_t call;
    int path, rc;

    if (alg != PB_ALG_NODE_AUTO)
        return reduce_by(cn, alg == PB_ALG_NODE_CMA, sendbuf, result, count, type, op, root);
    path = pb_coll_node_pick_begin(
        cn, root < 0 ? PB_COLL_NODE_PICK_ALLREDUCE : PB_COLL_NODE_PICK_REDUCE,
        type_bytes(count, type), &call);
    rc = reduce_by(cn, path == PB_COLL_NODE_SINGLE_COPY, sendbuf, result, count, type, op, root);
    pb_coll_node_pick_end(cn, &call);
    return rc;
}

/* PB_ALG_NODE_AUTO where the node cannot pick (across nodes, or ranks
 * that cannot read each other): the cells. */
static pb_coll_alg_t auto_or_cells(const pb_coll_node_t *cn, pb_coll_alg_t alg)
{
    if (alg == PB_ALG_NODE_AUTO && (cn->nodes > 1 || !cn->cma))
        return PB_ALG_NODE;
    return alg;
}

int pb_coll_node_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                           MPI_Op op, pb_comm_t *c, pb_coll_alg_t alg)
{
    pb_coll_node_t *cn = pb_coll_node_state(c);
    int rc, bcast_rc;

    if (cn == NULL || !reducible(cn, type, op) || (alg == PB_ALG_NODE_CMA && !cn->cma))
        return PB_COLL_NODE_DECLINED;
    alg = auto_or_cells(cn, alg);
    if (cn->nodes == 1 && alg == PB_ALG_NODE && pb_coll_node_one_phase(cn, type_bytes(count, type)))
        return pb_coll_node_reduce_halves(cn, sendbuf, recvbuf, count, type, op, -1);
    pb_coll_node_settle_halves(cn);
    if (cn->nodes == 1)
        return local_reduce(cn, alg, sendbuf, recvbuf, count, type, op, -1);
    rc = cn->n > 1 ? local_reduce(cn, alg, sendbuf, recvbuf, count, type, op, 0) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && cn->n == 1 && sendbuf != recvbuf)
        memcpy(recvbuf, sendbuf, type_bytes(count, type));
    if (rc == MPI_SUCCESS && cn->me == 0)
        rc = pb_coll_p2p_allreduce(recvbuf, recvbuf, count, type, op, cn->leaders);
    if (cn->n > 1) {
        bcast_rc = local_bcast(cn, alg, recvbuf, count, type, 0);
        rc = rc == MPI_SUCCESS ? bcast_rc : rc;
    }
    return rc;
}

/* Binomial reduction of a commutative @op over point-to-point in the node
 * order of bcast_tree (an even layout): each node's ranks combine on the
 * node first, and one message leaves each node, whatever the root.  The
 * two vectors a rank combines in are scratch memory, or its cell when that
 * fails (the default cell holds two of any vector this takes).  @return
 * MPI_SUCCESS or an error class (MPI_ERR_NO_MEM: no memory and a cell too
 * small; the others wait, erroneous). */
static int reduce_tree(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf, void *recvbuf,
                       MPI_Count count, MPI_Datatype type, MPI_Op op, int root)
{
    size_t bytes = type_bytes(count, type);
    int q = tree_place(cn, root), rc = MPI_SUCCESS;
    char *mem = pb_coll_scratch_get(2 * bytes + 1), *acc = mem, *tmp;

    if (acc == NULL) {
        /* this rank's cell, once nobody reads it, when it holds both */
        if (cn->n == 1 || 2 * bytes > cn->cell)
            return MPI_ERR_NO_MEM; /* erroneous from here: the others wait */
        pb_coll_node_wait_all(cn, cn->step);
        acc = cell(cn, cn->me);
    }
    tmp = acc + bytes;
    memcpy(acc, sendbuf, bytes); /* at the root @sendbuf may be @recvbuf */
    for (int mask = 1; mask < c->size && rc == MPI_SUCCESS; mask <<= 1) {
        if (q & mask) {
            rc = send_now(acc, count, type, tree_rank(cn, root, q - mask), c);
            break;
        }
        if (q + mask < c->size) {
            rc = recv_now(tmp, count, type, tree_rank(cn, root, q + mask), c);
            if (rc == MPI_SUCCESS)
                pb_mpi_op_apply(op, tmp, acc, count, type);
        }
    }
    if (rc == MPI_SUCCESS && q == 0)
        memcpy(recvbuf, acc, bytes);
    pb_coll_scratch_put(mem);
    return rc;
}

int pb_coll_node_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                        MPI_Op op, int root, pb_comm_t *c, pb_coll_alg_t alg)
{
    pb_coll_node_t *cn = pb_coll_node_state(c);
    size_t bytes;
    void *partial;
    int rc = MPI_SUCCESS, root_node;

    if (cn == NULL || !reducible(cn, type, op) || (alg == PB_ALG_NODE_CMA && !cn->cma))
        return PB_COLL_NODE_DECLINED;
    alg = auto_or_cells(cn, alg);
    if (cn->nodes == 1) {
        int local_root = 0;

        while (cn->local_comm[local_root] != root)
            local_root++;
        /* in one phase only in the line: through the cell the root's
         * one-phase Reduce measured slower than two phases (1 KB 0.47 ->
         * 0.58 us, 4 KB 1.1 -> 1.8 us at 2 ranks) */
        if (alg == PB_ALG_NODE && type_bytes(count, type) <= HALF_MAX)
            return pb_coll_node_reduce_halves(cn, sendbuf, recvbuf, count, type, op, local_root);
        pb_coll_node_settle_halves(cn);
        return local_reduce(cn, alg, sendbuf, recvbuf, count, type, op, local_root);
    }
    pb_coll_node_settle_halves(cn);
    if (alg == PB_ALG_NODE && type_bytes(count, type) < REDUCE_TREE_BELOW) {
        if (!cn->even || !pb_mpi_op_is_commutative(op))
            return PB_COLL_NODE_DECLINED;
        return reduce_tree(cn, c, sendbuf, recvbuf, count, type, op, root);
    }
    /* each node reduces to its leader, the leaders to the root's leader,
     * which hands the result to the root */
    bytes = type_bytes(count, type);
    root_node = cn->rank_node[root];
    partial = recvbuf;
    if (cn->me == 0 && c->rank != root) {
        partial = pb_coll_scratch_get(bytes);
        if (partial == NULL)
            rc = MPI_ERR_NO_MEM;
    }
    if (cn->n > 1) {
        int node_rc =
            local_reduce(cn, alg, sendbuf, cn->me == 0 ? partial : NULL, count, type, op, 0);

        rc = rc == MPI_SUCCESS ? node_rc : rc;
    } else if (rc == MPI_SUCCESS && partial != sendbuf) {
        memcpy(partial, sendbuf, bytes);
    }
    if (cn->me == 0) {
        if (rc == MPI_SUCCESS)
            rc = pb_coll_p2p_reduce(partial, partial, count, type, op, root_node, cn->leaders);
        if (rc == MPI_SUCCESS && cn->node == root_node && c->rank != root)
            rc = send_now(partial, count, type, root, c);
        if (partial != recvbuf)
            pb_coll_scratch_put(partial);
    } else if (c->rank == root) {
        rc = recv_now(recvbuf, count, type, cn->local_comm[0], c);
    }
    return rc;
}

/* The node path of the data movers: one node; through the cells (@alg
 * PB_ALG_NODE) when @cell_bytes fit one, or by single copy
 * (PB_ALG_NODE_CMA) when the node's ranks can read each other. */
static pb_coll_node_t *mover_state(pb_comm_t *c, pb_coll_alg_t alg, size_t cell_bytes)
{
    pb_coll_node_t *cn = pb_coll_node_state(c);

    if (cn == NULL || cn->nodes != 1)
        return NULL;
    if (alg == PB_ALG_NODE_CMA ? !cn->cma : cell_bytes > cn->cell)
        return NULL;
    return cn;
}

/*
 * Gather across nodes (a blocked layout, each node's blocks fitting a
 * cell): on the root's node the ranks hand their blocks to the root
 * through the area; on each other node to the leader, which gathers them
 * in its cell (alone on its node: takes its own block from its buffer)
 * and sends them to the root in one message, which the root receives
 * straight into its receive buffer.  The root posts those receives
 * first, so the network step and its node's run at once.  Nothing is
 * allocated.
 */
static int gather_across(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, int root, size_t bytes)
{
    int root_node = cn->rank_node[root], nreqs = 0, rc = MPI_SUCCESS;
    int agent = local_index(cn, agent_of(cn, cn->node, root, root_node));
    uint64_t base = cn->step;
    MPI_Request *reqs = cn->reqs;

    if (cn->me != agent) {
        pb_coll_node_wait_all(cn, base);
        pack(sendbuf, sendcount, sendtype, 0, slot(cn, cn->me, bytes), bytes);
        pb_coll_node_post(cn);
        return MPI_SUCCESS;
    }
    if (c->rank != root) { /* a leader */
        char *all = cn->n > 1 ? cell(cn, cn->me) : NULL;

        if (cn->n > 1) {
            /* the others are past the last phase that read this cell */
            pb_coll_node_wait_others(cn, base + 1);
            for (int j = 0; j < cn->n; j++) {
                if (j == cn->me)
                    pack(sendbuf, sendcount, sendtype, 0, all + (size_t)j * bytes, bytes);
                else
                    memcpy(all + (size_t)j * bytes, slot(cn, j, bytes), bytes);
            }
            pb_coll_node_post(cn);
            return send_now(all, (MPI_Count)((size_t)cn->n * bytes), MPI_BYTE, root, c);
        }
        return send_now(sendbuf, sendcount, sendtype, root, c);
    }
    for (int k = 0; k < cn->nodes && rc == MPI_SUCCESS; k++) {
        if (k == root_node)
            continue;
        rc = pb_mpi_irecv_on(block_addr(recvbuf, cn->node_first[k], recvcount, recvtype),
                             (MPI_Count)node_size(cn, c, k) * recvcount, recvtype,
                             cn->node_first[k], TAG_NODE_MOVE, c, 1, &reqs[nreqs]);
        if (rc == MPI_SUCCESS)
            nreqs++;
    }
    if (sendbuf != MPI_IN_PLACE && rc == MPI_SUCCESS)
        rc = pb_coll_copy_typed(sendbuf, sendcount, sendtype,
                                block_addr(recvbuf, c->rank, recvcount, recvtype), recvcount,
                                recvtype);
    if (cn->n > 1) {
        pb_coll_node_wait_others(cn, base + 1);
        for (int j = 0; j < cn->n; j++) {
            if (j != cn->me &&
                pb_coll_node_unpack(slot(cn, j, bytes), bytes,
                                    block_addr(recvbuf, cn->local_comm[j], recvcount, recvtype),
                                    recvcount, recvtype, 0) != MPI_SUCCESS)
                rc = MPI_ERR_TRUNCATE;
        }
        pb_coll_node_post(cn);
    }
    return wait_after(rc, nreqs, reqs);
}

/*
 * Scatter across nodes (a blocked layout, each node's blocks fitting a
 * cell): the root sends each other node's leader that node's blocks in one
 * message, straight from its send buffer, then hands its own node's ranks
 * theirs through the area; each leader receives its node's blocks
 * straight into its slot of the area (alone on its node: its block into
 * its receive buffer), where its node's ranks read theirs.  Nothing is
 * allocated.
 */
static int scatter_across(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf,
                          MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                          MPI_Count recvcount, MPI_Datatype recvtype, int root, size_t bytes)
{
    int root_node = cn->rank_node[root], nreqs = 0, rc = MPI_SUCCESS;
    int agent = local_index(cn, agent_of(cn, cn->node, root, root_node));
    size_t node_bytes = bytes * (size_t)cn->n;
    uint64_t base = cn->step;
    MPI_Request *reqs = cn->reqs;

    if (cn->me != agent) {
        pb_coll_node_wait_one(cn, agent, base + 1);
        rc = pb_coll_node_unpack(slot(cn, agent, node_bytes) + (size_t)cn->me * bytes, bytes,
                                 recvbuf, recvcount, recvtype, 0);
        pb_coll_node_post(cn);
        return rc;
    }
    if (c->rank != root) { /* a leader */
        char *at;

        if (cn->n == 1)
            return recv_now(recvbuf, recvcount, recvtype, root, c);
        at = slot(cn, cn->me, node_bytes);
        pb_coll_node_wait_all(cn, base); /* nobody reads the slot any more */
        rc = recv_now(at, (MPI_Count)node_bytes, MPI_BYTE, root, c);
        pb_coll_node_post(cn);
        if (rc == MPI_SUCCESS)
            rc = pb_coll_node_unpack(at + (size_t)cn->me * bytes, bytes, recvbuf, recvcount,
                                     recvtype, 0);
        return rc;
    }
    for (int k = 0; k < cn->nodes && rc == MPI_SUCCESS; k++) {
        int first = cn->node_first[k];

        if (k == root_node)
            continue;
        rc = pb_mpi_isend_on(block_addr(sendbuf, first, sendcount, sendtype),
                             (MPI_Count)node_size(cn, c, k) * sendcount, sendtype, first,
                             TAG_NODE_MOVE, c, 1, &reqs[nreqs]);
        if (rc == MPI_SUCCESS)
            nreqs++;
    }
    if (cn->n > 1) {
        pb_coll_node_wait_all(cn, base);
        for (int j = 0; j < cn->n; j++) {
            if (j != cn->me)
                pack(block_addr(sendbuf, cn->local_comm[j], sendcount, sendtype), sendcount,
                     sendtype, 0, slot(cn, cn->me, node_bytes) + (size_t)j * bytes, bytes);
        }
        pb_coll_node_post(cn);
    }
    if (recvbuf != MPI_IN_PLACE) {
        int copy_rc = pb_coll_copy_typed(block_addr(sendbuf, c->rank, sendcount, sendtype),
                                         sendcount, sendtype, recvbuf, recvcount, recvtype);

        rc = rc == MPI_SUCCESS ? copy_rc : rc;
    }
    return wait_after(rc, nreqs, reqs);
}

/* Gather on one node through the cells: each rank packs its block into
 * its cell, the root unpacks them all. */
static int gather_cells(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, size_t bytes)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    uint64_t base = cn->step;
    int rc = MPI_SUCCESS;

    if (c->rank != root) {
        pb_coll_node_wait_all(cn, base);
        pack(sendbuf, sendcount, sendtype, 0, slot(cn, cn->me, bytes), bytes);
        pb_coll_node_post(cn);
        return MPI_SUCCESS;
    }
    /* the root's own block goes straight across; the others' from their cells */
    if (!in_place)
        rc = pb_coll_copy_typed(sendbuf, sendcount, sendtype,
                                block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount,
                                recvtype);
    pb_coll_node_wait_others(cn, base + 1);
    for (int j = 0; j < cn->n; j++) {
        if (j != cn->me && pb_coll_node_unpack(slot(cn, j, bytes), bytes,
                                               block_addr(recvbuf, j, recvcount, recvtype),
                                               recvcount, recvtype, 0) != MPI_SUCCESS)
            rc = MPI_ERR_TRUNCATE;
    }
    pb_coll_node_post(cn);
    return rc;
}

int pb_coll_node_gather(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                        pb_comm_t *c, pb_coll_alg_t alg)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    size_t bytes = in_place ? type_bytes(recvcount, recvtype) : type_bytes(sendcount, sendtype);
    pb_coll_node_t *cn = pb_coll_node_state(c);

    if (alg == PB_ALG_NODE_AUTO)
        alg = auto_path(cn, bytes);
    if (cn != NULL && cn->nodes > 1 && cn->blocked && alg == PB_ALG_NODE &&
        bytes * (size_t)cn->most <= cn->cell) {
        pb_coll_node_settle_halves(cn);
        return gather_across(cn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                             root, bytes);
    }
    cn = mover_state(c, alg, bytes);
    if (cn == NULL)
        return PB_COLL_NODE_DECLINED;
    pb_coll_node_settle_halves(cn);
    if (alg == PB_ALG_NODE_AUTO) {
        pb_coll_node_call_t call;
        int rc;

        if (pb_coll_node_pick_begin(cn, PB_COLL_NODE_PICK_GATHER, bytes, &call) ==
            PB_COLL_NODE_CELLS)
            rc = gather_cells(cn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                              root, bytes);
        else
            rc = pb_coll_node_gather_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                         recvtype, root, bytes);
        pb_coll_node_pick_end(cn, &call);
        return rc;
    }
    if (alg == PB_ALG_NODE_CMA)
        return pb_coll_node_gather_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                       recvtype, root, bytes);
    return gather_cells(cn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                        bytes);
}

int pb_coll_node_scatter(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                         pb_comm_t *c, pb_coll_alg_t alg)
{
    size_t bytes =
        c->rank == root ? type_bytes(sendcount, sendtype) : type_bytes(recvcount, recvtype);
    pb_coll_node_t *cn = pb_coll_node_state(c);

    if (alg == PB_ALG_NODE_AUTO)
        alg = auto_path(cn, bytes * (size_t)c->size);
    if (cn != NULL && cn->nodes > 1 && cn->blocked && alg == PB_ALG_NODE &&
        bytes * (size_t)cn->most <= cn->cell) {
        pb_coll_node_settle_halves(cn);
        return scatter_across(cn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                              root, bytes);
    }
    cn = mover_state(c, alg, bytes * (size_t)c->size);
    if (cn == NULL)
        return PB_COLL_NODE_DECLINED;
    pb_coll_node_settle_halves(cn);
    if (alg == PB_ALG_NODE_AUTO)
        return pb_coll_node_scatter_auto(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                         recvtype, root, bytes);
    if (alg == PB_ALG_NODE_CMA)
        return pb_coll_node_scatter_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                        recvtype, root, bytes);
    return pb_coll_node_scatter_cells(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                      recvtype, root, bytes);
}

/* An Allgather's first phase through the area: once every local rank is
 * past @base, this rank's block of @bytes (in place: at its place in
 * @recvbuf) packed into its slot, and posted. */
static void allgather_put(pb_coll_node_t *cn, pb_comm_t *c, uint64_t base, const void *sendbuf,
                          MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                          MPI_Count recvcount, MPI_Datatype recvtype, size_t bytes)
{
    pb_coll_node_wait_all(cn, base);
    if (sendbuf == MPI_IN_PLACE)
        pack(block_addr(recvbuf, c->rank, recvcount, recvtype), recvcount, recvtype, 0,
             slot(cn, cn->me, bytes), bytes);
    else
        pack(sendbuf, sendcount, sendtype, 0, slot(cn, cn->me, bytes), bytes);
    pb_coll_node_post(cn);
}

/* Then, once every local rank is past @base + 1, every local rank's block
 * from its slot to its place in @recvbuf (this rank's own too unless
 * @in_place).  @return whether a block was cut to the receive buffer. */
static int allgather_take(const pb_coll_node_t *cn, uint64_t base, int in_place, void *recvbuf,
                          MPI_Count recvcount, MPI_Datatype recvtype, size_t bytes)
{
    int cut = 0;

    pb_coll_node_wait_all(cn, base + 1);
    for (int j = 0; j < cn->n; j++) {
        if ((j != cn->me || !in_place) &&
            pb_coll_node_unpack(slot(cn, j, bytes), bytes,
                                block_addr(recvbuf, cn->local_comm[j], recvcount, recvtype),
                                recvcount, recvtype, 0) != MPI_SUCCESS)
            cut = 1;
    }
    return cut;
}

/* Allgather across nodes (each node's ranks consecutive, blocks of
 * @bytes that fit a cell): each node gathers its blocks at its leader,
 * the leaders swap their nodes' parts, and each leader broadcasts the
 * whole on its node; the leader gathers into its receive buffer and
 * sends and receives the nodes' parts there (each node's blocks are
 * consecutive), so nothing is allocated. */
static int allgather_nodes(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf,
                           MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, MPI_Datatype recvtype, size_t bytes)
{
    int in_place = sendbuf == MPI_IN_PLACE, rc = MPI_SUCCESS;
    /* a block longer than this rank's (counts that disagree: erroneous)
     * is cut, and said so on every rank */
    int cut = !in_place && type_bytes(recvcount, recvtype) < bytes;
    uint64_t base = cn->step;

    if (cn->n > 1)
        allgather_put(cn, c, base, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                      bytes);
    if (cn->me == 0) {
        int first = cn->local_comm[0], nreqs = 0;
        MPI_Request *reqs = cn->reqs;

        if (cn->n > 1) {
            cut |= allgather_take(cn, base, in_place, recvbuf, recvcount, recvtype, bytes);
        } else if (!in_place &&
                   pb_coll_copy_typed(sendbuf, sendcount, sendtype,
                                      block_addr(recvbuf, c->rank, recvcount, recvtype), recvcount,
                                      recvtype) != MPI_SUCCESS) {
            cut = 1;
        }
        for (int k = 0; k < cn->nodes && rc == MPI_SUCCESS; k++) {
            int kfirst = cn->node_first[k];

            if (k == cn->node)
                continue;
            rc = start_swap(block_addr(recvbuf, kfirst, recvcount, recvtype),
                            (MPI_Count)node_size(cn, c, k) * recvcount, recvtype,
                            block_addr(recvbuf, first, recvcount, recvtype),
                            (MPI_Count)cn->n * recvcount, recvtype, k, cn->leaders, reqs, &nreqs);
        }
        rc = wait_after(rc, nreqs, reqs);
    }
    if (cn->n > 1)
        pb_coll_node_bcast_cells(cn, recvbuf, (MPI_Count)c->size * recvcount, recvtype, 0);
    return rc == MPI_SUCCESS && cut ? MPI_ERR_TRUNCATE : rc;
}

/*
 * Allgather across nodes of equally many consecutive ranks whose ranks
 * can read each other's memory (node_cma): local rank i of each node
 * swaps its block with local rank i of every other node over
 * point-to-point, straight into the receive buffers (all pairs at once:
 * each node's blocks cross the network once, spread over its ranks'
 * connections, and nothing is copied on the way); then each rank reads
 * the blocks its node's other ranks received (those of their local index
 * on every node) from their receive buffers with process_vm_readv, and
 * returns once nobody reads its own.  A receive buffer whose blocks are
 * not contiguous bytes is packed first (into memory of its own, or this
 * rank's cell when out of memory and they fit; else the rank publishes
 * that it has nothing to read, and returns MPI_ERR_NO_MEM, the ranks that
 * would have read it MPI_ERR_OTHER), and what a rank publishes says
 * which of the two it is.  @return MPI_SUCCESS or an error class.
 */
static int allgather_pairs(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf,
                           MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, MPI_Datatype recvtype)
{
    size_t rbytes = type_bytes(recvcount, recvtype);
    int nodes = cn->nodes, direct = pb_coll_node_sliceable(recvtype), nreqs = 0;
    int in_place = sendbuf == MPI_IN_PLACE, rc = MPI_SUCCESS;
    MPI_Request *reqs = cn->reqs;
    char *packed = direct ? NULL : pb_coll_scratch_get(rbytes * (size_t)nodes + 1), *to = packed;
    uint64_t base;

    if (in_place) {
        sendbuf = block_addr(recvbuf, c->rank, recvcount, recvtype);
        sendcount = recvcount;
        sendtype = recvtype;
    }
    for (int d = 1; d < nodes && rc == MPI_SUCCESS; d++) {
        int peer = rank_at(cn, (cn->node + d) % nodes, cn->me);

        rc = start_swap(block_addr(recvbuf, peer, recvcount, recvtype), recvcount, recvtype,
                        sendbuf, sendcount, sendtype, peer, c, reqs, &nreqs);
    }
    if (!in_place) {
        int copy_rc = pb_coll_copy_typed(sendbuf, sendcount, sendtype,
                                         block_addr(recvbuf, c->rank, recvcount, recvtype),
                                         recvcount, recvtype);

        rc = rc == MPI_SUCCESS ? copy_rc : rc;
    }
    rc = wait_after(rc, nreqs, reqs);
    base = cn->step;
    if (!direct && packed == NULL) {
        pb_coll_node_wait_all(cn, base); /* nobody reads this rank's cell any more */
        to = rbytes * (size_t)nodes <= cn->cell ? cell(cn, cn->me) : NULL;
    }
    /* the blocks of this local index, node by node, for the others to read */
    for (int k = 0; !direct && to != NULL && k < nodes; k++)
        pack(block_addr(recvbuf, rank_at(cn, k, cn->me), recvcount, recvtype), recvcount, recvtype,
             0, to + (size_t)k * rbytes, rbytes);
    pb_coll_node_wait_all(cn, base);
    if (direct || to != NULL) {
        pb_coll_node_publish2(cn, direct ? recvbuf : to, (uint64_t)direct);
    } else {
        pb_coll_node_publish_unreadable(cn);
        rc = rc == MPI_SUCCESS ? MPI_ERR_NO_MEM : rc;
    }
    pb_coll_node_post(cn);
    pb_coll_node_wait_others(cn, base + 1);
    for (int j = 0; j < cn->n; j++) {
        int j_direct = j != cn->me && pb_coll_node_published(cn, j).addr2 != 0, read_rc = 0;

        for (int k = 0; j != cn->me && k < nodes && read_rc == MPI_SUCCESS; k++) {
            int r = rank_at(cn, k, j);

            read_rc = pb_coll_node_read_from(cn, j, (size_t)(j_direct ? r : k) * rbytes, rbytes,
                                             block_addr(recvbuf, r, recvcount, recvtype), recvcount,
                                             recvtype);
            rc = rc == MPI_SUCCESS ? read_rc : rc;
        }
    }
    pb_coll_node_post(cn);
    pb_coll_node_wait_others(cn, base + 2);
    pb_coll_scratch_put(packed);
    return rc;
}

int pb_coll_node_allgather(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, pb_comm_t *c,
                           pb_coll_alg_t alg)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    size_t bytes = in_place ? type_bytes(recvcount, recvtype) : type_bytes(sendcount, sendtype);
    pb_coll_node_t *cn = pb_coll_node_state(c);
    uint64_t base;
    int rc = MPI_SUCCESS;

    if (cn != NULL && cn->nodes > 1 && cn->even && cn->cma &&
        (alg == PB_ALG_NODE_CMA || (alg == PB_ALG_NODE && bytes >= ALLGATHER_PAIRS_FROM))) {
        pb_coll_node_settle_halves(cn);
        return allgather_pairs(cn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    }
    if (cn != NULL && cn->nodes > 1 && cn->blocked && alg == PB_ALG_NODE && bytes <= cn->cell)
        return allgather_nodes(cn, c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                               bytes);
    cn = mover_state(c, alg, bytes);
    if (cn == NULL)
        return PB_COLL_NODE_DECLINED;
    if (alg != PB_ALG_NODE_CMA && pb_coll_node_one_phase(cn, bytes)) {
        if (in_place)
            return pb_coll_node_exchange_halves(
                cn, block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount, recvtype, recvbuf,
                recvcount, recvtype, bytes, 1, 1);
        return pb_coll_node_exchange_halves(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                            recvtype, bytes, 1, 0);
    }
    pb_coll_node_settle_halves(cn);
    if (alg == PB_ALG_NODE_CMA)
        return pb_coll_node_exchange_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                         recvtype, bytes, 0);
    /* one node: local rank j is rank j */
    base = cn->step;
    allgather_put(cn, c, base, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, bytes);
    rc = allgather_take(cn, base, in_place, recvbuf, recvcount, recvtype, bytes) ? MPI_ERR_TRUNCATE
                                                                                 : MPI_SUCCESS;
    pb_coll_node_post(cn);
    return rc;
}

/*
 * Alltoall across nodes of equally many consecutive ranks (all blocks of a
 * rank fitting a cell): local rank i of each node sends local rank i of
 * every other node, in one message straight from its send buffer, its
 * blocks for that node's ranks, all pairs at once, and receives theirs
 * straight into its cell (row k: the blocks from local rank i of node k
 * for this node's ranks, in rank order; its own in its node's row); then
 * each rank reads its blocks out of the rows of its node's cells.
 * Between two nodes of n ranks that is 2n messages on the network where
 * each rank sending each its block makes 2n^2.  Nothing is allocated.
 */
static int alltoall_across(pb_coll_node_t *cn, pb_comm_t *c, const void *sendbuf,
                           MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, MPI_Datatype recvtype, size_t bytes)
{
    int n = cn->n, nodes = cn->nodes, nreqs = 0, rc = MPI_SUCCESS;
    size_t row = bytes * (size_t)n; /* one node's blocks from one rank */
    char *mine = cell(cn, cn->me);
    MPI_Request *reqs = cn->reqs;
    uint64_t base = cn->step;

    pb_coll_node_wait_all(cn, base); /* nobody reads this rank's cell any more */
    for (int d = 1; d < nodes && rc == MPI_SUCCESS; d++) {
        int k = (cn->node + d) % nodes;

        rc =
            start_swap(mine + (size_t)k * row, (MPI_Count)row, MPI_BYTE,
                       block_addr(sendbuf, rank_at(cn, k, 0), sendcount, sendtype),
                       (MPI_Count)n * sendcount, sendtype, rank_at(cn, k, cn->me), c, reqs, &nreqs);
    }
    for (int j = 0; j < n; j++)
        pack(block_addr(sendbuf, rank_at(cn, cn->node, j), sendcount, sendtype), sendcount,
             sendtype, 0, mine + (size_t)cn->node * row + (size_t)j * bytes, bytes);
    rc = wait_after(rc, nreqs, reqs);
    pb_coll_node_post(cn);
    pb_coll_node_wait_all(cn, base + 1);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < nodes; k++) {
            if (pb_coll_node_unpack(cell(cn, i) + (size_t)k * row + (size_t)cn->me * bytes, bytes,
                                    block_addr(recvbuf, rank_at(cn, k, i), recvcount, recvtype),
                                    recvcount, recvtype, 0) != MPI_SUCCESS)
                rc = MPI_ERR_TRUNCATE;
        }
    }
    pb_coll_node_post(cn);
    return rc;
}

int pb_coll_node_alltoall(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, pb_comm_t *c,
                          pb_coll_alg_t alg)
{
    int in_place = sendbuf == MPI_IN_PLACE;
    size_t bytes = in_place ? type_bytes(recvcount, recvtype) : type_bytes(sendcount, sendtype);
    pb_coll_node_t *cn = pb_coll_node_state(c);
    uint64_t base;
    int rc = MPI_SUCCESS;

    if (cn != NULL && cn->nodes > 1 && cn->even && alg == PB_ALG_NODE &&
        bytes * (size_t)c->size <= cn->cell) {
        pb_coll_node_settle_halves(cn);
        return alltoall_across(cn, c, in_place ? recvbuf : sendbuf,
                               in_place ? recvcount : sendcount, in_place ? recvtype : sendtype,
                               recvbuf, recvcount, recvtype, bytes);
    }
    cn = mover_state(c, alg, bytes * (size_t)c->size);
    if (cn == NULL || (alg == PB_ALG_NODE_CMA && in_place)) /* in place, CMA would read blocks
                                                                being replaced */
        return PB_COLL_NODE_DECLINED;
    if (in_place) {
        sendbuf = recvbuf;
        sendcount = recvcount;
        sendtype = recvtype;
    }
    if (alg != PB_ALG_NODE_CMA && pb_coll_node_one_phase(cn, bytes * (size_t)cn->n))
        return pb_coll_node_exchange_halves(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                            recvtype, bytes, cn->n, 0);
    pb_coll_node_settle_halves(cn);
    if (alg == PB_ALG_NODE_CMA)
        return pb_coll_node_exchange_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                         recvtype, bytes, 1);
    base = cn->step;
    pb_coll_node_wait_all(cn, base);
    for (int j = 0; j < cn->n; j++)
        pack(block_addr(sendbuf, j, sendcount, sendtype), sendcount, sendtype, 0,
             slot(cn, cn->me, bytes * (size_t)cn->n) + (size_t)j * bytes, bytes);
    pb_coll_node_post(cn);
    pb_coll_node_wait_all(cn, base + 1);
    for (int j = 0; j < cn->n; j++) {
        if (pb_coll_node_unpack(slot(cn, j, bytes * (size_t)cn->n) + (size_t)cn->me * bytes, bytes,
                                block_addr(recvbuf, j, recvcount, recvtype), recvcount, recvtype,
                                0) != MPI_SUCCESS)
            rc = MPI_ERR_TRUNCATE;
    }
    pb_coll_node_post(cn);
    return rc;
}
