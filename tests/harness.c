/* The Postbox C test harness: see harness.h. */
#include "harness.h"

#include <postbox/job.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- failure reporting ---------------------------------------------------- */

static const char *current_case = "?";

void pbt_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "  %s: %s:%d: [pid %d] %s\n", current_case, file, line, (int)getpid(), msg);
    _exit(1);
}

void pbt_skip(const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "  %s: skipped: %s\n", current_case, msg);
    _exit(PBT_EXIT_SKIP);
}

/* ---- pipes ------------------------------------------------------------------ */

void pbt_send(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        CHECK_MSG(n > 0, "write to pipe failed: %m");
        p += n;
        len -= (size_t)n;
    }
}

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int pbt_recv_timed(int fd, void *buf, size_t len, int timeout_ms)
{
    char *p = buf;
    size_t got = 0;
    long deadline = timeout_ms < 0 ? 0 : now_ms() + timeout_ms;

    while (got < len) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int wait = -1;
        int r;
        ssize_t n;

        if (timeout_ms >= 0) {
            long left = deadline - now_ms();
            wait = left < 0 ? 0 : (int)left;
        }
        r = poll(&pfd, 1, wait);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK_MSG(r >= 0, "poll on pipe failed: %m");
        if (r == 0)
            return -1;
        n = read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK_MSG(n >= 0, "read from pipe failed: %m");
        if (n == 0) {
            CHECK_MSG(got == 0, "pipe closed after %zu of %zu bytes", got, len);
            return 0;
        }
        got += (size_t)n;
    }
    return 1;
}

void pbt_recv(int fd, void *buf, size_t len)
{
    int r = pbt_recv_timed(fd, buf, len, -1);

    CHECK_MSG(r == 1, "peer closed its pipe (it died or failed)");
}

void pbt_send_u32(int fd, uint32_t v)
{
    pbt_send(fd, &v, sizeof(v));
}

uint32_t pbt_recv_u32(int fd)
{
    uint32_t v;

    pbt_recv(fd, &v, sizeof(v));
    return v;
}

/* ---- processes ---------------------------------------------------------- */

int pbt_waitpid_timed(pid_t pid, int timeout_ms, int *status)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    pid_t r;

    if (pidfd >= 0) {
        struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
        long deadline = now_ms() + timeout_ms;
        int pr;

        for (;;) {
            long left = deadline - now_ms();

            pr = poll(&pfd, 1, timeout_ms < 0 ? -1 : (left < 0 ? 0 : (int)left));
            if (pr < 0 && errno == EINTR)
                continue;
            break;
        }
        close(pidfd);
        if (pr == 0)
            return 0;
    } else {
        /* no pidfd: poll the status at 10 ms steps (old kernels only) */
        long deadline = now_ms() + timeout_ms;

        for (;;) {
            r = waitpid(pid, status, WNOHANG);
            if (r == pid)
                return 1;
            if (timeout_ms >= 0 && now_ms() >= deadline)
                return 0;
            pbt_sleep_ms(10);
        }
    }
    do {
        r = waitpid(pid, status, 0);
    } while (r < 0 && errno == EINTR);
    CHECK_MSG(r == pid, "waitpid(%d) failed: %m", (int)pid);
    return 1;
}

#define MAX_PEERS 64
static pid_t live_peers[MAX_PEERS];
static int n_live_peers;

static void peer_forget(pid_t pid)
{
    for (int i = 0; i < n_live_peers; i++) {
        if (live_peers[i] == pid) {
            live_peers[i] = live_peers[--n_live_peers];
            return;
        }
    }
}

/* fail if this process forked peers it did not reap */
static void peers_check_reaped(void)
{
    if (n_live_peers > 0) {
        for (int i = 0; i < n_live_peers; i++)
            kill(live_peers[i], SIGKILL);
        pbt_fail(__FILE__, __LINE__, "%d peer(s) not joined by the test (first pid %d)",
                 n_live_peers, (int)live_peers[0]);
    }
}

pbt_peer_t pbt_peer_start(void (*fn)(pbt_peer_t *self, void *arg), void *arg)
{
    int down[2], up[2];
    pbt_peer_t peer;
    pid_t parent = getpid();
    pid_t pid;

    CHECK_SYS(pipe2(down, O_CLOEXEC));
    CHECK_SYS(pipe2(up, O_CLOEXEC));
    CHECK_MSG(n_live_peers < MAX_PEERS, "too many peers");
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    CHECK_SYS(pid);
    if (pid == 0) {
        pbt_peer_t self = {.pid = getpid(), .rd = down[0], .wr = up[1]};

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        close(down[1]);
        close(up[0]);
        n_live_peers = 0;
        fn(&self, arg);
        peers_check_reaped();
        _exit(0);
    }
    close(down[0]);
    close(up[1]);
    live_peers[n_live_peers++] = pid;
    peer.pid = pid;
    peer.rd = up[0];
    peer.wr = down[1];
    return peer;
}

