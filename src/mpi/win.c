/*
 * Windows (win.h): their creation in every flavour, MPI_Win_free, the
 * queries (group, attributes, info, name, shared memory), dynamic memory,
 * error handlers, and the handle conversions.
 *
 * Creation is collective over the window's communicator, in three
 * allgathers: what each rank brings (node, pid, size, displacement unit,
 * base address); the id of each node's segment, made by the node's first
 * rank once it knows the sizes; the id of each rank's control block on the
 * tcp controller, exported only when some peer may reach it so (a peer on
 * another node, or one of the node that cannot map the memory of an
 * MPI_Win_create or dynamic window and may find the kernel refusing CMA).
 */
#include "mpi/win.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi/engine/channel.h"
#include "mpi/engine/handle.h"
#include "mpi/info.h"
#include "util/config.h"
#include "util/log.h"

/* what each rank brings to a new window (the first allgather) */
typedef struct {
    int32_t node; /* RSM node id */
    uint32_t pid;
    int64_t size; /* bytes of window memory */
    int64_t disp_unit;
    uint64_t base; /* MPI_Win_create: its memory's address */
} win_rank_info_t;

/* the most bytes one rank's window may have: far above any memory, and so
 * that a node's sum of them cannot overflow */
#define WIN_SIZE_MAX ((uint64_t)1 << 46)

/* the ids of the second and third allgathers */
typedef struct {
    uint32_t node_seg; /* the node's segment (from its first rank), or 0 */
    uint32_t ctl;      /* the rank's control block on tcp, or 0 */
} win_rank_ids_t;

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);

    return p > 0 ? (size_t)p : 4096;
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* ---- handles ------------------------------------------------------------------ */

pb_win_t *pb_mpi_win(MPI_Win handle)
{
    if (handle == MPI_WIN_NULL || !pb_eng_handle_valid(PB_ENG_HANDLE_WIN, handle))
        return NULL;
    return (pb_win_t *)handle;
}

pb_win_t *pb_win_recent;

int pb_mpi_win_check_slow(MPI_Win handle, const char *func, pb_win_t **win_p)
{
    if (!pb_mpi_active())
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "called before MPI_Init or after MPI_Finalize");
    *win_p = pb_mpi_win(handle);
    if (*win_p != NULL) {
        pb_win_recent = *win_p;
        return MPI_SUCCESS;
    }
    if (handle == MPI_WIN_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_WIN, func, "the window is MPI_WIN_NULL");
    return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_WIN, func,
                        "%p is not a window (freed, or never created)", (void *)handle);
}

int pb_mpi_win_raise(pb_win_t *win, int code, const char *func, const char *fmt, ...)
{
    char message[512];
    va_list ap;

    if (code == MPI_SUCCESS)
        return code;
    if (win->errhandler == MPI_ERRORS_RETURN)
        return code;
    if (win->errhandler != MPI_ERRORS_ARE_FATAL && win->errhandler != MPI_ERRORS_ABORT) {
        MPI_Win handle = win->handle;

        pb_mpi_errhandler_call_win(win->errhandler, &handle, &code);
        return code;
    }
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    pb_mpi_fatal(code, func, "window %s: %s", win->name[0] != '\0' ? win->name : "(unnamed)",
                 message);
    return code;
}

PB_EXPORT int PMPI_Win_toint(MPI_Win win)
{
    if ((uintptr_t)win < PB_ENG_HANDLE_INT_BASE)
        return (int)(uintptr_t)win;
    int value = pb_eng_handle_toint(PB_ENG_HANDLE_WIN, win);

    if (value < 0) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_WIN, "MPI_Win_toint", "%p is not a window",
                     (void *)win);
        return (int)(uintptr_t)MPI_WIN_NULL;
    }
    return value;
}
PB_MPI_WEAK_ALIAS(MPI_Win_toint, PMPI_Win_toint);

PB_EXPORT MPI_Win PMPI_Win_fromint(int win)
{
    void *obj;

    if (win < PB_ENG_HANDLE_INT_BASE)
        return MPI_WIN_NULL;
    obj = pb_eng_handle_fromint(PB_ENG_HANDLE_WIN, win);
    return obj != NULL ? (MPI_Win)obj : MPI_WIN_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Win_fromint, PMPI_Win_fromint);

/* ---- the node segment and the tcp export ---------------------------------------- */

/* Where rank @r's control block and window memory lie in its node
 * segment: the control blocks of the node's ranks first, in rank order,
 * then their memories (MPI_Win_allocate, _allocate_shared). */
