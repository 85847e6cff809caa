/* Datatypes through the library, on the standard API only (run under
 * `postbox run`, every rank the same checks): subarray and darray layouts
 * against hand-computed bytes, the envelope and contents of every
 * combiner, datatype attributes, MPI_Type_match_size and the f90 types,
 * external32 bytes, the hardware and ABI infos; and the reductions of
 * MPI_AINT, MPI_OFFSET and MPI_COUNT with the logical ops, and keyvals
 * freed while attributes use them (bugs of issue 16). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "check.h"

/* ---- keyvals freed while in use --------------------------------------------------------- */

static int deletes; /* delete callbacks run */

static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static void test_freed_keyval_still_names_its_attributes(void)
{
    MPI_Comm dup;
    int key, held, flag, *got, value = 42;

    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    for (int mpi1 = 0; mpi1 < 2; mpi1++) {
        deletes = 0;
        if (mpi1)
            OK(MPI_Keyval_create(MPI_NULL_COPY_FN, count_delete, &key, NULL));
        else
            OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &key, NULL));
        held = key;
        OK(MPI_Comm_set_attr(dup, key, &value));
        OK(mpi1 ? MPI_Keyval_free(&key) : MPI_Comm_free_keyval(&key));
        CHECK(key == MPI_KEYVAL_INVALID, "the freed keyval is %d", key);
        /* the program's other copy of the keyval still reaches the attribute */
        flag = 0;
        OK(MPI_Comm_get_attr(dup, held, &got, &flag));
        CHECK(flag && got == &value, "attribute through the freed keyval: flag %d", flag);
        OK(MPI_Comm_set_attr(dup, held, &value));
        CHECK(deletes == 1, "replacing the value ran %d delete callbacks", deletes);
        OK(MPI_Comm_delete_attr(dup, held));
        CHECK(deletes == 2, "%d delete callbacks", deletes);
        /* the last attribute gone, the keyval is gone */
        CHECK(MPI_Comm_get_attr(dup, held, &got, &flag) == MPI_ERR_KEYVAL,
              "a keyval freed and unused still answers");
        CHECK(MPI_Comm_free_keyval(&held) == MPI_ERR_KEYVAL, "freed twice");
    }
    OK(MPI_Comm_free(&dup));
}

/* ---- reductions of MPI_AINT, MPI_OFFSET, MPI_COUNT with the logical ops ------------------ */

static void test_logical_ops_on_address_types(void)
{
    const MPI_Datatype types[3] = {MPI_AINT, MPI_OFFSET, MPI_COUNT};
    const MPI_Op ops[3] = {MPI_LAND, MPI_LOR, MPI_LXOR};
    int size;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int t = 0; t < 3; t++) {
        for (int o = 0; o < 3; o++) {
            /* 8-byte integers all three here (MPI_Aint is 64-bit on the ABI's platforms) */
            int64_t in[3] = {0, 5, 0}, inout[3] = {0, 0, 7}, all[3];
            const int64_t local[3][3] = {{0, 0, 0}, {0, 1, 1}, {0, 1, 1}};
            /* rank r contributes {0, r % 2 ? 3 : 0, 1}: one true at [2] each, true at [1] on
             * the odd ranks */
            int64_t mine[3] = {0, rank % 2 ? 3 : 0, 1};
            int odd = size / 2;
            int64_t want[3];

            OK(MPI_Reduce_local(in, inout, 3, types[t], ops[o]));
            for (int i = 0; i < 3; i++)
                CHECK(inout[i] == local[o][i], "Reduce_local type %d op %d: [%d] = %lld", t, o, i,
                      (long long)inout[i]);
            OK(MPI_Allreduce(mine, all, 3, types[t], ops[o], MPI_COMM_WORLD));
            want[0] = 0;
            want[1] = o == 0 ? odd == size : o == 1 ? odd > 0 : odd % 2;
            want[2] = o == 0 ? 1 : o == 1 ? 1 : size % 2;
            for (int i = 0; i < 3; i++)
                CHECK(all[i] == want[i], "Allreduce type %d op %d: [%d] = %lld, expected %lld", t,
                      o, i, (long long)all[i], (long long)want[i]);
        }
    }
}

/* ---- datatype attributes ---------------------------------------------------------------- */

static int type_deletes;
static MPI_Datatype last_deleted_from;

static int type_delete(MPI_Datatype type, int keyval, void *value, void *extra)
{
    (void)keyval;
    (void)value;
    (void)extra;
    type_deletes++;
    last_deleted_from = type;
    return MPI_SUCCESS;
}

/* copies the value plus *extra */
static int type_copy_add(MPI_Datatype old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)keyval;
    *(intptr_t *)out = (intptr_t)in + *(int *)extra;
    *flag = 1;
    return MPI_SUCCESS;
}

static int type_copy_refuse(MPI_Datatype old, int keyval, void *extra, void *in, void *out,
                            int *flag)
{
    (void)old;
    (void)keyval;
    (void)extra;
    (void)in;
    (void)out;
    *flag = 0;
    return MPI_ERR_OTHER;
}

