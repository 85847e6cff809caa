/*
 * A small multi-process test harness for the Postbox C tests.
 *
 * A test program is a table of cases.  pbt_main() runs each case in its own
 * forked process (its own process group, killed if the runner dies), with a
 * per-case timeout, and prints one line per case:
 *
 *     PASS put_out_of_bounds_rejected
 *     FAIL put_out_of_bounds_rejected: test_putget.c:42: ...
 *     SKIP map_whole_segment_shared: transport cannot map
 *
 * Because every case is a fresh process that has not yet touched the
 * library, a case may fork peers and give them their own environment
 * (POSTBOX_JOB_ID, ...) before anyone calls into RSM.
 *
 * After each case the runner checks that the case reaped its peers, that no
 * process of the case is left, and that no new entry appeared in /dev/shm
 * or /tmp.  As root the program gets private, empty tmpfs mounts of /tmp and
 * /dev/shm (its own mount namespace; POSTBOX_TEST_PRIVATE_TMP=0 turns this
 * off), so whatever appears there comes from the processes under test.  The
 * program exits non-zero if any case failed.
 *
 * Waiting is always blocking (pipes, pidfds, RSM waits): nothing spins.
 */
#ifndef PBT_HARNESS_H
#define PBT_HARNESS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "postbox/rsm.h"

/* ---- cases ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    void (*fn)(void);
} pbt_case_t;

#define PBT_CASE(name)                                                                             \
    {                                                                                              \
#name, case_##name                                                                         \
    }
#define PBT_NCASES(table) (sizeof(table) / sizeof((table)[0]))

/* Run @cases.  argv[1..] may name cases to run (default: all).  Env:
 * POSTBOX_TEST_CASE_TIMEOUT (seconds, default 20). */
int pbt_main(int argc, char **argv, const pbt_case_t *cases, size_t ncases);

/* Exit status a case (or peer) uses to report a skip. */
#define PBT_EXIT_SKIP 77

/* ---- assertions (print file:line and exit the current process) -------- */

void pbt_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void pbt_skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* the RSM call @call must return @expected */
#define CHECK_RC(call, expected)                                                                   \
    do {                                                                                           \
        int pbt_rc_ = (call);                                                                      \
        int pbt_exp_ = (expected);                                                                 \
        if (pbt_rc_ != pbt_exp_)                                                                   \
            pbt_fail(__FILE__, __LINE__, "%s returned %d (%s), expected %d (%s)", #call, pbt_rc_,  \
                     rsm_strerror(pbt_rc_), pbt_exp_, rsm_strerror(pbt_exp_));                     \
    } while (0)

/* the RSM call @call must succeed */
#define CHECK_OK(call) CHECK_RC(call, RSM_SUCCESS)

