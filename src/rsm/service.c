#include "rsm/service.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rsm/rsm_impl.h"
#include "util/evset.h"
#include "util/log.h"
#include "util/thread.h"

#define SERVICE_MAX_EVENTS 32
#define LIVENESS_PAGE_SIZE 4096
#define SERVICE_STACK_SIZE (256 * 1024)

/* the liveness page: a robust-list node, then the futex word */
typedef struct {
    struct robust_list node;
    char pad[PB_RSM_LIVENESS_WORD_OFFSET - sizeof(struct robust_list)];
    _Atomic uint32_t word;
} liveness_page_t;

_Static_assert(offsetof(liveness_page_t, word) == PB_RSM_LIVENESS_WORD_OFFSET,
               "liveness word offset");

static struct {
    int started;
    pb_evset_t set; /* what the thread watches */
    int liveness_fd;
    liveness_page_t *liveness;
    int atfork_registered;
} service = {.set = PB_EVSET_INITIALIZER, .liveness_fd = -1};

/* the service thread's robust list: just the liveness node */
static struct robust_list_head liveness_head;

/* posted by the service thread once it holds the liveness word */
static sem_t service_ready;

pthread_mutex_t pb_rsm_lock = PTHREAD_MUTEX_INITIALIZER;

static void *service_thread_main(void *unused)
{
    struct epoll_event events[SERVICE_MAX_EVENTS];
    liveness_page_t *liveness = service.liveness;
    int epoll_fd = service.set.epoll_fd;

    /* hold the liveness word: our tid in it, our node on the robust list,
     * so the kernel marks it FUTEX_OWNER_DIED when this process dies */
    atomic_store_explicit(&liveness->word, (uint32_t)syscall(SYS_gettid), memory_order_release);
    liveness_head.list.next = &liveness->node;
    liveness_head.futex_offset = offsetof(liveness_page_t, word);
    liveness_head.list_op_pending = NULL;
    liveness->node.next = &liveness_head.list;
    if (syscall(SYS_set_robust_list, &liveness_head, sizeof(liveness_head)) != 0)
        pb_warn("set_robust_list failed: %m; importers will not see this process die");
    sem_post(&service_ready);

    for (;;) {
        int count = epoll_wait(epoll_fd, events, SERVICE_MAX_EVENTS, -1);

        if (count < 0) {
            if (errno == EINTR)
                continue;
            pb_error("epoll_wait failed: %m; RSM service stops");
            return NULL;
        }
        pthread_mutex_lock(&pb_rsm_lock);
        /* (an entry removed since epoll_wait returned is skipped) */
        pb_evset_dispatch(&service.set, events, count);
        pthread_mutex_unlock(&pb_rsm_lock);
    }
}

/* fork while another thread holds an RSM lock must not leave it locked in
 * the child: take both around the fork */
static void service_atfork_prepare(void)
{
    pthread_mutex_lock(&pb_rsm_lock);
    pthread_mutex_lock(&pb_rsm_handle_lock);
}

static void service_atfork_parent(void)
{
    pthread_mutex_unlock(&pb_rsm_handle_lock);
    pthread_mutex_unlock(&pb_rsm_lock);
}

/* The child has no service thread: forget the parent's, and close its
 * descriptors so that the parent's listening sockets do not outlive it. */
static void service_atfork_child(void)
{
    pthread_mutex_init(&pb_rsm_lock, NULL);
    pthread_mutex_init(&pb_rsm_handle_lock, NULL);
    if (!service.started)
        return;
    for (uint32_t i = 0; i < service.set.count; i++) {
        if (service.set.entries[i].in_use)
            close(service.set.entries[i].fd);
    }
    close(service.set.epoll_fd);
    pb_evset_forget(&service.set);
    close(service.liveness_fd);
    munmap(service.liveness, LIVENESS_PAGE_SIZE);
    service.liveness_fd = -1;
    service.liveness = NULL;
    service.started = 0;
}

pb_status_t pb_rsm_service_start(void)
{
    int ret;

    if (service.started)
        return PB_OK;
    if (!service.atfork_registered) {
        pthread_atfork(service_atfork_prepare, service_atfork_parent, service_atfork_child);
        service.atfork_registered = 1;
    }
    if (pb_evset_open(&service.set) != PB_OK)
        goto err;
    service.liveness_fd = memfd_create("postbox-liveness", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (service.liveness_fd < 0) {
        pb_error("memfd_create failed: %m");
        goto err_close_epoll;
    }
    /* 0400: importers cannot reopen it for writing through /proc */
    if (ftruncate(service.liveness_fd, LIVENESS_PAGE_SIZE) != 0 ||
        fcntl(service.liveness_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0 ||
        fchmod(service.liveness_fd, 0400) != 0) {
        pb_error("sizing the liveness page failed: %m");
        goto err_close_liveness;
    }
    service.liveness =
        mmap(NULL, LIVENESS_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, service.liveness_fd, 0);
    if (service.liveness == MAP_FAILED) {
        pb_error("mmap of the liveness page failed: %m");
        service.liveness = NULL;
        goto err_close_liveness;
    }
    /* only this mapping may write it: no other process, root included, can
     * map it writable or write it, so none can mark this process dead */
    if (fcntl(service.liveness_fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
        pb_error("sealing the liveness page failed: %m");
        goto err_unmap;
    }

    /* the thread takes no signals but its own faults': they belong to the
     * application */
    sem_init(&service_ready, 0, 0);
    ret = pb_thread_start_masked(service_thread_main, NULL, 1, SERVICE_STACK_SIZE, NULL);
    if (ret != 0) {
        errno = ret;
        pb_error("starting the RSM service thread failed: %m");
        goto err_unmap;
    }
    /* Return only once the thread holds the liveness word, so that no
     * importer can see this process before its death would show; the thread
     * is then idle in epoll_wait, so a fork never copies it mid-start. */
    while (sem_wait(&service_ready) != 0 && errno == EINTR)
        ;
    service.started = 1;
    return PB_OK;

err_unmap:
    munmap(service.liveness, LIVENESS_PAGE_SIZE);
    service.liveness = NULL;
err_close_liveness:
    close(service.liveness_fd);
    service.liveness_fd = -1;
err_close_epoll:
    close(service.set.epoll_fd);
    service.set.epoll_fd = -1;
err:
    return PB_ERR_NO_RESOURCE;
}

int pb_rsm_service_liveness_fd(void)
{
    return service.liveness_fd;
}

pb_status_t pb_rsm_service_add(int fd, uint32_t events, pb_rsm_service_cb_t cb, void *arg,
                               uint64_t *id_p)
{
    pb_status_t status = pb_rsm_service_start();

    if (status != PB_OK)
        return status;
    return pb_evset_add(&service.set, fd, events, cb, arg, id_p);
}

pb_status_t pb_rsm_service_rearm(uint64_t id, uint32_t events)
{
    pb_status_t status = pb_evset_modify(&service.set, id, events);

    if (status == PB_ERR_IO)
        pb_error("epoll_ctl(MOD, fd %d) failed: %m", pb_evset_get(&service.set, id)->fd);
    return status;
}

void pb_rsm_service_remove(uint64_t id)
{
    pb_evset_entry_t *entry = pb_evset_get(&service.set, id);
    int fd;

    if (entry == NULL)
        return;
    fd = entry->fd;
    pb_evset_remove(&service.set, id);
    close(fd);
}
