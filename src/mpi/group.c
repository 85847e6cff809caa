/*
 * Groups (MPI-5.0 section 7.3) and the communicator constructors built on
 * them: MPI_Comm_create, MPI_Comm_create_group, MPI_Comm_split_type.
 *
 * A group is the list of its members' ranks in MPI_COMM_WORLD, in group
 * order.  MPI_GROUP_EMPTY is a static object; every other group is an
 * object of the handle registry (handle.h), so a freed or made-up handle
 * is MPI_ERR_GROUP, never read.  An operation whose result has no
 * member returns MPI_GROUP_EMPTY, as the standard says.  Group calls need a
 * running MPI (MPI_ERR_OTHER when neither MPI_Init nor a session is in
 * force); their errors go to MPI_COMM_SELF's error handler.
 */
#include <postbox/job.h>
#include <postbox/rsm.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/comm.h"
#include "mpi/datatype.h"
#include "mpi/group.h"
#include "mpi/engine/handle.h"
#include "mpi/info.h"
#include "mpi/intercomm.h"
#include "mpi/p2p.h"

typedef struct MPI_ABI_Group pb_group_t;

struct MPI_ABI_Group {
    int size;
    int rank;      /* this process's rank in the group, or MPI_UNDEFINED */
    int *world;    /* the world rank of each member, in group order */
    void *session; /* the session it came from (a process set, or a group or
                      communicator made from one), or NULL */
};

static pb_group_t group_empty = {0, MPI_UNDEFINED, NULL, NULL};

/* The group @handle stands for, or NULL (MPI_GROUP_NULL, freed, made up). */
static pb_group_t *group_of(MPI_Group handle)
{
    if (handle == MPI_GROUP_EMPTY)
        return &group_empty;
    if (pb_eng_handle_valid(PB_ENG_HANDLE_GROUP, handle))
        return (pb_group_t *)handle;
    return NULL;
}

/* The group @handle, argument @what of @func, or a raised error:
 * MPI_ERR_OTHER outside MPI_Init .. MPI_Finalize, MPI_ERR_GROUP. */
static int group_arg(MPI_Group handle, const char *func, const char *what, pb_group_t **g_p)
{
    if (!pb_mpi_active())
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "called while MPI is not running (neither MPI_Init nor a session "
                            "is in force)");
    *g_p = group_of(handle);
    if (*g_p != NULL)
        return MPI_SUCCESS;
    if (handle == MPI_GROUP_NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_GROUP, func, "%s is MPI_GROUP_NULL", what);
    return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_GROUP, func,
                        "%s (%p) is not a group (freed, or never created)", what, (void *)handle);
}

/* Store in *@out the group of the @n world ranks @world (malloc'ed, taken
 * over; freed on every path), of @session (or NULL).  @return MPI_SUCCESS
 * or the raised MPI_ERR_NO_MEM. */
