/*
 * The event set (src/util/evset.c): an entry's id names that entry only.
 * Once it is removed, its id names nothing, even after a new entry takes
 * its slot: an event epoll reported for the old entry is dropped, and a
 * modify or remove of the old id leaves the new entry alone.  The RSM
 * service thread and the tcp transport rely on this when a callback
 * removes a descriptor whose event is still in the batch being handled.
 */
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "harness.h"
#include "util/evset.h"

static int calls_a, calls_b;

static void count_a(void *arg, uint32_t events)
{
    (void)arg, (void)events;
    calls_a++;
}

static void count_b(void *arg, uint32_t events)
{
    (void)arg, (void)events;
    calls_b++;
}

/* an eventfd that is readable at once */
static int ready_fd(void)
{
    int fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);

    CHECK(fd >= 0);
    return fd;
}

/* a live entry's events reach its callback */
static void case_dispatch(void)
{
    pb_evset_t set = PB_EVSET_INITIALIZER;
    struct epoll_event events[4];
    uint64_t id;
    int fd = ready_fd(), n;

    CHECK(pb_evset_open(&set) == PB_OK);
    CHECK(pb_evset_add(&set, fd, EPOLLIN, count_a, NULL, &id) == PB_OK);
    CHECK(pb_evset_get(&set, id) != NULL);
    n = epoll_wait(set.epoll_fd, events, 4, 1000);
    CHECK(n == 1);
    pb_evset_dispatch(&set, events, n);
    CHECK(calls_a == 1);
}

/* an event of a removed entry whose slot a new entry took is dropped, and
 * the old id can neither modify nor remove the new entry */
static void case_stale_id(void)
{
    pb_evset_t set = PB_EVSET_INITIALIZER;
    struct epoll_event events[4];
    uint64_t old_id, new_id;
    int fd_a = ready_fd(), fd_b = ready_fd(), n;

    CHECK(pb_evset_open(&set) == PB_OK);
    CHECK(pb_evset_add(&set, fd_a, EPOLLIN, count_a, NULL, &old_id) == PB_OK);
    n = epoll_wait(set.epoll_fd, events, 4, 1000);
    CHECK(n == 1);
    /* as a callback earlier in the batch would: remove, and add another */
    pb_evset_remove(&set, old_id);
    close(fd_a);
    CHECK(pb_evset_add(&set, fd_b, EPOLLIN, count_b, NULL, &new_id) == PB_OK);
    CHECK_MSG((uint32_t)new_id == (uint32_t)old_id, "the new entry took another slot");
    CHECK(new_id != old_id);
    CHECK(pb_evset_get(&set, old_id) == NULL);
    CHECK(pb_evset_get(&set, new_id) != NULL);
    pb_evset_dispatch(&set, events, n);
    CHECK_MSG(calls_a == 0 && calls_b == 0, "a stale event ran a callback (a %d, b %d)", calls_a,
              calls_b);
    CHECK(pb_evset_modify(&set, old_id, 0) == PB_ERR_INVALID_PARAM);
    pb_evset_remove(&set, old_id);
    CHECK(pb_evset_get(&set, new_id) != NULL);
    n = epoll_wait(set.epoll_fd, events, 4, 1000);
    CHECK(n == 1);
    pb_evset_dispatch(&set, events, n);
    CHECK(calls_b == 1);
}

static const pbt_case_t cases[] = {
    PBT_CASE(dispatch),
    PBT_CASE(stale_id),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
