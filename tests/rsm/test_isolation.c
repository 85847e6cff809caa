/* Job isolation: POSTBOX_JOB_ID, POSTBOX_JOB_SECRET, POSTBOX_NODE_ID and
 * user ids.  The job environment is read once per process, on first use, so
 * every process here sets its environment before its first RSM call: peers
 * are forked before the case's own first call. */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rsm_util.h"

#define PG (pbt_page_size())

static const char secret1[] = "00112233445566778899aabbccddeeff";
static const char secret2[] = "ffeeddccbbaa99887766554433221100";

typedef struct {
    const char *job;         /* NULL: leave unset (solo job) */
    const char *secret;      /* NULL: leave unset */
    const char *node;        /* NULL: leave unset */
    const char *runtime_dir; /* XDG_RUNTIME_DIR (where the solo key is); NULL: inherited */
    int drop_to_nobody;
    int expect1, expect2;        /* accepted results of connect */
    rsm_node_id_t node_override; /* connect to this node if non-zero */
} imp_env_t;

static char job_a[64], job_b[64];

static void set_env(const char *job, const char *secret, const char *node)
{
    unsetenv("POSTBOX_JOB_ID");
    unsetenv("POSTBOX_JOB_SECRET");
    unsetenv("POSTBOX_NODE_ID");
    if (job != NULL)
        setenv("POSTBOX_JOB_ID", job, 1);
    if (secret != NULL)
        setenv("POSTBOX_JOB_SECRET", secret, 1);
    if (node != NULL)
        setenv("POSTBOX_NODE_ID", node, 1);
}

/* an importer in its own environment: tries to connect and checks the result */
static void importer(pbt_peer_t *self, void *arg)
{
    const imp_env_t *e = arg;
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_seginfo_t si;
    int rc;

    set_env(e->job, e->secret, e->node);
    if (e->runtime_dir != NULL)
        setenv("XDG_RUNTIME_DIR", e->runtime_dir, 1);
    if (e->drop_to_nobody) {
        CHECK_SYS(setgroups(0, NULL));
        CHECK_SYS(setgid(65534));
        CHECK_SYS(setuid(65534));
    }
    pbt_recv(self->rd, &si, sizeof(si));
    c = pbt_ctlr_get();
    rc = rsm_memseg_import_connect(c, e->node_override ? e->node_override : si.node, si.segid,
                                   RSM_PERM_RDWR, &im);
    CHECK_MSG(rc == e->expect1 || rc == e->expect2,
              "connect from job %s%s returned %d (%s), expected %d (%s) or %d (%s)",
              e->job ? e->job : "(solo)", e->drop_to_nobody ? " as nobody" : "", rc,
              rsm_strerror(rc), e->expect1, rsm_strerror(e->expect1), e->expect2,
              rsm_strerror(e->expect2));
    if (rc == RSM_SUCCESS) {
        uint8_t buf[16];

        CHECK_OK(rsm_memseg_import_get(im, 0, buf, sizeof(buf)));
        CHECK(pbt_check_pattern(buf, sizeof(buf), 0, 0) == (size_t)-1);
        CHECK_OK(rsm_memseg_import_disconnect(im));
    }
    rc = rsm_memseg_import_connect(c, e->node_override ? e->node_override : si.node, si.segid,
                                   RSM_PERM_READ, &im);
    CHECK_MSG(rc == e->expect1 || rc == e->expect2, "read-only connect returned %d (%s)", rc,
              rsm_strerror(rc));
    if (rc == RSM_SUCCESS)
        CHECK_OK(rsm_memseg_import_disconnect(im));
    CHECK_OK(rsm_release_controller(c));
    pbt_send_u32(self->wr, 1);
}

/* fork the importer, then become the exporter in (@job, @secret, @node) */
static void run(imp_env_t *e, const char *job, const char *secret, const char *node)
{
    pbt_peer_t p = pbt_peer_start(importer, e);
    pbt_local_export_t le;
    pbt_seginfo_t si;

    set_env(job, secret, node);
    pbt_local_export(&le, PG, 0, 0);
    pbt_fill_pattern(le.mem, PG, 0, 0);
    si.node = le.node;
    si.segid = le.segid;
    si.size = le.size;
    pbt_send(p.wr, &si, sizeof(si));
    CHECK_EQ_U64(pbt_recv_u32(p.rd), 1);
    pbt_peer_join(&p, 10000, 0);
    pbt_local_export_end(&le);
}

static void name_jobs(void)
{
    snprintf(job_a, sizeof(job_a), "pbt-job-a-%d", (int)getpid());
    snprintf(job_b, sizeof(job_b), "pbt-job-b-%d", (int)getpid());
}

