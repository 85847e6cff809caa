/*
 * postbox-net-bench: the machine's raw network limits (suite "raw", library
 * "raw"), the references for Postbox's tcp transport: TCP ping-pong half
 * round trip, TCP stream bandwidth and UDP ping-pong half round trip,
 * between two processes through plain sockets.
 *
 * Two roles:
 *   - the server (rank 1, or a forked peer when the program runs alone)
 *     listens on TCP and UDP, publishes "ip:port" of its TCP listener as the
 *     job key raw-net-addr, and answers commands;
 *   - the client (rank 0) connects, drives every test, times it with the
 *     bench engine and writes the records.
 *
 * Wire protocol, all on the one TCP connection (TCP_NODELAY, blocking, both
 * directions with SO_RCVTIMEO/SO_SNDTIMEO of IO_TIMEOUT_S; the server waits
 * CMD_TIMEOUT_S for a command):
 *
 *   server -> client  hello_t once: magic, UDP port
 *   client -> server  cmd_t: magic, command, message size; then the test's
 *                     messages until one carries FLAG_STOP
 *
 * The first byte of every test message is a flag (the payload is otherwise
 * arbitrary): FLAG_MORE, FLAG_ACK (stream: answer one byte after this one)
 * or FLAG_STOP (answer, then read the next command).  Ping-pong messages
 * are echoed whole; the UDP ping-pong uses datagrams of the message size.
 * A datagram that does not come back within UDP_TIMEOUT_MS is reported as
 * lost, and the program exits 1.
 */
#include "engine.h"

#include <postbox/job.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG "postbox-net-bench"
#define ADDR_KEY "raw-net-addr"
#define NET_MAGIC 0x50424e42u /* "PBNB" */

#define IO_TIMEOUT_S 5 /* every blocking socket call gives up after this */
#define CMD_TIMEOUT_S                                                                              \
    60                      /* except the server's wait for the client (which                      \
                               probes between tests, slowly on a busy machine) */
#define UDP_TIMEOUT_MS 2000 /* a ping datagram not answered by then is lost */
#define TCP_PP_MAX ((size_t)64 << 10)
#define STREAM_MIN ((size_t)1 << 10)
#define STREAM_MAX ((size_t)4 << 20)
#define UDP_MAX ((size_t)8 << 10)
#define BUF_SIZE STREAM_MAX

enum {
    FLAG_MORE = 0,
    FLAG_ACK = 1,
    FLAG_STOP = 2
};

enum {
    CMD_TCP_PINGPONG = 1,
    CMD_TCP_STREAM,
    CMD_UDP_PINGPONG,
    CMD_QUIT
};

typedef struct {
    uint32_t magic;
    uint32_t udp_port; /* host order */
} hello_t;

typedef struct {
    uint32_t magic;
    uint32_t cmd;
    uint64_t size;
} cmd_t;

/* ---- failures ----------------------------------------------------------- */

static bool is_server;
static int my_rank;
static pid_t peer_pid = -1; /* the forked server when running alone */
static char where[64] = ""; /* ", <test> <size> B" while a test runs */

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

/* Report a failed socket call (errno @err) and exit 1. */
static _Noreturn void fail(const char *call, int err)
{
    if (err == EAGAIN || err == EWOULDBLOCK)
        fprintf(stderr, PROG " (rank %d, %s%s): %s timed out: the peer is silent or stuck\n",
                my_rank, is_server ? "server" : "client", where, call);
    else
        fprintf(stderr, PROG " (rank %d, %s%s): %s failed: %s\n", my_rank,
                is_server ? "server" : "client", where, call, strerror(err));
    die();
}

static _Noreturn void fail_msg(const char *msg)
{
    fprintf(stderr, PROG " (rank %d, %s%s): %s\n", my_rank, is_server ? "server" : "client", where,
            msg);
    die();
}

/* ---- socket helpers ----------------------------------------------------- */

