/*
 * What the files of the tcp transport share (private to src/rsm/tcp/).
 *
 *   tcp.c       the transport's state, start, listener, ops table, endpoint
 *   conn.c      connections: objects, the outgoing queue, the handshake
 *   dial.c      dialing an exporter, rendezvous, lookups relayed over tcp
 *   export.c    the exporter side: serving frames, publishing, signals
 *   import.c    the importer side: requests, put, get, barriers, signals
 *   rail.c      rails: striping, replay, fail-over, topology
 *   progress.c  who reads the sockets, and waiting
 *   limits.c    what a peer can make a process hold: handshakes, accepting,
 *               reply queues, relays, log lines
 *   wire.c      the frame format and its pure handling (wire.h)
 *
 * An importing process holds one connection to each exporting process it
 * imports from (made on first import, shared by later ones, closed with the
 * last); frames (wire.h) carry puts, gets, barriers and signals.  The
 * exporter applies a put by receiving its payload straight into the
 * segment, and answers a barrier after every earlier frame of the
 * connection is applied: TCP's order is the barrier.
 *
 * Who reads the sockets.  Every tcp socket of the process sits in one epoll
 * set, and whoever holds the progress token drains it.  The RSM service
 * thread watches that set (level-triggered, disarmed while a thread that
 * holds the token reads it) and takes the token when nobody
 * has it, so an exporter serves without its application calling in; an
 * application thread that waits inside the library (a barrier, a get, a
 * signal) takes the token itself and sleeps in epoll_wait, so its wake-up
 * is the socket's, not a second thread's.  A thread that finds the token
 * taken sleeps on the futex word its condition changes.
 *
 * Locks, in the order they are taken: the progress token, pb_rsm_lock,
 * pb_tcp.lock, a connection's send_lock.  The service thread holds pb_rsm_lock
 * when it tries the token, so it only ever tries; an application thread
 * holding send_lock takes pb_tcp.lock to flush queued frames, which is safe
 * because every other taker of send_lock only tries it.  Frames are
 * handled with pb_rsm_lock and pb_tcp.lock held, so the control path
 * (unpublish, rebind, republish) never races a frame; nothing blocks with
 * pb_tcp.lock held.  Only application threads block in send, holding
 * nothing but send_lock, so a process always keeps reading and two
 * processes streaming at each other cannot deadlock; the progress engine
 * never blocks in send (its replies go through a queue flushed when the
 * socket is writable).
 */
#ifndef PB_RSM_TCP_IMPL_H
#define PB_RSM_TCP_IMPL_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "rsm/rsm_impl.h"
#include "rsm/tcp/wire.h"
#include "util/compiler.h"
#include "util/evset.h"
#include "util/log_limit.h"
#include "util/status.h"

#define TCP_LISTEN_BACKLOG 128
#define TCP_RENDEZVOUS_PREFIX "postbox-tcp"
#define TCP_CONNECT_TIMEOUT_MS 5000
/* the job KVS key where each rank puts the address it listens on */
#define TCP_KVS_KEY_FMT "pb-tcp-%d"
#define TCP_MAX_EVENTS 32
/* connections accepted but not yet authenticated, per process and per
 * peer address; beyond either the oldest is dropped for the newcomer
 * (pb_tcp_handshake_admit), so peers that never finish cannot use up
 * descriptors nor keep importers out */
#define TCP_MAX_HANDSHAKES 64
#define TCP_MAX_HANDSHAKES_PER_ADDR 16
/* an importer whose connection was closed before its handshake began
 * (refused for load) dials again after this long, until its deadline */
#define TCP_REDIAL_MS 20
/* a connection still in its handshake after this long is closed */
#define TCP_HANDSHAKE_MS 1000
/* ... and one younger than this is not dropped for a newcomer (the
 * newcomer is refused instead), so that a flood of new connections cannot
 * push out an importer before it had time to answer */
#define TCP_HANDSHAKE_GRACE_MS 200
/* accepts per readiness of an accepting socket, so that the handshakes
 * in progress are read between a flood's connections */
#define TCP_ACCEPTS_PER_PASS 8
/* out of descriptors: the accepting sockets rest this long (or until a
 * connection closes) rather than report readable again at once */
#define TCP_ACCEPT_REST_MS 100
/* period of the timer that enforces the two limits above while needed */
#define TCP_LIMIT_TICK_MS 50
/* an exporter stops reading a connection's requests while this many bytes
 * of replies are queued for it, and reads again once they fell to
 * TCP_OUTQ_RESUME: a queue holds at most TCP_OUTQ_PAUSE plus one reply
 * (at most PB_TCP_MAX_GET bytes of data) */
#define TCP_OUTQ_PAUSE ((size_t)4 << 20)
#define TCP_OUTQ_RESUME ((size_t)1 << 20)
/* LOOKUPs this process relays to its node's rendezvous sockets at once */
#define TCP_MAX_RELAYS 64
/* a line a peer can cause again and again is logged at most this often */
#define TCP_LOG_INTERVAL_MS 1000
/* a waiter holding the token re-checks its condition at least this often */
#define TCP_WAIT_SLICE_MS 100
/* a waiter without the token sleeps at most this long on its word */
#define TCP_FUTEX_SLICE_MS 5
/* requests one connection may have abandoned and still await the reply
 * of; past this the connection is closed (its peer does not answer) */
#define TCP_MAX_ABANDONED 1024
/* bytes read at once into a connection's staging buffer; payloads at
 * least this long are received straight into their destination */
#define TCP_STAGING_SIZE 16384
/* address pairs (controllers, "rails") a process may have */
#define TCP_MAX_RAILS 4
/* a striped put goes over the rails in chunks of this many bytes, round robin */
#define TCP_STRIPE_CHUNK (128 * 1024)
/* bytes a rail keeps for replay (while another rail could take over) before
 * it closes a barrier to free them */
