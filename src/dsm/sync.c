/*
 * Locks, barriers and the shared-memory allocator: the handlers that run
 * on a control segment (their managers' state lives there, dsm_impl.h)
 * and the calls that use them.
 *
 * Locks: lock id's manager is process id % P.  An acquire asks the
 * manager; a lock held by another is queued there, and its release hands
 * it to the first waiter by raising the waiter's grant word (and a
 * signal).  The acquirer then invalidates the pages the other processes
 * released since it last read their release logs (coherence.c).
 *
 * Barriers: one episode at a time, managed by process 0.  The threads of
 * a process that arrive together send one arrival, which releases the
 * process's dirty pages and carries the pages it released since its last
 * arrival (write notices) and its release log's head; the manager
 * gathers them per page (one writer, or many).  The last arrival turns
 * them into the episode's notice list (one of two areas of process 0,
 * alternating), which its reply brings back; that process sends every
 * process the area in its departure (a request without reply that copies
 * it into the receiver's own departure area and raises its release word,
 * and a signal).  Each process's service thread (or a waiting thread)
 * then applies it from its own segment, invalidating the cached pages
 * another process wrote, and acknowledges (without reply), so the area
 * may be used again two episodes later.  One round trip a process (the
 * arrival) and one message back (the departure).  A process that cannot
 * apply or acknowledge an episode fails its barriers from then on and
 * tells the others, whose barriers fail too (barrier_fail).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsm/dsm_impl.h"
#include "util/log.h"

#define CTL_AT(ctl, off, type) ((type)((char *)(ctl) + (off)))

/* ---- handlers (under the segment's spin word) ---------------------------------- */

static void handle_lock(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req, pb_dsm_reply_t *reply)
{
    uint64_t id = req->a;
    pb_dsm_lock_rec_t *lock;

    if (id >= POSTBOX_DSM_MAX_LOCKS || id / ctl->nprocs >= ctl->nlocks) {
        reply->status = POSTBOX_DSM_ERR_BAD_LOCK;
        return;
    }
    lock = CTL_AT(ctl, ctl->locks_off, pb_dsm_lock_rec_t *) + id / ctl->nprocs;
    if (req->op == PB_DSM_OP_LOCK_MARK) {
        lock->created = 1;
        reply->status = 0;
        return;
    }
    if (!lock->created) {
        reply->status = POSTBOX_DSM_ERR_BAD_LOCK;
        return;
    }
    if (req->op == PB_DSM_OP_LOCK_ACQUIRE) {
        if (!lock->held) {
            lock->held = 1;
            lock->holder = (uint32_t)req->b;
            reply->status = PB_DSM_LOCK_GRANTED;
        } else if (lock->count == PB_DSM_LOCK_QUEUE) {
            reply->status = PB_DSM_LOCK_RETRY;
        } else {
            lock->queue[(lock->head + lock->count) % PB_DSM_LOCK_QUEUE] =
                (pb_dsm_waiter_t){.who = (uint32_t)req->b, .ticket = (uint32_t)req->c};
            lock->count++;
            reply->status = PB_DSM_LOCK_QUEUED;
        }
        return;
    }
    /* release */
    if (!lock->held || lock->holder != (uint32_t)req->b) {
        reply->status = POSTBOX_DSM_ERR_NOT_HELD;
        return;
    }
    reply->status = 0;
    reply->a = 0;
    if (lock->count == 0) {
        lock->held = 0;
        return;
    }
    {
        pb_dsm_waiter_t next = lock->queue[lock->head];

        lock->head = (lock->head + 1) % PB_DSM_LOCK_QUEUE;
        lock->count--;
        lock->holder = next.who;
        reply->a = 1;
        reply->b = (uint64_t)next.who << 32 | next.ticket;
    }
}

static void merge_notices(pb_dsm_ctl_t *ctl, int32_t proc, const uint32_t *pages, uint32_t n)
{
    int32_t *writer = CTL_AT(ctl, ctl->writer_off, int32_t *);
    uint32_t *touched = CTL_AT(ctl, ctl->touched_off, uint32_t *);

    for (uint32_t i = 0; i < n; i++) {
        uint32_t p = pages[i];

        if (p >= ctl->npages)
            continue;
        if (writer[p] == PB_DSM_WRITER_NONE) {
            writer[p] = proc;
            touched[ctl->touched_count++] = p;
        } else if (writer[p] != proc) {
            writer[p] = PB_DSM_WRITER_MANY;
        }
    }
}

/* the episode's arrivals are all in: build its notice list if its area is free */
static void barrier_finish(pb_dsm_ctl_t *ctl, pb_dsm_reply_t *reply)
{
    unsigned a = (unsigned)(ctl->episode % 2);
    int32_t *writer = CTL_AT(ctl, ctl->writer_off, int32_t *);
    uint32_t *touched = CTL_AT(ctl, ctl->touched_off, uint32_t *);
    uint64_t *area = CTL_AT(ctl, ctl->area_off + a * ctl->area_size, uint64_t *);
    uint64_t *notices = area + PB_DSM_AREA_HEADS + ctl->nprocs;

    reply->a = ctl->episode;
    if (ctl->areas[a].epoch != 0 && ctl->areas[a].acks < ctl->nprocs) {
        ctl->bar_final_pending = 1;
        reply->status = PB_DSM_BARRIER_PENDING;
        return;
    }
    for (uint32_t i = 0; i < ctl->touched_count; i++) {
        uint32_t p = touched[i];

        notices[i] = (uint64_t)p << 32 | (uint32_t)writer[p];
        writer[p] = PB_DSM_WRITER_NONE;
    }
    area[PB_DSM_AREA_COUNT] = ctl->touched_count;
    memcpy(area + PB_DSM_AREA_HEADS, ctl->bar_heads, ctl->nprocs * sizeof(uint64_t));
    /* the episode's number last: a process that finds it there (a
     * barrier's probe) reads a whole area */
    atomic_store_explicit((_Atomic uint64_t *)&area[PB_DSM_AREA_EPOCH], ctl->episode,
                          memory_order_release);
    memset(ctl->bar_heads, 0, sizeof(ctl->bar_heads));
    ctl->areas[a].epoch = ctl->episode;
    ctl->areas[a].acks = 0;
    ctl->touched_count = 0;
    ctl->bar_count = 0;
    ctl->bar_expected = 0;
    ctl->bar_final_pending = 0;
    ctl->episode++;
    reply->status = PB_DSM_BARRIER_LAST;
}

/* A finished episode sent to this segment's process: its area (when it
 * came with the request) copied into the departure area of its parity,
 * its number stored last, then the release word raised. */