typedef struct {
    size_t ctl_size;
    size_t *ctl_off;  /* [size]: offset of each local rank's control block */
    size_t *data_off; /* [size]: of its memory (allocate flavours) */
    size_t total;
} win_layout_t;

static int layout_make(pb_win_t *win, const win_rank_info_t *infos, int noncontig, win_layout_t *l)
{
    int my_node = infos[win->rank].node;
    size_t off = 0, align = noncontig ? page_size() : 64;
    int allocates = win->flavor == MPI_WIN_FLAVOR_ALLOCATE || win->flavor == MPI_WIN_FLAVOR_SHARED;

    /* whole pages: each is exported on tcp on its own */
    l->ctl_size = round_up(pb_win_ctl_size(win->size), page_size());
    l->ctl_off = calloc((size_t)win->size, sizeof(size_t));
    l->data_off = calloc((size_t)win->size, sizeof(size_t));
    if (l->ctl_off == NULL || l->data_off == NULL)
        return MPI_ERR_NO_MEM;
    for (int r = 0; r < win->size; r++) {
        if (infos[r].node == my_node) {
            l->ctl_off[r] = off;
            off += l->ctl_size;
        }
    }
    off = round_up(off, align);
    for (int r = 0; r < win->size; r++) {
        if (infos[r].node == my_node && allocates) {
            l->data_off[r] = off;
            /* _allocate_shared's memories are contiguous unless asked
             * otherwise: rank r + 1's follows rank r's last byte */
            off += win->flavor == MPI_WIN_FLAVOR_SHARED && !noncontig
                       ? (size_t)infos[r].size
                       : round_up((size_t)infos[r].size, align);
        }
    }
    l->total = round_up(off > 0 ? off : 1, page_size());
    return MPI_SUCCESS;
}

static void layout_free(win_layout_t *l)
{
    free(l->ctl_off);
    free(l->data_off);
}

/* The node's first rank: make and export the node segment.  @return its
 * id, or 0 (logged). */
static uint32_t node_seg_export(pb_win_t *win, size_t total)
{
    rsm_memseg_id_t id = 0;
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (mem == MAP_FAILED) {
        pb_error("window: cannot map %zu bytes for the node's window segment: %m", total);
        return 0;
    }
    if (rsm_memseg_export_create(pb_eng_channel.shm_ctl, &win->node_ex, mem, total, 0) !=
            RSM_SUCCESS ||
        rsm_memseg_export_publish(win->node_ex, &id, NULL, 0) != RSM_SUCCESS) {
        pb_error("window: cannot export the node's window segment (%zu bytes)", total);
        if (win->node_ex != NULL)
            rsm_memseg_export_destroy(win->node_ex);
        win->node_ex = NULL;
        munmap(mem, total);
        return 0;
    }
    win->node_seg = mem;
    win->node_seg_size = total;
    return id;
}

static int node_seg_import(pb_win_t *win, uint32_t id, size_t total)
{
    void *addr = NULL;

    if (rsm_memseg_import_connect(pb_eng_channel.shm_ctl, pb_eng_channel.node, id, RSM_PERM_RDWR,
                                  &win->node_im) != RSM_SUCCESS) {
        win->node_im = NULL;
        return MPI_ERR_OTHER;
    }
    if (rsm_memseg_import_map(win->node_im, &addr, RSM_MAP_NONE, RSM_PERM_RDWR, 0, total) !=
        RSM_SUCCESS) {
        rsm_memseg_import_disconnect(win->node_im);
        win->node_im = NULL;
        return MPI_ERR_OTHER;
    }
    win->node_seg = addr;
    win->node_seg_size = total;
    return MPI_SUCCESS;
}

static void node_seg_release(pb_win_t *win)
{
    if (win->node_im != NULL) {
        rsm_memseg_import_unmap(win->node_im);
        rsm_memseg_import_disconnect(win->node_im);
        win->node_im = NULL;
    } else if (win->node_ex != NULL) {
        rsm_memseg_export_unpublish(win->node_ex);
        rsm_memseg_export_destroy(win->node_ex);
        munmap(win->node_seg, win->node_seg_size);
        win->node_ex = NULL;
    }
    win->node_seg = NULL;
}

/* Export this rank's control block on tcp, with the call handler.
 * @return MPI_SUCCESS or MPI_ERR_OTHER (logged). */
