/*
 * Context ids (comm.h): the agreements that give every new communicator
 * an id none of its ranks uses, safe when threads agree at once, and the
 * background agreement of MPI_Comm_idup.  docs/mpi.md, "Threads", says
 * why each is built as it is.
 */
#include "mpi/attr.h"
#include "mpi/comm.h"
#include "mpi/engine/engine.h"
#include "mpi/p2p.h"
#include "mpi/sched.h"

/* Context ids: the blocking agreements' from 4 up to NB_CONTEXT_FIRST, the
 * nonblocking duplicates' from there (MPI_Comm_idup, below) */
#define NB_CONTEXT_FIRST 0x20000000u
#define NB_CONTEXT_END PB_MPI_CONTEXT_PENDING /* the partitioned contexts' bit (part.c) above */
/* the blocking agreements' lowest id this rank has not used */
static uint32_t next_context;

/* The agreements on a context id in flight on this rank (comm.h), under
 * the library lock */
#define AGREEMENTS_MAX 64
static struct {
    uint32_t priority[AGREEMENTS_MAX];
    int n;
    int proposing; /* a round's proposal is out: the others' wait */
} agreements;

static int agreement_index(uint32_t priority)
{
    for (int i = 0; i < agreements.n; i++) {
        if (agreements.priority[i] == priority)
            return i;
    }
    return -1;
}

static void agreement_leave(uint32_t priority, uint32_t mine)
{
    int i = agreement_index(priority);

    if (mine != PB_MPI_CONTEXT_RETRY)
        agreements.proposing = 0;
    if (i >= 0)
        agreements.priority[i] = agreements.priority[--agreements.n];
}

uint32_t pb_mpi_context_propose(uint32_t priority)
{
    if (agreement_index(priority) < 0) {
        if (agreements.n == AGREEMENTS_MAX)
            return PB_MPI_CONTEXT_RETRY; /* as many threads agreeing: wait for one */
        agreements.priority[agreements.n++] = priority;
    }
    if (agreements.proposing)
        return PB_MPI_CONTEXT_RETRY;
    for (int i = 0; i < agreements.n; i++) {
        if (agreements.priority[i] < priority)
            return PB_MPI_CONTEXT_RETRY;
    }
    agreements.proposing = 1;
    return next_context;
}

int pb_mpi_context_settle(uint32_t priority, uint32_t mine, uint32_t agreed)
{
    if (agreed == PB_MPI_CONTEXT_RETRY) {
        if (mine != PB_MPI_CONTEXT_RETRY)
            agreements.proposing = 0;
        /* the agreement that holds the proposal, or one of lower priority,
         * runs its round meanwhile */
        pb_eng_lock_yield();
        return 0;
    }
    agreement_leave(priority, mine);
    if (agreed + 2 > next_context)
        next_context = agreed + 2;
    if (next_context > NB_CONTEXT_FIRST)
        pb_eng_fatal("out of context ids (2^28 communicators made)");
    return 1;
}

void pb_mpi_context_abandon(uint32_t priority, uint32_t mine)
{
    agreement_leave(priority, mine);
}

/* One round of pb_mpi_agree_context: *@agreed_p the largest of the ranks'
 * @mine, gathered at rank 0 and sent back (tags 0 and 1 of the collective
 * context). */
