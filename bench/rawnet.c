/*
 * Raw TCP and UDP between two processes: see rawnet.h.
 */
#include "rawnet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* ---- failures ----------------------------------------------------------- */

static const char *prog_name = "bench";
static pb_rawnet_die_func_t die_func;
static bool is_server;
static int my_rank;
static char where[64] = ""; /* ", <test> <size> B" while a test runs */

void pb_rawnet_init(const char *prog, pb_rawnet_die_func_t die)
{
    prog_name = prog;
    die_func = die;
}

void pb_rawnet_role(int rank, bool server)
{
    my_rank = rank;
    is_server = server;
}

void pb_rawnet_where(const char *test, size_t size)
{
    if (test == NULL)
        where[0] = '\0';
    else
        snprintf(where, sizeof(where), ", %s %zu B", test, size);
}

/* Hand over to the program's die function (exit 1 if it returns). */
static _Noreturn void die(void)
{
    if (die_func != NULL)
        die_func();
    exit(1);
}

void pb_rawnet_fail(const char *call, int err)
{
    if (err == EAGAIN || err == EWOULDBLOCK)
        fprintf(stderr, "%s (rank %d, %s%s): %s timed out: the peer is silent or stuck\n",
                prog_name, my_rank, is_server ? "server" : "client", where, call);
    else
        fprintf(stderr, "%s (rank %d, %s%s): %s failed: %s\n", prog_name, my_rank,
                is_server ? "server" : "client", where, call, strerror(err));
    die();
}

void pb_rawnet_fail_msg(const char *msg)
{
    fprintf(stderr, "%s (rank %d, %s%s): %s\n", prog_name, my_rank, is_server ? "server" : "client",
            where, msg);
    die();
}

/* ---- socket helpers ----------------------------------------------------- */

/* Receive and send timeouts of @fd, in ms. */
static void set_timeouts(int fd, int rcv_ms, int snd_ms)
{
    struct timeval rcv = {.tv_sec = rcv_ms / 1000, .tv_usec = (rcv_ms % 1000) * 1000};
    struct timeval snd = {.tv_sec = snd_ms / 1000, .tv_usec = (snd_ms % 1000) * 1000};

    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof(rcv)) != 0)
        pb_rawnet_fail("setsockopt(SO_RCVTIMEO)", errno);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd)) != 0)
        pb_rawnet_fail("setsockopt(SO_SNDTIMEO)", errno);
}

/* No Nagle delay on the TCP socket @fd. */
static void set_nodelay(int fd)
{
    int one = 1;

    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        pb_rawnet_fail("setsockopt(TCP_NODELAY)", errno);
}

void pb_rawnet_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            pb_rawnet_fail("send", errno);
        }
        p += n;
        len -= (size_t)n;
    }
}

void pb_rawnet_recv_all(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            pb_rawnet_fail("recv", errno);
        }
        if (n == 0)
            pb_rawnet_fail_msg("the peer closed the connection");
        p += n;
        len -= (size_t)n;
    }
}

/* pb_rawnet_recv_all by busy-polling: recv(MSG_DONTWAIT) again and again
 * until the whole message is in, never sleeping in the kernel.  Gives up as
 * the blocking one does: after PB_RAWNET_IO_TIMEOUT_S without a byte. */
static void recv_all_poll(int fd, void *buf, size_t len)
{
    char *p = buf;
    uint64_t since = 0; /* start of the wait for the next bytes, 0: none yet */
    unsigned spins = 0;

    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                pb_rawnet_fail("recv", errno);
            if (since == 0)
                since = pb_bench_time_now();
            else if (++spins % 64 == 0 &&
                     pb_bench_time_now() - since >= (uint64_t)PB_RAWNET_IO_TIMEOUT_S * 1000000000u)
                pb_rawnet_fail("recv", EAGAIN);
            continue;
        }
        if (n == 0)
            pb_rawnet_fail_msg("the peer closed the connection");
        p += n;
        len -= (size_t)n;
        since = 0;
    }
}

