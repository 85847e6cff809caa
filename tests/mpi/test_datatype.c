/* Datatypes (src/mpi/datatype.c): the predefined types, every constructor
 * against hand-computed sizes, bounds and type maps, pack/unpack whole and
 * in arbitrary byte ranges, the count queries, names, handle conversions
 * and the error class of each bad argument.
 *
 * datatype.c is compiled into this program, whose pb_mpi_raise returns the
 * error (MPI_ERRORS_RETURN) and keeps its message for the checks; nothing
 * here needs MPI_Init. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <mpi.h>

#include "harness.h"
#include "mpi/datatype.h"

/* ---- the error handler of this program: MPI_ERRORS_RETURN ------------------------------ */

static int last_code;
static char last_func[64];
static char last_msg[512];

__attribute__((weak)) int pb_mpi_raise(MPI_Comm comm, int code, const char *func, const char *fmt,
                                       ...)
{
    va_list ap;

    if (code == MPI_SUCCESS)
        return MPI_SUCCESS;
    last_code = code;
    snprintf(last_func, sizeof(last_func), "%s", func);
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    va_end(ap);
    return code;
}

/* @call must return error @code, raised with a message containing @word */
#define CHECK_ERR(call, code, word)                                                                \
    do {                                                                                           \
        int rc_;                                                                                   \
        last_msg[0] = '\0';                                                                        \
        rc_ = (call);                                                                              \
        CHECK_MSG(rc_ == (code), "%s returned %d, expected %d", #call, rc_, (code));               \
        CHECK_MSG(last_code == (code), "%s raised %d, expected %d", #call, last_code, (code));     \
        CHECK_MSG(strstr(last_msg, (word)) != NULL, "%s: message \"%s\" lacks \"%s\"", #call,      \
                  last_msg, (word));                                                               \
    } while (0)

#define CHECK_OKAY(call)                                                                           \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        CHECK_MSG(rc_ == MPI_SUCCESS, "%s returned %d (%s)", #call, rc_, last_msg);                \
    } while (0)

/* size, lb, extent, true lb, true extent of @t */
static void check_bounds(MPI_Datatype t, MPI_Count size, MPI_Aint lb, MPI_Aint extent,
                         MPI_Aint true_lb, MPI_Aint true_extent)
{
    MPI_Count size_c, lb_c, extent_c;
    MPI_Aint l, e;
    int isize;

    CHECK_OKAY(MPI_Type_size_c(t, &size_c));
    CHECK_MSG(size_c == size, "size %lld, expected %lld", (long long)size_c, (long long)size);
    CHECK_OKAY(MPI_Type_size(t, &isize));
    CHECK(isize == size);
    CHECK_OKAY(MPI_Type_get_extent(t, &l, &e));
    CHECK_MSG(l == lb && e == extent, "lb %ld extent %ld, expected %ld %ld", (long)l, (long)e,
              (long)lb, (long)extent);
    CHECK_OKAY(MPI_Type_get_extent_c(t, &lb_c, &extent_c));
    CHECK(lb_c == lb && extent_c == extent);
    CHECK_OKAY(MPI_Type_get_true_extent(t, &l, &e));
    CHECK_MSG(l == true_lb && e == true_extent, "true lb %ld extent %ld, expected %ld %ld", (long)l,
              (long)e, (long)true_lb, (long)true_extent);
    CHECK_OKAY(MPI_Type_get_true_extent_c(t, &lb_c, &extent_c));
    CHECK(lb_c == true_lb && extent_c == true_extent);
}

static void commit(MPI_Datatype *t)
{
    CHECK_OKAY(MPI_Type_commit(t));
}

static void type_free(MPI_Datatype *t)
{
    CHECK_OKAY(MPI_Type_free(t));
    CHECK(*t == MPI_DATATYPE_NULL);
}

/* ---- type maps: pack and unpack against the blocks a type should cover ----------------- */

typedef struct {
    long off; /* from the buffer's origin */
    size_t len;
} blk_t;

#define ARENA 8192
#define ORIGIN 4096

static unsigned rnd_state = 12345;

static unsigned rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 8) & 0xffffff;
}

/* @count elements of @t at the origin of a buffer must pack to the bytes of
 * @blks, in order: whole (MPI_Pack), in random ranges
 * (pb_eng_type_pack_range), piece by piece; and unpack (whole and in random
 * pieces) to exactly those bytes, leaving every other byte alone. */
