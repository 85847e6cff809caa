/*
 * pbt-exporter-server: the exporter server of rsm_util.c as a program of
 * its own, exec'd by pbt_exporter_start when POSTBOX_TEST_PEER_NODE is set,
 * so that it starts afresh on another RSM node.
 *
 * Usage: pbt-exporter-server READ_FD WRITE_FD OPTIONS_HEX
 * (the pipe ends of the peer, and pbt_export_opts_t as hex bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsm_util.h"

int main(int argc, char **argv)
{
    pbt_export_opts_t opts;
    uint8_t *bytes = (uint8_t *)&opts;
    pbt_peer_t self = {.pid = getpid()};

    if (argc != 4 || strlen(argv[3]) != 2 * sizeof(opts)) {
        fprintf(stderr, "usage: %s READ_FD WRITE_FD OPTIONS_HEX (run by the RSM tests)\n", argv[0]);
        return 2;
    }
    self.rd = atoi(argv[1]);
    self.wr = atoi(argv[2]);
    for (size_t i = 0; i < sizeof(opts); i++) {
        unsigned byte;

        if (sscanf(argv[3] + 2 * i, "%2x", &byte) != 1)
            return 2;
        bytes[i] = (uint8_t)byte;
    }
    pbt_exporter_main(&self, &opts);
    return 0;
}
