/*
 * The public RSM API: argument checks, then a dispatch to the controller's
 * transport.  Every check that does not depend on the transport is made
 * here, once, and a failed check changes nothing.  pb_status_t becomes an
 * RSMERR_* code in one table, api_status_to_error().  The file's own
 * helpers are named api_*, apart from the public rsm_* calls.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "boot/identity.h"
#include "postbox/job.h"
#include "rsm/rsm_impl.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/futex.h"
#include "util/log.h"
#include "util/time.h"

#define RSM_ACL_MAX_ENTRIES 65536
#define RSM_POLLFD_MAX 64
#define RSM_PERM_MASK 0666
/* waits on import handles re-check their exporters this often */
#define RSM_POLLFD_WAIT_SLICE_MS 50

/* ---- status translation ---------------------------------------------------- */

static const struct {
    pb_status_t status;
    int code;
} status_codes[] = {
    {PB_OK, RSM_SUCCESS},
    {PB_ERR_NO_MEMORY, RSMERR_INSUFFICIENT_MEM},
    {PB_ERR_NO_RESOURCE, RSMERR_INSUFFICIENT_RESOURCES},
    {PB_ERR_INVALID_PARAM, RSMERR_BAD_ADDR},
    {PB_ERR_IO, RSMERR_INSUFFICIENT_RESOURCES},
    {PB_ERR_TIMEOUT, RSMERR_TIMEOUT},
    {PB_ERR_INTERRUPTED, RSMERR_INTERRUPTED},
    {PB_ERR_UNSUPPORTED, RSMERR_MAP_FAILED},
    {PB_ERR_CONN_ABORTED, RSMERR_CONN_ABORTED},
    {PB_ERR_UNREACHABLE, RSMERR_REMOTE_NODE_UNREACHABLE},
    {PB_ERR_NOT_PUBLISHED, RSMERR_SEG_NOT_PUBLISHED},
    {PB_ERR_NOT_PUBLISHED_TO_NODE, RSMERR_SEG_NOT_PUBLISHED_TO_NODE},
    {PB_ERR_PERMISSION, RSMERR_PERM_DENIED},
    {PB_ERR_IN_USE, RSMERR_SEGID_IN_USE},
    {PB_ERR_PROTOCOL, RSMERR_CONN_ABORTED},
    {PB_ERR_BAD_ADDRESS, RSMERR_BAD_ADDR},
};

static int api_status_to_error(pb_status_t status)
{
    if (PB_LIKELY(status == PB_OK))
        return RSM_SUCCESS;
    for (size_t i = 0; i < PB_ARRAY_SIZE(status_codes); i++) {
        if (status_codes[i].status == status)
            return status_codes[i].code;
    }
    return RSMERR_INSUFFICIENT_RESOURCES;
}

static const char *const error_strings[] = {
    [RSM_SUCCESS] = "success",
    [RSMERR_BAD_LIBRARY_VERSION] = "bad library version",
    [RSMERR_BAD_TOPOLOGY_PTR] = "bad topology pointer",
    [RSMERR_BAD_CTLR_HNDL] = "bad controller handle",
    [RSMERR_CTLR_NOT_PRESENT] = "no such controller",
    [RSMERR_BAD_SEG_HNDL] = "bad segment handle",
    [RSMERR_SEG_ALREADY_PUBLISHED] = "segment already published",
    [RSMERR_SEG_NOT_PUBLISHED] = "segment not published",
    [RSMERR_SEG_NOT_PUBLISHED_TO_NODE] = "segment not published to this node",
    [RSMERR_SEG_ALREADY_MAPPED] = "segment already mapped",
    [RSMERR_SEG_STILL_MAPPED] = "segment still mapped",
    [RSMERR_SEG_NOT_MAPPED] = "segment not mapped",
    [RSMERR_NOT_CREATOR] = "not the creator of the segment",
    [RSMERR_BAD_BARRIER_PTR] = "bad barrier pointer",
    [RSMERR_BAD_SGIO] = "bad scatter/gather list",
    [RSMERR_BAD_LOCALMEM_HNDL] = "bad local memory handle",
    [RSMERR_BAD_ADDR] = "bad address",
    [RSMERR_BAD_MEM_ALIGNMENT] = "memory not page aligned",
    [RSMERR_BAD_OFFSET] = "offset outside the segment",
    [RSMERR_MISALIGNED_OFFSET] = "offset not aligned",
    [RSMERR_BAD_LENGTH] = "bad length",
    [RSMERR_BAD_ACL] = "bad access list",
    [RSMERR_BAD_SEGID] = "bad segment id",
    [RSMERR_RESERVED_SEGID] = "segment id in a reserved range",
    [RSMERR_SEGID_IN_USE] = "segment id in use",
    [RSMERR_BAD_MODE] = "bad mode, type or flags",
    [RSMERR_BAD_PERMS] = "bad permissions",
    [RSMERR_PERM_DENIED] = "permission denied",
    [RSMERR_LOCKS_NOT_SUPPORTED] = "locks not supported",
    [RSMERR_LOCKS_NOT_ENABLED] = "locks not enabled",
    [RSMERR_REBIND_NOT_ALLOWED] = "rebind not allowed",
    [RSMERR_INSUFFICIENT_RESOURCES] = "insufficient resources",
    [RSMERR_INSUFFICIENT_MEM] = "insufficient memory",
    [RSMERR_MAP_FAILED] = "map failed (the transport cannot map)",
    [RSMERR_POLLFD_IN_USE] = "pollfd in use",
    [RSMERR_BARRIER_UNINITIALIZED] = "barrier not initialized",
    [RSMERR_BARRIER_OPEN_FAILED] = "barrier already open",
    [RSMERR_BARRIER_NOT_OPENED] = "barrier not opened",
    [RSMERR_BARRIER_FAILURE] = "barrier failure: a write was lost",
    [RSMERR_REMOTE_NODE_UNREACHABLE] = "remote node unreachable",
    [RSMERR_CONN_ABORTED] = "connection aborted",
    [RSMERR_INTERRUPTED] = "interrupted",
    [RSMERR_TIMEOUT] = "timed out",
    [RSMERR_BAD_APPID] = "unknown application id",
    [RSMERR_BAD_CONF] = "bad configuration file",
    [RSMERR_SEG_NOT_CONNECTED] = "segment not connected",
};

PB_EXPORT const char *rsm_strerror(int code)
{
    if (code == RSMERR_BAD_ARGS_ERRORS)
        return "bad arguments";
    if (code == RSMERR_UNSUPPORTED_OPERATION)
        return "operation not supported by the transport";
    if (code < 0 || code >= (int)PB_ARRAY_SIZE(error_strings) || error_strings[code] == NULL)
        return "unknown RSM error";
    return error_strings[code];
}

PB_EXPORT rsm_node_id_t rsm_get_local_nodeid(void)
{
    return pb_boot_identity_get()->node_id;
}

/* ---- controllers ------------------------------------------------------------ */

static struct __rsmapi_controller_handle *controllers[8];

/* A forked child holds no progress claim (the claiming thread is its
 * parent's): it claims again if it polls. */
static void api_atfork_child(void)
{
    for (size_t i = 0; i < PB_ARRAY_SIZE(controllers); i++) {
        if (controllers[i] != NULL)
            controllers[i]->progress_claims = 0;
    }
}

