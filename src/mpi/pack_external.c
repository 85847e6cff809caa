/*
 * MPI_Pack_external, MPI_Unpack_external, MPI_Pack_external_size (MPI-5.0
 * section 5.2.3): data in the "external32" representation of section
 * 14.5.2, the only one the standard defines for these calls (another name
 * is MPI_ERR_UNSUPPORTED_DATAREP).
 *
 * external32 is big-endian, IEEE floating point, and has its own sizes:
 * MPI_LONG and MPI_UNSIGNED_LONG are 4 bytes, MPI_WCHAR 2, MPI_LONG_DOUBLE
 * an IEEE quadruple (16 bytes), MPI_AINT, MPI_OFFSET and MPI_COUNT 8, the
 * others their C size.  A value that does not fit the external size (a
 * long beyond 32 bits, a wide character beyond 16) is MPI_ERR_CONVERSION.
 *
 * How.  The datatype engine packs into the native packed form (the basic
 * elements one after another, in type-map order); the created types list
 * the types they are made of in that same order (their parts), so walking
 * the parts down to the predefined types gives the basic kind of each
 * native element, which is then converted.  Unpacking runs the other way.
 * A pack goes through a native buffer of at most CHUNK bytes at a time.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/datatype.h"
#include "mpi/datatype_build.h"

#define CHUNK 65536

/* How a basic kind is written in external32. */
typedef enum {
    X_BYTES,  /* bytes as they are (MPI_PACKED) */
    X_SIGNED, /* a signed integer, big-endian */
    X_UNSIGNED /* an unsigned integer (characters, bool, byte), big-endian */,
    X_REAL, /* float or double: the IEEE bytes, big-endian */
    X_QUAD, /* long double as an IEEE quadruple, big-endian */
} ext_class_t;

typedef struct {
    ext_class_t cls;
    int ext;   /* bytes of one value (a component, for complexes) in external32 */
    int parts; /* values per element: 2 for complexes */
} ext_kind_t;

static const ext_kind_t ext_kinds[PB_BASIC_COUNT_OF] = {
    [PB_BASIC_NONE] = {X_BYTES, 1, 1},
    [PB_BASIC_CHAR] = {X_SIGNED, 1, 1},
    [PB_BASIC_SIGNED_CHAR] = {X_SIGNED, 1, 1},
    [PB_BASIC_UNSIGNED_CHAR] = {X_UNSIGNED, 1, 1},
    [PB_BASIC_BYTE] = {X_UNSIGNED, 1, 1},
    [PB_BASIC_SHORT] = {X_SIGNED, 2, 1},
    [PB_BASIC_UNSIGNED_SHORT] = {X_UNSIGNED, 2, 1},
    [PB_BASIC_INT] = {X_SIGNED, 4, 1},
    [PB_BASIC_UNSIGNED] = {X_UNSIGNED, 4, 1},
    [PB_BASIC_LONG] = {X_SIGNED, 4, 1},
    [PB_BASIC_UNSIGNED_LONG] = {X_UNSIGNED, 4, 1},
    [PB_BASIC_LONG_LONG] = {X_SIGNED, 8, 1},
    [PB_BASIC_UNSIGNED_LONG_LONG] = {X_UNSIGNED, 8, 1},
    [PB_BASIC_INT8] = {X_SIGNED, 1, 1},
    [PB_BASIC_UINT8] = {X_UNSIGNED, 1, 1},
    [PB_BASIC_INT16] = {X_SIGNED, 2, 1},
    [PB_BASIC_UINT16] = {X_UNSIGNED, 2, 1},
    [PB_BASIC_INT32] = {X_SIGNED, 4, 1},
    [PB_BASIC_UINT32] = {X_UNSIGNED, 4, 1},
    [PB_BASIC_INT64] = {X_SIGNED, 8, 1},
    [PB_BASIC_UINT64] = {X_UNSIGNED, 8, 1},
    [PB_BASIC_AINT] = {X_SIGNED, 8, 1},
    [PB_BASIC_OFFSET] = {X_SIGNED, 8, 1},
    [PB_BASIC_COUNT] = {X_SIGNED, 8, 1},
    [PB_BASIC_FLOAT] = {X_REAL, 4, 1},
    [PB_BASIC_DOUBLE] = {X_REAL, 8, 1},
    [PB_BASIC_LONG_DOUBLE] = {X_QUAD, 16, 1},
    [PB_BASIC_C_BOOL] = {X_UNSIGNED, 1, 1},
    [PB_BASIC_WCHAR] = {X_UNSIGNED, 2, 1},
    [PB_BASIC_C_FLOAT_COMPLEX] = {X_REAL, 4, 2},
    [PB_BASIC_C_DOUBLE_COMPLEX] = {X_REAL, 8, 2},
    [PB_BASIC_C_LONG_DOUBLE_COMPLEX] = {X_QUAD, 16, 2},
};