/* the RSM call @call must return one of @a or @b */
#define CHECK_RC2(call, a, b)                                                                      \
    do {                                                                                           \
        int pbt_rc_ = (call);                                                                      \
        if (pbt_rc_ != (a) && pbt_rc_ != (b))                                                      \
            pbt_fail(__FILE__, __LINE__, "%s returned %d (%s), expected %d (%s) or %d (%s)",       \
                     #call, pbt_rc_, rsm_strerror(pbt_rc_), (a), rsm_strerror(a), (b),             \
                     rsm_strerror(b));                                                             \
    } while (0)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            pbt_fail(__FILE__, __LINE__, "check failed: %s", #cond);                               \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond))                                                                               \
            pbt_fail(__FILE__, __LINE__, __VA_ARGS__);                                             \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        unsigned long long pbt_a_ = (unsigned long long)(a);                                       \
        unsigned long long pbt_b_ = (unsigned long long)(b);                                       \
        if (pbt_a_ != pbt_b_)                                                                      \
            pbt_fail(__FILE__, __LINE__, "%s == %s failed: %llu != %llu", #a, #b, pbt_a_, pbt_b_); \
    } while (0)

/* a system call (returning -1 on error) must succeed */
#define CHECK_SYS(call)                                                                            \
    do {                                                                                           \
        if ((call) == -1)                                                                          \
            pbt_fail(__FILE__, __LINE__, "%s failed: %m", #call);                                  \
    } while (0)

/* ---- peers ---------------------------------------------------------------- */

/* A forked peer process and the two pipes to it.  In the parent, rd/wr talk
 * to the peer; in the peer, the same struct talks to the parent. */
typedef struct {
    pid_t pid;
    int rd; /* read end */
    int wr; /* write end */
} pbt_peer_t;

/* Fork a peer that runs @fn(self, @arg) and exits 0 when it returns.  The
 * peer dies with its parent (PR_SET_PDEATHSIG).  @fn must not return to the
 * caller's code: the harness _exit()s.  Call before or after RSM use in the
 * parent; a peer forked before the parent's first RSM call starts with a
 * clean library (so it may change its job environment first). */
pbt_peer_t pbt_peer_start(void (*fn)(pbt_peer_t *self, void *arg), void *arg);

/* Wait up to @timeout_ms for the peer and require exit status @want_status
 * (0 normally).  Closes the pipes. */
void pbt_peer_join(pbt_peer_t *peer, int timeout_ms, int want_status);

/* Wait up to @timeout_ms for the peer; return its raw wait status, or -1 on
 * timeout (the peer is then still running).  Closes nothing. */
int pbt_peer_wait_status(pbt_peer_t *peer, int timeout_ms);

/* SIGKILL the peer and reap it (blocks until it is gone). */
void pbt_peer_kill(pbt_peer_t *peer);

/* Close both pipe ends of @peer (idempotent). */
void pbt_peer_close(pbt_peer_t *peer);

/* Blocking exact-size pipe I/O; a short read (peer gone) fails the test. */
void pbt_send(int fd, const void *buf, size_t len);
void pbt_recv(int fd, void *buf, size_t len);
/* Like pbt_recv but returns 0 on EOF before any byte, -1 on timeout,
 * 1 on success.  @timeout_ms -1 blocks. */
int pbt_recv_timed(int fd, void *buf, size_t len, int timeout_ms);
void pbt_send_u32(int fd, uint32_t v);
uint32_t pbt_recv_u32(int fd);

/* Wait up to @timeout_ms for @pid to exit.  Returns 1 and stores the wait
 * status, or 0 on timeout.  Blocks on a pidfd; never spins. */
int pbt_waitpid_timed(pid_t pid, int timeout_ms, int *status);

/* ---- memory ----------------------------------------------------------------- */

size_t pbt_page_size(void);
/* @size bytes of fresh page-aligned private anonymous memory (zeroed). */
void *pbt_alloc_pages(size_t size);
void pbt_free_pages(void *p, size_t size);

/* deterministic byte pattern for offset @i and @seed */
static inline uint8_t pbt_pattern(size_t i, unsigned seed)
{
    return (uint8_t)((i * 131u + seed * 17u + (i >> 8)) & 0xff);
}
void pbt_fill_pattern(void *buf, size_t len, size_t base, unsigned seed);
/* returns the first mismatching offset, or (size_t)-1 if all match */
size_t pbt_check_pattern(const void *buf, size_t len, size_t base, unsigned seed);

/* ---- leftovers ---------------------------------------------------------- */

/* A snapshot of the entries of /dev/shm and /tmp. */
typedef struct pbt_fs_snapshot pbt_fs_snapshot_t;
pbt_fs_snapshot_t *pbt_fs_snapshot(void);
/* Fail the test if an entry exists now that was not in @snap (names are
 * printed).  Entries that vanish again within about a second are not
 * counted (other programs' temporary files on a shared machine), nor are
 * names starting with a prefix in POSTBOX_TEST_LEAK_IGNORE (comma-separated,
 * default "bash_tool_"). */
void pbt_fs_check(const pbt_fs_snapshot_t *snap, const char *when);
/* Same, but return the number of new entries and write their names to
 * @out (may be NULL). */
int pbt_fs_new_entries(const pbt_fs_snapshot_t *snap, char *out, size_t outlen);
void pbt_fs_snapshot_free(pbt_fs_snapshot_t *snap);

/* number of open file descriptors of this process */
int pbt_count_fds(void);

/* sleep @ms milliseconds (for the crash test's random delays) */
void pbt_sleep_ms(int ms);

#endif
