/*
 * pbt-mpi-groups: groups, MPI_Comm_create(_group), MPI_Comm_split_type,
 * info objects, attributes, MPI_Alloc_mem and the ABI's handle
 * conversions, run by tests/python/test_mpi_groups.py under
 * `postbox run -n 4 [--nodes K]` (the group cases need exactly 4 ranks:
 * their expected results are written out by hand).  Written to the
 * standard API only.  Every rank prints one line per failure and exits
 * non-zero if any; rank 0 prints "groups: ok" at the end.
 *
 *   pbt-mpi-groups [shared=N] [case ...]   run the named cases (default:
 *       all but attr_dup); shared=N: each node holds N ranks
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int size, expect_shared = -1;

/* @call returns error class @class (the handlers are MPI_ERRORS_RETURN) */
#define FAILS(class, call)                                                                         \
    do {                                                                                           \
        int rc_ = (call), class_ = -1;                                                             \
        MPI_Error_class(rc_, &class_);                                                             \
        CHECK(class_ == (class), "%s returned %d, not %s", #call, rc_, #class);                    \
    } while (0)

/* The members of @group as world ranks, in @out (size entries). */
static int members(MPI_Group group, int *out)
{
    MPI_Group world;
    int n = 0, in[64];

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_size(group, &n);
    for (int i = 0; i < n && i < 64; i++)
        in[i] = i;
    MPI_Group_translate_ranks(group, n, in, world, out);
    MPI_Group_free(&world);
    return n;
}

/* @group holds exactly the world ranks @want (@n of them), in that order */
#define CHECK_MEMBERS(group, n, ...)                                                               \
    do {                                                                                           \
        int want_[] = {__VA_ARGS__}, got_[64], k_ = members(group, got_);                          \
        CHECK(k_ == (n), "%s has %d members, not %d", #group, k_, (n));                            \
        for (int i_ = 0; i_ < k_ && i_ < (n); i_++)                                                \
            CHECK(got_[i_] == want_[i_], "%s[%d] is world rank %d, not %d", #group, i_, got_[i_],  \
                  want_[i_]);                                                                      \
    } while (0)

static int compare(MPI_Group a, MPI_Group b)
{
    int result = -1;

    OK(MPI_Group_compare(a, b, &result));
    return result;
}

/* ---- groups ---------------------------------------------------------------------------- */

static void case_groups(void)
{
    MPI_Group world, g31, g13, ex02, r02, r30, rex, uni, inter, diff, none, tmp;
    int r, n, out[8], in[8];
    int range02[][3] = {{0, 3, 2}}, range30[][3] = {{3, 0, -3}},
        range_ex[][3] = {{1, 1, 1}, {3, 3, 1}};
    int bad_stride[][3] = {{0, 3, 0}}, bad_rank[][3] = {{0, 4, 2}}, empty_range[][3] = {{3, 1, 1}};

    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_size(world, &n));
    CHECK(n == 4, "the world group has %d members", n);
    OK(MPI_Group_rank(world, &r));
    CHECK(r == rank, "my rank in the world group is %d", r);

    OK(MPI_Group_incl(world, 2, (int[]){3, 1}, &g31));
    OK(MPI_Group_incl(world, 2, (int[]){1, 3}, &g13));
    OK(MPI_Group_excl(world, 2, (int[]){0, 2}, &ex02));
    CHECK_MEMBERS(g31, 2, 3, 1);
    CHECK_MEMBERS(ex02, 2, 1, 3);
    OK(MPI_Group_rank(g31, &r));
    CHECK(r == (rank == 3 ? 0 : rank == 1 ? 1 : MPI_UNDEFINED), "rank in {3,1} is %d", r);
    CHECK(compare(g31, ex02) == MPI_SIMILAR, "{3,1} vs {1,3}: %d", compare(g31, ex02));
    CHECK(compare(g13, ex02) == MPI_IDENT, "{1,3} vs excl{0,2}: %d", compare(g13, ex02));
    CHECK(compare(world, g31) == MPI_UNEQUAL, "world vs {3,1}: %d", compare(world, g31));
    CHECK(compare(world, world) == MPI_IDENT, "world vs world");

    OK(MPI_Group_range_incl(world, 1, range02, &r02));
    OK(MPI_Group_range_incl(world, 1, range30, &r30));
    OK(MPI_Group_range_excl(world, 2, range_ex, &rex));
    CHECK_MEMBERS(r02, 2, 0, 2);
    CHECK_MEMBERS(r30, 2, 3, 0);
    CHECK_MEMBERS(rex, 2, 0, 2);
    CHECK(compare(r02, rex) == MPI_IDENT, "range_incl(0,3,2) vs range_excl");

    OK(MPI_Group_union(g31, r30, &uni)); /* {3,1} ∪ {3,0} = {3,1,0} */
    CHECK_MEMBERS(uni, 3, 3, 1, 0);
    OK(MPI_Group_intersection(uni, r02, &inter)); /* {3,1,0} ∩ {0,2} = {0} */
    CHECK_MEMBERS(inter, 1, 0);
    OK(MPI_Group_free(&inter));
    OK(MPI_Group_intersection(uni, r30, &inter)); /* {3,1,0} ∩ {3,0} = {3,0} */
    CHECK_MEMBERS(inter, 2, 3, 0);
    OK(MPI_Group_difference(world, g31, &diff)); /* {0,1,2,3} \ {3,1} = {0,2} */
    CHECK_MEMBERS(diff, 2, 0, 2);
    CHECK(compare(diff, r02) == MPI_IDENT, "difference vs {0,2}");
    OK(MPI_Group_difference(g31, g13, &none));
    CHECK(none == MPI_GROUP_EMPTY, "{3,1} \\ {1,3} is not MPI_GROUP_EMPTY");
    OK(MPI_Group_size(none, &n));
    CHECK(n == 0, "the empty group has %d members", n);
    OK(MPI_Group_rank(none, &r));
    CHECK(r == MPI_UNDEFINED, "rank in the empty group is %d", r);
    OK(MPI_Group_free(&none));
    CHECK(none == MPI_GROUP_NULL, "freeing MPI_GROUP_EMPTY did not give MPI_GROUP_NULL");
    OK(MPI_Group_incl(world, 0, NULL, &tmp));
    CHECK(tmp == MPI_GROUP_EMPTY, "incl of no rank is not MPI_GROUP_EMPTY");
    OK(MPI_Group_range_incl(world, 1, empty_range, &tmp));
    CHECK(tmp == MPI_GROUP_EMPTY, "range (3,1,1) is not empty");
    OK(MPI_Group_union(MPI_GROUP_EMPTY, g31, &tmp));
    CHECK(compare(tmp, g31) == MPI_IDENT, "{} ∪ {3,1}");
    OK(MPI_Group_free(&tmp));

    /* translate_ranks, against hand-computed results */
    in[0] = 0, in[1] = 1, in[2] = 2, in[3] = 3, in[4] = MPI_PROC_NULL;
    OK(MPI_Group_translate_ranks(world, 5, in, g31, out));
    CHECK(out[0] == MPI_UNDEFINED && out[1] == 1 && out[2] == MPI_UNDEFINED && out[3] == 0 &&
              out[4] == MPI_PROC_NULL,
          "world -> {3,1}: %d %d %d %d %d", out[0], out[1], out[2], out[3], out[4]);
    OK(MPI_Group_translate_ranks(uni, 3, in, world, out));
    CHECK(out[0] == 3 && out[1] == 1 && out[2] == 0, "{3,1,0} -> world: %d %d %d", out[0], out[1],
          out[2]);
    OK(MPI_Group_translate_ranks(uni, 3, in, r30, out));
    CHECK(out[0] == 0 && out[1] == MPI_UNDEFINED && out[2] == 1, "{3,1,0} -> {3,0}: %d %d %d",
          out[0], out[1], out[2]);
    OK(MPI_Group_translate_ranks(g31, 0, NULL, world, NULL));

    /* errors: group calls report to MPI_COMM_SELF's handler */
    FAILS(MPI_ERR_RANK, MPI_Group_incl(world, 2, (int[]){1, 1}, &tmp));
    FAILS(MPI_ERR_RANK, MPI_Group_incl(world, 1, (int[]){4}, &tmp));
    FAILS(MPI_ERR_RANK, MPI_Group_excl(world, 1, (int[]){-1}, &tmp));
    FAILS(MPI_ERR_ARG, MPI_Group_incl(world, 5, (int[]){0, 1, 2, 3, 0}, &tmp));
    FAILS(MPI_ERR_ARG, MPI_Group_range_incl(world, 1, bad_stride, &tmp));
    FAILS(MPI_ERR_RANK, MPI_Group_range_incl(world, 1, bad_rank, &tmp));
    in[0] = 7;
    FAILS(MPI_ERR_RANK, MPI_Group_translate_ranks(g31, 1, in, world, out));
    FAILS(MPI_ERR_ARG, MPI_Group_translate_ranks(g31, -1, in, world, out));
    FAILS(MPI_ERR_GROUP, MPI_Group_size(MPI_GROUP_NULL, &n));
    FAILS(MPI_ERR_ARG, MPI_Group_size(world, NULL));
    tmp = g13;
    OK(MPI_Group_free(&g13));
    CHECK(g13 == MPI_GROUP_NULL, "a freed group is not MPI_GROUP_NULL");
    FAILS(MPI_ERR_GROUP, MPI_Group_rank(tmp, &r));
    FAILS(MPI_ERR_GROUP, MPI_Group_free(&g13));

    /* handle conversions */
    CHECK(MPI_Group_toint(MPI_GROUP_EMPTY) == 0x109, "MPI_GROUP_EMPTY's integer");
    CHECK(MPI_Group_toint(MPI_GROUP_NULL) == 0x108, "MPI_GROUP_NULL's integer");
    CHECK(MPI_Group_fromint(0x109) == MPI_GROUP_EMPTY, "0x109 is not MPI_GROUP_EMPTY");
    n = MPI_Group_toint(g31);
    CHECK(n >= 4096, "a created group's integer %d is in the ABI's reserved 1..4095", n);
    CHECK(MPI_Group_toint(g31) == n, "toint is not stable");
    CHECK(MPI_Group_fromint(n) == g31, "fromint(toint(g)) != g");
    CHECK(MPI_Group_toint(uni) != n, "two groups share an integer");

    MPI_Group *all[] = {&world, &g31, &ex02, &r02, &r30, &rex, &uni, &inter, &diff};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        OK(MPI_Group_free(all[i]));
    CHECK(MPI_Group_fromint(n) == MPI_GROUP_NULL, "fromint of a freed group's integer");
}

/* ---- communicators from groups ------------------------------------------------------ */

/* Pass a token around @comm (Send/Recv) and check it collected every rank. */
static void ring(MPI_Comm comm, const char *what)
{
    int r, n, token = 0;
    MPI_Status st;

    OK(MPI_Comm_rank(comm, &r));
    OK(MPI_Comm_size(comm, &n));
    if (n == 1)
        return;
    if (r == 0) {
        token = 1;
        OK(MPI_Send(&token, 1, MPI_INT, 1, 11, comm));
        OK(MPI_Recv(&token, 1, MPI_INT, n - 1, 11, comm, &st));
        CHECK(token == (1 << n) - 1, "%s: the token came back as %#x", what, token);
        CHECK(st.MPI_SOURCE == n - 1, "%s: status source %d", what, st.MPI_SOURCE);
    } else {
        OK(MPI_Recv(&token, 1, MPI_INT, r - 1, 11, comm, &st));
        token |= 1 << r;
        OK(MPI_Send(&token, 1, MPI_INT, (r + 1) % n, 11, comm));
    }
}

static void case_comm_create(void)
{
    MPI_Group world, even, odd, mine;
    MPI_Comm evens, halves, odds;
    int range[][3] = {{0, 3, 2}}, r, n, result;

    OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    OK(MPI_Group_range_incl(world, 1, range, &even));
    OK(MPI_Group_difference(world, even, &odd));

    /* the even ranks, all passing the same group */
    OK(MPI_Comm_create(MPI_COMM_WORLD, even, &evens));
    if (rank % 2 == 0) {
        CHECK(evens != MPI_COMM_NULL, "even rank got MPI_COMM_NULL");
        if (evens != MPI_COMM_NULL) {
            OK(MPI_Comm_rank(evens, &r));
            OK(MPI_Comm_size(evens, &n));
            CHECK(r == rank / 2 && n == 2, "rank %d of %d in the evens", r, n);
            OK(MPI_Comm_group(evens, &mine));
            CHECK(compare(mine, even) == MPI_IDENT, "the evens' group is not the even group");
            OK(MPI_Group_free(&mine));
            OK(MPI_Comm_compare(MPI_COMM_WORLD, evens, &result));
            CHECK(result == MPI_UNEQUAL, "world vs evens: %d", result);
            ring(evens, "evens");
            /* a group that is not a subset of the communicator */
            OK(MPI_Comm_set_errhandler(evens, MPI_ERRORS_RETURN));
            FAILS(MPI_ERR_GROUP, MPI_Comm_create(evens, world, &halves));
            OK(MPI_Comm_free(&evens));
        }
    } else {
        CHECK(evens == MPI_COMM_NULL, "odd rank got a communicator of the evens");
    }

    /* disjoint groups: each rank passes its own half */
    OK(MPI_Comm_create(MPI_COMM_WORLD, rank % 2 == 0 ? even : odd, &halves));
    CHECK(halves != MPI_COMM_NULL, "no communicator for my half");
    if (halves != MPI_COMM_NULL) {
        OK(MPI_Comm_rank(halves, &r));
        CHECK(r == rank / 2, "rank %d in my half", r);
        ring(halves, "halves");
        OK(MPI_Comm_free(&halves));
    }

    /* MPI_Comm_create_group: only the odd ranks call it */
    if (rank % 2 == 1) {
        OK(MPI_Comm_create_group(MPI_COMM_WORLD, odd, 7, &odds));
        CHECK(odds != MPI_COMM_NULL, "odd rank got MPI_COMM_NULL from create_group");
        if (odds != MPI_COMM_NULL) {
            OK(MPI_Comm_rank(odds, &r));
            CHECK(r == rank / 2, "rank %d in the odds", r);
            ring(odds, "odds");
            OK(MPI_Comm_free(&odds));
        }
    }
    /* and the whole world again, after the odd ranks' private agreement */
    OK(MPI_Comm_create(MPI_COMM_WORLD, world, &halves));
    if (halves != MPI_COMM_NULL) {
        OK(MPI_Comm_compare(MPI_COMM_WORLD, halves, &result));
        CHECK(result == MPI_CONGRUENT, "world vs create(world group): %d", result);
        ring(halves, "world copy");
        OK(MPI_Comm_free(&halves));
    }
    OK(MPI_Group_free(&world));
    OK(MPI_Group_free(&even));
    OK(MPI_Group_free(&odd));
}

/* ---- MPI_Comm_split_type --------------------------------------------------------------- */

static void case_split_type(void)
{
    char names[64][MPI_MAX_PROCESSOR_NAME], mine[MPI_MAX_PROCESSOR_NAME];
    int len, same = 0, r, n, world_of[64], in[64];
    MPI_Comm shared, reversed, none;
    MPI_Group wg, sg;
    MPI_Info info;

    /* every rank's node name, by point-to-point to every other rank */
    memset(mine, 0, sizeof(mine));
    OK(MPI_Get_processor_name(mine, &len));
    for (int p = 0; p < size; p++) {
        if (p == rank)
            memcpy(names[p], mine, sizeof(mine));
        else
            OK(MPI_Sendrecv(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, p, 21, names[p],
                            MPI_MAX_PROCESSOR_NAME, MPI_CHAR, p, 21, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
    }
    for (int p = 0; p < size; p++)
        same += strcmp(names[p], mine) == 0;
    if (expect_shared > 0)
        CHECK(same == expect_shared, "%d ranks share my node name %s, not %d", same, mine,
              expect_shared);

    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    CHECK(shared != MPI_COMM_NULL, "MPI_COMM_TYPE_SHARED gave MPI_COMM_NULL");
    if (shared == MPI_COMM_NULL)
        return;
    OK(MPI_Comm_size(shared, &n));
    CHECK(n == same, "the shared communicator has %d ranks, my node %d", n, same);
    OK(MPI_Comm_group(shared, &sg));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    for (int i = 0; i < n; i++)
        in[i] = i;
    OK(MPI_Group_translate_ranks(sg, n, in, wg, world_of));
    for (int i = 0; i < n; i++) {
        CHECK(strcmp(names[world_of[i]], mine) == 0, "shared rank %d is world %d on %s", i,
              world_of[i], names[world_of[i]]);
        CHECK(i == 0 || world_of[i] > world_of[i - 1], "key 0 does not keep the world order");
    }
    ring(shared, "shared");
    OK(MPI_Group_free(&sg));

    /* key -rank: the reverse order */
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &reversed));
    OK(MPI_Comm_rank(shared, &r));
    OK(MPI_Comm_rank(reversed, &len));
    CHECK(len == n - 1 - r, "rank %d with key -rank, %d with key 0 (of %d)", len, r, n);
    OK(MPI_Comm_free(&reversed));

    /* MPI_UNDEFINED on the odd ranks only */
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, rank % 2 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0,
                           MPI_INFO_NULL, &none));
    CHECK((none == MPI_COMM_NULL) == (rank % 2 == 1), "MPI_UNDEFINED on rank %d", rank);
    if (none != MPI_COMM_NULL)
        OK(MPI_Comm_free(&none));

    /* the guided kinds */
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory"));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &none));
    CHECK(none != MPI_COMM_NULL, "HW_GUIDED mpi_shared_memory gave MPI_COMM_NULL");
    if (none != MPI_COMM_NULL) {
        OK(MPI_Comm_size(none, &len));
        CHECK(len == n, "HW_GUIDED mpi_shared_memory has %d ranks, not %d", len, n);
        OK(MPI_Comm_free(&none));
    }
    OK(MPI_Info_set(info, "mpi_hw_resource_type", "Socket"));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &none));
    CHECK(none == MPI_COMM_NULL, "HW_GUIDED Socket did not give MPI_COMM_NULL");
    OK(MPI_Info_free(&info));
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &none));
    CHECK((none == MPI_COMM_NULL) == (same == size), "HW_UNGUIDED: %s with %d of %d on my node",
          none == MPI_COMM_NULL ? "MPI_COMM_NULL" : "a communicator", same, size);
    if (none != MPI_COMM_NULL)
        OK(MPI_Comm_free(&none));

    /* errors, under MPI_ERRORS_RETURN on the world */
    FAILS(MPI_ERR_ARG, MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &none));
    CHECK(none == MPI_COMM_NULL, "an unknown split type gave a communicator");
    FAILS(MPI_ERR_COMM,
          MPI_Comm_split_type(MPI_COMM_NULL, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &none));
    OK(MPI_Group_free(&wg));
    OK(MPI_Comm_free(&shared));
}

