/*
 * Generalized requests (grequest.h).  The request is the engine's, of kind
 * PB_ENG_REQ_GREQ (engine.h), not complete until MPI_Grequest_complete;
 * its ext holds the program's three functions and their extra_state.
 * Waiting for one makes progress as for any request (the program may
 * complete it from another thread, or from a callback of its own), so the
 * wait returns once it is complete.
 *
 * The functions run as the standard says: query_fn in the wait or test
 * that completes the request (and in MPI_Request_get_status once it is
 * complete), free_fn after it there, or, for a request the program
 * freed with MPI_Request_free, in whichever of MPI_Request_free and
 * MPI_Grequest_complete comes last; cancel_fn in MPI_Cancel.  A freed
 * request's handle stays valid until MPI_Grequest_complete, which the
 * program still calls on it.
 */
#include "mpi/grequest.h"

#include <stdlib.h>

#include "mpi/engine/engine.h"
#include "mpi/p2p.h"

typedef struct {
    MPI_Grequest_query_function *query_fn;
    MPI_Grequest_free_function *free_fn;
    MPI_Grequest_cancel_function *cancel_fn;
    void *extra_state;
    int freed; /* MPI_Request_free came before MPI_Grequest_complete */
} greq_t;

/* Free @r and its state (its functions are done with). */
static void greq_release(MPI_Request r)
{
    free(r->ext);
    r->ext = NULL;
    pb_mpi_request_release(r);
}

/* Start a generalized request: *@request, active until the program calls
 * MPI_Grequest_complete on it.  @return MPI_SUCCESS; MPI_ERR_ARG (request
 * or a function NULL); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Grequest_start(MPI_Grequest_query_function *query_fn,
                                  MPI_Grequest_free_function *free_fn,
                                  MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                                  MPI_Request *request)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Grequest_start";
    greq_t *g;
    MPI_Request r;

    if (request == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "request is NULL");
    if (query_fn == NULL || free_fn == NULL || cancel_fn == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "the %s function is NULL (the standard asks for all three)",
                            query_fn == NULL  ? "query"
                            : free_fn == NULL ? "free"
                                              : "cancel");
    if (!pb_mpi_active())
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "MPI is not initialized, or finalized");
    g = calloc(1, sizeof(*g));
    r = g != NULL ? pb_eng_request_api(PB_ENG_REQ_GREQ) : NULL;
    if (r == NULL) {
        free(g);
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "no memory for the request");
    }
    *g = (greq_t){query_fn, free_fn, cancel_fn, extra_state, 0};
    r->ext = g;
    *request = r;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Grequest_start, PMPI_Grequest_start);

/* Tell MPI that the operation of generalized request @request is done: a
 * wait or test on it then completes.  @return MPI_SUCCESS (or the free
 * function's error, for a request the program freed before);
 * MPI_ERR_REQUEST (not a generalized request, or complete already). */
PB_EXPORT int PMPI_Grequest_complete(MPI_Request request)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Grequest_complete";
    greq_t *g;

    if (request == MPI_REQUEST_NULL || !pb_mpi_request_valid(request) ||
        request->kind != PB_ENG_REQ_GREQ)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func,
                            "the request is not a generalized request (MPI_Grequest_start)");
    if (request->complete)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, func,
                            "the generalized request is complete already");
    g = request->ext;
    request->complete = 1;
    pb_eng.completed++; /* a thread asleep in a wait looks again (engine/lock.h) */
    if (g->freed) {
        int rc = g->free_fn(g->extra_state);

        greq_release(request);
        if (rc != MPI_SUCCESS)
            return pb_mpi_raise(MPI_COMM_NULL, rc, func, "the request's free function failed");
    }
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Grequest_complete, PMPI_Grequest_complete);

int pb_mpi_grequest_status(MPI_Request r, MPI_Status *status)
{
    greq_t *g = r->ext;
    MPI_Status own;
    MPI_Status *s = status != MPI_STATUS_IGNORE ? status : &own;
    int rc;

    pb_mpi_status_empty(s);
    rc = g->query_fn(g->extra_state, s);
    if (rc != MPI_SUCCESS)
        s->MPI_ERROR = rc;
    return rc;
}

int pb_mpi_grequest_finish(MPI_Request *request, MPI_Status *status)
{
    MPI_Request r = *request;
    greq_t *g = r->ext;
    int rc = pb_mpi_grequest_status(r, status);
    int freed = g->free_fn(g->extra_state);

    greq_release(r);
    *request = MPI_REQUEST_NULL;
    return rc != MPI_SUCCESS ? rc : freed;
}

int pb_mpi_grequest_free(MPI_Request r)
{
    greq_t *g = r->ext;
    int rc;

    if (!r->complete) {
        g->freed = 1;
        return MPI_SUCCESS;
    }
    rc = g->free_fn(g->extra_state);
    greq_release(r);
    return rc;
}

int pb_mpi_grequest_cancel(MPI_Request r)
{
    greq_t *g = r->ext;

    return g->cancel_fn(g->extra_state, r->complete);
}
