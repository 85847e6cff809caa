/*
 * A handshake on a non-blocking socket, before a deadline (util/sock.h).
 */
#include "util/sock.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "util/time.h"

pb_status_t pb_sock_connect(int fd, const struct sockaddr *addr, socklen_t len, int64_t deadline_ms,
                            int *err_p)
{
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    socklen_t err_len = sizeof(*err_p);
    int ready;

    *err_p = 0;
    if (connect(fd, addr, len) != 0 && errno != EINPROGRESS) {
        *err_p = errno;
        return PB_ERR_UNREACHABLE;
    }
    do
        ready = poll(&pfd, 1, pb_time_remaining_ms(deadline_ms, -1));
    while (ready < 0 && errno == EINTR);
    if (ready == 0)
        return PB_ERR_TIMEOUT;
    if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, err_p, &err_len) != 0)
        *err_p = errno;
    return *err_p == 0 ? PB_OK : PB_ERR_UNREACHABLE;
}

/* Send @len bytes of @out, or receive them into @in (the other is NULL),
 * on @fd before @deadline_ms.  @return as pb_sock_recv_msg. */
static pb_status_t sock_move(int fd, const char *out, char *in, size_t len, int64_t deadline_ms)
{
    int sending = out != NULL;
    size_t done = 0;

    while (done < len) {
        struct pollfd pfd = {.fd = fd, .events = sending ? POLLOUT : POLLIN};
        int wait = pb_time_remaining_ms(deadline_ms, -1);
        ssize_t n;

        if (wait == 0)
            return PB_ERR_TIMEOUT;
        if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
            return PB_ERR_IO;
        n = sending ? send(fd, out + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL)
                    : recv(fd, in + done, len - done, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return PB_ERR_CONN_ABORTED;
        done += (size_t)n;
    }
    return PB_OK;
}

pb_status_t pb_sock_recv_msg(int fd, void *buf, size_t len, int64_t deadline_ms)
{
    return sock_move(fd, NULL, buf, len, deadline_ms);
}

pb_status_t pb_sock_send_msg(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
    return sock_move(fd, buf, NULL, len, deadline_ms);
}
