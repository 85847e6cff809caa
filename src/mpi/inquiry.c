/*
 * Inquiries about the library and the machine that concern no MPI object:
 * MPI_Get_hw_resource_info (MPI-5.0 section 11.4), MPI_Abi_get_info (the
 * ABI chapter), and the profiling hook MPI_Pcontrol (section 15.2.4).
 * All may be called before MPI_Init and after MPI_Finalize.
 */
#include <stdio.h>

#include "mpi/mpi_impl.h"

/* A new info holding the @n (key, value) pairs of @pairs, in *@info, for
 * @func.  @return MPI_SUCCESS; MPI_ERR_ARG (info NULL), MPI_ERR_NO_MEM. */
static int info_of_pairs(const char *const pairs[][2], int n, MPI_Info *info, const char *func)
{
    MPI_Info made = MPI_INFO_NULL;
    int ret;

    if (info == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "the info argument is NULL");
    ret = PMPI_Info_create(&made);
    for (int i = 0; i < n && ret == MPI_SUCCESS; i++)
        ret = PMPI_Info_set(made, pairs[i][0], pairs[i][1]);
    if (ret != MPI_SUCCESS) {
        if (made != MPI_INFO_NULL)
            PMPI_Info_free(&made);
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory for the info");
    }
    *info = made;
    return MPI_SUCCESS;
}

/* A new info (the program frees it) describing the hardware this process
 * runs on as Postbox sees it: "mpi_hw_resource_type" is
 * "mpi_shared_memory", the one resource type Postbox knows (the memory a
 * node's processes share, which MPI_Comm_split_type's
 * MPI_COMM_TYPE_HW_GUIDED splits by).  @return MPI_SUCCESS; MPI_ERR_ARG
 * (hw_info NULL), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Get_hw_resource_info(MPI_Info *hw_info)
{
    PB_MPI_THREAD_GUARD;

    static const char *const pairs[][2] = {{"mpi_hw_resource_type", "mpi_shared_memory"}};

    return info_of_pairs(pairs, 1, hw_info, "MPI_Get_hw_resource_info");
}
PB_MPI_WEAK_ALIAS(MPI_Get_hw_resource_info, PMPI_Get_hw_resource_info);

/* A new info (the program frees it) with the keys of the ABI chapter:
 * "mpi_aint_size", "mpi_count_size", "mpi_offset_size", the bytes of
 * MPI_Aint, MPI_Count and MPI_Offset in decimal.  @return MPI_SUCCESS;
 * MPI_ERR_ARG (info NULL), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Abi_get_info(MPI_Info *info)
{
    PB_MPI_THREAD_GUARD;
    char aint[8], count[8], offset[8];
    const char *const pairs[][2] = {
        {"mpi_aint_size", aint}, {"mpi_count_size", count}, {"mpi_offset_size", offset}};

    snprintf(aint, sizeof(aint), "%zu", sizeof(MPI_Aint));
    snprintf(count, sizeof(count), "%zu", sizeof(MPI_Count));
    snprintf(offset, sizeof(offset), "%zu", sizeof(MPI_Offset));
    return info_of_pairs(pairs, 3, info, "MPI_Abi_get_info");
}
PB_MPI_WEAK_ALIAS(MPI_Abi_get_info, PMPI_Abi_get_info);

/* The profiling control of the standard, whose effect it leaves to the
 * implementation: Postbox has no profiling levels of its own, so every
 * @level (and the arguments after it) is accepted and ignored; a
 * profiling library that defines MPI_Pcontrol sees the calls.  Returns
 * MPI_SUCCESS. */
PB_EXPORT int PMPI_Pcontrol(const int level, ...)
{
    PB_MPI_THREAD_GUARD;

    (void)level;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Pcontrol, PMPI_Pcontrol);
