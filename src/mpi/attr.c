/*
 * Communicator attributes (MPI-5.0 section 7.7): keyvals, the values cached
 * on communicators, and the predefined attributes of the environment.
 *
 * A keyval is an int: the predefined ones are the ABI's (MPI_TAG_UB = 501
 * ... MPI_UNIVERSE_SIZE = 507); a program's are KEYVAL_BASE + the index of
 * a slot in `attr.keyvals`.  A slot lives while the program holds the
 * keyval or an attribute uses it (MPI_Comm_free_keyval only marks it).
 *
 * The attributes of a communicator are kept here, in a list of caches, one
 * per communicator that has any, found by the communicator's address and
 * checked against its context id: comm.c reuses neither a context id nor,
 * while the communicator lives, its address, so a cache whose context no
 * longer matches belongs to a freed communicator and is dropped.
 *
 * The predefined attributes are answered on every communicator (the
 * standard caches them on MPI_COMM_WORLD; MPI_Comm_dup would copy them
 * anyway):
 *   MPI_TAG_UB           INT_MAX (tags travel as 32-bit ints)
 *   MPI_HOST             MPI_PROC_NULL (no host is special)
 *   MPI_IO               MPI_ANY_SOURCE (every rank can do I/O)
 *   MPI_WTIME_IS_GLOBAL  0 (MPI_Wtime is each process's monotonic clock)
 *   MPI_APPNUM           0 (`postbox run` starts one program)
 *   MPI_LASTUSEDCODE     the largest error class or code so far (error.h)
 *   MPI_UNIVERSE_SIZE    the size of MPI_COMM_WORLD (no spawning)
 */
#include "mpi/attr.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/error.h"

/* the first keyval a program gets (clear of every predefined one) */
#define KEYVAL_BASE 0x1000

typedef struct {
    int used;  /* the slot holds a keyval */
    int freed; /* the program freed it (MPI_Comm_free_keyval) */
    int refs;  /* the program's handle (until freed) + attributes using it */
    MPI_Comm_copy_attr_function *copy;
    MPI_Comm_delete_attr_function *del;
    void *extra_state;
} keyval_t;

typedef struct {
    int keyval;
    void *value;
} attr_t;

typedef struct cache {
    struct cache *next;
    pb_comm_t *comm;
    uint32_t context; /* comm's when the cache was made */
    int n, cap;
    attr_t *attrs; /* in the order they were first set */
} cache_t;

static struct {
    keyval_t *keyvals;
    int nkeyvals;
    cache_t *caches;
} attr;

/* the values the predefined attributes point at */
static int predef_tag_ub = INT_MAX, predef_host = MPI_PROC_NULL, predef_io = MPI_ANY_SOURCE,
           predef_wtime_is_global = 0, predef_appnum = 0, predef_lastusedcode,
           predef_universe_size = 1;

/* ---- keyvals -------------------------------------------------------------------------- */

/* The live, not freed keyval @keyval of the program, or NULL. */
static keyval_t *keyval_of(int keyval)
{
    int i = keyval - KEYVAL_BASE;

    if (keyval < KEYVAL_BASE || i >= attr.nkeyvals || !attr.keyvals[i].used ||
        attr.keyvals[i].freed)
        return NULL;
    return &attr.keyvals[i];
}

/* The slot of @keyval, freed or not (for the callbacks of attributes). */
static keyval_t *keyval_slot(int keyval)
{
    return &attr.keyvals[keyval - KEYVAL_BASE];
}

static void keyval_unref(int keyval)
{
    keyval_t *k = keyval_slot(keyval);

    if (--k->refs == 0)
        memset(k, 0, sizeof(*k));
}

static int predefined_keyval(int keyval)
{
    return keyval >= MPI_TAG_UB && keyval <= MPI_UNIVERSE_SIZE;
}

/* Check @keyval as the program's own for @func on @comm: MPI_ERR_KEYVAL
 * for a predefined one (which cannot be set or deleted) or an unknown one. */
static int user_keyval_arg(MPI_Comm comm, int keyval, const char *func, keyval_t **k_p)
{
    *k_p = keyval_of(keyval);
    if (*k_p != NULL)
        return MPI_SUCCESS;
    if (predefined_keyval(keyval))
        return pb_mpi_raise(comm, MPI_ERR_KEYVAL, func,
                            "keyval %d is predefined: its attribute cannot be changed", keyval);
    return pb_mpi_raise(comm, MPI_ERR_KEYVAL, func,
                        "keyval %d is not a communicator keyval (freed, or never created)", keyval);
}

