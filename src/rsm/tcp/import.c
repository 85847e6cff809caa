/*
 * The tcp transport's importer side: the frames exporters send (replies,
 * events, withdrawals), requests awaiting a reply, and the import ops
 * (connect, put, putv, get, barriers, signal post).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "boot/identity.h"
#include "rsm/tcp/tcp_impl.h"
#include "util/log.h"
#include "util/time.h"

static pb_tcp_request_t *tcp_request_find(pb_tcp_conn_t *c, uint32_t tag)
{
    for (pb_tcp_request_t *req = c->requests; req != NULL; req = req->next) {
        if (req->tag == tag)
            return req;
    }
    return NULL;
}

static pb_rsm_import_t *tcp_import_of_slot(pb_tcp_conn_t *c, uint32_t slot)
{
    return slot < c->slot_import_cap ? c->slot_imports[slot] : NULL;
}

static int tcp_slot_import_set(pb_tcp_conn_t *c, uint32_t slot, pb_rsm_import_t *im)
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

/* The abandoned request of @tag on @c, or NULL. */
static pb_tcp_abandoned_t *tcp_abandoned_find(pb_tcp_conn_t *c, uint32_t tag)
{
    for (uint32_t i = 0; i < c->abandoned_count; i++) {
        if (c->abandoned[i].tag == tag)
            return &c->abandoned[i];
    }
    return NULL;
}

/* Remember that @req's waiter gave up.  Caller holds pb_tcp.lock.
 * @return 0 when the connection holds too many already (or no memory). */
static int tcp_abandoned_add(pb_tcp_conn_t *c, const pb_tcp_request_t *req)
{
    if (c->abandoned_count == c->abandoned_cap) {
        uint32_t cap = c->abandoned_cap ? 2 * c->abandoned_cap : 8;
        pb_tcp_abandoned_t *grown;

        if (c->abandoned_cap >= TCP_MAX_ABANDONED)
            return 0;
        grown = realloc(c->abandoned, cap * sizeof(*grown));
        if (grown == NULL)
            return 0;
        c->abandoned = grown;
        c->abandoned_cap = cap;
    }
    c->abandoned[c->abandoned_count++] = (pb_tcp_abandoned_t){req->tag, req->type};
    return 1;
}

/* The late REPLY @frame to an abandoned request arrived: forget the
 * request; an attach that succeeded after all gives its slot back. */
static void tcp_abandoned_answered(pb_tcp_conn_t *c, const pb_tcp_frame_t *frame)
{
    pb_tcp_abandoned_t *late = tcp_abandoned_find(c, frame->tag);
    uint16_t type = late->type;

    *late = c->abandoned[--c->abandoned_count];
    if (type == PB_TCP_ATTACH && frame->status == PB_OK && frame->slot != 0) {
        pb_tcp_frame_t detach = {.type = PB_TCP_DETACH, .slot = frame->slot};

        pb_tcp_conn_queue(c, &detach, NULL);
    }
}

const char *pb_tcp_importer_on_header(void *ctx, const pb_tcp_frame_t *frame, char **dest_p)
{
    pb_tcp_conn_t *c = ctx;
    pb_tcp_request_t *req;
    const char *why;

    if (frame->type != PB_TCP_REPLY)
        return NULL;
    req = tcp_request_find(c, frame->tag);
    if (req == NULL && tcp_abandoned_find(c, frame->tag) != NULL)
        return NULL; /* its data, if any, is dropped */
    if (req == NULL)
        return "reply to no request";
    why = pb_tcp_reply_check(frame, req->type, req->dst != NULL ? req->dst_len : 0);
    if (why != NULL)
        return why;
    if (frame->length > 0)
        *dest_p = req->dst;
    return NULL;
}

