/*
 * pbt-mpi-coll-conform: the blocking collectives of MPI-5.0 chapter 6
 * checked against a serial reference, on the standard API only (so it
 * tests whichever algorithm the library picks), under
 * `postbox run -n N [--nodes K]` for any N >= 1.
 *
 * Every collective and its _c form; every (op, type) pair that section
 * 6.9.2 allows (and MPI_ERR_OP for every pair it does not); MINLOC/MAXLOC
 * with ties; MPI_IN_PLACE wherever the standard allows it; derived
 * datatypes (vector, indexed, resized, struct) on either side, the two
 * sides of a transfer with different type maps of one signature; user
 * ops, commutative and not (2x2 matrix product, checked in rank order);
 * counts 0, 1, < P, not divisible by P, and 64 KB, 1 MB and 3 MB + 1
 * element; rotating roots; communicators world, MPI_COMM_SELF, a dup, an
 * odd/even split and a split in reversed rank order, and a split
 * communicator used alternately with its parent in different call orders.
 *
 * Values are chosen so that a wrong combining order or a missing
 * contribution changes the result: each rank's contribution to an
 * element differs, the extremum and the odd one out of the logical ops
 * move from rank to rank with the element index, floating-point values
 * are small binary fractions (every result exact, so it is compared
 * exactly).  Each failure prints one line with the collective, the
 * communicator, op, type, count, root, the rank, the element index, the
 * expected and the received value (and the seed); rank 0 prints
 * "coll_conform: ok" or the number of failures, and the exit status is
 * non-zero on any failure.
 *
 *   pbt-mpi-coll-conform [--seed N | --random] [--no-big] [--no-extensions]
 *                        [--cpus N] [case ...]
 *
 *   --seed N    values from a generator seeded with N, not fixed patterns
 *   --random    the same with a seed from the clock (printed first)
 *   --no-big    skip the 64 KB - 3 MB cases
 *   --no-extensions  skip the checks of what the library does beyond the
 *               standard (predefined ops on derived types of one basic
 *               type): for running the program against another MPI
 *   --cpus N    run on the first N processors (before MPI_Init)
 *   case ...    run only the named cases (default: all; names below)
 *
 * tests/mpi/coll_conform_nb.c builds the same cases again with the
 * nonblocking and persistent collectives (CONFORM_NB: every call through
 * COLL below).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif

#include <inttypes.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#ifndef CONFORM_NAME
#define CONFORM_NAME "coll_conform"
#endif

/* ---- the communicator under test and the case being run ----------------------------- */

static MPI_Comm cm;         /* the communicator under test */
static const char *cm_name; /* its name in messages */
static int me, np;          /* this rank and the size of cm */
static uint64_t seed;       /* 0: fixed patterns; else the generator's seed */
static int big = 1;         /* run the 64 KB - 3 MB cases */
static int extensions = 1;  /* check the library's extensions of the standard too */
static unsigned long rotor; /* picks the next root */
static const char *flavour_name = "blocking";

static struct {
    const char *coll; /* "MPI_Allreduce_c" */
    const char *op;
    const char *type;
    long count;
    int root; /* -1: none */
    int in_place;
    int shown; /* failures printed for this case */
} cur;

#define SHOW_MAX 4 /* failure lines printed per case */

static void begin(const char *coll, int c, const char *op, const char *type, long count, int root,
                  int in_place)
{
    static char name[64];

    snprintf(name, sizeof(name), "%s%s", coll, c ? "_c" : "");
    cur.coll = name;
    cur.op = op;
    cur.type = type;
    cur.count = count;
    cur.root = root;
    cur.in_place = in_place;
    cur.shown = 0;
}

static void fail_line(const char *what)
{
    failures++;
    if (cur.shown++ == SHOW_MAX) {
        printf("FAIL rank %d: %s: more failures of this case not shown\n", rank, cur.coll);
        return;
    }
    if (cur.shown > SHOW_MAX)
        return;
    printf("FAIL rank %d: %s (%s) comm %s (rank %d of %d) op %s type %s count %ld root %d%s: %s",
           rank, cur.coll, flavour_name, cm_name, me, np, cur.op, cur.type, cur.count, cur.root,
           cur.in_place ? " MPI_IN_PLACE" : "", what);
    if (seed)
        printf(" (seed %" PRIu64 ": rerun with --seed %" PRIu64 ")", seed, seed);
    printf("\n");
    fflush(stdout);
}

/* the buffer fail_elem speaks of */
static const char *buf_name = "result";

static void fail_elem(long index, const char *expected, const char *got)
{
    char what[512];

    snprintf(what, sizeof(what), "%s element %ld: expected %s, got %s", buf_name, index, expected,
             got);
    fail_line(what);
}

/* @rc, the return of the call under test, must be MPI_SUCCESS */
static int call_ok(int rc)
{
    char what[MPI_MAX_ERROR_STRING + 32], msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (rc == MPI_SUCCESS)
        return 1;
    MPI_Error_string(rc, msg, &len);
    snprintf(what, sizeof(what), "returned %d (%s)", rc, msg);
    fail_line(what);
    return 0;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        printf("FAIL rank %d: out of memory for %zu bytes\n", rank, n);
        exit(1);
    }
    return p;
}

/* ---- the call of each flavour --------------------------------------------------------- */

#define EXPAND(...) __VA_ARGS__

#ifdef CONFORM_NB
enum {
    F_NONBLOCKING,
    F_PERSISTENT
};
static int flavour;
static MPI_Request nb_req;

/* complete the request the nonblocking call (which returned @rc) started */
static int nb_wait(int rc)
{
    if (rc != MPI_SUCCESS)
        return rc;
    return MPI_Wait(&nb_req, MPI_STATUS_IGNORE);
}

/* start the persistent request (@rc: its _init's return) and wait for it;
 * twice when the call reads only what it does not write (not in place),
 * so that a second start must give the same result; then free it */
static int ps_run(int rc)
{
    int runs = cur.in_place ? 1 : 2;

    if (rc != MPI_SUCCESS)
        return rc;
    for (int k = 0; k < runs && rc == MPI_SUCCESS; k++) {
        rc = MPI_Start(&nb_req);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&nb_req, MPI_STATUS_IGNORE);
    }
    if (nb_req != MPI_REQUEST_NULL)
        MPI_Request_free(&nb_req);
    return rc;
}

