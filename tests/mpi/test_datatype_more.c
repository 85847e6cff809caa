/* Datatypes through the library, on the standard API only (run under
 * `postbox run`, every rank the same checks): subarray and darray layouts
 * against hand-computed bytes, the envelope and contents of every
 * combiner, datatype attributes, MPI_Type_match_size and the f90 types,
 * external32 bytes, the hardware and ABI infos; and the reductions of
 * MPI_AINT, MPI_OFFSET and MPI_COUNT with the logical ops, and keyvals
 * freed while attributes use them (bugs of issue 16). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    {
        int ret = check_summary("datatype_more", MPI_COMM_WORLD, 99);

        MPI_Finalize();
        return ret;
    }
}
