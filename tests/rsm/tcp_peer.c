/*
 * pbt-tcp-peer: the victim's side of the attack tests of the tcp
 * transport's limits (tests/security/test_tcp_limits.py), processes of one
 * solo job over the tcp controller.
 *
 *   pbt-tcp-peer export SEGID SIZE      export SIZE bytes (filled with
 *                                       pbt_pattern(i, 5)) and publish them
 *                                       as SEGID; print "exporting", then
 *                                       serve until standard input closes
 *   pbt-tcp-peer import SEGID ROUNDS    import SEGID of node 0 and put, get
 *                                       back and compare 4 KiB ROUNDS times;
 *                                       print "imported in MS ms"
 *   pbt-tcp-peer slow-get SEGID THREADS BYTES
 *                                       import SEGID and get BYTES from it in
 *                                       THREADS threads, again and again;
 *                                       print "getting" once each has asked
 *                                       (the test then stops the process, so
 *                                       that it reads no more replies)
 *
 * Any failure prints a line naming the call and its error and exits 1.
 */
#include <postbox/rsm.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SEED 5

static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "pbt-tcp-peer: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void expect_ok(int rc, const char *what)
{
    if (rc != RSM_SUCCESS)
        fail("%s: %s", what, rsm_strerror(rc));
}

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 131u + SEED * 7u + (i >> 8));
}

static rsmapi_controller_handle_t controller(void)
{
    rsmapi_controller_handle_t c;

    expect_ok(rsm_get_controller("tcp", &c), "rsm_get_controller(tcp)");
    return c;
}

static int run_export(rsm_memseg_id_t segid, size_t size)
{
    rsmapi_controller_handle_t c = controller();
    rsm_memseg_export_handle_t h;
    char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char byte;

    if (mem == MAP_FAILED)
        fail("mmap of %zu bytes failed", size);
    for (size_t i = 0; i < size; i++)
        mem[i] = (char)pattern(i);
    expect_ok(rsm_memseg_export_create(c, &h, mem, size, 0), "rsm_memseg_export_create");
    expect_ok(rsm_memseg_export_publish(h, &segid, NULL, 0), "rsm_memseg_export_publish");
    printf("exporting\n");
    fflush(stdout);
    while (read(0, &byte, 1) > 0)
        ;
    expect_ok(rsm_memseg_export_unpublish(h), "rsm_memseg_export_unpublish");
    expect_ok(rsm_memseg_export_destroy(h), "rsm_memseg_export_destroy");
    expect_ok(rsm_release_controller(c), "rsm_release_controller");
    return 0;
}

static atomic_int input_closed;

static void *wait_for_input_end(void *arg)
{
    char byte;

    (void)arg;
    while (read(0, &byte, 1) > 0)
        ;
    atomic_store(&input_closed, 1);
    return NULL;
}

static long long monotonic_ns(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

static int run_export_posting(rsm_memseg_id_t segid, size_t size)
{
    rsmapi_controller_handle_t c = controller();
    rsm_memseg_export_handle_t h;
    char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned long posts = 0;
    pthread_t reader;

    if (mem == MAP_FAILED)
        fail("mmap of %zu bytes failed", size);
    expect_ok(rsm_memseg_export_create(c, &h, mem, size, 0), "rsm_memseg_export_create");
    expect_ok(rsm_memseg_export_publish(h, &segid, NULL, 0), "rsm_memseg_export_publish");
    if (pthread_create(&reader, NULL, wait_for_input_end, NULL) != 0)
        fail("pthread_create failed");
    printf("exporting\n");
    fflush(stdout);
    /* a post at most every 20 us: far more than a slow importer reads, and
     * paced (without leaving the core), since a loop of posts without a
     * pause takes the RSM lock so often that the service thread seldom gets
     * it to admit new imports */
    for (; !atomic_load(&input_closed); posts++) {
        long long posted;

        expect_ok(rsm_intr_signal_post(h, 0), "rsm_intr_signal_post");
        posted = monotonic_ns();
        while (monotonic_ns() - posted < 20 * 1000)
            ;
    }
    pthread_join(reader, NULL);
    printf("posted %lu\n", posts);
    expect_ok(rsm_memseg_export_unpublish(h), "rsm_memseg_export_unpublish");
    expect_ok(rsm_memseg_export_destroy(h), "rsm_memseg_export_destroy");
    expect_ok(rsm_release_controller(c), "rsm_release_controller");
    return 0;
}

static rsm_memseg_import_handle_t import(rsmapi_controller_handle_t c, rsm_memseg_id_t segid)
{
    rsm_memseg_import_handle_t im;

    expect_ok(rsm_memseg_import_connect(c, 0, segid, RSM_PERM_RDWR, &im),
              "rsm_memseg_import_connect");
    return im;
}

static int run_import(rsm_memseg_id_t segid, int rounds)
{
    struct timespec t0, t1;
    rsmapi_controller_handle_t c = controller();
    rsm_memseg_import_handle_t im;
    uint8_t src[4096], dst[4096];

    clock_gettime(CLOCK_MONOTONIC, &t0);
    im = import(c, segid);
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < sizeof(src); i++)
            src[i] = (uint8_t)(i + (size_t)r);
        expect_ok(rsm_memseg_import_put(im, 4096, src, sizeof(src)), "rsm_memseg_import_put");
        expect_ok(rsm_memseg_import_get(im, 4096, dst, sizeof(dst)), "rsm_memseg_import_get");
        if (memcmp(src, dst, sizeof(src)) != 0)
            fail("round %d: the get returned other bytes than the put wrote", r);
    }
    expect_ok(rsm_memseg_import_disconnect(im), "rsm_memseg_import_disconnect");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("imported in %.0f ms\n",
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
    expect_ok(rsm_release_controller(c), "rsm_release_controller");
    return 0;
}

