/*
 * The job this process belongs to: its id, its secret and its node, as the
 * launcher handed them over (POSTBOX_JOB_ID, POSTBOX_JOB_SECRET,
 * POSTBOX_NODE_ID).  A process started outside a job belongs to the solo
 * job of its user ("solo-<uid>"), which has no secret; the transports then
 * admit only peers of the same user that are also outside a job.
 *
 * Under a foreign launcher (Hydra, Slurm) the boot layer completes the job
 * in postbox_job_init: it sets the id, secret and node id it derived from
 * the PMI exchange, before the RSM layer first reads them.
 */
#ifndef PB_UTIL_JOB_H
#define PB_UTIL_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define PB_JOB_ID_MAX 48
#define PB_JOB_SECRET_LEN 16

typedef struct {
    char id[PB_JOB_ID_MAX]; /* [A-Za-z0-9_.-], never empty */
    uint8_t secret[PB_JOB_SECRET_LEN];
    int has_secret; /* 0 for the solo job */
    uint32_t node_id;
} pb_job_t;

/* The job description, read from the environment on first call (the secret
 * is then removed from the environment).  Never NULL.  This is what the RSM
 * layer calls: it freezes the job, so the setters below can no longer
 * change it. */
const pb_job_t *pb_job_get(void);

/* As pb_job_get, but without freezing the job: for the boot layer, which
 * looks before it sets. */
const pb_job_t *pb_job_peek(void);

/* Set the job id @id and the secret @secret_hex (2 * PB_JOB_SECRET_LEN hex
 * digits); either may be NULL to keep the current one.  Call before the
 * RSM layer uses the job (single-threaded).
 * @return PB_OK (also when nothing changes); PB_ERR_INVALID_PARAM if @id
 * or @secret_hex is malformed; PB_ERR_IN_USE if a change is needed but the
 * job is frozen.  Errors are logged. */
pb_status_t pb_job_set_identity(const char *id, const char *secret_hex);

/* Set the RSM node id of this process, as pb_job_set_identity.
 * @return PB_OK; PB_ERR_IN_USE if it differs and the job is frozen. */
pb_status_t pb_job_set_node(uint32_t node);

/* Fill @nonce with @len bytes from the kernel's random source.
 * @return 0, or -1 with errno set. */
int pb_job_random_bytes(void *nonce, size_t len);

#endif
