/*
 * The datatype engine: how a datatype's data lies in memory (its type
 * map, flattened into segments), the layouts of the predefined datatypes
 * of the standard ABI, the builder the type constructors use, and the
 * pack/unpack engine the messaging layer moves non-contiguous data with.
 *
 * Representation.  Every datatype, predefined or created, is one
 * pb_datatype_t holding what the queries return (size, bounds, true
 * bounds, basic elements) and its type map flattened for one element into
 * segments: a segment is `count` blocks of `len` bytes, the first `off`
 * bytes from the element's address and each next one `stride` bytes
 * further.  Segments are in type-map order, which is the order of packed
 * data.  The builder merges adjacent blocks and extends a constant stride
 * where it can, so a contiguous type is one block and a vector of a
 * contiguous type is one segment whatever its count.  Each segment knows
 * the packed offset of its first byte (`pos`), so a byte range of a packed
 * message starts with a division (which element), a binary search (which
 * segment) and another division (which block), never a walk from the
 * start: the engine packs a message piece by piece.
 *
 * A created type also lists the types it was made of, with their
 * repetitions, in packed order ("parts"), for MPI_Get_elements on a partial
 * element, and holds a reference on each, so freeing a part does not
 * affect it.
 *
 * This file knows nothing of handles: src/mpi/datatype.c maps a handle to
 * its pb_datatype_t once, at the API edge, and the send path reads the
 * layout through the inline accessors below (no look-up, no lock).
 */
#ifndef PB_ENG_TYPEREP_H
#define PB_ENG_TYPEREP_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The basic C type of a predefined datatype's elements, for reductions
 * (op.c) and for MPI_Get_elements. */
typedef enum {
    PB_BASIC_NONE = 0, /* not one basic type (a struct of several, MPI_PACKED) */
    PB_BASIC_CHAR,
    PB_BASIC_SIGNED_CHAR,
    PB_BASIC_UNSIGNED_CHAR,
    PB_BASIC_BYTE,
    PB_BASIC_SHORT,
    PB_BASIC_UNSIGNED_SHORT,
    PB_BASIC_INT,
    PB_BASIC_UNSIGNED,
    PB_BASIC_LONG,
    PB_BASIC_UNSIGNED_LONG,
    PB_BASIC_LONG_LONG,
    PB_BASIC_UNSIGNED_LONG_LONG,
    PB_BASIC_INT8,
    PB_BASIC_UINT8,
    PB_BASIC_INT16,
    PB_BASIC_UINT16,
    PB_BASIC_INT32,
    PB_BASIC_UINT32,
    PB_BASIC_INT64,
    PB_BASIC_UINT64,
    PB_BASIC_AINT,
    PB_BASIC_OFFSET,
    PB_BASIC_COUNT,
    PB_BASIC_FLOAT,
    PB_BASIC_DOUBLE,
    PB_BASIC_LONG_DOUBLE,
    PB_BASIC_C_BOOL,
    PB_BASIC_WCHAR,
    PB_BASIC_C_FLOAT_COMPLEX,
    PB_BASIC_C_DOUBLE_COMPLEX,
    PB_BASIC_C_LONG_DOUBLE_COMPLEX,
    /* the pair types of MINLOC/MAXLOC */
    PB_BASIC_FLOAT_INT,
    PB_BASIC_DOUBLE_INT,
    PB_BASIC_LONG_INT,
    PB_BASIC_2INT,
    PB_BASIC_SHORT_INT,
    PB_BASIC_LONG_DOUBLE_INT,
    PB_BASIC_COUNT_OF /* number of kinds */
} pb_basic_t;

/* The C layouts of the value-index pair types (MPI_FLOAT_INT, ...): the
 * value, then the int index, with the C compiler's padding. */
typedef struct {
    float v;
    int i;
} pb_float_int_t;
typedef struct {
    double v;
    int i;
} pb_double_int_t;
typedef struct {
    long v;
    int i;
} pb_long_int_t;
typedef struct {
    int v;
    int i;
} pb_2int_t;
typedef struct {
    short v;
    int i;
} pb_short_int_t;
typedef struct {
    long double v;
    int i;
} pb_long_double_int_t;

/* Blocks of one segment: count blocks of len bytes at off + k * stride. */
typedef struct {
    MPI_Aint off;    /* first block, from the element's address */
    MPI_Aint stride; /* from one block to the next (any sign; 0 repeats) */
    size_t len;      /* bytes per block, > 0 */
    size_t count;    /* blocks, > 0 */
    size_t pos;      /* packed offset of the first byte within an element */
} pb_seg_t;

typedef struct pb_eng_type pb_datatype_t;

