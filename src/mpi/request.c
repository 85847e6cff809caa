/*
 * Completion of requests (p2p.h): MPI_Wait, MPI_Test and their -all, -any
 * and -some forms, MPI_Request_free, MPI_Request_get_status, MPI_Cancel,
 * MPI_Start and MPI_Startall, and the integer conversions.  The engine
 * (engine.h) makes requests complete, and the schedules of sched.h the
 * collective ones; this file checks the handles, hands out statuses and
 * lets the requests go.
 *
 * A persistent request (a persistent collective's, MPI_X_init, or a
 * persistent send or receive's, MPI_Send_init .. MPI_Recv_init) is
 * inactive until MPI_Start, and again once a wait or test completed it:
 * it is then kept, not freed, and the calls treat it as they treat
 * MPI_REQUEST_NULL (an empty status at once; not active for the -any and
 * -some forms), as the standard says.  Partitioned requests (part.h) are
 * persistent requests of their own kinds; generalized requests
 * (grequest.h) call the program's functions where the standard says.
 */
#include "mpi/p2p.h"

#include <stdio.h>

#include "mpi/engine/engine.h"
#include "mpi/engine/handle.h"
#include "mpi/grequest.h"
#include "mpi/part.h"
#include "mpi/sched.h"

int pb_mpi_request_valid(MPI_Request r)
{
    return pb_eng_request_valid(r);
}

void pb_mpi_request_let_go(MPI_Request r)
{
    if (r->comm != NULL)
        pb_mpi_comm_release(r->comm);
    r->comm = NULL;
}

void pb_mpi_request_release(MPI_Request r)
{
    pb_mpi_request_let_go(r);
    if (r->kind == PB_ENG_REQ_COLL)
        pb_sched_free(r->sched);
    if (r->kind == PB_ENG_REQ_PSEND || r->kind == PB_ENG_REQ_PRECV)
        pb_mpi_part_free(r);
    pb_eng_request_release(r);
}

/* Whether @r is a request that a wait or test would complete: not
 * MPI_REQUEST_NULL, not an inactive persistent request. */
static int active(MPI_Request r)
{
    return r != MPI_REQUEST_NULL && (!r->persistent || r->active);
}

/* What went wrong with the complete request @r whose error is not
 * MPI_SUCCESS, for the error's message. */
static const char *failure(MPI_Request r)
{
    if (r->kind == PB_ENG_REQ_GREQ)
        return "the generalized request's query or free function failed";
    if (r->kind == PB_ENG_REQ_PSEND || r->kind == PB_ENG_REQ_PRECV)
        return pb_mpi_part_failure(r);
    if (r->kind != PB_ENG_REQ_COLL)
        return "the message is longer than the buffer";
    return r->status.MPI_ERROR == MPI_ERR_TRUNCATE
               ? "the collective's data is longer than a receive buffer (the ranks' counts or "
                 "datatypes disagree)"
               : "the collective's messages failed";
}

/* The handle of the communicator of @r, for its error handler. */
static MPI_Comm comm_handle(MPI_Request r)
{
    return r->comm != NULL ? ((pb_comm_t *)r->comm)->handle : MPI_COMM_NULL;
}

void pb_mpi_status_store(MPI_Status *status, MPI_Request r, const pb_comm_t *c)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    if (r->kind == PB_ENG_REQ_RECV || r->kind == PB_ENG_REQ_PRECV) {
        *status = r->status;
        /* the engine names the sender by its world rank */
        if (status->MPI_SOURCE >= 0)
            status->MPI_SOURCE = c->local[status->MPI_SOURCE];
    } else {
        status->MPI_SOURCE = MPI_ANY_SOURCE;
        status->MPI_TAG = MPI_ANY_TAG;
        /* a send's status says MPI_SUCCESS; a collective's or a partitioned
         * send's carries its error */
        status->MPI_ERROR = r->kind == PB_ENG_REQ_COLL || r->kind == PB_ENG_REQ_PSEND
                                ? r->status.MPI_ERROR
                                : MPI_SUCCESS;
        pb_mpi_status_set_bytes(status, 0);
    }
    pb_mpi_status_set_cancelled(status, r->cancelled);
}

