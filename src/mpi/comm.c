/*
 * The library's life cycle, error handlers and communicators (comm.h).
 */
#include "mpi/comm.h"

#include <postbox/job.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi/attr.h"
#include "mpi/coll_node.h"
#include "mpi/coll_table.h"
#include "mpi/coll_util.h"
#include "mpi/datatype.h"
#include "mpi/engine/engine.h"
#include "mpi/engine/handle.h"
#include "mpi/info.h"
#include "mpi/intercomm.h"
#include "mpi/p2p.h"
#include "mpi/part.h"
#include "mpi/sched.h"
#include "mpi/topo.h"
#include "mpi/win.h"

/* a user error handler (MPI_Comm_create_errhandler, MPI_Win_create_errhandler,
 * MPI_Session_create_errhandler) */
struct MPI_ABI_Errhandler {
    MPI_Comm_errhandler_function *function;            /* for communicators */
    MPI_Win_errhandler_function *win_function;         /* for windows */
    MPI_Session_errhandler_function *session_function; /* for sessions */
};

/* The world model's life: MPI_Init .. MPI_Finalize, once per process. */
enum {
    LIFE_BEFORE = 0,
    LIFE_ACTIVE,
    LIFE_FINALIZED
};

static struct {
    int life; /* the world model's */
    /* the engine runs while users > 0: the world model counts one, each
     * live session one (pb_mpi_instance_start/stop) */
    int users;
    int engine_on;
    int thread_level;
    int thread_requested; /* the level MPI_Init_thread was asked for */
    pthread_t main_thread;
    pb_comm_t world, self;
    /* every slot of the universe (postbox run --universe), when the job
     * has one: MPI_COMM_WORLD is then the slots of this process's world */
    pb_comm_t universe;
    int slots, slot; /* the engine's processes (pb_mpi_slots), this one's */
} mpi;

int pb_mpi_slots(void)
{
    return mpi.slots;
}

int pb_mpi_my_slot(void)
{
    return mpi.slot;
}

pb_comm_t *pb_mpi_comm_universe(void)
{
    if (!mpi.engine_on)
        return NULL;
    return mpi.universe.world != NULL ? &mpi.universe : &mpi.world;
}

int pb_mpi_active(void)
{
    return mpi.engine_on;
}

int pb_mpi_thread_requested(void)
{
    return mpi.thread_requested;
}

/* ---- error handlers ---------------------------------------------------------- */

static int errhandler_valid(MPI_Errhandler eh)
{
    return eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT || eh == MPI_ERRORS_RETURN ||
           pb_eng_handle_valid(PB_ENG_HANDLE_ERRHANDLER, eh);
}

/* Print "postbox mpi: rank R: <func>: <class message>: <message>" and end
 * the job with @code (MPI_ERRORS_ARE_FATAL, MPI_ERRORS_ABORT). */
static __attribute__((noreturn)) void fatal_v(int code, const char *func, const char *fmt,
                                              va_list ap)
{
    char message[512], what[MPI_MAX_ERROR_STRING];
    int len;

    vsnprintf(message, sizeof(message), fmt, ap);
    if (PMPI_Error_string(code, what, &len) != MPI_SUCCESS)
        snprintf(what, sizeof(what), "error %d", code);
    fprintf(stderr, "postbox mpi: rank %d: %s: %s: %s\n", mpi.engine_on ? mpi.world.rank : -1, func,
            what, message);
    fflush(stderr);
    if (mpi.engine_on)
        postbox_job_abort(code, NULL);
    _exit(code);
}

void pb_mpi_fatal(int code, const char *func, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fatal_v(code, func, fmt, ap);
    va_end(ap);
}

int pb_mpi_raise(MPI_Comm comm, int code, const char *func, const char *fmt, ...)
{
    pb_comm_t *c = pb_mpi_comm(comm);
    MPI_Errhandler eh = c != NULL ? c->errhandler : mpi.self.errhandler;
    va_list ap;

    if (code == MPI_SUCCESS)
        return code;
    if (eh == MPI_ERRHANDLER_NULL || eh == NULL)
        eh = MPI_ERRORS_ARE_FATAL; /* before MPI_Init (MPI_COMM_SELF's not set yet) */
    if (eh == MPI_ERRORS_RETURN)
        return code;
    if (eh != MPI_ERRORS_ARE_FATAL && eh != MPI_ERRORS_ABORT && eh->function != NULL) {
        MPI_Comm handle = c != NULL ? c->handle : MPI_COMM_SELF;

        eh->function(&handle, &code);
        return code;
    }
    va_start(ap, fmt);
    fatal_v(code, func, fmt, ap);
    va_end(ap);
    return code;
}

/* Set @comm's error handler to @errhandler (the predefined
 * MPI_ERRORS_ARE_FATAL, MPI_ERRORS_ABORT, MPI_ERRORS_RETURN, or one made
 * by MPI_Comm_create_errhandler).
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (no such handler). */
PB_EXPORT int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_set_errhandler", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (errhandler == MPI_ERRHANDLER_NULL || !errhandler_valid(errhandler))
        return pb_mpi_raise(comm, MPI_ERR_ERRHANDLER, "MPI_Comm_set_errhandler",
                            "%p is not an error handler", (void *)errhandler);
    c->errhandler = errhandler;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_set_errhandler, PMPI_Comm_set_errhandler);

/* Store @comm's error handler in *@errhandler.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (NULL pointer). */
PB_EXPORT int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_get_errhandler", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (errhandler == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_get_errhandler", "errhandler is NULL");
    *errhandler = c->errhandler;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_get_errhandler, PMPI_Comm_get_errhandler);