/* @sa = @ip:@port; a bad address ends the program. */
static void addr_make(struct sockaddr_in *sa, const char *ip, uint16_t port)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons(port);
    if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1) {
        fprintf(stderr, "%s: '%s' is not an IPv4 address\n", prog_name, ip);
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
        pb_rawnet_fail("socket", errno);
    addr_make(&sa, ip, 0);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        pb_rawnet_fail("bind", errno);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        pb_rawnet_fail("getsockname", errno);
    *port_p = ntohs(sa.sin_port);
    return fd;
}

void *pb_rawnet_buf_alloc(size_t size)
{
    char *p = malloc(size);

    if (p == NULL)
        pb_rawnet_fail_msg("out of memory");
    memset(p, 0x5a, size);
    return p;
}

int pb_rawnet_addr_parse(const char *s, char *ip, size_t iplen, uint16_t *port_p)
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

/* ---- the server --------------------------------------------------------- */

void pb_rawnet_listen(pb_rawnet_listener_t *l, const char *ip)
{
    l->lfd = socket_bound(SOCK_STREAM, ip, &l->tcp_port);
    if (listen(l->lfd, 1) != 0)
        pb_rawnet_fail("listen", errno);
    set_timeouts(l->lfd, PB_RAWNET_CMD_TIMEOUT_S * 1000,
                 PB_RAWNET_IO_TIMEOUT_S * 1000); /* accept */
    l->ufd = socket_bound(SOCK_DGRAM, ip, &l->udp_port);
    set_timeouts(l->ufd, PB_RAWNET_IO_TIMEOUT_S * 1000, PB_RAWNET_IO_TIMEOUT_S * 1000);
}

/* Accept one connection on the listener, TCP_NODELAY, with the I/O
 * timeouts; @call names the accept in messages. */
static int accept_one(pb_rawnet_listener_t *l, const char *call)
{
    int fd;

    do
        fd = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        pb_rawnet_fail(call, errno);
    set_nodelay(fd);
    set_timeouts(fd, PB_RAWNET_IO_TIMEOUT_S * 1000, PB_RAWNET_IO_TIMEOUT_S * 1000);
    return fd;
}

int pb_rawnet_accept(pb_rawnet_listener_t *l)
{
    pb_rawnet_hello_t hello = {.magic = PB_RAWNET_MAGIC, .udp_port = l->udp_port};
    pb_rawnet_cmd_t c2;
    int fd = accept_one(l, "accept");

    pb_rawnet_send_all(fd, &hello, sizeof(hello));
    /* the client connects again as soon as the hello is in */
    set_timeouts(l->lfd, PB_RAWNET_IO_TIMEOUT_S * 1000, PB_RAWNET_IO_TIMEOUT_S * 1000);
    l->fd2 = accept_one(l, "accept (TCP connection 2)");
    close(l->lfd);
    l->lfd = -1;
    pb_rawnet_recv_all(l->fd2, &c2, sizeof(c2));
    if (c2.magic != PB_RAWNET_MAGIC || c2.cmd != PB_RAWNET_CMD_CONN2)
        pb_rawnet_fail_msg("TCP connection 2 is not from our client");
    return fd;
}

void pb_rawnet_cmd_recv(int fd, pb_rawnet_cmd_t *c)
{
    set_timeouts(fd, PB_RAWNET_CMD_TIMEOUT_S * 1000, PB_RAWNET_IO_TIMEOUT_S * 1000);
    pb_rawnet_recv_all(fd, c, sizeof(*c));
    set_timeouts(fd, PB_RAWNET_IO_TIMEOUT_S * 1000, PB_RAWNET_IO_TIMEOUT_S * 1000);
    if (c->magic != PB_RAWNET_MAGIC || c->size == 0 || c->size > PB_RAWNET_BUF_SIZE)
        pb_rawnet_fail_msg("bad command from the client");
}

