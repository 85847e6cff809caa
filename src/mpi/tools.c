/*
 * The MPI tool information interface (tools.h): control variables,
 * performance variables and their sessions, categories, enumerations and
 * the time source.  The events are in tools_event.c.
 */
#include "mpi/tools.h"
#include "mpi/tools_impl.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/coll_scratch.h"
#include "mpi/coll_table.h"
#include "mpi/engine/engine.h"
#include "mpi/mpi_impl.h"
#include "util/config.h"

/* ---- enumerations -------------------------------------------------------- */

static const pb_mpi_t_enum_item_t switch_items[] = {{0, "off"}, {1, "on"}};
static const pb_mpi_t_enum_item_t polling_items[] = {{0, "directed"}, {1, "all"}};

static const struct MPI_T_enum_t enum_switch = {"postbox_switch", 2, switch_items};
static const struct MPI_T_enum_t enum_polling = {"postbox_polling", 2, polling_items};

static const struct MPI_T_enum_t *const enums[] = {&enum_switch, &enum_polling};

/* ---- categories ---------------------------------------------------------- */

static const struct {
    const char *name, *desc;
} categories[PB_MPI_T_CATEGORIES] = {
    [PB_MPI_T_CAT_RSM] = {"postbox_rsm",
                          "The RSM layer (libpostbox): the job, the launcher's settings, "
                          "the segment ids and the tcp transport."},
    [PB_MPI_T_CAT_ENGINE] = {"postbox_engine",
                             "The MPI engine: postbox rings, buffer pools, polling and "
                             "waiting."},
    [PB_MPI_T_CAT_P2P] = {"postbox_p2p",
                          "Point-to-point: the protocol thresholds, the messages sent by "
                          "each protocol and the unexpected messages."},
    [PB_MPI_T_CAT_COLL] = {"postbox_coll",
                           "Collectives: the node path, the algorithm table and how many "
                           "times each algorithm ran."},
    [PB_MPI_T_CAT_RMA] = {"postbox_rma", "One-sided communication: the calls this process made."},
};

/* ---- control variables --------------------------------------------------- */

enum {
    VAL_INT,
    VAL_ULONG,
    VAL_STRING
};

/* where the value in force lives between MPI_Init and MPI_Finalize */
enum {
    IN_TABLE,  /* nowhere else: the environment, else the default */
    IN_PARAMS, /* pb_eng_params, at @offset */
    IN_COLL_STATS
};

/* what MPI_T says of one tunable besides its table's name, default and help */
typedef struct {
    const char *name;
    int kind; /* VAL_*: MPI_INT, MPI_UNSIGNED_LONG, MPI_CHAR */
    int verbosity, category, scope;
    const struct MPI_T_enum_t *enumtype; /* or NULL */
    int secret;                          /* read as "": never shown */
    int in;                              /* IN_* */
    size_t offset;                       /* IN_PARAMS: of the int or size_t field */
} cvar_meta_t;

#define PARAM(field) IN_PARAMS, offsetof(pb_eng_params_t, field)

/* Scopes: LOCAL (writable) only where a write between MPI_Init and
 * MPI_Finalize takes effect safely at the next message or wait of this
 * process alone; CONSTANT for what the launcher fixes before the process
 * starts; READONLY for the rest (read once, at MPI_Init or at the
 * transport's start).  docs/mpi.md gives the reason for each. */
