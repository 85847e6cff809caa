/*
 * The kernel single copy (cross-memory attach): the shm path's read_peer
 * and write_peer (path.h), for processes of one node.
 */
#ifndef PB_ENG_CMA_H
#define PB_ENG_CMA_H

#include <stddef.h>
#include <stdint.h>

/* Read @len bytes at @addr of process @pid into @dst (process_vm_readv).
 * @return PB_ENG_PEER_COPY_OK, _FAILED (a bad address), or _REFUSED (the
 * kernel refuses it: EPERM, ENOSYS, EACCES; logged). */
int pb_eng_cma_read(uint32_t pid, uint64_t addr, void *dst, size_t len);

/* Write @len bytes of @src to @addr of process @pid (process_vm_writev).
 * @return as pb_eng_cma_read, but a refusal is not logged: the reader that
 * asked for the write streams that message and keeps asking (its own
 * reads may work), so nothing changes "from now on". */
int pb_eng_cma_write(uint32_t pid, uint64_t addr, const void *src, size_t len);

#endif