void pb_tcp_importer_on_frame(void *ctx, const pb_tcp_frame_t *frame)
{
    pb_tcp_conn_t *c = ctx;
    pb_rsm_import_t *im;
    pb_tcp_request_t *req;

    switch (frame->type) {
    case PB_TCP_REPLY:
        req = tcp_request_find(c, frame->tag);
        if (req == NULL) {
            tcp_abandoned_answered(c, frame); /* (on_header let no other through) */
            break;
        }
        for (pb_tcp_request_t **p = &c->requests; *p != NULL; p = &(*p)->next) {
            if (*p == req) {
                *p = req->next;
                break;
            }
        }
        req->status = frame->status;
        req->slot = frame->slot;
        req->value = frame->offset;
        req->count = frame->count;
        req->reply_len = frame->length;
        if (req->import != NULL && frame->status == PB_OK &&
            !tcp_slot_import_set(c, frame->slot, req->import))
            req->status = PB_ERR_NO_MEMORY;
        /* the requester reading its own reply is not asleep: no wake-up */
        if (pthread_equal(req->requester, pthread_self()))
            atomic_fetch_add(&req->done, 1);
        else
            pb_tcp_word_bump(&req->done);
        break;
    case PB_TCP_EVENT:
    case PB_TCP_WITHDRAWN:
        im = tcp_import_of_slot(c, frame->slot);
        if (im == NULL)
            break; /* disconnected meanwhile */
        /* an event comes over every rail; a broken rail wakes the waiters
         * when it breaks (pb_tcp_conn_fail), so events it lost are not waited for */
        if (frame->type == PB_TCP_EVENT && !pb_tcp_rail_carries_events(im->tl, c))
            break;
        if (frame->type == PB_TCP_WITHDRAWN)
            atomic_store(&((pb_tcp_import_t *)im->tl)->withdrawn, 1);
        pb_tcp_word_bump(&((pb_tcp_import_t *)im->tl)->generation);
        break;
    default: break;
    }
}

static pb_status_t tcp_request_ready(void *arg)
{
    pb_tcp_request_t *req = arg;

    return atomic_load(&req->done) ? (pb_status_t)req->status : TCP_NOT_YET;
}

void pb_tcp_request_begin(pb_tcp_conn_t *c, pb_tcp_frame_t *frame, const void *payload,
                          pb_tcp_request_t *req, int alone)
{
    pb_status_t status;

    /* (before the request is sent: its reply may come at once) */
    req->reading = alone && pb_tcp_reader_take();
    req->requester = pthread_self();
    pthread_mutex_lock(&pb_tcp.lock);
    status = atomic_load(&c->failure);
    if (status == PB_OK) {
        if (c->next_tag == 0) /* tags are never 0: see pb_tcp_frame_check */
            c->next_tag = 1;
        req->tag = frame->tag = c->next_tag++;
        req->conn = c;
        req->type = frame->type;
        req->next = c->requests;
        c->requests = req;
    } else {
        req->status = PB_ERR_CONN_ABORTED;
        atomic_store(&req->done, 1);
    }
    pthread_mutex_unlock(&pb_tcp.lock);
    if (status != PB_OK)
        return;
    if (pb_tcp_conn_send_reading(c, frame, payload, &req->reading) != PB_OK) {
        /* the reader fails the request when it sees the connection break;
         * make sure it does */
        pthread_mutex_lock(&pb_tcp.lock);
        pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, NULL);
        pthread_mutex_unlock(&pb_tcp.lock);
    }
}

/* @req's deadline passed: unless its reply came meanwhile, take it off its
 * connection, so that nothing writes to it or its buffer any more (the
 * reader holds pb_tcp.lock while it receives into a request's buffer: a
 * reply arriving now goes on into scratch) and its reply is dropped when it
 * comes.  @return the reply's status, or PB_ERR_TIMEOUT. */
static pb_status_t tcp_request_abandon(pb_tcp_request_t *req)
{
    pb_tcp_conn_t *c = req->conn;
    pb_status_t status = PB_ERR_TIMEOUT;

    pthread_mutex_lock(&pb_tcp.lock);
    if (atomic_load(&req->done)) {
        status = req->status;
    } else {
        for (pb_tcp_request_t **p = &c->requests; *p != NULL; p = &(*p)->next) {
            if (*p == req) {
                *p = req->next;
                break;
            }
        }
        if (c->rx.in_payload && c->rx.frame.type == PB_TCP_REPLY && c->rx.frame.tag == req->tag)
            c->rx.dest = NULL; /* the rest of its data is read and dropped */
        if (!tcp_abandoned_add(c, req))
            pb_tcp_conn_fail(c, PB_ERR_CONN_ABORTED, "too many requests left unanswered");
    }
    pthread_mutex_unlock(&pb_tcp.lock);
    return status;
}

