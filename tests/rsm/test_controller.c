/* Controllers, attributes, topology, node ids, error strings and
 * segment-id reservations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsm_util.h"

static void case_get_controller_under_test_succeeds(void)
{
    rsmapi_controller_handle_t c = NULL;

    CHECK_OK(rsm_get_controller((char *)pbt_ctlr_name(), &c));
    CHECK(c != NULL);
    CHECK_OK(rsm_release_controller(c));
}

static void case_get_controller_shm_aliases_resolve(void)
{
    static const char *const names[] = {"shm", "shm0", "loopback"};

    for (size_t i = 0; i < 3; i++) {
        rsmapi_controller_handle_t c = NULL;

        CHECK_MSG(rsm_get_controller((char *)names[i], &c) == RSM_SUCCESS && c != NULL,
                  "rsm_get_controller(\"%s\") failed", names[i]);
        CHECK_OK(rsm_release_controller(c));
    }
}

static void case_get_controller_repeated_returns_same_handle(void)
{
    rsmapi_controller_handle_t a = NULL, b = NULL;

    CHECK_OK(rsm_get_controller((char *)pbt_ctlr_name(), &a));
    CHECK_OK(rsm_get_controller((char *)pbt_ctlr_name(), &b));
    CHECK(a == b);
    CHECK_OK(rsm_release_controller(a));
    CHECK_OK(rsm_release_controller(b));
}

static void case_get_controller_unknown_name_not_present(void)
{
    rsmapi_controller_handle_t c = NULL;

    CHECK_RC(rsm_get_controller("no-such-controller", &c), RSMERR_CTLR_NOT_PRESENT);
    CHECK_RC(rsm_get_controller("", &c), RSMERR_CTLR_NOT_PRESENT);
    CHECK_RC(rsm_get_controller("sci0", &c), RSMERR_CTLR_NOT_PRESENT);
}

static void case_get_controller_null_args_bad_addr(void)
{
    rsmapi_controller_handle_t c = NULL;

    CHECK_RC(rsm_get_controller(NULL, &c), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_get_controller((char *)pbt_ctlr_name(), NULL), RSMERR_BAD_ADDR);
}

static void case_get_controller_version_checked(void)
{
    rsmapi_controller_handle_t c = NULL;

    CHECK_OK(rsm_get_controller_version((char *)pbt_ctlr_name(), RSM_VERSION, &c));
    CHECK_OK(rsm_release_controller(c));
    CHECK_RC(rsm_get_controller_version((char *)pbt_ctlr_name(), RSM_VERSION + 1, &c),
             RSMERR_BAD_LIBRARY_VERSION);
    CHECK_RC(rsm_get_controller_version("no-such-controller", RSM_VERSION, &c),
             RSMERR_CTLR_NOT_PRESENT);
    CHECK_RC(rsm_get_controller_version(NULL, RSM_VERSION, &c), RSMERR_BAD_ADDR);
}

static void case_release_controller_more_than_got_bad_ctlr_hndl(void)
{
    rsmapi_controller_handle_t a = NULL, b = NULL;

    CHECK_OK(rsm_get_controller((char *)pbt_ctlr_name(), &a));
    CHECK_OK(rsm_get_controller((char *)pbt_ctlr_name(), &b));
    CHECK_OK(rsm_release_controller(a));
    CHECK_OK(rsm_release_controller(b));
    CHECK_RC(rsm_release_controller(a), RSMERR_BAD_CTLR_HNDL);
    /* and it can be got again afterwards */
    CHECK_OK(rsm_get_controller((char *)pbt_ctlr_name(), &a));
    CHECK_OK(rsm_release_controller(a));
}

static void case_release_controller_null_bad_ctlr_hndl(void)
{
    CHECK_RC(rsm_release_controller(NULL), RSMERR_BAD_CTLR_HNDL);
}

static void case_get_controller_attr_reports_limits(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsmapi_controller_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    CHECK_OK(rsm_get_controller_attr(c, &attr));
    CHECK_EQ_U64(attr.attr_page_size, pbt_page_size());
    CHECK(attr.attr_max_export_segment_size >= pbt_page_size());
    CHECK(attr.attr_max_export_segments >= 1);
    CHECK(attr.attr_max_import_segments >= 1);
    CHECK((attr.attr_direct_access_sizes & RSM_DAS8) != 0);
    CHECK_OK(rsm_release_controller(c));
}

