/* Barriers and barrier modes. */
#include <string.h>

#include "rsm_util.h"

#define PG (pbt_page_size())

typedef struct {
    rsmapi_controller_handle_t c;
    pbt_exporter_t ex;
    rsm_memseg_import_handle_t im;
} fixture_t;

static void fx_start(fixture_t *f)
{
    pbt_export_opts_t o = {.size = 4 * PG, .seed = 2};

    f->c = pbt_ctlr_get();
    pbt_exporter_start(&f->ex, &o);
    CHECK_OK(pbt_connect(f->c, &f->ex, RSM_PERM_RDWR, &f->im));
}

static void fx_end(fixture_t *f)
{
    CHECK_OK(rsm_memseg_import_disconnect(f->im));
    pbt_exporter_stop(&f->ex);
    CHECK_OK(rsm_release_controller(f->c));
}

static void case_barrier_calls_null_bad_barrier_ptr(void)
{
    fixture_t f;

    fx_start(&f);
    CHECK_RC(rsm_memseg_import_init_barrier(f.im, RSM_BAR_DEFAULT, NULL), RSMERR_BAD_BARRIER_PTR);
    CHECK_RC(rsm_memseg_import_open_barrier(NULL), RSMERR_BAD_BARRIER_PTR);
    CHECK_RC(rsm_memseg_import_order_barrier(NULL), RSMERR_BAD_BARRIER_PTR);
    CHECK_RC(rsm_memseg_import_close_barrier(NULL), RSMERR_BAD_BARRIER_PTR);
    CHECK_RC(rsm_memseg_import_destroy_barrier(NULL), RSMERR_BAD_BARRIER_PTR);
    fx_end(&f);
}

static void case_barrier_calls_uninitialized_rejected(void)
{
    rsmapi_barrier_t bar;

    memset(&bar, 0, sizeof(bar));
    CHECK_RC(rsm_memseg_import_open_barrier(&bar), RSMERR_BARRIER_UNINITIALIZED);
    CHECK_RC(rsm_memseg_import_order_barrier(&bar), RSMERR_BARRIER_UNINITIALIZED);
    CHECK_RC(rsm_memseg_import_close_barrier(&bar), RSMERR_BARRIER_UNINITIALIZED);
    CHECK_RC(rsm_memseg_import_destroy_barrier(&bar), RSMERR_BARRIER_UNINITIALIZED);
}

static void case_init_barrier_bad_type_bad_mode(void)
{
    fixture_t f;
    rsmapi_barrier_t bar;

    fx_start(&f);
    CHECK_RC(rsm_memseg_import_init_barrier(f.im, (rsm_barrier_type_t)0x7, &bar), RSMERR_BAD_MODE);
    CHECK_RC(rsm_memseg_import_init_barrier(f.im, (rsm_barrier_type_t)0, &bar), RSMERR_BAD_MODE);
    fx_end(&f);
}

static void case_init_barrier_every_type_accepted(void)
{
    static const rsm_barrier_type_t types[] = {RSM_BARRIER_SEGMENT, RSM_BARRIER_NODE,
                                               RSM_BARRIER_SEGMENT_THREAD, RSM_BARRIER_NODE_THREAD};
    fixture_t f;

    fx_start(&f);
    for (size_t i = 0; i < 4; i++) {
        rsmapi_barrier_t bar;

        CHECK_OK(rsm_memseg_import_init_barrier(f.im, types[i], &bar));
        CHECK_OK(rsm_memseg_import_open_barrier(&bar));
        CHECK_OK(rsm_memseg_import_close_barrier(&bar));
        CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
    }
    fx_end(&f);
}

static void case_init_barrier_bad_handle_bad_seg_hndl(void)
{
    rsmapi_barrier_t bar;

    CHECK_RC(rsm_memseg_import_init_barrier(NULL, RSM_BAR_DEFAULT, &bar), RSMERR_BAD_SEG_HNDL);
}

static void case_close_or_order_without_open_not_opened(void)
{
    fixture_t f;
    rsmapi_barrier_t bar;

    fx_start(&f);
    CHECK_OK(rsm_memseg_import_init_barrier(f.im, RSM_BAR_DEFAULT, &bar));
    CHECK_RC(rsm_memseg_import_close_barrier(&bar), RSMERR_BARRIER_NOT_OPENED);
    CHECK_RC(rsm_memseg_import_order_barrier(&bar), RSMERR_BARRIER_NOT_OPENED);
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    CHECK_OK(rsm_memseg_import_close_barrier(&bar));
    CHECK_RC(rsm_memseg_import_close_barrier(&bar), RSMERR_BARRIER_NOT_OPENED);
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
    fx_end(&f);
}

