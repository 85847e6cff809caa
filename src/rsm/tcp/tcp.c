/*
 * The tcp transport (docs/tcp.md): its state, its start (the epoll set
 * handed to the RSM service thread), the listener, the endpoint other
 * nodes reach this process at, and the ops table.  tcp_impl.h says how
 * the files of src/rsm/tcp/ share the work.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <postbox/job.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "boot/identity.h"
#include "rsm/service.h"
#include "rsm/tcp.h"
#include "rsm/tcp/tcp_impl.h"
#include "util/config.h"
#include "util/log.h"

pb_tcp_state_t pb_tcp = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .progress = PTHREAD_MUTEX_INITIALIZER,
    .connect_lock = PTHREAD_MUTEX_INITIALIZER,
    .sources = PB_EVSET_INITIALIZER,
    .wake_fd = -1,
    .serve_fd = -1,
    .lapse_fd = -1,
    .limit_fd = -1,
};

/* Close the listening sockets of @fds[0..@count). */
static void tcp_listeners_close(const int *fds, int count)
{
    for (int i = 0; i < count; i++)
        close(fds[i]);
}

static void tcp_atfork_child(void)
{
    /* the service's child handler closed the epoll set; the parent's
     * connections and listeners are the parent's: drop them all */
    pthread_mutex_init(&pb_tcp.lock, NULL);
    pthread_mutex_init(&pb_tcp.progress, NULL);
    pthread_mutex_init(&pb_tcp.connect_lock, NULL);
    atomic_store(&pb_tcp.service_parked, 0);
    if (!pb_tcp.started)
        return;
    for (pb_tcp_conn_t *c = pb_tcp.conns, *next; c != NULL; c = next) {
        next = c->next;
        close(c->fd);
        c->fd = -1;
        atomic_store(&c->failure, PB_ERR_CONN_ABORTED);
        c->next = NULL;
    }
    pb_tcp.conns = NULL;
    pb_tcp.hot = NULL;
    pb_tcp.served = NULL;
    /* a claim is a thread's promise to poll: the child has no such thread */
    pb_tcp.claims = 0;
    atomic_store(&pb_tcp.claimed, 0);
    atomic_store(&pb_tcp.lapsed, 0);
    /* the child's own sources will reuse ids: forget the parent's */
    for (pb_tcp_export_t *te = pb_tcp.published; te != NULL; te = te->next)
        te->rendezvous_id = 0;
    /* (the connections' and the listener's descriptors are closed here
     * apart; the epoll set by the service's child handler) */
    for (uint32_t i = 0; i < pb_tcp.sources.count; i++) {
        pb_evset_entry_t *src = &pb_tcp.sources.entries[i];

        if (src->in_use && src->cb != pb_tcp_conn_ready && src->cb != pb_tcp_accept_ready)
            close(src->fd);
    }
    pb_evset_forget(&pb_tcp.sources);
    tcp_listeners_close(pb_tcp.listen_fds, pb_tcp.listen_count);
    pb_tcp.listen_count = 0;
    pb_tcp.published = NULL;
    pb_tcp.relays = NULL;
    pb_tcp.wake_fd = -1;
    pb_tcp.limit_fd = -1; /* (closed with the other sources above) */
    pb_tcp.limit_ticking = 0;
    pb_tcp.accept_rest_until = 0;
    pb_tcp.lapse_fd = -1; /* (the service's child handler closed it) */
    pb_tcp.serve_fd = -1; /* (so did it this one) */
    pb_tcp.blind_armed = 0;
    atomic_store(&pb_tcp.blind, 0);
    atomic_store(&pb_tcp_epoll_sleepers, 0); /* (threads the parent had) */
    atomic_store(&pb_tcp_sleepers, 0);
    pb_tcp.started = 0;
}

