/*
 * A live frame-stream fuzzer against a real tcp exporter (docs/tcp.md,
 * Wire format; docs/security.md, How it is tested).
 *
 * The exporter is this program re-executed as RSM node 1 of a job whose id
 * and secret the test chooses: it exports and publishes four segments of
 * different sizes and permissions (a writable one, a read-only one, one
 * between inaccessible guard pages, a write-only one between canary pages)
 * and then serves, rebinding the writable one to other memory and
 * withdrawing and publishing again the guarded one every few milliseconds.  The test, as node 0 of
 * the same job, finds the exporter's port through the segments' rendezvous socket and opens
 * thousands of connections to it.  On each it speaks the real handshake
 * with the job key (the library's wire.c and siphash.c are compiled in),
 * now and then a spoiled one, then sends a stream of frames generated from
 * the seed: attaches, puts, gets, barriers, signals, detaches and lookups,
 * most of them valid, some with fields at or past their bounds, unknown
 * types and flags, payloads shorter or longer than their header says, a
 * wrong header or payload MAC, a skipped or replayed sequence number, or
 * raw bytes; nearly all sealed with correct MACs so that they reach the
 * checks behind the MAC.  Up to STREAMS_AT_ONCE connections are open at
 * once, their bytes sent in chunks of random size in the order poll finds
 * them writable; each ends cut at a random point, reset, or half-closed
 * and read to the end.  Every byte the exporter sends back is run through
 * the importer's receive machine, so a reply with a wrong MAC or a
 * malformed header fails the test.
 *
 * Then: the exporter is alive (it never stopped: a crash or a sanitizer's
 * report ends it), closed every connection, its resident memory did not
 * grow with the streams, the read-only segment and the canaries are
 * intact, and an importer using the public API still attaches, puts, gets
 * and closes barriers with its data checked.  Last, the exporter tears its
 * segments down and exits 0 (under AddressSanitizer: leak-checked).
 *
 *   POSTBOX_TEST_FUZZ_STREAMS  connections (default 3000)
 *   POSTBOX_TEST_FUZZ_SEED     the seed (default: from the clock); printed
 *                              first, so a failing run can be repeated
 */
#include <endian.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rsm/tcp/wire.h"
#include "rsm_util.h"

#define EXPORTER_NODE 1
#define IMPORTER_NODE 0
#define STREAMS_AT_ONCE 4
#define SEG_COUNT 4
#define PAGE 4096u
#define SEED_OF_SEG(i) (11u + (unsigned)(i))
/* the exporter closes every connection this long after its end, at most */
#define STREAM_END_TIMEOUT_MS 10000
/* the exporter's resident memory may grow this much between the end of the
 * first quarter of the streams and the end of all of them (allocator
 * caches; a leak per stream would be thousands of times a connection) */
#define RSS_GROWTH_MAX_KB (24 * 1024)

/* ---- the segments ------------------------------------------------------------ */

enum {
    SEG_RW,
    SEG_RO,
    SEG_GUARDED,
    SEG_WO
};

typedef struct {
    size_t size;
    /* what a process of node IMPORTER_NODE may attach with (RSM_PERM_*);
     * the access list names no other node but for SEG_RW and SEG_GUARDED,
     * which have none (every node: read and write) */
    uint32_t grant;
} seg_spec_t;

static const seg_spec_t seg_specs[SEG_COUNT] = {
    [SEG_RW] = {16 * PAGE, RSM_PERM_RDWR},
    [SEG_RO] = {2 * PAGE, RSM_PERM_READ},
    [SEG_GUARDED] = {PAGE, RSM_PERM_RDWR},
    [SEG_WO] = {3 * PAGE, RSM_PERM_WRITE},
};

/* What the exporter tells the test once its segments are published. */
typedef struct {
    uint32_t segid[SEG_COUNT];
} ready_msg_t;

enum {
    CMD_CHURN = 1, /* start the rebinds and withdrawals */
    CMD_CHECK,     /* stop them, and check the exporter's memory */
    CMD_EXIT
};

typedef struct {
    int32_t rc;      /* 0, or 1 when the check found damage */
    uint32_t rounds; /* of rebinds and withdrawals */
    char what[200];  /* what was damaged */
} check_msg_t;

/* ---- randomness ------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t *state, uint64_t n)
{
    return n == 0 ? 0 : rng_next(state) % n;
}

/* 1 with probability @percent / 100 */
static int rng_chance(uint64_t *state, unsigned percent)
{
    return rng_below(state, 100) < percent;
}

static void rng_fill(uint64_t *state, void *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        ((uint8_t *)buf)[i] = (uint8_t)rng_next(state);
}

static uint64_t env_u64(const char *name, uint64_t fallback)
{
    const char *text = getenv(name);

    return text != NULL && *text != '\0' ? strtoull(text, NULL, 0) : fallback;
}

/* ---- the exporter ------------------------------------------------------------ */

typedef struct {
    char *mem; /* the segment */
    char *alloc;
    size_t alloc_len;
    int mapped; /* alloc is an mmap (SEG_GUARDED), else aligned_alloc */
    rsm_memseg_export_handle_t h;
    rsm_memseg_id_t segid;
} exported_t;

/* What the exporter changes under the streams (SEG_RW and SEG_GUARDED):
 * their frames then meet rebinds (a put being received is redirected) and
 * withdrawals (WITHDRAWN, puts dropped, attaches refused). */
typedef struct {
    exported_t *segs;
    char *spare; /* SEG_RW's other memory, exactly its size */
    atomic_int stop;
    pthread_t thread;
    uint32_t rounds;
} churn_t;

#define CHURN_PERIOD_MS 15

/* The segments stay as they are from now on. */
static void churn_stop(churn_t *ch)
{
    if (!atomic_exchange(&ch->stop, 1))
        CHECK(pthread_join(ch->thread, NULL) == 0);
}

static void *churn_main(void *arg)
{
    churn_t *ch = arg;
    exported_t *rw = &ch->segs[SEG_RW], *guarded = &ch->segs[SEG_GUARDED];

    for (uint32_t round = 0; !atomic_load(&ch->stop); round++) {
        char *old = rw->mem;

        pbt_sleep_ms(CHURN_PERIOD_MS);
        CHECK_OK(rsm_memseg_export_rebind(rw->h, ch->spare, 0, seg_specs[SEG_RW].size));
        rw->mem = rw->alloc = ch->spare;
        ch->spare = old;
        if (round % 2 == 0) {
            CHECK_OK(rsm_memseg_export_unpublish(guarded->h));
            CHECK_OK(rsm_memseg_export_publish(guarded->h, &guarded->segid, NULL, 0));
        }
        ch->rounds = round + 1;
    }
    return NULL;
}

