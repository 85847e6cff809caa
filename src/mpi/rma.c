/*
 * The RMA communication calls (MPI_Put, MPI_Get, MPI_Accumulate and kin,
 * win.h), the origin's side: their three paths to a target (direct, CMA,
 * RSM calls) and the batches of lock epochs.  The target's side (its
 * locks, the applying of accumulates, the RSM call handler) is
 * rma_target.c.
 *
 * An operation is checked, then its target layout is flattened into
 * *runs* (byte ranges of the target's memory, in type-map order) and its
 * origin data packed; every path moves packed data to or from runs.
 * Accumulate-kind operations run under the target's accumulate lock
 * whatever the path, so they are atomic per element against each other.
 *
 * The elements of an accumulate are one basic kind; packed elements are
 * the kind's C layout, but for the value-index pairs with padding
 * (MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT),
 * whose target layout must be an array of the pair type itself: their runs
 * are arrays of C-layout pairs, converted one element at a time.
 */
#include <time.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/datatype.h"
#include "mpi/engine/channel.h"
#include "mpi/engine/cma.h"
#include "mpi/engine/copy.h"
#include "mpi/engine/engine.h"
#include "mpi/engine/handle.h"
#include "mpi/engine/lock.h"
#include "mpi/engine/path.h"
#include "mpi/op.h"
#include "mpi/win.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"

/* the most packed bytes one RSM call carries or brings back */
#define RMA_CALL_DATA (PB_RSM_CALL_MAX - 64 * 1024)

/* ---- the origin's side: reaching a target ----------------------------------------- */

/* A tcp controller for this window's imports. */
static rsmapi_controller_handle_t tcp_controller(pb_win_t *win)
{
    if (win->tcp_ctl == NULL) {
        if (pb_eng_channel.tcp_ctl != NULL)
            win->tcp_ctl = pb_eng_channel.tcp_ctl;
        else if ((pb_config_network_controller() == NULL ||
                  rsm_get_controller(pb_config_network_controller(), &win->tcp_ctl) != RSM_SUCCESS))
            win->tcp_ctl = NULL;
    }
    return win->tcp_ctl;
}

int pb_win_target_connect(pb_win_t *win, int rank)
{
    pb_win_target_t *t = &win->targets[rank];
    rsmapi_controller_handle_t ctl;
    int rc;

    if (t->im != NULL)
        return MPI_SUCCESS;
    if (t->ctl_id == 0) {
        pb_error("window: rank %d of the window exported nothing this rank can reach", rank);
        return MPI_ERR_OTHER;
    }
    ctl = tcp_controller(win);
    if (ctl == NULL) {
        pb_error("window: no tcp controller to reach rank %d", rank);
        return MPI_ERR_OTHER;
    }
    rc = rsm_memseg_import_connect(ctl, t->node, t->ctl_id, RSM_PERM_RDWR, &t->im);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_set_mode(t->im, RSM_BARRIER_MODE_EXPLICIT);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_init_barrier(t->im, RSM_BAR_DEFAULT, &t->bar);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_open_barrier(&t->bar);
    if (rc != RSM_SUCCESS) {
        pb_error("window: cannot reach rank %d's window (node %u): %s", rank, (unsigned)t->node,
                 rsm_strerror(rc));
        if (t->im != NULL)
            rsm_memseg_import_disconnect(t->im);
        t->im = NULL;
        return MPI_ERR_OTHER;
    }
    t->bar_open = 1;
    return MPI_SUCCESS;
}

int pb_win_call(pb_win_t *win, int rank, const void *req, size_t len, void *reply, size_t max,
                size_t *got)
{
    pb_win_target_t *t = &win->targets[rank];
    size_t reply_len = 0;
    int rc = pb_win_target_connect(win, rank);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = pb_rsm_memseg_import_call(t->im, req, len, reply, reply != NULL ? max : 0, &reply_len,
                                   reply != NULL ? 0 : PB_RSM_CALL_NO_REPLY);
    if (rc != RSM_SUCCESS) {
        pb_error("window: a call to rank %d failed: %s", rank, rsm_strerror(rc));
        return MPI_ERR_OTHER;
    }
    if (reply == NULL)
        t->pending = 1;
    else
        *got = reply_len;
    return MPI_SUCCESS;
}

