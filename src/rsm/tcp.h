/*
 * What the tcp transport offers the rest of the library besides its ops
 * table (transport.h): the address other nodes reach this process at.
 */
#ifndef PB_RSM_TCP_H
#define PB_RSM_TCP_H

#include <stddef.h>

#include "util/status.h"

/* Listen for other nodes' importers (starting the RSM service thread if
 * needed) and write "a.b.c.d:port" into @buf, or "a.b.c.d,e.f.g.h:port"
 * with one address per rail when the process has several.  postbox_job_init puts it in
 * the job KVS as pb-tcp-<rank>, so that importers on other nodes can ask
 * any process of a node where a segment of that node is exported.  Reads
 * no job identity, so it may run before the job is complete.
 * @return PB_OK; PB_ERR_NO_RESOURCE (no socket or thread),
 * PB_ERR_INVALID_PARAM (POSTBOX_TCP_ADDR malformed, or @buf too short). */
pb_status_t pb_rsm_tcp_endpoint(char *buf, size_t len);

#endif