/* Make a keyval with @copy and @del for @func.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL keyval); MPI_ERR_NO_MEM. */
static int create_keyval(MPI_Comm_copy_attr_function *copy, MPI_Comm_delete_attr_function *del,
                         int *keyval, void *extra_state, const char *func)
{
    int i;

    if (keyval == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "keyval is NULL");
    for (i = 0; i < attr.nkeyvals && attr.keyvals[i].used; i++)
        ;
    if (i == attr.nkeyvals) {
        int n = attr.nkeyvals ? 2 * attr.nkeyvals : 16;
        keyval_t *k = realloc(attr.keyvals, (size_t)n * sizeof(*k));

        if (k == NULL)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
        memset(k + attr.nkeyvals, 0, (size_t)(n - attr.nkeyvals) * sizeof(*k));
        attr.keyvals = k;
        attr.nkeyvals = n;
    }
    attr.keyvals[i] = (keyval_t){1, 0, 1, copy, del, extra_state};
    *keyval = KEYVAL_BASE + i;
    return MPI_SUCCESS;
}

/* Free the program's *@keyval (attributes using it keep it alive) and set
 * it to MPI_KEYVAL_INVALID.  @return MPI_SUCCESS; MPI_ERR_ARG (NULL);
 * MPI_ERR_KEYVAL (predefined, unknown). */
