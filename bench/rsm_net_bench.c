/*
 * postbox-rsm-net-bench: the RSM tcp transport between two ranks on two
 * nodes (suite "rsm", library "postbox"), beside the machine's raw TCP and
 * UDP references measured in the same run between the same two processes
 * (suite "raw", library "raw", rawnet.[ch]), and the transport's two
 * acceptance ratios.
 *
 * It runs only as `postbox run -n 2 --nodes 2 [--netns]`.  Each rank
 * exports SEG_SIZE bytes on controller "tcp" (or "ofi" with
 * POSTBOX_TRANSPORT=ofi: then the RSM figures are named ofi_*, and
 * ofi_call, which that transport cannot run, is left out), publishes the segment, puts
 * its id in the job's key-value space (KEY_SEG<rank>) and, after the fence,
 * imports the other rank's segment from node postbox_job_node(other), in
 * RSM_BARRIER_MODE_EXPLICIT.  Rank 1 also listens for the raw client and
 * publishes its address (KEY_ADDR, POSTBOX_NETNS_ADDR under --netns, else
 * 127.0.0.1), as postbox-net-bench does.
 *
 * Rank 0 times every figure and writes the records; rank 1 answers the
 * commands rank 0 sends on the raw TCP connection.  rawnet serves the raw
 * tests; the RSM ping-pongs are CMD_PUT_PINGPONG and CMD_SIGNAL_PINGPONG,
 * each followed by the first sequence number (8 bytes), and rank 1 sends
 * one byte on the connection once it has seen the STOP message.  For
 * tcp_get, tcp_call, tcp_put_stream and tcp_put_barrier rank 1 does nothing:
 * its RSM service thread serves them while it sleeps in recv for the next
 * command (a call runs the handler each rank sets on its segment,
 * call_read: the reply is the segment's first bytes, as many as the request
 * is long).  tcp_put_barrier (8 bytes only) is one put closed by its own
 * barrier each time: the RSM form of an MPI_Put and its MPI_Win_flush, the
 * reference of issue 15's one-sided bench across two nodes.
 *
 * Ping-pong message layout (both directions), for a message of @size bytes
 * at offset 0 of the receiver's segment, as in postbox-rsm-bench:
 *
 *   [0, size-8)      payload
 *   [size-8, size)   sequence number, written last; SEQ_STOP asks the
 *                    responder to stop
 *
 * Every message is a putv with RSM_IMPLICIT_SIGPOST (the put and its
 * signal, sent by the tcp transport as one frame); the receiver sleeps in rsm_intr_signal_wait on
 * its own export (the waiting thread reads the sockets itself), then checks the sequence number in
 * its own memory.  The signal ping-pong sends signals only; its STOP message is an 8-byte put of
 * the stop word at offset 0 before the last signal. Sequence numbers grow over the whole run, so
 * stale words never match.
 */
#include "engine.h"
#include "rawnet.h"

#include <postbox/job.h>
#include <postbox/rsm.h>

#include <arpa/inet.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PROG "postbox-rsm-net-bench"
#define KEY_SEG "rsm-net-seg-"       /* + rank: the segment id */
#define KEY_IMPORT "rsm-net-import-" /* + rank: how its import went */
#define KEY_ADDR "rsm-net-raw-addr"  /* rank 1's raw listener, ip:port */
#define SEG_SIZE ((size_t)4 << 20)   /* each rank's segment: the largest message */
#define SEQ_STOP (UINT64_C(1) << 63)
#define SIGNAL_WAIT_MS 10000 /* no ping-pong signal by then: the peer is stuck */
#define RATIO_SIZE_LAT ((size_t)8)
#define RATIO_SIZE_BW SEG_SIZE
#define RATIO_TARGET_LAT 1.2
#define RATIO_TARGET_BW 0.9
#define NOTE_LEN 192

enum {
    CMD_PUT_PINGPONG = PB_RAWNET_CMD_USER,
    CMD_SIGNAL_PINGPONG,
    CMD_PUT_SERVICE_PINGPONG
};

typedef enum {
    PP_PUT,        /* putv + implicit signal; the receiver in signal_wait */
    PP_SIGNAL,     /* signals only */
    PP_PUT_SERVICE /* as PP_PUT; the receiver in signal_wait_pollfd */
} pp_kind_t;

/* its test name */
static const char *const pp_test[] = {
    [PP_PUT] = "tcp_put_pingpong",
    [PP_SIGNAL] = "tcp_signal_pingpong",
    [PP_PUT_SERVICE] = "tcp_put_pingpong_service",
};

/* the command that asks rank 1 to answer ping-pong @kind */
static const uint32_t pp_cmd[] = {
    [PP_PUT] = CMD_PUT_PINGPONG,
    [PP_SIGNAL] = CMD_SIGNAL_PINGPONG,
    [PP_PUT_SERVICE] = CMD_PUT_SERVICE_PINGPONG,
};

/* ---- state and failures ------------------------------------------------- */

/* Statistics of one figure, with the probes around it. */
typedef struct {
    pb_bench_stats_t st;
    double pre, post;
} measured_t;

