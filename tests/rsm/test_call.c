/*
 * Calls (pb_rsm_memseg_import_call, Postbox's extension): an importer runs
 * the exporter's handler on the segment, served by the exporter's side of
 * the transport while its application computes.
 *
 * On tcp (the exporter server on node 1, so every call crosses virtual
 * nodes, unless a case says otherwise):
 * - a call runs the handler and its reply comes back; a handler set anew is
 *   the one later calls run; with none set calls are refused again;
 * - calls are applied in order with the import's puts: a call sees the data
 *   of a put before it; calls without reply are all applied when the
 *   barrier after them returns (checked in the exporter's own memory);
 * - 1000 calls complete while the exporter's application thread computes
 *   without calling the library, also after it claimed the progress
 *   (pb_rsm_progress_claim: as an MPI rank does);
 * - the longest request and reply; a reply the handler says is longer than
 *   the caller takes comes back cut to that;
 * - every error: bad handles, flags, lengths and addresses, a read-only
 *   import, no handler (with and without reply), a withdrawn segment, a
 *   dead exporter;
 * - imports of a segment exported on the same node, by another process and
 *   by the calling process itself.
 * On shm a call is RSMERR_UNSUPPORTED_OPERATION and setting a handler is
 * harmless.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rsm_util.h"

#define PG (pbt_page_size())
#define COUNTER_AT 64 /* the uint64_t the cases add to */

typedef struct {
    rsmapi_controller_handle_t c;
    pbt_exporter_t ex;
    rsm_memseg_import_handle_t im;
} fixture_t;

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void skip_unless_tcp(void)
{
    if (pbt_is_shm())
        pbt_skip("shm has no calls (the shm case checks that)");
    if (strcmp(pbt_ctlr_name(), "ofi") == 0)
        pbt_skip("ofi runs no calls: nothing of the exporter's runs over the fabric "
                 "(docs/ofi.md; shm_call_unsupported_and_handler_harmless checks the refusal)");
}

/* An exporter server with call handler @handler (0: none), the counter at
 * COUNTER_AT zeroed, and a read-write import of its segment. */
static void fx_start(fixture_t *f, int handler)
{
    pbt_export_opts_t o = {.size = 4 * PG, .seed = 5};
    uint64_t zero = 0;

    f->c = pbt_ctlr_get();
    pbt_exporter_start(&f->ex, &o);
    CHECK_OK(pbt_exporter_cmd(&f->ex, EX_WRITE, COUNTER_AT, sizeof(zero), &zero));
    if (handler != 0)
        CHECK_OK(pbt_exporter_cmd(&f->ex, EX_HANDLER, (uint64_t)handler, 0, NULL));
    CHECK_OK(pbt_connect(f->c, &f->ex, RSM_PERM_RDWR, &f->im));
}

static void fx_end(fixture_t *f)
{
    CHECK_OK(rsm_memseg_import_disconnect(f->im));
    pbt_exporter_stop(&f->ex);
    CHECK_OK(rsm_release_controller(f->c));
}

/* Add @value to the counter by a call; @return the old value. */
static uint64_t call_add(rsm_memseg_import_handle_t im, uint64_t value)
{
    pbt_call_req_t req = {.op = PBT_CALL_ADD, .offset = COUNTER_AT, .value = value};
    uint64_t old = 0;
    size_t len = 0;

    CHECK_OK(pb_rsm_memseg_import_call(im, &req, sizeof(req), &old, sizeof(old), &len, 0));
    CHECK_EQ_U64(len, sizeof(old));
    return old;
}

/* The id of the handler the exporter runs now. */
static uint32_t call_who(rsm_memseg_import_handle_t im)
{
    pbt_call_req_t req = {.op = PBT_CALL_WHO};
    uint32_t id = 0;
    size_t len = 0;

    CHECK_OK(pb_rsm_memseg_import_call(im, &req, sizeof(req), &id, sizeof(id), &len, 0));
    CHECK_EQ_U64(len, sizeof(id));
    return id;
}

