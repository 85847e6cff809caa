/*
 * Datatypes (MPI-5.0 chapter 5): the predefined C datatypes of the standard
 * ABI, the type constructors, the queries, MPI_Pack/MPI_Unpack, and the
 * pack engine the messaging layer moves non-contiguous data with.
 *
 * Representation.  Every datatype, predefined or created, is one struct
 * MPI_ABI_Datatype holding what the queries return (size, bounds, true
 * bounds, basic elements) and its type map flattened for one element into
 * segments: a segment is `count` blocks of `len` bytes, the first `off`
 * bytes from the element's address and each next one `stride` bytes
 * further.  Segments are in type-map order, which is the order of packed
 * data.  The constructors merge adjacent blocks and extend a constant
 * stride where they can, so a contiguous type is one block and a vector of
 * a contiguous type is one segment whatever its count.  Each segment knows
 * the packed offset of its first byte (`pos`), so a byte range of a packed
 * message starts with a division (which element), a binary search (which
 * segment) and another division (which block), never a walk from the
 * start: the engine packs a message piece by piece.
 *
 * A created type also lists the types it was made of, with their
 * repetitions, in packed order ("parts"), for MPI_Get_elements on a partial
 * element, and holds a reference on each, so MPI_Type_free of a part does
 * not affect it.
 *
 * Handles.  A predefined handle is its ABI value (below 0x400), mapped by a
 * table to a static object.  A created handle is the address of its heap
 * object, and is only dereferenced after it was found in the registry of
 * live created types (a hash set of addresses): a freed or made-up handle
 * is reported as MPI_ERR_TYPE and never read.  The Fortran datatypes are
 * not supported: they are not datatypes here (pb_mpi_datatype returns NULL).
 *
 * These functions need no MPI_Init (they communicate with no one); they may
 * be called before it and after MPI_Finalize.
 */
#include <limits.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "mpi/datatype.h"

/* Blocks of one segment: count blocks of len bytes at off + k * stride. */
typedef struct {
    MPI_Aint off;    /* first block, from the element's address */
    MPI_Aint stride; /* from one block to the next (any sign; 0 repeats) */
    size_t len;      /* bytes per block, > 0 */
    size_t count;    /* blocks, > 0 */
    size_t pos;      /* packed offset of the first byte within an element */
} pb_seg_t;

/* @n consecutive elements of @type in a created type's packed data. */
typedef struct {
    pb_datatype_t *type;
    MPI_Count n;
} pb_part_t;

struct MPI_ABI_Datatype {
    size_t size;         /* bytes of data per element */
    MPI_Aint lb;         /* lower bound; extent = ub - lb */
    MPI_Aint ub;         /* upper bound */
    MPI_Aint true_lb;    /* first byte of data (0 when size is 0) */
    MPI_Aint true_ub;    /* one past the last byte of data */
    MPI_Count nelems;    /* basic elements per element */
    pb_basic_t basic;    /* the one basic kind of all elements, or NONE */
    int align;           /* the largest alignment of a basic type inside */
    int combiner;        /* MPI_COMBINER_* */
    uint8_t predefined;  /* a static object of this file */
    uint8_t committed;   /* MPI_Type_commit was called (predefined: 1) */
    uint8_t contiguous;  /* count elements are one block at true_lb */
    uint8_t sticky;      /* bounds set by markers (MPI_Type_create_resized) */
    uint8_t has_entries; /* the type map is not empty (data or markers) */
    int handle_int;      /* MPI_Type_toint */
    atomic_int refs;     /* created types: the handle + parents + retains */
    size_t nsegs;
    pb_seg_t *segs;
    size_t nparts;
    pb_part_t *parts;
    size_t value_size;    /* pair types: bytes of the value before the index */
    pb_seg_t own_segs[2]; /* predefined types' segments */
    char name[MPI_MAX_OBJECT_NAME];
};

/* ---- the registry of created objects -------------------------------------------------- */

#define REG_FREE ((uintptr_t)0)
#define REG_DELETED ((uintptr_t)1)

static size_t reg_slot(uintptr_t key, size_t cap)
{
    uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;

    return (size_t)(h >> 29) & (cap - 1);
}

/* Rehash into a table of @cap slots.  Returns MPI_SUCCESS or MPI_ERR_NO_MEM. */
static int reg_rehash(pb_mpi_registry_t *reg, size_t cap)
{
    uintptr_t *keys = calloc(cap, sizeof(*keys));
    size_t i, j;

    if (keys == NULL)
        return MPI_ERR_NO_MEM;
    for (i = 0; i < reg->cap; i++) {
        if (reg->keys[i] == REG_FREE || reg->keys[i] == REG_DELETED)
            continue;
        for (j = reg_slot(reg->keys[i], cap); keys[j] != REG_FREE; j = (j + 1) & (cap - 1))
            ;
        keys[j] = reg->keys[i];
    }
    free(reg->keys);
    reg->keys = keys;
    reg->cap = cap;
    reg->used = reg->live;
    return MPI_SUCCESS;
}

/* Store @obj in the first free entry of objs; its index in *@index_p. */
static int reg_take_index(pb_mpi_registry_t *reg, void *obj, size_t *index_p)
{
    size_t i;

    for (i = reg->first_free; i < reg->nobjs && reg->objs[i] != NULL; i++)
        ;
    if (i == reg->nobjs) {
        if (reg->nobjs >= (size_t)INT_MAX - PB_MPI_HANDLE_INT_BASE)
            return MPI_ERR_NO_MEM;
        if (reg->nobjs == reg->objs_cap) {
            size_t cap = reg->objs_cap ? reg->objs_cap * 2 : 64;
            void **objs = realloc(reg->objs, cap * sizeof(*objs));

            if (objs == NULL)
                return MPI_ERR_NO_MEM;
            reg->objs = objs;
            reg->objs_cap = cap;
        }
        reg->nobjs++;
    }
    reg->objs[i] = obj;
    reg->first_free = i + 1;
    *index_p = i;
    return MPI_SUCCESS;
}

int pb_mpi_registry_add(pb_mpi_registry_t *reg, void *obj, int *int_p)
{
    uintptr_t key = (uintptr_t)obj;
    size_t i, index;
    int ret = MPI_SUCCESS;

    pthread_mutex_lock(&reg->lock);
    if ((reg->used + 1) * 2 > reg->cap) {
        size_t cap = reg->cap ? reg->cap : 64;

        while ((reg->live + 1) * 4 > cap)
            cap *= 2;
        ret = reg_rehash(reg, cap);
        if (ret != MPI_SUCCESS)
            goto out;
    }
    ret = reg_take_index(reg, obj, &index);
    if (ret != MPI_SUCCESS)
        goto out;
    for (i = reg_slot(key, reg->cap); reg->keys[i] != REG_FREE && reg->keys[i] != REG_DELETED;
         i = (i + 1) & (reg->cap - 1))
        ;
    if (reg->keys[i] == REG_FREE)
        reg->used++;
    reg->keys[i] = key;
    reg->live++;
    *int_p = (int)(PB_MPI_HANDLE_INT_BASE + index);
out:
    pthread_mutex_unlock(&reg->lock);
    return ret;
}

/* The slot of @key in @reg, or (size_t)-1.  Called with the lock held. */
static size_t reg_find(const pb_mpi_registry_t *reg, uintptr_t key)
{
    size_t i;

    if (reg->cap == 0 || key == REG_FREE || key == REG_DELETED)
        return (size_t)-1;
    for (i = reg_slot(key, reg->cap); reg->keys[i] != REG_FREE; i = (i + 1) & (reg->cap - 1)) {
        if (reg->keys[i] == key)
            return i;
    }
    return (size_t)-1;
}

void pb_mpi_registry_remove(pb_mpi_registry_t *reg, void *obj, int handle_int)
{
    size_t i, index = (size_t)handle_int - PB_MPI_HANDLE_INT_BASE;

    pthread_mutex_lock(&reg->lock);
    i = reg_find(reg, (uintptr_t)obj);
    if (i != (size_t)-1) {
        reg->keys[i] = REG_DELETED;
        reg->live--;
    }
    if (index < reg->nobjs && reg->objs[index] == obj) {
        reg->objs[index] = NULL;
        if (index < reg->first_free)
            reg->first_free = index;
    }
    pthread_mutex_unlock(&reg->lock);
}

int pb_mpi_registry_has(pb_mpi_registry_t *reg, const void *obj)
{
    int found;

    pthread_mutex_lock(&reg->lock);
    found = reg_find(reg, (uintptr_t)obj) != (size_t)-1;
    pthread_mutex_unlock(&reg->lock);
    return found;
}

void *pb_mpi_registry_at(pb_mpi_registry_t *reg, int handle_int)
{
    void *obj = NULL;
    size_t index = (size_t)handle_int - PB_MPI_HANDLE_INT_BASE;

    if (handle_int < PB_MPI_HANDLE_INT_BASE)
        return NULL;
    pthread_mutex_lock(&reg->lock);
    if (index < reg->nobjs)
        obj = reg->objs[index];
    pthread_mutex_unlock(&reg->lock);
    return obj;
}

static pb_mpi_registry_t type_registry = PB_MPI_REGISTRY_INIT;

/* ---- the predefined datatypes ---------------------------------------------------------- */

typedef struct {
    uintptr_t value;   /* the ABI handle value */
    const char *name;  /* as the standard spells it */
    pb_basic_t basic;  /* the kind reductions see */
    size_t size;       /* sizeof the C type (the extent) */
    int align;         /* its alignment */
    size_t value_size; /* pair types: sizeof the value; 0 otherwise */
    size_t index_off;  /* pair types: offsetof the int index */
} pb_predef_desc_t;

