#include "util/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/compiler.h"
#include "util/log.h"

static const pb_config_entry_t config_table[] = {
    {"POSTBOX_LOG_LEVEL", PB_CONFIG_STRING, "warn",
     "Log level of the library: error, warn, info, debug or trace."},
    {"POSTBOX_DSM_STATS", PB_CONFIG_INT, "0",
     "1: each process of a DSM program prints its DSM statistics (faults, "
     "fetches, diffs, messages, bytes and round trips by type, its "
     "lifetime) as one line \"postbox-dsm-stats: ...\" on stderr when the "
     "DSM ends (postbox_dsm_finalize or _serve); postbox bench reads it."},
    {"POSTBOX_DSM_NODE_SHARE", PB_CONFIG_INT, "1",
     "1: a DSM process maps the pages another process of its node is the home "
     "of straight from that process's copy (one copy per node of them, kept "
     "coherent by the hardware: no fetch, twin or diff), and the processes of "
     "a node read and write the pages homed on other nodes in one copy per "
     "node (the node cache, with one twin per node); 0: each process caches "
     "its own copy of every page."},
    {"POSTBOX_DSM_SELF_INVALIDATE", PB_CONFIG_INT, "0",
     "1: a DSM acquire invalidates every cached page another process ever "
     "wrote (self-invalidation, as ArgoDSM), not only the pages written since "
     "the last acquire (the write notices of home-based lazy release "
     "consistency, used otherwise); it fetched more pages on every "
     "application measured but one (docs/dsm.md, \"Self-invalidation, "
     "measured\")."},
    {"POSTBOX_JOB_ID", PB_CONFIG_STRING, NULL,
     "Job identifier, set by the launcher; processes of different jobs cannot "
     "reach each other's segments.  Unset outside a job."},
    {"POSTBOX_JOB_SECRET", PB_CONFIG_STRING, NULL,
     "Job secret (32 hex digits), set by the launcher and removed from the "
     "environment (its bytes wiped) when read; never set it by hand."},
    {"POSTBOX_NODE_ID", PB_CONFIG_INT, "0",
     "RSM node id of this process, set by the launcher (virtual nodes get "
     "distinct ids); postbox_job_init derives it and warns if they differ."},
    {"POSTBOX_VNODE", PB_CONFIG_INT, "0",
     "Virtual node of this process on its host, set by the launcher; ranks "
     "with the same host and virtual node share a node id."},
    {"POSTBOX_PMI", PB_CONFIG_STRING, "auto",
     "How a process speaks to its launcher: pmi1, pmi2 (the PMI wire "
     "protocols over PMI_FD or PMI_PORT), pmix (through libpmix, under "
     "prterun or srun --mpi=pmix), or auto: PMI_FD/PMI_PORT give PMI-1 or "
     "PMI-2 (POSTBOX_PMI_VERSION), else PMIX_NAMESPACE, PMIX_RANK or "
     "PMIX_SERVER_URI* give PMIx, else the process is a singleton."},
    {"POSTBOX_PMI_VERSION", PB_CONFIG_STRING, "1",
     "PMI wire protocol spoken to a foreign launcher: 1 (Hydra) or 2 (Slurm "
     "srun --mpi=pmi2); when unset, 2 if PMI_JOBID is set."},
    {"POSTBOX_PMI_TOKEN", PB_CONFIG_STRING, NULL,
     "One-time PMI token of a rank started by postbox run --hosts (32 hex "
     "digits), handed over on stdin and removed from the environment (its "
     "bytes wiped) at PMI init; never set it by hand."},
    {"POSTBOX_RSM_SEGMENTID_FILE", PB_CONFIG_STRING, "/etc/rsm/rsm.segmentid",
     "Segment-id reservation file read by rsm_get_segmentid_range."},
    {"POSTBOX_RSM_SIGNAL_SPIN", PB_CONFIG_INT, "0",
     "Polls of the event word before rsm_intr_signal_wait sleeps in the "
     "kernel (0: sleep at once)."},
    {"POSTBOX_OFI_LIBRARY", PB_CONFIG_STRING, "libfabric.so.1",
     "libfabric's library, as dlopen takes it (a file name searched as "
     "ld.so does, or a path), loaded when the ofi controller is first asked "
     "for (POSTBOX_TRANSPORT=ofi); no process that does not use ofi loads it."},
    {"POSTBOX_OFI_PROVIDER", PB_CONFIG_STRING, NULL,
     "libfabric provider of the ofi transport, as fi_info names it (tcp;ofi_rxm, "
     "shm, ...); unset: the first that offers RMA on a reliable datagram "
     "endpoint."},
    {"POSTBOX_OFI_SPIN_US", PB_CONFIG_INT, "200",
     "Microseconds a thread waiting inside the ofi transport (get, barrier, "
     "signal) reads the completion queue before it sleeps; 0: sleep at once."},
    {"POSTBOX_TCP_ADDR", PB_CONFIG_STRING, NULL,
     "IPv4 address the tcp transport gives other nodes for this process "
     "(it listens on that address only), or a comma-separated list of up to 4, "
     "one per rail (controller); unset: the --netns addresses, else "
     "127.0.0.1."},
    {"POSTBOX_TCP_PAYLOAD_MAC", PB_CONFIG_STRING, "auto",
     "Whether tcp frames carry a MAC of their payload as well as of their "
     "header: on, off, or auto (on between hosts; off when the peer is on "
     "this host: loopback, one of this process's addresses, or a node of "
     "the same --netns job).  On when either end says on."},
    {"POSTBOX_TCP_REPLY_TIMEOUT_MS", PB_CONFIG_INT, "0",
     "Milliseconds a tcp get or barrier waits for the exporter's reply "
     "before it returns RSMERR_TIMEOUT (a peer that is alive but stopped "
     "keeps its connection); 0: wait as long as the connection lives."},
    {"POSTBOX_TCP_REQUEST_TIMEOUT_MS", PB_CONFIG_INT, "5000",
     "Milliseconds a tcp import connect (rendezvous, handshake and attach "
     "together) or a lookup relayed to another node waits for its answer "
     "before it fails (RSMERR_TIMEOUT, or RSMERR_REMOTE_NODE_UNREACHABLE "
     "for a node that does not answer)."},
    {"POSTBOX_TCP_SPIN_US", PB_CONFIG_INT, "200",
     "Microseconds a thread waiting inside the tcp transport (barrier, get, "
     "signal) polls its sockets, yielding the processor between polls, "
     "before it sleeps in the kernel; 0: sleep at once."},
    {"POSTBOX_TCP_STRIPE_MIN", PB_CONFIG_INT, "262144",
     "Bytes from which a tcp put is striped over every rail to the "
     "exporter's node (with several rails); 0: never stripe."},
    {"POSTBOX_TCP_TIMEOUT_MS", PB_CONFIG_INT, "2000",
     "Milliseconds after which a tcp connection whose peer stopped "
     "answering (dead host, cut link) is declared broken."},
    {"POSTBOX_TRANSPORT", PB_CONFIG_STRING, "tcp",
     "RSM controller the MPI library, DSM and postbox-rsm-net-bench use "
     "between nodes: tcp or ofi (libfabric, when built)."},
    {NULL, PB_CONFIG_STRING, NULL, NULL},
};

