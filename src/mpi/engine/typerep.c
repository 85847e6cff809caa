/*
 * The datatype engine (typerep.h): the predefined layouts, lifetimes,
 * elements, pack/unpack, and the builder of created types.
 *
 * These functions need no MPI_Init (they communicate with no one).
 */
#include "mpi/engine/typerep.h"

#include <limits.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "mpi/engine/handle.h"
#include "util/compiler.h"

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
 * first entry is the one pb_eng_type_of_basic returns (the C types come
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

static pb_datatype_t predef[PB_ARRAY_SIZE(predef_descs)];
pb_datatype_t *pb_eng_type_predef_by_value[PB_ENG_TYPE_PREDEF_SPAN];
static pb_datatype_t *predef_by_kind[PB_BASIC_COUNT_OF];

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

/* The predefined layouts are made when the library is loaded, before any
 * call can ask for one (some may come before MPI_Init): the lookups are then
 * one load, with no once-guard in every datatype check. */
__attribute__((constructor)) static void predef_init(void)
{
    size_t i;

    for (i = 0; i < PB_ARRAY_SIZE(predef_descs); i++) {
        const pb_predef_desc_t *d = &predef_descs[i];

        predef_init_one(&predef[i], d);
        pb_eng_type_predef_by_value[d->value - PB_ENG_TYPE_PREDEF_FIRST] = &predef[i];
        if (d->basic != PB_BASIC_NONE && predef_by_kind[d->basic] == NULL)
            predef_by_kind[d->basic] = &predef[i];
    }
}

pb_datatype_t *pb_eng_type_of_basic(pb_basic_t kind)
{
    if ((unsigned)kind >= PB_BASIC_COUNT_OF)
        return NULL;
    return predef_by_kind[kind];
}

void pb_eng_type_retain(pb_datatype_t *t)
{
    if (!t->predefined)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

void pb_eng_type_release(pb_datatype_t *t)
{
    size_t i;

    if (t->predefined)
        return;
    /* acq_rel: the last releaser sees every write of the others */
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (t->handle != NULL)
        pb_eng_handle_delete(PB_ENG_HANDLE_DATATYPE, t->handle);
    for (i = 0; i < t->nparts; i++)
        pb_eng_type_release(t->parts[i].type);
    pb_eng_type_contents_free(t->contents);
    free(t->parts);
    free(t->segs);
    free(t);
}

pb_eng_type_contents_t *pb_eng_type_contents_new(MPI_Count nints, MPI_Count naddrs,
                                                 MPI_Count nlarge, MPI_Count ntypes)
{
    pb_eng_type_contents_t *c;
    size_t bytes = sizeof(*c);
    size_t per_type = sizeof(pb_datatype_t *) + sizeof(MPI_Datatype);
    char *p;

    /* the arrays by decreasing alignment: 8-byte ones, then the ints */
    if (nints < 0 || naddrs < 0 || nlarge < 0 || ntypes < 0 || nints > (MPI_Count)(SIZE_MAX / 64) ||
        naddrs > (MPI_Count)(SIZE_MAX / 64) || nlarge > (MPI_Count)(SIZE_MAX / 64) ||
        ntypes > (MPI_Count)(SIZE_MAX / 64))
        return NULL;
    bytes += (size_t)naddrs * sizeof(MPI_Aint) + (size_t)nlarge * sizeof(MPI_Count) +
             (size_t)ntypes * per_type + (size_t)nints * sizeof(int);
    c = calloc(1, bytes);
    if (c == NULL)
        return NULL;
    p = (char *)(c + 1);
    c->nints = nints;
    c->naddrs = naddrs;
    c->nlarge = nlarge;
    c->ntypes = ntypes;
    c->addrs = (MPI_Aint *)p;
    p += (size_t)naddrs * sizeof(MPI_Aint);
    c->large = (MPI_Count *)p;
    p += (size_t)nlarge * sizeof(MPI_Count);
    c->types = (pb_datatype_t **)p;
    p += (size_t)ntypes * sizeof(pb_datatype_t *);
    c->handles = (MPI_Datatype *)p;
    p += (size_t)ntypes * sizeof(MPI_Datatype);
    c->ints = (int *)p;
    return c;
}

void pb_eng_type_contents_free(pb_eng_type_contents_t *c)
{
    if (c == NULL)
        return;
    for (MPI_Count i = 0; i < c->ntypes; i++) {
        if (c->types[i] != NULL)
            pb_eng_type_release(c->types[i]);
    }
    free(c);
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

MPI_Count pb_eng_type_elements(const pb_datatype_t *t, size_t bytes)
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

void pb_eng_type_pack_range(const void *buf, MPI_Count count, const pb_datatype_t *t, size_t offset,
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

void pb_eng_type_unpack_range(const void *src, size_t len, void *buf, MPI_Count count,
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

int pb_eng_type_builder_begin(pb_eng_type_builder_t *b, int combiner)
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

static MPI_Aint builder_add_aint(pb_eng_type_builder_t *b, MPI_Aint x, MPI_Aint y)
{
    MPI_Aint r;

    if (__builtin_add_overflow(x, y, &r))
        b->status = MPI_ERR_ARG;
    return r;
}

/* Append @count blocks of @len bytes at @off, @off + @stride, ... to the
 * flattened type map, merging with the last segment where possible. */
static void builder_seg(pb_eng_type_builder_t *b, MPI_Aint off, size_t len, MPI_Aint stride,
                        size_t count)
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

static void builder_part(pb_eng_type_builder_t *b, pb_datatype_t *c, MPI_Count n)
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
    pb_eng_type_retain(c);
    t->parts[t->nparts++] = (pb_part_t){.type = c, .n = n};
}

/* The bounds of @n consecutive elements of @c, the first @disp bytes from
 * the new type's origin, the next ones an extent of @c apart. */
static void builder_bounds(pb_eng_type_builder_t *b, MPI_Aint disp, const pb_datatype_t *c,
                           MPI_Count n)
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
static int builder_count(pb_eng_type_builder_t *b, pb_datatype_t *c, MPI_Count n)
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

void pb_eng_type_builder_add(pb_eng_type_builder_t *b, MPI_Aint disp, pb_datatype_t *c, MPI_Count n)
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

void pb_eng_type_builder_add_groups(pb_eng_type_builder_t *b, MPI_Aint step, MPI_Count count,
                                    pb_datatype_t *c, MPI_Count n)
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
            pb_eng_type_builder_add(b, step * (MPI_Aint)i, c, n);
        return;
    }
    builder_bounds(b, 0, c, n);
    builder_bounds(b, last, c, n);
    if (b->status != MPI_SUCCESS || !builder_count(b, c, total))
        return;
    builder_seg(b, c->true_lb, (size_t)n * c->size, step, (size_t)count);
}

static void builder_abandon(pb_eng_type_builder_t *b)
{
    if (b->t == NULL)
        return;
    atomic_store(&b->t->refs, 1);
    pb_eng_type_release(b->t);
    b->t = NULL;
}

int pb_eng_type_builder_end(pb_eng_type_builder_t *b, int pad_to_align, pb_datatype_t **t_p)
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
    *t_p = t;
    b->t = NULL;
    return MPI_SUCCESS;

err_free:
    builder_abandon(b);
    return ret;
}

/* ---- argument checks ------------------------------------------------------------------------ */