#define TCP_REPLAY_MAX ((size_t)8 << 20)
/* reads of one connection per progress pass, so that one busy peer does
 * not starve the others */
#define TCP_READS_PER_PASS 64
/* a progress claim lapses into the service thread's care once its
 * claimant has not polled for this long (pb_tcp_progress_claim) */
#define TCP_CLAIM_LAPSE_MS 10
/* a claimant's poll reads the connection data came on last directly, and
 * the whole epoll set every this many polls */
#define TCP_HOT_POLLS 4
/* GET frames of one get outstanding at once (pieces of PB_TCP_MAX_GET
 * bytes): enough that the exporter has the next piece to send while the
 * importer receives one */
#define TCP_GET_WINDOW 4
/* frames one write may carry (a putv's entries) */
#define TCP_GATHER_MAX RSM_MAX_SGIOREQS
/* the events of the service thread's watch of the sockets when disarmed
 * (armed: EPOLLIN, level-triggered) */
#define TCP_WATCH_OFF 0u

typedef struct pb_tcp_conn pb_tcp_conn_t;
typedef struct pb_tcp_export pb_tcp_export_t;

/* frames queued for a non-blocking writer: [head, tail) waits to be sent,
 * [sealed, tail) still without its MACs (they are written, and sequence
 * numbers taken, under the send lock just before the bytes go out, so
 * that sequence numbers follow the order on the wire) */
typedef struct {
    char *buf;
    size_t head, sealed, tail, cap;
    uint64_t sent; /* bytes of the queue sent, ever: buf[head] is byte number sent */
} pb_tcp_outq_t;

/* Where what is queued on @q now ends, counted as pb_tcp_outq_t.sent
 * counts: a frame just queued is not all sent while q->sent is below the
 * value this had right after. */
static inline uint64_t pb_tcp_outq_end(const pb_tcp_outq_t *q)
{
    return q->sent + (q->tail - q->head);
}

/* a request whose waiter gave up (timed out): its REPLY, if it comes, is
 * read and dropped (a late ATTACH's slot is given back) */
typedef struct {
    uint32_t tag;
    uint16_t type;
} pb_tcp_abandoned_t;

/* a request of this process awaiting a REPLY (it lives on the waiter's stack) */
typedef struct pb_tcp_request {
    struct pb_tcp_request *next;
    pb_tcp_conn_t *conn; /* set by pb_tcp_request_begin */
    uint16_t type;       /* the request's frame type */
    uint32_t tag;
    _Atomic uint32_t done; /* futex word: 1 when answered or failed */
    int32_t status;
    uint32_t slot;
    uint64_t value;     /* ATTACH: segment size */
    uint32_t count;     /* ATTACH: permission granted */
    char *dst;          /* GET, CALL, LOOKUP: where the data goes */
    size_t dst_len;     /* its room: what a GET or LOOKUP gets, the most a CALL's reply brings */
    uint32_t reply_len; /* the data the REPLY brought */
    pb_rsm_import_t *import; /* ATTACH: registered for the slot on success */
    int reading;             /* the requester holds the progress token (pb_tcp_reader_take) */
    pthread_t requester;     /* the thread that waits for the reply */
} pb_tcp_request_t;

/* exporter side: one import of one of our segments over a connection */
typedef struct {
    int in_use;
    pb_tcp_export_t *exp; /* NULL once the segment is withdrawn */
    uint32_t perm;
    int32_t error;      /* latched, reported by the next barrier */
    uint32_t next_free; /* not in use: the next free slot's number (0: none) */
    /* pb_tcp_outq_end after its last EVENT was queued: while the queue has
     * not sent that far, a post queues no other (the importer's wait
     * consumes every event that reached it, so one unsent EVENT stands for
     * any number of posts) */
    uint64_t event_end;
} pb_tcp_slot_t;

struct pb_tcp_conn {
    pb_tcp_conn_t *next; /* in pb_tcp.conns */
    int fd;
    int at_exporter;         /* accepted: we serve its imports */
    int established;         /* handshake done */
    _Atomic int32_t failure; /* PB_OK while usable, else why it broke */
    uint64_t source_id;
    uint32_t events; /* epoll events watched */
    pb_tcp_rx_t rx;
    char *staging;
    size_t staging_head, staging_tail;
    pb_tcp_outq_t outq;
    int read_paused;           /* exporter side: replies pile up, requests are not read */
    int read_kick;             /* staged frames to read once writable (pb_tcp_conn_watch_events) */
    pthread_mutex_t send_lock; /* an application thread writing frames */
    pb_tcp_seal_t tx;          /* the frames we send (send_lock) */

    /* importer side */
    struct sockaddr_in peer;
    uint8_t key[PB_TCP_KEY_LEN];
    int refs; /* imports using the connection */
    uint32_t next_tag;
    pb_tcp_request_t *requests;
    pb_tcp_abandoned_t *abandoned; /* requests that timed out: their late replies are dropped */
    uint32_t abandoned_count, abandoned_cap;
    pb_rsm_import_t **slot_imports; /* by the exporter's slot number */
    uint32_t slot_import_cap;

    /* exporter side */
    int64_t accepted_ms;             /* when accepted (pb_time_now_ms): the handshake's deadline */
    uint8_t nonce[PB_TCP_NONCE_LEN]; /* of our HELLO */
    pb_tcp_auth_t auth;
    size_t auth_got;
    uint32_t peer_node;
    uint32_t peer_pid;
    pb_tcp_slot_t *slots;         /* slot n at index n - 1 */
    uint32_t slot_count;          /* slots 1 .. slot_count were given out (in use or free) */
    uint32_t slot_cap;            /* allocated */
    uint32_t slot_free;           /* the first free slot's number (0: none) */
    pb_tcp_export_rx_t export_rx; /* where payloads that are not segment data go */
};