void pb_mpi_status_empty(MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->MPI_ERROR = MPI_SUCCESS;
    pb_mpi_status_set_bytes(status, 0);
    pb_mpi_status_set_cancelled(status, 0);
}

/* ---- completion ------------------------------------------------------------------ */

static int check_request_ptr(const char *func, MPI_Request *request)
{
    if (request == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "request is NULL");
    if (*request != MPI_REQUEST_NULL && !pb_mpi_request_valid(*request))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func, "not a request");
    return MPI_SUCCESS;
}

/* Finish the complete request *@request: status out, freed, set to
 * MPI_REQUEST_NULL; a persistent one made inactive instead (an inactive
 * one gives the empty status).  @return the request's error
 * (MPI_ERR_TRUNCATE). */
static int finish(MPI_Request *request, MPI_Status *status)
{
    MPI_Request r = *request;
    int rc = r->kind != PB_ENG_REQ_SEND ? r->status.MPI_ERROR : MPI_SUCCESS;

    if (r->kind == PB_ENG_REQ_GREQ)
        return pb_mpi_grequest_finish(request, status);
    if (r->persistent) {
        if (!r->active) {
            pb_mpi_status_empty(status);
            return MPI_SUCCESS;
        }
        r->active = 0;
        pb_mpi_status_store(status, r, r->comm);
        return rc;
    }
    pb_mpi_status_store(status, r, r->comm);
    pb_mpi_request_release(r);
    *request = MPI_REQUEST_NULL;
    return rc;
}

/* Wait for *@request to complete, store its status, free it.
 * @return MPI_SUCCESS; MPI_ERR_REQUEST; MPI_ERR_TRUNCATE. */
PB_EXPORT int PMPI_Wait(MPI_Request *request, MPI_Status *status)
{
    PB_MPI_THREAD_GUARD;
    const char *what;
    MPI_Comm comm;
    int rc = check_request_ptr("MPI_Wait", request);

    if (rc != MPI_SUCCESS)
        return rc;
    if (*request == MPI_REQUEST_NULL) {
        pb_mpi_status_empty(status);
        return MPI_SUCCESS;
    }
    comm = comm_handle(*request);
    pb_eng_wait(*request);
    what = failure(*request);
    rc = finish(request, status);
    return rc == MPI_SUCCESS ? rc : pb_mpi_raise(comm, rc, "MPI_Wait", "%s", what);
}
PB_MPI_WEAK_ALIAS(MPI_Wait, PMPI_Wait);

/* *@flag = whether *@request is complete; if so, as MPI_Wait.
 * @return MPI_SUCCESS; MPI_ERR_REQUEST; MPI_ERR_TRUNCATE; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    PB_MPI_THREAD_GUARD;
    const char *what;
    MPI_Comm comm;
    int rc = check_request_ptr("MPI_Test", request);

    if (rc != MPI_SUCCESS)
        return rc;
    if (flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Test", "flag is NULL");
    if (*request == MPI_REQUEST_NULL) {
        *flag = 1;
        pb_mpi_status_empty(status);
        return MPI_SUCCESS;
    }
    if (!(*request)->complete)
        pb_eng_progress();
    *flag = (*request)->complete;
    if (!*flag)
        return MPI_SUCCESS;
    comm = comm_handle(*request);
    what = failure(*request);
    rc = finish(request, status);
    return rc == MPI_SUCCESS ? rc : pb_mpi_raise(comm, rc, "MPI_Test", "%s", what);
}
PB_MPI_WEAK_ALIAS(MPI_Test, PMPI_Test);

static int check_requests(const char *func, int count, MPI_Request requests[])
{
    if (count < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "count %d is negative", count);
    if (count > 0 && requests == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "requests is NULL");
    for (int i = 0; i < count; i++) {
        if (requests[i] != MPI_REQUEST_NULL && !pb_mpi_request_valid(requests[i]))
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func,
                                "requests[%d] is not a request", i);
    }
    return MPI_SUCCESS;
}

typedef struct {
    int count;
    MPI_Request *requests;
} set_t;

static int all_done(void *arg)
{
    set_t *s = arg;

    for (int i = 0; i < s->count; i++) {
        if (s->requests[i] != MPI_REQUEST_NULL && !s->requests[i]->complete)
            return 0;
    }
    return 1;
}

static int any_done(void *arg)
{
    set_t *s = arg;
    int any = 0;

    for (int i = 0; i < s->count; i++) {
        if (!active(s->requests[i]))
            continue;
        any = 1;
        if (s->requests[i]->complete)
            return 1;
    }
    return !any;
}

/* Finish every complete request of the set into @statuses (or @indices);
 * @return MPI_SUCCESS or MPI_ERR_IN_STATUS when one failed, and then in
 * *@failed_p the communicator of the first that failed (its handler) and
 * what went wrong with it. */
