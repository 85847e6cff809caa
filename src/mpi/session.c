/*
 * The Sessions Model (MPI-5.0, chapter "Process Initialization, Creation,
 * and Management"): sessions, their process sets
 * and error handlers, and MPI_Comm_create_from_group, which makes a
 * communicator from a group without a parent communicator.
 *
 * A session is an object of the handle registry (PB_ENG_HANDLE_SESSION):
 * its error handler and thread level.  MPI_Session_init takes a reference
 * on the engine (comm.h: pb_mpi_instance_start; the first one, of a
 * session or of MPI_Init, starts it), MPI_Session_finalize drops it (the
 * last one stops it).
 *
 * The process sets a session lists are those this process is a member of,
 * as MPI_Session_get_num_psets says:
 *   0  mpi://WORLD           every process of the job
 *   1  mpi://SELF            this process
 *   2  postbox://node/<k>    the processes of this process's node k as the
 *                            launcher placed them (a virtual node of
 *                            `postbox run --nodes` is a node), ascending
 * Every node's set can be named (k from 0 to nodes - 1), listed or not.
 * Names compare without regard to case.  The standard keeps "mpi://" for
 * its own names, so the node sets take the library's scheme.
 *
 * MPI_Comm_create_from_group agrees on a context id among the group's
 * processes alone (docs/mpi.md, "Sessions"): they exchange messages on a
 * context kept for this bootstrap (FROM_GROUP_CONTEXT), with a tag derived
 * from the stringtag; the group's rank 0 gathers every member's lowest
 * free context id, with the stringtag and a digest of the group to check
 * that all called for the same communicator, and answers the largest.
 */
#include <limits.h>
#include <postbox/job.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mpi/comm.h"
#include "mpi/engine/handle.h"
#include "mpi/group.h"
#include "mpi/info.h"
#include "mpi/p2p.h"

typedef struct MPI_ABI_Session pb_session_t;

struct MPI_ABI_Session {
    MPI_Errhandler errhandler;
    int thread_level; /* granted for the "thread_level" asked at MPI_Session_init */
};

#define PSET_WORLD "mpi://WORLD"
#define PSET_SELF "mpi://SELF"
#define PSET_NODE "postbox://node/"

/* The context MPI_Comm_create_from_group's processes talk on (and the next
 * one, which the exchange uses): above any a communicator gets, which
 * count up from 4 by 2. */
#define FROM_GROUP_CONTEXT 0xfffffff0u

/* the thread levels by name (the ABI's values are not 0..3) */
static const struct {
    int level;
    const char *name;
} thread_levels[] = {{MPI_THREAD_SINGLE, "MPI_THREAD_SINGLE"},
                     {MPI_THREAD_FUNNELED, "MPI_THREAD_FUNNELED"},
                     {MPI_THREAD_SERIALIZED, "MPI_THREAD_SERIALIZED"},
                     {MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE"}};

/* ---- sessions ------------------------------------------------------------------ */

static pb_session_t *session_of(MPI_Session handle)
{
    if (handle == MPI_SESSION_NULL || !pb_eng_handle_valid(PB_ENG_HANDLE_SESSION, handle))
        return NULL;
    return (pb_session_t *)handle;
}

/* The session @handle, argument of @func, or MPI_ERR_SESSION raised (on
 * MPI_COMM_SELF's handler: there is no session to raise it on). */
static int session_arg(MPI_Session handle, const char *func, pb_session_t **s_p)
{
    *s_p = session_of(handle);
    if (*s_p != NULL)
        return MPI_SUCCESS;
    if (handle == MPI_SESSION_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_SESSION, func, "session is MPI_SESSION_NULL");
    return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_SESSION, func,
                        "session (%p) is not a session (finalized, or never initialized)",
                        (void *)handle);
}

/* Whether @info may be an info argument: MPI_INFO_NULL, MPI_INFO_ENV or a
 * live info. */
static int info_ok(MPI_Info info)
{
    return info == MPI_INFO_NULL || info == MPI_INFO_ENV ||
           pb_eng_handle_valid(PB_ENG_HANDLE_INFO, info);
}

/* The thread level named @value ("MPI_THREAD_FUNNELED"...), or @otherwise. */
static int thread_level_of(const char *value, int otherwise)
{
    for (size_t l = 0; value != NULL && l < PB_ARRAY_SIZE(thread_levels); l++) {
        if (strcasecmp(value, thread_levels[l].name) == 0)
            return thread_levels[l].level;
    }
    return otherwise;
}

/* The name of the thread level @level. */
static const char *thread_level_name(int level)
{
    for (size_t l = 0; l < PB_ARRAY_SIZE(thread_levels); l++) {
        if (thread_levels[l].level == level)
            return thread_levels[l].name;
    }
    return thread_levels[0].name;
}

/* Start a session: join the job and start the engine if nothing runs it
 * yet (collective over the job then).  @info's "thread_level" asks for a
 * thread level (MPI_THREAD_SINGLE when absent), granted as by
 * MPI_Init_thread.  @errhandler (predefined, or of
 * MPI_Session_create_errhandler) handles the session's errors, and this
 * call's.  @return MPI_SUCCESS; MPI_ERR_ERRHANDLER, MPI_ERR_INFO,
 * MPI_ERR_ARG (NULL @session), MPI_ERR_OTHER (no job, MPI_Finalize
 * called and no session live), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Session_init";
    pb_session_t *s;
    int rc;

    if (errhandler == MPI_ERRHANDLER_NULL || !pb_mpi_errhandler_valid_for_session(errhandler))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ERRHANDLER, func,
                            "errhandler (%p) is not an error handler for sessions (predefined, "
                            "or made by MPI_Session_create_errhandler)",
                            (void *)errhandler);
    if (session == NULL)
        return pb_mpi_raise_session(MPI_SESSION_NULL, errhandler, MPI_ERR_ARG, func,
                                    "session is NULL");
    if (!info_ok(info))
        return pb_mpi_raise_session(MPI_SESSION_NULL, errhandler, MPI_ERR_INFO, func,
                                    "info (%p) is not an info object", (void *)info);
    /* the handle first: a failure after the engine started would have to
     * stop it, which is collective */
    s = pb_eng_handle_new(PB_ENG_HANDLE_SESSION, sizeof(*s));
    if (s == NULL)
        return pb_mpi_raise_session(MPI_SESSION_NULL, errhandler, MPI_ERR_NO_MEM, func,
                                    "out of memory");
    rc = pb_mpi_instance_start(func);
    if (rc != MPI_SUCCESS) {
        pb_eng_handle_delete(PB_ENG_HANDLE_SESSION, s);
        return rc;
    }
    s->errhandler = errhandler;
    s->thread_level = pb_mpi_thread_level_grant(
        thread_level_of(pb_mpi_info_value(info, "thread_level"), MPI_THREAD_SINGLE));
    if (s->thread_level == MPI_THREAD_MULTIPLE)
        pb_eng_lock_use(1);
    *session = (MPI_Session)s;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_init, PMPI_Session_init);