/* Make an error handler calling @function.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL argument); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *function,
                                          MPI_Errhandler *errhandler)
{
    PB_MPI_THREAD_GUARD;
    MPI_Errhandler eh;

    if (function == NULL || errhandler == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Comm_create_errhandler", "%s is NULL",
                            function == NULL ? "function" : "errhandler");
    eh = pb_eng_handle_new(PB_ENG_HANDLE_ERRHANDLER, sizeof(*eh));
    if (eh == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Comm_create_errhandler",
                            "out of memory");
    eh->function = function;
    *errhandler = eh;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_create_errhandler, PMPI_Comm_create_errhandler);

/* Make an error handler for windows calling @win_errhandler_fn.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL argument); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn,
                                         MPI_Errhandler *errhandler)
{
    PB_MPI_THREAD_GUARD;
    MPI_Errhandler eh;

    if (win_errhandler_fn == NULL || errhandler == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Win_create_errhandler", "%s is NULL",
                            win_errhandler_fn == NULL ? "win_errhandler_fn" : "errhandler");
    eh = pb_eng_handle_new(PB_ENG_HANDLE_ERRHANDLER, sizeof(*eh));
    if (eh == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Win_create_errhandler",
                            "out of memory");
    eh->win_function = win_errhandler_fn;
    *errhandler = eh;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Win_create_errhandler, PMPI_Win_create_errhandler);

/* Make an error handler for sessions calling @session_errhandler_fn.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL argument); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Session_create_errhandler(MPI_Session_errhandler_function *session_errhandler_fn,
                                             MPI_Errhandler *errhandler)
{
    PB_MPI_THREAD_GUARD;
    MPI_Errhandler eh;

    if (session_errhandler_fn == NULL || errhandler == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Session_create_errhandler",
                            "%s is NULL",
                            session_errhandler_fn == NULL ? "session_errhandler_fn" : "errhandler");
    eh = pb_eng_handle_new(PB_ENG_HANDLE_ERRHANDLER, sizeof(*eh));
    if (eh == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Session_create_errhandler",
                            "out of memory");
    eh->session_function = session_errhandler_fn;
    *errhandler = eh;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Session_create_errhandler, PMPI_Session_create_errhandler);

int pb_mpi_errhandler_valid_for_session(MPI_Errhandler eh)
{
    if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT || eh == MPI_ERRORS_RETURN)
        return 1;
    return pb_eng_handle_valid(PB_ENG_HANDLE_ERRHANDLER, eh) && eh->session_function != NULL;
}

int pb_mpi_errhandler_valid_for_comm(MPI_Errhandler eh)
{
    if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT || eh == MPI_ERRORS_RETURN)
        return 1;
    return pb_eng_handle_valid(PB_ENG_HANDLE_ERRHANDLER, eh) && eh->function != NULL;
}

int pb_mpi_raise_session(MPI_Session session, MPI_Errhandler eh, int code, const char *func,
                         const char *fmt, ...)
{
    va_list ap;

    if (code == MPI_SUCCESS || eh == MPI_ERRORS_RETURN)
        return code;
    if (eh != MPI_ERRORS_ARE_FATAL && eh != MPI_ERRORS_ABORT && eh != MPI_ERRHANDLER_NULL &&
        eh->session_function != NULL) {
        eh->session_function(&session, &code);
        return code;
    }
    va_start(ap, fmt);
    fatal_v(code, func, fmt, ap);
    va_end(ap);
    return code;
}

int pb_mpi_raise_handler(MPI_Errhandler eh, int code, const char *func, const char *fmt, ...)
{
    va_list ap;

    if (code == MPI_SUCCESS || eh == MPI_ERRORS_RETURN)
        return code;
    if (eh != MPI_ERRORS_ARE_FATAL && eh != MPI_ERRORS_ABORT && eh != MPI_ERRHANDLER_NULL &&
        eh->function != NULL) {
        MPI_Comm none = MPI_COMM_NULL;

        eh->function(&none, &code);
        return code;
    }
    va_start(ap, fmt);
    fatal_v(code, func, fmt, ap);
    va_end(ap);
    return code;
}

int pb_mpi_errhandler_valid_for_win(MPI_Errhandler eh)
{
    if (eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_ABORT || eh == MPI_ERRORS_RETURN)
        return 1;
    return pb_eng_handle_valid(PB_ENG_HANDLE_ERRHANDLER, eh) && eh->win_function != NULL;
}

void pb_mpi_errhandler_call_win(MPI_Errhandler eh, MPI_Win *win, int *code)
{
    eh->win_function(win, code);
}

/* Release *@errhandler (communicators using it keep it) and set it to
 * MPI_ERRHANDLER_NULL.  @return MPI_SUCCESS; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Errhandler_free(MPI_Errhandler *errhandler)
{
    PB_MPI_THREAD_GUARD;
    if (errhandler == NULL || *errhandler == MPI_ERRHANDLER_NULL || !errhandler_valid(*errhandler))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Errhandler_free",
                            "not an error handler");
    /* user handlers stay allocated: communicators may still refer to them */
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Errhandler_free, PMPI_Errhandler_free);

/* ---- communicators --------------------------------------------------------- */

pb_comm_t *pb_mpi_comm(MPI_Comm handle)
{
    /* the world model's communicators: not usable by a program that only
     * initialized sessions */
    if (handle == MPI_COMM_WORLD)
        return mpi.life == LIFE_ACTIVE ? &mpi.world : NULL;
    if (handle == MPI_COMM_SELF)
        return mpi.life == LIFE_ACTIVE ? &mpi.self : NULL;
    if (!pb_eng_handle_valid(PB_ENG_HANDLE_COMM, handle))
        return NULL;
    return (pb_comm_t *)handle;
}

pb_comm_t *pb_mpi_comm_world(void)
{
    return mpi.engine_on ? &mpi.world : NULL;
}

