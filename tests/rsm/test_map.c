/* rsm_memseg_import_map / unmap.  A transport that cannot map (map returns
 * RSMERR_MAP_FAILED) skips the cases that need a mapping; shm must map. */
#include <string.h>
#include <sys/mman.h>

#include "rsm_util.h"

#define PG (pbt_page_size())

typedef struct {
    rsmapi_controller_handle_t c;
    pbt_exporter_t ex;
    rsm_memseg_import_handle_t im;
    size_t size;
} fixture_t;

static void fx_start(fixture_t *f, rsm_permission_t perm)
{
    pbt_export_opts_t o = {.size = 4 * PG, .seed = 8};

    f->c = pbt_ctlr_get();
    pbt_exporter_start(&f->ex, &o);
    f->size = f->ex.size;
    CHECK_OK(pbt_connect(f->c, &f->ex, perm, &f->im));
}

static void fx_end(fixture_t *f)
{
    CHECK_OK(rsm_memseg_import_disconnect(f->im));
    pbt_exporter_stop(&f->ex);
    CHECK_OK(rsm_release_controller(f->c));
}

/* map, or skip if the transport cannot (never for shm) */
static void map_or_skip(fixture_t *f, void **addr, rsm_attribute_t attr, rsm_permission_t perm,
                        off_t off, size_t len)
{
    int rc = rsm_memseg_import_map(f->im, addr, attr, perm, off, len);

    if (rc == RSMERR_MAP_FAILED && !pbt_is_shm()) {
        fx_end(f);
        pbt_skip("controller %s cannot map", pbt_ctlr_name());
    }
    CHECK_MSG(rc == RSM_SUCCESS, "rsm_memseg_import_map returned %d (%s)", rc, rsm_strerror(rc));
}

static void case_map_whole_segment_shares_memory(void)
{
    fixture_t f;
    uint8_t *p = NULL, v[64];

    fx_start(&f, RSM_PERM_RDWR);
    map_or_skip(&f, (void **)&p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, f.size);
    CHECK(p != NULL);
    CHECK(((uintptr_t)p % PG) == 0);
    CHECK_MSG(pbt_check_pattern(p, f.size, 0, 8) == (size_t)-1,
              "the mapping does not show the exporter's data");
    memset(p + 100, 0x42, 64);
    memset(v, 0x42, sizeof(v));
    pbt_exporter_expect(&f.ex, 100, v, sizeof(v), "store through the mapping");
    memset(v, 0x24, sizeof(v));
    CHECK_OK(pbt_exporter_cmd(&f.ex, EX_WRITE, f.size - 64, 64, v));
    CHECK_MSG(memcmp(p + f.size - 64, v, 64) == 0, "exporter's store not seen in the mapping");
    /* puts and the mapping are the same memory */
    CHECK_OK(rsm_memseg_import_put(f.im, 300, v, 8));
    CHECK(memcmp(p + 300, v, 8) == 0);
    CHECK_OK(rsm_memseg_import_unmap(f.im));
    fx_end(&f);
}

static void case_map_partial_range_at_offset(void)
{
    fixture_t f;
    uint8_t *p = NULL;

    fx_start(&f, RSM_PERM_RDWR);
    map_or_skip(&f, (void **)&p, RSM_MAP_NONE, RSM_PERM_RDWR, (off_t)PG, 2 * PG);
    CHECK_MSG(pbt_check_pattern(p, 2 * PG, PG, 8) == (size_t)-1,
              "the mapping at offset one page shows the wrong bytes");
    p[0] = 0x99;
    pbt_exporter_expect(&f.ex, PG, p, 1, "store at the start of a partial mapping");
    CHECK_OK(rsm_memseg_import_unmap(f.im));
    fx_end(&f);
}

static void case_map_read_only(void)
{
    fixture_t f;
    uint8_t *p = NULL;

    fx_start(&f, RSM_PERM_READ);
    map_or_skip(&f, (void **)&p, RSM_MAP_NONE, RSM_PERM_READ, 0, f.size);
    CHECK(pbt_check_pattern(p, f.size, 0, 8) == (size_t)-1);
    CHECK_OK(rsm_memseg_import_unmap(f.im));
    fx_end(&f);
}

