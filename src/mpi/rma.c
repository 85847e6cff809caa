/*
 * The RMA communication calls (MPI_Put, MPI_Get, MPI_Accumulate and kin,
 * win.h), their three paths to a target (direct, CMA, RSM calls), and the
 * handler that applies the RSM calls at the target on its service thread.
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
#include <sched.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/datatype.h"
#include "mpi/engine/channel.h"
#include "mpi/engine/cma.h"
#include "mpi/engine/engine.h"
#include "mpi/engine/path.h"
#include "mpi/op.h"
#include "mpi/win.h"
#include "util/compiler.h"
#include "util/log.h"

/* the most packed bytes one RSM call carries or brings back */
#define RMA_CALL_DATA (PB_RSM_CALL_MAX - 64 * 1024)

/* ---- locks in control blocks ---------------------------------------------------- */

/* Spin a little, then yield: the holder may be a process without a core. */
static void backoff(unsigned *spins)
{
    if (++*spins < 64)
        pb_cpu_relax();
    else
        sched_yield();
}

void pb_win_acc_lock(pb_win_ctl_t *ctl)
{
    unsigned spins = 0;

    for (;;) {
        uint32_t free_word = 0;

        if (atomic_compare_exchange_weak_explicit(&ctl->acc_lock, &free_word, 1,
                                                  memory_order_acquire, memory_order_relaxed))
            return;
        while (atomic_load_explicit(&ctl->acc_lock, memory_order_relaxed) != 0)
            backoff(&spins);
    }
}

void pb_win_acc_unlock(pb_win_ctl_t *ctl)
{
    atomic_store_explicit(&ctl->acc_lock, 0, memory_order_release);
}

