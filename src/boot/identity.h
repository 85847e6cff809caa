/*
 * The identity of the job this process belongs to: its id, its secret and
 * its node.  Boot owns it.  It is read from what the launcher handed over
 * (POSTBOX_JOB_ID, POSTBOX_JOB_SECRET, POSTBOX_NODE_ID); under a foreign
 * launcher (Hydra, Slurm) postbox_job_init completes it with the id,
 * secret and node id it derives from the PMI exchange.  The RSM layer
 * reads it through pb_boot_identity_get, which fixes it for the life of
 * the process: postbox_job_init must come before the first RSM call.
 *
 * A process started outside a job belongs to the solo job of its user
 * ("solo-<uid>"), which no launcher gives a secret: its secret is the
 * user's solo key, a 0600 file in the user's runtime directory
 * (boot/solo_key.h), and the transports also admit only peers of the
 * same user.
 */
#ifndef PB_BOOT_IDENTITY_H
#define PB_BOOT_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define PB_BOOT_ID_MAX 48
#define PB_BOOT_SECRET_LEN 16

typedef struct {
    char id[PB_BOOT_ID_MAX];            /* [A-Za-z0-9_.-], never empty */
    uint8_t secret[PB_BOOT_SECRET_LEN]; /* the solo job's: the user's solo key */
    int has_secret;                     /* 0 for the solo job (its secret is then the solo key) */
    uint32_t node_id;
} pb_boot_identity_t;

/* The identity, read from the environment on first use (the secret is
 * then removed from the environment and its bytes wiped, see
 * pb_boot_env_take).  Never NULL.  The RSM layer's
 * accessor: it freezes the identity, so the setters below can no longer
 * change it, and it fills the solo job's secret with the solo key (a
 * process that cannot read or create that key gets a random key of its
 * own, with one warning). */
const pb_boot_identity_t *pb_boot_identity_get(void);

/* As pb_boot_identity_get, but without freezing it: for Boot, which looks
 * before it sets. */
const pb_boot_identity_t *pb_boot_identity_peek(void);

/* Set the job id @id and the secret @secret_hex (2 * PB_BOOT_SECRET_LEN hex
 * digits); either may be NULL to keep the current one.  Call before the
 * RSM layer uses the job (single-threaded).
 * @return PB_OK (also when nothing changes); PB_ERR_INVALID_PARAM if @id
 * or @secret_hex is malformed; PB_ERR_IN_USE if a change is needed but the
 * job is frozen.  Errors are logged. */
pb_status_t pb_boot_identity_set(const char *id, const char *secret_hex);

/* Set the RSM node id of this process, as pb_boot_identity_set.
 * @return PB_OK; PB_ERR_IN_USE if it differs and the job is frozen. */
pb_status_t pb_boot_identity_set_node(uint32_t node);

#endif
