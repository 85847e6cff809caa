/*
 * postbox-net-bench: the machine's raw network limits (suite "raw", library
 * "raw"), the references for Postbox's tcp transport: TCP ping-pong half
 * round trip on one connection (tcp_pingpong) and on two, one per direction
 * as the RSM tcp transport connects (tcp_pingpong_split), each also with
 * busy-polled receives (tcp_pingpong_poll, tcp_pingpong_split_poll), TCP
 * stream bandwidth and UDP ping-pong half round trip, between two processes
 * through plain sockets.
 *
 * Two roles:
 *   - the server (rank 1, or a forked peer when the program runs alone)
 *     listens on TCP and UDP, publishes "ip:port" of its TCP listener as the
 *     job key raw-net-addr, and answers commands;
 *   - the client (rank 0) connects (twice: see rawnet.h), drives every
 *     test, times it with the bench engine and writes the records.
 *
 * The sockets, the wire protocol and the timed operations are rawnet.[ch]
 * (shared with postbox-rsm-net-bench, which measures the same references
 * beside the RSM tcp transport).
 */
#include "engine.h"
#include "rawnet.h"

#include <postbox/job.h>

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG "postbox-net-bench"
#define ADDR_KEY "raw-net-addr"
#define TCP_PP_MAX ((size_t)64 << 10)

/* ---- failures ----------------------------------------------------------- */

static bool is_server;
static int my_rank;
static pid_t peer_pid = -1; /* the forked server when running alone */

/* After a failure: kill the forked server, if any, and exit 1. */
static _Noreturn void die(void)
{
    if (peer_pid > 0) {
        kill(peer_pid, SIGKILL);
        waitpid(peer_pid, NULL, 0);
        peer_pid = -1;
    }
    if (is_server)
        _exit(1);
    pb_bench_probe_fini();
    exit(1);
}

/* This process's rank and role, here and in rawnet's messages. */
static void role_set(int rank, bool server)
{
    my_rank = rank;
    is_server = server;
    pb_rawnet_role(rank, server);
}

/* ---- the server --------------------------------------------------------- */

/* Accept the client and answer its commands until PB_RAWNET_CMD_QUIT. */
static void server_main(pb_rawnet_listener_t *l)
{
    char *buf = pb_rawnet_buf_alloc(PB_RAWNET_BUF_SIZE);
    int fd = pb_rawnet_accept(l);

    for (;;) {
        pb_rawnet_cmd_t c;

        pb_rawnet_cmd_recv(fd, &c);
        if (c.cmd == PB_RAWNET_CMD_QUIT)
            break;
        if (!pb_rawnet_serve(l, fd, buf, &c))
            pb_rawnet_fail_msg("unknown command from the client");
    }
    pb_rawnet_server_close(l, fd);
    free(buf);
}

/* ---- the client --------------------------------------------------------- */

typedef struct {
    pb_bench_opts_t opts;
    pb_bench_out_t out;
    pb_rawnet_client_t net;
    char ip[INET_ADDRSTRLEN];
    const char *path;      /* "loopback" or "veth" */
    const char *placement; /* "on-node" or "off-node" */
    int nodes;
    char note[256];
} client_t;

static client_t g;

/* Cache-line probe in ns, or -1 with --no-probe. */
static double probe(void)
{
    return g.opts.no_probe ? -1.0 : pb_bench_probe_measure();
}

/* Every size of raw test @t: one table, one record per size. */
static void run_test(const pb_rawnet_test_t *t)
{
    size_t sizes[PB_BENCH_SIZES_MAX];
    unsigned n = pb_bench_sizes_make(&g.opts, t->lo, t->hi, 4, 16, sizes);
    bool bw = strcmp(t->metric, "bandwidth") == 0;
    char title[128];

    if (n == 0)
        return;
    snprintf(title, sizeof(title), "%s: %s over %s %s (%s)", t->test,
             bw ? "bandwidth" : "half round trip", t->transport, g.ip, g.path);
    pb_bench_table_begin(&g.out, title, t->unit);
    snprintf(g.note, sizeof(g.note), "%s; %s via %s", t->options, g.ip, g.path);
    for (unsigned i = 0; i < n; i++) {
        pb_bench_record_t r = {
            .suite = "raw",
            .test = t->test,
            .library = "raw",
            .transport = t->transport,
            .placement = g.placement,
            .ranks = 2,
            .nodes = g.nodes,
            .pairs = 1,
            .size = sizes[i],
            .metric = t->metric,
            .unit = t->unit,
            .note = g.note,
        };

        r.probe_before = probe();
        pb_rawnet_measure(&g.opts, &g.net, t, sizes[i], &r.stats);
        r.probe_after = probe();
        pb_bench_record_emit(&g.out, &r);
    }
}

/* Connect to the server at @ip:@port, run every test, end the session. */
static void client_main(const char *ip, uint16_t port)
{
    uint64_t t0 = pb_bench_time_now();

    pb_rawnet_connect(&g.net, ip, port, TCP_PP_MAX);
    printf(PROG ": raw TCP and UDP between 2 processes, %s (%d node%s), %s via %s on %s\n",
           g.placement, g.nodes, g.nodes == 1 ? "" : "s", g.ip, g.path, g.out.host);
    printf("latency = half round trip in us, bandwidth in MB/s (10^6 B/s), probes in ns\n");
    if (g.opts.no_probe)
        printf("timer overhead %.1f ns, no cache-line probes\n", pb_bench_time_overhead());
    else
        printf("timer overhead %.1f ns, cache-line probe %.1f ns\n", pb_bench_time_overhead(),
               probe());
    for (unsigned i = 0; i < PB_RAWNET_NTESTS; i++)
        run_test(&pb_rawnet_tests[i]);
    pb_rawnet_close(&g.net);
    printf("\ndone in %.1f s\n", (double)(pb_bench_time_now() - t0) * 1e-9);
}