static int exporter_check(const exported_t *segs, check_msg_t *msg)
{
    const exported_t *wo = &segs[SEG_WO];
    size_t bad =
        pbt_check_pattern(segs[SEG_RO].mem, seg_specs[SEG_RO].size, 0, SEED_OF_SEG(SEG_RO));

    if (bad != (size_t)-1) {
        snprintf(msg->what, sizeof(msg->what), "the read-only segment changed at offset %zu", bad);
        return 1;
    }
    bad = pbt_check_pattern(wo->alloc, PAGE, 0, 99);
    if (bad == (size_t)-1)
        bad = pbt_check_pattern(wo->mem + seg_specs[SEG_WO].size, PAGE, 0, 98);
    if (bad != (size_t)-1) {
        snprintf(msg->what, sizeof(msg->what),
                 "a canary page around the write-only segment changed at offset %zu", bad);
        return 1;
    }
    return 0;
}

/* The exporter's body: export and publish, then serve (the RSM service
 * thread does) until the test says to check or to exit. */
static int exporter_main(int rd, int wr)
{
    rsmapi_controller_handle_t ctlr;
    exported_t segs[SEG_COUNT] = {{0}};
    ready_msg_t ready = {0};
    churn_t churn = {.segs = segs};
    uint32_t cmd;

    CHECK_OK(rsm_get_controller("tcp", &ctlr));
    for (int i = 0; i < SEG_COUNT; i++) {
        exported_t *s = &segs[i];
        size_t size = seg_specs[i].size;
        rsmapi_access_entry_t acl[1] = {{IMPORTER_NODE, seg_specs[i].grant}};
        int with_acl = i == SEG_RO || i == SEG_WO;

        if (i == SEG_GUARDED) {
            /* the segment between two pages no access may touch */
            s->alloc_len = size + 2 * PAGE;
            s->alloc = mmap(NULL, s->alloc_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            CHECK(s->alloc != MAP_FAILED);
            s->mapped = 1;
            s->mem = s->alloc + PAGE;
            CHECK_SYS(mprotect(s->mem, size, PROT_READ | PROT_WRITE));
        } else if (i == SEG_WO) {
            /* the segment between two canary pages, checked by CMD_CHECK */
            s->alloc_len = size + 2 * PAGE;
            s->alloc = aligned_alloc(PAGE, s->alloc_len);
            CHECK(s->alloc != NULL);
            s->mem = s->alloc + PAGE;
            pbt_fill_pattern(s->alloc, PAGE, 0, 99);
            pbt_fill_pattern(s->mem + size, PAGE, 0, 98);
        } else {
            /* exactly the segment: AddressSanitizer sees past either end */
            s->alloc_len = size;
            s->alloc = aligned_alloc(PAGE, size);
            CHECK(s->alloc != NULL);
            s->mem = s->alloc;
        }
        pbt_fill_pattern(s->mem, size, 0, SEED_OF_SEG(i));
        CHECK_OK(rsm_memseg_export_create(ctlr, &s->h, s->mem, size,
                                          i == SEG_RW ? RSM_ALLOW_REBIND : 0));
        CHECK_OK(
            rsm_memseg_export_publish(s->h, &s->segid, with_acl ? acl : NULL, with_acl ? 1 : 0));
        ready.segid[i] = s->segid;
    }
    churn.spare = aligned_alloc(PAGE, seg_specs[SEG_RW].size);
    CHECK(churn.spare != NULL);
    memcpy(churn.spare, segs[SEG_RW].mem, seg_specs[SEG_RW].size);
    atomic_store(&churn.stop, 1); /* until CMD_CHURN */
    pbt_send(wr, &ready, sizeof(ready));
    for (;;) {
        cmd = pbt_recv_u32(rd);
        if (cmd == CMD_CHURN) {
            atomic_store(&churn.stop, 0);
            CHECK(pthread_create(&churn.thread, NULL, churn_main, &churn) == 0);
            continue;
        }
        if (cmd == CMD_CHECK) {
            check_msg_t msg = {0};

            churn_stop(&churn);
            msg.rounds = churn.rounds;

            msg.rc = exporter_check(segs, &msg);
            pbt_send(wr, &msg, sizeof(msg));
            continue;
        }
        CHECK(cmd == CMD_EXIT);
        break;
    }
    churn_stop(&churn);
    for (int i = 0; i < SEG_COUNT; i++) {
        CHECK_OK(rsm_memseg_export_unpublish(segs[i].h));
        CHECK_OK(rsm_memseg_export_destroy(segs[i].h));
        if (segs[i].mapped)
            munmap(segs[i].alloc, segs[i].alloc_len);
        else
            free(segs[i].alloc);
    }
    free(churn.spare);
    CHECK_OK(rsm_release_controller(ctlr));
    pbt_send_u32(wr, 0);
    return 0;
}

/* The forked peer becomes this program again as node EXPORTER_NODE (a fresh
 * process reads its node id anew).  Under AddressSanitizer its quarantine of
 * freed memory is kept small, so that the resident size measures what the
 * exporter holds rather than what it freed. */
static void exporter_exec(pbt_peer_t *self, void *arg)
{
    const char *asan = getenv("ASAN_OPTIONS");
    char rd[16], wr[16], node[16], options[512];

    (void)arg;
    snprintf(rd, sizeof(rd), "%d", self->rd);
    snprintf(wr, sizeof(wr), "%d", self->wr);
    snprintf(node, sizeof(node), "%d", EXPORTER_NODE);
    snprintf(options, sizeof(options), "%s%squarantine_size_mb=4", asan ? asan : "",
             asan && *asan ? ":" : "");
    CHECK_SYS(setenv("ASAN_OPTIONS", options, 1));
    CHECK_SYS(fcntl(self->rd, F_SETFD, 0));
    CHECK_SYS(fcntl(self->wr, F_SETFD, 0));
    CHECK_SYS(setenv("POSTBOX_NODE_ID", node, 1));
    execl("/proc/self/exe", "test_rsm_tcp_live_fuzz", "--exporter", rd, wr, (char *)NULL);
    pbt_fail(__FILE__, __LINE__, "exec of /proc/self/exe: %s", strerror(errno));
}

/* ---- what the fuzzer knows ------------------------------------------------------ */

typedef struct {
    uint8_t key[PB_TCP_KEY_LEN];
    char job_id[PB_TCP_JOB_ID_MAX];
    uint32_t segid[SEG_COUNT];
    struct sockaddr_in exporter;
    pbt_peer_t *exporter_peer; /* its process */
    uint64_t seed;
    /* tallies, printed at the end */
    unsigned long handshakes_spoiled, handshakes_refused, frames, frames_spoiled, requests, replies;
    unsigned long closed_by_exporter, cut, reset, redials;
} fuzz_t;

/* The exporter's address and port, from the directory message of the
 * rendezvous socket of its segment @segid (the abstract name of
 * rsm/rendezvous.c). */
static void fuzz_find_exporter(fuzz_t *fz, uint32_t segid)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    pb_tcp_directory_t dir;
    struct pollfd pfd = {.events = POLLIN};
    int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "postbox-tcp/%s/%u/%08x",
                     fz->job_id, (unsigned)EXPORTER_NODE, (unsigned)segid);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);

    pfd.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    CHECK_SYS(pfd.fd);
    CHECK_SYS(connect(pfd.fd, (struct sockaddr *)&addr, len));
    CHECK_MSG(poll(&pfd, 1, 5000) == 1, "the rendezvous socket did not answer");
    CHECK_MSG(recv(pfd.fd, &dir, sizeof(dir), 0) == (ssize_t)sizeof(dir),
              "the rendezvous socket sent no directory message");
    close(pfd.fd);
    CHECK(pb_tcp_msg_hdr_ok(&dir.hdr, PB_TCP_MSG_DIRECTORY));
    fz->exporter = (struct sockaddr_in){
        .sin_family = AF_INET, .sin_addr.s_addr = dir.addr, .sin_port = htons(dir.port)};
}