static size_t api_page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static int api_controller_is_held(rsmapi_controller_handle_t controller)
{
    return pb_rsm_handle_is_valid(PB_RSM_HANDLE_CONTROLLER, controller) && controller->refcount > 0;
}

PB_EXPORT int rsm_get_controller(char *name, rsmapi_controller_handle_t *controller)
{
    const pb_rsm_transport_ops_t *const *list;
    const pb_rsm_transport_ops_t *transport;
    size_t count, index;
    int ret = RSM_SUCCESS;

    if (name == NULL || controller == NULL)
        return RSMERR_BAD_ADDR;
    transport = pb_rsm_transport_find(name);
    if (transport == NULL)
        return RSMERR_CTLR_NOT_PRESENT;
    /* (outside the lock: ofi loads libfabric, whose providers' libraries
     * run constructors) */
    if (transport->open != NULL && transport->open() != PB_OK)
        return RSMERR_CTLR_NOT_PRESENT;
    list = pb_rsm_transport_list(&count);
    for (index = 0; list[index] != transport; index++)
        ;
    pthread_mutex_lock(&pb_rsm_lock);
    if (controllers[index] == NULL) {
        controllers[index] = pb_rsm_handle_alloc(PB_RSM_HANDLE_CONTROLLER);
        if (controllers[index] == NULL) {
            ret = RSMERR_INSUFFICIENT_MEM;
            goto out;
        }
        controllers[index]->transport = transport;
    }
    controllers[index]->refcount++;
    *controller = controllers[index];
out:
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

PB_EXPORT int rsm_get_controller_version(char *name, uint_t version,
                                         rsmapi_controller_handle_t *controller)
{
    if (version != RSM_VERSION)
        return RSMERR_BAD_LIBRARY_VERSION;
    return rsm_get_controller(name, controller);
}

PB_EXPORT int rsm_get_controller_attr(rsmapi_controller_handle_t controller,
                                      rsmapi_controller_attr_t *attr)
{
    pb_rsm_caps_t caps;

    if (!api_controller_is_held(controller))
        return RSMERR_BAD_CTLR_HNDL;
    if (attr == NULL)
        return RSMERR_BAD_ADDR;
    controller->transport->query(&caps);
    memset(attr, 0, sizeof(*attr));
    attr->attr_direct_access_sizes = RSM_DAS8 | RSM_DAS16 | RSM_DAS32 | RSM_DAS64;
    attr->attr_atomic_sizes = RSM_DAS8 | RSM_DAS16 | RSM_DAS32 | RSM_DAS64;
    attr->attr_page_size = caps.page_size;
    attr->attr_max_export_segment_size = caps.max_segment_size;
    attr->attr_tot_export_segment_size = caps.max_segment_size;
    attr->attr_max_export_segments = ULONG_MAX;
    attr->attr_max_import_map_size = caps.can_map ? caps.max_segment_size : 0;
    attr->attr_tot_import_map_size = caps.can_map ? caps.max_segment_size : 0;
    attr->attr_max_import_segments = ULONG_MAX;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_release_controller(rsmapi_controller_handle_t controller)
{
    int ret = RSM_SUCCESS;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!api_controller_is_held(controller))
        ret = RSMERR_BAD_CTLR_HNDL;
    else
        controller->refcount--;
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

/* Claims count per controller handle, so that a release without its claim
 * is refused rather than taking another thread's claim away. */
static int api_progress_claim_change(rsmapi_controller_handle_t controller, int delta)
{
    static int atfork_registered; /* (under pb_rsm_lock) */
    const pb_rsm_transport_ops_t *transport;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!api_controller_is_held(controller)) {
        pthread_mutex_unlock(&pb_rsm_lock);
        return RSMERR_BAD_CTLR_HNDL;
    }
    if (delta < 0 && controller->progress_claims == 0) {
        pthread_mutex_unlock(&pb_rsm_lock);
        return RSMERR_BAD_MODE;
    }
    if (!atfork_registered) {
        pthread_atfork(NULL, NULL, api_atfork_child);
        atfork_registered = 1;
    }
    controller->progress_claims += delta;
    transport = controller->transport;
    pthread_mutex_unlock(&pb_rsm_lock);
    /* (the transport takes pb_rsm_lock itself) */
    if (transport->progress_claim != NULL)
        transport->progress_claim(delta);
    return RSM_SUCCESS;
}

PB_EXPORT int pb_rsm_progress_claim(rsmapi_controller_handle_t controller)
{
    return api_progress_claim_change(controller, +1);
}

PB_EXPORT int pb_rsm_progress_release(rsmapi_controller_handle_t controller)
{
    return api_progress_claim_change(controller, -1);
}

/* ---- topology ------------------------------------------------------------------ */

PB_EXPORT int rsm_get_interconnect_topology(rsm_topology_t **topology_data)
{
    const pb_rsm_transport_ops_t *const *list;
    rsm_node_id_t local = pb_boot_identity_get()->node_id;
    int job_nodes = postbox_job_node_count();
    size_t count, entries = 0, head, total, reached[PB_RSM_TRANSPORTS_MAX];
    int rails[PB_RSM_TRANSPORTS_MAX];
    rsm_topology_t *topology;
    char *cursor;
    size_t entry = 0;

    if (topology_data == NULL)
        return RSMERR_BAD_TOPOLOGY_PTR;
    list = pb_rsm_transport_list(&count);
    /* one block: the header with its pointer array, then each controller's
     * connections: the nodes it reaches.  A transport with several rails
     * is one controller per rail ("tcp0", "tcp1").  Node ids are the job's
     * (postbox_job_init numbers the nodes); shm reaches this node only, a
     * network transport every node of the job (this one alone outside a
     * launched job) */
    total = 0;
    for (size_t i = 0; i < count; i++) {
        pb_rsm_caps_t caps;

        list[i]->query(&caps);
        rails[i] = list[i]->rail_count != NULL ? list[i]->rail_count() : 1;
        if (rails[i] < 1)
            rails[i] = 1;
        reached[i] = caps.reaches_job_nodes && job_nodes > 1 ? (size_t)job_nodes : 1;
        entries += (size_t)rails[i];
        total += (size_t)rails[i] * ((offsetof(rsm_connections_t, remote_cntlr) +
                                      reached[i] * sizeof(rsm_remote_cntlr_t) + 15) &
                                     ~(size_t)15);
    }
    head = offsetof(rsm_topology_t, connections) + entries * sizeof(rsm_connections_t *);
    head = (head + 15) & ~(size_t)15;
    total += head;
    topology = calloc(1, total);
    if (topology == NULL)
        return RSMERR_INSUFFICIENT_MEM;
    topology->topology_hdr.local_nodeid = local;
    topology->topology_hdr.local_cntlr_count = (uint_t)entries;
    cursor = (char *)topology + head;
    for (size_t i = 0; i < count; i++) {
        for (int rail = 0; rail < rails[i]; rail++) {
            rsm_connections_t *conn = (rsm_connections_t *)cursor;
            char name[sizeof(conn->hdr.cntlr_name)];

            if (rails[i] > 1)
                snprintf(name, sizeof(name), "%s%d", list[i]->name, rail);
            else
                snprintf(name, sizeof(name), "%s", list[i]->name);
            memcpy(conn->hdr.cntlr_name, name, sizeof(name));
            conn->hdr.local_hwaddr = local;
            conn->hdr.remote_cntlr_count = (int)reached[i];
            for (size_t n = 0; n < reached[i]; n++) {
                rsm_remote_cntlr_t *remote = &conn->remote_cntlr[n];
                rsm_node_id_t node = reached[i] == 1 ? local : (rsm_node_id_t)n;

                remote->remote_nodeid = node;
                memcpy(remote->remote_cntlrname, name, sizeof(name));
                remote->remote_hwaddr = node;
                remote->connection_state = RSM_CONNECTION_ACTIVE;
                if (list[i]->rail_link != NULL)
                    list[i]->rail_link(rail, node, &remote->remote_hwaddr,
                                       &remote->connection_state);
            }
            topology->connections[entry++] = conn;
            cursor += (offsetof(rsm_connections_t, remote_cntlr) +
                       reached[i] * sizeof(rsm_remote_cntlr_t) + 15) &
                      ~(size_t)15;
        }
    }
    *topology_data = topology;
    return RSM_SUCCESS;
}

PB_EXPORT void rsm_free_interconnect_topology(rsm_topology_t *topology_data)
{
    free(topology_data);
}

/* ---- export side ------------------------------------------------------------------ */

static int api_check_export_memory(void *vaddr, size_t size)
{
    size_t page = api_page_size();

    if (vaddr == NULL)
        return RSMERR_BAD_ADDR;
    if ((uintptr_t)vaddr % page != 0)
        return RSMERR_BAD_MEM_ALIGNMENT;
    if (size == 0 || size % page != 0 || (uintptr_t)vaddr + size < (uintptr_t)vaddr)
        return RSMERR_BAD_LENGTH;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_memseg_export_create(rsmapi_controller_handle_t controller,
                                       rsm_memseg_export_handle_t *memseg, void *vaddr, size_t size,
                                       uint_t flags)
{
    rsm_memseg_export_handle_t seg;
    pb_rsm_caps_t caps;
    pb_status_t status;
    int ret;

    if (!api_controller_is_held(controller))
        return RSMERR_BAD_CTLR_HNDL;
    if (memseg == NULL)
        return RSMERR_BAD_ADDR;
    ret = api_check_export_memory(vaddr, size);
    if (ret != RSM_SUCCESS)
        return ret;
    controller->transport->query(&caps);
    if (size > caps.max_segment_size)
        return RSMERR_BAD_LENGTH;
    if (flags & ~(uint_t)(RSM_ALLOW_REBIND | RSM_CREATE_SEG_DONTWAIT))
        return RSMERR_BAD_MODE;

    pthread_mutex_lock(&pb_rsm_lock);
    seg = pb_rsm_handle_alloc(PB_RSM_HANDLE_EXPORT);
    if (seg == NULL) {
        ret = RSMERR_INSUFFICIENT_MEM;
        goto out;
    }
    seg->controller = controller;
    seg->vaddr = vaddr;
    seg->size = size;
    seg->flags = flags;
    status = controller->transport->export_create(seg);
    if (status != PB_OK) {
        pb_rsm_handle_free(PB_RSM_HANDLE_EXPORT, seg);
        ret = api_status_to_error(status);
        goto out;
    }
    *memseg = seg;
    ret = RSM_SUCCESS;
out:
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

PB_EXPORT int rsm_memseg_export_destroy(rsm_memseg_export_handle_t memseg)
{
    int ret = RSM_SUCCESS;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        ret = RSMERR_BAD_SEG_HNDL;
    } else if (memseg->published) {
        /* (a pollfd needs the segment published, so none is held here) */
        ret = RSMERR_SEG_ALREADY_PUBLISHED;
    } else {
        memseg->controller->transport->export_destroy(memseg);
        free(memseg->acl);
        pb_rsm_handle_free(PB_RSM_HANDLE_EXPORT, memseg);
    }
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

PB_EXPORT int rsm_memseg_export_rebind(rsm_memseg_export_handle_t memseg, void *vaddr, offset_t off,
                                       size_t size)
{
    int ret;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        ret = RSMERR_BAD_SEG_HNDL;
        goto out;
    }
    if (!(memseg->flags & RSM_ALLOW_REBIND)) {
        ret = RSMERR_REBIND_NOT_ALLOWED;
        goto out;
    }
    ret = api_check_export_memory(vaddr, size);
    if (ret != RSM_SUCCESS)
        goto out;
    if (size != memseg->size) {
        ret = RSMERR_BAD_LENGTH;
        goto out;
    }
    if (vaddr != memseg->vaddr)
        ret = api_status_to_error(memseg->controller->transport->export_rebind(memseg, vaddr));
out:
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

/* Check an access list and copy it into *@copy_p (NULL for "every node"). */
static int api_acl_copy(rsmapi_access_entry_t *list, uint_t length, rsmapi_access_entry_t **copy_p)
{
    rsmapi_access_entry_t *copy;

    if (length == 0) {
        *copy_p = NULL;
        return RSM_SUCCESS;
    }
    if (list == NULL || length > RSM_ACL_MAX_ENTRIES)
        return RSMERR_BAD_ACL;
    for (uint_t i = 0; i < length; i++) {
        if (list[i].ae_permission & ~(rsm_permission_t)RSM_PERM_MASK)
            return RSMERR_BAD_PERMS;
    }
    copy = malloc(length * sizeof(*copy));
    if (copy == NULL)
        return RSMERR_INSUFFICIENT_MEM;
    memcpy(copy, list, length * sizeof(*copy));
    *copy_p = copy;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_memseg_export_publish(rsm_memseg_export_handle_t memseg,
                                        rsm_memseg_id_t *segment_id,
                                        rsmapi_access_entry_t access_list[],
                                        uint_t access_list_length)
{
    rsmapi_access_entry_t *acl = NULL;
    rsm_memseg_id_t segid;
    pb_status_t status;
    int ret;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        ret = RSMERR_BAD_SEG_HNDL;
        goto out;
    }
    if (memseg->published) {
        ret = RSMERR_SEG_ALREADY_PUBLISHED;
        goto out;
    }
    if (segment_id == NULL) {
        ret = RSMERR_BAD_ADDR;
        goto out;
    }
    segid = *segment_id;
    if (segid != 0 && segid < RSM_USER_APP_ID_BASE &&
        !(segid >= RSM_HPC_ID_BASE && segid <= RSM_HPC_ID_END)) {
        ret = RSMERR_RESERVED_SEGID;
        goto out;
    }
    ret = api_acl_copy(access_list, access_list_length, &acl);
    if (ret != RSM_SUCCESS)
        goto out;
    /* the service thread reads the list when an importer knocks */
    memseg->acl = acl;
    memseg->acl_length = access_list_length;
    status = memseg->controller->transport->export_publish(memseg, &segid);
    if (status != PB_OK) {
        memseg->acl = NULL;
        memseg->acl_length = 0;
        free(acl);
        ret = api_status_to_error(status);
        goto out;
    }
    memseg->segid = segid;
    memseg->published = 1;
    *segment_id = segid;
out:
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

PB_EXPORT int rsm_memseg_export_republish(rsm_memseg_export_handle_t memseg,
                                          rsmapi_access_entry_t access_list[],
                                          uint_t access_list_length)
{
    rsmapi_access_entry_t *acl;
    int ret;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        ret = RSMERR_BAD_SEG_HNDL;
        goto out;
    }
    if (!memseg->published) {
        ret = RSMERR_SEG_NOT_PUBLISHED;
        goto out;
    }
    ret = api_acl_copy(access_list, access_list_length, &acl);
    if (ret != RSM_SUCCESS)
        goto out;
    free(memseg->acl);
    memseg->acl = acl;
    memseg->acl_length = access_list_length;
out:
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

PB_EXPORT int rsm_memseg_export_unpublish(rsm_memseg_export_handle_t memseg)
{
    int ret = RSM_SUCCESS;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        ret = RSMERR_BAD_SEG_HNDL;
    } else if (!memseg->published) {
        ret = RSMERR_SEG_NOT_PUBLISHED;
    } else if (memseg->pollfd_refs > 0) {
        ret = RSMERR_POLLFD_IN_USE;
    } else {
        ret = api_status_to_error(memseg->controller->transport->export_unpublish(memseg));
        if (ret == RSM_SUCCESS) {
            memseg->published = 0;
            free(memseg->acl);
            memseg->acl = NULL;
            memseg->acl_length = 0;
        }
    }
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

PB_EXPORT int pb_rsm_memseg_export_set_handler(rsm_memseg_export_handle_t memseg,
                                               pb_rsm_call_handler_t handler, void *arg)
{
    int ret = RSM_SUCCESS;

    /* the transports run a handler holding the lock: once this has it, the
     * old handler is not running, and the next call sees the new one */
    pthread_mutex_lock(&pb_rsm_lock);
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        ret = RSMERR_BAD_SEG_HNDL;
    } else {
        memseg->call_handler = handler;
        memseg->call_arg = handler != NULL ? arg : NULL;
    }
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

_Atomic int pb_rsm_event_sleepers;

int pb_rsm_acl_grant(const pb_rsm_export_t *seg, rsm_node_id_t node, uid_t uid, gid_t gid)
{
    rsm_permission_t mode = RSM_PERM_RDWR; /* NULL list: owner read-write */
    int found = seg->acl == NULL;
    unsigned digit;

    for (uint_t i = 0; i < seg->acl_length && !found; i++) {
        if (seg->acl[i].ae_node == node) {
            mode = seg->acl[i].ae_permission;
            found = 1;
        }
    }
    if (!found)
        return -1;
    if (uid == geteuid())
        digit = (mode >> 6) & 7;
    else if (gid == getegid())
        digit = (mode >> 3) & 7;
    else
        digit = mode & 7;
    return (int)(((digit & 4) ? RSM_PERM_READ : 0) | ((digit & 2) ? RSM_PERM_WRITE : 0));
}

/* ---- import side ------------------------------------------------------------------ */

static int api_perm_is_valid(rsm_permission_t perm)
{
    return perm == RSM_PERM_READ || perm == RSM_PERM_WRITE || perm == RSM_PERM_RDWR;
}

PB_EXPORT int rsm_memseg_import_connect(rsmapi_controller_handle_t controller,
                                        rsm_node_id_t node_id, rsm_memseg_id_t segment_id,
                                        rsm_permission_t perm,
                                        rsm_memseg_import_handle_t *im_memseg)
{
    rsm_memseg_import_handle_t im;
    pb_status_t status;

    if (!api_controller_is_held(controller))
        return RSMERR_BAD_CTLR_HNDL;
    if (im_memseg == NULL)
        return RSMERR_BAD_ADDR;
    if (!api_perm_is_valid(perm))
        return RSMERR_BAD_PERMS;
    if (!controller->transport->reaches(node_id))
        return RSMERR_REMOTE_NODE_UNREACHABLE;
    im = pb_rsm_handle_alloc(PB_RSM_HANDLE_IMPORT);
    if (im == NULL)
        return RSMERR_INSUFFICIENT_MEM;
    im->transport = controller->transport;
    im->controller = controller;
    im->node = node_id;
    im->segid = segment_id;
    im->perm = perm;
    im->mode = RSM_BARRIER_MODE_IMPLICIT;
    /* no lock here: the exporter may be this very process, whose service
     * thread needs the lock to answer */
    status = controller->transport->import_connect(im);
    if (status != PB_OK) {
        pb_rsm_handle_free(PB_RSM_HANDLE_IMPORT, im);
        return api_status_to_error(status);
    }
    *im_memseg = im;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_memseg_import_disconnect(rsm_memseg_import_handle_t im_memseg)
{
    int ret = RSM_SUCCESS;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im_memseg)) {
        ret = RSMERR_BAD_SEG_HNDL;
    } else if (im_memseg->map_addr != NULL) {
        ret = RSMERR_SEG_STILL_MAPPED;
    } else if (im_memseg->pollfd_refs > 0) {
        ret = RSMERR_POLLFD_IN_USE;
    } else {
        im_memseg->transport->import_disconnect(im_memseg);
        pb_rsm_handle_free(PB_RSM_HANDLE_IMPORT, im_memseg);
    }
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

/* The checks every put and get makes before it touches anything. */
static inline int api_check_access(rsm_memseg_import_handle_t im, off_t offset, const void *buf,
                                   size_t length, rsm_permission_t needed)
{
    if (PB_UNLIKELY(!pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im)))
        return RSMERR_BAD_SEG_HNDL;
    if (PB_UNLIKELY(!(im->perm & needed)))
        return RSMERR_PERM_DENIED;
    if (PB_UNLIKELY(offset < 0 || (size_t)offset > im->size))
        return RSMERR_BAD_OFFSET;
    if (PB_UNLIKELY(length > im->size - (size_t)offset))
        return RSMERR_BAD_LENGTH;
    if (PB_UNLIKELY(buf == NULL && length > 0))
        return RSMERR_BAD_ADDR;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_memseg_import_put(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                    void *src_addr, size_t length)
{
    int ret = api_check_access(im_memseg, offset, src_addr, length, RSM_PERM_WRITE);

    if (PB_UNLIKELY(ret != RSM_SUCCESS) || length == 0)
        return ret;
    return api_status_to_error(
        im_memseg->transport->put(im_memseg, (size_t)offset, src_addr, length));
}

PB_EXPORT int rsm_memseg_import_get(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                    void *dst_addr, size_t length)
{
    int ret = api_check_access(im_memseg, offset, dst_addr, length, RSM_PERM_READ);

    if (PB_UNLIKELY(ret != RSM_SUCCESS) || length == 0)
        return ret;
    return api_status_to_error(
        im_memseg->transport->get(im_memseg, (size_t)offset, dst_addr, length));
}

PB_EXPORT int pb_rsm_memseg_import_call(rsm_memseg_import_handle_t im_memseg, const void *request,
                                        size_t request_len, void *reply, size_t reply_max,
                                        size_t *reply_len, unsigned flags)
{
    int no_reply = (flags & PB_RSM_CALL_NO_REPLY) != 0;
    size_t got = 0;
    pb_status_t status;

    if (PB_UNLIKELY(!pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im_memseg)))
        return RSMERR_BAD_SEG_HNDL;
    if (flags & ~PB_RSM_CALL_NO_REPLY)
        return RSMERR_BAD_MODE;
    if (no_reply) {
        reply = NULL;
        reply_max = 0;
    }
    if (request_len > PB_RSM_CALL_MAX || reply_max > PB_RSM_CALL_MAX ||
        (reply == NULL && reply_max > 0))
        return RSMERR_BAD_LENGTH;
    if (request == NULL && request_len > 0)
        return RSMERR_BAD_ADDR;
    if (!(im_memseg->perm & RSM_PERM_WRITE)) {
        pb_warn("call on segment %#x of node %u refused: the import lacks write permission",
                im_memseg->segid, im_memseg->node);
        return RSMERR_PERM_DENIED;
    }
    status = im_memseg->transport->call(im_memseg, request, request_len, reply, reply_max, &got,
                                        no_reply);
    if (status == PB_ERR_UNSUPPORTED)
        return RSMERR_UNSUPPORTED_OPERATION;
    if (status == PB_OK && !no_reply && reply_len != NULL)
        *reply_len = got;
    return api_status_to_error(status);
}

/* put or get @rep_cnt items of @item bytes at an offset aligned to @item */
static int api_transfer_items(rsm_memseg_import_handle_t im, off_t offset, void *datap,
                              ulong_t rep_cnt, size_t item, int is_put)
{
    size_t length;

    if (rep_cnt > SIZE_MAX / item)
        return pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im) ? RSMERR_BAD_LENGTH
                                                                : RSMERR_BAD_SEG_HNDL;
    length = rep_cnt * item;
    if (offset % (off_t)item != 0)
        return pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im) ? RSMERR_MISALIGNED_OFFSET
                                                                : RSMERR_BAD_SEG_HNDL;
    /* both ends are little-endian x86/arm64 Linux: no byte swapping */
    return is_put ? rsm_memseg_import_put(im, offset, datap, length)
                  : rsm_memseg_import_get(im, offset, datap, length);
}

PB_EXPORT int rsm_memseg_import_put8(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                     uint8_t *datap, ulong_t rep_cnt)
{
    return api_transfer_items(im_memseg, offset, datap, rep_cnt, 1, 1);
}

PB_EXPORT int rsm_memseg_import_put16(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                      uint16_t *datap, ulong_t rep_cnt)
{
    return api_transfer_items(im_memseg, offset, datap, rep_cnt, 2, 1);
}

PB_EXPORT int rsm_memseg_import_put32(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                      uint32_t *datap, ulong_t rep_cnt)
{
    return api_transfer_items(im_memseg, offset, datap, rep_cnt, 4, 1);
}

PB_EXPORT int rsm_memseg_import_put64(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                      uint64_t *datap, ulong_t rep_cnt)
{
    return api_transfer_items(im_memseg, offset, datap, rep_cnt, 8, 1);
}

PB_EXPORT int rsm_memseg_import_get8(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                     uint8_t *datap, ulong_t rep_cnt)
{
    return api_transfer_items(im_memseg, offset, datap, rep_cnt, 1, 0);
}

PB_EXPORT int rsm_memseg_import_get16(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                      uint16_t *datap, ulong_t rep_cnt)
{
    return api_transfer_items(im_memseg, offset, datap, rep_cnt, 2, 0);
}

PB_EXPORT int rsm_memseg_import_get32(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                      uint32_t *datap, ulong_t rep_cnt)
{
    return api_transfer_items(im_memseg, offset, datap, rep_cnt, 4, 0);
}

PB_EXPORT int rsm_memseg_import_get64(rsm_memseg_import_handle_t im_memseg, off_t offset,
                                      uint64_t *datap, ulong_t rep_cnt)
{
    return api_transfer_items(im_memseg, offset, datap, rep_cnt, 8, 0);
}

/* Resolve iovec entry @io to a local address, checking its handle. */
static int api_iovec_local(const rsm_iovec_t *io, char **addr_p)
{
    if (io->io_type == RSM_VA_TYPE) {
        if (io->local.vaddr == NULL)
            return RSMERR_BAD_ADDR;
        *addr_p = io->local.vaddr + io->local_offset;
        return RSM_SUCCESS;
    }
    if (io->io_type != RSM_HANDLE_TYPE)
        return RSMERR_BAD_SGIO;
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_LOCALMEM, io->local.handle))
        return RSMERR_BAD_LOCALMEM_HNDL;
    if (io->local_offset > io->local.handle->length ||
        io->transfer_length > io->local.handle->length - io->local_offset)
        return RSMERR_BAD_LENGTH;
    *addr_p = io->local.handle->vaddr + io->local_offset;
    return RSM_SUCCESS;
}

