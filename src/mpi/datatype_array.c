/*
 * The datatypes of arrays and of sized kinds (MPI-5.0 sections 5.1.3 and
 * 19.1.9): MPI_Type_create_subarray and _darray, built as nested vectors
 * and resized types by the datatype engine; MPI_Type_create_f90_integer,
 * _real, _complex and MPI_Type_match_size, answered with C types.
 * Shares the checks and the contents records of datatype.c
 * (datatype_build.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi/datatype_build.h"
#include "mpi/engine/handle.h"

/* ---- arrays: subarray and darray (MPI-5.0 section 5.1.3, 5.1.4) ------------------------ */

/* The indexes of one dimension an array type holds: @nruns runs of @len
 * indexes (the last ones cut at @gsize), the first at @first, each next
 * one @step further. */
typedef struct {
    MPI_Count gsize, first, len, step, nruns;
} dim_runs_t;

/* @t resized to lb 0 and @extent, as a new engine type of @combiner
 * (one reference) in *@out.  @return MPI_SUCCESS, MPI_ERR_NO_MEM,
 * MPI_ERR_ARG (too large). */
static int array_resized(pb_datatype_t *t, int combiner, MPI_Aint extent, pb_datatype_t **out)
{
    pb_eng_type_builder_t b;
    int ret = pb_eng_type_builder_begin(&b, combiner);

    if (ret != MPI_SUCCESS)
        return ret;
    pb_eng_type_builder_add(&b, 0, t, 1);
    b.has_marks = 1;
    b.mark_lo = 0;
    b.mark_hi = extent;
    return pb_eng_type_builder_end(&b, 0, out);
}

/* The array type of @ndims dimensions (@dims, fastest first) of elements of
 * @old, as the standard's equivalent constructors give it: each dimension
 * takes the one before, resized to that dimension's full size, at its
 * runs' indexes; the whole is resized to lb 0 and the array's extent.
 * @return MPI_SUCCESS, MPI_ERR_NO_MEM, MPI_ERR_ARG (too large). */
static int array_type(const dim_runs_t *dims, int ndims, pb_datatype_t *old, int combiner,
                      pb_datatype_t **out)
{
    pb_datatype_t *cur = old, *elem = old, *next;
    MPI_Aint stride = old->ub - old->lb;
    int ret = MPI_SUCCESS;

    pb_eng_type_retain(old);
    for (int d = 0; d < ndims && ret == MPI_SUCCESS; d++) {
        const dim_runs_t *dim = &dims[d];
        pb_eng_type_builder_t b;

        if (d > 0) {
            ret = array_resized(cur, MPI_COMBINER_RESIZED, stride, &elem);
            if (ret != MPI_SUCCESS)
                break;
        } else {
            pb_eng_type_retain(elem);
        }
        ret = pb_eng_type_builder_begin(&b, MPI_COMBINER_HINDEXED);
        for (MPI_Count k = 0; k < dim->nruns && ret == MPI_SUCCESS && b.status == MPI_SUCCESS;
             k++) {
            MPI_Count start = dim->first + k * dim->step;
            MPI_Count len = dim->gsize - start < dim->len ? dim->gsize - start : dim->len;
            MPI_Aint disp;

            if (__builtin_mul_overflow((MPI_Aint)start, stride, &disp))
                b.status = MPI_ERR_ARG;
            else
                pb_eng_type_builder_add(&b, disp, elem, len);
        }
        if (ret == MPI_SUCCESS)
            ret = pb_eng_type_builder_end(&b, 0, &next);
        pb_eng_type_release(elem);
        if (ret != MPI_SUCCESS)
            break;
        pb_eng_type_release(cur);
        cur = next;
        if (__builtin_mul_overflow(stride, (MPI_Aint)dim->gsize, &stride))
            ret = MPI_ERR_ARG;
    }
    if (ret == MPI_SUCCESS)
        ret = array_resized(cur, combiner, stride, out);
    pb_eng_type_release(cur);
    return ret;
}

static int order_arg(int order, const char *func)
{
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", order);
    return MPI_SUCCESS;
}

/* Dimension @i of @ndims in the fastest-first order of @order. */
static int fastest_first(int order, int ndims, int i)
{
    return order == MPI_ORDER_FORTRAN ? i : ndims - 1 - i;
}