static void case_open_barrier_twice_open_failed(void)
{
    fixture_t f;
    rsmapi_barrier_t bar;

    fx_start(&f);
    CHECK_OK(rsm_memseg_import_init_barrier(f.im, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    CHECK_RC(rsm_memseg_import_open_barrier(&bar), RSMERR_BARRIER_OPEN_FAILED);
    CHECK_OK(rsm_memseg_import_close_barrier(&bar));
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
    fx_end(&f);
}

static void case_destroy_barrier_closes_open_span(void)
{
    fixture_t f;
    rsmapi_barrier_t bar;

    fx_start(&f);
    CHECK_OK(rsm_memseg_import_init_barrier(f.im, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
    /* a fresh barrier on the same import opens fine */
    CHECK_OK(rsm_memseg_import_init_barrier(f.im, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    CHECK_OK(rsm_memseg_import_close_barrier(&bar));
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
    fx_end(&f);
}

static void case_get_mode_default_implicit(void)
{
    fixture_t f;
    rsm_barrier_mode_t mode = RSM_BARRIER_MODE_EXPLICIT;

    fx_start(&f);
    CHECK_OK(rsm_memseg_import_get_mode(f.im, &mode));
    CHECK_EQ_U64(mode, RSM_BARRIER_MODE_IMPLICIT);
    CHECK_RC(rsm_memseg_import_get_mode(f.im, NULL), RSMERR_BAD_ADDR);
    fx_end(&f);
}

static void case_set_mode_roundtrip_and_bad_value(void)
{
    fixture_t f;
    rsm_barrier_mode_t mode;

    fx_start(&f);
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(rsm_memseg_import_get_mode(f.im, &mode));
    CHECK_EQ_U64(mode, RSM_BARRIER_MODE_EXPLICIT);
    CHECK_RC(rsm_memseg_import_set_mode(f.im, (rsm_barrier_mode_t)2), RSMERR_BAD_MODE);
    CHECK_RC(rsm_memseg_import_set_mode(f.im, (rsm_barrier_mode_t)-1), RSMERR_BAD_MODE);
    CHECK_OK(rsm_memseg_import_get_mode(f.im, &mode));
    CHECK_EQ_U64(mode, RSM_BARRIER_MODE_EXPLICIT);
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_IMPLICIT));
    CHECK_OK(rsm_memseg_import_get_mode(f.im, &mode));
    CHECK_EQ_U64(mode, RSM_BARRIER_MODE_IMPLICIT);
    CHECK_RC(rsm_memseg_import_set_mode(NULL, RSM_BARRIER_MODE_IMPLICIT), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_get_mode(NULL, &mode), RSMERR_BAD_SEG_HNDL);
    fx_end(&f);
}

static void case_explicit_span_data_in_exporter_at_close(void)
{
    fixture_t f;
    rsmapi_barrier_t bar;
    uint8_t buf[4 * 4096];
    size_t chunk = 512;

    fx_start(&f);
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(rsm_memseg_import_init_barrier(f.im, RSM_BAR_DEFAULT, &bar));
    for (int round = 0; round < 3; round++) {
        size_t n = sizeof(buf) < 4 * PG ? sizeof(buf) : 4 * PG;

        pbt_fill_pattern(buf, n, 0, 60 + (unsigned)round);
        CHECK_OK(rsm_memseg_import_open_barrier(&bar));
        for (size_t off = 0; off < n / 2; off += chunk)
            CHECK_OK(rsm_memseg_import_put(f.im, (off_t)off, buf + off, chunk));
        CHECK_OK(rsm_memseg_import_order_barrier(&bar));
        for (size_t off = n / 2; off < n; off += chunk)
            CHECK_OK(rsm_memseg_import_put(f.im, (off_t)off, buf + off, chunk));
        CHECK_OK(rsm_memseg_import_close_barrier(&bar));
        pbt_exporter_expect(&f.ex, 0, buf, n, "explicit span after close");
    }
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
    fx_end(&f);
}

static void case_explicit_span_failed_put_reported(void)
{
    fixture_t f;
    rsmapi_barrier_t bar;
    uint8_t v[16] = {0};

    fx_start(&f);
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(rsm_memseg_import_init_barrier(f.im, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    /* argument errors are still reported at once, and change nothing */
    CHECK_RC(rsm_memseg_import_put(f.im, -1, v, 1), RSMERR_BAD_OFFSET);
    CHECK_OK(rsm_memseg_import_close_barrier(&bar));
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
    pbt_exporter_expect_pristine(&f.ex, "rejected put in an explicit span");
    fx_end(&f);
}

static void case_barrier_of_disconnected_import_rejected(void)
{
    fixture_t f;
    rsmapi_barrier_t bar;
    int rc;

    fx_start(&f);
    CHECK_OK(rsm_memseg_import_init_barrier(f.im, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_disconnect(f.im));
    rc = rsm_memseg_import_open_barrier(&bar);
    CHECK_MSG(rc != RSM_SUCCESS, "open_barrier of a disconnected import succeeded");
    CHECK_OK(pbt_connect(f.c, &f.ex, RSM_PERM_RDWR, &f.im));
    fx_end(&f);
}

static const pbt_case_t cases[] = {
    PBT_CASE(barrier_calls_null_bad_barrier_ptr),
    PBT_CASE(barrier_calls_uninitialized_rejected),
    PBT_CASE(init_barrier_bad_type_bad_mode),
    PBT_CASE(init_barrier_every_type_accepted),
    PBT_CASE(init_barrier_bad_handle_bad_seg_hndl),
    PBT_CASE(close_or_order_without_open_not_opened),
    PBT_CASE(open_barrier_twice_open_failed),
    PBT_CASE(destroy_barrier_closes_open_span),
    PBT_CASE(get_mode_default_implicit),
    PBT_CASE(set_mode_roundtrip_and_bad_value),
    PBT_CASE(explicit_span_data_in_exporter_at_close),
    PBT_CASE(explicit_span_failed_put_reported),
    PBT_CASE(barrier_of_disconnected_import_rejected),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