static void check_map(MPI_Datatype type, MPI_Count count, const blk_t *blks, size_t nblks)
{
    unsigned char *src = malloc(ARENA), *dst = malloc(ARENA);
    unsigned char *expect = malloc(ARENA), *packed = malloc(ARENA), *mask = calloc(1, ARENA);
    pb_datatype_t *t = pb_mpi_datatype(type);
    size_t total = 0, i, off;
    MPI_Count pos = 0;
    int iter;

    CHECK(t != NULL);
    for (i = 0; i < ARENA; i++)
        src[i] = (unsigned char)(rnd() | 1); /* never 0: unpacked bytes are told from gaps */
    for (i = 0; i < nblks; i++) {
        CHECK(ORIGIN + blks[i].off >= 0 && ORIGIN + blks[i].off + (long)blks[i].len <= ARENA);
        memcpy(expect + total, src + ORIGIN + blks[i].off, blks[i].len);
        memset(mask + ORIGIN + blks[i].off, 1, blks[i].len);
        total += blks[i].len;
    }
    CHECK_EQ_U64(total, (size_t)count * pb_eng_type_size(t));

    /* whole */
    memset(packed, 0, ARENA);
    CHECK_OKAY(MPI_Pack_c(src + ORIGIN, count, type, packed, ARENA, &pos, MPI_COMM_SELF));
    CHECK_EQ_U64(pos, total);
    CHECK_MSG(memcmp(packed, expect, total) == 0, "MPI_Pack differs from the type map");

    /* random ranges */
    for (iter = 0; iter < 300 && total > 0; iter++) {
        size_t a = rnd() % total, len = rnd() % (total - a + 1);

        memset(packed, 0, ARENA);
        pb_eng_type_pack_range(src + ORIGIN, count, t, a, packed, len);
        CHECK_MSG(memcmp(packed, expect + a, len) == 0, "range [%zu, +%zu) differs", a, len);
    }

    /* piece by piece, random piece sizes */
    memset(packed, 0, ARENA);
    for (off = 0; off < total;) {
        size_t len = 1 + rnd() % 40;

        if (len > total - off)
            len = total - off;
        pb_eng_type_pack_range(src + ORIGIN, count, t, off, packed + off, len);
        off += len;
    }
    CHECK(memcmp(packed, expect, total) == 0);

    /* unpack in pieces */
    memset(dst, 0, ARENA);
    for (off = 0; off < total;) {
        size_t len = 1 + rnd() % 40;

        if (len > total - off)
            len = total - off;
        pb_eng_type_unpack_range(expect + off, len, dst + ORIGIN, count, t, off);
        off += len;
    }
    for (i = 0; i < ARENA; i++)
        CHECK_MSG(dst[i] == (mask[i] ? src[i] : 0), "unpacked byte %ld is %u, expected %u",
                  (long)i - ORIGIN, dst[i], mask[i] ? src[i] : 0);

    /* unpack whole */
    memset(dst, 0, ARENA);
    pos = 0;
    CHECK_OKAY(
        MPI_Unpack_c(expect, (MPI_Count)total, &pos, dst + ORIGIN, count, type, MPI_COMM_SELF));
    CHECK_EQ_U64(pos, total);
    for (i = 0; i < ARENA; i++)
        CHECK(dst[i] == (mask[i] ? src[i] : 0));
    free(src);
    free(dst);
    free(expect);
    free(packed);
    free(mask);
}

/* ---- predefined types ------------------------------------------------------------------- */

typedef struct {
    MPI_Datatype type;
    const char *name;
    size_t size;   /* bytes of data */
    size_t extent; /* sizeof the C type */
} predef_t;

#define P(t, ctype)                                                                                \
    {                                                                                              \
        t, #t, sizeof(ctype), sizeof(ctype)                                                        \
    }
#define PAIR(t, stype, vtype)                                                                      \
    {                                                                                              \
        t, #t, sizeof(vtype) + sizeof(int), sizeof(stype)                                          \
    }

static const predef_t predefs[] = {
    P(MPI_AINT, MPI_Aint),
    P(MPI_COUNT, MPI_Count),
    P(MPI_OFFSET, MPI_Offset),
    P(MPI_PACKED, char),
    P(MPI_SHORT, short),
    P(MPI_INT, int),
    P(MPI_LONG, long),
    P(MPI_LONG_LONG, long long),
    P(MPI_UNSIGNED_SHORT, unsigned short),
    P(MPI_UNSIGNED, unsigned),
    P(MPI_UNSIGNED_LONG, unsigned long),
    P(MPI_UNSIGNED_LONG_LONG, unsigned long long),
    P(MPI_FLOAT, float),
    P(MPI_C_FLOAT_COMPLEX, float _Complex),
    P(MPI_CXX_FLOAT_COMPLEX, float _Complex),
    P(MPI_DOUBLE, double),
    P(MPI_C_DOUBLE_COMPLEX, double _Complex),
    P(MPI_CXX_DOUBLE_COMPLEX, double _Complex),
    P(MPI_LONG_DOUBLE, long double),
    P(MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex),
    P(MPI_CXX_LONG_DOUBLE_COMPLEX, long double _Complex),
    PAIR(MPI_FLOAT_INT, pb_float_int_t, float),
    PAIR(MPI_DOUBLE_INT, pb_double_int_t, double),
    PAIR(MPI_LONG_INT, pb_long_int_t, long),
    PAIR(MPI_2INT, pb_2int_t, int),
    PAIR(MPI_SHORT_INT, pb_short_int_t, short),
    PAIR(MPI_LONG_DOUBLE_INT, pb_long_double_int_t, long double),
    P(MPI_C_BOOL, _Bool),
    P(MPI_CXX_BOOL, _Bool),
    P(MPI_WCHAR, wchar_t),
    P(MPI_INT8_T, int8_t),
    P(MPI_UINT8_T, uint8_t),
    P(MPI_CHAR, char),
    P(MPI_SIGNED_CHAR, signed char),
    P(MPI_UNSIGNED_CHAR, unsigned char),
    P(MPI_BYTE, unsigned char),
    P(MPI_INT16_T, int16_t),
    P(MPI_UINT16_T, uint16_t),
    P(MPI_INT32_T, int32_t),
    P(MPI_UINT32_T, uint32_t),
    P(MPI_INT64_T, int64_t),
    P(MPI_UINT64_T, uint64_t),
};

static void case_predefined_sizes_extents_and_names(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    size_t i;
    int len;

    for (i = 0; i < PB_ARRAY_SIZE(predefs); i++) {
        const predef_t *p = &predefs[i];
        MPI_Aint true_extent = (MPI_Aint)p->size;

        if (p->type == MPI_SHORT_INT)
            true_extent = offsetof(pb_short_int_t, i) + sizeof(int);
        check_bounds(p->type, (MPI_Count)p->size, 0, (MPI_Aint)p->extent, 0, true_extent);
        CHECK_OKAY(MPI_Type_get_name(p->type, name, &len));
        CHECK_MSG(strcmp(name, p->name) == 0, "name of %s is \"%s\"", p->name, name);
        CHECK(len == (int)strlen(p->name));
        CHECK(pb_mpi_datatype_check(p->type) == MPI_SUCCESS);
        CHECK(MPI_Type_toint(p->type) == (int)(uintptr_t)p->type);
        CHECK(MPI_Type_fromint(MPI_Type_toint(p->type)) == p->type);
    }
    /* synonyms */
    CHECK(MPI_LONG_LONG_INT == MPI_LONG_LONG && MPI_C_COMPLEX == MPI_C_FLOAT_COMPLEX);
}