typedef struct {
    MPI_Comm comm;
    const char *what;
} failed_t;

static int finish_all(int count, MPI_Request requests[], MPI_Status statuses[], int *outcount,
                      int indices[], failed_t *failed_p)
{
    int rc = MPI_SUCCESS, done = 0;

    for (int i = 0; i < count; i++) {
        MPI_Status one;
        failed_t this;

        if (!active(requests[i]) || !requests[i]->complete) {
            if (outcount == NULL && statuses != MPI_STATUSES_IGNORE)
                pb_mpi_status_empty(&statuses[i]);
            continue;
        }
        this = (failed_t){comm_handle(requests[i]), failure(requests[i])};
        if (finish(&requests[i], &one) != MPI_SUCCESS) {
            if (rc == MPI_SUCCESS)
                *failed_p = this;
            rc = MPI_ERR_IN_STATUS;
        }
        if (indices != NULL)
            indices[done] = i;
        if (statuses != MPI_STATUSES_IGNORE)
            statuses[outcount != NULL ? done : i] = one;
        done++;
    }
    if (outcount != NULL)
        *outcount = done;
    return rc;
}

/* Wait for every request of @requests; statuses in @statuses.
 * @return MPI_SUCCESS; MPI_ERR_IN_STATUS (see each status's MPI_ERROR);
 *         MPI_ERR_REQUEST; MPI_ERR_COUNT; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    PB_MPI_THREAD_GUARD;
    failed_t failed = {MPI_COMM_NULL, NULL};
    set_t s = {count, requests};
    int rc = check_requests("MPI_Waitall", count, requests);

    if (rc != MPI_SUCCESS)
        return rc;
    pb_eng_wait_until(all_done, &s);
    rc = finish_all(count, requests, statuses, NULL, NULL, &failed);
    return rc == MPI_SUCCESS ? rc : pb_mpi_raise(failed.comm, rc, "MPI_Waitall", "%s", failed.what);
}
PB_MPI_WEAK_ALIAS(MPI_Waitall, PMPI_Waitall);

/* *@flag = whether every request is complete; if so, as MPI_Waitall.
 * Errors as MPI_Waitall. */
PB_EXPORT int PMPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    PB_MPI_THREAD_GUARD;
    failed_t failed = {MPI_COMM_NULL, NULL};
    set_t s = {count, requests};
    int rc = check_requests("MPI_Testall", count, requests);

    if (rc != MPI_SUCCESS)
        return rc;
    if (flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Testall", "flag is NULL");
    if (!all_done(&s))
        pb_eng_progress();
    *flag = all_done(&s);
    if (!*flag)
        return MPI_SUCCESS;
    rc = finish_all(count, requests, statuses, NULL, NULL, &failed);
    return rc == MPI_SUCCESS ? rc : pb_mpi_raise(failed.comm, rc, "MPI_Testall", "%s", failed.what);
}
PB_MPI_WEAK_ALIAS(MPI_Testall, PMPI_Testall);

static int first_complete(const char *func, int count, MPI_Request requests[], int *index,
                          MPI_Status *status)
{
    for (int i = 0; i < count; i++) {
        if (active(requests[i]) && requests[i]->complete) {
            MPI_Comm comm = comm_handle(requests[i]);
            const char *what = failure(requests[i]);
            int rc = finish(&requests[i], status);

            *index = i;
            return rc == MPI_SUCCESS ? rc : pb_mpi_raise(comm, rc, func, "%s", what);
        }
    }
    *index = MPI_UNDEFINED;
    pb_mpi_status_empty(status);
    return MPI_SUCCESS;
}

