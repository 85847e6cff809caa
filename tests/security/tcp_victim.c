/*
 * pbt-sec-tcp-victim: the victim side of the tcp attack tests
 * (tests/security/test_tcp_auth.py).  It prints what it saw, one
 * "key: value" line each, and the test decides; it fails (exit 1) only
 * when the job itself cannot go on.
 *
 *   pbt-sec-tcp-victim job SEGID GO   (postbox run -n 2 --nodes 2)
 *       rank 1 prints the job id and its tcp endpoint, waits for the file
 *       GO (the attacker is ready), fills a page with a secret and
 *       publishes it as SEGID, else (the name is taken) as an id of the
 *       library's choice; rank 0 imports SEGID ("squatted-import: rc"),
 *       then the page under the id rank 1 got, puts and gets through it
 *       ("carried-on: yes").  Rank 1 then checks its page is as rank 0
 *       left it ("segment-intact: yes").
 *   pbt-sec-tcp-victim solo SEGID
 *       outside any launcher (the solo job): imports (node 0, SEGID) and,
 *       if that works, puts a secret there ("solo-import: rc"); then
 *       exports a page of its own, imports it and moves data through it
 *       ("carried-on: yes").
 *   pbt-sec-tcp-victim serve SEGID
 *       outside any launcher: exports a page, publishes it as SEGID
 *       ("published: SEGID") and keeps it published until its standard
 *       input closes.
 */
#include <postbox/job.h>
#include <postbox/rsm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096
#define GO_WAIT_MS 30000

static const char secret[] = "victim-secret-data";

static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "pbt-sec-tcp-victim: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void expect(int got, int want, const char *what)
{
    if (got != want)
        fail("%s returned %d (%s), expected %d", what, got, rsm_strerror(got), want);
}

static char *page(void)
{
    char *mem = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (mem == MAP_FAILED)
        fail("mmap failed");
    return mem;
}

