/*
 * The point-to-point algorithms of the blocking collectives (coll_p2p.h),
 * over the point-to-point of p2p.h on each communicator's collective
 * context (so no collective message ever matches a receive of the
 * program's).
 *
 * Each collective kind has its own tag on the collective context; messages
 * of successive collectives between two ranks stay apart because every
 * rank calls the collectives of a communicator in the same order and
 * point-to-point never overtakes on one (source, tag, context).
 */
#include "mpi/coll_p2p.h"

#include <stdint.h>
#include <stdlib.h>

#include "mpi/coll_util.h"
#include "mpi/datatype.h"
#include "mpi/op.h"
#include "mpi/p2p.h"

/* the collective context of pb_mpi_isend_on/pb_mpi_irecv_on */
#define COLL 1

/* Tags on the collective context, one per kind of collective
 * (pb_mpi_agree_context uses 0 and 1 there). */
enum {
    TAG_BARRIER = 16,
    TAG_BCAST,
    TAG_REDUCE,
    TAG_ALLREDUCE,
    TAG_GATHER,
    TAG_SCATTER,
    TAG_ALLGATHER,
    TAG_ALLTOALL,
    TAG_SCAN,
    TAG_EXSCAN,
    TAG_REDUCE_SCATTER,
};

/* ---- typed buffers -------------------------------------------------------------- */

/* The address of element @index of the buffer of @t at @buf (@buf may be
 * MPI_BOTTOM, so the sum is taken as integers). */
static void *elem_addr(const void *buf, MPI_Aint index, const pb_datatype_t *t)
{
    return (void *)((uintptr_t)buf + (uintptr_t)(index * pb_eng_type_extent(t)));
}

/* inout = in op inout, elementwise over @count elements of @type. */
static void reduce_local(MPI_Op op, const void *in, void *inout, MPI_Count count, MPI_Datatype type)
{
    if (count > 0)
        pb_mpi_op_apply(op, in, inout, count, type);
}

static void swap_ptr(void **a, void **b)
{
    void *t = *a;

    *a = *b;
    *b = t;
}

/* The address of rank @i's block of the buffer @buf of @t described by @v. */
static void *vec_addr(const void *buf, const pb_coll_vec_t *v, int i, const pb_datatype_t *t)
{
    return elem_addr(buf, pb_coll_vec_displ(v, i), t);
}

/* ---- requests ------------------------------------------------------------------- */

/* A set of sends and receives started together and waited for together. */
typedef struct {
    MPI_Request *reqs; /* local, or allocated when more are needed */
    MPI_Request local[32];
    int n, max;
    int rc; /* the first error starting one */
} batch_t;

static void batch_init(batch_t *b, int max)
{
    b->n = 0;
    b->max = max;
    b->rc = MPI_SUCCESS;
    b->reqs = b->local;
    if (max > (int)PB_ARRAY_SIZE(b->local)) {
        b->reqs = malloc((size_t)max * sizeof(MPI_Request));
        if (b->reqs == NULL) {
            b->reqs = b->local;
            b->max = 0;
            b->rc = MPI_ERR_NO_MEM;
        }
    }
}

static void batch_send(batch_t *b, const void *buf, MPI_Count count, MPI_Datatype type, int dest,
                       int tag, pb_comm_t *c)
{
    if (b->rc != MPI_SUCCESS || b->n >= b->max)
        return;
    b->rc = pb_mpi_isend_on(buf, count, type, dest, tag, c, COLL, &b->reqs[b->n]);
    if (b->rc == MPI_SUCCESS)
        b->n++;
}

static void batch_recv(batch_t *b, void *buf, MPI_Count count, MPI_Datatype type, int source,
                       int tag, pb_comm_t *c)
{
    if (b->rc != MPI_SUCCESS || b->n >= b->max)
        return;
    b->rc = pb_mpi_irecv_on(buf, count, type, source, tag, c, COLL, &b->reqs[b->n]);
    if (b->rc == MPI_SUCCESS)
        b->n++;
}

/* Wait for every request started; the first error, of starting or of a
 * receive (MPI_ERR_TRUNCATE). */
static int batch_wait(batch_t *b)
{
    int rc = pb_mpi_wait_requests(b->n, b->reqs);

    if (b->reqs != b->local)
        free(b->reqs);
    b->reqs = b->local;
    b->n = 0;
    return b->rc != MPI_SUCCESS ? b->rc : rc;
}

static int send_to(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,
                   pb_comm_t *c)
{
    batch_t b;

    batch_init(&b, 1);
    batch_send(&b, buf, count, type, dest, tag, c);
    return batch_wait(&b);
}

static int recv_from(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag,
                     pb_comm_t *c)
{
    batch_t b;

    batch_init(&b, 1);
    batch_recv(&b, buf, count, type, source, tag, c);
    return batch_wait(&b);
}

/* Send to @dest and receive from @source at once (neither waits for the
 * other, so a ring or a pairwise exchange cannot deadlock). */
static int send_recv(const void *sbuf, MPI_Count scount, MPI_Datatype stype, int dest, void *rbuf,
                     MPI_Count rcount, MPI_Datatype rtype, int source, int tag, pb_comm_t *c)
{
    batch_t b;

    batch_init(&b, 2);
    batch_recv(&b, rbuf, rcount, rtype, source, tag, c);
    batch_send(&b, sbuf, scount, stype, dest, tag, c);
    return batch_wait(&b);
}