static const cvar_meta_t cvar_metas[] = {
    /* the RSM layer (src/util/config.c) */
    {"POSTBOX_LOG_LEVEL", VAL_STRING, MPI_T_VERBOSITY_USER_BASIC, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_DSM_STATS", VAL_INT, MPI_T_VERBOSITY_USER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_DSM_NODE_SHARE", VAL_INT, MPI_T_VERBOSITY_USER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_DSM_SELF_INVALIDATE", VAL_INT, MPI_T_VERBOSITY_USER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_JOB_ID", VAL_STRING, MPI_T_VERBOSITY_MPIDEV_BASIC, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_CONSTANT, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_JOB_SECRET", VAL_STRING, MPI_T_VERBOSITY_MPIDEV_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_CONSTANT, NULL, 1, IN_TABLE, 0},
    {"POSTBOX_NODE_ID", VAL_INT, MPI_T_VERBOSITY_MPIDEV_BASIC, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_CONSTANT, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_VNODE", VAL_INT, MPI_T_VERBOSITY_MPIDEV_BASIC, PB_MPI_T_CAT_RSM, MPI_T_SCOPE_CONSTANT,
     NULL, 0, IN_TABLE, 0},
    {"POSTBOX_PMI", VAL_STRING, MPI_T_VERBOSITY_USER_DETAIL, PB_MPI_T_CAT_RSM, MPI_T_SCOPE_CONSTANT,
     NULL, 0, IN_TABLE, 0},
    {"POSTBOX_PMI_VERSION", VAL_STRING, MPI_T_VERBOSITY_MPIDEV_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_CONSTANT, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_PMI_TOKEN", VAL_STRING, MPI_T_VERBOSITY_MPIDEV_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_CONSTANT, NULL, 1, IN_TABLE, 0},
    {"POSTBOX_RSM_SEGMENTID_FILE", VAL_STRING, MPI_T_VERBOSITY_MPIDEV_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_RSM_SIGNAL_SPIN", VAL_INT, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_OFI_LIBRARY", VAL_STRING, MPI_T_VERBOSITY_USER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_OFI_PROVIDER", VAL_STRING, MPI_T_VERBOSITY_USER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_OFI_SPIN_US", VAL_INT, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_TCP_ADDR", VAL_STRING, MPI_T_VERBOSITY_USER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_TCP_PAYLOAD_MAC", VAL_STRING, MPI_T_VERBOSITY_USER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_TCP_REPLY_TIMEOUT_MS", VAL_INT, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_TCP_REQUEST_TIMEOUT_MS", VAL_INT, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_TCP_SPIN_US", VAL_INT, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_TCP_STRIPE_MIN", VAL_INT, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_TCP_TIMEOUT_MS", VAL_INT, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_TRANSPORT", VAL_STRING, MPI_T_VERBOSITY_USER_BASIC, PB_MPI_T_CAT_RSM,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    /* the MPI engine (src/mpi/engine/tunables.c) */
    {"POSTBOX_NUMPOSTBOX", VAL_INT, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_ENGINE,
     MPI_T_SCOPE_READONLY, NULL, 0, PARAM(postboxes)},
    {"POSTBOX_POOL_BLOCKS", VAL_INT, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_ENGINE,
     MPI_T_SCOPE_READONLY, NULL, 0, PARAM(blocks)},
    {"POSTBOX_POOL_BLOCKS_NET", VAL_INT, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_ENGINE,
     MPI_T_SCOPE_READONLY, NULL, 0, PARAM(blocks_net)},
    {"POSTBOX_BLOCK_SIZE", VAL_ULONG, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_ENGINE,
     MPI_T_SCOPE_READONLY, NULL, 0, PARAM(block_size)},
    {"POSTBOX_RENDEZVOUS", VAL_ULONG, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_P2P,
     MPI_T_SCOPE_LOCAL, NULL, 0, PARAM(rendezvous)},
    {"POSTBOX_SINGLE_COPY", VAL_ULONG, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_P2P,
     MPI_T_SCOPE_LOCAL, NULL, 0, PARAM(single_copy)},
    {"POSTBOX_SINGLE_COPY_FAR", VAL_ULONG, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_P2P,
     MPI_T_SCOPE_LOCAL, NULL, 0, PARAM(single_copy_far)},
    {"POSTBOX_FAR_COPY_RATE", VAL_ULONG, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_P2P,
     MPI_T_SCOPE_LOCAL, NULL, 0, PARAM(far_copy_rate)},
    {"POSTBOX_SPLIT_COPY", VAL_ULONG, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_P2P,
     MPI_T_SCOPE_LOCAL, NULL, 0, PARAM(split_copy)},
    {"POSTBOX_COPY_HELP", VAL_ULONG, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_RMA,
     MPI_T_SCOPE_LOCAL, NULL, 0, PARAM(copy_help)},
    {"POSTBOX_POLLALL", VAL_INT, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_ENGINE,
     MPI_T_SCOPE_LOCAL, &enum_polling, 0, PARAM(pollall)},
    {"POSTBOX_SPIN", VAL_INT, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_ENGINE, MPI_T_SCOPE_LOCAL,
     NULL, 0, PARAM(spin)},
    {"POSTBOX_YIELDS", VAL_INT, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_ENGINE,
     MPI_T_SCOPE_LOCAL, NULL, 0, PARAM(yields)},
    {"POSTBOX_YIELD_US", VAL_INT, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_ENGINE,
     MPI_T_SCOPE_LOCAL, NULL, 0, PARAM(yield_us)},
    {"POSTBOX_COLL_NODE", VAL_INT, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_COLL,
     MPI_T_SCOPE_READONLY, &enum_switch, 0, PARAM(coll_node)},
    {"POSTBOX_COLL_CELL", VAL_ULONG, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_COLL,
     MPI_T_SCOPE_READONLY, NULL, 0, PARAM(coll_cell)},
    {"POSTBOX_COLL_AREA_MAX", VAL_ULONG, MPI_T_VERBOSITY_TUNER_DETAIL, PB_MPI_T_CAT_COLL,
     MPI_T_SCOPE_READONLY, NULL, 0, PARAM(coll_area_max)},
    {"POSTBOX_COLL_TABLE", VAL_STRING, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_COLL,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_COLL_ALGORITHM", VAL_STRING, MPI_T_VERBOSITY_TUNER_BASIC, PB_MPI_T_CAT_COLL,
     MPI_T_SCOPE_READONLY, NULL, 0, IN_TABLE, 0},
    {"POSTBOX_COLL_STATS", VAL_INT, MPI_T_VERBOSITY_USER_BASIC, PB_MPI_T_CAT_COLL,
     MPI_T_SCOPE_LOCAL, &enum_switch, 0, IN_COLL_STATS, 0},
    {"POSTBOX_SHOW_TRANSPORTS", VAL_INT, MPI_T_VERBOSITY_USER_BASIC, PB_MPI_T_CAT_ENGINE,
     MPI_T_SCOPE_LOCAL, &enum_switch, 0, PARAM(show)},
};

#define CVAR_METAS ((int)(sizeof(cvar_metas) / sizeof(cvar_metas[0])))

/* one control variable: a tunable of @table and what tools.c says of it */
typedef struct {
    const pb_config_entry_t *table, *entry;
    const cvar_meta_t *meta;
} cvar_t;

struct MPI_T_cvar_handle_t {
    int cvar;
    struct MPI_T_cvar_handle_t *next;
};

/* ---- performance variables ----------------------------------------------- */

typedef uint64_t (*pvar_read_func_t)(int arg);

typedef struct {
    char name[64];
    char desc[192];
    int cls, category, verbosity;
    int readonly, continuous, atomic;
    int seconds; /* a TIMER read as MPI_DOUBLE seconds (the counter is nanoseconds) */
    pvar_read_func_t read;
    int arg;
} pvar_t;

struct MPI_T_pvar_handle_t {
    struct MPI_T_pvar_session_t *session;
    int pvar;
    int started;   /* counting: the value is acc + (now - base) */
    uint64_t base; /* the variable's value when counting last began */
    uint64_t acc;  /* what was counted before */
    struct MPI_T_pvar_handle_t *next;
};

struct MPI_T_pvar_session_t {
    struct MPI_T_pvar_handle_t *handles;
    struct MPI_T_pvar_session_t *next;
};

static const char *const proto_names[PB_ENG_PROTOS] = {
    [PB_ENG_PROTO_INLINE] = "inline",
    [PB_ENG_PROTO_EAGER] = "eager",
    [PB_ENG_PROTO_RENDEZVOUS] = "rendezvous",
    [PB_ENG_PROTO_SINGLE_COPY] = "single_copy",
};

static const char *const rma_names[PB_ENG_RMA_KINDS] = {
    [PB_ENG_RMA_PUT] = "put",
    [PB_ENG_RMA_GET] = "get",
    [PB_ENG_RMA_ACCUMULATE] = "accumulate",
    [PB_ENG_RMA_GET_ACCUMULATE] = "get_accumulate",
    [PB_ENG_RMA_FETCH_AND_OP] = "fetch_and_op",
    [PB_ENG_RMA_COMPARE_AND_SWAP] = "compare_and_swap",
};

static uint64_t read_rma_calls(int kind)
{
    return pb_eng_stat_get(&pb_eng_stats.rma_calls[kind]);
}

static uint64_t read_copy_bytes(int helper)
{
    return pb_eng_stat_get(helper ? &pb_eng_stats.copy_helper_bytes : &pb_eng_stats.copy_bytes);
}

static uint64_t read_messages(int proto)
{
    return pb_eng_stat_get(&pb_eng_stats.messages[proto]);
}

static uint64_t read_bytes(int proto)
{
    return pb_eng_stat_get(&pb_eng_stats.bytes[proto]);
}

static uint64_t read_unexpected(int unused)
{
    (void)unused;
    return pb_eng_stat_get(&pb_eng_stats.unexpected);
}

static uint64_t read_unexpected_queued(int unused)
{
    (void)unused;
    return pb_eng_stat_get(&pb_eng_stats.unexpected_queued);
}

static uint64_t read_unexpected_most(int unused)
{
    (void)unused;
    return pb_eng_stat_get(&pb_eng_stats.unexpected_most);
}

static uint64_t read_wait_ns(int unused)
{
    (void)unused;
    return pb_eng_stat_get(&pb_eng_stats.wait_ns);
}

static uint64_t read_scratch_kept(int unused)
{
    (void)unused;
    return (uint64_t)pb_coll_scratch_kept();
}

static uint64_t read_coll_runs(int arg)
{
    return pb_coll_runs((pb_coll_kind_t)(arg / PB_ALG_COUNT), (pb_coll_alg_t)(arg % PB_ALG_COUNT));
}

/* ---- the state ----------------------------------------------------------- */

#define PVARS_MAX (2 * PB_ENG_PROTOS + 5 + PB_ENG_RMA_KINDS + PB_COLL_KINDS * PB_ALG_COUNT)

static struct {
    pthread_mutex_t lock;
    int inits; /* MPI_T_init_thread calls not yet finalized */
    int built; /* the variables below are listed (once: they never change) */
    cvar_t cvars[CVAR_METAS];
    int ncvars;
    pvar_t pvars[PVARS_MAX];
    int npvars;
    struct MPI_T_cvar_handle_t *cvar_handles;
    struct MPI_T_pvar_session_t *sessions;
} tools = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const cvar_meta_t *meta_find(const char *name)
{
    for (int i = 0; i < CVAR_METAS; i++) {
        if (strcmp(cvar_metas[i].name, name) == 0)
            return &cvar_metas[i];
    }
    return NULL;
}

static void cvars_add(const pb_config_entry_t *table)
{
    for (const pb_config_entry_t *e = table; e->name != NULL; e++) {
        const cvar_meta_t *meta = meta_find(e->name);

        if (meta != NULL && tools.ncvars < CVAR_METAS)
            tools.cvars[tools.ncvars++] = (cvar_t){table, e, meta};
    }
}

static pvar_t *pvar_add(int cls, int category, pvar_read_func_t read, int arg)
{
    pvar_t *p = &tools.pvars[tools.npvars++];

    *p = (pvar_t){.cls = cls, .category = category, .read = read, .arg = arg};
    p->verbosity = MPI_T_VERBOSITY_TUNER_BASIC;
    /* counters and timers are reset by a tool (its handle's view only), in
     * one step with their read; levels and high-water marks are the
     * engine's own */
    p->readonly = cls == MPI_T_PVAR_CLASS_LEVEL || cls == MPI_T_PVAR_CLASS_HIGHWATERMARK;
    p->atomic = !p->readonly;
    p->continuous = cls != MPI_T_PVAR_CLASS_TIMER;
    return p;
}

static void pvars_list(void)
{
    pvar_t *p;

    for (int proto = 0; proto < PB_ENG_PROTOS; proto++) {
        p = pvar_add(MPI_T_PVAR_CLASS_COUNTER, PB_MPI_T_CAT_P2P, read_messages, proto);
        snprintf(p->name, sizeof(p->name), "p2p_%s_messages", proto_names[proto]);
        snprintf(p->desc, sizeof(p->desc),
                 "Messages this process sent by the %s protocol (as the sender chose it).",
                 proto_names[proto]);
        p = pvar_add(MPI_T_PVAR_CLASS_COUNTER, PB_MPI_T_CAT_P2P, read_bytes, proto);
        snprintf(p->name, sizeof(p->name), "p2p_%s_bytes", proto_names[proto]);
        snprintf(p->desc, sizeof(p->desc), "Bytes of the messages counted by p2p_%s_messages.",
                 proto_names[proto]);
    }
    p = pvar_add(MPI_T_PVAR_CLASS_COUNTER, PB_MPI_T_CAT_P2P, read_unexpected, 0);
    snprintf(p->name, sizeof(p->name), "p2p_unexpected_messages");
    snprintf(p->desc, sizeof(p->desc),
             "Messages that arrived at this process before a receive matched them.");
    p = pvar_add(MPI_T_PVAR_CLASS_LEVEL, PB_MPI_T_CAT_P2P, read_unexpected_queued, 0);
    snprintf(p->name, sizeof(p->name), "p2p_unexpected_queue_length");
    snprintf(p->desc, sizeof(p->desc), "Unexpected messages waiting for a receive now.");
    p = pvar_add(MPI_T_PVAR_CLASS_HIGHWATERMARK, PB_MPI_T_CAT_P2P, read_unexpected_most, 0);
    snprintf(p->name, sizeof(p->name), "p2p_unexpected_queue_max");
    snprintf(p->desc, sizeof(p->desc),
             "The longest the unexpected queue has been since the process started.");
    p = pvar_add(MPI_T_PVAR_CLASS_TIMER, PB_MPI_T_CAT_ENGINE, read_wait_ns, 0);
    p->seconds = 1;
    snprintf(p->name, sizeof(p->name), "engine_wait_time");
    snprintf(p->desc, sizeof(p->desc),
             "Seconds the process spent waiting for communication to complete (blocking "
             "calls, MPI_Wait*), while the timer runs.");
    p = pvar_add(MPI_T_PVAR_CLASS_COUNTER, PB_MPI_T_CAT_ENGINE, read_copy_bytes, 0);
    snprintf(p->name, sizeof(p->name), "engine_copy_bytes");
    snprintf(p->desc, sizeof(p->desc),
             "Bytes of the copies long enough to be shared with the copy helper thread "
             "(POSTBOX_COPY_HELP).");
    p = pvar_add(MPI_T_PVAR_CLASS_COUNTER, PB_MPI_T_CAT_ENGINE, read_copy_bytes, 1);
    snprintf(p->name, sizeof(p->name), "engine_copy_helper_bytes");
    snprintf(p->desc, sizeof(p->desc), "Bytes of those copies the copy helper thread copied.");
    for (int kind = 0; kind < PB_ENG_RMA_KINDS; kind++) {
        p = pvar_add(MPI_T_PVAR_CLASS_COUNTER, PB_MPI_T_CAT_RMA, read_rma_calls, kind);
        snprintf(p->name, sizeof(p->name), "rma_%s_calls", rma_names[kind]);
        snprintf(p->desc, sizeof(p->desc), "Calls of MPI_%c%s%s this process made as an origin.",
                 rma_names[kind][0] - 'a' + 'A', rma_names[kind] + 1,
                 kind < PB_ENG_RMA_FETCH_AND_OP ? " and of its request-based form" : "");
    }
    p = pvar_add(MPI_T_PVAR_CLASS_LEVEL, PB_MPI_T_CAT_COLL, read_scratch_kept, 0);
    snprintf(p->name, sizeof(p->name), "coll_scratch_kept_bytes");
    snprintf(p->desc, sizeof(p->desc),
             "Bytes of scratch memory the collectives keep for their next calls now.");
    for (int k = 0; k < PB_COLL_KINDS; k++) {
        for (int a = 0; a < PB_ALG_COUNT; a++) {
            if (!pb_coll_kind_has_alg((pb_coll_kind_t)k, (pb_coll_alg_t)a))
                continue;
            p = pvar_add(MPI_T_PVAR_CLASS_COUNTER, PB_MPI_T_CAT_COLL, read_coll_runs,
                         k * PB_ALG_COUNT + a);
            snprintf(p->name, sizeof(p->name), "coll_%s_%s", pb_coll_kind_name((pb_coll_kind_t)k),
                     pb_coll_alg_name((pb_coll_alg_t)a));
            snprintf(p->desc, sizeof(p->desc),
                     "Times this process ran %s with the %s algorithm since MPI_Init.",
                     pb_coll_kind_name((pb_coll_kind_t)k), pb_coll_alg_name((pb_coll_alg_t)a));
        }
    }
}

static void build(void)
{
    if (tools.built)
        return;
    cvars_add(pb_config_table());
    cvars_add(pb_eng_tunables_table());
    pvars_list();
    pb_mpi_t_events_build();
    tools.built = 1;
}

/* Lock, and say whether MPI_T is initialized. */
static int enter(void)
{
    pthread_mutex_lock(&tools.lock);
    return tools.inits > 0 ? MPI_SUCCESS : MPI_T_ERR_NOT_INITIALIZED;
}

static int leave(int rc)
{
    pthread_mutex_unlock(&tools.lock);
    return rc;
}

/* Return string @s in @buf of *@len chars as the standard's convention for
 * strings says: at most *@len - 1 chars and a null; *@len the length of @s
 * plus one; nothing when @len is NULL. */
static void put_string(const char *s, char *buf, int *len)
{
    size_t n = strlen(s);

    if (len == NULL)
        return;
    if (buf != NULL && *len > 0) {
        size_t k = n < (size_t)*len - 1 ? n : (size_t)*len - 1;

        memcpy(buf, s, k);
        buf[k] = '\0';
    }
    *len = (int)n + 1;
}

int pb_mpi_t_enter(void)
{
    return enter();
}

int pb_mpi_t_leave(int rc)
{
    return leave(rc);
}

void pb_mpi_t_put_string(const char *s, char *buf, int *len)
{
    put_string(s, buf, len);
}

/* ---- initialization ------------------------------------------------------ */

/* Initialize MPI_T (reference-counted: each call needs its MPI_T_finalize);
 * any time, before MPI_Init and after MPI_Finalize too.  *@provided = @required
 * (every level is supported).  @return MPI_SUCCESS; MPI_T_ERR_INVALID (a
 * @required that is no thread level, NULL @provided). */
PB_EXPORT int PMPI_T_init_thread(int required, int *provided)
{
    PB_MPI_THREAD_GUARD;
    if (provided == NULL || (required != MPI_THREAD_SINGLE && required != MPI_THREAD_FUNNELED &&
                             required != MPI_THREAD_SERIALIZED && required != MPI_THREAD_MULTIPLE))
        return MPI_T_ERR_INVALID;
    pthread_mutex_lock(&tools.lock);
    build();
    tools.inits++;
    *provided = required;
    return leave(MPI_SUCCESS);
}
PB_MPI_WEAK_ALIAS(MPI_T_init_thread, PMPI_T_init_thread);

static void session_free(struct MPI_T_pvar_session_t *s)
{
    while (s->handles != NULL) {
        struct MPI_T_pvar_handle_t *h = s->handles;

        s->handles = h->next;
        if (h->started && !tools.pvars[h->pvar].continuous)
            atomic_fetch_sub_explicit(&pb_eng_stats.timers, 1, memory_order_relaxed);
        free(h);
    }
    free(s);
}

/* Undo one MPI_T_init_thread; the last one frees every handle and session.
 * @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED. */
PB_EXPORT int PMPI_T_finalize(void)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc != MPI_SUCCESS)
        return leave(rc);
    if (--tools.inits == 0) {
        pb_mpi_t_events_finalize();
        while (tools.cvar_handles != NULL) {
            struct MPI_T_cvar_handle_t *h = tools.cvar_handles;

            tools.cvar_handles = h->next;
            free(h);
        }
        while (tools.sessions != NULL) {
            struct MPI_T_pvar_session_t *s = tools.sessions;

            tools.sessions = s->next;
            session_free(s);
        }
    }
    return leave(MPI_SUCCESS);
}
PB_MPI_WEAK_ALIAS(MPI_T_finalize, PMPI_T_finalize);

/* ---- enumerations -------------------------------------------------------- */

static int enum_valid(MPI_T_enum e)
{
    if (e != NULL && e == pb_mpi_t_event_enum())
        return 1;
    for (size_t i = 0; i < sizeof(enums) / sizeof(enums[0]); i++) {
        if (e == enums[i])
            return 1;
    }
    return 0;
}

/* The number of items and the name of enumeration @enumtype.  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_HANDLE. */
PB_EXPORT int PMPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && !enum_valid(enumtype))
        rc = MPI_T_ERR_INVALID_HANDLE;
    if (rc == MPI_SUCCESS) {
        if (num != NULL)
            *num = enumtype->count;
        put_string(enumtype->name, name, name_len);
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_enum_get_info, PMPI_T_enum_get_info);

