/*
 * The kernel single copy (cma.h): process_vm_readv and process_vm_writev,
 * called from nowhere else; the shm path's read_peer and write_peer.
 *
 * It is a capability of the engine's shm path, not of RSM: an RSM segment
 * is a region its owner exported, while a single-copy rendezvous reads (or
 * writes) an arbitrary user buffer of the peer process, named by its
 * address in the RTS, which nobody exported.  The protocol (recv.c,
 * send.c) reaches it only through the path of a peer that has it
 * (pb_eng_path_ops_t.read_peer, .write_peer).
 */
#include "mpi/engine/cma.h"

#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "mpi/engine/path.h"
#include "util/log.h"

/* What errno @err of a cross-memory copy means for the protocol: a
 * refusal of the kernel (not a bad address) holds for every later message
 * too. */
static int copy_result(int err)
{
    if (err == EPERM || err == ENOSYS || err == EACCES)
        return PB_ENG_PEER_COPY_REFUSED;
    return PB_ENG_PEER_COPY_FAILED;
}

int pb_eng_cma_read(uint32_t pid, uint64_t addr, void *dst, size_t len)
{
    while (len > 0) {
        struct iovec local = {dst, len}, remote = {(void *)(uintptr_t)addr, len};
        ssize_t n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
        int err = n < 0 ? errno : EIO;

        if (n > 0) {
            dst = (char *)dst + n;
            addr += (uint64_t)n;
            len -= (size_t)n;
            continue;
        }
        /* a refused read turns single copy off for good: said here, once */
        if (copy_result(err) == PB_ENG_PEER_COPY_REFUSED)
            pb_warn("process_vm_readv refused (%s): on-node messages move through the pool "
                    "(two copies) from now on",
                    strerror(err));
        return copy_result(err);
    }
    return PB_ENG_PEER_COPY_OK;
}

int pb_eng_cma_write(uint32_t pid, uint64_t addr, const void *src, size_t len)
{
    while (len > 0) {
        struct iovec local = {(void *)(uintptr_t)src, len};
        struct iovec remote = {(void *)(uintptr_t)addr, len};
        ssize_t n = process_vm_writev((pid_t)pid, &local, 1, &remote, 1, 0);

        if (n <= 0)
            return copy_result(n < 0 ? errno : EIO); /* not logged (cma.h) */
        src = (const char *)src + n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return PB_ENG_PEER_COPY_OK;
}
