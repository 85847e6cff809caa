/*
 * Schedules (docs/mpi.md, "Nonblocking and persistent collectives"): a
 * collective written down as data, so that it can run while the program
 * does something else, and run again (a persistent collective).
 *
 * A schedule is a list of rounds.  A round is a set of sends and receives,
 * started together through pb_mpi_isend_on/pb_mpi_irecv_on on the
 * communicator's collective context, followed by local steps (a typed
 * copy, a reduction with pb_mpi_op_apply) that run, in the order they
 * were added, once every transfer of the round completed.  Temporary
 * buffers belong to the schedule (pb_sched_scratch).
 *
 * An algorithm builds one with the calls below, in the order the blocking
 * algorithm would act: every call appends to the open round; a send or
 * receive added after a local step opens a new round, and
 * pb_sched_round_end closes the open round (a receive that must complete
 * before a send starts: two rounds).  Buffers are addresses fixed at
 * build time: a persistent collective's buffers are the program's for the
 * request's life, its scratch buffers the schedule's.  Building never
 * fails half-way silently: the first error (out of memory) is kept and
 * returned by pb_sched_request, which frees the schedule then.
 *
 * Running: pb_sched_request makes the collective request (kind
 * PB_ENG_REQ_COLL of the engine, engine.h) that owns the schedule, and
 * pb_sched_start starts it.  Started schedules are advanced by the engine:
 * sched.c adds its progress hook (pb_eng_progress_hook_add) while any runs, so every round of
 * pb_eng_progress (MPI_Wait, MPI_Test of any request, a blocking call)
 * completes what it can of them.  No thread runs them.
 *
 * Tags: all the messages of one schedule carry one tag on the collective
 * context, pb_sched_tag's, PB_SCHED_TAG_FIRST + (the communicator's count of
 * nonblocking and persistent collectives so far) modulo PB_SCHED_TAGS.
 * Every rank starts (or, persistent, initialises) the collectives of a
 * communicator in the same order, so they agree on it; collectives in
 * flight at once never share a tag (unless PB_SCHED_TAGS of them are), and
 * the range is above the tags of the blocking collectives (coll_p2p.c: 16..25),
 * of the neighborhood collectives (40..63) and of the context agreement
 * (0, 1).  Within one schedule the messages between two ranks match in
 * order: both ranks post them in round order.
 */
#ifndef PB_MPI_SCHED_H
#define PB_MPI_SCHED_H

#include "mpi/comm.h"
#include "mpi/datatype.h"

/* the tags of schedules on the collective context */
#define PB_SCHED_TAG_FIRST 1024
#define PB_SCHED_TAGS 65536

typedef struct pb_sched pb_sched_t;

/* The tag of the next nonblocking or persistent collective of @c (each
 * call counts one). */
int pb_sched_tag(pb_comm_t *c);

/* An empty schedule on @c whose messages carry @tag, or NULL without
 * memory. */
pb_sched_t *pb_sched_new(pb_comm_t *c, int tag);

/* Add to the open round a send of @count elements of @type at @buf to rank
 * @dest of the communicator (a receive from @source into @buf).  @type
 * stays usable until the schedule is freed, though the program frees it. */
void pb_sched_send(pb_sched_t *s, const void *buf, MPI_Count count, MPI_Datatype type, int dest);
void pb_sched_recv(pb_sched_t *s, void *buf, MPI_Count count, MPI_Datatype type, int source);

/* Send and receive over @c from now on: an intercommunicator's schedule
 * (whose communicator is the intercommunicator) switches between it and
 * its local group (comm.h), which lives as long as it. */
void pb_sched_use(pb_sched_t *s, pb_comm_t *c);

/* Add a local step: copy @scount elements of @stype at @src into the
 * @dcount elements of @dtype at @dst, as a message would (MPI_ERR_TRUNCATE
 * when they do not fit). */
void pb_sched_copy(pb_sched_t *s, const void *src, MPI_Count scount, MPI_Datatype stype, void *dst,
                   MPI_Count dcount, MPI_Datatype dtype);

/* Add a local step: @inout = @in @op @inout over @count elements of @type
 * (MPI_Reduce_local's order). */
void pb_sched_reduce(pb_sched_t *s, MPI_Op op, const void *in, void *inout, MPI_Count count,
                     MPI_Datatype type);

/* A local step that calls @call(@arg): it returns MPI_SUCCESS, an error
 * (the schedule's), or PB_SCHED_AGAIN, after which the schedule runs again
 * from its first round (at the next progress).  @arg lives as long as the
 * schedule (pb_sched_bytes). */
#define PB_SCHED_AGAIN (-1)
typedef int (*pb_sched_call_t)(void *arg);
void pb_sched_call(pb_sched_t *s, pb_sched_call_t call, void *arg);

/* Close the open round: what is added next runs after it. */
void pb_sched_round_end(pb_sched_t *s);

/* A buffer for @count elements of @type laid out as the type says,
 * freed with the schedule; NULL without memory (and the schedule failed). */
void *pb_sched_scratch(pb_sched_t *s, MPI_Count count, MPI_Datatype type);

/* Contiguous bytes freed with the schedule; NULL as pb_sched_scratch. */
void *pb_sched_bytes(pb_sched_t *s, size_t bytes);

/* Make the collective request that owns @s (built), in *@request_p, and
 * start it unless @persistent (which MPI_Start starts).  @return
 * MPI_SUCCESS, or the first error of building (MPI_ERR_NO_MEM): then @s
 * is freed and *@request_p untouched. */
int pb_sched_request(pb_sched_t *s, int persistent, MPI_Request *request_p);

/* Start the inactive persistent collective request @r (MPI_Start): from
 * its first round, with the program's buffers as they are now. */
void pb_sched_start(MPI_Request r);

/* The engine stops: no schedule survives into a later start (ones still
 * running, an erroneous program's, are forgotten). */
void pb_sched_finalize(void);

/* Free @s (not running): its scratch buffers, its datatypes. */
void pb_sched_free(pb_sched_t *s);

#endif