static void set_timeouts(int fd, int rcv_ms, int snd_ms)
{
    struct timeval rcv = {.tv_sec = rcv_ms / 1000, .tv_usec = (rcv_ms % 1000) * 1000};
    struct timeval snd = {.tv_sec = snd_ms / 1000, .tv_usec = (snd_ms % 1000) * 1000};

    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof(rcv)) != 0)
        fail("setsockopt(SO_RCVTIMEO)", errno);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd)) != 0)
        fail("setsockopt(SO_SNDTIMEO)", errno);
}

static void set_nodelay(int fd)
{
    int one = 1;

    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        fail("setsockopt(TCP_NODELAY)", errno);
}

static void send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail("send", errno);
        }
        p += n;
        len -= (size_t)n;
    }
}

static void recv_all(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail("recv", errno);
        }
        if (n == 0)
            fail_msg("the peer closed the connection");
        p += n;
        len -= (size_t)n;
    }
}

static void addr_make(struct sockaddr_in *sa, const char *ip, uint16_t port)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons(port);
    if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1) {
        fprintf(stderr, PROG ": '%s' is not an IPv4 address\n", ip);
        die();
    }
}

/* A socket of @type bound to @ip, any port; returns it and its port. */
static int socket_bound(int type, const char *ip, uint16_t *port_p)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

    if (fd < 0)
        fail("socket", errno);
    addr_make(&sa, ip, 0);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        fail("bind", errno);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        fail("getsockname", errno);
    *port_p = ntohs(sa.sin_port);
    return fd;
}

static void *buf_alloc(size_t size)
{
    char *p = malloc(size);

    if (p == NULL)
        fail_msg("out of memory");
    memset(p, 0x5a, size);
    return p;
}

/* ---- the server --------------------------------------------------------- */

typedef struct {
    int lfd; /* TCP listener */
    int ufd; /* UDP socket */
    uint16_t tcp_port, udp_port;
} listener_t;

static void server_listen(listener_t *l, const char *ip)
{
    l->lfd = socket_bound(SOCK_STREAM, ip, &l->tcp_port);
    if (listen(l->lfd, 1) != 0)
        fail("listen", errno);
    set_timeouts(l->lfd, CMD_TIMEOUT_S * 1000, IO_TIMEOUT_S * 1000); /* accept */
    l->ufd = socket_bound(SOCK_DGRAM, ip, &l->udp_port);
    set_timeouts(l->ufd, IO_TIMEOUT_S * 1000, IO_TIMEOUT_S * 1000);
}

static void serve_tcp_pingpong(int fd, char *buf, size_t size)
{
    do {
        recv_all(fd, buf, size);
        send_all(fd, buf, size);
    } while (buf[0] != FLAG_STOP);
}

static void serve_tcp_stream(int fd, char *buf, size_t size)
{
    char ack = 0;

    do {
        recv_all(fd, buf, size);
        if (buf[0] != FLAG_MORE)
            send_all(fd, &ack, 1);
    } while (buf[0] != FLAG_STOP);
}

static void serve_udp_pingpong(int ufd, char *buf, size_t size)
{
    do {
        struct sockaddr_in from;
        socklen_t len = sizeof(from);
        ssize_t n = recvfrom(ufd, buf, UDP_MAX + 1, 0, (struct sockaddr *)&from, &len);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail("recvfrom (UDP)", errno);
        }
        if ((size_t)n != size)
            fail_msg("udp_pingpong: a datagram of the wrong size arrived");
        if (sendto(ufd, buf, (size_t)n, 0, (struct sockaddr *)&from, len) != n)
            fail("sendto (UDP)", errno);
    } while (buf[0] != FLAG_STOP);
}

