/*
 * pbt-xnode: the tcp transport between ranks on different nodes of a real
 * job, run by tests/python/test_tcp.py under `postbox run -n 2 --nodes 2`
 * (and `--netns` as root, where the nodes share no abstract sockets and
 * imports go through the LOOKUP relay).  Rank 0 imports, rank 1 exports.
 *
 *   pbt-xnode basic        topology, access list, put/get/barriers,
 *                          calls (pb_rsm_memseg_import_call) after a
 *                          segment-sized put, signals both ways, unpublish
 *   pbt-xnode exporter-dies  rank 1 forks an exporter and SIGKILLs it while
 *                          rank 0 streams puts: rank 0 must get
 *                          RSMERR_CONN_ABORTED within 2 s
 *   pbt-xnode link-cut     rank 0 streams puts and prints "streaming"; the
 *                          test cuts node 1's link; rank 0 must get an error
 *                          within POSTBOX_TCP_TIMEOUT_MS plus a margin
 *   pbt-xnode stopped-peer  rank 1 stops itself (SIGSTOP) twice.  First
 *                          before rank 0 connected to it: a connect (whose
 *                          lookup is relayed to rank 1, dialled at each of
 *                          its addresses) must fail with RSMERR_TIMEOUT
 *                          within POSTBOX_TCP_REQUEST_TIMEOUT_MS and a
 *                          little.  Then once rank 0 imported from it: a
 *                          lookup relayed over that connection must fail
 *                          likewise, and a get with RSMERR_TIMEOUT after
 *                          POSTBOX_TCP_REPLY_TIMEOUT_MS.  Rank 0 wakes it
 *                          each time
 *   pbt-xnode crossfire    both ranks stream puts at each other (the
 *                          sockets' buffers fill, the senders block) while
 *                          another thread of each reads 4 KB pieces of the
 *                          other's segment with get, over a second import
 *                          sharing the connection (a getter takes the
 *                          sockets' reading before it sends, and gives it
 *                          back before any send or lock that may block):
 *                          both must finish, each get must return the
 *                          bytes the other rank wrote there, and every
 *                          put must be in place after them
 *   pbt-xnode failover     (two rails) rank 0 streams striped puts and prints
 *                          "streaming"; the test cuts node 1's rail 0; the
 *                          stream must go on without an error, the topology
 *                          must show the rail down, and every region of the
 *                          segment must end with the last data put there
 *   pbt-xnode call-lost    (two rails) rank 0 makes a call without reply
 *                          confirmed by a get after it, prints "streaming";
 *                          the test cuts node 1's rail 0; rank 0 then makes
 *                          another call without reply, lost with the rail:
 *                          once the rail broke, the next get must fail
 *                          with RSMERR_CONN_ABORTED, and the get and
 *                          barrier after it succeed over rail 1 (the
 *                          counter shows the lost call never ran)
 *   pbt-xnode call-confirmed  the same without the call after the cut:
 *                          the get after the break must succeed (the call
 *                          before it was confirmed by the get's reply)
 *
 * With several rails (POSTBOX_TCP_ADDR or --netns --rails: a list of
 * addresses) the topology must list one tcp controller per rail, and basic
 * also moves a segment-sized put, which is striped.
 *
 * Each rank prints "rank R: ok" at the end; any failure exits non-zero
 * with a message.
 */
#include <postbox/job.h>
#include <postbox/rsm.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SEG_SIZE ((size_t)1 << 20)
#define WAIT_MS 10000

static int rank;

