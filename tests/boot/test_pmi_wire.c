/*
 * The PMI client's wire layer: parsing and formatting of both protocol
 * versions (escapes, limits, malformed input), then whole sessions against
 * a fake process manager in a forked peer, over a socketpair (PMI_FD) or
 * TCP (PMI_PORT + PMI_ID), including servers that misbehave; and the
 * choice of PMI-1, PMI-2 or PMIx from the environment (POSTBOX_PMI).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "boot/pmi.h"
#include "boot/pmi_impl.h"
#include "harness.h"
#include "util/siphash.h"

#define CHECK_STATUS(call, want)                                                                   \
    do {                                                                                           \
        pb_status_t st_ = (call);                                                                  \
        if (st_ != (want))                                                                         \
            pbt_fail(__FILE__, __LINE__, "%s returned %d (%s), expected %d", #call, st_,           \
                     pb_status_string(st_), (want));                                               \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (a_ == NULL || strcmp(a_, b_) != 0)                                                     \
            pbt_fail(__FILE__, __LINE__, "%s is '%s', expected '%s'", #a, a_ ? a_ : "(null)", b_); \
    } while (0)

static pb_boot_pmi_msg_t msg;

static pb_status_t parse1(const char *line)
{
    return pb_boot_pmi_parse_v1(line, strlen(line), &msg);
}

static pb_status_t parse2(const char *body)
{
    return pb_boot_pmi_parse_v2(body, strlen(body), &msg);
}

/* ---- v1 ------------------------------------------------------------------ */

static void case_v1_parse_reply(void)
{
    CHECK_STATUS(parse1("cmd=get_result rc=0 msg=success value=vm/0\n"), PB_OK);
    CHECK_STR(pb_boot_pmi_msg_cmd(&msg), "get_result");
    CHECK_STR(pb_boot_pmi_msg_get(&msg, "rc"), "0");
    CHECK_STR(pb_boot_pmi_msg_get(&msg, "value"), "vm/0");
    CHECK(pb_boot_pmi_msg_get(&msg, "found") == NULL);
    /* extra spaces and no newline; empty value */
    CHECK_STATUS(parse1("  cmd=barrier_out   rc=0 msg="), PB_OK);
    CHECK_STR(pb_boot_pmi_msg_get(&msg, "msg"), "");
}

static void case_v1_escapes_round_trip(void)
{
    pb_boot_pmi_msg_t out;
    char buf[PB_BOOT_PMI_MSG_MAX + 1];
    size_t len;

    pb_boot_pmi_msg_init(&out, "put");
    pb_boot_pmi_msg_add(&out, "key", "k-1/x");
    pb_boot_pmi_msg_add(&out, "value", "a b\\c=d");
    CHECK_STATUS(pb_boot_pmi_format_v1(&out, buf, sizeof(buf), &len), PB_OK);
    CHECK_STR(buf, "cmd=put key=k-1/x value=a\\ b\\\\c=d\n");
    CHECK_EQ_U64(len, strlen(buf));
    CHECK_STATUS(pb_boot_pmi_parse_v1(buf, len, &msg), PB_OK);
    CHECK_STR(pb_boot_pmi_msg_get(&msg, "value"), "a b\\c=d");
    /* an escaped newline stays inside the value */
    pb_boot_pmi_msg_init(&out, "put");
    pb_boot_pmi_msg_add(&out, "value", "two\nlines");
    CHECK_STATUS(pb_boot_pmi_format_v1(&out, buf, sizeof(buf), &len), PB_OK);
    CHECK_STR(buf, "cmd=put value=two\\\nlines\n");
}

static void case_v1_malformed_rejected(void)
{
    char line[PB_BOOT_PMI_MSG_MAX + 8];
    char many[PB_BOOT_PMI_MSG_MAX];
    size_t pos;

    CHECK_STATUS(parse1(""), PB_ERR_PROTOCOL);
    CHECK_STATUS(parse1("\n"), PB_ERR_PROTOCOL);
    CHECK_STATUS(parse1("rc=0 cmd=put_result"), PB_ERR_PROTOCOL); /* cmd= not first */
    CHECK_STATUS(parse1("cmd=put_result rc"), PB_ERR_PROTOCOL);   /* no '=' */
    CHECK_STATUS(parse1("cmd=x =v"), PB_ERR_PROTOCOL);            /* empty key */
    CHECK_STATUS(parse1("cmd=x k!y=v"), PB_ERR_PROTOCOL);         /* bad key byte */
    CHECK_STATUS(parse1("cmd=x value=abc\\"), PB_ERR_PROTOCOL);   /* dangling '\' */
    CHECK_STATUS(pb_boot_pmi_parse_v1("cmd=x v=a\0b", 11, &msg), PB_ERR_PROTOCOL);
    CHECK_STATUS(parse1("cmd=x v=a\nb"), PB_ERR_PROTOCOL); /* two lines */
    /* 1023 bytes and a newline fit; 1024 and a newline do not */
    memset(line, 'x', sizeof(line));
    memcpy(line, "cmd=", 4);
    CHECK_STATUS(pb_boot_pmi_parse_v1(line, PB_BOOT_PMI_MSG_MAX - 1, &msg), PB_OK);
    CHECK_STATUS(pb_boot_pmi_parse_v1(line, PB_BOOT_PMI_MSG_MAX, &msg), PB_ERR_PROTOCOL);
    line[PB_BOOT_PMI_MSG_MAX - 1] = '\n';
    CHECK_STATUS(pb_boot_pmi_parse_v1(line, PB_BOOT_PMI_MSG_MAX, &msg), PB_OK);
    /* more pairs than the message holds */
    pos = (size_t)snprintf(many, sizeof(many), "cmd=x");
    for (int i = 0; i < PB_BOOT_PMI_MAX_PAIRS; i++)
        pos += (size_t)snprintf(many + pos, sizeof(many) - pos, " k%d=v", i);
    CHECK_STATUS(parse1(many), PB_ERR_PROTOCOL);
}

