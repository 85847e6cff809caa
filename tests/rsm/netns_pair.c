/*
 * pbt-netns-pair: runs an RSM test program (tests/harness.c) across two
 * virtual nodes in separate network namespaces, where the nodes share no
 * abstract socket and an import of the other node's segment must go
 * through a relayed lookup:
 *
 *   postbox run -n 2 --nodes 2 --netns pbt-netns-pair PROGRAM [ARGS...]
 *
 * Rank 0 (node 0) becomes PROGRAM with POSTBOX_TEST_NETNS_PEER set: the
 * harness joins the job and starts its exporter servers in node 1's
 * namespace.  Rank 1 (node 1) joins the job (its tcp transport listens,
 * so that it relays lookups for its node), puts "PID ADDRESS" as
 * pbt-netns-peer, and waits in a second fence for rank 0's end.
 */
#include <postbox/job.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *rank = getenv("PMI_RANK");
    const char *addr = getenv("POSTBOX_NETNS_ADDR");
    char value[128];

    if (argc < 2 || rank == NULL || addr == NULL) {
        fprintf(stderr, "usage: postbox run -n 2 --nodes 2 --netns %s PROGRAM [ARGS...]\n",
                argv[0]);
        return 2;
    }
    if (strcmp(rank, "0") == 0) {
        setenv("POSTBOX_TEST_NETNS_PEER", "1", 1);
        execv(argv[1], argv + 1);
        perror(argv[1]);
        return 127;
    }
    if (postbox_job_init() != 0 || postbox_job_size() != 2 || postbox_job_node_count() != 2) {
        fprintf(stderr, "pbt-netns-pair: run as 2 ranks on 2 nodes\n");
        return 2;
    }
    snprintf(value, sizeof(value), "%d %s", (int)getpid(), addr);
    if (postbox_job_kvs_put("pbt-netns-peer", value) != 0 || postbox_job_fence() != 0)
        return 1;
    /* rank 0 runs its cases; our tcp transport answers their lookups */
    if (postbox_job_fence() != 0)
        return 1;
    return postbox_job_finalize() == 0 ? 0 : 1;
}
