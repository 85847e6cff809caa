/* ofi: what an exporter's rendezvous over TCP (docs/ofi.md, "From another
 * node") answers a peer that speaks it by hand.  An exporter of a launched
 * job listens on TCP at POSTBOX_TCP_ADDR and says where in the HELLO of its
 * node's abstract socket; one outside a job does not listen.  A request
 * whose MAC is not under the job secret gets the connection closed with no
 * answer; an authenticated one for a segment the process does not publish
 * gets a MACed PB_ERR_NOT_PUBLISHED, also when it comes in pieces (a
 * stream); a connection that says nothing is closed once the handshake
 * time passed.  The peer here computes the MACs itself, with the
 * library's SipHash compiled in. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rsm/ofi/rendezvous_msg.h"
#include "rsm_util.h"
#include "util/siphash.h"
#include "util/status.h"

#define JOB_ID "pbt-ofi-rv"
#define WAIT_MS 10000
/* the exporter closes a silent TCP connection after this
 * (PB_OFI_CONNECT_TIMEOUT_MS, ofi_impl.h), when the next one comes */
#define HANDSHAKE_MS 5000

static const char job_secret[] = "0123456789abcdef0123456789abcdef";

static void secret_bytes(uint8_t key[16], const char *hex)
{
    for (int i = 0; i < 16; i++) {
        unsigned byte;

        CHECK(sscanf(hex + 2 * i, "%2x", &byte) == 1);
        key[i] = (uint8_t)byte;
    }
}

/* The exporter of this case, in a job with a secret (its TCP rendezvous
 * on 127.0.0.1), or in its user's solo job when @in_job is 0. */
static void start_exporter(pbt_exporter_t *ex, int in_job)
{
    pbt_export_opts_t opts = {0};

    if (in_job) {
        setenv("POSTBOX_JOB_ID", JOB_ID, 1);
        setenv("POSTBOX_JOB_SECRET", job_secret, 1);
        setenv("POSTBOX_TCP_ADDR", "127.0.0.1", 1);
    }
    pbt_exporter_start(ex, &opts);
}

/* Read exactly @len bytes within WAIT_MS.  @return @len, or what came
 * before the peer closed (0: closed at once). */
static size_t read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        ssize_t n;

        CHECK_MSG(poll(&pfd, 1, WAIT_MS) == 1, "no answer within %d ms", WAIT_MS);
        n = recv(fd, (char *)buf + got, len - got, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            break;
        CHECK_SYS(n);
        got += (size_t)n;
    }
    return got;
}

/* The HELLO of the abstract rendezvous socket of @ex's segment. */
static pb_ofi_rv_hello_t abstract_hello(const pbt_exporter_t *ex, int *fd_p)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    const char *job = getenv("POSTBOX_JOB_ID");
    char solo[32];
    pb_ofi_rv_hello_t hello;
    int n, fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    CHECK_SYS(fd);
    if (job == NULL) {
        snprintf(solo, sizeof(solo), "solo-%u", (unsigned)getuid());
        job = solo;
    }
    n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "%s/%s/%u/%08x",
                 OFI_RENDEZVOUS_PREFIX, job, (unsigned)ex->node, (unsigned)ex->segid);
    CHECK_SYS(connect(fd, (struct sockaddr *)&addr,
                      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)));
    CHECK_EQ_U64(read_full(fd, &hello, sizeof(hello)), sizeof(hello));
    CHECK(hello.magic == PB_OFI_RV_MAGIC && hello.type == OFI_RV_HELLO);
    *fd_p = fd;
    return hello;
}

/* Connect to the exporter's TCP rendezvous (as the abstract HELLO says)
 * and read its HELLO. */