#define PB_BASIC_DESC(handle, ctype, kind)                                                         \
    {                                                                                              \
        (uintptr_t)(handle), #handle, kind, sizeof(ctype), alignof(ctype), 0, 0                    \
    }
#define PB_PAIR_DESC(handle, stype, vtype, kind)                                                   \
    {                                                                                              \
        (uintptr_t)(handle), #handle, kind, sizeof(stype), alignof(stype), sizeof(vtype),          \
            offsetof(stype, i)                                                                     \
    }

/* Every datatype of the ABI header but the Fortran ones.  For each kind the
 * first entry is the one pb_mpi_type_of_basic returns (the C types come
 * before their C++ twins). */
static const pb_predef_desc_t predef_descs[] = {
    PB_BASIC_DESC(MPI_AINT, MPI_Aint, PB_BASIC_AINT),
    PB_BASIC_DESC(MPI_COUNT, MPI_Count, PB_BASIC_COUNT),
    PB_BASIC_DESC(MPI_OFFSET, MPI_Offset, PB_BASIC_OFFSET),
    PB_BASIC_DESC(MPI_PACKED, unsigned char, PB_BASIC_NONE),
    PB_BASIC_DESC(MPI_SHORT, short, PB_BASIC_SHORT),
    PB_BASIC_DESC(MPI_INT, int, PB_BASIC_INT),
    PB_BASIC_DESC(MPI_LONG, long, PB_BASIC_LONG),
    PB_BASIC_DESC(MPI_LONG_LONG, long long, PB_BASIC_LONG_LONG),
    PB_BASIC_DESC(MPI_UNSIGNED_SHORT, unsigned short, PB_BASIC_UNSIGNED_SHORT),
    PB_BASIC_DESC(MPI_UNSIGNED, unsigned, PB_BASIC_UNSIGNED),
    PB_BASIC_DESC(MPI_UNSIGNED_LONG, unsigned long, PB_BASIC_UNSIGNED_LONG),
    PB_BASIC_DESC(MPI_UNSIGNED_LONG_LONG, unsigned long long, PB_BASIC_UNSIGNED_LONG_LONG),
    PB_BASIC_DESC(MPI_FLOAT, float, PB_BASIC_FLOAT),
    PB_BASIC_DESC(MPI_C_FLOAT_COMPLEX, float _Complex, PB_BASIC_C_FLOAT_COMPLEX),
    PB_BASIC_DESC(MPI_CXX_FLOAT_COMPLEX, float _Complex, PB_BASIC_C_FLOAT_COMPLEX),
    PB_BASIC_DESC(MPI_DOUBLE, double, PB_BASIC_DOUBLE),
    PB_BASIC_DESC(MPI_C_DOUBLE_COMPLEX, double _Complex, PB_BASIC_C_DOUBLE_COMPLEX),
    PB_BASIC_DESC(MPI_CXX_DOUBLE_COMPLEX, double _Complex, PB_BASIC_C_DOUBLE_COMPLEX),
    PB_BASIC_DESC(MPI_LONG_DOUBLE, long double, PB_BASIC_LONG_DOUBLE),
    PB_BASIC_DESC(MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex, PB_BASIC_C_LONG_DOUBLE_COMPLEX),
    PB_BASIC_DESC(MPI_CXX_LONG_DOUBLE_COMPLEX, long double _Complex,
                  PB_BASIC_C_LONG_DOUBLE_COMPLEX),
    PB_PAIR_DESC(MPI_FLOAT_INT, pb_float_int_t, float, PB_BASIC_FLOAT_INT),
    PB_PAIR_DESC(MPI_DOUBLE_INT, pb_double_int_t, double, PB_BASIC_DOUBLE_INT),
    PB_PAIR_DESC(MPI_LONG_INT, pb_long_int_t, long, PB_BASIC_LONG_INT),
    PB_PAIR_DESC(MPI_2INT, pb_2int_t, int, PB_BASIC_2INT),
    PB_PAIR_DESC(MPI_SHORT_INT, pb_short_int_t, short, PB_BASIC_SHORT_INT),
    PB_PAIR_DESC(MPI_LONG_DOUBLE_INT, pb_long_double_int_t, long double, PB_BASIC_LONG_DOUBLE_INT),
    PB_BASIC_DESC(MPI_C_BOOL, _Bool, PB_BASIC_C_BOOL),
    PB_BASIC_DESC(MPI_CXX_BOOL, _Bool, PB_BASIC_C_BOOL),
    PB_BASIC_DESC(MPI_WCHAR, wchar_t, PB_BASIC_WCHAR),
    PB_BASIC_DESC(MPI_INT8_T, int8_t, PB_BASIC_INT8),
    PB_BASIC_DESC(MPI_UINT8_T, uint8_t, PB_BASIC_UINT8),
    PB_BASIC_DESC(MPI_CHAR, char, PB_BASIC_CHAR),
    PB_BASIC_DESC(MPI_SIGNED_CHAR, signed char, PB_BASIC_SIGNED_CHAR),
    PB_BASIC_DESC(MPI_UNSIGNED_CHAR, unsigned char, PB_BASIC_UNSIGNED_CHAR),
    PB_BASIC_DESC(MPI_BYTE, unsigned char, PB_BASIC_BYTE),
    PB_BASIC_DESC(MPI_INT16_T, int16_t, PB_BASIC_INT16),
    PB_BASIC_DESC(MPI_UINT16_T, uint16_t, PB_BASIC_UINT16),
    PB_BASIC_DESC(MPI_INT32_T, int32_t, PB_BASIC_INT32),
    PB_BASIC_DESC(MPI_UINT32_T, uint32_t, PB_BASIC_UINT32),
    PB_BASIC_DESC(MPI_INT64_T, int64_t, PB_BASIC_INT64),
    PB_BASIC_DESC(MPI_UINT64_T, uint64_t, PB_BASIC_UINT64),
};

/* Datatype handles are 0x200-0x3ff; the C ones all lie below 0x300. */
#define PREDEF_FIRST 0x200
#define PREDEF_SPAN 0x100

static pb_datatype_t predef[PB_ARRAY_SIZE(predef_descs)];
static pb_datatype_t *predef_by_value[PREDEF_SPAN];
static pb_datatype_t *predef_by_kind[PB_BASIC_COUNT_OF];
static pthread_once_t predef_once = PTHREAD_ONCE_INIT;

static void predef_init_one(pb_datatype_t *t, const pb_predef_desc_t *d)
{
    t->predefined = 1;
    t->committed = 1;
    t->has_entries = 1;
    t->combiner = MPI_COMBINER_NAMED;
    t->basic = d->basic;
    t->align = d->align;
    t->lb = 0;
    t->ub = (MPI_Aint)d->size;
    t->handle_int = (int)d->value;
    t->segs = t->own_segs;
    if (d->value_size == 0) {
        t->size = d->size;
        t->nelems = 1;
        t->own_segs[0] = (pb_seg_t){.off = 0, .stride = 0, .len = d->size, .count = 1};
        t->nsegs = 1;
    } else {
        t->value_size = d->value_size;
        t->size = d->value_size + sizeof(int);
        t->nelems = 2;
        t->own_segs[0] = (pb_seg_t){.off = 0, .stride = 0, .len = d->value_size, .count = 1};
        if (d->index_off == d->value_size) {
            t->own_segs[0].len = t->size;
            t->nsegs = 1;
        } else {
            t->own_segs[1] = (pb_seg_t){.off = (MPI_Aint)d->index_off,
                                        .stride = 0,
                                        .len = sizeof(int),
                                        .count = 1,
                                        .pos = d->value_size};
            t->nsegs = 2;
        }
    }
    t->true_lb = 0;
    t->true_ub = t->segs[t->nsegs - 1].off + (MPI_Aint)t->segs[t->nsegs - 1].len;
    t->contiguous = t->nsegs == 1 && t->size == d->size;
    atomic_init(&t->refs, 1);
    snprintf(t->name, sizeof(t->name), "%s", d->name);
}

static void predef_init(void)
{
    size_t i;

    for (i = 0; i < PB_ARRAY_SIZE(predef_descs); i++) {
        const pb_predef_desc_t *d = &predef_descs[i];

        predef_init_one(&predef[i], d);
        predef_by_value[d->value - PREDEF_FIRST] = &predef[i];
        if (d->basic != PB_BASIC_NONE && predef_by_kind[d->basic] == NULL)
            predef_by_kind[d->basic] = &predef[i];
    }
}

pb_datatype_t *pb_mpi_datatype(MPI_Datatype handle)
{
    uintptr_t value = (uintptr_t)handle;

    if (value < PB_MPI_HANDLE_INT_BASE) {
        if (value < PREDEF_FIRST || value >= PREDEF_FIRST + PREDEF_SPAN)
            return NULL;
        pthread_once(&predef_once, predef_init);
        return predef_by_value[value - PREDEF_FIRST];
    }
    if (!pb_mpi_registry_has(&type_registry, handle))
        return NULL;
    return (pb_datatype_t *)handle;
}

pb_datatype_t *pb_mpi_type_of_basic(pb_basic_t kind)
{
    if ((unsigned)kind >= PB_BASIC_COUNT_OF)
        return NULL;
    pthread_once(&predef_once, predef_init);
    return predef_by_kind[kind];
}

int pb_mpi_datatype_check(MPI_Datatype handle)
{
    pb_datatype_t *t = pb_mpi_datatype(handle);

    if (t == NULL || !t->committed)
        return MPI_ERR_TYPE;
    return MPI_SUCCESS;
}