/* The state of either rank. */
typedef struct {
    pb_bench_opts_t opts;
    pb_bench_out_t out;
    int rank, nodes;
    bool netns;               /* POSTBOX_NETNS_ADDR set: across the veth pair */
    char ip[INET_ADDRSTRLEN]; /* rank 1's raw address */
    const char *transport;    /* POSTBOX_TRANSPORT: "tcp" (default) or "ofi" */
    rsmapi_controller_handle_t ctl;
    char *local; /* own exported memory, SEG_SIZE */
    rsm_memseg_export_handle_t exp;
    rsm_memseg_id_t segid;
    rsm_memseg_import_handle_t imp; /* the other rank's segment */
    rsmapi_barrier_t bar;
    struct pollfd pfd;             /* of the own export, for PP_PUT_SERVICE */
    char *msg;                     /* source of puts, destination of gets: SEG_SIZE */
    uint64_t seq;                  /* last sequence number used */
    pb_rawnet_client_t net;        /* rank 0 */
    pb_rawnet_listener_t listener; /* rank 1 */
    int server_fd;                 /* rank 1: the connection from rank 0 */
} bench_t;

static bench_t g;

/* The name of an RSM figure over this run's transport: @tcp_name ("tcp_get")
 * with its "tcp" replaced by the transport's name ("ofi_get"). */
static const char *rsm_name(const char *tcp_name)
{
    static char names[16][48];
    static unsigned used;

    if (strcmp(g.transport, "tcp") == 0 || strncmp(tcp_name, "tcp", 3) != 0)
        return tcp_name;
    for (unsigned i = 0; i < used; i++) {
        if (strcmp(names[i] + strlen(g.transport), tcp_name + 3) == 0)
            return names[i];
    }
    if (used == 16)
        return tcp_name;
    snprintf(names[used], sizeof(names[used]), "%s%s", g.transport, tcp_name + 3);
    return names[used++];
}

/* Whether the transport runs calls (pb_rsm_memseg_import_call): ofi does not. */
static bool transport_calls(void)
{
    return strcmp(g.transport, "tcp") == 0;
}

/* After a failure: stop the probe helper and exit 1 (the launcher then ends
 * the other rank). */
static _Noreturn void die(void)
{
    pb_bench_probe_fini();
    exit(1);
}

/* Exit with the call's name and the error text unless @ret is RSM_SUCCESS. */
static void check(int ret, const char *call)
{
    if (ret == RSM_SUCCESS)
        return;
    fprintf(stderr, PROG " (rank %d): %s failed: %s (%d)\n", g.rank, call, rsm_strerror(ret), ret);
    die();
}

/* Report @msg about this rank and exit 1. */
static _Noreturn void fail_msg(const char *msg)
{
    fprintf(stderr, PROG " (rank %d): %s\n", g.rank, msg);
    die();
}

/* Page-aligned, touched, private memory of @size bytes (a page multiple). */
static char *page_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        fail_msg("mmap failed");
    memset(p, 0x5a, size);
    return p;
}

/* ---- setup: segments, key-value space, import --------------------------- */

/* The segment's call handler (pb_rsm_call_handler_t): reply with as many
 * of the segment's first bytes as the request is long, as a get of that
 * size would. */
static void call_read(void *arg, void *seg_base, size_t seg_size, const void *request,
                      size_t request_len, void *reply, size_t reply_max, size_t *reply_len)
{
    size_t len = request_len < reply_max ? request_len : reply_max;

    (void)arg, (void)request;
    if (len > seg_size)
        len = seg_size;
    if (len > 0)
        memcpy(reply, seg_base, len);
    *reply_len = len;
}

/* Put @key<rank> = @value, or die. */
static void kvs_put_mine(const char *key, const char *value)
{
    char name[POSTBOX_JOB_KVS_KEY_MAX];

    snprintf(name, sizeof(name), "%s%d", key, g.rank);
    if (postbox_job_kvs_put(name, value) != 0)
        fail_msg("postbox_job_kvs_put failed");
}

/* Get @key<rank> into @value (POSTBOX_JOB_KVS_VALUE_MAX bytes), or die. */
static void kvs_get_of(const char *key, int rank, char *value)
{
    char name[POSTBOX_JOB_KVS_KEY_MAX];

    snprintf(name, sizeof(name), "%s%d", key, rank);
    if (postbox_job_kvs_get(name, value, POSTBOX_JOB_KVS_VALUE_MAX) != 0)
        fail_msg("postbox_job_kvs_get failed");
}

/* Export and publish this rank's segment, and make the raw listener on
 * rank 1; publish both through the job's key-value space and fence. */
static void setup_export(void)
{
    char value[POSTBOX_JOB_KVS_VALUE_MAX];
    char name[8]; /* (rsm_get_controller takes a char *) */

    snprintf(name, sizeof(name), "%s", g.transport);
    check(rsm_get_controller(name, &g.ctl), "rsm_get_controller");
    g.local = page_alloc(SEG_SIZE);
    g.msg = page_alloc(SEG_SIZE);
    check(rsm_memseg_export_create(g.ctl, &g.exp, g.local, SEG_SIZE, 0),
          "rsm_memseg_export_create");
    check(rsm_memseg_export_publish(g.exp, &g.segid, NULL, 0), "rsm_memseg_export_publish");
    check(pb_rsm_memseg_export_set_handler(g.exp, call_read, NULL),
          "pb_rsm_memseg_export_set_handler");
    check(rsm_memseg_get_pollfd(g.exp, &g.pfd), "rsm_memseg_get_pollfd");
    snprintf(value, sizeof(value), "%u", (unsigned)g.segid);
    kvs_put_mine(KEY_SEG, value);
    if (g.rank == 1) {
        pb_rawnet_listen(&g.listener, g.ip);
        snprintf(value, sizeof(value), "%s:%u", g.ip, (unsigned)g.listener.tcp_port);
        if (postbox_job_kvs_put(KEY_ADDR, value) != 0)
            fail_msg("postbox_job_kvs_put failed");
    }
    if (postbox_job_fence() != 0)
        fail_msg("postbox_job_fence failed");
}

