/*
 * The ofi transport (docs/ofi.md): the fabric (provider choice, endpoint,
 * address vector, completion queue), its progress, the peers' addresses
 * and the ops table.  ofi_impl.h says how the files share the work.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "boot/identity.h"
#include "rsm/ofi.h"
#include "rsm/ofi/ofi_impl.h"
#include "rsm/service.h"
#include "util/config.h"
#include "util/futex.h"
#include "util/log.h"
#include "util/log_limit.h"
#include "util/random.h"
#include "util/siphash.h"
#include "util/time.h"

/* entries read from the completion queue at a time */
#define OFI_CQ_BATCH 16
/* without a wait descriptor the service reads the queue this often */
#define OFI_POLL_INTERVAL_NS 1000000
/* with one and manual progress, this often too (what the descriptor does
 * not tell of: a provider's connection requests) */
#define OFI_TICK_NS 10000000

pb_ofi_state_t pb_ofi = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .progress = PTHREAD_MUTEX_INITIALIZER,
    .cq_fd = -1,
};
_Atomic int pb_ofi_sleepers;

/* ---- waking and sleeping ----------------------------------------------------- */

void pb_ofi_wake(_Atomic uint32_t *word)
{
    if (atomic_load(&pb_ofi_sleepers) == 0 && atomic_load(&pb_rsm_event_sleepers) == 0)
        return;
    pb_futex_wake_all(word);
}

int pb_ofi_sleep(_Atomic uint32_t *word, uint32_t expected, int timeout_ms)
{
    int interrupted = 0;

    atomic_fetch_add(&pb_ofi_sleepers, 1);
    if (atomic_load(word) == expected && pb_futex_wait(word, expected, timeout_ms) != 0 &&
        errno == EINTR)
        interrupted = 1;
    atomic_fetch_sub(&pb_ofi_sleepers, 1);
    return interrupted ? -1 : 0;
}

/* ---- the rendezvous MACs ------------------------------------------------------- */

uint64_t pb_ofi_request_mac(const uint8_t hello_nonce[16], const pb_ofi_rv_request_t *req)
{
    pb_siphash_t state;

    pb_siphash_init(&state, pb_boot_identity_get()->secret);
    pb_siphash_update(&state, "postbox-ofi-req", 16);
    pb_siphash_update(&state, hello_nonce, 16);
    /* every field but the MAC */
    pb_siphash_update(&state, req, offsetof(pb_ofi_rv_request_t, mac));
    return pb_siphash_final(&state);
}

uint64_t pb_ofi_reply_mac(const uint8_t request_nonce[16], const pb_ofi_rv_reply_t *reply)
{
    pb_siphash_t state;

    pb_siphash_init(&state, pb_boot_identity_get()->secret);
    pb_siphash_update(&state, "postbox-ofi-rep", 16);
    pb_siphash_update(&state, request_nonce, 16);
    pb_siphash_update(&state, reply, offsetof(pb_ofi_rv_reply_t, mac));
    return pb_siphash_final(&state);
}

/* ---- peers ----------------------------------------------------------------------- */

pb_ofi_peer_t *pb_ofi_peer_get(const uint8_t *name, size_t name_len)
{
    pb_ofi_peer_t *peer;

    for (peer = pb_ofi.peers; peer != NULL; peer = peer->next) {
        if (peer->name_len == name_len && memcmp(peer->name, name, name_len) == 0) {
            peer->refs++;
            return peer;
        }
    }
    peer = calloc(1, sizeof(*peer));
    if (peer == NULL)
        return NULL;
    memcpy(peer->name, name, name_len);
    peer->name_len = name_len;
    if (fi_av_insert(pb_ofi.av, peer->name, 1, &peer->addr, 0, NULL) != 1) {
        pb_error("ofi: a peer's address cannot be inserted into the address vector");
        free(peer);
        return NULL;
    }
    peer->refs = 1;
    peer->next = pb_ofi.peers;
    pb_ofi.peers = peer;
    return peer;
}

void pb_ofi_peer_put(pb_ofi_peer_t *peer)
{
    if (--peer->refs > 0)
        return;
    for (pb_ofi_peer_t **p = &pb_ofi.peers; *p != NULL; p = &(*p)->next) {
        if (*p == peer) {
            *p = peer->next;
            break;
        }
    }
    fi_av_remove(pb_ofi.av, &peer->addr, 1, 0);
    free(peer);
}