/* Item @indx of @enumtype: its value and name.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_INVALID_INDEX. */
PB_EXPORT int PMPI_T_enum_get_item(MPI_T_enum enumtype, int indx, int *value, char *name,
                                   int *name_len)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && !enum_valid(enumtype))
        rc = MPI_T_ERR_INVALID_HANDLE;
    else if (rc == MPI_SUCCESS && (indx < 0 || indx >= enumtype->count))
        rc = MPI_T_ERR_INVALID_INDEX;
    if (rc == MPI_SUCCESS) {
        if (value != NULL)
            *value = enumtype->items[indx].value;
        put_string(enumtype->items[indx].name, name, name_len);
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_enum_get_item, PMPI_T_enum_get_item);

/* ---- control variables --------------------------------------------------- */

static MPI_Datatype cvar_datatype(const cvar_t *v)
{
    return v->meta->kind == VAL_INT     ? MPI_INT
           : v->meta->kind == VAL_ULONG ? MPI_UNSIGNED_LONG
                                        : MPI_CHAR;
}

/* The number of control variables.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL). */
PB_EXPORT int PMPI_T_cvar_get_num(int *num_cvar)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && num_cvar == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        *num_cvar = tools.ncvars;
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_cvar_get_num, PMPI_T_cvar_get_num);

