/*
 * Datatypes (MPI-5.0 chapter 5): the predefined C datatypes of the standard
 * ABI, the type constructors (subarray, darray and the sized types are in
 * datatype_array.c), the queries, with their argument checks
 * (MPI_Pack/MPI_Unpack are in datatype_pack.c).  The layouts and the pack
 * engine are the datatype engine's (src/mpi/engine/typerep.h).
 *
 * Handles.  A predefined handle is its ABI value (below 0x400), whose
 * layout the engine keeps.  A created handle is the address of a small
 * object of the handle registry (handle.h) holding a reference on the
 * layout: it is only read once the registry has found it live, so a freed
 * or made-up handle is reported as MPI_ERR_TYPE and never read, and a
 * pending send that holds the layout outlives MPI_Type_free.  The Fortran
 * datatypes are not supported: they are not datatypes here
 * (pb_mpi_datatype returns NULL).
 *
 * These functions need no MPI_Init (they communicate with no one); they may
 * be called before it and after MPI_Finalize.
 */
#include "mpi/datatype.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/attr.h"
#include "mpi/datatype_build.h"
#include "mpi/engine/handle.h"

/* The predefined datatype handles are 0x200-0x3ff (the Fortran ones
 * included). */
#define HANDLE_VALUES_FIRST 0x200
#define HANDLE_VALUES_END 0x400

pb_datatype_t *pb_mpi_datatype_created(MPI_Datatype handle)
{
    if (!pb_eng_handle_valid(PB_ENG_HANDLE_DATATYPE, handle))
        return NULL;
    return handle->type;
}

int pb_mpi_datatype_check(MPI_Datatype handle)
{
    pb_datatype_t *t = pb_mpi_datatype(handle);

    if (t == NULL || !pb_eng_type_is_committed(t))
        return MPI_ERR_TYPE;
    return MPI_SUCCESS;
}

/* Finish the type of @b (see pb_eng_type_builder_end) and give it a
 * handle, in *@newtype.  @return MPI_SUCCESS, MPI_ERR_NO_MEM, MPI_ERR_ARG
 * (too large); on failure everything is freed. */
int pb_dt_handle_new(pb_eng_type_builder_t *b, int pad_to_align, MPI_Datatype *newtype)
{
    pb_datatype_t *t;
    int ret = pb_eng_type_builder_end(b, pad_to_align, &t);

    return ret == MPI_SUCCESS ? pb_dt_handle_of(t, newtype) : ret;
}

/* Give the engine type @t (one reference, taken over) a handle in
 * *@newtype.  @return MPI_SUCCESS or MPI_ERR_NO_MEM (@t released). */
int pb_dt_handle_of(pb_datatype_t *t, MPI_Datatype *newtype)
{
    MPI_Datatype h = pb_eng_handle_new(PB_ENG_HANDLE_DATATYPE, sizeof(*h));

    if (h == NULL) {
        pb_eng_type_release(t);
        return MPI_ERR_NO_MEM;
    }
    h->type = t;
    t->handle = h;
    *newtype = h;
    return MPI_SUCCESS;
}

/* Give back the handle @h and its reference: the handle the type was made
 * with is retired (it names nothing from now on) and given back when the
 * type goes (pb_eng_type_release); another (of MPI_Type_get_contents) at
 * once. */
static void type_handle_delete(MPI_Datatype h)
{
    pb_datatype_t *t = h->type;

    if (t->handle == h)
        pb_eng_handle_retire(PB_ENG_HANDLE_DATATYPE, h);
    else
        pb_eng_handle_delete(PB_ENG_HANDLE_DATATYPE, h);
    pb_eng_type_release(t);
}

/* The datatype @handle (argument @what of @func) or a raised MPI_ERR_TYPE. */
int pb_dt_type_arg(MPI_Datatype handle, const char *func, const char *what, pb_datatype_t **t_p)
{
    uintptr_t value = (uintptr_t)handle;

    *t_p = pb_mpi_datatype(handle);
    if (*t_p != NULL)
        return MPI_SUCCESS;
    if (handle == MPI_DATATYPE_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func, "%s is MPI_DATATYPE_NULL", what);
    if (value >= HANDLE_VALUES_FIRST && value < HANDLE_VALUES_END)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                            "%s (0x%x) is no datatype Postbox supports (the Fortran ones are not)",
                            what, (unsigned)value);
    return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                        "%s (%p) is not a datatype (freed, or never created)", what,
                        (void *)handle);
}

int pb_dt_count_arg(MPI_Count count, const char *func, const char *what)
{
    if (count < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "%s %lld is negative", what,
                            (long long)count);
    return MPI_SUCCESS;
}

int pb_dt_ptr_arg(const void *p, const char *func, const char *what)
{
    if (p == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "%s is NULL", what);
    return MPI_SUCCESS;
}

int pb_dt_position_arg(const char *func, const char *size_name, MPI_Count size,
                       const MPI_Count *position)
{
    int ret;

    if ((ret = pb_dt_ptr_arg(position, func, "position")) != MPI_SUCCESS)
        return ret;
    if (size < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "%s %lld is negative", size_name,
                            (long long)size);
    if (*position < 0 || *position > size)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "*position %lld is outside the buffer of %lld bytes",
                            (long long)*position, (long long)size);
    return MPI_SUCCESS;
}

int pb_dt_packed_room(const char *func, int packing, MPI_Count size, MPI_Count position,
                      MPI_Count bytes, const void *buf)
{
    if (bytes > size - position) {
        if (packing)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "outsize %lld is too small: %lld bytes of data from position "
                                "%lld",
                                (long long)size, (long long)bytes, (long long)position);
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TRUNCATE, func,
                            "insize %lld holds %lld bytes after position %lld, the data needs "
                            "%lld",
                            (long long)size, (long long)(size - position), (long long)position,
                            (long long)bytes);
    }
    if (bytes > 0 && buf == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_BUFFER, func, "%s is NULL",
                            packing ? "outbuf" : "inbuf");
    return MPI_SUCCESS;
}

int pb_dt_build_error(int ret, const char *func)
{
    if (ret == MPI_ERR_NO_MEM)
        return pb_mpi_raise(MPI_COMM_NULL, ret, func, "out of memory for the new datatype");
    return pb_mpi_raise(MPI_COMM_NULL, ret, func,
                        "the new datatype's size, extent or displacements overflow");
}

MPI_Count pb_dt_arr_get(const void *arr, pb_dt_arr_kind_t kind, MPI_Count i)
{
    switch (kind) {
    case PB_DT_ARR_INT: return ((const int *)arr)[i];
    case PB_DT_ARR_AINT: return ((const MPI_Aint *)arr)[i];
    default: return ((const MPI_Count *)arr)[i];
    }
}

/* ---- how a type was made (MPI_Type_get_envelope, MPI_Type_get_contents) ----------------- */