static void case_predefined_contiguity(void)
{
    CHECK(pb_eng_type_is_contiguous(pb_mpi_datatype(MPI_INT)));
    CHECK(pb_eng_type_is_contiguous(pb_mpi_datatype(MPI_2INT)));
    CHECK(pb_eng_type_is_contiguous(pb_mpi_datatype(MPI_FLOAT_INT)));
    CHECK(!pb_eng_type_is_contiguous(pb_mpi_datatype(MPI_DOUBLE_INT)));
    CHECK(!pb_eng_type_is_contiguous(pb_mpi_datatype(MPI_SHORT_INT)));
    CHECK(pb_eng_type_basic(pb_mpi_datatype(MPI_DOUBLE_INT)) == PB_BASIC_DOUBLE_INT);
    CHECK(pb_eng_type_basic(pb_mpi_datatype(MPI_CXX_BOOL)) == PB_BASIC_C_BOOL);
    CHECK(pb_eng_type_basic(pb_mpi_datatype(MPI_PACKED)) == PB_BASIC_NONE);
    CHECK(pb_eng_type_of_basic(PB_BASIC_INT) == pb_mpi_datatype(MPI_INT));
    CHECK(pb_eng_type_of_basic(PB_BASIC_C_BOOL) == pb_mpi_datatype(MPI_C_BOOL));
}

static void case_predefined_pairs_pack_without_padding(void)
{
    pb_double_int_t di[3] = {{1.5, 7}, {-2.0, 8}, {3.25, 9}};
    pb_short_int_t si[2] = {{-3, 100}, {4, -200}};
    blk_t di_map[6], si_map[4];
    int k;

    for (k = 0; k < 3; k++) {
        di_map[2 * k] = (blk_t){(long)(k * sizeof(pb_double_int_t)), sizeof(double)};
        di_map[2 * k + 1] = (blk_t){
            (long)(k * sizeof(pb_double_int_t) + offsetof(pb_double_int_t, i)), sizeof(int)};
    }
    check_map(MPI_DOUBLE_INT, 3, di_map, 6);
    for (k = 0; k < 2; k++) {
        si_map[2 * k] = (blk_t){(long)(k * sizeof(pb_short_int_t)), sizeof(short)};
        si_map[2 * k + 1] =
            (blk_t){(long)(k * sizeof(pb_short_int_t) + offsetof(pb_short_int_t, i)), sizeof(int)};
    }
    check_map(MPI_SHORT_INT, 2, si_map, 4);
    (void)di;
    (void)si;
}

static void case_fortran_types_are_not_supported(void)
{
    int size;

    CHECK(pb_mpi_datatype(MPI_INTEGER) == NULL);
    CHECK(pb_mpi_datatype(MPI_REAL8) == NULL);
    CHECK(pb_mpi_datatype(MPI_DATATYPE_NULL) == NULL);
    CHECK_ERR(MPI_Type_size(MPI_INTEGER, &size), MPI_ERR_TYPE, "Fortran");
    CHECK_ERR(MPI_Type_size(MPI_DOUBLE_PRECISION, &size), MPI_ERR_TYPE, "datatype");
    CHECK(pb_mpi_datatype_check(MPI_REAL) == MPI_ERR_TYPE);
}

/* ---- constructors ---------------------------------------------------------------------- */

static void case_contiguous_is_one_block(void)
{
    MPI_Datatype t, e;
    blk_t map[] = {{0, 5 * sizeof(int)}};

    CHECK_OKAY(MPI_Type_contiguous(5, MPI_INT, &t));
    check_bounds(t, 20, 0, 20, 0, 20);
    CHECK(pb_mpi_datatype_check(t) == MPI_ERR_TYPE); /* not yet committed */
    commit(&t);
    CHECK(pb_mpi_datatype_check(t) == MPI_SUCCESS);
    CHECK(pb_eng_type_is_contiguous(pb_mpi_datatype(t)));
    CHECK(pb_eng_type_basic(pb_mpi_datatype(t)) == PB_BASIC_INT);
    check_map(t, 1, map, 1);
    type_free(&t);

    CHECK_OKAY(MPI_Type_contiguous(0, MPI_INT, &e));
    check_bounds(e, 0, 0, 0, 0, 0);
    commit(&e);
    CHECK(pb_eng_type_is_contiguous(pb_mpi_datatype(e)));
    type_free(&e);
}

static void case_vector_bounds_and_map(void)
{
    MPI_Datatype t;
    blk_t map[6];
    int k;

    /* 3 blocks of 2 doubles, 4 doubles apart */
    CHECK_OKAY(MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &t));
    check_bounds(t, 48, 0, 80, 0, 80);
    commit(&t);
    CHECK(!pb_eng_type_is_contiguous(pb_mpi_datatype(t)));
    CHECK(pb_eng_type_basic(pb_mpi_datatype(t)) == PB_BASIC_DOUBLE);
    /* two elements: the second starts one extent (80) after the first */
    for (k = 0; k < 6; k++)
        map[k] = (blk_t){(k / 3) * 80 + (k % 3) * 32, 16};
    check_map(t, 2, map, 6);
    type_free(&t);

    /* stride == blocklength: contiguous */
    CHECK_OKAY(MPI_Type_vector(4, 3, 3, MPI_INT, &t));
    commit(&t);
    check_bounds(t, 48, 0, 48, 0, 48);
    CHECK(pb_eng_type_is_contiguous(pb_mpi_datatype(t)));
    type_free(&t);
}

static void case_vector_negative_stride(void)
{
    MPI_Datatype t;
    blk_t map[] = {{0, 4}, {-8, 4}, {-16, 4}};

    CHECK_OKAY(MPI_Type_vector(3, 1, -2, MPI_INT, &t));
    check_bounds(t, 12, -16, 20, -16, 20);
    commit(&t);
    check_map(t, 1, map, 3);
    type_free(&t);
}

