/*
 * The pure part of the tcp transport (src/rsm/tcp/wire.c: the test compiles
 * its source in): the handshake's checks on both sides, the session keys,
 * the frame MACs and sequence numbers as the receive machine checks them,
 * the importer's check of what an exporter announces, the most a GET
 * may ask for (so what one request makes an exporter hold), the bounds
 * of a CALL, its handler's run and the reply the importer takes.  A real peer
 * never sends a forged, replayed or reordered frame, nor a relayed
 * handshake, so these are tested here on the functions the transport
 * calls (pb_tcp_conn_read_auth, pb_tcp_dial, tcp_conn_read).  And the
 * exporter's receiving of puts across a rebind (pb_tcp_export_redirect): a
 * put cut by it lands whole in the new memory, a word-last one never with
 * stale bytes.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <postbox/rsm.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rsm/tcp/wire.h"

static const uint8_t job_key[PB_TCP_KEY_LEN] = {1, 2,  3,  4,  5,  6,  7,  8,
                                                9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t other_key[PB_TCP_KEY_LEN] = {16, 15, 14, 13, 12, 11, 10, 9,
                                                  8,  7,  6,  5,  4,  3,  2,  1};
static const char job_id[] = "pbt-job";

/* the connection as both ends see it: the exporter at 127.0.0.1:5000, the
 * importer at 127.0.0.1:40000 */
#define EXP_ADDR htonl(0x7f000001)
#define EXP_PORT htons(5000)
#define IMP_ADDR htonl(0x7f000001)
#define IMP_PORT htons(40000)

typedef struct {
    uint8_t hello_nonce[PB_TCP_NONCE_LEN];
    pb_tcp_auth_t auth;
} handshake_t;

/* An importer's AUTH as pb_tcp_dial makes it, answering @hello_byte's nonce. */
static void make_auth(handshake_t *hs, uint8_t hello_byte, uint8_t auth_byte, uint32_t flags)
{
    memset(hs, 0, sizeof(*hs));
    memset(hs->hello_nonce, hello_byte, sizeof(hs->hello_nonce));
    pb_tcp_msg_hdr_set(&hs->auth.hdr, PB_TCP_MSG_AUTH);
    hs->auth.node = 2;
    hs->auth.pid = 1234;
    strcpy(hs->auth.job_id, job_id);
    memset(hs->auth.nonce, auth_byte, sizeof(hs->auth.nonce));
    hs->auth.dial_addr = EXP_ADDR;
    hs->auth.dial_port = EXP_PORT;
    hs->auth.source_addr = IMP_ADDR;
    hs->auth.source_port = IMP_PORT;
    hs->auth.flags = flags;
    hs->auth.mac = pb_tcp_auth_mac(job_key, hs->hello_nonce, &hs->auth);
}

static const char *exporter_check(const handshake_t *hs)
{
    return pb_tcp_auth_check(&hs->auth, job_key, hs->hello_nonce, job_id, EXP_ADDR, EXP_PORT,
                             IMP_ADDR, IMP_PORT);
}

/* The exporter's WELCOME to @hs, as pb_tcp_conn_read_auth makes it. */
static void make_welcome(const handshake_t *hs, const uint8_t *key, uint32_t flags,
                         pb_tcp_welcome_t *welcome)
{
    memset(welcome, 0, sizeof(*welcome));
    pb_tcp_msg_hdr_set(&welcome->hdr, PB_TCP_MSG_WELCOME);
    welcome->flags = flags;
    welcome->node = 1;
    welcome->pid = 99;
    welcome->mac = pb_tcp_welcome_mac(key, hs->hello_nonce, &hs->auth, welcome);
}

/* an AUTH made with the job key, at the addresses the connection has, is
 * admitted; the importer admits the WELCOME to it */
static void case_handshake_accepted(void)
{
    handshake_t hs;
    pb_tcp_welcome_t welcome;

    make_auth(&hs, 0x11, 0x22, 0);
    CHECK(exporter_check(&hs) == NULL);
    make_welcome(&hs, job_key, 0, &welcome);
    CHECK(pb_tcp_welcome_check(&welcome, job_key, hs.hello_nonce, &hs.auth, 1) == NULL);
    CHECK(pb_tcp_welcome_check(&welcome, job_key, hs.hello_nonce, &hs.auth, UINT32_MAX) == NULL);
}

