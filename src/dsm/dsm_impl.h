/*
 * The DSM's internal state and the layout of each process's control
 * segment (docs/dsm.md describes the protocol).
 *
 * Every process exports two things over RSM (on shm, and on tcp when the
 * job spans nodes):
 *
 *   data: its copy of the shared range, seen through a second mapping of
 *         the same pages (the "system view", always read-write) so that
 *         fetches, diffs and remote puts never fault; the application
 *         view at the shared address is the one under mprotect.
 *   ctl:  its control segment: mailbox words others raise (barrier
 *         releases, lock grants, thread completions, stop), the locks it
 *         manages, its thread-creation queue, and on process 0 the
 *         barrier, the lock and barrier counters and the allocator.
 *
 * Requests on a ctl segment ("rpcs") run the same handler whatever the
 * path: on the caller's own process for its own ctl, on the caller's
 * mapping of a ctl of its node (shm), or on the owner's RSM service side
 * through pb_rsm_memseg_import_call (tcp).  A handler touches the segment
 * only, under the segment's spin word, and is short.
 *
 *   ctl segment
 *   +-------------------------+ 0
 *   | pb_dsm_ctl_t header     |  offsets of the parts below
 *   +-------------------------+ locks_off
 *   | pb_dsm_lock_rec_t[n]    |  the locks this process manages (id % P)
 *   +-------------------------+ log_off
 *   | uint64 log[16384]       |  pages this process released (release log)
 *   +-------------------------+ image_off
 *   | executable data image   |  staged here for a thread creation
 *   +-------------------------+ readers_off
 *   | uint8 read[npages]      |  1: another process fetched the page
 *   |                         |  from here
 *   +-------------------------+ depart_off
 *   | depart[2]               |  finished episodes as sent here, in
 *   |                         |  the areas' format (below)
 *   +-------------------------+ writer_off  (process 0 only from here)
 *   | int32 writer[npages]    |  barrier notices being gathered
 *   | uint32 touched[npages]  |  pages with a writer entry
 *   | area[2]                 |  a finished episode: epoch, count,
 *   |                         |  heads[nprocs], notices[npages]
 *   | uint8 homes[npages]     |  the home directory: home + 1, 0 unclaimed
 *   +-------------------------+
 */
#ifndef PB_DSM_IMPL_H
#define PB_DSM_IMPL_H

#include <postbox/dsm.h>
#include <postbox/rsm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define PB_DSM_CTL_MAGIC UINT64_C(0x70622d64736d0005) /* "pb-dsm" + version 5 */
#define PB_DSM_MAX_THREADS 64                         /* DSM threads of one process at once */
#define PB_DSM_MAX_JOINS 1024 /* threads one process creates, joined or not */
#define PB_DSM_CREATE_RING 64 /* creation requests queued at a process */
#define PB_DSM_LOCK_QUEUE 32  /* waiters queued at one lock */
#define PB_DSM_MAX_BARRIERS 1024
#define PB_DSM_MAX_BLOCKS 16384 /* blocks of process 0's allocator */
#define PB_DSM_HOME_BLOCK 16    /* the range's size is a multiple of these pages */
#define PB_DSM_BASE_HINT ((uintptr_t)0x300000000000) /* clear of ASan's shadow */
#define PB_DSM_LOG_ENTRIES 16384                     /* pages of a process's release log */
#define PB_DSM_MAX_PROCS 255
#define PB_DSM_FETCH_RUN 2      /* pages at most that one fault fetches from one home */
#define PB_DSM_FETCH_RUN_MAX 32 /* ... from another node (reading on, or as the last streak) */
#define PB_DSM_WRITE_RUN_MAX 32 /* home pages a store on one makes writable at most */
#define PB_DSM_HOT_RELEASES 4   /* a home page written twice within these releases stays writable */
#define PB_DSM_WRITER_NONE (-1)
#define PB_DSM_WRITER_MANY (-2)

/* a waiter: process << 8 | slot */
typedef struct {
    uint32_t who;
    uint32_t ticket;
} pb_dsm_waiter_t;

