/*
 * PMI client: which flavour this process speaks (PMI-1 or PMI-2 on the
 * wire, PMIx, or none: a singleton), and the operations of boot/pmi.h over
 * each.  The wire protocols are in pmi_wire.c, joining the process manager
 * in pmi_join.c.
 */
#include "boot/pmi_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/pmix.h"
#include "util/config.h"
#include "util/log.h"

typedef struct pmi_kv {
    struct pmi_kv *next;
    char *key;
    char *value;
} pmi_kv_t;

/* ---- flavour ------------------------------------------------------------------ */

static pb_status_t pmi_choose_version(int *version_p)
{
    const char *text;

    if (getenv("POSTBOX_PMI_VERSION") == NULL) {
        /* Slurm's --mpi=pmi2 sets PMI_JOBID, and speaks only PMI-2 */
        *version_p = getenv("PMI_JOBID") != NULL ? 2 : 1;
        return PB_OK;
    }
    text = pb_config_get_string("POSTBOX_PMI_VERSION");
    if (strcmp(text, "1") == 0 || strcmp(text, "2") == 0) {
        *version_p = text[0] - '0';
        return PB_OK;
    }
    pb_error("POSTBOX_PMI_VERSION='%s': use 1 or 2", text);
    return PB_ERR_INVALID_PARAM;
}

/* Did the launcher set a PMIx server's variables? */
static int pmi_env_offers_pmix(void)
{
    extern char **environ;

    if (getenv("PMIX_NAMESPACE") != NULL || getenv("PMIX_RANK") != NULL)
        return 1;
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, "PMIX_SERVER_URI", strlen("PMIX_SERVER_URI")) == 0)
            return 1;
    }
    return 0;
}

const char *pb_boot_pmi_flavour_name(pb_boot_pmi_flavour_t flavour)
{
    switch (flavour) {
    case PB_BOOT_PMI_1: return "pmi1";
    case PB_BOOT_PMI_2: return "pmi2";
    case PB_BOOT_PMI_X: return "pmix";
    default: return "singleton";
    }
}

pb_status_t pb_boot_pmi_choose(pb_boot_pmi_flavour_t *flavour_p)
{
    const char *forced = getenv("POSTBOX_PMI");
    int wire = getenv("PMI_FD") != NULL || getenv("PMI_PORT") != NULL;
    int version;
    pb_status_t status;

    if (forced != NULL && *forced != '\0' && strcmp(forced, "auto") != 0) {
        if (strcmp(forced, "pmix") == 0) {
            if (!pmi_env_offers_pmix()) {
                pb_error("POSTBOX_PMI=pmix, but the launcher set no PMIX_NAMESPACE, PMIX_RANK or "
                         "PMIX_SERVER_URI* (was this process started by a PMIx launcher such as "
                         "prterun or srun --mpi=pmix?)");
                return PB_ERR_INVALID_PARAM;
            }
            *flavour_p = PB_BOOT_PMI_X;
            return PB_OK;
        }
        if (strcmp(forced, "pmi1") != 0 && strcmp(forced, "pmi2") != 0) {
            pb_error("POSTBOX_PMI='%s': use pmi1, pmi2 or pmix (or auto, or leave it unset, to "
                     "choose from what the launcher offers)",
                     forced);
            return PB_ERR_INVALID_PARAM;
        }
        if (!wire) {
            pb_error("POSTBOX_PMI=%s, but the launcher set neither PMI_FD nor PMI_PORT (was this "
                     "process started by a PMI launcher such as postbox run, mpiexec.hydra or "
                     "srun --mpi=pmi2?)",
                     forced);
            return PB_ERR_INVALID_PARAM;
        }
        *flavour_p = forced[3] == '1' ? PB_BOOT_PMI_1 : PB_BOOT_PMI_2;
        return PB_OK;
    }
    /* a bad POSTBOX_PMI_VERSION is an error whatever the launcher */
    status = pmi_choose_version(&version);
    if (status != PB_OK)
        return status;
    if (wire)
        *flavour_p = version == 2 ? PB_BOOT_PMI_2 : PB_BOOT_PMI_1;
    else
        *flavour_p = pmi_env_offers_pmix() ? PB_BOOT_PMI_X : PB_BOOT_PMI_SINGLETON;
    return PB_OK;
}

