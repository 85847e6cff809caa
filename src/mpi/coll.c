/*
 * Collectives (docs/mpi.md, "Collectives"): MPI_Barrier, MPI_Bcast, the
 * gathers, scatters and all-to-alls, and the reductions, each with its
 * large-count form MPI_X_c, over the point-to-point of p2p.h on each
 * communicator's collective context (so no collective message ever matches
 * a receive of the program's).
 *
 * Every collective has three layers:
 *
 *   PMPI_X          checks the arguments (errors through pb_mpi_raise) and
 *                   resolves MPI_IN_PLACE, then calls
 *   coll_x          the one place that chooses the algorithm ("choosing an
 *                   algorithm" below: one per collective today; tuned,
 *                   size-dependent and node-aware ones plug in there), which
 *                   calls
 *   x_<algorithm>   the algorithm on a pb_comm_t, returning an error class.
 *
 * The algorithms, for P ranks:
 *
 *   Barrier          dissemination: ceil(log2 P) rounds of empty messages
 *   Bcast            binomial tree from the root
 *   Reduce           binomial tree toward the root; a non-commutative op goes
 *                    toward rank 0, combining in rank order, and rank 0 then
 *                    sends the result to the root
 *   Allreduce        recursive doubling (the ranks beyond the largest power
 *                    of two first fold into a neighbour); partial results
 *                    always combine as (lower ranks) op (higher ranks), so
 *                    non-commutative ops are right and every rank ends with
 *                    the same bits
 *   Gather(v), Scatter(v)   direct: the root posts one receive (send) per rank
 *   Allgather(v)     ring: P-1 steps, each passing one block to the right
 *   Alltoall(v)      direct: every receive and send posted at once
 *   Reduce_scatter(_block)  Reduce to rank 0, then Scatterv from it
 *   Scan, Exscan     recursive doubling (MPICH's scheme), in rank order
 *
 * Each collective kind has its own tag on the collective context; messages
 * of successive collectives between two ranks stay apart because every
 * rank calls the collectives of a communicator in the same order and
 * point-to-point never overtakes on one (source, tag, context).
 */
#include <stdint.h>
#include <stdlib.h>

#include "mpi/comm.h"
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
};

/* bytes a local copy between two non-contiguous layouts packs at a time */
#define COPY_CHUNK 16384

/* ---- typed buffers -------------------------------------------------------------- */

/* The address of element @index of the buffer of @t at @buf (@buf may be
 * MPI_BOTTOM, so the sum is taken as integers). */
static void *elem_addr(const void *buf, MPI_Aint index, const pb_datatype_t *t)
{
    return (void *)((uintptr_t)buf + (uintptr_t)(index * pb_eng_type_extent(t)));
}

/* Memory for @count elements of @type laid out as the type says (its
 * extent between elements): each element's span covers both its bounds
 * (lb .. lb + extent; the predefined ops store whole C structs, padding
 * included, for the pair types) and its data (true lb .. true ub).  The
 * return value is the buffer to use with @type, *@mem_p what to free; NULL
 * when out of memory. */
static void *scratch_alloc(MPI_Count count, MPI_Datatype type, void **mem_p)
{
    MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0, lo, hi;

    PMPI_Type_get_extent(type, &lb, &extent);
    PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    lo = lb < lb + extent ? lb : lb + extent;
    hi = lb < lb + extent ? lb + extent : lb;
    lo = true_lb < lo ? true_lb : lo;
    hi = true_lb + true_extent > hi ? true_lb + true_extent : hi;
    if (count > 1) {
        MPI_Aint span = (MPI_Aint)(count - 1) * extent;

        if (span < 0)
            lo += span;
        else
            hi += span;
    }
    *mem_p = malloc(hi > lo ? (size_t)(hi - lo) : 1);
    if (*mem_p == NULL)
        return NULL;
    return (void *)((uintptr_t)*mem_p - (uintptr_t)lo);
}

/* Copy the @scount elements of @stype at @src into the @rcount elements of
 * @rtype at @dst, as a message between them would.  @return MPI_SUCCESS, or
 * MPI_ERR_TRUNCATE when the data does not fit. */