static int ctl_export(pb_win_t *win, size_t ctl_size)
{
    rsm_memseg_id_t id = 0;

    win->tcp_ctl = pb_eng_channel.tcp_ctl;
    if (win->tcp_ctl == NULL &&
        (pb_config_network_controller() == NULL ||
         rsm_get_controller(pb_config_network_controller(), &win->tcp_ctl) != RSM_SUCCESS)) {
        win->tcp_ctl = NULL;
        pb_error("window: no tcp controller for peers that cannot map this rank's memory");
        return MPI_ERR_OTHER;
    }
    if (rsm_memseg_export_create(win->tcp_ctl, &win->ctl_ex, win->ctl, ctl_size, 0) !=
            RSM_SUCCESS ||
        pb_rsm_memseg_export_set_handler(win->ctl_ex, pb_win_call_handler, win) != RSM_SUCCESS ||
        rsm_memseg_export_publish(win->ctl_ex, &id, NULL, 0) != RSM_SUCCESS) {
        pb_error("window: cannot export the control block on tcp");
        if (win->ctl_ex != NULL)
            rsm_memseg_export_destroy(win->ctl_ex);
        win->ctl_ex = NULL;
        return MPI_ERR_OTHER;
    }
    win->ctl_id = id;
    return MPI_SUCCESS;
}

static void ctl_unexport(pb_win_t *win)
{
    if (win->ctl_ex != NULL) {
        rsm_memseg_export_unpublish(win->ctl_ex);
        rsm_memseg_export_destroy(win->ctl_ex);
        win->ctl_ex = NULL;
    }
    if (win->tcp_ctl != NULL && win->tcp_ctl != pb_eng_channel.tcp_ctl)
        rsm_release_controller(win->tcp_ctl);
    win->tcp_ctl = NULL;
}

/* ---- creation and release ------------------------------------------------------- */

static void win_release(pb_win_t *win)
{
    if (pb_win_recent == win)
        pb_win_recent = NULL;
    if (win->targets != NULL) {
        for (int r = 0; r < win->size; r++) {
            pb_win_target_t *t = &win->targets[r];

            pb_win_batch_free(t);
            if (t->im == NULL)
                continue;
            if (t->bar_open)
                rsm_memseg_import_destroy_barrier(&t->bar);
            rsm_memseg_import_disconnect(t->im);
        }
    }
    ctl_unexport(win);
    node_seg_release(win);
    if (win->flavor == MPI_WIN_FLAVOR_ALLOCATE || win->flavor == MPI_WIN_FLAVOR_SHARED)
        win->base = NULL;
    free(win->targets);
    free(win->start_ranks);
    free(win->post_ranks);
    free(win->post_seen);
    if (win->info != MPI_INFO_NULL)
        PMPI_Info_free(&win->info);
    if (win->comm != NULL) {
        MPI_Comm dup = win->comm->handle;

        PMPI_Comm_free(&dup);
    }
    pb_eng_handle_delete(PB_ENG_HANDLE_WIN, win);
}

/* The info keys a window keeps, with the value a window has without them. */
static const struct {
    const char *key, *fallback;
} win_hints[] = {
    {"no_locks", "false"},
    {"accumulate_ordering", "rar,raw,war,waw"},
    {"accumulate_ops", "same_op_no_op"},
    {"same_size", "false"},
    {"same_disp_unit", "false"},
    {"alloc_shared_noncontig", "false"},
    {"mpi_accumulate_granularity", "0"},
};

/* The hints of @info (checked) that Postbox knows, each set to its value
 * in @info or to what it is without it, into win->info; accumulate_ops
 * only when @creating the window (see win.h: hw_atomics). */
static int hints_set(pb_win_t *win, MPI_Info info, int creating)
{
    if (win->info == MPI_INFO_NULL && PMPI_Info_create(&win->info) != MPI_SUCCESS)
        return MPI_ERR_NO_MEM;
    for (size_t i = 0; i < sizeof(win_hints) / sizeof(win_hints[0]); i++) {
        const char *v = pb_mpi_info_value(info, win_hints[i].key);
        char old[MPI_MAX_INFO_VAL + 1];
        int flag = 0;

        if (!creating && strcmp(win_hints[i].key, "accumulate_ops") == 0)
            continue;

        if (v == NULL) {
            /* a key not given keeps the value it has */
            PMPI_Info_get_string(win->info, win_hints[i].key, &(int){sizeof(old)}, old, &flag);
            if (flag)
                continue;
            v = win_hints[i].fallback;
        }
        if (PMPI_Info_set(win->info, win_hints[i].key, v) != MPI_SUCCESS)
            return MPI_ERR_NO_MEM;
    }
    return MPI_SUCCESS;
}

static int hint_true(MPI_Info info, const char *key)
{
    const char *v = pb_mpi_info_value(info, key);

    return v != NULL && strcmp(v, "true") == 0;
}

