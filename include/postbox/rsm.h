/*
 * Postbox RSM: the remote-shared-memory API.
 *
 * The names, signatures, flag values and error numbers are those of the
 * Solaris RSMAPI (librsm, <rsmapi.h>), so programs written for it port by
 * changing the include line.  Where a Solaris detail does not fit Linux,
 * docs/rsm.md says what Postbox does instead.
 *
 * Every call returns RSM_SUCCESS (0) or one of the RSMERR_* codes below;
 * rsm_strerror() turns a code into text.  A call that fails changes nothing.
 */
#ifndef POSTBOX_RSM_H
#define POSTBOX_RSM_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- basic types ------------------------------------------------------ */

typedef unsigned int uint_t;
typedef unsigned long ulong_t;
typedef off_t offset_t;

typedef uint32_t rsm_node_id_t;
typedef uint32_t rsm_memseg_id_t;
typedef uint32_t rsm_permission_t;
typedef uint64_t rsm_addr_t;

typedef struct __rsmapi_controller_handle *rsmapi_controller_handle_t;
typedef struct __rsm_memseg_export_handle *rsm_memseg_export_handle_t;
typedef struct __rsm_memseg_import_handle *rsm_memseg_import_handle_t;
typedef struct __rsm_localmemory_handle *rsm_localmemory_handle_t;

#define RSM_VERSION 5

/* ---- errors (numeric values of Solaris <sys/rsm/rsm_common.h>) ------- */

#define RSM_SUCCESS 0
#define RSMERR_BAD_LIBRARY_VERSION 1
#define RSMERR_BAD_TOPOLOGY_PTR 2
#define RSMERR_BAD_CTLR_HNDL 3
#define RSMERR_CTLR_NOT_PRESENT 4
#define RSMERR_BAD_SEG_HNDL 5
#define RSMERR_SEG_ALREADY_PUBLISHED 6
#define RSMERR_SEG_NOT_PUBLISHED 7
#define RSMERR_SEG_NOT_PUBLISHED_TO_NODE 8
#define RSMERR_SEG_ALREADY_MAPPED 9
#define RSMERR_SEG_STILL_MAPPED 10
#define RSMERR_SEG_NOT_MAPPED 11
#define RSMERR_NOT_CREATOR 12
#define RSMERR_BAD_BARRIER_PTR 13
#define RSMERR_BAD_SGIO 14
#define RSMERR_BAD_LOCALMEM_HNDL 15
#define RSMERR_BAD_ADDR 16
#define RSMERR_BAD_MEM_ALIGNMENT 17
#define RSMERR_BAD_OFFSET 18
#define RSMERR_MISALIGNED_OFFSET 19
#define RSMERR_BAD_LENGTH 20
#define RSMERR_BAD_ACL 21
#define RSMERR_BAD_SEGID 22
#define RSMERR_RESERVED_SEGID 23
#define RSMERR_SEGID_IN_USE 24
#define RSMERR_BAD_MODE 25
#define RSMERR_BAD_PERMS 26
#define RSMERR_PERM_DENIED 27
#define RSMERR_LOCKS_NOT_SUPPORTED 28
#define RSMERR_LOCKS_NOT_ENABLED 29
#define RSMERR_REBIND_NOT_ALLOWED 30
#define RSMERR_INSUFFICIENT_RESOURCES 31
#define RSMERR_INSUFFICIENT_MEM 32
#define RSMERR_MAP_FAILED 33
#define RSMERR_POLLFD_IN_USE 34
#define RSMERR_BARRIER_UNINITIALIZED 35
#define RSMERR_BARRIER_OPEN_FAILED 36
#define RSMERR_BARRIER_NOT_OPENED 37
#define RSMERR_BARRIER_FAILURE 38
#define RSMERR_REMOTE_NODE_UNREACHABLE 39
#define RSMERR_CONN_ABORTED 40
#define RSMERR_INTERRUPTED 41
#define RSMERR_TIMEOUT 42
#define RSMERR_BAD_APPID 43
#define RSMERR_BAD_CONF 44
#define RSMERR_SEG_NOT_CONNECTED 45
/* a driver-level (RSMPI) code that rsm_intr_signal_wait_pollfd returns */
#define RSMERR_BAD_ARGS_ERRORS 117
/* a driver-level (RSMPI) code: the transport cannot do this
 * (pb_rsm_memseg_import_call over shm) */
#define RSMERR_UNSUPPORTED_OPERATION 127

/* ---- flags and constants ---------------------------------------------- */

/* rsm_memseg_export_create flags */
#define RSM_ALLOW_REBIND 0x01
#define RSM_CREATE_SEG_DONTWAIT 0x02

