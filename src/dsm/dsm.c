/*
 * The DSM's life (init, serve, finalize), its segments and connections,
 * the requests on control segments (rpcs), the service thread that wakes
 * waiting threads, and the small public calls.  dsm_impl.h describes the
 * segments; coherence.c the pages; diff.c the diffs a release sends
 * home; sync.c locks, barriers and the allocator; thread.c threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <postbox/job.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <time.h>
#include <unistd.h>

#include "dsm/dsm_impl.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"

pb_dsm_t pb_dsm = {
    .protocol = PTHREAD_MUTEX_INITIALIZER,
    .wait_mutex = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
    .slots_mutex = PTHREAD_MUTEX_INITIALIZER,
    .create_mutex = PTHREAD_MUTEX_INITIALIZER,
};
pb_dsm_counters_t pb_dsm_counters;

static __thread int dsm_last_error;
static __thread int dsm_slot = -1;
/* postbox_dsm_serve returned: the process's side is released already */
static int dsm_served;
/* when the DSM's lifetime in this process started (POSTBOX_DSM_STATS) */
static uint64_t dsm_started_ns;

/* the environment variable that marks the re-executed program */
#define DSM_REEXEC_ENV "POSTBOX_DSM_REEXECUTED"

/* ---- errors --------------------------------------------------------------- */

PB_EXPORT const char *postbox_dsm_strerror(int code)
{
    switch (code) {
    case POSTBOX_DSM_SUCCESS: return "success";
    case POSTBOX_DSM_ERR_NOT_INITIALIZED: return "the DSM is not initialized";
    case POSTBOX_DSM_ERR_ALREADY_INITIALIZED: return "the DSM is initialized already";
    case POSTBOX_DSM_ERR_BAD_ARGUMENT: return "bad argument";
    case POSTBOX_DSM_ERR_NO_MEMORY: return "out of shared memory";
    case POSTBOX_DSM_ERR_ADDRESS_TAKEN:
        return "the shared range's address is taken in this process";
    case POSTBOX_DSM_ERR_JOB: return "the job could not be joined or used";
    case POSTBOX_DSM_ERR_COMMUNICATION: return "a transfer to another process failed";
    case POSTBOX_DSM_ERR_BAD_LOCK: return "no such lock";
    case POSTBOX_DSM_ERR_NOT_HELD: return "the lock is not held by this thread";
    case POSTBOX_DSM_ERR_BAD_BARRIER: return "no such barrier";
    case POSTBOX_DSM_ERR_BARRIER_MISMATCH: return "another barrier or thread count is in progress";
    case POSTBOX_DSM_ERR_TOO_MANY: return "a table of the DSM is full";
    case POSTBOX_DSM_ERR_BAD_THREAD: return "no such thread to join";
    case POSTBOX_DSM_ERR_WRONG_PROCESS: return "not a call for this process";
    case POSTBOX_DSM_ERR_BAD_POINTER: return "not a block of postbox_dsm_malloc";
    default: return "unknown DSM error";
    }
}

PB_EXPORT int postbox_dsm_last_error(void)
{
    return dsm_last_error;
}

void pb_dsm_set_error(int code)
{
    dsm_last_error = code;
}

int pb_dsm_check(void)
{
    if (!pb_dsm.initialized) {
        pb_error("dsm: not initialized (call postbox_dsm_init first)");
        return POSTBOX_DSM_ERR_NOT_INITIALIZED;
    }
    return 0;
}

/* ---- test failures -------------------------------------------------------- */

/* POSTBOX_DSM_TEST_FAIL=KIND:PROCESS:EPISODE (docs/dsm.md, Errors): read
 * once the process knows its number; anything else is refused, loudly */
static void test_fail_init(void)
{
    const char *text = getenv("POSTBOX_DSM_TEST_FAIL");
    char kind[8] = "";
    unsigned long long episode = 0;
    int proc = -1, used = 0;

    pb_dsm.test_fail = 0;
    if (text == NULL || *text == '\0')
        return;
    if (sscanf(text, "%7[a-z]:%d:%llu%n", kind, &proc, &episode, &used) != 3 ||
        text[used] != '\0' || episode == 0 ||
        (strcmp(kind, "ack") != 0 && strcmp(kind, "apply") != 0 && strcmp(kind, "arrive") != 0 &&
         strcmp(kind, "lose") != 0 && strcmp(kind, "slow") != 0) ||
        (strcmp(kind, "slow") == 0 && episode > 1000000)) {
        pb_warn("dsm: ignoring POSTBOX_DSM_TEST_FAIL='%s' (KIND:PROCESS:EPISODE, KIND ack, apply, "
                "arrive or lose; or slow:PROCESS:MICROSECONDS, at most 1000000)",
                text);
        return;
    }
    if (strcmp(kind, "lose") == 0) {
        /* (whichever process sends the departure drops it) */
        pb_dsm.test_fail = PB_DSM_TEST_LOSE;
        pb_dsm.test_fail_episode = episode;
        pb_dsm.test_fail_target = proc;
        return;
    }
    if (proc != pb_dsm.me)
        return;
    if (strcmp(kind, "slow") == 0) {
        /* (not a failure: the delay in microseconds) */
        pb_dsm.test_fail = PB_DSM_TEST_SLOW;
        pb_dsm.test_slow_us = (uint32_t)episode;
        return;
    }
    pb_dsm.test_fail = strcmp(kind, "ack") == 0     ? PB_DSM_TEST_ACK
                       : strcmp(kind, "apply") == 0 ? PB_DSM_TEST_APPLY
                                                    : PB_DSM_TEST_ARRIVE;
    pb_dsm.test_fail_episode = episode;
}

int pb_dsm_test_fail(int kind, uint64_t episode)
{
    if (pb_dsm.test_fail != kind || pb_dsm.test_fail_episode != episode)
        return 0;
    pb_error("dsm: POSTBOX_DSM_TEST_FAIL: failing the %s of barrier episode %llu here",
             kind == PB_DSM_TEST_ACK      ? "acknowledgement"
             : kind == PB_DSM_TEST_APPLY  ? "application"
             : kind == PB_DSM_TEST_ARRIVE ? "arrival"
                                          : "departure toward one process",
             (unsigned long long)episode);
    return 1;
}

/* ---- thread slots ------------------------------------------------------------ */