/* Make a window of @flavor over @comm (collective): this rank brings
 * @size bytes (at @base for MPI_Win_create) with @disp_unit.  On success
 * *@win_p is the window and win->base its memory. */
static int win_make(const char *func, pb_comm_t *c, int flavor, void *base, MPI_Aint size,
                    MPI_Aint disp_unit, MPI_Info info, pb_win_t **win_p)
{
    pb_win_t *win;
    win_rank_info_t mine, *infos = NULL;
    win_rank_ids_t ids = {0}, *all_ids = NULL;
    win_layout_t layout = {0};
    MPI_Comm dup;
    int rc, ok, leader = -1, needs_tcp = 0, nodes_spanned = 0, local_ranks = 0;

    rc = pb_mpi_comm_check_intra(c->handle, func, c);
    if (rc != MPI_SUCCESS)
        return rc;
    if (size < 0)
        return pb_mpi_raise(c->handle, MPI_ERR_SIZE, func, "size is negative (%ld)", (long)size);
    if (disp_unit <= 0)
        return pb_mpi_raise(c->handle, MPI_ERR_DISP, func, "disp_unit must be positive, not %ld",
                            (long)disp_unit);
    rc = pb_mpi_info_check(c->handle, info, 1, func);
    if (rc != MPI_SUCCESS)
        return rc;
    if (flavor == MPI_WIN_FLAVOR_CREATE && size > 0 && base == NULL)
        return pb_mpi_raise(c->handle, MPI_ERR_BASE, func, "base is NULL for %ld bytes",
                            (long)size);
    win = pb_eng_handle_new(PB_ENG_HANDLE_WIN, sizeof(*win));
    if (win == NULL)
        return pb_mpi_raise(c->handle, MPI_ERR_NO_MEM, func, "out of memory for the window");
    win->handle = (MPI_Win)win;
    win->flavor = flavor;
    win->model = MPI_WIN_UNIFIED;
    win->errhandler = MPI_ERRORS_ARE_FATAL;
    win->info = MPI_INFO_NULL;
    win->bytes = (size_t)size;
    win->disp_unit = disp_unit;
    win->base = flavor == MPI_WIN_FLAVOR_CREATE ? base : NULL;
    rc = PMPI_Comm_dup(c->handle, &dup);
    if (rc != MPI_SUCCESS) {
        pb_eng_handle_delete(PB_ENG_HANDLE_WIN, win);
        return rc;
    }
    win->comm = pb_mpi_comm(dup);
    win->rank = win->comm->rank;
    win->size = win->comm->size;
    rc = hints_set(win, info, 1);
    if (rc == MPI_SUCCESS &&
        (flavor == MPI_WIN_FLAVOR_ALLOCATE || flavor == MPI_WIN_FLAVOR_SHARED)) {
        const char *ops = pb_mpi_info_value(win->info, "accumulate_ops");

        win->hw_atomics =
            ops != NULL && (strcmp(ops, "same_op") == 0 || strcmp(ops, "same_op_no_op") == 0);
    }
    infos = calloc((size_t)win->size, sizeof(*infos));
    all_ids = calloc((size_t)win->size, sizeof(*all_ids));
    win->targets = calloc((size_t)win->size, sizeof(*win->targets));
    win->post_seen = calloc(4 * (size_t)win->size, sizeof(uint64_t));
    /* every rank takes every collective step below, or none does: one out
     * of memory here says so first */
    ok = rc == MPI_SUCCESS && infos != NULL && all_ids != NULL && win->targets != NULL &&
         win->post_seen != NULL;
    rc = PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, dup);
    if (rc == MPI_SUCCESS && !ok)
        rc =
            pb_mpi_raise(c->handle, MPI_ERR_NO_MEM, func, "a rank is out of memory for the window");
    if (rc != MPI_SUCCESS)
        goto fail_local;
    win->complete_sent = win->post_seen + win->size;
    win->posted = win->complete_sent + win->size;
    win->complete_seen = win->posted + win->size;

    mine = (win_rank_info_t){.node = (int32_t)pb_eng_channel.node,
                             .pid = (uint32_t)getpid(),
                             .size = size,
                             .disp_unit = disp_unit,
                             .base = (uint64_t)(uintptr_t)base};
    rc = PMPI_Allgather(&mine, sizeof(mine), MPI_BYTE, infos, sizeof(mine), MPI_BYTE, dup);
    if (rc != MPI_SUCCESS)
        goto fail_local;
    for (int r = 0; r < win->size; r++) {
        /* every rank sees the same table: all fail alike */
        if ((uint64_t)infos[r].size > WIN_SIZE_MAX) {
            rc = pb_mpi_raise(c->handle, MPI_ERR_SIZE, func,
                              "rank %d asks for %lld bytes (at most %llu)", r,
                              (long long)infos[r].size, (unsigned long long)WIN_SIZE_MAX);
            goto fail_local;
        }
    }
    for (int r = 0; r < win->size; r++) {
        int seen = 0;

        for (int q = 0; q < r; q++)
            seen |= infos[q].node == infos[r].node;
        nodes_spanned += !seen;
        if (infos[r].node == mine.node && leader < 0)
            leader = r;
        local_ranks += infos[r].node == mine.node;
    }
    if (flavor == MPI_WIN_FLAVOR_SHARED && nodes_spanned > 1) {
        /* every rank sees the same table: all fail alike */
        rc = pb_mpi_raise(c->handle, MPI_ERR_RMA_SHARED, func,
                          "the communicator spans %d nodes; a shared window needs one",
                          nodes_spanned);
        goto fail_local;
    }
    /* a rank that fails from here on still takes the collective steps, and
     * says so in the last allgather */
    rc = layout_make(win, infos, hint_true(info, "alloc_shared_noncontig"), &layout);

    /* the node segment: the first rank makes it, the others map it */
    if (rc == MPI_SUCCESS && win->rank == leader)
        ids.node_seg = node_seg_export(win, layout.total);
    if (PMPI_Allgather(&ids, sizeof(ids), MPI_BYTE, all_ids, sizeof(ids), MPI_BYTE, dup) !=
        MPI_SUCCESS) {
        rc = MPI_ERR_OTHER;
        goto fail_local;
    }
    if (rc == MPI_SUCCESS && all_ids[leader].node_seg == 0)
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS && win->rank != leader)
        rc = node_seg_import(win, all_ids[leader].node_seg, layout.total);
    if (rc == MPI_SUCCESS) {
        win->ctl = (pb_win_ctl_t *)(win->node_seg + layout.ctl_off[win->rank]);
        if (flavor == MPI_WIN_FLAVOR_ALLOCATE || flavor == MPI_WIN_FLAVOR_SHARED)
            win->base = win->node_seg + layout.data_off[win->rank];
        /* reachable through tcp by peers of other nodes, and by peers of
         * this node when its memory is the program's */
        needs_tcp = nodes_spanned > 1 ||
                    ((flavor == MPI_WIN_FLAVOR_CREATE || flavor == MPI_WIN_FLAVOR_DYNAMIC) &&
                     local_ranks > 1);
        if (needs_tcp)
            rc = ctl_export(win, layout.ctl_size);
    }
    /* everyone learns whether everyone succeeded, and the tcp ids */
    ids.ctl = rc == MPI_SUCCESS ? (needs_tcp ? win->ctl_id : 0) : UINT32_MAX;
    if (PMPI_Allgather(&ids, sizeof(ids), MPI_BYTE, all_ids, sizeof(ids), MPI_BYTE, dup) !=
        MPI_SUCCESS)
        rc = MPI_ERR_OTHER;
    for (int r = 0; r < win->size && rc == MPI_SUCCESS; r++) {
        if (all_ids[r].ctl == UINT32_MAX)
            rc = MPI_ERR_OTHER;
    }
    if (rc != MPI_SUCCESS) {
        rc = pb_mpi_raise(c->handle, rc, func,
                          "a rank could not set up its part of the window (see the log)");
        goto fail_local;
    }
    for (int r = 0; r < win->size; r++) {
        pb_win_target_t *t = &win->targets[r];

        t->node = (uint32_t)infos[r].node;
        t->size = (uint64_t)infos[r].size;
        t->disp_unit = infos[r].disp_unit;
        t->ctl_id = all_ids[r].ctl;
        if (infos[r].node != mine.node) {
            t->mode = PB_WIN_TCP;
            continue;
        }
        t->ctl = (pb_win_ctl_t *)(win->node_seg + layout.ctl_off[r]);
        if (flavor == MPI_WIN_FLAVOR_ALLOCATE || flavor == MPI_WIN_FLAVOR_SHARED) {
            t->mode = PB_WIN_DIRECT;
            t->base = win->node_seg + layout.data_off[r];
        } else if (r == win->rank) {
            t->mode = PB_WIN_DIRECT;
            t->base = base;
        } else {
            t->mode = PB_WIN_CMA;
            t->pid = infos[r].pid;
            t->addr = infos[r].base;
        }
    }
    layout_free(&layout);
    free(infos);
    free(all_ids);
    /* nobody touches a control block before every rank has it */
    rc = PMPI_Barrier(dup);
    *win_p = win;
    return rc;

