/* Reduction ops (src/mpi/op.c): every predefined op on every predefined C
 * type, with known results where the standard (MPI-5.0 section 6.9.2)
 * allows the pair and MPI_ERR_OP where it does not; created datatypes of one
 * basic kind; user ops; MPI_Reduce_local's errors; handle conversions.
 *
 * op.c and datatype.c are compiled into this program, whose pb_mpi_raise
 * returns the error (MPI_ERRORS_RETURN) and keeps its message; nothing here
 * needs MPI_Init. */
#include <complex.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "harness.h"
#include "mpi/op.h"

/* ---- the error handler of this program: MPI_ERRORS_RETURN ------------------------------ */

static int last_code;
static char last_msg[512];

__attribute__((weak)) int pb_mpi_raise(MPI_Comm comm, int code, const char *func, const char *fmt,
                                       ...)
{
    va_list ap;

    if (code == MPI_SUCCESS)
        return MPI_SUCCESS;
    last_code = code;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    va_end(ap);
    return code;
}

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

/* ---- the ops and what they are allowed on ------------------------------------------------- */

enum {
    SUM,
    PROD,
    MIN,
    MAX,
    LAND,
    LOR,
    LXOR,
    BAND,
    BOR,
    BXOR,
    MINLOC,
    MAXLOC,
    REPLACE,
    NO_OP,
    NOPS
};

static const struct {
    MPI_Op op;
    const char *name;
} ops[NOPS] = {
    {MPI_SUM, "MPI_SUM"},         {MPI_PROD, "MPI_PROD"},     {MPI_MIN, "MPI_MIN"},
    {MPI_MAX, "MPI_MAX"},         {MPI_LAND, "MPI_LAND"},     {MPI_LOR, "MPI_LOR"},
    {MPI_LXOR, "MPI_LXOR"},       {MPI_BAND, "MPI_BAND"},     {MPI_BOR, "MPI_BOR"},
    {MPI_BXOR, "MPI_BXOR"},       {MPI_MINLOC, "MPI_MINLOC"}, {MPI_MAXLOC, "MPI_MAXLOC"},
    {MPI_REPLACE, "MPI_REPLACE"}, {MPI_NO_OP, "MPI_NO_OP"},
};

#define BIT(k) (1u << (k))
/* the ops of each type group (MPI-5.0 section 6.9.2); REPLACE and NO_OP
 * are one-sided ops, refused by MPI_Reduce_local */
#define OPS_C_INTEGER                                                                              \
    (BIT(SUM) | BIT(PROD) | BIT(MIN) | BIT(MAX) | BIT(LAND) | BIT(LOR) | BIT(LXOR) | BIT(BAND) |   \
     BIT(BOR) | BIT(BXOR))
#define OPS_BYTE (BIT(BAND) | BIT(BOR) | BIT(BXOR))
#define OPS_FLOATING (BIT(SUM) | BIT(PROD) | BIT(MIN) | BIT(MAX))
#define OPS_COMPLEX (BIT(SUM) | BIT(PROD))
#define OPS_LOGICAL (BIT(LAND) | BIT(LOR) | BIT(LXOR))
#define OPS_PAIR (BIT(MINLOC) | BIT(MAXLOC))

/* Every op not in @allowed is refused on @type with MPI_ERR_OP naming it. */
static void check_refused(MPI_Datatype type, unsigned allowed, void *in, void *inout)
{
    int k;

    for (k = 0; k < NOPS; k++) {
        if (allowed & BIT(k))
            continue;
        CHECK_ERR(MPI_Reduce_local(in, inout, 1, type, ops[k].op), MPI_ERR_OP, ops[k].name);
        CHECK(pb_mpi_op_check(ops[k].op, type) == MPI_ERR_OP);
    }
}

/* ---- integers ------------------------------------------------------------------------------ */

static const long long int_in[4] = {5, 12, 0, 7};
static const long long int_inout[4] = {3, 10, 6, 0};
static const long long int_result[10][4] = {
    [SUM] = {8, 22, 6, 7}, [PROD] = {15, 120, 0, 0}, [MIN] = {3, 10, 0, 0}, [MAX] = {5, 12, 6, 7},
    [LAND] = {1, 1, 0, 0}, [LOR] = {1, 1, 1, 1},     [LXOR] = {0, 0, 1, 1}, [BAND] = {1, 8, 0, 0},
    [BOR] = {7, 14, 6, 7}, [BXOR] = {6, 6, 6, 7},
};

