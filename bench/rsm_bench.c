/*
 * postbox-rsm-bench: the RSMAPI figures of Qian, Afsahi, Fredrickson and
 * Zamani, 'Performance Evaluation of the Sun Fire Link SMP Clusters' (2006)
 * (Table III, Fig. 6, Fig. 7), raw RSM ping-pong, and the machine's own
 * limits (cache-line ping-pong, memcpy) measured in the same run, ending with
 * the two acceptance ratios.
 *
 * The program forks one peer.  The parent is the importer and the initiator
 * of every ping-pong; the peer exports two segments (16 KB for Table III,
 * SEG_BIG for put/get and ping-pong), imports the parent's ping-pong segment
 * and answers commands sent through a pipe.  Only the public RSM API is used.
 *
 * Ping-pong message layout (both directions), for a message of @size bytes
 * at offset 0 of the receiver's segment:
 *
 *   [0, size-8)      payload
 *   [size-8, size)   sequence number, written last; the top bit asks the
 *                    responder to stop
 *
 * Each side polls its own exported memory for the sequence number it
 * expects next, so stale words of earlier tests never match.
 */
#include "engine.h"

#include <postbox/rsm.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEG_TABLE ((size_t)16 << 10) /* Table III segment and transfer size */
#define SEG_BIG ((size_t)4 << 20)    /* peer's segment: put/get, ping-pong */
#define SEG_PP ((size_t)64 << 10)    /* parent's segment: ping-pong replies */
#define SEQ_STOP (UINT64_C(1) << 63)
#define PEER_TIMEOUT_NS 10000000000u /* a silent peer is declared dead */
#define SIGNAL_WAIT_MS 10000
#define RATIO_SIZE_LAT 64
#define RATIO_SIZE_BW SEG_BIG

static char ctlr_name[] = "shm";

/* ---- failing calls and the peer ----------------------------------------- */

static bool is_peer;
static pid_t peer_pid = -1;

static _Noreturn void die(void)
{
    if (is_peer)
        _exit(1);
    if (peer_pid > 0) {
        kill(peer_pid, SIGKILL);
        waitpid(peer_pid, NULL, 0);
    }
    pb_bench_probe_fini();
    exit(1);
}

/* Exit with the call's name and the error text unless @ret is RSM_SUCCESS. */
static void check(int ret, const char *call)
{
    if (ret == RSM_SUCCESS)
        return;
    fprintf(stderr, "postbox-rsm-bench%s: %s failed: %s (%d)\n", is_peer ? " (peer)" : "", call,
            rsm_strerror(ret), ret);
    die();
}

/* Page-aligned, touched, private memory of @size bytes (a page multiple). */
static char *page_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        perror("postbox-rsm-bench: mmap");
        die();
    }
    memset(p, 0x5a, size);
    return p;
}

/* ---- pipe protocol between parent and peer ------------------------------ */

enum {
    MSG_HELLO = 1,  /* peer: a = 16 KB segment id, b = big segment id, c = node */
    MSG_PARENT_SEG, /* parent: a = ping-pong segment id, b = node */
    MSG_PP_MAP,     /* parent: answer a map ping-pong; a = size, b = first seq */
    MSG_PP_PUT,     /* same, with puts */
    MSG_PP_SIGNAL,  /* same, with put + signal */
    MSG_DRAIN,      /* parent: consume the events posted to the 16 KB segment */
    MSG_QUIT,       /* parent: clean up and exit */
    MSG_REPLY       /* peer: done; a = result */
};

typedef struct {
    uint32_t type;
    uint32_t reserved;
    uint64_t a, b, c;
} peer_msg_t;

static int msg_fd_in = -1, msg_fd_out = -1;

static void msg_send(uint32_t type, uint64_t a, uint64_t b, uint64_t c)
{
    peer_msg_t m = {.type = type, .a = a, .b = b, .c = c};
    ssize_t n;

    do {
        n = write(msg_fd_out, &m, sizeof(m));
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(m)) {
        fprintf(stderr, "postbox-rsm-bench%s: pipe write failed\n", is_peer ? " (peer)" : "");
        die();
    }
}

static void msg_recv(uint32_t want, peer_msg_t *m)
{
    size_t got = 0;

    while (got < sizeof(*m)) {
        ssize_t n = read(msg_fd_in, (char *)m + got, sizeof(*m) - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (!is_peer)
                fprintf(stderr, "postbox-rsm-bench: the peer process exited\n");
            die();
        }
        got += (size_t)n;
    }
    if (want != 0 && m->type != want) {
        fprintf(stderr, "postbox-rsm-bench%s: unexpected message %u\n", is_peer ? " (peer)" : "",
                m->type);
        die();
    }
}

/* ---- ping-pong, shared by both sides ------------------------------------ */

typedef enum {
    PP_MAP,
    PP_PUT,
    PP_SIGNAL
} pp_kind_t;

static const char *const pp_test[] = {"pingpong_map", "pingpong_put", "pingpong_signal"};