int pb_mpi_comm_check(MPI_Comm handle, const char *func, pb_comm_t **comm_p)
{
    if (!mpi.engine_on)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "called while MPI is not running (neither MPI_Init nor a session "
                            "is in force)");
    *comm_p = pb_mpi_comm(handle);
    if (*comm_p == NULL && (handle == MPI_COMM_WORLD || handle == MPI_COMM_SELF))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COMM, func,
                            "%s exists only between MPI_Init and MPI_Finalize (this process %s)",
                            handle == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : "MPI_COMM_SELF",
                            mpi.life == LIFE_BEFORE ? "uses sessions only" : "called MPI_Finalize");
    if (*comm_p == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COMM, func, "%s is not a communicator",
                            handle == MPI_COMM_NULL ? "MPI_COMM_NULL" : "the handle");
    return MPI_SUCCESS;
}

static int comm_fill(pb_comm_t *c, int rank, int size, uint32_t context)
{
    int world = mpi.slots > 0 ? mpi.slots : size;

    c->rank = rank;
    c->size = size;
    c->context = context;
    c->world = calloc((size_t)size, sizeof(int));
    c->local = malloc((size_t)world * sizeof(int));
    if (c->world == NULL || c->local == NULL)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < world; i++)
        c->local[i] = -1;
    return MPI_SUCCESS;
}

static void comm_release(pb_comm_t *c)
{
    free(c->world);
    free(c->local);
    c->world = c->local = NULL;
    pb_mpi_topo_free(c->topo);
    c->topo = NULL;
    if (c->local_group != NULL) {
        comm_release(c->local_group);
        free(c->local_group);
        c->local_group = NULL;
    }
    if (c->hints != NULL)
        PMPI_Info_free(&c->hints);
    c->hints = NULL;
}

/* Fill @c (made or zeroed) as a communicator of the @size world ranks
 * @world in their order, this process among them, on @context.
 * MPI_SUCCESS; MPI_ERR_NO_MEM; MPI_ERR_INTERN when this process is not in
 * @world. */
static int comm_fill_ranks(pb_comm_t *c, int size, const int *world, uint32_t context)
{
    int me = -1, rc;

    for (int i = 0; i < size; i++) {
        if (world[i] == mpi.slot)
            me = i;
    }
    if (me < 0)
        return MPI_ERR_INTERN;
    rc = comm_fill(c, me, size, context);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < size; i++) {
        c->world[i] = world[i];
        c->local[world[i]] = i;
    }
    return MPI_SUCCESS;
}

int pb_mpi_comm_check_intra(MPI_Comm comm, const char *func, const pb_comm_t *c)
{
    if (pb_mpi_comm_is_inter(c))
        return pb_mpi_raise(comm, MPI_ERR_COMM, func, "not supported on intercommunicators");
    return MPI_SUCCESS;
}

static pb_comm_t *comm_new(void)
{
    pb_comm_t *c = pb_eng_handle_new(PB_ENG_HANDLE_COMM, sizeof(*c));

    if (c != NULL)
        c->handle = (MPI_Comm)c;
    return c;
}

/* Retire @c (its handle names nothing from now on) and free it, or leave
 * that to the last request still using it. */
static void comm_delete(pb_comm_t *c)
{
    pb_eng_handle_retire(PB_ENG_HANDLE_COMM, c);
    c->freed = 1;
    if (c->refs > 0)
        return;
    comm_release(c);
    pb_eng_handle_delete(PB_ENG_HANDLE_COMM, c);
}

void pb_mpi_comm_retain(pb_comm_t *comm)
{
    comm->refs++;
}

void pb_mpi_comm_release(pb_comm_t *comm)
{
    if (--comm->refs == 0 && comm->freed && comm != &mpi.world && comm != &mpi.self) {
        comm_release(comm);
        pb_eng_handle_delete(PB_ENG_HANDLE_COMM, comm);
    }
}

pb_comm_t *pb_mpi_comm_make(int size, const int *world, uint32_t context, MPI_Errhandler errhandler)
{
    pb_comm_t *n = comm_new();

    if (n == NULL || comm_fill_ranks(n, size, world, context) != MPI_SUCCESS) {
        if (n != NULL)
            comm_delete(n);
        return NULL;
    }
    n->errhandler = errhandler;
    return n;
}

pb_comm_t *pb_mpi_comm_make_inter(int remote_size, const int *remote_world, int local_size,
                                  const int *local_world, uint32_t context,
                                  MPI_Errhandler errhandler)
{
    pb_comm_t *n = comm_new();
    pb_comm_t *group = calloc(1, sizeof(*group));

    if (n == NULL || group == NULL) {
        free(group);
        if (n != NULL)
            comm_delete(n);
        return NULL;
    }
    n->local_group = group;
    group->handle = MPI_COMM_NULL;
    group->errhandler = MPI_ERRORS_RETURN;
    if (comm_fill_ranks(group, local_size, local_world, context + 2) != MPI_SUCCESS ||
        comm_fill(n, group->rank, remote_size, context) != MPI_SUCCESS) {
        comm_delete(n);
        return NULL;
    }
    for (int i = 0; i < remote_size; i++) {
        n->world[i] = remote_world[i];
        n->local[remote_world[i]] = i;
    }
    n->errhandler = errhandler;
    return n;
}

/* Store the number of ranks of @comm in *@size.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Comm_size(MPI_Comm comm, int *size)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_size", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (size == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_size", "size is NULL");
    /* an intercommunicator's local group */
    *size = pb_mpi_comm_is_inter(c) ? c->local_group->size : c->size;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_size, PMPI_Comm_size);