/* The launcher's get_maxes advertises keys of 64 and values of 1024 bytes:
 * the answer to a get of such a value, every byte escaped, must parse, and a
 * put of the longest key and value the client itself takes must format. */
static void case_v1_advertised_maximum_fits(void)
{
    static char line[PB_BOOT_PMI_MSG_MAX + 1], value[PB_BOOT_PMI_VALUE_MAX];
    char key[PB_BOOT_PMI_KEY_MAX], kvs[65];
    static char out[PB_BOOT_PMI_MSG_MAX + 1];
    pb_boot_pmi_msg_t put;
    size_t pos, len;

    pos = (size_t)snprintf(line, sizeof(line), "cmd=get_result rc=0 value=");
    for (int i = 0; i < 1024; i++) {
        line[pos++] = '\\';
        line[pos++] = ' ';
    }
    line[pos++] = '\n';
    CHECK_STATUS(pb_boot_pmi_parse_v1(line, pos, &msg), PB_OK);
    CHECK(strlen(pb_boot_pmi_msg_get(&msg, "value")) == 1024);
    memset(value, ' ', sizeof(value) - 1);
    value[sizeof(value) - 1] = '\0';
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    memset(kvs, 'j', sizeof(kvs) - 1);
    kvs[sizeof(kvs) - 1] = '\0';
    pb_boot_pmi_msg_init(&put, "put");
    pb_boot_pmi_msg_add(&put, "kvsname", kvs);
    pb_boot_pmi_msg_add(&put, "key", key);
    pb_boot_pmi_msg_add(&put, "value", value);
    CHECK_STATUS(pb_boot_pmi_format_v1(&put, out, sizeof(out), &len), PB_OK);
    CHECK(len > 2 * (PB_BOOT_PMI_VALUE_MAX - 1));
}

static void case_v1_format_limits(void)
{
    static char big[PB_BOOT_PMI_MSG_MAX];
    pb_boot_pmi_msg_t out;
    char buf[PB_BOOT_PMI_MSG_MAX + 1], small[8];
    size_t len;

    memset(big, 'v', sizeof(big) - 1);
    pb_boot_pmi_msg_init(&out, "put");
    pb_boot_pmi_msg_add(&out, "value", big);
    CHECK_STATUS(pb_boot_pmi_format_v1(&out, buf, sizeof(buf), &len), PB_ERR_NO_RESOURCE);
    pb_boot_pmi_msg_init(&out, "put");
    CHECK_STATUS(pb_boot_pmi_format_v1(&out, small, sizeof(small), &len), PB_ERR_NO_RESOURCE);
    pb_boot_pmi_msg_add(&out, "bad key", "v");
    CHECK_STATUS(pb_boot_pmi_format_v1(&out, buf, sizeof(buf), &len), PB_ERR_INVALID_PARAM);
    pb_boot_pmi_msg_init(&out, "");
    CHECK_STATUS(pb_boot_pmi_format_v1(&out, buf, sizeof(buf), &len), PB_ERR_INVALID_PARAM);
    for (int i = 1; i < PB_BOOT_PMI_MAX_PAIRS; i++)
        CHECK_STATUS(pb_boot_pmi_msg_add(&out, "k", "v"), PB_OK);
    CHECK_STATUS(pb_boot_pmi_msg_add(&out, "k", "v"), PB_ERR_NO_RESOURCE);
}

/* ---- v2 ------------------------------------------------------------------- */

static void case_v2_parse_reply(void)
{
    CHECK_STATUS(parse2("cmd=kvs-get-response;rc=0;found=TRUE;value=a;;b;;;"), PB_OK);
    CHECK_STR(pb_boot_pmi_msg_cmd(&msg), "kvs-get-response");
    CHECK_STR(pb_boot_pmi_msg_get(&msg, "found"), "TRUE");
    CHECK_STR(pb_boot_pmi_msg_get(&msg, "value"), "a;b;");
    /* the last ';' may be missing; values may hold spaces and '=' */
    CHECK_STATUS(parse2("cmd=fullinit-response;rc=0;pmi-version=2;msg=a b=c"), PB_OK);
    CHECK_STR(pb_boot_pmi_msg_get(&msg, "pmi-version"), "2");
    CHECK_STR(pb_boot_pmi_msg_get(&msg, "msg"), "a b=c");
}

static void case_v2_format_round_trip(void)
{
    pb_boot_pmi_msg_t out;
    char buf[PB_BOOT_PMI_MSG_MAX + 8];
    size_t len;

    pb_boot_pmi_msg_init(&out, "kvs-put");
    pb_boot_pmi_msg_add(&out, "key", "pb-node-0");
    pb_boot_pmi_msg_add(&out, "value", "x;y z");
    CHECK_STATUS(pb_boot_pmi_format_v2(&out, buf, sizeof(buf), &len), PB_OK);
    CHECK_STR(buf, "    39cmd=kvs-put;key=pb-node-0;value=x;;y z;");
    CHECK_EQ_U64(len, 45);
    CHECK_STATUS(pb_boot_pmi_parse_v2(buf + 6, len - 6, &msg), PB_OK);
    CHECK_STR(pb_boot_pmi_msg_get(&msg, "value"), "x;y z");
}