typedef struct {
    uint32_t created;
    uint32_t held;
    uint32_t holder;
    uint32_t head;
    uint32_t count;
    uint32_t pad;
    pb_dsm_waiter_t queue[PB_DSM_LOCK_QUEUE];
} pb_dsm_lock_rec_t;

/* a thread creation queued at its process */
typedef struct {
    uint64_t fn;
    uint64_t arg;
    uint32_t creator;    /* process */
    uint32_t join_index; /* in the creator's join table */
} pb_dsm_create_req_t;

/* a block of process 0's allocator (offsets in the shared range) */
typedef struct {
    uint64_t offset;
    uint64_t size;
    uint64_t used;
} pb_dsm_block_t;

typedef struct {
    _Atomic uint64_t done; /* 1 once the thread ended */
    uint64_t ret;
} pb_dsm_join_t;

/* the manager's record of a finished barrier episode's area */
typedef struct {
    uint64_t epoch; /* the episode whose notices the area holds (0: none yet) */
    uint64_t acks;  /* processes that read them */
} pb_dsm_area_info_t;

/* An area at area_off + a * area_size (a = episode % 2) of process 0,
 * and its copy sent to every process's depart_off + a * area_size: the
 * episode, its notices' count, the release log heads at the arrivals
 * (nprocs of them), then the notices (page << 32 | writer). */
enum {
    PB_DSM_AREA_EPOCH = 0,
    PB_DSM_AREA_COUNT = 1,
    PB_DSM_AREA_HEADS = 2 /* uint64 words from the area's start */
};

typedef struct {
    uint64_t magic;
    uint32_t nprocs;
    uint32_t npages;
    uint64_t size;      /* bytes of the segment */
    uint64_t locks_off; /* pb_dsm_lock_rec_t[nlocks] */
    uint32_t nlocks;
    uint32_t pad0;
    uint64_t image_off; /* image_len bytes */
    uint64_t image_len;
    uint64_t log_off;     /* uint64 log[PB_DSM_LOG_ENTRIES]: seq << 32 | page */
    uint64_t readers_off; /* uint8 read[npages]: set by the readers of this process's pages */
    uint64_t writer_off;  /* process 0: int32 writer[npages] */
    uint64_t touched_off;
    uint64_t area_off; /* process 0: two areas of area_size bytes */
    uint64_t area_size;
    uint64_t depart_off; /* two areas of area_size bytes: the departures sent here */
    uint64_t homes_off;  /* process 0: uint8 homes[npages], home + 1 (0: no home yet) */

    _Alignas(64) _Atomic uint32_t spin; /* taken by every handler */

    /* the pages this process released, in order: entries [head - cap, head) */
    _Alignas(64) _Atomic uint64_t log_head;

    /* mailbox: raised by others (NOTIFY_MAX), read by this process */
    _Alignas(64) _Atomic uint64_t release_epoch; /* last barrier episode finished */
    _Atomic uint64_t stop;                       /* process 0 finalizes */
    /* episode << 8 | (process + 1) of a process that could not apply or
     * acknowledge that barrier episode (0: none): barriers fail here too */
    _Atomic uint64_t barrier_failed;
    _Atomic uint64_t image_taken;               /* creations whose image was copied */
    _Atomic uint64_t grant[PB_DSM_MAX_THREADS]; /* lock tickets granted per slot */
    pb_dsm_join_t joins[PB_DSM_MAX_JOINS];

    /* thread creations queued here */
    uint32_t create_head;
    uint32_t create_count;
    pb_dsm_create_req_t creates[PB_DSM_CREATE_RING];

    /* process 0 only */
    uint32_t next_lock;
    uint32_t next_barrier;
    uint64_t episode;      /* the barrier episode arrivals count toward */
    uint32_t bar_count;    /* threads arrived */
    uint32_t bar_expected; /* its nthreads (0: none open) */
    uint32_t bar_id;
    uint32_t bar_final_pending;
    uint32_t touched_count;
    uint32_t pad1;
    uint64_t bar_heads[PB_DSM_MAX_PROCS]; /* log heads sent with this episode's arrivals */
    pb_dsm_area_info_t areas[2];          /* finished episodes (their notices at area_off) */
    uint64_t coll_end;   /* collective allocations end here (from the range's start) */
    uint64_t heap_start; /* postbox_dsm_malloc blocks lie at and above it */
    uint32_t nblocks;
    uint32_t pad2;
    pb_dsm_block_t blocks[PB_DSM_MAX_BLOCKS];
} pb_dsm_ctl_t;