static int api_transfer_vector(rsm_scat_gath_t *sg_io, int is_put)
{
    char *locals[RSM_MAX_SGIOREQS];
    rsm_memseg_import_handle_t im;
    rsm_permission_t needed = is_put ? RSM_PERM_WRITE : RSM_PERM_READ;
    int ret = RSM_SUCCESS, signal;
    ulong_t i, count;

    if (sg_io == NULL || sg_io->iovec == NULL || sg_io->io_request_count == 0 ||
        sg_io->io_request_count > RSM_MAX_SGIOREQS)
        return RSMERR_BAD_SGIO;
    im = sg_io->remote_handle;
    count = sg_io->io_request_count;
    if (sg_io->flags & ~(uint_t)(RSM_IMPLICIT_SIGPOST | PB_RSM_PUT_FIRST_WORD_LAST)) {
        sg_io->io_residual_count = count;
        return RSMERR_BAD_MODE;
    }
    /* check every entry before the first transfer, so a bad list changes nothing */
    for (i = 0; i < count; i++) {
        const rsm_iovec_t *io = &sg_io->iovec[i];

        ret = api_iovec_local(io, &locals[i]);
        if (ret == RSM_SUCCESS && io->remote_offset > (size_t)LLONG_MAX)
            ret = RSMERR_BAD_OFFSET;
        if (ret == RSM_SUCCESS)
            ret = api_check_access(im, (off_t)io->remote_offset, locals[i], io->transfer_length,
                                   needed);
        if (ret == RSM_SUCCESS && is_put && (sg_io->flags & PB_RSM_PUT_FIRST_WORD_LAST) &&
            i == count - 1) {
            if (io->transfer_length < 4 || io->transfer_length > PB_RSM_WORD_LAST_MAX)
                ret = RSMERR_BAD_LENGTH;
            else if (io->remote_offset % 4 != 0)
                ret = RSMERR_BAD_OFFSET;
        }
        if (ret != RSM_SUCCESS) {
            sg_io->io_residual_count = count;
            return ret;
        }
    }
    signal = is_put && (sg_io->flags & RSM_IMPLICIT_SIGPOST);
    if (is_put && im->transport->put_vector != NULL) {
        pb_rsm_put_entry_t entries[RSM_MAX_SGIOREQS];
        size_t n = 0;

        /* an empty entry moves nothing (a word-last one is never empty) */
        for (i = 0; i < count; i++) {
            if (sg_io->iovec[i].transfer_length == 0)
                continue;
            entries[n].offset = sg_io->iovec[i].remote_offset;
            entries[n].src = locals[i];
            entries[n].length = sg_io->iovec[i].transfer_length;
            n++;
        }
        if (n > 0)
            ret = api_status_to_error(im->transport->put_vector(
                im, entries, n, signal, (sg_io->flags & PB_RSM_PUT_FIRST_WORD_LAST) != 0));
        else if (signal)
            ret = api_status_to_error(im->transport->import_signal_post(im, 1));
        /* (a failed transfer may have applied any of them: none counts) */
        sg_io->io_residual_count = ret == RSM_SUCCESS ? 0 : count;
        return ret;
    }
    for (i = 0; i < count; i++) {
        const rsm_iovec_t *io = &sg_io->iovec[i];

        if (is_put && (sg_io->flags & PB_RSM_PUT_FIRST_WORD_LAST) && i == count - 1) {
            ret = api_status_to_error(im->transport->put_word_last(im, io->remote_offset, locals[i],
                                                                   io->transfer_length, signal));
            signal = 0;
        } else if (is_put) {
            ret =
                rsm_memseg_import_put(im, (off_t)io->remote_offset, locals[i], io->transfer_length);
        } else {
            ret =
                rsm_memseg_import_get(im, (off_t)io->remote_offset, locals[i], io->transfer_length);
        }
        if (ret != RSM_SUCCESS)
            break;
    }
    sg_io->io_residual_count = count - i;
    if (ret == RSM_SUCCESS && signal)
        ret = api_status_to_error(im->transport->import_signal_post(im, 1));
    return ret;
}