static void say(const char *key, const char *fmt, ...)
{
    va_list ap;

    printf("%s: ", key);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* Put @text at @offset through @im, read it back, compare. */
static void round_trip(rsm_memseg_import_handle_t im, size_t offset, const char *text)
{
    char back[64] = {0};

    expect(rsm_memseg_import_put(im, offset, (void *)text, strlen(text) + 1), RSM_SUCCESS, "put");
    expect(rsm_memseg_import_get(im, offset, back, strlen(text) + 1), RSM_SUCCESS, "get");
    if (strcmp(back, text) != 0)
        fail("read back '%s' after putting '%s'", back, text);
}

/* Wait (in 20 ms steps, at most GO_WAIT_MS) until @path exists. */
static void wait_for(const char *path)
{
    for (int waited = 0; access(path, F_OK) != 0; waited += 20) {
        if (waited >= GO_WAIT_MS)
            fail("%s did not appear", path);
        usleep(20000);
    }
}

static void job(rsmapi_controller_handle_t c, rsm_memseg_id_t squatted, const char *go)
{
    int rank = postbox_job_rank();
    char text[64];

    if (rank == 1) {
        char endpoint[96], *mem = page();
        rsm_memseg_export_handle_t h;
        rsm_memseg_id_t segid = squatted;
        int rc;

        if (postbox_job_kvs_get("pb-tcp-1", endpoint, sizeof(endpoint)) != 0)
            fail("no tcp endpoint of rank 1");
        say("job", "%s", postbox_job_id());
        say("exporter", "%s", endpoint);
        wait_for(go);
        memcpy(mem, secret, sizeof(secret));
        expect(rsm_memseg_export_create(c, &h, mem, PAGE, 0), RSM_SUCCESS, "export_create");
        rc = rsm_memseg_export_publish(h, &segid, NULL, 0);
        say("publish-squatted", "%d", rc);
        if (rc != RSM_SUCCESS) {
            segid = 0;
            expect(rsm_memseg_export_publish(h, &segid, NULL, 0), RSM_SUCCESS, "publish");
        }
        snprintf(text, sizeof(text), "%u", (unsigned)segid);
        if (postbox_job_kvs_put("victim-segid", text) != 0)
            fail("kvs put failed");
        if (postbox_job_fence() != 0)
            fail("fence failed");
        if (postbox_job_fence() != 0) /* rank 0 is done */
            fail("fence failed");
        say("segment-intact", "%s",
            strcmp(mem + 512, "from rank 0") == 0 && memcmp(mem, secret, sizeof(secret)) == 0
                ? "yes"
                : "no");
        expect(rsm_memseg_export_unpublish(h), RSM_SUCCESS, "unpublish");
        expect(rsm_memseg_export_destroy(h), RSM_SUCCESS, "export_destroy");
    } else {
        rsm_memseg_import_handle_t im;
        rsm_memseg_id_t segid;
        int rc;

        if (postbox_job_fence() != 0)
            fail("fence failed");
        if (postbox_job_kvs_get("victim-segid", text, sizeof(text)) != 0)
            fail("kvs get failed");
        segid = (rsm_memseg_id_t)strtoul(text, NULL, 10);
        rc = rsm_memseg_import_connect(c, postbox_job_node(1), squatted, RSM_PERM_RDWR, &im);
        say("squatted-import", "%d", rc);
        if (rc == RSM_SUCCESS)
            expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
        expect(rsm_memseg_import_connect(c, postbox_job_node(1), segid, RSM_PERM_RDWR, &im),
               RSM_SUCCESS, "import of the published page");
        round_trip(im, 512, "from rank 0");
        expect(rsm_memseg_import_get(im, 0, text, sizeof(secret)), RSM_SUCCESS, "get");
        if (memcmp(text, secret, sizeof(secret)) != 0)
            fail("the page does not hold what rank 1 put there");
        expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
        say("carried-on", "yes");
        if (postbox_job_fence() != 0)
            fail("fence failed");
    }
}

static void solo(rsmapi_controller_handle_t c, rsm_memseg_id_t target)
{
    rsm_memseg_import_handle_t im;
    rsm_memseg_export_handle_t h;
    rsm_memseg_id_t segid = 0;
    char *mem = page();
    int rc;

    rc = rsm_memseg_import_connect(c, 0, target, RSM_PERM_RDWR, &im);
    say("solo-import", "%d", rc);
    if (rc == RSM_SUCCESS) {
        rc = rsm_memseg_import_put(im, 0, (void *)secret, sizeof(secret));
        say("solo-put", "%d", rc);
        (void)rsm_memseg_import_disconnect(im);
    }
    /* the process's own tcp traffic still works */
    expect(rsm_memseg_export_create(c, &h, mem, PAGE, 0), RSM_SUCCESS, "export_create");
    expect(rsm_memseg_export_publish(h, &segid, NULL, 0), RSM_SUCCESS, "publish");
    expect(rsm_memseg_import_connect(c, 0, segid, RSM_PERM_RDWR, &im), RSM_SUCCESS,
           "import of its own page");
    round_trip(im, 0, "solo round trip");
    expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
    expect(rsm_memseg_export_unpublish(h), RSM_SUCCESS, "unpublish");
    expect(rsm_memseg_export_destroy(h), RSM_SUCCESS, "export_destroy");
    say("carried-on", "yes");
}

static void serve(rsmapi_controller_handle_t c, rsm_memseg_id_t segid)
{
    rsm_memseg_export_handle_t h;
    char *mem = page(), rest[64];

    memcpy(mem, secret, sizeof(secret));
    expect(rsm_memseg_export_create(c, &h, mem, PAGE, 0), RSM_SUCCESS, "export_create");
    expect(rsm_memseg_export_publish(h, &segid, NULL, 0), RSM_SUCCESS, "publish");
    say("published", "%#x", (unsigned)segid);
    while (fread(rest, 1, sizeof(rest), stdin) > 0)
        ;
    expect(rsm_memseg_export_unpublish(h), RSM_SUCCESS, "unpublish");
    expect(rsm_memseg_export_destroy(h), RSM_SUCCESS, "export_destroy");
}

int main(int argc, char **argv)
{
    rsmapi_controller_handle_t c;
    rsm_memseg_id_t segid;
    int is_job;

    if (argc < 3 ||
        (strcmp(argv[1], "job") != 0 && strcmp(argv[1], "solo") != 0 &&
         strcmp(argv[1], "serve") != 0) ||
        (strcmp(argv[1], "job") == 0 && argc != 4)) {
        fprintf(stderr, "usage: pbt-sec-tcp-victim job SEGID GO | solo SEGID | serve SEGID\n");
        return 2;
    }
    is_job = strcmp(argv[1], "job") == 0;
    segid = (rsm_memseg_id_t)strtoul(argv[2], NULL, 0);
    if (is_job) {
        if (postbox_job_init() != 0)
            fail("postbox_job_init failed");
        if (postbox_job_size() != 2 || postbox_job_node_count() != 2)
            fail("run as 2 ranks on 2 nodes: postbox run -n 2 --nodes 2");
    }
    expect(rsm_get_controller("tcp", &c), RSM_SUCCESS, "get_controller(tcp)");
    if (is_job)
        job(c, segid, argv[3]);
    else if (strcmp(argv[1], "serve") == 0)
        serve(c, segid);
    else
        solo(c, segid);
    expect(rsm_release_controller(c), RSM_SUCCESS, "release_controller");
    if (is_job)
        postbox_job_finalize();
    return 0;
}