/* One side's ends of the ping-pong. */
typedef struct {
    char *local;                          /* own exported memory, polled */
    rsm_memseg_export_handle_t local_exp; /* its export (signal waits) */
    char *remote;                         /* the other's segment, mapped */
    rsm_memseg_import_handle_t remote_imp;
    char *msg; /* source of puts */
} pp_end_t;

static _Atomic uint64_t *seq_word(char *base, size_t size)
{
    return (_Atomic uint64_t *)(base + size - sizeof(uint64_t));
}

/* Send message @v of @size bytes to the other side. */
static void pp_send(const pp_end_t *e, pp_kind_t kind, size_t size, uint64_t v)
{
    if (kind == PP_MAP) {
        memcpy(e->remote, e->msg, size - sizeof(v));
        /* release: the payload is visible before the sequence number */
        atomic_store_explicit(seq_word(e->remote, size), v, memory_order_release);
        return;
    }
    memcpy(e->msg + size - sizeof(v), &v, sizeof(v));
    check(rsm_memseg_import_put(e->remote_imp, 0, e->msg, size), "rsm_memseg_import_put");
    if (kind == PP_SIGNAL)
        check(rsm_intr_signal_post(e->remote_imp, 0), "rsm_intr_signal_post");
}

/* Wait for sequence number @expect (or @expect with SEQ_STOP) in own memory;
 * returns the word seen, or 0 when nothing came within PEER_TIMEOUT_NS. */
static uint64_t pp_wait(const pp_end_t *e, pp_kind_t kind, size_t size, uint64_t expect)
{
    _Atomic uint64_t *w = seq_word(e->local, size);
    uint64_t t0 = 0, v;
    unsigned spins = 0;

    if (kind == PP_SIGNAL)
        check(rsm_intr_signal_wait(e->local_exp, SIGNAL_WAIT_MS), "rsm_intr_signal_wait");
    /* acquire: pairs with the sender's release (map) or its completed put */
    while ((v = atomic_load_explicit(w, memory_order_acquire)) != expect &&
           v != (expect | SEQ_STOP)) {
        if (++spins % 4096 != 0)
            continue;
        if (t0 == 0)
            t0 = pb_bench_time_now();
        else if (pb_bench_time_now() - t0 > PEER_TIMEOUT_NS)
            return 0;
        if (spins >= 1u << 14)
            sched_yield(); /* the other side may be waiting for our core */
    }
    return v;
}

/* ---- the peer process --------------------------------------------------- */

typedef struct {
    rsmapi_controller_handle_t ctl;
    char *seg16, *big;
    rsm_memseg_export_handle_t exp16, exp_big;
    pp_end_t pp;
} peer_t;

static void peer_setup(peer_t *p)
{
    rsm_memseg_id_t id16 = 0, id_big = 0;
    peer_msg_t m;

    check(rsm_get_controller(ctlr_name, &p->ctl), "rsm_get_controller");
    p->seg16 = page_alloc(SEG_TABLE);
    p->big = page_alloc(SEG_BIG);
    check(rsm_memseg_export_create(p->ctl, &p->exp16, p->seg16, SEG_TABLE, 0),
          "rsm_memseg_export_create");
    check(rsm_memseg_export_create(p->ctl, &p->exp_big, p->big, SEG_BIG, 0),
          "rsm_memseg_export_create");
    check(rsm_memseg_export_publish(p->exp16, &id16, NULL, 0), "rsm_memseg_export_publish");
    check(rsm_memseg_export_publish(p->exp_big, &id_big, NULL, 0), "rsm_memseg_export_publish");
    msg_send(MSG_HELLO, id16, id_big, rsm_get_local_nodeid());

    msg_recv(MSG_PARENT_SEG, &m);
    check(rsm_memseg_import_connect(p->ctl, (rsm_node_id_t)m.b, (rsm_memseg_id_t)m.a, RSM_PERM_RDWR,
                                    &p->pp.remote_imp),
          "rsm_memseg_import_connect");
    check(rsm_memseg_import_map(p->pp.remote_imp, (void **)&p->pp.remote, RSM_MAP_NONE,
                                RSM_PERM_RDWR, 0, SEG_PP),
          "rsm_memseg_import_map");
    p->pp.local = p->big;
    p->pp.local_exp = p->exp_big;
    p->pp.msg = page_alloc(SEG_PP);
    msg_send(MSG_REPLY, 0, 0, 0);
}

/* Echo messages from sequence number @seq on until one carries SEQ_STOP. */
static void peer_pingpong(peer_t *p, pp_kind_t kind, size_t size, uint64_t seq)
{
    for (;; seq++) {
        uint64_t v = pp_wait(&p->pp, kind, size, seq);

        if (v == 0) {
            fprintf(stderr, "postbox-rsm-bench (peer): no message from the parent\n");
            die();
        }
        if (v & SEQ_STOP)
            break;
        pp_send(&p->pp, kind, size, v);
    }
    msg_send(MSG_REPLY, 0, 0, 0);
}

static void peer_drain(peer_t *p)
{
    uint64_t n = 0;
    int ret;

    while ((ret = rsm_intr_signal_wait(p->exp16, 0)) == RSM_SUCCESS)
        n++;
    if (ret != RSMERR_TIMEOUT)
        check(ret, "rsm_intr_signal_wait");
    msg_send(MSG_REPLY, n, 0, 0);
}

