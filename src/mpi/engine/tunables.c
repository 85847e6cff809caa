/*
 * The MPI engine's tunables (tunables.h): its table and their reading.
 */
#include "mpi/engine/tunables.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

pb_eng_params_t pb_eng_params;

static const pb_config_entry_t tunables_table[] = {
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
    {"POSTBOX_SINGLE_COPY_FAR", PB_CONFIG_INT, "8192",
     "MPI: contiguous messages of this many bytes and more toward a rank of "
     "the node that is far from this one (see POSTBOX_FAR_COPY_RATE) are "
     "read by the receiver straight from the sender's buffer too; 0: only "
     "from POSTBOX_SINGLE_COPY."},
    {"POSTBOX_FAR_COPY_RATE", PB_CONFIG_INT, "4000",
     "MPI: MB/s below which a sender's copies into a node peer's pool "
     "blocks (the fastest of 8 pieces of 16 KB and more) mark that peer far "
     "(another socket or core complex: the blocks' lines come back from its "
     "cache one slow trip at a time); 0: no peer is far."},
    {"POSTBOX_SPLIT_COPY", PB_CONFIG_INT, "131072",
     "MPI: single-copy messages of this many bytes and more are copied half "
     "by the receiver (process_vm_readv) and half by the sender "
     "(process_vm_writev) at once; 0: the receiver copies it all."},
    {"POSTBOX_COPY_HELP", PB_CONFIG_INT, "2097152",
     "MPI: MPI_Put and MPI_Get toward a window mapped on this node copy "
     "this many bytes and more with a second thread of the process taking "
     "pieces, when the process may run on more than one CPU (and stop "
     "asking it for a while when it finds no free processor); 0: never."},
    {"POSTBOX_POLLALL", PB_CONFIG_INT, "1",
     "MPI: 1 polls every sender's ring (general polling, Sun MPI's "
     "MPI_POLLALL); 0 only those a receive or an answer is expected from."},
    {"POSTBOX_SPIN", PB_CONFIG_INT, "2000",
     "MPI: most polls of a waiting rank before it starts yielding the CPU "
     "(fewer while its yields show its core is shared; unset on a host with "
     "more ranks than cores: 0)."},
    {"POSTBOX_YIELDS", PB_CONFIG_INT, "20",
     "MPI: sched_yield calls of a waiting rank before it sleeps until a "
     "peer writes to it."},
    {"POSTBOX_YIELD_US", PB_CONFIG_INT, "0",
     "MPI: microseconds a waiting rank keeps yielding, past its "
     "POSTBOX_YIELDS calls, before it sleeps (a sleeper's wake-up costs "
     "tens of microseconds; unset on a host with more ranks than cores: "
     "5000 in a job on one node of at most two ranks to a core)."},
    {"POSTBOX_COLL_NODE", PB_CONFIG_INT, "1",
     "MPI: 1 lets collectives exchange through a shared-memory area per "
     "communicator on each node (made at its first collective); 0 keeps them "
     "on point-to-point."},
    {"POSTBOX_COLL_CELL", PB_CONFIG_INT, "1048576",
     "MPI: bytes of each rank's cell in a communicator's collective area on "
     "its node (rounded up to 4096); larger collectives move through it in "
     "pieces, or over point-to-point."},
    {"POSTBOX_COLL_AREA_MAX", PB_CONFIG_INT, "268435456",
     "MPI: bytes of collective areas one process may make (as the first rank "
     "of a communicator on its node); past it a new communicator's "
     "collectives stay on point-to-point."},
    {"POSTBOX_COLL_TABLE", PB_CONFIG_STRING, "",
     "MPI: a file of rules choosing each collective's algorithm, in place of "
     "the built-in table (src/mpi/coll_table.txt; docs/mpi.md)."},
    {"POSTBOX_COLL_ALGORITHM", PB_CONFIG_STRING, "",
     "MPI: collective:algorithm,... forces those algorithms whatever the "
     "table says (e.g. allreduce:recursive_doubling,bcast:node)."},
    {"POSTBOX_COLL_STATS", PB_CONFIG_INT, "0",
     "MPI: 1 makes MPI_Finalize print, on each rank, how many times each "
     "collective algorithm ran."},
    {"POSTBOX_SHOW_TRANSPORTS", PB_CONFIG_INT, "0",
     "MPI: 1 prints, for each channel a rank opens, the transport and the "
     "protocol thresholds chosen."},
    {NULL, PB_CONFIG_STRING, NULL, NULL},
};

const pb_config_entry_t *pb_eng_tunables_table(void)
{
    return tunables_table;
}

