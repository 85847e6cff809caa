/*
 * The kernel single copy (cma.h): process_vm_readv and process_vm_writev,
 * called from nowhere else.
 *
 * It is a capability of the engine's shm path, not of RSM: an RSM segment
 * is a region its owner exported, while a single-copy rendezvous reads (or
 * writes) an arbitrary user buffer of the peer process, named by its
 * address in the RTS, which nobody exported.  The protocol (recv.c,
 * send.c) uses it only toward a peer whose path says it can
 * (pb_eng_path_ops_t.single_copy).
 */
#include "mpi/engine/cma.h"

#include <errno.h>
#include <sys/uio.h>

int pb_eng_cma_read(pid_t pid, uint64_t addr, void *dst, size_t len)
{
    while (len > 0) {
        struct iovec local = {dst, len}, remote = {(void *)(uintptr_t)addr, len};
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

        if (n <= 0)
            return n < 0 ? errno : EIO;
        dst = (char *)dst + n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

int pb_eng_cma_write(pid_t pid, uint64_t addr, const void *src, size_t len)
{
    while (len > 0) {
        struct iovec local = {(void *)(uintptr_t)src, len};
        struct iovec remote = {(void *)(uintptr_t)addr, len};
        ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);

        if (n <= 0)
            return n < 0 ? errno : EIO;
        src = (const char *)src + n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

int pb_eng_cma_refused(int err)
{
    return err == EPERM || err == ENOSYS || err == EACCES;
}