static void handle_depart(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req, const uint32_t *pages,
                          pb_dsm_reply_t *reply)
{
    size_t words = req->npages / 2;
    uint64_t *area = CTL_AT(ctl, ctl->depart_off + (req->a % 2) * ctl->area_size, uint64_t *);
    uint64_t cur;

    if (req->npages % 2 != 0 || words * sizeof(uint64_t) > ctl->area_size ||
        (words > 0 && words < PB_DSM_AREA_HEADS)) {
        reply->status = POSTBOX_DSM_ERR_BAD_ARGUMENT;
        return;
    }
    /* (a departure overtaken by a later one of the same parity, sent by
     * another process, finds that one there: it is left alone) */
    if (words > 0 && atomic_load((_Atomic uint64_t *)area) < req->a) {
        memcpy(area + 1, pages + 2, (words - 1) * sizeof(uint64_t));
        atomic_store_explicit((_Atomic uint64_t *)area, req->a, memory_order_release);
    }
    cur = atomic_load(&ctl->release_epoch);
    while (cur < req->a && !atomic_compare_exchange_weak(&ctl->release_epoch, &cur, req->a))
        ;
    reply->status = 0;
}

static void handle_barrier(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req, const uint32_t *pages,
                           pb_dsm_reply_t *reply)
{
    if (req->op == PB_DSM_OP_BARRIER_DEPART) {
        handle_depart(ctl, req, pages, reply);
        return;
    }
    if (ctl->writer_off == 0) {
        reply->status = POSTBOX_DSM_ERR_WRONG_PROCESS;
        return;
    }
    if (ctl->episode == 0)
        ctl->episode = 1;
    switch (req->op) {
    case PB_DSM_OP_BARRIER_NOTICES:
        merge_notices(ctl, (int32_t)req->b, pages, req->npages);
        reply->status = 0;
        return;
    case PB_DSM_OP_BARRIER_ARRIVE:
        if (req->a >= ctl->next_barrier) {
            reply->status = POSTBOX_DSM_ERR_BAD_BARRIER;
            return;
        }
        if (ctl->bar_expected != 0 && (ctl->bar_id != req->a || ctl->bar_expected != req->c)) {
            reply->status = POSTBOX_DSM_ERR_BARRIER_MISMATCH;
            return;
        }
        if (ctl->bar_final_pending) {
            /* the episode is complete: a thread arriving now is another's */
            reply->status = POSTBOX_DSM_ERR_BARRIER_MISMATCH;
            return;
        }
        ctl->bar_id = (uint32_t)req->a;
        ctl->bar_expected = (uint32_t)req->c;
        merge_notices(ctl, (int32_t)req->b, pages, req->npages);
        if (req->b < PB_DSM_MAX_PROCS && req->e > ctl->bar_heads[req->b])
            ctl->bar_heads[req->b] = req->e;
        ctl->bar_count += (uint32_t)req->d;
        reply->a = ctl->episode;
        if (ctl->bar_count >= ctl->bar_expected)
            barrier_finish(ctl, reply);
        else
            reply->status = PB_DSM_BARRIER_WAIT;
        return;
    case PB_DSM_OP_BARRIER_FINISH:
        if (ctl->bar_final_pending && ctl->episode == req->a)
            barrier_finish(ctl, reply);
        else
            reply->status = POSTBOX_DSM_ERR_BARRIER_MISMATCH;
        return;
    case PB_DSM_OP_BARRIER_ACK:
        if (ctl->areas[req->a % 2].epoch == req->a)
            ctl->areas[req->a % 2].acks++;
        reply->status = 0;
        return;
    default: reply->status = POSTBOX_DSM_ERR_BAD_ARGUMENT;
    }
}

static void heap_init(pb_dsm_ctl_t *ctl, size_t range)
{
    if (ctl->nblocks != 0)
        return;
    ctl->heap_start = range / 2;
    ctl->blocks[0] = (pb_dsm_block_t){.offset = range / 2, .size = range - range / 2, .used = 0};
    ctl->nblocks = 1;
}

static void handle_alloc(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req, pb_dsm_reply_t *reply)
{
    uint32_t i;

    if (ctl->writer_off == 0) {
        reply->status = POSTBOX_DSM_ERR_WRONG_PROCESS;
        return;
    }
    heap_init(ctl, (size_t)req->d);
    if (req->op == PB_DSM_OP_COLL_RESERVE) {
        if (req->a > ctl->heap_start) {
            reply->status = POSTBOX_DSM_ERR_NO_MEMORY;
            return;
        }
        if (req->a > ctl->coll_end)
            ctl->coll_end = req->a;
        reply->status = 0;
        return;
    }
    if (req->op == PB_DSM_OP_MALLOC) {
        uint64_t size = (req->a + 63) & ~(uint64_t)63;

        for (i = 0; i < ctl->nblocks; i++) {
            pb_dsm_block_t *b = &ctl->blocks[i];

            if (b->used || b->size < size)
                continue;
            if (b->size > size) {
                if (ctl->nblocks == PB_DSM_MAX_BLOCKS)
                    continue;
                memmove(b + 2, b + 1, (ctl->nblocks - i - 1) * sizeof(*b));
                b[1] = (pb_dsm_block_t){.offset = b->offset + size, .size = b->size - size};
                ctl->nblocks++;
                b->size = size;
            }
            b->used = 1;
            reply->status = 0;
            reply->a = b->offset;
            return;
        }
        reply->status = POSTBOX_DSM_ERR_NO_MEMORY;
        return;
    }
    /* free */
    for (i = 0; i < ctl->nblocks; i++)
        if (ctl->blocks[i].offset == req->a)
            break;
    if (i == ctl->nblocks || !ctl->blocks[i].used) {
        reply->status = POSTBOX_DSM_ERR_BAD_POINTER;
        return;
    }
    ctl->blocks[i].used = 0;
    /* merge with the free neighbours */
    if (i + 1 < ctl->nblocks && !ctl->blocks[i + 1].used) {
        ctl->blocks[i].size += ctl->blocks[i + 1].size;
        memmove(&ctl->blocks[i + 1], &ctl->blocks[i + 2],
                (ctl->nblocks - i - 2) * sizeof(pb_dsm_block_t));
        ctl->nblocks--;
    }
    if (i > 0 && !ctl->blocks[i - 1].used) {
        ctl->blocks[i - 1].size += ctl->blocks[i].size;
        memmove(&ctl->blocks[i], &ctl->blocks[i + 1],
                (ctl->nblocks - i - 1) * sizeof(pb_dsm_block_t));
        ctl->nblocks--;
    }
    reply->status = 0;
}