/* ---- main --------------------------------------------------------------- */

/* Alone: fork the server over loopback, and be the client. */
static int run_alone(void)
{
    pid_t parent = getpid();
    pb_rawnet_listener_t l;

    pb_rawnet_listen(&l, g.ip);
    fflush(NULL);
    peer_pid = fork();
    if (peer_pid < 0)
        pb_rawnet_fail("fork", errno);
    if (peer_pid == 0) {
        role_set(1, true);
        peer_pid = -1;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(1);
        server_main(&l);
        _exit(0);
    }
    close(l.lfd);
    close(l.ufd);
    client_main(g.ip, l.tcp_port);
    if (waitpid(peer_pid, NULL, 0) < 0)
        perror(PROG ": waitpid");
    peer_pid = -1;
    return 0;
}

/* In a job of two ranks: rank 1 serves, rank 0 measures. */
static int run_job(void)
{
    char value[POSTBOX_JOB_KVS_VALUE_MAX];
    uint16_t port;

    if (my_rank == 1) {
        pb_rawnet_listener_t l;

        role_set(1, true);
        pb_rawnet_listen(&l, g.ip);
        snprintf(value, sizeof(value), "%s:%u", g.ip, (unsigned)l.tcp_port);
        if (postbox_job_kvs_put(ADDR_KEY, value) != 0 || postbox_job_fence() != 0)
            pb_rawnet_fail_msg("cannot publish the address (postbox_job_kvs_put/fence)");
        server_main(&l);
        return 0;
    }
    if (postbox_job_fence() != 0 || postbox_job_kvs_get(ADDR_KEY, value, sizeof(value)) != 0)
        pb_rawnet_fail_msg("cannot read " ADDR_KEY " of rank 1 (postbox_job_fence/kvs_get)");
    if (pb_rawnet_addr_parse(value, g.ip, sizeof(g.ip), &port) != 0) {
        fprintf(stderr, PROG ": bad " ADDR_KEY " '%s' (want ip:port)\n", value);
        die();
    }
    client_main(g.ip, port);
    return 0;
}

int main(int argc, char **argv)
{
    const char *netns_addr = getenv("POSTBOX_NETNS_ADDR");
    int size, ret;

    ret = pb_bench_opts_parse(
        &g.opts, argc, argv,
        "Measure the machine's raw network limits between two processes: TCP\n"
        "ping-pong half round trip (TCP_NODELAY) on one connection (tcp_pingpong)\n"
        "and on two, one per direction, the layout of Postbox's RSM tcp imports\n"
        "(tcp_pingpong_split), each again with both sides receiving by busy-polled\n"
        "recv instead of blocking recv (tcp_pingpong_poll, tcp_pingpong_split_poll:\n"
        "no wake-up, as MPI libraries receive), TCP stream bandwidth and UDP\n"
        "ping-pong half round trip.  Alone it forks its peer over loopback; under\n"
        "`postbox run -n 2` rank 0 measures against rank 1 (--nodes 2: off-node,\n"
        "--netns: across the veth pair).",
        "postbox run -n 2 --nodes 2 build/bin/postbox-net-bench --quick --json net.jsonl");
    if (ret != 0)
        return ret > 0 ? 0 : 2;
    if (postbox_job_init() != 0)
        return 1;
    pb_rawnet_init(PROG, die);
    role_set(postbox_job_rank(), false);
    size = postbox_job_size();
    if (size > 2) {
        if (my_rank == 0)
            fprintf(stderr, PROG ": needs a job of 2 ranks (or none); this one has %d\n", size);
        /* every rank leaves once rank 0 has said why: the launcher ends the
         * job at the first rank's exit */
        postbox_job_fence();
        return 2;
    }
    if (netns_addr != NULL && *netns_addr != '\0') {
        if (strlen(netns_addr) >= sizeof(g.ip)) {
            fprintf(stderr, PROG ": bad POSTBOX_NETNS_ADDR '%s'\n", netns_addr);
            return 1;
        }
        strcpy(g.ip, netns_addr);
    } else {
        strcpy(g.ip, "127.0.0.1");
    }
    g.nodes = postbox_job_node_count();
    g.placement = size == 2 && postbox_job_node(0) != postbox_job_node(1) ? "off-node" : "on-node";
    /* an address of the process's own namespace is always reached through lo */
    g.path = netns_addr != NULL && *netns_addr != '\0' && strcmp(g.placement, "off-node") == 0
                 ? "veth"
                 : "loopback";

    if (my_rank == 0) {
        if (pb_bench_out_open(&g.out, &g.opts) != 0)
            return 1;
        if (!g.opts.no_probe && pb_bench_probe_init() != 0)
            return 1;
    }
    ret = size == 1 ? run_alone() : run_job();
    if (my_rank == 0) {
        pb_bench_probe_fini();
        pb_bench_out_close(&g.out);
    }
    postbox_job_finalize();
    return ret;
}
