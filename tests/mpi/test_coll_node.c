/*
 * The node path of the collectives (src/mpi/coll_node.c) against values
 * computed locally: payloads in a rank's line (up to 56 bytes), in its
 * cell and in many pieces of it (CTest runs this with a small
 * POSTBOX_COLL_CELL), by single copy (POSTBOX_COLL_ALGORITHM=...:node_cma),
 * on one node and across nodes (leaders), on the world, a split
 * communicator with its ranks in reverse order and a dup'd one.
 *
 *   reductions   Allreduce (sum; max in place; a non-commutative 2x2
 *                matrix product, in rank order), Reduce to every root
 *                (sum; the matrix product in place at the root)
 *   Bcast        from every root, the root's buffer a strided vector
 *   movers       Gather, Scatter, Allgather, Alltoall with a strided
 *                vector on the send side (Allgather: and on the receive
 *                side), and in place where allowed
 *   one phase    small Reduce (the root turning, sometimes late),
 *                Allgather and Allreduce back to back, no barrier between;
 *                then mixed with payloads in a cell's half (Allreduce of
 *                matrices, Alltoall, Allgather in place) and two-phase
 *                calls (a 48-byte Reduce, Bcast), ranks late by turns
 *   mismatched   Gather and Allgather whose counts disagree: an error,
 *                and nothing written past the receive buffers
 *
 * Written to the standard API only: the algorithm is chosen by the
 * library's table or POSTBOX_COLL_ALGORITHM, and POSTBOX_COLL_STATS shows
 * which ran.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* counts of elements: 1 and 14 fit a line, 1000 a cell, the rest go in
 * pieces (and across REDUCE_WHOLE_MAX, 4 KB) */
static const int counts[] = {1, 14, 1000, 1025, 20011, 300007};
#define NCOUNTS ((int)(sizeof(counts) / sizeof(counts[0])))

static int value(int r, long i, int iter)
{
    return (int)((i * 7 + r * 13 + iter) % 100003);
}

/* inout = in x inout for 2x2 int matrices mod 1000 (not commutative) */
static void matmul(void *in_, void *inout_, int *len, MPI_Datatype *type)
{
    const int *a = in_;
    int *b = inout_;

    (void)type;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        int c[4] = {(a[0] * b[0] + a[1] * b[2]) % 1000, (a[0] * b[1] + a[1] * b[3]) % 1000,
                    (a[2] * b[0] + a[3] * b[2]) % 1000, (a[2] * b[1] + a[3] * b[3]) % 1000};

        memcpy(b, c, sizeof(c));
    }
}

static void matrix_of(int r, long i, int iter, int m[4])
{
    m[0] = 1 + r % 5;
    m[1] = (int)(i % 5) + iter;
    m[2] = r * 3 % 7;
    m[3] = 2;
}

/* The first of @nm matrices in @got that is not the rank-order product of
 * every rank's matrix_of(q, i, @iter), or -1 when all are. */
static long matrix_mismatch(const int *got, long nm, int p, int iter)
{
    for (long i = 0; i < nm; i++) {
        int acc[4], x[4], len = 1;

        matrix_of(p - 1, i, iter, acc);
        for (int q = p - 2; q >= 0; q--) {
            matrix_of(q, i, iter, x);
            matmul(x, acc, &len, NULL);
        }
        if (memcmp(acc, got + 4 * i, sizeof(acc)) != 0)
            return i;
    }
    return -1;
}

/* Check @got, @nm matrices, against the rank-order product of every
 * rank's matrix_of(). */
static void check_matrices(const int *got, long nm, int p, int iter, const char *name,
                           const char *how)
{
    long bad = matrix_mismatch(got, nm, p, iter);

    CHECK(bad < 0, "%s: %s of %ld matrices (not commutative): matrix %ld out of order", name, how,
          nm, bad);
}

