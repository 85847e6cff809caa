/*
 * One-sided communication (MPI-5.0 chapter 12) over RSM.
 *
 * Every rank of a window has a *control block* (its lock word, its
 * accumulate lock, and a post and a complete counter per peer for PSCW)
 * and its window memory.  The control blocks of a node's ranks lie in one
 * *node segment*, exported on the shm controller by the node's first rank
 * and mapped by the others; for MPI_Win_allocate and _allocate_shared the
 * window memory lies there too, after the control blocks.  A peer on the
 * same node so reaches a target directly: a put is a memcpy, a lock or a
 * fetch-and-op an atomic on mapped memory, and nothing is asked of the
 * target process.  MPI_Win_create's and dynamic windows' memory is the
 * program's: a peer of the node reaches it by CMA (process_vm_readv and
 * _writev, under the same locks), or, where the kernel refuses, as a peer
 * on another node does.
 *
 * Toward a target on another node a rank imports, on the tcp controller,
 * the target's export of its control block, which carries an RSM call
 * handler (pb_rsm_memseg_import_call): puts, gets, accumulates, atomics,
 * lock requests and PSCW counts are calls that the target applies to its
 * window memory: the rank itself while it is inside MPI, its RSM service
 * thread while it computes outside MPI (the tcp transport hands the
 * sockets over when the rank stops polling), so a passive-target epoch
 * completes while the target computes.  A flush is an RSM
 * barrier on that import.  A lock is deferred: the epoch's calls go in
 * one batch that the target runs under the lock (rma.c).
 *
 * Atomicity: every accumulate-kind operation on a target's memory, from
 * any origin and by any path, runs under the target's accumulate lock
 * (a spin-then-yield lock word in its control block), so accumulates are
 * atomic per element and ordered per origin/target pair as the default
 * accumulate_ordering asks.  One exception makes a fetch-and-op or a
 * compare-and-swap on a node one instruction: on an allocated window
 * whose accumulate_ops hint is same_op or same_op_no_op (the default),
 * the sum, bitwise operations, replace and no-op on 4- and 8-byte integers
 * are hardware atomics on every path (by the target's handler too, under
 * the lock, element by element), so the short path of an origin on the
 * node needs no lock for them: concurrent accumulates to one location use
 * one operation, and each of theirs is then atomic against the others.
 * The hint is read when the window is made; MPI_Win_set_info does not
 * change it (every rank would have to switch at one instant).
 */
#ifndef PB_MPI_WIN_H
#define PB_MPI_WIN_H

#include <postbox/rsm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mpi/comm.h"
#include "mpi/engine/typerep.h"
#include "util/compiler.h"

/* The control block of one rank of a window, in its node segment.  The
 * lock word: PB_WIN_LOCK_EXCLUSIVE, or the number of shared holders. */
#define PB_WIN_LOCK_EXCLUSIVE (UINT64_C(1) << 63)

/* the most memory regions one rank attaches to a dynamic window at once */
#define PB_WIN_REGIONS_MAX 32

typedef struct {
    _Atomic uint64_t lock; /* the passive-target lock of this rank's window */
    char pad0[56];
    _Atomic uint32_t acc_lock; /* held while an accumulate-kind operation runs */
    char pad1[60];
    /* a dynamic window: the memory this rank attached (base 0: a free
     * entry), which peers check their accesses against */
    struct {
        _Atomic uint64_t base, size;
    } regions[PB_WIN_REGIONS_MAX];
    /* then, for each peer p of the window: post[p] (how many exposure
     * epochs p has posted to this rank as origin), complete[p] (how many
     * access epochs p has completed toward this rank as target) */
    _Atomic uint64_t counts[];
} pb_win_ctl_t;

/* Bytes of a control block for a window of @size ranks (a multiple of 64). */
static inline size_t pb_win_ctl_size(int size)
{
    return (sizeof(pb_win_ctl_t) + 2 * sizeof(uint64_t) * (size_t)size + 63) & ~(size_t)63;
}

static inline _Atomic uint64_t *pb_win_post_count(pb_win_ctl_t *ctl, int peer)
{
    return &ctl->counts[2 * peer];
}

static inline _Atomic uint64_t *pb_win_complete_count(pb_win_ctl_t *ctl, int peer)
{
    return &ctl->counts[2 * peer + 1];
}