static void peer_teardown(peer_t *p)
{
    check(rsm_memseg_import_unmap(p->pp.remote_imp), "rsm_memseg_import_unmap");
    check(rsm_memseg_import_disconnect(p->pp.remote_imp), "rsm_memseg_import_disconnect");
    check(rsm_memseg_export_unpublish(p->exp16), "rsm_memseg_export_unpublish");
    check(rsm_memseg_export_unpublish(p->exp_big), "rsm_memseg_export_unpublish");
    check(rsm_memseg_export_destroy(p->exp16), "rsm_memseg_export_destroy");
    check(rsm_memseg_export_destroy(p->exp_big), "rsm_memseg_export_destroy");
    check(rsm_release_controller(p->ctl), "rsm_release_controller");
}

static _Noreturn void peer_main(pid_t parent)
{
    peer_t p;
    peer_msg_t m;

    /* die with the parent, even if it died before prctl took effect */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(1);
    memset(&p, 0, sizeof(p));
    peer_setup(&p);
    for (;;) {
        msg_recv(0, &m);
        switch (m.type) {
        case MSG_PP_MAP: peer_pingpong(&p, PP_MAP, m.a, m.b); break;
        case MSG_PP_PUT: peer_pingpong(&p, PP_PUT, m.a, m.b); break;
        case MSG_PP_SIGNAL: peer_pingpong(&p, PP_SIGNAL, m.a, m.b); break;
        case MSG_DRAIN: peer_drain(&p); break;
        case MSG_QUIT:
            peer_teardown(&p);
            msg_send(MSG_REPLY, 0, 0, 0);
            _exit(0);
        default:
            fprintf(stderr, "postbox-rsm-bench (peer): unknown message %u\n", m.type);
            _exit(1);
        }
    }
}

static void peer_start(void)
{
    int to_peer[2], from_peer[2];
    pid_t parent = getpid();

    if (pipe(to_peer) != 0 || pipe(from_peer) != 0) {
        perror("postbox-rsm-bench: pipe");
        die();
    }
    fflush(NULL); /* the child must not repeat buffered output */
    peer_pid = fork();
    if (peer_pid < 0) {
        perror("postbox-rsm-bench: fork");
        die();
    }
    if (peer_pid == 0) {
        is_peer = true;
        close(to_peer[1]);
        close(from_peer[0]);
        msg_fd_in = to_peer[0];
        msg_fd_out = from_peer[1];
        peer_main(parent);
    }
    close(to_peer[0]);
    close(from_peer[1]);
    msg_fd_in = from_peer[0];
    msg_fd_out = to_peer[1];
}

/* ---- the parent's state and helpers ------------------------------------- */

typedef struct {
    pb_bench_opts_t opts;
    pb_bench_out_t out;
    rsmapi_controller_handle_t ctl;
    rsm_node_id_t peer_node;
    rsm_memseg_id_t id16, id_big, id_pp;
    rsm_memseg_export_handle_t exp_pp;
    rsm_memseg_import_handle_t imp16; /* Table III barrier calls */
    pp_end_t pp;                      /* remote_imp/remote: the peer's big segment */
    char *src, *dst;                  /* SEG_BIG local buffers */
    uint64_t seq;                     /* last ping-pong sequence number used */
} bench_t;

static bench_t g;

/* Cache-line probe in ns, or -1 with --no-probe. */
static double probe(void)
{
    return g.opts.no_probe ? -1.0 : pb_bench_probe_measure();
}

static pb_bench_record_t record_make(const char *suite, const char *test, const char *library,
                                     size_t size, const char *metric, const char *unit)
{
    bool raw = strcmp(library, "raw") == 0;
    pb_bench_record_t r = {
        .suite = suite,
        .test = test,
        .library = library,
        .transport = raw ? "none" : "shm",
        .placement = "on-node",
        .ranks = 2,
        .nodes = 1,
        .pairs = 1,
        .size = size,
        .metric = metric,
        .unit = unit,
    };
    return r;
}

/* Drop sizes that are not multiples of @align from @sizes. */
static unsigned sizes_aligned(size_t *sizes, unsigned n, size_t align)
{
    unsigned k = 0;

    for (unsigned i = 0; i < n; i++)
        if (sizes[i] % align == 0)
            sizes[k++] = sizes[i];
    return k;
}

