/*
 * The tcp importer's checks of what an exporter answers (src/rsm/tcp/wire.c,
 * the pure part of the transport: the test compiles its source in).  A real
 * exporter never announces a size it could not have exported, so the check
 * of the ATTACH reply's size is tested here, on the function the importer
 * calls before it takes the size (pb_tcp_rail_connect).  And the exporter's
 * receiving of puts across a rebind (pb_tcp_export_redirect): a put cut by
 * it lands whole in the new memory, a word-last one never with stale bytes.
 */
#include <postbox/rsm.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rsm/tcp/wire.h"

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

/* ---- a rebind while a put is being received ------------------------------ */

#define SEG 16384

/* An exporter's receiving side, as src/rsm/tcp/export.c drives it: one slot
 * of the segment at view.base, payloads placed by pb_tcp_export_header and
 * word-last puts stored at their end into the memory of that time. */
typedef struct {
    pb_tcp_rx_t rx;
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
    pb_tcp_rx_init(&ex->rx, 1, exporter_on_header, exporter_on_frame, ex);
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
        CHECK(pb_tcp_rx_advance(&ex->rx, want) == NULL);
        stream += want;
        len -= want;
    }
}

/* A PUT of @len bytes of pattern @seed at @offset, header and payload, into @out. */
static size_t put_frame(uint8_t *out, uint64_t offset, uint32_t len, uint16_t flags, unsigned seed)
{
    pb_tcp_frame_t frame = {
        .type = PB_TCP_PUT, .flags = flags, .slot = 1, .offset = offset, .length = len};

    pb_tcp_frame_encode(&frame, out);
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
    n = put_frame(stream, offset, len, flags, 1);
    exporter_feed(&ex, stream, n);
    CHECK(ex.frames == 1);
    memcpy(old_copy, old_mem, SEG);

    n = put_frame(stream, offset, len, flags, 2);
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
        n = put_frame(stream, 512, 4096, word_last ? PB_TCP_FLAG_WORD_LAST : 0, 3);
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
    PBT_CASE(attach_size_exportable_accepted),
    PBT_CASE(attach_size_impossible_refused),
    PBT_CASE(word_last_put_straddling_rebind_lands_whole_in_new_memory),
    PBT_CASE(put_straddling_rebind_lands_whole_in_new_memory),
    PBT_CASE(put_straddling_unpublish_is_dropped),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
