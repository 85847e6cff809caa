/*
 * Communicators and the library's life cycle (MPI_Init .. MPI_Finalize, and
 * the engine that it and the sessions share).
 *
 * MPI_COMM_WORLD and MPI_COMM_SELF are static objects behind the ABI's
 * predefined values; created communicators are objects of the handle
 * registry (handle.h: a handle not live in it is MPI_ERR_COMM, never a
 * crash).  Each
 * communicator has two context ids: even for point-to-point, odd (+1) for
 * the messages of its collectives, so neither matches the other.  Context
 * ids stay below 2^30: partitioned communication (part.c) sets bit 31 (its
 * setup messages) or bit 30 (its data) of a communicator's id for contexts
 * no communicator has.
 *
 * An intercommunicator (intercomm.c) is the same structure: its size,
 * world and local describe the remote group, whose processes its ranks
 * name, so point-to-point on it takes the path of an intracommunicator;
 * rank is this process's in the local group, which local_group holds as a
 * hidden intracommunicator (no handle) for the collectives within the
 * group.  Both groups use the same two context ids; the hidden local
 * groups use the next two.
 */
#ifndef PB_MPI_COMM_H
#define PB_MPI_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "mpi/mpi_impl.h"

typedef struct MPI_ABI_Comm pb_comm_t;

struct MPI_ABI_Comm {
    MPI_Comm handle;  /* what the program holds */
    uint32_t context; /* point-to-point context id; context + 1: collectives */
    int rank, size;
    int *world; /* world rank of each rank of the communicator */
    int *local; /* rank in the communicator of each world rank, or -1 */
    MPI_Errhandler errhandler;
    char name[MPI_MAX_OBJECT_NAME];
    /* its process topology (topo.h), or NULL */
    struct pb_topo *topo;
    int refs;                       /* requests still using it (a freed one lives until 0) */
    int freed;                      /* MPI_Comm_free'd: its handle no longer names it */
    struct pb_coll_node *coll_node; /* its collective area on this node (coll_node.c) */
    int coll_nodes, coll_ppn;       /* nodes it spans, most ranks on one (0: not yet known) */
    /* the nonblocking and persistent collectives started so far: their
     * tags (src/mpi/sched.h) */
    uint32_t sched_seq;
    /* an intercommunicator's local group (see above); NULL on an
     * intracommunicator */
    pb_comm_t *local_group;
    /* the hints the program gave (MPI_Comm_set_info, _dup_with_info ...),
     * kept as given, or NULL */
    MPI_Info hints;
    /* the session it was made from (its groups, or a communicator made
     * from them; the session's handle), or NULL: whose buffer its buffered
     * sends may use (bsend.c) */
    void *session;
};

/* Whether @c is an intercommunicator. */
static inline int pb_mpi_comm_is_inter(const pb_comm_t *c)
{
    return c->local_group != NULL;
}

/* Raise MPI_ERR_COMM for @func when @c is an intercommunicator (a call the
 * standard or Postbox defines on intracommunicators only).
 * @return MPI_SUCCESS or the error raised. */
int pb_mpi_comm_check_intra(MPI_Comm comm, const char *func, const pb_comm_t *c);

/*
 * Context ids.  A new communicator's id is the largest of its ranks'
 * proposals, each the lowest id its rank has not used, so none of them
 * uses it; every agreement is a loop of rounds over some communicator:
 *
 *     for (;;) {
 *         uint32_t mine = pb_mpi_context_propose(priority);
 *         agreed = the largest of the ranks' proposals;   (collective)
 *         if (pb_mpi_context_settle(priority, mine, agreed)) break;
 *     }
 *
 * Under MPI_THREAD_MULTIPLE several threads of a process may agree at
 * once, over different communicators, and in another order on another
 * process.  So a rank proposes in one agreement's round at a time, the one
 * of lowest @priority among those in flight on it (the parent's context
 * id, distinct for agreements running at once), and answers
 * PB_MPI_CONTEXT_RETRY in the others' rounds, which the largest carries
 * to all: that round decides nothing and runs again.  The agreement of
 * lowest priority in the whole job is never refused for long, so every
 * agreement ends.  Without threads the first round always decides.
 */
