/*
 * The registry of the objects behind MPI handles (handle.h).  It is the
 * engine's, because the engine makes requests; the API files make the
 * other kinds through it and convert their handles to integers with it
 * (comm.c, group.c, info.c, datatype.c, op.c, request.c; abi.c for the
 * kinds Postbox has only predefined handles of).
 */
#include "mpi/engine/handle.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Chunk c of a table holds CHUNK0 << c entries: MAX_CHUNKS of them hold
 * 64 * (2^20 - 1) objects, whose integers stay below INT_MAX. */
#define CHUNK0 64u
#define MAX_CHUNKS 20u
#define NO_ENTRY UINT32_MAX

_Static_assert(sizeof(pb_eng_handle_entry_t) == 16,
               "the entry header keeps objects 16-byte aligned");

typedef struct {
    pthread_mutex_t lock;     /* creation and freeing */
    size_t stride;            /* bytes from entry to entry, a power of two */
    size_t obj_size;          /* the size every object of the kind has */
    _Atomic unsigned nchunks; /* published with a release store */
    _Atomic(char *) chunks[MAX_CHUNKS];
    uint32_t free_head; /* first free entry, or NO_ENTRY */
    uint32_t used;      /* entries ever handed out (the rest are untouched) */
} table_t;

static table_t tables[PB_ENG_HANDLE_KINDS] = {
    [0 ... PB_ENG_HANDLE_KINDS - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER, .free_head = NO_ENTRY},
};

/* The first index of chunk @c. */
static uint32_t chunk_first(unsigned c)
{
    return CHUNK0 * ((1u << c) - 1);
}

/* The chunk holding index @i. */
static unsigned chunk_of(uint32_t i)
{
    return (unsigned)(31 - __builtin_clz(i / CHUNK0 + 1));
}

/* The entry of index @i, in a chunk already published. */
static pb_eng_handle_entry_t *entry_at(const table_t *t, uint32_t i)
{
    unsigned c = chunk_of(i);
    /* relaxed: the acquire load of nchunks that found chunk c published
     * ordered its pointer */
    char *base = atomic_load_explicit(&t->chunks[c], memory_order_relaxed);

    return (pb_eng_handle_entry_t *)(base + (size_t)(i - chunk_first(c)) * t->stride);
}

static pb_eng_handle_entry_t *entry_of(void *obj)
{
    return (pb_eng_handle_entry_t *)obj - 1;
}

/* Publish one more chunk of @t.  Called with the lock held.  @return 0, or
 * -1 when out of memory or the table is full. */
static int table_grow(table_t *t, size_t size)
{
    unsigned n = atomic_load_explicit(&t->nchunks, memory_order_relaxed);
    char *chunk;

    if (n == 0) {
        t->obj_size = size;
        t->stride = 32;
        while (t->stride < sizeof(pb_eng_handle_entry_t) + size)
            t->stride *= 2;
    }
    if (n == MAX_CHUNKS)
        return -1;
    chunk = calloc((size_t)CHUNK0 << n, t->stride);
    if (chunk == NULL)
        return -1;
    atomic_store_explicit(&t->chunks[n], chunk, memory_order_relaxed);
    /* release: the chunk's pointer, its zeroed entries and the stride are
     * visible to whoever sees the new count */
    atomic_store_explicit(&t->nchunks, n + 1, memory_order_release);
    return 0;
}

void *pb_eng_handle_new(pb_eng_handle_kind_t kind, size_t size)
{
    table_t *t = &tables[kind];
    pb_eng_handle_entry_t *e = NULL;
    uint32_t i;

    pthread_mutex_lock(&t->lock);
    if (t->free_head != NO_ENTRY) {
        i = t->free_head;
        e = entry_at(t, i);
        t->free_head = e->next_free;
    } else {
        i = t->used;
        if (i == chunk_first(atomic_load_explicit(&t->nchunks, memory_order_relaxed)) &&
            table_grow(t, size) != 0)
            goto out;
        t->used++;
        e = entry_at(t, i);
    }
    memset(e + 1, 0, t->obj_size);
    e->index = i;
    /* release: the zeroed object before the state that makes it valid */
    atomic_store_explicit(&e->state, PB_ENG_HANDLE_STATE(kind, PB_ENG_HANDLE_LIVE),
                          memory_order_release);
out:
    pthread_mutex_unlock(&t->lock);
    return e != NULL ? e + 1 : NULL;
}