/* rpc operations */
enum {
    PB_DSM_OP_NOTIFY_MAX = 1, /* a = offset of a uint64 word, b = value */
    PB_DSM_OP_LOCK_CREATE,
    PB_DSM_OP_LOCK_MARK,    /* a = id */
    PB_DSM_OP_LOCK_ACQUIRE, /* a = id, b = who, c = ticket */
    PB_DSM_OP_LOCK_RELEASE, /* a = id, b = who */
    PB_DSM_OP_BARRIER_CREATE,
    PB_DSM_OP_BARRIER_NOTICES, /* b = process; pages follow */
    PB_DSM_OP_BARRIER_ARRIVE,  /* a = id, b = process, c = nthreads, d = count, e = log head;
                                  pages follow; the last one's reply may bring the area */
    PB_DSM_OP_BARRIER_FINISH,  /* a = episode (the same reply) */
    PB_DSM_OP_BARRIER_ACK,     /* a = episode (sent without reply) */
    PB_DSM_OP_BARRIER_DEPART,  /* a = episode; the area's words follow (2 uint32 each; none:
                                  read it at process 0); sent without reply */
    PB_DSM_OP_MALLOC,          /* a = size */
    PB_DSM_OP_FREE,            /* a = offset */
    PB_DSM_OP_COLL_RESERVE,    /* a = end offset */
    PB_DSM_OP_THREAD_QUEUE,    /* a = fn, b = arg, c = creator, d = join index */
    PB_DSM_OP_THREAD_DEQUEUE,  /* reply: a = fn, b = arg, c = creator << 32 | join index */
    PB_DSM_OP_THREAD_DONE,     /* a = join index, b = return value */
    PB_DSM_OP_HOME_CLAIM,      /* b = process; pages follow; reply a = pages won */
};

typedef struct {
    uint32_t op;
    uint32_t npages; /* page numbers following the header */
    uint64_t a, b, c, d, e;
} pb_dsm_req_t;

/* rpc results (status): >= 0 as the op says, or a POSTBOX_DSM_ERR_* */
enum {
    PB_DSM_LOCK_GRANTED = 0,
    PB_DSM_LOCK_QUEUED = 1,
    PB_DSM_LOCK_RETRY = 2,
    PB_DSM_BARRIER_WAIT = 0,
    PB_DSM_BARRIER_LAST = 1,
    PB_DSM_BARRIER_PENDING = 2,
};

typedef struct {
    int64_t status;
    uint64_t a, b, c;
} pb_dsm_reply_t;

/* pages sent in one rpc at most */
#define PB_DSM_RPC_PAGES 32768

/* page states in this process */
enum {
    PB_DSM_INVALID = 0,
    PB_DSM_READ = 1,
    PB_DSM_WRITE = 2
};

/* another process, as this one reaches it */
typedef struct {
    uint32_t node;
    int local;                       /* on this node: shm */
    rsm_memseg_import_handle_t data; /* its copy of the range */
    rsmapi_barrier_t data_bar;       /* explicit barrier of @data */
    rsm_memseg_import_handle_t ctl;  /* its control segment */
    pb_dsm_ctl_t *ctl_map;           /* mapped (local peers) */
    /* (local peers, unless POSTBOX_DSM_NODE_SHARE is 0) its copy of the
     * range, mapped PROT_NONE: the source of this process's direct pages */
    char *data_map;
} pb_dsm_peer_t;