pb_status_t pb_tcp_start(void)
{
    uint64_t wake_id, lapse_id;
    pb_status_t status;
    int ep;

    if (pb_tcp.started)
        return PB_OK;
    if (!pb_tcp.atfork_registered) {
        pthread_atfork(NULL, NULL, tcp_atfork_child);
        pb_tcp.atfork_registered = 1;
    }
    pb_tcp.addr_count = pb_tcp_local_addrs(pb_tcp.addrs);
    if (pb_tcp.addr_count == 0)
        return PB_ERR_INVALID_PARAM;
    pb_tcp.addr = pb_tcp.addrs[0];
    pb_tcp.spin_ns = pb_config_get_long("POSTBOX_TCP_SPIN_US") > 0
                         ? (int64_t)pb_config_get_long("POSTBOX_TCP_SPIN_US") * 1000
                         : 0;
    pb_tcp.stripe_min = pb_config_get_long("POSTBOX_TCP_STRIPE_MIN") > 0
                            ? (size_t)pb_config_get_long("POSTBOX_TCP_STRIPE_MIN")
                            : SIZE_MAX;
    pb_tcp.reply_timeout_ms = pb_config_get_long("POSTBOX_TCP_REPLY_TIMEOUT_MS") > 0 &&
                                      pb_config_get_long("POSTBOX_TCP_REPLY_TIMEOUT_MS") < INT32_MAX
                                  ? (int)pb_config_get_long("POSTBOX_TCP_REPLY_TIMEOUT_MS")
                                  : 0;
    if (pb_evset_open(&pb_tcp.sources) != PB_OK)
        return PB_ERR_NO_RESOURCE;
    ep = pb_tcp.sources.epoll_fd;
    pb_tcp.serve_fd = epoll_create1(EPOLL_CLOEXEC);
    if (pb_tcp.serve_fd < 0) {
        pb_error("tcp: epoll_create1 failed: %m");
        status = PB_ERR_NO_RESOURCE;
        goto err;
    }
    pb_tcp.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (pb_tcp.wake_fd < 0) {
        pb_error("tcp: eventfd failed: %m");
        status = PB_ERR_NO_RESOURCE;
        goto err;
    }
    status =
        pb_evset_add(&pb_tcp.sources, pb_tcp.wake_fd, EPOLLIN, pb_tcp_wake_ready, NULL, &wake_id);
    if (status != PB_OK)
        goto err;
    status = pb_tcp_limits_start();
    if (status != PB_OK) {
        pb_evset_remove(&pb_tcp.sources, wake_id);
        goto err;
    }
    /* the service owns (and closes) both epoll sets from here: it watches
     * the served sources, and every source while a thread waits blind */
    status = pb_rsm_service_add(pb_tcp.serve_fd, EPOLLIN, pb_tcp_service_ready, NULL,
                                &pb_tcp.service_id);
    if (status == PB_OK) {
        status = pb_rsm_service_add(ep, TCP_WATCH_OFF, pb_tcp_blind_ready, NULL, &pb_tcp.blind_id);
        if (status != PB_OK) {
            pb_rsm_service_remove(pb_tcp.service_id); /* (closes serve_fd) */
            pb_tcp.serve_fd = -1;
        }
    }
    if (status != PB_OK) {
        pb_evset_remove(&pb_tcp.sources, wake_id);
        pb_tcp_source_remove(pb_tcp.limit_id);
        close(pb_tcp.limit_fd);
        pb_tcp.limit_fd = -1;
        goto err;
    }
    pb_tcp.blind_armed = 0;
    pb_tcp.started = 1;
    /* the watchdog of progress claims (none: claims are not watched, and a
     * claimant that stops polling leaves traffic waiting until it polls) */
    pb_tcp.lapse_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (pb_tcp.lapse_fd >= 0 && pb_rsm_service_add(pb_tcp.lapse_fd, EPOLLIN, pb_tcp_lapse_check,
                                                   NULL, &lapse_id) != PB_OK) {
        close(pb_tcp.lapse_fd);
        pb_tcp.lapse_fd = -1;
    }
    if (pb_tcp.lapse_fd < 0)
        pb_warn("tcp: no timer for the watchdog of progress claims: %m");
    if (pb_tcp.claims > 0) {
        pb_rsm_service_rearm(pb_tcp.service_id, TCP_WATCH_OFF);
        pb_tcp_lapse_timer(1);
    }
    return PB_OK;

err:
    if (pb_tcp.wake_fd >= 0)
        close(pb_tcp.wake_fd);
    pb_tcp.wake_fd = -1;
    if (pb_tcp.serve_fd >= 0)
        close(pb_tcp.serve_fd);
    pb_tcp.serve_fd = -1;
    close(ep);
    pb_tcp.sources.epoll_fd = -1;
    return status;
}

