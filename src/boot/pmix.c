/*
 * The PMIx flavour of the PMI client (boot/pmix.h).
 *
 * Why dlopen rather than linking libpmix: libpostbox.so.0 and
 * libmpi_abi.so.1 must load on hosts without PMIx (the PMI-1/PMI-2 and
 * singleton paths need nothing), and libpmix brings libevent, hwloc and
 * munge with it and starts a progress thread; only a process that joins a
 * PMIx server pays for them.  The build still needs pmix.h (libpmix-dev):
 * it fixes the layout of pmix_proc_t, pmix_value_t and pmix_info_t, which
 * the PMIx standard keeps stable across versions (a 4.2 client talks to
 * the 5.x server of Open MPI's prterun), and the types of the functions
 * looked up (declared from the header with __typeof__, so a mismatch is a
 * compile error).  Only functions of PMIx 2.0 and later are used.
 */
#include "boot/pmix.h"

#include "postbox/build.h"

#if PB_HAVE_PMIX

#include <dlfcn.h>
#include <pmix.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/siphash.h"

/* the key list a rank puts at each fence (see boot/pmix.h) */
#define PMIX_KEYS_KEY_FMT "pb.keys.%u"
/* first number of buckets of the key index (a power of two) */
#define PMIX_INDEX_BUCKETS 256

/* the functions of libpmix used, typed from the header */
typedef struct {
    void *handle;
    __typeof__(PMIx_Init) *init;
    __typeof__(PMIx_Finalize) *finalize;
    __typeof__(PMIx_Abort) *abort;
    __typeof__(PMIx_Put) *put;
    __typeof__(PMIx_Commit) *commit;
    __typeof__(PMIx_Fence) *fence;
    __typeof__(PMIx_Get) *get;
    __typeof__(PMIx_Error_string) *error_string;
    __typeof__(PMIx_Publish) *publish;
    __typeof__(PMIx_Lookup) *lookup;
    __typeof__(PMIx_Unpublish) *unpublish;
} px_lib_t;

static px_lib_t px_lib;

/* one key of the index: which rank put it last */
typedef struct px_entry {
    struct px_entry *next;
    uint32_t rank;
    char key[];
} px_entry_t;

struct pb_boot_pmix {
    pmix_proc_t me;
    uint32_t size;
    unsigned fences; /* fences done: the number in the next key list's name */
    px_entry_t **buckets;
    size_t nbuckets, nentries;
    char *pending; /* the keys put since the last fence, each followed by ' ' */
    size_t pending_len, pending_cap;
};

/* ---- the library ---------------------------------------------------------- */

static const char *px_error(pmix_status_t rc)
{
    const char *text = px_lib.error_string != NULL ? px_lib.error_string(rc) : NULL;

    return text != NULL ? text : "unknown PMIx status";
}

/* Load libpmix once (never unloaded: it runs a thread of its own). */
static pb_status_t px_lib_load(void)
{
    static const struct {
        const char *name;
        size_t offset;
    } symbols[] = {
        {"PMIx_Init", offsetof(px_lib_t, init)},
        {"PMIx_Finalize", offsetof(px_lib_t, finalize)},
        {"PMIx_Abort", offsetof(px_lib_t, abort)},
        {"PMIx_Put", offsetof(px_lib_t, put)},
        {"PMIx_Commit", offsetof(px_lib_t, commit)},
        {"PMIx_Fence", offsetof(px_lib_t, fence)},
        {"PMIx_Get", offsetof(px_lib_t, get)},
        {"PMIx_Error_string", offsetof(px_lib_t, error_string)},
        {"PMIx_Publish", offsetof(px_lib_t, publish)},
        {"PMIx_Lookup", offsetof(px_lib_t, lookup)},
        {"PMIx_Unpublish", offsetof(px_lib_t, unpublish)},
    };
    void *handle;

    if (px_lib.handle != NULL)
        return PB_OK;
    handle = dlopen(PB_BOOT_PMIX_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        pb_error("PMIx: the launcher speaks PMIx, but the PMIx client library cannot be loaded: "
                 "%s (Debian: apt-get install libpmix2)",
                 dlerror());
        return PB_ERR_UNSUPPORTED;
    }
    for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
        void *fn = dlsym(handle, symbols[i].name);

        if (fn == NULL) {
            pb_error("PMIx: %s has no %s: %s", PB_BOOT_PMIX_LIBRARY, symbols[i].name, dlerror());
            dlclose(handle);
            memset(&px_lib, 0, sizeof(px_lib));
            return PB_ERR_UNSUPPORTED;
        }
        memcpy((char *)&px_lib + symbols[i].offset, &fn, sizeof(fn));
    }
    px_lib.handle = handle;
    return PB_OK;
}