/* ---- info ----------------------------------------------------------------------------- */

static void case_info(void)
{
    MPI_Info info, dup, env, gone;
    char key[MPI_MAX_INFO_KEY + 8], value[MPI_MAX_INFO_VAL + 8], small[4];
    int n, flag, len;

    OK(MPI_Info_create(&info));
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 0, "a new info has %d keys", n);
    OK(MPI_Info_set(info, "alpha", "1"));
    OK(MPI_Info_set(info, "beta", "two"));
    OK(MPI_Info_set(info, "alpha", "three")); /* replaces, keeps the order */
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 2, "nkeys %d", n);
    OK(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "alpha") == 0, "key 0 is %s", key);
    OK(MPI_Info_get_nthkey(info, 1, key));
    CHECK(strcmp(key, "beta") == 0, "key 1 is %s", key);

    len = 0;
    OK(MPI_Info_get_string(info, "alpha", &len, NULL, &flag));
    CHECK(flag && len == 6, "get_string length query: flag %d buflen %d", flag, len);
    len = sizeof(value);
    OK(MPI_Info_get_string(info, "alpha", &len, value, &flag));
    CHECK(flag && len == 6 && strcmp(value, "three") == 0, "alpha = %s (buflen %d)", value, len);
    len = sizeof(small);
    OK(MPI_Info_get_string(info, "alpha", &len, small, &flag));
    CHECK(flag && len == 6 && strcmp(small, "thr") == 0, "truncated to %s (buflen %d)", small, len);
    len = 99;
    OK(MPI_Info_get_string(info, "gamma", &len, value, &flag));
    CHECK(!flag && len == 99, "an absent key: flag %d buflen %d", flag, len);
    OK(MPI_Info_get(info, "beta", 2, value, &flag));
    CHECK(flag && strcmp(value, "tw") == 0, "MPI_Info_get(valuelen 2) = %s", value);
    OK(MPI_Info_get_valuelen(info, "beta", &len, &flag));
    CHECK(flag && len == 3, "valuelen of beta %d", len);

    OK(MPI_Info_dup(info, &dup));
    OK(MPI_Info_delete(info, "alpha"));
    OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 1, "nkeys after delete %d", n);
    OK(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "beta") == 0, "key 0 after delete is %s", key);
    FAILS(MPI_ERR_INFO_NOKEY, MPI_Info_delete(info, "alpha"));
    OK(MPI_Info_get_nkeys(dup, &n));
    CHECK(n == 2, "the dup has %d keys", n);
    OK(MPI_Info_get_nthkey(dup, 0, key));
    len = sizeof(value);
    OK(MPI_Info_get_string(dup, "alpha", &len, value, &flag));
    CHECK(strcmp(key, "alpha") == 0 && flag && strcmp(value, "three") == 0,
          "the dup: key 0 %s, alpha = %s", key, value);

    /* the limits: keys below MPI_MAX_INFO_KEY, values below MPI_MAX_INFO_VAL */
    memset(key, 'k', sizeof(key));
    key[MPI_MAX_INFO_KEY - 1] = '\0';
    OK(MPI_Info_set(info, key, "v"));
    key[MPI_MAX_INFO_KEY - 1] = 'k';
    key[MPI_MAX_INFO_KEY] = '\0';
    FAILS(MPI_ERR_INFO_KEY, MPI_Info_set(info, key, "v"));
    FAILS(MPI_ERR_INFO_KEY, MPI_Info_set(info, "", "v"));
    memset(value, 'v', sizeof(value));
    value[MPI_MAX_INFO_VAL - 1] = '\0';
    OK(MPI_Info_set(info, "long", value));
    value[MPI_MAX_INFO_VAL - 1] = 'v';
    value[MPI_MAX_INFO_VAL] = '\0';
    FAILS(MPI_ERR_INFO_VALUE, MPI_Info_set(info, "long", value));
    FAILS(MPI_ERR_ARG, MPI_Info_get_nthkey(info, 3, key));
    FAILS(MPI_ERR_ARG, MPI_Info_get_nthkey(info, -1, key));
    FAILS(MPI_ERR_INFO, MPI_Info_set(MPI_INFO_NULL, "a", "b"));
    FAILS(MPI_ERR_ARG, MPI_Info_get(info, "beta", 0, value, &flag));

    /* conversions */
    n = MPI_Info_toint(info);
    CHECK(n >= 4096, "a created info's integer %d is in the ABI's reserved 1..4095", n);
    CHECK(MPI_Info_fromint(n) == info, "fromint(toint(info)) != info");
    CHECK(MPI_Info_toint(MPI_INFO_ENV) == 0x131 && MPI_Info_fromint(0x131) == MPI_INFO_ENV,
          "MPI_INFO_ENV's integer");
    CHECK(MPI_Info_toint(MPI_INFO_NULL) == 0x130 && MPI_Info_fromint(0x130) == MPI_INFO_NULL,
          "MPI_INFO_NULL's integer");

    gone = info;
    OK(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "a freed info is not MPI_INFO_NULL");
    FAILS(MPI_ERR_INFO, MPI_Info_get_nkeys(gone, &n));
    CHECK(MPI_Info_fromint(n) == MPI_INFO_NULL, "fromint of a freed info's integer");
    OK(MPI_Info_free(&dup));

    /* MPI_INFO_ENV: read-only, with the command and the number of ranks */
    OK(MPI_Info_get_nkeys(MPI_INFO_ENV, &n));
    CHECK(n >= 2, "MPI_INFO_ENV has %d keys", n);
    len = sizeof(value);
    OK(MPI_Info_get_string(MPI_INFO_ENV, "command", &len, value, &flag));
    CHECK(flag && strstr(value, "pbt-mpi-groups") != NULL, "command = %s", flag ? value : "-");
    len = sizeof(value);
    OK(MPI_Info_get_string(MPI_INFO_ENV, "maxprocs", &len, value, &flag));
    CHECK(flag && atoi(value) == size, "maxprocs = %s", flag ? value : "-");
    FAILS(MPI_ERR_INFO, MPI_Info_set(MPI_INFO_ENV, "a", "b"));
    FAILS(MPI_ERR_INFO, MPI_Info_delete(MPI_INFO_ENV, "command"));
    env = MPI_INFO_ENV;
    FAILS(MPI_ERR_INFO, MPI_Info_free(&env));
    OK(MPI_Info_dup(MPI_INFO_ENV, &dup));
    OK(MPI_Info_set(dup, "a", "b"));
    OK(MPI_Info_free(&dup));
    OK(MPI_Info_create_env(2, (char *[]){"prog", "arg1", NULL}, &env));
    len = sizeof(value);
    OK(MPI_Info_get_string(env, "argv", &len, value, &flag));
    CHECK(flag && strcmp(value, "arg1") == 0, "create_env argv = %s", flag ? value : "-");
    OK(MPI_Info_free(&env));
}