/* permissions: three octal digits, owner/group/other, as in file modes */
#define RSM_PERM_NONE 0
#define RSM_PERM_READ 0400
#define RSM_PERM_WRITE 0200
#define RSM_PERM_RDWR (RSM_PERM_READ | RSM_PERM_WRITE)

/* rsm_intr_signal_post flags */
#define RSM_SIGPOST_NO_ACCUMULATE 0x02

/* rsm_scat_gath_t flags */
#define RSM_IMPLICIT_SIGPOST 0x01
/* Postbox's extension: in a putv, the last entry's first 4 bytes become
 * visible in the segment after everything else the putv writes (release
 * order), so a reader polling that word sees all of it once it sees the
 * word: data and its flag in one call.  The last entry is 4 to
 * PB_RSM_WORD_LAST_MAX bytes at a remote offset that is a multiple of 4. */
#define PB_RSM_PUT_FIRST_WORD_LAST 0x100
#define PB_RSM_WORD_LAST_MAX 4096
#define RSM_MAX_SGIOREQS 16

/* rsm_iovec_t io_type */
#define RSM_HANDLE_TYPE 1
#define RSM_VA_TYPE 2

/* direct-access and atomic size bits of rsmapi_controller_attr_t */
#define RSM_DAS8 1
#define RSM_DAS16 2
#define RSM_DAS32 4
#define RSM_DAS64 8

/* connection_state of rsm_remote_cntlr_t */
#define RSM_CONNECTION_INACTIVE 1
#define RSM_CONNECTION_ACTIVE 3

/* segment-id ranges reserved by Solaris; callers own 0x80000000 and up */
#define RSM_DRIVER_PRIVATE_ID_BASE 0x0
#define RSM_DRIVER_PRIVATE_ID_END 0x0FFFFF
#define RSM_CLUSTER_TRANSPORT_ID_BASE 0x100000
#define RSM_CLUSTER_TRANSPORT_ID_END 0x1FFFFF
#define RSM_RSMLIB_ID_BASE 0x200000
#define RSM_RSMLIB_ID_END 0x2FFFFF
#define RSM_DLPI_ID_BASE 0x300000
#define RSM_DLPI_ID_END 0x3FFFFF
#define RSM_HPC_ID_BASE 0x400000
#define RSM_HPC_ID_END 0x4FFFFF
#define RSM_OPS_ID_BASE 0x500000
#define RSM_OPS_ID_END 0x5FFFFF
#define RSM_USER_APP_ID_BASE 0x80000000u
#define RSM_USER_APP_ID_END 0xFFFFFFFFu

/* length of controller names in the topology and attribute structures */
#define RSM_MAXNAMELEN 256

typedef enum {
    RSM_MAP_NONE = 0,
    RSM_MAP_FIXED = 1,
    RSM_MAP_RESERVED = 2
} rsm_attribute_t;

typedef enum {
    RSM_BARRIER_SEGMENT = 0x01,
    RSM_BARRIER_NODE = 0x02,
    RSM_BARRIER_SEGMENT_THREAD = 0x11,
    RSM_BARRIER_NODE_THREAD = 0x12
} rsm_barrier_type_t;

#define RSM_BAR_DEFAULT RSM_BARRIER_SEGMENT

typedef enum {
    RSM_BARRIER_MODE_EXPLICIT = 0,
    RSM_BARRIER_MODE_IMPLICIT = 1
} rsm_barrier_mode_t;

/* what the barrier calls take; filled by rsm_memseg_import_init_barrier */
typedef struct {
    void *seg;
    uint16_t gnum;
    void *privdata;
} rsmapi_barrier_t;

typedef struct {
    rsm_node_id_t ae_node;
    rsm_permission_t ae_permission;
} rsmapi_access_entry_t;

typedef struct {
    uint_t attr_direct_access_sizes;
    uint_t attr_atomic_sizes;
    size_t attr_page_size;
    size_t attr_max_export_segment_size;
    size_t attr_tot_export_segment_size;
    ulong_t attr_max_export_segments;
    size_t attr_max_import_map_size;
    size_t attr_tot_import_map_size;
    ulong_t attr_max_import_segments;
} rsmapi_controller_attr_t;

/* ---- scatter/gather ---------------------------------------------------- */

typedef struct {
    int io_type; /* RSM_HANDLE_TYPE or RSM_VA_TYPE */
    union {
        rsm_localmemory_handle_t handle;
        char *vaddr;
    } local;
    size_t local_offset;
    size_t remote_offset;
    size_t transfer_length;
} rsm_iovec_t;

typedef struct {
    rsm_node_id_t local_nodeid;
    ulong_t io_request_count;  /* entries in iovec, at most RSM_MAX_SGIOREQS */
    ulong_t io_residual_count; /* set on return: entries not transferred */
    uint_t flags;              /* RSM_IMPLICIT_SIGPOST */
    rsm_memseg_import_handle_t remote_handle;
    rsm_iovec_t *iovec;
} rsm_scat_gath_t;