void pbt_peer_close(pbt_peer_t *peer)
{
    if (peer->rd >= 0)
        close(peer->rd);
    if (peer->wr >= 0)
        close(peer->wr);
    peer->rd = peer->wr = -1;
}

static void describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "wait status 0x%x", status);
}

int pbt_peer_wait_status(pbt_peer_t *peer, int timeout_ms)
{
    int status;

    if (peer->pid <= 0)
        return -1;
    if (!pbt_waitpid_timed(peer->pid, timeout_ms, &status))
        return -1;
    peer_forget(peer->pid);
    peer->pid = -1;
    return status;
}

void pbt_peer_join(pbt_peer_t *peer, int timeout_ms, int want_status)
{
    pid_t pid = peer->pid;
    int status = pbt_peer_wait_status(peer, timeout_ms);
    char desc[128];

    pbt_peer_close(peer);
    if (status == -1) {
        kill(pid, SIGKILL);
        pbt_fail(__FILE__, __LINE__, "peer %d did not finish within %d ms (hang)", (int)pid,
                 timeout_ms);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == want_status)
        return;
    describe_status(status, desc, sizeof(desc));
    pbt_fail(__FILE__, __LINE__, "peer %d ended with %s, expected exit status %d", (int)pid, desc,
             want_status);
}

void pbt_peer_kill(pbt_peer_t *peer)
{
    int status;

    if (peer->pid <= 0)
        return;
    kill(peer->pid, SIGKILL);
    CHECK(pbt_waitpid_timed(peer->pid, 10000, &status));
    peer_forget(peer->pid);
    peer->pid = -1;
}

void pbt_sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* ---- memory ----------------------------------------------------------------- */

size_t pbt_page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

void *pbt_alloc_pages(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK_MSG(p != MAP_FAILED, "mmap of %zu bytes failed: %m", size);
    return p;
}

void pbt_free_pages(void *p, size_t size)
{
    if (p != NULL)
        munmap(p, size);
}

void pbt_fill_pattern(void *buf, size_t len, size_t base, unsigned seed)
{
    uint8_t *b = buf;

    for (size_t i = 0; i < len; i++)
        b[i] = pbt_pattern(base + i, seed);
}

size_t pbt_check_pattern(const void *buf, size_t len, size_t base, unsigned seed)
{
    const uint8_t *b = buf;

    for (size_t i = 0; i < len; i++) {
        if (b[i] != pbt_pattern(base + i, seed))
            return i;
    }
    return (size_t)-1;
}

int pbt_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    CHECK_MSG(d != NULL, "opendir /proc/self/fd: %m");
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.')
            n++;
    }
    closedir(d);
    return n - 1; /* the directory stream itself */
}

/* ---- leftovers in /dev/shm and /tmp ----------------------------------------- */

static const char *const watched_dirs[] = {"/dev/shm", "/tmp"};

struct pbt_fs_snapshot {
    size_t n;
    char **names; /* "dir/entry" */
};

static int fs_ignored(const char *entry)
{
    const char *env = getenv("POSTBOX_TEST_LEAK_IGNORE");
    char list[512];
    char *save = NULL;
    unsigned uid;
    int end = 0;

    /* /tmp/postbox-<uid>: the solo job's key directory, meant to stay */
    if (sscanf(entry, "postbox-%u%n", &uid, &end) == 1 && entry[end] == '\0')
        return 1;

    snprintf(list, sizeof(list), "%s", env != NULL ? env : "bash_tool_");
    for (char *tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (*tok != '\0' && strncmp(entry, tok, strlen(tok)) == 0)
            return 1;
    }
    return 0;
}