/* another key, another job id, a changed field or another HELLO's nonce:
 * refused */
static void case_auth_forged_refused(void)
{
    handshake_t hs, changed;

    make_auth(&hs, 0x11, 0x22, 0);
    CHECK(pb_tcp_auth_check(&hs.auth, other_key, hs.hello_nonce, job_id, EXP_ADDR, EXP_PORT,
                            IMP_ADDR, IMP_PORT) != NULL);
    CHECK(pb_tcp_auth_check(&hs.auth, job_key, hs.hello_nonce, "pbt-other", EXP_ADDR, EXP_PORT,
                            IMP_ADDR, IMP_PORT) != NULL);
    changed = hs;
    changed.auth.node = 3; /* a member may claim any node, but not change one in flight */
    CHECK(exporter_check(&changed) != NULL);
    changed = hs;
    changed.hello_nonce[5] ^= 1; /* an AUTH recorded for another connection */
    CHECK(exporter_check(&changed) != NULL);
    changed = hs;
    changed.auth.flags = PB_TCP_HS_PAYLOAD_MAC;
    CHECK(exporter_check(&changed) != NULL);
    changed = hs;
    changed.auth.hdr.version = htole16(1);
    CHECK(exporter_check(&changed) != NULL);
}

/* an AUTH relayed to the exporter through another address or port, or
 * from another source than the importer's, is refused though its MAC is
 * right: it names the connection the importer made */
static void case_auth_relayed_refused(void)
{
    handshake_t hs;

    make_auth(&hs, 0x11, 0x22, 0);
    /* the importer dialed 5000; the relay reached the exporter at 5001 */
    CHECK(pb_tcp_auth_check(&hs.auth, job_key, hs.hello_nonce, job_id, EXP_ADDR, htons(5001),
                            IMP_ADDR, IMP_PORT) != NULL);
    CHECK(pb_tcp_auth_check(&hs.auth, job_key, hs.hello_nonce, job_id, htonl(0x0a000001), EXP_PORT,
                            IMP_ADDR, IMP_PORT) != NULL);
    /* the relay's own source port */
    CHECK(pb_tcp_auth_check(&hs.auth, job_key, hs.hello_nonce, job_id, EXP_ADDR, EXP_PORT, IMP_ADDR,
                            htons(40001)) != NULL);
    CHECK(pb_tcp_auth_check(&hs.auth, job_key, hs.hello_nonce, job_id, EXP_ADDR, EXP_PORT,
                            htonl(0x0a000002), IMP_PORT) != NULL);
}

/* a WELCOME under another key, for another AUTH, from another node,
 * turning off the payload MACs the importer asked for, or with its
 * reserved field set (even under a right MAC): refused */
static void case_welcome_forged_refused(void)
{
    handshake_t hs, other;
    pb_tcp_welcome_t welcome;

    make_auth(&hs, 0x11, 0x22, PB_TCP_HS_PAYLOAD_MAC);
    make_welcome(&hs, other_key, PB_TCP_HS_PAYLOAD_MAC, &welcome);
    CHECK(pb_tcp_welcome_check(&welcome, job_key, hs.hello_nonce, &hs.auth, 1) != NULL);
    /* a genuine WELCOME of another connection (other nonces) */
    make_auth(&other, 0x33, 0x44, PB_TCP_HS_PAYLOAD_MAC);
    make_welcome(&other, job_key, PB_TCP_HS_PAYLOAD_MAC, &welcome);
    CHECK(pb_tcp_welcome_check(&welcome, job_key, hs.hello_nonce, &hs.auth, 1) != NULL);
    make_welcome(&hs, job_key, PB_TCP_HS_PAYLOAD_MAC, &welcome);
    CHECK(pb_tcp_welcome_check(&welcome, job_key, hs.hello_nonce, &hs.auth, 1) == NULL);
    CHECK(pb_tcp_welcome_check(&welcome, job_key, hs.hello_nonce, &hs.auth, 4) != NULL);
    welcome.reserved = 1; /* changed in flight */
    CHECK(pb_tcp_welcome_check(&welcome, job_key, hs.hello_nonce, &hs.auth, 1) != NULL);
    welcome.mac = pb_tcp_welcome_mac(job_key, hs.hello_nonce, &hs.auth, &welcome);
    CHECK(pb_tcp_welcome_check(&welcome, job_key, hs.hello_nonce, &hs.auth, 1) != NULL);
    make_welcome(&hs, job_key, 0, &welcome);
    CHECK(pb_tcp_welcome_check(&welcome, job_key, hs.hello_nonce, &hs.auth, 1) != NULL);
}

