/*
 * libfabric, loaded with dlopen when the ofi controller is first asked for
 * (rsm_get_controller("ofi"), as POSTBOX_TRANSPORT=ofi does), never at the
 * load of libpostbox.
 *
 * Why: libfabric.so.1 brings in its providers' libraries (libibverbs,
 * libpsm2, libpsm_infinipath and libinfinipath, libnuma, ...), whose
 * constructors run at load and some of which install handlers for fatal
 * signals; linked into libpostbox, every Postbox process paid for them,
 * and no Postbox program died of its SIGSEGV any more.  Loaded here
 * (RTLD_LOCAL: its symbols stay out of the program's namespace), only a
 * process that uses ofi has them.
 *
 * Only libfabric's few exported functions are looked up: the other fi_*
 * of its headers are static inline wrappers that call through the ops
 * tables of the objects those functions open.  The build still needs the
 * headers (libfabric-dev): they fix the layout of struct fi_info and the
 * functions' types (declared here with __typeof__, so a mismatch is a
 * compile error).  dlsym finds each symbol's default version, the one a
 * link against this libfabric would bind.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "rsm/ofi/ofi_impl.h"
#include "util/config.h"
#include "util/log.h"

pb_ofi_lib_t pb_ofi_lib;

static pthread_mutex_t ofi_lib_lock = PTHREAD_MUTEX_INITIALIZER;
/* 1 once pb_ofi_lib is filled (set under ofi_lib_lock) */
static _Atomic int ofi_lib_loaded;

/*
 * Some providers' libraries install handlers of their own for fatal and
 * stopping signals: libinfinipath (through the psm provider) catches
 * SIGSEGV, SIGBUS, SIGILL and SIGABRT to print a backtrace and exit with
 * status 1, and SIGINT and SIGTERM to clean up and exit.  libfabric 1.17
 * installs them all at load here; a provider may also do so when it is
 * initialised (fi_getinfo), so the transport undoes them after both.  A
 * process using ofi would otherwise no longer die of the signal (the
 * launcher would report "status 1", the DSM's chained fault handler would
 * exit instead of crashing, a rank told to stop would exit normally).  A
 * handler that lives in one of those libraries (dladdr) is put back to
 * the default; any other (a sanitizer's, the program's own) is left
 * alone.
 */
void pb_ofi_lib_undo_signal_handlers(void)
{
    static const int fatal[] = {SIGSEGV, SIGBUS,  SIGILL, SIGFPE, SIGABRT,
                                SIGINT,  SIGTERM, SIGHUP, SIGQUIT};

    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
        struct sigaction current;
        Dl_info where;
        void *handler;

        if (sigaction(fatal[i], NULL, &current) != 0)
            continue;
        handler = (current.sa_flags & SA_SIGINFO) ? (void *)current.sa_sigaction
                                                  : (void *)current.sa_handler;
        if (handler == (void *)SIG_DFL || handler == (void *)SIG_IGN ||
            dladdr(handler, &where) == 0 || where.dli_fname == NULL)
            continue;
        if (strstr(where.dli_fname, "libinfinipath") != NULL ||
            strstr(where.dli_fname, "libpsm") != NULL)
            signal(fatal[i], SIG_DFL);
    }
}

int pb_ofi_lib_loaded(void)
{
    return atomic_load_explicit(&ofi_lib_loaded, memory_order_acquire);
}

pb_status_t pb_ofi_lib_load(void)
{
    static const struct {
        const char *name;
        size_t offset;
    } symbols[] = {
        {"fi_getinfo", offsetof(pb_ofi_lib_t, getinfo)},
        {"fi_freeinfo", offsetof(pb_ofi_lib_t, freeinfo)},
        {"fi_dupinfo", offsetof(pb_ofi_lib_t, dupinfo)},
        {"fi_fabric", offsetof(pb_ofi_lib_t, fabric)},
        {"fi_strerror", offsetof(pb_ofi_lib_t, strerror)},
        {"fi_version", offsetof(pb_ofi_lib_t, version)},
    };
    const char *library = pb_config_get_string("POSTBOX_OFI_LIBRARY");
    pb_status_t status = PB_OK;
    void *handle;

    if (pb_ofi_lib_loaded())
        return PB_OK;
    pthread_mutex_lock(&ofi_lib_lock);
    if (atomic_load_explicit(&ofi_lib_loaded, memory_order_relaxed))
        goto out;
    if (library == NULL || *library == '\0') {
        pb_error("ofi: POSTBOX_OFI_LIBRARY is empty: no libfabric to load");
        status = PB_ERR_UNSUPPORTED;
        goto out;
    }
    handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        pb_error("ofi: the ofi controller needs libfabric, and POSTBOX_OFI_LIBRARY=%s cannot be "
                 "loaded: %s (Debian: apt-get install libfabric1)",
                 library, dlerror());
        status = PB_ERR_UNSUPPORTED;
        goto out;
    }
    /* the constructors of the providers' libraries ran */
    pb_ofi_lib_undo_signal_handlers();
    for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
        void *fn = dlsym(handle, symbols[i].name);

        if (fn == NULL) {
            pb_error("ofi: POSTBOX_OFI_LIBRARY=%s is not libfabric: %s", library, dlerror());
            status = PB_ERR_UNSUPPORTED;
            goto err_close;
        }
        memcpy((char *)&pb_ofi_lib + symbols[i].offset, &fn, sizeof(fn));
    }
    pb_debug("ofi: %s loaded", library);
    /* (never unloaded: providers start threads of their own) the table is
     * complete before anyone sees it loaded */
    atomic_store_explicit(&ofi_lib_loaded, 1, memory_order_release);
    goto out;
err_close:
    memset(&pb_ofi_lib, 0, sizeof(pb_ofi_lib));
    dlclose(handle);
out:
    pthread_mutex_unlock(&ofi_lib_lock);
    return status;
}
