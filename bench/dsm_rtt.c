/*
 * postbox-dsm-rtt: seed 004's Fig. 13 on this machine.  The DSM's own
 * request/reply round trip, a read fault on a page homed on the other
 * process (the fault, the page's get from its home, the page mapped), beside
 * raw TCP and UDP request/reply round trips between the same two processes
 * in the same run: a request of REQUEST_BYTES (Strings' Get Page request,
 * its Table 1) answered by a reply of 64 B to 4 KB, through plain sockets on
 * the address the tcp transport uses (127.0.0.1, or the --netns address).
 * Also the DSM's small requests: a lock acquired and released, its manager
 * the other process (requests on the manager's control segment, and the
 * release log read at the acquire), timed per pair, with the lock messages
 * each pair sent.  Then the acceptance ratio of issue 17: the 4 KB DSM
 * round trip over the 4 KB raw TCP round trip, from interleaved pairs.
 *
 * Runs only under `postbox run -n 2 [--nodes 2] [--netns]`: process 1 is the
 * home of the pages and the raw server; process 0 measures.  Every figure
 * is a full round trip in us.
 *
 * The pages: one collective allocation from the start of the shared range,
 * every other page of every other block of HOME_BLOCK_PAGES of which is
 * the pool (a page after a pool page is written by no one, so a fault
 * fetches one page, not the run of PB_DSM_FETCH_RUN pages that a fault
 * on consecutive pages of one home fetches, docs/dsm.md).  Process 1
 * writes a pattern into the pool before the first barrier, so it is the
 * home of those pages (a page's home is its first writer, docs/dsm.md); process 0
 * reads the first word of one page per timed operation, then the next page.
 * Between rounds over the pool (untimed) process 0 asks process 1 to write
 * the pattern again and both pass a barrier: the barrier's write notices
 * invalidate the pages in process 0 (docs/dsm.md).  Each timed read is checked
 * against the pattern, and the DSM's page-fetch counter must grow by one per
 * read: a read that fetched nothing fails the program.
 */
#include <errno.h>
#include <postbox/dsm.h>
#include <postbox/job.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine.h"
#include "rawnet.h"

#define PROG "postbox-dsm-rtt"
#define REQUEST_BYTES 40    /* a raw request: Strings' Get Page request (seed 004, Table 1) */
#define HOME_BLOCK_PAGES 16 /* pages of one block of the allocation */
#define POOL_BLOCKS 8       /* blocks allocated: every other one is the pool */
#define POOL_PAGES (POOL_BLOCKS / 2 * HOME_BLOCK_PAGES / 2)
#define DSM_RANGE ((size_t)4 << 20)
#define KEY_ADDR "dsm-rtt-addr"
#define CMD_TCP_RR (PB_RAWNET_CMD_USER + 0) /* TCP request/reply of the command's size */
#define CMD_UDP_RR (PB_RAWNET_CMD_USER + 1) /* UDP request/reply */
#define CMD_TOUCH (PB_RAWNET_CMD_USER + 2)  /* process 1 writes its pages, then the barrier */
#define RATIO_SIZE 4096
#define RATIO_TARGET 1.5

static struct {
    pb_bench_opts_t opts;
    pb_bench_out_t out;
    int me, nodes;
    char ip[64];
    pb_rawnet_listener_t listener;
    pb_rawnet_client_t net;
    size_t page;
    char *pool[POOL_PAGES]; /* pages homed at process 1 */
    unsigned next;          /* next page of the pool to read */
    int remote_lock;        /* a lock managed by process 1 (id mod 2 == 1) */
} g;

static _Noreturn void die(void)
{
    exit(1);
}

static _Noreturn void fail_msg(const char *msg)
{
    fprintf(stderr, PROG " (process %d): %s\n", g.me, msg);
    die();
}

static void check_dsm(int rc, const char *call)
{
    if (rc < 0) {
        fprintf(stderr, PROG " (process %d): %s failed: %s\n", g.me, call,
                postbox_dsm_strerror(rc));
        die();
    }
}

/* the pattern of pool page @i's first word */
static uint64_t pattern(unsigned i)
{
    return UINT64_C(0x5042000000000000) | (i + 1);
}

