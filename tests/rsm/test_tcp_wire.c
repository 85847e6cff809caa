/*
 * The tcp importer's checks of what an exporter answers (src/rsm/tcp/wire.c,
 * the pure part of the transport: the test compiles its source in).  A real
 * exporter never announces a size it could not have exported, so the check
 * of the ATTACH reply's size is tested here, on the function the importer
 * calls before it takes the size (pb_tcp_rail_connect).
 */
#include <stdint.h>

#include "harness.h"
#include "rsm/tcp/wire.h"

/* sizes an exporter can export are accepted, up to the largest one */
static void case_attach_size_exportable_accepted(void)
{
    CHECK(pb_tcp_attach_size_check(1) == NULL);
    CHECK(pb_tcp_attach_size_check(4096) == NULL);
    CHECK(pb_tcp_attach_size_check((uint64_t)1 << 30) == NULL);
    CHECK(pb_tcp_attach_size_check(PB_TCP_MAX_SEGMENT_SIZE) == NULL);
}

/* 0, and anything above the largest exportable segment, is refused */
static void case_attach_size_impossible_refused(void)
{
    CHECK(pb_tcp_attach_size_check(0) != NULL);
    CHECK(pb_tcp_attach_size_check(PB_TCP_MAX_SEGMENT_SIZE + 1) != NULL);
    CHECK(pb_tcp_attach_size_check((uint64_t)1 << 62) != NULL);
    CHECK(pb_tcp_attach_size_check(UINT64_MAX) != NULL);
}

static const pbt_case_t cases[] = {
    PBT_CASE(attach_size_exportable_accepted),
    PBT_CASE(attach_size_impossible_refused),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
