/* put, get, put8..64, get8..64, putv, getv and local memory handles. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rsm_util.h"

#define PG (pbt_page_size())

/* a fresh exporter (4 pages, pattern seed 5) and an import of it */
typedef struct {
    rsmapi_controller_handle_t c;
    pbt_exporter_t ex;
    rsm_memseg_import_handle_t im;
    size_t size;
} fixture_t;

static void fx_start(fixture_t *f, rsm_permission_t perm, size_t size)
{
    pbt_export_opts_t o = {.size = size, .seed = 5};

    f->c = pbt_ctlr_get();
    pbt_exporter_start(&f->ex, &o);
    f->size = f->ex.size;
    CHECK_OK(pbt_connect(f->c, &f->ex, perm, &f->im));
}

static void fx_end(fixture_t *f)
{
    CHECK_OK(rsm_memseg_import_disconnect(f->im));
    pbt_exporter_stop(&f->ex);
    CHECK_OK(rsm_release_controller(f->c));
}

/* ---- put / get ---------------------------------------------------------------- */

static void case_put_get_roundtrip_reaches_exporter(void)
{
    static const size_t lens[] = {1, 3, 8, 63, 64, 65, 4095, 4096, 5000};
    fixture_t f;
    uint8_t *src, *dst;

    fx_start(&f, RSM_PERM_RDWR, 4 * PG);
    src = malloc(f.size);
    dst = malloc(f.size);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        size_t off = (i * 517) % (f.size - lens[i]);

        pbt_fill_pattern(src, lens[i], off, 40 + (unsigned)i);
        CHECK_OK(rsm_memseg_import_put(f.im, off, src, lens[i]));
        pbt_exporter_expect(&f.ex, off, src, lens[i], "put");
        memset(dst, 0, lens[i]);
        CHECK_OK(rsm_memseg_import_get(f.im, off, dst, lens[i]));
        CHECK_MSG(memcmp(src, dst, lens[i]) == 0, "get of %zu bytes at %zu differs", lens[i], off);
    }
    /* the whole segment at once */
    pbt_fill_pattern(src, f.size, 0, 77);
    CHECK_OK(rsm_memseg_import_put(f.im, 0, src, f.size));
    pbt_exporter_expect(&f.ex, 0, src, f.size, "whole-segment put");
    CHECK_OK(rsm_memseg_import_get(f.im, 0, dst, f.size));
    CHECK(memcmp(src, dst, f.size) == 0);
    free(src);
    free(dst);
    fx_end(&f);
}

static void case_get_sees_exporter_writes(void)
{
    fixture_t f;
    uint8_t v[100], r[100];

    fx_start(&f, RSM_PERM_READ, PG);
    CHECK_OK(rsm_memseg_import_get(f.im, 0, r, sizeof(r)));
    CHECK(pbt_check_pattern(r, sizeof(r), 0, 5) == (size_t)-1);
    memset(v, 0x3c, sizeof(v));
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_WRITE, 200, sizeof(v), v));
    CHECK_OK(rsm_memseg_import_get(f.im, 200, r, sizeof(r)));
    CHECK(memcmp(v, r, sizeof(r)) == 0);
    fx_end(&f);
}

static void case_large_put_get_roundtrip(void)
{
    size_t size = 256 * PG;
    fixture_t f;
    uint8_t *src = malloc(size), *dst = malloc(size);

    fx_start(&f, RSM_PERM_RDWR, size);
    pbt_fill_pattern(src, size, 0, 99);
    CHECK_OK(rsm_memseg_import_put(f.im, 0, src, size));
    CHECK_OK(rsm_memseg_import_get(f.im, 0, dst, size));
    CHECK(memcmp(src, dst, size) == 0);
    pbt_exporter_expect(&f.ex, size - 4096, src + size - 4096, 4096, "large put tail");
    free(src);
    free(dst);
    fx_end(&f);
}

static void case_put_read_only_import_perm_denied(void)
{
    fixture_t f;
    uint8_t v[16] = {1, 2, 3};

    fx_start(&f, RSM_PERM_READ, PG);
    CHECK_RC(rsm_memseg_import_put(f.im, 0, v, sizeof(v)), RSMERR_PERM_DENIED);
    CHECK_RC(rsm_memseg_import_put8(f.im, 0, v, 4), RSMERR_PERM_DENIED);
    CHECK_RC(rsm_memseg_import_put64(f.im, 0, (uint64_t *)(void *)v, 1), RSMERR_PERM_DENIED);
    CHECK_OK(rsm_memseg_import_get(f.im, 0, v, sizeof(v)));
    pbt_exporter_expect_pristine(&f.ex, "put through a read-only import");
    fx_end(&f);
}

