/*
 * pbt-mpi-comm_more: the communicator calls besides intercommunicators,
 * run under `postbox run -n N [--nodes K] pbt-mpi-comm_more one two`:
 * MPI_Info_create_env before and after MPI_Init (every key of the
 * standard), communicator hints (MPI_Comm_set_info, _get_info,
 * _dup_with_info), MPI_Comm_idup(_with_info) (which waits for no other
 * rank), MPI_Comm_call_errhandler,
 * and the program's error classes, codes and strings.  Written to the
 * standard API only; rank 0 prints "comm_more: ok".
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char *const env_keys[] = {"command", "argv", "maxprocs",     "soft", "host",
                                       "arch",    "wdir", "thread_level", "file"};

/* @info has every key of MPI_INFO_ENV the standard lists */
static void check_env_keys(MPI_Info info, const char *when)
{
    char value[MPI_MAX_INFO_VAL];

    for (size_t k = 0; k < sizeof(env_keys) / sizeof(env_keys[0]); k++) {
        int len = MPI_MAX_INFO_VAL, flag = 0;

        OK(MPI_Info_get_string(info, env_keys[k], &len, value, &flag));
        CHECK(flag, "%s: no key %s", when, env_keys[k]);
    }
}

static int value_is(MPI_Info info, const char *key, const char *want)
{
    char value[MPI_MAX_INFO_VAL];
    int len = MPI_MAX_INFO_VAL, flag = 0;

    if (MPI_Info_get_string(info, key, &len, value, &flag) != MPI_SUCCESS || !flag)
        return 0;
    return strcmp(value, want) == 0;
}

static void check_env(int argc, char **argv, int size)
{
    MPI_Info info;
    char maxprocs[16];

    check_env_keys(MPI_INFO_ENV, "MPI_INFO_ENV");
    snprintf(maxprocs, sizeof(maxprocs), "%d", size);
    CHECK(value_is(MPI_INFO_ENV, "maxprocs", maxprocs), "maxprocs is not %s", maxprocs);
    CHECK(value_is(MPI_INFO_ENV, "thread_level", "MPI_THREAD_SINGLE"), "thread_level");
    OK(MPI_Info_create_env(argc, argv, &info));
    check_env_keys(info, "MPI_Info_create_env");
    CHECK(value_is(info, "command", argv[0]), "command is not %s", argv[0]);
    CHECK(argc != 3 || value_is(info, "argv", "one two"), "argv is not \"one two\"");
    CHECK(value_is(info, "maxprocs", maxprocs), "maxprocs is not %s", maxprocs);
    MPI_Info_free(&info);
    OK(MPI_Info_create_env(0, NULL, &info));
    check_env_keys(info, "MPI_Info_create_env without arguments");
    MPI_Info_free(&info);
}

static void check_hints(void)
{
    MPI_Info info, used, more;
    MPI_Comm dup, dup2, idup;
    MPI_Request req;
    int nkeys = -1, sum = 0, size;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    OK(MPI_Comm_get_info(MPI_COMM_WORLD, &used));
    OK(MPI_Info_get_nkeys(used, &nkeys));
    CHECK(nkeys == 0, "MPI_COMM_WORLD has %d hints", nkeys);
    MPI_Info_free(&used);

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Info_set(info, "mpi_assert_allow_overtaking", "false");
    MPI_Info_set(info, "postbox_test_key", "some value");
    OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &dup));
    MPI_Info_free(&info);
    OK(MPI_Comm_get_info(dup, &used));
    CHECK(value_is(used, "mpi_assert_no_any_tag", "true"), "mpi_assert_no_any_tag lost");
    CHECK(value_is(used, "mpi_assert_allow_overtaking", "false"), "allow_overtaking lost");
    CHECK(value_is(used, "postbox_test_key", "some value"), "the program's key lost");
    MPI_Info_free(&used);

    /* set_info adds and replaces; the keys not given stay */
    MPI_Info_create(&more);
    MPI_Info_set(more, "mpi_assert_exact_length", "true");
    MPI_Info_set(more, "postbox_test_key", "another");
    OK(MPI_Comm_set_info(dup, more));
    MPI_Info_free(&more);
    OK(MPI_Comm_get_info(dup, &used));
    CHECK(value_is(used, "mpi_assert_exact_length", "true"), "mpi_assert_exact_length");
    CHECK(value_is(used, "postbox_test_key", "another"), "the key was not replaced");
    CHECK(value_is(used, "mpi_assert_no_any_tag", "true"), "the earlier hint was dropped");
    MPI_Info_free(&used);
    CHECK(MPI_Comm_set_info(dup, MPI_INFO_NULL) == MPI_ERR_INFO, "MPI_INFO_NULL accepted");

    /* MPI_Comm_dup copies the hints */
    OK(MPI_Comm_dup(dup, &dup2));
    OK(MPI_Comm_get_info(dup2, &used));
    CHECK(value_is(used, "mpi_assert_exact_length", "true"), "MPI_Comm_dup dropped the hints");
    MPI_Info_free(&used);

    /* the nonblocking duplicates */
    OK(MPI_Comm_idup(dup2, &idup, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL, "the request was not freed");
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, idup));
    CHECK(sum == size * (size - 1) / 2, "allreduce on the idup: %d", sum);
    OK(MPI_Comm_free(&idup));
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_source", "true");
    OK(MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &idup, &req));
    MPI_Info_free(&info);
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Comm_get_info(idup, &used));
    CHECK(value_is(used, "mpi_assert_no_any_source", "true"), "idup_with_info lost the hint");
    OK(MPI_Info_get_nkeys(used, &nkeys));
    CHECK(nkeys == 1, "idup_with_info: %d hints", nkeys);
    MPI_Info_free(&used);
    OK(MPI_Comm_free(&idup));
    OK(MPI_Comm_free(&dup2));
    OK(MPI_Comm_free(&dup));
}