size_t pb_mpi_type_size(const pb_datatype_t *t)
{
    return t->size;
}

MPI_Aint pb_mpi_type_extent(const pb_datatype_t *t)
{
    return t->ub - t->lb;
}

int pb_mpi_type_is_contiguous(const pb_datatype_t *t)
{
    return t->contiguous;
}

MPI_Aint pb_mpi_type_true_lb(const pb_datatype_t *t)
{
    return t->true_lb;
}

pb_basic_t pb_mpi_type_basic(const pb_datatype_t *t)
{
    return t->basic;
}

int pb_mpi_type_is_committed(const pb_datatype_t *t)
{
    return t->committed;
}

void pb_mpi_type_retain(pb_datatype_t *t)
{
    if (!t->predefined)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

void pb_mpi_type_release(pb_datatype_t *t)
{
    size_t i;

    if (t->predefined)
        return;
    /* acq_rel: the last releaser sees every write of the others */
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (i = 0; i < t->nparts; i++)
        pb_mpi_type_release(t->parts[i].type);
    free(t->parts);
    free(t->segs);
    free(t);
}

/* ---- elements ------------------------------------------------------------------------------ */

/* Basic elements in the first @rem bytes (< size) of an element of @t, or
 * MPI_UNDEFINED when they end inside a basic element. */
static MPI_Count type_partial_elements(const pb_datatype_t *t, size_t rem)
{
    MPI_Count n = 0;
    size_t i;

    if (rem == 0)
        return 0;
    if (t->predefined)
        return t->value_size != 0 && rem == t->value_size ? 1 : MPI_UNDEFINED;
    for (i = 0; i < t->nparts; i++) {
        const pb_datatype_t *part = t->parts[i].type;
        size_t bytes = (size_t)t->parts[i].n * part->size;
        MPI_Count in_part;

        if (rem >= bytes) {
            n += t->parts[i].n * part->nelems;
            rem -= bytes;
            continue;
        }
        in_part = type_partial_elements(part, rem % part->size);
        if (in_part == MPI_UNDEFINED)
            return MPI_UNDEFINED;
        return n + (MPI_Count)(rem / part->size) * part->nelems + in_part;
    }
    return rem == 0 ? n : MPI_UNDEFINED;
}

MPI_Count pb_mpi_type_elements(const pb_datatype_t *t, size_t bytes)
{
    MPI_Count partial;

    if (t->size == 0)
        return 0;
    partial = type_partial_elements(t, bytes % t->size);
    if (partial == MPI_UNDEFINED)
        return MPI_UNDEFINED;
    return (MPI_Count)(bytes / t->size) * t->nelems + partial;
}

/* ---- pack and unpack ----------------------------------------------------------------------- */

/* The segment of @t that holds packed byte @in (< size) of an element. */
static size_t seg_find(const pb_datatype_t *t, size_t in)
{
    size_t lo = 0, hi = t->nsegs - 1;

    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;

        if (t->segs[mid].pos <= in)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Copy @n bytes; the usual small block sizes get a fixed-size copy. */
static inline __attribute__((always_inline)) void copy_block(void *dst, const void *src, size_t n)
{
    switch (n) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    case 16: memcpy(dst, src, 16); break;
    default: memcpy(dst, src, n); break;
    }
}

/* Move packed bytes [@offset, @offset + @len) of the elements of @t at
 * address @user to @packed (@unpack 0) or from it (@unpack 1).  Addresses
 * are computed as integers: @user may be MPI_BOTTOM with absolute
 * displacements. */
static inline __attribute__((always_inline)) void type_walk(uintptr_t user, const pb_datatype_t *t,
                                                            size_t offset, char *packed, size_t len,
                                                            const int unpack)
{
    const MPI_Aint extent = t->ub - t->lb;
    size_t elem = offset / t->size;
    size_t in = offset % t->size;
    size_t s = seg_find(t, in);
    const pb_seg_t *seg = &t->segs[s];
    size_t k = (in - seg->pos) / seg->len;
    size_t r = (in - seg->pos) % seg->len;
    uintptr_t base = user + (uintptr_t)((MPI_Aint)elem * extent);
    size_t i;

    while (len > 0) {
        if (s == 0 && k == 0 && r == 0 && len >= t->size) {
            /* whole elements */
            do {
                for (i = 0; i < t->nsegs; i++) {
                    const pb_seg_t *e = &t->segs[i];
                    uintptr_t blk = base + (uintptr_t)e->off;

                    for (k = 0; k < e->count; k++, blk += (uintptr_t)e->stride) {
                        if (unpack)
                            copy_block((char *)blk, packed, e->len);
                        else
                            copy_block(packed, (const char *)blk, e->len);
                        packed += e->len;
                    }
                }
                base += (uintptr_t)extent;
                len -= t->size;
            } while (len >= t->size);
            k = 0;
            continue;
        }
        if (r == 0 && len >= seg->len) {
            /* whole blocks */
            do {
                uintptr_t blk = base + (uintptr_t)seg->off + (uintptr_t)((MPI_Aint)k * seg->stride);

                if (unpack)
                    copy_block((char *)blk, packed, seg->len);
                else
                    copy_block(packed, (const char *)blk, seg->len);
                packed += seg->len;
                len -= seg->len;
                k++;
            } while (k < seg->count && len >= seg->len);
        } else {
            /* the range starts or ends inside this block */
            uintptr_t blk = base + (uintptr_t)seg->off + (uintptr_t)((MPI_Aint)k * seg->stride);
            size_t n = seg->len - r < len ? seg->len - r : len;

            if (unpack)
                memcpy((char *)(blk + r), packed, n);
            else
                memcpy(packed, (const char *)(blk + r), n);
            packed += n;
            len -= n;
            r += n;
            if (r < seg->len)
                break; /* len is 0 */
            r = 0;
            k++;
        }
        if (k == seg->count) {
            k = 0;
            if (++s == t->nsegs) {
                s = 0;
                base += (uintptr_t)extent;
            }
            seg = &t->segs[s];
        }
    }
}

void pb_mpi_pack_range(const void *buf, MPI_Count count, const pb_datatype_t *t, size_t offset,
                       void *dst, size_t len)
{
    (void)count;
    if (len == 0)
        return;
    if (t->contiguous) {
        memcpy(dst, (const char *)((uintptr_t)buf + (uintptr_t)t->true_lb + offset), len);
        return;
    }
    type_walk((uintptr_t)buf, t, offset, dst, len, 0);
}

void pb_mpi_unpack_range(const void *src, size_t len, void *buf, MPI_Count count,
                         const pb_datatype_t *t, size_t offset)
{
    (void)count;
    if (len == 0)
        return;
    if (t->contiguous) {
        memcpy((char *)((uintptr_t)buf + (uintptr_t)t->true_lb + offset), src, len);
        return;
    }
    type_walk((uintptr_t)buf, t, offset, (char *)src, len, 1);
}

/* ---- building created types ---------------------------------------------------------------- */

typedef struct {
    pb_datatype_t *t;
    size_t segs_cap;
    size_t parts_cap;
    MPI_Aint data_lo, data_hi; /* bounds of the entries without markers */
    MPI_Aint mark_lo, mark_hi; /* bounds set by markers */
    MPI_Aint true_lo, true_hi; /* bytes of data */
    int has_data, has_marks, has_true, has_basic;
    int status; /* MPI_SUCCESS, MPI_ERR_NO_MEM, or MPI_ERR_ARG: too large */
} pb_builder_t;

static int builder_begin(pb_builder_t *b, int combiner)
{
    memset(b, 0, sizeof(*b));
    b->t = calloc(1, sizeof(*b->t));
    if (b->t == NULL)
        return MPI_ERR_NO_MEM;
    b->t->combiner = combiner;
    b->t->basic = PB_BASIC_NONE;
    b->t->align = 1;
    atomic_init(&b->t->refs, 1);
    return MPI_SUCCESS;
}

static MPI_Aint builder_add_aint(pb_builder_t *b, MPI_Aint x, MPI_Aint y)
{
    MPI_Aint r;

    if (__builtin_add_overflow(x, y, &r))
        b->status = MPI_ERR_ARG;
    return r;
}

/* Append @count blocks of @len bytes at @off, @off + @stride, ... to the
 * flattened type map, merging with the last segment where possible. */
static void builder_seg(pb_builder_t *b, MPI_Aint off, size_t len, MPI_Aint stride, size_t count)
{
    pb_datatype_t *t = b->t;
    pb_seg_t *last = t->nsegs ? &t->segs[t->nsegs - 1] : NULL;

    if (count > 1 && stride == (MPI_Aint)len) {
        len *= count;
        count = 1;
    }
    if (last != NULL && count == 1) {
        if (last->count == 1 && last->off + (MPI_Aint)last->len == off) {
            last->len += len;
            return;
        }
        if (last->len == len && last->count == 1) {
            last->stride = off - last->off;
            last->count = 2;
            return;
        }
        if (last->len == len && off == last->off + (MPI_Aint)last->count * last->stride) {
            last->count++;
            return;
        }
    } else if (last != NULL && last->len == len) {
        if (last->count == 1 && off - last->off == stride) {
            last->stride = stride;
            last->count = count + 1;
            return;
        }
        if (last->count > 1 && last->stride == stride &&
            off == last->off + (MPI_Aint)last->count * stride) {
            last->count += count;
            return;
        }
    }
    if (t->nsegs == b->segs_cap) {
        size_t cap = b->segs_cap ? b->segs_cap * 2 : 4;
        pb_seg_t *segs = realloc(t->segs, cap * sizeof(*segs));

        if (segs == NULL) {
            b->status = MPI_ERR_NO_MEM;
            return;
        }
        t->segs = segs;
        b->segs_cap = cap;
    }
    t->segs[t->nsegs++] = (pb_seg_t){.off = off, .stride = stride, .len = len, .count = count};
}

static void builder_part(pb_builder_t *b, pb_datatype_t *c, MPI_Count n)
{
    pb_datatype_t *t = b->t;

    if (t->nparts > 0 && t->parts[t->nparts - 1].type == c) {
        t->parts[t->nparts - 1].n += n;
        return;
    }
    if (t->nparts == b->parts_cap) {
        size_t cap = b->parts_cap ? b->parts_cap * 2 : 4;
        pb_part_t *parts = realloc(t->parts, cap * sizeof(*parts));

        if (parts == NULL) {
            b->status = MPI_ERR_NO_MEM;
            return;
        }
        t->parts = parts;
        b->parts_cap = cap;
    }
    pb_mpi_type_retain(c);
    t->parts[t->nparts++] = (pb_part_t){.type = c, .n = n};
}

/* The bounds of @n consecutive elements of @c, the first @disp bytes from
 * the new type's origin, the next ones an extent of @c apart. */
static void builder_bounds(pb_builder_t *b, MPI_Aint disp, const pb_datatype_t *c, MPI_Count n)
{
    MPI_Aint ext = c->ub - c->lb, span, last, lo, hi, l, h;

    if (__builtin_mul_overflow(ext, n - 1, &span) || __builtin_add_overflow(disp, span, &last)) {
        b->status = MPI_ERR_ARG;
        return;
    }
    lo = disp < last ? disp : last;
    hi = disp < last ? last : disp;
    l = builder_add_aint(b, lo, c->lb);
    h = builder_add_aint(b, hi, c->ub);
    if (c->sticky) {
        b->mark_lo = b->has_marks && b->mark_lo < l ? b->mark_lo : l;
        b->mark_hi = b->has_marks && b->mark_hi > h ? b->mark_hi : h;
        b->has_marks = 1;
    } else {
        b->data_lo = b->has_data && b->data_lo < l ? b->data_lo : l;
        b->data_hi = b->has_data && b->data_hi > h ? b->data_hi : h;
        b->has_data = 1;
    }
    if (c->size == 0)
        return;
    l = builder_add_aint(b, lo, c->true_lb);
    h = builder_add_aint(b, hi, c->true_ub);
    b->true_lo = b->has_true && b->true_lo < l ? b->true_lo : l;
    b->true_hi = b->has_true && b->true_hi > h ? b->true_hi : h;
    b->has_true = 1;
}

/* Account @n more elements of @c (of size > 0): size, basic elements,
 * alignment, kind, parts.  Returns 0 when the size overflows. */
static int builder_count(pb_builder_t *b, pb_datatype_t *c, MPI_Count n)
{
    pb_datatype_t *t = b->t;
    MPI_Count bytes, elems;

    if (__builtin_mul_overflow(n, (MPI_Count)c->size, &bytes) ||
        __builtin_add_overflow(t->size, (size_t)bytes, &t->size) ||
        (MPI_Count)t->size > (MPI_Count)PTRDIFF_MAX ||
        __builtin_mul_overflow(n, c->nelems, &elems) ||
        __builtin_add_overflow(t->nelems, elems, &t->nelems)) {
        b->status = MPI_ERR_ARG;
        return 0;
    }
    if (c->align > t->align)
        t->align = c->align;
    if (!b->has_basic)
        t->basic = c->basic;
    else if (t->basic != c->basic)
        t->basic = PB_BASIC_NONE;
    b->has_basic = 1;
    builder_part(b, c, n);
    return b->status == MPI_SUCCESS;
}

/* Add @n consecutive elements of @c, the first @disp bytes from the new
 * type's origin, the next ones an extent of @c apart. */
static void builder_add(pb_builder_t *b, MPI_Aint disp, pb_datatype_t *c, MPI_Count n)
{
    MPI_Aint ext = c->ub - c->lb;
    size_t j, i;

    if (b->status != MPI_SUCCESS || n == 0 || !c->has_entries)
        return;
    builder_bounds(b, disp, c, n);
    if (b->status != MPI_SUCCESS || c->size == 0 || !builder_count(b, c, n))
        return;
    if (c->contiguous) {
        builder_seg(b, disp + c->true_lb, (size_t)n * c->size, 0, 1);
    } else if (c->nsegs == 1 && c->segs[0].count == 1) {
        builder_seg(b, disp + c->segs[0].off, c->segs[0].len, ext, (size_t)n);
    } else {
        for (j = 0; j < (size_t)n && b->status == MPI_SUCCESS; j++) {
            MPI_Aint base = disp + (MPI_Aint)j * ext;

            for (i = 0; i < c->nsegs; i++)
                builder_seg(b, base + c->segs[i].off, c->segs[i].len, c->segs[i].stride,
                            c->segs[i].count);
        }
    }
}

/* Add @count groups of @n consecutive elements of @c, the groups @step
 * bytes apart (a vector): one segment when @c is contiguous, whatever
 * @count. */
static void builder_add_groups(pb_builder_t *b, MPI_Aint step, MPI_Count count, pb_datatype_t *c,
                               MPI_Count n)
{
    MPI_Aint last;
    MPI_Count total;
    MPI_Count i;

    if (b->status != MPI_SUCCESS || count == 0 || n == 0 || !c->has_entries)
        return;
    if (__builtin_mul_overflow(step, count - 1, &last) ||
        __builtin_mul_overflow(n, count, &total)) {
        b->status = MPI_ERR_ARG;
        return;
    }
    if (!c->contiguous || c->size == 0) {
        for (i = 0; i < count && b->status == MPI_SUCCESS; i++)
            builder_add(b, step * (MPI_Aint)i, c, n);
        return;
    }
    builder_bounds(b, 0, c, n);
    builder_bounds(b, last, c, n);
    if (b->status != MPI_SUCCESS || !builder_count(b, c, total))
        return;
    builder_seg(b, c->true_lb, (size_t)n * c->size, step, (size_t)count);
}

static void builder_abandon(pb_builder_t *b)
{
    if (b->t == NULL)
        return;
    atomic_store(&b->t->refs, 1);
    pb_mpi_type_release(b->t);
    b->t = NULL;
}

/* Finish the type: bounds (with a struct's alignment padding when
 * @pad_to_align), packed positions, registration.  On success the new
 * handle is in *@newtype; on failure everything is freed. */
static int builder_end(pb_builder_t *b, int pad_to_align, MPI_Datatype *newtype)
{
    pb_datatype_t *t = b->t;
    size_t i, pos = 0;
    int ret = b->status;

    if (ret != MPI_SUCCESS)
        goto err_free;
    t->has_entries = b->has_data || b->has_marks;
    if (b->has_marks) {
        t->sticky = 1;
        t->lb = b->mark_lo;
        t->ub = b->mark_hi;
    } else if (b->has_data) {
        t->lb = b->data_lo;
        t->ub = b->data_hi;
    }
    if (b->has_true) {
        t->true_lb = b->true_lo;
        t->true_ub = b->true_hi;
    }
    if (pad_to_align && !t->sticky && t->align > 1 && t->ub > t->lb) {
        MPI_Aint rem = (t->ub - t->lb) % t->align;

        if (rem != 0)
            t->ub += t->align - rem;
    }
    for (i = 0; i < t->nsegs; i++) {
        t->segs[i].pos = pos;
        pos += t->segs[i].len * t->segs[i].count;
    }
    t->contiguous = t->size == 0 ||
                    (t->nsegs == 1 && t->segs[0].count == 1 && t->ub - t->lb == (MPI_Aint)t->size);
    ret = pb_mpi_registry_add(&type_registry, t, &t->handle_int);
    if (ret != MPI_SUCCESS)
        goto err_free;
    *newtype = (MPI_Datatype)t;
    b->t = NULL;
    return MPI_SUCCESS;

err_free:
    builder_abandon(b);
    return ret;
}

/* ---- argument checks ------------------------------------------------------------------------ */

/* The datatype @handle (argument @what of @func) or a raised MPI_ERR_TYPE. */
static int type_arg(MPI_Datatype handle, const char *func, const char *what, pb_datatype_t **t_p)
{
    uintptr_t value = (uintptr_t)handle;

    *t_p = pb_mpi_datatype(handle);
    if (*t_p != NULL)
        return MPI_SUCCESS;
    if (handle == MPI_DATATYPE_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func, "%s is MPI_DATATYPE_NULL", what);
    if (value >= PREDEF_FIRST && value < PREDEF_FIRST + 2 * PREDEF_SPAN)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                            "%s (0x%x) is no datatype Postbox supports (the Fortran ones are not)",
                            what, (unsigned)value);
    return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                        "%s (%p) is not a datatype (freed, or never created)", what,
                        (void *)handle);
}

