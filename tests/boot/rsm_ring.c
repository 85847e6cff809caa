/*
 * pbt-rsm-ring: an RSM program for any launcher (tests/boot/run_prterun.sh
 * runs it under prterun).  Every rank exports a segment and publishes its
 * id in the job's key-value space; each rank imports the segment of the
 * next rank (a ring) through "shm" when the job puts that rank on its own
 * node, else through "tcp", puts its greeting there, closes the barrier and
 * signals; the exporter waits for the signal and checks the greeting.  So
 * shm between ranks of a node works only if the launcher's node locality
 * reached the RSM layer.
 *
 * Each rank prints "rank R: ok via shm|tcp"; a failure exits non-zero with
 * a message.
 *
 * With the argument "abort" the last rank ends the job instead
 * (postbox_job_abort with exit code 7) while the others wait in a fence:
 * the launcher must end them (or fail their fence), and none prints
 * "still running".
 */
#include <postbox/job.h>
#include <postbox/rsm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SEG_SIZE ((size_t)1 << 16)
#define WAIT_MS 20000

static int rank;

static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "pbt-rsm-ring rank %d: ", rank);
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

int main(int argc, char **argv)
{
    rsmapi_controller_handle_t shm, tcp, c;
    rsm_memseg_export_handle_t ex;
    rsm_memseg_import_handle_t im;
    rsmapi_barrier_t bar;
    rsm_memseg_id_t segid = 0;
    char key[32], text[32], greeting[32], *mem;
    int size, next, prev;
    const char *via;

    if (postbox_job_init() != 0)
        fail("postbox_job_init failed");
    rank = postbox_job_rank();
    size = postbox_job_size();
    if (argc > 1 && strcmp(argv[1], "abort") == 0) {
        if (rank == size - 1)
            postbox_job_abort(7, "pbt-rsm-ring: the abort test");
        /* a fence the launcher fails (the job is ending) is no error */
        if (postbox_job_fence() != 0)
            return 3;
        printf("rank %d: still running\n", rank);
        return 1;
    }
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    expect(rsm_get_controller("shm", &shm), RSM_SUCCESS, "get_controller(shm)");
    expect(rsm_get_controller("tcp", &tcp), RSM_SUCCESS, "get_controller(tcp)");
    mem = mmap(NULL, SEG_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        fail("mmap failed");
    /* a segment on the controller that reaches the rank importing it */
    c = postbox_job_node(prev) == postbox_job_node(rank) ? shm : tcp;
    expect(rsm_memseg_export_create(c, &ex, mem, SEG_SIZE, 0), RSM_SUCCESS, "export_create");
    expect(rsm_memseg_export_publish(ex, &segid, NULL, 0), RSM_SUCCESS, "publish");
    snprintf(key, sizeof(key), "ring-segid-%d", rank);
    snprintf(text, sizeof(text), "%u", (unsigned)segid);
    if (postbox_job_kvs_put(key, text) != 0 || postbox_job_fence() != 0)
        fail("kvs put or fence failed");

    snprintf(key, sizeof(key), "ring-segid-%d", next);
    if (postbox_job_kvs_get(key, text, sizeof(text)) != 0)
        fail("rank %d put no %s", next, key);
    via = postbox_job_node(next) == postbox_job_node(rank) ? "shm" : "tcp";
    c = via[0] == 's' ? shm : tcp;
    expect(rsm_memseg_import_connect(c, postbox_job_node(next),
                                     (rsm_memseg_id_t)strtoul(text, NULL, 10), RSM_PERM_RDWR, &im),
           RSM_SUCCESS, "import_connect");
    snprintf(greeting, sizeof(greeting), "from rank %d", rank);
    expect(rsm_memseg_import_init_barrier(im, RSM_BAR_DEFAULT, &bar), RSM_SUCCESS, "init_barrier");
    expect(rsm_memseg_import_open_barrier(&bar), RSM_SUCCESS, "open_barrier");
    expect(rsm_memseg_import_put(im, 0, greeting, sizeof(greeting)), RSM_SUCCESS, "put");
    expect(rsm_memseg_import_close_barrier(&bar), RSM_SUCCESS, "close_barrier");
    expect(rsm_intr_signal_post(im, 0), RSM_SUCCESS, "signal_post");

    expect(rsm_intr_signal_wait(ex, WAIT_MS), RSM_SUCCESS, "signal_wait");
    snprintf(greeting, sizeof(greeting), "from rank %d", prev);
    if (memcmp(mem, greeting, strlen(greeting) + 1) != 0)
        fail("the segment holds '%.31s', not rank %d's greeting", mem, prev);
    if (postbox_job_fence() != 0)
        fail("fence failed");

    expect(rsm_memseg_import_destroy_barrier(&bar), RSM_SUCCESS, "destroy_barrier");
    expect(rsm_memseg_import_disconnect(im), RSM_SUCCESS, "disconnect");
    if (postbox_job_fence() != 0)
        fail("fence failed");
    expect(rsm_memseg_export_unpublish(ex), RSM_SUCCESS, "unpublish");
    expect(rsm_memseg_export_destroy(ex), RSM_SUCCESS, "export_destroy");
    rsm_release_controller(shm);
    rsm_release_controller(tcp);
    postbox_job_finalize();
    printf("rank %d: ok via %s\n", rank, via);
    return 0;
}
