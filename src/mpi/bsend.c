/*
 * Buffered mode (p2p.h): the buffers of MPI_Buffer_attach (the process's)
 * and MPI_Comm_attach_buffer (a communicator's), their detach, flush and
 * iflush calls, and the work of MPI_Bsend and MPI_Ibsend once the generated
 * bindings (bindings.c) checked them.
 *
 * The engine sends a buffered message from a copy it makes at once
 * (PB_ENG_MODE_BUFFERED); Postbox never writes into the program's
 * buffer, it accounts for its use: a message takes its packed bytes plus
 * MPI_BSEND_OVERHEAD of the buffer it went through until its send
 * completes, and one the buffer has no room for is refused
 * (MPI_ERR_BUFFER).  A send on a communicator goes through the
 * communicator's buffer when it has one, else through its session's (a
 * communicator made from a session's groups), else through the process's.  A
 * buffer attached as MPI_BUFFER_AUTOMATIC has no limit.
 *
 * Each buffer keeps the requests of its messages under way, numbered in
 * the order they were sent, and lets go of the complete ones whenever it
 * is used; a flush waits until every message sent before it completed,
 * and MPI_Buffer_iflush (MPI_Comm_iflush_buffer) returns a request (a
 * generalized request of grequest.c) that a progress hook completes then.
 */
#include "mpi/p2p.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi/bindings.h"
#include "mpi/engine/engine.h"

typedef struct buffer buffer_t;

struct buffer {
    pb_comm_t *comm; /* NULL: the process's buffer, or a session's */
    void *session;   /* a session's buffer (MPI_Session_attach_buffer): its session */
    char *buf;       /* as attached (MPI_BUFFER_AUTOMATIC too); NULL: none */
    size_t size;
    size_t used;       /* its messages under way: bytes + MPI_BSEND_OVERHEAD each */
    MPI_Request *reqs; /* the messages under way, oldest first */
    size_t *bytes;
    uint64_t *seq;
    int nreqs, max;
    uint64_t sent; /* messages sent through it so far */
    buffer_t *next;
};

/* a flush request waiting for the messages sent before it */
typedef struct flush {
    MPI_Request request;
    buffer_t *b;
    uint64_t until; /* done once no message numbered below it is under way */
    struct flush *next;
} flush_t;

static buffer_t process;
static buffer_t *comm_buffers; /* the communicators' and the sessions' attached buffers */
static flush_t *flushes;

static int flushes_advance(void);

/* Where a call's errors go: @comm's handler, or @session's. */
typedef struct {
    MPI_Comm comm;
    MPI_Session session; /* MPI_SESSION_NULL: @comm's */
} raise_to_t;

static int raise_at(raise_to_t to, int code, const char *func, const char *fmt, ...)
    PB_PRINTF(4, 5);

static int raise_at(raise_to_t to, int code, const char *func, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (to.session != MPI_SESSION_NULL)
        return pb_mpi_raise_session(to.session, pb_mpi_session_errhandler(to.session), code, func,
                                    "%s", what);
    return pb_mpi_raise(to.comm, code, func, "%s", what);
}

static int automatic(const buffer_t *b)
{
    return b->buf == MPI_BUFFER_AUTOMATIC;
}

/* Let go of @b's complete messages.  @return how many. */
static int reclaim(buffer_t *b)
{
    int kept = 0, gone;

    for (int i = 0; i < b->nreqs; i++) {
        if (b->reqs[i]->complete) {
            pb_eng_request_release(b->reqs[i]);
            b->used -= b->bytes[i] + MPI_BSEND_OVERHEAD;
            continue;
        }
        b->reqs[kept] = b->reqs[i];
        b->bytes[kept] = b->bytes[i];
        b->seq[kept] = b->seq[i];
        kept++;
    }
    gone = b->nreqs - kept;
    b->nreqs = kept;
    return gone;
}

/* Whether every message sent through @b before number @until completed. */
static int flushed(buffer_t *b, uint64_t until)
{
    reclaim(b);
    return b->nreqs == 0 || b->seq[0] >= until;
}