/* Accept the client and answer its commands until CMD_QUIT. */
static void server_main(listener_t *l)
{
    hello_t hello = {.magic = NET_MAGIC, .udp_port = l->udp_port};
    char *buf = buf_alloc(BUF_SIZE);
    char done = 0;
    int fd;

    do
        fd = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        fail("accept", errno);
    close(l->lfd);
    set_nodelay(fd);
    set_timeouts(fd, IO_TIMEOUT_S * 1000, IO_TIMEOUT_S * 1000);
    send_all(fd, &hello, sizeof(hello));

    for (;;) {
        cmd_t c;

        set_timeouts(fd, CMD_TIMEOUT_S * 1000, IO_TIMEOUT_S * 1000);
        recv_all(fd, &c, sizeof(c));
        set_timeouts(fd, IO_TIMEOUT_S * 1000, IO_TIMEOUT_S * 1000);
        if (c.magic != NET_MAGIC || c.size == 0 || c.size > BUF_SIZE)
            fail_msg("bad command from the client");
        if (c.cmd == CMD_QUIT)
            break;
        snprintf(where, sizeof(where), ", %s %llu B",
                 c.cmd == CMD_TCP_PINGPONG ? "tcp_pingpong"
                 : c.cmd == CMD_TCP_STREAM ? "tcp_stream"
                                           : "udp_pingpong",
                 (unsigned long long)c.size);
        switch (c.cmd) {
        case CMD_TCP_PINGPONG: serve_tcp_pingpong(fd, buf, c.size); break;
        case CMD_TCP_STREAM: serve_tcp_stream(fd, buf, c.size); break;
        case CMD_UDP_PINGPONG:
            if (c.size > UDP_MAX)
                fail_msg("bad UDP size from the client");
            serve_udp_pingpong(l->ufd, buf, c.size);
            break;
        default: fail_msg("unknown command from the client");
        }
    }
    send_all(fd, &done, 1);
    close(fd);
    close(l->ufd);
    free(buf);
}

/* ---- the client: state and the timed operations ------------------------- */

typedef struct {
    pb_bench_opts_t opts;
    pb_bench_out_t out;
    int fd, ufd;
    char ip[INET_ADDRSTRLEN];
    const char *path;      /* "loopback" or "veth" */
    const char *placement; /* "on-node" or "off-node" */
    int nodes;
    char *tx, *rx;
    size_t size; /* message size of the running test */
    char note[160];
} client_t;

static client_t g;

static void cmd_send(uint32_t cmd, size_t size)
{
    cmd_t c = {.magic = NET_MAGIC, .cmd = cmd, .size = size};

    send_all(g.fd, &c, sizeof(c));
}

static void tcp_roundtrip(char flag)
{
    g.tx[0] = flag;
    send_all(g.fd, g.tx, g.size);
    recv_all(g.fd, g.rx, g.size);
}

static int op_tcp_pingpong(void *arg, uint64_t iters)
{
    (void)arg;
    for (uint64_t i = 0; i < iters; i++)
        tcp_roundtrip(FLAG_MORE);
    return 0;
}

/* @iters messages, the last asking for the ack; returns once it came. */
static void stream_batch(uint64_t iters, char last_flag)
{
    char ack;

    for (uint64_t i = 0; i < iters; i++) {
        g.tx[0] = i + 1 == iters ? last_flag : FLAG_MORE;
        send_all(g.fd, g.tx, g.size);
    }
    recv_all(g.fd, &ack, 1);
}

static int op_tcp_stream(void *arg, uint64_t iters)
{
    (void)arg;
    stream_batch(iters, FLAG_ACK);
    return 0;
}

static void udp_roundtrip(char flag)
{
    ssize_t n;

    g.tx[0] = flag;
    do
        n = send(g.ufd, g.tx, g.size, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)g.size)
        fail("send (UDP)", n < 0 ? errno : EMSGSIZE);
    do
        n = recv(g.ufd, g.rx, UDP_MAX + 1, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        char msg[128];

        snprintf(msg, sizeof(msg), "udp_pingpong: no answer within %d ms to a %zu B datagram: lost",
                 UDP_TIMEOUT_MS, g.size);
        fail_msg(msg);
    }
    if (n < 0)
        fail("recv (UDP)", errno);
    if ((size_t)n != g.size)
        fail_msg("udp_pingpong: an answer of the wrong size arrived");
}