#define FLAVOUR(Name, name, sfx, args)                                                             \
    (flavour == F_NONBLOCKING                                                                      \
         ? nb_wait(MPI_I##name##sfx(EXPAND args, &nb_req))                                         \
         : ps_run(MPI_##Name##_init##sfx(EXPAND args, MPI_INFO_NULL, &nb_req)))
#else
#define FLAVOUR(Name, name, sfx, args) MPI_##Name##sfx args
#endif

/* The return of MPI_<Name> (its _c form when @c is set) called with @args
 * (@cargs for the _c form, whose count and displacement arrays differ),
 * in the program's flavour: MPI_I<name> + MPI_Wait, or MPI_<Name>_init
 * + MPI_Start + MPI_Wait, in the nonblocking program. */
#define COLL2(c, Name, name, args, cargs)                                                          \
    ((c) ? FLAVOUR(Name, name, _c, cargs) : FLAVOUR(Name, name, , args))
#define COLL(c, Name, name, args) COLL2(c, Name, name, args, args)

/* ---- values ----------------------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* the random bits of rank @r's element @g for the values of @salt */
static uint64_t rnd(int r, long g, unsigned salt)
{
    return mix(seed ^ mix((uint64_t)salt << 40 ^ (uint64_t)r << 32 ^ (uint64_t)g));
}

/* The scalar C types the values are stored as. */
typedef enum {
    S_I8,
    S_I16,
    S_I32,
    S_I64,
    S_U8,
    S_U16,
    S_U32,
    S_U64,
    S_F,
    S_D,
    S_LD,
    S_BOOL
} scalar_t;

#define SINT(T) (sizeof(T) == 1 ? S_I8 : sizeof(T) == 2 ? S_I16 : sizeof(T) == 4 ? S_I32 : S_I64)
#define UINT(T) (sizeof(T) == 1 ? S_U8 : sizeof(T) == 2 ? S_U16 : sizeof(T) == 4 ? S_U32 : S_U64)

static size_t scalar_size(scalar_t s)
{
    static const size_t sizes[] = {
        1, 2, 4, 8, 1, 2, 4, 8, sizeof(float), sizeof(double), sizeof(long double), sizeof(_Bool)};
    return sizes[s];
}

static int scalar_float(scalar_t s)
{
    return s == S_F || s == S_D || s == S_LD;
}

/* @v wrapped to the integer scalar @s, sign- or zero-extended */
static int64_t wrap(scalar_t s, uint64_t v)
{
    switch (s) {
    case S_I8: return (int8_t)(uint8_t)v;
    case S_I16: return (int16_t)(uint16_t)v;
    case S_I32: return (int32_t)(uint32_t)v;
    case S_U8: return (uint8_t)v;
    case S_U16: return (uint16_t)v;
    case S_U32: return (uint32_t)v;
    case S_BOOL: return v != 0;
    default: return (int64_t)v;
    }
}

/* @f rounded to the floating scalar @s */
static long double round_to(scalar_t s, long double f)
{
    return s == S_F ? (float)f : s == S_D ? (double)f : f;
}

static void store_int(void *p, scalar_t s, int64_t v)
{
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    uint64_t u64 = (uint64_t)v;
    _Bool b = v != 0;

    switch (s) {
    case S_I8:
    case S_U8: memcpy(p, &u8, 1); break;
    case S_I16:
    case S_U16: memcpy(p, &u16, 2); break;
    case S_I32:
    case S_U32: memcpy(p, &u32, 4); break;
    case S_BOOL: memcpy(p, &b, sizeof(b)); break;
    default: memcpy(p, &u64, 8); break;
    }
}

static int64_t load_int(const void *p, scalar_t s)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    _Bool b;

    switch (s) {
    case S_I8:
    case S_U8: memcpy(&u8, p, 1); return wrap(s, u8);
    case S_I16:
    case S_U16: memcpy(&u16, p, 2); return wrap(s, u16);
    case S_I32:
    case S_U32: memcpy(&u32, p, 4); return wrap(s, u32);
    case S_BOOL: memcpy(&b, p, sizeof(b)); return b;
    default: memcpy(&u64, p, 8); return (int64_t)u64;
    }
}

static void store_float(void *p, scalar_t s, long double v)
{
    float f = (float)v;
    double d = (double)v;

    if (s == S_F)
        memcpy(p, &f, sizeof(f));
    else if (s == S_D)
        memcpy(p, &d, sizeof(d));
    else
        memcpy(p, &v, sizeof(v));
}

static long double load_float(const void *p, scalar_t s)
{
    float f;
    double d;
    long double l;

    if (s == S_F) {
        memcpy(&f, p, sizeof(f));
        return f;
    }
    if (s == S_D) {
        memcpy(&d, p, sizeof(d));
        return d;
    }
    memcpy(&l, p, sizeof(l));
    return l;
}

/* The groups of MPI-5.0 section 6.9.2 (Fortran types are not tested:
 * the library does not support them, docs/mpi.md). */
enum {
    G_CINT = 1 << 0,  /* C integer */
    G_FLOAT = 1 << 1, /* floating point */
    G_LOGIC = 1 << 2, /* logical */
    G_CPLX = 1 << 3,  /* complex */
    G_BYTE = 1 << 4,  /* byte */
    G_PAIR = 1 << 6,  /* the MINLOC/MAXLOC pairs */
    G_MAT = 1 << 7,   /* not a group: the 2x2 matrices of the user op */
};

/* A datatype of the reductions: its values, and how they are stored. */
typedef struct {
    const char *name;
    MPI_Datatype type;
    unsigned groups; /* 0: in none (MPI_CHAR, MPI_WCHAR) */
    scalar_t s;      /* the scalar; of each part of a complex; of a pair's value */
    size_t extent;   /* sizeof the C type */
    size_t index_at; /* a pair's int index: its offset */
} tinfo_t;

typedef struct {
    float v;
    int i;
} float_int_t;
typedef struct {
    double v;
    int i;
} double_int_t;
typedef struct {
    long v;
    int i;
} long_int_t;
typedef struct {
    int v;
    int i;
} two_int_t;
typedef struct {
    short v;
    int i;
} short_int_t;
typedef struct {
    long double v;
    int i;
} long_double_int_t;

#define T_INT(h, T, g)                                                                             \
    {                                                                                              \
#h, h, g, SINT(T), sizeof(T), 0                                                            \
    }
#define T_UINT(h, T, g)                                                                            \
    {                                                                                              \
#h, h, g, UINT(T), sizeof(T), 0                                                            \
    }
#define T_FLOAT(h, T, S)                                                                           \
    {                                                                                              \
#h, h, G_FLOAT, S, sizeof(T), 0                                                            \
    }
#define T_CPLX(h, S, size)                                                                         \
    {                                                                                              \
#h, h, G_CPLX, S, size, 0                                                                  \
    }
#define T_PAIR(h, T, S)                                                                            \
    {                                                                                              \
#h, h, G_PAIR, S, sizeof(T), offsetof(T, i)                                                \
    }

static tinfo_t types[] = {
    T_INT(MPI_SIGNED_CHAR, signed char, G_CINT),
    T_UINT(MPI_UNSIGNED_CHAR, unsigned char, G_CINT),
    T_INT(MPI_SHORT, short, G_CINT),
    T_UINT(MPI_UNSIGNED_SHORT, unsigned short, G_CINT),
    T_INT(MPI_INT, int, G_CINT),
    T_UINT(MPI_UNSIGNED, unsigned, G_CINT),
    T_INT(MPI_LONG, long, G_CINT),
    T_UINT(MPI_UNSIGNED_LONG, unsigned long, G_CINT),
    T_INT(MPI_LONG_LONG, long long, G_CINT),
    T_UINT(MPI_UNSIGNED_LONG_LONG, unsigned long long, G_CINT),
    T_INT(MPI_INT8_T, int8_t, G_CINT),
    T_UINT(MPI_UINT8_T, uint8_t, G_CINT),
    T_INT(MPI_INT16_T, int16_t, G_CINT),
    T_UINT(MPI_UINT16_T, uint16_t, G_CINT),
    T_INT(MPI_INT32_T, int32_t, G_CINT),
    T_UINT(MPI_UINT32_T, uint32_t, G_CINT),
    T_INT(MPI_INT64_T, int64_t, G_CINT),
    T_UINT(MPI_UINT64_T, uint64_t, G_CINT),
    T_INT(MPI_AINT, MPI_Aint, G_CINT) /* a C integer for the standard */,
    T_INT(MPI_OFFSET, MPI_Offset, G_CINT) /* a C integer for the standard */,
    T_INT(MPI_COUNT, MPI_Count, G_CINT) /* a C integer for the standard */,
    T_FLOAT(MPI_FLOAT, float, S_F),
    T_FLOAT(MPI_DOUBLE, double, S_D),
    T_FLOAT(MPI_LONG_DOUBLE, long double, S_LD),
    {"MPI_C_BOOL", MPI_C_BOOL, G_LOGIC, S_BOOL, sizeof(_Bool), 0},
    {"MPI_CXX_BOOL", MPI_CXX_BOOL, G_LOGIC, S_BOOL, sizeof(_Bool), 0},
    T_CPLX(MPI_C_FLOAT_COMPLEX, S_F, 2 * sizeof(float)),
    T_CPLX(MPI_C_DOUBLE_COMPLEX, S_D, 2 * sizeof(double)),
    T_CPLX(MPI_C_LONG_DOUBLE_COMPLEX, S_LD, 2 * sizeof(long double)),
    T_CPLX(MPI_CXX_FLOAT_COMPLEX, S_F, 2 * sizeof(float)),
    T_CPLX(MPI_CXX_DOUBLE_COMPLEX, S_D, 2 * sizeof(double)),
    T_CPLX(MPI_CXX_LONG_DOUBLE_COMPLEX, S_LD, 2 * sizeof(long double)),
    {"MPI_BYTE", MPI_BYTE, G_BYTE, S_U8, 1, 0},
    T_PAIR(MPI_FLOAT_INT, float_int_t, S_F),
    T_PAIR(MPI_DOUBLE_INT, double_int_t, S_D),
    T_PAIR(MPI_LONG_INT, long_int_t, SINT(long)),
    T_PAIR(MPI_2INT, two_int_t, S_I32),
    T_PAIR(MPI_SHORT_INT, short_int_t, S_I16),
    T_PAIR(MPI_LONG_DOUBLE_INT, long_double_int_t, S_LD),
    {"MPI_CHAR", MPI_CHAR, 0, SINT(char), 1, 0},
    {"MPI_WCHAR", MPI_WCHAR, 0, SINT(wchar_t), sizeof(wchar_t), 0},
};
#define NTYPES ((int)(sizeof(types) / sizeof(types[0])))

/* the matrices of the non-commutative user op: 4 unsigned, row-major */
static tinfo_t mat_type = {
    "mat2x2 (contiguous 4 MPI_UNSIGNED)", MPI_DATATYPE_NULL, G_MAT, S_U32, 4 * sizeof(unsigned), 0};

static tinfo_t *tfind(MPI_Datatype type)
{
    for (int t = 0; t < NTYPES; t++) {
        if (types[t].type == type)
            return &types[t];
    }
    return NULL;
}

/* The ops; the user ops are created after MPI_Init. */
enum {
    O_SUM,
    O_PROD,
    O_MIN,
    O_MAX,
    O_LAND,
    O_LOR,
    O_LXOR,
    O_BAND,
    O_BOR,
    O_BXOR,
    O_MINLOC,
    O_MAXLOC,
    O_PREDEFINED,          /* the ops above are predefined */
    O_UMAT = O_PREDEFINED, /* 2x2 matrix product: not commutative */
    O_UCOMM,               /* x + y + xy on MPI_UNSIGNED: commutative */
    O_COUNT
};

typedef struct {
    const char *name;
    MPI_Op op;
    unsigned groups; /* the groups it is defined on (section 6.9.2) */
} op_t;

static op_t ops[O_COUNT] = {
    [O_SUM] = {"MPI_SUM", MPI_SUM, G_CINT | G_FLOAT | G_CPLX},
    [O_PROD] = {"MPI_PROD", MPI_PROD, G_CINT | G_FLOAT | G_CPLX},
    [O_MIN] = {"MPI_MIN", MPI_MIN, G_CINT | G_FLOAT},
    [O_MAX] = {"MPI_MAX", MPI_MAX, G_CINT | G_FLOAT},
    [O_LAND] = {"MPI_LAND", MPI_LAND, G_CINT | G_LOGIC},
    [O_LOR] = {"MPI_LOR", MPI_LOR, G_CINT | G_LOGIC},
    [O_LXOR] = {"MPI_LXOR", MPI_LXOR, G_CINT | G_LOGIC},
    [O_BAND] = {"MPI_BAND", MPI_BAND, G_CINT | G_BYTE},
    [O_BOR] = {"MPI_BOR", MPI_BOR, G_CINT | G_BYTE},
    [O_BXOR] = {"MPI_BXOR", MPI_BXOR, G_CINT | G_BYTE},
    [O_MINLOC] = {"MPI_MINLOC", MPI_MINLOC, G_PAIR},
    [O_MAXLOC] = {"MPI_MAXLOC", MPI_MAXLOC, G_PAIR},
    [O_UMAT] = {"user 2x2 matrix product (non-commutative)", MPI_OP_NULL, G_MAT},
    [O_UCOMM] = {"user x+y+xy (commutative)", MPI_OP_NULL, 0},
};

/* One value of any of the types. */
typedef struct {
    int64_t i;        /* integers and booleans (wrapped to the type) */
    long double f, y; /* floating; complex (f + y i); a pair's value (f) */
    int idx;          /* a pair's index */
    uint32_t m[4];    /* a matrix */
} num_t;

/* Rank @r's value of element @g for op @k of a communicator of @p ranks. */
static num_t gen(int k, const tinfo_t *t, int r, long g, int p)
{
    num_t v;
    uint64_t x = seed ? rnd(r, g, (unsigned)(k * 64 + (t - types))) : 0;
    int w = 8 * (int)scalar_size(t->s);
    long kk = g % (p + 2);
    int odd = kk == r || kk == p + 1, truth = 0;
    int64_t tv = t->s == S_BOOL ? 1 : seed ? (int64_t)((x >> 2) | 1) : 1 << (r % 3);
    static const int64_t prod_s[] = {1, 2, 3, -1};
    static const long double prod_f[] = {1, 2, 3, -1, 0.5L},
                             prod_fr[] = {-2, -1, -0.5L, 0.5L, 1, 2, 3};

    memset(&v, 0, sizeof(v));
    if (t->groups & G_MAT) {
        for (int e = 0; e < 4; e++)
            v.m[e] = seed ? (uint32_t)(x >> (8 * e)) * 2654435761u : 0;
        if (!seed) {
            v.m[0] = 1 + (uint32_t)((r + g) % 2);
            v.m[1] = (uint32_t)r + 1;
            v.m[2] = (uint32_t)(g % 3);
            v.m[3] = 1;
        }
        return v;
    }
    if (t->groups & G_PAIR) {
        v.f = seed ? (long double)(int)(x % 4) - 2 : (long double)((7 * r + g) % 3) - 1;
        if (scalar_float(t->s))
            v.f += 0.5L;
        v.idx = seed ? (int)((x >> 8) % 50) : (p - 1 - r) * 2 + (int)(g % 2);
        return v;
    }
    if (t->groups & G_CPLX) {
        if (k == O_SUM) {
            v.f = seed ? (long double)(int)(x % 21) - 10 : r + 1 + g % 5;
            v.y = seed ? (long double)(int)((x >> 8) % 21) - 10 : (long double)(g % 3) - r;
        } else {
            v.f = seed ? (long double)(int)(x % 5) - 2 : 1 + (r + g) % 2;
            v.y = seed ? (long double)(int)((x >> 8) % 5) - 2 : (long double)((r + 2 * g) % 3) - 1;
        }
        return v;
    }
    if (t->groups & G_FLOAT) {
        if (k == O_SUM)
            v.f = seed ? (long double)((int)(x % 2001) - 1000) * 0.25L : (r + 1) * 0.5L + g % 5;
        else if (k == O_PROD)
            v.f = seed ? prod_fr[x % 7] : prod_f[(r + g) % 5];
        else
            v.f = seed ? (long double)((int)(x % 2001) - 1000) * 0.125L
                       : (long double)((2 * r + 3 * g) % (2 * p + 1) - p) * 0.5L;
        return v;
    }
    switch (k) {
    case O_SUM:
    case O_UCOMM: v.i = wrap(t->s, seed ? x : (uint64_t)(r + 1 + g % 5)); break;
    case O_PROD:
        v.i = wrap(t->s, seed            ? x | 1
                         : t->s <= S_I64 ? (uint64_t)prod_s[(r + g) % 4]
                                         : (uint64_t)(1 + (r + g) % 3));
        break;
    case O_MIN:
    case O_MAX:
        v.i = wrap(t->s,
                   seed ? x : (uint64_t)((2 * r + 3 * g) % (2 * p + 1) - (t->s <= S_I64 ? p : 0)));
        break;
    case O_LAND:
    case O_LOR:
    case O_LXOR:
        if (seed)
            truth = (x & 3) != 0;
        else if (k == O_LAND)
            truth = !odd;
        else if (k == O_LOR)
            truth = odd;
        else
            truth = (int)(mix((uint64_t)g) >> (r % 64)) & 1;
        v.i = wrap(t->s, truth ? (uint64_t)tv : 0);
        break;
    case O_BAND:
        v.i = wrap(t->s, seed ? x | rnd(r, g, 1) | rnd(r, g, 2) : ~(1ULL << ((r + g) % w)));
        break;
    case O_BOR:
        v.i = wrap(t->s, seed ? x & rnd(r, g, 1) & rnd(r, g, 2) : 1ULL << ((r + g) % w));
        break;
    default: v.i = wrap(t->s, seed ? x : mix((uint64_t)r * 1000003u + (uint64_t)g)); break;
    }
    return v;
}

/* a op b, a the partial result of the lower ranks: the reference */
static num_t apply(int k, const tinfo_t *t, num_t a, num_t b)
{
    num_t v = a;
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
    int less, more;

    if (t->groups & G_MAT) {
        v.m[0] = a.m[0] * b.m[0] + a.m[1] * b.m[2];
        v.m[1] = a.m[0] * b.m[1] + a.m[1] * b.m[3];
        v.m[2] = a.m[2] * b.m[0] + a.m[3] * b.m[2];
        v.m[3] = a.m[2] * b.m[1] + a.m[3] * b.m[3];
        return v;
    }
    if (t->groups & G_PAIR) {
        less = a.f < b.f;
        more = a.f > b.f;
        if ((k == O_MINLOC && !less && !more) || (k == O_MAXLOC && !less && !more))
            v.idx = a.idx < b.idx ? a.idx : b.idx;
        else if ((k == O_MINLOC && more) || (k == O_MAXLOC && less))
            v = b;
        return v;
    }
    if (t->groups & G_CPLX) {
        if (k == O_SUM) {
            v.f = round_to(t->s, a.f + b.f);
            v.y = round_to(t->s, a.y + b.y);
        } else {
            v.f = round_to(t->s, a.f * b.f - a.y * b.y);
            v.y = round_to(t->s, a.f * b.y + a.y * b.f);
        }
        return v;
    }
    if (t->groups & G_FLOAT) {
        switch (k) {
        case O_SUM: v.f = round_to(t->s, a.f + b.f); break;
        case O_PROD: v.f = round_to(t->s, a.f * b.f); break;
        case O_MIN: v.f = a.f < b.f ? a.f : b.f; break;
        default: v.f = a.f > b.f ? a.f : b.f; break;
        }
        return v;
    }
    less = t->s == S_U64 ? x < y : a.i < b.i;
    switch (k) {
    case O_SUM: v.i = wrap(t->s, x + y); break;
    case O_PROD: v.i = wrap(t->s, x * y); break;
    case O_MIN: v.i = less ? a.i : b.i; break;
    case O_MAX: v.i = less ? b.i : a.i; break;
    case O_LAND: v.i = a.i != 0 && b.i != 0; break;
    case O_LOR: v.i = a.i != 0 || b.i != 0; break;
    case O_LXOR: v.i = (a.i != 0) != (b.i != 0); break;
    case O_BAND: v.i = wrap(t->s, x & y); break;
    case O_BOR: v.i = wrap(t->s, x | y); break;
    case O_BXOR: v.i = wrap(t->s, x ^ y); break;
    case O_UCOMM: v.i = wrap(t->s, x + y + x * y); break;
    default: break;
    }
    return v;
}

/* the reference: element @g reduced over ranks @from..@to (in order) */
static num_t fold(int k, const tinfo_t *t, int from, int to, long g, int p)
{
    num_t acc = gen(k, t, from, g, p);

    for (int r = from + 1; r <= to; r++)
        acc = apply(k, t, acc, gen(k, t, r, g, p));
    return acc;
}

static void put_num(void *p, const tinfo_t *t, num_t v)
{
    int idx = v.idx;

    if (t->groups & G_MAT) {
        memcpy(p, v.m, sizeof(v.m));
    } else if (t->groups & G_PAIR) {
        if (scalar_float(t->s))
            store_float(p, t->s, v.f);
        else
            store_int(p, t->s, (int64_t)v.f);
        memcpy((char *)p + t->index_at, &idx, sizeof(idx));
    } else if (t->groups & G_CPLX) {
        store_float(p, t->s, v.f);
        store_float((char *)p + scalar_size(t->s), t->s, v.y);
    } else if (t->groups & G_FLOAT) {
        store_float(p, t->s, v.f);
    } else {
        store_int(p, t->s, v.i);
    }
}

static num_t get_num(const void *p, const tinfo_t *t)
{
    num_t v;

    memset(&v, 0, sizeof(v));
    if (t->groups & G_MAT) {
        memcpy(v.m, p, sizeof(v.m));
    } else if (t->groups & G_PAIR) {
        v.f = scalar_float(t->s) ? load_float(p, t->s) : (long double)load_int(p, t->s);
        memcpy(&v.idx, (const char *)p + t->index_at, sizeof(v.idx));
    } else if (t->groups & G_CPLX) {
        v.f = load_float(p, t->s);
        v.y = load_float((const char *)p + scalar_size(t->s), t->s);
    } else if (t->groups & G_FLOAT) {
        v.f = load_float(p, t->s);
    } else {
        v.i = load_int(p, t->s);
    }
    return v;
}

static int num_equal(const tinfo_t *t, num_t a, num_t b)
{
    if (t->groups & G_MAT)
        return memcmp(a.m, b.m, sizeof(a.m)) == 0;
    if (t->groups & G_PAIR)
        return a.f == b.f && a.idx == b.idx;
    if (t->groups & G_CPLX)
        return a.f == b.f && a.y == b.y;
    if (t->groups & G_FLOAT)
        return a.f == b.f;
    return a.i == b.i;
}

static void num_str(char *s, size_t n, const tinfo_t *t, num_t v)
{
    if (t->groups & G_MAT)
        snprintf(s, n, "[%u %u; %u %u]", v.m[0], v.m[1], v.m[2], v.m[3]);
    else if (t->groups & G_PAIR)
        snprintf(s, n, "(%Lg, index %d)", v.f, v.idx);
    else if (t->groups & G_CPLX)
        snprintf(s, n, "%Lg%+Lgi", v.f, v.y);
    else if (t->groups & G_FLOAT)
        snprintf(s, n, "%Lg", v.f);
    else if (t->s == S_U64)
        snprintf(s, n, "%" PRIu64, (uint64_t)v.i);
    else
        snprintf(s, n, "%" PRId64, v.i);
}

/* ---- layouts: where the elements of a datatype's units are ----------------------------- */

/* A datatype of ints (and, for the structs, doubles): each unit holds @k
 * basic elements at @off (in type-map order), a double where @dbl says. */
typedef struct {
    const char *name;
    MPI_Datatype type;
    int k;
    MPI_Aint off[3];
    char dbl[3];
    MPI_Aint extent;
} layout_t;

enum {
    L_INT,
    L_VEC,
    L_RESIZED,
    L_INDEXED,
    L_STRUCT_A,
    L_STRUCT_B,
    L_COUNT
};
static layout_t lay[L_COUNT];

static void make_layouts(void)
{
    MPI_Datatype t;
    int blocks[2] = {2, 1}, displs[2] = {3, 0}, ones[2] = {1, 1};
    MPI_Aint sa[2] = {0, 8}, sb[2] = {24, 8};
    MPI_Datatype st[2] = {MPI_INT, MPI_DOUBLE};

    lay[L_INT] = (layout_t){"MPI_INT", MPI_INT, 1, {0}, {0}, sizeof(int)};
    OK(MPI_Type_vector(2, 1, 3, MPI_INT, &lay[L_VEC].type));
    lay[L_VEC] = (layout_t){"vector(2,1,3) of MPI_INT", lay[L_VEC].type, 2, {0, 12}, {0}, 16};
    OK(MPI_Type_create_resized(MPI_INT, 0, 12, &lay[L_RESIZED].type));
    lay[L_RESIZED] = (layout_t){"MPI_INT resized to 12", lay[L_RESIZED].type, 1, {0}, {0}, 12};
    OK(MPI_Type_indexed(2, blocks, displs, MPI_INT, &lay[L_INDEXED].type));
    lay[L_INDEXED] =
        (layout_t){"indexed({2,1},{3,0}) of MPI_INT", lay[L_INDEXED].type, 3, {12, 16, 0}, {0}, 20};
    OK(MPI_Type_create_struct(2, ones, sa, st, &t));
    OK(MPI_Type_create_resized(t, 0, 16, &lay[L_STRUCT_A].type));
    MPI_Type_free(&t);
    lay[L_STRUCT_A] =
        (layout_t){"struct{int@0,double@8}", lay[L_STRUCT_A].type, 2, {0, 8}, {0, 1}, 16};
    OK(MPI_Type_create_struct(2, ones, sb, st, &t));
    OK(MPI_Type_create_resized(t, 0, 32, &lay[L_STRUCT_B].type));
    MPI_Type_free(&t);
    lay[L_STRUCT_B] =
        (layout_t){"struct{int@24,double@8}/32", lay[L_STRUCT_B].type, 2, {24, 8}, {0, 1}, 32};
    for (int l = 1; l < L_COUNT; l++)
        OK(MPI_Type_commit(&lay[l].type));
}

/* the layout of a predefined type of the reductions */
static layout_t plain(const tinfo_t *t)
{
    return (layout_t){t->name, t->type, 1, {0}, {0}, (MPI_Aint)t->extent};
}

static size_t units_bytes(const layout_t *l, MPI_Count units)
{
    return (size_t)units * (size_t)l->extent;
}

/* the address of logical element @j of the units of @l at @buf */
static char *elem_at(void *buf, const layout_t *l, long j)
{
    return (char *)buf + (j / l->k) * l->extent + l->off[j % l->k];
}

static size_t elem_size(const layout_t *l, long j)
{
    return l->dbl[j % l->k] ? sizeof(double) : sizeof(int);
}

#define SENTINEL 0xA5

static char *sentinel_buf(size_t bytes)
{
    char *b = xmalloc(bytes);

    memset(b, SENTINEL, bytes ? bytes : 1);
    return b;
}

/* ---- the data movements ------------------------------------------------------------------ */

/* the value element @j of the block rank @s sends rank @d carries */
static int dval(int s, int d, long j)
{
    return ((s % 64) * 64 + d % 64) * 1048576 + (int)(j % 1048576) + 1;
}

static void put_stream(void *buf, const layout_t *l, long n, int s, int d)
{
    for (long j = 0; j < n; j++) {
        int v = dval(s, d, j);
        double dv = v + 0.25;

        if (l->dbl[j % l->k])
            memcpy(elem_at(buf, l, j), &dv, sizeof(dv));
        else
            memcpy(elem_at(buf, l, j), &v, sizeof(v));
    }
}

/* the @n elements at @buf must be rank @s's block for @d; marks their
 * bytes in @covered (if not NULL, of the buffer at @base) */
static void check_stream(void *buf, const layout_t *l, long n, int s, int d, char *covered,
                         const char *base)
{
    char e[96], g[96];

    for (long j = 0; j < n; j++) {
        char *p = elem_at(buf, l, j);
        int v = dval(s, d, j), got;
        double dv = v + 0.25, dgot;

        if (covered)
            memset(covered + (p - base), 1, elem_size(l, j));
        if (l->dbl[j % l->k]) {
            memcpy(&dgot, p, sizeof(dgot));
            if (dgot != dv) {
                snprintf(e, sizeof(e), "%g (rank %d's element %ld)", dv, s, j);
                snprintf(g, sizeof(g), "%g", dgot);
                fail_elem(j, e, g);
            }
        } else {
            memcpy(&got, p, sizeof(got));
            if (got != v) {
                snprintf(e, sizeof(e), "%d (rank %d's element %ld)", v, s, j);
                snprintf(g, sizeof(g), "%d", got);
                fail_elem(j, e, g);
            }
        }
    }
}

/* the send buffer at @buf still holds its @n elements for @d */
static void check_send(void *buf, const layout_t *l, long n, int d)
{
    buf_name = "send buffer (input the call changed)";
    check_stream(buf, l, n, me, d, NULL, NULL);
    buf_name = "result";
}

/* every byte of @buf not in @covered must still be SENTINEL (the gaps of
 * the layout, the holes between blocks, the end) */
static void check_untouched(const char *buf, const char *covered, size_t bytes)
{
    char what[96];

    for (size_t b = 0; b < bytes; b++) {
        if (!covered[b] && (unsigned char)buf[b] != SENTINEL) {
            snprintf(what, sizeof(what),
                     "byte %zu of the receive buffer, outside the data, written", b);
            fail_line(what);
            return;
        }
    }
}

/* send and receive layouts of one data movement, n a multiple of both k */
typedef struct {
    int send, recv;
} lpair_t;

static const lpair_t lpairs[] = {
    {L_INT, L_INT},     {L_VEC, L_INT},         {L_INT, L_RESIZED},
    {L_INDEXED, L_VEC}, {L_RESIZED, L_INDEXED}, {L_STRUCT_A, L_STRUCT_B},
};
#define NLPAIRS ((int)(sizeof(lpairs) / sizeof(lpairs[0])))

static char lname[160];

static const char *pair_name(const layout_t *s, const layout_t *r)
{
    snprintf(lname, sizeof(lname), "%s -> %s", s->name, r->name);
    return lname;
}

/* the _c form or not for call @n of a series: every other call, and in
 * one call of four on the odd ranks only (the two forms in one collective) */
static int pick_c(int n)
{
    return n % 4 == 3 ? me % 2 : n % 2;
}

static int next_root(void)
{
    return (int)(rotor++ % (unsigned long)np);
}

static void dm_bcast(const layout_t *sl, const layout_t *rl, long n, int root, int inplace, int c)
{
    const layout_t *l = me == root ? sl : rl;
    MPI_Count units = n / l->k;
    size_t bytes = units_bytes(l, units);
    char *buf = sentinel_buf(bytes), *covered = xmalloc(bytes);

    (void)inplace;
    memset(covered, 0, bytes);
    if (me == root)
        put_stream(buf, l, n, root, 0);
    begin("MPI_Bcast", c, "-", pair_name(sl, rl), n, root, 0);
    if (call_ok(COLL(c, Bcast, bcast, (buf, units, l->type, root, cm)))) {
        check_stream(buf, l, n, root, 0, covered, buf);
        check_untouched(buf, covered, bytes);
    }
    free(buf);
    free(covered);
}

static void dm_gather(const layout_t *sl, const layout_t *rl, long n, int root, int inplace, int c)
{
    MPI_Count sc = n / sl->k, rc = n / rl->k;
    size_t rbytes = units_bytes(rl, rc * np);
    char *sb = sentinel_buf(units_bytes(sl, sc)), *rb = sentinel_buf(rbytes);
    char *covered = xmalloc(rbytes);
    int in_place = inplace && me == root;

    memset(covered, 0, rbytes);
    put_stream(sb, sl, n, me, root);
    if (in_place)
        put_stream(rb + units_bytes(rl, rc * me), rl, n, me, root);
    begin("MPI_Gather", c, "-", pair_name(sl, rl), n, root, inplace);
    if (call_ok(COLL(c, Gather, gather,
                     (in_place ? MPI_IN_PLACE : sb, sc, sl->type, rb, rc, rl->type, root, cm))) &&
        me == root) {
        for (int s = 0; s < np; s++)
            check_stream(rb + units_bytes(rl, rc * s), rl, n, s, root, covered, rb);
        check_untouched(rb, covered, rbytes);
    }
    if (!in_place)
        check_send(sb, sl, n, root);
    free(sb);
    free(rb);
    free(covered);
}

static void dm_scatter(const layout_t *sl, const layout_t *rl, long n, int root, int inplace, int c)
{
    MPI_Count sc = n / sl->k, rc = n / rl->k;
    size_t rbytes = units_bytes(rl, rc);
    char *sb = sentinel_buf(units_bytes(sl, sc * np)), *rb = sentinel_buf(rbytes);
    char *covered = xmalloc(rbytes);
    int in_place = inplace && me == root;

    memset(covered, 0, rbytes);
    if (me == root) {
        for (int d = 0; d < np; d++)
            put_stream(sb + units_bytes(sl, sc * d), sl, n, root, d);
    }
    begin("MPI_Scatter", c, "-", pair_name(sl, rl), n, root, inplace);
    if (call_ok(COLL(c, Scatter, scatter,
                     (sb, sc, sl->type, in_place ? MPI_IN_PLACE : rb, rc, rl->type, root, cm)))) {
        if (!in_place) {
            check_stream(rb, rl, n, root, me, covered, rb);
            check_untouched(rb, covered, rbytes);
        }
        for (int d = 0; d < np && me == root; d++)
            check_send(sb + units_bytes(sl, sc * d), sl, n, d);
    }
    free(sb);
    free(rb);
    free(covered);
}

static void dm_allgather(const layout_t *sl, const layout_t *rl, long n, int root, int inplace,
                         int c)
{
    MPI_Count sc = n / sl->k, rc = n / rl->k;
    size_t rbytes = units_bytes(rl, rc * np);
    char *sb = sentinel_buf(units_bytes(sl, sc)), *rb = sentinel_buf(rbytes);
    char *covered = xmalloc(rbytes);

    (void)root;
    memset(covered, 0, rbytes);
    put_stream(sb, sl, n, me, 0);
    if (inplace)
        put_stream(rb + units_bytes(rl, rc * me), rl, n, me, 0);
    begin("MPI_Allgather", c, "-", pair_name(sl, rl), n, -1, inplace);
    if (call_ok(COLL(c, Allgather, allgather,
                     (inplace ? MPI_IN_PLACE : sb, sc, sl->type, rb, rc, rl->type, cm)))) {
        for (int s = 0; s < np; s++)
            check_stream(rb + units_bytes(rl, rc * s), rl, n, s, 0, covered, rb);
        check_untouched(rb, covered, rbytes);
    }
    if (!inplace)
        check_send(sb, sl, n, 0);
    free(sb);
    free(rb);
    free(covered);
}

static void dm_alltoall(const layout_t *sl, const layout_t *rl, long n, int root, int inplace,
                        int c)
{
    MPI_Count sc = n / sl->k, rc = n / rl->k;
    size_t rbytes = units_bytes(rl, rc * np);
    char *sb = sentinel_buf(units_bytes(sl, sc * np)), *rb = sentinel_buf(rbytes);
    char *covered = xmalloc(rbytes);

    (void)root;
    memset(covered, 0, rbytes);
    for (int d = 0; d < np; d++) {
        if (inplace)
            put_stream(rb + units_bytes(rl, rc * d), rl, n, me, d);
        else
            put_stream(sb + units_bytes(sl, sc * d), sl, n, me, d);
    }
    begin("MPI_Alltoall", c, "-", pair_name(sl, rl), n, -1, inplace);
    if (call_ok(COLL(c, Alltoall, alltoall,
                     (inplace ? MPI_IN_PLACE : sb, sc, sl->type, rb, rc, rl->type, cm)))) {
        for (int s = 0; s < np; s++)
            check_stream(rb + units_bytes(rl, rc * s), rl, n, s, me, covered, rb);
        check_untouched(rb, covered, rbytes);
    }
    for (int d = 0; d < np && !inplace; d++)
        check_send(sb + units_bytes(sl, sc * d), sl, n, d);
    free(sb);
    free(rb);
    free(covered);
}

/* ---- the v forms: blocks of different sizes, placed in reverse rank order with gaps ----- */

/* Per-rank counts and displacements of a v form, in units of the
 * layout: block b(r) = unit * ((3r + 1) % 4) elements (zero for some
 * ranks), placed in reverse rank order, one unit of gap between blocks. */
typedef struct {
    int counts[64], displs[64];
    MPI_Count ccounts[64];
    MPI_Aint cdispls[64];
    long elems[64]; /* logical elements of each block */
    MPI_Count total_units;
} vspec_t;

static void vspec(vspec_t *v, const layout_t *l, long unit_elems, int salt)
{
    MPI_Count at = 0;

    for (int r = np - 1; r >= 0; r--) {
        long e = unit_elems * ((3 * r + salt + 1) % 4);

        v->elems[r] = e;
        v->counts[r] = (int)(e / l->k);
        v->ccounts[r] = e / l->k;
        v->displs[r] = (int)at;
        v->cdispls[r] = (MPI_Aint)at;
        at += e / l->k + 1;
    }
    v->total_units = at;
}

static void dm_gatherv(const layout_t *sl, const layout_t *rl, long n, int root, int inplace, int c)
{
    vspec_t v;
    MPI_Count sc;
    size_t rbytes;
    char *sb, *rb, *covered;
    int in_place = inplace && me == root;

    vspec(&v, rl, n, 0);
    sc = v.elems[me] / sl->k;
    rbytes = units_bytes(rl, v.total_units);
    sb = sentinel_buf(units_bytes(sl, sc));
    rb = sentinel_buf(rbytes);
    covered = xmalloc(rbytes);
    memset(covered, 0, rbytes);
    put_stream(sb, sl, v.elems[me], me, root);
    if (in_place)
        put_stream(rb + units_bytes(rl, v.displs[me]), rl, v.elems[me], me, root);
    begin("MPI_Gatherv", c, "-", pair_name(sl, rl), n, root, inplace);
    if (call_ok(COLL2(c, Gatherv, gatherv,
                      (in_place ? MPI_IN_PLACE : sb, sc, sl->type, rb, v.counts, v.displs, rl->type,
                       root, cm),
                      (in_place ? MPI_IN_PLACE : sb, sc, sl->type, rb, v.ccounts, v.cdispls,
                       rl->type, root, cm))) &&
        me == root) {
        for (int s = 0; s < np; s++)
            check_stream(rb + units_bytes(rl, v.displs[s]), rl, v.elems[s], s, root, covered, rb);
        check_untouched(rb, covered, rbytes);
    }
    if (!in_place)
        check_send(sb, sl, v.elems[me], root);
    free(sb);
    free(rb);
    free(covered);
}

static void dm_scatterv(const layout_t *sl, const layout_t *rl, long n, int root, int inplace,
                        int c)
{
    vspec_t v;
    MPI_Count rc;
    size_t rbytes;
    char *sb, *rb, *covered;
    int in_place = inplace && me == root;

    vspec(&v, sl, n, 1);
    rc = v.elems[me] / rl->k;
    rbytes = units_bytes(rl, rc);
    sb = sentinel_buf(units_bytes(sl, v.total_units));
    rb = sentinel_buf(rbytes);
    covered = xmalloc(rbytes);
    memset(covered, 0, rbytes);
    if (me == root) {
        for (int d = 0; d < np; d++)
            put_stream(sb + units_bytes(sl, v.displs[d]), sl, v.elems[d], root, d);
    }
    begin("MPI_Scatterv", c, "-", pair_name(sl, rl), n, root, inplace);
    if (call_ok(COLL2(c, Scatterv, scatterv,
                      (sb, v.counts, v.displs, sl->type, in_place ? MPI_IN_PLACE : rb, rc, rl->type,
                       root, cm),
                      (sb, v.ccounts, v.cdispls, sl->type, in_place ? MPI_IN_PLACE : rb, rc,
                       rl->type, root, cm)))) {
        if (!in_place) {
            check_stream(rb, rl, v.elems[me], root, me, covered, rb);
            check_untouched(rb, covered, rbytes);
        }
        for (int d = 0; d < np && me == root; d++)
            check_send(sb + units_bytes(sl, v.displs[d]), sl, v.elems[d], d);
    }
    free(sb);
    free(rb);
    free(covered);
}

static void dm_allgatherv(const layout_t *sl, const layout_t *rl, long n, int root, int inplace,
                          int c)
{
    vspec_t v;
    MPI_Count sc;
    size_t rbytes;
    char *sb, *rb, *covered;

    (void)root;
    vspec(&v, rl, n, 2);
    sc = v.elems[me] / sl->k;
    rbytes = units_bytes(rl, v.total_units);
    sb = sentinel_buf(units_bytes(sl, sc));
    rb = sentinel_buf(rbytes);
    covered = xmalloc(rbytes);
    memset(covered, 0, rbytes);
    put_stream(sb, sl, v.elems[me], me, 0);
    if (inplace)
        put_stream(rb + units_bytes(rl, v.displs[me]), rl, v.elems[me], me, 0);
    begin("MPI_Allgatherv", c, "-", pair_name(sl, rl), n, -1, inplace);
    if (call_ok(COLL2(
            c, Allgatherv, allgatherv,
            (inplace ? MPI_IN_PLACE : sb, sc, sl->type, rb, v.counts, v.displs, rl->type, cm),
            (inplace ? MPI_IN_PLACE : sb, sc, sl->type, rb, v.ccounts, v.cdispls, rl->type, cm)))) {
        for (int s = 0; s < np; s++)
            check_stream(rb + units_bytes(rl, v.displs[s]), rl, v.elems[s], s, 0, covered, rb);
        check_untouched(rb, covered, rbytes);
    }
    if (!inplace)
        check_send(sb, sl, v.elems[me], 0);
    free(sb);
    free(rb);
    free(covered);
}

/* Alltoallv: rank s sends rank d e(s, d) = n * ((s + 2d + 1) % 4)
 * elements; blocks in reverse peer order with one unit of gap. */
static long a2av_elems(long n, int s, int d)
{
    return n * ((s + 2 * d + 1) % 4);
}

static void a2av_spec(vspec_t *v, const layout_t *l, long n, int sending)
{
    MPI_Count at = 0;

    for (int r = np - 1; r >= 0; r--) {
        long e = sending ? a2av_elems(n, me, r) : a2av_elems(n, r, me);

        v->elems[r] = e;
        v->counts[r] = (int)(e / l->k);
        v->ccounts[r] = e / l->k;
        v->displs[r] = (int)at;
        v->cdispls[r] = (MPI_Aint)at;
        at += e / l->k + 1;
    }
    v->total_units = at;
}

static void dm_alltoallv(const layout_t *sl, const layout_t *rl, long n, int root, int inplace,
                         int c)
{
    vspec_t s, v;
    size_t rbytes;
    char *sb, *rb, *covered;

    (void)root;
    /* in place, the sizes must be symmetric: e(s, d) = e(d, s) */
    s.total_units = v.total_units = 0;
    if (inplace) {
        sl = rl;
        for (int r = np - 1, at = 0; r >= 0; r--) {
            long e = n * ((me + r) % 3);

            s.elems[r] = v.elems[r] = e;
            s.counts[r] = v.counts[r] = (int)(e / rl->k);
            s.ccounts[r] = v.ccounts[r] = e / rl->k;
            s.displs[r] = v.displs[r] = at;
            s.cdispls[r] = v.cdispls[r] = at;
            at += (int)(e / rl->k) + 1;
            s.total_units = v.total_units = at;
        }
    } else {
        a2av_spec(&s, sl, n, 1);
        a2av_spec(&v, rl, n, 0);
    }
    rbytes = units_bytes(rl, v.total_units);
    sb = sentinel_buf(units_bytes(sl, s.total_units));
    rb = sentinel_buf(rbytes);
    covered = xmalloc(rbytes);
    memset(covered, 0, rbytes);
    for (int d = 0; d < np; d++) {
        if (inplace)
            put_stream(rb + units_bytes(rl, v.displs[d]), rl, v.elems[d], me, d);
        else
            put_stream(sb + units_bytes(sl, s.displs[d]), sl, s.elems[d], me, d);
    }
    begin("MPI_Alltoallv", c, "-", pair_name(sl, rl), n, -1, inplace);
    if (call_ok(COLL2(c, Alltoallv, alltoallv,
                      (inplace ? MPI_IN_PLACE : sb, s.counts, s.displs, sl->type, rb, v.counts,
                       v.displs, rl->type, cm),
                      (inplace ? MPI_IN_PLACE : sb, s.ccounts, s.cdispls, sl->type, rb, v.ccounts,
                       v.cdispls, rl->type, cm)))) {
        for (int r = 0; r < np; r++)
            check_stream(rb + units_bytes(rl, v.displs[r]), rl, v.elems[r], r, me, covered, rb);
        check_untouched(rb, covered, rbytes);
    }
    for (int d = 0; d < np && !inplace; d++)
        check_send(sb + units_bytes(sl, s.displs[d]), sl, s.elems[d], d);
    free(sb);
    free(rb);
    free(covered);
}

/* ---- the table of data movements --------------------------------------------------------- */

typedef void dm_fn(const layout_t *sl, const layout_t *rl, long n, int root, int inplace, int c);

static const struct {
    const char *name;
    dm_fn *fn;
    int rooted, in_place; /* has a root; has an MPI_IN_PLACE form */
} dms[] = {
    {"bcast", dm_bcast, 1, 0},           {"gather", dm_gather, 1, 1},
    {"gatherv", dm_gatherv, 1, 1},       {"scatter", dm_scatter, 1, 1},
    {"scatterv", dm_scatterv, 1, 1},     {"allgather", dm_allgather, 0, 1},
    {"allgatherv", dm_allgatherv, 0, 1}, {"alltoall", dm_alltoall, 0, 1},
    {"alltoallv", dm_alltoallv, 0, 1},
};
#define NDMS ((int)(sizeof(dms) / sizeof(dms[0])))

/* Every data movement: plain ints at counts 0, 1, P-1, 7 and 100 per
 * block (each root for 7), each layout pair at 0 and 6 and 42, in place
 * and not, the _c form every other call. */
static void run_dm(int d)
{
    long counts[] = {0, 1, np - 1, 7, 100};
    int calls = 0;

    for (int k = 0; k < 5; k++) {
        int roots = dms[d].rooted && counts[k] == 7 ? np : 1;

        for (int r = 0; r < roots; r++) {
            for (int ip = 0; ip <= dms[d].in_place; ip++) {
                int root = roots > 1 ? r : next_root();

                dms[d].fn(&lay[L_INT], &lay[L_INT], counts[k], root, ip, pick_c(calls++));
            }
        }
    }
    for (int p = 1; p < NLPAIRS; p++) {
        long n6[] = {0, 6, 42};

        for (int k = 0; k < 3; k++) {
            for (int ip = 0; ip <= dms[d].in_place; ip++)
                dms[d].fn(&lay[lpairs[p].send], &lay[lpairs[p].recv], n6[k], next_root(), ip,
                          pick_c(calls++));
        }
    }
}

/* ---- reductions ----------------------------------------------------------------------------- */

enum {
    R_REDUCE,
    R_ALLREDUCE,
    R_RSB,
    R_RS,
    R_SCAN,
    R_EXSCAN,
    R_LOCAL,
    R_COUNT
};
static const char *const rnames[R_COUNT] = {
    "MPI_Reduce", "MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter",
    "MPI_Scan",   "MPI_Exscan",    "MPI_Reduce_local"};

/* the ranks of element @g of the result at this rank fold: @from..@to;
 * 0 when this rank's result is not defined */
static int result_ranks(int which, int *from, int *to)
{
    *from = 0;
    *to = np - 1;
    if (which == R_SCAN)
        *to = me;
    if (which == R_EXSCAN)
        *to = me - 1;
    if (which == R_LOCAL)
        *to = 1;
    return *to >= *from;
}

/* One reduction: @which over @units units of layout @l whose basic
 * elements are values of @t, with op @k; @inplace where allowed. */
static void reduction(int which, int k, const tinfo_t *t, const layout_t *l, MPI_Count units,
                      int root, int inplace, int c)
{
    int p = which == R_LOCAL ? 2 : np;
    int rcounts[64];
    MPI_Count crcounts[64], in_units = units, out_units = units, out_first = 0;
    long per = l->k;
    size_t in_bytes, out_bytes;
    char *sb, *rb;
    int in_place = inplace && (which != R_REDUCE || me == root) && which != R_LOCAL;
    int from, to, rc;
    MPI_Op op = ops[k].op;
    char e[160], g[160], *covered = NULL;

    if (which == R_RSB) {
        in_units = units * np;
        out_first = units * me;
    } else if (which == R_RS) {
        in_units = 0;
        for (int r = 0; r < np; r++) {
            crcounts[r] = units * ((r + 1) % 3);
            rcounts[r] = (int)crcounts[r];
            if (r < me)
                out_first += crcounts[r];
            in_units += crcounts[r];
        }
        out_units = crcounts[me];
    }
    in_bytes = units_bytes(l, in_units);
    out_bytes = units_bytes(l, in_place ? in_units : out_units);
    sb = sentinel_buf(in_bytes);
    rb = sentinel_buf(out_bytes);
    /* a derived layout's gaps are checked (not in place: the standard
     * does not say what becomes of the rest of the input) */
    if (l >= lay && l < lay + L_COUNT && !in_place) {
        covered = xmalloc(out_bytes);
        memset(covered, 0, out_bytes);
    }
    for (long j = 0; j < in_units * per; j++) {
        num_t v = gen(k, t, which == R_LOCAL ? 0 : me, j, p);

        put_num(elem_at(in_place ? rb : sb, l, j), t, v);
        if (which == R_LOCAL)
            put_num(elem_at(rb, l, j), t, gen(k, t, 1, j, p));
    }
    /* (the flag every rank passes: the persistent flavour starts a
     * request once or twice by it) */
    begin(rnames[which], c, ops[k].name, l->name, (long)units, which == R_REDUCE ? root : -1,
          inplace && which != R_LOCAL);
    {
        const void *sp = in_place ? MPI_IN_PLACE : sb;

        switch (which) {
        case R_REDUCE: rc = COLL(c, Reduce, reduce, (sp, rb, units, l->type, op, root, cm)); break;
        case R_ALLREDUCE:
            rc = COLL(c, Allreduce, allreduce, (sp, rb, units, l->type, op, cm));
            break;
        case R_RSB:
            rc = COLL(c, Reduce_scatter_block, reduce_scatter_block,
                      (sp, rb, units, l->type, op, cm));
            break;
        case R_RS:
            rc = COLL2(c, Reduce_scatter, reduce_scatter, (sp, rb, rcounts, l->type, op, cm),
                       (sp, rb, crcounts, l->type, op, cm));
            break;
        case R_SCAN: rc = COLL(c, Scan, scan, (sp, rb, units, l->type, op, cm)); break;
        case R_EXSCAN: rc = COLL(c, Exscan, exscan, (sp, rb, units, l->type, op, cm)); break;
        default:
            rc = c ? MPI_Reduce_local_c(sb, rb, units, l->type, op)
                   : MPI_Reduce_local(sb, rb, (int)units, l->type, op);
            break;
        }
    }
    if (rc != MPI_SUCCESS) {
        call_ok(rc);
    } else if ((which != R_REDUCE || me == root) && result_ranks(which, &from, &to)) {
        for (long j = 0; j < out_units * per; j++) {
            long gj = out_first * per + j;
            num_t want = fold(k, t, from, to, gj, p), got = get_num(elem_at(rb, l, j), t);

            if (covered)
                memset(covered + (elem_at(rb, l, j) - rb), 1, elem_size(l, j));
            if (!num_equal(t, want, got)) {
                num_str(e, sizeof(e), t, want);
                num_str(g, sizeof(g), t, got);
                fail_elem(j, e, g);
            }
        }
        /* the gaps of a derived type's units stay untouched */
        if (covered)
            check_untouched(rb, covered, out_bytes);
    }
    /* the input is the caller's: read, never written */
    for (long j = 0; rc == MPI_SUCCESS && !in_place && j < in_units * per; j++) {
        num_t want = gen(k, t, which == R_LOCAL ? 0 : me, j, p);
        num_t got = get_num(elem_at(sb, l, j), t);

        if (!num_equal(t, want, got)) {
            num_str(e, sizeof(e), t, want);
            num_str(g, sizeof(g), t, got);
            buf_name = "send buffer (input the call changed)";
            fail_elem(j, e, g);
            buf_name = "result";
            break;
        }
    }
    free(sb);
    free(rb);
    free(covered);
}

static int has_in_place(int which)
{
    return which != R_LOCAL;
}

/* Every allowed (op, type) pair through every reduction, at a count
 * that gives every rank each role (P + 3 elements), in place and not,
 * the _c form every other call; @some: only one pair in three. */
static void run_matrix(int which, int some)
{
    int n = 0;

    for (int t = 0; t < NTYPES; t++) {
        for (int k = 0; k < O_PREDEFINED; k++) {
            layout_t l = plain(&types[t]);

            if (!(ops[k].groups & types[t].groups))
                continue;
            if (some && n++ % 3 != 0)
                continue;
            for (int ip = 0; ip <= has_in_place(which); ip++)
                reduction(which, k, &types[t], &l, np + 3, next_root(), ip, (t + k + ip) % 2);
        }
    }
}

/* counts 0, 1, < P, not divisible by P, on int and double sums; the user
 * ops; the derived layouts (the predefined ops apply to their ints) */
static void run_reduce_shapes(int which)
{
    long counts[] = {0, 1, np - 1, 2 * np + 1, 1000};
    tinfo_t *ti = tfind(MPI_INT), *td = tfind(MPI_DOUBLE), *tu = tfind(MPI_UNSIGNED);
    layout_t li = plain(ti), ld = plain(td), lu = plain(tu), lm = plain(&mat_type);
    int calls = 0;

    for (int k = 0; k < 5; k++) {
        for (int ip = 0; ip <= has_in_place(which); ip++) {
            reduction(which, O_SUM, ti, &li, counts[k], next_root(), ip, pick_c(calls++));
            reduction(which, O_MAX, td, &ld, counts[k], next_root(), ip, pick_c(calls++));
            reduction(which, O_UMAT, &mat_type, &lm, counts[k], next_root(), ip, pick_c(calls++));
            reduction(which, O_UCOMM, tu, &lu, counts[k], next_root(), ip, pick_c(calls++));
        }
    }
    for (int l = L_VEC; l <= L_INDEXED; l++) {
        for (int ip = 0; ip <= has_in_place(which); ip++) {
            reduction(which, O_UCOMM, ti, &lay[l], 5, next_root(), ip, pick_c(calls++));
            /* predefined ops on a derived type of one basic type: an
             * extension (the standard defines them on the predefined
             * types; docs/mpi.md) */
            if (!extensions)
                continue;
            reduction(which, O_SUM, ti, &lay[l], 5, next_root(), ip, pick_c(calls++));
            reduction(which, O_BXOR, ti, &lay[l], np + 1, next_root(), ip, pick_c(calls++));
        }
    }
}

/* the user ops */
static void umat_fn(void *in_, void *inout_, int *len, MPI_Datatype *type)
{
    const uint32_t *in = in_;
    uint32_t *io = inout_;

    if (*type != mat_type.type) {
        printf("FAIL rank %d: the matrix op got another datatype than the call's\n", rank);
        failures++;
        return;
    }
    for (int i = 0; i < *len; i++, in += 4, io += 4) {
        uint32_t a0 = in[0], a1 = in[1], a2 = in[2], a3 = in[3];
        uint32_t b0 = io[0], b1 = io[1], b2 = io[2], b3 = io[3];

        io[0] = a0 * b0 + a1 * b2;
        io[1] = a0 * b1 + a1 * b3;
        io[2] = a2 * b0 + a3 * b2;
        io[3] = a2 * b1 + a3 * b3;
    }
}

/* x + y + xy on MPI_UNSIGNED, and on the ints of the derived layouts */
static void ucomm_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    layout_t unsigned_layout = {"MPI_UNSIGNED", MPI_UNSIGNED, 1, {0}, {0}, sizeof(unsigned)};
    const layout_t *l = *type == MPI_UNSIGNED ? &unsigned_layout : NULL;

    for (int k = L_VEC; k < L_COUNT && l == NULL; k++) {
        if (lay[k].type == *type)
            l = &lay[k];
    }
    if (l == NULL) {
        printf("FAIL rank %d: the commutative op got a datatype of no call\n", rank);
        failures++;
        return;
    }
    for (long j = 0; j < (long)*len * l->k; j++) {
        unsigned x, y;

        memcpy(&x, elem_at(in, l, j), sizeof(x));
        memcpy(&y, elem_at(inout, l, j), sizeof(y));
        y = x + y + x * y;
        memcpy(elem_at(inout, l, j), &y, sizeof(y));
    }
}

/* ---- the cases ------------------------------------------------------------------------------ */

/* the host's monotonic clock: every rank of `postbox run` shares it */
static double host_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void case_barrier(void)
{
    double entered = 0, left;

    begin("MPI_Barrier", 0, "-", "-", 0, -1, 0);
    for (int i = 0; i < 5; i++)
        call_ok(FLAVOUR(Barrier, barrier, , (cm)));
    /* the last rank enters 20 ms late; nobody may leave before it entered
     * (its time of entry, sent afterwards by point-to-point) */
    if (me == np - 1) {
        nanosleep(&(struct timespec){0, 20000000}, NULL);
        entered = host_now();
    }
    call_ok(FLAVOUR(Barrier, barrier, , (cm)));
    left = host_now();
    if (me == np - 1) {
        for (int r = 0; r < np - 1; r++)
            MPI_Send(&entered, 1, MPI_DOUBLE, r, 3, cm);
    } else {
        MPI_Recv(&entered, 1, MPI_DOUBLE, np - 1, 3, cm, MPI_STATUS_IGNORE);
        if (left < entered)
            fail_line("left the barrier before the last rank entered it");
    }
}

static void case_bcast(void)
{
    run_dm(0);
}
static void case_gather(void)
{
    run_dm(1);
    run_dm(2);
}
static void case_scatter(void)
{
    run_dm(3);
    run_dm(4);
}
static void case_allgather(void)
{
    run_dm(5);
    run_dm(6);
}
static void case_alltoall(void)
{
    run_dm(7);
    run_dm(8);
}

static void case_reduce_matrix(void)
{
    for (int w = 0; w < R_COUNT; w++)
        run_matrix(w, 0);
}

static void case_reduce_shapes(void)
{
    for (int w = 0; w < R_COUNT; w++)
        run_reduce_shapes(w);
}

/* a disallowed (op, type) pair is MPI_ERR_OP in every reduction */
static void case_op_errors(void)
{
    char buf[4 * 64] = {0}, out[4 * 64 * 8];
    MPI_Count crcounts[64];

    for (int r = 0; r < np; r++)
        crcounts[r] = 1;
    for (int t = 0; t < NTYPES; t++) {
        for (int k = 0; k < O_PREDEFINED; k++) {
            MPI_Datatype ty = types[t].type;
            MPI_Op op = ops[k].op;
            int rc[R_COUNT];

            if (ops[k].groups & types[t].groups)
                continue;
            begin("the reductions", 0, ops[k].name, types[t].name, 1, -1, 0);
            rc[R_LOCAL] = MPI_Reduce_local(buf, out, 1, ty, op);
            rc[R_REDUCE] = FLAVOUR(Reduce, reduce, , (buf, out, 1, ty, op, 0, cm));
            rc[R_ALLREDUCE] = FLAVOUR(Allreduce, allreduce, , (buf, out, 1, ty, op, cm));
            rc[R_RSB] =
                FLAVOUR(Reduce_scatter_block, reduce_scatter_block, , (buf, out, 1, ty, op, cm));
            rc[R_RS] =
                FLAVOUR(Reduce_scatter, reduce_scatter, _c, (buf, out, crcounts, ty, op, cm));
            rc[R_SCAN] = FLAVOUR(Scan, scan, , (buf, out, 1, ty, op, cm));
            rc[R_EXSCAN] = FLAVOUR(Exscan, exscan, _c, (buf, out, 1, ty, op, cm));
            for (int w = 0; w < R_COUNT; w++) {
                int cls = -1;
                char what[128];

                MPI_Error_class(rc[w], &cls);
                if (cls != MPI_ERR_OP) {
                    begin(rnames[w], w == R_RS || w == R_EXSCAN, ops[k].name, types[t].name, 1,
                          w == R_REDUCE ? 0 : -1, 0);
                    snprintf(what, sizeof(what),
                             "a pair the standard does not define: returned class %d, not "
                             "MPI_ERR_OP (%d)",
                             cls, MPI_ERR_OP);
                    fail_line(what);
                }
            }
        }
    }
}

static void case_big(void);
static void case_interleave(void);

typedef struct {
    const char *name;
    void (*run)(void);
    int every_comm; /* also on the other communicators (else world only) */
} case_t;

static const case_t cases[] = {
    {"barrier", case_barrier, 1},
    {"bcast", case_bcast, 1},
    {"gather", case_gather, 1},
    {"scatter", case_scatter, 1},
    {"allgather", case_allgather, 1},
    {"alltoall", case_alltoall, 1},
    {"reduce_shapes", case_reduce_shapes, 1},
    {"reduce_matrix", case_reduce_matrix, 0},
    {"op_errors", case_op_errors, 0},
    {"big", case_big, 0},
    {"interleave", case_interleave, 0},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* 64 KB, 1 MB and 3 MB + 1 element: the buffers of every collective,
 * across the protocol's and the algorithms' thresholds */
static void case_big(void)
{
    long sizes[] = {64 * 1024, 1024 * 1024, 3 * 1024 * 1024 + 4};
    tinfo_t *ti = tfind(MPI_INT), *td = tfind(MPI_DOUBLE), *tp = tfind(MPI_DOUBLE_INT);
    layout_t li = plain(ti), ld = plain(td), lp = plain(tp), lm = plain(&mat_type);

    if (!big)
        return;
    for (int s = 0; s < 3; s++) {
        long ints = sizes[s] / (long)sizeof(int);
        long block = ints / np + (s == 2); /* one block holds the odd element */
        int root = np - 1 - s % np;

        dm_bcast(&lay[L_INT], &lay[L_INT], ints, root, 0, s == 1);
        dm_gather(&lay[L_INT], &lay[L_INT], block, root, 0, 0);
        dm_scatter(&lay[L_INT], &lay[L_INT], block, root, s == 2, 0);
        dm_allgather(&lay[L_INT], &lay[L_INT], block, -1, s == 1, 0);
        dm_alltoall(&lay[L_INT], &lay[L_INT], block, -1, 0, 0);
        reduction(R_REDUCE, O_SUM, ti, &li, ints, root, s == 2, 0);
        reduction(R_ALLREDUCE, O_SUM, td, &ld, sizes[s] / (long)sizeof(double) + (s == 2), -1,
                  s == 1, 0);
        reduction(R_RSB, O_SUM, ti, &li, block, -1, s == 1, 0);
        if (s == 1) {
            reduction(R_SCAN, O_SUM, ti, &li, ints, -1, 0, 0);
            /* 1 MB of pairs, of matrices, and through a derived type */
            reduction(R_ALLREDUCE, O_MAXLOC, tp, &lp, sizes[s] / (long)tp->extent, -1, 0, 0);
            reduction(R_REDUCE, O_UMAT, &mat_type, &lm, sizes[s] / 16, root, 0, 0);
            reduction(R_ALLREDUCE, O_UMAT, &mat_type, &lm, sizes[s] / 16, -1, 1, 0);
            dm_bcast(&lay[L_VEC], &lay[L_INT], ints, root, 0, 0);
            dm_alltoall(&lay[L_INT], &lay[L_RESIZED], block, -1, 0, 0);
        }
    }
}

/* A split communicator and its parent used alternately, in different
 * orders on the two halves (the even ranks start with the parent): the
 * messages of each must reach its own collective. */
static void case_interleave(void)
{
    MPI_Comm half;
    int hme, hnp, world_me = me, world_np = np;
    long n = 1000;
    tinfo_t *ti = tfind(MPI_INT);
    layout_t li = plain(ti), lm = plain(&mat_type);
    MPI_Comm parent = cm;
    const char *parent_name = cm_name;

    OK(MPI_Comm_split(parent, me % 2, -me, &half));
    MPI_Comm_rank(half, &hme);
    MPI_Comm_size(half, &hnp);
    for (int round = 0; round < 4; round++) {
        for (int step = 0; step < 2; step++) {
            int on_half = (step == 0) == (world_me % 2 == 1);

            cm = on_half ? half : parent;
            cm_name = on_half ? "half (split by parity, reversed) used alternately with its parent"
                              : parent_name;
            me = on_half ? hme : world_me;
            np = on_half ? hnp : world_np;
            switch ((round + on_half) % 4) {
            case 0: reduction(R_ALLREDUCE, O_SUM, ti, &li, n, -1, 0, 0); break;
            case 1: dm_bcast(&lay[L_INT], &lay[L_INT], n, np - 1, 0, 0); break;
            case 2: reduction(R_SCAN, O_UMAT, &mat_type, &lm, 3, -1, 0, 0); break;
            default: dm_alltoall(&lay[L_INT], &lay[L_INT], 7, -1, 0, 1); break;
            }
        }
    }
    cm = parent;
    cm_name = parent_name;
    me = world_me;
    np = world_np;
    MPI_Comm_free(&half);
}

/* ---- main --------------------------------------------------------------------------------- */

static int keep_cpus(int n)
{
    cpu_set_t allowed, kept;

    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return -1;
    CPU_ZERO(&kept);
    for (int cpu = 0; cpu < CPU_SETSIZE && n > 0; cpu++) {
        if (CPU_ISSET(cpu, &allowed)) {
            CPU_SET(cpu, &kept);
            n--;
        }
    }
    return sched_setaffinity(0, sizeof(kept), &kept);
}

static void use_comm(MPI_Comm c, const char *name)
{
    rotor = 0; /* the ranks of one communicator make the same calls: the same roots */
    cm = c;
    cm_name = name;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &np);
}

/* the case @name is wanted: no case named in argv[@first..], or it is */
static int wanted_case(int argc, char **argv, int first, const char *name)
{
    int wanted = first >= argc;

    for (int a = first; a < argc; a++)
        wanted |= strcmp(argv[a], name) == 0;
    return wanted;
}

static void run_cases(int argc, char **argv, int first_case)
{
    MPI_Comm dup, parity, reversed;
    struct {
        MPI_Comm *comm;
        const char *name;
    } comms[] = {{NULL, "MPI_COMM_WORLD"},
                 {NULL, "MPI_COMM_SELF"},
                 {&dup, "a dup of MPI_COMM_WORLD"},
                 {&parity, "split by parity"},
                 {&reversed, "split in reversed rank order"}};

    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &parity));
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &reversed));
    for (int ci = 0; ci < 5; ci++) {
        MPI_Comm c = ci == 0 ? MPI_COMM_WORLD : ci == 1 ? MPI_COMM_SELF : *comms[ci].comm;

        use_comm(c, comms[ci].name);
        for (int i = 0; i < NCASES; i++) {
            if (wanted_case(argc, argv, first_case, cases[i].name) &&
                (ci == 0 || cases[i].every_comm))
                cases[i].run();
        }
    }
    /* the predefined ops of the scans (whose results depend on the rank
     * order) on a reordered communicator */
    if (wanted_case(argc, argv, first_case, "reduce_matrix")) {
        use_comm(reversed, "split in reversed rank order");
        for (int w = R_SCAN; w <= R_EXSCAN; w++)
            run_matrix(w, 1);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&parity);
    MPI_Comm_free(&reversed);
}

