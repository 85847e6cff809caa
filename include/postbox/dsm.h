/*
 * Postbox DSM: page-based distributed shared memory over RSM.
 *
 * The processes of a job share one range of virtual memory, at the same
 * address in every process, kept coherent page by page (memory protection
 * and a SIGSEGV handler) under release consistency: a data-race-free
 * program (every conflicting access ordered by a lock, a barrier, a thread
 * creation or join) sees what it would see on one machine.  Threads may be
 * placed on any process of the job.  docs/dsm.md describes the model, the
 * protocol and the rules for programs.
 *
 * postbox_dsm_init must be the first Postbox call of the program: it may
 * re-execute the program once with address-space randomisation off (so
 * that function pointers and the executable's globals have the same
 * addresses in every process), and it joins the job itself.
 *
 * Functions returning int return 0 (or a non-negative result) on success
 * and a negative POSTBOX_DSM_ERR_* code on error; postbox_dsm_strerror
 * turns a code into text.  Pointer-returning functions return NULL on
 * error and leave the code in postbox_dsm_last_error().  Every error is
 * also logged once on stderr where it is decided.
 */
#ifndef POSTBOX_DSM_H
#define POSTBOX_DSM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

#define POSTBOX_DSM_SUCCESS 0
#define POSTBOX_DSM_ERR_NOT_INITIALIZED (-1)     /* no postbox_dsm_init yet (or finalized) */
#define POSTBOX_DSM_ERR_ALREADY_INITIALIZED (-2) /* a second postbox_dsm_init */
#define POSTBOX_DSM_ERR_BAD_ARGUMENT (-3)        /* a size of 0, a NULL pointer, a bad count */
#define POSTBOX_DSM_ERR_NO_MEMORY (-4)         /* the shared range (or local memory) is exhausted */
#define POSTBOX_DSM_ERR_ADDRESS_TAKEN (-5)     /* the shared range's address is in use here */
#define POSTBOX_DSM_ERR_JOB (-6)               /* the job (PMI) could not be joined or used */
#define POSTBOX_DSM_ERR_COMMUNICATION (-7)     /* an RSM transfer failed (a process died?) */
#define POSTBOX_DSM_ERR_BAD_LOCK (-8)          /* a lock id never created */
#define POSTBOX_DSM_ERR_NOT_HELD (-9)          /* unlock of a lock the caller does not hold */
#define POSTBOX_DSM_ERR_BAD_BARRIER (-10)      /* a barrier id never created */
#define POSTBOX_DSM_ERR_BARRIER_MISMATCH (-11) /* another barrier or count is in progress */
#define POSTBOX_DSM_ERR_TOO_MANY (-12)         /* a fixed table is full (locks, threads, ...) */
#define POSTBOX_DSM_ERR_BAD_THREAD (-13)       /* join of a thread never created or joined */
#define POSTBOX_DSM_ERR_WRONG_PROCESS (-14)    /* postbox_dsm_serve on process 0 */
#define POSTBOX_DSM_ERR_BAD_POINTER (-15)      /* free of memory not from postbox_dsm_malloc */

/** A static text for a POSTBOX_DSM_* code ("unknown DSM error" otherwise). */
const char *postbox_dsm_strerror(int code);

/** The code of the last failed call of this thread that returned NULL. */
int postbox_dsm_last_error(void);

/* ---- the job ------------------------------------------------------------ */

/**
 * Collective: every process of the job calls it once, first.  Joins the
 * job, reserves @global_size bytes (rounded up to pages) of shared memory
 * at the same virtual address in every process (process 0 chooses it, the
 * others map it there or fail), exports this process's copy over RSM and
 * connects to every other process's.  If address-space randomisation is
 * on, re-executes the program (same arguments and environment) with it
 * off before anything else, once.
 * Every process commits the whole range (docs/dsm.md).
 * @return 0; ERR_ALREADY_INITIALIZED; ERR_BAD_ARGUMENT (@global_size 0,
 *         or above 1 TiB); ERR_NO_MEMORY (more than the machine's memory,
 *         or no memory to map it); ERR_ADDRESS_TAKEN (the chosen address is
 *         mapped in this process); ERR_JOB; ERR_COMMUNICATION.
 */
int postbox_dsm_init(size_t global_size);