static void parent_setup(void)
{
    peer_msg_t m;

    check(rsm_get_controller(ctlr_name, &g.ctl), "rsm_get_controller");
    msg_recv(MSG_HELLO, &m);
    g.id16 = (rsm_memseg_id_t)m.a;
    g.id_big = (rsm_memseg_id_t)m.b;
    g.peer_node = (rsm_node_id_t)m.c;

    g.pp.local = page_alloc(SEG_PP);
    check(rsm_memseg_export_create(g.ctl, &g.exp_pp, g.pp.local, SEG_PP, 0),
          "rsm_memseg_export_create");
    check(rsm_memseg_export_publish(g.exp_pp, &g.id_pp, NULL, 0), "rsm_memseg_export_publish");
    g.pp.local_exp = g.exp_pp;
    msg_send(MSG_PARENT_SEG, g.id_pp, rsm_get_local_nodeid(), 0);

    check(rsm_memseg_import_connect(g.ctl, g.peer_node, g.id_big, RSM_PERM_RDWR, &g.pp.remote_imp),
          "rsm_memseg_import_connect");
    check(rsm_memseg_import_map(g.pp.remote_imp, (void **)&g.pp.remote, RSM_MAP_NONE, RSM_PERM_RDWR,
                                0, SEG_BIG),
          "rsm_memseg_import_map");
    g.pp.msg = page_alloc(SEG_PP);
    g.src = page_alloc(SEG_BIG);
    g.dst = page_alloc(SEG_BIG);
    msg_recv(MSG_REPLY, &m);
}

static void parent_teardown(void)
{
    peer_msg_t m;

    msg_send(MSG_QUIT, 0, 0, 0);
    msg_recv(MSG_REPLY, &m);
    waitpid(peer_pid, NULL, 0);
    peer_pid = -1;
    check(rsm_memseg_import_unmap(g.pp.remote_imp), "rsm_memseg_import_unmap");
    check(rsm_memseg_import_disconnect(g.pp.remote_imp), "rsm_memseg_import_disconnect");
    check(rsm_memseg_export_unpublish(g.exp_pp), "rsm_memseg_export_unpublish");
    check(rsm_memseg_export_destroy(g.exp_pp), "rsm_memseg_export_destroy");
    check(rsm_release_controller(g.ctl), "rsm_release_controller");
}

/* ---- Table III: one call at a time -------------------------------------- */

enum {
    CTL_GET,
    CTL_TOPO_GET,
    CTL_TOPO_FREE,
    CTL_RELEASE,
    CTL_NSLOTS
};

static int cycle_controller(void *arg, double *ns)
{
    rsmapi_controller_handle_t c;
    rsm_topology_t *topo;
    uint64_t t[5];
    int ret;

    t[0] = pb_bench_time_now();
    ret = rsm_get_controller(ctlr_name, &c);
    t[1] = pb_bench_time_now();
    check(ret, "rsm_get_controller");
    ret = rsm_get_interconnect_topology(&topo);
    t[2] = pb_bench_time_now();
    check(ret, "rsm_get_interconnect_topology");
    rsm_free_interconnect_topology(topo);
    t[3] = pb_bench_time_now();
    ret = rsm_release_controller(c);
    t[4] = pb_bench_time_now();
    check(ret, "rsm_release_controller");
    for (unsigned i = 0; i < CTL_NSLOTS; i++)
        ns[i] = (double)(t[i + 1] - t[i]);
    return 0;
}

enum {
    EXP_CREATE,
    EXP_PUBLISH,
    EXP_UNPUBLISH,
    EXP_DESTROY,
    EXP_NSLOTS
};

typedef struct {
    char *mem;
    size_t size;
} export_arg_t;

static int cycle_export(void *arg, double *ns)
{
    const export_arg_t *a = arg;
    rsm_memseg_export_handle_t e;
    rsm_memseg_id_t id = 0;
    uint64_t t[5];
    int ret;

    t[0] = pb_bench_time_now();
    ret = rsm_memseg_export_create(g.ctl, &e, a->mem, a->size, 0);
    t[1] = pb_bench_time_now();
    check(ret, "rsm_memseg_export_create");
    ret = rsm_memseg_export_publish(e, &id, NULL, 0);
    t[2] = pb_bench_time_now();
    check(ret, "rsm_memseg_export_publish");
    ret = rsm_memseg_export_unpublish(e);
    t[3] = pb_bench_time_now();
    check(ret, "rsm_memseg_export_unpublish");
    ret = rsm_memseg_export_destroy(e);
    t[4] = pb_bench_time_now();
    check(ret, "rsm_memseg_export_destroy");
    for (unsigned i = 0; i < EXP_NSLOTS; i++)
        ns[i] = (double)(t[i + 1] - t[i]);
    return 0;
}

enum {
    IMP_CONNECT,
    IMP_MAP,
    IMP_UNMAP,
    IMP_DISCONNECT,
    IMP_NSLOTS
};

static int cycle_import(void *arg, double *ns)
{
    rsm_memseg_import_handle_t im;
    void *addr = NULL;
    uint64_t t[5];
    int ret;

    t[0] = pb_bench_time_now();
    ret = rsm_memseg_import_connect(g.ctl, g.peer_node, g.id16, RSM_PERM_RDWR, &im);
    t[1] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_connect");
    ret = rsm_memseg_import_map(im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, SEG_TABLE);
    t[2] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_map");
    ret = rsm_memseg_import_unmap(im);
    t[3] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_unmap");
    ret = rsm_memseg_import_disconnect(im);
    t[4] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_disconnect");
    for (unsigned i = 0; i < IMP_NSLOTS; i++)
        ns[i] = (double)(t[i + 1] - t[i]);
    return 0;
}