static void test_type_attributes(void)
{
    MPI_Datatype vec, dup, dup2;
    int add = 10, k_add, k_dup, k_null, k_refuse, kcomm, flag;
    void *v;

    OK(MPI_Type_vector(2, 1, 3, MPI_INT, &vec));
    OK(MPI_Type_create_keyval(type_copy_add, type_delete, &k_add, &add));
    OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &k_dup, NULL));
    OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_delete, &k_null, NULL));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kcomm, NULL));
    OK(MPI_Type_set_attr(vec, k_add, (void *)(intptr_t)5));
    OK(MPI_Type_set_attr(vec, k_dup, (void *)(intptr_t)7));
    OK(MPI_Type_set_attr(vec, k_null, (void *)(intptr_t)9));
    flag = 0;
    OK(MPI_Type_get_attr(vec, k_add, &v, &flag));
    CHECK(flag && (intptr_t)v == 5, "get: flag %d value %ld", flag, (long)(intptr_t)v);

    /* MPI_Type_dup copies through the callbacks */
    type_deletes = 0;
    OK(MPI_Type_dup(vec, &dup));
    OK(MPI_Type_get_attr(dup, k_add, &v, &flag));
    CHECK(flag && (intptr_t)v == 15, "copied by the callback: flag %d value %ld", flag,
          (long)(intptr_t)v);
    OK(MPI_Type_get_attr(dup, k_dup, &v, &flag));
    CHECK(flag && (intptr_t)v == 7, "MPI_TYPE_DUP_FN: flag %d", flag);
    OK(MPI_Type_get_attr(dup, k_null, &v, &flag));
    CHECK(!flag, "MPI_TYPE_NULL_COPY_FN copied the attribute");
    /* the original keeps its values */
    OK(MPI_Type_get_attr(vec, k_add, &v, &flag));
    CHECK(flag && (intptr_t)v == 5, "original changed: %ld", (long)(intptr_t)v);

    /* replacing and deleting run the delete callback */
    OK(MPI_Type_set_attr(dup, k_add, (void *)(intptr_t)1));
    CHECK(type_deletes == 1 && last_deleted_from == dup, "replace: %d deletes", type_deletes);
    OK(MPI_Type_delete_attr(dup, k_add));
    CHECK(type_deletes == 2, "delete: %d deletes", type_deletes);
    OK(MPI_Type_get_attr(dup, k_add, &v, &flag));
    CHECK(!flag, "deleted attribute still there");

    /* MPI_Type_free deletes them */
    type_deletes = 0;
    OK(MPI_Type_free(&vec));
    CHECK(type_deletes == 2, "MPI_Type_free ran %d delete callbacks, expected 2", type_deletes);

    /* predefined types have attributes too */
    OK(MPI_Type_set_attr(MPI_DOUBLE, k_dup, (void *)(intptr_t)3));
    OK(MPI_Type_get_attr(MPI_DOUBLE, k_dup, &v, &flag));
    CHECK(flag && (intptr_t)v == 3, "attribute of MPI_DOUBLE: flag %d", flag);
    OK(MPI_Type_get_attr(MPI_FLOAT, k_dup, &v, &flag));
    CHECK(!flag, "MPI_FLOAT has MPI_DOUBLE's attribute");
    OK(MPI_Type_delete_attr(MPI_DOUBLE, k_dup));

    /* a failing copy callback fails MPI_Type_dup */
    OK(MPI_Type_create_keyval(type_copy_refuse, MPI_TYPE_NULL_DELETE_FN, &k_refuse, NULL));
    OK(MPI_Type_set_attr(dup, k_refuse, NULL));
    dup2 = MPI_DATATYPE_NULL;
    CHECK(MPI_Type_dup(dup, &dup2) == MPI_ERR_OTHER && dup2 == MPI_DATATYPE_NULL,
          "MPI_Type_dup with a refusing copy callback");
    OK(MPI_Type_delete_attr(dup, k_refuse));

    /* keyvals of another kind, unknown ones */
    CHECK(MPI_Type_set_attr(dup, kcomm, NULL) == MPI_ERR_KEYVAL, "a communicator keyval on a type");
    CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, k_add, NULL) == MPI_ERR_KEYVAL,
          "a datatype keyval on a communicator");
    CHECK(MPI_Type_get_attr(dup, 12345, &v, &flag) == MPI_ERR_KEYVAL, "an unknown keyval");
    CHECK(MPI_Type_get_attr(MPI_DATATYPE_NULL, k_add, &v, &flag) == MPI_ERR_TYPE,
          "MPI_DATATYPE_NULL");

    /* a freed keyval keeps naming the attributes that use it */
    {
        int held = k_null;

        OK(MPI_Type_set_attr(dup, k_null, (void *)(intptr_t)4));
        OK(MPI_Type_free_keyval(&k_null));
        CHECK(k_null == MPI_KEYVAL_INVALID, "freed type keyval is %d", k_null);
        OK(MPI_Type_get_attr(dup, held, &v, &flag));
        CHECK(flag && (intptr_t)v == 4, "through the freed type keyval: flag %d", flag);
    }
    type_deletes = 0;
    OK(MPI_Type_free(&dup));
    CHECK(type_deletes == 1, "MPI_Type_free of the dup: %d deletes", type_deletes);
    OK(MPI_Type_free_keyval(&k_add));
    OK(MPI_Type_free_keyval(&k_dup));
    OK(MPI_Type_free_keyval(&k_refuse));
    OK(MPI_Comm_free_keyval(&kcomm));
}

/* ---- layouts: what MPI_Pack takes from a buffer --------------------------------------------- */

/* The ints MPI_Pack takes from @buf for one @type (at most @max), their
 * number returned. */
static int packed_ints(const int *buf, MPI_Datatype type, int *out, int max)
{
    int size, pos = 0;

    OK(MPI_Type_size(type, &size));
    CHECK(size % (int)sizeof(int) == 0 && size / (int)sizeof(int) <= max, "type size %d", size);
    if (size % (int)sizeof(int) != 0 || size / (int)sizeof(int) > max)
        return 0;
    OK(MPI_Pack(buf, 1, type, out, max * (int)sizeof(int), &pos, MPI_COMM_SELF));
    return pos / (int)sizeof(int);
}

/* @type (committed here) must take exactly the ints @want of the buffer
 * 0, 1, 2, ..., and have lb 0 and extent @extent ints. */
static void check_int_layout(MPI_Datatype type, const int *want, int n, int extent,
                             const char *what)
{
    enum {
        MAX = 4096
    };
    static int buf[MAX], got[MAX];
    MPI_Aint lb, ext;
    int m;

    for (int i = 0; i < MAX; i++)
        buf[i] = i;
    OK(MPI_Type_commit(&type));
    OK(MPI_Type_get_extent(type, &lb, &ext));
    CHECK(lb == 0 && ext == (MPI_Aint)extent * (MPI_Aint)sizeof(int),
          "%s: lb %ld extent %ld, expected 0 and %d ints", what, (long)lb, (long)ext, extent);
    m = packed_ints(buf, type, got, MAX);
    CHECK(m == n, "%s: %d ints packed, expected %d", what, m, n);
    for (int i = 0; i < n && i < m; i++) {
        CHECK(got[i] == want[i], "%s: packed[%d] = %d, expected %d", what, i, got[i], want[i]);
        if (got[i] != want[i])
            break;
    }
}

/* ---- subarray ------------------------------------------------------------------------------ */

