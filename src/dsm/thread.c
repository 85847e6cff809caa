/*
 * Threads placed on the job's processes, and the executable's data image
 * shipped with each.
 *
 * A creation is a release of the creator; the creator stages its image in
 * its control segment and queues the creation at the target process
 * (an rpc), which its service thread takes: it copies the image (an RSM
 * get) into its own executable's data, acknowledges, invalidates every
 * cached page others released (an acquire) and starts the thread.  The thread's end is a
 * release, then its return value goes to the creator's join table.
 */
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "dsm/dsm_impl.h"
#include "util/log.h"

/* ---- the data image ------------------------------------------------------------- */

typedef struct {
    struct pb_dsm_range *ranges;
    size_t n, cap;
    struct pb_dsm_range skip[64];
    size_t nskip;
} image_scan_t;

static int range_push(image_scan_t *scan, uintptr_t start, uintptr_t end)
{
    if (start >= end)
        return 0;
    if (scan->n == scan->cap) {
        size_t cap = scan->cap ? 2 * scan->cap : 8;
        struct pb_dsm_range *bigger = realloc(scan->ranges, cap * sizeof(*bigger));

        if (bigger == NULL)
            return -1;
        scan->ranges = bigger;
        scan->cap = cap;
    }
    scan->ranges[scan->n++] = (struct pb_dsm_range){start, end};
    return 0;
}

/* [start, end) less every skipped range */
static int range_add(image_scan_t *scan, uintptr_t start, uintptr_t end)
{
    for (size_t i = 0; i < scan->nskip; i++) {
        struct pb_dsm_range *s = &scan->skip[i];

        if (s->start < end && start < s->end) {
            if (range_add(scan, start, s->start < start ? start : s->start) != 0)
                return -1;
            return range_add(scan, s->end > end ? end : s->end, end);
        }
    }
    return range_push(scan, start, end);
}

static void skip_add(image_scan_t *scan, uintptr_t start, uintptr_t end)
{
    if (scan->nskip < PB_ARRAY_SIZE(scan->skip) && start < end)
        scan->skip[scan->nskip++] = (struct pb_dsm_range){start, end};
}

/* the objects the executable holds by copy relocation (stdout, environ, ...):
 * the library's, different in each process */
static void skip_copy_relocs(image_scan_t *scan, uintptr_t base, const ElfW(Dyn) * dyn)
{
    const ElfW(Rela) *rela = NULL;
    const ElfW(Sym) *symtab = NULL;
    size_t relasz = 0, relaent = sizeof(ElfW(Rela));

    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = (uintptr_t)dyn->d_un.d_ptr;

        /* the loader relocated some pointers in place, not always all */
        if (dyn->d_tag == DT_RELA)
            rela = (const ElfW(Rela) *)(v < base ? v + base : v);
        else if (dyn->d_tag == DT_RELASZ)
            relasz = dyn->d_un.d_val;
        else if (dyn->d_tag == DT_RELAENT)
            relaent = dyn->d_un.d_val;
        else if (dyn->d_tag == DT_SYMTAB)
            symtab = (const ElfW(Sym) *)(v < base ? v + base : v);
    }
    if (rela == NULL || symtab == NULL || relaent == 0)
        return;
    for (size_t i = 0; i < relasz / relaent; i++) {
        const ElfW(Rela) *r = (const ElfW(Rela) *)((const char *)rela + i * relaent);

        if (ELF64_R_TYPE(r->r_info) == R_X86_64_COPY) {
            uintptr_t at = base + r->r_offset;

            skip_add(scan, at, at + symtab[ELF64_R_SYM(r->r_info)].st_size);
        }
    }
}

static int scan_executable(struct dl_phdr_info *info, size_t size, void *arg)
{
    image_scan_t *scan = arg;
    uintptr_t base = info->dlpi_addr;

    /* the first object is the executable */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_GNU_RELRO)
            skip_add(scan, base + ph->p_vaddr, base + ph->p_vaddr + ph->p_memsz);
        else if (ph->p_type == PT_DYNAMIC)
            skip_copy_relocs(scan, base, (const ElfW(Dyn) *)(base + ph->p_vaddr));
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) &&
            range_add(scan, base + ph->p_vaddr, base + ph->p_vaddr + ph->p_memsz) != 0)
            return -1;
    }
    return 1;
}