enum {
    BAR_SET_MODE,
    BAR_INIT,
    BAR_OPEN,
    BAR_PUT,
    BAR_ORDER,
    BAR_GET,
    BAR_CLOSE,
    BAR_DESTROY,
    BAR_NSLOTS
};

/* An explicit span on the 16 KB import: open, put, order, get, close.
 * set_mode is timed twice (to explicit and back) and averaged. */
static int cycle_barrier(void *arg, double *ns)
{
    rsmapi_barrier_t bar;
    uint64_t t[10];
    int ret;

    t[0] = pb_bench_time_now();
    ret = rsm_memseg_import_set_mode(g.imp16, RSM_BARRIER_MODE_EXPLICIT);
    t[1] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_set_mode");
    ret = rsm_memseg_import_init_barrier(g.imp16, RSM_BAR_DEFAULT, &bar);
    t[2] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_init_barrier");
    ret = rsm_memseg_import_open_barrier(&bar);
    t[3] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_open_barrier");
    ret = rsm_memseg_import_put(g.imp16, 0, g.src, SEG_TABLE);
    t[4] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_put");
    ret = rsm_memseg_import_order_barrier(&bar);
    t[5] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_order_barrier");
    ret = rsm_memseg_import_get(g.imp16, 0, g.dst, SEG_TABLE);
    t[6] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_get");
    ret = rsm_memseg_import_close_barrier(&bar);
    t[7] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_close_barrier");
    ret = rsm_memseg_import_destroy_barrier(&bar);
    t[8] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_destroy_barrier");
    ret = rsm_memseg_import_set_mode(g.imp16, RSM_BARRIER_MODE_IMPLICIT);
    t[9] = pb_bench_time_now();
    check(ret, "rsm_memseg_import_set_mode");
    ns[BAR_SET_MODE] = 0.5 * (double)((t[1] - t[0]) + (t[9] - t[8]));
    for (unsigned i = BAR_INIT; i < BAR_NSLOTS; i++)
        ns[i] = (double)(t[i + 1] - t[i]);
    return 0;
}

static int op_signal_post(void *arg, uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++)
        check(rsm_intr_signal_post(g.imp16, 0), "rsm_intr_signal_post");
    return 0;
}

/* Statistics of one call, with the probes around its measurement. */
typedef struct {
    pb_bench_stats_t st;
    double pre, post;
} measured_t;

/* Run @cycle with probes around it, into @m[0..nslots-1]. */
static void measure_cycle(unsigned nslots, pb_bench_cycle_func_t cycle, void *arg, measured_t *m)
{
    pb_bench_stats_t st[BAR_NSLOTS];
    double pre = probe(), post;

    pb_bench_cycle_run(&g.opts, nslots, cycle, arg, st);
    post = probe();
    for (unsigned i = 0; i < nslots; i++) {
        m[i].st = st[i];
        pb_bench_stats_scale(&m[i].st, 1e-3);
        m[i].pre = pre;
        m[i].post = post;
    }
}

/* Run @op with probes around it; stats in ns per iteration. */
static void measure_op(pb_bench_op_func_t op, void *arg, measured_t *m)
{
    m->pre = probe();
    pb_bench_sample_run(&g.opts, op, arg, &m->st);
    m->post = probe();
}

static void emit(const char *suite, const char *test, const char *library, size_t size,
                 const char *metric, const char *unit, const measured_t *m)
{
    pb_bench_record_t r = record_make(suite, test, library, size, metric, unit);

    r.stats = m->st;
    r.probe_before = m->pre;
    r.probe_after = m->post;
    pb_bench_record_emit(&g.out, &r);
}

/* Table III controller and topology calls: measured before the parent holds
 * a controller, so that every get and release is a full one. */
static measured_t table3_ctl[CTL_NSLOTS];