/* What control variable @cvar_index is; a NULL output is skipped.  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_INDEX. */
PB_EXPORT int PMPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity,
                                   MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc,
                                   int *desc_len, int *bind, int *scope)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && (cvar_index < 0 || cvar_index >= tools.ncvars))
        rc = MPI_T_ERR_INVALID_INDEX;
    if (rc == MPI_SUCCESS) {
        const cvar_t *v = &tools.cvars[cvar_index];

        put_string(v->entry->name, name, name_len);
        put_string(v->entry->help, desc, desc_len);
        if (verbosity != NULL)
            *verbosity = v->meta->verbosity;
        if (datatype != NULL)
            *datatype = cvar_datatype(v);
        if (enumtype != NULL)
            *enumtype = v->meta->enumtype != NULL ? (MPI_T_enum)v->meta->enumtype : MPI_T_ENUM_NULL;
        if (bind != NULL)
            *bind = MPI_T_BIND_NO_OBJECT;
        if (scope != NULL)
            *scope = v->meta->scope;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_cvar_get_info, PMPI_T_cvar_get_info);

/* *@cvar_index = the index of the control variable named @name.  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL),
 * MPI_T_ERR_INVALID_NAME. */
PB_EXPORT int PMPI_T_cvar_get_index(const char *name, int *cvar_index)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && (name == NULL || cvar_index == NULL))
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS) {
        rc = MPI_T_ERR_INVALID_NAME;
        for (int i = 0; i < tools.ncvars; i++) {
            if (strcmp(tools.cvars[i].entry->name, name) == 0) {
                *cvar_index = i;
                rc = MPI_SUCCESS;
                break;
            }
        }
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_cvar_get_index, PMPI_T_cvar_get_index);