/* How this rank reaches one target of a window. */
enum {
    PB_WIN_DIRECT = 1, /* on this node, its memory mapped here: loads and stores */
    PB_WIN_CMA,        /* on this node, its memory the program's: process_vm_readv/writev */
    PB_WIN_TCP,        /* elsewhere (or the kernel refuses CMA): RSM calls to its service thread */
};

typedef struct pb_win_batch pb_win_batch_t;

typedef struct {
    int mode;          /* PB_WIN_DIRECT, _CMA or _TCP */
    pb_win_ctl_t *ctl; /* DIRECT and CMA: its control block, mapped */
    char *base;        /* DIRECT: its window memory, mapped */
    uint64_t addr;     /* CMA: its window memory's address in its process */
    uint32_t pid;      /* CMA: its process */
    /* TCP: the import of its control block's export (made on first use),
     * and the barrier that completes what was sent through it */
    rsm_memseg_import_handle_t im;
    rsmapi_barrier_t bar;
    int bar_open;
    uint32_t ctl_id; /* the segment id the target published on tcp */
    uint32_t node;   /* its RSM node id */
    uint64_t size;   /* of its window memory (dynamic: 0, not checked here) */
    int64_t disp_unit;
    int lock;                   /* MPI_LOCK_EXCLUSIVE / MPI_LOCK_SHARED held, or 0 */
    int lock_taken;             /* the lock word was taken (not under MPI_MODE_NOCHECK) */
    int batching;               /* TCP, a lock epoch: calls wait in the batch for the next flush */
    struct pb_win_batch *batch; /* TCP, a lock epoch: the calls since the last flush (rma.c) */
    uint64_t batches_run;       /* TCP: batches sent so far */

    int pending; /* TCP: operations sent since its last flush */
} pb_win_target_t;

enum {
    PB_WIN_EPOCH_NONE = 0,
    PB_WIN_EPOCH_FENCE,    /* between fences (the last without MPI_MODE_NOSUCCEED) */
    PB_WIN_EPOCH_START,    /* MPI_Win_start .. MPI_Win_complete */
    PB_WIN_EPOCH_LOCK,     /* some targets locked (MPI_Win_lock) */
    PB_WIN_EPOCH_LOCK_ALL, /* MPI_Win_lock_all .. MPI_Win_unlock_all */
};

struct MPI_ABI_Win {
    MPI_Win handle;
    pb_comm_t *comm; /* a dup of the communicator given (its own contexts) */
    int rank, size;
    int flavor; /* MPI_WIN_FLAVOR_* */
    int model;  /* MPI_WIN_UNIFIED */
    void *base;
    size_t bytes;
    int64_t disp_unit;
    MPI_Errhandler errhandler;
    MPI_Info info; /* the hints, as MPI_Win_get_info returns them */
    /* accumulates of pb_win_hw_op's ops and kinds are hardware atomics, on
     * every path (an allocated window, accumulate_ops same_op[_no_op]):
     * the short path skips the accumulate lock for them */
    int hw_atomics;
    char name[MPI_MAX_OBJECT_NAME];

    /* the node segment (shm): exported by the node's first rank, mapped */
    rsm_memseg_export_handle_t node_ex;
    rsm_memseg_import_handle_t node_im;
    char *node_seg;
    size_t node_seg_size;
    pb_win_ctl_t *ctl; /* this rank's control block there */
    /* this rank's control block exported on tcp (with the RSM call
     * handler), for peers that reach it through their service threads */
    rsmapi_controller_handle_t tcp_ctl;
    rsm_memseg_export_handle_t ctl_ex;
    uint32_t ctl_id;
    /* calls the service thread applied here (release): a synchronization
     * reads it (acquire), so what the thread wrote into the window
     * happens before what the program reads after (as the thread
     * sanitizer sees it too) */
    _Atomic uint64_t served;

    pb_win_target_t *targets; /* [size] */
    int epoch;                /* PB_WIN_EPOCH_*: the access epoch open */
    int locks_held;           /* targets locked by MPI_Win_lock */
    int exposure;             /* MPI_Win_post .. MPI_Win_wait/test */
    MPI_Group start_group, post_group;
    int *start_ranks, nstart; /* the targets of the access epoch (MPI_Win_start) */
    int *post_ranks, npost;   /* the origins of the exposure epoch */
    uint64_t *post_seen;      /* [size]: posts from each target consumed */
    uint64_t *complete_sent;  /* [size]: access epochs completed toward each target */
    uint64_t *posted;         /* [size]: exposure epochs posted to each origin */
    uint64_t *complete_seen;  /* [size]: completions from each origin consumed */

