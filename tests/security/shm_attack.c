/*
 * pbt-shm-attack: the attacks on the shm transport that tests/security/
 * test_shm.py runs as other users.
 *
 *   pbt-shm-attack impostor JOB NODE SEGID KEY
 *       Another user's impostor: bind the rendezvous name of segment SEGID
 *       of job JOB on node NODE before its exporter does, and answer the
 *       first importer with the exporter's side of the handshake, MACed
 *       with KEY (32 hex digits, or "zero": the all-zero key), handing over
 *       a page of its own that holds "attacker-data".  Prints "listening",
 *       then "served" once it handed the page over, or "hung up" if the
 *       importer left first.
 *
 *   pbt-shm-attack import NODE SEGID
 *       An importer: connect read-write to SEGID on NODE and print
 *       "rc=<code> <text>", then, on success, "data=<the first bytes>".
 *
 *   pbt-shm-attack export SEGID
 *       An exporter: export and publish one page holding "victim-data" as
 *       SEGID, print "published", and end when standard input closes.
 *
 *   pbt-shm-attack member
 *       Under `postbox run -n 3`: rank 0 exports and publishes a page
 *       holding "victim-data"; rank 1, a hostile member of the job,
 *       imports it read-only and tries to write it (a writable mapping of
 *       its descriptor, a reopen for writing through /proc/self/fd), to
 *       mark the publication withdrawn (the exporter's control page) and
 *       to mark the exporter dead (its liveness page), each by making its
 *       read-only mapping writable; it prints one line per attempt, "<what>:
 *       refused (<why>)" or "<what>: WRITTEN".  Rank 2 then imports the
 *       segment as an honest member and prints "honest: rc=<code> <text>
 *       data=<bytes>"; rank 0 prints "exporter: memory=<bytes>".
 *
 * Exit status 0 unless something outside the attack itself failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <postbox/job.h>
#include <postbox/rsm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rsm/shm_layout.h"
#include "util/siphash.h"

#define PAGE 4096
#define MEMBER_SEGID 0x80005ec5u
#define STATE_OFFSET 64        /* pb_shm_ctl_t's state word */
#define LIVENESS_OFFSET 64     /* the liveness word in the liveness page */
#define OWNER_DIED 0x40000000u /* FUTEX_OWNER_DIED */

static void die(const char *what)
{
    fprintf(stderr, "pbt-shm-attack: %s: %s\n", what, strerror(errno));
    exit(2);
}

static unsigned long parse_number(const char *text)
{
    char *end;
    unsigned long value = strtoul(text, &end, 0);

    if (*text == '\0' || *end != '\0') {
        fprintf(stderr, "pbt-shm-attack: not a number: %s\n", text);
        exit(2);
    }
    return value;
}

/* ---- impostor --------------------------------------------------------------- */

static void parse_key(const char *text, uint8_t key[16])
{
    memset(key, 0, 16);
    if (strcmp(text, "zero") == 0)
        return;
    for (int i = 0; i < 16; i++) {
        unsigned byte;

        if (sscanf(text + 2 * i, "%2x", &byte) != 1) {
            fprintf(stderr, "pbt-shm-attack: KEY is 32 hex digits or \"zero\"\n");
            exit(2);
        }
        key[i] = (uint8_t)byte;
    }
}

static int page_memfd(const char *name)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

    if (fd < 0 || ftruncate(fd, PAGE) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        die("memfd");
    return fd;
}