static int group_new(int n, int *world, void *session, const char *func, MPI_Group *out)
{
    pb_group_t *g;
    int me = pb_mpi_my_slot();

    if (n == 0) {
        free(world);
        *out = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    g = pb_eng_handle_new(PB_ENG_HANDLE_GROUP, sizeof(*g));
    if (g == NULL) {
        free(world);
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
    }
    g->size = n;
    g->world = world;
    g->session = session;
    g->rank = MPI_UNDEFINED;
    for (int i = 0; i < n; i++) {
        if (world[i] == me)
            g->rank = i;
    }
    *out = (MPI_Group)g;
    return MPI_SUCCESS;
}

/* An array of @n ints for a new group (at least one, so that malloc(0)
 * is never asked), or NULL after raising MPI_ERR_NO_MEM in @rc_p. */
static int *rank_array(size_t n, const char *func, int *rc_p)
{
    int *a = malloc((n > 0 ? n : 1) * sizeof(int));

    if (a == NULL)
        *rc_p = pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
    return a;
}

int pb_mpi_group_from_world(int n, const int *world, void *session, const char *func,
                            MPI_Group *out)
{
    int rc = MPI_SUCCESS, *copy = rank_array((size_t)n, func, &rc);

    if (copy == NULL)
        return rc;
    memcpy(copy, world, (size_t)n * sizeof(int));
    return group_new(n, copy, session, func, out);
}

/* The rank in @g of each world rank (-1 for non-members): an array of the
 * world's size, or NULL after raising MPI_ERR_NO_MEM in @rc_p. */
static int *group_positions(const pb_group_t *g, const char *func, int *rc_p)
{
    int nworld = pb_mpi_slots();
    int *pos = rank_array((size_t)nworld, func, rc_p);

    if (pos == NULL)
        return NULL;
    for (int w = 0; w < nworld; w++)
        pos[w] = -1;
    for (int i = 0; i < g->size; i++)
        pos[g->world[i]] = i;
    return pos;
}

/* ---- queries ------------------------------------------------------------------------ */

/* Make *@group, the group of @comm's ranks in rank order (an
 * intercommunicator's local group).
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_ARG (NULL); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_group", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    if (group == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_group", "group is NULL");
    if (pb_mpi_comm_is_inter(c))
        c = c->local_group;
    return pb_mpi_group_from_world(c->size, c->world, c->session, "MPI_Comm_group", group);
}
PB_MPI_WEAK_ALIAS(MPI_Comm_group, PMPI_Comm_group);

/* *@size = the number of members of @group.
 * @return MPI_SUCCESS; MPI_ERR_GROUP; MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Group_size(MPI_Group group, int *size)
{
    PB_MPI_THREAD_GUARD;
    pb_group_t *g;
    int rc = group_arg(group, "MPI_Group_size", "group", &g);

    if (rc != MPI_SUCCESS)
        return rc;
    if (size == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_size", "size is NULL");
    *size = g->size;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Group_size, PMPI_Group_size);

/* *@rank = this process's rank in @group, MPI_UNDEFINED if not a member.
 * @return MPI_SUCCESS; MPI_ERR_GROUP; MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Group_rank(MPI_Group group, int *rank)
{
    PB_MPI_THREAD_GUARD;
    pb_group_t *g;
    int rc = group_arg(group, "MPI_Group_rank", "group", &g);

    if (rc != MPI_SUCCESS)
        return rc;
    if (rank == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_rank", "rank is NULL");
    *rank = g->rank;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Group_rank, PMPI_Group_rank);

/* For each of the @n ranks @ranks1 of @group1, its rank in @group2 in
 * @ranks2: MPI_UNDEFINED when that process is not in @group2,
 * MPI_PROC_NULL for MPI_PROC_NULL.
 * @return MPI_SUCCESS; MPI_ERR_GROUP; MPI_ERR_ARG (negative n, NULL
 *         arrays); MPI_ERR_RANK (a rank not in @group1); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[],
                                         MPI_Group group2, int ranks2[])
{
    PB_MPI_THREAD_GUARD;
    static const char func[] = "MPI_Group_translate_ranks";
    pb_group_t *g1, *g2;
    int rc = group_arg(group1, func, "group1", &g1), *pos2;

    if (rc == MPI_SUCCESS)
        rc = group_arg(group2, func, "group2", &g2);
    if (rc != MPI_SUCCESS)
        return rc;
    if (n < 0 || (n > 0 && (ranks1 == NULL || ranks2 == NULL)))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            n < 0 ? "n %d is negative" : "ranks1 or ranks2 is NULL", n);
    for (int i = 0; i < n; i++) {
        if (ranks1[i] != MPI_PROC_NULL && (ranks1[i] < 0 || ranks1[i] >= g1->size))
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_RANK, func,
                                "ranks1[%d] = %d is not a rank of group1 (0..%d)", i, ranks1[i],
                                g1->size - 1);
    }
    pos2 = group_positions(g2, func, &rc);
    if (pos2 == NULL)
        return rc;
    for (int i = 0; i < n; i++) {
        int r = ranks1[i];

        ranks2[i] = r == MPI_PROC_NULL        ? MPI_PROC_NULL
                    : pos2[g1->world[r]] >= 0 ? pos2[g1->world[r]]
                                              : MPI_UNDEFINED;
    }
    free(pos2);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Group_translate_ranks, PMPI_Group_translate_ranks);

/* *@result = MPI_IDENT (same members, same order), MPI_SIMILAR (same
 * members, another order) or MPI_UNEQUAL.
 * @return MPI_SUCCESS; MPI_ERR_GROUP; MPI_ERR_ARG (NULL); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    PB_MPI_THREAD_GUARD;
    pb_group_t *g1, *g2;
    int rc = group_arg(group1, "MPI_Group_compare", "group1", &g1), *pos2, same_order = 1;

    if (rc == MPI_SUCCESS)
        rc = group_arg(group2, "MPI_Group_compare", "group2", &g2);
    if (rc != MPI_SUCCESS)
        return rc;
    if (result == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_compare", "result is NULL");
    if (g1->size != g2->size) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    pos2 = group_positions(g2, "MPI_Group_compare", &rc);
    if (pos2 == NULL)
        return rc;
    *result = MPI_IDENT;
    for (int i = 0; i < g1->size; i++) {
        if (pos2[g1->world[i]] < 0) {
            *result = MPI_UNEQUAL;
            break;
        }
        same_order &= pos2[g1->world[i]] == i;
    }
    if (*result == MPI_IDENT && !same_order)
        *result = MPI_SIMILAR;
    free(pos2);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Group_compare, PMPI_Group_compare);

/* ---- set operations ---------------------------------------------------------------- */

enum {
    SET_UNION,
    SET_INTERSECTION,
    SET_DIFFERENCE
};

/* The union (group1's members, then group2's that group1 lacks), the
 * intersection (group1's members that are in group2) or the difference
 * (group1's that are not), each in that order. */
static int group_set(int op, MPI_Group group1, MPI_Group group2, MPI_Group *newgroup,
                     const char *func)
{
    pb_group_t *g1, *g2;
    int rc = group_arg(group1, func, "group1", &g1), *pos, *world, n = 0;

    if (rc == MPI_SUCCESS)
        rc = group_arg(group2, func, "group2", &g2);
    if (rc != MPI_SUCCESS)
        return rc;
    if (newgroup == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "newgroup is NULL");
    /* membership in group2 for the intersection and difference, in group1
     * for the union */
    pos = group_positions(op == SET_UNION ? g1 : g2, func, &rc);
    if (pos == NULL)
        return rc;
    world = rank_array((size_t)g1->size + (size_t)g2->size, func, &rc);
    if (world == NULL) {
        free(pos);
        return rc;
    }
    if (op == SET_UNION) {
        for (n = 0; n < g1->size; n++)
            world[n] = g1->world[n];
        for (int i = 0; i < g2->size; i++) {
            if (pos[g2->world[i]] < 0)
                world[n++] = g2->world[i];
        }
    } else {
        for (int i = 0; i < g1->size; i++) {
            if ((pos[g1->world[i]] >= 0) == (op == SET_INTERSECTION))
                world[n++] = g1->world[i];
        }
    }
    free(pos);
    return group_new(n, world, g1->session, func, newgroup);
}

/* Make *@newgroup = @group1 ∪ @group2 (group1's order, then group2's).
 * @return MPI_SUCCESS; MPI_ERR_GROUP; MPI_ERR_ARG (NULL); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    PB_MPI_THREAD_GUARD;

    return group_set(SET_UNION, group1, group2, newgroup, "MPI_Group_union");
}
PB_MPI_WEAK_ALIAS(MPI_Group_union, PMPI_Group_union);

/* Make *@newgroup = @group1 ∩ @group2 (in group1's order).
 * @return MPI_SUCCESS; MPI_ERR_GROUP; MPI_ERR_ARG (NULL); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    PB_MPI_THREAD_GUARD;

    return group_set(SET_INTERSECTION, group1, group2, newgroup, "MPI_Group_intersection");
}
PB_MPI_WEAK_ALIAS(MPI_Group_intersection, PMPI_Group_intersection);

/* Make *@newgroup = @group1 \ @group2 (in group1's order).
 * @return MPI_SUCCESS; MPI_ERR_GROUP; MPI_ERR_ARG (NULL); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    PB_MPI_THREAD_GUARD;

    return group_set(SET_DIFFERENCE, group1, group2, newgroup, "MPI_Group_difference");
}
PB_MPI_WEAK_ALIAS(MPI_Group_difference, PMPI_Group_difference);

/* ---- subsets ------------------------------------------------------------------------- */

/* Check the @n ranks @ranks of @g for MPI_Group_incl/_excl: each in
 * 0..size-1 and distinct; mark them in @seen (g->size entries, zeroed). */
static int check_rank_list(const pb_group_t *g, int n, const int ranks[], char *seen,
                           const char *func)
{
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= g->size)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_RANK, func,
                                "ranks[%d] = %d is not a rank of the group (0..%d)", i, ranks[i],
                                g->size - 1);
        if (seen[ranks[i]])
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_RANK, func, "rank %d is listed twice",
                                ranks[i]);
        seen[ranks[i]] = 1;
    }
    return MPI_SUCCESS;
}