/**
 * Postbox's extension: the calling thread will poll @controller's traffic
 * itself, by rsm_intr_signal_wait(segment, 0) on its segments, until it
 * calls pb_rsm_progress_release.  Meanwhile the library's service thread is
 * not woken by arriving data (each such wake-up competes with the poller
 * for a core).  Claims nest: each needs its release.  The claim only
 * changes who reads: while the claimant does not poll, the tcp transport
 * reads every 10 ms itself.  A transport without a service thread (shm)
 * ignores it.
 * @return RSM_SUCCESS; RSMERR_BAD_CTLR_HNDL if @controller is not held.
 */
int pb_rsm_progress_claim(rsmapi_controller_handle_t controller);

/**
 * End one pb_rsm_progress_claim on @controller; after the last, the
 * service thread reads arriving data again.
 * @return RSM_SUCCESS; RSMERR_BAD_CTLR_HNDL if @controller is not held;
 *         RSMERR_BAD_MODE if @controller has no claim to end.
 */
int pb_rsm_progress_release(rsmapi_controller_handle_t controller);

/*
 * Postbox's extension: calls.  An importer asks the exporter's side of the
 * transport to run a handler on the exported segment, without the
 * exporter's application thread calling anything (accumulates, atomics and
 * locks of MPI one-sided communication over tcp).
 */

/*
 * Run on the exporter's service thread (pb_rsm_lock held) for each call an
 * importer makes on the segment; or on an application thread of the
 * exporter's process that waits inside the library (it reads the sockets
 * meanwhile).  Either way with the library's locks held: handlers never
 * run concurrently with each other nor with the segment's control calls; a
 * handler must be short and must not call the RSM API (it would deadlock).
 * @seg_base, @seg_size: the segment's memory.  @request_len bytes at
 * @request (NULL when 0).  The reply goes to @reply, which has room for
 * @reply_max bytes (NULL when 0: a PB_RSM_CALL_NO_REPLY call, or a caller
 * that takes none), its length to *@reply_len (0 on entry; a length above
 * @reply_max is a programming error: the reply is cut to @reply_max and
 * the exporter logs it).
 */
typedef void (*pb_rsm_call_handler_t)(void *arg, void *seg_base, size_t seg_size,
                                      const void *request, size_t request_len, void *reply,
                                      size_t reply_max, size_t *reply_len);
/* the longest request, and the longest reply */
#define PB_RSM_CALL_MAX (1u << 20)
/* flag: return once sent; the handler's reply is dropped; completion (and
 * order) as a put's: the next barrier on the import waits for it */
#define PB_RSM_CALL_NO_REPLY 1u

/**
 * Set the handler importers' calls on @memseg run (NULL: calls are refused
 * again), with @arg as its first argument.  Calls that arrive from then on
 * see the new handler; once this returns the old one is not running and
 * never runs again.  On shm the handler is stored and never run (an
 * importer on shm cannot call: it works on the mapped memory itself).
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL if @memseg is not an export
 *         segment.
 */
int pb_rsm_memseg_export_set_handler(rsm_memseg_export_handle_t memseg,
                                     pb_rsm_call_handler_t handler, void *arg);

/**
 * Run the exporter's handler on the segment with @request_len bytes of
 * @request and wait for its reply: at most @reply_max bytes into @reply,
 * their number into *@reply_len (unless NULL).  Calls and the import's
 * puts, gets and barriers are applied in the order they were made.
 * @flags: 0 or PB_RSM_CALL_NO_REPLY (the handler then gets no room for a
 * reply and the call returns once sent; in the implicit barrier mode,
 * once applied, as a put; @reply, @reply_max and @reply_len are unused).
 * Needs an import with write permission.
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_BAD_MODE (unknown flag);
 *         RSMERR_BAD_LENGTH (@request_len or @reply_max above
 *         PB_RSM_CALL_MAX, or @reply NULL with @reply_max > 0);
 *         RSMERR_BAD_ADDR (@request NULL with @request_len > 0);
 *         RSMERR_PERM_DENIED (the import lacks write permission, or the
 *         exporter set no handler: logged, saying which; after a
 *         PB_RSM_CALL_NO_REPLY call without a handler the next barrier
 *         returns it); RSMERR_UNSUPPORTED_OPERATION (shm: the exporter's
 *         side has no thread to run it); RSMERR_CONN_ABORTED (the exporter
 *         died, unpublished or destroyed the segment; with several rails,
 *         also when the rail carrying the call broke before its reply:
 *         whether the handler ran is then unknown, and, once, when a
 *         PB_RSM_CALL_NO_REPLY call sent before it was lost with a rail
 *         that broke); RSMERR_INSUFFICIENT_MEM
 *         (the exporter had no memory for the request or reply);
 *         RSMERR_TIMEOUT (with POSTBOX_TCP_REPLY_TIMEOUT_MS set: the
 *         exporter did not answer in time; the handler may still run).
 */