PB_EXPORT int rsm_memseg_import_putv(rsm_scat_gath_t *sg_io)
{
    return api_transfer_vector(sg_io, 1);
}

PB_EXPORT int rsm_memseg_import_getv(rsm_scat_gath_t *sg_io)
{
    return api_transfer_vector(sg_io, 0);
}

PB_EXPORT int rsm_memseg_import_map(rsm_memseg_import_handle_t im_memseg, void **address,
                                    rsm_attribute_t attr, rsm_permission_t perm, off_t offset,
                                    size_t length)
{
    size_t page = api_page_size();
    pb_rsm_caps_t caps;
    void *addr;
    pb_status_t status;
    int ret;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im_memseg)) {
        ret = RSMERR_BAD_SEG_HNDL;
    } else if (address == NULL) {
        ret = RSMERR_BAD_ADDR;
    } else if (im_memseg->map_addr != NULL) {
        ret = RSMERR_SEG_ALREADY_MAPPED;
    } else if (attr != RSM_MAP_NONE && attr != RSM_MAP_FIXED) {
        ret = RSMERR_BAD_MODE;
    } else if (!api_perm_is_valid(perm)) {
        ret = RSMERR_BAD_PERMS;
    } else if (perm & ~im_memseg->perm) {
        ret = RSMERR_PERM_DENIED;
    } else if (offset < 0 || (size_t)offset >= im_memseg->size) {
        ret = offset >= 0 && (size_t)offset % page != 0 ? RSMERR_MISALIGNED_OFFSET
                                                        : RSMERR_BAD_OFFSET;
    } else if ((size_t)offset % page != 0) {
        ret = RSMERR_MISALIGNED_OFFSET;
    } else if (length == 0 || length > im_memseg->size - (size_t)offset) {
        ret = RSMERR_BAD_LENGTH;
    } else if (attr == RSM_MAP_FIXED && (uintptr_t)*address % page != 0) {
        ret = RSMERR_BAD_MEM_ALIGNMENT;
    } else {
        im_memseg->transport->query(&caps);
        if (!caps.can_map) {
            ret = RSMERR_MAP_FAILED;
            goto out;
        }
        addr = *address;
        status = im_memseg->transport->map(im_memseg, &addr, attr == RSM_MAP_FIXED,
                                           (perm & RSM_PERM_WRITE) != 0, (size_t)offset, length);
        ret = status == PB_ERR_NO_MEMORY ? RSMERR_MAP_FAILED : api_status_to_error(status);
        if (ret == RSM_SUCCESS) {
            im_memseg->map_addr = addr;
            im_memseg->map_length = length;
            *address = addr;
        }
    }
