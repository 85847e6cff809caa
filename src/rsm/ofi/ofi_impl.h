/*
 * The ofi transport (docs/ofi.md): RSM over libfabric's reliable datagram
 * endpoints.  An export is a memory region registered for remote reads and
 * writes; puts and gets are RMA writes and reads; barriers and signals are
 * small messages that follow the writes they order.  Importers find an
 * export through a rendezvous socket of its node (src/rsm/rendezvous.h),
 * or, from a node that cannot see that socket (another network namespace
 * or host), through a TCP connection to the exporter's process, whose
 * address a relayed lookup of the tcp transport gives (rsm/tcp.h).  The
 * handshake authenticates both sides with the job secret and hands over
 * the region's key and address and the exporter's fabric address; the
 * connection then stays open, so that an unpublish, a rebind or the
 * exporter's death reaches every importer before its next operation.
 *
 * Files: lib.c (libfabric, loaded when the controller is first asked
 * for), ofi.c (the fabric, its progress, the ops table), export.c (the
 * exporter's side), import.c (the importer's side).
 *
 * Lock order: pb_rsm_lock, pb_ofi.progress, pb_ofi.lock.  The RSM service
 * thread, which holds pb_rsm_lock, drives the completion queue when the
 * application does not: with FI_PROGRESS_MANUAL nothing lands in an
 * exporter's memory until someone reads its queue.
 */
#ifndef PB_RSM_OFI_IMPL_H
#define PB_RSM_OFI_IMPL_H

#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdatomic.h>
#include <stdint.h>

#include "rsm/ofi/rendezvous_msg.h"
#include "rsm/rsm_impl.h"
#include "rsm/transport.h"

/* the libfabric API version the transport asks fi_getinfo for */
#define PB_OFI_FI_VERSION FI_VERSION(1, 17)
/* the largest export segment, as on the other transports */
#define PB_OFI_MAX_SEGMENT_SIZE ((size_t)1 << 40)
/* receive buffers kept posted for barrier and signal messages */
#define PB_OFI_RECV_COUNT 64
/* how long an import connect waits for the exporter's answer */
#define PB_OFI_CONNECT_TIMEOUT_MS 5000
/* a sleeping waiter looks at its import's rendezvous connection (an
 * exporter that died or withdrew the segment) this often */
#define PB_OFI_WAIT_SLICE_MS 50
/* a message the provider cannot send for this long is given up */
#define PB_OFI_SEND_TIMEOUT_MS 2000
/* a barrier not answered within this long is asked again */
#define PB_OFI_BARRIER_RESEND_MS 1000

/* What a completion's context points to: every one starts so. */
typedef enum {
    OFI_CTX_RECV = 1, /* a posted receive buffer */
    OFI_CTX_OP = 2    /* a write or read an application thread waits for */
} pb_ofi_ctx_kind_t;

/* fabric messages (fi_inject) */
typedef enum {
    OFI_MSG_SIGNAL = 1,        /* importer -> exporter: token = attach, a = accumulate */
    OFI_MSG_BARRIER = 2,       /* importer -> exporter: token = attach, a = sequence */
    OFI_MSG_EVENT = 3,         /* exporter -> importer: token = import */
    OFI_MSG_BARRIER_REPLY = 4, /* exporter -> importer: token = import, a = sequence, b = status */
} pb_ofi_msg_type_t;

typedef struct {
    uint32_t type;
    uint32_t token;
    uint64_t a;
    uint64_t b;
} pb_ofi_msg_t;

typedef struct {
    struct fi_context2 fi; /* the provider's (FI_CONTEXT2 mode) */
    pb_ofi_ctx_kind_t kind;
    pb_ofi_msg_t msg;
} pb_ofi_recv_t;

/* a write or read in flight; freed by the completion if its waiter gave up */
typedef struct {
    struct fi_context2 fi;
    pb_ofi_ctx_kind_t kind;
    _Atomic uint32_t done; /* 1 once completed */
    pb_status_t status;
    int abandoned; /* under pb_ofi.progress */
} pb_ofi_op_t;

/* an address in the AV, shared by every import and attach that names it */
typedef struct pb_ofi_peer {
    struct pb_ofi_peer *next;
    fi_addr_t addr;
    int refs;
    size_t name_len;
    uint8_t name[PB_OFI_NAME_MAX];
} pb_ofi_peer_t;

typedef struct pb_ofi_export pb_ofi_export_t;

/* one importer of one of this process's segments, as the exporter knows it */
typedef struct pb_ofi_attach {
    struct pb_ofi_attach *next;
    pb_ofi_export_t *exp; /* NULL once withdrawn */
    uint64_t service_id;  /* the rendezvous connection in the service */
    int fd;               /* (owned by the service entry) */
    int attached;         /* the handshake ended: an importer */
    int remote;           /* over TCP: its segment is the request's; no SO_PEERCRED */
    int64_t accepted_ms;  /* (remote: a handshake not done in time is closed) */
    uint8_t hello_nonce[16];
    uint8_t rx[sizeof(pb_ofi_rv_request_t)]; /* the request, as much as came */
    size_t rx_len;
    pb_ofi_peer_t *peer;
    uint32_t token;        /* names it in the importer's messages */
    uint32_t import_token; /* names the import in the exporter's messages */
} pb_ofi_attach_t;