static void bench_table3(void)
{
    const measured_t *ctl = table3_ctl;
    measured_t ex[EXP_NSLOTS], imp[IMP_NSLOTS], bar[BAR_NSLOTS], post;
    export_arg_t ea = {.mem = page_alloc(SEG_TABLE), .size = SEG_TABLE};
    peer_msg_t m;

    measure_cycle(EXP_NSLOTS, cycle_export, &ea, ex);
    measure_cycle(IMP_NSLOTS, cycle_import, NULL, imp);

    check(rsm_memseg_import_connect(g.ctl, g.peer_node, g.id16, RSM_PERM_RDWR, &g.imp16),
          "rsm_memseg_import_connect");
    measure_cycle(BAR_NSLOTS, cycle_barrier, NULL, bar);
    measure_op(op_signal_post, NULL, &post);
    pb_bench_stats_scale(&post.st, 1e-3);
    msg_send(MSG_DRAIN, 0, 0, 0);
    msg_recv(MSG_REPLY, &m);
    check(rsm_memseg_import_disconnect(g.imp16), "rsm_memseg_import_disconnect");
    munmap(ea.mem, SEG_TABLE);

    pb_bench_table_begin(&g.out, "Table III: RSMAPI call times (16 KB segment)", "us");
    emit("rsm", "call_get_controller", "postbox", 0, "latency", "us", &ctl[CTL_GET]);
    emit("rsm", "call_get_interconnect_topology", "postbox", 0, "latency", "us",
         &ctl[CTL_TOPO_GET]);
    emit("rsm", "call_free_interconnect_topology", "postbox", 0, "latency", "us",
         &ctl[CTL_TOPO_FREE]);
    emit("rsm", "call_export_create", "postbox", SEG_TABLE, "latency", "us", &ex[EXP_CREATE]);
    emit("rsm", "call_export_publish", "postbox", SEG_TABLE, "latency", "us", &ex[EXP_PUBLISH]);
    emit("rsm", "call_export_unpublish", "postbox", SEG_TABLE, "latency", "us", &ex[EXP_UNPUBLISH]);
    emit("rsm", "call_export_destroy", "postbox", SEG_TABLE, "latency", "us", &ex[EXP_DESTROY]);
    emit("rsm", "call_release_controller", "postbox", 0, "latency", "us", &ctl[CTL_RELEASE]);
    emit("rsm", "call_import_connect", "postbox", SEG_TABLE, "latency", "us", &imp[IMP_CONNECT]);
    emit("rsm", "call_import_map", "postbox", SEG_TABLE, "latency", "us", &imp[IMP_MAP]);
    emit("rsm", "call_import_init_barrier", "postbox", SEG_TABLE, "latency", "us", &bar[BAR_INIT]);
    emit("rsm", "call_import_set_mode", "postbox", SEG_TABLE, "latency", "us", &bar[BAR_SET_MODE]);
    emit("rsm", "call_import_open_barrier", "postbox", SEG_TABLE, "latency", "us", &bar[BAR_OPEN]);
    emit("rsm", "call_import_order_barrier", "postbox", SEG_TABLE, "latency", "us",
         &bar[BAR_ORDER]);
    emit("rsm", "call_import_put", "postbox", SEG_TABLE, "latency", "us", &bar[BAR_PUT]);
    emit("rsm", "call_import_get", "postbox", SEG_TABLE, "latency", "us", &bar[BAR_GET]);
    emit("rsm", "call_import_close_barrier", "postbox", SEG_TABLE, "latency", "us",
         &bar[BAR_CLOSE]);
    emit("rsm", "call_import_destroy_barrier", "postbox", SEG_TABLE, "latency", "us",
         &bar[BAR_DESTROY]);
    emit("rsm", "call_signal_post", "postbox", 0, "latency", "us", &post);
    emit("rsm", "call_import_unmap", "postbox", SEG_TABLE, "latency", "us", &imp[IMP_UNMAP]);
    emit("rsm", "call_import_disconnect", "postbox", SEG_TABLE, "latency", "us",
         &imp[IMP_DISCONNECT]);
}

/* ---- Fig. 6: export-side calls against segment size --------------------- */

static void bench_fig6(void)
{
    static const char *const names[EXP_NSLOTS] = {"call_export_create", "call_export_publish",
                                                  "call_export_unpublish", "call_export_destroy"};
    size_t sizes[PB_BENCH_SIZES_MAX];
    measured_t m[PB_BENCH_SIZES_MAX][EXP_NSLOTS];
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned n = pb_bench_sizes_make(&g.opts, 8 << 10, 64 << 20, 4, 16, sizes);

    n = sizes_aligned(sizes, n, page);
    for (unsigned i = 0; i < n; i++) {
        export_arg_t ea = {.mem = page_alloc(sizes[i]), .size = sizes[i]};

        measure_cycle(EXP_NSLOTS, cycle_export, &ea, m[i]);
        munmap(ea.mem, sizes[i]);
    }
    pb_bench_table_begin(&g.out, "Fig. 6: export-side calls against segment size", "us");
    for (unsigned j = 0; j < EXP_NSLOTS; j++)
        for (unsigned i = 0; i < n; i++)
            emit("rsm", names[j], "postbox", sizes[i], "latency", "us", &m[i][j]);
}

/* ---- Fig. 7: put and get against message size; memcpy ------------------ */

typedef struct {
    size_t size;
} size_arg_t;

static int op_put(void *arg, uint64_t iters)
{
    size_t size = ((const size_arg_t *)arg)->size;

    for (uint64_t i = 0; i < iters; i++)
        check(rsm_memseg_import_put(g.pp.remote_imp, 0, g.src, size), "rsm_memseg_import_put");
    return 0;
}

static int op_get(void *arg, uint64_t iters)
{
    size_t size = ((const size_arg_t *)arg)->size;

    for (uint64_t i = 0; i < iters; i++)
        check(rsm_memseg_import_get(g.pp.remote_imp, 0, g.dst, size), "rsm_memseg_import_get");
    return 0;
}

static int op_memcpy(void *arg, uint64_t iters)
{
    size_t size = ((const size_arg_t *)arg)->size;

    for (uint64_t i = 0; i < iters; i++) {
        memcpy(g.dst, g.src, size);
        /* keep the compiler from merging or dropping the copies */
        __asm__ __volatile__("" ::: "memory");
    }
    return 0;
}

/* Emit @m (ns per transfer of @size bytes) as latency (us) and keep the
 * bandwidth (MB/s) in @bw. */