/* End *@session and set it to MPI_SESSION_NULL; the last session to end
 * (when MPI_Init is not in force) stops the engine, collective over the
 * job.  The communicators made from its groups must be freed before.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL), MPI_ERR_SESSION. */
PB_EXPORT int PMPI_Session_finalize(MPI_Session *session)
{
    PB_MPI_THREAD_GUARD;
    pb_session_t *s;
    int rc, multiple;

    if (session == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Session_finalize", "session is NULL");
    rc = session_arg(*session, "MPI_Session_finalize", &s);
    if (rc != MPI_SUCCESS)
        return rc;
    multiple = s->thread_level == MPI_THREAD_MULTIPLE;
    pb_mpi_bsend_session_end(*session);
    pb_eng_handle_delete(PB_ENG_HANDLE_SESSION, s);
    *session = MPI_SESSION_NULL;
    pb_mpi_instance_stop();
    if (multiple)
        pb_eng_lock_use(0);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_finalize, PMPI_Session_finalize);

/* Store in *@info_used a new info object with what @session was given:
 * "thread_level" (the level granted) and "mpi_memory_alloc_kinds" (the
 * kinds of memory MPI accepts: "mpi,system").  The caller frees it.
 * @return MPI_SUCCESS; MPI_ERR_SESSION, MPI_ERR_ARG (NULL), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Session_get_info(MPI_Session session, MPI_Info *info_used)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Session_get_info";
    pb_session_t *s;
    MPI_Info info;
    int rc = session_arg(session, func, &s);

    if (rc != MPI_SUCCESS)
        return rc;
    if (info_used == NULL)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG, func, "info_used is NULL");
    rc = PMPI_Info_create(&info);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Info_set(info, "thread_level", thread_level_name(s->thread_level));
    if (rc == MPI_SUCCESS)
        rc = PMPI_Info_set(info, "mpi_memory_alloc_kinds", "mpi,system");
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise_session(session, s->errhandler, rc, func, "cannot fill the info");
    *info_used = info;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_get_info, PMPI_Session_get_info);

/* ---- error handlers ------------------------------------------------------------ */

/* Set @session's error handler to @errhandler (predefined, or of
 * MPI_Session_create_errhandler).
 * @return MPI_SUCCESS; MPI_ERR_SESSION, MPI_ERR_ERRHANDLER. */
PB_EXPORT int PMPI_Session_set_errhandler(MPI_Session session, MPI_Errhandler errhandler)
{
    PB_MPI_THREAD_GUARD;
    pb_session_t *s;
    int rc = session_arg(session, "MPI_Session_set_errhandler", &s);

    if (rc != MPI_SUCCESS)
        return rc;
    if (errhandler == MPI_ERRHANDLER_NULL || !pb_mpi_errhandler_valid_for_session(errhandler))
        return pb_mpi_raise_session(
            session, s->errhandler, MPI_ERR_ERRHANDLER, "MPI_Session_set_errhandler",
            "errhandler (%p) is not an error handler for sessions", (void *)errhandler);
    s->errhandler = errhandler;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_set_errhandler, PMPI_Session_set_errhandler);

/* Store @session's error handler in *@errhandler.
 * @return MPI_SUCCESS; MPI_ERR_SESSION, MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Session_get_errhandler(MPI_Session session, MPI_Errhandler *errhandler)
{
    PB_MPI_THREAD_GUARD;
    pb_session_t *s;
    int rc = session_arg(session, "MPI_Session_get_errhandler", &s);

    if (rc != MPI_SUCCESS)
        return rc;
    if (errhandler == NULL)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG,
                                    "MPI_Session_get_errhandler", "errhandler is NULL");
    *errhandler = s->errhandler;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_get_errhandler, PMPI_Session_get_errhandler);

/* Raise @errorcode through @session's error handler.
 * @return MPI_SUCCESS (the error itself when the handler is
 * MPI_ERRORS_RETURN); MPI_ERR_SESSION. */
PB_EXPORT int PMPI_Session_call_errhandler(MPI_Session session, int errorcode)
{
    PB_MPI_THREAD_GUARD;
    pb_session_t *s;
    int rc = session_arg(session, "MPI_Session_call_errhandler", &s);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = pb_mpi_raise_session(session, s->errhandler, errorcode, "MPI_Session_call_errhandler",
                              "error %d raised by the program", errorcode);
    return s->errhandler == MPI_ERRORS_RETURN ? rc : MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_call_errhandler, PMPI_Session_call_errhandler);

/* ---- process sets -------------------------------------------------------------- */

/* The process sets this process is a member of, which the session lists:
 * mpi://WORLD, mpi://SELF and its node's. */
#define PSET_LISTED 3

/* Write the name of listed process set @n (0 .. PSET_LISTED - 1) in @name. */
static void pset_name_of(int n, char *name, size_t len)
{
    if (n == 0)
        snprintf(name, len, "%s", PSET_WORLD);
    else if (n == 1)
        snprintf(name, len, "%s", PSET_SELF);
    else
        snprintf(name, len, "%s%u", PSET_NODE, (unsigned)postbox_job_node(pb_mpi_my_slot()));
}

/* The members of the process set @name as world ranks, ascending, in
 * *@world_p (malloc'ed, at least one entry).  @return how many; -1 when no
 * set has that name; -2 when out of memory. */
static int pset_members(const char *name, int **world_p)
{
    /* the processes of this world: MPI_COMM_WORLD's slots */
    int first = postbox_job_world_first(), size = postbox_job_world_size();
    int nodes = postbox_job_node_count(), n = 0, node = -1;
    size_t prefix = strlen(PSET_NODE);
    int *world;

    if (strncasecmp(name, PSET_NODE, prefix) == 0 && name[prefix] >= '0' && name[prefix] <= '9') {
        char *end;
        long k = strtol(name + prefix, &end, 10);

        if (*end != '\0' || k >= nodes || (name[prefix] == '0' && name[prefix + 1] != '\0'))
            return -1;
        node = (int)k;
    } else if (strcasecmp(name, PSET_WORLD) != 0 && strcasecmp(name, PSET_SELF) != 0) {
        return -1;
    }
    world = malloc((size_t)size * sizeof(int));
    if (world == NULL)
        return -2;
    if (strcasecmp(name, PSET_SELF) == 0) {
        world[n++] = pb_mpi_my_slot();
    } else {
        for (int r = first; r < first + size; r++) {
            if (node < 0 || postbox_job_node(r) == (uint32_t)node)
                world[n++] = r;
        }
    }
    *world_p = world;
    return n;
}

int pb_mpi_pset_color(const char *name, int world_rank)
{
    int *world, n = pset_members(name, &world), in = 0;

    if (n < 0)
        return MPI_UNDEFINED;
    for (int i = 0; i < n; i++)
        in |= world[i] == world_rank;
    free(world);
    if (!in)
        return MPI_UNDEFINED;
    if (strcasecmp(name, PSET_WORLD) == 0)
        return 0;
    if (strcasecmp(name, PSET_SELF) == 0)
        return 1 + world_rank; /* a set of its own for each process */
    return 1 + pb_mpi_slots() + (int)postbox_job_node(world_rank);
}

/* Store in *@npset_names how many process sets @session lists: those this
 * process is a member of (mpi://WORLD, mpi://SELF, its node's).
 * @info may be MPI_INFO_NULL (no key is read).
 * @return MPI_SUCCESS; MPI_ERR_SESSION, MPI_ERR_INFO, MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Session_get_num_psets(MPI_Session session, MPI_Info info, int *npset_names)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Session_get_num_psets";
    pb_session_t *s;
    int rc = session_arg(session, func, &s);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!info_ok(info))
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_INFO, func,
                                    "info (%p) is not an info object", (void *)info);
    if (npset_names == NULL)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG, func,
                                    "npset_names is NULL");
    *npset_names = PSET_LISTED;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_get_num_psets, PMPI_Session_get_num_psets);

/* The name of process set @n of @session in @pset_name, cut to *@pset_len
 * - 1 characters and NUL-terminated (nothing written when *@pset_len is
 * 0); *@pset_len becomes the length the whole name needs, NUL included.
 * @return MPI_SUCCESS; MPI_ERR_SESSION, MPI_ERR_INFO, MPI_ERR_ARG (@n not
 * 0 .. MPI_Session_get_num_psets - 1, a NULL pointer, a negative length). */
PB_EXPORT int PMPI_Session_get_nth_pset(MPI_Session session, MPI_Info info, int n, int *pset_len,
                                        char *pset_name)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Session_get_nth_pset";
    char name[MPI_MAX_PSET_NAME_LEN];
    pb_session_t *s;
    int rc = session_arg(session, func, &s), count = PSET_LISTED;

    if (rc != MPI_SUCCESS)
        return rc;
    if (!info_ok(info))
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_INFO, func,
                                    "info (%p) is not an info object", (void *)info);
    if (n < 0 || n >= count)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG, func,
                                    "n is %d: the session has process sets 0 to %d", n, count - 1);
    if (pset_len == NULL || *pset_len < 0 || (*pset_len > 0 && pset_name == NULL))
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG, func, "%s",
                                    pset_len == NULL ? "pset_len is NULL"
                                    : *pset_len < 0  ? "pset_len is negative"
                                                     : "pset_name is NULL");
    pset_name_of(n, name, sizeof(name));
    if (*pset_len > 0)
        snprintf(pset_name, (size_t)*pset_len, "%s", name);
    *pset_len = (int)strlen(name) + 1;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_get_nth_pset, PMPI_Session_get_nth_pset);