typedef struct {
    rsmapi_controller_handle_t c;
    rsm_memseg_id_t segid;
    size_t bytes;
    pthread_barrier_t *asked;
} getter_t;

/* One import per thread: an import's gets wait for each other, imports of
 * one exporter share one connection, so the gets of all threads are on the
 * connection at once. */
static void *getter_main(void *arg)
{
    getter_t *g = arg;
    rsm_memseg_import_handle_t im = import(g->c, g->segid);
    char *buf = malloc(g->bytes);

    if (buf == NULL)
        fail("malloc of %zu bytes failed", g->bytes);
    for (int round = 0;; round++) {
        if (round == 1)
            pthread_barrier_wait(g->asked);
        expect_ok(rsm_memseg_import_get(im, 0, buf, g->bytes), "rsm_memseg_import_get");
    }
    return NULL;
}

static int run_slow_get(rsm_memseg_id_t segid, int threads, size_t bytes)
{
    pthread_barrier_t asked;
    getter_t g = {.c = controller(), .segid = segid, .bytes = bytes, .asked = &asked};

    pthread_barrier_init(&asked, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++) {
        pthread_t thread;

        if (pthread_create(&thread, NULL, getter_main, &g) != 0)
            fail("pthread_create failed");
    }
    pthread_barrier_wait(&asked);
    printf("getting\n");
    fflush(stdout);
    for (;;)
        pause();
}

static int run_hold(rsm_memseg_id_t segid, int imports)
{
    rsmapi_controller_handle_t c = controller();
    rsm_memseg_import_handle_t *held = calloc((size_t)imports, sizeof(*held));
    int count = 0;
    char byte;

    if (held == NULL)
        fail("calloc of %d handles failed", imports);
    for (; count < imports; count++) {
        int rc = rsm_memseg_import_connect(c, 0, segid, RSM_PERM_RDWR, &held[count]);

        if (rc != RSM_SUCCESS) {
            printf("refused after %d: %d\n", count, rc);
            break;
        }
    }
    printf("holding %d\n", count);
    fflush(stdout);
    while (read(0, &byte, 1) > 0)
        ;
    for (int i = 0; i < count; i++)
        expect_ok(rsm_memseg_import_disconnect(held[i]), "rsm_memseg_import_disconnect");
    free(held);
    expect_ok(rsm_release_controller(c), "rsm_release_controller");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "export") == 0)
        return run_export((rsm_memseg_id_t)strtoul(argv[2], NULL, 0),
                          (size_t)strtoull(argv[3], NULL, 0));
    if (argc == 4 && strcmp(argv[1], "import") == 0)
        return run_import((rsm_memseg_id_t)strtoul(argv[2], NULL, 0), atoi(argv[3]));
    if (argc == 5 && strcmp(argv[1], "slow-get") == 0)
        return run_slow_get((rsm_memseg_id_t)strtoul(argv[2], NULL, 0), atoi(argv[3]),
                            (size_t)strtoull(argv[4], NULL, 0));
    if (argc == 4 && strcmp(argv[1], "export-posting") == 0)
        return run_export_posting((rsm_memseg_id_t)strtoul(argv[2], NULL, 0),
                                  (size_t)strtoull(argv[3], NULL, 0));
    if (argc == 4 && strcmp(argv[1], "hold") == 0)
        return run_hold((rsm_memseg_id_t)strtoul(argv[2], NULL, 0), atoi(argv[3]));
    fprintf(stderr,
            "usage: %s export SEGID SIZE | import SEGID ROUNDS | slow-get SEGID THREADS BYTES | "
            "export-posting SEGID SIZE | hold SEGID IMPORTS\n",
            argv[0]);
    return 2;
}
