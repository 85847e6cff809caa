/*
 * The shm transport: RSM between processes of one node.
 *
 * An export segment is a memfd mapped over the exporter's own memory, so
 * importers map the very pages the exporter uses: put and get are copies,
 * map is mmap of the same memfd.  Publication, access checks and the hand-
 * over of descriptors go through the rendezvous socket described in
 * shm_layout.h, served by the RSM service thread.  Nothing is named in a
 * filesystem: memfds and abstract sockets disappear with their last user,
 * so no exit, kill -9 included, leaves anything behind.
 *
 * What a process of another user, or a faulty process of this one, can make
 * an exporter hold through its rendezvous sockets is bounded (docs/
 * security.md, shm segments): connections of another user are closed at
 * accept, connections in their handshake are capped per process and closed
 * after SHM_HANDSHAKE_MS, and running out of descriptors rests the
 * rendezvous sockets instead of spinning: shm_limits.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "boot/identity.h"
#include "rsm/rendezvous.h"
#include "rsm/rsm_impl.h"
#include "rsm/service.h"
#include "rsm/shm_impl.h"
#include "rsm/shm_layout.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/futex.h"
#include "util/log.h"
#include "util/log_limit.h"
#include "util/random.h"
#include "util/siphash.h"
#include "util/time.h"
typedef struct {
    int sock;
    int data_fd;
    char *base;        /* the whole segment, for put and get */
    pb_shm_ctl_t *ctl; /* the exporter's page, mapped read-only */
    pb_shm_inbox_t *inbox;
    const void *liveness;
    uint32_t seen_generation;
} shm_import_t;

static size_t shm_page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- small system helpers ------------------------------------------------ */

/* A memfd of @size bytes for others to map.  With @map_p, it is mapped
 * read-write into *@map_p first; @seals (F_SEAL_FUTURE_WRITE or 0) then
 * applies to every later mapping and write, whoever makes it.  @return the
 * descriptor, or -1 (logged). */
static int shm_memfd_create(const char *name, size_t size, int seals, void **map_p)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void *map = NULL;

    if (fd < 0) {
        pb_error("memfd_create(%s) failed: %m", name);
        return -1;
    }
    /* fixed size: nobody can shrink it under a mapping and cause SIGBUS;
     * mode 0400: a read-only importer's descriptor cannot be reopened for
     * writing through /proc (descriptors open now keep their access) */
    if (ftruncate(fd, (off_t)size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0 || fchmod(fd, 0400) != 0) {
        pb_error("sizing memfd %s to %zu bytes failed: %m", name, size);
        goto err_close;
    }
    if (map_p != NULL) {
        map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
            pb_error("mmap of memfd %s failed: %m", name);
            goto err_close;
        }
    }
    /* and no seal changes after these */
    if (fcntl(fd, F_ADD_SEALS, seals | F_SEAL_SEAL) != 0) {
        pb_error("sealing memfd %s failed: %m", name);
        if (map != NULL)
            munmap(map, size);
        goto err_close;
    }
    if (map_p != NULL)
        *map_p = map;
    return fd;

err_close:
    close(fd);
    return -1;
}

/* Copy [vaddr, vaddr + size) of this process into @fd; PB_ERR_BAD_ADDRESS
 * if the range is not readable memory. */
static pb_status_t shm_fill_from_memory(int fd, const void *vaddr, size_t size)
{
    size_t done = 0;

    while (done < size) {
        ssize_t n = pwrite(fd, (const char *)vaddr + done, size - done, (off_t)done);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EFAULT)
            return PB_ERR_BAD_ADDRESS;
        if (n <= 0) {
            pb_error("pwrite to segment memfd failed: %m");
            return PB_ERR_IO;
        }
        done += (size_t)n;
    }
    return PB_OK;
}

/* Back [vaddr, vaddr + size) with @fd's pages, in place. */
static pb_status_t shm_map_over(void *vaddr, size_t size, int fd)
{
    void *addr = mmap(vaddr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);

    if (addr == MAP_FAILED) {
        pb_error("mmap of the segment over %p (%zu bytes) failed: %m", vaddr, size);
        return PB_ERR_NO_MEMORY;
    }
    return PB_OK;
}

/* Make [vaddr, vaddr + size) private anonymous memory again, keeping the
 * data it shows now.  The replacement is atomic (mremap over it). */
static pb_status_t shm_make_private(void *vaddr, size_t size)
{
    void *copy = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (copy == MAP_FAILED) {
        pb_error("mmap of %zu private bytes failed: %m", size);
        return PB_ERR_NO_MEMORY;
    }
    memcpy(copy, vaddr, size);
    if (mremap(copy, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, vaddr) == MAP_FAILED) {
        pb_error("mremap of the private copy over %p failed: %m", vaddr);
        munmap(copy, size);
        return PB_ERR_NO_MEMORY;
    }
    return PB_OK;
}

/* The job secret; the solo job's is the user's solo key (boot/solo_key.h) */
static void shm_mac_key(uint8_t key[PB_BOOT_SECRET_LEN])
{
    memcpy(key, pb_boot_identity_get()->secret, PB_BOOT_SECRET_LEN);
}

static uint64_t shm_request_mac(const uint8_t hello_nonce[PB_SHM_NONCE_LEN],
                                const pb_shm_msg_request_t *req)
{
    uint8_t key[PB_BOOT_SECRET_LEN];
    uint8_t buf[16 + PB_SHM_NONCE_LEN + 12 + PB_SHM_NONCE_LEN];
    size_t off = 0;

    shm_mac_key(key);
    memcpy(buf + off, "postbox-shm-req", 16), off += 16;
    memcpy(buf + off, hello_nonce, PB_SHM_NONCE_LEN), off += PB_SHM_NONCE_LEN;
    memcpy(buf + off, &req->node, 4), off += 4;
    memcpy(buf + off, &req->segid, 4), off += 4;
    memcpy(buf + off, &req->perm, 4), off += 4;
    memcpy(buf + off, req->nonce, PB_SHM_NONCE_LEN), off += PB_SHM_NONCE_LEN;
    return pb_siphash24(key, buf, off);
}

static uint64_t shm_reply_mac(const uint8_t request_nonce[PB_SHM_NONCE_LEN],
                              const pb_shm_msg_reply_t *reply)
{
    uint8_t key[PB_BOOT_SECRET_LEN];
    uint8_t buf[16 + PB_SHM_NONCE_LEN + 16];
    size_t off = 0;

    shm_mac_key(key);
    memcpy(buf + off, "postbox-shm-rep", 16), off += 16;
    memcpy(buf + off, request_nonce, PB_SHM_NONCE_LEN), off += PB_SHM_NONCE_LEN;
    memcpy(buf + off, &reply->status, 4), off += 4;
    memcpy(buf + off, &reply->perm, 4), off += 4;
    memcpy(buf + off, &reply->size, 8), off += 8;
    return pb_siphash24(key, buf, off);
}