/* ---- progress -------------------------------------------------------------------- */

static void ofi_recv_post(pb_ofi_recv_t *r)
{
    ssize_t rc;

    r->kind = OFI_CTX_RECV;
    do {
        rc = fi_recv(pb_ofi.ep, &r->msg, sizeof(r->msg), NULL, FI_ADDR_UNSPEC, r);
        if (rc == -FI_EAGAIN)
            fi_cq_read(pb_ofi.cq, NULL, 0);
    } while (rc == -FI_EAGAIN);
    if (rc != 0)
        pb_error("ofi: fi_recv failed: %s; a receive buffer is lost",
                 pb_ofi_lib.strerror((int)-rc));
}

/* One completion (@err: an error completion).  Caller holds
 * pb_ofi.progress. */
static void ofi_complete(void *context, int err)
{
    int kind =
        context != NULL ? *(pb_ofi_ctx_kind_t *)((char *)context + offsetof(pb_ofi_op_t, kind)) : 0;

    if (kind == OFI_CTX_RECV) {
        pb_ofi_recv_t *r = context;

        if (!err) {
            pthread_mutex_lock(&pb_ofi.lock);
            if (r->msg.type == OFI_MSG_SIGNAL || r->msg.type == OFI_MSG_BARRIER)
                pb_ofi_export_on_msg(&r->msg);
            else
                pb_ofi_import_on_msg(&r->msg);
            pthread_mutex_unlock(&pb_ofi.lock);
        }
        ofi_recv_post(r);
    } else if (kind == OFI_CTX_OP) {
        pb_ofi_op_t *op = context;

        if (op->abandoned) {
            free(op);
            return;
        }
        op->status = err ? PB_ERR_CONN_ABORTED : PB_OK;
        atomic_store(&op->done, 1);
        pb_ofi_wake(&op->done);
    }
}

/* (offsetof on the two context kinds must agree) */
_Static_assert(offsetof(pb_ofi_op_t, kind) == offsetof(pb_ofi_recv_t, kind), "context kinds");

/* Drain the queue.  Caller holds pb_ofi.progress. */
static void ofi_progress_locked(void)
{
    struct fi_cq_data_entry entries[OFI_CQ_BATCH];

    for (;;) {
        ssize_t n = fi_cq_read(pb_ofi.cq, entries, OFI_CQ_BATCH);

        if (n == -FI_EAGAIN)
            return;
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry error = {0};

            if (fi_cq_readerr(pb_ofi.cq, &error, 0) == 1) {
                if (error.err != FI_ECANCELED)
                    pb_debug("ofi: an operation failed: %s",
                             fi_cq_strerror(pb_ofi.cq, error.prov_errno, error.err_data, NULL, 0));
                ofi_complete(error.op_context, 1);
            }
            continue;
        }
        if (n < 0) {
            pb_error("ofi: fi_cq_read failed: %s", pb_ofi_lib.strerror((int)-n));
            return;
        }
        for (ssize_t i = 0; i < n; i++)
            ofi_complete(entries[i].op_context, 0);
        if (n < OFI_CQ_BATCH)
            return;
    }
}

void pb_ofi_progress(void)
{
    if (pthread_mutex_trylock(&pb_ofi.progress) != 0)
        return;
    if (pb_ofi.ep != NULL)
        ofi_progress_locked();
    pthread_mutex_unlock(&pb_ofi.progress);
}

static pb_log_limit_t send_log;

pb_status_t pb_ofi_send(fi_addr_t addr, const pb_ofi_msg_t *msg)
{
    int64_t deadline = -1;

    for (;;) {
        ssize_t rc = fi_inject(pb_ofi.ep, msg, sizeof(*msg), addr);

        if (rc == 0)
            return PB_OK;
        if (rc != -FI_EAGAIN) {
            pb_log_limited(&send_log, 1000, "ofi: a message was not sent: %s",
                           pb_ofi_lib.strerror((int)-rc));
            return PB_ERR_CONN_ABORTED;
        }
        /* a peer that stays unreachable (a dead process the provider
         * keeps dialing) is given up after a while */
        if (deadline < 0)
            deadline = pb_time_now_ms() + PB_OFI_SEND_TIMEOUT_MS;
        else if (pb_time_now_ms() >= deadline)
            return PB_ERR_CONN_ABORTED;
        /* (progress without taking completions: the caller may be the
         * thread reading them) */
        fi_cq_read(pb_ofi.cq, NULL, 0);
    }
}