static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "pbt-xnode rank %d: ", rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void expect(int got, int want, const char *what)
{
    if (got != want)
        fail("%s returned %d (%s), expected %d (%s)", what, got, rsm_strerror(got), want,
             rsm_strerror(want));
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *pages(size_t size)
{
    char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (mem == MAP_FAILED)
        fail("mmap failed");
    return mem;
}

static void kvs_put_u32(const char *key, unsigned value)
{
    char text[16];

    snprintf(text, sizeof(text), "%u", value);
    if (postbox_job_kvs_put(key, text) != 0)
        fail("kvs put %s failed", key);
}

static unsigned kvs_get_u32(const char *key)
{
    char text[16];

    if (postbox_job_kvs_get(key, text, sizeof(text)) != 0)
        fail("kvs get %s failed", key);
    return (unsigned)strtoul(text, NULL, 10);
}

static void fence(void)
{
    if (postbox_job_fence() != 0)
        fail("fence failed");
}

/* Export SEG_SIZE bytes on @c, published to @acl (NULL: everyone). */
static rsm_memseg_export_handle_t export_segment(rsmapi_controller_handle_t c, char **mem_p,
                                                 rsmapi_access_entry_t *acl, uint_t acl_len,
                                                 rsm_memseg_id_t *segid_p)
{
    rsm_memseg_export_handle_t h;

    *mem_p = pages(SEG_SIZE);
    *segid_p = 0;
    expect(rsm_memseg_export_create(c, &h, *mem_p, SEG_SIZE, 0), RSM_SUCCESS, "export_create");
    expect(rsm_memseg_export_publish(h, segid_p, acl, acl_len), RSM_SUCCESS, "publish");
    return h;
}

/* How many rails this process has: the addresses in POSTBOX_TCP_ADDR or
 * the launcher's POSTBOX_NETNS_RAILS. */
static int rail_count(void)
{
    const char *list = getenv("POSTBOX_TCP_ADDR");
    int count = 1;

    if (list == NULL || list[0] == '\0')
        list = getenv("POSTBOX_NETNS_RAILS");
    for (; list != NULL && *list != '\0'; list++)
        count += *list == ',';
    return count;
}

/* The state of rail @rail's link to @node in the topology. */
static uint_t rail_state(int rail, rsm_node_id_t node)
{
    rsm_topology_t *t;
    char name[16];
    uint_t state = 0;

    if (rail_count() > 1)
        snprintf(name, sizeof(name), "tcp%d", rail);
    else
        snprintf(name, sizeof(name), "tcp");
    expect(rsm_get_interconnect_topology(&t), RSM_SUCCESS, "get_interconnect_topology");
    for (uint_t i = 0; i < t->topology_hdr.local_cntlr_count; i++) {
        rsm_connections_t *conn = t->connections[i];

        for (int n = 0; n < conn->hdr.remote_cntlr_count; n++) {
            if (strcmp(conn->hdr.cntlr_name, name) == 0 &&
                conn->remote_cntlr[n].remote_nodeid == node)
                state = conn->remote_cntlr[n].connection_state;
        }
    }
    rsm_free_interconnect_topology(t);
    if (state == 0)
        fail("no controller %s to node %u in the topology", name, node);
    return state;
}

static void check_topology(void)
{
    rsm_topology_t *t;
    int found = 0;

    expect(rsm_get_interconnect_topology(&t), RSM_SUCCESS, "get_interconnect_topology");
    for (uint_t i = 0; i < t->topology_hdr.local_cntlr_count; i++) {
        rsm_connections_t *conn = t->connections[i];
        char want[16];

        if (rail_count() > 1)
            snprintf(want, sizeof(want), "tcp%d", found);
        else
            snprintf(want, sizeof(want), "tcp");
        if (strncmp(conn->hdr.cntlr_name, "tcp", 3) != 0)
            continue;
        if (strcmp(conn->hdr.cntlr_name, want) != 0)
            fail("tcp controller %u is called %s, not %s", i, conn->hdr.cntlr_name, want);
        found++;
        if (conn->hdr.remote_cntlr_count != postbox_job_node_count())
            fail("tcp topology lists %d nodes, the job has %d", conn->hdr.remote_cntlr_count,
                 postbox_job_node_count());
        for (int n = 0; n < conn->hdr.remote_cntlr_count; n++) {
            if (conn->remote_cntlr[n].remote_nodeid != (rsm_node_id_t)n ||
                conn->remote_cntlr[n].connection_state != RSM_CONNECTION_ACTIVE)
                fail("tcp topology entry %d is node %u state %u", n,
                     conn->remote_cntlr[n].remote_nodeid, conn->remote_cntlr[n].connection_state);
        }
    }
    rsm_free_interconnect_topology(t);
    if (found != rail_count())
        fail("%d tcp controllers in the topology, this process has %d rails", found, rail_count());
}

/* Byte @i of the data round @round puts in region @region. */
static char pattern(unsigned round, unsigned region, size_t i)
{
    return (char)(round * 31u + region * 7u + (unsigned)(i % 251));
}

static void fill(char *buf, size_t len, unsigned round, unsigned region)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern(round, region, i);
}

/* Rank 0: a put of the whole segment (striped when there are several
 * rails), read back with get. */
static void whole_segment_round_trip(rsm_memseg_import_handle_t im, rsmapi_barrier_t *bar)
{
    char *out = pages(SEG_SIZE), *in = pages(SEG_SIZE);

    fill(out, SEG_SIZE, 1, 0);
    expect(rsm_memseg_import_open_barrier(bar), RSM_SUCCESS, "open_barrier");
    expect(rsm_memseg_import_put(im, 0, out, SEG_SIZE), RSM_SUCCESS, "put of the segment");
    expect(rsm_memseg_import_close_barrier(bar), RSM_SUCCESS, "close_barrier");
    expect(rsm_memseg_import_get(im, 0, in, SEG_SIZE), RSM_SUCCESS, "get of the segment");
    if (memcmp(in, out, SEG_SIZE) != 0)
        fail("a segment-sized put does not read back");
    munmap(out, SEG_SIZE);
    munmap(in, SEG_SIZE);
}

#define CALL_COUNTER_AT 16384 /* the uint64_t calls without reply add to */