static buffer_t *comm_buffer(const pb_comm_t *c)
{
    for (buffer_t *b = comm_buffers; b != NULL; b = b->next) {
        if (b->comm == c)
            return b;
    }
    return NULL;
}

/* The buffer record of @session (NULL: none). */
static buffer_t *session_buffer(const void *session)
{
    for (buffer_t *b = comm_buffers; b != NULL && session != NULL; b = b->next) {
        if (b->comm == NULL && b->session == session)
            return b;
    }
    return NULL;
}

/* Start a buffered send of @count elements of @t (checked) at @buf to
 * world rank @world (PB_ENG_PROC_NULL: nothing) of @c, through @c's buffer
 * of MPI_Comm_attach_buffer, else its session's, else the process's: the
 * copy goes out in the background.  @return MPI_SUCCESS, or the error raised by @func
 * (MPI_ERR_BUFFER: the buffer has no room). */
int pb_mpi_bsend_copy(const char *func, const void *buf, MPI_Count count, pb_datatype_t *t,
                      int world, int tag, pb_comm_t *c)
{
    buffer_t *b = comm_buffer(c);
    size_t bytes;
    MPI_Request r;
    int rc;

    if (world == PB_ENG_PROC_NULL) /* @t may be NULL then (MPI_DATATYPE_NULL) */
        return MPI_SUCCESS;
    bytes = (size_t)count * pb_eng_type_size(t);
    if ((b == NULL || b->buf == NULL) && c->session != NULL) /* none attached to @c */
        b = session_buffer(c->session);
    if (b == NULL || b->buf == NULL) /* nor to its session */
        b = &process;
    reclaim(b);
    if (b->buf == NULL)
        return pb_mpi_raise(c->handle, MPI_ERR_BUFFER, func,
                            "no buffer is attached (MPI_Buffer_attach, MPI_Comm_attach_buffer, "
                            "MPI_Session_attach_buffer)");
    if (!automatic(b) && b->used + bytes + MPI_BSEND_OVERHEAD > b->size)
        return pb_mpi_raise(c->handle, MPI_ERR_BUFFER, func,
                            "the attached buffer has no room (%zu of %zu bytes in use, the "
                            "message needs %zu)",
                            b->used, b->size, bytes + MPI_BSEND_OVERHEAD);
    if (b->nreqs == b->max) {
        int max = b->max ? 2 * b->max : 16;
        MPI_Request *reqs = realloc(b->reqs, (size_t)max * sizeof(*reqs));
        size_t *sizes = reqs != NULL ? realloc(b->bytes, (size_t)max * sizeof(*sizes)) : NULL;
        uint64_t *seq = sizes != NULL ? realloc(b->seq, (size_t)max * sizeof(*seq)) : NULL;

        if (reqs != NULL)
            b->reqs = reqs;
        if (sizes != NULL)
            b->bytes = sizes;
        if (seq == NULL)
            return pb_mpi_raise(c->handle, MPI_ERR_NO_MEM, func, "cannot start the send");
        b->seq = seq;
        b->max = max;
    }
    rc = pb_eng_send_start(buf, count, t, world, tag, c->context, PB_ENG_MODE_BUFFERED, &r);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(c->handle, rc, func, "cannot start the send");
    b->reqs[b->nreqs] = r;
    b->bytes[b->nreqs] = bytes;
    b->seq[b->nreqs] = b->sent++;
    b->nreqs++;
    b->used += bytes + MPI_BSEND_OVERHEAD;
    return MPI_SUCCESS;
}

static int bsend_start(const char *func, const void *buf, MPI_Count count, MPI_Datatype type,
                       int dest, int tag, pb_comm_t *c)
{
    return pb_mpi_bsend_copy(func, buf, count, pb_mpi_datatype(type), pb_mpi_world_of(c, dest), tag,
                             c);
}

