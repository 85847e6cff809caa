/*
 * Page coherence: home-based lazy release consistency with multiple
 * writers (docs/dsm.md).
 *
 * A page's home is its first writer: a process that releases a page no
 * one homes yet claims it in the home directory (process 0's control
 * segment: one request per release for all such pages) and, if it won,
 * keeps its copy as the home copy and sends no diff (docs/dsm.md, Homes).
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
 * released: a barrier's notices (sync.c), or the others' release logs (a
 * lock, a thread's start, a join).  Everything runs
 * under pb_dsm.protocol, faults included, so two
 * threads faulting on one page fetch it once.
 *
 * Two levels (docs/dsm.md): a page homed by another process of the node is
 * mapped from its home's copy (a direct page); a page homed on another
 * node is read and written in the node's cached copy, which the node's
 * processes share, with one twin per node: releases diff that copy
 * against the node twin, and a get into it while the node has writes
 * not released merges only the words the home changed.
 */
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "dsm/dsm_impl.h"
#include "util/config.h"
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

/* ---- homes --------------------------------------------------------------------- */

/* the directory entries read at once by a look-up */
#define HOME_WINDOW 256

/* under @protocol: page @p's home as known here, or -1 (not known) */
static int home_known(size_t p)
{
    return (int)pb_dsm.homes[p] - 1;
}

static int is_mine(size_t p)
{
    return home_known(p) == pb_dsm.me;
}

/* ---- readers ------------------------------------------------------------------- */

/* A page's read mark in its home's control segment: a reader sets both
 * bits before each get of the page.  READ_EVER is never cleared;
 * READ_SINCE is cleared by the home's release when it compares the page
 * as a hot page (hot_fetched). */
#define READ_EVER 1u
#define READ_SINCE 2u

static _Atomic uint8_t *read_marks(void)
{
    return (_Atomic uint8_t *)((char *)pb_dsm.ctl + pb_dsm.readers_off);
}

/* May a process other than this one hold a copy of home page @p that it
 * fetched from here?  Readers mark what they fetch in the home's control
 * segment (mark_read) before they fetch it. */
static int read_elsewhere(size_t p)
{
    return (atomic_load_explicit(&read_marks()[p], memory_order_relaxed) & READ_EVER) != 0;
}

/* Mark pages [@p, @p + @n) read in the control segment @ctl.  The fence
 * pairs with the one of the home's release (pb_dsm_flush_locked,
 * hot_fetched): either that release sees the mark, or the get that
 * follows sees every store made before it. */
