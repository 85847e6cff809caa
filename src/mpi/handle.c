/*
 * The registry of the objects behind MPI handles (handle.h), and the
 * ABI's handle conversions (MPI-5.0 section 20.3.4) of windows, files,
 * sessions and messages, of which Postbox has only the predefined handles.
 * (The other kinds convert in the files that make them: comm.c, group.c,
 * info.c, datatype.c, op.c and p2p.c.)
 */
#include "mpi/handle.h"

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

_Static_assert(sizeof(pb_mpi_handle_entry_t) == 16,
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

static table_t tables[PB_MPI_HANDLE_KINDS] = {
    [0 ... PB_MPI_HANDLE_KINDS - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER, .free_head = NO_ENTRY},
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
static pb_mpi_handle_entry_t *entry_at(const table_t *t, uint32_t i)
{
    unsigned c = chunk_of(i);
    /* relaxed: the acquire load of nchunks that found chunk c published
     * ordered its pointer */
    char *base = atomic_load_explicit(&t->chunks[c], memory_order_relaxed);

    return (pb_mpi_handle_entry_t *)(base + (size_t)(i - chunk_first(c)) * t->stride);
}

static pb_mpi_handle_entry_t *entry_of(void *obj)
{
    return (pb_mpi_handle_entry_t *)obj - 1;
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
        while (t->stride < sizeof(pb_mpi_handle_entry_t) + size)
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

void *pb_mpi_handle_new(pb_mpi_handle_kind_t kind, size_t size)
{
    table_t *t = &tables[kind];
    pb_mpi_handle_entry_t *e = NULL;
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
    atomic_store_explicit(&e->state, PB_MPI_HANDLE_STATE(kind, PB_MPI_HANDLE_LIVE),
                          memory_order_release);
out:
    pthread_mutex_unlock(&t->lock);
    return e != NULL ? e + 1 : NULL;
}

/* The entry of @handle when it is the address of an object in a chunk of
 * @kind's table, or NULL; reads nothing but the table. */
static pb_mpi_handle_entry_t *entry_find(pb_mpi_handle_kind_t kind, const void *handle)
{
    const table_t *t = &tables[kind];
    /* acquire: pairs with table_grow's release (chunk pointers, stride) */
    unsigned n = atomic_load_explicit(&t->nchunks, memory_order_acquire);
    uintptr_t a = (uintptr_t)handle - sizeof(pb_mpi_handle_entry_t);

    for (unsigned c = 0; c < n; c++) {
        uintptr_t base = (uintptr_t)atomic_load_explicit(&t->chunks[c], memory_order_relaxed);
        uintptr_t off = a - base; /* wraps to a large value below the chunk */

        if (off < ((size_t)CHUNK0 << c) * t->stride)
            return (off & (t->stride - 1)) == 0 ? (pb_mpi_handle_entry_t *)a : NULL;
    }
    return NULL;
}

bool pb_mpi_handle_valid(pb_mpi_handle_kind_t kind, const void *handle)
{
    pb_mpi_handle_entry_t *e = entry_find(kind, handle);

    /* acquire: pairs with the release that made the object live */
    return e != NULL && atomic_load_explicit(&e->state, memory_order_acquire) ==
                            PB_MPI_HANDLE_STATE(kind, PB_MPI_HANDLE_LIVE);
}

void pb_mpi_handle_delete(pb_mpi_handle_kind_t kind, void *obj)
{
    table_t *t = &tables[kind];
    pb_mpi_handle_entry_t *e = entry_of(obj);

    pthread_mutex_lock(&t->lock);
    atomic_store_explicit(&e->state, PB_MPI_HANDLE_STATE(kind, PB_MPI_HANDLE_FREE),
                          memory_order_release);
    e->next_free = t->free_head;
    t->free_head = e->index;
    pthread_mutex_unlock(&t->lock);
}

int pb_mpi_handle_toint(pb_mpi_handle_kind_t kind, const void *obj)
{
    if (!pb_mpi_handle_valid(kind, obj))
        return -1;
    return PB_MPI_HANDLE_INT_BASE + (int)entry_of((void *)obj)->index;
}

void *pb_mpi_handle_fromint(pb_mpi_handle_kind_t kind, int value)
{
    const table_t *t = &tables[kind];
    unsigned n = atomic_load_explicit(&t->nchunks, memory_order_acquire);
    uint32_t i;
    pb_mpi_handle_entry_t *e;

    if (value < PB_MPI_HANDLE_INT_BASE)
        return NULL;
    i = (uint32_t)(value - PB_MPI_HANDLE_INT_BASE);
    if (i >= chunk_first(n))
        return NULL;
    e = entry_at(t, i);
    if (atomic_load_explicit(&e->state, memory_order_acquire) !=
        PB_MPI_HANDLE_STATE(kind, PB_MPI_HANDLE_LIVE))
        return NULL;
    return e + 1;
}

void *pb_mpi_handle_any(pb_mpi_handle_kind_t kind)
{
    const table_t *t = &tables[kind];
    unsigned n = atomic_load_explicit(&t->nchunks, memory_order_acquire);

    for (uint32_t i = 0; i < chunk_first(n); i++) {
        pb_mpi_handle_entry_t *e = entry_at(t, i);

        if (atomic_load_explicit(&e->state, memory_order_acquire) ==
            PB_MPI_HANDLE_STATE(kind, PB_MPI_HANDLE_LIVE))
            return e + 1;
    }
    return NULL;
}

int pb_mpi_handle_request_valid(MPI_Request request)
{
    return pb_mpi_handle_valid(PB_MPI_HANDLE_REQUEST, request);
}

/* ---- objects Postbox does not make: only their predefined handles ------------------- */

/* The integer of a handle of a kind Postbox never creates: its ABI value
 * when it is predefined; any other value is no handle (raises
 * MPI_ERR_ARG) and gives @null's. */
static int predefined_only_toint(uintptr_t handle, uintptr_t null, const char *func)
{
    if (handle < PB_MPI_HANDLE_INT_BASE)
        return (int)handle;
    pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                 "the handle (%p) is not one (Postbox makes no such objects yet)", (void *)handle);
    return (int)null;
}

/* MPI_WIN_NULL converts to its ABI value (0x110) and back; no window
 * exists yet, so any other integer gives MPI_WIN_NULL. */
PB_EXPORT int PMPI_Win_toint(MPI_Win win)
{
    return predefined_only_toint((uintptr_t)win, (uintptr_t)MPI_WIN_NULL, "MPI_Win_toint");
}
PB_MPI_WEAK_ALIAS(MPI_Win_toint, PMPI_Win_toint);

PB_EXPORT MPI_Win PMPI_Win_fromint(int win)
{
    (void)win;
    return MPI_WIN_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Win_fromint, PMPI_Win_fromint);

/* MPI_FILE_NULL converts to its ABI value (0x118) and back; no file is
 * ever open, so any other integer gives MPI_FILE_NULL. */
PB_EXPORT int PMPI_File_toint(MPI_File file)
{
    return predefined_only_toint((uintptr_t)file, (uintptr_t)MPI_FILE_NULL, "MPI_File_toint");
}
PB_MPI_WEAK_ALIAS(MPI_File_toint, PMPI_File_toint);

PB_EXPORT MPI_File PMPI_File_fromint(int file)
{
    (void)file;
    return MPI_FILE_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_File_fromint, PMPI_File_fromint);

/* MPI_SESSION_NULL converts to its ABI value (0x120) and back; no session
 * exists yet, so any other integer gives MPI_SESSION_NULL. */
PB_EXPORT int PMPI_Session_toint(MPI_Session session)
{
    return predefined_only_toint((uintptr_t)session, (uintptr_t)MPI_SESSION_NULL,
                                 "MPI_Session_toint");
}
PB_MPI_WEAK_ALIAS(MPI_Session_toint, PMPI_Session_toint);

PB_EXPORT MPI_Session PMPI_Session_fromint(int session)
{
    (void)session;
    return MPI_SESSION_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Session_fromint, PMPI_Session_fromint);

/* MPI_MESSAGE_NULL and MPI_MESSAGE_NO_PROC convert to their ABI values
 * (0x128, 0x129) and back; no matched message exists yet (MPI_Mprobe is
 * not built), so any other integer gives MPI_MESSAGE_NULL. */
PB_EXPORT int PMPI_Message_toint(MPI_Message message)
{
    return predefined_only_toint((uintptr_t)message, (uintptr_t)MPI_MESSAGE_NULL,
                                 "MPI_Message_toint");
}
PB_MPI_WEAK_ALIAS(MPI_Message_toint, PMPI_Message_toint);

PB_EXPORT MPI_Message PMPI_Message_fromint(int message)
{
    return message == (int)(uintptr_t)MPI_MESSAGE_NO_PROC ? MPI_MESSAGE_NO_PROC : MPI_MESSAGE_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Message_fromint, PMPI_Message_fromint);