/* Store in *@info a new info object describing process set @pset_name:
 * "mpi_size", its number of processes.  The caller frees it.
 * @return MPI_SUCCESS; MPI_ERR_SESSION, MPI_ERR_ARG (NULL, no such set),
 * MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Session_get_pset_info(MPI_Session session, const char *pset_name, MPI_Info *info)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Session_get_pset_info";
    char value[16];
    pb_session_t *s;
    MPI_Info made;
    int *world, n, rc = session_arg(session, func, &s);

    if (rc != MPI_SUCCESS)
        return rc;
    if (pset_name == NULL || info == NULL)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG, func, "%s is NULL",
                                    pset_name == NULL ? "pset_name" : "info");
    n = pset_members(pset_name, &world);
    if (n == -1)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG, func,
                                    "no process set is named \"%.64s\"", pset_name);
    if (n < 0)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_NO_MEM, func, "out of memory");
    free(world);
    snprintf(value, sizeof(value), "%d", n);
    rc = PMPI_Info_create(&made);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Info_set(made, "mpi_size", value);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise_session(session, s->errhandler, rc, func, "cannot fill the info");
    *info = made;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_get_pset_info, PMPI_Session_get_pset_info);

/* Store in *@newgroup the group of process set @pset_name of @session, in
 * the order of their ranks in the job (local: no communication).
 * @return MPI_SUCCESS; MPI_ERR_SESSION, MPI_ERR_ARG (NULL, no such set),
 * MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Group_from_session_pset(MPI_Session session, const char *pset_name,
                                           MPI_Group *newgroup)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Group_from_session_pset";
    pb_session_t *s;
    int *world, n, rc = session_arg(session, func, &s);

    if (rc != MPI_SUCCESS)
        return rc;
    if (pset_name == NULL || newgroup == NULL)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG, func, "%s is NULL",
                                    pset_name == NULL ? "pset_name" : "newgroup");
    n = pset_members(pset_name, &world);
    if (n == -1)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG, func,
                                    "no process set is named \"%.64s\"", pset_name);
    rc = n < 0 ? MPI_ERR_NO_MEM : pb_mpi_group_make(n, world, s, newgroup);
    if (n >= 0)
        free(world);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise_session(session, s->errhandler, rc, func, "out of memory");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Group_from_session_pset, PMPI_Group_from_session_pset);

/* ---- handle conversions -------------------------------------------------------- */