/* Like type_arg, and the type must be committed (for data movement). */
static int type_arg_committed(MPI_Datatype handle, const char *func, const char *what,
                              pb_datatype_t **t_p)
{
    int ret = type_arg(handle, func, what, t_p);

    if (ret != MPI_SUCCESS)
        return ret;
    if (!(*t_p)->committed)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                            "%s is not committed (call MPI_Type_commit first)", what);
    return MPI_SUCCESS;
}

static int count_arg(MPI_Count count, const char *func, const char *what)
{
    if (count < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "%s %lld is negative", what,
                            (long long)count);
    return MPI_SUCCESS;
}

static int ptr_arg(const void *p, const char *func, const char *what)
{
    if (p == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "%s is NULL", what);
    return MPI_SUCCESS;
}

static int build_error(int ret, const char *func)
{
    if (ret == MPI_ERR_NO_MEM)
        return pb_mpi_raise(MPI_COMM_NULL, ret, func, "out of memory for the new datatype");
    return pb_mpi_raise(MPI_COMM_NULL, ret, func,
                        "the new datatype's size, extent or displacements overflow");
}

/* Array arguments come as int, MPI_Aint or MPI_Count arrays. */
typedef enum {
    ARR_INT,
    ARR_AINT,
    ARR_COUNT
} pb_arr_kind_t;