static int handler_calls, handler_code;

/* MPI_Comm_idup does not wait for the other ranks: started in opposite
 * orders on two communicators by the two halves, several at once on one,
 * with a rank that blocks on a message the other sends only after its own
 * call; the duplicates get the attributes as they were at the call. */
static void check_idup_nonblocking(int size)
{
    MPI_Comm a, b, dups[4], early;
    MPI_Request reqs[4];
    int keyval, sum = -1, flag = 0, token = 0, *got = NULL;
    static int before = 1, after = 2;

    OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &b));
    /* the even ranks start a's first, the odd ones b's */
    if (rank % 2 == 0) {
        OK(MPI_Comm_idup(a, &dups[0], &reqs[0]));
        OK(MPI_Comm_idup(b, &dups[1], &reqs[1]));
    } else {
        OK(MPI_Comm_idup(b, &dups[1], &reqs[1]));
        OK(MPI_Comm_idup(a, &dups[0], &reqs[0]));
    }
    /* two more on a, outstanding together */
    OK(MPI_Comm_idup(a, &dups[2], &reqs[2]));
    OK(MPI_Comm_idup(a, &dups[3], &reqs[3]));
    OK(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 4; i++) {
        OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dups[i]));
        CHECK(sum == size * (size - 1) / 2, "allreduce on duplicate %d: %d", i, sum);
    }
    for (int i = 0; i < 4; i++)
        OK(MPI_Comm_free(&dups[i]));

    /* rank 1 makes a synchronous send to rank 0 before its MPI_Comm_idup,
     * and rank 0 receives it after its own: rank 0's must not wait for
     * rank 1's */
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL));
    OK(MPI_Comm_set_attr(a, keyval, &before));
    if (rank == 1)
        OK(MPI_Ssend(&token, 1, MPI_INT, 0, 5, MPI_COMM_WORLD));
    OK(MPI_Comm_idup(a, &early, &reqs[0]));
    OK(MPI_Comm_set_attr(a, keyval, &after));
    if (rank == 0 && size > 1)
        OK(MPI_Recv(&token, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
    OK(MPI_Comm_get_attr(early, keyval, &got, &flag));
    CHECK(flag && got == &before, "the duplicate's attribute is not the one of the call");
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, early));
    CHECK(sum == size * (size - 1) / 2, "allreduce on the early duplicate: %d", sum);
    OK(MPI_Comm_free(&early));
    OK(MPI_Comm_free_keyval(&keyval));
    OK(MPI_Comm_free(&a));
    OK(MPI_Comm_free(&b));
}

static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    handler_code = *code;
}