static void case_get_write_only_import_perm_denied(void)
{
    fixture_t f;
    uint64_t v[2] = {0, 0};

    fx_start(&f, RSM_PERM_WRITE, PG);
    CHECK_RC(rsm_memseg_import_get(f.im, 0, v, sizeof(v)), RSMERR_PERM_DENIED);
    CHECK_RC(rsm_memseg_import_get64(f.im, 0, v, 2), RSMERR_PERM_DENIED);
    CHECK(v[0] == 0 && v[1] == 0);
    CHECK_OK(rsm_memseg_import_put(f.im, 0, v, sizeof(v)));
    fx_end(&f);
}

static void case_put_out_of_bounds_rejected(void)
{
    fixture_t f;
    uint8_t v[64];

    fx_start(&f, RSM_PERM_RDWR, PG);
    memset(v, 0xab, sizeof(v));
    CHECK_RC(rsm_memseg_import_put(f.im, -1, v, 1), RSMERR_BAD_OFFSET);
    CHECK_RC(rsm_memseg_import_put(f.im, -4096, v, 8), RSMERR_BAD_OFFSET);
    CHECK_RC(rsm_memseg_import_put(f.im, (off_t)f.size + 1, v, 1), RSMERR_BAD_OFFSET);
    CHECK_RC(rsm_memseg_import_put(f.im, (off_t)f.size * 4, v, 1), RSMERR_BAD_OFFSET);
    CHECK_RC(rsm_memseg_import_put(f.im, (off_t)f.size - 8, v, 9), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_put(f.im, (off_t)f.size, v, 1), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_put(f.im, 0, v, f.size + 1), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_put(f.im, 8, v, (size_t)-1), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_put(f.im, 8, v, (size_t)-8), RSMERR_BAD_LENGTH);
    pbt_exporter_expect_pristine(&f.ex, "failed puts");
    fx_end(&f);
}

static void case_get_out_of_bounds_rejected(void)
{
    fixture_t f;
    uint8_t v[64];

    fx_start(&f, RSM_PERM_RDWR, PG);
    memset(v, 0xcd, sizeof(v));
    CHECK_RC(rsm_memseg_import_get(f.im, -1, v, 1), RSMERR_BAD_OFFSET);
    CHECK_RC(rsm_memseg_import_get(f.im, (off_t)f.size + 1, v, 1), RSMERR_BAD_OFFSET);
    CHECK_RC(rsm_memseg_import_get(f.im, (off_t)f.size - 8, v, 9), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_get(f.im, 8, v, (size_t)-1), RSMERR_BAD_LENGTH);
    for (size_t i = 0; i < sizeof(v); i++)
        CHECK_MSG(v[i] == 0xcd, "a failed get wrote byte %zu of the buffer", i);
    fx_end(&f);
}

static void case_put_get_null_buffer_bad_addr(void)
{
    fixture_t f;

    fx_start(&f, RSM_PERM_RDWR, PG);
    CHECK_RC(rsm_memseg_import_put(f.im, 0, NULL, 8), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_memseg_import_get(f.im, 0, NULL, 8), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_memseg_import_put32(f.im, 0, NULL, 1), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_memseg_import_get16(f.im, 0, NULL, 1), RSMERR_BAD_ADDR);
    pbt_exporter_expect_pristine(&f.ex, "put of a NULL buffer");
    fx_end(&f);
}

static void case_put_get_zero_length_succeeds(void)
{
    fixture_t f;
    uint8_t v[8] = {9, 9, 9, 9, 9, 9, 9, 9};

    fx_start(&f, RSM_PERM_RDWR, PG);
    CHECK_OK(rsm_memseg_import_put(f.im, 0, v, 0));
    CHECK_OK(rsm_memseg_import_put(f.im, (off_t)f.size, v, 0));
    CHECK_OK(rsm_memseg_import_get(f.im, 16, v, 0));
    CHECK_OK(rsm_memseg_import_put8(f.im, 3, v, 0));
    CHECK(v[0] == 9 && v[7] == 9);
    pbt_exporter_expect_pristine(&f.ex, "zero-length put");
    fx_end(&f);
}