int pb_mpi_bsend_impl(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm, pb_comm_t *c)
{
    (void)comm;
    return bsend_start(func, buf, count, datatype, dest, tag, c);
}

int pb_mpi_ibsend_impl(const char *func, const void *buf, MPI_Count count, MPI_Datatype datatype,
                       int dest, int tag, MPI_Comm comm, MPI_Request *request, pb_comm_t *c)
{
    int rc = bsend_start(func, buf, count, datatype, dest, tag, c);

    if (rc != MPI_SUCCESS)
        return rc;
    *request = pb_eng_request_done(tag);
    if (*request == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "cannot start the send");
    (*request)->comm = c;
    pb_mpi_comm_retain(c);
    return MPI_SUCCESS;
}

/* ---- attach, detach, flush ------------------------------------------------------- */

/* Attach @buffer of @size bytes (or MPI_BUFFER_AUTOMATIC) as @b for @func,
 * errors raised at @to.  @return MPI_SUCCESS; MPI_ERR_BUFFER (one attached
 * already, NULL); MPI_ERR_COUNT (negative size). */
static int attach(const char *func, raise_to_t to, buffer_t *b, void *buffer, MPI_Count size)
{
    if (b->buf != NULL)
        return raise_at(to, MPI_ERR_BUFFER, func, "a buffer is attached already: detach it first");
    if (buffer == NULL)
        return raise_at(to, MPI_ERR_BUFFER, func,
                        "buffer is NULL (MPI_BUFFER_AUTOMATIC asks for automatic buffering)");
    if (size < 0 && buffer != MPI_BUFFER_AUTOMATIC)
        return raise_at(to, MPI_ERR_COUNT, func, "size %lld is negative", (long long)size);
    b->buf = buffer;
    b->size = buffer == MPI_BUFFER_AUTOMATIC ? 0 : (size_t)size;
    return MPI_SUCCESS;
}

typedef struct {
    buffer_t *b;
    uint64_t until;
} flush_wait_t;

static int flush_done(void *arg)
{
    flush_wait_t *w = arg;

    return flushed(w->b, w->until);
}

/* Wait until every message sent through @b so far completed. */
static void flush(buffer_t *b)
{
    flush_wait_t w = {b, b->sent};

    pb_eng_wait_until(flush_done, &w);
}

/* Detach @b for @func once its messages went, errors raised at @to: its
 * address in *(void **)@buffer_addr and its size in *@size_p.  @return
 * MPI_SUCCESS; MPI_ERR_BUFFER (none attached); MPI_ERR_ARG. */
static int detach(const char *func, raise_to_t to, buffer_t *b, void *buffer_addr,
                  MPI_Count *size_p)
{
    if (buffer_addr == NULL)
        return raise_at(to, MPI_ERR_ARG, func, "buffer_addr is NULL");
    if (b == NULL || b->buf == NULL)
        return raise_at(to, MPI_ERR_BUFFER, func, "no buffer is attached");
    flush(b);
    *(void **)buffer_addr = b->buf;
    *size_p = (MPI_Count)b->size;
    b->buf = NULL;
    b->size = 0;
    return MPI_SUCCESS;
}

/* @size in an int: MPI_UNDEFINED when it does not fit. */
static int int_size(MPI_Count size)
{
    return size > INT_MAX ? MPI_UNDEFINED : (int)size;
}

/* Give MPI @size bytes at @buffer (or MPI_BUFFER_AUTOMATIC: as many as the
 * messages need) for the buffered sends of the process.  @return
 * MPI_SUCCESS; MPI_ERR_BUFFER (one is attached already, NULL);
 * MPI_ERR_COUNT (negative size). */
PB_EXPORT int PMPI_Buffer_attach_c(void *buffer, MPI_Count size)
{
    PB_MPI_THREAD_GUARD;

    return attach("MPI_Buffer_attach", (raise_to_t){MPI_COMM_NULL, MPI_SESSION_NULL}, &process,
                  buffer, size);
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_attach_c, PMPI_Buffer_attach_c);