int pb_win_flush_target(pb_win_t *win, int rank)
{
    pb_win_target_t *t = &win->targets[rank];
    int rc;

    if (t->mode != PB_WIN_TCP || !t->pending) {
        /* loads and stores on the node: the release fence orders them
         * before any later store of this thread (the one that tells a
         * peer to look) */
        atomic_thread_fence(memory_order_release);
        return MPI_SUCCESS;
    }
    t->pending = 0;
    rc = rsm_memseg_import_close_barrier(&t->bar);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_open_barrier(&t->bar);
    if (rc != RSM_SUCCESS) {
        pb_error("window: completing the operations toward rank %d failed: %s", rank,
                 rsm_strerror(rc));
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

/* ---- the origin's side: one operation ------------------------------------------------ */

enum {
    RMA_PUT = 1,
    RMA_GET,
    RMA_ACC, /* accumulate, get_accumulate, fetch_and_op */
    RMA_CAS,
};

typedef struct {
    int kind;
    const void *origin;
    MPI_Count ocount;
    MPI_Datatype otype_h;
    void *result;
    MPI_Count rcount;
    MPI_Datatype rtype_h;
    const void *compare;
    int target;
    MPI_Aint disp;
    MPI_Count tcount;
    MPI_Datatype ttype_h;
    MPI_Op op;
} rma_op_t;

/* The resolved operation: datatypes, runs, packed data. */
typedef struct {
    pb_datatype_t *otype, *rtype, *ttype;
    pb_basic_t kind;
    size_t bytes;       /* packed bytes moved (of the target's layout) */
    pb_win_run_t *runs; /* &one_run, or allocated */
    size_t nruns;
    pb_win_run_t one_run;
    const char *data; /* the origin's packed data (PUT, ACC, CAS) */
    char *data_own;   /* ... when packed here */
    char *fetched;    /* packed target contents (GET, ACC with a result, CAS) */
    alignas(max_align_t) char fetched_small[64];
} rma_plan_t;

static int datatype_arg(pb_win_t *win, const char *func, MPI_Datatype h, const char *what,
                        pb_datatype_t **t_p)
{
    *t_p = pb_mpi_datatype(h);
    if (*t_p == NULL)
        return pb_mpi_win_raise(win, MPI_ERR_TYPE, func, "%s is not a datatype", what);
    if (!pb_eng_type_is_committed(*t_p))
        return pb_mpi_win_raise(win, MPI_ERR_TYPE, func, "%s is not committed", what);
    return MPI_SUCCESS;
}

/* The runs of @count elements of @t at offset @off (merged where
 * adjacent).  @return MPI_SUCCESS or MPI_ERR_NO_MEM. */
static int runs_make(const pb_datatype_t *t, MPI_Count count, uint64_t off, pb_win_run_t *one,
                     pb_win_run_t **runs_p, size_t *nruns_p)
{
    size_t cap = 8, n = 0;
    pb_win_run_t *runs;
    MPI_Aint extent = pb_eng_type_extent(t);

    *runs_p = one;
    *nruns_p = 0;
    if (count == 0 || pb_eng_type_size(t) == 0)
        return MPI_SUCCESS;
    if (pb_eng_type_is_contiguous(t)) {
        /* one run, in the plan itself: no allocation on the short path */
        *one = (pb_win_run_t){off + (uint64_t)pb_eng_type_true_lb(t),
                              (uint64_t)count * pb_eng_type_size(t)};
        *nruns_p = 1;
        return MPI_SUCCESS;
    }
    runs = malloc(cap * sizeof(*runs));
    if (runs == NULL)
        return MPI_ERR_NO_MEM;
    for (MPI_Count e = 0; e < count; e++) {
        for (size_t s = 0; s < t->nsegs; s++) {
            const pb_seg_t *seg = &t->segs[s];

            for (size_t b = 0; b < seg->count; b++) {
                uint64_t at = off + (uint64_t)(e * extent + seg->off + (MPI_Aint)b * seg->stride);

                if (n > 0 && runs[n - 1].off + runs[n - 1].len == at) {
                    runs[n - 1].len += seg->len;
                    continue;
                }
                if (n == cap) {
                    pb_win_run_t *more = realloc(runs, 2 * cap * sizeof(*runs));

                    if (more == NULL) {
                        free(runs);
                        return MPI_ERR_NO_MEM;
                    }
                    runs = more;
                    cap *= 2;
                }
                runs[n++] = (pb_win_run_t){at, seg->len};
            }
        }
    }
    *runs_p = runs;
    *nruns_p = n;
    return MPI_SUCCESS;
}

static void plan_free(rma_plan_t *p)
{
    if (p->runs != &p->one_run)
        free(p->runs);
    if (p->fetched != p->fetched_small)
        free(p->fetched);
    free(p->data_own);
}

/* Check @o against the standard and the window, and resolve it into @p.
 * @return MPI_SUCCESS, or the error raised on @win. */
static int plan_make(pb_win_t *win, const char *func, const rma_op_t *o, rma_plan_t *p)
{
    pb_win_target_t *t = &win->targets[o->target];
    size_t obytes = 0, rbytes = 0;
    uint64_t off;
    int rc;

    memset(p, 0, sizeof(*p));
    if (o->ocount < 0 || o->tcount < 0 || o->rcount < 0)
        return pb_mpi_win_raise(win, MPI_ERR_COUNT, func, "a count is negative");
    rc = datatype_arg(win, func, o->ttype_h, "target_datatype", &p->ttype);
    if (rc == MPI_SUCCESS && o->kind != RMA_GET && o->origin != NULL)
        rc = datatype_arg(win, func, o->otype_h, "origin_datatype", &p->otype);
    if (rc == MPI_SUCCESS && o->kind == RMA_GET)
        rc = datatype_arg(win, func, o->otype_h, "origin_datatype", &p->otype);
    if (rc == MPI_SUCCESS && o->result != NULL && o->kind != RMA_GET)
        rc = datatype_arg(win, func, o->rtype_h, "result_datatype", &p->rtype);
    if (rc != MPI_SUCCESS)
        return rc;
    p->bytes = (size_t)o->tcount * pb_eng_type_size(p->ttype);
    if (p->otype != NULL)
        obytes = (size_t)o->ocount * pb_eng_type_size(p->otype);
    if (p->rtype != NULL)
        rbytes = (size_t)o->rcount * pb_eng_type_size(p->rtype);
    if (o->kind == RMA_ACC || o->kind == RMA_CAS) {
        if (!pb_mpi_op_is_predefined(o->op))
            return pb_mpi_win_raise(win, MPI_ERR_OP, func,
                                    "one-sided accumulates take predefined ops only");
        rc = pb_mpi_op_check_accumulate(o->op, o->ttype_h);
        if (rc != MPI_SUCCESS)
            return pb_mpi_win_raise(win, rc, func,
                                    rc == MPI_ERR_OP ? "the op is not a predefined op defined "
                                                       "on the target's elements"
                                                     : "bad target datatype");
        p->kind = pb_eng_type_basic(p->ttype);
        if (p->kind == PB_BASIC_NONE)
            return pb_mpi_win_raise(win, MPI_ERR_TYPE, func,
                                    "the target's elements are not all of one basic type");
        if (p->otype != NULL && o->op != MPI_NO_OP && pb_eng_type_basic(p->otype) != p->kind)
            return pb_mpi_win_raise(win, MPI_ERR_TYPE, func,
                                    "the origin's and the target's basic types differ");
        if (p->rtype != NULL && pb_eng_type_basic(p->rtype) != p->kind)
            return pb_mpi_win_raise(win, MPI_ERR_TYPE, func,
                                    "the result's and the target's basic types differ");
        if (pb_win_kind_padded(p->kind) && p->ttype != pb_eng_type_of_basic(p->kind))
            return pb_mpi_win_raise(win, MPI_ERR_TYPE, func,
                                    "Postbox accumulates padded pair types (MPI_DOUBLE_INT...) "
                                    "only into arrays of the pair type itself");
    }
    if (o->kind != RMA_CAS && o->op != MPI_NO_OP && o->origin == NULL && o->ocount > 0 &&
        p->otype != NULL && pb_eng_type_size(p->otype) > 0)
        return pb_mpi_win_raise(win, MPI_ERR_BUFFER, func, "origin_addr is NULL");
    if (p->otype != NULL && o->op != MPI_NO_OP && obytes != p->bytes)
        return pb_mpi_win_raise(win, MPI_ERR_TYPE, func,
                                "the origin's %zu bytes do not match the target's %zu", obytes,
                                p->bytes);
    if (p->rtype != NULL && rbytes != p->bytes)
        return pb_mpi_win_raise(win, MPI_ERR_TYPE, func,
                                "the result's %zu bytes do not match the target's %zu", rbytes,
                                p->bytes);
    /* where the data lies in the target's memory */
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        off = (uint64_t)o->disp;
    } else {
        MPI_Aint lo, hi;

        if (o->disp < 0)
            return pb_mpi_win_raise(win, MPI_ERR_RMA_RANGE, func, "target_disp is negative (%ld)",
                                    (long)o->disp);
        off = (uint64_t)o->disp * (uint64_t)t->disp_unit;
        if (p->bytes > 0) {
            /* the elements span from the first's true lower bound to the
             * last's true upper bound, either way round (an extent may be
             * negative) */
            MPI_Aint span, start;
            int over = (uint64_t)o->disp > (uint64_t)INT64_MAX / (uint64_t)t->disp_unit ||
                       __builtin_mul_overflow((MPI_Aint)(o->tcount - 1),
                                              pb_eng_type_extent(p->ttype), &span) ||
                       __builtin_add_overflow((MPI_Aint)off, span < 0 ? span : 0, &start) ||
                       __builtin_add_overflow(start, pb_eng_type_true_lb(p->ttype), &lo) ||
                       __builtin_add_overflow((MPI_Aint)off, span > 0 ? span : 0, &hi) ||
                       __builtin_add_overflow(hi, p->ttype->true_ub, &hi);

            if (over || lo < 0 || hi > (MPI_Aint)t->size)
                return pb_mpi_win_raise(
                    win, MPI_ERR_RMA_RANGE, func,
                    "the target's elements are outside rank %d's window of %lu bytes", o->target,
                    (unsigned long)t->size);
        }
    }
    if (pb_win_kind_padded(p->kind)) {
        p->runs = &p->one_run;
        p->one_run =
            (pb_win_run_t){off, (uint64_t)o->tcount * (uint64_t)pb_eng_type_extent(p->ttype)};
        p->nruns = o->tcount > 0;
    } else if (runs_make(p->ttype, o->tcount, off, &p->one_run, &p->runs, &p->nruns) !=
               MPI_SUCCESS) {
        return pb_mpi_win_raise(win, MPI_ERR_NO_MEM, func, "out of memory");
    }
    /* the origin's data, packed */
    if (p->otype != NULL && o->kind != RMA_GET && o->op != MPI_NO_OP && p->bytes > 0) {
        if (pb_eng_type_is_contiguous(p->otype)) {
            p->data = (const char *)o->origin + pb_eng_type_true_lb(p->otype);
        } else {
            p->data_own = malloc(p->bytes);
            if (p->data_own == NULL) {
                plan_free(p);
                return pb_mpi_win_raise(win, MPI_ERR_NO_MEM, func, "out of memory");
            }
            pb_eng_type_pack_range(o->origin, o->ocount, p->otype, 0, p->data_own, p->bytes);
            p->data = p->data_own;
        }
    }
    if ((o->kind == RMA_GET || o->result != NULL) && p->bytes > 0) {
        size_t room = o->kind == RMA_CAS ? 2 * p->bytes : p->bytes;

        /* on the node, small results stay in the plan (a batch toward
         * another node keeps pointers into its buffer: that one is
         * allocated) */
        p->fetched = t->mode != PB_WIN_TCP && room <= sizeof(p->fetched_small) ? p->fetched_small
                                                                               : malloc(room);
        if (p->fetched == NULL) {
            plan_free(p);
            return pb_mpi_win_raise(win, MPI_ERR_NO_MEM, func, "out of memory");
        }
    }
    return MPI_SUCCESS;
}

/* ---- the paths -------------------------------------------------------------------- */

/* Directly: @mem is the target's memory mapped here (NULL: offsets are
 * addresses in this process, a dynamic window of this rank). */
static void path_direct(const rma_op_t *o, rma_plan_t *p, char *mem, pb_win_ctl_t *ctl, int hw)
{
    size_t pos = 0;

    switch (o->kind) {
    case RMA_PUT:
        for (size_t i = 0; i < p->nruns; pos += p->runs[i].len, i++)
            pb_eng_copy(pb_win_run_at(mem, p->runs[i].off), p->data + pos, p->runs[i].len);
        break;
    case RMA_GET:
        for (size_t i = 0; i < p->nruns; pos += p->runs[i].len, i++)
            pb_eng_copy(p->fetched + pos, pb_win_run_at(mem, p->runs[i].off), p->runs[i].len);
        break;
    case RMA_ACC:
        pb_win_acc_lock(ctl);
        pb_win_runs_apply(o->op, p->kind, mem, p->runs, p->nruns, p->data, p->fetched, hw);
        pb_win_acc_unlock(ctl);
        break;
    case RMA_CAS:
        pb_win_acc_lock(ctl);
        pb_win_cas_apply(p->kind, pb_win_run_at(mem, p->runs[0].off), p->bytes, p->data, o->compare,
                         p->fetched, hw);
        pb_win_acc_unlock(ctl);
        break;
    }
}

/* Through the kernel (CMA): @return MPI_SUCCESS, MPI_ERR_RMA_RANGE (a bad
 * address), or -1 when the kernel refuses (take the tcp path). */
static int path_cma(const rma_op_t *o, rma_plan_t *p, pb_win_target_t *t)
{
    char *copy = NULL;
    size_t pos = 0;
    int rc = PB_ENG_PEER_COPY_OK;
    pb_win_run_t *local = NULL;

    if (o->kind == RMA_PUT) {
        for (size_t i = 0; i < p->nruns && rc == PB_ENG_PEER_COPY_OK; pos += p->runs[i].len, i++)
            rc = pb_eng_cma_write(t->pid, t->addr + p->runs[i].off, p->data + pos, p->runs[i].len);
    } else if (o->kind == RMA_GET) {
        for (size_t i = 0; i < p->nruns && rc == PB_ENG_PEER_COPY_OK; pos += p->runs[i].len, i++)
            rc =
                pb_eng_cma_read(t->pid, t->addr + p->runs[i].off, p->fetched + pos, p->runs[i].len);
    } else {
        /* read, combine here, write back: under the target's lock */
        size_t total = 0;

        for (size_t i = 0; i < p->nruns; i++)
            total += p->runs[i].len;
        copy = malloc(total + 1);
        local = malloc((p->nruns + 1) * sizeof(*local));
        if (copy == NULL || local == NULL) {
            free(copy);
            free(local);
            return MPI_ERR_NO_MEM;
        }
        pb_win_acc_lock(t->ctl);
        for (size_t i = 0; i < p->nruns && rc == PB_ENG_PEER_COPY_OK; pos += p->runs[i].len, i++) {
            local[i] = (pb_win_run_t){pos, p->runs[i].len};
            rc = pb_eng_cma_read(t->pid, t->addr + p->runs[i].off, copy + pos, p->runs[i].len);
        }
        if (rc == PB_ENG_PEER_COPY_OK) {
            if (o->kind == RMA_ACC)
                pb_win_runs_apply(o->op, p->kind, copy, local, p->nruns, p->data, p->fetched, 0);
            else
                pb_win_cas_apply(p->kind, copy, p->bytes, p->data, o->compare, p->fetched, 0);
            pos = 0;
            for (size_t i = 0; i < p->nruns && rc == PB_ENG_PEER_COPY_OK;
                 pos += p->runs[i].len, i++)
                rc = pb_eng_cma_write(t->pid, t->addr + p->runs[i].off, copy + pos, p->runs[i].len);
        }
        pb_win_acc_unlock(t->ctl);
        free(copy);
        free(local);
    }
    if (rc == PB_ENG_PEER_COPY_REFUSED)
        return -1;
    return rc == PB_ENG_PEER_COPY_OK ? MPI_SUCCESS : MPI_ERR_RMA_RANGE;
}

/* ---- lock epochs: their calls in batches ------------------------------------------------- */

/*
 * A lock toward a target on another node is not asked for when MPI_Win_lock
 * (or _lock_all) is called: the epoch's operations wait in a batch until
 * the program flushes or unlocks, and go then as one call that the
 * target's service thread runs whole: take the lock with the first batch
 * (or answer that it is busy, running nothing), run the operations,
 * release the lock with the unlock's.  A lock/put/unlock epoch is so one
 * round trip, an epoch without operations none, and a put + flush one
 * frame and its answer.  A batch that grows past one call's room is sent
 * with the lock kept and another begins.
 */

struct pb_win_batch {
    char *req; /* the BATCH call: header, then (u32 length, sub-call) each */
    size_t len, cap;
    uint32_t calls;
    size_t reply_bytes; /* what the sub-calls' replies will take */
    struct {
        char *at; /* where a sub-call's reply data goes (NULL: none) */
        size_t len;
    } * sinks;
    size_t nsinks, sinks_cap;
    struct rma_deferred *defs; /* results unpacked once the batch ran, in order */
    struct rma_deferred **defs_tail;
};

/* A result to unpack into the program's buffer once its batch ran. */
struct rma_deferred {
    char *fetched;
    size_t bytes;
    void *dst;
    MPI_Count count;
    pb_datatype_t *type;
    struct rma_deferred *next;
};

int pb_win_batch_pending(const pb_win_target_t *t)
{
    return t->batch != NULL && t->batch->calls > 0;
}

static pb_win_batch_t *batch_of(pb_win_target_t *t)
{
    if (t->batch == NULL) {
        t->batch = calloc(1, sizeof(*t->batch));
        if (t->batch != NULL)
            t->batch->defs_tail = &t->batch->defs;
    }
    return t->batch;
}

void pb_win_batch_free(pb_win_target_t *t)
{
    pb_win_batch_t *b = t->batch;

    if (b == NULL)
        return;
    while (b->defs != NULL) {
        struct rma_deferred *d = b->defs;

        b->defs = d->next;
        pb_eng_type_release(d->type);
        free(d->fetched);
        free(d);
    }
    free(b->req);
    free(b->sinks);
    free(b);
    t->batch = NULL;
}

/* Append the sub-call @req to @t's batch, its reply data to go to @at.
 * @return 1 if it fits, 0 if the batch must go first, -1 out of memory. */
static int batch_add(pb_win_target_t *t, const char *req, size_t len, char *at, size_t at_len,
                     int wants_reply)
{
    pb_win_batch_t *b = batch_of(t);
    size_t need = len + sizeof(uint32_t);
    size_t reply_need = wants_reply ? sizeof(uint32_t) + sizeof(pb_win_reply_t) + at_len : 0;

    if (b == NULL)
        return -1;
    if (b->req == NULL)
        b->len = sizeof(pb_win_call_t); /* room for the header, made below */
    if (b->len + need > PB_RSM_CALL_MAX ||
        sizeof(pb_win_reply_t) + b->reply_bytes + reply_need > PB_RSM_CALL_MAX)
        return 0;
    if (b->len + need > b->cap) {
        size_t cap = b->cap > 0 ? b->cap : 1024;
        char *more;

        while (cap < b->len + need)
            cap *= 2;
        more = realloc(b->req, cap);
        if (more == NULL)
            return -1;
        b->req = more;
        b->cap = cap;
    }
    if (wants_reply && b->nsinks == b->sinks_cap) {
        size_t cap = b->sinks_cap > 0 ? 2 * b->sinks_cap : 16;
        void *more = realloc(b->sinks, cap * sizeof(*b->sinks));

        if (more == NULL)
            return -1;
        b->sinks = more;
        b->sinks_cap = cap;
    }
    memcpy(b->req + b->len, &(uint32_t){(uint32_t)len | (wants_reply ? PB_WIN_BATCH_REPLY : 0)},
           sizeof(uint32_t));
    memcpy(b->req + b->len + sizeof(uint32_t), req, len);
    b->len += need;
    b->calls++;
    if (wants_reply) {
        b->sinks[b->nsinks].at = at;
        b->sinks[b->nsinks].len = at_len;
        b->nsinks++;
        b->reply_bytes += reply_need;
    }
    return 1;
}

int pb_win_batch_run(pb_win_t *win, int rank, int unlock)
{
    pb_win_target_t *t = &win->targets[rank];
    pb_win_batch_t *b = batch_of(t);
    pb_win_call_t head = {.kind = PB_WIN_CALL_BATCH,
                          .arg = (uint32_t)t->lock | (unlock ? PB_WIN_BATCH_UNLOCK : 0) |
                                 (t->lock_taken ? PB_WIN_BATCH_TAKEN : 0)};
    pb_win_reply_t answer;
    char *reply;
    size_t got = 0, pos;
    long sleep_ns = 1000;
    int rc, answer_ok = 0;
    unsigned levels;

    if (b == NULL)
        return MPI_ERR_NO_MEM;
    if (b->req == NULL) {
        b->len = 0;
        b->req = malloc(sizeof(head));
        if (b->req == NULL)
            return MPI_ERR_NO_MEM;
        b->cap = sizeof(head);
    }
    if (b->len == 0)
        b->len = sizeof(head);
    head.nruns = b->calls;
    memcpy(b->req, &head, sizeof(head));
    reply = malloc(sizeof(answer) + b->reply_bytes);
    if (reply == NULL)
        return MPI_ERR_NO_MEM;
    for (;;) {
        rc = pb_win_call(win, rank, b->req, b->len, reply, sizeof(answer) + b->reply_bytes, &got);
        if (rc == MPI_SUCCESS && got < sizeof(answer))
            rc = MPI_ERR_OTHER;
        if (rc != MPI_SUCCESS)
            break;
        memcpy(&answer, reply, sizeof(answer));
        if (answer.status != PB_WIN_BATCH_BUSY) {
            rc = answer.status;
            answer_ok = rc == MPI_SUCCESS;
            break;
        }
        /* the lock is held by another: try again a little later */
        pb_eng_progress();
        levels = pb_eng_lock_suspend(); /* this process's other threads run meanwhile */
        nanosleep(&(struct timespec){0, sleep_ns}, NULL);
        pb_eng_lock_resume(levels);
        if (sleep_ns < 1000000L)
            sleep_ns *= 2;
    }
    /* the sub-calls' replies, in order: (u32 length, reply) each */
    pos = sizeof(answer);
    for (size_t i = 0; rc == MPI_SUCCESS && i < b->nsinks; i++) {
        uint32_t len;
        pb_win_reply_t sub;

        if (pos + sizeof(len) + sizeof(sub) > got) {
            rc = MPI_ERR_OTHER;
            break;
        }
        memcpy(&len, reply + pos, sizeof(len));
        memcpy(&sub, reply + pos + sizeof(len), sizeof(sub));
        rc = sub.status;
        if (rc == MPI_SUCCESS && b->sinks[i].at != NULL) {
            if (len != sizeof(sub) + b->sinks[i].len || pos + sizeof(len) + len > got)
                rc = MPI_ERR_OTHER;
            else
                memcpy(b->sinks[i].at, reply + pos + sizeof(len) + sizeof(sub), b->sinks[i].len);
        }
        pos += sizeof(len) + len;
    }
    free(reply);
    for (struct rma_deferred *d = b->defs; rc == MPI_SUCCESS && d != NULL; d = d->next)
        pb_eng_type_unpack_range(d->fetched, d->bytes, d->dst, d->count, d->type, 0);
    pb_win_batch_free(t);
    t->batches_run++;
    /* the target keeps the lock when the batch ran (its answer said so),
     * whatever became of the replies here; a failed batch released it */
    if (answer_ok && t->lock != 0)
        t->lock_taken = !unlock;
    return rc;
}

/* Send the sub-call @req toward @rank: into its batch in a lock epoch,
 * else as a call of its own (@wants_reply: wait for the answer,
 * its data to @at; @reply is room for it). */
static int tcp_exchange(pb_win_t *win, int rank, const char *req, size_t len, int wants_reply,
                        char *at, size_t at_len, char *reply)
{
    pb_win_target_t *t = &win->targets[rank];
    pb_win_reply_t answer;
    size_t got = 0;
    int rc;

    if (t->batching) {
        int added = batch_add(t, req, len, at, at_len, wants_reply);

        if (added == 0) {
            /* no room: run the batch keeping the lock, start another
             * (which takes any one call) */
            rc = pb_win_batch_run(win, rank, 0);
            if (rc != MPI_SUCCESS)
                return rc;
            added = batch_add(t, req, len, at, at_len, wants_reply);
        }
        return added > 0 ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    }
    rc =
        pb_win_call(win, rank, req, len, wants_reply ? reply : NULL, sizeof(answer) + at_len, &got);
    if (rc != MPI_SUCCESS || !wants_reply)
        return rc;
    if (got < sizeof(answer))
        return MPI_ERR_OTHER;
    memcpy(&answer, reply, sizeof(answer));
    if (answer.status != MPI_SUCCESS)
        return answer.status;
    if (at != NULL) {
        if (got != sizeof(answer) + at_len)
            return MPI_ERR_OTHER;
        memcpy(at, reply + sizeof(answer), at_len);
    }
    return MPI_SUCCESS;
}

/* Where @t's batch stood before an operation added to it. */
typedef struct {
    uint64_t batches_run;
    size_t len, nsinks, reply_bytes;
    uint32_t calls;
} batch_mark_t;

static batch_mark_t batch_mark(const pb_win_target_t *t)
{
    const pb_win_batch_t *b = t->batch;

    if (b == NULL)
        return (batch_mark_t){t->batches_run, 0, 0, 0, 0};
    return (batch_mark_t){t->batches_run, b->len, b->nsinks, b->reply_bytes, b->calls};
}

/* Take back from @t's batch what an operation that failed added since
 * @mark (its sub-calls point into its plan, which is freed).  A batch that
 * ran meanwhile took the operation's first pieces with it (their results
 * are in place): what its successor holds is the operation's alone. */
static void batch_rewind(pb_win_target_t *t, const batch_mark_t *mark)
{
    pb_win_batch_t *b = t->batch;

    if (b == NULL)
        return;
    if (t->batches_run != mark->batches_run) {
        b->len = b->req != NULL ? sizeof(pb_win_call_t) : 0;
        b->nsinks = b->reply_bytes = 0;
        b->calls = 0;
        return;
    }
    b->len = mark->len;
    b->nsinks = mark->nsinks;
    b->reply_bytes = mark->reply_bytes;
    b->calls = mark->calls;
}

/* Keep @p's fetched data for the batch of @t: it is unpacked into the
 * program's buffer when the batch ran.  @return MPI_SUCCESS or
 * MPI_ERR_NO_MEM. */
static int defer_result(pb_win_target_t *t, rma_plan_t *p, void *dst, MPI_Count count,
                        pb_datatype_t *type)
{
    pb_win_batch_t *b = batch_of(t);
    struct rma_deferred *d = calloc(1, sizeof(*d));

    if (b == NULL || d == NULL) {
        free(d);
        return MPI_ERR_NO_MEM;
    }
    /* in the order of the calls: a later result into the same buffer
     * lands last */
    *d = (struct rma_deferred){p->fetched, p->bytes, dst, count, type, NULL};
    pb_eng_type_retain(type);
    *b->defs_tail = d;
    b->defs_tail = &d->next;
    p->fetched = NULL;
    return MPI_SUCCESS;
}

/* Through the target's service thread: the runs cut into calls of at
 * most RMA_CALL_DATA packed bytes, each element whole.  @return
 * MPI_SUCCESS, an error class the target answered, or MPI_ERR_OTHER. */
static int path_tcp(pb_win_t *win, const rma_op_t *o, rma_plan_t *p)
{
    size_t unit = 1, ext = 1, pos = 0, run = 0, need;
    uint64_t run_done = 0;
    int padded = o->kind == RMA_ACC && pb_win_kind_padded(p->kind);
    /* a put or an accumulate without a result completes at the next
     * flush; a dynamic window's target checks addresses: its answer
     * carries the error */
    int wants_reply = o->kind == RMA_GET || o->kind == RMA_CAS ||
                      win->flavor == MPI_WIN_FLAVOR_DYNAMIC || p->fetched != NULL;
    alignas(max_align_t) char small_req[1024], small_reply[1024];
    char *req = small_req, *reply = wants_reply ? small_reply : NULL;
    int rc = MPI_SUCCESS;

    /* a request holds the call, its runs and the data; a reply the answer
     * and the data */
    need = sizeof(pb_win_call_t) + p->nruns * sizeof(pb_win_run_t) + 2 * p->bytes;
    if (need > sizeof(small_req)) {
        need = need < PB_RSM_CALL_MAX ? need : PB_RSM_CALL_MAX;
        req = malloc(need);
        reply = wants_reply ? malloc(need) : NULL;
        if (req == NULL || (wants_reply && reply == NULL)) {
            free(req);
            free(reply);
            return MPI_ERR_NO_MEM;
        }
    }
    if (o->kind == RMA_ACC || o->kind == RMA_CAS) {
        const pb_datatype_t *u = pb_eng_type_of_basic(p->kind);

        unit = pb_eng_type_size(u);
        ext = padded ? (size_t)pb_eng_type_extent(u) : unit;
    }
    do {
        pb_win_call_t *call = (pb_win_call_t *)req;
        pb_win_run_t *runs = (pb_win_run_t *)(req + sizeof(*call));
        size_t room = RMA_CALL_DATA, piece = 0, nr = 0;
        char *data;

        *call = (pb_win_call_t){.basic = (uint32_t)p->kind, .op = (uint64_t)(uintptr_t)o->op};
        call->kind = o->kind == RMA_PUT   ? PB_WIN_CALL_PUT
                     : o->kind == RMA_GET ? PB_WIN_CALL_GET
                     : o->kind == RMA_ACC ? PB_WIN_CALL_ACC
                                          : PB_WIN_CALL_CAS;
        call->arg = o->kind == RMA_ACC && p->fetched != NULL;
        /* the runs of this call; the data follows them, so count first */
        while (run < p->nruns && room >= unit + sizeof(pb_win_run_t)) {
            uint64_t left = p->runs[run].len - run_done;
            size_t fit = (room - sizeof(pb_win_run_t)) / unit; /* elements that fit */
            uint64_t take = left / ext <= fit ? left : (uint64_t)fit * ext;

            runs[nr++] = (pb_win_run_t){p->runs[run].off + run_done, take};
            room -= sizeof(pb_win_run_t) + (size_t)(take / ext * unit);
            piece += (size_t)(take / ext * unit);
            run_done += take;
            if (run_done == p->runs[run].len) {
                run++;
                run_done = 0;
            }
        }
        call->nruns = (uint32_t)nr;
        data = (char *)(runs + nr);
        if (p->data != NULL) {
            memcpy(data, p->data + pos, piece);
            if (o->kind == RMA_CAS)
                memcpy(data + piece, o->compare, piece);
        }
        rc = tcp_exchange(win, o->target, req,
                          (size_t)(data - req) +
                              (p->data != NULL ? (o->kind == RMA_CAS ? 2 * piece : piece) : 0),
                          wants_reply, p->fetched != NULL ? p->fetched + pos : NULL,
                          p->fetched != NULL ? piece : 0, reply);
        pos += piece;
    } while (rc == MPI_SUCCESS && run < p->nruns);
    if (req != small_req) {
        free(req);
        free(reply);
    }
    return rc;
}

/* Whether @o on @win may run now: an access epoch that covers its target. */
int pb_win_may_access(const pb_win_t *win, int rank)
{
    switch (win->epoch) {
    case PB_WIN_EPOCH_FENCE:
    case PB_WIN_EPOCH_LOCK_ALL: return 1;
    case PB_WIN_EPOCH_LOCK: return win->targets[rank].lock != 0;
    case PB_WIN_EPOCH_START:
        for (int i = 0; i < win->nstart; i++) {
            if (win->start_ranks[i] == rank)
                return 1;
        }
        return 0;
    default: return 0;
    }
}

/* Run one RMA operation: check, resolve, move, unpack what came back. */
static int rma_run(pb_win_t *win, const char *func, const rma_op_t *o)
{
    pb_win_target_t *t;
    rma_plan_t plan;
    int rc;

    if (o->target == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (o->target < 0 || o->target >= win->size)
        return pb_mpi_win_raise(win, MPI_ERR_RANK, func,
                                "target_rank %d is not a rank of the window (0..%d)", o->target,
                                win->size - 1);
    if (!pb_win_may_access(win, o->target))
        return pb_mpi_win_raise(win, MPI_ERR_RMA_SYNC, func,
                                "no access epoch toward rank %d is open (fence, MPI_Win_start, "
                                "MPI_Win_lock or MPI_Win_lock_all first)",
                                o->target);
    rc = plan_make(win, func, o, &plan);
    if (rc != MPI_SUCCESS)
        return rc;
    if (plan.bytes == 0 && o->kind != RMA_CAS) {
        plan_free(&plan);
        return MPI_SUCCESS;
    }
    t = &win->targets[o->target];
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC && t->mode != PB_WIN_TCP) {
        /* the target's attached memory, from its control block on this
         * node (a target elsewhere checks itself) */
        for (size_t i = 0; i < plan.nruns && rc == MPI_SUCCESS; i++) {
            if (!pb_win_regions_contain(t->ctl, plan.runs[i].off, plan.runs[i].len))
                rc = MPI_ERR_RMA_RANGE;
        }
    }
    if (rc != MPI_SUCCESS) {
        /* reported below */
    } else if (t->mode == PB_WIN_DIRECT) {
        path_direct(o, &plan, win->flavor == MPI_WIN_FLAVOR_DYNAMIC ? NULL : t->base, t->ctl,
                    win->hw_atomics);
    } else if (t->mode == PB_WIN_CMA) {
        rc = path_cma(o, &plan, t);
        if (rc < 0) {
            t->mode = PB_WIN_TCP; /* the kernel refuses: from now on through the target */
            rc = MPI_SUCCESS;
        }
    }
    if (t->mode == PB_WIN_TCP && rc == MPI_SUCCESS) {
        batch_mark_t mark = batch_mark(t);

        rc = path_tcp(win, o, &plan);
        if (rc == MPI_SUCCESS && plan.fetched != NULL && pb_win_batch_pending(t)) {
            void *dst = o->kind == RMA_GET ? (void *)o->origin : o->result;

            /* filled when the batch runs */
            rc = defer_result(t, &plan, dst, o->kind == RMA_GET ? o->ocount : o->rcount,
                              o->kind == RMA_GET ? plan.otype : plan.rtype);
        }
        if (rc != MPI_SUCCESS)
            batch_rewind(t, &mark); /* nothing left pointing into the plan */
    }
    if (rc == MPI_SUCCESS && plan.fetched != NULL) {
        void *dst = o->kind == RMA_GET ? (void *)o->origin : o->result;
        MPI_Count count = o->kind == RMA_GET ? o->ocount : o->rcount;
        pb_datatype_t *type = o->kind == RMA_GET ? plan.otype : plan.rtype;

        pb_eng_type_unpack_range(plan.fetched, plan.bytes, dst, count, type, 0);
    }
    plan_free(&plan);
    if (rc == MPI_SUCCESS)
        return rc;
    return pb_mpi_win_raise(win, rc, func,
                            rc == MPI_ERR_RMA_RANGE
                                ? "rank %d: the target's memory is not in the window"
                            : rc == MPI_ERR_OTHER ? "rank %d cannot be reached (see the log)"
                                                  : "rank %d refused the operation",
                            o->target);
}

/* ---- the short path: one predefined datatype toward memory mapped here ----------------- */

/*
 * Most operations on a node move a few elements of one predefined type
 * into a window mapped here: they skip the plan (runs, packing) and go
 * straight to memory.  Anything else, and every error, takes rma_run.
 */

/* The predefined, contiguous datatype @h (its one basic kind in *@kind_p),
 * or NULL. */
static PB_ALWAYS_INLINE const pb_datatype_t *short_type(MPI_Datatype h, pb_basic_t *kind_p)
{
    /* the last one asked for: predefined types never change */
    static MPI_Datatype recent_h;
    static const pb_datatype_t *recent;
    static pb_basic_t recent_kind;
    const pb_datatype_t *t;

    if (h != recent_h || recent == NULL) {
        if ((uintptr_t)h >= PB_ENG_HANDLE_INT_BASE)
            return NULL;
        t = pb_eng_type_predefined((uintptr_t)h);
        if (t == NULL || !pb_eng_type_is_contiguous(t) || pb_eng_type_true_lb(t) != 0)
            return NULL;
        recent_h = h;
        recent = t;
        recent_kind = pb_eng_type_basic(t);
    }
    *kind_p = recent_kind;
    return recent;
}

/* Whether @op may accumulate elements of the predefined @type (of basic
 * @kind), its loop (*@loop_p; NULL for MPI_REPLACE and MPI_NO_OP), and
 * whether it is a hardware atomic on windows with hw_atomics (*@hw_p): the
 * checks of rma_run, remembered for the last pair that passed them. */
static PB_ALWAYS_INLINE int short_op_ok(MPI_Op op, MPI_Datatype type, pb_basic_t kind,
                                        pb_mpi_op_loop_t **loop_p, int *hw_p)
{
    static MPI_Op recent_op;
    static MPI_Datatype recent_type;
    static pb_mpi_op_loop_t *recent_loop;
    static int recent_hw;

    if (op != recent_op || type != recent_type || op == NULL) {
        if (!pb_mpi_op_is_predefined(op) || pb_mpi_op_check_accumulate(op, type) != MPI_SUCCESS)
            return 0;
        recent_op = op;
        recent_type = type;
        recent_loop = pb_mpi_op_loop(op, kind);
        recent_hw = op != MPI_NO_OP && pb_win_hw_op(op, kind);
    }
    *loop_p = recent_loop;
    *hw_p = recent_hw;
    return 1;
}

/* Where @bytes at displacement @disp of @target's window are, when the
 * target is mapped here and an access epoch covers it; else NULL. */
static PB_ALWAYS_INLINE char *short_slot(pb_win_t *w, int target, MPI_Aint disp, size_t bytes,
                                         pb_win_target_t **t_p)
{
    pb_win_target_t *t;
    uint64_t off;

    if (target < 0 || target >= w->size || disp < 0 || w->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        return NULL;
    t = &w->targets[target];
    if (t->mode != PB_WIN_DIRECT)
        return NULL;
    /* the epochs of most programs first, without a call */
    if (w->epoch != PB_WIN_EPOCH_LOCK_ALL && !(w->epoch == PB_WIN_EPOCH_LOCK && t->lock != 0) &&
        !pb_win_may_access(w, target))
        return NULL;
    off = (uint64_t)disp * (uint64_t)t->disp_unit;
    if ((uint64_t)disp > t->size || off > t->size || bytes > t->size - off)
        return NULL;
    *t_p = t;
    return t->base + off;
}

/* MPI_Put and MPI_Get of @count elements of one predefined type on both
 * sides toward a mapped target.  @return 1 when done, 0 to take rma_run. */
static PB_ALWAYS_INLINE int short_copy(pb_win_t *w, int put, void *origin, MPI_Count origin_count,
                                       MPI_Datatype origin_type, int target, MPI_Aint disp,
                                       MPI_Count target_count, MPI_Datatype target_type)
{
    pb_basic_t kind;
    const pb_datatype_t *t = short_type(origin_type, &kind);
    pb_win_target_t *tgt;
    size_t bytes;
    char *slot;

    if (t == NULL || origin_type != target_type || origin_count != target_count ||
        origin_count <= 0 || origin == NULL)
        return 0;
    bytes = (size_t)origin_count * pb_eng_type_size(t);
    slot = short_slot(w, target, disp, bytes, &tgt);
    if (slot == NULL)
        return 0;
    if (put)
        pb_eng_copy(slot, origin, bytes);
    else
        pb_eng_copy(origin, slot, bytes);
    return 1;
}

/* MPI_Fetch_and_op (@compare NULL) and MPI_Compare_and_swap of one
 * element toward a mapped target.  @return 1 when done, 0 to take rma_run. */
static PB_ALWAYS_INLINE int short_atomic(pb_win_t *w, const void *origin, const void *compare,
                                         void *result, MPI_Datatype type, int target, MPI_Aint disp,
                                         MPI_Op op)
{
    pb_basic_t kind;
    const pb_datatype_t *t = short_type(type, &kind);
    pb_mpi_op_loop_t *loop = NULL;
    pb_win_target_t *tgt;
    int hw;
    size_t bytes;
    char *slot;

    if (t == NULL || kind == PB_BASIC_NONE || result == NULL || (origin == NULL && op != MPI_NO_OP))
        return 0;
    if (compare != NULL)
        hw = pb_win_hw_kind(kind);
    else if (!short_op_ok(op, type, kind, &loop, &hw))
        return 0;
    bytes = pb_eng_type_size(t);
    slot = short_slot(w, target, disp, bytes, &tgt);
    if (slot == NULL)
        return 0;
    if (hw && w->hw_atomics && ((uintptr_t)slot & (bytes - 1)) == 0) {
        /* one instruction, without the lock (win.h) */
        if (compare != NULL)
            pb_win_hw_cas(slot, bytes, origin, compare, result);
        else
            pb_win_hw_apply(op, bytes, slot, origin, result);
        return 1;
    }
    pb_win_acc_lock(tgt->ctl);
    if (compare != NULL) {
        pb_win_cas_apply(kind, slot, bytes, origin, compare, result, w->hw_atomics);
    } else if (op == MPI_NO_OP && w->hw_atomics && pb_win_hw_kind(kind) &&
               ((uintptr_t)slot & (bytes - 1)) == 0) {
        /* a load that others' hardware atomics may meet */
        pb_win_hw_apply(op, bytes, slot, NULL, result);
    } else {
        memcpy(result, slot, bytes);
        if (loop != NULL)
            loop(origin, slot, 1);
        else if (op == MPI_REPLACE)
            memcpy(slot, origin, bytes);
    }
    pb_win_acc_unlock(tgt->ctl);
    return 1;
}

/* ---- the MPI functions ------------------------------------------------------------------ */

int pb_mpi_put_impl(const char *func, const void *origin_addr, MPI_Count origin_count,
                    MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                    MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win, pb_win_t *w)
{
    rma_op_t o;

    pb_eng_stat_add(&pb_eng_stats.rma_calls[PB_ENG_RMA_PUT], 1);
    if (short_copy(w, 1, (void *)origin_addr, origin_count, origin_datatype, target_rank,
                   target_disp, target_count, target_datatype))
        return MPI_SUCCESS;
    o = (rma_op_t){.kind = RMA_PUT,
                   .origin = origin_addr,
                   .ocount = origin_count,
                   .otype_h = origin_datatype,
                   .target = target_rank,
                   .disp = target_disp,
                   .tcount = target_count,
                   .ttype_h = target_datatype,
                   .op = MPI_REPLACE};

    return rma_run(w, func, &o);
}

int pb_mpi_get_impl(const char *func, void *origin_addr, MPI_Count origin_count,
                    MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                    MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win, pb_win_t *w)
{
    rma_op_t o;

    pb_eng_stat_add(&pb_eng_stats.rma_calls[PB_ENG_RMA_GET], 1);
    if (short_copy(w, 0, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                   target_count, target_datatype))
        return MPI_SUCCESS;
    o = (rma_op_t){.kind = RMA_GET,
                   .origin = origin_addr,
                   .ocount = origin_count,
                   .otype_h = origin_datatype,
                   .target = target_rank,
                   .disp = target_disp,
                   .tcount = target_count,
                   .ttype_h = target_datatype,
                   .op = MPI_REPLACE};

    return rma_run(w, func, &o);
}

int pb_mpi_accumulate_impl(const char *func, const void *origin_addr, MPI_Count origin_count,
                           MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                           MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                           MPI_Win win, pb_win_t *w)
{
    rma_op_t o = {.kind = RMA_ACC,
                  .origin = origin_addr,
                  .ocount = origin_count,
                  .otype_h = origin_datatype,
                  .target = target_rank,
                  .disp = target_disp,
                  .tcount = target_count,
                  .ttype_h = target_datatype,
                  .op = op};

    pb_eng_stat_add(&pb_eng_stats.rma_calls[PB_ENG_RMA_ACCUMULATE], 1);
    if (op == MPI_NO_OP)
        return pb_mpi_win_raise(w, MPI_ERR_OP, func, "MPI_NO_OP is for MPI_Get_accumulate");
    return rma_run(w, func, &o);
}

int pb_mpi_get_accumulate_impl(const char *func, const void *origin_addr, MPI_Count origin_count,
                               MPI_Datatype origin_datatype, void *result_addr,
                               MPI_Count result_count, MPI_Datatype result_datatype,
                               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                               MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, pb_win_t *w)
{
    rma_op_t o = {.kind = RMA_ACC,
                  .origin = op == MPI_NO_OP ? NULL : origin_addr,
                  .ocount = origin_count,
                  .otype_h = origin_datatype,
                  .result = result_addr,
                  .rcount = result_count,
                  .rtype_h = result_datatype,
                  .target = target_rank,
                  .disp = target_disp,
                  .tcount = target_count,
                  .ttype_h = target_datatype,
                  .op = op};

    pb_eng_stat_add(&pb_eng_stats.rma_calls[PB_ENG_RMA_GET_ACCUMULATE], 1);
    if (result_addr == NULL && result_count > 0)
        return pb_mpi_win_raise(w, MPI_ERR_BUFFER, func, "result_addr is NULL");
    return rma_run(w, func, &o);
}

int pb_mpi_fetch_and_op_impl(const char *func, const void *origin_addr, void *result_addr,
                             MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                             MPI_Op op, MPI_Win win, pb_win_t *w)
{
    rma_op_t o;

    pb_eng_stat_add(&pb_eng_stats.rma_calls[PB_ENG_RMA_FETCH_AND_OP], 1);
    if (short_atomic(w, origin_addr, NULL, result_addr, datatype, target_rank, target_disp, op))
        return MPI_SUCCESS;
    o = (rma_op_t){.kind = RMA_ACC,
                   .origin = op == MPI_NO_OP ? NULL : origin_addr,
                   .ocount = 1,
                   .otype_h = datatype,
                   .result = result_addr,
                   .rcount = 1,
                   .rtype_h = datatype,
                   .target = target_rank,
                   .disp = target_disp,
                   .tcount = 1,
                   .ttype_h = datatype,
                   .op = op};
    if (result_addr == NULL || (origin_addr == NULL && op != MPI_NO_OP))
        return pb_mpi_win_raise(w, MPI_ERR_BUFFER, func, "%s is NULL",
                                result_addr == NULL ? "result_addr" : "origin_addr");
    return rma_run(w, func, &o);
}

int pb_mpi_compare_and_swap_impl(const char *func, const void *origin_addr,
                                 const void *compare_addr, void *result_addr, MPI_Datatype datatype,
                                 int target_rank, MPI_Aint target_disp, MPI_Win win, pb_win_t *w)
{
    rma_op_t o = {.kind = RMA_CAS,
                  .origin = origin_addr,
                  .ocount = 1,
                  .otype_h = datatype,
                  .result = result_addr,
                  .rcount = 1,
                  .rtype_h = datatype,
                  .compare = compare_addr,
                  .target = target_rank,
                  .disp = target_disp,
                  .tcount = 1,
                  .ttype_h = datatype,
                  .op = MPI_REPLACE};
    pb_datatype_t *t = pb_mpi_datatype(datatype);

    pb_eng_stat_add(&pb_eng_stats.rma_calls[PB_ENG_RMA_COMPARE_AND_SWAP], 1);
    if (origin_addr == NULL || compare_addr == NULL || result_addr == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_BUFFER, func, "a buffer is NULL");
    if (t == NULL || !t->predefined || pb_eng_type_basic(t) == PB_BASIC_NONE ||
        pb_win_kind_padded(pb_eng_type_basic(t)))
        return pb_mpi_win_raise(w, MPI_ERR_TYPE, func,
                                "the datatype must be a predefined one of one element");
    if (short_atomic(w, origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp,
                     MPI_REPLACE))
        return MPI_SUCCESS;
    return rma_run(w, func, &o);
}

/* The request-based forms: the operation is done (locally complete) when
 * they return, so their requests are complete at once.  They belong to
 * passive-target epochs. */
static int request_for(pb_win_t *w, const char *func, MPI_Request *request)
{
    if (request == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "request is NULL");
    if (w->epoch != PB_WIN_EPOCH_LOCK && w->epoch != PB_WIN_EPOCH_LOCK_ALL)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_SYNC, func,
                                "request-based operations need a passive-target epoch");
    return MPI_SUCCESS;
}

/* The operation toward @target was made (@rc): it completes before the
 * call returns (its batch runs now, the lock kept), and its request is
 * complete at once. */
static int request_done(pb_win_t *w, const char *func, int target, int rc, MPI_Request *request)
{
    pb_win_target_t *t;

    if (rc != MPI_SUCCESS)
        return rc;
    if (target >= 0 && target < w->size) {
        t = &w->targets[target];
        if (t->mode == PB_WIN_TCP && pb_win_batch_pending(t)) {
            rc = pb_win_batch_run(w, target, 0);
            if (rc != MPI_SUCCESS)
                return pb_mpi_win_raise(w, rc, func, "rank %d did not complete the operation",
                                        target);
        }
    }
    *request = pb_eng_request_done(0);
    if (*request == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_NO_MEM, func, "out of memory for the request");
    return MPI_SUCCESS;
}

int pb_mpi_rput_impl(const char *func, const void *origin_addr, MPI_Count origin_count,
                     MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                     MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win,
                     MPI_Request *request, pb_win_t *w)
{
    int rc = request_for(w, func, request);

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_put_impl(func, origin_addr, origin_count, origin_datatype, target_rank,
                             target_disp, target_count, target_datatype, win, w);
    return request_done(w, func, target_rank, rc, request);
}

int pb_mpi_rget_impl(const char *func, void *origin_addr, MPI_Count origin_count,
                     MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                     MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win,
                     MPI_Request *request, pb_win_t *w)
{
    int rc = request_for(w, func, request);

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_get_impl(func, origin_addr, origin_count, origin_datatype, target_rank,
                             target_disp, target_count, target_datatype, win, w);
    return request_done(w, func, target_rank, rc, request);
}

int pb_mpi_raccumulate_impl(const char *func, const void *origin_addr, MPI_Count origin_count,
                            MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                            MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                            MPI_Win win, MPI_Request *request, pb_win_t *w)
{
    int rc = request_for(w, func, request);

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_accumulate_impl(func, origin_addr, origin_count, origin_datatype, target_rank,
                                    target_disp, target_count, target_datatype, op, win, w);
    return request_done(w, func, target_rank, rc, request);
}

int pb_mpi_rget_accumulate_impl(const char *func, const void *origin_addr, MPI_Count origin_count,
                                MPI_Datatype origin_datatype, void *result_addr,
                                MPI_Count result_count, MPI_Datatype result_datatype,
                                int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                                MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                                MPI_Request *request, pb_win_t *w)
{
    int rc = request_for(w, func, request);

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_get_accumulate_impl(func, origin_addr, origin_count, origin_datatype,
                                        result_addr, result_count, result_datatype, target_rank,
                                        target_disp, target_count, target_datatype, op, win, w);
    return request_done(w, func, target_rank, rc, request);
}