static void case_hvector_bounds_and_map(void)
{
    MPI_Datatype t;
    blk_t map[] = {{0, 3}, {100, 3}, {103, 3}, {203, 3}};

    CHECK_OKAY(MPI_Type_create_hvector(2, 3, 100, MPI_CHAR, &t));
    check_bounds(t, 6, 0, 103, 0, 103);
    commit(&t);
    check_map(t, 2, map, 4);
    type_free(&t);
    CHECK_OKAY(MPI_Type_create_hvector_c(2, 1, 6, MPI_INT, &t));
    check_bounds(t, 8, 0, 10, 0, 10);
    type_free(&t);
}

static void case_indexed_keeps_the_order_given(void)
{
    MPI_Datatype t;
    int bl[] = {3, 1, 0}, disp[] = {4, 0, 100};
    MPI_Count blc[] = {3, 1}, dispc[] = {4, 0};
    blk_t map[] = {{16, 12}, {0, 4}, {28 + 16, 12}, {28, 4}};

    CHECK_OKAY(MPI_Type_indexed(3, bl, disp, MPI_INT, &t));
    check_bounds(t, 16, 0, 28, 0, 28); /* the empty block at 100 counts for nothing */
    commit(&t);
    check_map(t, 2, map, 4);
    type_free(&t);
    CHECK_OKAY(MPI_Type_indexed_c(2, blc, dispc, MPI_INT, &t));
    check_bounds(t, 16, 0, 28, 0, 28);
    type_free(&t);
}

static void case_hindexed_and_blocks(void)
{
    MPI_Datatype t;
    int bl[] = {2, 1};
    MPI_Aint disp[] = {10, -6};
    int idisp[] = {5, 1};
    MPI_Aint hdisp[] = {3, 20};
    blk_t hmap[] = {{10, 4}, {-6, 2}};
    blk_t bmap[] = {{20, 8}, {4, 8}};
    blk_t hbmap[] = {{3, 2}, {20, 2}};

    CHECK_OKAY(MPI_Type_create_hindexed(2, bl, disp, MPI_SHORT, &t));
    check_bounds(t, 6, -6, 20, -6, 20);
    commit(&t);
    check_map(t, 1, hmap, 2);
    type_free(&t);

    CHECK_OKAY(MPI_Type_create_indexed_block(2, 2, idisp, MPI_FLOAT, &t));
    check_bounds(t, 16, 4, 24, 4, 24);
    commit(&t);
    check_map(t, 1, bmap, 2);
    type_free(&t);

    CHECK_OKAY(MPI_Type_create_hindexed_block(2, 1, hdisp, MPI_INT16_T, &t));
    check_bounds(t, 4, 3, 19, 3, 19);
    commit(&t);
    check_map(t, 1, hbmap, 2);
    type_free(&t);
}

struct cdi {
    char c;
    double d;
    int i;
};

static void case_struct_is_padded_like_c(void)
{
    MPI_Datatype t;
    int bl[] = {1, 1, 1};
    MPI_Aint disp[] = {offsetof(struct cdi, c), offsetof(struct cdi, d), offsetof(struct cdi, i)};
    MPI_Datatype types[] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    blk_t map[] = {{0, 1}, {8, 12}, {24, 1}, {32, 12}};

    CHECK_OKAY(MPI_Type_create_struct(3, bl, disp, types, &t));
    /* data ends at 20; the extent is sizeof(struct cdi) = 24 */
    check_bounds(t, 13, 0, (MPI_Aint)sizeof(struct cdi), 0, 20);
    CHECK(pb_eng_type_basic(pb_mpi_datatype(t)) == PB_BASIC_NONE);
    commit(&t);
    check_map(t, 2, map, 4);
    type_free(&t);
}

static void case_resized_sets_the_bounds(void)
{
    MPI_Datatype r, c, s;
    blk_t map[] = {{0, 4}, {16, 4}, {32, 4}};
    int bl[] = {1, 1};
    MPI_Aint disp[] = {0, 40};
    MPI_Datatype types[2];

    CHECK_OKAY(MPI_Type_create_resized(MPI_INT, -4, 16, &r));
    check_bounds(r, 4, -4, 16, 0, 4);
    CHECK_OKAY(MPI_Type_contiguous(3, r, &c));
    check_bounds(c, 12, -4, 48, 0, 36);
    commit(&c);
    check_map(c, 1, map, 3);
    /* a struct with a resized part: its markers alone set the bounds, even
     * with data beyond them, and no alignment padding is added */
    types[0] = r;
    types[1] = MPI_CHAR;
    CHECK_OKAY(MPI_Type_create_struct(2, bl, disp, types, &s));
    check_bounds(s, 5, -4, 16, 0, 41);
    type_free(&s);
    type_free(&c);
    type_free(&r);
    CHECK_OKAY(MPI_Type_create_resized_c(MPI_DOUBLE, 0, 24, &r));
    check_bounds(r, 8, 0, 24, 0, 8);
    type_free(&r);
}

static void case_dup_has_the_same_properties(void)
{
    MPI_Datatype v, d, u;
    char name[MPI_MAX_OBJECT_NAME];
    int len;

    CHECK_OKAY(MPI_Type_vector(2, 1, 3, MPI_INT, &v));
    CHECK_OKAY(MPI_Type_dup(v, &u));
    CHECK(pb_mpi_datatype_check(u) == MPI_ERR_TYPE); /* v was not committed */
    commit(&v);
    CHECK_OKAY(MPI_Type_dup(v, &d));
    check_bounds(d, 8, 0, 16, 0, 16);
    CHECK(pb_mpi_datatype_check(d) == MPI_SUCCESS);
    CHECK_OKAY(MPI_Type_get_name(d, name, &len));
    CHECK(len == 0 && name[0] == '\0');
    type_free(&d);
    type_free(&u);
    type_free(&v);
    CHECK_OKAY(MPI_Type_dup(MPI_DOUBLE_INT, &d));
    check_bounds(d, 12, 0, 16, 0, 12);
    type_free(&d);
}

