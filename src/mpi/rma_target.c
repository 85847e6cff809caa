/*
 * The target's side of one-sided communication (win.h): the locks of a
 * control block, accumulates applied to memory (by any path: also by an
 * origin on the node, directly or by CMA), and the handler of the RSM
 * calls peers on other nodes send, run by the target's service thread or
 * by its own thread inside MPI.
 */
#include <sched.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/op.h"
#include "mpi/win.h"
#include "util/compiler.h"
#include "util/log.h"

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

/* ---- elements ------------------------------------------------------------------- */

/* Whether the elements of @kind are pairs with padding (see the top). */
int pb_win_kind_padded(pb_basic_t kind)
{
    const pb_datatype_t *unit = pb_eng_type_of_basic(kind);

    return unit != NULL && !pb_eng_type_is_contiguous(unit);
}

/* Packed bytes of a run of @len bytes of the target's memory. */
static size_t run_packed(pb_basic_t kind, uint64_t len)
{
    const pb_datatype_t *unit;

    if (kind == PB_BASIC_NONE || !pb_win_kind_padded(kind))
        return (size_t)len;
    unit = pb_eng_type_of_basic(kind);
    return (size_t)(len / (uint64_t)pb_eng_type_extent(unit)) * pb_eng_type_size(unit);
}

/* Where offset @off of memory @mem is; @mem NULL: @off is an address. */
char *pb_win_run_at(char *mem, uint64_t off)
{
    return mem != NULL ? mem + off : (char *)(uintptr_t)off;
}

/* ---- hardware atomics (win.h: hw_atomics) ---------------------------------------- */

int pb_win_hw_kind(pb_basic_t kind)
{
    switch (kind) {
    case PB_BASIC_INT:
    case PB_BASIC_UNSIGNED:
    case PB_BASIC_LONG:
    case PB_BASIC_UNSIGNED_LONG:
    case PB_BASIC_LONG_LONG:
    case PB_BASIC_UNSIGNED_LONG_LONG:
    case PB_BASIC_INT32:
    case PB_BASIC_UINT32:
    case PB_BASIC_INT64:
    case PB_BASIC_UINT64:
    case PB_BASIC_AINT:
    case PB_BASIC_OFFSET:
    case PB_BASIC_COUNT: {
        size_t size = pb_eng_type_size(pb_eng_type_of_basic(kind));

        return size == 4 || size == 8;
    }
    default: return 0;
    }
}

int pb_win_hw_op(MPI_Op op, pb_basic_t kind)
{
    return (op == MPI_SUM || op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR ||
            op == MPI_REPLACE || op == MPI_NO_OP) &&
           pb_win_hw_kind(kind);
}

/* Whether the @len bytes at @at are elements of @size bytes (a power of
 * two) each aligned to its size. */
static int hw_aligned(const char *at, uint64_t len, size_t size)
{
    return (((uintptr_t)at | len) & (size - 1)) == 0;
}

/* ---- applying accumulates to memory --------------------------------------------- */

void pb_win_runs_apply(MPI_Op op, pb_basic_t kind, char *mem, const pb_win_run_t *runs,
                       size_t nruns, const char *in, char *old, int hw)
{
    const pb_datatype_t *unit = pb_eng_type_of_basic(kind);
    size_t usize = pb_eng_type_size(unit), uext = (size_t)pb_eng_type_extent(unit);
    int padded = pb_win_kind_padded(kind);
    size_t pos = 0;

    hw = hw && pb_win_hw_op(op, kind);
    for (size_t i = 0; i < nruns; i++) {
        char *at = pb_win_run_at(mem, runs[i].off);

        if (hw && hw_aligned(at, runs[i].len, usize)) {
            for (uint64_t k = 0; k < runs[i].len; k += usize, pos += usize)
                pb_win_hw_apply(op, usize, at + k, in != NULL ? in + pos : NULL,
                                old != NULL ? old + pos : NULL);
            continue;
        }
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
            if (in != NULL && op == MPI_REPLACE) {
                /* the value and the index, not the padding */
                pb_eng_type_unpack_range(in + pos, usize, at + k * uext, 1, unit, 0);
            } else if (in != NULL) {
                pb_eng_type_unpack_range(in + pos, usize, element, 1, unit, 0);
                pb_mpi_op_apply_basic(op, kind, element, at + k * uext, 1);
            }
        }
    }
}