static MPI_Count arr_get(const void *arr, pb_arr_kind_t kind, MPI_Count i)
{
    switch (kind) {
    case ARR_INT: return ((const int *)arr)[i];
    case ARR_AINT: return ((const MPI_Aint *)arr)[i];
    default: return ((const MPI_Count *)arr)[i];
    }
}

/* ---- the constructors ---------------------------------------------------------------------- */

/* The vector family: @count blocks of @blocklen elements of @oldtype, the
 * block starts @stride apart (in elements of oldtype's extent when
 * @stride_in_elements, otherwise in bytes). */
static int type_vector(const char *func, int combiner, MPI_Count count, MPI_Count blocklen,
                       MPI_Count stride, int stride_in_elements, MPI_Datatype oldtype,
                       MPI_Datatype *newtype)
{
    pb_datatype_t *old;
    pb_builder_t b;
    MPI_Aint step;
    MPI_Count elems;
    int ret;

    if ((ret = count_arg(count, func, "count")) != MPI_SUCCESS)
        return ret;
    if (blocklen < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "blocklength %lld is negative",
                            (long long)blocklen);
    if ((ret = type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    step = (MPI_Aint)stride;
    if (stride_in_elements && __builtin_mul_overflow((MPI_Aint)stride, old->ub - old->lb, &step))
        return build_error(MPI_ERR_ARG, func);
    if (__builtin_mul_overflow(count, blocklen, &elems) ||
        __builtin_mul_overflow(elems, (MPI_Count)old->size, &elems) || elems > PTRDIFF_MAX)
        return build_error(MPI_ERR_ARG, func);
    if ((ret = builder_begin(&b, combiner)) != MPI_SUCCESS)
        return build_error(ret, func);
    builder_add_groups(&b, step, count, old, blocklen);
    ret = builder_end(&b, 0, newtype);
    return ret == MPI_SUCCESS ? ret : build_error(ret, func);
}

/* The indexed family: block i is @blocklens[i] (or @blocklen when
 * @blocklens is NULL) elements of @oldtype at @displs[i], in elements of
 * oldtype's extent when @displs_in_elements, otherwise in bytes. */
static int type_indexed(const char *func, int combiner, MPI_Count count, const void *blocklens,
                        MPI_Count blocklen, const void *displs, pb_arr_kind_t kind,
                        int displs_in_elements, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    pb_datatype_t *old;
    pb_builder_t b;
    MPI_Count i;
    int ret;

    if ((ret = count_arg(count, func, "count")) != MPI_SUCCESS)
        return ret;
    if (count > 0 && blocklens == NULL && blocklen < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "blocklength %lld is negative",
                            (long long)blocklen);
    if (count > 0 && displs == NULL)
        return ptr_arg(NULL, func, "array_of_displacements");
    for (i = 0; blocklens != NULL && i < count; i++) {
        if (arr_get(blocklens, kind, i) < 0)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "array_of_blocklengths[%lld] = %lld is negative", (long long)i,
                                (long long)arr_get(blocklens, kind, i));
    }
    if ((ret = type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if ((ret = builder_begin(&b, combiner)) != MPI_SUCCESS)
        return build_error(ret, func);
    for (i = 0; i < count && b.status == MPI_SUCCESS; i++) {
        MPI_Aint disp = (MPI_Aint)arr_get(displs, kind, i);

        if (displs_in_elements && __builtin_mul_overflow(disp, old->ub - old->lb, &disp))
            b.status = MPI_ERR_ARG;
        else
            builder_add(&b, disp, old, blocklens ? arr_get(blocklens, kind, i) : blocklen);
    }
    ret = builder_end(&b, 0, newtype);
    return ret == MPI_SUCCESS ? ret : build_error(ret, func);
}

static int type_struct(const char *func, MPI_Count count, const void *blocklens, const void *displs,
                       pb_arr_kind_t kind, const MPI_Datatype types[], MPI_Datatype *newtype)
{
    pb_builder_t b;
    MPI_Count i;
    int ret;

    if ((ret = count_arg(count, func, "count")) != MPI_SUCCESS)
        return ret;
    if (count > 0 && blocklens == NULL)
        return ptr_arg(NULL, func, "array_of_blocklengths");
    if (count > 0 && displs == NULL)
        return ptr_arg(NULL, func, "array_of_displacements");
    if (count > 0 && types == NULL)
        return ptr_arg(NULL, func, "array_of_types");
    for (i = 0; i < count; i++) {
        pb_datatype_t *t;
        char what[48];

        if (arr_get(blocklens, kind, i) < 0)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "array_of_blocklengths[%lld] = %lld is negative", (long long)i,
                                (long long)arr_get(blocklens, kind, i));
        snprintf(what, sizeof(what), "array_of_types[%lld]", (long long)i);
        if ((ret = type_arg(types[i], func, what, &t)) != MPI_SUCCESS)
            return ret;
    }
    if ((ret = ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if ((ret = builder_begin(&b, MPI_COMBINER_STRUCT)) != MPI_SUCCESS)
        return build_error(ret, func);
    /* in the MPI_Aint/MPI_Count forms the displacements are MPI_Aint sized;
     * the int form has int blocklengths and MPI_Aint displacements */
    for (i = 0; i < count && b.status == MPI_SUCCESS; i++) {
        MPI_Aint disp =
            kind == ARR_INT ? ((const MPI_Aint *)displs)[i] : (MPI_Aint)arr_get(displs, kind, i);

        builder_add(&b, disp, pb_mpi_datatype(types[i]), arr_get(blocklens, kind, i));
    }
    ret = builder_end(&b, 1, newtype);
    return ret == MPI_SUCCESS ? ret : build_error(ret, func);
}

/* A new datatype of @count contiguous elements of @oldtype.
 * @return MPI_SUCCESS; MPI_ERR_COUNT (count < 0), MPI_ERR_TYPE (oldtype),
 * MPI_ERR_ARG (newtype NULL, too large), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_contiguous_c(MPI_Count count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_vector("MPI_Type_contiguous", MPI_COMBINER_CONTIGUOUS, count < 0 ? count : 1,
                       count < 0 ? 0 : count, 0, 0, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_contiguous_c, PMPI_Type_contiguous_c);

/* MPI_Type_contiguous_c with an int count; same errors. */
PB_EXPORT int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return PMPI_Type_contiguous_c(count, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_contiguous, PMPI_Type_contiguous);

/* @count blocks of @blocklength elements of @oldtype, @stride elements
 * apart.  @return MPI_SUCCESS; MPI_ERR_COUNT (count < 0), MPI_ERR_ARG
 * (blocklength < 0, newtype NULL, too large), MPI_ERR_TYPE, MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_vector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                                 MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_vector("MPI_Type_vector", MPI_COMBINER_VECTOR, count, blocklength, stride, 1,
                       oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_vector_c, PMPI_Type_vector_c);

/* MPI_Type_vector_c with int arguments; same errors. */
PB_EXPORT int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                               MPI_Datatype *newtype)
{
    return type_vector("MPI_Type_vector", MPI_COMBINER_VECTOR, count, blocklength, stride, 1,
                       oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_vector, PMPI_Type_vector);

/* Like MPI_Type_vector_c with @stride in bytes; same errors. */
PB_EXPORT int PMPI_Type_create_hvector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                                         MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_vector("MPI_Type_create_hvector", MPI_COMBINER_HVECTOR, count, blocklength, stride,
                       0, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hvector_c, PMPI_Type_create_hvector_c);

/* MPI_Type_create_hvector_c with int counts; same errors. */
PB_EXPORT int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
                                       MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_vector("MPI_Type_create_hvector", MPI_COMBINER_HVECTOR, count, blocklength, stride,
                       0, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hvector, PMPI_Type_create_hvector);

/* Blocks of array_of_blocklengths[i] elements of @oldtype at
 * array_of_displacements[i] elements of its extent.  @return MPI_SUCCESS;
 * MPI_ERR_COUNT (count < 0), MPI_ERR_ARG (a NULL array, a negative
 * blocklength, newtype NULL, too large), MPI_ERR_TYPE, MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_indexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                  const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                  MPI_Datatype *newtype)
{
    if (count > 0 && array_of_blocklengths == NULL)
        return ptr_arg(NULL, "MPI_Type_indexed", "array_of_blocklengths");
    return type_indexed("MPI_Type_indexed", MPI_COMBINER_INDEXED, count, array_of_blocklengths, 0,
                        array_of_displacements, ARR_COUNT, 1, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_indexed_c, PMPI_Type_indexed_c);

/* MPI_Type_indexed_c with int arrays; same errors. */
PB_EXPORT int PMPI_Type_indexed(int count, const int array_of_blocklengths[],
                                const int array_of_displacements[], MPI_Datatype oldtype,
                                MPI_Datatype *newtype)
{
    if (count > 0 && array_of_blocklengths == NULL)
        return ptr_arg(NULL, "MPI_Type_indexed", "array_of_blocklengths");
    return type_indexed("MPI_Type_indexed", MPI_COMBINER_INDEXED, count, array_of_blocklengths, 0,
                        array_of_displacements, ARR_INT, 1, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_indexed, PMPI_Type_indexed);

/* Like MPI_Type_indexed_c with displacements in bytes; same errors. */
PB_EXPORT int PMPI_Type_create_hindexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                          const MPI_Count array_of_displacements[],
                                          MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    if (count > 0 && array_of_blocklengths == NULL)
        return ptr_arg(NULL, "MPI_Type_create_hindexed", "array_of_blocklengths");
    return type_indexed("MPI_Type_create_hindexed", MPI_COMBINER_HINDEXED, count,
                        array_of_blocklengths, 0, array_of_displacements, ARR_COUNT, 0, oldtype,
                        newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hindexed_c, PMPI_Type_create_hindexed_c);

/* MPI_Type_create_hindexed with int blocklengths and MPI_Aint
 * displacements; same errors. */
PB_EXPORT int PMPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                                        const MPI_Aint array_of_displacements[],
                                        MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *func = "MPI_Type_create_hindexed";
    pb_datatype_t *old;
    pb_builder_t b;
    int i, ret;

    if ((ret = count_arg(count, func, "count")) != MPI_SUCCESS)
        return ret;
    if (count > 0 && array_of_blocklengths == NULL)
        return ptr_arg(NULL, func, "array_of_blocklengths");
    if (count > 0 && array_of_displacements == NULL)
        return ptr_arg(NULL, func, "array_of_displacements");
    for (i = 0; i < count; i++) {
        if (array_of_blocklengths[i] < 0)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                                "array_of_blocklengths[%d] = %d is negative", i,
                                array_of_blocklengths[i]);
    }
    if ((ret = type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if ((ret = builder_begin(&b, MPI_COMBINER_HINDEXED)) != MPI_SUCCESS)
        return build_error(ret, func);
    for (i = 0; i < count; i++)
        builder_add(&b, array_of_displacements[i], old, array_of_blocklengths[i]);
    ret = builder_end(&b, 0, newtype);
    return ret == MPI_SUCCESS ? ret : build_error(ret, func);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hindexed, PMPI_Type_create_hindexed);

/* Blocks of @blocklength elements of @oldtype at array_of_displacements[i]
 * elements of its extent; errors as MPI_Type_indexed_c. */
PB_EXPORT int PMPI_Type_create_indexed_block_c(MPI_Count count, MPI_Count blocklength,
                                               const MPI_Count array_of_displacements[],
                                               MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_indexed_block", MPI_COMBINER_INDEXED_BLOCK, count, NULL,
                        blocklength, array_of_displacements, ARR_COUNT, 1, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_indexed_block_c, PMPI_Type_create_indexed_block_c);

/* MPI_Type_create_indexed_block_c with int arguments; same errors. */
PB_EXPORT int PMPI_Type_create_indexed_block(int count, int blocklength,
                                             const int array_of_displacements[],
                                             MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_indexed_block", MPI_COMBINER_INDEXED_BLOCK, count, NULL,
                        blocklength, array_of_displacements, ARR_INT, 1, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_indexed_block, PMPI_Type_create_indexed_block);

/* Like MPI_Type_create_indexed_block_c with displacements in bytes. */
PB_EXPORT int PMPI_Type_create_hindexed_block_c(MPI_Count count, MPI_Count blocklength,
                                                const MPI_Count array_of_displacements[],
                                                MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_hindexed_block", MPI_COMBINER_HINDEXED_BLOCK, count, NULL,
                        blocklength, array_of_displacements, ARR_COUNT, 0, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hindexed_block_c, PMPI_Type_create_hindexed_block_c);

/* MPI_Type_create_hindexed_block_c with an int count and MPI_Aint
 * displacements. */
PB_EXPORT int PMPI_Type_create_hindexed_block(int count, int blocklength,
                                              const MPI_Aint array_of_displacements[],
                                              MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return type_indexed("MPI_Type_create_hindexed_block", MPI_COMBINER_HINDEXED_BLOCK, count, NULL,
                        blocklength, array_of_displacements, ARR_AINT, 0, oldtype, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_hindexed_block, PMPI_Type_create_hindexed_block);

/* Blocks of array_of_blocklengths[i] elements of array_of_types[i] at byte
 * displacements array_of_displacements[i]; the extent is padded to the
 * largest alignment of the basic types inside (as C pads a struct) unless
 * a part was resized.  @return MPI_SUCCESS; MPI_ERR_COUNT (count < 0),
 * MPI_ERR_ARG (a NULL array, a negative blocklength, newtype NULL, too
 * large), MPI_ERR_TYPE (a bad type in the array), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_create_struct_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                        const MPI_Count array_of_displacements[],
                                        const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return type_struct("MPI_Type_create_struct", count, array_of_blocklengths,
                       array_of_displacements, ARR_COUNT, array_of_types, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_struct_c, PMPI_Type_create_struct_c);

/* MPI_Type_create_struct_c with int blocklengths and MPI_Aint
 * displacements; same errors. */
PB_EXPORT int PMPI_Type_create_struct(int count, const int array_of_blocklengths[],
                                      const MPI_Aint array_of_displacements[],
                                      const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return type_struct("MPI_Type_create_struct", count, array_of_blocklengths,
                       array_of_displacements, ARR_INT, array_of_types, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_struct, PMPI_Type_create_struct);

/* @oldtype with lower bound @lb and extent @extent (the type map of oldtype
 * with markers at lb and lb + extent).  @return MPI_SUCCESS; MPI_ERR_TYPE,
 * MPI_ERR_ARG (newtype NULL, lb + extent overflows), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_create_resized_c(MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                                         MPI_Datatype *newtype)
{
    const char *func = "MPI_Type_create_resized";
    pb_datatype_t *old;
    pb_builder_t b;
    MPI_Aint ub;
    int ret;

    if ((ret = type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if (lb < INTPTR_MIN || lb > INTPTR_MAX || extent < INTPTR_MIN || extent > INTPTR_MAX ||
        __builtin_add_overflow((MPI_Aint)lb, (MPI_Aint)extent, &ub))
        return build_error(MPI_ERR_ARG, func);
    if ((ret = builder_begin(&b, MPI_COMBINER_RESIZED)) != MPI_SUCCESS)
        return build_error(ret, func);
    builder_add(&b, 0, old, 1);
    b.has_marks = 1;
    b.mark_lo = (MPI_Aint)lb;
    b.mark_hi = ub;
    ret = builder_end(&b, 0, newtype);
    return ret == MPI_SUCCESS ? ret : build_error(ret, func);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_resized_c, PMPI_Type_create_resized_c);

/* MPI_Type_create_resized_c with MPI_Aint bounds; same errors. */
PB_EXPORT int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                                       MPI_Datatype *newtype)
{
    return PMPI_Type_create_resized_c(oldtype, lb, extent, newtype);
}
PB_MPI_WEAK_ALIAS(MPI_Type_create_resized, PMPI_Type_create_resized);

/* A new datatype with the type map, bounds and committed state of
 * @oldtype (not its name).  @return MPI_SUCCESS; MPI_ERR_TYPE, MPI_ERR_ARG
 * (newtype NULL), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *func = "MPI_Type_dup";
    pb_datatype_t *old;
    pb_builder_t b;
    int ret;

    if ((ret = type_arg(oldtype, func, "oldtype", &old)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(newtype, func, "newtype")) != MPI_SUCCESS)
        return ret;
    if ((ret = builder_begin(&b, MPI_COMBINER_DUP)) != MPI_SUCCESS)
        return build_error(ret, func);
    builder_add(&b, 0, old, 1);
    b.t->committed = old->committed;
    ret = builder_end(&b, 0, newtype);
    return ret == MPI_SUCCESS ? ret : build_error(ret, func);
}
PB_MPI_WEAK_ALIAS(MPI_Type_dup, PMPI_Type_dup);

/* The predefined pair type of values of @value_type and indexes of
 * @index_type (MPI_FLOAT and MPI_INT give MPI_FLOAT_INT), or
 * MPI_DATATYPE_NULL when there is none.  @return MPI_SUCCESS; MPI_ERR_TYPE
 * (a bad type), MPI_ERR_ARG (pair_type NULL). */
PB_EXPORT int PMPI_Type_get_value_index(MPI_Datatype value_type, MPI_Datatype index_type,
                                        MPI_Datatype *pair_type)
{
    const char *func = "MPI_Type_get_value_index";
    pb_datatype_t *v, *x;
    int ret;

    if ((ret = type_arg(value_type, func, "value_type", &v)) != MPI_SUCCESS)
        return ret;
    if ((ret = type_arg(index_type, func, "index_type", &x)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(pair_type, func, "pair_type")) != MPI_SUCCESS)
        return ret;
    *pair_type = MPI_DATATYPE_NULL;
    if (index_type != MPI_INT)
        return MPI_SUCCESS;
    if (value_type == MPI_FLOAT)
        *pair_type = MPI_FLOAT_INT;
    else if (value_type == MPI_DOUBLE)
        *pair_type = MPI_DOUBLE_INT;
    else if (value_type == MPI_LONG)
        *pair_type = MPI_LONG_INT;
    else if (value_type == MPI_INT)
        *pair_type = MPI_2INT;
    else if (value_type == MPI_SHORT)
        *pair_type = MPI_SHORT_INT;
    else if (value_type == MPI_LONG_DOUBLE)
        *pair_type = MPI_LONG_DOUBLE_INT;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_value_index, PMPI_Type_get_value_index);

/* Commit *@datatype for use in communication (a predefined type is always
 * committed).  @return MPI_SUCCESS; MPI_ERR_ARG (datatype NULL),
 * MPI_ERR_TYPE. */
PB_EXPORT int PMPI_Type_commit(MPI_Datatype *datatype)
{
    pb_datatype_t *t;
    int ret;

    if ((ret = ptr_arg(datatype, "MPI_Type_commit", "datatype")) != MPI_SUCCESS)
        return ret;
    if ((ret = type_arg(*datatype, "MPI_Type_commit", "*datatype", &t)) != MPI_SUCCESS)
        return ret;
    t->committed = 1;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_commit, PMPI_Type_commit);

/* Free the created datatype *@datatype and set it to MPI_DATATYPE_NULL;
 * types built from it and pending communication keep working.
 * @return MPI_SUCCESS; MPI_ERR_ARG (datatype NULL), MPI_ERR_TYPE (not a
 * datatype, or a predefined one). */
PB_EXPORT int PMPI_Type_free(MPI_Datatype *datatype)
{
    pb_datatype_t *t;
    int ret;

    if ((ret = ptr_arg(datatype, "MPI_Type_free", "datatype")) != MPI_SUCCESS)
        return ret;
    if ((ret = type_arg(*datatype, "MPI_Type_free", "*datatype", &t)) != MPI_SUCCESS)
        return ret;
    if (t->predefined)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, "MPI_Type_free",
                            "*datatype is the predefined %s, which cannot be freed", t->name);
    pb_mpi_registry_remove(&type_registry, t, t->handle_int);
    pb_mpi_type_release(t);
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_free, PMPI_Type_free);

/* ---- queries ------------------------------------------------------------------------------- */

/* Bytes of data in one element of @datatype, in *@size.  @return
 * MPI_SUCCESS; MPI_ERR_TYPE, MPI_ERR_ARG (size NULL). */
PB_EXPORT int PMPI_Type_size_c(MPI_Datatype datatype, MPI_Count *size)
{
    pb_datatype_t *t;
    int ret;

    if ((ret = type_arg(datatype, "MPI_Type_size", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(size, "MPI_Type_size", "size")) != MPI_SUCCESS)
        return ret;
    *size = (MPI_Count)t->size;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_size_c, PMPI_Type_size_c);

/* MPI_Type_size_c, deprecated name. */
PB_EXPORT int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    return PMPI_Type_size_c(datatype, size);
}
PB_MPI_WEAK_ALIAS(MPI_Type_size_x, PMPI_Type_size_x);

/* MPI_Type_size_c into an int: MPI_UNDEFINED when the size does not fit. */
PB_EXPORT int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
    MPI_Count c;
    int ret = PMPI_Type_size_c(datatype, &c);

    if (ret == MPI_SUCCESS && size == NULL)
        return ptr_arg(NULL, "MPI_Type_size", "size");
    if (ret == MPI_SUCCESS)
        *size = c > INT_MAX ? MPI_UNDEFINED : (int)c;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Type_size, PMPI_Type_size);

/* The lower bound and extent of @datatype.  @return MPI_SUCCESS;
 * MPI_ERR_TYPE, MPI_ERR_ARG (a NULL pointer). */
PB_EXPORT int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    pb_datatype_t *t;
    int ret;

    if ((ret = type_arg(datatype, "MPI_Type_get_extent", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(lb, "MPI_Type_get_extent", "lb")) != MPI_SUCCESS ||
        (ret = ptr_arg(extent, "MPI_Type_get_extent", "extent")) != MPI_SUCCESS)
        return ret;
    *lb = t->lb;
    *extent = t->ub - t->lb;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_extent, PMPI_Type_get_extent);

/* MPI_Type_get_extent with MPI_Count results; same errors. */
PB_EXPORT int PMPI_Type_get_extent_c(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    MPI_Aint l, e;
    int ret = PMPI_Type_get_extent(datatype, lb ? &l : NULL, extent ? &e : NULL);

    if (ret == MPI_SUCCESS) {
        *lb = l;
        *extent = e;
    }
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_extent_c, PMPI_Type_get_extent_c);

/* MPI_Type_get_extent_c, deprecated name. */
PB_EXPORT int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    return PMPI_Type_get_extent_c(datatype, lb, extent);
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_extent_x, PMPI_Type_get_extent_x);

/* The offset of the first byte of data and the span of the data of
 * @datatype (0, 0 when it has none).  @return MPI_SUCCESS; MPI_ERR_TYPE,
 * MPI_ERR_ARG (a NULL pointer). */
PB_EXPORT int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb,
                                        MPI_Aint *true_extent)
{
    const char *func = "MPI_Type_get_true_extent";
    pb_datatype_t *t;
    int ret;

    if ((ret = type_arg(datatype, func, "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(true_lb, func, "true_lb")) != MPI_SUCCESS ||
        (ret = ptr_arg(true_extent, func, "true_extent")) != MPI_SUCCESS)
        return ret;
    *true_lb = t->true_lb;
    *true_extent = t->true_ub - t->true_lb;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_true_extent, PMPI_Type_get_true_extent);

/* MPI_Type_get_true_extent with MPI_Count results; same errors. */
PB_EXPORT int PMPI_Type_get_true_extent_c(MPI_Datatype datatype, MPI_Count *true_lb,
                                          MPI_Count *true_extent)
{
    MPI_Aint l, e;
    int ret = PMPI_Type_get_true_extent(datatype, true_lb ? &l : NULL, true_extent ? &e : NULL);

    if (ret == MPI_SUCCESS) {
        *true_lb = l;
        *true_extent = e;
    }
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_true_extent_c, PMPI_Type_get_true_extent_c);

/* MPI_Type_get_true_extent_c, deprecated name. */
PB_EXPORT int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb,
                                          MPI_Count *true_extent)
{
    return PMPI_Type_get_true_extent_c(datatype, true_lb, true_extent);
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_true_extent_x, PMPI_Type_get_true_extent_x);

/* How many elements of @datatype the message of @status holds (from its
 * byte count): MPI_UNDEFINED when it does not end on an element; 0 for a
 * type of size 0.  @return MPI_SUCCESS; MPI_ERR_ARG (status or count
 * NULL: MPI_STATUS_IGNORE holds no count), MPI_ERR_TYPE. */
PB_EXPORT int PMPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    pb_datatype_t *t;
    uint64_t bytes;
    int ret;

    if ((ret = ptr_arg(status, "MPI_Get_count", "status")) != MPI_SUCCESS)
        return ret;
    if ((ret = type_arg(datatype, "MPI_Get_count", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(count, "MPI_Get_count", "count")) != MPI_SUCCESS)
        return ret;
    bytes = pb_mpi_status_bytes(status);
    if (t->size == 0)
        *count = 0;
    else if (bytes % t->size != 0)
        *count = MPI_UNDEFINED;
    else
        *count = (MPI_Count)(bytes / t->size);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Get_count_c, PMPI_Get_count_c);

/* MPI_Get_count_c into an int: MPI_UNDEFINED when it does not fit. */
PB_EXPORT int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count c;
    int ret;

    if (count == NULL)
        return ptr_arg(NULL, "MPI_Get_count", "count");
    ret = PMPI_Get_count_c(status, datatype, &c);
    if (ret == MPI_SUCCESS)
        *count = c > INT_MAX ? MPI_UNDEFINED : (int)c;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Get_count, PMPI_Get_count);

/* How many basic elements (a pair type's value and index count as two)
 * the message of @status holds: MPI_UNDEFINED when it ends inside one.
 * @return MPI_SUCCESS; MPI_ERR_ARG (status or count NULL), MPI_ERR_TYPE. */
PB_EXPORT int PMPI_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    pb_datatype_t *t;
    int ret;

    if ((ret = ptr_arg(status, "MPI_Get_elements", "status")) != MPI_SUCCESS)
        return ret;
    if ((ret = type_arg(datatype, "MPI_Get_elements", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(count, "MPI_Get_elements", "count")) != MPI_SUCCESS)
        return ret;
    *count = pb_mpi_type_elements(t, (size_t)pb_mpi_status_bytes(status));
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Get_elements_c, PMPI_Get_elements_c);

/* MPI_Get_elements_c, deprecated name. */
PB_EXPORT int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return PMPI_Get_elements_c(status, datatype, count);
}
PB_MPI_WEAK_ALIAS(MPI_Get_elements_x, PMPI_Get_elements_x);

/* MPI_Get_elements_c into an int: MPI_UNDEFINED when it does not fit. */
PB_EXPORT int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count c;
    int ret;

    if (count == NULL)
        return ptr_arg(NULL, "MPI_Get_elements", "count");
    ret = PMPI_Get_elements_c(status, datatype, &c);
    if (ret == MPI_SUCCESS)
        *count = c > INT_MAX ? MPI_UNDEFINED : (int)c;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Get_elements, PMPI_Get_elements);

