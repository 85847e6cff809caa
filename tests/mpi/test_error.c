/* Error classes and their messages (src/mpi/error.c). */
#include <string.h>

#include <mpi.h>

#include "harness.h"

/* the codes the library knows: every class of the standard, then the MPI_T codes */
static int known_code(int i)
{
    return i <= MPI_ERR_ABI ? i : MPI_T_ERR_CANNOT_INIT + (i - MPI_ERR_ABI - 1);
}
#define N_KNOWN (MPI_ERR_ABI + 1 + MPI_T_ERR_PVAR_NO_ATOMIC - MPI_T_ERR_CANNOT_INIT + 1)

static void case_error_class_is_identity_on_classes(void)
{
    for (int i = 0; i < N_KNOWN; i++) {
        int code = known_code(i), cls = -1;

        CHECK_MSG(MPI_Error_class(code, &cls) == MPI_SUCCESS, "MPI_Error_class(%d) failed", code);
        CHECK_MSG(cls == code, "class of %d is %d", code, cls);
    }
}

static void case_error_class_unknown_code_err_arg(void)
{
    static const int bad[] = {-1,
                              MPI_ERR_ABI + 1,
                              1000,
                              MPI_T_ERR_PVAR_NO_ATOMIC + 1,
                              MPI_ERR_LASTCODE,
                              MPI_ERR_LASTCODE + 1};
    int cls = 12345;

    for (size_t i = 0; i < PBT_NCASES(bad); i++)
        CHECK_MSG(MPI_Error_class(bad[i], &cls) == MPI_ERR_ARG, "code %d accepted", bad[i]);
    CHECK(cls == 12345);
    CHECK(MPI_Error_class(MPI_SUCCESS, NULL) == MPI_ERR_ARG);
}

static void case_error_string_describes_every_class(void)
{
    static char seen[N_KNOWN][MPI_MAX_ERROR_STRING];

    for (int i = 0; i < N_KNOWN; i++) {
        int code = known_code(i), len = -1;
        char text[MPI_MAX_ERROR_STRING];

        memset(text, 'x', sizeof(text));
        CHECK_MSG(MPI_Error_string(code, text, &len) == MPI_SUCCESS, "no message for %d", code);
        CHECK_MSG(len > 0 && len < MPI_MAX_ERROR_STRING && len == (int)strlen(text),
                  "message of %d has length %d", code, len);
        for (int j = 0; j < i; j++)
            CHECK_MSG(strcmp(seen[j], text) != 0, "codes %d and %d share the message \"%s\"",
                      known_code(j), code, text);
        memcpy(seen[i], text, (size_t)len + 1);
    }
}

static void case_error_string_names_the_error(void)
{
    char text[MPI_MAX_ERROR_STRING];
    int len;

    CHECK(PMPI_Error_string(MPI_SUCCESS, text, &len) == MPI_SUCCESS);
    CHECK(strcmp(text, "success") == 0);
    CHECK(MPI_Error_string(MPI_ERR_TRUNCATE, text, &len) == MPI_SUCCESS);
    CHECK_MSG(strstr(text, "truncated") != NULL, "MPI_ERR_TRUNCATE is \"%s\"", text);
    CHECK(MPI_Error_string(MPI_ERR_RANK, text, &len) == MPI_SUCCESS);
    CHECK_MSG(strstr(text, "rank") != NULL, "MPI_ERR_RANK is \"%s\"", text);
}

static void case_error_string_unknown_code_err_arg(void)
{
    char text[MPI_MAX_ERROR_STRING] = "unchanged";
    int len = -7;

    CHECK(MPI_Error_string(MPI_ERR_ABI + 1, text, &len) == MPI_ERR_ARG);
    CHECK(MPI_Error_string(-5, text, &len) == MPI_ERR_ARG);
    CHECK(MPI_Error_string(MPI_ERR_LASTCODE, text, &len) == MPI_ERR_ARG);
    CHECK(strcmp(text, "unchanged") == 0 && len == -7);
}

static void case_error_string_null_args_err_arg(void)
{
    char text[MPI_MAX_ERROR_STRING];
    int len;

    CHECK(MPI_Error_string(MPI_SUCCESS, NULL, &len) == MPI_ERR_ARG);
    CHECK(MPI_Error_string(MPI_SUCCESS, text, NULL) == MPI_ERR_ARG);
}

static const pbt_case_t cases[] = {
    PBT_CASE(error_class_is_identity_on_classes), PBT_CASE(error_class_unknown_code_err_arg),
    PBT_CASE(error_string_describes_every_class), PBT_CASE(error_string_names_the_error),
    PBT_CASE(error_string_unknown_code_err_arg),  PBT_CASE(error_string_null_args_err_arg),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
