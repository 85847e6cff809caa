/*
 * The RSM transport interface: one ops table per transport (shm, tcp, ofi),
 * registered in transport.c.  The dispatcher in rsm.c has
 * checked every argument (handles, bounds, alignment, permissions of the
 * import) before an op runs, so ops check only what the transport alone
 * can know.  Ops return pb_status_t; rsm.c maps it to RSMERR_* in one table.
 */
#ifndef PB_RSM_TRANSPORT_H
#define PB_RSM_TRANSPORT_H

#include <postbox/rsm.h>
#include <stddef.h>

#include "util/status.h"

typedef struct __rsmapi_controller_handle pb_rsm_controller_t;
typedef struct __rsm_memseg_export_handle pb_rsm_export_t;
typedef struct __rsm_memseg_import_handle pb_rsm_import_t;

/* what a transport can do; the conformance tests skip by these */
typedef struct {
    int can_map;             /* rsm_memseg_import_map gives shared pages */
    size_t max_segment_size; /* largest export segment */
    size_t page_size;        /* alignment of export memory and map offsets */
    int reaches_job_nodes;   /* 1: every node of the job; 0: this node only */
} pb_rsm_caps_t;

/* Make the transport ready for use, when rsm_get_controller asks for it
 * (every time: it returns at once once done).  Optional: NULL when there
 * is nothing to prepare.  @return PB_OK, or an error (logged with its
 * cause) that makes the controller not present. */
typedef pb_status_t (*pb_rsm_open_func_t)(void);
typedef void (*pb_rsm_query_func_t)(pb_rsm_caps_t *caps_p);
/* whether this transport can reach @node from this process */
typedef int (*pb_rsm_reaches_func_t)(rsm_node_id_t node);

typedef pb_status_t (*pb_rsm_export_create_func_t)(pb_rsm_export_t *seg);
typedef void (*pb_rsm_export_destroy_func_t)(pb_rsm_export_t *seg);
typedef pb_status_t (*pb_rsm_export_rebind_func_t)(pb_rsm_export_t *seg, void *vaddr);
/* @segid_p: 0 asks the transport to choose; set on success */
typedef pb_status_t (*pb_rsm_export_publish_func_t)(pb_rsm_export_t *seg, rsm_memseg_id_t *segid_p);
typedef pb_status_t (*pb_rsm_export_unpublish_func_t)(pb_rsm_export_t *seg);

typedef pb_status_t (*pb_rsm_import_connect_func_t)(pb_rsm_import_t *im);
typedef void (*pb_rsm_import_disconnect_func_t)(pb_rsm_import_t *im);
typedef pb_status_t (*pb_rsm_put_func_t)(pb_rsm_import_t *im, size_t offset, const void *src,
                                         size_t length);
/* put whose first 4 bytes land after the rest (release order), then, with
 * @signal, a signal; @length 4 .. PB_RSM_WORD_LAST_MAX, @offset a multiple
 * of 4 (checked by rsm.c).  Required of a transport without put_vector. */
typedef pb_status_t (*pb_rsm_put_word_last_func_t)(pb_rsm_import_t *im, size_t offset,
                                                   const void *src, size_t length, int signal);
/* one entry of a vector put */
typedef struct {
    size_t offset;   /* in the segment */
    const void *src; /* local */
    size_t length;
} pb_rsm_put_entry_t;
/* Put @count entries in order, as one transfer (tcp: one write, so the
 * receiver reads them together).  With @word_last the last entry's first 4
 * bytes land after everything else (its length and offset checked as for
 * put_word_last); with @signal a signal (accumulating) follows.  Optional:
 * NULL puts entry by entry, with put_word_last for the last entry. */
typedef pb_status_t (*pb_rsm_put_vector_func_t)(pb_rsm_import_t *im,
                                                const pb_rsm_put_entry_t *entries, size_t count,
                                                int signal, int word_last);
typedef pb_status_t (*pb_rsm_get_func_t)(pb_rsm_import_t *im, size_t offset, void *dst,
                                         size_t length);
/* Run the exporter's call handler on @request (pb_rsm_memseg_import_call:
 * lengths at most PB_RSM_CALL_MAX, @reply NULL only when @reply_max is 0,
 * checked by rsm.c); set *@reply_len_p to the reply's length.  With
 * @no_reply return once sent (the reply is dropped).  @return
 * PB_ERR_PERMISSION when the exporter has no handler (logged),
 * PB_ERR_UNSUPPORTED when the transport cannot reach the exporter's side,
 * or a put's errors. */
typedef pb_status_t (*pb_rsm_call_func_t)(pb_rsm_import_t *im, const void *request,
                                          size_t request_len, void *reply, size_t reply_max,
                                          size_t *reply_len_p, int no_reply);
/* map [offset, offset + length) at *address_p (fixed) or anywhere */
typedef pb_status_t (*pb_rsm_map_func_t)(pb_rsm_import_t *im, void **address_p, int fixed,
                                         int writable, size_t offset, size_t length);
typedef void (*pb_rsm_unmap_func_t)(pb_rsm_import_t *im);

typedef pb_status_t (*pb_rsm_barrier_open_func_t)(pb_rsm_import_t *im);
typedef pb_status_t (*pb_rsm_barrier_order_func_t)(pb_rsm_import_t *im);
typedef pb_status_t (*pb_rsm_barrier_close_func_t)(pb_rsm_import_t *im);

