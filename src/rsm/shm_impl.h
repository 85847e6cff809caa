/*
 * The shm transport's internals shared by its files: shm.c (export,
 * publication, the rendezvous served, import, signals) and pb_shm_limits.c
 * (what peers can make this process hold).  Everything here is used under
 * pb_rsm_lock.
 */
#ifndef PB_RSM_SHM_IMPL_H
#define PB_RSM_SHM_IMPL_H

#include <stdint.h>
#include <sys/socket.h>

#include "rsm/rsm_impl.h"
#include "rsm/shm_layout.h"
#include "util/log_limit.h"

#define SHM_CONNECT_TIMEOUT_S 5
/* the largest segment export_create takes, so the largest an importer maps */
#define SHM_MAX_SEGMENT_SIZE ((uint64_t)1 << 40)
#define SHM_RENDEZVOUS_PREFIX "postbox-rsm"
/* an importer asleep in a signal wait re-checks its exporter this often */
#define SHM_IMPORT_WAIT_SLICE_MS 50
/* connections to this process's rendezvous sockets that have not finished
 * their handshake; beyond this the oldest is closed for a newcomer */
#define SHM_MAX_HANDSHAKES 64
/* a connection still in its handshake after this long is closed */
#define SHM_HANDSHAKE_MS 1000
/* ... and one younger than this is not closed for a newcomer (the
 * newcomer is, and its importer dials again), so that a flood of new
 * connections cannot push out an importer before it had time to answer */
#define SHM_HANDSHAKE_GRACE_MS 200
/* an importer whose connection was closed before the exporter greeted it
 * (turned away for load) dials again after this long, until its deadline */
#define SHM_REDIAL_MS 20
/* accepts per readiness of a rendezvous socket, so that handshakes in
 * progress and other sockets are served between a flood's connections */
#define SHM_ACCEPTS_PER_PASS 8
/* out of descriptors: the rendezvous sockets rest this long (or until a
 * connection closes) rather than report readable again at once */
#define SHM_ACCEPT_REST_MS 100
/* period of the limit tick, which enforces the two times above */
#define SHM_LIMIT_TICK_MS 50
/* a line a peer can cause again and again is logged at most this often */
#define SHM_LOG_INTERVAL_MS 1000

_Static_assert(PB_SHM_REPLY_FDS == 4, "the descriptor arrays below are initialised with four -1");

typedef struct pb_shm_conn pb_shm_conn_t;

typedef struct pb_shm_export pb_shm_export_t;

struct pb_shm_export {
    pb_rsm_export_t *seg;
    pb_shm_export_t *next; /* in pb_shm_exports */
    int data_fd;
    int ctl_fd; /* the exporter's page of the current publication */
    pb_shm_ctl_t *ctl;
    int inbox_fd; /* the importers' page of the current publication */
    pb_shm_inbox_t *inbox;
    int listen_fd;         /* rendezvous socket, owned by the service entry */
    uint64_t listen_id;    /* service entry of the listening socket */
    int listening;         /* listen_id names a live service entry */
    pb_shm_conn_t **conns; /* connections of the current publication */
    unsigned conn_count;
    unsigned conn_capacity;
    int imported; /* an importer connected during this publication */
};

/* every shm export of this process that exists (under pb_rsm_lock) */
extern pb_shm_export_t *pb_shm_exports;

struct pb_shm_conn {
    pb_rsm_export_t *seg;
    uint64_t service_id;
    int fd;
    int connected;
    struct ucred peer; /* (SO_PEERCRED at accept) */
    uint8_t nonce[PB_SHM_NONCE_LEN];
    /* in its handshake: on pb_shm_limits' list, since accepted_ms */
    int pending;
    int64_t accepted_ms;
    pb_shm_conn_t *older, *newer;
};

/* What peers can make this process hold (under pb_rsm_lock). */
typedef struct {
    pb_shm_conn_t *oldest, *newest; /* connections in their handshake */
    unsigned pending;               /* how many */
    int tick_fd;                    /* the limit tick: a timerfd in the service */
    uint64_t tick_id;
    int ticking;
    int64_t rest_until; /* not 0: the rendezvous sockets rest until then */
    int atfork_registered;
    pb_log_limit_t log_peer, log_accept, log_handshake;
} pb_shm_limits_t;

extern pb_shm_limits_t pb_shm_limits;

/* Close @conn: off the handshake list and its publication's connections,
 * its service entry removed (which closes its socket), freed; a rest of
 * the rendezvous sockets ends, since a descriptor came free. */
void pb_shm_conn_close(pb_shm_conn_t *conn);

/* ---- pb_shm_limits.c -------------------------------------------------------- */

/* Put @conn on the list of connections in their handshake (the newest),
 * or take it off (nothing if it is not on it). */
void pb_shm_pending_append(pb_shm_conn_t *conn);
void pb_shm_pending_remove(pb_shm_conn_t *conn);

/* Start (1) or stop (0) the limit tick. */
void pb_shm_limit_tick(int on);

/* End a rest of the rendezvous sockets, if they rest. */
void pb_shm_accept_resume(void);

/* Create the limit tick, once per process.  @return PB_OK or
 * PB_ERR_NO_RESOURCE (logged). */
pb_status_t pb_shm_limits_start(void);

/* accept4 on the rendezvous socket of @seg failed with @err: make room or
 * rest the rendezvous sockets.  @return 1 when accepting again may succeed,
 * else 0. */
int pb_shm_accept_failed(const pb_rsm_export_t *seg, int err);

/* Whether a new connection to the rendezvous of @seg may start its
 * handshake (the oldest may be closed for it). */
int pb_shm_handshake_admit(const pb_rsm_export_t *seg);

#endif