out:
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

PB_EXPORT int rsm_memseg_import_unmap(rsm_memseg_import_handle_t im_memseg)
{
    int ret = RSM_SUCCESS;

    pthread_mutex_lock(&pb_rsm_lock);
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im_memseg)) {
        ret = RSMERR_BAD_SEG_HNDL;
    } else if (im_memseg->map_addr == NULL) {
        ret = RSMERR_SEG_NOT_MAPPED;
    } else {
        im_memseg->transport->unmap(im_memseg);
        im_memseg->map_addr = NULL;
        im_memseg->map_length = 0;
    }
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

/* ---- barriers ------------------------------------------------------------------------ */

/* privdata of an initialised barrier points here; gnum is 1 while open */
static const char api_barrier_marker = 'B';

static int api_barrier_check(const rsmapi_barrier_t *barrier)
{
    if (barrier == NULL)
        return RSMERR_BAD_BARRIER_PTR;
    if (barrier->privdata != &api_barrier_marker)
        return RSMERR_BARRIER_UNINITIALIZED;
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, barrier->seg))
        return RSMERR_BAD_SEG_HNDL;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_memseg_import_init_barrier(rsm_memseg_import_handle_t im_memseg,
                                             rsm_barrier_type_t type, rsmapi_barrier_t *barrier)
{
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im_memseg))
        return RSMERR_BAD_SEG_HNDL;
    if (barrier == NULL)
        return RSMERR_BAD_BARRIER_PTR;
    if (type != RSM_BARRIER_SEGMENT && type != RSM_BARRIER_NODE &&
        type != RSM_BARRIER_SEGMENT_THREAD && type != RSM_BARRIER_NODE_THREAD)
        return RSMERR_BAD_MODE;
    barrier->seg = im_memseg;
    barrier->gnum = 0;
    barrier->privdata = (void *)&api_barrier_marker;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_memseg_import_open_barrier(rsmapi_barrier_t *barrier)
{
    rsm_memseg_import_handle_t im;
    int ret = api_barrier_check(barrier);

    if (ret != RSM_SUCCESS)
        return ret;
    if (barrier->gnum != 0)
        return RSMERR_BARRIER_OPEN_FAILED;
    im = barrier->seg;
    ret = api_status_to_error(im->transport->barrier_open(im));
    if (ret == RSM_SUCCESS)
        barrier->gnum = 1;
    return ret;
}