/* Rank 1's call handler: an empty request asks for the sum of the
 * segment's bytes (the reply: a uint64_t); an 8-byte one adds its value to
 * the counter at CALL_COUNTER_AT. */
static void segment_call(void *arg, void *seg_base, size_t seg_size, const void *request,
                         size_t request_len, void *reply, size_t reply_max, size_t *reply_len)
{
    const unsigned char *seg = seg_base;
    uint64_t value;

    (void)arg;
    if (request_len == 0 && reply_max >= sizeof(value)) {
        value = 0;
        for (size_t i = 0; i < seg_size; i++)
            value += seg[i];
        memcpy(reply, &value, sizeof(value));
        *reply_len = sizeof(value);
    } else if (request_len == sizeof(value)) {
        uint64_t counter;

        memcpy(&value, request, sizeof(value));
        memcpy(&counter, seg + CALL_COUNTER_AT, sizeof(counter));
        counter += value;
        memcpy((char *)seg_base + CALL_COUNTER_AT, &counter, sizeof(counter));
    }
}

/* Rank 0: a segment-sized put (striped when there are several rails, and
 * not waited for), then a call that must see all of it; then calls
 * without reply, all applied once the barrier after them returns. */
static void calls_after_striped_put(rsm_memseg_import_handle_t im, rsmapi_barrier_t *bar)
{
    char *out = pages(SEG_SIZE);
    uint64_t sum = 0, got = 0, one = 1, zero = 0;
    size_t len = 0;

    fill(out, SEG_SIZE, 2, 0);
    for (size_t i = 0; i < SEG_SIZE; i++)
        sum += (unsigned char)out[i];
    expect(rsm_memseg_import_put(im, 0, out, SEG_SIZE), RSM_SUCCESS, "put of the segment");
    expect(pb_rsm_memseg_import_call(im, NULL, 0, &got, sizeof(got), &len, 0), RSM_SUCCESS,
           "call after the put");
    if (len != sizeof(got) || got != sum)
        fail("a call does not see the segment-sized put before it");
    expect(rsm_memseg_import_put(im, CALL_COUNTER_AT, &zero, sizeof(zero)), RSM_SUCCESS, "put");
    for (int i = 0; i < 100; i++)
        expect(
            pb_rsm_memseg_import_call(im, &one, sizeof(one), NULL, 0, NULL, PB_RSM_CALL_NO_REPLY),
            RSM_SUCCESS, "call without reply");
    expect(rsm_memseg_import_open_barrier(bar), RSM_SUCCESS, "open_barrier");
    expect(rsm_memseg_import_close_barrier(bar), RSM_SUCCESS, "close_barrier after calls");
    expect(rsm_memseg_import_get(im, CALL_COUNTER_AT, &got, sizeof(got)), RSM_SUCCESS, "get");
    if (got != 100)
        fail("%llu of 100 calls without reply applied by the barrier after them",
             (unsigned long long)got);
    munmap(out, SEG_SIZE);
}

static void basic(rsmapi_controller_handle_t c)
{
    rsm_node_id_t node0 = postbox_job_node(0), node1 = postbox_job_node(1);

    check_topology();
    if (rank == 1) {
        /* rank 0's node may write; no other node is listed */
        rsmapi_access_entry_t acl = {node0, 0600};
        rsm_memseg_id_t segid;
        char *mem;
        rsm_memseg_export_handle_t h = export_segment(c, &mem, &acl, 1, &segid);

        expect(pb_rsm_memseg_export_set_handler(h, segment_call, NULL), RSM_SUCCESS, "set_handler");
        kvs_put_u32("xnode-segid", segid);
        fence();
        expect(rsm_intr_signal_wait(h, WAIT_MS), RSM_SUCCESS, "exporter signal_wait");
        if (memcmp(mem + 4096, "from rank 0", 12) != 0)
            fail("rank 0's put is not in this segment");
        memcpy(mem + 8192, "from rank 1", 12);
        expect(rsm_intr_signal_post(h, 0), RSM_SUCCESS, "exporter signal_post");
        fence(); /* rank 0 checked */
        expect(rsm_memseg_export_unpublish(h), RSM_SUCCESS, "unpublish");
        fence(); /* rank 0 sees the withdrawal */
        expect(rsm_memseg_export_destroy(h), RSM_SUCCESS, "export_destroy");
    } else {
        rsm_memseg_import_handle_t im;
        rsmapi_barrier_t bar;
        char buf[16] = {0};
        rsm_memseg_id_t segid;
        int rc;

        fence();
        segid = kvs_get_u32("xnode-segid");
        expect(rsm_memseg_import_connect(c, node1, segid + 1, RSM_PERM_RDWR, &im),
               RSMERR_SEG_NOT_PUBLISHED, "connect to an id nobody published");
        expect(rsm_memseg_import_connect(c, node1, segid, RSM_PERM_RDWR, &im), RSM_SUCCESS,
               "connect");
        expect(rsm_memseg_import_map(im, (void **)&buf, RSM_MAP_NONE, RSM_PERM_READ, 0, 4096),
               RSMERR_MAP_FAILED, "map over tcp");
        expect(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT), RSM_SUCCESS, "set_mode");
        expect(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar), RSM_SUCCESS,
               "init_barrier");
        whole_segment_round_trip(im, &bar);
        calls_after_striped_put(im, &bar);
        expect(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS, "open_barrier");
        expect(rsm_memseg_import_put(im, 4096, "from rank 0", 12), RSM_SUCCESS, "put");
        expect(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS, "close_barrier");
        expect(rsm_memseg_import_get(im, 4096, buf, 12), RSM_SUCCESS, "get");
        if (memcmp(buf, "from rank 0", 12) != 0)
            fail("get does not read back the put");
        expect(rsm_intr_signal_post(im, 0), RSM_SUCCESS, "importer signal_post");
        expect(rsm_intr_signal_wait(im, WAIT_MS), RSM_SUCCESS, "importer signal_wait");
        expect(rsm_memseg_import_get(im, 8192, buf, 12), RSM_SUCCESS, "get");
        if (memcmp(buf, "from rank 1", 12) != 0)
            fail("rank 1's store before its post is not visible");
        fence();
        fence(); /* rank 1 unpublished */
        do {
            rc = rsm_memseg_import_put(im, 0, buf, 8);
        } while (rc == RSM_SUCCESS && rsm_intr_signal_wait(im, 100) != RSMERR_CONN_ABORTED);
        expect(rsm_memseg_import_put(im, 0, buf, 8), RSMERR_CONN_ABORTED, "put after unpublish");
        expect(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS, "destroy_barrier");
        expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
    }
}

