/*
 * Nonblocking collectives (MPI_Ibarrier .. MPI_Iexscan, MPI-5.0 section
 * 6.12) and persistent collectives (MPI_Barrier_init .. MPI_Exscan_init,
 * section 6.13), each with its large-count form MPI_X_c (docs/mpi.md,
 * "Nonblocking and persistent collectives").
 *
 * Each is a schedule (sched.h) of the algorithm the blocking collective
 * uses (coll_p2p.c), built round by round as the blocking one acts:
 *
 *   Barrier          dissemination: ceil(log2 P) rounds of empty messages
 *   Bcast            binomial tree from the root
 *   Reduce           binomial tree (toward rank 0, in rank order, for a
 *                    non-commutative op, which then sends to the root)
 *   Allreduce        recursive doubling (lower ranks' result on the left)
 *   Gather(v), Scatter(v)   direct
 *   Allgather(v)     ring
 *   Alltoall(v,w)    direct: every receive and send in one round
 *   Reduce_scatter(_block)  Reduce to rank 0, then Scatterv from it
 *   Scan, Exscan     recursive doubling, in rank order
 *
 * MPI_IX builds the schedule and starts it at once; MPI_X_init builds it
 * once, and each MPI_Start runs it again with the buffers' contents then
 * (the copies and reductions of a schedule read and write the program's
 * buffers and the schedule's own scratch buffers only when they run).
 * Every call takes the communicator's next schedule tag (sched.h) when it
 * is made, so every rank agrees on it.  The argument checks are those of
 * the blocking collective (src/mpi/api/functions.txt; Reduce_scatter's
 * and Alltoallw's here), and MPI_IN_PLACE means what it means there.
 * The datatypes may be freed by the program while a collective runs (the
 * schedule holds its own duplicates); a user op may not (op.c frees it at
 * once): free it after the request completed.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi/bindings.h"
#include "mpi/coll_util.h"
#include "mpi/datatype.h"
#include "mpi/info.h"
#include "mpi/op.h"
#include "mpi/sched.h"

/* ---- block addresses ---------------------------------------------------------------- */

/* The address of element @index of @type's layout at @buf (MPI_BOTTOM
 * allowed: the sum is taken as integers). */
static void *elem_addr(const void *buf, MPI_Aint index, MPI_Datatype type)
{
    return (void *)((uintptr_t)buf +
                    (uintptr_t)(index * pb_eng_type_extent(pb_mpi_datatype(type))));
}

/* The address of rank @i's block of @buf described by @v. */
static void *vec_addr(const void *buf, const pb_coll_vec_t *v, int i, MPI_Datatype type)
{
    return elem_addr(buf, pb_coll_vec_displ(v, i), type);
}

static void *byte_addr(const void *buf, MPI_Aint displ)
{
    return (void *)((uintptr_t)buf + (uintptr_t)displ);
}

static void swap_ptr(void **a, void **b)
{
    void *t = *a;

    *a = *b;
    *b = t;
}

/* ---- the algorithms, as schedules -------------------------------------------------- */

/* Dissemination barrier: in round k (1, 2, 4, ...) an empty message to
 * rank + k and one from rank - k. */
static void build_barrier(pb_sched_t *s, const pb_comm_t *c)
{
    for (int k = 1; k < c->size; k <<= 1) {
        pb_sched_send(s, NULL, 0, MPI_BYTE, (c->rank + k) % c->size);
        pb_sched_recv(s, NULL, 0, MPI_BYTE, (c->rank - k + c->size) % c->size);
        pb_sched_round_end(s);
    }
}

/* Binomial broadcast: relative rank r receives from r minus its lowest
 * set bit, then sends to r + 2^k for every 2^k below that bit. */
static void build_bcast(pb_sched_t *s, void *buf, MPI_Count count, MPI_Datatype type, int root,
                        const pb_comm_t *c)
{
    int size = c->size, rel = (c->rank - root + size) % size, mask = 1;

    for (; mask < size; mask <<= 1) {
        if (rel & mask) {
            pb_sched_recv(s, buf, count, type, (rel - mask + root) % size);
            pb_sched_round_end(s);
            break;
        }
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (rel + mask < size)
            pb_sched_send(s, buf, count, type, (rel + mask + root) % size);
    }
    pb_sched_round_end(s);
}

/* Binomial reduction toward @root (commutative @op) or rank 0, combining
 * (own ranks) op (children's); rank 0 then sends to @root.  @recvbuf is
 * significant on @root only. */
static void build_reduce(pb_sched_t *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                         MPI_Datatype type, MPI_Op op, int root, const pb_comm_t *c)
{
    int size = c->size, rank = c->rank;
    int top = pb_mpi_op_is_commutative(op) ? root : 0;
    int rel = (rank - top + size) % size;
    void *acc = pb_sched_scratch(s, count, type), *tmp = pb_sched_scratch(s, count, type);

    if (acc == NULL || tmp == NULL)
        return;
    pb_sched_copy(s, sendbuf, count, type, acc, count, type);
    for (int mask = 1; mask < size; mask <<= 1) {
        if (rel & mask) {
            pb_sched_send(s, acc, count, type, (rel - mask + top) % size);
            pb_sched_round_end(s);
            break;
        }
        if (rel + mask < size) {
            pb_sched_recv(s, tmp, count, type, (rel + mask + top) % size);
            pb_sched_reduce(s, op, acc, tmp, count, type); /* tmp = acc op tmp */
            swap_ptr(&acc, &tmp);
        }
    }
    if (rank == top && rank == root)
        pb_sched_copy(s, acc, count, type, recvbuf, count, type);
    else if (rank == top)
        pb_sched_send(s, acc, count, type, root);
    else if (rank == root)
        pb_sched_recv(s, recvbuf, count, type, top);
    pb_sched_round_end(s);
}

/* Recursive doubling allreduce (coll_p2p.c's): with 2^k the largest power of
 * two <= P and R = P - 2^k, ranks 2i and 2i+1 (i < R) fold into 2i+1, the
 * 2^k others swap and combine with the partner differing in bit 0, 1, ...,
 * and each 2i+1 hands the result back to 2i. */
