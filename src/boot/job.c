/*
 * The public job API (include/postbox/job.h) on top of the PMI client: the
 * node exchange, and the job identity under a foreign launcher.
 *
 * Node exchange: every rank puts pb-node-<rank> = "<hostname>/<vnode>",
 * fences, and reads every rank's value; the nodes are the distinct values,
 * numbered in order of their lowest rank.  Under Hydra or Slurm (no
 * POSTBOX_JOB_ID) the job id is "pmi-" + the sanitized kvsname (under a
 * PMIx launcher "pmix-" + the sanitized namespace), and rank 0
 * puts a fresh secret as pb-job-secret before the same fence (always: a
 * POSTBOX_JOB_SECRET inherited from the user's environment is not used).  Before it
 * too, every rank runs the contributions the layers above registered
 * (boot/boot.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot/boot.h"
#include "boot/identity.h"
#include "boot/pmi.h"
#include "postbox/job.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/log.h"
#include "util/random.h"

#define JOB_NODE_KEY_FMT "pb-node-%d"
#define JOB_SECRET_KEY "pb-job-secret"
#define JOB_NODE_NAME_MAX 300

typedef enum {
    JOB_STATE_NONE,
    JOB_STATE_READY,
    JOB_STATE_FINALIZED
} job_state_t;

static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
/* what the layers above put in the node exchange (boot/boot.h) */
static pb_boot_kvs_contributor_func_t job_contributors[PB_BOOT_KVS_CONTRIBUTORS_MAX];
static int job_contributor_count;
static struct {
    job_state_t state;
    pb_boot_pmi_t *pmi;
    int rank;
    int size;
    int world_first; /* this process's world: ranks world_first .. + world_size - 1 */
    int world_size;
    int universe; /* the job is a universe of slots (postbox run --universe) */
    int node_count;
    uint32_t *rank_node; /* size entries */
    char **node_names;   /* node_count entries */
} boot;

/* ---- init -------------------------------------------------------------------- */

/* "<hostname>/<vnode>" of this process */
static pb_status_t pb_boot_job_node_name(char *name, size_t len)
{
    char host[256];
    long vnode = pb_config_get_long("POSTBOX_VNODE");

    if (gethostname(host, sizeof(host)) < 0) {
        pb_error("gethostname failed: %m");
        return PB_ERR_IO;
    }
    host[sizeof(host) - 1] = '\0';
    if (vnode < 0 || vnode > (1L << 30)) {
        pb_warn("ignoring POSTBOX_VNODE %ld: out of range", vnode);
        vnode = 0;
    }
    snprintf(name, len, "%s/%ld", host, vnode);
    return PB_OK;
}

/* @prefix + @kvsname with every byte outside [A-Za-z0-9_.-] made '_' */
static void pb_boot_job_id_from_kvsname(const char *prefix, const char *kvsname, char *id,
                                        size_t len)
{
    size_t pos = (size_t)snprintf(id, len, "%s", prefix);

    for (const char *p = kvsname; *p != '\0' && pos + 1 < len; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';

        id[pos++] = ok ? c : '_';
    }
    id[pos] = '\0';
}

