/*
 * libFuzzer target for the tcp transport's wire handling (src/rsm/tcp/wire.c).
 *
 * The input drives, in turn:
 *
 * 1. The handshake's checks: an AUTH built from the input (fields either
 *    right or taken from it, its MAC right or not, then any bytes
 *    overwritten) goes through pb_tcp_auth_check, the exporter's check of
 *    pb_tcp_conn_read_auth; a WELCOME likewise through
 *    pb_tcp_welcome_check, the importer's of pb_tcp_dial.  Whatever a check
 *    admits must be what a real peer would have sent, which is asserted.
 * 2. The frames of the session that handshake derives (pb_tcp_session_derive,
 *    payload MACs on or off as the input says): frames whose fields come
 *    from the input, sealed with valid MACs so that they reach the real
 *    frame handlers, some spoiled on purpose (a header bit, the payload's
 *    MAC, a skipped sequence number, a short payload).  Or, one input in
 *    eight, the raw bytes as they are (nearly all refused at the first MAC).
 *
 * The first byte picks how the stream is cut into reads (so frames arrive
 * in pieces, as from a socket).  Each stream is fed to an exporter-side and
 * an importer-side receive machine (sealed for each direction).  The
 * exporter side runs the transport's own frame handling,
 * pb_tcp_export_header, pb_tcp_export_word_last and pb_tcp_export_call
 * (the pure part of src/rsm/tcp/export.c's callbacks): only the slot table
 * and the call handler are the fuzzer's.  The handler reads its whole
 * request and writes its whole reply room, so AddressSanitizer reports a
 * buffer shorter than the frame says, and claims a reply length the request
 * picks, beyond the room too, which must come back clamped.  The importer
 * side checks replies with pb_tcp_reply_check, as the transport does, for
 * one outstanding GET and one outstanding CALL.
 * Slots 1 to 3 are heap blocks of their exact size, so AddressSanitizer
 * reports any byte written or read outside them; slot 4 is withdrawn.  A
 * frame the checks accept must also be inside by construction, which is
 * asserted.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <postbox/rsm.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rsm/tcp/wire.h"

#define SLOTS 3

static const struct {
    size_t size;
    uint32_t perm;
} slot_shapes[SLOTS] = {{4096, RSM_PERM_RDWR}, {8192, RSM_PERM_READ}, {64, RSM_PERM_WRITE}};

typedef struct {
    char *segments[SLOTS];
    pb_tcp_export_rx_t export_rx;
    char reply_buf[256]; /* the one outstanding GET (tag 7) */
    char call_buf[128];  /* the one outstanding CALL (tag 9) */
    unsigned frames;
    unsigned read_sum; /* of the bytes GETs read, so the reads happen */
} fuzz_ctx_t;

/* What the exporter knows of @slot: NULL when not attached. */
static const pb_tcp_slot_view_t *slot_view(fuzz_ctx_t *ctx, uint32_t slot, pb_tcp_slot_view_t *view)
{
    if (slot == 0 || slot > SLOTS + 1)
        return NULL;
    if (slot == SLOTS + 1)
        *view = (pb_tcp_slot_view_t){NULL, 0, RSM_PERM_RDWR}; /* withdrawn */
    else
        *view = (pb_tcp_slot_view_t){ctx->segments[slot - 1], slot_shapes[slot - 1].size,
                                     slot_shapes[slot - 1].perm};
    return view;
}

static const char *exporter_on_header(void *arg, const pb_tcp_frame_t *frame, char **dest_p)
{
    fuzz_ctx_t *ctx = arg;
    pb_tcp_slot_view_t view;
    const pb_tcp_slot_view_t *slot = NULL;
    const char *why;

    if (frame->type != PB_TCP_ATTACH && frame->type != PB_TCP_LOOKUP)
        slot = slot_view(ctx, frame->slot, &view);
    why = pb_tcp_export_header(&ctx->export_rx, frame, slot, dest_p);
    if (why != NULL || slot == NULL || slot->base == NULL)
        return why;
    if ((frame->type == PB_TCP_PUT || frame->type == PB_TCP_GET) &&
        frame->offset + (frame->type == PB_TCP_PUT ? frame->length : frame->count) > slot->size)
        abort(); /* the check let an access outside through */
    if (frame->type == PB_TCP_GET) {
        /* what the transport sends back: read the bytes asked for */
        for (uint64_t i = 0; i < frame->count; i += 512)
            ctx->read_sum ^= (unsigned char)slot->base[frame->offset + i];
        ctx->read_sum ^= (unsigned char)slot->base[frame->offset + frame->count - 1];
    }
    return NULL;
}