/* Join the PMIx server of the launcher (flavour PB_BOOT_PMI_X). */
static pb_status_t pmi_pmix_init(pb_boot_pmi_t *pmi)
{
    pb_boot_pmix_job_t job;
    pb_status_t status = pb_boot_pmix_init(&pmi->pmix, &job);

    if (status != PB_OK)
        return status;
    pmi->rank = job.rank;
    pmi->size = job.size;
    pmi->appnum = job.appnum;
    snprintf(pmi->kvsname, sizeof(pmi->kvsname), "%s", job.nspace);
    pb_debug("PMIx: rank %d of %d, namespace %s", pmi->rank, pmi->size, pmi->kvsname);
    return PB_OK;
}

pb_status_t pb_boot_pmi_init(pb_boot_pmi_t **pmi_p)
{
    pb_boot_pmi_flavour_t flavour;
    pb_boot_pmi_t *pmi;
    pb_status_t status;
    int version;

    status = pb_boot_pmi_choose(&flavour);
    if (status != PB_OK)
        return status;
    version = flavour == PB_BOOT_PMI_2 ? 2 : 1;
    pmi = calloc(1, sizeof(*pmi));
    if (pmi == NULL) {
        pb_error("PMI: out of memory");
        return PB_ERR_NO_MEMORY;
    }
    pmi->flavour = flavour;
    pmi->wire.fd = -1;
    pmi->rank = -1;
    pmi->size = -1;
    status = pb_boot_pmi_join_take_token(pmi);
    if (status != PB_OK)
        goto err_free;
    if (flavour == PB_BOOT_PMI_X) {
        status = pmi_pmix_init(pmi);
        if (status != PB_OK)
            goto err_free;
        *pmi_p = pmi;
        return PB_OK;
    }
    if (flavour == PB_BOOT_PMI_SINGLETON) {
        /* a singleton: rank 0 of 1, with its own key-value space */
        pmi->rank = 0;
        pmi->size = 1;
        snprintf(pmi->kvsname, sizeof(pmi->kvsname), "singleton-%d", (int)getpid());
        *pmi_p = pmi;
        return PB_OK;
    }
    status = pb_boot_pmi_join(pmi, version);
    if (status != PB_OK)
        goto err_free;
    *pmi_p = pmi;
    return PB_OK;

err_free:
    explicit_bzero(pmi->token, sizeof(pmi->token));
    free(pmi);
    return status;
}

int pb_boot_pmi_rank(const pb_boot_pmi_t *pmi)
{
    return pmi->rank;
}

int pb_boot_pmi_size(const pb_boot_pmi_t *pmi)
{
    return pmi->size;
}

int pb_boot_pmi_appnum(const pb_boot_pmi_t *pmi)
{
    return pmi->appnum;
}

int pb_boot_pmi_version(const pb_boot_pmi_t *pmi)
{
    return pmi->version;
}

pb_boot_pmi_flavour_t pb_boot_pmi_flavour(const pb_boot_pmi_t *pmi)
{
    return pmi->flavour;
}

int pb_boot_pmi_launcher_local_ranks(pb_boot_pmi_t *pmi, int *ranks, int max)
{
    return pmi->pmix != NULL ? pb_boot_pmix_local_peers(pmi->pmix, ranks, max) : -1;
}

const char *pb_boot_pmi_kvsname(const pb_boot_pmi_t *pmi)
{
    return pmi->kvsname;
}

/* ---- key-value space ---------------------------------------------------------- */

static pmi_kv_t *pmi_local_find(pb_boot_pmi_t *pmi, const char *key)
{
    for (pmi_kv_t *kv = pmi->local_kvs; kv != NULL; kv = kv->next) {
        if (strcmp(kv->key, key) == 0)
            return kv;
    }
    return NULL;
}