pb_status_t pb_ofi_op_wait_free(pb_ofi_op_t *op, pb_ofi_import_t *ti)
{
    pb_status_t status;

    int64_t spin_until = pb_time_now_ns() + (int64_t)pb_ofi.spin_us * 1000;
    int64_t next_check = 0;

    while (!atomic_load(&op->done)) {
        pb_ofi_progress();
        if (atomic_load(&op->done))
            break;
        if (pb_time_now_ns() < spin_until)
            continue;
        /* a long one: let the service thread read the queue, and look at
         * the exporter now and then */
        if (pb_time_now_ms() >= next_check) {
            if (ti != NULL && pb_ofi_import_state(ti) != PB_OK) {
                int gave_up = 0;

                pthread_mutex_lock(&pb_ofi.progress);
                if (!atomic_load(&op->done)) {
                    op->abandoned = 1;
                    gave_up = 1;
                }
                pthread_mutex_unlock(&pb_ofi.progress);
                if (gave_up)
                    return PB_ERR_CONN_ABORTED;
                break;
            }
            next_check = pb_time_now_ms() + PB_OFI_WAIT_SLICE_MS;
        }
        pb_ofi_sleep(&op->done, 0, pb_ofi.cq_fd >= 0 ? PB_OFI_WAIT_SLICE_MS : 1);
    }
    status = op->status;
    free(op);
    return status;
}

/* ---- the service's side ---------------------------------------------------------- */

/* Read the queue until the provider says a sleep on its descriptor would
 * miss nothing (fi_trywait). */
static void ofi_service_drain(void)
{
    for (int i = 0; i < 64; i++) {
        struct fid *fids[1] = {&pb_ofi.cq->fid};

        pthread_mutex_lock(&pb_ofi.progress);
        ofi_progress_locked();
        pthread_mutex_unlock(&pb_ofi.progress);
        if (pb_ofi.cq_fd < 0 || fi_trywait(pb_ofi.fabric, fids, 1) == FI_SUCCESS)
            return;
    }
}

/* The queue's descriptor is ready. */
static void ofi_service_cq_ready(void *arg, uint32_t events)
{
    (void)arg, (void)events;
    ofi_service_drain();
}

/* The poll timer ticked: with manual progress a provider's connection
 * requests (and, without a descriptor, everything) move only when someone
 * reads the queue. */
static void ofi_service_tick(void *arg, uint32_t events)
{
    uint64_t ticks;

    (void)events;
    (void)!read(*(int *)arg, &ticks, sizeof(ticks));
    ofi_service_drain();
}

static int ofi_timer_fd = -1;
static pid_t ofi_started_pid; /* (the process that opened the fabric) */
static uint64_t ofi_timer_id;

/* Hand the queue's descriptor, and with manual progress a timer, to the
 * service thread.  Caller holds pb_rsm_lock. */
static pb_status_t ofi_service_watch(void)
{
    pb_status_t status = pb_rsm_service_start();

    if (status != PB_OK)
        return status;
    if (pb_ofi.cq_fd >= 0) {
        /* (the service closes what it watches: give it a copy) */
        int fd = dup(pb_ofi.cq_fd);

        if (fd < 0)
            return PB_ERR_NO_RESOURCE;
        status = pb_rsm_service_add(fd, EPOLLIN, ofi_service_cq_ready, NULL, &pb_ofi.service_id);
        if (status != PB_OK) {
            close(fd);
            return status;
        }
    }
    if (pb_ofi.manual || pb_ofi.cq_fd < 0) {
        long ns = pb_ofi.cq_fd >= 0 ? OFI_TICK_NS : OFI_POLL_INTERVAL_NS;
        struct itimerspec every = {{0, ns}, {0, ns}};
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);

        if (fd < 0 || timerfd_settime(fd, 0, &every, NULL) != 0) {
            pb_error("ofi: cannot make the progress timer: %m");
            if (fd >= 0)
                close(fd);
            return PB_ERR_NO_RESOURCE;
        }
        ofi_timer_fd = fd;
        status = pb_rsm_service_add(fd, EPOLLIN, ofi_service_tick, &ofi_timer_fd, &ofi_timer_id);
        if (status != PB_OK) {
            close(fd);
            return status;
        }
    }
    /* (the descriptor tells of traffic only once the provider agreed to
     * a sleep) */
    ofi_service_drain();
    return PB_OK;
}

