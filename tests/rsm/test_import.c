/* Import side: connect and disconnect, access lists and permissions. */
#include <string.h>

#include "rsm_util.h"

#define PG (pbt_page_size())

static void case_connect_bad_perm_bad_perms(void)
{
    static const rsm_permission_t bad[] = {0, 0100, 0040, 0004, 0700, 0666, 0444, 01000};
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = pbt_connect(c, &ex, bad[i], &im);

        CHECK_MSG(rc == RSMERR_BAD_PERMS, "connect with perm 0%o returned %d (%s)", bad[i], rc,
                  rsm_strerror(rc));
    }
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_other_node_unreachable(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;

    if (!pbt_is_shm())
        pbt_skip("shm reaches only its own node");
    c = pbt_ctlr_get();
    pbt_exporter_start(&ex, &o);
    CHECK_RC(rsm_memseg_import_connect(c, ex.node + 1, ex.segid, RSM_PERM_RDWR, &im),
             RSMERR_REMOTE_NODE_UNREACHABLE);
    CHECK_RC(rsm_memseg_import_connect(c, 12345, ex.segid, RSM_PERM_RDWR, &im),
             RSMERR_REMOTE_NODE_UNREACHABLE);
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_unpublished_id_seg_not_published(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;

    CHECK_RC(rsm_memseg_import_connect(c, rsm_get_local_nodeid(), 0xFEDCBA98u, RSM_PERM_RDWR, &im),
             RSMERR_SEG_NOT_PUBLISHED);
    CHECK_RC(rsm_memseg_import_connect(c, rsm_get_local_nodeid(), RSM_HPC_ID_BASE + 77,
                                       RSM_PERM_READ, &im),
             RSMERR_SEG_NOT_PUBLISHED);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_created_not_published_seg_not_published(void)
{
    pbt_export_opts_t o = {.size = PG, .no_publish = 1, .segid = 0};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    ex.segid = 0x80abcdefu;
    CHECK_RC(pbt_connect(c, &ex, RSM_PERM_RDWR, &im), RSMERR_SEG_NOT_PUBLISHED);
    CHECK_OK(pbt_exporter_cmd(&ex, EX_EXIT, 0, 0, NULL));
    pbt_peer_join(&ex.peer, 10000, 0);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_acl_without_node_not_published_to_node(void)
{
    pbt_export_opts_t o = {.size = PG, .acl_len = 1, .acl = {{PBT_NODE_OTHER, 0666}}};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    CHECK_RC(pbt_connect(c, &ex, RSM_PERM_READ, &im), RSMERR_SEG_NOT_PUBLISHED_TO_NODE);
    CHECK_RC(pbt_connect(c, &ex, RSM_PERM_RDWR, &im), RSMERR_SEG_NOT_PUBLISHED_TO_NODE);
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

/* the owner digit of the list entry bounds what an importer of the same uid gets */
static void check_acl(rsm_permission_t granted, int read_ok, int write_ok)
{
    pbt_export_opts_t o = {
        .size = PG, .acl_len = 2, .acl = {{PBT_NODE_OTHER, 0666}, {PBT_NODE_LOCAL, granted}}};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;
    int rc;

    pbt_exporter_start(&ex, &o);
    rc = pbt_connect(c, &ex, RSM_PERM_READ, &im);
    CHECK_MSG(rc == (read_ok ? RSM_SUCCESS : RSMERR_PERM_DENIED),
              "ACL 0%o: connect READ returned %d (%s)", granted, rc, rsm_strerror(rc));
    if (rc == RSM_SUCCESS)
        CHECK_OK(rsm_memseg_import_disconnect(im));
    rc = pbt_connect(c, &ex, RSM_PERM_WRITE, &im);
    CHECK_MSG(rc == (write_ok ? RSM_SUCCESS : RSMERR_PERM_DENIED),
              "ACL 0%o: connect WRITE returned %d (%s)", granted, rc, rsm_strerror(rc));
    if (rc == RSM_SUCCESS)
        CHECK_OK(rsm_memseg_import_disconnect(im));
    rc = pbt_connect(c, &ex, RSM_PERM_RDWR, &im);
    CHECK_MSG(rc == (read_ok && write_ok ? RSM_SUCCESS : RSMERR_PERM_DENIED),
              "ACL 0%o: connect RDWR returned %d (%s)", granted, rc, rsm_strerror(rc));
    if (rc == RSM_SUCCESS)
        CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_acl_read_only_owner(void)
{
    check_acl(0400, 1, 0);
}

static void case_connect_acl_write_only_owner(void)
{
    check_acl(0200, 0, 1);
}

static void case_connect_acl_rdwr_owner(void)
{
    check_acl(0600, 1, 1);
}

static void case_connect_acl_group_other_digits_do_not_grant_owner(void)
{
    check_acl(0066, 0, 0);
}

static void case_connect_null_acl_grants_owner_rdwr(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t a, b, d;
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &a));
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_READ, &b));
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_WRITE, &d));
    CHECK(a != b && b != d && a != d);
    CHECK_OK(rsm_memseg_import_disconnect(a));
    CHECK_OK(rsm_memseg_import_disconnect(b));
    CHECK_OK(rsm_memseg_import_disconnect(d));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_null_args_rejected(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    CHECK_RC(pbt_connect(c, &ex, RSM_PERM_RDWR, NULL), RSMERR_BAD_ADDR);
    CHECK_RC(pbt_connect(NULL, &ex, RSM_PERM_RDWR, &im), RSMERR_BAD_CTLR_HNDL);
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_starts_in_implicit_mode(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    rsm_barrier_mode_t mode = RSM_BARRIER_MODE_EXPLICIT;
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_get_mode(im, &mode));
    CHECK_EQ_U64(mode, RSM_BARRIER_MODE_IMPLICIT);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_disconnect_twice_bad_seg_hndl(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_RC(rsm_memseg_import_disconnect(im), RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_disconnect(NULL), RSMERR_BAD_SEG_HNDL);
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_many_imports_of_one_segment(void)
{
    pbt_export_opts_t o = {.size = PG, .seed = 6};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im[16];
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    for (int i = 0; i < 16; i++)
        CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im[i]));
    for (int i = 0; i < 16; i++) {
        uint8_t v = (uint8_t)i;

        CHECK_OK(rsm_memseg_import_put(im[i], i, &v, 1));
    }
    for (int i = 0; i < 16; i++) {
        uint8_t v;

        CHECK_OK(rsm_memseg_import_get(im[(i + 5) % 16], i, &v, 1));
        CHECK_EQ_U64(v, i);
    }
    for (int i = 0; i < 16; i++)
        CHECK_OK(rsm_memseg_import_disconnect(im[i]));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

static void case_connect_two_segments_of_one_exporter_distinct(void)
{
    pbt_export_opts_t o1 = {.size = PG, .seed = 1}, o2 = {.size = 2 * PG, .seed = 2};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t a, b;
    pbt_exporter_t e1, e2;
    uint8_t buf[64];

    pbt_exporter_start(&e1, &o1);
    pbt_exporter_start(&e2, &o2);
    CHECK(e1.segid != e2.segid);
    CHECK_OK(pbt_connect(c, &e1, RSM_PERM_READ, &a));
    CHECK_OK(pbt_connect(c, &e2, RSM_PERM_READ, &b));
    CHECK_OK(rsm_memseg_import_get(a, 0, buf, sizeof(buf)));
    CHECK(pbt_check_pattern(buf, sizeof(buf), 0, 1) == (size_t)-1);
    CHECK_OK(rsm_memseg_import_get(b, 0, buf, sizeof(buf)));
    CHECK(pbt_check_pattern(buf, sizeof(buf), 0, 2) == (size_t)-1);
    /* sizes are the exporters' */
    CHECK_RC(rsm_memseg_import_get(a, PG, buf, 1), RSMERR_BAD_LENGTH);
    CHECK_OK(rsm_memseg_import_get(b, PG, buf, 1));
    CHECK_OK(rsm_memseg_import_disconnect(a));
    CHECK_OK(rsm_memseg_import_disconnect(b));
    pbt_exporter_stop(&e1);
    pbt_exporter_stop(&e2);
    CHECK_OK(rsm_release_controller(c));
}

static const pbt_case_t cases[] = {
    PBT_CASE(connect_bad_perm_bad_perms),
    PBT_CASE(connect_other_node_unreachable),
    PBT_CASE(connect_unpublished_id_seg_not_published),
    PBT_CASE(connect_created_not_published_seg_not_published),
    PBT_CASE(connect_acl_without_node_not_published_to_node),
    PBT_CASE(connect_acl_read_only_owner),
    PBT_CASE(connect_acl_write_only_owner),
    PBT_CASE(connect_acl_rdwr_owner),
    PBT_CASE(connect_acl_group_other_digits_do_not_grant_owner),
    PBT_CASE(connect_null_acl_grants_owner_rdwr),
    PBT_CASE(connect_null_args_rejected),
    PBT_CASE(connect_starts_in_implicit_mode),
    PBT_CASE(disconnect_twice_bad_seg_hndl),
    PBT_CASE(connect_many_imports_of_one_segment),
    PBT_CASE(connect_two_segments_of_one_exporter_distinct),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
