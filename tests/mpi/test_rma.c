/*
 * pbt-mpi-rma: MPI one-sided communication (MPI-5.0 chapter 12), run by
 * CTest under `postbox run -n N [--nodes K]` (any N >= 1).  Written to the
 * standard API only, so that it runs under any MPI: every window flavour
 * and its attributes, info, names, keyvals and error handlers; windows of
 * a split communicator, many windows at once; put and get with derived
 * datatypes on both sides, the target's displacement unit, 4 MiB
 * transfers; accumulate with every predefined operation, get-accumulate,
 * fetch-and-op and compare-and-swap; the request-based calls and the
 * large-count (_c) forms; every synchronization mode and its assertions;
 * operations on the caller's own rank and on MPI_PROC_NULL; and the errors
 * the standard names, under MPI_ERRORS_RETURN.  Each value is checked
 * against what the standard's semantics make it.  Every rank prints one
 * line per failure; rank 0 prints "rma: ok" at the end.  Without --strict
 * it passes under Open MPI 5.0 and MPICH 4.0 and 5.0.
 *
 *   pbt-mpi-rma [--strict] [--cpus N] [case ...]   (default: every case)
 *
 *   --strict    also what the standard asks but Open MPI or MPICH do not
 *               do, and what it leaves to the implementation and Postbox
 *               does: the errors of the errors case marked POSTBOX are
 *               detected, with the class the standard names; an unnamed
 *               window's name is empty; MPI_Win_shared_query reports the
 *               size each rank asked for; MPI_Win_get_info reports every
 *               hint of the window (the defaults, the values set at
 *               creation and by MPI_Win_set_info); a window of 40 bytes;
 *               PSCW with MPI_MODE_NOCHECK
 *   --cpus N    run on the first N processors (before MPI_Init)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int size;
static int strict;

#define N 64 /* ints in each rank's window of the transfer cases */

static int right(void)
{
    return (rank + 1) % size;
}

static int left(void)
{
    return (rank + size - 1) % size;
}

/* what rank @owner's window holds at @i before any case writes it */
static int value(int owner, int i)
{
    return owner * 1000 + i;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (p == NULL) {
        printf("rma FAIL rank %d: out of memory for %zu bytes\n", rank, n);
        exit(1);
    }
    return p;
}

static void nap(void)
{
    struct timespec ts = {0, 100000}; /* 0.1 ms: a waiting rank leaves the core */

    nanosleep(&ts, NULL);
}

/* Who must detect an erroneous call: every MPI library (Open MPI and
 * MPICH do, with the class the standard names), or Postbox (checked under
 * --strict only: the call is not even made without it, since another
 * library may abort or corrupt memory on it). */
enum detected_by {
    EVERY_MPI,
    POSTBOX
};

/* @rc is an error of class @expected */
static void expect_error(int rc, int expected, const char *what)
{
    int cls = MPI_SUCCESS;

    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == expected, "%s: returned %d (class %d), expected class %d",
          what, rc, cls, expected);
}

/* the erroneous @call fails with class @expected, when @who must detect it */
#define EXPECT_ERROR(call, expected, who, what)                                                    \
    do {                                                                                           \
        if ((who) == EVERY_MPI || strict)                                                          \
            expect_error((call), (expected), (what));                                              \
    } while (0)

/* the attributes of @win (MPI-5.0 12.2.6) and its group, that of @comm */
static void check_attributes(MPI_Win win, MPI_Comm comm, void *base, MPI_Aint bytes, int disp_unit,
                             int flavor, const char *what)
{
    void *got_base = NULL;
    MPI_Aint *got_size = NULL;
    int *got_unit = NULL, *got_flavor = NULL, *got_model = NULL;
    int flag = 0, cmp = MPI_UNEQUAL;
    MPI_Group win_group, comm_group;

    OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &got_base, &flag));
    CHECK(flag && got_base == base, "%s: MPI_WIN_BASE %p (flag %d), expected %p", what, got_base,
          flag, base);
    OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &got_size, &flag));
    CHECK(flag && got_size != NULL && *got_size == bytes, "%s: MPI_WIN_SIZE %ld, expected %ld",
          what, got_size ? (long)*got_size : -1L, (long)bytes);
    OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &got_unit, &flag));
    CHECK(flag && got_unit != NULL && *got_unit == disp_unit,
          "%s: MPI_WIN_DISP_UNIT %d, expected %d", what, got_unit ? *got_unit : -1, disp_unit);
    OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &got_flavor, &flag));
    CHECK(flag && got_flavor != NULL && *got_flavor == flavor,
          "%s: MPI_WIN_CREATE_FLAVOR %d, expected %d", what, got_flavor ? *got_flavor : -1, flavor);
    OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &got_model, &flag));
    CHECK(flag && got_model != NULL &&
              (*got_model == MPI_WIN_UNIFIED || *got_model == MPI_WIN_SEPARATE),
          "%s: MPI_WIN_MODEL %d, expected MPI_WIN_UNIFIED or MPI_WIN_SEPARATE", what,
          got_model ? *got_model : -1);

    OK(MPI_Win_get_group(win, &win_group));
    OK(MPI_Comm_group(comm, &comm_group));
    OK(MPI_Group_compare(win_group, comm_group, &cmp));
    CHECK(cmp == MPI_IDENT, "%s: MPI_Win_get_group compares %d to the communicator's group", what,
          cmp);
    OK(MPI_Group_free(&win_group));
    OK(MPI_Group_free(&comm_group));
}

/* every int of @got[@n] is @want[i] */
static void check_ints(const int *got, const int *want, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            CHECK(0, "%s: element %d is %d, expected %d", what, i, got[i], want[i]);
            return;
        }
}

/* rank @owner's initial contents of a window of @n ints */
static void fill(int *mem, int owner, int n)
{
    for (int i = 0; i < n; i++)
        mem[i] = value(owner, i);
}

/* ---- the window flavours ----------------------------------------------------------------- */

static int deleted, attr_value = 42;

static int count_delete(MPI_Win win, int keyval, void *attr, void *extra)
{
    (void)win, (void)keyval, (void)extra;
    deleted += attr == &attr_value;
    return MPI_SUCCESS;
}

static void case_create(void)
{
    int *buf = xmalloc(N * sizeof(int)), sent[8], got[8], want[N];
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_Win win;

    fill(buf, rank, N);
    OK(MPI_Win_create(buf, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attributes(win, MPI_COMM_WORLD, buf, N * sizeof(int), sizeof(int), MPI_WIN_FLAVOR_CREATE,
                     "Win_create");

    /* a window without a name has the empty one (Open MPI names its windows) */
    OK(MPI_Win_get_name(win, name, &len));
    CHECK(!strict || (len == 0 && name[0] == '\0'),
          "Win_get_name of an unnamed window: \"%s\" (%d)", name, len);
    OK(MPI_Win_set_name(win, "halo exchange"));
    OK(MPI_Win_get_name(win, name, &len));
    CHECK(len == 13 && strcmp(name, "halo exchange") == 0, "Win_get_name: \"%s\" (%d)", name, len);

    for (int i = 0; i < 8; i++)
        sent[i] = value(rank, 500 + i);
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(sent, 8, MPI_INT, right(), 8, 8, MPI_INT, win));
    OK(MPI_Get(got, 8, MPI_INT, left(), 0, 8, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    fill(want, rank, N);
    for (int i = 0; i < 8; i++)
        want[8 + i] = value(left(), 500 + i);
    check_ints(buf, want, N, "Win_create: fence put");
    fill(want, left(), 8);
    check_ints(got, want, 8, "Win_create: fence get");
    /* a keyval of the caller's: its delete function runs at MPI_Win_free */
    int keyval = MPI_KEYVAL_INVALID, *got_attr = NULL, flag = 0;

    deleted = 0;
    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_delete, &keyval, NULL));
    OK(MPI_Win_set_attr(win, keyval, &attr_value));
    OK(MPI_Win_get_attr(win, keyval, &got_attr, &flag));
    CHECK(flag && got_attr == &attr_value, "Win_get_attr of the caller's keyval: flag %d", flag);
    /* a second key, then the first set again: both stay */
    int keyval2 = MPI_KEYVAL_INVALID, *got2 = NULL, flag2 = 0;

    OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &keyval2, NULL));
    OK(MPI_Win_set_attr(win, keyval2, &attr_value));
    OK(MPI_Win_set_attr(win, keyval, &attr_value));
    OK(MPI_Win_get_attr(win, keyval2, &got2, &flag2));
    CHECK(flag2 && got2 == &attr_value, "Win_set_attr of a key set before lost another (flag %d)",
          flag2);
    CHECK(deleted == 1, "setting an attribute again ran its delete function %d times", deleted);
    deleted = 0;

    OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free did not set the handle to MPI_WIN_NULL");
    CHECK(deleted == 1, "MPI_Win_free ran the attribute's delete function %d times", deleted);
    OK(MPI_Win_free_keyval(&keyval));
    OK(MPI_Win_free_keyval(&keyval2));

    /* every rank but 0 exposes no memory; each adds to rank 0's */
    int *mine = rank == 0 ? buf : NULL, one[4] = {1, 2, 3, 4};

    memset(buf, 0, 4 * sizeof(int));
    OK(MPI_Win_create(mine, rank == 0 ? 4 * sizeof(int) : 0, sizeof(int), MPI_INFO_NULL,
                      MPI_COMM_WORLD, &win));
    check_attributes(win, MPI_COMM_WORLD, mine, rank == 0 ? 4 * sizeof(int) : 0, sizeof(int),
                     MPI_WIN_FLAVOR_CREATE, "Win_create of 0 bytes");
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    OK(MPI_Accumulate(one, 4, MPI_INT, 0, 0, 4, MPI_INT, MPI_SUM, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    if (rank == 0)
        for (int i = 0; i < 4; i++)
            CHECK(buf[i] == (i + 1) * size, "0-byte windows: rank 0's [%d] = %d, expected %d", i,
                  buf[i], (i + 1) * size);
    OK(MPI_Win_free(&win));
    free(buf);
}

static void case_allocate(void)
{
    int *base = NULL, sent[4], want[N];
    MPI_Win win;

    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    CHECK(base != NULL, "Win_allocate returned no memory");
    if (base == NULL)
        return;
    check_attributes(win, MPI_COMM_WORLD, base, N * sizeof(int), sizeof(int),
                     MPI_WIN_FLAVOR_ALLOCATE, "Win_allocate");

    /* local stores to the window under a lock on self (both memory models) */
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    fill(base, rank, N);
    OK(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);

    for (int i = 0; i < 4; i++)
        sent[i] = value(rank, 700 + i);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, right(), 0, win));
    OK(MPI_Put(sent, 4, MPI_INT, right(), 16, 4, MPI_INT, win));
    OK(MPI_Win_unlock(right(), win));
    MPI_Barrier(MPI_COMM_WORLD);

    fill(want, rank, N);
    for (int i = 0; i < 4; i++)
        want[16 + i] = value(left(), 700 + i);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_ints(base, want, N, "Win_allocate: lock put");
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));

    /* a window of 40 bytes, not a multiple of 16 (under --strict: MPICH
     * 4.0's windows of such sizes on a node place each operation 8 bytes
     * before where the target's base pointer says) */
    if (strict) {
        int64_t *five = NULL, one = 1, old = -1, lanes[4] = {1, 2, 3, 4};

        OK(MPI_Win_allocate(40, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &five, &win));
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        memset(five, 0, 40);
        OK(MPI_Win_unlock(rank, win));
        MPI_Barrier(MPI_COMM_WORLD);
        OK(MPI_Win_lock_all(0, win));
        OK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, right(), 0, MPI_SUM, win));
        OK(MPI_Accumulate(lanes, 4, MPI_INT64_T, right(), 1, 4, MPI_INT64_T, MPI_SUM, win));
        OK(MPI_Win_unlock_all(win));
        MPI_Barrier(MPI_COMM_WORLD);
        OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
        for (int i = 0; i < 5; i++)
            CHECK(five[i] == (i == 0 ? 1 : i), "a window of 40 bytes: [%d] is %lld, expected %d", i,
                  (long long)five[i], i == 0 ? 1 : i);
        OK(MPI_Win_unlock(rank, win));
        OK(MPI_Win_free(&win));
    }
}