/* Rank 0: stream 64 KB puts, each span closed by a barrier, until a call
 * fails; return its code and set *elapsed_p to the seconds since the
 * stream started (when "streaming" was printed). */
static int stream_until_error(rsm_memseg_import_handle_t im, double *elapsed_p)
{
    rsmapi_barrier_t bar;
    char *buf = pages(65536);
    double start;
    int rc = RSM_SUCCESS;

    expect(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT), RSM_SUCCESS, "set_mode");
    expect(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar), RSM_SUCCESS, "init_barrier");
    printf("streaming\n");
    fflush(stdout);
    start = now_s();
    while (rc == RSM_SUCCESS) {
        rc = rsm_memseg_import_open_barrier(&bar);
        if (rc == RSM_SUCCESS)
            rc = rsm_memseg_import_put(im, 0, buf, 65536);
        if (rc == RSM_SUCCESS)
            rc = rsm_memseg_import_close_barrier(&bar);
        if (now_s() - start > 60)
            fail("no error after 60 s of streaming");
    }
    *elapsed_p = now_s() - start;
    rsm_memseg_import_destroy_barrier(&bar);
    return rc;
}

static void exporter_dies(rsmapi_controller_handle_t c)
{
    if (rank == 1) {
        rsm_memseg_id_t segid;
        int ready[2];
        pid_t child;

        if (pipe(ready) != 0)
            fail("pipe failed");
        child = fork();
        if (child == 0) {
            char *mem;

            export_segment(c, &mem, NULL, 0, &segid);
            if (write(ready[1], &segid, sizeof(segid)) != (ssize_t)sizeof(segid))
                _exit(1);
            pause();
            _exit(0);
        }
        if (read(ready[0], &segid, sizeof(segid)) != (ssize_t)sizeof(segid))
            fail("the exporting child did not start");
        kvs_put_u32("xnode-segid", segid);
        fence();
        fence(); /* rank 0 streams */
        usleep(300000);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        printf("killed the exporter\n");
        fflush(stdout);
        fence();
    } else {
        rsm_memseg_import_handle_t im;
        double elapsed;
        int code;

        fence();
        expect(rsm_memseg_import_connect(c, postbox_job_node(1), kvs_get_u32("xnode-segid"),
                                         RSM_PERM_RDWR, &im),
               RSM_SUCCESS, "connect");
        fence();
        code = stream_until_error(im, &elapsed);
        expect(code, RSMERR_CONN_ABORTED, "put stream to a killed exporter");
        /* the kill came 0.3 s after the stream started */
        if (elapsed > 0.3 + 2.0)
            fail("the error came %.2f s after the stream started", elapsed);
        printf("error after %.2f s of streaming\n", elapsed);
        expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
        fence();
    }
}

