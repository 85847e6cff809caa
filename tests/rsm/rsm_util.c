/* RSM helpers for the tests: see rsm_util.h. */
#include "rsm_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *pbt_ctlr_name(void)
{
    const char *name = getenv("POSTBOX_TEST_CONTROLLER");

    return name != NULL && *name != '\0' ? name : "shm";
}

int pbt_is_shm(void)
{
    const char *n = pbt_ctlr_name();

    return strcmp(n, "shm") == 0 || strcmp(n, "shm0") == 0 || strcmp(n, "loopback") == 0;
}

void pbt_skip_if_ending_leaves_files(void)
{
    const char *provider = getenv("POSTBOX_OFI_PROVIDER");

    if (strcmp(pbt_ctlr_name(), "ofi") == 0 && provider != NULL && strcmp(provider, "shm") == 0)
        pbt_skip("libfabric's shm provider leaves its /dev/shm file when a process ends "
                 "without closing its endpoint (docs/ofi.md)");
}

rsmapi_controller_handle_t pbt_ctlr_get(void)
{
    rsmapi_controller_handle_t c = NULL;

    CHECK_OK(rsm_get_controller((char *)pbt_ctlr_name(), &c));
    CHECK(c != NULL);
    return c;
}

/* ---- the exporter server ----------------------------------------------------- */

typedef struct {
    int32_t rc_create;
    int32_t rc_publish;
    uint32_t node;
    uint32_t segid;
} ex_hello_t;

typedef struct {
    int32_t op;
    int32_t pad;
    uint64_t a;
    uint64_t b;
} ex_cmd_t;

typedef struct {
    int32_t rc;
    int32_t pad;
    uint64_t len; /* bytes of data that follow */
} ex_reply_t;

void pbt_call_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                      size_t request_len, void *reply, size_t reply_max, size_t *reply_len)
{
    pbt_call_req_t req = {0};
    char *seg = seg_base;

    if (request_len > 0) /* (NULL when empty) */
        memcpy(&req, request, request_len < sizeof(req) ? request_len : sizeof(req));
    switch (req.op) {
    case PBT_CALL_ADD: {
        uint64_t old;

        if (req.offset > seg_size - sizeof(old) || req.offset % sizeof(old) != 0)
            return;
        memcpy(&old, seg + req.offset, sizeof(old));
        *(uint64_t *)(seg + req.offset) = old + req.value;
        if (reply_max >= sizeof(old)) {
            memcpy(reply, &old, sizeof(old));
            *reply_len = sizeof(old);
        }
        break;
    }
    case PBT_CALL_READ:
        if (req.offset > seg_size || req.length > seg_size - req.offset || req.length > reply_max)
            return;
        memcpy(reply, seg + req.offset, req.length);
        *reply_len = req.length;
        break;
    case PBT_CALL_ECHO:
        *reply_len = request_len < reply_max ? request_len : reply_max;
        memcpy(reply, request, *reply_len);
        break;
    case PBT_CALL_WHO:
        if (reply_max >= sizeof(uint32_t)) {
            memcpy(reply, arg, sizeof(uint32_t));
            *reply_len = sizeof(uint32_t);
        }
        break;
    case PBT_CALL_OVERSAY:
        memset(reply, 0x5a, reply_max);
        *reply_len = reply_max + req.value;
        break;
    default: break;
    }
}

/* Compute for @ms milliseconds without calling the library. */
static uint64_t exporter_compute(uint64_t ms)
{
    struct timespec start, now;
    volatile uint64_t sum = 0;
    int64_t elapsed_ns;

    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        for (int i = 0; i < 100000; i++)
            sum += (uint64_t)i * 2654435761u;
        clock_gettime(CLOCK_MONOTONIC, &now);
        elapsed_ns = (int64_t)(now.tv_sec - start.tv_sec) * 1000000000 +
                     (int64_t)(now.tv_nsec - start.tv_nsec);
    } while (elapsed_ns < (int64_t)ms * 1000000);
    return sum;
}

static void acl_resolve(rsmapi_access_entry_t *out, const rsmapi_access_entry_t *in, uint_t n,
                        rsm_node_id_t importer)
{
    rsm_node_id_t self = rsm_get_local_nodeid();
    rsm_node_id_t other = (self > importer ? self : importer) + 1;

    for (uint_t i = 0; i < n; i++) {
        out[i] = in[i];
        if (in[i].ae_node == PBT_NODE_LOCAL)
            out[i].ae_node = importer;
        else if (in[i].ae_node == PBT_NODE_OTHER)
            out[i].ae_node = other;
    }
}