struct pb_tcp_export {
    pb_tcp_export_t *next; /* in pb_tcp.published while published */
    pb_rsm_export_t *seg;
    rsm_memseg_id_t segid;
    uint64_t rendezvous_id;  /* source of the rendezvous socket */
    _Atomic uint32_t events; /* futex word: pending importer-to-exporter signals */
};

/* what a rail sent since its last barrier, kept while another rail could
 * send it again: records of a pb_tcp_replay_rec_t and its payload, padded to 8 */
typedef struct {
    char *buf;
    size_t len, cap;
} pb_tcp_replay_t;

typedef struct {
    uint64_t offset;
    uint32_t length;
    uint16_t type; /* PB_TCP_PUT or PB_TCP_SIGNAL */
    uint16_t flags;
} pb_tcp_replay_rec_t;

/* one connection of an import: rail r goes to address r of the exporter's node */
typedef struct {
    pb_tcp_conn_t *conn; /* held until disconnect, even once broken */
    uint32_t slot;
    int index; /* the rail's number (the node's address index) */
    int dead;  /* broken and failed over: no longer used */
    int dirty; /* frames sent since its last barrier */
    /* CALLs without reply sent since its last barrier or reply (with
     * other rails): they are not replayed (a handler run twice is wrong),
     * so a break loses them, which the next barrier, get or call with
     * reply reports */
    int calls_unconfirmed;
    pb_tcp_replay_t replay;
} pb_tcp_rail_t;

typedef struct {
    pthread_mutex_t lock; /* the rails, between threads sharing the import */
    pb_tcp_rail_t rails[TCP_MAX_RAILS];
    int rail_count;              /* set under pb_tcp.lock: the reader looks at it */
    unsigned next_stripe;        /* rail the next striped chunk goes to */
    int striped;                 /* a put went over several rails since the last barrier */
    _Atomic uint32_t generation; /* futex word: bumped by EVENT and WITHDRAWN */
    uint32_t seen_generation;
    _Atomic int withdrawn;
    int calls_lost; /* a rail broke with calls_unconfirmed: the next barrier, get or call fails */
} pb_tcp_import_t;

/* a LOOKUP this process relays to its node's rendezvous socket */
typedef struct pb_tcp_relay {
    struct pb_tcp_relay *next;
    pb_tcp_conn_t *conn; /* the importer's connection, to answer on */
    uint32_t tag;
    rsm_memseg_id_t segid;
    int fd;
    int ofi; /* an ofi segment's: the answer is its exporter's HELLO */
    uint64_t source_id;
    int64_t started_ms; /* answered PB_ERR_TIMEOUT after POSTBOX_TCP_REQUEST_TIMEOUT_MS */
} pb_tcp_relay_t;

/* the transport's state (tcp.c) */
typedef struct {
    pthread_mutex_t lock;         /* everything in this struct and the conns */
    pthread_mutex_t progress;     /* the token: its holder reads the sockets */
    pthread_mutex_t connect_lock; /* one connection set-up at a time */
    _Atomic int service_parked;   /* the service's watch waits for the token's holder */
    int claims;                   /* pb_rsm_progress_claim minus releases, under pb_rsm_lock */
    _Atomic int claimed;          /* claims > 0, for polls that hold no lock */
    /* the claimant stopped polling (pb_tcp_lapse_check): the service
     * thread's watch is armed, as without a claim, until it polls again
     * (set and cleared under pb_rsm_lock; read by polls without it) */
    _Atomic int lapsed;
    pb_tcp_conn_t *hot; /* the connection data came on last (pb_tcp.lock) */
    /* the exporter-side connection read last, and whether the service
     * thread's last try to read it straight found nothing (pb_tcp.lock) */
    pb_tcp_conn_t *served;
    int served_missed;
    _Atomic uint64_t polls; /* claimants' polls, ever */
    uint64_t lapse_polls;   /* polls at the watchdog's last look */
    int lapse_fd;           /* the watchdog's timer (owned by the service) */
    int started;
    pb_evset_t sources; /* every tcp socket, and wake_fd */
    int wake_fd;        /* eventfd in it: ends a token holder's epoll_wait */
    /* the sources the service thread watches (service_id): all but the
     * importer side's connections and wake_fd, with the same events and
     * ids (pb_tcp_source_add); owned by the service */
    int serve_fd;
    uint64_t service_id;
    /* the service thread's watch of every source (the sources' own epoll
     * set), armed only while a thread waits without the token for what an
     * importer-side connection brings (pb_tcp_blind): then nobody else
     * would read it.  blind_armed: under pb_rsm_lock */
    uint64_t blind_id;
    int blind_armed;
    _Atomic int blind;
    int listen_fds[TCP_MAX_RAILS]; /* one per address given out, one port */
    uint64_t listen_ids[TCP_MAX_RAILS];
    int listen_count;
    int64_t accept_rest_until; /* out of descriptors: not accepting until then (0: accepting) */
    int limit_fd;              /* the limit tick (limits.c), in the sources */
    uint64_t limit_id;
    int limit_ticking;
    /* log lines a peer can cause, by kind (log_refusal: a peer refused
     * for who it is, over tcp or at a rendezvous socket) */
    pb_log_limit_t log_accept, log_handshake, log_relay, log_peer, log_refusal;
    pb_log_limit_t log_call; /* a call refused or a handler's reply cut */
    uint32_t addr;           /* advertised IPv4, network order: addrs[0] */
    uint32_t addrs[TCP_MAX_RAILS];
    int addr_count;
    uint16_t port;
    size_t stripe_min;    /* puts this long and longer are striped */
    int64_t spin_ns;      /* a waiter polls this long before sleeping */
    int reply_timeout_ms; /* POSTBOX_TCP_REPLY_TIMEOUT_MS; 0: none */
    uint8_t *link_down;   /* [node * TCP_MAX_RAILS + rail]: a connection broke */
    size_t link_nodes;
    pb_tcp_conn_t *conns;
    pb_tcp_export_t *published;
    pb_tcp_relay_t *relays;
    char scratch[TCP_STAGING_SIZE]; /* where dropped payloads go */
    int atfork_registered;
} pb_tcp_state_t;
extern pb_tcp_state_t pb_tcp;