static int shm_msg_hdr_ok(const pb_shm_msg_hdr_t *hdr, uint16_t type)
{
    return hdr->magic == PB_SHM_MSG_MAGIC && hdr->version == PB_SHM_PROTOCOL_VERSION &&
           hdr->type == type;
}

/* ---- capabilities ------------------------------------------------------- */

static void shm_query(pb_rsm_caps_t *caps_p)
{
    caps_p->can_map = 1;
    caps_p->reaches_job_nodes = 0;
    caps_p->page_size = shm_page_size();
    caps_p->max_segment_size = (size_t)SHM_MAX_SEGMENT_SIZE;
}

static int shm_reaches(rsm_node_id_t node)
{
    return node == pb_boot_identity_get()->node_id;
}

/* ---- export side ---------------------------------------------------------- */

/* Refuse [@vaddr, @vaddr + @size) if it overlaps the memory of an shm
 * export other than @self: mapping a new memfd over it would silently take
 * that memory away from the other segment and its importers. */
static pb_status_t shm_check_not_exported(const pb_rsm_export_t *self, const void *vaddr,
                                          size_t size)
{
    uintptr_t start = (uintptr_t)vaddr, end = start + size;

    for (const pb_shm_export_t *e = pb_shm_exports; e != NULL; e = e->next) {
        uintptr_t other = (uintptr_t)e->seg->vaddr;

        if (e->seg != self && start < other + e->seg->size && other < end) {
            pb_error("memory %p + %zu overlaps the memory of another shm segment (%p + %zu): "
                     "refused",
                     vaddr, size, e->seg->vaddr, e->seg->size);
            return PB_ERR_BAD_ADDRESS;
        }
    }
    return PB_OK;
}

static pb_status_t shm_export_create(pb_rsm_export_t *seg)
{
    pb_shm_export_t *se = calloc(1, sizeof(*se));
    pb_status_t status;

    if (se == NULL)
        return PB_ERR_NO_MEMORY;
    /* mapping the memfd over read-only memory would make it writable */
    status = pb_rsm_check_writable(seg->vaddr, seg->size);
    if (status == PB_OK)
        status = shm_check_not_exported(seg, seg->vaddr, seg->size);
    if (status != PB_OK)
        goto err_free;
    se->ctl_fd = -1;
    se->inbox_fd = -1;
    se->data_fd = shm_memfd_create("postbox-segment", seg->size, 0, NULL);
    if (se->data_fd < 0) {
        status = PB_ERR_NO_RESOURCE;
        goto err_free;
    }
    status = shm_fill_from_memory(se->data_fd, seg->vaddr, seg->size);
    if (status != PB_OK)
        goto err_close;
    status = shm_map_over(seg->vaddr, seg->size, se->data_fd);
    if (status != PB_OK)
        goto err_close;
    se->seg = seg;
    se->next = pb_shm_exports;
    pb_shm_exports = se;
    seg->tl = se;
    return PB_OK;

err_close:
    close(se->data_fd);
err_free:
    free(se);
    return status;
}

static void shm_export_destroy(pb_rsm_export_t *seg)
{
    pb_shm_export_t *se = seg->tl;
    pb_shm_export_t **link = &pb_shm_exports;

    while (*link != se)
        link = &(*link)->next;
    *link = se->next;
    /* the exporter keeps its data, in private pages */
    if (shm_make_private(seg->vaddr, seg->size) != PB_OK)
        pb_warn("segment memory at %p stays shared after destroy", seg->vaddr);
    close(se->data_fd);
    free(se->conns);
    free(se);
    seg->tl = NULL;
}

static pb_status_t shm_export_rebind(pb_rsm_export_t *seg, void *vaddr)
{
    pb_shm_export_t *se = seg->tl;
    int staging_fd;
    void *staging;
    pb_status_t status;

    status = pb_rsm_check_writable(vaddr, seg->size);
    if (status == PB_OK)
        status = shm_check_not_exported(seg, vaddr, seg->size);
    if (status != PB_OK)
        return status;
    /* snapshot the new memory first: if it is unreadable nothing changes */
    staging_fd = shm_memfd_create("postbox-rebind", seg->size, 0, NULL);
    if (staging_fd < 0)
        return PB_ERR_NO_RESOURCE;
    status = shm_fill_from_memory(staging_fd, vaddr, seg->size);
    if (status != PB_OK)
        goto out_close;
    staging = mmap(NULL, seg->size, PROT_READ, MAP_SHARED, staging_fd, 0);
    if (staging == MAP_FAILED) {
        pb_error("mmap of the rebind staging copy failed: %m");
        status = PB_ERR_NO_MEMORY;
        goto out_close;
    }
    status = shm_make_private(seg->vaddr, seg->size);
    if (status != PB_OK)
        goto out_unmap;
    /* the same memfd, so importers see the new contents without noticing */
    status = shm_fill_from_memory(se->data_fd, staging, seg->size);
    if (status == PB_OK)
        status = shm_map_over(vaddr, seg->size, se->data_fd);
    if (status != PB_OK) {
        pb_error("rebind to %p failed after the old memory was released", vaddr);
        goto out_unmap;
    }
    seg->vaddr = vaddr;
out_unmap:
    munmap(staging, seg->size);
out_close:
    close(staging_fd);
    return status;
}

/* every shm export of this process that exists (under pb_rsm_lock) */
pb_shm_export_t *pb_shm_exports;

/* ---- connections ---------------------------------------------------------- */

void pb_shm_conn_close(pb_shm_conn_t *conn)
{
    pb_shm_export_t *se = conn->seg->tl;

    pb_shm_pending_remove(conn);
    for (unsigned i = 0; i < se->conn_count; i++) {
        if (se->conns[i] == conn) {
            se->conns[i] = se->conns[--se->conn_count];
            break;
        }
    }
    pb_rsm_service_remove(conn->service_id); /* closes conn->fd */
    free(conn);
    pb_shm_accept_resume(); /* a descriptor came free */
}

/* ---- serving importers ----------------------------------------------------- */