/* The call handler: reads the request and the segment's first and last
 * bytes, fills its reply room, and claims the length the request's first
 * two bytes say (often more than the room). */
static void call_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                         size_t request_len, void *reply, size_t reply_max, size_t *reply_len)
{
    fuzz_ctx_t *ctx = arg;
    const uint8_t *req = request;
    unsigned sum = 0;

    if ((request == NULL) != (request_len == 0) || (reply == NULL) != (reply_max == 0) ||
        *reply_len != 0)
        abort();
    for (size_t i = 0; i < request_len; i++)
        sum += req[i];
    sum += ((uint8_t *)seg_base)[0] + ((uint8_t *)seg_base)[seg_size - 1];
    memset(reply, (int)(sum & 0xff), reply_max);
    ctx->read_sum ^= sum;
    *reply_len = request_len >= 2 ? (size_t)req[0] | (size_t)req[1] << 8 : reply_max;
}

static void exporter_on_frame(void *arg, const pb_tcp_frame_t *frame)
{
    fuzz_ctx_t *ctx = arg;
    pb_tcp_slot_view_t view;
    const pb_tcp_slot_view_t *slot = slot_view(ctx, frame->slot, &view);

    ctx->frames++;
    if (frame->type == PB_TCP_PUT && (frame->flags & PB_TCP_FLAG_WORD_LAST) && slot != NULL &&
        slot->base != NULL)
        pb_tcp_export_word_last(&ctx->export_rx, frame, slot->base);
    if (frame->type == PB_TCP_CALL && slot != NULL && slot->base != NULL) {
        uint32_t reply_len;
        size_t said;
        pb_status_t status;

        if (!(slot->perm & RSM_PERM_WRITE) || frame->length > PB_TCP_MAX_CALL ||
            frame->count > PB_TCP_MAX_CALL)
            abort(); /* the checks let a call through that they must refuse */
        status = pb_tcp_export_call(&ctx->export_rx, frame, slot->base, slot->size,
                                    frame->slot == 1 ? call_handler : NULL, ctx, &reply_len, &said);
        if (status == PB_OK &&
            (reply_len > frame->count || (said <= frame->count && reply_len != said)))
            abort(); /* a reply not clamped to what the caller takes */
        if (status == PB_OK && reply_len > 0)
            ctx->read_sum ^= (unsigned char)ctx->export_rx.reply[reply_len - 1];
    }
}

static const char *importer_on_header(void *arg, const pb_tcp_frame_t *frame, char **dest_p)
{
    fuzz_ctx_t *ctx = arg;

    const char *why;

    if (frame->type != PB_TCP_REPLY)
        return NULL;
    /* tag 7: a GET awaiting 256 bytes; tag 9: a CALL taking at most 128;
     * any other: a request without data */
    if (frame->tag == 7)
        why = pb_tcp_reply_check(frame, PB_TCP_GET, sizeof(ctx->reply_buf));
    else if (frame->tag == 9)
        why = pb_tcp_reply_check(frame, PB_TCP_CALL, sizeof(ctx->call_buf));
    else
        why = pb_tcp_reply_check(frame, PB_TCP_BARRIER, 0);
    if (why != NULL || frame->length == 0)
        return why;
    if (frame->status != 0 ||
        frame->length > (frame->tag == 7 ? sizeof(ctx->reply_buf) : sizeof(ctx->call_buf)) ||
        (frame->tag == 7 && frame->length != sizeof(ctx->reply_buf)))
        abort(); /* the check let data through that was not asked for */
    *dest_p = frame->tag == 7 ? ctx->reply_buf : ctx->call_buf;
    return NULL;
}

static void importer_on_frame(void *arg, const pb_tcp_frame_t *frame)
{
    fuzz_ctx_t *ctx = arg;

    (void)frame;
    ctx->frames++;
}

static void feed(pb_tcp_rx_t *rx, const uint8_t *data, size_t size, size_t cut)
{
    static char scratch[1024];

    while (size > 0) {
        char *buf;
        size_t len;

        pb_tcp_rx_next(rx, scratch, sizeof(scratch), &buf, &len);
        if (len == 0)
            abort(); /* the machine must always want bytes */
        if (len > size)
            len = size;
        if (len > cut)
            len = cut;
        memcpy(buf, data, len);
        if (pb_tcp_rx_advance(rx, buf, len) != NULL)
            return; /* the connection would close here */
        data += len;
        size -= len;
    }
}

