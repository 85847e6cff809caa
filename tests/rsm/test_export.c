/* Export side: create, publish, republish, unpublish, destroy, rebind. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rsm_util.h"

#define PG (pbt_page_size())

/* ---- export_create ----------------------------------------------------------- */

static void case_export_create_null_vaddr_bad_addr(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_export_handle_t h;

    CHECK_RC(rsm_memseg_export_create(c, &h, NULL, PG, 0), RSMERR_BAD_ADDR);
    CHECK_OK(rsm_release_controller(c));
}

static void case_export_create_unmapped_memory_bad_addr(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_export_handle_t h;
    void *mem = pbt_alloc_pages(2 * PG);

    pbt_free_pages(mem, 2 * PG);
    CHECK_RC(rsm_memseg_export_create(c, &h, mem, 2 * PG, 0), RSMERR_BAD_ADDR);
    CHECK_OK(rsm_release_controller(c));
}

static void case_export_create_read_only_memory_bad_addr(void)
{
    rsmapi_controller_handle_t c;
    rsm_memseg_export_handle_t h;
    void *mem;

    /* importers would write it (tcp: from the exporter's progress engine;
     * shm: through shared pages that would replace the read-only ones) */
    c = pbt_ctlr_get();
    mem = pbt_alloc_pages(2 * PG);
    CHECK_SYS(mprotect((char *)mem + PG, PG, PROT_READ));
    CHECK_RC(rsm_memseg_export_create(c, &h, mem, 2 * PG, 0), RSMERR_BAD_ADDR);
    pbt_free_pages(mem, 2 * PG);
    CHECK_OK(rsm_release_controller(c));
}

static void case_export_create_unaligned_vaddr_bad_mem_alignment(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_export_handle_t h;
    char *mem = pbt_alloc_pages(3 * PG);

    CHECK_RC(rsm_memseg_export_create(c, &h, mem + 8, PG, 0), RSMERR_BAD_MEM_ALIGNMENT);
    CHECK_RC(rsm_memseg_export_create(c, &h, mem + PG / 2, PG, 0), RSMERR_BAD_MEM_ALIGNMENT);
    CHECK_OK(rsm_release_controller(c));
    pbt_free_pages(mem, 3 * PG);
}

static void case_export_create_bad_size_bad_length(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_export_handle_t h;
    char *mem = pbt_alloc_pages(3 * PG);

    CHECK_RC(rsm_memseg_export_create(c, &h, mem, 0, 0), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_export_create(c, &h, mem, 100, 0), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_export_create(c, &h, mem, PG + 1, 0), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_export_create(c, &h, mem, 2 * PG - 8, 0), RSMERR_BAD_LENGTH);
    CHECK_OK(rsm_release_controller(c));
    pbt_free_pages(mem, 3 * PG);
}

static void case_export_create_unknown_flag_bad_mode(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_export_handle_t h;
    char *mem = pbt_alloc_pages(PG);

    CHECK_RC(rsm_memseg_export_create(c, &h, mem, PG, 0x100), RSMERR_BAD_MODE);
    CHECK_RC(rsm_memseg_export_create(c, &h, mem, PG, RSM_ALLOW_REBIND | 0x04), RSMERR_BAD_MODE);
    CHECK_OK(rsm_release_controller(c));
    pbt_free_pages(mem, PG);
}

static void case_export_create_null_controller_bad_ctlr_hndl(void)
{
    rsm_memseg_export_handle_t h;
    char *mem = pbt_alloc_pages(PG);

    CHECK_RC(rsm_memseg_export_create(NULL, &h, mem, PG, 0), RSMERR_BAD_CTLR_HNDL);
    pbt_free_pages(mem, PG);
}

static void case_export_create_known_flags_accepted(void)
{
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_export_handle_t h;
    char *mem = pbt_alloc_pages(PG);

    CHECK_OK(rsm_memseg_export_create(c, &h, mem, PG, RSM_ALLOW_REBIND | RSM_CREATE_SEG_DONTWAIT));
    CHECK_OK(rsm_memseg_export_destroy(h));
    CHECK_OK(rsm_release_controller(c));
    pbt_free_pages(mem, PG);
}

/* the contents survive create, the exporter keeps using the memory, and an
 * importer sees what the exporter writes afterwards */
