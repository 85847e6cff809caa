/* Handle validity on every import call, repeated lifecycles, and what
 * importers and exporters see when the other side dies or exits. */
#include <signal.h>
#include <string.h>

#include "rsm_util.h"

#define PG (pbt_page_size())

/* every call taking an import handle rejects @h with BAD_SEG_HNDL */
static void check_import_calls_reject(rsm_memseg_import_handle_t h)
{
    uint8_t b[8] = {0};
    uint16_t h16[2];
    uint32_t h32[2];
    uint64_t h64[1];
    void *addr = NULL;
    rsmapi_barrier_t bar;
    rsm_barrier_mode_t mode;
    struct pollfd pfd;
    rsm_iovec_t iov = {.io_type = RSM_VA_TYPE, .local.vaddr = (char *)b, .transfer_length = 8};
    rsm_scat_gath_t sg = {.io_request_count = 1, .remote_handle = h, .iovec = &iov};

    CHECK_RC(rsm_memseg_import_put(h, 0, b, 8), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_get(h, 0, b, 8), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_put8(h, 0, b, 1), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_put16(h, 0, h16, 1), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_put32(h, 0, h32, 1), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_put64(h, 0, h64, 1), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_get8(h, 0, b, 1), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_get16(h, 0, h16, 1), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_get32(h, 0, h32, 1), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_get64(h, 0, h64, 1), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_putv(&sg), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_getv(&sg), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_map(h, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG),
             RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_unmap(h), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_init_barrier(h, RSM_BAR_DEFAULT, &bar), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_get_mode(h, &mode), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_set_mode(h, RSM_BARRIER_MODE_EXPLICIT), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_intr_signal_post(h, 0), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_intr_signal_wait(h, 0), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_get_pollfd(h, &pfd), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_release_pollfd(h), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_disconnect(h), RSMERR_BAD_SEG_HNDL);
}

static void case_import_calls_null_handle_bad_seg_hndl(void)
{
    check_import_calls_reject(NULL);
}

static void case_import_calls_disconnected_handle_bad_seg_hndl(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_disconnect(im));
    check_import_calls_reject(im);
    pbt_exporter_expect_pristine(&ex, "calls on a disconnected handle");
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_import_calls_on_export_handle_bad_seg_hndl(void)
{
    pbt_local_export_t le;
    uint8_t b[8] = {0};
    void *addr;

    pbt_local_export(&le, PG, 0, 0);
    CHECK_RC(rsm_memseg_import_put((rsm_memseg_import_handle_t)(void *)le.h, 0, b, 8),
             RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_get((rsm_memseg_import_handle_t)(void *)le.h, 0, b, 8),
             RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_map((rsm_memseg_import_handle_t)(void *)le.h, &addr, RSM_MAP_NONE,
                                   RSM_PERM_RDWR, 0, PG),
             RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_disconnect((rsm_memseg_import_handle_t)(void *)le.h),
             RSMERR_BAD_SEG_HNDL);
    pbt_local_export_end(&le);
}

/* create .. destroy many times: no fd or file leaks, ids reusable.  With
 * @fork_late the exporter is forked after this process used the library
 * (its service thread runs), otherwise before. */
