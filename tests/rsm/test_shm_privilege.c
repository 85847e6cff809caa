/* shm: least privilege of what an importer receives.  A raw importer, a
 * process of the job that speaks the import handshake itself (so it holds
 * every descriptor the exporter hands over, as a hostile member of the job
 * would), tries to write what it must not: the segment it imported
 * read-only, the exporter's control page (to mark the publication
 * withdrawn) and the exporter's liveness page (to mark it dead).  The
 * cases run as an unprivileged user (as root they drop to nobody first:
 * root ignores file modes), but one, which checks that the control and
 * liveness pages resist root too. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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

static const char job_secret[] = "00112233445566778899aabbccddeeff";

enum {
    SLOT_DATA = 0,
    SLOT_CTL = 1,
    SLOT_INBOX = 2,
    SLOT_LIVENESS = 3
};

typedef struct {
    pb_shm_msg_reply_t reply;
    int fds[PB_SHM_REPLY_FDS];
} raw_import_t;

/* Become a member of a job both sides know the secret of; unless @as_root,
 * an unprivileged one. */
static void become_job_member(int as_root)
{
    if (!pbt_is_shm())
        pbt_skip("the raw importer speaks the shm handshake");
    if (as_root && geteuid() != 0)
        pbt_skip("needs root");
    if (!as_root && geteuid() == 0) {
        CHECK_SYS(setgroups(0, NULL));
        CHECK_SYS(setgid(65534));
        CHECK_SYS(setuid(65534));
    }
    setenv("POSTBOX_JOB_ID", "pbt-privilege", 1);
    setenv("POSTBOX_JOB_SECRET", job_secret, 1);
}

static void secret_bytes(uint8_t key[16])
{
    for (int i = 0; i < 16; i++) {
        unsigned byte;

        CHECK(sscanf(job_secret + 2 * i, "%2x", &byte) == 1);
        key[i] = (uint8_t)byte;
    }
}

/* Import @ex's segment asking for @perm, by hand; the reply must be a
 * success with every descriptor. */
static void raw_import(const pbt_exporter_t *ex, uint32_t perm, raw_import_t *out)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    pb_shm_msg_hello_t hello;
    pb_shm_msg_request_t req = {
        .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_REQUEST},
        .node = ex->node,
        .segid = ex->segid,
        .perm = perm,
    };
    char cbuf[CMSG_SPACE(sizeof(out->fds))];
    struct iovec iov = {&out->reply, sizeof(out->reply)};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *cmsg;
    uint8_t key[16], buf[64];
    size_t off = 0;
    int n, sock;

    secret_bytes(key);
    n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "postbox-rsm/%s/%u/%08x",
                 getenv("POSTBOX_JOB_ID"), (unsigned)ex->node, (unsigned)ex->segid);
    sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    CHECK_SYS(sock);
    CHECK_SYS(connect(sock, (struct sockaddr *)&addr,
                      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)));
    CHECK(recv(sock, &hello, sizeof(hello), 0) == (ssize_t)sizeof(hello));
    memset(req.nonce, 0xa5, sizeof(req.nonce));
    memcpy(buf + off, "postbox-shm-req", 16), off += 16;
    memcpy(buf + off, hello.nonce, PB_SHM_NONCE_LEN), off += PB_SHM_NONCE_LEN;
    memcpy(buf + off, &req.node, 4), off += 4;
    memcpy(buf + off, &req.segid, 4), off += 4;
    memcpy(buf + off, &req.perm, 4), off += 4;
    memcpy(buf + off, req.nonce, PB_SHM_NONCE_LEN), off += PB_SHM_NONCE_LEN;
    req.mac = pb_siphash24(key, buf, off);
    CHECK(send(sock, &req, sizeof(req), 0) == (ssize_t)sizeof(req));
    CHECK(recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) == (ssize_t)sizeof(out->reply));
    CHECK_MSG(out->reply.status == 0, "the exporter refused the raw import: %d", out->reply.status);
    cmsg = CMSG_FIRSTHDR(&msg);
    CHECK(cmsg != NULL && cmsg->cmsg_type == SCM_RIGHTS &&
          cmsg->cmsg_len == CMSG_LEN(sizeof(out->fds)));
    memcpy(out->fds, CMSG_DATA(cmsg), sizeof(out->fds));
    /* the connection's end would tell the exporter we left: keep it open
     * for the life of the case */
}

/* No write through @fd: a writable shared mapping, a read-only one made
 * writable, a write(2). */
static void check_fd_not_writable(int fd, size_t size, const char *what)
{
    void *addr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

    CHECK_MSG(addr == MAP_FAILED, "%s: a writable mapping succeeded", what);
    addr = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    CHECK_MSG(addr != MAP_FAILED, "%s: not even readable: %m", what);
    CHECK_MSG(mprotect(addr, size, PROT_READ | PROT_WRITE) != 0,
              "%s: a read-only mapping became writable", what);
    munmap(addr, size);
    CHECK_MSG(pwrite(fd, "x", 1, 0) < 0, "%s: pwrite succeeded", what);
}