static void importer_reads_back(pbt_peer_t *self, void *arg)
{
    pbt_seginfo_t si;
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    uint8_t *buf;

    pbt_recv(self->rd, &si, sizeof(si));
    c = pbt_ctlr_get();
    buf = malloc(si.size);
    CHECK_OK(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_READ, &im));
    CHECK_OK(rsm_memseg_import_get(im, 0, buf, si.size));
    CHECK_MSG(pbt_check_pattern(buf, si.size, 0, 9) == (size_t)-1,
              "importer does not see the exporter's writes made after create");
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
    free(buf);
    pbt_send_u32(self->wr, 1);
}

static void case_export_create_keeps_contents_and_shares_pages(void)
{
    pbt_peer_t imp = pbt_peer_start(importer_reads_back, NULL);
    pbt_local_export_t le;
    uint8_t *mem;
    pbt_seginfo_t si;
    size_t size = 4 * PG;
    rsmapi_controller_handle_t c = pbt_ctlr_get();

    mem = pbt_alloc_pages(size);
    pbt_fill_pattern(mem, size, 0, 3);
    memset(&le, 0, sizeof(le));
    CHECK_OK(rsm_memseg_export_create(c, &le.h, mem, size, 0));
    CHECK_MSG(pbt_check_pattern(mem, size, 0, 3) == (size_t)-1,
              "export_create changed the memory's contents");
    pbt_fill_pattern(mem, size, 0, 9); /* still usable by the exporter */
    si.node = rsm_get_local_nodeid();
    si.segid = 0;
    CHECK_OK(rsm_memseg_export_publish(le.h, &si.segid, NULL, 0));
    si.size = size;
    pbt_send(imp.wr, &si, sizeof(si));
    CHECK_EQ_U64(pbt_recv_u32(imp.rd), 1);
    pbt_peer_join(&imp, 10000, 0);
    CHECK_OK(rsm_memseg_export_unpublish(le.h));
    CHECK_OK(rsm_memseg_export_destroy(le.h));
    CHECK_OK(rsm_release_controller(c));
    pbt_free_pages(mem, size);
}

/* ---- publish ------------------------------------------------------------------ */

static void case_publish_null_segid_ptr_bad_addr(void)
{
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 1);
    CHECK_RC(rsm_memseg_export_publish(le.h, NULL, NULL, 0), RSMERR_BAD_ADDR);
    pbt_local_export_end(&le);
}

static void case_publish_zero_id_picks_user_range(void)
{
    pbt_local_export_t a, b;
    rsm_memseg_id_t ida = 0, idb = 0;

    pbt_local_export(&a, PG, 0, 1);
    pbt_local_export(&b, PG, 0, 1);
    CHECK_OK(rsm_memseg_export_publish(a.h, &ida, NULL, 0));
    CHECK_OK(rsm_memseg_export_publish(b.h, &idb, NULL, 0));
    a.published = b.published = 1;
    CHECK_MSG(ida >= RSM_USER_APP_ID_BASE, "picked id 0x%x is below the user range", ida);
    CHECK_MSG(idb >= RSM_USER_APP_ID_BASE, "picked id 0x%x is below the user range", idb);
    CHECK(ida != idb);
    pbt_local_export_end(&a);
    pbt_local_export_end(&b);
}

static void case_publish_reserved_id_rejected(void)
{
    static const rsm_memseg_id_t bad[] = {1,
                                          RSM_DRIVER_PRIVATE_ID_END,
                                          RSM_CLUSTER_TRANSPORT_ID_BASE,
                                          RSM_RSMLIB_ID_BASE,
                                          RSM_DLPI_ID_END,
                                          RSM_HPC_ID_BASE - 1,
                                          RSM_HPC_ID_END + 1,
                                          RSM_OPS_ID_BASE,
                                          0x7FFFFFFFu};
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rsm_memseg_id_t id = bad[i];
        int rc = rsm_memseg_export_publish(le.h, &id, NULL, 0);

        CHECK_MSG(rc == RSMERR_RESERVED_SEGID, "publish id 0x%x returned %d (%s)", bad[i], rc,
                  rsm_strerror(rc));
    }
    pbt_local_export_end(&le);
}

