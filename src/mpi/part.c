/*
 * Partitioned point-to-point communication (part.h; docs/mpi.md,
 * "Partitioned communication").
 *
 * Matching.  MPI_Psend_init sends its peer a setup message (its partition
 * count, bytes per partition and first data tag) and MPI_Precv_init posts
 * the receive of one, both with the program's tag on the communicator's
 * setup context (its context id | SETUP_CONTEXT): the engine matches them
 * in order, so the requests of a (source, tag, communicator) pair match in
 * the order of their initialization calls, as the standard says, and no
 * program's receive can match either (no context of a communicator has
 * those bits).
 *
 * Data.  Each partition the sender marks ready goes at once, as one
 * standard-mode message of its @count elements from the program's buffer,
 * with tag base + partition on the data context (context id |
 * DATA_CONTEXT); base is a range of tags this sender keeps for the request
 * while it lives, so two partitioned sends to one receiver never share a
 * tag.  The receiver, once its request is started and the setup arrived,
 * posts one receive per sender partition: straight into its buffer when
 * the sender's partitions are whole elements of its datatype and the
 * totals agree, else into a packed staging area that it unpacks one of its
 * own partitions at a time.  A receive partition has arrived once every
 * sender partition overlapping its bytes did, so the two sides may cut the
 * message into different numbers of partitions.  Each start sends and
 * receives the same tags again: messages of one tag between two ranks
 * match in order, and a receive cycle posts its receives only after the
 * previous one completed.
 *
 * Progress: running requests are advanced by a progress hook of the engine
 * (engine.h), so that a wait or test on any request, or MPI_Parrived,
 * completes them.  A request the program frees while its setup message is
 * still under way is kept (a "zombie") until it went.
 */
#include "mpi/part.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/bindings.h"
#include "mpi/comm.h"
#include "mpi/datatype.h"
#include "mpi/engine/engine.h"
#include "mpi/engine/handle.h"
#include "mpi/p2p.h"

/* the bits that make a communicator's context id a partitioned one (the
 * library's ids stay far below them) */
#define SETUP_CONTEXT 0x80000000u
#define DATA_CONTEXT 0x40000000u

/* what MPI_Psend_init tells its receiver */
typedef struct {
    uint64_t partitions, part_bytes, base;
} setup_t;

typedef struct part part_t;

struct part {
    MPI_Request owner; /* NULL once the program freed it */
    int send;
    char *buf;
    int partitions;
    MPI_Count count;
    pb_datatype_t *type; /* retained */
    int world;           /* the peer's world rank, or PB_ENG_PROC_NULL */
    int tag;
    size_t part_bytes; /* count elements' bytes */
    uint32_t data_context;
    setup_t setup;
    MPI_Request setup_req; /* the setup's send or receive, until complete */
    MPI_Request *xfer;     /* per sender partition: its send or receive under way */
    int *flight;           /* the sender partitions with a transfer under way */
    int nflight;
    int error; /* the first transfer's error of this round */
    /* send */
    uint8_t *ready; /* marked ready this round */
    int unready;
    uint32_t base;
    /* receive */
    int matched; /* the setup arrived: the sender's layout is known */
    int sparts;  /* the sender's partitions */
    size_t sbytes /* and bytes in each */, stotal, rtotal;
    uint32_t sbase;
    int posted;       /* this round's receives are posted */
    int *missing;     /* per receive partition: sender partitions still to come */
    char *staging;    /* the packed message, when not received in place */
    part_t *next;     /* running, or zombies */
    part_t *next_all; /* live sends, for their tag ranges */
};

static part_t *running, *zombies, *sends;
static uint32_t next_base; /* where the next send's tag range starts looking */
/* the hook looks at its requests' transfers again only when the engine
 * completed a request since it last looked (pb_eng.completed), or this
 * file started something (changed) */
static uint64_t looked;
static int changed;

/* ---- the rounds ------------------------------------------------------------------ */

static void release_xfer(part_t *p, int k)
{
    int j = p->flight[k];
    MPI_Request x = p->xfer[j];

    if (x->kind == PB_ENG_REQ_RECV && x->status.MPI_ERROR != MPI_SUCCESS && p->error == MPI_SUCCESS)
        p->error = x->status.MPI_ERROR;
    pb_eng_request_release(x);
    p->xfer[j] = NULL;
    p->flight[k] = p->flight[--p->nflight];
}

