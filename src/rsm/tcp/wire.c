#include "rsm/tcp/wire.h"

#include <endian.h>
#include <postbox/rsm.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/siphash.h"

/* ---- handshake -------------------------------------------------------------- */

/* The labels that keep the MACs and keys apart (16 bytes each). */
#define LABEL_LEN 16
static const char label_auth[] = "postbox-tcp2-AUT";
static const char label_welcome[] = "postbox-tcp2-WEL";
/* key labels: "postbox-tcp2-" then direction (I: to the exporter, E: to the
 * importer), kind (H: header, P: payload), half (0, 1) */
static const char label_key_prefix[] = "postbox-tcp2-";

static size_t put_le32(uint8_t *at, uint32_t value)
{
    value = htole32(value);
    memcpy(at, &value, 4);
    return 4;
}

static size_t put_le64(uint8_t *at, uint64_t value)
{
    value = htole64(value);
    memcpy(at, &value, 8);
    return 8;
}

uint64_t pb_tcp_auth_mac(const uint8_t key[PB_TCP_KEY_LEN],
                         const uint8_t hello_nonce[PB_TCP_NONCE_LEN], const pb_tcp_auth_t *auth)
{
    uint8_t buf[LABEL_LEN + PB_TCP_NONCE_LEN + 4 + 4 + PB_TCP_JOB_ID_MAX + PB_TCP_NONCE_LEN + 4 +
                4 + 2 + 2 + 4];
    size_t off = 0;

    memcpy(buf + off, label_auth, LABEL_LEN), off += LABEL_LEN;
    memcpy(buf + off, hello_nonce, PB_TCP_NONCE_LEN), off += PB_TCP_NONCE_LEN;
    off += put_le32(buf + off, auth->node);
    off += put_le32(buf + off, auth->pid);
    memcpy(buf + off, auth->job_id, PB_TCP_JOB_ID_MAX), off += PB_TCP_JOB_ID_MAX;
    memcpy(buf + off, auth->nonce, PB_TCP_NONCE_LEN), off += PB_TCP_NONCE_LEN;
    /* (addresses and ports as they are on the wire: network order) */
    memcpy(buf + off, &auth->dial_addr, 4), off += 4;
    memcpy(buf + off, &auth->source_addr, 4), off += 4;
    memcpy(buf + off, &auth->dial_port, 2), off += 2;
    memcpy(buf + off, &auth->source_port, 2), off += 2;
    off += put_le32(buf + off, auth->flags);
    return pb_siphash24(key, buf, off);
}

uint64_t pb_tcp_welcome_mac(const uint8_t key[PB_TCP_KEY_LEN],
                            const uint8_t hello_nonce[PB_TCP_NONCE_LEN], const pb_tcp_auth_t *auth,
                            const pb_tcp_welcome_t *welcome)
{
    uint8_t buf[LABEL_LEN + 2 * PB_TCP_NONCE_LEN + 8 + 4 * 4];
    size_t off = 0;

    memcpy(buf + off, label_welcome, LABEL_LEN), off += LABEL_LEN;
    memcpy(buf + off, hello_nonce, PB_TCP_NONCE_LEN), off += PB_TCP_NONCE_LEN;
    memcpy(buf + off, auth->nonce, PB_TCP_NONCE_LEN), off += PB_TCP_NONCE_LEN;
    off += put_le64(buf + off, auth->mac);
    off += put_le32(buf + off, welcome->reserved);
    off += put_le32(buf + off, welcome->flags);
    off += put_le32(buf + off, welcome->node);
    off += put_le32(buf + off, welcome->pid);
    return pb_siphash24(key, buf, off);
}