/* Bind a listening socket to each address this process gives out, all
 * with one port (the kernel's pick for the first).  @return 1, or 0 with
 * errno set. */
static int tcp_listeners_open(int fds[TCP_MAX_RAILS], uint16_t *port_p)
{
    uint16_t port = 0;

    for (int i = 0; i < pb_tcp.addr_count; i++) {
        struct sockaddr_in addr = {
            .sin_family = AF_INET, .sin_addr.s_addr = pb_tcp.addrs[i], .sin_port = htons(port)};
        socklen_t len = sizeof(addr);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err;

        if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
            listen(fd, TCP_LISTEN_BACKLOG) != 0 ||
            getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
            err = errno;
            if (fd >= 0)
                close(fd);
            tcp_listeners_close(fds, i);
            errno = err;
            return 0;
        }
        fds[i] = fd;
        port = ntohs(addr.sin_port);
    }
    *port_p = port;
    return 1;
}

pb_status_t pb_tcp_listen(void)
{
    int fds[TCP_MAX_RAILS], opened = 0;
    uint16_t port = 0;
    pb_status_t status = PB_OK;

    if (pb_tcp.listen_count > 0)
        return PB_OK;
    /* only the addresses given out, not every interface; the port the
     * first got may be taken on another address: then another port */
    for (int attempt = 0; attempt < 8 && !opened; attempt++) {
        opened = tcp_listeners_open(fds, &port);
        if (!opened && errno != EADDRINUSE)
            break;
    }
    if (!opened) {
        pb_error("tcp: cannot listen on the addresses this process gives out "
                 "(POSTBOX_TCP_ADDR must name addresses of this host): %m");
        return PB_ERR_NO_RESOURCE;
    }
    for (int i = 0; i < pb_tcp.addr_count && status == PB_OK; i++) {
        status = pb_tcp_source_add(fds[i], EPOLLIN, pb_tcp_accept_ready, (void *)(intptr_t)fds[i],
                                   0, &pb_tcp.listen_ids[i]);
        if (status != PB_OK) {
            for (int j = 0; j < i; j++)
                pb_tcp_source_remove(pb_tcp.listen_ids[j]);
            tcp_listeners_close(fds, pb_tcp.addr_count);
            return status;
        }
    }
    memcpy(pb_tcp.listen_fds, fds, sizeof(fds[0]) * (size_t)pb_tcp.addr_count);
    pb_tcp.listen_count = pb_tcp.addr_count;
    pb_tcp.port = port;
    return PB_OK;
}

/* Listen for other nodes' importers (starting the RSM service thread if
 * needed) and write "a.b.c.d:port" into @buf, or "a.b.c.d,e.f.g.h:port"
 * with one address per rail when the process has several.  Reads no job
 * identity, so it may run before the job is complete.
 * @return PB_OK; PB_ERR_NO_RESOURCE (no socket or thread),
 * PB_ERR_INVALID_PARAM (POSTBOX_TCP_ADDR malformed, or @buf too short). */
