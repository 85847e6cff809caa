/* rsm_intr_signal_post / rsm_intr_signal_wait.  Nothing here asserts a time:
 * waits that must succeed use long timeouts so a lost event fails as
 * RSMERR_TIMEOUT instead of hanging. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "rsm_util.h"

#define PG (pbt_page_size())
#define LONG_WAIT 10000

/* an importer peer: connects, reports, then runs @script */
typedef struct {
    int op; /* what the importer does */
    int count;
    uint_t flags;
} imp_args_t;

enum {
    IMP_POST,
    IMP_WAIT_ONCE,
    IMP_WAIT_FOREVER,
    IMP_WAIT_ABORT,
    IMP_WAIT_CONSUMES_ALL
};

static void importer(pbt_peer_t *self, void *arg)
{
    const imp_args_t *a = arg;
    pbt_seginfo_t si;
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;

    pbt_recv(self->rd, &si, sizeof(si));
    c = pbt_ctlr_get();
    CHECK_OK(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_RDWR, &im));
    pbt_send_u32(self->wr, 1); /* connected */
    switch (a->op) {
    case IMP_POST: {
        rsmapi_barrier_t bar;

        for (int i = 0; i < a->count; i++)
            CHECK_OK(rsm_intr_signal_post(im, a->flags));
        /* over a network a post returns once sent: a barrier closed after
         * the posts returns once they reached the exporter */
        CHECK_OK(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar));
        CHECK_OK(rsm_memseg_import_open_barrier(&bar));
        CHECK_OK(rsm_memseg_import_close_barrier(&bar));
        CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
        pbt_send_u32(self->wr, 2);
        break;
    }
    case IMP_WAIT_ONCE:
        CHECK_OK(rsm_intr_signal_wait(im, LONG_WAIT));
        pbt_send_u32(self->wr, 2);
        break;
    case IMP_WAIT_FOREVER:
        CHECK_OK(rsm_intr_signal_wait(im, -1));
        pbt_send_u32(self->wr, 2);
        break;
    case IMP_WAIT_CONSUMES_ALL:
        (void)pbt_recv_u32(self->rd); /* exporter posted */
        CHECK_OK(rsm_intr_signal_wait(im, LONG_WAIT));
        CHECK_RC(rsm_intr_signal_wait(im, 0), RSMERR_TIMEOUT);
        pbt_send_u32(self->wr, 2);
        break;
    case IMP_WAIT_ABORT: {
        int rc = rsm_intr_signal_wait(im, -1);

        pbt_send_u32(self->wr, (uint32_t)rc);
        CHECK_RC(rsm_intr_signal_post(im, 0), RSMERR_CONN_ABORTED);
        break;
    }
    }
    (void)pbt_recv_u32(self->rd); /* may disconnect now */
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
}

static void send_seginfo(pbt_peer_t *p, const pbt_local_export_t *le)
{
    pbt_seginfo_t si = {le->node, le->segid, le->size};

    pbt_send(p->wr, &si, sizeof(si));
    CHECK_EQ_U64(pbt_recv_u32(p->rd), 1);
}

static void finish(pbt_peer_t *p)
{
    pbt_send_u32(p->wr, 9);
    pbt_peer_join(p, 10000, 0);
}

static void case_signal_import_post_wakes_exporter_wait(void)
{
    static imp_args_t a = {IMP_POST, 1, 0};
    pbt_peer_t p = pbt_peer_start(importer, &a);
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 0);
    send_seginfo(&p, &le);
    CHECK_OK(rsm_intr_signal_wait(le.h, -1));
    CHECK_EQ_U64(pbt_recv_u32(p.rd), 2);
    finish(&p);
    pbt_local_export_end(&le);
}

static void case_signal_export_post_wakes_every_importer(void)
{
    static imp_args_t a = {IMP_WAIT_ONCE, 0, 0}, b = {IMP_WAIT_FOREVER, 0, 0};
    pbt_peer_t p[3];
    pbt_local_export_t le;

    p[0] = pbt_peer_start(importer, &a);
    p[1] = pbt_peer_start(importer, &a);
    p[2] = pbt_peer_start(importer, &b);
    pbt_local_export(&le, PG, 0, 0);
    for (int i = 0; i < 3; i++)
        send_seginfo(&p[i], &le);
    CHECK_OK(rsm_intr_signal_post(le.h, 0));
    for (int i = 0; i < 3; i++)
        CHECK_EQ_U64(pbt_recv_u32(p[i].rd), 2);
    for (int i = 0; i < 3; i++)
        finish(&p[i]);
    pbt_local_export_end(&le);
}

