/*
 * The store of scratch blocks (coll_scratch.h).  The collectives keep
 * their scratch memory for the next call instead of giving it back to the
 * C library: glibc hands a large block back to the kernel on free, and
 * taking it again costs a page fault per page.  Across two nodes a 4 MB
 * Reduce's three scratch buffers took 1.6 of its 4.0 ms that way
 * (docs/notes/2026-11-28-scratch-kept.md).  A block carries its size in
 * a header of one cache line (the data keep malloc's alignment); blocks of
 * at least SCRATCH_KEEP_FROM bytes are kept, at most SCRATCH_KEPT of them
 * and SCRATCH_KEPT_BYTES in all, the larger ones first.
 */
#include "mpi/coll_scratch.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define SCRATCH_HEADER 64
#define SCRATCH_KEEP_FROM 65536
#define SCRATCH_KEPT 4
#define SCRATCH_KEPT_BYTES ((size_t)64 << 20)

typedef struct {
    size_t bytes; /* the data's, after the header */
} scratch_header_t;

static struct {
    pthread_mutex_t lock;
    char *blocks[SCRATCH_KEPT]; /* their headers; NULL: an empty place */
    size_t bytes;               /* kept in all */
} kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t block_bytes(const char *header)
{
    return ((const scratch_header_t *)(const void *)header)->bytes;
}

void *pb_coll_scratch_get(size_t bytes)
{
    char *header = NULL;

    if (bytes >= SCRATCH_KEEP_FROM) {
        int best = -1;

        pthread_mutex_lock(&kept.lock);
        for (int i = 0; i < SCRATCH_KEPT; i++) {
            if (kept.blocks[i] != NULL && block_bytes(kept.blocks[i]) >= bytes &&
                (best < 0 || block_bytes(kept.blocks[i]) < block_bytes(kept.blocks[best])))
                best = i;
        }
        if (best >= 0) {
            header = kept.blocks[best];
            kept.blocks[best] = NULL;
            kept.bytes -= block_bytes(header);
        }
        pthread_mutex_unlock(&kept.lock);
        if (header != NULL)
            return header + SCRATCH_HEADER;
    }
    if (bytes > SIZE_MAX - SCRATCH_HEADER || (header = malloc(SCRATCH_HEADER + bytes)) == NULL)
        return NULL;
    ((scratch_header_t *)(void *)header)->bytes = bytes;
    return header + SCRATCH_HEADER;
}

/* The place of the smallest kept block other than place @except (an
 * empty place before any block, when @empty); -1: none. */
static int smallest_kept(int except, int empty)
{
    int best = -1;

    for (int i = 0; i < SCRATCH_KEPT; i++) {
        if (i == except)
            continue;
        if (kept.blocks[i] == NULL) {
            if (empty)
                return i;
            continue;
        }
        if (best < 0 || block_bytes(kept.blocks[i]) < block_bytes(kept.blocks[best]))
            best = i;
    }
    return best;
}

void pb_coll_scratch_put(void *data)
{
    char *header, *dropped[SCRATCH_KEPT + 1];
    int ndropped = 0, place;
    size_t bytes;

    if (data == NULL)
        return;
    header = (char *)data - SCRATCH_HEADER;
    bytes = block_bytes(header);
    if (bytes < SCRATCH_KEEP_FROM || bytes > SCRATCH_KEPT_BYTES) {
        free(header);
        return;
    }
    pthread_mutex_lock(&kept.lock);
    place = smallest_kept(-1, 1);
    if (kept.blocks[place] != NULL && block_bytes(kept.blocks[place]) >= bytes) {
        dropped[ndropped++] = header; /* the kept ones are larger */
    } else {
        if (kept.blocks[place] != NULL) {
            dropped[ndropped++] = kept.blocks[place];
            kept.bytes -= block_bytes(kept.blocks[place]);
        }
        kept.blocks[place] = header;
        kept.bytes += bytes;
        while (kept.bytes > SCRATCH_KEPT_BYTES) {
            int smallest = smallest_kept(place, 0);

            dropped[ndropped++] = kept.blocks[smallest];
            kept.bytes -= block_bytes(kept.blocks[smallest]);
            kept.blocks[smallest] = NULL;
        }
    }
    pthread_mutex_unlock(&kept.lock);
    while (ndropped > 0)
        free(dropped[--ndropped]);
}

size_t pb_coll_scratch_kept(void)
{
    size_t bytes;

    pthread_mutex_lock(&kept.lock);
    bytes = kept.bytes;
    pthread_mutex_unlock(&kept.lock);
    return bytes;
}

void pb_coll_scratch_finalize(void)
{
    pthread_mutex_lock(&kept.lock);
    for (int i = 0; i < SCRATCH_KEPT; i++) {
        free(kept.blocks[i]);
        kept.blocks[i] = NULL;
    }
    kept.bytes = 0;
    pthread_mutex_unlock(&kept.lock);
}