/* The integer of @session: MPI_SESSION_NULL's ABI value (0x120), or a live
 * session's (from PB_ENG_HANDLE_INT_BASE up).  A handle that is no live
 * session raises MPI_ERR_SESSION and gives MPI_SESSION_NULL's. */
PB_EXPORT int PMPI_Session_toint(MPI_Session session)
{
    int i;

    if ((uintptr_t)session < PB_ENG_HANDLE_INT_BASE)
        return (int)(uintptr_t)session;
    i = pb_eng_handle_toint(PB_ENG_HANDLE_SESSION, session);
    if (i < 0) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_SESSION, "MPI_Session_toint",
                     "session (%p) is not a session (finalized, or never initialized)",
                     (void *)session);
        return (int)(uintptr_t)MPI_SESSION_NULL;
    }
    return i;
}
PB_MPI_WEAK_ALIAS(MPI_Session_toint, PMPI_Session_toint);

/* The session of integer @session (MPI_Session_toint), or MPI_SESSION_NULL
 * when no live session has it. */
PB_EXPORT MPI_Session PMPI_Session_fromint(int session)
{
    MPI_Session s = pb_eng_handle_fromint(PB_ENG_HANDLE_SESSION, session);

    return s != NULL ? s : MPI_SESSION_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Session_fromint, PMPI_Session_fromint);