/* ---- attributes ------------------------------------------------------------------------- */

static int copies, deletes;

static int count_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval;
    copies++;
    *(void **)out = (char *)in + *(int *)extra;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)value, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

/* refuses while *(int *)extra is set */
static int refuse_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)value;
    return *(int *)extra ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static void check_predefined(MPI_Comm comm, const char *what)
{
    static const struct {
        int keyval;
        const char *name;
    } keys[] = {{MPI_TAG_UB, "MPI_TAG_UB"}, {MPI_HOST, "MPI_HOST"},
                {MPI_IO, "MPI_IO"},         {MPI_WTIME_IS_GLOBAL, "MPI_WTIME_IS_GLOBAL"},
                {MPI_APPNUM, "MPI_APPNUM"}, {MPI_UNIVERSE_SIZE, "MPI_UNIVERSE_SIZE"}};
    int want[] = {INT_MAX, MPI_PROC_NULL, MPI_ANY_SOURCE, 0, 0, size};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        int *value = NULL, flag = 0;

        OK(MPI_Comm_get_attr(comm, keys[i].keyval, &value, &flag));
        CHECK(flag && value != NULL && *value == want[i], "%s on %s: flag %d value %d",
              keys[i].name, what, flag, value != NULL ? *value : -99);
    }
}