static pb_status_t tcp_endpoint(char *buf, size_t len)
{
    pb_status_t status;

    pthread_mutex_lock(&pb_rsm_lock);
    pthread_mutex_lock(&pb_tcp.lock);
    status = pb_tcp_start();
    if (status == PB_OK)
        status = pb_tcp_listen();
    if (status == PB_OK) {
        size_t used = 0;

        for (int i = 0; i < pb_tcp.addr_count; i++) {
            char addr[INET_ADDRSTRLEN];

            inet_ntop(AF_INET, &pb_tcp.addrs[i], addr, sizeof(addr));
            used += (size_t)snprintf(buf + used, len - used, "%s%s", i > 0 ? "," : "", addr);
            if (used >= len)
                break;
        }
        if (used + 7 > len)
            status = PB_ERR_INVALID_PARAM;
        else
            snprintf(buf + used, len - used, ":%u", (unsigned)pb_tcp.port);
    }
    pthread_mutex_unlock(&pb_tcp.lock);
    pthread_mutex_unlock(&pb_rsm_lock);
    return status;
}

pb_status_t pb_tcp_kvs_contribute(int rank, pb_boot_kvs_put_func_t put, void *ctx)
{
    char key[32], endpoint[96];

    if (tcp_endpoint(endpoint, sizeof(endpoint)) != PB_OK) {
        pb_warn("rank %d cannot listen for tcp imports: other nodes reach its node through "
                "its other ranks only",
                rank);
        return PB_OK;
    }
    snprintf(key, sizeof(key), TCP_KVS_KEY_FMT, rank);
    return put(ctx, key, endpoint);
}

pb_status_t pb_tcp_ofi_lookup(rsm_node_id_t node, rsm_memseg_id_t segid, int64_t deadline,
                              struct sockaddr_in *peer_p)
{
    uint8_t key[PB_TCP_KEY_LEN];

    if (!pb_boot_identity_get()->has_secret || postbox_job_size() <= 1)
        return PB_ERR_NOT_PUBLISHED; /* no other node's process to ask */
    pb_tcp_key_of_job(key);
    return pb_tcp_relay_lookup(node, segid, PB_TCP_FLAG_OFI, key, deadline, peer_p);
}

int pb_tcp_node_address(uint32_t *addr_p)
{
    uint32_t addrs[TCP_MAX_RAILS];

    if (pb_tcp_local_addrs(addrs) == 0)
        return 0;
    *addr_p = addrs[0];
    return 1;
}

static void tcp_query(pb_rsm_caps_t *caps_p)
{
    caps_p->can_map = 0;
    caps_p->reaches_job_nodes = 1;
    caps_p->page_size = (size_t)sysconf(_SC_PAGESIZE);
    caps_p->max_segment_size = (size_t)PB_TCP_MAX_SEGMENT_SIZE;
}

static int tcp_reaches(rsm_node_id_t node)
{
    /* any node: whether a segment is there is the import's question */
    (void)node;
    return 1;
}

const pb_rsm_transport_ops_t pb_tcp_transport = {
    .name = "tcp",
    .query = tcp_query,
    .rail_count = pb_tcp_rail_count,
    .rail_link = pb_tcp_rail_link,
    .reaches = tcp_reaches,
    .export_create = pb_tcp_export_create,
    .export_destroy = pb_tcp_export_destroy,
    .export_rebind = pb_tcp_export_rebind,
    .export_publish = pb_tcp_export_publish,
    .export_unpublish = pb_tcp_export_unpublish,
    .import_connect = pb_tcp_import_connect,
    .import_disconnect = pb_tcp_import_disconnect,
    .put = pb_tcp_put,
    .put_vector = pb_tcp_put_vector,
    .get = pb_tcp_get,
    .call = pb_tcp_call,
    .map = pb_tcp_map,
    .unmap = pb_tcp_unmap,
    .barrier_open = pb_tcp_barrier_open,
    .barrier_order = pb_tcp_barrier_order,
    .barrier_close = pb_tcp_barrier_close,
    .export_signal_post = pb_tcp_export_signal_post,
    .import_signal_post = pb_tcp_import_signal_post,
    .export_signal_wait = pb_tcp_export_signal_wait,
    .import_signal_wait = pb_tcp_import_signal_wait,
    .export_event_word = pb_tcp_export_event_word,
    .import_event_word = pb_tcp_import_event_word,
    .import_event_waiters = pb_tcp_import_event_waiters,
    .progress_claim = pb_tcp_progress_claim,
};