static void case_publish_hpc_and_user_ids_accepted(void)
{
    static const rsm_memseg_id_t good[] = {RSM_HPC_ID_BASE + 0x1234, RSM_HPC_ID_END - 7,
                                           RSM_USER_APP_ID_BASE + 0x4321, 0xFFFFFFF0u};
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 1);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        rsm_memseg_id_t id = good[i] ^ (rsm_memseg_id_t)(getpid() & 0xff);

        CHECK_OK(rsm_memseg_export_publish(le.h, &id, NULL, 0));
        CHECK_EQ_U64(id, good[i] ^ (rsm_memseg_id_t)(getpid() & 0xff));
        CHECK_OK(rsm_memseg_export_unpublish(le.h));
    }
    pbt_local_export_end(&le);
}

static void case_publish_id_in_use_same_process(void)
{
    pbt_local_export_t a, b;
    rsm_memseg_id_t id = 0, id2;

    pbt_local_export(&a, PG, 0, 1);
    pbt_local_export(&b, PG, 0, 1);
    CHECK_OK(rsm_memseg_export_publish(a.h, &id, NULL, 0));
    a.published = 1;
    id2 = id;
    CHECK_RC(rsm_memseg_export_publish(b.h, &id2, NULL, 0), RSMERR_SEGID_IN_USE);
    /* b is still publishable under another id */
    id2 = 0;
    CHECK_OK(rsm_memseg_export_publish(b.h, &id2, NULL, 0));
    b.published = 1;
    pbt_local_export_end(&a);
    pbt_local_export_end(&b);
}

static void case_publish_id_in_use_other_process(void)
{
    pbt_export_opts_t o = {.size = PG};
    pbt_exporter_t ex;
    pbt_local_export_t le;
    rsm_memseg_id_t id;

    pbt_exporter_start(&ex, &o);
    pbt_local_export(&le, PG, 0, 1);
    id = ex.segid;
    if (ex.node != le.node) {
        /* segment ids are per node: the other node's id is free here */
        CHECK_OK(rsm_memseg_export_publish(le.h, &id, NULL, 0));
        CHECK_OK(rsm_memseg_export_unpublish(le.h));
    } else {
        CHECK_RC(rsm_memseg_export_publish(le.h, &id, NULL, 0), RSMERR_SEGID_IN_USE);
    }
    /* once the other process unpublishes, the id is free again */
    CHECK_OK(pbt_exporter_cmd(&ex, EX_UNPUBLISH, 0, 0, NULL));
    id = ex.segid;
    CHECK_OK(rsm_memseg_export_publish(le.h, &id, NULL, 0));
    le.published = 1;
    pbt_exporter_stop(&ex);
    pbt_local_export_end(&le);
}

static void case_publish_null_acl_with_length_bad_acl(void)
{
    pbt_local_export_t le;
    rsm_memseg_id_t id = 0;

    pbt_local_export(&le, PG, 0, 1);
    CHECK_RC(rsm_memseg_export_publish(le.h, &id, NULL, 2), RSMERR_BAD_ACL);
    pbt_local_export_end(&le);
}

static void case_publish_bad_permission_bits_bad_perms(void)
{
    static const rsm_permission_t bad[] = {0700, 0777, 0001, 01000, 0x10000};
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rsmapi_access_entry_t e = {le.node, bad[i]};
        rsm_memseg_id_t id = 0;
        int rc = rsm_memseg_export_publish(le.h, &id, &e, 1);

        CHECK_MSG(rc == RSMERR_BAD_PERMS, "publish with permission 0%o returned %d (%s)", bad[i],
                  rc, rsm_strerror(rc));
    }
    pbt_local_export_end(&le);
}

static void case_publish_valid_acl_accepted(void)
{
    pbt_local_export_t le;
    rsmapi_access_entry_t e[2];
    rsm_memseg_id_t id = 0;

    pbt_local_export(&le, PG, 0, 1);
    e[0].ae_node = le.node;
    e[0].ae_permission = 0666;
    e[1].ae_node = le.node + 1;
    e[1].ae_permission = 0400;
    CHECK_OK(rsm_memseg_export_publish(le.h, &id, e, 2));
    le.published = 1;
    pbt_local_export_end(&le);
}