static int copy_typed(const void *src, MPI_Count scount, MPI_Datatype stype, void *dst,
                      MPI_Count rcount, MPI_Datatype rtype)
{
    const pb_datatype_t *st = pb_mpi_datatype(stype), *rt = pb_mpi_datatype(rtype);
    size_t bytes = (size_t)scount * pb_eng_type_size(st);
    char chunk[COPY_CHUNK];

    if (bytes > (size_t)rcount * pb_eng_type_size(rt))
        return MPI_ERR_TRUNCATE;
    if (bytes == 0 || (src == dst && st == rt))
        return MPI_SUCCESS;
    if (pb_eng_type_is_contiguous(rt)) {
        pb_eng_type_pack_range(src, scount, st, 0,
                               (void *)((uintptr_t)dst + (uintptr_t)pb_eng_type_true_lb(rt)),
                               bytes);
        return MPI_SUCCESS;
    }
    if (pb_eng_type_is_contiguous(st)) {
        pb_eng_type_unpack_range(
            (const void *)((uintptr_t)src + (uintptr_t)pb_eng_type_true_lb(st)), bytes, dst, rcount,
            rt, 0);
        return MPI_SUCCESS;
    }
    for (size_t off = 0; off < bytes; off += COPY_CHUNK) {
        size_t len = bytes - off < COPY_CHUNK ? bytes - off : COPY_CHUNK;

        pb_eng_type_pack_range(src, scount, st, off, chunk, len);
        pb_eng_type_unpack_range(chunk, len, dst, rcount, rt, off);
    }
    return MPI_SUCCESS;
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

/*
 * The counts and displacements of a v-collective, in elements of its
 * datatype: from the int arrays of MPI_X, the MPI_Count and MPI_Aint ones
 * of MPI_X_c, or, for the plain collective (MPI_Gather ...), one count for
 * every rank with rank i's block at i * count.
 */
typedef struct {
    int arrays;               /* 1: the counts come from an array (NULL: an error) */
    const int *icounts;       /* MPI_X's counts, or NULL */
    const MPI_Count *ccounts; /* MPI_X_c's counts, or NULL */
    const int *idispls;       /* MPI_X's displacements, or NULL */
    const MPI_Aint *cdispls;  /* MPI_X_c's (or computed) displacements, or NULL */
    MPI_Count block;          /* without arrays: every count, and the stride */
} vec_t;

static vec_t vec_block(MPI_Count block)
{
    return (vec_t){0, NULL, NULL, NULL, NULL, block};
}

static vec_t vec_int(const int *counts, const int *displs)
{
    return (vec_t){1, counts, NULL, displs, NULL, 0};
}

static vec_t vec_c(const MPI_Count *counts, const MPI_Aint *displs)
{
    return (vec_t){1, NULL, counts, NULL, displs, 0};
}

static MPI_Count vec_count(const vec_t *v, int i)
{
    return v->icounts != NULL ? v->icounts[i] : v->ccounts != NULL ? v->ccounts[i] : v->block;
}

static MPI_Aint vec_displ(const vec_t *v, int i)
{
    return v->idispls != NULL   ? v->idispls[i]
           : v->cdispls != NULL ? v->cdispls[i]
                                : (MPI_Aint)i * (MPI_Aint)v->block;
}

/* The address of rank @i's block of the buffer @buf of @t described by @v. */
static void *vec_addr(const void *buf, const vec_t *v, int i, const pb_datatype_t *t)
{
    return elem_addr(buf, vec_displ(v, i), t);
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
static int barrier_dissemination(pb_comm_t *c)
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
static int bcast_binomial(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c)
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
static int reduce_binomial(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                           MPI_Op op, int root, pb_comm_t *c)
{
    int size = c->size, rank = c->rank;
    int top = pb_mpi_op_is_commutative(op) ? root : 0;
    int rel = (rank - top + size) % size, rc = MPI_SUCCESS;
    void *acc_mem = NULL, *tmp_mem = NULL;
    void *acc = scratch_alloc(count, type, &acc_mem), *tmp = scratch_alloc(count, type, &tmp_mem);

    if (acc == NULL || tmp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = copy_typed(sendbuf, count, type, acc, count, type);
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
        rc = copy_typed(acc, count, type, recvbuf, count, type);
    else if (rank == top)
        rc = send_to(acc, count, type, root, TAG_REDUCE, c);
    else if (rank == root)
        rc = recv_from(recvbuf, count, type, top, TAG_REDUCE, c);
out:
    free(acc_mem);
    free(tmp_mem);
    return rc;
}

/* Recursive doubling allreduce.  With 2^k the largest power of two <= P
 * and R = P - 2^k, ranks 2i and 2i+1 (i < R) first fold into 2i+1; then the
 * 2^k remaining ranks swap partial results with the partner whose number
 * differs in bit 0, 1, 2, ... and combine, lower ranks' result on the left;
 * last, each 2i+1 (i < R) hands the result to 2i. */
static int allreduce_recursive_doubling(const void *sendbuf, void *recvbuf, MPI_Count count,
                                        MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    int size = c->size, rank = c->rank, pof2 = 1, rem, newrank, rc;
    void *acc_mem = NULL, *tmp_mem = NULL;
    void *acc = scratch_alloc(count, type, &acc_mem), *tmp = scratch_alloc(count, type, &tmp_mem);

    if (acc == NULL || tmp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = copy_typed(sendbuf, count, type, acc, count, type);
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
    if (rc == MPI_SUCCESS)
        rc = copy_typed(acc, count, type, recvbuf, count, type);
out:
    free(acc_mem);
    free(tmp_mem);
    return rc;
}

/* Direct gather: every rank sends its block to the root, which has
 * posted a receive for each.  @sendbuf MPI_IN_PLACE at the root: its
 * block is in place. */
static int gatherv_direct(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const vec_t *recv, MPI_Datatype recvtype, int root,
                          pb_comm_t *c)
{
    const pb_datatype_t *rt = pb_mpi_datatype(recvtype);
    int rc = MPI_SUCCESS;
    batch_t b;

    if (c->rank != root)
        return send_to(sendbuf, sendcount, sendtype, root, TAG_GATHER, c);
    batch_init(&b, c->size - 1);
    for (int i = 1; i < c->size; i++) {
        int r = (root + i) % c->size;

        batch_recv(&b, vec_addr(recvbuf, recv, r, rt), vec_count(recv, r), recvtype, r, TAG_GATHER,
                   c);
    }
    if (sendbuf != MPI_IN_PLACE)
        rc = copy_typed(sendbuf, sendcount, sendtype, vec_addr(recvbuf, recv, root, rt),
                        vec_count(recv, root), recvtype);
    int wrc = batch_wait(&b);
    return rc != MPI_SUCCESS ? rc : wrc;
}

/* Direct scatter: the root sends each rank its block.  @recvbuf
 * MPI_IN_PLACE at the root: its block stays where it is. */
static int scatterv_direct(const void *sendbuf, const vec_t *send, MPI_Datatype sendtype,
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

        batch_send(&b, vec_addr(sendbuf, send, r, st), vec_count(send, r), sendtype, r, TAG_SCATTER,
                   c);
    }
    if (recvbuf != MPI_IN_PLACE)
        rc = copy_typed(vec_addr(sendbuf, send, root, st), vec_count(send, root), sendtype, recvbuf,
                        recvcount, recvtype);
    int wrc = batch_wait(&b);
    return rc != MPI_SUCCESS ? rc : wrc;
}

/* Ring allgather: each rank places its own block, then in step s sends
 * block (rank - s) to rank + 1 and receives block (rank - s - 1) from
 * rank - 1.  @sendbuf MPI_IN_PLACE: the own block is in place. */
static int allgatherv_ring(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, const vec_t *recv, MPI_Datatype recvtype, pb_comm_t *c)
{
    const pb_datatype_t *rt = pb_mpi_datatype(recvtype);
    int size = c->size, rank = c->rank, rc = MPI_SUCCESS;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;

    if (sendbuf != MPI_IN_PLACE)
        rc = copy_typed(sendbuf, sendcount, sendtype, vec_addr(recvbuf, recv, rank, rt),
                        vec_count(recv, rank), recvtype);
    for (int s = 0; s < size - 1 && rc == MPI_SUCCESS; s++) {
        int out = (rank - s + size) % size, in = (rank - s - 1 + size) % size;

        rc = send_recv(vec_addr(recvbuf, recv, out, rt), vec_count(recv, out), recvtype, right,
                       vec_addr(recvbuf, recv, in, rt), vec_count(recv, in), recvtype, left,
                       TAG_ALLGATHER, c);
    }
    return rc;
}

/* Direct all-to-all: every receive and every send posted at once, peers
 * taken in the order rank + 1, rank + 2, ... so that they do not all start
 * on one rank.  @sendbuf MPI_IN_PLACE: the blocks to send are packed out
 * of @recvbuf first, and the own block stays. */
static int alltoallv_direct(const void *sendbuf, const vec_t *send, MPI_Datatype sendtype,
                            void *recvbuf, const vec_t *recv, MPI_Datatype recvtype, pb_comm_t *c)
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
            total += i == rank ? 0 : (size_t)vec_count(recv, i) * rsize;
        }
        packed = offs != NULL ? malloc(total ? total : 1) : NULL;
        if (packed == NULL) {
            free(offs);
            return MPI_ERR_NO_MEM;
        }
        for (int i = 0; i < size; i++) {
            if (i != rank)
                pb_eng_type_pack_range(vec_addr(recvbuf, recv, i, rt), vec_count(recv, i), rt, 0,
                                       packed + offs[i], (size_t)vec_count(recv, i) * rsize);
        }
    }
    batch_init(&b, 2 * (size - 1));
    for (int i = 1; i < size; i++) {
        int from = (rank - i + size) % size;

        batch_recv(&b, vec_addr(recvbuf, recv, from, rt), vec_count(recv, from), recvtype, from,
                   TAG_ALLTOALL, c);
    }
    for (int i = 1; i < size; i++) {
        int to = (rank + i) % size;

        if (packed != NULL)
            batch_send(&b, packed + offs[to], (MPI_Count)((size_t)vec_count(recv, to) * rsize),
                       MPI_BYTE, to, TAG_ALLTOALL, c);
        else
            batch_send(&b, vec_addr(sendbuf, send, to, st), vec_count(send, to), sendtype, to,
                       TAG_ALLTOALL, c);
    }
    if (sendbuf != MPI_IN_PLACE)
        rc = copy_typed(vec_addr(sendbuf, send, rank, st), vec_count(send, rank), sendtype,
                        vec_addr(recvbuf, recv, rank, rt), vec_count(recv, rank), recvtype);
    int wrc = batch_wait(&b);
    free(packed);
    free(offs);
    return rc != MPI_SUCCESS ? rc : wrc;
}

