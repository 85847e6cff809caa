/*
 * Gets longer than one GET frame may ask for (PB_TCP_MAX_GET): the importer
 * cuts them into pieces, several outstanding at once, each reply received
 * into its place in the caller's buffer (docs/tcp.md, Semantics).
 *
 * - A long get returns the segment's bytes, whatever its offset, length
 *   (one byte more or less than a multiple of the piece) and destination
 *   alignment, and writes nothing outside its buffer.
 * - A long get whose deadline (POSTBOX_TCP_REPLY_TIMEOUT_MS) passes in the
 *   middle, with pieces still outstanding (the exporter stopped with
 *   SIGSTOP once a middle piece began to arrive), returns RSMERR_TIMEOUT;
 *   when the exporter runs again, the late replies of every outstanding
 *   piece are dropped (the buffer is not written) and the connection
 *   serves the next long get.
 *
 * Run on the tcp controller only, with the exporter server on node 1.
 */
#include <postbox/rsm.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "rsm/tcp/wire.h"
#include "rsm_util.h"

#define SEED 9
#define PIECE ((size_t)PB_TCP_MAX_GET)
#define GUARD 64 /* bytes checked untouched on each side of a get's buffer */

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Get [off, off + len) into a buffer @misalign bytes past an 8-aligned
 * address, between guard bytes, and check it holds the exporter's bytes
 * and the guards are untouched. */
static void expect_get(rsm_memseg_import_handle_t im, size_t off, size_t len, size_t misalign)
{
    uint8_t *block = malloc(len + 2 * GUARD + 8), *buf = block + GUARD + misalign;
    size_t bad;

    CHECK(block != NULL);
    memset(block, 0xa5, len + 2 * GUARD + 8);
    CHECK_OK(rsm_memseg_import_get(im, (off_t)off, buf, len));
    bad = pbt_check_pattern(buf, len, off, SEED);
    CHECK_MSG(bad == (size_t)-1, "get of %zu bytes at %zu: byte %zu is not the exporter's", len,
              off, bad);
    for (size_t i = 0; i < GUARD; i++) {
        CHECK_MSG(buf[-1 - (ptrdiff_t)i] == 0xa5 && buf[len + i] == 0xa5,
                  "get of %zu bytes at %zu wrote outside its buffer", len, off);
    }
    free(block);
}

static void case_long_get_returns_the_segments_bytes(void)
{
    const size_t size = 6 * PIECE;
    static const struct {
        size_t off, len, misalign;
    } gets[] = {
        {0, PIECE, 0},                       /* one whole piece */
        {0, PIECE + 1, 0},                   /* a piece and a byte */
        {1, PIECE - 1, 3},                   /* a byte short of one */
        {4095, 2 * PIECE + 1, 1},            /* unaligned, k pieces and a byte */
        {7, 4 * PIECE + 1, 5},               /* more pieces than are outstanding at once */
        {PIECE - 1, 5 * PIECE + 1, 7},       /* up to the segment's last byte */
        {0, 6 * PIECE, 0},                   /* the whole segment */
        {3 * PIECE + 17, 2 * PIECE - 33, 2}, /* within, no piece boundary aligned */
        {6 * PIECE - 3, 3, 1},               /* a few bytes at the end */
    };
    pbt_export_opts_t o = {.size = size, .seed = SEED};
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;

    c = pbt_ctlr_get();
    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_READ, &im));
    for (size_t i = 0; i < sizeof(gets) / sizeof(gets[0]); i++) {
        CHECK(gets[i].off + gets[i].len <= size);
        expect_get(im, gets[i].off, gets[i].len, gets[i].misalign);
    }
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

/* The state letter of process @pid (/proc/PID/stat): 'T' once stopped. */
static char process_state(pid_t pid)
{
    char path[64], line[512], *close_paren;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    CHECK(f != NULL);
    n = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[n] = '\0';
    close_paren = strrchr(line, ')');
    CHECK(close_paren != NULL && close_paren[1] == ' ');
    return close_paren[2];
}

typedef struct {
    pbt_exporter_t *ex;
    const volatile uint8_t *watched; /* a byte of a middle piece */
    uint8_t expect;
} stopper_t;