static void case_v2_malformed_rejected(void)
{
    static char big[PB_BOOT_PMI_MSG_MAX + 2];

    CHECK_STATUS(parse2(""), PB_ERR_PROTOCOL);
    CHECK_STATUS(parse2("rc=0;cmd=x;"), PB_ERR_PROTOCOL);
    CHECK_STATUS(parse2("cmd=x;rc;"), PB_ERR_PROTOCOL);
    /* ";;" is always a literal ';', even where a pair could end */
    CHECK_STATUS(parse2("cmd=x;;"), PB_OK);
    CHECK_STR(pb_boot_pmi_msg_cmd(&msg), "x;");
    CHECK_STATUS(pb_boot_pmi_parse_v2("cmd=x;v=a\0b;", 12, &msg), PB_ERR_PROTOCOL);
    memset(big, 'x', sizeof(big) - 1);
    memcpy(big, "cmd=", 4);
    CHECK_STATUS(pb_boot_pmi_parse_v2(big, PB_BOOT_PMI_MSG_MAX, &msg), PB_OK);
    CHECK_STATUS(pb_boot_pmi_parse_v2(big, PB_BOOT_PMI_MSG_MAX + 1, &msg), PB_ERR_PROTOCOL);
}

/* The spawn messages never write past @cap, 0 included, and say 0 when
 * they do not fit (the ASan build catches a write into the 1-byte buffer). */
static void case_spawn_format_limits(void)
{
    postbox_job_spawn_cmd_t cmd = {.command = "true", .nprocs = 2};
    char *one = malloc(1);
    char buf[4096];

    CHECK(one != NULL);
    CHECK_EQ_U64(pb_boot_pmi_format_spawn_v1(one, 0, 1, 0, &cmd, 0, NULL, NULL), 0);
    CHECK_EQ_U64(pb_boot_pmi_format_spawn_v2(one, 0, 1, &cmd, 0, NULL, NULL), 0);
    CHECK_EQ_U64(pb_boot_pmi_format_spawn_v2(one, 1, 1, &cmd, 0, NULL, NULL), 0);
    CHECK_EQ_U64(pb_boot_pmi_format_spawn_v2(buf, 6, 1, &cmd, 0, NULL, NULL), 0);
    CHECK(pb_boot_pmi_format_spawn_v1(buf, sizeof(buf), 1, 0, &cmd, 0, NULL, NULL) > 0);
    CHECK(strstr(buf, "execname=true") != NULL);
    CHECK(pb_boot_pmi_format_spawn_v2(buf, sizeof(buf), 1, &cmd, 0, NULL, NULL) > 0);
    CHECK(strstr(buf, "subcmd=true;") != NULL);
    free(one);
}

/* ---- a fake process manager ------------------------------------------------- */

typedef enum {
    FAKE_V1,          /* a well-behaved PMI-1 server */
    FAKE_V2,          /* a well-behaved PMI-2 server */
    FAKE_V2_SLURM,    /* FAKE_V2 with length fields left-justified ("%-6u"), as Slurm's */
    FAKE_INITACK,     /* PMI-1 port mode, rank and size on "cmd=set" lines */
    FAKE_PROOF,       /* FAKE_INITACK after a token proof (TEST_TOKEN) */
    FAKE_LONG_LINE,   /* answers init with a line 1000 bytes over the limit */
    FAKE_BAD_LENGTH,  /* answers fullinit with a bad v2 length field */
    FAKE_HUGE_LENGTH, /* answers fullinit with a length over the limit */
    FAKE_WRONG_CMD,   /* answers init with another command */
    FAKE_REFUSE,      /* answers init with rc=-1 */
    FAKE_CLOSE,       /* closes the connection at once */
} fake_mode_t;

typedef struct {
    fake_mode_t mode;
    int fd;         /* the server's end */
    int other_fd;   /* the client's end, closed in the server */
    int drop_first; /* FAKE_PROOF: close the first connection after its initack */
} fake_arg_t;

static void fake_send(int fd, const char *text)
{
    pbt_send(fd, text, strlen(text));
}

/* set by the server of FAKE_V2_SLURM */
static int fake_left_justified;

static void fake_send_v2(int fd, const char *body)
{
    char head[8];

    snprintf(head, sizeof(head), fake_left_justified ? "%-6u" : "%6u", (unsigned)strlen(body));
    pbt_send(fd, head, 6);
    fake_send(fd, body);
}