#define DEFINE_INT_CHECK(sfx, T)                                                                   \
    static void int_check_##sfx(MPI_Datatype type, unsigned allowed)                               \
    {                                                                                              \
        T in[4], inout[4];                                                                         \
        int k, i;                                                                                  \
        for (k = 0; k <= BXOR; k++) {                                                              \
            if (!(allowed & BIT(k)))                                                               \
                continue;                                                                          \
            for (i = 0; i < 4; i++) {                                                              \
                in[i] = (T)int_in[i];                                                              \
                inout[i] = (T)int_inout[i];                                                        \
            }                                                                                      \
            CHECK_OKAY(MPI_Reduce_local(in, inout, 4, type, ops[k].op));                           \
            for (i = 0; i < 4; i++)                                                                \
                CHECK_MSG(inout[i] == (T)int_result[k][i], "%s on %s: [%d] = %lld, expected %lld", \
                          ops[k].name, #T, i, (long long)inout[i], int_result[k][i]);              \
            CHECK(in[0] == (T)int_in[0] && in[3] == (T)int_in[3]);                                 \
        }                                                                                          \
        check_refused(type, allowed, in, inout);                                                   \
    }

#define INT_TYPES(X)                                                                               \
    X(MPI_SIGNED_CHAR, signed_char, signed char, OPS_C_INTEGER)                                    \
    X(MPI_UNSIGNED_CHAR, unsigned_char, unsigned char, OPS_C_INTEGER)                              \
    X(MPI_SHORT, short, short, OPS_C_INTEGER)                                                      \
    X(MPI_UNSIGNED_SHORT, unsigned_short, unsigned short, OPS_C_INTEGER)                           \
    X(MPI_INT, int, int, OPS_C_INTEGER)                                                            \
    X(MPI_UNSIGNED, unsigned, unsigned, OPS_C_INTEGER)                                             \
    X(MPI_LONG, long, long, OPS_C_INTEGER)                                                         \
    X(MPI_UNSIGNED_LONG, unsigned_long, unsigned long, OPS_C_INTEGER)                              \
    X(MPI_LONG_LONG, long_long, long long, OPS_C_INTEGER)                                          \
    X(MPI_UNSIGNED_LONG_LONG, unsigned_long_long, unsigned long long, OPS_C_INTEGER)               \
    X(MPI_INT8_T, int8, int8_t, OPS_C_INTEGER)                                                     \
    X(MPI_UINT8_T, uint8, uint8_t, OPS_C_INTEGER)                                                  \
    X(MPI_INT16_T, int16, int16_t, OPS_C_INTEGER)                                                  \
    X(MPI_UINT16_T, uint16, uint16_t, OPS_C_INTEGER)                                               \
    X(MPI_INT32_T, int32, int32_t, OPS_C_INTEGER)                                                  \
    X(MPI_UINT32_T, uint32, uint32_t, OPS_C_INTEGER)                                               \
    X(MPI_INT64_T, int64, int64_t, OPS_C_INTEGER)                                                  \
    X(MPI_UINT64_T, uint64, uint64_t, OPS_C_INTEGER)                                               \
    X(MPI_AINT, aint, MPI_Aint, OPS_C_INTEGER)                                                     \
    X(MPI_OFFSET, offset, MPI_Offset, OPS_C_INTEGER)                                               \
    X(MPI_COUNT, count, MPI_Count, OPS_C_INTEGER)                                                  \
    X(MPI_BYTE, byte, unsigned char, OPS_BYTE)

#define X_DEFINE(type, sfx, T, allowed) DEFINE_INT_CHECK(sfx, T)
INT_TYPES(X_DEFINE)

static void case_integer_ops_on_every_integer_type(void)
{
#define X_RUN(type, sfx, T, allowed) int_check_##sfx(type, allowed);
    INT_TYPES(X_RUN)
}

static void case_signed_overflow_wraps(void)
{
    int in[2] = {INT_MAX, INT_MIN}, inout[2] = {1, -1};
    long long lin = LLONG_MAX, linout = 2;
    signed char cin = 100, cinout = 100;

    CHECK_OKAY(MPI_Reduce_local(in, inout, 2, MPI_INT, MPI_SUM));
    CHECK(inout[0] == INT_MIN && inout[1] == INT_MAX);
    CHECK_OKAY(MPI_Reduce_local(&lin, &linout, 1, MPI_LONG_LONG, MPI_PROD));
    CHECK(linout == -2);
    CHECK_OKAY(MPI_Reduce_local(&cin, &cinout, 1, MPI_SIGNED_CHAR, MPI_SUM));
    CHECK(cinout == (signed char)-56);
}

/* ---- floating point, complex, logical -------------------------------------------------- */

#define DEFINE_FLOAT_CHECK(sfx, T)                                                                 \
    static void float_check_##sfx(MPI_Datatype type)                                               \
    {                                                                                              \
        static const T a[3] = {1.5, -2, 4}, b[3] = {2, 3, -1};                                     \
        static const T r[4][3] = {                                                                 \
            [SUM] = {3.5, 1, 3}, [PROD] = {3, -6, -4}, [MIN] = {1.5, -2, -1}, [MAX] = {2, 3, 4}};  \
        T in[3], inout[3];                                                                         \
        int k, i;                                                                                  \
        for (k = SUM; k <= MAX; k++) {                                                             \
            memcpy(in, a, sizeof(in));                                                             \
            memcpy(inout, b, sizeof(inout));                                                       \
            CHECK_OKAY(MPI_Reduce_local(in, inout, 3, type, ops[k].op));                           \
            for (i = 0; i < 3; i++)                                                                \
                CHECK_MSG(inout[i] == r[k][i], "%s on %s: [%d] = %g", ops[k].name, #T, i,          \
                          (double)inout[i]);                                                       \
        }                                                                                          \
        check_refused(type, OPS_FLOATING, in, inout);                                              \
    }
DEFINE_FLOAT_CHECK(float, float)
DEFINE_FLOAT_CHECK(double, double)
DEFINE_FLOAT_CHECK(long_double, long double)

static void case_floating_ops(void)
{
    float_check_float(MPI_FLOAT);
    float_check_double(MPI_DOUBLE);
    float_check_long_double(MPI_LONG_DOUBLE);
}

#define DEFINE_COMPLEX_CHECK(sfx, T)                                                               \
    static void complex_check_##sfx(MPI_Datatype type)                                             \
    {                                                                                              \
        const T a[2] = {1.0 + 2.0 * _Complex_I, 0.5},                                              \
                b[2] = {3.0 + 4.0 * _Complex_I, 2.0 - 1.0 * _Complex_I};                           \
        const T sum[2] = {4.0 + 6.0 * _Complex_I, 2.5 - 1.0 * _Complex_I};                         \
        const T prod[2] = {-5.0 + 10.0 * _Complex_I, 1.0 - 0.5 * _Complex_I};                      \
        T in[2], inout[2];                                                                         \
        memcpy(in, a, sizeof(in));                                                                 \
        memcpy(inout, b, sizeof(inout));                                                           \
        CHECK_OKAY(MPI_Reduce_local(in, inout, 2, type, MPI_SUM));                                 \
        CHECK(inout[0] == sum[0] && inout[1] == sum[1]);                                           \
        memcpy(inout, b, sizeof(inout));                                                           \
        CHECK_OKAY(MPI_Reduce_local(in, inout, 2, type, MPI_PROD));                                \
        CHECK(inout[0] == prod[0] && inout[1] == prod[1]);                                         \
        check_refused(type, OPS_COMPLEX, in, inout);                                               \
    }
DEFINE_COMPLEX_CHECK(float, float _Complex)
DEFINE_COMPLEX_CHECK(double, double _Complex)
DEFINE_COMPLEX_CHECK(long_double, long double _Complex)

static void case_complex_ops(void)
{
    complex_check_float(MPI_C_FLOAT_COMPLEX);
    complex_check_float(MPI_CXX_FLOAT_COMPLEX);
    complex_check_double(MPI_C_DOUBLE_COMPLEX);
    complex_check_double(MPI_CXX_DOUBLE_COMPLEX);
    complex_check_long_double(MPI_C_LONG_DOUBLE_COMPLEX);
    complex_check_long_double(MPI_CXX_LONG_DOUBLE_COMPLEX);
}

static void bool_check(MPI_Datatype type)
{
    static const _Bool a[4] = {1, 1, 0, 0}, b[4] = {1, 0, 1, 0};
    static const _Bool r[3][4] = {{1, 0, 0, 0}, {1, 1, 1, 0}, {0, 1, 1, 0}};
    _Bool in[4], inout[4];
    int k, i;

    for (k = LAND; k <= LXOR; k++) {
        memcpy(in, a, sizeof(in));
        memcpy(inout, b, sizeof(inout));
        CHECK_OKAY(MPI_Reduce_local(in, inout, 4, type, ops[k].op));
        for (i = 0; i < 4; i++)
            CHECK_MSG(inout[i] == r[k - LAND][i], "%s: [%d] = %d", ops[k].name, i, inout[i]);
    }
    check_refused(type, OPS_LOGICAL, in, inout);
}

static void case_logical_ops(void)
{
    bool_check(MPI_C_BOOL);
    bool_check(MPI_CXX_BOOL);
}

/* ---- MINLOC and MAXLOC --------------------------------------------------------------------- */

#define DEFINE_PAIR_CHECK(sfx, T)                                                                  \
    static void pair_check_##sfx(MPI_Datatype type)                                                \
    {                                                                                              \
        const T a[4] = {{1, 5}, {2, 3}, {3, 1}, {2, 9}};                                           \
        const T b[4] = {{2, 1}, {2, 7}, {1, 0}, {2, 4}};                                           \
        const T min[4] = {{1, 5}, {2, 3}, {1, 0}, {2, 4}};                                         \
        const T max[4] = {{2, 1}, {2, 3}, {3, 1}, {2, 4}};                                         \
        T in[4], inout[4];                                                                         \
        int i;                                                                                     \
        memcpy(in, a, sizeof(in));                                                                 \
        memcpy(inout, b, sizeof(inout));                                                           \
        CHECK_OKAY(MPI_Reduce_local(in, inout, 4, type, MPI_MINLOC));                              \
        for (i = 0; i < 4; i++)                                                                    \
            CHECK_MSG(inout[i].v == min[i].v && inout[i].i == min[i].i,                            \
                      "MINLOC on %s: [%d] = (%g, %d)", #T, i, (double)inout[i].v, inout[i].i);     \
        memcpy(inout, b, sizeof(inout));                                                           \
        CHECK_OKAY(MPI_Reduce_local(in, inout, 4, type, MPI_MAXLOC));                              \
        for (i = 0; i < 4; i++)                                                                    \
            CHECK_MSG(inout[i].v == max[i].v && inout[i].i == max[i].i,                            \
                      "MAXLOC on %s: [%d] = (%g, %d)", #T, i, (double)inout[i].v, inout[i].i);     \
        check_refused(type, OPS_PAIR, in, inout);                                                  \
    }
DEFINE_PAIR_CHECK(float_int, pb_float_int_t)
DEFINE_PAIR_CHECK(double_int, pb_double_int_t)
DEFINE_PAIR_CHECK(long_int, pb_long_int_t)
DEFINE_PAIR_CHECK(2int, pb_2int_t)
DEFINE_PAIR_CHECK(short_int, pb_short_int_t)
DEFINE_PAIR_CHECK(long_double_int, pb_long_double_int_t)

static void case_minloc_maxloc_on_pairs_lowest_index_wins(void)
{
    pair_check_float_int(MPI_FLOAT_INT);
    pair_check_double_int(MPI_DOUBLE_INT);
    pair_check_long_int(MPI_LONG_INT);
    pair_check_2int(MPI_2INT);
    pair_check_short_int(MPI_SHORT_INT);
    pair_check_long_double_int(MPI_LONG_DOUBLE_INT);
}

static void case_types_of_no_group_are_refused(void)
{
    char c[16] = {0}, d[16] = {0};

    check_refused(MPI_CHAR, 0, c, d);
    check_refused(MPI_WCHAR, 0, c, d);
    check_refused(MPI_PACKED, 0, c, d);
}

/* ---- one-sided ops: REPLACE and NO_OP ----------------------------------------------------- */

static void case_replace_and_no_op_for_accumulate(void)
{
    double in[2] = {1, 2}, inout[2] = {5, 6};

    CHECK(pb_mpi_op_check(MPI_REPLACE, MPI_DOUBLE) == MPI_ERR_OP);
    CHECK(pb_mpi_op_check_accumulate(MPI_REPLACE, MPI_DOUBLE) == MPI_SUCCESS);
    CHECK(pb_mpi_op_check_accumulate(MPI_NO_OP, MPI_CHAR) == MPI_SUCCESS);
    CHECK(pb_mpi_op_check_accumulate(MPI_NO_OP, MPI_PACKED) == MPI_ERR_OP);
    CHECK(pb_mpi_op_check_accumulate(MPI_SUM, MPI_DOUBLE) == MPI_SUCCESS);
    CHECK(pb_mpi_op_check_accumulate(MPI_BAND, MPI_DOUBLE) == MPI_ERR_OP);
    pb_mpi_op_apply(MPI_NO_OP, in, inout, 2, MPI_DOUBLE);
    CHECK(inout[0] == 5 && inout[1] == 6);
    pb_mpi_op_apply(MPI_REPLACE, in, inout, 2, MPI_DOUBLE);
    CHECK(inout[0] == 1 && inout[1] == 2);
}

/* ---- long arrays: the vector loops ------------------------------------------------------ */

/* Every allowed (op, type) pair on LONG_N elements that start one element
 * into their buffers, so that the SIMD body of each loop, its unaligned
 * start and its scalar tail all run, against a scalar reference computed
 * here element by element: zeros, ones, negative and extreme values,
 * overflows that wrap. */
#define LONG_N 67

/* a spread of bit patterns, a zero every fifth (@salt varies them) */
static unsigned long long long_pattern(int i, int salt)
{
    unsigned long long x = (unsigned long long)(i + 1) * 0x9E3779B97F4A7C15ull + (unsigned)salt;

    if ((i + salt) % 5 == 0)
        return 0;
    if ((i + salt) % 7 == 0)
        return 1;
    return x >> (8 * ((i + salt) % 8));
}

#define DEFINE_INT_LONG_CHECK(sfx, T, UT)                                                          \
    static void int_long_check_##sfx(MPI_Datatype type, unsigned allowed)                          \
    {                                                                                              \
        T in[LONG_N + 1], inout[LONG_N + 1], want[LONG_N + 1];                                     \
        for (int k = 0; k <= BXOR; k++) {                                                          \
            if (!(allowed & BIT(k)))                                                               \
                continue;                                                                          \
            for (int i = 0; i <= LONG_N; i++) {                                                    \
                T a = (T)long_pattern(i, 1), b = (T)long_pattern(i, 2);                            \
                in[i] = a;                                                                         \
                inout[i] = b;                                                                      \
                want[i] = k == SUM    ? (T)((UT)a + (UT)b)                                         \
                          : k == PROD ? (T)((UT)a * (UT)b)                                         \
                          : k == MIN  ? (a < b ? a : b)                                            \
                          : k == MAX  ? (a > b ? a : b)                                            \
                          : k == LAND ? (T)(a && b)                                                \
                          : k == LOR  ? (T)(a || b)                                                \
                          : k == LXOR ? (T)(!a != !b)                                              \
                          : k == BAND ? (T)(a & b)                                                 \
                          : k == BOR  ? (T)(a | b)                                                 \
                                      : (T)(a ^ b);                                                 \
            }                                                                                      \
            want[0] = inout[0];                                                                    \
            CHECK_OKAY(MPI_Reduce_local(in + 1, inout + 1, LONG_N, type, ops[k].op));              \
            for (int i = 0; i <= LONG_N; i++)                                                      \
                CHECK_MSG(inout[i] == want[i], "%s on %d %s: [%d] = %lld, expected %lld",          \
                          ops[k].name, LONG_N, #T, i - 1, (long long)inout[i],                     \
                          (long long)want[i]);                                                     \
        }                                                                                          \
    }

#define X_DEFINE_LONG(type, sfx, T, allowed) DEFINE_INT_LONG_CHECK(sfx, T, unsigned long long)
INT_TYPES(X_DEFINE_LONG)

static void case_long_arrays_of_integers_match_scalar_reference(void)
{
#define X_RUN_LONG(type, sfx, T, allowed) int_long_check_##sfx(type, allowed);
    INT_TYPES(X_RUN_LONG)
}

/* values with fractions, signs, zeros of both signs, and infinities */
#define DEFINE_FLOAT_LONG_CHECK(sfx, T)                                                            \
    static void float_long_check_##sfx(MPI_Datatype type)                                          \
    {                                                                                              \
        T in[LONG_N + 1], inout[LONG_N + 1], want[LONG_N + 1];                                     \
        for (int k = SUM; k <= MAX; k++) {                                                         \
            for (int i = 0; i <= LONG_N; i++) {                                                    \
                T a = (T)((i % 9) - 4) * (T)0.37 + (T)i / 1024;                                    \
                T b = i % 6 == 0 ? (T)-0.0 : (T)((i % 11) - 5) * (T)1.1;                           \
                if (i % 12 == 0)                                                                   \
                    a = 0; /* against b = -0.0: min and max keep inout's */                        \
                if (i == 13)                                                                       \
                    a = (T)1 / (T)0.0;                                                             \
                if (i == 40)                                                                       \
                    b = (T)-1 / (T)0.0;                                                            \
                in[i] = a;                                                                         \
                inout[i] = b;                                                                      \
                want[i] = k == SUM    ? a + b                                                      \
                          : k == PROD ? a * b                                                      \
                          : k == MIN  ? (a < b ? a : b)                                            \
                                      : (a > b ? a : b);                                            \
            }                                                                                      \
            want[0] = inout[0];                                                                    \
            CHECK_OKAY(MPI_Reduce_local(in + 1, inout + 1, LONG_N, type, ops[k].op));              \
            CHECK_MSG(memcmp(inout, want, sizeof(want)) == 0,                                      \
                      "%s on %d %s differs from the "                                              \
                      "scalar reference",                                                          \
                      ops[k].name, LONG_N, #T);                                                    \
        }                                                                                          \
    }
DEFINE_FLOAT_LONG_CHECK(float, float)
DEFINE_FLOAT_LONG_CHECK(double, double)

static void case_long_arrays_of_floats_match_scalar_reference(void)
{
    float_long_check_float(MPI_FLOAT);
    float_long_check_double(MPI_DOUBLE);
}

/* long double, complex, bool and the pairs: the same, compared by value
 * (long double has padding bytes) */
static void case_long_arrays_of_other_kinds_match_scalar_reference(void)
{
    long double lin[LONG_N], lio[LONG_N];
    double _Complex cin[LONG_N], cio[LONG_N], cwant[LONG_N];
    _Bool bin[LONG_N], bio[LONG_N];
    pb_double_int_t pin[LONG_N], pio[LONG_N], pwant[LONG_N];
    pb_2int_t qin[LONG_N], qio[LONG_N], qwant[LONG_N];

    for (int i = 0; i < LONG_N; i++) {
        lin[i] = (long double)i / 3;
        lio[i] = (long double)(LONG_N - i) / 7;
    }
    CHECK_OKAY(MPI_Reduce_local(lin, lio, LONG_N, MPI_LONG_DOUBLE, MPI_MAX));
    for (int i = 0; i < LONG_N; i++) {
        long double a = (long double)i / 3, b = (long double)(LONG_N - i) / 7;

        CHECK_MSG(lio[i] == (a > b ? a : b), "MPI_MAX on long double: [%d]", i);
    }
    for (int i = 0; i < LONG_N; i++) {
        cin[i] = (double)i + (double)(i % 5) * _Complex_I;
        cio[i] = 0.5 - (double)(i % 3) * _Complex_I;
        cwant[i] = cin[i] * cio[i];
    }
    CHECK_OKAY(MPI_Reduce_local(cin, cio, LONG_N, MPI_C_DOUBLE_COMPLEX, MPI_PROD));
    for (int i = 0; i < LONG_N; i++)
        CHECK_MSG(cio[i] == cwant[i], "MPI_PROD on double complex: [%d]", i);
    for (int k = LAND; k <= LXOR; k++) {
        for (int i = 0; i < LONG_N; i++) {
            bin[i] = i % 3 == 0;
            bio[i] = i % 2 == 0;
        }
        CHECK_OKAY(MPI_Reduce_local(bin, bio, LONG_N, MPI_C_BOOL, ops[k].op));
        for (int i = 0; i < LONG_N; i++) {
            _Bool a = i % 3 == 0, b = i % 2 == 0;
            _Bool want = k == LAND ? a && b : k == LOR ? a || b : a != b;

            CHECK_MSG(bio[i] == want, "%s on bool: [%d] = %d", ops[k].name, i, bio[i]);
        }
    }
    for (int k = MINLOC; k <= MAXLOC; k++) {
        for (int i = 0; i < LONG_N; i++) {
            pin[i] = (pb_double_int_t){(double)(i % 4), i % 3};
            pio[i] = (pb_double_int_t){(double)(i % 5), i % 7};
            qin[i] = (pb_2int_t){i % 4, i % 3};
            qio[i] = (pb_2int_t){i % 5, i % 7};
            {
                double a = (double)(i % 4), b = (double)(i % 5);
                int ia = i % 3, ib = i % 7;
                int in_wins = k == MINLOC ? a < b : a > b;
                double v = in_wins ? a : b;
                int idx = in_wins ? ia : a == b ? (ia < ib ? ia : ib) : ib;

                pwant[i] = (pb_double_int_t){v, idx};
                qwant[i] = (pb_2int_t){(int)v, idx};
            }
        }
        CHECK_OKAY(MPI_Reduce_local(pin, pio, LONG_N, MPI_DOUBLE_INT, ops[k].op));
        CHECK_OKAY(MPI_Reduce_local(qin, qio, LONG_N, MPI_2INT, ops[k].op));
        for (int i = 0; i < LONG_N; i++) {
            CHECK_MSG(pio[i].v == pwant[i].v && pio[i].i == pwant[i].i,
                      "%s on double-int: [%d] = (%g, %d)", ops[k].name, i, pio[i].v, pio[i].i);
            CHECK_MSG(qio[i].v == qwant[i].v && qio[i].i == qwant[i].i,
                      "%s on 2int: [%d] = (%d, %d)", ops[k].name, i, qio[i].v, qio[i].i);
        }
    }
}

/* ---- created datatypes ------------------------------------------------------------------- */

static void case_vector_of_int_reduces_only_its_elements(void)
{
    MPI_Datatype v;
    int in[12], inout[12], i;

    CHECK_OKAY(MPI_Type_vector(3, 1, 2, MPI_INT, &v));
    CHECK_OKAY(MPI_Type_commit(&v));
    for (i = 0; i < 12; i++) {
        in[i] = 100 + i;
        inout[i] = i;
    }
    /* two elements: ints 0, 2, 4 and, one extent (5 ints) on, 5, 7, 9 */
    CHECK_OKAY(MPI_Reduce_local(in, inout, 2, v, MPI_SUM));
    for (i = 0; i < 12; i++) {
        int covered = i == 0 || i == 2 || i == 4 || i == 5 || i == 7 || i == 9;

        CHECK_MSG(inout[i] == (covered ? 100 + 2 * i : i), "[%d] = %d", i, inout[i]);
    }
    CHECK_ERR(MPI_Reduce_local(in, inout, 2, v, MPI_MINLOC), MPI_ERR_OP, "MPI_MINLOC");
    CHECK_OKAY(MPI_Type_free(&v));
}

static void case_large_strided_reduction_crosses_chunks(void)
{
    enum {
        N = 3000
    };
    MPI_Datatype v;
    double *in = malloc(2 * N * sizeof(double)), *inout = malloc(2 * N * sizeof(double));
    int i;

    for (i = 0; i < 2 * N; i++) {
        in[i] = i;
        inout[i] = -1;
    }
    CHECK_OKAY(MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &v));
    CHECK_OKAY(MPI_Type_commit(&v));
    CHECK_OKAY(MPI_Reduce_local(in, inout, 1, v, MPI_MAX));
    for (i = 0; i < 2 * N; i++)
        CHECK_MSG(inout[i] == (i % 2 == 0 ? i : -1), "[%d] = %g", i, inout[i]);
    CHECK_OKAY(MPI_Type_free(&v));
    free(in);
    free(inout);
}

static void case_padded_pairs_in_created_types(void)
{
    enum {
        N = 500
    };
    MPI_Datatype c, v;
    pb_double_int_t *in = malloc(2 * N * sizeof(*in)), *inout = malloc(2 * N * sizeof(*inout));
    pb_2int_t a[4] = {{1, 1}, {5, 2}, {3, 3}, {3, 1}}, b[4] = {{2, 9}, {4, 9}, {3, 0}, {3, 4}};
    int i;

    /* a vector of MPI_DOUBLE_INT: packed in pieces, reduced in the C layout */
    for (i = 0; i < 2 * N; i++) {
        in[i] = (pb_double_int_t){(double)(i % 7), i};
        inout[i] = (pb_double_int_t){3.0, -i};
    }
    CHECK_OKAY(MPI_Type_vector(N, 1, 2, MPI_DOUBLE_INT, &v));
    CHECK_OKAY(MPI_Type_commit(&v));
    CHECK_OKAY(MPI_Reduce_local(in, inout, 1, v, MPI_MAXLOC));
    for (i = 0; i < 2 * N; i++) {
        double ev = i % 2 == 0 && i % 7 > 3 ? (double)(i % 7) : 3.0;
        int ei = i % 2 == 0 && i % 7 > 3 ? i : -i;

        CHECK_MSG(inout[i].v == ev && inout[i].i == ei, "[%d] = (%g, %d), expected (%g, %d)", i,
                  inout[i].v, inout[i].i, ev, ei);
    }
    CHECK_OKAY(MPI_Type_free(&v));

    /* a contiguous of MPI_2INT: one array of pairs, reduced in place */
    CHECK_OKAY(MPI_Type_contiguous(2, MPI_2INT, &c));
    CHECK_OKAY(MPI_Type_commit(&c));
    CHECK_OKAY(MPI_Reduce_local(a, b, 2, c, MPI_MINLOC));
    CHECK(b[0].v == 1 && b[0].i == 1 && b[1].v == 4 && b[1].i == 9);
    CHECK(b[2].v == 3 && b[2].i == 0 && b[3].v == 3 && b[3].i == 1);
    CHECK_OKAY(MPI_Type_free(&c));
    free(in);
    free(inout);
}

static void case_resized_and_mixed_types(void)
{
    MPI_Datatype r, c, s;
    int in[6] = {2, 0, 3, 0, 4, 0}, inout[6] = {5, 7, 6, 7, 7, 7};
    int bl[] = {1, 1};
    MPI_Aint disp[] = {0, 8};
    MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE};

    CHECK_OKAY(MPI_Type_create_resized(MPI_INT, 0, 8, &r));
    CHECK_OKAY(MPI_Type_contiguous(3, r, &c));
    CHECK_OKAY(MPI_Type_commit(&c));
    CHECK_OKAY(MPI_Reduce_local(in, inout, 1, c, MPI_PROD));
    CHECK(inout[0] == 10 && inout[2] == 18 && inout[4] == 28);
    CHECK(inout[1] == 7 && inout[3] == 7 && inout[5] == 7);
    CHECK_OKAY(MPI_Type_create_struct(2, bl, disp, types, &s));
    CHECK_OKAY(MPI_Type_commit(&s));
    CHECK_ERR(MPI_Reduce_local(in, inout, 1, s, MPI_SUM), MPI_ERR_OP, "MPI_SUM");
    CHECK_OKAY(MPI_Type_free(&s));
    CHECK_OKAY(MPI_Type_free(&c));
    CHECK_OKAY(MPI_Type_free(&r));
}

/* ---- user ops ------------------------------------------------------------------------------- */

static int user_calls;
static int user_len;
static MPI_Datatype user_type;

/* inout = 10 * in + inout: not commutative */
static void user_fn(void *in, void *inout, int *len, MPI_Datatype *datatype)
{
    int *a = in, *b = inout, i;

    user_calls++;
    user_len = *len;
    user_type = *datatype;
    for (i = 0; i < *len; i++)
        b[i] = 10 * a[i] + b[i];
}

static void user_fn_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *datatype)
{
    int *a = in, *b = inout;
    MPI_Count i;

    user_calls++;
    user_len = (int)*len;
    user_type = *datatype;
    for (i = 0; i < *len; i++)
        b[i] = a[i] - b[i];
}

static void case_user_op(void)
{
    MPI_Op op, op_c, freed;
    int in[3] = {1, 2, 3}, inout[3] = {4, 5, 6}, commute = -1;

    CHECK_OKAY(MPI_Op_create(user_fn, 0, &op));
    CHECK_OKAY(MPI_Op_commutative(op, &commute));
    CHECK(commute == 0);
    CHECK(!pb_mpi_op_is_commutative(op));
    user_calls = 0;
    CHECK_OKAY(MPI_Reduce_local(in, inout, 3, MPI_INT, op));
    CHECK(user_calls == 1 && user_len == 3 && user_type == MPI_INT);
    CHECK(inout[0] == 14 && inout[1] == 25 && inout[2] == 36);

    CHECK_OKAY(MPI_Op_create_c(user_fn_c, 1, &op_c));
    CHECK_OKAY(MPI_Op_commutative(op_c, &commute));
    CHECK(commute == 1 && pb_mpi_op_is_commutative(op_c));
    CHECK_OKAY(MPI_Reduce_local_c(in, inout, 2, MPI_INT, op_c));
    CHECK(user_calls == 2 && user_len == 2);
    CHECK(inout[0] == 1 - 14 && inout[1] == 2 - 25 && inout[2] == 36);

    /* any datatype goes to a user op, as it is */
    {
        MPI_Datatype s;
        int bl[] = {1, 1};
        MPI_Aint disp[] = {0, 8};
        MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE};

        CHECK_OKAY(MPI_Type_create_struct(2, bl, disp, types, &s));
        CHECK_ERR(MPI_Reduce_local(in, inout, 1, s, op), MPI_ERR_TYPE, "committed");
        CHECK_OKAY(MPI_Type_commit(&s));
        user_calls = 0;
        CHECK_OKAY(MPI_Reduce_local(in, inout, 1, s, op));
        CHECK(user_calls == 1 && user_type == s && user_len == 1);
        CHECK_OKAY(MPI_Type_free(&s));
    }

    freed = op;
    CHECK_OKAY(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL);
    CHECK_ERR(MPI_Op_free(&freed), MPI_ERR_OP, "not an op");
    CHECK_ERR(MPI_Reduce_local(in, inout, 1, MPI_INT, freed), MPI_ERR_OP, "not an op");
    CHECK(pb_mpi_op_check(freed, MPI_INT) == MPI_ERR_OP);
    CHECK_OKAY(MPI_Op_free(&op_c));
}