static void case_put_get_last_byte_allowed(void)
{
    fixture_t f;
    uint8_t v = 0xfe, r = 0;

    fx_start(&f, RSM_PERM_RDWR, PG);
    CHECK_OK(rsm_memseg_import_put(f.im, (off_t)f.size - 1, &v, 1));
    CHECK_OK(rsm_memseg_import_get(f.im, (off_t)f.size - 1, &r, 1));
    CHECK_EQ_U64(r, 0xfe);
    pbt_exporter_expect(&f.ex, f.size - 1, &v, 1, "last-byte put");
    fx_end(&f);
}

/* ---- put8..64 / get8..64 ----------------------------------------------------- */

static void case_putN_getN_roundtrip(void)
{
    fixture_t f;
    uint8_t a8[5] = {1, 2, 3, 4, 5}, b8[5];
    uint16_t a16[3] = {0x1234, 0xabcd, 0xffff}, b16[3];
    uint32_t a32[3] = {0xdeadbeef, 1, 0x80000000u}, b32[3];
    uint64_t a64[2] = {0x0123456789abcdefull, 42}, b64[2];

    fx_start(&f, RSM_PERM_RDWR, PG);
    CHECK_OK(rsm_memseg_import_put8(f.im, 1, a8, 5));
    CHECK_OK(rsm_memseg_import_put16(f.im, 16, a16, 3));
    CHECK_OK(rsm_memseg_import_put32(f.im, 32, a32, 3));
    CHECK_OK(rsm_memseg_import_put64(f.im, 64, a64, 2));
    pbt_exporter_expect(&f.ex, 1, a8, sizeof(a8), "put8");
    pbt_exporter_expect(&f.ex, 16, a16, sizeof(a16), "put16");
    pbt_exporter_expect(&f.ex, 32, a32, sizeof(a32), "put32");
    pbt_exporter_expect(&f.ex, 64, a64, sizeof(a64), "put64");
    CHECK_OK(rsm_memseg_import_get8(f.im, 1, b8, 5));
    CHECK_OK(rsm_memseg_import_get16(f.im, 16, b16, 3));
    CHECK_OK(rsm_memseg_import_get32(f.im, 32, b32, 3));
    CHECK_OK(rsm_memseg_import_get64(f.im, 64, b64, 2));
    CHECK(memcmp(a8, b8, sizeof(a8)) == 0);
    CHECK(memcmp(a16, b16, sizeof(a16)) == 0);
    CHECK(memcmp(a32, b32, sizeof(a32)) == 0);
    CHECK(memcmp(a64, b64, sizeof(a64)) == 0);
    fx_end(&f);
}

static void case_putN_getN_misaligned_offset(void)
{
    fixture_t f;
    uint16_t v16 = 7;
    uint32_t v32 = 7;
    uint64_t v64 = 7;

    fx_start(&f, RSM_PERM_RDWR, PG);
    CHECK_RC(rsm_memseg_import_put16(f.im, 1, &v16, 1), RSMERR_MISALIGNED_OFFSET);
    CHECK_RC(rsm_memseg_import_put32(f.im, 2, &v32, 1), RSMERR_MISALIGNED_OFFSET);
    CHECK_RC(rsm_memseg_import_put64(f.im, 4, &v64, 1), RSMERR_MISALIGNED_OFFSET);
    CHECK_RC(rsm_memseg_import_put64(f.im, 12, &v64, 1), RSMERR_MISALIGNED_OFFSET);
    CHECK_RC(rsm_memseg_import_get16(f.im, 3, &v16, 1), RSMERR_MISALIGNED_OFFSET);
    CHECK_RC(rsm_memseg_import_get32(f.im, 6, &v32, 1), RSMERR_MISALIGNED_OFFSET);
    CHECK_RC(rsm_memseg_import_get64(f.im, 9, &v64, 1), RSMERR_MISALIGNED_OFFSET);
    pbt_exporter_expect_pristine(&f.ex, "misaligned putN");
    /* aligned at the item size is enough */
    CHECK_OK(rsm_memseg_import_put16(f.im, 2, &v16, 1));
    CHECK_OK(rsm_memseg_import_put32(f.im, 4, &v32, 1));
    CHECK_OK(rsm_memseg_import_put64(f.im, 8, &v64, 1));
    fx_end(&f);
}