void pb_win_cas_apply(pb_basic_t kind, char *at, size_t size, const void *value,
                      const void *compare, void *old, int hw)
{
    if (hw && pb_win_hw_kind(kind) && hw_aligned(at, size, size)) {
        pb_win_hw_cas(at, size, value, compare, old);
        return;
    }
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

static int32_t handle_batch(pb_win_t *win, const pb_win_call_t *call, const char *data,
                            size_t data_len, char *out, size_t out_max, size_t *out_len);

static int32_t handle_call(pb_win_t *win, const pb_win_call_t *call, const pb_win_run_t *runs,
                           const char *data, size_t data_len, char *out, size_t out_max,
                           size_t *out_len)
{
    size_t packed = 0;
    pb_basic_t kind = (pb_basic_t)call->basic;
    char *aligned = NULL;

    switch (call->kind) {
    case PB_WIN_CALL_LOCK: return pb_win_lock_try(win->ctl, (int)call->arg);
    case PB_WIN_CALL_UNLOCK: pb_win_lock_release(win->ctl, (int)call->arg); return MPI_SUCCESS;
    case PB_WIN_CALL_COUNT:
        if (call->arg >= 2u * (unsigned)win->size)
            return MPI_ERR_ARG;
        atomic_fetch_add_explicit(&win->ctl->counts[call->arg], 1, memory_order_release);
        return MPI_SUCCESS;
    case PB_WIN_CALL_BATCH: return handle_batch(win, call, data, data_len, out, out_max, out_len);
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
        if ((uintptr_t)data % alignof(max_align_t) != 0 && data_len != 0) {
            /* the elements where their type may be loaded from */
            aligned = malloc(data_len);
            if (aligned == NULL)
                return MPI_ERR_NO_MEM;
            memcpy(aligned, data, data_len);
            data = aligned;
        }
        pb_win_acc_lock(win->ctl);
        for (uint32_t i = 0; i < call->nruns; i++) {
            pb_win_run_t at = {(uint64_t)(uintptr_t)own_run(win, &runs[i]), runs[i].len};
            size_t n = run_packed(kind, runs[i].len);

            pb_win_runs_apply((MPI_Op)(uintptr_t)call->op, kind, NULL, &at, 1,
                              data_len != 0 ? data : NULL, call->arg ? out + *out_len : NULL,
                              win->hw_atomics);
            data += n;
            *out_len += call->arg ? n : 0;
        }
        pb_win_acc_unlock(win->ctl);
        free(aligned);
        return MPI_SUCCESS;
    case PB_WIN_CALL_CAS:
        if (call->nruns != 1 || data_len != 2 * runs[0].len || runs[0].len > out_max)
            return MPI_ERR_ARG;
        pb_win_acc_lock(win->ctl);
        pb_win_cas_apply(kind, own_run(win, &runs[0]), runs[0].len, data, data + runs[0].len, out,
                         win->hw_atomics);
        pb_win_acc_unlock(win->ctl);
        *out_len = runs[0].len;
        return MPI_SUCCESS;
    default: return MPI_ERR_ARG;
    }
}

/* One call of a request: its header, runs and data at @req (@len bytes);
 * the reply data to @out.  @return the answer's status. */
static int32_t handle_request(pb_win_t *win, const char *req, size_t len, char *out, size_t out_max,
                              size_t *out_len)
{
    pb_win_call_t call;
    pb_win_run_t *runs;
    size_t head;
    int32_t status;

    if (len < sizeof(call))
        return MPI_ERR_ARG;
    memcpy(&call, req, sizeof(call));
    head = sizeof(call) + (size_t)call.nruns * sizeof(pb_win_run_t);
    if (call.kind == PB_WIN_CALL_BATCH)
        head = sizeof(call); /* nruns counts its sub-calls */
    else if (call.nruns > len / sizeof(pb_win_run_t) || head > len)
        return MPI_ERR_ARG;
    runs = malloc(call.kind == PB_WIN_CALL_BATCH ? 1 : call.nruns * sizeof(*runs) + 1);
    if (runs == NULL)
        return MPI_ERR_NO_MEM;
    if (call.kind != PB_WIN_CALL_BATCH)
        memcpy(runs, req + sizeof(call), call.nruns * sizeof(*runs));
    status = handle_call(win, &call, runs, req + head, len - head, out, out_max, out_len);
    free(runs);
    return status;
}

/* A BATCH: the lock, the sub-calls, the release (win.h). */
static int32_t handle_batch(pb_win_t *win, const pb_win_call_t *call, const char *data,
                            size_t data_len, char *out, size_t out_max, size_t *out_len)
{
    int lock_type = (int)(call->arg & 0xffffu);
    int32_t status = MPI_SUCCESS;
    size_t pos = 0;

    if (lock_type != 0 && !(call->arg & PB_WIN_BATCH_TAKEN) &&
        !pb_win_lock_try(win->ctl, lock_type))
        return PB_WIN_BATCH_BUSY;
    for (uint32_t i = 0; i < call->nruns && status == MPI_SUCCESS; i++) {
        uint32_t word, len;
        pb_win_reply_t sub = {0};
        size_t sub_len = 0, room;

        if (data_len - pos < sizeof(word)) {
            status = MPI_ERR_ARG;
            break;
        }
        memcpy(&word, data + pos, sizeof(word));
        len = word & ~PB_WIN_BATCH_REPLY;
        pos += sizeof(word);
        if (len > data_len - pos) {
            status = MPI_ERR_ARG;
            break;
        }
        if (len >= sizeof(uint32_t)) {
            uint32_t kind;

            memcpy(&kind, data + pos, sizeof(kind));
            if (kind == PB_WIN_CALL_BATCH || kind == PB_WIN_CALL_LOCK ||
                kind == PB_WIN_CALL_UNLOCK) {
                status = MPI_ERR_ARG; /* a batch holds operations only */
                break;
            }
        }
        if (!(word & PB_WIN_BATCH_REPLY)) {
            status = handle_request(win, data + pos, len, NULL, 0, &sub_len);
        } else if (out == NULL || out_max - *out_len < sizeof(uint32_t) + sizeof(sub)) {
            status = MPI_ERR_ARG;
        } else {
            /* (u32 length, answer, data) */
            char *at = out + *out_len;

            room = out_max - *out_len - sizeof(uint32_t) - sizeof(sub);
            sub.status = handle_request(win, data + pos, len, at + sizeof(uint32_t) + sizeof(sub),
                                        room, &sub_len);
            memcpy(at, &(uint32_t){(uint32_t)(sizeof(sub) + sub_len)}, sizeof(uint32_t));
            memcpy(at + sizeof(uint32_t), &sub, sizeof(sub));
            *out_len += sizeof(uint32_t) + sizeof(sub) + sub_len;
            status = sub.status;
        }
        pos += len;
    }
    /* released at the unlock's batch; and by a batch that took it and
     * failed (the origin then knows it holds nothing) */
    if (lock_type != 0 && ((call->arg & PB_WIN_BATCH_UNLOCK) ||
                           (status != MPI_SUCCESS && !(call->arg & PB_WIN_BATCH_TAKEN))))
        pb_win_lock_release(win->ctl, lock_type);
    return status;
}

void pb_win_call_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                         size_t request_len, void *reply, size_t reply_max, size_t *reply_len)
{
    pb_win_t *win = arg;
    pb_win_reply_t answer = {0};
    size_t out_len = 0;

    *reply_len = 0;
    if (reply == NULL || reply_max < sizeof(answer)) {
        /* a call without reply (PB_RSM_CALL_NO_REPLY): nothing goes back */
        reply = NULL;
        reply_max = sizeof(answer);
    }
    answer.status = handle_request(win, request, request_len,
                                   reply != NULL ? (char *)reply + sizeof(answer) : NULL,
                                   reply_max - sizeof(answer), &out_len);
    atomic_fetch_add_explicit(&win->served, 1, memory_order_release);
    if (reply == NULL) {
        if (answer.status != MPI_SUCCESS)
            pb_warn("window: a peer's operation failed here (error class %d)", answer.status);
        return;
    }
    memcpy(reply, &answer, sizeof(answer));
    *reply_len = sizeof(answer) + out_len;
}