/* ---- values ----------------------------------------------------------------- */

static void px_value_release(pmix_value_t *value)
{
    if (value == NULL)
        return;
    if (value->type == PMIX_STRING)
        free(value->data.string);
    free(value);
}

/* An integer of any of PMIx's integer types into *@out_p.  @return 0, or -1
 * when @value holds no integer. */
static int px_value_integer(const pmix_value_t *value, long long *out_p)
{
    switch (value->type) {
    case PMIX_UINT8: *out_p = value->data.uint8; return 0;
    case PMIX_UINT16: *out_p = value->data.uint16; return 0;
    case PMIX_UINT32: *out_p = value->data.uint32; return 0;
    case PMIX_UINT64: *out_p = (long long)value->data.uint64; return 0;
    case PMIX_UINT: *out_p = value->data.uint; return 0;
    case PMIX_SIZE: *out_p = (long long)value->data.size; return 0;
    case PMIX_INT: *out_p = value->data.integer; return 0;
    case PMIX_INT8: *out_p = value->data.int8; return 0;
    case PMIX_INT16: *out_p = value->data.int16; return 0;
    case PMIX_INT32: *out_p = value->data.int32; return 0;
    case PMIX_INT64: *out_p = value->data.int64; return 0;
    case PMIX_PROC_RANK: *out_p = value->data.rank; return 0;
    default: return -1;
    }
}

static void px_info_bool(pmix_info_t *info, const char *key)
{
    memset(info, 0, sizeof(*info));
    snprintf(info->key, sizeof(info->key), "%s", key);
    info->value.type = PMIX_BOOL;
    info->value.data.flag = true;
}

/* PMIx_Get of @key of @rank (PMIX_RANK_WILDCARD: the job's) into
 * *@value_p.  With @local, from this process's store first
 * (PMIX_OPTIONAL), then from the server: whether a fence leaves the
 * collected values in the client's store depends on the server and its
 * version (the 5.x server of prterun keeps them for a 4.2 client).
 * @return the PMIx status (nothing logged). */
static pmix_status_t px_get(pb_boot_pmix_t *pmix, uint32_t rank, const char *key, int local,
                            pmix_value_t **value_p)
{
    pmix_proc_t proc;
    pmix_info_t optional;
    pmix_status_t rc;

    memset(&proc, 0, sizeof(proc));
    memcpy(proc.nspace, pmix->me.nspace, sizeof(proc.nspace));
    proc.rank = rank;
    px_info_bool(&optional, PMIX_OPTIONAL);
    *value_p = NULL;
    if (local) {
        rc = px_lib.get(&proc, key, &optional, 1, value_p);
        if (rc != PMIX_ERR_NOT_FOUND)
            return rc;
        px_value_release(*value_p);
        *value_p = NULL;
    }
    return px_lib.get(&proc, key, NULL, 0, value_p);
}

/* An integer of the job (@rank wildcard) or of a process, into *@out_p,
 * between @min and @max.  @return PB_OK; PB_ERR_PROTOCOL (logged). */
