/*
 * libFuzzer target for the tcp transport's frame handling (src/rsm/tcp/wire.c).
 *
 * The input is a byte stream as a peer would send it after the handshake.
 * The first byte picks how the stream is cut into reads (so frames arrive
 * in pieces, as from a socket); the rest is fed to an exporter-side and an
 * importer-side receive machine.  The exporter side runs the transport's
 * own frame handling, pb_tcp_export_header and pb_tcp_export_word_last
 * (the pure part of src/rsm/tcp/export.c's callbacks): only the slot
 * table is the fuzzer's.  Slots 1 to 3 are heap blocks of their exact
 * size, so AddressSanitizer reports any byte written or read outside them;
 * slot 4 is withdrawn.  A frame the checks accept must also be inside by
 * construction, which is asserted.
 */
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

static void exporter_on_frame(void *arg, const pb_tcp_frame_t *frame)
{
    fuzz_ctx_t *ctx = arg;
    pb_tcp_slot_view_t view;
    const pb_tcp_slot_view_t *slot = slot_view(ctx, frame->slot, &view);

    ctx->frames++;
    if (frame->type == PB_TCP_PUT && (frame->flags & PB_TCP_FLAG_WORD_LAST) && slot != NULL &&
        slot->base != NULL)
        pb_tcp_export_word_last(&ctx->export_rx, frame, slot->base);
}

static const char *importer_on_header(void *arg, const pb_tcp_frame_t *frame, char **dest_p)
{
    fuzz_ctx_t *ctx = arg;

    if (frame->type != PB_TCP_REPLY || frame->length == 0)
        return NULL;
    if (frame->tag != 7 || frame->status != 0 || frame->length != sizeof(ctx->reply_buf))
        return "reply data that was not asked for";
    *dest_p = ctx->reply_buf;
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
        if (pb_tcp_rx_advance(rx, len) != NULL)
            return; /* the connection would close here */
        data += len;
        size -= len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t cuts[] = {SIZE_MAX, 1, 3, 7, 32, 33, 100};
    fuzz_ctx_t ctx = {0};
    pb_tcp_rx_t rx;
    size_t cut;

    if (size < 1)
        return 0;
    cut = cuts[data[0] % (sizeof(cuts) / sizeof(cuts[0]))];
    data++, size--;
    for (int i = 0; i < SLOTS; i++)
        ctx.segments[i] = calloc(1, slot_shapes[i].size);
    pb_tcp_rx_init(&rx, 1, exporter_on_header, exporter_on_frame, &ctx);
    feed(&rx, data, size, cut);
    pb_tcp_rx_init(&rx, 0, importer_on_header, importer_on_frame, &ctx);
    feed(&rx, data, size, cut);
    for (int i = 0; i < SLOTS; i++)
        free(ctx.segments[i]);
    free(ctx.export_rx.word_last);
    return 0;
}