static void case_putN_getN_out_of_bounds_rejected(void)
{
    fixture_t f;
    uint64_t v[4] = {0};

    fx_start(&f, RSM_PERM_RDWR, PG);
    CHECK_RC(rsm_memseg_import_put64(f.im, (off_t)f.size - 8, v, 2), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_put32(f.im, (off_t)f.size - 4, (uint32_t *)v, 2), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_get16(f.im, (off_t)f.size, (uint16_t *)v, 1), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_put8(f.im, -1, (uint8_t *)v, 1), RSMERR_BAD_OFFSET);
    CHECK_RC(rsm_memseg_import_put64(f.im, (off_t)f.size + 8, v, 1), RSMERR_BAD_OFFSET);
    CHECK_RC(rsm_memseg_import_put64(f.im, 0, v, (ulong_t)-1), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_put64(f.im, 0, v, ((ulong_t)-1) / 4), RSMERR_BAD_LENGTH);
    pbt_exporter_expect_pristine(&f.ex, "out-of-bounds putN");
    fx_end(&f);
}

/* ---- putv / getv / local memory handles -------------------------------------- */

static void case_create_localmemory_handle_bad_args_rejected(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_localmemory_handle_t lh;
    char buf[64];

    CHECK_RC(rsm_create_localmemory_handle(NULL, &lh, buf, sizeof(buf)), RSMERR_BAD_CTLR_HNDL);
    CHECK_RC(rsm_create_localmemory_handle(c, &lh, NULL, sizeof(buf)), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_create_localmemory_handle(c, NULL, buf, sizeof(buf)), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_create_localmemory_handle(c, &lh, buf, 0), RSMERR_BAD_LENGTH);
    CHECK_OK(rsm_create_localmemory_handle(c, &lh, buf, sizeof(buf)));
    CHECK_RC(rsm_free_localmemory_handle(NULL, lh), RSMERR_BAD_CTLR_HNDL);
    CHECK_OK(rsm_free_localmemory_handle(c, lh));
    CHECK_RC(rsm_free_localmemory_handle(c, NULL), RSMERR_BAD_LOCALMEM_HNDL);
    CHECK_RC(rsm_free_localmemory_handle(c, lh), RSMERR_BAD_LOCALMEM_HNDL);
    CHECK_OK(rsm_release_controller(c));
}

static void case_putv_getv_bad_sgio_rejected(void)
{
    fixture_t f;
    rsm_iovec_t iov[RSM_MAX_SGIOREQS + 1];
    rsm_scat_gath_t sg;
    char buf[16] = "0123456789abcde";

    fx_start(&f, RSM_PERM_RDWR, PG);
    for (int i = 0; i <= RSM_MAX_SGIOREQS; i++) {
        iov[i].io_type = RSM_VA_TYPE;
        iov[i].local.vaddr = buf;
        iov[i].local_offset = 0;
        iov[i].remote_offset = (size_t)i * 16;
        iov[i].transfer_length = 16;
    }
    memset(&sg, 0, sizeof(sg));
    sg.local_nodeid = rsm_get_local_nodeid();
    sg.remote_handle = f.im;
    sg.iovec = iov;
    CHECK_RC(rsm_memseg_import_putv(NULL), RSMERR_BAD_SGIO);
    CHECK_RC(rsm_memseg_import_getv(NULL), RSMERR_BAD_SGIO);
    sg.io_request_count = 0;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_SGIO);
    CHECK_RC(rsm_memseg_import_getv(&sg), RSMERR_BAD_SGIO);
    sg.io_request_count = RSM_MAX_SGIOREQS + 1;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_SGIO);
    CHECK_RC(rsm_memseg_import_getv(&sg), RSMERR_BAD_SGIO);
    sg.io_request_count = 2;
    sg.iovec = NULL;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_SGIO);
    sg.iovec = iov;
    sg.remote_handle = NULL;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_SEG_HNDL);
    sg.remote_handle = f.im;
    pbt_exporter_expect_pristine(&f.ex, "putv rejected for its count or handle");
    /* a bad second entry: the call fails and changes nothing (entry 0 included) */
    iov[1].io_type = 7;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_SGIO);
    CHECK_RC(rsm_memseg_import_getv(&sg), RSMERR_BAD_SGIO);
    pbt_exporter_expect_pristine(&f.ex, "putv whose entry 1 has io_type 7");
    iov[1].io_type = RSM_HANDLE_TYPE;
    iov[1].local.handle = NULL;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_LOCALMEM_HNDL);
    pbt_exporter_expect_pristine(&f.ex, "putv whose entry 1 has a NULL local handle");
    fx_end(&f);
}