static void shm_conn_reply(pb_shm_conn_t *conn, const pb_shm_msg_request_t *req, pb_status_t status,
                           rsm_permission_t granted)
{
    pb_rsm_export_t *seg = conn->seg;
    pb_shm_export_t *se = seg->tl;
    pb_shm_msg_reply_t reply = {
        .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_REPLY},
        .status = status,
        .perm = granted,
        .size = status == PB_OK ? seg->size : 0,
    };
    int fds[PB_SHM_REPLY_FDS] = {-1, -1, -1, -1};
    char cbuf[CMSG_SPACE(sizeof(fds))];
    struct iovec iov = {&reply, sizeof(reply)};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    int data_fd = -1;

    if (status == PB_OK) {
        if (granted & RSM_PERM_WRITE) {
            data_fd = se->data_fd;
        } else {
            char path[64];

            /* a read-only descriptor: the kernel refuses a writable map */
            snprintf(path, sizeof(path), "/proc/self/fd/%d", se->data_fd);
            data_fd = open(path, O_RDONLY | O_CLOEXEC);
            if (data_fd < 0) {
                pb_error("reopening the segment read-only failed: %m");
                reply.status = status = PB_ERR_NO_RESOURCE;
                reply.size = 0;
            }
        }
    }
    /* (the request's MAC was right: this peer is of the job) */
    reply.mac = shm_reply_mac(req->nonce, &reply);
    if (status == PB_OK) {
        struct cmsghdr *cmsg;

        fds[0] = data_fd;
        fds[1] = se->ctl_fd;
        fds[2] = se->inbox_fd;
        fds[3] = pb_rsm_service_liveness_fd();
        msg.msg_control = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
        memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
    }
    if (sendmsg(conn->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(reply)) {
        pb_debug("reply to importer failed: %m");
        status = PB_ERR_IO;
    }
    if (data_fd >= 0 && data_fd != se->data_fd)
        close(data_fd);
    if (status == PB_OK) {
        pb_shm_pending_remove(conn);
        conn->connected = 1;
        se->imported = 1;
    } else {
        pb_shm_conn_close(conn);
    }
}

/* Answer a request that does not prove it is of the job with REFUSED,
 * which carries no MAC, and close the connection. */
static void shm_conn_refuse(pb_shm_conn_t *conn, const pb_shm_msg_request_t *req)
{
    pb_shm_msg_reply_t refused = {
        .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_REFUSED}};

    pb_log_limited(&pb_shm_limits.log_peer, SHM_LOG_INTERVAL_MS,
                   "shm: refused import of segment %#x by pid %d: not of this job", req->segid,
                   (int)conn->peer.pid);
    (void)send(conn->fd, &refused, sizeof(refused), MSG_NOSIGNAL | MSG_DONTWAIT);
    pb_shm_conn_close(conn);
}

static void shm_conn_handle_request(pb_shm_conn_t *conn)
{
    pb_shm_msg_request_t req;
    ssize_t n = recv(conn->fd, &req, sizeof(req), MSG_DONTWAIT | MSG_TRUNC);
    int grant;

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n != (ssize_t)sizeof(req) || !shm_msg_hdr_ok(&req.hdr, PB_SHM_MSG_REQUEST)) {
        if (n > 0)
            pb_log_limited(&pb_shm_limits.log_peer, SHM_LOG_INTERVAL_MS,
                           "shm: closing a rendezvous connection of pid %d: malformed import "
                           "request (%zd bytes)",
                           (int)conn->peer.pid, n);
        pb_shm_conn_close(conn);
        return;
    }
    if (req.mac != shm_request_mac(conn->nonce, &req)) {
        shm_conn_refuse(conn, &req);
        return;
    }
    if (!conn->seg->published || req.segid != conn->seg->segid) {
        shm_conn_reply(conn, &req, PB_ERR_NOT_PUBLISHED, 0);
        return;
    }
    grant = pb_rsm_acl_grant(conn->seg, req.node, conn->peer.uid, conn->peer.gid);
    if (grant < 0) {
        shm_conn_reply(conn, &req, PB_ERR_NOT_PUBLISHED_TO_NODE, 0);
        return;
    }
    if ((req.perm & ~(uint32_t)grant) != 0) {
        shm_conn_reply(conn, &req, PB_ERR_PERMISSION, 0);
        return;
    }
    shm_conn_reply(conn, &req, PB_OK, req.perm);
}

