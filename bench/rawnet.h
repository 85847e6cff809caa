/*
 * Raw TCP and UDP between two processes through plain sockets: the
 * machine's own network limits, measured by postbox-net-bench alone and by
 * postbox-rsm-net-bench beside the RSM tcp transport.  Knows nothing about
 * RSM or the job API.
 *
 * Two TCP connections, both made by the client at the start: connection 1
 * carries the commands and every TCP test but the split ones; connection 2
 * carries only the answers of tcp_pingpong_split (and _split_poll), which
 * sends each message on connection 1 and its echo on connection 2 (one
 * connection per direction, as Postbox's RSM tcp transport opens one per
 * import), so that TCP's acknowledgements cannot ride on the answers as in
 * tcp_pingpong.
 *
 * Two receive styles for the TCP ping-pongs: tcp_pingpong and
 * tcp_pingpong_split wait in a blocking recv (the reader sleeps and is
 * woken); tcp_pingpong_poll and tcp_pingpong_split_poll are the same
 * exchanges with both sides busy-polling (recv with MSG_DONTWAIT until the
 * whole message is in, as MPI libraries receive), which leaves out the
 * wake-up and shows what the layout itself costs.
 *
 * Two roles:
 *   - the server listens on TCP and UDP (pb_rawnet_listen), accepts the one
 *     client (pb_rawnet_accept) and answers the raw tests' messages
 *     (pb_rawnet_serve);
 *   - the client connects (pb_rawnet_connect), and for each figure sends a
 *     command and times the test with the bench engine
 *     (pb_rawnet_measure).
 *
 * Wire protocol, on connection 1 unless said otherwise (both connections
 * TCP_NODELAY, blocking, both directions with SO_RCVTIMEO/SO_SNDTIMEO of
 * PB_RAWNET_IO_TIMEOUT_S; the server waits PB_RAWNET_CMD_TIMEOUT_S for a
 * command):
 *
 *   server -> client  pb_rawnet_hello_t once: magic, UDP port
 *   client -> server  on connection 2, made after the hello came: once a
 *                     pb_rawnet_cmd_t of PB_RAWNET_CMD_CONN2 (size 0), which
 *                     tells the server this connection is the client's
 *   client -> server  pb_rawnet_cmd_t: magic, command, message size; then
 *                     the test's messages until one carries
 *                     PB_RAWNET_FLAG_STOP (the answers of
 *                     PB_RAWNET_CMD_TCP_PINGPONG_SPLIT and _SPLIT_POLL on
 *                     connection 2)
 *
 * The first byte of every test message is a flag (the payload is otherwise
 * arbitrary): PB_RAWNET_FLAG_MORE, _ACK (stream: answer one byte after this
 * one) or _STOP (answer, then read the next command).  Ping-pong messages
 * are echoed whole (read by busy-polling on both sides for the _POLL
 * commands, whose time limit is the same PB_RAWNET_IO_TIMEOUT_S without a
 * byte); the UDP ping-pong uses datagrams of the message size.
 * A datagram that does not come back within PB_RAWNET_UDP_TIMEOUT_MS is
 * reported as lost, and the program exits 1.  Commands from
 * PB_RAWNET_CMD_USER up belong to the program (its own tests on the same
 * connection); PB_RAWNET_CMD_QUIT ends the session.
 *
 * Every failing socket call prints which call failed, on which rank and
 * role, during which test, then calls the program's die function: no call
 * here returns an error.
 */
#ifndef PB_BENCH_RAWNET_H
#define PB_BENCH_RAWNET_H

#include "engine.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PB_RAWNET_MAGIC 0x50424e42u /* "PBNB" */
#define PB_RAWNET_IO_TIMEOUT_S 5    /* every blocking socket call gives up after this */
/* except the server's wait for the next command (the client probes between
 * tests, slowly on a busy machine) */
#define PB_RAWNET_CMD_TIMEOUT_S 60
#define PB_RAWNET_UDP_TIMEOUT_MS 2000 /* a ping datagram not answered by then is lost */
#define PB_RAWNET_UDP_MAX ((size_t)8 << 10)
#define PB_RAWNET_BUF_SIZE ((size_t)4 << 20) /* the largest message of any test */

enum {
    PB_RAWNET_FLAG_MORE = 0,
    PB_RAWNET_FLAG_ACK = 1,
    PB_RAWNET_FLAG_STOP = 2
};

enum {
    PB_RAWNET_CMD_TCP_PINGPONG = 1,
    PB_RAWNET_CMD_TCP_STREAM,
    PB_RAWNET_CMD_UDP_PINGPONG,
    PB_RAWNET_CMD_QUIT,
    PB_RAWNET_CMD_TCP_PINGPONG_SPLIT,      /* the pings on connection 1, the answers on 2 */
    PB_RAWNET_CMD_CONN2,                   /* connection 2's first message, never a command */
    PB_RAWNET_CMD_TCP_PINGPONG_POLL,       /* as _TCP_PINGPONG, both sides busy-polling */
    PB_RAWNET_CMD_TCP_PINGPONG_SPLIT_POLL, /* as _TCP_PINGPONG_SPLIT, both busy-polling */
    PB_RAWNET_CMD_USER = 16                /* first command number of the program's own */
};

typedef struct {
    uint32_t magic;
    uint32_t udp_port; /* host order */
} pb_rawnet_hello_t;