const char *pb_tcp_auth_check(const pb_tcp_auth_t *auth, const uint8_t key[PB_TCP_KEY_LEN],
                              const uint8_t hello_nonce[PB_TCP_NONCE_LEN], const char *job_id,
                              uint32_t local_addr, uint16_t local_port, uint32_t remote_addr,
                              uint16_t remote_port)
{
    if (!pb_tcp_msg_hdr_ok(&auth->hdr, PB_TCP_MSG_AUTH))
        return "malformed handshake";
    if (memchr(auth->job_id, '\0', sizeof(auth->job_id)) == NULL ||
        strcmp(auth->job_id, job_id) != 0)
        return "not of this job (another job id)";
    if (auth->flags & ~PB_TCP_HS_PAYLOAD_MAC)
        return "malformed handshake (unknown flags)";
    if (auth->mac != pb_tcp_auth_mac(key, hello_nonce, auth))
        return "not of this job (wrong MAC)";
    /* the MAC is right: what the importer dialed is what it says */
    if (auth->dial_addr != local_addr || auth->dial_port != local_port)
        return "the importer dialed another address or port (relayed)";
    if (auth->source_addr != remote_addr || auth->source_port != remote_port)
        return "the importer's address is not the connection's (relayed)";
    return NULL;
}

const char *pb_tcp_welcome_check(const pb_tcp_welcome_t *welcome, const uint8_t key[PB_TCP_KEY_LEN],
                                 const uint8_t hello_nonce[PB_TCP_NONCE_LEN],
                                 const pb_tcp_auth_t *auth, uint32_t expected_node)
{
    if (!pb_tcp_msg_hdr_ok(&welcome->hdr, PB_TCP_MSG_WELCOME))
        return "malformed welcome";
    if (welcome->mac != pb_tcp_welcome_mac(key, hello_nonce, auth, welcome))
        return "not of this job (wrong MAC)";
    if (welcome->flags & ~PB_TCP_HS_PAYLOAD_MAC)
        return "malformed welcome (unknown flags)";
    if (welcome->reserved != 0)
        return "malformed welcome (reserved field not 0)";
    if ((auth->flags & PB_TCP_HS_PAYLOAD_MAC) && !(welcome->flags & PB_TCP_HS_PAYLOAD_MAC))
        return "payload MACs refused";
    if (expected_node != UINT32_MAX && welcome->node != expected_node)
        return "the process that answered is on another node";
    return NULL;
}

/* ---- session keys and frame MACs ------------------------------------------------ */

/* One 16-byte key: two outputs of the PRF under @key, labelled @dir @kind. */
static void session_key(const uint8_t key[PB_TCP_KEY_LEN], char dir, char kind,
                        const uint8_t *transcript, size_t transcript_len,
                        uint8_t out[PB_TCP_KEY_LEN])
{
    uint8_t buf[LABEL_LEN + 2 * PB_TCP_NONCE_LEN + 8];
    size_t prefix = sizeof(label_key_prefix) - 1;

    memcpy(buf, label_key_prefix, prefix);
    buf[prefix] = (uint8_t)dir;
    buf[prefix + 1] = (uint8_t)kind;
    memcpy(buf + LABEL_LEN, transcript, transcript_len);
    for (int half = 0; half < 2; half++) {
        uint64_t word;

        buf[prefix + 2] = (uint8_t)('0' + half);
        word = htole64(pb_siphash24(key, buf, LABEL_LEN + transcript_len));
        memcpy(out + 8 * half, &word, 8);
    }
}

void pb_tcp_session_derive(const uint8_t key[PB_TCP_KEY_LEN],
                           const uint8_t hello_nonce[PB_TCP_NONCE_LEN], const pb_tcp_auth_t *auth,
                           int payload_mac, pb_tcp_seal_t *to_exporter, pb_tcp_seal_t *to_importer)
{
    uint8_t transcript[2 * PB_TCP_NONCE_LEN + 8];

    memcpy(transcript, hello_nonce, PB_TCP_NONCE_LEN);
    memcpy(transcript + PB_TCP_NONCE_LEN, auth->nonce, PB_TCP_NONCE_LEN);
    put_le64(transcript + 2 * PB_TCP_NONCE_LEN, auth->mac);
    *to_exporter = (pb_tcp_seal_t){.payload_mac = payload_mac};
    *to_importer = (pb_tcp_seal_t){.payload_mac = payload_mac};
    session_key(key, 'I', 'H', transcript, sizeof(transcript), to_exporter->header_key);
    session_key(key, 'I', 'P', transcript, sizeof(transcript), to_exporter->payload_key);
    session_key(key, 'E', 'H', transcript, sizeof(transcript), to_importer->header_key);
    session_key(key, 'E', 'P', transcript, sizeof(transcript), to_importer->payload_key);
}