/* the two directions have different keys; another connection's nonces
 * give other keys; header and payload keys differ */
static void case_session_keys_distinct(void)
{
    handshake_t a, b;
    pb_tcp_seal_t a_in, a_out, b_in, b_out;

    make_auth(&a, 0x11, 0x22, 0);
    make_auth(&b, 0x11, 0x23, 0);
    pb_tcp_session_derive(job_key, a.hello_nonce, &a.auth, 0, &a_in, &a_out);
    pb_tcp_session_derive(job_key, b.hello_nonce, &b.auth, 1, &b_in, &b_out);
    CHECK(memcmp(a_in.header_key, a_out.header_key, PB_TCP_KEY_LEN) != 0);
    CHECK(memcmp(a_in.header_key, a_in.payload_key, PB_TCP_KEY_LEN) != 0);
    CHECK(memcmp(a_in.header_key, b_in.header_key, PB_TCP_KEY_LEN) != 0);
    CHECK(memcmp(a_out.header_key, b_out.header_key, PB_TCP_KEY_LEN) != 0);
    CHECK(memcmp(a_in.header_key, job_key, PB_TCP_KEY_LEN) != 0);
    CHECK(a_in.seq == 0 && a_out.seq == 0);
    CHECK(!a_in.payload_mac && b_in.payload_mac && b_out.payload_mac);
}

/* ---- frames through the receive machine -------------------------------------- */

typedef struct {
    unsigned frames;
    pb_tcp_frame_t last;
    char payload[64];
} sink_t;

static const char *sink_header(void *arg, const pb_tcp_frame_t *frame, char **dest_p)
{
    sink_t *sink = arg;

    if (frame->length > 0)
        *dest_p = sink->payload;
    return NULL;
}

static void sink_frame(void *arg, const pb_tcp_frame_t *frame)
{
    sink_t *sink = arg;

    sink->frames++;
    sink->last = *frame;
}

/* A byte stream of frames as a connection sends them. */
typedef struct {
    uint8_t bytes[1024];
    size_t len;
} stream_t;

/* Append @frame (its payload @payload) sealed by @seal. */
static void stream_put(stream_t *st, pb_tcp_seal_t *seal, const pb_tcp_frame_t *frame,
                       const void *payload)
{
    uint8_t *header = st->bytes + st->len;
    uint64_t seq;

    pb_tcp_frame_encode(frame, header);
    seq = pb_tcp_header_seal(seal, header);
    st->len += PB_TCP_FRAME_HEADER_SIZE;
    if (frame->length > 0)
        memcpy(st->bytes + st->len, payload, frame->length);
    st->len += frame->length;
    if (seal->payload_mac && frame->length > 0) {
        uint64_t mac = htole64(pb_tcp_payload_mac(seal, seq, payload, frame->length));

        memcpy(st->bytes + st->len, &mac, sizeof(mac));
        st->len += sizeof(mac);
    }
}

/* Feed @len bytes of @data to @rx in reads of at most @cut bytes.
 * @return NULL when all were taken, else why the connection closes. */
static const char *feed(pb_tcp_rx_t *rx, const uint8_t *data, size_t len, size_t cut)
{
    static char scratch[16];

    while (len > 0) {
        char *buf;
        size_t n;
        const char *why;

        pb_tcp_rx_next(rx, scratch, sizeof(scratch), &buf, &n);
        if (n > len)
            n = len;
        if (n > cut)
            n = cut;
        memcpy(buf, data, n);
        why = pb_tcp_rx_advance(rx, buf, n);
        if (why != NULL)
            return why;
        data += n;
        len -= n;
    }
    return NULL;
}

/* A connection's two ends: what the importer seals, what the exporter's
 * machine checks. */
typedef struct {
    pb_tcp_seal_t send; /* importer -> exporter, the importer's copy */
    pb_tcp_seal_t reply;
    pb_tcp_rx_t rx; /* at the exporter */
    sink_t sink;
} session_t;