/* the token of FAKE_PROOF: bytes 1..16, and a server nonce */
static const uint8_t test_token[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
#define TEST_TOKEN "0102030405060708090a0b0c0d0e0f10"
#define TEST_NONCE "00112233445566778899aabbccddeeff"

/* Read one v1 line (without its newline); 0 at EOF. */
static int fake_recv_v1(int fd, char *line, size_t cap)
{
    size_t len = 0;

    for (;;) {
        char c;
        int got = pbt_recv_timed(fd, &c, 1, 10000);

        if (got != 1)
            return 0;
        if (c == '\n')
            break;
        if (len + 1 < cap)
            line[len++] = c;
    }
    line[len] = '\0';
    return 1;
}

static int fake_recv_v2(int fd, char *body, size_t cap)
{
    char head[7] = {0};
    unsigned len;

    if (pbt_recv_timed(fd, head, 6, 10000) != 1)
        return 0;
    len = (unsigned)atoi(head);
    CHECK(len < cap);
    pbt_recv(fd, body, len);
    body[len] = '\0';
    return 1;
}

/* The raw (still escaped) value of @key in @line, with separator @sep. */
static void fake_field(const char *line, const char *key, char sep, char *out, size_t cap)
{
    char pattern[64];
    const char *p;
    size_t n = 0;

    snprintf(pattern, sizeof(pattern), "%c%s=", sep, key);
    p = strstr(line, pattern);
    CHECK_MSG(p != NULL, "fake server: no %s in '%s'", key, line);
    for (p += strlen(pattern); *p != '\0' && n + 2 < cap; p++) {
        if (sep == ' ' && *p == '\\' && p[1] != '\0') {
            out[n++] = *p++;
        } else if (*p == sep) {
            if (sep == ';' && p[1] == ';')
                out[n++] = *p++;
            else
                break;
        }
        out[n++] = *p;
    }
    out[n] = '\0';
}

static void fake_server(pbt_peer_t *self, void *varg)
{
    fake_arg_t *arg = varg;
    char line[PB_BOOT_PMI_MSG_MAX + 1024], key[64], value[1024], reply[2048];
    char kvs_key[8][64], kvs_value[8][1024];
    int nkvs = 0, fd = arg->fd;

    fake_left_justified = arg->mode == FAKE_V2_SLURM;

    if (arg->other_fd >= 0)
        close(arg->other_fd);
    if (arg->mode == FAKE_INITACK) {
        int listener = fd;

        fd = accept(listener, NULL, NULL);
        CHECK_SYS(fd);
        close(listener);
        CHECK(fake_recv_v1(fd, line, sizeof(line)));
        CHECK_STR(line, "cmd=initack pmiid=7");
        fake_send(fd, "cmd=initack\ncmd=set size=3\ncmd=set rank=2\ncmd=set debug=0\n");
    }
    if (arg->mode == FAKE_PROOF) {
        int listener = fd;
        char cnonce[64], mac[32], text[256], want[32];

        if (arg->drop_first) {
            /* as the launcher does to make room on a crowded port */
            fd = accept(listener, NULL, NULL);
            CHECK_SYS(fd);
            CHECK(fake_recv_v1(fd, line, sizeof(line)));
            close(fd);
        }
        fd = accept(listener, NULL, NULL);
        CHECK_SYS(fd);
        close(listener);
        CHECK(fake_recv_v1(fd, line, sizeof(line)));
        CHECK_STR(line, "cmd=initack pmiid=7");
        fake_send(fd, "cmd=auth-challenge nonce=" TEST_NONCE "\n");
        if (!fake_recv_v1(fd, line, sizeof(line)))
            return; /* a client without the token hangs up */
        fake_field(line, "cnonce", ' ', cnonce, sizeof(cnonce));
        fake_field(line, "mac", ' ', mac, sizeof(mac));
        CHECK(strlen(cnonce) == 32 && strcmp(cnonce, TEST_NONCE) != 0);
        snprintf(text, sizeof(text), "pmi-auth job-t 7 %s %s", TEST_NONCE, cnonce);
        snprintf(want, sizeof(want), "%016llx",
                 (unsigned long long)pb_siphash24(test_token, text, strlen(text)));
        CHECK_STR(mac, want);
        fake_send(fd, "cmd=initack rc=0\ncmd=set size=3\ncmd=set rank=2\ncmd=set debug=0\n");
        arg->mode = FAKE_INITACK;
    }
    if (arg->mode == FAKE_CLOSE) {
        close(fd);
        return;
    }
    CHECK(fake_recv_v1(fd, line, sizeof(line)));
    switch (arg->mode) {
    case FAKE_LONG_LINE:
        memset(line, 'x', PB_BOOT_PMI_MSG_MAX + 1000);
        memcpy(line, "cmd=response_to_init value=", 27);
        line[PB_BOOT_PMI_MSG_MAX + 1000] = '\n';
        pbt_send(fd, line, PB_BOOT_PMI_MSG_MAX + 1001);
        pbt_recv_timed(fd, line, 1, 10000); /* until the client hangs up */
        return;
    case FAKE_WRONG_CMD: fake_send(fd, "cmd=put_result rc=0\n"); return;
    case FAKE_REFUSE: fake_send(fd, "cmd=response_to_init rc=-1 msg=go_away\n"); return;
    default: break;
    }
    if (arg->mode == FAKE_V1 || arg->mode == FAKE_INITACK) {
        CHECK_STR(line, "cmd=init pmi_version=1 pmi_subversion=1");
        fake_send(fd, "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n");
        while (fake_recv_v1(fd, line, sizeof(line))) {
            if (strcmp(line, "cmd=get_universe_size") == 0) {
                fake_send(fd, "cmd=universe_size rc=0 size=4\n");
            } else if (strcmp(line, "cmd=get_appnum") == 0) {
                fake_send(fd, "cmd=appnum rc=0 appnum=0\n");
            } else if (strcmp(line, "cmd=get_my_kvsname") == 0) {
                fake_send(fd, "cmd=my_kvsname rc=0 kvsname=kvs_42\n");
            } else if (strncmp(line, "cmd=put ", 8) == 0) {
                fake_field(line, "kvsname", ' ', value, sizeof(value));
                CHECK_STR(value, "kvs_42");
                CHECK(nkvs < 8);
                fake_field(line, "key", ' ', kvs_key[nkvs], sizeof(kvs_key[0]));
                fake_field(line, "value", ' ', kvs_value[nkvs], sizeof(kvs_value[0]));
                nkvs++;
                fake_send(fd, "cmd=put_result rc=0 msg=success\n");
            } else if (strncmp(line, "cmd=get ", 8) == 0) {
                int i;

                fake_field(line, "key", ' ', key, sizeof(key));
                for (i = 0; i < nkvs && strcmp(kvs_key[i], key) != 0; i++)
                    ;
                if (i < nkvs)
                    snprintf(reply, sizeof(reply), "cmd=get_result rc=0 msg=success value=%s\n",
                             kvs_value[i]);
                else
                    snprintf(reply, sizeof(reply),
                             "cmd=get_result rc=-1 msg=key_%s_not_found value=unknown\n", key);
                fake_send(fd, reply);
            } else if (strcmp(line, "cmd=barrier_in") == 0) {
                fake_send(fd, "cmd=barrier_out rc=0\n");
            } else if (strcmp(line, "cmd=finalize") == 0) {
                fake_send(fd, "cmd=finalize_ack rc=0\n");
                return;
            } else {
                pbt_fail(__FILE__, __LINE__, "fake v1 server: unexpected '%s'", line);
            }
        }
        pbt_fail(__FILE__, __LINE__, "fake v1 server: the client left without finalize");
    }
    /* PMI-2: the init handshake in v1 form, then v2 */
    CHECK_STR(line, "cmd=init pmi_version=2 pmi_subversion=0");
    fake_send(fd, "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n");
    CHECK(fake_recv_v2(fd, line, sizeof(line)));
    CHECK_STR(line, "cmd=fullinit;pmijobid=job.7;pmirank=1;threaded=FALSE;");
    if (arg->mode == FAKE_BAD_LENGTH) {
        pbt_send(fd, "12ab  cmd=x;", 12);
        pbt_recv_timed(fd, line, 1, 10000);
        return;
    }
    if (arg->mode == FAKE_HUGE_LENGTH) {
        pbt_send(fd, "  5000cmd=x;", 12);
        pbt_recv_timed(fd, line, 1, 10000);
        return;
    }
    fake_send_v2(fd, "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=1;size=2;"
                     "appnum=-1;debugged=FALSE;pmiverbose=FALSE;");
    while (fake_recv_v2(fd, line, sizeof(line))) {
        if (strcmp(line, "cmd=job-getid;") == 0) {
            fake_send_v2(fd, "cmd=job-getid-response;rc=0;jobid=job.7;");
        } else if (strncmp(line, "cmd=kvs-put;", 12) == 0) {
            CHECK(nkvs < 8);
            fake_field(line, "key", ';', kvs_key[nkvs], sizeof(kvs_key[0]));
            fake_field(line, "value", ';', kvs_value[nkvs], sizeof(kvs_value[0]));
            nkvs++;
            fake_send_v2(fd, "cmd=kvs-put-response;rc=0;");
        } else if (strncmp(line, "cmd=kvs-get;", 12) == 0) {
            int i;

            fake_field(line, "jobid", ';', value, sizeof(value));
            CHECK_STR(value, "job.7");
            fake_field(line, "key", ';', key, sizeof(key));
            for (i = 0; i < nkvs && strcmp(kvs_key[i], key) != 0; i++)
                ;
            if (i < nkvs)
                snprintf(reply, sizeof(reply), "cmd=kvs-get-response;rc=0;found=TRUE;value=%s;",
                         kvs_value[i]);
            else
                snprintf(reply, sizeof(reply), "cmd=kvs-get-response;rc=0;found=FALSE;");
            fake_send_v2(fd, reply);
        } else if (strcmp(line, "cmd=kvs-fence;") == 0) {
            fake_send_v2(fd, "cmd=kvs-fence-response;rc=0;");
        } else if (strcmp(line, "cmd=finalize;") == 0) {
            fake_send_v2(fd, "cmd=finalize-response;rc=0;");
            return;
        } else {
            pbt_fail(__FILE__, __LINE__, "fake v2 server: unexpected '%s'", line);
        }
    }
    pbt_fail(__FILE__, __LINE__, "fake v2 server: the client left without finalize");
}

/* Start a fake server in @mode on a socketpair; set PMI_FD for the client. */
static pbt_peer_t fake_start(fake_mode_t mode, int *client_fd_p)
{
    fake_arg_t arg = {mode, -1, -1, 0};
    int sv[2];
    char text[16];
    pbt_peer_t peer;

    CHECK_SYS(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    arg.fd = sv[1];
    arg.other_fd = sv[0];
    peer = pbt_peer_start(fake_server, &arg);
    close(sv[1]);
    snprintf(text, sizeof(text), "%d", sv[0]);
    setenv("PMI_FD", text, 1);
    *client_fd_p = sv[0];
    return peer;
}

/* The session every good server must carry: put, fence, get, finalize. */
static void session_check(pb_boot_pmi_t *pmi)
{
    char value[64];
    int found = -1;

    CHECK_STATUS(pb_boot_pmi_put(pmi, "pb-node-1", "a b;c\\d"), PB_OK);
    CHECK_STATUS(pb_boot_pmi_fence(pmi), PB_OK);
    CHECK_STATUS(pb_boot_pmi_get(pmi, "pb-node-1", value, sizeof(value), &found), PB_OK);
    CHECK(found == 1);
    CHECK_STR(value, "a b;c\\d");
    CHECK_STATUS(pb_boot_pmi_get(pmi, "missing", value, sizeof(value), &found), PB_OK);
    CHECK(found == 0);
    CHECK_STR(value, "");
    CHECK_STATUS(pb_boot_pmi_get(pmi, "pb-node-1", value, 4, &found), PB_ERR_INVALID_PARAM);
    CHECK_STATUS(pb_boot_pmi_put(pmi, "bad key", "v"), PB_ERR_INVALID_PARAM);
    CHECK_STATUS(pb_boot_pmi_finalize(pmi), PB_OK);
}

static void case_session_v1_fd(void)
{
    pb_boot_pmi_t *pmi;
    int fd;
    pbt_peer_t peer = fake_start(FAKE_V1, &fd);

    setenv("PMI_RANK", "3", 1);
    CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_OK);
    CHECK(pb_boot_pmi_version(pmi) == 1);
    CHECK(pb_boot_pmi_rank(pmi) == 3);
    CHECK(pb_boot_pmi_size(pmi) == 4); /* from get_universe_size */
    CHECK_STR(pb_boot_pmi_kvsname(pmi), "kvs_42");
    session_check(pmi);
    pbt_peer_join(&peer, 10000, 0);
}

static void session_v2_fd(fake_mode_t mode)
{
    pb_boot_pmi_t *pmi;
    int fd;
    pbt_peer_t peer = fake_start(mode, &fd);

    /* PMI_JOBID without POSTBOX_PMI_VERSION selects PMI-2, as under Slurm */
    setenv("PMI_JOBID", "job.7", 1);
    setenv("PMI_RANK", "1", 1);
    CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_OK);
    CHECK(pb_boot_pmi_version(pmi) == 2);
    CHECK(pb_boot_pmi_rank(pmi) == 1);
    CHECK(pb_boot_pmi_size(pmi) == 2);
    CHECK(pb_boot_pmi_appnum(pmi) == -1);
    CHECK_STR(pb_boot_pmi_kvsname(pmi), "job.7");
    session_check(pmi);
    pbt_peer_join(&peer, 10000, 0);
}

