/*
 * What the files of the datatypes share (datatype.c: the constructors, the
 * queries; datatype_array.c: subarray, darray and the sized types;
 * datatype_pack.c: MPI_Pack, MPI_Unpack, MPI_Pack_size):
 * the object behind a created handle, the checks of their arguments, and
 * the record of how a type was made (MPI_Type_get_contents).  Internal to
 * those files.
 */
#ifndef PB_MPI_DATATYPE_BUILD_H
#define PB_MPI_DATATYPE_BUILD_H

#include "mpi/datatype.h"

/* The object behind a created handle. */
struct MPI_ABI_Datatype {
    pb_datatype_t *type; /* one reference */
    int f90;             /* one of MPI_Type_create_f90_*: predefined, never freed */
};

/* Array arguments come as int, MPI_Aint or MPI_Count arrays. */
typedef enum {
    PB_DT_ARR_INT,
    PB_DT_ARR_AINT,
    PB_DT_ARR_COUNT
} pb_dt_arr_kind_t;

/* Element @i of the array @arr of @kind. */
MPI_Count pb_dt_arr_get(const void *arr, pb_dt_arr_kind_t kind, MPI_Count i);

/* Finish the type of @b (see pb_eng_type_builder_end) and give it a
 * handle, in *@newtype.  @return MPI_SUCCESS, MPI_ERR_NO_MEM, MPI_ERR_ARG
 * (too large); on failure everything is freed. */
int pb_dt_handle_new(pb_eng_type_builder_t *b, int pad_to_align, MPI_Datatype *newtype);

/* Give the engine type @t (one reference, taken over) a handle in
 * *@newtype.  @return MPI_SUCCESS or MPI_ERR_NO_MEM (@t released). */
int pb_dt_handle_of(pb_datatype_t *t, MPI_Datatype *newtype);

/* The datatype @handle (argument @what of @func) in *@t_p.  @return
 * MPI_SUCCESS or MPI_ERR_TYPE raised. */
int pb_dt_type_arg(MPI_Datatype handle, const char *func, const char *what, pb_datatype_t **t_p);

/* MPI_SUCCESS, or MPI_ERR_COUNT raised when @count (argument @what of
 * @func) is negative. */
int pb_dt_count_arg(MPI_Count count, const char *func, const char *what);

/* MPI_SUCCESS, or MPI_ERR_ARG raised when @p (argument @what of @func) is
 * NULL. */
int pb_dt_ptr_arg(const void *p, const char *func, const char *what);

/* MPI_SUCCESS, or MPI_ERR_ARG raised for @func when @position is NULL,
 * @size (the buffer's bytes, argument @size_name) is negative, or
 * *@position lies outside the buffer: the checks of MPI_Pack, MPI_Unpack
 * and their external32 forms. */
int pb_dt_position_arg(const char *func, const char *size_name, MPI_Count size,
                       const MPI_Count *position);

/* MPI_SUCCESS, or the error raised for @func when @bytes of packed data do
 * not fit in the buffer of @size bytes after @position (MPI_ERR_ARG when
 * @packing: outsize too small; else MPI_ERR_TRUNCATE: fewer bytes left in
 * inbuf than the data needs), or MPI_ERR_BUFFER when @bytes > 0 and @buf
 * (outbuf when @packing, else inbuf) is NULL. */
int pb_dt_packed_room(const char *func, int packing, MPI_Count size, MPI_Count position,
                      MPI_Count bytes, const void *buf);

/* Raise the error @ret of a type builder (MPI_ERR_NO_MEM, or an overflow)
 * for @func.  @return it. */
int pb_dt_build_error(int ret, const char *func);

/* A contents record being filled in the standard's order.  In the
 * large-count forms (_c) every count and displacement goes to the large
 * counts; in the others, ints to the ints and addresses to the addresses. */
typedef struct {
    pb_eng_type_contents_t *c; /* NULL when out of memory */
    int large;
    MPI_Count ni, na, nl;
} pb_dt_rec_t;

/* A record for a constructor's arguments: @nints ints, @naddrs addresses,
 * @nlarge large counts and @ntypes types (the large-count form when
 * @large).  Out of memory: its c is NULL, and pb_dt_rec_end says so. */
pb_dt_rec_t pb_dt_rec_begin(int large, MPI_Count nints, MPI_Count naddrs, MPI_Count nlarge,
                            MPI_Count ntypes);

/* Append the @n elements of the array @arr of @kind (addresses when
 * @is_addr). */
void pb_dt_rec_array(pb_dt_rec_t *r, int is_addr, const void *arr, pb_dt_arr_kind_t kind,
                     MPI_Count n);

/* Append an int argument that stays an int in the large-count forms. */
void pb_dt_rec_int(pb_dt_rec_t *r, int v);

/* Attach the record @r, with the types @types, to *@newtype, just made by
 * @func.  @return MPI_SUCCESS, or MPI_ERR_NO_MEM raised (the new type is
 * freed). */
int pb_dt_rec_end(const char *func, pb_dt_rec_t *r, const MPI_Datatype *types,
                  MPI_Datatype *newtype);

#endif