/* MPI_Group_incl (@incl) or _excl of the @n ranks @ranks. */
static int group_subset(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup, int incl,
                        const char *func)
{
    pb_group_t *g;
    int rc = group_arg(group, func, "group", &g), *world, k = 0;
    char *seen;

    if (rc != MPI_SUCCESS)
        return rc;
    if (newgroup == NULL || n < 0 || n > g->size || (n > 0 && ranks == NULL))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            newgroup == NULL ? "newgroup is NULL"
                            : ranks == NULL && n > 0
                                ? "ranks is NULL"
                                : "n %d is not in 0..%d (the size of the group)",
                            n, g->size);
    seen = calloc((size_t)g->size + 1, 1);
    world = rank_array((size_t)g->size, func, &rc);
    if (seen == NULL || world == NULL) {
        free(seen);
        free(world);
        return world == NULL ? rc
                             : pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
    }
    rc = check_rank_list(g, n, ranks, seen, func);
    if (rc == MPI_SUCCESS && incl) {
        for (int i = 0; i < n; i++)
            world[k++] = g->world[ranks[i]];
    } else if (rc == MPI_SUCCESS) {
        for (int r = 0; r < g->size; r++) {
            if (!seen[r])
                world[k++] = g->world[r];
        }
    }
    free(seen);
    if (rc != MPI_SUCCESS) {
        free(world);
        return rc;
    }
    return group_new(k, world, g->session, func, newgroup);
}

