/*
 * Typed local copies and scratch buffers of the collectives (coll_util.h).
 */
#include "mpi/coll_util.h"

#include <stdint.h>
#include <stdlib.h>

#include "mpi/datatype.h"

/* bytes a local copy between two non-contiguous layouts packs at a time */
#define COPY_CHUNK 16384

int pb_coll_copy_typed(const void *src, MPI_Count scount, MPI_Datatype stype, void *dst,
                       MPI_Count dcount, MPI_Datatype dtype)
{
    const pb_datatype_t *st = pb_mpi_datatype(stype), *dt = pb_mpi_datatype(dtype);
    size_t bytes = (size_t)scount * pb_eng_type_size(st);
    char chunk[COPY_CHUNK];

    if (bytes > (size_t)dcount * pb_eng_type_size(dt))
        return MPI_ERR_TRUNCATE;
    if (bytes == 0 || (src == dst && st == dt))
        return MPI_SUCCESS;
    if (pb_eng_type_is_contiguous(dt)) {
        pb_eng_type_pack_range(src, scount, st, 0,
                               (void *)((uintptr_t)dst + (uintptr_t)pb_eng_type_true_lb(dt)),
                               bytes);
        return MPI_SUCCESS;
    }
    if (pb_eng_type_is_contiguous(st)) {
        pb_eng_type_unpack_range(
            (const void *)((uintptr_t)src + (uintptr_t)pb_eng_type_true_lb(st)), bytes, dst, dcount,
            dt, 0);
        return MPI_SUCCESS;
    }
    for (size_t off = 0; off < bytes; off += COPY_CHUNK) {
        size_t len = bytes - off < COPY_CHUNK ? bytes - off : COPY_CHUNK;

        pb_eng_type_pack_range(src, scount, st, off, chunk, len);
        pb_eng_type_unpack_range(chunk, len, dst, dcount, dt, off);
    }
    return MPI_SUCCESS;
}

size_t pb_coll_scratch_span(MPI_Count count, MPI_Datatype type, MPI_Aint *offset_p)
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
    *offset_p = -lo;
    return hi > lo ? (size_t)(hi - lo) : 1;
}

void *pb_coll_scratch_alloc(MPI_Count count, MPI_Datatype type, void **mem_p)
{
    MPI_Aint offset;
    size_t bytes = pb_coll_scratch_span(count, type, &offset);

    *mem_p = pb_coll_scratch_get(bytes);
    if (*mem_p == NULL)
        return NULL;
    return (void *)((uintptr_t)*mem_p + (uintptr_t)offset);
}

int pb_coll_failed(MPI_Comm comm, const char *func, int rc)
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

int pb_coll_check_reduce_scatter(MPI_Comm comm, const char *func, const void *sendbuf,
                                 const void *recvbuf, const pb_coll_vec_t *counts,
                                 MPI_Datatype datatype, MPI_Op op, const pb_comm_t *c,
                                 MPI_Count *total_p)
{
    MPI_Count total = 0;
    int rc;

    *total_p = 0;
    if (!counts->arrays) {
        if (counts->block < 0)
            return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "recvcount %lld is negative",
                                (long long)counts->block);
        total = counts->block * c->size;
    } else {
        if (counts->counts.i == NULL && counts->counts.c == NULL)
            return pb_mpi_raise(comm, MPI_ERR_ARG, func, "recvcounts is NULL");
        for (int i = 0; i < c->size; i++) {
            if (pb_coll_vec_count(counts, i) < 0)
                return pb_mpi_raise(comm, MPI_ERR_COUNT, func, "recvcounts[%d], %lld, is negative",
                                    i, (long long)pb_coll_vec_count(counts, i));
            total += pb_coll_vec_count(counts, i);
        }
    }
    rc = pb_mpi_check_reduction(comm, func, total, datatype, op);
    if (rc == MPI_SUCCESS)
        rc = pb_mpi_check_buf(comm, func, "receive", recvbuf, pb_coll_vec_count(counts, c->rank),
                              datatype);
    if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE)
        rc = pb_mpi_check_buf(comm, func, "send", sendbuf, total, datatype);
    if (rc == MPI_SUCCESS)
        rc = pb_mpi_check_aliased(comm, func, sendbuf, recvbuf, total);
    *total_p = total;
    return rc;
}