/* The counter, as the exporter's own memory holds it (read over the
 * test's pipe, not through the import). */
static uint64_t exporter_counter(fixture_t *f)
{
    uint64_t value = 0;

    CHECK_OK(pbt_exporter_cmd(&f->ex, EX_READ, COUNTER_AT, sizeof(value), &value));
    return value;
}

static void barrier(rsm_memseg_import_handle_t im, int expected)
{
    rsmapi_barrier_t bar;

    CHECK_OK(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    CHECK_RC(rsm_memseg_import_close_barrier(&bar), expected);
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
}

static void case_call_runs_handler_and_reply_comes_back(void)
{
    fixture_t f;
    uint8_t expect[32], got[64];
    pbt_call_req_t req = {.op = PBT_CALL_READ, .offset = 3 * PG + 5, .length = sizeof(expect)};
    size_t len = 0;

    skip_unless_tcp();
    fx_start(&f, 1);
    CHECK_EQ_U64(call_add(f.im, 5), 0);
    CHECK_EQ_U64(call_add(f.im, 7), 5);
    CHECK_EQ_U64(exporter_counter(&f), 12);
    /* a reply shorter than the room: its length says so */
    pbt_fill_pattern(expect, sizeof(expect), req.offset, f.ex.seed);
    memset(got, 0, sizeof(got));
    CHECK_OK(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), got, sizeof(got), &len, 0));
    CHECK_EQ_U64(len, sizeof(expect));
    CHECK(memcmp(got, expect, sizeof(expect)) == 0);
    /* no reply length wanted, no reply room */
    CHECK_OK(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), got, sizeof(got), NULL, 0));
    req = (pbt_call_req_t){.op = PBT_CALL_ADD, .offset = COUNTER_AT, .value = 1};
    CHECK_OK(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), NULL, 0, &len, 0));
    CHECK_EQ_U64(len, 0);
    CHECK_EQ_U64(exporter_counter(&f), 13);
    fx_end(&f);
}

static void case_handler_set_anew_runs_for_later_calls(void)
{
    fixture_t f;
    pbt_call_req_t req = {.op = PBT_CALL_WHO};
    uint32_t id;

    skip_unless_tcp();
    fx_start(&f, 1);
    CHECK_EQ_U64(call_who(f.im), 1);
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_HANDLER, 2, 0, NULL));
    CHECK_EQ_U64(call_who(f.im), 2);
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_HANDLER, 0, 0, NULL));
    CHECK_RC(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), &id, sizeof(id), NULL, 0),
             RSMERR_PERM_DENIED);
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_HANDLER, 1, 0, NULL));
    CHECK_EQ_U64(call_who(f.im), 1);
    fx_end(&f);
}

static void case_call_sees_the_put_before_it(void)
{
    fixture_t f;
    uint8_t data[200], got[200];
    pbt_call_req_t req = {.op = PBT_CALL_READ, .length = sizeof(data)};
    size_t len = 0;

    skip_unless_tcp();
    fx_start(&f, 1);
    /* explicit mode: the put is only sent, no barrier between it and the call */
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_EXPLICIT));
    for (int round = 0; round < 20; round++) {
        req.offset = (uint64_t)(round * 131) % (3 * PG);
        for (size_t i = 0; i < sizeof(data); i++)
            data[i] = (uint8_t)(round * 7 + i);
        CHECK_OK(rsm_memseg_import_put(f.im, (off_t)req.offset, data, sizeof(data)));
        CHECK_OK(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), got, sizeof(got), &len, 0));
        CHECK_EQ_U64(len, sizeof(data));
        CHECK_MSG(memcmp(got, data, sizeof(data)) == 0, "round %d: the call did not see the put",
                  round);
    }
    fx_end(&f);
}