/* Rank 0 makes the secret and puts it; call before the fence. */
static pb_status_t pb_boot_job_secret_put(pb_boot_pmi_t *pmi)
{
    uint8_t secret[PB_BOOT_SECRET_LEN];
    char hex[2 * PB_BOOT_SECRET_LEN + 1];
    pb_status_t status;

    if (pb_random_bytes(secret, sizeof(secret)) < 0) {
        pb_error("cannot make a job secret: getrandom failed: %m");
        return PB_ERR_IO;
    }
    for (int i = 0; i < PB_BOOT_SECRET_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", secret[i]);
    status = pb_boot_pmi_put(pmi, JOB_SECRET_KEY, hex);
    explicit_bzero(secret, sizeof(secret));
    explicit_bzero(hex, sizeof(hex));
    return status;
}

/* Everyone reads the secret after the fence and adopts it with @id. */
static pb_status_t pb_boot_job_identity_set(pb_boot_pmi_t *pmi, const char *id, int need_secret)
{
    char hex[PB_BOOT_PMI_VALUE_MAX];
    pb_status_t status;
    int found;

    if (!need_secret)
        return pb_boot_identity_set(id, NULL);
    status = pb_boot_pmi_get(pmi, JOB_SECRET_KEY, hex, sizeof(hex), &found);
    if (status != PB_OK)
        return status;
    if (!found) {
        pb_error("rank 0 put no %s in the key-value space", JOB_SECRET_KEY);
        return PB_ERR_PROTOCOL;
    }
    status = pb_boot_identity_set(id, hex);
    explicit_bzero(hex, sizeof(hex));
    return status;
}

/* *@node = the number of the node named @name in the node table, added
 * when new.  @return PB_OK or PB_ERR_NO_MEMORY. */
static pb_status_t node_number(const char *name, int *node)
{
    for (*node = 0; *node < boot.node_count; (*node)++) {
        if (strcmp(boot.node_names[*node], name) == 0)
            return PB_OK;
    }
    boot.node_names[*node] = strdup(name);
    if (boot.node_names[*node] == NULL) {
        pb_error("out of memory for the node table");
        return PB_ERR_NO_MEMORY;
    }
    boot.node_count++;
    return PB_OK;
}

/* Fetch every rank's node name and number the nodes. */
static pb_status_t pb_boot_job_nodes_build(pb_boot_pmi_t *pmi, int size)
{
    char key[PB_BOOT_PMI_KEY_MAX], value[PB_BOOT_PMI_VALUE_MAX];
    pb_status_t status;
    int found;

    boot.rank_node = calloc((size_t)size, sizeof(*boot.rank_node));
    boot.node_names = calloc((size_t)size, sizeof(*boot.node_names));
    if (boot.rank_node == NULL || boot.node_names == NULL) {
        pb_error("out of memory for the node table of %d ranks", size);
        return PB_ERR_NO_MEMORY;
    }
    boot.node_count = 0;
    for (int r = 0; r < size; r++) {
        int node;

        snprintf(key, sizeof(key), JOB_NODE_KEY_FMT, r);
        status = pb_boot_pmi_get(pmi, key, value, sizeof(value), &found);
        if (status != PB_OK)
            return status;
        if (!found) {
            pb_error("rank %d put no %s: is every rank calling postbox_job_init?", r, key);
            return PB_ERR_PROTOCOL;
        }
        status = node_number(value, &node);
        if (status != PB_OK)
            return status;
        boot.rank_node[r] = (uint32_t)node;
    }
    return PB_OK;
}

/* Number the nodes of the universe's @size slots from the launcher's
 * POSTBOX_UNIVERSE_NODES, the virtual node of each slot ("0,0,1,1,0,1"),
 * on this host: an empty slot puts no pb-node-<r>. */
static pb_status_t pb_boot_job_universe_nodes(const char *list, int size)
{
    char host[256], name[JOB_NODE_NAME_MAX];
    const char *p = list;

    if (gethostname(host, sizeof(host)) < 0) {
        pb_error("gethostname failed: %m");
        return PB_ERR_IO;
    }
    host[sizeof(host) - 1] = '\0';
    boot.rank_node = calloc((size_t)size, sizeof(*boot.rank_node));
    boot.node_names = calloc((size_t)size, sizeof(*boot.node_names));
    if (boot.rank_node == NULL || boot.node_names == NULL) {
        pb_error("out of memory for the node table of %d slots", size);
        return PB_ERR_NO_MEMORY;
    }
    boot.node_count = 0;
    for (int r = 0; r < size; r++) {
        char *end;
        long vnode = strtol(p, &end, 10);
        int node;

        if (end == p || vnode < 0 || vnode > (1L << 30) || (*end != ',' && *end != '\0')) {
            pb_error("POSTBOX_UNIVERSE_NODES is malformed at slot %d", r);
            return PB_ERR_INVALID_PARAM;
        }
        p = *end == ',' ? end + 1 : end;
        snprintf(name, sizeof(name), "%s/%ld", host, vnode);
        pb_status_t status = node_number(name, &node);

        if (status != PB_OK)
            return status;
        boot.rank_node[r] = (uint32_t)node;
    }
    return PB_OK;
}

/* Under `postbox run --universe`: make the job the universe of slots,
 * this process rank POSTBOX_SLOT of it, and its world the ranks the PMI
 * rank and size say.  Without the universe the job is the world.
 * @return PB_OK; PB_ERR_INVALID_PARAM (logged) when the launcher's
 * variables disagree with PMI. */
static pb_status_t pb_boot_job_universe(pb_boot_pmi_t *pmi, int foreign)
{
    const char *slot_text = getenv("POSTBOX_SLOT"), *list = getenv("POSTBOX_UNIVERSE_NODES");
    long slot;
    char *end;
    int size = 1;

    boot.world_first = 0;
    boot.world_size = boot.size;
    boot.universe = 0;
    if (foreign || pb_boot_pmi_flavour(pmi) == PB_BOOT_PMI_SINGLETON || slot_text == NULL ||
        list == NULL)
        return PB_OK;
    for (const char *p = list; *p != '\0'; p++)
        size += *p == ',';
    slot = strtol(slot_text, &end, 10);
    if (*slot_text == '\0' || *end != '\0' || slot < boot.rank || slot >= size ||
        slot - boot.rank + boot.size > size) {
        pb_error("POSTBOX_SLOT=%s does not fit a universe of %d slots with rank %d of %d",
                 slot_text, size, boot.rank, boot.size);
        return PB_ERR_INVALID_PARAM;
    }
    boot.world_first = (int)slot - boot.rank;
    boot.rank = (int)slot;
    boot.size = size;
    boot.universe = 1;
    return PB_OK;
}

static void pb_boot_job_nodes_free(void)
{
    if (boot.node_names != NULL) {
        for (int i = 0; i < boot.node_count; i++)
            free(boot.node_names[i]);
    }
    free(boot.node_names);
    free(boot.rank_node);
    boot.node_names = NULL;
    boot.rank_node = NULL;
    boot.node_count = 0;
}

/* Make the computed node this process's RSM node id. */
static pb_status_t pb_boot_job_node_set(uint32_t node)
{
    const char *explicit_id = getenv("POSTBOX_NODE_ID");

    if (explicit_id != NULL && *explicit_id != '\0') {
        long given = pb_config_get_long("POSTBOX_NODE_ID");

        if (given != (long)node)
            pb_warn("POSTBOX_NODE_ID=%s disagrees with the node exchange (node %u of %d); using "
                    "%u",
                    explicit_id, (unsigned)node, boot.node_count, (unsigned)node);
    }
    return pb_boot_identity_set_node(node);
}

/* Check the node table against the launcher's own view of this node, when
 * it gives one (PMIx): a rank the host names put on this node that the
 * launcher places elsewhere (two hosts of one name) could not share
 * memory with this process.  @return PB_OK; PB_ERR_INVALID_PARAM (logged);
 * PB_ERR_NO_MEMORY. */
static pb_status_t pb_boot_job_nodes_check(pb_boot_pmi_t *pmi)
{
    int count = pb_boot_pmi_launcher_local_ranks(pmi, NULL, 0), *peers;
    uint32_t mine = boot.rank_node[boot.rank];
    pb_status_t status = PB_OK;

    if (count < 0 || boot.universe)
        return PB_OK;
    peers = calloc((size_t)count + 1, sizeof(*peers));
    if (peers == NULL) {
        pb_error("out of memory for the launcher's list of local ranks");
        return PB_ERR_NO_MEMORY;
    }
    count = pb_boot_pmi_launcher_local_ranks(pmi, peers, count);
    for (int r = 0; r < boot.size && status == PB_OK; r++) {
        int listed = 0;

        if (boot.rank_node[r] != mine)
            continue;
        for (int i = 0; i < count; i++)
            listed |= peers[i] == r;
        if (!listed) {
            pb_error("rank %d is on this process's node %s by its host name, but the launcher "
                     "places it on another node (hosts of one name?): the ranks of a node must "
                     "share its memory",
                     r, boot.node_names[mine]);
            status = PB_ERR_INVALID_PARAM;
        }
    }
    free(peers);
    return status;
}

/* The put the contributors are handed: @ctx is the PMI client. */
static pb_status_t pb_boot_job_kvs_put(void *ctx, const char *key, const char *value)
{
    return pb_boot_pmi_put(ctx, key, value);
}

static pb_status_t pb_boot_job_init(void)
{
    const pb_boot_identity_t *job =
        pb_boot_identity_peek(); /* reads the environment, not freezing */
    char key[PB_BOOT_PMI_KEY_MAX], name[JOB_NODE_NAME_MAX];
    char foreign_id[PB_BOOT_ID_MAX];
    int foreign, need_secret;
    pb_boot_pmi_t *pmi;
    pb_status_t status;

    status = pb_boot_pmi_init(&pmi);
    if (status != PB_OK)
        return status;
    boot.rank = pb_boot_pmi_rank(pmi);
    boot.size = pb_boot_pmi_size(pmi);
    /* a foreign launcher (Hydra, Slurm) did not set POSTBOX_JOB_ID; a
     * singleton keeps the solo job */
    foreign = pb_boot_pmi_flavour(pmi) != PB_BOOT_PMI_SINGLETON && getenv("POSTBOX_JOB_ID") == NULL;
    /* a foreign job always gets a fresh secret: one inherited from the
     * user's environment would be the same in every job */
    need_secret =
        pb_boot_pmi_flavour(pmi) != PB_BOOT_PMI_SINGLETON && (foreign || !job->has_secret);
    if (foreign && job->has_secret && boot.rank == 0)
        pb_warn("ignoring POSTBOX_JOB_SECRET from the environment: under a foreign launcher rank 0 "
                "makes a fresh secret for each job");
    if (foreign)
        pb_boot_job_id_from_kvsname(pb_boot_pmi_flavour(pmi) == PB_BOOT_PMI_X ? "pmix-" : "pmi-",
                                    pb_boot_pmi_kvsname(pmi), foreign_id, sizeof(foreign_id));

    status = pb_boot_job_universe(pmi, foreign);
    if (status != PB_OK)
        goto err_finalize;
    status = pb_boot_job_node_name(name, sizeof(name));
    if (status != PB_OK)
        goto err_finalize;
    snprintf(key, sizeof(key), JOB_NODE_KEY_FMT, boot.rank);
    status = boot.universe ? PB_OK : pb_boot_pmi_put(pmi, key, name);
    if (status != PB_OK)
        goto err_finalize;
    for (int i = 0; i < job_contributor_count; i++) {
        status = job_contributors[i](boot.rank, pb_boot_job_kvs_put, pmi);
        if (status != PB_OK)
            goto err_finalize;
    }
    if (need_secret && boot.rank == 0) {
        status = pb_boot_job_secret_put(pmi);
        if (status != PB_OK)
            goto err_finalize;
    }
    status = pb_boot_pmi_fence(pmi);
    if (status != PB_OK)
        goto err_finalize;
    status = boot.universe ? pb_boot_job_universe_nodes(getenv("POSTBOX_UNIVERSE_NODES"), boot.size)
                           : pb_boot_job_nodes_build(pmi, boot.size);
    if (status == PB_OK && strcmp(boot.node_names[boot.rank_node[boot.rank]], name) != 0) {
        pb_error("slot %d is on node %s by POSTBOX_UNIVERSE_NODES, but this process on %s",
                 boot.rank, boot.node_names[boot.rank_node[boot.rank]], name);
        status = PB_ERR_INVALID_PARAM;
    }
    if (status == PB_OK)
        status = pb_boot_job_nodes_check(pmi);
    if (status != PB_OK)
        goto err_free_nodes;
    if (foreign || need_secret) {
        status = pb_boot_job_identity_set(pmi, foreign ? foreign_id : NULL, need_secret);
        if (status != PB_OK)
            goto err_free_nodes;
    }
    status = pb_boot_job_node_set(boot.rank_node[boot.rank]);
    if (status != PB_OK)
        goto err_free_nodes;
    boot.pmi = pmi;
    pb_debug("job %s: rank %d of %d on node %u (%s) of %d", pb_boot_identity_peek()->id, boot.rank,
             boot.size, (unsigned)boot.rank_node[boot.rank], name, boot.node_count);
    return PB_OK;

err_free_nodes:
    pb_boot_job_nodes_free();
err_finalize:
    pb_boot_pmi_finalize(pmi);
    return status;
}

pb_status_t pb_boot_kvs_contribute(pb_boot_kvs_contributor_func_t fn)
{
    if (job_contributor_count == PB_BOOT_KVS_CONTRIBUTORS_MAX)
        return PB_ERR_NO_RESOURCE;
    job_contributors[job_contributor_count++] = fn;
    return PB_OK;
}

PB_EXPORT int postbox_job_init(void)
{
    pb_status_t status = PB_OK;

    pthread_mutex_lock(&job_lock);
    if (boot.state == JOB_STATE_NONE) {
        status = pb_boot_job_init();
        if (status == PB_OK)
            boot.state = JOB_STATE_READY;
    } else if (boot.state == JOB_STATE_FINALIZED) {
        pb_error("postbox_job_init: the job was already finalized");
        status = PB_ERR_INVALID_PARAM;
    }
    pthread_mutex_unlock(&job_lock);
    return status == PB_OK ? 0 : -1;
}

/* ---- queries ------------------------------------------------------------------ */

static int pb_boot_job_ready(const char *caller)
{
    if (boot.state == JOB_STATE_READY)
        return 1;
    pb_error("%s: call postbox_job_init first%s", caller,
             boot.state == JOB_STATE_FINALIZED ? " (the job was finalized)" : "");
    return 0;
}

PB_EXPORT int postbox_job_rank(void)
{
    return boot.state == JOB_STATE_READY ? boot.rank : -1;
}

PB_EXPORT int postbox_job_size(void)
{
    return boot.state == JOB_STATE_READY ? boot.size : -1;
}

PB_EXPORT int postbox_job_world_first(void)
{
    return boot.state == JOB_STATE_READY ? boot.world_first : -1;
}

PB_EXPORT int postbox_job_world_size(void)
{
    return boot.state == JOB_STATE_READY ? boot.world_size : -1;
}

PB_EXPORT int postbox_job_appnum(void)
{
    int appnum;

    if (boot.state != JOB_STATE_READY)
        return -1;
    /* a process manager that does not say (Slurm's PMI-2) started one command */
    appnum = pb_boot_pmi_appnum(boot.pmi);
    return appnum >= 0 ? appnum : 0;
}

PB_EXPORT int postbox_job_universe(void)
{
    return boot.state == JOB_STATE_READY && boot.universe;
}

PB_EXPORT const char *postbox_job_id(void)
{
    return boot.state == JOB_STATE_READY ? pb_boot_identity_peek()->id : NULL;
}

PB_EXPORT int postbox_job_node_count(void)
{
    return boot.state == JOB_STATE_READY ? boot.node_count : -1;
}

PB_EXPORT uint32_t postbox_job_node(int rank)
{
    if (boot.state != JOB_STATE_READY || rank < 0 || rank >= boot.size)
        return POSTBOX_JOB_NODE_NONE;
    return boot.rank_node[rank];
}

PB_EXPORT const char *postbox_job_node_name(uint32_t node)
{
    if (boot.state != JOB_STATE_READY || node >= (uint32_t)boot.node_count)
        return NULL;
    return boot.node_names[node];
}

PB_EXPORT int postbox_job_local_ranks(int *ranks, int max)
{
    uint32_t mine;
    int count = 0;

    if (!pb_boot_job_ready("postbox_job_local_ranks"))
        return -1;
    if (max < 0 || (max > 0 && ranks == NULL)) {
        pb_error("postbox_job_local_ranks: bad array (%p, %d)", (void *)ranks, max);
        return -1;
    }
    mine = boot.rank_node[boot.rank];
    for (int r = 0; r < boot.size; r++) {
        if (boot.rank_node[r] != mine)
            continue;
        if (count < max)
            ranks[count] = r;
        count++;
    }
    return count;
}

/* ---- key-value space ------------------------------------------------------------ */

PB_EXPORT int postbox_job_kvs_put(const char *key, const char *value)
{
    if (!pb_boot_job_ready("postbox_job_kvs_put"))
        return -1;
    if (value == NULL) {
        pb_error("postbox_job_kvs_put: NULL value for key %s", key ? key : "(null)");
        return -1;
    }
    return pb_boot_pmi_put(boot.pmi, key, value) == PB_OK ? 0 : -1;
}

PB_EXPORT int postbox_job_kvs_get(const char *key, char *value, size_t len)
{
    int found;

    if (!pb_boot_job_ready("postbox_job_kvs_get"))
        return -1;
    if (value == NULL || len == 0) {
        pb_error("postbox_job_kvs_get: no room for the value of %s", key ? key : "(null)");
        return -1;
    }
    if (pb_boot_pmi_get(boot.pmi, key, value, len, &found) != PB_OK)
        return -1;
    return found ? 0 : 1;
}

PB_EXPORT int postbox_job_fence(void)
{
    if (!pb_boot_job_ready("postbox_job_fence"))
        return -1;
    return pb_boot_pmi_fence(boot.pmi) == PB_OK ? 0 : -1;
}

/* ---- name service --------------------------------------------------------------- */

/* A name-service call's @status as postbox_job_name_*'s result. */
static int job_name_result(const char *caller, const char *service, pb_status_t status)
{
    switch (status) {
    case PB_OK: return 0;
    case PB_ERR_IN_USE: return POSTBOX_JOB_NAME_TAKEN;
    case PB_ERR_NOT_PUBLISHED: return POSTBOX_JOB_NAME_NOT_FOUND;
    case PB_ERR_UNSUPPORTED: return POSTBOX_JOB_NAME_NO_SERVICE;
    case PB_ERR_INVALID_PARAM:
        pb_error("%s: the service name '%.64s' or its port is empty or too long", caller,
                 service != NULL ? service : "(null)");
        return -1;
    default: return -1;
    }
}

PB_EXPORT int postbox_job_name_publish(const char *service, const char *port)
{
    if (!pb_boot_job_ready("postbox_job_name_publish"))
        return -1;
    if (port == NULL) {
        pb_error("postbox_job_name_publish: NULL port for service %s", service ? service : "");
        return -1;
    }
    return job_name_result("postbox_job_name_publish", service,
                           pb_boot_pmi_name_publish(boot.pmi, service, port));
}

PB_EXPORT int postbox_job_name_unpublish(const char *service)
{
    if (!pb_boot_job_ready("postbox_job_name_unpublish"))
        return -1;
    return job_name_result("postbox_job_name_unpublish", service,
                           pb_boot_pmi_name_unpublish(boot.pmi, service));
}

PB_EXPORT int postbox_job_name_lookup(const char *service, char *port, size_t len)
{
    if (!pb_boot_job_ready("postbox_job_name_lookup"))
        return -1;
    if (port == NULL || len == 0) {
        pb_error("postbox_job_name_lookup: no room for the port of %s", service ? service : "");
        return -1;
    }
    port[0] = '\0';
    return job_name_result("postbox_job_name_lookup", service,
                           pb_boot_pmi_name_lookup(boot.pmi, service, port, len));
}

/* ---- spawn ---------------------------------------------------------------------- */

PB_EXPORT int postbox_job_spawn(int count, const postbox_job_spawn_cmd_t *cmds, int npreput,
                                const char *const *preput_keys, const char *const *preput_values,
                                char *why, size_t why_len)
{
    pb_status_t status;

    if (!pb_boot_job_ready("postbox_job_spawn"))
        return -1;
    if (count < 1 || cmds == NULL || npreput < 0 || why == NULL || why_len == 0 ||
        (npreput > 0 && (preput_keys == NULL || preput_values == NULL))) {
        pb_error("postbox_job_spawn: bad arguments (%d commands, %d preput keys)", count, npreput);
        return -1;
    }
    why[0] = '\0';
    for (int i = 0; i < count; i++) {
        if (cmds[i].command == NULL || cmds[i].nprocs < 1 || cmds[i].ninfo < 0) {
            pb_error("postbox_job_spawn: command %d has no program or fewer than 1 process", i);
            return -1;
        }
    }
    status =
        pb_boot_pmi_spawn(boot.pmi, count, cmds, npreput, preput_keys, preput_values, why, why_len);
    switch (status) {
    case PB_OK: return 0;
    case PB_ERR_NO_RESOURCE: return POSTBOX_JOB_SPAWN_REFUSED;
    case PB_ERR_UNSUPPORTED: return POSTBOX_JOB_SPAWN_NO_SERVICE;
    case PB_ERR_INVALID_PARAM:
        snprintf(why, why_len,
                 "the request does not fit a PMI message (too many or too long "
                 "arguments, or one with a newline)");
        return POSTBOX_JOB_SPAWN_REFUSED;
    default: return -1;
    }
}

/* ---- end ------------------------------------------------------------------------ */

PB_EXPORT int postbox_job_finalize(void)
{
    pb_status_t status;

    pthread_mutex_lock(&job_lock);
    if (!pb_boot_job_ready("postbox_job_finalize")) {
        pthread_mutex_unlock(&job_lock);
        return -1;
    }
    status = pb_boot_pmi_finalize(boot.pmi);
    boot.pmi = NULL;
    pb_boot_job_nodes_free();
    boot.state = JOB_STATE_FINALIZED;
    pthread_mutex_unlock(&job_lock);
    return status == PB_OK ? 0 : -1;
}

PB_EXPORT void postbox_job_abort(int exit_code, const char *message)
{
    pb_error("rank %d aborts the job (exit code %d)%s%s", boot.rank, exit_code, message ? ": " : "",
             message ? message : "");
    pb_boot_pmi_abort(boot.state == JOB_STATE_READY ? boot.pmi : NULL, exit_code, message);
}