static void shm_conn_ready(void *arg, uint32_t events)
{
    pb_shm_conn_t *conn = arg;
    char byte;

    if (!conn->connected) {
        shm_conn_handle_request(conn);
        return;
    }
    /* a connected importer sends nothing: this is its disconnect or death */
    if (recv(conn->fd, &byte, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN && !(events & EPOLLHUP))
        return;
    pb_shm_conn_close(conn);
}

static int shm_conns_grow(pb_shm_export_t *se)
{
    unsigned capacity = se->conn_capacity ? 2 * se->conn_capacity : 8;
    pb_shm_conn_t **grown = realloc(se->conns, capacity * sizeof(*grown));

    if (grown == NULL)
        return 0;
    se->conns = grown;
    se->conn_capacity = capacity;
    return 1;
}

/* Serve accepted connection @fd of @peer to the rendezvous of @seg: greet
 * it with a fresh nonce and wait for its request (closed on failure). */
static void shm_conn_open(pb_rsm_export_t *seg, int fd, const struct ucred *peer)
{
    pb_shm_export_t *se = seg->tl;
    pb_shm_msg_hello_t hello = {
        .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_HELLO}};
    pb_shm_conn_t *conn = calloc(1, sizeof(*conn));

    if (conn == NULL || (se->conn_count == se->conn_capacity && !shm_conns_grow(se))) {
        pb_log_limited(&pb_shm_limits.log_accept, SHM_LOG_INTERVAL_MS,
                       "shm: turned away an importer of segment %#x: out of memory", seg->segid);
        free(conn);
        close(fd);
        return;
    }
    conn->seg = seg;
    conn->fd = fd;
    conn->peer = *peer;
    conn->accepted_ms = pb_time_now_ms();
    if (pb_random_bytes(conn->nonce, sizeof(conn->nonce)) != 0 ||
        pb_rsm_service_add(fd, EPOLLIN | EPOLLRDHUP, shm_conn_ready, conn, &conn->service_id) !=
            PB_OK) {
        pb_log_limited(&pb_shm_limits.log_accept, SHM_LOG_INTERVAL_MS,
                       "shm: turned away an importer of segment %#x: %s", seg->segid,
                       strerror(errno));
        free(conn);
        close(fd);
        return;
    }
    se->conns[se->conn_count++] = conn;
    pb_shm_pending_append(conn);
    pb_shm_limit_tick(1);
    memcpy(hello.nonce, conn->nonce, sizeof(hello.nonce));
    if (send(fd, &hello, sizeof(hello), MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(hello))
        pb_shm_conn_close(conn);
}

static void shm_listen_ready(void *arg, uint32_t events)
{
    pb_rsm_export_t *seg = arg;

    (void)events;
    for (int i = 0; i < SHM_ACCEPTS_PER_PASS && pb_shm_limits.rest_until == 0; i++) {
        pb_shm_export_t *se = seg->tl;
        struct ucred peer;
        socklen_t peer_len = sizeof(peer);
        int fd = accept4(se->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

        if (fd < 0) {
            if (pb_shm_accept_failed(seg, errno))
                continue;
            return;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0) {
            pb_log_limited(&pb_shm_limits.log_accept, SHM_LOG_INTERVAL_MS,
                           "shm: SO_PEERCRED on a rendezvous connection failed: %s",
                           strerror(errno));
            close(fd);
            continue;
        }
        /* a job is one user's (and an importer refuses an exporter of
         * another user): nothing to serve, not even a greeting */
        if (peer.uid != geteuid()) {
            pb_log_limited(&pb_shm_limits.log_peer, SHM_LOG_INTERVAL_MS,
                           "shm: closed a connection to the rendezvous of segment %#x from pid "
                           "%d of uid %u: not of this user",
                           seg->segid, (int)peer.pid, (unsigned)peer.uid);
            close(fd);
            continue;
        }
        if (!pb_shm_handshake_admit(seg)) {
            close(fd);
            continue;
        }
        shm_conn_open(seg, fd, &peer);
    }
}

/* The publication's two control pages: the exporter's, which only this
 * process can write (sealed against writes through any new mapping), and
 * the importers'. */
static pb_status_t shm_ctl_create(pb_rsm_export_t *seg, rsm_memseg_id_t segid)
{
    pb_shm_export_t *se = seg->tl;
    void *ctl_map, *inbox_map;
    pb_shm_ctl_t *ctl;

    se->ctl_fd =
        shm_memfd_create("postbox-segment-ctl", PB_SHM_CTL_SIZE, F_SEAL_FUTURE_WRITE, &ctl_map);
    if (se->ctl_fd < 0)
        return PB_ERR_NO_RESOURCE;
    se->inbox_fd = shm_memfd_create("postbox-segment-inbox", PB_SHM_CTL_SIZE, 0, &inbox_map);
    if (se->inbox_fd < 0) {
        munmap(ctl_map, PB_SHM_CTL_SIZE);
        close(se->ctl_fd);
        se->ctl_fd = -1;
        return PB_ERR_NO_RESOURCE;
    }
    ctl = ctl_map;
    ctl->magic = PB_SHM_CTL_MAGIC;
    ctl->layout_version = PB_SHM_LAYOUT_VERSION;
    ctl->segid = segid;
    ctl->exporter_pid = (uint32_t)getpid();
    ctl->size = seg->size;
    atomic_store_explicit(&ctl->state.value, PB_SHM_STATE_LIVE, memory_order_release);
    se->ctl = ctl;
    se->inbox = inbox_map;
    return PB_OK;
}

static void shm_ctl_release(pb_shm_export_t *se)
{
    munmap(se->ctl, PB_SHM_CTL_SIZE);
    munmap(se->inbox, PB_SHM_CTL_SIZE);
    close(se->ctl_fd);
    close(se->inbox_fd);
    se->ctl = NULL;
    se->inbox = NULL;
    se->ctl_fd = -1;
    se->inbox_fd = -1;
}

static pb_status_t shm_export_publish(pb_rsm_export_t *seg, rsm_memseg_id_t *segid_p)
{
    pb_shm_export_t *se = seg->tl;
    rsm_node_id_t node = pb_boot_identity_get()->node_id;
    rsm_memseg_id_t segid = *segid_p;
    pb_status_t status;
    int fd;

    status = pb_shm_limits_start();
    if (status != PB_OK)
        return status;
    status = pb_rsm_rendezvous_listen(SHM_RENDEZVOUS_PREFIX, node, &segid, &fd);
    if (status != PB_OK)
        return status;
    status = shm_ctl_create(seg, segid);
    if (status != PB_OK)
        goto err_close;
    se->listen_fd = fd;
    /* (while the rendezvous sockets rest, this one rests with them) */
    status = pb_rsm_service_add(fd, pb_shm_limits.rest_until != 0 ? 0 : EPOLLIN, shm_listen_ready,
                                seg, &se->listen_id);
    if (status != PB_OK)
        goto err_release_ctl;
    se->listening = 1;
    se->imported = 0;
    *segid_p = segid;
    return PB_OK;

err_release_ctl:
    shm_ctl_release(se);
err_close:
    close(fd);
    return status;
}

static pb_status_t shm_export_unpublish(pb_rsm_export_t *seg)
{
    pb_shm_export_t *se = seg->tl;
    int fresh_fd;

    pb_rsm_service_remove(se->listen_id); /* the name disappears */
    se->listening = 0;
    while (se->conn_count > 0)
        pb_shm_conn_close(se->conns[se->conn_count - 1]);
    /* cut importers off: they check the state before each access, and
     * those asleep in a signal wait are woken to see it */
    atomic_store_explicit(&se->ctl->state.value, PB_SHM_STATE_WITHDRAWN, memory_order_seq_cst);
    atomic_fetch_add_explicit(&se->ctl->import_generation.value, 1, memory_order_seq_cst);
    pb_futex_wake_all(&se->ctl->import_generation.value);
    shm_ctl_release(se);

    /* importers may still hold mappings of the data: move this process to
     * fresh pages so that those mappings no longer reach its memory */
    if (se->imported) {
        fresh_fd = shm_memfd_create("postbox-segment", seg->size, 0, NULL);
        if (fresh_fd < 0 || shm_fill_from_memory(fresh_fd, seg->vaddr, seg->size) != PB_OK ||
            shm_map_over(seg->vaddr, seg->size, fresh_fd) != PB_OK) {
            pb_warn("segment %#x: old importers' mappings still reach this memory", seg->segid);
            if (fresh_fd >= 0)
                close(fresh_fd);
        } else {
            close(se->data_fd);
            se->data_fd = fresh_fd;
        }
        se->imported = 0;
    }
    return PB_OK;
}

/* ---- import side ---------------------------------------------------------- */

static inline int shm_import_alive(const shm_import_t *si)
{
    return atomic_load_explicit(&si->ctl->state.value, memory_order_acquire) == PB_SHM_STATE_LIVE &&
           !pb_rsm_liveness_dead(si->liveness);
}

/* Receive the exporter's answer to the request of @im, with its
 * descriptors in @fds: those received, then -1 in every slot left, so that
 * the caller may close each slot that is not -1 whatever happened.
 * @return PB_OK for a REPLY (holding all PB_SHM_REPLY_FDS descriptors if
 * its status is PB_OK), PB_ERR_PERMISSION for REFUSED (one warning),
 * PB_ERR_TIMEOUT (logged), PB_ERR_NOT_PUBLISHED if the exporter hung up,
 * PB_ERR_PROTOCOL for anything else; on error @fds holds only -1. */
static pb_status_t shm_recv_reply(const pb_rsm_import_t *im, int sock, pb_shm_msg_reply_t *reply,
                                  int fds[PB_SHM_REPLY_FDS])
{
    char cbuf[CMSG_SPACE(sizeof(int) * PB_SHM_REPLY_FDS)];
    struct iovec iov = {reply, sizeof(*reply)};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    pb_status_t status = PB_OK;
    ssize_t n;
    int nfds = 0;
    int err;

    for (int i = 0; i < PB_SHM_REPLY_FDS; i++)
        fds[i] = -1;
    do {
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    err = errno;
    /* (the control buffer holds something only when a message came) */
    for (struct cmsghdr *cmsg = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; cmsg != NULL;
         cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
            int count = (int)((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));

            for (int i = 0; i < count; i++) {
                int fd;

                memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
                if (nfds < PB_SHM_REPLY_FDS)
                    fds[nfds++] = fd;
                else
                    close(fd);
            }
        }
    }
    if (n == (ssize_t)sizeof(*reply) && shm_msg_hdr_ok(&reply->hdr, PB_SHM_MSG_REFUSED)) {
        /* unauthenticated, like a close: the exporter MACs nothing for a
         * peer that did not prove it is of the job */
        pb_warn("import of segment %#x refused by its exporter: this process is not of its job",
                im->segid);
        status = PB_ERR_PERMISSION;
    } else if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
        pb_error("the exporter of segment %#x did not answer the import request within the "
                 "connect timeout (%d s)",
                 im->segid, SHM_CONNECT_TIMEOUT_S);
        status = PB_ERR_TIMEOUT;
    } else if (n <= 0) {
        /* an exporter that vanishes mid-handshake took its segment along */
        status = PB_ERR_NOT_PUBLISHED;
    } else if (n != (ssize_t)sizeof(*reply) || !shm_msg_hdr_ok(&reply->hdr, PB_SHM_MSG_REPLY) ||
               (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
               (reply->status == PB_OK && nfds != PB_SHM_REPLY_FDS)) {
        status = PB_ERR_PROTOCOL;
    }
    if (status != PB_OK) {
        for (int i = 0; i < nfds; i++) {
            close(fds[i]);
            fds[i] = -1;
        }
    }
    return status;
}

/* Whether descriptor @fd, the exporter's @what, may be mapped for @need
 * bytes: a memfd of ordinary shared memory (not hugetlbfs, whose pages can
 * run out under a mapping) sealed against shrinking that holds them, so no
 * access within them can ever fault (SIGBUS), whatever its sender does
 * later. */
static pb_status_t shm_import_check_fd(const pb_rsm_import_t *im, int fd, uint64_t need,
                                       const char *what)
{
    struct statfs fs;
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);

    if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstatfs(fd, &fs) != 0 ||
        fs.f_type != TMPFS_MAGIC) {
        pb_warn("import of segment %#x refused: the exporter's %s is not a shared-memory memfd "
                "sealed against shrinking",
                im->segid, what);
        return PB_ERR_PROTOCOL;
    }
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < need) {
        pb_warn("import of segment %#x refused: the exporter's %s holds %lld bytes, not %llu",
                im->segid, what, (long long)st.st_size, (unsigned long long)need);
        return PB_ERR_PROTOCOL;
    }
    return PB_OK;
}