static void case_session_v2_fd(void)
{
    session_v2_fd(FAKE_V2);
}

/* slurmstepd writes the length fields left-justified */
static void case_session_v2_fd_slurm(void)
{
    session_v2_fd(FAKE_V2_SLURM);
}

static void case_session_v1_port_initack(void)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t addr_len = sizeof(addr);
    fake_arg_t arg = {FAKE_INITACK, -1, -1, 0};
    pb_boot_pmi_t *pmi;
    pbt_peer_t peer;
    char text[64];

    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    arg.fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_SYS(arg.fd);
    CHECK_SYS(bind(arg.fd, (struct sockaddr *)&addr, sizeof(addr)));
    CHECK_SYS(listen(arg.fd, 1));
    CHECK_SYS(getsockname(arg.fd, (struct sockaddr *)&addr, &addr_len));
    peer = pbt_peer_start(fake_server, &arg);
    close(arg.fd);
    snprintf(text, sizeof(text), "127.0.0.1:%u", (unsigned)ntohs(addr.sin_port));
    setenv("PMI_PORT", text, 1);
    setenv("PMI_ID", "7", 1);
    CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_OK);
    CHECK(pb_boot_pmi_rank(pmi) == 2);
    CHECK(pb_boot_pmi_size(pmi) == 3);
    session_check(pmi);
    pbt_peer_join(&peer, 10000, 0);
}

