/*
 * pbt-mpi-requests_more: generalized requests (MPI_Grequest_start,
 * MPI_Grequest_complete; src/mpi/grequest.c), the fields of a status
 * (MPI_Status_get_* and _set_*; src/mpi/status.c) and the buffers of
 * buffered mode (MPI_Buffer_*, MPI_Comm_*_buffer; src/mpi/bsend.c), run
 * under `postbox run -n N [--nodes K]` (any N >= 1;
 * tests/mpi/CMakeLists.txt).  Written to the standard API only.
 *
 * Generalized requests: the callbacks run when the standard says and as
 * often (query then free in the wait or test that completes the request,
 * query in MPI_Request_get_status, free at the later of MPI_Request_free
 * and MPI_Grequest_complete, cancel with the right `complete` argument),
 * the status the query function fills is what the program gets (source,
 * tag, count, cancelled), a query function's error comes back from
 * MPI_Wait and as MPI_ERR_IN_STATUS from MPI_Waitall, and a generalized
 * request waits beside a message.  Status fields: every setter read back
 * by its getter, and MPI_Get_count/MPI_Get_elements agree with
 * MPI_Status_set_elements for basic, derived and pair types.  Buffers:
 * a send on a communicator goes through its own buffer when it has one
 * (a message too large for it is refused though the process's buffer has
 * room) and through the process's otherwise; MPI_BUFFER_AUTOMATIC takes any
 * message; detach gives back what was attached; after MPI_Buffer_flush,
 * MPI_Buffer_iflush and the communicator forms the whole buffer is free
 * again, and the messages arrive; a freed communicator's buffer is not
 * inherited by the next one; and the errors.  Rank 0 prints
 * "requests_more: ok".
 *
 *   pbt-mpi-requests_more [case ...]   run the named cases (default: all)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int np, next, prev;

static int class_of(int rc)
{
    int cls = -1;

    MPI_Error_class(rc, &cls);
    return cls;
}

/* ---- generalized requests ----------------------------------------------------------- */

typedef struct {
    int queries, frees, cancels, cancel_complete;
    int source, tag, count; /* what the query function reports */
    int query_error;
    int cancelled;
} greq_state_t;

static int query_fn(void *extra_state, MPI_Status *status)
{
    greq_state_t *g = extra_state;

    g->queries++;
    MPI_Status_set_source(status, g->source);
    MPI_Status_set_tag(status, g->tag);
    MPI_Status_set_error(status, MPI_SUCCESS);
    MPI_Status_set_elements(status, MPI_DOUBLE, g->count);
    MPI_Status_set_cancelled(status, g->cancelled);
    return g->query_error;
}

static int free_fn(void *extra_state)
{
    greq_state_t *g = extra_state;

    g->frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra_state, int complete)
{
    greq_state_t *g = extra_state;

    g->cancels++;
    g->cancel_complete = complete;
    g->cancelled = !complete;
    return MPI_SUCCESS;
}