PB_EXPORT int rsm_memseg_import_order_barrier(rsmapi_barrier_t *barrier)
{
    rsm_memseg_import_handle_t im;
    int ret = api_barrier_check(barrier);

    if (ret != RSM_SUCCESS)
        return ret;
    if (barrier->gnum == 0)
        return RSMERR_BARRIER_NOT_OPENED;
    im = barrier->seg;
    return api_status_to_error(im->transport->barrier_order(im));
}

PB_EXPORT int rsm_memseg_import_close_barrier(rsmapi_barrier_t *barrier)
{
    rsm_memseg_import_handle_t im;
    int ret = api_barrier_check(barrier);

    if (ret != RSM_SUCCESS)
        return ret;
    if (barrier->gnum == 0)
        return RSMERR_BARRIER_NOT_OPENED;
    barrier->gnum = 0;
    im = barrier->seg;
    return api_status_to_error(im->transport->barrier_close(im));
}

PB_EXPORT int rsm_memseg_import_destroy_barrier(rsmapi_barrier_t *barrier)
{
    if (barrier == NULL)
        return RSMERR_BAD_BARRIER_PTR;
    if (barrier->privdata != &api_barrier_marker)
        return RSMERR_BARRIER_UNINITIALIZED;
    barrier->privdata = NULL;
    barrier->seg = NULL;
    barrier->gnum = 0;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_memseg_import_get_mode(rsm_memseg_import_handle_t im_memseg,
                                         rsm_barrier_mode_t *mode)
{
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im_memseg))
        return RSMERR_BAD_SEG_HNDL;
    if (mode == NULL)
        return RSMERR_BAD_ADDR;
    *mode = im_memseg->mode;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_memseg_import_set_mode(rsm_memseg_import_handle_t im_memseg,
                                         rsm_barrier_mode_t mode)
{
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, im_memseg))
        return RSMERR_BAD_SEG_HNDL;
    if (mode != RSM_BARRIER_MODE_EXPLICIT && mode != RSM_BARRIER_MODE_IMPLICIT)
        return RSMERR_BAD_MODE;
    im_memseg->mode = mode;
    return RSM_SUCCESS;
}

