/*
 * The tcp transport: RSM between nodes over TCP/IP (docs/tcp.md).
 *
 * An importing process holds one connection to each exporting process it
 * imports from (made on first import, shared by later ones, closed with the
 * last); frames (tcp_wire.h) carry puts, gets, barriers and signals.  The
 * exporter applies a put by receiving its payload straight into the
 * segment, and answers a barrier after every earlier frame of the
 * connection is applied: TCP's order is the barrier.
 *
 * Who reads the sockets.  Every tcp socket of the process sits in one epoll
 * set, and whoever holds the progress token drains it.  The RSM service
 * thread watches that set (EPOLLONESHOT) and takes the token when nobody
 * has it, so an exporter serves without its application calling in; an
 * application thread that waits inside the library (a barrier, a get, a
 * signal) takes the token itself and sleeps in epoll_wait, so its wake-up
 * is the socket's, not a second thread's.  A thread that finds the token
 * taken sleeps on the futex word its condition changes.
 *
 * Locks, in the order they are taken: the progress token, pb_rsm_lock,
 * tcp.lock, a connection's send_lock.  The service thread holds pb_rsm_lock
 * when it tries the token, so it only ever tries; an application thread
 * holding send_lock takes tcp.lock to flush queued frames, which is safe
 * because every other taker of send_lock only tries it.  Frames are
 * handled with pb_rsm_lock and tcp.lock held, so the control path
 * (unpublish, rebind, republish) never races a frame; nothing blocks with
 * tcp.lock held.  Only
 * application threads block in send, holding nothing but send_lock, so a
 * process always keeps reading and two processes streaming at each other
 * cannot deadlock; the progress engine never blocks in send (its replies go
 * through a queue flushed when the socket is writable).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <postbox/job.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rsm/rendezvous.h"
#include "rsm/rsm_impl.h"
#include "rsm/service.h"
#include "rsm/tcp.h"
#include "rsm/tcp_wire.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/evset.h"
#include "util/futex.h"
#include "util/job.h"
#include "util/log.h"
#include "util/time.h"

#define TCP_LISTEN_BACKLOG 128
#define TCP_RENDEZVOUS_PREFIX "postbox-tcp"
#define TCP_CONNECT_TIMEOUT_MS 5000
/* the job KVS key where each rank puts the address it listens on */
#define TCP_KVS_KEY_FMT "pb-tcp-%d"
#define TCP_MAX_EVENTS 32
/* connections accepted but not yet authenticated; beyond this the oldest
 * is dropped, so peers that never finish cannot use up descriptors */
#define TCP_MAX_HANDSHAKES 64
/* a waiter holding the token re-checks its condition at least this often */
#define TCP_WAIT_SLICE_MS 100
/* a waiter without the token sleeps at most this long on its word */
#define TCP_FUTEX_SLICE_MS 5
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
/* a progress claim lapses into the service thread's care while its
 * claimant has not polled for this long (tcp_progress_claim) */
#define TCP_CLAIM_LAPSE_MS 10
/* a claimant's poll reads the connection data came on last directly, and
 * the whole epoll set every this many polls */
#define TCP_HOT_POLLS 4
/* frames one write may carry (a putv's entries) */
#define TCP_GATHER_MAX RSM_MAX_SGIOREQS

typedef struct tcp_conn tcp_conn_t;
typedef struct tcp_export tcp_export_t;

/* bytes queued for a non-blocking writer */
typedef struct {
    char *buf;
    size_t head, tail, cap;
} tcp_outq_t;

/* a request of this process awaiting a REPLY (it lives on the waiter's stack) */
typedef struct tcp_request {
    struct tcp_request *next;
    uint32_t tag;
    _Atomic uint32_t done; /* futex word: 1 when answered or failed */
    int32_t status;
    uint32_t slot;
    uint64_t value; /* ATTACH: segment size */
    uint32_t count; /* ATTACH: permission granted */
    char *dst;      /* GET: where the data goes */
    size_t dst_len;
    pb_rsm_import_t *import; /* ATTACH: registered for the slot on success */
} tcp_request_t;

/* exporter side: one import of one of our segments over a connection */
typedef struct {
    int in_use;
    tcp_export_t *exp; /* NULL once the segment is withdrawn */
    uint32_t perm;
    int32_t error; /* latched, reported by the next barrier */
} tcp_slot_t;

struct tcp_conn {
    tcp_conn_t *next; /* in tcp.conns */
    int fd;
    int at_exporter;         /* accepted: we serve its imports */
    int established;         /* handshake done */
    _Atomic int32_t failure; /* PB_OK while usable, else why it broke */
    uint64_t source_id;
    uint32_t events; /* epoll events watched */
    pb_tcp_rx_t rx;
    char *staging;
    size_t staging_head, staging_tail;
    tcp_outq_t outq;
    pthread_mutex_t send_lock; /* an application thread writing frames */

    /* importer side */
    struct sockaddr_in peer;
    uint8_t key[PB_TCP_KEY_LEN];
    int refs; /* imports using the connection */
    uint32_t next_tag;
    tcp_request_t *requests;
    pb_rsm_import_t **slot_imports; /* by the exporter's slot number */
    uint32_t slot_import_cap;

    /* exporter side */
    uint8_t nonce[PB_TCP_NONCE_LEN];
    pb_tcp_auth_t auth;
    size_t auth_got;
    uint32_t peer_node;
    uint32_t peer_pid;
    tcp_slot_t *slots; /* slot n at index n - 1 */
    uint32_t slot_count;
    pb_tcp_attach_t attach; /* payload of the ATTACH being received */
    pb_tcp_lookup_t lookup; /* payload of the LOOKUP being received */
    char *word_last;        /* payload of a word-last PUT (PB_TCP_WORD_LAST_MAX) */
};

struct tcp_export {
    tcp_export_t *next; /* in tcp.published while published */
    pb_rsm_export_t *seg;
    rsm_memseg_id_t segid;
    uint64_t rendezvous_id;  /* source of the rendezvous socket */
    _Atomic uint32_t events; /* futex word: pending importer-to-exporter signals */
};

/* what a rail sent since its last barrier, kept while another rail could
 * send it again: records of a tcp_replay_rec_t and its payload, padded to 8 */
typedef struct {
    char *buf;
    size_t len, cap;
} tcp_replay_t;

typedef struct {
    uint64_t offset;
    uint32_t length;
    uint16_t type; /* PB_TCP_PUT or PB_TCP_SIGNAL */
    uint16_t flags;
} tcp_replay_rec_t;

/* one connection of an import: rail r goes to address r of the exporter's node */
typedef struct {
    tcp_conn_t *conn; /* held until disconnect, even once broken */
    uint32_t slot;
    int index; /* the rail's number (the node's address index) */
    int dead;  /* broken and failed over: no longer used */
    int dirty; /* frames sent since its last barrier */
    tcp_replay_t replay;
} tcp_rail_t;

typedef struct {
    pthread_mutex_t lock; /* the rails, between threads sharing the import */
    tcp_rail_t rails[TCP_MAX_RAILS];
    int rail_count;              /* set under tcp.lock: the reader looks at it */
    unsigned next_stripe;        /* rail the next striped chunk goes to */
    int striped;                 /* a put went over several rails since the last barrier */
    _Atomic uint32_t generation; /* futex word: bumped by EVENT and WITHDRAWN */
    uint32_t seen_generation;
    _Atomic int withdrawn;
} tcp_import_t;

/* a LOOKUP this process relays to its node's rendezvous socket */
typedef struct tcp_relay {
    struct tcp_relay *next;
    tcp_conn_t *conn; /* the importer's connection, to answer on */
    uint32_t tag;
    rsm_memseg_id_t segid;
    int fd;
    uint64_t source_id;
} tcp_relay_t;

static struct {
    pthread_mutex_t lock;         /* everything in this struct and the conns */
    pthread_mutex_t progress;     /* the token: its holder reads the sockets */
    pthread_mutex_t connect_lock; /* one connection set-up at a time */
    _Atomic int service_parked;   /* the service's watch waits for the token's holder */
    int claims;                   /* pb_rsm_progress_claim minus releases, under pb_rsm_lock */
    _Atomic int claimed;          /* claims > 0, for polls that hold no lock */
    tcp_conn_t *hot;              /* the connection data came on last (tcp.lock) */
    _Atomic uint64_t polls;       /* claimants' polls, ever */
    uint64_t lapse_polls;         /* polls at the watchdog's last look */
    int lapse_fd;                 /* the watchdog's timer (owned by the service) */
    int started;
    pb_evset_t sources; /* every tcp socket, and wake_fd */
    int wake_fd;        /* eventfd in it: ends a token holder's epoll_wait */
    uint64_t service_id;
    int listen_fd;
    uint64_t listen_id;
    int listen_paused; /* out of descriptors: accept again once one closes */
    uint32_t addr;     /* advertised IPv4, network order: addrs[0] */
    uint32_t addrs[TCP_MAX_RAILS];
    int addr_count;
    uint16_t port;
    size_t stripe_min;  /* puts this long and longer are striped */
    int64_t spin_ns;    /* a waiter polls this long before sleeping */
    uint8_t *link_down; /* [node * TCP_MAX_RAILS + rail]: a connection broke */
    size_t link_nodes;
    uint8_t local_key[PB_TCP_KEY_LEN]; /* authenticates the solo job's peers */
    tcp_conn_t *conns;
    tcp_export_t *published;
    tcp_relay_t *relays;
    char scratch[TCP_STAGING_SIZE]; /* where dropped payloads go */
    int atfork_registered;
} tcp = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .progress = PTHREAD_MUTEX_INITIALIZER,
    .connect_lock = PTHREAD_MUTEX_INITIALIZER,
    .sources = PB_EVSET_INITIALIZER,
    .wake_fd = -1,
    .lapse_fd = -1,
    .listen_fd = -1,
};

/* ---- small helpers ----------------------------------------------------------- */

/* Threads of this process asleep on a tcp futex word in tcp_wait. */
static _Atomic int tcp_sleepers;
/* Threads asleep in epoll_wait on the set holding the token (at most one):
 * their waits have no time slice, so a change made by another thread must
 * wake them through tcp.wake_fd. */
static _Atomic int tcp_epoll_sleepers;

/* Wake whoever sleeps on @word, which the caller just changed (seq_cst);
 * no system call when nobody can be asleep on it. */
static void tcp_futex_wake(_Atomic uint32_t *word)
{
    /* the token holder sleeping in epoll_wait is another thread than the
     * caller: the holder itself changes words only once awake */
    if (atomic_load(&tcp_epoll_sleepers) > 0)
        eventfd_write(tcp.wake_fd, 1);
    if (atomic_load(&tcp_sleepers) == 0 && atomic_load(&pb_rsm_event_sleepers) == 0)
        return;
    /* shared (no FUTEX_PRIVATE_FLAG): rsm_intr_signal_wait_pollfd waits on
     * event words with futex_waitv in shared mode */
    pb_futex_wake_all(word);
}

/* Sleep while @word holds @expected, at most @timeout_ms.
 * @return 0, or -1 if a signal handler ran during the wait */
static int tcp_futex_wait(_Atomic uint32_t *word, uint32_t expected, int timeout_ms)
{
    int interrupted = 0;

    atomic_fetch_add(&tcp_sleepers, 1);
    if (atomic_load(word) == expected && pb_futex_wait(word, expected, timeout_ms) != 0 &&
        errno == EINTR)
        interrupted = 1;
    atomic_fetch_sub(&tcp_sleepers, 1);
    return interrupted ? -1 : 0;
}

static void tcp_word_bump(_Atomic uint32_t *word)
{
    atomic_fetch_add_explicit(word, 1, memory_order_seq_cst);
    tcp_futex_wake(word);
}

static long tcp_timeout_ms(void)
{
    long ms = pb_config_get_long("POSTBOX_TCP_TIMEOUT_MS");

    return ms > 0 ? ms : 2000;
}

/* Socket options of every connection: no Nagle delay, and a broken peer
 * or link noticed within POSTBOX_TCP_TIMEOUT_MS rather than minutes. */
static void tcp_socket_tune(int fd)
{
    int one = 1, idle = 1, count = 3;
    unsigned timeout = (unsigned)tcp_timeout_ms();
    int interval = (int)(timeout / 3000) > 0 ? (int)(timeout / 3000) : 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof(timeout));
}

static void tcp_key_of_job(uint8_t key[PB_TCP_KEY_LEN])
{
    const pb_job_t *job = pb_job_get();

    if (job->has_secret)
        memcpy(key, job->secret, PB_TCP_KEY_LEN);
    else
        memcpy(key, tcp.local_key, PB_TCP_KEY_LEN);
}

/* "a.b.c.d[,a.b.c.d...]" into @addrs (network order).  @return how many,
 * or 0 when @text is not such a list. */
static int tcp_parse_addrs(const char *text, uint32_t addrs[TCP_MAX_RAILS])
{
    int count = 0;

    while (*text != '\0') {
        char one[INET_ADDRSTRLEN];
        size_t len = strcspn(text, ",");
        struct in_addr in;

        if (count == TCP_MAX_RAILS || len == 0 || len >= sizeof(one))
            return 0;
        memcpy(one, text, len);
        one[len] = '\0';
        if (inet_pton(AF_INET, one, &in) != 1)
            return 0;
        addrs[count++] = in.s_addr;
        text += len;
        if (*text == ',')
            text++;
    }
    return count;
}

/* The addresses this process gives other nodes, one per rail:
 * POSTBOX_TCP_ADDR, else the --netns addresses the launcher gave, else
 * loopback.  @return how many, or 0 (logged) when the setting is wrong. */
static int tcp_local_addrs(uint32_t addrs[TCP_MAX_RAILS])
{
    const char *text = pb_config_get_string("POSTBOX_TCP_ADDR");
    int count;

    if (text == NULL || text[0] == '\0')
        text = getenv("POSTBOX_NETNS_RAILS");
    if (text == NULL || text[0] == '\0')
        text = getenv("POSTBOX_NETNS_ADDR");
    if (text == NULL || text[0] == '\0')
        text = "127.0.0.1";
    count = tcp_parse_addrs(text, addrs);
    if (count == 0)
        pb_error("POSTBOX_TCP_ADDR: '%s' is not a list of at most %d IPv4 addresses", text,
                 TCP_MAX_RAILS);
    return count;
}

/* ---- the outgoing queue ---------------------------------------------------- */

static int tcp_outq_append(tcp_outq_t *q, const void *a, size_t a_len, const void *b, size_t b_len)
{
    size_t need = a_len + b_len;

    if (q->head == q->tail)
        q->head = q->tail = 0;
    if (q->cap - q->tail < need) {
        size_t used = q->tail - q->head;
        size_t cap = q->cap ? q->cap : 4096;
        char *grown;

        while (cap < used + need)
            cap *= 2;
        grown = malloc(cap);
        if (grown == NULL)
            return 0;
        if (used > 0)
            memcpy(grown, q->buf + q->head, used);
        free(q->buf);
        q->buf = grown;
        q->cap = cap;
        q->head = 0;
        q->tail = used;
    }
    memcpy(q->buf + q->tail, a, a_len);
    if (b_len > 0)
        memcpy(q->buf + q->tail + a_len, b, b_len);
    q->tail += need;
    return 1;
}