static void case_nested_types(void)
{
    MPI_Datatype pair, vec, outer;
    int bl[] = {1, 2};
    MPI_Aint disp[] = {0, 4};
    MPI_Datatype types[] = {MPI_INT, MPI_SHORT};
    blk_t map[4];
    int k;

    /* struct {int; short[2]} : 8 bytes, extent 8 */
    CHECK_OKAY(MPI_Type_create_struct(2, bl, disp, types, &pair));
    check_bounds(pair, 8, 0, 8, 0, 8);
    /* vector of 2 blocks of 1 pair, 3 pairs apart, then 2 of those in an hvector */
    CHECK_OKAY(MPI_Type_vector(2, 1, 3, pair, &vec));
    check_bounds(vec, 16, 0, 32, 0, 32);
    CHECK_OKAY(MPI_Type_create_hvector(2, 1, 40, vec, &outer));
    check_bounds(outer, 32, 0, 72, 0, 72);
    commit(&outer);
    for (k = 0; k < 4; k++)
        map[k] = (blk_t){(k / 2) * 40 + (k % 2) * 24, 8};
    check_map(outer, 1, map, 4);
    /* freeing the parts does not affect the whole */
    type_free(&pair);
    type_free(&vec);
    check_map(outer, 1, map, 4);
    type_free(&outer);
}

static void case_retained_type_outlives_its_handle(void)
{
    MPI_Datatype t;
    pb_datatype_t *pt;
    blk_t map[] = {{0, 4}, {8, 4}};
    int src[3] = {1, 2, 3}, out[2] = {0, 0};

    CHECK_OKAY(MPI_Type_vector(2, 1, 2, MPI_INT, &t));
    commit(&t);
    check_map(t, 1, map, 2);
    pt = pb_mpi_datatype(t);
    pb_eng_type_retain(pt); /* as a pending send would */
    type_free(&t);
    pb_eng_type_pack_range(src, 1, pt, 0, out, 8);
    CHECK(out[0] == 1 && out[1] == 3);
    pb_eng_type_release(pt);
    pb_eng_type_retain(pb_mpi_datatype(MPI_INT)); /* no-ops on predefined types */
    pb_eng_type_release(pb_mpi_datatype(MPI_INT));
}

static void case_large_vector_stays_small(void)
{
    MPI_Datatype t;
    pb_datatype_t *pt;
    int *src = malloc(2000000 * sizeof(int)), out[4];
    size_t i;

    for (i = 0; i < 2000000; i++)
        src[i] = (int)i;
    CHECK_OKAY(MPI_Type_vector(1000000, 1, 2, MPI_INT, &t));
    commit(&t);
    pt = pb_mpi_datatype(t);
    /* packed bytes [2 MB - 8, 2 MB + 8) are the ints of elements 499998 to 500001 */
    pb_eng_type_pack_range(src, 1, pt, 2000000 - 8, out, 16);
    CHECK(out[0] == 2 * 499998 && out[1] == 2 * 499999 && out[2] == 2 * 500000 &&
          out[3] == 2 * 500001);
    type_free(&t);
    free(src);
}

static void case_mpi_bottom_with_absolute_addresses(void)
{
    struct {
        int a;
        double b;
    } s = {42, 2.5};
    MPI_Aint disp[2];
    int bl[] = {1, 1};
    MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE}, t;
    char packed[64];
    int pos = 0, a;
    double b;

    CHECK_OKAY(MPI_Get_address(&s.a, &disp[0]));
    CHECK_OKAY(MPI_Get_address(&s.b, &disp[1]));
    CHECK(MPI_Aint_diff(disp[1], disp[0]) == (MPI_Aint)offsetof(__typeof__(s), b));
    CHECK(MPI_Aint_add(disp[0], 8) == disp[0] + 8);
    CHECK_OKAY(MPI_Type_create_struct(2, bl, disp, types, &t));
    commit(&t);
    CHECK_OKAY(MPI_Pack(MPI_BOTTOM, 1, t, packed, sizeof(packed), &pos, MPI_COMM_SELF));
    CHECK(pos == 12);
    memcpy(&a, packed, 4);
    memcpy(&b, packed + 4, 8);
    CHECK(a == 42 && b == 2.5);
    s.a = 0;
    s.b = 0;
    pos = 0;
    CHECK_OKAY(MPI_Unpack(packed, 12, &pos, MPI_BOTTOM, 1, t, MPI_COMM_SELF));
    CHECK(s.a == 42 && s.b == 2.5);
    type_free(&t);
}

/* ---- pack/unpack sequences and sizes ----------------------------------------------------- */

static void case_pack_sequence_and_unpack(void)
{
    int ints[3] = {1, 2, 3}, ints2[3] = {0};
    double d = 6.5, d2 = 0;
    char buf[64];
    int pos = 0, size;

    CHECK_OKAY(MPI_Pack_size(3, MPI_INT, MPI_COMM_SELF, &size));
    CHECK(size == 12);
    CHECK_OKAY(MPI_Pack(ints, 3, MPI_INT, buf, sizeof(buf), &pos, MPI_COMM_SELF));
    CHECK(pos == 12);
    CHECK_OKAY(MPI_Pack(&d, 1, MPI_DOUBLE, buf, sizeof(buf), &pos, MPI_COMM_SELF));
    CHECK(pos == 20);
    pos = 0;
    CHECK_OKAY(MPI_Unpack(buf, 20, &pos, ints2, 3, MPI_INT, MPI_COMM_SELF));
    CHECK_OKAY(MPI_Unpack(buf, 20, &pos, &d2, 1, MPI_DOUBLE, MPI_COMM_SELF));
    CHECK(pos == 20);
    CHECK(ints2[0] == 1 && ints2[1] == 2 && ints2[2] == 3 && d2 == 6.5);
}