/*
 * Import the other rank's segment, then tell each other how it went (a
 * failed import on one side must not leave the other waiting).
 */
static void setup_import(void)
{
    int other = 1 - g.rank;
    rsm_node_id_t node = postbox_job_node(other);
    char value[POSTBOX_JOB_KVS_VALUE_MAX];
    unsigned long segid;
    int ret, other_ret;

    kvs_get_of(KEY_SEG, other, value);
    segid = strtoul(value, NULL, 10);
    ret = rsm_memseg_import_connect(g.ctl, node, (rsm_memseg_id_t)segid, RSM_PERM_RDWR, &g.imp);
    snprintf(value, sizeof(value), "%d", ret);
    kvs_put_mine(KEY_IMPORT, value);
    if (postbox_job_fence() != 0)
        fail_msg("postbox_job_fence failed");
    kvs_get_of(KEY_IMPORT, other, value);
    other_ret = atoi(value);
    if (ret != RSM_SUCCESS || other_ret != RSM_SUCCESS) {
        int bad = ret != RSM_SUCCESS ? ret : other_ret;
        int who = ret != RSM_SUCCESS ? g.rank : other;

        if (g.rank == 0)
            fprintf(stderr,
                    PROG ": rank %d cannot import the segment of rank %d%s: "
                         "rsm_memseg_import_connect failed: %s (%d)\n",
                    who, 1 - who, g.netns ? " across --netns" : "", rsm_strerror(bad), bad);
        die();
    }
    check(rsm_memseg_import_set_mode(g.imp, RSM_BARRIER_MODE_EXPLICIT),
          "rsm_memseg_import_set_mode");
    check(rsm_memseg_import_init_barrier(g.imp, RSM_BAR_DEFAULT, &g.bar),
          "rsm_memseg_import_init_barrier");
}

/* Undo setup_export and setup_import; the fence keeps each export
 * published until the other rank has disconnected. */
static void teardown(void)
{
    check(rsm_memseg_import_destroy_barrier(&g.bar), "rsm_memseg_import_destroy_barrier");
    check(rsm_memseg_import_disconnect(g.imp), "rsm_memseg_import_disconnect");
    if (postbox_job_fence() != 0)
        fail_msg("postbox_job_fence failed");
    check(rsm_memseg_release_pollfd(g.exp), "rsm_memseg_release_pollfd");
    check(rsm_memseg_export_unpublish(g.exp), "rsm_memseg_export_unpublish");
    check(rsm_memseg_export_destroy(g.exp), "rsm_memseg_export_destroy");
    check(rsm_release_controller(g.ctl), "rsm_release_controller");
    munmap(g.local, SEG_SIZE);
    munmap(g.msg, SEG_SIZE);
}

/* ---- ping-pong, both sides ---------------------------------------------- */

/* The sequence word of a message of @size bytes in @base. */
static _Atomic uint64_t *seq_word(char *base, size_t size)
{
    return (_Atomic uint64_t *)(base + size - sizeof(uint64_t));
}

/* Bytes a ping-pong message of @kind carries: the whole @size for puts; the
 * 8-byte stop word of a signal ping-pong. */
static size_t pp_bytes(pp_kind_t kind, size_t size)
{
    return kind != PP_SIGNAL ? size : sizeof(uint64_t);
}

/* Send message @v to the other rank: the message (for PP_PUT, or a stop
 * word) by putv with RSM_IMPLICIT_SIGPOST, which the transport sends with
 * its signal as one message; a bare signal otherwise. */
static void pp_send(pp_kind_t kind, size_t size, uint64_t v)
{
    if (kind != PP_SIGNAL || (v & SEQ_STOP)) {
        size_t n = pp_bytes(kind, size);
        rsm_iovec_t io = {.io_type = RSM_VA_TYPE, .local.vaddr = g.msg, .transfer_length = n};
        rsm_scat_gath_t sg = {.io_request_count = 1,
                              .flags = RSM_IMPLICIT_SIGPOST,
                              .remote_handle = g.imp,
                              .iovec = &io};

        memcpy(g.msg + n - sizeof(v), &v, sizeof(v));
        check(rsm_memseg_import_putv(&sg), "rsm_memseg_import_putv");
        return;
    }
    check(rsm_intr_signal_post(g.imp, 0), "rsm_intr_signal_post");
}

/* Sleep in the library until the other rank's signal; return the sequence
 * word of the message it announces. */
