/*
 * Attributes (MPI-5.0 section 7.7): keyvals, the values cached on
 * communicators and datatypes, and the predefined attributes of the
 * environment.  One store serves both kinds (a keyval is made for one of
 * them); windows keep theirs in win_attr.c.
 *
 * A keyval is an int: the predefined ones are the ABI's (MPI_TAG_UB = 501
 * ... MPI_UNIVERSE_SIZE = 507); a program's are KEYVAL_BASE + the index of
 * a slot in `attr.keyvals`.  A slot lives while the program holds the
 * keyval or an attribute uses it (MPI_Comm_free_keyval only marks it).
 *
 * The attributes of an object are kept here, in a list of caches, one per
 * object that has any.  A communicator's is found by its address and
 * checked against its context id: comm.c reuses neither a context id nor,
 * while the communicator lives, its address, so a cache whose context no
 * longer matches belongs to a freed communicator and is dropped.  A
 * datatype's is found by its handle (a predefined one's value, a created
 * one's address); MPI_Type_free deletes it before the handle can be
 * reused.
 *
 * The predefined attributes are answered on every communicator (the
 * standard caches them on MPI_COMM_WORLD; MPI_Comm_dup would copy them
 * anyway):
 *   MPI_TAG_UB           INT_MAX (tags travel as 32-bit ints)
 *   MPI_HOST             MPI_PROC_NULL (no host is special)
 *   MPI_IO               MPI_ANY_SOURCE (every rank can do I/O)
 *   MPI_WTIME_IS_GLOBAL  0 (MPI_Wtime is each process's monotonic clock)
 *   MPI_APPNUM           PMI's appnum: the index of the process's command in the
 *                        spawn that started it, 0 for the ranks `postbox run` started
 *   MPI_LASTUSEDCODE     the largest error class or code so far (error.h)
 *   MPI_UNIVERSE_SIZE    the slots of `postbox run --universe U` (U), else the
 *                        size of MPI_COMM_WORLD
 */
#include "mpi/attr.h"

#include "mpi/datatype.h"

#include <limits.h>
#include <postbox/job.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/error.h"

/* the first keyval a program gets (clear of every predefined one) */
#define KEYVAL_BASE 0x1000

/* The kinds of objects attributes are cached on; a keyval is made for
 * one kind and names no attribute of the others. */
typedef enum {
    KIND_COMM,
    KIND_TYPE
} attr_kind_t;

static const char *const kind_names[] = {[KIND_COMM] = "communicator", [KIND_TYPE] = "datatype"};

/* A copy or delete callback of either kind.  The null and dup callbacks of
 * the ABI are the values 0 and 1 of every kind (MPI_COMM_NULL_COPY_FN,
 * MPI_TYPE_DUP_FN, ...). */
typedef union {
    MPI_Comm_copy_attr_function *comm;
    MPI_Type_copy_attr_function *type;
} copy_fn_t;

typedef union {
    MPI_Comm_delete_attr_function *comm;
    MPI_Type_delete_attr_function *type;
} delete_fn_t;

#define FN_NULL ((uintptr_t)0) /* MPI_*_NULL_COPY_FN, MPI_*_NULL_DELETE_FN */
#define FN_DUP ((uintptr_t)1)  /* MPI_*_DUP_FN */

typedef struct {
    int used;  /* the slot holds a keyval */
    int freed; /* the program freed it (MPI_*_free_keyval) */
    int refs;  /* the program's handle (until freed) + attributes using it */
    attr_kind_t kind;
    copy_fn_t copy;
    delete_fn_t del;
    void *extra_state;
} keyval_t;

typedef struct {
    int keyval;
    void *value;
} attr_t;

/* The object an attribute is cached on: its kind, the address that tells
 * it from the others of its kind (a communicator's object, a datatype's
 * handle) and, for a communicator, its context id; its handle, which the
 * callbacks get. */
typedef struct {
    attr_kind_t kind;
    const void *key;
    uint32_t context;
    union {
        MPI_Comm comm;
        MPI_Datatype type;
    } handle;
} attr_obj_t;

