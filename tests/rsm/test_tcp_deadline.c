/*
 * Deadlines of the tcp transport (docs/tcp.md, Faults; docs/security.md,
 * Deadlines): requests toward an exporter that is alive but does not
 * answer (stopped with SIGSTOP) end with RSMERR_TIMEOUT after their
 * documented time, and the late reply, when the exporter runs again, is
 * dropped: it lands neither in the caller's buffer (which may be gone) nor
 * closes the connection.  An import connect toward an exporter that keeps
 * closing connections before its HELLO (shedding load) ends with
 * RSMERR_TIMEOUT at its deadline too.
 *
 *   POSTBOX_TCP_REQUEST_TIMEOUT_MS  import connect (rendezvous, handshake,
 *                                   attach) and lookups
 *   POSTBOX_TCP_REPLY_TIMEOUT_MS    gets and barriers (0 by default: none)
 *
 * Run on the tcp controller only, with the exporter server on node 1.
 */
#include <arpa/inet.h>
#include <postbox/rsm.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "rsm/tcp/wire.h"
#include "rsm_util.h"

#define SEED 5

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The state letter of process @pid (/proc/PID/stat): 'T' once stopped. */
static char process_state(pid_t pid)
{
    char path[64], line[512], *close_paren;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    CHECK(f != NULL);
    n = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[n] = '\0';
    close_paren = strrchr(line, ')');
    CHECK(close_paren != NULL && close_paren[1] == ' ');
    return close_paren[2];
}

/* SIGSTOP (and wait until it took effect: kill only queues it) or SIGCONT
 * the exporter. */
static void stop_exporter(pbt_exporter_t *ex, int sig)
{
    CHECK_SYS(kill(ex->peer.pid, sig));
    for (int i = 0; sig == SIGSTOP && process_state(ex->peer.pid) != 'T'; i++) {
        CHECK_MSG(i < 1000, "the exporter did not stop");
        pbt_sleep_ms(1);
    }
}

/* Get [off, off + len) until it succeeds (a late reply ahead of it on the
 * connection may still be arriving) and check it is the exporter's. */
static void expect_get_works(rsm_memseg_import_handle_t im, size_t off, size_t len)
{
    uint8_t *buf = malloc(len);
    int rc = RSMERR_TIMEOUT;

    for (int i = 0; i < 50 && rc == RSMERR_TIMEOUT; i++)
        rc = rsm_memseg_import_get(im, (off_t)off, buf, len);
    CHECK_OK(rc);
    CHECK_MSG(pbt_check_pattern(buf, len, off, SEED) == (size_t)-1,
              "a get after the late replies returned other bytes than the exporter's");
    free(buf);
}

static void case_get_and_barrier_toward_stopped_exporter_time_out(void)
{
    pbt_export_opts_t o = {.size = 16 * pbt_page_size(), .seed = SEED};
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    rsmapi_barrier_t bar;
    pbt_exporter_t ex;
    uint8_t buf[4096], sentinel[4096];
    double start, took;

    setenv("POSTBOX_TCP_REPLY_TIMEOUT_MS", "300", 1);
    c = pbt_ctlr_get();
    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    expect_get_works(im, 0, sizeof(buf));

    stop_exporter(&ex, SIGSTOP);
    start = now_ms();
    CHECK_RC(rsm_memseg_import_get(im, 4096, buf, sizeof(buf)), RSMERR_TIMEOUT);
    took = now_ms() - start;
    CHECK_MSG(took >= 290 && took < 2300, "the get timed out after %.0f ms, not about 300", took);
    /* the caller may reuse its buffer at once: the late reply must not land in it */
    memset(buf, 0xee, sizeof(buf));
    memset(sentinel, 0xee, sizeof(sentinel));

    CHECK_OK(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    CHECK_OK(rsm_memseg_import_put(im, 8192, sentinel, 64)); /* (sent, not applied) */
    start = now_ms();
    CHECK_RC(rsm_memseg_import_close_barrier(&bar), RSMERR_TIMEOUT);
    took = now_ms() - start;
    CHECK_MSG(took >= 290 && took < 2300, "the barrier timed out after %.0f ms, not about 300",
              took);
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));

    stop_exporter(&ex, SIGCONT);
    /* the late replies come and are dropped; the connection lives on */
    pbt_sleep_ms(300);
    expect_get_works(im, 4096, 4096);
    CHECK_MSG(memcmp(buf, sentinel, sizeof(buf)) == 0, "the late reply wrote the caller's buffer");
    pbt_exporter_expect(&ex, 8192, sentinel, 64, "the put before the barrier that timed out");
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