/* ---- the pages ------------------------------------------------------------ */

/* Process 1: write the pattern into every page of the pool, and the count
 * of these writes into its second word, so that every page changes (its
 * home's release notices it, whether its store faults or the page is
 * compared with its snapshot). */
static void touch_pages(void)
{
    static uint64_t touches;

    touches++;
    for (unsigned i = 0; i < POOL_PAGES; i++) {
        ((volatile uint64_t *)g.pool[i])[0] = pattern(i);
        ((volatile uint64_t *)g.pool[i])[1] = touches;
    }
}

/* Collective: allocate the blocks, find process 1's pages, and have it fill
 * them before the barrier that makes them visible. */
static void pages_setup(void)
{
    size_t block = HOME_BLOCK_PAGES * g.page;
    char *range = postbox_dsm_alloc(POOL_BLOCKS * block);
    unsigned n = 0;

    if (range == NULL)
        check_dsm(postbox_dsm_last_error(), "postbox_dsm_alloc");
    for (unsigned b = 1; b < POOL_BLOCKS; b += 2)
        for (unsigned p = 0; p < HOME_BLOCK_PAGES; p += 2)
            g.pool[n++] = range + b * block + p * g.page;
    if (g.me == 1)
        touch_pages();
    if (g.me == 0) {
        do {
            g.remote_lock = postbox_dsm_lock_create();
            check_dsm(g.remote_lock, "postbox_dsm_lock_create");
        } while (g.remote_lock % 2 != 1);
    }
    check_dsm(postbox_dsm_barrier(0, 2), "postbox_dsm_barrier");
    g.next = POOL_PAGES;
}

/* Process 0: have process 1 write its pages again and pass a barrier with
 * it, which invalidates them here (untimed). */
static void invalidate(void)
{
    pb_rawnet_cmd_send(&g.net, CMD_TOUCH, 1);
    check_dsm(postbox_dsm_barrier(0, 2), "postbox_dsm_barrier");
    g.next = 0;
}

static uint64_t page_fetches(void)
{
    postbox_dsm_stats_t s;

    check_dsm(postbox_dsm_stats(&s), "postbox_dsm_stats");
    return s.page_fetches;
}

/* pb_bench_timed_op_func_t: @iters read faults, each timed alone. */
static int op_dsm_fetch(void *arg, uint64_t iters, uint64_t *ns_p)
{
    uint64_t total = 0, fetched = 0;

    for (uint64_t k = 0; k < iters; k++) {
        uint64_t before, t0, t1, value;

        if (g.next == POOL_PAGES)
            invalidate();
        before = page_fetches();
        t0 = pb_bench_time_now();
        value = *(volatile const uint64_t *)g.pool[g.next];
        t1 = pb_bench_time_now();
        total += t1 - t0;
        fetched += page_fetches() - before;
        if (value != pattern(g.next)) {
            char msg[128];

            snprintf(msg, sizeof(msg), "page %u of the pool reads %#llx, not %#llx", g.next,
                     (unsigned long long)value, (unsigned long long)pattern(g.next));
            fail_msg(msg);
        }
        g.next++;
    }
    if (fetched != iters)
        fail_msg("a read of a page homed on process 1 fetched no page (did the barrier not "
                 "invalidate it, or is a page's home no longer its first writer, docs/dsm.md?)");
    *ns_p = total;
    return 0;
}

static uint64_t lock_messages(void)
{
    postbox_dsm_stats_t s;

    check_dsm(postbox_dsm_stats(&s), "postbox_dsm_stats");
    return s.messages[POSTBOX_DSM_MSG_LOCK];
}

/* pb_bench_op_func_t: @iters acquires and releases of the remote lock. */
static int op_dsm_lock(void *arg, uint64_t iters)
{
    for (uint64_t k = 0; k < iters; k++) {
        check_dsm(postbox_dsm_lock(g.remote_lock), "postbox_dsm_lock");
        check_dsm(postbox_dsm_unlock(g.remote_lock), "postbox_dsm_unlock");
    }
    return 0;
}

/* ---- raw request/reply ---------------------------------------------------- */

/* Server: answer each request of REQUEST_BYTES with @size bytes until the
 * request flagged STOP (answered too). */