/* Undo the mappings of @si (of a @size-byte segment) that were made. */
static void shm_import_unmap(shm_import_t *si, size_t size)
{
    if (si->base != MAP_FAILED)
        munmap(si->base, size);
    if (si->ctl != MAP_FAILED)
        munmap(si->ctl, PB_SHM_CTL_SIZE);
    if (si->inbox != MAP_FAILED)
        munmap(si->inbox, PB_SHM_CTL_SIZE);
    if (si->liveness != MAP_FAILED)
        munmap((void *)si->liveness, shm_page_size());
}

/* Run the handshake on connected si->sock; on success map what the
 * exporter handed over into @si.  *@turned_away_p is set if the exporter
 * closed the connection before greeting it: turned away for load, or
 * withdrawing the segment (a new connection tells which). */
static pb_status_t shm_import_handshake(pb_rsm_import_t *im, shm_import_t *si, int *turned_away_p)
{
    pb_shm_msg_hello_t hello;
    pb_shm_msg_request_t req = {
        .hdr = {PB_SHM_MSG_MAGIC, PB_SHM_PROTOCOL_VERSION, PB_SHM_MSG_REQUEST},
        .node = pb_boot_identity_get()->node_id,
        .segid = im->segid,
        .perm = im->perm,
    };
    pb_shm_msg_reply_t reply;
    int fds[PB_SHM_REPLY_FDS] = {-1, -1, -1, -1};
    int prot = PROT_READ | ((im->perm & RSM_PERM_WRITE) ? PROT_WRITE : 0);
    pb_status_t status;
    ssize_t n;

    do {
        n = recv(si->sock, &hello, sizeof(hello), MSG_TRUNC);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pb_error("the exporter of segment %#x did not greet us within the connect timeout (%d s)",
                 im->segid, SHM_CONNECT_TIMEOUT_S);
        return PB_ERR_TIMEOUT;
    }
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        *turned_away_p = 1;
        return PB_ERR_NOT_PUBLISHED;
    }
    if (n < 0)
        return PB_ERR_NOT_PUBLISHED;
    if (n != (ssize_t)sizeof(hello) || !shm_msg_hdr_ok(&hello.hdr, PB_SHM_MSG_HELLO))
        return PB_ERR_PROTOCOL;
    if (pb_random_bytes(req.nonce, sizeof(req.nonce)) != 0)
        return PB_ERR_IO;
    req.mac = shm_request_mac(hello.nonce, &req);
    if (send(si->sock, &req, sizeof(req), MSG_NOSIGNAL) != (ssize_t)sizeof(req))
        return PB_ERR_NOT_PUBLISHED;
    status = shm_recv_reply(im, si->sock, &reply, fds);
    if (status != PB_OK)
        return status;
    if (reply.mac != shm_reply_mac(req.nonce, &reply)) {
        pb_warn("import of segment %#x: the exporter is not of this job", im->segid);
        status = PB_ERR_PERMISSION;
        goto out_close;
    }
    if (reply.status != PB_OK) {
        status = reply.status > 0 || reply.status <= PB_ERR_LAST ? PB_ERR_PROTOCOL
                                                                 : (pb_status_t)reply.status;
        goto out_close;
    }
    if (reply.size == 0 || reply.size > SHM_MAX_SEGMENT_SIZE) {
        pb_error("import of segment %#x: the exporter announces %llu bytes: refused", im->segid,
                 (unsigned long long)reply.size);
        status = PB_ERR_PROTOCOL;
        goto out_close;
    }
    status = shm_import_check_fd(im, fds[0], reply.size, "segment memory");
    if (status == PB_OK)
        status = shm_import_check_fd(im, fds[1], PB_SHM_CTL_SIZE, "control page");
    if (status == PB_OK)
        status = shm_import_check_fd(im, fds[2], PB_SHM_CTL_SIZE, "importers' control page");
    if (status == PB_OK)
        status = shm_import_check_fd(im, fds[3], shm_page_size(), "liveness page");
    if (status != PB_OK)
        goto out_close;
    si->base = mmap(NULL, reply.size, prot, MAP_SHARED, fds[0], 0);
    si->ctl = mmap(NULL, PB_SHM_CTL_SIZE, PROT_READ, MAP_SHARED, fds[1], 0);
    si->inbox = mmap(NULL, PB_SHM_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[2], 0);
    si->liveness = mmap(NULL, (size_t)shm_page_size(), PROT_READ, MAP_SHARED, fds[3], 0);
    if (si->base == MAP_FAILED || si->ctl == MAP_FAILED || si->inbox == MAP_FAILED ||
        si->liveness == MAP_FAILED) {
        pb_error("mapping imported segment %#x failed: %m", im->segid);
        shm_import_unmap(si, reply.size);
        status = PB_ERR_NO_MEMORY;
        goto out_close;
    }
    if (si->ctl->magic != PB_SHM_CTL_MAGIC || si->ctl->layout_version != PB_SHM_LAYOUT_VERSION) {
        pb_error("segment %#x has control layout %u, this library speaks %u", im->segid,
                 si->ctl->layout_version, PB_SHM_LAYOUT_VERSION);
        shm_import_unmap(si, reply.size);
        status = PB_ERR_PROTOCOL;
        goto out_close;
    }
    si->data_fd = fds[0];
    fds[0] = -1;
    im->size = (size_t)reply.size;
    si->seen_generation =
        atomic_load_explicit(&si->ctl->import_generation.value, memory_order_acquire);
    status = PB_OK;