static void reductions(MPI_Comm comm, const char *name, int n, int iter, MPI_Op mat,
                       MPI_Datatype mat_type)
{
    int r, p;
    int *a = malloc((size_t)n * sizeof(int)), *b = malloc((size_t)n * sizeof(int));
    long nm = n / 4 > 0 ? n / 4 : 1;
    int *ma = malloc((size_t)nm * 16), *mb = malloc((size_t)nm * 16);

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    for (long i = 0; i < n; i++)
        a[i] = value(r, i, iter);
    OK(MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, comm));
    for (long i = 0; i < n; i++) {
        long want = 0;

        for (int q = 0; q < p; q++)
            want += value(q, i, iter);
        if (b[i] != (int)want) {
            CHECK(0, "%s: Allreduce sum of %d: element %ld is %d, not %ld", name, n, i, b[i], want);
            break;
        }
    }
    memcpy(b, a, (size_t)n * sizeof(int));
    OK(MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_INT, MPI_MAX, comm));
    for (long i = 0; i < n; i++) {
        int want = 0;

        for (int q = 0; q < p; q++)
            want = value(q, i, iter) > want ? value(q, i, iter) : want;
        if (b[i] != want) {
            CHECK(0, "%s: Allreduce max in place of %d: element %ld is %d, not %d", name, n, i,
                  b[i], want);
            break;
        }
    }
    for (int root = 0; root<p; root += p> 2 ? p - 2 : 1) {
        memset(b, 0, (size_t)n * sizeof(int));
        OK(MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, comm));
        for (long i = 0; r == root && i < n; i++) {
            long want = 0;

            for (int q = 0; q < p; q++)
                want += value(q, i, iter);
            if (b[i] != (int)want) {
                CHECK(0, "%s: Reduce of %d to %d: element %ld is %d, not %ld", name, n, root, i,
                      b[i], want);
                break;
            }
        }
    }
    for (long i = 0; i < nm; i++)
        matrix_of(r, i, iter, ma + 4 * i);
    OK(MPI_Allreduce(ma, mb, (int)nm, mat_type, mat, comm));
    check_matrices(mb, nm, p, iter, name, "Allreduce");
    /* in place: each input must be read before the result overwrites it */
    memcpy(mb, ma, (size_t)nm * 4 * sizeof(int));
    OK(MPI_Allreduce(MPI_IN_PLACE, mb, (int)nm, mat_type, mat, comm));
    check_matrices(mb, nm, p, iter, name, "Allreduce in place");
    /* Reduce in place at a turning root: the root's input is read before
     * its result overwrites it, in rank order */
    for (int root = 0; root<p; root += p> 2 ? p - 2 : 1) {
        if (r == root) {
            memcpy(mb, ma, (size_t)nm * 4 * sizeof(int));
            OK(MPI_Reduce(MPI_IN_PLACE, mb, (int)nm, mat_type, mat, root, comm));
            check_matrices(mb, nm, p, iter, name, "Reduce in place");
        } else {
            OK(MPI_Reduce(ma, NULL, (int)nm, mat_type, mat, root, comm));
        }
    }
    free(a);
    free(b);
    free(ma);
    free(mb);
}