/* Threads of this process asleep on a tcp futex word in pb_tcp_wait
 * (progress.c). */
extern _Atomic int pb_tcp_sleepers;
/* Threads asleep in epoll_wait on the set holding the token (at most one):
 * their waits have no time slice, so a change made by another thread must
 * wake them through pb_tcp.wake_fd. */
extern _Atomic int pb_tcp_epoll_sleepers;

/* A condition a waiter waits for: PB_OK or an error when it is over,
 * TCP_NOT_YET while it is not. */
#define TCP_NOT_YET ((pb_status_t)1)
typedef pb_status_t (*pb_tcp_ready_func_t)(void *arg);

/* ---- rails: small inline helpers ------------------------------------------ */

/* Whether @rail's connection broke (a dead rail's always has). */
static inline int pb_tcp_rail_broken(const pb_tcp_rail_t *rail)
{
    return atomic_load_explicit(&rail->conn->failure, memory_order_acquire) != PB_OK;
}

/* How many rails of @ti are in use (not failed over). */
static inline int pb_tcp_live_rails(const pb_tcp_import_t *ti)
{
    int live = 0;

    for (int r = 0; r < ti->rail_count; r++)
        live += !ti->rails[r].dead;
    return live;
}

/* The rail that carries what is not striped: the first one in use. */
static inline pb_tcp_rail_t *pb_tcp_primary_rail(pb_tcp_import_t *ti)
{
    for (int r = 0; r < ti->rail_count; r++) {
        if (!ti->rails[r].dead)
            return &ti->rails[r];
    }
    return NULL;
}

/* PB_OK while the segment is not withdrawn and a rail may still carry
 * frames (a broken one is failed over by the next operation). */
static inline pb_status_t pb_tcp_import_state(const pb_tcp_import_t *ti)
{
    if (PB_UNLIKELY(atomic_load_explicit(&ti->withdrawn, memory_order_acquire)))
        return PB_ERR_CONN_ABORTED;
    for (int r = 0; r < ti->rail_count; r++) {
        if (!pb_tcp_rail_broken(&ti->rails[r])) /* (a dead rail's is broken) */
            return PB_OK;
    }
    return PB_ERR_CONN_ABORTED;
}

/* ---- the transport (tcp.c) ------------------------------------------------- */

/* Create the epoll set and hand it to the service thread.  Caller holds
 * pb_rsm_lock and pb_tcp.lock. */
pb_status_t pb_tcp_start(void);

/* Listen for importers on each address given out (pb_tcp.addrs), with one
 * port.  Caller holds pb_rsm_lock and pb_tcp.lock. */
pb_status_t pb_tcp_listen(void);

/* ---- connections (conn.c): objects, sending, the exporter's handshake --- */

/* POSTBOX_TCP_TIMEOUT_MS: how long a silent peer or link is waited for, in ms. */
long pb_tcp_timeout_ms(void);

/* POSTBOX_TCP_REQUEST_TIMEOUT_MS: how long an import connect (lookup,
 * handshake and attach together) or a relayed lookup waits, in ms. */
int pb_tcp_request_timeout_ms(void);

/* The deadline (pb_time_now_ms) of a get or barrier started now:
 * POSTBOX_TCP_REPLY_TIMEOUT_MS from now, or -1 (none) when it is 0. */
int64_t pb_tcp_reply_deadline(void);

/* Socket options of every connection: no Nagle delay, and a broken peer
 * or link noticed within POSTBOX_TCP_TIMEOUT_MS rather than minutes. */
void pb_tcp_socket_tune(int fd);

/* The key that authenticates this job's peers: the job's secret (for the
 * solo job, its user's solo key: boot/solo_key.h). */
void pb_tcp_key_of_job(uint8_t key[PB_TCP_KEY_LEN]);

/* "a.b.c.d[,a.b.c.d...]" into @addrs (network order).  @return how many,
 * or 0 when @text is not such a list. */
int pb_tcp_parse_addrs(const char *text, uint32_t addrs[TCP_MAX_RAILS]);

/* The addresses this process gives other nodes, one per rail:
 * POSTBOX_TCP_ADDR, else the --netns addresses the launcher gave, else
 * the address this host reaches the launcher from (ranks started on
 * --hosts, or by srun: pb_boot_pmi_local_ipv4), else loopback.  @return how many, or 0 (logged)
 * when the setting is wrong.
 */
int pb_tcp_local_addrs(uint32_t addrs[TCP_MAX_RAILS]);

/* Mark @c broken: its waiters and importers see @status from now on; log
 * @why unless NULL (a peer that simply went away).  Caller holds pb_tcp.lock.
 * An importer-side connection is unlinked at once and freed when its last
 * import disconnects; an exporter-side one stays linked until
 * pb_tcp_reap_failed frees it, so that callers walking pb_tcp.conns may fail
 * connections as they go. */
void pb_tcp_conn_fail(pb_tcp_conn_t *c, pb_status_t status, const char *why);

/* Free the exporter-side connections that failed, and the LOOKUPs they
 * were waiting for.  Caller holds pb_tcp.lock. */
void pb_tcp_reap_failed(void);

/* Send what is queued without blocking; watch for writability if some is
 * left.  Caller holds pb_tcp.lock. */
void pb_tcp_conn_flush(pb_tcp_conn_t *c);

/* Queue one frame (and its payload) for a non-blocking send.  Caller holds
 * pb_tcp.lock. */
void pb_tcp_conn_queue(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame, const void *payload);

/* Send @count frames and their payloads from an application thread, in
 * one write (the receiver reads them together), after anything the
 * progress engine queued on this connection. */