/* Wait for one request of @requests (the first complete); *@index is its
 * index, or MPI_UNDEFINED when none is active.  Errors as MPI_Wait. */
PB_EXPORT int PMPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    PB_MPI_THREAD_GUARD;
    set_t s = {count, requests};
    int rc = check_requests("MPI_Waitany", count, requests);

    if (rc != MPI_SUCCESS)
        return rc;
    if (index == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Waitany", "index is NULL");
    pb_eng_wait_until(any_done, &s);
    return first_complete("MPI_Waitany", count, requests, index, status);
}
PB_MPI_WEAK_ALIAS(MPI_Waitany, PMPI_Waitany);

/* *@flag = whether one request of @requests is complete (or none is
 * active); if so, as MPI_Waitany.  Errors as MPI_Waitany. */
PB_EXPORT int PMPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
                           MPI_Status *status)
{
    PB_MPI_THREAD_GUARD;
    set_t s = {count, requests};
    int rc = check_requests("MPI_Testany", count, requests);

    if (rc != MPI_SUCCESS)
        return rc;
    if (index == NULL || flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Testany", "NULL argument");
    if (!any_done(&s))
        pb_eng_progress();
    *flag = any_done(&s);
    if (!*flag) {
        *index = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    return first_complete("MPI_Testany", count, requests, index, status);
}
PB_MPI_WEAK_ALIAS(MPI_Testany, PMPI_Testany);

/* Wait until at least one request completes; finish every complete one:
 * their number in *@outcount (MPI_UNDEFINED when none is active), their
 * indices in @indices.  Errors as MPI_Waitall. */
PB_EXPORT int PMPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    PB_MPI_THREAD_GUARD;
    failed_t failed = {MPI_COMM_NULL, NULL};
    set_t s = {incount, requests};
    int rc = check_requests("MPI_Waitsome", incount, requests), any = 0;

    if (rc != MPI_SUCCESS)
        return rc;
    if (outcount == NULL || (incount > 0 && indices == NULL))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Waitsome", "NULL argument");
    for (int i = 0; i < incount; i++)
        any |= active(requests[i]);
    if (!any) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    pb_eng_wait_until(any_done, &s);
    rc = finish_all(incount, requests, statuses, outcount, indices, &failed);
    return rc == MPI_SUCCESS ? rc
                             : pb_mpi_raise(failed.comm, rc, "MPI_Waitsome", "%s", failed.what);
}
PB_MPI_WEAK_ALIAS(MPI_Waitsome, PMPI_Waitsome);

/* As MPI_Waitsome without waiting: *@outcount may be 0.  Errors as
 * MPI_Waitsome. */
PB_EXPORT int PMPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                            MPI_Status statuses[])
{
    PB_MPI_THREAD_GUARD;
    failed_t failed = {MPI_COMM_NULL, NULL};
    int rc = check_requests("MPI_Testsome", incount, requests), any = 0;

    if (rc != MPI_SUCCESS)
        return rc;
    if (outcount == NULL || (incount > 0 && indices == NULL))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Testsome", "NULL argument");
    for (int i = 0; i < incount; i++)
        any |= active(requests[i]);
    if (!any) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    pb_eng_progress();
    rc = finish_all(incount, requests, statuses, outcount, indices, &failed);
    return rc == MPI_SUCCESS ? rc
                             : pb_mpi_raise(failed.comm, rc, "MPI_Testsome", "%s", failed.what);
}
PB_MPI_WEAK_ALIAS(MPI_Testsome, PMPI_Testsome);

/* Let go of *@request: it completes in the background and is freed then;
 * an inactive persistent request is freed now; a generalized request's
 * free function runs now if it is complete, else at MPI_Grequest_complete.
 * @return MPI_SUCCESS; MPI_ERR_REQUEST (also for an active collective or
 * partitioned request, which the standard does not let the program free);
 * the free function's error. */