/* The arguments of the constructor call that made a created type, in the
 * standard's order (MPI_Type_get_envelope, MPI_Type_get_contents): one
 * allocation holding the struct and its four arrays. */
typedef struct {
    MPI_Count nints, naddrs, nlarge, ntypes;
    int *ints;
    MPI_Aint *addrs;
    MPI_Count *large;
    pb_datatype_t **types; /* one reference each */
    MPI_Datatype *handles; /* a predefined type's handle, else MPI_DATATYPE_NULL */
} pb_eng_type_contents_t;

/* @n consecutive elements of @type in a created type's packed data. */
typedef struct {
    pb_datatype_t *type;
    MPI_Count n;
} pb_part_t;

struct pb_eng_type {
    size_t size;         /* bytes of data per element */
    MPI_Aint lb;         /* lower bound; extent = ub - lb */
    MPI_Aint ub;         /* upper bound */
    MPI_Aint true_lb;    /* first byte of data (0 when size is 0) */
    MPI_Aint true_ub;    /* one past the last byte of data */
    MPI_Count nelems;    /* basic elements per element */
    pb_basic_t basic;    /* the one basic kind of all elements, or NONE */
    int align;           /* the largest alignment of a basic type inside */
    int combiner;        /* MPI_COMBINER_* */
    uint8_t predefined;  /* a static object of typerep.c */
    uint8_t committed;   /* MPI_Type_commit was called (predefined: 1) */
    uint8_t contiguous;  /* count elements are one block at true_lb */
    uint8_t sticky;      /* bounds set by markers (MPI_Type_create_resized) */
    uint8_t has_entries; /* the type map is not empty (data or markers) */
    atomic_int refs;     /* created types: the handle + parents + retains */
    size_t nsegs;
    pb_seg_t *segs;
    size_t nparts;
    pb_part_t *parts;
    pb_eng_type_contents_t *contents; /* created types: how they were made (freed with them) */
    void *handle;      /* created types: the object of the handle made with the type in the handle
                        * registry (PB_ENG_HANDLE_DATATYPE), given back when the type goes (see
                        * pb_eng_type_release), or NULL */
    size_t value_size; /* pair types: bytes of the value before the index */
    pb_seg_t own_segs[2]; /* predefined types' segments */
    char name[MPI_MAX_OBJECT_NAME];
};

/* ---- what the send path reads: inline, no look-up, no lock ---- */

/* Bytes of data in one element of @t (MPI_Type_size). */
static inline size_t pb_eng_type_size(const pb_datatype_t *t)
{
    return t->size;
}

/* The extent of @t (MPI_Type_get_extent): the stride between elements. */
static inline MPI_Aint pb_eng_type_extent(const pb_datatype_t *t)
{
    return t->ub - t->lb;
}

/* 1 when @count elements of @t are one block of @count * size bytes
 * starting at buf + pb_eng_type_true_lb(t): then the engine copies them
 * with memcpy and never calls pack/unpack. */
static inline int pb_eng_type_is_contiguous(const pb_datatype_t *t)
{
    return t->contiguous;
}

/* The offset of the first byte of data of an element from its address. */
static inline MPI_Aint pb_eng_type_true_lb(const pb_datatype_t *t)
{
    return t->true_lb;
}

/* The basic type every element of @t is made of, or PB_BASIC_NONE. */
static inline pb_basic_t pb_eng_type_basic(const pb_datatype_t *t)
{
    return t->basic;
}

/* 1 when @t is a created datatype that has been committed, or a
 * predefined one. */
static inline int pb_eng_type_is_committed(const pb_datatype_t *t)
{
    return t->committed;
}

/* ---- predefined layouts, lifetimes, elements, pack/unpack ---- */

/* Datatype handles are 0x200-0x3ff; the C ones all lie below 0x300. */
#define PB_ENG_TYPE_PREDEF_FIRST 0x200
#define PB_ENG_TYPE_PREDEF_SPAN 0x100

/* The predefined layouts by handle value - PB_ENG_TYPE_PREDEF_FIRST (NULL
 * where Postbox has none), filled when the library is loaded; read through
 * pb_eng_type_predefined. */
extern pb_datatype_t *pb_eng_type_predef_by_value[PB_ENG_TYPE_PREDEF_SPAN];

/* The layout of the predefined datatype whose ABI handle value is @value
 * (MPI_INT's 0x209), or NULL when @value is none Postbox supports (the
 * Fortran types, values of other handle kinds). */
