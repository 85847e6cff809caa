/*
 * Far peers (far.h).
 */
#include "mpi/engine/far.h"

void pb_eng_far_record(pb_eng_far_t *f, size_t len, int64_t ns)
{
    if (ns <= 0)
        ns = 1;
    /* faster: more bytes per nanosecond than the best so far */
    if (f->timed == 0 || (double)len * (double)f->best_ns > (double)f->best_bytes * (double)ns) {
        f->best_bytes = len;
        f->best_ns = (uint64_t)ns;
    }
    if (++f->timed < PB_ENG_FAR_ROUND)
        return;
    /* MB/s is bytes per microsecond: far when best_bytes / best_ns * 1000
     * falls below the rate */
    f->far =
        (double)f->best_bytes * 1000.0 < (double)pb_eng_params.far_copy_rate * (double)f->best_ns;
    f->timed = 0;
    f->single_sends = 0;
}

int pb_eng_far_single_copy(pb_eng_far_t *f, size_t bytes)
{
    if (pb_eng_params.single_copy == 0)
        return 0;
    if (bytes >= pb_eng_params.single_copy)
        return 1;
    if (!f->far || pb_eng_params.far_copy_rate == 0 || pb_eng_params.single_copy_far == 0 ||
        bytes < pb_eng_params.single_copy_far)
        return 0;
    /* only a message whose piece will be timed serves as a recheck */
    if (bytes >= PB_ENG_FAR_PIECE && ++f->single_sends >= PB_ENG_FAR_RECHECK) {
        f->single_sends = 0;
        return 0;
    }
    return 1;
}