/* Store this process's rank in @comm in *@rank.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Comm_rank(MPI_Comm comm, int *rank)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_rank", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (rank == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_rank", "rank is NULL");
    *rank = c->rank;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_rank, PMPI_Comm_rank);

/* Make *@n_p, a communicator of the same ranks as @c (an
 * intercommunicator: of the same two groups) with its own contexts, @c's
 * error handler, topology and attributes (their copy callbacks run), and
 * a copy of @hints (NULL or MPI_INFO_NULL: none).  Collective.  @return
 * MPI_SUCCESS or the error raised for @func. */
/* The duplicate of @c on @context, with @hints (or none): its group,
 * error handler, session, topology and attributes (copied by their
 * callbacks).  @return MPI_SUCCESS, or the error raised for @func. */
static int comm_dup_on(pb_comm_t *c, const char *func, MPI_Info hints, uint32_t context,
                       pb_comm_t **n_p)
{
    pb_comm_t *n;
    int rc;

    if (pb_mpi_comm_is_inter(c))
        n = pb_mpi_comm_make_inter(c->size, c->world, c->local_group->size, c->local_group->world,
                                   context, c->errhandler);
    else
        n = pb_mpi_comm_make(c->size, c->world, context, c->errhandler);
    if (n == NULL)
        return pb_mpi_raise(c->handle, MPI_ERR_NO_MEM, func, "out of memory");
    n->session = c->session;
    rc = pb_mpi_topo_dup(c->topo, &n->topo);
    if (rc == MPI_SUCCESS && hints != NULL && hints != MPI_INFO_NULL)
        rc = PMPI_Info_dup(hints, &n->hints);
    if (rc != MPI_SUCCESS) {
        comm_delete(n);
        return pb_mpi_raise(c->handle, rc, func, "out of memory");
    }
    rc = pb_mpi_attr_copy(c, n);
    if (rc != MPI_SUCCESS) {
        comm_delete(n);
        return pb_mpi_raise(c->handle, rc, func, "an attribute copy callback failed");
    }
    *n_p = n;
    return MPI_SUCCESS;
}

static int comm_dup(pb_comm_t *c, const char *func, MPI_Info hints, pb_comm_t **n_p)
{
    uint32_t context;
    int rc = pb_mpi_comm_is_inter(c) ? pb_mpi_inter_agree_context(c, &context)
                                     : pb_mpi_agree_context(c, &context);

    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(c->handle, rc, func, "the ranks could not agree on a context");
    return comm_dup_on(c, func, hints, context, n_p);
}

/* Make *@newcomm, a communicator of the same ranks as @comm with its own
 * contexts and @comm's error handler, topology and hints.  Collective.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG; MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c, *n;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_dup", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (newcomm == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_dup", "newcomm is NULL");
    rc = comm_dup(c, "MPI_Comm_dup", c->hints, &n);
    if (rc == MPI_SUCCESS)
        *newcomm = n->handle;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_dup, PMPI_Comm_dup);

/* MPI_Comm_dup whose new communicator has the hints @info (MPI_INFO_NULL:
 * none) instead of @comm's.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_INFO; MPI_ERR_ARG; MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    PB_MPI_THREAD_GUARD;
    static const char func[] = "MPI_Comm_dup_with_info";
    pb_comm_t *c, *n;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_info_check(comm, info, 1, func);
    if (rc != MPI_SUCCESS)
        return rc;
    if (newcomm == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "newcomm is NULL");
    rc = comm_dup(c, func, info, &n);
    if (rc == MPI_SUCCESS)
        *newcomm = n->handle;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_dup_with_info, PMPI_Comm_dup_with_info);

/* The nonblocking duplicates: the duplicate is made within the call (as
 * MPI_Comm_dup does), and *@request is complete at once. */
static int comm_idup(const char *func, MPI_Comm comm, MPI_Info info, int with_info,
                     MPI_Comm *newcomm, MPI_Request *request)
{
    pb_comm_t *c, *n;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc == MPI_SUCCESS && with_info)
        rc = pb_mpi_info_check(comm, info, 1, func);
    if (rc != MPI_SUCCESS)
        return rc;
    if (newcomm == NULL || request == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "%s is NULL",
                            newcomm == NULL ? "newcomm" : "request");
    if (pb_mpi_comm_is_inter(c)) {
        /* an intercommunicator's duplicate is made within the call */
        rc = comm_dup(c, func, with_info ? info : c->hints, &n);
        if (rc != MPI_SUCCESS)
            return rc;
        *request = pb_eng_request_done(0);
    } else {
        /* made now (attributes copied as they are now), its context agreed
         * by the request */
        rc = comm_dup_on(c, func, with_info ? info : c->hints, PB_MPI_CONTEXT_PENDING, &n);
        if (rc != MPI_SUCCESS)
            return rc;
        if (pb_mpi_context_idup_start(c, n, request) != MPI_SUCCESS)
            *request = NULL;
    }
    if (*request == NULL) {
        comm_delete(n);
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    }
    *newcomm = n->handle;
    return MPI_SUCCESS;
}

/* Start duplicating @comm into *@newcomm (MPI_Comm_dup, with @comm's
 * attributes as they are now); *@request completes it, and *@newcomm may
 * be used once it has.  An intercommunicator's duplicate is made within
 * the call (every rank of it must call it before any waits for another).
 * @return MPI_Comm_dup's errors. */
PB_EXPORT int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    PB_MPI_THREAD_GUARD;

    return comm_idup("MPI_Comm_idup", comm, MPI_INFO_NULL, 0, newcomm, request);
}
PB_MPI_WEAK_ALIAS(MPI_Comm_idup, PMPI_Comm_idup);

/* MPI_Comm_idup with the hints @info (MPI_Comm_dup_with_info).
 * @return MPI_Comm_dup_with_info's errors. */
PB_EXPORT int PMPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm,
                                       MPI_Request *request)
{
    PB_MPI_THREAD_GUARD;

    return comm_idup("MPI_Comm_idup_with_info", comm, info, 1, newcomm, request);
}
PB_MPI_WEAK_ALIAS(MPI_Comm_idup_with_info, PMPI_Comm_idup_with_info);