typedef struct {
    int initialized;
    int me, nprocs, node, nnodes;
    size_t page_size;
    size_t size; /* of the shared range */
    size_t npages;
    char *base; /* the application view (shared address) */
    char *sys;  /* the system view of the same pages */
    pb_dsm_ctl_t *ctl;
    size_t ctl_size;
    rsmapi_controller_handle_t shm_ctl, tcp_ctl;
    rsm_memseg_export_handle_t data_ex[2], ctl_ex[2]; /* [0] shm, [1] tcp */
    pb_dsm_peer_t *peers;

    /* The node's cache (docs/dsm.md, "Two levels"), when the node has
     * other processes of the job and POSTBOX_DSM_NODE_SHARE is not 0: one
     * copy per node of the pages homed on other nodes, which the node's
     * lowest process exports on shm and every process of the node maps.
     * @ncache holds them (read-write: gets land there), @ncache_src the
     * same pages PROT_NONE (what the application view maps them from),
     * @ncache_twin the node twins (one per page, the range's size, after
     * the copy); then per page a pb_dsm_ncache_page_t (@ncache_pages). */
    char *ncache, *ncache_src, *ncache_twin;
    size_t ncache_size;
    struct pb_dsm_ncache_page *ncache_pages;
    rsm_memseg_export_handle_t ncache_ex;
    rsm_memseg_import_handle_t ncache_im;

    /* coherence, under @protocol */
    pthread_mutex_t protocol;
    uint8_t *state; /* per page */
    /* per page: 1 once the application view maps the page straight from
     * its home's copy, the home being another process of this node (a
     * direct page: never invalidated, no twin, no diff) */
    uint8_t *direct;
    /* per page: 1 while the application view maps the node cache's copy
     * (read-only, or read-write while this process wrote it since its
     * last release: then its releases diff the copy against the node
     * twin) */
    uint8_t *nodecached;
    char **twins;    /* per page: the twin of a dirty non-home page, or a hot page's snapshot */
    uint32_t *dirty; /* dirty pages */
    size_t ndirty;
    uint32_t *unsent; /* pages released since the last barrier arrival */
    size_t nunsent;
    uint8_t *unsent_mark;
    uint64_t *log_seen; /* per process: its release log read up to here */
    uint8_t *homes;     /* per page: its home + 1 as known here, 0 not known */
    uint32_t *hot;      /* home pages left writable, with a snapshot in @twins */
    size_t nhot;
    uint32_t *unread; /* home pages no other process fetched: writable, untracked */
    size_t nunread;
    size_t readers_off;   /* the read marks' offset in every process's ctl */
    uint32_t *written_at; /* per page: the release that last found it written */
    /* POSTBOX_DSM_SELF_INVALIDATE: acquires invalidate every cached page
     * another process ever wrote (self-invalidation), not only those
     * noticed since the last acquire; per page, whether a notice from
     * another process was ever seen here */
    int self_invalidate;
    uint8_t *written_elsewhere;
    uint32_t releases; /* releases that found pages written */
    uint64_t applied;  /* the last barrier episode whose notices this process applied */
    size_t homes_off;  /* the home directory's offset in process 0's ctl */
    size_t area_off, area_size, depart_off; /* the barrier areas' (process 0's, everyone's) */

    /* waiting: every thread that waits for its mailbox sleeps on @cv */
    pthread_mutex_t wait_mutex;
    pthread_cond_t cv;
    pthread_t service;
    int service_started;
    _Atomic int stopping;
    _Atomic int serving;              /* the program called postbox_dsm_serve */
    _Atomic uint64_t processed_epoch; /* barrier episodes whose notices were applied */
    /* the first barrier failure, this process's or one another process
     * told it (a POSTBOX_DSM_ERR_*, 0: none), and the episode it failed
     * at (0: none; set first): the barrier calls of that episode and of
     * every later one return it; earlier episodes still end (every process
     * that failed at an episode had finished the ones before it) */
    _Atomic int barrier_error;
    _Atomic uint64_t barrier_error_episode;
    /* POSTBOX_DSM_TEST_FAIL: a failure to inject (PB_DSM_TEST_*, 0: none) */
    int test_fail;
    uint64_t test_fail_episode;
    int test_fail_target;  /* "lose": the process whose departure is dropped */
    uint32_t test_slow_us; /* "slow": the delay */

    /* threads */
    pthread_mutex_t slots_mutex;
    uint64_t slots_used; /* bitmap of PB_DSM_MAX_THREADS */
    _Atomic uint32_t tickets[PB_DSM_MAX_THREADS];
    pthread_mutex_t create_mutex; /* one creation at a time (the image area) */
    uint32_t created;             /* threads this process created */
    uint64_t coll_end;            /* collective allocations so far */

    /* the executable's writable data shipped at thread creation */
    struct pb_dsm_range {
        uintptr_t start, end;
    } * image_ranges;
    size_t nimage_ranges;
    size_t image_len;
} pb_dsm_t;