static pb_status_t px_get_integer(pb_boot_pmix_t *pmix, uint32_t rank, const char *key,
                                  long long min, long long max, long long *out_p)
{
    pmix_value_t *value;
    pmix_status_t rc = px_get(pmix, rank, key, 0, &value);
    int bad;

    if (rc != PMIX_SUCCESS) {
        pb_error("PMIx: PMIx_Get(%s) failed: %s", key, px_error(rc));
        return PB_ERR_PROTOCOL;
    }
    bad = value == NULL || px_value_integer(value, out_p) != 0 || *out_p < min || *out_p > max;
    if (bad)
        pb_error("PMIx: the launcher's %s is not an integer from %lld to %lld (type %d)", key, min,
                 max, value != NULL ? (int)value->type : -1);
    px_value_release(value);
    return bad ? PB_ERR_PROTOCOL : PB_OK;
}

/* ---- the key index ------------------------------------------------------------ */

static size_t px_hash(const char *key)
{
    size_t hash = 14695981039346656037ULL;

    for (const char *p = key; *p != '\0'; p++)
        hash = (hash ^ (unsigned char)*p) * 1099511628211ULL;
    return hash;
}

static px_entry_t *px_index_find(pb_boot_pmix_t *pmix, const char *key)
{
    for (px_entry_t *e = pmix->buckets[px_hash(key) & (pmix->nbuckets - 1)]; e != NULL;
         e = e->next) {
        if (strcmp(e->key, key) == 0)
            return e;
    }
    return NULL;
}

/* Double the buckets when there are more entries than buckets. */
static pb_status_t px_index_grow(pb_boot_pmix_t *pmix)
{
    size_t nbuckets = pmix->nbuckets * 2;
    px_entry_t **buckets;

    if (pmix->nentries < pmix->nbuckets)
        return PB_OK;
    buckets = calloc(nbuckets, sizeof(*buckets));
    if (buckets == NULL)
        return PB_ERR_NO_MEMORY;
    for (size_t b = 0; b < pmix->nbuckets; b++) {
        while (pmix->buckets[b] != NULL) {
            px_entry_t *e = pmix->buckets[b];
            size_t to = px_hash(e->key) & (nbuckets - 1);

            pmix->buckets[b] = e->next;
            e->next = buckets[to];
            buckets[to] = e;
        }
    }
    free(pmix->buckets);
    pmix->buckets = buckets;
    pmix->nbuckets = nbuckets;
    return PB_OK;
}

/* Record that @rank put the @len bytes @key. */
static pb_status_t px_index_set(pb_boot_pmix_t *pmix, const char *key, size_t len, uint32_t rank)
{
    char name[PMIX_MAX_KEYLEN + 1];
    px_entry_t *e;
    size_t b;

    if (len == 0 || len > PMIX_MAX_KEYLEN)
        return PB_ERR_PROTOCOL;
    memcpy(name, key, len);
    name[len] = '\0';
    e = px_index_find(pmix, name);
    if (e != NULL) {
        e->rank = rank;
        return PB_OK;
    }
    if (px_index_grow(pmix) != PB_OK)
        goto err_no_memory;
    e = malloc(sizeof(*e) + len + 1);
    if (e == NULL)
        goto err_no_memory;
    memcpy(e->key, name, len + 1);
    e->rank = rank;
    b = px_hash(name) & (pmix->nbuckets - 1);
    e->next = pmix->buckets[b];
    pmix->buckets[b] = e;
    pmix->nentries++;
    return PB_OK;

err_no_memory:
    pb_error("PMIx: out of memory for the key index");
    return PB_ERR_NO_MEMORY;
}

/* Index every key of @list (each followed by ' '), put by @rank. */
static pb_status_t px_index_list(pb_boot_pmix_t *pmix, const char *list, uint32_t rank)
{
    const char *p = list;

    while (*p != '\0') {
        const char *end = strchr(p, ' ');
        pb_status_t status;

        if (end == NULL)
            end = p + strlen(p);
        status = px_index_set(pmix, p, (size_t)(end - p), rank);
        if (status == PB_ERR_PROTOCOL)
            pb_error("PMIx: rank %u's key list holds a bad key", (unsigned)rank);
        if (status != PB_OK)
            return status;
        p = *end == ' ' ? end + 1 : end;
    }
    return PB_OK;
}