static pb_status_t pmi_local_put(pb_boot_pmi_t *pmi, const char *key, const char *value)
{
    pmi_kv_t *kv = pmi_local_find(pmi, key);
    char *copy = strdup(value);

    if (copy == NULL)
        goto err_no_memory;
    if (kv == NULL) {
        kv = calloc(1, sizeof(*kv));
        if (kv == NULL)
            goto err_free_copy;
        kv->key = strdup(key);
        if (kv->key == NULL)
            goto err_free_kv;
        kv->next = pmi->local_kvs;
        pmi->local_kvs = kv;
    }
    free(kv->value);
    kv->value = copy;
    return PB_OK;

err_free_kv:
    free(kv);
err_free_copy:
    free(copy);
err_no_memory:
    pb_error("PMI: out of memory for key %s", key);
    return PB_ERR_NO_MEMORY;
}

static pb_status_t pmi_check_key(const char *key, const char *value)
{
    if (!pb_boot_pmi_key_valid(key) || strlen(key) >= PB_BOOT_PMI_KEY_MAX) {
        pb_error("PMI: bad key '%s': use 1 to %d of [A-Za-z0-9_/-]", key ? key : "(null)",
                 PB_BOOT_PMI_KEY_MAX - 1);
        return PB_ERR_INVALID_PARAM;
    }
    if (value != NULL && strlen(value) >= PB_BOOT_PMI_VALUE_MAX) {
        pb_error("PMI: value of key '%s' is longer than %d bytes", key, PB_BOOT_PMI_VALUE_MAX - 1);
        return PB_ERR_INVALID_PARAM;
    }
    return PB_OK;
}

pb_status_t pb_boot_pmi_put(pb_boot_pmi_t *pmi, const char *key, const char *value)
{
    pb_boot_pmi_msg_t query, reply;
    pb_status_t status = pmi_check_key(key, value == NULL ? "" : value);

    if (status != PB_OK)
        return status;
    if (value == NULL)
        value = "";
    if (pmi->pmix != NULL)
        return pb_boot_pmix_put(pmi->pmix, key, value);
    if (pmi->version == 0)
        return pmi_local_put(pmi, key, value);
    if (pmi->version == 2) {
        pb_boot_pmi_msg_init(&query, "kvs-put");
        pb_boot_pmi_msg_add(&query, "key", key);
        pb_boot_pmi_msg_add(&query, "value", value);
        return pb_boot_pmi_wire_call(&pmi->wire, &query, 2, "kvs-put-response", 1, &reply);
    }
    pb_boot_pmi_msg_init(&query, "put");
    pb_boot_pmi_msg_add(&query, "kvsname", pmi->kvsname);
    pb_boot_pmi_msg_add(&query, "key", key);
    pb_boot_pmi_msg_add(&query, "value", value);
    return pb_boot_pmi_wire_call(&pmi->wire, &query, 1, "put_result", 1, &reply);
}