typedef struct cache {
    struct cache *next;
    attr_kind_t kind;
    const void *key;
    uint32_t context; /* the object's when the cache was made */
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

static attr_obj_t comm_obj(pb_comm_t *c)
{
    return (attr_obj_t){
        .kind = KIND_COMM, .key = c, .context = c->context, .handle.comm = c->handle};
}

static attr_obj_t type_obj(MPI_Datatype type)
{
    return (attr_obj_t){.kind = KIND_TYPE, .key = type, .handle.type = type};
}

/* ---- keyvals -------------------------------------------------------------------------- */

/* The slot of @keyval while it lives (the program holds it, or, freed,
 * attributes still use it), or NULL. */
static keyval_t *keyval_live(int keyval)
{
    int i = keyval - KEYVAL_BASE;

    if (keyval < KEYVAL_BASE || i >= attr.nkeyvals || !attr.keyvals[i].used)
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

/* Check @keyval as the program's own of @kind for @func (errors raised on
 * @comm): MPI_ERR_KEYVAL for a predefined one (which cannot be set or
 * deleted), one of another kind, or an unknown one.  A keyval the program
 * freed while attributes use it still names them (MPI-5.0 section 7.7.2:
 * the free happens once the last is deleted). */
static int user_keyval_arg(MPI_Comm comm, attr_kind_t kind, int keyval, const char *func,
                           keyval_t **k_p)
{
    *k_p = keyval_live(keyval);
    if (*k_p != NULL && (*k_p)->kind == kind)
        return MPI_SUCCESS;
    if (*k_p != NULL)
        return pb_mpi_raise(comm, MPI_ERR_KEYVAL, func, "keyval %d is a %s keyval, not a %s one",
                            keyval, kind_names[(*k_p)->kind], kind_names[kind]);
    if (kind == KIND_COMM && predefined_keyval(keyval))
        return pb_mpi_raise(comm, MPI_ERR_KEYVAL, func,
                            "keyval %d is predefined: its attribute cannot be changed", keyval);
    return pb_mpi_raise(comm, MPI_ERR_KEYVAL, func,
                        "keyval %d is not a %s keyval (freed, or never created)", keyval,
                        kind_names[kind]);
}

/* Make a keyval of @kind with @copy and @del for @func.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL keyval); MPI_ERR_NO_MEM. */
static int create_keyval(attr_kind_t kind, copy_fn_t copy, delete_fn_t del, int *keyval,
                         void *extra_state, const char *func)
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
    attr.keyvals[i] = (keyval_t){
        .used = 1, .refs = 1, .kind = kind, .copy = copy, .del = del, .extra_state = extra_state};
    *keyval = KEYVAL_BASE + i;
    return MPI_SUCCESS;
}

/* Free the program's *@keyval of @kind (attributes using it keep it alive,
 * and still answer to its number) and set it to MPI_KEYVAL_INVALID.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL); MPI_ERR_KEYVAL (predefined,
 * unknown, of another kind, freed already). */
static int free_keyval(attr_kind_t kind, int *keyval, const char *func)
{
    keyval_t *k;
    int rc;

    if (keyval == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "keyval is NULL");
    rc = user_keyval_arg(MPI_COMM_NULL, kind, *keyval, func, &k);
    if (rc != MPI_SUCCESS)
        return rc;
    if (k->freed)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_KEYVAL, func,
                            "keyval %d was freed already (its attributes keep it until deleted)",
                            *keyval);
    k->freed = 1;
    keyval_unref(*keyval);
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

/* ---- caches --------------------------------------------------------------------------- */

/* Forget @cache's attributes without calling back (their object is gone,
 * or MPI is ending). */
static void cache_drop(cache_t *cache)
{
    for (int i = 0; i < cache->n; i++)
        keyval_unref(cache->attrs[i].keyval);
    free(cache->attrs);
    free(cache);
}

void pb_mpi_attr_context_changed(pb_comm_t *c, uint32_t old)
{
    for (cache_t *p = attr.caches; p != NULL; p = p->next) {
        if (p->kind == KIND_COMM && p->key == c && p->context == old)
            p->context = c->context;
    }
}

/* The cache of @o; a new one when @create (NULL if out of memory), else
 * NULL if @o has no attribute. */
static cache_t *cache_of(const attr_obj_t *o, int create)
{
    cache_t *cache;

    for (cache_t **p = &attr.caches; *p != NULL; p = &(*p)->next) {
        if ((*p)->kind != o->kind || (*p)->key != o->key)
            continue;
        if ((*p)->context == o->context)
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
        cache->kind = o->kind;
        cache->key = o->key;
        cache->context = o->context;
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

/* Add (@keyval, @value) to @o, which does not have @keyval.
 * MPI_SUCCESS or MPI_ERR_NO_MEM. */
static int cache_add(const attr_obj_t *o, int keyval, void *value)
{
    cache_t *cache = cache_of(o, 1);

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

/* Call @keyval's delete callback on @value cached on @o.  @return its
 * answer (MPI_SUCCESS for the null delete function). */
static int call_delete(const attr_obj_t *o, int keyval, void *value)
{
    keyval_t *k = keyval_slot(keyval);

    if ((uintptr_t)k->del.comm == FN_NULL)
        return MPI_SUCCESS;
    if (o->kind == KIND_TYPE)
        return k->del.type(o->handle.type, keyval, value, k->extra_state);
    return k->del.comm(o->handle.comm, keyval, value, k->extra_state);
}

/* Call @keyval's copy callback for @value cached on @o: *@out_p and
 * *@flag_p as the callback sets them.  @return its answer. */
static int call_copy(const attr_obj_t *o, int keyval, void *value, void **out_p, int *flag_p)
{
    keyval_t *k = keyval_slot(keyval);

    *out_p = NULL;
    *flag_p = 0;
    if ((uintptr_t)k->copy.comm == FN_NULL)
        return MPI_SUCCESS;
    if ((uintptr_t)k->copy.comm == FN_DUP) {
        *out_p = value;
        *flag_p = 1;
        return MPI_SUCCESS;
    }
    if (o->kind == KIND_TYPE)
        return k->copy.type(o->handle.type, keyval, k->extra_state, value, out_p, flag_p);
    return k->copy.comm(o->handle.comm, keyval, k->extra_state, value, out_p, flag_p);
}

/* Delete the attribute @keyval of @o, if it has one, after its delete
 * callback succeeds.  @return MPI_SUCCESS or the callback's error. */
static int attr_delete(const attr_obj_t *o, int keyval)
{
    cache_t *cache = cache_of(o, 0);
    int i = cache_find(cache, keyval), rc;

    if (i < 0)
        return MPI_SUCCESS;
    rc = call_delete(o, keyval, cache->attrs[i].value);
    if (rc != MPI_SUCCESS)
        return rc;
    /* the callback may have changed the cache: look again */
    cache = cache_of(o, 0);
    i = cache_find(cache, keyval);
    if (i < 0)
        return MPI_SUCCESS;
    memmove(&cache->attrs[i], &cache->attrs[i + 1],
            (size_t)(cache->n - i - 1) * sizeof(cache->attrs[0]));
    cache->n--;
    keyval_unref(keyval);
    return MPI_SUCCESS;
}

/* Delete every attribute of @o, last set first; see pb_mpi_attr_delete_all. */
static int attr_delete_all(const attr_obj_t *o)
{
    cache_t *cache;

    while ((cache = cache_of(o, 0)) != NULL && cache->n > 0) {
        int rc = attr_delete(o, cache->attrs[cache->n - 1].keyval);

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

/* Copy the attributes of @from to @to; see pb_mpi_attr_copy. */
static int attr_copy(const attr_obj_t *from, const attr_obj_t *to)
{
    cache_t *cache = cache_of(from, 0);
    attr_t *copy;
    int n = cache != NULL ? cache->n : 0, rc = MPI_SUCCESS;

    if (n == 0)
        return MPI_SUCCESS;
    /* a snapshot: the callbacks may change @from's attributes */
    copy = malloc((size_t)n * sizeof(*copy));
    if (copy == NULL)
        return MPI_ERR_NO_MEM;
    memcpy(copy, cache->attrs, (size_t)n * sizeof(*copy));
    for (int i = 0; i < n; i++)
        keyval_slot(copy[i].keyval)->refs++;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        void *out;
        int flag;

        rc = call_copy(from, copy[i].keyval, copy[i].value, &out, &flag);
        if (rc == MPI_SUCCESS && flag)
            rc = cache_find(cache_of(to, 0), copy[i].keyval) >= 0
                     ? MPI_SUCCESS
                     : cache_add(to, copy[i].keyval, out);
    }
    for (int i = 0; i < n; i++)
        keyval_unref(copy[i].keyval);
    free(copy);
    if (rc != MPI_SUCCESS)
        attr_delete_all(to);
    return rc;
}

/* Set attribute @keyval of @o to @value (the old value deleted first) for
 * @func, errors raised on @comm. */
static int attr_set(MPI_Comm comm, const attr_obj_t *o, int keyval, void *value, const char *func)
{
    keyval_t *k;
    int rc = user_keyval_arg(comm, o->kind, keyval, func, &k);

    if (rc != MPI_SUCCESS)
        return rc;
    /* a freed keyval lives through its old value's deletion to the new one */
    k->refs++;
    rc = attr_delete(o, keyval);
    if (rc == MPI_SUCCESS && cache_add(o, keyval, value) != MPI_SUCCESS)
        rc = MPI_ERR_NO_MEM;
    keyval_unref(keyval);
    if (rc == MPI_ERR_NO_MEM)
        return pb_mpi_raise(comm, rc, func, "out of memory");
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func,
                            "the delete callback of keyval %d refused the old value", keyval);
    return MPI_SUCCESS;
}

/* The attribute @keyval of @o (a program's keyval) into *@flag and
 * *(void **)@attribute_val, for @func, errors raised on @comm. */
static int attr_get(MPI_Comm comm, const attr_obj_t *o, int keyval, void *attribute_val, int *flag,
                    const char *func)
{
    keyval_t *k;
    int rc = user_keyval_arg(comm, o->kind, keyval, func, &k), i;

    if (rc != MPI_SUCCESS)
        return rc;
    i = cache_find(cache_of(o, 0), keyval);
    *flag = i >= 0;
    if (i >= 0)
        *(void **)attribute_val = cache_of(o, 0)->attrs[i].value;
    return MPI_SUCCESS;
}

/* Delete the attribute @keyval of @o for @func, errors raised on @comm. */
static int attr_delete_arg(MPI_Comm comm, const attr_obj_t *o, int keyval, const char *func)
{
    keyval_t *k;
    int rc = user_keyval_arg(comm, o->kind, keyval, func, &k);

    if (rc != MPI_SUCCESS)
        return rc;
    rc = attr_delete(o, keyval);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the delete callback of keyval %d failed", keyval);
    return MPI_SUCCESS;
}

/* ---- the hooks of comm.c and datatype.c ------------------------------------------------ */

int pb_mpi_attr_copy(pb_comm_t *oldc, pb_comm_t *newc)
{
    attr_obj_t from = comm_obj(oldc), to = comm_obj(newc);

    return attr_copy(&from, &to);
}

int pb_mpi_attr_delete_all(pb_comm_t *c)
{
    attr_obj_t o;

    if (c == NULL) /* MPI_COMM_SELF or _WORLD after the world model ended */
        return MPI_SUCCESS;
    o = comm_obj(c);
    return attr_delete_all(&o);
}

int pb_mpi_type_attr_copy(MPI_Datatype oldtype, MPI_Datatype newtype)
{
    attr_obj_t from = type_obj(oldtype), to = type_obj(newtype);

    return attr_copy(&from, &to);
}

int pb_mpi_type_attr_delete_all(MPI_Datatype type)
{
    attr_obj_t o = type_obj(type);

    return attr_delete_all(&o);
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
    PB_MPI_THREAD_GUARD;

    return create_keyval(KIND_COMM, (copy_fn_t){.comm = comm_copy_attr_fn},
                         (delete_fn_t){.comm = comm_delete_attr_fn}, comm_keyval, extra_state,
                         "MPI_Comm_create_keyval");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_create_keyval, PMPI_Comm_create_keyval);

/* Free *@comm_keyval and set it to MPI_KEYVAL_INVALID; attributes that use
 * it stay, reachable through its number, until deleted.  @return
 * MPI_SUCCESS; MPI_ERR_ARG; MPI_ERR_KEYVAL (predefined, unknown, freed). */
PB_EXPORT int PMPI_Comm_free_keyval(int *comm_keyval)
{
    PB_MPI_THREAD_GUARD;

    return free_keyval(KIND_COMM, comm_keyval, "MPI_Comm_free_keyval");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_free_keyval, PMPI_Comm_free_keyval);

static int set_attr(MPI_Comm comm, int keyval, void *value, const char *func)
{
    pb_comm_t *c;
    attr_obj_t o;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    o = comm_obj(c);
    return attr_set(comm, &o, keyval, value, func);
}

/* Cache @attribute_val on @comm under @comm_keyval, after the delete
 * callback has run on the value it replaces.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_KEYVAL (predefined, unknown);
 *         MPI_ERR_NO_MEM; the delete callback's error. */
PB_EXPORT int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    PB_MPI_THREAD_GUARD;

    return set_attr(comm, comm_keyval, attribute_val, "MPI_Comm_set_attr");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_set_attr, PMPI_Comm_set_attr);

static int get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag, const char *func)
{
    pb_comm_t *c;
    attr_obj_t o;
    int rc = pb_mpi_comm_check(comm, func, &c);
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
    case MPI_APPNUM:
        predef_appnum = postbox_job_appnum();
        predef = &predef_appnum;
        break;
    case MPI_LASTUSEDCODE:
        predef_lastusedcode = pb_mpi_error_last_used();
        predef = &predef_lastusedcode;
        break;
    case MPI_UNIVERSE_SIZE:
        predef_universe_size = pb_mpi_slots();
        predef = &predef_universe_size;
        break;
    default: break;
    }
    if (predef != NULL) {
        *(void **)attribute_val = predef;
        *flag = 1;
        return MPI_SUCCESS;
    }
    o = comm_obj(c);
    return attr_get(comm, &o, keyval, attribute_val, flag, func);
}

/* *@flag = whether @comm has an attribute under @comm_keyval; if so, its
 * value is stored in *(void **)@attribute_val (for a predefined keyval, a
 * pointer to an int holding it).
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (NULL); MPI_ERR_KEYVAL. */
PB_EXPORT int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    PB_MPI_THREAD_GUARD;

    return get_attr(comm, comm_keyval, attribute_val, flag, "MPI_Comm_get_attr");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_get_attr, PMPI_Comm_get_attr);