static void case_publish_twice_already_published(void)
{
    pbt_local_export_t le;
    rsm_memseg_id_t id = 0;

    pbt_local_export(&le, PG, 0, 0);
    CHECK_RC(rsm_memseg_export_publish(le.h, &id, NULL, 0), RSMERR_SEG_ALREADY_PUBLISHED);
    id = le.segid;
    CHECK_RC(rsm_memseg_export_publish(le.h, &id, NULL, 0), RSMERR_SEG_ALREADY_PUBLISHED);
    pbt_local_export_end(&le);
}

static void case_publish_after_unpublish_reuses_id(void)
{
    pbt_local_export_t le;
    rsm_memseg_id_t id;

    pbt_local_export(&le, PG, 0, 0);
    CHECK_OK(rsm_memseg_export_unpublish(le.h));
    id = le.segid;
    CHECK_OK(rsm_memseg_export_publish(le.h, &id, NULL, 0));
    CHECK_EQ_U64(id, le.segid);
    pbt_local_export_end(&le);
}

/* ---- republish ---------------------------------------------------------------- */

static void case_republish_unpublished_seg_not_published(void)
{
    pbt_local_export_t le;
    rsmapi_access_entry_t e;

    pbt_local_export(&le, PG, 0, 1);
    e.ae_node = le.node;
    e.ae_permission = RSM_PERM_RDWR;
    CHECK_RC(rsm_memseg_export_republish(le.h, &e, 1), RSMERR_SEG_NOT_PUBLISHED);
    CHECK_RC(rsm_memseg_export_republish(le.h, NULL, 0), RSMERR_SEG_NOT_PUBLISHED);
    pbt_local_export_end(&le);
}

static void case_republish_bad_acl_rejected(void)
{
    pbt_local_export_t le;
    rsmapi_access_entry_t e;

    pbt_local_export(&le, PG, 0, 0);
    e.ae_node = le.node;
    e.ae_permission = 0777;
    CHECK_RC(rsm_memseg_export_republish(le.h, NULL, 1), RSMERR_BAD_ACL);
    CHECK_RC(rsm_memseg_export_republish(le.h, &e, 1), RSMERR_BAD_PERMS);
    pbt_local_export_end(&le);
}