static void session_open(session_t *s, uint8_t auth_byte, int payload_mac)
{
    handshake_t hs;

    memset(s, 0, sizeof(*s));
    make_auth(&hs, 0x11, auth_byte, 0);
    pb_tcp_session_derive(job_key, hs.hello_nonce, &hs.auth, payload_mac, &s->send, &s->reply);
    pb_tcp_rx_init(&s->rx, 1, &s->send, sink_header, sink_frame, &s->sink);
}

static const pb_tcp_frame_t put_frame = {.type = PB_TCP_PUT, .slot = 1, .offset = 8, .length = 16};
static const pb_tcp_frame_t barrier_frame = {.type = PB_TCP_BARRIER, .slot = 1, .tag = 3};
static const char put_data[16] = "sixteen bytes!!";

/* frames sealed in order are taken, whole or in pieces of any size, with
 * and without payload MACs */
static void case_frames_in_order_accepted(void)
{
    static const size_t cuts[] = {1, 3, 7, 40, 41, SIZE_MAX};

    for (int payload_mac = 0; payload_mac < 2; payload_mac++) {
        for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
            session_t s;
            stream_t st = {0};

            session_open(&s, 0x22, payload_mac);
            stream_put(&st, &s.send, &put_frame, put_data);
            stream_put(&st, &s.send, &barrier_frame, NULL);
            stream_put(&st, &s.send, &put_frame, put_data);
            CHECK_MSG(feed(&s.rx, st.bytes, st.len, cuts[i]) == NULL, "cut %zu mac %d", cuts[i],
                      payload_mac);
            CHECK(s.sink.frames == 3);
            CHECK(memcmp(s.sink.payload, put_data, sizeof(put_data)) == 0);
            CHECK(s.rx.seal.seq == 3);
        }
    }
}

/* the same frame again (a replay) is refused, and so are two frames
 * swapped */
static void case_frame_replayed_or_reordered_refused(void)
{
    session_t s;
    stream_t st = {0};
    size_t one;

    session_open(&s, 0x22, 0);
    stream_put(&st, &s.send, &barrier_frame, NULL);
    one = st.len;
    CHECK(feed(&s.rx, st.bytes, one, SIZE_MAX) == NULL);
    CHECK(feed(&s.rx, st.bytes, one, SIZE_MAX) != NULL); /* replayed */
    CHECK(s.sink.frames == 1);

    session_open(&s, 0x22, 0);
    st.len = 0;
    stream_put(&st, &s.send, &barrier_frame, NULL);
    stream_put(&st, &s.send, &put_frame, put_data);
    /* the second frame first */
    CHECK(feed(&s.rx, st.bytes + PB_TCP_FRAME_HEADER_SIZE, st.len - PB_TCP_FRAME_HEADER_SIZE,
               SIZE_MAX) != NULL);
    CHECK(s.sink.frames == 0);
}

/* a frame sealed for another connection of the same job (same key, other
 * nonces) is refused, though its sequence number is the one expected */
static void case_frame_of_another_session_refused(void)
{
    session_t victim, other;
    stream_t st = {0};

    session_open(&victim, 0x22, 0);
    session_open(&other, 0x23, 0);
    stream_put(&st, &other.send, &put_frame, put_data);
    CHECK(feed(&victim.rx, st.bytes, st.len, SIZE_MAX) != NULL);
    CHECK(victim.sink.frames == 0);
    /* nor one sealed with the other direction's key of the same session */
    st.len = 0;
    stream_put(&st, &victim.reply, &barrier_frame, NULL);
    CHECK(feed(&victim.rx, st.bytes, st.len, SIZE_MAX) != NULL);
}

/* any bit of a header changed on the way is refused before the header is
 * acted on; a changed payload byte is refused when payloads carry MACs */
static void case_frame_changed_refused(void)
{
    for (size_t bit = 0; bit < 8 * PB_TCP_FRAME_HEADER_SIZE; bit++) {
        session_t s;
        stream_t st = {0};

        session_open(&s, 0x22, 0);
        stream_put(&st, &s.send, &put_frame, put_data);
        st.bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        CHECK_MSG(feed(&s.rx, st.bytes, st.len, SIZE_MAX) != NULL, "bit %zu", bit);
        CHECK(s.sink.frames == 0);
    }
    for (size_t byte = PB_TCP_FRAME_HEADER_SIZE; byte < PB_TCP_FRAME_HEADER_SIZE + 16 + 8; byte++) {
        session_t s;
        stream_t st = {0};

        session_open(&s, 0x22, 1);
        stream_put(&st, &s.send, &put_frame, put_data);
        st.bytes[byte] ^= 0x40;
        CHECK_MSG(feed(&s.rx, st.bytes, st.len, 5) != NULL, "byte %zu", byte);
        CHECK(s.sink.frames == 0);
    }
}

