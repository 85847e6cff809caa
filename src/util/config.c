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
    {"POSTBOX_JOB_ID", PB_CONFIG_STRING, NULL,
     "Job identifier, set by the launcher; processes of different jobs cannot "
     "reach each other's segments.  Unset outside a job."},
    {"POSTBOX_JOB_SECRET", PB_CONFIG_STRING, NULL,
     "Job secret (32 hex digits), set by the launcher and removed from the "
     "environment when read; never set it by hand."},
    {"POSTBOX_NODE_ID", PB_CONFIG_INT, "0",
     "RSM node id of this process, set by the launcher (virtual nodes get "
     "distinct ids); postbox_job_init derives it and warns if they differ."},
    {"POSTBOX_VNODE", PB_CONFIG_INT, "0",
     "Virtual node of this process on its host, set by the launcher; ranks "
     "with the same host and virtual node share a node id."},
    {"POSTBOX_PMI_VERSION", PB_CONFIG_STRING, "1",
     "PMI wire protocol spoken to a foreign launcher: 1 (Hydra) or 2 (Slurm "
     "srun --mpi=pmi2); when unset, 2 if PMI_JOBID is set."},
    {"POSTBOX_RSM_SEGMENTID_FILE", PB_CONFIG_STRING, "/etc/rsm/rsm.segmentid",
     "Segment-id reservation file read by rsm_get_segmentid_range."},
    {"POSTBOX_RSM_SIGNAL_SPIN", PB_CONFIG_INT, "0",
     "Polls of the event word before rsm_intr_signal_wait sleeps in the "
     "kernel (0: sleep at once)."},
    {"POSTBOX_TCP_ADDR", PB_CONFIG_STRING, NULL,
     "IPv4 address the tcp transport gives other nodes for this process "
     "(it listens on every address), or a comma-separated list of up to 4, "
     "one per rail (controller); unset: the --netns addresses, else "
     "127.0.0.1."},
    {"POSTBOX_TCP_SPIN_US", PB_CONFIG_INT, "200",
     "Microseconds a thread waiting inside the tcp transport (barrier, get, "
     "signal) polls its sockets before it sleeps in the kernel; 0: sleep at "
     "once."},
    {"POSTBOX_TCP_STRIPE_MIN", PB_CONFIG_INT, "262144",
     "Bytes from which a tcp put is striped over every rail to the "
     "exporter's node (with several rails); 0: never stripe."},
    {"POSTBOX_TCP_TIMEOUT_MS", PB_CONFIG_INT, "2000",
     "Milliseconds after which a tcp connection whose peer stopped "
     "answering (dead host, cut link) is declared broken."},
    {"POSTBOX_NUMPOSTBOX", PB_CONFIG_INT, "16",
     "MPI: postboxes (64 bytes each) in the ring each sender owns toward each "
     "receiver, in the receiver's node's postbox area (Sun MPI's "
     "MPI_SHM_NUMPOSTBOX)."},
    {"POSTBOX_POOL_BLOCKS", PB_CONFIG_INT, "64",
     "MPI: blocks (2 or more) in the buffer pool each sender owns on its own "
     "node, shared by every receiver there (plus 2 reserved per receiver); "
     "eager and rendezvous data move through them."},
    {"POSTBOX_POOL_BLOCKS_NET", PB_CONFIG_INT, "256",
     "MPI: blocks (2 or more) in the pool each sender owns on each other "
     "node, shared by the receivers there (its large messages move through "
     "the pool over tcp)."},
    {"POSTBOX_BLOCK_SIZE", PB_CONFIG_INT, "4096",
     "MPI: bytes of one pool block (rounded up to 64)."},
    {"POSTBOX_RENDEZVOUS", PB_CONFIG_INT, "1048576",
     "MPI: messages of this many bytes and more wait for the receiver "
     "(RTS/CTS) before their data moves; shorter ones go eagerly."},
    {"POSTBOX_SINGLE_COPY", PB_CONFIG_INT, "65536",
     "MPI: contiguous messages between ranks of a node of this many bytes "
     "and more are read by the receiver straight from the sender's buffer "
     "(process_vm_readv: one copy); 0: never (two copies through the pool)."},
    {"POSTBOX_SPLIT_COPY", PB_CONFIG_INT, "131072",
     "MPI: single-copy messages of this many bytes and more are copied half "
     "by the receiver (process_vm_readv) and half by the sender "
     "(process_vm_writev) at once; 0: the receiver copies it all."},
    {"POSTBOX_POLLALL", PB_CONFIG_INT, "1",
     "MPI: 1 polls every sender's ring (general polling, Sun MPI's "
     "MPI_POLLALL); 0 only those a receive or an answer is expected from."},
    {"POSTBOX_SPIN", PB_CONFIG_INT, "2000",
     "MPI: polls of a waiting rank before it starts yielding the CPU (unset "
     "on a host with more ranks than cores: 0)."},
    {"POSTBOX_YIELDS", PB_CONFIG_INT, "20",
     "MPI: sched_yield calls of a waiting rank before it sleeps until a "
     "peer writes to it."},
    {"POSTBOX_SHOW_TRANSPORTS", PB_CONFIG_INT, "0",
     "MPI: 1 prints, for each channel a rank opens, the transport and the "
     "protocol thresholds chosen."},
    {NULL, PB_CONFIG_STRING, NULL, NULL},
};

PB_UTIL_EXPORT const pb_config_entry_t *pb_config_table(void)
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

PB_UTIL_EXPORT const char *pb_config_table_get_string(const pb_config_entry_t *table,
                                                      const char *name)
{
    const pb_config_entry_t *entry = config_find(table, name);
    const char *value = getenv(name);

    return value != NULL ? value : entry->default_value;
}

PB_UTIL_EXPORT long pb_config_table_get_long(const pb_config_entry_t *table, const char *name)
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

PB_UTIL_EXPORT const char *pb_config_get_string(const char *name)
{
    return pb_config_table_get_string(config_table, name);
}

PB_UTIL_EXPORT long pb_config_get_long(const char *name)
{
    return pb_config_table_get_long(config_table, name);
}