static int op_udp_pingpong(void *arg, uint64_t iters)
{
    (void)arg;
    for (uint64_t i = 0; i < iters; i++)
        udp_roundtrip(FLAG_MORE);
    return 0;
}

/* ---- the client: tests -------------------------------------------------- */

static double probe(void)
{
    return g.opts.no_probe ? -1.0 : pb_bench_probe_measure();
}

typedef struct {
    const char *test, *transport, *metric, *unit, *options;
    uint32_t cmd;
    pb_bench_op_func_t op;
    size_t lo, hi;
} test_t;

static const test_t tests[] = {
    {"tcp_pingpong", "tcp", "latency", "us", "TCP_NODELAY, blocking send/recv, default buffers",
     CMD_TCP_PINGPONG, op_tcp_pingpong, 1, TCP_PP_MAX},
    {"tcp_stream", "tcp", "bandwidth", "MB/s",
     "TCP_NODELAY, blocking send/recv, default buffers, unidirectional, 1-byte ack ends each "
     "batch",
     CMD_TCP_STREAM, op_tcp_stream, STREAM_MIN, STREAM_MAX},
    {"udp_pingpong", "udp", "latency", "us", "datagrams, blocking recv, a loss is an error",
     CMD_UDP_PINGPONG, op_udp_pingpong, 1, UDP_MAX},
};

/* Tell the server the test is over and wait for its answer. */
static void test_stop(const test_t *t)
{
    switch (t->cmd) {
    case CMD_TCP_PINGPONG: tcp_roundtrip(FLAG_STOP); break;
    case CMD_TCP_STREAM: stream_batch(1, FLAG_STOP); break;
    default: udp_roundtrip(FLAG_STOP); break;
    }
}

static void run_test(const test_t *t)
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

        g.size = sizes[i];
        snprintf(where, sizeof(where), ", %s %zu B", t->test, g.size);
        r.probe_before = probe();
        cmd_send(t->cmd, g.size);
        pb_bench_sample_run(&g.opts, t->op, NULL, &r.stats);
        test_stop(t);
        where[0] = '\0';
        r.probe_after = probe();
        if (bw)
            pb_bench_stats_to_bandwidth(&r.stats, g.size);
        else
            pb_bench_stats_scale(&r.stats, 0.5e-3); /* round trip ns -> half, us */
        pb_bench_record_emit(&g.out, &r);
    }
}