static void case_putv_getv_va_and_handle_entries(void)
{
    fixture_t f;
    rsm_localmemory_handle_t lh;
    rsm_iovec_t iov[RSM_MAX_SGIOREQS];
    rsm_scat_gath_t sg;
    char *src = pbt_alloc_pages(PG), *dst = pbt_alloc_pages(PG);

    fx_start(&f, RSM_PERM_RDWR, 4 * PG);
    pbt_fill_pattern(src, PG, 0, 12);
    CHECK_OK(rsm_create_localmemory_handle(f.c, &lh, src, PG));
    for (int i = 0; i < RSM_MAX_SGIOREQS; i++) {
        iov[i].io_type = i % 2 ? RSM_HANDLE_TYPE : RSM_VA_TYPE;
        if (i % 2)
            iov[i].local.handle = lh;
        else
            iov[i].local.vaddr = src;
        iov[i].local_offset = (size_t)i * 200;
        iov[i].remote_offset = (size_t)i * 700 + 3;
        iov[i].transfer_length = 100 + (size_t)i;
    }
    memset(&sg, 0, sizeof(sg));
    sg.local_nodeid = rsm_get_local_nodeid();
    sg.io_request_count = RSM_MAX_SGIOREQS;
    sg.io_residual_count = 99;
    sg.remote_handle = f.im;
    sg.iovec = iov;
    CHECK_OK(rsm_memseg_import_putv(&sg));
    CHECK_EQ_U64(sg.io_residual_count, 0);
    for (int i = 0; i < RSM_MAX_SGIOREQS; i++)
        pbt_exporter_expect(&f.ex, iov[i].remote_offset, src + iov[i].local_offset,
                            iov[i].transfer_length, "putv entry");
    /* and back, into another buffer */
    CHECK_OK(rsm_free_localmemory_handle(f.c, lh));
    CHECK_OK(rsm_create_localmemory_handle(f.c, &lh, dst, PG));
    for (int i = 0; i < RSM_MAX_SGIOREQS; i++) {
        if (i % 2)
            iov[i].local.handle = lh;
        else
            iov[i].local.vaddr = dst;
    }
    sg.io_residual_count = 99;
    CHECK_OK(rsm_memseg_import_getv(&sg));
    CHECK_EQ_U64(sg.io_residual_count, 0);
    for (int i = 0; i < RSM_MAX_SGIOREQS; i++)
        CHECK_MSG(memcmp(dst + iov[i].local_offset, src + iov[i].local_offset,
                         iov[i].transfer_length) == 0,
                  "getv entry %d differs", i);
    CHECK_OK(rsm_free_localmemory_handle(f.c, lh));
    pbt_free_pages(src, PG);
    pbt_free_pages(dst, PG);
    fx_end(&f);
}

static void case_putv_out_of_bounds_entry_reported(void)
{
    fixture_t f;
    rsm_iovec_t iov[2];
    rsm_scat_gath_t sg;
    char buf[64];

    fx_start(&f, RSM_PERM_RDWR, PG);
    memset(buf, 1, sizeof(buf));
    iov[0].io_type = RSM_VA_TYPE;
    iov[0].local.vaddr = buf;
    iov[0].local_offset = 0;
    iov[0].remote_offset = 0;
    iov[0].transfer_length = 8;
    iov[1] = iov[0];
    iov[1].remote_offset = f.size - 4;
    memset(&sg, 0, sizeof(sg));
    sg.io_request_count = 2;
    sg.remote_handle = f.im;
    sg.iovec = iov;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_LENGTH);
    CHECK(sg.io_residual_count >= 1 && sg.io_residual_count <= 2);
    fx_end(&f);
}