int pb_rsm_memseg_import_call(rsm_memseg_import_handle_t im_memseg, const void *request,
                              size_t request_len, void *reply, size_t reply_max, size_t *reply_len,
                              unsigned flags);

/* ---- topology ---------------------------------------------------------- */

typedef struct {
    rsm_node_id_t remote_nodeid;
    char remote_cntlrname[RSM_MAXNAMELEN];
    rsm_addr_t remote_hwaddr;
    uint_t connection_state; /* RSM_CONNECTION_ACTIVE when usable */
} rsm_remote_cntlr_t;

typedef struct {
    char cntlr_name[RSM_MAXNAMELEN];
    rsm_addr_t local_hwaddr;
    int remote_cntlr_count;
} rsm_connections_hdr_t;

typedef struct {
    rsm_connections_hdr_t hdr;
    rsm_remote_cntlr_t remote_cntlr[1]; /* remote_cntlr_count entries */
} rsm_connections_t;

typedef struct {
    rsm_node_id_t local_nodeid;
    uint_t local_cntlr_count;
} rsm_topology_hdr_t;

typedef struct {
    rsm_topology_hdr_t topology_hdr;
    rsm_connections_t *connections[1]; /* local_cntlr_count entries */
} rsm_topology_t;

/* ---- controllers ------------------------------------------------------- */

/**
 * Get a handle to the controller (transport) called @name: "shm" (alias
 * "loopback", "shm0") reaches processes of this node.  A name may carry an
 * instance number ("shm0").  Repeated gets return the same handle and must
 * be balanced by releases.
 * @return RSM_SUCCESS; RSMERR_CTLR_NOT_PRESENT if no such controller, or
 *         if it cannot start ("ofi": libfabric cannot be loaded; the
 *         reason goes to the log);
 *         RSMERR_BAD_ADDR if @name or @controller is NULL;
 *         RSMERR_INSUFFICIENT_MEM.
 */
int rsm_get_controller(char *name, rsmapi_controller_handle_t *controller);

/**
 * Same as rsm_get_controller; @version must be RSM_VERSION.
 * @return as rsm_get_controller, or RSMERR_BAD_LIBRARY_VERSION.
 */
int rsm_get_controller_version(char *name, uint_t version, rsmapi_controller_handle_t *controller);

/**
 * Fill @attr with the limits of @controller.
 * @return RSM_SUCCESS; RSMERR_BAD_CTLR_HNDL; RSMERR_BAD_ADDR if @attr NULL.
 */
int rsm_get_controller_attr(rsmapi_controller_handle_t controller, rsmapi_controller_attr_t *attr);

/**
 * Drop one reference taken by rsm_get_controller.  Segments created through
 * the controller stay valid until destroyed or disconnected.
 * @return RSM_SUCCESS; RSMERR_BAD_CTLR_HNDL if not held.
 */
int rsm_release_controller(rsmapi_controller_handle_t controller);

/* ---- topology ---------------------------------------------------------- */

/**
 * Allocate and return the interconnect topology: this node's id, each
 * controller, and the nodes it reaches.  After postbox_job_init the node
 * id is the job's (postbox/job.h); the "shm" controller reaches the local
 * node only (state RSM_CONNECTION_ACTIVE), and other nodes of the job are
 * listed under the controllers that reach them.  Free with
 * rsm_free_interconnect_topology().
 * @return RSM_SUCCESS; RSMERR_BAD_TOPOLOGY_PTR if @topology_data is NULL;
 *         RSMERR_INSUFFICIENT_MEM.
 */
int rsm_get_interconnect_topology(rsm_topology_t **topology_data);

/** Free a topology returned by rsm_get_interconnect_topology (NULL is ok). */
void rsm_free_interconnect_topology(rsm_topology_t *topology_data);

/* ---- export side ------------------------------------------------------- */

/**
 * Make [@vaddr, @vaddr + @size) of this process an export segment.  Both
 * must be multiples of the page size.  The memory keeps its contents and
 * stays usable by this process; it becomes shareable (its pages are
 * replaced by shared pages holding the same data).  @flags: RSM_ALLOW_REBIND,
 * RSM_CREATE_SEG_DONTWAIT.
 * @return RSM_SUCCESS; RSMERR_BAD_CTLR_HNDL; RSMERR_BAD_ADDR (NULL,
 *         unmapped or not writable memory; over shm also memory overlapping
 *         another shm segment of this process, whose shared pages it would
 *         take away: logged); RSMERR_BAD_MEM_ALIGNMENT; RSMERR_BAD_LENGTH;
 *         RSMERR_BAD_MODE (unknown flag); RSMERR_INSUFFICIENT_MEM;
 *         RSMERR_INSUFFICIENT_RESOURCES.
 */
