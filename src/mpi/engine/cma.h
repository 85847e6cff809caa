/*
 * The kernel single copy (cross-memory attach) the shm path offers
 * (path.h): one process reads or writes another's memory on the node.
 */
#ifndef PB_ENG_CMA_H
#define PB_ENG_CMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read @len bytes at @addr of process @pid into @dst.  @return 0, or an
 * errno value (EPERM, ENOSYS: the kernel refuses single copy). */
int pb_eng_cma_read(pid_t pid, uint64_t addr, void *dst, size_t len);

/* Write @len bytes of @src to @addr of process @pid.  @return 0 or an
 * errno value. */
int pb_eng_cma_write(pid_t pid, uint64_t addr, const void *src, size_t len);

/* Whether @err (from the two calls above) is the kernel refusing single
 * copy altogether (not a bad address): it then holds for every later
 * message too. */
int pb_eng_cma_refused(int err);

#endif
