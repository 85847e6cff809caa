/*
 * MPI_Pack, MPI_Unpack and MPI_Pack_size (MPI-5.0 section 5.2): their
 * argument checks, and the copy by the datatype engine's pack and unpack
 * (pb_eng_type_pack_range, pb_eng_type_unpack_range in
 * src/mpi/engine/typerep.h) in its native packed form.  The external32
 * forms are in pack_external.c.  Shares the checks of datatype.c
 * (datatype_build.h).
 */
#include <limits.h>

#include "mpi/datatype.h"
#include "mpi/datatype_build.h"

/* Like pb_dt_type_arg, and the type must be committed (for data movement). */
static int type_arg_committed(MPI_Datatype handle, const char *func, const char *what,
                              pb_datatype_t **t_p)
{
    int ret = pb_dt_type_arg(handle, func, what, t_p);

    if (ret != MPI_SUCCESS)
        return ret;
    if (!pb_eng_type_is_committed(*t_p))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                            "%s is not committed (call MPI_Type_commit first)", what);
    return MPI_SUCCESS;
}

/* ---- MPI_Pack and MPI_Unpack --------------------------------------------------------------- */

/* Errors of MPI_Pack/MPI_Unpack go to MPI_COMM_SELF's handler for now:
 * the communicator argument is not validated here. */
static int pack_common(const char *func, const char *count_name, MPI_Count count,
                       MPI_Datatype datatype, const char *size_name, MPI_Count size,
                       const MPI_Count *position, pb_datatype_t **t_p, MPI_Count *bytes_p)
{
    int ret;

    if ((ret = pb_dt_count_arg(count, func, count_name)) != MPI_SUCCESS)
        return ret;
    if ((ret = type_arg_committed(datatype, func, "datatype", t_p)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_position_arg(func, size_name, size, position)) != MPI_SUCCESS)
        return ret;
    if (__builtin_mul_overflow(count, (MPI_Count)(*t_p)->size, bytes_p))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "count %lld is too large",
                            (long long)count);
    return MPI_SUCCESS;
}

/* Pack @incount elements of @datatype at @inbuf into @outbuf (of @outsize
 * bytes) at *@position, and advance *@position.  @return MPI_SUCCESS;
 * MPI_ERR_COUNT (incount < 0), MPI_ERR_TYPE (bad or uncommitted),
 * MPI_ERR_ARG (position NULL, outsize < 0, *position out of range, data
 * that does not fit in outsize), MPI_ERR_BUFFER (outbuf NULL). */
PB_EXPORT int PMPI_Pack_c(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf,
                          MPI_Count outsize, MPI_Count *position, MPI_Comm comm)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Pack";
    pb_datatype_t *t;
    MPI_Count bytes;
    int ret;

    ret = pack_common(func, "incount", incount, datatype, "outsize", outsize, position, &t, &bytes);
    if (ret != MPI_SUCCESS)
        return ret;
    ret = pb_dt_packed_room(func, 1, outsize, *position, bytes, outbuf);
    if (ret != MPI_SUCCESS)
        return ret;
    if (bytes > 0)
        pb_eng_type_pack_range(inbuf, incount, t, 0, (char *)outbuf + *position, (size_t)bytes);
    *position += bytes;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_c, PMPI_Pack_c);

/* MPI_Pack_c with int sizes; same errors. */
PB_EXPORT int PMPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
                        int outsize, int *position, MPI_Comm comm)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count pos;
    int ret;

    if (position == NULL)
        return pb_dt_ptr_arg(NULL, "MPI_Pack", "position");
    pos = *position;
    ret = PMPI_Pack_c(inbuf, incount, datatype, outbuf, outsize, &pos, comm);
    if (ret == MPI_SUCCESS)
        *position = (int)pos;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Pack, PMPI_Pack);

/* Unpack @outcount elements of @datatype into @outbuf from @inbuf (of
 * @insize bytes) at *@position, and advance *@position.  @return
 * MPI_SUCCESS; MPI_ERR_COUNT (outcount < 0), MPI_ERR_TYPE, MPI_ERR_ARG
 * (position NULL, insize < 0, *position out of range), MPI_ERR_TRUNCATE
 * (fewer than the data's bytes left in inbuf), MPI_ERR_BUFFER (inbuf
 * NULL). */
PB_EXPORT int PMPI_Unpack_c(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf,
                            MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Unpack";
    pb_datatype_t *t;
    MPI_Count bytes;
    int ret;

    ret = pack_common(func, "outcount", outcount, datatype, "insize", insize, position, &t, &bytes);
    if (ret != MPI_SUCCESS)
        return ret;
    ret = pb_dt_packed_room(func, 0, insize, *position, bytes, inbuf);
    if (ret != MPI_SUCCESS)
        return ret;
    if (bytes > 0)
        pb_eng_type_unpack_range((const char *)inbuf + *position, (size_t)bytes, outbuf, outcount,
                                 t, 0);
    *position += bytes;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Unpack_c, PMPI_Unpack_c);

/* MPI_Unpack_c with int sizes; same errors. */
PB_EXPORT int PMPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                          MPI_Datatype datatype, MPI_Comm comm)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count pos;
    int ret;

    if (position == NULL)
        return pb_dt_ptr_arg(NULL, "MPI_Unpack", "position");
    pos = *position;
    ret = PMPI_Unpack_c(inbuf, insize, &pos, outbuf, outcount, datatype, comm);
    if (ret == MPI_SUCCESS)
        *position = (int)pos;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Unpack, PMPI_Unpack);

/* An upper bound of the bytes MPI_Pack needs for @incount elements of
 * @datatype: exactly their size (Postbox packs no header).  @return
 * MPI_SUCCESS; MPI_ERR_COUNT (incount < 0), MPI_ERR_TYPE, MPI_ERR_ARG
 * (size NULL). */
PB_EXPORT int PMPI_Pack_size_c(MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm,
                               MPI_Count *size)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Pack_size";
    pb_datatype_t *t;
    int ret;

    if ((ret = pb_dt_count_arg(incount, func, "incount")) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_type_arg(datatype, func, "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_ptr_arg(size, func, "size")) != MPI_SUCCESS)
        return ret;
    if (__builtin_mul_overflow(incount, (MPI_Count)t->size, size))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "incount %lld is too large",
                            (long long)incount);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_size_c, PMPI_Pack_size_c);

/* MPI_Pack_size_c into an int; MPI_ERR_VALUE_TOO_LARGE when it does not
 * fit. */
PB_EXPORT int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count c;
    int ret;

    if (size == NULL)
        return pb_dt_ptr_arg(NULL, "MPI_Pack_size", "size");
    ret = PMPI_Pack_size_c(incount, datatype, comm, &c);
    if (ret != MPI_SUCCESS)
        return ret;
    if (c > INT_MAX)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_VALUE_TOO_LARGE, "MPI_Pack_size",
                            "%lld bytes do not fit in an int (use MPI_Pack_size_c)", (long long)c);
    *size = (int)c;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_size, PMPI_Pack_size);