static void build_allreduce(pb_sched_t *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype type, MPI_Op op, const pb_comm_t *c)
{
    int size = c->size, rank = c->rank, pof2 = 1, rem, newrank;
    void *acc = pb_sched_scratch(s, count, type), *tmp = pb_sched_scratch(s, count, type);

    if (acc == NULL || tmp == NULL)
        return;
    pb_sched_copy(s, sendbuf, count, type, acc, count, type);
    while (pof2 * 2 <= size)
        pof2 *= 2;
    rem = size - pof2;
    newrank = rank < 2 * rem ? (rank % 2 ? rank / 2 : -1) : rank - rem;
    if (rank < 2 * rem) {
        if (rank % 2 == 0) {
            pb_sched_send(s, acc, count, type, rank + 1);
        } else {
            pb_sched_recv(s, tmp, count, type, rank - 1);
            pb_sched_reduce(s, op, tmp, acc, count, type); /* acc = tmp op acc */
        }
        pb_sched_round_end(s);
    }
    for (int mask = 1; newrank >= 0 && mask < pof2; mask <<= 1) {
        int newdst = newrank ^ mask;
        int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;

        pb_sched_send(s, acc, count, type, dst);
        pb_sched_recv(s, tmp, count, type, dst);
        if (dst < rank) {
            pb_sched_reduce(s, op, tmp, acc, count, type); /* acc = tmp op acc */
        } else {
            pb_sched_reduce(s, op, acc, tmp, count, type); /* tmp = acc op tmp */
            swap_ptr(&acc, &tmp);
        }
        pb_sched_round_end(s);
    }
    if (rank < 2 * rem) {
        if (rank % 2)
            pb_sched_send(s, acc, count, type, rank - 1);
        else
            pb_sched_recv(s, acc, count, type, rank + 1);
        pb_sched_round_end(s);
    }
    pb_sched_copy(s, acc, count, type, recvbuf, count, type);
}

/* Direct gather: the root receives every rank's block at once.
 * @sendbuf MPI_IN_PLACE at the root: its block is in place. */
static void build_gatherv(pb_sched_t *s, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, void *recvbuf, const pb_coll_vec_t *recv,
                          MPI_Datatype recvtype, int root, const pb_comm_t *c)
{
    if (c->rank != root) {
        pb_sched_send(s, sendbuf, sendcount, sendtype, root);
        return;
    }
    for (int i = 1; i < c->size; i++) {
        int r = (root + i) % c->size;

        pb_sched_recv(s, vec_addr(recvbuf, recv, r, recvtype), pb_coll_vec_count(recv, r), recvtype,
                      r);
    }
    if (sendbuf != MPI_IN_PLACE)
        pb_sched_copy(s, sendbuf, sendcount, sendtype, vec_addr(recvbuf, recv, root, recvtype),
                      pb_coll_vec_count(recv, root), recvtype);
}

/* Direct scatter: the root sends every rank its block at once.
 * @recvbuf MPI_IN_PLACE at the root: its block stays in @sendbuf. */
static void build_scatterv(pb_sched_t *s, const void *sendbuf, const pb_coll_vec_t *send,
                           MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                           MPI_Datatype recvtype, int root, const pb_comm_t *c)
{
    if (c->rank != root) {
        pb_sched_recv(s, recvbuf, recvcount, recvtype, root);
        return;
    }
    for (int i = 1; i < c->size; i++) {
        int r = (root + i) % c->size;

        pb_sched_send(s, vec_addr(sendbuf, send, r, sendtype), pb_coll_vec_count(send, r), sendtype,
                      r);
    }
    if (recvbuf != MPI_IN_PLACE)
        pb_sched_copy(s, vec_addr(sendbuf, send, root, sendtype), pb_coll_vec_count(send, root),
                      sendtype, recvbuf, recvcount, recvtype);
}

/* Ring allgather: the own block in place, then P-1 rounds each passing one
 * block to the right.  @sendbuf MPI_IN_PLACE: the own block is in place. */
static void build_allgatherv(pb_sched_t *s, const void *sendbuf, MPI_Count sendcount,
                             MPI_Datatype sendtype, void *recvbuf, const pb_coll_vec_t *recv,
                             MPI_Datatype recvtype, const pb_comm_t *c)
{
    int size = c->size, rank = c->rank;

    if (sendbuf != MPI_IN_PLACE)
        pb_sched_copy(s, sendbuf, sendcount, sendtype, vec_addr(recvbuf, recv, rank, recvtype),
                      pb_coll_vec_count(recv, rank), recvtype);
    for (int step = 0; step < size - 1; step++) {
        int out = (rank - step + size) % size, in = (rank - step - 1 + size) % size;

        pb_sched_send(s, vec_addr(recvbuf, recv, out, recvtype), pb_coll_vec_count(recv, out),
                      recvtype, (rank + 1) % size);
        pb_sched_recv(s, vec_addr(recvbuf, recv, in, recvtype), pb_coll_vec_count(recv, in),
                      recvtype, (rank - 1 + size) % size);
        pb_sched_round_end(s);
    }
}

/*
 * Direct all-to-all, the three kinds in one: rank i's send block is
 * send_count(i) elements of send_type(i) at send_addr(i) (the same for
 * receive).  Every receive and send in one round, peers in the order
 * rank + 1, rank + 2, ...  In place: the blocks to send are packed out of
 * the receive buffer first (a round of copies), and the own block stays.
 */
typedef struct {
    const void *buf;
    pb_coll_vec_t v;
    const MPI_Datatype *types; /* Alltoallw: per rank, displacements in bytes */
    MPI_Datatype type;
} a2a_side_t;

static MPI_Datatype side_type(const a2a_side_t *d, int i)
{
    return d->types != NULL ? d->types[i] : d->type;
}

static void *side_addr(const a2a_side_t *d, int i)
{
    if (d->types != NULL)
        return byte_addr(d->buf, pb_coll_vec_displ(&d->v, i));
    return vec_addr(d->buf, &d->v, i, d->type);
}

/* The bytes of data of rank @i's block. */
static MPI_Count side_bytes(const a2a_side_t *d, int i)
{
    return pb_coll_vec_count(&d->v, i) *
           (MPI_Count)pb_eng_type_size(pb_mpi_datatype(side_type(d, i)));
}

