/*
 * The events of the MPI tool information interface (tools_impl.h).
 *
 * Two event types, raised where they cost nothing while no tool listens
 * (one load of a hook pointer and an untaken branch):
 *
 *   postbox_p2p_unexpected  a message arrived before a receive matched it:
 *                           source (MPI_INT, the sender's rank in the job),
 *                           tag (MPI_INT), bytes (MPI_COUNT)
 *   postbox_coll_run        a collective ran an algorithm: run (MPI_INT,
 *                           enumeration postbox_coll_run, whose items are
 *                           named <collective>_<algorithm> like the
 *                           counters coll_<collective>_<algorithm>)
 *
 * Both are raised inside an MPI call, by the thread making it, while the
 * library's state is in the middle of a change: a callback may call only
 * the MPI_T functions the standard allows in callbacks (MPI_T_event_read,
 * _copy, _get_timestamp, _get_source, _handle_alloc, _handle_free, the
 * MPI_T_pvar and MPI_T_source calls), so the context requires
 * MPI_T_CB_REQUIRE_MPI_RESTRICTED.  Of a registration's callbacks, the one
 * registered for the lowest level that satisfies it runs, told that level;
 * a registration with only an MPI_T_CB_REQUIRE_NONE callback cannot run
 * there: the event is dropped for it and its dropped handler, if set, is
 * told at once (count 1).  Events are never buffered, so nothing else is
 * dropped.  Both types bind to no object; their timestamps are source 0's.
 *
 * Registrations live in one list under the tools mutex.  A raise walks it
 * with the mutex given up around each callback (a callback calls MPI_T,
 * which takes the mutex); a registration freed meanwhile stays in the list
 * until no raise runs, and its free callback runs then.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/coll_table.h"
#include "mpi/engine/engine.h"
#include "mpi/info.h"
#include "mpi/tools.h"
#include "mpi/tools_impl.h"

#define INSTANCE_MAGIC 0x45564e49u /* "INVE" */
#define ELEMENTS_MAX 3
#define SAFETY_LEVELS 4

enum {
    EV_UNEXPECTED,
    EV_COLL_RUN,
    EVENTS
};

/* the data of each event type, in the layout MPI_T_event_copy gives */
typedef struct {
    int source, tag;
    MPI_Count bytes;
} unexpected_data_t;

typedef struct {
    int run; /* kind * PB_ALG_COUNT + alg */
} coll_run_data_t;

typedef struct {
    const char *name, *desc;
    int category, verbosity, elements;
    MPI_Datatype types[ELEMENTS_MAX];
    MPI_Aint displs[ELEMENTS_MAX];
    size_t sizes[ELEMENTS_MAX];
    size_t bytes;
} event_type_t;

static const event_type_t event_types[EVENTS] = {
    [EV_UNEXPECTED] = {"postbox_p2p_unexpected",
                       "A message arrived at this process before a receive matched it: "
                       "the sender's rank in the job, the tag and the message's bytes.",
                       PB_MPI_T_CAT_P2P,
                       MPI_T_VERBOSITY_TUNER_DETAIL,
                       3,
                       {MPI_INT, MPI_INT, MPI_COUNT},
                       {offsetof(unexpected_data_t, source), offsetof(unexpected_data_t, tag),
                        offsetof(unexpected_data_t, bytes)},
                       {sizeof(int), sizeof(int), sizeof(MPI_Count)},
                       sizeof(unexpected_data_t)},
    [EV_COLL_RUN] = {"postbox_coll_run",
                     "A collective call of this process ran an algorithm: which collective "
                     "and algorithm, an item of the enumeration postbox_coll_run.",
                     PB_MPI_T_CAT_COLL,
                     MPI_T_VERBOSITY_TUNER_BASIC,
                     1,
                     {MPI_INT},
                     {offsetof(coll_run_data_t, run)},
                     {sizeof(int)},
                     sizeof(coll_run_data_t)},
};

/* the callback safety levels, least demanding first */
static const MPI_T_cb_safety safety_levels[SAFETY_LEVELS] = {
    MPI_T_CB_REQUIRE_NONE, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_T_CB_REQUIRE_THREAD_SAFE,
    MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE};

/* what every raise's context requires */
#define RAISE_LEVEL 1 /* MPI_T_CB_REQUIRE_MPI_RESTRICTED */

