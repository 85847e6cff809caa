#include "rsm/rsm_impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/compiler.h"
#include "util/log.h"

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

/* address space reserved per kind: room for 1 << 18 handles or more */
#define HANDLE_ARENA_BYTES ((size_t)64 << 20)
#define HANDLE_CHUNK_BYTES ((size_t)64 << 10)

/* Commit the next chunk of @kind's arena and put its handles on the free
 * list.  Caller holds pb_rsm_handle_lock.  Returns 0, or -1 when out of
 * memory or arena. */
static int handle_pool_grow(pb_rsm_handle_kind_t kind)
{
    pb_rsm_handle_pool_t *pool = &pb_rsm_handle_pools[kind];
    char *arena = atomic_load_explicit(&pool->arena, memory_order_relaxed);
    size_t committed = atomic_load_explicit(&pool->committed, memory_order_relaxed);
    size_t stride = handle_stride(kind);
    char *chunk;

    if (arena == NULL) {
        arena = mmap(NULL, HANDLE_ARENA_BYTES, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (arena == MAP_FAILED) {
            pb_error("reserving %zu bytes for RSM handles failed: %m", HANDLE_ARENA_BYTES);
            return -1;
        }
        atomic_store_explicit(&pool->arena, arena, memory_order_relaxed);
    }
    if (committed == HANDLE_ARENA_BYTES) {
        pb_error("too many live RSM handles of one kind (%zu)", HANDLE_ARENA_BYTES / stride);
        return -1;
    }
    chunk = arena + committed;
    if (mprotect(chunk, HANDLE_CHUNK_BYTES, PROT_READ | PROT_WRITE) != 0) {
        pb_error("committing memory for RSM handles failed: %m");
        return -1;
    }
    /* fresh pages are zero: every magic word reads as a dead handle */
    for (size_t off = HANDLE_CHUNK_BYTES; off >= stride; off -= stride) {
        void **entry = (void **)(chunk + off - stride);

        entry[1] = pool->free_list;
        pool->free_list = entry;
    }
    /* release: the pages are usable before a pointer into them validates */
    atomic_store_explicit(&pool->committed, committed + HANDLE_CHUNK_BYTES, memory_order_release);
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