static void build_alltoall(pb_sched_t *s, const a2a_side_t *send, const a2a_side_t *recv,
                           int in_place, const pb_comm_t *c)
{
    int size = c->size, rank = c->rank;
    size_t total = 0, *offs = NULL;
    char *packed = NULL;

    if (in_place) {
        offs = pb_sched_bytes(s, (size_t)size * sizeof(*offs));
        for (int i = 0; offs != NULL && i < size; i++) {
            offs[i] = total;
            if (i != rank)
                total += (size_t)side_bytes(recv, i);
        }
        packed = offs != NULL ? pb_sched_bytes(s, total) : NULL;
        if (packed == NULL)
            return;
        for (int i = 0; i < size; i++) {
            if (i != rank)
                pb_sched_copy(s, side_addr(recv, i), pb_coll_vec_count(&recv->v, i),
                              side_type(recv, i), packed + offs[i], side_bytes(recv, i), MPI_BYTE);
        }
        pb_sched_round_end(s);
    }
    for (int i = 1; i < size; i++) {
        int from = (rank - i + size) % size;

        pb_sched_recv(s, side_addr(recv, from), pb_coll_vec_count(&recv->v, from),
                      side_type(recv, from), from);
    }
    for (int i = 1; i < size; i++) {
        int to = (rank + i) % size;

        if (in_place)
            pb_sched_send(s, packed + offs[to], side_bytes(recv, to), MPI_BYTE, to);
        else
            pb_sched_send(s, side_addr(send, to), pb_coll_vec_count(&send->v, to),
                          side_type(send, to), to);
    }
    if (!in_place)
        pb_sched_copy(s, side_addr(send, rank), pb_coll_vec_count(&send->v, rank),
                      side_type(send, rank), side_addr(recv, rank),
                      pb_coll_vec_count(&recv->v, rank), side_type(recv, rank));
}

/* Reduce-scatter: the whole vector reduced to rank 0, which then scatters
 * rank i its @counts block.  @sendbuf holds the whole vector. */
static void build_reduce_scatter(pb_sched_t *s, const void *sendbuf, void *recvbuf,
                                 const pb_coll_vec_t *counts, MPI_Count total, MPI_Datatype type,
                                 MPI_Op op, const pb_comm_t *c)
{
    MPI_Aint *displs = pb_sched_bytes(s, (size_t)c->size * sizeof(*displs));
    MPI_Count sum = 0;
    void *tmp = NULL;
    pb_coll_vec_t blocks;

    if (displs == NULL)
        return;
    for (int i = 0; i < c->size; i++) {
        displs[i] = (MPI_Aint)sum;
        sum += pb_coll_vec_count(counts, i);
    }
    blocks = *counts;
    blocks.displs = (pb_mpi_displs_t){NULL, displs};
    if (c->rank == 0 && (tmp = pb_sched_scratch(s, total, type)) == NULL)
        return;
    build_reduce(s, sendbuf, tmp, total, type, op, 0, c);
    pb_sched_round_end(s);
    build_scatterv(s, tmp, &blocks, type, recvbuf, pb_coll_vec_count(counts, c->rank), type, 0, c);
}

/* Recursive doubling inclusive scan (coll_p2p.c's): in step k rank r swaps its
 * partial result with r ^ 2^k; a lower partner's goes on the left of both
 * the partial result and the scan, a higher one's on the right of the
 * partial result only. */
static void build_scan(pb_sched_t *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                       MPI_Datatype type, MPI_Op op, const pb_comm_t *c)
{
    void *part = pb_sched_scratch(s, count, type), *tmp = pb_sched_scratch(s, count, type);

    if (part == NULL || tmp == NULL)
        return;
    pb_sched_copy(s, sendbuf, count, type, part, count, type);
    pb_sched_copy(s, sendbuf, count, type, recvbuf, count, type);
    for (int mask = 1; mask < c->size; mask <<= 1) {
        int dst = c->rank ^ mask;

        if (dst >= c->size)
            continue;
        pb_sched_send(s, part, count, type, dst);
        pb_sched_recv(s, tmp, count, type, dst);
        if (dst < c->rank) {
            pb_sched_reduce(s, op, tmp, part, count, type);    /* part = tmp op part */
            pb_sched_reduce(s, op, tmp, recvbuf, count, type); /* scan = tmp op scan */
        } else {
            pb_sched_reduce(s, op, part, tmp, count, type); /* tmp = part op tmp */
            swap_ptr(&part, &tmp);
        }
        pb_sched_round_end(s);
    }
}

/* Recursive doubling exclusive scan: as the inclusive one, but the result
 * takes only the lower partners' partial results (rank 0's @recvbuf is
 * left as it was). */
static void build_exscan(pb_sched_t *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                         MPI_Datatype type, MPI_Op op, const pb_comm_t *c)
{
    void *part = pb_sched_scratch(s, count, type), *tmp = pb_sched_scratch(s, count, type);
    int have = 0;

    if (part == NULL || tmp == NULL)
        return;
    pb_sched_copy(s, sendbuf, count, type, part, count, type);
    for (int mask = 1; mask < c->size; mask <<= 1) {
        int dst = c->rank ^ mask;

        if (dst >= c->size)
            continue;
        pb_sched_send(s, part, count, type, dst);
        pb_sched_recv(s, tmp, count, type, dst);
        if (dst < c->rank) {
            pb_sched_reduce(s, op, tmp, part, count, type); /* part = tmp op part */
            if (have)
                pb_sched_reduce(s, op, tmp, recvbuf, count, type); /* scan = tmp op scan */
            else
                pb_sched_copy(s, tmp, count, type, recvbuf, count, type);
            have = 1;
        } else {
            pb_sched_reduce(s, op, part, tmp, count, type); /* tmp = part op tmp */
            swap_ptr(&part, &tmp);
        }
        pb_sched_round_end(s);
    }
}

/* ---- on an intercommunicator ---------------------------------------------------------- */

/*
 * The schedules of the collectives on an intercommunicator: the blocking
 * ones' algorithms (intercomm.h), the transfers between the groups on the
 * intercommunicator, those within a group on its local group
 * (pb_sched_use).  The rooted ones do nothing in the root's group but at
 * the root (MPI_PROC_NULL).
 */

