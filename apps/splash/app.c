/* app.c: the helpers of app.h. */
#include "app.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define APP_MAX_THREADS 256
#define APP_MAX_OPTIONS 16

static void app_usage(FILE *out, const char *app, const char *summary, const app_option_t *options,
                      int count)
{
    fprintf(out, "usage: %s-pthreads [-p THREADS] [--seed]", app);
    for (int i = 0; i < count; i++)
        fprintf(out, " [-%c N]", options[i].letter);
    fprintf(out, "\n%s\n", summary);
    fprintf(out, "  -p, --threads N   threads (1..%d, default 1)\n", APP_MAX_THREADS);
    fprintf(out, "  --seed            the problem size of seed 004's Table 2\n");
    for (int i = 0; i < count; i++)
        fprintf(out, "  -%c, --%s N  %s (%ld..%ld; default %ld, --seed %ld)\n", options[i].letter,
                options[i].name, options[i].help, options[i].min, options[i].max,
                options[i].ci_value, options[i].seed_value);
}

static int app_parse_long(const char *text, long min, long max, long *value_p)
{
    char *end;
    long value = strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < min || value > max)
        return -1;
    *value_p = value;
    return 0;
}

int app_parse(int argc, char **argv, const char *app, const char *summary, app_option_t *options,
              int count)
{
    struct option longs[APP_MAX_OPTIONS + 4];
    char shorts[3 * APP_MAX_OPTIONS + 8] = "p:h";
    long threads = 1;
    int n = 0;

    if (count > APP_MAX_OPTIONS) {
        fprintf(stderr, "%s: %d options, at most %d\n", app, count, APP_MAX_OPTIONS);
        exit(1);
    }
    longs[n++] = (struct option){"threads", required_argument, NULL, 'p'};
    longs[n++] = (struct option){"seed", no_argument, NULL, 1};
    longs[n++] = (struct option){"help", no_argument, NULL, 'h'};
    for (int i = 0; i < count; i++) {
        longs[n++] = (struct option){options[i].name, required_argument, NULL, options[i].letter};
        size_t len = strlen(shorts);
        shorts[len] = options[i].letter;
        shorts[len + 1] = ':';
        shorts[len + 2] = '\0';
        *options[i].value = options[i].ci_value;
    }
    longs[n] = (struct option){NULL, 0, NULL, 0};

    /* --seed first, so that an option after or before it overrides it */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0)
            for (int j = 0; j < count; j++)
                *options[j].value = options[j].seed_value;
    }
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        if (c == 1)
            continue;
        if (c == 'h') {
            app_usage(stdout, app, summary, options, count);
            exit(0);
        }
        if (c == 'p') {
            if (app_parse_long(optarg, 1, APP_MAX_THREADS, &threads) != 0) {
                fprintf(stderr, "%s: -p %s: threads must be 1..%d\n", app, optarg, APP_MAX_THREADS);
                exit(1);
            }
            continue;
        }
        int found = -1;
        for (int i = 0; i < count; i++)
            if (c == options[i].letter)
                found = i;
        if (found < 0) {
            fprintf(stderr, "%s: unknown option or missing value: %s\n", app, argv[optind - 1]);
            app_usage(stderr, app, summary, options, count);
            exit(1);
        }
        const app_option_t *o = &options[found];
        if (app_parse_long(optarg, o->min, o->max, o->value) != 0) {
            fprintf(stderr, "%s: --%s %s: must be an integer in %ld..%ld\n", app, o->name, optarg,
                    o->min, o->max);
            exit(1);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument: %s\n", app, argv[optind]);
        exit(1);
    }
    return (int)threads;
}

void app_report(const char *app, int threads, const char *params, unsigned long time_us,
                int verified)
{
    printf("app=%s threads=%d %s time_us=%lu verified=%d\n", app, threads, params, time_us,
           verified);
    fflush(stdout);
}

uint64_t app_random(uint64_t stream, uint64_t index)
{
    uint64_t z = stream * 0x9e3779b97f4a7c15ULL + index * 0xd1b54a32d192ed03ULL + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double app_uniform(uint64_t stream, uint64_t index)
{
    return (double)(app_random(stream, index) >> 11) * 0x1.0p-53;
}

long app_int(uint64_t stream, uint64_t index, long low, long high)
{
    return low + (long)(app_random(stream, index) % (uint64_t)(high - low + 1));
}

size_t app_page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

size_t app_page_round(size_t bytes)
{
    size_t page = app_page_size();
    return (bytes + page - 1) / page * page;
}

void *app_page_align(void *p)
{
    uintptr_t page = app_page_size();
    return (void *)(((uintptr_t)p + page - 1) & ~(page - 1));
}

size_t app_shared_bytes(size_t bytes, int allocations)
{
    return bytes + (size_t)allocations * (app_page_size() + 64) + (1u << 20);
}

long app_page_elements(size_t element_size)
{
    size_t page = app_page_size(), a = page, b = element_size;
    while (b != 0) { /* a = gcd(page, element_size) */
        size_t t = a % b;
        a = b;
        b = t;
    }
    return (long)(page / a);
}