/* ---- the algorithms --------------------------------------------------------------- */

/* Dissemination barrier: in round k (1, 2, 4, ...) send an empty message to
 * rank + k and wait for one from rank - k; after ceil(log2 P) rounds every
 * rank has heard, indirectly, from every other. */
int pb_coll_barrier_dissemination(pb_comm_t *c)
{
    int rc = MPI_SUCCESS;

    for (int k = 1; k < c->size && rc == MPI_SUCCESS; k <<= 1)
        rc = send_recv(NULL, 0, MPI_BYTE, (c->rank + k) % c->size, NULL, 0, MPI_BYTE,
                       (c->rank - k + c->size) % c->size, TAG_BARRIER, c);
    return rc;
}

/* Binomial tree broadcast: with ranks numbered relative to the root, rank
 * r receives from r minus its lowest set bit, then sends to r + 2^k for
 * every 2^k below that bit. */
int pb_coll_bcast_binomial(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c)
{
    int size = c->size, rel = (c->rank - root + size) % size, mask = 1, rc = MPI_SUCCESS;
    batch_t b;

    for (; mask < size; mask <<= 1) {
        if (rel & mask) {
            rc = recv_from(buf, count, type, (rel - mask + root) % size, TAG_BCAST, c);
            break;
        }
    }
    if (rc != MPI_SUCCESS)
        return rc;
    batch_init(&b, 32);
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (rel + mask < size)
            batch_send(&b, buf, count, type, (rel + mask + root) % size, TAG_BCAST, c);
    }
    return batch_wait(&b);
}

/* Binomial tree reduction: rank r (relative to the tree's root) combines
 * the partial results of r + 1, r + 2, r + 4, ... below its lowest set bit
 * into its own, as (its ranks) op (theirs), then sends it to r minus that
 * bit.  A commutative op uses a tree rooted at @root; a non-commutative
 * one a tree rooted at rank 0, whose relative order is rank order, and
 * rank 0 sends the result on to @root. */