int rsm_memseg_export_create(rsmapi_controller_handle_t controller,
                             rsm_memseg_export_handle_t *memseg, void *vaddr, size_t size,
                             uint_t flags);

/**
 * Destroy an export segment; its memory becomes private to this process
 * again, with the data it holds.  The segment must be unpublished first
 * (unpublish is what disconnects importers).
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_SEG_ALREADY_PUBLISHED
 *         while published.
 */
int rsm_memseg_export_destroy(rsm_memseg_export_handle_t memseg);

/**
 * Back the segment with new memory [@vaddr, @vaddr + @size) (the same size,
 * page aligned) without importers noticing; the new memory's contents become
 * the segment's, the old memory becomes private again.  @off is unused.
 * Over shm the new contents are copied into the pages importers share, so
 * a put that runs during the rebind may be lost in whole or in part (a
 * PB_RSM_PUT_FIRST_WORD_LAST put may show its word over bytes of the new
 * memory): rebind while importers are quiet.
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_REBIND_NOT_ALLOWED if
 *         created without RSM_ALLOW_REBIND; RSMERR_BAD_ADDR (NULL,
 *         unmapped or not writable memory; over shm also memory overlapping
 *         another shm segment of this process: logged); RSMERR_BAD_MEM_ALIGNMENT;
 *         RSMERR_BAD_LENGTH; RSMERR_INSUFFICIENT_MEM.
 */
int rsm_memseg_export_rebind(rsm_memseg_export_handle_t memseg, void *vaddr, offset_t off,
                             size_t size);

/**
 * Publish the segment under *@segment_id (0: the library picks an id in
 * the user range and stores it there) for the nodes of @access_list.  A NULL
 * list (length 0) lets every node import with RSM_PERM_RDWR for the owner.
 * Caller ids must lie in the user range (RSM_USER_APP_ID_BASE and up) or the
 * HPC range (RSM_HPC_ID_BASE..END).
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_SEG_ALREADY_PUBLISHED;
 *         RSMERR_BAD_ADDR (@segment_id NULL); RSMERR_BAD_ACL;
 *         RSMERR_BAD_PERMS; RSMERR_RESERVED_SEGID; RSMERR_SEGID_IN_USE;
 *         RSMERR_INSUFFICIENT_RESOURCES.
 */
int rsm_memseg_export_publish(rsm_memseg_export_handle_t memseg, rsm_memseg_id_t *segment_id,
                              rsmapi_access_entry_t access_list[], uint_t access_list_length);

/**
 * Replace the access list of a published segment.  Applies to new
 * connections only; existing importers keep theirs.
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_SEG_NOT_PUBLISHED;
 *         RSMERR_BAD_ACL; RSMERR_BAD_PERMS.
 */
int rsm_memseg_export_republish(rsm_memseg_export_handle_t memseg,
                                rsmapi_access_entry_t access_list[], uint_t access_list_length);

/**
 * Withdraw the segment: no new imports, and every existing importer is
 * disconnected (its next put, get, barrier or signal returns
 * RSMERR_CONN_ABORTED, and a mapping it holds no longer reaches this
 * process's memory).
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_SEG_NOT_PUBLISHED;
 *         RSMERR_POLLFD_IN_USE.
 */
int rsm_memseg_export_unpublish(rsm_memseg_export_handle_t memseg);

/* ---- import side ------------------------------------------------------- */

/**
 * Connect to segment @segment_id published by node @node_id, asking for
 * @perm (RSM_PERM_READ, RSM_PERM_WRITE or RSM_PERM_RDWR).  The new import
 * starts in RSM_BARRIER_MODE_IMPLICIT.
 * @return RSM_SUCCESS; RSMERR_BAD_CTLR_HNDL; RSMERR_BAD_ADDR (@im_memseg
 *         NULL); RSMERR_BAD_PERMS; RSMERR_SEG_NOT_PUBLISHED;
 *         RSMERR_SEG_NOT_PUBLISHED_TO_NODE; RSMERR_PERM_DENIED (more
 *         permission than granted; not of this job, either side; or the
 *         process answering the segment's rendezvous socket is of another
 *         user: logged);
 *         RSMERR_REMOTE_NODE_UNREACHABLE (the controller does not reach
 *         @node_id); RSMERR_TIMEOUT (the exporter did not answer within
 *         5 s, or over shm kept turning the connection away that long,
 *         busy with too many handshakes; over tcp the lookup, handshake
 *         and attach together, a time POSTBOX_TCP_REQUEST_TIMEOUT_MS
 *         changes);
 *         RSMERR_CONN_ABORTED (the exporter announced a segment
 *         size of 0 or above the largest it can export, 2^40 bytes; over
 *         shm also when a descriptor it handed over is not a memfd of
 *         shared memory (not hugetlbfs) sealed against shrinking, or
 *         holds fewer bytes than its mapping needs, so that no later
 *         access to the segment can fault: logged);
 *         RSMERR_INSUFFICIENT_MEM; RSMERR_INSUFFICIENT_RESOURCES.
 */