static void case_attr(void)
{
    MPI_Comm dup;
    int keyval, plain, offset = 5, flag, *tag_ub;
    void *value;

    check_predefined(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    check_predefined(MPI_COMM_SELF, "MPI_COMM_SELF");
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    check_predefined(dup, "a dup");
    OK(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    CHECK(flag && *tag_ub == INT_MAX, "MPI_Attr_get(MPI_TAG_UB)");
    /* the largest tag really travels */
    if (size > 1 && rank < 2) {
        int v = rank, got = -1;

        OK(MPI_Sendrecv(&v, 1, MPI_INT, 1 - rank, INT_MAX, &got, 1, MPI_INT, 1 - rank, INT_MAX,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(got == 1 - rank, "a message with tag INT_MAX carried %d", got);
    }

    OK(MPI_Comm_create_keyval(count_copy, count_delete, &keyval, &offset));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &plain, NULL));
    CHECK(keyval != plain && keyval != MPI_KEYVAL_INVALID, "keyvals %d and %d", keyval, plain);
    OK(MPI_Comm_get_attr(dup, keyval, &value, &flag));
    CHECK(!flag, "an attribute never set is found");
    OK(MPI_Comm_set_attr(dup, keyval, (void *)(uintptr_t)100));
    OK(MPI_Comm_get_attr(dup, keyval, &value, &flag));
    CHECK(flag && value == (void *)(uintptr_t)100, "get after set: flag %d value %p", flag, value);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, &value, &flag));
    CHECK(!flag, "an attribute of the dup is found on the world");
    OK(MPI_Comm_set_attr(dup, keyval, (void *)(uintptr_t)200));
    CHECK(deletes == 1, "replacing a value called delete %d times", deletes);
    OK(MPI_Comm_delete_attr(dup, keyval));
    CHECK(deletes == 2, "deleting called delete %d times in all", deletes);
    OK(MPI_Comm_get_attr(dup, keyval, &value, &flag));
    CHECK(!flag, "a deleted attribute is found");
    OK(MPI_Comm_delete_attr(dup, keyval)); /* absent: nothing to do */
    CHECK(deletes == 2, "deleting an absent attribute called delete");

    /* a delete callback that fails keeps the attribute */
    {
        int stubborn, refusing = 1;

        OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, refuse_delete, &stubborn, &refusing));
        OK(MPI_Comm_set_attr(dup, stubborn, &offset));
        FAILS(MPI_ERR_OTHER, MPI_Comm_delete_attr(dup, stubborn));
        OK(MPI_Comm_get_attr(dup, stubborn, &value, &flag));
        CHECK(flag && value == &offset, "a refused delete lost the attribute");
        refusing = 0;
        OK(MPI_Comm_delete_attr(dup, stubborn));
        OK(MPI_Comm_free_keyval(&stubborn));
    }

    /* errors */
    FAILS(MPI_ERR_KEYVAL, MPI_Comm_set_attr(dup, MPI_TAG_UB, &offset));
    FAILS(MPI_ERR_KEYVAL, MPI_Comm_delete_attr(dup, MPI_TAG_UB));
    FAILS(MPI_ERR_KEYVAL, MPI_Comm_get_attr(dup, 999999, &value, &flag));
    FAILS(MPI_ERR_KEYVAL, MPI_Comm_get_attr(dup, MPI_WIN_BASE, &value, &flag));
    FAILS(MPI_ERR_COMM, MPI_Comm_get_attr(MPI_COMM_NULL, MPI_TAG_UB, &value, &flag));
    FAILS(MPI_ERR_ARG, MPI_Comm_get_attr(dup, MPI_TAG_UB, NULL, &flag));

    OK(MPI_Comm_set_attr(MPI_COMM_WORLD, plain, &offset));
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, plain, &value, &flag));
    CHECK(flag && value == &offset, "the world's attribute");
    OK(MPI_Comm_delete_attr(MPI_COMM_WORLD, plain));
    OK(MPI_Comm_free_keyval(&keyval));
    CHECK(keyval == MPI_KEYVAL_INVALID, "a freed keyval is not MPI_KEYVAL_INVALID");
    OK(MPI_Comm_free_keyval(&plain));
    FAILS(MPI_ERR_KEYVAL, MPI_Comm_free_keyval(&plain));
    FAILS(MPI_ERR_KEYVAL, MPI_Comm_free_keyval((int[]){MPI_TAG_UB}));
    OK(MPI_Comm_free(&dup));

    /* a new communicator at the freed one's address has no attribute */
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &plain, NULL));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_attr(dup, plain, &offset));
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_get_attr(dup, plain, &value, &flag));
    CHECK(!flag, "a new communicator has the attribute of a freed one");
    OK(MPI_Comm_free(&dup));
    OK(MPI_Comm_free_keyval(&plain));
}