struct MPI_T_event_registration_t {
    int type;
    int freed; /* MPI_T_event_handle_free was called: gone once no raise runs */
    MPI_Info info;
    struct {
        MPI_T_event_cb_function *fn;
        void *user_data;
        MPI_Info info;
    } cb[SAFETY_LEVELS];
    MPI_T_event_dropped_cb_function *dropped;
    MPI_T_event_free_cb_function *free_fn;
    void *free_user_data;
    struct MPI_T_event_registration_t *next;
};

struct MPI_T_event_instance_t {
    uint32_t magic;
    int type;
    MPI_Count timestamp;
    union {
        unexpected_data_t unexpected;
        coll_run_data_t coll_run;
    } data;
};

static struct {
    struct MPI_T_event_registration_t *regs;
    int raising;       /* raises walking regs now */
    int armed[EVENTS]; /* registrations with a callback, by type */
    int built;
    pb_mpi_t_enum_item_t run_items[PB_COLL_KINDS * PB_ALG_COUNT];
    char run_names[PB_COLL_KINDS * PB_ALG_COUNT][48];
    struct MPI_T_enum_t run_enum;
} ev;

/* ---- the event types -------------------------------------------------------------- */

void pb_mpi_t_events_build(void)
{
    int n = 0;

    if (ev.built)
        return;
    for (int k = 0; k < PB_COLL_KINDS; k++) {
        for (int a = 0; a < PB_ALG_COUNT; a++) {
            if (!pb_coll_kind_has_alg((pb_coll_kind_t)k, (pb_coll_alg_t)a))
                continue;
            snprintf(ev.run_names[n], sizeof(ev.run_names[n]), "%s_%s",
                     pb_coll_kind_name((pb_coll_kind_t)k), pb_coll_alg_name((pb_coll_alg_t)a));
            ev.run_items[n] = (pb_mpi_t_enum_item_t){k * PB_ALG_COUNT + a, ev.run_names[n]};
            n++;
        }
    }
    ev.run_enum = (struct MPI_T_enum_t){"postbox_coll_run", n, ev.run_items};
    ev.built = 1;
}

const struct MPI_T_enum_t *pb_mpi_t_event_enum(void)
{
    return ev.built ? &ev.run_enum : NULL;
}

int pb_mpi_t_category_events(int cat, int len, int indices[])
{
    int n = 0;

    for (int i = 0; i < EVENTS; i++) {
        if (event_types[i].category != cat)
            continue;
        if (indices != NULL && n < len)
            indices[n] = i;
        n++;
    }
    return n;
}

/* ---- raising ---------------------------------------------------------------------- */

/* The callback of @reg to run in a context that requires RAISE_LEVEL: the
 * index of the least demanding level at or above it, -1 for none. */
static int callback_for(const struct MPI_T_event_registration_t *reg)
{
    for (int k = RAISE_LEVEL; k < SAFETY_LEVELS; k++) {
        if (reg->cb[k].fn != NULL)
            return k;
    }
    return -1;
}

static void registration_release(struct MPI_T_event_registration_t *reg)
{
    if (reg->info != MPI_INFO_NULL)
        PMPI_Info_free(&reg->info);
    for (int k = 0; k < SAFETY_LEVELS; k++) {
        if (reg->cb[k].info != MPI_INFO_NULL)
            PMPI_Info_free(&reg->cb[k].info);
    }
    free(reg);
}

/* Take the freed registrations out of the list (under the mutex, no raise
 * running); @return them, linked. */
static struct MPI_T_event_registration_t *unlink_freed(void)
{
    struct MPI_T_event_registration_t *gone = NULL, **at = &ev.regs;

    while (*at != NULL) {
        struct MPI_T_event_registration_t *reg = *at;

        if (reg->freed) {
            *at = reg->next;
            reg->next = gone;
            gone = reg;
        } else {
            at = &reg->next;
        }
    }
    return gone;
}

/* Run the free callbacks of @gone (the mutex not held) and free them. */
static void release_all(struct MPI_T_event_registration_t *gone, MPI_T_cb_safety level)
{
    while (gone != NULL) {
        struct MPI_T_event_registration_t *reg = gone;

        gone = reg->next;
        if (reg->free_fn != NULL)
            reg->free_fn(reg, level, reg->free_user_data);
        registration_release(reg);
    }
}