static void serve_tcp_rr(int fd, char *buf, size_t size)
{
    for (;;) {
        pb_rawnet_recv_all(fd, buf, REQUEST_BYTES);
        char flag = buf[0];
        pb_rawnet_send_all(fd, buf, size);
        if (flag == PB_RAWNET_FLAG_STOP)
            return;
    }
}

static void serve_udp_rr(int ufd, char *buf, size_t size)
{
    for (;;) {
        struct sockaddr_storage from;
        socklen_t len = sizeof(from);
        ssize_t n = recvfrom(ufd, buf, REQUEST_BYTES + 1, 0, (struct sockaddr *)&from, &len);

        if (n < 0)
            pb_rawnet_fail("recvfrom (UDP)", errno);
        if (n != REQUEST_BYTES)
            pb_rawnet_fail_msg("a request of the wrong size arrived (UDP)");
        char flag = buf[0];
        if (sendto(ufd, buf, size, 0, (struct sockaddr *)&from, len) != (ssize_t)size)
            pb_rawnet_fail("sendto (UDP)", errno);
        if (flag == PB_RAWNET_FLAG_STOP)
            return;
    }
}

static void tcp_rr(pb_rawnet_client_t *c, char flag)
{
    c->tx[0] = flag;
    pb_rawnet_send_all(c->fd, c->tx, REQUEST_BYTES);
    pb_rawnet_recv_all(c->fd, c->rx, c->size);
}