/* ---- sources: what sits in the epoll set ----------------------------------- */

/* ---- connections ------------------------------------------------------------- */

static tcp_conn_t *tcp_conn_new(int fd, int at_exporter)
{
    tcp_conn_t *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->staging = malloc(TCP_STAGING_SIZE);
    if (c->staging == NULL) {
        free(c);
        return NULL;
    }
    c->fd = fd;
    c->at_exporter = at_exporter;
    c->next_tag = 1;
    pthread_mutex_init(&c->send_lock, NULL);
    return c;
}

static void tcp_conn_free(tcp_conn_t *c)
{
    if (tcp.hot == c)
        tcp.hot = NULL;
    pthread_mutex_destroy(&c->send_lock);
    free(c->outq.buf);
    free(c->staging);
    free(c->slot_imports);
    free(c->slots);
    free(c->word_last);
    free(c);
}

static void tcp_conn_unlink(tcp_conn_t *c)
{
    for (tcp_conn_t **p = &tcp.conns; *p != NULL; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            return;
        }
    }
}

static void tcp_conn_watch(tcp_conn_t *c, uint32_t events)
{
    if (c->events != events) {
        c->events = events;
        (void)pb_evset_modify(&tcp.sources, c->source_id, events);
    }
}

/* Mark @c broken: its waiters and importers see @status from now on; log
 * @why unless NULL (a peer that simply went away).  Caller holds tcp.lock.
 * An importer-side connection is unlinked at once and freed when its last
 * import disconnects; an exporter-side one stays linked until
 * tcp_reap_failed frees it, so that callers walking tcp.conns may fail
 * connections as they go. */
static void tcp_conn_fail(tcp_conn_t *c, pb_status_t status, const char *why)
{
    int32_t ok = PB_OK;

    if (!atomic_compare_exchange_strong(&c->failure, &ok, (int32_t)status))
        return;
    if (c->at_exporter) {
        if (why != NULL)
            pb_warn("tcp: closing the connection from pid %u (node %u): %s", c->peer_pid,
                    c->peer_node, why);
        else
            pb_info("tcp: importer pid %u closed its connection", c->peer_pid);
    } else {
        char addr[INET_ADDRSTRLEN] = "?";

        inet_ntop(AF_INET, &c->peer.sin_addr, addr, sizeof(addr));
        if (why != NULL)
            pb_warn("tcp: closing the connection to %s:%u: %s", addr, ntohs(c->peer.sin_port), why);
        else
            pb_info("tcp: the exporter at %s:%u closed its connection", addr,
                    ntohs(c->peer.sin_port));
    }
    pb_evset_remove(&tcp.sources, c->source_id);
    shutdown(c->fd, SHUT_RDWR);
    if (!c->at_exporter)
        tcp_conn_unlink(c);
    while (c->requests != NULL) {
        tcp_request_t *req = c->requests;

        c->requests = req->next;
        req->status = status;
        tcp_word_bump(&req->done);
    }
    for (uint32_t i = 0; i < c->slot_import_cap; i++) {
        pb_rsm_import_t *im = c->slot_imports[i];

        if (im != NULL)
            tcp_word_bump(&((tcp_import_t *)im->tl)->generation);
    }
}

/* A descriptor was closed: accept again if running out had paused it. */
static void tcp_listen_resume(void)
{
    if (tcp.listen_paused) {
        tcp.listen_paused = 0;
        (void)pb_evset_modify(&tcp.sources, tcp.listen_id, EPOLLIN);
    }
}

static void tcp_relay_end(tcp_relay_t *relay);
static void tcp_conn_ready(void *arg, uint32_t events);
static void tcp_relay_ready(void *arg, uint32_t events);

/* Free the exporter-side connections that failed, and the LOOKUPs they
 * were waiting for.  Caller holds tcp.lock. */
static void tcp_reap_failed(void)
{
    for (tcp_conn_t **p = &tcp.conns; *p != NULL;) {
        tcp_conn_t *c = *p;

        if (c->at_exporter && atomic_load(&c->failure) != PB_OK) {
            *p = c->next;
            for (tcp_relay_t *relay = tcp.relays, *next; relay != NULL; relay = next) {
                next = relay->next;
                if (relay->conn == c)
                    tcp_relay_end(relay);
            }
            close(c->fd);
            tcp_conn_free(c);
            tcp_listen_resume();
        } else {
            p = &c->next;
        }
    }
}

/* Send what is queued without blocking; watch for writability if some is
 * left.  Caller holds tcp.lock. */
static void tcp_conn_flush(tcp_conn_t *c)
{
    tcp_outq_t *q = &c->outq;

    if (atomic_load(&c->failure) != PB_OK)
        return;
    if (q->head != q->tail && pthread_mutex_trylock(&c->send_lock) == 0) {
        while (q->head != q->tail) {
            ssize_t n =
                send(c->fd, q->buf + q->head, q->tail - q->head, MSG_DONTWAIT | MSG_NOSIGNAL);

            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EPIPE || errno == ECONNRESET)
                    tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL); /* the peer went away */
                else if (errno != EAGAIN)
                    tcp_conn_fail(c, PB_ERR_CONN_ABORTED, strerror(errno));
                break;
            }
            q->head += (size_t)n;
        }
        pthread_mutex_unlock(&c->send_lock);
    }
    if (atomic_load(&c->failure) == PB_OK)
        tcp_conn_watch(c, EPOLLIN | EPOLLRDHUP | (q->head != q->tail ? EPOLLOUT : 0));
}

/* Queue one frame (and its payload) for a non-blocking send.  Caller holds
 * tcp.lock. */
static void tcp_conn_queue(tcp_conn_t *c, const pb_tcp_frame_t *frame, const void *payload)
{
    uint8_t header[PB_TCP_FRAME_HEADER_SIZE];

    if (atomic_load(&c->failure) != PB_OK)
        return;
    pb_tcp_frame_encode(frame, header);
    if (!tcp_outq_append(&c->outq, header, sizeof(header), payload, frame->length)) {
        tcp_conn_fail(c, PB_ERR_NO_MEMORY, "out of memory for the send queue");
        return;
    }
    tcp_conn_flush(c);
}

/* Write @iov to @c, blocking until done (connection sockets are blocking;
 * every other send and receive says MSG_DONTWAIT); the caller holds
 * c->send_lock and nothing else, so this process keeps reading meanwhile.
 * A dead peer or link ends the wait with an error (TCP_USER_TIMEOUT), as
 * does tcp_conn_fail's shutdown. */
static pb_status_t tcp_conn_write(tcp_conn_t *c, struct iovec *iov, int iov_count)
{
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iov_count};

    while (msg.msg_iovlen > 0) {
        ssize_t n;

        if (atomic_load_explicit(&c->failure, memory_order_relaxed) != PB_OK)
            return PB_ERR_CONN_ABORTED;
        n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return PB_ERR_CONN_ABORTED; /* the reader will see why */
        }
        while (msg.msg_iovlen > 0 && (size_t)n >= msg.msg_iov->iov_len) {
            n -= (ssize_t)msg.msg_iov->iov_len;
            msg.msg_iov++;
            msg.msg_iovlen--;
        }
        if (msg.msg_iovlen > 0) {
            msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + n;
            msg.msg_iov->iov_len -= (size_t)n;
        }
    }
    return PB_OK;
}

/* Send @count frames and their payloads from an application thread, in
 * one write (the receiver reads them together), after anything the
 * progress engine queued on this connection. */
static pb_status_t tcp_conn_send_frames(tcp_conn_t *c, const pb_tcp_frame_t *frames,
                                        const void *const *payloads, int count)
{
    uint8_t headers[TCP_GATHER_MAX][PB_TCP_FRAME_HEADER_SIZE];
    struct iovec iov[2 * TCP_GATHER_MAX];
    int iov_count = 0;
    pb_status_t status;

    for (int i = 0; i < count; i++) {
        pb_tcp_frame_encode(&frames[i], headers[i]);
        iov[iov_count++] = (struct iovec){headers[i], PB_TCP_FRAME_HEADER_SIZE};
        if (frames[i].length > 0)
            iov[iov_count++] = (struct iovec){(void *)payloads[i], frames[i].length};
    }
    pthread_mutex_lock(&c->send_lock);
    if (PB_UNLIKELY(c->outq.head != c->outq.tail)) {
        /* rare (a DETACH queued while this thread was sending): flush it
         * first, holding tcp.lock only around non-blocking sends */
        for (;;) {
            struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
            int left;

            pthread_mutex_lock(&tcp.lock);
            while (c->outq.head != c->outq.tail) {
                ssize_t n = send(c->fd, c->outq.buf + c->outq.head, c->outq.tail - c->outq.head,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);

                if (n <= 0)
                    break;
                c->outq.head += (size_t)n;
            }
            left = c->outq.head != c->outq.tail;
            pthread_mutex_unlock(&tcp.lock);
            if (!left || atomic_load(&c->failure) != PB_OK)
                break;
            poll(&pfd, 1, TCP_WAIT_SLICE_MS);
        }
    }
    status = tcp_conn_write(c, iov, iov_count);
    pthread_mutex_unlock(&c->send_lock);
    return status;
}

static pb_status_t tcp_conn_send(tcp_conn_t *c, const pb_tcp_frame_t *frame, const void *payload)
{
    return tcp_conn_send_frames(c, frame, &payload, 1);
}

/* ---- the exporter side: frames from importers -------------------------------- */

static tcp_slot_t *tcp_slot_of(tcp_conn_t *c, uint32_t slot)
{
    if (slot == 0 || slot > c->slot_count || !c->slots[slot - 1].in_use)
        return NULL;
    return &c->slots[slot - 1];
}

static tcp_export_t *tcp_published_find(rsm_memseg_id_t segid)
{
    for (tcp_export_t *te = tcp.published; te != NULL; te = te->next) {
        if (te->segid == segid)
            return te;
    }
    return NULL;
}

static void tcp_reply(tcp_conn_t *c, const pb_tcp_frame_t *request, pb_status_t status,
                      uint32_t slot, uint64_t value, uint32_t count, const void *data,
                      uint32_t length)
{
    pb_tcp_frame_t reply = {.type = PB_TCP_REPLY,
                            .status = (int32_t)status,
                            .slot = slot,
                            .tag = request->tag,
                            .offset = value,
                            .length = length,
                            .count = count};

    tcp_conn_queue(c, &reply, data);
}

static void tcp_serve_attach(tcp_conn_t *c, const pb_tcp_frame_t *frame)
{
    tcp_export_t *te = tcp_published_find(c->attach.segid);
    uint32_t perm = c->attach.perm;
    tcp_slot_t *slot = NULL;
    uint32_t index;
    int grant;

    if (te == NULL) {
        tcp_reply(c, frame, PB_ERR_NOT_PUBLISHED, 0, 0, 0, NULL, 0);
        return;
    }
    /* the job's processes run as one user: the peer is judged as the owner */
    grant = pb_rsm_acl_grant(te->seg, c->peer_node, geteuid(), getegid());
    if (grant < 0) {
        tcp_reply(c, frame, PB_ERR_NOT_PUBLISHED_TO_NODE, 0, 0, 0, NULL, 0);
        return;
    }
    if (perm == 0 || (perm & ~(uint32_t)RSM_PERM_RDWR) != 0 || (perm & ~(uint32_t)grant) != 0) {
        tcp_reply(c, frame, PB_ERR_PERMISSION, 0, 0, 0, NULL, 0);
        return;
    }
    for (index = 0; index < c->slot_count && c->slots[index].in_use; index++)
        ;
    if (index == c->slot_count) {
        tcp_slot_t *grown;

        if (c->slot_count >= PB_TCP_MAX_SLOTS) {
            tcp_reply(c, frame, PB_ERR_NO_RESOURCE, 0, 0, 0, NULL, 0);
            return;
        }
        grown = realloc(c->slots, (c->slot_count + 1) * sizeof(*grown));
        if (grown == NULL) {
            tcp_reply(c, frame, PB_ERR_NO_MEMORY, 0, 0, 0, NULL, 0);
            return;
        }
        c->slots = grown;
        c->slot_count++;
    }
    slot = &c->slots[index];
    *slot = (tcp_slot_t){.in_use = 1, .exp = te, .perm = perm};
    tcp_reply(c, frame, PB_OK, index + 1, te->seg->size, perm, NULL, 0);
}

static pb_status_t tcp_rendezvous_connect(rsm_node_id_t node, rsm_memseg_id_t segid, int *fd_p);
static pb_status_t tcp_directory_check(rsm_memseg_id_t segid, ssize_t got,
                                       const pb_tcp_directory_t *dir);

/* An importer on another node asks where a segment of this node is
 * exported: answer from this process's own publications at once, else ask
 * the node's rendezvous socket (which only processes of the node can see)
 * and answer when it does (tcp_relay_ready), never waiting for it here. */
static void tcp_serve_lookup(tcp_conn_t *c, const pb_tcp_frame_t *frame)
{
    pb_tcp_location_t where = {.addr = tcp.addr, .port = tcp.port};
    tcp_relay_t *relay;
    pb_status_t status;
    int fd;

    if (c->lookup.node != pb_job_get()->node_id) {
        tcp_reply(c, frame, PB_ERR_UNREACHABLE, 0, 0, 0, NULL, 0); /* ask that node */
        return;
    }
    if (tcp_published_find(c->lookup.segid) != NULL) {
        tcp_reply(c, frame, PB_OK, 0, 0, 0, &where, sizeof(where));
        return;
    }
    status = tcp_rendezvous_connect(c->lookup.node, c->lookup.segid, &fd);
    if (status != PB_OK) {
        tcp_reply(c, frame, status, 0, 0, 0, NULL, 0);
        return;
    }
    relay = calloc(1, sizeof(*relay));
    if (relay == NULL || pb_evset_add(&tcp.sources, fd, EPOLLIN, tcp_relay_ready, relay,
                                      &relay->source_id) != PB_OK) {
        free(relay);
        close(fd);
        tcp_reply(c, frame, PB_ERR_NO_RESOURCE, 0, 0, 0, NULL, 0);
        return;
    }
    relay->next = tcp.relays;
    relay->conn = c;
    relay->tag = frame->tag;
    relay->segid = c->lookup.segid;
    relay->fd = fd;
    tcp.relays = relay;
}

/* Forget relay @relay (answered, or its importer's connection is gone).
 * Caller holds tcp.lock. */
static void tcp_relay_end(tcp_relay_t *relay)
{
    for (tcp_relay_t **p = &tcp.relays; *p != NULL; p = &(*p)->next) {
        if (*p == relay) {
            *p = relay->next;
            break;
        }
    }
    pb_evset_remove(&tcp.sources, relay->source_id);
    close(relay->fd);
    free(relay);
}

/* The node's rendezvous socket answered (or closed): answer the LOOKUP.
 * Caller holds tcp.lock. */
