/*
 * The job this process belongs to: its id, its secret and its node, as the
 * launcher handed them over (POSTBOX_JOB_ID, POSTBOX_JOB_SECRET,
 * POSTBOX_NODE_ID).  A process started outside a job belongs to the solo
 * job of its user ("solo-<uid>"), which has no secret; the transports then
 * admit only peers of the same user that are also outside a job.
 */
#ifndef PB_UTIL_JOB_H
#define PB_UTIL_JOB_H

#include <stddef.h>
#include <stdint.h>

#define PB_JOB_ID_MAX 48
#define PB_JOB_SECRET_LEN 16

typedef struct {
    char id[PB_JOB_ID_MAX]; /* [A-Za-z0-9_.-], never empty */
    uint8_t secret[PB_JOB_SECRET_LEN];
    int has_secret; /* 0 for the solo job */
    uint32_t node_id;
} pb_job_t;

/* The job description, read from the environment on first call (the secret
 * is then removed from the environment).  Never NULL. */
const pb_job_t *pb_job_get(void);

/* Fill @nonce with @len bytes from the kernel's random source.
 * @return 0, or -1 with errno set. */
int pb_job_random_bytes(void *nonce, size_t len);

#endif
