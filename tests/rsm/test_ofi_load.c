/* When libfabric is loaded (src/rsm/ofi/lib.c): only once the ofi
 * controller is asked for; a library that cannot be loaded is a clear
 * error that leaves shm and tcp working; the handlers its providers'
 * libraries install for fatal and stopping signals are undone. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rsm_util.h"

/* whether a file whose name contains @part is mapped in this process */
static int mapped(const char *part)
{
    FILE *maps = fopen("/proc/self/maps", "re");
    char line[1024];
    int found = 0;

    CHECK_MSG(maps != NULL, "/proc/self/maps: %s", strerror(errno));
    while (!found && fgets(line, sizeof(line), maps) != NULL)
        found = strstr(line, part) != NULL;
    fclose(maps);
    return found;
}

/* the handler of a fatal or stopping signal that lives in libinfinipath
 * or libpsm, by signal name; NULL when there is none */
static const char *provider_handler(void)
{
    static const struct {
        int sig;
        const char *name;
    } sigs[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGILL, "SIGILL"},
                {SIGFPE, "SIGFPE"},   {SIGABRT, "SIGABRT"}, {SIGINT, "SIGINT"},
                {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}};

    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction current;
        Dl_info where;
        void *handler;

        CHECK(sigaction(sigs[i].sig, NULL, &current) == 0);
        handler = (current.sa_flags & SA_SIGINFO) ? (void *)current.sa_sigaction
                                                  : (void *)current.sa_handler;
        if (handler == (void *)SIG_DFL || handler == (void *)SIG_IGN ||
            dladdr(handler, &where) == 0 || where.dli_fname == NULL)
            continue;
        if (strstr(where.dli_fname, "libinfinipath") != NULL ||
            strstr(where.dli_fname, "libpsm") != NULL)
            return sigs[i].name;
    }
    return NULL;
}

/* rsm_get_controller(@name) with the library's log (stderr) caught into
 * @log; returns what the call returned */