/* The receive partitions [*@lo, *@hi] that sender partition @j covers
 * (none when *@lo > *@hi). */
static void covered(const part_t *p, int j, int *lo, int *hi)
{
    size_t rb = p->part_bytes, first, last;

    if (rb == 0 || p->sbytes == 0) {
        *lo = 0;
        *hi = p->partitions - 1;
        return;
    }
    first = (size_t)j * p->sbytes / rb;
    last = (((size_t)j + 1) * p->sbytes - 1) / rb;
    *lo = first < (size_t)p->partitions ? (int)first : p->partitions;
    *hi = last < (size_t)p->partitions ? (int)last : p->partitions - 1;
}

/* The sender partitions receive partition @i needs: *@hi - *@lo + 1. */
static int needs(const part_t *p, int i)
{
    size_t rb = p->part_bytes, first = (size_t)i * rb, last;

    if (rb == 0 || p->sbytes == 0)
        return p->sparts;
    if (first >= p->stotal)
        return 0;
    last = ((size_t)i + 1) * rb < p->stotal ? ((size_t)i + 1) * rb - 1 : p->stotal - 1;
    return (int)(last / p->sbytes - first / p->sbytes + 1);
}

/* Receive partition @i is all there: unpack it from the staging area. */
static void unpack_partition(part_t *p, int i)
{
    size_t first = (size_t)i * p->part_bytes, end = first + p->part_bytes;

    if (p->staging == NULL)
        return;
    if (end > p->stotal)
        end = p->stotal;
    if (end > first)
        pb_eng_type_unpack_range(p->staging + first, end - first, p->buf,
                                 (MPI_Count)p->partitions * p->count, p->type, first);
}

/* Sender partition @j arrived. */
static void arrived(part_t *p, int j)
{
    int lo, hi;

    covered(p, j, &lo, &hi);
    for (int i = lo; i <= hi; i++) {
        if (--p->missing[i] == 0)
            unpack_partition(p, i);
    }
}

/* Post the receives of this round (the setup arrived, the request runs). */
static void post(part_t *p)
{
    size_t rsize = pb_eng_type_size(p->type);
    int direct = p->staging == NULL;

    for (int i = 0; i < p->partitions; i++)
        p->missing[i] = needs(p, i);
    for (int j = 0; j < p->sparts; j++) {
        int rc;

        if (direct) {
            MPI_Count first = (MPI_Count)((size_t)j * p->sbytes / rsize);

            rc = pb_eng_recv_start(p->buf + first * pb_eng_type_extent(p->type),
                                   (MPI_Count)(p->sbytes / rsize), p->type, p->world,
                                   (int)(p->sbase + (uint32_t)j), p->data_context, &p->xfer[j]);
        } else {
            rc = pb_eng_recv_start(p->staging + (size_t)j * p->sbytes, (MPI_Count)p->sbytes,
                                   (pb_datatype_t *)pb_eng.byte_type, p->world,
                                   (int)(p->sbase + (uint32_t)j), p->data_context, &p->xfer[j]);
        }
        if (rc != MPI_SUCCESS)
            pb_mpi_fatal(rc, "MPI_Start", "cannot post the receive of a partition");
        p->flight[p->nflight++] = j;
    }
    for (int i = 0; i < p->partitions; i++) {
        if (p->missing[i] == 0)
            unpack_partition(p, i);
    }
    p->posted = 1;
}

/* The setup of receive @p arrived: learn the sender's layout. */
static void match(part_t *p)
{
    size_t rsize = pb_eng_type_size(p->type);

    p->sparts = (int)p->setup.partitions;
    p->sbytes = (size_t)p->setup.part_bytes;
    p->sbase = (uint32_t)p->setup.base;
    p->stotal = (size_t)p->sparts * p->sbytes;
    pb_eng_request_release(p->setup_req);
    p->setup_req = NULL;
    p->xfer = calloc((size_t)p->sparts + 1, sizeof(*p->xfer));
    p->flight = calloc((size_t)p->sparts + 1, sizeof(*p->flight));
    if (p->xfer == NULL || p->flight == NULL)
        pb_mpi_fatal(MPI_ERR_NO_MEM, "MPI_Start", "no memory for a partitioned receive");
    /* in place when every sender partition is whole elements of ours */
    if (p->stotal != p->rtotal || rsize == 0 || p->sbytes % rsize != 0) {
        p->staging = malloc(p->stotal ? p->stotal : 1);
        if (p->staging == NULL)
            pb_mpi_fatal(MPI_ERR_NO_MEM, "MPI_Start",
                         "no memory for the staging area of a partitioned receive");
    }
    p->matched = 1;
}