static int coll_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                       MPI_Op op, int root, pb_comm_t *c);
static int coll_scatterv(const void *sendbuf, const vec_t *send, MPI_Datatype sendtype,
                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                         pb_comm_t *c);

/* Reduce-scatter as a reduction of the whole vector to rank 0, which then
 * scatters rank i its @counts[i] elements.  @sendbuf holds the whole
 * vector (the caller resolved MPI_IN_PLACE to @recvbuf). */
static int reduce_scatter_via_root(const void *sendbuf, void *recvbuf, const vec_t *counts,
                                   MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    MPI_Aint *displs = malloc((size_t)c->size * sizeof(*displs));
    MPI_Count total = 0;
    void *tmp_mem = NULL, *tmp = NULL;
    vec_t blocks;
    int rc = MPI_SUCCESS;

    if (displs == NULL)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < c->size; i++) {
        displs[i] = (MPI_Aint)total;
        total += vec_count(counts, i);
    }
    blocks = *counts;
    blocks.idispls = NULL;
    blocks.cdispls = displs;
    if (total == 0)
        goto out;
    if (c->rank == 0 && (tmp = scratch_alloc(total, type, &tmp_mem)) == NULL)
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = coll_reduce(sendbuf, tmp, total, type, op, 0, c);
    if (rc == MPI_SUCCESS)
        rc = coll_scatterv(tmp, &blocks, type, recvbuf, vec_count(counts, c->rank), type, 0, c);
out:
    free(tmp_mem);
    free(displs);
    return rc;
}

/* Recursive doubling inclusive scan: in step k rank r swaps its partial
 * result (of the 2^k-aligned block of ranks it belongs to) with r ^ 2^k;
 * when the partner is lower, both the partial result and the scan combine
 * the partner's on the left, else only the partial result on the right. */
static int scan_recursive_doubling(const void *sendbuf, void *recvbuf, MPI_Count count,
                                   MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    int rc;
    void *part_mem = NULL, *tmp_mem = NULL;
    void *part = scratch_alloc(count, type, &part_mem), *tmp = scratch_alloc(count, type, &tmp_mem);

    if (part == NULL || tmp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = copy_typed(sendbuf, count, type, part, count, type);
    if (rc == MPI_SUCCESS)
        rc = copy_typed(sendbuf, count, type, recvbuf, count, type);
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
    free(part_mem);
    free(tmp_mem);
    return rc;
}

/* Recursive doubling exclusive scan: as the inclusive one, but the result
 * starts empty and takes only the lower partners' partial results (rank 0
 * gets none; its @recvbuf is left as it was). */
static int exscan_recursive_doubling(const void *sendbuf, void *recvbuf, MPI_Count count,
                                     MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    int rc, have = 0;
    void *part_mem = NULL, *tmp_mem = NULL;
    void *part = scratch_alloc(count, type, &part_mem), *tmp = scratch_alloc(count, type, &tmp_mem);

    if (part == NULL || tmp == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    rc = copy_typed(sendbuf, count, type, part, count, type);
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
                rc = copy_typed(tmp, count, type, recvbuf, count, type);
                have = 1;
            }
        } else {
            reduce_local(op, part, tmp, count, type); /* tmp = part op tmp */
            swap_ptr(&part, &tmp);
        }
    }
out:
    free(part_mem);
    free(tmp_mem);
    return rc;
}

