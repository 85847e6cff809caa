/* Far peers (src/mpi/engine/far.c): which pieces a sender times, the
 * verdict of a round (the fastest piece against POSTBOX_FAR_COPY_RATE),
 * the sizes that then go by single copy, the rechecks through the pool
 * while a peer is far, the variables that turn it off, and the size test
 * the sender makes first.
 *
 * far.c and the tunables are compiled into this program; the parameters
 * are set by hand, nothing here needs MPI_Init. */

#include "harness.h"
#include "mpi/engine/far.h"
#include "mpi/engine/tunables.h"

#define KB 1024

/* the defaults of docs/config.md */
static void defaults(void)
{
    pb_eng_params.single_copy = 64 * KB;
    pb_eng_params.single_copy_far = 8 * KB;
    pb_eng_params.far_copy_rate = 4000; /* MB/s: 4 bytes a nanosecond */
}

/* Offer pieces of @len bytes until PB_ENG_FAR_ROUND of them were timed,
 * each taking @ns; return how many were offered. */
static int round_of(pb_eng_far_t *f, size_t len, int64_t ns)
{
    int offered = 0, timed = 0;

    while (timed < PB_ENG_FAR_ROUND) {
        offered++;
        CHECK_MSG(offered <= PB_ENG_FAR_ROUND * PB_ENG_FAR_SAMPLE, "%d pieces, %d timed", offered,
                  timed);
        if (pb_eng_far_time_piece(f, len)) {
            pb_eng_far_record(f, len, ns);
            timed++;
        }
    }
    return offered;
}

static void case_near_keeps_the_pool(void)
{
    pb_eng_far_t f = {0};

    defaults();
    /* 32 KB in 2 us: 16 GB/s */
    CHECK_MSG(round_of(&f, 32 * KB, 2000) == PB_ENG_FAR_ROUND * PB_ENG_FAR_SAMPLE,
              "a near peer's pieces are sampled one in %d", PB_ENG_FAR_SAMPLE);
    CHECK(!f.far);
    CHECK(!pb_eng_far_single_copy(&f, 16 * KB));
    CHECK(!pb_eng_far_single_copy(&f, 64 * KB - 1));
    CHECK(pb_eng_far_single_copy(&f, 64 * KB));
}

static void case_slow_copies_make_a_peer_far(void)
{
    pb_eng_far_t f = {0};

    defaults();
    /* 32 KB in 16 us: 2 GB/s */
    round_of(&f, 32 * KB, 16000);
    CHECK(f.far);
    CHECK(!pb_eng_far_single_copy(&f, 8 * KB - 1));
    CHECK(pb_eng_far_single_copy(&f, 8 * KB));
    CHECK(pb_eng_far_single_copy(&f, 64 * KB));
    /* a far peer's pieces are every one timed */
    CHECK(pb_eng_far_time_piece(&f, 16 * KB));
    CHECK(pb_eng_far_time_piece(&f, 16 * KB));
}

static void case_the_fastest_piece_decides(void)
{
    pb_eng_far_t f = {0};
    int timed = 0;

    defaults();
    /* seven preempted pieces and one that ran at 8 GB/s */
    while (timed < PB_ENG_FAR_ROUND) {
        if (pb_eng_far_time_piece(&f, 32 * KB)) {
            pb_eng_far_record(&f, 32 * KB, timed == 3 ? 4096 : 100000);
            timed++;
        }
    }
    CHECK_MSG(!f.far, "one fast piece shows the peer near");
    /* the rate is exclusive: exactly 4 bytes a nanosecond is not far */
    f = (pb_eng_far_t){.far = 1};
    for (int i = 0; i < PB_ENG_FAR_ROUND; i++)
        pb_eng_far_record(&f, 32 * KB, 32 * KB / 4);
    CHECK(!f.far);
    for (int i = 0; i < PB_ENG_FAR_ROUND; i++)
        pb_eng_far_record(&f, 32 * KB, 32 * KB / 4 + 1);
    CHECK(f.far);
}