static void case_get_controller_attr_bad_args_rejected(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsmapi_controller_attr_t attr;

    CHECK_RC(rsm_get_controller_attr(c, NULL), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_get_controller_attr(NULL, &attr), RSMERR_BAD_CTLR_HNDL);
    CHECK_OK(rsm_release_controller(c));
    CHECK_RC(rsm_get_controller_attr(c, &attr), RSMERR_BAD_CTLR_HNDL);
}

static void case_topology_null_bad_topology_ptr(void)
{
    CHECK_RC(rsm_get_interconnect_topology(NULL), RSMERR_BAD_TOPOLOGY_PTR);
}

static void case_topology_lists_local_node_active(void)
{
    rsm_topology_t *t = NULL;
    rsm_node_id_t self = rsm_get_local_nodeid();
    int found_shm = 0;

    CHECK_OK(rsm_get_interconnect_topology(&t));
    CHECK(t != NULL);
    CHECK_EQ_U64(t->topology_hdr.local_nodeid, self);
    CHECK(t->topology_hdr.local_cntlr_count >= 1);
    for (uint_t i = 0; i < t->topology_hdr.local_cntlr_count; i++) {
        rsm_connections_t *conn = t->connections[i];

        CHECK(conn != NULL);
        if (strcmp(conn->hdr.cntlr_name, "shm") != 0)
            continue;
        found_shm = 1;
        CHECK(conn->hdr.remote_cntlr_count >= 1);
        int found_self = 0;
        for (int j = 0; j < conn->hdr.remote_cntlr_count; j++) {
            if (conn->remote_cntlr[j].remote_nodeid == self) {
                found_self = 1;
                CHECK_EQ_U64(conn->remote_cntlr[j].connection_state, RSM_CONNECTION_ACTIVE);
            }
        }
        CHECK_MSG(found_self, "controller shm does not list the local node %u", self);
    }
    CHECK_MSG(found_shm, "no controller named \"shm\" in the topology");
    rsm_free_interconnect_topology(t);
}

static void case_free_topology_null_ok(void)
{
    rsm_free_interconnect_topology(NULL);
}

static void case_get_local_nodeid_default_zero(void)
{
    unsetenv("POSTBOX_NODE_ID");
    CHECK_EQ_U64(rsm_get_local_nodeid(), 0);
}

static void case_get_local_nodeid_from_env(void)
{
    setenv("POSTBOX_NODE_ID", "7", 1);
    CHECK_EQ_U64(rsm_get_local_nodeid(), 7);
}

static void case_strerror_describes_every_code(void)
{
    for (int code = 0; code <= RSMERR_SEG_NOT_CONNECTED; code++) {
        const char *s = rsm_strerror(code);

        CHECK_MSG(s != NULL && *s != '\0', "rsm_strerror(%d) is empty", code);
        if (code > 0) {
            CHECK_MSG(strcmp(s, rsm_strerror(0)) != 0, "rsm_strerror(%d) says success", code);
        }
    }
    CHECK(rsm_strerror(RSMERR_BAD_ARGS_ERRORS) != NULL);
    CHECK(rsm_strerror(-1) != NULL && *rsm_strerror(-1) != '\0');
    CHECK(rsm_strerror(99999) != NULL && *rsm_strerror(99999) != '\0');
}

/* ---- segment-id reservations (the file is named by an env var read on first use,
 * so each case sets it before its first RSM call) ---- */

static char idfile[64];

static void idfile_write(const char *text)
{
    int fd;

    snprintf(idfile, sizeof(idfile), "/tmp/pbt-segid-XXXXXX");
    fd = mkstemp(idfile);
    CHECK_SYS(fd);
    if (text != NULL)
        CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    setenv("POSTBOX_RSM_SEGMENTID_FILE", idfile, 1);
}

static void case_get_segmentid_range_listed_appid(void)
{
    rsm_memseg_id_t base = 0;
    uint32_t len = 0;
    int rc;

    idfile_write("# comment\nreserve other 0x400000 16\nreserve pbtapp 0x80001000 256\n");
    rc = rsm_get_segmentid_range("pbtapp", &base, &len);
    unlink(idfile);
    CHECK_RC(rc, RSM_SUCCESS);
    CHECK_EQ_U64(base, 0x80001000u);
    CHECK_EQ_U64(len, 256);
}

/* a hexadecimal length is either understood or rejected, never misread */
static void case_get_segmentid_range_hex_length_not_misread(void)
{
    rsm_memseg_id_t base = 0;
    uint32_t len = 0;
    int rc;

    idfile_write("reserve pbtapp 0x80001000 0x100\n");
    rc = rsm_get_segmentid_range("pbtapp", &base, &len);
    unlink(idfile);
    CHECK_MSG(rc == RSMERR_BAD_CONF || (rc == RSM_SUCCESS && len == 0x100),
              "length 0x100 gave rc %d (%s) and length %u", rc, rsm_strerror(rc), len);
}