/* ---- one connection ---------------------------------------------------------------- */

typedef struct {
    uint8_t *bytes;
    size_t len, cap;
} bytes_t;

static void bytes_add(bytes_t *b, const void *data, size_t len)
{
    if (len == 0)
        return;
    if (b->len + len > b->cap) {
        b->cap = (b->len + len) * 2 + 256;
        b->bytes = realloc(b->bytes, b->cap);
        CHECK(b->bytes != NULL);
    }
    memcpy(b->bytes + b->len, data, len);
    b->len += len;
}

enum {
    END_CUT_RESET,
    END_CLOSE,
    END_HALF_CLOSE
};

typedef struct {
    int fd; /* -1: the slot is free */
    uint64_t rng;
    unsigned long index;
    bytes_t out; /* what is left to send: out.bytes[sent .. len) */
    size_t sent;
    int end;            /* END_* */
    int half_closed;    /* shutdown(SHUT_WR) done: reading to the end */
    int64_t deadline;   /* of the end, once half-closed */
    pb_tcp_rx_t rx;     /* the importer's machine, for what the exporter sends */
    char scratch[4096]; /* dropped reply payloads */
    pb_tcp_seal_t to_exporter;
    /* the exporter's slots as the generator predicts them (SEG_* or -1) */
    int slot_seg[8];
    uint32_t slot_perm[8]; /* the permission it was attached with */
    int slots;
    uint32_t node; /* the node the AUTH claimed */
} stream_t;

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *reply_on_header(void *ctx, const pb_tcp_frame_t *frame, char **dest_p)
{
    (void)ctx;
    (void)frame;
    *dest_p = NULL; /* dropped: read into the scratch buffer */
    return NULL;
}

static void reply_on_frame(void *ctx, const pb_tcp_frame_t *frame)
{
    (void)frame;
    ((fuzz_t *)ctx)->replies++;
}

/* Read @len bytes within @timeout_ms.  @return 1, or 0 when the connection
 * closed or the time ran out first. */
static int read_full(int fd, void *buf, size_t len, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    size_t got = 0;

    while (got < len) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        ssize_t n;

        if (left <= 0 || poll(&pfd, 1, (int)left) != 1)
            return 0;
        n = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return 0;
        if (n > 0)
            got += (size_t)n;
    }
    return 1;
}

static void close_with_reset(int fd)
{
    struct linger reset = {.l_onoff = 1, .l_linger = 0};

    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(fd);
}

/* The exporter must be running: not exited, not killed by a signal (within
 * @wait_ms: a connection that ended unexpectedly may be the exporter's
 * process ending). */
