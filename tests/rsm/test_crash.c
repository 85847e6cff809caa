/* Crash test: rounds of one exporter and two importers working on a
 * segment; one of the three is killed with SIGKILL at a random moment.  The
 * survivors must get errors (RSMERR_CONN_ABORTED when the exporter is gone),
 * never crash or hang, and clean up; nothing may be left in /dev/shm or
 * /tmp and no process may be left over. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rsm_util.h"

#define ROUNDS 24
#define SEG_PAGES 16
#define EXIT_SAW_ABORT 10

static int stop_requested(pbt_peer_t *self)
{
    struct pollfd pfd = {.fd = self->rd, .events = POLLIN};

    return poll(&pfd, 1, 0) > 0;
}

static void exporter(pbt_peer_t *self, void *arg)
{
    pbt_local_export_t le;
    pbt_seginfo_t si;

    (void)arg;
    pbt_local_export(&le, SEG_PAGES * pbt_page_size(), 0, 0);
    si.node = le.node;
    si.segid = le.segid;
    si.size = le.size;
    pbt_send(self->wr, &si, sizeof(si));
    while (!stop_requested(self)) {
        int rc = rsm_intr_signal_wait(le.h, 20);

        CHECK_MSG(rc == RSM_SUCCESS || rc == RSMERR_TIMEOUT,
                  "exporter: signal_wait returned %d (%s)", rc, rsm_strerror(rc));
        CHECK_OK(rsm_intr_signal_post(le.h, RSM_SIGPOST_NO_ACCUMULATE));
    }
    pbt_local_export_end(&le); /* unpublish, destroy, release must succeed */
}

/* after the first CONN_ABORTED: everything else fails the same way, the
 * mapping stays readable, and the import can be released */
static void importer_after_abort(rsmapi_controller_handle_t c, rsm_memseg_import_handle_t im,
                                 rsmapi_barrier_t *bar, volatile uint8_t *map, size_t size,
                                 int index, const char *what)
{
    uint8_t b[64];

    if (getenv("PBT_CRASH_VERBOSE") != NULL)
        fprintf(stderr, "  importer %d (pid %d): %s returned CONN_ABORTED\n", index, (int)getpid(),
                what);

    CHECK_RC(rsm_memseg_import_put(im, 0, b, sizeof(b)), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_memseg_import_get(im, 0, b, sizeof(b)), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_intr_signal_post(im, 0), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_intr_signal_wait(im, 0), RSMERR_CONN_ABORTED);
    if (map != NULL) {
        unsigned sum = 0;

        for (size_t i = 0; i < size; i += 64)
            sum += map[i];
        (void)sum;
        CHECK_OK(rsm_memseg_import_unmap(im));
    }
    rsm_memseg_import_destroy_barrier(bar);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
    _exit(EXIT_SAW_ABORT);
}

#define STEP(call, what)                                                                           \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ == RSMERR_CONN_ABORTED)                                                            \
            importer_after_abort(c, im, &bar, map, si.size, index, what);                          \
        CHECK_MSG(rc_ == RSM_SUCCESS, "importer %d: %s returned %d (%s)", index, what, rc_,        \
                  rsm_strerror(rc_));                                                              \
    } while (0)

static void importer(pbt_peer_t *self, void *arg)
{
    int index = *(int *)arg;
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    rsmapi_barrier_t bar;
    volatile uint8_t *map = NULL;
    void *addr = NULL;
    pbt_seginfo_t si;
    uint8_t buf[512];
    size_t half;

    pbt_recv(self->rd, &si, sizeof(si));
    half = si.size / 2;
    c = pbt_ctlr_get();
    CHECK_OK(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar));
    if (rsm_memseg_import_map(im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, si.size) == RSM_SUCCESS)
        map = addr;
    pbt_send_u32(self->wr, 1); /* ready */
    for (unsigned it = 0; !stop_requested(self); it++) {
        size_t off = (size_t)index * half + (it * sizeof(buf)) % (half - sizeof(buf));
        int rc;

        memset(buf, (int)(it & 0xff), sizeof(buf));
        STEP(rsm_memseg_import_open_barrier(&bar), "open_barrier");
        STEP(rsm_memseg_import_put(im, (off_t)off, buf, sizeof(buf)), "put");
        STEP(rsm_memseg_import_close_barrier(&bar), "close_barrier");
        STEP(rsm_memseg_import_get(im, (off_t)off, buf, sizeof(buf)), "get");
        STEP(rsm_intr_signal_post(im, RSM_SIGPOST_NO_ACCUMULATE), "signal_post");
        rc = rsm_intr_signal_wait(im, 0);
        if (rc != RSMERR_TIMEOUT)
            STEP(rc, "signal_wait");
        if (map != NULL)
            (void)map[off]; /* stays readable whatever happens to the exporter */
    }
    if (map != NULL)
        CHECK_OK(rsm_memseg_import_unmap(im));
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
}

static const char *const role[3] = {"exporter", "importer 0", "importer 1"};

