/* The environment queries of libmpi_abi (src/mpi/abi.c, src/mpi/env.c),
 * called without MPI_Init as the standard allows, through both names. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "harness.h"

#include "postbox/build.h"

static void case_abi_get_version_is_1_0(void)
{
    int major = -1, minor = -1;

    CHECK(MPI_Abi_get_version(&major, &minor) == MPI_SUCCESS);
    CHECK(major == 1 && minor == 0);
    CHECK(major == MPI_ABI_VERSION && minor == MPI_ABI_SUBVERSION);
    major = minor = -1;
    CHECK(PMPI_Abi_get_version(&major, &minor) == MPI_SUCCESS);
    CHECK(major == 1 && minor == 0);
}

static void case_abi_get_version_null_err_arg(void)
{
    int v = 0;

    CHECK(MPI_Abi_get_version(NULL, &v) == MPI_ERR_ARG);
    CHECK(MPI_Abi_get_version(&v, NULL) == MPI_ERR_ARG);
}

static void case_get_version_is_5_0(void)
{
    int version = -1, subversion = -1;

    CHECK(MPI_Get_version(&version, &subversion) == MPI_SUCCESS);
    CHECK(version == 5 && subversion == 0);
    CHECK(version == MPI_VERSION && subversion == MPI_SUBVERSION);
}

static void case_get_version_null_err_arg(void)
{
    int v = 0;

    CHECK(MPI_Get_version(NULL, &v) == MPI_ERR_ARG);
    CHECK(PMPI_Get_version(&v, NULL) == MPI_ERR_ARG);
}

static void case_get_library_version_names_postbox(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    char expected[64];
    int len = -1;

    memset(version, 'x', sizeof(version));
    CHECK(MPI_Get_library_version(version, &len) == MPI_SUCCESS);
    snprintf(expected, sizeof(expected), "Postbox %s ", PB_VERSION);
    CHECK_MSG(strncmp(version, expected, strlen(expected)) == 0, "version is \"%.80s\"", version);
    CHECK(len == (int)strlen(version));
    CHECK(len < MPI_MAX_LIBRARY_VERSION_STRING);
    CHECK_MSG(strstr(version, "MPI 5.0") != NULL, "version is \"%s\"", version);
}

static void case_get_library_version_null_err_arg(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;

    CHECK(MPI_Get_library_version(NULL, &len) == MPI_ERR_ARG);
    CHECK(MPI_Get_library_version(version, NULL) == MPI_ERR_ARG);
}

static void case_wtime_follows_the_monotonic_clock(void)
{
    struct timespec before, after, pause = {0, 20 * 1000 * 1000};
    double t0, t1, t2;

    clock_gettime(CLOCK_MONOTONIC, &before);
    t0 = MPI_Wtime();
    clock_gettime(CLOCK_MONOTONIC, &after);
    CHECK(t0 >= (double)before.tv_sec + (double)before.tv_nsec * 1e-9 - 1e-6);
    CHECK(t0 <= (double)after.tv_sec + (double)after.tv_nsec * 1e-9 + 1e-6);
    nanosleep(&pause, NULL);
    t1 = PMPI_Wtime();
    CHECK_MSG(t1 - t0 >= 0.019, "20 ms of sleep measured as %g s", t1 - t0);
    t2 = MPI_Wtime();
    CHECK(t2 >= t1);
}

static void case_wtick_is_the_clock_resolution(void)
{
    struct timespec res;
    double tick = MPI_Wtick();

    CHECK(clock_getres(CLOCK_MONOTONIC, &res) == 0);
    CHECK(tick > 0.0 && tick <= 1e-3);
    CHECK(tick == (double)res.tv_sec + (double)res.tv_nsec * 1e-9);
    CHECK(PMPI_Wtick() == tick);
}

/* A profiling layer defines MPI_Get_version itself and calls PMPI_: the
 * library's MPI_ name is weak, the program's definition wins. */
static int profiled_calls;

int MPI_Get_version(int *version, int *subversion)
{
    profiled_calls++;
    return PMPI_Get_version(version, subversion);
}

static void case_mpi_name_can_be_profiled(void)
{
    int version = 0, subversion = -1;

    profiled_calls = 0;
    CHECK(MPI_Get_version(&version, &subversion) == MPI_SUCCESS);
    CHECK(profiled_calls == 1);
    CHECK(version == 5 && subversion == 0);
}

static const pbt_case_t cases[] = {
    PBT_CASE(abi_get_version_is_1_0),
    PBT_CASE(abi_get_version_null_err_arg),
    PBT_CASE(get_version_is_5_0),
    PBT_CASE(get_version_null_err_arg),
    PBT_CASE(get_library_version_names_postbox),
    PBT_CASE(get_library_version_null_err_arg),
    PBT_CASE(wtime_follows_the_monotonic_clock),
    PBT_CASE(wtick_is_the_clock_resolution),
    PBT_CASE(mpi_name_can_be_profiled),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