/* The value kind of each pair type (its index is an MPI_INT). */
static const pb_basic_t pair_value[PB_BASIC_COUNT_OF] = {
    [PB_BASIC_FLOAT_INT] = PB_BASIC_FLOAT, [PB_BASIC_DOUBLE_INT] = PB_BASIC_DOUBLE,
    [PB_BASIC_LONG_INT] = PB_BASIC_LONG,   [PB_BASIC_2INT] = PB_BASIC_INT,
    [PB_BASIC_SHORT_INT] = PB_BASIC_SHORT, [PB_BASIC_LONG_DOUBLE_INT] = PB_BASIC_LONG_DOUBLE,
};

/* Native bytes of one value (component) of @kind. */
static size_t native_size(pb_basic_t kind)
{
    const pb_datatype_t *unit = pb_eng_type_of_basic(kind);

    if (unit == NULL)
        return 1;
    return unit->size / (size_t)ext_kinds[kind].parts;
}

static int host_is_big_endian(void)
{
    return __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
}

/* Copy @n bytes reversing them on a little-endian host. */
static void copy_big_endian(unsigned char *dst, const unsigned char *src, size_t n)
{
    if (host_is_big_endian()) {
        memcpy(dst, src, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = src[n - 1 - i];
}

/* ---- long double <-> IEEE quadruple -----------------------------------------------------------
 */

/* The quadruple of the native long double at @src, big-endian, at @dst.
 * The x87 extended format (64-bit mantissa with an explicit integer bit)
 * has the quadruple's sign and 15-bit exponent: its 63 fraction bits are
 * the top of the quadruple's 112.  A long double that is a quadruple is
 * copied. */
static void quad_from_native(unsigned char *dst, const unsigned char *src)
{
#if LDBL_MANT_DIG == 64
    uint64_t mant;
    uint16_t se;
    unsigned char q[16]; /* little-endian quadruple */
    uint64_t lo, hi;

    memcpy(&mant, src, 8);
    memcpy(&se, src + 8, 2);
    /* fraction bits 111..49 are the mantissa's 62..0 */
    lo = (mant & 0x7fffffffffffffffull) << 49;
    hi = (mant & 0x7fffffffffffffffull) >> 15 | (uint64_t)se << 48;
    memcpy(q, &lo, 8);
    memcpy(q + 8, &hi, 8);
    copy_big_endian(dst, q, 16);
#else
    copy_big_endian(dst, src, 16);
#endif
}

/* The native long double of the big-endian quadruple at @src, at @dst
 * (an x87 extended keeps the top 63 fraction bits: the rest is cut). */
static void quad_to_native(unsigned char *dst, const unsigned char *src)
{
#if LDBL_MANT_DIG == 64
    unsigned char q[16];
    uint64_t lo, hi, mant;
    uint16_t se;
    long double v = 0;

    copy_big_endian(q, src, 16);
    memcpy(&lo, q, 8);
    memcpy(&hi, q + 8, 8);
    se = (uint16_t)(hi >> 48);
    mant = (hi & 0xffffffffffffull) << 15 | lo >> 49;
    if ((se & 0x7fff) != 0)
        mant |= 1ull << 63; /* the explicit integer bit of normal numbers, infinities, NaNs */
    memcpy(&v, &mant, 8);
    memcpy((unsigned char *)&v + 8, &se, 2);
    memcpy(dst, &v, sizeof(v));
#else
    copy_big_endian(dst, src, 16);
#endif
}

/* ---- one value ------------------------------------------------------------------------------ */

/* The native integer of @ns bytes at @src (any alignment). */
static int64_t read_signed(const unsigned char *src, size_t ns)
{
    int8_t b;
    int16_t h;
    int32_t w;
    int64_t d;

    switch (ns) {
    case 1: memcpy(&b, src, 1); return b;
    case 2: memcpy(&h, src, 2); return h;
    case 4: memcpy(&w, src, 4); return w;
    default: memcpy(&d, src, 8); return d;
    }
}

static uint64_t read_unsigned(const unsigned char *src, size_t ns)
{
    uint16_t h;
    uint32_t w;
    uint64_t d;

    switch (ns) {
    case 1: return *src;
    case 2: memcpy(&h, src, 2); return h;
    case 4: memcpy(&w, src, 4); return w;
    default: memcpy(&d, src, 8); return d;
    }
}

/* Write the native value @src of @kind (@ns bytes) as external32 at @dst.
 * @return MPI_SUCCESS, MPI_ERR_CONVERSION (it does not fit). */
static int value_to_ext(pb_basic_t kind, size_t ns, const unsigned char *src, unsigned char *dst)
{
    const ext_kind_t *x = &ext_kinds[kind];
    unsigned char be[8];
    uint64_t u = 0;
    int64_t v = 0;

    switch (x->cls) {
    case X_BYTES: memcpy(dst, src, ns); return MPI_SUCCESS;
    case X_REAL: copy_big_endian(dst, src, ns); return MPI_SUCCESS;
    case X_QUAD: quad_from_native(dst, src); return MPI_SUCCESS;
    case X_SIGNED:
        v = read_signed(src, ns);
        if (x->ext < 8 &&
            (v < -(INT64_C(1) << (8 * x->ext - 1)) || v >= (INT64_C(1) << (8 * x->ext - 1))))
            return MPI_ERR_CONVERSION;
        u = (uint64_t)v;
        break;
    case X_UNSIGNED:
        u = read_unsigned(src, ns);
        if (x->ext < 8 && u >> (8 * x->ext) != 0)
            return MPI_ERR_CONVERSION;
        break;
    }
    for (int i = 0; i < x->ext; i++)
        be[x->ext - 1 - i] = (unsigned char)(u >> (8 * i));
    memcpy(dst, be, (size_t)x->ext);
    return MPI_SUCCESS;
}

/* Read the external32 value @src of @kind into the native @dst (@ns
 * bytes): integers sign- or zero-extended. */
static void value_from_ext(pb_basic_t kind, size_t ns, const unsigned char *src, unsigned char *dst)
{
    const ext_kind_t *x = &ext_kinds[kind];
    uint64_t u = 0;

    switch (x->cls) {
    case X_BYTES: memcpy(dst, src, ns); return;
    case X_REAL: copy_big_endian(dst, src, ns); return;
    case X_QUAD: quad_to_native(dst, src); return;
    case X_SIGNED:
    case X_UNSIGNED:
        for (int i = 0; i < x->ext; i++)
            u = u << 8 | src[i];
        if (x->cls == X_SIGNED && x->ext < 8 && (u >> (8 * x->ext - 1)) != 0)
            u |= ~UINT64_C(0) << (8 * x->ext); /* sign-extend */
        break;
    }
    switch (ns) {
    case 1: *dst = (unsigned char)u; break;
    case 2: {
        uint16_t w = (uint16_t)u;
        memcpy(dst, &w, 2);
        break;
    }
    case 4: {
        uint32_t w = (uint32_t)u;
        memcpy(dst, &w, 4);
        break;
    }
    default: memcpy(dst, &u, 8); break;
    }
}

/* ---- walking the basic elements of a type ------------------------------------------------------
 */

/* A conversion in progress between native packed bytes and external32. */
typedef struct {
    int to_ext;            /* pack (1) or unpack (0) */
    unsigned char *native; /* the native packed bytes, advanced */
    unsigned char *ext;    /* the external32 bytes, advanced (NULL: only count) */
    MPI_Count ext_bytes;   /* external32 bytes so far */
    int status;            /* MPI_SUCCESS or MPI_ERR_CONVERSION */
} ext_walk_t;

/* Convert @n values of @kind (components for complexes). */
static void walk_values(ext_walk_t *w, pb_basic_t kind, MPI_Count n)
{
    size_t ns = native_size(kind);
    int ext = ext_kinds[kind].ext;

    n *= ext_kinds[kind].parts;
    if (w->ext != NULL) {
        for (MPI_Count i = 0; i < n; i++) {
            if (!w->to_ext)
                value_from_ext(kind, ns, w->ext, w->native);
            else if (value_to_ext(kind, ns, w->native, w->ext) != MPI_SUCCESS)
                w->status = MPI_ERR_CONVERSION;
            w->native += ns;
            w->ext += ext;
        }
    }
    w->ext_bytes += n * ext;
}

/* Convert @count elements of @t, predefined or made of predefined ones. */
static void walk_type(ext_walk_t *w, const pb_datatype_t *t, MPI_Count count)
{
    pb_basic_t kind = pb_eng_type_basic(t);

    if (pair_value[kind] != PB_BASIC_NONE) {
        for (MPI_Count i = 0; i < count * (MPI_Count)(t->size / pb_eng_type_of_basic(kind)->size);
             i++) {
            walk_values(w, pair_value[kind], 1);
            walk_values(w, PB_BASIC_INT, 1);
        }
        return;
    }
    if (t->predefined || kind != PB_BASIC_NONE) {
        /* one kind throughout (MPI_PACKED: bytes) */
        walk_values(w, kind,
                    count * (MPI_Count)(t->size / (native_size(kind) * ext_kinds[kind].parts)));
        return;
    }
    for (MPI_Count i = 0; i < count; i++) {
        for (size_t p = 0; p < t->nparts; p++)
            walk_type(w, t->parts[p].type, t->parts[p].n);
    }
}

/* ---- the functions -------------------------------------------------------------------------- */

/* Check the arguments all three calls have: @datarep, @count, @datatype. */
static int external_args(const char *func, const char *datarep, MPI_Count count,
                         MPI_Datatype datatype, int committed, pb_datatype_t **t_p)
{
    if (datarep == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "datarep is NULL");
    if (strcmp(datarep, "external32") != 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_UNSUPPORTED_DATAREP, func,
                            "datarep \"%s\" is not \"external32\", the one these calls know",
                            datarep);
    if (count < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COUNT, func, "count %lld is negative",
                            (long long)count);
    *t_p = pb_mpi_datatype(datatype);
    if (*t_p == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func, "datatype is not a datatype");
    if (committed && !pb_eng_type_is_committed(*t_p))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_TYPE, func,
                            "datatype is not committed (call MPI_Type_commit first)");
    return MPI_SUCCESS;
}

/* The external32 bytes of @count elements of @t. */
static MPI_Count external_size(const pb_datatype_t *t, MPI_Count count)
{
    ext_walk_t w = {.to_ext = 1};

    walk_type(&w, t, count);
    return w.ext_bytes;
}

/* Convert @count elements of @t between @user (their layout) and @ext
 * (external32) one element at a time through a native buffer.
 * @return MPI_SUCCESS, MPI_ERR_NO_MEM, MPI_ERR_CONVERSION. */
static int external_move(int to_ext, void *user, MPI_Count count, const pb_datatype_t *t,
                         unsigned char *ext)
{
    size_t per = pb_eng_type_size(t), batch = per > 0 && per < CHUNK ? CHUNK / per : 1;
    unsigned char *native = per > 0 ? malloc(per * batch) : NULL;
    int status = MPI_SUCCESS;

    if (per == 0 || count == 0) {
        free(native);
        return MPI_SUCCESS;
    }
    if (native == NULL)
        return MPI_ERR_NO_MEM;
    for (MPI_Count done = 0; done < count;) {
        MPI_Count n = count - done < (MPI_Count)batch ? count - done : (MPI_Count)batch;
        ext_walk_t w = {.to_ext = to_ext, .native = native, .ext = ext};
        size_t offset = (size_t)done * per;

        if (to_ext)
            pb_eng_type_pack_range(user, count, t, offset, native, (size_t)n * per);
        walk_type(&w, t, n);
        if (!to_ext)
            pb_eng_type_unpack_range(native, (size_t)n * per, user, count, t, offset);
        if (w.status != MPI_SUCCESS)
            status = w.status;
        ext = w.ext;
        done += n;
    }
    free(native);
    return status;
}

/* Pack @incount elements of @datatype at @inbuf into @outbuf (@outsize
 * bytes) at *@position in the @datarep representation ("external32"), and
 * advance *@position.  @return MPI_SUCCESS; MPI_ERR_UNSUPPORTED_DATAREP
 * (another datarep), MPI_ERR_COUNT (incount < 0), MPI_ERR_TYPE (bad or
 * uncommitted), MPI_ERR_ARG (datarep or position NULL, *position out of
 * range, data that does not fit), MPI_ERR_BUFFER (outbuf NULL),
 * MPI_ERR_CONVERSION (a value beyond its external32 size: what fits is
 * packed), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Pack_external_c(const char datarep[], const void *inbuf, MPI_Count incount,
                                   MPI_Datatype datatype, void *outbuf, MPI_Count outsize,
                                   MPI_Count *position)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Pack_external";
    pb_datatype_t *t;
    MPI_Count bytes;
    int ret = external_args(func, datarep, incount, datatype, 1, &t);

    if (ret != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_position_arg(func, "outsize", outsize, position)) != MPI_SUCCESS)
        return ret;
    bytes = external_size(t, incount);
    if ((ret = pb_dt_packed_room(func, 1, outsize, *position, bytes, outbuf)) != MPI_SUCCESS)
        return ret;
    ret =
        external_move(1, (void *)(uintptr_t)inbuf, incount, t, (unsigned char *)outbuf + *position);
    if (ret == MPI_ERR_NO_MEM)
        return pb_mpi_raise(MPI_COMM_NULL, ret, func, "out of memory for the conversion");
    *position += bytes;
    if (ret != MPI_SUCCESS)
        return pb_mpi_raise(MPI_COMM_NULL, ret, func,
                            "a value does not fit its external32 size (a long beyond 32 bits, "
                            "a wchar_t beyond 16)");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_external_c, PMPI_Pack_external_c);

/* MPI_Pack_external_c with an int count and MPI_Aint sizes; same errors. */
PB_EXPORT int PMPI_Pack_external(const char datarep[], const void *inbuf, int incount,
                                 MPI_Datatype datatype, void *outbuf, MPI_Aint outsize,
                                 MPI_Aint *position)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count pos;
    int ret;

    if (position == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Pack_external", "position is NULL");
    pos = *position;
    ret = PMPI_Pack_external_c(datarep, inbuf, incount, datatype, outbuf, outsize, &pos);
    *position = (MPI_Aint)pos;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_external, PMPI_Pack_external);

/* Unpack @outcount elements of @datatype into @outbuf from the @datarep
 * ("external32") data at @inbuf (@insize bytes) from *@position, and
 * advance *@position.  @return MPI_SUCCESS; MPI_ERR_UNSUPPORTED_DATAREP,
 * MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_ARG (datarep or position NULL,
 * *position out of range), MPI_ERR_TRUNCATE (fewer bytes left than the
 * data needs), MPI_ERR_BUFFER (inbuf NULL), MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Unpack_external_c(const char datarep[], const void *inbuf, MPI_Count insize,
                                     MPI_Count *position, void *outbuf, MPI_Count outcount,
                                     MPI_Datatype datatype)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Unpack_external";
    pb_datatype_t *t;
    MPI_Count bytes;
    int ret = external_args(func, datarep, outcount, datatype, 1, &t);

    if (ret != MPI_SUCCESS)
        return ret;
    if ((ret = pb_dt_position_arg(func, "insize", insize, position)) != MPI_SUCCESS)
        return ret;
    bytes = external_size(t, outcount);
    if ((ret = pb_dt_packed_room(func, 0, insize, *position, bytes, inbuf)) != MPI_SUCCESS)
        return ret;
    ret = external_move(0, outbuf, outcount, t, (unsigned char *)(uintptr_t)inbuf + *position);
    if (ret != MPI_SUCCESS)
        return pb_mpi_raise(MPI_COMM_NULL, ret, func, "out of memory for the conversion");
    *position += bytes;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Unpack_external_c, PMPI_Unpack_external_c);

/* MPI_Unpack_external_c with MPI_Aint sizes and an int count; same
 * errors. */
PB_EXPORT int PMPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
                                   MPI_Aint *position, void *outbuf, int outcount,
                                   MPI_Datatype datatype)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count pos;
    int ret;

    if (position == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Unpack_external", "position is NULL");
    pos = *position;
    ret = PMPI_Unpack_external_c(datarep, inbuf, insize, &pos, outbuf, outcount, datatype);
    *position = (MPI_Aint)pos;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Unpack_external, PMPI_Unpack_external);