/* The server asks for the token proof: the client answers it from
 * POSTBOX_PMI_TOKEN, which is gone from the environment afterwards; with
 * no token the client refuses cleanly. */
static void proof_session(int with_token, int drop_first)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t addr_len = sizeof(addr);
    fake_arg_t arg = {FAKE_PROOF, -1, -1, drop_first};
    pb_boot_pmi_t *pmi = NULL;
    pbt_peer_t peer;
    char text[64];

    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    arg.fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_SYS(arg.fd);
    CHECK_SYS(bind(arg.fd, (struct sockaddr *)&addr, sizeof(addr)));
    CHECK_SYS(listen(arg.fd, 1));
    CHECK_SYS(getsockname(arg.fd, (struct sockaddr *)&addr, &addr_len));
    peer = pbt_peer_start(fake_server, &arg);
    close(arg.fd);
    snprintf(text, sizeof(text), "127.0.0.1:%u", (unsigned)ntohs(addr.sin_port));
    setenv("PMI_PORT", text, 1);
    setenv("PMI_ID", "7", 1);
    setenv("POSTBOX_JOB_ID", "job-t", 1);
    if (with_token) {
        setenv("POSTBOX_PMI_TOKEN", TEST_TOKEN, 1);
        CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_OK);
        CHECK(getenv("POSTBOX_PMI_TOKEN") == NULL);
        CHECK(pb_boot_pmi_rank(pmi) == 2);
        session_check(pmi);
    } else {
        CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_ERR_PROTOCOL);
        CHECK(pmi == NULL);
    }
    unsetenv("POSTBOX_JOB_ID");
    pbt_peer_join(&peer, 10000, 0);
}

static void case_session_v1_port_token_proof(void)
{
    proof_session(1, 0);
}

/* A connection closed before the proof was accepted is tried again. */
static void case_session_v1_port_proof_after_a_closed_connection(void)
{
    proof_session(1, 1);
}

static void case_session_v1_port_challenge_without_token(void)
{
    proof_session(0, 0);
}