pb_status_t pb_tcp_request_end(pb_tcp_request_t *req, int64_t deadline_ms)
{
    pb_status_t status =
        pb_tcp_wait(tcp_request_ready, req, &req->done, pb_time_remaining_ms(deadline_ms, -1), 0,
                    req->reading ? req->conn : NULL);

    req->reading = 0;

    if (status == PB_ERR_TIMEOUT)
        status = tcp_request_abandon(req);
    return status == PB_ERR_CONN_ABORTED || status == PB_ERR_PROTOCOL ? PB_ERR_CONN_ABORTED
                                                                      : status;
}

pb_status_t pb_tcp_request(pb_tcp_conn_t *c, pb_tcp_frame_t *frame, const void *payload,
                           pb_tcp_request_t *req, int64_t deadline_ms)
{
    pb_tcp_request_begin(c, frame, payload, req, 1);
    return pb_tcp_request_end(req, deadline_ms);
}

static void tcp_import_free(pb_tcp_import_t *ti)
{
    for (int r = 0; r < ti->rail_count; r++)
        free(ti->rails[r].replay.buf);
    pthread_mutex_destroy(&ti->lock);
    free(ti);
}

pb_status_t pb_tcp_import_connect(pb_rsm_import_t *im)
{
    pb_tcp_import_t *ti = calloc(1, sizeof(*ti));
    pb_tcp_directory_t dir;
    struct sockaddr_in peer = {.sin_family = AF_INET};
    uint8_t key[PB_TCP_KEY_LEN];
    uint32_t addrs[TCP_MAX_RAILS];
    int count, first = 0;
    int64_t deadline;
    pb_status_t status;

    if (ti == NULL)
        return PB_ERR_NO_MEMORY;
    pthread_mutex_init(&ti->lock, NULL);
    /* the whole connect (lookup, relayed or not, handshakes and attaches of
     * every rail) has POSTBOX_TCP_REQUEST_TIMEOUT_MS */
    deadline = pb_time_now_ms() + pb_tcp_request_timeout_ms();
    status = pb_tcp_lookup(im->node, im->segid, &dir, pb_time_remaining_ms(deadline, -1));
    pb_tcp_key_of_job(key);
    if (status == PB_OK) {
        peer.sin_addr.s_addr = dir.addr;
        peer.sin_port = htons(dir.port);
    } else if (status == PB_ERR_NOT_PUBLISHED && im->node != pb_boot_identity_get()->node_id &&
               pb_boot_identity_get()->has_secret) {
        /* a node of the job in another namespace or on another host */
        status = pb_tcp_relay_lookup(im->node, im->segid, 0, key, deadline, &peer);
    }
    if (status != PB_OK)
        goto err_free;
    im->tl = ti;
    /* the rails: the node's addresses, when the one the exporter gave is
     * among them; that one (known to answer) is connected first */
    count = pb_boot_identity_get()->has_secret ? pb_tcp_node_addrs(im->node, addrs) : 0;
    for (int i = 0; i < count; i++) {
        if (addrs[i] == peer.sin_addr.s_addr)
            first = i;
    }
    if (count == 0 || addrs[first] != peer.sin_addr.s_addr) {
        addrs[0] = peer.sin_addr.s_addr;
        count = 1;
    }
    status = pb_tcp_rail_connect(im, first, addrs[first], ntohs(peer.sin_port), key, deadline);
    if (status != PB_OK)
        goto err_free;
    pb_tcp_link_state_set(im->node, first, 1);
    for (int i = 0; i < count; i++) {
        /* a rail that cannot be reached now is left out: the import works
         * over the others; one that does not answer costs at most
         * POSTBOX_TCP_TIMEOUT_MS, within the connect's deadline */
        int64_t rail_deadline = pb_time_now_ms() + pb_tcp_timeout_ms();

        if (i == first)
            continue;
        if (rail_deadline > deadline)
            rail_deadline = deadline;
        if (pb_tcp_rail_connect(im, i, addrs[i], ntohs(peer.sin_port), key, rail_deadline) == PB_OK)
            pb_tcp_link_state_set(im->node, i, 1);
        else
            pb_tcp_link_state_set(im->node, i, 0);
    }
    return PB_OK;

err_free:
    im->tl = NULL;
    tcp_import_free(ti);
    return status;
}