static void case_signal_import_posts_accumulate(void)
{
    static imp_args_t a = {IMP_POST, 3, 0};
    pbt_peer_t p = pbt_peer_start(importer, &a);
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 0);
    send_seginfo(&p, &le);
    CHECK_EQ_U64(pbt_recv_u32(p.rd), 2);
    for (int i = 0; i < 3; i++)
        CHECK_OK(rsm_intr_signal_wait(le.h, LONG_WAIT));
    CHECK_RC(rsm_intr_signal_wait(le.h, 0), RSMERR_TIMEOUT);
    finish(&p);
    pbt_local_export_end(&le);
}

static void case_signal_no_accumulate_drops_while_pending(void)
{
    static imp_args_t a = {IMP_POST, 3, RSM_SIGPOST_NO_ACCUMULATE};
    pbt_peer_t p = pbt_peer_start(importer, &a);
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 0);
    send_seginfo(&p, &le);
    CHECK_EQ_U64(pbt_recv_u32(p.rd), 2);
    CHECK_OK(rsm_intr_signal_wait(le.h, LONG_WAIT));
    CHECK_RC(rsm_intr_signal_wait(le.h, 0), RSMERR_TIMEOUT);
    finish(&p);
    pbt_local_export_end(&le);
}

static void case_signal_import_wait_consumes_all_pending(void)
{
    static imp_args_t a = {IMP_WAIT_CONSUMES_ALL, 0, 0};
    pbt_peer_t p = pbt_peer_start(importer, &a);
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 0);
    send_seginfo(&p, &le);
    for (int i = 0; i < 3; i++)
        CHECK_OK(rsm_intr_signal_post(le.h, 0));
    pbt_send_u32(p.wr, 1);
    CHECK_EQ_U64(pbt_recv_u32(p.rd), 2);
    finish(&p);
    pbt_local_export_end(&le);
}

static void case_signal_wait_timeouts(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_local_export_t le;
    pbt_exporter_t ex;

    pbt_local_export(&le, PG, 0, 0);
    CHECK_RC(rsm_intr_signal_wait(le.h, 0), RSMERR_TIMEOUT);
    CHECK_RC(rsm_intr_signal_wait(le.h, 50), RSMERR_TIMEOUT);
    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_RC(rsm_intr_signal_wait(im, 0), RSMERR_TIMEOUT);
    CHECK_RC(rsm_intr_signal_wait(im, 50), RSMERR_TIMEOUT);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    pbt_local_export_end(&le);
    CHECK_OK(rsm_release_controller(c));
}

static void case_signal_export_post_without_importers_ok(void)
{
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 0);
    CHECK_OK(rsm_intr_signal_post(le.h, 0));
    CHECK_OK(rsm_intr_signal_post(le.h, RSM_SIGPOST_NO_ACCUMULATE));
    /* an exporter's own post does not wake its own wait */
    CHECK_RC(rsm_intr_signal_wait(le.h, 0), RSMERR_TIMEOUT);
    pbt_local_export_end(&le);
}

static void case_signal_unpublished_export_seg_not_published(void)
{
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 1);
    CHECK_RC(rsm_intr_signal_wait(le.h, 0), RSMERR_SEG_NOT_PUBLISHED);
    CHECK_RC(rsm_intr_signal_wait(le.h, 50), RSMERR_SEG_NOT_PUBLISHED);
    CHECK_RC(rsm_intr_signal_post(le.h, 0), RSMERR_SEG_NOT_PUBLISHED);
    pbt_local_export_end(&le);
}

static void case_signal_post_unknown_flag_bad_mode(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_local_export_t le;
    pbt_exporter_t ex;

    pbt_local_export(&le, PG, 0, 0);
    CHECK_RC(rsm_intr_signal_post(le.h, 0x80), RSMERR_BAD_MODE);
    CHECK_RC(rsm_intr_signal_post(le.h, 0x01), RSMERR_BAD_MODE);
    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_RC(rsm_intr_signal_post(im, 0x80 | RSM_SIGPOST_NO_ACCUMULATE), RSMERR_BAD_MODE);
    /* nothing was posted */
    CHECK_RC(pbt_exporter_cmd(&ex, EX_WAIT, 0, 0, NULL), RSMERR_TIMEOUT);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    pbt_local_export_end(&le);
    CHECK_OK(rsm_release_controller(c));
}

static void case_signal_bad_handle_bad_seg_hndl(void)
{
    CHECK_RC(rsm_intr_signal_post(NULL, 0), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_intr_signal_wait(NULL, 0), RSMERR_BAD_SEG_HNDL);
}

