/*
 * The PMIx flavour of the PMI client (boot/pmi.h dispatches to it): joins
 * a PMIx server (prterun, srun --mpi=pmix, any PMIx launcher) through the
 * PMIx client library, libpmix.so.2, loaded with dlopen at the first
 * PMIx init, so that libpostbox loads where PMIx is absent.
 *
 * The job's key-value space is flat (a key names no rank), PMIx's is per
 * process (a get names the rank that put the key).  So each rank, at each
 * fence, also puts the list of keys it put since the last fence, under
 * "pb.keys.<fence number>" (a dot: no Postbox key has one, and PMIx keeps
 * "pmix." for itself); after the fence every rank reads every rank's list
 * and knows which rank to ask for which key.  The fence collects the data
 * (PMIX_COLLECT_DATA); a get looks in the process's own store first
 * (PMIX_OPTIONAL), then asks the local server, which holds every value
 * after the fence.
 */
#ifndef PB_BOOT_PMIX_H
#define PB_BOOT_PMIX_H

#include <stddef.h>

#include "util/status.h"

/* the PMIx client library's file name, as dlopen finds it */
#define PB_BOOT_PMIX_LIBRARY "libpmix.so.2"

typedef struct pb_boot_pmix pb_boot_pmix_t;

/* What PMIx init learnt of this process and its job. */
typedef struct {
    int rank;
    int size;
    int appnum;
    char nspace[256];
} pb_boot_pmix_job_t;

/* Load libpmix, PMIx_Init, and learn rank, size (PMIX_JOB_SIZE), appnum
 * and namespace into @job.  *@pmix_p is the new client (free it with
 * pb_boot_pmix_finalize).
 * @return PB_OK; PB_ERR_UNSUPPORTED when this build has no PMIx or
 * libpmix cannot be loaded; PB_ERR_PROTOCOL when PMIx_Init or a get fails
 * or gives a bad value; PB_ERR_NO_MEMORY.  The cause is logged. */
pb_status_t pb_boot_pmix_init(pb_boot_pmix_t **pmix_p, pb_boot_pmix_job_t *job);

/* Put @key=@value (checked by the caller) for the next fence.
 * @return PB_OK; PB_ERR_PROTOCOL (PMIx refused, logged); PB_ERR_NO_MEMORY. */
pb_status_t pb_boot_pmix_put(pb_boot_pmix_t *pmix, const char *key, const char *value);

/* Get @key into @value (@len bytes, NUL terminated); *@found_p is 0 when no
 * rank put it before the last fence (and this rank did not put it).
 * @return PB_OK; PB_ERR_INVALID_PARAM when the value does not fit;
 * PB_ERR_PROTOCOL (logged). */
pb_status_t pb_boot_pmix_get(pb_boot_pmix_t *pmix, const char *key, char *value, size_t len,
                             int *found_p);

/* Collective: commit, fence with data collection, read every rank's key
 * list.  @return PB_OK; PB_ERR_PROTOCOL (logged); PB_ERR_NO_MEMORY. */
pb_status_t pb_boot_pmix_fence(pb_boot_pmix_t *pmix);

/* The ranks of this job on this process's node as the launcher sees them
 * (PMIX_LOCAL_PEERS), up to @max into @ranks.  @return their number (may
 * exceed @max), or -1 when the launcher does not say (nothing logged). */
int pb_boot_pmix_local_peers(pb_boot_pmix_t *pmix, int *ranks, int max);

/* The launcher's name service (PMIx_Publish, _Lookup, _Unpublish):
 * publish @service as @port; look it up into @port (@len bytes, NUL
 * terminated); withdraw it.  The caller checks the lengths.
 * @return PB_OK; PB_ERR_IN_USE (published already); PB_ERR_NOT_PUBLISHED
 * (no such service); PB_ERR_UNSUPPORTED (the launcher has no name
 * service); PB_ERR_INVALID_PARAM (the port does not fit @len);
 * PB_ERR_PROTOCOL (logged). */
pb_status_t pb_boot_pmix_name_publish(pb_boot_pmix_t *pmix, const char *service, const char *port);
pb_status_t pb_boot_pmix_name_lookup(pb_boot_pmix_t *pmix, const char *service, char *port,
                                     size_t len);
pb_status_t pb_boot_pmix_name_unpublish(pb_boot_pmix_t *pmix, const char *service);

/* Ask the launcher to end the whole job with @exit_code and @message
 * (PMIx_Abort); returns when it did not kill this process. */
void pb_boot_pmix_abort(pb_boot_pmix_t *pmix, int exit_code, const char *message);

/* PMIx_Finalize and free @pmix (NULL is ok); the library stays loaded.
 * @return PB_OK; PB_ERR_PROTOCOL (logged; @pmix is freed anyway). */
pb_status_t pb_boot_pmix_finalize(pb_boot_pmix_t *pmix);

#endif