    struct pb_win_attr *attrs; /* the program's attributes (win_attr.c), last set first */
    /* what the predefined attributes point to */
    MPI_Aint attr_size;
    int attr_disp_unit, attr_flavor, attr_model;
};

typedef struct MPI_ABI_Win pb_win_t;

/* The window @handle stands for, or NULL (MPI_WIN_NULL, freed, made up). */
pb_win_t *pb_mpi_win(MPI_Win handle);

/* The window the last check found, while it lives (NULL once freed, and
 * after MPI_Finalize): the program names the same window call after
 * call, and the registry's look-up is then skipped. */
extern pb_win_t *pb_win_recent;

/* pb_mpi_win_check without the short cut. */
int pb_mpi_win_check_slow(MPI_Win handle, const char *func, pb_win_t **win_p);

/* Check @handle for use by @func: MPI_SUCCESS with *@win_p set, or the
 * error raised (MPI_ERR_WIN on MPI_COMM_SELF's handler, as the standard
 * says for an invalid window; MPI_ERR_OTHER outside MPI_Init ..
 * MPI_Finalize). */
static inline int pb_mpi_win_check(MPI_Win handle, const char *func, pb_win_t **win_p)
{
    if (PB_LIKELY(handle == (MPI_Win)pb_win_recent && handle != NULL)) {
        *win_p = pb_win_recent;
        return MPI_SUCCESS;
    }
    return pb_mpi_win_check_slow(handle, func, win_p);
}

/* At MPI_Finalize: release what the windows the program left hold, locally
 * (the program's operations on them are complete, as MPI_Finalize asks). */
void pb_mpi_win_finalize(void);

/* Raise error @code found by @func on window @win through the window's
 * error handler (MPI_ERRORS_ARE_FATAL unless the program set another),
 * with a message saying what was wrong.  @return @code when the handler
 * returns. */
int pb_mpi_win_raise(pb_win_t *win, int code, const char *func, const char *fmt, ...)
    PB_PRINTF(4, 5);

/* Delete every attribute of @win through the delete functions (before
 * MPI_Win_free releases it).  @return MPI_SUCCESS, or the first error a
 * function returned (the attributes not deleted yet stay). */
int pb_mpi_win_attr_delete_all(pb_win_t *win);

/* Import @rank's control block on tcp, on first use.  @return MPI_SUCCESS
 * or MPI_ERR_OTHER (the target cannot be reached; logged). */
int pb_win_target_connect(pb_win_t *win, int rank);

/* The RSM calls a rank makes to a target's service thread (rma_target.c applies
 * them there): a request is this header, then @nruns runs of the
 * target's memory (pb_win_run_t: offsets from its window memory, or
 * addresses in a dynamic window), then packed data; the reply is a
 * pb_win_reply_t, then packed data. */
enum {
    PB_WIN_CALL_PUT = 1, /* write the data to the runs */
    PB_WIN_CALL_GET,     /* reply the runs' contents */
    PB_WIN_CALL_ACC,     /* accumulate the data into the runs (arg 1: reply the old contents) */
    PB_WIN_CALL_CAS,     /* one element: data = new value then compared value; reply the old */
    PB_WIN_CALL_LOCK,    /* try the lock as arg (MPI_LOCK_*); reply status 1 if taken, 0 if not */
    PB_WIN_CALL_UNLOCK,  /* release the lock held as arg */
    PB_WIN_CALL_COUNT,   /* add 1 to the control block's counts[arg] (PSCW) */
    PB_WIN_CALL_BATCH,   /* take the lock arg (low bits; not with PB_WIN_BATCH_TAKEN), run
                            nruns sub-calls, release it with PB_WIN_BATCH_UNLOCK; a sub-call is a u32
                            length (with   PB_WIN_BATCH_REPLY: its reply wanted) then the call; the
                            reply   is the answer, then (u32 length, reply) per wanted one */
};

#define PB_WIN_BATCH_UNLOCK (1u << 16)
#define PB_WIN_BATCH_TAKEN (1u << 17) /* the caller holds the lock already */
#define PB_WIN_BATCH_REPLY (1u << 31)
/* a BATCH's answer when the lock is held by another: nothing ran */
#define PB_WIN_BATCH_BUSY (-1)