static void case_short_pieces_are_not_timed(void)
{
    pb_eng_far_t f = {.far = 1};

    defaults();
    for (int i = 0; i < 4 * PB_ENG_FAR_SAMPLE; i++)
        CHECK(!pb_eng_far_time_piece(&f, PB_ENG_FAR_PIECE - 1));
    CHECK(pb_eng_far_time_piece(&f, PB_ENG_FAR_PIECE));
}

static void case_far_peer_rechecks_through_the_pool(void)
{
    pb_eng_far_t f = {0};
    int pool = 0;

    defaults();
    round_of(&f, 32 * KB, 16000);
    CHECK(f.far);
    for (int i = 0; i < 4 * PB_ENG_FAR_RECHECK; i++)
        pool += !pb_eng_far_single_copy(&f, 32 * KB);
    CHECK_MSG(pool == 4, "%d of %d messages went through the pool", pool, 4 * PB_ENG_FAR_RECHECK);
    /* below a timed piece's size a message is no recheck: always single copy */
    for (int i = 0; i < 4 * PB_ENG_FAR_RECHECK; i++)
        CHECK(pb_eng_far_single_copy(&f, PB_ENG_FAR_PIECE - 1));
    /* the rechecks' pieces ran fast: the peer is near again */
    round_of(&f, 32 * KB, 2000);
    CHECK(!f.far);
    CHECK(!pb_eng_far_single_copy(&f, 32 * KB));
}

static void case_variables_turn_it_off(void)
{
    pb_eng_far_t f = {0};

    defaults();
    round_of(&f, 32 * KB, 16000);
    CHECK(f.far);
    /* no far threshold: only POSTBOX_SINGLE_COPY */
    pb_eng_params.single_copy_far = 0;
    CHECK(!pb_eng_far_single_copy(&f, 32 * KB));
    CHECK(pb_eng_far_single_copy(&f, 64 * KB));
    /* no single copy at all, far or not */
    defaults();
    pb_eng_params.single_copy = 0;
    CHECK(!pb_eng_far_single_copy(&f, 32 * KB));
    CHECK(!pb_eng_far_single_copy(&f, 1 << 20));
    /* a rate of 0: no peer is far, and nothing is timed */
    defaults();
    pb_eng_params.far_copy_rate = 0;
    CHECK(!pb_eng_far_single_copy(&f, 32 * KB));
    for (int i = 0; i < 4 * PB_ENG_FAR_SAMPLE; i++)
        CHECK(!pb_eng_far_time_piece(&f, 32 * KB));
}

/* The size test the sender makes before it looks at the path and the
 * datatype: the lower of the two thresholds, the far one only when set. */
static void case_single_copy_size(void)
{
    defaults();
    CHECK(!pb_eng_far_single_copy_size(8 * KB - 1));
    CHECK(pb_eng_far_single_copy_size(8 * KB));
    pb_eng_params.single_copy_far = 0;
    CHECK(!pb_eng_far_single_copy_size(32 * KB));
    CHECK(pb_eng_far_single_copy_size(64 * KB));
    pb_eng_params.single_copy_far = 128 * KB;
    CHECK(!pb_eng_far_single_copy_size(64 * KB - 1));
    CHECK(pb_eng_far_single_copy_size(64 * KB));
    /* POSTBOX_SINGLE_COPY=0 turns single copy off, far threshold or not */
    pb_eng_params.single_copy = 0;
    pb_eng_params.single_copy_far = 8 * KB;
    CHECK(!pb_eng_far_single_copy_size(1 << 20));
}

static const pbt_case_t cases[] = {
    PBT_CASE(near_keeps_the_pool),
    PBT_CASE(slow_copies_make_a_peer_far),
    PBT_CASE(the_fastest_piece_decides),
    PBT_CASE(short_pieces_are_not_timed),
    PBT_CASE(far_peer_rechecks_through_the_pool),
    PBT_CASE(variables_turn_it_off),
    PBT_CASE(single_copy_size),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