/* Make *@newgroup of the @n ranks @ranks of @group, in that order (n = 0:
 * MPI_GROUP_EMPTY).  @return MPI_SUCCESS; MPI_ERR_GROUP; MPI_ERR_ARG (n
 * not in 0..size, NULL); MPI_ERR_RANK (a rank not in the group, or twice);
 * MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    PB_MPI_THREAD_GUARD;

    return group_subset(group, n, ranks, newgroup, 1, "MPI_Group_incl");
}
PB_MPI_WEAK_ALIAS(MPI_Group_incl, PMPI_Group_incl);

/* Make *@newgroup of the members of @group but its @n ranks @ranks, in
 * group order.  @return as MPI_Group_incl. */
PB_EXPORT int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    PB_MPI_THREAD_GUARD;

    return group_subset(group, n, ranks, newgroup, 0, "MPI_Group_excl");
}
PB_MPI_WEAK_ALIAS(MPI_Group_excl, PMPI_Group_excl);

/* Expand the @n triplets (first, last, stride) of @ranges into the rank
 * list *@ranks_p (malloc'ed) of *@count_p ranks of @g: first, first +
 * stride, ... while not past last (a triplet going the other way than its
 * stride is empty).  Every rank must be in the group, and distinct. */
static int expand_ranges(const pb_group_t *g, int n, int ranges[][3], int **ranks_p, int *count_p,
                         const char *func)
{
    int rc = MPI_SUCCESS, count = 0, *ranks;
    char *seen;

    if (n < 0 || (n > 0 && ranges == NULL))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                            n < 0 ? "n %d is negative" : "ranges is NULL", n);
    seen = calloc((size_t)g->size + 1, 1);
    ranks = rank_array((size_t)g->size, func, &rc);
    if (seen == NULL || ranks == NULL) {
        free(seen);
        free(ranks);
        return ranks == NULL ? rc
                             : pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
    }
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        long long first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];

        if (stride == 0) {
            rc = pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "ranges[%d] has stride 0", i);
            break;
        }
        for (long long r = first; stride > 0 ? r <= last : r >= last; r += stride) {
            if (r < 0 || r >= g->size) {
                rc = pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_RANK, func,
                                  "ranges[%d] names rank %lld, not in the group (0..%d)", i, r,
                                  g->size - 1);
                break;
            }
            if (seen[r]) {
                rc = pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_RANK, func,
                                  "rank %lld is named twice (ranges[%d])", r, i);
                break;
            }
            seen[r] = 1;
            ranks[count++] = (int)r;
        }
    }
    free(seen);
    if (rc != MPI_SUCCESS) {
        free(ranks);
        return rc;
    }
    *ranks_p = ranks;
    *count_p = count;
    return MPI_SUCCESS;
}