static int impostor(const char *job, rsm_node_id_t node, rsm_memseg_id_t segid,
                    const char *key_text)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    pb_shm_msg_hello_t hello = {
        .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_HELLO}};
    pb_shm_msg_request_t req;
    pb_shm_msg_reply_t reply = {
        .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_REPLY}};
    pb_shm_ctl_t ctl = {.magic = PB_SHM_CTL_MAGIC, .layout_version = PB_SHM_LAYOUT_VERSION};
    int fds[PB_SHM_REPLY_FDS];
    char cbuf[CMSG_SPACE(sizeof(fds))];
    struct iovec iov = {&reply, sizeof(reply)};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *cmsg;
    uint8_t key[16], buf[64];
    size_t off = 0;
    int n, lfd, conn;

    parse_key(key_text, key);
    n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "postbox-rsm/%s/%u/%08x", job,
                 (unsigned)node, (unsigned)segid);
    lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (lfd < 0 ||
        bind(lfd, (struct sockaddr *)&addr,
             (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) != 0 ||
        listen(lfd, 4) != 0)
        die("binding the rendezvous name");
    printf("listening\n");
    fflush(stdout);

    conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (conn < 0)
        die("accept");
    memset(hello.nonce, 0x42, sizeof(hello.nonce));
    if (send(conn, &hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t)sizeof(hello) ||
        recv(conn, &req, sizeof(req), 0) != (ssize_t)sizeof(req)) {
        printf("hung up\n");
        return 0;
    }
    reply.status = 0;
    reply.perm = req.perm;
    reply.size = PAGE;
    memcpy(buf + off, "postbox-shm-rep", 16), off += 16;
    memcpy(buf + off, req.nonce, PB_SHM_NONCE_LEN), off += PB_SHM_NONCE_LEN;
    memcpy(buf + off, &reply.status, 4), off += 4;
    memcpy(buf + off, &reply.perm, 4), off += 4;
    memcpy(buf + off, &reply.size, 8), off += 8;
    reply.mac = pb_siphash24(key, buf, off);

    /* the segment, a control page that says "live", and zero pages for
     * the rest (the importers' page, the liveness page) */
    for (int i = 0; i < PB_SHM_REPLY_FDS; i++)
        fds[i] = page_memfd("impostor");
    if (pwrite(fds[0], "attacker-data", 14, 0) != 14)
        die("pwrite");
    ctl.segid = segid;
    ctl.exporter_pid = (uint32_t)getpid();
    ctl.size = PAGE;
    atomic_init(&ctl.state.value, PB_SHM_STATE_LIVE);
    if (pwrite(fds[1], &ctl, sizeof(ctl), 0) != (ssize_t)sizeof(ctl))
        die("pwrite");
    cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
    if (sendmsg(conn, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(reply)) {
        printf("hung up\n");
        return 0;
    }
    printf("served\n");
    fflush(stdout);
    /* keep the connection: its end would tell the importer we left */
    pause();
    return 0;
}

/* ---- importer and exporter ---------------------------------------------------- */

static int import(rsm_node_id_t node, rsm_memseg_id_t segid)
{
    rsmapi_controller_handle_t ctlr;
    rsm_memseg_import_handle_t im;
    char data[15] = "";
    int rc;

    if (rsm_get_controller("shm", &ctlr) != RSM_SUCCESS)
        die("rsm_get_controller");
    rc = rsm_memseg_import_connect(ctlr, node, segid, RSM_PERM_RDWR, &im);
    printf("rc=%d %s\n", rc, rsm_strerror(rc));
    if (rc == RSM_SUCCESS) {
        rc = rsm_memseg_import_get(im, 0, data, sizeof(data) - 1);
        printf("data=%s (get rc=%d)\n", data, rc);
        rsm_memseg_import_disconnect(im);
    }
    rsm_release_controller(ctlr);
    return 0;
}

/* One page holding "victim-data", exported and published as @segid. */
static char *export_page(rsmapi_controller_handle_t ctlr, rsm_memseg_id_t segid,
                         rsm_memseg_export_handle_t *seg_p)
{
    char *mem = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int rc;

    if (mem == MAP_FAILED)
        die("mmap");
    strcpy(mem, "victim-data");
    rc = rsm_memseg_export_create(ctlr, seg_p, mem, PAGE, 0);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_export_publish(*seg_p, &segid, NULL, 0);
    if (rc != RSM_SUCCESS) {
        fprintf(stderr, "pbt-shm-attack: export of %#x: %s\n", segid, rsm_strerror(rc));
        exit(2);
    }
    return mem;
}

static int export(rsm_memseg_id_t segid)
{
    rsmapi_controller_handle_t ctlr;
    rsm_memseg_export_handle_t seg;
    char line[64];

    if (rsm_get_controller("shm", &ctlr) != RSM_SUCCESS)
        die("rsm_get_controller");
    export_page(ctlr, segid, &seg);
    printf("published\n");
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin) != NULL)
        ;
    rsm_memseg_export_unpublish(seg);
    rsm_memseg_export_destroy(seg);
    rsm_release_controller(ctlr);
    return 0;
}

/* ---- a hostile member of the job ------------------------------------------- */

/* The descriptor of this process whose /proc/self/fd link starts with @name. */
static int find_fd(const char *name)
{
    for (int fd = 0; fd < 1024; fd++) {
        char path[64], link[256];
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0)
            continue;
        link[n] = '\0';
        if (strncmp(link, name, strlen(name)) == 0 && link[strlen(name)] == ' ')
            return fd;
    }
    return -1;
}

/* The start of the first mapping of this process of @name with
 * permissions @perms ("r--s"), or NULL. */
static void *find_mapping(const char *name, const char *perms)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    void *found = NULL;

    if (maps == NULL)
        die("/proc/self/maps");
    while (found == NULL && fgets(line, sizeof(line), maps) != NULL) {
        unsigned long start;
        char mode[8];

        if (strstr(line, name) != NULL && sscanf(line, "%lx-%*x %7s", &start, mode) == 2 &&
            strcmp(mode, perms) == 0)
            found = (void *)start;
    }
    fclose(maps);
    return found;
}

static void report(const char *what, int refused)
{
    if (refused)
        printf("%s: refused (%s)\n", what, strerror(errno));
    else
        printf("%s: WRITTEN\n", what);
}

