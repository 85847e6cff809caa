/*
 * pb_status_t: the one internal status type.  PB_OK is 0, errors are
 * negative.  Each API edge (RSM, later MPI) translates it in one table.
 */
#ifndef PB_UTIL_STATUS_H
#define PB_UTIL_STATUS_H

typedef enum {
    PB_OK = 0,
    PB_ERR_NO_MEMORY = -1,              /* malloc or mmap of private memory failed */
    PB_ERR_NO_RESOURCE = -2,            /* fds, memfd, sockets or ids ran out */
    PB_ERR_INVALID_PARAM = -3,          /* a caller passed a bad value */
    PB_ERR_IO = -4,                     /* a system call failed unexpectedly */
    PB_ERR_TIMEOUT = -5,                /* a wait ran out of time */
    PB_ERR_INTERRUPTED = -6,            /* a signal handler ran during a wait */
    PB_ERR_UNSUPPORTED = -7,            /* the transport cannot do this */
    PB_ERR_CONN_ABORTED = -8,           /* the peer or its segment went away */
    PB_ERR_UNREACHABLE = -9,            /* no path to the node */
    PB_ERR_NOT_PUBLISHED = -10,         /* no such segment published */
    PB_ERR_NOT_PUBLISHED_TO_NODE = -11, /* published, but not to us */
    PB_ERR_PERMISSION = -12,            /* access list or job check refused */
    PB_ERR_IN_USE = -13,                /* the id or name is taken */
    PB_ERR_PROTOCOL = -14,              /* a peer sent something malformed */
    PB_ERR_BAD_ADDRESS = -15,           /* memory not mapped in this process */
    PB_ERR_LAST = -16
} pb_status_t;

/* A static description of @status ("unknown status" if out of range). */
const char *pb_status_string(pb_status_t status);

#endif