/* Name @datatype @type_name (truncated to MPI_MAX_OBJECT_NAME - 1 chars);
 * predefined types may be renamed too.  @return MPI_SUCCESS; MPI_ERR_TYPE,
 * MPI_ERR_ARG (type_name NULL). */
PB_EXPORT int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    pb_datatype_t *t;
    int ret;

    if ((ret = type_arg(datatype, "MPI_Type_set_name", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(type_name, "MPI_Type_set_name", "type_name")) != MPI_SUCCESS)
        return ret;
    snprintf(t->name, sizeof(t->name), "%s", type_name);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_set_name, PMPI_Type_set_name);

/* The name of @datatype into @type_name (MPI_MAX_OBJECT_NAME chars): the
 * standard's for a predefined one ("MPI_INT"), "" for a created one never
 * named; its length in *@resultlen.  @return MPI_SUCCESS; MPI_ERR_TYPE,
 * MPI_ERR_ARG (a NULL pointer). */
PB_EXPORT int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    pb_datatype_t *t;
    int ret;

    if ((ret = type_arg(datatype, "MPI_Type_get_name", "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(type_name, "MPI_Type_get_name", "type_name")) != MPI_SUCCESS ||
        (ret = ptr_arg(resultlen, "MPI_Type_get_name", "resultlen")) != MPI_SUCCESS)
        return ret;
    *resultlen = snprintf(type_name, MPI_MAX_OBJECT_NAME, "%s", t->name);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Type_get_name, PMPI_Type_get_name);

/* The integer of @datatype for Fortran and other languages: a predefined
 * handle's ABI value, or for a created one an integer from
 * PB_MPI_HANDLE_INT_BASE up.  A bad handle raises MPI_ERR_TYPE and gives
 * MPI_DATATYPE_NULL's. */
PB_EXPORT int PMPI_Type_toint(MPI_Datatype datatype)
{
    pb_datatype_t *t;

    if ((uintptr_t)datatype < PB_MPI_HANDLE_INT_BASE)
        return (int)(uintptr_t)datatype;
    if (type_arg(datatype, "MPI_Type_toint", "datatype", &t) != MPI_SUCCESS)
        return (int)(uintptr_t)MPI_DATATYPE_NULL;
    return t->handle_int;
}
PB_MPI_WEAK_ALIAS(MPI_Type_toint, PMPI_Type_toint);

/* The datatype of integer @datatype (see MPI_Type_toint), or
 * MPI_DATATYPE_NULL when no live datatype has it. */
PB_EXPORT MPI_Datatype PMPI_Type_fromint(int datatype)
{
    void *t;

    if (datatype < 0)
        return MPI_DATATYPE_NULL;
    if (datatype < PB_MPI_HANDLE_INT_BASE)
        return (MPI_Datatype)(uintptr_t)datatype;
    t = pb_mpi_registry_at(&type_registry, datatype);
    return t != NULL ? (MPI_Datatype)t : MPI_DATATYPE_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Type_fromint, PMPI_Type_fromint);

/* ---- addresses ----------------------------------------------------------------------------- */

/* The address of @location as an MPI_Aint (for MPI_BOTTOM-relative
 * types).  @return MPI_SUCCESS; MPI_ERR_ARG (address NULL). */
PB_EXPORT int PMPI_Get_address(const void *location, MPI_Aint *address)
{
    int ret;

    if ((ret = ptr_arg(address, "MPI_Get_address", "address")) != MPI_SUCCESS)
        return ret;
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Get_address, PMPI_Get_address);

/* @base + @disp as addresses (wrapping, never undefined). */
PB_EXPORT MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}
PB_MPI_WEAK_ALIAS(MPI_Aint_add, PMPI_Aint_add);

