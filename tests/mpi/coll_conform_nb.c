/*
 * pbt-mpi-coll-conform-nb: the cases of coll_conform.c (built again here
 * with CONFORM_NB, so that every collective call goes through its
 * nonblocking form, MPI_I<name> + MPI_Wait, then through its persistent
 * form, MPI_<Name>_init + MPI_Start + MPI_Wait, started twice where the
 * call does not overwrite its input), and what only these forms can do:
 * several collectives in flight at once on different communicators,
 * completed in another order than they were started; persistent requests
 * started again after their input changed, and together by MPI_Startall.
 *
 *   pbt-mpi-coll-conform-nb [options and cases of pbt-mpi-coll-conform]
 */
#define CONFORM_NB 1
#define CONFORM_NAME "coll_conform_nb"
#define CONFORM_NB_EXTRA() nb_extra()

static void nb_extra(void);

#include "coll_conform.c"

/* Four collectives started on four communicators (the world, a dup, the
 * halves by parity, the world in reversed order), then completed in
 * reverse order. */
static void nb_in_flight(void)
{
    MPI_Comm dup, half, rev;
    MPI_Request req[5];
    long n = 1000, nb = 5000, na = 7;
    tinfo_t *ti = tfind(MPI_INT);
    int wme, wnp, hme, hnp, rme, rnp, root;
    int *sum_in = xmalloc(n * sizeof(int)), *sum_out = xmalloc(n * sizeof(int));
    char *bc = sentinel_buf(nb * sizeof(int)), *a2a_in, *a2a_out;
    uint32_t scan_in[3 * 4], scan_out[3 * 4];
    char e[96], g[96];

    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &rev));
    MPI_Comm_rank(MPI_COMM_WORLD, &wme);
    MPI_Comm_size(MPI_COMM_WORLD, &wnp);
    MPI_Comm_rank(half, &hme);
    MPI_Comm_size(half, &hnp);
    MPI_Comm_rank(rev, &rme);
    MPI_Comm_size(rev, &rnp);
    root = wnp - 1;
    a2a_in = sentinel_buf((size_t)(na * hnp) * sizeof(int));
    a2a_out = sentinel_buf((size_t)(na * hnp) * sizeof(int));

    for (long j = 0; j < n; j++)
        put_num(&sum_in[j], ti, gen(O_SUM, ti, wme, j, wnp));
    if (wme == root)
        put_stream(bc, &lay[L_INT], nb, root, 0);
    for (int d = 0; d < hnp; d++)
        put_stream(a2a_in + (size_t)(d * na) * sizeof(int), &lay[L_INT], na, hme, d);
    for (long j = 0; j < 3; j++)
        put_num(&scan_in[4 * j], &mat_type, gen(O_UMAT, &mat_type, rme, j, rnp));

    begin("several in flight", 0, "-", "-", 0, -1, 0);
    OK(MPI_Iallreduce(sum_in, sum_out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[0]));
    OK(MPI_Ibcast(bc, (int)nb, MPI_INT, root, dup, &req[1]));
    OK(MPI_Ialltoall(a2a_in, (int)na, MPI_INT, a2a_out, (int)na, MPI_INT, half, &req[2]));
    OK(MPI_Iscan(scan_in, scan_out, 3, mat_type.type, ops[O_UMAT].op, rev, &req[3]));
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &req[4]));
    for (int i = 4; i >= 0; i--)
        OK(MPI_Wait(&req[i], MPI_STATUS_IGNORE));

    use_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD (in flight with three others)");
    begin("MPI_Iallreduce", 0, "MPI_SUM", "MPI_INT", n, -1, 0);
    for (long j = 0; j < n; j++) {
        num_t want = fold(O_SUM, ti, 0, wnp - 1, j, wnp), got = get_num(&sum_out[j], ti);

        if (!num_equal(ti, want, got)) {
            num_str(e, sizeof(e), ti, want);
            num_str(g, sizeof(g), ti, got);
            fail_elem(j, e, g);
        }
    }
    use_comm(dup, "a dup of MPI_COMM_WORLD (in flight with three others)");
    begin("MPI_Ibcast", 0, "-", "MPI_INT", nb, root, 0);
    check_stream(bc, &lay[L_INT], nb, root, 0, NULL, NULL);
    use_comm(half, "split by parity (in flight with three others)");
    begin("MPI_Ialltoall", 0, "-", "MPI_INT", na, -1, 0);
    for (int s = 0; s < hnp; s++)
        check_stream(a2a_out + (size_t)(s * na) * sizeof(int), &lay[L_INT], na, s, hme, NULL, NULL);
    use_comm(rev, "split in reversed rank order (in flight with three others)");
    begin("MPI_Iscan", 0, ops[O_UMAT].name, mat_type.name, 3, -1, 0);
    for (long j = 0; j < 3; j++) {
        num_t want = fold(O_UMAT, &mat_type, 0, rme, j, rnp);
        num_t got = get_num(&scan_out[4 * j], &mat_type);

        if (!num_equal(&mat_type, want, got)) {
            num_str(e, sizeof(e), &mat_type, want);
            num_str(g, sizeof(g), &mat_type, got);
            fail_elem(j, e, g);
        }
    }
    free(sum_in);
    free(sum_out);
    free(bc);
    free(a2a_in);
    free(a2a_out);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
}