struct pb_ofi_export {
    pb_rsm_export_t *seg;
    pb_ofi_export_t *next; /* published list */
    struct fid_mr *mr;     /* while published */
    uint64_t key;
    uint64_t rendezvous_id; /* the listening socket in the service */
    int listen_fd;          /* (owned by the service entry) */
    _Atomic uint32_t events;
};

typedef struct pb_ofi_import {
    pb_rsm_import_t *im;
    struct pb_ofi_import *next;
    int fd; /* the rendezvous connection: withdrawal, rebind, death */
    pthread_mutex_t fd_lock;
    uint8_t rx[sizeof(pb_ofi_rv_notice_t)]; /* a notice, as much as came (TCP) */
    size_t rx_len;                          /* (under fd_lock) */
    _Atomic int failure;                    /* PB_OK, or why the import is dead */
    pb_ofi_peer_t *peer;
    _Atomic uint64_t key;
    _Atomic uint64_t base; /* remote address of offset 0 */
    uint32_t attach_token;
    uint32_t token;
    _Atomic uint32_t generation; /* exporter's signals seen */
    uint32_t seen_generation;
    _Atomic uint32_t barrier_sent;  /* sequence of the last BARRIER sent */
    _Atomic uint32_t barrier_acked; /* ... and of the last answered */
    _Atomic int barrier_status;
} pb_ofi_import_t;

typedef struct {
    pthread_mutex_t lock;     /* the lists and the start */
    pthread_mutex_t progress; /* reading the completion queue */
    int started;
    pb_status_t start_status; /* a failed start is not retried */
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    int cq_fd;       /* the queue's wait descriptor, or -1 */
    int manual;      /* FI_PROGRESS_MANUAL data progress */
    int ordered_waw; /* writes land in order (word-last needs no barrier) */
    uint64_t service_id;
    size_t inject_size;
    size_t name_len;
    uint8_t name[PB_OFI_NAME_MAX];
    pb_ofi_recv_t recvs[PB_OFI_RECV_COUNT];
    pb_ofi_peer_t *peers;
    pb_ofi_export_t *published;
    pb_ofi_attach_t *attaches;
    pb_ofi_import_t *imports;
    int connecting; /* import connects under way (they keep the fabric open) */
    uint32_t next_token;
    uint64_t next_key;
    int spin_us;
} pb_ofi_state_t;

extern pb_ofi_state_t pb_ofi;

/* libfabric's exported functions that the transport calls, looked up in
 * the library (lib.c); every other fi_* of the headers is an inline
 * wrapper over the ops tables of the objects these open.  Filled once
 * pb_ofi_lib_load succeeded, which every controller of the transport
 * did. */
typedef struct {
    __typeof__(fi_getinfo) *getinfo;
    __typeof__(fi_freeinfo) *freeinfo;
    __typeof__(fi_dupinfo) *dupinfo; /* (fi_allocinfo is fi_dupinfo(NULL)) */
    __typeof__(fi_fabric) *fabric;
    __typeof__(fi_strerror) *strerror;
    __typeof__(fi_version) *version;
} pb_ofi_lib_t;

extern pb_ofi_lib_t pb_ofi_lib;

/* Load libfabric (POSTBOX_OFI_LIBRARY, RTLD_LOCAL) and fill pb_ofi_lib,
 * once; then put back to the default the signal handlers its providers'
 * libraries installed (pb_ofi_lib_undo_signal_handlers).  Thread-safe.
 * @return PB_OK, or PB_ERR_UNSUPPORTED (the library cannot be loaded or
 * lacks a function: logged with dlerror's reason; tried again on the next
 * call). */
pb_status_t pb_ofi_lib_load(void);

/* 1 once pb_ofi_lib_load succeeded, else 0. */
int pb_ofi_lib_loaded(void);

/* Put back to the default every handler of a fatal or stopping signal
 * that lives in libinfinipath or libpsm (dladdr), which install theirs at
 * load and when a provider is initialised (fi_getinfo); leave any other
 * alone. */
void pb_ofi_lib_undo_signal_handlers(void);
/* threads asleep on an event word or an op inside the transport */
extern _Atomic int pb_ofi_sleepers;

/* Open the fabric (once): the provider of POSTBOX_OFI_PROVIDER, else the
 * first with RMA on a reliable datagram endpoint; start the service's
 * polling.  Caller holds pb_rsm_lock (@rsm_locked 1) or nothing.
 * @return PB_OK, PB_ERR_UNREACHABLE (no provider: logged once),
 * PB_ERR_NO_RESOURCE. */
pb_status_t pb_ofi_start(int rsm_locked);