static int tcp_dial(const pbt_exporter_t *ex, pb_ofi_rv_hello_t *hello)
{
    int local;
    pb_ofi_rv_hello_t where = abstract_hello(ex, &local);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_addr.s_addr = where.tcp_addr,
                               .sin_port = htons(where.tcp_port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    close(local);
    CHECK_MSG(where.tcp_port != 0, "the exporter of a job does not listen on TCP");
    CHECK_SYS(fd);
    CHECK_SYS(connect(fd, (struct sockaddr *)&addr, sizeof(addr)));
    CHECK_EQ_U64(read_full(fd, hello, sizeof(*hello)), sizeof(*hello));
    CHECK(hello->magic == PB_OFI_RV_MAGIC && hello->type == OFI_RV_HELLO);
    return fd;
}

/* A request for @segid after @hello, MACed under @secret_hex. */
static pb_ofi_rv_request_t request_for(const pb_ofi_rv_hello_t *hello, uint32_t segid,
                                       const char *secret_hex)
{
    pb_ofi_rv_request_t req = {.magic = PB_OFI_RV_MAGIC,
                               .type = OFI_RV_REQUEST,
                               .node = 1,
                               .segid = segid,
                               .perm = RSM_PERM_READ,
                               .import_token = 7,
                               .name_len = 16};
    uint8_t key[16];
    pb_siphash_t state;

    for (int i = 0; i < 16; i++)
        req.nonce[i] = (uint8_t)(0xa0 + i);
    secret_bytes(key, secret_hex);
    pb_siphash_init(&state, key);
    pb_siphash_update(&state, "postbox-ofi-req", 16);
    pb_siphash_update(&state, hello->nonce, 16);
    pb_siphash_update(&state, &req, offsetof(pb_ofi_rv_request_t, mac));
    req.mac = pb_siphash_final(&state);
    return req;
}

/* Check @reply answers @req with @status, MACed under the job secret. */
static void check_reply(const pb_ofi_rv_request_t *req, const pb_ofi_rv_reply_t *reply,
                        int32_t status)
{
    uint8_t key[16];
    pb_siphash_t state;

    CHECK(reply->magic == PB_OFI_RV_MAGIC && reply->type == OFI_RV_REPLY);
    CHECK_EQ_U64((uint64_t)(uint32_t)reply->status, (uint64_t)(uint32_t)status);
    secret_bytes(key, job_secret);
    pb_siphash_init(&state, key);
    pb_siphash_update(&state, "postbox-ofi-rep", 16);
    pb_siphash_update(&state, req->nonce, 16);
    pb_siphash_update(&state, reply, offsetof(pb_ofi_rv_reply_t, mac));
    CHECK_MSG(reply->mac == pb_siphash_final(&state), "the reply's MAC is wrong");
}

static void case_hello_names_tcp_rendezvous_in_a_job(void)
{
    pbt_exporter_t ex;
    pb_ofi_rv_hello_t local, remote;
    int fd, lfd;

    start_exporter(&ex, 1);
    local = abstract_hello(&ex, &lfd);
    CHECK_EQ_U64(local.tcp_addr, htonl(INADDR_LOOPBACK));
    CHECK(local.tcp_port != 0);
    fd = tcp_dial(&ex, &remote);
    CHECK_EQ_U64(remote.tcp_port, local.tcp_port);
    CHECK(memcmp(remote.nonce, local.nonce, sizeof(local.nonce)) != 0);
    close(fd);
    close(lfd);
    pbt_exporter_stop(&ex);
}

static void case_hello_without_tcp_outside_a_job(void)
{
    pbt_exporter_t ex;
    pb_ofi_rv_hello_t hello;
    int fd;

    unsetenv("POSTBOX_JOB_ID");
    unsetenv("POSTBOX_JOB_SECRET");
    start_exporter(&ex, 0);
    hello = abstract_hello(&ex, &fd);
    CHECK_EQ_U64(hello.tcp_port, 0);
    CHECK_EQ_U64(hello.tcp_addr, 0);
    close(fd);
    pbt_exporter_stop(&ex);
}

/* One request to an exporter's rendezvous, and what must come of it. */
typedef struct {
    int over_tcp;       /* 1: its TCP rendezvous; 0: its node's abstract socket */
    uint32_t segid_xor; /* the segment asked for: the exporter's, XORed with this */
    const char *secret; /* the key of the request's MAC (hex) */
    size_t piece;       /* sent in pieces of this many bytes, 20 ms apart (0: at once) */
    int answered;       /* 1: a MACed PB_ERR_NOT_PUBLISHED comes; 0: the connection
                         * closes without an answer */
    int closed_after;   /* 1: the connection also ends after the answer */
} exchange_t;

static void run_exchange(const pbt_exporter_t *ex, const exchange_t *x)
{
    pb_ofi_rv_hello_t hello;
    pb_ofi_rv_request_t req;
    pb_ofi_rv_reply_t reply;
    const char *bytes = (const char *)&req;
    size_t piece = x->piece > 0 ? x->piece : sizeof(req);
    int fd;

    if (x->over_tcp)
        fd = tcp_dial(ex, &hello);
    else
        hello = abstract_hello(ex, &fd);
    req = request_for(&hello, ex->segid ^ x->segid_xor, x->secret);
    for (size_t sent = 0; sent < sizeof(req); sent += piece) {
        size_t n = sizeof(req) - sent < piece ? sizeof(req) - sent : piece;

        CHECK_EQ_U64(send(fd, bytes + sent, n, MSG_NOSIGNAL), n);
        if (x->piece > 0)
            pbt_sleep_ms(20);
    }
    if (x->answered) {
        CHECK_EQ_U64(read_full(fd, &reply, sizeof(reply)), sizeof(reply));
        check_reply(&req, &reply, PB_ERR_NOT_PUBLISHED);
    }
    if (!x->answered || x->closed_after)
        CHECK_EQ_U64(read_full(fd, &reply, sizeof(reply)), 0);
    close(fd);
}

/* Run the @n exchanges @xs in turn with one exporter in a job. */
static void run_exchanges(const exchange_t *xs, size_t n)
{
    pbt_exporter_t ex;

    start_exporter(&ex, 1);
    for (size_t i = 0; i < n; i++)
        run_exchange(&ex, &xs[i]);
    pbt_exporter_stop(&ex);
}

static void case_tcp_request_of_other_job_closed_without_reply(void)
{
    static const exchange_t xs[] = {
        {.over_tcp = 1, .secret = "ffeeddccbbaa99887766554433221100"},
        /* and it still answers a process of its job */
        {.over_tcp = 1, .segid_xor = 1, .secret = job_secret, .answered = 1},
    };

    run_exchanges(xs, sizeof(xs) / sizeof(xs[0]));
}

static void case_tcp_request_in_pieces_for_unpublished_segment(void)
{
    /* a stream: the exporter waits for the whole request; a refused
     * importer's connection ends */
    static const exchange_t xs[] = {
        {.over_tcp = 1,
         .segid_xor = 0x10,
         .secret = job_secret,
         .piece = 24,
         .answered = 1,
         .closed_after = 1},
    };

    run_exchanges(xs, sizeof(xs) / sizeof(xs[0]));
}

static void case_abstract_request_for_other_segment_not_published(void)
{
    /* the socket is the segment's: a request naming another is refused */
    static const exchange_t xs[] = {
        {.segid_xor = 1, .secret = job_secret, .answered = 1},
    };

    run_exchanges(xs, sizeof(xs) / sizeof(xs[0]));
}

static void case_tcp_silent_connection_closed_after_handshake_time(void)
{
    pbt_exporter_t ex;
    pb_ofi_rv_hello_t hello;
    char byte;
    int silent, next;

    start_exporter(&ex, 1);
    silent = tcp_dial(&ex, &hello);
    pbt_sleep_ms(HANDSHAKE_MS + 300);
    /* the next connection's accept closes the one past its time */
    next = tcp_dial(&ex, &hello);
    CHECK_EQ_U64(read_full(silent, &byte, 1), 0);
    close(silent);
    close(next);
    pbt_exporter_stop(&ex);
}

static const pbt_case_t cases[] = {
    PBT_CASE(hello_names_tcp_rendezvous_in_a_job),
    PBT_CASE(hello_without_tcp_outside_a_job),
    PBT_CASE(tcp_request_of_other_job_closed_without_reply),
    PBT_CASE(tcp_request_in_pieces_for_unpublished_segment),
    PBT_CASE(abstract_request_for_other_segment_not_published),
    PBT_CASE(tcp_silent_connection_closed_after_handshake_time),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
