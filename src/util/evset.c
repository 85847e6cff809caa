#include "util/evset.h"

#include <stdlib.h>

#include "util/log.h"

pb_status_t pb_evset_open(pb_evset_t *set)
{
    set->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (set->epoll_fd < 0) {
        pb_error("epoll_create1 failed: %m");
        return PB_ERR_NO_RESOURCE;
    }
    return PB_OK;
}

pb_status_t pb_evset_add(pb_evset_t *set, int fd, uint32_t events, pb_evset_func_t cb, void *arg,
                         uint64_t *id_p)
{
    struct epoll_event event = {.events = events};
    pb_evset_entry_t *entry;
    uint32_t slot;

    for (slot = 0; slot < set->count && set->entries[slot].in_use; slot++)
        ;
    if (slot == set->count) {
        if (set->count == set->capacity) {
            uint32_t capacity = set->capacity ? 2 * set->capacity : 16;
            pb_evset_entry_t *grown = realloc(set->entries, capacity * sizeof(*grown));

            if (grown == NULL)
                return PB_ERR_NO_MEMORY;
            set->entries = grown;
            set->capacity = capacity;
        }
        set->entries[slot].generation = 0;
        set->entries[slot].in_use = 0;
        set->count++;
    }
    entry = &set->entries[slot];
    entry->generation++;
    event.data.u64 = (uint64_t)entry->generation << 32 | slot;
    if (epoll_ctl(set->epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
        pb_error("epoll_ctl(ADD, fd %d) failed: %m", fd);
        return PB_ERR_IO;
    }
    entry->fd = fd;
    entry->cb = cb;
    entry->arg = arg;
    entry->in_use = 1;
    *id_p = event.data.u64;
    return PB_OK;
}

pb_status_t pb_evset_modify(pb_evset_t *set, uint64_t id, uint32_t events)
{
    pb_evset_entry_t *entry = pb_evset_get(set, id);
    struct epoll_event event = {.events = events, .data.u64 = id};

    if (entry == NULL)
        return PB_ERR_INVALID_PARAM;
    if (epoll_ctl(set->epoll_fd, EPOLL_CTL_MOD, entry->fd, &event) != 0)
        return PB_ERR_IO;
    return PB_OK;
}

void pb_evset_remove(pb_evset_t *set, uint64_t id)
{
    pb_evset_entry_t *entry = pb_evset_get(set, id);

    if (entry == NULL)
        return;
    epoll_ctl(set->epoll_fd, EPOLL_CTL_DEL, entry->fd, NULL);
    entry->in_use = 0;
}

void pb_evset_forget(pb_evset_t *set)
{
    free(set->entries);
    *set = (pb_evset_t)PB_EVSET_INITIALIZER;
}