static void mark_in(char *ctl, size_t p, size_t n)
{
    _Atomic uint8_t *read = (_Atomic uint8_t *)(ctl + pb_dsm.readers_off);

    for (size_t i = p; i < p + n; i++)
        if (atomic_load_explicit(&read[i], memory_order_relaxed) != (READ_EVER | READ_SINCE))
            atomic_fetch_or_explicit(&read[i], READ_EVER | READ_SINCE, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
}

/* Before a get of pages [@p, @p + @n) from @home: mark them read there.
 * On this node, on the mapping of the home's control segment; on another
 * node, by a call without reply on the data import, which the home's
 * service side runs before the get (the import applies them in order).
 * Every get is marked, not only a page's first: a hot page's release
 * asks whether it was fetched since the last one (hot_fetched). */
static int mark_read(int home, size_t p, size_t n)
{
    pb_dsm_diff_msg_t msg = {.magic = PB_DSM_READ_MSG_MAGIC,
                             .page_size = (uint32_t)pb_dsm.page_size,
                             .npages = (uint32_t)n,
                             .first = p};
    int rc;

    if (pb_dsm.peers[home].local) {
        mark_in((char *)pb_dsm.peers[home].ctl_map, p, n);
        return 0;
    }
    rc = pb_rsm_memseg_import_call(pb_dsm.peers[home].data, &msg, sizeof(msg), NULL, 0, NULL,
                                   PB_RSM_CALL_NO_REPLY);
    if (rc != RSM_SUCCESS) {
        pb_error("dsm: marking pages %zu..%zu read at process %d failed: %s", p, p + n - 1, home,
                 rsm_strerror(rc));
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    return 0;
}

/* Copy the claimed entries of process 0's directory for pages
 * [@first, @first + @n) into this process's table. */
static int home_read(size_t first, size_t n)
{
    uint8_t window[HOME_WINDOW];

    while (n > 0) {
        size_t len = n < HOME_WINDOW ? n : HOME_WINDOW;
        uint64_t start = pb_dsm_now_ns();
        int rc = pb_dsm_ctl_read(0, pb_dsm.homes_off + first, window, len);

        if (rc != 0)
            return rc;
        if (pb_dsm.me != 0) {
            pb_dsm_count_msg(POSTBOX_DSM_MSG_ALLOC, len);
            pb_dsm_count_round_trip(POSTBOX_DSM_MSG_ALLOC, start);
        }
        for (size_t i = 0; i < len; i++)
            if (window[i] != 0 && window[i] <= pb_dsm.nprocs)
                pb_dsm.homes[first + i] = window[i];
        first += len;
        n -= len;
    }
    return 0;
}

/* under @protocol: page @p's home into *@home, from the directory when not
 * known here (-1: no process wrote the page yet) */
static int home_lookup(size_t p, int *home)
{
    if (pb_dsm.homes[p] == 0) {
        size_t first = p - p % HOME_WINDOW;
        size_t n = pb_dsm.npages - first < HOME_WINDOW ? pb_dsm.npages - first : HOME_WINDOW;
        int rc = home_read(first, n);

        if (rc != 0)
            return rc;
    }
    *home = home_known(p);
    return 0;
}

void pb_dsm_handle_home_claim(pb_dsm_ctl_t *ctl, const pb_dsm_req_t *req, const uint32_t *pages,
                              pb_dsm_reply_t *reply)
{
    uint8_t *homes = (uint8_t *)ctl + ctl->homes_off;
    uint64_t won = 0;

    if (ctl->homes_off == 0) {
        reply->status = POSTBOX_DSM_ERR_WRONG_PROCESS;
        return;
    }
    if (req->b >= ctl->nprocs) {
        reply->status = POSTBOX_DSM_ERR_BAD_ARGUMENT;
        return;
    }
    for (uint32_t i = 0; i < req->npages; i++) {
        if (pages[i] >= ctl->npages) {
            reply->status = POSTBOX_DSM_ERR_BAD_ARGUMENT;
            return;
        }
    }
    for (uint32_t i = 0; i < req->npages; i++) {
        if (homes[pages[i]] == 0) {
            homes[pages[i]] = (uint8_t)(req->b + 1);
            won++;
        }
    }
    reply->status = 0;
    reply->a = won;
}

/* under @protocol, at a release: claim the pages of @pages (sorted, homes
 * not known here) for this process; afterwards each one's home is known */
static int home_claim(const uint32_t *pages, size_t n)
{
    for (size_t i = 0; i < n; i += PB_DSM_RPC_PAGES) {
        size_t count = n - i < PB_DSM_RPC_PAGES ? n - i : PB_DSM_RPC_PAGES;
        pb_dsm_req_t req = {
            .op = PB_DSM_OP_HOME_CLAIM, .npages = (uint32_t)count, .b = (uint64_t)pb_dsm.me};
        pb_dsm_reply_t reply;
        int rc = pb_dsm_rpc(0, POSTBOX_DSM_MSG_ALLOC, &req, pages + i, &reply);

        if (rc == 0 && reply.status < 0)
            rc = (int)reply.status;
        if (rc != 0) {
            pb_error("dsm: claiming %zu pages at the home directory failed: %s", count,
                     postbox_dsm_strerror(rc));
            return rc;
        }
        if (reply.a == count) {
            /* all won (the usual case: no need to read the directory) */
            for (size_t k = i; k < i + count; k++)
                pb_dsm.homes[pages[k]] = (uint8_t)(pb_dsm.me + 1);
        } else {
            rc = home_read(pages[i], pages[i + count - 1] - pages[i] + 1);
            if (rc != 0)
                return rc;
        }
        pb_dsm_count(&pb_dsm_counters.home_pages, reply.a);
    }
    return 0;
}

/* ---- faults --------------------------------------------------------------------- */

/* Per home on another node (under @protocol): the page after the last
 * run fetched from it, that run, the pages fetched since the fault that
 * did not read on (the streak) and the last streak's length. */
static struct {
    size_t next;
    size_t run;
    size_t streak;
    size_t last_streak;
} reads[PB_DSM_MAX_PROCS];

/* the run a fault on page @p fetches from @home at most: on this node
 * PB_DSM_FETCH_RUN; from a home on another node, twice the last run (up
 * to PB_DSM_FETCH_RUN_MAX) when @p is the page that run ended before (the
 * program reads on), else as many pages as the last streak from that
 * home fetched (at least PB_DSM_FETCH_RUN, at most PB_DSM_FETCH_RUN_MAX):
 * a program that reads blocks of 32 pages from another node (LU's
 * perimeter) fetches each after the first in one get, one that reads a
 * row of 2 pages here and there (SOR's and OCEAN's borders) fetches 2 */
static size_t fetch_run(int home, size_t p)
{
    size_t run = PB_DSM_FETCH_RUN;

    if (pb_dsm.peers[home].local)
        return run;
    if (reads[home].run != 0 && p == reads[home].next) {
        run =
            reads[home].run * 2 < PB_DSM_FETCH_RUN_MAX ? reads[home].run * 2 : PB_DSM_FETCH_RUN_MAX;
    } else {
        reads[home].last_streak = reads[home].streak;
        reads[home].streak = 0;
        if (reads[home].last_streak > run)
            run = reads[home].last_streak < PB_DSM_FETCH_RUN_MAX ? reads[home].last_streak
                                                                 : PB_DSM_FETCH_RUN_MAX;
    }
    reads[home].run = run;
    return run;
}

/* under @protocol: how many pages from @p (itself one) are invalid here
 * and homed at @home, at most @max */
static size_t invalid_run(size_t p, int home, size_t max)
{
    size_t n = 1;

    while (n < max && p + n < pb_dsm.npages && pb_dsm.state[p + n] == PB_DSM_INVALID &&
           home_known(p + n) == home)
        n++;
    return n;
}

/* under @protocol: the run a fault at @p fetches from @home (another
 * node's or, without a node cache, any other process): fetch_run's length
 * of pages invalid here, noted as read from @home */
static size_t read_run(int home, size_t p)
{
    size_t n = invalid_run(p, home, fetch_run(home, p));

    reads[home].next = p + n;
    reads[home].streak += n;
    return n;
}

/* Get pages [@p, @p + @n) from @home into @dst, marked read there first,
 * and count them.  @return 0 or POSTBOX_DSM_ERR_COMMUNICATION (logged). */
static int get_run(int home, size_t p, size_t n, char *dst)
{
    uint64_t start = pb_dsm_now_ns();
    int rc = mark_read(home, p, n);

    if (rc != 0)
        return rc;
    rc = rsm_memseg_import_get(pb_dsm.peers[home].data, (off_t)(p * pb_dsm.page_size), dst,
                               n * pb_dsm.page_size);
    if (rc != RSM_SUCCESS) {
        pb_error("dsm: fetching pages %zu..%zu from process %d failed: %s", p, p + n - 1, home,
                 rsm_strerror(rc));
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    pb_dsm_count_round_trip(POSTBOX_DSM_MSG_PAGE, start);
    pb_dsm_count(&pb_dsm_counters.page_fetches, n);
    pb_dsm_count_msg(POSTBOX_DSM_MSG_PAGE, n * pb_dsm.page_size);
    return 0;
}

/* Map page @p, and the pages after it that are invalid here and homed at
 * @home too (up to PB_DSM_FETCH_RUN_MAX in all), straight from @home's
 * copy: @home is another process of this node, whose copy this process
 * maps (pb_dsm_peer_t.data_map).  The application view then reads and
 * writes the home's own memory, which every diff toward it and every
 * store of the node's processes reaches: such a direct page holds every
 * write released before this process's acquires, as a fetched copy
 * would, never goes stale, and needs no fetch, twin or diff again.  The
 * new mappings inherit the source's PROT_NONE; the caller opens them.
 * *@count_p: the pages mapped. */
static int map_direct(size_t p, int home, size_t *count_p)
{
    size_t off = p * pb_dsm.page_size, n = invalid_run(p, home, PB_DSM_FETCH_RUN_MAX);

    if (mremap(pb_dsm.peers[home].data_map + off, 0, n * pb_dsm.page_size,
               MREMAP_MAYMOVE | MREMAP_FIXED, pb_dsm.base + off) == MAP_FAILED) {
        pb_error("dsm: cannot map pages %zu..%zu from process %d: %m (vm.max_map_count?)", p,
                 p + n - 1, home);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    memset(pb_dsm.direct + p, 1, n);
    pb_dsm_count(&pb_dsm_counters.direct_pages, n);
    *count_p = n;
    return 0;
}

/* ---- the node's cache ------------------------------------------------------------ */

static void ncache_lock(size_t p)
{
    while (atomic_exchange_explicit(&pb_dsm.ncache_pages[p].lock, 1, memory_order_acquire) != 0)
        sched_yield();
}

static void ncache_unlock(size_t p)
{
    atomic_store_explicit(&pb_dsm.ncache_pages[p].lock, 0, memory_order_release);
}

/* Is episode @a after @b (numbers that wrap)? */
static int episode_after(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) > 0;
}

/* Under @protocol, at an acquire: this process took a notice of a write
 * to page @p, in barrier episode @episode's notices or (0) in a release
 * log, so the node cache's copy of it is stale until a get begun from
 * now on lands (pb_dsm_ncache_page_t).  (An episode's notices are applied
 * by every process of the node: each raises @written_episode to it, and
 * a get that began after any of them applied it already holds the write.) */
static void ncache_notice(size_t p, uint64_t episode)
{
    pb_dsm_ncache_page_t *page;

    if (pb_dsm.ncache == NULL)
        return;
    page = &pb_dsm.ncache_pages[p];
    if (episode == 0) {
        atomic_fetch_add_explicit(&page->stale, 1, memory_order_seq_cst);
    } else {
        uint32_t was = atomic_load_explicit(&page->written_episode, memory_order_relaxed);

        while (episode_after((uint32_t)episode, was) &&
               !atomic_compare_exchange_weak_explicit(&page->written_episode, &was,
                                                      (uint32_t)episode, memory_order_seq_cst,
                                                      memory_order_relaxed))
            ;
    }
}

/* Take the locks of pages [@p, @p + @n), in page order, once no diff of
 * any of them built from the node's copy is on its way to the home
 * (pb_dsm_ncache_page_t.sending): a get must not read the home before
 * such a diff lands, or it would bring back words the node has sent.  No
 * lock is held while waiting (its holders never wait), and @sending
 * rises only under the page's lock, so it stays 0 while they are held. */
static void ncache_lock_quiet(size_t p, size_t n)
{
    for (;;) {
        size_t i = 0;

        while (i < n) {
            ncache_lock(p + i);
            if (atomic_load_explicit(&pb_dsm.ncache_pages[p + i].sending, memory_order_acquire) !=
                0)
                break;
            i++;
        }
        if (i == n)
            return;
        for (size_t k = 0; k <= i; k++)
            ncache_unlock(p + k);
        sched_yield();
    }
}

/* Under page @p's lock, while processes of the node wrote it since their
 * last releases: merge @got (the home's copy, just got) into the node's
 * copy.  A word the home changed since the node twin was taken (it
 * differs from the twin) goes into both the copy and the twin; every
 * other word of the copy stays, with the node's stores not released yet
 * (two-way diffing, as in Cashmere-2L).  A word that both changed would
 * be a data race. */
static void ncache_merge(size_t p, const char *got)
{
    size_t off = p * pb_dsm.page_size, words = pb_dsm.page_size / 4;
    const uint32_t *in = (const uint32_t *)got;
    volatile uint32_t *copy = (volatile uint32_t *)(pb_dsm.ncache + off);
    uint32_t *twin = (uint32_t *)(pb_dsm.ncache_twin + off);

    for (size_t i = 0; i < words; i++) {
        if (in[i] != twin[i]) {
            twin[i] = in[i];
            copy[i] = in[i];
        }
    }
}

/* Get pages [@p, @p + @n) from @home into the node's copy, their locks
 * held.  A page some process of the node wrote since its last release
 * (pb_dsm_ncache_page_t.writers) is merged (ncache_merge) from a scratch
 * buffer; the others are copied whole, as no process of the node stores
 * into them. */
static int ncache_get(int home, size_t p, size_t n)
{
    size_t off = p * pb_dsm.page_size, len = n * pb_dsm.page_size;
    int written = 0, rc;
    char *got;

    for (size_t i = 0; i < n; i++)
        written |=
            atomic_load_explicit(&pb_dsm.ncache_pages[p + i].writers, memory_order_relaxed) != 0;
    if (!written)
        return get_run(home, p, n, pb_dsm.ncache + off);
    got = malloc(len);
    if (got == NULL) {
        pb_error("dsm: no memory for %zu pages got into the node's cache", n);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    rc = get_run(home, p, n, got);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (atomic_load_explicit(&pb_dsm.ncache_pages[p + i].writers, memory_order_relaxed) != 0)
            ncache_merge(p + i, got + i * pb_dsm.page_size);
        else
            memcpy(pb_dsm.ncache + off + i * pb_dsm.page_size, got + i * pb_dsm.page_size,
                   pb_dsm.page_size);
    }
    free(got);
    return rc;
}

/* Page @p, homed at @home on another node, through the node's cache: the
 * run of pages from it that are invalid here and homed at @home too (as
 * long as fetch_run says) is got into the cache unless the cache's copy of
 * every one of them holds the writes of every notice taken on this node
 * so far (in particular this process's: a copy another process of the node
 * got since this process's acquire is good for it); then the application
 * view maps them from the cache, read-only until a store (node_write).
 * *@count_p: the pages mapped. */
static int fetch_node(size_t p, int home, size_t *count_p)
{
    pb_dsm_ncache_page_t *pages = pb_dsm.ncache_pages;
    size_t off = p * pb_dsm.page_size, n = read_run(home, p);
    uint32_t seen[PB_DSM_FETCH_RUN_MAX], applied = (uint32_t)pb_dsm.applied;
    int stale = 0, rc = 0;

    ncache_lock_quiet(p, n);
    for (size_t i = 0; i < n; i++) {
        seen[i] = atomic_load_explicit(&pages[p + i].stale, memory_order_seq_cst);
        stale |= atomic_load_explicit(&pages[p + i].fetched, memory_order_relaxed) != seen[i] ||
                 episode_after(
                     atomic_load_explicit(&pages[p + i].written_episode, memory_order_seq_cst),
                     atomic_load_explicit(&pages[p + i].fetched_episode, memory_order_relaxed));
    }
    if (stale) {
        rc = ncache_get(home, p, n);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            /* (gets are one at a time: a later one reads no older data) */
            if (episode_after(applied, atomic_load_explicit(&pages[p + i].fetched_episode,
                                                            memory_order_relaxed)))
                atomic_store_explicit(&pages[p + i].fetched_episode, applied, memory_order_release);
            atomic_store_explicit(&pages[p + i].fetched, seen[i], memory_order_release);
        }
    } else {
        pb_dsm_count(&pb_dsm_counters.node_pages, n);
    }
    for (size_t i = 0; i < n; i++)
        ncache_unlock(p + i);
    if (rc != 0)
        return rc;
    if (mremap(pb_dsm.ncache_src + off, 0, n * pb_dsm.page_size, MREMAP_MAYMOVE | MREMAP_FIXED,
               pb_dsm.base + off) == MAP_FAILED) {
        pb_error("dsm: cannot map pages %zu..%zu from the node's cache: %m (vm.max_map_count?)", p,
                 p + n - 1);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    memset(pb_dsm.nodecached + p, 1, n);
    *count_p = n;
    return 0;
}

/* Under @protocol, before the first store since its last release to page
 * @p, which the application view maps from the node's cache: this process
 * joins the page's writers, the first of them taking the node twin (the
 * copy as it is).  The caller then opens the mapping read-write: the
 * store lands in the node's copy, which every process of the node maps,
 * and this process's release diffs the copy against the node twin. */
static void node_write(size_t p)
{
    size_t off = p * pb_dsm.page_size;
    pb_dsm_ncache_page_t *page = &pb_dsm.ncache_pages[p];

    ncache_lock(p);
    if (atomic_load_explicit(&page->writers, memory_order_relaxed) == 0)
        memcpy(pb_dsm.ncache_twin + off, pb_dsm.ncache + off, pb_dsm.page_size);
    atomic_fetch_add_explicit(&page->writers, 1, memory_order_relaxed);
    ncache_unlock(p);
    pb_dsm_count(&pb_dsm_counters.node_writes, 1);
}

/* Fetch page @p from its home into the system view, with the pages
 * after it that are invalid here and homed at the same process, up to
 * fetch_run's pages in all, in one get (a program that reads a page
 * reads the next one too, as often as not: a block of LU's matrix is two
 * pages; one that reads on where the last run ended reads a longer
 * stretch, MATMULT's blocks of B).  Such a page's copy at its home holds
 * every write released before this process's last acquire, as when a
 * fault of its own fetched it.  *@count_p: the pages fetched (1 for a
 * page that needed no get). */
static int fetch_page(size_t p, size_t *count_p)
{
    int home, rc = home_lookup(p, &home);
    size_t n;

    *count_p = 1;
    if (rc != 0)
        return rc;
    /* no home: no process released a write to it, and this copy was
     * never fetched nor diffed into, so it still holds the zeros of the
     * start */
    if (home < 0 || home == pb_dsm.me)
        return 0;
    if (pb_dsm.peers[home].data_map != NULL)
        return map_direct(p, home, count_p);
    if (pb_dsm.ncache != NULL && !pb_dsm.peers[home].local)
        return fetch_node(p, home, count_p);
    n = read_run(home, p);
    rc = get_run(home, p, n, pb_dsm.sys + p * pb_dsm.page_size);
    if (rc == 0)
        *count_p = n;
    return rc;
}

/* Under @protocol: the page after the last run of home pages a store
 * made writable, and that run's length. */
static struct {
    size_t next;
    size_t run;
} writes;

/* under @protocol: how many home pages from @p (itself one, written) a
 * store makes writable at once.  A store on the page where the last run
 * ended may open twice as many (up to PB_DSM_WRITE_RUN_MAX), any other
 * opens 1; the run stops before a page that is not an ordinary home page
 * here (read-only, no twin) or that a reader marked.  The pages opened
 * with @p join the dirty ones as if written: at the release, those no
 * reader marked meanwhile become unread pages, which need no notice
 * (dirty_to_unread), and a marked one is noticed as any written page.
 * A program that writes its own blocks from start to end (LU's trailing
 * matrix) then takes a handful of faults a block, not one a page. */
static size_t write_run(size_t p)
{
    size_t max = 1, n = 1;

    if (writes.run != 0 && p == writes.next)
        max = writes.run * 2 < PB_DSM_WRITE_RUN_MAX ? writes.run * 2 : PB_DSM_WRITE_RUN_MAX;
    while (n < max && p + n < pb_dsm.npages && pb_dsm.state[p + n] == PB_DSM_READ &&
           pb_dsm.twins[p + n] == NULL && is_mine(p + n) && !read_elsewhere(p + n))
        n++;
    writes.next = p + n;
    writes.run = n;
    return n;
}

/* under @protocol: a store hits page @p, valid and read-only */
static int make_dirty(size_t p)
{
    size_t n = 1;

    /* (a page no process homes yet gets a twin too: another may claim it
     * first at its release; a direct page is written in its home's copy,
     * and its release only notices it; a page of the node's cache is
     * written in the node's copy, twinned by the node) */
    if (pb_dsm.nodecached[p]) {
        node_write(p);
    } else if (!is_mine(p) && !pb_dsm.direct[p]) {
        char *twin = malloc(pb_dsm.page_size);

        if (twin == NULL) {
            pb_error("dsm: no memory for a twin page");
            return POSTBOX_DSM_ERR_NO_MEMORY;
        }
        memcpy(twin, pb_dsm.sys + p * pb_dsm.page_size, pb_dsm.page_size);
        pb_dsm.twins[p] = twin;
    } else if (!read_elsewhere(p)) {
        n = write_run(p);
    }
    for (size_t i = p; i < p + n; i++)
        pb_dsm.dirty[pb_dsm.ndirty++] = (uint32_t)i;
    memset(pb_dsm.state + p, PB_DSM_WRITE, n);
    pb_dsm_count(&pb_dsm_counters.write_faults, 1);
    return protect(p, n, PROT_READ | PROT_WRITE);
}

/* under @protocol: the fault at page @p (@write: by a store, when known) */
static int handle_fault(size_t p, int write)
{
    size_t n;
    int rc = 0;

    switch (pb_dsm.state[p]) {
    case PB_DSM_INVALID:
        pb_dsm_count(&pb_dsm_counters.read_faults, !write);
        rc = fetch_page(p, &n);
        if (rc == 0) {
            memset(pb_dsm.state + p, PB_DSM_READ, n);
            rc = protect(p, n, PROT_READ);
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
    pb_dsm_ctl_t *layout = malloc(sizeof(*layout)); /* (large) */

    if (layout == NULL) {
        pb_error("dsm: no memory for a control segment's layout");
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    pb_dsm_ctl_layout(layout, 0);
    pb_dsm.homes_off = layout->homes_off;
    pb_dsm.readers_off = layout->readers_off;
    pb_dsm.area_off = layout->area_off;
    pb_dsm.area_size = layout->area_size;
    pb_dsm.depart_off = layout->depart_off;
    free(layout);

    pb_dsm.state = calloc(n, 1);
    pb_dsm.direct = calloc(n, 1);
    pb_dsm.nodecached = calloc(n, 1);
    pb_dsm.twins = calloc(n, sizeof(char *));
    pb_dsm.dirty = calloc(n, sizeof(uint32_t));
    pb_dsm.unsent = calloc(n, sizeof(uint32_t));
    pb_dsm.unsent_mark = calloc(n, 1);
    pb_dsm.log_seen = calloc((size_t)pb_dsm.nprocs, sizeof(uint64_t));
    pb_dsm.homes = calloc(n, 1);
    pb_dsm.hot = calloc(n, sizeof(uint32_t));
    pb_dsm.unread = calloc(n, sizeof(uint32_t));
    pb_dsm.written_at = calloc(n, sizeof(uint32_t));
    pb_dsm.written_elsewhere = calloc(n, 1);
    pb_dsm.self_invalidate = pb_config_get_long("POSTBOX_DSM_SELF_INVALIDATE") > 0;
    if (pb_dsm.state == NULL || pb_dsm.direct == NULL || pb_dsm.nodecached == NULL ||
        pb_dsm.twins == NULL || pb_dsm.dirty == NULL || pb_dsm.unsent == NULL ||
        pb_dsm.unsent_mark == NULL || pb_dsm.log_seen == NULL || pb_dsm.homes == NULL ||
        pb_dsm.hot == NULL || pb_dsm.unread == NULL || pb_dsm.written_at == NULL ||
        pb_dsm.written_elsewhere == NULL) {
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
    free(pb_dsm.direct);
    free(pb_dsm.nodecached);
    pb_dsm.nodecached = NULL;
    free(pb_dsm.twins);
    free(pb_dsm.dirty);
    free(pb_dsm.unsent);
    free(pb_dsm.unsent_mark);
    free(pb_dsm.log_seen);
    free(pb_dsm.homes);
    free(pb_dsm.hot);
    free(pb_dsm.unread);
    free(pb_dsm.written_at);
    free(pb_dsm.written_elsewhere);
    pb_dsm.written_elsewhere = NULL;
    pb_dsm.log_seen = NULL;
    pb_dsm.homes = NULL;
    pb_dsm.hot = pb_dsm.unread = pb_dsm.written_at = NULL;
    pb_dsm.nhot = pb_dsm.nunread = 0;
    pb_dsm.releases = 0;
    pb_dsm.state = pb_dsm.direct = NULL;
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

/* Under @protocol, at a release: append the changes of page @p of the
 * node's cache, which this process wrote since its last release (it is
 * write-protected here now), to @pack: the node's copy against the node
 * twin, under the page's lock once no earlier diff of the page is on its
 * way (so that the home applies them in the order they were built, and
 * a later get does not bring back words sent before).  The diff may carry
 * words that other processes of the node stored and have not released
 * yet: sending them early is allowed (a data-race-free program reads
 * them only after their writer's release, which waits for this diff, as
 * its own diff of the page waits until this one arrived).  This process
 * leaves the page's writers.  *@sent_p: 1 when words were appended (the
 * caller lowers the page's @sending once they arrived). */
static int pack_node_page(size_t p, pb_dsm_pack_t *pack, int *sent_p)
{
    size_t off = p * pb_dsm.page_size, changed = 0;
    pb_dsm_ncache_page_t *page = &pb_dsm.ncache_pages[p];
    int rc;

    *sent_p = 0;
    for (;;) {
        ncache_lock(p);
        if (atomic_load_explicit(&page->sending, memory_order_acquire) == 0)
            break;
        ncache_unlock(p);
        sched_yield();
    }
    rc = pb_dsm_pack_page(p, (const volatile uint32_t *)(pb_dsm.ncache + off),
                          (uint32_t *)(pb_dsm.ncache_twin + off), 1, pack, &changed);
    if (rc == 0) {
        if (changed > 0) {
            atomic_fetch_add_explicit(&page->sending, 1, memory_order_relaxed);
            *sent_p = 1;
        }
        atomic_fetch_sub_explicit(&page->writers, 1, memory_order_relaxed);
    }
    ncache_unlock(p);
    return rc;
}

void pb_dsm_diff_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                         size_t request_len, void *reply, size_t reply_max, size_t *reply_len)
{
    pb_dsm_diff_msg_t msg;

    if (request_len < sizeof(msg))
        return;
    memcpy(&msg, request, sizeof(msg));
    if (msg.magic == PB_DSM_READ_MSG_MAGIC) {
        if (msg.first < pb_dsm.npages && msg.npages <= pb_dsm.npages - msg.first)
            mark_in((char *)pb_dsm.ctl, msg.first, msg.npages);
        return;
    }
    pb_dsm_diff_apply(seg_base, seg_size, request, request_len);
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

/* under @protocol, at a release (the dirty list sorted): claim the dirty
 * pages no process is known to home; those won drop their twins, as home
 * pages have none, so that no diff is made of them */
static int claim_unhomed(void)
{
    uint32_t *pages = malloc(pb_dsm.ndirty * sizeof(*pages));
    size_t n = 0;
    int rc;

    if (pages == NULL) {
        pb_error("dsm: no memory for a release");
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < pb_dsm.ndirty; i++)
        if (pb_dsm.homes[pb_dsm.dirty[i]] == 0)
            pages[n++] = pb_dsm.dirty[i];
    rc = n > 0 ? home_claim(pages, n) : 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (is_mine(pages[i])) {
            free(pb_dsm.twins[pages[i]]);
            pb_dsm.twins[pages[i]] = NULL;
        } else if (home_known(pages[i]) < 0) {
            pb_error("dsm: page %u has no home after its claim", pages[i]);
            rc = POSTBOX_DSM_ERR_COMMUNICATION;
        }
    }
    free(pages);
    return rc;
}

/* under @protocol: has hot page @p changed since its snapshot?  One
 * memcmp over the page (vectorized by the C library: a page found
 * unchanged costs a read of the two pages, not a loop over its words);
 * a page that differs is copied whole into its snapshot.  A word read
 * into the snapshot was in the page before this release ends, so any
 * reader that acquires it fetches that value or a later one; a store of
 * another thread after the copy read its word is found at the next
 * release (it is concurrent with this one). */
static int hot_changed(size_t p)
{
    const char *cur = pb_dsm.sys + p * pb_dsm.page_size;
    char *snap = pb_dsm.twins[p];

    if (memcmp(cur, snap, pb_dsm.page_size) == 0)
        return 0;
    memcpy(snap, cur, pb_dsm.page_size);
    return 1;
}

/* under @protocol, after hot_changed compared hot page @p: was it
 * fetched since the last release that compared it?  Clears the page's
 * READ_SINCE.  A page equal to its snapshot may have held other values
 * in the interval (a word stored and stored back), and a reader that
 * fetched it meanwhile may hold one of them: the page is noticed then as
 * if changed.  The fence orders the compare before the mark's exchange
 * (pairs with mark_in's): when the exchange misses a reader's mark, that
 * reader's get follows the compare and sees the page as compared, or
 * later stores, whose release sees the mark. */
static int hot_fetched(size_t p)
{
    atomic_thread_fence(memory_order_seq_cst);
    return (atomic_fetch_and_explicit(&read_marks()[p], (uint8_t)~READ_SINCE,
                                      memory_order_relaxed) &
            READ_SINCE) != 0;
}

/* under @protocol, at release @r: look at the hot pages.  Those changed
 * since their snapshots, or fetched elsewhere since the last release
 * (hot_fetched), go to @written (with their count in *@n); a hot page
 * found unchanged at the last PB_DSM_HOT_RELEASES releases is
 * write-protected first, looked at a last time, and becomes an ordinary
 * home page again (its next store faults).  Every hot page was read
 * elsewhere: a written home page nobody had marked went to the unread
 * pages (dirty_to_unread) before it could heat, and READ_EVER is never
 * cleared. */
static int hot_scan(uint32_t r, uint32_t *written, size_t *n)
{
    size_t kept = 0, compared = 0;
    int rc = 0;

    for (size_t i = 0; i < pb_dsm.nhot; i++) {
        uint32_t p = pb_dsm.hot[i];
        int idle = r - pb_dsm.written_at[p] > PB_DSM_HOT_RELEASES;

        if (idle && rc == 0)
            rc = protect(p, 1, PROT_READ);
        compared++;
        if (hot_changed(p)) {
            pb_dsm.written_at[p] = r;
            written[(*n)++] = p;
            hot_fetched(p);
        } else if (hot_fetched(p)) {
            /* (not written: its idle count goes on) */
            written[(*n)++] = p;
        }
        if (idle && rc == 0) {
            free(pb_dsm.twins[p]);
            pb_dsm.twins[p] = NULL;
            pb_dsm.state[p] = PB_DSM_READ;
        } else {
            pb_dsm.hot[kept++] = p;
        }
    }
    pb_dsm_count(&pb_dsm_counters.hot_compares, compared);
    pb_dsm.nhot = kept;
    return rc;
}

/* under @protocol, at release @r: the unread pages a process of this node
 * fetched since the last release are write-protected and go to @written
 * (*@n counts them), as if written in this interval: whatever this
 * process stored in them since, a reader's copy may miss it.  They are
 * ordinary home pages from then on. */
static int unread_scan(uint32_t r, uint32_t *written, size_t *n)
{
    size_t kept = 0;
    int rc = 0;

    for (size_t i = 0; i < pb_dsm.nunread; i++) {
        uint32_t p = pb_dsm.unread[i];

        if (rc != 0 || !read_elsewhere(p) || (rc = protect(p, 1, PROT_READ)) != 0) {
            /* (still writable: it stays unread) */
            pb_dsm.unread[kept++] = p;
            continue;
        }
        pb_dsm.state[p] = PB_DSM_READ;
        pb_dsm.written_at[p] = r;
        written[(*n)++] = p;
    }
    pb_dsm.nunread = kept;
    return rc;
}

/* under @protocol, at a release: the dirty pages that were home pages
 * before it (no twin) and that no other process fetched leave the dirty
 * list for the unread pages, writable: no copy elsewhere can miss their
 * stores (every other process's first copy, the zeros of the start, was
 * invalidated by the notice of the release that claimed the page). */
static void dirty_to_unread(void)
{
    size_t kept = 0;

    for (size_t i = 0; i < pb_dsm.ndirty; i++) {
        uint32_t p = pb_dsm.dirty[i];

        if (pb_dsm.twins[p] == NULL && is_mine(p) && !read_elsewhere(p))
            pb_dsm.unread[pb_dsm.nunread++] = p;
        else
            pb_dsm.dirty[kept++] = p;
    }
    pb_dsm.ndirty = kept;
}

/* under @protocol: is dirty page @p a home page written at one of the
 * last PB_DSM_HOT_RELEASES releases before @r too (it stays writable)? */
static int to_heat(uint32_t p, uint32_t r)
{
    return pb_dsm.twins[p] == NULL && is_mine(p) && pb_dsm.written_at[p] != 0 &&
           r - pb_dsm.written_at[p] <= PB_DSM_HOT_RELEASES;
}

int pb_dsm_flush_locked(void)
{
    pb_dsm_runs_t *lists;
    pb_dsm_pack_t *packs;
    uint32_t *cold, r;
    uint8_t *heat, *sent;
    size_t ncold = 0, nwritten = 0;
    int rc;

    if (pb_dsm.ndirty == 0 && pb_dsm.nhot == 0 && pb_dsm.nunread == 0)
        return 0;
    /* (releases count only those that find pages written: an acquire's
     * flush that finds none does not age the hot pages) */
    r = pb_dsm.releases + 1 == 0 ? 1 : pb_dsm.releases + 1; /* (0 is "never written") */
    qsort(pb_dsm.dirty, pb_dsm.ndirty, sizeof(uint32_t), cmp_u32);
    /* the read marks are looked at after the stores of this interval
     * (pairs with mark_read's fence) */
    atomic_thread_fence(memory_order_seq_cst);
    dirty_to_unread();
    /* the hot pages changed and the unread pages read go after the dirty
     * ones (disjoint sets: the list holds every page) */
    rc = hot_scan(r, pb_dsm.dirty + pb_dsm.ndirty, &nwritten);
    if (rc == 0)
        rc = unread_scan(r, pb_dsm.dirty + pb_dsm.ndirty, &nwritten);
    if (rc != 0 || pb_dsm.ndirty + nwritten == 0)
        return rc;
    pb_dsm.releases = r;
    /* write-protect first: a store from another thread now faults and
     * waits for us, so no store lands between the diff and the end (hot
     * home pages stay writable: they have no diff) */
    cold = malloc((pb_dsm.ndirty + 1) * sizeof(*cold));
    heat = malloc(pb_dsm.ndirty + 1);
    if (cold == NULL || heat == NULL) {
        free(cold);
        free(heat);
        pb_error("dsm: no memory for a release");
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < pb_dsm.ndirty; i++) {
        heat[i] = (uint8_t)to_heat(pb_dsm.dirty[i], r);
        if (!heat[i])
            cold[ncold++] = pb_dsm.dirty[i];
    }
    rc = protect_list(cold, ncold, PROT_READ);
    free(cold);
    if (rc == 0)
        rc = claim_unhomed();
    if (rc != 0) {
        free(heat);
        return rc;
    }
    lists = calloc((size_t)pb_dsm.nprocs, sizeof(*lists));
    packs = calloc((size_t)pb_dsm.nprocs, sizeof(*packs));
    sent = calloc(pb_dsm.ndirty + 1, 1); /* (pages of the node's cache whose diffs were sent) */
    if (lists == NULL || packs == NULL || sent == NULL) {
        free(lists);
        free(packs);
        free(sent);
        free(heat);
        pb_error("dsm: no memory for a release");
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    /* homes of this node: runs put by putv; of other nodes: packed calls,
     * all between an open and a close of the import's barrier */
    for (size_t i = 0; i < pb_dsm.ndirty && rc == 0; i++) {
        uint32_t p = pb_dsm.dirty[i];
        int home = home_known(p);

        /* (a page of the node's cache has no twin of this process's: its
         * node twin is in the cache) */
        if (pb_dsm.twins[p] == NULL && !pb_dsm.nodecached[p])
            continue;
        pb_dsm_count(&pb_dsm_counters.diffs, 1);
        if (pb_dsm.peers[home].local) {
            rc = pb_dsm_diff_runs(p, &lists[home]);
            continue;
        }
        if (!packs[home].open) {
            if (rsm_memseg_import_open_barrier(&pb_dsm.peers[home].data_bar) != RSM_SUCCESS) {
                pb_error("dsm: cannot open a barrier toward process %d", home);
                rc = POSTBOX_DSM_ERR_COMMUNICATION;
                break;
            }
            packs[home].open = 1;
        }
        if (rc == 0 && pb_dsm.nodecached[p]) {
            int was_sent;

            rc = pack_node_page(p, &packs[home], &was_sent);
            sent[i] = (uint8_t)was_sent;
        } else if (rc == 0) {
            size_t changed;

            rc = pb_dsm_pack_page(p, (const volatile uint32_t *)(pb_dsm.sys + p * pb_dsm.page_size),
                                  (uint32_t *)pb_dsm.twins[p], 0, &packs[home], &changed);
        }
        if (rc == 0 && packs[home].len >= PB_DSM_DIFF_MSG_MAX)
            rc = pb_dsm_pack_send(home, &packs[home]);
    }
    if (pb_dsm.test_fail == PB_DSM_TEST_SLOW && memchr(sent, 1, pb_dsm.ndirty) != NULL)
        usleep(pb_dsm.test_slow_us);
    for (int home = 0; home < pb_dsm.nprocs; home++) {
        if (rc == 0 && lists[home].n > 0)
            rc = pb_dsm_runs_send(home, &lists[home]);
        if (!packs[home].open)
            continue;
        if (rc == 0)
            rc = pb_dsm_pack_send(home, &packs[home]);
        /* (closed whatever happened: the barrier must not stay open) */
        if (rsm_memseg_import_close_barrier(&pb_dsm.peers[home].data_bar) != RSM_SUCCESS &&
            rc == 0) {
            pb_error("dsm: the diffs toward process %d did not arrive", home);
            rc = POSTBOX_DSM_ERR_COMMUNICATION;
        }
    }
    /* (arrived, or failed: either way no later diff or get of those pages
     * waits for them any more) */
    for (size_t i = 0; i < pb_dsm.ndirty; i++)
        if (sent[i])
            atomic_fetch_sub_explicit(&pb_dsm.ncache_pages[pb_dsm.dirty[i]].sending, 1,
                                      memory_order_release);
    for (int home = 0; home < pb_dsm.nprocs; home++) {
        free(lists[home].iov);
        free(packs[home].buf);
    }
    free(lists);
    free(packs);
    free(sent);
    if (rc != 0) {
        free(heat);
        return rc;
    }
    for (size_t i = 0; i < pb_dsm.ndirty; i++) {
        uint32_t p = pb_dsm.dirty[i];

        if (heat[i]) {
            /* stays writable, with a snapshot to find its stores; without
             * memory for one it stays dirty instead (writable, noticed
             * again at the next release), as it must stay tracked */
            pb_dsm.twins[p] = malloc(pb_dsm.page_size);
            if (pb_dsm.twins[p] != NULL) {
                memcpy(pb_dsm.twins[p], pb_dsm.sys + p * pb_dsm.page_size, pb_dsm.page_size);
                pb_dsm.hot[pb_dsm.nhot++] = p;
                heat[i] = 0;
            }
        } else {
            free(pb_dsm.twins[p]);
            pb_dsm.twins[p] = NULL;
            pb_dsm.state[p] = PB_DSM_READ;
        }
        pb_dsm.written_at[p] = r;
        note_unsent(p);
    }
    for (size_t i = 0; i < nwritten; i++)
        note_unsent(pb_dsm.dirty[pb_dsm.ndirty + i]);
    log_append(pb_dsm.dirty, pb_dsm.ndirty + nwritten);
    {
        size_t kept = 0;

        for (size_t i = 0; i < pb_dsm.ndirty; i++)
            if (heat[i])
                pb_dsm.dirty[kept++] = pb_dsm.dirty[i];
        pb_dsm.ndirty = kept;
    }
    free(heat);
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

/* under @protocol, after a flush (only home pages may stay dirty): invalidate
 * the pages of @pages (sorted) */
static int invalidate_list(uint32_t *pages, size_t n)
{
    size_t kept = 0;

    for (size_t i = 0; i < n; i++) {
        uint32_t p = pages[i];

        if (is_mine(p) || pb_dsm.direct[p] || pb_dsm.state[p] == PB_DSM_INVALID)
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
    uint32_t *scratch = pb_dsm.dirty + pb_dsm.ndirty; /* (after the home pages left dirty) */
    size_t n = 0;

    if (rc != 0)
        return rc;
    for (size_t p = 0; p < pb_dsm.npages; p++) {
        if (is_mine(p) || pb_dsm.direct[p])
            continue;
        ncache_notice(p, 0); /* (a release log wrapped: any page may have been written) */
        if (pb_dsm.state[p] != PB_DSM_INVALID)
            scratch[n++] = (uint32_t)p;
    }
    rc = invalidate_list(scratch, n);
    return rc;
}

/* Under @protocol, after a flush, with POSTBOX_DSM_SELF_INVALIDATE: an
 * acquire as self-invalidation does it (ArgoDSM), by the pages' class
 * and not by the notices since the last acquire: every cached page that
 * another process ever wrote (written_elsewhere: the notices seen so far,
 * the best a classification directory could tell) is invalidated; pages
 * no other process wrote (private to this process, or read-only since
 * their first writes were noticed) stay. */
static int self_invalidate_locked(void)
{
    uint32_t *scratch = pb_dsm.dirty + pb_dsm.ndirty; /* (after the home pages left dirty) */
    size_t n = 0;

    for (size_t p = 0; p < pb_dsm.npages; p++) {
        if (pb_dsm.written_elsewhere[p] && !is_mine(p) && !pb_dsm.direct[p]) {
            ncache_notice(p, 0); /* (the node's copy is self-invalidated too) */
            if (pb_dsm.state[p] != PB_DSM_INVALID)
                scratch[n++] = (uint32_t)p;
        }
    }
    return invalidate_list(scratch, n);
}

int pb_dsm_invalidate_notices_locked(const uint64_t *entries, size_t n, uint64_t episode)
{
    uint32_t *pages;
    size_t count = 0;
    int rc = pb_dsm_flush_locked();

    if (rc == 0 && episode != 0 && n == 0)
        pb_dsm.applied = episode;
    if (rc != 0 || (n == 0 && !pb_dsm.self_invalidate))
        return rc;
    pages = malloc((n + 1) * sizeof(*pages));
    if (pages == NULL) {
        pb_error("dsm: no memory for %zu notices", n);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t p = (uint32_t)(entries[i] >> 32);
        int32_t writer = (int32_t)(uint32_t)entries[i];

        if (p < pb_dsm.npages && writer != pb_dsm.me) {
            pages[count++] = p;
            pb_dsm.written_elsewhere[p] = 1;
            ncache_notice(p, episode);
        }
    }
    if (episode != 0)
        pb_dsm.applied = episode;
    if (pb_dsm.self_invalidate) {
        rc = self_invalidate_locked();
    } else {
        qsort(pages, count, sizeof(*pages), cmp_u32);
        rc = invalidate_list(pages, count);
    }
    free(pages);
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
        rc =
            wrapped ? pb_dsm_invalidate_all_locked() : pb_dsm_invalidate_notices_locked(list, n, 0);
    if (rc == 0)
        for (int q = 0; q < pb_dsm.nprocs; q++)
            if (q != pb_dsm.me && heads[q] > pb_dsm.log_seen[q])
                pb_dsm.log_seen[q] = heads[q];
    pthread_mutex_unlock(&pb_dsm.protocol);
    free(list);
    free(heads);
    return rc;
}