pb_dt_rec_t pb_dt_rec_begin(int large, MPI_Count nints, MPI_Count naddrs, MPI_Count nlarge,
                            MPI_Count ntypes)
{
    return (pb_dt_rec_t){.c = pb_eng_type_contents_new(nints, naddrs, nlarge, ntypes),
                         .large = large};
}

/* Append @v, an address argument when @is_addr. */
static void rec_value(pb_dt_rec_t *r, int is_addr, MPI_Count v)
{
    if (r->c == NULL)
        return;
    if (r->large && r->nl < r->c->nlarge)
        r->c->large[r->nl++] = v;
    else if (!r->large && is_addr && r->na < r->c->naddrs)
        r->c->addrs[r->na++] = (MPI_Aint)v;
    else if (!r->large && !is_addr && r->ni < r->c->nints)
        r->c->ints[r->ni++] = (int)v;
}

void pb_dt_rec_array(pb_dt_rec_t *r, int is_addr, const void *arr, pb_dt_arr_kind_t kind,
                     MPI_Count n)
{
    for (MPI_Count i = 0; i < n; i++)
        rec_value(r, is_addr, pb_dt_arr_get(arr, kind, i));
}

/* An int argument that stays an int in the large-count forms (ndims,
 * order, the distributions of a darray). */
void pb_dt_rec_int(pb_dt_rec_t *r, int v)
{
    if (r->c != NULL && r->ni < r->c->nints)
        r->c->ints[r->ni++] = v;
}

/* Attach the record of @r, with the types @types (checked by the
 * constructor), to *@newtype, just made by @func.  Out of memory: free the
 * new type.  @return MPI_SUCCESS or MPI_ERR_NO_MEM raised. */
int pb_dt_rec_end(const char *func, pb_dt_rec_t *r, const MPI_Datatype *types,
                  MPI_Datatype *newtype)
{
    pb_eng_type_contents_t *c = r->c;

    if (c == NULL) {
        type_handle_delete(*newtype);
        *newtype = MPI_DATATYPE_NULL;
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func,
                            "out of memory for the new datatype's description");
    }
    for (MPI_Count i = 0; i < c->ntypes; i++) {
        c->types[i] = pb_mpi_datatype(types[i]);
        pb_eng_type_retain(c->types[i]);
        c->handles[i] = (uintptr_t)types[i] < PB_ENG_HANDLE_INT_BASE ? types[i] : MPI_DATATYPE_NULL;
    }
    (*newtype)->type->contents = c;
    return MPI_SUCCESS;
}

/* Record the arguments of the vector family (contiguous: @count only;
 * hvector: @stride an address). */
static int rec_vector(const char *func, int combiner, int large, MPI_Count count,
                      MPI_Count blocklen, MPI_Count stride, MPI_Datatype oldtype,
                      MPI_Datatype *newtype)
{
    int contiguous = combiner == MPI_COMBINER_CONTIGUOUS;
    int hvector = combiner == MPI_COMBINER_HVECTOR;
    MPI_Count n = contiguous ? 1 : 3;
    pb_dt_rec_t r =
        large ? pb_dt_rec_begin(1, 0, 0, n, 1) : pb_dt_rec_begin(0, n - hvector, hvector, 0, 1);

    rec_value(&r, 0, count);
    if (!contiguous) {
        rec_value(&r, 0, blocklen);
        rec_value(&r, hvector, stride);
    }
    return pb_dt_rec_end(func, &r, &oldtype, newtype);
}

/* Record the arguments of the indexed family: @blocklens (NULL: the one
 * @blocklen of the _block forms), @displs (addresses for the h forms). */
static int rec_indexed(const char *func, int large, MPI_Count count, const void *blocklens,
                       MPI_Count blocklen, const void *displs, pb_dt_arr_kind_t kind,
                       int displs_addr, pb_dt_arr_kind_t displs_kind, MPI_Datatype oldtype,
                       MPI_Datatype *newtype)
{
    MPI_Count nb = blocklens != NULL ? count : 1;
    pb_dt_rec_t r = large ? pb_dt_rec_begin(1, 0, 0, 1 + nb + count, 1)
                          : pb_dt_rec_begin(0, 1 + nb + (displs_addr ? 0 : count),
                                            displs_addr ? count : 0, 0, 1);

    rec_value(&r, 0, count);
    if (blocklens != NULL)
        pb_dt_rec_array(&r, 0, blocklens, kind, count);
    else
        rec_value(&r, 0, blocklen);
    pb_dt_rec_array(&r, displs_addr, displs, displs_kind, count);
    return pb_dt_rec_end(func, &r, &oldtype, newtype);
}

/* ---- the constructors ---------------------------------------------------------------------- */

/* The vector family: @count blocks of @blocklen elements of @oldtype, the
 * block starts @stride apart (in elements of oldtype's extent when
 * @stride_in_elements, otherwise in bytes). */