static inline pb_datatype_t *pb_eng_type_predefined(uintptr_t value)
{
    if (value - PB_ENG_TYPE_PREDEF_FIRST >= PB_ENG_TYPE_PREDEF_SPAN)
        return NULL;
    return pb_eng_type_predef_by_value[value - PB_ENG_TYPE_PREDEF_FIRST];
}

/* The predefined datatype whose elements are one @kind (MPI_INT for
 * PB_BASIC_INT, MPI_DOUBLE_INT for PB_BASIC_DOUBLE_INT), or NULL for
 * PB_BASIC_NONE. */
pb_datatype_t *pb_eng_type_of_basic(pb_basic_t kind);

/* Keep @t alive until the matching release (a pending send or receive
 * holds its datatype so; the handle holds one reference).  Both are no-ops
 * on predefined types and thread safe; the last release frees @t, first
 * giving back t->handle, then releasing the types it is made of: a type
 * freed by the program while others use it keeps its handle (retired)
 * until they go, and the handles come free in the order the objects die,
 * as in the implementations whose handles are their objects (programs
 * that reuse a freed handle's value rely on that order). */
void pb_eng_type_retain(pb_datatype_t *t);
void pb_eng_type_release(pb_datatype_t *t);

/* How many basic elements @bytes of packed @t hold (MPI_Get_elements), or
 * MPI_UNDEFINED when @bytes does not end on a basic element. */
MPI_Count pb_eng_type_elements(const pb_datatype_t *t, size_t bytes);

/* Copy packed bytes [@offset, @offset + @len) of the @count elements of @t
 * at @buf into @dst (pack) or from @src into them (unpack): the engine
 * moves a message in pieces.  @offset + @len must not exceed
 * @count * pb_eng_type_size(t). */
void pb_eng_type_pack_range(const void *buf, MPI_Count count, const pb_datatype_t *t, size_t offset,
                            void *dst, size_t len);
void pb_eng_type_unpack_range(const void *src, size_t len, void *buf, MPI_Count count,
                              const pb_datatype_t *t, size_t offset);

/* A new contents record of @nints ints, @naddrs addresses, @nlarge large
 * counts and @ntypes types (zeroed: no type yet), or NULL when out of
 * memory or too large. */
pb_eng_type_contents_t *pb_eng_type_contents_new(MPI_Count nints, MPI_Count naddrs,
                                                 MPI_Count nlarge, MPI_Count ntypes);

/* Free @c (NULL: nothing), releasing the types it holds. */
void pb_eng_type_contents_free(pb_eng_type_contents_t *c);

/* ---- the builder of created types ---- */

/* A type under construction: begin, add elements of other types, set the
 * markers (has_marks, mark_lo, mark_hi) for a resized type, end. */
typedef struct {
    pb_datatype_t *t;
    size_t segs_cap;
    size_t parts_cap;
    MPI_Aint data_lo, data_hi; /* bounds of the entries without markers */
    MPI_Aint mark_lo, mark_hi; /* bounds set by markers */
    MPI_Aint true_lo, true_hi; /* bytes of data */
    int has_data, has_marks, has_true, has_basic;
    int status; /* MPI_SUCCESS, MPI_ERR_NO_MEM, or MPI_ERR_ARG: too large */
} pb_eng_type_builder_t;

/* Start an empty type of @combiner (MPI_COMBINER_*) in @b.
 * @return MPI_SUCCESS or MPI_ERR_NO_MEM (nothing to abandon then). */
int pb_eng_type_builder_begin(pb_eng_type_builder_t *b, int combiner);

/* Add @n consecutive elements of @c, the first @disp bytes from the new
 * type's origin, the next ones an extent of @c apart.  An error (overflow,
 * no memory) is kept in b->status for pb_eng_type_builder_end. */
void pb_eng_type_builder_add(pb_eng_type_builder_t *b, MPI_Aint disp, pb_datatype_t *c,
                             MPI_Count n);

/* Add @count groups of @n consecutive elements of @c, the groups @step
 * bytes apart (a vector): one segment when @c is contiguous, whatever
 * @count.  Errors as pb_eng_type_builder_add. */
void pb_eng_type_builder_add_groups(pb_eng_type_builder_t *b, MPI_Aint step, MPI_Count count,
                                    pb_datatype_t *c, MPI_Count n);

/* Finish the type: bounds (with a struct's alignment padding when
 * @pad_to_align), packed positions; the new type (one reference) in *@t_p.
 * @return MPI_SUCCESS, or b->status (MPI_ERR_NO_MEM, MPI_ERR_ARG: too
 * large) with everything freed. */
int pb_eng_type_builder_end(pb_eng_type_builder_t *b, int pad_to_align, pb_datatype_t **t_p);

#endif