PB_EXPORT int PMPI_Request_free(MPI_Request *request)
{
    PB_MPI_THREAD_GUARD;
    int rc = check_request_ptr("MPI_Request_free", request);

    if (rc != MPI_SUCCESS)
        return rc;
    if (*request == MPI_REQUEST_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Request_free",
                            "the request is MPI_REQUEST_NULL");
    if ((*request)->kind == PB_ENG_REQ_COLL && active(*request))
        return pb_mpi_raise(comm_handle(*request), MPI_ERR_REQUEST, "MPI_Request_free",
                            "the request is an active collective one: complete it first "
                            "(MPI_Wait, MPI_Test ...)");
    if (((*request)->kind == PB_ENG_REQ_PSEND || (*request)->kind == PB_ENG_REQ_PRECV) &&
        active(*request))
        return pb_mpi_raise(comm_handle(*request), MPI_ERR_REQUEST, "MPI_Request_free",
                            "the request is an active partitioned one: complete it first "
                            "(MPI_Wait, MPI_Test ...)");
    if ((*request)->kind == PB_ENG_REQ_GREQ) {
        rc = pb_mpi_grequest_free(*request);
        *request = MPI_REQUEST_NULL;
        return rc == MPI_SUCCESS ? rc
                                 : pb_mpi_raise(MPI_COMM_NULL, rc, "MPI_Request_free",
                                                "the generalized request's free function failed");
    }
    if ((*request)->persistent && !active(*request)) {
        pb_mpi_request_release(*request);
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    pb_mpi_request_let_go(*request);
    pb_eng_request_free(*request);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Request_free, PMPI_Request_free);

/* *@flag = whether @request is complete, with its status, without freeing
 * it.  @return MPI_SUCCESS; MPI_ERR_REQUEST; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    PB_MPI_THREAD_GUARD;
    if (flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Request_get_status", "flag is NULL");
    if (request == MPI_REQUEST_NULL) {
        *flag = 1;
        pb_mpi_status_empty(status);
        return MPI_SUCCESS;
    }
    if (!pb_mpi_request_valid(request))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Request_get_status",
                            "not a request");
    if (!active(request)) {
        *flag = 1;
        pb_mpi_status_empty(status);
        return MPI_SUCCESS;
    }
    if (!request->complete)
        pb_eng_progress();
    *flag = request->complete;
    if (*flag && request->kind == PB_ENG_REQ_GREQ) {
        int rc = pb_mpi_grequest_status(request, status);

        return rc == MPI_SUCCESS ? rc
                                 : pb_mpi_raise(MPI_COMM_NULL, rc, "MPI_Request_get_status",
                                                "the generalized request's query function failed");
    }
    if (*flag)
        pb_mpi_status_store(status, request, request->comm);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Request_get_status, PMPI_Request_get_status);

/* The status of request @r as MPI_Request_get_status gives it, without
 * progress: 1 with *@status set when complete (or not active), else 0. */
static int peek_status(MPI_Request r, MPI_Status *status)
{
    if (!active(r)) {
        pb_mpi_status_empty(status);
        return 1;
    }
    if (!r->complete)
        return 0;
    if (r->kind == PB_ENG_REQ_GREQ) {
        /* the query function fills it; its error is the status's */
        int rc = pb_mpi_grequest_status(r, status);

        if (rc != MPI_SUCCESS && status != MPI_STATUS_IGNORE)
            status->MPI_ERROR = rc;
        return 1;
    }
    pb_mpi_status_store(status, r, r->comm);
    return 1;
}

/* Check @requests of the MPI_Request_get_status_ forms (which take them
 * const): as check_requests. */
static int check_const_requests(const char *func, int count, const MPI_Request requests[])
{
    return check_requests(func, count, (MPI_Request *)requests);
}

/* *@flag = whether every request of @requests is complete (or not active);
 * if so their statuses, without freeing or deactivating any (MPI-4.1).
 * @return MPI_SUCCESS; MPI_ERR_IN_STATUS (a complete request's error, in
 * its status); MPI_ERR_REQUEST; MPI_ERR_COUNT; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Request_get_status_all(int count, const MPI_Request array_of_requests[],
                                          int *flag, MPI_Status array_of_statuses[])
{
    PB_MPI_THREAD_GUARD;
    set_t s = {count, (MPI_Request *)array_of_requests};
    int rc = check_const_requests("MPI_Request_get_status_all", count, array_of_requests);

    if (rc != MPI_SUCCESS)
        return rc;
    if (flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Request_get_status_all",
                            "flag is NULL");
    if (!all_done(&s))
        pb_eng_progress();
    *flag = all_done(&s);
    if (!*flag)
        return MPI_SUCCESS;
    for (int i = 0; i < count; i++) {
        MPI_Status one;

        peek_status(array_of_requests[i], &one);
        if (array_of_statuses != MPI_STATUSES_IGNORE)
            array_of_statuses[i] = one;
        if (one.MPI_ERROR != MPI_SUCCESS) /* (sends' statuses say MPI_SUCCESS) */
            rc = MPI_ERR_IN_STATUS;
    }
    return rc == MPI_SUCCESS ? rc
                             : pb_mpi_raise(MPI_COMM_NULL, rc, "MPI_Request_get_status_all",
                                            "a request failed (see its status)");
}
PB_MPI_WEAK_ALIAS(MPI_Request_get_status_all, PMPI_Request_get_status_all);