static void lifecycle_repeated(int fork_late)
{
    pbt_export_opts_t o = {.size = 2 * PG, .seed = 3};
    pbt_fs_snapshot_t *snap = pbt_fs_snapshot();
    rsmapi_controller_handle_t c;
    pbt_local_export_t warm;
    pbt_exporter_t ex;
    int fds;

    if (!fork_late)
        pbt_exporter_start(&ex, &o);
    c = pbt_ctlr_get();
    /* warm up whatever the library keeps open for the process */
    pbt_local_export(&warm, PG, 0, 0);
    pbt_local_export_end(&warm);
    if (fork_late)
        pbt_exporter_start(&ex, &o);
    {
        rsm_memseg_import_handle_t im;

        CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
        CHECK_OK(rsm_memseg_import_disconnect(im));
    }
    fds = pbt_count_fds();
    for (int i = 0; i < 100; i++) {
        pbt_local_export_t le;
        rsm_memseg_import_handle_t im;
        uint8_t v = (uint8_t)i, r;
        void *addr;

        pbt_local_export(&le, PG, 0, 0);
        pbt_local_export_end(&le);
        CHECK_MSG(pbt_connect(c, &ex, RSM_PERM_RDWR, &im) == RSM_SUCCESS,
                  "connect %d of 100 failed", i);
        CHECK_OK(rsm_memseg_import_put(im, i, &v, 1));
        CHECK_OK(rsm_memseg_import_get(im, i, &r, 1));
        CHECK_EQ_U64(r, v);
        if (rsm_memseg_import_map(im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG) == RSM_SUCCESS)
            CHECK_OK(rsm_memseg_import_unmap(im));
        CHECK_OK(rsm_memseg_import_disconnect(im));
    }
    CHECK_MSG(pbt_count_fds() == fds, "open fds grew from %d to %d over 100 lifecycles", fds,
              pbt_count_fds());
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
    pbt_fs_check(snap, "after 100 lifecycles");
    pbt_fs_snapshot_free(snap);
}

static void case_full_lifecycle_repeated_no_leaks(void)
{
    lifecycle_repeated(0);
}

static void case_full_lifecycle_exporter_forked_after_init(void)
{
    lifecycle_repeated(1);
}

/* the exporter is killed: the importer's calls fail with CONN_ABORTED, a
 * mapping stays readable, and nothing is left behind */
