#include "rsm/rendezvous.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "boot/identity.h"
#include "util/log.h"
#include "util/random.h"

#define RENDEZVOUS_BACKLOG 128
/* random ids tried before giving up when the library picks one */
#define RENDEZVOUS_PICK_TRIES 64

void pb_rsm_rendezvous_name(struct sockaddr_un *addr, socklen_t *len_p, const char *prefix,
                            rsm_node_id_t node, rsm_memseg_id_t segid)
{
    int n;

    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    /* sun_path[0] == 0: the abstract namespace */
    n = snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1, "%s/%s/%u/%08x", prefix,
                 pb_boot_identity_get()->id, (unsigned)node, (unsigned)segid);
    *len_p = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Bind the name of (@node, @segid); -1 with errno on failure. */
static int rendezvous_bind(const char *prefix, rsm_node_id_t node, rsm_memseg_id_t segid)
{
    struct sockaddr_un addr;
    socklen_t len;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int saved;

    if (fd < 0)
        return -1;
    pb_rsm_rendezvous_name(&addr, &len, prefix, node, segid);
    if (bind(fd, (struct sockaddr *)&addr, len) != 0 || listen(fd, RENDEZVOUS_BACKLOG) != 0) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

pb_status_t pb_rsm_rendezvous_listen(const char *prefix, rsm_node_id_t node,
                                     rsm_memseg_id_t *segid_p, int *fd_p)
{
    rsm_memseg_id_t segid = *segid_p;
    int fd = -1;

    if (segid != 0) {
        fd = rendezvous_bind(prefix, node, segid);
    } else {
        /* the library's choice: a random id of the user range */
        for (int i = 0; i < RENDEZVOUS_PICK_TRIES && fd < 0; i++) {
            uint32_t pick;

            if (pb_random_bytes(&pick, sizeof(pick)) != 0)
                break;
            segid = pick | RSM_USER_APP_ID_BASE;
            fd = rendezvous_bind(prefix, node, segid);
            if (fd < 0 && errno != EADDRINUSE)
                break;
        }
    }
    if (fd < 0) {
        if (errno == EADDRINUSE)
            return PB_ERR_IN_USE;
        pb_error("binding the rendezvous socket of segment %#x failed: %m", segid);
        return PB_ERR_NO_RESOURCE;
    }
    *segid_p = segid;
    *fd_p = fd;
    return PB_OK;
}