fail_local:
    layout_free(&layout);
    free(infos);
    free(all_ids);
    /* the others may still read this node's segment: wait for them */
    PMPI_Barrier(dup);
    win_release(win);
    return rc;
}

void pb_mpi_win_finalize(void)
{
    for (pb_win_t *w; (w = pb_eng_handle_any(PB_ENG_HANDLE_WIN)) != NULL;)
        win_release(w);
    pb_win_recent = NULL;
}

int pb_mpi_win_create_impl(const char *func, void *base, MPI_Aint size, MPI_Aint disp_unit,
                           MPI_Info info, MPI_Comm comm, MPI_Win *win, pb_comm_t *c)
{
    pb_win_t *w;
    int rc;

    if (win == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "win is NULL");
    rc = win_make(func, c, MPI_WIN_FLAVOR_CREATE, base, size, disp_unit, info, &w);
    if (rc == MPI_SUCCESS)
        *win = w->handle;
    return rc;
}

/* MPI_Win_allocate and _allocate_shared: the memory is in the node segment. */
static int win_allocate(const char *func, int flavor, MPI_Aint size, MPI_Aint disp_unit,
                        MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win, pb_comm_t *c)
{
    pb_win_t *w;
    int rc;

    if (win == NULL || baseptr == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "%s is NULL", win == NULL ? "win" : "baseptr");
    rc = win_make(func, c, flavor, NULL, size, disp_unit, info, &w);
    if (rc != MPI_SUCCESS)
        return rc;
    *(void **)baseptr = w->base;
    *win = w->handle;
    return MPI_SUCCESS;
}