/* ---- choosing an algorithm -------------------------------------------------------- */

/*
 * The one place each collective's algorithm is chosen (by size, node
 * layout, op ...).  Arguments are checked and MPI_IN_PLACE resolved as each
 * algorithm's comment says; every call returns MPI_SUCCESS or an error class.
 */

static int coll_barrier(pb_comm_t *c)
{
    return barrier_dissemination(c);
}

static int coll_bcast(void *buf, MPI_Count count, MPI_Datatype type, int root, pb_comm_t *c)
{
    return bcast_binomial(buf, count, type, root, c);
}

static int coll_reduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                       MPI_Op op, int root, pb_comm_t *c)
{
    return reduce_binomial(sendbuf, recvbuf, count, type, op, root, c);
}

static int coll_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                          MPI_Op op, pb_comm_t *c)
{
    return allreduce_recursive_doubling(sendbuf, recvbuf, count, type, op, c);
}

static int coll_gatherv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void *recvbuf, const vec_t *recv, MPI_Datatype recvtype, int root,
                        pb_comm_t *c)
{
    return gatherv_direct(sendbuf, sendcount, sendtype, recvbuf, recv, recvtype, root, c);
}

static int coll_scatterv(const void *sendbuf, const vec_t *send, MPI_Datatype sendtype,
                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                         pb_comm_t *c)
{
    return scatterv_direct(sendbuf, send, sendtype, recvbuf, recvcount, recvtype, root, c);
}

static int coll_allgatherv(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, const vec_t *recv, MPI_Datatype recvtype, pb_comm_t *c)
{
    return allgatherv_ring(sendbuf, sendcount, sendtype, recvbuf, recv, recvtype, c);
}

static int coll_alltoallv(const void *sendbuf, const vec_t *send, MPI_Datatype sendtype,
                          void *recvbuf, const vec_t *recv, MPI_Datatype recvtype, pb_comm_t *c)
{
    return alltoallv_direct(sendbuf, send, sendtype, recvbuf, recv, recvtype, c);
}

static int coll_reduce_scatter(const void *sendbuf, void *recvbuf, const vec_t *counts,
                               MPI_Datatype type, MPI_Op op, pb_comm_t *c)
{
    return reduce_scatter_via_root(sendbuf, recvbuf, counts, type, op, c);
}

static int coll_scan(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                     MPI_Op op, pb_comm_t *c)
{
    return scan_recursive_doubling(sendbuf, recvbuf, count, type, op, c);
}

static int coll_exscan(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                       MPI_Op op, pb_comm_t *c)
{
    return exscan_recursive_doubling(sendbuf, recvbuf, count, type, op, c);
}

/* ---- argument checks ------------------------------------------------------------ */

static int check_root(MPI_Comm comm, const char *func, int root, const pb_comm_t *c)
{
    if (root < 0 || root >= c->size)
        return pb_mpi_raise(comm, MPI_ERR_ROOT, func, "root %d is not in 0..%d", root, c->size - 1);
    return MPI_SUCCESS;
}

static int check_type(MPI_Comm comm, const char *func, const char *what, MPI_Datatype type)
{
    int rc = pb_mpi_datatype_check(type);

    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the %s datatype is not a committed datatype", what);
    return MPI_SUCCESS;
}

/* A NULL buffer holding data is an error unless the datatype's data lies
 * at absolute addresses (MPI_BOTTOM with a true lower bound), as in p2p.c. */
static int buffer_missing(const void *buf, MPI_Count count, MPI_Datatype type)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);

    return buf == NULL && count > 0 && pb_eng_type_size(t) > 0 && pb_eng_type_true_lb(t) == 0;
}

/* @count elements of @type at @buf, the @what ("send", "receive") buffer
 * of @func, where MPI_IN_PLACE is not allowed: MPI_ERR_COUNT, MPI_ERR_TYPE,
 * MPI_ERR_BUFFER. */
static int check_buf(MPI_Comm comm, const char *func, const char *what, const void *buf,
                     MPI_Count count, MPI_Datatype type)
{
    int rc;

    if (count < 0)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "the %s count %lld is negative", what,
                            (long long)count);
    rc = check_type(comm, func, what, type);
    if (rc != MPI_SUCCESS)
        return rc;
    if (buf == MPI_IN_PLACE)
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func,
                            "MPI_IN_PLACE is not allowed as the %s buffer here", what);
    if (buffer_missing(buf, count, type))
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func, "the %s buffer is NULL with count %lld",
                            what, (long long)count);
    return MPI_SUCCESS;
}

/* The @what buffer of a v-collective: @v's counts (and displacements) for
 * every rank of @c, @type, @buf: MPI_ERR_ARG (a NULL array), MPI_ERR_COUNT,
 * MPI_ERR_TYPE, MPI_ERR_BUFFER. */
static int check_vec(MPI_Comm comm, const char *func, const char *what, const void *buf,
                     const vec_t *v, int need_displs, MPI_Datatype type, const pb_comm_t *c)
{
    int rc, any = 0;

    if (!v->arrays && v->block < 0)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "the %s count %lld is negative", what,
                            (long long)v->block);
    if (!v->arrays) {
        any = v->block > 0;
    } else {
        if (v->icounts == NULL && v->ccounts == NULL)
            return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the %s counts are NULL", what);
        if (need_displs && v->idispls == NULL && v->cdispls == NULL)
            return pb_mpi_raise(comm, MPI_ERR_ARG, func, "the %s displacements are NULL", what);
        for (int i = 0; i < c->size; i++) {
            MPI_Count n = vec_count(v, i);

            if (n < 0)
                return pb_mpi_raise(comm, MPI_ERR_COUNT, func,
                                    "the %s count of rank %d, %lld, is negative", what, i,
                                    (long long)n);
            any |= n > 0;
        }
    }
    rc = check_type(comm, func, what, type);
    if (rc != MPI_SUCCESS)
        return rc;
    if (buf == MPI_IN_PLACE)
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func,
                            "MPI_IN_PLACE is not allowed as the %s buffer here", what);
    if (buffer_missing(buf, any, type))
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func, "the %s buffer is NULL", what);
    return MPI_SUCCESS;
}