static int type_vector(const char *func, int combiner, MPI_Count count, MPI_Count blocklen,
                       MPI_Count stride, int stride_in_elements, MPI_Datatype oldtype,
                       MPI_Datatype *newtype)
{
    pb_datatype_t *old;
    pb_eng_type_builder_t b;
    MPI_Aint step;
    MPI_Count elems;
    int ret;

    if ((ret = pb_dt_count_arg(count, func, "count")) != MPI_SUCCESS)
        return ret;
    if (blocklen < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "blocklength %lld is negative",
                            (long long)blocklen);
    if ((ret = pb_dt_type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    step = (MPI_Aint)stride;
    if (stride_in_elements && __builtin_mul_overflow((MPI_Aint)stride, old->ub - old->lb, &step))
        return pb_dt_build_error(MPI_ERR_ARG, func);
    if (__builtin_mul_overflow(count, blocklen, &elems) ||
        __builtin_mul_overflow(elems, (MPI_Count)old->size, &elems) || elems > PTRDIFF_MAX)
        return pb_dt_build_error(MPI_ERR_ARG, func);
    if ((ret = pb_eng_type_builder_begin(&b, combiner)) != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    pb_eng_type_builder_add_groups(&b, step, count, old, blocklen);
    ret = pb_dt_handle_new(&b, 0, newtype);
    return ret == MPI_SUCCESS ? ret : pb_dt_build_error(ret, func);
}

/* The indexed family: block i is @blocklens[i] (or @blocklen when
 * @blocklens is NULL) elements of @oldtype at @displs[i], in elements of
 * oldtype's extent when @displs_in_elements, otherwise in bytes. */
static int type_indexed(const char *func, int combiner, MPI_Count count, const void *blocklens,
                        MPI_Count blocklen, const void *displs, pb_dt_arr_kind_t kind,
                        int displs_in_elements, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    pb_datatype_t *old;
    pb_eng_type_builder_t b;
    MPI_Count i;
    int ret;

    if ((ret = pb_dt_count_arg(count, func, "count")) != MPI_SUCCESS)
        return ret;
    if (count > 0 && blocklens == NULL && blocklen < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "blocklength %lld is negative",
                            (long long)blocklen);
    if (count > 0 && displs == NULL)
        return pb_dt_ptr_arg(NULL, func, "array_of_displacements");
    for (i = 0; blocklens != NULL && i < count; i++) {
        if (pb_dt_arr_get(blocklens, kind, i) < 0)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "array_of_blocklengths[%lld] = %lld is negative", (long long)i,
                                (long long)pb_dt_arr_get(blocklens, kind, i));
    }
    if ((ret = pb_dt_type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_eng_type_builder_begin(&b, combiner)) != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    for (i = 0; i < count && b.status == MPI_SUCCESS; i++) {
        MPI_Aint disp = (MPI_Aint)pb_dt_arr_get(displs, kind, i);

        if (displs_in_elements && __builtin_mul_overflow(disp, old->ub - old->lb, &disp))
            b.status = MPI_ERR_ARG;
        else
            pb_eng_type_builder_add(&b, disp, old,
                                    blocklens ? pb_dt_arr_get(blocklens, kind, i) : blocklen);
    }
    ret = pb_dt_handle_new(&b, 0, newtype);
    return ret == MPI_SUCCESS ? ret : pb_dt_build_error(ret, func);
}

static int type_struct(const char *func, MPI_Count count, const void *blocklens, const void *displs,
                       pb_dt_arr_kind_t kind, const MPI_Datatype types[], MPI_Datatype *newtype)
{
    pb_eng_type_builder_t b;
    MPI_Count i;
    pb_dt_rec_t r;
    int ret, large;

    if ((ret = pb_dt_count_arg(count, func, "count")) != MPI_SUCCESS)
        return ret;
    if (count > 0 && blocklens == NULL)
        return pb_dt_ptr_arg(NULL, func, "array_of_blocklengths");
    if (count > 0 && displs == NULL)
        return pb_dt_ptr_arg(NULL, func, "array_of_displacements");
    if (count > 0 && types == NULL)
        return pb_dt_ptr_arg(NULL, func, "array_of_types");
    for (i = 0; i < count; i++) {
        pb_datatype_t *t;
        char what[48];

        if (pb_dt_arr_get(blocklens, kind, i) < 0)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "array_of_blocklengths[%lld] = %lld is negative", (long long)i,
                                (long long)pb_dt_arr_get(blocklens, kind, i));
        snprintf(what, sizeof(what), "array_of_types[%lld]", (long long)i);
        if ((ret = pb_dt_type_arg(types[i], func, what, &t)) != MPI_SUCCESS)
            return ret;
    }
    if ((ret = pb_dt_ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_eng_type_builder_begin(&b, MPI_COMBINER_STRUCT)) != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    /* in the MPI_Aint/MPI_Count forms the displacements are MPI_Aint sized;
     * the int form has int blocklengths and MPI_Aint displacements */
    for (i = 0; i < count && b.status == MPI_SUCCESS; i++) {
        MPI_Aint disp = kind == PB_DT_ARR_INT ? ((const MPI_Aint *)displs)[i]
                                              : (MPI_Aint)pb_dt_arr_get(displs, kind, i);

        pb_eng_type_builder_add(&b, disp, pb_mpi_datatype(types[i]),
                                pb_dt_arr_get(blocklens, kind, i));
    }
    ret = pb_dt_handle_new(&b, 1, newtype);
    if (ret != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    large = kind == PB_DT_ARR_COUNT;
    r = large ? pb_dt_rec_begin(1, 0, 0, 1 + 2 * count, count)
              : pb_dt_rec_begin(0, 1 + count, count, 0, count);
    rec_value(&r, 0, count);
    pb_dt_rec_array(&r, 0, blocklens, kind, count);
    pb_dt_rec_array(&r, 1, displs, large ? PB_DT_ARR_COUNT : PB_DT_ARR_AINT, count);
    return pb_dt_rec_end(func, &r, types, newtype);
}

/* type_vector, then its arguments recorded (@large: a _c form). */
static int vector_rec(int large, const char *func, int combiner, MPI_Count count,
                      MPI_Count blocklen, MPI_Count stride, int stride_in_elements,
                      MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    int ret =
        type_vector(func, combiner, count, blocklen, stride, stride_in_elements, oldtype, newtype);

    if (ret != MPI_SUCCESS)
        return ret;
    return rec_vector(func, combiner, large, count, blocklen, stride, oldtype, newtype);
}

/* type_indexed, then its arguments recorded (MPI_Count arrays: a _c
 * form). */
static int indexed_rec(const char *func, int combiner, MPI_Count count, const void *blocklens,
                       MPI_Count blocklen, const void *displs, pb_dt_arr_kind_t kind,
                       int displs_in_elements, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    int ret = type_indexed(func, combiner, count, blocklens, blocklen, displs, kind,
                           displs_in_elements, oldtype, newtype);

    if (ret != MPI_SUCCESS)
        return ret;
    return rec_indexed(func, kind == PB_DT_ARR_COUNT, count, blocklens, blocklen, displs, kind,
                       !displs_in_elements, kind, oldtype, newtype);
}

/* A new datatype of @count contiguous elements of @oldtype.
 * @return MPI_SUCCESS; MPI_ERR_COUNT (count < 0), MPI_ERR_TYPE (oldtype),
 * MPI_ERR_ARG (newtype NULL, too large), MPI_ERR_NO_MEM. */
static int type_contiguous(int large, MPI_Count count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *func = "MPI_Type_contiguous";
    int ret = type_vector(func, MPI_COMBINER_CONTIGUOUS, count < 0 ? count : 1,
                          count < 0 ? 0 : count, 0, 0, oldtype, newtype);

    if (ret != MPI_SUCCESS)
        return ret;
    return rec_vector(func, MPI_COMBINER_CONTIGUOUS, large, count, 0, 0, oldtype, newtype);
}

PB_EXPORT int PMPI_Type_contiguous_c(MPI_Count count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_contiguous(1, count, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_contiguous_c, PMPI_Type_contiguous_c);

/* MPI_Type_contiguous_c with an int count; same errors. */
PB_EXPORT int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_contiguous(0, count, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_contiguous, PMPI_Type_contiguous);

/* @count blocks of @blocklength elements of @oldtype, @stride elements
 * apart.  @return MPI_SUCCESS; MPI_ERR_COUNT (count < 0), MPI_ERR_ARG
 * (blocklength < 0, newtype NULL, too large), MPI_ERR_TYPE, MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_vector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                                 MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return vector_rec(1, "MPI_Type_vector", MPI_COMBINER_VECTOR, count, blocklength, stride, 1,
                      oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_vector_c, PMPI_Type_vector_c);

/* MPI_Type_vector_c with int arguments; same errors. */
PB_EXPORT int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                               MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return vector_rec(0, "MPI_Type_vector", MPI_COMBINER_VECTOR, count, blocklength, stride, 1,
                      oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_vector, PMPI_Type_vector);

/* Like MPI_Type_vector_c with @stride in bytes; same errors. */
PB_EXPORT int PMPI_Type_create_hvector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                                         MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return vector_rec(1, "MPI_Type_create_hvector", MPI_COMBINER_HVECTOR, count, blocklength,
                      stride, 0, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hvector_c, PMPI_Type_create_hvector_c);

/* MPI_Type_create_hvector_c with int counts; same errors. */
PB_EXPORT int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
                                       MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return vector_rec(0, "MPI_Type_create_hvector", MPI_COMBINER_HVECTOR, count, blocklength,
                      stride, 0, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hvector, PMPI_Type_create_hvector);

/* Blocks of array_of_blocklengths[i] elements of @oldtype at
 * array_of_displacements[i] elements of its extent.  @return MPI_SUCCESS;
 * MPI_ERR_COUNT (count < 0), MPI_ERR_ARG (a NULL array, a negative
 * blocklength, newtype NULL, too large), MPI_ERR_TYPE, MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_indexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                  const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                  MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    if (count > 0 && array_of_blocklengths == NULL)
        return pb_dt_ptr_arg(NULL, "MPI_Type_indexed", "array_of_blocklengths");
    return indexed_rec("MPI_Type_indexed", MPI_COMBINER_INDEXED, count, array_of_blocklengths, 0,
                       array_of_displacements, PB_DT_ARR_COUNT, 1, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_indexed_c, PMPI_Type_indexed_c);

/* MPI_Type_indexed_c with int arrays; same errors. */
PB_EXPORT int PMPI_Type_indexed(int count, const int array_of_blocklengths[],
                                const int array_of_displacements[], MPI_Datatype oldtype,
                                MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    if (count > 0 && array_of_blocklengths == NULL)
        return pb_dt_ptr_arg(NULL, "MPI_Type_indexed", "array_of_blocklengths");
    return indexed_rec("MPI_Type_indexed", MPI_COMBINER_INDEXED, count, array_of_blocklengths, 0,
                       array_of_displacements, PB_DT_ARR_INT, 1, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_indexed, PMPI_Type_indexed);

/* Like MPI_Type_indexed_c with displacements in bytes; same errors. */
PB_EXPORT int PMPI_Type_create_hindexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                          const MPI_Count array_of_displacements[],
                                          MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    if (count > 0 && array_of_blocklengths == NULL)
        return pb_dt_ptr_arg(NULL, "MPI_Type_create_hindexed", "array_of_blocklengths");
    return indexed_rec("MPI_Type_create_hindexed", MPI_COMBINER_HINDEXED, count,
                       array_of_blocklengths, 0, array_of_displacements, PB_DT_ARR_COUNT, 0,
                       oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hindexed_c, PMPI_Type_create_hindexed_c);

/* MPI_Type_create_hindexed with int blocklengths and MPI_Aint
 * displacements; same errors. */
PB_EXPORT int PMPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                                        const MPI_Aint array_of_displacements[],
                                        MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_create_hindexed";
    pb_datatype_t *old;
    pb_eng_type_builder_t b;
    int i, ret;

    if ((ret = pb_dt_count_arg(count, func, "count")) != MPI_SUCCESS)
        return ret;
    if (count > 0 && array_of_blocklengths == NULL)
        return pb_dt_ptr_arg(NULL, func, "array_of_blocklengths");
    if (count > 0 && array_of_displacements == NULL)
        return pb_dt_ptr_arg(NULL, func, "array_of_displacements");
    for (i = 0; i < count; i++) {
        if (array_of_blocklengths[i] < 0)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "array_of_blocklengths[%d] = %d is negative", i,
                                array_of_blocklengths[i]);
    }
    if ((ret = pb_dt_type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_eng_type_builder_begin(&b, MPI_COMBINER_HINDEXED)) != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    for (i = 0; i < count; i++)
        pb_eng_type_builder_add(&b, array_of_displacements[i], old, array_of_blocklengths[i]);
    ret = pb_dt_handle_new(&b, 0, newtype);
    if (ret != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    return rec_indexed(func, 0, count, array_of_blocklengths, 0, array_of_displacements,
                       PB_DT_ARR_INT, 1, PB_DT_ARR_AINT, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hindexed, PMPI_Type_create_hindexed);

/* Blocks of @blocklength elements of @oldtype at array_of_displacements[i]
 * elements of its extent; errors as MPI_Type_indexed_c. */
PB_EXPORT int PMPI_Type_create_indexed_block_c(MPI_Count count, MPI_Count blocklength,
                                               const MPI_Count array_of_displacements[],
                                               MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return indexed_rec("MPI_Type_create_indexed_block", MPI_COMBINER_INDEXED_BLOCK, count, NULL,
                       blocklength, array_of_displacements, PB_DT_ARR_COUNT, 1, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_indexed_block_c, PMPI_Type_create_indexed_block_c);

/* MPI_Type_create_indexed_block_c with int arguments; same errors. */
PB_EXPORT int PMPI_Type_create_indexed_block(int count, int blocklength,
                                             const int array_of_displacements[],
                                             MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return indexed_rec("MPI_Type_create_indexed_block", MPI_COMBINER_INDEXED_BLOCK, count, NULL,
                       blocklength, array_of_displacements, PB_DT_ARR_INT, 1, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_indexed_block, PMPI_Type_create_indexed_block);

/* Like MPI_Type_create_indexed_block_c with displacements in bytes. */
PB_EXPORT int PMPI_Type_create_hindexed_block_c(MPI_Count count, MPI_Count blocklength,
                                                const MPI_Count array_of_displacements[],
                                                MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return indexed_rec("MPI_Type_create_hindexed_block", MPI_COMBINER_HINDEXED_BLOCK, count, NULL,
                       blocklength, array_of_displacements, PB_DT_ARR_COUNT, 0, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hindexed_block_c, PMPI_Type_create_hindexed_block_c);

/* MPI_Type_create_hindexed_block_c with an int count and MPI_Aint
 * displacements. */
PB_EXPORT int PMPI_Type_create_hindexed_block(int count, int blocklength,
                                              const MPI_Aint array_of_displacements[],
                                              MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return indexed_rec("MPI_Type_create_hindexed_block", MPI_COMBINER_HINDEXED_BLOCK, count, NULL,
                       blocklength, array_of_displacements, PB_DT_ARR_AINT, 0, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hindexed_block, PMPI_Type_create_hindexed_block);

/* Blocks of array_of_blocklengths[i] elements of array_of_types[i] at byte
 * displacements array_of_displacements[i]; the extent is padded to the
 * largest alignment of the basic types inside (as C pads a struct) unless
 * a part was resized.  @return MPI_SUCCESS; MPI_ERR_COUNT (count < 0),
 * MPI_ERR_ARG (a NULL array, a negative blocklength, newtype NULL, too
 * large), MPI_ERR_TYPE (a bad type in the array), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_create_struct_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                        const MPI_Count array_of_displacements[],
                                        const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_struct("MPI_Type_create_struct", count, array_of_blocklengths,
                       array_of_displacements, PB_DT_ARR_COUNT, array_of_types, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_struct_c, PMPI_Type_create_struct_c);

/* MPI_Type_create_struct_c with int blocklengths and MPI_Aint
 * displacements; same errors. */
PB_EXPORT int PMPI_Type_create_struct(int count, const int array_of_blocklengths[],
                                      const MPI_Aint array_of_displacements[],
                                      const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_struct("MPI_Type_create_struct", count, array_of_blocklengths,
                       array_of_displacements, PB_DT_ARR_INT, array_of_types, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_struct, PMPI_Type_create_struct);

/* @oldtype with lower bound @lb and extent @extent (the type map of oldtype
 * with markers at lb and lb + extent).  @return MPI_SUCCESS; MPI_ERR_TYPE,
 * MPI_ERR_ARG (newtype NULL, lb + extent overflows), MPI_ERR_NO_MEM. */
static int type_resized(int large, MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                        MPI_Datatype *newtype)
{
    const char *func = "MPI_Type_create_resized";
    pb_datatype_t *old;
    pb_eng_type_builder_t b;
    MPI_Aint ub;
    pb_dt_rec_t r;
    int ret;

    if ((ret = pb_dt_type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if (lb < INTPTR_MIN || lb > INTPTR_MAX || extent < INTPTR_MIN || extent > INTPTR_MAX ||
        __builtin_add_overflow((MPI_Aint)lb, (MPI_Aint)extent, &ub))
        return pb_dt_build_error(MPI_ERR_ARG, func);
    if ((ret = pb_eng_type_builder_begin(&b, MPI_COMBINER_RESIZED)) != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    pb_eng_type_builder_add(&b, 0, old, 1);
    b.has_marks = 1;
    b.mark_lo = (MPI_Aint)lb;
    b.mark_hi = ub;
    ret = pb_dt_handle_new(&b, 0, newtype);
    if (ret != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    r = large ? pb_dt_rec_begin(1, 0, 0, 2, 1) : pb_dt_rec_begin(0, 0, 2, 0, 1);
    rec_value(&r, 1, lb);
    rec_value(&r, 1, extent);
    return pb_dt_rec_end(func, &r, &oldtype, newtype);
}

/* @oldtype with lower bound @lb and extent @extent.  @return MPI_SUCCESS;
 * MPI_ERR_TYPE, MPI_ERR_ARG (newtype NULL, lb + extent overflows),
 * MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_create_resized_c(MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                                         MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_resized(1, oldtype, lb, extent, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_resized_c, PMPI_Type_create_resized_c);

/* MPI_Type_create_resized_c with MPI_Aint bounds; same errors. */
PB_EXPORT int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                                       MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_resized(0, oldtype, lb, extent, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_resized, PMPI_Type_create_resized);

/* A new datatype with the type map, bounds and committed state of
 * @oldtype (not its name), and the attributes its keyvals' copy callbacks
 * give.  @return MPI_SUCCESS; MPI_ERR_TYPE, MPI_ERR_ARG (newtype NULL),
 * MPI_ERR_NO_MEM, the error of a copy callback. */
/* MPI_Type_dup, with the attributes copied through their callbacks when
 * @with_attrs (the program's call) or not (the library's own copy). */
static int type_dup(const char *func, MPI_Datatype oldtype, MPI_Datatype *newtype, int with_attrs)
{
    MPI_Datatype dup;
    pb_datatype_t *old;
    pb_dt_rec_t r;
    pb_eng_type_builder_t b;
    int ret;

    if ((ret = pb_dt_type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_eng_type_builder_begin(&b, MPI_COMBINER_DUP)) != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    pb_eng_type_builder_add(&b, 0, old, 1);
    b.t->committed = old->committed;
    ret = pb_dt_handle_new(&b, 0, &dup);
    if (ret != MPI_SUCCESS)
        return pb_dt_build_error(ret, func);
    r = pb_dt_rec_begin(0, 0, 0, 0, 1);
    if ((ret = pb_dt_rec_end(func, &r, &oldtype, &dup)) != MPI_SUCCESS)
        return ret;
    ret = with_attrs ? pb_mpi_type_attr_copy(oldtype, dup) : MPI_SUCCESS;
    if (ret != MPI_SUCCESS) {
        type_handle_delete(dup);
        return pb_mpi_raise(MPI_COMM_NULL, ret, func, "an attribute copy callback failed");
    }
    *newtype = dup;
    return MPI_SUCCESS;
}

PB_EXPORT int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    PB_MPI_THREAD_GUARD;

    return type_dup("MPI_Type_dup", oldtype, newtype, 1);
}
PB_MPI_WEAK_ALIAS(MPI_Type_dup, PMPI_Type_dup);

int pb_mpi_type_hold(MPI_Datatype type, MPI_Datatype *held)
{
    return type_dup("MPI_Type_dup", type, held, 0);
}

/* The predefined pair type of values of @value_type and indexes of
 * @index_type (MPI_FLOAT and MPI_INT give MPI_FLOAT_INT), or
 * MPI_DATATYPE_NULL when there is none.  @return MPI_SUCCESS; MPI_ERR_TYPE
 * (a bad type), MPI_ERR_ARG (pair_type NULL). */
PB_EXPORT int PMPI_Type_get_value_index(MPI_Datatype value_type, MPI_Datatype index_type,
                                        MPI_Datatype *pair_type)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_get_value_index";
    pb_datatype_t *v, *x;
    int ret;

    if ((ret = pb_dt_type_arg(value_type, func, "value_type", &v)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_type_arg(index_type, func, "index_type", &x)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(pair_type, func, "pair_type")) != MPI_SUCCESS)
        return ret;
    *pair_type = MPI_DATATYPE_NULL;
    if (index_type != MPI_INT)
        return MPI_SUCCESS;
    if (value_type == MPI_FLOAT)
        *pair_type = MPI_FLOAT_INT;
    else if (value_type == MPI_DOUBLE)
        *pair_type = MPI_DOUBLE_INT;
    else if (value_type == MPI_LONG)
        *pair_type = MPI_LONG_INT;
    else if (value_type == MPI_INT)
        *pair_type = MPI_2INT;
    else if (value_type == MPI_SHORT)
        *pair_type = MPI_SHORT_INT;
    else if (value_type == MPI_LONG_DOUBLE)
        *pair_type = MPI_LONG_DOUBLE_INT;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_value_index, PMPI_Type_get_value_index);

/* Commit *@datatype for use in communication (a predefined type is always
 * committed).  @return MPI_SUCCESS; MPI_ERR_ARG (datatype NULL),
 * MPI_ERR_TYPE. */
PB_EXPORT int PMPI_Type_commit(MPI_Datatype *datatype)
{
    PB_MPI_THREAD_GUARD;
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_ptr_arg(datatype, "MPI_Type_commit", "datatype")) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_type_arg(*datatype, "MPI_Type_commit", "*datatype", &t)) != MPI_SUCCESS)
        return ret;
    t->committed = 1;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_commit, PMPI_Type_commit);

/* Free the created datatype *@datatype, after deleting its attributes, and
 * set it to MPI_DATATYPE_NULL; types built from it and pending
 * communication keep working.  @return MPI_SUCCESS; MPI_ERR_ARG (datatype
 * NULL), MPI_ERR_TYPE (not a datatype, or a predefined one), the error of
 * a delete callback (the datatype is not freed then). */
PB_EXPORT int PMPI_Type_free(MPI_Datatype *datatype)
{
    PB_MPI_THREAD_GUARD;
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_ptr_arg(datatype, "MPI_Type_free", "datatype")) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_type_arg(*datatype, "MPI_Type_free", "*datatype", &t)) != MPI_SUCCESS)
        return ret;
    if (t->predefined || (*datatype)->f90)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, "MPI_Type_free",
                            "*datatype is the predefined %s, which cannot be freed",
                            t->predefined ? t->name : "type of an MPI_Type_create_f90_ call");
    ret = pb_mpi_type_attr_delete_all(*datatype);
    if (ret != MPI_SUCCESS)
        return pb_mpi_raise(MPI_COMM_NULL, ret, "MPI_Type_free",
                            "an attribute delete callback failed (the datatype stays)");
    type_handle_delete(*datatype);
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_free, PMPI_Type_free);

/* ---- queries ------------------------------------------------------------------------------- */

/* Bytes of data in one element of @datatype, in *@size.  @return
 * MPI_SUCCESS; MPI_ERR_TYPE, MPI_ERR_ARG (size NULL). */
PB_EXPORT int PMPI_Type_size_c(MPI_Datatype datatype, MPI_Count *size)
{
    PB_MPI_THREAD_GUARD;
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_type_arg(datatype, "MPI_Type_size", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(size, "MPI_Type_size", "size")) != MPI_SUCCESS)
        return ret;
    *size = (MPI_Count)t->size;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_size_c, PMPI_Type_size_c);

/* MPI_Type_size_c, deprecated name. */
PB_EXPORT int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    PB_MPI_THREAD_GUARD;

    return PMPI_Type_size_c(datatype, size);
}
PB_MPI_WEAK_ALIAS(MPI_Type_size_x, PMPI_Type_size_x);

/* MPI_Type_size_c into an int: MPI_UNDEFINED when the size does not fit. */
PB_EXPORT int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count c;
    int ret = PMPI_Type_size_c(datatype, &c);

    if (ret == MPI_SUCCESS && size == NULL)
        return pb_dt_ptr_arg(NULL, "MPI_Type_size", "size");
    if (ret == MPI_SUCCESS)
        *size = c > INT_MAX ? MPI_UNDEFINED : (int)c;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Type_size, PMPI_Type_size);

/* The lower bound and extent of @datatype.  @return MPI_SUCCESS;
 * MPI_ERR_TYPE, MPI_ERR_ARG (a NULL pointer). */
PB_EXPORT int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    PB_MPI_THREAD_GUARD;
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_type_arg(datatype, "MPI_Type_get_extent", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(lb, "MPI_Type_get_extent", "lb")) != MPI_SUCCESS ||
        (ret = pb_dt_ptr_arg(extent, "MPI_Type_get_extent", "extent")) != MPI_SUCCESS)
        return ret;
    *lb = t->lb;
    *extent = t->ub - t->lb;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_extent, PMPI_Type_get_extent);

/* MPI_Type_get_extent with MPI_Count results; same errors. */
PB_EXPORT int PMPI_Type_get_extent_c(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    PB_MPI_THREAD_GUARD;
    MPI_Aint l, e;
    int ret = PMPI_Type_get_extent(datatype, lb ? &l : NULL, extent ? &e : NULL);

    if (ret == MPI_SUCCESS) {
        *lb = l;
        *extent = e;
    }
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_extent_c, PMPI_Type_get_extent_c);

/* MPI_Type_get_extent_c, deprecated name. */
PB_EXPORT int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    PB_MPI_THREAD_GUARD;

    return PMPI_Type_get_extent_c(datatype, lb, extent);
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_extent_x, PMPI_Type_get_extent_x);

/* The offset of the first byte of data and the span of the data of
 * @datatype (0, 0 when it has none).  @return MPI_SUCCESS; MPI_ERR_TYPE,
 * MPI_ERR_ARG (a NULL pointer). */
PB_EXPORT int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb,
                                        MPI_Aint *true_extent)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_get_true_extent";
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_type_arg(datatype, func, "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(true_lb, func, "true_lb")) != MPI_SUCCESS ||
        (ret = pb_dt_ptr_arg(true_extent, func, "true_extent")) != MPI_SUCCESS)
        return ret;
    *true_lb = t->true_lb;
    *true_extent = t->true_ub - t->true_lb;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_true_extent, PMPI_Type_get_true_extent);