static void test_subarray(void)
{
    /* 3 x 4 x 5, part 2 x 2 x 3 from (1, 2, 1) */
    const int sizes[3] = {3, 4, 5}, subsizes[3] = {2, 2, 3}, starts[3] = {1, 2, 1};
    const MPI_Count sizes_c[3] = {3, 4, 5}, subsizes_c[3] = {2, 2, 3}, starts_c[3] = {1, 2, 1};
    int want[12], n = 0;
    MPI_Datatype t;

    /* C order: the last dimension fastest */
    for (int i = starts[0]; i < starts[0] + subsizes[0]; i++)
        for (int j = starts[1]; j < starts[1] + subsizes[1]; j++)
            for (int k = starts[2]; k < starts[2] + subsizes[2]; k++)
                want[n++] = (i * 4 + j) * 5 + k;
    OK(MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t));
    check_int_layout(t, want, n, 60, "subarray C");
    OK(MPI_Type_free(&t));
    OK(MPI_Type_create_subarray_c(3, sizes_c, subsizes_c, starts_c, MPI_ORDER_C, MPI_INT, &t));
    check_int_layout(t, want, n, 60, "subarray_c C");
    OK(MPI_Type_free(&t));

    /* Fortran order: the first dimension fastest */
    n = 0;
    for (int k = starts[2]; k < starts[2] + subsizes[2]; k++)
        for (int j = starts[1]; j < starts[1] + subsizes[1]; j++)
            for (int i = starts[0]; i < starts[0] + subsizes[0]; i++)
                want[n++] = (k * 4 + j) * 3 + i;
    OK(MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_INT, &t));
    check_int_layout(t, want, n, 60, "subarray Fortran");
    OK(MPI_Type_free(&t));

    /* of a derived type: 2 x 3 of pairs (a contiguous of 2 ints), part 1 x 2 from (1, 1) */
    {
        const int s2[2] = {2, 3}, sub2[2] = {1, 2}, st2[2] = {1, 1};
        const int want2[4] = {8, 9, 10, 11};
        MPI_Datatype pair;

        OK(MPI_Type_contiguous(2, MPI_INT, &pair));
        OK(MPI_Type_create_subarray(2, s2, sub2, st2, MPI_ORDER_C, pair, &t));
        check_int_layout(t, want2, 4, 12, "subarray of pairs");
        OK(MPI_Type_free(&t));
        OK(MPI_Type_free(&pair));
    }

    /* an empty part keeps the array's extent */
    {
        const int s1[1] = {6}, sub1[1] = {0}, st1[1] = {6};

        OK(MPI_Type_create_subarray(1, s1, sub1, st1, MPI_ORDER_C, MPI_INT, &t));
        check_int_layout(t, want, 0, 6, "empty subarray");
        OK(MPI_Type_free(&t));
    }

    /* errors */
    {
        const int bad_start[3] = {1, 3, 1}, bad_size[3] = {3, 0, 5};

        CHECK(MPI_Type_create_subarray(3, sizes, subsizes, bad_start, MPI_ORDER_C, MPI_INT, &t) ==
                  MPI_ERR_ARG,
              "a part past the array");
        CHECK(MPI_Type_create_subarray(3, bad_size, subsizes, starts, MPI_ORDER_C, MPI_INT, &t) ==
                  MPI_ERR_ARG,
              "a size of 0");
        CHECK(MPI_Type_create_subarray(0, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t) ==
                  MPI_ERR_ARG,
              "ndims 0");
        CHECK(MPI_Type_create_subarray(3, sizes, subsizes, starts, 3, MPI_INT, &t) == MPI_ERR_ARG,
              "a bad order");
        CHECK(MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, MPI_DATATYPE_NULL,
                                       &t) == MPI_ERR_TYPE,
              "MPI_DATATYPE_NULL");
    }
}

/* ---- darray -------------------------------------------------------------------------------- */

/* The process coordinate owning index @x of a dimension of @g over @p
 * processes, or -1 (a reference written from the standard's definitions). */
static int owner(int x, int g, int distrib, int darg, int p)
{
    int b;

    switch (distrib) {
    case MPI_DISTRIBUTE_NONE: return 0;
    case MPI_DISTRIBUTE_BLOCK:
        b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        return x / b;
    default: b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg; return (x / b) % p;
    }
}

/* Check the darray of every rank of a grid against the reference: the
 * elements each owns in storage order, and all of them owned once. */
static void check_darray(int ndims, const int *gsizes, const int *distribs, const int *dargs,
                         const int *psizes, int order, const char *what)
{
    int nprocs = 1, total = 1;
    static int want[4096], seen[4096];

    for (int d = 0; d < ndims; d++) {
        nprocs *= psizes[d];
        total *= gsizes[d];
    }
    memset(seen, 0, sizeof(seen));
    for (int r = 0; r < nprocs; r++) {
        int coord[4], rest = r, n = 0;
        MPI_Datatype t;
        MPI_Count gsizes_c[4];

        for (int d = ndims - 1; d >= 0; d--) {
            coord[d] = rest % psizes[d];
            rest /= psizes[d];
        }
        /* storage order: linear index l; the index of dimension d in it */
        for (int l = 0; l < total; l++) {
            int rem = l, mine = 1;

            for (int k = 0; k < ndims; k++) {
                int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
                int x = rem % gsizes[d];

                rem /= gsizes[d];
                mine &= owner(x, gsizes[d], distribs[d], dargs[d], psizes[d]) == coord[d];
            }
            if (mine) {
                want[n++] = l;
                seen[l]++;
            }
        }
        OK(MPI_Type_create_darray(nprocs, r, ndims, gsizes, distribs, dargs, psizes, order, MPI_INT,
                                  &t));
        check_int_layout(t, want, n, total, what);
        OK(MPI_Type_free(&t));
        for (int d = 0; d < ndims; d++)
            gsizes_c[d] = gsizes[d];
        OK(MPI_Type_create_darray_c(nprocs, r, ndims, gsizes_c, distribs, dargs, psizes, order,
                                    MPI_INT, &t));
        check_int_layout(t, want, n, total, what);
        OK(MPI_Type_free(&t));
    }
    for (int l = 0; l < total; l++)
        CHECK(seen[l] == 1, "%s: element %d owned %d times", what, l, seen[l]);
}