/* *@flag = whether one request of @requests is complete (or none is
 * active); *@indx is the first complete one (MPI_UNDEFINED when none is
 * active), with its status; nothing is freed or deactivated (MPI-4.1).
 * @return MPI_SUCCESS; MPI_ERR_REQUEST; MPI_ERR_COUNT; MPI_ERR_ARG; the
 * request's error. */
PB_EXPORT int PMPI_Request_get_status_any(int count, const MPI_Request array_of_requests[],
                                          int *indx, int *flag, MPI_Status *status)
{
    PB_MPI_THREAD_GUARD;
    set_t s = {count, (MPI_Request *)array_of_requests};
    int rc = check_const_requests("MPI_Request_get_status_any", count, array_of_requests);

    if (rc != MPI_SUCCESS)
        return rc;
    if (indx == NULL || flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Request_get_status_any",
                            "NULL argument");
    if (!any_done(&s))
        pb_eng_progress();
    *flag = any_done(&s);
    *indx = MPI_UNDEFINED;
    if (!*flag)
        return MPI_SUCCESS;
    for (int i = 0; i < count; i++) {
        MPI_Request r = array_of_requests[i];

        if (active(r) && r->complete) {
            MPI_Status one;

            *indx = i;
            peek_status(r, &one);
            if (status != MPI_STATUS_IGNORE)
                *status = one;
            rc = r->kind != PB_ENG_REQ_SEND ? one.MPI_ERROR : MPI_SUCCESS;
            return rc == MPI_SUCCESS ? rc
                                     : pb_mpi_raise(comm_handle(r), rc,
                                                    "MPI_Request_get_status_any", "%s", failure(r));
        }
    }
    pb_mpi_status_empty(status); /* none active */
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Request_get_status_any, PMPI_Request_get_status_any);