int pb_mpi_win_allocate_impl(const char *func, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                             MPI_Comm comm, void *baseptr, MPI_Win *win, pb_comm_t *c)
{
    return win_allocate(func, MPI_WIN_FLAVOR_ALLOCATE, size, disp_unit, info, comm, baseptr, win,
                        c);
}

int pb_mpi_win_allocate_shared_impl(const char *func, MPI_Aint size, MPI_Aint disp_unit,
                                    MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win,
                                    pb_comm_t *c)
{
    return win_allocate(func, MPI_WIN_FLAVOR_SHARED, size, disp_unit, info, comm, baseptr, win, c);
}

int pb_mpi_win_create_dynamic_impl(const char *func, MPI_Info info, MPI_Comm comm, MPI_Win *win,
                                   pb_comm_t *c)
{
    pb_win_t *w;
    int rc;

    if (win == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "win is NULL");
    rc = win_make(func, c, MPI_WIN_FLAVOR_DYNAMIC, NULL, 0, 1, info, &w);
    if (rc == MPI_SUCCESS)
        *win = w->handle;
    return rc;
}

/* Free *@win (collective) and set it to MPI_WIN_NULL.  @return
 * MPI_SUCCESS; MPI_ERR_WIN, MPI_ERR_ARG, MPI_ERR_RMA_SYNC (an epoch is
 * open). */
PB_EXPORT int PMPI_Win_free(MPI_Win *win)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Win_free";
    pb_win_t *w;
    int rc;

    if (win == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "win is NULL");
    rc = pb_mpi_win_check(*win, func, &w);
    if (rc != MPI_SUCCESS)
        return rc;
    if (w->epoch == PB_WIN_EPOCH_START || w->epoch == PB_WIN_EPOCH_LOCK ||
        w->epoch == PB_WIN_EPOCH_LOCK_ALL || w->exposure)
        return pb_mpi_win_raise(
            w, MPI_ERR_RMA_SYNC, func, "an access or exposure epoch is still open (%s)",
            w->exposure                      ? "MPI_Win_post without MPI_Win_wait"
            : w->epoch == PB_WIN_EPOCH_START ? "MPI_Win_start without MPI_Win_complete"
                                             : "a lock not released");
    /* a delete function that fails leaves the window as it is, before
     * anything collective */
    rc = pb_mpi_win_attr_delete_all(w);
    if (rc != MPI_SUCCESS)
        return pb_mpi_win_raise(w, rc, func, "an attribute's delete function failed");
    /* every rank's operations toward this one are complete (the last
     * synchronization completed them), and nobody starts another */
    rc = PMPI_Barrier(w->comm->handle);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int r = 0; r < w->size; r++) {
        pb_win_target_t *t = &w->targets[r];

        if (t->im != NULL) {
            if (t->bar_open)
                rsm_memseg_import_destroy_barrier(&t->bar);
            rsm_memseg_import_disconnect(t->im);
            t->im = NULL;
            t->bar_open = 0;
        }
    }
    ctl_unexport(w);
    /* the node's first rank destroys the segment after the others unmap */
    if (w->node_im != NULL)
        node_seg_release(w);
    rc = PMPI_Barrier(w->comm->handle);
    win_release(w);
    *win = MPI_WIN_NULL;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Win_free, PMPI_Win_free);