static void complete(part_t *p)
{
    MPI_Request r = p->owner;

    if (!p->send) {
        r->status.MPI_SOURCE = p->world;
        r->status.MPI_TAG = p->tag;
        r->status.MPI_ERROR = p->stotal > p->rtotal ? MPI_ERR_TRUNCATE : p->error;
        pb_mpi_status_set_bytes(&r->status, p->stotal < p->rtotal ? p->stotal : p->rtotal);
    } else {
        r->status.MPI_ERROR = p->error;
    }
    r->complete = 1;
    pb_eng.completed++;
}

/* Advance running request @p.  @return the steps made; *@done_p once
 * complete. */
static int advance(part_t *p, int *done_p)
{
    int moved = 0;

    if (p->setup_req != NULL && p->setup_req->complete) {
        if (p->send) {
            pb_eng_request_release(p->setup_req);
            p->setup_req = NULL;
        } else {
            match(p);
        }
        moved++;
    }
    if (!p->send && !p->matched)
        return moved;
    if (!p->send && !p->posted) {
        post(p);
        moved++;
    }
    for (int k = 0; k < p->nflight;) {
        int j = p->flight[k];

        if (!p->xfer[j]->complete) {
            k++;
            continue;
        }
        release_xfer(p, k);
        if (!p->send)
            arrived(p, j);
        moved++;
    }
    if (p->nflight == 0 && (p->send ? p->unready == 0 : p->posted)) {
        complete(p);
        *done_p = 1;
    }
    return moved;
}

static int idle(const part_t *p)
{
    return (p->setup_req == NULL || p->setup_req->complete) && p->nflight == 0;
}

static void destroy(part_t *p)
{
    if (p->setup_req != NULL)
        pb_eng_request_release(p->setup_req);
    pb_eng_type_release(p->type);
    free(p->xfer);
    free(p->flight);
    free(p->ready);
    free(p->missing);
    free(p->staging);
    free(p);
}

/* The progress hook while partitioned requests run or zombies wait. */
static int advance_all(void)
{
    static int advancing;
    int moved = 0;

    if (advancing || (!changed && looked == pb_eng.completed))
        return 0;
    advancing = 1;
    changed = 0;
    looked = pb_eng.completed;
    for (part_t **pp = &running; *pp != NULL;) {
        part_t *p = *pp;
        int done = 0;

        moved += advance(p, &done);
        if (done)
            *pp = p->next;
        else
            pp = &p->next;
    }
    for (part_t **pp = &zombies; *pp != NULL;) {
        part_t *p = *pp;

        if (idle(p)) {
            *pp = p->next;
            destroy(p);
            moved++;
        } else {
            pp = &p->next;
        }
    }
    advancing = 0;
    if (running == NULL && zombies == NULL)
        pb_eng_progress_hook_remove(advance_all);
    return moved;
}

void pb_mpi_part_start(MPI_Request r)
{
    part_t *p = r->ext;

    r->complete = 0;
    r->active = 1;
    r->cancelled = 0;
    r->status.MPI_ERROR = MPI_SUCCESS;
    p->error = MPI_SUCCESS;
    if (p->world == PB_ENG_PROC_NULL) {
        r->status.MPI_SOURCE = MPI_PROC_NULL;
        r->status.MPI_TAG = MPI_ANY_TAG;
        pb_mpi_status_set_bytes(&r->status, 0);
        r->complete = 1;
        return;
    }
    if (p->send) {
        memset(p->ready, 0, (size_t)p->partitions);
        p->unready = p->partitions;
    } else {
        p->posted = 0;
    }
    p->next = running;
    running = p;
    changed = 1;
    pb_eng_progress_hook_add(advance_all);
    advance_all();
}

void pb_mpi_part_free(MPI_Request r)
{
    part_t *p = r->ext;

    r->ext = NULL;
    if (p == NULL)
        return;
    p->owner = NULL;
    for (part_t **pp = &sends; *pp != NULL; pp = &(*pp)->next_all) {
        if (*pp == p) {
            *pp = p->next_all;
            break;
        }
    }
    if (idle(p)) {
        destroy(p);
        return;
    }
    p->next = zombies;
    zombies = p;
    changed = 1;
    pb_eng_progress_hook_add(advance_all);
}