typedef struct {
    uint32_t kind;
    uint32_t basic; /* ACC, CAS: the pb_basic_t of the elements */
    uint64_t op;    /* ACC: the predefined MPI_Op (its ABI handle value) */
    uint32_t nruns;
    uint32_t arg;
} pb_win_call_t;

typedef struct {
    uint64_t off, len;
} pb_win_run_t;

typedef struct {
    int32_t status; /* MPI_SUCCESS or an error class (LOCK: 1 taken, 0 busy) */
    uint32_t reserved;
} pb_win_reply_t;

/* Send the call @req (@len bytes) to @rank's service thread; with @reply,
 * wait for its answer (at most @max bytes, *@got told), else return once
 * sent (the next flush completes it).  @return MPI_SUCCESS or MPI_ERR_OTHER
 * (the target is unreachable; logged). */
int pb_win_call(pb_win_t *win, int rank, const void *req, size_t len, void *reply, size_t max,
                size_t *got);

/* The RSM call handler of a window's control block export (rma_target.c): runs
 * on the RSM service thread for a peer's request. */
void pb_win_call_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                         size_t request_len, void *reply, size_t reply_max, size_t *reply_len);

/* Accumulates applied to memory (rma_target.c), by the target's handler
 * and by origins that reach the memory themselves.  Whether the elements
 * of @kind are value-index pairs with padding (MPI_DOUBLE_INT...): their
 * runs are arrays of C-layout pairs, converted one element at a time. */
int pb_win_kind_padded(pb_basic_t kind);

/* Where offset @off of memory @mem is; @mem NULL: @off is an address. */
char *pb_win_run_at(char *mem, uint64_t off);

/* Whether elements of @kind are integers of 4 or 8 bytes, which
 * compare-and-swap and pb_win_hw_op's ops change by one hardware atomic. */
int pb_win_hw_kind(pb_basic_t kind);

/* Whether @op on elements of @kind is one hardware atomic on a window
 * with hw_atomics: MPI_SUM, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_REPLACE and
 * MPI_NO_OP (an atomic load) on a pb_win_hw_kind. */
int pb_win_hw_op(MPI_Op op, pb_basic_t kind);

/* The read-modify-write of @op on the unsigned integer at @at with @v;
 * @return the value before.  Two's-complement sums are the same for
 * signed integers. */
#define PB_WIN_HW_RMW(bits)                                                                        \
    static inline uint##bits##_t pb_win_hw_rmw##bits(MPI_Op op, uint##bits##_t *at,                \
                                                     uint##bits##_t v)                             \
    {                                                                                              \
        if (op == MPI_SUM)                                                                         \
            return __atomic_fetch_add(at, v, __ATOMIC_ACQ_REL);                                    \
        if (op == MPI_BAND)                                                                        \
            return __atomic_fetch_and(at, v, __ATOMIC_ACQ_REL);                                    \
        if (op == MPI_BOR)                                                                         \
            return __atomic_fetch_or(at, v, __ATOMIC_ACQ_REL);                                     \
        if (op == MPI_BXOR)                                                                        \
            return __atomic_fetch_xor(at, v, __ATOMIC_ACQ_REL);                                    \
        if (op == MPI_REPLACE)                                                                     \
            return __atomic_exchange_n(at, v, __ATOMIC_ACQ_REL);                                   \
        return __atomic_load_n(at, __ATOMIC_ACQUIRE);                                              \
    }
PB_WIN_HW_RMW(32)
PB_WIN_HW_RMW(64)
#undef PB_WIN_HW_RMW

/* @op with the element @in (NULL for MPI_NO_OP) on the element of @size
 * bytes (4 or 8) at @at, aligned to its size, as one atomic; @old (when
 * not NULL) gets its previous value.  (Inline: the short path of
 * MPI_Fetch_and_op is this and little more.) */
static inline void pb_win_hw_apply(MPI_Op op, size_t size, char *at, const char *in, char *old)
{
    if (size == 4) {
        uint32_t v = 0, prev;

        if (in != NULL)
            memcpy(&v, in, sizeof(v));
        prev = pb_win_hw_rmw32(in != NULL ? op : MPI_NO_OP, (uint32_t *)(void *)at, v);
        if (old != NULL)
            memcpy(old, &prev, sizeof(prev));
    } else {
        uint64_t v = 0, prev;

        if (in != NULL)
            memcpy(&v, in, sizeof(v));
        prev = pb_win_hw_rmw64(in != NULL ? op : MPI_NO_OP, (uint64_t *)(void *)at, v);
        if (old != NULL)
            memcpy(old, &prev, sizeof(prev));
    }
}