/* call @fn for each entry of the watched directories */
static void fs_walk(void (*fn)(const char *path, void *ctx), void *ctx)
{
    for (size_t d = 0; d < sizeof(watched_dirs) / sizeof(watched_dirs[0]); d++) {
        DIR *dir = opendir(watched_dirs[d]);
        struct dirent *e;
        char path[1024];

        if (dir == NULL)
            continue;
        while ((e = readdir(dir)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            if (fs_ignored(e->d_name))
                continue;
            snprintf(path, sizeof(path), "%s/%s", watched_dirs[d], e->d_name);
            fn(path, ctx);
        }
        closedir(dir);
    }
}

static void fs_add(const char *path, void *ctx)
{
    pbt_fs_snapshot_t *s = ctx;
    char **names = realloc(s->names, (s->n + 1) * sizeof(*names));

    CHECK(names != NULL);
    s->names = names;
    s->names[s->n] = strdup(path);
    CHECK(s->names[s->n] != NULL);
    s->n++;
}

pbt_fs_snapshot_t *pbt_fs_snapshot(void)
{
    pbt_fs_snapshot_t *s = calloc(1, sizeof(*s));

    CHECK(s != NULL);
    fs_walk(fs_add, s);
    return s;
}

void pbt_fs_snapshot_free(pbt_fs_snapshot_t *snap)
{
    if (snap == NULL)
        return;
    for (size_t i = 0; i < snap->n; i++)
        free(snap->names[i]);
    free(snap->names);
    free(snap);
}

struct fs_diff {
    const pbt_fs_snapshot_t *snap;
    int count;
    char *out;
    size_t outlen;
};

static void fs_compare(const char *path, void *ctx)
{
    struct fs_diff *d = ctx;
    size_t used;

    for (size_t i = 0; i < d->snap->n; i++) {
        if (strcmp(d->snap->names[i], path) == 0)
            return;
    }
    d->count++;
    if (d->out == NULL)
        return;
    used = strlen(d->out);
    if (used + strlen(path) + 2 < d->outlen)
        snprintf(d->out + used, d->outlen - used, "%s%s", used > 0 ? " " : "", path);
}

static int fs_new_once(const pbt_fs_snapshot_t *snap, char *out, size_t outlen)
{
    struct fs_diff d = {.snap = snap, .count = 0, .out = out, .outlen = outlen};

    if (out != NULL && outlen > 0)
        out[0] = '\0';
    fs_walk(fs_compare, &d);
    return d.count;
}

/* is the space-separated word @name in @list? */
static int word_in(const char *list, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = strstr(list, name); p != NULL; p = strstr(p + 1, name)) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    }
    return 0;
}

/* New entries that are still there a little later: the machine is shared,
 * and other programs' temporary files (compilers, ...) come and go, while a
 * leak of the processes under test, which are all gone by now, stays. */
int pbt_fs_new_entries(const pbt_fs_snapshot_t *snap, char *out, size_t outlen)
{
    char first[2048], again[2048];
    int n = fs_new_once(snap, first, sizeof(first));

    for (int round = 0; n > 0 && round < 3; round++) {
        char kept[2048] = "";
        char *save = NULL;

        pbt_sleep_ms(300);
        fs_new_once(snap, again, sizeof(again));
        n = 0;
        for (char *tok = strtok_r(first, " ", &save); tok != NULL;
             tok = strtok_r(NULL, " ", &save)) {
            if (word_in(again, tok)) {
                size_t used = strlen(kept);

                snprintf(kept + used, sizeof(kept) - used, "%s%s", used ? " " : "", tok);
                n++;
            }
        }
        memcpy(first, kept, sizeof(first));
    }
    if (out != NULL && outlen > 0)
        snprintf(out, outlen, "%s", n > 0 ? first : "");
    return n;
}

void pbt_fs_check(const pbt_fs_snapshot_t *snap, const char *when)
{
    char names[2048];
    int n = pbt_fs_new_entries(snap, names, sizeof(names));

    CHECK_MSG(n == 0, "%d new entr%s in /dev/shm or /tmp %s: %s", n, n == 1 ? "y" : "ies", when,
              names);
}

/* ---- the runner ---------------------------------------------------------- */

enum {
    RESULT_PASS,
    RESULT_FAIL,
    RESULT_SKIP
};

static int case_selected(const char *name, int argc, char **argv)
{
    if (argc <= 1)
        return 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) == 0)
            return 1;
    }
    return 0;
}