int main(int argc, char **argv)
{
    int status, a, use_random = 0, world_size;
    MPI_Datatype mat;

    for (a = 1; a < argc - 1; a++) {
        /* (--cpus acts before MPI_Init: the engine reads the mask there) */
        if (strcmp(argv[a], "--cpus") == 0 && keep_cpus(atoi(argv[a + 1])) != 0) {
            perror("pbt-mpi-coll-conform: sched_setaffinity");
            return 1;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (world_size > 64) {
        if (rank == 0)
            fprintf(stderr, "pbt-mpi-coll-conform: at most 64 ranks\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (a = 1; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
        if (strcmp(argv[a], "--seed") == 0 && a + 1 < argc) {
            seed = strtoull(argv[++a], NULL, 0);
        } else if (strcmp(argv[a], "--random") == 0) {
            use_random = 1;
        } else if (strcmp(argv[a], "--no-big") == 0) {
            big = 0;
        } else if (strcmp(argv[a], "--no-extensions") == 0) {
            extensions = 0;
        } else if (strcmp(argv[a], "--cpus") == 0 && a + 1 < argc) {
            a++;
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: pbt-mpi-coll-conform [--seed N | --random] [--no-big] "
                                "[--no-extensions] [--cpus N] [case ...]\n");
            MPI_Finalize();
            return 2;
        }
    }
    /* the seed: rank 0's, sent by point-to-point (not by a collective
     * under test) */
    if (use_random && rank == 0)
        seed = mix((uint64_t)time(NULL) ^ (uint64_t)getpid() << 32) | 1;
    if (rank == 0) {
        for (int r = 1; r < world_size; r++)
            MPI_Send(&seed, 1, MPI_UINT64_T, r, 7, MPI_COMM_WORLD);
        if (seed)
            printf("%s: seed %" PRIu64 " (rerun with --seed %" PRIu64 ")\n", CONFORM_NAME, seed,
                   seed);
    } else {
        MPI_Recv(&seed, 1, MPI_UINT64_T, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    make_layouts();
    OK(MPI_Type_contiguous(4, MPI_UNSIGNED, &mat));
    OK(MPI_Type_commit(&mat));
    mat_type.type = mat;
    OK(MPI_Op_create(umat_fn, 0, &ops[O_UMAT].op));
    OK(MPI_Op_create(ucomm_fn, 1, &ops[O_UCOMM].op));

#ifdef CONFORM_NB
    for (flavour = F_NONBLOCKING; flavour <= F_PERSISTENT; flavour++) {
        flavour_name = flavour == F_NONBLOCKING ? "nonblocking" : "persistent";
        run_cases(argc, argv, a);
    }
    CONFORM_NB_EXTRA();
#else
    run_cases(argc, argv, a);
#endif

    MPI_Op_free(&ops[O_UMAT].op);
    MPI_Op_free(&ops[O_UCOMM].op);
    MPI_Type_free(&mat);
    for (int l = 1; l < L_COUNT; l++)
        MPI_Type_free(&lay[l].type);
    /* summed by point-to-point, not by the collectives under test */
    status = check_summary(CONFORM_NAME, MPI_COMM_WORLD, 32767); /* (the least MPI_TAG_UB) */
    MPI_Finalize();
    return status;
}