static void handle_thread(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req, pb_dsm_reply_t *reply)
{
    if (req->op == PB_DSM_OP_THREAD_DEQUEUE) {
        pb_dsm_create_req_t *c = &ctl->creates[ctl->create_head];

        reply->status = ctl->create_count > 0;
        if (ctl->create_count > 0) {
            reply->a = c->fn;
            reply->b = c->arg;
            reply->c = (uint64_t)c->creator << 32 | c->join_index;
            ctl->create_head = (ctl->create_head + 1) % PB_DSM_CREATE_RING;
            ctl->create_count--;
        }
        return;
    }
    if (req->op == PB_DSM_OP_THREAD_QUEUE) {
        if (ctl->create_count == PB_DSM_CREATE_RING) {
            reply->status = POSTBOX_DSM_ERR_TOO_MANY;
            return;
        }
        ctl->creates[(ctl->create_head + ctl->create_count) % PB_DSM_CREATE_RING] =
            (pb_dsm_create_req_t){.fn = req->a,
                                  .arg = req->b,
                                  .creator = (uint32_t)req->c,
                                  .join_index = (uint32_t)req->d};
        ctl->create_count++;
        reply->status = 0;
        return;
    }
    if (req->a >= PB_DSM_MAX_JOINS) {
        reply->status = POSTBOX_DSM_ERR_BAD_THREAD;
        return;
    }
    ctl->joins[req->a].ret = req->b;
    atomic_store_explicit(&ctl->joins[req->a].done, 1, memory_order_release);
    reply->status = 0;
}

void pb_dsm_handle_sync(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req, const uint32_t *pages,
                        pb_dsm_reply_t *reply)
{
    switch (req->op) {
    case PB_DSM_OP_NOTIFY_MAX:
        /* (the mailbox words only) */
        if (req->a % 8 != 0 || req->a < offsetof(pb_dsm_ctl_t, release_epoch) ||
            req->a + 8 > offsetof(pb_dsm_ctl_t, joins)) {
            reply->status = POSTBOX_DSM_ERR_BAD_ARGUMENT;
            return;
        }
        {
            _Atomic uint64_t *word = CTL_AT(ctl, req->a, _Atomic uint64_t *);
            uint64_t cur = atomic_load(word);

            while (cur < req->b && !atomic_compare_exchange_weak(word, &cur, req->b))
                ;
        }
        reply->status = 0;
        return;
    case PB_DSM_OP_LOCK_CREATE:
        if (ctl->writer_off == 0) {
            reply->status = POSTBOX_DSM_ERR_WRONG_PROCESS;
        } else if (ctl->next_lock >= POSTBOX_DSM_MAX_LOCKS) {
            reply->status = POSTBOX_DSM_ERR_TOO_MANY;
        } else {
            reply->status = 0;
            reply->a = ctl->next_lock++;
        }
        return;
    case PB_DSM_OP_BARRIER_CREATE:
        if (ctl->writer_off == 0) {
            reply->status = POSTBOX_DSM_ERR_WRONG_PROCESS;
        } else if (ctl->next_barrier >= PB_DSM_MAX_BARRIERS) {
            reply->status = POSTBOX_DSM_ERR_TOO_MANY;
        } else {
            reply->status = 0;
            reply->a = ctl->next_barrier++;
        }
        return;
    case PB_DSM_OP_LOCK_MARK:
    case PB_DSM_OP_LOCK_ACQUIRE:
    case PB_DSM_OP_LOCK_RELEASE: handle_lock(ctl, req, reply); return;
    case PB_DSM_OP_BARRIER_NOTICES:
    case PB_DSM_OP_BARRIER_ARRIVE:
    case PB_DSM_OP_BARRIER_FINISH:
    case PB_DSM_OP_BARRIER_ACK:
    case PB_DSM_OP_BARRIER_DEPART: handle_barrier(ctl, req, pages, reply); return;
    case PB_DSM_OP_MALLOC:
    case PB_DSM_OP_FREE:
    case PB_DSM_OP_COLL_RESERVE: handle_alloc(ctl, req, reply); return;
    case PB_DSM_OP_THREAD_QUEUE:
    case PB_DSM_OP_THREAD_DEQUEUE:
    case PB_DSM_OP_THREAD_DONE: handle_thread(ctl, req, reply); return;
    case PB_DSM_OP_HOME_CLAIM: pb_dsm_handle_home_claim(ctl, req, pages, reply); return;
    default: reply->status = POSTBOX_DSM_ERR_BAD_ARGUMENT;
    }
}

size_t pb_dsm_barrier_reply_area(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req,
                                 const pb_dsm_reply_t *reply, void *out, size_t max)
{
    const uint64_t *area;
    size_t len;

    if ((req->op != PB_DSM_OP_BARRIER_ARRIVE && req->op != PB_DSM_OP_BARRIER_FINISH) ||
        reply->status != PB_DSM_BARRIER_LAST || ctl->area_off == 0)
        return 0;
    area = CTL_AT(ctl, ctl->area_off + (reply->a % 2) * ctl->area_size, const uint64_t *);
    len = (PB_DSM_AREA_HEADS + ctl->nprocs + (size_t)area[PB_DSM_AREA_COUNT]) * sizeof(uint64_t);
    if (len > max)
        return 0;
    memcpy(out, area, len);
    return len;
}

/* ---- locks --------------------------------------------------------------------- */

PB_EXPORT int postbox_dsm_lock_create(void)
{
    pb_dsm_req_t req = {.op = PB_DSM_OP_LOCK_CREATE};
    pb_dsm_reply_t reply;
    int rc = pb_dsm_check();

    if (rc == 0)
        rc = pb_dsm_rpc(0, POSTBOX_DSM_MSG_ALLOC, &req, NULL, &reply);
    if (rc == 0 && reply.status < 0)
        rc = (int)reply.status;
    if (rc != 0) {
        if (rc == POSTBOX_DSM_ERR_TOO_MANY)
            pb_error("dsm: all %d lock ids are taken", POSTBOX_DSM_MAX_LOCKS);
        return rc;
    }
    req = (pb_dsm_req_t){.op = PB_DSM_OP_LOCK_MARK, .a = reply.a};
    rc = pb_dsm_rpc((int)(reply.a % (uint64_t)pb_dsm.nprocs), POSTBOX_DSM_MSG_ALLOC, &req, NULL,
                    &reply);
    if (rc == 0 && reply.status < 0)
        rc = (int)reply.status;
    return rc != 0 ? rc : (int)req.a;
}

typedef struct {
    int slot;
    uint32_t ticket;
} grant_wait_t;

static int granted(void *arg)
{
    grant_wait_t *w = arg;

    return atomic_load_explicit(&pb_dsm.ctl->grant[w->slot], memory_order_acquire) >= w->ticket;
}