static void tcp_relay_ready(void *arg, uint32_t events)
{
    tcp_relay_t *relay = arg;
    pb_tcp_frame_t request = {.type = PB_TCP_LOOKUP, .tag = relay->tag};
    pb_tcp_directory_t dir;
    ssize_t got = recv(relay->fd, &dir, sizeof(dir), MSG_DONTWAIT);
    pb_status_t status;

    if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    status = tcp_directory_check(relay->segid, got, &dir);
    if (status == PB_OK) {
        pb_tcp_location_t where = {.addr = dir.addr, .port = dir.port};

        tcp_reply(relay->conn, &request, PB_OK, 0, 0, 0, &where, sizeof(where));
    } else {
        tcp_reply(relay->conn, &request, status, 0, 0, 0, NULL, 0);
    }
    tcp_relay_end(relay);
}

static const char *tcp_exporter_on_header(void *ctx, const pb_tcp_frame_t *frame, char **dest_p)
{
    tcp_conn_t *c = ctx;
    tcp_slot_t *slot;
    pb_tcp_slot_view_t view;
    const char *why;

    if (frame->type == PB_TCP_ATTACH) {
        *dest_p = (char *)&c->attach;
        return NULL;
    }
    if (frame->type == PB_TCP_LOOKUP) {
        *dest_p = (char *)&c->lookup;
        return NULL;
    }
    slot = tcp_slot_of(c, frame->slot);
    if (slot == NULL)
        return "frame for a slot that is not attached";
    if (frame->type != PB_TCP_PUT && frame->type != PB_TCP_GET)
        return NULL;
    if (slot->exp == NULL) {
        /* withdrawn: the data is dropped, the next barrier reports it */
        if (frame->type == PB_TCP_PUT)
            slot->error = PB_ERR_CONN_ABORTED;
        return NULL;
    }
    view = (pb_tcp_slot_view_t){slot->exp->seg->vaddr, slot->exp->seg->size, slot->perm};
    why = pb_tcp_frame_check_access(frame, &view);
    if (why != NULL)
        return why;
    if (frame->type == PB_TCP_PUT && (frame->flags & PB_TCP_FLAG_WORD_LAST)) {
        /* received aside, stored in order once whole (tcp_exporter_on_frame) */
        if (c->word_last == NULL && (c->word_last = malloc(PB_TCP_WORD_LAST_MAX)) == NULL)
            return "no memory for a word-last put";
        *dest_p = c->word_last;
    } else if (frame->type == PB_TCP_PUT) {
        *dest_p = view.base + frame->offset;
    }
    return NULL;
}

/* An importer's signal reaches @te: count it as shm does. */
static void tcp_export_post(tcp_export_t *te, int accumulate)
{
    if (accumulate) {
        uint32_t pending = atomic_load(&te->events);

        /* saturate rather than wrap after 2^32 unconsumed posts */
        while (pending != UINT32_MAX &&
               !atomic_compare_exchange_weak(&te->events, &pending, pending + 1))
            ;
    } else {
        uint32_t none = 0;

        atomic_compare_exchange_strong(&te->events, &none, 1);
    }
    tcp_futex_wake(&te->events);
}

static void tcp_exporter_on_frame(void *ctx, const pb_tcp_frame_t *frame)
{
    tcp_conn_t *c = ctx;
    tcp_slot_t *slot = tcp_slot_of(c, frame->slot); /* NULL for ATTACH and LOOKUP */

    switch (frame->type) {
    case PB_TCP_ATTACH: tcp_serve_attach(c, frame); break;
    case PB_TCP_LOOKUP: tcp_serve_lookup(c, frame); break;
    case PB_TCP_DETACH: slot->in_use = 0; break;
    case PB_TCP_PUT:
        if ((frame->flags & PB_TCP_FLAG_WORD_LAST) && slot->exp != NULL) {
            /* the rest, then the first word, with release order */
            char *to = (char *)slot->exp->seg->vaddr + frame->offset;
            uint32_t word;

            memcpy(to + 4, c->word_last + 4, frame->length - 4);
            memcpy(&word, c->word_last, sizeof(word));
            atomic_store_explicit((_Atomic uint32_t *)to, word, memory_order_release);
        }
        /* the payload is in place */
        if ((frame->flags & PB_TCP_FLAG_SIGNAL) && slot->exp != NULL)
            tcp_export_post(slot->exp, 1);
        break;
    case PB_TCP_GET:
        if (slot->exp == NULL)
            tcp_reply(c, frame, PB_ERR_CONN_ABORTED, frame->slot, 0, 0, NULL, 0);
        else
            tcp_reply(c, frame, PB_OK, frame->slot, 0, 0,
                      (char *)slot->exp->seg->vaddr + frame->offset, frame->count);
        break;
    case PB_TCP_BARRIER:
        /* every earlier frame of this connection is applied */
        tcp_reply(c, frame, slot->exp == NULL ? PB_ERR_CONN_ABORTED : slot->error, frame->slot, 0,
                  0, NULL, 0);
        slot->error = PB_OK;
        break;
    case PB_TCP_SIGNAL:
        if (slot->exp != NULL)
            tcp_export_post(slot->exp, frame->flags & PB_TCP_FLAG_ACCUMULATE);
        break;
    default: break; /* pb_tcp_frame_check let no other type through */
    }
}

/* ---- the importer side: frames from exporters -------------------------------- */

static tcp_request_t *tcp_request_find(tcp_conn_t *c, uint32_t tag)
{
    for (tcp_request_t *req = c->requests; req != NULL; req = req->next) {
        if (req->tag == tag)
            return req;
    }
    return NULL;
}

static pb_rsm_import_t *tcp_import_of_slot(tcp_conn_t *c, uint32_t slot)
{
    return slot < c->slot_import_cap ? c->slot_imports[slot] : NULL;
}

static int tcp_slot_import_set(tcp_conn_t *c, uint32_t slot, pb_rsm_import_t *im)
{
    if (slot >= c->slot_import_cap) {
        uint32_t cap = c->slot_import_cap ? c->slot_import_cap : 16;
        pb_rsm_import_t **grown;

        while (cap <= slot)
            cap *= 2;
        grown = realloc(c->slot_imports, cap * sizeof(*grown));
        if (grown == NULL)
            return 0;
        memset(grown + c->slot_import_cap, 0, (cap - c->slot_import_cap) * sizeof(*grown));
        c->slot_imports = grown;
        c->slot_import_cap = cap;
    }
    c->slot_imports[slot] = im;
    return 1;
}

/* Whether rail @rail's connection carries this import's events: the first
 * rail whose connection works (the exporter sends each event on every
 * rail; the others are dropped).  Caller holds tcp.lock. */
static int tcp_rail_carries_events(const tcp_import_t *ti, const tcp_conn_t *c)
{
    for (int r = 0; r < ti->rail_count; r++) {
        if (atomic_load(&ti->rails[r].conn->failure) == PB_OK)
            return ti->rails[r].conn == c;
    }
    return 0;
}

static const char *tcp_importer_on_header(void *ctx, const pb_tcp_frame_t *frame, char **dest_p)
{
    tcp_conn_t *c = ctx;
    tcp_request_t *req;

    if (frame->type != PB_TCP_REPLY)
        return NULL;
    req = tcp_request_find(c, frame->tag);
    if (req == NULL)
        return "reply to no request";
    if (frame->length > 0) {
        if (req->dst == NULL || frame->status != PB_OK || frame->length != req->dst_len)
            return "reply data that was not asked for";
        *dest_p = req->dst;
    }
    return NULL;
}

static void tcp_importer_on_frame(void *ctx, const pb_tcp_frame_t *frame)
{
    tcp_conn_t *c = ctx;
    pb_rsm_import_t *im;
    tcp_request_t *req;

    switch (frame->type) {
    case PB_TCP_REPLY:
        req = tcp_request_find(c, frame->tag);
        for (tcp_request_t **p = &c->requests; *p != NULL; p = &(*p)->next) {
            if (*p == req) {
                *p = req->next;
                break;
            }
        }
        req->status = frame->status;
        req->slot = frame->slot;
        req->value = frame->offset;
        req->count = frame->count;
        if (req->import != NULL && frame->status == PB_OK &&
            !tcp_slot_import_set(c, frame->slot, req->import))
            req->status = PB_ERR_NO_MEMORY;
        tcp_word_bump(&req->done);
        break;
    case PB_TCP_EVENT:
    case PB_TCP_WITHDRAWN:
        im = tcp_import_of_slot(c, frame->slot);
        if (im == NULL)
            break; /* disconnected meanwhile */
        /* an event comes over every rail; a broken rail wakes the waiters
         * when it breaks (tcp_conn_fail), so events it lost are not waited for */
        if (frame->type == PB_TCP_EVENT && !tcp_rail_carries_events(im->tl, c))
            break;
        if (frame->type == PB_TCP_WITHDRAWN)
            atomic_store(&((tcp_import_t *)im->tl)->withdrawn, 1);
        tcp_word_bump(&((tcp_import_t *)im->tl)->generation);
        break;
    default: break;
    }
}

/* ---- progress: reading the sockets ------------------------------------------- */

/* The exporter side's handshake: read the importer's AUTH, check it,
 * answer WELCOME. */
static void tcp_conn_read_auth(tcp_conn_t *c)
{
    const pb_job_t *job = pb_job_get();
    pb_tcp_welcome_t welcome;
    uint8_t key[PB_TCP_KEY_LEN];
    pb_status_t status = PB_OK;
    ssize_t n;

    n = recv(c->fd, (char *)&c->auth + c->auth_got, sizeof(c->auth) - c->auth_got, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL); /* gave up before it began */
        return;
    }
    if (n < 0)
        return;
    c->auth_got += (size_t)n;
    if (c->auth_got < sizeof(c->auth))
        return;
    if (!pb_tcp_msg_hdr_ok(&c->auth.hdr, PB_TCP_MSG_AUTH)) {
        tcp_conn_fail(c, PB_ERR_PROTOCOL, "malformed handshake");
        return;
    }
    tcp_key_of_job(key);
    c->peer_node = c->auth.node;
    c->peer_pid = c->auth.pid;
    if (memchr(c->auth.job_id, '\0', sizeof(c->auth.job_id)) == NULL ||
        strcmp(c->auth.job_id, job->id) != 0 ||
        c->auth.mac != pb_tcp_auth_mac(key, c->nonce, &c->auth)) {
        pb_info("tcp: refused a connection from pid %u: not of this job", c->peer_pid);
        status = PB_ERR_PERMISSION;
    }
    pb_tcp_msg_hdr_set(&welcome.hdr, PB_TCP_MSG_WELCOME);
    welcome.status = status;
    welcome.reserved = 0;
    welcome.mac = pb_tcp_welcome_mac(key, c->auth.nonce, status);
    /* the first bytes on a fresh socket: they fit its buffer */
    if (send(c->fd, &welcome, sizeof(welcome), MSG_DONTWAIT | MSG_NOSIGNAL) !=
            (ssize_t)sizeof(welcome) ||
        status != PB_OK) {
        tcp_conn_fail(c, PB_ERR_PERMISSION, NULL);
        return;
    }
    c->established = 1;
}

/* Read what @c has, up to TCP_READS_PER_PASS receives.  Every staged byte
 * is consumed before returning: epoll reports the socket again only if it
 * has more, so bytes left in staging would wait forever.  Caller holds
 * pb_rsm_lock and tcp.lock. */
static void tcp_conn_read(tcp_conn_t *c)
{
    int reads = 0, drained = 0;

    while (atomic_load(&c->failure) == PB_OK) {
        char *buf;
        size_t len, avail = c->staging_tail - c->staging_head;
        const char *why;
        ssize_t n;

        /* a short read emptied the socket: another recv would only say
         * EAGAIN; whatever arrives next is reported again by epoll */
        if (avail == 0 && (drained || reads == TCP_READS_PER_PASS))
            return;
        pb_tcp_rx_next(&c->rx, tcp.scratch, sizeof(tcp.scratch), &buf, &len);
        if (avail > 0) {
            /* from the staging buffer */
            n = (ssize_t)(avail < len ? avail : len);
            if (buf != tcp.scratch)
                memcpy(buf, c->staging + c->staging_head, (size_t)n);
            c->staging_head += (size_t)n;
        } else {
            int direct = len >= TCP_STAGING_SIZE;

            /* a long payload straight to its place; the rest via staging */
            c->staging_head = c->staging_tail = 0;
            n = recv(c->fd, direct ? buf : c->staging, direct ? len : TCP_STAGING_SIZE,
                     MSG_DONTWAIT);
            reads++;
            if (n == 0) {
                tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL); /* the peer went away */
                return;
            }
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == ECONNRESET)
                    tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL); /* the peer died */
                else if (errno != EAGAIN)
                    tcp_conn_fail(c, PB_ERR_CONN_ABORTED, strerror(errno));
                return;
            }
            /* a short read into staging emptied the socket; a long payload
             * keeps coming, so its reads go on until EAGAIN */
            drained = !direct && (size_t)n < TCP_STAGING_SIZE;
            if (!direct) {
                c->staging_tail = (size_t)n;
                continue;
            }
        }
        why = pb_tcp_rx_advance(&c->rx, (size_t)n);
        if (why != NULL) {
            tcp_conn_fail(c, PB_ERR_PROTOCOL, why);
            return;
        }
    }
}

/* Drop the oldest connection still in its handshake if there are
 * TCP_MAX_HANDSHAKES of them.  Caller holds tcp.lock. */
static void tcp_handshakes_bound(void)
{
    tcp_conn_t *oldest = NULL;
    unsigned pending = 0;

    /* tcp.conns is newest first */
    for (tcp_conn_t *c = tcp.conns; c != NULL; c = c->next) {
        if (c->at_exporter && !c->established && atomic_load(&c->failure) == PB_OK) {
            pending++;
            oldest = c;
        }
    }
    if (pending >= TCP_MAX_HANDSHAKES)
        tcp_conn_fail(oldest, PB_ERR_CONN_ABORTED, "too many connections in their handshake");
}

static void tcp_accept_ready(void *arg, uint32_t events)
{
    for (;;) {
        pb_tcp_hello_t hello;
        tcp_conn_t *c;
        int fd;

        tcp_handshakes_bound();
        fd = accept4(tcp.listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                /* the listener stays readable: stop watching it until a
                 * connection closes, or this would spin */
                pb_warn("tcp: out of file descriptors; not accepting until a connection closes");
                tcp.listen_paused = 1;
                (void)pb_evset_modify(&tcp.sources, tcp.listen_id, 0);
            } else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
                pb_warn("tcp: accept failed: %m");
            }
            return;
        }
        tcp_socket_tune(fd);
        c = tcp_conn_new(fd, 1);
        if (c == NULL || pb_job_random_bytes(c->nonce, sizeof(c->nonce)) != 0 ||
            pb_evset_add(&tcp.sources, fd, EPOLLIN | EPOLLRDHUP, tcp_conn_ready, c,
                         &c->source_id) != PB_OK) {
            pb_warn("tcp: refusing an importer: out of resources");
            if (c != NULL)
                tcp_conn_free(c);
            close(fd);
            continue;
        }
        c->events = EPOLLIN | EPOLLRDHUP;
        pb_tcp_rx_init(&c->rx, 1, tcp_exporter_on_header, tcp_exporter_on_frame, c);
        c->next = tcp.conns;
        tcp.conns = c;
        pb_tcp_msg_hdr_set(&hello.hdr, PB_TCP_MSG_HELLO);
        memcpy(hello.nonce, c->nonce, sizeof(hello.nonce));
        if (send(fd, &hello, sizeof(hello), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(hello))
            tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL);
    }
}