pb_status_t pb_boot_pmi_get(pb_boot_pmi_t *pmi, const char *key, char *value, size_t len,
                            int *found_p)
{
    pb_boot_pmi_msg_t query, reply;
    const char *text = NULL, *found;
    pb_status_t status = pmi_check_key(key, NULL);

    if (status != PB_OK)
        return status;
    if (pmi->pmix != NULL)
        return pb_boot_pmix_get(pmi->pmix, key, value, len, found_p);
    if (pmi->version == 0) {
        pmi_kv_t *kv = pmi_local_find(pmi, key);

        text = kv ? kv->value : NULL;
    } else if (pmi->version == 2) {
        pb_boot_pmi_msg_init(&query, "kvs-get");
        pb_boot_pmi_msg_add(&query, "jobid", pmi->kvsname);
        pb_boot_pmi_msg_add(&query, "key", key);
        status = pb_boot_pmi_wire_call(&pmi->wire, &query, 2, "kvs-get-response", 1, &reply);
        if (status != PB_OK)
            return status;
        found = pb_boot_pmi_msg_get(&reply, "found");
        if (found == NULL || strcmp(found, "TRUE") == 0) {
            text = pb_boot_pmi_msg_get(&reply, "value");
            if (text == NULL) {
                pb_error("PMI: kvs-get-response for %s carries no value", key);
                return PB_ERR_PROTOCOL;
            }
        }
    } else {
        pb_boot_pmi_msg_init(&query, "get");
        pb_boot_pmi_msg_add(&query, "kvsname", pmi->kvsname);
        pb_boot_pmi_msg_add(&query, "key", key);
        status = pb_boot_pmi_wire_call(&pmi->wire, &query, 1, "get_result", 0, &reply);
        if (status != PB_OK)
            return status;
        /* Hydra answers a missing key with rc=-1 msg=key_<k>_not_found */
        found = pb_boot_pmi_msg_get(&reply, "found");
        if (pb_boot_pmi_reply_ok(&reply) && (found == NULL || strcmp(found, "FALSE") != 0)) {
            text = pb_boot_pmi_msg_get(&reply, "value");
            if (text == NULL) {
                pb_error("PMI: get_result for %s carries no value", key);
                return PB_ERR_PROTOCOL;
            }
        }
    }
    if (text == NULL) {
        *found_p = 0;
        if (len > 0)
            value[0] = '\0';
        return PB_OK;
    }
    if (strlen(text) >= len) {
        pb_error("PMI: value of %s (%zu bytes) does not fit in %zu bytes", key, strlen(text), len);
        return PB_ERR_INVALID_PARAM;
    }
    memcpy(value, text, strlen(text) + 1);
    *found_p = 1;
    return PB_OK;
}

/* ---- name service -------------------------------------------------------------- */

/* The three name-service requests, by wire form: the PMI-1 command and its
 * answer, the PMI-2 command (answered by "<command>-response"). */
typedef struct {
    const char *v1, *v1_reply, *v2, *v2_reply;
} pmi_name_op_t;

static const pmi_name_op_t pmi_name_publish = {"publish_name", "publish_result", "name-publish",
                                               "name-publish-response"};
static const pmi_name_op_t pmi_name_unpublish = {"unpublish_name", "unpublish_result",
                                                 "name-unpublish", "name-unpublish-response"};
static const pmi_name_op_t pmi_name_lookup = {"lookup_name", "lookup_result", "name-lookup",
                                              "name-lookup-response"};

/* Are @service (and @port, if not NULL) fit for the name service? */
static int pmi_name_valid(const char *service, const char *port)
{
    return service != NULL && *service != '\0' && strlen(service) < PB_BOOT_PMI_VALUE_MAX &&
           (port == NULL || strlen(port) < PB_BOOT_PMI_VALUE_MAX);
}

/* Send @op for @service (with @port, if not NULL) and receive the answer
 * into @reply; *@refused_p = whether the process manager said no (rc not
 * 0, or PMI-2 found=FALSE).  @return PB_OK; PB_ERR_UNSUPPORTED for a
 * singleton or a process manager that answers with another command (it
 * has no name service); PB_ERR_INVALID_PARAM for a service name or port
 * too long for a message; PB_ERR_IO; PB_ERR_PROTOCOL. */
static pb_status_t pmi_name_call(pb_boot_pmi_t *pmi, const pmi_name_op_t *op, const char *service,
                                 const char *port, pb_boot_pmi_msg_t *reply, int *refused_p)
{
    pb_boot_pmi_msg_t query;
    const char *found;
    pb_status_t status;

    if (pmi->version == 0)
        return PB_ERR_UNSUPPORTED;
    if (!pmi_name_valid(service, port))
        return PB_ERR_INVALID_PARAM;
    pb_boot_pmi_msg_init(&query, pmi->version == 2 ? op->v2 : op->v1);
    pb_boot_pmi_msg_add(&query, pmi->version == 2 ? "name" : "service", service);
    if (port != NULL)
        pb_boot_pmi_msg_add(&query, "port", port);
    status = pb_boot_pmi_wire_send(&pmi->wire, &query, pmi->version);
    if (status == PB_OK)
        status = pb_boot_pmi_wire_recv(&pmi->wire, reply, pmi->version);
    if (status != PB_OK)
        return status;
    if (strcmp(pb_boot_pmi_msg_cmd(reply), pmi->version == 2 ? op->v2_reply : op->v1_reply) != 0)
        return PB_ERR_UNSUPPORTED;
    found = pb_boot_pmi_msg_get(reply, "found");
    *refused_p = !pb_boot_pmi_reply_ok(reply) || (found != NULL && strcmp(found, "FALSE") == 0);
    return PB_OK;
}