static uint64_t pp_wait(pp_kind_t kind, size_t size)
{
    if (kind == PP_PUT_SERVICE) {
        int ready = 0;

        /* a pollfd wait sleeps on the event word and does not read the
         * sockets: the service thread does, and wakes it */
        check(rsm_intr_signal_wait_pollfd(&g.pfd, 1, SIGNAL_WAIT_MS, &ready),
              "rsm_intr_signal_wait_pollfd");
        if (ready != 1 || !(g.pfd.revents & POLLRDNORM))
            fail_msg("rsm_intr_signal_wait_pollfd returned without the event");
        return atomic_load_explicit(seq_word(g.local, pp_bytes(kind, size)), memory_order_acquire);
    }
    check(rsm_intr_signal_wait(g.exp, SIGNAL_WAIT_MS), "rsm_intr_signal_wait");
    /* acquire: the put that came before the signal is in our memory */
    return atomic_load_explicit(seq_word(g.local, pp_bytes(kind, size)), memory_order_acquire);
}

/* Die because the sequence word @got is not @want. */
static _Noreturn void pp_wrong(pp_kind_t kind, size_t size, uint64_t got, uint64_t want)
{
    char msg[160];

    snprintf(msg, sizeof(msg),
             "%s ping-pong of %zu B: sequence word %#llx after the signal, expected %#llx",
             kind != PP_SIGNAL ? "put" : "signal", size, (unsigned long long)got,
             (unsigned long long)want);
    fail_msg(msg);
}

/* ---- rank 1: the responder ---------------------------------------------- */

/* Answer ping-pong messages from sequence number @first on until the STOP
 * message, then send one byte on the connection. */
static void serve_pingpong(pp_kind_t kind, size_t size, uint64_t first)
{
    char done = 0;

    check(rsm_memseg_import_open_barrier(&g.bar), "rsm_memseg_import_open_barrier");
    for (uint64_t expect = first;; expect++) {
        uint64_t v = pp_wait(kind, size);

        if ((v & SEQ_STOP) && (v & ~SEQ_STOP) >= first)
            break;
        if (kind != PP_SIGNAL && v != expect)
            pp_wrong(kind, size, v, expect);
        pp_send(kind, size, expect);
    }
    check(rsm_memseg_import_close_barrier(&g.bar), "rsm_memseg_import_close_barrier");
    pb_rawnet_send_all(g.server_fd, &done, 1);
}

/* Accept rank 0 and answer its commands until PB_RAWNET_CMD_QUIT. */
static void server_main(void)
{
    char *buf = pb_rawnet_buf_alloc(PB_RAWNET_BUF_SIZE);

    g.server_fd = pb_rawnet_accept(&g.listener);
    for (;;) {
        pb_rawnet_cmd_t c;
        uint64_t first;
        pp_kind_t kind;

        pb_rawnet_cmd_recv(g.server_fd, &c);
        if (c.cmd == PB_RAWNET_CMD_QUIT)
            break;
        if (pb_rawnet_serve(&g.listener, g.server_fd, buf, &c))
            continue;
        for (kind = PP_PUT; kind <= PP_PUT_SERVICE && pp_cmd[kind] != c.cmd; kind++)
            ;
        if (kind > PP_PUT_SERVICE || c.size < sizeof(uint64_t) || c.size > SEG_SIZE)
            pb_rawnet_fail_msg("unknown command from the client");
        pb_rawnet_recv_all(g.server_fd, &first, sizeof(first));
        pb_rawnet_where(rsm_name(pp_test[kind]), c.size);
        serve_pingpong(kind, c.size, first);
        pb_rawnet_where(NULL, 0);
    }
    pb_rawnet_server_close(&g.listener, g.server_fd);
    free(buf);
}

/* ---- rank 0: the timed operations --------------------------------------- */

typedef struct {
    pp_kind_t kind;
    size_t size;
} pp_arg_t;

/* pb_bench_op_func_t: @iters round trips of ping-pong @arg. */
static int op_pingpong(void *arg, uint64_t iters)
{
    const pp_arg_t *a = arg;

    for (uint64_t i = 0; i < iters; i++) {
        uint64_t v = ++g.seq, got;

        pp_send(a->kind, a->size, v);
        got = pp_wait(a->kind, a->size);
        if (a->kind != PP_SIGNAL && got != v)
            pp_wrong(a->kind, a->size, got, v);
    }
    return 0;
}

/* pb_bench_op_func_t: @iters gets of *@arg bytes. */
static int op_get(void *arg, uint64_t iters)
{
    size_t size = *(const size_t *)arg;

    for (uint64_t i = 0; i < iters; i++)
        check(rsm_memseg_import_get(g.imp, 0, g.msg, size), "rsm_memseg_import_get");
    return 0;
}

/* pb_bench_op_func_t: @iters calls of *@arg bytes whose replies are as
 * long (call_read). */
static int op_call(void *arg, uint64_t iters)
{
    size_t size = *(const size_t *)arg, got;

    for (uint64_t i = 0; i < iters; i++)
        check(pb_rsm_memseg_import_call(g.imp, g.local, size, g.msg, size, &got, 0),
              "pb_rsm_memseg_import_call");
    return 0;
}

/* pb_bench_op_func_t: one barrier span of @iters puts of *@arg bytes, until
 * close_barrier says they are all in the other rank's memory. */