const char *pb_mpi_part_failure(MPI_Request r)
{
    part_t *p = r->ext;

    if (p != NULL && !p->send && p->stotal > p->rtotal)
        return "the partitioned send is longer than the receive buffer";
    return "a partition's message failed";
}

/* ---- initialization ------------------------------------------------------------ */

/* A tag range of @p->partitions tags on its data context toward its peer
 * that no live send of this process uses: in p->base.  @return
 * MPI_SUCCESS or MPI_ERR_INTERN (none free). */
static int take_tags(part_t *p)
{
    uint64_t n = (uint64_t)p->partitions, at = next_base;
    int live = 0, tries = 0;

    for (part_t *q = sends; q != NULL; q = q->next_all)
        live++;
    for (;;) {
        part_t *clash = NULL;

        if (at + n > (uint64_t)INT_MAX + 1)
            at = 0;
        for (part_t *q = sends; q != NULL && clash == NULL; q = q->next_all) {
            if (q->data_context == p->data_context && q->world == p->world && n > 0 &&
                at < (uint64_t)q->base + (uint64_t)q->partitions && q->base < at + n)
                clash = q;
        }
        if (clash == NULL)
            break;
        at = (uint64_t)clash->base + (uint64_t)clash->partitions;
        if (++tries > live + 1)
            return MPI_ERR_INTERN;
    }
    p->base = (uint32_t)at;
    next_base = (uint32_t)(at + n);
    return MPI_SUCCESS;
}

/* The checks both initializations share beyond the generated ones, and the
 * request with its state.  @return MPI_SUCCESS or the error raised. */
static int part_init(const char *func, int send, const void *buf, int partitions, MPI_Count count,
                     MPI_Datatype datatype, int peer, int tag, pb_comm_t *c, MPI_Request *request)
{
    MPI_Comm comm = c->handle;
    pb_datatype_t *t;
    part_t *p;
    MPI_Request r;
    int rc;

    if (partitions < 0)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "partitions %d is negative", partitions);
    rc = pb_mpi_check_data(comm, func, buf, count, datatype, peer);
    if (rc != MPI_SUCCESS)
        return rc;
    t = pb_mpi_datatype(datatype);
    if (t == NULL) { /* MPI_DATATYPE_NULL toward MPI_PROC_NULL (count 0): moves nothing */
        t = (pb_datatype_t *)pb_eng.byte_type;
        count = 0;
    }
    if (count > 0 && (uint64_t)partitions > (uint64_t)INT64_MAX / (uint64_t)count / (t->size + 1))
        return pb_mpi_raise(comm, MPI_ERR_COUNT, func,
                            "%d partitions of %lld elements are too many bytes", partitions,
                            (long long)count);
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "no memory for the request");
    p->send = send;
    p->buf = (char *)buf;
    p->partitions = partitions;
    p->count = count;
    p->type = t;
    pb_eng_type_retain(t);
    p->world = peer == MPI_PROC_NULL ? PB_ENG_PROC_NULL : c->world[peer];
    p->tag = tag;
    p->part_bytes = (size_t)count * pb_eng_type_size(t);
    p->rtotal = (size_t)partitions * p->part_bytes;
    p->data_context = c->context | DATA_CONTEXT;
    p->flight = send ? calloc((size_t)partitions + 1, sizeof(*p->flight)) : NULL;
    p->xfer = send ? calloc((size_t)partitions + 1, sizeof(*p->xfer)) : NULL;
    p->ready = send ? calloc((size_t)partitions + 1, 1) : NULL;
    p->missing = send ? NULL : calloc((size_t)partitions + 1, sizeof(*p->missing));
    r = pb_eng_request_api(send ? PB_ENG_REQ_PSEND : PB_ENG_REQ_PRECV);
    if (r == NULL ||
        (send ? p->flight == NULL || p->xfer == NULL || p->ready == NULL : p->missing == NULL)) {
        if (r != NULL)
            pb_eng_request_release(r);
        destroy(p);
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "no memory for the request");
    }
    if (send && take_tags(p) != MPI_SUCCESS) {
        pb_eng_request_release(r);
        destroy(p);
        return pb_mpi_raise(comm, MPI_ERR_INTERN, func, "no free range of %d tags toward rank %d",
                            partitions, peer);
    }
    rc = MPI_SUCCESS;
    if (p->world != PB_ENG_PROC_NULL && send) {
        p->setup = (setup_t){(uint64_t)partitions, p->part_bytes, p->base};
        rc = pb_eng_send_start(&p->setup, sizeof(p->setup), (pb_datatype_t *)pb_eng.byte_type,
                               p->world, tag, c->context | SETUP_CONTEXT, PB_ENG_MODE_STANDARD,
                               &p->setup_req);
    } else if (p->world != PB_ENG_PROC_NULL) {
        rc = pb_eng_recv_start(&p->setup, sizeof(p->setup), (pb_datatype_t *)pb_eng.byte_type,
                               p->world, tag, c->context | SETUP_CONTEXT, &p->setup_req);
    }
    if (rc != MPI_SUCCESS) {
        pb_eng_request_release(r);
        destroy(p);
        return pb_mpi_raise(comm, rc, func, "cannot start the matching message");
    }
    p->owner = r;
    r->ext = p;
    r->persistent = 1;
    r->complete = 1; /* inactive: MPI_Wait returns at once */
    r->comm = c;
    pb_mpi_comm_retain(c);
    if (send) {
        p->next_all = sends;
        sends = p;
    }
    *request = r; /* the engine moves the setup message meanwhile */
    return MPI_SUCCESS;
}