static void link_cut(rsmapi_controller_handle_t c)
{
    if (rank == 1) {
        rsm_memseg_id_t segid;
        char *mem;
        rsm_memseg_export_handle_t h = export_segment(c, &mem, NULL, 0, &segid);

        kvs_put_u32("xnode-segid", segid);
        fence();
        fence(); /* rank 0 saw its error */
        expect(rsm_memseg_export_unpublish(h), RSM_SUCCESS, "unpublish");
        expect(rsm_memseg_export_destroy(h), RSM_SUCCESS, "export_destroy");
    } else {
        rsm_memseg_import_handle_t im;
        double elapsed;
        int code;

        fence();
        expect(rsm_memseg_import_connect(c, postbox_job_node(1), kvs_get_u32("xnode-segid"),
                                         RSM_PERM_RDWR, &im),
               RSM_SUCCESS, "connect");
        code = stream_until_error(im, &elapsed);
        if (code != RSMERR_CONN_ABORTED && code != RSMERR_REMOTE_NODE_UNREACHABLE)
            fail("put stream over a cut link returned %d (%s)", code, rsm_strerror(code));
        printf("error %d (%s) after %.2f s of streaming\n", code, rsm_strerror(code), elapsed);
        expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
        fence();
    }
}

#define FAILOVER_REGIONS 4
#define FAILOVER_REGION ((size_t)1 << 20)

/* Rank 0 streams region-sized puts (striped), a barrier after every
 * FAILOVER_REGIONS, while the test cuts rail 0; once the topology shows
 * the rail down it puts two more rounds and stops.  No call may fail.
 * Rank 1 then checks that every region holds the last round put there:
 * what was in flight on the cut rail was sent again over the other. */
static void failover(rsmapi_controller_handle_t c)
{
    size_t size = FAILOVER_REGIONS * FAILOVER_REGION;

    if (rail_count() < 2)
        fail("failover needs two rails: postbox run --netns --rails 2");
    if (rank == 1) {
        rsm_memseg_export_handle_t h;
        rsm_memseg_id_t segid = 0;
        unsigned rounds;
        char *mem = pages(size);

        expect(rsm_memseg_export_create(c, &h, mem, size, 0), RSM_SUCCESS, "export_create");
        expect(rsm_memseg_export_publish(h, &segid, NULL, 0), RSM_SUCCESS, "publish");
        kvs_put_u32("xnode-segid", segid);
        fence();
        fence(); /* rank 0's stream is over */
        rounds = kvs_get_u32("xnode-rounds");
        for (unsigned region = 0; region < FAILOVER_REGIONS && region < rounds; region++) {
            unsigned last = rounds - 1 - (rounds - 1 - region) % FAILOVER_REGIONS;

            for (size_t i = 0; i < FAILOVER_REGION; i++) {
                if (mem[region * FAILOVER_REGION + i] != pattern(last, region, i))
                    fail("region %u byte %zu is not round %u's (of %u)", region, i, last, rounds);
            }
        }
        printf("all %u regions hold their last round\n", FAILOVER_REGIONS);
        expect(rsm_memseg_export_unpublish(h), RSM_SUCCESS, "unpublish");
        expect(rsm_memseg_export_destroy(h), RSM_SUCCESS, "export_destroy");
    } else {
        rsm_memseg_import_handle_t im;
        rsmapi_barrier_t bar;
        char *buf = pages(FAILOVER_REGION);
        unsigned round = 0, after = 0;
        double start, down_at = 0;

        fence();
        expect(rsm_memseg_import_connect(c, postbox_job_node(1), kvs_get_u32("xnode-segid"),
                                         RSM_PERM_RDWR, &im),
               RSM_SUCCESS, "connect");
        if (rail_state(0, postbox_job_node(1)) != RSM_CONNECTION_ACTIVE ||
            rail_state(1, postbox_job_node(1)) != RSM_CONNECTION_ACTIVE)
            fail("both rails to node 1 should be active before the cut");
        expect(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT), RSM_SUCCESS, "set_mode");
        expect(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar), RSM_SUCCESS,
               "init_barrier");
        printf("streaming\n");
        fflush(stdout);
        start = now_s();
        expect(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS, "open_barrier");
        while (after < 2 * FAILOVER_REGIONS) {
            unsigned region = round % FAILOVER_REGIONS;

            fill(buf, FAILOVER_REGION, round, region);
            expect(rsm_memseg_import_put(im, region * FAILOVER_REGION, buf, FAILOVER_REGION),
                   RSM_SUCCESS, "put while a rail is cut");
            round++;
            if (round % FAILOVER_REGIONS == 0) {
                expect(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS,
                       "close_barrier while a rail is cut");
                expect(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS, "open_barrier");
                if (down_at == 0 && rail_state(0, postbox_job_node(1)) == RSM_CONNECTION_INACTIVE)
                    down_at = now_s();
            }
            if (down_at > 0)
                after++;
            if (now_s() - start > 60)
                fail("the topology did not show rail 0 down after 60 s");
        }
        expect(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS, "close_barrier");
        if (rail_state(1, postbox_job_node(1)) != RSM_CONNECTION_ACTIVE)
            fail("rail 1 should still be active");
        printf("rail 0 down after %.2f s; %u rounds, no error\n", down_at - start, round);
        kvs_put_u32("xnode-rounds", round);
        expect(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS, "destroy_barrier");
        fence();
        expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
    }
    fence();
}