static int op_put_stream(void *arg, uint64_t iters)
{
    size_t size = *(const size_t *)arg;

    check(rsm_memseg_import_open_barrier(&g.bar), "rsm_memseg_import_open_barrier");
    for (uint64_t i = 0; i < iters; i++)
        check(rsm_memseg_import_put(g.imp, 0, g.msg, size), "rsm_memseg_import_put");
    check(rsm_memseg_import_close_barrier(&g.bar), "rsm_memseg_import_close_barrier");
    return 0;
}

/* pb_bench_op_func_t: @iters times one put of *@arg bytes in a barrier span
 * of its own (open, put, close: the put is in the other rank's memory). */
static int op_put_barrier(void *arg, uint64_t iters)
{
    size_t size = *(const size_t *)arg;

    for (uint64_t i = 0; i < iters; i++) {
        g.msg[0] = (char)i; /* a new value each time */
        check(rsm_memseg_import_open_barrier(&g.bar), "rsm_memseg_import_open_barrier");
        check(rsm_memseg_import_put(g.imp, 0, g.msg, size), "rsm_memseg_import_put");
        check(rsm_memseg_import_close_barrier(&g.bar), "rsm_memseg_import_close_barrier");
    }
    return 0;
}

/* Cache-line probe in ns, or -1 with --no-probe. */
static double probe(void)
{
    return g.opts.no_probe ? -1.0 : pb_bench_probe_measure();
}

/* One RSM ping-pong figure: half round trip in us. */
static void measure_pingpong(pp_kind_t kind, size_t size, measured_t *m)
{
    pp_arg_t a = {.kind = kind, .size = size};
    uint64_t first = g.seq + 1;
    char done;

    /* probes only while rank 1 sleeps in recv */
    m->pre = probe();
    pb_rawnet_cmd_send(&g.net, pp_cmd[kind], size);
    pb_rawnet_send_all(g.net.fd, &first, sizeof(first));
    check(rsm_memseg_import_open_barrier(&g.bar), "rsm_memseg_import_open_barrier");
    pb_bench_sample_run(&g.opts, op_pingpong, &a, &m->st);
    pp_send(kind, size, ++g.seq | SEQ_STOP);
    check(rsm_memseg_import_close_barrier(&g.bar), "rsm_memseg_import_close_barrier");
    pb_rawnet_recv_all(g.net.fd, &done, 1);
    m->post = probe();
    pb_bench_stats_scale(&m->st, 0.5e-3);
}

/* One figure of @op on @size bytes: time per call in us (@bw: MB/s). */
static void measure_op(pb_bench_op_func_t op, size_t size, bool bw, measured_t *m)
{
    m->pre = probe();
    pb_bench_sample_run(&g.opts, op, &size, &m->st);
    m->post = probe();
    if (bw)
        pb_bench_stats_to_bandwidth(&m->st, size);
    else
        pb_bench_stats_scale(&m->st, 1e-3);
}

/* One figure of raw test @t at @size bytes. */
static void measure_raw(unsigned t, size_t size, measured_t *m)
{
    m->pre = probe();
    pb_rawnet_measure(&g.opts, &g.net, &pb_rawnet_tests[t], size, &m->st);
    m->post = probe();
}

/* ---- rank 0: the tests and their records -------------------------------- */

enum {
    T_PUT_PINGPONG,
    T_PUT_PINGPONG_SERVICE,
    T_SIGNAL_PINGPONG,
    T_GET,
    T_CALL,
    T_PUT_STREAM,
    T_PUT_BARRIER,
    T_TCP_PINGPONG,
    T_UDP_PINGPONG,
    T_TCP_STREAM,
    T_NTESTS
};

typedef struct {
    const char *suite, *test, *library, *transport, *metric, *unit, *what;
} test_desc_t;

/* the raw tests' entries are copied from rawnet's table by tests_describe */
static test_desc_t tests[T_NTESTS] = {
    [T_PUT_PINGPONG] = {"rsm", "tcp_put_pingpong", "postbox", "tcp", "latency", "us",
                        "putv of the message with RSM_IMPLICIT_SIGPOST (one frame), the "
                        "receiver in signal_wait, explicit barrier mode"},
    [T_PUT_PINGPONG_SERVICE] = {"rsm", "tcp_put_pingpong_service", "postbox", "tcp", "latency",
                                "us",
                                "as tcp_put_pingpong, but the receiver waits in "
                                "signal_wait_pollfd: the RSM service thread reads the socket and "
                                "wakes it (the one-sided path)"},
    [T_SIGNAL_PINGPONG] = {"rsm", "tcp_signal_pingpong", "postbox", "tcp", "latency", "us",
                           "signal_post / signal_wait only"},
    [T_GET] = {"rsm", "tcp_get", "postbox", "tcp", "latency", "us",
               "one get of the size: a full round trip, not halved"},
    [T_CALL] = {"rsm", "tcp_call", "postbox", "tcp", "latency", "us",
                "one call of the size with a reply as long (pb_rsm_memseg_import_call, the "
                "handler run by the other rank's service thread): a full round trip"},
    [T_PUT_STREAM] = {"rsm", "tcp_put_stream", "postbox", "tcp", "bandwidth", "MB/s",
                      "a sample is one barrier span: open, back-to-back puts, close returned"},
    [T_PUT_BARRIER] = {"rsm", "tcp_put_barrier", "postbox", "tcp", "latency", "us",
                       "one put in a barrier span of its own: open, put, close returned"},
};