void pbt_exporter_main(pbt_peer_t *self, const pbt_export_opts_t *o)
{
    rsmapi_controller_handle_t ctlr;
    rsm_memseg_export_handle_t h = NULL;
    rsmapi_access_entry_t acl[4];
    size_t size = o->size;
    uint8_t *mem, *old = NULL;
    size_t old_size = 0;
    int published = 0, destroyed = 0;
    rsm_memseg_id_t segid = o->segid;
    ex_hello_t hello = {0};
    static uint32_t handler_ids[3] = {0, 1, 2};

    ctlr = pbt_ctlr_get();
    mem = pbt_alloc_pages(size);
    pbt_fill_pattern(mem, size, 0, o->seed);
    acl_resolve(acl, o->acl, o->acl_len, o->importer_node);
    hello.rc_create = rsm_memseg_export_create(ctlr, &h, mem, size, o->create_flags);
    hello.rc_publish = RSM_SUCCESS;
    if (hello.rc_create == RSM_SUCCESS && !o->no_publish) {
        hello.rc_publish =
            rsm_memseg_export_publish(h, &segid, o->acl_len ? acl : NULL, o->acl_len);
        published = hello.rc_publish == RSM_SUCCESS;
    }
    hello.node = rsm_get_local_nodeid();
    hello.segid = segid;
    pbt_send(self->wr, &hello, sizeof(hello));
    if (hello.rc_create != RSM_SUCCESS || hello.rc_publish != RSM_SUCCESS)
        return;

    for (;;) {
        ex_cmd_t cmd;
        ex_reply_t rep = {0};
        void *data = NULL;

        if (pbt_recv_timed(self->rd, &cmd, sizeof(cmd), -1) == 0)
            _exit(2); /* the test went away without EX_EXIT */
        switch (cmd.op) {
        case EX_READ:
        case EX_READ_OLD: {
            uint8_t *src = cmd.op == EX_READ ? mem : old;
            size_t lim = cmd.op == EX_READ ? size : old_size;

            CHECK(src != NULL && cmd.a + cmd.b <= lim);
            data = src + cmd.a;
            rep.len = cmd.b;
            break;
        }
        case EX_WRITE:
            CHECK(cmd.a + cmd.b <= size);
            pbt_recv(self->rd, mem + cmd.a, cmd.b);
            break;
        case EX_UNPUBLISH:
            rep.rc = rsm_memseg_export_unpublish(h);
            if (rep.rc == RSM_SUCCESS)
                published = 0;
            break;
        case EX_PUBLISH:
            rep.rc = rsm_memseg_export_publish(h, &segid, o->acl_len ? acl : NULL, o->acl_len);
            if (rep.rc == RSM_SUCCESS)
                published = 1;
            break;
        case EX_REPUBLISH: {
            rsmapi_access_entry_t e = {o->importer_node, (rsm_permission_t)cmd.a};

            rep.rc = rsm_memseg_export_republish(h, cmd.a ? &e : NULL, cmd.a ? 1 : 0);
            break;
        }
        case EX_DESTROY:
            rep.rc = rsm_memseg_export_destroy(h);
            if (rep.rc == RSM_SUCCESS)
                destroyed = 1;
            break;
        case EX_POST: rep.rc = rsm_intr_signal_post(h, (uint_t)cmd.a); break;
        case EX_WAIT: rep.rc = rsm_intr_signal_wait(h, (int)cmd.a); break;
        case EX_REBIND: {
            size_t nsize = cmd.b ? cmd.b : size;
            uint8_t *nmem = pbt_alloc_pages(nsize);

            pbt_fill_pattern(nmem, nsize, 0, (unsigned)cmd.a);
            rep.rc = rsm_memseg_export_rebind(h, nmem, 0, nsize);
            if (rep.rc == RSM_SUCCESS) {
                pbt_free_pages(old, old_size);
                old = mem;
                old_size = size;
                mem = nmem;
            } else {
                pbt_free_pages(nmem, nsize);
            }
            break;
        }
        case EX_CLAIM:
            rep.rc = cmd.a ? pb_rsm_progress_claim(ctlr) : pb_rsm_progress_release(ctlr);
            break;
        case EX_HANDLER:
            CHECK(cmd.a < 3);
            rep.rc = pb_rsm_memseg_export_set_handler(h, cmd.a ? pbt_call_handler : NULL,
                                                      &handler_ids[cmd.a]);
            break;
        case EX_COMPUTE: (void)exporter_compute(cmd.a); break;
        case EX_EXIT:
            if (published)
                CHECK_OK(rsm_memseg_export_unpublish(h));
            if (!destroyed)
                CHECK_OK(rsm_memseg_export_destroy(h));
            CHECK_OK(rsm_release_controller(ctlr));
            pbt_free_pages(mem, size);
            pbt_free_pages(old, old_size);
            pbt_send(self->wr, &rep, sizeof(rep));
            return;
        default: pbt_fail(__FILE__, __LINE__, "unknown exporter command %d", cmd.op);
        }
        pbt_send(self->wr, &rep, sizeof(rep));
        if (rep.len > 0)
            pbt_send(self->wr, data, rep.len);
    }
}