/* MPI_Type_get_true_extent with MPI_Count results; same errors. */
PB_EXPORT int PMPI_Type_get_true_extent_c(MPI_Datatype datatype, MPI_Count *true_lb,
                                          MPI_Count *true_extent)
{
    PB_MPI_THREAD_GUARD;
    MPI_Aint l, e;
    int ret = PMPI_Type_get_true_extent(datatype, true_lb ? &l : NULL, true_extent ? &e : NULL);

    if (ret == MPI_SUCCESS) {
        *true_lb = l;
        *true_extent = e;
    }
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_true_extent_c, PMPI_Type_get_true_extent_c);

/* MPI_Type_get_true_extent_c, deprecated name. */
PB_EXPORT int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb,
                                          MPI_Count *true_extent)
{
    PB_MPI_THREAD_GUARD;

    return PMPI_Type_get_true_extent_c(datatype, true_lb, true_extent);
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_true_extent_x, PMPI_Type_get_true_extent_x);

/* How many elements of @datatype the message of @status holds (from its
 * byte count): MPI_UNDEFINED when it does not end on an element; 0 for a
 * type of size 0.  @return MPI_SUCCESS; MPI_ERR_ARG (status or count
 * NULL: MPI_STATUS_IGNORE holds no count), MPI_ERR_TYPE. */