static int agree_round(pb_comm_t *comm, uint32_t mine, uint32_t *agreed_p)
{
    uint32_t best = mine, theirs = 0;
    MPI_Request req;
    int rc = MPI_SUCCESS;

    if (comm->rank == 0) {
        for (int r = 1; r < comm->size && rc == MPI_SUCCESS; r++) {
            rc = pb_mpi_irecv_on(&theirs, 1, MPI_UINT32_T, r, 0, comm, 1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
            if (theirs > best)
                best = theirs;
        }
        for (int r = 1; r < comm->size && rc == MPI_SUCCESS; r++) {
            rc = pb_mpi_isend_on(&best, 1, MPI_UINT32_T, r, 1, comm, 1, &req);
            if (rc == MPI_SUCCESS)
                rc = pb_mpi_wait_requests(1, &req);
        }
    } else {
        rc = pb_mpi_isend_on(&mine, 1, MPI_UINT32_T, 0, 0, comm, 1, &req);
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_wait_requests(1, &req);
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_irecv_on(&best, 1, MPI_UINT32_T, 0, 1, comm, 1, &req);
        if (rc == MPI_SUCCESS)
            rc = pb_mpi_wait_requests(1, &req);
    }
    *agreed_p = best;
    return rc;
}

int pb_mpi_agree_context(pb_comm_t *comm, uint32_t *context_p)
{
    for (;;) {
        uint32_t mine = pb_mpi_context_propose(comm->context), agreed;
        int rc = agree_round(comm, mine, &agreed);

        if (rc != MPI_SUCCESS) {
            pb_mpi_context_abandon(comm->context, mine);
            return rc;
        }
        if (pb_mpi_context_settle(comm->context, mine, agreed)) {
            *context_p = agreed;
            return MPI_SUCCESS;
        }
    }
}

/* ---- MPI_Comm_idup: a context agreed without blocking ---------------------------- */

/*
 * A nonblocking duplicate agrees on its context id in a schedule (sched.h)
 * that the engine's progress runs, so no call of it waits for another rank.
 * Its ids come from a space of their own, NB_CONTEXT_FIRST up, so that a
 * blocking agreement (which holds its thread until every rank joins it)
 * never waits for one that runs in the background, nor the other way.
 * Within the space agreements may start in any order on different ranks
 * and complete in any order, so none may wait for another: each attempt is
 * two exchanges over the parent communicator.  (1) Every rank proposes
 * the lowest id of the space it has not taken nor reserved for another
 * agreement, and reserves it; the largest proposal is the candidate.  (2)
 * Every rank says whether it can take the candidate: it can unless the id
 * is taken, promised to another agreement, or reserved by an agreement
 * started before this one (lower priority: the parent's context id, then
 * the order of the calls on it); if it can, it promises the id to this
 * agreement.  When all can, each takes it; else each lets go and the
 * schedule starts over.  A promise lasts one exchange, and an agreement is
 * refused only for an earlier one's reservation, which it then proposes
 * past: every agreement ends.
 */

typedef struct {
    const void *who; /* the agreement's state */
    uint64_t priority;
    uint32_t id;
    int promised;
} nb_claim_t;

static struct {
    uint32_t next; /* the lowest id of the space no communicator has taken */
    nb_claim_t claims[AGREEMENTS_MAX];
    int n;
} nb;

static nb_claim_t *nb_claim_of(const void *who)
{
    for (int i = 0; i < nb.n; i++) {
        if (nb.claims[i].who == who)
            return &nb.claims[i];
    }
    return NULL;
}

static void nb_claim_drop(const void *who)
{
    nb_claim_t *c = nb_claim_of(who);

    if (c != NULL)
        *c = nb.claims[--nb.n];
}

/* The claim that holds @id other than @who's, or NULL. */
static const nb_claim_t *nb_claim_on(uint32_t id, const void *who)
{
    for (int i = 0; i < nb.n; i++) {
        if (nb.claims[i].who != who && nb.claims[i].id == id)
            return &nb.claims[i];
    }
    return NULL;
}

/* (1) The proposal of @who: reserved.  NB_CONTEXT_END when the space is
 * used up or too many agreements run. */
static uint32_t nb_propose(const void *who, uint64_t priority)
{
    uint32_t id = nb.next;

    nb_claim_drop(who);
    while (id < NB_CONTEXT_END && nb_claim_on(id, who) != NULL)
        id += 2;
    if (id >= NB_CONTEXT_END || nb.n == AGREEMENTS_MAX)
        return NB_CONTEXT_END;
    nb.claims[nb.n++] = (nb_claim_t){.who = who, .priority = priority, .id = id};
    return id;
}

/* (2) Whether this rank can take @id for @who; if so, promised to it. */
static int nb_check(const void *who, uint64_t priority, uint32_t id)
{
    const nb_claim_t *other = nb_claim_on(id, who);
    nb_claim_t *mine = nb_claim_of(who);

    if (id < nb.next || id >= NB_CONTEXT_END || mine == NULL)
        return 0;
    if (other != NULL && (other->promised || other->priority < priority))
        return 0;
    mine->id = id;
    mine->promised = 1;
    return 1;
}

/* The state of one MPI_Comm_idup */
typedef struct {
    pb_comm_t *parent, *dup; /* dup: made at the call, its context set at the end */
    uint64_t priority;
    uint32_t mine, agreed, refused;
    uint32_t *theirs; /* rank 0: every rank's proposal, then refusal */
} idup_t;

static int idup_propose(void *arg)
{
    idup_t *d = arg;

    d->mine = d->agreed = nb_propose(d, d->priority);
    return MPI_SUCCESS;
}

static int idup_largest(void *arg)
{
    idup_t *d = arg;

    for (int r = 1; r < d->parent->size; r++) {
        if (d->theirs[r] > d->agreed)
            d->agreed = d->theirs[r];
    }
    return MPI_SUCCESS;
}

static int idup_check(void *arg)
{
    idup_t *d = arg;

    d->refused = !nb_check(d, d->priority, d->agreed);
    return MPI_SUCCESS;
}

static int idup_any_refused(void *arg)
{
    idup_t *d = arg;

    for (int r = 1; r < d->parent->size; r++)
        d->refused |= d->theirs[r];
    return MPI_SUCCESS;
}

static int idup_finish(void *arg)
{
    idup_t *d = arg;

    nb_claim_drop(d);
    if (d->refused)
        return d->agreed >= NB_CONTEXT_END ? MPI_ERR_OTHER : PB_SCHED_AGAIN;
    if (d->agreed + 2 > nb.next)
        nb.next = d->agreed + 2;
    d->dup->context = d->agreed;
    pb_mpi_attr_context_changed(d->dup, PB_MPI_CONTEXT_PENDING);
    return MPI_SUCCESS;
}

/* One exchange of the schedule: every rank's @value to rank 0 (into
 * theirs), then @then at rank 0, then rank 0's @value back to every rank. */
static void idup_exchange(pb_sched_t *s, idup_t *d, uint32_t *value, pb_sched_call_t then)
{
    pb_comm_t *c = d->parent;

    if (c->rank == 0) {
        for (int r = 1; r < c->size; r++)
            pb_sched_recv(s, &d->theirs[r], 1, MPI_UINT32_T, r);
        pb_sched_call(s, then, d);
        for (int r = 1; r < c->size; r++)
            pb_sched_send(s, value, 1, MPI_UINT32_T, r);
    } else {
        pb_sched_send(s, value, 1, MPI_UINT32_T, 0);
        pb_sched_round_end(s);
        pb_sched_recv(s, value, 1, MPI_UINT32_T, 0);
    }
    pb_sched_round_end(s);
}

int pb_mpi_context_idup_start(pb_comm_t *c, pb_comm_t *n, MPI_Request *request_p)
{
    int tag = pb_sched_tag(c);
    pb_sched_t *s = pb_sched_new(c, tag);
    idup_t *d = s != NULL ? pb_sched_bytes(s, sizeof(*d)) : NULL;

    if (d == NULL) {
        pb_sched_free(s);
        return MPI_ERR_NO_MEM;
    }
    *d = (idup_t){.parent = c, .dup = n, .priority = (uint64_t)c->context << 32 | (uint32_t)tag};
    d->theirs = pb_sched_bytes(s, (size_t)c->size * sizeof(uint32_t));
    pb_sched_call(s, idup_propose, d);
    idup_exchange(s, d, &d->agreed, idup_largest);
    pb_sched_call(s, idup_check, d);
    idup_exchange(s, d, &d->refused, idup_any_refused);
    pb_sched_call(s, idup_finish, d);
    return pb_sched_request(s, 0, request_p);
}

void pb_mpi_context_reset(void)
{
    next_context = 4; /* 0-3: MPI_COMM_WORLD's and MPI_COMM_SELF's */
    nb.next = NB_CONTEXT_FIRST;
    nb.n = 0;
}