/* Whether process @pid is stopped ('T' in /proc/PID/stat). */
static int process_stopped(pid_t pid)
{
    char path[64], line[512], *paren;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL)
        fail("cannot read %s", path);
    n = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[n] = '\0';
    paren = strrchr(line, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] == 'T';
}

/* The milliseconds in environment variable @name. */
static double env_seconds(const char *name)
{
    const char *value = getenv(name);

    if (value == NULL)
        fail("%s is not set", name);
    return atof(value) / 1000.0;
}

/* Wait until process @pid is stopped. */
static void wait_stopped(pid_t pid)
{
    for (int i = 0; !process_stopped(pid); i++) {
        if (i == 10000)
            fail("rank 1 did not stop");
        usleep(1000);
    }
}

/* Connect to a segment node 1 never published while its rank is stopped:
 * its node's rendezvous says so, and the LOOKUP relayed to rank 1 is never
 * answered (@what: how it is reached).  The deadline is the connect's,
 * whatever the relay's dials and requests. */
static void connect_times_out(rsmapi_controller_handle_t c, rsm_memseg_id_t segid, const char *what)
{
    double request_s = env_seconds("POSTBOX_TCP_REQUEST_TIMEOUT_MS");
    rsm_memseg_import_handle_t other;
    double start = now_s(), took;

    expect(rsm_memseg_import_connect(c, postbox_job_node(1), segid ^ 0x5a5a, RSM_PERM_RDWR, &other),
           RSMERR_TIMEOUT, "connect while node 1's rank is stopped");
    took = now_s() - start;
    if (took < request_s * 0.95 || took > request_s + 0.75)
        fail("the connect (%s) ended after %.2f s, not about %.2f", what, took, request_s);
    printf("lookup %s unanswered after %.2f s\n", what, took);
}

static void stopped_peer(rsmapi_controller_handle_t c)
{
    if (rank == 1) {
        rsm_memseg_export_handle_t h;
        rsm_memseg_id_t segid;
        char *mem;

        h = export_segment(c, &mem, NULL, 0, &segid);
        kvs_put_u32("xnode-segid", segid);
        kvs_put_u32("xnode-pid", (unsigned)getpid());
        fence();
        kill(getpid(), SIGSTOP); /* until rank 0 sends SIGCONT */
        fence();
        fence();                 /* rank 0 imported */
        kill(getpid(), SIGSTOP); /* again */
        fence();
        expect(rsm_memseg_export_unpublish(h), RSM_SUCCESS, "unpublish");
        expect(rsm_memseg_export_destroy(h), RSM_SUCCESS, "export_destroy");
    } else {
        double reply_s = env_seconds("POSTBOX_TCP_REPLY_TIMEOUT_MS");
        rsm_memseg_import_handle_t im;
        rsm_memseg_id_t segid;
        pid_t peer;
        char buf[4096];
        double start, took;

        fence();
        segid = kvs_get_u32("xnode-segid");
        peer = (pid_t)kvs_get_u32("xnode-pid");
        wait_stopped(peer);
        /* no connection to rank 1 yet: the kernel accepts the dials, and
         * the handshake is never answered */
        connect_times_out(c, segid, "dialled");
        kill(peer, SIGCONT);
        fence();
        expect(rsm_memseg_import_connect(c, postbox_job_node(1), segid, RSM_PERM_RDWR, &im),
               RSM_SUCCESS, "connect");
        expect(rsm_memseg_import_get(im, 0, buf, sizeof(buf)), RSM_SUCCESS, "get");
        fence();
        wait_stopped(peer);
        connect_times_out(c, segid, "over the connection");
        start = now_s();
        expect(rsm_memseg_import_get(im, 0, buf, sizeof(buf)), RSMERR_TIMEOUT,
               "get from a stopped exporter");
        took = now_s() - start;
        if (took < reply_s * 0.95 || took > reply_s + 2.0)
            fail("the get timed out after %.2f s, not about %.2f", took, reply_s);
        printf("get unanswered after %.2f s\n", took);
        kill(peer, SIGCONT);
        /* the late replies are dropped; the import works on */
        for (int rc = RSMERR_TIMEOUT, i = 0; rc != RSM_SUCCESS; i++) {
            rc = rsm_memseg_import_get(im, 0, buf, sizeof(buf));
            if (rc != RSMERR_TIMEOUT || i == 20)
                expect(rc, RSM_SUCCESS, "get once rank 1 runs again");
        }
        expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
        fence();
    }
}

#define CROSSFIRE_PUTS 256  /* puts of half the segment each rank streams */
#define CROSSFIRE_GETS 5000 /* 4 KB gets each rank makes meanwhile */
#define CROSSFIRE_PIECE 4096