int pb_coll_reduce_binomial(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                            MPI_Op op, int root, pb_comm_t *c)
{
    int size = c->size, rank = c->rank;
    int top = pb_mpi_op_is_commutative(op) ? root : 0;
    int rel = (rank - top + size) % size, rc = MPI_SUCCESS;
    void *acc_mem = NULL, *tmp_mem = NULL, *acc, *tmp;

    if (size == 1) /* alone (MPI_COMM_SELF): the input is the result */
        return pb_coll_copy_typed(sendbuf, count, type, recvbuf, count, type);
    acc = pb_coll_scratch_alloc(count, type, &acc_mem);
    tmp = pb_coll_scratch_alloc(count, type, &tmp_mem);
    if (acc == NULL || tmp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = pb_coll_copy_typed(sendbuf, count, type, acc, count, type);
    for (int mask = 1; mask < size && rc == MPI_SUCCESS; mask <<= 1) {
        if (rel & mask) {
            rc = send_to(acc, count, type, (rel - mask + top) % size, TAG_REDUCE, c);
            break;
        }
        if (rel + mask < size) {
            rc = recv_from(tmp, count, type, (rel + mask + top) % size, TAG_REDUCE, c);
            if (rc == MPI_SUCCESS) {
                reduce_local(op, acc, tmp, count, type); /* tmp = acc op tmp */
                swap_ptr(&acc, &tmp);
            }
        }
    }
    if (rc != MPI_SUCCESS)
        goto out;
    if (rank == top && rank == root)
        rc = pb_coll_copy_typed(acc, count, type, recvbuf, count, type);
    else if (rank == top)
        rc = send_to(acc, count, type, root, TAG_REDUCE, c);
    else if (rank == root)
        rc = recv_from(recvbuf, count, type, top, TAG_REDUCE, c);
out:
    pb_coll_scratch_put(acc_mem);
    pb_coll_scratch_put(tmp_mem);
    return rc;
}

/* Recursive doubling allreduce.  With 2^k the largest power of two <= P
 * and R = P - 2^k, ranks 2i and 2i+1 (i < R) first fold into 2i+1; then the
 * 2^k remaining ranks swap partial results with the partner whose number
 * differs in bit 0, 1, 2, ... and combine, lower ranks' result on the left;
 * last, each 2i+1 (i < R) hands the result to 2i.  The partial result
 * starts in @recvbuf and moves between it and one scratch buffer (the
 * combination "lower op higher" lands in the buffer received into). */
int pb_coll_allreduce_recursive_doubling(const void *sendbuf, void *recvbuf, MPI_Count count,
                                         MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    int size = c->size, rank = c->rank, pof2 = 1, rem, newrank, rc;
    void *tmp_mem = NULL, *acc = recvbuf, *tmp;

    if (size == 1) /* alone (MPI_COMM_SELF): the input is the result */
        return pb_coll_copy_typed(sendbuf, count, type, recvbuf, count, type);
    tmp = pb_coll_scratch_alloc(count, type, &tmp_mem);
    if (tmp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = pb_coll_copy_typed(sendbuf, count, type, acc, count, type);
    while (pof2 * 2 <= size)
        pof2 *= 2;
    rem = size - pof2;
    newrank = rank < 2 * rem ? (rank % 2 ? rank / 2 : -1) : rank - rem;
    if (rc == MPI_SUCCESS && rank < 2 * rem) {
        if (rank % 2 == 0) {
            rc = send_to(acc, count, type, rank + 1, TAG_ALLREDUCE, c);
        } else {
            rc = recv_from(tmp, count, type, rank - 1, TAG_ALLREDUCE, c);
            if (rc == MPI_SUCCESS)
                reduce_local(op, tmp, acc, count, type); /* acc = tmp op acc */
        }
    }
    for (int mask = 1; newrank >= 0 && mask < pof2 && rc == MPI_SUCCESS; mask <<= 1) {
        int newdst = newrank ^ mask;
        int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;

        rc = send_recv(acc, count, type, dst, tmp, count, type, dst, TAG_ALLREDUCE, c);
        if (rc != MPI_SUCCESS)
            break;
        if (dst < rank) {
            reduce_local(op, tmp, acc, count, type); /* acc = tmp op acc */
        } else {
            reduce_local(op, acc, tmp, count, type); /* tmp = acc op tmp */
            swap_ptr(&acc, &tmp);
        }
    }
    if (rc == MPI_SUCCESS && rank < 2 * rem) {
        if (rank % 2)
            rc = send_to(acc, count, type, rank - 1, TAG_ALLREDUCE, c);
        else
            rc = recv_from(acc, count, type, rank + 1, TAG_ALLREDUCE, c);
    }
    if (rc == MPI_SUCCESS && acc != recvbuf)
        rc = pb_coll_copy_typed(acc, count, type, recvbuf, count, type);
out:
    pb_coll_scratch_put(tmp_mem);
    return rc;
}

/* Direct gather: every rank sends its block to the root, which has
 * posted a receive for each.  @sendbuf MPI_IN_PLACE at the root: its
 * block is in place. */
int pb_coll_gatherv_direct(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                           int root, pb_comm_t *c)
{
    const pb_datatype_t *rt = pb_mpi_datatype(recvtype);
    int rc = MPI_SUCCESS;
    batch_t b;

    if (c->rank != root)
        return send_to(sendbuf, sendcount, sendtype, root, TAG_GATHER, c);
    batch_init(&b, c->size - 1);
    for (int i = 1; i < c->size; i++) {
        int r = (root + i) % c->size;

        batch_recv(&b, vec_addr(recvbuf, recv, r, rt), pb_coll_vec_count(recv, r), recvtype, r,
                   TAG_GATHER, c);
    }
    if (sendbuf != MPI_IN_PLACE)
        rc = pb_coll_copy_typed(sendbuf, sendcount, sendtype, vec_addr(recvbuf, recv, root, rt),
                                pb_coll_vec_count(recv, root), recvtype);
    int wrc = batch_wait(&b);
    return rc != MPI_SUCCESS ? rc : wrc;
}

/* Direct scatter: the root sends each rank its block.  @recvbuf
 * MPI_IN_PLACE at the root: its block stays where it is. */
int pb_coll_scatterv_direct(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                            pb_comm_t *c)
{
    const pb_datatype_t *st = pb_mpi_datatype(sendtype);
    int rc = MPI_SUCCESS;
    batch_t b;

    if (c->rank != root)
        return recv_from(recvbuf, recvcount, recvtype, root, TAG_SCATTER, c);
    batch_init(&b, c->size - 1);
    for (int i = 1; i < c->size; i++) {
        int r = (root + i) % c->size;

        batch_send(&b, vec_addr(sendbuf, send, r, st), pb_coll_vec_count(send, r), sendtype, r,
                   TAG_SCATTER, c);
    }
    if (recvbuf != MPI_IN_PLACE)
        rc = pb_coll_copy_typed(vec_addr(sendbuf, send, root, st), pb_coll_vec_count(send, root),
                                sendtype, recvbuf, recvcount, recvtype);
    int wrc = batch_wait(&b);
    return rc != MPI_SUCCESS ? rc : wrc;
}

/* Ring allgather: each rank places its own block, then in step s sends
 * block (rank - s) to rank + 1 and receives block (rank - s - 1) from
 * rank - 1.  @sendbuf MPI_IN_PLACE: the own block is in place. */
int pb_coll_allgatherv_ring(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                            pb_comm_t *c)
{
    const pb_datatype_t *rt = pb_mpi_datatype(recvtype);
    int size = c->size, rank = c->rank, rc = MPI_SUCCESS;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;

    if (sendbuf != MPI_IN_PLACE)
        rc = pb_coll_copy_typed(sendbuf, sendcount, sendtype, vec_addr(recvbuf, recv, rank, rt),
                                pb_coll_vec_count(recv, rank), recvtype);
    for (int s = 0; s < size - 1 && rc == MPI_SUCCESS; s++) {
        int out = (rank - s + size) % size, in = (rank - s - 1 + size) % size;

        rc = send_recv(vec_addr(recvbuf, recv, out, rt), pb_coll_vec_count(recv, out), recvtype,
                       right, vec_addr(recvbuf, recv, in, rt), pb_coll_vec_count(recv, in),
                       recvtype, left, TAG_ALLGATHER, c);
    }
    return rc;
}

/* Direct all-to-all: every receive and every send posted at once, peers
 * taken in the order rank + 1, rank + 2, ... so that they do not all start
 * on one rank.  @sendbuf MPI_IN_PLACE: the blocks to send are packed out
 * of @recvbuf first, and the own block stays. */
int pb_coll_alltoallv_direct(const void *sendbuf, const pb_coll_vec_t *send, MPI_Datatype sendtype,
                             void *recvbuf, const pb_coll_vec_t *recv, MPI_Datatype recvtype,
                             pb_comm_t *c)
{
    const pb_datatype_t *st = pb_mpi_datatype(sendtype), *rt = pb_mpi_datatype(recvtype);
    int size = c->size, rank = c->rank, rc = MPI_SUCCESS;
    size_t rsize = pb_eng_type_size(rt), total = 0;
    size_t *offs = NULL;
    char *packed = NULL;
    batch_t b;

    if (sendbuf == MPI_IN_PLACE) {
        offs = malloc((size_t)size * sizeof(*offs));
        for (int i = 0; offs != NULL && i < size; i++) {
            offs[i] = total;
            total += i == rank ? 0 : (size_t)pb_coll_vec_count(recv, i) * rsize;
        }
        packed = offs != NULL ? malloc(total ? total : 1) : NULL;
        if (packed == NULL) {
            free(offs);
            return MPI_ERR_NO_MEM;
        }
        for (int i = 0; i < size; i++) {
            if (i != rank)
                pb_eng_type_pack_range(vec_addr(recvbuf, recv, i, rt), pb_coll_vec_count(recv, i),
                                       rt, 0, packed + offs[i],
                                       (size_t)pb_coll_vec_count(recv, i) * rsize);
        }
    }
    batch_init(&b, 2 * (size - 1));
    for (int i = 1; i < size; i++) {
        int from = (rank - i + size) % size;

        batch_recv(&b, vec_addr(recvbuf, recv, from, rt), pb_coll_vec_count(recv, from), recvtype,
                   from, TAG_ALLTOALL, c);
    }
    for (int i = 1; i < size; i++) {
        int to = (rank + i) % size;

        if (packed != NULL)
            batch_send(&b, packed + offs[to],
                       (MPI_Count)((size_t)pb_coll_vec_count(recv, to) * rsize), MPI_BYTE, to,
                       TAG_ALLTOALL, c);
        else
            batch_send(&b, vec_addr(sendbuf, send, to, st), pb_coll_vec_count(send, to), sendtype,
                       to, TAG_ALLTOALL, c);
    }
    if (sendbuf != MPI_IN_PLACE)
        rc = pb_coll_copy_typed(vec_addr(sendbuf, send, rank, st), pb_coll_vec_count(send, rank),
                                sendtype, vec_addr(recvbuf, recv, rank, rt),
                                pb_coll_vec_count(recv, rank), recvtype);
    int wrc = batch_wait(&b);
    free(packed);
    free(offs);
    return rc != MPI_SUCCESS ? rc : wrc;
}

/* Recursive doubling inclusive scan: in step k rank r swaps its partial
 * result (of the 2^k-aligned block of ranks it belongs to) with r ^ 2^k;
 * when the partner is lower, both the partial result and the scan combine
 * the partner's on the left, else only the partial result on the right. */
int pb_coll_scan_recursive_doubling(const void *sendbuf, void *recvbuf, MPI_Count count,
                                    MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    int rc;
    void *part_mem = NULL, *tmp_mem = NULL;
    void *part = pb_coll_scratch_alloc(count, type, &part_mem),
         *tmp = pb_coll_scratch_alloc(count, type, &tmp_mem);

    if (part == NULL || tmp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = pb_coll_copy_typed(sendbuf, count, type, part, count, type);
    if (rc == MPI_SUCCESS)
        rc = pb_coll_copy_typed(sendbuf, count, type, recvbuf, count, type);
    for (int mask = 1; mask < c->size && rc == MPI_SUCCESS; mask <<= 1) {
        int dst = c->rank ^ mask;

        if (dst >= c->size)
            continue;
        rc = send_recv(part, count, type, dst, tmp, count, type, dst, TAG_SCAN, c);
        if (rc != MPI_SUCCESS)
            break;
        if (dst < c->rank) {
            reduce_local(op, tmp, part, count, type);    /* part = tmp op part */
            reduce_local(op, tmp, recvbuf, count, type); /* scan = tmp op scan */
        } else {
            reduce_local(op, part, tmp, count, type); /* tmp = part op tmp */
            swap_ptr(&part, &tmp);
        }
    }
out:
    pb_coll_scratch_put(part_mem);
    pb_coll_scratch_put(tmp_mem);
    return rc;
}

/* Recursive doubling exclusive scan: as the inclusive one, but the result
 * starts empty and takes only the lower partners' partial results (rank 0
 * gets none; its @recvbuf is left as it was). */
int pb_coll_exscan_recursive_doubling(const void *sendbuf, void *recvbuf, MPI_Count count,
                                      MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    int rc, have = 0;
    void *part_mem = NULL, *tmp_mem = NULL;
    void *part = pb_coll_scratch_alloc(count, type, &part_mem),
         *tmp = pb_coll_scratch_alloc(count, type, &tmp_mem);

    if (part == NULL || tmp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = pb_coll_copy_typed(sendbuf, count, type, part, count, type);
    for (int mask = 1; mask < c->size && rc == MPI_SUCCESS; mask <<= 1) {
        int dst = c->rank ^ mask;

        if (dst >= c->size)
            continue;
        rc = send_recv(part, count, type, dst, tmp, count, type, dst, TAG_EXSCAN, c);
        if (rc != MPI_SUCCESS)
            break;
        if (dst < c->rank) {
            reduce_local(op, tmp, part, count, type); /* part = tmp op part */
            if (have) {
                reduce_local(op, tmp, recvbuf, count, type); /* scan = tmp op scan */
            } else {
                rc = pb_coll_copy_typed(tmp, count, type, recvbuf, count, type);
                have = 1;
            }
        } else {
            reduce_local(op, part, tmp, count, type); /* tmp = part op tmp */
            swap_ptr(&part, &tmp);
        }
    }
out:
    pb_coll_scratch_put(part_mem);
    pb_coll_scratch_put(tmp_mem);
    return rc;
}

/* ---- reductions split into segments (Rabenseifner) ----------------------------------- */

/*
 * The large-vector reductions of a commutative op split the vector so
 * that every rank combines one part of it (the arithmetic is spread over
 * the ranks, not done by one root), in three phases over 2^k = pof2 ranks:
 *
 *   fold      when P is not a power of two, with R = P - pof2, rank 2i
 *             (i < R) sends its whole vector to 2i + 1, which combines it
 *             and stands for both; the others are numbered i + R -> i.
 *             A "new rank" n is so rank 2n + 1 (n < R) or n + R.
 *   halving   (reduce-scatter) the vector is cut into pof2 segments; in
 *             step mask = pof2/2, ..., 1, new rank n swaps half of the
 *             segments it still combines with n ^ mask (it keeps the
 *             lower half when its bit mask is 0) and combines the half it
 *             keeps: afterwards new rank n holds segment n, fully reduced.
 *   spread    allgather by recursive doubling (Allreduce), a binomial
 *             gather to one new rank (Reduce), or each segment to the
 *             ranks whose blocks it is (Reduce_scatter).
 *
 * Every element is combined by one rank only, so all ranks get the same
 * bits.  The ops are commutative, so the order in which the fold and the
 * halving combine contributions does not change the result beyond what
 * floating-point reassociation does, as the standard allows.
 */
typedef struct {
    int pof2, rem, newrank; /* newrank -1: folded away */
    MPI_Aint *seg;          /* pof2 + 1 boundaries, in elements: segment n is [seg[n], seg[n+1]) */
} split_t;

/* The rank new rank @n stands for (and works as). */
static int split_rank(const split_t *s, int n)
{
    return n < s->rem ? 2 * n + 1 : n + s->rem;
}

/* The first of the ranks new rank @n stands for (2n, or n + rem). */
static int split_first_rank(const split_t *s, int n)
{
    return n < s->rem ? 2 * n : n + s->rem;
}

/* The layout of @c's ranks: pof2, the ranks folded away, this rank's new
 * rank, and room for the boundaries (not yet set). @return MPI_SUCCESS or
 * MPI_ERR_NO_MEM. */
static int split_init(split_t *s, pb_comm_t *c)
{
    s->pof2 = 1;
    while (s->pof2 * 2 <= c->size)
        s->pof2 *= 2;
    s->rem = c->size - s->pof2;
    s->newrank = c->rank < 2 * s->rem ? (c->rank % 2 ? c->rank / 2 : -1) : c->rank - s->rem;
    s->seg = malloc(((size_t)s->pof2 + 1) * sizeof(*s->seg));
    return s->seg != NULL ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* Equal segments of @count elements (the first count % pof2 one longer). */
static void split_even(split_t *s, MPI_Count count)
{
    MPI_Aint q = (MPI_Aint)(count / s->pof2), r = (MPI_Aint)(count % s->pof2);

    for (int n = 0; n <= s->pof2; n++)
        s->seg[n] = (MPI_Aint)n * q + (n < r ? n : r);
}

/* The elements of segments [@first, @first + @n). */
static MPI_Aint split_lo(const split_t *s, int first)
{
    return s->seg[first];
}

static MPI_Count split_len(const split_t *s, int first, int n)
{
    return (MPI_Count)(s->seg[first + n] - s->seg[first]);
}

/* The fold: rank 2i (i < rem) sends its @count elements at @mine to 2i+1,
 * which receives them into @tmp and combines its own into them.  *@src_p
 * is where this rank's contribution to the halving now is: @tmp on 2i+1,
 * @mine on the others. */
static int split_fold(const split_t *s, const void *mine, void *tmp, const void **src_p,
                      MPI_Count count, MPI_Datatype type, MPI_Op op, int tag, pb_comm_t *c)
{
    int rc;

    *src_p = mine;
    if (c->rank >= 2 * s->rem)
        return MPI_SUCCESS;
    if (c->rank % 2 == 0)
        return send_to(mine, count, type, c->rank + 1, tag, c);
    rc = recv_from(tmp, count, type, c->rank - 1, tag, c);
    if (rc == MPI_SUCCESS) {
        reduce_local(op, mine, tmp, count, type); /* tmp = mine op theirs (commutative) */
        *src_p = tmp;
    }
    return rc;
}

/* The halving on a new rank: @src holds the whole (folded) vector, @acc
 * and @tmp have room for it, all addressed alike (@src may be @acc or
 * @tmp).  The first step sends half of @src and, when @src is not @acc,
 * receives the partner's half straight into @acc and combines @src's into
 * it there (the op is commutative), so that nothing is copied; later
 * steps work in @acc, receiving into @tmp.  Afterwards segment newrank of
 * @acc is reduced over every rank. */
static int split_halving(const split_t *s, const void *src, void *acc, void *tmp, MPI_Datatype type,
                         MPI_Op op, int tag, pb_comm_t *c)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    int rc = MPI_SUCCESS;

    for (int mask = s->pof2 / 2; mask > 0 && rc == MPI_SUCCESS; mask /= 2) {
        int partner = s->newrank ^ mask, base = s->newrank & ~(2 * mask - 1);
        int keep = s->newrank & mask ? base + mask : base,
            give = s->newrank & mask ? base : base + mask;
        MPI_Aint klo = split_lo(s, keep), glo = split_lo(s, give);
        MPI_Count klen = split_len(s, keep, mask), glen = split_len(s, give, mask);
        void *into = src != acc ? acc : tmp; /* where the partner's half goes */
        const void *other = src != acc ? src : tmp;

        rc = send_recv(elem_addr(src, glo, t), glen, type, split_rank(s, partner),
                       elem_addr(into, klo, t), klen, type, split_rank(s, partner), tag, c);
        if (rc == MPI_SUCCESS)
            reduce_local(op, elem_addr(other, klo, t), elem_addr(acc, klo, t), klen, type);
        src = acc;
    }
    return rc;
}

/* Recursive doubling allgather of the segments on a new rank: in step
 * mask = 1, 2, ..., new rank n swaps the mask segments it holds with
 * those of n ^ mask, all in @acc. */
static int split_allgather(const split_t *s, void *acc, MPI_Datatype type, int tag, pb_comm_t *c)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    int rc = MPI_SUCCESS;

    for (int mask = 1; mask < s->pof2 && rc == MPI_SUCCESS; mask *= 2) {
        int partner = s->newrank ^ mask;
        int mine = s->newrank & ~(mask - 1), theirs = partner & ~(mask - 1);

        rc = send_recv(elem_addr(acc, split_lo(s, mine), t), split_len(s, mine, mask), type,
                       split_rank(s, partner), elem_addr(acc, split_lo(s, theirs), t),
                       split_len(s, theirs, mask), type, split_rank(s, partner), tag, c);
    }
    return rc;
}

/* Binomial gather of the segments to new rank @newroot, in @acc: in step
 * mask = 1, 2, ..., a new rank whose distance (XOR) from the root has bit
 * mask set sends the mask segments it holds to n ^ mask and is done; the
 * other receives that many. */
static int split_gather(const split_t *s, void *acc, MPI_Datatype type, int newroot, int tag,
                        pb_comm_t *c)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);

    for (int mask = 1; mask < s->pof2; mask *= 2) {
        int partner = s->newrank ^ mask;
        int mine = s->newrank & ~(mask - 1), theirs = partner & ~(mask - 1);
        int rc;

        if ((s->newrank ^ newroot) & mask)
            return send_to(elem_addr(acc, split_lo(s, mine), t), split_len(s, mine, mask), type,
                           split_rank(s, partner), tag, c);
        rc = recv_from(elem_addr(acc, split_lo(s, theirs), t), split_len(s, theirs, mask), type,
                       split_rank(s, partner), tag, c);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* Allreduce of a commutative op by reduce-scatter and allgather
 * (Rabenseifner): fold, halving, recursive doubling allgather, and the
 * folded ranks get the whole result from their partner.  Works in
 * @recvbuf (the caller resolved MPI_IN_PLACE to it). */
int pb_coll_allreduce_rabenseifner(const void *sendbuf, void *recvbuf, MPI_Count count,
                                   MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    split_t s;
    void *tmp_mem = NULL, *tmp = NULL;
    const void *src;
    int rc = split_init(&s, c);

    if (rc == MPI_SUCCESS && (tmp = pb_coll_scratch_alloc(count, type, &tmp_mem)) == NULL)
        rc = MPI_ERR_NO_MEM;
    if (rc != MPI_SUCCESS)
        goto out;
    split_even(&s, count);
    rc = split_fold(&s, sendbuf, tmp, &src, count, type, op, TAG_ALLREDUCE, c);
    if (rc == MPI_SUCCESS && s.newrank >= 0)
        rc = split_halving(&s, src, recvbuf, tmp, type, op, TAG_ALLREDUCE, c);
    if (rc == MPI_SUCCESS && s.newrank >= 0)
        rc = split_allgather(&s, recvbuf, type, TAG_ALLREDUCE, c);
    if (rc == MPI_SUCCESS && c->rank < 2 * s.rem) {
        if (c->rank % 2)
            rc = send_to(recvbuf, count, type, c->rank - 1, TAG_ALLREDUCE, c);
        else
            rc = recv_from(recvbuf, count, type, c->rank + 1, TAG_ALLREDUCE, c);
    }
out:
    pb_coll_scratch_put(tmp_mem);
    free(s.seg);
    return rc;
}

/* Reduce of a commutative op by reduce-scatter and gather: fold,
 * halving, binomial gather of the segments to the root's new rank (to its
 * partner 2i + 1 when the root 2i was folded away, which then sends the
 * result on).  The root works in @recvbuf, the others in a scratch
 * buffer. */
int pb_coll_reduce_rabenseifner(const void *sendbuf, void *recvbuf, MPI_Count count,
                                MPI_Datatype type, MPI_Op op, int root, pb_comm_t *c)
{
    split_t s;
    void *tmp_mem = NULL, *acc_mem = NULL, *tmp = NULL, *acc = NULL;
    int rc = split_init(&s, c), folded_root = root < 2 * s.rem && root % 2 == 0;
    int newroot = root < 2 * s.rem ? root / 2 : root - s.rem;
    const void *src;

    if (rc != MPI_SUCCESS)
        goto out;
    if (s.newrank >= 0) {
        acc = c->rank == root ? recvbuf : pb_coll_scratch_alloc(count, type, &acc_mem);
        tmp = pb_coll_scratch_alloc(count, type, &tmp_mem);
        if (acc == NULL || tmp == NULL) {
            rc = MPI_ERR_NO_MEM;
            goto out;
        }
    }
    split_even(&s, count);
    rc = split_fold(&s, sendbuf, tmp, &src, count, type, op, TAG_REDUCE, c);
    if (rc == MPI_SUCCESS && s.newrank >= 0)
        rc = split_halving(&s, src, acc, tmp, type, op, TAG_REDUCE, c);
    if (rc == MPI_SUCCESS && s.newrank >= 0)
        rc = split_gather(&s, acc, type, newroot, TAG_REDUCE, c);
    if (rc == MPI_SUCCESS && folded_root && c->rank == root)
        rc = recv_from(recvbuf, count, type, root + 1, TAG_REDUCE, c);
    else if (rc == MPI_SUCCESS && folded_root && c->rank == root + 1)
        rc = send_to(acc, count, type, root, TAG_REDUCE, c);
out:
    pb_coll_scratch_put(acc_mem);
    pb_coll_scratch_put(tmp_mem);
    free(s.seg);
    return rc;
}

/* Reduce_scatter of a commutative op by recursive halving: the segments
 * are the ranks' blocks, new rank n's segment the blocks of the ranks it
 * stands for (2n and 2n + 1, or n + rem); after fold and halving, 2n + 1
 * sends 2n its block.  @sendbuf holds the whole vector. */
int pb_coll_reduce_scatter_halving(const void *sendbuf, void *recvbuf, const pb_coll_vec_t *counts,
                                   MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    split_t s;
    void *tmp_mem = NULL, *acc_mem = NULL, *tmp = NULL, *acc = NULL;
    MPI_Count total = 0, mine = pb_coll_vec_count(counts, c->rank);
    MPI_Aint first = 0; /* this rank's block */
    const void *src;
    int rc = split_init(&s, c);

    if (rc != MPI_SUCCESS)
        goto out;
    for (int i = 0, n = 0; i < c->size; i++) {
        if (i == c->rank)
            first = (MPI_Aint)total;
        if (n < s.pof2 && i == split_first_rank(&s, n))
            s.seg[n++] = (MPI_Aint)total;
        total += pb_coll_vec_count(counts, i);
    }
    s.seg[s.pof2] = (MPI_Aint)total;
    if (s.newrank >= 0) {
        acc = pb_coll_scratch_alloc(total, type, &acc_mem);
        tmp = pb_coll_scratch_alloc(total, type, &tmp_mem);
        if (acc == NULL || tmp == NULL) {
            rc = MPI_ERR_NO_MEM;
            goto out;
        }
    }
    rc = split_fold(&s, sendbuf, tmp, &src, total, type, op, TAG_REDUCE_SCATTER, c);
    if (rc == MPI_SUCCESS && s.newrank >= 0)
        rc = split_halving(&s, src, acc, tmp, type, op, TAG_REDUCE_SCATTER, c);
    if (rc != MPI_SUCCESS)
        goto out;
    if (s.newrank < 0) {
        rc = recv_from(recvbuf, mine, type, c->rank + 1, TAG_REDUCE_SCATTER, c);
    } else {
        if (c->rank < 2 * s.rem)
            rc = send_to(
                elem_addr(acc, first - (MPI_Aint)pb_coll_vec_count(counts, c->rank - 1), t),
                pb_coll_vec_count(counts, c->rank - 1), type, c->rank - 1, TAG_REDUCE_SCATTER, c);
        if (rc == MPI_SUCCESS)
            rc = pb_coll_copy_typed(elem_addr(acc, first, t), mine, type, recvbuf, mine, type);
    }
out:
    pb_coll_scratch_put(acc_mem);
    pb_coll_scratch_put(tmp_mem);
    free(s.seg);
    return rc;
}

/* Reduce_scatter of a commutative op by pairwise exchange: in step
 * s = 1 .. P-1, rank r sends rank r + s its block of @sendbuf and receives
 * from r - s that rank's contribution to its own block, which it combines
 * into a scratch copy of its block (copied to @recvbuf at the end, so that
 * in place the blocks still to send are left alone).  Every rank moves
 * (P-1)/P of the vector, with no fold, whatever P. */
int pb_coll_reduce_scatter_pairwise(const void *sendbuf, void *recvbuf, const pb_coll_vec_t *counts,
                                    MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    int size = c->size, rank = c->rank, rc = MPI_SUCCESS;
    MPI_Count mine = pb_coll_vec_count(counts, rank);
    MPI_Aint *first = malloc(((size_t)size + 1) * sizeof(*first));
    void *acc_mem = NULL, *tmp_mem = NULL, *acc = NULL, *tmp = NULL;

    if (first != NULL) {
        first[0] = 0;
        for (int i = 0; i < size; i++)
            first[i + 1] = first[i] + (MPI_Aint)pb_coll_vec_count(counts, i);
        acc = pb_coll_scratch_alloc(mine, type, &acc_mem);
        tmp = pb_coll_scratch_alloc(mine, type, &tmp_mem);
    }
    if (acc == NULL || tmp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = pb_coll_copy_typed(elem_addr(sendbuf, first[rank], t), mine, type, acc, mine, type);
    for (int step = 1; step < size && rc == MPI_SUCCESS; step++) {
        int to = (rank + step) % size, from = (rank - step + size) % size;

        rc = send_recv(elem_addr(sendbuf, first[to], t), pb_coll_vec_count(counts, to), type, to,
                       tmp, mine, type, from, TAG_REDUCE_SCATTER, c);
        if (rc == MPI_SUCCESS)
            reduce_local(op, tmp, acc, mine, type);
    }
    if (rc == MPI_SUCCESS)
        rc = pb_coll_copy_typed(acc, mine, type, recvbuf, mine, type);
out:
    pb_coll_scratch_put(acc_mem);
    pb_coll_scratch_put(tmp_mem);
    free(first);
    return rc;
}

/* ---- long broadcasts, short allgathers ------------------------------------------------- */

/* Broadcast of a long message by scatter and allgather (van de Geijn):
 * the @count elements are cut into P pieces, piece i for the rank i after
 * the root (rel = rank - root mod P).  A binomial scatter gives every rank
 * its piece (a rank receives from its parent the pieces of its whole
 * subtree, rel up to rel + its lowest set bit, and hands each child its
 * subtree's), then a ring allgather passes the pieces on: in step s,
 * relative rank rel sends piece rel - s to rel + 1 and receives piece
 * rel - s - 1 from rel - 1. */
int pb_coll_bcast_scatter_allgather(void *buf, MPI_Count count, MPI_Datatype type, int root,
                                    pb_comm_t *c)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    int size = c->size, rel = (c->rank - root + size) % size, mask = 1, rc = MPI_SUCCESS;
    MPI_Aint q = (MPI_Aint)(count / size), r = (MPI_Aint)(count % size);
    batch_t b;

#define PIECE(i) ((MPI_Aint)(i)*q + ((i) < r ? (MPI_Aint)(i) : r))
#define PIECES(first, end) elem_addr(buf, PIECE(first), t), (MPI_Count)(PIECE(end) - PIECE(first))
    for (; mask < size; mask <<= 1) {
        if (rel & mask) {
            int end = rel + mask < size ? rel + mask : size;

            rc = recv_from(PIECES(rel, end), type, (c->rank - mask + size) % size, TAG_BCAST, c);
            break;
        }
    }
    if (rc != MPI_SUCCESS)
        return rc;
    batch_init(&b, 32);
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (rel + mask < size) {
            int end = rel + 2 * mask < size ? rel + 2 * mask : size;

            batch_send(&b, PIECES(rel + mask, end), type, (c->rank + mask) % size, TAG_BCAST, c);
        }
    }
    rc = batch_wait(&b);
    for (int step = 0; step < size - 1 && rc == MPI_SUCCESS; step++) {
        int out = (rel - step + size) % size, in = (rel - step - 1 + size) % size;

        rc = send_recv(PIECES(out, out + 1), type, (c->rank + 1) % size, PIECES(in, in + 1), type,
                       (c->rank - 1 + size) % size, TAG_BCAST, c);
    }
#undef PIECES
#undef PIECE
    return rc;
}

/* Recursive doubling allgather, for P a power of two and equal blocks: in
 * step mask = 1, 2, ..., rank r swaps the mask blocks it has (those of
 * the ranks r & ~(mask - 1) on) with r ^ mask; log2 P steps instead of the
 * ring's P - 1.  @sendbuf MPI_IN_PLACE: the own block is in place. */
int pb_coll_allgather_recursive_doubling(const void *sendbuf, MPI_Count sendcount,
                                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                         MPI_Datatype recvtype, pb_comm_t *c)
{
    const pb_datatype_t *rt = pb_mpi_datatype(recvtype);
    int rc = MPI_SUCCESS;

    if (sendbuf != MPI_IN_PLACE)
        rc = pb_coll_copy_typed(sendbuf, sendcount, sendtype,
                                elem_addr(recvbuf, (MPI_Aint)(c->rank * recvcount), rt), recvcount,
                                recvtype);
    for (int mask = 1; mask < c->size && rc == MPI_SUCCESS; mask <<= 1) {
        int partner = c->rank ^ mask;
        MPI_Aint mine = (MPI_Aint)((c->rank & ~(mask - 1)) * recvcount);
        MPI_Aint theirs = (MPI_Aint)((partner & ~(mask - 1)) * recvcount);

        rc = send_recv(elem_addr(recvbuf, mine, rt), mask * recvcount, recvtype, partner,
                       elem_addr(recvbuf, theirs, rt), mask * recvcount, recvtype, partner,
                       TAG_ALLGATHER, c);
    }
    return rc;
}
