/*
 * The RSM service thread.  Exporters serve imports (and, for network
 * transports, remote operations) without their application calling into the
 * library: one helper thread per process sleeps in epoll_wait and runs the
 * callback of each ready descriptor with pb_rsm_lock held.  It costs no CPU
 * when there is no traffic.  It starts on first use.
 *
 * The thread also holds this process's liveness word: a robust futex in a
 * page other processes may map read-only (pb_rsm_service_liveness_fd).
 * When the process dies, however it dies, the kernel sets FUTEX_OWNER_DIED
 * in the word, so importers learn of an exporter's death with one load.
 */
#ifndef PB_RSM_SERVICE_H
#define PB_RSM_SERVICE_H

#include <stdatomic.h>
#include <stdint.h>

#include "util/evset.h"
#include "util/status.h"

/* called with pb_rsm_lock held; @events are epoll events */
typedef pb_evset_func_t pb_rsm_service_cb_t;

/* Watch @fd for @events (EPOLLIN, ...) and call @cb(@arg, events) from the
 * service thread.  Takes ownership of @fd (closed by remove).  Caller holds
 * pb_rsm_lock.  @return PB_OK, PB_ERR_NO_RESOURCE or PB_ERR_IO. */
pb_status_t pb_rsm_service_add(int fd, uint32_t events, pb_rsm_service_cb_t cb, void *arg,
                               uint64_t *id_p);

/* Watch entry @id for @events again: for entries added with EPOLLONESHOT,
 * which the kernel disarms after each report.  Caller holds pb_rsm_lock.
 * @return PB_OK, PB_ERR_INVALID_PARAM (no such entry), PB_ERR_IO. */
pb_status_t pb_rsm_service_rearm(uint64_t id, uint32_t events);

/* Stop watching and close the descriptor of entry @id; its callback will
 * not run again.  Caller holds pb_rsm_lock. */
void pb_rsm_service_remove(uint64_t id);

/* Start the service thread if needed.  Caller holds pb_rsm_lock.
 * @return PB_OK or PB_ERR_NO_RESOURCE. */
pb_status_t pb_rsm_service_start(void);

/* A memfd of one page holding this process's liveness word at offset
 * PB_RSM_LIVENESS_WORD_OFFSET (the service must be started).  Sealed
 * (F_SEAL_FUTURE_WRITE): others can only map it read-only. */
int pb_rsm_service_liveness_fd(void);

#define PB_RSM_LIVENESS_WORD_OFFSET 64
/* set in the liveness word by the kernel when the holder died */
#define PB_RSM_LIVENESS_OWNER_DIED 0x40000000u

/* Whether the process whose liveness page is mapped at @page has died. */
static inline int pb_rsm_liveness_dead(const void *page)
{
    const _Atomic uint32_t *word =
        (const _Atomic uint32_t *)((const char *)page + PB_RSM_LIVENESS_WORD_OFFSET);

    return (atomic_load_explicit(word, memory_order_acquire) & PB_RSM_LIVENESS_OWNER_DIED) != 0;
}

#endif