/* The arguments every reduction shares: @count, @type and @op. */
static int check_reduction(MPI_Comm comm, const char *func, MPI_Count count, MPI_Datatype type,
                           MPI_Op op)
{
    int rc;

    if (count < 0)
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "count %lld is negative", (long long)count);
    rc = check_type(comm, func, "", type);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = pb_mpi_op_check(op, type);
    if (rc == MPI_ERR_TYPE)
        return pb_mpi_raise(comm, rc, func, "the datatype is not one the op reduces");
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func,
                            "the op is no operation, or not one defined on the datatype");
    return MPI_SUCCESS;
}

/* Send and receive buffers of a reduction that may not be the same memory. */
static int check_aliased(MPI_Comm comm, const char *func, const void *sendbuf, const void *recvbuf,
                         MPI_Count count)
{
    if (count > 0 && sendbuf != NULL && sendbuf == recvbuf)
        return pb_mpi_raise(comm, MPI_ERR_BUFFER, func,
                            "the send and receive buffers are the same (use MPI_IN_PLACE)");
    return MPI_SUCCESS;
}

/* An error of the communication itself, through @comm's handler. */
static int comm_failed(MPI_Comm comm, const char *func, int rc)
{
    if (rc == MPI_SUCCESS)
        return rc;
    return pb_mpi_raise(comm, rc, func, "%s",
                        rc == MPI_ERR_TRUNCATE
                            ? "a block is longer than its receive buffer (the ranks' counts "
                              "or datatypes disagree)"
                        : rc == MPI_ERR_NO_MEM ? "out of memory for a temporary buffer"
                                               : "the collective's messages failed");
}

/* ---- the MPI calls: synchronization and broadcast ---------------------------------- */

/* Return once every rank of @comm has called MPI_Barrier.
 * @return MPI_SUCCESS; MPI_ERR_COMM (through the handler). */
PB_EXPORT int PMPI_Barrier(MPI_Comm comm)
{
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Barrier", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    return comm_failed(comm, "MPI_Barrier", coll_barrier(c));
}
PB_MPI_WEAK_ALIAS(MPI_Barrier, PMPI_Barrier);

static int bcast_common(const char *func, void *buffer, MPI_Count count, MPI_Datatype datatype,
                        int root, MPI_Comm comm)
{
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc == MPI_SUCCESS)
        rc = check_root(comm, func, root, c);
    if (rc == MPI_SUCCESS)
        rc = check_buf(comm, func, "", buffer, count, datatype);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((size_t)count * pb_eng_type_size(pb_mpi_datatype(datatype)) == 0)
        return MPI_SUCCESS;
    return comm_failed(comm, func, coll_bcast(buffer, count, datatype, root, c));
}

/* Copy @count elements of @datatype at @buffer on rank @root to @buffer on
 * every rank of @comm.  @return MPI_SUCCESS; MPI_ERR_COMM, MPI_ERR_ROOT,
 * MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_BUFFER (NULL or MPI_IN_PLACE),
 * MPI_ERR_TRUNCATE (the ranks' sizes disagree) (through the handler). */
PB_EXPORT int PMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    return bcast_common("MPI_Bcast", buffer, count, datatype, root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Bcast, PMPI_Bcast);

/* MPI_Bcast with an MPI_Count count.  Errors as MPI_Bcast. */
PB_EXPORT int PMPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                           MPI_Comm comm)
{
    return bcast_common("MPI_Bcast_c", buffer, count, datatype, root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Bcast_c, PMPI_Bcast_c);

/* ---- the MPI calls: gathers and scatters ----------------------------------------- */

static int gather_common(const char *func, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, void *recvbuf, const vec_t *recv,
                         MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc == MPI_SUCCESS)
        rc = check_root(comm, func, root, c);
    if (rc != MPI_SUCCESS)
        return rc;
    if (c->rank == root) {
        if (sendbuf != MPI_IN_PLACE)
            rc = check_buf(comm, func, "send", sendbuf, sendcount, sendtype);
        if (rc == MPI_SUCCESS)
            rc = check_vec(comm, func, "receive", recvbuf, recv, 1, recvtype, c);
    } else {
        rc = check_buf(comm, func, "send", sendbuf, sendcount, sendtype);
    }
    if (rc != MPI_SUCCESS)
        return rc;
    return comm_failed(
        comm, func, coll_gatherv(sendbuf, sendcount, sendtype, recvbuf, recv, recvtype, root, c));
}

/* Collect @sendcount elements of @sendtype from every rank of @comm into
 * @recvbuf on @root, rank i's at element i * @recvcount of @recvtype;
 * @sendbuf MPI_IN_PLACE on the root: its block is already in @recvbuf.
 * @return MPI_SUCCESS; MPI_ERR_COMM, MPI_ERR_ROOT, MPI_ERR_COUNT,
 * MPI_ERR_TYPE, MPI_ERR_BUFFER (NULL, or MPI_IN_PLACE where not allowed),
 * MPI_ERR_TRUNCATE (through the handler). */
PB_EXPORT int PMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    vec_t recv = vec_block(recvcount);

    return gather_common("MPI_Gather", sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype, root,
                         comm);
}
PB_MPI_WEAK_ALIAS(MPI_Gather, PMPI_Gather);

