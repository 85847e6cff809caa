#include "rsm/rsm_impl.h"

#include <stdlib.h>
#include <string.h>

#include "util/compiler.h"

#define HANDLE_CHUNK_ENTRIES 256
#define HANDLE_MAX_CHUNKS 64

/* one magic per kind; a freed handle gets magic 0 */
static const uint32_t handle_magic[PB_RSM_HANDLE_KINDS] = {
    0x7262434eu, /* controller */
    0x72624558u, /* export */
    0x72624950u, /* import */
    0x72624c4du, /* local memory */
};

static const size_t handle_size[PB_RSM_HANDLE_KINDS] = {
    sizeof(struct __rsmapi_controller_handle),
    sizeof(struct __rsm_memseg_export_handle),
    sizeof(struct __rsm_memseg_import_handle),
    sizeof(struct __rsm_localmemory_handle),
};

typedef struct {
    _Atomic(char *) chunks[HANDLE_MAX_CHUNKS]; /* published with release */
    atomic_int chunk_count;
    void *free_list; /* first word of a free handle links to the next */
    size_t stride;
} handle_pool_t;

static handle_pool_t handle_pools[PB_RSM_HANDLE_KINDS];
pthread_mutex_t pb_rsm_handle_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t handle_stride(pb_rsm_handle_kind_t kind)
{
    return (handle_size[kind] + 15) & ~(size_t)15;
}

static int handle_pool_grow(pb_rsm_handle_kind_t kind)
{
    handle_pool_t *pool = &handle_pools[kind];
    int count = atomic_load_explicit(&pool->chunk_count, memory_order_relaxed);
    size_t stride = handle_stride(kind);
    char *chunk;

    if (count == HANDLE_MAX_CHUNKS)
        return -1;
    chunk = calloc(HANDLE_CHUNK_ENTRIES, stride);
    if (chunk == NULL)
        return -1;
    for (int i = HANDLE_CHUNK_ENTRIES - 1; i >= 0; i--) {
        void **entry = (void **)(chunk + (size_t)i * stride);

        /* the magic word stays 0; the link lives after it */
        entry[1] = pool->free_list;
        pool->free_list = entry;
    }
    pool->stride = stride;
    atomic_store_explicit(&pool->chunks[count], chunk, memory_order_release);
    atomic_store_explicit(&pool->chunk_count, count + 1, memory_order_release);
    return 0;
}

void *pb_rsm_handle_alloc(pb_rsm_handle_kind_t kind)
{
    handle_pool_t *pool = &handle_pools[kind];
    void **entry;

    pthread_mutex_lock(&pb_rsm_handle_lock);
    if (pool->free_list == NULL && handle_pool_grow(kind) != 0) {
        pthread_mutex_unlock(&pb_rsm_handle_lock);
        return NULL;
    }
    entry = pool->free_list;
    pool->free_list = entry[1];
    memset(entry, 0, handle_size[kind]);
    *(uint32_t *)entry = handle_magic[kind];
    pthread_mutex_unlock(&pb_rsm_handle_lock);
    return entry;
}

void pb_rsm_handle_free(pb_rsm_handle_kind_t kind, void *handle)
{
    handle_pool_t *pool = &handle_pools[kind];
    void **entry = handle;

    pthread_mutex_lock(&pb_rsm_handle_lock);
    memset(entry, 0, handle_size[kind]);
    entry[1] = pool->free_list;
    pool->free_list = entry;
    pthread_mutex_unlock(&pb_rsm_handle_lock);
}

int pb_rsm_handle_is_valid(pb_rsm_handle_kind_t kind, const void *ptr)
{
    const handle_pool_t *pool = &handle_pools[kind];
    int count = atomic_load_explicit(&pool->chunk_count, memory_order_acquire);
    uintptr_t addr = (uintptr_t)ptr;
    size_t stride = handle_stride(kind);

    if (ptr == NULL)
        return 0;
    for (int i = 0; i < count; i++) {
        uintptr_t base =
            (uintptr_t)atomic_load_explicit(&handle_pools[kind].chunks[i], memory_order_acquire);

        if (addr >= base && addr < base + HANDLE_CHUNK_ENTRIES * stride) {
            if ((addr - base) % stride != 0)
                return 0;
            return *(const uint32_t *)ptr == handle_magic[kind];
        }
    }
    return 0;
}
