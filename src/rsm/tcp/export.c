/*
 * The tcp transport's exporter side: the frames importers send (attach,
 * puts received straight into the segment, gets, barriers, signals, calls
 * run by the segment's handler), and
 * the export ops (create, rebind, publish, unpublish, signal post).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "boot/identity.h"
#include "rsm/rendezvous.h"
#include "rsm/tcp/tcp_impl.h"
#include "util/log.h"

static pb_tcp_slot_t *tcp_slot_of(pb_tcp_conn_t *c, uint32_t slot)
{
    if (slot == 0 || slot > c->slot_count || !c->slots[slot - 1].in_use)
        return NULL;
    return &c->slots[slot - 1];
}

pb_tcp_export_t *pb_tcp_published_find(rsm_memseg_id_t segid)
{
    for (pb_tcp_export_t *te = pb_tcp.published; te != NULL; te = te->next) {
        if (te->segid == segid)
            return te;
    }
    return NULL;
}

void pb_tcp_reply(pb_tcp_conn_t *c, const pb_tcp_frame_t *request, pb_status_t status,
                  uint32_t slot, uint64_t value, uint32_t count, const void *data, uint32_t length)
{
    pb_tcp_frame_t reply = {.type = PB_TCP_REPLY,
                            .status = (int32_t)status,
                            .slot = slot,
                            .tag = request->tag,
                            .offset = value,
                            .length = length,
                            .count = count};

    pb_tcp_conn_queue(c, &reply, data);
}

/* A slot for a new import on @c: a free one, else one more (the array
 * grows by doubling).  @return its number, or 0 when @c has
 * PB_TCP_MAX_SLOTS already (PB_ERR_NO_RESOURCE) or no memory is left
 * (PB_ERR_NO_MEMORY), in *@status_p. */
static uint32_t tcp_slot_take(pb_tcp_conn_t *c, pb_status_t *status_p)
{
    uint32_t number = c->slot_free;

    if (number != 0) {
        c->slot_free = c->slots[number - 1].next_free;
        return number;
    }
    if (c->slot_count == PB_TCP_MAX_SLOTS) {
        *status_p = PB_ERR_NO_RESOURCE;
        return 0;
    }
    if (c->slot_count == c->slot_cap) {
        uint32_t cap = c->slot_cap ? 2 * c->slot_cap : 8;
        pb_tcp_slot_t *grown;

        if (cap > PB_TCP_MAX_SLOTS)
            cap = PB_TCP_MAX_SLOTS;
        grown = realloc(c->slots, cap * sizeof(*grown));
        if (grown == NULL) {
            *status_p = PB_ERR_NO_MEMORY;
            return 0;
        }
        c->slots = grown;
        c->slot_cap = cap;
    }
    return ++c->slot_count;
}

static void tcp_serve_attach(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame)
{
    pb_tcp_export_t *te = pb_tcp_published_find(c->export_rx.attach.segid);
    uint32_t perm = c->export_rx.attach.perm;
    pb_status_t status = PB_OK;
    uint32_t number;
    int grant;

    if (te == NULL) {
        pb_tcp_reply(c, frame, PB_ERR_NOT_PUBLISHED, 0, 0, 0, NULL, 0);
        return;
    }
    /* the job's processes run as one user: the peer is judged as the owner */
    grant = pb_rsm_acl_grant(te->seg, c->peer_node, geteuid(), getegid());
    if (grant < 0) {
        pb_tcp_reply(c, frame, PB_ERR_NOT_PUBLISHED_TO_NODE, 0, 0, 0, NULL, 0);
        return;
    }
    if (perm == 0 || (perm & ~(uint32_t)RSM_PERM_RDWR) != 0 || (perm & ~(uint32_t)grant) != 0) {
        pb_tcp_reply(c, frame, PB_ERR_PERMISSION, 0, 0, 0, NULL, 0);
        return;
    }
    number = tcp_slot_take(c, &status);
    if (number == 0) {
        if (status == PB_ERR_NO_RESOURCE)
            pb_log_limited(&pb_tcp.log_peer, TCP_LOG_INTERVAL_MS,
                           "tcp: pid %u (node %u) has %u imports on one connection, the "
                           "most there may be: another is refused",
                           c->peer_pid, c->peer_node, PB_TCP_MAX_SLOTS);
        pb_tcp_reply(c, frame, status, 0, 0, 0, NULL, 0);
        return;
    }
    c->slots[number - 1] = (pb_tcp_slot_t){.in_use = 1, .exp = te, .perm = perm};
    pb_tcp_reply(c, frame, PB_OK, number, te->seg->size, perm, NULL, 0);
}