/* ---- start --------------------------------------------------------------------- */

/* The provider's offers that fit: RMA and messages on a reliable datagram
 * endpoint, with memory registration modes the transport handles. */
static struct fi_info *ofi_getinfo(const char *provider)
{
    struct fi_info *hints = pb_ofi_lib.dupinfo(NULL), *info = NULL;
    int rc;

    if (hints == NULL)
        return NULL;
    hints->caps =
        FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->domain_attr->mr_mode =
        FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    if (provider != NULL && *provider != '\0')
        hints->fabric_attr->prov_name = strdup(provider);
    rc = pb_ofi_lib.getinfo(PB_OFI_FI_VERSION, NULL, NULL, 0, hints, &info);
    /* the providers were initialised: some set signal handlers then */
    pb_ofi_lib_undo_signal_handlers();
    pb_ofi_lib.freeinfo(hints);
    if (rc != 0)
        return NULL;
    return info;
}

/* Open every object of the fabric for @info.  Caller holds pb_ofi.lock. */
static pb_status_t ofi_open(struct fi_info *info)
{
    struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC};
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .size = 4096, .wait_obj = FI_WAIT_FD};
    size_t len = sizeof(pb_ofi.name);
    int rc;

    if ((rc = pb_ofi_lib.fabric(info->fabric_attr, &pb_ofi.fabric, NULL)) != 0 ||
        (rc = fi_domain(pb_ofi.fabric, info, &pb_ofi.domain, NULL)) != 0 ||
        (rc = fi_av_open(pb_ofi.domain, &av_attr, &pb_ofi.av, NULL)) != 0)
        goto fail;
    rc = fi_cq_open(pb_ofi.domain, &cq_attr, &pb_ofi.cq, NULL);
    if (rc == 0 && fi_control(&pb_ofi.cq->fid, FI_GETWAIT, &pb_ofi.cq_fd) != 0)
        pb_ofi.cq_fd = -1;
    if (rc != 0) {
        /* no wait descriptor: the service polls on a timer */
        cq_attr.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(pb_ofi.domain, &cq_attr, &pb_ofi.cq, NULL);
        pb_ofi.cq_fd = -1;
    }
    if (rc != 0 || (rc = fi_endpoint(pb_ofi.domain, info, &pb_ofi.ep, NULL)) != 0 ||
        (rc = fi_ep_bind(pb_ofi.ep, &pb_ofi.av->fid, 0)) != 0 ||
        (rc = fi_ep_bind(pb_ofi.ep, &pb_ofi.cq->fid, FI_TRANSMIT | FI_RECV)) != 0 ||
        (rc = fi_enable(pb_ofi.ep)) != 0 ||
        (rc = fi_getname(&pb_ofi.ep->fid, pb_ofi.name, &len)) != 0)
        goto fail;
    pb_ofi.name_len = len;
    return PB_OK;
fail:
    pb_error("ofi: opening provider %s failed: %s", info->fabric_attr->prov_name,
             pb_ofi_lib.strerror(rc < 0 ? -rc : rc));
    return PB_ERR_NO_RESOURCE;
}