/* rank @q of the node's shared window: its segment, size and unit */
struct segment {
    int *base;
    MPI_Aint bytes;
    int disp_unit;
};

static struct segment query(MPI_Win win, int q)
{
    struct segment s = {NULL, -1, -1};

    OK(MPI_Win_shared_query(win, q, &s.bytes, &s.disp_unit, &s.base));
    return s;
}

static void case_shared(void)
{
    MPI_Comm node;
    int me, n, *base = NULL;
    MPI_Win win;
    MPI_Info info;

    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_Comm_rank(node, &me);
    MPI_Comm_size(node, &n);
    int *world = xmalloc((size_t)n * sizeof(int)); /* the world rank of each node rank */

    OK(MPI_Allgather(&rank, 1, MPI_INT, world, 1, MPI_INT, node));

    /* contiguous (the default): rank q's segment of 4(q+1) ints follows q-1's */
    MPI_Aint bytes = (MPI_Aint)(4 * (me + 1)) * (MPI_Aint)sizeof(int);

    OK(MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, node, &base, &win));
    check_attributes(win, node, base, bytes, sizeof(int), MPI_WIN_FLAVOR_SHARED,
                     "Win_allocate_shared");
    struct segment prev = {NULL, 0, 0};

    for (int q = 0; q < n; q++) {
        struct segment s = query(win, q);

        CHECK(s.bytes == (MPI_Aint)(4 * (q + 1) * sizeof(int)) && s.disp_unit == (int)sizeof(int) &&
                  s.base != NULL,
              "Win_shared_query(%d): %ld bytes, unit %d, base %p", q, (long)s.bytes, s.disp_unit,
              (void *)s.base);
        if (q > 0)
            CHECK((char *)s.base == (char *)prev.base + prev.bytes,
                  "Win_shared_query(%d): base %p, not right after rank %d's (%p + %ld)", q,
                  (void *)s.base, q - 1, (void *)prev.base, (long)prev.bytes);
        if (q == me)
            CHECK(s.base == base, "Win_shared_query(self): %p, Win_allocate_shared gave %p",
                  (void *)s.base, (void *)base);
        prev = s;
    }
    struct segment first = query(win, 0), any = query(win, MPI_PROC_NULL);

    CHECK(any.base == first.base && any.bytes == first.bytes,
          "Win_shared_query(MPI_PROC_NULL): %p %ld, rank 0's is %p %ld", (void *)any.base,
          (long)any.bytes, (void *)first.base, (long)first.bytes);

    /* loads and stores across the node (the standard's pattern in the
     * unified model: lock_all, Win_sync, barrier, Win_sync) */
    int nright = (me + 1) % n, nleft = (me + n - 1) % n;
    struct segment theirs = query(win, nright);

    OK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < 4 * (me + 1); i++)
        base[i] = value(rank, i);
    OK(MPI_Win_sync(win));
    MPI_Barrier(node);
    OK(MPI_Win_sync(win));
    for (int i = 0; i < 4 * (nright + 1); i++)
        if (theirs.base[i] != value(world[nright], i)) {
            CHECK(0, "load from node rank %d's segment [%d]: %d, expected %d", nright, i,
                  theirs.base[i], value(world[nright], i));
            break;
        }
    MPI_Barrier(node);
    theirs.base[1] = 7000 + me; /* a store into the neighbour's segment */
    int put = 8000 + me;

    OK(MPI_Put(&put, 1, MPI_INT, nright, 2, 1, MPI_INT, win)); /* and RMA */
    OK(MPI_Win_flush(nright, win));
    OK(MPI_Win_sync(win));
    MPI_Barrier(node);
    OK(MPI_Win_sync(win));
    CHECK(base[1] == 7000 + nleft, "store from node rank %d: %d, expected %d", nleft, base[1],
          7000 + nleft);
    CHECK(base[2] == 8000 + nleft, "put from node rank %d: %d, expected %d", nleft, base[2],
          8000 + nleft);
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Win_free(&win));

    /* not contiguous, and node rank 0 exposes nothing: MPI_PROC_NULL
     * queries the lowest rank with memory */
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    bytes = (MPI_Aint)(2 * me) * (MPI_Aint)sizeof(int);
    OK(MPI_Win_allocate_shared(bytes, sizeof(int), info, node, &base, &win));
    OK(MPI_Info_free(&info));
    for (int q = 0; q < n; q++) {
        struct segment s = query(win, q);

        MPI_Aint asked = (MPI_Aint)(2 * q * sizeof(int));

        /* (Open MPI reports the segment rounded up to whole pages) */
        CHECK((s.bytes == asked || (!strict && s.bytes > asked)) && s.disp_unit == (int)sizeof(int),
              "noncontig Win_shared_query(%d): %ld bytes, unit %d", q, (long)s.bytes, s.disp_unit);
    }
    any = query(win, MPI_PROC_NULL);
    if (n > 1) {
        struct segment one = query(win, 1);

        CHECK(any.base == one.base && any.bytes == one.bytes,
              "noncontig Win_shared_query(MPI_PROC_NULL): %p %ld, node rank 1's is %p %ld",
              (void *)any.base, (long)any.bytes, (void *)one.base, (long)one.bytes);
    } else {
        CHECK(any.bytes == 0, "Win_shared_query(MPI_PROC_NULL) of 0-byte segments: %ld bytes",
              (long)any.bytes);
    }
    OK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < 2 * me; i++)
        base[i] = value(rank, i);
    OK(MPI_Win_sync(win));
    MPI_Barrier(node);
    OK(MPI_Win_sync(win));
    if (me == 0)
        for (int q = 1; q < n; q++) {
            struct segment s = query(win, q);

            for (int i = 0; i < 2 * q; i++)
                if (s.base[i] != value(world[q], i)) {
                    CHECK(0, "noncontig load from node rank %d [%d]: %d, expected %d", q, i,
                          s.base[i], value(world[q], i));
                    break;
                }
        }
    OK(MPI_Win_unlock_all(win));
    OK(MPI_Win_free(&win));
    OK(MPI_Comm_free(&node));
    free(world);
}

static void case_dynamic(void)
{
    int *first = xmalloc(16 * sizeof(int)), *second = xmalloc(8 * sizeof(int)), got[8], sent[4];
    MPI_Aint mine[2], *all = xmalloc(2 * (size_t)size * sizeof(MPI_Aint));
    MPI_Win win;

    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attributes(win, MPI_COMM_WORLD, MPI_BOTTOM, 0, 1, MPI_WIN_FLAVOR_DYNAMIC,
                     "Win_create_dynamic");
    fill(first, rank, 16);
    for (int i = 0; i < 8; i++)
        second[i] = value(rank, 100 + i);
    OK(MPI_Win_attach(win, first, 16 * sizeof(int)));
    OK(MPI_Win_attach(win, second, 8 * sizeof(int)));
    OK(MPI_Get_address(first, &mine[0]));
    OK(MPI_Get_address(second, &mine[1]));
    OK(MPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD));

    for (int i = 0; i < 4; i++)
        sent[i] = value(rank, 900 + i);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, right(), 0, win));
    OK(MPI_Put(sent, 4, MPI_INT, right(), MPI_Aint_add(all[2 * right()], 4 * sizeof(int)), 4,
               MPI_INT, win));
    OK(MPI_Get(got, 8, MPI_INT, right(), all[2 * right() + 1], 8, MPI_INT, win));
    OK(MPI_Win_unlock(right(), win));
    MPI_Barrier(MPI_COMM_WORLD);

    int want[16];

    fill(want, rank, 16);
    for (int i = 0; i < 4; i++)
        want[4 + i] = value(left(), 900 + i);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_ints(first, want, 16, "dynamic: put into the attached memory");
    OK(MPI_Win_unlock(rank, win));
    for (int i = 0; i < 8; i++)
        want[i] = value(right(), 100 + i);
    check_ints(got, want, 8, "dynamic: get from the second attached region");

    MPI_Barrier(MPI_COMM_WORLD); /* nobody reaches the memory once it is detached */
    OK(MPI_Win_detach(win, second));
    OK(MPI_Win_detach(win, first));
    OK(MPI_Win_free(&win));
    free(all);
    free(first);
    free(second);
}

/* A window of a communicator whose ranks are not the world's: even and odd
 * world ranks apart, in reverse order.  Target ranks are the window's. */
static void case_subcomm(void)
{
    MPI_Comm half;
    int me, n, *base = NULL, from_world = -1;
    MPI_Win win;

    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half));
    MPI_Comm_rank(half, &me);
    MPI_Comm_size(half, &n);
    OK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, half, &base, &win));
    check_attributes(win, half, base, 4 * sizeof(int), sizeof(int), MPI_WIN_FLAVOR_ALLOCATE,
                     "Win_allocate on a split communicator");
    base[0] = -1;
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&rank, 1, MPI_INT, (me + 1) % n, 0, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    /* the world rank of my left neighbour in the half */
    OK(MPI_Sendrecv(&rank, 1, MPI_INT, (me + 1) % n, 5, &from_world, 1, MPI_INT, (me + n - 1) % n,
                    5, half, MPI_STATUS_IGNORE));
    CHECK(base[0] == from_world, "put on a split communicator's window: %d, expected %d", base[0],
          from_world);
    OK(MPI_Win_free(&win));
    OK(MPI_Comm_free(&half));
}