static void test_darray(void)
{
    const int g2[2] = {7, 10}, p23[2] = {2, 3};
    const int block_cyclic[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    const int dflt[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG};
    const int darg_sizes[2] = {4, 2};
    const int g3[3] = {5, 4, 6}, p3[3] = {1, 2, 2};
    const int none_block_cyclic[3] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK,
                                      MPI_DISTRIBUTE_CYCLIC};
    const int dargs3[3] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, 4};
    MPI_Datatype t;

    check_darray(2, g2, block_cyclic, dflt, p23, MPI_ORDER_C, "darray block x cyclic, C");
    check_darray(2, g2, block_cyclic, dflt, p23, MPI_ORDER_FORTRAN,
                 "darray block x cyclic, Fortran");
    check_darray(2, g2, block_cyclic, darg_sizes, p23, MPI_ORDER_C,
                 "darray block(4) x cyclic(2), C");
    check_darray(3, g3, none_block_cyclic, dargs3, p3, MPI_ORDER_C,
                 "darray none x block x cyclic(4)");
    check_darray(3, g3, none_block_cyclic, dargs3, p3, MPI_ORDER_FORTRAN,
                 "darray none x block x cyclic(4), Fortran");

    /* errors */
    {
        const int small_block[2] = {3, MPI_DISTRIBUTE_DFLT_DARG};
        const int none2[2] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_NONE};

        CHECK(MPI_Type_create_darray(6, 0, 2, g2, block_cyclic, small_block, p23, MPI_ORDER_C,
                                     MPI_INT, &t) == MPI_ERR_ARG,
              "blocks of 3 over 2 processes for 7");
        CHECK(MPI_Type_create_darray(5, 0, 2, g2, block_cyclic, dflt, p23, MPI_ORDER_C, MPI_INT,
                                     &t) == MPI_ERR_ARG,
              "a grid of 6 for size 5");
        CHECK(MPI_Type_create_darray(6, 6, 2, g2, block_cyclic, dflt, p23, MPI_ORDER_C, MPI_INT,
                                     &t) == MPI_ERR_ARG,
              "rank 6 of 6");
        CHECK(MPI_Type_create_darray(6, 0, 2, g2, none2, dflt, p23, MPI_ORDER_C, MPI_INT, &t) ==
                  MPI_ERR_ARG,
              "MPI_DISTRIBUTE_NONE over 2 processes");
    }
}

/* ---- envelope and contents ------------------------------------------------------------------ */

/* Same size, bounds and packed bytes of one element over the same buffer. */
static void check_same_layout(MPI_Datatype a, MPI_Datatype b, const char *what)
{
    static int buf[1024];
    char pa[4096], pb[4096];
    MPI_Aint lba, exa, lbb, exb;
    int sa, sb, posa = 0, posb = 0;

    for (int i = 0; i < 1024; i++)
        buf[i] = i * 7 + 1;
    OK(MPI_Type_commit(&a));
    OK(MPI_Type_commit(&b));
    OK(MPI_Type_size(a, &sa));
    OK(MPI_Type_size(b, &sb));
    OK(MPI_Type_get_extent(a, &lba, &exa));
    OK(MPI_Type_get_extent(b, &lbb, &exb));
    CHECK(sa == sb && lba == lbb && exa == exb, "%s: size %d/%d lb %ld/%ld extent %ld/%ld differ",
          what, sa, sb, (long)lba, (long)lbb, (long)exa, (long)exb);
    if (sa != sb || sa > (int)sizeof(pa))
        return;
    /* the types here have lb >= -16: start 64 bytes in */
    OK(MPI_Pack((char *)buf + 64, 1, a, pa, sa, &posa, MPI_COMM_SELF));
    OK(MPI_Pack((char *)buf + 64, 1, b, pb, sb, &posb, MPI_COMM_SELF));
    CHECK(posa == sa && posb == sb && memcmp(pa, pb, (size_t)sa) == 0, "%s: packed bytes differ",
          what);
}

/* The type the standard's constructor of @combiner makes from these
 * contents (int forms), or MPI_DATATYPE_NULL. */
static MPI_Datatype rebuild(int combiner, const int *ints, const MPI_Aint *addrs,
                            const MPI_Datatype *types)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int n = ints[0], rc = MPI_SUCCESS;

    switch (combiner) {
    case MPI_COMBINER_DUP: rc = MPI_Type_dup(types[0], &t); break;
    case MPI_COMBINER_CONTIGUOUS: rc = MPI_Type_contiguous(n, types[0], &t); break;
    case MPI_COMBINER_VECTOR: rc = MPI_Type_vector(n, ints[1], ints[2], types[0], &t); break;
    case MPI_COMBINER_HVECTOR:
        rc = MPI_Type_create_hvector(n, ints[1], addrs[0], types[0], &t);
        break;
    case MPI_COMBINER_INDEXED:
        rc = MPI_Type_indexed(n, ints + 1, ints + 1 + n, types[0], &t);
        break;
    case MPI_COMBINER_HINDEXED:
        rc = MPI_Type_create_hindexed(n, ints + 1, addrs, types[0], &t);
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        rc = MPI_Type_create_indexed_block(n, ints[1], ints + 2, types[0], &t);
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        rc = MPI_Type_create_hindexed_block(n, ints[1], addrs, types[0], &t);
        break;
    case MPI_COMBINER_STRUCT: rc = MPI_Type_create_struct(n, ints + 1, addrs, types, &t); break;
    case MPI_COMBINER_SUBARRAY:
        rc = MPI_Type_create_subarray(n, ints + 1, ints + 1 + n, ints + 1 + 2 * n, ints[1 + 3 * n],
                                      types[0], &t);
        break;
    case MPI_COMBINER_DARRAY: {
        int nd = ints[2];

        rc =
            MPI_Type_create_darray(ints[0], ints[1], nd, ints + 3, ints + 3 + nd, ints + 3 + 2 * nd,
                                   ints + 3 + 3 * nd, ints[3 + 4 * nd], types[0], &t);
        break;
    }
    case MPI_COMBINER_RESIZED:
        rc = MPI_Type_create_resized(types[0], addrs[0], addrs[1], &t);
        break;
    default: CHECK(0, "combiner %d", combiner);
    }
    CHECK(rc == MPI_SUCCESS, "rebuilding combiner %d: %d", combiner, rc);
    return rc == MPI_SUCCESS ? t : MPI_DATATYPE_NULL;
}

/* The envelope and contents of @t (made by @combiner) must be @ni ints
 * @want_ints, @na addresses @want_addrs and the @nd types @want_types
 * (MPI_DATATYPE_NULL: a derived type, which comes back as a new handle
 * with the same layout as @inner); rebuilding from them gives @t's layout.
 * Frees @t. */