static int delete_attr(MPI_Comm comm, int keyval, const char *func)
{
    pb_comm_t *c;
    attr_obj_t o;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    o = comm_obj(c);
    return attr_delete_arg(comm, &o, keyval, func);
}

/* Delete @comm's attribute under @comm_keyval (nothing if it has none)
 * after its delete callback succeeds.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_KEYVAL; the callback's error
 *         (the attribute then stays). */
PB_EXPORT int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
    PB_MPI_THREAD_GUARD;

    return delete_attr(comm, comm_keyval, "MPI_Comm_delete_attr");
}
PB_MPI_WEAK_ALIAS(MPI_Comm_delete_attr, PMPI_Comm_delete_attr);

/* ---- the MPI-1 names (deprecated) ------------------------------------------------------ */

/* MPI_Comm_create_keyval under its MPI-1 name. */
PB_EXPORT int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn,
                                 int *keyval, void *extra_state)
{
    PB_MPI_THREAD_GUARD;

    return create_keyval(KIND_COMM, (copy_fn_t){.comm = copy_fn}, (delete_fn_t){.comm = delete_fn},
                         keyval, extra_state, "MPI_Keyval_create");
}
PB_MPI_WEAK_ALIAS(MPI_Keyval_create, PMPI_Keyval_create);