static void case_exporter_killed_importer_gets_conn_aborted(void)
{
    pbt_skip_if_ending_leaves_files();
    pbt_export_opts_t o = {.size = 2 * PG, .seed = 7};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im, im_bar, im_map;
    pbt_exporter_t ex;
    rsmapi_barrier_t bar;
    uint8_t buf[32];
    volatile uint8_t *p = NULL;
    int mapped;

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im_bar));
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im_map));
    CHECK_OK(rsm_memseg_import_set_mode(im_bar, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(rsm_memseg_import_init_barrier(im_bar, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    CHECK_OK(rsm_memseg_import_put(im_bar, 0, buf, 8));
    mapped = rsm_memseg_import_map(im_map, (void **)&p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, 2 * PG);
    CHECK(mapped == RSM_SUCCESS || (mapped == RSMERR_MAP_FAILED && !pbt_is_shm()));

    pbt_peer_kill(&ex.peer);
    pbt_peer_close(&ex.peer);

    memset(buf, 1, sizeof(buf));
    CHECK_RC(rsm_memseg_import_put(im, 0, buf, sizeof(buf)), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_memseg_import_get(im, 0, buf, sizeof(buf)), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_intr_signal_post(im, 0), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_intr_signal_wait(im, 0), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_memseg_import_close_barrier(&bar), RSMERR_CONN_ABORTED);
    if (mapped == RSM_SUCCESS) {
        unsigned sum = 0;

        for (size_t i = 0; i < 2 * PG; i++) /* must not raise SIGBUS */
            sum += p[i];
        (void)sum;
        CHECK_OK(rsm_memseg_import_unmap(im_map));
    }
    rsm_memseg_import_destroy_barrier(&bar);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_memseg_import_disconnect(im_bar));
    CHECK_OK(rsm_memseg_import_disconnect(im_map));
    /* a new connect finds nothing */
    CHECK_RC(pbt_connect(c, &ex, RSM_PERM_RDWR, &im), RSMERR_SEG_NOT_PUBLISHED);
    CHECK_OK(rsm_release_controller(c));
}

/* the exporter exits without unpublishing: importers are disconnected */
static void exporter_exits_early(pbt_peer_t *self, void *arg)
{
    pbt_local_export_t le;
    pbt_seginfo_t si;

    (void)arg;
    pbt_local_export(&le, PG, 0, 0);
    si.node = le.node;
    si.segid = le.segid;
    si.size = le.size;
    pbt_send(self->wr, &si, sizeof(si));
    (void)pbt_recv_u32(self->rd);
    /* return without unpublish or destroy: the process just exits */
}

static void case_exporter_exit_without_cleanup_aborts_importers(void)
{
    pbt_skip_if_ending_leaves_files();
    pbt_peer_t p = pbt_peer_start(exporter_exits_early, NULL);
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_seginfo_t si;
    uint8_t v = 1;

    pbt_recv(p.rd, &si, sizeof(si));
    CHECK_OK(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_put(im, 0, &v, 1));
    pbt_send_u32(p.wr, 1);
    pbt_peer_join(&p, 10000, 0);
    CHECK_RC(rsm_memseg_import_put(im, 0, &v, 1), RSMERR_CONN_ABORTED);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_RC(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_RDWR, &im),
             RSMERR_SEG_NOT_PUBLISHED);
    CHECK_OK(rsm_release_controller(c));
}

/* an importer is killed mid-use: the exporter carries on and cleans up */
static void importer_busy(pbt_peer_t *self, void *arg)
{
    pbt_seginfo_t si;
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    rsmapi_barrier_t bar;
    struct pollfd pfd;
    void *addr;
    uint8_t buf[256];

    (void)arg;
    pbt_recv(self->rd, &si, sizeof(si));
    c = pbt_ctlr_get();
    CHECK_OK(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    (void)rsm_memseg_import_map(im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG);
    CHECK_OK(rsm_memseg_get_pollfd(im, &pfd));
    memset(buf, 0x5e, sizeof(buf));
    CHECK_OK(rsm_memseg_import_put(im, 0, buf, sizeof(buf)));
    CHECK_OK(rsm_intr_signal_post(im, 0));
    pbt_send_u32(self->wr, 1);
    (void)pbt_recv_u32(self->rd); /* killed while holding everything */
}

static void case_importer_killed_exporter_unaffected(void)
{
    pbt_skip_if_ending_leaves_files();
    pbt_peer_t p = pbt_peer_start(importer_busy, NULL);
    pbt_peer_t q = pbt_peer_start(importer_busy, NULL);
    pbt_local_export_t le;
    pbt_seginfo_t si;

    pbt_local_export(&le, 2 * PG, 0, 0);
    si.node = le.node;
    si.segid = le.segid;
    si.size = le.size;
    pbt_send(p.wr, &si, sizeof(si));
    pbt_send(q.wr, &si, sizeof(si));
    CHECK_EQ_U64(pbt_recv_u32(p.rd), 1);
    CHECK_EQ_U64(pbt_recv_u32(q.rd), 1);
    pbt_peer_kill(&p);
    pbt_peer_close(&p);
    CHECK_OK(rsm_intr_signal_wait(le.h, 10000));
    CHECK_OK(rsm_intr_signal_wait(le.h, 10000));
    CHECK_OK(rsm_intr_signal_post(le.h, 0));
    /* the other importer still has a working connection */
    pbt_send_u32(q.wr, 1);
    pbt_peer_join(&q, 10000, 0);
    CHECK_OK(rsm_intr_signal_post(le.h, 0));
    pbt_local_export_end(&le);
}

static const pbt_case_t cases[] = {
    PBT_CASE(import_calls_null_handle_bad_seg_hndl),
    PBT_CASE(import_calls_disconnected_handle_bad_seg_hndl),
    PBT_CASE(import_calls_on_export_handle_bad_seg_hndl),
    PBT_CASE(full_lifecycle_repeated_no_leaks),
    PBT_CASE(full_lifecycle_exporter_forked_after_init),
    PBT_CASE(exporter_killed_importer_gets_conn_aborted),
    PBT_CASE(exporter_exit_without_cleanup_aborts_importers),
    PBT_CASE(importer_killed_exporter_unaffected),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