int pb_mpi_psend_init_impl(const char *func, const void *buf, int partitions, MPI_Count count,
                           MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Info info,
                           MPI_Request *request, pb_comm_t *c)
{
    (void)comm;
    (void)info;
    return part_init(func, 1, buf, partitions, count, datatype, dest, tag, c, request);
}

int pb_mpi_precv_init_impl(const char *func, void *buf, int partitions, MPI_Count count,
                           MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Info info,
                           MPI_Request *request, pb_comm_t *c)
{
    (void)comm;
    (void)info;
    return part_init(func, 0, buf, partitions, count, datatype, source, tag, c, request);
}

/* ---- marking ready, arrival ------------------------------------------------------ */

/* Check that @request is an active partitioned send for @func.  @return
 * MPI_SUCCESS, or MPI_ERR_REQUEST raised. */
static int check_send(const char *func, MPI_Request request)
{
    if (request == MPI_REQUEST_NULL || !pb_mpi_request_valid(request) ||
        request->kind != PB_ENG_REQ_PSEND)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func,
                            "the request is not a partitioned send (MPI_Psend_init)");
    if (!request->active)
        return pb_mpi_raise(((pb_comm_t *)request->comm)->handle, MPI_ERR_REQUEST, func,
                            "the partitioned send is not active: MPI_Start it first");
    return MPI_SUCCESS;
}

/* Check that @partition is a partition of @p not marked ready yet.
 * @return MPI_SUCCESS, or MPI_ERR_ARG raised. */
static int check_partition(const char *func, MPI_Request request, const part_t *p, int partition)
{
    MPI_Comm comm = ((pb_comm_t *)request->comm)->handle;

    if (partition < 0 || partition >= p->partitions)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func,
                            "partition %d is not one of the request's %d partitions", partition,
                            p->partitions);
    if (p->ready[partition])
        return pb_mpi_raise(comm, MPI_ERR_ARG, func,
                            "partition %d is marked ready already in this round", partition);
    return MPI_SUCCESS;
}

/* Mark partition @j of running send @p ready and send it. */
static int ready(const char *func, MPI_Request request, part_t *p, int j)
{
    int rc;

    p->ready[j] = 1;
    p->unready--;
    changed = 1; /* the last one may complete the request */
    if (p->world == PB_ENG_PROC_NULL)
        return MPI_SUCCESS;
    rc = pb_eng_send_start(p->buf + (MPI_Aint)j * p->count * pb_eng_type_extent(p->type), p->count,
                           p->type, p->world, (int)(p->base + (uint32_t)j), p->data_context,
                           PB_ENG_MODE_STANDARD, &p->xfer[j]);
    if (rc != MPI_SUCCESS) {
        p->error = rc;
        return pb_mpi_raise(((pb_comm_t *)request->comm)->handle, rc, func,
                            "cannot send partition %d", j);
    }
    p->flight[p->nflight++] = j;
    changed = 1;
    return MPI_SUCCESS;
}

/* Mark partition @partition of the active partitioned send @request ready:
 * its data goes now.  @return MPI_SUCCESS; MPI_ERR_REQUEST (not a
 * partitioned send, or inactive); MPI_ERR_ARG (no such partition, or
 * marked ready already). */