typedef struct {
    pbt_exporter_t *ex;
    volatile uint8_t *first; /* the byte of the reply that arrives first */
    uint8_t expect;
} stopper_t;

/* Stop the exporter as soon as the first byte of its reply has arrived. */
static void *stop_when_data_arrives(void *arg)
{
    stopper_t *s = arg;

    for (int i = 0; *s->first != s->expect; i++) {
        CHECK_MSG(i < 100000, "the reply did not begin to arrive");
        usleep(100);
    }
    stop_exporter(s->ex, SIGSTOP);
    return NULL;
}

typedef struct {
    pbt_exporter_t *ex;
    size_t len;
} long_get_t;

/* In a peer: get the first len bytes of ex's segment with no deadline, and
 * send the time it took (a double, ms). */
static void time_long_get_peer(pbt_peer_t *self, void *arg)
{
    const long_get_t *g = arg;
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    uint8_t *buf = malloc(g->len);
    double start, took;

    CHECK(buf != NULL);
    unsetenv("POSTBOX_TCP_REPLY_TIMEOUT_MS");
    c = pbt_ctlr_get();
    CHECK_OK(pbt_connect(c, g->ex, RSM_PERM_READ, &im));
    start = now_ms();
    CHECK_OK(rsm_memseg_import_get(im, 0, buf, g->len));
    took = now_ms() - start;
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
    free(buf);
    pbt_send(self->wr, &took, sizeof(took));
}

static void case_get_timing_out_during_its_data_drops_the_rest(void)
{
    /* a long reply is on its way when the deadline passes (the exporter
     * stopped once its first bytes arrived): what has arrived stays, the
     * rest goes to scratch when it comes, never to the buffer the caller
     * got back */
    const size_t len = (size_t)64 << 20;
    pbt_export_opts_t o = {.size = len, .seed = SEED};
    long_get_t timed = {.len = len};
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;
    pbt_peer_t peer;
    uint8_t *buf, *watched, *copy = malloc(len);
    stopper_t stopper = {.ex = &ex};
    pthread_t thread;
    char deadline[32];
    double whole_ms;
    size_t got;
    int fd;

    CHECK(copy != NULL);
    pbt_exporter_start(&ex, &o);
    /* The deadline must pass after the reply's first bytes arrived, which
     * takes as long as the exporter needs to start sending 64 MB: a few ms
     * in an optimised build, far longer under a sanitizer or on a loaded
     * machine.  Measured first, as a whole get (which is longer), in a
     * peer: the deadline is read when the transport starts, once a process. */
    timed.ex = &ex;
    peer = pbt_peer_start(time_long_get_peer, &timed);
    pbt_recv(peer.rd, &whole_ms, sizeof(whole_ms));
    pbt_peer_join(&peer, 10000, 0);
    snprintf(deadline, sizeof(deadline), "%d", 500 + 2 * (int)whole_ms);
    setenv("POSTBOX_TCP_REPLY_TIMEOUT_MS", deadline, 1);
    printf("(a whole get of 64 MB took %.0f ms: a deadline of %s ms)\n", whole_ms, deadline);

    /* the get's buffer, mapped twice: the watcher reads the bytes arriving
     * through the second mapping, as another process would, so its racy
     * look (by design) is not a data race of this process's memory */
    fd = memfd_create("get-buffer", MFD_CLOEXEC);
    CHECK_SYS(fd);
    CHECK_SYS(ftruncate(fd, (off_t)len));
    buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    watched = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(buf != MAP_FAILED && watched != MAP_FAILED);
    close(fd);

    c = pbt_ctlr_get();
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_READ, &im));
    for (size_t i = 0; stopper.first == NULL; i++) {
        if (pbt_pattern(i, SEED) != 0) {
            stopper.first = watched + i;
            stopper.expect = pbt_pattern(i, SEED);
        }
    }
    CHECK(pthread_create(&thread, NULL, stop_when_data_arrives, &stopper) == 0);
    CHECK_RC(rsm_memseg_import_get(im, 0, buf, len), RSMERR_TIMEOUT);
    CHECK(pthread_join(thread, NULL) == 0);
    got = pbt_check_pattern(buf, len, 0, SEED);
    CHECK_MSG(got > 0 && got != (size_t)-1,
              "the get did not time out in the middle of its data (deadline %s ms)", deadline);
    memcpy(copy, buf, len);

    stop_exporter(&ex, SIGCONT);
    pbt_sleep_ms(500); /* the rest of the reply arrives, into scratch */
    expect_get_works(im, len - 4096, 4096);
    CHECK_MSG(memcmp(buf, copy, len) == 0,
              "the reply went on into the buffer after the get timed out");
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
    munmap(buf, len);
    munmap(watched, len);
    free(copy);
}