static int lock_check(int id)
{
    int rc = pb_dsm_check();

    if (rc != 0)
        return rc;
    if (id < 0 || id >= POSTBOX_DSM_MAX_LOCKS) {
        pb_error("dsm: lock id %d was never created", id);
        return POSTBOX_DSM_ERR_BAD_LOCK;
    }
    return 0;
}

PB_EXPORT int postbox_dsm_lock(int id)
{
    int rc = lock_check(id), slot;
    pb_dsm_req_t req;
    pb_dsm_reply_t reply;
    grant_wait_t wait;

    if (rc != 0)
        return rc;
    slot = pb_dsm_slot();
    if (slot < 0)
        return POSTBOX_DSM_ERR_TOO_MANY;
    pb_dsm_count(&pb_dsm_counters.lock_acquires, 1);
    wait.slot = slot;
    wait.ticket = atomic_fetch_add(&pb_dsm.tickets[slot], 1) + 1;
    req = (pb_dsm_req_t){.op = PB_DSM_OP_LOCK_ACQUIRE,
                         .a = (uint64_t)id,
                         .b = (uint64_t)pb_dsm.me << 8 | (uint64_t)slot,
                         .c = wait.ticket};
    for (;;) {
        rc = pb_dsm_rpc(id % pb_dsm.nprocs, POSTBOX_DSM_MSG_LOCK, &req, NULL, &reply);
        if (rc != 0)
            return rc;
        if (reply.status != PB_DSM_LOCK_RETRY)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 200 * 1000}, NULL);
    }
    if (reply.status < 0) {
        if (reply.status == POSTBOX_DSM_ERR_BAD_LOCK)
            pb_error("dsm: lock id %d was never created", id);
        return (int)reply.status;
    }
    if (reply.status == PB_DSM_LOCK_QUEUED)
        pb_dsm_wait(granted, &wait);
    return pb_dsm_acquire_logs();
}

PB_EXPORT int postbox_dsm_unlock(int id)
{
    int rc = lock_check(id), slot;
    pb_dsm_req_t req;
    pb_dsm_reply_t reply;

    if (rc != 0)
        return rc;
    slot = pb_dsm_slot();
    if (slot < 0)
        return POSTBOX_DSM_ERR_TOO_MANY;
    rc = pb_dsm_release();
    if (rc != 0)
        return rc;
    req = (pb_dsm_req_t){.op = PB_DSM_OP_LOCK_RELEASE,
                         .a = (uint64_t)id,
                         .b = (uint64_t)pb_dsm.me << 8 | (uint64_t)slot};
    rc = pb_dsm_rpc(id % pb_dsm.nprocs, POSTBOX_DSM_MSG_LOCK, &req, NULL, &reply);
    if (rc != 0)
        return rc;
    if (reply.status < 0) {
        if (reply.status == POSTBOX_DSM_ERR_NOT_HELD)
            pb_error("dsm: unlock of lock %d, which this thread does not hold", id);
        else if (reply.status == POSTBOX_DSM_ERR_BAD_LOCK)
            pb_error("dsm: lock id %d was never created", id);
        return (int)reply.status;
    }
    if (reply.a) {
        uint32_t who = (uint32_t)(reply.b >> 32), ticket = (uint32_t)reply.b;

        return pb_dsm_notify((int)(who >> 8), POSTBOX_DSM_MSG_LOCK,
                             offsetof(pb_dsm_ctl_t, grant) + (who & 0xff) * sizeof(uint64_t),
                             ticket);
    }
    return 0;
}

/* ---- barriers ---------------------------------------------------------------------- */

PB_EXPORT int postbox_dsm_barrier_create(void)
{
    pb_dsm_req_t req = {.op = PB_DSM_OP_BARRIER_CREATE};
    pb_dsm_reply_t reply;
    int rc = pb_dsm_check();

    if (rc == 0)
        rc = pb_dsm_rpc(0, POSTBOX_DSM_MSG_ALLOC, &req, NULL, &reply);
    if (rc == 0 && reply.status < 0) {
        rc = (int)reply.status;
        pb_error("dsm: all %d barrier ids are taken", PB_DSM_MAX_BARRIERS);
    }
    return rc != 0 ? rc : (int)reply.a;
}

/* Notices read with an area's head in its first get at least (the rest,
 * when an episode has more, in a second). */
#define AREA_FIRST_NOTICES 512

static size_t area_head(void)
{
    return PB_DSM_AREA_HEADS + (size_t)pb_dsm.nprocs;
}

/* notices that a first read of an area, or a reply that may bring one,
 * makes room for: the last episode's count, AREA_FIRST_NOTICES at least */
static _Atomic size_t guess = AREA_FIRST_NOTICES;

/* Read episode @e's area at process 0 into *@area_p (malloc'd): one get
 * with its first notices, a second when it has more. */
static int read_area(uint64_t e, uint64_t **area_p)
{
    size_t head = area_head(), want = atomic_load_explicit(&guess, memory_order_relaxed), count;
    size_t off = pb_dsm.area_off + (e % 2) * pb_dsm.area_size;
    uint64_t *area;
    uint64_t start = pb_dsm_now_ns();
    int rc;

    if (want > pb_dsm.npages)
        want = pb_dsm.npages;
    area = malloc((head + want) * sizeof(uint64_t));
    if (area == NULL)
        return POSTBOX_DSM_ERR_NO_MEMORY;
    rc = pb_dsm_ctl_read(0, off, area, (head + want) * sizeof(uint64_t));
    count = rc == 0 ? (size_t)area[PB_DSM_AREA_COUNT] : 0;
    if (rc == 0 && (area[PB_DSM_AREA_EPOCH] != e || count > pb_dsm.npages)) {
        pb_error("dsm: barrier episode %llu's area holds episode %llu", (unsigned long long)e,
                 (unsigned long long)area[PB_DSM_AREA_EPOCH]);
        rc = POSTBOX_DSM_ERR_COMMUNICATION;
    }
    if (rc == 0 && count > want) {
        uint64_t *more = realloc(area, (head + count) * sizeof(uint64_t));

        if (more == NULL)
            rc = POSTBOX_DSM_ERR_NO_MEMORY;
        else
            area = more;
        if (rc == 0)
            rc = pb_dsm_ctl_read(0, off + (head + want) * sizeof(uint64_t), area + head + want,
                                 (count - want) * sizeof(uint64_t));
    }
    if (rc == 0 && pb_dsm.me != 0) {
        pb_dsm_count_msg(POSTBOX_DSM_MSG_BARRIER, (head + (count > want ? count : want)) * 8);
        pb_dsm_count_round_trip(POSTBOX_DSM_MSG_BARRIER, start);
        if (count > want) {
            pb_dsm_count_msg(POSTBOX_DSM_MSG_BARRIER, 0);
            pb_dsm_count(&pb_dsm_counters.round_trips[POSTBOX_DSM_MSG_BARRIER], 1);
        }
    }
    if (rc != 0) {
        free(area);
        return rc;
    }
    /* the next episode's is read whole when it is no larger */
    atomic_store_explicit(&guess, count > AREA_FIRST_NOTICES ? count : AREA_FIRST_NOTICES,
                          memory_order_relaxed);
    *area_p = area;
    return 0;
}