/* A handle on control variable @cvar_index (no object is bound: @obj_handle
 * is ignored); *@count = its elements (PB_MPI_T_STRING_MAX chars for
 * MPI_CHAR).  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID (NULL), MPI_T_ERR_MEMORY. */
PB_EXPORT int PMPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle,
                                       int *count)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();
    struct MPI_T_cvar_handle_t *h = NULL;

    (void)obj_handle;
    if (rc == MPI_SUCCESS && (cvar_index < 0 || cvar_index >= tools.ncvars))
        rc = MPI_T_ERR_INVALID_INDEX;
    else if (rc == MPI_SUCCESS && (handle == NULL || count == NULL))
        rc = MPI_T_ERR_INVALID;
    else if (rc == MPI_SUCCESS && (h = malloc(sizeof(*h))) == NULL)
        rc = MPI_T_ERR_MEMORY;
    if (rc == MPI_SUCCESS) {
        h->cvar = cvar_index;
        h->next = tools.cvar_handles;
        tools.cvar_handles = h;
        *handle = h;
        *count = tools.cvars[cvar_index].meta->kind == VAL_STRING ? PB_MPI_T_STRING_MAX : 1;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_cvar_handle_alloc, PMPI_T_cvar_handle_alloc);

/* Unlink @h from the live control-variable handles.  @return 1 if it was one. */
static int cvar_handle_unlink(MPI_T_cvar_handle h)
{
    for (struct MPI_T_cvar_handle_t **p = &tools.cvar_handles; *p != NULL; p = &(*p)->next) {
        if (*p == h) {
            *p = h->next;
            return 1;
        }
    }
    return 0;
}

static int cvar_handle_valid(MPI_T_cvar_handle h)
{
    for (struct MPI_T_cvar_handle_t *x = tools.cvar_handles; x != NULL; x = x->next) {
        if (x == h)
            return 1;
    }
    return 0;
}

/* Free *@handle and set it to MPI_T_CVAR_HANDLE_NULL.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL), MPI_T_ERR_INVALID_HANDLE. */
PB_EXPORT int PMPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && handle == NULL)
        rc = MPI_T_ERR_INVALID;
    else if (rc == MPI_SUCCESS && !cvar_handle_unlink(*handle))
        rc = MPI_T_ERR_INVALID_HANDLE;
    if (rc == MPI_SUCCESS) {
        free(*handle);
        *handle = MPI_T_CVAR_HANDLE_NULL;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_cvar_handle_free, PMPI_T_cvar_handle_free);

/* The value of integer variable @v: the one in force between MPI_Init and
 * MPI_Finalize, else the one MPI_Init would take (the environment's or the
 * default, before any clamping). */
static long cvar_value(const cvar_t *v)
{
    const char *params = (const char *)&pb_eng_params;

    if (v->meta->in == IN_COLL_STATS)
        return pb_coll_stats_get();
    if (v->meta->in == IN_PARAMS && pb_mpi_active()) {
        if (v->meta->kind == VAL_ULONG)
            return (long)*(const size_t *)(params + v->meta->offset);
        return *(const int *)(params + v->meta->offset);
    }
    return pb_config_table_get_long(v->table, v->entry->name);
}

/* Read the value of the control variable of @handle into @buf (one int,
 * one unsigned long, or up to PB_MPI_T_STRING_MAX chars with the null).
 * @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_HANDLE,
 * MPI_T_ERR_INVALID (NULL @buf). */
PB_EXPORT int PMPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && !cvar_handle_valid(handle))
        rc = MPI_T_ERR_INVALID_HANDLE;
    else if (rc == MPI_SUCCESS && buf == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS) {
        const cvar_t *v = &tools.cvars[handle->cvar];

        if (v->meta->kind == VAL_STRING) {
            const char *s = pb_config_table_get_string(v->table, v->entry->name);
            int len = PB_MPI_T_STRING_MAX;

            put_string(s == NULL || v->meta->secret ? "" : s, buf, &len);
        } else if (v->meta->kind == VAL_ULONG) {
            *(unsigned long *)buf = (unsigned long)cvar_value(v);
        } else {
            *(int *)buf = (int)cvar_value(v);
        }
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_cvar_read, PMPI_T_cvar_read);

/* Set writable variable @v to @value (in its range: checked). */
static int cvar_set(const cvar_t *v, long value)
{
    char *params = (char *)&pb_eng_params;
    long min = 0, max = 0;

    if (!pb_eng_tunables_range(v->entry->name, &min, &max) || value < min || value > max)
        return MPI_T_ERR_INVALID;
    if (v->meta->in == IN_COLL_STATS)
        pb_coll_stats_set((int)value);
    else if (v->meta->kind == VAL_ULONG)
        *(size_t *)(params + v->meta->offset) = (size_t)value;
    else
        *(int *)(params + v->meta->offset) = (int)value;
    return MPI_SUCCESS;
}

/* Write @buf (as cvar_read) to the control variable of @handle.  Only the
 * variables of scope MPI_T_SCOPE_LOCAL are writable, between MPI_Init and
 * MPI_Finalize.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_CVAR_SET_NEVER (not writable),
 * MPI_T_ERR_CVAR_SET_NOT_NOW (outside MPI_Init..MPI_Finalize),
 * MPI_T_ERR_INVALID (NULL @buf, a value out of the tunable's range). */
PB_EXPORT int PMPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();
    const cvar_t *v = NULL;

    if (rc == MPI_SUCCESS && !cvar_handle_valid(handle))
        rc = MPI_T_ERR_INVALID_HANDLE;
    if (rc == MPI_SUCCESS) {
        v = &tools.cvars[handle->cvar];
        if (v->meta->scope != MPI_T_SCOPE_LOCAL)
            rc = MPI_T_ERR_CVAR_SET_NEVER;
        else if (!pb_mpi_active())
            rc = MPI_T_ERR_CVAR_SET_NOT_NOW;
        else if (buf == NULL)
            rc = MPI_T_ERR_INVALID;
    }
    if (rc == MPI_SUCCESS) {
        unsigned long wide = v->meta->kind == VAL_ULONG ? *(const unsigned long *)buf : 0;

        if (v->meta->kind == VAL_ULONG)
            rc = wide > (unsigned long)LONG_MAX ? MPI_T_ERR_INVALID : cvar_set(v, (long)wide);
        else
            rc = cvar_set(v, *(const int *)buf);
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_cvar_write, PMPI_T_cvar_write);

/* ---- performance variables ----------------------------------------------- */

/* The number of performance variables.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL). */
PB_EXPORT int PMPI_T_pvar_get_num(int *num_pvar)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && num_pvar == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        *num_pvar = tools.npvars;
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_get_num, PMPI_T_pvar_get_num);

/* What performance variable @pvar_index is; a NULL output is skipped.
 * @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_INDEX. */