#define PB_MPI_CONTEXT_RETRY UINT32_MAX

/* The context of a nonblocking duplicate until its agreement ends: no
 * communicator's (a program that uses it early, which is erroneous,
 * disturbs no other). */
#define PB_MPI_CONTEXT_PENDING 0x3ffffffeu

/* Forget every agreement and start the ids over (the engine starts). */
void pb_mpi_context_reset(void);

/* Start agreeing on the context of @n, the duplicate of the
 * intracommunicator @c made on PB_MPI_CONTEXT_PENDING (MPI_Comm_idup): the
 * request *@request_p sets it once agreed, in the background.  @return
 * MPI_SUCCESS or MPI_ERR_NO_MEM. */
int pb_mpi_context_idup_start(pb_comm_t *c, pb_comm_t *n, MPI_Request *request_p);

/* This rank's proposal in a round of the agreement @priority (registered
 * in flight by its first call): the lowest id it has not used, or
 * PB_MPI_CONTEXT_RETRY when another agreement's round holds the proposal
 * or one of lower priority is in flight. */
uint32_t pb_mpi_context_propose(uint32_t priority);

/* End the round in which this rank proposed @mine and the ranks agreed on
 * @agreed (their largest proposal).  @return 1 when the agreement is over
 * (the ids up to @agreed + 1 are taken), 0 when @agreed is
 * PB_MPI_CONTEXT_RETRY: the caller runs another round. */
int pb_mpi_context_settle(uint32_t priority, uint32_t mine, uint32_t agreed);

/* Leave the agreement @priority after a round that failed (this rank
 * proposed @mine in it): nothing is taken. */
void pb_mpi_context_abandon(uint32_t priority, uint32_t mine);

/* A new intercommunicator whose remote group is the @remote_size world
 * ranks @remote_world and local group the @local_size @local_world (this
 * process among them), on contexts @context and @context + 1 (its local
 * group on the next two), with @errhandler, live in the handle registry;
 * NULL when out of memory or this process is not in @local_world. */
pb_comm_t *pb_mpi_comm_make_inter(int remote_size, const int *remote_world, int local_size,
                                  const int *local_world, uint32_t context,
                                  MPI_Errhandler errhandler);

/* The communicator @handle stands for, or NULL (MPI_COMM_NULL, a freed
 * or made-up handle). */
pb_comm_t *pb_mpi_comm(MPI_Comm handle);

/* Check @handle for use by @func: MPI_SUCCESS, or the error raised
 * (MPI_ERR_COMM, also MPI_COMM_WORLD and MPI_COMM_SELF outside MPI_Init ..
 * MPI_Finalize; MPI_ERR_OTHER when neither MPI_Init nor a session is in
 * force). */
int pb_mpi_comm_check(MPI_Comm handle, const char *func, pb_comm_t **comm_p);

/* Free communicator @c, the one *@comm names (checked by @func, which
 * raises the errors), as MPI_Comm_free does, and set *@comm to
 * MPI_COMM_NULL.  @return MPI_SUCCESS; MPI_ERR_COMM (MPI_COMM_WORLD or
 * MPI_COMM_SELF); an attribute delete callback's error. */
int pb_mpi_comm_free_object(MPI_Comm *comm, pb_comm_t *c, const char *func);

/* Keep @comm alive while a request uses it, though the program frees it
 * meanwhile (the standard allows MPI_Comm_free with operations pending). */
void pb_mpi_comm_retain(pb_comm_t *comm);
void pb_mpi_comm_release(pb_comm_t *comm);

/* Agree with the ranks of @comm on a context id none of them uses (the
 * largest of their next free ids; the new communicator uses it and the
 * next).  Collective over @comm.  @return MPI_SUCCESS or an error class. */
int pb_mpi_agree_context(pb_comm_t *comm, uint32_t *context_p);

