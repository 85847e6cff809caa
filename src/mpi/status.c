/*
 * The fields of a status (MPI_Status_get_source .. MPI_Status_set_cancelled):
 * the public ones (MPI_SOURCE, MPI_TAG, MPI_ERROR) and the library's part
 * that mpi_impl.h defines (the message's bytes, the cancelled flag).  A
 * generalized request's query function fills its status with these.
 *
 * MPI_Status_set_elements stores the bytes that @count basic elements of
 * the datatype take when packed (whole elements of the type, then the
 * first basic elements of one more), so that MPI_Get_elements gives @count
 * back and MPI_Get_count gives the whole elements, or MPI_UNDEFINED, as
 * for a received message of that length.
 */
#include <limits.h>

#include "mpi/datatype.h"
#include "mpi/engine/typerep.h"
#include "mpi/mpi_impl.h"

static int status_arg(const void *status, const char *func, const char *what)
{
    if (status == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "%s is NULL (MPI_STATUS_IGNORE?)",
                            what);
    return MPI_SUCCESS;
}

/* *@source = the MPI_SOURCE of @status.  @return MPI_SUCCESS; MPI_ERR_ARG
 * (a NULL pointer). */
PB_EXPORT int PMPI_Status_get_source(const MPI_Status *status, int *source)
{
    PB_MPI_THREAD_GUARD;
    int rc = status_arg(status, "MPI_Status_get_source", "status");

    if (rc == MPI_SUCCESS)
        rc = status_arg(source, "MPI_Status_get_source", "source");
    if (rc == MPI_SUCCESS)
        *source = status->MPI_SOURCE;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Status_get_source, PMPI_Status_get_source);

/* *@tag = the MPI_TAG of @status.  Errors as MPI_Status_get_source. */
PB_EXPORT int PMPI_Status_get_tag(const MPI_Status *status, int *tag)
{
    PB_MPI_THREAD_GUARD;
    int rc = status_arg(status, "MPI_Status_get_tag", "status");

    if (rc == MPI_SUCCESS)
        rc = status_arg(tag, "MPI_Status_get_tag", "tag");
    if (rc == MPI_SUCCESS)
        *tag = status->MPI_TAG;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Status_get_tag, PMPI_Status_get_tag);

/* *@error = the MPI_ERROR of @status.  Errors as MPI_Status_get_source. */
PB_EXPORT int PMPI_Status_get_error(const MPI_Status *status, int *error)
{
    PB_MPI_THREAD_GUARD;
    int rc = status_arg(status, "MPI_Status_get_error", "status");

    if (rc == MPI_SUCCESS)
        rc = status_arg(error, "MPI_Status_get_error", "error");
    if (rc == MPI_SUCCESS)
        *error = status->MPI_ERROR;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Status_get_error, PMPI_Status_get_error);

/* Set the MPI_SOURCE of @status to @source.  @return MPI_SUCCESS;
 * MPI_ERR_ARG (status NULL). */
PB_EXPORT int PMPI_Status_set_source(MPI_Status *status, int source)
{
    PB_MPI_THREAD_GUARD;
    int rc = status_arg(status, "MPI_Status_set_source", "status");

    if (rc == MPI_SUCCESS)
        status->MPI_SOURCE = source;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Status_set_source, PMPI_Status_set_source);

/* Set the MPI_TAG of @status to @tag.  Errors as MPI_Status_set_source. */
PB_EXPORT int PMPI_Status_set_tag(MPI_Status *status, int tag)
{
    PB_MPI_THREAD_GUARD;
    int rc = status_arg(status, "MPI_Status_set_tag", "status");

    if (rc == MPI_SUCCESS)
        status->MPI_TAG = tag;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Status_set_tag, PMPI_Status_set_tag);

/* Set the MPI_ERROR of @status to @error.  Errors as
 * MPI_Status_set_source. */
PB_EXPORT int PMPI_Status_set_error(MPI_Status *status, int error)
{
    PB_MPI_THREAD_GUARD;
    int rc = status_arg(status, "MPI_Status_set_error", "status");

    if (rc == MPI_SUCCESS)
        status->MPI_ERROR = error;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Status_set_error, PMPI_Status_set_error);

/* Mark @status cancelled (@flag true) or not, for MPI_Test_cancelled.
 * Errors as MPI_Status_set_source. */
PB_EXPORT int PMPI_Status_set_cancelled(MPI_Status *status, int flag)
{
    PB_MPI_THREAD_GUARD;
    int rc = status_arg(status, "MPI_Status_set_cancelled", "status");

    if (rc == MPI_SUCCESS)
        pb_mpi_status_set_cancelled(status, flag != 0);
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Status_set_cancelled, PMPI_Status_set_cancelled);

/* The packed bytes of the first @n basic elements (fewer than one
 * element's) of @t. */
static size_t partial_bytes(const pb_datatype_t *t, MPI_Count n)
{
    size_t bytes = 0;

    if (n == 0)
        return 0;
    if (t->predefined) /* a pair type: its value is the first element */
        return t->value_size;
    for (size_t i = 0; i < t->nparts && n > 0; i++) {
        const pb_datatype_t *part = t->parts[i].type;
        MPI_Count in_part = t->parts[i].n * part->nelems;

        if (part->nelems == 0)
            continue;
        if (n >= in_part) {
            bytes += (size_t)t->parts[i].n * part->size;
            n -= in_part;
            continue;
        }
        return bytes + (size_t)(n / part->nelems) * part->size +
               partial_bytes(part, n % part->nelems);
    }
    return bytes;
}

/* Set the library's part of @status as if a message of @count basic
 * elements of @datatype had arrived (MPI_Get_elements then gives @count).
 * @return MPI_SUCCESS; MPI_ERR_ARG (status NULL); MPI_ERR_TYPE;
 * MPI_ERR_COUNT (negative, or elements a type of size 0 cannot hold). */
PB_EXPORT int PMPI_Status_set_elements_c(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Status_set_elements";
    pb_datatype_t *t = pb_mpi_datatype(datatype);
    int rc = status_arg(status, func, "status");

    if (rc != MPI_SUCCESS)
        return rc;
    if (t == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func, "datatype is not a datatype");
    if (count < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "count %lld is negative",
                            (long long)count);
    if (t->nelems == 0) {
        if (count != 0)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func,
                                "the datatype holds no elements, so count must be 0");
        pb_mpi_status_set_bytes(status, 0);
        return MPI_SUCCESS;
    }
    if ((uint64_t)(count / t->nelems) > UINT64_MAX / (t->size ? t->size : 1))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "count %lld is too large",
                            (long long)count);
    pb_mpi_status_set_bytes(status, (uint64_t)(count / t->nelems) * t->size +
                                        partial_bytes(t, count % t->nelems));
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Status_set_elements_c, PMPI_Status_set_elements_c);

/* MPI_Status_set_elements_c with an int count.  Errors as it. */
PB_EXPORT int PMPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
    PB_MPI_THREAD_GUARD;

    return PMPI_Status_set_elements_c(status, datatype, count);
}
PB_MPI_WEAK_ALIAS(MPI_Status_set_elements, PMPI_Status_set_elements);

/* MPI_Status_set_elements_c, deprecated name.  Errors as it. */
PB_EXPORT int PMPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    PB_MPI_THREAD_GUARD;

    return PMPI_Status_set_elements_c(status, datatype, count);
}
PB_MPI_WEAK_ALIAS(MPI_Status_set_elements_x, PMPI_Status_set_elements_x);
