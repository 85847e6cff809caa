/*
 * pbt-mpi-intercomm: intercommunicators, run under `postbox run -n N
 * [--nodes K]` (N >= 3).  MPI_COMM_WORLD splits into two groups of unequal
 * size (group 0: world ranks 0..L-1 in order; group 1: the others in
 * reverse order, so that local and world ranks differ), joined by
 * MPI_Intercomm_create; then point-to-point both ways with MPI_ANY_SOURCE,
 * every blocking collective in both directions with checked results,
 * MPI_Intercomm_merge, MPI_Comm_dup, _split, _create, _compare, _free and
 * the errors of calls that need an intracommunicator (or an
 * intercommunicator); then the same groups joined by
 * MPI_Intercomm_create_from_groups, and its errors.  Written to the standard API only; rank 0
 * prints "intercomm: ok".
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int nworld, color, lsize, rsize, lrank;

/* the size of group @g */
static int group_size(int g)
{
    int low = (nworld + 2) / 2;

    return g == 0 ? low : nworld - low;
}

/* the world rank of rank @r of group @g */
static int world_of(int g, int r)
{
    return g == 0 ? r : nworld - 1 - r;
}

static void check_shape(MPI_Comm inter)
{
    MPI_Group group, remote, world_group;
    int flag = 0, n = -1, r = -1, *ranks, *worlds;

    OK(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag == 1, "MPI_Comm_test_inter says %d", flag);
    OK(MPI_Comm_size(inter, &n));
    CHECK(n == lsize, "size %d, local group has %d", n, lsize);
    OK(MPI_Comm_rank(inter, &r));
    CHECK(r == lrank, "rank %d, expected %d", r, lrank);
    OK(MPI_Comm_remote_size(inter, &n));
    CHECK(n == rsize, "remote size %d, expected %d", n, rsize);
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    OK(MPI_Comm_group(inter, &group));
    OK(MPI_Comm_remote_group(inter, &remote));
    ranks = malloc((size_t)nworld * sizeof(int));
    worlds = malloc((size_t)nworld * sizeof(int));
    for (int i = 0; i < nworld; i++)
        ranks[i] = i;
    OK(MPI_Group_translate_ranks(group, lsize, ranks, world_group, worlds));
    for (int i = 0; i < lsize; i++)
        CHECK(worlds[i] == world_of(color, i), "local rank %d is world %d", i, worlds[i]);
    OK(MPI_Group_translate_ranks(remote, rsize, ranks, world_group, worlds));
    for (int i = 0; i < rsize; i++)
        CHECK(worlds[i] == world_of(!color, i), "remote rank %d is world %d", i, worlds[i]);
    OK(MPI_Group_rank(group, &r));
    CHECK(r == lrank, "rank in the local group %d", r);
    free(ranks);
    free(worlds);
    MPI_Group_free(&group);
    MPI_Group_free(&remote);
    MPI_Group_free(&world_group);
}

/* every process sends to every remote one; receives with MPI_ANY_SOURCE */
static void check_p2p(MPI_Comm inter)
{
    MPI_Request *reqs = malloc((size_t)rsize * sizeof(MPI_Request));
    int *out = malloc((size_t)rsize * sizeof(int)), *seen = calloc((size_t)rsize, sizeof(int));

    for (int j = 0; j < rsize; j++) {
        out[j] = rank * 1000 + j;
        OK(MPI_Isend(&out[j], 1, MPI_INT, j, 5 + color, inter, &reqs[j]));
    }
    for (int k = 0; k < rsize; k++) {
        MPI_Status st;
        int v = -1;

        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 5 + !color, inter, &st));
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize, "source %d", st.MPI_SOURCE);
        if (st.MPI_SOURCE < 0 || st.MPI_SOURCE >= rsize)
            continue;
        CHECK(st.MPI_TAG == 5 + !color, "tag %d", st.MPI_TAG);
        CHECK(v == world_of(!color, st.MPI_SOURCE) * 1000 + lrank, "from %d got %d", st.MPI_SOURCE,
              v);
        seen[st.MPI_SOURCE]++;
    }
    for (int j = 0; j < rsize; j++)
        CHECK(seen[j] == 1, "%d messages from remote %d", seen[j], j);
    OK(MPI_Waitall(rsize, reqs, MPI_STATUSES_IGNORE));
    /* a named source, and MPI_PROC_NULL */
    if (lrank == 0) {
        int v = rank, got = -1;

        OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 9, &got, 1, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE));
        CHECK(got == world_of(!color, 0), "remote leader sent %d", got);
        OK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 9, inter));
    }
    free(reqs);
    free(out);
    free(seen);
}