static void expect_alive(pbt_peer_t *peer, int wait_ms, const char *when)
{
    int status;

    CHECK_MSG(!pbt_waitpid_timed(peer->pid, wait_ms, &status),
              "the exporter ended %s: wait status %#x (%s %d)", when, status,
              WIFSIGNALED(status) ? "signal" : "exit code",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* A handshake spoiled one way or another.  Every spoiled AUTH must be
 * refused: a REFUSED message or a close, never a WELCOME. */
static void handshake_spoiled(fuzz_t *fz, stream_t *st, int fd, const pb_tcp_hello_t *hello,
                              pb_tcp_auth_t *auth)
{
    uint8_t *raw = (uint8_t *)auth;
    pb_tcp_welcome_t answer;
    int how = (int)rng_below(&st->rng, 6);

    fz->handshakes_spoiled++;
    switch (how) {
    case 0: /* one byte of the AUTH changed after its MAC */
        raw[rng_below(&st->rng, sizeof(*auth))] ^= (uint8_t)(1u << rng_below(&st->rng, 8));
        break;
    case 1: /* another job's id, MAC'd with this job's key */
        memcpy(auth->job_id, "pbt-another-job", sizeof("pbt-another-job"));
        auth->mac = pb_tcp_auth_mac(fz->key, hello->nonce, auth);
        break;
    case 2: /* another dialed port: what a relay's AUTH says */
        auth->dial_port = htons((uint16_t)(ntohs(auth->dial_port) + 1));
        auth->mac = pb_tcp_auth_mac(fz->key, hello->nonce, auth);
        break;
    case 3: /* MAC'd under another key */
        auth->mac = pb_tcp_auth_mac((const uint8_t *)"another job key!", hello->nonce, auth);
        break;
    case 4: /* a part of the AUTH, then the end */
        send(fd, auth, rng_below(&st->rng, sizeof(*auth)), MSG_NOSIGNAL);
        close_with_reset(fd);
        return;
    default: /* random bytes of random length */
        rng_fill(&st->rng, raw, sizeof(*auth));
        send(fd, auth, 1 + rng_below(&st->rng, sizeof(*auth)), MSG_NOSIGNAL);
        close(fd);
        return;
    }
    send(fd, auth, sizeof(*auth), MSG_NOSIGNAL);
    if (read_full(fd, &answer, sizeof(answer), 5000)) {
        CHECK_MSG(pb_tcp_msg_hdr_ok(&answer.hdr, PB_TCP_MSG_REFUSED),
                  "stream %lu: a spoiled AUTH (way %d) was answered by other than REFUSED",
                  st->index, how);
        fz->handshakes_refused++;
    }
    close(fd);
}

/* Connect and speak the handshake (sometimes spoiled).  @return 1 with
 * st->fd the connection and its session keys set, 0 if the stream ended
 * in its handshake. */
static int stream_handshake(fuzz_t *fz, stream_t *st)
{
    int fd;
    struct sockaddr_in source;
    socklen_t source_len = sizeof(source);
    pb_tcp_hello_t hello;
    pb_tcp_auth_t auth = {0};
    pb_tcp_welcome_t welcome;
    pb_tcp_seal_t to_importer;
    static const uint32_t nodes[] = {IMPORTER_NODE, IMPORTER_NODE, IMPORTER_NODE, EXPORTER_NODE, 2,
                                     UINT32_MAX};

    /* an exporter with too many connections in their handshake closes a
     * newcomer before its HELLO: dial again, as an importer does */
    for (int attempt = 0;; attempt++) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK_SYS(fd);
        if (connect(fd, (struct sockaddr *)&fz->exporter, sizeof(fz->exporter)) != 0) {
            expect_alive(fz->exporter_peer, 2000, "during the streams");
            pbt_fail(__FILE__, __LINE__, "stream %lu: connect to the exporter: %m", st->index);
        }
        if (rng_chance(&st->rng, 1)) { /* gone before the HELLO */
            close_with_reset(fd);
            fz->handshakes_spoiled++;
            return 0;
        }
        if (read_full(fd, &hello, sizeof(hello), 5000))
            break;
        close(fd);
        expect_alive(fz->exporter_peer, 0, "during the streams");
        CHECK_MSG(attempt < 50, "stream %lu: the exporter sent no HELLO in 50 connections",
                  st->index);
        fz->redials++;
        pbt_sleep_ms(20);
    }
    CHECK(pb_tcp_msg_hdr_ok(&hello.hdr, PB_TCP_MSG_HELLO));
    CHECK_SYS(getsockname(fd, (struct sockaddr *)&source, &source_len));
    pb_tcp_msg_hdr_set(&auth.hdr, PB_TCP_MSG_AUTH);
    st->node = nodes[rng_below(&st->rng, sizeof(nodes) / sizeof(nodes[0]))];
    auth.node = st->node;
    auth.pid = (uint32_t)getpid();
    snprintf(auth.job_id, sizeof(auth.job_id), "%s", fz->job_id);
    rng_fill(&st->rng, auth.nonce, sizeof(auth.nonce));
    auth.dial_addr = fz->exporter.sin_addr.s_addr;
    auth.dial_port = fz->exporter.sin_port;
    auth.source_addr = source.sin_addr.s_addr;
    auth.source_port = source.sin_port;
    auth.flags = rng_chance(&st->rng, 25) ? PB_TCP_HS_PAYLOAD_MAC : 0;
    auth.mac = pb_tcp_auth_mac(fz->key, hello.nonce, &auth);
    if (rng_chance(&st->rng, 5)) {
        handshake_spoiled(fz, st, fd, &hello, &auth);
        return 0;
    }
    CHECK_MSG(send(fd, &auth, sizeof(auth), MSG_NOSIGNAL) == (ssize_t)sizeof(auth),
              "stream %lu: send of the AUTH: %m", st->index);
    if (!read_full(fd, &welcome, sizeof(welcome), 5000)) {
        expect_alive(fz->exporter_peer, 2000, "during the streams");
        pbt_fail(__FILE__, __LINE__, "stream %lu: the exporter did not answer a valid AUTH",
                 st->index);
    }
    CHECK_MSG(pb_tcp_welcome_check(&welcome, fz->key, hello.nonce, &auth, EXPORTER_NODE) == NULL,
              "stream %lu: the exporter's WELCOME does not check: %s", st->index,
              pb_tcp_welcome_check(&welcome, fz->key, hello.nonce, &auth, EXPORTER_NODE));
    pb_tcp_session_derive(fz->key, hello.nonce, &auth, welcome.flags & PB_TCP_HS_PAYLOAD_MAC,
                          &st->to_exporter, &to_importer);
    pb_tcp_rx_init(&st->rx, 0, &to_importer, reply_on_header, reply_on_frame, fz);
    CHECK_SYS(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK));
    st->fd = fd;
    return 1;
}

/* ---- generating a stream of frames ---------------------------------------------------------- */

/* A value at or near a bound of a field whose legitimate values end at
 * @limit. */
static uint64_t boundary_value(uint64_t *rng, uint64_t limit)
{
    const uint64_t values[] = {0,
                               1,
                               limit - 1,
                               limit,
                               limit + 1,
                               limit + PAGE,
                               PB_TCP_MAX_PAYLOAD,
                               PB_TCP_MAX_PAYLOAD + 1ull,
                               PB_TCP_MAX_SLOTS + 1ull,
                               UINT16_MAX,
                               UINT32_MAX,
                               (uint64_t)UINT32_MAX + 1,
                               INT64_MAX,
                               UINT64_MAX - limit + 1,
                               UINT64_MAX,
                               rng_next(rng)};

    return values[rng_below(rng, sizeof(values) / sizeof(values[0]))];
}

static size_t seg_of_segid(const fuzz_t *fz, uint32_t segid)
{
    for (size_t i = 0; i < SEG_COUNT; i++) {
        if (fz->segid[i] == segid)
            return i;
    }
    return SEG_COUNT;
}

/* The slot a frame names: mostly one the generator believes attached with
 * the permission @needed, now and then one attached without it (a put to a
 * read-only import), or a number at a bound. */
