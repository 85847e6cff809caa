/*
 * Schedules (sched.h): building, the collective request that owns one,
 * and running them from the engine's progress (pb_eng_progress_hook_add).
 *
 * A running schedule is in the list `running`; while the list is not
 * empty the hook is set, and every pb_eng_progress advances each schedule
 * as far as it can: once every transfer of its round completed it lets
 * them go, runs the round's local steps and starts the next round, until
 * a round waits for a message or the schedule is done (its request
 * complete, with the first error any step met).  A step that fails
 * (a truncated receive) does not stop the schedule: the other ranks
 * still get their messages, and the error is the request's.
 */
#include "mpi/sched.h"

#include <stdlib.h>

#include "mpi/coll_util.h"
#include "mpi/datatype.h"
#include "mpi/engine/engine.h"
#include "mpi/engine/handle.h"
#include "mpi/op.h"
#include "mpi/p2p.h"

enum {
    STEP_SEND,
    STEP_RECV,
    STEP_COPY,
    STEP_REDUCE,
    STEP_CALL
};

typedef struct {
    int kind;
    const void *src; /* send, copy, reduce (in) */
    void *dst;       /* receive, copy, reduce (inout) */
    MPI_Count count, dcount;
    MPI_Datatype type, dtype;  /* dtype: the copy's destination */
    MPI_Datatype program_type; /* a reduction's: the handle the program passed */
    int peer;
    pb_comm_t *comm; /* a transfer's communicator (the schedule's, or its local group) */
    MPI_Op op;
    pb_sched_call_t call; /* a call step's function, with dst its argument */
} step_t;

/* a datatype the program created, and the schedule's own duplicate of it */
typedef struct {
    MPI_Datatype program, held;
} held_type_t;

struct pb_sched {
    pb_comm_t *comm;
    pb_comm_t *on; /* the communicator of the transfers added now (pb_sched_use) */
    int tag;
    int rc; /* the first error building */
    step_t *steps;
    int nsteps, steps_max;
    int *round_end; /* round i is steps round_end[i - 1] .. round_end[i] - 1 */
    int rounds, rounds_max;
    int open_first;     /* the first step of the open round */
    int open_local;     /* the open round has a local step */
    int open_transfers; /* ... and this many transfers */
    int transfers_max;  /* the most transfers of a round */
    void **mem;         /* scratch buffers */
    int nmem, mem_max;
    held_type_t *types;
    int ntypes, types_max;
    /* running */
    MPI_Request owner;
    MPI_Request *reqs; /* the running round's transfers */
    int nreqs;
    int round;  /* the round running */
    int posted; /* its transfers are started */
    int status; /* the first error running */
    pb_sched_t *next;
};

static pb_sched_t *running;
static int advancing; /* the hook is running (a step may re-enter progress) */

/* ---- scratch buffers -------------------------------------------------------------- */

/* Keep @p for the schedule to free; @return @p, or NULL (and the schedule
 * failed) when @p is NULL or cannot be kept. */
static void *keep_mem(pb_sched_t *s, void *p)
{
    if (p != NULL && s->nmem == s->mem_max) {
        int max = s->mem_max ? 2 * s->mem_max : 4;
        void **mem = realloc(s->mem, (size_t)max * sizeof(*mem));

        if (mem == NULL) {
            pb_coll_scratch_put(p);
            p = NULL;
        } else {
            s->mem = mem;
            s->mem_max = max;
        }
    }
    if (p == NULL) {
        s->rc = MPI_ERR_NO_MEM;
        return NULL;
    }
    s->mem[s->nmem++] = p;
    return p;
}

void *pb_sched_bytes(pb_sched_t *s, size_t bytes)
{
    return keep_mem(s, pb_coll_scratch_get(bytes ? bytes : 1));
}

void *pb_sched_scratch(pb_sched_t *s, MPI_Count count, MPI_Datatype type)
{
    MPI_Aint offset;
    void *mem = pb_sched_bytes(s, pb_coll_scratch_span(count, type, &offset));

    return mem != NULL ? (void *)((uintptr_t)mem + (uintptr_t)offset) : NULL;
}

/* The handle the schedule uses for @type: a predefined one itself, a
 * created one the schedule's duplicate (the program may free its own while
 * the collective runs; the standard lets pending communication finish). */
static MPI_Datatype hold_type(pb_sched_t *s, MPI_Datatype type)
{
    MPI_Datatype held;

    if ((uintptr_t)type < PB_ENG_HANDLE_INT_BASE)
        return type;
    for (int i = 0; i < s->ntypes; i++) {
        if (s->types[i].program == type)
            return s->types[i].held;
    }
    if (s->ntypes == s->types_max) {
        int max = s->types_max ? 2 * s->types_max : 4;
        held_type_t *types = realloc(s->types, (size_t)max * sizeof(*types));

        if (types == NULL) {
            s->rc = MPI_ERR_NO_MEM;
            return type;
        }
        s->types = types;
        s->types_max = max;
    }
    if (pb_mpi_type_hold(type, &held) != MPI_SUCCESS) {
        s->rc = MPI_ERR_NO_MEM;
        return type;
    }
    s->types[s->ntypes++] = (held_type_t){type, held};
    return held;
}