/* The rendezvous socket of the exporter of @segid on @node, by its name in
 * /proc/net/unix ("@postbox-tcp/<job>/<node>/<segid>"), into @addr. */
static void rendezvous_addr(rsm_node_id_t node, rsm_memseg_id_t segid, struct sockaddr_un *addr,
                            socklen_t *len)
{
    char line[512], suffix[64], *name = NULL;
    FILE *f = fopen("/proc/net/unix", "r");

    CHECK(f != NULL);
    snprintf(suffix, sizeof(suffix), "/%u/%08x", (unsigned)node, (unsigned)segid);
    while (name == NULL && fgets(line, sizeof(line), f) != NULL) {
        char *at = strstr(line, "@postbox-tcp/");
        size_t n;

        if (at == NULL)
            continue;
        at[strcspn(at, " \n")] = '\0';
        n = strlen(at);
        if (n > strlen(suffix) && strcmp(at + n - strlen(suffix), suffix) == 0)
            name = at;
    }
    fclose(f);
    CHECK_MSG(name != NULL, "no rendezvous socket for segment %#x", segid);
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    memcpy(addr->sun_path + 1, name + 1, strlen(name) - 1);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
}

/* The directory the rendezvous socket of @ex's segment answers, into
 * @directory (@size bytes).  @return its length. */
static ssize_t directory_of(const pbt_exporter_t *ex, char *directory, size_t size)
{
    struct sockaddr_un addr;
    socklen_t addr_len;
    ssize_t len;
    int fd;

    rendezvous_addr(ex->node, ex->segid, &addr, &addr_len);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    CHECK_SYS(fd);
    CHECK_SYS(connect(fd, (struct sockaddr *)&addr, addr_len));
    len = recv(fd, directory, size, 0);
    CHECK(len > 0);
    close(fd);
    return len;
}

/* Answer the rendezvous of (@ex's node, @segid), once, with @directory
 * (@len bytes), from a child process.  @return the child. */
static pid_t rendezvous_answer_once(const pbt_exporter_t *ex, rsm_memseg_id_t segid,
                                    const char *directory, ssize_t len)
{
    struct sockaddr_un addr;
    socklen_t addr_len;
    char name[108];
    pid_t server;
    int fd;

    rendezvous_addr(ex->node, ex->segid, &addr, &addr_len);
    memcpy(name, addr.sun_path, sizeof(name));
    snprintf(strrchr(name + 1, '/') + 1, 9, "%08x", (unsigned)segid);
    memcpy(addr.sun_path, name, sizeof(name));
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    CHECK_SYS(fd);
    CHECK_SYS(bind(fd, (struct sockaddr *)&addr, addr_len));
    CHECK_SYS(listen(fd, 4));
    server = fork();
    CHECK(server >= 0);
    if (server == 0) {
        int one = accept(fd, NULL, NULL);

        _exit(one >= 0 && send(one, directory, (size_t)len, 0) == len ? 0 : 1);
    }
    close(fd);
    return server;
}

