/*
 * Diffs: the words of a page that a release changed, against its twin,
 * on their way to the page's home (coherence.c decides which pages and
 * when).
 *
 * Toward a home on this node a diff is the runs of changed 4-byte words,
 * put straight into the home's copy (pb_dsm_diff_runs, pb_dsm_runs_send).
 *
 * Toward a home on another node diffs go as RSM calls that the home's
 * service side applies (pb_dsm_diff_apply): a putv carries at most 16
 * runs, and a page of doubles whose low words did not change has a run
 * per double.  Each page is its number, a bitmap of its changed 4-byte
 * words and those words, packed:
 *
 *   pb_dsm_diff_msg_t | page (u64) | bitmap (u32[page/128]) | words | page ...
 */

#include <stdlib.h>
#include <string.h>

#include "dsm/dsm_impl.h"
#include "util/log.h"

static int run_add(pb_dsm_runs_t *list, size_t offset, size_t length)
{
    rsm_iovec_t *last = list->n > 0 ? &list->iov[list->n - 1] : NULL;

    if (last != NULL && last->remote_offset + last->transfer_length == offset) {
        last->transfer_length += length;
        return 0;
    }
    if (list->n == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 64;
        rsm_iovec_t *bigger = realloc(list->iov, cap * sizeof(*bigger));

        if (bigger == NULL) {
            pb_error("dsm: no memory for a diff's runs");
            return POSTBOX_DSM_ERR_NO_MEMORY;
        }
        list->iov = bigger;
        list->cap = cap;
    }
    list->iov[list->n++] = (rsm_iovec_t){.io_type = RSM_VA_TYPE,
                                         .local.vaddr = pb_dsm.sys,
                                         .local_offset = offset,
                                         .remote_offset = offset,
                                         .transfer_length = length};
    return 0;
}

int pb_dsm_diff_runs(size_t p, pb_dsm_runs_t *list)
{
    const uint32_t *cur = (const uint32_t *)(pb_dsm.sys + p * pb_dsm.page_size);
    const uint32_t *twin = (const uint32_t *)pb_dsm.twins[p];
    size_t words = pb_dsm.page_size / 4, i = 0;
    int rc = 0;

    while (i < words && rc == 0) {
        size_t start;

        /* 8 bytes at a time through the unchanged stretches */
        while (i + 2 <= words && i % 2 == 0 &&
               *(const uint64_t *)(cur + i) == *(const uint64_t *)(twin + i))
            i += 2;
        while (i < words && cur[i] == twin[i])
            i++;
        if (i == words)
            break;
        start = i;
        while (i < words && cur[i] != twin[i])
            i++;
        pb_dsm_count(&pb_dsm_counters.diff_runs, 1);
        pb_dsm_count(&pb_dsm_counters.diff_bytes, (i - start) * 4);
        rc = run_add(list, p * pb_dsm.page_size + start * 4, (i - start) * 4);
    }
    return rc;
}