PB_EXPORT int PMPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    PB_MPI_THREAD_GUARD;
    pb_datatype_t *t;
    uint64_t bytes;
    int ret;

    if ((ret = pb_dt_ptr_arg(status, "MPI_Get_count", "status")) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_type_arg(datatype, "MPI_Get_count", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(count, "MPI_Get_count", "count")) != MPI_SUCCESS)
        return ret;
    bytes = pb_mpi_status_bytes(status);
    if (t->size == 0)
        *count = 0;
    else if (bytes % t->size != 0)
        *count = MPI_UNDEFINED;
    else
        *count = (MPI_Count)(bytes / t->size);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Get_count_c, PMPI_Get_count_c);

/* MPI_Get_count_c into an int: MPI_UNDEFINED when it does not fit. */
PB_EXPORT int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count c;
    int ret;

    if (count == NULL)
        return pb_dt_ptr_arg(NULL, "MPI_Get_count", "count");
    ret = PMPI_Get_count_c(status, datatype, &c);
    if (ret == MPI_SUCCESS)
        *count = c > INT_MAX ? MPI_UNDEFINED : (int)c;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Get_count, PMPI_Get_count);

/* How many basic elements (a pair type's value and index count as two)
 * the message of @status holds: MPI_UNDEFINED when it ends inside one.
 * @return MPI_SUCCESS; MPI_ERR_ARG (status or count NULL), MPI_ERR_TYPE. */