/* Every way this process could write through @fd fails: the above, and a
 * reopen for writing through /proc/self/fd (refused, or, for root, which
 * the file mode does not stop, as unwritable as @fd). */
static void check_not_writable(int fd, size_t size, const char *what)
{
    char path[64];
    int rw;

    check_fd_not_writable(fd, size, what);
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    rw = open(path, O_RDWR | O_CLOEXEC);
    if (geteuid() != 0) {
        CHECK_MSG(rw < 0 && errno == EACCES, "%s: reopened for writing through %s (%m)", what,
                  path);
        return;
    }
    CHECK_MSG(rw >= 0, "%s: root cannot reopen %s: %m", what, path);
    check_fd_not_writable(rw, size, what);
    close(rw);
}

/* The exporter still sees itself live and published: @ex's segment can be
 * imported and read by the library. */
static void check_exporter_live(const pbt_exporter_t *ex)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    uint8_t buf[64];

    CHECK_OK(pbt_connect(c, ex, RSM_PERM_READ, &im));
    CHECK_OK(rsm_memseg_import_get(im, 0, buf, sizeof(buf)));
    CHECK(pbt_check_pattern(buf, sizeof(buf), 0, ex->seed) == (size_t)-1);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
}

/* Any importer, read-write ones too, gets the exporter's control and
 * liveness pages unwritable; the importers' page is theirs to write. */
static void check_control_pages(const raw_import_t *raw)
{
    char *inbox;

    check_not_writable(raw->fds[SLOT_CTL], PB_SHM_CTL_SIZE, "exporter's control page");
    check_not_writable(raw->fds[SLOT_LIVENESS], PG, "liveness page");
    inbox =
        mmap(NULL, PB_SHM_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, raw->fds[SLOT_INBOX], 0);
    CHECK_MSG(inbox != MAP_FAILED, "importers' page: not writable: %m");
    munmap(inbox, PB_SHM_CTL_SIZE);
}

/* a read-only importer can write the segment by no means */
static void case_read_only_importer_cannot_write_segment(void)
{
    pbt_export_opts_t o = {.size = PG, .seed = 3};
    raw_import_t raw;
    pbt_exporter_t ex;

    become_job_member(0);
    pbt_exporter_start(&ex, &o);
    raw_import(&ex, RSM_PERM_READ, &raw);
    check_not_writable(raw.fds[SLOT_DATA], PG, "segment memory");
    pbt_exporter_expect_pristine(&ex, "after the read-only importer's attempts");
    pbt_exporter_stop(&ex);
}

/* no importer can mark the publication withdrawn or the exporter dead */
static void case_importer_cannot_write_exporter_pages(void)
{
    pbt_export_opts_t o = {.size = PG, .seed = 5};
    raw_import_t raw;
    pbt_exporter_t ex;

    become_job_member(0);
    pbt_exporter_start(&ex, &o);
    raw_import(&ex, RSM_PERM_RDWR, &raw);
    check_control_pages(&raw);
    check_exporter_live(&ex);
    pbt_exporter_stop(&ex);
}

/* nor can a root importer: the seals bind root as well */
static void case_root_importer_cannot_write_exporter_pages(void)
{
    pbt_export_opts_t o = {.size = PG, .seed = 5};
    raw_import_t raw;
    pbt_exporter_t ex;

    become_job_member(1);
    pbt_exporter_start(&ex, &o);
    raw_import(&ex, RSM_PERM_RDWR, &raw);
    check_control_pages(&raw);
    check_exporter_live(&ex);
    pbt_exporter_stop(&ex);
}

/* a read-write importer's descriptor is writable, and writes land */
static void case_read_write_importer_writes_segment(void)
{
    pbt_export_opts_t o = {.size = PG, .seed = 3};
    raw_import_t raw;
    pbt_exporter_t ex;
    char *addr;

    become_job_member(0);
    pbt_exporter_start(&ex, &o);
    raw_import(&ex, RSM_PERM_RDWR, &raw);
    addr = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, raw.fds[SLOT_DATA], 0);
    CHECK(addr != MAP_FAILED);
    addr[7] = 0x42;
    munmap(addr, PG);
    pbt_exporter_expect(&ex, 7, "\x42", 1, "the read-write importer's store");
    pbt_exporter_stop(&ex);
}

static const pbt_case_t cases[] = {
    PBT_CASE(read_only_importer_cannot_write_segment),
    PBT_CASE(read_write_importer_writes_segment),
    PBT_CASE(importer_cannot_write_exporter_pages),
    PBT_CASE(root_importer_cannot_write_exporter_pages),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