/* the root of a rooted collective from group @g, at its rank @at */
static int root_arg(int g, int at)
{
    if (color != g)
        return at;
    return lrank == at ? MPI_ROOT : MPI_PROC_NULL;
}

static void check_rooted(MPI_Comm inter, int g)
{
    int at = group_size(g) - 1, root = root_arg(g, at), is_root = root == MPI_ROOT;
    int other = group_size(!g), buf[64], mine[8];
    int counts[16], displs[16];

    /* Bcast */
    for (int i = 0; i < 5; i++)
        buf[i] = is_root ? 100 * g + i : -1;
    OK(MPI_Bcast(buf, 5, MPI_INT, root, inter));
    for (int i = 0; i < 5; i++) {
        int want = root == MPI_PROC_NULL ? -1 : 100 * g + i;

        CHECK(buf[i] == want, "bcast from group %d: [%d] = %d, want %d", g, i, buf[i], want);
    }
    /* Gather: {world, 2 * world} from each process of the other group */
    mine[0] = rank, mine[1] = 2 * rank;
    memset(buf, 0xff, sizeof(buf));
    OK(MPI_Gather(mine, 2, MPI_INT, buf, 2, MPI_INT, root, inter));
    for (int i = 0; is_root && i < other; i++)
        CHECK(buf[2 * i] == world_of(!g, i) && buf[2 * i + 1] == 2 * world_of(!g, i),
              "gather to group %d: block %d = %d %d", g, i, buf[2 * i], buf[2 * i + 1]);
    /* Gather into a derived type: pairs of ints 3 ints apart (extent 12) */
    {
        MPI_Datatype pair, spaced;

        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_create_resized(pair, 0, 3 * (MPI_Aint)sizeof(int), &spaced);
        MPI_Type_commit(&spaced);
        memset(buf, 0xff, sizeof(buf));
        OK(MPI_Gather(mine, 2, MPI_INT, buf, 1, spaced, root, inter));
        for (int i = 0; is_root && i < other; i++)
            CHECK(buf[3 * i] == world_of(!g, i) && buf[3 * i + 1] == 2 * world_of(!g, i) &&
                      buf[3 * i + 2] == -1,
                  "gather of a derived type to group %d: block %d = %d %d %d", g, i, buf[3 * i],
                  buf[3 * i + 1], buf[3 * i + 2]);
        MPI_Type_free(&spaced);
        MPI_Type_free(&pair);
    }
    /* Gatherv: remote rank i sends i + 1 ints at displacement 3 i */
    for (int i = 0; i < 16; i++)
        counts[i] = i + 1, displs[i] = 3 * i;
    for (int i = 0; i < 8; i++)
        mine[i] = rank + i;
    memset(buf, 0xff, sizeof(buf));
    OK(MPI_Gatherv(mine, lrank + 1, MPI_INT, buf, counts, displs, MPI_INT, root, inter));
    for (int i = 0; is_root && i < other; i++)
        for (int k = 0; k <= i; k++)
            CHECK(buf[3 * i + k] == world_of(!g, i) + k, "gatherv to group %d: %d.%d = %d", g, i, k,
                  buf[3 * i + k]);
    /* Scatter: remote rank i gets {10 i, 10 i + 1} */
    for (int i = 0; i < 2 * other; i++)
        buf[i] = 10 * (i / 2) + i % 2 + 1000 * g;
    mine[0] = mine[1] = -1;
    OK(MPI_Scatter(buf, 2, MPI_INT, mine, 2, MPI_INT, root, inter));
    if (color != g)
        CHECK(mine[0] == 10 * lrank + 1000 * g && mine[1] == 10 * lrank + 1 + 1000 * g,
              "scatter from group %d: %d %d", g, mine[0], mine[1]);
    else
        CHECK(mine[0] == -1, "scatter wrote the root's group's buffer");
    /* Scatterv: remote rank i gets i + 1 ints from displacement 3 i */
    for (int i = 0; i < 48; i++)
        buf[i] = i + 7 * g;
    memset(mine, 0xff, sizeof(mine));
    OK(MPI_Scatterv(buf, counts, displs, MPI_INT, mine, lrank + 1, MPI_INT, root, inter));
    for (int k = 0; color != g && k <= lrank; k++)
        CHECK(mine[k] == 3 * lrank + k + 7 * g, "scatterv from group %d: [%d] = %d", g, k, mine[k]);
    /* Reduce: the sum and the max of the other group's {world, 1} */
    mine[0] = rank, mine[1] = 1;
    buf[0] = buf[1] = -1;
    OK(MPI_Reduce(mine, buf, 2, MPI_INT, MPI_SUM, root, inter));
    if (is_root) {
        int sum = 0;

        for (int i = 0; i < other; i++)
            sum += world_of(!g, i);
        CHECK(buf[0] == sum && buf[1] == other, "reduce to group %d: %d %d, want %d %d", g, buf[0],
              buf[1], sum, other);
    }
    OK(MPI_Reduce(mine, buf, 1, MPI_INT, MPI_MAX, root, inter));
    if (is_root)
        CHECK(buf[0] == (g == 0 ? nworld - 1 : world_of(0, group_size(0) - 1)),
              "reduce max to group %d: %d", g, buf[0]);
}