/**
 * Process 0: end the DSM.  Tells every other process (whose
 * postbox_dsm_serve then returns), waits for them, and releases the
 * shared range; threads still running are the caller's error.  Other
 * processes: the same as postbox_dsm_serve (an SPMD program may end with
 * postbox_dsm_finalize everywhere), or nothing once it returned.
 * @return 0; ERR_NOT_INITIALIZED; ERR_JOB; ERR_COMMUNICATION.
 */
int postbox_dsm_finalize(void);

/**
 * Processes other than 0: run the threads placed on this process until
 * process 0 calls postbox_dsm_finalize, then release this process's side
 * of the DSM and return.
 * @return 0; ERR_NOT_INITIALIZED; ERR_WRONG_PROCESS (process 0); ERR_JOB.
 */
int postbox_dsm_serve(void);

/** This process's number, 0 to count - 1; ERR_NOT_INITIALIZED. */
int postbox_dsm_process(void);
/** The number of processes; ERR_NOT_INITIALIZED. */
int postbox_dsm_process_count(void);
/** This process's node (processes of a node share memory); ERR_NOT_INITIALIZED. */
int postbox_dsm_node(void);
/** The number of nodes of the job; ERR_NOT_INITIALIZED. */
int postbox_dsm_node_count(void);

/* ---- shared memory ------------------------------------------------------ */

/**
 * Collective: every process calls it with the same @size, in the same
 * order; every process gets the same address.  The memory is
 * page aligned and zero until written.
 * @return the memory; NULL with ERR_NOT_INITIALIZED, ERR_BAD_ARGUMENT
 *         (@size 0) or ERR_NO_MEMORY (the shared range is full).
 */
void *postbox_dsm_alloc(size_t size);

/**
 * Any process, any thread: @size bytes of shared memory (16-byte aligned),
 * valid in every process.  Served by process 0's allocator.
 * @return the memory; NULL with ERR_NOT_INITIALIZED, ERR_BAD_ARGUMENT
 *         (@size 0), ERR_NO_MEMORY or ERR_COMMUNICATION.
 */
void *postbox_dsm_malloc(size_t size);

/**
 * Give back memory of postbox_dsm_malloc (NULL: nothing).
 * @return 0; ERR_NOT_INITIALIZED; ERR_BAD_POINTER (not the start of a
 *         live block of postbox_dsm_malloc); ERR_COMMUNICATION.
 */
int postbox_dsm_free(void *ptr);

/* ---- synchronization ---------------------------------------------------- */

/**
 * Any process: a new lock, free; its id is valid in every process.
 * @return the id (>= 0); ERR_NOT_INITIALIZED; ERR_TOO_MANY (all
 *         POSTBOX_DSM_MAX_LOCKS ids taken); ERR_COMMUNICATION.
 */
int postbox_dsm_lock_create(void);

/** The most locks a job creates. */
#define POSTBOX_DSM_MAX_LOCKS 8192

/**
 * Acquire lock @id, waiting (asleep) while another thread holds it.  Once
 * it returns, the caller sees every write made before the lock's last
 * release.
 * @return 0; ERR_NOT_INITIALIZED; ERR_BAD_LOCK (@id never created);
 *         ERR_COMMUNICATION.
 */
int postbox_dsm_lock(int id);

/**
 * Release lock @id, held by the calling thread: its writes (and every
 * other write of this process) become visible to the next acquirer.
 * @return 0; ERR_NOT_INITIALIZED; ERR_BAD_LOCK; ERR_NOT_HELD (not held by
 *         this thread); ERR_COMMUNICATION.
 */
int postbox_dsm_unlock(int id);

/**
 * Any process: a new barrier id, valid in every process.  Barrier 0
 * exists from postbox_dsm_init on (every process may use it at once).
 * @return the id (>= 0); ERR_NOT_INITIALIZED; ERR_TOO_MANY;
 *         ERR_COMMUNICATION.
 */
int postbox_dsm_barrier_create(void);

/**
 * Wait until @nthreads threads of the whole job (on any processes) have
 * called it for barrier @id; then each sees every write made before any
 * of them arrived.  One barrier episode runs at a time in a job: every
 * thread arriving while one is open must give the same @id and @nthreads.
 * @return 0; ERR_NOT_INITIALIZED; ERR_BAD_BARRIER; ERR_BAD_ARGUMENT
 *         (@nthreads < 1); ERR_BARRIER_MISMATCH (another id or count is
 *         open); ERR_COMMUNICATION.
 */