/* ---- building --------------------------------------------------------------------- */

int pb_sched_tag(pb_comm_t *c)
{
    return PB_SCHED_TAG_FIRST + (int)(c->sched_seq++ % PB_SCHED_TAGS);
}

pb_sched_t *pb_sched_new(pb_comm_t *c, int tag)
{
    pb_sched_t *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->comm = s->on = c;
    s->tag = tag;
    return s;
}

void pb_sched_round_end(pb_sched_t *s)
{
    if (s->nsteps == s->open_first)
        return;
    if (s->rounds == s->rounds_max) {
        int max = s->rounds_max ? 2 * s->rounds_max : 8;
        int *ends = realloc(s->round_end, (size_t)max * sizeof(*ends));

        if (ends == NULL) {
            s->rc = MPI_ERR_NO_MEM;
            return;
        }
        s->round_end = ends;
        s->rounds_max = max;
    }
    s->round_end[s->rounds++] = s->nsteps;
    if (s->open_transfers > s->transfers_max)
        s->transfers_max = s->open_transfers;
    s->open_first = s->nsteps;
    s->open_local = 0;
    s->open_transfers = 0;
}

static void add_step(pb_sched_t *s, step_t step)
{
    int transfer = step.kind == STEP_SEND || step.kind == STEP_RECV;

    if (s->rc != MPI_SUCCESS)
        return;
    if (transfer && s->open_local)
        pb_sched_round_end(s);
    if (s->nsteps == s->steps_max) {
        int max = s->steps_max ? 2 * s->steps_max : 16;
        step_t *steps = realloc(s->steps, (size_t)max * sizeof(*steps));

        if (steps == NULL) {
            s->rc = MPI_ERR_NO_MEM;
            return;
        }
        s->steps = steps;
        s->steps_max = max;
    }
    step.program_type = step.type;
    step.type = hold_type(s, step.type);
    if (step.kind == STEP_COPY)
        step.dtype = hold_type(s, step.dtype);
    s->steps[s->nsteps++] = step;
    if (transfer)
        s->open_transfers++;
    else
        s->open_local = 1;
}

void pb_sched_send(pb_sched_t *s, const void *buf, MPI_Count count, MPI_Datatype type, int dest)
{
    add_step(s, (step_t){.kind = STEP_SEND,
                         .src = buf,
                         .count = count,
                         .type = type,
                         .peer = dest,
                         .comm = s->on});
}

void pb_sched_recv(pb_sched_t *s, void *buf, MPI_Count count, MPI_Datatype type, int source)
{
    add_step(s, (step_t){.kind = STEP_RECV,
                         .dst = buf,
                         .count = count,
                         .type = type,
                         .peer = source,
                         .comm = s->on});
}

void pb_sched_use(pb_sched_t *s, pb_comm_t *c)
{
    s->on = c;
}

void pb_sched_copy(pb_sched_t *s, const void *src, MPI_Count scount, MPI_Datatype stype, void *dst,
                   MPI_Count dcount, MPI_Datatype dtype)
{
    add_step(s, (step_t){.kind = STEP_COPY,
                         .src = src,
                         .count = scount,
                         .type = stype,
                         .dst = dst,
                         .dcount = dcount,
                         .dtype = dtype});
}

void pb_sched_reduce(pb_sched_t *s, MPI_Op op, const void *in, void *inout, MPI_Count count,
                     MPI_Datatype type)
{
    if (count > 0)
        add_step(s, (step_t){.kind = STEP_REDUCE,
                             .src = in,
                             .dst = inout,
                             .count = count,
                             .type = type,
                             .op = op});
}

void pb_sched_call(pb_sched_t *s, pb_sched_call_t call, void *arg)
{
    add_step(s, (step_t){.kind = STEP_CALL, .call = call, .dst = arg});
}

void pb_sched_free(pb_sched_t *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->nmem; i++)
        pb_coll_scratch_put(s->mem[i]);
    for (int i = 0; i < s->ntypes; i++)
        PMPI_Type_free(&s->types[i].held);
    free(s->mem);
    free(s->types);
    free(s->steps);
    free(s->round_end);
    free(s->reqs);
    free(s);
}

/* ---- running ---------------------------------------------------------------------- */

static void note_error(pb_sched_t *s, int rc)
{
    if (s->status == MPI_SUCCESS)
        s->status = rc;
}

/* Start the transfers of round s->round. */
static void round_post(pb_sched_t *s)
{
    int first = s->round > 0 ? s->round_end[s->round - 1] : 0;

    s->nreqs = 0;
    for (int i = first; i < s->round_end[s->round]; i++) {
        const step_t *st = &s->steps[i];
        MPI_Request *r = &s->reqs[s->nreqs];
        int rc;

        if (st->kind == STEP_SEND)
            rc = pb_mpi_isend_on(st->src, st->count, st->type, st->peer, s->tag, st->comm, 1, r);
        else if (st->kind == STEP_RECV)
            rc = pb_mpi_irecv_on(st->dst, st->count, st->type, st->peer, s->tag, st->comm, 1, r);
        else
            continue;
        if (rc == MPI_SUCCESS)
            s->nreqs++;
        else
            note_error(s, rc);
    }
    s->posted = 1;
}