static void check_all(MPI_Comm inter)
{
    int sendbuf[64], recvbuf[64], counts[16], displs[16], scounts[16], sdispls[16], rcounts[16],
        rdispls[16];
    MPI_Datatype types[16];
    int sum_other = 0, total = lsize * rsize;

    for (int i = 0; i < rsize; i++)
        sum_other += world_of(!color, i);
    OK(MPI_Barrier(inter));
    /* Allgather(v) */
    sendbuf[0] = rank;
    OK(MPI_Allgather(sendbuf, 1, MPI_INT, recvbuf, 1, MPI_INT, inter));
    for (int i = 0; i < rsize; i++)
        CHECK(recvbuf[i] == world_of(!color, i), "allgather [%d] = %d", i, recvbuf[i]);
    for (int i = 0; i < 8; i++)
        sendbuf[i] = rank;
    for (int i = 0; i < 16; i++)
        counts[i] = i + 1, displs[i] = 3 * i;
    memset(recvbuf, 0xff, sizeof(recvbuf));
    OK(MPI_Allgatherv(sendbuf, lrank + 1, MPI_INT, recvbuf, counts, displs, MPI_INT, inter));
    for (int i = 0; i < rsize; i++)
        for (int k = 0; k <= i; k++)
            CHECK(recvbuf[3 * i + k] == world_of(!color, i), "allgatherv %d.%d = %d", i, k,
                  recvbuf[3 * i + k]);
    /* Alltoall: block j (to remote j) = world * 100 + j */
    for (int j = 0; j < rsize; j++)
        sendbuf[j] = rank * 100 + j;
    OK(MPI_Alltoall(sendbuf, 1, MPI_INT, recvbuf, 1, MPI_INT, inter));
    for (int j = 0; j < rsize; j++)
        CHECK(recvbuf[j] == world_of(!color, j) * 100 + lrank, "alltoall [%d] = %d", j, recvbuf[j]);
    /* Alltoallv: (local a -> remote b) carries (a + 2 b) % 3 + 1 ints */
    for (int j = 0, at = 0; j < rsize; j++) {
        scounts[j] = (lrank + 2 * j) % 3 + 1, sdispls[j] = at, at += scounts[j];
        for (int k = 0; k < scounts[j]; k++)
            sendbuf[sdispls[j] + k] = rank * 100 + j * 10 + k;
        rcounts[j] = (j + 2 * lrank) % 3 + 1, rdispls[j] = 4 * j;
    }
    memset(recvbuf, 0xff, sizeof(recvbuf));
    OK(MPI_Alltoallv(sendbuf, scounts, sdispls, MPI_INT, recvbuf, rcounts, rdispls, MPI_INT,
                     inter));
    for (int j = 0; j < rsize; j++)
        for (int k = 0; k < rcounts[j]; k++)
            CHECK(recvbuf[4 * j + k] == world_of(!color, j) * 100 + lrank * 10 + k,
                  "alltoallv from %d [%d] = %d", j, k, recvbuf[4 * j + k]);
    /* Alltoallw: Alltoall with byte displacements and a type per peer */
    for (int j = 0; j < rsize; j++) {
        sendbuf[j] = rank * 100 + j + 50;
        scounts[j] = rcounts[j] = 1;
        sdispls[j] = (int)(j * sizeof(int));
        rdispls[j] = (int)((rsize - 1 - j) * sizeof(int));
        types[j] = MPI_INT;
    }
    OK(MPI_Alltoallw(sendbuf, scounts, sdispls, types, recvbuf, rcounts, rdispls, types, inter));
    for (int j = 0; j < rsize; j++)
        CHECK(recvbuf[rsize - 1 - j] == world_of(!color, j) * 100 + lrank + 50,
              "alltoallw from %d = %d", j, recvbuf[rsize - 1 - j]);
    /* Allreduce: each group gets the sum of the other's world ranks */
    sendbuf[0] = rank, sendbuf[1] = 1;
    OK(MPI_Allreduce(sendbuf, recvbuf, 2, MPI_INT, MPI_SUM, inter));
    CHECK(recvbuf[0] == sum_other && recvbuf[1] == rsize, "allreduce %d %d, want %d %d", recvbuf[0],
          recvbuf[1], sum_other, rsize);
    /* Reduce_scatter_block: vectors of lsize * rsize, rsize per process */
    for (int k = 0; k < total; k++)
        sendbuf[k] = rank + k;
    memset(recvbuf, 0xff, sizeof(recvbuf));
    OK(MPI_Reduce_scatter_block(sendbuf, recvbuf, rsize, MPI_INT, MPI_SUM, inter));
    for (int k = 0; k < rsize; k++)
        CHECK(recvbuf[k] == sum_other + rsize * (lrank * rsize + k),
              "reduce_scatter_block [%d] = %d", k, recvbuf[k]);
    /* Reduce_scatter: the same total, rank 0 one more, the last one less */
    for (int i = 0; i < lsize; i++)
        counts[i] = rsize;
    if (lsize > 1)
        counts[0]++, counts[lsize - 1]--;
    memset(recvbuf, 0xff, sizeof(recvbuf));
    OK(MPI_Reduce_scatter(sendbuf, recvbuf, counts, MPI_INT, MPI_SUM, inter));
    {
        int first = 0;

        for (int i = 0; i < lrank; i++)
            first += counts[i];
        for (int k = 0; k < counts[lrank]; k++)
            CHECK(recvbuf[k] == sum_other + rsize * (first + k), "reduce_scatter [%d] = %d", k,
                  recvbuf[k]);
    }
}