static void case_putv_read_only_perm_denied(void)
{
    fixture_t f;
    rsm_iovec_t iov;
    rsm_scat_gath_t sg;
    char buf[8] = "abcdefg";

    fx_start(&f, RSM_PERM_READ, PG);
    iov.io_type = RSM_VA_TYPE;
    iov.local.vaddr = buf;
    iov.local_offset = 0;
    iov.remote_offset = 0;
    iov.transfer_length = 8;
    memset(&sg, 0, sizeof(sg));
    sg.io_request_count = 1;
    sg.remote_handle = f.im;
    sg.iovec = &iov;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_PERM_DENIED);
    CHECK_OK(rsm_memseg_import_getv(&sg));
    pbt_exporter_expect_pristine(&f.ex, "putv through a read-only import");
    fx_end(&f);
}

static void case_putv_implicit_sigpost_signals_exporter(void)
{
    fixture_t f;
    rsm_iovec_t iov;
    rsm_scat_gath_t sg;
    char buf[8] = "abcdefg";

    fx_start(&f, RSM_PERM_RDWR, PG);
    CHECK_RC(pbt_exporter_cmd(&f.ex, EX_WAIT, 0, 0, NULL), RSMERR_TIMEOUT);
    iov.io_type = RSM_VA_TYPE;
    iov.local.vaddr = buf;
    iov.local_offset = 0;
    iov.remote_offset = 8;
    iov.transfer_length = 8;
    memset(&sg, 0, sizeof(sg));
    sg.io_request_count = 1;
    sg.flags = RSM_IMPLICIT_SIGPOST;
    sg.remote_handle = f.im;
    sg.iovec = &iov;
    CHECK_OK(rsm_memseg_import_putv(&sg));
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_WAIT, 5000, 0, NULL));
    pbt_exporter_expect(&f.ex, 8, buf, 8, "putv with implicit sigpost");
    fx_end(&f);
}

/* flags outside RSM_IMPLICIT_SIGPOST | PB_RSM_PUT_FIRST_WORD_LAST are
 * refused by putv and getv with RSMERR_BAD_MODE before anything moves */
static void case_putv_getv_unknown_flags_rejected(void)
{
    static const uint_t bad[] = {0x02, 0x80, 0x200, 0x80000000u,
                                 RSM_IMPLICIT_SIGPOST | PB_RSM_PUT_FIRST_WORD_LAST | 0x04};
    fixture_t f;
    rsm_iovec_t iov;
    rsm_scat_gath_t sg;
    char buf[8] = "abcdefg", r[8];

    fx_start(&f, RSM_PERM_RDWR, PG);
    iov.io_type = RSM_VA_TYPE;
    iov.local.vaddr = buf;
    iov.local_offset = 0;
    iov.remote_offset = 8;
    iov.transfer_length = 8;
    memset(&sg, 0, sizeof(sg));
    sg.io_request_count = 1;
    sg.remote_handle = f.im;
    sg.iovec = &iov;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sg.flags = bad[i];
        sg.io_residual_count = 0;
        CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_MODE);
        CHECK_EQ_U64(sg.io_residual_count, 1);
        iov.local.vaddr = r;
        memset(r, 0x5a, sizeof(r));
        CHECK_RC(rsm_memseg_import_getv(&sg), RSMERR_BAD_MODE);
        CHECK_MSG(r[0] == 0x5a && r[7] == 0x5a, "getv with flags %#x wrote the buffer", bad[i]);
        iov.local.vaddr = buf;
    }
    pbt_exporter_expect_pristine(&f.ex, "putv with an unknown flag");
    CHECK_RC(pbt_exporter_cmd(&f.ex, EX_WAIT, 0, 0, NULL), RSMERR_TIMEOUT);
    /* the documented flags still work */
    sg.flags = RSM_IMPLICIT_SIGPOST | PB_RSM_PUT_FIRST_WORD_LAST;
    CHECK_OK(rsm_memseg_import_putv(&sg));
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_WAIT, 5000, 0, NULL));
    pbt_exporter_expect(&f.ex, 8, buf, 8, "putv with the documented flags");
    sg.flags = RSM_IMPLICIT_SIGPOST;
    iov.local.vaddr = r;
    CHECK_OK(rsm_memseg_import_getv(&sg));
    CHECK(memcmp(r, buf, sizeof(r)) == 0);
    fx_end(&f);
}