typedef pb_status_t (*pb_rsm_export_signal_post_func_t)(pb_rsm_export_t *seg, int accumulate);
typedef pb_status_t (*pb_rsm_import_signal_post_func_t)(pb_rsm_import_t *im, int accumulate);
/* timeout_ms: -1 forever, 0 poll */
typedef pb_status_t (*pb_rsm_export_signal_wait_func_t)(pb_rsm_export_t *seg, int timeout_ms);
typedef pb_status_t (*pb_rsm_import_signal_wait_func_t)(pb_rsm_import_t *im, int timeout_ms);

/* The 32-bit futex word that changes when an event arrives for the
 * segment, and whether an event is pending (consuming it if so); used by
 * rsm_intr_signal_wait_pollfd to wait on several segments at once. */
typedef const void *(*pb_rsm_export_event_word_func_t)(pb_rsm_export_t *seg);
typedef const void *(*pb_rsm_import_event_word_func_t)(pb_rsm_import_t *im);
/* Count a thread sleeping on @seg's event word outside the transport's own
 * signal wait (@delta +1 before it sleeps, -1 after), for a transport whose
 * posts from other processes wake the word only when it has waiters.
 * Optional: NULL when every post wakes it. */
typedef void (*pb_rsm_export_event_waiters_func_t)(pb_rsm_export_t *seg, int delta);
/* The same for an import's event word, for a transport that reads what
 * brings an import's events only while someone waits for them.  Optional:
 * NULL when the transport always reads them. */
typedef void (*pb_rsm_import_event_waiters_func_t)(pb_rsm_import_t *im, int delta);
/* A thread claims (@delta +1) or stops claiming (-1) the progress of the
 * transport's traffic (pb_rsm_progress_claim).  Optional: NULL for a
 * transport that has no thread of its own to keep quiet. */
typedef void (*pb_rsm_progress_claim_func_t)(int delta);

/* Controller instances ("rails": a transport with several address pairs
 * to each node) and their links, for rsm_get_interconnect_topology.
 * Optional: without them a transport is one controller whose links to the
 * nodes it reaches are all active. */
typedef int (*pb_rsm_rail_count_func_t)(void);
/* the hardware address of rail @rail's peer on @node and the link's state
 * (RSM_CONNECTION_ACTIVE or RSM_CONNECTION_INACTIVE) */
typedef void (*pb_rsm_rail_link_func_t)(int rail, rsm_node_id_t node, rsm_addr_t *hwaddr_p,
                                        uint_t *state_p);

typedef struct {
    const char *name;
    pb_rsm_open_func_t open; /* NULL: nothing to prepare (ofi loads libfabric) */
    pb_rsm_query_func_t query;
    pb_rsm_rail_count_func_t rail_count; /* NULL: one */
    pb_rsm_rail_link_func_t rail_link;   /* NULL: hwaddr = node id, active */
    pb_rsm_reaches_func_t reaches;
    pb_rsm_export_create_func_t export_create;
    pb_rsm_export_destroy_func_t export_destroy;
    pb_rsm_export_rebind_func_t export_rebind;
    pb_rsm_export_publish_func_t export_publish;
    pb_rsm_export_unpublish_func_t export_unpublish;
    pb_rsm_import_connect_func_t import_connect;
    pb_rsm_import_disconnect_func_t import_disconnect;
    pb_rsm_put_func_t put;
    pb_rsm_put_word_last_func_t put_word_last; /* unused with put_vector */
    pb_rsm_put_vector_func_t put_vector;       /* NULL: entry by entry */
    pb_rsm_get_func_t get;
    pb_rsm_call_func_t call;
    pb_rsm_map_func_t map;
    pb_rsm_unmap_func_t unmap;
    pb_rsm_barrier_open_func_t barrier_open;
    pb_rsm_barrier_order_func_t barrier_order;
    pb_rsm_barrier_close_func_t barrier_close;
    pb_rsm_export_signal_post_func_t export_signal_post;
    pb_rsm_import_signal_post_func_t import_signal_post;
    pb_rsm_export_signal_wait_func_t export_signal_wait;
    pb_rsm_import_signal_wait_func_t import_signal_wait;
    pb_rsm_export_event_word_func_t export_event_word;
    pb_rsm_import_event_word_func_t import_event_word;
    pb_rsm_export_event_waiters_func_t export_event_waiters; /* NULL: posts always wake */
    pb_rsm_import_event_waiters_func_t import_event_waiters; /* NULL: events always read */
    pb_rsm_progress_claim_func_t progress_claim;             /* NULL: nothing to claim */
} pb_rsm_transport_ops_t;

/* at most this many transports are registered */
#define PB_RSM_TRANSPORTS_MAX 8

/* Whether [@vaddr, @vaddr + @size) is mapped readable and writable in this
 * process (from /proc/self/maps), as an export segment's memory must be:
 * importers write it.  @return PB_OK, PB_ERR_BAD_ADDRESS (a page unmapped
 * or not writable), or PB_ERR_IO (maps unreadable: logged). */
pb_status_t pb_rsm_check_writable(const void *vaddr, size_t size);

/* The transport called @name ("shm", "shm0", "loopback", ...), or NULL. */
const pb_rsm_transport_ops_t *pb_rsm_transport_find(const char *name);

/* The registered transports, in order; *count_p gets their number. */
const pb_rsm_transport_ops_t *const *pb_rsm_transport_list(size_t *count_p);

extern const pb_rsm_transport_ops_t pb_shm_transport;
extern const pb_rsm_transport_ops_t pb_tcp_transport;
extern const pb_rsm_transport_ops_t pb_ofi_transport; /* (when PB_HAVE_OFI) */

#endif