/* ---- signals --------------------------------------------------------------------------- */

PB_EXPORT int rsm_intr_signal_post(void *memseg, uint_t flags)
{
    int accumulate = !(flags & RSM_SIGPOST_NO_ACCUMULATE);

    if (flags & ~(uint_t)RSM_SIGPOST_NO_ACCUMULATE)
        return RSMERR_BAD_MODE;
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, memseg)) {
        rsm_memseg_import_handle_t im = memseg;

        return api_status_to_error(im->transport->import_signal_post(im, accumulate));
    }
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        rsm_memseg_export_handle_t seg = memseg;

        if (!seg->published)
            return RSMERR_SEG_NOT_PUBLISHED;
        return api_status_to_error(seg->controller->transport->export_signal_post(seg, accumulate));
    }
    return RSMERR_BAD_SEG_HNDL;
}

PB_EXPORT int rsm_intr_signal_wait(void *memseg, int timeout)
{
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, memseg)) {
        rsm_memseg_import_handle_t im = memseg;

        return api_status_to_error(im->transport->import_signal_wait(im, timeout));
    }
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        rsm_memseg_export_handle_t seg = memseg;

        if (!seg->published)
            return RSMERR_SEG_NOT_PUBLISHED;
        return api_status_to_error(seg->controller->transport->export_signal_wait(seg, timeout));
    }
    return RSMERR_BAD_SEG_HNDL;
}

/* ---- pollfds ------------------------------------------------------------------------------ */

/* Each held pollfd is an eventfd that stands for its segment: a token with
 * a real descriptor number, found again here by rsm_intr_signal_wait_pollfd. */
static struct {
    int fd;
    void *memseg;
} api_pollfds[RSM_POLLFD_MAX];
static int api_pollfd_count;

static int api_pollfd_find(void *memseg)
{
    for (int i = 0; i < api_pollfd_count; i++) {
        if (api_pollfds[i].memseg == memseg)
            return i;
    }
    return -1;
}

/* The pollfd reference count of @memseg, or NULL if it is not a handle. */
static int *api_pollfd_refs(void *memseg)
{
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, memseg))
        return &((rsm_memseg_import_handle_t)memseg)->pollfd_refs;
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg))
        return &((rsm_memseg_export_handle_t)memseg)->pollfd_refs;
    return NULL;
}

PB_EXPORT int rsm_memseg_get_pollfd(void *memseg, struct pollfd *poll_fd)
{
    int *refs;
    int index, ret = RSM_SUCCESS;

    pthread_mutex_lock(&pb_rsm_lock);
    refs = api_pollfd_refs(memseg);
    if (refs == NULL) {
        ret = RSMERR_BAD_SEG_HNDL;
        goto out;
    }
    if (poll_fd == NULL) {
        ret = RSMERR_BAD_ADDR;
        goto out;
    }
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg) &&
        !((rsm_memseg_export_handle_t)memseg)->published) {
        ret = RSMERR_SEG_NOT_PUBLISHED;
        goto out;
    }
    index = api_pollfd_find(memseg);
    if (index < 0) {
        int fd;

        if (api_pollfd_count == RSM_POLLFD_MAX) {
            ret = RSMERR_INSUFFICIENT_RESOURCES;
            goto out;
        }
        fd = eventfd(0, EFD_CLOEXEC);
        if (fd < 0) {
            pb_error("eventfd for a pollfd failed: %m");
            ret = RSMERR_INSUFFICIENT_RESOURCES;
            goto out;
        }
        index = api_pollfd_count++;
        api_pollfds[index].fd = fd;
        api_pollfds[index].memseg = memseg;
    }
    (*refs)++;
    poll_fd->fd = api_pollfds[index].fd;
    poll_fd->events = POLLRDNORM;
    poll_fd->revents = 0;
out:
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

PB_EXPORT int rsm_memseg_release_pollfd(void *memseg)
{
    int *refs;
    int index, ret = RSM_SUCCESS;

    pthread_mutex_lock(&pb_rsm_lock);
    refs = api_pollfd_refs(memseg);
    index = api_pollfd_find(memseg);
    if (refs == NULL) {
        ret = RSMERR_BAD_SEG_HNDL;
    } else if (*refs == 0 || index < 0) {
        ret = RSMERR_POLLFD_IN_USE;
    } else if (--(*refs) == 0) {
        close(api_pollfds[index].fd);
        api_pollfds[index] = api_pollfds[--api_pollfd_count];
    }
    pthread_mutex_unlock(&pb_rsm_lock);
    return ret;
}

/* Consume a pending event of @memseg without waiting: RSM_SUCCESS, or
 * RSMERR_TIMEOUT when none is pending, or the segment's error. */
static int api_pollfd_try_consume(void *memseg)
{
    return rsm_intr_signal_wait(memseg, 0);
}

static const _Atomic uint32_t *api_event_word(void *memseg)
{
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, memseg)) {
        rsm_memseg_import_handle_t im = memseg;

        return im->transport->import_event_word(im);
    }
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        rsm_memseg_export_handle_t seg = memseg;

        return seg->controller->transport->export_event_word(seg);
    }
    return NULL;
}

/* Count the calling thread among the sleepers on @memseg's event word
 * (@delta +1 or -1), for transports whose posts from other processes wake
 * only counted sleepers. */
static void api_event_waiters(void *memseg, int delta)
{
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_IMPORT, memseg)) {
        rsm_memseg_import_handle_t im = memseg;

        if (im->transport->import_event_waiters != NULL)
            im->transport->import_event_waiters(im, delta);
    }
    if (pb_rsm_handle_is_valid(PB_RSM_HANDLE_EXPORT, memseg)) {
        rsm_memseg_export_handle_t seg = memseg;

        if (seg->controller->transport->export_event_waiters != NULL)
            seg->controller->transport->export_event_waiters(seg, delta);
    }
}