/* Append @key and ' ' to the keys put since the last fence. */
static pb_status_t px_pending_add(pb_boot_pmix_t *pmix, const char *key)
{
    size_t len = strlen(key);

    if (pmix->pending_len + len + 2 > pmix->pending_cap) {
        size_t cap = 2 * (pmix->pending_len + len + 2);
        char *grown = realloc(pmix->pending, cap);

        if (grown == NULL) {
            pb_error("PMIx: out of memory for the key list");
            return PB_ERR_NO_MEMORY;
        }
        pmix->pending = grown;
        pmix->pending_cap = cap;
    }
    memcpy(pmix->pending + pmix->pending_len, key, len);
    pmix->pending_len += len;
    pmix->pending[pmix->pending_len++] = ' ';
    pmix->pending[pmix->pending_len] = '\0';
    return PB_OK;
}

static void px_free(pb_boot_pmix_t *pmix)
{
    for (size_t b = 0; pmix->buckets != NULL && b < pmix->nbuckets; b++) {
        while (pmix->buckets[b] != NULL) {
            px_entry_t *e = pmix->buckets[b];

            pmix->buckets[b] = e->next;
            free(e);
        }
    }
    free(pmix->buckets);
    free(pmix->pending);
    free(pmix);
}

/* ---- operations ------------------------------------------------------------------ */

pb_status_t pb_boot_pmix_init(pb_boot_pmix_t **pmix_p, pb_boot_pmix_job_t *job)
{
    pb_boot_pmix_t *pmix;
    pb_status_t status = px_lib_load();
    pmix_status_t rc;
    long long size, appnum = 0;

    if (status != PB_OK)
        return status;
    pmix = calloc(1, sizeof(*pmix));
    if (pmix != NULL) {
        pmix->nbuckets = PMIX_INDEX_BUCKETS;
        pmix->buckets = calloc(pmix->nbuckets, sizeof(*pmix->buckets));
        pmix->pending_cap = 256;
        pmix->pending = calloc(1, pmix->pending_cap);
    }
    if (pmix == NULL || pmix->buckets == NULL || pmix->pending == NULL) {
        pb_error("PMIx: out of memory");
        status = PB_ERR_NO_MEMORY;
        goto err_free;
    }
    rc = px_lib.init(&pmix->me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        pb_error("PMIx: PMIx_Init failed: %s (is the launcher's PMIx server reachable? "
                 "PMIX_NAMESPACE=%s)",
                 px_error(rc), getenv("PMIX_NAMESPACE") ? getenv("PMIX_NAMESPACE") : "(unset)");
        status = PB_ERR_PROTOCOL;
        goto err_free;
    }
    status = px_get_integer(pmix, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, 1, 1 << 30, &size);
    if (status != PB_OK)
        goto err_finalize;
    if (pmix->me.rank >= (uint32_t)size) {
        pb_error("PMIx: the launcher gave rank %u of a job of %lld", (unsigned)pmix->me.rank, size);
        status = PB_ERR_PROTOCOL;
        goto err_finalize;
    }
    /* the appnum is optional: a launcher without MPMD may not say */
    {
        pmix_value_t *value;

        if (px_get(pmix, pmix->me.rank, PMIX_APPNUM, 0, &value) == PMIX_SUCCESS && value != NULL &&
            (px_value_integer(value, &appnum) != 0 || appnum > 1 << 30))
            appnum = 0;
        px_value_release(value);
    }
    pmix->size = (uint32_t)size;
    job->rank = (int)pmix->me.rank;
    job->size = (int)size;
    job->appnum = (int)appnum;
    snprintf(job->nspace, sizeof(job->nspace), "%s", pmix->me.nspace);
    *pmix_p = pmix;
    return PB_OK;

err_finalize:
    px_lib.finalize(NULL, 0);
err_free:
    if (pmix != NULL)
        px_free(pmix);
    return status;
}