/* A process of this node asks where a segment's exporter listens. */
static void tcp_rendezvous_ready(void *arg, uint32_t events)
{
    tcp_export_t *te = arg;
    int listen_fd = pb_evset_get(&tcp.sources, te->rendezvous_id)->fd;

    for (;;) {
        pb_tcp_directory_t dir = {0};
        struct ucred cred;
        socklen_t cred_len = sizeof(cred);
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

        if (fd < 0)
            return;
        pb_tcp_msg_hdr_set(&dir.hdr, PB_TCP_MSG_DIRECTORY);
        dir.addr = tcp.addr;
        dir.port = tcp.port;
        /* the solo job has no secret: this process's own key goes to
         * processes of the same user, which the kernel vouches for here */
        if (!pb_job_get()->has_secret &&
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0 &&
            cred.uid == geteuid()) {
            dir.has_key = 1;
            memcpy(dir.key, tcp.local_key, sizeof(dir.key));
        }
        if (send(fd, &dir, sizeof(dir), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(dir))
            pb_debug("tcp: rendezvous reply for segment %#x not sent: %m", te->segid);
        close(fd);
    }
}

/* The wake-up eventfd rang: it did its job, ending the wait. */
static void tcp_wake_ready(void *arg, uint32_t events)
{
    eventfd_t drained;

    eventfd_read(tcp.wake_fd, &drained);
}

/* A connection's socket is ready (@arg: the connection). */
static void tcp_conn_ready(void *arg, uint32_t events)
{
    tcp_conn_t *c = arg;

    if (events & EPOLLOUT)
        tcp_conn_flush(c);
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        if (c->at_exporter && !c->established) {
            tcp_conn_read_auth(c);
        } else {
            tcp_conn_read(c);
            tcp.hot = c;
        }
    }
}

/* Handle @count events from epoll_wait on the sources (an event for a
 * source removed since is dropped).  Caller holds pb_rsm_lock and
 * tcp.lock. */
static void tcp_handle_events(const struct epoll_event *events, int count)
{
    pb_evset_dispatch(&tcp.sources, events, count);
    tcp_reap_failed();
}

/* Handle what the sockets have now, without waiting.  Caller holds the
 * progress token and pb_rsm_lock (the service thread's callbacks). */
static void tcp_read_ready_locked(void)
{
    struct epoll_event ready[TCP_MAX_EVENTS];
    int count = epoll_wait(tcp.sources.epoll_fd, ready, TCP_MAX_EVENTS, 0);

    if (count > 0) {
        pthread_mutex_lock(&tcp.lock);
        tcp_handle_events(ready, count);
        pthread_mutex_unlock(&tcp.lock);
    }
}

/* Arm the service thread's watch of the sockets again, unless a thread
 * claimed their progress (tcp_progress_claim): it polls them, and arms the
 * watch when its claim ends.  Caller holds pb_rsm_lock. */
static void tcp_service_arm_locked(void)
{
    if (tcp.claims == 0)
        pb_rsm_service_rearm(tcp.service_id, EPOLLIN | EPOLLONESHOT);
}

/* Arm (1) or disarm (0) the service thread's watch of the sockets.  Caller
 * holds neither pb_rsm_lock nor tcp.lock. */
static void tcp_service_watch(int armed)
{
    pthread_mutex_lock(&pb_rsm_lock);
    if (armed) {
        atomic_store(&tcp.service_parked, 0);
        tcp_service_arm_locked();
    } else {
        pb_rsm_service_rearm(tcp.service_id, EPOLLONESHOT);
    }
    pthread_mutex_unlock(&pb_rsm_lock);
}

/* Start (1) or stop (0) the watchdog of a progress claim.  Caller holds
 * pb_rsm_lock. */
static void tcp_lapse_timer(int on)
{
    struct itimerspec period = {0};

    if (on) {
        period.it_interval.tv_nsec = TCP_CLAIM_LAPSE_MS * 1000000L;
        period.it_value = period.it_interval;
    }
    if (tcp.lapse_fd >= 0)
        timerfd_settime(tcp.lapse_fd, 0, &period, NULL);
}

/* pb_rsm_progress_claim (+1) and its release (-1).  While a claim lasts
 * the claiming thread polls the sockets (rsm_intr_signal_wait with no
 * wait) and the service thread is not woken by what arrives: that wake-up
 * would take a core from the poller, or the poller's own, per message.  A
 * claimant that stops polling (an MPI rank computing) is not trusted for
 * long: a watchdog on the service thread reads the sockets when it saw no
 * poll for TCP_CLAIM_LAPSE_MS, so connections and puts toward this process
 * never wait longer than that.  Caller holds neither pb_rsm_lock nor
 * tcp.lock. */
static void tcp_progress_claim(int delta)
{
    pthread_mutex_lock(&pb_rsm_lock);
    tcp.claims += delta;
    atomic_store(&tcp.claimed, tcp.claims > 0);
    if (tcp.started && tcp.claims == (delta > 0 ? 1 : 0)) {
        if (delta > 0) {
            pb_rsm_service_rearm(tcp.service_id, EPOLLONESHOT);
        } else {
            atomic_store(&tcp.service_parked, 0);
            tcp_service_arm_locked();
        }
        tcp_lapse_timer(delta > 0);
    }
    pthread_mutex_unlock(&pb_rsm_lock);
}

/* The watchdog (service thread, pb_rsm_lock held): every
 * TCP_CLAIM_LAPSE_MS of a claim, one pass over the sockets if the
 * claimant did not poll since the last look. */
static void tcp_lapse_check(void *arg, uint32_t events)
{
    uint64_t expirations, polls = atomic_load(&tcp.polls);

    (void)arg;
    (void)events;
    if (read(tcp.lapse_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
        return;
    if (tcp.claims > 0 && polls == tcp.lapse_polls && pthread_mutex_trylock(&tcp.progress) == 0) {
        tcp_read_ready_locked();
        pthread_mutex_unlock(&tcp.progress);
    }
    tcp.lapse_polls = polls;
}

/* Let the progress token go.  The service thread may have found it taken
 * and left its watch disarmed: arm it again, now that nobody reads the
 * sockets. */
static void tcp_token_release(void)
{
    pthread_mutex_unlock(&tcp.progress);
    if (atomic_exchange(&tcp.service_parked, 0)) {
        pthread_mutex_lock(&pb_rsm_lock);
        tcp_service_arm_locked();
        pthread_mutex_unlock(&pb_rsm_lock);
    }
}

/* One pass: wait up to @timeout_ms (-1: until something happens) for
 * socket events and handle them.  When @word is not NULL the wait is for
 * it to change from @seen, and does not start if it already has.  Caller
 * holds the progress token and nothing else; it takes pb_rsm_lock and
 * tcp.lock to handle what arrived, lets the token go, and re-arms the
 * service thread's watch, which may have fired while the token was taken
 * (unless @watch_held: the caller keeps the watch disarmed and re-arms it
 * when its wait is over, tcp_service_watch).
 * @return 0, or -1 if a signal handler ran during the wait. */
static int tcp_progress_pass(int timeout_ms, int watch_held, _Atomic uint32_t *word, uint32_t seen)
{
    struct epoll_event events[TCP_MAX_EVENTS];
    int count, interrupted;

    if (timeout_ms != 0) {
        /* from here a change of @word by another thread rings wake_fd
         * (tcp_futex_wake), so none is missed between the check and the wait */
        atomic_fetch_add(&tcp_epoll_sleepers, 1);
        if (word != NULL && atomic_load(word) != seen)
            timeout_ms = 0;
        count = epoll_wait(tcp.sources.epoll_fd, events, TCP_MAX_EVENTS, timeout_ms);
        atomic_fetch_sub(&tcp_epoll_sleepers, 1);
    } else {
        count = epoll_wait(tcp.sources.epoll_fd, events, TCP_MAX_EVENTS, 0);
    }
    interrupted = count < 0 && errno == EINTR;

    if (count > 0) {
        pthread_mutex_lock(&pb_rsm_lock);
        pthread_mutex_lock(&tcp.lock);
        tcp_handle_events(events, count);
        pthread_mutex_unlock(&tcp.lock);
        pthread_mutex_unlock(&pb_rsm_lock);
    }
    if (watch_held)
        pthread_mutex_unlock(&tcp.progress);
    else
        tcp_token_release();
    return interrupted ? -1 : 0;
}

/* The service thread's callback (pb_rsm_lock held): the epoll set has
 * something and maybe no application thread is reading it. */
static void tcp_service_ready(void *arg, uint32_t events)
{
    (void)arg;
    (void)events;
    if (pthread_mutex_trylock(&tcp.progress) != 0) {
        /* leave the watch disarmed for the holder to re-arm on release;
         * try again in case it let go before seeing the flag */
        atomic_store(&tcp.service_parked, 1);
        if (pthread_mutex_trylock(&tcp.progress) != 0)
            return;
        atomic_store(&tcp.service_parked, 0);
    }
    tcp_read_ready_locked();
    pthread_mutex_unlock(&tcp.progress);
    tcp_service_arm_locked();
}

/* A condition a waiter waits for: PB_OK or an error when it is over,
 * TCP_NOT_YET while it is not. */
#define TCP_NOT_YET ((pb_status_t)1)
typedef pb_status_t (*tcp_ready_func_t)(void *arg);

/* Poll the sockets without sleeping until @ready says the wait is over or
 * POSTBOX_TCP_SPIN_US pass (or @deadline, in ms, if sooner).  Caller holds
 * the progress token and keeps it.  @return what @ready said last (it may
 * consume what it waited for: the caller must not ask again), TCP_NOT_YET
 * when the time is up. */
static pb_status_t tcp_spin(tcp_ready_func_t ready, void *arg, int64_t deadline)
{
    int64_t until = pb_time_now_ns() + tcp.spin_ns;
    pb_status_t status;

    if (deadline >= 0 && deadline * 1000000 < until)
        until = deadline * 1000000;
    while (pb_time_now_ns() < until) {
        struct epoll_event events[TCP_MAX_EVENTS];
        int count = epoll_wait(tcp.sources.epoll_fd, events, TCP_MAX_EVENTS, 0);

        if (count > 0) {
            pthread_mutex_lock(&pb_rsm_lock);
            pthread_mutex_lock(&tcp.lock);
            tcp_handle_events(events, count);
            pthread_mutex_unlock(&tcp.lock);
            pthread_mutex_unlock(&pb_rsm_lock);
        }
        status = ready(arg);
        if (status != TCP_NOT_YET)
            return status;
        pb_cpu_relax();
    }
    return TCP_NOT_YET;
}

/* Wait until @ready says it is over or @timeout_ms (-1: forever) pass,
 * reading the sockets meanwhile.  @word changes (and is woken) whenever
 * the condition may have.  @return what @ready said, PB_ERR_TIMEOUT, or
 * PB_ERR_INTERRUPTED when @interruptible and a signal handler ran (waits
 * for a reply are not interruptible: the reply would have nowhere to go). */
static pb_status_t tcp_wait(tcp_ready_func_t ready, void *arg, _Atomic uint32_t *word,
                            int timeout_ms, int interruptible)
{
    int64_t deadline = timeout_ms < 0 ? -1 : pb_time_now_ms() + timeout_ms;
    int watch_held = 0, spun = 0;
    pb_status_t status;

    for (;;) {
        uint32_t seen = atomic_load(word);
        int slice;

        status = ready(arg);
        if (status != TCP_NOT_YET)
            break;
        /* no deadline: sleep until an event or a wake_fd ring, with no
         * timer (arming one costs a microsecond or two in a VM) */
        slice = deadline < 0 ? -1 : pb_time_remaining_ms(deadline, TCP_WAIT_SLICE_MS);
        if (slice == 0) {
            /* what has reached this host counts: read it before giving up */
            pthread_mutex_lock(&tcp.progress);
            tcp_progress_pass(0, watch_held, NULL, 0);
            status = ready(arg);
            if (status == TCP_NOT_YET)
                status = PB_ERR_TIMEOUT;
            break;
        }
        /* (no epoll set: a forked child's inherited segment, which nothing
         * can reach any more; only the timeout ends its wait) */
        if (tcp.sources.epoll_fd >= 0 && pthread_mutex_trylock(&tcp.progress) == 0) {
            /* this thread reads the sockets until it returns: the service
             * thread need not wake for them meanwhile */
            if (!watch_held) {
                tcp_service_watch(0);
                watch_held = 1;
            }
            /* poll the sockets for a while before sleeping: an answer that
             * comes within POSTBOX_TCP_SPIN_US costs no wake-up */
            if (!spun) {
                spun = 1;
                status = tcp_spin(ready, arg, deadline);
                if (status != TCP_NOT_YET) {
                    pthread_mutex_unlock(&tcp.progress);
                    break;
                }
            }
            /* (the service thread may have finished it before we took the
             * token: then the pass does not sleep) */
            if (tcp_progress_pass(slice, 1, word, seen) != 0 && interruptible) {
                status = PB_ERR_INTERRUPTED;
                break;
            }
        } else if (tcp_futex_wait(word, seen,
                                  slice >= 0 && slice < TCP_FUTEX_SLICE_MS
                                      ? slice
                                      : TCP_FUTEX_SLICE_MS) != 0 &&
                   interruptible) {
            status = PB_ERR_INTERRUPTED;
            break;
        }
    }
    if (watch_held)
        tcp_service_watch(1);
    return status;
}

/* ---- start ----------------------------------------------------------------- */

static void tcp_atfork_child(void)
{
    /* the service's child handler closed the epoll set; the parent's
     * connections and listeners are the parent's: drop them all */
    pthread_mutex_init(&tcp.lock, NULL);
    pthread_mutex_init(&tcp.progress, NULL);
    pthread_mutex_init(&tcp.connect_lock, NULL);
    atomic_store(&tcp.service_parked, 0);
    if (!tcp.started)
        return;
    for (tcp_conn_t *c = tcp.conns, *next; c != NULL; c = next) {
        next = c->next;
        close(c->fd);
        c->fd = -1;
        atomic_store(&c->failure, PB_ERR_CONN_ABORTED);
        c->next = NULL;
    }
    tcp.conns = NULL;
    tcp.hot = NULL;
    /* a claim is a thread's promise to poll: the child has no such thread */
    tcp.claims = 0;
    atomic_store(&tcp.claimed, 0);
    /* the child's own sources will reuse ids: forget the parent's */
    for (tcp_export_t *te = tcp.published; te != NULL; te = te->next)
        te->rendezvous_id = 0;
    /* (the connections' and the listener's descriptors are closed here
     * apart; the epoll set by the service's child handler) */
    for (uint32_t i = 0; i < tcp.sources.count; i++) {
        pb_evset_entry_t *src = &tcp.sources.entries[i];

        if (src->in_use && src->cb != tcp_conn_ready && src->cb != tcp_accept_ready)
            close(src->fd);
    }
    pb_evset_forget(&tcp.sources);
    if (tcp.listen_fd >= 0)
        close(tcp.listen_fd);
    tcp.listen_fd = -1;
    tcp.published = NULL;
    tcp.relays = NULL;
    tcp.wake_fd = -1;
    tcp.lapse_fd = -1;                    /* (the service's child handler closed it) */
    atomic_store(&tcp_epoll_sleepers, 0); /* (threads the parent had) */
    atomic_store(&tcp_sleepers, 0);
    tcp.started = 0;
}

/* Create the epoll set and hand it to the service thread.  Caller holds
 * pb_rsm_lock and tcp.lock. */
static pb_status_t tcp_start(void)
{
    uint64_t wake_id, lapse_id;
    pb_status_t status;
    int ep;

    if (tcp.started)
        return PB_OK;
    if (!tcp.atfork_registered) {
        pthread_atfork(NULL, NULL, tcp_atfork_child);
        tcp.atfork_registered = 1;
    }
    tcp.addr_count = tcp_local_addrs(tcp.addrs);
    if (tcp.addr_count == 0)
        return PB_ERR_INVALID_PARAM;
    tcp.addr = tcp.addrs[0];
    tcp.spin_ns = pb_config_get_long("POSTBOX_TCP_SPIN_US") > 0
                      ? (int64_t)pb_config_get_long("POSTBOX_TCP_SPIN_US") * 1000
                      : 0;
    tcp.stripe_min = pb_config_get_long("POSTBOX_TCP_STRIPE_MIN") > 0
                         ? (size_t)pb_config_get_long("POSTBOX_TCP_STRIPE_MIN")
                         : SIZE_MAX;
    if (pb_job_random_bytes(tcp.local_key, sizeof(tcp.local_key)) != 0)
        return PB_ERR_NO_RESOURCE;
    if (pb_evset_open(&tcp.sources) != PB_OK)
        return PB_ERR_NO_RESOURCE;
    ep = tcp.sources.epoll_fd;
    tcp.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (tcp.wake_fd < 0) {
        pb_error("tcp: eventfd failed: %m");
        status = PB_ERR_NO_RESOURCE;
        goto err;
    }
    status = pb_evset_add(&tcp.sources, tcp.wake_fd, EPOLLIN, tcp_wake_ready, NULL, &wake_id);
    if (status != PB_OK)
        goto err;
    /* the service owns (and closes) the epoll set from here */
    status =
        pb_rsm_service_add(ep, EPOLLIN | EPOLLONESHOT, tcp_service_ready, NULL, &tcp.service_id);
    if (status != PB_OK) {
        pb_evset_remove(&tcp.sources, wake_id);
        goto err;
    }
    tcp.started = 1;
    /* the watchdog of progress claims (none: claims are not watched, and a
     * claimant that stops polling leaves traffic waiting until it polls) */
    tcp.lapse_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (tcp.lapse_fd >= 0 &&
        pb_rsm_service_add(tcp.lapse_fd, EPOLLIN, tcp_lapse_check, NULL, &lapse_id) != PB_OK) {
        close(tcp.lapse_fd);
        tcp.lapse_fd = -1;
    }
    if (tcp.lapse_fd < 0)
        pb_warn("tcp: no timer for the watchdog of progress claims: %m");
    if (tcp.claims > 0) {
        pb_rsm_service_rearm(tcp.service_id, EPOLLONESHOT);
        tcp_lapse_timer(1);
    }
    return PB_OK;

err:
    if (tcp.wake_fd >= 0)
        close(tcp.wake_fd);
    tcp.wake_fd = -1;
    close(ep);
    tcp.sources.epoll_fd = -1;
    return status;
}

/* Listen for importers.  Caller holds pb_rsm_lock and tcp.lock. */
static pb_status_t tcp_listen(void)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof(addr);
    int fd;
    pb_status_t status;

    if (tcp.listen_fd >= 0)
        return PB_OK;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        pb_error("tcp: socket failed: %m");
        return PB_ERR_NO_RESOURCE;
    }
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(fd, TCP_LISTEN_BACKLOG) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
        pb_error("tcp: cannot listen: %m");
        close(fd);
        return PB_ERR_NO_RESOURCE;
    }
    status = pb_evset_add(&tcp.sources, fd, EPOLLIN, tcp_accept_ready, NULL, &tcp.listen_id);
    if (status != PB_OK) {
        close(fd);
        return status;
    }
    tcp.listen_fd = fd;
    tcp.port = ntohs(addr.sin_port);
    return PB_OK;
}