uint64_t pb_tcp_header_mac(const uint8_t key[PB_TCP_KEY_LEN], uint64_t seq,
                           const uint8_t header[PB_TCP_FRAME_HEADER_SIZE])
{
    uint8_t buf[8 + PB_TCP_FRAME_MAC_OFFSET];

    put_le64(buf, seq);
    memcpy(buf + 8, header, PB_TCP_FRAME_MAC_OFFSET);
    return pb_siphash24(key, buf, sizeof(buf));
}

uint64_t pb_tcp_header_seal(pb_tcp_seal_t *seal, uint8_t header[PB_TCP_FRAME_HEADER_SIZE])
{
    uint64_t seq = seal->seq++;

    put_le64(header + PB_TCP_FRAME_MAC_OFFSET, pb_tcp_header_mac(seal->header_key, seq, header));
    return seq;
}

void pb_tcp_payload_mac_init(pb_siphash_t *state, const pb_tcp_seal_t *seal, uint64_t seq)
{
    uint8_t seq_le[8];

    put_le64(seq_le, seq);
    pb_siphash_init(state, seal->payload_key);
    pb_siphash_update(state, seq_le, sizeof(seq_le));
}

uint64_t pb_tcp_payload_mac(const pb_tcp_seal_t *seal, uint64_t seq, const void *data, size_t len)
{
    pb_siphash_t state;

    pb_tcp_payload_mac_init(&state, seal, seq);
    pb_siphash_update(&state, data, len);
    return pb_siphash_final(&state);
}

int pb_tcp_msg_hdr_ok(const pb_tcp_msg_hdr_t *hdr, uint16_t type)
{
    return le32toh(hdr->magic) == PB_TCP_MAGIC && le16toh(hdr->version) == PB_TCP_VERSION &&
           le16toh(hdr->type) == type;
}

void pb_tcp_msg_hdr_set(pb_tcp_msg_hdr_t *hdr, uint16_t type)
{
    hdr->magic = htole32(PB_TCP_MAGIC);
    hdr->version = htole16(PB_TCP_VERSION);
    hdr->type = htole16(type);
}

/* ---- frames ----------------------------------------------------------------- */

void pb_tcp_frame_encode(const pb_tcp_frame_t *frame, uint8_t out[PB_TCP_FRAME_HEADER_SIZE])
{
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;

    u16 = htole16(frame->type), memcpy(out + 0, &u16, 2);
    u16 = htole16(frame->flags), memcpy(out + 2, &u16, 2);
    u32 = htole32((uint32_t)frame->status), memcpy(out + 4, &u32, 4);
    u32 = htole32(frame->slot), memcpy(out + 8, &u32, 4);
    u32 = htole32(frame->tag), memcpy(out + 12, &u32, 4);
    u64 = htole64(frame->offset), memcpy(out + 16, &u64, 8);
    u32 = htole32(frame->length), memcpy(out + 24, &u32, 4);
    u32 = htole32(frame->count), memcpy(out + 28, &u32, 4);
    memset(out + PB_TCP_FRAME_MAC_OFFSET, 0, PB_TCP_FRAME_HEADER_SIZE - PB_TCP_FRAME_MAC_OFFSET);
}