/* Apply one finished episode's notices (the service thread, or a thread
 * waiting at the barrier): from this process's departure area, where the
 * release sent them, or, when they did not come with it, read at
 * process 0 (read_area). */
static int apply_episode(uint64_t e)
{
    uint64_t *sent =
        (uint64_t *)((char *)pb_dsm.ctl + pb_dsm.depart_off + (e % 2) * pb_dsm.area_size);
    uint64_t *area = sent, *copy = NULL;
    size_t head = area_head(), count;
    int rc = 0;

    if (pb_dsm_test_fail(PB_DSM_TEST_APPLY, e))
        return POSTBOX_DSM_ERR_COMMUNICATION;
    if (atomic_load_explicit((_Atomic uint64_t *)sent, memory_order_acquire) != e) {
        rc = read_area(e, &copy);
        area = copy;
    }
    if (rc != 0)
        return rc;
    count = (size_t)area[PB_DSM_AREA_COUNT];
    if (count > pb_dsm.npages) {
        pb_error("dsm: barrier episode %llu sent %zu notices", (unsigned long long)e, count);
        free(copy);
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    pthread_mutex_lock(&pb_dsm.protocol);
    rc = pb_dsm_invalidate_notices_locked(area + head, count, e);
    /* the pages others released before their arrivals are invalid
     * here now: their release logs need not be read up to there */
    for (int q = 0; rc == 0 && q < pb_dsm.nprocs; q++)
        if (q != pb_dsm.me && area[PB_DSM_AREA_HEADS + q] > pb_dsm.log_seen[q])
            pb_dsm.log_seen[q] = area[PB_DSM_AREA_HEADS + q];
    pthread_mutex_unlock(&pb_dsm.protocol);
    free(copy);
    return rc;
}

/* The last arrival of episode @e: send every process the episode's area
 * (@given, the one the arrival's reply brought; else read at process 0
 * unless this is process 0 or shares its node) with the raise of its
 * release word, without reply, and signal it.  An area too large for one
 * call goes without its words: that process reads it at process 0. */
static int depart(uint64_t e, const uint64_t *given)
{
    size_t head = area_head(), words;
    const uint64_t *area = given;
    uint64_t *copy = NULL;
    int rc = 0;

    if (area != NULL && area[PB_DSM_AREA_EPOCH] != e) {
        pb_error("dsm: barrier episode %llu's reply holds episode %llu", (unsigned long long)e,
                 (unsigned long long)area[PB_DSM_AREA_EPOCH]);
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    if (area == NULL && (pb_dsm.me == 0 || pb_dsm.peers[0].ctl_map != NULL)) {
        char *ctl0 = pb_dsm.me == 0 ? (char *)pb_dsm.ctl : (char *)pb_dsm.peers[0].ctl_map;

        atomic_thread_fence(memory_order_acquire);
        area = (const uint64_t *)(ctl0 + pb_dsm.area_off + (e % 2) * pb_dsm.area_size);
    } else if (area == NULL) {
        rc = read_area(e, &copy);
        area = copy;
    }
    if (rc != 0)
        return rc;
    words = head + (size_t)area[PB_DSM_AREA_COUNT];
    for (int q = 0; rc == 0 && q < pb_dsm.nprocs; q++) {
        int whole = q == pb_dsm.me || pb_dsm.peers[q].ctl_map != NULL ||
                    sizeof(pb_dsm_req_t) + words * sizeof(uint64_t) <= PB_RSM_CALL_MAX;
        pb_dsm_req_t req = {
            .op = PB_DSM_OP_BARRIER_DEPART, .npages = whole ? (uint32_t)(2 * words) : 0, .a = e};

        if (q == pb_dsm.test_fail_target && pb_dsm_test_fail(PB_DSM_TEST_LOSE, e))
            continue;
        rc = pb_dsm_post(q, POSTBOX_DSM_MSG_BARRIER, &req, (const uint32_t *)area);
        if (rc == 0)
            rc = pb_dsm_wake(q);
    }
    free(copy);
    return rc;
}

/* Tell process 0 that episode @e's notices were read: its area may serve
 * again.  (Without reply: process 0 runs it before this process's next
 * request, so before its next arrival.) */
static int ack_episode(uint64_t e)
{
    pb_dsm_req_t req = {.op = PB_DSM_OP_BARRIER_ACK, .a = e};

    if (pb_dsm_test_fail(PB_DSM_TEST_ACK, e))
        return POSTBOX_DSM_ERR_COMMUNICATION;
    return pb_dsm_post(0, POSTBOX_DSM_MSG_BARRIER, &req, NULL);
}

/* Keep @rc as the failure of barrier episode @e and of every later one;
 * 1 when it is the first (a later failure keeps the first).  The episode
 * is set first: a reader that sees it before the code takes
 * POSTBOX_DSM_ERR_COMMUNICATION (barrier_failure). */
static int record_failure(uint64_t e, int rc)
{
    uint64_t none = 0;

    if (!atomic_compare_exchange_strong(&pb_dsm.barrier_error_episode, &none, e != 0 ? e : 1))
        return 0;
    atomic_store(&pb_dsm.barrier_error, rc);
    return 1;
}

/* Keep @rc, this process's failure to @what barrier episode @e (apply,
 * acknowledge, arrive at, finish or depart), as the answer of its barrier
 * calls of that episode and later ones (an episode cannot be skipped: its
 * invalidations would be lost; unacknowledged, process 0's area of its
 * parity is never freed, so the job's barrier after next could never end;
 * without an arrival or a departure the episode never ends), and tell
 * every other process, whose barriers from @e on then fail too rather than
 * wait for ever.  Logged once. */
static void barrier_fail(uint64_t e, int rc, const char *what)
{
    if (!record_failure(e, rc))
        return;
    pb_error("dsm: process %d could not %s barrier episode %llu (%s): its barrier calls return "
             "that error from now on, and the other processes' barriers fail",
             pb_dsm.me, what, (unsigned long long)e, postbox_dsm_strerror(rc));
    for (int q = 0; q < pb_dsm.nprocs; q++)
        if (q != pb_dsm.me)
            (void)pb_dsm_notify(q, POSTBOX_DSM_MSG_BARRIER, offsetof(pb_dsm_ctl_t, barrier_failed),
                                e << 8 | (uint64_t)(pb_dsm.me + 1));
    pb_dsm_wake_local();
}

/* The error of this process's barrier call of episode @e: its own
 * failure (barrier_fail) or another process's, told to it (logged once),
 * at @e or an earlier episode; 0 when none. */
static int barrier_failure(uint64_t e)
{
    uint64_t told = atomic_load_explicit(&pb_dsm.ctl->barrier_failed, memory_order_acquire);
    uint64_t failed_at;
    int rc = atomic_load(&pb_dsm.barrier_error);

    if (rc == 0 && told != 0 && record_failure(told >> 8, POSTBOX_DSM_ERR_COMMUNICATION))
        pb_error("dsm: process %d's barriers failed at episode %llu: the barriers of process %d "
                 "fail from that episode on",
                 (int)(told & 0xff) - 1, (unsigned long long)(told >> 8), pb_dsm.me);
    failed_at = atomic_load(&pb_dsm.barrier_error_episode);
    if (failed_at == 0 || e < failed_at)
        return 0;
    rc = atomic_load(&pb_dsm.barrier_error);
    return rc != 0 ? rc : POSTBOX_DSM_ERR_COMMUNICATION;
}

/* A barrier's wait asks process 0 whether its episode ended after
 * BARRIER_PROBE_NS, then after twice as long each time, up to
 * BARRIER_PROBE_MAX_NS. */
#define BARRIER_PROBE_NS (250L * 1000 * 1000)
#define BARRIER_PROBE_MAX_NS (2000L * 1000 * 1000)

/* Has barrier episode @e ended at process 0 though its departure has not
 * come here?  A departure goes without reply, and one lost with a broken
 * tcp rail (docs/dsm.md, "Calls without reply lost with a tcp rail")
 * would leave this process waiting for ever.  Process 0's area of @e's
 * parity holds @e from the episode's end (its number stored last) until
 * every process acknowledged it, this one included: when it does, this
 * process's release word is raised to @e and the catch-up reads the
 * episode there (apply_episode).  A departure only slow is harmless: it
 * raises the word to what it already is.  0, or
 * POSTBOX_DSM_ERR_COMMUNICATION when process 0 cannot be read. */
static int barrier_probe(uint64_t e)
{
    size_t off =
        pb_dsm.area_off + (e % 2) * pb_dsm.area_size + PB_DSM_AREA_EPOCH * sizeof(uint64_t);
    uint64_t ended, cur;
    int rc = pb_dsm_ctl_read(0, off, &ended, sizeof(ended));

    if (rc != 0 || ended != e)
        return rc;
    cur = atomic_load(&pb_dsm.ctl->release_epoch);
    if (cur >= e)
        return 0;
    pb_warn("dsm: barrier episode %llu ended at process 0, and its departure did not reach "
            "process %d: read there",
            (unsigned long long)e, pb_dsm.me);
    while (cur < e && !atomic_compare_exchange_weak(&pb_dsm.ctl->release_epoch, &cur, e))
        ;
    return 0;
}

void pb_dsm_barrier_lost_messages(void)
{
    barrier_fail(atomic_load(&pb_dsm.processed_epoch) + 1, POSTBOX_DSM_ERR_COMMUNICATION,
                 "count on its messages to process 0 (some were lost) at");
}

int pb_dsm_barrier_catch_up(void)
{
    static pthread_mutex_t catch_up_mutex = PTHREAD_MUTEX_INITIALIZER;
    uint64_t posted = atomic_load_explicit(&pb_dsm.ctl->release_epoch, memory_order_acquire);
    int rc = 0;

    if (atomic_load(&pb_dsm.processed_epoch) >= posted)
        return 0;
    pthread_mutex_lock(&catch_up_mutex);
    while (rc == 0 && atomic_load(&pb_dsm.processed_epoch) < posted) {
        uint64_t e = atomic_load(&pb_dsm.processed_epoch) + 1;

        rc = barrier_failure(e);
        if (rc != 0)
            break;
        rc = apply_episode(e);
        if (rc != 0) {
            barrier_fail(e, rc, "apply");
            break;
        }
        /* the waiters go on at once; the acknowledgement follows */
        atomic_store(&pb_dsm.processed_epoch, e);
        pb_dsm_wake_local();
        rc = ack_episode(e);
        if (rc != 0)
            barrier_fail(e, rc, "acknowledge (to process 0)");
    }
    pthread_mutex_unlock(&catch_up_mutex);
    return rc;
}

/* Send this process's unsent write notices; the last chunk with the arrival. */
static int barrier_arrive(int id, int nthreads, int count, pb_dsm_reply_t *reply, void *rbuf,
                          size_t rmax, size_t *got)
{
    uint32_t *pages;
    size_t n;
    int rc;

    pthread_mutex_lock(&pb_dsm.protocol);
    rc = pb_dsm_flush_locked();
    n = pb_dsm.nunsent;
    pages = pb_dsm.unsent;
    /* (the lists are process-wide: hold the lock while they go out) */
    while (rc == 0 && n > PB_DSM_RPC_PAGES) {
        pb_dsm_req_t req = {
            .op = PB_DSM_OP_BARRIER_NOTICES, .npages = PB_DSM_RPC_PAGES, .b = (uint64_t)pb_dsm.me};

        rc = pb_dsm_rpc(0, POSTBOX_DSM_MSG_BARRIER, &req, pages, reply);
        if (rc == 0 && reply->status < 0)
            rc = (int)reply->status;
        pages += PB_DSM_RPC_PAGES;
        n -= PB_DSM_RPC_PAGES;
    }
    if (rc == 0 && pb_dsm_test_fail(PB_DSM_TEST_ARRIVE, atomic_load(&pb_dsm.processed_epoch) + 1))
        rc = POSTBOX_DSM_ERR_COMMUNICATION;
    if (rc == 0) {
        pb_dsm_req_t req = {.op = PB_DSM_OP_BARRIER_ARRIVE,
                            .npages = (uint32_t)n,
                            .a = (uint64_t)id,
                            .b = (uint64_t)pb_dsm.me,
                            .c = (uint64_t)nthreads,
                            .d = (uint64_t)count,
                            .e = atomic_load(&pb_dsm.ctl->log_head)};

        rc = pb_dsm_request(0, POSTBOX_DSM_MSG_BARRIER, &req, pages, rbuf, rmax, got);
        if (rc == 0)
            memcpy(reply, rbuf, sizeof(*reply));
        if (rc == 0 && reply->status < 0)
            rc = (int)reply->status;
    }
    if (rc == 0) {
        for (size_t i = 0; i < pb_dsm.nunsent; i++)
            pb_dsm.unsent_mark[pb_dsm.unsent[i]] = 0;
        pb_dsm.nunsent = 0;
    }
    pthread_mutex_unlock(&pb_dsm.protocol);
    return rc;
}

/* Arrive for @count threads of this process; the episode they count
 * toward goes to *@episode_p.  The last arrival of the job releases
 * every process, with the episode's area that its reply brought. */
static int barrier_send(int id, int nthreads, int count, uint64_t *episode_p)
{
    size_t want = atomic_load_explicit(&guess, memory_order_relaxed), rmax, got = 0;
    pb_dsm_reply_t reply;
    char *rbuf;
    int rc;

    if (want > pb_dsm.npages)
        want = pb_dsm.npages;
    rmax = sizeof(reply) + (area_head() + want) * sizeof(uint64_t);
    if (rmax > PB_RSM_CALL_MAX)
        rmax = PB_RSM_CALL_MAX;
    rbuf = malloc(rmax);
    if (rbuf == NULL)
        return POSTBOX_DSM_ERR_NO_MEMORY;
    rc = barrier_arrive(id, nthreads, count, &reply, rbuf, rmax, &got);
    if (rc != 0) {
        if (rc == POSTBOX_DSM_ERR_COMMUNICATION)
            barrier_fail(atomic_load(&pb_dsm.processed_epoch) + 1, rc, "arrive at");
        else if (rc == POSTBOX_DSM_ERR_BAD_BARRIER)
            pb_error("dsm: barrier id %d was never created", id);
        else if (rc == POSTBOX_DSM_ERR_BARRIER_MISMATCH)
            pb_error("dsm: barrier %d of %d threads while another barrier or count is open", id,
                     nthreads);
        free(rbuf);
        return rc;
    }
    *episode_p = reply.a;
    for (long pause_ns = 200 * 1000; rc == 0 && reply.status == PB_DSM_BARRIER_PENDING;) {
        /* a process has not yet applied the episode before last (one that
         * cannot tells this one: barrier_fail) */
        pb_dsm_req_t req = {.op = PB_DSM_OP_BARRIER_FINISH, .a = *episode_p};

        nanosleep(&(struct timespec){.tv_nsec = pause_ns}, NULL);
        pause_ns = pause_ns < 2500 * 1000 ? 2 * pause_ns : 5 * 1000 * 1000;
        rc = barrier_failure(*episode_p);
        if (rc != 0)
            break;
        rc = pb_dsm_request(0, POSTBOX_DSM_MSG_BARRIER, &req, NULL, rbuf, rmax, &got);
        if (rc == 0)
            memcpy(&reply, rbuf, sizeof(reply));
        if (rc == 0 && reply.status < 0)
            rc = (int)reply.status;
    }
    if (rc == 0 && reply.status == PB_DSM_BARRIER_LAST) {
        const uint64_t *given = NULL;

        if (got > sizeof(reply)) {
            size_t words = (got - sizeof(reply)) / sizeof(uint64_t);

            given = (const uint64_t *)(rbuf + sizeof(reply));
            if (words < area_head() || words != area_head() + given[PB_DSM_AREA_COUNT]) {
                pb_error("dsm: a barrier's reply of %zu bytes", got);
                rc = POSTBOX_DSM_ERR_COMMUNICATION;
            }
        }
        if (rc == 0)
            rc = depart(*episode_p, given);
    }
    if (rc == POSTBOX_DSM_ERR_COMMUNICATION)
        barrier_fail(*episode_p, rc, "finish or depart from");
    free(rbuf);
    return rc;
}

/*
 * Combining: the threads of a process that arrive together go in one
 * arrival.  Arrivals are numbered in batches; a batch is sent when every
 * thread of the process that uses the DSM (less those waiting in a join)
 * is in it, or after BARRIER_COMBINE_NS, or, when a send is under way,
 * once it ends.  Any split is correct (the manager sums the counts); the
 * wait only saves messages when a process's threads arrive together.
 */
#define BARRIER_COMBINE_NS (2 * 1000 * 1000)
#define BARRIER_RESULTS 64

static struct {
    pthread_mutex_t mutex;
    pthread_cond_t cv;
    uint64_t batch;   /* the batch arrivals join now */
    uint64_t sent;    /* batches sent */
    int count;        /* threads in @batch */
    int sending;      /* a thread is sending a batch */
    int id, nthreads; /* of @batch */
    struct {
        uint64_t episode;
        int rc;
    } results[BARRIER_RESULTS]; /* of batch b at b % BARRIER_RESULTS */
} combine = {.mutex = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

_Atomic int pb_dsm_joining;

static int local_threads(void)
{
    int n;

    pthread_mutex_lock(&pb_dsm.slots_mutex);
    n = __builtin_popcountll(pb_dsm.slots_used);
    pthread_mutex_unlock(&pb_dsm.slots_mutex);
    return n - atomic_load(&pb_dsm_joining);
}

static void deadline_after(struct timespec *ts, long ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += ns;
    while (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int passed(const struct timespec *deadline)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec > deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

static int barrier_combine(int id, int nthreads, uint64_t *episode_p)
{
    struct timespec deadline;
    uint64_t mine;
    int rc;

    pthread_mutex_lock(&combine.mutex);
    if (combine.count > 0 && (combine.id != id || combine.nthreads != nthreads)) {
        pthread_mutex_unlock(&combine.mutex);
        pb_error("dsm: barrier %d of %d threads while this process's threads arrive at barrier "
                 "%d of %d",
                 id, nthreads, combine.id, combine.nthreads);
        return POSTBOX_DSM_ERR_BARRIER_MISMATCH;
    }
    combine.id = id;
    combine.nthreads = nthreads;
    mine = combine.batch;
    combine.count++;
    deadline_after(&deadline, BARRIER_COMBINE_NS);
    while (combine.sent <= mine) {
        if (!combine.sending && combine.batch == mine &&
            (combine.count >= local_threads() || passed(&deadline))) {
            int count = combine.count;
            uint64_t episode = 0;

            combine.sending = 1;
            combine.batch++;
            combine.count = 0;
            pthread_mutex_unlock(&combine.mutex);
            rc = barrier_send(id, nthreads, count, &episode);
            pthread_mutex_lock(&combine.mutex);
            combine.results[mine % BARRIER_RESULTS].episode = episode;
            combine.results[mine % BARRIER_RESULTS].rc = rc;
            combine.sent = mine + 1;
            combine.sending = 0;
            pthread_cond_broadcast(&combine.cv);
            continue;
        }
        if (combine.sending || combine.batch != mine) {
            pthread_cond_wait(&combine.cv, &combine.mutex);
        } else {
            struct timespec wake;

            deadline_after(&wake, BARRIER_COMBINE_NS / 4);
            pthread_cond_timedwait(&combine.cv, &combine.mutex, &wake);
        }
    }
    *episode_p = combine.results[mine % BARRIER_RESULTS].episode;
    rc = combine.results[mine % BARRIER_RESULTS].rc;
    pthread_mutex_unlock(&combine.mutex);
    return rc;
}

PB_EXPORT int postbox_dsm_barrier(int id, int nthreads)
{
    uint64_t episode;
    int rc = pb_dsm_check();

    if (rc != 0)
        return rc;
    if (id < 0 || id >= PB_DSM_MAX_BARRIERS) {
        pb_error("dsm: barrier id %d was never created", id);
        return POSTBOX_DSM_ERR_BAD_BARRIER;
    }
    if (nthreads < 1) {
        pb_error("dsm: a barrier of %d threads", nthreads);
        return POSTBOX_DSM_ERR_BAD_ARGUMENT;
    }
    if (pb_dsm_slot() < 0)
        return POSTBOX_DSM_ERR_TOO_MANY;
    /* (a failed episode fails every later barrier: logged when it failed) */
    rc = barrier_failure(atomic_load(&pb_dsm.processed_epoch) + 1);
    if (rc != 0)
        return rc;
    pb_dsm_count(&pb_dsm_counters.barriers, 1);
    rc = barrier_combine(id, nthreads, &episode);
    if (rc != 0)
        return rc;
    /* A waiter applies finished episodes itself (its own process's release
     * raises no signal that would wake the service thread), outside the
     * wait mutex: the catch-up takes it to wake the others.  A failure
     * (this process's, or another's told here) ends the wait; a long wait
     * asks process 0 whether the episode ended (barrier_probe). */
    uint64_t probe_ns = BARRIER_PROBE_NS, probe_at = pb_dsm_now_ns() + probe_ns;

    for (;;) {
        int done;

        rc = pb_dsm_barrier_catch_up();
        if (atomic_load(&pb_dsm.processed_epoch) >= episode)
            return 0;
        if (rc == 0)
            rc = barrier_failure(episode);
        if (rc != 0)
            return rc;
        pthread_mutex_lock(&pb_dsm.wait_mutex);
        done = atomic_load(&pb_dsm.processed_epoch) >= episode;
        if (!done) {
            struct timespec wake;

            deadline_after(&wake, 20 * 1000 * 1000);
            pthread_cond_timedwait(&pb_dsm.cv, &pb_dsm.wait_mutex, &wake);
            done = atomic_load(&pb_dsm.processed_epoch) >= episode;
        }
        pthread_mutex_unlock(&pb_dsm.wait_mutex);
        if (done)
            return 0;
        if (pb_dsm_now_ns() >= probe_at) {
            rc = barrier_probe(episode);
            if (rc != 0) {
                barrier_fail(episode, rc, "ask process 0 about");
                return rc;
            }
            probe_ns = probe_ns * 2 < BARRIER_PROBE_MAX_NS ? probe_ns * 2 : BARRIER_PROBE_MAX_NS;
            probe_at = pb_dsm_now_ns() + probe_ns;
        }
    }
}

/* ---- memory ------------------------------------------------------------------------ */

PB_EXPORT void *postbox_dsm_alloc(size_t size)
{
    pb_dsm_req_t req = {.op = PB_DSM_OP_COLL_RESERVE};
    pb_dsm_reply_t reply;
    size_t start, end;
    int rc = pb_dsm_check();

    if (rc == 0 && size == 0) {
        pb_error("dsm: postbox_dsm_alloc of 0 bytes");
        rc = POSTBOX_DSM_ERR_BAD_ARGUMENT;
    }
    if (rc != 0) {
        pb_dsm_set_error(rc);
        return NULL;
    }
    start = pb_dsm.coll_end;
    if (size > pb_dsm.size / 2 - start) {
        pb_error("dsm: postbox_dsm_alloc of %zu bytes: the collective half of the range has %zu",
                 size, pb_dsm.size / 2 - start);
        pb_dsm_set_error(POSTBOX_DSM_ERR_NO_MEMORY);
        return NULL;
    }
    end = start + (size + pb_dsm.page_size - 1) / pb_dsm.page_size * pb_dsm.page_size;
    req.a = end;
    req.d = pb_dsm.size;
    rc = pb_dsm_rpc(0, POSTBOX_DSM_MSG_ALLOC, &req, NULL, &reply);
    if (rc == 0 && reply.status < 0)
        rc = (int)reply.status;
    if (rc != 0) {
        pb_dsm_set_error(rc);
        return NULL;
    }
    pb_dsm.coll_end = end;
    return pb_dsm.base + start;
}

PB_EXPORT void *postbox_dsm_malloc(size_t size)
{
    pb_dsm_req_t req = {.op = PB_DSM_OP_MALLOC, .a = size};
    pb_dsm_reply_t reply;
    int rc = pb_dsm_check();

    if (rc == 0 && (size == 0 || size > pb_dsm.size)) {
        pb_error("dsm: postbox_dsm_malloc of %zu bytes", size);
        rc = size == 0 ? POSTBOX_DSM_ERR_BAD_ARGUMENT : POSTBOX_DSM_ERR_NO_MEMORY;
    }
    req.d = pb_dsm.size;
    if (rc == 0)
        rc = pb_dsm_rpc(0, POSTBOX_DSM_MSG_ALLOC, &req, NULL, &reply);
    if (rc == 0 && reply.status < 0) {
        rc = (int)reply.status;
        pb_error("dsm: postbox_dsm_malloc of %zu bytes: the shared range is full", size);
    }
    if (rc != 0) {
        pb_dsm_set_error(rc);
        return NULL;
    }
    return pb_dsm.base + reply.a;
}

PB_EXPORT int postbox_dsm_free(void *ptr)
{
    pb_dsm_req_t req = {.op = PB_DSM_OP_FREE};
    pb_dsm_reply_t reply;
    int rc = pb_dsm_check();

    if (rc != 0 || ptr == NULL)
        return rc;
    if ((char *)ptr < pb_dsm.base || (char *)ptr >= pb_dsm.base + pb_dsm.size) {
        pb_error("dsm: postbox_dsm_free of %p, outside the shared range", ptr);
        return POSTBOX_DSM_ERR_BAD_POINTER;
    }
    req.a = (uint64_t)((char *)ptr - pb_dsm.base);
    req.d = pb_dsm.size;
    rc = pb_dsm_rpc(0, POSTBOX_DSM_MSG_ALLOC, &req, NULL, &reply);
    if (rc == 0 && reply.status < 0) {
        rc = (int)reply.status;
        pb_error("dsm: postbox_dsm_free of %p, not a live block of postbox_dsm_malloc", ptr);
    }
    return rc;
}