/* Set the hints of @comm: each key of @info replaces its value, the
 * others stay.  Postbox keeps them as given (MPI_Comm_get_info returns
 * them) and acts on none.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_INFO; MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
    PB_MPI_THREAD_GUARD;
    static const char func[] = "MPI_Comm_set_info";
    char key[MPI_MAX_INFO_KEY], value[MPI_MAX_INFO_VAL];
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, func, &c), nkeys = 0;

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_info_check(comm, info, 0, func);
    if (rc != MPI_SUCCESS)
        return rc;
    if (c->hints == NULL)
        rc = PMPI_Info_create(&c->hints);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Info_get_nkeys(info, &nkeys);
    for (int k = 0; k < nkeys && rc == MPI_SUCCESS; k++) {
        int len = MPI_MAX_INFO_VAL, flag = 0;

        rc = PMPI_Info_get_nthkey(info, k, key);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Info_get_string(info, key, &len, value, &flag);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Info_set(c->hints, key, value);
    }
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "cannot keep the hints");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_set_info, PMPI_Comm_set_info);

/* Make *@info_used, a new info holding the hints of @comm as the program
 * gave them (MPI_Comm_set_info, _dup_with_info; MPI_Comm_dup copies them).
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (NULL); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
    PB_MPI_THREAD_GUARD;
    static const char func[] = "MPI_Comm_get_info";
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (info_used == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "info_used is NULL");
    rc = c->hints != NULL ? PMPI_Info_dup(c->hints, info_used) : PMPI_Info_create(info_used);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "out of memory");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_get_info, PMPI_Comm_get_info);

/* Call the error handler of @comm with @errorcode, as an error of an MPI
 * call would (MPI_ERRORS_ARE_FATAL and MPI_ERRORS_ABORT end the job).
 * @return MPI_SUCCESS once the handler returned; MPI_ERR_COMM. */
PB_EXPORT int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_call_errhandler", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    pb_mpi_raise(comm, errorcode, "MPI_Comm_call_errhandler", "error %d raised by the program",
                 errorcode);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_call_errhandler, PMPI_Comm_call_errhandler);

typedef struct {
    int color, key, rank;
} split_entry_t;

static int split_order(const void *a, const void *b)
{
    const split_entry_t *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Split @comm by @color (MPI_UNDEFINED: this rank joins none) into
 * communicators ordered by @key, then by rank in @comm.  Collective.  An
 * intercommunicator splits into intercommunicators
 * (pb_mpi_intercomm_split).
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (negative color other than
 *         MPI_UNDEFINED, NULL newcomm); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c, *n;
    split_entry_t *all;
    MPI_Request req;
    uint32_t context;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_split", &c), members = 0, me = 0;

    if (rc != MPI_SUCCESS)
        return rc;
    if (newcomm == NULL || (color < 0 && color != MPI_UNDEFINED))
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_split",
                            newcomm == NULL ? "newcomm is NULL" : "color %d is negative", color);
    if (pb_mpi_comm_is_inter(c))
        return pb_mpi_intercomm_split(c, "MPI_Comm_split", color, key, newcomm);
    all = calloc((size_t)c->size, sizeof(*all));
    if (all == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, "MPI_Comm_split", "out of memory");
    all[c->rank] = (split_entry_t){color, key, c->rank};
    /* everyone's (color, key) to rank 0, and the whole table back */
    if (c->rank == 0) {
        for (int r = 1; r < c->size && rc == MPI_SUCCESS; r++) {
            rc = pb_mpi_irecv_on(&all[r], 3, MPI_INT, r, 2, c, 1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
        }
        for (int r = 1; r < c->size && rc == MPI_SUCCESS; r++) {
            rc = pb_mpi_isend_on(all, 3 * c->size, MPI_INT, r, 3, c, 1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
        }
    } else {
        rc = pb_mpi_isend_on(&all[c->rank], 3, MPI_INT, 0, 2, c, 1, &req);
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_wait_requests(1, &req);
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_irecv_on(all, 3 * c->size, MPI_INT, 0, 3, c, 1, &req);
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_wait_requests(1, &req);
    }
    if (rc == MPI_SUCCESS)
        rc = pb_mpi_agree_context(c, &context);
    if (rc != MPI_SUCCESS) {
        free(all);
        return pb_mpi_raise(comm, rc, "MPI_Comm_split", "exchanging colors failed");
    }
    if (color == MPI_UNDEFINED) {
        free(all);
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    /* this rank's group, in (key, rank) order */
    for (int r = 0; r < c->size; r++) {
        if (all[r].color == color)
            all[members++] = all[r];
    }
    qsort(all, (size_t)members, sizeof(*all), split_order);
    for (int i = 0; i < members; i++) {
        if (all[i].rank == c->rank)
            me = i;
    }
    n = comm_new();
    if (n == NULL || comm_fill(n, me, members, context) != MPI_SUCCESS) {
        if (n != NULL)
            comm_delete(n);
        free(all);
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, "MPI_Comm_split", "out of memory");
    }
    n->session = c->session;
    for (int i = 0; i < members; i++) {
        n->world[i] = c->world[all[i].rank];
        n->local[n->world[i]] = i;
    }
    n->errhandler = c->errhandler;
    free(all);
    *newcomm = n->handle;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_split, PMPI_Comm_split);

/* Free the communicator *@comm (made by MPI_Comm_dup or _split, an
 * intercommunicator with its local group) and set it to MPI_COMM_NULL.  @return MPI_SUCCESS;
 * MPI_ERR_COMM (a predefined or unknown communicator). */
PB_EXPORT int PMPI_Comm_free(MPI_Comm *comm)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc;

    if (comm == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Comm_free", "comm is NULL");
    rc = pb_mpi_comm_check(*comm, "MPI_Comm_free", &c);
    if (rc != MPI_SUCCESS)
        return rc;
    return pb_mpi_comm_free_object(comm, c, "MPI_Comm_free");
}

int pb_mpi_comm_free_object(MPI_Comm *comm, pb_comm_t *c, const char *func)
{
    int rc;

    if (c == &mpi.world || c == &mpi.self)
        return pb_mpi_raise(*comm, MPI_ERR_COMM, func,
                            "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed");
    rc = pb_mpi_attr_delete_all(c);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(*comm, rc, func, "an attribute delete callback failed");
    pb_mpi_bsend_comm_free(c);
    pb_coll_node_release(c);
    comm_delete(c);
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_free, PMPI_Comm_free);

/* How the ranks of @a and @b compare: MPI_CONGRUENT (the same processes
 * in the same order), MPI_SIMILAR (the same processes), MPI_UNEQUAL. */
static int groups_compare(const pb_comm_t *a, const pb_comm_t *b)
{
    int same_order = 1;

    if (a->size != b->size)
        return MPI_UNEQUAL;
    for (int r = 0; r < a->size; r++) {
        if (b->local[a->world[r]] < 0)
            return MPI_UNEQUAL;
        same_order &= a->world[r] == b->world[r];
    }
    return same_order ? MPI_CONGRUENT : MPI_SIMILAR;
}

/* Compare two communicators: MPI_IDENT (the same), MPI_CONGRUENT (same
 * ranks in the same order), MPI_SIMILAR (same ranks), MPI_UNEQUAL; two
 * intercommunicators by both their groups (the weaker result), an intra-
 * and an intercommunicator are MPI_UNEQUAL.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *a, *b;
    int rc = pb_mpi_comm_check(comm1, "MPI_Comm_compare", &a);

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_comm_check(comm2, "MPI_Comm_compare", &b);
    if (rc != MPI_SUCCESS)
        return rc;
    if (result == NULL)
        return pb_mpi_raise(comm1, MPI_ERR_ARG, "MPI_Comm_compare", "result is NULL");
    if (a == b) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (pb_mpi_comm_is_inter(a) != pb_mpi_comm_is_inter(b)) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    *result = groups_compare(a, b);
    /* intercommunicators: the local groups too, the weaker result */
    if (pb_mpi_comm_is_inter(a) && *result != MPI_UNEQUAL) {
        int local = groups_compare(a->local_group, b->local_group);

        *result = local > *result ? local : *result;
    }
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_compare, PMPI_Comm_compare);