/* The entry of @handle when it is the address of an object in a chunk of
 * @kind's table, or NULL; reads nothing but the table. */
static pb_eng_handle_entry_t *entry_find(pb_eng_handle_kind_t kind, const void *handle)
{
    const table_t *t = &tables[kind];
    /* acquire: pairs with table_grow's release (chunk pointers, stride) */
    unsigned n = atomic_load_explicit(&t->nchunks, memory_order_acquire);
    uintptr_t a = (uintptr_t)handle - sizeof(pb_eng_handle_entry_t);

    for (unsigned c = 0; c < n; c++) {
        uintptr_t base = (uintptr_t)atomic_load_explicit(&t->chunks[c], memory_order_relaxed);
        uintptr_t off = a - base; /* wraps to a large value below the chunk */

        if (off < ((size_t)CHUNK0 << c) * t->stride)
            return (off & (t->stride - 1)) == 0 ? (pb_eng_handle_entry_t *)a : NULL;
    }
    return NULL;
}

bool pb_eng_handle_valid(pb_eng_handle_kind_t kind, const void *handle)
{
    pb_eng_handle_entry_t *e = entry_find(kind, handle);

    /* acquire: pairs with the release that made the object live */
    return e != NULL && atomic_load_explicit(&e->state, memory_order_acquire) ==
                            PB_ENG_HANDLE_STATE(kind, PB_ENG_HANDLE_LIVE);
}

void pb_eng_handle_delete(pb_eng_handle_kind_t kind, void *obj)
{
    table_t *t = &tables[kind];
    pb_eng_handle_entry_t *e = entry_of(obj);

    pthread_mutex_lock(&t->lock);
    atomic_store_explicit(&e->state, PB_ENG_HANDLE_STATE(kind, PB_ENG_HANDLE_FREE),
                          memory_order_release);
    e->next_free = t->free_head;
    t->free_head = e->index;
    pthread_mutex_unlock(&t->lock);
}

int pb_eng_handle_toint(pb_eng_handle_kind_t kind, const void *obj)
{
    if (!pb_eng_handle_valid(kind, obj))
        return -1;
    return PB_ENG_HANDLE_INT_BASE + (int)entry_of((void *)obj)->index;
}

void *pb_eng_handle_fromint(pb_eng_handle_kind_t kind, int value)
{
    const table_t *t = &tables[kind];
    unsigned n = atomic_load_explicit(&t->nchunks, memory_order_acquire);
    uint32_t i;
    pb_eng_handle_entry_t *e;

    if (value < PB_ENG_HANDLE_INT_BASE)
        return NULL;
    i = (uint32_t)(value - PB_ENG_HANDLE_INT_BASE);
    if (i >= chunk_first(n))
        return NULL;
    e = entry_at(t, i);
    if (atomic_load_explicit(&e->state, memory_order_acquire) !=
        PB_ENG_HANDLE_STATE(kind, PB_ENG_HANDLE_LIVE))
        return NULL;
    return e + 1;
}

void *pb_eng_handle_any(pb_eng_handle_kind_t kind)
{
    const table_t *t = &tables[kind];
    unsigned n = atomic_load_explicit(&t->nchunks, memory_order_acquire);

    for (uint32_t i = 0; i < chunk_first(n); i++) {
        pb_eng_handle_entry_t *e = entry_at(t, i);

        if (atomic_load_explicit(&e->state, memory_order_acquire) ==
            PB_ENG_HANDLE_STATE(kind, PB_ENG_HANDLE_LIVE))
            return e + 1;
    }
    return NULL;
}