/* Close the fabric when nothing uses it (no import, publication or
 * importer): a provider may hold names outside the process (shm: a file
 * in /dev/shm) until its endpoint closes, and a process may end with
 * _exit.  The next publish or connect opens it again.  Caller holds
 * pb_rsm_lock. */
void pb_ofi_close_if_idle(void);

/* Read the completion queue once (if no other thread is) and handle what
 * it holds.  Caller holds neither pb_ofi.progress nor pb_ofi.lock. */
void pb_ofi_progress(void);

/* Send @msg to @addr (fi_inject), retrying while the provider is busy.
 * Caller holds neither lock.  @return PB_OK or PB_ERR_CONN_ABORTED. */
pb_status_t pb_ofi_send(fi_addr_t addr, const pb_ofi_msg_t *msg);

/* The peer of fabric address @name (inserted into the AV on first use),
 * with a reference; or NULL (logged).  Caller holds pb_ofi.lock. */
pb_ofi_peer_t *pb_ofi_peer_get(const uint8_t *name, size_t name_len);
/* Drop a reference of pb_ofi_peer_get.  Caller holds pb_ofi.lock. */
void pb_ofi_peer_put(pb_ofi_peer_t *peer);

/* Wait until @op (malloc'd) completed, driving progress, and free it; or
 * give up when @ti fails, leaving it to its completion to free.
 * @return the op's status, or PB_ERR_CONN_ABORTED. */
pb_status_t pb_ofi_op_wait_free(pb_ofi_op_t *op, pb_ofi_import_t *ti);

/* Wake threads asleep on @word after it changed. */
void pb_ofi_wake(_Atomic uint32_t *word);
/* Sleep while @word holds @expected, at most @timeout_ms.  @return 0, or
 * -1 if a signal handler ran. */
int pb_ofi_sleep(_Atomic uint32_t *word, uint32_t expected, int timeout_ms);

/* the MAC of a rendezvous request after @hello_nonce, and of the reply
 * to a request of @request_nonce, under the job key */
uint64_t pb_ofi_request_mac(const uint8_t hello_nonce[16], const pb_ofi_rv_request_t *req);
uint64_t pb_ofi_reply_mac(const uint8_t request_nonce[16], const pb_ofi_rv_reply_t *reply);

/* the handlers of fabric messages; caller holds pb_ofi.lock */
void pb_ofi_export_on_msg(const pb_ofi_msg_t *msg);
void pb_ofi_import_on_msg(const pb_ofi_msg_t *msg);

/* what the importer sends after fi_inject fails */
pb_status_t pb_ofi_import_state(pb_ofi_import_t *ti);

/* the ops (export.c, import.c) */
pb_status_t pb_ofi_export_create(pb_rsm_export_t *seg);
void pb_ofi_export_destroy(pb_rsm_export_t *seg);
pb_status_t pb_ofi_export_rebind(pb_rsm_export_t *seg, void *vaddr);
pb_status_t pb_ofi_export_publish(pb_rsm_export_t *seg, rsm_memseg_id_t *segid_p);
pb_status_t pb_ofi_export_unpublish(pb_rsm_export_t *seg);
pb_status_t pb_ofi_export_signal_post(pb_rsm_export_t *seg, int accumulate);
pb_status_t pb_ofi_export_signal_wait(pb_rsm_export_t *seg, int timeout_ms);
const void *pb_ofi_export_event_word(pb_rsm_export_t *seg);

pb_status_t pb_ofi_import_connect(pb_rsm_import_t *im);
void pb_ofi_import_disconnect(pb_rsm_import_t *im);
pb_status_t pb_ofi_put(pb_rsm_import_t *im, size_t offset, const void *src, size_t length);
pb_status_t pb_ofi_put_word_last(pb_rsm_import_t *im, size_t offset, const void *src, size_t length,
                                 int signal);
pb_status_t pb_ofi_put_vector(pb_rsm_import_t *im, const pb_rsm_put_entry_t *entries, size_t count,
                              int signal, int word_last);
pb_status_t pb_ofi_get(pb_rsm_import_t *im, size_t offset, void *dst, size_t length);
pb_status_t pb_ofi_call(pb_rsm_import_t *im, const void *request, size_t request_len, void *reply,
                        size_t reply_max, size_t *reply_len_p, int no_reply);
pb_status_t pb_ofi_map(pb_rsm_import_t *im, void **address_p, int fixed, int writable,
                       size_t offset, size_t length);
void pb_ofi_unmap(pb_rsm_import_t *im);
pb_status_t pb_ofi_barrier_open(pb_rsm_import_t *im);
pb_status_t pb_ofi_barrier_order(pb_rsm_import_t *im);
pb_status_t pb_ofi_barrier_close(pb_rsm_import_t *im);
pb_status_t pb_ofi_import_signal_post(pb_rsm_import_t *im, int accumulate);
pb_status_t pb_ofi_import_signal_wait(pb_rsm_import_t *im, int timeout_ms);
const void *pb_ofi_import_event_word(pb_rsm_import_t *im);

#endif