/* MPI_Comm_dup copies through the copy callbacks; MPI_Comm_free deletes
 * (needs comm.c to call attr.c's hooks) */
static void case_attr_dup(void)
{
    MPI_Comm dup, dup2;
    int keyval, plain, offset = 5, flag;
    void *value;

    copies = deletes = 0;
    OK(MPI_Comm_create_keyval(count_copy, count_delete, &keyval, &offset));
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &plain, NULL));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_set_attr(dup, keyval, (void *)(uintptr_t)100));
    OK(MPI_Comm_set_attr(dup, plain, &offset));
    OK(MPI_Comm_dup(dup, &dup2));
    CHECK(copies == 1, "MPI_Comm_dup called the copy callback %d times", copies);
    OK(MPI_Comm_get_attr(dup2, keyval, &value, &flag));
    CHECK(flag && value == (void *)(uintptr_t)105, "the copied value: flag %d %p", flag, value);
    OK(MPI_Comm_get_attr(dup2, plain, &value, &flag));
    CHECK(flag && value == &offset, "MPI_COMM_DUP_FN: flag %d %p", flag, value);
    OK(MPI_Comm_free(&dup2));
    CHECK(deletes == 1, "MPI_Comm_free called the delete callback %d times", deletes);
    OK(MPI_Comm_free(&dup));
    CHECK(deletes == 2, "MPI_Comm_free called the delete callback %d times in all", deletes);
    OK(MPI_Comm_free_keyval(&keyval));
    OK(MPI_Comm_free_keyval(&plain));
}