static void check_contents(MPI_Datatype t, int combiner, int ni, const int *want_ints, int na,
                           const MPI_Aint *want_addrs, int nd, const MPI_Datatype *want_types,
                           MPI_Datatype inner, const char *what)
{
    int eni = -1, ena = -1, end = -1, ecomb = -1;
    MPI_Count cni, cna, cnl, cnd;
    int ints[64];
    MPI_Aint addrs[16];
    MPI_Datatype types[4], again;

    OK(MPI_Type_get_envelope(t, &eni, &ena, &end, &ecomb));
    CHECK(ecomb == combiner && eni == ni && ena == na && end == nd,
          "%s: envelope %d ints %d addresses %d types, combiner %d", what, eni, ena, end, ecomb);
    OK(MPI_Type_get_envelope_c(t, &cni, &cna, &cnl, &cnd, &ecomb));
    CHECK(cni == ni && cna == na && cnl == 0 && cnd == nd, "%s: envelope_c", what);
    if (eni != ni || ena != na || end != nd || ni > 64 || na > 16 || nd > 4)
        return;
    if (ni > 0)
        CHECK(MPI_Type_get_contents(t, ni - 1, na, nd, ints, addrs, types) == MPI_ERR_ARG,
              "%s: max_integers too small accepted", what);
    OK(MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types));
    for (int i = 0; i < ni; i++)
        CHECK(ints[i] == want_ints[i], "%s: integers[%d] = %d, expected %d", what, i, ints[i],
              want_ints[i]);
    for (int i = 0; i < na; i++)
        CHECK(addrs[i] == want_addrs[i], "%s: addresses[%d] = %ld, expected %ld", what, i,
              (long)addrs[i], (long)want_addrs[i]);
    for (int i = 0; i < nd; i++) {
        if (want_types[i] != MPI_DATATYPE_NULL) {
            CHECK(types[i] == want_types[i], "%s: datatypes[%d] is not the predefined type", what,
                  i);
        } else {
            CHECK(types[i] != inner, "%s: datatypes[%d] is the old handle, not a new one", what, i);
            check_same_layout(types[i], inner, what);
        }
    }
    again = rebuild(combiner, ints, addrs, types);
    if (again != MPI_DATATYPE_NULL) {
        check_same_layout(t, again, what);
        OK(MPI_Type_free(&again));
    }
    for (int i = 0; i < nd; i++) {
        if (want_types[i] == MPI_DATATYPE_NULL)
            OK(MPI_Type_free(&types[i]));
    }
    OK(MPI_Type_free(&t));
}

