#include "rsm/rsm_impl.h"

#include <stdlib.h>
#include <string.h>

#include "util/compiler.h"

/* entries are a power of two apart, so a pointer is checked with a mask */
#define HANDLE_STRIDE_SHIFT(type) (64u - (unsigned)__builtin_clzll(sizeof(type) - 1))

pb_rsm_handle_pool_t pb_rsm_handle_pools[PB_RSM_HANDLE_KINDS] = {
    [PB_RSM_HANDLE_CONTROLLER] = {.magic = 0x7262434eu,
                                  .stride_shift =
                                      HANDLE_STRIDE_SHIFT(struct __rsmapi_controller_handle)},
    [PB_RSM_HANDLE_EXPORT] = {.magic = 0x72624558u,
                              .stride_shift =
                                  HANDLE_STRIDE_SHIFT(struct __rsm_memseg_export_handle)},
    [PB_RSM_HANDLE_IMPORT] = {.magic = 0x72624950u,
                              .stride_shift =
                                  HANDLE_STRIDE_SHIFT(struct __rsm_memseg_import_handle)},
    [PB_RSM_HANDLE_LOCALMEM] = {.magic = 0x72624c4du,
                                .stride_shift =
                                    HANDLE_STRIDE_SHIFT(struct __rsm_localmemory_handle)},
};

pthread_mutex_t pb_rsm_handle_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t handle_stride(pb_rsm_handle_kind_t kind)
{
    return (size_t)1 << pb_rsm_handle_pools[kind].stride_shift;
}

static int handle_pool_grow(pb_rsm_handle_kind_t kind)
{
    pb_rsm_handle_pool_t *pool = &pb_rsm_handle_pools[kind];
    int count = atomic_load_explicit(&pool->chunk_count, memory_order_relaxed);
    size_t stride = handle_stride(kind);
    char *chunk;

    if (count == PB_RSM_HANDLE_MAX_CHUNKS)
        return -1;
    chunk = calloc(PB_RSM_HANDLE_CHUNK_ENTRIES, stride);
    if (chunk == NULL)
        return -1;
    for (int i = PB_RSM_HANDLE_CHUNK_ENTRIES - 1; i >= 0; i--) {
        void **entry = (void **)(chunk + (size_t)i * stride);

        /* the magic word stays 0; the link lives after it */
        entry[1] = pool->free_list;
        pool->free_list = entry;
    }
    atomic_store_explicit(&pool->chunks[count], chunk, memory_order_release);
    atomic_store_explicit(&pool->chunk_count, count + 1, memory_order_release);
    return 0;
}

void *pb_rsm_handle_alloc(pb_rsm_handle_kind_t kind)
{
    pb_rsm_handle_pool_t *pool = &pb_rsm_handle_pools[kind];
    void **entry;

    pthread_mutex_lock(&pb_rsm_handle_lock);
    if (pool->free_list == NULL && handle_pool_grow(kind) != 0) {
        pthread_mutex_unlock(&pb_rsm_handle_lock);
        return NULL;
    }
    entry = pool->free_list;
    pool->free_list = entry[1];
    memset(entry, 0, handle_stride(kind));
    *(uint32_t *)entry = pool->magic;
    pthread_mutex_unlock(&pb_rsm_handle_lock);
    return entry;
}

void pb_rsm_handle_free(pb_rsm_handle_kind_t kind, void *handle)
{
    pb_rsm_handle_pool_t *pool = &pb_rsm_handle_pools[kind];
    void **entry = handle;

    pthread_mutex_lock(&pb_rsm_handle_lock);
    memset(entry, 0, handle_stride(kind));
    entry[1] = pool->free_list;
    pool->free_list = entry;
    pthread_mutex_unlock(&pb_rsm_handle_lock);
}