PB_EXPORT int PMPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity,
                                   int *var_class, MPI_Datatype *datatype, MPI_T_enum *enumtype,
                                   char *desc, int *desc_len, int *bind, int *readonly,
                                   int *continuous, int *atomic)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && (pvar_index < 0 || pvar_index >= tools.npvars))
        rc = MPI_T_ERR_INVALID_INDEX;
    if (rc == MPI_SUCCESS) {
        const pvar_t *p = &tools.pvars[pvar_index];

        put_string(p->name, name, name_len);
        put_string(p->desc, desc, desc_len);
        if (verbosity != NULL)
            *verbosity = p->verbosity;
        if (var_class != NULL)
            *var_class = p->cls;
        if (datatype != NULL)
            *datatype = p->seconds ? MPI_DOUBLE : MPI_UNSIGNED_LONG_LONG;
        if (enumtype != NULL)
            *enumtype = MPI_T_ENUM_NULL;
        if (bind != NULL)
            *bind = MPI_T_BIND_NO_OBJECT;
        if (readonly != NULL)
            *readonly = p->readonly;
        if (continuous != NULL)
            *continuous = p->continuous;
        if (atomic != NULL)
            *atomic = p->atomic;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_get_info, PMPI_T_pvar_get_info);

/* *@pvar_index = the index of the performance variable named @name of
 * class @var_class.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID (NULL), MPI_T_ERR_INVALID_NAME. */
PB_EXPORT int PMPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && (name == NULL || pvar_index == NULL))
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS) {
        rc = MPI_T_ERR_INVALID_NAME;
        for (int i = 0; i < tools.npvars; i++) {
            if (tools.pvars[i].cls == var_class && strcmp(tools.pvars[i].name, name) == 0) {
                *pvar_index = i;
                rc = MPI_SUCCESS;
                break;
            }
        }
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_get_index, PMPI_T_pvar_get_index);

/* A new performance experiment session in *@session.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL), MPI_T_ERR_MEMORY. */
PB_EXPORT int PMPI_T_pvar_session_create(MPI_T_pvar_session *session)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();
    struct MPI_T_pvar_session_t *s = NULL;

    if (rc == MPI_SUCCESS && session == NULL)
        rc = MPI_T_ERR_INVALID;
    else if (rc == MPI_SUCCESS && (s = calloc(1, sizeof(*s))) == NULL)
        rc = MPI_T_ERR_MEMORY;
    if (rc == MPI_SUCCESS) {
        s->next = tools.sessions;
        tools.sessions = s;
        *session = s;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_session_create, PMPI_T_pvar_session_create);

static int session_valid(MPI_T_pvar_session session)
{
    for (struct MPI_T_pvar_session_t *s = tools.sessions; s != NULL; s = s->next) {
        if (s == session)
            return 1;
    }
    return 0;
}

/* Free *@session with its handles; *@session = MPI_T_PVAR_SESSION_NULL.
 * @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL),
 * MPI_T_ERR_INVALID_SESSION. */
PB_EXPORT int PMPI_T_pvar_session_free(MPI_T_pvar_session *session)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && session == NULL)
        rc = MPI_T_ERR_INVALID;
    else if (rc == MPI_SUCCESS && !session_valid(*session))
        rc = MPI_T_ERR_INVALID_SESSION;
    if (rc == MPI_SUCCESS) {
        for (struct MPI_T_pvar_session_t **p = &tools.sessions; *p != NULL; p = &(*p)->next) {
            if (*p == *session) {
                *p = (*session)->next;
                break;
            }
        }
        session_free(*session);
        *session = MPI_T_PVAR_SESSION_NULL;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_session_free, PMPI_T_pvar_session_free);

static uint64_t pvar_now(const struct MPI_T_pvar_handle_t *h)
{
    const pvar_t *p = &tools.pvars[h->pvar];

    return p->read(p->arg);
}

/* The value @h shows when the variable reads @now. */
static uint64_t handle_value(const struct MPI_T_pvar_handle_t *h, uint64_t now)
{
    if (tools.pvars[h->pvar].readonly)
        return now;
    if (!h->started)
        return h->acc;
    /* a count below the base started again (MPI_Finalize, then MPI_Init) */
    return h->acc + (now >= h->base ? now - h->base : now);
}

static void handle_put(const struct MPI_T_pvar_handle_t *h, uint64_t value, void *buf)
{
    if (tools.pvars[h->pvar].seconds)
        *(double *)buf = (double)value * 1e-9;
    else
        *(unsigned long long *)buf = value;
}

/* A handle on performance variable @pvar_index in @session (no object is
 * bound: @obj_handle is ignored); *@count = 1.  A continuous variable
 * counts from the process's start; a timer starts stopped at 0.  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_SESSION,
 * MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID (NULL), MPI_T_ERR_MEMORY. */
PB_EXPORT int PMPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                                       MPI_T_pvar_handle *handle, int *count)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();
    struct MPI_T_pvar_handle_t *h = NULL;

    (void)obj_handle;
    if (rc == MPI_SUCCESS && !session_valid(session))
        rc = MPI_T_ERR_INVALID_SESSION;
    else if (rc == MPI_SUCCESS && (pvar_index < 0 || pvar_index >= tools.npvars))
        rc = MPI_T_ERR_INVALID_INDEX;
    else if (rc == MPI_SUCCESS && (handle == NULL || count == NULL))
        rc = MPI_T_ERR_INVALID;
    else if (rc == MPI_SUCCESS && (h = calloc(1, sizeof(*h))) == NULL)
        rc = MPI_T_ERR_MEMORY;
    if (rc == MPI_SUCCESS) {
        h->session = session;
        h->pvar = pvar_index;
        h->started = tools.pvars[pvar_index].continuous;
        h->next = session->handles;
        session->handles = h;
        *handle = h;
        *count = 1;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_handle_alloc, PMPI_T_pvar_handle_alloc);

/* Check @session and @handle (MPI_T_PVAR_ALL_HANDLES only where @all_ok). */
static int check_handle(MPI_T_pvar_session session, MPI_T_pvar_handle handle, int all_ok)
{
    if (!session_valid(session))
        return MPI_T_ERR_INVALID_SESSION;
    if (handle == MPI_T_PVAR_ALL_HANDLES)
        return all_ok ? MPI_SUCCESS : MPI_T_ERR_INVALID_HANDLE;
    for (struct MPI_T_pvar_handle_t *h = session->handles; h != NULL; h = h->next) {
        if (h == handle)
            return MPI_SUCCESS;
    }
    return MPI_T_ERR_INVALID_HANDLE;
}

/* Free *@handle of @session; *@handle = MPI_T_PVAR_HANDLE_NULL.  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL),
 * MPI_T_ERR_INVALID_SESSION, MPI_T_ERR_INVALID_HANDLE. */