pb_status_t pb_rsm_tcp_endpoint(char *buf, size_t len)
{
    pb_status_t status;

    pthread_mutex_lock(&pb_rsm_lock);
    pthread_mutex_lock(&tcp.lock);
    status = tcp_start();
    if (status == PB_OK)
        status = tcp_listen();
    if (status == PB_OK) {
        size_t used = 0;

        for (int i = 0; i < tcp.addr_count; i++) {
            char addr[INET_ADDRSTRLEN];

            inet_ntop(AF_INET, &tcp.addrs[i], addr, sizeof(addr));
            used += (size_t)snprintf(buf + used, len - used, "%s%s", i > 0 ? "," : "", addr);
            if (used >= len)
                break;
        }
        if (used + 7 > len)
            status = PB_ERR_INVALID_PARAM;
        else
            snprintf(buf + used, len - used, ":%u", (unsigned)tcp.port);
    }
    pthread_mutex_unlock(&tcp.lock);
    pthread_mutex_unlock(&pb_rsm_lock);
    return status;
}

/* ---- capabilities ---------------------------------------------------------- */

static void tcp_query(pb_rsm_caps_t *caps_p)
{
    caps_p->can_map = 0;
    caps_p->reaches_job_nodes = 1;
    caps_p->page_size = (size_t)sysconf(_SC_PAGESIZE);
    caps_p->max_segment_size = (size_t)1 << 40;
}

static int tcp_reaches(rsm_node_id_t node)
{
    /* any node: whether a segment is there is the import's question */
    (void)node;
    return 1;
}

/* ---- topology ---------------------------------------------------------------- */

static int tcp_node_addrs(rsm_node_id_t node, uint32_t addrs[TCP_MAX_RAILS]);

static int tcp_rail_count(void)
{
    uint32_t addrs[TCP_MAX_RAILS];
    int count = tcp_local_addrs(addrs);

    return count > 0 ? count : 1;
}

static void tcp_rail_link(int rail, rsm_node_id_t node, rsm_addr_t *hwaddr_p, uint_t *state_p)
{
    uint32_t addrs[TCP_MAX_RAILS];
    int count = tcp_node_addrs(node, addrs), down;

    if (count == 0 && node == pb_job_get()->node_id)
        count = tcp_local_addrs(addrs);
    /* a rail the node does not have, or one whose connection broke last */
    pthread_mutex_lock(&tcp.lock);
    down = rail >= count || (tcp.link_down != NULL && node < tcp.link_nodes &&
                             tcp.link_down[node * TCP_MAX_RAILS + (size_t)rail]);
    pthread_mutex_unlock(&tcp.lock);
    *hwaddr_p = rail < count ? ntohl(addrs[rail]) : node;
    *state_p = down ? RSM_CONNECTION_INACTIVE : RSM_CONNECTION_ACTIVE;
}

/* ---- export side -------------------------------------------------------------- */

/* Whether [vaddr, vaddr + size) is mapped readable and writable, from
 * /proc/self/maps: remote puts and gets copy into and out of it from the
 * progress engine, where a fault would kill the exporter.
 * @return PB_OK, PB_ERR_BAD_ADDRESS, or PB_ERR_IO (maps unreadable). */
static pb_status_t tcp_check_mapped(void *vaddr, size_t size)
{
    uintptr_t want = (uintptr_t)vaddr, end = want + size;
    FILE *maps = fopen("/proc/self/maps", "re");
    char line[512];

    if (maps == NULL) {
        pb_error("tcp: cannot read /proc/self/maps: %m");
        return PB_ERR_IO;
    }
    /* the lines are sorted by address: walk them while they cover @want */
    while (want < end && fgets(line, sizeof(line), maps) != NULL) {
        unsigned long start, stop;
        char perms[5];

        if (sscanf(line, "%lx-%lx %4s", &start, &stop, perms) != 3)
            continue;
        if (stop <= want)
            continue;
        if (start > want || perms[0] != 'r' || perms[1] != 'w')
            break;
        want = stop;
    }
    fclose(maps);
    return want >= end ? PB_OK : PB_ERR_BAD_ADDRESS;
}

static pb_status_t tcp_export_create(pb_rsm_export_t *seg)
{
    pb_status_t status = tcp_check_mapped(seg->vaddr, seg->size);
    tcp_export_t *te;

    if (status != PB_OK)
        return status;
    te = calloc(1, sizeof(*te));
    if (te == NULL)
        return PB_ERR_NO_MEMORY;
    te->seg = seg;
    seg->tl = te;
    return PB_OK;
}

static void tcp_export_destroy(pb_rsm_export_t *seg)
{
    /* unpublished (the dispatcher checked), so no frame names it */
    free(seg->tl);
    seg->tl = NULL;
}

/* Point payloads being received into @te's memory at @base (NULL: drop
 * them).  Caller holds tcp.lock. */
static void tcp_export_redirect(tcp_export_t *te, char *base)
{
    for (tcp_conn_t *c = tcp.conns; c != NULL; c = c->next) {
        tcp_slot_t *slot;

        if (!c->at_exporter || !c->rx.in_payload || c->rx.frame.type != PB_TCP_PUT)
            continue;
        slot = tcp_slot_of(c, c->rx.frame.slot);
        if (slot != NULL && slot->exp == te && c->rx.dest != NULL)
            c->rx.dest = base == NULL ? NULL : base + c->rx.frame.offset;
    }
}

static pb_status_t tcp_export_rebind(pb_rsm_export_t *seg, void *vaddr)
{
    pb_status_t status = tcp_check_mapped(vaddr, seg->size);

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&tcp.lock);
    tcp_export_redirect(seg->tl, vaddr);
    seg->vaddr = vaddr;
    pthread_mutex_unlock(&tcp.lock);
    return PB_OK;
}

static pb_status_t tcp_export_publish(pb_rsm_export_t *seg, rsm_memseg_id_t *segid_p)
{
    tcp_export_t *te = seg->tl;
    rsm_node_id_t node = pb_job_get()->node_id;
    rsm_memseg_id_t segid = *segid_p;
    pb_status_t status;
    int fd;

    pthread_mutex_lock(&tcp.lock);
    status = tcp_start();
    if (status == PB_OK)
        status = tcp_listen();
    if (status != PB_OK)
        goto out;
    status = pb_rsm_rendezvous_listen(TCP_RENDEZVOUS_PREFIX, node, &segid, &fd);
    if (status != PB_OK)
        goto out;
    status = pb_evset_add(&tcp.sources, fd, EPOLLIN, tcp_rendezvous_ready, te, &te->rendezvous_id);
    if (status != PB_OK) {
        close(fd);
        goto out;
    }
    te->segid = segid;
    te->next = tcp.published;
    tcp.published = te;
    *segid_p = segid;
out:
    pthread_mutex_unlock(&tcp.lock);
    return status;
}

static pb_status_t tcp_export_unpublish(pb_rsm_export_t *seg)
{
    tcp_export_t *te = seg->tl;
    pb_evset_entry_t *src;

    pthread_mutex_lock(&tcp.lock);
    src = pb_evset_get(&tcp.sources, te->rendezvous_id);
    if (src != NULL) {
        int fd = src->fd;

        pb_evset_remove(&tcp.sources, te->rendezvous_id); /* the name disappears */
        close(fd);
    }
    for (tcp_export_t **p = &tcp.published; *p != NULL; p = &(*p)->next) {
        if (*p == te) {
            *p = te->next;
            break;
        }
    }
    /* importers are cut off: their slots stay until they detach */
    tcp_export_redirect(te, NULL);
    for (tcp_conn_t *c = tcp.conns; c != NULL; c = c->next) {
        if (!c->at_exporter)
            continue;
        for (uint32_t i = 0; i < c->slot_count; i++) {
            if (c->slots[i].in_use && c->slots[i].exp == te) {
                pb_tcp_frame_t withdrawn = {.type = PB_TCP_WITHDRAWN, .slot = i + 1};

                c->slots[i].exp = NULL;
                tcp_conn_queue(c, &withdrawn, NULL);
            }
        }
    }
    tcp_reap_failed();
    pthread_mutex_unlock(&tcp.lock);
    return PB_OK;
}

/* ---- import side -------------------------------------------------------------- */

/* Move @len bytes over the blocking handshake, giving up at @deadline. */
static pb_status_t tcp_handshake_io(int fd, void *buf, size_t len, int sending, int64_t deadline)
{
    size_t done = 0;

    while (done < len) {
        struct pollfd pfd = {.fd = fd, .events = sending ? POLLOUT : POLLIN};
        int wait = pb_time_remaining_ms(deadline, TCP_CONNECT_TIMEOUT_MS);
        ssize_t n;

        if (wait == 0)
            return PB_ERR_TIMEOUT;
        if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
            return PB_ERR_IO;
        n = sending ? send(fd, (char *)buf + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL)
                    : recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);
        if (n == 0)
            return PB_ERR_CONN_ABORTED;
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            return PB_ERR_CONN_ABORTED;
        }
        done += (size_t)n;
    }
    return PB_OK;
}

/* Connect to the rendezvous socket of (@node, @segid), if it is on a node
 * whose abstract sockets this process sees: *fd_p then waits for the
 * directory message (non-blocking).  @return PB_OK, PB_ERR_NOT_PUBLISHED
 * (no such name), PB_ERR_UNREACHABLE (not a node of the job),
 * PB_ERR_TIMEOUT (its backlog is full), PB_ERR_NO_RESOURCE. */
static pb_status_t tcp_rendezvous_connect(rsm_node_id_t node, rsm_memseg_id_t segid, int *fd_p)
{
    struct sockaddr_un addr;
    socklen_t len;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int ret;

    if (fd < 0)
        return PB_ERR_NO_RESOURCE;
    pb_rsm_rendezvous_name(&addr, &len, TCP_RENDEZVOUS_PREFIX, node, segid);
    do {
        ret = connect(fd, (struct sockaddr *)&addr, len);
    } while (ret != 0 && errno == EINTR);
    if (ret != 0) {
        int job_nodes = postbox_job_node_count();
        int err = errno;

        close(fd);
        if (err == EAGAIN)
            return PB_ERR_TIMEOUT;
        if (err != ECONNREFUSED && err != ENOENT) {
            pb_error("tcp: rendezvous with segment %#x failed: %s", segid, strerror(err));
            return PB_ERR_NO_RESOURCE;
        }
        /* outside a launched job any node may exist; inside, only its own */
        return job_nodes > 0 && (int64_t)node >= job_nodes ? PB_ERR_UNREACHABLE
                                                           : PB_ERR_NOT_PUBLISHED;
    }
    *fd_p = fd;
    return PB_OK;
}