extern pb_dsm_t pb_dsm;

/* statistics (relaxed atomic counters) */
typedef struct {
    _Atomic uint64_t read_faults, write_faults, page_fetches, diffs, diff_runs, diff_bytes,
        invalidations, lock_acquires, barriers, home_pages, hot_compares, direct_pages, node_pages,
        node_writes;
    _Atomic uint64_t messages[POSTBOX_DSM_MSG_TYPES], bytes[POSTBOX_DSM_MSG_TYPES];
    /* request/reply exchanges with another process (page gets, requests on
     * its control segment) and the nanoseconds they took, by type: printed
     * with POSTBOX_DSM_STATS (the bench's average round trip) */
    _Atomic uint64_t round_trips[POSTBOX_DSM_MSG_TYPES], round_trip_ns[POSTBOX_DSM_MSG_TYPES];
} pb_dsm_counters_t;

extern pb_dsm_counters_t pb_dsm_counters;

static inline void pb_dsm_count(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

static inline void pb_dsm_count_msg(int type, uint64_t bytes)
{
    pb_dsm_count(&pb_dsm_counters.messages[type], 1);
    pb_dsm_count(&pb_dsm_counters.bytes[type], bytes);
}

/* A page of the node's cache (pb_dsm.ncache_pages).  Its copy holds
 * every write a process of the node was told of when both hold:
 * - @written_episode (the last barrier episode whose notices, applied by
 *   a process of the node, named the page) is at most @fetched_episode
 *   (the last episode its getter had applied when its get began: such a
 *   get reads every write released before that episode ended);
 * - @stale (one more for each notice of the page a process of the node
 *   read in a release log at a lock acquire, a thread start or a join)
 *   equals @fetched (its value when the last get began).
 * Then a process maps it without a get.  The node's processes store into
 * the copy too (docs/dsm.md, "Two levels"): @writers counts those that
 * wrote the page since their last release; while it is not 0 the page's
 * node twin (pb_dsm.ncache_twin) holds the copy's words as last diffed or
 * got, and a get merges into the copy only the words the home changed
 * (two-way diffing).  @sending: diffs of the page built from the copy
 * and not yet arrived at the home; a get or a diff of the page waits for
 * 0, so that they reach the home in the order they were built.  @lock: 1
 * while a process of the node gets the page, diffs it, or makes its
 * twin; it never waits for anything while it holds it. */
typedef struct pb_dsm_ncache_page {
    _Atomic uint32_t written_episode;
    _Atomic uint32_t fetched_episode;
    _Atomic uint32_t stale;
    _Atomic uint32_t fetched;
    _Atomic uint32_t lock;
    _Atomic uint32_t writers;
    _Atomic uint32_t sending;
    uint32_t pad;
} pb_dsm_ncache_page_t;

/* a monotonic clock in nanoseconds, for the round-trip counters */
static inline uint64_t pb_dsm_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* one request/reply exchange of @type begun at @start_ns (pb_dsm_now_ns) */
static inline void pb_dsm_count_round_trip(int type, uint64_t start_ns)
{
    pb_dsm_count(&pb_dsm_counters.round_trips[type], 1);
    pb_dsm_count(&pb_dsm_counters.round_trip_ns[type], pb_dsm_now_ns() - start_ns);
}

/* failures POSTBOX_DSM_TEST_FAIL=KIND:PROCESS:EPISODE injects (docs/dsm.md,
 * Errors): for tests only, inert unless set */
enum {
    PB_DSM_TEST_ACK = 1, /* "ack": the episode's acknowledgement is not sent, as a failed post */
    PB_DSM_TEST_APPLY,   /* "apply": applying the episode fails, as a failed read of its area */
    PB_DSM_TEST_ARRIVE,  /* "arrive": the arrival at the episode is not sent, as a failed request */
    PB_DSM_TEST_LOSE,    /* "lose": the episode's departure toward PROCESS is dropped by its
                            sender, as one lost with a tcp rail */
    PB_DSM_TEST_SLOW,    /* "slow:PROCESS:MICROSECONDS": each release of PROCESS that diffs
                            pages of the node's cache waits that long between building its
                            diffs and sending them, as a sender the host does not run */
};

/* ---- dsm.c ---- */
/* 1 when POSTBOX_DSM_TEST_FAIL asks this process to fail @kind at
 * barrier episode @episode (logged), else 0 */
int pb_dsm_test_fail(int kind, uint64_t episode);
int pb_dsm_check(void);
void pb_dsm_set_error(int code);
int pb_dsm_slot(void); /* this thread's slot (one is taken on first use) */
void pb_dsm_slot_release(void);
/* Run @req and its @req->npages page numbers (@pages) on process @proc's
 * ctl: on this process or a mapped ctl (same node) the handler runs here;
 * across nodes an RSM call.  With @reply, wait for the handler's reply:
 * up to @reply_max bytes (the pb_dsm_reply_t, then what the handler
 * appends: a barrier's area) into @reply, their number into *@got_p
 * (unless NULL); counted as a message of @type and a round trip.  With
 * @reply NULL (@reply_max 0, @got_p NULL or set to 0): without reply, the
 * handler's status dropped; across nodes a call that returns once sent,
 * which @proc's service side runs in order with this process's later
 * requests to it; counted as one message once sent, no round trip.
 * Returns 0, or POSTBOX_DSM_ERR_NO_MEMORY (no room for the request),
 * POSTBOX_DSM_ERR_COMMUNICATION (the call failed, or its reply is shorter
 * than a pb_dsm_reply_t: logged).  A call without reply sent and then
 * lost with a tcp rail fails the next request with reply (or get) toward
 * @proc instead (docs/dsm.md, Errors). */
int pb_dsm_request(int proc, int type, const pb_dsm_req_t *req, const uint32_t *pages, void *reply,
                   size_t reply_max, size_t *got_p);
/* pb_dsm_request with a reply of exactly one pb_dsm_reply_t into *@reply */
int pb_dsm_rpc(int proc, int type, const pb_dsm_req_t *req, const uint32_t *pages,
               pb_dsm_reply_t *reply);
/* pb_dsm_request without reply */
int pb_dsm_post(int proc, int type, const pb_dsm_req_t *req, const uint32_t *pages);
/* raise the uint64 at @offset of @proc's ctl to at least @value and wake it */
int pb_dsm_notify(int proc, int type, size_t offset, uint64_t value);
/* signal process @proc: its service thread wakes (this process's waiters
 * when @proc is this process); 0 or POSTBOX_DSM_ERR_COMMUNICATION */
int pb_dsm_wake(int proc);
/* read @len bytes at @offset of @proc's ctl */
int pb_dsm_ctl_read(int proc, size_t offset, void *buf, size_t len);
/* sleep on the wait condition until @done(@arg) is true */
void pb_dsm_wait(int (*done)(void *arg), void *arg);
void pb_dsm_wake_local(void);
void pb_dsm_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                    size_t request_len, void *reply, size_t reply_max, size_t *reply_len);
/* the control segment's size and layout of process @proc into *@hdr */
size_t pb_dsm_ctl_layout(pb_dsm_ctl_t *hdr, int proc);