static uint32_t pick_slot(stream_t *st, uint32_t needed, int *seg_p)
{
    uint32_t allowed[8], attached[8];
    int n_allowed = 0, n_attached = 0;
    uint64_t pick = rng_below(&st->rng, 100);

    for (int i = 0; i < st->slots; i++) {
        if (st->slot_seg[i] < 0)
            continue;
        attached[n_attached++] = (uint32_t)i + 1;
        if ((st->slot_perm[i] & needed) == needed)
            allowed[n_allowed++] = (uint32_t)i + 1;
    }
    if (n_allowed > 0 && pick < 96) {
        uint32_t slot = allowed[rng_below(&st->rng, (uint64_t)n_allowed)];

        *seg_p = st->slot_seg[slot - 1];
        return slot;
    }
    if (n_attached > 0 && pick < 98) {
        uint32_t slot = attached[rng_below(&st->rng, (uint64_t)n_attached)];

        *seg_p = st->slot_seg[slot - 1];
        return slot;
    }
    *seg_p = -1;
    return (uint32_t)boundary_value(&st->rng, (uint64_t)st->slots + 1);
}

/* Append @frame, sealed (and its payload @payload[0 .. @payload_len), with
 * its MAC on a connection that has them), to st->out.  Now and then the
 * seal is spoiled: a bit of the header changed after its MAC, a sequence
 * number skipped or a frame replayed, a payload shorter than its header
 * says, or a wrong payload MAC. */
static void emit(fuzz_t *fz, stream_t *st, const pb_tcp_frame_t *frame, const void *payload,
                 size_t payload_len)
{
    uint8_t header[PB_TCP_FRAME_HEADER_SIZE];
    uint64_t seq, mac;
    int spoil = rng_chance(&st->rng, 1) ? (int)rng_below(&st->rng, 5) + 1 : 0;

    fz->frames++;
    fz->requests += frame->type == PB_TCP_ATTACH || frame->type == PB_TCP_GET ||
                    frame->type == PB_TCP_BARRIER || frame->type == PB_TCP_LOOKUP;
    if (spoil)
        fz->frames_spoiled++;
    pb_tcp_frame_encode(frame, header);
    if (spoil == 1)
        st->to_exporter.seq++; /* a frame lost */
    seq = pb_tcp_header_seal(&st->to_exporter, header);
    if (spoil == 2)
        header[rng_below(&st->rng, sizeof(header))] ^= (uint8_t)(1u << rng_below(&st->rng, 8));
    bytes_add(&st->out, header, sizeof(header));
    if (spoil == 3)
        bytes_add(&st->out, header, sizeof(header)); /* replayed */
    if (spoil == 4 && payload_len > 0)
        payload_len = rng_below(&st->rng, payload_len);
    bytes_add(&st->out, payload, payload_len);
    if (st->to_exporter.payload_mac && payload_len > 0) {
        mac = pb_tcp_payload_mac(&st->to_exporter, seq, payload, payload_len);
        if (spoil == 5)
            mac ^= 1ull << rng_below(&st->rng, 64);
        mac = htole64(mac);
        bytes_add(&st->out, &mac, sizeof(mac));
    }
}

/* Change one field of @frame to a value at a bound, or its type or flags
 * to unknown ones. */
static void mutate_field(stream_t *st, pb_tcp_frame_t *frame, uint64_t limit)
{
    switch (rng_below(&st->rng, 8)) {
    case 0: frame->type = (uint16_t)boundary_value(&st->rng, PB_TCP_FRAME_TYPES); break;
    case 1: frame->flags = (uint16_t)(1u << rng_below(&st->rng, 16)); break;
    case 2: frame->status = (int32_t)boundary_value(&st->rng, 1); break;
    case 3: frame->slot = (uint32_t)boundary_value(&st->rng, (uint64_t)st->slots + 1); break;
    case 4: frame->tag = (uint32_t)boundary_value(&st->rng, 1); break;
    case 5: frame->offset = boundary_value(&st->rng, limit); break;
    case 6: frame->length = (uint32_t)boundary_value(&st->rng, limit); break;
    default: frame->count = (uint32_t)boundary_value(&st->rng, limit); break;
    }
}

/* Whether an ATTACH of @seg with @perm is admitted, as the generator
 * predicts it. */
static int attach_admitted(const stream_t *st, size_t seg, uint32_t perm)
{
    uint32_t grant;

    if (seg >= SEG_COUNT)
        return 0;
    grant = seg_specs[seg].grant;
    if ((seg == SEG_RO || seg == SEG_WO) && st->node != IMPORTER_NODE)
        grant = 0; /* not on the access list */
    return perm != 0 && (perm & ~(uint32_t)RSM_PERM_RDWR) == 0 && (perm & ~grant) == 0;
}

/* An ATTACH of one of the segments, or of another id, with any permission
 * (@any) or one that is admitted. */
static void gen_attach(fuzz_t *fz, stream_t *st, int any, int mutate)
{
    static const uint32_t perms[] = {
        RSM_PERM_READ, RSM_PERM_WRITE, RSM_PERM_RDWR, RSM_PERM_RDWR, 0, 1, 0777, UINT32_MAX};
    pb_tcp_frame_t frame = {.type = PB_TCP_ATTACH,
                            .tag = 1 + (uint32_t)rng_below(&st->rng, 1000),
                            .length = sizeof(pb_tcp_attach_t)};
    pb_tcp_attach_t attach;
    size_t seg;

    do {
        attach.segid = rng_chance(&st->rng, 90) ? fz->segid[rng_below(&st->rng, SEG_COUNT)]
                                                : (uint32_t)rng_next(&st->rng);
        attach.perm = perms[rng_below(&st->rng, sizeof(perms) / sizeof(perms[0]))];
        seg = seg_of_segid(fz, attach.segid);
    } while (!any && !attach_admitted(st, seg, attach.perm));
    if (!any && st->slots == 0) {
        /* the stream's first: read and write, admitted for any node */
        seg = rng_chance(&st->rng, 70) ? SEG_RW : SEG_GUARDED;
        attach.segid = fz->segid[seg];
        attach.perm = RSM_PERM_RDWR;
    }
    if (mutate)
        mutate_field(st, &frame, sizeof(attach));
    else if (attach_admitted(st, seg, attach.perm) && st->slots < 8) {
        int free_slot = 0;

        while (free_slot < st->slots && st->slot_seg[free_slot] >= 0)
            free_slot++;
        st->slot_seg[free_slot] = (int)seg;
        st->slot_perm[free_slot] = attach.perm;
        if (free_slot == st->slots)
            st->slots++;
    }
    attach.segid = htole32(attach.segid);
    attach.perm = htole32(attach.perm);
    emit(fz, st, &frame, &attach, sizeof(attach));
}