PB_EXPORT int PMPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && handle == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        rc = check_handle(session, *handle, 0);
    if (rc == MPI_SUCCESS) {
        struct MPI_T_pvar_handle_t *h = *handle;

        for (struct MPI_T_pvar_handle_t **p = &session->handles; *p != NULL; p = &(*p)->next) {
            if (*p == h) {
                *p = h->next;
                break;
            }
        }
        if (h->started && !tools.pvars[h->pvar].continuous)
            atomic_fetch_sub_explicit(&pb_eng_stats.timers, 1, memory_order_relaxed);
        free(h);
        *handle = MPI_T_PVAR_HANDLE_NULL;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_handle_free, PMPI_T_pvar_handle_free);

static void handle_start(struct MPI_T_pvar_handle_t *h)
{
    if (h->started)
        return;
    atomic_fetch_add_explicit(&pb_eng_stats.timers, 1, memory_order_relaxed);
    h->base = pvar_now(h);
    h->started = 1;
}

static void handle_stop(struct MPI_T_pvar_handle_t *h)
{
    if (!h->started)
        return;
    h->acc = handle_value(h, pvar_now(h));
    h->started = 0;
    atomic_fetch_sub_explicit(&pb_eng_stats.timers, 1, memory_order_relaxed);
}

/* Start (@start 1) or stop (0) @handle, or every handle of @session on a
 * variable that is not continuous (MPI_T_PVAR_ALL_HANDLES). */
static int start_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle, int start)
{
    int rc = enter();

    if (rc == MPI_SUCCESS)
        rc = check_handle(session, handle, 1);
    if (rc == MPI_SUCCESS && handle != MPI_T_PVAR_ALL_HANDLES &&
        tools.pvars[handle->pvar].continuous)
        rc = MPI_T_ERR_PVAR_NO_STARTSTOP;
    if (rc == MPI_SUCCESS) {
        for (struct MPI_T_pvar_handle_t *h = session->handles; h != NULL; h = h->next) {
            if ((handle == MPI_T_PVAR_ALL_HANDLES && !tools.pvars[h->pvar].continuous) ||
                h == handle) {
                if (start)
                    handle_start(h);
                else
                    handle_stop(h);
            }
        }
    }
    return leave(rc);
}

/* Start @handle of @session (or every one not continuous:
 * MPI_T_PVAR_ALL_HANDLES).  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_SESSION, MPI_T_ERR_INVALID_HANDLE,
 * MPI_T_ERR_PVAR_NO_STARTSTOP (a continuous variable). */
PB_EXPORT int PMPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    PB_MPI_THREAD_GUARD;

    return start_stop(session, handle, 1);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_start, PMPI_T_pvar_start);

/* Stop @handle, as MPI_T_pvar_start starts it; errors as MPI_T_pvar_start. */
PB_EXPORT int PMPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    PB_MPI_THREAD_GUARD;

    return start_stop(session, handle, 0);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_stop, PMPI_T_pvar_stop);

/* Read the value of @handle into @buf (one unsigned long long, or one
 * double for engine_wait_time).  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_SESSION,
 * MPI_T_ERR_INVALID_HANDLE (also MPI_T_PVAR_ALL_HANDLES), MPI_T_ERR_INVALID
 * (NULL @buf). */
PB_EXPORT int PMPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS)
        rc = check_handle(session, handle, 0);
    if (rc == MPI_SUCCESS && buf == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        handle_put(handle, handle_value(handle, pvar_now(handle)), buf);
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_read, PMPI_T_pvar_read);

/* Set what @handle shows to @value from now on (the variable itself is the
 * engine's: only this handle's view changes). */
static void handle_set(struct MPI_T_pvar_handle_t *h, uint64_t value, uint64_t now)
{
    h->acc = value;
    h->base = now;
}

/* Write @buf (as MPI_T_pvar_read reads it) as the value of @handle.
 * @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_SESSION,
 * MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_PVAR_NO_WRITE (a read-only variable),
 * MPI_T_ERR_INVALID (NULL @buf, a negative or not finite time). */
PB_EXPORT int PMPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                                const void *buf)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS)
        rc = check_handle(session, handle, 0);
    if (rc == MPI_SUCCESS && tools.pvars[handle->pvar].readonly)
        rc = MPI_T_ERR_PVAR_NO_WRITE;
    else if (rc == MPI_SUCCESS && buf == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS && tools.pvars[handle->pvar].seconds) {
        double seconds = *(const double *)buf;

        if (!(seconds >= 0 && seconds < 1e9))
            rc = MPI_T_ERR_INVALID;
        else
            handle_set(handle, (uint64_t)(seconds * 1e9), pvar_now(handle));
    } else if (rc == MPI_SUCCESS) {
        handle_set(handle, *(const unsigned long long *)buf, pvar_now(handle));
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_write, PMPI_T_pvar_write);

/* Reset @handle to 0 (or every handle of @session that can be:
 * MPI_T_PVAR_ALL_HANDLES, which skips the read-only ones).  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_SESSION,
 * MPI_T_ERR_INVALID_HANDLE, MPI_T_ERR_PVAR_NO_WRITE (a read-only variable). */
PB_EXPORT int PMPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS)
        rc = check_handle(session, handle, 1);
    if (rc == MPI_SUCCESS && handle != MPI_T_PVAR_ALL_HANDLES && tools.pvars[handle->pvar].readonly)
        rc = MPI_T_ERR_PVAR_NO_WRITE;
    if (rc == MPI_SUCCESS) {
        for (struct MPI_T_pvar_handle_t *h = session->handles; h != NULL; h = h->next) {
            if ((handle == MPI_T_PVAR_ALL_HANDLES && !tools.pvars[h->pvar].readonly) || h == handle)
                handle_set(h, 0, pvar_now(h));
        }
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_reset, PMPI_T_pvar_reset);

/* Read @handle into @buf and reset it to 0, from one reading of the
 * variable: no count falls between.  @return MPI_SUCCESS; errors as
 * MPI_T_pvar_read, and MPI_T_ERR_PVAR_NO_WRITE (a read-only variable),
 * MPI_T_ERR_PVAR_NO_ATOMIC (not one of the atomic ones). */
PB_EXPORT int PMPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS)
        rc = check_handle(session, handle, 0);
    if (rc == MPI_SUCCESS && tools.pvars[handle->pvar].readonly)
        rc = MPI_T_ERR_PVAR_NO_WRITE;
    else if (rc == MPI_SUCCESS && !tools.pvars[handle->pvar].atomic)
        rc = MPI_T_ERR_PVAR_NO_ATOMIC;
    else if (rc == MPI_SUCCESS && buf == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS) {
        uint64_t now = pvar_now(handle);

        handle_put(handle, handle_value(handle, now), buf);
        handle_set(handle, 0, now);
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_pvar_readreset, PMPI_T_pvar_readreset);

/* ---- the time source ----------------------------------------------------- */

/* *@num_sources = 1: the process's clock.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL). */
PB_EXPORT int PMPI_T_source_get_num(int *num_sources)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && num_sources == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        *num_sources = 1;
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_source_get_num, PMPI_T_source_get_num);

/* Source 0: "postbox_clock", ordered, 10^9 ticks a second (CLOCK_MONOTONIC
 * in nanoseconds); *@info = MPI_INFO_NULL (it has no hints).  A NULL output
 * is skipped.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_INDEX. */
