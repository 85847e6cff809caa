/*
 * A handshake on a non-blocking socket, before a deadline: the connect,
 * then the whole of each message of a fixed size, sent or received.  A
 * stream socket may move a message in pieces; a SOCK_SEQPACKET socket
 * moves it as one packet.
 */
#ifndef PB_UTIL_SOCK_H
#define PB_UTIL_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util/status.h"

/* Connect the non-blocking socket @fd to @addr (@len bytes) before
 * @deadline_ms (pb_time_now_ms; -1: none).  @return PB_OK;
 * PB_ERR_TIMEOUT (no answer before the deadline); PB_ERR_UNREACHABLE with
 * the failure's errno in *@err_p (refused, no route, reset: what that
 * means is the caller's to say).  *@err_p is 0 unless PB_ERR_UNREACHABLE.
 * Nothing is logged. */
pb_status_t pb_sock_connect(int fd, const struct sockaddr *addr, socklen_t len, int64_t deadline_ms,
                            int *err_p);

/* Receive one message of exactly @len bytes from @fd into @buf before
 * @deadline_ms (pb_time_now_ms; -1: none), as many reads as it takes.
 * @return PB_OK; PB_ERR_TIMEOUT (the deadline passed first); PB_ERR_IO
 * (poll failed); PB_ERR_CONN_ABORTED (the peer closed, or the socket
 * failed, before the whole message came).  Nothing is logged. */
pb_status_t pb_sock_recv_msg(int fd, void *buf, size_t len, int64_t deadline_ms);

/* Send the @len bytes of @buf on @fd before @deadline_ms, as many writes
 * as it takes (no SIGPIPE).  @return as pb_sock_recv_msg. */
pb_status_t pb_sock_send_msg(int fd, const void *buf, size_t len, int64_t deadline_ms);

#endif
