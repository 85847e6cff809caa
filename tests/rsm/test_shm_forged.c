/* shm: what an importer does with what a hostile exporter hands it.  A
 * forger, a process of the same user that knows the job secret (a faulty
 * or malicious member of the job), answers a segment's rendezvous with the
 * real handshake and then with descriptors of its choosing: too small,
 * unsealed (it can shrink them under the importer's mappings: SIGBUS),
 * not memfds, or an absurd segment size.  The importer must refuse each
 * at connect (RSMERR_CONN_ABORTED, one warning) and never fault.  A
 * well-formed forgery is accepted, so the refusals are the checks' doing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rsm/shm_layout.h"
#include "rsm_util.h"
#include "util/siphash.h"

#define PG (pbt_page_size())
#define FORGED_SEGID 0x7a11c0deu

static const char job_secret[] = "00112233445566778899aabbccddeeff";

enum {
    SLOT_DATA = 0,
    SLOT_CTL = 1,
    SLOT_INBOX = 2,
    SLOT_LIVENESS = 3
};

typedef enum {
    FORGE_MEMFD, /* a memfd of .size bytes with .seals */
    FORGE_PIPE,  /* the read end of a pipe */
    FORGE_HUGE   /* a hugetlbfs memfd of .size bytes with .seals */
} forge_kind_t;

typedef struct {
    forge_kind_t kind;
    size_t size;
    int seals;
} forge_fd_t;

typedef struct {
    uint64_t announced; /* the segment size the reply announces */
    forge_fd_t fds[PB_SHM_REPLY_FDS];
    int shrink_after; /* shrink the data memfd to 0 once handed over */
} forge_t;

#define SEALED (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* what a genuine exporter of one page would hand over */
static forge_t forge_genuine(void)
{
    forge_t f = {.announced = PG};

    f.fds[SLOT_DATA] = (forge_fd_t){FORGE_MEMFD, PG, SEALED};
    f.fds[SLOT_CTL] = (forge_fd_t){FORGE_MEMFD, PB_SHM_CTL_SIZE, SEALED};
    f.fds[SLOT_INBOX] = (forge_fd_t){FORGE_MEMFD, PB_SHM_CTL_SIZE, SEALED};
    f.fds[SLOT_LIVENESS] = (forge_fd_t){FORGE_MEMFD, PG, SEALED};
    return f;
}

static void secret_bytes(uint8_t key[16])
{
    for (int i = 0; i < 16; i++) {
        unsigned byte;

        CHECK(sscanf(job_secret + 2 * i, "%2x", &byte) == 1);
        key[i] = (uint8_t)byte;
    }
}

static int forge_memfd(const forge_fd_t *spec, uint64_t announced, int is_ctl)
{
    int fd = memfd_create("pbt-forged", MFD_CLOEXEC | MFD_ALLOW_SEALING |
                                            (spec->kind == FORGE_HUGE ? MFD_HUGETLB : 0));

    CHECK_SYS(fd);
    CHECK_SYS(ftruncate(fd, (off_t)spec->size));
    if (is_ctl && spec->size >= sizeof(pb_shm_ctl_t)) {
        pb_shm_ctl_t ctl = {.magic = PB_SHM_CTL_MAGIC,
                            .layout_version = PB_SHM_LAYOUT_VERSION,
                            .segid = FORGED_SEGID,
                            .exporter_pid = (uint32_t)getpid(),
                            .size = announced};

        atomic_init(&ctl.state.value, PB_SHM_STATE_LIVE);
        CHECK(pwrite(fd, &ctl, sizeof(ctl), 0) == (ssize_t)sizeof(ctl));
    }
    if (spec->seals != 0)
        CHECK_SYS(fcntl(fd, F_ADD_SEALS, spec->seals));
    return fd;
}

/* The forger: listen on the segment's rendezvous, run the exporter's side
 * of the handshake with the job secret, hand over what @arg says, then
 * hold on until the test is done. */
static void forger(pbt_peer_t *self, void *arg)
{
    const forge_t *f = arg;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    pb_shm_msg_hello_t hello = {
        .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_HELLO}};
    pb_shm_msg_request_t req;
    pb_shm_msg_reply_t reply = {
        .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_REPLY}};
    int fds[PB_SHM_REPLY_FDS];
    char cbuf[CMSG_SPACE(sizeof(fds))];
    struct iovec iov = {&reply, sizeof(reply)};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *cmsg;
    uint8_t key[16], buf[64];
    size_t off = 0;
    int n, lfd, conn;

    secret_bytes(key);
    n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "postbox-rsm/%s/%u/%08x",
                 getenv("POSTBOX_JOB_ID"), 0u, FORGED_SEGID);
    lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    CHECK_SYS(lfd);
    /* the previous case's forger may still be on its way out, holding the
     * name: wait for it (up to 5 s) rather than fail the case */
    for (int tries = 0;; tries++) {
        if (bind(lfd, (struct sockaddr *)&addr,
                 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0)
            break;
        CHECK(errno == EADDRINUSE && tries < 500);
        usleep(10000);
    }
    CHECK_SYS(listen(lfd, 1));
    pbt_send_u32(self->wr, 1);

    conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    CHECK_SYS(conn);
    memset(hello.nonce, 0x5a, sizeof(hello.nonce));
    CHECK(send(conn, &hello, sizeof(hello), 0) == (ssize_t)sizeof(hello));
    CHECK(recv(conn, &req, sizeof(req), 0) == (ssize_t)sizeof(req));

    reply.status = 0;
    reply.perm = req.perm;
    reply.size = f->announced;
    memcpy(buf + off, "postbox-shm-rep", 16), off += 16;
    memcpy(buf + off, req.nonce, PB_SHM_NONCE_LEN), off += PB_SHM_NONCE_LEN;
    memcpy(buf + off, &reply.status, 4), off += 4;
    memcpy(buf + off, &reply.perm, 4), off += 4;
    memcpy(buf + off, &reply.size, 8), off += 8;
    reply.mac = pb_siphash24(key, buf, off);

    for (int i = 0; i < PB_SHM_REPLY_FDS; i++) {
        if (f->fds[i].kind == FORGE_PIPE) {
            int p[2];

            CHECK_SYS(pipe(p));
            fds[i] = p[0];
        } else {
            fds[i] = forge_memfd(&f->fds[i], f->announced, i == SLOT_CTL);
        }
    }
    cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
    CHECK(sendmsg(conn, &msg, 0) == (ssize_t)sizeof(reply));
    if (f->shrink_after)
        CHECK_SYS(ftruncate(fds[SLOT_DATA], 0));
    pbt_recv_u32(self->rd); /* the test is done */
    close(conn);
    close(lfd);
}