/* Whether the transfers of the running round completed; if so, let them
 * go (the first receive error is the schedule's). */
static int round_done(pb_sched_t *s)
{
    for (int i = 0; i < s->nreqs; i++) {
        if (!s->reqs[i]->complete)
            return 0;
    }
    for (int i = 0; i < s->nreqs; i++) {
        if (s->reqs[i]->kind == PB_ENG_REQ_RECV && s->reqs[i]->status.MPI_ERROR != MPI_SUCCESS)
            note_error(s, s->reqs[i]->status.MPI_ERROR);
        pb_mpi_request_release(s->reqs[i]);
        s->reqs[i] = MPI_REQUEST_NULL;
    }
    s->nreqs = 0;
    return 1;
}

/* Run the local steps of round s->round.  @return 1 when a call step
 * answered PB_SCHED_AGAIN (the schedule starts over), else 0. */
static int round_local(pb_sched_t *s)
{
    int first = s->round > 0 ? s->round_end[s->round - 1] : 0;

    for (int i = first; i < s->round_end[s->round]; i++) {
        const step_t *st = &s->steps[i];

        if (st->kind == STEP_CALL) {
            int rc = st->call(st->dst);

            if (rc == PB_SCHED_AGAIN)
                return 1;
            note_error(s, rc);
        } else if (st->kind == STEP_COPY) {
            note_error(s, pb_coll_copy_typed(st->src, st->count, st->type, st->dst, st->dcount,
                                             st->dtype));
        } else if (st->kind == STEP_REDUCE) {
            /* a user op gets the datatype handle of the call (the standard
             * says so), while the program still holds it; else the
             * schedule's own (the same layout) */
            pb_mpi_op_apply(st->op, st->src, st->dst, st->count,
                            pb_mpi_datatype(st->program_type) != NULL ? st->program_type
                                                                      : st->type);
        }
    }
    return 0;
}

/* Advance @s as far as it goes now.  @return the rounds finished; *@done_p
 * set once the schedule is complete (its request then is). */
static int advance(pb_sched_t *s, int *done_p)
{
    int moved = 0;

    for (;;) {
        if (s->round == s->rounds) {
            s->owner->status.MPI_ERROR = s->status;
            s->owner->complete = 1;
            pb_eng.completed++;
            *done_p = 1;
            return moved + 1;
        }
        if (!s->posted) {
            round_post(s);
            continue;
        }
        if (!round_done(s))
            return moved;
        if (round_local(s)) {
            /* from the first round again, at the next progress: the
             * others this one waits for run meanwhile */
            s->round = 0;
            s->posted = 0;
            return moved + 1;
        }
        s->round++;
        s->posted = 0;
        moved++;
    }
}

/* The progress hook while schedules run. */
static int advance_all(void)
{
    int moved = 0;

    if (advancing)
        return 0;
    advancing = 1;
    for (pb_sched_t **p = &running; *p != NULL;) {
        pb_sched_t *s = *p;
        int done = 0;

        moved += advance(s, &done);
        if (done) {
            *p = s->next;
            s->next = NULL;
        } else {
            p = &s->next;
        }
    }
    advancing = 0;
    if (running == NULL)
        pb_eng_progress_hook_remove(advance_all);
    return moved;
}

void pb_sched_start(MPI_Request r)
{
    pb_sched_t *s = r->sched;

    r->complete = 0;
    r->active = 1;
    r->status.MPI_ERROR = MPI_SUCCESS;
    s->round = 0;
    s->posted = 0;
    s->status = MPI_SUCCESS;
    s->next = running;
    running = s;
    pb_eng_progress_hook_add(advance_all);
    /* the first rounds go at once: local copies, the first messages */
    advance_all();
}

int pb_sched_request(pb_sched_t *s, int persistent, MPI_Request *request_p)
{
    MPI_Request r;

    pb_sched_round_end(s);
    if (s->rc == MPI_SUCCESS && s->transfers_max > 0) {
        s->reqs = calloc((size_t)s->transfers_max, sizeof(*s->reqs));
        if (s->reqs == NULL)
            s->rc = MPI_ERR_NO_MEM;
    }
    r = s->rc == MPI_SUCCESS ? pb_eng_request_coll(s) : NULL;
    if (r == NULL) {
        int rc = s->rc != MPI_SUCCESS ? s->rc : MPI_ERR_NO_MEM;

        pb_sched_free(s);
        return rc;
    }
    s->owner = r;
    r->comm = s->comm;
    pb_mpi_comm_retain(s->comm);
    r->persistent = persistent;
    if (persistent)
        r->complete = 1; /* inactive: MPI_Wait returns at once */
    else
        pb_sched_start(r);
    *request_p = r;
    return MPI_SUCCESS;
}

void pb_sched_finalize(void)
{
    running = NULL;
    advancing = 0;
}