static void case_republish_affects_new_connections_only(void)
{
    pbt_export_opts_t o = {.size = PG, .acl_len = 1, .acl = {{PBT_NODE_LOCAL, RSM_PERM_RDWR}}};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t old_im, new_im;
    pbt_exporter_t ex;
    uint8_t v = 0x5a, r;

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &old_im));
    CHECK_OK(pbt_exporter_cmd(&ex, EX_REPUBLISH, RSM_PERM_READ, 0, NULL));
    /* the existing import keeps read and write */
    CHECK_OK(rsm_memseg_import_put(old_im, 5, &v, 1));
    CHECK_OK(rsm_memseg_import_get(old_im, 5, &r, 1));
    CHECK_EQ_U64(r, v);
    pbt_exporter_expect(&ex, 5, &v, 1, "put through the import made before republish");
    /* new connections get the new list */
    CHECK_RC(pbt_connect(c, &ex, RSM_PERM_RDWR, &new_im), RSMERR_PERM_DENIED);
    CHECK_RC(pbt_connect(c, &ex, RSM_PERM_WRITE, &new_im), RSMERR_PERM_DENIED);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_READ, &new_im));
    CHECK_OK(rsm_memseg_import_disconnect(new_im));
    /* back to the default list */
    CHECK_OK(pbt_exporter_cmd(&ex, EX_REPUBLISH, 0, 0, NULL));
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &new_im));
    CHECK_OK(rsm_memseg_import_disconnect(new_im));
    CHECK_OK(rsm_memseg_import_disconnect(old_im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

/* ---- unpublish ------------------------------------------------------------ */

static void case_unpublish_not_published_rejected(void)
{
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 1);
    CHECK_RC(rsm_memseg_export_unpublish(le.h), RSMERR_SEG_NOT_PUBLISHED);
    CHECK_OK(rsm_memseg_export_publish(le.h, &le.segid, NULL, 0));
    CHECK_OK(rsm_memseg_export_unpublish(le.h));
    CHECK_RC(rsm_memseg_export_unpublish(le.h), RSMERR_SEG_NOT_PUBLISHED);
    pbt_local_export_end(&le);
}

static void case_unpublish_new_connect_seg_not_published(void)
{
    pbt_export_opts_t o = {.size = PG};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_exporter_cmd(&ex, EX_UNPUBLISH, 0, 0, NULL));
    CHECK_RC(pbt_connect(c, &ex, RSM_PERM_RDWR, &im), RSMERR_SEG_NOT_PUBLISHED);
    /* published again, it can be imported again */
    CHECK_OK(pbt_exporter_cmd(&ex, EX_PUBLISH, 0, 0, NULL));
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

/* after unpublish, every call of an existing import returns CONN_ABORTED and
 * its mapping no longer reaches the exporter */
static void case_unpublish_aborts_existing_importers(void)
{
    size_t size = 2 * PG;
    pbt_export_opts_t o = {.size = size, .seed = 4};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im, im_bar, im_map;
    rsmapi_barrier_t bar, b2;
    pbt_exporter_t ex;
    uint8_t buf[64];
    void *addr = NULL;
    int mapped;

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im_bar));
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im_map));
    CHECK_OK(rsm_memseg_import_set_mode(im_bar, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(rsm_memseg_import_init_barrier(im_bar, RSM_BAR_DEFAULT, &bar));
    CHECK_OK(rsm_memseg_import_open_barrier(&bar));
    CHECK_OK(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &b2));
    mapped = rsm_memseg_import_map(im_map, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, size);
    CHECK_MSG(mapped == RSM_SUCCESS || (mapped == RSMERR_MAP_FAILED && !pbt_is_shm()),
              "map returned %d (%s)", mapped, rsm_strerror(mapped));

    CHECK_OK(pbt_exporter_cmd(&ex, EX_UNPUBLISH, 0, 0, NULL));

    memset(buf, 0xee, sizeof(buf));
    CHECK_RC(rsm_memseg_import_put(im, 0, buf, sizeof(buf)), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_memseg_import_get(im, 0, buf, sizeof(buf)), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_intr_signal_post(im, 0), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_intr_signal_wait(im, 0), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_intr_signal_wait(im, 1000), RSMERR_CONN_ABORTED);
    CHECK_RC(rsm_memseg_import_open_barrier(&b2), RSMERR_CONN_ABORTED);
    rsm_memseg_import_destroy_barrier(&b2);
    CHECK_RC(rsm_memseg_import_close_barrier(&bar), RSMERR_CONN_ABORTED);
    if (mapped == RSM_SUCCESS) {
        memset(addr, 0xee, size); /* must not reach the exporter, must not crash */
        pbt_exporter_expect_pristine(&ex, "stores through a mapping after unpublish");
        CHECK_OK(rsm_memseg_import_unmap(im_map));
    }
    pbt_exporter_expect_pristine(&ex, "puts after unpublish");
    /* the imports can still be released */
    rsm_memseg_import_destroy_barrier(&bar);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_memseg_import_disconnect(im_bar));
    CHECK_OK(rsm_memseg_import_disconnect(im_map));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
}

/* ---- destroy ------------------------------------------------------------- */

static void case_destroy_while_published_already_published(void)
{
    pbt_local_export_t le;

    pbt_local_export(&le, PG, 0, 0);
    CHECK_RC(rsm_memseg_export_destroy(le.h), RSMERR_SEG_ALREADY_PUBLISHED);
    pbt_local_export_end(&le);
}

static void case_destroy_null_or_stale_bad_seg_hndl(void)
{
    pbt_local_export_t le;
    rsm_memseg_export_handle_t h;

    CHECK_RC(rsm_memseg_export_destroy(NULL), RSMERR_BAD_SEG_HNDL);
    pbt_local_export(&le, PG, 0, 1);
    h = le.h;
    CHECK_OK(rsm_memseg_export_destroy(h));
    CHECK_RC(rsm_memseg_export_destroy(h), RSMERR_BAD_SEG_HNDL);
    CHECK_OK(rsm_release_controller(le.ctlr));
    pbt_free_pages(le.mem, le.size);
}

