/*
 * The RSM layer's internal objects: what a public handle points to.  The
 * dispatcher (rsm.c) checks arguments against these and calls the
 * controller's transport; transports keep their own state behind `tl`.
 */
#ifndef PB_RSM_IMPL_H
#define PB_RSM_IMPL_H

#include <postbox/rsm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "rsm/transport.h"

#define PB_RSM_CONTROLLER_NAME_MAX 32

typedef enum {
    PB_RSM_HANDLE_CONTROLLER = 0,
    PB_RSM_HANDLE_EXPORT = 1,
    PB_RSM_HANDLE_IMPORT = 2,
    PB_RSM_HANDLE_LOCALMEM = 3,
    PB_RSM_HANDLE_KINDS = 4
} pb_rsm_handle_kind_t;

struct __rsmapi_controller_handle {
    uint32_t magic;
    const pb_rsm_transport_ops_t *transport;
    int refcount;        /* gets minus releases, under pb_rsm_lock */
    int progress_claims; /* pb_rsm_progress_claim minus releases, likewise */
    void *tl;            /* transport state */
};

struct __rsm_memseg_export_handle {
    uint32_t magic;
    rsmapi_controller_handle_t controller;
    void *vaddr;
    size_t size;
    uint_t flags;
    int published;
    rsm_memseg_id_t segid;
    rsmapi_access_entry_t *acl; /* NULL: every node, owner read-write */
    uint_t acl_length;
    int pollfd_refs; /* rsm_memseg_get_pollfd references held */
    /* pb_rsm_memseg_export_set_handler's, under pb_rsm_lock (which the
     * transport holds while it runs one) */
    pb_rsm_call_handler_t call_handler;
    void *call_arg;
    void *tl;
};

struct __rsm_memseg_import_handle {
    uint32_t magic;
    const pb_rsm_transport_ops_t *transport; /* the controller's, read on every put */
    rsmapi_controller_handle_t controller;
    rsm_node_id_t node;
    rsm_memseg_id_t segid;
    rsm_permission_t perm;
    size_t size;
    rsm_barrier_mode_t mode;
    void *map_addr; /* user mapping made by rsm_memseg_import_map, or NULL */
    size_t map_length;
    int pollfd_refs;
    void *tl;
};

struct __rsm_localmemory_handle {
    uint32_t magic;
    char *vaddr;
    size_t length;
};

/*
 * Handle storage.  Each kind of handle lives in one arena of reserved
 * address space that grows by committing chunks and is never returned to
 * the system: a freed handle keeps its memory with a dead magic, so a stale
 * handle is reported as bad instead of touching freed memory, and any
 * pointer is checked against the arena (one compare) before it is read.
 */

/* A new zeroed handle of @kind with its magic set, or NULL (no memory). */
void *pb_rsm_handle_alloc(pb_rsm_handle_kind_t kind);

/* Invalidate and recycle a handle from pb_rsm_handle_alloc. */
void pb_rsm_handle_free(pb_rsm_handle_kind_t kind, void *handle);

typedef struct {
    _Atomic(char *) arena;    /* reserved address space, NULL until first use */
    _Atomic size_t committed; /* bytes of the arena in use; grows with release */
    uint32_t magic;           /* of a live handle; a freed one has 0 */
    unsigned stride_shift;    /* entries are 1 << stride_shift bytes apart */
    void *free_list;          /* a free handle's second word links to the next */
} pb_rsm_handle_pool_t;

extern pb_rsm_handle_pool_t pb_rsm_handle_pools[PB_RSM_HANDLE_KINDS];

/* Whether @ptr is a live handle of @kind.  Inline: every put asks. */
static inline int pb_rsm_handle_is_valid(pb_rsm_handle_kind_t kind, const void *ptr)
{
    const pb_rsm_handle_pool_t *pool = &pb_rsm_handle_pools[kind];
    /* acquire: a non-zero size was published after the arena pointer */
    size_t committed = atomic_load_explicit(&pool->committed, memory_order_acquire);
    uintptr_t base = (uintptr_t)atomic_load_explicit(&pool->arena, memory_order_relaxed);
    uintptr_t stride = (uintptr_t)1 << pool->stride_shift;
    /* unsigned: an address below the arena wraps and fails the test */
    uintptr_t offset = (uintptr_t)ptr - base;

    return offset < committed && (offset & (stride - 1)) == 0 &&
           *(const uint32_t *)ptr == pool->magic;
}

/* The permission (RSM_PERM_*) the access list of @seg grants a peer of
 * @uid/@gid on @node: the owner, group or other digit of the entry naming
 * the node (a NULL list grants the owner read-write to every node); -1
 * when the list does not name the node.  Caller holds pb_rsm_lock. */
int pb_rsm_acl_grant(const pb_rsm_export_t *seg, rsm_node_id_t node, uid_t uid, gid_t gid);

/* Threads asleep (or about to sleep) in rsm_intr_signal_wait_pollfd on
 * event words: a transport that changes an event word from its own
 * threads may skip the futex wake while this is zero (seq_cst on both
 * sides: the waiter counts itself before it reads the words). */
extern _Atomic int pb_rsm_event_sleepers;

/* The lock of the RSM control path (create, publish, connect, ...) and of the
 * service thread.  The shm data path never takes it; the tcp transport's
 * waits and polls (a barrier, a get, a signal wait or poll, a put that must
 * wait for a barrier) take it to handle what the sockets delivered
 * (src/rsm/tcp/tcp_impl.h gives the lock order). */
extern pthread_mutex_t pb_rsm_lock;

/* The lock of the handle pools (taken inside pb_rsm_lock, never around it). */
extern pthread_mutex_t pb_rsm_handle_lock;

#endif