static int free_keyval(int *keyval, const char *func)
{
    keyval_t *k;
    int rc;

    if (keyval == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "keyval is NULL");
    rc = user_keyval_arg(MPI_COMM_NULL, *keyval, func, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    k->freed = 1;
    keyval_unref(*keyval);
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

/* ---- caches --------------------------------------------------------------------------- */

/* Forget @cache's attributes without calling back (their communicator is
 * gone, or MPI is ending). */
static void cache_drop(cache_t *cache)
{
    for (int i = 0; i < cache->n; i++)
        keyval_unref(cache->attrs[i].keyval);
    free(cache->attrs);
    free(cache);
}

/* The cache of @c; a new one when @create (NULL if out of memory), else
 * NULL if @c has no attribute. */
static cache_t *cache_of(pb_comm_t *c, int create)
{
    cache_t *cache;

    for (cache_t **p = &attr.caches; *p != NULL; p = &(*p)->next) {
        if ((*p)->comm != c)
            continue;
        if ((*p)->context == c->context)
            return *p;
        cache = *p; /* left by a freed communicator at the same address */
        *p = cache->next;
        cache_drop(cache);
        break;
    }
    if (!create)
        return NULL;
    cache = calloc(1, sizeof(*cache));
    if (cache != NULL) {
        cache->comm = c;
        cache->context = c->context;
        cache->next = attr.caches;
        attr.caches = cache;
    }
    return cache;
}

static int cache_find(const cache_t *cache, int keyval)
{
    for (int i = 0; cache != NULL && i < cache->n; i++) {
        if (cache->attrs[i].keyval == keyval)
            return i;
    }
    return -1;
}

/* Add (@keyval, @value) to @c, which does not have @keyval.
 * MPI_SUCCESS or MPI_ERR_NO_MEM. */
static int cache_add(pb_comm_t *c, int keyval, void *value)
{
    cache_t *cache = cache_of(c, 1);

    if (cache == NULL)
        return MPI_ERR_NO_MEM;
    if (cache->n == cache->cap) {
        int cap = cache->cap ? 2 * cache->cap : 4;
        attr_t *a = realloc(cache->attrs, (size_t)cap * sizeof(*a));

        if (a == NULL)
            return MPI_ERR_NO_MEM;
        cache->attrs = a;
        cache->cap = cap;
    }
    cache->attrs[cache->n++] = (attr_t){keyval, value};
    keyval_slot(keyval)->refs++;
    return MPI_SUCCESS;
}

/* Call @keyval's delete callback on @value cached on @c.  @return its
 * answer (MPI_SUCCESS for MPI_COMM_NULL_DELETE_FN). */
static int call_delete(pb_comm_t *c, int keyval, void *value)
{
    keyval_t *k = keyval_slot(keyval);

    if (k->del == MPI_COMM_NULL_DELETE_FN)
        return MPI_SUCCESS;
    return k->del(c->handle, keyval, value, k->extra_state);
}

/* Delete the attribute @keyval of @c, if it has one, after its delete
 * callback succeeds.  @return MPI_SUCCESS or the callback's error. */
static int attr_delete(pb_comm_t *c, int keyval)
{
    cache_t *cache = cache_of(c, 0);
    int i = cache_find(cache, keyval), rc;

    if (i < 0)
        return MPI_SUCCESS;
    rc = call_delete(c, keyval, cache->attrs[i].value);
    if (rc != MPI_SUCCESS)
        return rc;
    /* the callback may have changed the cache: look again */
    cache = cache_of(c, 0);
    i = cache_find(cache, keyval);
    if (i < 0)
        return MPI_SUCCESS;
    memmove(&cache->attrs[i], &cache->attrs[i + 1],
            (size_t)(cache->n - i - 1) * sizeof(cache->attrs[0]));
    cache->n--;
    keyval_unref(keyval);
    return MPI_SUCCESS;
}

/* ---- the hooks of comm.c ---------------------------------------------------------------- */

int pb_mpi_attr_copy(pb_comm_t *oldc, pb_comm_t *newc)
{
    cache_t *cache = cache_of(oldc, 0);
    attr_t *copy;
    int n = cache != NULL ? cache->n : 0, rc = MPI_SUCCESS;

    if (n == 0)
        return MPI_SUCCESS;
    /* a snapshot: the callbacks may change @oldc's attributes */
    copy = malloc((size_t)n * sizeof(*copy));
    if (copy == NULL)
        return MPI_ERR_NO_MEM;
    memcpy(copy, cache->attrs, (size_t)n * sizeof(*copy));
    for (int i = 0; i < n; i++)
        keyval_slot(copy[i].keyval)->refs++;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        keyval_t *k = keyval_slot(copy[i].keyval);
        void *out = NULL;
        int flag = 0;

        if (k->copy == MPI_COMM_NULL_COPY_FN)
            continue;
        if (k->copy == MPI_COMM_DUP_FN) {
            out = copy[i].value;
            flag = 1;
        } else {
            rc = k->copy(oldc->handle, copy[i].keyval, k->extra_state, copy[i].value, &out, &flag);
        }
        if (rc == MPI_SUCCESS && flag)
            rc = cache_find(cache_of(newc, 0), copy[i].keyval) >= 0
                     ? MPI_SUCCESS
                     : cache_add(newc, copy[i].keyval, out);
    }
    for (int i = 0; i < n; i++)
        keyval_unref(copy[i].keyval);
    free(copy);
    if (rc != MPI_SUCCESS)
        pb_mpi_attr_delete_all(newc);
    return rc;
}

int pb_mpi_attr_delete_all(pb_comm_t *c)
{
    cache_t *cache;

    while ((cache = cache_of(c, 0)) != NULL && cache->n > 0) {
        int rc = attr_delete(c, cache->attrs[cache->n - 1].keyval);

        if (rc != MPI_SUCCESS)
            return rc;
    }
    if (cache != NULL) {
        for (cache_t **p = &attr.caches; *p != NULL; p = &(*p)->next) {
            if (*p == cache) {
                *p = cache->next;
                break;
            }
        }
        cache_drop(cache);
    }
    return MPI_SUCCESS;
}

int pb_mpi_attr_finalize(void)
{
    int rc = pb_mpi_attr_delete_all(pb_mpi_comm(MPI_COMM_SELF));
    int rc_world = pb_mpi_attr_delete_all(pb_mpi_comm(MPI_COMM_WORLD));

    while (attr.caches != NULL) {
        cache_t *cache = attr.caches;

        attr.caches = cache->next;
        cache_drop(cache);
    }
    free(attr.keyvals);
    attr.keyvals = NULL;
    attr.nkeyvals = 0;
    return rc != MPI_SUCCESS ? rc : rc_world;
}

/* ---- the functions ------------------------------------------------------------------- */

/* Make *@comm_keyval, a new keyval with the callbacks @comm_copy_attr_fn
 * (run by MPI_Comm_dup; MPI_COMM_NULL_COPY_FN: do not copy,
 * MPI_COMM_DUP_FN: copy the value) and @comm_delete_attr_fn
 * (MPI_COMM_NULL_DELETE_FN: nothing), given @extra_state.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL keyval); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                      MPI_Comm_delete_attr_function *comm_delete_attr_fn,
                                      int *comm_keyval, void *extra_state)
{
    return create_keyval(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state,
                         "MPI_Comm_create_keyval");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_create_keyval, PMPI_Comm_create_keyval);

/* Free *@comm_keyval and set it to MPI_KEYVAL_INVALID; attributes that use
 * it stay until deleted.  @return MPI_SUCCESS; MPI_ERR_ARG;
 * MPI_ERR_KEYVAL (predefined or unknown). */
PB_EXPORT int PMPI_Comm_free_keyval(int *comm_keyval)
{
    return free_keyval(comm_keyval, "MPI_Comm_free_keyval");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_free_keyval, PMPI_Comm_free_keyval);

static int set_attr(MPI_Comm comm, int keyval, void *value, const char *func)
{
    pb_comm_t *c;
    keyval_t *k;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc == MPI_SUCCESS)
        rc = user_keyval_arg(comm, keyval, func, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = attr_delete(c, keyval);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func,
                            "the delete callback of keyval %d refused the old value", keyval);
    if (cache_add(c, keyval, value) != MPI_SUCCESS)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    return MPI_SUCCESS;
}