/* a dropped payload (no destination) is MACed all the same */
static const char *drop_header(void *arg, const pb_tcp_frame_t *frame, char **dest_p)
{
    (void)arg, (void)frame, (void)dest_p;
    return NULL;
}

static void case_dropped_payload_checked(void)
{
    session_t s;
    stream_t st = {0};

    session_open(&s, 0x22, 1);
    pb_tcp_rx_init(&s.rx, 1, &s.send, drop_header, sink_frame, &s.sink);
    stream_put(&st, &s.send, &put_frame, put_data);
    CHECK(feed(&s.rx, st.bytes, st.len, 3) == NULL);
    CHECK(s.sink.frames == 1);
    pb_tcp_rx_init(&s.rx, 1, &s.send, drop_header, sink_frame, &s.sink);
    s.rx.seal.seq = 0;
    st.bytes[PB_TCP_FRAME_HEADER_SIZE + 2] ^= 1;
    CHECK(feed(&s.rx, st.bytes, st.len, 3) != NULL);
}

/* sizes an exporter can export are accepted, up to the largest one */
static void case_attach_size_exportable_accepted(void)
{
    CHECK(pb_tcp_attach_size_check(1) == NULL);
    CHECK(pb_tcp_attach_size_check(4096) == NULL);
    CHECK(pb_tcp_attach_size_check((uint64_t)1 << 30) == NULL);
    CHECK(pb_tcp_attach_size_check(PB_TCP_MAX_SEGMENT_SIZE) == NULL);
}

/* 0, and anything above the largest exportable segment, is refused */
static void case_attach_size_impossible_refused(void)
{
    CHECK(pb_tcp_attach_size_check(0) != NULL);
    CHECK(pb_tcp_attach_size_check(PB_TCP_MAX_SEGMENT_SIZE + 1) != NULL);
    CHECK(pb_tcp_attach_size_check((uint64_t)1 << 62) != NULL);
    CHECK(pb_tcp_attach_size_check(UINT64_MAX) != NULL);
}

/* a GET asks for 1 to PB_TCP_MAX_GET bytes, a REPLY carries at most that
 * many: the exporter holds at most one such reply per request */
static void case_get_of_at_most_max_get_bytes(void)
{
    pb_tcp_frame_t get = {.type = PB_TCP_GET, .slot = 1, .tag = 9, .offset = 4096};
    pb_tcp_frame_t reply = {.type = PB_TCP_REPLY, .slot = 1, .tag = 9};

    get.count = 1;
    CHECK(pb_tcp_frame_check(&get, 1) == NULL);
    get.count = PB_TCP_MAX_GET;
    CHECK(pb_tcp_frame_check(&get, 1) == NULL);
    get.count = 0;
    CHECK(pb_tcp_frame_check(&get, 1) != NULL);
    get.count = PB_TCP_MAX_GET + 1;
    CHECK(pb_tcp_frame_check(&get, 1) != NULL);
    get.count = PB_TCP_MAX_PAYLOAD;
    CHECK(pb_tcp_frame_check(&get, 1) != NULL);
    get.count = UINT32_MAX;
    CHECK(pb_tcp_frame_check(&get, 1) != NULL);

    reply.length = PB_TCP_MAX_GET;
    CHECK(pb_tcp_frame_check(&reply, 0) == NULL);
    reply.length = PB_TCP_MAX_GET + 1;
    CHECK(pb_tcp_frame_check(&reply, 0) != NULL);
    reply.length = PB_TCP_MAX_PAYLOAD;
    CHECK(pb_tcp_frame_check(&reply, 0) != NULL);
}

/* a CALL carries at most PB_TCP_MAX_CALL bytes and takes a reply of at
 * most that many; one without reply names no tag and no reply length */