static void udp_rr(pb_rawnet_client_t *c, char flag)
{
    ssize_t n;

    c->tx[0] = flag;
    n = send(c->ufd, c->tx, REQUEST_BYTES, 0);
    if (n != REQUEST_BYTES)
        pb_rawnet_fail("send (UDP)", n < 0 ? errno : EMSGSIZE);
    n = recv(c->ufd, c->rx, c->size + 1, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        pb_rawnet_fail_msg("no reply within the UDP timeout: a datagram was lost");
    if (n < 0)
        pb_rawnet_fail("recv (UDP)", errno);
    if ((size_t)n != c->size)
        pb_rawnet_fail_msg("a reply of the wrong size arrived (UDP)");
}

static int op_tcp_rr(void *arg, uint64_t iters)
{
    for (uint64_t k = 0; k < iters; k++)
        tcp_rr(arg, PB_RAWNET_FLAG_MORE);
    return 0;
}

static int op_udp_rr(void *arg, uint64_t iters)
{
    for (uint64_t k = 0; k < iters; k++)
        udp_rr(arg, PB_RAWNET_FLAG_MORE);
    return 0;
}

/* ---- process 1: the home and the raw server --------------------------------- */

static void server_main(void)
{
    char *buf = pb_rawnet_buf_alloc(PB_RAWNET_BUF_SIZE);
    int fd = pb_rawnet_accept(&g.listener);

    for (;;) {
        pb_rawnet_cmd_t c;

        pb_rawnet_cmd_recv(fd, &c);
        if (c.cmd == PB_RAWNET_CMD_QUIT)
            break;
        if (c.cmd == CMD_TOUCH) {
            touch_pages();
            check_dsm(postbox_dsm_barrier(0, 2), "postbox_dsm_barrier");
        } else if (c.cmd == CMD_TCP_RR && c.size <= PB_RAWNET_BUF_SIZE) {
            pb_rawnet_where("raw_tcp_request_reply", c.size);
            serve_tcp_rr(fd, buf, c.size);
        } else if (c.cmd == CMD_UDP_RR && c.size <= PB_RAWNET_UDP_MAX) {
            pb_rawnet_where("raw_udp_request_reply", c.size);
            serve_udp_rr(g.listener.ufd, buf, c.size);
        } else {
            pb_rawnet_fail_msg("unknown command from the client");
        }
        pb_rawnet_where(NULL, 0);
    }
    pb_rawnet_server_close(&g.listener, fd);
    free(buf);
}

/* ---- process 0: the figures --------------------------------------------------- */

/* One raw figure: @size-byte replies, full round trips in ns into @st. */
static void measure_raw(uint32_t cmd, size_t size, pb_bench_stats_t *st)
{
    g.net.size = size;
    pb_rawnet_where(cmd == CMD_TCP_RR ? "raw_tcp_request_reply" : "raw_udp_request_reply", size);
    pb_rawnet_cmd_send(&g.net, cmd, size);
    pb_bench_sample_run(&g.opts, cmd == CMD_TCP_RR ? op_tcp_rr : op_udp_rr, &g.net, st);
    if (cmd == CMD_TCP_RR)
        tcp_rr(&g.net, PB_RAWNET_FLAG_STOP);
    else
        udp_rr(&g.net, PB_RAWNET_FLAG_STOP);
    pb_rawnet_where(NULL, 0);
}

static void measure_dsm(pb_bench_stats_t *st)
{
    pb_bench_sample_run_timed(&g.opts, op_dsm_fetch, NULL, st);
}

static const char *dsm_transport(void)
{
    return g.nodes > 1 ? "tcp" : "shm";
}

/* A record of the job's shape; the caller fills the test and figures. */
static void record_init(pb_bench_record_t *rec, const char *test, const char *library,
                        const char *transport, size_t size, const pb_bench_stats_t *st)
{
    *rec = (pb_bench_record_t){.suite = "dsm",
                               .test = test,
                               .library = library,
                               .transport = transport,
                               .placement = g.nodes > 1 ? "off-node" : "on-node",
                               .ranks = 2,
                               .nodes = g.nodes,
                               .pairs = 1,
                               .size = size,
                               .metric = "round_trip",
                               .unit = "us",
                               .stats = *st,
                               .probe_before = -1,
                               .probe_after = -1};
    pb_bench_stats_scale(&rec->stats, 1e-3);
    pb_bench_record_add_str(rec, "figure", "seed 004 Fig. 13");
}

static void emit_dsm(const pb_bench_stats_t *st)
{
    pb_bench_record_t rec;

    record_init(&rec, "dsm_page_fetch", "postbox", dsm_transport(), g.page, st);
    pb_bench_record_add_str(&rec, "what",
                            "read fault on a page homed on the other process: fault, RSM get "
                            "of the page from its home, page mapped");
    pb_bench_record_add_num(&rec, "page_size", (double)g.page);
    pb_bench_record_emit(&g.out, &rec);
}

/* The lock pair: its time and the lock messages each pair sent. */
static void bench_lock(void)
{
    pb_bench_stats_t st;
    pb_bench_record_t rec;
    uint64_t before = lock_messages(), per_pair;

    /* the messages of a pair, from 10 pairs run alone */
    op_dsm_lock(NULL, 10);
    per_pair = (lock_messages() - before + 5) / 10;
    pb_bench_sample_run(&g.opts, op_dsm_lock, NULL, &st);
    record_init(&rec, "dsm_lock_pair", "postbox", dsm_transport(), sizeof(uint64_t) * 5, &st);
    pb_bench_record_add_str(&rec, "what",
                            "postbox_dsm_lock + postbox_dsm_unlock of a free lock managed by the "
                            "other process: request/reply exchanges on its control segment");
    pb_bench_record_add_num(&rec, "lock_messages_per_pair", (double)per_pair);
    pb_bench_record_emit(&g.out, &rec);
}

static void emit_raw(uint32_t cmd, size_t size, const pb_bench_stats_t *st)
{
    pb_bench_record_t rec;
    int tcp = cmd == CMD_TCP_RR;

    record_init(&rec, tcp ? "raw_tcp_request_reply" : "raw_udp_request_reply", "raw",
                tcp ? "tcp" : "udp", size, st);
    pb_bench_record_add_num(&rec, "request_bytes", REQUEST_BYTES);
    pb_bench_record_add_str(&rec, "path", g.ip);
    pb_bench_record_add_str(&rec, "options",
                            tcp ? "TCP_NODELAY, blocking send/recv, one connection"
                                : "one datagram each way, blocking send/recv");
    pb_bench_record_emit(&g.out, &rec);
}

/* The ratio from interleaved pairs: the DSM's 4 KB round trip, then raw
 * TCP's; the median of the pairs' ratios. */
static void bench_ratio(void)
{
    unsigned n = pb_bench_ratio_pairs(&g.opts);
    double ratios[PB_BENCH_RATIO_PAIRS], dsm[PB_BENCH_RATIO_PAIRS], tcp[PB_BENCH_RATIO_PAIRS];
    static char note[192];
    pb_bench_stats_t st, a, b;
    pb_bench_record_t rec;
    double dsm_min = 0, tcp_min = 0; /* the fastest sample of each over the pairs */

    for (unsigned i = 0; i < n; i++) {
        measure_dsm(&a);
        measure_raw(CMD_TCP_RR, RATIO_SIZE, &b);
        dsm[i] = a.median;
        tcp[i] = b.median;
        ratios[i] = a.median / b.median;
        dsm_min = i == 0 || a.min < dsm_min ? a.min : dsm_min;
        tcp_min = i == 0 || b.min < tcp_min ? b.min : tcp_min;
    }
    pb_bench_stats_from_samples(ratios, n, 1, &st);
    pb_bench_stats_from_samples(dsm, n, 1, &a);
    pb_bench_stats_from_samples(tcp, n, 1, &b);
    snprintf(note, sizeof(note),
             "median of %u interleaved pairs (DSM then raw TCP); medians %.2f us / %.2f us; no "
             "probes",
             n, a.median * 1e-3, b.median * 1e-3);
    rec = (pb_bench_record_t){.suite = "dsm",
                              .test = "ratio_dsm_page_4KB_vs_raw_tcp",
                              .library = "postbox",
                              .transport = dsm_transport(),
                              .placement = g.nodes > 1 ? "off-node" : "on-node",
                              .ranks = 2,
                              .nodes = g.nodes,
                              .pairs = 1,
                              .size = RATIO_SIZE,
                              .metric = "ratio",
                              .unit = "x",
                              .stats = st,
                              .probe_before = -1,
                              .probe_after = -1,
                              .note = note};
    pb_bench_record_add_num(&rec, "target", RATIO_TARGET);
    pb_bench_record_add_str(&rec, "target_op", "<=");
    pb_bench_record_add_str(&rec, "numerator", "dsm_page_fetch 4 KB round trip");
    pb_bench_record_add_str(&rec, "denominator", "raw_tcp_request_reply 4 KB round trip");
    pb_bench_record_add_num(&rec, "dsm_us", a.median * 1e-3);
    pb_bench_record_add_num(&rec, "raw_tcp_us", b.median * 1e-3);
    /* the fastest DSM sample over the fastest raw TCP sample: what a quiet
     * machine would show, when other load spreads the pairs */
    pb_bench_record_add_num(&rec, "ratio_of_minima", dsm_min / tcp_min);
    pb_bench_table_begin(&g.out, "Ratio (issue 17: at most 1.5)", "x");
    pb_bench_record_emit(&g.out, &rec);
    printf("DSM 4 KB page round trip / raw TCP 4 KB request/reply = %.3f (<= %.1f: %s; pairs "
           "%.2f to %.2f, fastest over fastest %.2f)\n",
           st.median, RATIO_TARGET, st.median <= RATIO_TARGET ? "pass" : "FAIL", st.min, st.max,
           dsm_min / tcp_min);
}

static void client_main(void)
{
    static const size_t sizes[] = {64, 256, 1024, 4096};
    char value[POSTBOX_JOB_KVS_VALUE_MAX];
    uint16_t port;
    pb_bench_stats_t st;
    uint64_t t0 = pb_bench_time_now();

    if (postbox_job_kvs_get(KEY_ADDR, value, sizeof(value)) != 0 ||
        pb_rawnet_addr_parse(value, g.ip, sizeof(g.ip), &port) != 0)
        fail_msg("cannot read " KEY_ADDR " of process 1 (postbox_job_kvs_get)");
    pb_rawnet_connect(&g.net, g.ip, port, PB_RAWNET_BUF_SIZE);
    printf(PROG ": 2 processes on %d node%s (DSM over %s; raw sockets via %s), round trips in "
                "us, requests of %d B\n",
           g.nodes, g.nodes == 1 ? "" : "s", dsm_transport(), g.ip, REQUEST_BYTES);
    pb_bench_table_begin(&g.out, "DSM page fetch (read fault, page homed on process 1)", "us");
    measure_dsm(&st);
    emit_dsm(&st);
    pb_bench_table_begin(&g.out, "DSM lock + unlock, the lock managed by process 1", "us");
    bench_lock();
    for (int tcp = 1; tcp >= 0; tcp--) {
        pb_bench_table_begin(&g.out, tcp ? "raw TCP request/reply" : "raw UDP request/reply", "us");
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            if (g.opts.nsizes > 0) {
                unsigned k = 0;

                while (k < g.opts.nsizes && g.opts.sizes[k] != sizes[i])
                    k++;
                if (k == g.opts.nsizes)
                    continue;
            }
            measure_raw(tcp ? CMD_TCP_RR : CMD_UDP_RR, sizes[i], &st);
            emit_raw(tcp ? CMD_TCP_RR : CMD_UDP_RR, sizes[i], &st);
        }
    }
    bench_ratio();
    pb_rawnet_close(&g.net);
    printf("\ndone in %.1f s\n", (double)(pb_bench_time_now() - t0) * 1e-9);
}