/* ---- MPI_Comm_create_from_group ------------------------------------------------ */

/* What each member sends the group's rank 0, and rank 0's answer. */
typedef struct {
    uint32_t context; /* the sender's proposal; in the answer, the agreed id */
    uint32_t digest;  /* of the group's members, in order */
    int32_t status;   /* in the answer: MPI_SUCCESS, or why the members disagree */
    char stringtag[MPI_MAX_STRINGTAG_LEN + 1];
} from_group_msg_t;

/* FNV-1a over @len bytes at @data, continuing from @hash. */
static uint32_t fnv1a(uint32_t hash, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++)
        hash = (hash ^ p[i]) * 16777619u;
    return hash;
}

/* Agree with the @n members @world of a group (this process is @me among
 * them) on a context id for the communicator @stringtag names: rank 0
 * gathers the proposals and answers the largest, or an error when a
 * member's stringtag or group differs.  @return MPI_SUCCESS or an error
 * class, with a message in @why. */
static int from_group_agree(int n, const int *world, int me, const char *stringtag,
                            uint32_t *context_p, char *why, size_t why_len)
{
    pb_comm_t boot;
    from_group_msg_t mine, theirs;
    uint32_t digest = fnv1a(2166136261u, world, (size_t)n * sizeof(int));
    int tag = (int)(fnv1a(2166136261u, stringtag, strlen(stringtag)) & 0x3fffffff);
    int status = MPI_SUCCESS, rc = MPI_SUCCESS, world_size = pb_mpi_slots();
    uint32_t priority = (uint32_t)tag, proposal;
    MPI_Request req;

    /* the group as a communicator of its own on the bootstrap context: the
     * engine needs nothing more to reach its members */
    memset(&boot, 0, sizeof(boot));
    boot.handle = MPI_COMM_NULL;
    boot.context = FROM_GROUP_CONTEXT;
    boot.rank = me;
    boot.size = n;
    boot.errhandler = MPI_ERRORS_RETURN;
    boot.world = (int *)world;
    boot.local = malloc((size_t)world_size * sizeof(int));
    if (boot.local == NULL) {
        snprintf(why, why_len, "out of memory");
        return MPI_ERR_NO_MEM;
    }
    for (int r = 0; r < world_size; r++)
        boot.local[r] = -1;
    for (int i = 0; i < n; i++)
        boot.local[world[i]] = i;

    /* rounds until one decides (comm.h); concurrent calls have distinct
     * stringtags, so their tags order them */
    for (;;) {
        memset(&mine, 0, sizeof(mine));
        mine.context = proposal = pb_mpi_context_propose(priority);
        mine.digest = digest;
        snprintf(mine.stringtag, sizeof(mine.stringtag), "%s", stringtag);
        if (me == 0) {
            for (int r = 1; r < n && rc == MPI_SUCCESS; r++) {
                rc = pb_mpi_irecv_on(&theirs, sizeof(theirs), MPI_BYTE, r, tag, &boot, 1, &req);
                if (rc == MPI_SUCCESS)
                    rc = pb_mpi_wait_requests(1, &req);
                if (rc != MPI_SUCCESS)
                    break;
                if (status == MPI_SUCCESS && strcmp(theirs.stringtag, stringtag) != 0) {
                    status = MPI_ERR_ARG;
                    snprintf(why, why_len,
                             "the group's rank %d called with another stringtag (\"%.32s\", not "
                             "\"%.32s\") whose tag is the same: change one of them",
                             r, theirs.stringtag, stringtag);
                } else if (status == MPI_SUCCESS && theirs.digest != digest) {
                    status = MPI_ERR_GROUP;
                    snprintf(why, why_len, "the group's rank %d called with another group", r);
                }
                if (theirs.context > mine.context)
                    mine.context = theirs.context;
            }
            mine.status = status;
            for (int r = 1; r < n && rc == MPI_SUCCESS; r++) {
                rc = pb_mpi_isend_on(&mine, sizeof(mine), MPI_BYTE, r, tag, &boot, 1, &req);
                if (rc == MPI_SUCCESS)
                    rc = pb_mpi_wait_requests(1, &req);
            }
        } else {
            rc = pb_mpi_isend_on(&mine, sizeof(mine), MPI_BYTE, 0, tag, &boot, 1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_irecv_on(&mine, sizeof(mine), MPI_BYTE, 0, tag, &boot, 1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
            if (rc == MPI_SUCCESS && mine.status != MPI_SUCCESS) {
                status = mine.status;
                snprintf(why, why_len,
                         "the group's members disagree on the stringtag or the group (rank 0 "
                         "says so)");
            }
        }
        if (rc != MPI_SUCCESS || status != MPI_SUCCESS) {
            pb_mpi_context_abandon(priority, proposal);
            break;
        }
        if (pb_mpi_context_settle(priority, proposal, mine.context))
            break;
    }
    free(boot.local);
    if (rc != MPI_SUCCESS) {
        snprintf(why, why_len, "exchanging the context id failed");
        return rc;
    }
    if (status != MPI_SUCCESS)
        return status;
    *context_p = mine.context;
    return MPI_SUCCESS;
}

/* Make *@newcomm, a communicator of the processes of @group in group
 * order, without a parent communicator: collective over @group, whose
 * processes call with the same @stringtag (which tells concurrent calls
 * apart).  @errhandler becomes the communicator's, and handles this
 * call's errors.  @info may be MPI_INFO_NULL (no key is read).  With
 * MPI_GROUP_EMPTY the call is local and gives MPI_COMM_NULL.
 * @return MPI_SUCCESS; MPI_ERR_ERRHANDLER, MPI_ERR_GROUP (no group, this
 * process not in it, members with different groups), MPI_ERR_ARG (NULL,
 * stringtag too long, members with different stringtags), MPI_ERR_INFO,
 * MPI_ERR_OTHER (MPI not running), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                                          MPI_Errhandler errhandler, MPI_Comm *newcomm)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Comm_create_from_group";
    char why[256];
    const int *world;
    uint32_t context;
    pb_comm_t *c;
    int n, me, rc;

    if (!pb_mpi_active())
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "called while neither MPI_Init nor a session is in force");
    if (errhandler == MPI_ERRHANDLER_NULL || !pb_mpi_errhandler_valid_for_comm(errhandler))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ERRHANDLER, func,
                            "errhandler (%p) is not an error handler for communicators",
                            (void *)errhandler);
    if (!pb_mpi_group_members(group, &n, &world, &me))
        return pb_mpi_raise_handler(errhandler, MPI_ERR_GROUP, func, "group (%p) is not a group",
                                    (void *)group);
    if (stringtag == NULL || newcomm == NULL)
        return pb_mpi_raise_handler(errhandler, MPI_ERR_ARG, func, "%s is NULL",
                                    stringtag == NULL ? "stringtag" : "newcomm");
    if (strnlen(stringtag, MPI_MAX_STRINGTAG_LEN + 1) > MPI_MAX_STRINGTAG_LEN)
        return pb_mpi_raise_handler(errhandler, MPI_ERR_ARG, func,
                                    "stringtag is longer than MPI_MAX_STRINGTAG_LEN (%d)",
                                    MPI_MAX_STRINGTAG_LEN);
    if (!info_ok(info))
        return pb_mpi_raise_handler(errhandler, MPI_ERR_INFO, func,
                                    "info (%p) is not an info object", (void *)info);
    if (n == 0) { /* MPI_GROUP_EMPTY: local, no communicator */
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    if (me == MPI_UNDEFINED)
        return pb_mpi_raise_handler(errhandler, MPI_ERR_GROUP, func,
                                    "this process is not a member of the group");
    rc = from_group_agree(n, world, me, stringtag, &context, why, sizeof(why));
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise_handler(errhandler, rc, func, "%s", why);
    c = pb_mpi_comm_make(n, world, context, errhandler);
    if (c == NULL)
        return pb_mpi_raise_handler(errhandler, MPI_ERR_NO_MEM, func, "out of memory");
    c->session = pb_mpi_group_session(group);
    *newcomm = c->handle;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_create_from_group, PMPI_Comm_create_from_group);

/* ---- MPI_Intercomm_create_from_groups ------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

/* A communicator of the @n world ranks @world (this process @me among
 * them) agreed on by @stringtag, with @errhandler, of @session (or NULL),
 * into *@c_p.  @return
 * MPI_SUCCESS or an error class with a message in @why. */
static int from_group_make(int n, const int *world, int me, const char *stringtag,
                           MPI_Errhandler errhandler, void *session, pb_comm_t **c_p, char *why,
                           size_t why_len)
{
    uint32_t context;
    int rc = from_group_agree(n, world, me, stringtag, &context, why, why_len);

    if (rc != MPI_SUCCESS)
        return rc;
    *c_p = pb_mpi_comm_make(n, world, context, errhandler);
    if (*c_p == NULL) {
        snprintf(why, why_len, "out of memory");
        return MPI_ERR_NO_MEM;
    }
    (*c_p)->session = session;
    return MPI_SUCCESS;
}

/* Make *@newintercomm, the intercommunicator between @local_group (this
 * process a member) and @remote_group, without a parent communicator:
 * collective over both groups, whose processes call with the same
 * @stringtag; each side names its own leader (@local_leader, a rank of
 * @local_group) and the other's (@remote_leader, a rank of
 * @remote_group).  Built from two communicators made as
 * MPI_Comm_create_from_group makes one: the local group's, and a bridge of
 * both groups (ascending world ranks, on a stringtag derived from
 * @stringtag) over which MPI_Intercomm_create's leaders talk; both are
 * freed before the call returns.  @errhandler becomes the new
 * communicator's and handles this call's errors; @info is not read.
 * @return MPI_SUCCESS; MPI_ERR_ERRHANDLER, MPI_ERR_GROUP (not groups, this
 * process not in @local_group, the groups overlap, members disagree),
 * MPI_ERR_RANK (a leader out of range), MPI_ERR_ARG (NULL, stringtag too
 * long), MPI_ERR_INFO, MPI_ERR_OTHER (MPI not running), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader,
                                                MPI_Group remote_group, int remote_leader,
                                                const char *stringtag, MPI_Info info,
                                                MPI_Errhandler errhandler, MPI_Comm *newintercomm)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Intercomm_create_from_groups";
    char why[256], bridge_tag[MPI_MAX_STRINGTAG_LEN + 1];
    const int *lworld, *rworld;
    int nl, nr, me, them, rc, bridge_me = -1, bridge_leader = -1, *all;
    pb_comm_t *local = NULL, *bridge = NULL;
    MPI_Comm local_h, bridge_h;

    if (!pb_mpi_active())
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "called while neither MPI_Init nor a session is in force");
    if (errhandler == MPI_ERRHANDLER_NULL || !pb_mpi_errhandler_valid_for_comm(errhandler))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ERRHANDLER, func,
                            "errhandler (%p) is not an error handler for communicators",
                            (void *)errhandler);
    if (!pb_mpi_group_members(local_group, &nl, &lworld, &me) ||
        !pb_mpi_group_members(remote_group, &nr, &rworld, &them))
        return pb_mpi_raise_handler(
            errhandler, MPI_ERR_GROUP, func, "%s is not a group",
            pb_mpi_group_members(local_group, &nl, &lworld, &me) ? "remote_group" : "local_group");
    if (stringtag == NULL || newintercomm == NULL)
        return pb_mpi_raise_handler(errhandler, MPI_ERR_ARG, func, "%s is NULL",
                                    stringtag == NULL ? "stringtag" : "newintercomm");
    if (strnlen(stringtag, MPI_MAX_STRINGTAG_LEN + 1) > MPI_MAX_STRINGTAG_LEN)
        return pb_mpi_raise_handler(errhandler, MPI_ERR_ARG, func,
                                    "stringtag is longer than MPI_MAX_STRINGTAG_LEN (%d)",
                                    MPI_MAX_STRINGTAG_LEN);
    if (!info_ok(info))
        return pb_mpi_raise_handler(errhandler, MPI_ERR_INFO, func,
                                    "info (%p) is not an info object", (void *)info);
    if (me == MPI_UNDEFINED)
        return pb_mpi_raise_handler(errhandler, MPI_ERR_GROUP, func,
                                    "this process is not a member of local_group");
    if (them != MPI_UNDEFINED)
        return pb_mpi_raise_handler(errhandler, MPI_ERR_GROUP, func,
                                    "this process is in both groups: they must not overlap");
    if (local_leader < 0 || local_leader >= nl || remote_leader < 0 || remote_leader >= nr)
        return pb_mpi_raise_handler(
            errhandler, MPI_ERR_RANK, func, "%s %d is not a rank of its group (0..%d)",
            local_leader < 0 || local_leader >= nl ? "local_leader" : "remote_leader",
            local_leader < 0 || local_leader >= nl ? local_leader : remote_leader,
            (local_leader < 0 || local_leader >= nl ? nl : nr) - 1);
    /* the bridge: both groups, in ascending world rank, the same on both sides */
    all = malloc(((size_t)nl + (size_t)nr) * sizeof(int));
    if (all == NULL)
        return pb_mpi_raise_handler(errhandler, MPI_ERR_NO_MEM, func, "out of memory");
    memcpy(all, lworld, (size_t)nl * sizeof(int));
    memcpy(all + nl, rworld, (size_t)nr * sizeof(int));
    qsort(all, (size_t)(nl + nr), sizeof(int), cmp_int);
    for (int i = 0; i < nl + nr; i++) {
        if (i > 0 && all[i] == all[i - 1]) {
            int twice = all[i];

            free(all);
            return pb_mpi_raise_handler(errhandler, MPI_ERR_GROUP, func,
                                        "world rank %d is in both groups: they must not overlap",
                                        twice);
        }
        if (all[i] == lworld[me])
            bridge_me = i;
        if (all[i] == rworld[remote_leader])
            bridge_leader = i;
    }
    /* another first byte: another tag for the bridge's agreement */
    bridge_tag[0] = '\x01';
    snprintf(bridge_tag + 1, sizeof(bridge_tag) - 1, "%s", stringtag);
    rc = from_group_make(nl, lworld, me, stringtag, MPI_ERRORS_RETURN,
                         pb_mpi_group_session(local_group), &local, why, sizeof(why));
    if (rc == MPI_SUCCESS)
        rc = from_group_make(nl + nr, all, bridge_me, bridge_tag, MPI_ERRORS_RETURN, NULL, &bridge,
                             why, sizeof(why));
    free(all);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Intercomm_create(local->handle, local_leader, bridge->handle, bridge_leader, 0,
                                   newintercomm);
        if (rc != MPI_SUCCESS)
            snprintf(why, sizeof(why), "making the intercommunicator failed");
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_set_errhandler(*newintercomm, errhandler);
    if (local != NULL) {
        local_h = local->handle;
        PMPI_Comm_free(&local_h);
    }
    if (bridge != NULL) {
        bridge_h = bridge->handle;
        PMPI_Comm_free(&bridge_h);
    }
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise_handler(errhandler, rc, func, "%s", why);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Intercomm_create_from_groups, PMPI_Intercomm_create_from_groups);

