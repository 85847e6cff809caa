/*
 * What the tcp transport offers the rest of the library besides its ops
 * table (transport.h): its part of the job's key-value exchange.
 */
#ifndef PB_RSM_TCP_H
#define PB_RSM_TCP_H

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

#endif