/* ---- MPI_Alloc_mem ------------------------------------------------------------------- */

static void case_alloc_mem(void)
{
    char *small = NULL, *big = NULL, *zero = NULL;
    MPI_Info info, gone;

    OK(MPI_Alloc_mem(100, MPI_INFO_NULL, &small));
    CHECK(small != NULL && (uintptr_t)small % 64 == 0, "100 bytes at %p", (void *)small);
    if (small != NULL)
        memset(small, 1, 100);
    OK(MPI_Info_create(&info));
    OK(MPI_Alloc_mem(1 << 20, info, &big));
    CHECK(big != NULL && (uintptr_t)big % 4096 == 0, "1 MiB at %p", (void *)big);
    if (big != NULL)
        memset(big, 2, 1 << 20);
    OK(MPI_Alloc_mem(0, MPI_INFO_NULL, &zero));
    OK(MPI_Free_mem(small));
    OK(MPI_Free_mem(big));
    OK(MPI_Free_mem(zero));
    gone = info;
    OK(MPI_Info_free(&info));
    FAILS(MPI_ERR_ARG, MPI_Alloc_mem(-1, MPI_INFO_NULL, &small));
    FAILS(MPI_ERR_INFO, MPI_Alloc_mem(8, gone, &small));
#if !defined(__SANITIZE_ADDRESS__)
    /* (AddressSanitizer ends the process on an allocation this large) */
    FAILS(MPI_ERR_NO_MEM, MPI_Alloc_mem((MPI_Aint)1 << 60, MPI_INFO_NULL, &small));
#endif
}