void pb_tcp_frame_decode(const uint8_t in[PB_TCP_FRAME_HEADER_SIZE], pb_tcp_frame_t *frame)
{
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;

    memcpy(&u16, in + 0, 2), frame->type = le16toh(u16);
    memcpy(&u16, in + 2, 2), frame->flags = le16toh(u16);
    memcpy(&u32, in + 4, 4), frame->status = (int32_t)le32toh(u32);
    memcpy(&u32, in + 8, 4), frame->slot = le32toh(u32);
    memcpy(&u32, in + 12, 4), frame->tag = le32toh(u32);
    memcpy(&u64, in + 16, 8), frame->offset = le64toh(u64);
    memcpy(&u32, in + 24, 4), frame->length = le32toh(u32);
    memcpy(&u32, in + 28, 4), frame->count = le32toh(u32);
}

/* Which fields each type may use: the others must be zero. */
enum {
    USES_STATUS = 1 << 0,
    USES_SLOT = 1 << 1,
    USES_TAG = 1 << 2,
    USES_OFFSET = 1 << 3,
    USES_COUNT = 1 << 4,
    USES_PAYLOAD = 1 << 5, /* any length up to PB_TCP_MAX_PAYLOAD */
    AT_EXPORTER = 1 << 6   /* the direction it travels in */
};

static const struct {
    unsigned uses;
    uint32_t fixed_length; /* payload length when not USES_PAYLOAD */
    uint16_t flags;        /* the flags it may carry */
} frame_rules[PB_TCP_FRAME_TYPES] = {
    [PB_TCP_ATTACH] = {AT_EXPORTER | USES_TAG, sizeof(pb_tcp_attach_t), 0},
    [PB_TCP_DETACH] = {AT_EXPORTER | USES_SLOT, 0, 0},
    [PB_TCP_PUT] = {AT_EXPORTER | USES_SLOT | USES_OFFSET | USES_PAYLOAD, 0,
                    PB_TCP_FLAG_SIGNAL | PB_TCP_FLAG_WORD_LAST},
    [PB_TCP_GET] = {AT_EXPORTER | USES_SLOT | USES_TAG | USES_OFFSET | USES_COUNT, 0, 0},
    [PB_TCP_BARRIER] = {AT_EXPORTER | USES_SLOT | USES_TAG, 0, 0},
    [PB_TCP_SIGNAL] = {AT_EXPORTER | USES_SLOT, 0, PB_TCP_FLAG_ACCUMULATE},
    [PB_TCP_REPLY] = {USES_STATUS | USES_SLOT | USES_TAG | USES_OFFSET | USES_COUNT | USES_PAYLOAD,
                      0, 0},
    [PB_TCP_EVENT] = {USES_SLOT, 0, 0},
    [PB_TCP_WITHDRAWN] = {USES_SLOT, 0, 0},
    [PB_TCP_LOOKUP] = {AT_EXPORTER | USES_TAG, sizeof(pb_tcp_lookup_t), PB_TCP_FLAG_OFI},
    [PB_TCP_CALL] = {AT_EXPORTER | USES_SLOT | USES_TAG | USES_COUNT | USES_PAYLOAD, 0,
                     PB_TCP_FLAG_NO_REPLY},
};

_Static_assert(PB_TCP_MAX_CALL == PB_RSM_CALL_MAX, "a CALL carries what a call may");
_Static_assert(PB_TCP_MAX_CALL <= PB_TCP_MAX_GET, "a CALL's REPLY is no longer than a GET's");