int pb_dsm_slot(void)
{
    if (dsm_slot >= 0)
        return dsm_slot;
    pthread_mutex_lock(&pb_dsm.slots_mutex);
    for (int s = 0; s < PB_DSM_MAX_THREADS; s++) {
        if (!(pb_dsm.slots_used & (UINT64_C(1) << s))) {
            pb_dsm.slots_used |= UINT64_C(1) << s;
            dsm_slot = s;
            break;
        }
    }
    pthread_mutex_unlock(&pb_dsm.slots_mutex);
    if (dsm_slot < 0)
        pb_error("dsm: more than %d threads of one process use the DSM", PB_DSM_MAX_THREADS);
    return dsm_slot;
}

void pb_dsm_slot_release(void)
{
    if (dsm_slot < 0)
        return;
    pthread_mutex_lock(&pb_dsm.slots_mutex);
    pb_dsm.slots_used &= ~(UINT64_C(1) << dsm_slot);
    pthread_mutex_unlock(&pb_dsm.slots_mutex);
    dsm_slot = -1;
}

/* ---- rpcs ------------------------------------------------------------------------ */

/* the handler's spin word: handlers are short; a waiter yields */
static void ctl_spin_lock(pb_dsm_ctl_t *ctl)
{
    unsigned spins = 0;
    uint32_t expected = 0;

    while (!atomic_compare_exchange_weak_explicit(&ctl->spin, &expected, 1, memory_order_acquire,
                                                  memory_order_relaxed)) {
        expected = 0;
        if (++spins < 64)
            pb_cpu_relax();
        else
            sched_yield();
    }
}

static void ctl_spin_unlock(pb_dsm_ctl_t *ctl)
{
    atomic_store_explicit(&ctl->spin, 0, memory_order_release);
}

/* Run on a control segment: by its owner's RSM service side (tcp), or by
 * the caller on its own or a mapped ctl.  Touches @seg_base only. */
void pb_dsm_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                    size_t request_len, void *reply, size_t reply_max, size_t *reply_len)
{
    pb_dsm_ctl_t *ctl = seg_base;
    pb_dsm_req_t req;
    pb_dsm_reply_t out = {.status = POSTBOX_DSM_ERR_BAD_ARGUMENT};
    size_t extra = 0;

    if (request_len < sizeof(req) || seg_size < sizeof(*ctl) || ctl->magic != PB_DSM_CTL_MAGIC)
        goto out;
    memcpy(&req, request, sizeof(req));
    if ((size_t)req.npages > (request_len - sizeof(req)) / sizeof(uint32_t))
        goto out;
    ctl_spin_lock(ctl);
    pb_dsm_handle_sync(ctl, &req, (const uint32_t *)((const char *)request + sizeof(req)), &out);
    if (reply != NULL && reply_max > sizeof(out))
        extra = pb_dsm_barrier_reply_area(ctl, &req, &out, (char *)reply + sizeof(out),
                                          reply_max - sizeof(out));
    ctl_spin_unlock(ctl);
out:
    if (reply != NULL && reply_max >= sizeof(out)) {
        memcpy(reply, &out, sizeof(out));
        *reply_len = sizeof(out) + extra;
    }
}

int pb_dsm_rpc(int proc, int type, const pb_dsm_req_t *req, const uint32_t *pages,
               pb_dsm_reply_t *reply)
{
    size_t got = 0;
    int rc = pb_dsm_request(proc, type, req, pages, reply, sizeof(*reply), &got);

    if (rc == 0 && got != sizeof(*reply)) {
        pb_error("dsm: process %d answered %zu bytes, not %zu", proc, got, sizeof(*reply));
        rc = POSTBOX_DSM_ERR_COMMUNICATION;
    }
    return rc;
}