pb_status_t pb_boot_pmix_put(pb_boot_pmix_t *pmix, const char *key, const char *value)
{
    pmix_value_t v;
    pmix_status_t rc;
    pb_status_t status;

    memset(&v, 0, sizeof(v));
    v.type = PMIX_STRING;
    v.data.string = (char *)value;
    rc = px_lib.put(PMIX_GLOBAL, key, &v);
    if (rc != PMIX_SUCCESS) {
        pb_error("PMIx: PMIx_Put(%s) failed: %s", key, px_error(rc));
        return PB_ERR_PROTOCOL;
    }
    status = px_pending_add(pmix, key);
    if (status == PB_OK)
        status = px_index_set(pmix, key, strlen(key), pmix->me.rank);
    return status;
}

pb_status_t pb_boot_pmix_get(pb_boot_pmix_t *pmix, const char *key, char *value, size_t len,
                             int *found_p)
{
    px_entry_t *e = px_index_find(pmix, key);
    pmix_value_t *v;
    pmix_status_t rc;
    size_t vlen;

    *found_p = 0;
    if (len > 0)
        value[0] = '\0';
    if (e == NULL)
        return PB_OK;
    rc = px_get(pmix, e->rank, key, 1, &v);
    if (rc == PMIX_ERR_NOT_FOUND) {
        px_value_release(v);
        return PB_OK;
    }
    if (rc != PMIX_SUCCESS || v == NULL || v->type != PMIX_STRING || v->data.string == NULL) {
        pb_error("PMIx: PMIx_Get(%s) of rank %u failed: %s", key, (unsigned)e->rank,
                 rc != PMIX_SUCCESS ? px_error(rc) : "the value is not a string");
        px_value_release(v);
        return PB_ERR_PROTOCOL;
    }
    vlen = strlen(v->data.string);
    if (vlen >= len) {
        pb_error("PMI: value of %s (%zu bytes) does not fit in %zu bytes", key, vlen, len);
        px_value_release(v);
        return PB_ERR_INVALID_PARAM;
    }
    memcpy(value, v->data.string, vlen + 1);
    *found_p = 1;
    px_value_release(v);
    return PB_OK;
}

pb_status_t pb_boot_pmix_fence(pb_boot_pmix_t *pmix)
{
    char key[32];
    pmix_info_t collect;
    pmix_status_t rc;
    pb_status_t status;
    pmix_value_t v;

    snprintf(key, sizeof(key), PMIX_KEYS_KEY_FMT, pmix->fences);
    memset(&v, 0, sizeof(v));
    v.type = PMIX_STRING;
    v.data.string = pmix->pending;
    rc = px_lib.put(PMIX_GLOBAL, key, &v);
    if (rc == PMIX_SUCCESS)
        rc = px_lib.commit();
    if (rc != PMIX_SUCCESS) {
        pb_error("PMIx: cannot put and commit this rank's keys: %s", px_error(rc));
        return PB_ERR_PROTOCOL;
    }
    px_info_bool(&collect, PMIX_COLLECT_DATA);
    rc = px_lib.fence(NULL, 0, &collect, 1);
    if (rc != PMIX_SUCCESS) {
        pb_error("PMIx: PMIx_Fence failed: %s", px_error(rc));
        return PB_ERR_PROTOCOL;
    }
    /* every rank's list, in rank order: a key put by several ranks in one
     * fence is the highest rank's in every process */
    for (uint32_t r = 0; r < pmix->size; r++) {
        pmix_value_t *list = NULL;

        if (r == pmix->me.rank) {
            status = px_index_list(pmix, pmix->pending, r);
        } else {
            rc = px_get(pmix, r, key, 1, &list);
            if (rc != PMIX_SUCCESS || list == NULL || list->type != PMIX_STRING) {
                pb_error("PMIx: after the fence, rank %u's key list %s is missing: %s", (unsigned)r,
                         key, rc != PMIX_SUCCESS ? px_error(rc) : "the value is not a string");
                px_value_release(list);
                return PB_ERR_PROTOCOL;
            }
            status = px_index_list(pmix, list->data.string != NULL ? list->data.string : "", r);
            px_value_release(list);
        }
        if (status != PB_OK)
            return status;
    }
    pmix->fences++;
    pmix->pending_len = 0;
    pmix->pending[0] = '\0';
    return PB_OK;
}