const char *pb_tcp_frame_check(const pb_tcp_frame_t *frame, int at_exporter)
{
    unsigned uses;

    if (frame->type == 0 || frame->type >= PB_TCP_FRAME_TYPES)
        return "unknown frame type";
    uses = frame_rules[frame->type].uses;
    if (!(uses & AT_EXPORTER) != !at_exporter)
        return "frame type sent in the wrong direction";
    if (frame->flags & ~frame_rules[frame->type].flags)
        return "unknown flags";
    if (!(uses & USES_STATUS) && frame->status != 0)
        return "status set in a request";
    /* a status is PB_OK or one of the error codes, all negative */
    if (frame->status > 0 || frame->status <= PB_ERR_LAST)
        return "unknown status";
    /* slot numbers are at most PB_TCP_MAX_SLOTS */
    if (frame->slot > PB_TCP_MAX_SLOTS)
        return "slot number out of range";
    if (!(uses & USES_SLOT) && frame->slot != 0)
        return "slot set in a frame that names none";
    if (!(uses & USES_TAG) && frame->tag != 0)
        return "tag set in a frame that is not answered";
    if (!(uses & USES_OFFSET) && frame->offset != 0)
        return "offset set in a frame that has none";
    if (!(uses & USES_COUNT) && frame->count != 0)
        return "count set in a frame that has none";
    if (uses & USES_PAYLOAD) {
        if (frame->length > PB_TCP_MAX_PAYLOAD)
            return "payload longer than the protocol allows";
    } else if (frame->length != frame_rules[frame->type].fixed_length) {
        return "payload length wrong for the frame type";
    }
    if (frame->type == PB_TCP_GET && (frame->count == 0 || frame->count > PB_TCP_MAX_GET))
        return "get of zero or too many bytes";
    if (frame->type == PB_TCP_REPLY && frame->length > PB_TCP_MAX_GET)
        return "reply longer than a get may ask for";
    if (frame->type == PB_TCP_PUT && frame->length == 0)
        return "empty put";
    if (frame->type == PB_TCP_CALL && frame->length > PB_TCP_MAX_CALL)
        return "call request longer than a call may be";
    if (frame->type == PB_TCP_CALL && frame->count > PB_TCP_MAX_CALL)
        return "call taking a reply longer than a call may have";
    if (frame->type == PB_TCP_CALL && (frame->flags & PB_TCP_FLAG_NO_REPLY) &&
        (frame->tag != 0 || frame->count != 0))
        return "call without reply with a tag or reply length";
    if ((frame->flags & PB_TCP_FLAG_WORD_LAST) &&
        (frame->length < 4 || frame->length > PB_TCP_WORD_LAST_MAX || frame->offset % 4 != 0))
        return "word-last put of a bad length or offset";
    return NULL;
}

const char *pb_tcp_frame_check_access(const pb_tcp_frame_t *frame, const pb_tcp_slot_view_t *slot)
{
    if (frame->type == PB_TCP_CALL)
        return slot->perm & RSM_PERM_WRITE ? NULL : "call without write permission";
    uint64_t bytes = frame->type == PB_TCP_PUT ? frame->length : frame->count;
    uint32_t needed = frame->type == PB_TCP_PUT ? RSM_PERM_WRITE : RSM_PERM_READ;

    if (!(slot->perm & needed))
        return frame->type == PB_TCP_PUT ? "put without write permission"
                                         : "get without read permission";
    /* written so that no sum can overflow */
    if (frame->offset > slot->size || bytes > slot->size - frame->offset)
        return "access outside the segment";
    return NULL;
}

const char *pb_tcp_reply_check(const pb_tcp_frame_t *frame, uint16_t request_type, size_t room)
{
    if (frame->length == 0)
        return NULL;
    if (frame->status != PB_OK)
        return "reply data with an error";
    if (request_type == PB_TCP_CALL ? frame->length <= room : frame->length == room)
        return NULL;
    return "reply data that was not asked for";
}

const char *pb_tcp_attach_size_check(uint64_t size)
{
    if (size == 0)
        return "an empty segment";
    if (size > PB_TCP_MAX_SEGMENT_SIZE)
        return "a segment larger than an exporter can export";
    return NULL;
}

/* ---- the exporter's handling of frames ------------------------------------------ */