/* Import the forged segment: expect @want; on a success read and write it
 * all (a mapping that faults kills the case with SIGBUS). */
static void import_forged(forge_t *f, int want)
{
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_peer_t p;
    int rc;

    if (!pbt_is_shm())
        pbt_skip("the forger speaks the shm handshake");
    setenv("POSTBOX_JOB_ID", "pbt-forged", 1);
    setenv("POSTBOX_JOB_SECRET", job_secret, 1);
    p = pbt_peer_start(forger, f);
    CHECK_EQ_U64(pbt_recv_u32(p.rd), 1);
    c = pbt_ctlr_get();
    rc = rsm_memseg_import_connect(c, 0, FORGED_SEGID, RSM_PERM_RDWR, &im);
    if (rc == RSM_SUCCESS) {
        size_t size = f->announced < 16 * PG ? (size_t)f->announced : 16 * PG;
        char *buf = malloc(size);

        CHECK(buf != NULL);
        memset(buf, 0x11, size);
        CHECK_OK(rsm_memseg_import_put(im, 0, buf, size));
        CHECK_OK(rsm_memseg_import_get(im, 0, buf, size));
        free(buf);
        CHECK_OK(rsm_memseg_import_disconnect(im));
    }
    CHECK_RC(rc, want);
    CHECK_OK(rsm_release_controller(c));
    pbt_send_u32(p.wr, 1);
    pbt_peer_join(&p, 10000, 0);
}

static void case_genuine_forgery_accepted(void)
{
    forge_t f = forge_genuine();

    import_forged(&f, RSM_SUCCESS);
}

static void case_size_zero_refused(void)
{
    forge_t f = forge_genuine();

    f.announced = 0;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static void case_size_2_to_62_refused(void)
{
    forge_t f = forge_genuine();

    f.announced = (uint64_t)1 << 62;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static void case_data_smaller_than_announced_refused(void)
{
    forge_t f = forge_genuine();

    f.announced = 4 * PG;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static void case_data_unsealed_refused(void)
{
    forge_t f = forge_genuine();

    /* the attack: hand over a memfd of the right size, shrink it after */
    f.fds[SLOT_DATA].seals = 0;
    f.shrink_after = 1;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static void case_data_sealed_but_not_against_shrinking_refused(void)
{
    forge_t f = forge_genuine();

    f.fds[SLOT_DATA].seals = F_SEAL_GROW;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static void case_data_not_memfd_refused(void)
{
    forge_t f = forge_genuine();

    f.fds[SLOT_DATA].kind = FORGE_PIPE;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

/* hugetlbfs pages can run out under a mapping (a hole punched in it) */
static void case_data_hugetlb_refused(void)
{
    int probe = memfd_create("pbt-probe", MFD_CLOEXEC | MFD_HUGETLB);
    forge_t f = forge_genuine();

    if (probe < 0)
        pbt_skip("no hugetlbfs memfds here: %m");
    close(probe);
    f.announced = 2 << 20;
    f.fds[SLOT_DATA] = (forge_fd_t){FORGE_HUGE, 2 << 20, SEALED};
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static void case_control_page_empty_refused(void)
{
    forge_t f = forge_genuine();

    f.fds[SLOT_CTL].size = 0;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static void case_control_page_unsealed_refused(void)
{
    forge_t f = forge_genuine();

    f.fds[SLOT_CTL].seals = 0;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static void case_importers_page_smaller_than_page_refused(void)
{
    forge_t f = forge_genuine();

    f.fds[SLOT_INBOX].size = 64;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static void case_liveness_page_empty_refused(void)
{
    forge_t f = forge_genuine();

    f.fds[SLOT_LIVENESS].size = 0;
    import_forged(&f, RSMERR_CONN_ABORTED);
}

static const pbt_case_t cases[] = {
    PBT_CASE(genuine_forgery_accepted),
    PBT_CASE(size_zero_refused),
    PBT_CASE(size_2_to_62_refused),
    PBT_CASE(data_smaller_than_announced_refused),
    PBT_CASE(data_unsealed_refused),
    PBT_CASE(data_sealed_but_not_against_shrinking_refused),
    PBT_CASE(data_not_memfd_refused),
    PBT_CASE(data_hugetlb_refused),
    PBT_CASE(control_page_empty_refused),
    PBT_CASE(control_page_unsealed_refused),
    PBT_CASE(importers_page_smaller_than_page_refused),
    PBT_CASE(liveness_page_empty_refused),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