static int type_subarray(int large, int ndims, const void *sizes, const void *subsizes,
                         const void *starts, int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *func = "MPI_Type_create_subarray";
    pb_dt_arr_kind_t kind = large ? PB_DT_ARR_COUNT : PB_DT_ARR_INT;
    pb_datatype_t *old, *t;
    dim_runs_t *dims;
    pb_dt_rec_t r;
    int ret;

    if (ndims <= 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "ndims %d is not positive", ndims);
    if (sizes == NULL || subsizes == NULL || starts == NULL)
        return pb_dt_ptr_arg(NULL, func,
                             sizes == NULL      ? "array_of_sizes"
                             : subsizes == NULL ? "array_of_subsizes"
                                                : "array_of_starts");
    for (int i = 0; i < ndims; i++) {
        MPI_Count size = pb_dt_arr_get(sizes, kind, i), sub = pb_dt_arr_get(subsizes, kind, i),
                  start = pb_dt_arr_get(starts, kind, i);

        if (size <= 0 || sub < 0 || sub > size || start < 0 || start > size - sub)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "dimension %d: size %lld, subsize %lld, start %lld (the standard "
                                "needs size > 0 and 0 <= start <= start + subsize <= size)",
                                i, (long long)size, (long long)sub, (long long)start);
    }
    if ((ret = order_arg(order, func)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    dims = calloc((size_t)ndims, sizeof(*dims));
    if (dims == NULL)
        return pb_dt_build_error(MPI_ERR_NO_MEM, func);
    for (int i = 0; i < ndims; i++) {
        int d = fastest_first(order, ndims, i);

        dims[i] = (dim_runs_t){.gsize = pb_dt_arr_get(sizes, kind, d),
                               .first = pb_dt_arr_get(starts, kind, d),
                               .len = pb_dt_arr_get(subsizes, kind, d),
                               .nruns = 1};
    }
    ret = array_type(dims, ndims, old, MPI_COMBINER_SUBARRAY, &t);
    free(dims);
    if (ret == MPI_SUCCESS)
        ret = pb_dt_handle_of(t, newtype);
    if (ret != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    r = large ? pb_dt_rec_begin(1, 2, 0, 3 * (MPI_Count)ndims, 1)
              : pb_dt_rec_begin(0, 3 * (MPI_Count)ndims + 2, 0, 0, 1);
    pb_dt_rec_int(&r, ndims);
    pb_dt_rec_array(&r, 0, sizes, kind, ndims);
    pb_dt_rec_array(&r, 0, subsizes, kind, ndims);
    pb_dt_rec_array(&r, 0, starts, kind, ndims);
    pb_dt_rec_int(&r, order);
    return pb_dt_rec_end(func, &r, &oldtype, newtype);
}

/* The part of an @ndims-dimensional array of @oldtype elements (sizes
 * @array_of_sizes) that starts at @array_of_starts and spans
 * @array_of_subsizes, in @order (MPI_ORDER_C: the last dimension varies
 * fastest; MPI_ORDER_FORTRAN: the first); lb 0 and the whole array's
 * extent.  @return MPI_SUCCESS; MPI_ERR_ARG (ndims <= 0, a NULL array, a
 * size <= 0, a part outside the array, a bad order, newtype NULL, too
 * large), MPI_ERR_TYPE, MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_create_subarray_c(int ndims, const MPI_Count array_of_sizes[],
                                          const MPI_Count array_of_subsizes[],
                                          const MPI_Count array_of_starts[], int order,
                                          MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_subarray(1, ndims, array_of_sizes, array_of_subsizes, array_of_starts, order,
                         oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_subarray_c, PMPI_Type_create_subarray_c);

/* MPI_Type_create_subarray_c with int arrays; same errors. */
PB_EXPORT int PMPI_Type_create_subarray(int ndims, const int array_of_sizes[],
                                        const int array_of_subsizes[], const int array_of_starts[],
                                        int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_subarray(0, ndims, array_of_sizes, array_of_subsizes, array_of_starts, order,
                         oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_subarray, PMPI_Type_create_subarray);

/* The runs of dimension @i of a darray for the process at @coord of
 * @psize, or a raised MPI_ERR_ARG. */
static int darray_dim(const char *func, int i, MPI_Count gsize, int distrib, int darg, int psize,
                      int coord, dim_runs_t *dim)
{
    MPI_Count b;

    if (gsize <= 0 || psize <= 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "dimension %d: gsize %lld and psize %d must be positive", i,
                            (long long)gsize, psize);
    if (darg != MPI_DISTRIBUTE_DFLT_DARG && darg <= 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "dimension %d: darg %d is neither positive nor "
                            "MPI_DISTRIBUTE_DFLT_DARG",
                            i, darg);
    *dim = (dim_runs_t){.gsize = gsize};
    switch (distrib) {
    case MPI_DISTRIBUTE_NONE:
        if (psize != 1)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "dimension %d is MPI_DISTRIBUTE_NONE over %d processes (needs 1)",
                                i, psize);
        dim->len = gsize;
        dim->nruns = 1;
        return MPI_SUCCESS;
    case MPI_DISTRIBUTE_BLOCK:
        b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
        if (b * psize < gsize)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "dimension %d: blocks of %lld over %d processes cover less than "
                                "gsize %lld",
                                i, (long long)b, psize, (long long)gsize);
        dim->first = (MPI_Count)coord * b;
        dim->len = b;
        dim->nruns = dim->first < gsize ? 1 : 0;
        return MPI_SUCCESS;
    case MPI_DISTRIBUTE_CYCLIC:
        b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        dim->first = (MPI_Count)coord * b;
        dim->len = b;
        dim->step = b * psize;
        dim->nruns = dim->first < gsize ? (gsize - dim->first + dim->step - 1) / dim->step : 0;
        return MPI_SUCCESS;
    default:
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "dimension %d: distribution %d is none of MPI_DISTRIBUTE_BLOCK, "
                            "_CYCLIC, _NONE",
                            i, distrib);
    }
}