/* PB_RSM_PUT_FIRST_WORD_LAST: every byte arrives (the word last), in both
 * barrier modes and with the implicit signal; entries outside its limits
 * are refused before anything moves */
static void case_putv_first_word_last(void)
{
    fixture_t f;
    uint8_t buf[3 * PB_RSM_WORD_LAST_MAX];
    rsm_iovec_t iov[2];
    rsm_scat_gath_t sg;

    fx_start(&f, RSM_PERM_RDWR, 4 * PG);
    memset(iov, 0, sizeof(iov));
    memset(&sg, 0, sizeof(sg));
    sg.remote_handle = f.im;
    sg.iovec = iov;
    pbt_fill_pattern(buf, sizeof(buf), 0, 91);
    for (int i = 0; i < 2; i++)
        iov[i].io_type = RSM_VA_TYPE;
    /* the limits are the last entry's: the first may be any put */
    iov[0].local.vaddr = (char *)buf;
    iov[0].remote_offset = 130;
    iov[0].transfer_length = 2 * PB_RSM_WORD_LAST_MAX;
    iov[1].local.vaddr = (char *)buf + 2 * PB_RSM_WORD_LAST_MAX;
    iov[1].remote_offset = 3 * PG;
    iov[1].transfer_length = PB_RSM_WORD_LAST_MAX;
    sg.io_request_count = 2;
    sg.flags = PB_RSM_PUT_FIRST_WORD_LAST;
    CHECK_OK(rsm_memseg_import_putv(&sg));
    CHECK(sg.io_residual_count == 0);
    pbt_exporter_expect(&f.ex, 130, buf, 2 * PB_RSM_WORD_LAST_MAX, "the data before the word");
    pbt_exporter_expect(&f.ex, 3 * PG, buf + 2 * PB_RSM_WORD_LAST_MAX, PB_RSM_WORD_LAST_MAX,
                        "word-last entry of 4 KB");
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_EXPLICIT));
    pbt_fill_pattern(buf, sizeof(buf), 0, 92);
    iov[0].local.vaddr = (char *)buf;
    iov[0].remote_offset = 128;
    iov[0].transfer_length = 64;
    sg.io_request_count = 1;
    sg.flags = PB_RSM_PUT_FIRST_WORD_LAST | RSM_IMPLICIT_SIGPOST;
    CHECK_OK(rsm_memseg_import_putv(&sg));
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_WAIT, 5000, 0, NULL));
    pbt_exporter_expect(&f.ex, 128, buf, 64, "word-last put with the signal");
    /* a last entry out of its limits: nothing moves, not even the first */
    pbt_fill_pattern(buf, sizeof(buf), 0, 93);
    sg.flags = PB_RSM_PUT_FIRST_WORD_LAST;
    sg.io_request_count = 2;
    iov[1].remote_offset = 3 * PG;
    iov[1].transfer_length = 3;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_LENGTH);
    CHECK(sg.io_residual_count == 2);
    iov[1].transfer_length = PB_RSM_WORD_LAST_MAX + 4;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_LENGTH);
    iov[1].transfer_length = 64;
    iov[1].remote_offset = 3 * PG + 2;
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_OFFSET);
    pbt_fill_pattern(buf, sizeof(buf), 0, 92);
    pbt_exporter_expect(&f.ex, 128, buf, 64, "refused word-last puts change nothing");
    fx_end(&f);
}

/* Empty entries of a putv move nothing; the others land, and the signal
 * is posted even when every entry is empty. */
static void case_putv_empty_entries(void)
{
    fixture_t f;
    uint8_t buf[64];
    rsm_iovec_t iov[3];
    rsm_scat_gath_t sg;

    fx_start(&f, RSM_PERM_RDWR, 4 * PG);
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_EXPLICIT));
    pbt_fill_pattern(buf, sizeof(buf), 0, 77);
    memset(iov, 0, sizeof(iov));
    memset(&sg, 0, sizeof(sg));
    for (int i = 0; i < 3; i++) {
        iov[i].io_type = RSM_VA_TYPE;
        iov[i].local.vaddr = (char *)buf + 16 * i;
        iov[i].remote_offset = 256 + 16 * (size_t)i;
        iov[i].transfer_length = i == 1 ? 0 : 16;
    }
    sg.remote_handle = f.im;
    sg.iovec = iov;
    sg.io_request_count = 3;
    sg.flags = RSM_IMPLICIT_SIGPOST;
    CHECK_OK(rsm_memseg_import_putv(&sg));
    CHECK(sg.io_residual_count == 0);
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_WAIT, 5000, 0, NULL));
    pbt_exporter_expect(&f.ex, 256, buf, 16, "the entry before the empty one");
    pbt_exporter_expect(&f.ex, 288, buf + 32, 16, "the entry after the empty one");
    iov[0].transfer_length = 0;
    sg.io_request_count = 1;
    CHECK_OK(rsm_memseg_import_putv(&sg));
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_WAIT, 5000, 0, NULL));
    fx_end(&f);
}

