/*
 * The node path on one node (coll_node_impl.h): the local ranks of a
 * communicator exchange through the lines and cells of their area
 * (coll_node.c), or publish their buffers there and read each other's
 * with one kernel copy (process_vm_readv/writev).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/coll_node_impl.h"
#include "mpi/coll_util.h"
#include "mpi/engine/cma.h"
#include "mpi/op.h"
#include "util/log.h"
#include "util/time.h"

/* Bytes a reduction's op may read from a line: the halves of a line (and
 * its data, at byte 8) are not aligned for every type, so an input there
 * is first copied into an aligned buffer. */
typedef union {
    max_align_t align;
    char bytes[INLINE_MAX];
} line_copy_t;

/* @x when it is aligned for any type, else its @bytes copied into @copy. */
static const void *op_input(const char *x, size_t bytes, line_copy_t *copy)
{
    if ((uintptr_t)x % _Alignof(max_align_t) == 0)
        return x;
    memcpy(copy->bytes, x, bytes);
    return copy->bytes;
}

/* reductions of at most this many bytes are done whole by each rank that
 * needs the result (two phases); longer ones by slices, each rank one
 * slice (three phases per piece) */
#define REDUCE_WHOLE_MAX 4096
/* the smallest piece a message goes through a cell in when pipelined */
#define PIPE_PIECE_MIN 8192

void pb_coll_node_barrier_local(pb_coll_node_t *cn)
{
    pb_coll_node_post(cn);
    pb_coll_node_wait_all(cn, cn->step);
}

/* The pieces a message of @bytes goes through a cell of @cell bytes in:
 * about a quarter of the message, so that the reader copies piece k out
 * while the writer copies piece k + 1 in, but at least PIPE_PIECE_MIN
 * (each piece costs a post and a wait) and at most half the cell. */
static size_t pipe_piece(size_t bytes, size_t cell)
{
    size_t piece = (bytes / 4 + LINE - 1) / LINE * LINE;

    if (piece < PIPE_PIECE_MIN)
        piece = PIPE_PIECE_MIN;
    return piece < cell / 2 ? piece : cell / 2;
}

/* Local rank @root's @count elements of @type at @buf to every local rank:
 * inline, or through the root's cell in pieces (pipe_piece), which take
 * the cell's slots in turn, so the root writes piece k + 1 while the
 * others read piece k, and waits only to reuse a slot not read by all. */
void pb_coll_node_bcast_cells(pb_coll_node_t *cn, void *buf, MPI_Count count, MPI_Datatype type,
                              int root)
{
    size_t bytes = type_bytes(count, type), piece = pipe_piece(bytes, cn->cell);
    size_t slots = cn->cell / piece;
    uint64_t base = cn->step;

    if (bytes <= INLINE_MAX) {
        if (cn->me == root) {
            pb_coll_node_wait_all(cn, base);
            pack(buf, count, type, 0, line_data(cn, root), bytes);
        } else {
            pb_coll_node_wait_one(cn, root, base + 1);
            pb_coll_node_unpack(line_data(cn, root), bytes, buf, count, type, 0);
        }
        pb_coll_node_post(cn);
        return;
    }
    for (size_t k = 0, off = 0; off < bytes; k++, off += piece) {
        size_t len = bytes - off < piece ? bytes - off : piece;
        char *at = cell(cn, root) + (k % slots) * piece;

        if (cn->me == root) {
            /* piece k - slots, in the same slot, read by all */
            pb_coll_node_wait_all(cn, k >= slots ? base + k - slots + 1 : base);
            pack(buf, count, type, off, at, len);
        } else {
            pb_coll_node_wait_one(cn, root, base + k + 1);
            pb_coll_node_unpack(at, len, buf, count, type, off);
        }
        pb_coll_node_post(cn);
    }
}

/* A reduction the slices can split: elements one contiguous block of
 * bytes, element i at byte i * size. */
int pb_coll_node_sliceable(MPI_Datatype type)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);

    return pb_eng_type_is_contiguous(t) && pb_eng_type_true_lb(t) == 0 &&
           pb_eng_type_extent(t) == (MPI_Aint)pb_eng_type_size(t) && pb_eng_type_size(t) > 0;
}

/* *@acc = x_0 op x_1 op ... op x_{n-1} over @count elements at byte @off
 * of every local rank's data (in its line when @in_line, else its cell),
 * in rank order (so non-commutative ops are right): acc starts as x_{n-1}
 * and takes x_j op acc for j = n-2 .. 0. */