const char *pb_tcp_export_header(pb_tcp_export_rx_t *rx, const pb_tcp_frame_t *frame,
                                 const pb_tcp_slot_view_t *slot, char **dest_p)
{
    const char *why;

    if (frame->type == PB_TCP_ATTACH) {
        *dest_p = (char *)&rx->attach;
        return NULL;
    }
    if (frame->type == PB_TCP_LOOKUP) {
        *dest_p = (char *)&rx->lookup;
        return NULL;
    }
    if (slot == NULL)
        return "frame for a slot that is not attached";
    if (frame->type != PB_TCP_PUT && frame->type != PB_TCP_GET && frame->type != PB_TCP_CALL)
        return NULL;
    if (slot->base == NULL)
        return NULL; /* withdrawn: the data is dropped */
    why = pb_tcp_frame_check_access(frame, slot);
    if (why != NULL)
        return why;
    if (frame->type == PB_TCP_CALL) {
        rx->call_dropped = 0;
        if (frame->length > rx->call_cap) {
            char *grown = realloc(rx->call, frame->length);

            if (grown == NULL) {
                rx->call_dropped = 1; /* read and dropped, answered PB_ERR_NO_MEMORY */
                return NULL;
            }
            rx->call = grown;
            rx->call_cap = frame->length;
        }
        *dest_p = frame->length > 0 ? rx->call : NULL;
        return NULL;
    }
    if (frame->type == PB_TCP_PUT && (frame->flags & PB_TCP_FLAG_WORD_LAST)) {
        /* received aside, stored in order once whole (pb_tcp_export_word_last) */
        if (rx->word_last == NULL && (rx->word_last = malloc(PB_TCP_WORD_LAST_MAX)) == NULL)
            return "no memory for a word-last put";
        *dest_p = rx->word_last;
    } else if (frame->type == PB_TCP_PUT) {
        *dest_p = slot->base + frame->offset;
    }
    return NULL;
}

pb_status_t pb_tcp_export_call(pb_tcp_export_rx_t *rx, const pb_tcp_frame_t *frame, char *base,
                               uint64_t size, pb_rsm_call_handler_t handler, void *arg,
                               uint32_t *reply_len_p, size_t *said_p)
{
    size_t said = 0;

    *reply_len_p = 0;
    *said_p = 0;
    if (rx->call_dropped)
        return PB_ERR_NO_MEMORY;
    if (handler == NULL)
        return PB_ERR_PERMISSION;
    if (frame->count > rx->reply_cap) {
        char *grown = realloc(rx->reply, frame->count);

        if (grown == NULL)
            return PB_ERR_NO_MEMORY;
        rx->reply = grown;
        rx->reply_cap = frame->count;
    }
    handler(arg, base, (size_t)size, frame->length > 0 ? rx->call : NULL, frame->length,
            frame->count > 0 ? rx->reply : NULL, frame->count, &said);
    *said_p = said;
    *reply_len_p = said > frame->count ? frame->count : (uint32_t)said;
    return PB_OK;
}

void pb_tcp_export_rx_free(pb_tcp_export_rx_t *rx)
{
    free(rx->word_last);
    free(rx->call);
    free(rx->reply);
    memset(rx, 0, sizeof(*rx));
}

void pb_tcp_export_word_last(const pb_tcp_export_rx_t *rx, const pb_tcp_frame_t *frame, char *base)
{
    char *to = base + frame->offset;
    uint32_t word;

    memcpy(to + 4, rx->word_last + 4, frame->length - 4);
    memcpy(&word, rx->word_last, sizeof(word));
    /* a reader that sees the first word sees the rest */
    atomic_store_explicit((_Atomic uint32_t *)to, word, memory_order_release);
}

void pb_tcp_export_redirect(pb_tcp_rx_t *rx, char *base)
{
    if (!rx->in_payload || rx->frame.type != PB_TCP_PUT || rx->dest == NULL)
        return;
    if (rx->frame.flags & PB_TCP_FLAG_WORD_LAST)
        return; /* its payload is in rx->word_last, not in the segment */
    if (base != NULL && rx->payload_got > 0)
        memcpy(base + rx->frame.offset, rx->dest, rx->payload_got);
    rx->dest = base == NULL ? NULL : base + rx->frame.offset;
}

