/*
 * postbox-job-view: join the job and print what this rank sees, one line:
 *
 *   rank 1 size 4 node 0 nodes 2 name host/0 local 0,1 job pmi-kvs_123_0
 *
 * Under `postbox run --universe` rank and size are the process's slot and
 * the universe's.  It also checks that the RSM layer agrees (rsm_get_local_nodeid and the
 * shm controller's topology name the same node) and that the key-value
 * space carries a value from rank to rank; on a mismatch it prints
 * "FAIL ..." and exits 1.  Run it under `postbox run`, mpiexec.hydra,
 * srun --mpi=pmi2, or alone (a singleton).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postbox/job.h"
#include "postbox/rsm.h"

static int fail(const char *what)
{
    printf("FAIL rank %d: %s\n", postbox_job_rank(), what);
    fflush(stdout);
    return 1;
}

/* The topology must name @node as local and list it under shm. */
static int check_topology(rsm_node_id_t node)
{
    rsm_topology_t *topology;
    int shm_ok = 0;

    if (rsm_get_interconnect_topology(&topology) != RSM_SUCCESS)
        return fail("rsm_get_interconnect_topology failed");
    if (topology->topology_hdr.local_nodeid != node) {
        rsm_free_interconnect_topology(topology);
        return fail("topology local_nodeid differs from postbox_job_node");
    }
    for (unsigned i = 0; i < topology->topology_hdr.local_cntlr_count; i++) {
        rsm_connections_t *conn = topology->connections[i];

        if (strcmp(conn->hdr.cntlr_name, "shm") != 0)
            continue;
        shm_ok = conn->hdr.remote_cntlr_count == 1 && conn->remote_cntlr[0].remote_nodeid == node &&
                 conn->remote_cntlr[0].connection_state == RSM_CONNECTION_ACTIVE;
    }
    rsm_free_interconnect_topology(topology);
    return shm_ok ? 0 : fail("the shm controller does not list the local node (only)");
}

/* Each rank puts a value; after a fence it reads its right neighbour's in
 * its world (the processes started with it: all of the job, unless the
 * job is a universe of slots that a spawn started this one in). */
static int check_kvs(int rank)
{
    char key[64], want[64], got[64];
    int first = postbox_job_world_first(), size = postbox_job_world_size();
    int next = first + (rank - first + 1) % size;

    snprintf(key, sizeof(key), "view-%d", rank);
    snprintf(want, sizeof(want), "hello-from-%d", rank);
    if (postbox_job_kvs_put(key, want) != 0)
        return fail("postbox_job_kvs_put failed");
    if (postbox_job_fence() != 0)
        return fail("postbox_job_fence failed");
    snprintf(key, sizeof(key), "view-%d", next);
    snprintf(want, sizeof(want), "hello-from-%d", next);
    if (postbox_job_kvs_get(key, got, sizeof(got)) != 0 || strcmp(got, want) != 0)
        return fail("postbox_job_kvs_get did not return the neighbour's value");
    if (postbox_job_kvs_get("view-no-such-key", got, sizeof(got)) != 1)
        return fail("postbox_job_kvs_get of a missing key did not return 1");
    return 0;
}

int main(void)
{
    int local[256], nlocal, rank, size;
    rsm_node_id_t node;
    char list[1024];
    size_t pos = 0;

    if (postbox_job_init() != 0)
        return 1;
    rank = postbox_job_rank();
    size = postbox_job_size();
    node = postbox_job_node(rank);
    nlocal = postbox_job_local_ranks(local, 256);
    if (nlocal < 1 || nlocal > 256)
        return fail("postbox_job_local_ranks returned a bad count");
    list[0] = '\0';
    for (int i = 0; i < nlocal && pos + 16 < sizeof(list); i++)
        pos += (size_t)snprintf(list + pos, sizeof(list) - pos, "%s%d", i ? "," : "", local[i]);
    if (node != rsm_get_local_nodeid())
        return fail("rsm_get_local_nodeid differs from postbox_job_node");
    if (check_topology(node) != 0 || check_kvs(rank) != 0)
        return 1;
    printf("rank %d size %d node %u nodes %d name %s local %s job %s\n", rank, size, (unsigned)node,
           postbox_job_node_count(), postbox_job_node_name(node), list, postbox_job_id());
    fflush(stdout);
    if (postbox_job_finalize() != 0)
        return 1;
    return 0;
}
