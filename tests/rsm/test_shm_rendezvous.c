/* shm: what a process of the exporter's own user, speaking to a segment's
 * rendezvous socket by hand, can make the exporter do or hold (a faulty or
 * hostile process of the job; tests/security/test_shm_limits.py has the
 * same as another user).  A request with a wrong MAC is refused without a
 * MAC (no oracle); a connection that does not finish its handshake is
 * closed after its time; connections in their handshake are capped, the
 * oldest closed for a newcomer; an exporter out of descriptors neither
 * spins nor fills its log; and a real importer is served throughout. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rsm/shm_layout.h"
#include "rsm_util.h"
#include "util/siphash.h"

#define PG (pbt_page_size())
#define JOB_ID "pbt-rendezvous"
/* the exporter's limits (src/rsm/shm.c) */
#define HANDSHAKE_MS 1000
#define MAX_HANDSHAKES 64

static const char job_secret[] = "00112233445566778899aabbccddeeff";

static void become_job_member(void)
{
    if (!pbt_is_shm())
        pbt_skip("the rendezvous is the shm transport's");
    setenv("POSTBOX_JOB_ID", JOB_ID, 1);
    setenv("POSTBOX_JOB_SECRET", job_secret, 1);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A new connection to @ex's rendezvous socket, non-blocking unless
 * @blocking; -1 with errno if the connect failed. */
static int rendezvous_connect(const pbt_exporter_t *ex, int blocking)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "postbox-rsm/%s/%u/%08x", JOB_ID,
                     (unsigned)ex->node, (unsigned)ex->segid);
    int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | (blocking ? 0 : SOCK_NONBLOCK), 0);

    CHECK_SYS(sock);
    if (connect(sock, (struct sockaddr *)&addr,
                (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) != 0) {
        int err = errno;

        close(sock);
        errno = err;
        return -1;
    }
    return sock;
}

/* Wait up to @timeout_ms for @sock to become readable; @return whether it did. */
static int wait_readable(int sock, int timeout_ms)
{
    struct pollfd pfd = {.fd = sock, .events = POLLIN};

    return poll(&pfd, 1, timeout_ms) == 1;
}