/* this group's barrier, a byte between the leaders, this group's broadcast */
static void build_inter_barrier(pb_sched_t *s, pb_comm_t *c)
{
    pb_comm_t *g = c->local_group;

    pb_sched_use(s, g);
    build_barrier(s, g);
    pb_sched_round_end(s);
    pb_sched_use(s, c);
    if (g->rank == 0) {
        pb_sched_send(s, NULL, 0, MPI_BYTE, 0);
        pb_sched_recv(s, NULL, 0, MPI_BYTE, 0);
        pb_sched_round_end(s);
    }
    pb_sched_use(s, g);
    build_bcast(s, NULL, 0, MPI_BYTE, 0, g);
}

/* the root to the other group's rank 0, which broadcasts in its group */
static void build_inter_bcast(pb_sched_t *s, void *buf, MPI_Count count, MPI_Datatype type,
                              int root, pb_comm_t *c)
{
    pb_comm_t *g = c->local_group;

    if (root == MPI_PROC_NULL)
        return;
    if (root == MPI_ROOT) {
        pb_sched_send(s, buf, count, type, 0);
        return;
    }
    if (g->rank == 0) {
        pb_sched_recv(s, buf, count, type, root);
        pb_sched_round_end(s);
    }
    pb_sched_use(s, g);
    build_bcast(s, buf, count, type, 0, g);
}

/* directly between the root and each process of the other group */
static void build_inter_gatherv(pb_sched_t *s, const void *sendbuf, MPI_Count sendcount,
                                MPI_Datatype sendtype, void *recvbuf, const pb_coll_vec_t *recv,
                                MPI_Datatype recvtype, int root, const pb_comm_t *c)
{
    if (root == MPI_ROOT) {
        for (int i = 0; i < c->size; i++)
            pb_sched_recv(s, vec_addr(recvbuf, recv, i, recvtype), pb_coll_vec_count(recv, i),
                          recvtype, i);
    } else if (root != MPI_PROC_NULL) {
        pb_sched_send(s, sendbuf, sendcount, sendtype, root);
    }
}

static void build_inter_scatterv(pb_sched_t *s, const void *sendbuf, const pb_coll_vec_t *send,
                                 MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                 MPI_Datatype recvtype, int root, const pb_comm_t *c)
{
    if (root == MPI_ROOT) {
        for (int i = 0; i < c->size; i++)
            pb_sched_send(s, vec_addr(sendbuf, send, i, sendtype), pb_coll_vec_count(send, i),
                          sendtype, i);
    } else if (root != MPI_PROC_NULL) {
        pb_sched_recv(s, recvbuf, recvcount, recvtype, root);
    }
}

/* directly between every pair of processes across the groups */
static void build_inter_allgatherv(pb_sched_t *s, const void *sendbuf, MPI_Count sendcount,
                                   MPI_Datatype sendtype, void *recvbuf, const pb_coll_vec_t *recv,
                                   MPI_Datatype recvtype, const pb_comm_t *c)
{
    for (int i = 0; i < c->size; i++) {
        pb_sched_recv(s, vec_addr(recvbuf, recv, i, recvtype), pb_coll_vec_count(recv, i), recvtype,
                      i);
        pb_sched_send(s, sendbuf, sendcount, sendtype, i);
    }
}

static void build_inter_alltoall(pb_sched_t *s, const a2a_side_t *send, const a2a_side_t *recv,
                                 const pb_comm_t *c)
{
    for (int i = 0; i < c->size; i++) {
        pb_sched_recv(s, side_addr(recv, i), pb_coll_vec_count(&recv->v, i), side_type(recv, i), i);
        pb_sched_send(s, side_addr(send, i), pb_coll_vec_count(&send->v, i), side_type(send, i), i);
    }
}

/* The reduction of this group's @sendbuf to its rank 0, where it returns
 * the scratch buffer holding it (NULL elsewhere); transfers go over the
 * intercommunicator afterwards. */
static void *build_group_reduce(pb_sched_t *s, const void *sendbuf, MPI_Count count,
                                MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    pb_comm_t *g = c->local_group;
    void *acc = g->rank == 0 ? pb_sched_scratch(s, count, type) : NULL;

    pb_sched_use(s, g);
    build_reduce(s, sendbuf, acc, count, type, op, 0, g);
    pb_sched_round_end(s);
    pb_sched_use(s, c);
    return acc;
}

/* the other group reduces to its rank 0, which sends to the root */
static void build_inter_reduce(pb_sched_t *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                               MPI_Datatype type, MPI_Op op, int root, pb_comm_t *c)
{
    void *acc;

    if (root == MPI_ROOT) {
        pb_sched_recv(s, recvbuf, count, type, 0);
        return;
    }
    if (root == MPI_PROC_NULL)
        return;
    acc = build_group_reduce(s, sendbuf, count, type, op, c);
    if (c->local_group->rank == 0)
        pb_sched_send(s, acc, count, type, root);
}

/* each group reduces to its rank 0, the leaders trade, each broadcasts */
static void build_inter_allreduce(pb_sched_t *s, const void *sendbuf, void *recvbuf,
                                  MPI_Count count, MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    void *acc = build_group_reduce(s, sendbuf, count, type, op, c);

    if (c->local_group->rank == 0) {
        pb_sched_send(s, acc, count, type, 0);
        pb_sched_recv(s, recvbuf, count, type, 0);
        pb_sched_round_end(s);
    }
    pb_sched_use(s, c->local_group);
    build_bcast(s, recvbuf, count, type, 0, c->local_group);
}

/* each group reduces to its rank 0, the leaders trade, each scatters the
 * other group's result (@counts: this group's, summing to @total) */