/* MPI_Buffer_attach_c with an int size.  Errors as it. */
PB_EXPORT int PMPI_Buffer_attach(void *buffer, int size)
{
    PB_MPI_THREAD_GUARD;

    return PMPI_Buffer_attach_c(buffer, size);
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_attach, PMPI_Buffer_attach);

/* Wait until every buffered send through the process's buffer went out,
 * then give the buffer back: *(void **)@buffer_addr (MPI_BUFFER_AUTOMATIC
 * for an automatic one) and *@size (0 for an automatic one).  @return
 * MPI_SUCCESS; MPI_ERR_BUFFER (none attached); MPI_ERR_ARG. */
PB_EXPORT int PMPI_Buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
    PB_MPI_THREAD_GUARD;
    if (size == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Buffer_detach", "size is NULL");
    return detach("MPI_Buffer_detach", (raise_to_t){MPI_COMM_NULL, MPI_SESSION_NULL}, &process,
                  buffer_addr, size);
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_detach_c, PMPI_Buffer_detach_c);

/* MPI_Buffer_detach_c with an int size (MPI_UNDEFINED when it does not
 * fit).  Errors as it. */
PB_EXPORT int PMPI_Buffer_detach(void *buffer_addr, int *size)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count n = 0;
    int rc;

    if (size == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Buffer_detach", "size is NULL");
    rc = PMPI_Buffer_detach_c(buffer_addr, &n);
    if (rc == MPI_SUCCESS)
        *size = int_size(n);
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_detach, PMPI_Buffer_detach);

/* Wait until every message sent through the process's buffer so far went
 * out (nothing when none is attached).  @return MPI_SUCCESS. */
PB_EXPORT int PMPI_Buffer_flush(void)
{
    PB_MPI_THREAD_GUARD;

    flush(&process);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_flush, PMPI_Buffer_flush);

/* The communicator's buffer record of @c, made if @make. */
static buffer_t *comm_record(pb_comm_t *c, int make)
{
    buffer_t *b = comm_buffer(c);

    if (b == NULL && make) {
        b = calloc(1, sizeof(*b));
        if (b != NULL) {
            b->comm = c;
            b->next = comm_buffers;
            comm_buffers = b;
        }
    }
    return b;
}

/* Attach @buffer of @size bytes (or MPI_BUFFER_AUTOMATIC) to @comm: its
 * buffered sends go through it instead of the process's buffer.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_BUFFER (one is attached
 * already, NULL); MPI_ERR_COUNT; MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_attach_buffer_c(MPI_Comm comm, void *buffer, MPI_Count size)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Comm_attach_buffer";
    pb_comm_t *c;
    buffer_t *b;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    b = comm_record(c, 1);
    if (b == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "no memory for the buffer's record");
    return attach(func, (raise_to_t){comm, MPI_SESSION_NULL}, b, buffer, size);
}
PB_MPI_WEAK_ALIAS(MPI_Comm_attach_buffer_c, PMPI_Comm_attach_buffer_c);

/* MPI_Comm_attach_buffer_c with an int size.  Errors as it. */
PB_EXPORT int PMPI_Comm_attach_buffer(MPI_Comm comm, void *buffer, int size)
{
    PB_MPI_THREAD_GUARD;

    return PMPI_Comm_attach_buffer_c(comm, buffer, size);
}
PB_MPI_WEAK_ALIAS(MPI_Comm_attach_buffer, PMPI_Comm_attach_buffer);

/* Wait until every buffered send through @comm's buffer went out, then give
 * the buffer back as MPI_Buffer_detach_c does.  @return MPI_SUCCESS;
 * MPI_ERR_COMM; MPI_ERR_BUFFER (none attached to @comm); MPI_ERR_ARG. */