static void case_signal_importer_wait_exporter_killed_conn_aborted(void)
{
    pbt_skip_if_ending_leaves_files();
    static imp_args_t a = {IMP_WAIT_ABORT, 0, 0};
    pbt_export_opts_t o = {.size = PG};
    pbt_peer_t p = pbt_peer_start(importer, &a);
    pbt_exporter_t ex;
    pbt_seginfo_t si;
    uint32_t rc;
    int r;

    pbt_exporter_start(&ex, &o);
    si.node = ex.node;
    si.segid = ex.segid;
    si.size = ex.size;
    pbt_send(p.wr, &si, sizeof(si));
    CHECK_EQ_U64(pbt_recv_u32(p.rd), 1);
    pbt_sleep_ms(50); /* let the importer block in its wait (not required) */
    pbt_peer_kill(&ex.peer);
    pbt_peer_close(&ex.peer);
    r = pbt_recv_timed(p.rd, &rc, sizeof(rc), 5000);
    CHECK_MSG(r != -1, "importer's wait(-1) did not return after its exporter was killed");
    CHECK_MSG(r == 1, "importer died while waiting");
    CHECK_RC((int)rc, RSMERR_CONN_ABORTED);
    finish(&p);
}

static void on_usr1(int sig)
{
    (void)sig;
}

static void pester(pbt_peer_t *self, void *arg)
{
    pid_t parent = getppid();

    (void)arg;
    (void)pbt_recv_u32(self->rd);
    /* keep interrupting until told to stop (the first signal may arrive
     * before the wait starts) */
    for (;;) {
        uint32_t v;

        kill(parent, SIGUSR1);
        if (pbt_recv_timed(self->rd, &v, sizeof(v), 100) != -1)
            return;
    }
}

static void case_signal_wait_interrupted_by_handler(void)
{
    pbt_peer_t p = pbt_peer_start(pester, NULL);
    struct sigaction sa;
    pbt_local_export_t le;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART */
    CHECK_SYS(sigaction(SIGUSR1, &sa, NULL));
    pbt_local_export(&le, PG, 0, 0);
    pbt_send_u32(p.wr, 1);
    CHECK_RC(rsm_intr_signal_wait(le.h, LONG_WAIT), RSMERR_INTERRUPTED);
    pbt_send_u32(p.wr, 2);
    pbt_peer_join(&p, 10000, 0);
    pbt_local_export_end(&le);
}

/* exporter and importer bounce an event many times: no lost wake-ups */
static void bouncer(pbt_peer_t *self, void *arg)
{
    pbt_seginfo_t si;
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    int rounds = *(int *)arg;

    pbt_recv(self->rd, &si, sizeof(si));
    c = pbt_ctlr_get();
    CHECK_OK(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_RDWR, &im));
    pbt_send_u32(self->wr, 1);
    for (int i = 0; i < rounds; i++) {
        CHECK_OK(rsm_intr_signal_post(im, 0));
        CHECK_OK(rsm_intr_signal_wait(im, LONG_WAIT));
    }
    (void)pbt_recv_u32(self->rd);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
}

static void case_signal_ping_pong_no_lost_wakeups(void)
{
    static int rounds = 2000;
    pbt_peer_t p = pbt_peer_start(bouncer, &rounds);
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 0);
    send_seginfo(&p, &le);
    for (int i = 0; i < rounds; i++) {
        CHECK_OK(rsm_intr_signal_wait(le.h, LONG_WAIT));
        CHECK_OK(rsm_intr_signal_post(le.h, 0));
    }
    finish(&p);
    pbt_local_export_end(&le);
}

static const pbt_case_t cases[] = {
    PBT_CASE(signal_import_post_wakes_exporter_wait),
    PBT_CASE(signal_export_post_wakes_every_importer),
    PBT_CASE(signal_import_posts_accumulate),
    PBT_CASE(signal_no_accumulate_drops_while_pending),
    PBT_CASE(signal_import_wait_consumes_all_pending),
    PBT_CASE(signal_wait_timeouts),
    PBT_CASE(signal_export_post_without_importers_ok),
    PBT_CASE(signal_unpublished_export_seg_not_published),
    PBT_CASE(signal_post_unknown_flag_bad_mode),
    PBT_CASE(signal_bad_handle_bad_seg_hndl),
    PBT_CASE(signal_importer_wait_exporter_killed_conn_aborted),
    PBT_CASE(signal_wait_interrupted_by_handler),
    PBT_CASE(signal_ping_pong_no_lost_wakeups),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