int main(int argc, char **argv)
{
    const char *netns_addr = getenv("POSTBOX_NETNS_ADDR");
    int ret = pb_bench_opts_parse(
        &g.opts, argc, argv,
        "Seed 004's Fig. 13: the DSM's page request/reply round trip (a read fault on a\n"
        "page homed on the other process) beside raw TCP and UDP request/reply round\n"
        "trips (40 B requests, 64 B to 4 KB replies) between the same two processes,\n"
        "and their 4 KB ratio.  Runs only under `postbox run -n 2 [--nodes 2]`.  On one\n"
        "node the page is fetched through shm: the program sets POSTBOX_DSM_NODE_SHARE=0\n"
        "(else it would be mapped from its home's copy, not fetched).\n"
        "--sizes chooses among the raw sizes 64,256,1K,4K.",
        "postbox run -n 2 --nodes 2 build/bin/" PROG " --quick --json dsm-rtt.jsonl");

    if (ret != 0)
        return ret > 0 ? 0 : 2;
    g.opts.no_probe = true;
    /* a page homed by a process of this node is mapped from its copy, not
     * fetched (docs/dsm.md, "Two levels"): on one node this program
     * measures the fetch through shm, so it turns that off (across nodes
     * it changes nothing) */
    setenv("POSTBOX_DSM_NODE_SHARE", "0", 1);
    check_dsm(postbox_dsm_init(DSM_RANGE), "postbox_dsm_init");
    g.me = postbox_dsm_process();
    g.nodes = postbox_dsm_node_count();
    g.page = (size_t)sysconf(_SC_PAGESIZE);
    if (postbox_dsm_process_count() != 2) {
        if (g.me == 0)
            fprintf(stderr,
                    PROG ": needs 2 processes: postbox run -n 2 [--nodes 2] " PROG
                         " ...; this job has %d\n",
                    postbox_dsm_process_count());
        return 2;
    }
    pb_rawnet_init(PROG, die);
    pb_rawnet_role(g.me, g.me == 1);
    if (strlen(netns_addr != NULL && *netns_addr ? netns_addr : "127.0.0.1") >= sizeof(g.ip))
        fail_msg("bad POSTBOX_NETNS_ADDR");
    strcpy(g.ip, netns_addr != NULL && *netns_addr ? netns_addr : "127.0.0.1");
    if (g.me == 1) {
        char value[POSTBOX_JOB_KVS_VALUE_MAX];

        pb_rawnet_listen(&g.listener, g.ip);
        snprintf(value, sizeof(value), "%s:%u", g.ip, (unsigned)g.listener.tcp_port);
        if (postbox_job_kvs_put(KEY_ADDR, value) != 0)
            fail_msg("postbox_job_kvs_put failed");
    } else if (pb_bench_out_open(&g.out, &g.opts) != 0) {
        return 1;
    }
    if (postbox_job_fence() != 0)
        fail_msg("postbox_job_fence failed");
    pages_setup();
    if (g.me == 1) {
        server_main();
        check_dsm(postbox_dsm_serve(), "postbox_dsm_serve");
        return 0;
    }
    client_main();
    pb_bench_out_close(&g.out);
    check_dsm(postbox_dsm_finalize(), "postbox_dsm_finalize");
    return 0;
}