int pb_dsm_image_init(void)
{
    image_scan_t scan = {0};

    if (dl_iterate_phdr(scan_executable, &scan) < 0) {
        free(scan.ranges);
        pb_error("dsm: no memory to describe the executable's data");
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    free(pb_dsm.image_ranges);
    pb_dsm.image_ranges = scan.ranges;
    pb_dsm.nimage_ranges = scan.n;
    pb_dsm.image_len = 0;
    for (size_t i = 0; i < scan.n; i++)
        pb_dsm.image_len += scan.ranges[i].end - scan.ranges[i].start;
    return 0;
}

/* Copy the executable's data byte by byte, unseen by AddressSanitizer:
 * the image holds the redzones between its globals too (volatile, so the
 * compiler does not make the loop a memcpy call, which ASan checks). */
__attribute__((no_sanitize_address)) static void image_copy(void *to, const void *from, size_t len)
{
    volatile char *d = to;
    const volatile char *s = from;

    for (size_t i = 0; i < len; i++)
        d[i] = s[i];
}

static void image_stage(void)
{
    char *to = (char *)pb_dsm.ctl + pb_dsm.ctl->image_off;

    for (size_t i = 0; i < pb_dsm.nimage_ranges; i++) {
        size_t len = pb_dsm.image_ranges[i].end - pb_dsm.image_ranges[i].start;

        image_copy(to, (const void *)pb_dsm.image_ranges[i].start, len);
        to += len;
    }
}

static int image_take(int creator)
{
    char *image = malloc(pb_dsm.image_len ? pb_dsm.image_len : 1);
    const char *from = image;
    int rc;

    if (image == NULL) {
        pb_error("dsm: no memory for a data image of %zu bytes", pb_dsm.image_len);
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    rc = pb_dsm_ctl_read(creator, pb_dsm.ctl->image_off, image, pb_dsm.image_len);
    pb_dsm_count_msg(POSTBOX_DSM_MSG_THREAD, pb_dsm.image_len);
    for (size_t i = 0; rc == 0 && i < pb_dsm.nimage_ranges; i++) {
        size_t len = pb_dsm.image_ranges[i].end - pb_dsm.image_ranges[i].start;

        image_copy((void *)pb_dsm.image_ranges[i].start, from, len);
        from += len;
    }
    free(image);
    return rc;
}

/* ---- threads -------------------------------------------------------------------------- */

typedef struct {
    void *(*fn)(void *);
    void *arg;
    int creator;
    uint32_t join_index;
} thread_start_t;

static void *thread_main(void *p)
{
    thread_start_t start = *(thread_start_t *)p;
    pb_dsm_req_t req = {.op = PB_DSM_OP_THREAD_DONE, .a = start.join_index};
    pb_dsm_reply_t reply;
    void *ret;
    int rc;

    free(p);
    ret = start.fn(start.arg);
    /* the end is a release; the creator's join then acquires */
    rc = pb_dsm_release();
    req.b = (uint64_t)(uintptr_t)ret;
    if (rc == 0)
        rc = pb_dsm_rpc(start.creator, POSTBOX_DSM_MSG_THREAD, &req, NULL, &reply);
    if (rc == 0 && start.creator != pb_dsm.me)
        rc = rsm_intr_signal_post(pb_dsm.peers[start.creator].ctl, 0) == RSM_SUCCESS
                 ? 0
                 : POSTBOX_DSM_ERR_COMMUNICATION;
    else if (rc == 0)
        pb_dsm_wake_local();
    if (rc != 0)
        pb_error("dsm: cannot tell process %d that its thread %u ended", start.creator,
                 start.join_index);
    pb_dsm_slot_release();
    return NULL;
}

static int thread_start(void *(*fn)(void *), void *arg, int creator, uint32_t join_index)
{
    thread_start_t *start = malloc(sizeof(*start));
    pthread_attr_t attr;
    pthread_t tid;
    int err;

    if (start == NULL)
        return POSTBOX_DSM_ERR_NO_MEMORY;
    *start = (thread_start_t){fn, arg, creator, join_index};
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    err = pthread_create(&tid, &attr, thread_main, start);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        free(start);
        pb_error("dsm: cannot start a thread: %s", strerror(err));
        return POSTBOX_DSM_ERR_NO_MEMORY;
    }
    return 0;
}

/* The service thread: start the threads queued at this process. */
void pb_dsm_thread_serve_queue(void)
{
    for (;;) {
        pb_dsm_req_t req = {.op = PB_DSM_OP_THREAD_DEQUEUE};
        pb_dsm_reply_t reply;
        int creator, rc;
        uint32_t index;

        if (pb_dsm_rpc(pb_dsm.me, POSTBOX_DSM_MSG_THREAD, &req, NULL, &reply) != 0 ||
            reply.status != 1)
            return;
        creator = (int)(reply.c >> 32);
        index = (uint32_t)reply.c;
        rc = image_take(creator);
        if (rc == 0)
            rc = pb_dsm_notify(creator, POSTBOX_DSM_MSG_THREAD, offsetof(pb_dsm_ctl_t, image_taken),
                               (uint64_t)index + 1);
        if (rc == 0)
            rc = pb_dsm_acquire_logs();
        if (rc == 0)
            rc = thread_start((void *(*)(void *))(uintptr_t)reply.a, (void *)(uintptr_t)reply.b,
                              creator, index);
        if (rc != 0) {
            pb_error("dsm: cannot start the thread process %d placed here", creator);
            abort();
        }
    }
}

static int image_taken(void *arg)
{
    return atomic_load_explicit(&pb_dsm.ctl->image_taken, memory_order_acquire) >= *(uint64_t *)arg;
}

PB_EXPORT int postbox_dsm_thread_create(postbox_dsm_thread_t *thread, void *(*fn)(void *),
                                        void *arg)
{
    pb_dsm_req_t req;
    pb_dsm_reply_t reply;
    uint64_t taken;
    uint32_t index;
    int rc = pb_dsm_check(), target;

    if (rc != 0)
        return rc;
    if (thread == NULL || fn == NULL) {
        pb_error("dsm: postbox_dsm_thread_create with a NULL %s", thread == NULL ? "thread" : "fn");
        return POSTBOX_DSM_ERR_BAD_ARGUMENT;
    }
    pthread_mutex_lock(&pb_dsm.create_mutex);
    if (pb_dsm.created == PB_DSM_MAX_JOINS) {
        pthread_mutex_unlock(&pb_dsm.create_mutex);
        pb_error("dsm: a process creates at most %d threads", PB_DSM_MAX_JOINS);
        return POSTBOX_DSM_ERR_TOO_MANY;
    }
    index = pb_dsm.created;
    target = (int)((pb_dsm.me + index + 1) % (uint32_t)pb_dsm.nprocs);
    atomic_store(&pb_dsm.ctl->joins[index].done, 0);
    rc = pb_dsm_release();
    if (rc == 0 && target == pb_dsm.me) {
        rc = thread_start(fn, arg, pb_dsm.me, index);
    } else if (rc == 0) {
        image_stage();
        req = (pb_dsm_req_t){.op = PB_DSM_OP_THREAD_QUEUE,
                             .a = (uint64_t)(uintptr_t)fn,
                             .b = (uint64_t)(uintptr_t)arg,
                             .c = (uint64_t)pb_dsm.me,
                             .d = index};
        rc = pb_dsm_rpc(target, POSTBOX_DSM_MSG_THREAD, &req, NULL, &reply);
        if (rc == 0 && reply.status < 0)
            rc = (int)reply.status;
        if (rc == 0 && rsm_intr_signal_post(pb_dsm.peers[target].ctl, 0) != RSM_SUCCESS)
            rc = POSTBOX_DSM_ERR_COMMUNICATION;
        /* the image area is ours again once the target copied it */
        taken = (uint64_t)index + 1;
        if (rc == 0)
            pb_dsm_wait(image_taken, &taken);
    }
    if (rc == 0) {
        pb_dsm.created++;
        thread->process = target;
        thread->index = (int32_t)index;
    }
    pthread_mutex_unlock(&pb_dsm.create_mutex);
    if (rc != 0)
        pb_error("dsm: cannot create a thread on process %d: %s", target, postbox_dsm_strerror(rc));
    return rc;
}

static int thread_done(void *arg)
{
    return atomic_load_explicit(&pb_dsm.ctl->joins[*(uint32_t *)arg].done, memory_order_acquire) ==
           1;
}

PB_EXPORT int postbox_dsm_thread_join(postbox_dsm_thread_t thread, void **ret)
{
    static uint8_t joined[PB_DSM_MAX_JOINS];
    uint32_t index = (uint32_t)thread.index;
    int rc = pb_dsm_check();

    if (rc != 0)
        return rc;
    pthread_mutex_lock(&pb_dsm.create_mutex);
    if (thread.index < 0 || index >= pb_dsm.created || thread.process < 0 ||
        thread.process >= pb_dsm.nprocs || joined[index]) {
        pthread_mutex_unlock(&pb_dsm.create_mutex);
        pb_error("dsm: join of thread %d of process %d: not a thread this process created and "
                 "has not joined",
                 thread.index, thread.process);
        return POSTBOX_DSM_ERR_BAD_THREAD;
    }
    joined[index] = 1;
    pthread_mutex_unlock(&pb_dsm.create_mutex);
    atomic_fetch_add(&pb_dsm_joining, 1);
    pb_dsm_wait(thread_done, &index);
    atomic_fetch_sub(&pb_dsm_joining, 1);
    if (ret != NULL)
        *ret = (void *)(uintptr_t)pb_dsm.ctl->joins[index].ret;
    return pb_dsm_acquire_logs();
}