int pb_boot_pmix_local_peers(pb_boot_pmix_t *pmix, int *ranks, int max)
{
    pmix_value_t *v;
    int count = 0;

    if (px_get(pmix, PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, 0, &v) != PMIX_SUCCESS || v == NULL ||
        v->type != PMIX_STRING || v->data.string == NULL) {
        px_value_release(v);
        return -1;
    }
    for (const char *p = v->data.string; *p != '\0';) {
        char *end;
        long rank = strtol(p, &end, 10);

        if (end == p || rank < 0 || rank >= (long)pmix->size || (*end != ',' && *end != '\0')) {
            count = -1;
            break;
        }
        if (count < max)
            ranks[count] = (int)rank;
        count++;
        p = *end == ',' ? end + 1 : end;
    }
    px_value_release(v);
    return count;
}

/* A name-service call's @rc as a status; @what names the call (logged
 * when it is PB_ERR_PROTOCOL). */
static pb_status_t px_name_status(pmix_status_t rc, const char *what, const char *service)
{
    switch (rc) {
    case PMIX_SUCCESS: return PB_OK;
    case PMIX_ERR_DUPLICATE_KEY:
    case PMIX_EXISTS: return PB_ERR_IN_USE;
    case PMIX_ERR_NOT_FOUND: return PB_ERR_NOT_PUBLISHED;
    case PMIX_ERR_NOT_SUPPORTED: return PB_ERR_UNSUPPORTED;
    default:
        pb_error("PMIx: %s of service '%.64s' failed: %s", what, service, px_error(rc));
        return PB_ERR_PROTOCOL;
    }
}

/* The PMIx key of @service into @key: the name itself when it fits a key
 * (PMIX_MAX_KEYLEN bytes), else "pb.name." and 16 hex digits of its
 * SipHash (a longer name is allowed up to PB_BOOT_PMI_VALUE_MAX - 1
 * bytes, as under PMI). */
static void px_name_key(const char *service, pmix_key_t key)
{
    static const uint8_t zero[16];
    size_t len = strlen(service);

    if (len <= PMIX_MAX_KEYLEN)
        memcpy(key, service, len + 1);
    else
        snprintf(key, PMIX_MAX_KEYLEN + 1, "pb.name.%016llx",
                 (unsigned long long)pb_siphash24(zero, service, len));
}

pb_status_t pb_boot_pmix_name_publish(pb_boot_pmix_t *pmix, const char *service, const char *port)
{
    char found[2];
    pmix_info_t info;
    pb_status_t status;

    /* a name published already is refused, as by the PMI launchers (a
     * PMIx server may let its publisher publish it again) */
    status = pb_boot_pmix_name_lookup(pmix, service, found, sizeof(found));
    if (status == PB_OK || status == PB_ERR_INVALID_PARAM)
        return PB_ERR_IN_USE;
    if (status != PB_ERR_NOT_PUBLISHED)
        return status;
    memset(&info, 0, sizeof(info));
    px_name_key(service, info.key);
    info.value.type = PMIX_STRING;
    info.value.data.string = (char *)port;
    return px_name_status(px_lib.publish(&info, 1), "PMIx_Publish", service);
}

