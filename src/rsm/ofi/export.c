/*
 * The ofi transport's exporter side: registration of a segment's memory,
 * the rendezvous through which importers find it (and learn of its
 * withdrawal or rebind): the node's abstract socket of the segment, and
 * for importers of other nodes one TCP socket of the process, and the
 * barrier and signal messages importers send it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/identity.h"
#include "rsm/ofi/ofi_impl.h"
#include "rsm/rendezvous.h"
#include "rsm/service.h"
#include "rsm/tcp.h"
#include "util/log.h"
#include "util/log_limit.h"
#include "util/random.h"
#include "util/time.h"

/* connections accepted each time the rendezvous socket is ready */
#define OFI_ACCEPT_BATCH 8
/* TCP rendezvous connections that have not sent their request yet, at
 * most; each is closed after PB_OFI_CONNECT_TIMEOUT_MS */
#define OFI_TCP_PENDING_MAX 64

static pb_log_limit_t refused_log;

/* The process's rendezvous over TCP, for importers of other network
 * namespaces and hosts: one listening socket, open while the process
 * publishes a segment (under pb_ofi.lock). */
static struct {
    uint64_t id; /* the service entry (owns the socket); 0 when closed */
    int fd;
    uint32_t addr; /* network order */
    uint16_t port; /* host order; 0 when closed */
} ofi_tcp;

/* The greeting of a rendezvous connection (@a's nonce), which also says
 * where the process takes rendezvous connections over TCP. */
static pb_ofi_rv_hello_t ofi_hello_of(const pb_ofi_attach_t *a)
{
    pb_ofi_rv_hello_t hello = {.magic = PB_OFI_RV_MAGIC,
                               .type = OFI_RV_HELLO,
                               .tcp_addr = ofi_tcp.port != 0 ? ofi_tcp.addr : 0,
                               .tcp_port = ofi_tcp.port};

    memcpy(hello.nonce, a->hello_nonce, sizeof(hello.nonce));
    return hello;
}

/* Register @vaddr (the segment's @size bytes) for remote reads and writes
 * as the provider asks: its key or ours, bound to the endpoint if it must
 * be.  Caller holds pb_ofi.lock. */
static pb_status_t ofi_mr_register(pb_ofi_export_t *te, void *vaddr, uint64_t key)
{
    int mr_mode = pb_ofi.info->domain_attr->mr_mode;
    struct fid_mr *mr;
    int rc = fi_mr_reg(pb_ofi.domain, vaddr, te->seg->size, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                       key, 0, &mr, NULL);

    if (rc == 0 && (mr_mode & FI_MR_ENDPOINT)) {
        rc = fi_mr_bind(mr, &pb_ofi.ep->fid, 0);
        if (rc == 0)
            rc = fi_mr_enable(mr);
        if (rc != 0)
            fi_close(&mr->fid);
    }
    if (rc != 0) {
        pb_error("ofi: registering %zu bytes of segment memory failed: %s", te->seg->size,
                 pb_ofi_lib.strerror(-rc));
        return rc == -FI_ENOMEM ? PB_ERR_NO_MEMORY : PB_ERR_NO_RESOURCE;
    }
    te->mr = mr;
    te->key = fi_mr_key(mr);
    return PB_OK;
}

/* The remote address of the segment's offset 0 (its virtual address when
 * the provider wants that, else 0). */