PB_EXPORT int PMPI_Pready(int partition, MPI_Request request)
{
    PB_MPI_THREAD_GUARD;
    int rc = check_send("MPI_Pready", request);

    if (rc == MPI_SUCCESS)
        rc = check_partition("MPI_Pready", request, request->ext, partition);
    if (rc == MPI_SUCCESS)
        rc = ready("MPI_Pready", request, request->ext, partition);
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Pready, PMPI_Pready);

/* MPI_Pready of partitions @partition_low to @partition_high (both
 * included); none is marked when one cannot be.  Errors as MPI_Pready,
 * and MPI_ERR_ARG when @partition_low > @partition_high. */
PB_EXPORT int PMPI_Pready_range(int partition_low, int partition_high, MPI_Request request)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Pready_range";
    int rc = check_send(func, request);

    if (rc != MPI_SUCCESS)
        return rc;
    if (partition_low > partition_high)
        return pb_mpi_raise(((pb_comm_t *)request->comm)->handle, MPI_ERR_ARG, func,
                            "partition_low %d is above partition_high %d", partition_low,
                            partition_high);
    for (int j = partition_low; j <= partition_high && rc == MPI_SUCCESS; j++)
        rc = check_partition(func, request, request->ext, j);
    for (int j = partition_low; j <= partition_high && rc == MPI_SUCCESS; j++)
        rc = ready(func, request, request->ext, j);
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Pready_range, PMPI_Pready_range);

/* MPI_Pready of the @length partitions of @array_of_partitions, in their
 * order; none is marked when one is out of range or ready already.
 * Errors as MPI_Pready, and MPI_ERR_ARG (length negative, the array NULL,
 * a partition named twice: those before it are marked). */
PB_EXPORT int PMPI_Pready_list(int length, const int array_of_partitions[], MPI_Request request)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Pready_list";
    int rc = check_send(func, request);

    if (rc != MPI_SUCCESS)
        return rc;
    if (length < 0 || (length > 0 && array_of_partitions == NULL))
        return pb_mpi_raise(((pb_comm_t *)request->comm)->handle, MPI_ERR_ARG, func,
                            length < 0 ? "length is negative" : "array_of_partitions is NULL");
    for (int k = 0; k < length && rc == MPI_SUCCESS; k++)
        rc = check_partition(func, request, request->ext, array_of_partitions[k]);
    for (int k = 0; k < length && rc == MPI_SUCCESS; k++) {
        rc = check_partition(func, request, request->ext, array_of_partitions[k]);
        if (rc == MPI_SUCCESS)
            rc = ready(func, request, request->ext, array_of_partitions[k]);
    }
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Pready_list, PMPI_Pready_list);

/* *@flag = whether partition @partition of partitioned receive @request
 * has arrived (its part of the buffer may be read); true for
 * MPI_REQUEST_NULL and an inactive request.  @return MPI_SUCCESS;
 * MPI_ERR_REQUEST (not a partitioned receive); MPI_ERR_ARG (no such
 * partition, flag NULL). */
PB_EXPORT int PMPI_Parrived(MPI_Request request, int partition, int *flag)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Parrived";
    part_t *p;
    MPI_Comm comm;

    if (flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "flag is NULL");
    if (request == MPI_REQUEST_NULL) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (!pb_mpi_request_valid(request) || request->kind != PB_ENG_REQ_PRECV)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func,
                            "the request is not a partitioned receive (MPI_Precv_init)");
    p = request->ext;
    comm = ((pb_comm_t *)request->comm)->handle;
    if (partition < 0 || partition >= p->partitions)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func,
                            "partition %d is not one of the request's %d partitions", partition,
                            p->partitions);
    if (!request->active || p->world == PB_ENG_PROC_NULL) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (!(p->posted && p->missing[partition] == 0))
        pb_eng_progress();
    *flag = p->posted && p->missing[partition] == 0;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Parrived, PMPI_Parrived);

void pb_mpi_part_finalize(void)
{
    while (zombies != NULL) {
        part_t *p = zombies;

        zombies = p->next;
        if (p->setup_req != NULL && !p->setup_req->complete)
            p->setup_req = NULL; /* still posted: the engine's stop releases it */
        destroy(p);
    }
    running = NULL;
    sends = NULL;
    looked = 0;
    changed = 0;
}