/* MPI_Comm_free_keyval under its MPI-1 name. */
PB_EXPORT int PMPI_Keyval_free(int *keyval)
{
    PB_MPI_THREAD_GUARD;

    return free_keyval(KIND_COMM, keyval, "MPI_Keyval_free");
}
PB_MPI_WEAK_ALIAS(MPI_Keyval_free, PMPI_Keyval_free);

/* MPI_Comm_set_attr under its MPI-1 name. */
PB_EXPORT int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
    PB_MPI_THREAD_GUARD;

    return set_attr(comm, keyval, attribute_val, "MPI_Attr_put");
}
PB_MPI_WEAK_ALIAS(MPI_Attr_put, PMPI_Attr_put);

/* MPI_Comm_get_attr under its MPI-1 name. */
PB_EXPORT int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    PB_MPI_THREAD_GUARD;

    return get_attr(comm, keyval, attribute_val, flag, "MPI_Attr_get");
}
PB_MPI_WEAK_ALIAS(MPI_Attr_get, PMPI_Attr_get);

/* MPI_Comm_delete_attr under its MPI-1 name. */
PB_EXPORT int PMPI_Attr_delete(MPI_Comm comm, int keyval)
{
    PB_MPI_THREAD_GUARD;

    return delete_attr(comm, keyval, "MPI_Attr_delete");
}
PB_MPI_WEAK_ALIAS(MPI_Attr_delete, PMPI_Attr_delete);