static void case_map_unaligned_offset_misaligned(void)
{
    fixture_t f;
    void *p = NULL;

    fx_start(&f, RSM_PERM_RDWR);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 8, PG),
             RSMERR_MISALIGNED_OFFSET);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, (off_t)PG + 1, PG),
             RSMERR_MISALIGNED_OFFSET);
    fx_end(&f);
}

static void case_map_offset_beyond_size_bad_offset(void)
{
    fixture_t f;
    void *p = NULL;

    fx_start(&f, RSM_PERM_RDWR);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, (off_t)(f.size + PG), PG),
             RSMERR_BAD_OFFSET);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, -(off_t)PG, PG),
             RSMERR_BAD_OFFSET);
    fx_end(&f);
}

static void case_map_bad_length_rejected(void)
{
    fixture_t f;
    void *p = NULL;

    fx_start(&f, RSM_PERM_RDWR);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, 0), RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, f.size + PG),
             RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, (off_t)PG, f.size),
             RSMERR_BAD_LENGTH);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, (size_t)-1),
             RSMERR_BAD_LENGTH);
    fx_end(&f);
}

static void case_map_twice_already_mapped(void)
{
    fixture_t f;
    void *p = NULL, *q = NULL;

    fx_start(&f, RSM_PERM_RDWR);
    map_or_skip(&f, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, f.size);
    CHECK_RC(rsm_memseg_import_map(f.im, &q, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG),
             RSMERR_SEG_ALREADY_MAPPED);
    CHECK_OK(rsm_memseg_import_unmap(f.im));
    /* after unmap it can be mapped again */
    CHECK_OK(rsm_memseg_import_map(f.im, &q, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG));
    CHECK(pbt_check_pattern(q, PG, 0, 8) == (size_t)-1);
    CHECK_OK(rsm_memseg_import_unmap(f.im));
    fx_end(&f);
}

static void case_map_perm_beyond_import_perm_denied(void)
{
    fixture_t f;
    void *p = NULL;

    fx_start(&f, RSM_PERM_READ);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG),
             RSMERR_PERM_DENIED);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_WRITE, 0, PG),
             RSMERR_PERM_DENIED);
    fx_end(&f);
}

static void case_map_bad_perm_value_bad_perms(void)
{
    fixture_t f;
    void *p = NULL;

    fx_start(&f, RSM_PERM_RDWR);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, 0, 0, PG), RSMERR_BAD_PERMS);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, 0111, 0, PG), RSMERR_BAD_PERMS);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, 0700, 0, PG), RSMERR_BAD_PERMS);
    fx_end(&f);
}

static void case_map_fixed_unaligned_address_bad_mem_alignment(void)
{
    fixture_t f;
    char *area = pbt_alloc_pages(4 * PG);
    void *p = area + 16;

    fx_start(&f, RSM_PERM_RDWR);
    CHECK_RC(rsm_memseg_import_map(f.im, &p, RSM_MAP_FIXED, RSM_PERM_RDWR, 0, PG),
             RSMERR_BAD_MEM_ALIGNMENT);
    fx_end(&f);
    pbt_free_pages(area, 4 * PG);
}

