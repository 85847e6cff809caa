/*
 * The tcp transport's rails: an import holds one connection per address
 * of the exporter's node.  Long puts are striped over them; what a rail
 * sent since its last barrier is kept so that another rail can send it
 * again if it breaks; barriers close on every rail used.  Also the
 * topology rsm_get_interconnect_topology reports (a link per rail).
 */
#include <arpa/inet.h>
#include <postbox/job.h>
#include <stdlib.h>
#include <string.h>

#include "boot/identity.h"
#include "rsm/tcp/tcp_impl.h"
#include "util/log.h"
#include "util/time.h"

int pb_tcp_rail_carries_events(const pb_tcp_import_t *ti, const pb_tcp_conn_t *c)
{
    for (int r = 0; r < ti->rail_count; r++) {
        if (atomic_load(&ti->rails[r].conn->failure) == PB_OK)
            return ti->rails[r].conn == c;
    }
    return 0;
}

int pb_tcp_rail_count(void)
{
    uint32_t addrs[TCP_MAX_RAILS];
    int count = pb_tcp_local_addrs(addrs);

    return count > 0 ? count : 1;
}

void pb_tcp_rail_link(int rail, rsm_node_id_t node, rsm_addr_t *hwaddr_p, uint_t *state_p)
{
    uint32_t addrs[TCP_MAX_RAILS];
    int count = pb_tcp_node_addrs(node, addrs), down;

    if (count == 0 && node == pb_boot_identity_get()->node_id)
        count = pb_tcp_local_addrs(addrs);
    /* a rail the node does not have, or one whose connection broke last */
    pthread_mutex_lock(&pb_tcp.lock);
    down = rail >= count || (pb_tcp.link_down != NULL && node < pb_tcp.link_nodes &&
                             pb_tcp.link_down[node * TCP_MAX_RAILS + (size_t)rail]);
    pthread_mutex_unlock(&pb_tcp.lock);
    *hwaddr_p = rail < count ? ntohl(addrs[rail]) : node;
    *state_p = down ? RSM_CONNECTION_INACTIVE : RSM_CONNECTION_ACTIVE;
}

void pb_tcp_link_state_set(rsm_node_id_t node, int rail, int up)
{
    int count = postbox_job_node_count(); /* < 1 outside a launched job */
    size_t nodes = count > 0 ? (size_t)count : 1;

    pthread_mutex_lock(&pb_tcp.lock);
    if (pb_tcp.link_down == NULL)
        pb_tcp.link_down = calloc(nodes * TCP_MAX_RAILS, 1);
    if (pb_tcp.link_down != NULL) {
        pb_tcp.link_nodes = nodes;
        if (node < nodes)
            pb_tcp.link_down[node * TCP_MAX_RAILS + (size_t)rail] = (uint8_t)!up;
    }
    pthread_mutex_unlock(&pb_tcp.lock);
}