static void exporter_forked(pbt_peer_t *self, void *arg)
{
    pbt_exporter_main(self, arg);
}

/* The peer becomes POSTBOX_TEST_EXPORTER_SERVER on node POSTBOX_TEST_PEER_NODE:
 * a fresh process, so the library reads its node id anew. */
static void exporter_exec(pbt_peer_t *self, void *arg)
{
    const char *server = getenv("POSTBOX_TEST_EXPORTER_SERVER");
    char rd[16], wr[16], opts[2 * sizeof(pbt_export_opts_t) + 1];
    const uint8_t *bytes = arg;

    CHECK_MSG(server != NULL && *server != '\0',
              "POSTBOX_TEST_PEER_NODE needs POSTBOX_TEST_EXPORTER_SERVER");
    for (size_t i = 0; i < sizeof(pbt_export_opts_t); i++)
        snprintf(opts + 2 * i, 3, "%02x", bytes[i]);
    snprintf(rd, sizeof(rd), "%d", self->rd);
    snprintf(wr, sizeof(wr), "%d", self->wr);
    CHECK_SYS(fcntl(self->rd, F_SETFD, 0));
    CHECK_SYS(fcntl(self->wr, F_SETFD, 0));
    CHECK_SYS(setenv("POSTBOX_NODE_ID", getenv("POSTBOX_TEST_PEER_NODE"), 1));
    if (getenv("PBT_PEER_NETNS") != NULL) {
        /* node 1 of a --netns job (harness.c): into its network namespace,
         * as a process of the job with node 1's address */
        int ns = open(getenv("PBT_PEER_NETNS"), O_RDONLY | O_CLOEXEC);

        CHECK_SYS(ns);
        CHECK_SYS(setns(ns, CLONE_NEWNET));
        close(ns);
        CHECK_SYS(setenv("POSTBOX_JOB_SECRET", getenv("PBT_JOB_SECRET"), 1));
        CHECK_SYS(setenv("POSTBOX_NETNS_ADDR", getenv("PBT_PEER_ADDR"), 1));
        CHECK_SYS(setenv("POSTBOX_NETNS_RAILS", getenv("PBT_PEER_ADDR"), 1));
        CHECK_SYS(unsetenv("POSTBOX_TCP_ADDR"));
    }
    execl(server, server, rd, wr, opts, (char *)NULL);
    pbt_fail(__FILE__, __LINE__, "exec %s: %s", server, strerror(errno));
}

void pbt_exporter_start(pbt_exporter_t *ex, const pbt_export_opts_t *opts)
{
    static pbt_export_opts_t o; /* copied into the child by fork */
    const char *peer_node = getenv("POSTBOX_TEST_PEER_NODE");
    ex_hello_t hello;

    o = *opts;
    if (o.size == 0)
        o.size = 4 * pbt_page_size();
    o.importer_node = rsm_get_local_nodeid();
    if (peer_node != NULL && *peer_node != '\0')
        ex->peer = pbt_peer_start(exporter_exec, &o);
    else
        ex->peer = pbt_peer_start(exporter_forked, &o);
    pbt_recv(ex->peer.rd, &hello, sizeof(hello));
    CHECK_MSG(hello.rc_create == RSM_SUCCESS, "exporter: rsm_memseg_export_create: %d (%s)",
              hello.rc_create, rsm_strerror(hello.rc_create));
    CHECK_MSG(hello.rc_publish == RSM_SUCCESS, "exporter: rsm_memseg_export_publish: %d (%s)",
              hello.rc_publish, rsm_strerror(hello.rc_publish));
    ex->node = hello.node;
    ex->segid = hello.segid;
    ex->size = o.size;
    ex->seed = o.seed;
}