/* ---- the input, read as fields ----------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t n;
} input_t;

/* The next @len bytes of the input into @out (zeros past its end). */
static void take(input_t *in, void *out, size_t len)
{
    size_t have = len < in->n ? len : in->n;

    memcpy(out, in->p, have);
    memset((uint8_t *)out + have, 0, len - have);
    in->p += have;
    in->n -= have;
}

static uint8_t take8(input_t *in)
{
    uint8_t v;

    take(in, &v, 1);
    return v;
}

static uint16_t take16(input_t *in)
{
    uint16_t v;

    take(in, &v, 2);
    return v;
}

static uint32_t take32(input_t *in)
{
    uint32_t v;

    take(in, &v, 4);
    return v;
}

/* ---- 1. the handshake ------------------------------------------------------------- */

static const uint8_t job_key[PB_TCP_KEY_LEN] = "fuzz-the-job-key";
static const char job_id[] = "fuzz-job";
#define EXP_ADDR htonl(0x7f000001)
#define EXP_PORT htons(5000)
#define IMP_ADDR htonl(0x7f000002)
#define IMP_PORT htons(40000)
#define EXP_NODE 1

/* Overwrite up to 3 bytes of @bytes[0..@len) where the input says. */
static void spoil(input_t *in, void *bytes, size_t len)
{
    unsigned count = take8(in) % 4;

    for (unsigned i = 0; i < count; i++) {
        size_t at = take8(in) % len;

        ((uint8_t *)bytes)[at] = take8(in);
    }
}

/* Drive both checks with a handshake of the input; derive its session. */
static void fuzz_handshake(input_t *in, pb_tcp_seal_t *to_exporter, pb_tcp_seal_t *to_importer)
{
    uint8_t hello_nonce[PB_TCP_NONCE_LEN];
    pb_tcp_auth_t auth = {0}, genuine;
    pb_tcp_welcome_t welcome = {0};
    uint8_t shape = take8(in);
    const char *why;

    take(in, hello_nonce, sizeof(hello_nonce));
    pb_tcp_msg_hdr_set(&auth.hdr, PB_TCP_MSG_AUTH);
    auth.node = take32(in);
    auth.pid = take32(in);
    if (shape & 1)
        take(in, auth.job_id, sizeof(auth.job_id));
    else
        strcpy(auth.job_id, job_id);
    take(in, auth.nonce, sizeof(auth.nonce));
    auth.dial_addr = shape & 2 ? take32(in) : EXP_ADDR;
    auth.dial_port = shape & 2 ? take16(in) : EXP_PORT;
    auth.source_addr = shape & 4 ? take32(in) : IMP_ADDR;
    auth.source_port = shape & 4 ? take16(in) : IMP_PORT;
    auth.flags = take8(in) % 4;
    auth.mac = pb_tcp_auth_mac(job_key, hello_nonce, &auth);
    genuine = auth;
    if (shape & 8)
        spoil(in, &auth, sizeof(auth));
    why = pb_tcp_auth_check(&auth, job_key, hello_nonce, job_id, EXP_ADDR, EXP_PORT, IMP_ADDR,
                            IMP_PORT);
    if (why == NULL &&
        (memcmp(&auth, &genuine, sizeof(auth)) != 0 || strcmp(auth.job_id, job_id) != 0 ||
         auth.dial_addr != EXP_ADDR || auth.dial_port != EXP_PORT || auth.source_addr != IMP_ADDR ||
         auth.source_port != IMP_PORT))
        abort(); /* admitted what the importer did not send, or a relay */

    pb_tcp_msg_hdr_set(&welcome.hdr, PB_TCP_MSG_WELCOME);
    welcome.reserved = take8(in) & 1;
    welcome.flags = take8(in) % 4;
    welcome.node = shape & 16 ? take32(in) : EXP_NODE;
    welcome.pid = take32(in);
    welcome.mac = pb_tcp_welcome_mac(job_key, hello_nonce, &auth, &welcome);
    if (shape & 32)
        spoil(in, &welcome, sizeof(welcome));
    why = pb_tcp_welcome_check(&welcome, job_key, hello_nonce, &auth, EXP_NODE);
    if (why == NULL &&
        (welcome.mac != pb_tcp_welcome_mac(job_key, hello_nonce, &auth, &welcome) ||
         welcome.node != EXP_NODE || welcome.reserved != 0 ||
         ((auth.flags & PB_TCP_HS_PAYLOAD_MAC) && !(welcome.flags & PB_TCP_HS_PAYLOAD_MAC))))
        abort();
    pb_tcp_session_derive(job_key, hello_nonce, &auth, shape & 64 ? 1 : 0, to_exporter,
                          to_importer);
}

/* ---- 2. the frames ---------------------------------------------------------------- */