static void case_calls_without_reply_are_applied_by_the_next_barrier(void)
{
    fixture_t f;
    pbt_call_req_t req = {.op = PBT_CALL_ADD, .offset = COUNTER_AT, .value = 1};
    const int calls = 500;

    skip_unless_tcp();
    fx_start(&f, 1);
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_EXPLICIT));
    for (int i = 0; i < calls; i++)
        CHECK_OK(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), NULL, 0, NULL,
                                           PB_RSM_CALL_NO_REPLY));
    barrier(f.im, RSM_SUCCESS);
    CHECK_EQ_U64(exporter_counter(&f), (uint64_t)calls);
    /* the reply arguments are unused without a reply */
    CHECK_OK(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), NULL, PB_RSM_CALL_MAX + 1, NULL,
                                       PB_RSM_CALL_NO_REPLY));
    /* implicit mode: as a put, the call returns once applied */
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_IMPLICIT));
    CHECK_OK(
        pb_rsm_memseg_import_call(f.im, &req, sizeof(req), NULL, 0, NULL, PB_RSM_CALL_NO_REPLY));
    CHECK_EQ_U64(exporter_counter(&f), (uint64_t)calls + 2);
    fx_end(&f);
}

/* 1000 calls while the exporter's application thread computes for
 * @compute_ms (after a progress claim when @claim): they must all complete
 * before it is done; @return how long they took, in ms. */
static double calls_during_compute(int claim, int compute_ms)
{
    fixture_t f;
    const int calls = 1000;
    struct pollfd done;
    double sent, start, took;

    fx_start(&f, 1);
    if (claim)
        CHECK_OK(pbt_exporter_cmd(&f.ex, EX_CLAIM, 1, 0, NULL));
    /* the compute command is answered when it is over: not waited for here */
    sent = now_ms();
    pbt_exporter_cmd_send(&f.ex, EX_COMPUTE, (uint64_t)compute_ms, 0, NULL);
    pbt_sleep_ms(50); /* let it start computing */
    start = now_ms();
    for (int i = 0; i < calls; i++)
        CHECK_EQ_U64(call_add(f.im, 1), (uint64_t)i);
    took = now_ms() - start;
    done = (struct pollfd){.fd = f.ex.peer.rd, .events = POLLIN};
    CHECK_MSG(poll(&done, 1, 0) == 0,
              "the exporter finished computing (%d ms) before the calls completed (%.0f ms)",
              compute_ms, took);
    CHECK_OK(pbt_exporter_cmd_answer(&f.ex, NULL));
    CHECK_MSG(now_ms() - sent >= compute_ms, "the exporter computed for less than %d ms",
              compute_ms);
    CHECK_EQ_U64(exporter_counter(&f), (uint64_t)calls);
    if (claim)
        CHECK_OK(pbt_exporter_cmd(&f.ex, EX_CLAIM, 0, 0, NULL));
    fx_end(&f);
    return took;
}

static void case_calls_complete_while_the_exporter_computes(void)
{
    double took;

    skip_unless_tcp();
    took = calls_during_compute(0, 2500);
    printf("1000 calls while the exporter computes: %.0f ms\n", took);
}

static void case_calls_complete_while_a_claimant_computes(void)
{
    double took;

    skip_unless_tcp();
    /* a claimant that computes does not poll: after at most one watchdog
     * period (10 ms) the service thread serves its traffic, promptly, not
     * one pass per period (which made 1000 calls take 10 s) */
    took = calls_during_compute(1, 2500);
    printf("1000 calls while the exporter (progress claimed) computes: %.0f ms\n", took);
}