static void expect_exit_0(pid_t pid)
{
    int status;

    CHECK(pbt_waitpid_timed(pid, 5000, &status) == 1);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void case_connect_toward_silent_exporter_times_out(void)
{
    /* an exporter that finished the handshake and never answers the
     * attach: a stopped one, reached through a rendezvous socket that
     * answers for it (a copy of its directory under another segment id) */
    pbt_export_opts_t o = {.seed = SEED};
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im, im2;
    pbt_exporter_t ex;
    char directory[256];
    rsm_memseg_id_t fake_segid;
    ssize_t dir_len;
    double start, took;
    pid_t server;

    setenv("POSTBOX_TCP_REQUEST_TIMEOUT_MS", "1000", 1);
    c = pbt_ctlr_get();
    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));

    dir_len = directory_of(&ex, directory, sizeof(directory));
    fake_segid = ex.segid ^ 0x5a5a;
    server = rendezvous_answer_once(&ex, fake_segid, directory, dir_len);

    stop_exporter(&ex, SIGSTOP);
    /* the attach goes over the connection already made, and is not answered */
    start = now_ms();
    CHECK_RC(rsm_memseg_import_connect(c, ex.node, fake_segid, RSM_PERM_RDWR, &im2),
             RSMERR_TIMEOUT);
    took = now_ms() - start;
    CHECK_MSG(took >= 950 && took < 3000, "the attach timed out after %.0f ms, not about 1000",
              took);
    expect_exit_0(server);
    /* the segment's own rendezvous: the stopped exporter does not answer it */
    start = now_ms();
    CHECK_RC(rsm_memseg_import_connect(c, ex.node, ex.segid, RSM_PERM_RDWR, &im2), RSMERR_TIMEOUT);
    took = now_ms() - start;
    CHECK_MSG(took >= 950 && took < 3000, "the lookup timed out after %.0f ms, not about 1000",
              took);

    stop_exporter(&ex, SIGCONT);
    /* its late answers are dropped; the connection and the first import work */
    pbt_sleep_ms(200);
    expect_get_works(im, 0, 4096);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_toward_exporter_shedding_load_times_out(void)
{
    /* an exporter at its limit of handshakes closes new connections before
     * its HELLO, and the importer dials again until its deadline: what ran
     * out then is the time (RSMERR_TIMEOUT), not the segment (a local
     * flood must not make importers believe it gone).  The "exporter" is a
     * listener that closes every connection at once, named by a copy of a
     * real directory under another segment id */
    pbt_export_opts_t o = {.seed = SEED};
    struct sockaddr_in shed = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t shed_len = sizeof(shed);
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;
    pb_tcp_directory_t dir;
    rsm_memseg_id_t fake_segid;
    double start, took;
    pid_t server, shedder;
    int listen_fd, status;

    setenv("POSTBOX_TCP_REQUEST_TIMEOUT_MS", "1000", 1);
    c = pbt_ctlr_get();
    pbt_exporter_start(&ex, &o);
    CHECK(directory_of(&ex, (char *)&dir, sizeof(dir)) == (ssize_t)sizeof(dir));

    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_SYS(listen_fd);
    CHECK_SYS(bind(listen_fd, (struct sockaddr *)&shed, sizeof(shed)));
    CHECK_SYS(listen(listen_fd, 64));
    CHECK_SYS(getsockname(listen_fd, (struct sockaddr *)&shed, &shed_len));
    shedder = fork();
    CHECK(shedder >= 0);
    if (shedder == 0) {
        for (;;) {
            int one = accept(listen_fd, NULL, NULL);

            if (one >= 0)
                close(one);
        }
    }
    close(listen_fd);
    dir.addr = shed.sin_addr.s_addr;
    dir.port = ntohs(shed.sin_port);
    fake_segid = ex.segid ^ 0x5a5a;
    server = rendezvous_answer_once(&ex, fake_segid, (const char *)&dir, sizeof(dir));

    start = now_ms();
    CHECK_RC(rsm_memseg_import_connect(c, ex.node, fake_segid, RSM_PERM_RDWR, &im), RSMERR_TIMEOUT);
    took = now_ms() - start;
    CHECK_MSG(took >= 950 && took < 2000, "the connect ended after %.0f ms, not about 1000", took);
    expect_exit_0(server);
    CHECK_SYS(kill(shedder, SIGKILL));
    CHECK(pbt_waitpid_timed(shedder, 5000, &status) == 1);
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static const pbt_case_t cases[] = {
    PBT_CASE(get_and_barrier_toward_stopped_exporter_time_out),
    PBT_CASE(get_timing_out_during_its_data_drops_the_rest),
    PBT_CASE(connect_toward_silent_exporter_times_out),
    PBT_CASE(connect_toward_exporter_shedding_load_times_out),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