pb_status_t pb_ofi_start(int rsm_locked)
{
    const char *provider = pb_config_get_string("POSTBOX_OFI_PROVIDER");
    pb_status_t status;
    struct fi_info *info;
    uint64_t seed;

    pthread_mutex_lock(&pb_ofi.lock);
    if (pb_ofi.started) {
        status = pb_ofi.start_status;
        pthread_mutex_unlock(&pb_ofi.lock);
        return status;
    }
    pb_ofi.started = 1;
    info = ofi_getinfo(provider);
    if (info == NULL) {
        pb_error("ofi: no libfabric provider %s%soffers RMA on a reliable datagram endpoint",
                 provider != NULL ? provider : "", provider != NULL ? " " : "");
        pb_ofi.start_status = PB_ERR_UNREACHABLE;
        pthread_mutex_unlock(&pb_ofi.lock);
        return PB_ERR_UNREACHABLE;
    }
    pb_ofi.info = pb_ofi_lib.dupinfo(info);
    pb_ofi_lib.freeinfo(info);
    info = pb_ofi.info;
    pb_ofi.inject_size = info->tx_attr->inject_size;
    pb_ofi.manual = info->domain_attr->data_progress == FI_PROGRESS_MANUAL;
    pb_ofi.ordered_waw = (info->tx_attr->msg_order & FI_ORDER_WAW) != 0 &&
                         info->ep_attr->max_order_waw_size >= PB_RSM_WORD_LAST_MAX;
    pb_ofi.spin_us = (int)pb_config_get_long("POSTBOX_OFI_SPIN_US");
    status = ofi_open(info);
    if (status == PB_OK && pb_ofi.inject_size < sizeof(pb_ofi_msg_t)) {
        pb_error("ofi: provider %s injects only %zu bytes", info->fabric_attr->prov_name,
                 pb_ofi.inject_size);
        status = PB_ERR_NO_RESOURCE;
    }
    if (status == PB_OK && pb_ofi.name_len > PB_OFI_NAME_MAX)
        status = PB_ERR_NO_RESOURCE;
    if (status == PB_OK) {
        if (pb_random_bytes(&seed, sizeof(seed)) != 0)
            seed = (uint64_t)pb_time_now_ns();
        pb_ofi.next_token = (uint32_t)seed | 1;
        pb_ofi.next_key = seed >> 16;
        for (int i = 0; i < PB_OFI_RECV_COUNT; i++)
            ofi_recv_post(&pb_ofi.recvs[i]);
    }
    pb_ofi.start_status = status;
    ofi_started_pid = getpid();
    pthread_mutex_unlock(&pb_ofi.lock);
    if (status == PB_OK) {
        /* the service reads the queue: the exporter's side needs no
         * application thread */
        if (!rsm_locked)
            pthread_mutex_lock(&pb_rsm_lock);
        status = ofi_service_watch();
        if (!rsm_locked)
            pthread_mutex_unlock(&pb_rsm_lock);
        pb_debug("ofi: provider %s, domain %s, %s progress", info->fabric_attr->prov_name,
                 info->domain_attr->name, pb_ofi.manual ? "manual" : "automatic");
    }
    return status;
}

void pb_ofi_close_if_idle(void)
{
    pthread_mutex_lock(&pb_ofi.progress);
    pthread_mutex_lock(&pb_ofi.lock);
    if (pb_ofi.started && pb_ofi.start_status == PB_OK && pb_ofi.imports == NULL &&
        pb_ofi.published == NULL && pb_ofi.attaches == NULL && pb_ofi.connecting == 0 &&
        getpid() == ofi_started_pid) {
        if (pb_ofi.service_id != 0)
            pb_rsm_service_remove(pb_ofi.service_id);
        if (ofi_timer_id != 0)
            pb_rsm_service_remove(ofi_timer_id);
        pb_ofi.service_id = 0;
        ofi_timer_id = 0;
        ofi_timer_fd = -1;
        while (pb_ofi.peers != NULL) {
            pb_ofi_peer_t *peer = pb_ofi.peers;

            pb_ofi.peers = peer->next;
            free(peer);
        }
        fi_close(&pb_ofi.ep->fid);
        fi_close(&pb_ofi.av->fid);
        fi_close(&pb_ofi.cq->fid);
        fi_close(&pb_ofi.domain->fid);
        fi_close(&pb_ofi.fabric->fid);
        pb_ofi_lib.freeinfo(pb_ofi.info);
        pb_ofi.ep = NULL;
        pb_ofi.av = NULL;
        pb_ofi.cq = NULL;
        pb_ofi.domain = NULL;
        pb_ofi.fabric = NULL;
        pb_ofi.info = NULL;
        pb_ofi.cq_fd = -1;
        pb_ofi.started = 0;
    }
    pthread_mutex_unlock(&pb_ofi.lock);
    pthread_mutex_unlock(&pb_ofi.progress);
}