static void gen_put(fuzz_t *fz, stream_t *st, int mutate)
{
    static uint8_t data[3 * PAGE];
    int seg;
    pb_tcp_frame_t frame = {.type = PB_TCP_PUT, .slot = pick_slot(st, RSM_PERM_WRITE, &seg)};
    uint64_t size = seg >= 0 ? seg_specs[seg].size : PAGE;
    uint64_t len = 1 + rng_below(&st->rng, size < sizeof(data) ? size : sizeof(data));

    if (rng_chance(&st->rng, 92))
        frame.offset = rng_below(&st->rng, size - len + 1);
    else
        frame.offset = boundary_value(&st->rng, size - len);
    if (rng_chance(&st->rng, 15)) {
        frame.flags |= PB_TCP_FLAG_WORD_LAST;
        frame.offset &= ~(uint64_t)3;
        if (len < 4)
            len = 4;
        if (len > PB_TCP_WORD_LAST_MAX)
            len = PB_TCP_WORD_LAST_MAX;
    }
    if (rng_chance(&st->rng, 10))
        frame.flags |= PB_TCP_FLAG_SIGNAL;
    frame.length = (uint32_t)len;
    rng_fill(&st->rng, data, (size_t)len);
    if (mutate)
        mutate_field(st, &frame, size);
    /* the payload as long as the header says, up to what data holds (a
     * longer length leaves the stream short: it ends inside the payload) */
    emit(fz, st, &frame, data, frame.length < sizeof(data) ? frame.length : sizeof(data));
}

static void gen_request(fuzz_t *fz, stream_t *st, int type, int mutate)
{
    int seg;
    pb_tcp_frame_t frame = {.type = (uint16_t)type,
                            .slot = pick_slot(st, type == PB_TCP_GET ? RSM_PERM_READ : 0, &seg)};
    uint64_t size = seg >= 0 ? seg_specs[seg].size : PAGE;

    switch (type) {
    case PB_TCP_GET:
        frame.tag = 1 + (uint32_t)rng_below(&st->rng, 1000);
        frame.count = 1 + (uint32_t)rng_below(&st->rng, size);
        frame.offset = rng_chance(&st->rng, 92) ? rng_below(&st->rng, size - frame.count + 1)
                                                : boundary_value(&st->rng, size - frame.count);
        break;
    case PB_TCP_BARRIER: frame.tag = 1 + (uint32_t)rng_below(&st->rng, 1000); break;
    case PB_TCP_SIGNAL: frame.flags = rng_chance(&st->rng, 50) ? PB_TCP_FLAG_ACCUMULATE : 0; break;
    default: /* DETACH */
        if (!mutate && seg >= 0)
            st->slot_seg[frame.slot - 1] = -1;
        break;
    }
    if (mutate)
        mutate_field(st, &frame, size);
    emit(fz, st, &frame, NULL, 0);
}

static void gen_lookup(fuzz_t *fz, stream_t *st, int mutate)
{
    pb_tcp_frame_t frame = {.type = PB_TCP_LOOKUP,
                            .tag = 1 + (uint32_t)rng_below(&st->rng, 1000),
                            .length = sizeof(pb_tcp_lookup_t)};
    pb_tcp_lookup_t lookup;

    /* this node's segments (answered from the exporter's publications) or
     * another node's (looked up on that node's rendezvous socket, of which
     * there is none) */
    lookup.node =
        htole32(rng_chance(&st->rng, 80) ? EXPORTER_NODE : (uint32_t)rng_below(&st->rng, 4));
    lookup.segid = htole32(rng_chance(&st->rng, 80) ? fz->segid[rng_below(&st->rng, SEG_COUNT)]
                                                    : (uint32_t)rng_next(&st->rng));
    if (mutate)
        mutate_field(st, &frame, sizeof(lookup));
    emit(fz, st, &frame, &lookup, sizeof(lookup));
}

/* The whole stream of frames of @st, generated from its seed, and how it
 * ends. */
static void stream_generate(fuzz_t *fz, stream_t *st)
{
    int attaches = 1 + (int)rng_below(&st->rng, 3);
    int ops = 1 + (int)rng_below(&st->rng, 40);
    /* most streams are valid for long; some have many spoiled frames */
    unsigned mutate_percent = rng_chance(&st->rng, 50) ? 1 : 10;

    for (int i = 0; i < attaches; i++)
        gen_attach(fz, st, i > 0 || rng_chance(&st->rng, 5), rng_chance(&st->rng, mutate_percent));
    for (int i = 0; i < ops; i++) {
        int mutate = rng_chance(&st->rng, mutate_percent);
        uint64_t pick = rng_below(&st->rng, 1000);

        if (pick < 350)
            gen_put(fz, st, mutate);
        else if (pick < 550)
            gen_request(fz, st, PB_TCP_GET, mutate);
        else if (pick < 670)
            gen_request(fz, st, PB_TCP_BARRIER, mutate);
        else if (pick < 750)
            gen_request(fz, st, PB_TCP_SIGNAL, mutate);
        else if (pick < 800)
            gen_request(fz, st, PB_TCP_DETACH, mutate);
        else if (pick < 880)
            gen_attach(fz, st, 1, mutate);
        else if (pick < 985)
            gen_lookup(fz, st, mutate);
        else if (pick < 995) {
            /* a frame of random fields, sealed */
            pb_tcp_frame_t frame;
            uint8_t junk[64];

            rng_fill(&st->rng, &frame, sizeof(frame));
            frame.length %= sizeof(junk) + 1;
            rng_fill(&st->rng, junk, sizeof(junk));
            emit(fz, st, &frame, junk, frame.length);
        } else {
            /* raw bytes */
            uint8_t junk[PB_TCP_FRAME_HEADER_SIZE * 2];
            size_t len = 1 + rng_below(&st->rng, sizeof(junk));

            rng_fill(&st->rng, junk, len);
            bytes_add(&st->out, junk, len);
        }
    }
    if (rng_chance(&st->rng, 20)) { /* cut at a random point */
        st->out.len = rng_below(&st->rng, st->out.len + 1);
        fz->cut++;
    }
    st->end = rng_chance(&st->rng, 50) ? END_HALF_CLOSE : (int)rng_below(&st->rng, 2);
}