/* Whether @got bytes read from a rendezvous socket into @dir are a
 * directory message.  @return PB_OK, PB_ERR_NOT_PUBLISHED (closed without
 * one: the exporter went away), PB_ERR_PROTOCOL (something else). */
static pb_status_t tcp_directory_check(rsm_memseg_id_t segid, ssize_t got,
                                       const pb_tcp_directory_t *dir)
{
    if (got != (ssize_t)sizeof(*dir))
        return PB_ERR_NOT_PUBLISHED;
    if (!pb_tcp_msg_hdr_ok(&dir->hdr, PB_TCP_MSG_DIRECTORY)) {
        pb_warn("tcp: the rendezvous of segment %#x answered in a foreign format", segid);
        return PB_ERR_PROTOCOL;
    }
    return PB_OK;
}

/* Ask the rendezvous socket of (@node, @segid) where its exporter listens,
 * waiting at most @timeout_ms for the answer (an importer's own lookup:
 * it holds no lock). */
static pb_status_t tcp_lookup(rsm_node_id_t node, rsm_memseg_id_t segid, pb_tcp_directory_t *dir,
                              int timeout_ms)
{
    struct pollfd pfd = {.events = POLLIN};
    pb_status_t status = tcp_rendezvous_connect(node, segid, &pfd.fd);
    ssize_t got;

    if (status != PB_OK)
        return status;
    if (poll(&pfd, 1, timeout_ms) != 1) {
        close(pfd.fd);
        return PB_ERR_TIMEOUT;
    }
    got = recv(pfd.fd, dir, sizeof(*dir), MSG_DONTWAIT);
    close(pfd.fd);
    return tcp_directory_check(segid, got, dir);
}

/* Connect to the exporter at @peer and authenticate with @key: the
 * handshake of docs/tcp.md.  On success *fd_p is connected (a blocking socket). */
static pb_status_t tcp_dial(const struct sockaddr_in *peer, const uint8_t key[PB_TCP_KEY_LEN],
                            int timeout_ms, int *fd_p)
{
    int64_t deadline = pb_time_now_ms() + timeout_ms;
    const pb_job_t *job = pb_job_get();
    pb_tcp_hello_t hello;
    pb_tcp_auth_t auth = {0};
    pb_tcp_welcome_t welcome;
    struct pollfd pfd;
    pb_status_t status;
    int fd, err = 0;
    socklen_t err_len = sizeof(err);

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return PB_ERR_NO_RESOURCE;
    tcp_socket_tune(fd);
    if (connect(fd, (const struct sockaddr *)peer, sizeof(*peer)) != 0 && errno != EINPROGRESS) {
        err = errno;
    } else {
        pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
        if (poll(&pfd, 1, timeout_ms) != 1)
            err = ETIMEDOUT;
        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0)
            err = errno;
    }
    if (err != 0) {
        /* no route or no answer: the node is out of reach; otherwise the
         * process is gone (refused, reset), and its segment with it */
        pb_debug("tcp: connect to port %u: %s", ntohs(peer->sin_port), strerror(err));
        status = err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == ENETDOWN ||
                         err == EHOSTDOWN
                     ? PB_ERR_UNREACHABLE
                     : PB_ERR_NOT_PUBLISHED;
        goto err;
    }
    status = tcp_handshake_io(fd, &hello, sizeof(hello), 0, deadline);
    if (status == PB_ERR_CONN_ABORTED)
        status = PB_ERR_NOT_PUBLISHED;
    if (status != PB_OK)
        goto err;
    if (!pb_tcp_msg_hdr_ok(&hello.hdr, PB_TCP_MSG_HELLO)) {
        status = PB_ERR_PROTOCOL;
        goto err;
    }
    pb_tcp_msg_hdr_set(&auth.hdr, PB_TCP_MSG_AUTH);
    auth.node = job->node_id;
    auth.pid = (uint32_t)getpid();
    snprintf(auth.job_id, sizeof(auth.job_id), "%s", job->id);
    if (pb_job_random_bytes(auth.nonce, sizeof(auth.nonce)) != 0) {
        status = PB_ERR_NO_RESOURCE;
        goto err;
    }
    auth.mac = pb_tcp_auth_mac(key, hello.nonce, &auth);
    status = tcp_handshake_io(fd, &auth, sizeof(auth), 1, deadline);
    if (status == PB_OK)
        status = tcp_handshake_io(fd, &welcome, sizeof(welcome), 0, deadline);
    if (status == PB_ERR_CONN_ABORTED)
        status = PB_ERR_NOT_PUBLISHED; /* the exporter died meanwhile */
    if (status != PB_OK)
        goto err;
    if (!pb_tcp_msg_hdr_ok(&welcome.hdr, PB_TCP_MSG_WELCOME) ||
        welcome.mac != pb_tcp_welcome_mac(key, auth.nonce, welcome.status)) {
        /* not a process of this job: tell nothing, trust nothing */
        status = PB_ERR_PERMISSION;
        goto err;
    }
    if (welcome.status != PB_OK) {
        status = welcome.status;
        goto err;
    }
    /* blocking from now on: see tcp_conn_write */
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        status = PB_ERR_IO;
        goto err;
    }
    *fd_p = fd;
    return PB_OK;

err:
    close(fd);
    return status;
}

/* A connection to the exporter at @peer: the one this process has, or a
 * new one (dialled for at most @timeout_ms).  Caller holds
 * tcp.connect_lock (not tcp.lock). */
static pb_status_t tcp_conn_get(const struct sockaddr_in *peer, const uint8_t key[PB_TCP_KEY_LEN],
                                int timeout_ms, tcp_conn_t **conn_p)
{
    tcp_conn_t *c;
    pb_status_t status;
    int fd;

    pthread_mutex_lock(&tcp.lock);
    for (c = tcp.conns; c != NULL; c = c->next) {
        if (!c->at_exporter && c->peer.sin_addr.s_addr == peer->sin_addr.s_addr &&
            c->peer.sin_port == peer->sin_port && memcmp(c->key, key, PB_TCP_KEY_LEN) == 0 &&
            atomic_load(&c->failure) == PB_OK) {
            c->refs++;
            *conn_p = c;
            pthread_mutex_unlock(&tcp.lock);
            return PB_OK;
        }
    }
    pthread_mutex_unlock(&tcp.lock);

    /* no lock while dialling: the exporter may be this very process */
    status = tcp_dial(peer, key, timeout_ms, &fd);
    if (status != PB_OK)
        return status;
    c = tcp_conn_new(fd, 0);
    if (c == NULL) {
        close(fd);
        return PB_ERR_NO_MEMORY;
    }
    c->peer = *peer;
    memcpy(c->key, key, PB_TCP_KEY_LEN);
    c->refs = 1;
    pb_tcp_rx_init(&c->rx, 0, tcp_importer_on_header, tcp_importer_on_frame, c);
    pthread_mutex_lock(&pb_rsm_lock);
    pthread_mutex_lock(&tcp.lock);
    status = tcp_start();
    if (status == PB_OK)
        status =
            pb_evset_add(&tcp.sources, fd, EPOLLIN | EPOLLRDHUP, tcp_conn_ready, c, &c->source_id);
    if (status == PB_OK) {
        c->events = EPOLLIN | EPOLLRDHUP;
        c->next = tcp.conns;
        tcp.conns = c;
    }
    pthread_mutex_unlock(&tcp.lock);
    pthread_mutex_unlock(&pb_rsm_lock);
    if (status != PB_OK) {
        close(fd);
        tcp_conn_free(c);
        return status;
    }
    *conn_p = c;
    return PB_OK;
}

/* Drop one import's use of @c; the last one closes it.  Caller holds
 * tcp.lock. */
static void tcp_conn_put(tcp_conn_t *c)
{
    if (--c->refs > 0)
        return;
    if (atomic_load(&c->failure) == PB_OK) {
        pb_evset_remove(&tcp.sources, c->source_id);
        tcp_conn_unlink(c);
    }
    close(c->fd);
    tcp_conn_free(c);
    tcp_listen_resume();
}

static pb_status_t tcp_request_ready(void *arg)
{
    tcp_request_t *req = arg;

    return atomic_load(&req->done) ? (pb_status_t)req->status : TCP_NOT_YET;
}

/* Send @frame (its tag set here) as a request awaiting a REPLY; finish it
 * with tcp_request_end whatever this returns. */
static void tcp_request_begin(tcp_conn_t *c, pb_tcp_frame_t *frame, const void *payload,
                              tcp_request_t *req)
{
    pb_status_t status;

    pthread_mutex_lock(&tcp.lock);
    status = atomic_load(&c->failure);
    if (status == PB_OK) {
        if (c->next_tag == 0) /* tags are never 0: see pb_tcp_frame_check */
            c->next_tag = 1;
        req->tag = frame->tag = c->next_tag++;
        req->next = c->requests;
        c->requests = req;
    } else {
        req->status = PB_ERR_CONN_ABORTED;
        atomic_store(&req->done, 1);
    }
    pthread_mutex_unlock(&tcp.lock);
    if (status != PB_OK)
        return;
    if (tcp_conn_send(c, frame, payload) != PB_OK) {
        /* the reader fails the request when it sees the connection break;
         * make sure it does */
        pthread_mutex_lock(&tcp.lock);
        tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL);
        pthread_mutex_unlock(&tcp.lock);
    }
}

/* Wait for the REPLY to a request begun with tcp_request_begin. */
static pb_status_t tcp_request_end(tcp_request_t *req)
{
    pb_status_t status = tcp_wait(tcp_request_ready, req, &req->done, -1, 0);

    return status == PB_ERR_CONN_ABORTED || status == PB_ERR_PROTOCOL ? PB_ERR_CONN_ABORTED
                                                                      : status;
}

/* Send @frame and wait for the REPLY. */
static pb_status_t tcp_request(tcp_conn_t *c, pb_tcp_frame_t *frame, const void *payload,
                               tcp_request_t *req)
{
    tcp_request_begin(c, frame, payload, req);
    return tcp_request_end(req);
}

/* "a.b.c.d[,a.b.c.d...]:port" (a KVS entry) into @addrs and *@port_p.
 * @return the number of addresses, 0 when @text is malformed. */
static int tcp_parse_endpoint(const char *text, uint32_t addrs[TCP_MAX_RAILS], uint16_t *port_p)
{
    char list[TCP_MAX_RAILS * (INET_ADDRSTRLEN + 1)];
    const char *colon = strrchr(text, ':');
    char *end;
    unsigned long port;

    if (colon == NULL || (size_t)(colon - text) >= sizeof(list))
        return 0;
    memcpy(list, text, (size_t)(colon - text));
    list[colon - text] = '\0';
    port = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || port == 0 || port > 65535)
        return 0;
    *port_p = (uint16_t)port;
    return tcp_parse_addrs(list, addrs);
}

/* The addresses (one per rail) and port rank @rank put in the job KVS, if
 * it runs on @node.  @return how many addresses; 0 when it runs elsewhere
 * or put none. */
static int tcp_rank_endpoint(int rank, rsm_node_id_t node, uint32_t addrs[TCP_MAX_RAILS],
                             uint16_t *port_p)
{
    char kvs_key[32], value[128];

    if (postbox_job_node(rank) != node)
        return 0;
    snprintf(kvs_key, sizeof(kvs_key), TCP_KVS_KEY_FMT, rank);
    if (postbox_job_kvs_get(kvs_key, value, sizeof(value)) != 0)
        return 0;
    return tcp_parse_endpoint(value, addrs, port_p);
}

/* The addresses of @node, one per rail, from the KVS entry of its first
 * rank that has one.  @return how many (0: none known; outside a launched
 * job, or a node without ranks). */
static int tcp_node_addrs(rsm_node_id_t node, uint32_t addrs[TCP_MAX_RAILS])
{
    int size = postbox_job_size();

    for (int rank = 0; rank < size; rank++) {
        uint16_t port;
        int count = tcp_rank_endpoint(rank, node, addrs, &port);

        if (count > 0)
            return count;
    }
    return 0;
}

/* Where the exporter of (@node, @segid) listens, asked over TCP of the
 * job's processes on @node in rank order (their addresses are in the job
 * KVS; each is tried at each of its addresses until one answers): for
 * nodes whose rendezvous sockets this process cannot see. */
static pb_status_t tcp_relay_lookup(rsm_node_id_t node, rsm_memseg_id_t segid,
                                    const uint8_t key[PB_TCP_KEY_LEN], struct sockaddr_in *peer_p)
{
    pb_status_t status = PB_ERR_UNREACHABLE;
    int size = postbox_job_size();

    for (int rank = 0; rank < size; rank++) {
        pb_tcp_lookup_t question = {.node = node, .segid = segid};
        pb_tcp_frame_t frame = {.type = PB_TCP_LOOKUP, .length = sizeof(question)};
        pb_tcp_location_t where;
        tcp_request_t req = {.dst = (char *)&where, .dst_len = sizeof(where)};
        struct sockaddr_in relay = {.sin_family = AF_INET};
        uint32_t addrs[TCP_MAX_RAILS];
        tcp_conn_t *c = NULL;
        uint16_t port;
        int count = tcp_rank_endpoint(rank, node, addrs, &port);

        if (count == 0)
            continue;
        relay.sin_port = htons(port);
        pthread_mutex_lock(&tcp.connect_lock);
        for (int i = 0; i < count && c == NULL; i++) {
            relay.sin_addr.s_addr = addrs[i];
            status = tcp_conn_get(&relay, key, TCP_CONNECT_TIMEOUT_MS, &c);
            if (status != PB_OK)
                c = NULL;
        }
        pthread_mutex_unlock(&tcp.connect_lock);
        if (c == NULL)
            continue; /* try the node's next process */
        status = tcp_request(c, &frame, &question, &req);
        pthread_mutex_lock(&tcp.lock);
        tcp_conn_put(c);
        pthread_mutex_unlock(&tcp.lock);
        if (status == PB_OK) {
            *peer_p = (struct sockaddr_in){.sin_family = AF_INET,
                                           .sin_addr.s_addr = where.addr,
                                           .sin_port = htons(where.port)};
            return PB_OK;
        }
        /* a definite answer ends the search; a rank that could not answer
         * (gone, or its node's rendezvous too slow) passes it on */
        if (status != PB_ERR_CONN_ABORTED && status != PB_ERR_TIMEOUT)
            return status;
    }
    return status == PB_ERR_TIMEOUT ? PB_ERR_UNREACHABLE : status;
}

/* ---- the importer side: rails ------------------------------------------------ */

/* Remember that rail @rail toward @node is usable (@up) or broke, for
 * rsm_get_interconnect_topology. */
static void tcp_link_state_set(rsm_node_id_t node, int rail, int up)
{
    int count = postbox_job_node_count(); /* < 1 outside a launched job */
    size_t nodes = count > 0 ? (size_t)count : 1;

    pthread_mutex_lock(&tcp.lock);
    if (tcp.link_down == NULL)
        tcp.link_down = calloc(nodes * TCP_MAX_RAILS, 1);
    if (tcp.link_down != NULL) {
        tcp.link_nodes = nodes;
        if (node < nodes)
            tcp.link_down[node * TCP_MAX_RAILS + (size_t)rail] = (uint8_t)!up;
    }
    pthread_mutex_unlock(&tcp.lock);
}

