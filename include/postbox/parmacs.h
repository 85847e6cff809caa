/*
 * parmacs.h: the PARMACS macros of SPLASH-2 programs, on the implementation
 * chosen at build time.  One program source builds two ways:
 *
 *   -DPOSTBOX_PARMACS_DSM=0 (or undefined)  plain POSIX threads in one process
 *                                           (postbox/parmacs_pthreads.h)
 *   -DPOSTBOX_PARMACS_DSM=1                 Postbox's distributed shared memory
 *                                           (postbox/parmacs_dsm.h)
 *
 * apps/splash/README.md lists the rules a program follows so that the same
 * source runs on both.
 */
#ifndef POSTBOX_PARMACS_H
#define POSTBOX_PARMACS_H

#ifndef POSTBOX_PARMACS_DSM
#define POSTBOX_PARMACS_DSM 0
#endif

#if POSTBOX_PARMACS_DSM
#include "postbox/parmacs_dsm.h"
#else
#include "postbox/parmacs_pthreads.h"
#endif

#endif /* POSTBOX_PARMACS_H */