int rsm_memseg_import_connect(rsmapi_controller_handle_t controller, rsm_node_id_t node_id,
                              rsm_memseg_id_t segment_id, rsm_permission_t perm,
                              rsm_memseg_import_handle_t *im_memseg);

/**
 * Disconnect an import and free its handle.
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_SEG_STILL_MAPPED;
 *         RSMERR_POLLFD_IN_USE.
 */
int rsm_memseg_import_disconnect(rsm_memseg_import_handle_t im_memseg);

/**
 * Copy @length bytes from @src_addr to offset @offset of the segment.  In
 * implicit barrier mode the call returns after the data is in the
 * exporter's memory (an open/close barrier around it).
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_PERM_DENIED (read-only
 *         import); RSMERR_BAD_ADDR (@src_addr NULL); RSMERR_BAD_OFFSET,
 *         RSMERR_BAD_LENGTH (out of the segment); RSMERR_CONN_ABORTED (the
 *         exporter died, unpublished or destroyed the segment);
 *         RSMERR_BARRIER_FAILURE; RSMERR_TIMEOUT (tcp, implicit barrier
 *         mode, with POSTBOX_TCP_REPLY_TIMEOUT_MS set: the exporter did not
 *         confirm the put in time; it may still apply it).
 */
int rsm_memseg_import_put(rsm_memseg_import_handle_t im_memseg, off_t offset, void *src_addr,
                          size_t length);

/**
 * Copy @length bytes from offset @offset of the segment to @dst_addr.
 * @return as rsm_memseg_import_put, with RSMERR_PERM_DENIED for a
 *         write-only import; RSMERR_TIMEOUT (tcp, with
 *         POSTBOX_TCP_REPLY_TIMEOUT_MS set: the exporter did not answer in
 *         time): @dst_addr then holds what had arrived and nothing more is
 *         written to it, whenever the answer comes; RSMERR_CONN_ABORTED
 *         also, once, with several tcp rails, when a PB_RSM_CALL_NO_REPLY
 *         call made before it was lost with a rail that broke (calls are
 *         never sent again; the get that follows would not see it).
 */
int rsm_memseg_import_get(rsm_memseg_import_handle_t im_memseg, off_t offset, void *dst_addr,
                          size_t length);

/**
 * Put or get @rep_cnt items of 8, 16, 32 or 64 bits.  @offset must be
 * aligned to the item size (RSMERR_MISALIGNED_OFFSET otherwise); other
 * errors as rsm_memseg_import_put/get.
 */
int rsm_memseg_import_put8(rsm_memseg_import_handle_t im_memseg, off_t offset, uint8_t *datap,
                           ulong_t rep_cnt);
int rsm_memseg_import_put16(rsm_memseg_import_handle_t im_memseg, off_t offset, uint16_t *datap,
                            ulong_t rep_cnt);
int rsm_memseg_import_put32(rsm_memseg_import_handle_t im_memseg, off_t offset, uint32_t *datap,
                            ulong_t rep_cnt);
int rsm_memseg_import_put64(rsm_memseg_import_handle_t im_memseg, off_t offset, uint64_t *datap,
                            ulong_t rep_cnt);
int rsm_memseg_import_get8(rsm_memseg_import_handle_t im_memseg, off_t offset, uint8_t *datap,
                           ulong_t rep_cnt);
int rsm_memseg_import_get16(rsm_memseg_import_handle_t im_memseg, off_t offset, uint16_t *datap,
                            ulong_t rep_cnt);
int rsm_memseg_import_get32(rsm_memseg_import_handle_t im_memseg, off_t offset, uint32_t *datap,
                            ulong_t rep_cnt);
int rsm_memseg_import_get64(rsm_memseg_import_handle_t im_memseg, off_t offset, uint64_t *datap,
                            ulong_t rep_cnt);