void pb_tcp_import_disconnect(pb_rsm_import_t *im)
{
    pb_tcp_import_t *ti = im->tl;

    pthread_mutex_lock(&pb_tcp.lock);
    for (int r = 0; r < ti->rail_count; r++) {
        pb_tcp_rail_t *rail = &ti->rails[r];
        pb_tcp_conn_t *c = rail->conn;

        if (rail->slot < c->slot_import_cap)
            c->slot_imports[rail->slot] = NULL;
        if (c->refs > 1) {
            pb_tcp_frame_t detach = {.type = PB_TCP_DETACH, .slot = rail->slot};

            pb_tcp_conn_queue(c, &detach, NULL);
        } /* else closing the connection detaches everything */
        pb_tcp_conn_put(c);
    }
    pthread_mutex_unlock(&pb_tcp.lock);
    im->tl = NULL;
    tcp_import_free(ti);
}

/* Wait until the exporter has every put sent so far over @im's rails
 * (pb_tcp_rails_barrier): puts striped over several are ordered with what
 * follows only by waiting for them.  On success nothing is striped any
 * more.  Caller holds ti->lock. */
static pb_status_t tcp_unstripe_locked(pb_rsm_import_t *im)
{
    pb_tcp_import_t *ti = im->tl;
    pb_status_t status = pb_tcp_rails_barrier(im, 0);

    if (status == PB_OK)
        ti->striped = 0;
    return status;
}

/* Heal @im's rails (pb_tcp_import_heal), then wait for the puts striped
 * over them, if any: what goes over the primary rail next follows
 * everything sent before.  Caller holds ti->lock. */
static pb_status_t tcp_import_order_locked(pb_rsm_import_t *im)
{
    pb_tcp_import_t *ti = im->tl;
    pb_status_t status = pb_tcp_import_heal(im);

    if (status == PB_OK && ti->striped)
        status = tcp_unstripe_locked(im);
    return status;
}

/* A call without reply lost with a broken rail (pb_tcp_import_heal) fails
 * the get or call with reply that follows, once, as it fails the next
 * barrier: the import applies its calls before its later gets and calls,
 * and the loss broke that order.  Caller holds ti->lock. */
static pb_status_t tcp_calls_lost_locked(pb_tcp_import_t *ti)
{
    if (!ti->calls_lost)
        return PB_OK;
    ti->calls_lost = 0;
    return PB_ERR_CONN_ABORTED;
}

/* Put, and with @signal post a signal to the exporter once the data is
 * applied; with @word_last as one frame whose first word the exporter
 * stores last.  With several rails, a put of POSTBOX_TCP_STRIPE_MIN bytes
 * or more goes over all of them in TCP_STRIPE_CHUNK pieces, round robin;
 * anything else goes over the first.  Caller holds ti->lock. */