static void case_grequest(void)
{
    greq_state_t g = {.source = 3, .tag = 77, .count = 5};
    MPI_Request r, copy;
    MPI_Status st;
    int flag = -1, count = -1;

    /* wait: query then free, once each, in the completing call */
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &r));
    OK(MPI_Test(&r, &flag, &st));
    CHECK(!flag && g.queries == 0 && g.frees == 0, "a test completed an incomplete request");
    OK(MPI_Request_get_status(r, &flag, &st));
    CHECK(!flag && g.queries == 0, "get_status of an incomplete request: flag %d queries %d", flag,
          g.queries);
    OK(MPI_Grequest_complete(r));
    OK(MPI_Request_get_status(r, &flag, &st));
    CHECK(flag && g.queries == 1 && g.frees == 0 && st.MPI_TAG == 77,
          "get_status of a complete request: flag %d queries %d frees %d tag %d", flag, g.queries,
          g.frees, st.MPI_TAG);
    OK(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL && g.queries == 2 && g.frees == 1,
          "after the wait: queries %d frees %d", g.queries, g.frees);
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    CHECK(st.MPI_SOURCE == 3 && st.MPI_TAG == 77 && count == 5,
          "the status from the query: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);

    /* MPI_STATUS_IGNORE: the query still runs */
    g = (greq_state_t){.source = 1, .tag = 2, .count = 0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &r));
    OK(MPI_Grequest_complete(r));
    OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    CHECK(flag && g.queries == 1 && g.frees == 1, "test with MPI_STATUS_IGNORE: %d %d %d", flag,
          g.queries, g.frees);

    /* freed before it completes: free_fn runs in MPI_Grequest_complete */
    g = (greq_state_t){0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &r));
    copy = r;
    OK(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL && g.frees == 0, "free of an incomplete request ran free_fn");
    OK(MPI_Grequest_complete(copy));
    CHECK(g.frees == 1 && g.queries == 0, "complete after free: frees %d queries %d", g.frees,
          g.queries);

    /* complete, then freed: free_fn in MPI_Request_free, no query */
    g = (greq_state_t){0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &r));
    OK(MPI_Grequest_complete(r));
    OK(MPI_Request_free(&r));
    CHECK(g.frees == 1 && g.queries == 0, "free after complete: frees %d queries %d", g.frees,
          g.queries);

    /* cancel before completion: cancel_fn(complete = 0); cancelled status */
    g = (greq_state_t){0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &r));
    OK(MPI_Cancel(&r));
    CHECK(g.cancels == 1 && g.cancel_complete == 0, "cancel: %d calls, complete %d", g.cancels,
          g.cancel_complete);
    OK(MPI_Grequest_complete(r));
    OK(MPI_Wait(&r, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "the cancelled generalized request's status says not cancelled");
    /* cancel after completion: complete = 1 */
    g = (greq_state_t){0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &r));
    OK(MPI_Grequest_complete(r));
    OK(MPI_Cancel(&r));
    CHECK(g.cancels == 1 && g.cancel_complete == 1, "late cancel: %d calls, complete %d", g.cancels,
          g.cancel_complete);
    OK(MPI_Wait(&r, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(!flag, "a generalized request cancelled after completion says cancelled");
}

static void case_grequest_errors(void)
{
    greq_state_t g = {.query_error = MPI_ERR_OTHER}, h = {.tag = 5};
    MPI_Request r, rs[2];
    MPI_Status sts[2];
    int rc;

    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &r));
    OK(MPI_Grequest_complete(r));
    rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_OTHER && g.frees == 1 && r == MPI_REQUEST_NULL,
          "a failing query function: wait gave %d, frees %d", rc, g.frees);
    /* in a Waitall: MPI_ERR_IN_STATUS, the error in its status */
    g = (greq_state_t){.query_error = MPI_ERR_OTHER};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &rs[0]));
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &h, &rs[1]));
    OK(MPI_Grequest_complete(rs[0]));
    OK(MPI_Grequest_complete(rs[1]));
    rc = MPI_Waitall(2, rs, sts);
    CHECK(rc == MPI_ERR_IN_STATUS && class_of(sts[0].MPI_ERROR) == MPI_ERR_OTHER &&
              sts[1].MPI_ERROR == MPI_SUCCESS && sts[1].MPI_TAG == 5,
          "waitall with a failing query: %d, statuses %d %d tag %d", rc, sts[0].MPI_ERROR,
          sts[1].MPI_ERROR, sts[1].MPI_TAG);
    /* bad calls */
    rc = MPI_Grequest_start(NULL, free_fn, cancel_fn, &g, &r);
    CHECK(class_of(rc) == MPI_ERR_ARG, "a NULL query function gave %d", rc);
    rc = MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "a NULL request gave %d", rc);
    OK(MPI_Irecv(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r));
    rc = MPI_Grequest_complete(r);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "MPI_Grequest_complete of a receive gave %d", rc);
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    g = (greq_state_t){0};
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &r));
    OK(MPI_Grequest_complete(r));
    rc = MPI_Grequest_complete(r);
    CHECK(class_of(rc) == MPI_ERR_REQUEST, "completing twice gave %d", rc);
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* A generalized request completed while a message is waited for beside
 * it: MPI_Waitany gives the message first, then the request. */
static void case_grequest_mixed(void)
{
    greq_state_t g = {.tag = 9};
    MPI_Request rs[2];
    MPI_Status st;
    int in = -1, out = rank, index = -1;

    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &g, &rs[0]));
    OK(MPI_Irecv(&in, 1, MPI_INT, prev, 90, MPI_COMM_WORLD, &rs[1]));
    OK(MPI_Send(&out, 1, MPI_INT, next, 90, MPI_COMM_WORLD));
    OK(MPI_Waitany(2, rs, &index, &st));
    CHECK(index == 1 && in == prev && st.MPI_SOURCE == prev, "waitany gave %d (in %d)", index, in);
    OK(MPI_Grequest_complete(rs[0]));
    OK(MPI_Waitany(2, rs, &index, &st));
    CHECK(index == 0 && st.MPI_TAG == 9 && g.frees == 1, "waitany gave %d tag %d frees %d", index,
          st.MPI_TAG, g.frees);
}