/* ---- diff.c ---- */

/* The header of a call on a data segment: packed diffs
 * (PB_DSM_DIFF_MSG_MAGIC, diff.c) or read marks (PB_DSM_READ_MSG_MAGIC:
 * pages [@first, @first + @npages) are about to be fetched by the
 * caller, coherence.c). */
typedef struct {
    uint32_t magic;
    uint32_t page_size;
    uint32_t npages;
    uint32_t pad;
    uint64_t first; /* (read marks only) */
} pb_dsm_diff_msg_t;

#define PB_DSM_READ_MSG_MAGIC 0x72656164u /* "read" */
#define PB_DSM_DIFF_MSG_MAGIC 0x64696666u /* "diff" */
/* a packed diff message is sent once it holds this many bytes */
#define PB_DSM_DIFF_MSG_MAX (512 * 1024)

/* the runs of changed words toward one home on this node */
typedef struct {
    rsm_iovec_t *iov;
    size_t n, cap;
} pb_dsm_runs_t;

/* the packed diffs toward one home on another node */
typedef struct {
    char *buf;
    size_t len, cap;
    int open; /* the import's barrier is open */
} pb_dsm_pack_t;

/* Append the runs of 4-byte words of page @p (the system view) that
 * differ from its twin to @list.  0 or POSTBOX_DSM_ERR_NO_MEMORY. */