static void case_call_frame_bounds(void)
{
    pb_tcp_frame_t call = {.type = PB_TCP_CALL, .slot = 1, .tag = 9};

    CHECK(pb_tcp_frame_check(&call, 1) == NULL); /* an empty request, no reply room */
    call.length = PB_TCP_MAX_CALL;
    call.count = PB_TCP_MAX_CALL;
    CHECK(pb_tcp_frame_check(&call, 1) == NULL);
    CHECK(pb_tcp_frame_check(&call, 0) != NULL); /* only toward the exporter */
    call.length = PB_TCP_MAX_CALL + 1;
    CHECK(pb_tcp_frame_check(&call, 1) != NULL);
    call.length = 8;
    call.count = PB_TCP_MAX_CALL + 1;
    CHECK(pb_tcp_frame_check(&call, 1) != NULL);
    call.count = 0;
    call.offset = 8;
    CHECK(pb_tcp_frame_check(&call, 1) != NULL); /* a call has no offset */
    call.offset = 0;
    call.flags = PB_TCP_FLAG_NO_REPLY;
    CHECK(pb_tcp_frame_check(&call, 1) != NULL); /* ... nor, without reply, a tag */
    call.tag = 0;
    CHECK(pb_tcp_frame_check(&call, 1) == NULL);
    call.count = 8;
    CHECK(pb_tcp_frame_check(&call, 1) != NULL); /* ... nor a reply length */
    call.count = 0;
    call.flags = PB_TCP_FLAG_SIGNAL;
    CHECK(pb_tcp_frame_check(&call, 1) != NULL);
}

/* the exporter refuses a call on a slot without write permission, and
 * hands the handler the request and a reply room of the announced size,
 * cutting a reply said to be longer; without a handler it refuses */
static void said_too_much(void *arg, void *seg_base, size_t seg_size, const void *request,
                          size_t request_len, void *reply, size_t reply_max, size_t *reply_len)
{
    CHECK(arg == (void *)0x1234 && seg_size == 4096 && ((char *)seg_base)[0] == 7);
    CHECK(request_len == 3 && memcmp(request, "abc", 3) == 0);
    CHECK(reply_max == 5 && *reply_len == 0);
    memset(reply, 'r', reply_max);
    *reply_len = 1000;
}

static void case_call_run_by_the_exporter(void)
{
    static char segment[4096] = {7};
    pb_tcp_frame_t call = {.type = PB_TCP_CALL, .slot = 1, .tag = 9, .length = 3, .count = 5};
    pb_tcp_slot_view_t read_only = {segment, sizeof(segment), RSM_PERM_READ};
    pb_tcp_slot_view_t writable = {segment, sizeof(segment), RSM_PERM_RDWR};
    pb_tcp_export_rx_t rx = {0};
    char *dest = NULL;
    uint32_t reply_len;
    size_t said;

    CHECK(pb_tcp_export_header(&rx, &call, &read_only, &dest) != NULL);
    CHECK(pb_tcp_export_header(&rx, &call, &writable, &dest) == NULL);
    CHECK(dest != NULL);
    memcpy(dest, "abc", 3);
    CHECK(pb_tcp_export_call(&rx, &call, segment, sizeof(segment), said_too_much, (void *)0x1234,
                             &reply_len, &said) == PB_OK);
    CHECK(said == 1000 && reply_len == 5 && memcmp(rx.reply, "rrrrr", 5) == 0);
    CHECK(pb_tcp_export_call(&rx, &call, segment, sizeof(segment), NULL, NULL, &reply_len, &said) ==
          PB_ERR_PERMISSION);
    CHECK(reply_len == 0);
    pb_tcp_export_rx_free(&rx);
}

/* the importer takes from a REPLY what it asked for: exactly a GET's
 * count, at most a CALL's room, nothing with an error */
static void case_reply_data_checked_against_the_request(void)
{
    pb_tcp_frame_t reply = {.type = PB_TCP_REPLY, .slot = 1, .tag = 9, .length = 8};

    CHECK(pb_tcp_reply_check(&reply, PB_TCP_GET, 8) == NULL);
    CHECK(pb_tcp_reply_check(&reply, PB_TCP_GET, 16) != NULL);
    CHECK(pb_tcp_reply_check(&reply, PB_TCP_CALL, 16) == NULL);
    CHECK(pb_tcp_reply_check(&reply, PB_TCP_CALL, 8) == NULL);
    CHECK(pb_tcp_reply_check(&reply, PB_TCP_CALL, 7) != NULL);
    CHECK(pb_tcp_reply_check(&reply, PB_TCP_BARRIER, 0) != NULL);
    reply.status = PB_ERR_PERMISSION;
    CHECK(pb_tcp_reply_check(&reply, PB_TCP_CALL, 16) != NULL);
    reply.length = 0;
    CHECK(pb_tcp_reply_check(&reply, PB_TCP_CALL, 16) == NULL);
    CHECK(pb_tcp_reply_check(&reply, PB_TCP_BARRIER, 0) == NULL);
}