static pb_status_t tcp_put_locked(pb_rsm_import_t *im, size_t offset, const char *from,
                                  size_t length, int signal, int word_last)
{
    pb_tcp_import_t *ti = im->tl;
    pb_status_t status = pb_tcp_import_heal(im);
    int striped = 0, may_stripe = !word_last && pb_tcp_live_rails(ti) > 1;

    /* a put that goes over the first rail alone must not overtake the
     * pieces of an earlier striped one on the other rails: the program may
     * read its arrival as the earlier put's (a flag after data) */
    if (status == PB_OK && ti->striped && !(may_stripe && length >= pb_tcp.stripe_min))
        status = tcp_unstripe_locked(im);

    while (status == PB_OK && length > 0) {
        int stripe = may_stripe && pb_tcp_live_rails(ti) > 1 && length >= pb_tcp.stripe_min;
        size_t max = stripe ? TCP_STRIPE_CHUNK : PB_TCP_MAX_PAYLOAD;
        uint32_t chunk = (uint32_t)(length > max ? max : length);
        pb_tcp_rail_t *rail = pb_tcp_primary_rail(ti);
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
        if (pb_tcp_live_rails(ti) > 1 && rail->replay.len > 0 &&
            rail->replay.len + chunk > TCP_REPLAY_MAX) {
            /* the rail keeps enough for replay: free it */
            status = pb_tcp_rails_barrier(im, 1u << (rail - ti->rails));
            continue;
        }
        status = pb_tcp_rail_send(ti, rail, &frame, from);
        if (status != PB_OK && pb_tcp_rail_broken(rail))
            status = pb_tcp_import_heal(im); /* the chunk went again over another rail */
        from += chunk;
        offset += chunk;
        length -= chunk;
    }
    if (striped)
        ti->striped = 1;
    if (status == PB_OK && signal && striped) {
        /* the pieces went over several rails: the signal follows all of them */
        pb_tcp_frame_t frame = {.type = PB_TCP_SIGNAL, .flags = PB_TCP_FLAG_ACCUMULATE};

        status = tcp_unstripe_locked(im);
        if (status == PB_OK) {
            status = pb_tcp_rail_send(ti, pb_tcp_primary_rail(ti), &frame, NULL);
            if (status != PB_OK)
                status = pb_tcp_import_heal(im);
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
    pb_tcp_import_t *ti = im->tl;
    pb_tcp_frame_t frames[TCP_GATHER_MAX];
    const void *payloads[TCP_GATHER_MAX];
    pb_tcp_rail_t *rail;
    pb_status_t status;

    if (count > TCP_GATHER_MAX || ti->striped || pb_tcp_live_rails(ti) != 1)
        return PB_ERR_UNSUPPORTED;
    for (size_t i = 0; i < count; i++) {
        if (entries[i].length > PB_TCP_MAX_PAYLOAD)
            return PB_ERR_UNSUPPORTED;
    }
    status = pb_tcp_import_heal(im);
    if (status != PB_OK)
        return status;
    rail = pb_tcp_primary_rail(ti);
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
    status = pb_tcp_conn_send_frames(rail->conn, frames, payloads, (int)count);
    if (status != PB_OK) {
        /* as pb_tcp_rail_send: the caller's next operation sees the break */
        pthread_mutex_lock(&pb_tcp.lock);
        pb_tcp_conn_fail(rail->conn, PB_ERR_CONN_ABORTED, NULL);
        pthread_mutex_unlock(&pb_tcp.lock);
    }
    return status;
}

pb_status_t pb_tcp_put_vector(pb_rsm_import_t *im, const pb_rsm_put_entry_t *entries, size_t count,
                              int signal, int word_last)
{
    pb_tcp_import_t *ti = im->tl;
    pb_status_t status = pb_tcp_import_state(ti);

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
        status = pb_tcp_barrier_close(im);
    return status == PB_OK || status == PB_ERR_TIMEOUT ? status : PB_ERR_CONN_ABORTED;
}

pb_status_t pb_tcp_put(pb_rsm_import_t *im, size_t offset, const void *src, size_t length)
{
    pb_rsm_put_entry_t entry = {.offset = offset, .src = src, .length = length};

    return pb_tcp_put_vector(im, &entry, 1, 0, 0);
}

/* A get is cut into pieces of at most PB_TCP_MAX_GET bytes, each a GET
 * frame whose reply is received straight into its place in @dst; up to
 * TCP_GET_WINDOW of them are outstanding at once on the primary rail, so
 * that the exporter has the next piece to send while the importer
 * receives one.  Replies come in the order the GETs went (one connection),
 * so the pieces are finished in order.  When a piece fails, every other
 * one outstanding is taken off its connection before returning (their
 * requests live in this frame; a late reply is dropped); when the rail
 * broke, the pieces from the first unfinished one are asked for again over
 * the next rail. */
pb_status_t pb_tcp_get(pb_rsm_import_t *im, size_t offset, void *dst, size_t length)
{
    pb_tcp_import_t *ti = im->tl;
    pb_tcp_request_t reqs[TCP_GET_WINDOW];
    size_t pieces = length / PB_TCP_MAX_GET + (length % PB_TCP_MAX_GET != 0);
    size_t sent = 0, finished = 0; /* pieces asked for, pieces received */
    pb_status_t status = pb_tcp_import_state(ti);
    int64_t deadline = pb_tcp_reply_deadline();
    pb_tcp_rail_t *rail;

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&ti->lock);
    status = pb_tcp_import_heal(im);
    if (status == PB_OK)
        status = tcp_calls_lost_locked(ti);
    while (status == PB_OK && finished < pieces) {
        rail = pb_tcp_primary_rail(ti);
        for (; sent < pieces && sent - finished < TCP_GET_WINDOW; sent++) {
            size_t at = sent * PB_TCP_MAX_GET;
            uint32_t chunk =
                (uint32_t)(length - at > PB_TCP_MAX_GET ? PB_TCP_MAX_GET : length - at);
            pb_tcp_frame_t frame = {
                .type = PB_TCP_GET, .slot = rail->slot, .offset = offset + at, .count = chunk};
            pb_tcp_request_t *req = &reqs[sent % TCP_GET_WINDOW];

            *req = (pb_tcp_request_t){.dst = (char *)dst + at, .dst_len = chunk};
            pb_tcp_request_begin(rail->conn, &frame, NULL, req, pieces == 1);
        }
        status = pb_tcp_request_end(&reqs[finished % TCP_GET_WINDOW], deadline);
        if (status == PB_OK) {
            finished++;
            continue;
        }
        /* the pieces after it: off the connection (a broken one failed them all) */
        for (size_t i = finished + 1; i < sent; i++)
            (void)tcp_request_abandon(&reqs[i % TCP_GET_WINDOW]);
        sent = finished;
        if (pb_tcp_rail_broken(rail)) {
            status = pb_tcp_import_heal(im); /* ask again over another rail */
            if (status == PB_OK)
                status = tcp_calls_lost_locked(ti);
        }
    }
    /* (its replies came after the calls sent before it on that rail: they ran) */
    if (status == PB_OK)
        pb_tcp_primary_rail(ti)->calls_unconfirmed = 0;
    pthread_mutex_unlock(&ti->lock);
    return status;
}

/* A call goes over the primary rail, after the puts striped over several
 * (a barrier first: they are ordered with it only by waiting for them).
 * It is never sent again over another rail (its handler would run twice):
 * when the rail breaks, a call awaiting its reply fails, and one without a
 * reply makes the next barrier, get or call with reply fail
 * (pb_tcp_import_heal, tcp_calls_lost_locked); a reply confirms the calls
 * sent before it on its rail. */
pb_status_t pb_tcp_call(pb_rsm_import_t *im, const void *request, size_t request_len, void *reply,
                        size_t reply_max, size_t *reply_len_p, int no_reply)
{
    pb_tcp_import_t *ti = im->tl;
    pb_tcp_frame_t frame = {.type = PB_TCP_CALL,
                            .flags = no_reply ? PB_TCP_FLAG_NO_REPLY : 0,
                            .length = (uint32_t)request_len,
                            .count = (uint32_t)reply_max};
    pb_status_t status = pb_tcp_import_state(ti);
    pb_tcp_rail_t *rail;

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&ti->lock);
    status = tcp_import_order_locked(im);
    if (status == PB_OK && !no_reply)
        status = tcp_calls_lost_locked(ti);
    if (status != PB_OK) {
        pthread_mutex_unlock(&ti->lock);
        return status;
    }
    rail = pb_tcp_primary_rail(ti);
    frame.slot = rail->slot;
    if (no_reply) {
        rail->dirty = 1;
        rail->calls_unconfirmed |= pb_tcp_live_rails(ti) > 1;
        status = pb_tcp_conn_send(rail->conn, &frame, request);
        if (status != PB_OK) {
            /* as pb_tcp_rail_send: the next operation fails the rail over */
            pthread_mutex_lock(&pb_tcp.lock);
            pb_tcp_conn_fail(rail->conn, PB_ERR_CONN_ABORTED, NULL);
            pthread_mutex_unlock(&pb_tcp.lock);
        }
    } else {
        pb_tcp_request_t req = {.dst = reply, .dst_len = reply_max};

        status = pb_tcp_request(rail->conn, &frame, request, &req, pb_tcp_reply_deadline());
        if (status == PB_OK) {
            *reply_len_p = req.reply_len;
            rail->calls_unconfirmed = 0;
        } else if (status == PB_ERR_PERMISSION)
            pb_log_limited(&pb_tcp.log_call, TCP_LOG_INTERVAL_MS,
                           "tcp: call on segment %#x of node %u refused: the exporter has set "
                           "no handler",
                           im->segid, im->node);
        if (status != PB_OK && pb_tcp_rail_broken(rail))
            (void)pb_tcp_import_heal(im); /* the import's other traffic goes on over another rail */
    }
    pthread_mutex_unlock(&ti->lock);
    if (status == PB_OK && no_reply && im->mode == RSM_BARRIER_MODE_IMPLICIT)
        status = pb_tcp_barrier_close(im);
    return status;
}