static void case_get_segmentid_range_unlisted_bad_appid(void)
{
    rsm_memseg_id_t base = 0;
    uint32_t len = 0;
    int rc;

    idfile_write("reserve pbtapp 0x80001000 0x100\n");
    rc = rsm_get_segmentid_range("nosuchapp", &base, &len);
    unlink(idfile);
    CHECK_RC(rc, RSMERR_BAD_APPID);
}

static void case_get_segmentid_range_missing_file_bad_conf(void)
{
    rsm_memseg_id_t base = 0;
    uint32_t len = 0;

    setenv("POSTBOX_RSM_SEGMENTID_FILE", "/nonexistent/pbt/rsm.segmentid", 1);
    CHECK_RC(rsm_get_segmentid_range("pbtapp", &base, &len), RSMERR_BAD_CONF);
}

static void case_get_segmentid_range_malformed_bad_conf(void)
{
    rsm_memseg_id_t base = 0;
    uint32_t len = 0;
    int rc;

    idfile_write("reserve pbtapp zzz\n");
    rc = rsm_get_segmentid_range("pbtapp", &base, &len);
    unlink(idfile);
    CHECK_RC(rc, RSMERR_BAD_CONF);
}

static void case_get_segmentid_range_null_args_bad_addr(void)
{
    rsm_memseg_id_t base = 0;
    uint32_t len = 0;
    int rc1, rc2, rc3;

    idfile_write("reserve pbtapp 0x80001000 0x100\n");
    rc1 = rsm_get_segmentid_range(NULL, &base, &len);
    rc2 = rsm_get_segmentid_range("pbtapp", NULL, &len);
    rc3 = rsm_get_segmentid_range("pbtapp", &base, NULL);
    unlink(idfile);
    CHECK_RC(rc1, RSMERR_BAD_ADDR);
    CHECK_RC(rc2, RSMERR_BAD_ADDR);
    CHECK_RC(rc3, RSMERR_BAD_ADDR);
}

static void case_controller_release_keeps_segments_valid(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    size_t size = pbt_page_size();
    void *mem = pbt_alloc_pages(size);
    rsm_memseg_export_handle_t h;
    rsm_memseg_id_t id = 0;

    CHECK_OK(rsm_memseg_export_create(c, &h, mem, size, 0));
    CHECK_OK(rsm_release_controller(c));
    CHECK_OK(rsm_memseg_export_publish(h, &id, NULL, 0));
    CHECK_OK(rsm_memseg_export_unpublish(h));
    CHECK_OK(rsm_memseg_export_destroy(h));
    pbt_free_pages(mem, size);
}

static void case_get_controller_shm_only_aliases(void)
{
    if (!pbt_is_shm())
        pbt_skip("alias names are those of the shm transport");
    case_get_controller_shm_aliases_resolve();
}

static const pbt_case_t cases[] = {
    PBT_CASE(get_controller_under_test_succeeds),
    PBT_CASE(get_controller_shm_only_aliases),
    PBT_CASE(get_controller_repeated_returns_same_handle),
    PBT_CASE(get_controller_unknown_name_not_present),
    PBT_CASE(get_controller_null_args_bad_addr),
    PBT_CASE(get_controller_version_checked),
    PBT_CASE(release_controller_more_than_got_bad_ctlr_hndl),
    PBT_CASE(release_controller_null_bad_ctlr_hndl),
    PBT_CASE(get_controller_attr_reports_limits),
    PBT_CASE(get_controller_attr_bad_args_rejected),
    PBT_CASE(topology_null_bad_topology_ptr),
    PBT_CASE(topology_lists_local_node_active),
    PBT_CASE(free_topology_null_ok),
    PBT_CASE(get_local_nodeid_default_zero),
    PBT_CASE(get_local_nodeid_from_env),
    PBT_CASE(strerror_describes_every_code),
    PBT_CASE(get_segmentid_range_listed_appid),
    PBT_CASE(get_segmentid_range_hex_length_not_misread),
    PBT_CASE(get_segmentid_range_unlisted_bad_appid),
    PBT_CASE(get_segmentid_range_missing_file_bad_conf),
    PBT_CASE(get_segmentid_range_malformed_bad_conf),
    PBT_CASE(get_segmentid_range_null_args_bad_addr),
    PBT_CASE(controller_release_keeps_segments_valid),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