/* ---- datatype attributes (MPI-5.0 section 7.7.4) ----------------------------------------- */

/* Check that @type is a datatype that may have attributes, for @func: a
 * predefined one or a live created one.  @return MPI_SUCCESS or
 * MPI_ERR_TYPE raised. */
static int type_obj_arg(MPI_Datatype type, const char *func)
{
    if (pb_mpi_datatype(type) == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                            "datatype (%p) is not a datatype (freed, or never created)",
                            (void *)type);
    return MPI_SUCCESS;
}

/* Make *@type_keyval, a new datatype keyval with the callbacks
 * @type_copy_attr_fn (run by MPI_Type_dup; MPI_TYPE_NULL_COPY_FN: do not
 * copy, MPI_TYPE_DUP_FN: copy the value) and @type_delete_attr_fn (run
 * when the attribute is deleted or replaced and by MPI_Type_free;
 * MPI_TYPE_NULL_DELETE_FN: nothing), given @extra_state.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL keyval); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                                      MPI_Type_delete_attr_function *type_delete_attr_fn,
                                      int *type_keyval, void *extra_state)
{
    PB_MPI_THREAD_GUARD;

    return create_keyval(KIND_TYPE, (copy_fn_t){.type = type_copy_attr_fn},
                         (delete_fn_t){.type = type_delete_attr_fn}, type_keyval, extra_state,
                         "MPI_Type_create_keyval");
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_keyval, PMPI_Type_create_keyval);

/* Free *@type_keyval and set it to MPI_KEYVAL_INVALID; attributes that use
 * it stay until deleted.  @return MPI_SUCCESS; MPI_ERR_ARG; MPI_ERR_KEYVAL
 * (unknown, not a datatype keyval, freed). */
