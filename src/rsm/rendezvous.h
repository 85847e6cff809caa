/*
 * Rendezvous sockets: the names under which a node's processes find a
 * published segment.  Each published segment binds an abstract unix socket
 * "<prefix>/<job>/<node>/<segid>" (nothing in a file system; the name
 * disappears with the socket, so no exit leaves one behind), and the bind
 * is what makes a segment id unique on its node.  The shm transport
 * (prefix "postbox-rsm") hands descriptors over it; the tcp transport
 * ("postbox-tcp") the address its exporter listens on.
 */
#ifndef PB_RSM_RENDEZVOUS_H
#define PB_RSM_RENDEZVOUS_H

#include <postbox/rsm.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "util/status.h"

/* Fill @addr (and *@len_p) with the rendezvous name of (@node, @segid) of
 * this process's job under @prefix. */
void pb_rsm_rendezvous_name(struct sockaddr_un *addr, socklen_t *len_p, const char *prefix,
                            rsm_node_id_t node, rsm_memseg_id_t segid);

/* Bind and listen on the rendezvous name of (@node, *@segid_p) under
 * @prefix: a non-blocking, close-on-exec SOCK_SEQPACKET socket in *@fd_p.
 * *@segid_p 0 asks for a random free id of the user range, set on success.
 * @return PB_OK; PB_ERR_IN_USE (the id is published on this node already);
 * PB_ERR_NO_RESOURCE (logged). */
pb_status_t pb_rsm_rendezvous_listen(const char *prefix, rsm_node_id_t node,
                                     rsm_memseg_id_t *segid_p, int *fd_p);

#endif