/* Keep @frame and its payload for replay.  @return 0 when out of memory. */
static int tcp_replay_append(pb_tcp_replay_t *log, const pb_tcp_frame_t *frame, const void *payload)
{
    size_t need = sizeof(pb_tcp_replay_rec_t) + ((frame->length + 7u) & ~(size_t)7);
    pb_tcp_replay_rec_t rec = {.offset = frame->offset,
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

static void tcp_replay_clear(pb_tcp_replay_t *log)
{
    log->len = 0;
    if (log->cap > 2 * TCP_REPLAY_MAX) { /* a replay grew it: give it back */
        free(log->buf);
        *log = (pb_tcp_replay_t){0};
    }
}

pb_status_t pb_tcp_rail_send(pb_tcp_import_t *ti, pb_tcp_rail_t *rail, pb_tcp_frame_t *frame,
                             const void *payload)
{
    pb_status_t status;

    frame->slot = rail->slot;
    if (pb_tcp_live_rails(ti) > 1 && !tcp_replay_append(&rail->replay, frame, payload))
        return PB_ERR_NO_MEMORY;
    rail->dirty = 1;
    status = pb_tcp_conn_send(rail->conn, frame, payload);
    if (status != PB_OK) {
        /* the send saw the break before the reader did: mark it now, so
         * that the caller fails over (part of a frame may be out) */
        pthread_mutex_lock(&pb_tcp.lock);
        pb_tcp_conn_fail(rail->conn, PB_ERR_CONN_ABORTED, NULL);
        pthread_mutex_unlock(&pb_tcp.lock);
    }
    return status;
}

pb_status_t pb_tcp_import_heal(pb_rsm_import_t *im)
{
    pb_tcp_import_t *ti = im->tl;

    for (;;) {
        pb_tcp_rail_t *broken = NULL, *target;
        pb_tcp_replay_t log;
        size_t at = 0;

        for (int r = 0; r < ti->rail_count && broken == NULL; r++) {
            if (!ti->rails[r].dead && pb_tcp_rail_broken(&ti->rails[r]))
                broken = &ti->rails[r];
        }
        if (broken == NULL)
            return pb_tcp_primary_rail(ti) != NULL ? PB_OK : PB_ERR_CONN_ABORTED;
        broken->dead = 1;
        pb_tcp_link_state_set(im->node, broken->index, 0);
        if (broken->calls_unconfirmed) {
            /* not sent again: whether their handlers ran is unknown */
            pb_warn("tcp: rail %d to node %u broke with calls without reply unconfirmed: the "
                    "next barrier, get or call with reply reports them lost",
                    broken->index, im->node);
            ti->calls_lost = 1;
        }
        log = broken->replay;
        broken->replay = (pb_tcp_replay_t){0};
        target = pb_tcp_primary_rail(ti);
        if (target != NULL)
            pb_warn("tcp: rail %d to node %u broke; its last %zu bytes go again over rail %d",
                    broken->index, im->node, log.len, target->index);
        while (target != NULL && at < log.len) {
            pb_tcp_replay_rec_t rec;
            pb_tcp_frame_t frame;
            const char *payload = log.buf + at + sizeof(rec);

            memcpy(&rec, log.buf + at, sizeof(rec));
            frame = (pb_tcp_frame_t){
                .type = rec.type, .flags = rec.flags, .offset = rec.offset, .length = rec.length};
            /* a send that fails leaves the record in the target's copy (or,
             * on the last rail, fails the import at the next pass) */
            if (pb_tcp_rail_send(ti, target, &frame, payload) == PB_ERR_NO_MEMORY)
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

pb_status_t pb_tcp_rails_barrier(pb_rsm_import_t *im, unsigned only)
{
    pb_tcp_import_t *ti = im->tl;
    int64_t deadline = pb_tcp_reply_deadline();

    for (;;) {
        pb_tcp_request_t reqs[TCP_MAX_RAILS];
        int asked[TCP_MAX_RAILS] = {0}, asking = 0, broke = 0;
        pb_status_t result = pb_tcp_import_heal(im);

        if (result != PB_OK)
            return result;
        for (int r = 0; r < ti->rail_count; r++) {
            pb_tcp_rail_t *rail = &ti->rails[r];

            if (!rail->dead && rail->dirty && (only == 0 || (only & (1u << r)))) {
                asked[r] = 1;
                asking++;
            }
        }
        if (asking == 0) {
            asked[pb_tcp_primary_rail(ti) - ti->rails] = 1;
            asking = 1;
        }
        for (int r = 0; r < ti->rail_count; r++) {
            pb_tcp_frame_t frame = {.type = PB_TCP_BARRIER, .slot = ti->rails[r].slot};

            if (!asked[r])
                continue;
            reqs[r] = (pb_tcp_request_t){0};
            pb_tcp_request_begin(ti->rails[r].conn, &frame, NULL, &reqs[r], asking == 1);
        }
        for (int r = 0; r < ti->rail_count; r++) {
            pb_status_t status;

            if (!asked[r])
                continue;
            status = pb_tcp_request_end(&reqs[r], deadline);
            if (status == PB_OK) {
                ti->rails[r].dirty = 0;
                ti->rails[r].calls_unconfirmed = 0;
                tcp_replay_clear(&ti->rails[r].replay);
            } else if (pb_tcp_rail_broken(&ti->rails[r])) {
                broke = 1;
            } else if (result == PB_OK) {
                result = status; /* the exporter's answer: a put was not applied */
            }
        }
        if (result == PB_OK && !broke && ti->calls_lost) {
            ti->calls_lost = 0;
            return PB_ERR_CONN_ABORTED;
        }
        if (result != PB_OK || !broke)
            return result;
        only = 0; /* the replays went to other rails: wait for those too */
    }
}

/* A first rail that breaks or hears garbage while attaching: the exporter
 * died meanwhile (later rails' failures are only told from success). */
static pb_status_t tcp_rail_first_status(const pb_tcp_import_t *ti, pb_status_t status)
{
    if (ti->rail_count == 0 && (status == PB_ERR_CONN_ABORTED || status == PB_ERR_PROTOCOL))
        return PB_ERR_NOT_PUBLISHED;
    return status;
}

pb_status_t pb_tcp_rail_connect(pb_rsm_import_t *im, int index, uint32_t addr, uint16_t port,
                                const uint8_t key[PB_TCP_KEY_LEN], int64_t deadline)
{
    pb_tcp_import_t *ti = im->tl;
    struct sockaddr_in peer = {
        .sin_family = AF_INET, .sin_addr.s_addr = addr, .sin_port = htons(port)};
    pb_tcp_attach_t attach = {.segid = im->segid, .perm = im->perm};
    pb_tcp_frame_t frame = {.type = PB_TCP_ATTACH, .length = sizeof(attach)};
    pb_tcp_request_t req = {.import = im};
    pb_tcp_rail_t *rail = &ti->rails[ti->rail_count];
    pb_tcp_conn_t *c;
    pb_status_t status;
    const char *why;

    pthread_mutex_lock(&pb_tcp.connect_lock);
    status = pb_tcp_conn_get(&peer, key, im->node, deadline, &c);
    pthread_mutex_unlock(&pb_tcp.connect_lock);
    if (status != PB_OK)
        return tcp_rail_first_status(ti, status);
    status = tcp_rail_first_status(ti, pb_tcp_request(c, &frame, &attach, &req, deadline));
    if (status == PB_OK && ti->rail_count > 0 && req.value != im->size)
        status = PB_ERR_PROTOCOL; /* another process answers at that address */
    if (status == PB_OK && ti->rail_count == 0 &&
        (why = pb_tcp_attach_size_check(req.value)) != NULL) {
        pb_error("import of segment %#x: the exporter announces %s (%llu bytes): refused",
                 im->segid, why, (unsigned long long)req.value);
        status = PB_ERR_CONN_ABORTED;
    }
    pthread_mutex_lock(&pb_tcp.lock);
    if (status == PB_OK) {
        *rail = (pb_tcp_rail_t){.conn = c, .slot = req.slot, .index = index};
        ti->rail_count++;
        im->size = req.value;
    } else {
        if (req.slot != 0 && c->refs > 1) {
            /* attached, but not registered here: give the slot back */
            pb_tcp_frame_t detach = {.type = PB_TCP_DETACH, .slot = req.slot};

            if (req.slot < c->slot_import_cap)
                c->slot_imports[req.slot] = NULL;
            pb_tcp_conn_queue(c, &detach, NULL);
        }
        pb_tcp_conn_put(c);
    }
    pthread_mutex_unlock(&pb_tcp.lock);
    return status;
}