/* ---- the session's buffer for buffered sends (MPI-4.1) ------------------------------ */

MPI_Errhandler pb_mpi_session_errhandler(MPI_Session session)
{
    pb_session_t *s = session_of(session);

    return s != NULL ? s->errhandler : MPI_ERRORS_ARE_FATAL;
}

/* Attach @buffer of @size bytes (or MPI_BUFFER_AUTOMATIC) to @session: the
 * buffered sends of the communicators made from its groups that have no
 * buffer of their own go through it.  @return MPI_SUCCESS; MPI_ERR_SESSION;
 * MPI_ERR_BUFFER (one attached already, NULL); MPI_ERR_COUNT;
 * MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Session_attach_buffer_c(MPI_Session session, void *buffer, MPI_Count size)
{
    PB_MPI_THREAD_GUARD;
    pb_session_t *s;
    int rc = session_arg(session, "MPI_Session_attach_buffer", &s);

    return rc != MPI_SUCCESS ? rc : pb_mpi_bsend_session_attach(session, buffer, size);
}
PB_MPI_WEAK_ALIAS(MPI_Session_attach_buffer_c, PMPI_Session_attach_buffer_c);

/* MPI_Session_attach_buffer_c with an int size.  Errors as it. */
PB_EXPORT int PMPI_Session_attach_buffer(MPI_Session session, void *buffer, int size)
{
    PB_MPI_THREAD_GUARD;

    return PMPI_Session_attach_buffer_c(session, buffer, size);
}
PB_MPI_WEAK_ALIAS(MPI_Session_attach_buffer, PMPI_Session_attach_buffer);