static void combine(const pb_coll_node_t *cn, int in_line, size_t off, void *acc, MPI_Count count,
                    MPI_Datatype type, MPI_Op op)
{
    size_t len = (size_t)count * pb_eng_type_size(pb_mpi_datatype(type));
    int last = cn->n - 1;

    line_copy_t copy;

    memcpy(acc, (in_line ? line_data(cn, last) : cell(cn, last)) + off, len);
    for (int j = cn->n - 2; j >= 0; j--)
        pb_mpi_op_apply(op,
                        in_line ? op_input(line_data(cn, j) + off, len, &copy) : cell(cn, j) + off,
                        acc, count, type);
}

/* combine() of short inputs in the lines, this rank's own taken from @own
 * instead of its line. */
static void combine_own(const pb_coll_node_t *cn, const void *own, void *acc, MPI_Count count,
                        MPI_Datatype type, MPI_Op op)
{
    size_t len = (size_t)count * pb_eng_type_size(pb_mpi_datatype(type));
    int last = cn->n - 1;

    line_copy_t copy;

    memcpy(acc, last == cn->me ? own : line_data(cn, last), len);
    for (int j = cn->n - 2; j >= 0; j--)
        pb_mpi_op_apply(op, j == cn->me ? own : op_input(line_data(cn, j), len, &copy), acc, count,
                        type);
}

/* bytes of its slice a rank combines at a time: they stay in the
 * first-level cache */
#define REDUCE_CHUNK 16384

/* Slice @lo .. @hi (elements of @esize bytes, from element @at of the
 * input) of the piece, reduced over every local rank in rank order (acc
 * starts as x_{n-1} and takes x_j op acc for j = n-2 .. 0): this rank's
 * input read from @sendbuf, the others' from their cells; the result
 * accumulated in the same slice of this rank's cell (which nobody reads
 * in this phase: the ranks that want the result read it there in the
 * next), and copied to @result when @wants.  A chunk at a time: each byte
 * of every input is read once, and each of the results written once. */
static void reduce_slice(pb_coll_node_t *cn, const char *sendbuf, char *result, size_t at,
                         MPI_Count lo, MPI_Count hi, size_t esize, MPI_Datatype type, MPI_Op op,
                         int wants)
{
    MPI_Count per_chunk = REDUCE_CHUNK / esize > 0 ? (MPI_Count)(REDUCE_CHUNK / esize) : 1;

    for (MPI_Count first = lo; first < hi; first += per_chunk) {
        MPI_Count elems = hi - first < per_chunk ? hi - first : per_chunk;
        size_t off = (size_t)first * esize, len = (size_t)elems * esize;
        char *acc = cell(cn, cn->me) + off;

        for (int j = cn->n - 1; j >= 0; j--) {
            const char *x = j == cn->me ? sendbuf + at + off : cell(cn, j) + off;

            if (j == cn->n - 1)
                memcpy(acc, x, len);
            else
                pb_mpi_op_apply(op, x, acc, elems, type);
        }
        if (wants)
            memcpy(result + at + off, acc, len);
    }
}

/*
 * Reduce the local ranks' @count elements at @sendbuf into @result of local
 * rank @root (-1: of every local rank).  Short: every rank copies its input
 * to its slot, and each that needs the result combines all of them (two
 * phases).  Long, in pieces of a cell, rank i reducing slice i of each
 * piece (three phases per piece): every rank copies the slices of its
 * input that others reduce into its cell; rank i combines slice i of its
 * own input and of the others' cells (reduce_slice) into slice i of its
 * cell and of its result (when it wants one); those that want the result
 * copy the others' slices from their cells.  Only rank i writes slice i
 * of a result, and it reads slice i of its input first, so MPI_IN_PLACE
 * is safe; its other slices are in its cell before anyone writes them.
 * Nothing is allocated (an element fits half a cell: reducible() in
 * coll_node_nodes.c).  @return MPI_SUCCESS.
 */