/**
 * Scatter/gather put or get: transfer each entry of @sg_io->iovec (at most
 * RSM_MAX_SGIOREQS) to or from the import @sg_io->remote_handle, in order
 * (over tcp a putv is one write).  On return io_residual_count holds the
 * number of entries not known to be transferred.  With
 * RSM_IMPLICIT_SIGPOST in flags a putv also posts a signal; with
 * PB_RSM_PUT_FIRST_WORD_LAST the last entry's first word lands last.
 * @return RSM_SUCCESS; RSMERR_BAD_SGIO (NULL, bad count or io_type);
 *         RSMERR_BAD_MODE (a flag other than these two, for putv and getv);
 *         RSMERR_BAD_LOCALMEM_HNDL; RSMERR_BAD_LENGTH and RSMERR_BAD_OFFSET
 *         (PB_RSM_PUT_FIRST_WORD_LAST: a last entry outside 4 ..
 *         PB_RSM_WORD_LAST_MAX bytes, or at an offset not a multiple of 4);
 *         errors of put/get for the failing entry.
 */
int rsm_memseg_import_putv(rsm_scat_gath_t *sg_io);
int rsm_memseg_import_getv(rsm_scat_gath_t *sg_io);

/**
 * Map [@offset, @offset + @length) of the segment into this process and
 * return its address in *@address.  RSM_MAP_NONE lets the system choose;
 * RSM_MAP_FIXED maps at *@address (page aligned).  @perm may not exceed the
 * import's.  One mapping per import at a time.
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_BAD_ADDR;
 *         RSMERR_SEG_ALREADY_MAPPED; RSMERR_BAD_PERMS; RSMERR_PERM_DENIED;
 *         RSMERR_MISALIGNED_OFFSET; RSMERR_BAD_MEM_ALIGNMENT (fixed address
 *         not page aligned); RSMERR_BAD_OFFSET; RSMERR_BAD_LENGTH;
 *         RSMERR_MAP_FAILED (the transport cannot map, e.g. between nodes);
 *         RSMERR_CONN_ABORTED.
 */
int rsm_memseg_import_map(rsm_memseg_import_handle_t im_memseg, void **address,
                          rsm_attribute_t attr, rsm_permission_t perm, off_t offset, size_t length);

/**
 * Remove the mapping made by rsm_memseg_import_map.
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_SEG_NOT_MAPPED.
 */
int rsm_memseg_import_unmap(rsm_memseg_import_handle_t im_memseg);

/* ---- barriers ---------------------------------------------------------- */

/**
 * Initialise @barrier for @im_memseg; needed before any explicit barrier.
 * @type is one of rsm_barrier_type_t (all behave as span-of-segment).
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_BAD_BARRIER_PTR;
 *         RSMERR_BAD_MODE (unknown type).
 */
int rsm_memseg_import_init_barrier(rsm_memseg_import_handle_t im_memseg, rsm_barrier_type_t type,
                                   rsmapi_barrier_t *barrier);

/**
 * Open an error-detection span: failures of the puts that follow are
 * reported by rsm_memseg_import_close_barrier.
 * @return RSM_SUCCESS; RSMERR_BAD_BARRIER_PTR; RSMERR_BARRIER_UNINITIALIZED;
 *         RSMERR_BARRIER_OPEN_FAILED (already open); RSMERR_CONN_ABORTED.
 */
int rsm_memseg_import_open_barrier(rsmapi_barrier_t *barrier);

/**
 * Make every write issued before this call complete before any issued
 * after it.
 * @return RSM_SUCCESS; RSMERR_BAD_BARRIER_PTR; RSMERR_BARRIER_UNINITIALIZED;
 *         RSMERR_BARRIER_NOT_OPENED; RSMERR_BARRIER_FAILURE;
 *         RSMERR_CONN_ABORTED.
 */
int rsm_memseg_import_order_barrier(rsmapi_barrier_t *barrier);

/**
 * Close the span: returns when every put since the open is in the
 * exporter's memory, or reports that one was lost.
 * @return RSM_SUCCESS; RSMERR_BAD_BARRIER_PTR; RSMERR_BARRIER_UNINITIALIZED;
 *         RSMERR_BARRIER_NOT_OPENED; RSMERR_BARRIER_FAILURE;
 *         RSMERR_CONN_ABORTED (the exporter went away during the span;
 *         or, with several tcp rails, one broke with calls without reply
 *         unconfirmed (no reply on their rail since): they may be lost);
 *         RSMERR_PERM_DENIED (a call without reply of the span was refused:
 *         the exporter has no handler; logged);
 *         RSMERR_TIMEOUT (tcp, with POSTBOX_TCP_REPLY_TIMEOUT_MS set: the
 *         exporter did not answer in time; the puts may still be applied).
 */
int rsm_memseg_import_close_barrier(rsmapi_barrier_t *barrier);

/**
 * Forget @barrier (closing it first if open).
 * @return RSM_SUCCESS; RSMERR_BAD_BARRIER_PTR; RSMERR_BARRIER_UNINITIALIZED.
 */
int rsm_memseg_import_destroy_barrier(rsmapi_barrier_t *barrier);