pb_status_t pb_boot_pmi_name_publish(pb_boot_pmi_t *pmi, const char *service, const char *port)
{
    pb_boot_pmi_msg_t reply;
    int refused = 0;
    pb_status_t status;

    if (pmi->pmix != NULL)
        return pmi_name_valid(service, port) ? pb_boot_pmix_name_publish(pmi->pmix, service, port)
                                             : PB_ERR_INVALID_PARAM;
    status = pmi_name_call(pmi, &pmi_name_publish, service, port, &reply, &refused);

    if (status == PB_OK && refused)
        status = PB_ERR_IN_USE;
    return status;
}

pb_status_t pb_boot_pmi_name_unpublish(pb_boot_pmi_t *pmi, const char *service)
{
    pb_boot_pmi_msg_t reply;
    int refused = 0;
    pb_status_t status;

    if (pmi->pmix != NULL)
        return pmi_name_valid(service, NULL) ? pb_boot_pmix_name_unpublish(pmi->pmix, service)
                                             : PB_ERR_INVALID_PARAM;
    status = pmi_name_call(pmi, &pmi_name_unpublish, service, NULL, &reply, &refused);

    if (status == PB_OK && refused)
        status = PB_ERR_NOT_PUBLISHED;
    return status;
}

pb_status_t pb_boot_pmi_name_lookup(pb_boot_pmi_t *pmi, const char *service, char *port, size_t len)
{
    pb_boot_pmi_msg_t reply;
    int refused = 0;
    const char *text;
    pb_status_t status;

    if (pmi->pmix != NULL)
        return pmi_name_valid(service, NULL)
                   ? pb_boot_pmix_name_lookup(pmi->pmix, service, port, len)
                   : PB_ERR_INVALID_PARAM;
    status = pmi_name_call(pmi, &pmi_name_lookup, service, NULL, &reply, &refused);

    if (status != PB_OK)
        return status;
    if (refused)
        return PB_ERR_NOT_PUBLISHED;
    text = pb_boot_pmi_msg_get(&reply, "port"); /* in both versions (Hydra's too) */
    if (text == NULL) {
        pb_error("PMI: the answer to the lookup of service %s carries no port", service);
        return PB_ERR_PROTOCOL;
    }
    if (strlen(text) >= len)
        return PB_ERR_INVALID_PARAM;
    memcpy(port, text, strlen(text) + 1);
    return PB_OK;
}

pb_status_t pb_boot_pmi_spawn(pb_boot_pmi_t *pmi, int count, const postbox_job_spawn_cmd_t *cmds,
                              int npreput, const char *const *preput_keys,
                              const char *const *preput_values, char *why, size_t why_len)
{
    /* a PMI-1 block may be longer than any other message */
    size_t cap = 65536, len;
    char *buf = malloc(cap);
    pb_boot_pmi_msg_t reply;
    const char *expect = pmi->version == 2 ? "spawn-response" : "spawn_result", *msg;
    pb_status_t status = PB_OK;

    if (pmi->version == 0) {
        free(buf);
        return PB_ERR_UNSUPPORTED;
    }
    if (buf == NULL)
        return PB_ERR_NO_MEMORY;
    for (int i = 0; i < (pmi->version == 2 ? 1 : count) && status == PB_OK; i++) {
        len = pmi->version == 2 ? pb_boot_pmi_format_spawn_v2(buf, cap, count, cmds, npreput,
                                                              preput_keys, preput_values)
                                : pb_boot_pmi_format_spawn_v1(buf, cap, count, i, &cmds[i], npreput,
                                                              preput_keys, preput_values);
        status = len == 0 ? PB_ERR_INVALID_PARAM : pb_boot_pmi_wire_send_all(&pmi->wire, buf, len);
    }
    free(buf);
    if (status == PB_OK)
        status = pb_boot_pmi_wire_recv(&pmi->wire, &reply, pmi->version);
    if (status != PB_OK)
        return status;
    if (strcmp(pb_boot_pmi_msg_cmd(&reply), expect) != 0)
        return PB_ERR_UNSUPPORTED;
    if (pb_boot_pmi_reply_ok(&reply))
        return PB_OK;
    msg = pb_boot_pmi_msg_get(&reply, pmi->version == 2 ? "errmsg" : "msg");
    snprintf(why, why_len, "%s", msg != NULL ? msg : "no reason given");
    for (char *p = why; *p != '\0'; p++) {
        if (*p == '_')
            *p = ' ';
    }
    return PB_ERR_NO_RESOURCE;
}