/* Many windows at once, each used, freed in another order than created */
static void case_many_windows(void)
{
    enum {
        WINDOWS = 24
    };
    MPI_Win win[WINDOWS];
    int *base[WINDOWS], got[WINDOWS];

    for (int w = 0; w < WINDOWS; w++) {
        OK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base[w],
                            &win[w]));
        OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win[w]));
        *base[w] = value(rank, w);
        OK(MPI_Win_unlock(rank, win[w]));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int w = 0; w < WINDOWS; w++)
        OK(MPI_Win_lock_all(0, win[w]));
    for (int w = 0; w < WINDOWS; w++)
        OK(MPI_Get(&got[w], 1, MPI_INT, right(), 0, 1, MPI_INT, win[w]));
    for (int w = WINDOWS - 1; w >= 0; w--)
        OK(MPI_Win_unlock_all(win[w]));
    for (int w = 0; w < WINDOWS; w++)
        CHECK(got[w] == value(right(), w), "window %d: got %d, expected %d", w, got[w],
              value(right(), w));
    for (int w = 1; w < WINDOWS; w += 2) /* the odd ones, then the even ones */
        OK(MPI_Win_free(&win[w]));
    for (int w = 0; w < WINDOWS; w += 2)
        OK(MPI_Win_free(&win[w]));
}

/* Large transfers: 4 MiB contiguous, a strided vector of 64K blocks, and
 * an accumulate of 256K ints, across the window of the right neighbour */
static void case_large(void)
{
    enum {
        INTS = 1 << 20
    };
    int *base = NULL, *out = xmalloc(INTS * sizeof(int)), *in = xmalloc(INTS * sizeof(int));
    MPI_Datatype strided;
    MPI_Win win;

    OK(MPI_Win_allocate(INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                        &win));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int i = 0; i < INTS; i++)
        base[i] = -i;
    OK(MPI_Win_unlock(rank, win));
    for (int i = 0; i < INTS; i++)
        out[i] = rank * 7 + i;
    MPI_Barrier(MPI_COMM_WORLD);

    /* put everything, read it back */
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right(), 0, win));
    OK(MPI_Put(out, INTS, MPI_INT, right(), 0, INTS, MPI_INT, win));
    OK(MPI_Win_flush(right(), win));
    OK(MPI_Get(in, INTS, MPI_INT, right(), 0, INTS, MPI_INT, win));
    OK(MPI_Win_unlock(right(), win));
    for (int i = 0; i < INTS; i++)
        if (in[i] != rank * 7 + i) {
            CHECK(0, "4 MiB put and get: [%d] is %d, expected %d", i, in[i], rank * 7 + i);
            break;
        }
    MPI_Barrier(MPI_COMM_WORLD);

    /* every other block of 64K ints (strided at the target, contiguous at
     * the origin), and a SUM into the first 256K ints */
    OK(MPI_Type_vector(8, 1 << 16, 1 << 17, MPI_INT, &strided));
    OK(MPI_Type_commit(&strided));
    for (int i = 0; i < INTS; i++)
        out[i] = -(rank + 1) * (i % 1000);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, right(), 0, win));
    OK(MPI_Put(out, 8 << 16, MPI_INT, right(), 0, 1, strided, win));
    OK(MPI_Win_flush(right(), win));
    OK(MPI_Accumulate(out, 1 << 18, MPI_INT, right(), 1 << 16, 1 << 18, MPI_INT, MPI_SUM, win));
    OK(MPI_Win_unlock(right(), win));
    OK(MPI_Type_free(&strided));
    MPI_Barrier(MPI_COMM_WORLD);

    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    for (int i = 0; i < INTS; i++) {
        int block = i >> 16, from = left(), want = from * 7 + i;

        if (block % 2 == 0) /* the strided put: the origin's element i / 2 rounded to blocks */
            want = -(from + 1) * (((block / 2) << 16 | (i & 0xffff)) % 1000);
        if (i >= 1 << 16 && i < (1 << 16) + (1 << 18))
            want += -(from + 1) * ((i - (1 << 16)) % 1000);
        if (base[i] != want) {
            CHECK(0, "strided put and accumulate: [%d] is %d, expected %d", i, base[i], want);
            break;
        }
    }
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));
    free(out);
    free(in);
}

/* ---- info ---------------------------------------------------------------------------------- */

static const char *const hint_keys[] = {
    "accumulate_ordering", "accumulate_ops", "same_size",
    "same_disp_unit",      "no_locks",       "alloc_shared_noncontig"};

/* whether @value is one the standard allows for hint @key */
static int valid_hint(const char *key, const char *value)
{
    if (strcmp(key, "accumulate_ops") == 0)
        return strcmp(value, "same_op") == 0 || strcmp(value, "same_op_no_op") == 0;
    if (strcmp(key, "accumulate_ordering") == 0) {
        if (strcmp(value, "none") == 0)
            return 1;
        char copy[64];
        size_t len = strlen(value);

        if (len == 0 || len >= sizeof(copy))
            return 0;
        memcpy(copy, value, len + 1);
        for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save))
            if (strcmp(tok, "rar") != 0 && strcmp(tok, "raw") != 0 && strcmp(tok, "war") != 0 &&
                strcmp(tok, "waw") != 0)
                return 0;
        return 1;
    }
    return strcmp(value, "true") == 0 || strcmp(value, "false") == 0;
}

/* MPI_Win_get_info of @win: each hint it reports has a valid value; under
 * --strict each of @keys is reported with @values (NULL: not checked) */
static void check_info(MPI_Win win, const char *const *keys, const char *const *values, int n,
                       const char *what)
{
    MPI_Info used = MPI_INFO_NULL;

    OK(MPI_Win_get_info(win, &used));
    CHECK(used != MPI_INFO_NULL, "%s: MPI_Win_get_info returned MPI_INFO_NULL", what);
    if (used == MPI_INFO_NULL)
        return;
    for (int k = 0; k < n; k++) {
        char value[MPI_MAX_INFO_VAL + 1];
        int len = (int)sizeof(value), flag = 0;

        OK(MPI_Info_get_string(used, keys[k], &len, value, &flag));
        if (flag)
            CHECK(valid_hint(keys[k], value), "%s: hint %s = \"%s\" is not a valid value", what,
                  keys[k], value);
        if (strict && values[k] != NULL)
            CHECK(flag && strcmp(value, values[k]) == 0, "%s: hint %s is \"%s\", expected \"%s\"",
                  what, keys[k], flag ? value : "(not set)", values[k]);
    }
    OK(MPI_Info_free(&used));
}