/* Connect to the server at @ip:@port and read its hello. */
static void client_connect(const char *ip, uint16_t port)
{
    struct sockaddr_in sa;
    hello_t hello;
    int ret;

    g.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (g.fd < 0)
        fail("socket", errno);
    set_timeouts(g.fd, IO_TIMEOUT_S * 1000, IO_TIMEOUT_S * 1000); /* also bounds connect */
    addr_make(&sa, ip, port);
    do
        ret = connect(g.fd, (struct sockaddr *)&sa, sizeof(sa));
    while (ret != 0 && errno == EINTR);
    if (ret != 0)
        fail("connect", errno);
    set_nodelay(g.fd);
    recv_all(g.fd, &hello, sizeof(hello));
    if (hello.magic != NET_MAGIC || hello.udp_port == 0 || hello.udp_port > 65535)
        fail_msg("the server's hello is not ours");

    g.ufd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (g.ufd < 0)
        fail("socket (UDP)", errno);
    set_timeouts(g.ufd, UDP_TIMEOUT_MS, IO_TIMEOUT_S * 1000);
    addr_make(&sa, ip, (uint16_t)hello.udp_port);
    if (connect(g.ufd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        fail("connect (UDP)", errno);
}

static void client_main(const char *ip, uint16_t port)
{
    uint64_t t0 = pb_bench_time_now();
    char done;

    g.tx = buf_alloc(BUF_SIZE);
    g.rx = buf_alloc(UDP_MAX + 1 > TCP_PP_MAX ? UDP_MAX + 1 : TCP_PP_MAX);
    client_connect(ip, port);
    printf(PROG ": raw TCP and UDP between 2 processes, %s (%d node%s), %s via %s on %s\n",
           g.placement, g.nodes, g.nodes == 1 ? "" : "s", g.ip, g.path, g.out.host);
    printf("latency = half round trip in us, bandwidth in MB/s (10^6 B/s), probes in ns\n");
    if (g.opts.no_probe)
        printf("timer overhead %.1f ns, no cache-line probes\n", pb_bench_time_overhead());
    else
        printf("timer overhead %.1f ns, cache-line probe %.1f ns\n", pb_bench_time_overhead(),
               probe());
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
        run_test(&tests[i]);
    cmd_send(CMD_QUIT, 1);
    recv_all(g.fd, &done, 1);
    close(g.fd);
    close(g.ufd);
    free(g.tx);
    free(g.rx);
    printf("\ndone in %.1f s\n", (double)(pb_bench_time_now() - t0) * 1e-9);
}

/* ---- main --------------------------------------------------------------- */

/* Split "ip:port"; returns 0 or -1. */
static int addr_parse(const char *s, char *ip, size_t iplen, uint16_t *port_p)
{
    const char *colon = strrchr(s, ':');
    char *end;
    unsigned long port;

    if (colon == NULL || (size_t)(colon - s) >= iplen)
        return -1;
    memcpy(ip, s, (size_t)(colon - s));
    ip[colon - s] = '\0';
    errno = 0;
    port = strtoul(colon + 1, &end, 10);
    if (errno != 0 || *end != '\0' || port == 0 || port > 65535)
        return -1;
    *port_p = (uint16_t)port;
    return 0;
}

/* Alone: fork the server over loopback, and be the client. */
static int run_alone(void)
{
    pid_t parent = getpid();
    listener_t l;

    server_listen(&l, g.ip);
    fflush(NULL);
    peer_pid = fork();
    if (peer_pid < 0)
        fail("fork", errno);
    if (peer_pid == 0) {
        is_server = true;
        my_rank = 1;
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
        listener_t l;

        is_server = true;
        server_listen(&l, g.ip);
        snprintf(value, sizeof(value), "%s:%u", g.ip, (unsigned)l.tcp_port);
        if (postbox_job_kvs_put(ADDR_KEY, value) != 0 || postbox_job_fence() != 0)
            fail_msg("cannot publish the address (postbox_job_kvs_put/fence)");
        server_main(&l);
        return 0;
    }
    if (postbox_job_fence() != 0 || postbox_job_kvs_get(ADDR_KEY, value, sizeof(value)) != 0)
        fail_msg("cannot read " ADDR_KEY " of rank 1 (postbox_job_fence/kvs_get)");
    if (addr_parse(value, g.ip, sizeof(g.ip), &port) != 0) {
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
        "ping-pong half round trip (TCP_NODELAY), TCP stream bandwidth and UDP\n"
        "ping-pong half round trip.  Alone it forks its peer over loopback; under\n"
        "`postbox run -n 2` rank 0 measures against rank 1 (--nodes 2: off-node,\n"
        "--netns: across the veth pair).",
        "postbox run -n 2 --nodes 2 build/bin/postbox-net-bench --quick --json net.jsonl");
    if (ret != 0)
        return ret > 0 ? 0 : 2;
    if (postbox_job_init() != 0)
        return 1;
    my_rank = postbox_job_rank();
    size = postbox_job_size();
    if (size > 2) {
        if (my_rank == 0)
            fprintf(stderr, PROG ": needs a job of 2 ranks (or none); this one has %d\n", size);
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