pb_status_t pb_boot_pmi_fence(pb_boot_pmi_t *pmi)
{
    pb_boot_pmi_msg_t query, reply;

    if (pmi->pmix != NULL)
        return pb_boot_pmix_fence(pmi->pmix);
    if (pmi->version == 0)
        return PB_OK;
    if (pmi->version == 2) {
        pb_boot_pmi_msg_init(&query, "kvs-fence");
        return pb_boot_pmi_wire_call(&pmi->wire, &query, 2, "kvs-fence-response", 1, &reply);
    }
    pb_boot_pmi_msg_init(&query, "barrier_in");
    return pb_boot_pmi_wire_call(&pmi->wire, &query, 1, "barrier_out", 1, &reply);
}

void pb_boot_pmi_abort(pb_boot_pmi_t *pmi, int exit_code, const char *message)
{
    pb_boot_pmi_msg_t query;
    char code[16];

    if (message == NULL)
        message = "";
    if (pmi != NULL && pmi->pmix != NULL)
        pb_boot_pmix_abort(pmi->pmix, exit_code, message);
    if (pmi != NULL && pmi->version != 0) {
        snprintf(code, sizeof(code), "%d", exit_code);
        if (pmi->version == 2) {
            pb_boot_pmi_msg_init(&query, "abort");
            pb_boot_pmi_msg_add(&query, "isworld", "TRUE");
            pb_boot_pmi_msg_add(&query, "msg", message);
            pb_boot_pmi_wire_send(&pmi->wire, &query, 2);
        } else {
            pb_boot_pmi_msg_init(&query, "abort");
            pb_boot_pmi_msg_add(&query, "exitcode", code);
            pb_boot_pmi_wire_send(&pmi->wire, &query, 1);
        }
        /* no reply comes: the process manager kills the job */
    }
    _exit(exit_code);
}

pb_status_t pb_boot_pmi_finalize(pb_boot_pmi_t *pmi)
{
    pb_boot_pmi_msg_t query, reply;
    pb_status_t status = PB_OK;

    if (pmi == NULL)
        return PB_OK;
    if (pmi->pmix != NULL) {
        status = pb_boot_pmix_finalize(pmi->pmix);
    } else if (pmi->version == 2) {
        pb_boot_pmi_msg_init(&query, "finalize");
        status = pb_boot_pmi_wire_call(&pmi->wire, &query, 2, "finalize-response", 1, &reply);
    } else if (pmi->version == 1) {
        pb_boot_pmi_msg_init(&query, "finalize");
        status = pb_boot_pmi_wire_call(&pmi->wire, &query, 1, "finalize_ack", 1, &reply);
    }
    if (pmi->wire.fd >= 0)
        close(pmi->wire.fd);
    explicit_bzero(pmi->token, sizeof(pmi->token));
    while (pmi->local_kvs != NULL) {
        pmi_kv_t *kv = pmi->local_kvs;

        pmi->local_kvs = kv->next;
        free(kv->key);
        free(kv->value);
        free(kv);
    }
    free(pmi);
    return status;
}