/* ---- receive state machine -------------------------------------------------- */

void pb_tcp_rx_init(pb_tcp_rx_t *rx, int at_exporter, const pb_tcp_seal_t *seal,
                    pb_tcp_rx_header_cb_t on_header, pb_tcp_rx_frame_cb_t on_frame, void *ctx)
{
    memset(rx, 0, sizeof(*rx));
    rx->at_exporter = at_exporter;
    rx->seal = *seal;
    rx->on_header = on_header;
    rx->on_frame = on_frame;
    rx->ctx = ctx;
}

/* Whether the frame arriving is followed by its payload's MAC. */
static inline int rx_has_trailer(const pb_tcp_rx_t *rx)
{
    return rx->seal.payload_mac && rx->frame.length > 0;
}

void pb_tcp_rx_next(const pb_tcp_rx_t *rx, char *scratch, size_t scratch_len, char **buf_p,
                    size_t *len_p)
{
    size_t left;

    if (!rx->in_payload) {
        *buf_p = (char *)rx->header + rx->header_got;
        *len_p = PB_TCP_FRAME_HEADER_SIZE - rx->header_got;
        return;
    }
    left = rx->frame.length - rx->payload_got;
    if (left == 0) {
        /* the payload is in: its MAC follows */
        *buf_p = (char *)rx->trailer + rx->trailer_got;
        *len_p = PB_TCP_PAYLOAD_MAC_SIZE - rx->trailer_got;
    } else if (rx->dest != NULL) {
        *buf_p = rx->dest + rx->payload_got;
        *len_p = left;
    } else {
        *buf_p = scratch;
        *len_p = left < scratch_len ? left : scratch_len;
    }
}

const char *pb_tcp_rx_advance(pb_tcp_rx_t *rx, const void *data, size_t len)
{
    const char *why;
    uint64_t mac;

    if (!rx->in_payload) {
        rx->header_got += len;
        if (rx->header_got < PB_TCP_FRAME_HEADER_SIZE)
            return NULL;
        rx->header_got = 0;
        /* nothing of a header is believed before its MAC */
        memcpy(&mac, rx->header + PB_TCP_FRAME_MAC_OFFSET, sizeof(mac));
        if (le64toh(mac) != pb_tcp_header_mac(rx->seal.header_key, rx->seal.seq, rx->header))
            return "a frame whose MAC is wrong (forged, replayed, out of order or of "
                   "another connection)";
        rx->frame_seq = rx->seal.seq++;
        pb_tcp_frame_decode(rx->header, &rx->frame);
        why = pb_tcp_frame_check(&rx->frame, rx->at_exporter);
        if (why != NULL)
            return why;
        rx->dest = NULL;
        why = rx->on_header(rx->ctx, &rx->frame, &rx->dest);
        if (why != NULL)
            return why;
        rx->payload_got = 0;
        rx->trailer_got = 0;
        rx->in_payload = 1;
        if (rx_has_trailer(rx))
            pb_tcp_payload_mac_init(&rx->payload_mac, &rx->seal, rx->frame_seq);
        len = 0;
    }
    if (rx->payload_got < rx->frame.length) {
        if (len > 0 && rx_has_trailer(rx))
            pb_siphash_update(&rx->payload_mac, data, len);
        rx->payload_got += len;
        if (rx->payload_got < rx->frame.length || rx_has_trailer(rx))
            return NULL;
    } else if (rx_has_trailer(rx)) {
        rx->trailer_got += len;
        if (rx->trailer_got < PB_TCP_PAYLOAD_MAC_SIZE)
            return NULL;
        memcpy(&mac, rx->trailer, sizeof(mac));
        if (le64toh(mac) != pb_siphash_final(&rx->payload_mac))
            return "a payload whose MAC is wrong (changed on the way)";
    }
    rx->in_payload = 0;
    rx->on_frame(rx->ctx, &rx->frame);
    return NULL;
}