/* MPI_Gather with MPI_Count counts.  Errors as MPI_Gather. */
PB_EXPORT int PMPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm)
{
    vec_t recv = vec_block(recvcount);

    return gather_common("MPI_Gather_c", sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype,
                         root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Gather_c, PMPI_Gather_c);

/* MPI_Gather with rank i's block of @recvcounts[i] elements at element
 * @displs[i] of @recvbuf (both significant on the root only).  Errors as
 * MPI_Gather, and MPI_ERR_ARG for a NULL array on the root. */
PB_EXPORT int PMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                           int root, MPI_Comm comm)
{
    vec_t recv = vec_int(recvcounts, displs);
    return gather_common("MPI_Gatherv", sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype,
                         root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Gatherv, PMPI_Gatherv);

/* MPI_Gatherv with MPI_Count counts and MPI_Aint displacements.  Errors as
 * MPI_Gatherv. */
PB_EXPORT int PMPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                             MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    vec_t recv = vec_c(recvcounts, displs);
    return gather_common("MPI_Gatherv_c", sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype,
                         root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Gatherv_c, PMPI_Gatherv_c);

static int scatter_common(const char *func, const void *sendbuf, const vec_t *send,
                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                          MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc == MPI_SUCCESS)
        rc = check_root(comm, func, root, c);
    if (rc != MPI_SUCCESS)
        return rc;
    if (c->rank == root) {
        rc = check_vec(comm, func, "send", sendbuf, send, 1, sendtype, c);
        if (rc == MPI_SUCCESS && recvbuf != MPI_IN_PLACE)
            rc = check_buf(comm, func, "receive", recvbuf, recvcount, recvtype);
    } else {
        rc = check_buf(comm, func, "receive", recvbuf, recvcount, recvtype);
    }
    if (rc != MPI_SUCCESS)
        return rc;
    return comm_failed(
        comm, func, coll_scatterv(sendbuf, send, sendtype, recvbuf, recvcount, recvtype, root, c));
}

/* Send rank i of @comm the @sendcount elements of @sendtype at element
 * i * @sendcount of @sendbuf on @root, into its @recvbuf; @recvbuf
 * MPI_IN_PLACE on the root: its block stays in @sendbuf.  Errors as
 * MPI_Gather. */
PB_EXPORT int PMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    vec_t send = vec_block(sendcount);

    return scatter_common("MPI_Scatter", sendbuf, &send, sendtype, recvbuf, recvcount, recvtype,
                          root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Scatter, PMPI_Scatter);

/* MPI_Scatter with MPI_Count counts.  Errors as MPI_Gather. */
PB_EXPORT int PMPI_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                             MPI_Comm comm)
{
    vec_t send = vec_block(sendcount);

    return scatter_common("MPI_Scatter_c", sendbuf, &send, sendtype, recvbuf, recvcount, recvtype,
                          root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Scatter_c, PMPI_Scatter_c);

/* MPI_Scatter with rank i's block of @sendcounts[i] elements at element
 * @displs[i] of @sendbuf (significant on the root only).  Errors as
 * MPI_Gatherv. */
PB_EXPORT int PMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    vec_t send = vec_int(sendcounts, displs);
    return scatter_common("MPI_Scatterv", sendbuf, &send, sendtype, recvbuf, recvcount, recvtype,
                          root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Scatterv, PMPI_Scatterv);

/* MPI_Scatterv with MPI_Count counts and MPI_Aint displacements.  Errors
 * as MPI_Gatherv. */
PB_EXPORT int PMPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,
                              MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    vec_t send = vec_c(sendcounts, displs);
    return scatter_common("MPI_Scatterv_c", sendbuf, &send, sendtype, recvbuf, recvcount, recvtype,
                          root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Scatterv_c, PMPI_Scatterv_c);

static int allgather_common(const char *func, const void *sendbuf, MPI_Count sendcount,
                            MPI_Datatype sendtype, void *recvbuf, const vec_t *recv,
                            MPI_Datatype recvtype, MPI_Comm comm)
{
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (sendbuf != MPI_IN_PLACE)
        rc = check_buf(comm, func, "send", sendbuf, sendcount, sendtype);
    if (rc == MPI_SUCCESS)
        rc = check_vec(comm, func, "receive", recvbuf, recv, 1, recvtype, c);
    if (rc != MPI_SUCCESS)
        return rc;
    return comm_failed(comm, func,
                       coll_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recv, recvtype, c));
}

/* MPI_Gather to every rank: each rank of @comm gets every rank's block in
 * its @recvbuf; @sendbuf MPI_IN_PLACE: each rank's block is already in its
 * place in @recvbuf.  Errors as MPI_Gather, without MPI_ERR_ROOT. */
PB_EXPORT int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    vec_t recv = vec_block(recvcount);

    return allgather_common("MPI_Allgather", sendbuf, sendcount, sendtype, recvbuf, &recv, recvtype,
                            comm);
}
PB_MPI_WEAK_ALIAS(MPI_Allgather, PMPI_Allgather);

/* MPI_Allgather with MPI_Count counts.  Errors as MPI_Allgather. */
PB_EXPORT int PMPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                               MPI_Comm comm)
{
    vec_t recv = vec_block(recvcount);

    return allgather_common("MPI_Allgather_c", sendbuf, sendcount, sendtype, recvbuf, &recv,
                            recvtype, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Allgather_c, PMPI_Allgather_c);

/* MPI_Gatherv to every rank.  Errors as MPI_Allgather, and MPI_ERR_ARG for
 * a NULL array. */
PB_EXPORT int PMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm)
{
    vec_t recv = vec_int(recvcounts, displs);

    return allgather_common("MPI_Allgatherv", sendbuf, sendcount, sendtype, recvbuf, &recv,
                            recvtype, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Allgatherv, PMPI_Allgatherv);

/* MPI_Allgatherv with MPI_Count counts and MPI_Aint displacements.  Errors
 * as MPI_Allgatherv. */
PB_EXPORT int PMPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                void *recvbuf, const MPI_Count recvcounts[],
                                const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    vec_t recv = vec_c(recvcounts, displs);

    return allgather_common("MPI_Allgatherv_c", sendbuf, sendcount, sendtype, recvbuf, &recv,
                            recvtype, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Allgatherv_c, PMPI_Allgatherv_c);

static int alltoall_common(const char *func, const void *sendbuf, const vec_t *send,
                           MPI_Datatype sendtype, void *recvbuf, const vec_t *recv,
                           MPI_Datatype recvtype, MPI_Comm comm)
{
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (sendbuf != MPI_IN_PLACE)
        rc = check_vec(comm, func, "send", sendbuf, send, 1, sendtype, c);
    if (rc == MPI_SUCCESS)
        rc = check_vec(comm, func, "receive", recvbuf, recv, 1, recvtype, c);
    if (rc != MPI_SUCCESS)
        return rc;
    return comm_failed(comm, func,
                       coll_alltoallv(sendbuf, send, sendtype, recvbuf, recv, recvtype, c));
}

/* Send block j of @sendbuf (@sendcount elements of @sendtype at element
 * j * @sendcount) to rank j of @comm, which stores it as block i (of
 * @recvcount elements of @recvtype) of its @recvbuf, for every pair of
 * ranks i, j; @sendbuf MPI_IN_PLACE: the blocks are sent from @recvbuf and
 * replaced there.  Errors as MPI_Allgather. */
PB_EXPORT int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    vec_t send = vec_block(sendcount), recv = vec_block(recvcount);

    return alltoall_common("MPI_Alltoall", sendbuf, &send, sendtype, recvbuf, &recv, recvtype,
                           comm);
}
PB_MPI_WEAK_ALIAS(MPI_Alltoall, PMPI_Alltoall);