static void case_op_create_and_free_errors(void)
{
    MPI_Op op = MPI_SUM;
    int commute;

    CHECK_ERR(MPI_Op_create(NULL, 1, &op), MPI_ERR_ARG, "user_fn");
    CHECK_ERR(MPI_Op_create(user_fn, 1, NULL), MPI_ERR_ARG, "op");
    CHECK_ERR(MPI_Op_free(&op), MPI_ERR_OP, "MPI_SUM");
    CHECK(op == MPI_SUM);
    CHECK_ERR(MPI_Op_free(NULL), MPI_ERR_ARG, "op");
    op = MPI_OP_NULL;
    CHECK_ERR(MPI_Op_free(&op), MPI_ERR_OP, "MPI_OP_NULL");
    CHECK_ERR(MPI_Op_commutative(MPI_OP_NULL, &commute), MPI_ERR_OP, "MPI_OP_NULL");
    CHECK_ERR(MPI_Op_commutative(MPI_SUM, NULL), MPI_ERR_ARG, "commute");
    CHECK_OKAY(MPI_Op_commutative(MPI_MAXLOC, &commute));
    CHECK(commute == 1 && pb_mpi_op_is_commutative(MPI_PROD));
}

static void case_reduce_local_errors(void)
{
    MPI_Datatype t;
    int in[2] = {0}, inout[2] = {0};
    double d = 0, e = 0;

    CHECK_ERR(MPI_Reduce_local(in, inout, -1, MPI_INT, MPI_SUM), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Reduce_local(in, inout, 1, MPI_DATATYPE_NULL, MPI_SUM), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Reduce_local(in, inout, 1, MPI_INTEGER, MPI_SUM), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Reduce_local(in, inout, 1, MPI_INT, MPI_OP_NULL), MPI_ERR_OP, "MPI_OP_NULL");
    CHECK_ERR(MPI_Reduce_local(in, inout, 1, MPI_INT, (MPI_Op)(uintptr_t)0x2f), MPI_ERR_OP, "op");
    CHECK_ERR(MPI_Reduce_local(MPI_IN_PLACE, inout, 1, MPI_INT, MPI_SUM), MPI_ERR_BUFFER,
              "MPI_IN_PLACE");
    CHECK_ERR(MPI_Reduce_local(&d, &e, 1, MPI_DOUBLE, MPI_BAND), MPI_ERR_OP, "MPI_BAND");
    CHECK_ERR(MPI_Reduce_local(in, inout, 1, MPI_INT, MPI_MAXLOC), MPI_ERR_OP, "MPI_MAXLOC");
    CHECK_ERR(MPI_Reduce_local(in, inout, 1, MPI_INT, MPI_REPLACE), MPI_ERR_OP, "MPI_REPLACE");
    CHECK_OKAY(MPI_Type_contiguous(2, MPI_INT, &t));
    CHECK_ERR(MPI_Reduce_local(in, inout, 1, t, MPI_SUM), MPI_ERR_TYPE, "committed");
    CHECK(pb_mpi_op_check(MPI_SUM, t) == MPI_ERR_TYPE);
    CHECK_OKAY(MPI_Type_commit(&t));
    CHECK(pb_mpi_op_check(MPI_SUM, t) == MPI_SUCCESS);
    CHECK_OKAY(MPI_Reduce_local(in, inout, 0, t, MPI_SUM));
    CHECK_OKAY(MPI_Type_free(&t));
    CHECK(pb_mpi_op_check((MPI_Op)(uintptr_t)0x12345678, MPI_INT) == MPI_ERR_OP);
}