pb_status_t pb_tcp_conn_send_frames(pb_tcp_conn_t *c, const pb_tcp_frame_t *frames,
                                    const void *const *payloads, int count);

/* pb_tcp_conn_send_frames of one frame. */
pb_status_t pb_tcp_conn_send(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame, const void *payload);

/* pb_tcp_conn_send of a request by a thread that may hold the progress
 * token (*@reading, from pb_tcp_reader_take): it never blocks holding it;
 * before a send or a lock that could block, it gives the token back
 * (pb_tcp_reader_give) and clears *@reading. */
pb_status_t pb_tcp_conn_send_reading(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame,
                                     const void *payload, int *reading);

/* The exporter side's handshake: read the importer's AUTH, check it
 * (pb_tcp_auth_check), and answer WELCOME, or close without a word (and a
 * rate-limited log line) when it does not authenticate. */
void pb_tcp_conn_read_auth(pb_tcp_conn_t *c);

/* A listener (@arg: its descriptor) is readable (service or token
 * holder, pb_tcp.lock held): accept importers, send each its HELLO. */
void pb_tcp_accept_ready(void *arg, uint32_t events);

/* A connection to the exporter at @peer, a process of node @node
 * (UINT32_MAX: any): the one this process has, or a new one, dialled
 * until @deadline (pb_time_now_ms), again every TCP_REDIAL_MS while the
 * exporter closes before its HELLO (refusing for load).  Caller holds
 * pb_tcp.connect_lock (not pb_tcp.lock).  @return PB_OK, or
 * pb_tcp_dial's error; PB_ERR_TIMEOUT also when the exporter was still
 * refusing for load at the deadline. */
pb_status_t pb_tcp_conn_get(const struct sockaddr_in *peer, const uint8_t key[PB_TCP_KEY_LEN],
                            uint32_t node, int64_t deadline, pb_tcp_conn_t **conn_p);

/* Drop one import's use of @c; the last one closes it.  Caller holds
 * pb_tcp.lock. */
void pb_tcp_conn_put(pb_tcp_conn_t *c);

/* ---- dialing (dial.c): the importer's handshake, rendezvous, lookups relayed over tcp --- */

/* Ask the rendezvous socket of (@node, @segid) where its exporter listens,
 * waiting at most @timeout_ms for the answer (an importer's own lookup:
 * it holds no lock). */
pb_status_t pb_tcp_lookup(rsm_node_id_t node, rsm_memseg_id_t segid, pb_tcp_directory_t *dir,
                          int timeout_ms);

/* Connect to the exporter at @peer and authenticate with @key: the
 * handshake of docs/tcp.md, all of it before @deadline (pb_time_now_ms);
 * the process that answers must be on @node (UINT32_MAX: any).  On
 * success *fd_p is connected (a blocking socket) and *@to_exporter,
 * *@to_importer authenticate its frames.
 * @return PB_OK; PB_ERR_CONN_ABORTED when the exporter closed the
 * connection before its HELLO (refused for load, pb_tcp_handshake_admit,
 * or died: pb_tcp_conn_get dials again); PB_ERR_NOT_PUBLISHED (refused:
 * nobody listens; or it died after our AUTH); PB_ERR_PERMISSION (it
 * answered REFUSED, or does not prove it is of this job);
 * PB_ERR_UNREACHABLE (no route, or the kernel gave up the connect);
 * PB_ERR_TIMEOUT (the deadline passed first); PB_ERR_PROTOCOL;
 * PB_ERR_NO_RESOURCE. */
pb_status_t pb_tcp_dial(const struct sockaddr_in *peer, const uint8_t key[PB_TCP_KEY_LEN],
                        uint32_t node, int64_t deadline, int *fd_p, pb_tcp_seal_t *to_exporter,
                        pb_tcp_seal_t *to_importer);

/* Whether the connections to or from @addr (network order) MAC their
 * payloads by this process's choice (POSTBOX_TCP_PAYLOAD_MAC: on, off, or
 * auto: when @addr is not on this host, neither loopback, one of this
 * process's addresses, nor under --netns in one of its nodes' networks). */
int pb_tcp_payload_mac_wanted(uint32_t addr);

/* The addresses of @node, one per rail, from the KVS entry of its first
 * rank that has one.  @return how many (0: none known; outside a launched
 * job, or a node without ranks). */
int pb_tcp_node_addrs(rsm_node_id_t node, uint32_t addrs[TCP_MAX_RAILS]);

/* Where the exporter of (@node, @segid) listens, asked over TCP of the
 * job's processes on @node in rank order (their addresses are in the job
 * KVS; each is tried at each of its addresses until one answers), all
 * before @deadline (pb_time_now_ms): for nodes whose rendezvous sockets
 * this process cannot see.  @flags: 0 for a segment of this transport,
 * PB_TCP_FLAG_OFI for one of the ofi transport (where its exporter takes
 * rendezvous connections over TCP).  @return PB_OK, the answer's error,
 * PB_ERR_TIMEOUT when the deadline passed first, PB_ERR_UNREACHABLE when
 * no process of @node could be reached. */
pb_status_t pb_tcp_relay_lookup(rsm_node_id_t node, rsm_memseg_id_t segid, uint16_t flags,
                                const uint8_t key[PB_TCP_KEY_LEN], int64_t deadline,
                                struct sockaddr_in *peer_p);

/* Forget relay @relay (answered, or its importer's connection is gone).
 * Caller holds pb_tcp.lock. */
void pb_tcp_relay_end(pb_tcp_relay_t *relay);

/* An importer on another node asks where a segment of this node is
 * exported: answer from this process's own publications at once, else ask
 * the node's rendezvous socket (which only processes of the node can see)
 * and answer when it does (tcp_relay_ready), never waiting for it here.
 * With PB_TCP_FLAG_OFI the segment is the ofi transport's: its node's ofi
 * rendezvous socket is asked, whose HELLO says where its exporter takes
 * rendezvous connections over TCP. */
