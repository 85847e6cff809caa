/* Import side: connect and disconnect, access lists and permissions. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* descriptors the caller holds before a connect, and what each refers to */
#define CANARY_FDS 12

typedef struct {
    int fd;
    dev_t dev;
    ino_t ino;
} held_fd_t;

static void held_fd_record(held_fd_t *held, int fd)
{
    struct stat st;

    CHECK_MSG(fstat(fd, &st) == 0, "fstat(%d) failed", fd);
    held->fd = fd;
    held->dev = st.st_dev;
    held->ino = st.st_ino;
}

static void held_fd_check(const held_fd_t *held, const char *when)
{
    struct stat st;

    CHECK_MSG(fcntl(held->fd, F_GETFD) >= 0, "%s: descriptor %d was closed", when, held->fd);
    CHECK_MSG(fstat(held->fd, &st) == 0 && st.st_dev == held->dev && st.st_ino == held->ino,
              "%s: descriptor %d now refers to another file", when, held->fd);
}

/* Fill the stack the connect is about to use with the numbers of @fds, so
 * that any slot it leaves uninitialised holds one of them, as it would if
 * earlier calls had left them there. */
static __attribute__((noinline)) void stack_fill_with_fds(const held_fd_t *fds, int count)
{
    volatile int area[16384];

    for (size_t i = 0; i < sizeof(area) / sizeof(area[0]); i++)
        area[i] = fds[i % (size_t)count].fd;
    __asm__ volatile("" : : "r"(area) : "memory");
}

/* A refused connect (permission denied, not published to this node)
 * closes no descriptor of the caller: its own published segment and its
 * other descriptors keep working. */
static void case_connect_refused_leaves_descriptors_alone(void)
{
    pbt_export_opts_t read_only = {.size = PG, .acl_len = 1, .acl = {{PBT_NODE_LOCAL, 0400}}};
    pbt_export_opts_t elsewhere = {.size = PG, .acl_len = 1, .acl = {{PBT_NODE_OTHER, 0600}}};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    held_fd_t held[CANARY_FDS + 3];
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pbt_local_export_t own;
    pbt_exporter_t ex_ro, ex_elsewhere;
    uint8_t v = 0x5a, back = 0;
    int count = 0;

    CHECK(null_fd >= 0);
    pbt_exporter_start(&ex_ro, &read_only);
    pbt_exporter_start(&ex_elsewhere, &elsewhere);
    pbt_local_export(&own, PG, 0, 0);
    /* low numbers first: stack garbage is mostly small integers */
    held_fd_record(&held[count++], 0);
    held_fd_record(&held[count++], ex_ro.peer.wr);
    held_fd_record(&held[count++], ex_elsewhere.peer.rd);
    for (int i = 0; i < CANARY_FDS; i++)
        held_fd_record(&held[count++], fcntl(null_fd, F_DUPFD_CLOEXEC, 3));
    for (int round = 0; round < 4; round++) {
        stack_fill_with_fds(held, count);
        CHECK_RC(pbt_connect(c, &ex_ro, RSM_PERM_RDWR, &im), RSMERR_PERM_DENIED);
        stack_fill_with_fds(held, count);
        CHECK_RC(pbt_connect(c, &ex_elsewhere, RSM_PERM_READ, &im),
                 RSMERR_SEG_NOT_PUBLISHED_TO_NODE);
        for (int i = 0; i < count; i++)
            held_fd_check(&held[i], "after refused connects");
    }
    /* the caller's own segment is still served, its exporters still obey */
    CHECK_OK(rsm_memseg_import_connect(c, own.node, own.segid, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_put(im, 7, &v, 1));
    CHECK_OK(rsm_memseg_import_get(im, 7, &back, 1));
    CHECK_EQ_U64(back, v);
    CHECK_EQ_U64(((volatile uint8_t *)own.mem)[7], v);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(pbt_connect(c, &ex_ro, RSM_PERM_READ, &im));
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_local_export_end(&own);
    pbt_exporter_stop(&ex_ro);
    pbt_exporter_stop(&ex_elsewhere);
    for (int i = 3; i < count; i++)
        close(held[i].fd);
    close(null_fd);
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
    PBT_CASE(connect_refused_leaves_descriptors_alone),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