void pbt_exporter_cmd_send(pbt_exporter_t *ex, int op, uint64_t a, uint64_t b, const void *data)
{
    ex_cmd_t cmd = {.op = op, .a = a, .b = b};

    pbt_send(ex->peer.wr, &cmd, sizeof(cmd));
    if (op == EX_WRITE)
        pbt_send(ex->peer.wr, data, b);
}

int pbt_exporter_cmd_answer(pbt_exporter_t *ex, void *data)
{
    ex_reply_t rep;

    pbt_recv(ex->peer.rd, &rep, sizeof(rep));
    if (rep.len > 0)
        pbt_recv(ex->peer.rd, data, rep.len);
    return rep.rc;
}

int pbt_exporter_cmd(pbt_exporter_t *ex, int op, uint64_t a, uint64_t b, void *data)
{
    pbt_exporter_cmd_send(ex, op, a, b, data);
    return pbt_exporter_cmd_answer(ex, data);
}

void pbt_exporter_stop(pbt_exporter_t *ex)
{
    CHECK_OK(pbt_exporter_cmd(ex, EX_EXIT, 0, 0, NULL));
    pbt_peer_join(&ex->peer, 10000, 0);
}

void pbt_exporter_expect(pbt_exporter_t *ex, size_t off, const void *expect, size_t len,
                         const char *what)
{
    uint8_t *buf = malloc(len ? len : 1);

    CHECK(buf != NULL);
    CHECK_OK(pbt_exporter_cmd(ex, EX_READ, off, len, buf));
    for (size_t i = 0; i < len; i++) {
        CHECK_MSG(buf[i] == ((const uint8_t *)expect)[i],
                  "%s: exporter byte %zu is 0x%02x, expected 0x%02x", what, off + i, buf[i],
                  ((const uint8_t *)expect)[i]);
    }
    free(buf);
}

void pbt_exporter_expect_pristine(pbt_exporter_t *ex, const char *what)
{
    uint8_t *buf = malloc(ex->size);
    size_t bad;

    CHECK(buf != NULL);
    CHECK_OK(pbt_exporter_cmd(ex, EX_READ, 0, ex->size, buf));
    bad = pbt_check_pattern(buf, ex->size, 0, ex->seed);
    CHECK_MSG(bad == (size_t)-1, "%s: exporter memory changed at offset %zu", what, bad);
    free(buf);
}

int pbt_connect(rsmapi_controller_handle_t ctlr, const pbt_exporter_t *ex, rsm_permission_t perm,
                rsm_memseg_import_handle_t *im)
{
    return rsm_memseg_import_connect(ctlr, ex->node, ex->segid, perm, im);
}

/* ---- a segment of the calling process ---------------------------------------- */

void pbt_local_export(pbt_local_export_t *le, size_t size, uint_t flags, int no_publish)
{
    memset(le, 0, sizeof(*le));
    le->ctlr = pbt_ctlr_get();
    le->size = size;
    le->mem = pbt_alloc_pages(size);
    le->node = rsm_get_local_nodeid();
    CHECK_OK(rsm_memseg_export_create(le->ctlr, &le->h, le->mem, size, flags));
    if (!no_publish) {
        CHECK_OK(rsm_memseg_export_publish(le->h, &le->segid, NULL, 0));
        le->published = 1;
    }
}

void pbt_local_export_end(pbt_local_export_t *le)
{
    if (le->published)
        CHECK_OK(rsm_memseg_export_unpublish(le->h));
    CHECK_OK(rsm_memseg_export_destroy(le->h));
    CHECK_OK(rsm_release_controller(le->ctlr));
    pbt_free_pages(le->mem, le->size);
    memset(le, 0, sizeof(*le));
}