/* Name @comm (at most MPI_MAX_OBJECT_NAME - 1 characters kept).
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Comm_set_name(MPI_Comm comm, const char *name)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_set_name", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (name == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_set_name", "name is NULL");
    snprintf(c->name, sizeof(c->name), "%s", name);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_set_name, PMPI_Comm_set_name);

/* Store @comm's name and its length.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Comm_get_name(MPI_Comm comm, char *name, int *resultlen)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_get_name", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (name == NULL || resultlen == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_get_name", "NULL argument");
    *resultlen = snprintf(name, MPI_MAX_OBJECT_NAME, "%s", c->name);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_get_name, PMPI_Comm_get_name);

/* ---- life cycle ---------------------------------------------------------------- */

int pb_mpi_thread_level_grant(int required)
{
    if (required > MPI_THREAD_MULTIPLE)
        return MPI_THREAD_MULTIPLE;
    return required < MPI_THREAD_SINGLE ? MPI_THREAD_SINGLE : required;
}

/* Join the job and start the engine with the world's and self's
 * communicator objects (the world model's MPI_COMM_WORLD and
 * MPI_COMM_SELF, and the members of the sessions' process sets).
 * Collective over the job (the engine's start fences it).
 * @return MPI_SUCCESS or the error raised by @func. */
static int engine_start(const char *func)
{
    int rc, first;

    if (postbox_job_init() != 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "cannot join the job (start the program with postbox run, "
                            "mpiexec or srun, or alone as one rank)");
    mpi.world.handle = MPI_COMM_WORLD;
    mpi.self.handle = MPI_COMM_SELF;
    mpi.world.errhandler = mpi.self.errhandler = MPI_ERRORS_ARE_FATAL;
    snprintf(mpi.world.name, sizeof(mpi.world.name), "MPI_COMM_WORLD");
    snprintf(mpi.self.name, sizeof(mpi.self.name), "MPI_COMM_SELF");
    /* the engine's processes are the job's ranks: with a universe of slots
     * every slot, MPI_COMM_WORLD the block of this process's world */
    mpi.slots = postbox_job_size();
    mpi.slot = postbox_job_rank();
    first = postbox_job_world_first();
    if (comm_fill(&mpi.world, mpi.slot - first, postbox_job_world_size(), 0) != MPI_SUCCESS ||
        comm_fill(&mpi.self, 0, 1, 2) != MPI_SUCCESS ||
        (postbox_job_universe() &&
         comm_fill(&mpi.universe, mpi.slot, mpi.slots, 0) != MPI_SUCCESS)) {
        comm_release(&mpi.world);
        comm_release(&mpi.self);
        comm_release(&mpi.universe);
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
    }
    for (int r = 0; r < mpi.world.size; r++) {
        mpi.world.world[r] = first + r;
        mpi.world.local[first + r] = r;
    }
    for (int r = 0; mpi.universe.world != NULL && r < mpi.slots; r++)
        mpi.universe.world[r] = mpi.universe.local[r] = r;
    mpi.universe.handle = MPI_COMM_NULL;
    mpi.universe.errhandler = MPI_ERRORS_RETURN;
    mpi.self.world[0] = mpi.slot;
    mpi.self.local[mpi.slot] = 0;
    pb_mpi_context_reset();
    rc = pb_mpi_p2p_init();
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(MPI_COMM_NULL, rc, func, "cannot set up the messaging engine");
    mpi.engine_on = 1;
    return pb_mpi_spawn_start(func);
}