static void case_info(void)
{
    static const char *const defaults[] = {"rar,raw,war,waw", "same_op_no_op", "false",
                                           "false",           "false",         "false"};
    static const char *const set[] = {"none", "same_op", "true", "true", "true", NULL};
    MPI_Info info;
    MPI_Win win;
    int *base = NULL, sent = rank + 1;

    /* the default of each hint (MPI-5.0 12.2.1) */
    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    check_info(win, hint_keys, defaults, 6, "defaults");
    OK(MPI_Win_free(&win));

    OK(MPI_Info_create(&info));
    for (int k = 0; k < 5; k++)
        OK(MPI_Info_set(info, hint_keys[k], set[k]));
    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win));
    OK(MPI_Info_free(&info));
    check_info(win, hint_keys, set, 6, "hints at creation");

    /* MPI_Win_set_info changes accumulate_ordering; accumulate_ops keeps
     * the value the window was made with (docs/mpi.md) */
    static const char *const changed[] = {"rar", "same_op", "true", "true", "true", NULL};

    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "accumulate_ordering", "rar"));
    OK(MPI_Info_set(info, "accumulate_ops", "same_op_no_op"));
    OK(MPI_Win_set_info(win, info));
    OK(MPI_Info_free(&info));
    check_info(win, hint_keys, changed, 6, "after Win_set_info");

    /* the window works under its hints (no locks: fence) */
    base[0] = 0;
    OK(MPI_Win_fence(0, win));
    OK(MPI_Accumulate(&sent, 1, MPI_INT, right(), 0, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    CHECK(base[0] == left() + 1, "no_locks window: accumulated %d, expected %d", base[0],
          left() + 1);
    OK(MPI_Win_free(&win));

    /* alloc_shared_noncontig on a shared window */
    MPI_Comm node;

    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    OK(MPI_Win_allocate_shared(64, 1, info, node, &base, &win));
    OK(MPI_Info_free(&info));
    static const char *const noncontig[] = {NULL, NULL, NULL, NULL, NULL, "true"};

    check_info(win, hint_keys, noncontig, 6, "shared window");
    OK(MPI_Win_free(&win));
    OK(MPI_Comm_free(&node));
}

/* ---- put and get with datatypes -------------------------------------------------------------- */

/* rank @owner's window after the two put epochs of case_datatypes, whose
 * puts come from its left neighbour */
static void datatypes_model(int owner, int *w)
{
    int from = (owner + size - 1) % size;
    int at_vec[8] = {3, 4, 7, 8, 11, 12, 15, 16}, from_vec[8] = {0, 1, 4, 5, 8, 9, 12, 13};
    int at_idx[6] = {20, 24, 25, 30, 31, 32}, from_ovec[6] = {0, 1, 2, 5, 6, 7};
    int from_struct[10] = {0, 1, 4, 5, 6, 7, 8, 11, 12, 13};

    fill(w, owner, N);
    for (int k = 0; k < 8; k++) {
        w[at_vec[k]] = value(from, 500 + k);        /* contiguous -> vector */
        w[40 + k] = value(from, 500 + from_vec[k]); /* vector -> contiguous */
    }
    for (int k = 0; k < 6; k++) /* vector -> indexed */
        w[at_idx[k]] = value(from, 500 + from_ovec[k]);
    for (int k = 0; k < 10; k++) /* struct -> contiguous */
        w[48 + k] = value(from, 500 + from_struct[k]);
}

static void case_datatypes(void)
{
    int *base = NULL, src[32], got[8], want[N], theirs[N];
    MPI_Datatype vec, ovec, idx, strct, tvec, oidx;
    MPI_Win win;

    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    fill(base, rank, N);
    for (int i = 0; i < 32; i++)
        src[i] = value(rank, 500 + i);
    OK(MPI_Type_vector(4, 2, 4, MPI_INT, &vec)); /* 0 1, 4 5, 8 9, 12 13 */
    OK(MPI_Type_commit(&vec));
    OK(MPI_Type_vector(2, 3, 5, MPI_INT, &ovec)); /* 0 1 2, 5 6 7 */
    OK(MPI_Type_commit(&ovec));
    OK(MPI_Type_indexed(3, (int[]){1, 2, 3}, (int[]){0, 4, 10}, MPI_INT, &idx));
    OK(MPI_Type_commit(&idx)); /* 0, 4 5, 10 11 12 */
    /* a struct of one basic type: 2 ints, a gap of 2, 3 ints (extent 7 ints) */
    OK(MPI_Type_create_struct(2, (int[]){2, 3}, (MPI_Aint[]){0, 4 * sizeof(int)},
                              (MPI_Datatype[]){MPI_INT, MPI_INT}, &strct));
    OK(MPI_Type_commit(&strct));
    OK(MPI_Type_vector(3, 1, 3, MPI_INT, &tvec)); /* 0, 3, 6 */
    OK(MPI_Type_commit(&tvec));
    OK(MPI_Type_indexed(3, (int[]){1, 1, 1}, (int[]){5, 0, 2}, MPI_INT, &oidx));
    OK(MPI_Type_commit(&oidx));

    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    OK(MPI_Put(src, 8, MPI_INT, right(), 3, 1, vec, win));
    OK(MPI_Put(src, 1, vec, right(), 40, 8, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(src, 1, ovec, right(), 20, 1, idx, win));
    OK(MPI_Put(src, 2, strct, right(), 48, 10, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    datatypes_model(rank, want);
    check_ints(base, want, N, "put contiguous, vector, indexed and struct layouts");

    /* get: target vector at 1 (1, 4, 7), origin indexed (5, 0, 2) */
    for (int i = 0; i < 8; i++)
        got[i] = -1;
    OK(MPI_Get(got, 1, oidx, right(), 1, 1, tvec, win));
    /* a zero count moves nothing */
    OK(MPI_Put(src, 0, MPI_INT, right(), 0, 0, MPI_INT, win));
    OK(MPI_Get(got, 0, MPI_INT, right(), 0, 0, MPI_INT, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    datatypes_model(right(), theirs);
    {
        int expect[8] = {theirs[4], -1, theirs[7], -1, -1, theirs[1], -1, -1};

        check_ints(got, expect, 8, "get vector -> indexed");
    }
    check_ints(base, want, N, "zero-count put");

    MPI_Datatype *all[] = {&vec, &ovec, &idx, &strct, &tvec, &oidx};

    for (int t = 0; t < 6; t++)
        OK(MPI_Type_free(all[t]));
    OK(MPI_Win_free(&win));
}

/* The target's displacement unit scales target_disp: rank r's unit is
 * (r % 3 + 1) ints; a window with a unit of 1 takes bytes. */
static void case_disp_unit(void)
{
    int unit = (rank % 3 + 1) * (int)sizeof(int);
    int *base = NULL, sent[2] = {value(rank, 1), value(rank, 2)}, want[N];
    MPI_Win win;

    OK(MPI_Win_allocate(N * sizeof(int), unit, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    fill(base, rank, N);
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(sent, 2, MPI_INT, right(), 4, 2, MPI_INT, win)); /* at 4 units of the target */
    OK(MPI_Win_fence(0, win));
    fill(want, rank, N);
    want[4 * unit / (int)sizeof(int)] = value(left(), 1);
    want[4 * unit / (int)sizeof(int) + 1] = value(left(), 2);
    check_ints(base, want, N, "disp_unit of the target");
    OK(MPI_Win_free(&win));

    OK(MPI_Win_allocate(N * sizeof(int), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    fill(base, rank, N);
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(sent, 2, MPI_INT, right(), 12 * sizeof(int), 2, MPI_INT, win)); /* bytes */
    OK(MPI_Win_fence(0, win));
    fill(want, rank, N);
    want[12] = value(left(), 1);
    want[13] = value(left(), 2);
    check_ints(base, want, N, "disp_unit 1");
    OK(MPI_Win_free(&win));
}

/* ---- accumulate --------------------------------------------------------------------------------
 */

struct op_case {
    MPI_Op op;
    const char *name;
};

static const struct op_case int_ops[] = {
    {MPI_SUM, "MPI_SUM"},   {MPI_PROD, "MPI_PROD"},       {MPI_MAX, "MPI_MAX"},
    {MPI_MIN, "MPI_MIN"},   {MPI_LAND, "MPI_LAND"},       {MPI_LOR, "MPI_LOR"},
    {MPI_LXOR, "MPI_LXOR"}, {MPI_BAND, "MPI_BAND"},       {MPI_BOR, "MPI_BOR"},
    {MPI_BXOR, "MPI_BXOR"}, {MPI_REPLACE, "MPI_REPLACE"},
};

/* rank @r's operand @i for @op, and the target's initial value */
static int operand(MPI_Op op, int r, int i)
{
    if (op == MPI_PROD)
        return (r + i) % 3 + 1;
    if (op == MPI_MAX || op == MPI_MIN)
        return (r * 7 + i * 3) % 11 - 5;
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
        return (r >> (i % 3)) & 1 ? (i + 1) : 0;
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR)
        return (int)(0x5A5A5A5Au >> r) ^ (i * 0x1111);
    return r * 3 + i + 1;
}

static int initial(MPI_Op op, int i)
{
    if (op == MPI_LAND)
        return i % 2 ? 0 : 3;
    if (op == MPI_BAND)
        return 0x0FF0F00F + i;
    return i % 2 + 1;
}

static int apply(MPI_Op op, int a, int b)
{
    if (op == MPI_SUM)
        return a + b;
    if (op == MPI_PROD)
        return a * b;
    if (op == MPI_MAX)
        return a > b ? a : b;
    if (op == MPI_MIN)
        return a < b ? a : b;
    if (op == MPI_LAND)
        return a && b;
    if (op == MPI_LOR)
        return a || b;
    if (op == MPI_LXOR)
        return !a != !b;
    if (op == MPI_BAND)
        return a & b;
    if (op == MPI_BOR)
        return a | b;
    if (op == MPI_BXOR)
        return a ^ b;
    return b;
}

static void case_accumulate(void)
{
    enum {
        K = 4
    };
    int *base = NULL, mine[K];
    MPI_Win win;

    /* bytes: 16 ints, then 8 doubles, then 8 int64, then 16 uint8 */
    OK(MPI_Win_allocate(256, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    double *dbl = (double *)(base + 16);
    int64_t *i64 = (int64_t *)(dbl + 8);
    uint8_t *u8 = (uint8_t *)(i64 + 8);

    /* every rank to every target, each predefined operation on MPI_INT */
    for (size_t o = 0; o < sizeof(int_ops) / sizeof(int_ops[0]); o++) {
        MPI_Op op = int_ops[o].op;

        for (int i = 0; i < K; i++) {
            base[i] = initial(op, i);
            mine[i] = operand(op, rank, i);
        }
        OK(MPI_Win_fence(0, win));
        for (int t = 0; t < size; t++)
            OK(MPI_Accumulate(mine, K, MPI_INT, t, 0, K, MPI_INT, op, win));
        OK(MPI_Win_fence(0, win));
        for (int i = 0; i < K; i++) {
            if (op == MPI_REPLACE) {
                int found = 0;

                for (int r = 0; r < size; r++)
                    found |= base[i] == operand(op, r, i);
                CHECK(found, "Accumulate MPI_REPLACE [%d]: %d is no rank's operand", i, base[i]);
                continue;
            }
            int want = initial(op, i);

            for (int r = 0; r < size; r++)
                want = apply(op, want, operand(op, r, i));
            CHECK(base[i] == want, "Accumulate %s [%d]: %d, expected %d", int_ops[o].name, i,
                  base[i], want);
        }
    }

    /* MPI_MAXLOC and MPI_MINLOC on MPI_2INT: value ties go to the lower index */
    for (int m = 0; m < 2; m++) {
        MPI_Op op = m ? MPI_MINLOC : MPI_MAXLOC;
        int pair[4];

        for (int i = 0; i < 2; i++) {
            base[2 * i] = m ? 100 : -100;
            base[2 * i + 1] = 99;
            pair[2 * i] = (rank * 5 + i) % 3;
            pair[2 * i + 1] = rank;
        }
        OK(MPI_Win_fence(0, win));
        for (int t = 0; t < size; t++)
            OK(MPI_Accumulate(pair, 2, MPI_2INT, t, 0, 2, MPI_2INT, op, win));
        OK(MPI_Win_fence(0, win));
        for (int i = 0; i < 2; i++) {
            int best = m ? 100 : -100, at = 99;

            for (int r = 0; r < size; r++) {
                int v = (r * 5 + i) % 3;

                if ((m ? v < best : v > best) || (v == best && r < at))
                    best = v, at = r;
            }
            CHECK(base[2 * i] == best && base[2 * i + 1] == at,
                  "Accumulate %s [%d]: (%d, %d), expected (%d, %d)",
                  m ? "MPI_MINLOC" : "MPI_MAXLOC", i, base[2 * i], base[2 * i + 1], best, at);
        }
    }

    /* other types: double SUM and MAX, int64 SUM, uint8 BOR (offsets in bytes) */
    {
        double d[2] = {rank + 0.5, -rank * 2.0};
        int64_t l = (int64_t)1 << (32 + rank % 8);
        uint8_t b = (uint8_t)(1u << (rank % 8));

        dbl[0] = 0.0, dbl[1] = -1e9;
        i64[0] = 0;
        u8[0] = 0;
        OK(MPI_Win_fence(0, win));
        for (int t = 0; t < size; t++) {
            OK(MPI_Accumulate(&d[0], 1, MPI_DOUBLE, t, 64, 1, MPI_DOUBLE, MPI_SUM, win));
            OK(MPI_Accumulate(&d[1], 1, MPI_DOUBLE, t, 72, 1, MPI_DOUBLE, MPI_MAX, win));
            OK(MPI_Accumulate(&l, 1, MPI_INT64_T, t, 128, 1, MPI_INT64_T, MPI_SUM, win));
            OK(MPI_Accumulate(&b, 1, MPI_UINT8_T, t, 192, 1, MPI_UINT8_T, MPI_BOR, win));
        }
        OK(MPI_Win_fence(0, win));
        double dsum = 0;
        int64_t lsum = 0;
        unsigned bits = 0;

        for (int r = 0; r < size; r++) {
            dsum += r + 0.5;
            lsum += (int64_t)1 << (32 + r % 8);
            bits |= 1u << (r % 8);
        }
        CHECK(dbl[0] == dsum, "Accumulate MPI_DOUBLE MPI_SUM: %g, expected %g", dbl[0], dsum);
        CHECK(dbl[1] == 0.0, "Accumulate MPI_DOUBLE MPI_MAX: %g, expected 0", dbl[1]);
        CHECK(i64[0] == lsum, "Accumulate MPI_INT64_T MPI_SUM: %lld, expected %lld",
              (long long)i64[0], (long long)lsum);
        CHECK(u8[0] == bits, "Accumulate MPI_UINT8_T MPI_BOR: %#x, expected %#x", u8[0], bits);
    }

    /* derived datatypes of one basic type: contiguous origin, vector target
     * (0 1, 3 4, 6 7); an indexed origin (3, 0, 1, 2) onto contiguous 10..13 */
    {
        MPI_Datatype tvec, oidx;
        int ops[6] = {1, 2, 3, 4, 5, 6};

        OK(MPI_Type_vector(3, 2, 3, MPI_INT, &tvec));
        OK(MPI_Type_commit(&tvec));
        OK(MPI_Type_indexed(4, (int[]){1, 1, 1, 1}, (int[]){3, 0, 1, 2}, MPI_INT, &oidx));
        OK(MPI_Type_commit(&oidx));
        for (int i = 0; i < 16; i++)
            base[i] = 100 * i;
        OK(MPI_Win_fence(0, win));
        for (int t = 0; t < size; t++) {
            OK(MPI_Accumulate(ops, 6, MPI_INT, t, 0, 1, tvec, MPI_SUM, win));
            OK(MPI_Accumulate(ops, 1, oidx, t, 10 * sizeof(int), 4, MPI_INT, MPI_SUM, win));
        }
        OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        int want[16];

        for (int i = 0; i < 16; i++)
            want[i] = 100 * i;
        int at[6] = {0, 1, 3, 4, 6, 7}, from[4] = {3, 0, 1, 2};

        for (int k = 0; k < 6; k++)
            want[at[k]] += size * ops[k];
        for (int k = 0; k < 4; k++)
            want[10 + k] += size * ops[from[k]];
        check_ints(base, want, 16, "Accumulate vector target, indexed origin");
        OK(MPI_Type_free(&tvec));
        OK(MPI_Type_free(&oidx));
    }
    OK(MPI_Win_free(&win));
}

static void case_get_accumulate(void)
{
    long long *base = NULL, res[4], mine[4];
    MPI_Win win;

    OK(MPI_Win_allocate(16 * sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &base, &win));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int i = 0; i < 16; i++)
        base[i] = value(rank, i);
    OK(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* MPI_NO_OP reads atomically and changes nothing; MPI_REPLACE swaps */
    OK(MPI_Win_lock_all(0, win));
    OK(MPI_Get_accumulate(NULL, 0, MPI_LONG_LONG, res, 4, MPI_LONG_LONG, right(), 0, 4,
                          MPI_LONG_LONG, MPI_NO_OP, win));
    OK(MPI_Win_flush(right(), win));
    for (int i = 0; i < 4; i++)
        CHECK(res[i] == value(right(), i), "Get_accumulate MPI_NO_OP [%d]: %lld, expected %d", i,
              res[i], value(right(), i));
    for (int i = 0; i < 4; i++)
        mine[i] = 900 + rank + i;
    OK(MPI_Get_accumulate(mine, 4, MPI_LONG_LONG, res, 4, MPI_LONG_LONG, right(), 4, 4,
                          MPI_LONG_LONG, MPI_REPLACE, win));
    OK(MPI_Win_flush(right(), win));
    for (int i = 0; i < 4; i++)
        CHECK(res[i] == value(right(), 4 + i), "Get_accumulate MPI_REPLACE [%d]: %lld, expected %d",
              i, res[i], value(right(), 4 + i));
    /* every rank adds rank + 1 to every target's [8] */
    for (int t = 0; t < size; t++) {
        long long add = rank + 1, old = -1;

        OK(MPI_Get_accumulate(&add, 1, MPI_LONG_LONG, &old, 1, MPI_LONG_LONG, t, 8, 1,
                              MPI_LONG_LONG, MPI_SUM, win));
        OK(MPI_Win_flush(t, win));
        CHECK(old >= value(t, 8) && old <= value(t, 8) + (long long)size * (size + 1) / 2 - add,
              "Get_accumulate MPI_SUM to %d: fetched %lld, out of [%d, %lld]", t, old, value(t, 8),
              value(t, 8) + (long long)size * (size + 1) / 2 - add);
    }
    /* derived types: origin and result vectors (0, 2), target [12], [14] */
    {
        MPI_Datatype ovec, tvec;
        long long two[3] = {5, -1, 7}, out[3] = {-1, -2, -3};

        OK(MPI_Type_vector(2, 1, 2, MPI_LONG_LONG, &ovec));
        OK(MPI_Type_commit(&ovec));
        OK(MPI_Type_vector(2, 1, 2, MPI_LONG_LONG, &tvec));
        OK(MPI_Type_commit(&tvec));
        OK(MPI_Get_accumulate(two, 1, ovec, out, 1, ovec, right(), 12, 1, tvec, MPI_SUM, win));
        OK(MPI_Win_flush(right(), win));
        CHECK(out[0] == value(right(), 12) && out[1] == -2 && out[2] == value(right(), 14),
              "Get_accumulate vectors fetched %lld %lld %lld, expected %d -2 %d", out[0], out[1],
              out[2], value(right(), 12), value(right(), 14));
        OK(MPI_Type_free(&ovec));
        OK(MPI_Type_free(&tvec));
    }
    OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    for (int i = 0; i < 4; i++) {
        CHECK(base[i] == value(rank, i), "after MPI_NO_OP [%d]: %lld, expected %d", i, base[i],
              value(rank, i));
        CHECK(base[4 + i] == 900 + left() + i, "after MPI_REPLACE [%d]: %lld, expected %d", 4 + i,
              base[4 + i], 900 + left() + i);
    }
    CHECK(base[8] == value(rank, 8) + (long long)size * (size + 1) / 2,
          "after MPI_SUM: %lld, expected %lld", base[8],
          value(rank, 8) + (long long)size * (size + 1) / 2);
    CHECK(base[12] == value(rank, 12) + 5 && base[13] == value(rank, 13) &&
              base[14] == value(rank, 14) + 7,
          "after the vector MPI_SUM: %lld %lld %lld", base[12], base[13], base[14]);
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));
}

static void case_atomics(void)
{
    int64_t *base = NULL, old = -1, add = 1, neg = -1;
    MPI_Win win;

    OK(MPI_Win_allocate(8 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                        &win));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int i = 0; i < 8; i++)
        base[i] = value(rank, i);
    base[2] = -1;
    base[5] = 0;
    memset(&base[6], 0, sizeof(int64_t));
    *(int *)&base[4] = 40 + rank;
    OK(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);

    OK(MPI_Win_lock_all(0, win));
    /* fetch-and-op toward the right neighbour: SUM, NO_OP, REPLACE, MAX, MIN */
    int64_t r0 = value(right(), 0);

    OK(MPI_Fetch_and_op(&add, &old, MPI_INT64_T, right(), 0, MPI_SUM, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(old == r0, "Fetch_and_op MPI_SUM fetched %lld, expected %lld", (long long)old,
          (long long)r0);
    OK(MPI_Fetch_and_op(NULL, &old, MPI_INT64_T, right(), 0, MPI_NO_OP, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(old == r0 + 1, "Fetch_and_op MPI_NO_OP fetched %lld, expected %lld", (long long)old,
          (long long)r0 + 1);
    int64_t big = 1000000;

    OK(MPI_Fetch_and_op(&big, &old, MPI_INT64_T, right(), 1, MPI_REPLACE, win));
    OK(MPI_Fetch_and_op(&neg, &old, MPI_INT64_T, right(), 1, MPI_MAX, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(old == big, "Fetch_and_op MPI_MAX after MPI_REPLACE fetched %lld, expected %lld",
          (long long)old, (long long)big);
    OK(MPI_Fetch_and_op(&neg, &old, MPI_INT64_T, right(), 1, MPI_MIN, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(old == big, "Fetch_and_op MPI_MIN fetched %lld, expected %lld", (long long)old,
          (long long)big);
    /* on an int (the first 4 bytes of [4]) */
    int iadd = 3, iold = -1;

    OK(MPI_Fetch_and_op(&iadd, &iold, MPI_INT, right(), 4, MPI_SUM, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(iold == 40 + right(), "Fetch_and_op MPI_INT fetched %d, expected %d", iold, 40 + right());

    /* compare-and-swap: a match swaps, a mismatch does not; MPI_INT and MPI_BYTE */
    int64_t cmp = value(right(), 3), swap = 77;

    OK(MPI_Compare_and_swap(&swap, &cmp, &old, MPI_INT64_T, right(), 3, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(old == cmp, "Compare_and_swap (match) fetched %lld, expected %lld", (long long)old,
          (long long)cmp);
    swap = 88;
    OK(MPI_Compare_and_swap(&swap, &cmp, &old, MPI_INT64_T, right(), 3, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(old == 77, "Compare_and_swap (mismatch) fetched %lld, expected 77", (long long)old);
    int ic = 0, is = 5, io = -1;

    OK(MPI_Compare_and_swap(&is, &ic, &io, MPI_INT, right(), 5, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(io == 0, "Compare_and_swap MPI_INT fetched %d, expected 0", io);
    unsigned char bc = 0, bs = 0xA5, bo = 1;

    OK(MPI_Compare_and_swap(&bs, &bc, &bo, MPI_BYTE, right(), 6, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(bo == 0, "Compare_and_swap MPI_BYTE fetched %d, expected 0", bo);

    /* every rank races to swap rank 0's [2] from -1: exactly one wins */
    int64_t none = -1, me = rank, was = -2;

    OK(MPI_Compare_and_swap(&me, &none, &was, MPI_INT64_T, 0, 2, win));
    OK(MPI_Win_flush(0, win));
    CHECK(was == -1 || (was >= 0 && was < size), "racing Compare_and_swap fetched %lld",
          (long long)was);
    OK(MPI_Win_unlock_all(win));

    int won = was == -1, winners = 0;

    OK(MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(winners == 1, "racing Compare_and_swap: %d ranks won", winners);

    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK(base[0] == value(rank, 0) + 1, "after Fetch_and_op MPI_SUM: %lld", (long long)base[0]);
    CHECK(base[1] == -1, "after MPI_REPLACE, MAX, MIN: %lld, expected -1", (long long)base[1]);
    CHECK(base[3] == 77, "after Compare_and_swap: %lld, expected 77", (long long)base[3]);
    CHECK(*(int *)&base[4] == 43 + rank, "after Fetch_and_op MPI_INT: %d, expected %d",
          *(int *)&base[4], 43 + rank);
    CHECK(*(int *)&base[5] == 5, "after Compare_and_swap MPI_INT: %d", *(int *)&base[5]);
    CHECK(*(unsigned char *)&base[6] == 0xA5, "after Compare_and_swap MPI_BYTE: %#x",
          *(unsigned char *)&base[6]);
    if (rank == 0)
        CHECK(base[2] >= 0 && base[2] < size, "racing Compare_and_swap left %lld",
              (long long)base[2]);
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));
}

/* ---- request-based operations --------------------------------------------------------------- */

static void case_requests(void)
{
    int *base = NULL, out[8], in[8], acc[4] = {1, 2, 3, 4}, res[4], want[N];
    MPI_Request req[4];
    MPI_Win win;

    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    fill(base, rank, N);
    OK(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);

    OK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < 8; i++)
        out[i] = value(rank, 600 + i);
    OK(MPI_Rput(out, 8, MPI_INT, right(), 0, 8, MPI_INT, win, &req[0]));
    OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    CHECK(req[0] == MPI_REQUEST_NULL, "MPI_Wait left the Rput request");
    for (int i = 0; i < 8; i++) /* the origin buffer is free once the request completes */
        out[i] = -1;
    OK(MPI_Rget(in, 8, MPI_INT, right(), 8, 8, MPI_INT, win, &req[1]));
    OK(MPI_Raccumulate(acc, 4, MPI_INT, right(), 16, 4, MPI_INT, MPI_SUM, win, &req[2]));
    OK(MPI_Rget_accumulate(acc, 4, MPI_INT, res, 4, MPI_INT, right(), 20, 4, MPI_INT, MPI_SUM, win,
                           &req[3]));
    OK(MPI_Waitall(3, &req[1], MPI_STATUSES_IGNORE));
    fill(want, right(), 24);
    check_ints(in, want + 8, 8, "Rget");
    check_ints(res, want + 20, 4, "Rget_accumulate fetched");
    OK(MPI_Win_flush(right(), win));
    /* what Rput wrote, read back once flushed */
    OK(MPI_Rget(in, 8, MPI_INT, right(), 0, 8, MPI_INT, win, &req[0]));
    int done = 0;

    for (int spins = 0; !done && spins < 100000; spins++) {
        OK(MPI_Test(&req[0], &done, MPI_STATUS_IGNORE));
        if (!done)
            nap();
    }
    CHECK(done, "Rget never completed under MPI_Test");
    if (!done)
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < 8; i++)
        want[i] = value(rank, 600 + i);
    check_ints(in, want, 8, "Rget after Rput and flush");
    OK(MPI_Rput(out, 8, MPI_INT, MPI_PROC_NULL, 0, 8, MPI_INT, win, &req[0]));
    OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    fill(want, rank, N);
    for (int i = 0; i < 8; i++)
        want[i] = value(left(), 600 + i);
    for (int i = 0; i < 4; i++) {
        want[16 + i] += acc[i];
        want[20 + i] += acc[i];
    }
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_ints(base, want, N, "after Rput, Raccumulate, Rget_accumulate");
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));
}

/* ---- the large-count (_c) forms (MPI-4.0) ---------------------------------------------------- */

static void case_large_count(void)
{
#if MPI_VERSION >= 4
    int *mem = xmalloc(N * sizeof(int)), *base = NULL, out[4], in[4], res[4], want[N];
    MPI_Count four = 4;
    MPI_Request req[4];
    MPI_Win win;

    fill(mem, rank, N);
    OK(MPI_Win_create_c(mem, N * sizeof(int), (MPI_Aint)sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                        &win));
    for (int i = 0; i < 4; i++)
        out[i] = value(rank, 800 + i);
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put_c(out, four, MPI_INT, right(), 4, four, MPI_INT, win));
    OK(MPI_Get_c(in, four, MPI_INT, right(), 12, four, MPI_INT, win));
    OK(MPI_Accumulate_c(out, four, MPI_INT, right(), 16, four, MPI_INT, MPI_SUM, win));
    OK(MPI_Get_accumulate_c(out, four, MPI_INT, res, four, MPI_INT, right(), 20, four, MPI_INT,
                            MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    fill(want, right(), N);
    check_ints(in, want + 12, 4, "Get_c");
    check_ints(res, want + 20, 4, "Get_accumulate_c fetched");
    fill(want, rank, N);
    for (int i = 0; i < 4; i++) {
        want[4 + i] = value(left(), 800 + i);
        want[16 + i] += value(left(), 800 + i);
        want[20 + i] += value(left(), 800 + i);
    }
    check_ints(mem, want, N, "Put_c, Accumulate_c, Get_accumulate_c");
    OK(MPI_Win_free(&win));

    OK(MPI_Win_allocate_c(N * sizeof(int), (MPI_Aint)sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                          &base, &win));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    fill(base, rank, N);
    OK(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Win_lock_all(0, win));
    OK(MPI_Rput_c(out, four, MPI_INT, right(), 0, four, MPI_INT, win, &req[0]));
    OK(MPI_Rget_c(in, four, MPI_INT, right(), 8, four, MPI_INT, win, &req[1]));
    OK(MPI_Raccumulate_c(out, four, MPI_INT, right(), 16, four, MPI_INT, MPI_BXOR, win, &req[2]));
    OK(MPI_Rget_accumulate_c(NULL, 0, MPI_INT, res, four, MPI_INT, right(), 24, four, MPI_INT,
                             MPI_NO_OP, win, &req[3]));
    OK(MPI_Waitall(4, req, MPI_STATUSES_IGNORE));
    OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    fill(want, right(), N);
    check_ints(in, want + 8, 4, "Rget_c");
    check_ints(res, want + 24, 4, "Rget_accumulate_c MPI_NO_OP");
    fill(want, rank, N);
    for (int i = 0; i < 4; i++) {
        want[i] = value(left(), 800 + i);
        want[16 + i] ^= value(left(), 800 + i);
    }
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_ints(base, want, N, "Rput_c, Raccumulate_c");
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));

    /* allocate_shared_c and shared_query_c on the node */
    MPI_Comm node;
    MPI_Aint bytes = -1, unit = -1;
    int *seg = NULL;

    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    OK(MPI_Win_allocate_shared_c(16, (MPI_Aint)8, MPI_INFO_NULL, node, &base, &win));
    OK(MPI_Win_shared_query_c(win, 0, &bytes, &unit, &seg));
    CHECK(bytes == 16 && unit == 8 && seg != NULL, "Win_shared_query_c: %ld bytes, unit %ld",
          (long)bytes, (long)unit);
    OK(MPI_Win_free(&win));
    OK(MPI_Comm_free(&node));
    free(mem);
#else
    if (rank == 0)
        printf("rma: large_count skipped (MPI_VERSION %d has no _c forms)\n", MPI_VERSION);
#endif
}

/* ---- synchronization ------------------------------------------------------------------------- */

static void case_fence(void)
{
    int *base = NULL, out[4], in[4], want[N];
    MPI_Win win;

    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    fill(base, rank, N);
    for (int i = 0; i < 4; i++)
        out[i] = value(rank, 300 + i);
    /* nothing before; puts; no stores since (NOSTORE); only gets next (NOPUT) */
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    OK(MPI_Put(out, 4, MPI_INT, right(), 0, 4, MPI_INT, win));
    OK(MPI_Win_fence(MPI_MODE_NOSTORE | MPI_MODE_NOPUT, win));
    OK(MPI_Get(in, 4, MPI_INT, left(), 0, 4, MPI_INT, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    fill(want, rank, N);
    for (int i = 0; i < 4; i++)
        want[i] = value(left(), 300 + i);
    check_ints(base, want, N, "fence put");
    int l2 = (rank + 2 * size - 2) % size;

    for (int i = 0; i < 4; i++)
        want[i] = value(l2, 300 + i);
    check_ints(in, want, 4, "fence get of the neighbour's put");

    /* a passive-target epoch after the last fence */
    int x = value(rank, 1);

    MPI_Barrier(MPI_COMM_WORLD); /* every rank has checked its window */

    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right(), 0, win));
    OK(MPI_Put(&x, 1, MPI_INT, right(), 10, 1, MPI_INT, win));
    OK(MPI_Win_unlock(right(), win));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK(base[10] == value(left(), 1), "lock after fence: %d, expected %d", base[10],
          value(left(), 1));
    base[20] = 0;
    base[21] = value(rank, 21);
    OK(MPI_Win_unlock(rank, win));

    /* many small operations in one fence epoch (toward another node they
     * travel in one batch), results included */
    int one = 1, got = -1, x2 = value(rank, 22);

    OK(MPI_Win_fence(0, win));
    for (int i = 0; i < 64; i++)
        OK(MPI_Accumulate(&one, 1, MPI_INT, right(), 20, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Get(&got, 1, MPI_INT, right(), 21, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK(base[20] == 64, "64 accumulates in a fence epoch: %d", base[20]);
    CHECK(got == value(right(), 21), "get in a fence epoch: %d, expected %d", got,
          value(right(), 21));

    /* a lock epoch under MPI_MODE_NOCHECK after a fence without NOSUCCEED
     * (each rank locks only its right neighbour: no conflicting lock) */
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right(), MPI_MODE_NOCHECK, win));
    OK(MPI_Put(&x2, 1, MPI_INT, right(), 22, 1, MPI_INT, win));
    OK(MPI_Win_unlock(right(), win));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK(base[22] == value(left(), 22), "NOCHECK lock after a fence epoch: %d, expected %d",
          base[22], value(left(), 22));
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));
}

static MPI_Group group_of(MPI_Win win, int n, const int *ranks)
{
    MPI_Group all, some;

    OK(MPI_Win_get_group(win, &all));
    OK(MPI_Group_incl(all, n, ranks, &some));
    OK(MPI_Group_free(&all));
    return some;
}

static void case_pscw(void)
{
    int *base = NULL, out = value(rank, 1), want[N];
    MPI_Win win;
    MPI_Group from, to;

    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    fill(base, rank, N);
    MPI_Barrier(MPI_COMM_WORLD);

    /* a ring: exposed to the left neighbour, accessing the right one */
    from = group_of(win, 1, (int[]){left()});
    to = group_of(win, 1, (int[]){right()});
    OK(MPI_Win_post(from, 0, win));
    OK(MPI_Win_start(to, 0, win));
    OK(MPI_Put(&out, 1, MPI_INT, right(), 0, 1, MPI_INT, win));
    OK(MPI_Win_complete(win));
    OK(MPI_Win_wait(win));
    CHECK(base[0] == value(left(), 1), "PSCW ring: %d, expected %d", base[0], value(left(), 1));

    /* again, the exposure ended by MPI_Win_test */
    out = value(rank, 2);
    OK(MPI_Win_post(from, MPI_MODE_NOSTORE, win));
    OK(MPI_Win_start(to, 0, win));
    OK(MPI_Accumulate(&out, 1, MPI_INT, right(), 1, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Win_complete(win));
    int flag = 0;
    double deadline = MPI_Wtime() + 30;

    while (!flag && MPI_Wtime() < deadline) {
        OK(MPI_Win_test(win, &flag));
        if (!flag)
            nap();
    }
    CHECK(flag, "MPI_Win_test never reported the exposure epoch complete");
    if (!flag)
        MPI_Win_wait(win);
    CHECK(base[1] == value(rank, 1) + value(left(), 2), "PSCW with Win_test: %d, expected %d",
          base[1], value(rank, 1) + value(left(), 2));
    OK(MPI_Group_free(&from));
    OK(MPI_Group_free(&to));

    /* many origins to one target, and a group that holds the caller too */
    if (rank == 0) {
        int *every = xmalloc((size_t)size * sizeof(int));

        for (int r = 0; r < size; r++)
            every[r] = r;
        from = group_of(win, size, every);
        free(every);
    } else {
        from = MPI_GROUP_EMPTY;
    }
    to = group_of(win, 1, (int[]){0});
    int one = rank + 1;

    OK(MPI_Win_post(from, 0, win));
    OK(MPI_Win_start(to, 0, win));
    OK(MPI_Accumulate(&one, 1, MPI_INT, 0, 2, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Win_complete(win));
    OK(MPI_Win_wait(win));
    if (rank == 0)
        CHECK(base[2] == value(0, 2) + size * (size + 1) / 2, "PSCW many to one: %d, expected %d",
              base[2], value(0, 2) + size * (size + 1) / 2);
    if (from != MPI_GROUP_EMPTY)
        OK(MPI_Group_free(&from));
    OK(MPI_Group_free(&to));

    /* MPI_MODE_NOCHECK: every post done (the barrier) before any start
     * (under --strict only: Open MPI 5.0's osc/sm never ends such an
     * exposure epoch, MPI_Win_wait hangs) */
    if (strict) {
        from = group_of(win, 1, (int[]){left()});
        to = group_of(win, 1, (int[]){right()});
        out = value(rank, 3);
        OK(MPI_Win_post(from, MPI_MODE_NOCHECK, win));
        MPI_Barrier(MPI_COMM_WORLD);
        OK(MPI_Win_start(to, MPI_MODE_NOCHECK, win));
        OK(MPI_Put(&out, 1, MPI_INT, right(), 3, 1, MPI_INT, win));
        OK(MPI_Win_complete(win));
        OK(MPI_Win_wait(win));
        CHECK(base[3] == value(left(), 3), "PSCW NOCHECK: %d, expected %d", base[3],
              value(left(), 3));
        OK(MPI_Group_free(&from));
        OK(MPI_Group_free(&to));
    }

    fill(want, rank, N);
    want[0] = value(left(), 1);
    want[1] = value(rank, 1) + value(left(), 2);
    if (rank == 0)
        want[2] = value(0, 2) + size * (size + 1) / 2;
    if (strict)
        want[3] = value(left(), 3);
    check_ints(base, want, N, "after the PSCW epochs");
    OK(MPI_Win_free(&win));
}

static void case_passive(void)
{
    int *base = NULL, out[4], in[4], want[N];
    MPI_Win win;

    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    fill(base, rank, N);
    OK(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);
    fill(want, rank, N);

    /* exclusive: put; shared: get; two locks held at once */
    out[0] = value(rank, 401);
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right(), 0, win));
    OK(MPI_Put(out, 1, MPI_INT, right(), 0, 1, MPI_INT, win));
    OK(MPI_Win_unlock(right(), win));
    if (size > 2) {
        OK(MPI_Win_lock(MPI_LOCK_SHARED, right(), 0, win));
        OK(MPI_Win_lock(MPI_LOCK_SHARED, left(), 0, win));
        OK(MPI_Get(&in[0], 1, MPI_INT, right(), 5, 1, MPI_INT, win));
        OK(MPI_Get(&in[1], 1, MPI_INT, left(), 6, 1, MPI_INT, win));
        OK(MPI_Win_unlock(left(), win));
        OK(MPI_Win_unlock(right(), win));
        CHECK(in[0] == value(right(), 5) && in[1] == value(left(), 6),
              "two shared locks: got %d %d, expected %d %d", in[0], in[1], value(right(), 5),
              value(left(), 6));
    }
    want[0] = value(left(), 401);

    /* lock_all: put to every target's [40 + rank], flush_all, get back */
    OK(MPI_Win_lock_all(0, win));
    int mine = value(rank, 402), back = -1, slots = size <= 24;

    for (int t = 0; t < size && slots; t++)
        OK(MPI_Put(&mine, 1, MPI_INT, t, 40 + rank, 1, MPI_INT, win));
    OK(MPI_Win_flush_all(win));
    for (int t = 0; t < size && slots; t++) {
        OK(MPI_Get(&back, 1, MPI_INT, t, 40 + rank, 1, MPI_INT, win));
        OK(MPI_Win_flush(t, win));
        CHECK(back == mine, "get after flush_all from %d: %d, expected %d", t, back, mine);
    }
    /* flush: a put, then a get of it */
    out[1] = value(rank, 403);
    OK(MPI_Put(&out[1], 1, MPI_INT, right(), 20, 1, MPI_INT, win));
    OK(MPI_Win_flush(right(), win));
    OK(MPI_Get(&in[2], 1, MPI_INT, right(), 20, 1, MPI_INT, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(in[2] == out[1], "get after flush: %d, expected %d", in[2], out[1]);
    /* flush_local: the origin buffer is free, the target has the old value */
    out[2] = value(rank, 404);
    OK(MPI_Put(&out[2], 1, MPI_INT, right(), 21, 1, MPI_INT, win));
    OK(MPI_Win_flush_local(right(), win));
    out[2] = -4;
    /* flush_local_all: a get has landed */
    in[3] = -1;
    OK(MPI_Get(&in[3], 1, MPI_INT, right(), 22, 1, MPI_INT, win));
    OK(MPI_Win_flush_local_all(win));
    CHECK(in[3] == value(right(), 22), "get after flush_local_all: %d, expected %d", in[3],
          value(right(), 22));
    OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < size && slots; r++)
        want[40 + r] = value(r, 402);
    want[20] = value(left(), 403);
    want[21] = value(left(), 404);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_ints(base, want, N, "after the passive-target epochs");
    OK(MPI_Win_unlock(rank, win));

    /* Win_sync: a local store seen by a remote get (lock_all, sync, barrier) */
    OK(MPI_Win_lock_all(0, win));
    base[30] = value(rank, 405);
    OK(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Get(&in[0], 1, MPI_INT, right(), 30, 1, MPI_INT, win));
    OK(MPI_Win_flush(right(), win));
    CHECK(in[0] == value(right(), 405), "get of a store after Win_sync: %d, expected %d", in[0],
          value(right(), 405));
    OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    want[30] = value(rank, 405);

    /* MPI_MODE_NOCHECK: each target is locked by its left neighbour only */
    out[0] = value(rank, 406);
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right(), MPI_MODE_NOCHECK, win));
    OK(MPI_Put(out, 1, MPI_INT, right(), 31, 1, MPI_INT, win));
    OK(MPI_Win_unlock(right(), win));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    OK(MPI_Get(&in[0], 1, MPI_INT, left(), 31, 1, MPI_INT, win));
    OK(MPI_Win_unlock_all(win));
    int l2 = (rank + 2 * size - 2) % size;

    CHECK(in[0] == value(l2, 406), "NOCHECK lock and lock_all: %d, expected %d", in[0],
          value(l2, 406));
    MPI_Barrier(MPI_COMM_WORLD);
    want[31] = value(left(), 406);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_ints(base, want, N, "after Win_sync and NOCHECK");
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));
}

/* ---- the caller's own rank, and MPI_PROC_NULL ------------------------------------------------ */

static void case_self(void)
{
    int *base = NULL, x = 5, y = -1, want[N];
    MPI_Win win;

    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    fill(base, rank, N);
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&x, 1, MPI_INT, rank, 0, 1, MPI_INT, win));
    OK(MPI_Get(&y, 1, MPI_INT, rank, 1, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK(y == value(rank, 1), "get from self: %d", y);
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    OK(MPI_Accumulate(&x, 1, MPI_INT, rank, 2, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Fetch_and_op(&x, &y, MPI_INT, rank, 3, MPI_SUM, win));
    OK(MPI_Win_flush(rank, win));
    CHECK(y == value(rank, 3), "Fetch_and_op on self fetched %d", y);
    int cmp = value(rank, 4), swap = 44;

    OK(MPI_Compare_and_swap(&swap, &cmp, &y, MPI_INT, rank, 4, win));
    OK(MPI_Win_unlock(rank, win));
    CHECK(y == cmp, "Compare_and_swap on self fetched %d", y);
    OK(MPI_Win_lock_all(0, win));
    OK(MPI_Get_accumulate(&x, 1, MPI_INT, &y, 1, MPI_INT, rank, 5, 1, MPI_INT, MPI_REPLACE, win));
    OK(MPI_Win_unlock_all(win));
    CHECK(y == value(rank, 5), "Get_accumulate on self fetched %d", y);

    fill(want, rank, N);
    want[0] = 5;
    want[2] += 5;
    want[3] += 5;
    want[4] = 44;
    want[5] = 5;
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_ints(base, want, N, "operations on self");
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));
}

static void case_proc_null(void)
{
    int *base = NULL, x = 5, y = -1, want[N];
    MPI_Request req;
    MPI_Win win;

    OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    fill(base, rank, N);
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&x, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    OK(MPI_Get(&y, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
    OK(MPI_Accumulate(&x, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Get_accumulate(&x, 1, MPI_INT, &y, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, MPI_SUM,
                          win));
    OK(MPI_Fetch_and_op(&x, &y, MPI_INT, MPI_PROC_NULL, 0, MPI_SUM, win));
    OK(MPI_Compare_and_swap(&x, &x, &y, MPI_INT, MPI_PROC_NULL, 0, win));
    OK(MPI_Win_fence(0, win));
    CHECK(y == -1, "an RMA call toward MPI_PROC_NULL wrote the origin's buffer: %d", y);
    OK(MPI_Win_lock_all(0, win));
    OK(MPI_Rget(&y, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Win_flush_all(win));
    OK(MPI_Win_unlock_all(win));
    CHECK(y == -1, "Rget from MPI_PROC_NULL wrote the origin's buffer: %d", y);
    MPI_Barrier(MPI_COMM_WORLD);
    fill(want, rank, N);
    OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_ints(base, want, N, "after calls toward MPI_PROC_NULL");
    OK(MPI_Win_unlock(rank, win));
    OK(MPI_Win_free(&win));
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static int handled_calls, handled_class;
static MPI_Win handled_win;

static void record_error(MPI_Win *win, int *code, ...)
{
    handled_calls++;
    handled_win = *win;
    MPI_Error_class(*code, &handled_class);
}

static void case_errors(void)
{
    /* the window is the first N ints of 2N: a put past its end that went
     * undetected lands in memory of the test's own */
    int *mem = xmalloc(2 * N * sizeof(int)), x[4] = {1, 2, 3, 4}, y = -1, want[2 * N];
    MPI_Win win;
    MPI_Op user;

    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    fill(mem, rank, 2 * N);
    OK(MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;

    OK(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "Win_get_errhandler: not MPI_ERRORS_RETURN");
    if (eh != MPI_ERRHANDLER_NULL)
        OK(MPI_Errhandler_free(&eh));

    /* (POSTBOX marks what the others miss.  Open MPI 5.0: a Win_complete
     * without start, a second lock of a locked target and a Fetch_and_op
     * with a user-defined op succeed, and a lock_all while locked crashes.
     * MPICH 4.0 and 5.0: a lock type of none is MPI_ERR_ARG, the unlock of a
     * target not locked aborts, and no displacement is checked against the
     * target's window.  Neither checks that a dynamic window's target
     * memory is attached.) */

    /* communication outside any epoch; unlock and flush without a lock;
     * complete without start, wait without post */
    EXPECT_ERROR(MPI_Put(x, 1, MPI_INT, right(), 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, EVERY_MPI,
                 "Put outside an epoch");
    EXPECT_ERROR(MPI_Get(&y, 1, MPI_INT, right(), 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, EVERY_MPI,
                 "Get outside an epoch");
    EXPECT_ERROR(MPI_Win_unlock(right(), win), MPI_ERR_RMA_SYNC, EVERY_MPI,
                 "Win_unlock without a lock");
    EXPECT_ERROR(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC, EVERY_MPI,
                 "Win_unlock_all without lock_all");
    EXPECT_ERROR(MPI_Win_flush(right(), win), MPI_ERR_RMA_SYNC, EVERY_MPI,
                 "Win_flush without a lock");
    EXPECT_ERROR(MPI_Win_complete(win), MPI_ERR_RMA_SYNC, POSTBOX, "Win_complete without start");
    EXPECT_ERROR(MPI_Win_wait(win), MPI_ERR_RMA_SYNC, EVERY_MPI, "Win_wait without post");

    /* a lock type of none, a second lock on a locked target, the unlock of
     * another target */
    EXPECT_ERROR(MPI_Win_lock(12345, right(), 0, win), MPI_ERR_LOCKTYPE, POSTBOX,
                 "Win_lock type 12345");
    OK(MPI_Win_lock(MPI_LOCK_SHARED, right(), 0, win));
    EXPECT_ERROR(MPI_Win_lock(MPI_LOCK_SHARED, right(), 0, win), MPI_ERR_RMA_SYNC, POSTBOX,
                 "a second Win_lock of a locked target");
    if (size > 1)
        EXPECT_ERROR(MPI_Win_unlock((right() + 1) % size, win), MPI_ERR_RMA_SYNC, POSTBOX,
                     "Win_unlock of a target not locked");
    EXPECT_ERROR(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC, POSTBOX, "Win_lock_all while locked");

    /* arguments: the target rank, the count, the op, and the range */
    EXPECT_ERROR(MPI_Put(x, 1, MPI_INT, size, 0, 1, MPI_INT, win), MPI_ERR_RANK, EVERY_MPI,
                 "Put to rank size");
    EXPECT_ERROR(MPI_Get(&y, 1, MPI_INT, -5, 0, 1, MPI_INT, win), MPI_ERR_RANK, EVERY_MPI,
                 "Get from rank -5");
    EXPECT_ERROR(MPI_Put(x, -1, MPI_INT, right(), 0, -1, MPI_INT, win), MPI_ERR_COUNT, EVERY_MPI,
                 "Put of count -1");
    EXPECT_ERROR(MPI_Accumulate(x, -2, MPI_INT, right(), 0, -2, MPI_INT, MPI_SUM, win),
                 MPI_ERR_COUNT, EVERY_MPI, "Accumulate of count -2");
    OK(MPI_Op_create(user_sum, 1, &user));
    EXPECT_ERROR(MPI_Accumulate(x, 1, MPI_INT, right(), 0, 1, MPI_INT, user, win), MPI_ERR_OP,
                 EVERY_MPI, "Accumulate with a user-defined op");
    EXPECT_ERROR(MPI_Fetch_and_op(x, &y, MPI_INT, right(), 0, user, win), MPI_ERR_OP, POSTBOX,
                 "Fetch_and_op with a user-defined op");
    OK(MPI_Op_free(&user));
    EXPECT_ERROR(MPI_Put(x, 4, MPI_INT, right(), N - 2, 4, MPI_INT, win), MPI_ERR_RMA_RANGE,
                 POSTBOX, "Put across the window's end");
    EXPECT_ERROR(MPI_Put(x, 1, MPI_INT, right(), N, 1, MPI_INT, win), MPI_ERR_RMA_RANGE, POSTBOX,
                 "Put at the window's end");
    EXPECT_ERROR(MPI_Get(&y, 1, MPI_INT, right(), N + 5, 1, MPI_INT, win), MPI_ERR_RMA_RANGE,
                 POSTBOX, "Get past the window's end");
    /* a negative extent: the second element lies before the first, here
     * before the window's start */
    MPI_Datatype backwards;

    OK(MPI_Type_create_resized(MPI_INT, 0, -(MPI_Aint)sizeof(int), &backwards));
    OK(MPI_Type_commit(&backwards));
    EXPECT_ERROR(MPI_Put(x, 2, MPI_INT, right(), 0, 2, backwards, win), MPI_ERR_RMA_RANGE, POSTBOX,
                 "Put of a negative-extent type before the window's start");
    OK(MPI_Type_free(&backwards));
    OK(MPI_Win_unlock(right(), win));
    EXPECT_ERROR(MPI_Win_unlock(right(), win), MPI_ERR_RMA_SYNC, EVERY_MPI, "a second Win_unlock");

    /* the null window */
    EXPECT_ERROR(MPI_Put(x, 1, MPI_INT, right(), 0, 1, MPI_INT, MPI_WIN_NULL), MPI_ERR_WIN,
                 EVERY_MPI, "Put on MPI_WIN_NULL");
    EXPECT_ERROR(MPI_Win_fence(0, MPI_WIN_NULL), MPI_ERR_WIN, EVERY_MPI,
                 "Win_fence on MPI_WIN_NULL");
    EXPECT_ERROR(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, MPI_WIN_NULL), MPI_ERR_WIN, EVERY_MPI,
                 "Win_lock on MPI_WIN_NULL");

    /* an error handler of the caller's, called by an erroneous call and by
     * MPI_Win_call_errhandler */
    MPI_Errhandler mine;

    OK(MPI_Win_create_errhandler(record_error, &mine));
    OK(MPI_Win_set_errhandler(win, mine));
    OK(MPI_Errhandler_free(&mine));
    handled_class = handled_calls = 0;
    handled_win = MPI_WIN_NULL;
    OK(MPI_Win_lock_all(0, win));
    MPI_Put(x, 1, MPI_INT, size, 0, 1, MPI_INT, win);
    OK(MPI_Win_unlock_all(win));
    CHECK(handled_calls == 1 && handled_class == MPI_ERR_RANK && handled_win == win,
          "the window's error handler: %d calls, class %d", handled_calls, handled_class);
    OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handled_calls == 2 && handled_class == MPI_ERR_OTHER,
          "Win_call_errhandler: %d calls, class %d", handled_calls, handled_class);
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    /* nothing wrote the window, or past it; then it still works */
    MPI_Barrier(MPI_COMM_WORLD);
    fill(want, rank, 2 * N);
    check_ints(mem, want, 2 * N, "the window and the memory after it, after the errors");
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(x, 1, MPI_INT, right(), 7, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK(mem[7] == 1, "a put after the errors: %d, expected 1", mem[7]);
    OK(MPI_Win_free(&win));

    /* memory not attached to a dynamic window */
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    OK(MPI_Win_attach(win, mem, 4 * sizeof(int)));
    MPI_Aint addr, *all = xmalloc((size_t)size * sizeof(MPI_Aint));

    OK(MPI_Get_address(mem, &addr));
    OK(MPI_Allgather(&addr, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD));
    OK(MPI_Win_lock(MPI_LOCK_SHARED, right(), 0, win));
    EXPECT_ERROR(MPI_Get(&y, 1, MPI_INT, right(), MPI_Aint_add(all[right()], 8 * sizeof(int)), 1,
                         MPI_INT, win),
                 MPI_ERR_RMA_RANGE, POSTBOX, "Get of memory not attached");
    OK(MPI_Win_unlock(right(), win));
    MPI_Barrier(MPI_COMM_WORLD);
    OK(MPI_Win_detach(win, mem));
    OK(MPI_Win_free(&win));
    free(all);
    free(mem);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
}

/* ---- main -------------------------------------------------------------------------------------
 */

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"create", case_create},
    {"allocate", case_allocate},
    {"shared", case_shared},
    {"dynamic", case_dynamic},
    {"subcomm", case_subcomm},
    {"many_windows", case_many_windows},
    {"info", case_info},
    {"datatypes", case_datatypes},
    {"disp_unit", case_disp_unit},
    {"accumulate", case_accumulate},
    {"get_accumulate", case_get_accumulate},
    {"atomics", case_atomics},
    {"requests", case_requests},
    {"large", case_large},
    {"large_count", case_large_count},
    {"fence", case_fence},
    {"pscw", case_pscw},
    {"passive", case_passive},
    {"self", case_self},
    {"proc_null", case_proc_null},
    {"errors", case_errors},
};

static int keep_cpus(int n)
{
    cpu_set_t allowed, kept;

    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return -1;
    CPU_ZERO(&kept);
    for (int cpu = 0; cpu < CPU_SETSIZE && n > 0; cpu++)
        if (CPU_ISSET(cpu, &allowed)) {
            CPU_SET(cpu, &kept);
            n--;
        }
    return sched_setaffinity(0, sizeof(kept), &kept);
}

int main(int argc, char **argv)
{
    int first = 1;
    const int ncases = (int)(sizeof(cases) / sizeof(cases[0]));

    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--strict") == 0) {
            strict = 1;
        } else if (strcmp(argv[first], "--cpus") == 0 && first + 1 < argc) {
            if (keep_cpus(atoi(argv[++first])) != 0)
                perror("rma: sched_setaffinity");
        } else {
            fprintf(stderr, "usage: pbt-mpi-rma [--strict] [--cpus N] [case ...]\n");
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int c = 0; c < ncases; c++) {
        int wanted = first == argc;

        for (int a = first; a < argc; a++)
            wanted |= strcmp(argv[a], cases[c].name) == 0;
        if (!wanted)
            continue;
        cases[c].run();
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int a = first; a < argc; a++) {
        int known = 0;

        for (int c = 0; c < ncases; c++)
            known |= strcmp(argv[a], cases[c].name) == 0;
        CHECK(known, "no case %s", argv[a]);
    }
    int status = check_summary("rma", MPI_COMM_WORLD, 99);

    MPI_Finalize();
    return status;
}