PB_EXPORT int PMPI_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    PB_MPI_THREAD_GUARD;
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_ptr_arg(status, "MPI_Get_elements", "status")) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_type_arg(datatype, "MPI_Get_elements", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(count, "MPI_Get_elements", "count")) != MPI_SUCCESS)
        return ret;
    *count = pb_eng_type_elements(t, (size_t)pb_mpi_status_bytes(status));
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Get_elements_c, PMPI_Get_elements_c);

/* MPI_Get_elements_c, deprecated name. */
PB_EXPORT int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    PB_MPI_THREAD_GUARD;

    return PMPI_Get_elements_c(status, datatype, count);
}
PB_MPI_WEAK_ALIAS(MPI_Get_elements_x, PMPI_Get_elements_x);

/* MPI_Get_elements_c into an int: MPI_UNDEFINED when it does not fit. */
PB_EXPORT int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count c;
    int ret;

    if (count == NULL)
        return pb_dt_ptr_arg(NULL, "MPI_Get_elements", "count");
    ret = PMPI_Get_elements_c(status, datatype, &c);
    if (ret == MPI_SUCCESS)
        *count = c > INT_MAX ? MPI_UNDEFINED : (int)c;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Get_elements, PMPI_Get_elements);

/* Name @datatype @type_name (truncated to MPI_MAX_OBJECT_NAME - 1 chars);
 * predefined types may be renamed too.  @return MPI_SUCCESS; MPI_ERR_TYPE,
 * MPI_ERR_ARG (type_name NULL). */