/* MPI_Group_range_incl (@incl) or _excl. */
static int group_range(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup, int incl,
                       const char *func)
{
    pb_group_t *g;
    int rc = group_arg(group, func, "group", &g), *ranks = NULL, count = 0;

    if (rc != MPI_SUCCESS)
        return rc;
    if (newgroup == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func, "newgroup is NULL");
    rc = expand_ranges(g, n, ranges, &ranks, &count, func);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = group_subset(group, count, ranks, newgroup, incl, func);
    free(ranks);
    return rc;
}

/* Make *@newgroup of the ranks of @group that the @n triplets (first,
 * last, stride) of @ranges name, in that order.
 * @return MPI_SUCCESS; MPI_ERR_GROUP; MPI_ERR_ARG (negative n, NULL,
 *         stride 0); MPI_ERR_RANK (a rank not in the group, or named
 *         twice); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    PB_MPI_THREAD_GUARD;

    return group_range(group, n, ranges, newgroup, 1, "MPI_Group_range_incl");
}
PB_MPI_WEAK_ALIAS(MPI_Group_range_incl, PMPI_Group_range_incl);

/* Make *@newgroup of the members of @group the @n triplets of @ranges do
 * not name, in group order.  @return as MPI_Group_range_incl. */
PB_EXPORT int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    PB_MPI_THREAD_GUARD;

    return group_range(group, n, ranges, newgroup, 0, "MPI_Group_range_excl");
}
PB_MPI_WEAK_ALIAS(MPI_Group_range_excl, PMPI_Group_range_excl);