static void importer_puts_then_waits(pbt_peer_t *self, void *arg)
{
    pbt_seginfo_t si;
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    uint8_t data[256];

    pbt_recv(self->rd, &si, sizeof(si));
    c = pbt_ctlr_get();
    CHECK_OK(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_RDWR, &im));
    pbt_fill_pattern(data, sizeof(data), 0, 21);
    CHECK_OK(rsm_memseg_import_put(im, 100, data, sizeof(data)));
    pbt_send_u32(self->wr, 1);
    (void)pbt_recv_u32(self->rd); /* exporter destroyed its segment */
    CHECK_RC(rsm_memseg_import_put(im, 100, data, sizeof(data)), RSMERR_CONN_ABORTED);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
    pbt_send_u32(self->wr, 2);
}

static void case_destroy_keeps_data_private(void)
{
    pbt_peer_t imp = pbt_peer_start(importer_puts_then_waits, NULL);
    pbt_local_export_t le;
    pbt_seginfo_t si;
    uint8_t *mem;

    pbt_local_export(&le, 2 * PG, 0, 0);
    mem = le.mem;
    si.node = le.node;
    si.segid = le.segid;
    si.size = le.size;
    pbt_send(imp.wr, &si, sizeof(si));
    CHECK_EQ_U64(pbt_recv_u32(imp.rd), 1);
    CHECK_OK(rsm_memseg_export_unpublish(le.h));
    CHECK_OK(rsm_memseg_export_destroy(le.h));
    CHECK_MSG(pbt_check_pattern(mem + 100, 256, 0, 21) == (size_t)-1,
              "memory lost the importer's data at destroy");
    pbt_send_u32(imp.wr, 1);
    CHECK_EQ_U64(pbt_recv_u32(imp.rd), 2);
    pbt_peer_join(&imp, 10000, 0);
    CHECK_MSG(pbt_check_pattern(mem + 100, 256, 0, 21) == (size_t)-1,
              "importer changed the memory after destroy");
    memset(mem, 0x11, le.size); /* still ordinary writable memory */
    CHECK(mem[le.size - 1] == 0x11);
    CHECK_OK(rsm_release_controller(le.ctlr));
    pbt_free_pages(mem, le.size);
}

/* ---- rebind ------------------------------------------------------------- */

static void case_rebind_without_flag_not_allowed(void)
{
    pbt_local_export_t le;
    void *other = pbt_alloc_pages(PG);

    pbt_local_export(&le, PG, 0, 0);
    CHECK_RC(rsm_memseg_export_rebind(le.h, other, 0, PG), RSMERR_REBIND_NOT_ALLOWED);
    pbt_local_export_end(&le);
    pbt_free_pages(other, PG);
}

static void case_rebind_bad_memory_rejected(void)
{
    pbt_local_export_t le;
    char *other = pbt_alloc_pages(4 * PG);

    pbt_local_export(&le, 2 * PG, RSM_ALLOW_REBIND, 0);
    CHECK_RC(rsm_memseg_export_rebind(le.h, other, 0, PG), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_export_rebind(le.h, other, 0, 3 * PG), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_export_rebind(le.h, NULL, 0, 2 * PG), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_memseg_export_rebind(le.h, other + 64, 0, 2 * PG), RSMERR_BAD_MEM_ALIGNMENT);
    pbt_local_export_end(&le);
    pbt_free_pages(other, 4 * PG);
}

/* rebind to memory of which a page is read-only is refused, the segment
 * keeps its memory */
static void case_rebind_read_only_memory_bad_addr(void)
{
    pbt_local_export_t le;
    char *other = pbt_alloc_pages(2 * PG);

    pbt_local_export(&le, 2 * PG, RSM_ALLOW_REBIND, 0);
    CHECK_SYS(mprotect(other + PG, PG, PROT_READ));
    CHECK_RC(rsm_memseg_export_rebind(le.h, other, 0, 2 * PG), RSMERR_BAD_ADDR);
    CHECK_SYS(mprotect(other + PG, PG, PROT_READ | PROT_WRITE));
    pbt_local_export_end(&le);
    pbt_free_pages(other, 2 * PG);
}