/* At exit, close the endpoint: a provider may hold names outside the
 * process (shm: a file in /dev/shm) that only closing removes.  Not while
 * another thread is inside the transport, and not in a forked child, whose
 * endpoint is its parent's. */
__attribute__((destructor)) static void ofi_stop(void)
{
    if (!pb_ofi.started || pb_ofi.start_status != PB_OK || getpid() != ofi_started_pid)
        return;
    if (pthread_mutex_trylock(&pb_rsm_lock) != 0)
        return;
    if (pthread_mutex_trylock(&pb_ofi.progress) == 0) {
        if (pthread_mutex_trylock(&pb_ofi.lock) == 0) {
            if (pb_ofi.service_id != 0)
                pb_rsm_service_remove(pb_ofi.service_id);
            if (ofi_timer_id != 0)
                pb_rsm_service_remove(ofi_timer_id);
            pb_ofi.start_status = PB_ERR_CONN_ABORTED;
            fi_close(&pb_ofi.ep->fid);
            pthread_mutex_unlock(&pb_ofi.lock);
        }
        pthread_mutex_unlock(&pb_ofi.progress);
    }
    pthread_mutex_unlock(&pb_rsm_lock);
}

/* ---- the ops table ----------------------------------------------------------------- */

const char *pb_ofi_describe(void)
{
    static char text[256];
    char loaded[48] = "not loaded yet";

    if (pb_ofi_lib_loaded()) {
        uint32_t version = pb_ofi_lib.version();

        snprintf(loaded, sizeof(loaded), "libfabric %u.%u loaded", FI_MAJOR(version),
                 FI_MINOR(version));
    }
    snprintf(text, sizeof(text),
             "ofi: built (libfabric %d.%d headers; %s: POSTBOX_OFI_LIBRARY, at the first "
             "rsm_get_controller(\"ofi\")); provider: POSTBOX_OFI_PROVIDER, else the first with "
             "RMA on a reliable datagram endpoint; cannot map, cannot run calls",
             FI_MAJOR_VERSION, FI_MINOR_VERSION, loaded);
    return text;
}

/* The controller is asked for: load libfabric. */
static pb_status_t ofi_controller_open(void)
{
    return pb_ofi_lib_load();
}

static void ofi_query(pb_rsm_caps_t *caps_p)
{
    caps_p->can_map = 0;
    caps_p->reaches_job_nodes = 1;
    caps_p->page_size = (size_t)sysconf(_SC_PAGESIZE);
    caps_p->max_segment_size = PB_OFI_MAX_SEGMENT_SIZE;
}

static int ofi_reaches(rsm_node_id_t node)
{
    /* any node: on another network namespace or host the tcp transport's
     * relayed lookup finds the exporter; whether a segment is there is the
     * import's question */
    (void)node;
    return 1;
}

const pb_rsm_transport_ops_t pb_ofi_transport = {
    .name = "ofi",
    .open = ofi_controller_open,
    .query = ofi_query,
    .reaches = ofi_reaches,
    .export_create = pb_ofi_export_create,
    .export_destroy = pb_ofi_export_destroy,
    .export_rebind = pb_ofi_export_rebind,
    .export_publish = pb_ofi_export_publish,
    .export_unpublish = pb_ofi_export_unpublish,
    .import_connect = pb_ofi_import_connect,
    .import_disconnect = pb_ofi_import_disconnect,
    .put = pb_ofi_put,
    .put_word_last = pb_ofi_put_word_last,
    .put_vector = pb_ofi_put_vector,
    .get = pb_ofi_get,
    .call = pb_ofi_call,
    .map = pb_ofi_map,
    .unmap = pb_ofi_unmap,
    .barrier_open = pb_ofi_barrier_open,
    .barrier_order = pb_ofi_barrier_order,
    .barrier_close = pb_ofi_barrier_close,
    .export_signal_post = pb_ofi_export_signal_post,
    .import_signal_post = pb_ofi_import_signal_post,
    .export_signal_wait = pb_ofi_export_signal_wait,
    .import_signal_wait = pb_ofi_import_signal_wait,
    .export_event_word = pb_ofi_export_event_word,
    .import_event_word = pb_ofi_import_event_word,
};