/* Every complete active request of @requests: their number in *@outcount
 * (MPI_UNDEFINED when none is active), their indices and statuses; nothing
 * is freed or deactivated (MPI-4.1).  @return MPI_SUCCESS;
 * MPI_ERR_IN_STATUS; MPI_ERR_REQUEST; MPI_ERR_COUNT; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Request_get_status_some(int incount, const MPI_Request array_of_requests[],
                                           int *outcount, int array_of_indices[],
                                           MPI_Status array_of_statuses[])
{
    PB_MPI_THREAD_GUARD;
    int rc = check_const_requests("MPI_Request_get_status_some", incount, array_of_requests),
        any = 0;

    if (rc != MPI_SUCCESS)
        return rc;
    if (outcount == NULL || (incount > 0 && array_of_indices == NULL))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Request_get_status_some",
                            "NULL argument");
    for (int i = 0; i < incount; i++)
        any |= active(array_of_requests[i]);
    if (!any) {
        *outcount = MPI_UNDEFINED;
        return MPI_SUCCESS;
    }
    pb_eng_progress();
    *outcount = 0;
    for (int i = 0; i < incount; i++) {
        MPI_Request r = array_of_requests[i];
        MPI_Status one;

        if (!active(r) || !r->complete)
            continue;
        peek_status(r, &one);
        if (one.MPI_ERROR != MPI_SUCCESS)
            rc = MPI_ERR_IN_STATUS;
        if (array_of_statuses != MPI_STATUSES_IGNORE)
            array_of_statuses[*outcount] = one;
        array_of_indices[(*outcount)++] = i;
    }
    return rc == MPI_SUCCESS ? rc
                             : pb_mpi_raise(MPI_COMM_NULL, rc, "MPI_Request_get_status_some",
                                            "a request failed (see its status)");
}
PB_MPI_WEAK_ALIAS(MPI_Request_get_status_some, PMPI_Request_get_status_some);

/* Cancel a receive or send that no receive has matched yet (its status
 * then says cancelled); one already matched completes normally.  A send
 * whose envelope went is taken back by its receiver (docs/mpi.md,
 * "Cancelling a send"); a buffered send is not cancelled (its copy is on
 * its way); a generalized request's cancel function runs.  Complete the
 * request with MPI_Wait.  @return MPI_SUCCESS; MPI_ERR_REQUEST (also for a
 * collective request, or an active partitioned one: the standard makes
 * cancelling those erroneous); the cancel function's error. */
PB_EXPORT int PMPI_Cancel(MPI_Request *request)
{
    PB_MPI_THREAD_GUARD;
    MPI_Request r;
    int rc = check_request_ptr("MPI_Cancel", request);

    if (rc != MPI_SUCCESS)
        return rc;
    r = *request;
    if (r == MPI_REQUEST_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Cancel",
                            "the request is MPI_REQUEST_NULL");
    if (r->kind == PB_ENG_REQ_COLL)
        return pb_mpi_raise(comm_handle(r), MPI_ERR_REQUEST, "MPI_Cancel",
                            "the request is a collective one, which cannot be cancelled");
    if ((r->kind == PB_ENG_REQ_PSEND || r->kind == PB_ENG_REQ_PRECV) && active(r))
        return pb_mpi_raise(comm_handle(r), MPI_ERR_REQUEST, "MPI_Cancel",
                            "the request is an active partitioned one, which cannot be "
                            "cancelled");
    if (r->kind == PB_ENG_REQ_GREQ) {
        rc = pb_mpi_grequest_cancel(r);
        return rc == MPI_SUCCESS ? rc
                                 : pb_mpi_raise(MPI_COMM_NULL, rc, "MPI_Cancel",
                                                "the generalized request's cancel function failed");
    }
    if (!active(r))
        return MPI_SUCCESS; /* an inactive persistent request: nothing under way */
    if (r->kind == PB_ENG_REQ_SEND)
        pb_eng_send_cancel(r);
    else
        pb_eng_recv_cancel(r);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Cancel, PMPI_Cancel);

/* ---- persistent requests ----------------------------------------------------------- */

/* Check that @r (valid) can be started by @func: MPI_ERR_REQUEST. */
static int check_startable(const char *func, MPI_Request r, int index)
{
    char which[32] = "the request";

    if (index >= 0)
        snprintf(which, sizeof(which), "requests[%d]", index);
    if (r == MPI_REQUEST_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func, "%s is MPI_REQUEST_NULL", which);
    if (!r->persistent)
        return pb_mpi_raise(comm_handle(r), MPI_ERR_REQUEST, func,
                            "%s is not a persistent request (MPI_X_init makes those)", which);
    if (r->active)
        return pb_mpi_raise(comm_handle(r), MPI_ERR_REQUEST, func,
                            "%s is already active: complete it (MPI_Wait ...) before starting it "
                            "again",
                            which);
    return MPI_SUCCESS;
}

/* Start the inactive persistent request @r, by its kind.  @return
 * MPI_SUCCESS or the error raised (a buffered send without room). */