PB_EXPORT int PMPI_Type_free_keyval(int *type_keyval)
{
    PB_MPI_THREAD_GUARD;

    return free_keyval(KIND_TYPE, type_keyval, "MPI_Type_free_keyval");
}
PB_MPI_WEAK_ALIAS(MPI_Type_free_keyval, PMPI_Type_free_keyval);

/* Cache @attribute_val on @datatype (predefined or created) under
 * @type_keyval, after the delete callback has run on the value it
 * replaces.  @return MPI_SUCCESS; MPI_ERR_TYPE; MPI_ERR_KEYVAL;
 * MPI_ERR_NO_MEM; the delete callback's error. */
PB_EXPORT int PMPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_set_attr";
    attr_obj_t o = type_obj(datatype);
    int rc = type_obj_arg(datatype, func);

    if (rc != MPI_SUCCESS)
        return rc;
    return attr_set(MPI_COMM_NULL, &o, type_keyval, attribute_val, func);
}
PB_MPI_WEAK_ALIAS(MPI_Type_set_attr, PMPI_Type_set_attr);

/* *@flag = whether @datatype has an attribute under @type_keyval; if so,
 * its value is stored in *(void **)@attribute_val.
 * @return MPI_SUCCESS; MPI_ERR_TYPE; MPI_ERR_ARG (NULL); MPI_ERR_KEYVAL. */
PB_EXPORT int PMPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val,
                                 int *flag)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_get_attr";
    attr_obj_t o = type_obj(datatype);
    int rc = type_obj_arg(datatype, func);

    if (rc != MPI_SUCCESS)
        return rc;
    if (attribute_val == NULL || flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "attribute_val or flag is NULL");
    return attr_get(MPI_COMM_NULL, &o, type_keyval, attribute_val, flag, func);
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_attr, PMPI_Type_get_attr);

/* Delete @datatype's attribute under @type_keyval (nothing if it has none)
 * after its delete callback succeeds.  @return MPI_SUCCESS; MPI_ERR_TYPE;
 * MPI_ERR_KEYVAL; the callback's error (the attribute then stays). */
PB_EXPORT int PMPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Type_delete_attr";
    attr_obj_t o = type_obj(datatype);
    int rc = type_obj_arg(datatype, func);

    if (rc != MPI_SUCCESS)
        return rc;
    return attr_delete_arg(MPI_COMM_NULL, &o, type_keyval, func);
}
PB_MPI_WEAK_ALIAS(MPI_Type_delete_attr, PMPI_Type_delete_attr);