/* ---- driving the streams ------------------------------------------------------------------- */

static void stream_finish(stream_t *st)
{
    if (st->fd >= 0)
        close(st->fd);
    st->fd = -1;
    free(st->out.bytes);
    st->out = (bytes_t){0};
}

/* Read what the exporter sent, through the importer's receive machine.
 * @return 0 once the exporter closed the connection. */
static int stream_read(fuzz_t *fz, stream_t *st)
{
    char buf[65536];

    for (;;) {
        ssize_t n = recv(st->fd, buf, sizeof(buf), MSG_DONTWAIT);
        size_t used = 0;

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 1;
        if (n <= 0)
            return 0; /* closed (or reset: the exporter refused a frame) */
        while (used < (size_t)n) {
            char *to;
            size_t room, take;
            const char *why;

            pb_tcp_rx_next(&st->rx, st->scratch, sizeof(st->scratch), &to, &room);
            take = room < (size_t)n - used ? room : (size_t)n - used;
            memcpy(to, buf + used, take);
            why = pb_tcp_rx_advance(&st->rx, to, take);
            CHECK_MSG(why == NULL, "stream %lu: the exporter sent a frame that does not check: %s",
                      st->index, why);
            used += take;
        }
    }
}

/* Send a chunk of random size of what is left.  @return 0 once the
 * exporter closed the connection. */
static int stream_write(stream_t *st)
{
    size_t left = st->out.len - st->sent;
    size_t chunk = rng_chance(&st->rng, 50) ? left : 1 + rng_below(&st->rng, left);
    ssize_t n = send(st->fd, st->out.bytes + st->sent, chunk, MSG_DONTWAIT | MSG_NOSIGNAL);

    if (n < 0)
        return errno == EAGAIN || errno == EINTR;
    st->sent += (size_t)n;
    return 1;
}

/* Everything is sent: end the stream as generated. */
static void stream_end(fuzz_t *fz, stream_t *st)
{
    if (st->end == END_CUT_RESET) {
        close_with_reset(st->fd);
        st->fd = -1;
        fz->reset++;
        stream_finish(st);
    } else if (st->end == END_CLOSE) {
        stream_finish(st);
    } else {
        shutdown(st->fd, SHUT_WR);
        st->half_closed = 1;
        st->deadline = now_ms() + STREAM_END_TIMEOUT_MS;
    }
}

static void fuzz_streams(fuzz_t *fz, unsigned long first, unsigned long count)
{
    stream_t streams[STREAMS_AT_ONCE];
    unsigned long next = first, end = first + count;
    int active = 0;

    for (int i = 0; i < STREAMS_AT_ONCE; i++)
        streams[i].fd = -1;
    while (next < end || active > 0) {
        struct pollfd pfds[STREAMS_AT_ONCE];

        for (int i = 0; i < STREAMS_AT_ONCE && next < end; i++) {
            stream_t *st = &streams[i];

            if (st->fd >= 0)
                continue;
            memset(st, 0, sizeof(*st));
            st->fd = -1;
            st->index = next;
            st->rng = fz->seed ^ (next * 0xd1342543de82ef95ull);
            for (int k = 0; k < 8; k++)
                st->slot_seg[k] = -1;
            next++;
            if (stream_handshake(fz, st))
                stream_generate(fz, st);
        }
        active = 0;
        for (int i = 0; i < STREAMS_AT_ONCE; i++) {
            stream_t *st = &streams[i];

            pfds[i] = (struct pollfd){.fd = st->fd, .events = POLLIN};
            if (st->fd >= 0 && !st->half_closed && st->sent < st->out.len)
                pfds[i].events |= POLLOUT;
            active += st->fd >= 0;
        }
        if (active == 0)
            continue;
        CHECK_SYS(poll(pfds, STREAMS_AT_ONCE, 100));
        for (int i = 0; i < STREAMS_AT_ONCE; i++) {
            stream_t *st = &streams[i];

            if (st->fd < 0)
                continue;
            if ((pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) && !stream_read(fz, st)) {
                fz->closed_by_exporter += !st->half_closed;
                stream_finish(st);
                continue;
            }
            if ((pfds[i].revents & POLLOUT) && !stream_write(st)) {
                fz->closed_by_exporter++;
                stream_finish(st);
                continue;
            }
            if (!st->half_closed && st->sent == st->out.len)
                stream_end(fz, st);
            else if (st->half_closed)
                CHECK_MSG(now_ms() < st->deadline,
                          "stream %lu: the exporter did not close the connection within %d ms "
                          "of its end",
                          st->index, STREAM_END_TIMEOUT_MS);
        }
    }
}

/* ---- what the exporter process shows ------------------------------------------------------- */

static long proc_status_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    long value = -1;
    size_t field_len = strlen(field);
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    CHECK_MSG(f != NULL, "the exporter (pid %d) is gone", (int)pid);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, field, field_len) == 0 && line[field_len] == ':')
            value = strtol(line + field_len + 1, NULL, 10);
    }
    fclose(f);
    CHECK(value >= 0);
    return value;
}

static int proc_fd_count(pid_t pid)
{
    char path[64];
    struct dirent *entry;
    int count = 0;
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    dir = opendir(path);
    CHECK_MSG(dir != NULL, "the exporter (pid %d) is gone", (int)pid);
    while ((entry = readdir(dir)) != NULL)
        count += entry->d_name[0] != '.';
    closedir(dir);
    return count;
}

/* ---- the legitimate importer ----------------------------------------------------------------- */