/* ---- queries --------------------------------------------------------------------- */

int pb_mpi_win_get_group_impl(const char *func, MPI_Win win, MPI_Group *group, pb_win_t *w)
{
    if (group == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "group is NULL");
    return PMPI_Comm_group(w->comm->handle, group);
}

/* MPI_Win_shared_query and its _c form: the size, displacement unit and
 * local address of @rank's memory (MPI_PROC_NULL: the lowest rank with
 * memory). */
static int shared_query(const char *func, MPI_Win win, int rank, MPI_Aint *size,
                        MPI_Aint *disp_unit, void *baseptr)
{
    pb_win_t *w;
    int rc = pb_mpi_win_check(win, func, &w);
    int r = rank;

    if (rc != MPI_SUCCESS)
        return rc;
    if (size == NULL || disp_unit == NULL || baseptr == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "an output argument is NULL");
    if (w->flavor != MPI_WIN_FLAVOR_SHARED && w->flavor != MPI_WIN_FLAVOR_ALLOCATE)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_FLAVOR, func,
                                "the window's memory is not in shared memory (flavor %d)",
                                w->flavor);
    if (rank != MPI_PROC_NULL && (rank < 0 || rank >= w->size))
        return pb_mpi_win_raise(w, MPI_ERR_RANK, func, "rank %d is not in the window (0..%d)", rank,
                                w->size - 1);
    if (rank == MPI_PROC_NULL) {
        r = -1;
        for (int q = 0; q < w->size && r < 0; q++) {
            if (w->targets[q].size > 0 && w->targets[q].mode == PB_WIN_DIRECT)
                r = q;
        }
    }
    if (r < 0 || w->targets[r].mode != PB_WIN_DIRECT) {
        *size = 0;
        *disp_unit = 0;
        *(void **)baseptr = NULL;
        return MPI_SUCCESS;
    }
    *size = (MPI_Aint)w->targets[r].size;
    *disp_unit = (MPI_Aint)w->targets[r].disp_unit;
    *(void **)baseptr = w->targets[r].base;
    return MPI_SUCCESS;
}

/* Store in *@size, *@disp_unit and *@baseptr the size, displacement unit
 * and local address of @rank's memory in @win, a window of
 * MPI_Win_allocate_shared (or of MPI_Win_allocate, for a rank of this
 * node); zeros and NULL for a rank whose memory this process cannot map.
 * @return MPI_SUCCESS; MPI_ERR_WIN, MPI_ERR_RANK, MPI_ERR_ARG,
 * MPI_ERR_RMA_FLAVOR. */
PB_EXPORT int PMPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                                    void *baseptr)
{
    PB_MPI_THREAD_GUARD;
    MPI_Aint unit = 0;
    int rc;

    if (disp_unit == NULL)
        return shared_query("MPI_Win_shared_query", win, rank, size, NULL, baseptr);
    rc = shared_query("MPI_Win_shared_query", win, rank, size, &unit, baseptr);
    if (rc == MPI_SUCCESS)
        *disp_unit = (int)unit;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Win_shared_query, PMPI_Win_shared_query);

/* MPI_Win_shared_query with an MPI_Aint displacement unit.  Errors as
 * MPI_Win_shared_query. */
PB_EXPORT int PMPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                                      void *baseptr)
{
    PB_MPI_THREAD_GUARD;

    return shared_query("MPI_Win_shared_query_c", win, rank, size, disp_unit, baseptr);
}
PB_MPI_WEAK_ALIAS(MPI_Win_shared_query_c, PMPI_Win_shared_query_c);

int pb_win_regions_contain(pb_win_ctl_t *ctl, uint64_t addr, uint64_t len)
{
    for (int i = 0; i < PB_WIN_REGIONS_MAX; i++) {
        uint64_t base = atomic_load_explicit(&ctl->regions[i].base, memory_order_acquire);
        uint64_t size = atomic_load_explicit(&ctl->regions[i].size, memory_order_relaxed);

        if (base != 0 && addr >= base && addr - base <= size && len <= size - (addr - base))
            return 1;
    }
    return 0;
}