/* ---- handle conversions --------------------------------------------------------------- */

static void noop_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm, (void)code;
}

static void case_handles(void)
{
    MPI_Comm dup, other;
    MPI_Errhandler eh;
    int n;

    CHECK(MPI_Comm_toint(MPI_COMM_WORLD) == 0x101 && MPI_Comm_toint(MPI_COMM_SELF) == 0x102 &&
              MPI_Comm_toint(MPI_COMM_NULL) == 0x100,
          "the predefined communicators' integers");
    CHECK(MPI_Comm_fromint(0x101) == MPI_COMM_WORLD && MPI_Comm_fromint(0x102) == MPI_COMM_SELF &&
              MPI_Comm_fromint(0x100) == MPI_COMM_NULL,
          "the predefined communicators from their integers");
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &other));
    n = MPI_Comm_toint(dup);
    CHECK(n >= 4096, "a created communicator's integer %d is in the reserved 1..4095", n);
    CHECK(MPI_Comm_toint(dup) == n, "Comm_toint is not stable");
    CHECK(MPI_Comm_toint(other) != n, "two communicators share an integer");
    CHECK(MPI_Comm_fromint(n) == dup, "Comm_fromint(toint(c)) != c");
    OK(MPI_Comm_free(&dup));
    CHECK(MPI_Comm_fromint(n) == MPI_COMM_NULL, "fromint of a freed communicator's integer");
    OK(MPI_Comm_free(&other));

    CHECK(MPI_Errhandler_toint(MPI_ERRORS_RETURN) == 0x143 &&
              MPI_Errhandler_toint(MPI_ERRORS_ARE_FATAL) == 0x141 &&
              MPI_Errhandler_toint(MPI_ERRORS_ABORT) == 0x142 &&
              MPI_Errhandler_toint(MPI_ERRHANDLER_NULL) == 0x140,
          "the predefined error handlers' integers");
    CHECK(MPI_Errhandler_fromint(0x143) == MPI_ERRORS_RETURN &&
              MPI_Errhandler_fromint(0x140) == MPI_ERRHANDLER_NULL,
          "the predefined error handlers from their integers");
    OK(MPI_Comm_create_errhandler(noop_handler, &eh));
    n = MPI_Errhandler_toint(eh);
    CHECK(n >= 4096 && MPI_Errhandler_fromint(n) == eh, "a created error handler's integer %d", n);

    CHECK(MPI_Win_toint(MPI_WIN_NULL) == 0x110 && MPI_Win_fromint(0x110) == MPI_WIN_NULL,
          "MPI_WIN_NULL");
    CHECK(MPI_File_toint(MPI_FILE_NULL) == 0x118 && MPI_File_fromint(0x118) == MPI_FILE_NULL,
          "MPI_FILE_NULL");
    CHECK(MPI_Session_toint(MPI_SESSION_NULL) == 0x120 &&
              MPI_Session_fromint(0x120) == MPI_SESSION_NULL,
          "MPI_SESSION_NULL");
    CHECK(MPI_Message_toint(MPI_MESSAGE_NULL) == 0x128 &&
              MPI_Message_fromint(0x128) == MPI_MESSAGE_NULL &&
              MPI_Message_toint(MPI_MESSAGE_NO_PROC) == 0x129 &&
              MPI_Message_fromint(0x129) == MPI_MESSAGE_NO_PROC,
          "MPI_MESSAGE_NULL, MPI_MESSAGE_NO_PROC");
}

/* ---- driver ------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    void (*run)(void);
    int by_default;
} cases[] = {
    {"groups", case_groups, 1},
    {"comm_create", case_comm_create, 1},
    {"split_type", case_split_type, 1},
    {"info", case_info, 1},
    {"attr", case_attr, 1},
    {"attr_dup", case_attr_dup, 0},
    {"alloc_mem", case_alloc_mem, 1},
    {"handles", case_handles, 1},
};

static int selected(int argc, char **argv, size_t c)
{
    int named = 0;

    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "shared=", 7) == 0)
            continue;
        named = 1;
        if (strcmp(argv[i], cases[c].name) == 0)
            return 1;
    }
    return !named && cases[c].by_default;
}

int main(int argc, char **argv)
{
    int status;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* the error cases read the returned classes */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "shared=", 7) == 0)
            expect_shared = atoi(argv[i] + 7);
    }
    if (size != 4) {
        if (rank == 0)
            printf("pbt-mpi-groups needs 4 ranks, not %d\n", size);
        MPI_Finalize();
        return 2;
    }
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        if (selected(argc, argv, c))
            cases[c].run();
    }
    status = check_summary("groups", MPI_COMM_WORLD, 99);
    MPI_Finalize();
    return status;
}