static void case_rebind_importers_see_new_memory(void)
{
    size_t size = 2 * PG;
    pbt_export_opts_t o = {.size = size, .create_flags = RSM_ALLOW_REBIND, .seed = 1};
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_import_handle_t im;
    pbt_exporter_t ex;
    uint8_t *buf = malloc(size), *old = malloc(size);
    uint8_t v[32];

    pbt_exporter_start(&ex, &o);
    CHECK_OK(pbt_connect(c, &ex, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_get(im, 0, buf, size));
    CHECK(pbt_check_pattern(buf, size, 0, 1) == (size_t)-1);
    CHECK_OK(pbt_exporter_cmd(&ex, EX_REBIND, 2, 0, NULL));
    CHECK_OK(rsm_memseg_import_get(im, 0, buf, size));
    CHECK_MSG(pbt_check_pattern(buf, size, 0, 2) == (size_t)-1,
              "importer does not see the new memory after rebind");
    memset(v, 0x77, sizeof(v));
    CHECK_OK(rsm_memseg_import_put(im, 40, v, sizeof(v)));
    pbt_exporter_expect(&ex, 40, v, sizeof(v), "put after rebind");
    CHECK_OK(pbt_exporter_cmd(&ex, EX_READ_OLD, 0, size, old));
    CHECK_MSG(pbt_check_pattern(old, size, 0, 1) == (size_t)-1,
              "the old memory changed after rebind (not private)");
    CHECK_RC(pbt_exporter_cmd(&ex, EX_REBIND, 3, PG, NULL), RSMERR_BAD_LENGTH);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    pbt_exporter_stop(&ex);
    CHECK_OK(rsm_release_controller(c));
    free(buf);
    free(old);
}

/* ---- stale handles on every export call -------------------------------------- */

/* shm backs an export with a memfd mapped over its memory: a second export
 * of any of that memory would take it from the first segment (whose
 * importers would no longer see the exporter), so it is refused */
static void case_export_overlapping_memory_bad_addr(void)
{
    char *mem = pbt_alloc_pages(4 * PG);
    rsmapi_controller_handle_t c = pbt_ctlr_get();
    rsm_memseg_export_handle_t first, second;
    rsm_memseg_import_handle_t im;
    rsm_memseg_id_t segid = 0;
    char byte = 0;

    if (!pbt_is_shm())
        pbt_skip("only shm maps its own pages over exported memory");
    CHECK_OK(rsm_memseg_export_create(c, &first, mem + PG, 2 * PG, 0));
    CHECK_RC(rsm_memseg_export_create(c, &second, mem + PG, 2 * PG, 0), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_memseg_export_create(c, &second, mem, 2 * PG, 0), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_memseg_export_create(c, &second, mem + 2 * PG, 2 * PG, 0), RSMERR_BAD_ADDR);
    CHECK_RC(rsm_memseg_export_create(c, &second, mem, 4 * PG, 0), RSMERR_BAD_ADDR);
    /* the first segment still reaches the memory */
    CHECK_OK(rsm_memseg_export_publish(first, &segid, NULL, 0));
    CHECK_OK(rsm_memseg_import_connect(c, rsm_get_local_nodeid(), segid, RSM_PERM_READ, &im));
    mem[PG + 5] = 0x5c;
    CHECK_OK(rsm_memseg_import_get(im, 5, &byte, 1));
    CHECK_EQ_U64(byte, 0x5c);
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_memseg_export_unpublish(first));
    /* memory next to it is free to export, and so is its own once destroyed */
    CHECK_OK(rsm_memseg_export_create(c, &second, mem, PG, 0));
    CHECK_OK(rsm_memseg_export_destroy(second));
    CHECK_OK(rsm_memseg_export_destroy(first));
    CHECK_OK(rsm_memseg_export_create(c, &second, mem + PG, 2 * PG, 0));
    CHECK_OK(rsm_memseg_export_destroy(second));
    CHECK_OK(rsm_release_controller(c));
    pbt_free_pages(mem, 4 * PG);
}

/* ... nor may a rebind move a segment onto another segment's memory */
static void case_rebind_onto_other_segment_bad_addr(void)
{
    pbt_local_export_t a, b;

    if (!pbt_is_shm())
        pbt_skip("only shm maps its own pages over exported memory");
    pbt_local_export(&a, 2 * PG, RSM_ALLOW_REBIND, 1);
    pbt_local_export(&b, 2 * PG, 0, 1);
    CHECK_RC(rsm_memseg_export_rebind(a.h, b.mem, 0, 2 * PG), RSMERR_BAD_ADDR);
    pbt_local_export_end(&b);
    pbt_local_export_end(&a);
}