/* Echo whole messages read on @fd (busy-polling if @poll), on @wfd, until
 * the STOP one. */
static void serve_tcp_pingpong(int fd, int wfd, char *buf, size_t size, bool poll)
{
    do {
        if (poll)
            recv_all_poll(fd, buf, size);
        else
            pb_rawnet_recv_all(fd, buf, size);
        pb_rawnet_send_all(wfd, buf, size);
    } while (buf[0] != PB_RAWNET_FLAG_STOP);
}

/* Read whole messages, answering one byte to each but the MORE ones. */
static void serve_tcp_stream(int fd, char *buf, size_t size)
{
    char ack = 0;

    do {
        pb_rawnet_recv_all(fd, buf, size);
        if (buf[0] != PB_RAWNET_FLAG_MORE)
            pb_rawnet_send_all(fd, &ack, 1);
    } while (buf[0] != PB_RAWNET_FLAG_STOP);
}

/* Echo datagrams of @size bytes until the STOP one. */
static void serve_udp_pingpong(int ufd, char *buf, size_t size)
{
    do {
        struct sockaddr_in from;
        socklen_t len = sizeof(from);
        ssize_t n = recvfrom(ufd, buf, PB_RAWNET_UDP_MAX + 1, 0, (struct sockaddr *)&from, &len);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            pb_rawnet_fail("recvfrom (UDP)", errno);
        }
        if ((size_t)n != size)
            pb_rawnet_fail_msg("udp_pingpong: a datagram of the wrong size arrived");
        if (sendto(ufd, buf, (size_t)n, 0, (struct sockaddr *)&from, len) != n)
            pb_rawnet_fail("sendto (UDP)", errno);
    } while (buf[0] != PB_RAWNET_FLAG_STOP);
}

bool pb_rawnet_serve(pb_rawnet_listener_t *l, int fd, char *buf, const pb_rawnet_cmd_t *c)
{
    switch (c->cmd) {
    case PB_RAWNET_CMD_TCP_PINGPONG:
        pb_rawnet_where("tcp_pingpong", c->size);
        serve_tcp_pingpong(fd, fd, buf, c->size, false);
        break;
    case PB_RAWNET_CMD_TCP_PINGPONG_SPLIT:
        pb_rawnet_where("tcp_pingpong_split", c->size);
        serve_tcp_pingpong(fd, l->fd2, buf, c->size, false);
        break;
    case PB_RAWNET_CMD_TCP_PINGPONG_POLL:
        pb_rawnet_where("tcp_pingpong_poll", c->size);
        serve_tcp_pingpong(fd, fd, buf, c->size, true);
        break;
    case PB_RAWNET_CMD_TCP_PINGPONG_SPLIT_POLL:
        pb_rawnet_where("tcp_pingpong_split_poll", c->size);
        serve_tcp_pingpong(fd, l->fd2, buf, c->size, true);
        break;
    case PB_RAWNET_CMD_TCP_STREAM:
        pb_rawnet_where("tcp_stream", c->size);
        serve_tcp_stream(fd, buf, c->size);
        break;
    case PB_RAWNET_CMD_UDP_PINGPONG:
        pb_rawnet_where("udp_pingpong", c->size);
        if (c->size > PB_RAWNET_UDP_MAX)
            pb_rawnet_fail_msg("bad UDP size from the client");
        serve_udp_pingpong(l->ufd, buf, c->size);
        break;
    default: return false;
    }
    return true;
}

void pb_rawnet_server_close(pb_rawnet_listener_t *l, int fd)
{
    char done = 0;

    pb_rawnet_send_all(fd, &done, 1);
    close(fd);
    close(l->fd2);
    close(l->ufd);
}

/* ---- the client: the timed operations ----------------------------------- */