const char *pb_tcp_exporter_on_header(void *ctx, const pb_tcp_frame_t *frame, char **dest_p)
{
    pb_tcp_conn_t *c = ctx;
    pb_tcp_slot_t *slot = NULL;
    pb_tcp_slot_view_t view;

    if (frame->type != PB_TCP_ATTACH && frame->type != PB_TCP_LOOKUP)
        slot = tcp_slot_of(c, frame->slot);
    if (slot == NULL)
        return pb_tcp_export_header(&c->export_rx, frame, NULL, dest_p);
    if (slot->exp != NULL) {
        view = (pb_tcp_slot_view_t){slot->exp->seg->vaddr, slot->exp->seg->size, slot->perm};
    } else {
        /* withdrawn: the data is dropped, the next barrier reports it */
        view = (pb_tcp_slot_view_t){NULL, 0, slot->perm};
        if (frame->type == PB_TCP_PUT)
            slot->error = PB_ERR_CONN_ABORTED;
    }
    return pb_tcp_export_header(&c->export_rx, frame, &view, dest_p);
}

/* An importer's signal reaches @te: count it as shm does. */
static void tcp_export_post(pb_tcp_export_t *te, int accumulate)
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
    pb_tcp_futex_wake(&te->events);
}

/* Run the segment's call handler on a CALL and answer it; a CALL without
 * reply that fails leaves its error for the next barrier. */
static void tcp_serve_call(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame, pb_tcp_slot_t *slot)
{
    pb_status_t status = PB_ERR_CONN_ABORTED; /* withdrawn: the request was dropped */
    uint32_t reply_len = 0;
    size_t said = 0;

    if (slot->exp != NULL) {
        pb_rsm_export_t *seg = slot->exp->seg;

        status = pb_tcp_export_call(&c->export_rx, frame, seg->vaddr, seg->size, seg->call_handler,
                                    seg->call_arg, &reply_len, &said);
        if (said > frame->count)
            pb_log_limited(&pb_tcp.log_call, TCP_LOG_INTERVAL_MS,
                           "tcp: the call handler of segment %#x gave a reply of %zu bytes, "
                           "more than the %u the caller takes: cut to those",
                           slot->exp->segid, said, frame->count);
    }
    if (frame->flags & PB_TCP_FLAG_NO_REPLY) {
        if (status != PB_OK && slot->error == PB_OK)
            slot->error = status;
        return;
    }
    pb_tcp_reply(c, frame, status, frame->slot, 0, 0, c->export_rx.reply,
                 status == PB_OK ? reply_len : 0);
}

void pb_tcp_exporter_on_frame(void *ctx, const pb_tcp_frame_t *frame)
{
    pb_tcp_conn_t *c = ctx;
    pb_tcp_slot_t *slot = tcp_slot_of(c, frame->slot); /* NULL for ATTACH and LOOKUP */

    switch (frame->type) {
    case PB_TCP_ATTACH: tcp_serve_attach(c, frame); break;
    case PB_TCP_LOOKUP: pb_tcp_serve_lookup(c, frame); break;
    case PB_TCP_DETACH:
        slot->in_use = 0;
        slot->next_free = c->slot_free;
        c->slot_free = frame->slot;
        break;
    case PB_TCP_PUT:
        if ((frame->flags & PB_TCP_FLAG_WORD_LAST) && slot->exp != NULL)
            pb_tcp_export_word_last(&c->export_rx, frame, slot->exp->seg->vaddr);
        /* the payload is in place */
        if ((frame->flags & PB_TCP_FLAG_SIGNAL) && slot->exp != NULL)
            tcp_export_post(slot->exp, 1);
        break;
    case PB_TCP_GET:
        if (slot->exp == NULL)
            pb_tcp_reply(c, frame, PB_ERR_CONN_ABORTED, frame->slot, 0, 0, NULL, 0);
        else
            pb_tcp_reply(c, frame, PB_OK, frame->slot, 0, 0,
                         (char *)slot->exp->seg->vaddr + frame->offset, frame->count);
        break;
    case PB_TCP_BARRIER:
        /* every earlier frame of this connection is applied */
        pb_tcp_reply(c, frame, slot->exp == NULL ? PB_ERR_CONN_ABORTED : slot->error, frame->slot,
                     0, 0, NULL, 0);
        slot->error = PB_OK;
        break;
    case PB_TCP_CALL: tcp_serve_call(c, frame, slot); break;
    case PB_TCP_SIGNAL:
        if (slot->exp != NULL)
            tcp_export_post(slot->exp, frame->flags & PB_TCP_FLAG_ACCUMULATE);
        break;
    default: break; /* pb_tcp_frame_check let no other type through */
    }
}

pb_status_t pb_tcp_export_create(pb_rsm_export_t *seg)
{
    pb_status_t status = pb_rsm_check_writable(seg->vaddr, seg->size);
    pb_tcp_export_t *te;

    if (status != PB_OK)
        return status;
    te = calloc(1, sizeof(*te));
    if (te == NULL)
        return PB_ERR_NO_MEMORY;
    te->seg = seg;
    seg->tl = te;
    return PB_OK;
}

void pb_tcp_export_destroy(pb_rsm_export_t *seg)
{
    /* unpublished (the dispatcher checked), so no frame names it */
    free(seg->tl);
    seg->tl = NULL;
}