PB_EXPORT int PMPI_T_source_get_info(int source_index, char *name, int *name_len, char *desc,
                                     int *desc_len, MPI_T_source_order *ordering,
                                     MPI_Count *ticks_per_second, MPI_Count *max_ticks,
                                     MPI_Info *info)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && source_index != 0)
        rc = MPI_T_ERR_INVALID_INDEX;
    if (rc == MPI_SUCCESS) {
        put_string("postbox_clock", name, name_len);
        put_string("The process's monotonic clock (CLOCK_MONOTONIC), in nanoseconds.", desc,
                   desc_len);
        if (ordering != NULL)
            *ordering = MPI_T_SOURCE_ORDERED;
        if (ticks_per_second != NULL)
            *ticks_per_second = 1000000000;
        if (max_ticks != NULL)
            *max_ticks = INT64_MAX;
        if (info != NULL)
            *info = MPI_INFO_NULL;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_source_get_info, PMPI_T_source_get_info);

/* *@timestamp = source @source_index's time now.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID (NULL). */
PB_EXPORT int PMPI_T_source_get_timestamp(int source_index, MPI_Count *timestamp)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && source_index != 0)
        rc = MPI_T_ERR_INVALID_INDEX;
    else if (rc == MPI_SUCCESS && timestamp == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        *timestamp = (MPI_Count)pb_eng_stats_now_ns();
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_source_get_timestamp, PMPI_T_source_get_timestamp);

/* ---- categories ---------------------------------------------------------- */

/* The number of categories.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID (NULL). */
PB_EXPORT int PMPI_T_category_get_num(int *num_cat)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && num_cat == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        *num_cat = PB_MPI_T_CATEGORIES;
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_category_get_num, PMPI_T_category_get_num);

/* The control variables (@pvars 0) or performance variables (1) of category
 * @cat: the first @len indices into @indices (when not NULL); @return how
 * many there are. */
static int category_members(int cat, int pvars, int len, int indices[])
{
    int n = 0, total = pvars ? tools.npvars : tools.ncvars;

    for (int i = 0; i < total; i++) {
        int in = pvars ? tools.pvars[i].category : tools.cvars[i].meta->category;

        if (in != cat)
            continue;
        if (indices != NULL && n < len)
            indices[n] = i;
        n++;
    }
    return n;
}

/* What category @cat_index is: its name, description and how many control
 * and performance variables it holds (it holds no categories); a NULL
 * output is skipped.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_INDEX. */
PB_EXPORT int PMPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc,
                                       int *desc_len, int *num_cvars, int *num_pvars,
                                       int *num_categories)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && (cat_index < 0 || cat_index >= PB_MPI_T_CATEGORIES))
        rc = MPI_T_ERR_INVALID_INDEX;
    if (rc == MPI_SUCCESS) {
        put_string(categories[cat_index].name, name, name_len);
        put_string(categories[cat_index].desc, desc, desc_len);
        if (num_cvars != NULL)
            *num_cvars = category_members(cat_index, 0, 0, NULL);
        if (num_pvars != NULL)
            *num_pvars = category_members(cat_index, 1, 0, NULL);
        if (num_categories != NULL)
            *num_categories = 0;
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_category_get_info, PMPI_T_category_get_info);

/* *@num_events = how many events category @cat_index holds.  @return MPI_SUCCESS;
 * MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID (NULL). */
PB_EXPORT int PMPI_T_category_get_num_events(int cat_index, int *num_events)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && (cat_index < 0 || cat_index >= PB_MPI_T_CATEGORIES))
        rc = MPI_T_ERR_INVALID_INDEX;
    else if (rc == MPI_SUCCESS && num_events == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        *num_events = pb_mpi_t_category_events(cat_index, 0, NULL);
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_category_get_num_events, PMPI_T_category_get_num_events);

/* *@cat_index = the index of the category named @name.  @return
 * MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED, MPI_T_ERR_INVALID (NULL),
 * MPI_T_ERR_INVALID_NAME. */
PB_EXPORT int PMPI_T_category_get_index(const char *name, int *cat_index)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && (name == NULL || cat_index == NULL))
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS) {
        rc = MPI_T_ERR_INVALID_NAME;
        for (int i = 0; i < PB_MPI_T_CATEGORIES; i++) {
            if (strcmp(categories[i].name, name) == 0) {
                *cat_index = i;
                rc = MPI_SUCCESS;
                break;
            }
        }
    }
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_category_get_index, PMPI_T_category_get_index);

/* Check the arguments common to the MPI_T_category_get_<members> calls. */
static int check_members(int cat_index, int len, const int indices[])
{
    if (cat_index < 0 || cat_index >= PB_MPI_T_CATEGORIES)
        return MPI_T_ERR_INVALID_INDEX;
    if (len < 0 || (len > 0 && indices == NULL))
        return MPI_T_ERR_INVALID;
    return MPI_SUCCESS;
}

/* The indices of the first @len control variables of category @cat_index
 * into @indices.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID_INDEX, MPI_T_ERR_INVALID (negative @len, NULL @indices). */
PB_EXPORT int PMPI_T_category_get_cvars(int cat_index, int len, int indices[])
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS)
        rc = check_members(cat_index, len, indices);
    if (rc == MPI_SUCCESS)
        category_members(cat_index, 0, len, indices);
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_category_get_cvars, PMPI_T_category_get_cvars);

/* MPI_T_category_get_cvars for performance variables; the same errors. */
PB_EXPORT int PMPI_T_category_get_pvars(int cat_index, int len, int indices[])
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS)
        rc = check_members(cat_index, len, indices);
    if (rc == MPI_SUCCESS)
        category_members(cat_index, 1, len, indices);
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_category_get_pvars, PMPI_T_category_get_pvars);

/* MPI_T_category_get_cvars for events; the same errors. */
PB_EXPORT int PMPI_T_category_get_events(int cat_index, int len, int indices[])
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS)
        rc = check_members(cat_index, len, indices);
    if (rc == MPI_SUCCESS)
        pb_mpi_t_category_events(cat_index, len, indices);
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_category_get_events, PMPI_T_category_get_events);

/* MPI_T_category_get_cvars for the categories a category holds: none; the
 * same errors. */
PB_EXPORT int PMPI_T_category_get_categories(int cat_index, int len, int indices[])
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS)
        rc = check_members(cat_index, len, indices);
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_category_get_categories, PMPI_T_category_get_categories);

/* *@update_number = 1: the variables and categories never change while the
 * process lives.  @return MPI_SUCCESS; MPI_T_ERR_NOT_INITIALIZED,
 * MPI_T_ERR_INVALID (NULL). */
PB_EXPORT int PMPI_T_category_changed(int *update_number)
{
    PB_MPI_THREAD_GUARD;
    int rc = enter();

    if (rc == MPI_SUCCESS && update_number == NULL)
        rc = MPI_T_ERR_INVALID;
    if (rc == MPI_SUCCESS)
        *update_number = 1;
    return leave(rc);
}
PB_MPI_WEAK_ALIAS(MPI_T_category_changed, PMPI_T_category_changed);