void pb_tcp_serve_lookup(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame);

/* A process of this node asks where a segment's exporter listens. */
void pb_tcp_rendezvous_ready(void *arg, uint32_t events);

/* ---- the exporter side (export.c) ------------------------------------------ */

/* The published export of @segid, or NULL.  Caller holds pb_tcp.lock. */
pb_tcp_export_t *pb_tcp_published_find(rsm_memseg_id_t segid);

/* Queue the REPLY to @request: @status, @slot, @value (the offset field),
 * @count, and @length bytes of @data.  Caller holds pb_tcp.lock. */
void pb_tcp_reply(pb_tcp_conn_t *c, const pb_tcp_frame_t *request, pb_status_t status,
                  uint32_t slot, uint64_t value, uint32_t count, const void *data, uint32_t length);

/* The exporter side's header callback (pb_tcp_rx_init): where the payload
 * of @frame goes.  @return NULL, or why the connection must close. */
const char *pb_tcp_exporter_on_header(void *ctx, const pb_tcp_frame_t *frame, char **dest_p);

/* The exporter side's frame callback: @frame and its payload are in;
 * apply it, answer it.  Caller holds pb_rsm_lock and pb_tcp.lock. */
void pb_tcp_exporter_on_frame(void *ctx, const pb_tcp_frame_t *frame);

/* The ops table's export_create (transport.h says what it does and returns). */
pb_status_t pb_tcp_export_create(pb_rsm_export_t *seg);

/* The ops table's export_destroy (transport.h says what it does and returns). */
void pb_tcp_export_destroy(pb_rsm_export_t *seg);

/* The ops table's export_rebind (transport.h says what it does and returns). */
pb_status_t pb_tcp_export_rebind(pb_rsm_export_t *seg, void *vaddr);

/* The ops table's export_publish (transport.h says what it does and returns). */
pb_status_t pb_tcp_export_publish(pb_rsm_export_t *seg, rsm_memseg_id_t *segid_p);

/* The ops table's export_unpublish (transport.h says what it does and returns). */
pb_status_t pb_tcp_export_unpublish(pb_rsm_export_t *seg);

/* The ops table's export_signal_post (transport.h says what it does and returns). */
pb_status_t pb_tcp_export_signal_post(pb_rsm_export_t *seg, int accumulate);

/* ---- the importer side (import.c) ------------------------------------------ */

/* The importer side's header callback: a reply's data goes to its
 * request.  @return NULL, or why the connection must close. */
const char *pb_tcp_importer_on_header(void *ctx, const pb_tcp_frame_t *frame, char **dest_p);

/* The importer side's frame callback: finish a request, or note an
 * event or a withdrawal.  Caller holds pb_rsm_lock and pb_tcp.lock. */
void pb_tcp_importer_on_frame(void *ctx, const pb_tcp_frame_t *frame);

/* Send @frame (its tag set here) as a request awaiting a REPLY; finish it
 * with pb_tcp_request_end whatever this returns.  @alone: this thread
 * begins no other request before this one's end; it then takes the
 * progress token first when it can (pb_tcp_reader_take), to read the reply
 * itself. */
void pb_tcp_request_begin(pb_tcp_conn_t *c, pb_tcp_frame_t *frame, const void *payload,
                          pb_tcp_request_t *req, int alone);

/* Wait for the REPLY to a request begun with pb_tcp_request_begin, until
 * @deadline_ms (pb_time_now_ms; -1: as long as the connection lives).
 * When the deadline passes the request is abandoned: from then on nothing
 * is written to @req or its buffer (a reply being received into it goes
 * on into scratch), and its late reply is dropped.
 * @return the reply's status, PB_ERR_CONN_ABORTED, or PB_ERR_TIMEOUT. */
pb_status_t pb_tcp_request_end(pb_tcp_request_t *req, int64_t deadline_ms);

/* Send @frame and wait for the REPLY until @deadline_ms (as above). */
pb_status_t pb_tcp_request(pb_tcp_conn_t *c, pb_tcp_frame_t *frame, const void *payload,
                           pb_tcp_request_t *req, int64_t deadline_ms);

/* The ops table's import_connect (transport.h says what it does and returns). */
pb_status_t pb_tcp_import_connect(pb_rsm_import_t *im);

/* The ops table's import_disconnect (transport.h says what it does and returns). */
void pb_tcp_import_disconnect(pb_rsm_import_t *im);

/* The ops table's put_vector (transport.h says what it does and returns). */
pb_status_t pb_tcp_put_vector(pb_rsm_import_t *im, const pb_rsm_put_entry_t *entries, size_t count,
                              int signal, int word_last);

/* The ops table's put (transport.h says what it does and returns). */
pb_status_t pb_tcp_put(pb_rsm_import_t *im, size_t offset, const void *src, size_t length);

/* The ops table's get (transport.h says what it does and returns). */
pb_status_t pb_tcp_get(pb_rsm_import_t *im, size_t offset, void *dst, size_t length);

/* The ops table's call (transport.h says what it does and returns). */
pb_status_t pb_tcp_call(pb_rsm_import_t *im, const void *request, size_t request_len, void *reply,
                        size_t reply_max, size_t *reply_len_p, int no_reply);

/* The ops table's map (transport.h says what it does and returns). */
pb_status_t pb_tcp_map(pb_rsm_import_t *im, void **address_p, int fixed, int writable,
                       size_t offset, size_t length);

/* The ops table's unmap (transport.h says what it does and returns). */
void pb_tcp_unmap(pb_rsm_import_t *im);

/* The ops table's barrier_open (transport.h says what it does and returns). */
pb_status_t pb_tcp_barrier_open(pb_rsm_import_t *im);