static int type_darray(int large, int size, int rank, int ndims, const void *gsizes,
                       const int distribs[], const int dargs[], const int psizes[], int order,
                       MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *func = "MPI_Type_create_darray";
    pb_dt_arr_kind_t kind = large ? PB_DT_ARR_COUNT : PB_DT_ARR_INT;
    pb_datatype_t *old, *t;
    dim_runs_t *dims;
    MPI_Count procs = 1;
    pb_dt_rec_t r;
    int ret, rest;

    if (size <= 0 || rank < 0 || rank >= size)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "rank %d is not a rank of a group of size %d", rank, size);
    if (ndims <= 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "ndims %d is not positive", ndims);
    if (gsizes == NULL || distribs == NULL || dargs == NULL || psizes == NULL)
        return pb_dt_ptr_arg(NULL, func, "an array argument");
    for (int i = 0; i < ndims; i++) {
        if (psizes[i] <= 0 || __builtin_mul_overflow(procs, (MPI_Count)psizes[i], &procs))
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "array_of_psizes[%d] = %d is not positive", i, psizes[i]);
    }
    if (procs != size)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "the process grid holds %lld processes, not size %d", (long long)procs,
                            size);
    if ((ret = order_arg(order, func)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    dims = calloc((size_t)ndims, sizeof(*dims));
    if (dims == NULL)
        return pb_dt_build_error(MPI_ERR_NO_MEM, func);
    /* the processes are numbered in row-major order whatever @order */
    rest = rank;
    for (int d = ndims - 1; d >= 0; d--) {
        int coord = rest % psizes[d], i;

        rest /= psizes[d];
        for (i = 0; fastest_first(order, ndims, i) != d; i++)
            ;
        ret = darray_dim(func, d, pb_dt_arr_get(gsizes, kind, d), distribs[d], dargs[d], psizes[d],
                         coord, &dims[i]);
        if (ret != MPI_SUCCESS) {
            free(dims);
            return ret;
        }
    }
    ret = array_type(dims, ndims, old, MPI_COMBINER_DARRAY, &t);
    free(dims);
    if (ret == MPI_SUCCESS)
        ret = pb_dt_handle_of(t, newtype);
    if (ret != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    r = large ? pb_dt_rec_begin(1, 3 * (MPI_Count)ndims + 4, 0, ndims, 1)
              : pb_dt_rec_begin(0, 4 * (MPI_Count)ndims + 4, 0, 0, 1);
    pb_dt_rec_int(&r, size);
    pb_dt_rec_int(&r, rank);
    pb_dt_rec_int(&r, ndims);
    pb_dt_rec_array(&r, 0, gsizes, kind, ndims);
    for (int i = 0; i < ndims; i++)
        pb_dt_rec_int(&r, distribs[i]);
    for (int i = 0; i < ndims; i++)
        pb_dt_rec_int(&r, dargs[i]);
    for (int i = 0; i < ndims; i++)
        pb_dt_rec_int(&r, psizes[i]);
    pb_dt_rec_int(&r, order);
    return pb_dt_rec_end(func, &r, &oldtype, newtype);
}

/* The part process @rank of @size holds of an @ndims-dimensional array of
 * @oldtype elements (sizes @array_of_gsizes) distributed over a process
 * grid @array_of_psizes (processes in row-major order): per dimension
 * MPI_DISTRIBUTE_BLOCK (blocks of darg, MPI_DISTRIBUTE_DFLT_DARG: the
 * gsize split evenly), _CYCLIC (blocks of darg, default 1, dealt round
 * robin) or _NONE (not distributed, psize 1); elements in @order; lb 0 and
 * the whole array's extent.  @return MPI_SUCCESS; MPI_ERR_ARG (a bad rank,
 * size, ndims, grid, distribution, darg, order; NULL arrays or newtype;
 * too large), MPI_ERR_TYPE, MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_create_darray_c(int size, int rank, int ndims,
                                        const MPI_Count array_of_gsizes[],
                                        const int array_of_distribs[], const int array_of_dargs[],
                                        const int array_of_psizes[], int order,
                                        MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_darray(1, size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs,
                       array_of_psizes, order, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_darray_c, PMPI_Type_create_darray_c);

/* MPI_Type_create_darray_c with int gsizes; same errors. */
PB_EXPORT int PMPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                                      const int array_of_distribs[], const int array_of_dargs[],
                                      const int array_of_psizes[], int order, MPI_Datatype oldtype,
                                      MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_darray(0, size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs,
                       array_of_psizes, order, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_darray, PMPI_Type_create_darray);

/* ---- sized types: f90 and MPI_Type_match_size (MPI-5.0 section 19.1.9) ------------------ */

/* The f90 types made so far: each (combiner, p, r) gets one handle for the
 * library's life, as the standard's predefined types do. */
static struct {
    pthread_mutex_t lock;
    int n;
    struct {
        int combiner, p, r;
        MPI_Datatype handle;
    } types[64];
} f90 = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The predefined C type of the f90 kind with precision @p and range @r
 * (MPI_UNDEFINED: not given): the smallest that has them, as Fortran's
 * SELECTED_INT_KIND / SELECTED_REAL_KIND pick (8-, 16-, 32-, 64-bit
 * integers; float, double, long double), or MPI_DATATYPE_NULL. */
static MPI_Datatype f90_match(int combiner, int p, int r)
{
    static const struct {
        int p, r;
        MPI_Datatype real, complex;
    } reals[] = {
        {6, 37, MPI_FLOAT, MPI_C_FLOAT_COMPLEX},
        {15, 307, MPI_DOUBLE, MPI_C_DOUBLE_COMPLEX},
        {18, 4931, MPI_LONG_DOUBLE, MPI_C_LONG_DOUBLE_COMPLEX},
    };
    static const struct {
        int r;
        MPI_Datatype type;
    } ints[] = {{2, MPI_INT8_T}, {4, MPI_INT16_T}, {9, MPI_INT32_T}, {18, MPI_INT64_T}};

    if (combiner == MPI_COMBINER_F90_INTEGER) {
        for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
            if (r <= ints[i].r)
                return ints[i].type;
        }
        return MPI_DATATYPE_NULL;
    }
    for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
        if ((p == MPI_UNDEFINED || p <= reals[i].p) && (r == MPI_UNDEFINED || r <= reals[i].r))
            return combiner == MPI_COMBINER_F90_REAL ? reals[i].real : reals[i].complex;
    }
    return MPI_DATATYPE_NULL;
}