static void case_longest_request_and_reply(void)
{
    fixture_t f;
    uint8_t *request = malloc(PB_RSM_CALL_MAX), *reply = malloc(PB_RSM_CALL_MAX + 64);
    pbt_call_req_t head = {.op = PBT_CALL_ECHO};
    size_t len = 0;

    skip_unless_tcp();
    CHECK(request != NULL && reply != NULL);
    fx_start(&f, 1);
    pbt_fill_pattern(request, PB_RSM_CALL_MAX, 0, 11);
    memcpy(request, &head, sizeof(head));
    memset(reply, 0, PB_RSM_CALL_MAX + 64);
    CHECK_OK(
        pb_rsm_memseg_import_call(f.im, request, PB_RSM_CALL_MAX, reply, PB_RSM_CALL_MAX, &len, 0));
    CHECK_EQ_U64(len, PB_RSM_CALL_MAX);
    CHECK(memcmp(reply, request, PB_RSM_CALL_MAX) == 0);
    for (size_t i = 0; i < 64; i++)
        CHECK_MSG(reply[PB_RSM_CALL_MAX + i] == 0, "the reply was written past its room");
    /* a reply room shorter than the request: the reply is what fits */
    CHECK_OK(pb_rsm_memseg_import_call(f.im, request, PB_RSM_CALL_MAX, reply, 100, &len, 0));
    CHECK_EQ_U64(len, 100);
    fx_end(&f);
    free(request);
    free(reply);
}

static void case_reply_longer_than_the_room_is_cut(void)
{
    fixture_t f;
    pbt_call_req_t req = {.op = PBT_CALL_OVERSAY, .value = 1000};
    uint8_t reply[48];
    size_t len = 0;

    skip_unless_tcp();
    fx_start(&f, 1);
    memset(reply, 0, sizeof(reply));
    CHECK_OK(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), reply, 32, &len, 0));
    CHECK_EQ_U64(len, 32);
    for (size_t i = 0; i < sizeof(reply); i++)
        CHECK(reply[i] == (i < 32 ? 0x5a : 0));
    /* the connection serves on */
    CHECK_EQ_U64(call_add(f.im, 3), 0);
    fx_end(&f);
}

static void case_call_argument_errors(void)
{
    fixture_t f;
    pbt_call_req_t req = {.op = PBT_CALL_ADD, .offset = COUNTER_AT, .value = 1};
    rsm_memseg_import_handle_t gone;
    uint64_t reply;

    skip_unless_tcp();
    fx_start(&f, 1);
    CHECK_RC(pb_rsm_memseg_import_call(NULL, &req, sizeof(req), &reply, sizeof(reply), NULL, 0),
             RSMERR_BAD_SEG_HNDL);
    CHECK_RC(pb_rsm_memseg_import_call((rsm_memseg_import_handle_t)&req, &req, sizeof(req), &reply,
                                       sizeof(reply), NULL, 0),
             RSMERR_BAD_SEG_HNDL);
    CHECK_OK(pbt_connect(f.c, &f.ex, RSM_PERM_RDWR, &gone));
    CHECK_OK(rsm_memseg_import_disconnect(gone));
    CHECK_RC(pb_rsm_memseg_import_call(gone, &req, sizeof(req), &reply, sizeof(reply), NULL, 0),
             RSMERR_BAD_SEG_HNDL);
    CHECK_RC(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), &reply, sizeof(reply), NULL, 2),
             RSMERR_BAD_MODE);
    CHECK_RC(
        pb_rsm_memseg_import_call(f.im, &req, PB_RSM_CALL_MAX + 1, &reply, sizeof(reply), NULL, 0),
        RSMERR_BAD_LENGTH);
    CHECK_RC(pb_rsm_memseg_import_call(f.im, &req, PB_RSM_CALL_MAX + 1, NULL, 0, NULL,
                                       PB_RSM_CALL_NO_REPLY),
             RSMERR_BAD_LENGTH);
    CHECK_RC(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), NULL, sizeof(reply), NULL, 0),
             RSMERR_BAD_LENGTH);
    CHECK_RC(
        pb_rsm_memseg_import_call(f.im, &req, sizeof(req), &reply, PB_RSM_CALL_MAX + 1, NULL, 0),
        RSMERR_BAD_LENGTH);
    CHECK_RC(pb_rsm_memseg_import_call(f.im, NULL, sizeof(req), &reply, sizeof(reply), NULL, 0),
             RSMERR_BAD_ADDR);
    /* none of them ran the handler */
    CHECK_EQ_U64(exporter_counter(&f), 0);
    /* an empty request is a request (the handler sees op 0 and does nothing) */
    CHECK_OK(pb_rsm_memseg_import_call(f.im, NULL, 0, &reply, sizeof(reply), NULL, 0));
    CHECK_RC(pb_rsm_memseg_export_set_handler(NULL, pbt_call_handler, NULL), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(
        pb_rsm_memseg_export_set_handler((rsm_memseg_export_handle_t)f.im, pbt_call_handler, NULL),
        RSMERR_BAD_SEG_HNDL);
    fx_end(&f);
}