/* @addr1 - @addr2 as addresses (wrapping, never undefined). */
PB_EXPORT MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}
PB_MPI_WEAK_ALIAS(MPI_Aint_diff, PMPI_Aint_diff);

/* ---- MPI_Pack and MPI_Unpack --------------------------------------------------------------- */

/* Errors of MPI_Pack/MPI_Unpack go to MPI_COMM_SELF's handler for now:
 * the communicator argument is not validated here. */
static int pack_common(const char *func, const char *count_name, MPI_Count count,
                       MPI_Datatype datatype, const char *size_name, MPI_Count size,
                       const MPI_Count *position, pb_datatype_t **t_p, MPI_Count *bytes_p)
{
    int ret;

    if ((ret = count_arg(count, func, count_name)) != MPI_SUCCESS)
        return ret;
    if ((ret = type_arg_committed(datatype, func, "datatype", t_p)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(position, func, "position")) != MPI_SUCCESS)
        return ret;
    if (size < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "%s %lld is negative", size_name,
                            (long long)size);
    if (*position < 0 || *position > size)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "*position %lld is outside the buffer of %lld bytes",
                            (long long)*position, (long long)size);
    if (__builtin_mul_overflow(count, (MPI_Count)(*t_p)->size, bytes_p))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "count %lld is too large",
                            (long long)count);
    return MPI_SUCCESS;
}