/* the nonblocking collectives, all in flight at once, and a persistent one */
static void check_nonblocking(MPI_Comm inter)
{
    int root0 = root_arg(0, 0), root1 = root_arg(1, 0), sum_other = 0, total = lsize * rsize;
    int bc[4] = {-1, -1, -1, -1}, ga[16], ag[16], a2a_s[16], a2a_r[16], ar_s[2], ar_r[2] = {0, 0};
    int rd = -1, rsb_s[32], rsb_r[16], mine = rank;
    MPI_Request reqs[9];

    for (int i = 0; i < rsize; i++)
        sum_other += world_of(!color, i);
    if (root0 == MPI_ROOT)
        for (int i = 0; i < 4; i++)
            bc[i] = 40 + i;
    for (int j = 0; j < rsize; j++)
        a2a_s[j] = rank * 100 + j;
    ar_s[0] = rank, ar_s[1] = 1;
    for (int k = 0; k < total; k++)
        rsb_s[k] = rank + k;
    memset(ga, 0xff, sizeof(ga));
    OK(MPI_Ibarrier(inter, &reqs[0]));
    OK(MPI_Ibcast(bc, 4, MPI_INT, root0, inter, &reqs[1]));
    OK(MPI_Igather(&mine, 1, MPI_INT, ga, 1, MPI_INT, root1, inter, &reqs[2]));
    OK(MPI_Iallgather(&mine, 1, MPI_INT, ag, 1, MPI_INT, inter, &reqs[3]));
    OK(MPI_Ialltoall(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, inter, &reqs[4]));
    OK(MPI_Iallreduce(ar_s, ar_r, 2, MPI_INT, MPI_SUM, inter, &reqs[5]));
    OK(MPI_Ireduce(&mine, &rd, 1, MPI_INT, MPI_SUM, root0, inter, &reqs[6]));
    OK(MPI_Ireduce_scatter_block(rsb_s, rsb_r, rsize, MPI_INT, MPI_SUM, inter, &reqs[7]));
    OK(MPI_Ibarrier(inter, &reqs[8]));
    OK(MPI_Waitall(9, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 4; i++)
        CHECK(bc[i] == (root0 == MPI_PROC_NULL ? -1 : 40 + i), "ibcast [%d] = %d", i, bc[i]);
    for (int i = 0; root1 == MPI_ROOT && i < rsize; i++)
        CHECK(ga[i] == world_of(!color, i), "igather [%d] = %d", i, ga[i]);
    for (int i = 0; i < rsize; i++)
        CHECK(ag[i] == world_of(!color, i), "iallgather [%d] = %d", i, ag[i]);
    for (int j = 0; j < rsize; j++)
        CHECK(a2a_r[j] == world_of(!color, j) * 100 + lrank, "ialltoall [%d] = %d", j, a2a_r[j]);
    CHECK(ar_r[0] == sum_other && ar_r[1] == rsize, "iallreduce %d %d", ar_r[0], ar_r[1]);
    if (root0 == MPI_ROOT)
        CHECK(rd == sum_other, "ireduce %d, want %d", rd, sum_other);
    for (int k = 0; k < rsize; k++)
        CHECK(rsb_r[k] == sum_other + rsize * (lrank * rsize + k),
              "ireduce_scatter_block [%d] = %d", k, rsb_r[k]);

    /* persistent: started twice, the input changed in between */
    OK(MPI_Allreduce_init(ar_s, ar_r, 2, MPI_INT, MPI_MAX, inter, MPI_INFO_NULL, &reqs[0]));
    for (int round = 0; round < 2; round++) {
        ar_s[0] = rank + 10 * round;
        OK(MPI_Start(&reqs[0]));
        OK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
        CHECK(ar_r[0] == (color == 0 ? nworld - 1 : group_size(0) - 1) + 10 * round,
              "persistent allreduce round %d: %d", round, ar_r[0]);
    }
    OK(MPI_Request_free(&reqs[0]));
}

static void check_merge(MPI_Comm inter)
{
    int want_first[3] = {0, 1, 0}; /* which group comes first for each case */

    for (int c = 0; c < 3; c++) {
        /* high = color (group 0 first); high = !color (group 1 first);
         * both high = 0 (the group of the lower leader's world rank: 0) */
        int high = c == 0 ? color : c == 1 ? !color : 0, r = -1, n = -1, sum = 0;
        MPI_Comm merged;
        int first = want_first[c];
        int want = color == first ? lrank : group_size(first) + lrank;

        OK(MPI_Intercomm_merge(inter, high, &merged));
        OK(MPI_Comm_rank(merged, &r));
        OK(MPI_Comm_size(merged, &n));
        CHECK(n == nworld, "merged size %d", n);
        CHECK(r == want, "case %d: merged rank %d, want %d", c, r, want);
        OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged));
        CHECK(sum == nworld * (nworld - 1) / 2, "allreduce on the merged communicator: %d", sum);
        OK(MPI_Comm_free(&merged));
    }
}