/* Free *@group and set it to MPI_GROUP_NULL.  Freeing MPI_GROUP_EMPTY is
 * allowed and does nothing else (the set operations return it, and
 * programs free what they get).
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL); MPI_ERR_GROUP. */
PB_EXPORT int PMPI_Group_free(MPI_Group *group)
{
    PB_MPI_THREAD_GUARD;
    pb_group_t *g;
    int rc;

    if (group == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_free", "group is NULL");
    rc = group_arg(*group, "MPI_Group_free", "group", &g);
    if (rc != MPI_SUCCESS)
        return rc;
    if (g != &group_empty) {
        free(g->world);
        pb_eng_handle_delete(PB_ENG_HANDLE_GROUP, g);
    }
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Group_free, PMPI_Group_free);

/* The integer of @group: MPI_GROUP_NULL's or MPI_GROUP_EMPTY's ABI value,
 * or the one a created group was given.  A bad handle raises MPI_ERR_GROUP
 * and gives MPI_GROUP_NULL's. */
PB_EXPORT int PMPI_Group_toint(MPI_Group group)
{
    pb_group_t *g;

    if ((uintptr_t)group < PB_ENG_HANDLE_INT_BASE)
        return (int)(uintptr_t)group;
    if (group_arg(group, "MPI_Group_toint", "group", &g) != MPI_SUCCESS)
        return (int)(uintptr_t)MPI_GROUP_NULL;
    return pb_eng_handle_toint(PB_ENG_HANDLE_GROUP, g);
}
PB_MPI_WEAK_ALIAS(MPI_Group_toint, PMPI_Group_toint);

/* The group of integer @group (MPI_Group_toint), or MPI_GROUP_NULL when
 * no live group has it. */
PB_EXPORT MPI_Group PMPI_Group_fromint(int group)
{
    void *g;

    if (group == (int)(uintptr_t)MPI_GROUP_EMPTY)
        return MPI_GROUP_EMPTY;
    if (group < PB_ENG_HANDLE_INT_BASE)
        return MPI_GROUP_NULL;
    g = pb_eng_handle_fromint(PB_ENG_HANDLE_GROUP, group);
    return g != NULL ? (MPI_Group)g : MPI_GROUP_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Group_fromint, PMPI_Group_fromint);

/* ---- communicators from groups ------------------------------------------------------ */

/* Check that every member of @g is a rank of @c (MPI_ERR_GROUP). */
static int group_in_comm(const pb_group_t *g, const pb_comm_t *c, MPI_Comm comm, const char *func)
{
    for (int i = 0; i < g->size; i++) {
        if (c->local[g->world[i]] < 0)
            return pb_mpi_raise(comm, MPI_ERR_GROUP, func,
                                "member %d of the group (world rank %d) is not in the "
                                "communicator",
                                i, g->world[i]);
    }
    return MPI_SUCCESS;
}

/* Make *@newcomm, a communicator of the members of @group (a subset of
 * @comm's ranks, in group order) with new contexts and @comm's error
 * handler; ranks of @comm outside @group get MPI_COMM_NULL.  Collective
 * over @comm: every rank passes the same group, or each one of disjoint
 * groups (MPI-2.2 and later; all of them share one new context, which no
 * two of them can confuse as they have no process in common).  On an
 * intercommunicator @group is a subset of the local group, and the members
 * of both sides' groups make a new intercommunicator (MPI_COMM_NULL when
 * either side is empty).
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_GROUP (not a group, or not a
 *         subset of @comm); MPI_ERR_ARG (NULL); MPI_ERR_NO_MEM; the
 *         engine's error class when the ranks cannot agree on a context. */
PB_EXPORT int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c, *n;
    pb_group_t *g;
    uint32_t context;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_create", &c);

    if (rc != MPI_SUCCESS)
        return rc;
    g = group_of(group);
    if (g == NULL)
        return pb_mpi_raise(comm, MPI_ERR_GROUP, "MPI_Comm_create", "group (%p) is not a group",
                            (void *)group);
    if (newcomm == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_create", "newcomm is NULL");
    rc = group_in_comm(g, pb_mpi_comm_is_inter(c) ? c->local_group : c, comm, "MPI_Comm_create");
    if (rc != MPI_SUCCESS)
        return rc;
    /* an intercommunicator: the members of each side's group, in group
     * order, make one with the other side's */
    if (pb_mpi_comm_is_inter(c))
        return pb_mpi_intercomm_split(
            c, "MPI_Comm_create", g->rank == MPI_UNDEFINED ? MPI_UNDEFINED : 0, g->rank, newcomm);
    *newcomm = MPI_COMM_NULL;
    rc = pb_mpi_agree_context(c, &context);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, "MPI_Comm_create", "the ranks could not agree on a context");
    if (g->rank == MPI_UNDEFINED)
        return MPI_SUCCESS;
    n = pb_mpi_comm_make(g->size, g->world, context, c->errhandler);
    if (n == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, "MPI_Comm_create", "out of memory");
    n->session = c->session;
    *newcomm = n->handle;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_create, PMPI_Comm_create);