/* Pack @incount elements of @datatype at @inbuf into @outbuf (of @outsize
 * bytes) at *@position, and advance *@position.  @return MPI_SUCCESS;
 * MPI_ERR_COUNT (incount < 0), MPI_ERR_TYPE (bad or uncommitted),
 * MPI_ERR_ARG (position NULL, outsize < 0, *position out of range, data
 * that does not fit in outsize), MPI_ERR_BUFFER (outbuf NULL). */
PB_EXPORT int PMPI_Pack_c(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf,
                          MPI_Count outsize, MPI_Count *position, MPI_Comm comm)
{
    const char *func = "MPI_Pack";
    pb_datatype_t *t;
    MPI_Count bytes;
    int ret;

    ret = pack_common(func, "incount", incount, datatype, "outsize", outsize, position, &t, &bytes);
    if (ret != MPI_SUCCESS)
        return ret;
    if (bytes > outsize - *position)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            "outsize %lld is too small: %lld bytes of data from position %lld",
                            (long long)outsize, (long long)bytes, (long long)*position);
    if (bytes > 0 && outbuf == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_BUFFER, func, "outbuf is NULL");
    if (bytes > 0)
        pb_mpi_pack_range(inbuf, incount, t, 0, (char *)outbuf + *position, (size_t)bytes);
    *position += bytes;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_c, PMPI_Pack_c);

/* MPI_Pack_c with int sizes; same errors. */
PB_EXPORT int PMPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
                        int outsize, int *position, MPI_Comm comm)
{
    MPI_Count pos;
    int ret;

    if (position == NULL)
        return ptr_arg(NULL, "MPI_Pack", "position");
    pos = *position;
    ret = PMPI_Pack_c(inbuf, incount, datatype, outbuf, outsize, &pos, comm);
    if (ret == MPI_SUCCESS)
        *position = (int)pos;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Pack, PMPI_Pack);

/* Unpack @outcount elements of @datatype into @outbuf from @inbuf (of
 * @insize bytes) at *@position, and advance *@position.  @return
 * MPI_SUCCESS; MPI_ERR_COUNT (outcount < 0), MPI_ERR_TYPE, MPI_ERR_ARG
 * (position NULL, insize < 0, *position out of range), MPI_ERR_TRUNCATE
 * (fewer than the data's bytes left in inbuf), MPI_ERR_BUFFER (inbuf
 * NULL). */
PB_EXPORT int PMPI_Unpack_c(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf,
                            MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm)
{
    const char *func = "MPI_Unpack";
    pb_datatype_t *t;
    MPI_Count bytes;
    int ret;

    ret = pack_common(func, "outcount", outcount, datatype, "insize", insize, position, &t, &bytes);
    if (ret != MPI_SUCCESS)
        return ret;
    if (bytes > insize - *position)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TRUNCATE, func,
                            "insize %lld holds %lld bytes after position %lld, the data needs "
                            "%lld",
                            (long long)insize, (long long)(insize - *position),
                            (long long)*position, (long long)bytes);
    if (bytes > 0 && inbuf == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_BUFFER, func, "inbuf is NULL");
    if (bytes > 0)
        pb_mpi_unpack_range((const char *)inbuf + *position, (size_t)bytes, outbuf, outcount, t, 0);
    *position += bytes;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Unpack_c, PMPI_Unpack_c);

/* MPI_Unpack_c with int sizes; same errors. */
PB_EXPORT int PMPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                          MPI_Datatype datatype, MPI_Comm comm)
{
    MPI_Count pos;
    int ret;

    if (position == NULL)
        return ptr_arg(NULL, "MPI_Unpack", "position");
    pos = *position;
    ret = PMPI_Unpack_c(inbuf, insize, &pos, outbuf, outcount, datatype, comm);
    if (ret == MPI_SUCCESS)
        *position = (int)pos;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Unpack, PMPI_Unpack);

/* An upper bound of the bytes MPI_Pack needs for @incount elements of
 * @datatype: exactly their size (Postbox packs no header).  @return
 * MPI_SUCCESS; MPI_ERR_COUNT (incount < 0), MPI_ERR_TYPE, MPI_ERR_ARG
 * (size NULL). */
PB_EXPORT int PMPI_Pack_size_c(MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm,
                               MPI_Count *size)
{
    const char *func = "MPI_Pack_size";
    pb_datatype_t *t;
    int ret;

    if ((ret = count_arg(incount, func, "incount")) != MPI_SUCCESS)
        return ret;
    if ((ret = type_arg(datatype, func, "datatype", &t)) != MPI_SUCCESS)
        return ret;
    if ((ret = ptr_arg(size, func, "size")) != MPI_SUCCESS)
        return ret;
    if (__builtin_mul_overflow(incount, (MPI_Count)t->size, size))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "incount %lld is too large",
                            (long long)incount);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_size_c, PMPI_Pack_size_c);

/* MPI_Pack_size_c into an int; MPI_ERR_VALUE_TOO_LARGE when it does not
 * fit. */
PB_EXPORT int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    MPI_Count c;
    int ret;

    if (size == NULL)
        return ptr_arg(NULL, "MPI_Pack_size", "size");
    ret = PMPI_Pack_size_c(incount, datatype, comm, &c);
    if (ret != MPI_SUCCESS)
        return ret;
    if (c > INT_MAX)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_VALUE_TOO_LARGE, "MPI_Pack_size",
                            "%lld bytes do not fit in an int (use MPI_Pack_size_c)", (long long)c);
    *size = (int)c;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_size, PMPI_Pack_size);