typedef struct {
    uint32_t magic;
    uint32_t cmd;
    uint64_t size;
} pb_rawnet_cmd_t;

/* ---- failures ----------------------------------------------------------- */

/* Ends the program after a failure has been printed; must not return. */
typedef void (*pb_rawnet_die_func_t)(void);

/* Name the program (for messages) and the function that ends it. */
void pb_rawnet_init(const char *prog, pb_rawnet_die_func_t die);

/* This process's rank and role, for messages. */
void pb_rawnet_role(int rank, bool server);

/* The test running (@test NULL: none), for messages. */
void pb_rawnet_where(const char *test, size_t size);

/* Report a failed socket call (errno @err), then die. */
_Noreturn void pb_rawnet_fail(const char *call, int err);

/* Report @msg, then die. */
_Noreturn void pb_rawnet_fail_msg(const char *msg);

/* ---- socket helpers ----------------------------------------------------- */

/* Send or receive exactly @len bytes on the blocking socket @fd. */
void pb_rawnet_send_all(int fd, const void *buf, size_t len);
void pb_rawnet_recv_all(int fd, void *buf, size_t len);

/* @size bytes of heap memory, filled. */
void *pb_rawnet_buf_alloc(size_t size);

/* Split "ip:port" into @ip (@iplen bytes) and *@port_p; returns 0 or -1. */
int pb_rawnet_addr_parse(const char *s, char *ip, size_t iplen, uint16_t *port_p);

/* ---- the server --------------------------------------------------------- */

typedef struct {
    int lfd; /* TCP listener, until pb_rawnet_accept */
    int ufd; /* UDP socket */
    int fd2; /* TCP connection 2, from pb_rawnet_accept on */
    uint16_t tcp_port, udp_port;
} pb_rawnet_listener_t;

/* Bind a TCP listener and a UDP socket to @ip, any ports. */
void pb_rawnet_listen(pb_rawnet_listener_t *l, const char *ip);

/* Accept the client's connection 1, send the hello, accept its connection 2
 * (into l->fd2) and close the listener; returns connection 1. */
int pb_rawnet_accept(pb_rawnet_listener_t *l);

/* Wait (up to PB_RAWNET_CMD_TIMEOUT_S) for the next command and check its
 * magic and size (1 to PB_RAWNET_BUF_SIZE). */
void pb_rawnet_cmd_recv(int fd, pb_rawnet_cmd_t *c);

/*
 * Answer command @c if it is a raw test (TCP ping-pong on one connection or
 * on two, blocking or busy-polling, TCP stream, UDP ping-pong) until its
 * STOP message, with @buf of PB_RAWNET_BUF_SIZE bytes.  @return true when
 * served; false for any other command.
 */
bool pb_rawnet_serve(pb_rawnet_listener_t *l, int fd, char *buf, const pb_rawnet_cmd_t *c);

/* Answer PB_RAWNET_CMD_QUIT (one byte) and close every socket. */
void pb_rawnet_server_close(pb_rawnet_listener_t *l, int fd);

/* ---- the client --------------------------------------------------------- */

typedef struct {
    int fd;        /* TCP connection 1: commands and TCP tests */
    int fd2;       /* TCP connection 2: the answers of tcp_pingpong_split[_poll] */
    int ufd;       /* UDP, connected to the server's port */
    char *tx, *rx; /* message buffers */
    size_t size;   /* message size of the running test */
} pb_rawnet_client_t;

/* Connect to the server at @ip:@port, read its hello, make connection 2;
 * messages up to PB_RAWNET_BUF_SIZE are sent, TCP answers up to @rx_size
 * received. */
void pb_rawnet_connect(pb_rawnet_client_t *c, const char *ip, uint16_t port, size_t rx_size);

/* Send command @cmd for messages of @size bytes. */
void pb_rawnet_cmd_send(pb_rawnet_client_t *c, uint32_t cmd, size_t size);

/* Send PB_RAWNET_CMD_QUIT, wait for the answer, close and free. */
void pb_rawnet_close(pb_rawnet_client_t *c);

/* One raw test: its record fields and how it is timed. */
typedef struct {
    const char *test, *transport, *metric, *unit, *options;
    uint32_t cmd;
    pb_bench_op_func_t op; /* @arg: the pb_rawnet_client_t */
    size_t lo, hi;         /* sizes postbox-net-bench measures */
} pb_rawnet_test_t;

enum {
    PB_RAWNET_TCP_PINGPONG,
    PB_RAWNET_TCP_PINGPONG_SPLIT,
    PB_RAWNET_TCP_PINGPONG_POLL,
    PB_RAWNET_TCP_PINGPONG_SPLIT_POLL,
    PB_RAWNET_TCP_STREAM,
    PB_RAWNET_UDP_PINGPONG,
    PB_RAWNET_NTESTS
};

extern const pb_rawnet_test_t pb_rawnet_tests[PB_RAWNET_NTESTS];

/*
 * One figure of test @t at @size bytes: the command, the engine's samples,
 * the STOP exchange.  @st receives the half round trip in us (latency) or
 * MB/s (bandwidth).
 */
void pb_rawnet_measure(const pb_bench_opts_t *opts, pb_rawnet_client_t *c,
                       const pb_rawnet_test_t *t, size_t size, pb_bench_stats_t *st);

#endif /* PB_BENCH_RAWNET_H */