int pb_coll_node_reduce_cells(pb_coll_node_t *cn, const void *sendbuf, void *result,
                              MPI_Count count, MPI_Datatype type, MPI_Op op, int root)
{
    size_t esize = pb_eng_type_size(pb_mpi_datatype(type)), bytes = (size_t)count * esize;
    /* (a root without a result, a leader whose partial result could not
     * be allocated, takes every phase and stores nothing) */
    int wants = (root < 0 || root == cn->me) && result != NULL;
    MPI_Count per_piece = (MPI_Count)(cn->cell / esize);

    if (bytes <= INLINE_MAX && root == cn->me && result != NULL) {
        /* the root of a short one writes nothing, so it need not wait for
         * the others to be done with its line: it combines its own input
         * with the others' lines as they come */
        uint64_t base = cn->step;
        line_copy_t own; /* aligned: the op reads it as its type */

        memcpy(own.bytes, sendbuf, bytes); /* @sendbuf may be @result */
        pb_coll_node_post(cn);
        pb_coll_node_wait_others(cn, base + 1);
        combine_own(cn, own.bytes, result, count, type, op);
        pb_coll_node_post(cn);
        return MPI_SUCCESS;
    }
    if (bytes <= REDUCE_WHOLE_MAX) {
        uint64_t base = cn->step;

        pb_coll_node_wait_all(cn, base);
        memcpy(slot(cn, cn->me, bytes), sendbuf, bytes);
        pb_coll_node_post(cn);
        if (wants) {
            pb_coll_node_wait_all(cn, base + 1);
            combine(cn, bytes <= INLINE_MAX, 0, result, count, type, op);
        }
        pb_coll_node_post(cn);
        return MPI_SUCCESS;
    }
    for (MPI_Count first = 0; first < count; first += per_piece) {
        MPI_Count elems = count - first < per_piece ? count - first : per_piece;
        MPI_Count lo = elems * cn->me / cn->n, hi = elems * (cn->me + 1) / cn->n;
        size_t len = (size_t)elems * esize, at = (size_t)first * esize;
        const char *in = (const char *)sendbuf + at;
        uint64_t base = cn->step;

        pb_coll_node_wait_all(cn, base);
        /* the slices the others reduce: before and after this rank's */
        memcpy(cell(cn, cn->me), in, (size_t)lo * esize);
        memcpy(cell(cn, cn->me) + (size_t)hi * esize, in + (size_t)hi * esize,
               len - (size_t)hi * esize);
        pb_coll_node_post(cn);
        pb_coll_node_wait_all(cn, base + 1);
        reduce_slice(cn, sendbuf, result, at, lo, hi, esize, type, op, wants);
        pb_coll_node_post(cn);
        if (wants) {
            pb_coll_node_wait_all(cn, base + 2);
            for (int j = 0; j < cn->n; j++) {
                MPI_Count jlo = elems * j / cn->n, jhi = elems * (j + 1) / cn->n;

                if (j != cn->me)
                    memcpy((char *)result + at + (size_t)jlo * esize,
                           cell(cn, j) + (size_t)jlo * esize, (size_t)(jhi - jlo) * esize);
            }
        }
        pb_coll_node_post(cn);
    }
    return MPI_SUCCESS;
}

/* ---- single copy: ranks read each other's buffers --------------------------------- */

/* Publish this rank's @count elements of @type at @buf for the others to
 * read, once every local rank is past @base: the buffer itself when
 * contiguous, else a packed copy in *@mem_p (to free), or in this rank's
 * cell when that copy cannot be allocated and the data fit the cell (the
 * others are past the last phase that read it); when they do not either,
 * that this rank has nothing to read (the readers' calls fail, nobody
 * waits).  @return MPI_SUCCESS or MPI_ERR_NO_MEM (published unreadable). */