/* The bytes @incount elements of @datatype take in @datarep
 * ("external32"), in *@size: exact, as the representation fixes them.
 * @return MPI_SUCCESS; MPI_ERR_UNSUPPORTED_DATAREP, MPI_ERR_COUNT,
 * MPI_ERR_TYPE, MPI_ERR_ARG (datarep or size NULL). */
PB_EXPORT int PMPI_Pack_external_size_c(const char datarep[], MPI_Count incount,
                                        MPI_Datatype datatype, MPI_Count *size)
{
    PB_MPI_THREAD_GUARD;
    const char *func = "MPI_Pack_external_size";
    pb_datatype_t *t;
    int ret = external_args(func, datarep, incount, datatype, 0, &t);

    if (ret != MPI_SUCCESS)
        return ret;
    if (size == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "size is NULL");
    *size = external_size(t, incount);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_external_size_c, PMPI_Pack_external_size_c);

/* MPI_Pack_external_size_c with an int count and an MPI_Aint size; same
 * errors. */
PB_EXPORT int PMPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype,
                                      MPI_Aint *size)
{
    PB_MPI_THREAD_GUARD;
    MPI_Count c;
    int ret;

    if (size == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Pack_external_size", "size is NULL");
    ret = PMPI_Pack_external_size_c(datarep, incount, datatype, &c);
    if (ret == MPI_SUCCESS)
        *size = (MPI_Aint)c;
    return ret;
}
PB_MPI_WEAK_ALIAS(MPI_Pack_external_size, PMPI_Pack_external_size);