/* What the records share: the job's shape, the path and the config. */
typedef struct {
    const char *config; /* "loopback" or "netns" */
    const char *path;   /* "loopback" or "veth" */
    char note[T_NTESTS][NOTE_LEN];
} run_t;

static run_t run;

/* The record of test @t at @size from @m. */
static pb_bench_record_t record_of(unsigned t, size_t size, const measured_t *m)
{
    const test_desc_t *d = &tests[t];
    pb_bench_record_t r = {
        .suite = d->suite,
        .test = d->test,
        .library = d->library,
        .transport = d->transport,
        .placement = "off-node",
        .ranks = 2,
        .nodes = g.nodes,
        .pairs = 1,
        .size = size,
        .metric = d->metric,
        .unit = d->unit,
        .stats = m->st,
        .probe_before = m->pre,
        .probe_after = m->post,
        .note = run.note[t],
    };

    pb_bench_record_add_str(&r, "config", run.config);
    if (t == T_GET || t == T_CALL)
        pb_bench_record_add_bool(&r, "round_trip", true);
    return r;
}

/* Fill the raw tests' descriptions from rawnet's table, and every note. */
static void tests_describe(void)
{
    static const unsigned raw_of[][2] = {{T_TCP_PINGPONG, PB_RAWNET_TCP_PINGPONG},
                                         {T_UDP_PINGPONG, PB_RAWNET_UDP_PINGPONG},
                                         {T_TCP_STREAM, PB_RAWNET_TCP_STREAM}};

    for (unsigned i = 0; i < sizeof(raw_of) / sizeof(raw_of[0]); i++) {
        const pb_rawnet_test_t *t = &pb_rawnet_tests[raw_of[i][1]];

        tests[raw_of[i][0]] =
            (test_desc_t){"raw", t->test, "raw", t->transport, t->metric, t->unit, t->options};
    }
    for (unsigned t = 0; t < T_NTESTS; t++) {
        if (strcmp(tests[t].suite, "rsm") == 0) {
            tests[t].test = rsm_name(tests[t].test);
            tests[t].transport = g.transport;
        }
        snprintf(run.note[t], NOTE_LEN, "%s; %s via %s", tests[t].what, g.ip, run.path);
    }
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

/* Print and write @n records of test @t, sizes @sizes. */
static void emit_series(unsigned t, const size_t *sizes, const measured_t *m, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        pb_bench_record_t r = record_of(t, sizes[i], &m[i]);

        pb_bench_record_emit(&g.out, &r);
    }
}

/* Every size, each RSM figure next to its raw reference, then the tables;
 * a line per size tells the progress (since @t0) until the tables come. */
static void bench_sizes(uint64_t t0)
{
    static measured_t m[T_NTESTS][PB_BENCH_SIZES_MAX];
    size_t sizes[PB_BENCH_SIZES_MAX], udp[PB_BENCH_SIZES_MAX];
    unsigned n = pb_bench_sizes_make(&g.opts, sizeof(uint64_t), SEG_SIZE, 2, 16, sizes);
    unsigned nudp = 0;
    measured_t sig, service, call, put_barrier;

    n = sizes_aligned(sizes, n, sizeof(uint64_t));
    measure_pingpong(PP_SIGNAL, sizeof(uint64_t), &sig);
    measure_pingpong(PP_PUT_SERVICE, RATIO_SIZE_LAT, &service);
    if (transport_calls())
        measure_op(op_call, RATIO_SIZE_LAT, false, &call);
    measure_op(op_put_barrier, RATIO_SIZE_LAT, false, &put_barrier);
    for (unsigned i = 0; i < n; i++) {
        measure_pingpong(PP_PUT, sizes[i], &m[T_PUT_PINGPONG][i]);
        measure_raw(PB_RAWNET_TCP_PINGPONG, sizes[i], &m[T_TCP_PINGPONG][i]);
        measure_op(op_get, sizes[i], false, &m[T_GET][i]);
        if (sizes[i] <= PB_RAWNET_UDP_MAX) {
            measure_raw(PB_RAWNET_UDP_PINGPONG, sizes[i], &m[T_UDP_PINGPONG][nudp]);
            udp[nudp++] = sizes[i];
        }
        measure_op(op_put_stream, sizes[i], true, &m[T_PUT_STREAM][i]);
        measure_raw(PB_RAWNET_TCP_STREAM, sizes[i], &m[T_TCP_STREAM][i]);
        printf("  %zu B measured at %.1f s\n", sizes[i], (double)(pb_bench_time_now() - t0) * 1e-9);
        fflush(stdout);
    }

    static char titles[4][96];

    snprintf(titles[0], sizeof(titles[0]),
             "RSM over %s: ping-pong half round trip (signal: size 0)", g.transport);
    snprintf(titles[1], sizeof(titles[1]), "RSM over %s: get%s, a full round trip (not halved)",
             g.transport, transport_calls() ? " and call" : "");
    snprintf(titles[2], sizeof(titles[2]),
             "RSM over %s: one put and its barrier (open, put, close)", g.transport);
    snprintf(titles[3], sizeof(titles[3]),
             "Bandwidth: RSM put stream over %s, raw TCP stream (MB = 10^6 B)", g.transport);
    pb_bench_table_begin(&g.out, titles[0], "us");
    emit_series(T_SIGNAL_PINGPONG, (size_t[]){0}, &sig, 1);
    emit_series(T_PUT_PINGPONG, sizes, m[T_PUT_PINGPONG], n);
    emit_series(T_PUT_PINGPONG_SERVICE, (size_t[]){RATIO_SIZE_LAT}, &service, 1);
    pb_bench_table_begin(&g.out, titles[1], "us");
    emit_series(T_GET, sizes, m[T_GET], n);
    if (transport_calls())
        emit_series(T_CALL, (size_t[]){RATIO_SIZE_LAT}, &call, 1);
    pb_bench_table_begin(&g.out, titles[2], "us");
    emit_series(T_PUT_BARRIER, (size_t[]){RATIO_SIZE_LAT}, &put_barrier, 1);
    pb_bench_table_begin(&g.out, "Raw TCP (TCP_NODELAY) and UDP ping-pong half round trip", "us");
    emit_series(T_TCP_PINGPONG, sizes, m[T_TCP_PINGPONG], n);
    emit_series(T_UDP_PINGPONG, udp, m[T_UDP_PINGPONG], nudp);
    pb_bench_table_begin(&g.out, titles[3], "MB/s");
    emit_series(T_PUT_STREAM, sizes, m[T_PUT_STREAM], n);
    emit_series(T_TCP_STREAM, sizes, m[T_TCP_STREAM], n);
}