static void bcasts(MPI_Comm comm, const char *name, int n, int iter)
{
    int r, p;
    int *strided = malloc((size_t)n * 2 * sizeof(int)), *b = malloc((size_t)n * sizeof(int));
    MPI_Datatype every_other;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    MPI_Type_vector(n, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    for (int root = 0; root < p; root++) {
        if (r == root) {
            for (long i = 0; i < n; i++)
                strided[2 * i] = (int)(i ^ (iter + root));
            OK(MPI_Bcast(strided, 1, every_other, root, comm));
            continue;
        }
        memset(b, 0, (size_t)n * sizeof(int));
        OK(MPI_Bcast(b, n, MPI_INT, root, comm));
        for (long i = 0; i < n; i++) {
            if (b[i] != (int)(i ^ (iter + root))) {
                CHECK(0, "%s: Bcast of %d from %d: element %ld is %d", name, n, root, i, b[i]);
                break;
            }
        }
    }
    MPI_Type_free(&every_other);
    free(strided);
    free(b);
}

/* rank q's element i of its block for rank d (d: the Alltoall target) */
static int block_value(int q, int d, long i, int iter)
{
    return q * 1000003 + d * 10007 + (int)i + iter;
}

static void movers(MPI_Comm comm, const char *name, int n, int iter)
{
    int r, p;
    long blk = n / 4 > 0 ? n / 4 : 1;
    int *s, *d, *strided;
    MPI_Datatype every_other;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    s = malloc((size_t)(blk * p) * sizeof(int));
    d = malloc((size_t)(blk * p) * sizeof(int));
    strided = malloc((size_t)(blk * p) * 2 * sizeof(int));
    MPI_Type_vector((int)blk, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);

    /* Allgather: a strided block in, contiguous blocks out; then in place */
    for (long i = 0; i < blk; i++)
        strided[2 * i] = block_value(r, 0, i, iter);
    OK(MPI_Allgather(strided, 1, every_other, d, (int)blk, MPI_INT, comm));
    for (int q = 0; q < p; q++) {
        for (long i = 0; i < blk; i++) {
            if (d[q * blk + i] != block_value(q, 0, i, iter)) {
                CHECK(0, "%s: Allgather of %ld: rank %d's element %ld", name, blk, q, i);
                q = p;
                break;
            }
        }
    }
    for (long i = 0; i < blk * p; i++)
        d[i] = i / blk == r ? block_value(r, 1, i % blk, iter) : -1;
    OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, (int)blk, MPI_INT, comm));
    for (int q = 0; q < p; q++) {
        for (long i = 0; i < blk; i++) {
            if (d[q * blk + i] != block_value(q, 1, i, iter)) {
                CHECK(0, "%s: Allgather in place of %ld: rank %d's element %ld", name, blk, q, i);
                q = p;
                break;
            }
        }
    }

    /* Allgather: contiguous blocks in, strided blocks out (block q's
     * element i at strided[2 * (q * blk + i)]) */
    {
        MPI_Datatype strided_block;

        MPI_Type_create_resized(every_other, 0, (MPI_Aint)(2 * blk * sizeof(int)), &strided_block);
        MPI_Type_commit(&strided_block);
        for (long i = 0; i < blk; i++)
            s[i] = block_value(r, 2, i, iter);
        memset(strided, 0xff, (size_t)(blk * p) * 2 * sizeof(int));
        OK(MPI_Allgather(s, (int)blk, MPI_INT, strided, 1, strided_block, comm));
        for (long i = 0; i < blk * p; i++) {
            if (strided[2 * i] != block_value((int)(i / blk), 2, i % blk, iter)) {
                CHECK(0, "%s: Allgather of %ld into strided blocks: rank %ld's element %ld", name,
                      blk, i / blk, i % blk);
                break;
            }
        }
        MPI_Type_free(&strided_block);
    }

    /* Alltoall */
    for (int t = 0; t < p; t++)
        for (long i = 0; i < blk; i++)
            s[t * blk + i] = block_value(r, t, i, iter);
    OK(MPI_Alltoall(s, (int)blk, MPI_INT, d, (int)blk, MPI_INT, comm));
    for (int q = 0; q < p; q++) {
        for (long i = 0; i < blk; i++) {
            if (d[q * blk + i] != block_value(q, r, i, iter)) {
                CHECK(0, "%s: Alltoall of %ld: from rank %d, element %ld", name, blk, q, i);
                q = p;
                break;
            }
        }
    }

    for (int root = 0; root<p; root += p> 2 ? p - 2 : 1) {
        /* Gather: strided blocks in; the root's own in place */
        for (long i = 0; i < blk; i++)
            strided[2 * i] = block_value(r, root, i, iter);
        memset(d, 0xff, (size_t)(blk * p) * sizeof(int));
        if (r == root) {
            for (long i = 0; i < blk; i++)
                d[r * blk + i] = block_value(r, root, i, iter);
            OK(MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, (int)blk, MPI_INT, root, comm));
            for (int q = 0; q < p; q++) {
                for (long i = 0; i < blk; i++) {
                    if (d[q * blk + i] != block_value(q, root, i, iter)) {
                        CHECK(0, "%s: Gather of %ld to %d: rank %d's element %ld", name, blk, root,
                              q, i);
                        q = p;
                        break;
                    }
                }
            }
        } else {
            OK(MPI_Gather(strided, 1, every_other, NULL, 0, MPI_INT, root, comm));
        }
        /* Scatter: the root's blocks strided (block q's element i at
         * strided[2 * (q * blk + i)]), its own left in place */
        for (long i = 0; r == root && i < blk * p; i++)
            strided[2 * i] = block_value((int)(i / blk), root + 7, i % blk, iter);
        memset(d, 0, (size_t)blk * sizeof(int));
        if (r == root) {
            MPI_Datatype strided_block;

            MPI_Type_create_resized(every_other, 0, (MPI_Aint)(2 * blk * sizeof(int)),
                                    &strided_block);
            MPI_Type_commit(&strided_block);
            OK(MPI_Scatter(strided, 1, strided_block, MPI_IN_PLACE, 0, MPI_INT, root, comm));
            MPI_Type_free(&strided_block);
        } else {
            OK(MPI_Scatter(NULL, 0, MPI_INT, d, (int)blk, MPI_INT, root, comm));
            for (long i = 0; i < blk; i++) {
                if (d[i] != block_value(r, root + 7, i, iter)) {
                    CHECK(0, "%s: Scatter of %ld from %d: element %ld is %d", name, blk, root, i,
                          d[i]);
                    break;
                }
            }
        }
    }
    MPI_Type_free(&every_other);
    free(s);
    free(d);
    free(strided);
}