static void case_op_toint_fromint(void)
{
    MPI_Op a, b;
    int ia;

    CHECK(MPI_Op_toint(MPI_SUM) == 0x21);
    CHECK(MPI_Op_fromint(0x21) == MPI_SUM);
    CHECK(MPI_Op_toint(MPI_OP_NULL) == 0x20);
    CHECK_OKAY(MPI_Op_create(user_fn, 1, &a));
    ia = MPI_Op_toint(a);
    CHECK(ia >= 0x400);
    CHECK(MPI_Op_fromint(ia) == a);
    CHECK_OKAY(MPI_Op_free(&a));
    CHECK(MPI_Op_fromint(ia) == MPI_OP_NULL);
    CHECK(MPI_Op_fromint(-1) == MPI_OP_NULL);
    b = (MPI_Op)(uintptr_t)0xdead0;
    last_code = 0;
    CHECK(MPI_Op_toint(b) == 0x20 && last_code == MPI_ERR_OP);
}

static const pbt_case_t cases[] = {
    PBT_CASE(integer_ops_on_every_integer_type),
    PBT_CASE(signed_overflow_wraps),
    PBT_CASE(floating_ops),
    PBT_CASE(complex_ops),
    PBT_CASE(logical_ops),
    PBT_CASE(long_arrays_of_integers_match_scalar_reference),
    PBT_CASE(long_arrays_of_floats_match_scalar_reference),
    PBT_CASE(long_arrays_of_other_kinds_match_scalar_reference),
    PBT_CASE(minloc_maxloc_on_pairs_lowest_index_wins),
    PBT_CASE(types_of_no_group_are_refused),
    PBT_CASE(replace_and_no_op_for_accumulate),
    PBT_CASE(vector_of_int_reduces_only_its_elements),
    PBT_CASE(large_strided_reduction_crosses_chunks),
    PBT_CASE(padded_pairs_in_created_types),
    PBT_CASE(resized_and_mixed_types),
    PBT_CASE(user_op),
    PBT_CASE(op_create_and_free_errors),
    PBT_CASE(reduce_local_errors),
    PBT_CASE(op_toint_fromint),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