/* Whether the exporter has closed @sock (reading what it sent before). */
static int closed_by_exporter(int sock)
{
    char buf[64];
    ssize_t n;

    while ((n = recv(sock, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
        ;
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* CPU seconds process @pid has used so far. */
static double cpu_seconds(pid_t pid)
{
    char path[64], text[1024];
    unsigned long utime = 0, stime = 0;
    const char *fields;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    CHECK(f != NULL);
    CHECK(fgets(text, sizeof(text), f) != NULL);
    fclose(f);
    fields = strrchr(text, ')');
    CHECK(fields != NULL);
    CHECK(sscanf(fields + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                 &stime) == 2);
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* A real import of @ex's segment, read back. */
static void check_import_served(const pbt_exporter_t *ex, const char *when)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    uint8_t buf[64];
    int rc = pbt_connect(c, ex, RSM_PERM_READ, &im);

    CHECK_MSG(rc == RSM_SUCCESS, "%s: import returned %d (%s)", when, rc, rsm_strerror(rc));
    CHECK_OK(rsm_memseg_import_get(im, 0, buf, sizeof(buf)));
    CHECK(pbt_check_pattern(buf, sizeof(buf), 0, ex->seed) == (size_t)-1);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
}

/* A request whose MAC is wrong (a key not of the job, a nonce of the
 * requester's choosing) gets REFUSED: no status, no MAC, no descriptor,
 * then the close.  The exporter used to answer with a MAC under the job
 * secret over the chosen nonce. */
static void case_wrong_mac_refused_without_mac(void)
{
    pbt_export_opts_t o = {.size = PG, .seed = 1};
    pbt_exporter_t ex;

    become_job_member();
    pbt_exporter_start(&ex, &o);
    for (int round = 0; round < 2; round++) {
        uint8_t wrong_key[16] = {0};
        pb_shm_msg_hello_t hello;
        pb_shm_msg_request_t req = {
            .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_REQUEST},
            .node = ex.node,
            .segid = ex.segid,
            .perm = RSM_PERM_READ,
        };
        pb_shm_msg_reply_t answer;
        char cbuf[CMSG_SPACE(sizeof(int) * PB_SHM_REPLY_FDS)];
        struct iovec iov = {&answer, sizeof(answer)};
        struct msghdr msg = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
        int sock = rendezvous_connect(&ex, 1);

        CHECK_SYS(sock);
        CHECK(recv(sock, &hello, sizeof(hello), 0) == (ssize_t)sizeof(hello));
        memset(req.nonce, 0x3c, sizeof(req.nonce));
        req.mac = pb_siphash24(wrong_key, req.nonce, sizeof(req.nonce));
        CHECK(send(sock, &req, sizeof(req), 0) == (ssize_t)sizeof(req));
        CHECK(wait_readable(sock, 5000));
        CHECK(recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) == (ssize_t)sizeof(answer));
        CHECK_MSG(answer.hdr.type == PB_SHM_MSG_REFUSED,
                  "a request with a wrong MAC got message type %u, not REFUSED", answer.hdr.type);
        CHECK_MSG(answer.mac == 0, "the refusal carries a MAC: %#llx",
                  (unsigned long long)answer.mac);
        CHECK(answer.status == 0 && answer.perm == 0 && answer.size == 0);
        CHECK(msg.msg_controllen == 0);
        CHECK(wait_readable(sock, 5000) && closed_by_exporter(sock));
        close(sock);
    }
    check_import_served(&ex, "after the refusals");
    pbt_exporter_stop(&ex);
}

/* A connection that says nothing is closed after the handshake time. */
static void case_idle_connection_closed_after_handshake_time(void)
{
    pbt_export_opts_t o = {.size = PG, .seed = 2};
    pbt_exporter_t ex;
    int64_t start, open_ms;
    int sock;

    become_job_member();
    pbt_exporter_start(&ex, &o);
    sock = rendezvous_connect(&ex, 1);
    CHECK_SYS(sock);
    start = now_ms();
    while (wait_readable(sock, 5000) && !closed_by_exporter(sock))
        ;
    open_ms = now_ms() - start;
    CHECK_MSG(closed_by_exporter(sock), "an idle connection was still open after %lld ms",
              (long long)open_ms);
    CHECK_MSG(open_ms >= HANDSHAKE_MS - 100 && open_ms < 2500,
              "an idle connection was closed after %lld ms", (long long)open_ms);
    close(sock);
    check_import_served(&ex, "after the idle connection");
    pbt_exporter_stop(&ex);
}

/* Beyond MAX_HANDSHAKES connections in their handshake, the oldest is
 * closed for each newcomer, and an importer gets through. */
static void case_handshakes_capped_oldest_closed(void)
{
    enum {
        EXTRA = 20
    };
    pbt_export_opts_t o = {.size = PG, .seed = 3};
    int socks[MAX_HANDSHAKES + EXTRA];
    int closed_old = 0, closed_new = 0;
    pbt_exporter_t ex;

    become_job_member();
    pbt_exporter_start(&ex, &o);
    for (int i = 0; i < MAX_HANDSHAKES; i++) {
        socks[i] = rendezvous_connect(&ex, 1);
        CHECK_SYS(socks[i]);
        CHECK_MSG(wait_readable(socks[i], 5000), "connection %d was not greeted", i);
    }
    pbt_sleep_ms(300); /* past the grace of the oldest */
    for (int i = MAX_HANDSHAKES; i < MAX_HANDSHAKES + EXTRA; i++) {
        socks[i] = rendezvous_connect(&ex, 1);
        CHECK_SYS(socks[i]);
        CHECK_MSG(wait_readable(socks[i], 5000), "connection %d was not greeted", i);
    }
    pbt_sleep_ms(100);
    for (int i = 0; i < MAX_HANDSHAKES + EXTRA; i++) {
        if (closed_by_exporter(socks[i]))
            *(i < EXTRA ? &closed_old : &closed_new) += 1;
    }
    CHECK_MSG(closed_old == EXTRA && closed_new == 0,
              "%d of the %d oldest connections and %d others were closed", closed_old, EXTRA,
              closed_new);
    check_import_served(&ex, "with the cap reached");
    for (int i = 0; i < MAX_HANDSHAKES + EXTRA; i++)
        close(socks[i]);
    pbt_exporter_stop(&ex);
}

/* An exporter that runs out of descriptors under idle connections neither
 * spins nor logs a line per turn, and an importer gets through. */
static void case_out_of_descriptors_no_spin(void)
{
    enum {
        FLOOD = 100,
        FLOOD_MS = 1500
    };
    pbt_export_opts_t o = {.size = PG, .seed = 4};
    struct rlimit saved, low;
    int socks[FLOOD];
    int saved_stderr, log_fd, opened = 0, lines = 0;
    char log[8192];
    ssize_t n;
    double cpu;
    pbt_exporter_t ex;

    become_job_member();
    /* the exporter inherits a low descriptor limit and logs into log_fd */
    log_fd = fileno(tmpfile());
    CHECK_SYS(log_fd);
    saved_stderr = dup(2);
    CHECK_SYS(saved_stderr);
    CHECK_SYS(getrlimit(RLIMIT_NOFILE, &saved));
    low = saved;
    low.rlim_cur = 32;
    CHECK_SYS(dup2(log_fd, 2));
    CHECK_SYS(setrlimit(RLIMIT_NOFILE, &low));
    pbt_exporter_start(&ex, &o);
    CHECK_SYS(setrlimit(RLIMIT_NOFILE, &saved));
    CHECK_SYS(dup2(saved_stderr, 2));
    close(saved_stderr);

    cpu = cpu_seconds(ex.peer.pid);
    for (int i = 0; i < FLOOD; i++) {
        socks[opened] = rendezvous_connect(&ex, 0);
        if (socks[opened] >= 0)
            opened++;
    }
    pbt_sleep_ms(FLOOD_MS);
    cpu = cpu_seconds(ex.peer.pid) - cpu;
    check_import_served(&ex, "out of descriptors");
    for (int i = 0; i < opened; i++)
        close(socks[i]);
    check_import_served(&ex, "after the flood");
    pbt_exporter_stop(&ex);

    n = pread(log_fd, log, sizeof(log) - 1, 0);
    CHECK_SYS(n);
    log[n] = '\0';
    for (const char *p = log; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    close(log_fd);
    fprintf(stderr, "  %d connections; exporter CPU %.2f s in %d ms; %d lines of log\n", opened,
            cpu, FLOOD_MS, lines);
    CHECK_MSG(opened > 32, "only %d connections were made", opened);
    CHECK_MSG(cpu < 0.25 * FLOOD_MS / 1000.0, "the exporter used %.2f s of CPU in %d ms", cpu,
              FLOOD_MS);
    CHECK_MSG(n < (ssize_t)sizeof(log) - 1 && lines < 20, "the exporter logged %d lines:\n%.2000s",
              lines, log);
}

static const pbt_case_t cases[] = {
    PBT_CASE(wrong_mac_refused_without_mac),
    PBT_CASE(idle_connection_closed_after_handshake_time),
    PBT_CASE(handshakes_capped_oldest_closed),
    PBT_CASE(out_of_descriptors_no_spin),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
