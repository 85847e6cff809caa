#include "util/status.h"

const char *pb_status_string(pb_status_t status)
{
    switch (status) {
    case PB_OK: return "success";
    case PB_ERR_NO_MEMORY: return "out of memory";
    case PB_ERR_NO_RESOURCE: return "out of resources";
    case PB_ERR_INVALID_PARAM: return "invalid parameter";
    case PB_ERR_IO: return "input/output error";
    case PB_ERR_TIMEOUT: return "timed out";
    case PB_ERR_INTERRUPTED: return "interrupted";
    case PB_ERR_UNSUPPORTED: return "not supported by this transport";
    case PB_ERR_CONN_ABORTED: return "connection aborted";
    case PB_ERR_UNREACHABLE: return "node unreachable";
    case PB_ERR_NOT_PUBLISHED: return "segment not published";
    case PB_ERR_NOT_PUBLISHED_TO_NODE: return "segment not published to this node";
    case PB_ERR_PERMISSION: return "permission denied";
    case PB_ERR_IN_USE: return "already in use";
    case PB_ERR_PROTOCOL: return "protocol error";
    case PB_ERR_BAD_ADDRESS: return "bad address";
    case PB_ERR_LAST: break;
    }
    return "unknown status";
}