static void build_inter_reduce_scatter(pb_sched_t *s, const void *sendbuf, void *recvbuf,
                                       const pb_coll_vec_t *counts, MPI_Count total,
                                       MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    pb_comm_t *g = c->local_group;
    MPI_Aint *displs = pb_sched_bytes(s, (size_t)g->size * sizeof(*displs));
    void *acc = build_group_reduce(s, sendbuf, total, type, op, c), *theirs = NULL;
    pb_coll_vec_t blocks = *counts;
    MPI_Count at = 0;

    if (displs == NULL)
        return;
    for (int i = 0; i < g->size; i++) {
        displs[i] = (MPI_Aint)at;
        at += pb_coll_vec_count(counts, i);
    }
    blocks.displs = (pb_mpi_displs_t){NULL, displs};
    if (g->rank == 0) {
        theirs = pb_sched_scratch(s, total, type);
        pb_sched_send(s, acc, total, type, 0);
        pb_sched_recv(s, theirs, total, type, 0);
        pb_sched_round_end(s);
    }
    pb_sched_use(s, g);
    build_scatterv(s, theirs, &blocks, type, recvbuf, pb_coll_vec_count(counts, g->rank), type, 0,
                   g);
}

/* MPI_IN_PLACE, which no collective on an intercommunicator takes:
 * MPI_ERR_BUFFER raised for @func. */
static int check_inter_in_place(const char *func, MPI_Comm comm, const pb_comm_t *c,
                                const void *buf)
{
    if (pb_mpi_comm_is_inter(c) && buf == MPI_IN_PLACE)
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func,
                            "MPI_IN_PLACE is not allowed on an intercommunicator");
    return MPI_SUCCESS;
}

/* ---- the MPI calls (after the checks of src/mpi/bindings.c) ----------------------- */

/* The info of MPI_X_init (@info; NULL for MPI_IX, which has none), checked
 * first: MPI_SUCCESS or the error raised for @func. */
static int check_info(const char *func, MPI_Comm comm, const MPI_Info *info)
{
    return info != NULL ? pb_mpi_info_check(comm, *info, 1, func) : MPI_SUCCESS;
}

/* An empty schedule for the next nonblocking or persistent collective of
 * @c once the checks passed (@rc MPI_SUCCESS); NULL when they did not, or
 * without memory. */
static pb_sched_t *begin(pb_comm_t *c, int rc)
{
    return rc == MPI_SUCCESS ? pb_sched_new(c, pb_sched_tag(c)) : NULL;
}

/* The request of schedule @s built for @func, in *@request: started
 * (MPI_IX, @info NULL) or inactive (MPI_X_init).  @return @rc when the
 * checks failed, else MPI_SUCCESS or MPI_ERR_NO_MEM (@s NULL, or no
 * memory for the request), raised. */
static int issue(const char *func, MPI_Comm comm, int rc, pb_sched_t *s, const MPI_Info *info,
                 MPI_Request *request)
{
    if (rc != MPI_SUCCESS)
        return rc;
    if (s == NULL || pb_sched_request(s, info != NULL, request) != MPI_SUCCESS)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func,
                            "out of memory for the collective's schedule");
    return MPI_SUCCESS;
}

/*
 * The work of each collective, nonblocking (@info NULL) or persistent
 * alike: check the info, resolve MPI_IN_PLACE and the empty cases as the
 * blocking collective does, build the schedule, make the request.
 */

static int barrier_sched(const char *func, MPI_Comm comm, pb_comm_t *c, const MPI_Info *info,
                         MPI_Request *request)
{
    int rc = check_info(func, comm, info);
    pb_sched_t *s = begin(c, rc);

    if (s != NULL && pb_mpi_comm_is_inter(c))
        build_inter_barrier(s, c);
    else if (s != NULL)
        build_barrier(s, c);
    return issue(func, comm, rc, s, info, request);
}

static int bcast_sched(const char *func, void *buffer, MPI_Count count, MPI_Datatype datatype,
                       int root, MPI_Comm comm, pb_comm_t *c, const MPI_Info *info,
                       MPI_Request *request)
{
    int rc = check_info(func, comm, info);
    pb_sched_t *s = begin(c, rc);

    if (s != NULL && pb_mpi_comm_is_inter(c))
        build_inter_bcast(s, buffer, count, datatype, root, c);
    else if (s != NULL && (size_t)count * pb_eng_type_size(pb_mpi_datatype(datatype)) > 0)
        build_bcast(s, buffer, count, datatype, root, c);
    return issue(func, comm, rc, s, info, request);
}

static int gatherv_sched(const char *func, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, pb_coll_vec_t recv,
                         MPI_Datatype recvtype, int root, MPI_Comm comm, pb_comm_t *c,
                         const MPI_Info *info, MPI_Request *request)
{
    int rc = check_info(func, comm, info);
    pb_sched_t *s;

    if (rc == MPI_SUCCESS && pb_mpi_comm_is_inter(c) && root != MPI_ROOT && root != MPI_PROC_NULL)
        rc = check_inter_in_place(func, comm, c, sendbuf);
    s = begin(c, rc);
    if (s != NULL && pb_mpi_comm_is_inter(c))
        build_inter_gatherv(s, sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, root, c);
    else if (s != NULL)
        build_gatherv(s, sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, root, c);
    return issue(func, comm, rc, s, info, request);
}

static int scatterv_sched(const char *func, const void *sendbuf, pb_coll_vec_t send,
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                          MPI_Datatype recvtype, int root, MPI_Comm comm, pb_comm_t *c,
                          const MPI_Info *info, MPI_Request *request)
{
    int rc = check_info(func, comm, info);
    pb_sched_t *s;

    if (rc == MPI_SUCCESS && pb_mpi_comm_is_inter(c) && root != MPI_ROOT && root != MPI_PROC_NULL)
        rc = check_inter_in_place(func, comm, c, recvbuf);
    s = begin(c, rc);
    if (s != NULL && pb_mpi_comm_is_inter(c))
        build_inter_scatterv(s, sendbuf, &send, sendtype, recvbuf, recvcount, recvtype, root, c);
    else if (s != NULL)
        build_scatterv(s, sendbuf, &send, sendtype, recvbuf, recvcount, recvtype, root, c);
    return issue(func, comm, rc, s, info, request);
}

static int allgatherv_sched(const char *func, const void *sendbuf, MPI_Count sendcount,
                            MPI_Datatype sendtype, void *recvbuf, pb_coll_vec_t recv,
                            MPI_Datatype recvtype, MPI_Comm comm, pb_comm_t *c,
                            const MPI_Info *info, MPI_Request *request)
{
    int rc = check_info(func, comm, info);
    pb_sched_t *s;

    if (rc == MPI_SUCCESS)
        rc = check_inter_in_place(func, comm, c, sendbuf);
    s = begin(c, rc);
    if (s != NULL && pb_mpi_comm_is_inter(c))
        build_inter_allgatherv(s, sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, c);
    else if (s != NULL)
        build_allgatherv(s, sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, c);
    return issue(func, comm, rc, s, info, request);
}