static uint64_t ofi_export_base(const pb_ofi_export_t *te)
{
    return (pb_ofi.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
               ? (uint64_t)(uintptr_t)te->seg->vaddr
               : 0;
}

pb_status_t pb_ofi_export_create(pb_rsm_export_t *seg)
{
    pb_status_t status = pb_rsm_check_writable(seg->vaddr, seg->size);
    pb_ofi_export_t *te;

    if (status != PB_OK)
        return status;
    te = calloc(1, sizeof(*te));
    if (te == NULL)
        return PB_ERR_NO_MEMORY;
    te->seg = seg;
    seg->tl = te;
    return PB_OK;
}

void pb_ofi_export_destroy(pb_rsm_export_t *seg)
{
    /* unpublished (the dispatcher checked): nothing names it */
    free(seg->tl);
    seg->tl = NULL;
}

/* Stop serving @a and forget it.  Caller holds pb_rsm_lock and
 * pb_ofi.lock. */
static void ofi_attach_drop(pb_ofi_attach_t *a)
{
    for (pb_ofi_attach_t **p = &pb_ofi.attaches; *p != NULL; p = &(*p)->next) {
        if (*p == a) {
            *p = a->next;
            break;
        }
    }
    pb_rsm_service_remove(a->service_id); /* (closes the connection) */
    if (a->peer != NULL)
        pb_ofi_peer_put(a->peer);
    free(a);
}

/* Tell the importer of @a that the segment's key and address changed, or
 * that it is withdrawn. */
static void ofi_attach_notice(pb_ofi_attach_t *a, uint32_t type)
{
    pb_ofi_rv_notice_t notice = {.magic = PB_OFI_RV_MAGIC, .type = type};

    if (a->exp != NULL) {
        notice.key = a->exp->key;
        notice.base = ofi_export_base(a->exp);
    }
    /* (a full socket buffer means the importer stopped reading: it learns
     * from the connection's end instead) */
    if (send(a->fd, &notice, sizeof(notice), MSG_DONTWAIT | MSG_NOSIGNAL) !=
        (ssize_t)sizeof(notice))
        pb_debug("ofi: a notice to an importer was not sent: %m");
}

/* The answer to a checked request: the status, and on success what the
 * importer needs to reach the segment. */
static void ofi_attach_answer(pb_ofi_attach_t *a, const pb_ofi_rv_request_t *req,
                              pb_status_t status, uint32_t perm)
{
    pb_ofi_rv_reply_t reply = {.magic = PB_OFI_RV_MAGIC, .type = OFI_RV_REPLY, .status = status};

    if (status == PB_OK) {
        reply.perm = perm;
        reply.attach_token = a->token;
        reply.size = a->exp->seg->size;
        reply.key = a->exp->key;
        reply.base = ofi_export_base(a->exp);
        reply.name_len = (uint32_t)pb_ofi.name_len;
        memcpy(reply.name, pb_ofi.name, pb_ofi.name_len);
    }
    reply.mac = pb_ofi_reply_mac(req->nonce, &reply);
    (void)send(a->fd, &reply, sizeof(reply), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* The importer's request on @a: check it, and admit the importer or
 * refuse it.  Caller holds pb_rsm_lock and pb_ofi.lock.  @return 1 when
 * @a stays (an importer). */
static int ofi_attach_request(pb_ofi_attach_t *a)
{
    pb_ofi_rv_request_t req;
    struct ucred cred;
    socklen_t cred_len = sizeof(cred);
    pb_status_t status = PB_OK;
    int grant = 0;
    ssize_t n = recv(a->fd, a->rx + a->rx_len, sizeof(req) - a->rx_len, MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 1;
    if (n <= 0)
        return 0; /* closed before its request: a relayed lookup read the hello, or gave up */
    a->rx_len += (size_t)n;
    if (a->remote && a->rx_len < sizeof(req))
        return 1; /* (a stream: the rest follows) */
    memcpy(&req, a->rx, sizeof(req));
    if (a->rx_len != sizeof(req) || req.magic != PB_OFI_RV_MAGIC || req.type != OFI_RV_REQUEST ||
        req.name_len == 0 || req.name_len > PB_OFI_NAME_MAX) {
        pb_log_limited(&refused_log, 1000, "ofi: a malformed rendezvous request was dropped");
        return 0;
    }
    if (req.mac != pb_ofi_request_mac(a->hello_nonce, &req)) {
        /* (no MAC for a peer that has not proven it is of the job) */
        pb_log_limited(&refused_log, 1000,
                       "ofi: a rendezvous request of another job (wrong MAC) was refused");
        return 0;
    }
    if (a->remote) {
        /* the process's connection: the segment is the one asked for */
        for (pb_ofi_export_t *te = pb_ofi.published; te != NULL && a->exp == NULL; te = te->next) {
            if (te->seg->segid == req.segid)
                a->exp = te;
        }
    }
    if (a->exp == NULL || a->exp->seg->segid != req.segid) {
        status = PB_ERR_NOT_PUBLISHED;
    } else if (a->remote) {
        /* no SO_PEERCRED over TCP: the MAC under the job secret is what
         * proves a process of this job, which runs as this user */
        grant = pb_rsm_acl_grant(a->exp->seg, req.node, geteuid(), getegid());
        if (grant < 0)
            status = PB_ERR_NOT_PUBLISHED_TO_NODE;
        else if ((req.perm & ~(uint32_t)grant) != 0)
            status = PB_ERR_PERMISSION;
    } else if (getsockopt(a->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) {
        status = PB_ERR_IO;
    } else {
        grant = pb_rsm_acl_grant(a->exp->seg, req.node, cred.uid, cred.gid);
        if (grant < 0)
            status = PB_ERR_NOT_PUBLISHED_TO_NODE;
        else if ((req.perm & ~(uint32_t)grant) != 0)
            status = PB_ERR_PERMISSION;
    }
    if (status == PB_OK) {
        a->peer = pb_ofi_peer_get(req.name, req.name_len);
        if (a->peer == NULL)
            status = PB_ERR_NO_RESOURCE;
    }
    a->import_token = req.import_token;
    ofi_attach_answer(a, &req, status, (uint32_t)grant);
    if (status != PB_OK)
        return 0;
    a->attached = 1;
    return 1;
}

/* A rendezvous connection is ready: its request, or (an importer's) its
 * end, as an importer never writes after its request: it disconnected or
 * died. */
static void ofi_attach_ready(void *arg, uint32_t events)
{
    pb_ofi_attach_t *a = arg;
    int keep = 0;

    pthread_mutex_lock(&pb_ofi.lock);
    if (!a->attached && (events & EPOLLIN))
        keep = ofi_attach_request(a);
    /* (a connection that ends right after its request is reported again) */
    if (!keep)
        ofi_attach_drop(a);
    pthread_mutex_unlock(&pb_ofi.lock);
    if (!keep)
        pb_ofi_close_if_idle();
}

/* Accept importers on the rendezvous socket of @arg (an export): each is
 * greeted with a nonce its request must MAC. */
static void ofi_rendezvous_ready(void *arg, uint32_t events)
{
    pb_ofi_export_t *te = arg;

    (void)events;
    for (int i = 0; i < OFI_ACCEPT_BATCH; i++) {
        int fd = accept4(te->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        pb_ofi_rv_hello_t hello;
        struct ucred cred;
        socklen_t cred_len = sizeof(cred);
        pb_ofi_attach_t *a;

        if (fd < 0)
            return;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 ||
            cred.uid != geteuid()) {
            pb_log_limited(&refused_log, 1000,
                           "ofi: a rendezvous connection of another user was closed");
            close(fd);
            continue;
        }
        a = calloc(1, sizeof(*a));
        if (a == NULL || pb_random_bytes(a->hello_nonce, sizeof(a->hello_nonce)) != 0) {
            free(a);
            close(fd);
            continue;
        }
        a->fd = fd;
        pthread_mutex_lock(&pb_ofi.lock);
        hello = ofi_hello_of(a);
        a->exp = te;
        a->token = pb_ofi.next_token++;
        if (pb_rsm_service_add(fd, EPOLLIN | EPOLLRDHUP, ofi_attach_ready, a, &a->service_id) !=
            PB_OK) {
            pthread_mutex_unlock(&pb_ofi.lock);
            close(fd);
            free(a);
            continue;
        }
        a->next = pb_ofi.attaches;
        pb_ofi.attaches = a;
        pthread_mutex_unlock(&pb_ofi.lock);
        (void)send(fd, &hello, sizeof(hello), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
}

/* Close the remote connections that have not sent their request within
 * PB_OFI_CONNECT_TIMEOUT_MS.  @return how many others wait.  Caller holds
 * pb_rsm_lock and pb_ofi.lock. */
static int ofi_tcp_pending_sweep(void)
{
    int64_t now = pb_time_now_ms();
    int pending = 0;

    for (pb_ofi_attach_t *a = pb_ofi.attaches, *next; a != NULL; a = next) {
        next = a->next;
        if (!a->remote || a->attached)
            continue;
        if (now - a->accepted_ms >= PB_OFI_CONNECT_TIMEOUT_MS)
            ofi_attach_drop(a);
        else
            pending++;
    }
    return pending;
}

/* Set the options of a rendezvous connection over TCP: no delay for its
 * few small messages, and keep-alive probes, so that an importer whose
 * host died is forgotten. */
static void ofi_tcp_tune(int fd)
{
    int one = 1, idle = 10, interval = 5, count = 3;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

/* Importers of other nodes connect to the TCP socket: each is greeted
 * with a nonce; which segment it wants comes with its request. */
static void ofi_tcp_accept_ready(void *arg, uint32_t events)
{
    (void)arg, (void)events;
    for (int i = 0; i < OFI_ACCEPT_BATCH; i++) {
        int fd = accept4(ofi_tcp.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        pb_ofi_rv_hello_t hello;
        pb_ofi_attach_t *a;

        if (fd < 0)
            return;
        pthread_mutex_lock(&pb_ofi.lock);
        if (ofi_tcp_pending_sweep() >= OFI_TCP_PENDING_MAX) {
            pthread_mutex_unlock(&pb_ofi.lock);
            pb_log_limited(&refused_log, 1000,
                           "ofi: a rendezvous connection over TCP was closed: %d others have "
                           "not sent their request yet",
                           OFI_TCP_PENDING_MAX);
            close(fd);
            continue;
        }
        a = calloc(1, sizeof(*a));
        if (a == NULL || pb_random_bytes(a->hello_nonce, sizeof(a->hello_nonce)) != 0 ||
            pb_rsm_service_add(fd, EPOLLIN | EPOLLRDHUP, ofi_attach_ready, a, &a->service_id) !=
                PB_OK) {
            pthread_mutex_unlock(&pb_ofi.lock);
            free(a);
            close(fd);
            continue;
        }
        ofi_tcp_tune(fd);
        a->fd = fd;
        a->remote = 1;
        a->accepted_ms = pb_time_now_ms();
        a->token = pb_ofi.next_token++;
        a->next = pb_ofi.attaches;
        pb_ofi.attaches = a;
        hello = ofi_hello_of(a);
        pthread_mutex_unlock(&pb_ofi.lock);
        (void)send(fd, &hello, sizeof(hello), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
}

/* Listen on TCP at this node's address (POSTBOX_TCP_ADDR, the --netns
 * address, ...), for importers of other nodes, if the process is of a
 * launched job (whose secret a remote importer proves it holds).  Without
 * it the process's segments are found on its node only: logged, not an
 * error.  Caller holds pb_rsm_lock and pb_ofi.lock. */
static void ofi_tcp_listen(void)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t len = sizeof(addr);
    int fd;

    if (ofi_tcp.port != 0 || !pb_boot_identity_get()->has_secret ||
        !pb_tcp_node_address(&addr.sin_addr.s_addr))
        return;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(fd, SOMAXCONN) != 0 || getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
        pb_warn("ofi: cannot listen on TCP for importers of other nodes: %m");
        if (fd >= 0)
            close(fd);
        return;
    }
    if (pb_rsm_service_add(fd, EPOLLIN, ofi_tcp_accept_ready, NULL, &ofi_tcp.id) != PB_OK) {
        close(fd);
        return;
    }
    ofi_tcp.fd = fd;
    ofi_tcp.addr = addr.sin_addr.s_addr;
    ofi_tcp.port = ntohs(addr.sin_port);
}

/* Stop listening on TCP (the process publishes nothing any more; its
 * connections that wait for their request get PB_ERR_NOT_PUBLISHED).
 * Caller holds pb_rsm_lock and pb_ofi.lock. */
static void ofi_tcp_close(void)
{
    if (ofi_tcp.port == 0)
        return;
    pb_rsm_service_remove(ofi_tcp.id);
    ofi_tcp.id = 0;
    ofi_tcp.fd = -1;
    ofi_tcp.port = 0;
}

pb_status_t pb_ofi_export_publish(pb_rsm_export_t *seg, rsm_memseg_id_t *segid_p)
{
    pb_ofi_export_t *te = seg->tl;
    rsm_node_id_t node = pb_boot_identity_get()->node_id;
    rsm_memseg_id_t segid = *segid_p;
    pb_status_t status = pb_ofi_start(1);

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&pb_ofi.lock);
    status = ofi_mr_register(te, seg->vaddr, pb_ofi.next_key++);
    if (status != PB_OK)
        goto out;
    status = pb_rsm_rendezvous_listen(OFI_RENDEZVOUS_PREFIX, node, &segid, &te->listen_fd);
    if (status == PB_OK) {
        status = pb_rsm_service_add(te->listen_fd, EPOLLIN, ofi_rendezvous_ready, te,
                                    &te->rendezvous_id);
        if (status != PB_OK)
            close(te->listen_fd);
    }
    if (status != PB_OK) {
        fi_close(&te->mr->fid);
        te->mr = NULL;
        pthread_mutex_unlock(&pb_ofi.lock);
        pb_ofi_close_if_idle();
        return status;
    }
    if (pb_ofi.published == NULL)
        ofi_tcp_listen();
    te->next = pb_ofi.published;
    pb_ofi.published = te;
    *segid_p = segid;
out:
    pthread_mutex_unlock(&pb_ofi.lock);
    return status;
}

pb_status_t pb_ofi_export_unpublish(pb_rsm_export_t *seg)
{
    pb_ofi_export_t *te = seg->tl;

    pthread_mutex_lock(&pb_ofi.lock);
    pb_rsm_service_remove(te->rendezvous_id); /* the name disappears */
    for (pb_ofi_export_t **p = &pb_ofi.published; *p != NULL; p = &(*p)->next) {
        if (*p == te) {
            *p = te->next;
            break;
        }
    }
    /* every importer learns it before its next operation: the notice, and
     * the connection's end */
    for (pb_ofi_attach_t *a = pb_ofi.attaches, *next; a != NULL; a = next) {
        next = a->next;
        if (a->exp != te)
            continue;
        if (a->attached)
            ofi_attach_notice(a, OFI_RV_WITHDRAWN);
        ofi_attach_drop(a);
    }
    if (pb_ofi.published == NULL)
        ofi_tcp_close();
    /* writes still on their way fail at the target */
    fi_close(&te->mr->fid);
    te->mr = NULL;
    pthread_mutex_unlock(&pb_ofi.lock);
    pb_ofi_close_if_idle();
    return PB_OK;
}

pb_status_t pb_ofi_export_rebind(pb_rsm_export_t *seg, void *vaddr)
{
    pb_ofi_export_t *te = seg->tl;
    pb_status_t status = pb_rsm_check_writable(vaddr, seg->size);
    uint64_t key;

    if (status != PB_OK)
        return status;
    pthread_mutex_lock(&pb_ofi.lock);
    if (te->mr != NULL) {
        /* the new memory under the same key where the key is ours */
        key = te->key;
        fi_close(&te->mr->fid);
        te->mr = NULL;
        status = ofi_mr_register(te, vaddr, key);
        if (status != PB_OK) {
            /* (the old memory again, so that the segment stays whole) */
            if (ofi_mr_register(te, seg->vaddr, key) != PB_OK)
                pb_error("ofi: segment %#x lost its registration", seg->segid);
            pthread_mutex_unlock(&pb_ofi.lock);
            return status;
        }
    }
    seg->vaddr = vaddr;
    for (pb_ofi_attach_t *a = pb_ofi.attaches; a != NULL; a = a->next) {
        if (a->exp == te && a->attached)
            ofi_attach_notice(a, OFI_RV_REBASE);
    }
    pthread_mutex_unlock(&pb_ofi.lock);
    return PB_OK;
}

/* The attach of token @token, or NULL.  Caller holds pb_ofi.lock. */
static pb_ofi_attach_t *ofi_attach_find(uint32_t token)
{
    for (pb_ofi_attach_t *a = pb_ofi.attaches; a != NULL; a = a->next) {
        if (a->token == token && a->attached)
            return a;
    }
    return NULL;
}

void pb_ofi_export_on_msg(const pb_ofi_msg_t *msg)
{
    pb_ofi_attach_t *a = ofi_attach_find(msg->token);

    /* (an unknown token: an importer cut off by an unpublish, which learns
     * it from its rendezvous connection) */
    if (a == NULL || a->exp == NULL)
        return;
    if (msg->type == OFI_MSG_SIGNAL) {
        _Atomic uint32_t *events = &a->exp->events;

        if (msg->a) {
            uint32_t pending = atomic_load(events);

            /* saturate rather than wrap after 2^32 unconsumed posts */
            while (pending != UINT32_MAX &&
                   !atomic_compare_exchange_weak(events, &pending, pending + 1))
                ;
        } else {
            uint32_t none = 0;

            atomic_compare_exchange_strong(events, &none, 1);
        }
        pb_ofi_wake(events);
    } else {
        /* every write the importer made before lies in memory: messages
         * follow the writes before them */
        pb_ofi_msg_t reply = {.type = OFI_MSG_BARRIER_REPLY,
                              .token = a->import_token,
                              .a = msg->a,
                              .b = (uint64_t)(uint32_t)PB_OK};

        (void)pb_ofi_send(a->peer->addr, &reply);
    }
}

pb_status_t pb_ofi_export_signal_post(pb_rsm_export_t *seg, int accumulate)
{
    pb_ofi_export_t *te = seg->tl;

    /* importers consume every pending event at once: one message each */
    (void)accumulate;
    pthread_mutex_lock(&pb_ofi.lock);
    for (pb_ofi_attach_t *a = pb_ofi.attaches; a != NULL; a = a->next) {
        if (a->exp == te && a->attached) {
            pb_ofi_msg_t event = {.type = OFI_MSG_EVENT, .token = a->import_token};

            /* an importer whose connection ended (it died; the service
             * thread forgets it soon) is not dialed again */
            if (recv(a->fd, &(char){0}, 1, MSG_DONTWAIT | MSG_PEEK) == 0)
                continue;
            (void)pb_ofi_send(a->peer->addr, &event);
        }
    }
    pthread_mutex_unlock(&pb_ofi.lock);
    return PB_OK;
}

/* Take one pending event of @te.  @return 1 if there was one. */
static int ofi_export_event_take(pb_ofi_export_t *te)
{
    uint32_t pending = atomic_load(&te->events);

    while (pending > 0) {
        if (atomic_compare_exchange_weak(&te->events, &pending, pending - 1))
            return 1;
    }
    return 0;
}

pb_status_t pb_ofi_export_signal_wait(pb_rsm_export_t *seg, int timeout_ms)
{
    pb_ofi_export_t *te = seg->tl;
    int64_t deadline = timeout_ms < 0 ? -1 : pb_time_now_ms() + timeout_ms;
    int64_t spin_until = pb_time_now_ns() + (int64_t)pb_ofi.spin_us * 1000;

    for (;;) {
        int slice;

        if (pb_ofi.started && pb_ofi.start_status == PB_OK)
            pb_ofi_progress();
        if (ofi_export_event_take(te))
            return PB_OK;
        if (timeout_ms == 0)
            return PB_ERR_TIMEOUT;
        if (pb_time_now_ns() < spin_until)
            continue;
        slice = pb_time_remaining_ms(deadline, PB_OFI_WAIT_SLICE_MS);
        if (slice == 0)
            return PB_ERR_TIMEOUT;
        if (pb_ofi_sleep(&te->events, 0, slice) != 0)
            return PB_ERR_INTERRUPTED;
    }
}

const void *pb_ofi_export_event_word(pb_rsm_export_t *seg)
{
    return &((pb_ofi_export_t *)seg->tl)->events;
}
