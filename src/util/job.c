#include "util/job.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "util/config.h"
#include "util/log.h"

static pb_job_t job;
static pthread_once_t job_once = PTHREAD_ONCE_INIT;

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int job_parse_secret(const char *text, uint8_t secret[PB_JOB_SECRET_LEN])
{
    if (strlen(text) != 2 * PB_JOB_SECRET_LEN)
        return -1;
    for (int i = 0; i < PB_JOB_SECRET_LEN; i++) {
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

    if (len == 0 || len >= PB_JOB_ID_MAX)
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
    const char *secret = pb_config_get_string("POSTBOX_JOB_SECRET");
    long node = pb_config_get_long("POSTBOX_NODE_ID");

    pb_log_init();
    if (id != NULL && job_id_valid(id)) {
        snprintf(job.id, sizeof(job.id), "%s", id);
    } else {
        if (id != NULL)
            pb_warn("ignoring POSTBOX_JOB_ID '%s': use 1 to %d of [A-Za-z0-9_.-]", id,
                    PB_JOB_ID_MAX - 1);
        snprintf(job.id, sizeof(job.id), "solo-%u", (unsigned)getuid());
    }
    if (secret != NULL) {
        if (job_parse_secret(secret, job.secret) == 0)
            job.has_secret = 1;
        else
            pb_warn("ignoring POSTBOX_JOB_SECRET: not %d hex digits", 2 * PB_JOB_SECRET_LEN);
        unsetenv("POSTBOX_JOB_SECRET");
    }
    if (node < 0 || node > (long)UINT32_MAX) {
        pb_warn("ignoring POSTBOX_NODE_ID %ld: out of range", node);
        node = 0;
    }
    job.node_id = (uint32_t)node;
}

const pb_job_t *pb_job_get(void)
{
    pthread_once(&job_once, job_init);
    return &job;
}

int pb_job_random_bytes(void *nonce, size_t len)
{
    uint8_t *out = nonce;

    while (len > 0) {
        ssize_t got = getrandom(out, len, 0);

        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        out += got;
        len -= (size_t)got;
    }
    return 0;
}