static void case_export_calls_destroyed_handle_bad_seg_hndl(void)
{
    pbt_local_export_t le;
    rsm_memseg_export_handle_t h;
    rsm_memseg_id_t id = 0;
    void *other = pbt_alloc_pages(PG);
    struct pollfd pfd;

    pbt_local_export(&le, PG, RSM_ALLOW_REBIND, 1);
    h = le.h;
    CHECK_OK(rsm_memseg_export_destroy(h));
    for (int round = 0; round < 2; round++) {
        rsm_memseg_export_handle_t bad = round == 0 ? h : NULL;

        CHECK_RC(rsm_memseg_export_publish(bad, &id, NULL, 0), RSMERR_BAD_SEG_HNDL);
        CHECK_RC(rsm_memseg_export_republish(bad, NULL, 0), RSMERR_BAD_SEG_HNDL);
        CHECK_RC(rsm_memseg_export_unpublish(bad), RSMERR_BAD_SEG_HNDL);
        CHECK_RC(rsm_memseg_export_rebind(bad, other, 0, PG), RSMERR_BAD_SEG_HNDL);
        CHECK_RC(rsm_memseg_export_destroy(bad), RSMERR_BAD_SEG_HNDL);
        CHECK_RC(rsm_intr_signal_post(bad, 0), RSMERR_BAD_SEG_HNDL);
        CHECK_RC(rsm_intr_signal_wait(bad, 0), RSMERR_BAD_SEG_HNDL);
        CHECK_RC(rsm_memseg_get_pollfd(bad, &pfd), RSMERR_BAD_SEG_HNDL);
        CHECK_RC(rsm_memseg_release_pollfd(bad), RSMERR_BAD_SEG_HNDL);
    }
    CHECK_OK(rsm_release_controller(le.ctlr));
    pbt_free_pages(le.mem, le.size);
    pbt_free_pages(other, PG);
}

static const pbt_case_t cases[] = {
    PBT_CASE(export_create_null_vaddr_bad_addr),
    PBT_CASE(export_create_unmapped_memory_bad_addr),
    PBT_CASE(export_create_read_only_memory_bad_addr),
    PBT_CASE(export_create_unaligned_vaddr_bad_mem_alignment),
    PBT_CASE(export_create_bad_size_bad_length),
    PBT_CASE(export_create_unknown_flag_bad_mode),
    PBT_CASE(export_create_null_controller_bad_ctlr_hndl),
    PBT_CASE(export_create_known_flags_accepted),
    PBT_CASE(export_create_keeps_contents_and_shares_pages),
    PBT_CASE(publish_null_segid_ptr_bad_addr),
    PBT_CASE(publish_zero_id_picks_user_range),
    PBT_CASE(publish_reserved_id_rejected),
    PBT_CASE(publish_hpc_and_user_ids_accepted),
    PBT_CASE(publish_id_in_use_same_process),
    PBT_CASE(publish_id_in_use_other_process),
    PBT_CASE(publish_null_acl_with_length_bad_acl),
    PBT_CASE(publish_bad_permission_bits_bad_perms),
    PBT_CASE(publish_valid_acl_accepted),
    PBT_CASE(publish_twice_already_published),
    PBT_CASE(publish_after_unpublish_reuses_id),
    PBT_CASE(republish_unpublished_seg_not_published),
    PBT_CASE(republish_bad_acl_rejected),
    PBT_CASE(republish_affects_new_connections_only),
    PBT_CASE(unpublish_not_published_rejected),
    PBT_CASE(unpublish_new_connect_seg_not_published),
    PBT_CASE(unpublish_aborts_existing_importers),
    PBT_CASE(destroy_while_published_already_published),
    PBT_CASE(destroy_null_or_stale_bad_seg_hndl),
    PBT_CASE(destroy_keeps_data_private),
    PBT_CASE(rebind_without_flag_not_allowed),
    PBT_CASE(rebind_bad_memory_rejected),
    PBT_CASE(rebind_read_only_memory_bad_addr),
    PBT_CASE(rebind_importers_see_new_memory),
    PBT_CASE(export_overlapping_memory_bad_addr),
    PBT_CASE(rebind_onto_other_segment_bad_addr),
    PBT_CASE(export_calls_destroyed_handle_bad_seg_hndl),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