PB_EXPORT int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    PB_MPI_THREAD_GUARD;
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_type_arg(datatype, "MPI_Type_set_name", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(type_name, "MPI_Type_set_name", "type_name")) != MPI_SUCCESS)
        return ret;
    snprintf(t->name, sizeof(t->name), "%s", type_name);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_set_name, PMPI_Type_set_name);

/* The name of @datatype into @type_name (MPI_MAX_OBJECT_NAME chars): the
 * standard's for a predefined one ("MPI_INT"), "" for a created one never
 * named; its length in *@resultlen.  @return MPI_SUCCESS; MPI_ERR_TYPE,
 * MPI_ERR_ARG (a NULL pointer). */
PB_EXPORT int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    PB_MPI_THREAD_GUARD;
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_type_arg(datatype, "MPI_Type_get_name", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(type_name, "MPI_Type_get_name", "type_name")) != MPI_SUCCESS ||
        (ret = pb_dt_ptr_arg(resultlen, "MPI_Type_get_name", "resultlen")) != MPI_SUCCESS)
        return ret;
    *resultlen = snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", t->name);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_name, PMPI_Type_get_name);

/* The integer of @datatype for Fortran and other languages: a predefined
 * handle's ABI value, or for a created one an integer from
 * PB_ENG_HANDLE_INT_BASE up.  A bad handle raises MPI_ERR_TYPE and gives
 * MPI_DATATYPE_NULL's. */
PB_EXPORT int PMPI_Type_toint(MPI_Datatype datatype)
{
    pb_datatype_t *t;

    if ((uintptr_t)datatype < PB_ENG_HANDLE_INT_BASE)
        return (int)(uintptr_t)datatype;
    if (pb_dt_type_arg(datatype, "MPI_Type_toint", "datatype", &t) != MPI_SUCCESS)
        return (int)(uintptr_t)MPI_DATATYPE_NULL;
    return pb_eng_handle_toint(PB_ENG_HANDLE_DATATYPE, datatype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_toint, PMPI_Type_toint);

/* The datatype of integer @datatype (see MPI_Type_toint), or
 * MPI_DATATYPE_NULL when no live datatype has it. */
PB_EXPORT MPI_Datatype PMPI_Type_fromint(int datatype)
{
    void *t;

    if (datatype < 0)
        return MPI_DATATYPE_NULL;
    if (datatype < PB_ENG_HANDLE_INT_BASE)
        return (MPI_Datatype)(uintptr_t)datatype;
    t = pb_eng_handle_fromint(PB_ENG_HANDLE_DATATYPE, datatype);
    return t != NULL ? (MPI_Datatype)t : MPI_DATATYPE_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Type_fromint, PMPI_Type_fromint);

/* ---- how a type was made ------------------------------------------------------------------ */

/* The envelope of @datatype for @func: its combiner and contents (NULL for
 * a predefined one, MPI_COMBINER_NAMED). */
static int envelope_of(MPI_Datatype datatype, const char *func, int *combiner,
                       const pb_eng_type_contents_t **c_p)
{
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_type_arg(datatype, func, "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(combiner, func, "combiner")) != MPI_SUCCESS)
        return ret;
    *c_p = t->predefined ? NULL : t->contents;
    *combiner = t->predefined ? MPI_COMBINER_NAMED : t->combiner;
    return MPI_SUCCESS;
}

/* How many ints, addresses, large counts and datatypes the call that made
 * @datatype took, and which constructor it was (MPI_COMBINER_*;
 * MPI_COMBINER_NAMED and 0s for a predefined type).  @return MPI_SUCCESS;
 * MPI_ERR_TYPE, MPI_ERR_ARG (a NULL pointer). */
PB_EXPORT int PMPI_Type_get_envelope_c(MPI_Datatype datatype, MPI_Count *num_integers,
                                       MPI_Count *num_addresses, MPI_Count *num_large_counts,
                                       MPI_Count *num_datatypes, int *combiner)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_get_envelope";
    const pb_eng_type_contents_t *c;
    int ret;

    if ((ret = pb_dt_ptr_arg(num_integers, func, "num_integers")) != MPI_SUCCESS ||
        (ret = pb_dt_ptr_arg(num_addresses, func, "num_addresses")) != MPI_SUCCESS ||
        (ret = pb_dt_ptr_arg(num_large_counts, func, "num_large_counts")) != MPI_SUCCESS ||
        (ret = pb_dt_ptr_arg(num_datatypes, func, "num_datatypes")) != MPI_SUCCESS)
        return ret;
    if ((ret = envelope_of(datatype, func, combiner, &c)) != MPI_SUCCESS)
        return ret;
    *num_integers = c ? c->nints : 0;
    *num_addresses = c ? c->naddrs : 0;
    *num_large_counts = c ? c->nlarge : 0;
    *num_datatypes = c ? c->ntypes : 0;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_envelope_c, PMPI_Type_get_envelope_c);

/* MPI_Type_get_envelope_c without large counts: MPI_ERR_TYPE for a type
 * made by a large-count constructor (MPI_Type_vector_c, ...), whose large
 * counts this form cannot return; otherwise the same. */
PB_EXPORT int PMPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                                     int *num_datatypes, int *combiner)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_get_envelope";
    MPI_Count ni, na, nl, nd;
    int ret;

    if ((ret = pb_dt_ptr_arg(num_integers, func, "num_integers")) != MPI_SUCCESS ||
        (ret = pb_dt_ptr_arg(num_addresses, func, "num_addresses")) != MPI_SUCCESS ||
        (ret = pb_dt_ptr_arg(num_datatypes, func, "num_datatypes")) != MPI_SUCCESS)
        return ret;
    ret = PMPI_Type_get_envelope_c(datatype, &ni, &na, &nl, &nd, combiner);
    if (ret != MPI_SUCCESS)
        return ret;
    if (nl > 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                            "datatype was made by a large-count constructor: its %lld large "
                            "counts need MPI_Type_get_envelope_c",
                            (long long)nl);
    if (ni > INT_MAX || na > INT_MAX || nd > INT_MAX)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_VALUE_TOO_LARGE, func,
                            "the numbers of arguments do not fit in an int (use "
                            "MPI_Type_get_envelope_c)");
    *num_integers = (int)ni;
    *num_addresses = (int)na;
    *num_datatypes = (int)nd;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_envelope, PMPI_Type_get_envelope);