/* The range of each integer tunable: a value outside is clamped (read) or
 * refused (pb_eng_tunables_range's callers). */
static const struct {
    const char *name;
    long min, max;
} ranges[] = {
    {"POSTBOX_NUMPOSTBOX", 2, 4096},
    {"POSTBOX_POOL_BLOCKS", 2, 65536},
    {"POSTBOX_POOL_BLOCKS_NET", 2, 65536},
    {"POSTBOX_BLOCK_SIZE", 256, 1 << 20},
    {"POSTBOX_RENDEZVOUS", 1, 1L << 40},
    {"POSTBOX_SINGLE_COPY", 0, 1L << 40},
    {"POSTBOX_SINGLE_COPY_FAR", 0, 1L << 40},
    {"POSTBOX_FAR_COPY_RATE", 0, 1L << 30},
    {"POSTBOX_SPLIT_COPY", 0, 1L << 40},
    {"POSTBOX_COPY_HELP", 0, 1L << 40},
    {"POSTBOX_POLLALL", 0, 1},
    {"POSTBOX_SPIN", 0, 1 << 30},
    {"POSTBOX_YIELDS", 0, 1 << 30},
    {"POSTBOX_YIELD_US", 0, 1000000},
    {"POSTBOX_COLL_NODE", 0, 1},
    {"POSTBOX_COLL_CELL", 4096, 1L << 30},
    {"POSTBOX_COLL_AREA_MAX", 0, 1L << 40},
    {"POSTBOX_COLL_STATS", 0, 1},
    {"POSTBOX_SHOW_TRANSPORTS", 0, 1},
};

int pb_eng_tunables_range(const char *name, long *min_p, long *max_p)
{
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
        if (strcmp(ranges[i].name, name) == 0) {
            *min_p = ranges[i].min;
            *max_p = ranges[i].max;
            return 1;
        }
    }
    return 0;
}

static long param(const char *name)
{
    long value = pb_config_table_get_long(tunables_table, name), min = 0, max = 0;

    if (!pb_eng_tunables_range(name, &min, &max)) { /* a programming error */
        pb_error("%s has no range in tunables.c", name);
        abort();
    }
    if (value < min || value > max) {
        long fixed = value < min ? min : max;

        pb_warn("%s=%ld is outside %ld..%ld: using %ld", name, value, min, max, fixed);
        return fixed;
    }
    return value;
}

void pb_eng_tunables_read(void)
{
    pb_eng_params.postboxes = (int)param("POSTBOX_NUMPOSTBOX");
    pb_eng_params.blocks = (int)param("POSTBOX_POOL_BLOCKS");
    pb_eng_params.blocks_net = (int)param("POSTBOX_POOL_BLOCKS_NET");
    pb_eng_params.block_size = (size_t)param("POSTBOX_BLOCK_SIZE");
    pb_eng_params.block_size = (pb_eng_params.block_size + 63) / 64 * 64;
    pb_eng_params.rendezvous = (size_t)param("POSTBOX_RENDEZVOUS");
    pb_eng_params.single_copy = (size_t)param("POSTBOX_SINGLE_COPY");
    pb_eng_params.single_copy_far = (size_t)param("POSTBOX_SINGLE_COPY_FAR");
    pb_eng_params.far_copy_rate = (size_t)param("POSTBOX_FAR_COPY_RATE");
    pb_eng_params.split_copy = (size_t)param("POSTBOX_SPLIT_COPY");
    pb_eng_params.copy_help = (size_t)param("POSTBOX_COPY_HELP");
    pb_eng_params.pollall = (int)param("POSTBOX_POLLALL");
    pb_eng_params.spin = (int)param("POSTBOX_SPIN");
    pb_eng_params.spin_set = getenv("POSTBOX_SPIN") != NULL;
    pb_eng_params.yields = (int)param("POSTBOX_YIELDS");
    pb_eng_params.yield_us = (int)param("POSTBOX_YIELD_US");
    pb_eng_params.yield_set = getenv("POSTBOX_YIELD_US") != NULL;
    pb_eng_params.coll_node = (int)param("POSTBOX_COLL_NODE");
    pb_eng_params.coll_cell = (size_t)param("POSTBOX_COLL_CELL");
    pb_eng_params.coll_cell = (pb_eng_params.coll_cell + 4095) / 4096 * 4096;
    pb_eng_params.coll_area_max = (size_t)param("POSTBOX_COLL_AREA_MAX");
    pb_eng_params.show = pb_config_table_get_long(tunables_table, "POSTBOX_SHOW_TRANSPORTS") > 0;
}