static void legitimate_import(const fuzz_t *fz)
{
    rsmapi_controller_handle_t ctlr;
    rsm_memseg_import_handle_t im;
    uint8_t src[2 * PAGE], dst[2 * PAGE];
    rsmapi_barrier_t bar;

    CHECK_OK(rsm_get_controller("tcp", &ctlr));
    /* the writable segment: put, barrier, get, compare */
    CHECK_OK(rsm_memseg_import_connect(ctlr, EXPORTER_NODE, fz->segid[SEG_RW], RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT));
    for (int round = 0; round < 4; round++) {
        off_t off = (off_t)round * 3 * PAGE + 8;

        pbt_fill_pattern(src, sizeof(src), (size_t)off, 40u + (unsigned)round);
        CHECK_OK(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar));
        CHECK_OK(rsm_memseg_import_open_barrier(&bar));
        CHECK_OK(rsm_memseg_import_put(im, off, src, sizeof(src)));
        CHECK_OK(rsm_memseg_import_close_barrier(&bar));
        CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
        memset(dst, 0, sizeof(dst));
        CHECK_OK(rsm_memseg_import_get(im, off, dst, sizeof(dst)));
        CHECK_MSG(memcmp(src, dst, sizeof(src)) == 0,
                  "after the fuzzing, a get returned other bytes than the put before it wrote");
    }
    CHECK_OK(rsm_memseg_import_disconnect(im));
    /* the read-only segment: not writable, and its bytes as exported */
    CHECK_RC(rsm_memseg_import_connect(ctlr, EXPORTER_NODE, fz->segid[SEG_RO], RSM_PERM_RDWR, &im),
             RSMERR_PERM_DENIED);
    CHECK_OK(rsm_memseg_import_connect(ctlr, EXPORTER_NODE, fz->segid[SEG_RO], RSM_PERM_READ, &im));
    CHECK_OK(rsm_memseg_import_get(im, 0, dst, seg_specs[SEG_RO].size));
    CHECK_MSG(pbt_check_pattern(dst, seg_specs[SEG_RO].size, 0, SEED_OF_SEG(SEG_RO)) == (size_t)-1,
              "the read-only segment's bytes changed");
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(ctlr));
}

/* ---- the case
 * --------------------------------------------------------------------------------------- */

static void case_live_frame_streams(void)
{
    static fuzz_t fz;
    unsigned long streams = (unsigned long)env_u64("POSTBOX_TEST_FUZZ_STREAMS", 3000);
    uint64_t seed_rng;
    char secret[2 * PB_TCP_KEY_LEN + 1];
    pbt_peer_t exporter;
    ready_msg_t ready;
    check_msg_t check;
    long rss_quarter, rss_end;
    int fds_before, fds_after = 0;
    int64_t t0 = now_ms();

    if (pbt_page_size() != PAGE)
        pbt_skip("the segments are laid out for pages of %u bytes", PAGE);

    fz.seed = env_u64("POSTBOX_TEST_FUZZ_SEED", (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32));
    printf("live fuzz: seed %" PRIu64 " (POSTBOX_TEST_FUZZ_SEED=%" PRIu64 " repeats it), %lu "
           "streams\n",
           fz.seed, fz.seed, streams);
    fflush(stdout);
    /* this job's id and key, for the exporter and for the test */
    seed_rng = fz.seed;
    rng_fill(&seed_rng, fz.key, sizeof(fz.key));
    for (int i = 0; i < PB_TCP_KEY_LEN; i++)
        snprintf(secret + 2 * i, 3, "%02x", fz.key[i]);
    snprintf(fz.job_id, sizeof(fz.job_id), "pbt-live-fuzz-%d", (int)getpid());
    CHECK_SYS(setenv("POSTBOX_JOB_ID", fz.job_id, 1));
    CHECK_SYS(setenv("POSTBOX_JOB_SECRET", secret, 1));

    exporter = pbt_peer_start(exporter_exec, NULL);
    fz.exporter_peer = &exporter;
    pbt_recv(exporter.rd, &ready, sizeof(ready));
    memcpy(fz.segid, ready.segid, sizeof(fz.segid));
    fuzz_find_exporter(&fz, fz.segid[SEG_RW]);
    fds_before = proc_fd_count(exporter.pid);
    pbt_send_u32(exporter.wr, CMD_CHURN);

    fuzz_streams(&fz, 0, streams / 4);
    expect_alive(&exporter, 0, "during the first quarter of the streams");
    rss_quarter = proc_status_kb(exporter.pid, "VmRSS");
    fuzz_streams(&fz, streams / 4, streams - streams / 4);
    expect_alive(&exporter, 0, "during the streams");

    /* (this also ends the rebinds and withdrawals) */
    pbt_send_u32(exporter.wr, CMD_CHECK);
    pbt_recv(exporter.rd, &check, sizeof(check));
    CHECK_MSG(check.rc == 0, "the exporter's memory was damaged: %s", check.what);
    CHECK_MSG(check.rounds > 0, "the exporter made no rebind during the streams");

    /* every connection is closed on this side: the exporter closes its
     * ends (a connection in its handshake within a second) */
    for (int i = 0; i < 300; i++) {
        fds_after = proc_fd_count(exporter.pid);
        if (fds_after <= fds_before)
            break;
        pbt_sleep_ms(10);
    }
    CHECK_MSG(fds_after <= fds_before,
              "the exporter holds %d descriptors after the streams, %d before", fds_after,
              fds_before);
    rss_end = proc_status_kb(exporter.pid, "VmRSS");
    printf("live fuzz: %lu frames (%lu with a spoiled seal), %lu replies to %lu requests; "
           "%lu handshakes spoiled (%lu answered REFUSED); %lu streams closed by the exporter, "
           "%lu cut, %lu reset; %lu redials; %u rebinds; exporter resident %ld kB after a "
           "quarter, %ld kB at the end; %.1f s\n",
           fz.frames, fz.frames_spoiled, fz.replies, fz.requests, fz.handshakes_spoiled,
           fz.handshakes_refused, fz.closed_by_exporter, fz.cut, fz.reset, fz.redials, check.rounds,
           rss_quarter, rss_end, (double)(now_ms() - t0) / 1e3);
    fflush(stdout);
    CHECK_MSG(rss_end - rss_quarter <= RSS_GROWTH_MAX_KB,
              "the exporter's resident memory grew by %ld kB over the last three quarters of the "
              "streams",
              rss_end - rss_quarter);

    legitimate_import(&fz);
    expect_alive(&exporter, 0, "after the legitimate import");

    pbt_send_u32(exporter.wr, CMD_EXIT);
    CHECK(pbt_recv_u32(exporter.rd) == 0);
    pbt_peer_join(&exporter, 10000, 0);
}

int main(int argc, char **argv)
{
    static const pbt_case_t cases[] = {
        PBT_CASE(live_frame_streams),
    };

    if (argc == 4 && strcmp(argv[1], "--exporter") == 0)
        return exporter_main(atoi(argv[2]), atoi(argv[3]));
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