/* Fill @rec with the identity of ratio @test (@a over @b) and its target;
 * pb_bench_ratio_make fills in the figures. */
static void ratio_record(pb_bench_record_t *rec, const char *test, size_t size, const char *a,
                         const char *b, double target, bool at_most)
{
    *rec = (pb_bench_record_t){
        .suite = "rsm",
        .test = test,
        .library = "postbox",
        .transport = g.transport,
        .placement = "off-node",
        .ranks = 2,
        .nodes = g.nodes,
        .pairs = 1,
        .size = size,
        .metric = "ratio",
        .unit = "x",
    };
    pb_bench_record_add_str(rec, "config", run.config);
    pb_bench_record_add_num(rec, "target", target);
    pb_bench_record_add_str(rec, "target_op", at_most ? "<=" : ">=");
    pb_bench_record_add_str(rec, "numerator", a);
    pb_bench_record_add_str(rec, "denominator", b);
}

/* The acceptance ratios from interleaved pairs, as postbox-rsm-bench. */
static void bench_ratios(void)
{
    unsigned n = pb_bench_ratio_pairs(&g.opts);
    pb_bench_ratio_pair_t lat[PB_BENCH_RATIO_PAIRS], bw[PB_BENCH_RATIO_PAIRS];
    pb_bench_record_t rec[2];
    static char note[2][PB_BENCH_RATIO_NOTE_LEN];

    printf("\n== Ratios (interleaved pairs; A between probes 1-2, B between 2-3)\n");
    for (unsigned i = 0; i < n; i++) {
        measured_t a, b;

        measure_pingpong(PP_PUT, RATIO_SIZE_LAT, &a);
        measure_raw(PB_RAWNET_TCP_PINGPONG, RATIO_SIZE_LAT, &b);
        lat[i] = (pb_bench_ratio_pair_t){.a = a.st.median,
                                         .b = b.st.median,
                                         .ratio = a.st.median / b.st.median,
                                         .p0 = a.pre,
                                         .p1 = a.post,
                                         .p2 = b.post};
        measure_op(op_put_stream, RATIO_SIZE_BW, true, &a);
        measure_raw(PB_RAWNET_TCP_STREAM, RATIO_SIZE_BW, &b);
        bw[i] = (pb_bench_ratio_pair_t){.a = a.st.median,
                                        .b = b.st.median,
                                        .ratio = a.st.median / b.st.median,
                                        .p0 = a.pre,
                                        .p1 = a.post,
                                        .p2 = b.post};
    }
    static char what[2][64];

    snprintf(what[0], sizeof(what[0]), "%s 8 B half round trip", tests[T_PUT_PINGPONG].test);
    snprintf(what[1], sizeof(what[1]), "%s 4 MB bandwidth", tests[T_PUT_STREAM].test);
    ratio_record(&rec[0], "ratio_put_latency_8B", RATIO_SIZE_LAT, tests[T_PUT_PINGPONG].test,
                 "tcp_pingpong", RATIO_TARGET_LAT, true);
    pb_bench_ratio_make(&g.opts, what[0], "raw tcp_pingpong 8 B half round trip", "us", lat, n,
                        RATIO_TARGET_LAT, true, &rec[0], note[0]);
    ratio_record(&rec[1], "ratio_put_stream_4MB", RATIO_SIZE_BW, tests[T_PUT_STREAM].test,
                 "tcp_stream", RATIO_TARGET_BW, false);
    pb_bench_ratio_make(&g.opts, what[1], "raw tcp_stream 4 MB bandwidth", "MB/s", bw, n,
                        RATIO_TARGET_BW, false, &rec[1], note[1]);
    static char title[64];

    snprintf(title, sizeof(title), "Ratios (acceptance figures of the %s transport)", g.transport);
    pb_bench_table_begin(&g.out, title, "x");
    pb_bench_record_emit(&g.out, &rec[0]);
    pb_bench_record_emit(&g.out, &rec[1]);
}