/* Compare-and-swap as one atomic of the element of @size bytes (4 or 8)
 * at @at, aligned to its size: @old gets its value; it becomes @value
 * when it equals @compare. */
static inline void pb_win_hw_cas(char *at, size_t size, const void *value, const void *compare,
                                 void *old)
{
    if (size == 4) {
        uint32_t expect, v;

        memcpy(&expect, compare, sizeof(expect));
        memcpy(&v, value, sizeof(v));
        __atomic_compare_exchange_n((uint32_t *)(void *)at, &expect, v, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
        memcpy(old, &expect, sizeof(expect));
    } else {
        uint64_t expect, v;

        memcpy(&expect, compare, sizeof(expect));
        memcpy(&v, value, sizeof(v));
        __atomic_compare_exchange_n((uint64_t *)(void *)at, &expect, v, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
        memcpy(old, &expect, sizeof(expect));
    }
}

/* Accumulate with @op the packed elements @in (NULL: none, MPI_NO_OP)
 * into the @nruns runs of @mem, storing their previous contents packed at
 * @old first (when not NULL); with @hw (the window's hw_atomics), the
 * elements pb_win_hw_op covers change by pb_win_hw_apply.  Caller holds
 * the accumulate lock. */
void pb_win_runs_apply(MPI_Op op, pb_basic_t kind, char *mem, const pb_win_run_t *runs,
                       size_t nruns, const char *in, char *old, int hw);

/* Compare-and-swap one element of @kind, @size bytes, at @at: @old gets
 * its value; it becomes @value when it equals @compare.  With @hw (the
 * window's hw_atomics), by pb_win_hw_cas where that covers it.  Caller
 * holds the accumulate lock. */
void pb_win_cas_apply(pb_basic_t kind, char *at, size_t size, const void *value,
                      const void *compare, void *old, int hw);

/* Take and release the accumulate lock of a control block (spin, then
 * yield): around every accumulate-kind operation on its rank's memory. */
void pb_win_acc_lock(pb_win_ctl_t *ctl);
void pb_win_acc_unlock(pb_win_ctl_t *ctl);

/* Try to take the lock of a control block as @lock_type; @return 1 if
 * taken.  Release it. */
int pb_win_lock_try(pb_win_ctl_t *ctl, int lock_type);
void pb_win_lock_release(pb_win_ctl_t *ctl, int lock_type);

/* Send @rank's batch (a lock epoch's calls since the last flush): the
 * target takes the lock unless held already (this rank retries while it
 * is busy), runs the calls, and releases the lock when @unlock, else keeps
 * it (lock_taken).  Results are unpacked into the program's buffers.
 * @return MPI_SUCCESS, an error class a call met at the target,
 * MPI_ERR_OTHER or MPI_ERR_NO_MEM. */
int pb_win_batch_run(pb_win_t *win, int rank, int unlock);

/* Whether @rank's batch holds calls not sent yet.  Free it. */
int pb_win_batch_pending(const pb_win_target_t *t);
void pb_win_batch_free(pb_win_target_t *t);

/* Complete at the target every operation this rank issued toward @rank
 * (an RSM barrier on its imports; a memory fence on the node).
 * @return MPI_SUCCESS or MPI_ERR_OTHER (the target is gone; logged). */
int pb_win_flush_target(pb_win_t *win, int rank);

/* Order this thread after every call the service thread applied to @win
 * (see pb_win_t.served). */
static inline void pb_win_served_acquire(pb_win_t *win)
{
    (void)atomic_load_explicit(&win->served, memory_order_acquire);
}

/* Whether [@addr, @addr + @len) lies in memory attached to the dynamic
 * window whose control block is @ctl.  @return 1 or 0. */
int pb_win_regions_contain(pb_win_ctl_t *ctl, uint64_t addr, uint64_t len);

/* Whether an RMA call toward @rank may run now (an access epoch that
 * covers it).  @return 1 or 0. */
int pb_win_may_access(const pb_win_t *win, int rank);

#endif