/* MPI_Alltoall with MPI_Count counts.  Errors as MPI_Allgather. */
PB_EXPORT int PMPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm)
{
    vec_t send = vec_block(sendcount), recv = vec_block(recvcount);

    return alltoall_common("MPI_Alltoall_c", sendbuf, &send, sendtype, recvbuf, &recv, recvtype,
                           comm);
}
PB_MPI_WEAK_ALIAS(MPI_Alltoall_c, PMPI_Alltoall_c);

/* MPI_Alltoall with per-rank counts and displacements (in elements) on
 * both sides.  Errors as MPI_Allgatherv. */
PB_EXPORT int PMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    vec_t send = vec_int(sendcounts, sdispls), recv = vec_int(recvcounts, rdispls);

    return alltoall_common("MPI_Alltoallv", sendbuf, &send, sendtype, recvbuf, &recv, recvtype,
                           comm);
}
PB_MPI_WEAK_ALIAS(MPI_Alltoallv, PMPI_Alltoallv);

/* MPI_Alltoallv with MPI_Count counts and MPI_Aint displacements.  Errors
 * as MPI_Allgatherv. */
PB_EXPORT int PMPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                               const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                               const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                               MPI_Datatype recvtype, MPI_Comm comm)
{
    vec_t send = vec_c(sendcounts, sdispls), recv = vec_c(recvcounts, rdispls);

    return alltoall_common("MPI_Alltoallv_c", sendbuf, &send, sendtype, recvbuf, &recv, recvtype,
                           comm);
}
PB_MPI_WEAK_ALIAS(MPI_Alltoallv_c, PMPI_Alltoallv_c);

/* ---- the MPI calls: reductions ------------------------------------------------------ */

static int reduce_common(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                         MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc == MPI_SUCCESS)
        rc = check_root(comm, func, root, c);
    if (rc == MPI_SUCCESS)
        rc = check_reduction(comm, func, count, datatype, op);
    if (rc != MPI_SUCCESS)
        return rc;
    if (c->rank == root) {
        rc = check_buf(comm, func, "receive", recvbuf, count, datatype);
        if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
            rc = check_buf(comm, func, "send", sendbuf, count, datatype);
        if (rc == MPI_SUCCESS)
            rc = check_aliased(comm, func, sendbuf, recvbuf, count);
        if (sendbuf == MPI_IN_PLACE)
            sendbuf = recvbuf;
    } else {
        rc = check_buf(comm, func, "send", sendbuf, count, datatype);
    }
    if (rc != MPI_SUCCESS || count == 0)
        return rc;
    return comm_failed(comm, func, coll_reduce(sendbuf, recvbuf, count, datatype, op, root, c));
}

/* Combine the @count elements of @datatype at @sendbuf of every rank of
 * @comm with @op, in rank order, into @recvbuf on @root; @sendbuf
 * MPI_IN_PLACE on the root: its input is in @recvbuf.  @return
 * MPI_SUCCESS; MPI_ERR_COMM, MPI_ERR_ROOT, MPI_ERR_COUNT, MPI_ERR_TYPE,
 * MPI_ERR_OP (no op, or not defined on the datatype), MPI_ERR_BUFFER
 * (NULL, MPI_IN_PLACE off the root, the same buffer twice) (through the
 * handler). */
PB_EXPORT int PMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm)
{
    return reduce_common("MPI_Reduce", sendbuf, recvbuf, count, datatype, op, root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Reduce, PMPI_Reduce);

/* MPI_Reduce with an MPI_Count count.  Errors as MPI_Reduce. */
PB_EXPORT int PMPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    return reduce_common("MPI_Reduce_c", sendbuf, recvbuf, count, datatype, op, root, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Reduce_c, PMPI_Reduce_c);

/* The checks of the reductions whose every rank has a send and a receive
 * buffer of @count elements (Allreduce, Scan, Exscan); resolves
 * MPI_IN_PLACE in *@sendbuf_p to @recvbuf. */
static int check_all_reduction(const char *func, const void **sendbuf_p, void *recvbuf,
                               MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                               pb_comm_t **c_p)
{
    int rc = pb_mpi_comm_check(comm, func, c_p);

    if (rc == MPI_SUCCESS)
        rc = check_reduction(comm, func, count, datatype, op);
    if (rc == MPI_SUCCESS)
        rc = check_buf(comm, func, "receive", recvbuf, count, datatype);
    if (rc == MPI_SUCCESS && *sendbuf_p != MPI_IN_PLACE)
        rc = check_buf(comm, func, "send", *sendbuf_p, count, datatype);
    if (rc == MPI_SUCCESS)
        rc = check_aliased(comm, func, *sendbuf_p, recvbuf, count);
    if (*sendbuf_p == MPI_IN_PLACE)
        *sendbuf_p = recvbuf;
    return rc;
}

static int allreduce_common(const char *func, const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    pb_comm_t *c;
    int rc = check_all_reduction(func, &sendbuf, recvbuf, count, datatype, op, comm, &c);

    if (rc != MPI_SUCCESS || count == 0)
        return rc;
    return comm_failed(comm, func, coll_allreduce(sendbuf, recvbuf, count, datatype, op, c));
}

/* MPI_Reduce whose result every rank gets in @recvbuf; @sendbuf
 * MPI_IN_PLACE: each rank's input is in @recvbuf.  Errors as MPI_Reduce,
 * without MPI_ERR_ROOT. */
PB_EXPORT int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm)
{
    return allreduce_common("MPI_Allreduce", sendbuf, recvbuf, count, datatype, op, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Allreduce, PMPI_Allreduce);

/* MPI_Allreduce with an MPI_Count count.  Errors as MPI_Allreduce. */
PB_EXPORT int PMPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return allreduce_common("MPI_Allreduce_c", sendbuf, recvbuf, count, datatype, op, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Allreduce_c, PMPI_Allreduce_c);

static int reduce_scatter_common(const char *func, const void *sendbuf, void *recvbuf,
                                 const vec_t *counts, MPI_Datatype datatype, MPI_Op op,
                                 MPI_Comm comm)
{
    pb_comm_t *c;
    MPI_Count total = 0;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!counts->arrays) {
        if (counts->block < 0)
            return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "recvcount %lld is negative",
                                (long long)counts->block);
        total = counts->block * c->size;
    } else {
        if (counts->icounts == NULL && counts->ccounts == NULL)
            return pb_mpi_raise(comm, MPI_ERR_ARG, func, "recvcounts is NULL");
        for (int i = 0; i < c->size; i++) {
            if (vec_count(counts, i) < 0)
                return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "recvcounts[%d], %lld, is negative",
                                    i, (long long)vec_count(counts, i));
            total += vec_count(counts, i);
        }
    }
    rc = check_reduction(comm, func, total, datatype, op);
    if (rc == MPI_SUCCESS)
        rc = check_buf(comm, func, "receive", recvbuf, vec_count(counts, c->rank), datatype);
    if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
        rc = check_buf(comm, func, "send", sendbuf, total, datatype);
    if (rc == MPI_SUCCESS)
        rc = check_aliased(comm, func, sendbuf, recvbuf, total);
    if (rc != MPI_SUCCESS || total == 0)
        return rc;
    if (sendbuf == MPI_IN_PLACE)
        sendbuf = recvbuf;
    return comm_failed(comm, func, coll_reduce_scatter(sendbuf, recvbuf, counts, datatype, op, c));
}