static void case_call_on_read_only_import_denied(void)
{
    fixture_t f;
    rsm_memseg_import_handle_t ro;
    pbt_call_req_t req = {.op = PBT_CALL_ADD, .offset = COUNTER_AT, .value = 1};
    uint64_t reply;

    skip_unless_tcp();
    fx_start(&f, 1);
    CHECK_OK(pbt_connect(f.c, &f.ex, RSM_PERM_READ, &ro));
    CHECK_RC(pb_rsm_memseg_import_call(ro, &req, sizeof(req), &reply, sizeof(reply), NULL, 0),
             RSMERR_PERM_DENIED);
    CHECK_RC(pb_rsm_memseg_import_call(ro, &req, sizeof(req), NULL, 0, NULL, PB_RSM_CALL_NO_REPLY),
             RSMERR_PERM_DENIED);
    CHECK_OK(rsm_memseg_import_disconnect(ro));
    CHECK_EQ_U64(exporter_counter(&f), 0);
    fx_end(&f);
}

static void case_call_without_handler_denied(void)
{
    fixture_t f;
    pbt_call_req_t req = {.op = PBT_CALL_ADD, .offset = COUNTER_AT, .value = 1};
    uint64_t reply;

    skip_unless_tcp();
    fx_start(&f, 0);
    CHECK_RC(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), &reply, sizeof(reply), NULL, 0),
             RSMERR_PERM_DENIED);
    /* without reply: sent; the barrier after it reports the refusal, once */
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(
        pb_rsm_memseg_import_call(f.im, &req, sizeof(req), NULL, 0, NULL, PB_RSM_CALL_NO_REPLY));
    barrier(f.im, RSMERR_PERM_DENIED);
    barrier(f.im, RSM_SUCCESS);
    /* implicit mode: the call itself reports it */
    CHECK_OK(rsm_memseg_import_set_mode(f.im, RSM_BARRIER_MODE_IMPLICIT));
    CHECK_RC(
        pb_rsm_memseg_import_call(f.im, &req, sizeof(req), NULL, 0, NULL, PB_RSM_CALL_NO_REPLY),
        RSMERR_PERM_DENIED);
    /* the import works on */
    CHECK_OK(rsm_memseg_import_get(f.im, COUNTER_AT, &reply, sizeof(reply)));
    CHECK_EQ_U64(reply, 0);
    fx_end(&f);
}

static void case_call_after_unpublish_aborted(void)
{
    fixture_t f;
    pbt_call_req_t req = {.op = PBT_CALL_ADD, .offset = COUNTER_AT, .value = 1};
    uint64_t reply;

    skip_unless_tcp();
    fx_start(&f, 1);
    CHECK_EQ_U64(call_add(f.im, 1), 0);
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_UNPUBLISH, 0, 0, NULL));
    CHECK_RC(pb_rsm_memseg_import_call(f.im, &req, sizeof(req), &reply, sizeof(reply), NULL, 0),
             RSMERR_CONN_ABORTED);
    CHECK_RC(
        pb_rsm_memseg_import_call(f.im, &req, sizeof(req), NULL, 0, NULL, PB_RSM_CALL_NO_REPLY),
        RSMERR_CONN_ABORTED);
    CHECK_EQ_U64(exporter_counter(&f), 1);
    fx_end(&f);
}