/* ---- a rebind while a put is being received ------------------------------ */

#define SEG 16384

/* An exporter's receiving side, as src/rsm/tcp/export.c drives it: one slot
 * of the segment at view.base, payloads placed by pb_tcp_export_header and
 * word-last puts stored at their end into the memory of that time. */
typedef struct {
    pb_tcp_rx_t rx;
    pb_tcp_seal_t tx; /* the importer's end: seals what is fed */
    pb_tcp_export_rx_t erx;
    pb_tcp_slot_view_t view;
    int frames;
} exporter_t;

static const char *exporter_on_header(void *ctx, const pb_tcp_frame_t *frame, char **dest_p)
{
    exporter_t *ex = ctx;

    return pb_tcp_export_header(&ex->erx, frame, &ex->view, dest_p);
}

static void exporter_on_frame(void *ctx, const pb_tcp_frame_t *frame)
{
    exporter_t *ex = ctx;

    if (frame->flags & PB_TCP_FLAG_WORD_LAST)
        pb_tcp_export_word_last(&ex->erx, frame, ex->view.base);
    ex->frames++;
}

static void exporter_init(exporter_t *ex, char *base)
{
    memset(ex, 0, sizeof(*ex));
    ex->view = (pb_tcp_slot_view_t){base, SEG, RSM_PERM_RDWR};
    pb_tcp_rx_init(&ex->rx, 1, &ex->tx, exporter_on_header, exporter_on_frame, ex);
}

/* Feed @len bytes of @stream to the exporter, as a socket would. */
static void exporter_feed(exporter_t *ex, const uint8_t *stream, size_t len)
{
    static char scratch[4096];

    while (len > 0) {
        char *buf;
        size_t want;

        pb_tcp_rx_next(&ex->rx, scratch, sizeof(scratch), &buf, &want);
        if (want > len)
            want = len;
        memcpy(buf, stream, want);
        CHECK(pb_tcp_rx_advance(&ex->rx, buf, want) == NULL);
        stream += want;
        len -= want;
    }
}

/* A PUT of @len bytes of pattern @seed at @offset, header (sealed by
 * @seal) and payload, into @out. */
static size_t put_bytes(pb_tcp_seal_t *seal, uint8_t *out, uint64_t offset, uint32_t len,
                        uint16_t flags, unsigned seed)
{
    pb_tcp_frame_t frame = {
        .type = PB_TCP_PUT, .flags = flags, .slot = 1, .offset = offset, .length = len};

    pb_tcp_frame_encode(&frame, out);
    pb_tcp_header_seal(seal, out);
    pbt_fill_pattern(out + PB_TCP_FRAME_HEADER_SIZE, len, offset, seed);
    return PB_TCP_FRAME_HEADER_SIZE + len;
}

/* A put of @flags cut by a rebind after @before payload bytes lands whole
 * in the new memory, whatever the exporter received earlier. */