/* reap every zombie child (reparented descendants included) without blocking */
static void reap_zombies(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* Processes left by a case: our children (orphans come back to us, the
 * subreaper) and members of the case's process group @pgid.  Stores up to
 * @max pids; returns how many there are (zombies excluded). */
static int find_strays(pid_t pgid, pid_t *pids, int max)
{
    DIR *proc = opendir("/proc");
    struct dirent *e;
    pid_t self = getpid();
    int n = 0;

    if (proc == NULL)
        return 0;
    while ((e = readdir(proc)) != NULL) {
        char path[300], buf[512], state;
        int pid, ppid, grp;
        const char *p;
        FILE *f;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        f = fopen(path, "re");
        if (f == NULL)
            continue;
        p = fgets(buf, sizeof(buf), f);
        fclose(f);
        if (p == NULL || (p = strrchr(buf, ')')) == NULL)
            continue;
        /* pid (comm) state ppid pgrp ... */
        if (sscanf(buf, "%d", &pid) != 1 || sscanf(p + 1, " %c %d %d", &state, &ppid, &grp) != 3)
            continue;
        if (pid == self || state == 'Z' || (ppid != self && grp != pgid))
            continue;
        if (n < max)
            pids[n] = pid;
        n++;
    }
    closedir(proc);
    return n;
}

/* kill what is left of the case (process group @pgid and any orphan that
 * left it) and reap it all; returns how many processes were left */
static int kill_leftovers(pid_t pgid)
{
    pid_t pids[64];
    int found = 0;

    for (int round = 0; round < 100; round++) {
        int n;

        reap_zombies();
        n = find_strays(pgid, pids, 64);
        if (n == 0)
            break;
        found = found > n ? found : n;
        kill(-pgid, SIGKILL);
        for (int i = 0; i < n && i < 64; i++)
            kill(pids[i], SIGKILL);
        for (int i = 0; i < n && i < 64; i++) {
            if (waitpid(pids[i], NULL, 0) < 0) /* not our child: let it die */
                pbt_sleep_ms(10);
        }
    }
    reap_zombies();
    return found;
}

static int run_case(const pbt_case_t *c, int timeout_s, pbt_fs_snapshot_t **snap, char *why,
                    size_t whylen)
{
    pid_t runner = getpid();
    int status;
    pid_t pid;
    int result;
    char names[1024];

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(errno));
        return RESULT_FAIL;
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != runner)
            _exit(1);
        current_case = c->name;
        c->fn();
        peers_check_reaped();
        _exit(0);
    }
    setpgid(pid, pid);
    if (!pbt_waitpid_timed(pid, timeout_s * 1000, &status)) {
        snprintf(why, whylen, "timed out after %d s (hang)", timeout_s);
        kill_leftovers(pid);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        kill_leftovers(pid);
        return RESULT_FAIL;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        result = RESULT_PASS;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == PBT_EXIT_SKIP) {
        result = RESULT_SKIP;
        snprintf(why, whylen, "see message above");
    } else {
        result = RESULT_FAIL;
        describe_status(status, why, whylen);
    }
    if (kill_leftovers(pid) > 0) {
        size_t used = strlen(why);

        snprintf(why + used, whylen - used, "%sstray processes of the case were still running",
                 (result == RESULT_FAIL && used > 0) ? "; " : "");
        if (result != RESULT_FAIL)
            snprintf(why, whylen, "stray processes of the case were still running");
        result = RESULT_FAIL;
    }
    if (pbt_fs_new_entries(*snap, names, sizeof(names)) > 0) {
        size_t used = strlen(why);

        snprintf(why + used, whylen - used, "%sleft behind: %s", used > 0 ? "; " : "", names);
        result = RESULT_FAIL;
        /* report each leftover once */
        pbt_fs_snapshot_free(*snap);
        *snap = pbt_fs_snapshot();
    }
    return result;
}

/* As root, give this program private, empty /tmp and /dev/shm (a mount
 * namespace with fresh tmpfs): every entry that appears there then comes
 * from the processes under test, whatever else runs on the machine, and a
 * leak cannot outlive the program.  Returns 1 if done. */