static int publish_readable(pb_coll_node_t *cn, uint64_t base, const void *buf, MPI_Count count,
                            MPI_Datatype type, void **mem_p)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    size_t bytes = type_bytes(count, type);

    *mem_p = NULL;
    if (pb_eng_type_is_contiguous(t)) {
        pb_coll_node_wait_all(cn, base);
        pb_coll_node_publish(cn, (const char *)buf + pb_eng_type_true_lb(t));
        return MPI_SUCCESS;
    }
    *mem_p = malloc(bytes ? bytes : 1);
    if (*mem_p != NULL)
        pack(buf, count, type, 0, *mem_p, bytes);
    pb_coll_node_wait_all(cn, base);
    if (*mem_p != NULL) {
        pb_coll_node_publish(cn, *mem_p);
    } else if (bytes <= cn->cell) {
        pack(buf, count, type, 0, cell(cn, cn->me), bytes);
        pb_coll_node_publish(cn, cell(cn, cn->me));
    } else {
        pb_coll_node_publish_unreadable(cn);
        return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

/* Read @bytes at byte @off of what local rank @j published into the
 * @count elements of @type at @buf.  @return MPI_SUCCESS, MPI_ERR_TRUNCATE
 * or MPI_ERR_OTHER (the read failed, or @j published nothing to read;
 * logged). */
int pb_coll_node_read_from(const pb_coll_node_t *cn, int j, size_t off, size_t bytes, void *buf,
                           MPI_Count count, MPI_Datatype type)
{
    const pb_datatype_t *t = pb_mpi_datatype(type);
    pb_coll_node_published_t p = pb_coll_node_published(cn, j);
    char chunk[16384];
    int rc = MPI_SUCCESS;

    if (p.unreadable) {
        pb_error("a collective could not read a rank's buffer on its node: that rank had no "
                 "memory to pack it");
        return MPI_ERR_OTHER;
    }
    if (bytes > type_bytes(count, type)) {
        /* counts that disagree (erroneous): never past the buffer */
        bytes = type_bytes(count, type);
        rc = MPI_ERR_TRUNCATE;
    }
    if (pb_eng_type_is_contiguous(t)) {
        if (pb_eng_cma_read(p.pid, p.addr + off, (char *)buf + pb_eng_type_true_lb(t), bytes) ==
            PB_ENG_PEER_COPY_OK)
            return rc;
        goto failed;
    }
    for (size_t done = 0; done < bytes; done += sizeof(chunk)) {
        size_t len = bytes - done < sizeof(chunk) ? bytes - done : sizeof(chunk);

        if (pb_eng_cma_read(p.pid, p.addr + off + done, chunk, len) != PB_ENG_PEER_COPY_OK)
            goto failed;
        pb_coll_node_unpack(chunk, len, buf, count, type, done);
    }
    return rc;
failed:
    pb_error("a collective could not read a rank's buffer on its node (process_vm_readv)");
    return MPI_ERR_OTHER;
}

/* bytes of the pieces a rank combines its slice in (they stay in cache) */
#define REDUCE_PIECE 65536

/* Read piece @off .. @off + @len of local rank @j's input into @buf.
 * @return whether the read worked. */
static int read_input(const pb_coll_node_t *cn, int j, size_t off, size_t len, void *buf)
{
    return pb_eng_cma_read(pb_coll_node_published(cn, j).pid,
                           pb_coll_node_published(cn, j).addr + off, buf,
                           len) == PB_ENG_PEER_COPY_OK;
}

/* Write piece @off .. @off + @len of the result, at @acc, to every other
 * local rank that wants it (all, or @root) by process_vm_writev into the
 * result it published.  @return whether every write worked. */
static int deliver_piece(const pb_coll_node_t *cn, const void *acc, size_t off, size_t len,
                         int root)
{
    for (int j = 0; j < cn->n; j++) {
        if (j == cn->me || (root >= 0 && j != root) || pb_coll_node_published(cn, j).addr2 == 0)
            continue;
        if (pb_eng_cma_write(pb_coll_node_published(cn, j).pid,
                             pb_coll_node_published(cn, j).addr2 + off, acc,
                             len) != PB_ENG_PEER_COPY_OK)
            return 0;
    }
    return 1;
}

/* Piece @off .. @off + @len (@elems elements) of the reduction of every
 * local rank's input into @acc (this rank's own input at @own).  A
 * commutative op folds the others' inputs in as they are read, the first
 * straight into @acc unless @acc holds this rank's input (in place:
 * @own == @acc); a non-commutative one goes in rank order (acc starts as
 * x_{n-1} and takes x_j op acc), and then @acc must not be @own.  @tmp
 * holds one piece.  @return whether every read worked. */
static int reduce_piece(const pb_coll_node_t *cn, const char *own, char *acc, char *tmp, size_t off,
                        size_t len, MPI_Count elems, MPI_Datatype type, MPI_Op op)
{
    int have = own == acc, last = cn->n - 1;

    if (!pb_mpi_op_is_commutative(op)) {
        if (last == cn->me)
            memcpy(acc, own, len);
        else if (!read_input(cn, last, off, len, acc))
            return 0;
        for (int j = last - 1; j >= 0; j--) {
            if (j != cn->me && !read_input(cn, j, off, len, tmp))
                return 0;
            pb_mpi_op_apply(op, j == cn->me ? own : tmp, acc, elems, type);
        }
        return 1;
    }
    for (int j = 0; j < cn->n; j++) {
        if (j == cn->me)
            continue;
        if (!read_input(cn, j, off, len, have ? tmp : acc))
            return 0;
        if (have)
            pb_mpi_op_apply(op, tmp, acc, elems, type);
        have = 1;
    }
    if (own != acc)
        pb_mpi_op_apply(op, own, acc, elems, type);
    return 1;
}

/*
 * Reduce by slices with single copies (@root: local rank, or -1 for every
 * rank): every rank publishes its input and its result buffer; rank i
 * reduces slice i of all inputs in pieces of REDUCE_PIECE bytes (at most
 * half a cell), reading the others' with process_vm_readv (reduce_piece),
 * into its own result when it wants one (else, or for a non-commutative
 * op in place, into scratch), and writes each piece, still in its cache, into the
 * result of every other rank that wants it (process_vm_writev); each
 * returns once nobody reads or writes its buffers.  Two phases whatever
 * the size.  Only rank i reads and writes slice i of any buffer, and it
 * reads a piece of every input before it writes that piece of a result,
 * so MPI_IN_PLACE is safe.  The scratch (a piece, and one more to read
 * into) is this rank's cell, which nobody reads meanwhile: nothing is
 * allocated.  @return MPI_SUCCESS or MPI_ERR_OTHER (a copy failed).
 */
int pb_coll_node_reduce_cma(pb_coll_node_t *cn, const void *sendbuf, void *result, MPI_Count count,
                            MPI_Datatype type, MPI_Op op, int root)
{
    size_t esize = pb_eng_type_size(pb_mpi_datatype(type));
    MPI_Count lo = count * cn->me / cn->n, hi = count * (cn->me + 1) / cn->n;
    size_t piece = REDUCE_PIECE < cn->cell / 2 ? REDUCE_PIECE : cn->cell / 2;
    MPI_Count per_piece = piece / esize > 0 ? (MPI_Count)(piece / esize) : 1;
    /* (a root without a result, a leader whose partial result could not
     * be allocated, publishes none: the others deliver it nothing) */
    int wants = (root < 0 || root == cn->me) && result != NULL, ok = 1;
    /* reduced straight into the result, unless a non-commutative op would
     * overwrite the input in place before it is read */
    int direct = wants && (sendbuf != result || pb_mpi_op_is_commutative(op));
    /* every other rank is past the last phase that read this rank's cell
     * once it is past this call's first */
    char *scratch = cell(cn, cn->me), *tmp = scratch + (size_t)per_piece * esize;
    uint64_t base = cn->step;

    pb_coll_node_wait_all(cn, base);
    pb_coll_node_publish2(cn, sendbuf, wants ? (uint64_t)(uintptr_t)result : 0);
    pb_coll_node_post(cn);
    pb_coll_node_wait_others(cn, base + 1);
    for (MPI_Count first = lo; first < hi && ok; first += per_piece) {
        MPI_Count elems = hi - first < per_piece ? hi - first : per_piece;
        size_t off = (size_t)first * esize, len = (size_t)elems * esize;
        char *acc = direct ? (char *)result + off : scratch;

        ok = reduce_piece(cn, (const char *)sendbuf + off, acc, tmp, off, len, elems, type, op) &&
             deliver_piece(cn, acc, off, len, root);
        if (ok && wants && !direct)
            memcpy((char *)result + off, acc, len);
    }
    pb_coll_node_post(cn);
    pb_coll_node_wait_others(cn, base + 2);
    if (!ok) {
        pb_error("a reduction could not copy to or from a rank's buffer on its node "
                 "(process_vm_readv/writev)");
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

/* Bcast on one node: the root publishes its buffer, every other rank
 * reads it at once, the root returns once all have.  A root that has no
 * memory to pack a buffer larger than its cell publishes that, and all
 * take the cells instead. */
int pb_coll_node_bcast_cma(pb_coll_node_t *cn, void *buf, MPI_Count count, MPI_Datatype type,
                           int root)
{
    uint64_t base = cn->step;
    int rc = MPI_SUCCESS;

    if (cn->me == root) {
        void *mem;

        rc = publish_readable(cn, base, buf, count, type, &mem);
        pb_coll_node_post(cn);
        if (rc != MPI_SUCCESS) { /* unreadable: all take the cells */
            pb_coll_node_bcast_cells(cn, buf, count, type, root);
            return MPI_SUCCESS;
        }
        pb_coll_node_wait_others(cn, base + 1);
        free(mem);
        return MPI_SUCCESS;
    }
    pb_coll_node_wait_one(cn, root, base + 1);
    if (pb_coll_node_published(cn, root).unreadable) {
        pb_coll_node_post(cn);
        pb_coll_node_bcast_cells(cn, buf, count, type, root);
        return MPI_SUCCESS;
    }
    rc = pb_coll_node_read_from(cn, root, 0, type_bytes(count, type), buf, count, type);
    pb_coll_node_post(cn);
    return rc;
}

/* Gather: every other rank publishes its block, the root reads them all,
 * then lets them go. */
int pb_coll_node_gather_cma(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                            MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                            MPI_Datatype recvtype, int root, size_t bytes)
{
    uint64_t base = cn->step;
    int rc = MPI_SUCCESS;

    if (cn->me != root) {
        void *mem;

        rc = publish_readable(cn, base, sendbuf, sendcount, sendtype, &mem);
        pb_coll_node_post(cn);
        pb_coll_node_wait_one(cn, root, base + 1);
        free(mem);
        return rc;
    }
    if (sendbuf != MPI_IN_PLACE)
        rc = pb_coll_copy_typed(sendbuf, sendcount, sendtype,
                                block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount,
                                recvtype);
    pb_coll_node_wait_others(cn, base + 1);
    for (int j = 0; j < cn->n && rc == MPI_SUCCESS; j++) {
        if (j != cn->me)
            rc = pb_coll_node_read_from(
                cn, j, 0, bytes, block_addr(recvbuf, j, recvcount, recvtype), recvcount, recvtype);
    }
    pb_coll_node_post(cn);
    return rc;
}

int pb_coll_node_scatter_cells(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                               MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                               MPI_Datatype recvtype, int root, size_t bytes)
{
    char *blocks = slot(cn, root, bytes * (size_t)cn->n);
    uint64_t base = cn->step;
    int rc;

    if (cn->me == root) {
        pb_coll_node_wait_all(cn, base);
        for (int j = 0; j < cn->n; j++) {
            if (j != cn->me)
                pack(block_addr(sendbuf, j, sendcount, sendtype), sendcount, sendtype, 0,
                     blocks + (size_t)j * bytes, bytes);
        }
        pb_coll_node_post(cn);
        if (recvbuf != MPI_IN_PLACE)
            return pb_coll_copy_typed(block_addr(sendbuf, cn->me, sendcount, sendtype), sendcount,
                                      sendtype, recvbuf, recvcount, recvtype);
        return MPI_SUCCESS;
    }
    pb_coll_node_wait_one(cn, root, base + 1);
    rc = pb_coll_node_unpack(blocks + (size_t)cn->me * bytes, bytes, recvbuf, recvcount, recvtype,
                             0);
    pb_coll_node_post(cn);
    return rc;
}

/* Scatter: the root publishes its blocks, each rank reads its own. */
int pb_coll_node_scatter_cma(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                             MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                             MPI_Datatype recvtype, int root, size_t bytes)
{
    uint64_t base = cn->step;
    int rc = MPI_SUCCESS;

    if (cn->me == root) {
        void *mem;

        rc = publish_readable(cn, base, sendbuf, sendcount * cn->n, sendtype, &mem);
        pb_coll_node_post(cn);
        if (recvbuf != MPI_IN_PLACE && rc == MPI_SUCCESS)
            rc = pb_coll_copy_typed(block_addr(sendbuf, cn->me, sendcount, sendtype), sendcount,
                                    sendtype, recvbuf, recvcount, recvtype);
        pb_coll_node_wait_others(cn, base + 1);
        free(mem);
        return rc;
    }
    pb_coll_node_wait_one(cn, root, base + 1);
    rc = pb_coll_node_read_from(cn, root, (size_t)cn->me * bytes, bytes, recvbuf, recvcount,
                                recvtype);
    pb_coll_node_post(cn);
    return rc;
}

/*
 * The pick (PB_ALG_NODE_AUTO).  Whether the cells or single copy is faster
 * for a rooted call on this machine can change while a job runs: on a VM
 * whose two vCPUs are sometimes far apart, the root's stores into cell
 * lines the others read a call before take each line back from the other
 * vCPU's cache, and a 64 KB Scatter through the cells took 3-4 times its
 * near time, single copy 1.1-1.8 times
 * (docs/notes/2026-11-27-cells-when-cores-are-far-apart.md).  So the node
 * tries each path in turn, and in between takes the path whose trials
 * were shorter: per collective and size class, calls 0 and 1 warm the
 * cells and single copy up untimed (a path's first call at a size touches
 * its pages and lines for the first time), calls 2-5 time each twice, and
 * then every PICK_TRIAL_EVERY-th call times one of them in turn.  A
 * trial's time is the mean over the node's ranks of their time in the
 * call (as a collective bench counts it: the cells let the root leave
 * before the others have copied, single copy does not): at its end every
 * rank waits until all are past the call, stores its time in its line and
 * posts, reads all of them once every rank has, and posts again (so that
 * no line is written before all have read).  A path's time is the shorter
 * of its last two trials: a rank preempted in a trial only lengthens it,
 * and one slow trial (the first after the other path ran a while) does
 * not hold a path off for long.  Every rank of the node takes part in
 * every call, counts the same calls and reads the same times, so all of
 * them take the same path with no word exchanged.
 */
#define PICK_TRIAL_EVERY 8
/* the untimed calls, and the calls that time the paths in turn, before the
 * first pick */
#define PICK_WARM_CALLS 2
#define PICK_FIRST_TRIALS 4

static pb_coll_node_pick_t *pick_of(pb_coll_node_t *cn, int kind, size_t bytes)
{
    int k = 0;

    while (k < PB_COLL_NODE_PICK_CLASSES - 1 && ((size_t)2 << k) <= bytes)
        k++;
    return &cn->picks[kind][k];
}

/* A path's time: the shorter of its last two trials (0: none yet). */
static uint64_t path_ns(const pb_coll_node_pick_t *pick, int path)
{
    uint64_t later = pick->ns[path][0], earlier = pick->ns[path][1];

    return earlier != 0 && earlier < later ? earlier : later;
}

/* The path of the next call of @pick's class; *@trial_p: that call is a
 * trial of it. */
static int pick_path(pb_coll_node_pick_t *pick, int *trial_p)
{
    uint32_t call = pick->calls++;

    if (call < PICK_WARM_CALLS + PICK_FIRST_TRIALS) {
        *trial_p = call >= PICK_WARM_CALLS;
        return call % 2 == 0 ? PB_COLL_NODE_CELLS : PB_COLL_NODE_SINGLE_COPY;
    }
    *trial_p = call % PICK_TRIAL_EVERY == 0;
    if (*trial_p) /* (the paths in turn) */
        return (int)(call / PICK_TRIAL_EVERY % 2);
    return path_ns(pick, PB_COLL_NODE_CELLS) <= path_ns(pick, PB_COLL_NODE_SINGLE_COPY)
               ? PB_COLL_NODE_CELLS
               : PB_COLL_NODE_SINGLE_COPY;
}

int pb_coll_node_pick_begin(pb_coll_node_t *cn, int kind, size_t bytes, pb_coll_node_call_t *call)
{
    call->pick = pick_of(cn, kind, bytes);
    call->path = pick_path(call->pick, &call->trial);
    call->start = call->trial ? pb_time_now_ns() : 0; /* (only a trial is timed) */
    return call->path;
}

/* The end of a trial: this rank's time in the call through its line, and
 * the mean of every rank's into the pick. */
void pb_coll_node_pick_end(pb_coll_node_t *cn, pb_coll_node_call_t *call)
{
    uint64_t ns, sum = 0;

    if (!call->trial)
        return;
    ns = (uint64_t)(pb_time_now_ns() - call->start);
    pb_coll_node_wait_all(cn, cn->step); /* (no line is read any more) */
    memcpy(line_data(cn, cn->me), &ns, sizeof(ns));
    pb_coll_node_post(cn);
    pb_coll_node_wait_all(cn, cn->step);
    for (int j = 0; j < cn->n; j++) {
        uint64_t theirs;

        memcpy(&theirs, line_data(cn, j), sizeof(theirs));
        sum += theirs;
    }
    pb_coll_node_post(cn);
    call->pick->ns[call->path][1] = call->pick->ns[call->path][0];
    call->pick->ns[call->path][0] = sum / (uint64_t)cn->n + 1; /* (0: none yet) */
}

int pb_coll_node_bcast_auto(pb_coll_node_t *cn, void *buf, MPI_Count count, MPI_Datatype type,
                            int root)
{
    pb_coll_node_call_t call;
    int rc = MPI_SUCCESS;

    if (pb_coll_node_pick_begin(cn, PB_COLL_NODE_PICK_BCAST, type_bytes(count, type), &call) ==
        PB_COLL_NODE_CELLS)
        pb_coll_node_bcast_cells(cn, buf, count, type, root);
    else
        rc = pb_coll_node_bcast_cma(cn, buf, count, type, root);
    pb_coll_node_pick_end(cn, &call);
    return rc;
}

int pb_coll_node_scatter_auto(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                              MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                              MPI_Datatype recvtype, int root, size_t bytes)
{
    pb_coll_node_call_t call;
    int rc;

    if (pb_coll_node_pick_begin(cn, PB_COLL_NODE_PICK_SCATTER, bytes, &call) == PB_COLL_NODE_CELLS)
        rc = pb_coll_node_scatter_cells(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                        recvtype, root, bytes);
    else
        rc = pb_coll_node_scatter_cma(cn, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                      recvtype, root, bytes);
    pb_coll_node_pick_end(cn, &call);
    return rc;
}

/* Allgather and Alltoall: every rank publishes its send data and reads
 * its blocks from every other (Allgather: their whole block; Alltoall:
 * block me of theirs), then waits until all have read its own. */
int pb_coll_node_exchange_cma(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                              MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                              MPI_Datatype recvtype, size_t bytes, int alltoall)
{
    uint64_t base = cn->step;
    void *mem;
    int rc;

    if (sendbuf == MPI_IN_PLACE) /* Allgather only: its block is in place */
        rc = publish_readable(cn, base, block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount,
                              recvtype, &mem);
    else
        rc = publish_readable(cn, base, sendbuf, alltoall ? sendcount * cn->n : sendcount, sendtype,
                              &mem);
    pb_coll_node_post(cn);
    if (sendbuf != MPI_IN_PLACE && rc == MPI_SUCCESS)
        rc = pb_coll_copy_typed(
            alltoall ? block_addr(sendbuf, cn->me, sendcount, sendtype) : sendbuf, sendcount,
            sendtype, block_addr(recvbuf, cn->me, recvcount, recvtype), recvcount, recvtype);
    pb_coll_node_wait_others(cn, base + 1);
    for (int j = 0; j < cn->n && rc == MPI_SUCCESS; j++) {
        if (j != cn->me)
            rc = pb_coll_node_read_from(cn, j, alltoall ? (size_t)cn->me * bytes : 0, bytes,
                                        block_addr(recvbuf, j, recvcount, recvtype), recvcount,
                                        recvtype);
    }
    pb_coll_node_post(cn);
    pb_coll_node_wait_others(cn, base + 2);
    free(mem);
    return rc;
}

/*
 * The one-phase collectives of small payloads: each rank writes its data
 * into one half of its line (or, past HALF_MAX, of its cell), the half
 * the call's parity chooses (parity_half), posts, and (those that read)
 * waits for all and reads the others' halves.  One post per call is
 * enough because the halves alternate: a rank writes half h again two
 * calls later, once every rank has posted in the call between
 * (halves_begin), which each does after reading half h.  The first other
 * collective after them that writes the line settles first
 * (pb_coll_node_settle_halves).
 */

int pb_coll_node_one_phase(const pb_coll_node_t *cn, size_t bytes)
{
    return bytes <= HALF_MAX || (bytes <= ONE_PHASE_MAX && bytes <= cn->cell / 2);
}

/* Local rank @j's half for a call at step @base of payloads of @bytes. */
static char *parity_half(const pb_coll_node_t *cn, int j, uint64_t base, size_t bytes)
{
    if (bytes <= HALF_MAX)
        return line_data(cn, j) + (size_t)(base & 1) * HALF_MAX;
    return cell(cn, j) + (size_t)(base & 1) * (cn->cell / 2);
}

/* Before a rank writes its half at this call: every rank past the call
 * before (a one-phase call of a rank that read waited for that already). */
static void halves_begin(pb_coll_node_t *cn, uint64_t base)
{
    if (cn->halves_end != base || !cn->halves_read)
        pb_coll_node_wait_all(cn, base);
}

/*
 * Allgather (@n_blocks 1: every rank's one block of @bytes) or Alltoall
 * (@n_blocks n: block j for local rank j) of small payloads in one phase
 * (see above).  @return MPI_SUCCESS or MPI_ERR_TRUNCATE.
 */
int pb_coll_node_exchange_halves(pb_coll_node_t *cn, const void *sendbuf, MPI_Count sendcount,
                                 MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                 MPI_Datatype recvtype, size_t bytes, int n_blocks, int skip_own)
{
    uint64_t base = cn->step;
    size_t payload = bytes * (size_t)n_blocks;
    int rc = MPI_SUCCESS;

    halves_begin(cn, base);
    for (int j = 0; j < n_blocks; j++)
        pack(n_blocks == 1 ? sendbuf : block_addr(sendbuf, j, sendcount, sendtype), sendcount,
             sendtype, 0, parity_half(cn, cn->me, base, payload) + (size_t)j * bytes, bytes);
    pb_coll_node_post(cn);
    pb_coll_node_wait_all(cn, base + 1);
    for (int j = 0; j < cn->n; j++) {
        const char *from =
            parity_half(cn, j, base, payload) + (n_blocks == 1 ? 0 : (size_t)cn->me * bytes);

        if ((j != cn->me || !skip_own) &&
            pb_coll_node_unpack(from, bytes, block_addr(recvbuf, j, recvcount, recvtype), recvcount,
                                recvtype, 0) != MPI_SUCCESS)
            rc = MPI_ERR_TRUNCATE;
    }
    cn->halves_end = cn->step;
    cn->halves_read = 1;
    return rc;
}

/*
 * Reduce (@root: local rank, or -1 for every rank) of inputs that
 * pb_coll_node_one_phase takes, in one phase (see above): each rank that
 * wants the result combines the inputs in rank order (acc starts as
 * x_{n-1} and takes x_j op acc), so non-commutative ops are right.  A rank that does not
 * want it writes its half, posts and goes; the root of a Reduce, whose
 * input nobody else reads, combines its own from where it is and posts
 * once it has read the others'.  @return MPI_SUCCESS.
 */
int pb_coll_node_reduce_halves(pb_coll_node_t *cn, const void *sendbuf, void *result,
                               MPI_Count count, MPI_Datatype type, MPI_Op op, int root)
{
    uint64_t base = cn->step;
    size_t bytes = type_bytes(count, type);
    int wants = root < 0 || root == cn->me;
    union {
        max_align_t align;
        char bytes[ONE_PHASE_MAX];
    } own;
    line_copy_t copy;

    halves_begin(cn, base);
    if (root == cn->me) {
        memcpy(own.bytes, sendbuf, bytes); /* @sendbuf may be @result */
    } else {
        memcpy(parity_half(cn, cn->me, base, bytes), sendbuf, bytes);
        pb_coll_node_post(cn);
    }
    if (wants) {
        pb_coll_node_wait_others(cn, base + 1);
        for (int j = cn->n - 1; j >= 0; j--) {
            const char *x = j == root ? own.bytes : parity_half(cn, j, base, bytes);

            if (j == cn->n - 1)
                memcpy(result, x, bytes);
            else /* a cell's halves are aligned, a line's not */
                pb_mpi_op_apply(op, bytes <= HALF_MAX ? op_input(x, bytes, &copy) : x, result,
                                count, type);
        }
    }
    if (root == cn->me)
        pb_coll_node_post(cn);
    cn->halves_end = cn->step;
    cn->halves_read = wants;
    return MPI_SUCCESS;
}