/* Rank 0: connect to rank 1's raw listener, measure everything, end. */
static void client_main(void)
{
    char value[POSTBOX_JOB_KVS_VALUE_MAX];
    uint16_t port;
    uint64_t t0 = pb_bench_time_now();

    if (postbox_job_kvs_get(KEY_ADDR, value, sizeof(value)) != 0 ||
        pb_rawnet_addr_parse(value, g.ip, sizeof(g.ip), &port) != 0)
        fail_msg("cannot read " KEY_ADDR " of rank 1 (postbox_job_kvs_get)");
    pb_rawnet_connect(&g.net, g.ip, port, PB_RAWNET_BUF_SIZE);
    tests_describe();
    printf(PROG ": RSM over %s between 2 ranks on 2 nodes (%s: %s via %s) on %s\n", g.transport,
           run.config, g.ip, run.path, g.out.host);
    printf("latency in us (ping-pongs: half round trip; get: full round trip), bandwidth in "
           "MB/s (10^6 B/s), probes in ns\n");
    if (g.opts.no_probe)
        printf("timer overhead %.1f ns, no cache-line probes\n", pb_bench_time_overhead());
    else
        printf("timer overhead %.1f ns, cache-line probe %.1f ns\n", pb_bench_time_overhead(),
               probe());
    bench_sizes(t0);
    /* the bandwidth ratio is at RATIO_SIZE_BW: a --max-size below it (a slow
     * emulated link, postbox run --link) leaves the ratios out */
    if (g.opts.max_size == 0 || g.opts.max_size >= RATIO_SIZE_BW)
        bench_ratios();
    else
        printf("\n== Ratios not measured: --max-size %zu is below their %zu B\n", g.opts.max_size,
               RATIO_SIZE_BW);
    pb_rawnet_close(&g.net);
    printf("\ndone in %.1f s\n", (double)(pb_bench_time_now() - t0) * 1e-9);
}

/* ---- main --------------------------------------------------------------- */

/* Whether the job is 2 ranks on 2 nodes; if not rank 0 says so. */
static bool job_shape_ok(void)
{
    int size = postbox_job_size(), nodes = postbox_job_node_count();

    if (size == 2 && postbox_job_node(0) != postbox_job_node(1))
        return true;
    if (g.rank == 0)
        fprintf(stderr,
                PROG ": needs 2 ranks on 2 nodes: postbox run -n 2 --nodes 2 [--netns] " PROG
                     " ...; this job has %d rank%s on %d node%s\n",
                size, size == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
    return false;
}

int main(int argc, char **argv)
{
    const char *netns_addr = getenv("POSTBOX_NETNS_ADDR");
    int ret;

    ret = pb_bench_opts_parse(
        &g.opts, argc, argv,
        "Measure the RSM tcp transport between 2 ranks on 2 nodes (put and signal\n"
        "ping-pong, get, put stream), beside raw TCP ping-pong, TCP stream and UDP\n"
        "ping-pong between the same two processes in the same run, and print the\n"
        "acceptance ratios.  Runs only under `postbox run -n 2 --nodes 2 [--netns]`.",
        "postbox run -n 2 --nodes 2 build/bin/" PROG " --quick --json rsm-net.jsonl");
    if (ret != 0)
        return ret > 0 ? 0 : 2;
    if (postbox_job_init() != 0)
        return 1;
    g.rank = postbox_job_rank();
    g.nodes = postbox_job_node_count();
    g.transport = getenv("POSTBOX_TRANSPORT");
    if (g.transport == NULL || *g.transport == '\0')
        g.transport = "tcp";
    if (strcmp(g.transport, "tcp") != 0 && strcmp(g.transport, "ofi") != 0) {
        fprintf(stderr, PROG ": POSTBOX_TRANSPORT=%s: not tcp or ofi\n", g.transport);
        return 2;
    }
    pb_rawnet_init(PROG, die);
    pb_rawnet_role(g.rank, g.rank == 1);
    if (!job_shape_ok())
        /* rank 0 alone says it and fails: another rank failing first
         * could end the job before rank 0's message is out */
        return g.rank == 0 ? 2 : 0;
    g.netns = netns_addr != NULL && *netns_addr != '\0';
    if (strlen(g.netns ? netns_addr : "127.0.0.1") >= sizeof(g.ip)) {
        fprintf(stderr, PROG ": bad POSTBOX_NETNS_ADDR '%s'\n", netns_addr);
        return 1;
    }
    strcpy(g.ip, g.netns ? netns_addr : "127.0.0.1");
    run.config = g.netns ? "netns" : "loopback";
    run.path = g.netns ? "veth" : "loopback";

    /* the probe helper is forked before the RSM layer starts its thread */
    if (g.rank == 0) {
        if (pb_bench_out_open(&g.out, &g.opts) != 0)
            return 1;
        if (!g.opts.no_probe && pb_bench_probe_init() != 0)
            return 1;
    }
    setup_export();
    setup_import();
    if (g.rank == 0)
        client_main();
    else
        server_main();
    teardown();
    if (g.rank == 0) {
        pb_bench_probe_fini();
        pb_bench_out_close(&g.out);
    }
    postbox_job_finalize();
    return 0;
}