static void raise_event(int type, const void *data, size_t bytes)
{
    struct MPI_T_event_instance_t instance = {INSTANCE_MAGIC, type, 0, {{0}}};
    struct MPI_T_event_registration_t *gone = NULL;

    instance.timestamp = (MPI_Count)pb_eng_stats_now_ns();
    memcpy(&instance.data, data, bytes);
    pb_mpi_t_enter();
    ev.raising++;
    for (struct MPI_T_event_registration_t *reg = ev.regs; reg != NULL; reg = reg->next) {
        int k;

        if (reg->freed || reg->type != type)
            continue;
        k = callback_for(reg);
        if (k >= 0) {
            MPI_T_event_cb_function *fn = reg->cb[k].fn;
            void *user_data = reg->cb[k].user_data;

            pb_mpi_t_leave(MPI_SUCCESS);
            fn(&instance, reg, safety_levels[RAISE_LEVEL], user_data);
            pb_mpi_t_enter();
        } else if (reg->dropped != NULL && reg->cb[0].fn != NULL) {
            MPI_T_event_dropped_cb_function *dropped = reg->dropped;
            void *user_data = reg->cb[0].user_data;

            pb_mpi_t_leave(MPI_SUCCESS);
            dropped(1, reg, 0, safety_levels[RAISE_LEVEL], user_data);
            pb_mpi_t_enter();
        }
    }
    if (--ev.raising == 0)
        gone = unlink_freed();
    pb_mpi_t_leave(MPI_SUCCESS);
    release_all(gone, safety_levels[RAISE_LEVEL]);
}

static void raise_unexpected(int source, int tag, uint64_t bytes)
{
    unexpected_data_t d = {source, tag, (MPI_Count)bytes};

    raise_event(EV_UNEXPECTED, &d, sizeof(d));
}

static void raise_coll_run(pb_coll_kind_t kind, pb_coll_alg_t alg)
{
    coll_run_data_t d = {(int)kind * PB_ALG_COUNT + (int)alg};

    raise_event(EV_COLL_RUN, &d, sizeof(d));
}

/* Point the hooks at the raise functions while their event has a callback
 * (under the mutex). */
static void arm(void)
{
    for (int t = 0; t < EVENTS; t++)
        ev.armed[t] = 0;
    for (const struct MPI_T_event_registration_t *reg = ev.regs; reg != NULL; reg = reg->next) {
        int any = 0;

        for (int k = 0; k < SAFETY_LEVELS; k++)
            any |= reg->cb[k].fn != NULL;
        if (!reg->freed && any)
            ev.armed[reg->type]++;
    }
    atomic_store_explicit(&pb_eng_unexpected_hook,
                          ev.armed[EV_UNEXPECTED] ? raise_unexpected : NULL, memory_order_relaxed);
    atomic_store_explicit(&pb_coll_ran_hook, ev.armed[EV_COLL_RUN] ? raise_coll_run : NULL,
                          memory_order_relaxed);
}

void pb_mpi_t_events_finalize(void)
{
    struct MPI_T_event_registration_t *reg = ev.regs;

    ev.regs = NULL;
    arm();
    while (reg != NULL) {
        struct MPI_T_event_registration_t *next = reg->next;

        registration_release(reg);
        reg = next;
    }
}

/* ---- the calls -------------------------------------------------------------------- */

/* A registration of the list, not freed (found by address: a handle freed
 * before is never read). */
static int registration_valid(MPI_T_event_registration reg)
{
    for (const struct MPI_T_event_registration_t *r = ev.regs; r != NULL; r = r->next) {
        if (r == reg)
            return !r->freed;
    }
    return 0;
}

static int instance_valid(MPI_T_event_instance instance)
{
    return instance != NULL && instance->magic == INSTANCE_MAGIC;
}

/* Enter MPI_T (pb_mpi_t_leave must follow, whatever this returns) for a
 * call that reads @instance into @out: MPI_SUCCESS, or the error of an
 * uninitialized MPI_T, an invalid instance or a NULL @out. */
static int enter_instance(MPI_T_event_instance instance, const void *out)
{
    int rc = pb_mpi_t_enter();

    if (rc == MPI_SUCCESS && !instance_valid(instance))
        rc = MPI_T_ERR_INVALID_HANDLE;
    else if (rc == MPI_SUCCESS && out == NULL)
        rc = MPI_T_ERR_INVALID;
    return rc;
}

/* The index of @cb_safety in safety_levels, -1 when it is none of them. */
static int level_index(MPI_T_cb_safety cb_safety)
{
    for (int k = 0; k < SAFETY_LEVELS; k++) {
        if (safety_levels[k] == cb_safety)
            return k;
    }
    return -1;
}

/* *@copy = a duplicate of @info (MPI_INFO_NULL stays so).  @return
 * MPI_SUCCESS or MPI_T_ERR_INVALID (not an info object). */
