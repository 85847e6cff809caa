#include "boot/identity.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/env.h"
#include "boot/solo_key.h"
#include "util/config.h"
#include "util/log.h"
#include "util/random.h"

static pb_boot_identity_t job;
static pthread_once_t job_once = PTHREAD_ONCE_INIT;
static pthread_once_t solo_key_once = PTHREAD_ONCE_INIT;
/* set by the first pb_boot_identity_get(): from then on the RSM layer may
 * have used the id, secret or node, so they can no longer change */
static atomic_int job_frozen;

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int job_parse_secret(const char *text, uint8_t secret[PB_BOOT_SECRET_LEN])
{
    if (strlen(text) != 2 * PB_BOOT_SECRET_LEN)
        return -1;
    for (int i = 0; i < PB_BOOT_SECRET_LEN; i++) {
        int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return -1;
        secret[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int job_id_valid(const char *id)
{
    size_t len = strlen(id);

    if (len == 0 || len >= PB_BOOT_ID_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (!isalnum((unsigned char)id[i]) && id[i] != '_' && id[i] != '.' && id[i] != '-')
            return 0;
    }
    return 1;
}

static void job_init(void)
{
    const char *id = pb_config_get_string("POSTBOX_JOB_ID");
    char secret_text[2 * PB_BOOT_SECRET_LEN + 1];
    int secret = pb_boot_env_take("POSTBOX_JOB_SECRET", secret_text, sizeof(secret_text));
    long node = pb_config_get_long("POSTBOX_NODE_ID");

    pb_log_init();
    if (id != NULL && job_id_valid(id)) {
        snprintf(job.id, sizeof(job.id), "%s", id);
    } else {
        if (id != NULL)
            pb_warn("ignoring POSTBOX_JOB_ID '%s': use 1 to %d of [A-Za-z0-9_.-]", id,
                    PB_BOOT_ID_MAX - 1);
        snprintf(job.id, sizeof(job.id), "solo-%u", (unsigned)getuid());
    }
    if (secret != 0) {
        if (secret > 0 && job_parse_secret(secret_text, job.secret) == 0)
            job.has_secret = 1;
        else
            pb_warn("ignoring POSTBOX_JOB_SECRET: not %d hex digits", 2 * PB_BOOT_SECRET_LEN);
        explicit_bzero(secret_text, sizeof(secret_text));
    }
    if (node < 0 || node > (long)UINT32_MAX) {
        pb_warn("ignoring POSTBOX_NODE_ID %ld: out of range", node);
        node = 0;
    }
    job.node_id = (uint32_t)node;
}

/* The solo job's secret is the user's solo key (boot/solo_key.h), read
 * when the RSM layer first needs the identity of a process that no
 * launcher gave a secret.  Without the key the process gets a key of its
 * own, so that it reaches no other process rather than trusting anyone. */
static void job_solo_key_init(void)
{
    if (job.has_secret)
        return;
    if (pb_boot_solo_key_load(job.secret) == PB_OK)
        return;
    pb_warn("the solo job has no per-user key: this process reaches no other solo process");
    if (pb_random_bytes(job.secret, PB_BOOT_SECRET_LEN) != 0) {
        pb_error("getrandom for a private solo key failed: %m");
        abort();
    }
}

const pb_boot_identity_t *pb_boot_identity_get(void)
{
    pthread_once(&job_once, job_init);
    atomic_store_explicit(&job_frozen, 1, memory_order_relaxed);
    pthread_once(&solo_key_once, job_solo_key_init);
    return &job;
}

const pb_boot_identity_t *pb_boot_identity_peek(void)
{
    pthread_once(&job_once, job_init);
    return &job;
}

pb_status_t pb_boot_identity_set(const char *id, const char *secret_hex)
{
    uint8_t secret[PB_BOOT_SECRET_LEN];
    int same;

    pb_boot_identity_peek();
    if (id != NULL && !job_id_valid(id)) {
        pb_error("job id '%s' is invalid: use 1 to %d of [A-Za-z0-9_.-]", id, PB_BOOT_ID_MAX - 1);
        return PB_ERR_INVALID_PARAM;
    }
    if (secret_hex != NULL && job_parse_secret(secret_hex, secret) != 0) {
        pb_error("job secret is not %d hex digits", 2 * PB_BOOT_SECRET_LEN);
        return PB_ERR_INVALID_PARAM;
    }
    same = (id == NULL || strcmp(id, job.id) == 0) &&
           (secret_hex == NULL ||
            (job.has_secret && memcmp(secret, job.secret, PB_BOOT_SECRET_LEN) == 0));
    if (same)
        return PB_OK;
    if (atomic_load_explicit(&job_frozen, memory_order_relaxed)) {
        pb_error("cannot join job %s: the RSM layer already used job %s (call postbox_job_init "
                 "before the first RSM call)",
                 id ? id : job.id, job.id);
        return PB_ERR_IN_USE;
    }
    if (id != NULL)
        snprintf(job.id, sizeof(job.id), "%s", id);
    if (secret_hex != NULL) {
        memcpy(job.secret, secret, PB_BOOT_SECRET_LEN);
        job.has_secret = 1;
    }
    return PB_OK;
}

pb_status_t pb_boot_identity_set_node(uint32_t node)
{
    pb_boot_identity_peek();
    if (node == job.node_id)
        return PB_OK;
    if (atomic_load_explicit(&job_frozen, memory_order_relaxed)) {
        pb_error("cannot become node %u: the RSM layer already used node id %u (call "
                 "postbox_job_init before the first RSM call)",
                 (unsigned)node, (unsigned)job.node_id);
        return PB_ERR_IN_USE;
    }
    job.node_id = node;
    return PB_OK;
}
