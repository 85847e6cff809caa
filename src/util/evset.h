/*
 * An event set: an epoll set whose entries are named by ids that outlive
 * them safely.  Each entry holds a descriptor and the callback to run when
 * it is ready; its id is (generation << 32 | slot), so an event reported
 * for an entry removed since (its slot maybe reused) is recognised and
 * dropped by pb_evset_get.  The RSM service thread and the tcp transport
 * each keep one.  Not thread-safe: the owner serialises every call.
 */
#ifndef PB_UTIL_EVSET_H
#define PB_UTIL_EVSET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "util/status.h"

/* @events are the epoll events reported for the entry */
typedef void (*pb_evset_func_t)(void *arg, uint32_t events);

typedef struct {
    int fd;
    uint32_t generation;
    int in_use;
    pb_evset_func_t cb;
    void *arg;
} pb_evset_entry_t;

typedef struct {
    int epoll_fd; /* -1 until pb_evset_open */
    pb_evset_entry_t *entries;
    uint32_t count, capacity; /* slots used so far, slots allocated */
} pb_evset_t;

#define PB_EVSET_INITIALIZER                                                                       \
    {                                                                                              \
        .epoll_fd = -1                                                                             \
    }

/* Create @set's epoll set (close-on-exec).
 * @return PB_OK, or PB_ERR_NO_RESOURCE (logged). */
pb_status_t pb_evset_open(pb_evset_t *set);

/* Watch @fd for @events and run @cb(@arg, events) when the owner
 * dispatches them; the descriptor stays the caller's.  *@id_p names the
 * entry.  @return PB_OK, PB_ERR_NO_MEMORY, or PB_ERR_IO (logged). */
pb_status_t pb_evset_add(pb_evset_t *set, int fd, uint32_t events, pb_evset_func_t cb, void *arg,
                         uint64_t *id_p);

/* Watch entry @id for @events instead (and again, for EPOLLONESHOT).
 * @return PB_OK, PB_ERR_INVALID_PARAM (no such entry), or PB_ERR_IO
 * (errno set; not logged). */
pb_status_t pb_evset_modify(pb_evset_t *set, uint64_t id, uint32_t events);

/* Stop watching entry @id (no such entry: nothing); the caller closes its
 * descriptor. */
void pb_evset_remove(pb_evset_t *set, uint64_t id);

/* Forget every entry and the epoll set without closing anything: for a
 * forked child, whose descriptors the caller closes as it sees fit. */
void pb_evset_forget(pb_evset_t *set);

/* The live entry named @id, or NULL (removed, or never added). */
static inline pb_evset_entry_t *pb_evset_get(const pb_evset_t *set, uint64_t id)
{
    uint32_t slot = (uint32_t)id;

    if (slot >= set->count || !set->entries[slot].in_use ||
        set->entries[slot].generation != (uint32_t)(id >> 32))
        return NULL;
    return &set->entries[slot];
}

/* Run the callback of each of the @count events epoll_wait returned for
 * @set whose entry is still there. */
static inline void pb_evset_dispatch(const pb_evset_t *set, const struct epoll_event *events,
                                     int count)
{
    for (int i = 0; i < count; i++) {
        pb_evset_entry_t *entry = pb_evset_get(set, events[i].data.u64);

        if (entry != NULL)
            entry->cb(entry->arg, events[i].events);
    }
}

#endif