/**
 * Get or set the barrier mode of an import: RSM_BARRIER_MODE_IMPLICIT (the
 * default: each put and get is its own span) or RSM_BARRIER_MODE_EXPLICIT.
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_BAD_MODE; RSMERR_BAD_ADDR
 *         (get with NULL @mode).
 */
int rsm_memseg_import_get_mode(rsm_memseg_import_handle_t im_memseg, rsm_barrier_mode_t *mode);
int rsm_memseg_import_set_mode(rsm_memseg_import_handle_t im_memseg, rsm_barrier_mode_t mode);

/* ---- signals ----------------------------------------------------------- */

/**
 * Post an event.  @memseg is an import handle (signals the exporter) or an
 * export handle (signals every importer).  Events accumulate unless @flags
 * holds RSM_SIGPOST_NO_ACCUMULATE (dropped if one is already pending).
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_BAD_MODE (unknown flag);
 *         RSMERR_SEG_NOT_PUBLISHED (export handle); RSMERR_CONN_ABORTED.
 */
int rsm_intr_signal_post(void *memseg, uint_t flags);

/**
 * Wait up to @timeout milliseconds (-1: forever, 0: poll) for an event on
 * @memseg (export handle: posted by an importer; import handle: posted by
 * the exporter) and consume it.  Sleeps in the kernel; uses no CPU while
 * waiting.
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_TIMEOUT;
 *         RSMERR_INTERRUPTED (a signal handler ran); RSMERR_CONN_ABORTED
 *         (import whose exporter went away); RSMERR_SEG_NOT_PUBLISHED.
 */
int rsm_intr_signal_wait(void *memseg, int timeout);

/**
 * Get a pollfd for @memseg, usable only with rsm_intr_signal_wait_pollfd.
 * While held, unpublish and disconnect return RSMERR_POLLFD_IN_USE.
 * An export segment must be published (its events exist only then).
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_BAD_ADDR;
 *         RSMERR_SEG_NOT_PUBLISHED; RSMERR_INSUFFICIENT_RESOURCES.
 */
int rsm_memseg_get_pollfd(void *memseg, struct pollfd *poll_fd);

/**
 * Release the pollfd reference taken by rsm_memseg_get_pollfd.
 * @return RSM_SUCCESS; RSMERR_BAD_SEG_HNDL; RSMERR_POLLFD_IN_USE if none held.
 */
int rsm_memseg_release_pollfd(void *memseg);

/**
 * Wait up to @timeout ms for an event on any of the @nfds RSM pollfds in
 * @fds; sets revents to POLLRDNORM on those with an event (consuming it)
 * and *@numfdsp to their number.
 * @return RSM_SUCCESS; RSMERR_TIMEOUT; RSMERR_INTERRUPTED;
 *         RSMERR_BAD_ARGS_ERRORS (NULL, too many, or not an RSM pollfd).
 */
int rsm_intr_signal_wait_pollfd(struct pollfd fds[], nfds_t nfds, int timeout, int *numfdsp);

/* ---- local memory handles ---------------------------------------------- */

/**
 * Describe local memory [@local_vaddr, +@len) for use in an rsm_iovec_t of
 * type RSM_HANDLE_TYPE.
 * @return RSM_SUCCESS; RSMERR_BAD_CTLR_HNDL; RSMERR_BAD_ADDR;
 *         RSMERR_BAD_LENGTH; RSMERR_INSUFFICIENT_MEM.
 */
int rsm_create_localmemory_handle(rsmapi_controller_handle_t controller,
                                  rsm_localmemory_handle_t *local_handle_p, char *local_vaddr,
                                  size_t len);

/**
 * Free a local memory handle.
 * @return RSM_SUCCESS; RSMERR_BAD_CTLR_HNDL; RSMERR_BAD_LOCALMEM_HNDL.
 */
int rsm_free_localmemory_handle(rsmapi_controller_handle_t controller,
                                rsm_localmemory_handle_t local_handle);

/**
 * Look up the segment-id range reserved for @appid in the reservation file
 * (POSTBOX_RSM_SEGMENTID_FILE, default /etc/rsm/rsm.segmentid; lines
 * "reserve <appid> <hexbase> <length>").
 * @return RSM_SUCCESS; RSMERR_BAD_ADDR; RSMERR_BAD_APPID (not listed);
 *         RSMERR_BAD_CONF (file missing or malformed).
 */
int rsm_get_segmentid_range(const char *appid, rsm_memseg_id_t *baseid, uint32_t *length);

/* ---- Postbox additions -------------------------------------------------- */

/** A static, human-readable description of an RSM return code. */
const char *rsm_strerror(int code);

/**
 * This process's node id (set by the launcher through POSTBOX_NODE_ID;
 * 0 outside a job).
 */
rsm_node_id_t rsm_get_local_nodeid(void);

#ifdef __cplusplus
}
#endif

#endif /* POSTBOX_RSM_H */