/* The handle of the f90 type (@combiner, @p, @r), made on first use.
 * @return MPI_SUCCESS or an error raised. */
static int type_f90(const char *func, int combiner, int p, int r, MPI_Datatype *newtype)
{
    MPI_Datatype base = f90_match(combiner, p, r), h = MPI_DATATYPE_NULL;
    pb_eng_type_builder_t b;
    pb_dt_rec_t rec;
    int ret = MPI_SUCCESS, i;

    if ((ret = pb_dt_ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if ((combiner != MPI_COMBINER_F90_INTEGER && p == MPI_UNDEFINED && r == MPI_UNDEFINED) ||
        (combiner != MPI_COMBINER_F90_INTEGER && p != MPI_UNDEFINED && p < 0) ||
        (combiner == MPI_COMBINER_F90_INTEGER && r == MPI_UNDEFINED) ||
        (r != MPI_UNDEFINED && r < 0) || base == MPI_DATATYPE_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "no type has precision %d and range %d (MPI_UNDEFINED is %d)", p, r,
                            MPI_UNDEFINED);
    pthread_mutex_lock(&f90.lock);
    for (i = 0; i < f90.n; i++) {
        if (f90.types[i].combiner == combiner && f90.types[i].p == p && f90.types[i].r == r) {
            h = f90.types[i].handle;
            goto out;
        }
    }
    if (f90.n == (int)(sizeof(f90.types) / sizeof(f90.types[0]))) {
        ret = pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                           "more than %d distinct f90 types asked for", f90.n);
        goto out;
    }
    if ((ret = pb_eng_type_builder_begin(&b, combiner)) != MPI_SUCCESS) {
        ret = pb_dt_build_error(ret, func);
        goto out;
    }
    pb_eng_type_builder_add(&b, 0, pb_mpi_datatype(base), 1);
    b.t->committed = 1;
    if ((ret = pb_dt_handle_new(&b, 0, &h)) != MPI_SUCCESS) {
        ret = pb_dt_build_error(ret, func);
        goto out;
    }
    h->f90 = 1;
    snprintf(h->type->name, sizeof(h->type->name), "%s(%d, %d)", func, p, r);
    rec = pb_dt_rec_begin(0, combiner == MPI_COMBINER_F90_INTEGER ? 1 : 2, 0, 0, 0);
    if (combiner != MPI_COMBINER_F90_INTEGER)
        pb_dt_rec_int(&rec, p);
    pb_dt_rec_int(&rec, r);
    if ((ret = pb_dt_rec_end(func, &rec, NULL, &h)) != MPI_SUCCESS)
        goto out;
    f90.types[f90.n].combiner = combiner;
    f90.types[f90.n].p = p;
    f90.types[f90.n].r = r;
    f90.types[f90.n++].handle = h;
out:
    pthread_mutex_unlock(&f90.lock);
    if (ret == MPI_SUCCESS)
        *newtype = h;
    return ret;
}

/* The predefined type of Fortran's INTEGER(SELECTED_INT_KIND(@r)): a C
 * integer of 1, 2, 4 or 8 bytes (the Fortran types are not supported),
 * the same handle for the same @r; MPI_Type_get_envelope gives
 * MPI_COMBINER_F90_INTEGER and its contents @r.  It cannot be freed.
 * @return MPI_SUCCESS; MPI_ERR_ARG (no such integer: r > 18, newtype NULL). */
PB_EXPORT int PMPI_Type_create_f90_integer(int r, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_f90("MPI_Type_create_f90_integer", MPI_COMBINER_F90_INTEGER, MPI_UNDEFINED, r,
                    newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_f90_integer, PMPI_Type_create_f90_integer);

/* The predefined type of Fortran's REAL(SELECTED_REAL_KIND(@p, @r)) (either
 * may be MPI_UNDEFINED, not both): float, double or long double.
 * @return MPI_SUCCESS; MPI_ERR_ARG (no such real, newtype NULL). */
PB_EXPORT int PMPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_f90("MPI_Type_create_f90_real", MPI_COMBINER_F90_REAL, p, r, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_f90_real, PMPI_Type_create_f90_real);

/* The complex of MPI_Type_create_f90_real's real (MPI_C_FLOAT_COMPLEX,
 * ...); same errors. */
PB_EXPORT int PMPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_f90("MPI_Type_create_f90_complex", MPI_COMBINER_F90_COMPLEX, p, r, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_f90_complex, PMPI_Type_create_f90_complex);

/* The predefined type of @typeclass (MPI_TYPECLASS_INTEGER, _REAL,
 * _COMPLEX) whose elements are @size bytes: MPI_INT8_T .. MPI_INT64_T;
 * MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE; MPI_C_FLOAT_COMPLEX,
 * MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX (the C types: Postbox
 * has no Fortran ones).  @return MPI_SUCCESS; MPI_ERR_ARG (an unknown
 * typeclass, no type of that size, datatype NULL). */
PB_EXPORT int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_match_size";
    static const MPI_Datatype integers[] = {MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T};
    static const MPI_Datatype reals[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE};
    static const MPI_Datatype complexes[] = {MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
                                             MPI_C_LONG_DOUBLE_COMPLEX};
    const MPI_Datatype *list;
    size_t n;
    int ret;

    if ((ret = pb_dt_ptr_arg(datatype, func, "datatype")) != MPI_SUCCESS)
        return ret;
    switch (typeclass) {
    case MPI_TYPECLASS_INTEGER: list = integers, n = 4; break;
    case MPI_TYPECLASS_REAL: list = reals, n = 3; break;
    case MPI_TYPECLASS_COMPLEX: list = complexes, n = 3; break;
    default:
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "typeclass %d is none of MPI_TYPECLASS_INTEGER, _REAL, _COMPLEX",
                            typeclass);
    }
    for (size_t i = 0; i < n; i++) {
        if (pb_mpi_datatype(list[i])->size == (size_t)size) {
            *datatype = list[i];
            return MPI_SUCCESS;
        }
    }
    return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "typeclass %d has no type of %d bytes",
                        typeclass, size);
}
PB_MPI_WEAK_ALIAS(MPI_Type_match_size, PMPI_Type_match_size);