static int tcp_rail_broken(const tcp_rail_t *rail)
{
    return atomic_load_explicit(&rail->conn->failure, memory_order_acquire) != PB_OK;
}

static int tcp_live_rails(const tcp_import_t *ti)
{
    int live = 0;

    for (int r = 0; r < ti->rail_count; r++)
        live += !ti->rails[r].dead;
    return live;
}

/* The rail that carries what is not striped: the first one in use. */
static tcp_rail_t *tcp_primary_rail(tcp_import_t *ti)
{
    for (int r = 0; r < ti->rail_count; r++) {
        if (!ti->rails[r].dead)
            return &ti->rails[r];
    }
    return NULL;
}

/* Keep @frame and its payload for replay.  @return 0 when out of memory. */
static int tcp_replay_append(tcp_replay_t *log, const pb_tcp_frame_t *frame, const void *payload)
{
    size_t need = sizeof(tcp_replay_rec_t) + ((frame->length + 7u) & ~(size_t)7);
    tcp_replay_rec_t rec = {.offset = frame->offset,
                            .length = frame->length,
                            .type = frame->type,
                            .flags = frame->flags};

    if (log->len + need > log->cap) {
        size_t cap = log->cap ? log->cap : 4096;
        char *grown;

        while (cap < log->len + need)
            cap *= 2;
        grown = realloc(log->buf, cap);
        if (grown == NULL)
            return 0;
        log->buf = grown;
        log->cap = cap;
    }
    memcpy(log->buf + log->len, &rec, sizeof(rec));
    if (frame->length > 0)
        memcpy(log->buf + log->len + sizeof(rec), payload, frame->length);
    log->len += need;
    return 1;
}

static void tcp_replay_clear(tcp_replay_t *log)
{
    log->len = 0;
    if (log->cap > 2 * TCP_REPLAY_MAX) { /* a replay grew it: give it back */
        free(log->buf);
        *log = (tcp_replay_t){0};
    }
}

/* Send @frame of this import over @rail, kept for replay when another rail
 * could take over.  Caller holds ti->lock. */
static pb_status_t tcp_rail_send(tcp_import_t *ti, tcp_rail_t *rail, pb_tcp_frame_t *frame,
                                 const void *payload)
{
    pb_status_t status;

    frame->slot = rail->slot;
    if (tcp_live_rails(ti) > 1 && !tcp_replay_append(&rail->replay, frame, payload))
        return PB_ERR_NO_MEMORY;
    rail->dirty = 1;
    status = tcp_conn_send(rail->conn, frame, payload);
    if (status != PB_OK) {
        /* the send saw the break before the reader did: mark it now, so
         * that the caller fails over (part of a frame may be out) */
        pthread_mutex_lock(&tcp.lock);
        tcp_conn_fail(rail->conn, PB_ERR_CONN_ABORTED, NULL);
        pthread_mutex_unlock(&tcp.lock);
    }
    return status;
}

/* Take the rails whose connection broke out of use, sending what each sent
 * since its last barrier again over the first rail left (a resent put
 * rewrites the same bytes; a resent signal may wake the exporter twice,
 * never zero times).  Caller holds ti->lock.
 * @return PB_OK while a rail is left, else PB_ERR_CONN_ABORTED. */
static pb_status_t tcp_import_heal(pb_rsm_import_t *im)
{
    tcp_import_t *ti = im->tl;

    for (;;) {
        tcp_rail_t *broken = NULL, *target;
        tcp_replay_t log;
        size_t at = 0;

        for (int r = 0; r < ti->rail_count && broken == NULL; r++) {
            if (!ti->rails[r].dead && tcp_rail_broken(&ti->rails[r]))
                broken = &ti->rails[r];
        }
        if (broken == NULL)
            return tcp_primary_rail(ti) != NULL ? PB_OK : PB_ERR_CONN_ABORTED;
        broken->dead = 1;
        tcp_link_state_set(im->node, broken->index, 0);
        log = broken->replay;
        broken->replay = (tcp_replay_t){0};
        target = tcp_primary_rail(ti);
        if (target != NULL)
            pb_warn("tcp: rail %d to node %u broke; its last %zu bytes go again over rail %d",
                    broken->index, im->node, log.len, target->index);
        while (target != NULL && at < log.len) {
            tcp_replay_rec_t rec;
            pb_tcp_frame_t frame;
            const char *payload = log.buf + at + sizeof(rec);

            memcpy(&rec, log.buf + at, sizeof(rec));
            frame = (pb_tcp_frame_t){
                .type = rec.type, .flags = rec.flags, .offset = rec.offset, .length = rec.length};
            /* a send that fails leaves the record in the target's copy (or,
             * on the last rail, fails the import at the next pass) */
            if (tcp_rail_send(ti, target, &frame, payload) == PB_ERR_NO_MEMORY)
                break; /* cannot keep it: the rest is lost with the import */
            at += sizeof(rec) + ((rec.length + 7u) & ~(size_t)7);
        }
        free(log.buf);
        if (target == NULL)
            return PB_ERR_CONN_ABORTED;
        if (at < log.len) {
            /* could not keep it for replay: fail the import rather than
             * pretend the puts arrived */
            for (int r = 0; r < ti->rail_count; r++)
                ti->rails[r].dead = 1;
            return PB_ERR_CONN_ABORTED;
        }
    }
}

/* Close a barrier on every rail in use that sent frames since its last
 * one (on the first rail when none did): when it returns PB_OK, every put
 * and signal sent over any rail has reached the exporter.  A rail that
 * breaks meanwhile is failed over and the barrier taken again.  Caller
 * holds ti->lock. */
static pb_status_t tcp_rails_barrier(pb_rsm_import_t *im, unsigned only)
{
    tcp_import_t *ti = im->tl;

    for (;;) {
        tcp_request_t reqs[TCP_MAX_RAILS];
        int asked[TCP_MAX_RAILS] = {0}, any = 0, broke = 0;
        pb_status_t result = tcp_import_heal(im);

        if (result != PB_OK)
            return result;
        for (int r = 0; r < ti->rail_count; r++) {
            tcp_rail_t *rail = &ti->rails[r];

            if (!rail->dead && rail->dirty && (only == 0 || (only & (1u << r))))
                asked[r] = any = 1;
        }
        if (!any)
            asked[tcp_primary_rail(ti) - ti->rails] = 1;
        for (int r = 0; r < ti->rail_count; r++) {
            pb_tcp_frame_t frame = {.type = PB_TCP_BARRIER, .slot = ti->rails[r].slot};

            if (!asked[r])
                continue;
            reqs[r] = (tcp_request_t){0};
            tcp_request_begin(ti->rails[r].conn, &frame, NULL, &reqs[r]);
        }
        for (int r = 0; r < ti->rail_count; r++) {
            pb_status_t status;

            if (!asked[r])
                continue;
            status = tcp_request_end(&reqs[r]);
            if (status == PB_OK) {
                ti->rails[r].dirty = 0;
                tcp_replay_clear(&ti->rails[r].replay);
            } else if (tcp_rail_broken(&ti->rails[r])) {
                broke = 1;
            } else if (result == PB_OK) {
                result = status; /* the exporter's answer: a put was not applied */
            }
        }
        if (result != PB_OK || !broke)
            return result;
        only = 0; /* the replays went to other rails: wait for those too */
    }
}

/* Connect rail @index of @im to the exporter's port at @addr and attach
 * the segment there.  @timeout_ms bounds the dial. */
static pb_status_t tcp_rail_connect(pb_rsm_import_t *im, int index, uint32_t addr, uint16_t port,
                                    const uint8_t key[PB_TCP_KEY_LEN], int timeout_ms)
{
    tcp_import_t *ti = im->tl;
    struct sockaddr_in peer = {
        .sin_family = AF_INET, .sin_addr.s_addr = addr, .sin_port = htons(port)};
    pb_tcp_attach_t attach = {.segid = im->segid, .perm = im->perm};
    pb_tcp_frame_t frame = {.type = PB_TCP_ATTACH, .length = sizeof(attach)};
    tcp_request_t req = {.import = im};
    tcp_rail_t *rail = &ti->rails[ti->rail_count];
    tcp_conn_t *c;
    pb_status_t status;

    pthread_mutex_lock(&tcp.connect_lock);
    status = tcp_conn_get(&peer, key, timeout_ms, &c);
    pthread_mutex_unlock(&tcp.connect_lock);
    if (status != PB_OK)
        return status;
    status = tcp_request(c, &frame, &attach, &req);
    if (status == PB_OK && ti->rail_count > 0 && req.value != im->size)
        status = PB_ERR_PROTOCOL; /* another process answers at that address */
    pthread_mutex_lock(&tcp.lock);
    if (status == PB_OK) {
        *rail = (tcp_rail_t){.conn = c, .slot = req.slot, .index = index};
        ti->rail_count++;
        im->size = req.value;
    } else {
        if (req.slot != 0 && c->refs > 1) {
            /* attached, but not registered here: give the slot back */
            pb_tcp_frame_t detach = {.type = PB_TCP_DETACH, .slot = req.slot};

            if (req.slot < c->slot_import_cap)
                c->slot_imports[req.slot] = NULL;
            tcp_conn_queue(c, &detach, NULL);
        }
        tcp_conn_put(c);
    }
    pthread_mutex_unlock(&tcp.lock);
    return status;
}

/* ---- the importer side: the ops ---------------------------------------------- */

static void tcp_import_free(tcp_import_t *ti)
{
    for (int r = 0; r < ti->rail_count; r++)
        free(ti->rails[r].replay.buf);
    pthread_mutex_destroy(&ti->lock);
    free(ti);
}

static void tcp_import_disconnect(pb_rsm_import_t *im);

static pb_status_t tcp_import_connect(pb_rsm_import_t *im)
{
    tcp_import_t *ti = calloc(1, sizeof(*ti));
    pb_tcp_directory_t dir;
    struct sockaddr_in peer = {.sin_family = AF_INET};
    uint8_t key[PB_TCP_KEY_LEN];
    uint32_t addrs[TCP_MAX_RAILS];
    int count, first = 0;
    pb_status_t status;

    if (ti == NULL)
        return PB_ERR_NO_MEMORY;
    pthread_mutex_init(&ti->lock, NULL);
    status = tcp_lookup(im->node, im->segid, &dir, TCP_CONNECT_TIMEOUT_MS);
    if (status == PB_OK) {
        if (pb_job_get()->has_secret) {
            tcp_key_of_job(key);
        } else if (dir.has_key) {
            memcpy(key, dir.key, sizeof(key));
        } else {
            status = PB_ERR_PERMISSION; /* another user's process */
            goto err_free;
        }
        peer.sin_addr.s_addr = dir.addr;
        peer.sin_port = htons(dir.port);
    } else if (status == PB_ERR_NOT_PUBLISHED && im->node != pb_job_get()->node_id &&
               pb_job_get()->has_secret) {
        /* a node of the job in another namespace or on another host */
        tcp_key_of_job(key);
        status = tcp_relay_lookup(im->node, im->segid, key, &peer);
    }
    if (status != PB_OK)
        goto err_free;
    im->tl = ti;
    /* the rails: the node's addresses, when the one the exporter gave is
     * among them; that one (known to answer) is connected first */
    count = pb_job_get()->has_secret ? tcp_node_addrs(im->node, addrs) : 0;
    for (int i = 0; i < count; i++) {
        if (addrs[i] == peer.sin_addr.s_addr)
            first = i;
    }
    if (count == 0 || addrs[first] != peer.sin_addr.s_addr) {
        addrs[0] = peer.sin_addr.s_addr;
        count = 1;
    }
    status = tcp_rail_connect(im, first, addrs[first], ntohs(peer.sin_port), key,
                              TCP_CONNECT_TIMEOUT_MS);
    if (status == PB_ERR_CONN_ABORTED || status == PB_ERR_PROTOCOL)
        status = PB_ERR_NOT_PUBLISHED; /* the exporter died meanwhile */
    if (status != PB_OK)
        goto err_free;
    tcp_link_state_set(im->node, first, 1);
    for (int i = 0; i < count; i++) {
        if (i == first)
            continue;
        /* a rail that cannot be reached now is left out: the import works
         * over the others */
        if (tcp_rail_connect(im, i, addrs[i], ntohs(peer.sin_port), key, (int)tcp_timeout_ms()) ==
            PB_OK)
            tcp_link_state_set(im->node, i, 1);
        else
            tcp_link_state_set(im->node, i, 0);
    }
    return PB_OK;

err_free:
    im->tl = NULL;
    tcp_import_free(ti);
    return status;
}

static void tcp_import_disconnect(pb_rsm_import_t *im)
{
    tcp_import_t *ti = im->tl;

    pthread_mutex_lock(&tcp.lock);
    for (int r = 0; r < ti->rail_count; r++) {
        tcp_rail_t *rail = &ti->rails[r];
        tcp_conn_t *c = rail->conn;

        if (rail->slot < c->slot_import_cap)
            c->slot_imports[rail->slot] = NULL;
        if (c->refs > 1) {
            pb_tcp_frame_t detach = {.type = PB_TCP_DETACH, .slot = rail->slot};

            tcp_conn_queue(c, &detach, NULL);
        } /* else closing the connection detaches everything */
        tcp_conn_put(c);
    }
    pthread_mutex_unlock(&tcp.lock);
    im->tl = NULL;
    tcp_import_free(ti);
}

/* PB_OK while the segment is not withdrawn and a rail may still carry
 * frames (a broken one is failed over by the next operation). */
static inline pb_status_t tcp_import_state(const tcp_import_t *ti)
{
    if (PB_UNLIKELY(atomic_load_explicit(&ti->withdrawn, memory_order_acquire)))
        return PB_ERR_CONN_ABORTED;
    for (int r = 0; r < ti->rail_count; r++) {
        if (!tcp_rail_broken(&ti->rails[r])) /* (a dead rail's is broken) */
            return PB_OK;
    }
    return PB_ERR_CONN_ABORTED;
}

static pb_status_t tcp_barrier_close(pb_rsm_import_t *im);

/* Put, and with @signal post a signal to the exporter once the data is
 * applied; with @word_last as one frame whose first word the exporter
 * stores last.  With several rails, a put of POSTBOX_TCP_STRIPE_MIN bytes
 * or more goes over all of them in TCP_STRIPE_CHUNK pieces, round robin;
 * anything else goes over the first.  Caller holds ti->lock. */