static int info_copy(MPI_Info info, MPI_Info *copy)
{
    *copy = MPI_INFO_NULL;
    if (info == MPI_INFO_NULL)
        return MPI_SUCCESS;
    if (!pb_mpi_info_valid(info))
        return MPI_T_ERR_INVALID;
    return PMPI_Info_dup(info, copy) == MPI_SUCCESS ? MPI_SUCCESS : MPI_T_ERR_MEMORY;
}

/* *@used = a new info object with the hints of @info (an empty one when it
 * has none).  @return MPI_SUCCESS, MPI_T_ERR_INVALID (NULL @used),
 * MPI_T_ERR_MEMORY. */
static int info_give(MPI_Info info, MPI_Info *used)
{
    int rc;

    if (used == NULL)
        return MPI_T_ERR_INVALID;
    rc = info == MPI_INFO_NULL ? PMPI_Info_create(used) : PMPI_Info_dup(info, used);
    return rc == MPI_SUCCESS ? MPI_SUCCESS : MPI_T_ERR_MEMORY;
}

/* *@num_events = the number of event types (2).  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL). */
PB_EXPORT int PMPI_T_event_get_num(int *num_events)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter();

    if (rc == MPI_SUCCESS && num_events == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        *num_events = EVENTS;
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_get_num, PMPI_T_event_get_num);

/* What event type @event_index is; a NULL output is skipped, and the
 * arrays get the first *@num_elements (on input) of its elements, whose
 * number *@num_elements is then.  *@info is a new (empty) info object to
 * free.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_MEMORY. */
PB_EXPORT int PMPI_T_event_get_info(int event_index, char *name, int *name_len, int *verbosity,
                                    MPI_Datatype array_of_datatypes[],
                                    MPI_Aint array_of_displacements[], int *num_elements,
                                    MPI_T_enum *enumtype, MPI_Info *info, char *desc, int *desc_len,
                                    int *bind)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter();
    const event_type_t *e;

    if (rc == MPI_SUCCESS && (event_index < 0 || event_index >= EVENTS))
        rc = MPI_T_ERR_INVALID_INDEX;
    if (rc != MPI_SUCCESS)
        return pb_mpi_t_leave(rc);
    e = &event_types[event_index];
    pb_mpi_t_put_string(e->name, name, name_len);
    pb_mpi_t_put_string(e->desc, desc, desc_len);
    if (verbosity != NULL)
        *verbosity = e->verbosity;
    if (num_elements != NULL) {
        for (int i = 0; i < e->elements && i < *num_elements; i++) {
            if (array_of_datatypes != NULL)
                array_of_datatypes[i] = e->types[i];
            if (array_of_displacements != NULL)
                array_of_displacements[i] = e->displs[i];
        }
        *num_elements = e->elements;
    }
    if (enumtype != NULL)
        *enumtype = event_index == EV_COLL_RUN ? &ev.run_enum : MPI_T_ENUM_NULL;
    if (bind != NULL)
        *bind = MPI_T_BIND_NO_OBJECT;
    if (info != NULL)
        rc = PMPI_Info_create(info) == MPI_SUCCESS ? MPI_SUCCESS : MPI_T_ERR_MEMORY;
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_get_info, PMPI_T_event_get_info);

/* *@event_index = the index of the event type named @name.  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL),
 * MPI_T_ERR_INVALID_NAME. */
PB_EXPORT int PMPI_T_event_get_index(const char *name, int *event_index)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter();

    if (rc == MPI_SUCCESS && (name == NULL || event_index == NULL))
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS) {
        rc = MPI_T_ERR_INVALID_NAME;
        for (int i = 0; i < EVENTS; i++) {
            if (strcmp(event_types[i].name, name) == 0) {
                *event_index = i;
                rc = MPI_SUCCESS;
            }
        }
    }
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_get_index, PMPI_T_event_get_index);

/* A new registration for event type @event_index, with no callback yet
 * (@obj_handle is ignored: no type binds to an object).  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_INDEX,
 * MPI_T_ERR_INVALID (NULL output, bad info), MPI_T_ERR_MEMORY. */