static int private_tmp(void)
{
    const char *env = getenv("POSTBOX_TEST_PRIVATE_TMP");
    char exe[PATH_MAX], tree[PATH_MAX] = "", source[64];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    int tree_fd = -1;

    if (geteuid() != 0 || (env != NULL && strcmp(env, "0") == 0))
        return 0;
    /* a build tree under /tmp (a fresh clone) must stay visible: the tests
     * exec programs and load the library from it */
    if (len > 5 && strncmp(exe, "/tmp/", 5) == 0) {
        const char *slash;

        exe[len] = '\0';
        slash = strchr(exe + 5, '/');
        if (slash != NULL)
            snprintf(tree, sizeof(tree), "%.*s", (int)(slash - exe), exe);
    }
    if (unshare(CLONE_NEWNS) != 0)
        return 0;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        goto fail;
    /* opened in the new namespace: a bind mount's source must be in it */
    if (tree[0] != '\0')
        tree_fd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (mount("pbt-tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0 ||
        mount("pbt-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0)
        goto fail;
    if (tree_fd >= 0) {
        snprintf(source, sizeof(source), "/proc/self/fd/%d", tree_fd);
        if (mkdir(tree, 0755) != 0 || mount(source, tree, NULL, MS_BIND | MS_REC, NULL) != 0) {
            fprintf(stderr, "cannot keep %s visible under a private /tmp: %s\n", tree,
                    strerror(errno));
            exit(1);
        }
    }
    if (tree_fd >= 0)
        close(tree_fd);
    return 1;

fail:
    fprintf(stderr, "note: private /tmp and /dev/shm not available: %s\n", strerror(errno));
    if (tree_fd >= 0)
        close(tree_fd);
    return 0;
}

/* POSTBOX_TEST_NETNS_PEER: this program is rank 0 of a two-node job
 * (`postbox run -n 2 --nodes 2 --netns pbt-netns-pair PROGRAM`), whose rank
 * 1, on node 1 in another network namespace, put its pid and address in
 * the job's KVS and waits for our end.  Join the job (the cases, forked
 * from here, are of it) and leave for the exporter servers of node 1
 * (rsm_util.c) where that node is: PBT_PEER_NETNS (its namespace),
 * PBT_PEER_ADDR, and the job's secret in PBT_JOB_SECRET (the library takes
 * POSTBOX_JOB_SECRET out of the environment).  @return 1 if joined. */
static int netns_join(void)
{
    const char *secret = getenv("POSTBOX_JOB_SECRET");
    char value[128], path[64];
    int pid;

    if (getenv("POSTBOX_TEST_NETNS_PEER") == NULL)
        return 0;
    CHECK_MSG(secret != NULL, "POSTBOX_TEST_NETNS_PEER: run under postbox run (no job secret)");
    CHECK_SYS(setenv("PBT_JOB_SECRET", secret, 1));
    CHECK_MSG(postbox_job_init() == 0 && postbox_job_rank() == 0 && postbox_job_size() == 2,
              "POSTBOX_TEST_NETNS_PEER: run as rank 0 of 2 (pbt-netns-pair)");
    CHECK_MSG(postbox_job_fence() == 0, "postbox_job_fence failed");
    CHECK_MSG(postbox_job_kvs_get("pbt-netns-peer", value, sizeof(value)) == 0,
              "rank 1 put no pbt-netns-peer");
    CHECK_MSG(sscanf(value, "%d", &pid) == 1, "pbt-netns-peer: '%s'", value);
    snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
    CHECK_SYS(setenv("PBT_PEER_NETNS", path, 1));
    CHECK_SYS(setenv("PBT_PEER_ADDR", strchr(value, ' ') + 1, 1));
    return 1;
}

int pbt_main(int argc, char **argv, const pbt_case_t *cases, size_t ncases)
{
    const char *t = getenv("POSTBOX_TEST_CASE_TIMEOUT");
    int timeout_s = t != NULL && atoi(t) > 0 ? atoi(t) : 20;
    int counts[3] = {0, 0, 0};
    pbt_fs_snapshot_t *snap;
    int joined;

    setvbuf(stdout, NULL, _IOLBF, 0);
    /* orphaned descendants of a case come back to us, so none escapes */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    signal(SIGPIPE, SIG_IGN);
    if (private_tmp())
        printf("(private /tmp and /dev/shm for this run)\n");
    joined = netns_join();
    if (joined)
        printf("(rank 0 of a job; exporter servers on node 1 in namespace %s)\n",
               getenv("PBT_PEER_NETNS"));
    snap = pbt_fs_snapshot();
    for (size_t i = 0; i < ncases; i++) {
        char why[2048] = "";
        int r;

        if (!case_selected(cases[i].name, argc, argv))
            continue;
        r = run_case(&cases[i], timeout_s, &snap, why, sizeof(why));
        counts[r]++;
        if (r == RESULT_PASS)
            printf("PASS %s\n", cases[i].name);
        else
            printf("%s %s: %s\n", r == RESULT_FAIL ? "FAIL" : "SKIP", cases[i].name, why);
    }
    pbt_fs_snapshot_free(snap);
    printf("%d passed, %d failed, %d skipped\n", counts[RESULT_PASS], counts[RESULT_FAIL],
           counts[RESULT_SKIP]);
    if (joined && (postbox_job_fence() != 0 || postbox_job_finalize() != 0))
        counts[RESULT_FAIL]++; /* (rank 1 waits in its fence for ours) */
    return counts[RESULT_FAIL] > 0 ? 1 : 0;
}