/* Counts that disagree (an erroneous call): every rank sends 2n elements,
 * and receives blocks of n.  The receiving ranks get MPI_ERR_TRUNCATE
 * (under MPI_ERRORS_RETURN) and nothing is written past their buffers:
 * the guard after them stays, and the sanitizer build sees no overflow. */
static void mismatched(MPI_Comm comm, const char *name, int n)
{
    MPI_Comm c;
    int size, me, rc;
    const int guard = 0x5a5a5a5a;
    int *send, *recv;

    MPI_Comm_dup(comm, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_size(c, &size);
    MPI_Comm_rank(c, &me);
    send = calloc((size_t)(2 * n * size), sizeof(int));
    recv = malloc(((size_t)n * size + 1) * sizeof(int));
    for (int i = 0; i <= n * size; i++)
        recv[i] = guard;
    rc = MPI_Gather(send, 2 * n, MPI_INT, recv, n, MPI_INT, 0, c);
    if (me == 0)
        CHECK(rc == MPI_ERR_TRUNCATE, "%s n=%d: Gather of 2n into n gave %d, not MPI_ERR_TRUNCATE",
              name, n, rc);
    CHECK(recv[n * size] == guard, "%s n=%d: Gather wrote past the receive buffer", name, n);
    MPI_Barrier(c);
    rc = MPI_Allgather(send, 2 * n, MPI_INT, recv, n, MPI_INT, c);
    CHECK(size == 1 || rc == MPI_ERR_TRUNCATE,
          "%s n=%d: Allgather of 2n into n gave %d, not MPI_ERR_TRUNCATE", name, n, rc);
    CHECK(recv[n * size] == guard, "%s n=%d: Allgather wrote past the receive buffer", name, n);
    MPI_Barrier(c);
    free(send);
    free(recv);
    MPI_Comm_free(&c);
}

/* The one-phase calls of small payloads back to back, with no barrier
 * between: Reduce to a root that turns and is sometimes late (the others
 * post and go, and must not overwrite a half it has not read), Allgather
 * and Allreduce of a non-commutative op, each checked. */
static void one_phase_runs(MPI_Comm comm, const char *name, MPI_Op mat, MPI_Datatype mat_type)
{
    int r, p;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    for (int it = 0; it < 150; it++) {
        int root = it % p, in[3], out[3] = {0, 0, 0}, all[8], m[4], acc[4], x[4], len = 1;

        if (r == root && it % 7 == 0)
            usleep(200);
        for (int k = 0; k < 3; k++)
            in[k] = value(r, k, it);
        OK(MPI_Reduce(in, out, 3, MPI_INT, MPI_SUM, root, comm));
        for (int k = 0; r == root && k < 3; k++) {
            long want = 0;

            for (int q = 0; q < p; q++)
                want += value(q, k, it);
            if (out[k] != (int)want) {
                CHECK(0, "%s: one-phase Reduce %d to %d: element %d is %d, not %ld", name, it, root,
                      k, out[k], want);
                return;
            }
        }
        OK(MPI_Allgather(&in[0], 1, MPI_INT, all, 1, MPI_INT, comm));
        for (int q = 0; q < p && q < 8; q++) {
            if (all[q] != value(q, 0, it)) {
                CHECK(0, "%s: one-phase Allgather %d: block %d is %d, not %d", name, it, q, all[q],
                      value(q, 0, it));
                return;
            }
        }
        matrix_of(r, 0, it, m);
        OK(MPI_Allreduce(MPI_IN_PLACE, m, 1, mat_type, mat, comm));
        matrix_of(p - 1, 0, it, acc);
        for (int q = p - 2; q >= 0; q--) {
            matrix_of(q, 0, it, x);
            matmul(x, acc, &len, NULL);
        }
        if (memcmp(acc, m, sizeof(acc)) != 0) {
            CHECK(0, "%s: one-phase Allreduce %d of a matrix (not commutative): out of order", name,
                  it);
            return;
        }
    }
}

/* One-phase calls through the lines' halves and the cells' halves mixed
 * back to back with the two-phase calls that follow them: a
 * non-commutative Reduce to a turning root, Allreduce of matrices through
 * a cell's half, Alltoall and Allgather in a line and in a cell, a Reduce
 * of 48 bytes (two phases, the root writing nothing), a Bcast now and
 * then; ranks late by turns. */
static void one_phase_mixed(MPI_Comm comm, const char *name, MPI_Op mat, MPI_Datatype mat_type)
{
    enum {
        NM = 100,
        BLK = 16,
        WIDE = 200
    };
    int r, p;
    int *m, *mo, *s, *d, *g;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    m = malloc(NM * 4 * sizeof(int));
    mo = malloc(NM * 4 * sizeof(int));
    s = malloc((size_t)(BLK * p) * sizeof(int));
    d = malloc((size_t)(BLK * p) * sizeof(int));
    g = malloc((size_t)(WIDE * p) * sizeof(int));
    for (int it = 0; it < 120; it++) {
        int root = (it * 3) % p, in[12], out[12], per;

        if ((it * 31 + r * 17) % 11 == 0)
            usleep(150);
        /* a matrix Reduce in a line's half, to a turning root */
        matrix_of(r, 0, it, m);
        memset(mo, 0, 4 * sizeof(int));
        OK(MPI_Reduce(m, mo, 1, mat_type, mat, root, comm));
        if (r == root && matrix_mismatch(mo, 1, p, it) >= 0) {
            CHECK(0, "%s: mixed %d: Reduce of a matrix to %d out of order", name, it, root);
            break;
        }
        /* matrices through a cell's half, not in place */
        for (long i = 0; i < NM; i++)
            matrix_of(r, i, it + 1, m + 4 * i);
        OK(MPI_Allreduce(m, mo, NM, mat_type, mat, comm));
        if (matrix_mismatch(mo, NM, p, it + 1) >= 0) {
            CHECK(0, "%s: mixed %d: Allreduce of %d matrices out of order", name, it, NM);
            break;
        }
        /* Alltoall of 1 int per block (a line's half, few ranks) and of BLK */
        per = (it % 2) ? BLK : 1;
        for (int t = 0; t < p; t++)
            for (long i = 0; i < per; i++)
                s[t * per + i] = block_value(r, t, i, it);
        OK(MPI_Alltoall(s, per, MPI_INT, d, per, MPI_INT, comm));
        for (int q = 0; q < p; q++) {
            for (long i = 0; i < per; i++) {
                if (d[q * per + i] != block_value(q, r, i, it)) {
                    CHECK(0, "%s: mixed %d: Alltoall of %d from %d, element %ld", name, it, per, q,
                          i);
                    goto out;
                }
            }
        }
        /* Allgather of WIDE ints (a cell's half) */
        for (long i = 0; i < WIDE; i++)
            g[r * WIDE + i] = block_value(r, 3, i, it);
        OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, WIDE, MPI_INT, comm));
        for (long i = 0; i < WIDE * p; i++) {
            if (g[i] != block_value((int)(i / WIDE), 3, i % WIDE, it)) {
                CHECK(0, "%s: mixed %d: Allgather of %d: rank %ld's element %ld", name, it, WIDE,
                      i / WIDE, i % WIDE);
                goto out;
            }
        }
        /* a Reduce of 48 bytes (two phases) to another turning root */
        for (int k = 0; k < 12; k++)
            in[k] = value(r, k, it);
        OK(MPI_Reduce(in, out, 12, MPI_INT, MPI_SUM, (root + 1) % p, comm));
        for (int k = 0; r == (root + 1) % p && k < 12; k++) {
            long want = 0;

            for (int q = 0; q < p; q++)
                want += value(q, k, it);
            if (out[k] != (int)want) {
                CHECK(0, "%s: mixed %d: Reduce of 12 to %d: element %d is %d, not %ld", name, it,
                      (root + 1) % p, k, out[k], want);
                goto out;
            }
        }
        if (it % 5 == 4) {
            int b[3] = {-1, -1, -1};

            if (r == root) {
                b[0] = it;
                b[2] = it + 2;
            }

            OK(MPI_Bcast(b, 3, MPI_INT, root, comm));
            CHECK(b[0] == it && b[1] == -1 && b[2] == it + 2, "%s: mixed %d: Bcast from %d", name,
                  it, root);
        }
    }