static void case_connect_from_other_job_seg_not_published(void)
{
    static imp_env_t e;

    name_jobs();
    e = (imp_env_t){.job = job_b,
                    .secret = secret1,
                    .expect1 = RSMERR_SEG_NOT_PUBLISHED,
                    .expect2 = RSMERR_SEG_NOT_PUBLISHED};
    run(&e, job_a, secret1, NULL);
}

static void case_connect_from_job_to_solo_seg_not_published(void)
{
    static imp_env_t e;

    name_jobs();
    e = (imp_env_t){.job = job_b,
                    .secret = secret1,
                    .expect1 = RSMERR_SEG_NOT_PUBLISHED,
                    .expect2 = RSMERR_SEG_NOT_PUBLISHED};
    run(&e, NULL, NULL, NULL);
}

static void case_connect_same_job_wrong_secret_perm_denied(void)
{
    static imp_env_t e;

    name_jobs();
    e = (imp_env_t){.job = job_a,
                    .secret = secret2,
                    .expect1 = RSMERR_PERM_DENIED,
                    .expect2 = RSMERR_PERM_DENIED};
    run(&e, job_a, secret1, NULL);
}

static void case_connect_same_job_without_secret_denied(void)
{
    static imp_env_t e;

    name_jobs();
    e = (imp_env_t){.job = job_a,
                    .secret = NULL,
                    .expect1 = RSMERR_PERM_DENIED,
                    .expect2 = RSMERR_SEG_NOT_PUBLISHED};
    run(&e, job_a, secret1, NULL);
}

static void case_connect_same_job_same_secret_succeeds(void)
{
    static imp_env_t e;

    name_jobs();
    e = (imp_env_t){
        .job = job_a, .secret = secret1, .expect1 = RSM_SUCCESS, .expect2 = RSM_SUCCESS};
    run(&e, job_a, secret1, NULL);
}

static void case_connect_same_node_id_from_env_succeeds(void)
{
    static imp_env_t e;

    name_jobs();
    e = (imp_env_t){.job = job_a,
                    .secret = secret1,
                    .node = "3",
                    .expect1 = RSM_SUCCESS,
                    .expect2 = RSM_SUCCESS};
    run(&e, job_a, secret1, "3");
}

static void case_connect_from_other_node_unreachable(void)
{
    static imp_env_t e;

    if (!pbt_is_shm())
        pbt_skip("shm reaches only its own node");
    name_jobs();
    /* the importer is node 4 and asks shm for the exporter's node 3 */
    e = (imp_env_t){.job = job_a,
                    .secret = secret1,
                    .node = "4",
                    .expect1 = RSMERR_REMOTE_NODE_UNREACHABLE,
                    .expect2 = RSMERR_REMOTE_NODE_UNREACHABLE};
    run(&e, job_a, secret1, "3");
}

static void case_connect_from_other_uid_denied(void)
{
    static imp_env_t e;

    if (geteuid() != 0)
        pbt_skip("needs root to run an importer as another user");
    e = (imp_env_t){
        .drop_to_nobody = 1, .expect1 = RSMERR_PERM_DENIED, .expect2 = RSMERR_SEG_NOT_PUBLISHED};
    run(&e, NULL, NULL, NULL);
}

static void case_connect_from_other_uid_claiming_solo_job_denied(void)
{
    static imp_env_t e;
    static char solo[32];

    if (geteuid() != 0)
        pbt_skip("needs root to run an importer as another user");
    snprintf(solo, sizeof(solo), "solo-%u", (unsigned)getuid());
    e = (imp_env_t){.job = solo,
                    .drop_to_nobody = 1,
                    .expect1 = RSMERR_PERM_DENIED,
                    .expect2 = RSMERR_SEG_NOT_PUBLISHED};
    run(&e, NULL, NULL, NULL);
}

/* the solo job's key is the user's solo key: a process of the same user
 * whose runtime directory holds another key (or a process that assumes the
 * old all-zero key) is not of the job */
static void case_solo_importer_with_other_solo_key_denied(void)
{
    static imp_env_t e;
    static char dir[64];
    char path[128];

    if (!pbt_is_shm())
        pbt_skip("the tcp transport's solo job is tested in tests/security");
    snprintf(dir, sizeof(dir), "/tmp/pbt-runtime-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    e = (imp_env_t){
        .runtime_dir = dir, .expect1 = RSMERR_PERM_DENIED, .expect2 = RSMERR_PERM_DENIED};
    run(&e, NULL, NULL, NULL);
    snprintf(path, sizeof(path), "%s/postbox/solo-key", dir);
    CHECK_SYS(unlink(path));
    snprintf(path, sizeof(path), "%s/postbox", dir);
    CHECK_SYS(rmdir(path));
    CHECK_SYS(rmdir(dir));
}

