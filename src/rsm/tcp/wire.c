#include "rsm/tcp/wire.h"

#include <endian.h>
#include <postbox/rsm.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/siphash.h"

/* ---- handshake -------------------------------------------------------------- */

uint64_t pb_tcp_auth_mac(const uint8_t key[PB_TCP_KEY_LEN],
                         const uint8_t hello_nonce[PB_TCP_NONCE_LEN], const pb_tcp_auth_t *auth)
{
    uint8_t buf[16 + PB_TCP_NONCE_LEN + 4 + PB_TCP_JOB_ID_MAX + PB_TCP_NONCE_LEN];
    uint32_t node = htole32(auth->node);
    size_t off = 0;

    memcpy(buf + off, "postbox-tcp-auth", 16), off += 16;
    memcpy(buf + off, hello_nonce, PB_TCP_NONCE_LEN), off += PB_TCP_NONCE_LEN;
    memcpy(buf + off, &node, 4), off += 4;
    memcpy(buf + off, auth->job_id, PB_TCP_JOB_ID_MAX), off += PB_TCP_JOB_ID_MAX;
    memcpy(buf + off, auth->nonce, PB_TCP_NONCE_LEN), off += PB_TCP_NONCE_LEN;
    return pb_siphash24(key, buf, off);
}

uint64_t pb_tcp_welcome_mac(const uint8_t key[PB_TCP_KEY_LEN],
                            const uint8_t auth_nonce[PB_TCP_NONCE_LEN], int32_t status)
{
    uint8_t buf[16 + PB_TCP_NONCE_LEN + 4];
    uint32_t wire_status = htole32((uint32_t)status);
    size_t off = 0;

    memcpy(buf + off, "postbox-tcp-welc", 16), off += 16;
    memcpy(buf + off, auth_nonce, PB_TCP_NONCE_LEN), off += PB_TCP_NONCE_LEN;
    memcpy(buf + off, &wire_status, 4), off += 4;
    return pb_siphash24(key, buf, off);
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
    [PB_TCP_ATTACH] = {AT_EXPORTER | USES_TAG, sizeof(pb_tcp_attach_t)},
    [PB_TCP_DETACH] = {AT_EXPORTER | USES_SLOT, 0},
    [PB_TCP_PUT] = {AT_EXPORTER | USES_SLOT | USES_OFFSET | USES_PAYLOAD, 0,
                    PB_TCP_FLAG_SIGNAL | PB_TCP_FLAG_WORD_LAST},
    [PB_TCP_GET] = {AT_EXPORTER | USES_SLOT | USES_TAG | USES_OFFSET | USES_COUNT, 0},
    [PB_TCP_BARRIER] = {AT_EXPORTER | USES_SLOT | USES_TAG, 0},
    [PB_TCP_SIGNAL] = {AT_EXPORTER | USES_SLOT, 0, PB_TCP_FLAG_ACCUMULATE},
    [PB_TCP_REPLY] = {USES_STATUS | USES_SLOT | USES_TAG | USES_OFFSET | USES_COUNT | USES_PAYLOAD,
                      0},
    [PB_TCP_EVENT] = {USES_SLOT, 0},
    [PB_TCP_WITHDRAWN] = {USES_SLOT, 0},
    [PB_TCP_LOOKUP] = {AT_EXPORTER | USES_TAG, sizeof(pb_tcp_lookup_t)},
};

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
    if (frame->type == PB_TCP_GET && (frame->count == 0 || frame->count > PB_TCP_MAX_PAYLOAD))
        return "get of zero or too many bytes";
    if (frame->type == PB_TCP_PUT && frame->length == 0)
        return "empty put";
    if ((frame->flags & PB_TCP_FLAG_WORD_LAST) &&
        (frame->length < 4 || frame->length > PB_TCP_WORD_LAST_MAX || frame->offset % 4 != 0))
        return "word-last put of a bad length or offset";
    return NULL;
}

const char *pb_tcp_frame_check_access(const pb_tcp_frame_t *frame, const pb_tcp_slot_view_t *slot)
{
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
    if (frame->type != PB_TCP_PUT && frame->type != PB_TCP_GET)
        return NULL;
    if (slot->base == NULL)
        return NULL; /* withdrawn: the data is dropped */
    why = pb_tcp_frame_check_access(frame, slot);
    if (why != NULL)
        return why;
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

void pb_tcp_rx_init(pb_tcp_rx_t *rx, int at_exporter, pb_tcp_rx_header_cb_t on_header,
                    pb_tcp_rx_frame_cb_t on_frame, void *ctx)
{
    memset(rx, 0, sizeof(*rx));
    rx->at_exporter = at_exporter;
    rx->on_header = on_header;
    rx->on_frame = on_frame;
    rx->ctx = ctx;
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
    if (rx->dest != NULL) {
        *buf_p = rx->dest + rx->payload_got;
        *len_p = left;
    } else {
        *buf_p = scratch;
        *len_p = left < scratch_len ? left : scratch_len;
    }
}

const char *pb_tcp_rx_advance(pb_tcp_rx_t *rx, size_t len)
{
    const char *why;

    if (!rx->in_payload) {
        rx->header_got += len;
        if (rx->header_got < PB_TCP_FRAME_HEADER_SIZE)
            return NULL;
        rx->header_got = 0;
        pb_tcp_frame_decode(rx->header, &rx->frame);
        why = pb_tcp_frame_check(&rx->frame, rx->at_exporter);
        if (why != NULL)
            return why;
        rx->dest = NULL;
        why = rx->on_header(rx->ctx, &rx->frame, &rx->dest);
        if (why != NULL)
            return why;
        rx->payload_got = 0;
        rx->in_payload = 1;
        len = 0;
    }
    rx->payload_got += len;
    if (rx->payload_got < rx->frame.length)
        return NULL;
    rx->in_payload = 0;
    rx->on_frame(rx->ctx, &rx->frame);
    return NULL;
}