/* Stop the engine: free every communicator left, tear down what the
 * collectives and windows set up.  Collective over the job.  The job stays
 * joined until the world model ends, so that a later MPI_Session_init can
 * start the engine again. */
static void engine_stop(void)
{
    pb_mpi_attr_finalize();
    pb_mpi_win_finalize();
    pb_coll_node_finalize();
    pb_coll_table_finalize();
    pb_coll_scratch_finalize();
    pb_mpi_bsend_finalize();
    pb_mpi_part_finalize();
    pb_sched_finalize();
    pb_mpi_p2p_finalize();
    for (pb_comm_t *c; (c = pb_eng_handle_any(PB_ENG_HANDLE_COMM)) != NULL;)
        comm_delete(c);
    comm_release(&mpi.world);
    comm_release(&mpi.self);
    comm_release(&mpi.universe);
    mpi.engine_on = 0;
}

/* MPI_Session_init and _finalize may be called by any thread: the count of
 * users and the engine's start and stop are under this lock */
static pthread_mutex_t instance_lock = PTHREAD_MUTEX_INITIALIZER;

int pb_mpi_instance_start(const char *func)
{
    int rc = MPI_SUCCESS;

    pthread_mutex_lock(&instance_lock);
    if (mpi.life == LIFE_FINALIZED && mpi.users == 0) {
        pthread_mutex_unlock(&instance_lock);
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "MPI cannot start again once MPI_Finalize ended it (the job "
                            "was left)");
    }
    if (mpi.users == 0)
        rc = engine_start(func);
    if (rc == MPI_SUCCESS)
        mpi.users++;
    pthread_mutex_unlock(&instance_lock);
    return rc;
}

void pb_mpi_instance_stop(void)
{
    pthread_mutex_lock(&instance_lock);
    if (--mpi.users == 0) {
        engine_stop();
        if (mpi.life == LIFE_FINALIZED)
            postbox_job_finalize();
    }
    pthread_mutex_unlock(&instance_lock);
}

static int init_common(const char *func, int required, int *provided)
{
    int rc;

    if (mpi.life != LIFE_BEFORE)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            mpi.life == LIFE_ACTIVE ? "MPI is already initialized"
                                                    : "MPI cannot be initialized again "
                                                      "after MPI_Finalize");
    rc = pb_mpi_instance_start(func);
    if (rc != MPI_SUCCESS)
        return rc;
    mpi.thread_requested = required;
    mpi.thread_level = pb_mpi_thread_level_grant(required);
    if (mpi.thread_level == MPI_THREAD_MULTIPLE)
        pb_eng_lock_use(1);
    mpi.main_thread = pthread_self();
    if (provided != NULL)
        *provided = mpi.thread_level;
    mpi.life = LIFE_ACTIVE;
    return MPI_SUCCESS;
}

/* Join the job and start MPI: MPI_COMM_WORLD holds every rank the launcher
 * started.  @return MPI_SUCCESS; MPI_ERR_OTHER (already initialized, no
 * job, the engine could not start; fatal by default). */
PB_EXPORT int PMPI_Init(int *argc, char ***argv)
{
    PB_MPI_THREAD_GUARD;

    (void)argc, (void)argv;
    return init_common("MPI_Init", MPI_THREAD_SINGLE, NULL);
}
PB_MPI_WEAK_ALIAS(MPI_Init, PMPI_Init);

/* MPI_Init asking for thread level @required; *@provided gets the level
 * given: @required itself (MPI_THREAD_MULTIPLE takes the library lock of
 * src/mpi/engine/lock.h).  @return as MPI_Init. */
PB_EXPORT int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    PB_MPI_THREAD_GUARD;

    (void)argc, (void)argv;
    if (provided == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Init_thread", "provided is NULL");
    return init_common("MPI_Init_thread", required, provided);
}
PB_MPI_WEAK_ALIAS(MPI_Init_thread, PMPI_Init_thread);

/* End the world model: collective over MPI_COMM_WORLD; every rank's
 * communication must be complete.  The engine stops here unless sessions
 * are still live (the last MPI_Session_finalize stops it then).
 * @return MPI_SUCCESS; MPI_ERR_OTHER (not initialized). */
PB_EXPORT int PMPI_Finalize(void)
{
    PB_MPI_THREAD_GUARD;

    if (mpi.life != LIFE_ACTIVE)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, "MPI_Finalize",
                            mpi.life == LIFE_BEFORE ? "called before MPI_Init" : "called twice");
    /* MPI_COMM_SELF's attributes are deleted first, then MPI_COMM_WORLD's */
    pb_mpi_attr_delete_all(&mpi.self);
    pb_mpi_attr_delete_all(&mpi.world);
    mpi.life = LIFE_FINALIZED;
    pb_mpi_instance_stop();
    if (mpi.thread_level == MPI_THREAD_MULTIPLE)
        pb_eng_lock_use(0);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Finalize, PMPI_Finalize);