static void check_constructors(MPI_Comm inter)
{
    MPI_Comm dup, split, created;
    MPI_Group group, sub;
    int result = -1, flag = 0, n = -1, sum = 0, excluded;

    OK(MPI_Comm_dup(inter, &dup));
    OK(MPI_Comm_test_inter(dup, &flag));
    CHECK(flag, "the duplicate is no intercommunicator");
    OK(MPI_Comm_compare(inter, dup, &result));
    CHECK(result == MPI_CONGRUENT, "compare with the duplicate: %d", result);
    OK(MPI_Comm_compare(inter, inter, &result));
    CHECK(result == MPI_IDENT, "compare with itself: %d", result);
    OK(MPI_Comm_compare(inter, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_UNEQUAL, "compare with MPI_COMM_WORLD: %d", result);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup));
    {
        int want = 0;

        for (int i = 0; i < rsize; i++)
            want += world_of(!color, i);
        CHECK(sum == want, "allreduce on the duplicate: %d, want %d", sum, want);
    }
    check_p2p(dup);
    OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "MPI_Comm_free left the handle");

    /* split: local rank 1 of each group stays out */
    OK(MPI_Comm_split(inter, lrank == 1 ? MPI_UNDEFINED : 3, -lrank, &split));
    if (lrank == 1) {
        CHECK(split == MPI_COMM_NULL, "rank 1 got a communicator from the split");
    } else {
        int want_remote = rsize > 1 ? rsize - 1 : rsize, want_local = lsize > 1 ? lsize - 1 : 1;
        int r = -1, v = -1, want_max = world_of(!color, 0);

        OK(MPI_Comm_remote_size(split, &n));
        CHECK(n == want_remote, "split: remote size %d, want %d", n, want_remote);
        OK(MPI_Comm_size(split, &n));
        CHECK(n == want_local, "split: size %d, want %d", n, want_local);
        /* keys -lrank: the order is reversed; rank 0 holds the largest */
        OK(MPI_Comm_rank(split, &r));
        CHECK(r == (lrank == 0 ? want_local - 1 : want_local - 1 - (lrank - 1)),
              "split: rank %d for local rank %d", r, lrank);
        /* the largest world rank of the other side's members (all but
         * its local rank 1) */
        for (int i = 2; i < rsize; i++)
            want_max = world_of(!color, i) > want_max ? world_of(!color, i) : want_max;
        OK(MPI_Allreduce(&rank, &v, 1, MPI_INT, MPI_MAX, split));
        CHECK(v == want_max, "split: allreduce max %d, want %d", v, want_max);
        OK(MPI_Comm_free(&split));
    }

    /* create: the group of the local processes but the last */
    OK(MPI_Comm_group(inter, &group));
    excluded = lsize - 1;
    OK(MPI_Group_excl(group, lsize > 1 ? 1 : 0, &excluded, &sub));
    OK(MPI_Comm_create(inter, sub, &created));
    if (lsize > 1 && lrank == lsize - 1) {
        CHECK(created == MPI_COMM_NULL, "the excluded process got a communicator");
    } else {
        int want_remote = rsize > 1 ? rsize - 1 : 1;

        CHECK(created != MPI_COMM_NULL, "MPI_Comm_create gave MPI_COMM_NULL");
        if (created != MPI_COMM_NULL) {
            OK(MPI_Comm_remote_size(created, &n));
            CHECK(n == want_remote, "create: remote size %d, want %d", n, want_remote);
            OK(MPI_Barrier(created));
            OK(MPI_Comm_free(&created));
        }
    }
    MPI_Group_free(&sub);
    MPI_Group_free(&group);
}