/* A handle of the type @t recorded with @handle (a predefined one's own
 * handle, else a new handle the program frees), in *@out. */
static int contents_handle(pb_datatype_t *t, MPI_Datatype handle, MPI_Datatype *out)
{
    MPI_Datatype h;

    if (handle != MPI_DATATYPE_NULL) {
        *out = handle;
        return MPI_SUCCESS;
    }
    h = pb_eng_handle_new(PB_ENG_HANDLE_DATATYPE, sizeof(*h));
    if (h == NULL)
        return MPI_ERR_NO_MEM;
    pb_eng_type_retain(t);
    h->type = t;
    *out = h;
    return MPI_SUCCESS;
}

/* The arguments of the call that made @datatype (see
 * MPI_Type_get_envelope_c for their numbers) into the four arrays; the
 * datatypes among them are new handles the program frees with
 * MPI_Type_free, except predefined ones.  @return MPI_SUCCESS;
 * MPI_ERR_TYPE (a bad or predefined datatype), MPI_ERR_ARG (an array
 * smaller than its number, NULL where needed), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_get_contents_c(MPI_Datatype datatype, MPI_Count max_integers,
                                       MPI_Count max_addresses, MPI_Count max_large_counts,
                                       MPI_Count max_datatypes, int array_of_integers[],
                                       MPI_Aint array_of_addresses[],
                                       MPI_Count array_of_large_counts[],
                                       MPI_Datatype array_of_datatypes[])
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_get_contents";
    const pb_eng_type_contents_t *c;
    int combiner, ret;
    MPI_Count i;

    if ((ret = envelope_of(datatype, func, &combiner, &c)) != MPI_SUCCESS)
        return ret;
    if (c == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                            "datatype is predefined (MPI_COMBINER_NAMED): it has no contents");
    struct {
        const char *what;
        MPI_Count max, n;
        const void *arr;
    } arrays[4] =
        {
            {"integers", max_integers, c->nints, array_of_integers},
            {"addresses", max_addresses, c->naddrs, array_of_addresses},
            {"large_counts", max_large_counts, c->nlarge, array_of_large_counts},
            {"datatypes", max_datatypes, c->ntypes, array_of_datatypes},
        },
      *a;

    for (a = arrays; a < arrays + 4; a++) {
        if (a->max < a->n)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "max_%s %lld is less than the %lld the envelope gives", a->what,
                                (long long)a->max, (long long)a->n);
        if (a->n > 0 && a->arr == NULL)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "array_of_%s is NULL", a->what);
    }
    for (i = 0; i < c->ntypes; i++) {
        ret = contents_handle(c->types[i], c->handles[i], &array_of_datatypes[i]);
        if (ret != MPI_SUCCESS) {
            while (i-- > 0) {
                if (c->handles[i] == MPI_DATATYPE_NULL)
                    type_handle_delete(array_of_datatypes[i]);
            }
            return pb_mpi_raise(MPI_COMM_NULL, ret, func, "out of memory for the datatypes");
        }
    }
    if (c->nints > 0)
        memcpy(array_of_integers, c->ints, (size_t)c->nints * sizeof(int));
    if (c->naddrs > 0)
        memcpy(array_of_addresses, c->addrs, (size_t)c->naddrs * sizeof(MPI_Aint));
    if (c->nlarge > 0)
        memcpy(array_of_large_counts, c->large, (size_t)c->nlarge * sizeof(MPI_Count));
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_contents_c, PMPI_Type_get_contents_c);

/* MPI_Type_get_contents_c without large counts: MPI_ERR_TYPE for a type
 * made by a large-count constructor; otherwise the same. */
PB_EXPORT int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                                     int max_datatypes, int array_of_integers[],
                                     MPI_Aint array_of_addresses[],
                                     MPI_Datatype array_of_datatypes[])
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_get_contents";
    const pb_eng_type_contents_t *c;
    int combiner, ret;

    if ((ret = envelope_of(datatype, func, &combiner, &c)) != MPI_SUCCESS)
        return ret;
    if (c != NULL && c->nlarge > 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                            "datatype was made by a large-count constructor: its large counts "
                            "need MPI_Type_get_contents_c");
    return PMPI_Type_get_contents_c(datatype, max_integers, max_addresses, 0, max_datatypes,
                                    array_of_integers, array_of_addresses, NULL,
                                    array_of_datatypes);
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_contents, PMPI_Type_get_contents);

/* ---- addresses ----------------------------------------------------------------------------- */

/* The address of @location as an MPI_Aint (for MPI_BOTTOM-relative
 * types).  @return MPI_SUCCESS; MPI_ERR_ARG (address NULL). */
PB_EXPORT int PMPI_Get_address(const void *location, MPI_Aint *address)
{
    PB_MPI_THREAD_GUARD;
    int ret;

    if ((ret = pb_dt_ptr_arg(address, "MPI_Get_address", "address")) != MPI_SUCCESS)
        return ret;
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Get_address, PMPI_Get_address);

/* @base + @disp as addresses (wrapping, never undefined). */
PB_EXPORT MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}
PB_MPI_WEAK_ALIAS(MPI_Aint_add, PMPI_Aint_add);

/* @addr1 - @addr2 as addresses (wrapping, never undefined). */
PB_EXPORT MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}
PB_MPI_WEAK_ALIAS(MPI_Aint_diff, PMPI_Aint_diff);