static void expect_exit(pbt_peer_t *p, int want, int round, int victim, int delay)
{
    pid_t pid = p->pid;
    int status = pbt_peer_wait_status(p, 5000);

    pbt_peer_close(p);
    if (status == -1) {
        kill(pid, SIGKILL);
        pbt_fail(__FILE__, __LINE__,
                 "round %d (killed %s after %d ms): survivor %d did not finish within 5 s", round,
                 role[victim], delay, (int)pid);
    }
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == want,
              "round %d (killed %s after %d ms): survivor %d ended with %s %d, expected exit "
              "%d (%d: it saw RSMERR_CONN_ABORTED)",
              round, role[victim], delay, (int)pid, WIFEXITED(status) ? "exit" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), want, EXIT_SAW_ABORT);
}

static void one_round(int round, int victim, int delay)
{
    static int idx[2] = {0, 1};
    pbt_peer_t p[3];
    pbt_seginfo_t si;

    p[1] = pbt_peer_start(importer, &idx[0]);
    p[2] = pbt_peer_start(importer, &idx[1]);
    p[0] = pbt_peer_start(exporter, NULL);
    pbt_recv(p[0].rd, &si, sizeof(si));
    pbt_send(p[1].wr, &si, sizeof(si));
    pbt_send(p[2].wr, &si, sizeof(si));
    CHECK_EQ_U64(pbt_recv_u32(p[1].rd), 1);
    CHECK_EQ_U64(pbt_recv_u32(p[2].rd), 1);
    pbt_sleep_ms(delay);
    pbt_peer_kill(&p[victim]);
    pbt_peer_close(&p[victim]);
    if (victim == 0) {
        /* both importers must notice on their own */
        expect_exit(&p[1], EXIT_SAW_ABORT, round, victim, delay);
        expect_exit(&p[2], EXIT_SAW_ABORT, round, victim, delay);
    } else {
        /* stop the surviving importer first: once the exporter unpublishes,
         * CONN_ABORTED would be right for it */
        int other = victim == 1 ? 2 : 1;

        pbt_send_u32(p[other].wr, 1);
        expect_exit(&p[other], 0, round, victim, delay);
        pbt_send_u32(p[0].wr, 1);
        expect_exit(&p[0], 0, round, victim, delay);
    }
}

static void case_crash_random_kill_survivors_get_errors(void)
{
    pbt_skip_if_ending_leaves_files();
    pbt_fs_snapshot_t *snap = pbt_fs_snapshot();
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();

    srand(seed);
    for (int round = 0; round < ROUNDS; round++) {
        int victim = round < 3 ? round : rand() % 3; /* every role at least once */
        int delay = rand() % 25;
        char when[96];

        one_round(round, victim, delay);
        snprintf(when, sizeof(when), "after round %d (killed %s after %d ms, seed %u)", round,
                 role[victim], delay, seed);
        pbt_fs_check(snap, when);
    }
    pbt_fs_snapshot_free(snap);
}

/* the exporter is killed right after publishing, before importers finish
 * connecting: connects fail cleanly or abort later, never hang */
static void late_importer(pbt_peer_t *self, void *arg)
{
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_seginfo_t si;
    uint8_t b[8] = {0};
    int rc;

    (void)arg;
    pbt_recv(self->rd, &si, sizeof(si));
    c = pbt_ctlr_get();
    rc = rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_RDWR, &im);
    if (rc == RSM_SUCCESS) {
        pbt_send_u32(self->wr, 1);
        (void)pbt_recv_u32(self->rd); /* exporter is dead and reaped */
        CHECK_RC(rsm_memseg_import_put(im, 0, b, sizeof(b)), RSMERR_CONN_ABORTED);
        CHECK_OK(rsm_memseg_import_disconnect(im));
    } else {
        CHECK_MSG(rc == RSMERR_SEG_NOT_PUBLISHED, "connect returned %d (%s)", rc, rsm_strerror(rc));
        pbt_send_u32(self->wr, 1);
        (void)pbt_recv_u32(self->rd);
    }
    CHECK_OK(rsm_release_controller(c));
}

static void case_crash_exporter_killed_during_connects(void)
{
    pbt_skip_if_ending_leaves_files();
    pbt_fs_snapshot_t *snap = pbt_fs_snapshot();

    for (int round = 0; round < 10; round++) {
        pbt_peer_t e, i1, i2;
        pbt_seginfo_t si;

        i1 = pbt_peer_start(late_importer, NULL);
        i2 = pbt_peer_start(late_importer, NULL);
        e = pbt_peer_start(exporter, NULL);
        pbt_recv(e.rd, &si, sizeof(si));
        pbt_send(i1.wr, &si, sizeof(si));
        pbt_send(i2.wr, &si, sizeof(si));
        if (round % 2)
            pbt_sleep_ms(round % 3);
        pbt_peer_kill(&e);
        pbt_peer_close(&e);
        CHECK_EQ_U64(pbt_recv_u32(i1.rd), 1);
        CHECK_EQ_U64(pbt_recv_u32(i2.rd), 1);
        pbt_send_u32(i1.wr, 1);
        pbt_send_u32(i2.wr, 1);
        pbt_peer_join(&i1, 5000, 0);
        pbt_peer_join(&i2, 5000, 0);
        pbt_fs_check(snap, "after an exporter was killed during connects");
    }
    pbt_fs_snapshot_free(snap);
}

static const pbt_case_t cases[] = {
    PBT_CASE(crash_random_kill_survivors_get_errors),
    PBT_CASE(crash_exporter_killed_during_connects),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