/* Make *@newcomm, a communicator of the members of @group (a subset of
 * @comm), collective over @group's members only.  A rank outside @group
 * gets MPI_COMM_NULL at once.  The members agree on a context over
 * @comm's collective context, on a stand-in communicator of the group;
 * @tag is checked but not needed (a process makes one communicator at a
 * time).
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_GROUP; MPI_ERR_TAG (negative);
 *         MPI_ERR_ARG; MPI_ERR_NO_MEM; the engine's error class. */
PB_EXPORT int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    PB_MPI_THREAD_GUARD;
    static const char func[] = "MPI_Comm_create_group";
    pb_comm_t *c, *n, sub;
    pb_group_t *g;
    uint32_t context;
    int rc = pb_mpi_comm_check(comm, func, &c);

    if (rc != MPI_SUCCESS)
        return rc;
    g = group_of(group);
    if (g == NULL)
        return pb_mpi_raise(comm, MPI_ERR_GROUP, func, "group (%p) is not a group", (void *)group);
    if (newcomm == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, func, "newcomm is NULL");
    rc = pb_mpi_comm_check_intra(comm, func, c);
    if (rc != MPI_SUCCESS)
        return rc;
    if (tag < 0)
        return pb_mpi_raise(comm, MPI_ERR_TAG, func, "tag %d is negative", tag);
    rc = group_in_comm(g, c, comm, func);
    if (rc != MPI_SUCCESS)
        return rc;
    *newcomm = MPI_COMM_NULL;
    if (g->rank == MPI_UNDEFINED)
        return MPI_SUCCESS;
    /* the group as a communicator on @comm's contexts, for the agreement */
    memset(&sub, 0, sizeof(sub));
    sub.handle = comm;
    sub.context = c->context;
    sub.rank = g->rank;
    sub.size = g->size;
    sub.world = g->world;
    sub.errhandler = c->errhandler;
    sub.local = group_positions(g, func, &rc);
    if (sub.local == NULL)
        return rc;
    rc = pb_mpi_agree_context(&sub, &context);
    free(sub.local);
    if (rc != MPI_SUCCESS)
        return pb_mpi_raise(comm, rc, func, "the members could not agree on a context");
    n = pb_mpi_comm_make(g->size, g->world, context, c->errhandler);
    if (n == NULL)
        return pb_mpi_raise(comm, MPI_ERR_NO_MEM, func, "out of memory");
    n->session = c->session;
    *newcomm = n->handle;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_create_group, PMPI_Comm_create_group);

/* The color of this rank of @c for MPI_Comm_split_type's @split_type:
 * its node for shared memory, MPI_UNDEFINED when it joins no communicator;
 * *@bad = 1 for a type the standard does not define. */
static int split_color(const pb_comm_t *c, int split_type, MPI_Info info, int *bad)
{
    rsm_node_id_t node = postbox_job_node(c->world[c->rank]);
    int color = node == POSTBOX_JOB_NODE_NONE ? 0 : (int)node, spans = 0;
    const char *hw, *pset;

    *bad = 0;
    switch (split_type) {
    case MPI_UNDEFINED: return MPI_UNDEFINED;
    case MPI_COMM_TYPE_SHARED: return color;
    case MPI_COMM_TYPE_HW_GUIDED:
        /* the one resource type Postbox knows: the node's shared memory */
        hw = pb_mpi_info_value(info, "mpi_hw_resource_type");
        return hw != NULL && strcmp(hw, "mpi_shared_memory") == 0 ? color : MPI_UNDEFINED;
    case MPI_COMM_TYPE_HW_UNGUIDED:
        /* the node, when it is a strict subset of @c */
        for (int r = 1; r < c->size && !spans; r++)
            spans = postbox_job_node(c->world[r]) != postbox_job_node(c->world[0]);
        return spans ? color : MPI_UNDEFINED;
    case MPI_COMM_TYPE_RESOURCE_GUIDED:
        /* the process set info's "mpi_pset_name" names (session.c) */
        pset = pb_mpi_info_value(info, "mpi_pset_name");
        return pset != NULL ? pb_mpi_pset_color(pset, c->world[c->rank]) : MPI_UNDEFINED;
    default: *bad = 1; return MPI_UNDEFINED;
    }
}