/* MPI_Reduce of P * @recvcount elements of @datatype (P the size of
 * @comm) whose block i (of @recvcount elements) goes to rank i's @recvbuf;
 * @sendbuf MPI_IN_PLACE: each rank's input is in @recvbuf, which must hold
 * all P blocks.  Errors as MPI_Allreduce. */
PB_EXPORT int PMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    vec_t counts = vec_block(recvcount);

    return reduce_scatter_common("MPI_Reduce_scatter_block", sendbuf, recvbuf, &counts, datatype,
                                 op, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Reduce_scatter_block, PMPI_Reduce_scatter_block);

/* MPI_Reduce_scatter_block with an MPI_Count count.  Errors as
 * MPI_Allreduce. */
PB_EXPORT int PMPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    vec_t counts = vec_block(recvcount);

    return reduce_scatter_common("MPI_Reduce_scatter_block_c", sendbuf, recvbuf, &counts, datatype,
                                 op, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Reduce_scatter_block_c, PMPI_Reduce_scatter_block_c);

/* MPI_Reduce_scatter_block with rank i's block of @recvcounts[i] elements
 * (the blocks one after another).  Errors as MPI_Allreduce, and
 * MPI_ERR_ARG for a NULL @recvcounts. */
PB_EXPORT int PMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    vec_t counts = vec_int(recvcounts, NULL);

    return reduce_scatter_common("MPI_Reduce_scatter", sendbuf, recvbuf, &counts, datatype, op,
                                 comm);
}
PB_MPI_WEAK_ALIAS(MPI_Reduce_scatter, PMPI_Reduce_scatter);

/* MPI_Reduce_scatter with MPI_Count counts.  Errors as MPI_Reduce_scatter. */
PB_EXPORT int PMPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf,
                                    const MPI_Count recvcounts[], MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm)
{
    vec_t counts = vec_c(recvcounts, NULL);

    return reduce_scatter_common("MPI_Reduce_scatter_c", sendbuf, recvbuf, &counts, datatype, op,
                                 comm);
}
PB_MPI_WEAK_ALIAS(MPI_Reduce_scatter_c, PMPI_Reduce_scatter_c);

static int scan_common(const char *func, int exclusive, const void *sendbuf, void *recvbuf,
                       MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    pb_comm_t *c;
    int rc = check_all_reduction(func, &sendbuf, recvbuf, count, datatype, op, comm, &c);

    if (rc != MPI_SUCCESS || count == 0)
        return rc;
    rc = exclusive ? coll_exscan(sendbuf, recvbuf, count, datatype, op, c)
                   : coll_scan(sendbuf, recvbuf, count, datatype, op, c);
    return comm_failed(comm, func, rc);
}

/* Store in @recvbuf of rank i of @comm the reduction with @op of the
 * @sendbuf of ranks 0..i, in rank order; @sendbuf MPI_IN_PLACE: the input
 * is in @recvbuf.  Errors as MPI_Allreduce. */
PB_EXPORT int PMPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm)
{
    return scan_common("MPI_Scan", 0, sendbuf, recvbuf, count, datatype, op, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Scan, PMPI_Scan);

/* MPI_Scan with an MPI_Count count.  Errors as MPI_Allreduce. */
PB_EXPORT int PMPI_Scan_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return scan_common("MPI_Scan_c", 0, sendbuf, recvbuf, count, datatype, op, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Scan_c, PMPI_Scan_c);

/* MPI_Scan over ranks 0..i-1 only: rank 0's @recvbuf is left unchanged
 * (the standard leaves it undefined).  Errors as MPI_Allreduce. */
PB_EXPORT int PMPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm)
{
    return scan_common("MPI_Exscan", 1, sendbuf, recvbuf, count, datatype, op, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Exscan, PMPI_Exscan);

/* MPI_Exscan with an MPI_Count count.  Errors as MPI_Allreduce. */
PB_EXPORT int PMPI_Exscan_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return scan_common("MPI_Exscan_c", 1, sendbuf, recvbuf, count, datatype, op, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Exscan_c, PMPI_Exscan_c);