/* rank 1: import read-only, then try every write it must not make */
static void member_attack(rsmapi_controller_handle_t ctlr)
{
    rsm_memseg_import_handle_t im;
    char path[64];
    void *addr;
    int fd, rw, rc;

    rc = rsm_memseg_import_connect(ctlr, rsm_get_local_nodeid(), MEMBER_SEGID, RSM_PERM_READ, &im);
    if (rc != RSM_SUCCESS) {
        printf("read-only import: rc=%d %s\n", rc, rsm_strerror(rc));
        return;
    }
    fd = find_fd("/memfd:postbox-segment");
    if (fd < 0) {
        printf("segment descriptor: not found\n");
    } else {
        addr = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (addr != MAP_FAILED)
            memcpy(addr, "attacker!!!", 12);
        report("segment, writable mapping", addr == MAP_FAILED);
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        rw = open(path, O_RDWR | O_CLOEXEC);
        if (rw >= 0) {
            addr = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
            if (addr != MAP_FAILED)
                memcpy(addr, "attacker!!!", 12);
        }
        report("segment, reopened read-write", rw < 0);
    }
    addr = find_mapping("memfd:postbox-segment-ctl", "r--s");
    if (addr == NULL)
        addr = find_mapping("memfd:postbox-segment-ctl", "rw-s");
    if (addr == NULL) {
        printf("control page: not found\n");
    } else {
        rc = mprotect(addr, PAGE, PROT_READ | PROT_WRITE);
        if (rc == 0)
            *(volatile uint32_t *)((char *)addr + STATE_OFFSET) = PB_SHM_STATE_WITHDRAWN;
        report("control page, publication marked withdrawn", rc != 0);
    }
    /* the exporter's liveness page: the one mapped read-only (this rank's
     * own is mapped read-write) */
    addr = find_mapping("memfd:postbox-liveness", "r--s");
    if (addr == NULL) {
        printf("liveness page: not found\n");
    } else {
        rc = mprotect(addr, PAGE, PROT_READ | PROT_WRITE);
        if (rc == 0)
            *(volatile uint32_t *)((char *)addr + LIVENESS_OFFSET) |= OWNER_DIED;
        report("liveness page, exporter marked dead", rc != 0);
    }
    fflush(stdout);
    rsm_memseg_import_disconnect(im);
}

/* rank 2: an honest member imports after the attack */
static void member_honest(rsmapi_controller_handle_t ctlr)
{
    rsm_memseg_import_handle_t im;
    char data[15] = "";
    int rc;

    rc = rsm_memseg_import_connect(ctlr, rsm_get_local_nodeid(), MEMBER_SEGID, RSM_PERM_READ, &im);
    if (rc == RSM_SUCCESS) {
        rc = rsm_memseg_import_get(im, 0, data, sizeof(data) - 1);
        rsm_memseg_import_disconnect(im);
    }
    printf("honest: rc=%d %s data=%s\n", rc, rsm_strerror(rc), data);
    fflush(stdout);
}

static int member(void)
{
    rsmapi_controller_handle_t ctlr;
    rsm_memseg_export_handle_t seg;
    char *mem = NULL;
    int rank;

    if (postbox_job_init() != 0 || postbox_job_size() != 3) {
        fprintf(stderr, "pbt-shm-attack member: run under postbox run -n 3\n");
        return 2;
    }
    rank = postbox_job_rank();
    if (rsm_get_controller("shm", &ctlr) != RSM_SUCCESS)
        die("rsm_get_controller");
    if (rank == 0)
        mem = export_page(ctlr, MEMBER_SEGID, &seg);
    postbox_job_fence(); /* published */
    if (rank == 1)
        member_attack(ctlr);
    postbox_job_fence(); /* attacked */
    if (rank == 2)
        member_honest(ctlr);
    postbox_job_fence(); /* checked */
    if (rank == 0) {
        printf("exporter: memory=%.14s\n", mem);
        fflush(stdout);
        rsm_memseg_export_unpublish(seg);
        rsm_memseg_export_destroy(seg);
    }
    rsm_release_controller(ctlr);
    postbox_job_finalize();
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 6 && strcmp(argv[1], "impostor") == 0)
        return impostor(argv[2], (rsm_node_id_t)parse_number(argv[3]),
                        (rsm_memseg_id_t)parse_number(argv[4]), argv[5]);
    if (argc == 4 && strcmp(argv[1], "import") == 0)
        return import((rsm_node_id_t)parse_number(argv[2]), (rsm_memseg_id_t)parse_number(argv[3]));
    if (argc == 3 && strcmp(argv[1], "export") == 0)
        return export((rsm_memseg_id_t)parse_number(argv[2]));
    if (argc == 2 && strcmp(argv[1], "member") == 0)
        return member();
    fprintf(stderr, "usage: pbt-shm-attack impostor JOB NODE SEGID KEY | import NODE SEGID | "
                    "export SEGID | member\n");
    return 2;
}