/* ---- status fields ------------------------------------------------------------------ */

static void expect_counts(MPI_Status *st, MPI_Datatype type, int count, int elements,
                          const char *what)
{
    int c = -2, e = -2;
    MPI_Count cc = -2, ec = -2;

    OK(MPI_Get_count(st, type, &c));
    OK(MPI_Get_elements(st, type, &e));
    OK(MPI_Get_count_c(st, type, &cc));
    OK(MPI_Get_elements_x(st, type, &ec));
    CHECK(c == count && e == elements && cc == count && ec == elements,
          "%s: count %d (%lld) elements %d (%lld), not %d and %d", what, c, (long long)cc, e,
          (long long)ec, count, elements);
}

static void case_status(void)
{
    MPI_Status st;
    MPI_Datatype three, mixed;
    int v = -1, flag = -1, rc;

    memset(&st, 0, sizeof(st));
    OK(MPI_Status_set_source(&st, 12));
    OK(MPI_Status_set_tag(&st, 34));
    OK(MPI_Status_set_error(&st, MPI_ERR_PENDING));
    OK(MPI_Status_get_source(&st, &v));
    CHECK(v == 12 && st.MPI_SOURCE == 12, "source %d", v);
    OK(MPI_Status_get_tag(&st, &v));
    CHECK(v == 34 && st.MPI_TAG == 34, "tag %d", v);
    OK(MPI_Status_get_error(&st, &v));
    CHECK(v == MPI_ERR_PENDING && st.MPI_ERROR == MPI_ERR_PENDING, "error %d", v);
    OK(MPI_Status_set_cancelled(&st, 1));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1, "set_cancelled(1) reads %d", flag);
    OK(MPI_Status_set_cancelled(&st, 0));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 0, "set_cancelled(0) reads %d", flag);

    OK(MPI_Status_set_elements(&st, MPI_INT, 7));
    expect_counts(&st, MPI_INT, 7, 7, "7 MPI_INT");
    expect_counts(&st, MPI_BYTE, 28, 28, "7 MPI_INT as bytes");
    OK(MPI_Status_set_elements_c(&st, MPI_DOUBLE, 0));
    expect_counts(&st, MPI_DOUBLE, 0, 0, "0 MPI_DOUBLE");
    OK(MPI_Status_set_elements_x(&st, MPI_SHORT, 3000000000LL));
    {
        MPI_Count cc = -1;

        OK(MPI_Get_count_c(&st, MPI_SHORT, &cc));
        CHECK(cc == 3000000000LL, "a large count reads %lld", (long long)cc);
        OK(MPI_Get_count(&st, MPI_SHORT, &v));
        CHECK(v == MPI_UNDEFINED, "a large count into an int reads %d", v);
    }
    /* a derived type of 3 ints: 7 elements are 2 whole and 1 of a third */
    MPI_Type_contiguous(3, MPI_INT, &three);
    MPI_Type_commit(&three);
    OK(MPI_Status_set_elements(&st, three, 7));
    expect_counts(&st, three, MPI_UNDEFINED, 7, "7 ints of a 3-int type");
    expect_counts(&st, MPI_INT, 7, 7, "7 ints of a 3-int type, as MPI_INT");
    OK(MPI_Status_set_elements(&st, three, 6));
    expect_counts(&st, three, 2, 6, "6 ints of a 3-int type");
    /* a struct {int, double}: 3 elements are one whole and the next int */
    {
        int bl[2] = {1, 1};
        MPI_Aint disp[2] = {0, 8};
        MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};

        MPI_Type_create_struct(2, bl, disp, types, &mixed);
        MPI_Type_commit(&mixed);
        OK(MPI_Status_set_elements(&st, mixed, 3));
        expect_counts(&st, mixed, MPI_UNDEFINED, 3, "3 elements of {int, double}");
        expect_counts(&st, MPI_BYTE, 16, 16, "3 elements of {int, double}, as bytes");
        MPI_Type_free(&mixed);
    }
    /* a pair type: one element is the value alone */
    OK(MPI_Status_set_elements(&st, MPI_DOUBLE_INT, 3));
    expect_counts(&st, MPI_DOUBLE_INT, MPI_UNDEFINED, 3, "3 elements of MPI_DOUBLE_INT");
    MPI_Type_free(&three);

    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    rc = MPI_Status_set_elements(&st, MPI_INT, -1);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "a negative count gave %d", rc);
    rc = MPI_Status_set_elements(&st, MPI_DATATYPE_NULL, 1);
    CHECK(class_of(rc) == MPI_ERR_TYPE, "MPI_DATATYPE_NULL gave %d", rc);
    rc = MPI_Status_set_tag(MPI_STATUS_IGNORE, 1);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_STATUS_IGNORE gave %d", rc);
    rc = MPI_Status_get_source(&st, NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "a NULL source gave %d", rc);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);

    /* a received message's status reads back through the getters */
    {
        int out[3] = {1, 2, 3}, in[3];
        int src = -1, tag = -1, err = -1;

        OK(MPI_Sendrecv(out, 3, MPI_INT, next, 91, in, 3, MPI_INT, prev, 91, MPI_COMM_WORLD, &st));
        OK(MPI_Status_get_source(&st, &src));
        OK(MPI_Status_get_tag(&st, &tag));
        OK(MPI_Status_get_error(&st, &err));
        CHECK(src == prev && tag == 91 && err == MPI_SUCCESS, "received: source %d tag %d err %d",
              src, tag, err);
        expect_counts(&st, MPI_INT, 3, 3, "a received message");
    }
}