PB_EXPORT int PMPI_T_event_handle_alloc(int event_index, void *obj_handle, MPI_Info info,
                                        MPI_T_event_registration *event_registration)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter();
    struct MPI_T_event_registration_t *reg = NULL;

    (void)obj_handle;
    if (rc == MPI_SUCCESS && (event_index < 0 || event_index >= EVENTS))
        rc = MPI_T_ERR_INVALID_INDEX;
    else if (rc == MPI_SUCCESS && event_registration == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS && (reg = calloc(1, sizeof(*reg))) == NULL)
        rc = MPI_T_ERR_MEMORY;
    if (rc == MPI_SUCCESS) {
        reg->type = event_index;
        for (int k = 0; k < SAFETY_LEVELS; k++)
            reg->cb[k].info = MPI_INFO_NULL;
        rc = info_copy(info, &reg->info);
        if (rc != MPI_SUCCESS) {
            free(reg);
        } else {
            reg->next = ev.regs;
            ev.regs = reg;
            *event_registration = reg;
        }
    }
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_handle_alloc, PMPI_T_event_handle_alloc);

/* Replace the hints of @event_registration by @info's.  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_HANDLE,
 * MPI_T_ERR_INVALID (bad info), MPI_T_ERR_MEMORY. */
PB_EXPORT int PMPI_T_event_handle_set_info(MPI_T_event_registration event_registration,
                                           MPI_Info info)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter();
    MPI_Info copy;

    if (rc == MPI_SUCCESS && !registration_valid(event_registration))
        rc = MPI_T_ERR_INVALID_HANDLE;
    if (rc == MPI_SUCCESS)
        rc = info_copy(info, &copy);
    if (rc == MPI_SUCCESS) {
        if (event_registration->info != MPI_INFO_NULL)
            PMPI_Info_free(&event_registration->info);
        event_registration->info = copy;
    }
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_handle_set_info, PMPI_T_event_handle_set_info);

/* *@info_used = a new info object with the hints of @event_registration.
 * @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_HANDLE,
 * MPI_T_ERR_INVALID (NULL), MPI_T_ERR_MEMORY. */
PB_EXPORT int PMPI_T_event_handle_get_info(MPI_T_event_registration event_registration,
                                           MPI_Info *info_used)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter();

    if (rc == MPI_SUCCESS && !registration_valid(event_registration))
        rc = MPI_T_ERR_INVALID_HANDLE;
    if (rc == MPI_SUCCESS)
        rc = info_give(event_registration->info, info_used);
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_handle_get_info, PMPI_T_event_handle_get_info);

/* Set (NULL @event_cb_function: take away) the callback of
 * @event_registration for safety level @cb_safety, with its @user_data and
 * hints.  Events of the type are raised while any registration has a
 * callback.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_INVALID (no safety level, bad info),
 * MPI_T_ERR_MEMORY. */
PB_EXPORT int PMPI_T_event_register_callback(MPI_T_event_registration event_registration,
                                             MPI_T_cb_safety cb_safety, MPI_Info info,
                                             void *user_data,
                                             MPI_T_event_cb_function event_cb_function)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter(), k = level_index(cb_safety);
    MPI_Info copy = MPI_INFO_NULL;

    if (rc == MPI_SUCCESS && !registration_valid(event_registration))
        rc = MPI_T_ERR_INVALID_HANDLE;
    else if (rc == MPI_SUCCESS && k < 0)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        rc = info_copy(info, &copy);
    if (rc == MPI_SUCCESS) {
        if (event_registration->cb[k].info != MPI_INFO_NULL)
            PMPI_Info_free(&event_registration->cb[k].info);
        event_registration->cb[k].fn = event_cb_function;
        event_registration->cb[k].user_data = user_data;
        event_registration->cb[k].info = copy;
        arm();
    }
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_register_callback, PMPI_T_event_register_callback);

/* Replace the hints of the callback for @cb_safety.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_INVALID
 * (no safety level, no callback set for it, bad info), MPI_T_ERR_MEMORY. */
PB_EXPORT int PMPI_T_event_callback_set_info(MPI_T_event_registration event_registration,
                                             MPI_T_cb_safety cb_safety, MPI_Info info)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter(), k = level_index(cb_safety);
    MPI_Info copy;

    if (rc == MPI_SUCCESS && !registration_valid(event_registration))
        rc = MPI_T_ERR_INVALID_HANDLE;
    else if (rc == MPI_SUCCESS && (k < 0 || event_registration->cb[k].fn == NULL))
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        rc = info_copy(info, &copy);
    if (rc == MPI_SUCCESS) {
        if (event_registration->cb[k].info != MPI_INFO_NULL)
            PMPI_Info_free(&event_registration->cb[k].info);
        event_registration->cb[k].info = copy;
    }
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_callback_set_info, PMPI_T_event_callback_set_info);

/* *@info_used = a new info object with the hints of the callback for
 * @cb_safety.  @return as MPI_T_event_callback_set_info (and
 * MPI_T_ERR_INVALID for a NULL @info_used). */