pb_status_t pb_boot_pmix_name_lookup(pb_boot_pmix_t *pmix, const char *service, char *port,
                                     size_t len)
{
    pmix_pdata_t data;
    pb_status_t status;
    size_t got;

    memset(&data, 0, sizeof(data));
    px_name_key(service, data.key);
    status = px_name_status(px_lib.lookup(&data, 1, NULL, 0), "PMIx_Lookup", service);
    if (status == PB_OK && (data.value.type != PMIX_STRING || data.value.data.string == NULL)) {
        pb_error("PMIx: the port published as '%.64s' is not a string", service);
        status = PB_ERR_PROTOCOL;
    }
    if (status == PB_OK) {
        got = strlen(data.value.data.string);
        if (got < len)
            memcpy(port, data.value.data.string, got + 1);
        else
            status = PB_ERR_INVALID_PARAM;
    }
    if (data.value.type == PMIX_STRING)
        free(data.value.data.string);
    return status;
}

pb_status_t pb_boot_pmix_name_unpublish(pb_boot_pmix_t *pmix, const char *service)
{
    pmix_key_t key;
    char *keys[2] = {key, NULL};

    px_name_key(service, key);
    return px_name_status(px_lib.unpublish(keys, NULL, 0), "PMIx_Unpublish", service);
}

void pb_boot_pmix_abort(pb_boot_pmix_t *pmix, int exit_code, const char *message)
{
    /* NULL procs: every process of this namespace */
    px_lib.abort(exit_code, message != NULL ? message : "", NULL, 0);
}

pb_status_t pb_boot_pmix_finalize(pb_boot_pmix_t *pmix)
{
    pmix_status_t rc;

    if (pmix == NULL)
        return PB_OK;
    rc = px_lib.finalize(NULL, 0);
    px_free(pmix);
    if (rc != PMIX_SUCCESS) {
        pb_error("PMIx: PMIx_Finalize failed: %s", px_error(rc));
        return PB_ERR_PROTOCOL;
    }
    return PB_OK;
}

#else /* !PB_HAVE_PMIX */

#include "util/log.h"

pb_status_t pb_boot_pmix_init(pb_boot_pmix_t **pmix_p, pb_boot_pmix_job_t *job)
{
    pb_error("PMIx: the launcher speaks PMIx, but this Postbox was built without PMIx (no "
             "pmix.h at build time, or -DPOSTBOX_PMIX=OFF: install libpmix-dev and build "
             "again), or use a PMI-1/PMI-2 launcher (postbox run, mpiexec.hydra, srun "
             "--mpi=pmi2)");
    return PB_ERR_UNSUPPORTED;
}

pb_status_t pb_boot_pmix_put(pb_boot_pmix_t *pmix, const char *key, const char *value)
{
    return PB_ERR_UNSUPPORTED;
}

pb_status_t pb_boot_pmix_get(pb_boot_pmix_t *pmix, const char *key, char *value, size_t len,
                             int *found_p)
{
    return PB_ERR_UNSUPPORTED;
}

pb_status_t pb_boot_pmix_fence(pb_boot_pmix_t *pmix)
{
    return PB_ERR_UNSUPPORTED;
}

int pb_boot_pmix_local_peers(pb_boot_pmix_t *pmix, int *ranks, int max)
{
    return -1;
}

pb_status_t pb_boot_pmix_name_publish(pb_boot_pmix_t *pmix, const char *service, const char *port)
{
    return PB_ERR_UNSUPPORTED;
}

pb_status_t pb_boot_pmix_name_lookup(pb_boot_pmix_t *pmix, const char *service, char *port,
                                     size_t len)
{
    return PB_ERR_UNSUPPORTED;
}

pb_status_t pb_boot_pmix_name_unpublish(pb_boot_pmix_t *pmix, const char *service)
{
    return PB_ERR_UNSUPPORTED;
}

void pb_boot_pmix_abort(pb_boot_pmix_t *pmix, int exit_code, const char *message)
{
}

pb_status_t pb_boot_pmix_finalize(pb_boot_pmix_t *pmix)
{
    return PB_OK;
}

#endif