static void test_envelope_and_contents(void)
{
    const MPI_Datatype INT1[1] = {MPI_INT}, DERIVED[1] = {MPI_DATATYPE_NULL};
    MPI_Datatype inner, t;
    int ni, na, nd, comb;

    OK(MPI_Type_create_resized(MPI_SHORT, 0, 6, &inner)); /* a derived old type */

    OK(MPI_Type_get_envelope(MPI_DOUBLE, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "MPI_DOUBLE's envelope");
    CHECK(MPI_Type_get_contents(MPI_DOUBLE, 0, 0, 0, NULL, NULL, NULL) == MPI_ERR_TYPE,
          "contents of a predefined type");

    OK(MPI_Type_contiguous(3, MPI_INT, &t));
    check_contents(t, MPI_COMBINER_CONTIGUOUS, 1, (int[]){3}, 0, NULL, 1, INT1, inner,
                   "contiguous");
    OK(MPI_Type_vector(2, 3, 5, inner, &t));
    check_contents(t, MPI_COMBINER_VECTOR, 3, (int[]){2, 3, 5}, 0, NULL, 1, DERIVED, inner,
                   "vector");
    OK(MPI_Type_create_hvector(2, 1, 40, MPI_INT, &t));
    check_contents(t, MPI_COMBINER_HVECTOR, 2, (int[]){2, 1}, 1, (MPI_Aint[]){40}, 1, INT1, inner,
                   "hvector");
    OK(MPI_Type_indexed(2, (int[]){1, 2}, (int[]){0, 3}, inner, &t));
    check_contents(t, MPI_COMBINER_INDEXED, 5, (int[]){2, 1, 2, 0, 3}, 0, NULL, 1, DERIVED, inner,
                   "indexed");
    OK(MPI_Type_create_hindexed(2, (int[]){1, 2}, (MPI_Aint[]){0, 12}, MPI_INT, &t));
    check_contents(t, MPI_COMBINER_HINDEXED, 3, (int[]){2, 1, 2}, 2, (MPI_Aint[]){0, 12}, 1, INT1,
                   inner, "hindexed");
    OK(MPI_Type_create_indexed_block(2, 2, (int[]){0, 4}, MPI_INT, &t));
    check_contents(t, MPI_COMBINER_INDEXED_BLOCK, 4, (int[]){2, 2, 0, 4}, 0, NULL, 1, INT1, inner,
                   "indexed_block");
    OK(MPI_Type_create_hindexed_block(2, 2, (MPI_Aint[]){0, 16}, inner, &t));
    check_contents(t, MPI_COMBINER_HINDEXED_BLOCK, 2, (int[]){2, 2}, 2, (MPI_Aint[]){0, 16}, 1,
                   DERIVED, inner, "hindexed_block");
    OK(MPI_Type_create_struct(2, (int[]){1, 2}, (MPI_Aint[]){0, 8},
                              (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &t));
    check_contents(t, MPI_COMBINER_STRUCT, 3, (int[]){2, 1, 2}, 2, (MPI_Aint[]){0, 8}, 2,
                   (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, inner, "struct");
    OK(MPI_Type_create_subarray(2, (int[]){4, 5}, (int[]){2, 3}, (int[]){1, 2}, MPI_ORDER_FORTRAN,
                                MPI_INT, &t));
    check_contents(t, MPI_COMBINER_SUBARRAY, 8, (int[]){2, 4, 5, 2, 3, 1, 2, MPI_ORDER_FORTRAN}, 0,
                   NULL, 1, INT1, inner, "subarray");
    OK(MPI_Type_create_darray(
        4, 3, 2, (int[]){6, 5}, (int[]){MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK},
        (int[]){2, MPI_DISTRIBUTE_DFLT_DARG}, (int[]){2, 2}, MPI_ORDER_C, MPI_INT, &t));
    check_contents(t, MPI_COMBINER_DARRAY, 12,
                   (int[]){4, 3, 2, 6, 5, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK, 2,
                           MPI_DISTRIBUTE_DFLT_DARG, 2, 2, MPI_ORDER_C},
                   0, NULL, 1, INT1, inner, "darray");
    OK(MPI_Type_create_resized(MPI_INT, -4, 16, &t));
    check_contents(t, MPI_COMBINER_RESIZED, 0, NULL, 2, (MPI_Aint[]){-4, 16}, 1, INT1, inner,
                   "resized");
    OK(MPI_Type_dup(inner, &t));
    check_contents(t, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, DERIVED, inner, "dup");

    /* the large-count forms: their counts come as large counts, and only through the _c calls */
    {
        MPI_Count ni_c, na_c, nl_c, nd_c, large[8];
        int ints[4];
        MPI_Aint addrs[4];
        MPI_Datatype types[2];

        OK(MPI_Type_create_hvector_c(2, 3, 48, MPI_INT, &t));
        OK(MPI_Type_get_envelope_c(t, &ni_c, &na_c, &nl_c, &nd_c, &comb));
        CHECK(comb == MPI_COMBINER_HVECTOR && ni_c == 0 && na_c == 0 && nl_c == 3 && nd_c == 1,
              "hvector_c envelope: %lld %lld %lld %lld", (long long)ni_c, (long long)na_c,
              (long long)nl_c, (long long)nd_c);
        OK(MPI_Type_get_contents_c(t, 0, 0, 8, 2, ints, addrs, large, types));
        CHECK(large[0] == 2 && large[1] == 3 && large[2] == 48 && types[0] == MPI_INT,
              "hvector_c contents");
        CHECK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) == MPI_ERR_TYPE,
              "MPI_Type_get_envelope of a large-count type");
        CHECK(MPI_Type_get_contents(t, 4, 4, 2, ints, addrs, types) == MPI_ERR_TYPE,
              "MPI_Type_get_contents of a large-count type");
        OK(MPI_Type_free(&t));

        OK(MPI_Type_create_subarray_c(1, (MPI_Count[]){9}, (MPI_Count[]){4}, (MPI_Count[]){2},
                                      MPI_ORDER_C, MPI_INT, &t));
        OK(MPI_Type_get_envelope_c(t, &ni_c, &na_c, &nl_c, &nd_c, &comb));
        CHECK(comb == MPI_COMBINER_SUBARRAY && ni_c == 2 && na_c == 0 && nl_c == 3 && nd_c == 1,
              "subarray_c envelope");
        OK(MPI_Type_get_contents_c(t, 4, 0, 8, 2, ints, addrs, large, types));
        CHECK(ints[0] == 1 && ints[1] == MPI_ORDER_C && large[0] == 9 && large[1] == 4 &&
                  large[2] == 2,
              "subarray_c contents");
        OK(MPI_Type_free(&t));

        OK(MPI_Type_create_struct_c(1, (MPI_Count[]){2}, (MPI_Count[]){8}, &inner, &t));
        OK(MPI_Type_get_envelope_c(t, &ni_c, &na_c, &nl_c, &nd_c, &comb));
        CHECK(comb == MPI_COMBINER_STRUCT && ni_c == 0 && na_c == 0 && nl_c == 3 && nd_c == 1,
              "struct_c envelope");
        OK(MPI_Type_get_contents_c(t, 0, 0, 8, 2, ints, addrs, large, types));
        CHECK(large[0] == 1 && large[1] == 2 && large[2] == 8 && types[0] != inner,
              "struct_c contents");
        check_same_layout(types[0], inner, "struct_c's type");
        OK(MPI_Type_free(&types[0]));
        OK(MPI_Type_free(&t));
    }
    /* a type made of a freed one keeps it: its contents give a live handle */
    OK(MPI_Type_contiguous(2, inner, &t));
    {
        MPI_Datatype saved, got;
        int n1;

        OK(MPI_Type_dup(inner, &saved));
        OK(MPI_Type_free(&inner));
        OK(MPI_Type_get_contents(t, 1, 0, 1, &n1, NULL, &got));
        check_same_layout(got, saved, "contents after the old type's free");
        OK(MPI_Type_free(&got));
        OK(MPI_Type_free(&saved));
    }
    OK(MPI_Type_free(&t));
}

/* ---- f90 types and MPI_Type_match_size ------------------------------------------------------ */

static void test_sized_types(void)
{
    MPI_Datatype t, again;
    int size, ni, na, nd, comb, ints[2];
    MPI_Aint lb, extent;

    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &t));
    CHECK(t == MPI_INT32_T, "integer of 4 bytes");
    OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 8, &t));
    CHECK(t == MPI_INT64_T, "integer of 8 bytes");
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t));
    CHECK(t == MPI_DOUBLE, "real of 8 bytes");
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 4, &t));
    CHECK(t == MPI_FLOAT, "real of 4 bytes");
    OK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t));
    CHECK(t == MPI_C_DOUBLE_COMPLEX, "complex of 16 bytes");
    CHECK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &t) == MPI_ERR_ARG, "real of 3 bytes");
    CHECK(MPI_Type_match_size(0, 4, &t) == MPI_ERR_ARG, "typeclass 0");

    OK(MPI_Type_create_f90_integer(9, &t));
    OK(MPI_Type_size(t, &size));
    CHECK(size == 4, "f90 integer of range 9: %d bytes", size);
    OK(MPI_Type_create_f90_integer(9, &again));
    CHECK(again == t, "the same f90 integer twice gives two handles");
    OK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_F90_INTEGER && ni == 1 && na == 0 && nd == 0,
          "f90 integer envelope");
    OK(MPI_Type_get_contents(t, 1, 0, 0, ints, NULL, NULL));
    CHECK(ints[0] == 9, "f90 integer contents %d", ints[0]);
    CHECK(MPI_Type_free(&again) == MPI_ERR_TYPE, "an f90 type freed");
    {
        int32_t in[2] = {3, -4}, inout[2] = {5, 6};

        OK(MPI_Reduce_local(in, inout, 2, t, MPI_SUM));
        CHECK(inout[0] == 8 && inout[1] == 2, "MPI_SUM on the f90 integer");
    }
    OK(MPI_Type_create_f90_integer(2, &t));
    OK(MPI_Type_size(t, &size));
    CHECK(size == 1, "f90 integer of range 2: %d bytes", size);
    CHECK(MPI_Type_create_f90_integer(19, &t) == MPI_ERR_ARG, "f90 integer of range 19");

    OK(MPI_Type_create_f90_real(15, MPI_UNDEFINED, &t));
    OK(MPI_Type_size(t, &size));
    OK(MPI_Type_get_extent(t, &lb, &extent));
    CHECK(size == 8 && lb == 0 && extent == 8, "f90 real of precision 15: %d bytes", size);
    OK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    OK(MPI_Type_get_contents(t, 2, 0, 0, ints, NULL, NULL));
    CHECK(comb == MPI_COMBINER_F90_REAL && ni == 2 && ints[0] == 15 && ints[1] == MPI_UNDEFINED,
          "f90 real envelope and contents");
    OK(MPI_Type_create_f90_real(MPI_UNDEFINED, 30, &t));
    OK(MPI_Type_size(t, &size));
    CHECK(size == 4, "f90 real of range 30: %d bytes", size);
    OK(MPI_Type_create_f90_complex(6, 30, &t));
    OK(MPI_Type_size(t, &size));
    OK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    CHECK(size == 8 && comb == MPI_COMBINER_F90_COMPLEX, "f90 complex (6, 30): %d bytes", size);
    CHECK(MPI_Type_create_f90_real(40, MPI_UNDEFINED, &t) == MPI_ERR_ARG, "precision 40");
    CHECK(MPI_Type_create_f90_real(MPI_UNDEFINED, MPI_UNDEFINED, &t) == MPI_ERR_ARG,
          "neither precision nor range");
}