/* Wait until every buffered send through @session's buffer went out, then
 * give it back: *(void **)@buffer_addr and *@size.  @return MPI_SUCCESS;
 * MPI_ERR_SESSION; MPI_ERR_BUFFER (none attached); MPI_ERR_ARG. */
PB_EXPORT int PMPI_Session_detach_buffer_c(MPI_Session session, void *buffer_addr, MPI_Count *size)
{
    PB_MPI_THREAD_GUARD;
    pb_session_t *s;
    int rc = session_arg(session, "MPI_Session_detach_buffer", &s);

    return rc != MPI_SUCCESS ? rc : pb_mpi_bsend_session_detach(session, buffer_addr, size);
}
PB_MPI_WEAK_ALIAS(MPI_Session_detach_buffer_c, PMPI_Session_detach_buffer_c);

/* MPI_Session_detach_buffer_c with an int size (MPI_UNDEFINED when it does
 * not fit).  Errors as it. */
PB_EXPORT int PMPI_Session_detach_buffer(MPI_Session session, void *buffer_addr, int *size)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count n = 0;
    pb_session_t *s;
    int rc = session_arg(session, "MPI_Session_detach_buffer", &s);

    if (rc != MPI_SUCCESS)
        return rc;
    if (size == NULL)
        return pb_mpi_raise_session(session, s->errhandler, MPI_ERR_ARG,
                                    "MPI_Session_detach_buffer", "size is NULL");
    rc = pb_mpi_bsend_session_detach(session, buffer_addr, &n);
    if (rc == MPI_SUCCESS)
        *size = n > INT_MAX ? MPI_UNDEFINED : (int)n;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Session_detach_buffer, PMPI_Session_detach_buffer);

/* Wait until every message sent through @session's buffer so far went out
 * (nothing when it has none).  @return MPI_SUCCESS; MPI_ERR_SESSION. */
PB_EXPORT int PMPI_Session_flush_buffer(MPI_Session session)
{
    PB_MPI_THREAD_GUARD;
    pb_session_t *s;
    int rc = session_arg(session, "MPI_Session_flush_buffer", &s);

    if (rc == MPI_SUCCESS)
        pb_mpi_bsend_session_flush(session);
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Session_flush_buffer, PMPI_Session_flush_buffer);

/* MPI_Session_flush_buffer without waiting: *@request completes once the
 * messages in @session's buffer went out.  @return MPI_SUCCESS;
 * MPI_ERR_SESSION; MPI_ERR_ARG; MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Session_iflush_buffer(MPI_Session session, MPI_Request *request)
{
    PB_MPI_THREAD_GUARD;
    pb_session_t *s;
    int rc = session_arg(session, "MPI_Session_iflush_buffer", &s);

    return rc != MPI_SUCCESS ? rc : pb_mpi_bsend_session_iflush(session, request);
}
PB_MPI_WEAK_ALIAS(MPI_Session_iflush_buffer, PMPI_Session_iflush_buffer);