static int start(const char *func, MPI_Request r)
{
    if (r->kind == PB_ENG_REQ_COLL) {
        pb_sched_start(r);
        return MPI_SUCCESS;
    }
    if (r->kind == PB_ENG_REQ_PSEND || r->kind == PB_ENG_REQ_PRECV) {
        pb_mpi_part_start(r);
        return MPI_SUCCESS;
    }
    return pb_mpi_p2p_start(func, r);
}

/* Start the inactive persistent request *@request (a persistent
 * collective's: every rank starts them in the same order; a persistent
 * send or receive's; a partitioned one's).  @return MPI_SUCCESS;
 * MPI_ERR_REQUEST (not a request, not persistent, already active);
 * MPI_ERR_BUFFER (a buffered send without room in the attached buffer). */
PB_EXPORT int PMPI_Start(MPI_Request *request)
{
    PB_MPI_THREAD_GUARD;
    int rc = check_request_ptr("MPI_Start", request);

    if (rc == MPI_SUCCESS)
        rc = check_startable("MPI_Start", *request, -1);
    if (rc == MPI_SUCCESS)
        rc = start("MPI_Start", *request);
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Start, PMPI_Start);

/* MPI_Start of each of the @count requests, in their order; none starts
 * when one cannot (but a buffered send without room stops the starts
 * where it is).  Errors as MPI_Start, and MPI_ERR_COUNT, MPI_ERR_ARG; a
 * request named twice is already active the second time. */
PB_EXPORT int PMPI_Startall(int count, MPI_Request requests[])
{
    PB_MPI_THREAD_GUARD;
    int rc = check_requests("MPI_Startall", count, requests);

    for (int i = 0; i < count && rc == MPI_SUCCESS; i++) {
        rc = check_startable("MPI_Startall", requests[i], i);
        for (int j = 0; j < i && rc == MPI_SUCCESS; j++) {
            if (requests[j] == requests[i])
                rc = pb_mpi_raise(comm_handle(requests[i]), MPI_ERR_REQUEST, "MPI_Startall",
                                  "requests[%d] is requests[%d] again", i, j);
        }
    }
    for (int i = 0; i < count && rc == MPI_SUCCESS; i++)
        rc = start("MPI_Startall", requests[i]);
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Startall, PMPI_Startall);

/* *@flag = whether the request @status belongs to was cancelled.
 * @return MPI_SUCCESS; MPI_ERR_ARG. */
PB_EXPORT int PMPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    PB_MPI_THREAD_GUARD;
    if (status == NULL || flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Test_cancelled", "NULL argument");
    *flag = pb_mpi_status_cancelled(status);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Test_cancelled, PMPI_Test_cancelled);

/* ---- handle conversions ---------------------------------------------------------- */

/* The integer of @request (the ABI's conversion for other languages):
 * MPI_REQUEST_NULL's ABI value, or one from PB_ENG_HANDLE_INT_BASE up (its
 * entry in the handle registry) while the request lives.  A bad handle raises MPI_ERR_REQUEST and
 * gives MPI_REQUEST_NULL's. */
PB_EXPORT int PMPI_Request_toint(MPI_Request request)
{
    if (request == MPI_REQUEST_NULL)
        return (int)(uintptr_t)MPI_REQUEST_NULL;
    if (!pb_mpi_request_valid(request)) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Request_toint", "not a request");
        return (int)(uintptr_t)MPI_REQUEST_NULL;
    }
    return pb_eng_handle_toint(PB_ENG_HANDLE_REQUEST, request);
}
PB_MPI_WEAK_ALIAS(MPI_Request_toint, PMPI_Request_toint);

/* The request of integer @request (MPI_Request_toint), or MPI_REQUEST_NULL
 * when no live request has it. */
PB_EXPORT MPI_Request PMPI_Request_fromint(int request)
{
    MPI_Request r;

    if (request == (int)(uintptr_t)MPI_REQUEST_NULL || request < PB_ENG_HANDLE_INT_BASE)
        return MPI_REQUEST_NULL;
    r = pb_eng_handle_fromint(PB_ENG_HANDLE_REQUEST, request);
    return r != NULL ? r : MPI_REQUEST_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Request_fromint, PMPI_Request_fromint);