/* One side of Alltoallw (the generated checks cover only the
 * communicator): MPI_ERR_ARG for a NULL array, then each rank's block as
 * pb_mpi_check_buf. */
static int check_alltoallw_side(MPI_Comm comm, const char *func, const char *what,
                                const a2a_side_t *side, const pb_comm_t *c)
{
    const pb_coll_vec_t *v = &side->v;
    int rc = MPI_SUCCESS;

    if ((v->counts.i == NULL && v->counts.c == NULL) ||
        (v->displs.i == NULL && v->displs.a == NULL) || side->types == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func,
                            "the %s counts, displacements or datatypes array is NULL", what);
    for (int i = 0; i < c->size && rc == MPI_SUCCESS; i++)
        rc = pb_mpi_check_buf(comm, func, what, side->buf, pb_coll_vec_count(v, i), side->types[i]);
    return rc;
}

/* @w: Alltoallw, whose arrays are checked here. */
static int alltoall_sched(const char *func, const a2a_side_t *send, const a2a_side_t *recv, int w,
                          MPI_Comm comm, pb_comm_t *c, const MPI_Info *info, MPI_Request *request)
{
    int rc = check_info(func, comm, info);
    pb_sched_t *s;

    if (rc == MPI_SUCCESS)
        rc = check_inter_in_place(func, comm, c, send->buf);
    if (rc == MPI_SUCCESS && w)
        rc = check_alltoallw_side(comm, func, "receive", recv, c);
    if (rc == MPI_SUCCESS && w && send->buf != MPI_IN_PLACE)
        rc = check_alltoallw_side(comm, func, "send", send, c);
    s = begin(c, rc);
    if (s != NULL && pb_mpi_comm_is_inter(c))
        build_inter_alltoall(s, send, recv, c);
    else if (s != NULL)
        build_alltoall(s, send, recv, send->buf == MPI_IN_PLACE, c);
    return issue(func, comm, rc, s, info, request);
}

static int reduce_sched(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                        MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, pb_comm_t *c,
                        const MPI_Info *info, MPI_Request *request)
{
    int rc = check_info(func, comm, info);
    pb_sched_t *s;

    if (rc == MPI_SUCCESS && pb_mpi_comm_is_inter(c) && root != MPI_ROOT && root != MPI_PROC_NULL)
        rc = check_inter_in_place(func, comm, c, sendbuf);
    s = begin(c, rc);
    if (!pb_mpi_comm_is_inter(c) && c->rank == root && sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    if (s != NULL && count > 0 && pb_mpi_comm_is_inter(c))
        build_inter_reduce(s, sendbuf, recvbuf, count, datatype, op, root, c);
    else if (s != NULL && count > 0)
        build_reduce(s, sendbuf, recvbuf, count, datatype, op, root, c);
    return issue(func, comm, rc, s, info, request);
}

/* The kinds of reduction that every rank gets a result of. */
enum {
    ALLREDUCE,
    SCAN,
    EXSCAN
};

static int allreduce_sched(const char *func, int kind, const void *sendbuf, void *recvbuf,
                           MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                           pb_comm_t *c, const MPI_Info *info, MPI_Request *request)
{
    int rc = check_info(func, comm, info);
    pb_sched_t *s;

    if (rc == MPI_SUCCESS && kind != ALLREDUCE)
        rc = pb_mpi_comm_check_intra(comm, func, c);
    if (rc == MPI_SUCCESS)
        rc = check_inter_in_place(func, comm, c, sendbuf);
    s = begin(c, rc);
    if (sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    if (s != NULL && count > 0 && pb_mpi_comm_is_inter(c)) {
        build_inter_allreduce(s, sendbuf, recvbuf, count, datatype, op, c);
    } else if (s != NULL && count > 0) {
        if (kind == ALLREDUCE)
            build_allreduce(s, sendbuf, recvbuf, count, datatype, op, c);
        else if (kind == SCAN)
            build_scan(s, sendbuf, recvbuf, count, datatype, op, c);
        else
            build_exscan(s, sendbuf, recvbuf, count, datatype, op, c);
    }
    return issue(func, comm, rc, s, info, request);
}

/* Reduce_scatter(_block) check their counts here, as MPI_Reduce_scatter
 * does (pb_coll_check_reduce_scatter): the reduction is over their sum. */
static int reduce_scatter_sched(const char *func, const void *sendbuf, void *recvbuf,
                                pb_coll_vec_t counts, MPI_Datatype datatype, MPI_Op op,
                                MPI_Comm comm, pb_comm_t *c, const MPI_Info *info,
                                MPI_Request *request)
{
    MPI_Count total = 0;
    pb_sched_t *s;
    int rc = check_info(func, comm, info);

    /* an intercommunicator's counts are its local group's */
    if (rc == MPI_SUCCESS)
        rc = pb_coll_check_reduce_scatter(comm, func, sendbuf, recvbuf, &counts, datatype, op,
                                          pb_mpi_comm_is_inter(c) ? c->local_group : c, &total);
    if (rc == MPI_SUCCESS)
        rc = check_inter_in_place(func, comm, c, sendbuf);
    if (sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    s = begin(c, rc);
    if (s != NULL && total > 0 && pb_mpi_comm_is_inter(c))
        build_inter_reduce_scatter(s, sendbuf, recvbuf, &counts, total, datatype, op, c);
    else if (s != NULL && total > 0)
        build_reduce_scatter(s, sendbuf, recvbuf, &counts, total, datatype, op, c);
    return issue(func, comm, rc, s, info, request);
}

/* ---- MPI_IX and MPI_X_init ---------------------------------------------------------- */

int pb_mpi_ibarrier_impl(const char *func, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return barrier_sched(func, comm, c, NULL, request);
}

int pb_mpi_barrier_init_impl(const char *func, MPI_Comm comm, MPI_Info info, MPI_Request *request,
                             pb_comm_t *c)
{
    return barrier_sched(func, comm, c, &info, request);
}

int pb_mpi_ibcast_impl(const char *func, void *buffer, MPI_Count count, MPI_Datatype datatype,
                       int root, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return bcast_sched(func, buffer, count, datatype, root, comm, c, NULL, request);
}

int pb_mpi_bcast_init_impl(const char *func, void *buffer, MPI_Count count, MPI_Datatype datatype,
                           int root, MPI_Comm comm, MPI_Info info, MPI_Request *request,
                           pb_comm_t *c)
{
    return bcast_sched(func, buffer, count, datatype, root, comm, c, &info, request);
}

int pb_mpi_igather_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request,
                        pb_comm_t *c)
{
    return gatherv_sched(func, sendbuf, sendcount, sendtype, recvbuf, pb_coll_vec_block(recvcount),
                         recvtype, root, comm, c, NULL, request);
}

int pb_mpi_gather_init_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                            MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request, pb_comm_t *c)
{
    return gatherv_sched(func, sendbuf, sendcount, sendtype, recvbuf, pb_coll_vec_block(recvcount),
                         recvtype, root, comm, c, &info, request);
}

int pb_mpi_igatherv_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, pb_mpi_counts_t recvcounts,
                         pb_mpi_displs_t displs, MPI_Datatype recvtype, int root, MPI_Comm comm,
                         MPI_Request *request, pb_comm_t *c)
{
    return gatherv_sched(func, sendbuf, sendcount, sendtype, recvbuf,
                         pb_coll_vec_arrays(recvcounts, displs), recvtype, root, comm, c, NULL,
                         request);
}

