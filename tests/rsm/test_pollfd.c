/* rsm_memseg_get_pollfd, rsm_memseg_release_pollfd, rsm_intr_signal_wait_pollfd. */
#include <string.h>
#include <unistd.h>

#include "rsm_util.h"

#define PG (pbt_page_size())
#define NSEG 3

/* an importer of several segments that posts to the ones it is told */
static void poster(pbt_peer_t *self, void *arg)
{
    pbt_seginfo_t si[NSEG];
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im[NSEG];

    (void)arg;
    pbt_recv(self->rd, si, sizeof(si));
    c = pbt_ctlr_get();
    for (int i = 0; i < NSEG; i++)
        CHECK_OK(rsm_memseg_import_connect(c, si[i].node, si[i].segid, RSM_PERM_RDWR, &im[i]));
    pbt_send_u32(self->wr, 1);
    for (;;) {
        uint32_t which = pbt_recv_u32(self->rd);

        if (which == 99)
            break;
        CHECK_OK(rsm_intr_signal_post(im[which], 0));
        pbt_send_u32(self->wr, 2);
    }
    for (int i = 0; i < NSEG; i++)
        CHECK_OK(rsm_memseg_import_disconnect(im[i]));
    CHECK_OK(rsm_release_controller(c));
}

typedef struct {
    pbt_peer_t p;
    pbt_local_export_t le[NSEG];
    struct pollfd fds[NSEG];
} fixture_t;

static void fx_start(fixture_t *f)
{
    pbt_seginfo_t si[NSEG];

    f->p = pbt_peer_start(poster, NULL);
    for (int i = 0; i < NSEG; i++) {
        pbt_local_export(&f->le[i], PG, 0, 0);
        si[i].node = f->le[i].node;
        si[i].segid = f->le[i].segid;
        si[i].size = PG;
    }
    pbt_send(f->p.wr, si, sizeof(si));
    CHECK_EQ_U64(pbt_recv_u32(f->p.rd), 1);
}

static void fx_post(fixture_t *f, uint32_t which)
{
    pbt_send_u32(f->p.wr, which);
    CHECK_EQ_U64(pbt_recv_u32(f->p.rd), 2);
}

static void fx_end(fixture_t *f)
{
    pbt_send_u32(f->p.wr, 99);
    pbt_peer_join(&f->p, 10000, 0);
    for (int i = 0; i < NSEG; i++)
        pbt_local_export_end(&f->le[i]);
}

static void get_all(fixture_t *f)
{
    for (int i = 0; i < NSEG; i++) {
        memset(&f->fds[i], 0, sizeof(f->fds[i]));
        CHECK_OK(rsm_memseg_get_pollfd(f->le[i].h, &f->fds[i]));
        CHECK(f->fds[i].fd >= 0);
    }
}

static void release_all(fixture_t *f)
{
    for (int i = 0; i < NSEG; i++)
        CHECK_OK(rsm_memseg_release_pollfd(f->le[i].h));
}

static void case_wait_pollfd_reports_segments_with_events(void)
{
    fixture_t f;
    int n = -1;

    fx_start(&f);
    get_all(&f);
    fx_post(&f, 0);
    fx_post(&f, 2);
    CHECK_OK(rsm_intr_signal_wait_pollfd(f.fds, NSEG, 10000, &n));
    CHECK_EQ_U64(n, 2);
    CHECK_MSG(f.fds[0].revents & POLLRDNORM, "segment 0 had an event; revents 0x%x",
              f.fds[0].revents);
    CHECK_MSG(f.fds[1].revents == 0, "segment 1 had no event; revents 0x%x", f.fds[1].revents);
    CHECK_MSG(f.fds[2].revents & POLLRDNORM, "segment 2 had an event; revents 0x%x",
              f.fds[2].revents);
    /* the events were consumed */
    CHECK_RC(rsm_intr_signal_wait_pollfd(f.fds, NSEG, 0, &n), RSMERR_TIMEOUT);
    CHECK_RC(rsm_intr_signal_wait(f.le[0].h, 0), RSMERR_TIMEOUT);
    fx_post(&f, 1);
    CHECK_OK(rsm_intr_signal_wait_pollfd(f.fds, NSEG, 10000, &n));
    CHECK_EQ_U64(n, 1);
    CHECK(f.fds[1].revents & POLLRDNORM);
    CHECK(f.fds[0].revents == 0 && f.fds[2].revents == 0);
    release_all(&f);
    fx_end(&f);
}

static void case_wait_pollfd_timeout(void)
{
    fixture_t f;
    int n = -1;

    fx_start(&f);
    get_all(&f);
    CHECK_RC(rsm_intr_signal_wait_pollfd(f.fds, NSEG, 0, &n), RSMERR_TIMEOUT);
    CHECK_RC(rsm_intr_signal_wait_pollfd(f.fds, NSEG, 50, &n), RSMERR_TIMEOUT);
    release_all(&f);
    fx_end(&f);
}

static void case_pollfd_held_blocks_unpublish_and_destroy(void)
{
    fixture_t f;
    struct pollfd pfd;

    fx_start(&f);
    CHECK_OK(rsm_memseg_get_pollfd(f.le[0].h, &pfd));
    CHECK_RC(rsm_memseg_export_unpublish(f.le[0].h), RSMERR_POLLFD_IN_USE);
    /* a pollfd needs the segment published, and destroy needs it not */
    CHECK_RC(rsm_memseg_export_destroy(f.le[0].h), RSMERR_SEG_ALREADY_PUBLISHED);
    CHECK_OK(rsm_memseg_release_pollfd(f.le[0].h));
    fx_end(&f);
}