static void case_map_fixed_uses_given_address(void)
{
    fixture_t f;
    void *area = mmap(NULL, 8 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *want, *p;

    CHECK(area != MAP_FAILED);
    want = (char *)area + 2 * PG;
    p = want;
    fx_start(&f, RSM_PERM_RDWR);
    map_or_skip(&f, &p, RSM_MAP_FIXED, RSM_PERM_RDWR, 0, f.size);
    CHECK(p == want);
    CHECK(pbt_check_pattern(p, f.size, 0, 8) == (size_t)-1);
    CHECK_OK(rsm_memseg_import_unmap(f.im));
    fx_end(&f);
    munmap(area, 8 * PG);
}

static void case_map_null_address_ptr_bad_addr(void)
{
    fixture_t f;

    fx_start(&f, RSM_PERM_RDWR);
    CHECK_RC(rsm_memseg_import_map(f.im, NULL, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG),
             RSMERR_BAD_ADDR);
    fx_end(&f);
}

static void case_unmap_not_mapped_seg_not_mapped(void)
{
    fixture_t f;
    void *p;

    fx_start(&f, RSM_PERM_RDWR);
    CHECK_RC(rsm_memseg_import_unmap(f.im), RSMERR_SEG_NOT_MAPPED);
    map_or_skip(&f, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG);
    CHECK_OK(rsm_memseg_import_unmap(f.im));
    CHECK_RC(rsm_memseg_import_unmap(f.im), RSMERR_SEG_NOT_MAPPED);
    fx_end(&f);
}

static void case_disconnect_while_mapped_still_mapped(void)
{
    fixture_t f;
    void *p;

    fx_start(&f, RSM_PERM_RDWR);
    map_or_skip(&f, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, f.size);
    CHECK_RC(rsm_memseg_import_disconnect(f.im), RSMERR_SEG_STILL_MAPPED);
    /* the import still works */
    ((volatile uint8_t *)p)[0] = 0x31;
    pbt_exporter_expect(&f.ex, 0, p, 1, "store after a refused disconnect");
    CHECK_OK(rsm_memseg_import_unmap(f.im));
    fx_end(&f);
}

static void case_map_unmap_bad_handle_bad_seg_hndl(void)
{
    fixture_t f;
    rsm_memseg_import_handle_t stale;
    void *p;

    CHECK_RC(rsm_memseg_import_map(NULL, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG),
             RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_unmap(NULL), RSMERR_BAD_SEG_HNDL);
    fx_start(&f, RSM_PERM_RDWR);
    stale = f.im;
    CHECK_OK(rsm_memseg_import_disconnect(stale));
    CHECK_RC(rsm_memseg_import_map(stale, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, PG),
             RSMERR_BAD_SEG_HNDL);
    CHECK_RC(rsm_memseg_import_unmap(stale), RSMERR_BAD_SEG_HNDL);
    CHECK_OK(pbt_connect(f.c, &f.ex, RSM_PERM_RDWR, &f.im));
    fx_end(&f);
}

static void case_map_many_cycles_no_fd_leak(void)
{
    fixture_t f;
    void *p;
    int fds;

    fx_start(&f, RSM_PERM_RDWR);
    map_or_skip(&f, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, f.size);
    CHECK_OK(rsm_memseg_import_unmap(f.im));
    fds = pbt_count_fds();
    for (int i = 0; i < 200; i++) {
        CHECK_OK(rsm_memseg_import_map(f.im, &p, RSM_MAP_NONE, RSM_PERM_RDWR, 0, f.size));
        ((volatile uint8_t *)p)[i] = (uint8_t)i;
        CHECK_OK(rsm_memseg_import_unmap(f.im));
    }
    CHECK_MSG(pbt_count_fds() == fds, "open fds grew from %d to %d over 200 map/unmap", fds,
              pbt_count_fds());
    fx_end(&f);
}

static const pbt_case_t cases[] = {
    PBT_CASE(map_whole_segment_shares_memory),
    PBT_CASE(map_partial_range_at_offset),
    PBT_CASE(map_read_only),
    PBT_CASE(map_unaligned_offset_misaligned),
    PBT_CASE(map_offset_beyond_size_bad_offset),
    PBT_CASE(map_bad_length_rejected),
    PBT_CASE(map_twice_already_mapped),
    PBT_CASE(map_perm_beyond_import_perm_denied),
    PBT_CASE(map_bad_perm_value_bad_perms),
    PBT_CASE(map_fixed_unaligned_address_bad_mem_alignment),
    PBT_CASE(map_fixed_uses_given_address),
    PBT_CASE(map_null_address_ptr_bad_addr),
    PBT_CASE(unmap_not_mapped_seg_not_mapped),
    PBT_CASE(disconnect_while_mapped_still_mapped),
    PBT_CASE(map_unmap_bad_handle_bad_seg_hndl),
    PBT_CASE(map_many_cycles_no_fd_leak),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