static void case_call_to_dead_exporter_aborted(void)
{
    rsmapi_controller_handle_t c;
    pbt_exporter_t ex;
    pbt_export_opts_t o = {.size = 4 * PG, .seed = 5};
    rsm_memseg_import_handle_t im;
    pbt_call_req_t req = {.op = PBT_CALL_WHO};
    uint32_t id = 0;

    skip_unless_tcp();
    c = pbt_ctlr_get();
    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_exporter_cmd(&ex, EX_HANDLER, 1, 0, NULL));
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_OK(pb_rsm_memseg_import_call(im, &req, sizeof(req), &id, sizeof(id), NULL, 0));
    pbt_peer_kill(&ex.peer);
    CHECK_RC(pb_rsm_memseg_import_call(im, &req, sizeof(req), &id, sizeof(id), NULL, 0),
             RSMERR_CONN_ABORTED);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_peer_close(&ex.peer);
    CHECK_OK(rsm_release_controller(c));
}

/* put, get and call over tcp to a segment of this node: @peer_process 1,
 * exported by another process; 0, by the calling process itself */
static void same_node(int peer_process)
{
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_call_req_t req = {.op = PBT_CALL_ADD, .offset = COUNTER_AT, .value = 4};
    uint64_t value = 10, old = 0;
    pbt_local_export_t le;
    pbt_exporter_t ex;
    static uint32_t id = 1;

    skip_unless_tcp();
    /* the exporter server forked here, on this node */
    CHECK_SYS(unsetenv("POSTBOX_TEST_PEER_NODE"));
    c = pbt_ctlr_get();
    if (peer_process) {
        pbt_export_opts_t o = {.size = 4 * PG, .seed = 5};

        pbt_exporter_start(&ex, &o);
        CHECK_EQ_U64(ex.node, rsm_get_local_nodeid());
        CHECK_OK(pbt_exporter_cmd(&ex, EX_HANDLER, 1, 0, NULL));
        CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    } else {
        pbt_local_export(&le, 4 * PG, 0, 0);
        CHECK_OK(pb_rsm_memseg_export_set_handler(le.h, pbt_call_handler, &id));
        CHECK_OK(rsm_memseg_import_connect(c, le.node, le.segid, RSM_PERM_RDWR, &im));
    }
    CHECK_OK(rsm_memseg_import_put(im, COUNTER_AT, &value, sizeof(value)));
    CHECK_OK(pb_rsm_memseg_import_call(im, &req, sizeof(req), &old, sizeof(old), NULL, 0));
    CHECK_EQ_U64(old, 10);
    CHECK_OK(rsm_memseg_import_get(im, COUNTER_AT, &value, sizeof(value)));
    CHECK_EQ_U64(value, 14);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    if (peer_process) {
        pbt_exporter_stop(&ex);
    } else {
        CHECK_EQ_U64(*(uint64_t *)((char *)le.mem + COUNTER_AT), 14);
        pbt_local_export_end(&le);
    }
    CHECK_OK(rsm_release_controller(c));
}

static void case_tcp_import_from_another_process_of_this_node(void)
{
    same_node(1);
}

static void case_tcp_import_from_this_process(void)
{
    same_node(0);
}