static void rebind_during_put(uint16_t flags, uint32_t len, size_t before)
{
    static uint8_t stream[2 * (PB_TCP_FRAME_HEADER_SIZE + 4096)];
    char *old_mem = malloc(SEG), *new_mem = malloc(SEG), *old_copy = malloc(SEG);
    const uint64_t offset = 1024;
    exporter_t ex;
    size_t n;

    CHECK(old_mem != NULL && new_mem != NULL && old_copy != NULL);
    memset(old_mem, 0xaa, SEG);
    memset(new_mem, 0xbb, SEG);
    exporter_init(&ex, old_mem);
    /* an earlier put of the same kind and place leaves its bytes wherever
     * the exporter receives such puts (for word-last ones: aside) */
    n = put_bytes(&ex.tx, stream, offset, len, flags, 1);
    exporter_feed(&ex, stream, n);
    CHECK(ex.frames == 1);
    memcpy(old_copy, old_mem, SEG);

    n = put_bytes(&ex.tx, stream, offset, len, flags, 2);
    exporter_feed(&ex, stream, PB_TCP_FRAME_HEADER_SIZE + before);
    /* the rebind, as pb_tcp_export_rebind does it */
    pb_tcp_export_redirect(&ex.rx, new_mem);
    ex.view.base = new_mem;
    exporter_feed(&ex, stream + PB_TCP_FRAME_HEADER_SIZE + before,
                  n - PB_TCP_FRAME_HEADER_SIZE - before);
    CHECK(ex.frames == 2);

    CHECK_MSG(pbt_check_pattern(new_mem + offset, len, offset, 2) == (size_t)-1,
              "the put (flags %u) cut after %zu bytes is not whole in the new memory (byte %zu)",
              flags, before, pbt_check_pattern(new_mem + offset, len, offset, 2));
    for (size_t i = 0; i < SEG; i++) {
        if (i < offset || i >= offset + len)
            CHECK_MSG((uint8_t)new_mem[i] == 0xbb, "the put wrote byte %zu of the new memory", i);
    }
    if (flags & PB_TCP_FLAG_WORD_LAST)
        CHECK_MSG(memcmp(old_mem, old_copy, SEG) == 0, "a word-last put wrote the old memory");
    pb_tcp_export_redirect(&ex.rx, NULL); /* (between frames: nothing to do) */
    free(ex.erx.word_last);
    free(old_mem);
    free(new_mem);
    free(old_copy);
}

static void case_word_last_put_straddling_rebind_lands_whole_in_new_memory(void)
{
    static const size_t cuts[] = {0, 1, 3, 4, 5, 1000, 4095};

    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
        rebind_during_put(PB_TCP_FLAG_WORD_LAST, 4096, cuts[i]);
    rebind_during_put(PB_TCP_FLAG_WORD_LAST, 8, 6);
}

static void case_put_straddling_rebind_lands_whole_in_new_memory(void)
{
    static const size_t cuts[] = {0, 1, 2048, 4095};

    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
        rebind_during_put(0, 4096, cuts[i]);
}

static void case_put_straddling_unpublish_is_dropped(void)
{
    static uint8_t stream[PB_TCP_FRAME_HEADER_SIZE + 4096];
    char *mem = malloc(SEG), *copy = malloc(SEG);
    exporter_t ex;
    size_t n;

    CHECK(mem != NULL && copy != NULL);
    for (int word_last = 0; word_last < 2; word_last++) {
        memset(mem, 0xaa, SEG);
        exporter_init(&ex, mem);
        n = put_bytes(&ex.tx, stream, 512, 4096, word_last ? PB_TCP_FLAG_WORD_LAST : 0, 3);
        exporter_feed(&ex, stream, PB_TCP_FRAME_HEADER_SIZE + 100);
        memcpy(copy, mem, SEG);
        /* withdrawn: what comes next of it is not written */
        pb_tcp_export_redirect(&ex.rx, NULL);
        exporter_feed(&ex, stream + PB_TCP_FRAME_HEADER_SIZE + 100,
                      n - PB_TCP_FRAME_HEADER_SIZE - 100);
        CHECK(ex.frames == 1);
        if (!word_last)
            CHECK_MSG(memcmp(mem, copy, SEG) == 0, "a withdrawn segment was written");
        free(ex.erx.word_last);
    }
    free(mem);
    free(copy);
}

static const pbt_case_t cases[] = {
    PBT_CASE(handshake_accepted),
    PBT_CASE(auth_forged_refused),
    PBT_CASE(auth_relayed_refused),
    PBT_CASE(welcome_forged_refused),
    PBT_CASE(session_keys_distinct),
    PBT_CASE(frames_in_order_accepted),
    PBT_CASE(frame_replayed_or_reordered_refused),
    PBT_CASE(frame_of_another_session_refused),
    PBT_CASE(frame_changed_refused),
    PBT_CASE(dropped_payload_checked),
    PBT_CASE(attach_size_exportable_accepted),
    PBT_CASE(attach_size_impossible_refused),
    PBT_CASE(get_of_at_most_max_get_bytes),
    PBT_CASE(call_frame_bounds),
    PBT_CASE(call_run_by_the_exporter),
    PBT_CASE(reply_data_checked_against_the_request),
    PBT_CASE(word_last_put_straddling_rebind_lands_whole_in_new_memory),
    PBT_CASE(put_straddling_rebind_lands_whole_in_new_memory),
    PBT_CASE(put_straddling_unpublish_is_dropped),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