/* Point puts being received into @te's memory at @base (NULL: drop
 * them): pb_tcp_export_redirect.  Caller holds pb_tcp.lock. */
static void tcp_export_redirect(pb_tcp_export_t *te, char *base)
{
    for (pb_tcp_conn_t *c = pb_tcp.conns; c != NULL; c = c->next) {
        pb_tcp_slot_t *slot;

        if (!c->at_exporter || !c->rx.in_payload || c->rx.frame.type != PB_TCP_PUT)
            continue;
        slot = tcp_slot_of(c, c->rx.frame.slot);
        if (slot != NULL && slot->exp == te)
            pb_tcp_export_redirect(&c->rx, base);
    }
}

pb_status_t pb_tcp_export_rebind(pb_rsm_export_t *seg, void *vaddr)
{
    pb_status_t status = pb_rsm_check_writable(vaddr, seg->size);

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&pb_tcp.lock);
    tcp_export_redirect(seg->tl, vaddr);
    seg->vaddr = vaddr;
    pthread_mutex_unlock(&pb_tcp.lock);
    return PB_OK;
}

pb_status_t pb_tcp_export_publish(pb_rsm_export_t *seg, rsm_memseg_id_t *segid_p)
{
    pb_tcp_export_t *te = seg->tl;
    rsm_node_id_t node = pb_boot_identity_get()->node_id;
    rsm_memseg_id_t segid = *segid_p;
    pb_status_t status;
    int fd;

    pthread_mutex_lock(&pb_tcp.lock);
    status = pb_tcp_start();
    if (status == PB_OK)
        status = pb_tcp_listen();
    if (status != PB_OK)
        goto out;
    status = pb_rsm_rendezvous_listen(TCP_RENDEZVOUS_PREFIX, node, &segid, &fd);
    if (status != PB_OK)
        goto out;
    status = pb_tcp_source_add(fd, EPOLLIN, pb_tcp_rendezvous_ready, te, 0, &te->rendezvous_id);
    if (status != PB_OK) {
        close(fd);
        goto out;
    }
    te->segid = segid;
    te->next = pb_tcp.published;
    pb_tcp.published = te;
    *segid_p = segid;
out:
    pthread_mutex_unlock(&pb_tcp.lock);
    return status;
}

pb_status_t pb_tcp_export_unpublish(pb_rsm_export_t *seg)
{
    pb_tcp_export_t *te = seg->tl;
    pb_evset_entry_t *src;

    pthread_mutex_lock(&pb_tcp.lock);
    src = pb_evset_get(&pb_tcp.sources, te->rendezvous_id);
    if (src != NULL) {
        int fd = src->fd;

        pb_tcp_source_remove(te->rendezvous_id); /* the name disappears */
        close(fd);
    }
    for (pb_tcp_export_t **p = &pb_tcp.published; *p != NULL; p = &(*p)->next) {
        if (*p == te) {
            *p = te->next;
            break;
        }
    }
    /* importers are cut off: their slots stay until they detach */
    tcp_export_redirect(te, NULL);
    for (pb_tcp_conn_t *c = pb_tcp.conns; c != NULL; c = c->next) {
        if (!c->at_exporter)
            continue;
        for (uint32_t i = 0; i < c->slot_count; i++) {
            if (c->slots[i].in_use && c->slots[i].exp == te) {
                pb_tcp_frame_t withdrawn = {.type = PB_TCP_WITHDRAWN, .slot = i + 1};

                c->slots[i].exp = NULL;
                pb_tcp_conn_queue(c, &withdrawn, NULL);
            }
        }
    }
    pb_tcp_reap_failed();
    pthread_mutex_unlock(&pb_tcp.lock);
    return PB_OK;
}

pb_status_t pb_tcp_export_signal_post(pb_rsm_export_t *seg, int accumulate)
{
    pb_tcp_export_t *te = seg->tl;

    /* importers consume all pending exporter events at once, so an
     * accumulating and a non-accumulating post look the same to them, and
     * an EVENT not yet sent stands for this post too: a slow reader gets
     * at most one queued per import, however fast the posts come */
    (void)accumulate;
    pthread_mutex_lock(&pb_tcp.lock);
    for (pb_tcp_conn_t *c = pb_tcp.conns; c != NULL; c = c->next) {
        if (!c->at_exporter)
            continue;
        for (uint32_t i = 0; i < c->slot_count; i++) {
            pb_tcp_slot_t *slot = &c->slots[i];

            if (slot->in_use && slot->exp == te && slot->event_end <= c->outq.sent) {
                pb_tcp_frame_t event = {.type = PB_TCP_EVENT, .slot = i + 1};

                pb_tcp_conn_queue(c, &event, NULL);
                slot->event_end = pb_tcp_outq_end(&c->outq);
            }
        }
    }
    pb_tcp_reap_failed();
    pthread_mutex_unlock(&pb_tcp.lock);
    return PB_OK;
}