int pb_dsm_runs_send(int home, pb_dsm_runs_t *list)
{
    pb_dsm_peer_t *peer = &pb_dsm.peers[home];
    int rc = rsm_memseg_import_open_barrier(&peer->data_bar);
    size_t bytes = 0;

    for (size_t i = 0; rc == RSM_SUCCESS && i < list->n; i += RSM_MAX_SGIOREQS) {
        rsm_scat_gath_t sg = {0};
        size_t n = list->n - i < RSM_MAX_SGIOREQS ? list->n - i : RSM_MAX_SGIOREQS;

        sg.io_request_count = n;
        sg.remote_handle = peer->data;
        sg.iovec = &list->iov[i];
        for (size_t k = 0; k < n; k++)
            bytes += list->iov[i + k].transfer_length;
        rc = rsm_memseg_import_putv(&sg);
        pb_dsm_count_msg(POSTBOX_DSM_MSG_DIFF, 0);
    }
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_close_barrier(&peer->data_bar);
    else
        rsm_memseg_import_close_barrier(&peer->data_bar);
    pb_dsm_count(&pb_dsm_counters.bytes[POSTBOX_DSM_MSG_DIFF], bytes);
    if (rc != RSM_SUCCESS) {
        pb_error("dsm: sending diffs to process %d failed: %s", home, rsm_strerror(rc));
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    return 0;
}

static size_t bitmap_words(size_t page_size)
{
    return page_size / 4 / 32;
}

int pb_dsm_pack_page(size_t p, const volatile uint32_t *cur, uint32_t *twin, int update,
                     pb_dsm_pack_t *pack, size_t *changed_p)
{
    size_t ps = pb_dsm.page_size, nbits = bitmap_words(ps), words = ps / 4;
    size_t need = sizeof(uint64_t) + nbits * 4 + ps;
    uint32_t *bits, *out;
    size_t changed = 0, runs = 0;
    uint64_t page = p;
    int last_changed = 0;

    *changed_p = 0;
    if (pack->len + need > pack->cap) {
        size_t cap = pack->cap ? 2 * pack->cap : PB_DSM_DIFF_MSG_MAX + need;
        char *bigger = realloc(pack->buf, cap);

        if (bigger == NULL) {
            pb_error("dsm: no memory for a diff message");
            return POSTBOX_DSM_ERR_NO_MEMORY;
        }
        pack->buf = bigger;
        pack->cap = cap;
    }
    if (pack->len == 0) {
        memset(pack->buf, 0, sizeof(pb_dsm_diff_msg_t));
        pack->len = sizeof(pb_dsm_diff_msg_t);
    }
    memcpy(pack->buf + pack->len, &page, sizeof(page));
    bits = (uint32_t *)(pack->buf + pack->len + sizeof(page));
    out = bits + nbits;
    memset(bits, 0, nbits * 4);
    for (size_t i = 0; i < words; i++) {
        uint32_t w = cur[i];

        if (w == twin[i]) {
            last_changed = 0;
            continue;
        }
        runs += !last_changed;
        last_changed = 1;
        bits[i / 32] |= UINT32_C(1) << (i % 32);
        out[changed++] = w;
        if (update)
            twin[i] = w;
    }
    *changed_p = changed;
    if (changed == 0)
        return 0; /* (nothing appended: len stays) */
    pack->len += sizeof(page) + nbits * 4 + changed * 4;
    ((pb_dsm_diff_msg_t *)pack->buf)->npages++;
    pb_dsm_count(&pb_dsm_counters.diff_runs, runs);
    pb_dsm_count(&pb_dsm_counters.diff_bytes, changed * 4);
    return 0;
}

int pb_dsm_pack_send(int home, pb_dsm_pack_t *pack)
{
    pb_dsm_diff_msg_t *msg = (pb_dsm_diff_msg_t *)pack->buf;
    int rc;

    if (pack->len == 0 || msg->npages == 0) {
        pack->len = 0;
        return 0;
    }
    msg->magic = PB_DSM_DIFF_MSG_MAGIC;
    msg->page_size = (uint32_t)pb_dsm.page_size;
    rc = pb_rsm_memseg_import_call(pb_dsm.peers[home].data, pack->buf, pack->len, NULL, 0, NULL,
                                   PB_RSM_CALL_NO_REPLY);
    pb_dsm_count_msg(POSTBOX_DSM_MSG_DIFF, pack->len);
    pack->len = 0;
    if (rc != RSM_SUCCESS) {
        pb_error("dsm: sending diffs to process %d failed: %s", home, rsm_strerror(rc));
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    return 0;
}

void pb_dsm_diff_apply(void *seg_base, size_t seg_size, const void *request, size_t request_len)
{
    const char *at = request, *end = at + request_len;
    pb_dsm_diff_msg_t msg;
    size_t nbits;

    if (request_len < sizeof(msg))
        return;
    memcpy(&msg, at, sizeof(msg));
    if (msg.magic != PB_DSM_DIFF_MSG_MAGIC || msg.page_size < 128 || msg.page_size % 128 != 0)
        return;
    nbits = bitmap_words(msg.page_size);
    at += sizeof(msg);
    for (uint32_t n = 0; n < msg.npages; n++) {
        uint32_t bits[1024];
        uint64_t page;
        uint32_t *dst;
        size_t k = 0;

        if (nbits > PB_ARRAY_SIZE(bits) || (size_t)(end - at) < sizeof(page) + nbits * 4)
            return;
        memcpy(&page, at, sizeof(page));
        memcpy(bits, at + sizeof(page), nbits * 4);
        at += sizeof(page) + nbits * 4;
        if (page >= seg_size / msg.page_size)
            return;
        dst = (uint32_t *)((char *)seg_base + page * msg.page_size);
        for (size_t i = 0; i < nbits * 32; i++) {
            if (!(bits[i / 32] & (UINT32_C(1) << (i % 32))))
                continue;
            if ((size_t)(end - at) < (k + 1) * 4)
                return;
            memcpy(&dst[i], at + k * 4, 4);
            k++;
        }
        at += k * 4;
    }
}