static pb_status_t tcp_put_locked(pb_rsm_import_t *im, size_t offset, const char *from,
                                  size_t length, int signal, int word_last)
{
    tcp_import_t *ti = im->tl;
    pb_status_t status = tcp_import_heal(im);
    int striped = 0, may_stripe = !word_last && tcp_live_rails(ti) > 1;

    /* a put that goes over the first rail alone must not overtake the
     * pieces of an earlier striped one on the other rails: the program may
     * read its arrival as the earlier put's (a flag after data) */
    if (status == PB_OK && ti->striped && !(may_stripe && length >= tcp.stripe_min)) {
        status = tcp_rails_barrier(im, 0);
        if (status == PB_OK)
            ti->striped = 0;
    }

    while (status == PB_OK && length > 0) {
        int stripe = may_stripe && tcp_live_rails(ti) > 1 && length >= tcp.stripe_min;
        size_t max = stripe ? TCP_STRIPE_CHUNK : PB_TCP_MAX_PAYLOAD;
        uint32_t chunk = (uint32_t)(length > max ? max : length);
        tcp_rail_t *rail = tcp_primary_rail(ti);
        pb_tcp_frame_t frame = {.type = PB_TCP_PUT, .offset = offset, .length = chunk};

        if (stripe || striped) {
            do
                rail = &ti->rails[ti->next_stripe++ % (unsigned)ti->rail_count];
            while (rail->dead);
            striped = 1;
        }
        if (signal && chunk == length && !striped)
            frame.flags = PB_TCP_FLAG_SIGNAL;
        if (word_last)
            frame.flags |= PB_TCP_FLAG_WORD_LAST; /* one frame: at most 4 KB */
        if (tcp_live_rails(ti) > 1 && rail->replay.len > 0 &&
            rail->replay.len + chunk > TCP_REPLAY_MAX) {
            /* the rail keeps enough for replay: free it */
            status = tcp_rails_barrier(im, 1u << (rail - ti->rails));
            continue;
        }
        status = tcp_rail_send(ti, rail, &frame, from);
        if (status != PB_OK && tcp_rail_broken(rail))
            status = tcp_import_heal(im); /* the chunk went again over another rail */
        from += chunk;
        offset += chunk;
        length -= chunk;
    }
    if (striped)
        ti->striped = 1;
    if (status == PB_OK && signal && striped) {
        /* the pieces went over several rails: the signal follows all of them */
        pb_tcp_frame_t frame = {.type = PB_TCP_SIGNAL, .flags = PB_TCP_FLAG_ACCUMULATE};

        status = tcp_rails_barrier(im, 0);
        if (status == PB_OK) {
            ti->striped = 0;
            status = tcp_rail_send(ti, tcp_primary_rail(ti), &frame, NULL);
            if (status != PB_OK)
                status = tcp_import_heal(im);
        }
    }
    return status;
}

/* Put @count entries over one rail as one write, when no entry stripes
 * and no rail keeps copies for replay.  Caller holds ti->lock.
 * @return PB_ERR_UNSUPPORTED when the entries must go one by one. */
static pb_status_t tcp_put_gathered(pb_rsm_import_t *im, const pb_rsm_put_entry_t *entries,
                                    size_t count, int signal, int word_last)
{
    tcp_import_t *ti = im->tl;
    pb_tcp_frame_t frames[TCP_GATHER_MAX];
    const void *payloads[TCP_GATHER_MAX];
    tcp_rail_t *rail;
    pb_status_t status;

    if (count > TCP_GATHER_MAX || ti->striped || tcp_live_rails(ti) != 1)
        return PB_ERR_UNSUPPORTED;
    for (size_t i = 0; i < count; i++) {
        if (entries[i].length > PB_TCP_MAX_PAYLOAD)
            return PB_ERR_UNSUPPORTED;
    }
    status = tcp_import_heal(im);
    if (status != PB_OK)
        return status;
    rail = tcp_primary_rail(ti);
    for (size_t i = 0; i < count; i++) {
        frames[i] = (pb_tcp_frame_t){.type = PB_TCP_PUT,
                                     .slot = rail->slot,
                                     .offset = entries[i].offset,
                                     .length = (uint32_t)entries[i].length};
        payloads[i] = entries[i].src;
    }
    if (signal)
        frames[count - 1].flags |= PB_TCP_FLAG_SIGNAL;
    if (word_last)
        frames[count - 1].flags |= PB_TCP_FLAG_WORD_LAST;
    rail->dirty = 1;
    status = tcp_conn_send_frames(rail->conn, frames, payloads, (int)count);
    if (status != PB_OK) {
        /* as tcp_rail_send: the caller's next operation sees the break */
        pthread_mutex_lock(&tcp.lock);
        tcp_conn_fail(rail->conn, PB_ERR_CONN_ABORTED, NULL);
        pthread_mutex_unlock(&tcp.lock);
    }
    return status;
}

static pb_status_t tcp_put_vector(pb_rsm_import_t *im, const pb_rsm_put_entry_t *entries,
                                  size_t count, int signal, int word_last)
{
    tcp_import_t *ti = im->tl;
    pb_status_t status = tcp_import_state(ti);

    if (status == PB_OK) {
        /* in order, in one write where possible: the exporter reads the
         * frames in one pass and applies them in order */
        pthread_mutex_lock(&ti->lock);
        status = tcp_put_gathered(im, entries, count, signal, word_last);
        if (status == PB_ERR_UNSUPPORTED) {
            status = PB_OK;
            for (size_t i = 0; i < count && status == PB_OK; i++) {
                int last = i == count - 1;

                status = tcp_put_locked(im, entries[i].offset, entries[i].src, entries[i].length,
                                        signal && last, word_last && last);
            }
        }
        pthread_mutex_unlock(&ti->lock);
    }
    if (status == PB_OK && im->mode == RSM_BARRIER_MODE_IMPLICIT)
        status = tcp_barrier_close(im);
    return status == PB_OK ? PB_OK : PB_ERR_CONN_ABORTED;
}

static pb_status_t tcp_put(pb_rsm_import_t *im, size_t offset, const void *src, size_t length)
{
    pb_rsm_put_entry_t entry = {.offset = offset, .src = src, .length = length};

    return tcp_put_vector(im, &entry, 1, 0, 0);
}

static pb_status_t tcp_get(pb_rsm_import_t *im, size_t offset, void *dst, size_t length)
{
    tcp_import_t *ti = im->tl;
    char *to = dst;
    pb_status_t status = tcp_import_state(ti);

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&ti->lock);
    while (length > 0) {
        uint32_t chunk = length > PB_TCP_MAX_PAYLOAD ? PB_TCP_MAX_PAYLOAD : (uint32_t)length;
        pb_tcp_frame_t frame = {.type = PB_TCP_GET, .offset = offset, .count = chunk};
        tcp_request_t req = {.dst = to, .dst_len = chunk};
        tcp_rail_t *rail;

        status = tcp_import_heal(im);
        if (status != PB_OK)
            break;
        rail = tcp_primary_rail(ti);
        frame.slot = rail->slot;
        status = tcp_request(rail->conn, &frame, NULL, &req);
        if (status != PB_OK && tcp_rail_broken(rail))
            continue; /* ask again over another rail */
        if (status != PB_OK)
            break;
        to += chunk;
        offset += chunk;
        length -= chunk;
    }
    pthread_mutex_unlock(&ti->lock);
    return status;
}

static pb_status_t tcp_map(pb_rsm_import_t *im, void **address_p, int fixed, int writable,
                           size_t offset, size_t length)
{
    (void)im, (void)address_p, (void)fixed, (void)writable, (void)offset, (void)length;
    return PB_ERR_UNSUPPORTED; /* never called: the caps say can_map = 0 */
}

static void tcp_unmap(pb_rsm_import_t *im)
{
    (void)im;
}

static pb_status_t tcp_barrier_open(pb_rsm_import_t *im)
{
    return tcp_import_state(im->tl);
}

static pb_status_t tcp_barrier_order(pb_rsm_import_t *im)
{
    tcp_import_t *ti = im->tl;
    pb_status_t status = tcp_import_state(ti);

    /* one rail keeps TCP's order; puts striped over several are ordered
     * with later ones only by waiting for them */
    if (status == PB_OK && ti->striped)
        status = tcp_barrier_close(im);
    return status;
}

static pb_status_t tcp_barrier_close(pb_rsm_import_t *im)
{
    tcp_import_t *ti = im->tl;
    pb_status_t status = tcp_import_state(ti);

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&ti->lock);
    status = tcp_rails_barrier(im, 0);
    if (status == PB_OK)
        ti->striped = 0;
    pthread_mutex_unlock(&ti->lock);
    return status == PB_OK ? tcp_import_state(ti) : status;
}

/* ---- signals ------------------------------------------------------------------ */

static pb_status_t tcp_export_signal_post(pb_rsm_export_t *seg, int accumulate)
{
    tcp_export_t *te = seg->tl;

    /* importers consume all pending exporter events at once, so an
     * accumulating and a non-accumulating post look the same to them */
    (void)accumulate;
    pthread_mutex_lock(&tcp.lock);
    for (tcp_conn_t *c = tcp.conns; c != NULL; c = c->next) {
        if (!c->at_exporter)
            continue;
        for (uint32_t i = 0; i < c->slot_count; i++) {
            if (c->slots[i].in_use && c->slots[i].exp == te) {
                pb_tcp_frame_t event = {.type = PB_TCP_EVENT, .slot = i + 1};

                tcp_conn_queue(c, &event, NULL);
            }
        }
    }
    tcp_reap_failed();
    pthread_mutex_unlock(&tcp.lock);
    return PB_OK;
}

static pb_status_t tcp_import_signal_post(pb_rsm_import_t *im, int accumulate)
{
    tcp_import_t *ti = im->tl;
    pb_tcp_frame_t frame = {.type = PB_TCP_SIGNAL,
                            .flags = accumulate ? PB_TCP_FLAG_ACCUMULATE : 0};
    pb_status_t status = tcp_import_state(ti);

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&ti->lock);
    status = tcp_import_heal(im);
    /* over one rail a signal follows the puts before it; puts striped over
     * several reach the exporter before the signal only by waiting */
    if (status == PB_OK && ti->striped) {
        status = tcp_rails_barrier(im, 0);
        ti->striped = status != PB_OK;
    }
    if (status == PB_OK) {
        tcp_rail_t *rail = tcp_primary_rail(ti);

        status = tcp_rail_send(ti, rail, &frame, NULL);
        if (status != PB_OK && tcp_rail_broken(rail))
            status = tcp_import_heal(im); /* sent again over another rail */
    }
    pthread_mutex_unlock(&ti->lock);
    return status == PB_OK ? PB_OK : PB_ERR_CONN_ABORTED;
}

static pb_status_t tcp_export_event_ready(void *arg)
{
    tcp_export_t *te = arg;
    uint32_t pending = atomic_load(&te->events);

    while (pending > 0) {
        if (atomic_compare_exchange_weak(&te->events, &pending, pending - 1))
            return PB_OK;
    }
    return TCP_NOT_YET;
}

/* Read the connection data came on last, straight: no epoll_wait, a
 * system call less on a message's path when the next comes on it too.
 * Caller holds the progress token.  @return 0 if there is no such
 * connection (then the caller polls the whole set). */
static int tcp_poll_hot(void)
{
    int read = 0;

    pthread_mutex_lock(&pb_rsm_lock);
    pthread_mutex_lock(&tcp.lock);
    if (tcp.hot != NULL && atomic_load(&tcp.hot->failure) == PB_OK) {
        tcp_conn_read(tcp.hot);
        tcp_reap_failed();
        read = 1;
    }
    pthread_mutex_unlock(&tcp.lock);
    pthread_mutex_unlock(&pb_rsm_lock);
    return read;
}

static pb_status_t tcp_export_signal_wait(pb_rsm_export_t *seg, int timeout_ms)
{
    tcp_export_t *te = seg->tl;

    if (timeout_ms == 0) {
        /* a poll (an MPI rank's, thousands a millisecond): one pass over
         * the sockets, no clock; what reached this host counts, so a pass
         * another thread is making is waited for.  A claimant, which polls
         * again soon, reads only the connection data came on last three
         * times in four */
        pb_status_t status;

        if (tcp.sources.epoll_fd >= 0) {
            uint64_t polls = atomic_fetch_add_explicit(&tcp.polls, 1, memory_order_relaxed);

            pthread_mutex_lock(&tcp.progress);
            if (polls % TCP_HOT_POLLS != 0 &&
                atomic_load_explicit(&tcp.claimed, memory_order_relaxed) && tcp_poll_hot())
                tcp_token_release();
            else
                tcp_progress_pass(0, 0, NULL, 0);
        }
        status = tcp_export_event_ready(te);
        return status == TCP_NOT_YET ? PB_ERR_TIMEOUT : status;
    }
    /* posts that reached this host count as made: a non-accumulating one
     * still unread must see the event pending, and be dropped, before the
     * wait consumes it */
    if (atomic_load(&te->events) > 0) {
        pthread_mutex_lock(&tcp.progress);
        tcp_progress_pass(0, 0, NULL, 0);
    }
    return tcp_wait(tcp_export_event_ready, te, &te->events, timeout_ms, 1);
}

static pb_status_t tcp_import_event_ready(void *arg)
{
    tcp_import_t *ti = arg;
    uint32_t generation = atomic_load(&ti->generation);

    if (tcp_import_state(ti) != PB_OK)
        return PB_ERR_CONN_ABORTED;
    if (generation != ti->seen_generation) {
        ti->seen_generation = generation;
        return PB_OK;
    }
    return TCP_NOT_YET;
}

static pb_status_t tcp_import_signal_wait(pb_rsm_import_t *im, int timeout_ms)
{
    tcp_import_t *ti = im->tl;
    pb_status_t status = tcp_wait(tcp_import_event_ready, ti, &ti->generation, timeout_ms, 1);

    if (status == PB_OK) {
        /* a wait consumes every event pending, and events that have reached
         * this host are pending even if no one has read them yet */
        pthread_mutex_lock(&tcp.progress);
        tcp_progress_pass(0, 0, NULL, 0);
        ti->seen_generation = atomic_load(&ti->generation);
    }
    return status;
}

static const void *tcp_export_event_word(pb_rsm_export_t *seg)
{
    return &((tcp_export_t *)seg->tl)->events;
}

static const void *tcp_import_event_word(pb_rsm_import_t *im)
{
    return &((tcp_import_t *)im->tl)->generation;
}

const pb_rsm_transport_t pb_rsm_tcp_transport = {
    .name = "tcp",
    .query = tcp_query,
    .rail_count = tcp_rail_count,
    .rail_link = tcp_rail_link,
    .reaches = tcp_reaches,
    .export_create = tcp_export_create,
    .export_destroy = tcp_export_destroy,
    .export_rebind = tcp_export_rebind,
    .export_publish = tcp_export_publish,
    .export_unpublish = tcp_export_unpublish,
    .import_connect = tcp_import_connect,
    .import_disconnect = tcp_import_disconnect,
    .put = tcp_put,
    .put_vector = tcp_put_vector,
    .get = tcp_get,
    .map = tcp_map,
    .unmap = tcp_unmap,
    .barrier_open = tcp_barrier_open,
    .barrier_order = tcp_barrier_order,
    .barrier_close = tcp_barrier_close,
    .export_signal_post = tcp_export_signal_post,
    .import_signal_post = tcp_import_signal_post,
    .export_signal_wait = tcp_export_signal_wait,
    .import_signal_wait = tcp_import_signal_wait,
    .export_event_word = tcp_export_event_word,
    .import_event_word = tcp_import_event_word,
    .progress_claim = tcp_progress_claim,
};