static void case_singleton_local_kvs(void)
{
    pb_boot_pmi_t *pmi;
    char value[16];
    int found;

    CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_OK);
    CHECK(pb_boot_pmi_version(pmi) == 0);
    CHECK(pb_boot_pmi_rank(pmi) == 0 && pb_boot_pmi_size(pmi) == 1);
    CHECK_STATUS(pb_boot_pmi_put(pmi, "k", "one"), PB_OK);
    CHECK_STATUS(pb_boot_pmi_put(pmi, "k", "two"), PB_OK);
    CHECK_STATUS(pb_boot_pmi_fence(pmi), PB_OK);
    CHECK_STATUS(pb_boot_pmi_get(pmi, "k", value, sizeof(value), &found), PB_OK);
    CHECK(found == 1);
    CHECK_STR(value, "two");
    CHECK_STATUS(pb_boot_pmi_get(pmi, "none", value, sizeof(value), &found), PB_OK);
    CHECK(found == 0);
    CHECK_STATUS(pb_boot_pmi_finalize(pmi), PB_OK);
}

/* A misbehaving server makes init fail with @want, never crash or hang. */
static void init_fails(fake_mode_t mode, const char *version, pb_status_t want)
{
    pb_boot_pmi_t *pmi = NULL;
    int fd;
    pbt_peer_t peer = fake_start(mode, &fd);

    setenv("POSTBOX_PMI_VERSION", version, 1);
    setenv("PMI_JOBID", "job.7", 1);
    setenv("PMI_RANK", "1", 1);
    CHECK_STATUS(pb_boot_pmi_init(&pmi), want);
    CHECK(pmi == NULL);
    pbt_peer_join(&peer, 10000, 0);
}

static void case_init_long_line_rejected(void)
{
    init_fails(FAKE_LONG_LINE, "1", PB_ERR_PROTOCOL);
}

static void case_init_bad_v2_length_rejected(void)
{
    init_fails(FAKE_BAD_LENGTH, "2", PB_ERR_PROTOCOL);
}

static void case_init_huge_v2_length_rejected(void)
{
    init_fails(FAKE_HUGE_LENGTH, "2", PB_ERR_PROTOCOL);
}

static void case_init_wrong_reply_rejected(void)
{
    init_fails(FAKE_WRONG_CMD, "1", PB_ERR_PROTOCOL);
}

static void case_init_refused(void)
{
    init_fails(FAKE_REFUSE, "1", PB_ERR_PROTOCOL);
}

static void case_init_server_gone(void)
{
    init_fails(FAKE_CLOSE, "1", PB_ERR_IO);
}

static void case_init_bad_environment(void)
{
    pb_boot_pmi_t *pmi;

    setenv("POSTBOX_PMI_VERSION", "3", 1);
    CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_ERR_INVALID_PARAM);
    unsetenv("POSTBOX_PMI_VERSION");
    setenv("PMI_FD", "12x", 1);
    CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_ERR_INVALID_PARAM);
    setenv("PMI_FD", "999", 1); /* not open */
    CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_ERR_INVALID_PARAM);
    unsetenv("PMI_FD");
    setenv("PMI_PORT", "no-port", 1);
    CHECK_STATUS(pb_boot_pmi_init(&pmi), PB_ERR_INVALID_PARAM);
}

/* ---- the flavour chosen from the environment ---------------------------------- */

/* the launchers' variables the choice reads */
static const char *const flavour_vars[] = {
    "POSTBOX_PMI", "POSTBOX_PMI_VERSION", "PMI_FD",
    "PMI_PORT",    "PMI_JOBID",           "PMIX_NAMESPACE",
    "PMIX_RANK",   "PMIX_SERVER_URI41",   "PMIX_SERVER_URI4"};

/* Set the environment to the NULL-ended @name, @value pairs, only them of
 * flavour_vars, and run pb_boot_pmi_choose; its log goes to @log (@len
 * bytes, NUL terminated).  @return its status; *@flavour_p the flavour. */