/* (dsm_impl.h) */
int pb_dsm_request(int proc, int type, const pb_dsm_req_t *req, const uint32_t *pages, void *reply,
                   size_t reply_max, size_t *got_p)
{
    size_t len = sizeof(*req) + (size_t)req->npages * sizeof(uint32_t);
    char stack_buf[sizeof(*req) + 64 * sizeof(uint32_t)];
    char *buf = len <= sizeof(stack_buf) ? stack_buf : malloc(len);
    pb_dsm_peer_t *peer = &pb_dsm.peers[proc];
    size_t got = 0;
    uint64_t start = reply != NULL ? pb_dsm_now_ns() : 0;
    int rc = 0;

    if (buf == NULL) {
        pb_error("dsm: no memory for a request of %zu bytes", len);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    memcpy(buf, req, sizeof(*req));
    if (req->npages > 0)
        memcpy(buf + sizeof(*req), pages, (size_t)req->npages * sizeof(uint32_t));
    if (proc == pb_dsm.me || peer->ctl_map != NULL) {
        pb_dsm_ctl_t *ctl = proc == pb_dsm.me ? pb_dsm.ctl : peer->ctl_map;

        pb_dsm_handler(NULL, ctl, ctl->size, buf, len, reply, reply_max, &got);
    } else {
        rc = pb_rsm_memseg_import_call(peer->ctl, buf, len, reply, reply_max, &got,
                                       reply != NULL ? 0 : PB_RSM_CALL_NO_REPLY);
        if (rc != RSM_SUCCESS) {
            pb_error("dsm: a request to process %d failed: %s", proc, rsm_strerror(rc));
            /* calls without reply to process 0 were lost with a broken
             * rail: a barrier acknowledgement among them would leave an
             * area of process 0 unfreed and the job's barriers waiting */
            if (rc == RSMERR_CONN_ABORTED && proc == 0)
                pb_dsm_barrier_lost_messages();
            rc = POSTBOX_DSM_ERR_COMMUNICATION;
        } else if (reply != NULL && got < sizeof(pb_dsm_reply_t)) {
            pb_error("dsm: process %d answered %zu bytes, not %zu or more", proc, got,
                     sizeof(pb_dsm_reply_t));
            rc = POSTBOX_DSM_ERR_COMMUNICATION;
        }
    }
    if (got_p != NULL)
        *got_p = got;
    if (proc != pb_dsm.me && (reply != NULL || rc == 0))
        pb_dsm_count_msg(type, len);
    if (proc != pb_dsm.me && reply != NULL)
        pb_dsm_count_round_trip(type, start);
    if (buf != stack_buf)
        free(buf);
    return rc;
}

int pb_dsm_post(int proc, int type, const pb_dsm_req_t *req, const uint32_t *pages)
{
    return pb_dsm_request(proc, type, req, pages, NULL, 0, NULL);
}

int pb_dsm_wake(int proc)
{
    int rc;

    if (proc == pb_dsm.me) {
        pb_dsm_wake_local();
        return 0;
    }
    rc = rsm_intr_signal_post(pb_dsm.peers[proc].ctl, 0);
    if (rc != RSM_SUCCESS) {
        pb_error("dsm: cannot signal process %d: %s", proc, rsm_strerror(rc));
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    return 0;
}

int pb_dsm_notify(int proc, int type, size_t offset, uint64_t value)
{
    pb_dsm_req_t req = {.op = PB_DSM_OP_NOTIFY_MAX, .a = offset, .b = value};
    pb_dsm_reply_t reply;
    int rc = pb_dsm_rpc(proc, type, &req, NULL, &reply);

    return rc != 0 ? rc : pb_dsm_wake(proc);
}

int pb_dsm_ctl_read(int proc, size_t offset, void *buf, size_t len)
{
    pb_dsm_peer_t *peer = &pb_dsm.peers[proc];
    int rc;

    if (proc == pb_dsm.me || peer->ctl_map != NULL) {
        const char *ctl =
            proc == pb_dsm.me ? (const char *)pb_dsm.ctl : (const char *)peer->ctl_map;

        atomic_thread_fence(memory_order_acquire);
        memcpy(buf, ctl + offset, len);
        return 0;
    }
    rc = rsm_memseg_import_get(peer->ctl, (off_t)offset, buf, len);
    if (rc != RSM_SUCCESS) {
        pb_error("dsm: reading process %d's control segment failed: %s", proc, rsm_strerror(rc));
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    return 0;
}

/* ---- waiting ------------------------------------------------------------------------ */

void pb_dsm_wake_local(void)
{
    pthread_mutex_lock(&pb_dsm.wait_mutex);
    pthread_cond_broadcast(&pb_dsm.cv);
    pthread_mutex_unlock(&pb_dsm.wait_mutex);
}

void pb_dsm_wait(int (*done)(void *arg), void *arg)
{
    pthread_mutex_lock(&pb_dsm.wait_mutex);
    while (!done(arg)) {
        struct timespec ts;

        /* the service thread broadcasts on every signal; the timeout only
         * bounds the wait should a wake-up be lost */
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&pb_dsm.cv, &pb_dsm.wait_mutex, &ts);
    }
    pthread_mutex_unlock(&pb_dsm.wait_mutex);
}

/* The service thread: sleeps on the control segment's signals; applies
 * finished barrier episodes, starts queued threads, wakes the waiters. */
static void *service_main(void *unused)
{
    struct pollfd fds[2];
    nfds_t nfds = 0;

    for (int t = 0; t < 2; t++) {
        if (pb_dsm.ctl_ex[t] != NULL &&
            rsm_memseg_get_pollfd(pb_dsm.ctl_ex[t], &fds[nfds]) == RSM_SUCCESS)
            nfds++;
    }
    while (!atomic_load(&pb_dsm.stopping)) {
        int n = 0;

        rsm_intr_signal_wait_pollfd(fds, nfds, 50, &n);
        /* (a failure is logged once where it happens, and kept for the
         * process's barrier calls: pb_dsm.barrier_error) */
        (void)pb_dsm_barrier_catch_up();
        /* (threads placed here start once the program serves: its main
         * may still be setting its globals, which a creation overwrites) */
        if (pb_dsm.me == 0 || atomic_load(&pb_dsm.serving))
            pb_dsm_thread_serve_queue();
        pb_dsm_wake_local();
    }
    for (int t = 0; t < 2; t++) {
        if (pb_dsm.ctl_ex[t] != NULL)
            rsm_memseg_release_pollfd(pb_dsm.ctl_ex[t]);
    }
    return unused;
}

/* ---- init ------------------------------------------------------------------------------ */

/* Re-execute the program with address-space randomisation off, once.
 * Returns only if it is off already (or cannot be turned off: logged). */
static void reexec_without_aslr(void)
{
    int persona = personality(0xffffffff);
    char *args[1024], *cmdline = NULL;
    size_t len = 0, cap = 0;
    int fd, nargs = 0;

    if (persona == -1 || (persona & ADDR_NO_RANDOMIZE))
        return;
    if (getenv(DSM_REEXEC_ENV) != NULL) {
        pb_warn("dsm: address randomisation is still on after re-executing; function pointers "
                "may differ between processes");
        return;
    }
    fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        goto fail;
    for (;;) {
        ssize_t n;

        if (len + 4096 > cap) {
            char *bigger = realloc(cmdline, cap + 65536);

            if (bigger == NULL)
                break;
            cmdline = bigger;
            cap += 65536;
        }
        n = read(fd, cmdline + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (cmdline == NULL || len == 0)
        goto fail;
    cmdline[len] = '\0';
    for (size_t off = 0; off < len && nargs < 1023; off += strlen(cmdline + off) + 1)
        args[nargs++] = cmdline + off;
    args[nargs] = NULL;
    if (personality((unsigned long)persona | ADDR_NO_RANDOMIZE) == -1)
        goto fail;
    setenv(DSM_REEXEC_ENV, "1", 1);
    execv("/proc/self/exe", args);
fail:
    pb_warn("dsm: cannot re-execute without address randomisation (%m); function pointers may "
            "differ between processes");
    free(cmdline);
}

/* Warn when the range has more pages than the kernel allows a process
 * mappings: their protections, mixed, could split it into that many. */
static void check_map_count(void)
{
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    unsigned long limit = 0;

    if (f == NULL)
        return;
    if (fscanf(f, "%lu", &limit) == 1 && pb_dsm.npages > limit)
        pb_warn("dsm: %zu pages of shared memory may need up to that many mappings; "
                "vm.max_map_count is %lu: a protection change may then fail",
                pb_dsm.npages, limit);
    fclose(f);
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

size_t pb_dsm_ctl_layout(pb_dsm_ctl_t *hdr, int proc)
{
    size_t off = round_up(sizeof(pb_dsm_ctl_t), 64);

    hdr->magic = PB_DSM_CTL_MAGIC;
    hdr->nprocs = (uint32_t)pb_dsm.nprocs;
    hdr->npages = (uint32_t)pb_dsm.npages;
    hdr->nlocks = (uint32_t)((POSTBOX_DSM_MAX_LOCKS + pb_dsm.nprocs - 1) / pb_dsm.nprocs);
    hdr->locks_off = off;
    off += round_up(hdr->nlocks * sizeof(pb_dsm_lock_rec_t), 64);
    hdr->log_off = off;
    off += PB_DSM_LOG_ENTRIES * sizeof(uint64_t);
    hdr->image_off = off;
    hdr->image_len = pb_dsm.image_len;
    off += round_up(pb_dsm.image_len, 64);
    hdr->readers_off = off;
    off += round_up(pb_dsm.npages, 64);
    hdr->area_size = round_up(
        (PB_DSM_AREA_HEADS + (size_t)pb_dsm.nprocs + pb_dsm.npages) * sizeof(uint64_t), 64);
    hdr->depart_off = off;
    off += 2 * hdr->area_size;
    if (proc == 0) {
        hdr->writer_off = off;
        off += round_up(pb_dsm.npages * sizeof(int32_t), 64);
        hdr->touched_off = off;
        off += round_up(pb_dsm.npages * sizeof(uint32_t), 64);
        hdr->area_off = off;
        off += 2 * hdr->area_size;
        hdr->homes_off = off;
        off += round_up(pb_dsm.npages, 64);
    }
    off = round_up(off, pb_dsm.page_size);
    hdr->size = off;
    return off;
}

static int export_both(void *mem, size_t size, rsm_memseg_export_handle_t ex[2],
                       rsm_memseg_id_t ids[2], pb_rsm_call_handler_t tcp_handler)
{
    rsmapi_controller_handle_t ctls[2] = {pb_dsm.shm_ctl, pb_dsm.tcp_ctl};

    for (int t = 0; t < 2; t++) {
        int rc;

        ids[t] = 0;
        if (ctls[t] == NULL)
            continue;
        rc = rsm_memseg_export_create(ctls[t], &ex[t], mem, size, 0);
        if (rc == RSM_SUCCESS && t == 1)
            rc = pb_rsm_memseg_export_set_handler(ex[t], tcp_handler, NULL);
        if (rc == RSM_SUCCESS)
            rc = rsm_memseg_export_publish(ex[t], &ids[t], NULL, 0);
        if (rc != RSM_SUCCESS) {
            pb_error("dsm: cannot export %zu bytes on %s: %s", size, t == 0 ? "shm" : "tcp",
                     rsm_strerror(rc));
            return POSTBOX_DSM_ERR_COMMUNICATION;
        }
    }
    return 0;
}

/* Reserve the shared range at the job's address: process 0 chooses it. */
static int reserve_range(uintptr_t *addr_p)
{
    char value[64];
    void *want = NULL, *got;

    if (pb_dsm.me == 0) {
        got = mmap((void *)PB_DSM_BASE_HINT, pb_dsm.size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        if (got == MAP_FAILED)
            got = mmap(NULL, pb_dsm.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (got == MAP_FAILED) {
            pb_error("dsm: cannot reserve %zu bytes of address space: %m", pb_dsm.size);
            return POSTBOX_DSM_ERR_NO_MEMORY;
        }
        snprintf(value, sizeof(value), "%lx", (unsigned long)(uintptr_t)got);
        if (postbox_job_kvs_put("dsm-base", value) != 0)
            return POSTBOX_DSM_ERR_JOB;
        *addr_p = (uintptr_t)got;
        return 0;
    }
    if (postbox_job_kvs_get("dsm-base", value, sizeof(value)) != 0) {
        pb_error("dsm: process 0 published no shared address");
        return POSTBOX_DSM_ERR_JOB;
    }
    want = (void *)(uintptr_t)strtoul(value, NULL, 16);
    got = mmap(want, pb_dsm.size, PROT_NONE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED || got != want) {
        pb_error("dsm: the shared range %p + %zu is taken in process %d: %m", want, pb_dsm.size,
                 pb_dsm.me);
        if (got != MAP_FAILED)
            munmap(got, pb_dsm.size);
        return POSTBOX_DSM_ERR_ADDRESS_TAKEN;
    }
    *addr_p = (uintptr_t)got;
    return 0;
}

static int publish_ids(const rsm_memseg_id_t data_ids[2], const rsm_memseg_id_t ctl_ids[2])
{
    char key[64], value[128];

    snprintf(key, sizeof(key), "dsm-seg-%d", pb_dsm.me);
    snprintf(value, sizeof(value), "%x,%x,%x,%x", data_ids[0], data_ids[1], ctl_ids[0], ctl_ids[1]);
    return postbox_job_kvs_put(key, value) == 0 ? 0 : POSTBOX_DSM_ERR_JOB;
}

/* Map local peer @q's copy of the range (the data segment @peer imports),
 * then take every access away from that mapping: it is only the source
 * the application view's direct pages are mapped from (coherence.c,
 * map_direct), each then opened as its state says.  When the mapping
 * cannot be made, the pages @q homes are cached as a remote home's are. */
static void map_peer_data(int q, pb_dsm_peer_t *peer)
{
    void *addr = NULL;
    int rc = rsm_memseg_import_map(peer->data, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, pb_dsm.size);

    if (rc != RSM_SUCCESS) {
        pb_warn("dsm: cannot map process %d's pages (%s): they are fetched and diffed instead", q,
                rsm_strerror(rc));
        return;
    }
    if (mprotect(addr, pb_dsm.size, PROT_NONE) != 0) {
        pb_warn("dsm: cannot protect the mapping of process %d's pages (%m): they are fetched "
                "and diffed instead",
                q);
        rsm_memseg_import_unmap(peer->data);
        return;
    }
    peer->data_map = addr;
}

static int connect_peer(int q)
{
    pb_dsm_peer_t *peer = &pb_dsm.peers[q];
    unsigned ids[4];
    char key[64], value[128];
    rsmapi_controller_handle_t ctl;
    rsm_memseg_id_t data_id, ctl_id;
    int rc;

    snprintf(key, sizeof(key), "dsm-seg-%d", q);
    if (postbox_job_kvs_get(key, value, sizeof(value)) != 0 ||
        sscanf(value, "%x,%x,%x,%x", &ids[0], &ids[1], &ids[2], &ids[3]) != 4) {
        pb_error("dsm: process %d published no segments", q);
        return POSTBOX_DSM_ERR_JOB;
    }
    peer->node = postbox_job_node(q);
    peer->local = peer->node == (uint32_t)pb_dsm.node;
    ctl = peer->local ? pb_dsm.shm_ctl : pb_dsm.tcp_ctl;
    data_id = peer->local ? ids[0] : ids[1];
    ctl_id = peer->local ? ids[2] : ids[3];
    rc = rsm_memseg_import_connect(ctl, peer->node, data_id, RSM_PERM_RDWR, &peer->data);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_set_mode(peer->data, RSM_BARRIER_MODE_EXPLICIT);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_init_barrier(peer->data, RSM_BAR_DEFAULT, &peer->data_bar);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_connect(ctl, peer->node, ctl_id, RSM_PERM_RDWR, &peer->ctl);
    /* (requests without reply return once sent, not after a barrier: the
     * ctl import takes no puts, and a broken connection fails the next
     * request with reply or get) */
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_set_mode(peer->ctl, RSM_BARRIER_MODE_EXPLICIT);
    if (rc == RSM_SUCCESS && peer->local) {
        void *addr = NULL;
        static pb_dsm_ctl_t layout; /* (large: not on the stack) */
        size_t size = pb_dsm_ctl_layout(&layout, q);

        rc = rsm_memseg_import_map(peer->ctl, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, size);
        peer->ctl_map = addr;
    }
    if (rc == RSM_SUCCESS && peer->local && pb_config_get_long("POSTBOX_DSM_NODE_SHARE") > 0)
        map_peer_data(q, peer);
    if (rc != RSM_SUCCESS) {
        pb_error("dsm: cannot connect to process %d (node %u): %s", q, peer->node,
                 rsm_strerror(rc));
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    return 0;
}

static void service_stop(void);

static void teardown(void)
{
    service_stop();
    pb_dsm_coherence_fini();
    for (int q = 0; pb_dsm.peers != NULL && q < pb_dsm.nprocs; q++) {
        pb_dsm_peer_t *peer = &pb_dsm.peers[q];

        if (peer->ctl_map != NULL)
            rsm_memseg_import_unmap(peer->ctl);
        if (peer->data_map != NULL)
            rsm_memseg_import_unmap(peer->data);
        if (peer->ctl != NULL)
            rsm_memseg_import_disconnect(peer->ctl);
        if (peer->data != NULL) {
            rsm_memseg_import_destroy_barrier(&peer->data_bar);
            rsm_memseg_import_disconnect(peer->data);
        }
    }
    free(pb_dsm.peers);
    pb_dsm.peers = NULL;
    if (pb_dsm.ncache_src != NULL)
        munmap(pb_dsm.ncache_src, pb_dsm.size);
    if (pb_dsm.ncache_im != NULL) {
        rsm_memseg_import_unmap(pb_dsm.ncache_im);
        rsm_memseg_import_disconnect(pb_dsm.ncache_im);
    }
    if (pb_dsm.ncache_ex != NULL) {
        rsm_memseg_export_unpublish(pb_dsm.ncache_ex);
        rsm_memseg_export_destroy(pb_dsm.ncache_ex);
        munmap(pb_dsm.ncache, pb_dsm.ncache_size);
    }
    pb_dsm.ncache = pb_dsm.ncache_src = pb_dsm.ncache_twin = NULL;
    pb_dsm.ncache_pages = NULL;
    pb_dsm.ncache_im = NULL;
    pb_dsm.ncache_ex = NULL;
    for (int t = 0; t < 2; t++) {
        if (pb_dsm.data_ex[t] != NULL) {
            rsm_memseg_export_unpublish(pb_dsm.data_ex[t]);
            rsm_memseg_export_destroy(pb_dsm.data_ex[t]);
            pb_dsm.data_ex[t] = NULL;
        }
        if (pb_dsm.ctl_ex[t] != NULL) {
            rsm_memseg_export_unpublish(pb_dsm.ctl_ex[t]);
            rsm_memseg_export_destroy(pb_dsm.ctl_ex[t]);
            pb_dsm.ctl_ex[t] = NULL;
        }
    }
    if (pb_dsm.base != NULL)
        munmap(pb_dsm.base, pb_dsm.size);
    if (pb_dsm.sys != NULL)
        munmap(pb_dsm.sys, pb_dsm.size);
    if (pb_dsm.ctl != NULL)
        munmap(pb_dsm.ctl, pb_dsm.ctl_size);
    pb_dsm.base = pb_dsm.sys = NULL;
    pb_dsm.ctl = NULL;
    if (pb_dsm.tcp_ctl != NULL)
        rsm_release_controller(pb_dsm.tcp_ctl);
    if (pb_dsm.shm_ctl != NULL)
        rsm_release_controller(pb_dsm.shm_ctl);
    pb_dsm.tcp_ctl = pb_dsm.shm_ctl = NULL;
    free(pb_dsm.image_ranges);
    pb_dsm.image_ranges = NULL;
}

/* The system view.  With processes of this node to share it with, private
 * memory that the shm export replaces by its memory file (copying it, so
 * committing the whole range); alone on its node, a memory file of its
 * own, whose pages exist once touched. */
static void *map_system_view(void)
{
    void *mem;
    int fd;

    if (pb_dsm.shm_ctl != NULL)
        return mmap(NULL, pb_dsm.size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    fd = memfd_create("postbox-dsm", MFD_CLOEXEC);
    if (fd < 0)
        return MAP_FAILED;
    mem = ftruncate(fd, (off_t)pb_dsm.size) == 0
              ? mmap(NULL, pb_dsm.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
              : MAP_FAILED;
    close(fd);
    return mem;
}

/* The node cache's bytes: the range's pages, their node twins (as many
 * bytes), then a pb_dsm_ncache_page_t per page, to whole pages. */
static size_t ncache_bytes(void)
{
    size_t meta = pb_dsm.npages * sizeof(pb_dsm_ncache_page_t);

    return 2 * pb_dsm.size + (meta + pb_dsm.page_size - 1) / pb_dsm.page_size * pb_dsm.page_size;
}

/* Does this process use a node cache: pages homed on other nodes, and
 * another process of the job on this node to share them with?  Sets
 * *@first_p to whether it is the node's lowest process (which makes it). */
static int ncache_wanted(int *first_p)
{
    int ranks[PB_DSM_MAX_PROCS];
    int n = postbox_job_local_ranks(ranks, PB_DSM_MAX_PROCS);

    *first_p = n > 0 && ranks[0] == pb_dsm.me;
    return pb_dsm.nnodes > 1 && n > 1 && pb_config_get_long("POSTBOX_DSM_NODE_SHARE") > 0;
}

/* @mem (ncache_bytes, read-write, shared): the node cache; its pages
 * mapped once more, PROT_NONE, as the source of the application view's
 * mappings.  @return 0 or -1 (logged). */
static int ncache_attach(char *mem)
{
    void *src = mremap(mem, 0, pb_dsm.size, MREMAP_MAYMOVE);

    if (src == MAP_FAILED || mprotect(src, pb_dsm.size, PROT_NONE) != 0) {
        pb_warn("dsm: cannot map the node's cache a second time (%m): each process caches its "
                "own copies");
        if (src != MAP_FAILED)
            munmap(src, pb_dsm.size);
        return -1;
    }
    pb_dsm.ncache = mem;
    pb_dsm.ncache_src = src;
    pb_dsm.ncache_twin = mem + pb_dsm.size;
    pb_dsm.ncache_pages = (pb_dsm_ncache_page_t *)(mem + 2 * pb_dsm.size);
    return 0;
}

/* The node's lowest process: make the node cache (zeros: every count 0,
 * every page the zeros of the start, valid) and publish it on shm under
 * "dsm-ncache-<node>".  Without it, the node's processes cache their own
 * copies. */
static void ncache_create(void)
{
    size_t size = ncache_bytes();
    char key[64], value[32];
    rsm_memseg_id_t id = 0;
    char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int rc;

    if (mem == MAP_FAILED) {
        pb_warn("dsm: no memory for the node's cache (%m): each process caches its own copies");
        return;
    }
    rc = rsm_memseg_export_create(pb_dsm.shm_ctl, &pb_dsm.ncache_ex, mem, size, 0);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_export_publish(pb_dsm.ncache_ex, &id, NULL, 0);
    if (rc != RSM_SUCCESS || ncache_attach(mem) != 0) {
        if (rc != RSM_SUCCESS)
            pb_warn("dsm: cannot export the node's cache (%s): each process caches its own "
                    "copies",
                    rsm_strerror(rc));
        if (pb_dsm.ncache_ex != NULL)
            rsm_memseg_export_destroy(pb_dsm.ncache_ex);
        pb_dsm.ncache_ex = NULL;
        munmap(mem, size);
        return;
    }
    pb_dsm.ncache_size = size;
    snprintf(key, sizeof(key), "dsm-ncache-%d", pb_dsm.node);
    snprintf(value, sizeof(value), "%x", id);
    if (postbox_job_kvs_put(key, value) != 0)
        pb_warn("dsm: cannot publish the node's cache: the node's other processes cache their "
                "own copies");
}

/* Another process of the node: map the node cache its lowest process
 * published (after the fence that published it). */
static void ncache_connect(void)
{
    char key[64], value[POSTBOX_JOB_KVS_VALUE_MAX];
    unsigned id;
    void *addr = NULL;
    size_t size = ncache_bytes();
    int rc;

    snprintf(key, sizeof(key), "dsm-ncache-%d", pb_dsm.node);
    if (postbox_job_kvs_get(key, value, sizeof(value)) != 0 || sscanf(value, "%x", &id) != 1)
        return; /* (its maker said why) */
    rc = rsm_memseg_import_connect(pb_dsm.shm_ctl, (rsm_node_id_t)pb_dsm.node, id, RSM_PERM_RDWR,
                                   &pb_dsm.ncache_im);
    if (rc == RSM_SUCCESS)
        rc = rsm_memseg_import_map(pb_dsm.ncache_im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, size);
    if (rc != RSM_SUCCESS || ncache_attach(addr) != 0) {
        if (rc != RSM_SUCCESS)
            pb_warn("dsm: cannot map the node's cache (%s): this process caches its own copies",
                    rsm_strerror(rc));
        if (addr != NULL)
            rsm_memseg_import_unmap(pb_dsm.ncache_im);
        if (pb_dsm.ncache_im != NULL)
            rsm_memseg_import_disconnect(pb_dsm.ncache_im);
        pb_dsm.ncache_im = NULL;
        return;
    }
    pb_dsm.ncache_size = size;
}

static int init_memory(void)
{
    rsm_memseg_id_t data_ids[2], ctl_ids[2];
    static pb_dsm_ctl_t hdr; /* (large: not on the stack) */
    uintptr_t addr = 0;
    int rc, first = 0;

    pb_dsm.ctl_size = pb_dsm_ctl_layout(&hdr, pb_dsm.me);
    pb_dsm.ctl = mmap(NULL, pb_dsm.ctl_size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    pb_dsm.sys = map_system_view();
    if (pb_dsm.ctl == MAP_FAILED || pb_dsm.sys == MAP_FAILED) {
        pb_error("dsm: cannot map %zu bytes: %m", pb_dsm.size + pb_dsm.ctl_size);
        if (pb_dsm.ctl == MAP_FAILED)
            pb_dsm.ctl = NULL;
        if (pb_dsm.sys == MAP_FAILED)
            pb_dsm.sys = NULL;
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    memcpy(pb_dsm.ctl, &hdr, offsetof(pb_dsm_ctl_t, spin));
    /* barrier 0 exists from the start: every process may use it at once */
    if (pb_dsm.me == 0)
        pb_dsm.ctl->next_barrier = 1;
    if (pb_dsm.me == 0)
        for (size_t p = 0; p < pb_dsm.npages; p++)
            ((int32_t *)((char *)pb_dsm.ctl + hdr.writer_off))[p] = PB_DSM_WRITER_NONE;
    rc = export_both(pb_dsm.sys, pb_dsm.size, pb_dsm.data_ex, data_ids, pb_dsm_diff_handler);
    if (rc == 0)
        rc = export_both(pb_dsm.ctl, pb_dsm.ctl_size, pb_dsm.ctl_ex, ctl_ids, pb_dsm_handler);
    if (rc == 0)
        rc = publish_ids(data_ids, ctl_ids);
    if (rc == 0 && ncache_wanted(&first) && first)
        ncache_create();
    if (rc == 0 && pb_dsm.me == 0)
        rc = reserve_range(&addr);
    /* (collective: every process reaches it, failed or not) */
    if (postbox_job_fence() != 0 && rc == 0)
        rc = POSTBOX_DSM_ERR_JOB;
    if (rc == 0 && pb_dsm.me != 0)
        rc = reserve_range(&addr);
    if (rc != 0)
        return rc;
    if (ncache_wanted(&first) && !first)
        ncache_connect();
    /* the application view: a second mapping of the exported pages */
    if (mremap(pb_dsm.sys, 0, pb_dsm.size, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)addr) ==
        MAP_FAILED) {
        pb_error("dsm: cannot map the shared range at %p: %m", (void *)addr);
        munmap((void *)addr, pb_dsm.size);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    pb_dsm.base = (char *)addr;
    return 0;
}

static int init_job(void)
{
    if (postbox_job_init() != 0)
        return POSTBOX_DSM_ERR_JOB;
    pb_dsm.me = postbox_job_rank();
    pb_dsm.nprocs = postbox_job_size();
    pb_dsm.node = (int)postbox_job_node(pb_dsm.me);
    pb_dsm.nnodes = postbox_job_node_count();
    if (pb_dsm.me < 0 || pb_dsm.nprocs < 1 || pb_dsm.nnodes < 1)
        return POSTBOX_DSM_ERR_JOB;
    if (pb_dsm.nprocs > PB_DSM_MAX_PROCS) {
        pb_error("dsm: %d processes: the DSM takes at most %d", pb_dsm.nprocs, PB_DSM_MAX_PROCS);
        return POSTBOX_DSM_ERR_TOO_MANY;
    }
    /* (a process alone on its node exports nothing on shm) */
    if ((pb_dsm.nnodes == 1 || postbox_job_local_ranks(NULL, 0) > 1) &&
        rsm_get_controller("shm", &pb_dsm.shm_ctl) != RSM_SUCCESS) {
        pb_error("dsm: no shm controller");
        pb_dsm.shm_ctl = NULL;
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    if (pb_dsm.nnodes > 1 &&
        (pb_config_network_controller() == NULL ||
         rsm_get_controller(pb_config_network_controller(), &pb_dsm.tcp_ctl) != RSM_SUCCESS)) {
        pb_error("dsm: no tcp controller to reach the job's other nodes");
        pb_dsm.tcp_ctl = NULL;
        return POSTBOX_DSM_ERR_COMMUNICATION;
    }
    return 0;
}

PB_EXPORT int postbox_dsm_init(size_t global_size)
{
    long page = sysconf(_SC_PAGESIZE);
    int rc;

    if (pb_dsm.initialized) {
        pb_error("dsm: postbox_dsm_init called twice");
        return POSTBOX_DSM_ERR_ALREADY_INITIALIZED;
    }
    if (global_size == 0 || global_size > ((size_t)1 << 40)) {
        pb_error("dsm: a shared range of %zu bytes (1 byte to 1 TiB)", global_size);
        return POSTBOX_DSM_ERR_BAD_ARGUMENT;
    }
    /* every process commits the whole range (its shm export copies it) */
    if (global_size > (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)page) {
        pb_error("dsm: a shared range of %zu bytes, more than this machine's memory", global_size);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    reexec_without_aslr();
    pb_dsm.page_size = (size_t)page;
    pb_dsm.size = round_up(global_size, (size_t)page * PB_DSM_HOME_BLOCK);
    pb_dsm.npages = pb_dsm.size / (size_t)page;
    if (pb_dsm.npages > UINT32_MAX / 2) {
        pb_error("dsm: a shared range of %zu bytes is too large", global_size);
        return POSTBOX_DSM_ERR_BAD_ARGUMENT;
    }
    check_map_count();
    rc = init_job();
    if (rc == 0) {
        test_fail_init();
        atomic_store(&pb_dsm.barrier_error, 0);
        atomic_store(&pb_dsm.barrier_error_episode, 0);
        rc = pb_dsm_image_init();
    }
    if (rc == 0) {
        pb_dsm.peers = calloc((size_t)pb_dsm.nprocs, sizeof(*pb_dsm.peers));
        if (pb_dsm.peers == NULL)
            rc = POSTBOX_DSM_ERR_NO_MEMORY;
    }
    if (rc == 0)
        rc = init_memory();
    for (int q = 0; rc == 0 && q < pb_dsm.nprocs; q++)
        if (q != pb_dsm.me)
            rc = connect_peer(q);
    if (rc == 0)
        rc = pb_dsm_coherence_init();
    if (rc == 0) {
        atomic_store(&pb_dsm.stopping, 0);
        if (pthread_create(&pb_dsm.service, NULL, service_main, NULL) != 0) {
            pb_error("dsm: cannot start the service thread");
            rc = POSTBOX_DSM_ERR_NO_MEMORY;
        } else {
            pb_dsm.service_started = 1;
        }
    }
    if (rc != 0) {
        teardown();
        return rc;
    }
    pb_dsm.initialized = 1;
    dsm_started_ns = pb_dsm_now_ns();
    pb_dsm_slot();
    /* everyone connected before anyone asks anything */
    if (postbox_job_fence() != 0) {
        pb_dsm.initialized = 0;
        teardown();
        return POSTBOX_DSM_ERR_JOB;
    }
    return 0;
}

/* wait until process 0 says stop */
static int stop_seen(void *unused)
{
    return atomic_load_explicit(&pb_dsm.ctl->stop, memory_order_acquire) != 0;
}

/* With POSTBOX_DSM_STATS=1: this process's counters, its lifetime and its
 * round trips as one line on stderr ("postbox-dsm-stats: key=value ..."),
 * which the bench (python/postbox/dsmbench.py) reads: output the user
 * asked for, not a log message. */
static void print_stats(void)
{
    static const char *const types[POSTBOX_DSM_MSG_TYPES] = {"page",    "diff",  "lock",
                                                             "barrier", "alloc", "thread"};
    pb_dsm_counters_t *c = &pb_dsm_counters;
    char line[2048];
    int n;

    if (pb_config_get_long("POSTBOX_DSM_STATS") <= 0)
        return;
    n = snprintf(line, sizeof(line),
                 "postbox-dsm-stats: process=%d processes=%d node=%d nodes=%d "
                 "lifetime_us=%llu read_faults=%llu write_faults=%llu page_fetches=%llu "
                 "diffs=%llu diff_runs=%llu diff_bytes=%llu invalidations=%llu "
                 "lock_acquires=%llu barriers=%llu home_pages=%llu hot_compares=%llu "
                 "direct_pages=%llu node_pages=%llu node_writes=%llu",
                 pb_dsm.me, pb_dsm.nprocs, pb_dsm.node, pb_dsm.nnodes,
                 (unsigned long long)((pb_dsm_now_ns() - dsm_started_ns) / 1000),
                 (unsigned long long)atomic_load(&c->read_faults),
                 (unsigned long long)atomic_load(&c->write_faults),
                 (unsigned long long)atomic_load(&c->page_fetches),
                 (unsigned long long)atomic_load(&c->diffs),
                 (unsigned long long)atomic_load(&c->diff_runs),
                 (unsigned long long)atomic_load(&c->diff_bytes),
                 (unsigned long long)atomic_load(&c->invalidations),
                 (unsigned long long)atomic_load(&c->lock_acquires),
                 (unsigned long long)atomic_load(&c->barriers),
                 (unsigned long long)atomic_load(&c->home_pages),
                 (unsigned long long)atomic_load(&c->hot_compares),
                 (unsigned long long)atomic_load(&c->direct_pages),
                 (unsigned long long)atomic_load(&c->node_pages),
                 (unsigned long long)atomic_load(&c->node_writes));
    for (int t = 0; t < POSTBOX_DSM_MSG_TYPES && n > 0 && (size_t)n < sizeof(line); t++)
        n += snprintf(line + n, sizeof(line) - (size_t)n,
                      " messages_%s=%llu bytes_%s=%llu round_trips_%s=%llu round_trip_ns_%s=%llu",
                      types[t], (unsigned long long)atomic_load(&c->messages[t]), types[t],
                      (unsigned long long)atomic_load(&c->bytes[t]), types[t],
                      (unsigned long long)atomic_load(&c->round_trips[t]), types[t],
                      (unsigned long long)atomic_load(&c->round_trip_ns[t]));
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

static void service_stop(void)
{
    if (pb_dsm.service_started) {
        atomic_store(&pb_dsm.stopping, 1);
        pthread_join(pb_dsm.service, NULL);
        pb_dsm.service_started = 0;
    }
}

static int dsm_end(void)
{
    int rc = 0;

    print_stats();
    /* (before the fence: no service thread is then in the middle of a
     * request to a process that tears its segments down) */
    service_stop();
    if (postbox_job_fence() != 0)
        rc = POSTBOX_DSM_ERR_JOB;
    pb_dsm.initialized = 0;
    teardown();
    /* nobody touches another's segments past the second fence */
    if (postbox_job_fence() != 0)
        rc = POSTBOX_DSM_ERR_JOB;
    return rc;
}

PB_EXPORT int postbox_dsm_serve(void)
{
    int rc = pb_dsm_check();

    if (rc != 0)
        return rc;
    if (pb_dsm.me == 0) {
        pb_error("dsm: process 0 runs the program; postbox_dsm_serve is for the others");
        return POSTBOX_DSM_ERR_WRONG_PROCESS;
    }
    /* (a thread in serve arrives at no barrier: it counts for none) */
    pb_dsm_slot_release();
    atomic_store(&pb_dsm.serving, 1);
    /* (the creations queued before now: the service thread takes the later) */
    pb_dsm_thread_serve_queue();
    pb_dsm_wait(stop_seen, NULL);
    dsm_served = 1;
    return dsm_end();
}

PB_EXPORT int postbox_dsm_finalize(void)
{
    int rc;

    if (!pb_dsm.initialized)
        return dsm_served ? 0 : pb_dsm_check();
    if (pb_dsm.me != 0)
        return postbox_dsm_serve();
    rc = pb_dsm_release();
    for (int q = 1; q < pb_dsm.nprocs; q++) {
        int err = pb_dsm_notify(q, POSTBOX_DSM_MSG_THREAD, offsetof(pb_dsm_ctl_t, stop), 1);

        if (rc == 0)
            rc = err;
    }
    {
        int end = dsm_end();

        return rc != 0 ? rc : end;
    }
}

PB_EXPORT int postbox_dsm_process(void)
{
    int rc = pb_dsm_check();

    return rc != 0 ? rc : pb_dsm.me;
}

PB_EXPORT int postbox_dsm_process_count(void)
{
    int rc = pb_dsm_check();

    return rc != 0 ? rc : pb_dsm.nprocs;
}

PB_EXPORT int postbox_dsm_node(void)
{
    int rc = pb_dsm_check();

    return rc != 0 ? rc : pb_dsm.node;
}

PB_EXPORT int postbox_dsm_node_count(void)
{
    int rc = pb_dsm_check();

    return rc != 0 ? rc : pb_dsm.nnodes;
}

PB_EXPORT int postbox_dsm_stats(postbox_dsm_stats_t *s)
{
    pb_dsm_counters_t *c = &pb_dsm_counters;
    int rc = pb_dsm_check();

    if (rc != 0)
        return rc;
    if (s == NULL)
        return POSTBOX_DSM_ERR_BAD_ARGUMENT;
    s->read_faults = atomic_load(&c->read_faults);
    s->write_faults = atomic_load(&c->write_faults);
    s->page_fetches = atomic_load(&c->page_fetches);
    s->diffs = atomic_load(&c->diffs);
    s->diff_runs = atomic_load(&c->diff_runs);
    s->diff_bytes = atomic_load(&c->diff_bytes);
    s->invalidations = atomic_load(&c->invalidations);
    s->lock_acquires = atomic_load(&c->lock_acquires);
    s->barriers = atomic_load(&c->barriers);
    s->home_pages = atomic_load(&c->home_pages);
    s->node_writes = atomic_load(&c->node_writes);
    for (int t = 0; t < POSTBOX_DSM_MSG_TYPES; t++) {
        s->messages[t] = atomic_load(&c->messages[t]);
        s->bytes[t] = atomic_load(&c->bytes[t]);
        s->round_trips[t] = atomic_load(&c->round_trips[t]);
    }
    return 0;
}