/* Split @comm by @split_type into communicators ordered by @key, then by
 * rank in @comm (MPI_Comm_split's order):
 *   MPI_COMM_TYPE_SHARED       the ranks of each node (they can share memory);
 *   MPI_COMM_TYPE_HW_GUIDED    the same when @info sets mpi_hw_resource_type
 *                              to "mpi_shared_memory", else MPI_COMM_NULL;
 *   MPI_COMM_TYPE_HW_UNGUIDED  the node when @comm spans several nodes,
 *                              else MPI_COMM_NULL (no smaller level);
 *   MPI_COMM_TYPE_RESOURCE_GUIDED  MPI_COMM_NULL (no process sets);
 *   MPI_UNDEFINED              MPI_COMM_NULL for this rank.
 * Collective.  A rank passing another value takes part as MPI_UNDEFINED,
 * then raises MPI_ERR_ARG.
 * @return MPI_SUCCESS; MPI_ERR_COMM; MPI_ERR_INFO; MPI_ERR_ARG (NULL,
 *         unknown split type); MPI_Comm_split's errors. */
PB_EXPORT int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                                   MPI_Comm *newcomm)
{
    PB_MPI_THREAD_GUARD;
    pb_comm_t *c;
    int rc = pb_mpi_comm_check(comm, "MPI_Comm_split_type", &c), bad, color;

    if (rc == MPI_SUCCESS)
        rc = pb_mpi_comm_check_intra(comm, "MPI_Comm_split_type", c);
    if (rc == MPI_SUCCESS)
        rc = pb_mpi_info_check(comm, info, 1, "MPI_Comm_split_type");
    if (rc != MPI_SUCCESS)
        return rc;
    if (newcomm == NULL)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_split_type", "newcomm is NULL");
    color = split_color(c, split_type, info, &bad);
    rc = PMPI_Comm_split(comm, color, key, newcomm);
    if (rc != MPI_SUCCESS)
        return rc;
    if (bad)
        return pb_mpi_raise(comm, MPI_ERR_ARG, "MPI_Comm_split_type",
                            "split_type %d is not a split type of the standard", split_type);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_split_type, PMPI_Comm_split_type);

/* ---- for the sessions and MPI_Comm_create_from_group (group.h) ----------------- */

int pb_mpi_group_members(MPI_Group handle, int *size_p, const int **world_p, int *rank_p)
{
    pb_group_t *g = group_of(handle);

    if (g == NULL)
        return 0;
    *size_p = g->size;
    *world_p = g->world;
    *rank_p = g->rank;
    return 1;
}

void *pb_mpi_group_session(MPI_Group handle)
{
    pb_group_t *g = group_of(handle);

    return g != NULL ? g->session : NULL;
}

int pb_mpi_group_make(int n, const int *world, void *session, MPI_Group *out)
{
    pb_group_t *g;
    int *copy, me = pb_mpi_my_slot();

    if (n == 0) {
        *out = MPI_GROUP_EMPTY;
        return MPI_SUCCESS;
    }
    copy = malloc((size_t)n * sizeof(int));
    g = copy != NULL ? pb_eng_handle_new(PB_ENG_HANDLE_GROUP, sizeof(*g)) : NULL;
    if (g == NULL) {
        free(copy);
        return MPI_ERR_NO_MEM;
    }
    memcpy(copy, world, (size_t)n * sizeof(int));
    g->size = n;
    g->world = copy;
    g->session = session;
    g->rank = MPI_UNDEFINED;
    for (int i = 0; i < n; i++) {
        if (copy[i] == me)
            g->rank = i;
    }
    *out = (MPI_Group)g;
    return MPI_SUCCESS;
}