static void check_errors(MPI_Comm inter)
{
    MPI_Request req;
    MPI_Comm out;
    int n, v = 0, w;

    CHECK(MPI_Comm_remote_size(MPI_COMM_WORLD, &n) == MPI_ERR_COMM,
          "MPI_Comm_remote_size of an intracommunicator");
    CHECK(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &out) == MPI_ERR_COMM,
          "MPI_Intercomm_merge of an intracommunicator");
    CHECK(MPI_Intercomm_create(inter, 0, MPI_COMM_WORLD, 0, 1, &out) == MPI_ERR_COMM,
          "MPI_Intercomm_create from an intercommunicator");
    CHECK(MPI_Scan(&v, &w, 1, MPI_INT, MPI_SUM, inter) == MPI_ERR_COMM, "MPI_Scan");
    CHECK(MPI_Iscan(&v, &w, 1, MPI_INT, MPI_SUM, inter, &req) == MPI_ERR_COMM, "MPI_Iscan");
    CHECK(MPI_Iallreduce(MPI_IN_PLACE, &w, 1, MPI_INT, MPI_SUM, inter, &req) == MPI_ERR_BUFFER,
          "MPI_IN_PLACE in MPI_Iallreduce");
    CHECK(MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_INT, MPI_SUM, inter) == MPI_ERR_BUFFER,
          "MPI_IN_PLACE in MPI_Allreduce");
    CHECK(MPI_Bcast(&v, 1, MPI_INT, rsize, inter) == MPI_ERR_ROOT, "a root out of range");
    CHECK(MPI_Send(&v, 1, MPI_INT, rsize, 0, inter) == MPI_ERR_RANK, "a rank out of range");
    CHECK(MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &out) == MPI_ERR_COMM,
          "MPI_Comm_split_type");
}