/* ---- external32 ------------------------------------------------------------------------------ */

/* MPI_Pack_external of @count @type at @in must give the @n bytes @want,
 * and unpacking them must give back the @type_bytes bytes at @in. */
static void check_external(const void *in, int count, MPI_Datatype type, const unsigned char *want,
                           int n, size_t type_bytes, const char *what)
{
    unsigned char buf[256], back[256];
    MPI_Aint pos = 0, size = -1;

    OK(MPI_Pack_external_size("external32", count, type, &size));
    CHECK(size == n, "%s: external size %ld, expected %d", what, (long)size, n);
    OK(MPI_Pack_external("external32", in, count, type, buf, sizeof(buf), &pos));
    CHECK(pos == n, "%s: position %ld after packing, expected %d", what, (long)pos, n);
    for (int i = 0; i < n && i < (int)pos; i++) {
        CHECK(buf[i] == want[i], "%s: byte %d is %02x, expected %02x", what, i, buf[i], want[i]);
        if (buf[i] != want[i])
            return;
    }
    memset(back, 0, sizeof(back));
    pos = 0;
    OK(MPI_Unpack_external("external32", buf, n, &pos, back, count, type));
    CHECK(pos == n && memcmp(back, in, type_bytes) == 0, "%s: unpacking does not give the values",
          what);
}

static void test_external32(void)
{
    {
        int v[2] = {0x01020304, -2};
        const unsigned char want[8] = {1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe};

        check_external(v, 2, MPI_INT, want, 8, sizeof(v), "MPI_INT");
    }
    {
        long v[2] = {5, -3};
        const unsigned char want[8] = {0, 0, 0, 5, 0xff, 0xff, 0xff, 0xfd};
        long big = 1L << 40;
        unsigned char buf[8];
        MPI_Aint pos = 0;

        check_external(v, 2, MPI_LONG, want, 8, sizeof(v), "MPI_LONG (4 bytes in external32)");
        if (sizeof(long) > 4)
            CHECK(MPI_Pack_external("external32", &big, 1, MPI_LONG, buf, 8, &pos) ==
                      MPI_ERR_CONVERSION,
                  "a long beyond 32 bits");
    }
    {
        double d = 1.0;
        float f = -2.0f;
        const unsigned char wd[8] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, wf[4] = {0xc0, 0, 0, 0};

        check_external(&d, 1, MPI_DOUBLE, wd, 8, sizeof(d), "MPI_DOUBLE");
        check_external(&f, 1, MPI_FLOAT, wf, 4, sizeof(f), "MPI_FLOAT");
    }
    {
        long double v[2] = {1.0L, -2.5L};
        unsigned char want[32] = {0x3f, 0xff};

        want[16] = 0xc0;
        want[17] = 0x00;
        want[18] = 0x40;
        check_external(v, 2, MPI_LONG_DOUBLE, want, 32, 10, "MPI_LONG_DOUBLE (a quadruple)");
        check_external(&v[1], 1, MPI_LONG_DOUBLE, want + 16, 16, 10, "MPI_LONG_DOUBLE -2.5");
    }
    {
        wchar_t w = L'A';
        const unsigned char want[2] = {0, 0x41};

        check_external(&w, 1, MPI_WCHAR, want, 2, sizeof(w), "MPI_WCHAR (2 bytes)");
    }
    {
        int pair[2] = {1, -1};
        const unsigned char want[8] = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff};

        check_external(pair, 1, MPI_2INT, want, 8, sizeof(pair), "MPI_2INT");
    }
    {
        /* a struct of char, int, double: 13 bytes, no padding */
        struct {
            char c;
            int i;
            double d;
        } v[2] = {{'x', 7, 2.0}, {'y', -1, -0.5}};
        const unsigned char want[26] = {'x', 0,    0,    0,    7,    0x40, 0,    0, 0, 0, 0, 0, 0,
                                        'y', 0xff, 0xff, 0xff, 0xff, 0xbf, 0xe0, 0, 0, 0, 0, 0, 0};
        MPI_Datatype t;
        MPI_Aint disps[3] = {0, 4, 8};

        OK(MPI_Type_create_struct(3, (int[]){1, 1, 1}, disps,
                                  (MPI_Datatype[]){MPI_CHAR, MPI_INT, MPI_DOUBLE}, &t));
        OK(MPI_Type_commit(&t));
        /* the padding is not data: compare the fields only */
        {
            unsigned char buf[64];
            MPI_Aint pos = 0, size;

            OK(MPI_Pack_external_size("external32", 2, t, &size));
            CHECK(size == 26, "struct: external size %ld", (long)size);
            OK(MPI_Pack_external("external32", v, 2, t, buf, sizeof(buf), &pos));
            CHECK(pos == 26 && memcmp(buf, want, 26) == 0, "struct: external bytes");
            memset(v, 0, sizeof(v));
            pos = 0;
            OK(MPI_Unpack_external("external32", buf, 26, &pos, v, 2, t));
            CHECK(v[0].c == 'x' && v[0].i == 7 && v[0].d == 2.0 && v[1].c == 'y' && v[1].i == -1 &&
                      v[1].d == -0.5,
                  "struct: unpacked values");
            pos = 0;
            CHECK(MPI_Unpack_external("external32", buf, 20, &pos, v, 2, t) == MPI_ERR_TRUNCATE,
                  "unpacking 26 bytes from 20");
        }
        OK(MPI_Type_free(&t));
    }
    {
        /* a vector of shorts: the strided elements only */
        short v[6] = {1, -1, 2, -1, 0x0304, -1};
        const unsigned char want[6] = {0, 1, 0, 2, 3, 4};
        MPI_Datatype t;
        unsigned char buf[16];
        MPI_Aint pos = 0;

        OK(MPI_Type_vector(3, 1, 2, MPI_SHORT, &t));
        OK(MPI_Type_commit(&t));
        OK(MPI_Pack_external("external32", v, 1, t, buf, sizeof(buf), &pos));
        CHECK(pos == 6 && memcmp(buf, want, 6) == 0, "vector of shorts: external bytes");
        OK(MPI_Type_free(&t));
    }
    {
        int v = 1;
        unsigned char buf[8];
        MPI_Aint pos = 0, size;

        CHECK(MPI_Pack_external("native", &v, 1, MPI_INT, buf, 8, &pos) ==
                  MPI_ERR_UNSUPPORTED_DATAREP,
              "datarep native");
        CHECK(MPI_Pack_external_size("internal", 1, MPI_INT, &size) == MPI_ERR_UNSUPPORTED_DATAREP,
              "datarep internal");
        CHECK(MPI_Pack_external("external32", &v, 1, MPI_INT, buf, 3, &pos) == MPI_ERR_ARG,
              "4 bytes into 3");
    }
}