int pb_dsm_diff_runs(size_t p, pb_dsm_runs_t *list);
/* Put @list's runs into @home's copy: putvs of RSM_MAX_SGIOREQS entries,
 * all closed by one barrier.  0 or POSTBOX_DSM_ERR_COMMUNICATION. */
int pb_dsm_runs_send(int home, pb_dsm_runs_t *list);
/* Append page @p's words of @cur that differ from @twin to @pack, their
 * count into *@changed_p; with @update, each such word is stored into
 * @twin too.  Each word of @cur is read once, and the value read is the
 * one sent and stored into @twin: a word that another process stores
 * into the node's copy meanwhile differs from the twin at the next diff.
 * 0 or POSTBOX_DSM_ERR_NO_MEMORY. */
int pb_dsm_pack_page(size_t p, const volatile uint32_t *cur, uint32_t *twin, int update,
                     pb_dsm_pack_t *pack, size_t *changed_p);
/* Send @pack's message as a call without reply (inside the open
 * barrier); nothing when it holds no page.  0 or
 * POSTBOX_DSM_ERR_COMMUNICATION. */
int pb_dsm_pack_send(int home, pb_dsm_pack_t *pack);
/* At the home: store the words of the packed diffs @request (of
 * @request_len bytes) into its copy @seg_base of @seg_size bytes; a
 * message that is not one, or is cut short, stops where it goes wrong. */
void pb_dsm_diff_apply(void *seg_base, size_t seg_size, const void *request, size_t request_len);

/* ---- coherence.c ---- */
/* the handler of the data segment's tcp export: read marks, and packed
 * diffs (pb_dsm_diff_apply) */
void pb_dsm_diff_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                         size_t request_len, void *reply, size_t reply_max, size_t *reply_len);
int pb_dsm_coherence_init(void);
void pb_dsm_coherence_fini(void);
/* under @protocol: send every dirty page's changes home (a release) */
int pb_dsm_flush_locked(void);
/* under @protocol: invalidate every cached non-home page */
int pb_dsm_invalidate_all_locked(void);
/* under @protocol: invalidate the pages of @entries (page << 32 | writer) not only mine:
 * barrier episode @episode's notices, or (0) those read from release logs */
int pb_dsm_invalidate_notices_locked(const uint64_t *entries, size_t n, uint64_t episode);
int pb_dsm_release(void);
/* the home directory's request (process 0's ctl): claim the pages not
 * homed yet for process req->b */
void pb_dsm_handle_home_claim(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req, const uint32_t *pages,
                              pb_dsm_reply_t *reply);
/* an acquire (a lock, a thread's start, a join): invalidate the pages
 * others released since this process last read their release logs */
int pb_dsm_acquire_logs(void);

/* ---- sync.c ---- */
/* apply barrier episodes up to the one posted (the service thread) */
int pb_dsm_barrier_catch_up(void);
/* Some of this process's messages to process 0 were lost (a broken tcp
 * rail): its barriers fail from the next episode on, and it tells the
 * others (a lost acknowledgement would leave them waiting for ever). */
void pb_dsm_barrier_lost_messages(void);
void pb_dsm_handle_sync(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req, const uint32_t *pages,
                        pb_dsm_reply_t *reply);
/* after a barrier request that finished its episode (@reply's status
 * PB_DSM_BARRIER_LAST): the episode's area copied to @out when it fits in
 * @max bytes; returns the bytes copied (0: none) */
size_t pb_dsm_barrier_reply_area(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req,
                                 const pb_dsm_reply_t *reply, void *out, size_t max);

/* threads of this process waiting in postbox_dsm_thread_join (they arrive
 * at no barrier meanwhile) */
extern _Atomic int pb_dsm_joining;

/* ---- thread.c ---- */
int pb_dsm_image_init(void);
void pb_dsm_thread_serve_queue(void);

#endif