static void check_call_errhandler(void)
{
    MPI_Errhandler eh;
    MPI_Comm dup;

    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_create_errhandler(count_errors, &eh));
    OK(MPI_Comm_set_errhandler(dup, eh));
    OK(MPI_Comm_call_errhandler(dup, MPI_ERR_TAG));
    CHECK(handler_calls == 1 && handler_code == MPI_ERR_TAG, "handler called %d times, code %d",
          handler_calls, handler_code);
    /* MPI_ERRORS_RETURN: nothing happens, success */
    OK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER));
    CHECK(MPI_Comm_call_errhandler(MPI_COMM_NULL, MPI_ERR_OTHER) == MPI_ERR_COMM,
          "MPI_COMM_NULL accepted");
    OK(MPI_Errhandler_free(&eh));
    OK(MPI_Comm_free(&dup));
}

static void check_error_classes(void)
{
    char text[MPI_MAX_ERROR_STRING];
    int cls = -1, code = -1, other = -1, got = -1, len = -1, flag = 0, *last = NULL;

    OK(MPI_Add_error_class(&cls));
    CHECK(cls > MPI_ERR_ABI && cls <= MPI_ERR_LASTCODE, "class %d", cls);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && *last >= cls, "MPI_LASTUSEDCODE %d below class %d", flag ? *last : -1, cls);
    OK(MPI_Add_error_code(cls, &code));
    CHECK(code > cls, "code %d", code);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && *last == code, "MPI_LASTUSEDCODE %d, last code %d", flag ? *last : -1, code);
    OK(MPI_Error_class(code, &got));
    CHECK(got == cls, "class of the code: %d", got);
    OK(MPI_Error_class(cls, &got));
    CHECK(got == cls, "class of the class: %d", got);
    OK(MPI_Error_string(code, text, &len));
    CHECK(len == 0, "a code without string has \"%s\"", text);
    OK(MPI_Add_error_string(code, "the program's own error"));
    OK(MPI_Add_error_string(cls, "the program's class"));
    OK(MPI_Error_string(code, text, &len));
    CHECK(strcmp(text, "the program's own error") == 0 && len == (int)strlen(text),
          "string \"%s\" (%d)", text, len);
    OK(MPI_Error_string(cls, text, &len));
    CHECK(strcmp(text, "the program's class") == 0, "class string \"%s\"", text);
    OK(MPI_Add_error_code(MPI_ERR_OTHER, &other));
    OK(MPI_Error_class(other, &got));
    CHECK(got == MPI_ERR_OTHER, "a code of MPI_ERR_OTHER has class %d", got);

    /* misuse */
    CHECK(MPI_Add_error_code(code, &got) == MPI_ERR_ARG, "a code taken as a class");
    CHECK(MPI_Add_error_string(MPI_ERR_OTHER, "x") == MPI_ERR_ARG, "a predefined string replaced");
    CHECK(MPI_Add_error_class(NULL) == MPI_ERR_ARG, "NULL accepted");
    CHECK(MPI_Remove_error_class(cls) == MPI_ERR_ARG, "a class with codes removed");
    CHECK(MPI_Remove_error_code(code) == MPI_ERR_ARG, "a code with its string removed");
    CHECK(MPI_Remove_error_code(cls) == MPI_ERR_ARG, "a class removed as a code");
    CHECK(MPI_Remove_error_class(MPI_ERR_OTHER) == MPI_ERR_ARG, "a predefined class removed");

    /* removal in order: string, code, class */
    OK(MPI_Remove_error_string(code));
    CHECK(MPI_Remove_error_string(code) == MPI_ERR_ARG, "a string removed twice");
    OK(MPI_Remove_error_code(code));
    CHECK(MPI_Error_class(code, &got) == MPI_ERR_ARG, "a removed code still has a class");
    OK(MPI_Remove_error_class(cls));
    CHECK(MPI_Error_string(cls, text, &len) == MPI_ERR_ARG, "a removed class has a string");
    OK(MPI_Remove_error_code(other));
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && *last == other, "MPI_LASTUSEDCODE %d after removals", flag ? *last : -1);
}

int main(int argc, char **argv)
{
    MPI_Info info;
    int size, rc;

    /* MPI_Info_create_env may be called before MPI_Init */
    rc = MPI_Info_create_env(argc, argv, &info);
    CHECK(rc == MPI_SUCCESS, "MPI_Info_create_env before MPI_Init returned %d", rc);
    if (rc == MPI_SUCCESS) {
        check_env_keys(info, "MPI_Info_create_env before MPI_Init");
        MPI_Info_free(&info);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    check_env(argc, argv, size);
    check_hints();
    check_idup_nonblocking(size);
    check_call_errhandler();
    check_error_classes();
    rc = check_summary("comm_more", MPI_COMM_WORLD, 99);
    MPI_Finalize();
    return rc;
}