PB_EXPORT int PMPI_Comm_detach_buffer_c(MPI_Comm comm, void *buffer_addr, MPI_Count *size)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Comm_detach_buffer";
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (size == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "size is NULL");
    return detach(func, (raise_to_t){comm, MPI_SESSION_NULL}, comm_record(c, 0), buffer_addr, size);
}
PB_MPI_WEAK_ALIAS(MPI_Comm_detach_buffer_c, PMPI_Comm_detach_buffer_c);

/* MPI_Comm_detach_buffer_c with an int size (MPI_UNDEFINED when it does
 * not fit).  Errors as it. */
PB_EXPORT int PMPI_Comm_detach_buffer(MPI_Comm comm, void *buffer_addr, int *size)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count n = 0;
    int rc;

    if (size == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_detach_buffer", "size is NULL");
    rc = PMPI_Comm_detach_buffer_c(comm, buffer_addr, &n);
    if (rc == MPI_SUCCESS)
        *size = int_size(n);
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_detach_buffer, PMPI_Comm_detach_buffer);

/* Wait until every message sent through @comm's buffer so far went out
 * (nothing when it has none).  @return MPI_SUCCESS; MPI_ERR_COMM. */
PB_EXPORT int PMPI_Comm_flush_buffer(MPI_Comm comm)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    buffer_t *b;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_flush_buffer", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    b = comm_record(c, 0);
    if (b != NULL)
        flush(b);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_flush_buffer, PMPI_Comm_flush_buffer);

void pb_mpi_bsend_comm_free(pb_comm_t *c)
{
    for (buffer_t **pp = &comm_buffers; *pp != NULL; pp = &(*pp)->next) {
        buffer_t *b = *pp;

        if (b->comm != c)
            continue;
        flush(b);
        flushes_advance(); /* its flush requests complete now */
        *pp = b->next;
        free(b->reqs);
        free(b->bytes);
        free(b->seq);
        free(b);
        return;
    }
}

/* ---- nonblocking flush ------------------------------------------------------------ */

static int flush_query(void *extra_state, MPI_Status *status)
{
    (void)extra_state;
    pb_mpi_status_empty(status);
    return MPI_SUCCESS;
}

static int flush_free(void *extra_state)
{
    (void)extra_state;
    return MPI_SUCCESS;
}

static int flush_cancel(void *extra_state, int complete)
{
    (void)extra_state;
    (void)complete;
    return MPI_SUCCESS;
}

/* The progress hook while flush requests wait: complete those whose
 * messages went. */
static int flushes_advance(void)
{
    int moved = 0;

    for (flush_t **pp = &flushes; *pp != NULL;) {
        flush_t *f = *pp;

        if (!flushed(f->b, f->until)) {
            pp = &f->next;
            continue;
        }
        *pp = f->next;
        PMPI_Grequest_complete(f->request);
        free(f);
        moved++;
    }
    if (flushes == NULL)
        pb_eng_progress_hook_remove(flushes_advance);
    return moved;
}

/* A request, in *@request, that completes once every message sent through
 * @b so far went out.  @return MPI_SUCCESS, or the error raised for
 * @func at @to (MPI_ERR_ARG, MPI_ERR_NO_MEM). */
static int iflush(const char *func, raise_to_t to, buffer_t *b, MPI_Request *request)
{
    flush_t *f;
    int rc;

    if (request == NULL)
        return raise_at(to, MPI_ERR_ARG, func, "request is NULL");
    f = malloc(sizeof(*f));
    if (f == NULL)
        return raise_at(to, MPI_ERR_NO_MEM, func, "no memory for the request");
    rc = PMPI_Grequest_start(flush_query, flush_free, flush_cancel, NULL, &f->request);
    if (rc != MPI_SUCCESS) {
        free(f);
        return rc;
    }
    *request = f->request;
    if (b == NULL || flushed(b, b->sent)) {
        PMPI_Grequest_complete(f->request);
        free(f);
        return MPI_SUCCESS;
    }
    f->b = b;
    f->until = b->sent;
    f->next = flushes;
    flushes = f;
    pb_eng_progress_hook_add(flushes_advance);
    return MPI_SUCCESS;
}