int pb_mpi_win_attach_impl(const char *func, MPI_Win win, void *base, MPI_Aint size, pb_win_t *w)
{
    pb_win_ctl_t *ctl = w->ctl;
    uint64_t lo = (uint64_t)(uintptr_t)base;
    int free_entry = -1;

    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_FLAVOR, func,
                                "the window was not made by MPI_Win_create_dynamic");
    if (size < 0)
        return pb_mpi_win_raise(w, MPI_ERR_SIZE, func, "size is negative (%ld)", (long)size);
    if (base == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_BASE, func, "base is NULL");
    for (int i = 0; i < PB_WIN_REGIONS_MAX; i++) {
        uint64_t b = atomic_load_explicit(&ctl->regions[i].base, memory_order_relaxed);
        uint64_t n = atomic_load_explicit(&ctl->regions[i].size, memory_order_relaxed);

        if (b == 0) {
            if (free_entry < 0)
                free_entry = i;
        } else if (lo < b + n && b < lo + (uint64_t)size) {
            return pb_mpi_win_raise(w, MPI_ERR_RMA_ATTACH, func,
                                    "[%p, +%ld) overlaps memory attached before", base, (long)size);
        }
    }
    if (free_entry < 0)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_ATTACH, func,
                                "%d regions are attached already (Postbox's most)",
                                PB_WIN_REGIONS_MAX);
    atomic_store_explicit(&ctl->regions[free_entry].size, (uint64_t)size, memory_order_relaxed);
    atomic_store_explicit(&ctl->regions[free_entry].base, lo, memory_order_release);
    return MPI_SUCCESS;
}

int pb_mpi_win_detach_impl(const char *func, MPI_Win win, const void *base, pb_win_t *w)
{
    pb_win_ctl_t *ctl = w->ctl;

    if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return pb_mpi_win_raise(w, MPI_ERR_RMA_FLAVOR, func,
                                "the window was not made by MPI_Win_create_dynamic");
    for (int i = 0; i < PB_WIN_REGIONS_MAX; i++) {
        if (base != NULL && atomic_load_explicit(&ctl->regions[i].base, memory_order_relaxed) ==
                                (uint64_t)(uintptr_t)base) {
            atomic_store_explicit(&ctl->regions[i].base, 0, memory_order_release);
            atomic_store_explicit(&ctl->regions[i].size, 0, memory_order_relaxed);
            return MPI_SUCCESS;
        }
    }
    return pb_mpi_win_raise(w, MPI_ERR_RMA_ATTACH, func, "no memory attached at %p", base);
}

int pb_mpi_win_set_info_impl(const char *func, MPI_Win win, MPI_Info info, pb_win_t *w)
{
    int rc = pb_mpi_info_check(MPI_COMM_NULL, info, 1, func);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = hints_set(w, info, 0);
    return rc == MPI_SUCCESS ? rc : pb_mpi_win_raise(w, rc, func, "out of memory");
}

int pb_mpi_win_get_info_impl(const char *func, MPI_Win win, MPI_Info *info_used, pb_win_t *w)
{
    if (info_used == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "info_used is NULL");
    return PMPI_Info_dup(w->info, info_used);
}

int pb_mpi_win_set_name_impl(const char *func, MPI_Win win, const char *win_name, pb_win_t *w)
{
    if (win_name == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "win_name is NULL");
    snprintf(w->name, sizeof(w->name), "%s", win_name);
    return MPI_SUCCESS;
}

int pb_mpi_win_get_name_impl(const char *func, MPI_Win win, char *win_name, int *resultlen,
                             pb_win_t *w)
{
    if (win_name == NULL || resultlen == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "%s is NULL",
                                win_name == NULL ? "win_name" : "resultlen");
    *resultlen = (int)strlen(w->name);
    memcpy(win_name, w->name, (size_t)*resultlen + 1);
    return MPI_SUCCESS;
}

int pb_mpi_win_set_errhandler_impl(const char *func, MPI_Win win, MPI_Errhandler errhandler,
                                   pb_win_t *w)
{
    if (!pb_mpi_errhandler_valid_for_win(errhandler))
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "%p is not an error handler for windows",
                                (void *)errhandler);
    w->errhandler = errhandler;
    return MPI_SUCCESS;
}

int pb_mpi_win_get_errhandler_impl(const char *func, MPI_Win win, MPI_Errhandler *errhandler,
                                   pb_win_t *w)
{
    if (errhandler == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "errhandler is NULL");
    *errhandler = w->errhandler;
    return MPI_SUCCESS;
}

int pb_mpi_win_call_errhandler_impl(const char *func, MPI_Win win, int errorcode, pb_win_t *w)
{
    pb_mpi_win_raise(w, errorcode, func, "raised by the program (MPI_Win_call_errhandler)");
    return MPI_SUCCESS;
}