/* ---- progress claims (Postbox's extension) ---------------------------------- */

static void case_progress_claim_keeps_exporter_served(void)
{
    fixture_t f;
    uint8_t src[256], dst[256];

    fx_start(&f, RSM_PERM_RDWR, 4 * PG);
    CHECK_RC(pb_rsm_progress_release(f.c), RSMERR_BAD_MODE);
    CHECK_RC(pb_rsm_progress_claim(NULL), RSMERR_BAD_CTLR_HNDL);
    CHECK_RC(pb_rsm_progress_release(NULL), RSMERR_BAD_CTLR_HNDL);
    CHECK_OK(pb_rsm_progress_claim(f.c));
    /* a claim is a thread's promise to poll: a forked child holds none */
    {
        pid_t child = fork();
        int status = 0;

        if (child == 0)
            _exit(pb_rsm_progress_release(f.c) == RSMERR_BAD_MODE ? 0 : 1);
        CHECK(child > 0 && waitpid(child, &status, 0) == child);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the child could release its parent's claim (status 0x%x)", status);
    }
    CHECK_OK(pb_rsm_progress_release(f.c));
    /* the exporter claims its progress (twice: claims nest) and then does
     * not poll: puts and gets, each of which waits for the exporter's
     * answer over a network, are still served (its claim lapses) */
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_CLAIM, 1, 0, NULL));
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_CLAIM, 1, 0, NULL));
    for (unsigned i = 0; i < 4; i++) {
        size_t off = 1000 * i;

        pbt_fill_pattern(src, sizeof(src), off, 70 + i);
        CHECK_OK(rsm_memseg_import_put(f.im, off, src, sizeof(src)));
        CHECK_OK(rsm_memseg_import_get(f.im, off, dst, sizeof(dst)));
        CHECK(memcmp(src, dst, sizeof(src)) == 0);
        pbt_exporter_expect(&f.ex, off, src, sizeof(src), "put while the exporter claims");
    }
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_CLAIM, 0, 0, NULL));
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_CLAIM, 0, 0, NULL));
    CHECK_RC(pbt_exporter_cmd(&f.ex, EX_CLAIM, 0, 0, NULL), RSMERR_BAD_MODE);
    fx_end(&f);
}

static const pbt_case_t cases[] = {
    PBT_CASE(put_get_roundtrip_reaches_exporter),
    PBT_CASE(get_sees_exporter_writes),
    PBT_CASE(large_put_get_roundtrip),
    PBT_CASE(put_read_only_import_perm_denied),
    PBT_CASE(get_write_only_import_perm_denied),
    PBT_CASE(put_out_of_bounds_rejected),
    PBT_CASE(get_out_of_bounds_rejected),
    PBT_CASE(put_get_null_buffer_bad_addr),
    PBT_CASE(put_get_zero_length_succeeds),
    PBT_CASE(put_get_last_byte_allowed),
    PBT_CASE(putN_getN_roundtrip),
    PBT_CASE(putN_getN_misaligned_offset),
    PBT_CASE(putN_getN_out_of_bounds_rejected),
    PBT_CASE(create_localmemory_handle_bad_args_rejected),
    PBT_CASE(putv_getv_bad_sgio_rejected),
    PBT_CASE(putv_getv_va_and_handle_entries),
    PBT_CASE(putv_out_of_bounds_entry_reported),
    PBT_CASE(putv_read_only_perm_denied),
    PBT_CASE(putv_implicit_sigpost_signals_exporter),
    PBT_CASE(putv_getv_unknown_flags_rejected),
    PBT_CASE(putv_first_word_last),
    PBT_CASE(putv_empty_entries),
    PBT_CASE(progress_claim_keeps_exporter_served),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
