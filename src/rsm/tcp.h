/*
 * What the tcp transport offers the rest of the library besides its ops
 * table (transport.h): its part of the job's key-value exchange, and to
 * the ofi transport the way to an exporter of another network namespace
 * or host (its LOOKUP relay) and the address this node is reached at.
 */
#ifndef PB_RSM_TCP_H
#define PB_RSM_TCP_H

#include <netinet/in.h>
#include <postbox/rsm.h>
#include <stdint.h>

#include "boot/boot.h"
#include "util/status.h"

/* The tcp transport's contribution to postbox_job_init's exchange
 * (boot/boot.h; registered in transport.c): listen for other nodes'
 * importers (starting the RSM service thread if needed) and put
 * pb-tcp-<rank> = "a.b.c.d:port", or "a.b.c.d,e.f.g.h:port" with one
 * address per rail, so that importers on other nodes can ask any process
 * of a node where a segment of that node is exported.  A process that
 * cannot listen warns and puts nothing.
 * @return PB_OK, or what @put returned. */
pb_status_t pb_tcp_kvs_contribute(int rank, pb_boot_kvs_put_func_t put, void *ctx);

/* Where the ofi exporter of segment @segid of @node takes rendezvous
 * connections over TCP, asked (authenticated with the job's key) of the
 * job's processes on @node, which read it from their node's ofi
 * rendezvous socket: for a node whose abstract sockets this process
 * cannot see.  Needs a launched job (its secret, its KVS).  Caller holds
 * no lock.  @return PB_OK with *@peer_p; PB_ERR_NOT_PUBLISHED,
 * PB_ERR_UNREACHABLE (no process of @node answered, or its exporter takes
 * no TCP connection), PB_ERR_TIMEOUT (@deadline, pb_time_now_ms, passed). */
pb_status_t pb_tcp_ofi_lookup(rsm_node_id_t node, rsm_memseg_id_t segid, int64_t deadline,
                              struct sockaddr_in *peer_p);

/* The first address this process gives other nodes (POSTBOX_TCP_ADDR,
 * the --netns address, else the host's), network order, in *@addr_p.
 * @return 1, or 0 when it has none. */
int pb_tcp_node_address(uint32_t *addr_p);

#endif