int pb_mpi_gatherv_init_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                             MPI_Datatype sendtype, void *recvbuf, pb_mpi_counts_t recvcounts,
                             pb_mpi_displs_t displs, MPI_Datatype recvtype, int root, MPI_Comm comm,
                             MPI_Info info, MPI_Request *request, pb_comm_t *c)
{
    return gatherv_sched(func, sendbuf, sendcount, sendtype, recvbuf,
                         pb_coll_vec_arrays(recvcounts, displs), recvtype, root, comm, c, &info,
                         request);
}

int pb_mpi_iscatter_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request,
                         pb_comm_t *c)
{
    return scatterv_sched(func, sendbuf, pb_coll_vec_block(sendcount), sendtype, recvbuf, recvcount,
                          recvtype, root, comm, c, NULL, request);
}

int pb_mpi_scatter_init_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                             MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                             MPI_Request *request, pb_comm_t *c)
{
    return scatterv_sched(func, sendbuf, pb_coll_vec_block(sendcount), sendtype, recvbuf, recvcount,
                          recvtype, root, comm, c, &info, request);
}

int pb_mpi_iscatterv_impl(const char *func, const void *sendbuf, pb_mpi_counts_t sendcounts,
                          pb_mpi_displs_t displs, MPI_Datatype sendtype, void *recvbuf,
                          MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                          MPI_Request *request, pb_comm_t *c)
{
    return scatterv_sched(func, sendbuf, pb_coll_vec_arrays(sendcounts, displs), sendtype, recvbuf,
                          recvcount, recvtype, root, comm, c, NULL, request);
}

int pb_mpi_scatterv_init_impl(const char *func, const void *sendbuf, pb_mpi_counts_t sendcounts,
                              pb_mpi_displs_t displs, MPI_Datatype sendtype, void *recvbuf,
                              MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                              MPI_Info info, MPI_Request *request, pb_comm_t *c)
{
    return scatterv_sched(func, sendbuf, pb_coll_vec_arrays(sendcounts, displs), sendtype, recvbuf,
                          recvcount, recvtype, root, comm, c, &info, request);
}

int pb_mpi_iallgather_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                           MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return allgatherv_sched(func, sendbuf, sendcount, sendtype, recvbuf,
                            pb_coll_vec_block(recvcount), recvtype, comm, c, NULL, request);
}

int pb_mpi_allgather_init_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                               MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                               MPI_Request *request, pb_comm_t *c)
{
    return allgatherv_sched(func, sendbuf, sendcount, sendtype, recvbuf,
                            pb_coll_vec_block(recvcount), recvtype, comm, c, &info, request);
}

int pb_mpi_iallgatherv_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                            MPI_Datatype sendtype, void *recvbuf, pb_mpi_counts_t recvcounts,
                            pb_mpi_displs_t displs, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request, pb_comm_t *c)
{
    return allgatherv_sched(func, sendbuf, sendcount, sendtype, recvbuf,
                            pb_coll_vec_arrays(recvcounts, displs), recvtype, comm, c, NULL,
                            request);
}

int pb_mpi_allgatherv_init_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                                MPI_Datatype sendtype, void *recvbuf, pb_mpi_counts_t recvcounts,
                                pb_mpi_displs_t displs, MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Info info, MPI_Request *request, pb_comm_t *c)
{
    return allgatherv_sched(func, sendbuf, sendcount, sendtype, recvbuf,
                            pb_coll_vec_arrays(recvcounts, displs), recvtype, comm, c, &info,
                            request);
}

int pb_mpi_ialltoall_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    a2a_side_t send = {sendbuf, pb_coll_vec_block(sendcount), NULL, sendtype};
    a2a_side_t recv = {recvbuf, pb_coll_vec_block(recvcount), NULL, recvtype};

    return alltoall_sched(func, &send, &recv, 0, comm, c, NULL, request);
}

int pb_mpi_alltoall_init_impl(const char *func, const void *sendbuf, MPI_Count sendcount,
                              MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                              MPI_Request *request, pb_comm_t *c)
{
    a2a_side_t send = {sendbuf, pb_coll_vec_block(sendcount), NULL, sendtype};
    a2a_side_t recv = {recvbuf, pb_coll_vec_block(recvcount), NULL, recvtype};

    return alltoall_sched(func, &send, &recv, 0, comm, c, &info, request);
}