/* Stop the exporter (and wait until it took effect) as soon as the watched
 * byte has arrived. */
static void *stop_when_piece_arrives(void *arg)
{
    stopper_t *s = arg;

    for (int i = 0; *s->watched != s->expect; i++) {
        CHECK_MSG(i < 200000, "the middle piece did not begin to arrive");
        usleep(50);
    }
    CHECK_SYS(kill(s->ex->peer.pid, SIGSTOP));
    for (int i = 0; process_state(s->ex->peer.pid) != 'T'; i++) {
        CHECK_MSG(i < 1000, "the exporter did not stop");
        pbt_sleep_ms(1);
    }
    return NULL;
}

static void case_long_get_timing_out_midway_drops_every_outstanding_piece(void)
{
    const size_t size = 16 * PIECE, off = 3, len = 12 * PIECE + 1;
    const size_t watched_at = 2 * PIECE + PIECE / 2; /* in the third piece */
    pbt_export_opts_t o = {.size = size, .seed = SEED};
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;
    stopper_t stopper = {.ex = &ex};
    uint8_t *buf, *watched, *copy = malloc(len);
    pthread_t thread;
    double start, took;
    size_t got, i;
    int fd;

    CHECK(copy != NULL);
    /* long enough for the first pieces to arrive even on a loaded machine
     * or under a sanitizer */
    setenv("POSTBOX_TCP_REPLY_TIMEOUT_MS", "2000", 1);
    c = pbt_ctlr_get();
    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_READ, &im));

    /* the get's buffer, mapped twice: the watcher reads the bytes arriving
     * through the second mapping, as another process would (its racy look
     * is by design, not a data race of this process's memory) */
    fd = memfd_create("long-get", MFD_CLOEXEC);
    CHECK_SYS(fd);
    CHECK_SYS(ftruncate(fd, (off_t)len));
    buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    watched = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(buf != MAP_FAILED && watched != MAP_FAILED);
    close(fd);
    for (i = watched_at; pbt_pattern(off + i, SEED) == 0; i++)
        ;
    stopper.watched = watched + i;
    stopper.expect = pbt_pattern(off + i, SEED);

    CHECK(pthread_create(&thread, NULL, stop_when_piece_arrives, &stopper) == 0);
    start = now_ms();
    CHECK_RC(rsm_memseg_import_get(im, (off_t)off, buf, len), RSMERR_TIMEOUT);
    took = now_ms() - start;
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_MSG(took >= 1990 && took < 6000, "the get timed out after %.0f ms, not about 2000", took);
    /* the pieces before the stop arrived, in their places; not the whole */
    got = pbt_check_pattern(buf, len, off, SEED);
    CHECK_MSG(got > watched_at && got != (size_t)-1,
              "the get did not time out in the middle of its data (first wrong byte %zu)", got);
    memcpy(copy, buf, len);

    CHECK_SYS(kill(ex.peer.pid, SIGCONT));
    /* the late replies of the pieces outstanding come and are dropped */
    pbt_sleep_ms(500);
    CHECK_MSG(memcmp(buf, copy, len) == 0,
              "a late reply of a piece wrote the buffer after the get timed out");
    /* the connection lives and serves a long get again (late replies still
     * arriving ahead of it may make a first try time out) */
    {
        int rc = RSMERR_TIMEOUT;

        memset(buf, 0, len);
        for (int tries = 0; tries < 5 && rc == RSMERR_TIMEOUT; tries++)
            rc = rsm_memseg_import_get(im, (off_t)off, buf, len);
        CHECK_OK(rc);
        got = pbt_check_pattern(buf, len, off, SEED);
        CHECK_MSG(got == (size_t)-1, "the get after the timeout: byte %zu is not the exporter's",
                  got);
    }
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
    munmap(buf, len);
    munmap((void *)watched, len);
    free(copy);
}

static const pbt_case_t cases[] = {
    PBT_CASE(long_get_returns_the_segments_bytes),
    PBT_CASE(long_get_timing_out_midway_drops_every_outstanding_piece),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