int postbox_dsm_barrier(int id, int nthreads);

/* ---- threads ------------------------------------------------------------ */

/* A thread of the DSM: the process it runs on and its number there. */
typedef struct {
    int32_t process;
    int32_t index;
} postbox_dsm_thread_t;

/**
 * Start @fn(@arg) on a process of the job.  The k-th thread (k = 0, 1,
 * ...) a process p creates runs on process (p + k + 1) mod count: with
 * process 0 creating them all, thread k runs on process (k + 1) mod count,
 * so that process 0's own thread and the created ones spread evenly.  The
 * creation is a release (the thread sees the creator's writes to shared
 * memory), and the executable's writable globals (.data and .bss, less
 * RELRO and copy-relocated library objects) go to the thread's process as
 * they are at the call: globals written after threads start are not
 * shared (keep shared data in DSM memory).  A thread placed on a process
 * other than 0 starts once that process calls postbox_dsm_serve.  @fn and
 * @arg are used as they are: @arg should point into shared memory or be a
 * plain value.
 * @return 0 and *@thread; ERR_NOT_INITIALIZED; ERR_BAD_ARGUMENT (@thread
 *         or @fn NULL); ERR_TOO_MANY; ERR_COMMUNICATION.
 */
int postbox_dsm_thread_create(postbox_dsm_thread_t *thread, void *(*fn)(void *), void *arg);

/**
 * Wait for @thread (created by this process) to end; its return value
 * goes to *@ret (unless NULL).  A join is an acquire: the caller sees the
 * thread's writes.
 * @return 0; ERR_NOT_INITIALIZED; ERR_BAD_THREAD (not a thread this
 *         process created, or joined already); ERR_COMMUNICATION.
 */
int postbox_dsm_thread_join(postbox_dsm_thread_t thread, void **ret);

/* ---- statistics ---------------------------------------------------------- */

/* message types counted by postbox_dsm_stats */
enum {
    POSTBOX_DSM_MSG_PAGE = 0, /* a page fetched from its home */
    POSTBOX_DSM_MSG_DIFF,     /* a putv of diff runs toward a home */
    POSTBOX_DSM_MSG_LOCK,     /* lock requests, releases and grants */
    POSTBOX_DSM_MSG_BARRIER,  /* barrier arrivals, releases and notices */
    POSTBOX_DSM_MSG_ALLOC,    /* malloc, free, lock/barrier creation, home claims and look-ups */
    POSTBOX_DSM_MSG_THREAD,   /* thread creation, data image, completion */
    POSTBOX_DSM_MSG_TYPES
};

typedef struct {
    uint64_t read_faults;   /* faults on invalid pages by loads */
    uint64_t write_faults;  /* faults by stores (a twin made or a home page marked) */
    uint64_t page_fetches;  /* pages got from their home */
    uint64_t diffs;         /* dirty pages homed elsewhere diffed at a release */
    uint64_t diff_runs;     /* runs of changed words sent */
    uint64_t diff_bytes;    /* bytes of those runs */
    uint64_t invalidations; /* cached pages invalidated at acquires */
    uint64_t lock_acquires; /* postbox_dsm_lock calls */
    uint64_t barriers;      /* postbox_dsm_barrier calls */
    uint64_t messages[POSTBOX_DSM_MSG_TYPES]; /* messages sent, by type */
    uint64_t bytes[POSTBOX_DSM_MSG_TYPES];    /* bytes sent (and fetched), by type */
    uint64_t home_pages; /* pages this process became the home of (their first writer) */
    /* requests sent that waited for their reply, by type: page gets,
     * requests to another process's control segment, reads of process
     * 0's home directory and barrier areas (not those to this process's
     * own segment, nor those sent without reply) */
    uint64_t round_trips[POSTBOX_DSM_MSG_TYPES];
    /* stores that faulted on a page of the node's cache (a page homed on
     * another node, shared by this node's processes) and were served in
     * that copy, without a copy of this process's own */
    uint64_t node_writes;
} postbox_dsm_stats_t;

/**
 * This process's counters since postbox_dsm_init, into *@stats.
 * @return 0; ERR_NOT_INITIALIZED; ERR_BAD_ARGUMENT (@stats NULL).
 */
int postbox_dsm_stats(postbox_dsm_stats_t *stats);

#ifdef __cplusplus
}
#endif

#endif /* POSTBOX_DSM_H */