/* an exporter of another user is refused by the importer, even when it
 * knows the job secret and grants everyone access: the kernel says who
 * answers the rendezvous */
static void exporter_as_nobody(pbt_peer_t *self, void *arg)
{
    pbt_local_export_t le;
    pbt_seginfo_t si;
    rsmapi_access_entry_t everyone;

    (void)arg;
    set_env(job_a, secret1, NULL);
    CHECK_SYS(setgroups(0, NULL));
    CHECK_SYS(setgid(65534));
    CHECK_SYS(setuid(65534));
    pbt_local_export(&le, PG, 0, 1);
    everyone = (rsmapi_access_entry_t){.ae_node = le.node, .ae_permission = 0666};
    CHECK_OK(rsm_memseg_export_publish(le.h, &le.segid, &everyone, 1));
    le.published = 1;
    si.node = le.node;
    si.segid = le.segid;
    si.size = le.size;
    pbt_send(self->wr, &si, sizeof(si));
    pbt_recv_u32(self->rd);
    pbt_local_export_end(&le);
}

static void case_connect_to_exporter_of_other_uid_denied(void)
{
    rsmapi_controller_handle_t c;
    rsm_memseg_import_handle_t im;
    pbt_seginfo_t si;
    pbt_peer_t p;

    if (!pbt_is_shm())
        pbt_skip("the tcp transport's rendezvous is tested in tests/security");
    if (geteuid() != 0)
        pbt_skip("needs root to run an exporter as another user");
    name_jobs();
    p = pbt_peer_start(exporter_as_nobody, NULL);
    set_env(job_a, secret1, NULL);
    pbt_recv(p.rd, &si, sizeof(si));
    c = pbt_ctlr_get();
    CHECK_RC(rsm_memseg_import_connect(c, si.node, si.segid, RSM_PERM_READ, &im),
             RSMERR_PERM_DENIED);
    CHECK_OK(rsm_release_controller(c));
    pbt_send_u32(p.wr, 1);
    pbt_peer_join(&p, 10000, 0);
}

/* segment ids are per job: two jobs may publish the same id */
static void publisher_in_job_b(pbt_peer_t *self, void *arg)
{
    pbt_local_export_t le;
    rsm_memseg_id_t id;

    (void)arg;
    set_env(job_b, secret2, NULL);
    id = pbt_recv_u32(self->rd);
    pbt_local_export(&le, PG, 0, 1);
    CHECK_OK(rsm_memseg_export_publish(le.h, &id, NULL, 0));
    le.published = 1;
    pbt_local_export_end(&le);
    pbt_send_u32(self->wr, 1);
}

static void case_publish_same_id_in_two_jobs(void)
{
    pbt_peer_t p;
    pbt_local_export_t le;

    name_jobs();
    p = pbt_peer_start(publisher_in_job_b, NULL);
    set_env(job_a, secret1, NULL);
    pbt_local_export(&le, PG, 0, 0);
    pbt_send_u32(p.wr, le.segid);
    CHECK_EQ_U64(pbt_recv_u32(p.rd), 1);
    pbt_peer_join(&p, 10000, 0);
    pbt_local_export_end(&le);
}

static void case_job_secret_removed_from_environment(void)
{
    pbt_local_export_t le;

    name_jobs();
    set_env(job_a, secret1, NULL);
    pbt_local_export(&le, PG, 0, 0);
    CHECK_MSG(getenv("POSTBOX_JOB_SECRET") == NULL,
              "POSTBOX_JOB_SECRET is still in the environment after first use");
    pbt_local_export_end(&le);
}

static const pbt_case_t cases[] = {
    PBT_CASE(connect_from_other_job_seg_not_published),
    PBT_CASE(connect_from_job_to_solo_seg_not_published),
    PBT_CASE(connect_same_job_wrong_secret_perm_denied),
    PBT_CASE(connect_same_job_without_secret_denied),
    PBT_CASE(connect_same_job_same_secret_succeeds),
    PBT_CASE(connect_same_node_id_from_env_succeeds),
    PBT_CASE(connect_from_other_node_unreachable),
    PBT_CASE(connect_from_other_uid_denied),
    PBT_CASE(connect_from_other_uid_claiming_solo_job_denied),
    PBT_CASE(solo_importer_with_other_solo_key_denied),
    PBT_CASE(connect_to_exporter_of_other_uid_denied),
    PBT_CASE(publish_same_id_in_two_jobs),
    PBT_CASE(job_secret_removed_from_environment),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