/* A new communicator of the @size world ranks @world (this process's among
 * them) with @context and @errhandler, live in the handle registry; NULL
 * when out of memory or this process is not in @world. */
pb_comm_t *pb_mpi_comm_make(int size, const int *world, uint32_t context,
                            MPI_Errhandler errhandler);

/* Whether @eh may be a window's error handler: a predefined one, or one
 * of MPI_Win_create_errhandler. */
int pb_mpi_errhandler_valid_for_win(MPI_Errhandler eh);

/* Call the window error handler @eh (valid for windows, not predefined)
 * on @win with *@code. */
void pb_mpi_errhandler_call_win(MPI_Errhandler eh, MPI_Win *win, int *code);

/* MPI_COMM_WORLD's object while the engine runs, also when only sessions
 * use it (the world's ranks are the sessions' processes); NULL when the
 * engine is stopped.  The program's MPI_COMM_WORLD handle names it only
 * between MPI_Init and MPI_Finalize (pb_mpi_comm). */
pb_comm_t *pb_mpi_comm_world(void);

/* The processes the engine reaches while it runs, 0 .. pb_mpi_slots() - 1:
 * the job's ranks (postbox/job.h), which under `postbox run --universe`
 * are the universe's slots, also those no process was started in yet, and
 * otherwise MPI_COMM_WORLD's ranks.  A communicator's world[] holds them
 * and its local[] has one entry for each.  pb_mpi_my_slot() is this
 * process's. */
int pb_mpi_slots(void);
int pb_mpi_my_slot(void);

/* A hidden communicator of every slot in slot order, on MPI_COMM_WORLD's
 * context, to reach processes of other worlds (dynamic.c); MPI_COMM_WORLD's
 * object itself without a universe; NULL when the engine is stopped. */
pb_comm_t *pb_mpi_comm_universe(void);

/* At the engine's first start in a process that MPI_Comm_spawn started:
 * connect its MPI_COMM_WORLD to the spawning group, whose root accepts on
 * the port in the world's key-value space (MPI_Comm_get_parent's
 * intercommunicator; dynamic.c).  Collective over MPI_COMM_WORLD.
 * @return MPI_SUCCESS (also when the process was not spawned), or the
 * error raised for @func. */
int pb_mpi_spawn_start(const char *func);

/* The engine, reference-counted: MPI_Init and each MPI_Session_init take a
 * reference (the first starts the engine, collective over the job),
 * MPI_Finalize and each MPI_Session_finalize drop one (the last stops it;
 * the job is left once MPI_Finalize was called).  @return MPI_SUCCESS, or
 * the error raised by @func (MPI_ERR_OTHER: no job, the engine could not
 * start, or MPI_Finalize ended MPI for good). */
int pb_mpi_instance_start(const char *func);
void pb_mpi_instance_stop(void);

/* The thread level granted for @required (MPI_Init_thread, the
 * "thread_level" of MPI_Session_init). */
int pb_mpi_thread_level_grant(int required);

/* Whether @eh may be a session's error handler (predefined, or of
 * MPI_Session_create_errhandler), or a communicator's (predefined, or of
 * MPI_Comm_create_errhandler). */
int pb_mpi_errhandler_valid_for_session(MPI_Errhandler eh);
int pb_mpi_errhandler_valid_for_comm(MPI_Errhandler eh);

/* The error handler of session @session (valid). */
MPI_Errhandler pb_mpi_session_errhandler(MPI_Session session);

/* pb_mpi_raise through the session handler @eh of @session (a session call's
 * errors), or through the communicator handler @eh called on MPI_COMM_NULL
 * (MPI_Comm_create_from_group's errors, before the communicator exists). */
int pb_mpi_raise_session(MPI_Session session, MPI_Errhandler eh, int code, const char *func,
                         const char *fmt, ...) PB_PRINTF(5, 6);
int pb_mpi_raise_handler(MPI_Errhandler eh, int code, const char *func, const char *fmt, ...)
    PB_PRINTF(4, 5);

#endif