out:
    free(m);
    free(mo);
    free(s);
    free(d);
    free(g);
}

int main(int argc, char **argv)
{
    MPI_Comm comms[3];
    const char *names[3] = {"world", "split reversed", "dup"};
    MPI_Op mat;
    MPI_Datatype mat_type;
    int size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op_create(matmul, 0, &mat);
    MPI_Type_contiguous(4, MPI_INT, &mat_type);
    MPI_Type_commit(&mat_type);
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &comms[1]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[2]);
    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < NCOUNTS; k++) {
            for (int iter = 0; iter < 2; iter++) {
                reductions(comms[c], names[c], counts[k], iter, mat, mat_type);
                bcasts(comms[c], names[c], counts[k], iter);
                movers(comms[c], names[c], counts[k], iter);
                MPI_Barrier(comms[c]);
            }
        }
    }
    if (size <= 8) {
        for (int c = 0; c < 3; c++)
            one_phase_runs(comms[c], names[c], mat, mat_type);
        for (int c = 0; c < 3; c++)
            one_phase_mixed(comms[c], names[c], mat, mat_type);
    }
    for (int k = 0; k < 3; k++)
        mismatched(MPI_COMM_WORLD, "mismatched counts", counts[k]);
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
    MPI_Op_free(&mat);
    MPI_Type_free(&mat_type);
    {
        int rc = check_summary("coll_node", MPI_COMM_WORLD, 99);

        MPI_Finalize();
        return rc;
    }
}