PB_EXPORT int PMPI_T_event_callback_get_info(MPI_T_event_registration event_registration,
                                             MPI_T_cb_safety cb_safety, MPI_Info *info_used)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter(), k = level_index(cb_safety);

    if (rc == MPI_SUCCESS && !registration_valid(event_registration))
        rc = MPI_T_ERR_INVALID_HANDLE;
    else if (rc == MPI_SUCCESS && (k < 0 || event_registration->cb[k].fn == NULL))
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        rc = info_give(event_registration->cb[k].info, info_used);
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_callback_get_info, PMPI_T_event_callback_get_info);

/* Free @event_registration: no callback of it runs afterwards.  Once no
 * raise is running (at once, unless called from a callback),
 * @free_cb_function, if not NULL, is called with @user_data.  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_HANDLE. */
PB_EXPORT int PMPI_T_event_handle_free(MPI_T_event_registration event_registration, void *user_data,
                                       MPI_T_event_free_cb_function free_cb_function)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter();
    struct MPI_T_event_registration_t *gone = NULL;

    if (rc == MPI_SUCCESS && !registration_valid(event_registration))
        rc = MPI_T_ERR_INVALID_HANDLE;
    if (rc == MPI_SUCCESS) {
        event_registration->freed = 1;
        event_registration->free_fn = free_cb_function;
        event_registration->free_user_data = user_data;
        arm();
        if (ev.raising == 0)
            gone = unlink_freed();
    }
    pb_mpi_t_leave(rc);
    release_all(gone, MPI_T_CB_REQUIRE_NONE);
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_T_event_handle_free, PMPI_T_event_handle_free);

/* Set the handler told of the events dropped for @event_registration (NULL:
 * none).  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_HANDLE. */
PB_EXPORT int PMPI_T_event_set_dropped_handler(MPI_T_event_registration event_registration,
                                               MPI_T_event_dropped_cb_function dropped_cb_function)
{
    PB_MPI_THREAD_GUARD;
    int rc = pb_mpi_t_enter();

    if (rc == MPI_SUCCESS && !registration_valid(event_registration))
        rc = MPI_T_ERR_INVALID_HANDLE;
    if (rc == MPI_SUCCESS)
        event_registration->dropped = dropped_cb_function;
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_set_dropped_handler, PMPI_T_event_set_dropped_handler);

/* Copy element @element_index of @event_instance (valid in its callback
 * only) to @buffer.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID
 * (NULL). */
PB_EXPORT int PMPI_T_event_read(MPI_T_event_instance event_instance, int element_index,
                                void *buffer)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter_instance(event_instance, buffer);

    if (rc == MPI_SUCCESS &&
        (element_index < 0 || element_index >= event_types[event_instance->type].elements))
        rc = MPI_T_ERR_INVALID_INDEX;
    if (rc == MPI_SUCCESS) {
        const event_type_t *e = &event_types[event_instance->type];

        memcpy(buffer, (const char *)&event_instance->data + e->displs[element_index],
               e->sizes[element_index]);
    }
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_read, PMPI_T_event_read);

/* Copy every element of @event_instance to @buffer, at the displacements
 * MPI_T_event_get_info gives.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_INVALID
 * (NULL). */
PB_EXPORT int PMPI_T_event_copy(MPI_T_event_instance event_instance, void *buffer)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter_instance(event_instance, buffer);

    if (rc == MPI_SUCCESS)
        memcpy(buffer, &event_instance->data, event_types[event_instance->type].bytes);
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_copy, PMPI_T_event_copy);

/* *@event_timestamp = when @event_instance was raised, in source 0's ticks
 * (nanoseconds).  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_INVALID (NULL). */
PB_EXPORT int PMPI_T_event_get_timestamp(MPI_T_event_instance event_instance,
                                         MPI_Count *event_timestamp)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter_instance(event_instance, event_timestamp);

    if (rc == MPI_SUCCESS)
        *event_timestamp = event_instance->timestamp;
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_get_timestamp, PMPI_T_event_get_timestamp);

/* *@source_index = 0, the one source.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_INVALID
 * (NULL). */
PB_EXPORT int PMPI_T_event_get_source(MPI_T_event_instance event_instance, int *source_index)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter_instance(event_instance, source_index);

    if (rc == MPI_SUCCESS)
        *source_index = 0;
    return pb_mpi_t_leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_event_get_source, PMPI_T_event_get_source);