typedef struct {
    rsm_memseg_import_handle_t im;
    int rc;
} crossfire_stream_t;

/* The streaming thread: CROSSFIRE_PUTS puts into the first half of the
 * other rank's segment, one barrier span around them all. */
static void *crossfire_stream(void *arg)
{
    crossfire_stream_t *st = arg;
    char *out = pages(SEG_SIZE / 2);
    rsmapi_barrier_t bar;

    fill(out, SEG_SIZE / 2, 4, (unsigned)rank);
    st->rc = rsm_memseg_import_init_barrier(st->im, RSM_BAR_DEFAULT, &bar);
    if (st->rc == RSM_SUCCESS)
        st->rc = rsm_memseg_import_open_barrier(&bar);
    for (int i = 0; i < CROSSFIRE_PUTS && st->rc == RSM_SUCCESS; i++)
        st->rc = rsm_memseg_import_put(st->im, 0, out, SEG_SIZE / 2);
    if (st->rc == RSM_SUCCESS)
        st->rc = rsm_memseg_import_close_barrier(&bar);
    munmap(out, SEG_SIZE / 2);
    return NULL;
}

static void crossfire(rsmapi_controller_handle_t c)
{
    int other = 1 - rank;
    char key[32], *mem, *expected = pages(SEG_SIZE / 2), piece[CROSSFIRE_PIECE];
    rsm_memseg_id_t segid;
    rsm_memseg_export_handle_t h = export_segment(c, &mem, NULL, 0, &segid);
    rsm_memseg_import_handle_t im_get;
    crossfire_stream_t st = {0};
    pthread_t streamer;
    double start;

    /* the second half: what the other rank's gets must read */
    fill(mem + SEG_SIZE / 2, SEG_SIZE / 2, 5, (unsigned)rank);
    fill(expected, SEG_SIZE / 2, 5, (unsigned)other);
    snprintf(key, sizeof(key), "xnode-segid-%d", rank);
    kvs_put_u32(key, segid);
    fence();
    snprintf(key, sizeof(key), "xnode-segid-%d", other);
    segid = kvs_get_u32(key);
    expect(rsm_memseg_import_connect(c, postbox_job_node(other), segid, RSM_PERM_RDWR, &st.im),
           RSM_SUCCESS, "connect (puts)");
    expect(rsm_memseg_import_connect(c, postbox_job_node(other), segid, RSM_PERM_RDWR, &im_get),
           RSM_SUCCESS, "connect (gets)");
    /* (explicit: no barrier after each put, so the stream fills the sockets) */
    expect(rsm_memseg_import_set_mode(st.im, RSM_BARRIER_MODE_EXPLICIT), RSM_SUCCESS, "set_mode");
    fence();
    start = now_s();
    if (pthread_create(&streamer, NULL, crossfire_stream, &st) != 0)
        fail("pthread_create failed");
    for (int i = 0; i < CROSSFIRE_GETS; i++) {
        size_t at = (size_t)i * CROSSFIRE_PIECE % (SEG_SIZE / 2);

        expect(rsm_memseg_import_get(im_get, SEG_SIZE / 2 + at, piece, sizeof(piece)), RSM_SUCCESS,
               "get during the streams");
        if (memcmp(piece, expected + at, sizeof(piece)) != 0)
            fail("get %d read bytes the other rank did not write there", i);
    }
    pthread_join(streamer, NULL);
    expect(st.rc, RSM_SUCCESS, "the stream of puts");
    printf("rank %d: %d gets beside %d puts of %zu B in %.2f s\n", rank, CROSSFIRE_GETS,
           CROSSFIRE_PUTS, SEG_SIZE / 2, now_s() - start);
    fence(); /* both streams are in */
    fill(expected, SEG_SIZE / 2, 4, (unsigned)other);
    if (memcmp(mem, expected, SEG_SIZE / 2) != 0)
        fail("the other rank's puts are not in this segment");
    expect(rsm_memseg_import_disconnect(im_get), RSM_SUCCESS, "disconnect");
    expect(rsm_memseg_import_disconnect(st.im), RSM_SUCCESS, "disconnect");
    fence();
    expect(rsm_memseg_export_unpublish(h), RSM_SUCCESS, "unpublish");
    expect(rsm_memseg_export_destroy(h), RSM_SUCCESS, "export_destroy");
    munmap(expected, SEG_SIZE / 2);
}