/* The ops table's barrier_order (transport.h says what it does and returns). */
pb_status_t pb_tcp_barrier_order(pb_rsm_import_t *im);

/* The ops table's barrier_close (transport.h says what it does and returns). */
pb_status_t pb_tcp_barrier_close(pb_rsm_import_t *im);

/* The ops table's import_signal_post (transport.h says what it does and returns). */
pb_status_t pb_tcp_import_signal_post(pb_rsm_import_t *im, int accumulate);

/* ---- rails (rail.c) -------------------------------------------------------- */

/* Whether rail @rail's connection carries this import's events: the first
 * rail whose connection works (the exporter sends each event on every
 * rail; the others are dropped).  Caller holds pb_tcp.lock. */
int pb_tcp_rail_carries_events(const pb_tcp_import_t *ti, const pb_tcp_conn_t *c);

/* The ops table's rail_count (transport.h says what it does and returns). */
int pb_tcp_rail_count(void);

/* The ops table's rail_link (transport.h says what it does and returns). */
void pb_tcp_rail_link(int rail, rsm_node_id_t node, rsm_addr_t *hwaddr_p, uint_t *state_p);

/* Remember that rail @rail toward @node is usable (@up) or broke, for
 * rsm_get_interconnect_topology. */
void pb_tcp_link_state_set(rsm_node_id_t node, int rail, int up);

/* Send @frame of this import over @rail, kept for replay when another rail
 * could take over.  Caller holds ti->lock. */
pb_status_t pb_tcp_rail_send(pb_tcp_import_t *ti, pb_tcp_rail_t *rail, pb_tcp_frame_t *frame,
                             const void *payload);

/* Take the rails whose connection broke out of use, sending what each sent
 * since its last barrier again over the first rail left (a resent put
 * rewrites the same bytes; a resent signal may wake the exporter twice,
 * never zero times).  Caller holds ti->lock.
 * @return PB_OK while a rail is left, else PB_ERR_CONN_ABORTED. */
pb_status_t pb_tcp_import_heal(pb_rsm_import_t *im);

/* Close a barrier on every rail in use that sent frames since its last
 * one (on the first rail when none did): when it returns PB_OK, every put
 * and signal sent over any rail has reached the exporter.  A rail that
 * breaks meanwhile is failed over and the barrier taken again.  Caller
 * holds ti->lock. */
pb_status_t pb_tcp_rails_barrier(pb_rsm_import_t *im, unsigned only);

/* Connect rail @index of @im to the exporter's port at @addr and attach
 * the segment there, before @deadline (pb_time_now_ms).  The first rail fails
 * with PB_ERR_NOT_PUBLISHED when the connection breaks or is malformed,
 * and with PB_ERR_CONN_ABORTED (logged) when the exporter announces a size
 * pb_tcp_attach_size_check refuses. */
pb_status_t pb_tcp_rail_connect(pb_rsm_import_t *im, int index, uint32_t addr, uint16_t port,
                                const uint8_t key[PB_TCP_KEY_LEN], int64_t deadline);

/* ---- limits (limits.c): what a peer can make this process hold ---------- */

/* Create the limit tick and put it in the epoll set.  Caller holds
 * pb_tcp.lock.  @return PB_OK or PB_ERR_NO_RESOURCE. */
pb_status_t pb_tcp_limits_start(void);

/* The limit tick fired: close the connections whose handshake took longer
 * than TCP_HANDSHAKE_MS, answer the relayed LOOKUPs older than
 * POSTBOX_TCP_REQUEST_TIMEOUT_MS with PB_ERR_TIMEOUT, end a rest of the
 * accepting sockets that is over.
 * Caller holds pb_tcp.lock. */
void pb_tcp_limits_ready(void *arg, uint32_t events);

/* A connection from @from was just accepted: make room for its handshake
 * (drop the oldest one pending from that address, or in all, when at
 * TCP_MAX_HANDSHAKES_PER_ADDR or TCP_MAX_HANDSHAKES).  Caller holds
 * pb_tcp.lock.  @return 1 to go on with it, 0 to close it (every one
 * pending is younger than TCP_HANDSHAKE_GRACE_MS). */
int pb_tcp_handshake_admit(const struct sockaddr_in *from);

/* An accept on an accepting socket (@what, for the log) failed with @err.
 * Out of descriptors, the oldest connection in its handshake is closed if
 * it had TCP_HANDSHAKE_GRACE_MS (its descriptor goes to the next accept);
 * else, or out of memory, every accepting socket rests for
 * TCP_ACCEPT_REST_MS (they would be reported readable again at once).  Any
 * other unexpected error is logged.  Rate-limited.  Caller holds
 * pb_tcp.lock.  @return 1 when the accept may be tried again at once. */
int pb_tcp_accept_failed(int err, const char *what);

/* A descriptor was closed: accept again if running out had rested the
 * accepting sockets.  Caller holds pb_tcp.lock. */
void pb_tcp_accept_resume(void);

/* Whether reading @c's requests must wait for its queued replies to drain
 * (exporter side: TCP_OUTQ_PAUSE bytes queued); latches until
 * pb_tcp_conn_watch_events sees them fall to TCP_OUTQ_RESUME.  Caller
 * holds pb_tcp.lock. */
int pb_tcp_conn_backlogged(pb_tcp_conn_t *c);

/* The epoll events @c is to be watched for now: writability while replies
 * are queued, readability unless its reading is paused.  Caller holds
 * pb_tcp.lock. */
uint32_t pb_tcp_conn_watch_events(pb_tcp_conn_t *c);

/* Whether one more LOOKUP may be relayed (fewer than TCP_MAX_RELAYS are);
 * logs the refusal, rate-limited.  Caller holds pb_tcp.lock. */
int pb_tcp_relay_admit(void);

/* ---- progress (progress.c): reading the sockets, the progress token, waiting --- */