/* Cache @attribute_val on @comm under @comm_keyval, after the delete
 * callback has run on the value it replaces.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_KEYVAL (predefined, unknown);
 *         MPI_ERR_NO_MEM; the delete callback's error. */
PB_EXPORT int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    return set_attr(comm, comm_keyval, attribute_val, "MPI_Comm_set_attr");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_set_attr, PMPI_Comm_set_attr);

static int get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag, const char *func)
{
    pb_comm_t *c;
    keyval_t *k;
    int rc = pb_mpi_comm_check(comm, func, &c), i;
    int *predef = NULL;

    if (rc != MPI_SUCCESS)
        return rc;
    if (attribute_val == NULL || flag == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "attribute_val or flag is NULL");
    switch (keyval) {
    case MPI_TAG_UB: predef = &predef_tag_ub; break;
    case MPI_HOST: predef = &predef_host; break;
    case MPI_IO: predef = &predef_io; break;
    case MPI_WTIME_IS_GLOBAL: predef = &predef_wtime_is_global; break;
    case MPI_APPNUM: predef = &predef_appnum; break;
    case MPI_LASTUSEDCODE:
        predef_lastusedcode = pb_mpi_error_last_used();
        predef = &predef_lastusedcode;
        break;
    case MPI_UNIVERSE_SIZE:
        predef_universe_size = pb_mpi_comm(MPI_COMM_WORLD)->size;
        predef = &predef_universe_size;
        break;
    default: break;
    }
    if (predef != NULL) {
        *(void **)attribute_val = predef;
        *flag = 1;
        return MPI_SUCCESS;
    }
    rc = user_keyval_arg(comm, keyval, func, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    i = cache_find(cache_of(c, 0), keyval);
    *flag = i >= 0;
    if (i >= 0)
        *(void **)attribute_val = cache_of(c, 0)->attrs[i].value;
    return MPI_SUCCESS;
}

/* *@flag = whether @comm has an attribute under @comm_keyval; if so, its
 * value is stored in *(void **)@attribute_val (for a predefined keyval, a
 * pointer to an int holding it).
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (NULL); MPI_ERR_KEYVAL. */
PB_EXPORT int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    return get_attr(comm, comm_keyval, attribute_val, flag, "MPI_Comm_get_attr");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_get_attr, PMPI_Comm_get_attr);

static int delete_attr(MPI_Comm comm, int keyval, const char *func)
{
    pb_comm_t *c;
    keyval_t *k;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc == MPI_SUCCESS)
        rc = user_keyval_arg(comm, keyval, func, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = attr_delete(c, keyval);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the delete callback of keyval %d failed", keyval);
    return MPI_SUCCESS;
}

/* Delete @comm's attribute under @comm_keyval (nothing if it has none)
 * after its delete callback succeeds.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_KEYVAL; the callback's error
 *         (the attribute then stays). */
PB_EXPORT int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
    return delete_attr(comm, comm_keyval, "MPI_Comm_delete_attr");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_delete_attr, PMPI_Comm_delete_attr);

/* ---- the MPI-1 names (deprecated) ------------------------------------------------------ */

/* MPI_Comm_create_keyval under its MPI-1 name. */
PB_EXPORT int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn,
                                 int *keyval, void *extra_state)
{
    return create_keyval(copy_fn, delete_fn, keyval, extra_state, "MPI_Keyval_create");
}
PB_MPI_WEAK_ALIAS(MPI_Keyval_create, PMPI_Keyval_create);

/* MPI_Comm_free_keyval under its MPI-1 name. */
PB_EXPORT int PMPI_Keyval_free(int *keyval)
{
    return free_keyval(keyval, "MPI_Keyval_free");
}
PB_MPI_WEAK_ALIAS(MPI_Keyval_free, PMPI_Keyval_free);

/* MPI_Comm_set_attr under its MPI-1 name. */
PB_EXPORT int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
    return set_attr(comm, keyval, attribute_val, "MPI_Attr_put");
}
PB_MPI_WEAK_ALIAS(MPI_Attr_put, PMPI_Attr_put);

/* MPI_Comm_get_attr under its MPI-1 name. */
PB_EXPORT int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    return get_attr(comm, keyval, attribute_val, flag, "MPI_Attr_get");
}
PB_MPI_WEAK_ALIAS(MPI_Attr_get, PMPI_Attr_get);

/* MPI_Comm_delete_attr under its MPI-1 name. */
PB_EXPORT int PMPI_Attr_delete(MPI_Comm comm, int keyval)
{
    return delete_attr(comm, keyval, "MPI_Attr_delete");
}
PB_MPI_WEAK_ALIAS(MPI_Attr_delete, PMPI_Attr_delete);