/* *@flag = whether MPI_Init has been called.  @return MPI_SUCCESS;
 * MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Initialized(int *flag)
{
    if (flag == NULL)
        return MPI_ERR_ARG;
    *flag = mpi.life != LIFE_BEFORE;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Initialized, PMPI_Initialized);

/* *@flag = whether MPI_Finalize has completed.  @return MPI_SUCCESS;
 * MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Finalized(int *flag)
{
    if (flag == NULL)
        return MPI_ERR_ARG;
    *flag = mpi.life == LIFE_FINALIZED;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Finalized, PMPI_Finalized);

/* The thread level MPI_Init_thread provided.  @return MPI_SUCCESS;
 * MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Query_thread(int *provided)
{
    if (provided == NULL)
        return MPI_ERR_ARG;
    *provided = mpi.thread_level;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Query_thread, PMPI_Query_thread);

/* *@flag = whether the caller is the thread that initialized MPI.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Is_thread_main(int *flag)
{
    if (flag == NULL)
        return MPI_ERR_ARG;
    *flag = mpi.life != LIFE_BEFORE && pthread_equal(pthread_self(), mpi.main_thread);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Is_thread_main, PMPI_Is_thread_main);

/* End every rank of the job with @errorcode (the launcher reports it).
 * Does not return. */
PB_EXPORT int PMPI_Abort(MPI_Comm comm, int errorcode)
{
    PB_MPI_THREAD_GUARD;
    char message[64];

    (void)comm;
    snprintf(message, sizeof(message), "MPI_Abort called with error code %d", errorcode);
    if (mpi.engine_on)
        postbox_job_abort(errorcode, message);
    fprintf(stderr, "postbox mpi: %s\n", message);
    _exit(errorcode);
}
PB_MPI_WEAK_ALIAS(MPI_Abort, PMPI_Abort);

/* The name of this process's node (the host name, "/<k>" for virtual
 * node k of `postbox run --nodes`).  @return MPI_SUCCESS; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Get_processor_name(char *name, int *resultlen)
{
    PB_MPI_THREAD_GUARD;
    const char *node;

    if (name == NULL || resultlen == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Get_processor_name", "NULL argument");
    node = mpi.engine_on ? postbox_job_node_name(postbox_job_node(mpi.slot)) : NULL;
    if (node != NULL) {
        *resultlen = snprintf(name, MPI_MAX_PROCESSOR_NAME, "%s", node);
    } else {
        gethostname(name, MPI_MAX_PROCESSOR_NAME);
        name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
        *resultlen = (int)strlen(name);
    }
    if (*resultlen >= MPI_MAX_PROCESSOR_NAME)
        *resultlen = MPI_MAX_PROCESSOR_NAME - 1;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Get_processor_name, PMPI_Get_processor_name);

/* ---- handle conversions ---------------------------------------------------------- */

/* The integer of @comm: MPI_COMM_NULL's, MPI_COMM_WORLD's or
 * MPI_COMM_SELF's ABI value, or a created communicator's (from
 * PB_ENG_HANDLE_INT_BASE up).  A handle that is no live communicator raises
 * MPI_ERR_COMM and gives MPI_COMM_NULL's. */
PB_EXPORT int PMPI_Comm_toint(MPI_Comm comm)
{
    if ((uintptr_t)comm < PB_ENG_HANDLE_INT_BASE)
        return (int)(uintptr_t)comm;
    if (pb_mpi_comm(comm) == NULL) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_toint",
                     "comm (%p) is not a communicator (freed, or never created)", (void *)comm);
        return (int)(uintptr_t)MPI_COMM_NULL;
    }
    return pb_eng_handle_toint(PB_ENG_HANDLE_COMM, comm);
}
PB_MPI_WEAK_ALIAS(MPI_Comm_toint, PMPI_Comm_toint);

/* The communicator of integer @comm (MPI_Comm_toint), or MPI_COMM_NULL
 * when no live communicator has it. */
PB_EXPORT MPI_Comm PMPI_Comm_fromint(int comm)
{
    MPI_Comm c;

    if (comm == (int)(uintptr_t)MPI_COMM_WORLD || comm == (int)(uintptr_t)MPI_COMM_SELF)
        return (MPI_Comm)(uintptr_t)comm;
    c = pb_eng_handle_fromint(PB_ENG_HANDLE_COMM, comm);
    return c != NULL ? c : MPI_COMM_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_fromint, PMPI_Comm_fromint);

/* The integer of @errhandler: a predefined handler's ABI value
 * (MPI_ERRHANDLER_NULL, MPI_ERRORS_ARE_FATAL, _ABORT, _RETURN), or a
 * created handler's.  A handle that is no error handler raises
 * MPI_ERR_ERRHANDLER and gives MPI_ERRHANDLER_NULL's. */
PB_EXPORT int PMPI_Errhandler_toint(MPI_Errhandler errhandler)
{
    int i;

    if ((uintptr_t)errhandler < PB_ENG_HANDLE_INT_BASE)
        return (int)(uintptr_t)errhandler;
    i = pb_eng_handle_toint(PB_ENG_HANDLE_ERRHANDLER, errhandler);
    if (i < 0) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ERRHANDLER, "MPI_Errhandler_toint",
                     "errhandler (%p) is not an error handler (freed, or never created)",
                     (void *)errhandler);
        return (int)(uintptr_t)MPI_ERRHANDLER_NULL;
    }
    return i;
}
PB_MPI_WEAK_ALIAS(MPI_Errhandler_toint, PMPI_Errhandler_toint);

/* The error handler of integer @errhandler (MPI_Errhandler_toint), or
 * MPI_ERRHANDLER_NULL for an integer no live handler has. */
PB_EXPORT MPI_Errhandler PMPI_Errhandler_fromint(int errhandler)
{
    MPI_Errhandler e;

    if (errhandler == (int)(uintptr_t)MPI_ERRORS_ARE_FATAL ||
        errhandler == (int)(uintptr_t)MPI_ERRORS_ABORT ||
        errhandler == (int)(uintptr_t)MPI_ERRORS_RETURN)
        return (MPI_Errhandler)(uintptr_t)errhandler;
    e = pb_eng_handle_fromint(PB_ENG_HANDLE_ERRHANDLER, errhandler);
    return e != NULL ? e : MPI_ERRHANDLER_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Errhandler_fromint, PMPI_Errhandler_fromint);