/* The same two groups joined by MPI_Intercomm_create_from_groups (no
 * parent communicator), checked as the first; then its errors. */
static void check_from_groups(void)
{
    MPI_Group world_group, groups[2];
    MPI_Comm inter;
    int *ranks = malloc((size_t)nworld * sizeof(int)), rc;

    if (ranks == NULL) {
        CHECK(0, "out of memory");
        return;
    }
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    for (int g = 0; g < 2; g++) {
        for (int r = 0; r < group_size(g); r++)
            ranks[r] = world_of(g, r);
        OK(MPI_Group_incl(world_group, group_size(g), ranks, &groups[g]));
    }
    rc = MPI_Intercomm_create_from_groups(groups[color], 0, groups[!color], 0, "intercomm test",
                                          MPI_INFO_NULL, MPI_ERRORS_RETURN, &inter);
    CHECK(rc == MPI_SUCCESS, "MPI_Intercomm_create_from_groups returned %d", rc);
    if (rc == MPI_SUCCESS) {
        check_shape(inter);
        check_p2p(inter);
        check_rooted(inter, 1);
        check_all(inter);
        OK(MPI_Comm_free(&inter));
    }
    /* errors, each found by every process alike (no communication) */
    CHECK(MPI_Intercomm_create_from_groups(groups[color], 0, groups[color], 0, "overlap",
                                           MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                           &inter) == MPI_ERR_GROUP,
          "overlapping groups");
    CHECK(MPI_Intercomm_create_from_groups(groups[color], lsize, groups[!color], 0, "leader",
                                           MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                           &inter) == MPI_ERR_RANK,
          "a local leader out of range");
    CHECK(MPI_Intercomm_create_from_groups(groups[!color], 0, groups[color], 0, "not mine",
                                           MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                           &inter) == MPI_ERR_GROUP,
          "a local group without this process");
    for (int g = 0; g < 2; g++)
        OK(MPI_Group_free(&groups[g]));
    OK(MPI_Group_free(&world_group));
    free(ranks);
}

int main(int argc, char **argv)
{
    MPI_Comm local, inter;
    int rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nworld);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (nworld < 3) {
        if (rank == 0)
            printf("intercomm: needs 3 ranks or more\n");
        MPI_Finalize();
        return 1;
    }
    color = rank < group_size(0) ? 0 : 1;
    lsize = group_size(color);
    rsize = group_size(!color);
    lrank = color == 0 ? rank : nworld - 1 - rank;
    OK(MPI_Comm_split(MPI_COMM_WORLD, color, color == 0 ? rank : -rank, &local));
    /* the leaders: world 0 (group 0), world N - 1 (group 1) */
    rc = MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? nworld - 1 : 0, 77, &inter);
    CHECK(rc == MPI_SUCCESS, "MPI_Intercomm_create returned %d", rc);
    if (rc == MPI_SUCCESS) {
        check_shape(inter);
        check_p2p(inter);
        check_rooted(inter, 0);
        check_rooted(inter, 1);
        check_all(inter);
        check_nonblocking(inter);
        check_merge(inter);
        check_constructors(inter);
        check_errors(inter);
        OK(MPI_Comm_free(&inter));
        CHECK(inter == MPI_COMM_NULL, "MPI_Comm_free left the handle");
    }
    check_from_groups();
    OK(MPI_Comm_free(&local));
    rc = check_summary("intercomm", MPI_COMM_WORLD, 99);
    MPI_Finalize();
    return rc;
}