/* One TCP round trip of a message of c->size bytes flagged @flag, sent on
 * connection 1, its answer read on @rfd (busy-polling if @poll). */
static void tcp_roundtrip(pb_rawnet_client_t *c, int rfd, char flag, bool poll)
{
    c->tx[0] = flag;
    pb_rawnet_send_all(c->fd, c->tx, c->size);
    if (poll)
        recv_all_poll(rfd, c->rx, c->size);
    else
        pb_rawnet_recv_all(rfd, c->rx, c->size);
}

/* pb_bench_op_func_t: @iters TCP round trips on connection 1. */
static int op_tcp_pingpong(void *arg, uint64_t iters)
{
    pb_rawnet_client_t *c = arg;

    for (uint64_t i = 0; i < iters; i++)
        tcp_roundtrip(c, c->fd, PB_RAWNET_FLAG_MORE, false);
    return 0;
}

/* pb_bench_op_func_t: @iters TCP round trips, out on connection 1, back on
 * connection 2. */
static int op_tcp_pingpong_split(void *arg, uint64_t iters)
{
    pb_rawnet_client_t *c = arg;

    for (uint64_t i = 0; i < iters; i++)
        tcp_roundtrip(c, c->fd2, PB_RAWNET_FLAG_MORE, false);
    return 0;
}

/* pb_bench_op_func_t: op_tcp_pingpong, both sides busy-polling. */
static int op_tcp_pingpong_poll(void *arg, uint64_t iters)
{
    pb_rawnet_client_t *c = arg;

    for (uint64_t i = 0; i < iters; i++)
        tcp_roundtrip(c, c->fd, PB_RAWNET_FLAG_MORE, true);
    return 0;
}

/* pb_bench_op_func_t: op_tcp_pingpong_split, both sides busy-polling. */
static int op_tcp_pingpong_split_poll(void *arg, uint64_t iters)
{
    pb_rawnet_client_t *c = arg;

    for (uint64_t i = 0; i < iters; i++)
        tcp_roundtrip(c, c->fd2, PB_RAWNET_FLAG_MORE, true);
    return 0;
}

/* @iters messages, the last flagged @last_flag; returns once its ack came. */
static void stream_batch(pb_rawnet_client_t *c, uint64_t iters, char last_flag)
{
    char ack;

    for (uint64_t i = 0; i < iters; i++) {
        c->tx[0] = i + 1 == iters ? last_flag : PB_RAWNET_FLAG_MORE;
        pb_rawnet_send_all(c->fd, c->tx, c->size);
    }
    pb_rawnet_recv_all(c->fd, &ack, 1);
}

/* pb_bench_op_func_t: a stream batch of @iters messages, acknowledged. */
static int op_tcp_stream(void *arg, uint64_t iters)
{
    stream_batch(arg, iters, PB_RAWNET_FLAG_ACK);
    return 0;
}

/* One UDP round trip of a datagram of c->size bytes flagged @flag; a lost
 * one ends the program. */
static void udp_roundtrip(pb_rawnet_client_t *c, char flag)
{
    ssize_t n;

    c->tx[0] = flag;
    do
        n = send(c->ufd, c->tx, c->size, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)c->size)
        pb_rawnet_fail("send (UDP)", n < 0 ? errno : EMSGSIZE);
    do
        n = recv(c->ufd, c->rx, PB_RAWNET_UDP_MAX + 1, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        char msg[128];

        snprintf(msg, sizeof(msg), "udp_pingpong: no answer within %d ms to a %zu B datagram: lost",
                 PB_RAWNET_UDP_TIMEOUT_MS, c->size);
        pb_rawnet_fail_msg(msg);
    }
    if (n < 0)
        pb_rawnet_fail("recv (UDP)", errno);
    if ((size_t)n != c->size)
        pb_rawnet_fail_msg("udp_pingpong: an answer of the wrong size arrived");
}