pb_status_t pb_tcp_map(pb_rsm_import_t *im, void **address_p, int fixed, int writable,
                       size_t offset, size_t length)
{
    (void)im, (void)address_p, (void)fixed, (void)writable, (void)offset, (void)length;
    return PB_ERR_UNSUPPORTED; /* never called: the caps say can_map = 0 */
}

void pb_tcp_unmap(pb_rsm_import_t *im)
{
    (void)im;
}

pb_status_t pb_tcp_barrier_open(pb_rsm_import_t *im)
{
    return pb_tcp_import_state(im->tl);
}

pb_status_t pb_tcp_barrier_order(pb_rsm_import_t *im)
{
    pb_tcp_import_t *ti = im->tl;
    pb_status_t status = pb_tcp_import_state(ti);

    /* one rail keeps TCP's order; puts striped over several are ordered
     * with later ones only by waiting for them */
    if (status == PB_OK && ti->striped)
        status = pb_tcp_barrier_close(im);
    return status;
}

pb_status_t pb_tcp_barrier_close(pb_rsm_import_t *im)
{
    pb_tcp_import_t *ti = im->tl;
    pb_status_t status = pb_tcp_import_state(ti);

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&ti->lock);
    status = tcp_unstripe_locked(im);
    pthread_mutex_unlock(&ti->lock);
    if (status == PB_ERR_PERMISSION)
        pb_log_limited(&pb_tcp.log_call, TCP_LOG_INTERVAL_MS,
                       "tcp: a call without reply on segment %#x of node %u was refused: the "
                       "exporter has set no handler",
                       im->segid, im->node);
    return status == PB_OK ? pb_tcp_import_state(ti) : status;
}

pb_status_t pb_tcp_import_signal_post(pb_rsm_import_t *im, int accumulate)
{
    pb_tcp_import_t *ti = im->tl;
    pb_tcp_frame_t frame = {.type = PB_TCP_SIGNAL,
                            .flags = accumulate ? PB_TCP_FLAG_ACCUMULATE : 0};
    pb_status_t status = pb_tcp_import_state(ti);

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&ti->lock);
    /* over one rail a signal follows the puts before it; puts striped over
     * several reach the exporter before the signal only by waiting */
    status = tcp_import_order_locked(im);
    if (status == PB_OK) {
        pb_tcp_rail_t *rail = pb_tcp_primary_rail(ti);

        status = pb_tcp_rail_send(ti, rail, &frame, NULL);
        if (status != PB_OK && pb_tcp_rail_broken(rail))
            status = pb_tcp_import_heal(im); /* sent again over another rail */
    }
    pthread_mutex_unlock(&ti->lock);
    return status == PB_OK || status == PB_ERR_TIMEOUT ? status : PB_ERR_CONN_ABORTED;
}