/* Add @fd to the sources (pb_evset_add: @events, @cb, @arg, *@id_p), and
 * to the service thread's watch unless @unserved (an importer-side
 * connection, whose bytes are replies and events that a thread waiting
 * for them reads itself, or wake_fd).  Caller holds pb_tcp.lock (or is
 * starting the transport).  @return what pb_evset_add returns. */
pb_status_t pb_tcp_source_add(int fd, uint32_t events, pb_evset_func_t cb, void *arg, int unserved,
                              uint64_t *id_p);

/* pb_evset_modify of source @id, in both sets.  Caller holds pb_tcp.lock.
 * @return what pb_evset_modify returns. */
pb_status_t pb_tcp_source_modify(uint64_t id, uint32_t events);

/* pb_evset_remove of source @id, in both sets (the caller closes its
 * descriptor).  Caller holds pb_tcp.lock. */
void pb_tcp_source_remove(uint64_t id);

/* A thread starts (+1) or stops (-1) waiting, without the token, for
 * something an importer-side connection may bring (a reply, an event):
 * while any does, the service thread watches every source.  Caller holds
 * neither pb_rsm_lock nor pb_tcp.lock. */
void pb_tcp_blind(int delta);

/* The service thread's callback for its watch of every source (blind_id). */
void pb_tcp_blind_ready(void *arg, uint32_t events);

/* Wake whoever sleeps on @word, which the caller just changed (seq_cst);
 * no system call when nobody can be asleep on it. */
void pb_tcp_futex_wake(_Atomic uint32_t *word);

/* Add one to @word and wake its sleepers (pb_tcp_futex_wake). */
void pb_tcp_word_bump(_Atomic uint32_t *word);

/* The wake-up eventfd rang: it did its job, ending the wait. */
void pb_tcp_wake_ready(void *arg, uint32_t events);

/* A connection's socket is ready (@arg: the connection). */
void pb_tcp_conn_ready(void *arg, uint32_t events);

/* Start (1) or stop (0) the watchdog of a progress claim.  Caller holds
 * pb_rsm_lock. */
void pb_tcp_lapse_timer(int on);

/* pb_rsm_progress_claim (+1) and its release (-1).  While a claim lasts
 * the claiming thread polls the sockets (rsm_intr_signal_wait with no
 * wait) and the service thread is not woken by what arrives: that wake-up
 * would take a core from the poller, or the poller's own, per message.  A
 * claimant that stops polling (an MPI rank computing) is not trusted for
 * long: a watchdog on the service thread that saw no poll for
 * TCP_CLAIM_LAPSE_MS reads the sockets and hands them back to the service
 * thread, which is woken by what arrives, as without a claim, until the
 * claimant polls again.  So a request toward a computing claimant waits
 * at most TCP_CLAIM_LAPSE_MS, once, and the next ones none.  Caller holds
 * neither pb_rsm_lock nor pb_tcp.lock. */
void pb_tcp_progress_claim(int delta);

/* The watchdog (service thread, pb_rsm_lock held): every
 * TCP_CLAIM_LAPSE_MS of a claim, if the claimant did not poll since the
 * last look, one pass over the sockets and the service thread's watch
 * armed until the claimant polls again (pb_tcp.lapsed). */
void pb_tcp_lapse_check(void *arg, uint32_t events);

/* The service thread's callback (pb_rsm_lock held): the epoll set has
 * something and maybe no application thread is reading it. */
void pb_tcp_service_ready(void *arg, uint32_t events);

/* Take the progress token, if no one holds it: a thread about to send a
 * request and wait for its reply, so that the reply is read by this thread
 * in its wait (pb_tcp_wait with @reading) rather than by the service
 * thread woken for it, a context switch more per round trip (on a loaded
 * machine the kernel queues the woken thread behind the requester).  The
 * service thread's watch stays armed: replies come on importer-side
 * connections, which it does not watch (pb_tcp_source_add).  The caller
 * holds nothing, and must not block until it waits
 * (pb_tcp_conn_send_reading).  @return 1 if taken, 0 if not. */
int pb_tcp_reader_take(void);

/* Give back the token pb_tcp_reader_take took (re-arming the service
 * thread's watch if it found the token taken meanwhile). */
void pb_tcp_reader_give(void);

/* Wait until @ready says it is over or @timeout_ms (-1: forever) pass,
 * reading the sockets meanwhile.  @word changes (and is woken) whenever
 * the condition may have.  @reading, when not NULL: the caller holds the
 * token (pb_tcp_reader_take), which the wait gives back, and waits for a
 * reply on that importer-side connection (read straight while spinning;
 * the service thread's watch, which does not cover it, stays armed).
 * @return what @ready said, PB_ERR_TIMEOUT, or
 * PB_ERR_INTERRUPTED when @interruptible and a signal handler ran (waits
 * for a reply are not interruptible: the reply would have nowhere to go). */
pb_status_t pb_tcp_wait(pb_tcp_ready_func_t ready, void *arg, _Atomic uint32_t *word,
                        int timeout_ms, int interruptible, pb_tcp_conn_t *reading);

/* The ops table's export_signal_wait (transport.h says what it does and returns). */
pb_status_t pb_tcp_export_signal_wait(pb_rsm_export_t *seg, int timeout_ms);

/* The ops table's import_signal_wait (transport.h says what it does and returns). */
pb_status_t pb_tcp_import_signal_wait(pb_rsm_import_t *im, int timeout_ms);

/* The ops table's export_event_word (transport.h says what it does and returns). */
const void *pb_tcp_export_event_word(pb_rsm_export_t *seg);

/* The ops table's import_event_word (transport.h says what it does and returns). */
const void *pb_tcp_import_event_word(pb_rsm_import_t *im);

/* The ops table's import_event_waiters (transport.h says what it does):
 * pb_tcp_blind. */
void pb_tcp_import_event_waiters(pb_rsm_import_t *im, int delta);

#endif