static void latency_and_bandwidth(measured_t *m, size_t size, measured_t *bw)
{
    *bw = *m;
    pb_bench_stats_to_bandwidth(&bw->st, size);
    pb_bench_stats_scale(&m->st, 1e-3);
}

static void bench_fig7(void)
{
    size_t sizes[PB_BENCH_SIZES_MAX];
    measured_t put[PB_BENCH_SIZES_MAX], get[PB_BENCH_SIZES_MAX];
    measured_t put_bw[PB_BENCH_SIZES_MAX], get_bw[PB_BENCH_SIZES_MAX];
    measured_t cpy[PB_BENCH_SIZES_MAX], cpy_bw[PB_BENCH_SIZES_MAX];
    unsigned n = pb_bench_sizes_make(&g.opts, 1, SEG_BIG, 2, 4, sizes);

    for (unsigned i = 0; i < n; i++) {
        size_arg_t a = {.size = sizes[i]};

        measure_op(op_put, &a, &put[i]);
        measure_op(op_get, &a, &get[i]);
        measure_op(op_memcpy, &a, &cpy[i]);
        latency_and_bandwidth(&put[i], sizes[i], &put_bw[i]);
        latency_and_bandwidth(&get[i], sizes[i], &get_bw[i]);
        latency_and_bandwidth(&cpy[i], sizes[i], &cpy_bw[i]);
    }
    pb_bench_table_begin(&g.out, "Fig. 7: put and get time against message size", "us");
    for (unsigned i = 0; i < n; i++)
        emit("rsm", "put", "postbox", sizes[i], "latency", "us", &put[i]);
    for (unsigned i = 0; i < n; i++)
        emit("rsm", "get", "postbox", sizes[i], "latency", "us", &get[i]);
    pb_bench_table_begin(&g.out, "Fig. 7: put and get bandwidth against message size", "MB/s");
    for (unsigned i = 0; i < n; i++)
        emit("rsm", "put", "postbox", sizes[i], "bandwidth", "MB/s", &put_bw[i]);
    for (unsigned i = 0; i < n; i++)
        emit("rsm", "get", "postbox", sizes[i], "bandwidth", "MB/s", &get_bw[i]);
    pb_bench_table_begin(&g.out, "Machine limit: memcpy within one process (warm buffers)", "MB/s");
    for (unsigned i = 0; i < n; i++) {
        pb_bench_record_t r = record_make("raw", "memcpy", "raw", sizes[i], "bandwidth", "MB/s");

        r.ranks = 1;
        r.pairs = 0;
        r.stats = cpy_bw[i].st;
        r.probe_before = cpy_bw[i].pre;
        r.probe_after = cpy_bw[i].post;
        pb_bench_record_emit(&g.out, &r);
    }
}

/* ---- ping-pong ---------------------------------------------------------- */

typedef struct {
    pp_kind_t kind;
    size_t size;
} pp_arg_t;

static int op_pingpong(void *arg, uint64_t iters)
{
    const pp_arg_t *a = arg;

    for (uint64_t i = 0; i < iters; i++) {
        uint64_t v = ++g.seq;

        pp_send(&g.pp, a->kind, a->size, v);
        if (pp_wait(&g.pp, a->kind, a->size, v) != v) {
            fprintf(stderr, "postbox-rsm-bench: the peer stopped answering (%s, %zu B)\n",
                    pp_test[a->kind], a->size);
            die();
        }
    }
    return 0;
}

/* One ping-pong figure, half round trip in us, with probes around it. */
static void measure_pingpong(pp_kind_t kind, size_t size, measured_t *m)
{
    static const uint32_t msg_type[] = {MSG_PP_MAP, MSG_PP_PUT, MSG_PP_SIGNAL};
    pp_arg_t a = {.kind = kind, .size = size};
    peer_msg_t reply;

    /* probes only while the responder sleeps: it would take their core */
    m->pre = probe();
    msg_send(msg_type[kind], size, g.seq + 1, 0);
    pb_bench_sample_run(&g.opts, op_pingpong, &a, &m->st);
    pp_send(&g.pp, kind, size, ++g.seq | SEQ_STOP);
    msg_recv(MSG_REPLY, &reply);
    m->post = probe();
    pb_bench_stats_scale(&m->st, 0.5e-3);
}

static void bench_pingpong(void)
{
    size_t sizes[PB_BENCH_SIZES_MAX];
    unsigned n = pb_bench_sizes_make(&g.opts, 8, 4096, 2, 8, sizes);
    measured_t m[3][PB_BENCH_SIZES_MAX];

    n = sizes_aligned(sizes, n, sizeof(uint64_t));
    for (unsigned k = 0; k < 3; k++)
        for (unsigned i = 0; i < n; i++)
            measure_pingpong((pp_kind_t)k, sizes[i], &m[k][i]);
    pb_bench_table_begin(&g.out, "RSM ping-pong half round trip", "us");
    for (unsigned k = 0; k < 3; k++)
        for (unsigned i = 0; i < n; i++)
            emit("rsm", pp_test[k], "postbox", sizes[i], "latency", "us", &m[k][i]);
}