int pb_win_lock_try(pb_win_ctl_t *ctl, int lock_type)
{
    uint64_t word = atomic_load_explicit(&ctl->lock, memory_order_relaxed);

    if (lock_type == MPI_LOCK_EXCLUSIVE) {
        word = 0;
        return atomic_compare_exchange_strong_explicit(&ctl->lock, &word, PB_WIN_LOCK_EXCLUSIVE,
                                                       memory_order_acquire, memory_order_relaxed);
    }
    while ((word & PB_WIN_LOCK_EXCLUSIVE) == 0) {
        if (atomic_compare_exchange_weak_explicit(&ctl->lock, &word, word + 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return 1;
    }
    return 0;
}

void pb_win_lock_release(pb_win_ctl_t *ctl, int lock_type)
{
    if (lock_type == MPI_LOCK_EXCLUSIVE)
        atomic_store_explicit(&ctl->lock, 0, memory_order_release);
    else
        atomic_fetch_sub_explicit(&ctl->lock, 1, memory_order_release);
}

/* ---- applying accumulates to memory --------------------------------------------- */

/* Whether the elements of @kind are pairs with padding (see the top). */
static int kind_has_padding(pb_basic_t kind)
{
    const pb_datatype_t *unit = pb_eng_type_of_basic(kind);

    return unit != NULL && !pb_eng_type_is_contiguous(unit);
}

/* Packed bytes of a run of @len bytes of the target's memory. */
static size_t run_packed(pb_basic_t kind, uint64_t len)
{
    const pb_datatype_t *unit;

    if (kind == PB_BASIC_NONE || !kind_has_padding(kind))
        return (size_t)len;
    unit = pb_eng_type_of_basic(kind);
    return (size_t)(len / (uint64_t)pb_eng_type_extent(unit)) * pb_eng_type_size(unit);
}

/* Where offset @off of memory @mem is; @mem NULL: @off is an address. */
static char *run_at(char *mem, uint64_t off)
{
    return mem != NULL ? mem + off : (char *)(uintptr_t)off;
}

/* Accumulate with @op the packed elements @in (NULL: none, MPI_NO_OP) into
 * the runs of @mem, storing their previous contents packed at @old first
 * (when not NULL).  Caller holds the accumulate lock. */
static void runs_apply(MPI_Op op, pb_basic_t kind, char *mem, const pb_win_run_t *runs,
                       size_t nruns, const char *in, char *old)
{
    const pb_datatype_t *unit = pb_eng_type_of_basic(kind);
    size_t usize = pb_eng_type_size(unit), uext = (size_t)pb_eng_type_extent(unit);
    int padded = kind_has_padding(kind);
    size_t pos = 0;

    for (size_t i = 0; i < nruns; i++) {
        char *at = run_at(mem, runs[i].off);

        if (!padded) {
            if (old != NULL)
                memcpy(old + pos, at, runs[i].len);
            if (in != NULL)
                pb_mpi_op_apply_basic(op, kind, in + pos, at, runs[i].len / usize);
            pos += runs[i].len;
            continue;
        }
        for (size_t k = 0; k < runs[i].len / uext; k++, pos += usize) {
            alignas(max_align_t) char element[64];

            if (old != NULL)
                pb_eng_type_pack_range(at + k * uext, 1, unit, 0, old + pos, usize);
            if (in != NULL) {
                pb_eng_type_unpack_range(in + pos, usize, element, 1, unit, 0);
                pb_mpi_op_apply_basic(op, kind, element, at + k * uext, 1);
            }
        }
    }
}

/* Compare-and-swap one element of @size bytes at @at: @old gets its value;
 * it becomes @value when it equals @compare.  Caller holds the lock. */
static void cas_apply(char *at, size_t size, const void *value, const void *compare, void *old)
{
    memcpy(old, at, size);
    if (memcmp(at, compare, size) == 0)
        memcpy(at, value, size);
}

/* ---- the target's side of RSM calls (the service thread) -------------------------- */

/* Where run @run of this rank's window is in its memory, or NULL when it
 * is not inside the window (a dynamic window's attached memory). */
static char *own_run(pb_win_t *win, const pb_win_run_t *run)
{
    if (win->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        if (run->off > win->bytes || run->len > win->bytes - run->off)
            return NULL;
        return (char *)win->base + run->off;
    }
    if (pb_win_regions_contain(win->ctl, run->off, run->len))
        return (char *)(uintptr_t)run->off;
    return NULL;
}

static int32_t handle_call(pb_win_t *win, const pb_win_call_t *call, const pb_win_run_t *runs,
                           const char *data, size_t data_len, char *out, size_t out_max,
                           size_t *out_len)
{
    size_t packed = 0;
    pb_basic_t kind = (pb_basic_t)call->basic;

    switch (call->kind) {
    case PB_WIN_CALL_LOCK: return pb_win_lock_try(win->ctl, (int)call->arg);
    case PB_WIN_CALL_UNLOCK: pb_win_lock_release(win->ctl, (int)call->arg); return MPI_SUCCESS;
    case PB_WIN_CALL_COUNT:
        if (call->arg >= 2u * (unsigned)win->size)
            return MPI_ERR_ARG;
        atomic_fetch_add_explicit(&win->ctl->counts[call->arg], 1, memory_order_release);
        return MPI_SUCCESS;
    default: break;
    }
    if ((call->kind == PB_WIN_CALL_ACC || call->kind == PB_WIN_CALL_CAS) &&
        (kind <= PB_BASIC_NONE || kind >= PB_BASIC_COUNT_OF))
        return MPI_ERR_TYPE;
    for (uint32_t i = 0; i < call->nruns; i++) {
        if (own_run(win, &runs[i]) == NULL)
            return MPI_ERR_RMA_RANGE;
        packed += call->kind == PB_WIN_CALL_ACC ? run_packed(kind, runs[i].len) : runs[i].len;
    }
    switch (call->kind) {
    case PB_WIN_CALL_PUT:
        if (data_len != packed)
            return MPI_ERR_ARG;
        for (uint32_t i = 0; i < call->nruns; i++) {
            memcpy(own_run(win, &runs[i]), data, runs[i].len);
            data += runs[i].len;
        }
        return MPI_SUCCESS;
    case PB_WIN_CALL_GET:
        if (packed > out_max)
            return MPI_ERR_ARG;
        for (uint32_t i = 0; i < call->nruns; i++) {
            memcpy(out + *out_len, own_run(win, &runs[i]), runs[i].len);
            *out_len += runs[i].len;
        }
        return MPI_SUCCESS;
    case PB_WIN_CALL_ACC:
        if ((data_len != packed && data_len != 0) || (call->arg && packed > out_max))
            return MPI_ERR_ARG;
        pb_win_acc_lock(win->ctl);
        for (uint32_t i = 0; i < call->nruns; i++) {
            pb_win_run_t at = {(uint64_t)(uintptr_t)own_run(win, &runs[i]), runs[i].len};
            size_t n = run_packed(kind, runs[i].len);

            runs_apply((MPI_Op)(uintptr_t)call->op, kind, NULL, &at, 1, data_len != 0 ? data : NULL,
                       call->arg ? out + *out_len : NULL);
            data += n;
            *out_len += call->arg ? n : 0;
        }
        pb_win_acc_unlock(win->ctl);
        return MPI_SUCCESS;
    case PB_WIN_CALL_CAS:
        if (call->nruns != 1 || data_len != 2 * runs[0].len || runs[0].len > out_max)
            return MPI_ERR_ARG;
        pb_win_acc_lock(win->ctl);
        cas_apply(own_run(win, &runs[0]), runs[0].len, data, data + runs[0].len, out);
        pb_win_acc_unlock(win->ctl);
        *out_len = runs[0].len;
        return MPI_SUCCESS;
    default: return MPI_ERR_ARG;
    }
}

void pb_win_call_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                         size_t request_len, void *reply, size_t reply_max, size_t *reply_len)
{
    pb_win_t *win = arg;
    pb_win_call_t call;
    pb_win_reply_t answer = {0};
    size_t out_len = 0, head;

    *reply_len = 0;
    if (reply == NULL || reply_max < sizeof(answer)) {
        /* a call without reply (PB_RSM_CALL_NO_REPLY): nothing goes back */
        reply = NULL;
        reply_max = sizeof(answer);
    }
    if (request_len < sizeof(call))
        return;
    memcpy(&call, request, sizeof(call));
    head = sizeof(call) + (size_t)call.nruns * sizeof(pb_win_run_t);
    if (call.nruns > request_len / sizeof(pb_win_run_t) || head > request_len) {
        answer.status = MPI_ERR_ARG;
    } else {
        pb_win_run_t *runs = malloc(call.nruns * sizeof(pb_win_run_t) + 1);

        if (runs == NULL) {
            answer.status = MPI_ERR_NO_MEM;
        } else {
            memcpy(runs, (const char *)request + sizeof(call), call.nruns * sizeof(*runs));
            answer.status =
                handle_call(win, &call, runs, (const char *)request + head, request_len - head,
                            reply != NULL ? (char *)reply + sizeof(answer) : NULL,
                            reply_max - sizeof(answer), &out_len);
            free(runs);
        }
    }
    if (reply == NULL) {
        if (answer.status != MPI_SUCCESS)
            pb_warn("window: a peer's operation failed here (error class %d)", answer.status);
        return;
    }
    memcpy(reply, &answer, sizeof(answer));
    *reply_len = sizeof(answer) + out_len;
}

/* ---- the origin's side: reaching a target ----------------------------------------- */

/* A tcp controller for this window's imports. */
static rsmapi_controller_handle_t tcp_controller(pb_win_t *win)
{
    if (win->tcp_ctl == NULL) {
        if (pb_eng_channel.tcp_ctl != NULL)
            win->tcp_ctl = pb_eng_channel.tcp_ctl;
        else if (rsm_get_controller("tcp", &win->tcp_ctl) != RSM_SUCCESS)
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
        atomic_thread_fence(memory_order_seq_cst);
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
    size_t bytes; /* packed bytes moved (of the target's layout) */
    pb_win_run_t *runs;
    size_t nruns;
    const char *data; /* the origin's packed data (PUT, ACC, CAS) */
    char *data_own;   /* ... when packed here */
    char *fetched;    /* packed target contents (GET, ACC with a result, CAS) */
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
static int runs_make(const pb_datatype_t *t, MPI_Count count, uint64_t off, pb_win_run_t **runs_p,
                     size_t *nruns_p)
{
    size_t cap = 8, n = 0;
    pb_win_run_t *runs;
    MPI_Aint extent = pb_eng_type_extent(t);

    *runs_p = NULL;
    *nruns_p = 0;
    if (count == 0 || pb_eng_type_size(t) == 0)
        return MPI_SUCCESS;
    runs = malloc(cap * sizeof(*runs));
    if (runs == NULL)
        return MPI_ERR_NO_MEM;
    if (pb_eng_type_is_contiguous(t)) {
        runs[0] = (pb_win_run_t){off + (uint64_t)pb_eng_type_true_lb(t),
                                 (uint64_t)count * pb_eng_type_size(t)};
        *runs_p = runs;
        *nruns_p = 1;
        return MPI_SUCCESS;
    }
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
    free(p->runs);
    free(p->data_own);
    free(p->fetched);
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
        if (kind_has_padding(p->kind) && p->ttype != pb_eng_type_of_basic(p->kind))
            return pb_mpi_win_raise(win, MPI_ERR_TYPE, func,
                                    "Postbox accumulates padded pair types (MPI_DOUBLE_INT...) "
                                    "only into arrays of the pair type itself");
    }
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
            lo = (MPI_Aint)off + pb_eng_type_true_lb(p->ttype);
            hi = (MPI_Aint)off + (MPI_Aint)(o->tcount - 1) * pb_eng_type_extent(p->ttype) +
                 p->ttype->true_ub;
            if (lo < 0 || hi > (MPI_Aint)t->size)
                return pb_mpi_win_raise(
                    win, MPI_ERR_RMA_RANGE, func,
                    "bytes [%ld, %ld) are outside rank %d's window of %lu bytes", (long)lo,
                    (long)hi, o->target, (unsigned long)t->size);
        }
    }
    if (kind_has_padding(p->kind)) {
        p->runs = malloc(sizeof(*p->runs));
        if (p->runs == NULL)
            return pb_mpi_win_raise(win, MPI_ERR_NO_MEM, func, "out of memory");
        p->runs[0] =
            (pb_win_run_t){off, (uint64_t)o->tcount * (uint64_t)pb_eng_type_extent(p->ttype)};
        p->nruns = o->tcount > 0;
    } else if (runs_make(p->ttype, o->tcount, off, &p->runs, &p->nruns) != MPI_SUCCESS) {
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
        p->fetched = malloc(o->kind == RMA_CAS ? 2 * p->bytes : p->bytes);
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
static void path_direct(const rma_op_t *o, rma_plan_t *p, char *mem, pb_win_ctl_t *ctl)
{
    size_t pos = 0;

    switch (o->kind) {
    case RMA_PUT:
        for (size_t i = 0; i < p->nruns; pos += p->runs[i].len, i++)
            memcpy(run_at(mem, p->runs[i].off), p->data + pos, p->runs[i].len);
        break;
    case RMA_GET:
        for (size_t i = 0; i < p->nruns; pos += p->runs[i].len, i++)
            memcpy(p->fetched + pos, run_at(mem, p->runs[i].off), p->runs[i].len);
        break;
    case RMA_ACC:
        pb_win_acc_lock(ctl);
        runs_apply(o->op, p->kind, mem, p->runs, p->nruns, p->data, p->fetched);
        pb_win_acc_unlock(ctl);
        break;
    case RMA_CAS:
        pb_win_acc_lock(ctl);
        cas_apply(run_at(mem, p->runs[0].off), p->bytes, p->data, o->compare, p->fetched);
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
                runs_apply(o->op, p->kind, copy, local, p->nruns, p->data, p->fetched);
            else
                cas_apply(copy, p->bytes, p->data, o->compare, p->fetched);
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

/* Through the target's service thread: the runs cut into calls of at
 * most RMA_CALL_DATA packed bytes, each element whole.  @return
 * MPI_SUCCESS, an error class the target answered, or MPI_ERR_OTHER. */
static int path_tcp(pb_win_t *win, const rma_op_t *o, rma_plan_t *p)
{
    size_t unit = 1, ext = 1, pos = 0, run = 0;
    uint64_t run_done = 0;
    int padded = o->kind == RMA_ACC && kind_has_padding(p->kind);
    int wants_reply = o->kind != RMA_PUT || win->flavor == MPI_WIN_FLAVOR_DYNAMIC ||
                      (o->kind == RMA_ACC && p->fetched != NULL);
    char *req = malloc(PB_RSM_CALL_MAX), *reply = wants_reply ? malloc(PB_RSM_CALL_MAX) : NULL;
    int rc = MPI_SUCCESS;

    if (req == NULL || (wants_reply && reply == NULL)) {
        free(req);
        free(reply);
        return MPI_ERR_NO_MEM;
    }
    if (o->kind == RMA_ACC || o->kind == RMA_CAS) {
        const pb_datatype_t *u = pb_eng_type_of_basic(p->kind);

        unit = pb_eng_type_size(u);
        ext = padded ? (size_t)pb_eng_type_extent(u) : unit;
    }
    do {
        pb_win_call_t *call = (pb_win_call_t *)req;
        pb_win_run_t *runs = (pb_win_run_t *)(req + sizeof(*call));
        size_t room = RMA_CALL_DATA, piece = 0, nr = 0, got = 0;
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
        rc = pb_win_call(win, o->target, req,
                         (size_t)(data - req) +
                             (p->data != NULL ? (o->kind == RMA_CAS ? 2 * piece : piece) : 0),
                         reply, PB_RSM_CALL_MAX, &got);
        if (rc == MPI_SUCCESS && reply != NULL) {
            pb_win_reply_t answer;

            memcpy(&answer, reply, sizeof(answer));
            rc = answer.status;
            if (rc == MPI_SUCCESS && p->fetched != NULL) {
                if (got != sizeof(answer) + piece)
                    rc = MPI_ERR_OTHER;
                else
                    memcpy(p->fetched + pos, reply + sizeof(answer), piece);
            }
        }
        pos += piece;
    } while (rc == MPI_SUCCESS && run < p->nruns);
    free(req);
    free(reply);
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
        path_direct(o, &plan, win->flavor == MPI_WIN_FLAVOR_DYNAMIC ? NULL : t->base, t->ctl);
    } else if (t->mode == PB_WIN_CMA) {
        rc = path_cma(o, &plan, t);
        if (rc < 0) {
            t->mode = PB_WIN_TCP; /* the kernel refuses: from now on through the target */
            rc = MPI_SUCCESS;
        }
    }
    if (t->mode == PB_WIN_TCP && rc == MPI_SUCCESS)
        rc = path_tcp(win, o, &plan);
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

/* ---- the MPI functions ------------------------------------------------------------------ */

int pb_mpi_put_impl(const char *func, const void *origin_addr, MPI_Count origin_count,
                    MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                    MPI_Count target_count, MPI_Datatype target_datatype, MPI_Win win, pb_win_t *w)
{
    rma_op_t o = {.kind = RMA_PUT,
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
    rma_op_t o = {.kind = RMA_GET,
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

    if (result_addr == NULL && result_count > 0)
        return pb_mpi_win_raise(w, MPI_ERR_BUFFER, func, "result_addr is NULL");
    return rma_run(w, func, &o);
}

int pb_mpi_fetch_and_op_impl(const char *func, const void *origin_addr, void *result_addr,
                             MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                             MPI_Op op, MPI_Win win, pb_win_t *w)
{
    rma_op_t o = {.kind = RMA_ACC,
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

    if (origin_addr == NULL || compare_addr == NULL || result_addr == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_BUFFER, func, "a buffer is NULL");
    if (t == NULL || !t->predefined || pb_eng_type_basic(t) == PB_BASIC_NONE ||
        kind_has_padding(pb_eng_type_basic(t)))
        return pb_mpi_win_raise(w, MPI_ERR_TYPE, func,
                                "the datatype must be a predefined one of one element");
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

static int request_done(pb_win_t *w, const char *func, int rc, MPI_Request *request)
{
    if (rc != MPI_SUCCESS)
        return rc;
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
    return request_done(w, func, rc, request);
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
    return request_done(w, func, rc, request);
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
    return request_done(w, func, rc, request);
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
    return request_done(w, func, rc, request);
}