static int get_controller_logged(const char *name, rsmapi_controller_handle_t *c, char *log,
                                 size_t size)
{
    int fds[2], saved, rc;
    ssize_t n;

    CHECK(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
    fflush(stderr);
    saved = dup(2);
    CHECK(saved >= 0 && dup2(fds[1], 2) == 2);
    rc = rsm_get_controller((char *)name, c);
    fflush(stderr);
    CHECK(dup2(saved, 2) == 2);
    close(saved);
    close(fds[1]);
    n = read(fds[0], log, size - 1);
    log[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    /* (shown in the case's output, as it would be) */
    fputs(log, stderr);
    return rc;
}

/* shm and tcp, a segment published on each: libfabric stays out of the
 * process until ofi is asked for (which shows the check can tell) */
static void case_shm_and_tcp_leave_libfabric_unloaded(void)
{
    static const char *const names[] = {"shm", "tcp"};
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    rsmapi_controller_handle_t c[2], ofi = NULL;
    rsm_memseg_export_handle_t seg[2];

    for (int i = 0; i < 2; i++) {
        rsm_memseg_id_t id = 0;
        void *mem = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        CHECK(mem != MAP_FAILED);
        CHECK_OK(rsm_get_controller((char *)names[i], &c[i]));
        CHECK_OK(rsm_memseg_export_create(c[i], &seg[i], mem, pg, 0));
        CHECK_OK(rsm_memseg_export_publish(seg[i], &id, NULL, 0));
    }
    CHECK_MSG(!mapped("/libfabric.so"), "libfabric is loaded though only shm and tcp were used");
    CHECK(!mapped("libinfinipath") && !mapped("libpsm"));
    for (int i = 0; i < 2; i++) {
        CHECK_OK(rsm_memseg_export_unpublish(seg[i]));
        CHECK_OK(rsm_memseg_export_destroy(seg[i]));
        CHECK_OK(rsm_release_controller(c[i]));
    }
    CHECK_OK(rsm_get_controller("ofi", &ofi));
    CHECK_MSG(mapped("/libfabric.so"), "the ofi controller was given, libfabric is not loaded");
    CHECK_OK(rsm_release_controller(ofi));
}

/* libfabric loaded: no handler of its providers' libraries is left */
static void case_ofi_load_undoes_provider_signal_handlers(void)
{
    rsmapi_controller_handle_t c = NULL;
    const char *found;

    CHECK_OK(rsm_get_controller("ofi", &c));
    found = provider_handler();
    CHECK_MSG(found == NULL, "a handler of libinfinipath or libpsm catches %s after the load",
              found);
    CHECK_OK(rsm_release_controller(c));
}

/* the providers initialised (a publish: fi_getinfo), which installs more
 * handlers: none of theirs is left either */
static void case_ofi_start_undoes_provider_signal_handlers(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    void *mem = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    rsmapi_controller_handle_t c = NULL;
    rsm_memseg_export_handle_t seg;
    rsm_memseg_id_t id = 0;
    const char *found;

    CHECK(mem != MAP_FAILED);
    CHECK(setenv("POSTBOX_OFI_PROVIDER", "tcp;ofi_rxm", 1) == 0);
    CHECK_OK(rsm_get_controller("ofi", &c));
    CHECK_OK(rsm_memseg_export_create(c, &seg, mem, pg, 0));
    CHECK_OK(rsm_memseg_export_publish(seg, &id, NULL, 0));
    found = provider_handler();
    CHECK_MSG(found == NULL, "a handler of libinfinipath or libpsm catches %s after fi_getinfo",
              found);
    CHECK_OK(rsm_memseg_export_unpublish(seg));
    CHECK_OK(rsm_memseg_export_destroy(seg));
    CHECK_OK(rsm_release_controller(c));
}

/* a library that cannot be loaded: the controller is not present, the
 * log names the library and says why (dlerror), each time it is asked
 * for; shm and tcp work as before */
static void case_ofi_library_missing_is_a_clear_error(void)
{
    static const char missing[] = "libpostbox-test-no-such-fabric.so.1";
    rsmapi_controller_handle_t c = NULL;
    char log[2048];

    CHECK(setenv("POSTBOX_OFI_LIBRARY", missing, 1) == 0);
    for (int attempt = 0; attempt < 2; attempt++) {
        CHECK_RC(get_controller_logged("ofi", &c, log, sizeof(log)), RSMERR_CTLR_NOT_PRESENT);
        CHECK_MSG(strstr(log, "POSTBOX_OFI_LIBRARY=libpostbox-test-no-such-fabric.so.1") != NULL,
                  "the log does not name the library: %s", log);
        CHECK_MSG(strstr(log, "cannot open shared object file") != NULL,
                  "the log does not give dlerror's reason: %s", log);
    }
    CHECK(!mapped("/libfabric.so"));
    CHECK_OK(rsm_get_controller("shm", &c));
    CHECK_OK(rsm_release_controller(c));
    CHECK_OK(rsm_get_controller("tcp", &c));
    CHECK_OK(rsm_release_controller(c));
}

/* a library that loads but is not libfabric */
static void case_ofi_library_not_libfabric_is_a_clear_error(void)
{
    rsmapi_controller_handle_t c = NULL;
    char log[2048];

    CHECK(setenv("POSTBOX_OFI_LIBRARY", "libc.so.6", 1) == 0);
    CHECK_RC(get_controller_logged("ofi", &c, log, sizeof(log)), RSMERR_CTLR_NOT_PRESENT);
    CHECK_MSG(strstr(log, "libc.so.6 is not libfabric") != NULL &&
                  strstr(log, "fi_getinfo") != NULL,
              "the log does not say which function is missing: %s", log);
}

static const pbt_case_t cases[] = {
    PBT_CASE(shm_and_tcp_leave_libfabric_unloaded),
    PBT_CASE(ofi_load_undoes_provider_signal_handlers),
    PBT_CASE(ofi_start_undoes_provider_signal_handlers),
    PBT_CASE(ofi_library_missing_is_a_clear_error),
    PBT_CASE(ofi_library_not_libfabric_is_a_clear_error),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