static pb_status_t choose_in(pb_boot_pmi_flavour_t *flavour_p, char *log, size_t len, ...)
{
    FILE *capture = tmpfile();
    int saved = dup(2);
    pb_status_t status;
    const char *name;
    size_t got;
    va_list ap;

    CHECK(capture != NULL && saved >= 0);
    for (size_t i = 0; i < sizeof(flavour_vars) / sizeof(flavour_vars[0]); i++)
        unsetenv(flavour_vars[i]);
    va_start(ap, len);
    while ((name = va_arg(ap, const char *)) != NULL)
        setenv(name, va_arg(ap, const char *), 1);
    va_end(ap);
    fflush(stderr);
    dup2(fileno(capture), 2);
    *flavour_p = (pb_boot_pmi_flavour_t)-1;
    status = pb_boot_pmi_choose(flavour_p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(capture);
    got = fread(log, 1, len - 1, capture);
    log[got] = '\0';
    fclose(capture);
    for (size_t i = 0; i < sizeof(flavour_vars) / sizeof(flavour_vars[0]); i++)
        unsetenv(flavour_vars[i]);
    return status;
}

#define CHECK_FLAVOUR(want, ...)                                                                   \
    do {                                                                                           \
        pb_boot_pmi_flavour_t got_;                                                                \
        char log_[512];                                                                            \
        CHECK_STATUS(choose_in(&got_, log_, sizeof(log_), __VA_ARGS__, NULL), PB_OK);              \
        CHECK_STR(pb_boot_pmi_flavour_name(got_), want);                                           \
    } while (0)

/* a refused choice says what was wrong: @words are in its message */
#define CHECK_FLAVOUR_REFUSED(words, ...)                                                          \
    do {                                                                                           \
        pb_boot_pmi_flavour_t got_;                                                                \
        char log_[512];                                                                            \
        CHECK_STATUS(choose_in(&got_, log_, sizeof(log_), __VA_ARGS__, NULL),                      \
                     PB_ERR_INVALID_PARAM);                                                        \
        if (strstr(log_, words) == NULL)                                                           \
            pbt_fail(__FILE__, __LINE__, "the message '%s' does not say '%s'", log_, words);       \
    } while (0)

static void case_flavour_from_the_launcher(void)
{
    CHECK_FLAVOUR("singleton", "PMI_JOBID", "only-a-job-id");
    CHECK_FLAVOUR("pmi1", "PMI_FD", "5");
    CHECK_FLAVOUR("pmi1", "PMI_PORT", "host:1", "PMI_ID", "3");
    CHECK_FLAVOUR("pmi2", "PMI_FD", "5", "PMI_JOBID", "7.0");
    CHECK_FLAVOUR("pmi2", "PMI_FD", "5", "POSTBOX_PMI_VERSION", "2");
    /* prterun and srun --mpi=pmix set these */
    CHECK_FLAVOUR("pmix", "PMIX_NAMESPACE", "prterun-vm-1@1", "PMIX_RANK", "0");
    CHECK_FLAVOUR("pmix", "PMIX_SERVER_URI41", "prterun-vm-1@0.0;tcp4://127.0.0.1:1");
    CHECK_FLAVOUR("pmix", "PMIX_RANK", "3");
    /* a PMI socket wins over PMIx variables inherited from an outer job
     * (postbox run started under prterun) */
    CHECK_FLAVOUR("pmi1", "PMI_FD", "5", "PMIX_NAMESPACE", "outer@1");
    CHECK_FLAVOUR("pmix", "POSTBOX_PMI", "auto", "PMIX_NAMESPACE", "n@1");
    CHECK_FLAVOUR("pmix", "POSTBOX_PMI", "", "PMIX_NAMESPACE", "n@1");
}

static void case_flavour_override(void)
{
    CHECK_FLAVOUR("pmix", "POSTBOX_PMI", "pmix", "PMI_FD", "5", "PMIX_NAMESPACE", "n@1");
    CHECK_FLAVOUR("pmi2", "POSTBOX_PMI", "pmi2", "PMI_FD", "5", "PMIX_NAMESPACE", "n@1");
    /* POSTBOX_PMI wins over POSTBOX_PMI_VERSION and PMI_JOBID */
    CHECK_FLAVOUR("pmi1", "POSTBOX_PMI", "pmi1", "PMI_PORT", "h:1", "POSTBOX_PMI_VERSION", "2",
                  "PMI_JOBID", "7.0");
}

static void case_flavour_bad_override(void)
{
    CHECK_FLAVOUR_REFUSED("POSTBOX_PMI='pmi3': use pmi1, pmi2 or pmix", "POSTBOX_PMI", "pmi3",
                          "PMI_FD", "5");
    CHECK_FLAVOUR_REFUSED("POSTBOX_PMI='PMIx': use pmi1, pmi2 or pmix", "POSTBOX_PMI", "PMIx",
                          "PMIX_NAMESPACE", "n@1");
    /* a flavour the launcher does not offer */
    CHECK_FLAVOUR_REFUSED("POSTBOX_PMI=pmix, but the launcher set no PMIX_NAMESPACE", "POSTBOX_PMI",
                          "pmix", "PMI_FD", "5");
    CHECK_FLAVOUR_REFUSED("POSTBOX_PMI=pmi2, but the launcher set neither PMI_FD nor PMI_PORT",
                          "POSTBOX_PMI", "pmi2", "PMIX_NAMESPACE", "n@1");
    CHECK_FLAVOUR_REFUSED("POSTBOX_PMI_VERSION='3': use 1 or 2", "POSTBOX_PMI_VERSION", "3",
                          "PMIX_NAMESPACE", "n@1");
}

static const pbt_case_t cases[] = {
    PBT_CASE(v1_parse_reply),
    PBT_CASE(v1_escapes_round_trip),
    PBT_CASE(v1_malformed_rejected),
    PBT_CASE(v1_format_limits),
    PBT_CASE(v2_parse_reply),
    PBT_CASE(v2_format_round_trip),
    PBT_CASE(v2_malformed_rejected),
    PBT_CASE(spawn_format_limits),
    PBT_CASE(v1_advertised_maximum_fits),
    PBT_CASE(session_v1_fd),
    PBT_CASE(session_v2_fd),
    PBT_CASE(session_v2_fd_slurm),
    PBT_CASE(session_v1_port_initack),
    PBT_CASE(session_v1_port_token_proof),
    PBT_CASE(session_v1_port_proof_after_a_closed_connection),
    PBT_CASE(session_v1_port_challenge_without_token),
    PBT_CASE(singleton_local_kvs),
    PBT_CASE(init_long_line_rejected),
    PBT_CASE(init_bad_v2_length_rejected),
    PBT_CASE(init_huge_v2_length_rejected),
    PBT_CASE(init_wrong_reply_rejected),
    PBT_CASE(init_refused),
    PBT_CASE(init_server_gone),
    PBT_CASE(init_bad_environment),
    PBT_CASE(flavour_from_the_launcher),
    PBT_CASE(flavour_override),
    PBT_CASE(flavour_bad_override),
};

int main(int argc, char **argv)
{
    /* the cases set their own PMI environment */
    unsetenv("PMI_FD");
    unsetenv("PMI_PORT");
    unsetenv("PMI_ID");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    unsetenv("PMI_JOBID");
    unsetenv("POSTBOX_PMI_VERSION");
    setenv("POSTBOX_LOG_LEVEL", "error", 0);
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