/* Persistent Allreduce (world) and Bcast (a dup) initialized once,
 * started together by MPI_Startall three times, the input changed
 * before each start: each start must read the buffers as they are. */
static void nb_persistent_restart(void)
{
    MPI_Comm dup;
    MPI_Request req[2];
    long n = 300, nb = 2000;
    tinfo_t *ti = tfind(MPI_INT);
    int *in = xmalloc(n * sizeof(int)), *out = xmalloc(n * sizeof(int));
    int *bc = xmalloc(nb * sizeof(int));
    int root;
    char e[96], g[96];

    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    use_comm(MPI_COMM_WORLD, "MPI_COMM_WORLD (persistent, started 3 times)");
    root = np / 2;
    OK(MPI_Allreduce_init(in, out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &req[0]));
    OK(MPI_Bcast_init(bc, (int)nb, MPI_INT, root, dup, MPI_INFO_NULL, &req[1]));
    for (int round = 0; round < 3; round++) {
        long shift = round * 7919; /* new values each round */

        for (long j = 0; j < n; j++)
            put_num(&in[j], ti, gen(O_SUM, ti, me, j + shift, np));
        for (long j = 0; j < nb; j++)
            bc[j] = me == root ? dval(root, round, j) : -1;
        begin("MPI_Startall", 0, "-", "-", round, -1, 0);
        if (!call_ok(MPI_Startall(2, req)) || !call_ok(MPI_Waitall(2, req, MPI_STATUSES_IGNORE)))
            break;
        begin("MPI_Allreduce_init", 0, "MPI_SUM", "MPI_INT", n, -1, 0);
        for (long j = 0; j < n; j++) {
            num_t want = fold(O_SUM, ti, 0, np - 1, j + shift, np), got = get_num(&out[j], ti);

            if (!num_equal(ti, want, got)) {
                num_str(e, sizeof(e), ti, want);
                num_str(g, sizeof(g), ti, got);
                fail_elem(j, e, g);
            }
        }
        begin("MPI_Bcast_init", 0, "-", "MPI_INT", nb, root, 0);
        check_stream(bc, &lay[L_INT], nb, root, round, NULL, NULL);
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    MPI_Comm_free(&dup);
    free(in);
    free(out);
    free(bc);
}

static void nb_extra(void)
{
    flavour_name = "nonblocking";
    nb_in_flight();
    flavour_name = "persistent";
    nb_persistent_restart();
}