#define STREAM_MAX (256 * 1024)
#define FRAMES_MAX 48

typedef struct {
    uint8_t *bytes;
    size_t len;
} stream_t;

/* Append @frame and @payload sealed by @seal, spoiled as @how says:
 * 1 a header bit, 2 the payload's MAC, 3 a sequence number skipped, 4 the
 * payload cut short. */
static void stream_put(stream_t *st, pb_tcp_seal_t *seal, const pb_tcp_frame_t *frame,
                       const uint8_t *payload, unsigned how, uint8_t where)
{
    uint8_t *header = st->bytes + st->len;
    size_t payload_len = frame->length;
    uint64_t seq;

    pb_tcp_frame_encode(frame, header);
    if (how == 3)
        seal->seq++;
    seq = pb_tcp_header_seal(seal, header);
    if (how == 1)
        header[where % PB_TCP_FRAME_HEADER_SIZE] ^= (uint8_t)(1u << (where % 8));
    st->len += PB_TCP_FRAME_HEADER_SIZE;
    if (how == 4)
        payload_len = payload_len > where ? payload_len - where : 0;
    memcpy(st->bytes + st->len, payload, payload_len);
    st->len += payload_len;
    if (seal->payload_mac && frame->length > 0) {
        uint64_t mac = htole64(pb_tcp_payload_mac(seal, seq, payload, frame->length));

        if (how == 2)
            mac ^= 1;
        memcpy(st->bytes + st->len, &mac, sizeof(mac));
        st->len += sizeof(mac);
    }
}

/* Frames of the input, sealed for each direction into @to_exp and @to_imp. */
static void build_streams(input_t *in, pb_tcp_seal_t to_exporter, pb_tcp_seal_t to_importer,
                          stream_t *to_exp, stream_t *to_imp)
{
    static uint8_t payload[65536];

    for (int i = 0; i < FRAMES_MAX && in->n > 0; i++) {
        pb_tcp_frame_t frame = {0};
        uint8_t spoilt = take8(in), where = take8(in);
        unsigned how = spoilt >= 0xf0 ? 1 + spoilt % 4 : 0;

        frame.type = take8(in) % (PB_TCP_FRAME_TYPES + 1);
        frame.flags = take8(in);
        if (frame.flags & 0x80)
            frame.flags &= 15; /* mostly known flags */
        frame.status = (int8_t)take8(in);
        frame.slot = take8(in) % 6;
        frame.tag = take8(in);
        frame.offset = take8(in) & 1 ? take32(in) : take16(in);
        frame.count = take16(in);
        frame.length = take16(in) % 9000;
        if (to_exp->len + 2 * PB_TCP_FRAME_HEADER_SIZE + 16 + frame.length > STREAM_MAX)
            break;
        take(in, payload, frame.length);
        stream_put(to_exp, &to_exporter, &frame, payload, how, where);
        stream_put(to_imp, &to_importer, &frame, payload, how, where);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t cuts[] = {SIZE_MAX, 1, 3, 7, 32, 33, 40, 41, 100};
    static uint8_t exp_bytes[STREAM_MAX], imp_bytes[STREAM_MAX];
    stream_t to_exp = {exp_bytes, 0}, to_imp = {imp_bytes, 0};
    pb_tcp_seal_t to_exporter, to_importer;
    fuzz_ctx_t ctx = {0};
    input_t in;
    pb_tcp_rx_t rx;
    size_t cut;

    if (size < 1)
        return 0;
    cut = cuts[data[0] % (sizeof(cuts) / sizeof(cuts[0]))];
    in = (input_t){data + 1, size - 1};
    fuzz_handshake(&in, &to_exporter, &to_importer);
    if (data[0] >= 0xe0) {
        /* the rest as it is, as a peer without the key would send it */
        to_exp = (stream_t){(uint8_t *)in.p, in.n};
        to_imp = to_exp;
    } else {
        build_streams(&in, to_exporter, to_importer, &to_exp, &to_imp);
    }
    for (int i = 0; i < SLOTS; i++)
        ctx.segments[i] = calloc(1, slot_shapes[i].size);
    pb_tcp_rx_init(&rx, 1, &to_exporter, exporter_on_header, exporter_on_frame, &ctx);
    feed(&rx, to_exp.bytes, to_exp.len, cut);
    pb_tcp_rx_init(&rx, 0, &to_importer, importer_on_header, importer_on_frame, &ctx);
    feed(&rx, to_imp.bytes, to_imp.len, cut);
    for (int i = 0; i < SLOTS; i++)
        free(ctx.segments[i]);
    pb_tcp_export_rx_free(&ctx.export_rx);
    return 0;
}
