/* The one place where transports are registered. */
#include "rsm/transport.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "boot/boot.h"
#include "postbox/build.h"
#include "rsm/ofi.h"
#include "rsm/tcp.h"
#include "util/compiler.h"
#include "util/log.h"

static const pb_rsm_transport_ops_t *const transports[] = {
    &pb_shm_transport,
    &pb_tcp_transport,
#if PB_HAVE_OFI
    &pb_ofi_transport,
#endif
};

#if !PB_HAVE_OFI
const char *pb_ofi_describe(void)
{
    return "ofi: not built (libfabric-dev missing)";
}
#endif

_Static_assert(PB_ARRAY_SIZE(transports) <= PB_RSM_TRANSPORTS_MAX, "raise PB_RSM_TRANSPORTS_MAX");

/* What the transports put in the job's key-value exchange, registered with
 * Boot (which names no RSM code) when the library is loaded, so that every
 * postbox_job_init runs them: the tcp transport's endpoint. */
__attribute__((constructor)) static void transport_kvs_register(void)
{
    /* (one of PB_BOOT_KVS_CONTRIBUTORS_MAX: it cannot fail) */
    (void)pb_boot_kvs_contribute(pb_tcp_kvs_contribute);
}

/* other names users know a transport by (RSMAPI's loopback controller) */
static const struct {
    const char *alias;
    const char *name;
} transport_aliases[] = {
    {"loopback", "shm"},
};

const pb_rsm_transport_ops_t *const *pb_rsm_transport_list(size_t *count_p)
{
    *count_p = PB_ARRAY_SIZE(transports);
    return transports;
}

const pb_rsm_transport_ops_t *pb_rsm_transport_find(const char *name)
{
    size_t len = strlen(name);

    /* "shm0": a controller name may end in an instance number */
    while (len > 0 && isdigit((unsigned char)name[len - 1]))
        len--;
    for (size_t i = 0; i < PB_ARRAY_SIZE(transport_aliases); i++) {
        if (strlen(transport_aliases[i].alias) == len &&
            strncmp(transport_aliases[i].alias, name, len) == 0) {
            name = transport_aliases[i].name;
            len = strlen(name);
            break;
        }
    }
    for (size_t i = 0; i < PB_ARRAY_SIZE(transports); i++) {
        if (strlen(transports[i]->name) == len && strncmp(transports[i]->name, name, len) == 0)
            return transports[i];
    }
#if !PB_HAVE_OFI
    if (len == 3 && strncmp(name, "ofi", 3) == 0)
        pb_debug("%s", pb_ofi_describe());
#endif
    return NULL;
}

pb_status_t pb_rsm_check_writable(const void *vaddr, size_t size)
{
    uintptr_t want = (uintptr_t)vaddr, end = want + size;
    FILE *maps = fopen("/proc/self/maps", "re");
    char line[512];

    if (maps == NULL) {
        pb_error("cannot read /proc/self/maps: %m");
        return PB_ERR_IO;
    }
    /* the lines are sorted by address: walk them while they cover @want */
    while (want < end && fgets(line, sizeof(line), maps) != NULL) {
        unsigned long start, stop;
        char perms[5];

        if (sscanf(line, "%lx-%lx %4s", &start, &stop, perms) != 3)
            continue;
        if (stop <= want)
            continue;
        if (start > want || perms[0] != 'r' || perms[1] != 'w')
            break;
        want = stop;
    }
    fclose(maps);
    return want >= end ? PB_OK : PB_ERR_BAD_ADDRESS;
}