/* ---- buffers ---------------------------------------------------------------------- */

#define MSG 16384 /* ints in a buffered message */

static int *message(int tag)
{
    int *m = malloc(MSG * sizeof(int));

    for (int i = 0; i < MSG; i++)
        m[i] = rank * 1000003 + tag * 31 + i;
    return m;
}

/* Receive what @bsend sends: one message from prev on @comm with @tag. */
static void check_message(const int *got, int tag)
{
    for (int i = 0; i < MSG; i++) {
        if (got[i] != prev * 1000003 + tag * 31 + i) {
            CHECK(0, "buffered message %d: element %d is %d", tag, i, got[i]);
            return;
        }
    }
}

/* Send one message through the buffer of @comm with @tag and receive the
 * one from prev (posted first: no rank waits for another's receive).
 * @return MPI_Bsend's error. */
static int bsend_round(MPI_Comm comm, int tag, int flush)
{
    int *out = message(tag), *in = malloc(MSG * sizeof(int));
    MPI_Request r, f;
    int rc;

    OK(MPI_Irecv(in, MSG, MPI_INT, prev, tag, comm, &r));
    rc = MPI_Bsend(out, MSG, MPI_INT, next, tag, comm);
    if (rc != MPI_SUCCESS) { /* nothing comes from prev either (every rank does the same) */
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        free(out);
        free(in);
        return rc;
    }
    memset(out, 0, MSG * sizeof(int)); /* the buffer has the message */
    if (flush == 1)
        OK(comm == MPI_COMM_WORLD ? MPI_Buffer_flush() : MPI_Comm_flush_buffer(comm));
    if (flush == 2) {
        OK(comm == MPI_COMM_WORLD ? MPI_Buffer_iflush(&f) : MPI_Comm_iflush_buffer(comm, &f));
        OK(MPI_Wait(&f, MPI_STATUS_IGNORE));
        CHECK(f == MPI_REQUEST_NULL, "the flush request was not freed");
    }
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    check_message(in, tag);
    free(out);
    free(in);
    return MPI_SUCCESS;
}