/* an export's events exist only while it is published: no pollfd before */
static void case_pollfd_on_unpublished_export_rejected(void)
{
    pbt_local_export_t le;
    struct pollfd pfd;

    pbt_local_export(&le, PG, 0, 1);
    CHECK_RC(rsm_memseg_get_pollfd(le.h, &pfd), RSMERR_SEG_NOT_PUBLISHED);
    CHECK_RC(rsm_memseg_release_pollfd(le.h), RSMERR_POLLFD_IN_USE);
    pbt_local_export_end(&le);
}

static void case_pollfd_held_blocks_disconnect(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    struct pollfd pfd;
    pbt_exporter_t ex;
    int n = -1;

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_get_pollfd(im, &pfd));
    CHECK_RC(rsm_memseg_import_disconnect(im), RSMERR_POLLFD_IN_USE);
    /* an import-side pollfd reports the exporter's events */
    CHECK_OK(pbt_exporter_cmd(&ex, EX_POST, 0, 0, NULL));
    CHECK_OK(rsm_intr_signal_wait_pollfd(&pfd, 1, 10000, &n));
    CHECK_EQ_U64(n, 1);
    CHECK(pfd.revents & POLLRDNORM);
    CHECK_OK(rsm_memseg_release_pollfd(im));
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_release_pollfd_without_get_in_use(void)
{
    pbt_local_export_t le;
    struct pollfd pfd;

    pbt_local_export(&le, PG, 0, 0);
    CHECK_RC(rsm_memseg_release_pollfd(le.h), RSMERR_POLLFD_IN_USE);
    CHECK_OK(rsm_memseg_get_pollfd(le.h, &pfd));
    CHECK_OK(rsm_memseg_release_pollfd(le.h));
    CHECK_RC(rsm_memseg_release_pollfd(le.h), RSMERR_POLLFD_IN_USE);
    pbt_local_export_end(&le);
}

static void case_pollfd_references_counted(void)
{
    pbt_local_export_t le;
    struct pollfd a, b;

    pbt_local_export(&le, PG, 0, 0);
    CHECK_OK(rsm_memseg_get_pollfd(le.h, &a));
    CHECK_OK(rsm_memseg_get_pollfd(le.h, &b));
    CHECK_OK(rsm_memseg_release_pollfd(le.h));
    CHECK_RC(rsm_memseg_export_unpublish(le.h), RSMERR_POLLFD_IN_USE);
    CHECK_OK(rsm_memseg_release_pollfd(le.h));
    pbt_local_export_end(&le);
}

static void case_wait_pollfd_non_rsm_fd_bad_args(void)
{
    pbt_local_export_t le;
    struct pollfd fds[2];
    int pipefd[2];
    int n;

    CHECK_SYS(pipe(pipefd));
    pbt_local_export(&le, PG, 0, 0);
    CHECK_OK(rsm_memseg_get_pollfd(le.h, &fds[0]));
    fds[1].fd = pipefd[0];
    fds[1].events = POLLRDNORM;
    fds[1].revents = 0;
    CHECK_RC(rsm_intr_signal_wait_pollfd(fds, 2, 0, &n), RSMERR_BAD_ARGS_ERRORS);
    CHECK_RC(rsm_intr_signal_wait_pollfd(&fds[1], 1, 0, &n), RSMERR_BAD_ARGS_ERRORS);
    CHECK_RC(rsm_intr_signal_wait_pollfd(NULL, 1, 0, &n), RSMERR_BAD_ARGS_ERRORS);
    CHECK_OK(rsm_memseg_release_pollfd(le.h));
    pbt_local_export_end(&le);
    close(pipefd[0]);
    close(pipefd[1]);
}

static void case_get_pollfd_bad_args_rejected(void)
{
    pbt_local_export_t le;
    struct pollfd pfd;

    CHECK_RC(rsm_memseg_get_pollfd(NULL, &pfd), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_release_pollfd(NULL), RSMERR_BAD_SEG_HNDL);
    pbt_local_export(&le, PG, 0, 0);
    CHECK_RC(rsm_memseg_get_pollfd(le.h, NULL), RSMERR_BAD_ADDR);
    /* the failed get took no reference */
    CHECK_RC(rsm_memseg_release_pollfd(le.h), RSMERR_POLLFD_IN_USE);
    pbt_local_export_end(&le);
}

static const pbt_case_t cases[] = {
    PBT_CASE(wait_pollfd_reports_segments_with_events),
    PBT_CASE(wait_pollfd_timeout),
    PBT_CASE(pollfd_held_blocks_unpublish_and_destroy),
    PBT_CASE(pollfd_on_unpublished_export_rejected),
    PBT_CASE(pollfd_held_blocks_disconnect),
    PBT_CASE(release_pollfd_without_get_in_use),
    PBT_CASE(pollfd_references_counted),
    PBT_CASE(wait_pollfd_non_rsm_fd_bad_args),
    PBT_CASE(get_pollfd_bad_args_rejected),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
