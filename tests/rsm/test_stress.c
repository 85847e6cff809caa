/* Stress: one exporter, four importer processes writing disjoint parts of
 * one segment many times under explicit barriers, then signalling; the
 * exporter waits for every signal and checks every byte. */
#include <stdlib.h>
#include <string.h>

#include "rsm_util.h"

#define NIMP 4
#define ROUNDS 1000
#define CHUNK 1024

typedef struct {
    int index;
    int use_putv; /* odd importers use putv for half their chunks */
} imp_args_t;

static void importer(pbt_peer_t *self, void *arg)
{
    const imp_args_t *a = arg;
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    rsmapi_barrier_t bar;
    pbt_seginfo_t si;
    size_t part, base;
    uint8_t *buf, *chk;

    pbt_recv(self->rd, &si, sizeof(si));
    part = si.size / NIMP;
    base = part * (size_t)a->index;
    buf = malloc(part);
    chk = malloc(CHUNK);
    c = pbt_ctlr_get();
    CHECK_OK(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_RDWR, &im));
    CHECK_OK(rsm_memseg_import_set_mode(im, RSM_BARRIER_MODE_EXPLICIT));
    CHECK_OK(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar));
    for (int r = 0; r < ROUNDS; r++) {
        unsigned seed = (unsigned)(r * NIMP + a->index);
        size_t probe;

        pbt_fill_pattern(buf, part, base, seed);
        CHECK_OK(rsm_memseg_import_open_barrier(&bar));
        for (size_t off = 0; off < part; off += CHUNK) {
            if (a->use_putv && (off / CHUNK) % 2) {
                rsm_iovec_t iov = {.io_type = RSM_VA_TYPE,
                                   .local.vaddr = (char *)buf,
                                   .local_offset = off,
                                   .remote_offset = base + off,
                                   .transfer_length = CHUNK};
                rsm_scat_gath_t sg = {.io_request_count = 1, .remote_handle = im, .iovec = &iov};

                CHECK_OK(rsm_memseg_import_putv(&sg));
            } else {
                CHECK_OK(rsm_memseg_import_put(im, (off_t)(base + off), buf + off, CHUNK));
            }
        }
        CHECK_OK(rsm_memseg_import_close_barrier(&bar));
        /* read one chunk back: it must hold this round's data */
        probe = ((size_t)r * 7 % (part / CHUNK)) * CHUNK;
        CHECK_OK(rsm_memseg_import_get(im, (off_t)(base + probe), chk, CHUNK));
        CHECK_MSG(memcmp(chk, buf + probe, CHUNK) == 0,
                  "importer %d round %d: read back differs at %zu", a->index, r, base + probe);
    }
    CHECK_OK(rsm_intr_signal_post(im, 0));
    (void)pbt_recv_u32(self->rd); /* the exporter checked */
    CHECK_OK(rsm_memseg_import_destroy_barrier(&bar));
    CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
    free(buf);
    free(chk);
}

static void run_stress(int use_putv)
{
    static imp_args_t args[NIMP];
    pbt_peer_t p[NIMP];
    pbt_local_export_t le;
    pbt_seginfo_t si;
    size_t size = 64 * pbt_page_size(), part = size / NIMP;

    for (int i = 0; i < NIMP; i++) {
        args[i].index = i;
        args[i].use_putv = use_putv && (i % 2);
        p[i] = pbt_peer_start(importer, &args[i]);
    }
    pbt_local_export(&le, size, 0, 0);
    memset(le.mem, 0, size);
    si.node = le.node;
    si.segid = le.segid;
    si.size = size;
    for (int i = 0; i < NIMP; i++)
        pbt_send(p[i].wr, &si, sizeof(si));
    for (int i = 0; i < NIMP; i++)
        CHECK_RC(rsm_intr_signal_wait(le.h, 30000), RSM_SUCCESS);
    CHECK_RC(rsm_intr_signal_wait(le.h, 0), RSMERR_TIMEOUT);
    for (int i = 0; i < NIMP; i++) {
        unsigned seed = (unsigned)((ROUNDS - 1) * NIMP + i);
        size_t bad =
            pbt_check_pattern((uint8_t *)le.mem + part * (size_t)i, part, part * (size_t)i, seed);

        CHECK_MSG(bad == (size_t)-1, "byte %zu of importer %d's part is wrong after %d rounds",
                  part * (size_t)i + bad, i, ROUNDS);
    }
    for (int i = 0; i < NIMP; i++) {
        pbt_send_u32(p[i].wr, 1);
        pbt_peer_join(&p[i], 20000, 0);
    }
    pbt_local_export_end(&le);
}

static void case_stress_four_importers_explicit_barriers(void)
{
    run_stress(0);
}

static void case_stress_four_importers_put_and_putv(void)
{
    run_stress(1);
}

static const pbt_case_t cases[] = {
    PBT_CASE(stress_four_importers_explicit_barriers),
    PBT_CASE(stress_four_importers_put_and_putv),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