/* MPI_Buffer_flush without waiting: *@request completes once the messages
 * in the process's buffer went out.  @return MPI_SUCCESS; MPI_ERR_ARG;
 * MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Buffer_iflush(MPI_Request *request)
{
    PB_MPI_THREAD_GUARD;

    return iflush("MPI_Buffer_iflush", (raise_to_t){MPI_COMM_NULL, MPI_SESSION_NULL}, &process,
                  request);
}
PB_MPI_WEAK_ALIAS(MPI_Buffer_iflush, PMPI_Buffer_iflush);

/* MPI_Comm_flush_buffer without waiting: *@request completes once the
 * messages in @comm's buffer went out.  @return MPI_SUCCESS;
 * MPI_ERR_COMM; MPI_ERR_ARG; MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_iflush_buffer(MPI_Comm comm, MPI_Request *request)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_iflush_buffer", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    return iflush("MPI_Comm_iflush_buffer", (raise_to_t){comm, MPI_SESSION_NULL}, comm_record(c, 0),
                  request);
}
PB_MPI_WEAK_ALIAS(MPI_Comm_iflush_buffer, PMPI_Comm_iflush_buffer);

/* ---- sessions' buffers (MPI-4.1) ---------------------------------------------------- */

/* The buffer record of @session, made if @make (NULL when out of memory). */
static buffer_t *session_record(void *session, int make)
{
    buffer_t *b = session_buffer(session);

    if (b == NULL && make) {
        b = calloc(1, sizeof(*b));
        if (b != NULL) {
            b->session = session;
            b->next = comm_buffers;
            comm_buffers = b;
        }
    }
    return b;
}

int pb_mpi_bsend_session_attach(MPI_Session session, void *buffer, MPI_Count size)
{
    const char *func = "MPI_Session_attach_buffer";
    raise_to_t to = {MPI_COMM_NULL, session};
    buffer_t *b = session_record(session, 1);

    if (b == NULL)
        return raise_at(to, MPI_ERR_NO_MEM, func, "no memory for the buffer's record");
    return attach(func, to, b, buffer, size);
}

int pb_mpi_bsend_session_detach(MPI_Session session, void *buffer_addr, MPI_Count *size)
{
    const char *func = "MPI_Session_detach_buffer";
    raise_to_t to = {MPI_COMM_NULL, session};

    if (size == NULL)
        return raise_at(to, MPI_ERR_ARG, func, "size is NULL");
    return detach(func, to, session_record(session, 0), buffer_addr, size);
}

void pb_mpi_bsend_session_flush(MPI_Session session)
{
    buffer_t *b = session_record(session, 0);

    if (b != NULL)
        flush(b);
}

int pb_mpi_bsend_session_iflush(MPI_Session session, MPI_Request *request)
{
    return iflush("MPI_Session_iflush_buffer", (raise_to_t){MPI_COMM_NULL, session},
                  session_record(session, 0), request);
}

void pb_mpi_bsend_session_end(MPI_Session session)
{
    for (buffer_t **pp = &comm_buffers; *pp != NULL; pp = &(*pp)->next) {
        buffer_t *b = *pp;

        if (b->comm != NULL || b->session != session)
            continue;
        flush(b);
        flushes_advance(); /* its flush requests complete now */
        *pp = b->next;
        free(b->reqs);
        free(b->bytes);
        free(b->seq);
        free(b);
        return;
    }
}

void pb_mpi_bsend_finalize(void)
{
    flush(&process);
    while (comm_buffers != NULL) {
        buffer_t *b = comm_buffers;

        flush(b);
        comm_buffers = b->next;
        free(b->reqs);
        free(b->bytes);
        free(b->seq);
        free(b);
    }
    /* every flush request's messages went (the buffers are gone) */
    while (flushes != NULL) {
        flush_t *f = flushes;

        flushes = f->next;
        PMPI_Grequest_complete(f->request);
        free(f);
    }
    pb_eng_progress_hook_remove(flushes_advance);
}
