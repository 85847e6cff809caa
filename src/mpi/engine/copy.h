/*
 * Large copies with a second thread.  A copy of POSTBOX_COPY_HELP bytes or
 * more, in a process allowed on more than one CPU, is cut into pieces that
 * the calling thread and the engine's copy helper (one thread per process,
 * started at the first such copy) take from one counter: on a node with an
 * idle core the copy runs on two.  The caller never waits for a helper that
 * has not started: it takes every piece left itself, and waits only for
 * pieces the helper is copying; when the helper shows it had no processor
 * of its own, the next large copies go without it for a while.  MPI_Put
 * and MPI_Get toward a mapped window use it (docs/mpi.md, "One-sided
 * communication").
 */
#ifndef PB_ENG_COPY_H
#define PB_ENG_COPY_H

#include <stddef.h>
#include <string.h>

#include "mpi/engine/tunables.h"
#include "util/compiler.h"

/* pb_eng_copy of a copy long enough for the helper. */
void pb_eng_copy_large(void *dst, const void *src, size_t len);

/* Copy @len bytes from @src to @dst (which must not overlap), with the
 * helper when @len reaches POSTBOX_COPY_HELP; a plain memcpy otherwise, or
 * when the helper cannot start (logged once) or is busy with another
 * thread's copy.  Cannot fail. */
static inline void pb_eng_copy(void *dst, const void *src, size_t len)
{
    if (PB_LIKELY(len < pb_eng_params.copy_help || pb_eng_params.copy_help == 0))
        memcpy(dst, src, len);
    else
        pb_eng_copy_large(dst, src, len);
}

/* Stop and join the copy helper, if it runs (MPI_Finalize); the next large
 * copy starts it again. */
void pb_eng_copy_finalize(void);

#endif