static void case_pack_errors(void)
{
    MPI_Datatype t;
    int ints[4] = {0}, pos = 0, size;
    char buf[16];
    MPI_Count big;

    CHECK_ERR(MPI_Pack(ints, -1, MPI_INT, buf, 16, &pos, MPI_COMM_SELF), MPI_ERR_COUNT, "incount");
    CHECK_ERR(MPI_Pack(ints, 4, MPI_INT, buf, 15, &pos, MPI_COMM_SELF), MPI_ERR_ARG, "outsize");
    CHECK_ERR(MPI_Pack(ints, 1, MPI_INT, buf, 16, NULL, MPI_COMM_SELF), MPI_ERR_ARG, "position");
    pos = 17;
    CHECK_ERR(MPI_Pack(ints, 1, MPI_INT, buf, 16, &pos, MPI_COMM_SELF), MPI_ERR_ARG, "position");
    pos = 0;
    CHECK_ERR(MPI_Pack(ints, 1, MPI_DATATYPE_NULL, buf, 16, &pos, MPI_COMM_SELF), MPI_ERR_TYPE,
              "datatype");
    CHECK_OKAY(MPI_Type_contiguous(2, MPI_INT, &t));
    CHECK_ERR(MPI_Pack(ints, 1, t, buf, 16, &pos, MPI_COMM_SELF), MPI_ERR_TYPE, "committed");
    commit(&t);
    CHECK_OKAY(MPI_Pack(ints, 1, t, buf, 16, &pos, MPI_COMM_SELF));
    CHECK(pos == 8);
    pos = 4;
    CHECK_ERR(MPI_Unpack(buf, 8, &pos, ints, 1, t, MPI_COMM_SELF), MPI_ERR_TRUNCATE, "insize");
    CHECK(pos == 4);
    CHECK_ERR(MPI_Unpack(buf, 8, &pos, ints, -2, t, MPI_COMM_SELF), MPI_ERR_COUNT, "outcount");
    CHECK_ERR(MPI_Pack_size(-1, MPI_INT, MPI_COMM_SELF, &size), MPI_ERR_COUNT, "incount");
    CHECK_ERR(MPI_Pack_size(1, MPI_INT, MPI_COMM_SELF, NULL), MPI_ERR_ARG, "size");
    CHECK_ERR(MPI_Pack_size(INT_MAX, MPI_DOUBLE, MPI_COMM_SELF, &size), MPI_ERR_VALUE_TOO_LARGE,
              "MPI_Pack_size_c");
    CHECK_OKAY(MPI_Pack_size_c(INT_MAX, MPI_DOUBLE, MPI_COMM_SELF, &big));
    CHECK(big == (MPI_Count)INT_MAX * 8);
    type_free(&t);
}

/* ---- counts ------------------------------------------------------------------------------ */

static MPI_Status status_of(uint64_t bytes)
{
    MPI_Status st;

    memset(&st, 0, sizeof(st));
    pb_mpi_status_set_bytes(&st, bytes);
    return st;
}

static int count_of(uint64_t bytes, MPI_Datatype t)
{
    MPI_Status st = status_of(bytes);
    int n = -1;

    CHECK_OKAY(MPI_Get_count(&st, t, &n));
    return n;
}

static int elements_of(uint64_t bytes, MPI_Datatype t)
{
    MPI_Status st = status_of(bytes);
    MPI_Count nc = -1;
    int n = -1;

    CHECK_OKAY(MPI_Get_elements(&st, t, &n));
    CHECK_OKAY(MPI_Get_elements_c(&st, t, &nc));
    CHECK(nc == n || (n == MPI_UNDEFINED && nc > INT_MAX));
    return n;
}

static void case_get_count_and_elements(void)
{
    MPI_Datatype v, s, e;
    int bl[] = {1, 2};
    MPI_Aint disp[] = {0, 8};
    MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE};
    MPI_Status st = status_of((uint64_t)3 << 32);
    MPI_Count nc;
    int n;

    CHECK(count_of(12, MPI_INT) == 3);
    CHECK(count_of(13, MPI_INT) == MPI_UNDEFINED);
    CHECK(count_of(0, MPI_DOUBLE) == 0);
    CHECK(elements_of(12, MPI_INT) == 3);
    CHECK(elements_of(14, MPI_INT) == MPI_UNDEFINED);
    /* pairs: the value and the index are two basic elements */
    CHECK(count_of(24, MPI_DOUBLE_INT) == 2);
    CHECK(count_of(20, MPI_DOUBLE_INT) == MPI_UNDEFINED);
    CHECK(elements_of(24, MPI_DOUBLE_INT) == 4);
    CHECK(elements_of(20, MPI_DOUBLE_INT) == 3);
    CHECK(elements_of(22, MPI_DOUBLE_INT) == MPI_UNDEFINED);
    /* vector of 3 ints */
    CHECK_OKAY(MPI_Type_vector(3, 1, 2, MPI_INT, &v));
    CHECK(count_of(24, v) == 2);
    CHECK(count_of(20, v) == MPI_UNDEFINED);
    CHECK(elements_of(20, v) == 5);
    /* struct {int, double[2]}: 20 bytes, 3 elements */
    CHECK_OKAY(MPI_Type_create_struct(2, bl, disp, types, &s));
    CHECK(count_of(40, s) == 2);
    CHECK(elements_of(40, s) == 6);
    CHECK(elements_of(24, s) == 4); /* one struct, then the int of the next */
    CHECK(elements_of(32, s) == 5);
    CHECK(elements_of(26, s) == MPI_UNDEFINED);
    /* zero size */
    CHECK_OKAY(MPI_Type_contiguous(0, MPI_INT, &e));
    CHECK(count_of(0, e) == 0);
    CHECK(elements_of(0, e) == 0);
    /* more than an int holds */
    CHECK_OKAY(MPI_Get_count(&st, MPI_BYTE, &n));
    CHECK(n == MPI_UNDEFINED);
    CHECK_OKAY(MPI_Get_count_c(&st, MPI_BYTE, &nc));
    CHECK(nc == (MPI_Count)3 << 32);
    /* errors */
    CHECK_ERR(MPI_Get_count(MPI_STATUS_IGNORE, MPI_INT, &n), MPI_ERR_ARG, "status");
    CHECK_ERR(MPI_Get_count(&st, MPI_DATATYPE_NULL, &n), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Get_elements(&st, MPI_INT, NULL), MPI_ERR_ARG, "count");
    type_free(&v);
    type_free(&s);
    type_free(&e);
}