static void case_shm_call_unsupported_and_handler_harmless(void)
{
    pbt_local_export_t le;
    rsm_memseg_import_handle_t im;
    pbt_call_req_t req = {.op = PBT_CALL_WHO};
    uint32_t id = 0;
    static uint32_t handler_id = 1;

    if (!pbt_is_shm() && strcmp(pbt_ctlr_name(), "ofi") != 0)
        pbt_skip("shm and ofi only");
    pbt_local_export(&le, 4 * PG, 0, 0);
    CHECK_OK(pb_rsm_memseg_export_set_handler(le.h, pbt_call_handler, &handler_id));
    CHECK_OK(rsm_memseg_import_connect(le.ctlr, le.node, le.segid, RSM_PERM_RDWR, &im));
    CHECK_RC(pb_rsm_memseg_import_call(im, &req, sizeof(req), &id, sizeof(id), NULL, 0),
             RSMERR_UNSUPPORTED_OPERATION);
    CHECK_RC(pb_rsm_memseg_import_call(im, &req, sizeof(req), NULL, 0, NULL, PB_RSM_CALL_NO_REPLY),
             RSMERR_UNSUPPORTED_OPERATION);
    /* the argument checks come first, as on every transport */
    CHECK_RC(pb_rsm_memseg_import_call(im, &req, PB_RSM_CALL_MAX + 1, &id, sizeof(id), NULL, 0),
             RSMERR_BAD_LENGTH);
    CHECK_OK(pb_rsm_memseg_export_set_handler(le.h, NULL, NULL));
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_local_export_end(&le);
}

/* Round trips of an 8-byte call and an 8-byte get, printed (not judged):
 * an indication of what a call costs over a get.  Batches of each
 * alternate, and the best batch of each is printed, so that the load of
 * a shared machine weighs on both alike. */
static void case_call_and_get_round_trips(void)
{
    fixture_t f;
    const int batches = 10, rounds = 200;
    pbt_call_req_t req = {.op = PBT_CALL_READ, .offset = 0, .length = 8};
    uint64_t value;
    double best_call = 1e30, best_get = 1e30;

    skip_unless_tcp();
    fx_start(&f, 1);
    for (int i = 0; i < 100; i++) /* warm up */
        CHECK_OK(pb_rsm_memseg_import_call(f.im, &req, 8, &value, 8, NULL, 0));
    for (int b = 0; b < batches; b++) {
        double start = now_ms(), us;

        /* (8 bytes of request: op and length; the offset is 0) */
        for (int i = 0; i < rounds; i++)
            CHECK_OK(pb_rsm_memseg_import_call(f.im, &req, 8, &value, 8, NULL, 0));
        us = (now_ms() - start) * 1e3 / rounds;
        best_call = us < best_call ? us : best_call;
        start = now_ms();
        for (int i = 0; i < rounds; i++)
            CHECK_OK(rsm_memseg_import_get(f.im, 0, &value, 8));
        us = (now_ms() - start) * 1e3 / rounds;
        best_get = us < best_get ? us : best_get;
    }
    printf("8-byte round trip across nodes %u -> %u (best of %d batches of %d): call %.1f us, "
           "get %.1f us\n",
           rsm_get_local_nodeid(), f.ex.node, batches, rounds, best_call, best_get);
    fx_end(&f);
}

static const pbt_case_t cases[] = {
    PBT_CASE(call_runs_handler_and_reply_comes_back),
    PBT_CASE(handler_set_anew_runs_for_later_calls),
    PBT_CASE(call_sees_the_put_before_it),
    PBT_CASE(calls_without_reply_are_applied_by_the_next_barrier),
    PBT_CASE(calls_complete_while_the_exporter_computes),
    PBT_CASE(calls_complete_while_a_claimant_computes),
    PBT_CASE(longest_request_and_reply),
    PBT_CASE(reply_longer_than_the_room_is_cut),
    PBT_CASE(call_argument_errors),
    PBT_CASE(call_on_read_only_import_denied),
    PBT_CASE(call_without_handler_denied),
    PBT_CASE(call_after_unpublish_aborted),
    PBT_CASE(call_to_dead_exporter_aborted),
    PBT_CASE(tcp_import_from_another_process_of_this_node),
    PBT_CASE(tcp_import_from_this_process),
    PBT_CASE(shm_call_unsupported_and_handler_harmless),
    PBT_CASE(call_and_get_round_trips),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