PB_EXPORT int rsm_intr_signal_wait_pollfd(struct pollfd fds[], nfds_t nfds, int timeout,
                                          int *numfdsp)
{
    void *segs[RSM_POLLFD_MAX];
    struct futex_waitv waits[RSM_POLLFD_MAX];
    int64_t deadline_ns = -1;
    int ready;

    if (fds == NULL || nfds == 0 || nfds > RSM_POLLFD_MAX)
        return RSMERR_BAD_ARGS_ERRORS;
    pthread_mutex_lock(&pb_rsm_lock);
    for (nfds_t i = 0; i < nfds; i++) {
        int index = -1;

        for (int j = 0; j < api_pollfd_count; j++) {
            if (api_pollfds[j].fd == fds[i].fd)
                index = j;
        }
        if (index < 0) {
            pthread_mutex_unlock(&pb_rsm_lock);
            return RSMERR_BAD_ARGS_ERRORS;
        }
        segs[i] = api_pollfds[index].memseg;
    }
    pthread_mutex_unlock(&pb_rsm_lock);

    if (timeout >= 0)
        deadline_ns = pb_time_now_ns() + (int64_t)timeout * 1000000;
    for (;;) {
        struct timespec until;
        int64_t now_ns, until_ns;
        long ret;

        /* count this thread among the sleepers, then snapshot the words,
         * so that a post after the checks ends the wait */
        atomic_fetch_add(&pb_rsm_event_sleepers, 1);
        for (nfds_t i = 0; i < nfds; i++) {
            const _Atomic uint32_t *word = api_event_word(segs[i]);

            if (word == NULL) {
                atomic_fetch_sub(&pb_rsm_event_sleepers, 1);
                return RSMERR_BAD_ARGS_ERRORS;
            }
            memset(&waits[i], 0, sizeof(waits[i]));
            waits[i].uaddr = (uintptr_t)word;
            waits[i].val = atomic_load_explicit(word, memory_order_acquire);
            waits[i].flags = FUTEX_32; /* shared: no FUTEX_PRIVATE_FLAG */
        }
        ready = 0;
        for (nfds_t i = 0; i < nfds; i++) {
            int code = api_pollfd_try_consume(segs[i]);

            fds[i].revents = 0;
            if (code == RSM_SUCCESS) {
                fds[i].revents = POLLRDNORM;
                ready++;
            } else if (code != RSMERR_TIMEOUT) {
                fds[i].revents = POLLERR;
                ready++;
            }
        }
        now_ns = pb_time_now_ns();
        if (ready > 0 || (deadline_ns >= 0 && now_ns >= deadline_ns)) {
            atomic_fetch_sub(&pb_rsm_event_sleepers, 1);
            if (ready > 0)
                break;
            if (numfdsp != NULL)
                *numfdsp = 0;
            return RSMERR_TIMEOUT;
        }
        until_ns = now_ns + (int64_t)RSM_POLLFD_WAIT_SLICE_MS * 1000000;
        if (deadline_ns >= 0 && deadline_ns < until_ns)
            until_ns = deadline_ns;
        until.tv_sec = until_ns / 1000000000;
        until.tv_nsec = until_ns % 1000000000;
        /* posters in other processes see these counts (seq_cst) before or
         * after their post: before, they wake us; after, the words moved
         * since the snapshot and futex_waitv returns at once */
        for (nfds_t i = 0; i < nfds; i++)
            api_event_waiters(segs[i], 1);
        ret = pb_futex_waitv(waits, (unsigned)nfds, &until);
        for (nfds_t i = 0; i < nfds; i++)
            api_event_waiters(segs[i], -1);
        atomic_fetch_sub(&pb_rsm_event_sleepers, 1);
        if (ret < 0 && errno == EINTR)
            return RSMERR_INTERRUPTED;
    }
    if (numfdsp != NULL)
        *numfdsp = ready;
    return RSM_SUCCESS;
}

/* ---- local memory handles ------------------------------------------------------------------ */

PB_EXPORT int rsm_create_localmemory_handle(rsmapi_controller_handle_t controller,
                                            rsm_localmemory_handle_t *local_handle_p,
                                            char *local_vaddr, size_t len)
{
    rsm_localmemory_handle_t handle;

    if (!api_controller_is_held(controller))
        return RSMERR_BAD_CTLR_HNDL;
    if (local_handle_p == NULL || local_vaddr == NULL)
        return RSMERR_BAD_ADDR;
    if (len == 0)
        return RSMERR_BAD_LENGTH;
    handle = pb_rsm_handle_alloc(PB_RSM_HANDLE_LOCALMEM);
    if (handle == NULL)
        return RSMERR_INSUFFICIENT_MEM;
    handle->vaddr = local_vaddr;
    handle->length = len;
    *local_handle_p = handle;
    return RSM_SUCCESS;
}

PB_EXPORT int rsm_free_localmemory_handle(rsmapi_controller_handle_t controller,
                                          rsm_localmemory_handle_t local_handle)
{
    if (!api_controller_is_held(controller))
        return RSMERR_BAD_CTLR_HNDL;
    if (!pb_rsm_handle_is_valid(PB_RSM_HANDLE_LOCALMEM, local_handle))
        return RSMERR_BAD_LOCALMEM_HNDL;
    pb_rsm_handle_free(PB_RSM_HANDLE_LOCALMEM, local_handle);
    return RSM_SUCCESS;
}

/* ---- segment-id reservations ----------------------------------------------------------------- */

PB_EXPORT int rsm_get_segmentid_range(const char *appid, rsm_memseg_id_t *baseid, uint32_t *length)
{
    const char *path = pb_config_get_string("POSTBOX_RSM_SEGMENTID_FILE");
    char line[256], name[128];
    unsigned long base, count;
    int ret = RSMERR_BAD_APPID;
    FILE *file;

    if (appid == NULL || baseid == NULL || length == NULL)
        return RSMERR_BAD_ADDR;
    file = fopen(path, "re");
    if (file == NULL) {
        pb_info("cannot open segment-id reservations %s: %m", path);
        return RSMERR_BAD_CONF;
    }
    while (fgets(line, sizeof(line), file) != NULL) {
        char *text = line + strspn(line, " \t");
        char base_text[32], count_text[32], *end_base, *end_count;

        if (*text == '#' || *text == '\n' || *text == '\0')
            continue;
        /* "reserve <appid> <hex base> <length>", the length in C notation */
        if (sscanf(text, "reserve %127s %31s %31s", name, base_text, count_text) != 3) {
            pb_warn("malformed line in %s: %s", path, text);
            ret = RSMERR_BAD_CONF;
            break;
        }
        errno = 0;
        base = strtoul(base_text, &end_base, 16);
        count = strtoul(count_text, &end_count, 0);
        if (errno != 0 || *end_base != '\0' || *end_count != '\0' || count == 0 ||
            base > UINT32_MAX || count > (unsigned long)UINT32_MAX - base + 1) {
            pb_warn("malformed line in %s: %s", path, text);
            ret = RSMERR_BAD_CONF;
            break;
        }
        if (strcmp(name, appid) == 0) {
            *baseid = (rsm_memseg_id_t)base;
            *length = (uint32_t)count;
            ret = RSM_SUCCESS;
            break;
        }
    }
    fclose(file);
    return ret;
}