const pb_config_entry_t *pb_config_table(void)
{
    return config_table;
}

static const pb_config_entry_t *config_find(const pb_config_entry_t *table, const char *name)
{
    for (const pb_config_entry_t *entry = table; entry->name != NULL; entry++) {
        if (strcmp(entry->name, name) == 0)
            return entry;
    }
    fprintf(stderr, "postbox: internal error: unknown configuration variable %s\n", name);
    abort();
}

const char *pb_config_table_get_string(const pb_config_entry_t *table, const char *name)
{
    const pb_config_entry_t *entry = config_find(table, name);
    const char *value = getenv(name);

    return value != NULL ? value : entry->default_value;
}

long pb_config_table_get_long(const pb_config_entry_t *table, const char *name)
{
    const pb_config_entry_t *entry = config_find(table, name);
    const char *value = getenv(name);
    char *end;
    long parsed;

    if (value == NULL || *value == '\0')
        return entry->default_value ? strtol(entry->default_value, NULL, 0) : 0;
    errno = 0;
    parsed = strtol(value, &end, 0);
    if (errno != 0 || *end != '\0') {
        pb_warn("ignoring %s '%s': not an integer", name, value);
        return entry->default_value ? strtol(entry->default_value, NULL, 0) : 0;
    }
    return parsed;
}

const char *pb_config_get_string(const char *name)
{
    return pb_config_table_get_string(config_table, name);
}

long pb_config_get_long(const char *name)
{
    return pb_config_table_get_long(config_table, name);
}

char *pb_config_network_controller(void)
{
    /* (writable: rsm_get_controller takes a char *, as in Solaris) */
    static char tcp[] = "tcp", ofi[] = "ofi";
    const char *name = pb_config_get_string("POSTBOX_TRANSPORT");

    if (strcmp(name, "tcp") == 0)
        return tcp;
    if (strcmp(name, "ofi") == 0)
        return ofi;
    pb_error("POSTBOX_TRANSPORT=%s: not a controller between nodes (tcp or ofi)", name);
    return NULL;
}
