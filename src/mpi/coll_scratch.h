/*
 * Scratch memory of the collectives, kept between calls (coll_scratch.c
 * says why and how much).  Thread-safe.
 */
#ifndef PB_MPI_COLL_SCRATCH_H
#define PB_MPI_COLL_SCRATCH_H

#include <stddef.h>

/* @bytes of scratch memory (aligned as malloc's), from the blocks earlier
 * collectives gave back when one is large enough, else new.  Give it back
 * with pb_coll_scratch_put.  @return NULL when out of memory. */
void *pb_coll_scratch_get(size_t bytes);

/* Give back what pb_coll_scratch_get returned (NULL: nothing): kept for
 * the next collective when large (coll_scratch.c says how much is
 * kept), else freed. */
void pb_coll_scratch_put(void *mem);

/* The bytes of the blocks kept now (the MPI_T variable
 * coll_scratch_kept_bytes). */
size_t pb_coll_scratch_kept(void);

/* Free the kept blocks (MPI_Finalize). */
void pb_coll_scratch_finalize(void);

#endif