/* ---- the hardware and ABI infos, MPI_Pcontrol ------------------------------------------------ */

/* @info's value of @key must be @want. */
static void check_info_value(MPI_Info info, const char *key, const char *want)
{
    char value[MPI_MAX_INFO_VAL];
    int buflen = (int)sizeof(value), flag = 0;

    OK(MPI_Info_get_string(info, key, &buflen, value, &flag));
    CHECK(flag && strcmp(value, want) == 0, "info key %s: flag %d value \"%s\", expected \"%s\"",
          key, flag, flag ? value : "", want);
}

static void test_inquiries(void)
{
    MPI_Info info = MPI_INFO_NULL;
    char size[8];
    int nkeys;

    OK(MPI_Abi_get_info(&info));
    snprintf(size, sizeof(size), "%zu", sizeof(MPI_Aint));
    check_info_value(info, "mpi_aint_size", size);
    snprintf(size, sizeof(size), "%zu", sizeof(MPI_Count));
    check_info_value(info, "mpi_count_size", size);
    snprintf(size, sizeof(size), "%zu", sizeof(MPI_Offset));
    check_info_value(info, "mpi_offset_size", size);
    OK(MPI_Info_free(&info));

    OK(MPI_Get_hw_resource_info(&info));
    check_info_value(info, "mpi_hw_resource_type", "mpi_shared_memory");
    OK(MPI_Info_get_nkeys(info, &nkeys));
    CHECK(nkeys == 1, "the hardware info has %d keys", nkeys);
    OK(MPI_Info_free(&info));
    CHECK(MPI_Get_hw_resource_info(NULL) == MPI_ERR_ARG, "MPI_Get_hw_resource_info(NULL)");

    OK(MPI_Pcontrol(0));
    OK(MPI_Pcontrol(1));
    OK(MPI_Pcontrol(2, "more", 3));
}

/* ---- handles given back in the order the types die ------------------------------------------- */

/* An indexed type with a leading zero-length block inside a struct; the
 * indexed type freed before the struct, a new type made, and the struct
 * remade with the handle value the program kept: the implementations
 * whose handles are their objects give the inner type's handle back last
 * (when the struct that uses it goes), so the new type gets it, and
 * programs written against them (a broad conformance suite's did) remake
 * the struct with the value they kept.  Postbox once gave the handles
 * back at MPI_Type_free, and that struct was refused: "is not a
 * datatype". */
/* @st (committed here) takes the 5 ints @want of the buffer 0, 1, 2, ...
 * and spans ints 2 to 8 (lb 2 ints, extent 7). */
static void check_struct_layout(MPI_Datatype st, const int *want, const char *what)
{
    int buf[16], got[8], pos = 0;
    MPI_Aint lb, extent;

    for (int i = 0; i < 16; i++)
        buf[i] = i;
    OK(MPI_Type_commit(&st));
    OK(MPI_Type_get_extent(st, &lb, &extent));
    CHECK(lb == 2 * (MPI_Aint)sizeof(int) && extent == 7 * (MPI_Aint)sizeof(int),
          "%s: lb %ld extent %ld", what, (long)lb, (long)extent);
    OK(MPI_Pack(buf, 1, st, got, sizeof(got), &pos, MPI_COMM_SELF));
    CHECK(pos == 5 * (int)sizeof(int) && memcmp(got, want, 5 * sizeof(int)) == 0,
          "%s: %d bytes packed", what, pos);
}

static void test_struct_of_indexed_with_leading_empty_block(void)
{
    int len[3] = {0, 4, 0}, disp[3] = {1000, 2, 1000}, want[5] = {2, 3, 4, 5, 8};
    MPI_Aint adisp[3] = {0, 8 * sizeof(int), 0};
    MPI_Datatype idx, st, types[2];

    OK(MPI_Type_indexed(3, len, disp, MPI_INT, &idx));
    OK(MPI_Type_commit(&idx));
    types[0] = idx;
    types[1] = MPI_INT;
    OK(MPI_Type_create_struct(2, (int[]){1, 1}, adisp, types, &st));
    {
        MPI_Aint lb, extent;

        OK(MPI_Type_get_extent(idx, &lb, &extent));
        CHECK(lb == 2 * (MPI_Aint)sizeof(int) && extent == 4 * (MPI_Aint)sizeof(int),
              "indexed with a leading empty block: lb %ld extent %ld", (long)lb, (long)extent);
    }
    check_struct_layout(st, want, "struct of the indexed type");
    OK(MPI_Type_free(&idx));
    /* freed, its handle names nothing, though the struct still uses the type */
    CHECK(MPI_Type_commit(&types[0]) == MPI_ERR_TYPE, "a freed handle in use by a struct is valid");
    OK(MPI_Type_free(&st));

    adisp[0] = PTRDIFF_MAX;
    adisp[1] = 2 * sizeof(int);
    adisp[2] = PTRDIFF_MAX;
    OK(MPI_Type_create_hindexed(3, len, adisp, MPI_INT, &idx));
    CHECK(idx == types[0], "the new type did not get the handle freed last");
    OK(MPI_Type_commit(&idx));
    adisp[0] = 0;
    adisp[1] = 8 * sizeof(int);
    if (MPI_Type_create_struct(2, (int[]){1, 1}, adisp, types, &st) != MPI_SUCCESS) {
        CHECK(0, "the struct of the handle value kept is refused");
        OK(MPI_Type_free(&idx));
        return;
    }
    check_struct_layout(st, want, "struct of the hindexed type");
    OK(MPI_Type_free(&st));
    OK(MPI_Type_free(&idx));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    test_freed_keyval_still_names_its_attributes();
    test_logical_ops_on_address_types();
    test_type_attributes();
    test_subarray();
    test_darray();
    test_envelope_and_contents();
    test_sized_types();
    test_external32();
    test_inquiries();
    test_struct_of_indexed_with_leading_empty_block();
    {
        int ret = check_summary("datatype_more", MPI_COMM_WORLD, 99);

        MPI_Finalize();
        return ret;
    }
}