/* Raw cache-line ping-pong through the probe helper, half round trip in ns. */
static void measure_cacheline(measured_t *m)
{
    m->pre = probe();
    if (pb_bench_probe_start() != 0) {
        fprintf(stderr, "postbox-rsm-bench: no probe helper\n");
        die();
    }
    pb_bench_sample_run(&g.opts, pb_bench_probe_op, NULL, &m->st);
    pb_bench_probe_stop();
    m->post = probe();
    pb_bench_stats_scale(&m->st, 0.5);
}

static void bench_cacheline(void)
{
    measured_t m;
    pb_bench_record_t r = record_make("raw", "cacheline_pingpong", "raw", 64, "latency", "us");

    measure_cacheline(&m);
    pb_bench_stats_scale(&m.st, 1e-3);
    r.stats = m.st;
    r.probe_before = m.pre;
    r.probe_after = m.post;
    pb_bench_table_begin(&g.out, "Machine limit: cache-line ping-pong half round trip", "us");
    pb_bench_record_emit(&g.out, &r);
}

/* ---- ratios ------------------------------------------------------------- */

static void bench_ratios(void)
{
    unsigned n = pb_bench_ratio_pairs(&g.opts);
    pb_bench_ratio_pair_t lat[PB_BENCH_RATIO_PAIRS], bw[PB_BENCH_RATIO_PAIRS];
    pb_bench_record_t rec[2];
    char note[2][PB_BENCH_RATIO_NOTE_LEN];
    size_arg_t big = {.size = RATIO_SIZE_BW};

    printf("\n== Ratios (interleaved pairs; A between probes 1-2, B between 2-3)\n");
    for (unsigned i = 0; i < n; i++) {
        measured_t a, b;

        measure_pingpong(PP_PUT, RATIO_SIZE_LAT, &a);
        measure_cacheline(&b);
        lat[i] = (pb_bench_ratio_pair_t){.a = a.st.median * 1e3,
                                         .b = b.st.median,
                                         .ratio = a.st.median * 1e3 / b.st.median,
                                         .p0 = a.pre,
                                         .p1 = a.post,
                                         .p2 = b.post};

        measure_op(op_put, &big, &a);
        measure_op(op_memcpy, &big, &b);
        pb_bench_stats_to_bandwidth(&a.st, RATIO_SIZE_BW);
        pb_bench_stats_to_bandwidth(&b.st, RATIO_SIZE_BW);
        bw[i] = (pb_bench_ratio_pair_t){.a = a.st.median,
                                        .b = b.st.median,
                                        .ratio = a.st.median / b.st.median,
                                        .p0 = a.pre,
                                        .p1 = a.post,
                                        .p2 = b.post};
    }
    rec[0] = record_make("rsm", "ratio_pingpong_put_64_vs_cacheline", "postbox", RATIO_SIZE_LAT,
                         "ratio", "x");
    pb_bench_ratio_make(&g.opts, "put ping-pong 64 B half round trip", "cache-line half round trip",
                        "ns", lat, n, 1.5, true, &rec[0], note[0]);
    rec[1] = record_make("rsm", "ratio_put_4MB_vs_memcpy", "postbox", RATIO_SIZE_BW, "ratio", "x");
    pb_bench_ratio_make(&g.opts, "put 4 MB bandwidth", "memcpy 4 MB bandwidth", "MB/s", bw, n, 0.8,
                        false, &rec[1], note[1]);
    pb_bench_table_begin(&g.out, "Ratios (acceptance figures)", "x");
    pb_bench_record_emit(&g.out, &rec[0]);
    pb_bench_record_emit(&g.out, &rec[1]);
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
    uint64_t t0 = pb_bench_time_now();
    int ret;

    ret = pb_bench_opts_parse(&g.opts, argc, argv,
                              "Time the Postbox RSM API (Qian et al. 2006, Table III, Fig. 6,\n"
                              "Fig. 7), RSM ping-pong and the machine's limits, between two\n"
                              "processes over the shm controller, and print the acceptance\n"
                              "ratios.",
                              "postbox-rsm-bench --quick --json results/rsm.jsonl");
    if (ret != 0)
        return ret > 0 ? 0 : 2;
    if (pb_bench_out_open(&g.out, &g.opts) != 0)
        return 1;
    if (pb_bench_probe_init() != 0)
        return 1;
    peer_start();

    printf("postbox-rsm-bench: controller shm, 2 processes on %s; latency in us, probes in ns\n",
           g.out.host);
    printf("timer overhead %.1f ns, cache-line probe %.1f ns\n", pb_bench_time_overhead(), probe());
    measure_cycle(CTL_NSLOTS, cycle_controller, NULL, table3_ctl);
    parent_setup();
    bench_table3();
    bench_fig6();
    bench_fig7();
    bench_pingpong();
    bench_cacheline();
    bench_ratios();
    parent_teardown();

    pb_bench_probe_fini();
    pb_bench_out_close(&g.out);
    printf("\ndone in %.1f s\n", (double)(pb_bench_time_now() - t0) * 1e-9);
    return 0;
}
