/*
 * app.h: what the SPLASH-2-style applications of apps/splash share: the
 * command line (-p threads, --seed, each application's size options), the
 * result line, deterministic input numbers and page alignment.  Nothing
 * here holds state shared between threads.
 */
#ifndef POSTBOX_SPLASH_APP_H
#define POSTBOX_SPLASH_APP_H

#include <stddef.h>
#include <stdint.h>

/* One size option of an application: -LETTER N or --NAME=N. */
typedef struct app_option {
    char letter;      /* short option, e.g. 'n' */
    const char *name; /* long option, e.g. "size" */
    long *value;      /* where the value goes */
    long ci_value;    /* the default: the small size the tests run */
    long seed_value;  /* the size of seed 004's Table 2 (--seed) */
    long min, max;    /* the accepted range */
    const char *help; /* one line */
} app_option_t;

/* Parse -p P (threads, 1..max_threads), --seed, -h and OPTIONS (count
 * entries) into their values; print usage and exit 1 on bad input, 0 on -h.
 * Returns the thread count. */
int app_parse(int argc, char **argv, const char *app, const char *summary, app_option_t *options,
              int count);

/* Print the result line: "app=APP threads=P PARAMS time_us=T verified=V". */
void app_report(const char *app, int threads, const char *params, unsigned long time_us,
                int verified);

/* A 64-bit number that depends only on STREAM and INDEX (splitmix64). */
uint64_t app_random(uint64_t stream, uint64_t index);
/* ... as a double in [0, 1) */
double app_uniform(uint64_t stream, uint64_t index);
/* ... as an integer in [low, high] */
long app_int(uint64_t stream, uint64_t index, long low, long high);

/* The page size. */
size_t app_page_size(void);
/* BYTES rounded up to whole pages. */
size_t app_page_round(size_t bytes);
/* The first page boundary at or after P (allocate a page more than needed). */
void *app_page_align(void *p);
/* The fewest elements of ELEMENT_SIZE bytes that fill whole pages: a
 * partition stride of a multiple of it keeps every partition page-aligned. */
long app_page_elements(size_t element_size);
/* What MAIN_INITENV should declare for BYTES of data in ALLOCATIONS
 * G_MALLOCs, each of which may be padded by a page for alignment. */
size_t app_shared_bytes(size_t bytes, int allocations);

#endif /* POSTBOX_SPLASH_APP_H */