out_close:
    for (int i = 0; i < PB_SHM_REPLY_FDS; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
    }
    return status;
}

/* The process answering the rendezvous must be of this user: abstract
 * socket names are anyone's to bind, and the exporter hands over memory
 * this process is about to trust. */
static pb_status_t shm_import_check_exporter(const pb_rsm_import_t *im, int sock)
{
    struct ucred cred;
    socklen_t cred_len = sizeof(cred);

    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) {
        pb_error("SO_PEERCRED on the rendezvous of segment %#x failed: %m", im->segid);
        return PB_ERR_IO;
    }
    if (cred.uid != geteuid()) {
        pb_warn("import of segment %#x refused: its rendezvous is answered by pid %d of uid %u, "
                "not of this user (%u)",
                im->segid, (int)cred.pid, (unsigned)cred.uid, (unsigned)geteuid());
        return PB_ERR_PERMISSION;
    }
    return PB_OK;
}

/* One connection to the rendezvous of @im and its handshake, before
 * @deadline (pb_time_now_ms); on success si->sock is the connection.
 * *@turned_away_p as for shm_import_handshake. */
static pb_status_t shm_import_dial(pb_rsm_import_t *im, shm_import_t *si, int64_t deadline,
                                   int *turned_away_p)
{
    int remaining = pb_time_remaining_ms(deadline, -1);
    struct timeval timeout = {.tv_sec = remaining / 1000, .tv_usec = (remaining % 1000) * 1000};
    struct sockaddr_un addr;
    socklen_t len;
    pb_status_t status;
    int ret;

    *turned_away_p = 0;
    si->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (si->sock < 0) {
        pb_error("socket(AF_UNIX) failed: %m");
        return PB_ERR_NO_RESOURCE;
    }
    setsockopt(si->sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(si->sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    pb_rsm_rendezvous_name(&addr, &len, SHM_RENDEZVOUS_PREFIX, im->node, im->segid);
    do {
        ret = connect(si->sock, (struct sockaddr *)&addr, len);
    } while (ret != 0 && errno == EINTR);
    if (ret != 0) {
        if (errno == ECONNREFUSED || errno == ENOENT) {
            status = PB_ERR_NOT_PUBLISHED;
        } else if (errno == EAGAIN) {
            /* its backlog stayed full until the deadline */
            pb_error("the rendezvous of segment %#x did not take our connection within the "
                     "connect timeout (%d s)",
                     im->segid, SHM_CONNECT_TIMEOUT_S);
            status = PB_ERR_TIMEOUT;
        } else {
            pb_error("connecting to segment %#x failed: %m", im->segid);
            status = PB_ERR_NO_RESOURCE;
        }
    } else {
        status = shm_import_check_exporter(im, si->sock);
        if (status == PB_OK)
            status = shm_import_handshake(im, si, turned_away_p);
    }
    if (status != PB_OK) {
        close(si->sock);
        si->sock = -1;
    }
    return status;
}

static pb_status_t shm_import_connect(pb_rsm_import_t *im)
{
    int64_t deadline = pb_time_now_ms() + SHM_CONNECT_TIMEOUT_S * 1000;
    shm_import_t *si = calloc(1, sizeof(*si));
    pb_status_t status;
    int turned_away;

    if (si == NULL)
        return PB_ERR_NO_MEMORY;
    si->data_fd = -1;
    for (;;) {
        struct timespec pause = {.tv_nsec = SHM_REDIAL_MS * 1000000L};

        status = shm_import_dial(im, si, deadline, &turned_away);
        if (!turned_away)
            break;
        if (pb_time_remaining_ms(deadline, -1) <= SHM_REDIAL_MS) {
            pb_error("import of segment %#x: its exporter kept turning our connection away for "
                     "%d s",
                     im->segid, SHM_CONNECT_TIMEOUT_S);
            status = PB_ERR_TIMEOUT;
            break;
        }
        nanosleep(&pause, NULL);
    }
    if (status != PB_OK) {
        free(si);
        return status;
    }
    im->tl = si;
    return PB_OK;
}

static void shm_import_disconnect(pb_rsm_import_t *im)
{
    shm_import_t *si = im->tl;

    shm_import_unmap(si, im->size);
    close(si->data_fd);
    close(si->sock); /* tells the exporter we are gone */
    free(si);
    im->tl = NULL;
}

/* Copy for put: a postbox-sized message (up to one cache line) inline, in
 * two overlapping 8-to-32-byte halves, without the call into libc; longer
 * ones by memcpy. */
static inline void shm_copy(char *dst, const void *src, size_t length)
{
    const char *from = src;

    if (length > 64 || length < 8) {
        memcpy(dst, from, length);
    } else if (length > 32) {
        __builtin_memcpy(dst, from, 32);
        __builtin_memcpy(dst + length - 32, from + length - 32, 32);
    } else if (length > 16) {
        __builtin_memcpy(dst, from, 16);
        __builtin_memcpy(dst + length - 16, from + length - 16, 16);
    } else {
        __builtin_memcpy(dst, from, 8);
        __builtin_memcpy(dst + length - 8, from + length - 8, 8);
    }
}

static pb_status_t shm_put(pb_rsm_import_t *im, size_t offset, const void *src, size_t length)
{
    shm_import_t *si = im->tl;

    /* Copy first, check after: the stores leave as early as possible.  A
     * put that lands after the exporter died or withdrew the segment writes
     * pages the exporter no longer sees (unpublish moved it to fresh ones),
     * so failing afterwards still changes nothing for it. */
    shm_copy(si->base + offset, src, length);
    if (im->mode == RSM_BARRIER_MODE_IMPLICIT) {
        /* implicit close barrier: the stores are globally visible */
        pb_memory_barrier();
    }
    return PB_LIKELY(shm_import_alive(si)) ? PB_OK : PB_ERR_CONN_ABORTED;
}

static pb_status_t shm_import_signal_post(pb_rsm_import_t *im, int accumulate);

/* A put whose first word is stored last, with release order: a reader that
 * sees the word sees the rest. */
static pb_status_t shm_put_word_last(pb_rsm_import_t *im, size_t offset, const void *src,
                                     size_t length, int signal)
{
    shm_import_t *si = im->tl;
    uint32_t word;

    shm_copy(si->base + offset + 4, (const char *)src + 4, length - 4);
    memcpy(&word, src, sizeof(word));
    atomic_store_explicit((_Atomic uint32_t *)(si->base + offset), word, memory_order_release);
    if (im->mode == RSM_BARRIER_MODE_IMPLICIT)
        pb_memory_barrier();
    if (PB_UNLIKELY(!shm_import_alive(si)))
        return PB_ERR_CONN_ABORTED;
    return signal ? shm_import_signal_post(im, 1) : PB_OK;
}

static pb_status_t shm_get(pb_rsm_import_t *im, size_t offset, void *dst, size_t length)
{
    shm_import_t *si = im->tl;

    if (PB_UNLIKELY(!shm_import_alive(si)))
        return PB_ERR_CONN_ABORTED;
    /* acquire: reads see everything the exporter published before */
    atomic_thread_fence(memory_order_acquire);
    memcpy(dst, si->base + offset, length);
    return PB_OK;
}

/* An importer over shm cannot reach the exporter's side: nothing of the
 * exporter's runs for it (it works on the mapped memory itself). */
static pb_status_t shm_call(pb_rsm_import_t *im, const void *request, size_t request_len,
                            void *reply, size_t reply_max, size_t *reply_len_p, int no_reply)
{
    (void)im, (void)request, (void)request_len, (void)reply, (void)reply_max;
    (void)reply_len_p, (void)no_reply;
    return PB_ERR_UNSUPPORTED;
}

static pb_status_t shm_map(pb_rsm_import_t *im, void **address_p, int fixed, int writable,
                           size_t offset, size_t length)
{
    shm_import_t *si = im->tl;
    int prot = PROT_READ | (writable ? PROT_WRITE : 0);
    void *addr;

    if (!shm_import_alive(si))
        return PB_ERR_CONN_ABORTED;
    addr = mmap(fixed ? *address_p : NULL, length, prot, MAP_SHARED | (fixed ? MAP_FIXED : 0),
                si->data_fd, (off_t)offset);
    if (addr == MAP_FAILED) {
        pb_error("mmap of imported segment %#x failed: %m", im->segid);
        return PB_ERR_NO_MEMORY;
    }
    *address_p = addr;
    return PB_OK;
}

static void shm_unmap(pb_rsm_import_t *im)
{
    munmap(im->map_addr, im->map_length);
}

static pb_status_t shm_barrier_open(pb_rsm_import_t *im)
{
    return shm_import_alive(im->tl) ? PB_OK : PB_ERR_CONN_ABORTED;
}

static pb_status_t shm_barrier_order(pb_rsm_import_t *im)
{
    /* writes before this point become visible before writes after it */
    atomic_thread_fence(memory_order_release);
    return shm_import_alive(im->tl) ? PB_OK : PB_ERR_CONN_ABORTED;
}

static pb_status_t shm_barrier_close(pb_rsm_import_t *im)
{
    /* drain this CPU's store buffer: every put of the span is visible */
    pb_memory_barrier();
    return shm_import_alive(im->tl) ? PB_OK : PB_ERR_CONN_ABORTED;
}

/* ---- signals ---------------------------------------------------------------- */

/* Polls of an event word before a wait sleeps (POSTBOX_RSM_SIGNAL_SPIN). */
static long shm_signal_spin_count(void)
{
    static _Atomic long cached = -1;
    long spin = atomic_load_explicit(&cached, memory_order_relaxed);

    if (spin < 0) {
        spin = pb_config_get_long("POSTBOX_RSM_SIGNAL_SPIN");
        if (spin < 0)
            spin = 0;
        atomic_store_explicit(&cached, spin, memory_order_relaxed);
    }
    return spin;
}

/* Spin up to the configured count while @word equals @value; whether it
 * changed. */
static int shm_spin_while_equal(pb_shm_word_t *word, uint32_t value)
{
    for (long i = shm_signal_spin_count(); i > 0; i--) {
        if (atomic_load_explicit(&word->value, memory_order_acquire) != value)
            return 1;
        pb_cpu_relax();
    }
    return 0;
}

static pb_status_t shm_export_signal_post(pb_rsm_export_t *seg, int accumulate)
{
    pb_shm_export_t *se = seg->tl;
    pb_shm_ctl_t *ctl = se->ctl;

    /* importers consume all pending exporter events at once, so an
     * accumulating and a non-accumulating post look the same to them */
    (void)accumulate;
    atomic_fetch_add_explicit(&ctl->import_generation.value, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&se->inbox->import_waiters.value, memory_order_seq_cst) != 0)
        pb_futex_wake_all(&ctl->import_generation.value);
    return PB_OK;
}

static pb_status_t shm_import_signal_post(pb_rsm_import_t *im, int accumulate)
{
    shm_import_t *si = im->tl;
    pb_shm_inbox_t *inbox = si->inbox;

    if (!shm_import_alive(si))
        return PB_ERR_CONN_ABORTED;
    if (accumulate) {
        uint32_t pending = atomic_load_explicit(&inbox->export_events.value, memory_order_relaxed);

        /* saturate rather than wrap to zero after 2^32 unconsumed posts */
        while (pending != UINT32_MAX && !atomic_compare_exchange_weak_explicit(
                                            &inbox->export_events.value, &pending, pending + 1,
                                            memory_order_seq_cst, memory_order_relaxed))
            ;
    } else {
        uint32_t none = 0;

        /* dropped when an event is already pending */
        atomic_compare_exchange_strong_explicit(&inbox->export_events.value, &none, 1,
                                                memory_order_seq_cst, memory_order_seq_cst);
    }
    /* pairs with the waiter's increment of export_waiters before it sleeps */
    if (atomic_load_explicit(&si->ctl->export_waiters.value, memory_order_seq_cst) != 0)
        pb_futex_wake_all(&inbox->export_events.value);
    return PB_OK;
}

static pb_status_t shm_export_signal_wait(pb_rsm_export_t *seg, int timeout_ms)
{
    pb_shm_export_t *se = seg->tl;
    pb_shm_inbox_t *inbox = se->inbox;
    int64_t deadline = timeout_ms < 0 ? -1 : pb_time_now_ms() + timeout_ms;

    for (;;) {
        uint32_t pending = atomic_load_explicit(&inbox->export_events.value, memory_order_acquire);
        int remaining;
        int ret;

        while (pending > 0) {
            if (atomic_compare_exchange_weak_explicit(&inbox->export_events.value, &pending,
                                                      pending - 1, memory_order_acq_rel,
                                                      memory_order_acquire))
                return PB_OK;
        }
        remaining = pb_time_remaining_ms(deadline, -1);
        if (remaining == 0)
            return PB_ERR_TIMEOUT;
        if (shm_spin_while_equal(&inbox->export_events, 0))
            continue;
        atomic_fetch_add_explicit(&se->ctl->export_waiters.value, 1, memory_order_seq_cst);
        ret = pb_futex_wait(&inbox->export_events.value, 0, remaining);
        atomic_fetch_sub_explicit(&se->ctl->export_waiters.value, 1, memory_order_seq_cst);
        if (ret != 0 && errno == EINTR)
            return PB_ERR_INTERRUPTED;
    }
}

static pb_status_t shm_import_signal_wait(pb_rsm_import_t *im, int timeout_ms)
{
    shm_import_t *si = im->tl;
    pb_shm_ctl_t *ctl = si->ctl;
    int64_t deadline = timeout_ms < 0 ? -1 : pb_time_now_ms() + timeout_ms;

    for (;;) {
        uint32_t generation =
            atomic_load_explicit(&ctl->import_generation.value, memory_order_acquire);
        int remaining, slice;
        int ret;

        if (!shm_import_alive(si))
            return PB_ERR_CONN_ABORTED;
        if (generation != si->seen_generation) {
            si->seen_generation = generation;
            return PB_OK;
        }
        remaining = pb_time_remaining_ms(deadline, -1);
        if (remaining == 0)
            return PB_ERR_TIMEOUT;
        if (shm_spin_while_equal(&ctl->import_generation, generation))
            continue;
        /* a dead exporter cannot wake us: look at its liveness word now and then */
        slice = remaining < 0 || remaining > SHM_IMPORT_WAIT_SLICE_MS ? SHM_IMPORT_WAIT_SLICE_MS
                                                                      : remaining;
        atomic_fetch_add_explicit(&si->inbox->import_waiters.value, 1, memory_order_seq_cst);
        ret = pb_futex_wait(&ctl->import_generation.value, generation, slice);
        atomic_fetch_sub_explicit(&si->inbox->import_waiters.value, 1, memory_order_seq_cst);
        if (ret != 0 && errno == EINTR)
            return PB_ERR_INTERRUPTED;
    }
}

static const void *shm_export_event_word(pb_rsm_export_t *seg)
{
    return &((pb_shm_export_t *)seg->tl)->inbox->export_events.value;
}

static void shm_export_event_waiters(pb_rsm_export_t *seg, int delta)
{
    /* importers' posts wake the word only when this count is not zero */
    atomic_fetch_add_explicit(&((pb_shm_export_t *)seg->tl)->ctl->export_waiters.value,
                              (uint32_t)delta, memory_order_seq_cst);
}

static const void *shm_import_event_word(pb_rsm_import_t *im)
{
    return &((shm_import_t *)im->tl)->ctl->import_generation.value;
}

const pb_rsm_transport_ops_t pb_shm_transport = {
    .name = "shm",
    .query = shm_query,
    .reaches = shm_reaches,
    .export_create = shm_export_create,
    .export_destroy = shm_export_destroy,
    .export_rebind = shm_export_rebind,
    .export_publish = shm_export_publish,
    .export_unpublish = shm_export_unpublish,
    .import_connect = shm_import_connect,
    .import_disconnect = shm_import_disconnect,
    .put = shm_put,
    .put_word_last = shm_put_word_last,
    .get = shm_get,
    .call = shm_call,
    .map = shm_map,
    .unmap = shm_unmap,
    .barrier_open = shm_barrier_open,
    .barrier_order = shm_barrier_order,
    .barrier_close = shm_barrier_close,
    .export_signal_post = shm_export_signal_post,
    .import_signal_post = shm_import_signal_post,
    .export_signal_wait = shm_export_signal_wait,
    .import_signal_wait = shm_import_signal_wait,
    .export_event_word = shm_export_event_word,
    .import_event_word = shm_import_event_word,
    .export_event_waiters = shm_export_event_waiters,
};