static void case_buffers(void)
{
    int one = MSG * (int)sizeof(int) + MPI_BSEND_OVERHEAD; /* room for one message */
    char *pbuf = malloc((size_t)one * 4), *cbuf = malloc((size_t)one);
    void *back = NULL;
    int size = -1, rc;
    MPI_Count csize = -1;
    MPI_Comm dup, dup2;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);

    /* no buffer anywhere: refused */
    rc = bsend_round(dup, 1, 0);
    CHECK(class_of(rc) == MPI_ERR_BUFFER, "MPI_Bsend without a buffer gave %d", rc);
    /* the communicator's buffer of one message, no process buffer */
    OK(MPI_Comm_attach_buffer(dup, cbuf, one));
    OK(bsend_round(dup, 2, 1)); /* after a flush the buffer is free again */
    OK(bsend_round(dup, 3, 2)); /* ... and after an iflush */
    rc = bsend_round(MPI_COMM_WORLD, 4, 0);
    CHECK(class_of(rc) == MPI_ERR_BUFFER, "MPI_COMM_WORLD used another communicator's buffer: %d",
          rc);
    /* a process buffer of four messages does not widen the communicator's */
    OK(MPI_Buffer_attach(pbuf, 4 * one));
    {
        int *big = calloc(2 * MSG, sizeof(int));

        rc = MPI_Bsend(big, 2 * MSG, MPI_INT, next, 5, dup);
        CHECK(class_of(rc) == MPI_ERR_BUFFER,
              "a message larger than the communicator's buffer gave %d", rc);
        free(big);
    }
    OK(bsend_round(MPI_COMM_WORLD, 6, 1));
    OK(bsend_round(MPI_COMM_WORLD, 7, 2));
    rc = MPI_Comm_attach_buffer(dup, cbuf, one);
    CHECK(class_of(rc) == MPI_ERR_BUFFER, "attaching a second buffer gave %d", rc);
    OK(MPI_Comm_detach_buffer(dup, &back, &size));
    CHECK(back == cbuf && size == one, "detach gave back %p %d, not %p %d", back, size,
          (void *)cbuf, one);
    /* detached: the communicator uses the process's buffer again */
    OK(bsend_round(dup, 8, 0));
    OK(MPI_Buffer_flush());
    /* automatic buffering takes a message of any size */
    OK(MPI_Comm_attach_buffer(dup, MPI_BUFFER_AUTOMATIC, 0));
    {
        int *big = malloc(8 * MSG * sizeof(int)), *in = malloc(8 * MSG * sizeof(int));
        MPI_Request r;

        for (int i = 0; i < 8 * MSG; i++)
            big[i] = rank + i;
        OK(MPI_Irecv(in, 8 * MSG, MPI_INT, prev, 9, dup, &r));
        OK(MPI_Bsend(big, 8 * MSG, MPI_INT, next, 9, dup));
        OK(MPI_Comm_flush_buffer(dup));
        OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < 8 * MSG; i++) {
            if (in[i] != prev + i) {
                CHECK(0, "automatic buffering: element %d is %d", i, in[i]);
                break;
            }
        }
        free(big);
        free(in);
    }
    OK(MPI_Comm_detach_buffer_c(dup, &back, &csize));
    CHECK(back == MPI_BUFFER_AUTOMATIC, "detaching an automatic buffer gave back %p", back);
    /* a freed communicator's buffer is not the next one's */
    OK(MPI_Comm_attach_buffer_c(dup, cbuf, one));
    OK(bsend_round(dup, 10, 0));
    MPI_Comm_free(&dup);
    OK(MPI_Buffer_detach(&back, &size));
    CHECK(back == pbuf && size == 4 * one, "MPI_Buffer_detach gave back %p %d", back, size);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup2);
    MPI_Comm_set_errhandler(dup2, MPI_ERRORS_RETURN);
    rc = bsend_round(dup2, 11, 0);
    CHECK(class_of(rc) == MPI_ERR_BUFFER, "a new communicator inherited a buffer: %d", rc);
    /* errors */
    rc = MPI_Buffer_detach(&back, &size);
    CHECK(class_of(rc) == MPI_ERR_BUFFER, "detach without a buffer gave %d", rc);
    rc = MPI_Comm_detach_buffer(dup2, &back, &size);
    CHECK(class_of(rc) == MPI_ERR_BUFFER, "MPI_Comm_detach_buffer without a buffer gave %d", rc);
    rc = MPI_Buffer_attach(NULL, 10);
    CHECK(class_of(rc) == MPI_ERR_BUFFER, "attaching NULL gave %d", rc);
    rc = MPI_Comm_attach_buffer_c(dup2, cbuf, -1);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "a negative size gave %d", rc);
    rc = MPI_Comm_attach_buffer(MPI_COMM_NULL, cbuf, one);
    CHECK(class_of(rc) == MPI_ERR_COMM, "MPI_COMM_NULL gave %d", rc);
    rc = MPI_Buffer_iflush(NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Buffer_iflush(NULL) gave %d", rc);
    OK(MPI_Buffer_flush()); /* nothing attached: returns */
    MPI_Comm_free(&dup2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    free(pbuf);
    free(cbuf);
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"grequest", case_grequest},
    {"grequest_errors", case_grequest_errors},
    {"grequest_mixed", case_grequest_mixed},
    {"status", case_status},
    {"buffers", case_buffers},
};

int main(int argc, char **argv)
{
    int status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    next = (rank + 1) % np;
    prev = (rank + np - 1) % np;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int wanted = argc <= 1;

        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], cases[i].name) == 0;
        if (wanted)
            cases[i].run();
    }
    status = check_summary("requests_more", MPI_COMM_WORLD, 1 << 21);
    MPI_Finalize();
    return status;
}