int pb_mpi_ialltoallv_impl(const char *func, const void *sendbuf, pb_mpi_counts_t sendcounts,
                           pb_mpi_displs_t sdispls, MPI_Datatype sendtype, void *recvbuf,
                           pb_mpi_counts_t recvcounts, pb_mpi_displs_t rdispls,
                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    a2a_side_t send = {sendbuf, pb_coll_vec_arrays(sendcounts, sdispls), NULL, sendtype};
    a2a_side_t recv = {recvbuf, pb_coll_vec_arrays(recvcounts, rdispls), NULL, recvtype};

    return alltoall_sched(func, &send, &recv, 0, comm, c, NULL, request);
}

int pb_mpi_alltoallv_init_impl(const char *func, const void *sendbuf, pb_mpi_counts_t sendcounts,
                               pb_mpi_displs_t sdispls, MPI_Datatype sendtype, void *recvbuf,
                               pb_mpi_counts_t recvcounts, pb_mpi_displs_t rdispls,
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                               MPI_Request *request, pb_comm_t *c)
{
    a2a_side_t send = {sendbuf, pb_coll_vec_arrays(sendcounts, sdispls), NULL, sendtype};
    a2a_side_t recv = {recvbuf, pb_coll_vec_arrays(recvcounts, rdispls), NULL, recvtype};

    return alltoall_sched(func, &send, &recv, 0, comm, c, &info, request);
}

int pb_mpi_ialltoallw_impl(const char *func, const void *sendbuf, pb_mpi_counts_t sendcounts,
                           pb_mpi_displs_t sdispls, const MPI_Datatype sendtypes[], void *recvbuf,
                           pb_mpi_counts_t recvcounts, pb_mpi_displs_t rdispls,
                           const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request,
                           pb_comm_t *c)
{
    a2a_side_t send = {sendbuf, pb_coll_vec_arrays(sendcounts, sdispls), sendtypes,
                       MPI_DATATYPE_NULL};
    a2a_side_t recv = {recvbuf, pb_coll_vec_arrays(recvcounts, rdispls), recvtypes,
                       MPI_DATATYPE_NULL};

    return alltoall_sched(func, &send, &recv, 1, comm, c, NULL, request);
}

int pb_mpi_alltoallw_init_impl(const char *func, const void *sendbuf, pb_mpi_counts_t sendcounts,
                               pb_mpi_displs_t sdispls, const MPI_Datatype sendtypes[],
                               void *recvbuf, pb_mpi_counts_t recvcounts, pb_mpi_displs_t rdispls,
                               const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                               MPI_Request *request, pb_comm_t *c)
{
    a2a_side_t send = {sendbuf, pb_coll_vec_arrays(sendcounts, sdispls), sendtypes,
                       MPI_DATATYPE_NULL};
    a2a_side_t recv = {recvbuf, pb_coll_vec_arrays(recvcounts, rdispls), recvtypes,
                       MPI_DATATYPE_NULL};

    return alltoall_sched(func, &send, &recv, 1, comm, c, &info, request);
}

int pb_mpi_ireduce_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                        MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                        MPI_Request *request, pb_comm_t *c)
{
    return reduce_sched(func, sendbuf, recvbuf, count, datatype, op, root, comm, c, NULL, request);
}

int pb_mpi_reduce_init_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                            MPI_Info info, MPI_Request *request, pb_comm_t *c)
{
    return reduce_sched(func, sendbuf, recvbuf, count, datatype, op, root, comm, c, &info, request);
}

int pb_mpi_iallreduce_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                           pb_comm_t *c)
{
    return allreduce_sched(func, ALLREDUCE, sendbuf, recvbuf, count, datatype, op, comm, c, NULL,
                           request);
}

int pb_mpi_allreduce_init_impl(const char *func, const void *sendbuf, void *recvbuf,
                               MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                               MPI_Info info, MPI_Request *request, pb_comm_t *c)
{
    return allreduce_sched(func, ALLREDUCE, sendbuf, recvbuf, count, datatype, op, comm, c, &info,
                           request);
}

int pb_mpi_ireduce_scatter_block_impl(const char *func, const void *sendbuf, void *recvbuf,
                                      MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op,
                                      MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return reduce_scatter_sched(func, sendbuf, recvbuf, pb_coll_vec_block(recvcount), datatype, op,
                                comm, c, NULL, request);
}

int pb_mpi_reduce_scatter_block_init_impl(const char *func, const void *sendbuf, void *recvbuf,
                                          MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op,
                                          MPI_Comm comm, MPI_Info info, MPI_Request *request,
                                          pb_comm_t *c)
{
    return reduce_scatter_sched(func, sendbuf, recvbuf, pb_coll_vec_block(recvcount), datatype, op,
                                comm, c, &info, request);
}

int pb_mpi_ireduce_scatter_impl(const char *func, const void *sendbuf, void *recvbuf,
                                pb_mpi_counts_t recvcounts, MPI_Datatype datatype, MPI_Op op,
                                MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    return reduce_scatter_sched(func, sendbuf, recvbuf,
                                pb_coll_vec_arrays(recvcounts, (pb_mpi_displs_t){NULL, NULL}),
                                datatype, op, comm, c, NULL, request);
}

int pb_mpi_reduce_scatter_init_impl(const char *func, const void *sendbuf, void *recvbuf,
                                    pb_mpi_counts_t recvcounts, MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm, MPI_Info info, MPI_Request *request,
                                    pb_comm_t *c)
{
    return reduce_scatter_sched(func, sendbuf, recvbuf,
                                pb_coll_vec_arrays(recvcounts, (pb_mpi_displs_t){NULL, NULL}),
                                datatype, op, comm, c, &info, request);
}

int pb_mpi_iscan_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                      pb_comm_t *c)
{
    return allreduce_sched(func, SCAN, sendbuf, recvbuf, count, datatype, op, comm, c, NULL,
                           request);
}

int pb_mpi_scan_init_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                          MPI_Request *request, pb_comm_t *c)
{
    return allreduce_sched(func, SCAN, sendbuf, recvbuf, count, datatype, op, comm, c, &info,
                           request);
}

int pb_mpi_iexscan_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                        pb_comm_t *c)
{
    return allreduce_sched(func, EXSCAN, sendbuf, recvbuf, count, datatype, op, comm, c, NULL,
                           request);
}

int pb_mpi_exscan_init_impl(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request, pb_comm_t *c)
{
    return allreduce_sched(func, EXSCAN, sendbuf, recvbuf, count, datatype, op, comm, c, &info,
                           request);
}
