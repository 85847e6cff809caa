/*
 * The engine's state, start and end (engine.h).
 */
#include <postbox/job.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi/engine/copy.h"
#include "mpi/engine/handle.h"
#include "mpi/engine/protocol.h"
#include "util/log.h"

pb_eng_t pb_eng;
pb_eng_stats_t pb_eng_stats;
_Atomic(pb_eng_unexpected_hook_t *) pb_eng_unexpected_hook;

uint64_t pb_eng_stats_now_ns(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

int pb_eng_init(void)
{
    int rc;

    /* this library's copy of the log (src/util/log.c) reads its level */
    pb_log_init();
    rc = pb_eng_channel_init();
    if (rc != MPI_SUCCESS)
        return rc;
    pb_eng.size = postbox_job_size();
    pb_eng.unexp_tail = &pb_eng.unexp;
    pb_eng.sends = calloc((size_t)pb_eng.size, sizeof(*pb_eng.sends));
    pb_eng.controls = calloc((size_t)pb_eng.size, sizeof(*pb_eng.controls));
    pb_eng.streams = calloc((size_t)pb_eng.size, sizeof(*pb_eng.streams));
    pb_eng.expect = calloc((size_t)pb_eng.size, sizeof(*pb_eng.expect));
    pb_eng.offered = calloc((size_t)pb_eng.size, sizeof(*pb_eng.offered));
    pb_eng.byte_type = pb_eng_type_predefined((uintptr_t)MPI_BYTE);
    if (pb_eng.sends == NULL || pb_eng.controls == NULL || pb_eng.streams == NULL ||
        pb_eng.expect == NULL || pb_eng.offered == NULL)
        return MPI_ERR_NO_MEM;
    return MPI_SUCCESS;
}

void pb_eng_finalize(void)
{
    /* buffered sends and acknowledgements still owed go out first */
    for (;;) {
        int busy = pb_eng.sends_open > 0; /* freed rendezvous sends too */

        for (int d = 0; d < pb_eng.size; d++)
            busy |= pb_eng.controls[d] != NULL;
        if (!busy)
            break;
        if (pb_eng_progress() == 0)
            sched_yield();
    }
    while (pb_eng.unexp != NULL) {
        pb_eng_unexpected_t *u = pb_eng.unexp;

        pb_eng.unexp = u->next;
        pb_eng_stat_unexpected(0);
        free(u->data);
        free(u);
    }
    /* receives never matched (freed ones, or a program's left pending):
     * nothing can complete them any more */
    while (pb_eng.posted.head != NULL) {
        MPI_Request r = pb_eng.posted.head;

        pb_eng_queue_remove(&pb_eng.posted, r);
        pb_eng_request_release(r);
    }
    while (pb_eng.spare != NULL) {
        MPI_Request r = pb_eng.spare;

        pb_eng.spare = r->next;
        pb_eng_handle_delete(PB_ENG_HANDLE_REQUEST, r);
    }
    free(pb_eng.sends);
    free(pb_eng.controls);
    free(pb_eng.streams);
    free(pb_eng.expect);
    free(pb_eng.offered);
    memset(&pb_eng, 0, sizeof(pb_eng));
    pb_eng_progress_hooks_clear();
    pb_eng_copy_finalize();
    pb_eng_channel_finalize();
}
