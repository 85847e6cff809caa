/*
 * Page coherence: home-based lazy release consistency with multiple
 * writers (docs/dsm.md).
 *
 * Each page of the application view is, in this process, INVALID
 * (PROT_NONE), READ (PROT_READ: a valid copy, or a home page not written
 * since the last release) or WRITE (read-write; a non-home page then has a
 * twin, its contents at the first write).  A load of an invalid page
 * fetches it from its home (an RSM get into the system view); a store
 * makes the twin.  A release write-protects the dirty pages, then sends
 * each home, in putvs closed by one RSM barrier, the runs of 4-byte words
 * that differ from the twin, and logs the pages it released in this
 * process's release log.  An acquire invalidates cached pages others
 * released: a barrier's notices (sync.c), the others' release logs (a
 * lock), or every cached page (a thread's start or join).  Everything runs
 * under pb_dsm.protocol, faults included, so two
 * threads faulting on one page fetch it once.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "dsm/dsm_impl.h"
#include "util/log.h"

static size_t page_of(const void *addr)
{
    return (size_t)((const char *)addr - pb_dsm.base) / pb_dsm.page_size;
}

static int protect(size_t first, size_t count, int prot)
{
    if (mprotect(pb_dsm.base + first * pb_dsm.page_size, count * pb_dsm.page_size, prot) != 0) {
        pb_error("dsm: mprotect of pages %zu..%zu failed: %m (vm.max_map_count?)", first,
                 first + count - 1);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    return 0;
}

/* Fetch page @p from its home into the system view. */
static int fetch_page(size_t p)
{
    int home = pb_dsm_home(p);
    size_t off = p * pb_dsm.page_size;
    uint64_t start = pb_dsm_now_ns();
    int rc = rsm_memseg_import_get(pb_dsm.peers[home].data, (off_t)off, pb_dsm.sys + off,
                                   pb_dsm.page_size);

    if (rc != RSM_SUCCESS) {
        pb_error("dsm: fetching page %zu from process %d failed: %s", p, home, rsm_strerror(rc));
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    pb_dsm_count_round_trip(POSTBOX_DSM_MSG_PAGE, start);
    pb_dsm_count(&pb_dsm_counters.page_fetches, 1);
    pb_dsm_count_msg(POSTBOX_DSM_MSG_PAGE, pb_dsm.page_size);
    return 0;
}

/* under @protocol: a store hits page @p, valid and read-only */
static int make_dirty(size_t p)
{
    if (pb_dsm_home(p) != pb_dsm.me) {
        char *twin = malloc(pb_dsm.page_size);

        if (twin == NULL) {
            pb_error("dsm: no memory for a twin page");
            return POSTBOX_DSM_ERR_NO_MEMORY;
        }
        memcpy(twin, pb_dsm.sys + p * pb_dsm.page_size, pb_dsm.page_size);
        pb_dsm.twins[p] = twin;
    }
    pb_dsm.dirty[pb_dsm.ndirty++] = (uint32_t)p;
    pb_dsm.state[p] = PB_DSM_WRITE;
    pb_dsm_count(&pb_dsm_counters.write_faults, 1);
    return protect(p, 1, PROT_READ | PROT_WRITE);
}

/* under @protocol: the fault at page @p (@write: by a store, when known) */
static int handle_fault(size_t p, int write)
{
    int rc = 0;

    switch (pb_dsm.state[p]) {
    case PB_DSM_INVALID:
        pb_dsm_count(&pb_dsm_counters.read_faults, !write);
        rc = fetch_page(p);
        if (rc == 0) {
            pb_dsm.state[p] = PB_DSM_READ;
            rc = protect(p, 1, PROT_READ);
        }
        if (rc == 0 && write)
            rc = make_dirty(p);
        break;
    case PB_DSM_READ:
        /* a load faulting on a page another thread made valid meanwhile */
        if (write)
            rc = make_dirty(p);
        break;
    default: break;
    }
    return rc;
}

static struct sigaction old_segv;

static void segv_handler(int sig, siginfo_t *info, void *context)
{
    char *addr = info->si_addr;
    int write = 1, rc;

    if (pb_dsm.base == NULL || addr < pb_dsm.base || addr >= pb_dsm.base + pb_dsm.size) {
        /* not ours: the previous handler, or the default action again */
        if (old_segv.sa_flags & SA_SIGINFO) {
            if (old_segv.sa_sigaction != NULL) {
                old_segv.sa_sigaction(sig, info, context);
                return;
            }
        } else if (old_segv.sa_handler != SIG_DFL && old_segv.sa_handler != SIG_IGN) {
            old_segv.sa_handler(sig);
            return;
        }
        signal(SIGSEGV, SIG_DFL);
        return; /* the instruction faults again, now fatally */
    }
#if defined(__x86_64__)
    write = (((ucontext_t *)context)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
    pthread_mutex_lock(&pb_dsm.protocol);
    rc = handle_fault(page_of(addr), write);
    pthread_mutex_unlock(&pb_dsm.protocol);
    if (rc != 0) {
        pb_error("dsm: cannot serve a fault at %p: %s", (void *)addr, postbox_dsm_strerror(rc));
        abort();
    }
}

int pb_dsm_coherence_init(void)
{
    struct sigaction sa;
    size_t n = pb_dsm.npages;

    pb_dsm.state = calloc(n, 1);
    pb_dsm.twins = calloc(n, sizeof(char *));
    pb_dsm.dirty = calloc(n, sizeof(uint32_t));
    pb_dsm.unsent = calloc(n, sizeof(uint32_t));
    pb_dsm.unsent_mark = calloc(n, 1);
    pb_dsm.log_seen = calloc((size_t)pb_dsm.nprocs, sizeof(uint64_t));
    if (pb_dsm.state == NULL || pb_dsm.twins == NULL || pb_dsm.dirty == NULL ||
        pb_dsm.unsent == NULL || pb_dsm.unsent_mark == NULL || pb_dsm.log_seen == NULL) {
        pb_error("dsm: no memory for the page tables of %zu pages", n);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    /* every copy starts as zeros: valid everywhere */
    memset(pb_dsm.state, PB_DSM_READ, n);
    if (protect(0, n, PROT_READ) != 0)
        return POSTBOX_DSM_ERR_NO_MEMORY;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old_segv) != 0) {
        pb_error("dsm: cannot install the SIGSEGV handler: %m");
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    return 0;
}

void pb_dsm_coherence_fini(void)
{
    if (pb_dsm.state != NULL)
        sigaction(SIGSEGV, &old_segv, NULL);
    for (size_t p = 0; pb_dsm.twins != NULL && p < pb_dsm.npages; p++)
        free(pb_dsm.twins[p]);
    free(pb_dsm.state);
    free(pb_dsm.twins);
    free(pb_dsm.dirty);
    free(pb_dsm.unsent);
    free(pb_dsm.unsent_mark);
    free(pb_dsm.log_seen);
    pb_dsm.log_seen = NULL;
    pb_dsm.state = NULL;
    pb_dsm.twins = NULL;
    pb_dsm.dirty = pb_dsm.unsent = NULL;
    pb_dsm.unsent_mark = NULL;
    pb_dsm.ndirty = pb_dsm.nunsent = 0;
}

/* ---- release ----------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

/* Set @prot on the sorted pages @pages, one mprotect per run. */
static int protect_list(const uint32_t *pages, size_t n, int prot)
{
    size_t i = 0;

    while (i < n) {
        size_t j = i + 1;

        while (j < n && pages[j] == pages[j - 1] + 1)
            j++;
        if (protect(pages[i], j - i, prot) != 0)
            return POSTBOX_DSM_ERR_NO_MEMORY;
        i = j;
    }
    return 0;
}

/* the runs toward one home */
typedef struct {
    rsm_iovec_t *iov;
    size_t n, cap;
} run_list_t;

static int run_add(run_list_t *list, size_t offset, size_t length)
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

/* The runs of 4-byte words of page @p that differ from its twin. */
static int diff_page(size_t p, run_list_t *list)
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

/* Put @list's runs into @home's copy: putvs of RSM_MAX_SGIOREQS entries,
 * all closed by one barrier. */
static int send_runs(int home, run_list_t *list)
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

static void note_unsent(uint32_t p)
{
    if (!pb_dsm.unsent_mark[p]) {
        pb_dsm.unsent_mark[p] = 1;
        pb_dsm.unsent[pb_dsm.nunsent++] = p;
    }
}

/* Append @n released pages to this process's release log: the entries,
 * then the head (a release store: a reader that sees the head sees them). */
static void log_append(const uint32_t *pages, size_t n)
{
    pb_dsm_ctl_t *ctl = pb_dsm.ctl;
    uint64_t *log = (uint64_t *)((char *)ctl + ctl->log_off);
    uint64_t head = atomic_load_explicit(&ctl->log_head, memory_order_relaxed);

    for (size_t i = 0; i < n; i++, head++)
        log[head % PB_DSM_LOG_ENTRIES] = (head & 0xffffffffu) << 32 | pages[i];
    atomic_store_explicit(&ctl->log_head, head, memory_order_release);
}

int pb_dsm_flush_locked(void)
{
    run_list_t *lists;
    int rc;

    if (pb_dsm.ndirty == 0)
        return 0;
    qsort(pb_dsm.dirty, pb_dsm.ndirty, sizeof(uint32_t), cmp_u32);
    /* write-protect first: a store from another thread now faults and
     * waits for us, so no store lands between the diff and the end */
    rc = protect_list(pb_dsm.dirty, pb_dsm.ndirty, PROT_READ);
    if (rc != 0)
        return rc;
    lists = calloc((size_t)pb_dsm.nprocs, sizeof(*lists));
    if (lists == NULL) {
        pb_error("dsm: no memory for a release");
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < pb_dsm.ndirty && rc == 0; i++) {
        uint32_t p = pb_dsm.dirty[i];

        if (pb_dsm.twins[p] != NULL) {
            pb_dsm_count(&pb_dsm_counters.diffs, 1);
            rc = diff_page(p, &lists[pb_dsm_home(p)]);
        }
    }
    for (int home = 0; home < pb_dsm.nprocs && rc == 0; home++)
        if (lists[home].n > 0)
            rc = send_runs(home, &lists[home]);
    for (int home = 0; home < pb_dsm.nprocs; home++)
        free(lists[home].iov);
    free(lists);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < pb_dsm.ndirty; i++) {
        uint32_t p = pb_dsm.dirty[i];

        free(pb_dsm.twins[p]);
        pb_dsm.twins[p] = NULL;
        pb_dsm.state[p] = PB_DSM_READ;
        note_unsent(p);
    }
    log_append(pb_dsm.dirty, pb_dsm.ndirty);
    pb_dsm.ndirty = 0;
    return 0;
}

int pb_dsm_release(void)
{
    int rc;

    pthread_mutex_lock(&pb_dsm.protocol);
    rc = pb_dsm_flush_locked();
    pthread_mutex_unlock(&pb_dsm.protocol);
    return rc;
}

/* ---- acquire ------------------------------------------------------------------ */

/* under @protocol, no page dirty: invalidate the pages of @pages (sorted) */
static int invalidate_list(uint32_t *pages, size_t n)
{
    size_t kept = 0;

    for (size_t i = 0; i < n; i++) {
        uint32_t p = pages[i];

        if (pb_dsm_home(p) == pb_dsm.me || pb_dsm.state[p] == PB_DSM_INVALID)
            continue;
        pb_dsm.state[p] = PB_DSM_INVALID;
        pages[kept++] = p;
    }
    pb_dsm_count(&pb_dsm_counters.invalidations, kept);
    return protect_list(pages, kept, PROT_NONE);
}

int pb_dsm_invalidate_all_locked(void)
{
    int rc = pb_dsm_flush_locked();
    size_t n = 0;

    if (rc != 0)
        return rc;
    for (size_t p = 0; p < pb_dsm.npages; p++)
        if (pb_dsm.state[p] != PB_DSM_INVALID && pb_dsm_home(p) != pb_dsm.me)
            pb_dsm.dirty[n++] = (uint32_t)p; /* (the dirty list is empty: a scratch list) */
    rc = invalidate_list(pb_dsm.dirty, n);
    return rc;
}

int pb_dsm_invalidate_notices_locked(const uint64_t *entries, size_t n)
{
    uint32_t *pages;
    size_t count = 0;
    int rc = pb_dsm_flush_locked();

    if (rc != 0 || n == 0)
        return rc;
    pages = malloc(n * sizeof(*pages));
    if (pages == NULL) {
        pb_error("dsm: no memory for %zu notices", n);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t p = (uint32_t)(entries[i] >> 32);
        int32_t writer = (int32_t)(uint32_t)entries[i];

        if (p < pb_dsm.npages && writer != pb_dsm.me)
            pages[count++] = p;
    }
    qsort(pages, count, sizeof(*pages), cmp_u32);
    rc = invalidate_list(pages, count);
    free(pages);
    return rc;
}

int pb_dsm_acquire_all(void)
{
    int rc;

    pthread_mutex_lock(&pb_dsm.protocol);
    rc = pb_dsm_invalidate_all_locked();
    pthread_mutex_unlock(&pb_dsm.protocol);
    return rc;
}

/* Read process @q's release log from *@seen_p to @head, appending its
 * pages (as notices of writer @q) to @list.  Returns 1 if entries were
 * overwritten before they were read (the log wrapped), 0, or an error. */
static int log_read(int q, uint64_t seen, uint64_t head, uint64_t **list, size_t *n, size_t *cap)
{
    size_t count = (size_t)(head - seen), first = 0;
    uint64_t *entries;
    int rc = 0;

    if (head - seen > PB_DSM_LOG_ENTRIES)
        return 1;
    if (*n + count > *cap) {
        size_t want = (*n + count) * 2;
        uint64_t *bigger = realloc(*list, want * sizeof(uint64_t));

        if (bigger == NULL) {
            pb_error("dsm: no memory for %zu notices", *n + count);
            return POSTBOX_DSM_ERR_NO_MEMORY;
        }
        *list = bigger;
        *cap = want;
    }
    entries = *list + *n;
    /* at most two stretches of the ring */
    while (first < count && rc == 0) {
        size_t at = (size_t)((seen + first) % PB_DSM_LOG_ENTRIES);
        size_t len =
            PB_DSM_LOG_ENTRIES - at < count - first ? PB_DSM_LOG_ENTRIES - at : count - first;

        rc = pb_dsm_ctl_read(q, pb_dsm.ctl->log_off + at * sizeof(uint64_t), entries + first,
                             len * sizeof(uint64_t));
        first += len;
    }
    if (rc != 0)
        return rc;
    if (q != pb_dsm.me)
        pb_dsm_count_msg(POSTBOX_DSM_MSG_LOCK, count * sizeof(uint64_t));
    for (size_t i = 0; i < count; i++) {
        if (entries[i] >> 32 != ((seen + i) & 0xffffffffu))
            return 1;
        entries[i] = (entries[i] & 0xffffffffu) << 32 | (uint32_t)q;
    }
    *n += count;
    return 0;
}

int pb_dsm_acquire_logs(void)
{
    uint64_t *heads = calloc((size_t)pb_dsm.nprocs, sizeof(uint64_t)), *list = NULL;
    size_t n = 0, cap = 0;
    int rc = 0, wrapped = 0;

    if (heads == NULL) {
        pb_error("dsm: no memory for an acquire");
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&pb_dsm.protocol);
    for (int q = 0; q < pb_dsm.nprocs && rc == 0; q++)
        if (q != pb_dsm.me)
            rc = pb_dsm_ctl_read(q, offsetof(pb_dsm_ctl_t, log_head), &heads[q], sizeof(uint64_t));
    for (int q = 0; q < pb_dsm.nprocs && rc == 0 && !wrapped; q++) {
        if (q == pb_dsm.me || heads[q] <= pb_dsm.log_seen[q])
            continue;
        rc = log_read(q, pb_dsm.log_seen[q], heads[q], &list, &n, &cap);
        if (rc == 1) {
            wrapped = 1;
            rc = 0;
        }
    }
    if (rc == 0)
        rc = wrapped ? pb_dsm_invalidate_all_locked() : pb_dsm_invalidate_notices_locked(list, n);
    if (rc == 0)
        for (int q = 0; q < pb_dsm.nprocs; q++)
            if (q != pb_dsm.me && heads[q] > pb_dsm.log_seen[q])
                pb_dsm.log_seen[q] = heads[q];
    pthread_mutex_unlock(&pb_dsm.protocol);
    free(list);
    free(heads);
    return rc;
}