/* ---- argument errors ------------------------------------------------------------------- */

static void case_constructor_errors(void)
{
    MPI_Datatype t = MPI_DATATYPE_NULL, freed;
    int bl[] = {1, -1}, disp[] = {0, 1};
    MPI_Aint adisp[] = {0, 4};
    MPI_Datatype types[] = {MPI_INT, MPI_DATATYPE_NULL};
    MPI_Datatype ok_types[] = {MPI_INT, MPI_INT};
    int ok_bl[] = {1, 1};
    long fake[8] = {0};

    CHECK_ERR(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Type_contiguous(1, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE, "oldtype");
    CHECK_ERR(MPI_Type_contiguous(1, MPI_INT, NULL), MPI_ERR_ARG, "newtype");
    CHECK_ERR(MPI_Type_vector(-2, 1, 1, MPI_INT, &t), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Type_vector(2, -1, 1, MPI_INT, &t), MPI_ERR_ARG, "blocklength");
    CHECK_ERR(MPI_Type_create_hvector(2, 1, 8, MPI_INTEGER, &t), MPI_ERR_TYPE, "oldtype");
    CHECK_ERR(MPI_Type_indexed(2, bl, disp, MPI_INT, &t), MPI_ERR_ARG, "array_of_blocklengths[1]");
    CHECK_ERR(MPI_Type_indexed(2, NULL, disp, MPI_INT, &t), MPI_ERR_ARG, "array_of_blocklengths");
    CHECK_ERR(MPI_Type_indexed(2, ok_bl, NULL, MPI_INT, &t), MPI_ERR_ARG, "array_of_displacements");
    CHECK_ERR(MPI_Type_create_hindexed(-1, bl, adisp, MPI_INT, &t), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Type_create_indexed_block(2, -3, disp, MPI_INT, &t), MPI_ERR_ARG, "blocklength");
    CHECK_ERR(MPI_Type_create_struct(2, ok_bl, adisp, types, &t), MPI_ERR_TYPE,
              "array_of_types[1]");
    CHECK_ERR(MPI_Type_create_struct(2, bl, adisp, ok_types, &t), MPI_ERR_ARG,
              "array_of_blocklengths[1]");
    CHECK_ERR(MPI_Type_create_struct(-1, ok_bl, adisp, ok_types, &t), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Type_create_resized(MPI_DATATYPE_NULL, 0, 4, &t), MPI_ERR_TYPE, "oldtype");
    CHECK_ERR(MPI_Type_dup(MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE, "oldtype");
    CHECK_ERR(MPI_Type_vector(INT_MAX, INT_MAX, 1, MPI_DOUBLE, &t), MPI_ERR_ARG, "overflow");
    CHECK(t == MPI_DATATYPE_NULL);

    /* freed and made-up handles are reported, never read (ASan would see it) */
    CHECK_OKAY(MPI_Type_contiguous(2, MPI_INT, &freed));
    t = freed;
    type_free(&t);
    CHECK_ERR(MPI_Type_commit(&freed), MPI_ERR_TYPE, "not a datatype");
    CHECK_ERR(MPI_Type_free(&freed), MPI_ERR_TYPE, "not a datatype");
    CHECK_ERR(MPI_Type_contiguous(1, freed, &t), MPI_ERR_TYPE, "not a datatype");
    t = (MPI_Datatype)(void *)fake;
    CHECK_ERR(MPI_Type_commit(&t), MPI_ERR_TYPE, "not a datatype");
    t = (MPI_Datatype)(uintptr_t)0x7777;
    CHECK_ERR(MPI_Type_size(t, bl), MPI_ERR_TYPE, "not a datatype");
    CHECK(pb_mpi_datatype(t) == NULL);

    /* predefined ones cannot be freed */
    t = MPI_INT;
    CHECK_ERR(MPI_Type_free(&t), MPI_ERR_TYPE, "MPI_INT");
    CHECK(t == MPI_INT);
    CHECK_ERR(MPI_Type_free(NULL), MPI_ERR_ARG, "datatype");
    CHECK_ERR(MPI_Type_commit(NULL), MPI_ERR_ARG, "datatype");
    CHECK_OKAY(MPI_Type_commit(&t)); /* committing a predefined type is allowed */
}

static void case_query_errors(void)
{
    MPI_Aint a;
    char name[MPI_MAX_OBJECT_NAME];
    int len;

    CHECK_ERR(MPI_Type_size(MPI_INT, NULL), MPI_ERR_ARG, "size");
    CHECK_ERR(MPI_Type_get_extent(MPI_INT, NULL, &a), MPI_ERR_ARG, "lb");
    CHECK_ERR(MPI_Type_get_extent(MPI_INT, &a, NULL), MPI_ERR_ARG, "extent");
    CHECK_ERR(MPI_Type_get_true_extent(MPI_DATATYPE_NULL, &a, &a), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Type_get_name(MPI_INT, NULL, &len), MPI_ERR_ARG, "type_name");
    CHECK_ERR(MPI_Type_set_name(MPI_INT, NULL), MPI_ERR_ARG, "type_name");
    CHECK_ERR(MPI_Type_get_name(MPI_DATATYPE_NULL, name, &len), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Get_address(&a, NULL), MPI_ERR_ARG, "address");
}

/* ---- names and handle integers ----------------------------------------------------------- */

static void case_names(void)
{
    MPI_Datatype t;
    char name[MPI_MAX_OBJECT_NAME], longname[300];
    int len;

    CHECK_OKAY(MPI_Type_vector(2, 1, 2, MPI_INT, &t));
    CHECK_OKAY(MPI_Type_set_name(t, "columns"));
    CHECK_OKAY(MPI_Type_get_name(t, name, &len));
    CHECK(strcmp(name, "columns") == 0 && len == 7);
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    CHECK_OKAY(MPI_Type_set_name(t, longname));
    CHECK_OKAY(MPI_Type_get_name(t, name, &len));
    CHECK(len == MPI_MAX_OBJECT_NAME - 1 && strlen(name) == MPI_MAX_OBJECT_NAME - 1);
    type_free(&t);
    CHECK_OKAY(MPI_Type_set_name(MPI_FLOAT, "real"));
    CHECK_OKAY(MPI_Type_get_name(MPI_FLOAT, name, &len));
    CHECK(strcmp(name, "real") == 0);
    CHECK_OKAY(MPI_Type_set_name(MPI_FLOAT, "MPI_FLOAT"));
}

static void case_toint_fromint(void)
{
    MPI_Datatype a, b, c;
    int ia, ib, ic;

    CHECK(MPI_Type_toint(MPI_INT) == 0x209);
    CHECK(MPI_Type_fromint(0x209) == MPI_INT);
    CHECK(MPI_Type_toint(MPI_DATATYPE_NULL) == 0x200);
    CHECK(MPI_Type_fromint(0x200) == MPI_DATATYPE_NULL);
    CHECK_OKAY(MPI_Type_contiguous(2, MPI_INT, &a));
    CHECK_OKAY(MPI_Type_contiguous(3, MPI_INT, &b));
    ia = MPI_Type_toint(a);
    ib = MPI_Type_toint(b);
    CHECK(ia >= 0x400 && ib >= 0x400 && ia != ib);
    CHECK(MPI_Type_fromint(ia) == a && MPI_Type_fromint(ib) == b);
    CHECK(PMPI_Type_fromint(ia) == a);
    type_free(&a);
    CHECK(MPI_Type_fromint(ia) == MPI_DATATYPE_NULL);
    CHECK(MPI_Type_fromint(-5) == MPI_DATATYPE_NULL);
    CHECK(MPI_Type_fromint(0x7fffff) == MPI_DATATYPE_NULL);
    /* the integer is reused once freed */
    CHECK_OKAY(MPI_Type_contiguous(4, MPI_INT, &c));
    ic = MPI_Type_toint(c);
    CHECK(ic == ia);
    CHECK(MPI_Type_fromint(ic) == c);
    a = (MPI_Datatype)(uintptr_t)0x12345678;
    last_code = 0;
    CHECK(MPI_Type_toint(a) == 0x200);
    CHECK(last_code == MPI_ERR_TYPE && strstr(last_msg, "not a datatype") != NULL);
    type_free(&b);
    type_free(&c);
}

static void case_value_index(void)
{
    MPI_Datatype p;

    CHECK_OKAY(MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &p));
    CHECK(p == MPI_DOUBLE_INT);
    CHECK_OKAY(MPI_Type_get_value_index(MPI_INT, MPI_INT, &p));
    CHECK(p == MPI_2INT);
    CHECK_OKAY(MPI_Type_get_value_index(MPI_SHORT, MPI_INT, &p));
    CHECK(p == MPI_SHORT_INT);
    CHECK_OKAY(MPI_Type_get_value_index(MPI_CHAR, MPI_INT, &p));
    CHECK(p == MPI_DATATYPE_NULL);
    CHECK_OKAY(MPI_Type_get_value_index(MPI_FLOAT, MPI_LONG, &p));
    CHECK(p == MPI_DATATYPE_NULL);
}

/* ---- many types: the registry grows and shrinks ------------------------------------------ */

static void case_many_types_registry(void)
{
    enum {
        N = 5000
    };
    MPI_Datatype *ts = malloc(N * sizeof(*ts));
    int i, size;

    for (i = 0; i < N; i++)
        CHECK_OKAY(MPI_Type_contiguous(i + 1, MPI_CHAR, &ts[i]));
    for (i = 0; i < N; i += 2)
        type_free(&ts[i]);
    for (i = 1; i < N; i += 2) {
        CHECK_OKAY(MPI_Type_size(ts[i], &size));
        CHECK(size == i + 1);
    }
    for (i = 0; i < N; i += 2)
        CHECK_OKAY(MPI_Type_contiguous(7, MPI_CHAR, &ts[i]));
    for (i = 0; i < N; i++)
        type_free(&ts[i]);
    free(ts);
}

static const pbt_case_t cases[] = {
    PBT_CASE(predefined_sizes_extents_and_names),
    PBT_CASE(predefined_contiguity),
    PBT_CASE(predefined_pairs_pack_without_padding),
    PBT_CASE(fortran_types_are_not_supported),
    PBT_CASE(contiguous_is_one_block),
    PBT_CASE(vector_bounds_and_map),
    PBT_CASE(vector_negative_stride),
    PBT_CASE(hvector_bounds_and_map),
    PBT_CASE(indexed_keeps_the_order_given),
    PBT_CASE(hindexed_and_blocks),
    PBT_CASE(struct_is_padded_like_c),
    PBT_CASE(resized_sets_the_bounds),
    PBT_CASE(dup_has_the_same_properties),
    PBT_CASE(nested_types),
    PBT_CASE(retained_type_outlives_its_handle),
    PBT_CASE(large_vector_stays_small),
    PBT_CASE(mpi_bottom_with_absolute_addresses),
    PBT_CASE(pack_sequence_and_unpack),
    PBT_CASE(pack_errors),
    PBT_CASE(get_count_and_elements),
    PBT_CASE(constructor_errors),
    PBT_CASE(query_errors),
    PBT_CASE(names),
    PBT_CASE(toint_fromint),
    PBT_CASE(value_index),
    PBT_CASE(many_types_registry),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