/* pb_bench_op_func_t: @iters UDP round trips. */
static int op_udp_pingpong(void *arg, uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++)
        udp_roundtrip(arg, PB_RAWNET_FLAG_MORE);
    return 0;
}

/* ---- the client: connection and tests ----------------------------------- */

/* A TCP connection to @sa, TCP_NODELAY, with the I/O timeouts; @call
 * names the connect in messages. */
static int connect_one(const struct sockaddr_in *sa, const char *call)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int ret;

    if (fd < 0)
        pb_rawnet_fail("socket", errno);
    /* also bounds connect */
    set_timeouts(fd, PB_RAWNET_IO_TIMEOUT_S * 1000, PB_RAWNET_IO_TIMEOUT_S * 1000);
    do
        ret = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
    while (ret != 0 && errno == EINTR);
    if (ret != 0)
        pb_rawnet_fail(call, errno);
    set_nodelay(fd);
    return fd;
}

void pb_rawnet_connect(pb_rawnet_client_t *c, const char *ip, uint16_t port, size_t rx_size)
{
    struct sockaddr_in sa;
    pb_rawnet_hello_t hello;
    pb_rawnet_cmd_t c2 = {.magic = PB_RAWNET_MAGIC, .cmd = PB_RAWNET_CMD_CONN2, .size = 0};

    c->tx = pb_rawnet_buf_alloc(PB_RAWNET_BUF_SIZE);
    c->rx = pb_rawnet_buf_alloc(rx_size > PB_RAWNET_UDP_MAX + 1 ? rx_size : PB_RAWNET_UDP_MAX + 1);
    addr_make(&sa, ip, port);
    c->fd = connect_one(&sa, "connect");
    pb_rawnet_recv_all(c->fd, &hello, sizeof(hello));
    if (hello.magic != PB_RAWNET_MAGIC || hello.udp_port == 0 || hello.udp_port > 65535)
        pb_rawnet_fail_msg("the server's hello is not ours");
    /* only now: the server accepts connection 1 first */
    c->fd2 = connect_one(&sa, "connect (TCP connection 2)");
    pb_rawnet_send_all(c->fd2, &c2, sizeof(c2));

    c->ufd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (c->ufd < 0)
        pb_rawnet_fail("socket (UDP)", errno);
    set_timeouts(c->ufd, PB_RAWNET_UDP_TIMEOUT_MS, PB_RAWNET_IO_TIMEOUT_S * 1000);
    addr_make(&sa, ip, (uint16_t)hello.udp_port);
    if (connect(c->ufd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        pb_rawnet_fail("connect (UDP)", errno);
}

void pb_rawnet_cmd_send(pb_rawnet_client_t *c, uint32_t cmd, size_t size)
{
    pb_rawnet_cmd_t m = {.magic = PB_RAWNET_MAGIC, .cmd = cmd, .size = size};

    pb_rawnet_send_all(c->fd, &m, sizeof(m));
}

void pb_rawnet_close(pb_rawnet_client_t *c)
{
    char done;

    pb_rawnet_cmd_send(c, PB_RAWNET_CMD_QUIT, 1);
    pb_rawnet_recv_all(c->fd, &done, 1);
    close(c->fd);
    close(c->fd2);
    close(c->ufd);
    free(c->tx);
    free(c->rx);
}

const pb_rawnet_test_t pb_rawnet_tests[PB_RAWNET_NTESTS] = {
    [PB_RAWNET_TCP_PINGPONG] = {"tcp_pingpong", "tcp", "latency", "us",
                                "TCP_NODELAY, blocking send/recv, default buffers",
                                PB_RAWNET_CMD_TCP_PINGPONG, op_tcp_pingpong, 1, (size_t)64 << 10},
    [PB_RAWNET_TCP_PINGPONG_SPLIT] = {"tcp_pingpong_split", "tcp", "latency", "us",
                                      "TCP_NODELAY, blocking send/recv, default buffers, one "
                                      "connection per direction (the layout of Postbox's RSM "
                                      "tcp imports)",
                                      PB_RAWNET_CMD_TCP_PINGPONG_SPLIT, op_tcp_pingpong_split, 1,
                                      (size_t)64 << 10},
    [PB_RAWNET_TCP_PINGPONG_POLL] = {"tcp_pingpong_poll", "tcp", "latency", "us",
                                     "TCP_NODELAY, blocking send, busy-polled recv (MSG_DONTWAIT) "
                                     "on both sides, default buffers",
                                     PB_RAWNET_CMD_TCP_PINGPONG_POLL, op_tcp_pingpong_poll, 1,
                                     (size_t)64 << 10},
    [PB_RAWNET_TCP_PINGPONG_SPLIT_POLL] = {"tcp_pingpong_split_poll", "tcp", "latency", "us",
                                           "TCP_NODELAY, blocking send, busy-polled recv "
                                           "(MSG_DONTWAIT) on both sides, default buffers, one "
                                           "connection per direction (the layout of Postbox's "
                                           "RSM tcp imports)",
                                           PB_RAWNET_CMD_TCP_PINGPONG_SPLIT_POLL,
                                           op_tcp_pingpong_split_poll, 1, (size_t)64 << 10},
    [PB_RAWNET_TCP_STREAM] = {"tcp_stream", "tcp", "bandwidth", "MB/s",
                              "TCP_NODELAY, blocking send/recv, default buffers, unidirectional, "
                              "1-byte ack ends each batch",
                              PB_RAWNET_CMD_TCP_STREAM, op_tcp_stream, (size_t)1 << 10,
                              PB_RAWNET_BUF_SIZE},
    [PB_RAWNET_UDP_PINGPONG] = {"udp_pingpong", "udp", "latency", "us",
                                "datagrams, blocking recv, a loss is an error",
                                PB_RAWNET_CMD_UDP_PINGPONG, op_udp_pingpong, 1, PB_RAWNET_UDP_MAX},
};

/* Tell the server test @t is over and wait for its answer. */
static void test_stop(pb_rawnet_client_t *c, const pb_rawnet_test_t *t)
{
    switch (t->cmd) {
    case PB_RAWNET_CMD_TCP_PINGPONG: tcp_roundtrip(c, c->fd, PB_RAWNET_FLAG_STOP, false); break;
    case PB_RAWNET_CMD_TCP_PINGPONG_SPLIT:
        tcp_roundtrip(c, c->fd2, PB_RAWNET_FLAG_STOP, false);
        break;
    case PB_RAWNET_CMD_TCP_PINGPONG_POLL: tcp_roundtrip(c, c->fd, PB_RAWNET_FLAG_STOP, true); break;
    case PB_RAWNET_CMD_TCP_PINGPONG_SPLIT_POLL:
        tcp_roundtrip(c, c->fd2, PB_RAWNET_FLAG_STOP, true);
        break;
    case PB_RAWNET_CMD_TCP_STREAM: stream_batch(c, 1, PB_RAWNET_FLAG_STOP); break;
    default: udp_roundtrip(c, PB_RAWNET_FLAG_STOP); break;
    }
}

void pb_rawnet_measure(const pb_bench_opts_t *opts, pb_rawnet_client_t *c,
                       const pb_rawnet_test_t *t, size_t size, pb_bench_stats_t *st)
{
    c->size = size;
    pb_rawnet_where(t->test, size);
    pb_rawnet_cmd_send(c, t->cmd, size);
    pb_bench_sample_run(opts, t->op, c, st);
    test_stop(c, t);
    pb_rawnet_where(NULL, 0);
    if (strcmp(t->metric, "bandwidth") == 0)
        pb_bench_stats_to_bandwidth(st, size);
    else
        pb_bench_stats_scale(st, 0.5e-3); /* round trip ns -> half, us */
}