/* call-lost (@lose) and call-confirmed: see the top of the file. */
static void calls_and_cut(rsmapi_controller_handle_t c, int lose)
{
    if (rail_count() < 2)
        fail("call-lost needs two rails: postbox run --netns --rails 2");
    if (rank == 1) {
        rsm_memseg_id_t segid;
        char *mem;
        rsm_memseg_export_handle_t h = export_segment(c, &mem, NULL, 0, &segid);

        expect(pb_rsm_memseg_export_set_handler(h, segment_call, NULL), RSM_SUCCESS, "set_handler");
        kvs_put_u32("xnode-segid", segid);
        fence();
        fence(); /* rank 0 is done */
        expect(rsm_memseg_export_unpublish(h), RSM_SUCCESS, "unpublish");
        expect(rsm_memseg_export_destroy(h), RSM_SUCCESS, "export_destroy");
    } else {
        rsm_memseg_import_handle_t im;
        rsmapi_barrier_t bar;
        uint64_t one = 1, zero = 0, got = 0;
        int rc;

        fence();
        expect(rsm_memseg_import_connect(c, postbox_job_node(1), kvs_get_u32("xnode-segid"),
                                         RSM_PERM_RDWR, &im),
               RSM_SUCCESS, "connect");
        expect(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT), RSM_SUCCESS, "set_mode");
        expect(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar), RSM_SUCCESS,
               "init_barrier");
        /* (the barrier drops the put from rail 0's replay copy: sent again
         * after the cut, it would zero the counter) */
        expect(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS, "open_barrier");
        expect(rsm_memseg_import_put(im, CALL_COUNTER_AT, &zero, sizeof(zero)), RSM_SUCCESS, "put");
        expect(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS, "close_barrier");
        expect(
            pb_rsm_memseg_import_call(im, &one, sizeof(one), NULL, 0, NULL, PB_RSM_CALL_NO_REPLY),
            RSM_SUCCESS, "call without reply before the cut");
        expect(rsm_memseg_import_get(im, CALL_COUNTER_AT, &got, sizeof(got)), RSM_SUCCESS,
               "get before the cut");
        if (got != 1)
            fail("the counter is %llu before the cut, not 1", (unsigned long long)got);
        printf("streaming\n");
        fflush(stdout);
        sleep(1); /* the test cuts rail 0 meanwhile */
        if (lose)
            expect(pb_rsm_memseg_import_call(im, &one, sizeof(one), NULL, 0, NULL,
                                             PB_RSM_CALL_NO_REPLY),
                   RSM_SUCCESS, "call without reply after the cut");
        sleep(4); /* the rail breaks: POSTBOX_TCP_TIMEOUT_MS (2 s) of silence */
        rc = rsm_memseg_import_get(im, CALL_COUNTER_AT, &got, sizeof(got));
        if (lose) {
            expect(rc, RSMERR_CONN_ABORTED, "get after a call without reply lost with rail 0");
            rc = rsm_memseg_import_get(im, CALL_COUNTER_AT, &got, sizeof(got));
        }
        expect(rc, RSM_SUCCESS, "get over rail 1");
        if (got != 1)
            fail("the counter is %llu after the cut, not 1", (unsigned long long)got);
        expect(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS, "open_barrier");
        expect(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS, "close_barrier over rail 1");
        if (rail_state(0, postbox_job_node(1)) != RSM_CONNECTION_INACTIVE)
            fail("rail 0 should be down");
        printf(lose ? "the lost call failed the next get\n" : "no call lost, no error\n");
        expect(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS, "destroy_barrier");
        expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
        fence();
    }
}

int main(int argc, char **argv)
{
    rsmapi_controller_handle_t c;

    if (argc != 2) {
        fprintf(stderr,
                "usage: pbt-xnode basic|exporter-dies|link-cut|failover|stopped-peer|crossfire|"
                "call-lost|call-confirmed (2 ranks, 2 nodes)\n");
        return 2;
    }
    if (postbox_job_init() != 0)
        fail("postbox_job_init failed");
    rank = postbox_job_rank();
    if (postbox_job_size() != 2 || postbox_job_node_count() != 2)
        fail("run as 2 ranks on 2 nodes: postbox run -n 2 --nodes 2");
    expect(rsm_get_controller("tcp", &c), RSM_SUCCESS, "get_controller(tcp)");
    if (strcmp(argv[1], "basic") == 0)
        basic(c);
    else if (strcmp(argv[1], "exporter-dies") == 0)
        exporter_dies(c);
    else if (strcmp(argv[1], "link-cut") == 0)
        link_cut(c);
    else if (strcmp(argv[1], "failover") == 0)
        failover(c);
    else if (strcmp(argv[1], "stopped-peer") == 0)
        stopped_peer(c);
    else if (strcmp(argv[1], "crossfire") == 0)
        crossfire(c);
    else if (strcmp(argv[1], "call-lost") == 0)
        calls_and_cut(c, 1);
    else if (strcmp(argv[1], "call-confirmed") == 0)
        calls_and_cut(c, 0);
    else
        fail("unknown test %s", argv[1]);
    expect(rsm_release_controller(c), RSM_SUCCESS, "release_controller");
    postbox_job_finalize();
    printf("rank %d: ok\n", rank);
    return 0;
}
