/*
 * PMI client: message parsing and formatting (pure, unit-tested by
 * tests/boot/test_pmi_wire.c), then the connection and the operations of
 * each protocol version.
 */
#include "boot/pmi.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "boot/env.h"
#include "boot/identity.h"
#include "boot/pmix.h"
#include "util/config.h"
#include "util/log.h"
#include "util/random.h"
#include "util/siphash.h"
#include "util/time.h"

/* the v2 length field: "%6u" */
#define PMI_V2_HEADER 6
/* the one-time token of a rank started by `postbox run --hosts`, and the
 * nonces of its proof (bytes; each travels as twice as many hex digits) */
#define PMI_TOKEN_LEN 16
#define PMI_NONCE_LEN 16
/* how long a PMI_PORT client keeps trying when its connection is closed
 * before the server accepted it */
#define PMI_PORT_RETRY_MS 15000

typedef struct pmi_kv {
    struct pmi_kv *next;
    char *key;
    char *value;
} pmi_kv_t;

struct pb_boot_pmi {
    pb_boot_pmi_flavour_t flavour;
    pb_boot_pmix_t *pmix; /* PMIx's client (flavour PB_BOOT_PMI_X) */
    int fd;               /* -1 for a singleton and PMIx */
    int version;          /* the wire protocol: 1, 2, or 0 (singleton, PMIx) */
    int rank;
    int size;
    int appnum;
    char kvsname[PB_BOOT_PMI_NAME_MAX];
    uint8_t token[PMI_TOKEN_LEN]; /* POSTBOX_PMI_TOKEN, wiped after init */
    int has_token;
    int proven;          /* PMI_PORT: the server accepted this rank's initack/fullinit */
    pmi_kv_t *local_kvs; /* a singleton's key-value space */
    size_t rstart, rend; /* unread bytes are rbuf[rstart, rend) */
    char rbuf[2 * PB_BOOT_PMI_MSG_MAX + PMI_V2_HEADER];
};

/* ---- messages ------------------------------------------------------------- */

static int pmi_key_char(int c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '/' || c == '-';
}

static int pmi_key_valid(const char *key)
{
    if (key == NULL || *key == '\0')
        return 0;
    for (const char *p = key; *p != '\0'; p++) {
        if (!pmi_key_char(*p))
            return 0;
    }
    return 1;
}

void pb_boot_pmi_msg_init(pb_boot_pmi_msg_t *msg, const char *cmd)
{
    msg->count = 1;
    msg->pairs[0].key = "cmd";
    msg->pairs[0].value = cmd;
    msg->text[0] = '\0';
}

pb_status_t pb_boot_pmi_msg_add(pb_boot_pmi_msg_t *msg, const char *key, const char *value)
{
    if (msg->count >= PB_BOOT_PMI_MAX_PAIRS)
        return PB_ERR_NO_RESOURCE;
    msg->pairs[msg->count].key = key;
    msg->pairs[msg->count].value = value;
    msg->count++;
    return PB_OK;
}

const char *pb_boot_pmi_msg_cmd(const pb_boot_pmi_msg_t *msg)
{
    return msg->count > 0 ? msg->pairs[0].value : "";
}

const char *pb_boot_pmi_msg_get(const pb_boot_pmi_msg_t *msg, const char *key)
{
    for (int i = 1; i < msg->count; i++) {
        if (strcmp(msg->pairs[i].key, key) == 0)
            return msg->pairs[i].value;
    }
    return NULL;
}

/* a parsed message must start with cmd= (or mcmd=, the multi-line form) */
static pb_status_t pmi_msg_check_cmd(const pb_boot_pmi_msg_t *msg)
{
    if (msg->count == 0)
        return PB_ERR_PROTOCOL;
    if (strcmp(msg->pairs[0].key, "cmd") != 0 && strcmp(msg->pairs[0].key, "mcmd") != 0)
        return PB_ERR_PROTOCOL;
    return PB_OK;
}

/*
 * The text buffer never overflows: every input byte yields at most one
 * output byte, and each separator ('=', ' ', ';') or the end yields the
 * NUL that ends a key or value, so the output is at most @len + 1 bytes.
 */
pb_status_t pb_boot_pmi_parse_v1(const char *line, size_t len, pb_boot_pmi_msg_t *msg)
{
    char *out = msg->text;
    size_t i = 0;

    msg->count = 0;
    if (len > 0 && line[len - 1] == '\n')
        len--;
    if (len + 1 > PB_BOOT_PMI_MSG_MAX)
        return PB_ERR_PROTOCOL;
    for (;;) {
        char *key, *value;

        while (i < len && line[i] == ' ')
            i++;
        if (i == len)
            break;
        key = out;
        while (i < len && pmi_key_char(line[i]))
            *out++ = line[i++];
        if (out == key || i == len || line[i] != '=')
            return PB_ERR_PROTOCOL;
        *out++ = '\0';
        i++;
        value = out;
        while (i < len && line[i] != ' ') {
            if (line[i] == '\\') {
                if (i + 1 == len)
                    return PB_ERR_PROTOCOL;
                i++;
            }
            if (line[i] == '\0' || line[i] == '\n')
                return PB_ERR_PROTOCOL;
            *out++ = line[i++];
        }
        *out++ = '\0';
        if (msg->count == PB_BOOT_PMI_MAX_PAIRS)
            return PB_ERR_PROTOCOL;
        msg->pairs[msg->count].key = key;
        msg->pairs[msg->count].value = value;
        msg->count++;
    }
    return pmi_msg_check_cmd(msg);
}

pb_status_t pb_boot_pmi_parse_v2(const char *body, size_t len, pb_boot_pmi_msg_t *msg)
{
    char *out = msg->text;
    size_t i = 0;

    msg->count = 0;
    if (len > PB_BOOT_PMI_MSG_MAX)
        return PB_ERR_PROTOCOL;
    while (i < len) {
        char *key, *value;

        key = out;
        while (i < len && pmi_key_char(body[i]))
            *out++ = body[i++];
        if (out == key || i == len || body[i] != '=')
            return PB_ERR_PROTOCOL;
        *out++ = '\0';
        i++;
        value = out;
        while (i < len) {
            if (body[i] == ';') {
                if (i + 1 < len && body[i + 1] == ';') {
                    i++; /* ";;" is a literal ';' */
                } else {
                    break;
                }
            }
            if (body[i] == '\0')
                return PB_ERR_PROTOCOL;
            *out++ = body[i++];
        }
        *out++ = '\0';
        if (i < len)
            i++; /* the ';' ending the pair (optional after the last) */
        if (msg->count == PB_BOOT_PMI_MAX_PAIRS)
            return PB_ERR_PROTOCOL;
        msg->pairs[msg->count].key = key;
        msg->pairs[msg->count].value = value;
        msg->count++;
    }
    return pmi_msg_check_cmd(msg);
}

/* A bounded writer: @pos only grows, overflow is remembered. */
typedef struct {
    char *buf;
    size_t cap; /* usable bytes, the final NUL excluded */
    size_t pos;
    int overflow;
} pmi_writer_t;

static void pmi_writer_putc(pmi_writer_t *w, char c)
{
    if (w->pos < w->cap)
        w->buf[w->pos++] = c;
    else
        w->overflow = 1;
}

static void pmi_writer_puts(pmi_writer_t *w, const char *s)
{
    while (*s != '\0')
        pmi_writer_putc(w, *s++);
}

static pb_status_t pmi_msg_check_keys(const pb_boot_pmi_msg_t *msg)
{
    if (msg->count == 0 || msg->pairs[0].value == NULL || msg->pairs[0].value[0] == '\0')
        return PB_ERR_INVALID_PARAM;
    for (int i = 0; i < msg->count; i++) {
        if (!pmi_key_valid(msg->pairs[i].key) || msg->pairs[i].value == NULL)
            return PB_ERR_INVALID_PARAM;
    }
    return PB_OK;
}

pb_status_t pb_boot_pmi_format_v1(const pb_boot_pmi_msg_t *msg, char *buf, size_t cap,
                                  size_t *len_p)
{
    pmi_writer_t w = {buf, 0, 0, 0};
    pb_status_t status = pmi_msg_check_keys(msg);

    if (status != PB_OK)
        return status;
    if (cap == 0)
        return PB_ERR_NO_RESOURCE;
    w.cap = cap - 1 < PB_BOOT_PMI_MSG_MAX ? cap - 1 : PB_BOOT_PMI_MSG_MAX;
    for (int i = 0; i < msg->count; i++) {
        if (i > 0)
            pmi_writer_putc(&w, ' ');
        pmi_writer_puts(&w, msg->pairs[i].key);
        pmi_writer_putc(&w, '=');
        for (const char *v = msg->pairs[i].value; *v != '\0'; v++) {
            if (*v == ' ' || *v == '\\' || *v == '\n')
                pmi_writer_putc(&w, '\\');
            pmi_writer_putc(&w, *v);
        }
    }
    pmi_writer_putc(&w, '\n');
    if (w.overflow)
        return PB_ERR_NO_RESOURCE;
    buf[w.pos] = '\0';
    *len_p = w.pos;
    return PB_OK;
}

pb_status_t pb_boot_pmi_format_v2(const pb_boot_pmi_msg_t *msg, char *buf, size_t cap,
                                  size_t *len_p)
{
    pmi_writer_t w = {buf, 0, PMI_V2_HEADER, 0};
    pb_status_t status = pmi_msg_check_keys(msg);
    char header[PMI_V2_HEADER + 1];

    if (status != PB_OK)
        return status;
    if (cap < PMI_V2_HEADER + 1)
        return PB_ERR_NO_RESOURCE;
    w.cap = cap - 1 < PMI_V2_HEADER + PB_BOOT_PMI_MSG_MAX ? cap - 1
                                                          : PMI_V2_HEADER + PB_BOOT_PMI_MSG_MAX;
    for (int i = 0; i < msg->count; i++) {
        pmi_writer_puts(&w, msg->pairs[i].key);
        pmi_writer_putc(&w, '=');
        for (const char *v = msg->pairs[i].value; *v != '\0'; v++) {
            if (*v == ';')
                pmi_writer_putc(&w, ';');
            pmi_writer_putc(&w, *v);
        }
        pmi_writer_putc(&w, ';');
    }
    if (w.overflow)
        return PB_ERR_NO_RESOURCE;
    snprintf(header, sizeof(header), "%6u", (unsigned)(w.pos - PMI_V2_HEADER));
    memcpy(buf, header, PMI_V2_HEADER);
    buf[w.pos] = '\0';
    *len_p = w.pos;
    return PB_OK;
}

/* ---- wire I/O -------------------------------------------------------------- */

static pb_status_t pmi_send_all(pb_boot_pmi_t *pmi, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t sent = send(pmi->fd, buf, len, MSG_NOSIGNAL);

        if (sent < 0 && errno == ENOTSOCK)
            sent = write(pmi->fd, buf, len);
        if (sent < 0) {
            if (errno == EINTR)
                continue;
            pb_error("PMI: write to the process manager (fd %d) failed: %m", pmi->fd);
            return PB_ERR_IO;
        }
        buf += sent;
        len -= (size_t)sent;
    }
    return PB_OK;
}

/* Read more bytes into rbuf (compacting first). */
static pb_status_t pmi_read_more(pb_boot_pmi_t *pmi)
{
    ssize_t got;

    if (pmi->rstart > 0) {
        memmove(pmi->rbuf, pmi->rbuf + pmi->rstart, pmi->rend - pmi->rstart);
        pmi->rend -= pmi->rstart;
        pmi->rstart = 0;
    }
    do {
        got = read(pmi->fd, pmi->rbuf + pmi->rend, sizeof(pmi->rbuf) - pmi->rend);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        pb_error("PMI: read from the process manager (fd %d) failed: %m", pmi->fd);
        return PB_ERR_IO;
    }
    if (got == 0) {
        pb_error("PMI: the process manager closed the connection (fd %d)", pmi->fd);
        return PB_ERR_IO;
    }
    pmi->rend += (size_t)got;
    return PB_OK;
}

static pb_status_t pmi_recv_v1(pb_boot_pmi_t *pmi, pb_boot_pmi_msg_t *msg)
{
    for (;;) {
        char *start = pmi->rbuf + pmi->rstart;
        size_t avail = pmi->rend - pmi->rstart;
        char *nl = memchr(start, '\n', avail);
        pb_status_t status;

        if (nl != NULL) {
            size_t len = (size_t)(nl - start) + 1;

            if (len > PB_BOOT_PMI_MSG_MAX) {
                pb_error("PMI: reply from the process manager longer than %d bytes",
                         PB_BOOT_PMI_MSG_MAX);
                return PB_ERR_PROTOCOL;
            }
            status = pb_boot_pmi_parse_v1(start, len, msg);
            pmi->rstart += len;
            if (status != PB_OK)
                pb_error("PMI: malformed reply from the process manager: '%.*s'",
                         (int)(len - 1 < 200 ? len - 1 : 200), start);
            return status;
        }
        if (avail >= PB_BOOT_PMI_MSG_MAX) {
            pb_error("PMI: reply from the process manager longer than %d bytes",
                     PB_BOOT_PMI_MSG_MAX);
            return PB_ERR_PROTOCOL;
        }
        status = pmi_read_more(pmi);
        if (status != PB_OK)
            return status;
    }
}

static pb_status_t pmi_recv_v2(pb_boot_pmi_t *pmi, pb_boot_pmi_msg_t *msg)
{
    size_t body = 0, digits = 0;
    pb_status_t status;
    const char *start;

    while (pmi->rend - pmi->rstart < PMI_V2_HEADER) {
        status = pmi_read_more(pmi);
        if (status != PB_OK)
            return status;
    }
    start = pmi->rbuf + pmi->rstart;
    /* digits padded with spaces: "%6u" (Hydra) or "%-6u" (Slurm's slurmstepd) */
    for (int i = 0, trailing = 0; i < PMI_V2_HEADER; i++) {
        if (isdigit((unsigned char)start[i]) && !trailing) {
            body = body * 10 + (size_t)(start[i] - '0');
            digits++;
        } else if (start[i] == ' ') {
            trailing = digits > 0;
        } else {
            digits = 0;
            break;
        }
    }
    if (digits == 0 || body > PB_BOOT_PMI_MSG_MAX) {
        pb_error("PMI: bad length field '%.6s' from the process manager (6 characters: "
                 "digits padded with spaces, at most %d)",
                 start, PB_BOOT_PMI_MSG_MAX);
        return PB_ERR_PROTOCOL;
    }
    while (pmi->rend - pmi->rstart < PMI_V2_HEADER + body) {
        status = pmi_read_more(pmi);
        if (status != PB_OK)
            return status;
    }
    start = pmi->rbuf + pmi->rstart;
    status = pb_boot_pmi_parse_v2(start + PMI_V2_HEADER, body, msg);
    pmi->rstart += PMI_V2_HEADER + body;
    if (status != PB_OK)
        pb_error("PMI: malformed reply from the process manager: '%.*s'",
                 (int)(body < 200 ? body : 200), start + PMI_V2_HEADER);
    return status;
}

/* Send @msg in wire form @version (1 or 2). */
static pb_status_t pmi_send(pb_boot_pmi_t *pmi, const pb_boot_pmi_msg_t *msg, int version)
{
    char buf[PMI_V2_HEADER + PB_BOOT_PMI_MSG_MAX + 1];
    pb_status_t status;
    size_t len;

    if (version == 2)
        status = pb_boot_pmi_format_v2(msg, buf, sizeof(buf), &len);
    else
        status = pb_boot_pmi_format_v1(msg, buf, sizeof(buf), &len);
    if (status != PB_OK) {
        pb_error("PMI: cannot encode '%s': %s (keys are [A-Za-z0-9_/-], messages at most %d "
                 "bytes)",
                 pb_boot_pmi_msg_cmd(msg), pb_status_string(status), PB_BOOT_PMI_MSG_MAX);
        return PB_ERR_INVALID_PARAM;
    }
    return pmi_send_all(pmi, buf, len);
}

static pb_status_t pmi_recv(pb_boot_pmi_t *pmi, pb_boot_pmi_msg_t *msg, int version)
{
    return version == 2 ? pmi_recv_v2(pmi, msg) : pmi_recv_v1(pmi, msg);
}

/* Is @reply's rc absent or 0? */
static int pmi_reply_ok(const pb_boot_pmi_msg_t *reply)
{
    const char *rc = pb_boot_pmi_msg_get(reply, "rc");

    return rc == NULL || strcmp(rc, "0") == 0;
}

/* Check that @reply to @query is @expect; with @check_rc, also that its
 * rc is 0. */
static pb_status_t pmi_check_reply(const pb_boot_pmi_msg_t *query, const pb_boot_pmi_msg_t *reply,
                                   const char *expect, int check_rc)
{
    if (strcmp(pb_boot_pmi_msg_cmd(reply), expect) != 0) {
        pb_error("PMI: the process manager answered '%s' with '%s', expected '%s'",
                 pb_boot_pmi_msg_cmd(query), pb_boot_pmi_msg_cmd(reply), expect);
        return PB_ERR_PROTOCOL;
    }
    if (check_rc && !pmi_reply_ok(reply)) {
        const char *why = pb_boot_pmi_msg_get(reply, "msg");

        if (why == NULL)
            why = pb_boot_pmi_msg_get(reply, "errmsg");
        pb_error("PMI: the process manager refused '%s': rc=%s%s%s", pb_boot_pmi_msg_cmd(query),
                 pb_boot_pmi_msg_get(reply, "rc"), why ? " " : "", why ? why : "");
        return PB_ERR_PROTOCOL;
    }
    return PB_OK;
}

/* Send @query in wire form @version, receive the reply and check it
 * (pmi_check_reply). */
static pb_status_t pmi_call(pb_boot_pmi_t *pmi, const pb_boot_pmi_msg_t *query, int version,
                            const char *expect, int check_rc, pb_boot_pmi_msg_t *reply)
{
    pb_status_t status = pmi_send(pmi, query, version);

    if (status != PB_OK)
        return status;
    status = pmi_recv(pmi, reply, version);
    if (status != PB_OK)
        return status;
    return pmi_check_reply(query, reply, expect, check_rc);
}

static int pmi_hex_parse(const char *text, uint8_t *out, size_t len)
{
    if (strlen(text) != 2 * len)
        return -1;
    for (size_t i = 0; i < 2 * len; i++) {
        int c = text[i], v;

        if (c >= '0' && c <= '9')
            v = c - '0';
        else if (c >= 'a' && c <= 'f')
            v = c - 'a' + 10;
        else
            return -1;
        if (i % 2 == 0)
            out[i / 2] = (uint8_t)(v << 4);
        else
            out[i / 2] |= (uint8_t)v;
    }
    return 0;
}

static void pmi_hex_format(const uint8_t *in, size_t len, char *out)
{
    for (size_t i = 0; i < len; i++)
        snprintf(out + 2 * i, 3, "%02x", in[i]);
}

/*
 * The server's "auth-challenge nonce=<hex>" after this rank named itself
 * @id: answer "auth-response cnonce=<hex> mac=<16 hex>", the mac being
 * SipHash-2-4 under the rank's token of "pmi-auth <job id> <id> <nonce>
 * <cnonce>" (the token itself is never sent).
 */
static pb_status_t pmi_answer_challenge(pb_boot_pmi_t *pmi, const pb_boot_pmi_msg_t *challenge,
                                        int version, const char *id)
{
    const char *nonce = pb_boot_pmi_msg_get(challenge, "nonce");
    const char *job = getenv("POSTBOX_JOB_ID");
    uint8_t raw[PMI_NONCE_LEN];
    char cnonce[2 * PMI_NONCE_LEN + 1], mac[17], text[PB_BOOT_ID_MAX + 160];
    pb_boot_pmi_msg_t query;
    int len;

    if (!pmi->has_token) {
        pb_error("PMI: the process manager wants this rank to prove its one-time token, and "
                 "none was given (POSTBOX_PMI_TOKEN: start the rank with postbox run --hosts)");
        return PB_ERR_PROTOCOL;
    }
    if (nonce == NULL || pmi_hex_parse(nonce, raw, sizeof(raw)) != 0) {
        pb_error("PMI: the process manager's auth-challenge has no nonce of %d hex digits",
                 2 * PMI_NONCE_LEN);
        return PB_ERR_PROTOCOL;
    }
    if (pb_random_bytes(raw, sizeof(raw)) < 0) {
        pb_error("PMI: cannot make a nonce: getrandom failed: %m");
        return PB_ERR_IO;
    }
    pmi_hex_format(raw, sizeof(raw), cnonce);
    len = snprintf(text, sizeof(text), "pmi-auth %s %s %s %s", job != NULL ? job : "", id, nonce,
                   cnonce);
    if (len < 0 || (size_t)len >= sizeof(text)) {
        pb_error("PMI: POSTBOX_JOB_ID or PMI_ID is too long for the token proof");
        return PB_ERR_INVALID_PARAM;
    }
    snprintf(mac, sizeof(mac), "%016llx",
             (unsigned long long)pb_siphash24(pmi->token, text, (size_t)len));
    pb_boot_pmi_msg_init(&query, "auth-response");
    pb_boot_pmi_msg_add(&query, "cnonce", cnonce);
    pb_boot_pmi_msg_add(&query, "mac", mac);
    return pmi_send(pmi, &query, version);
}

/* The IPv4 address of this end of the last PMI_PORT connection (network
 * order; 0: none, or not IPv4). */
static _Atomic uint32_t pmi_local_ipv4;

static void record_local_ipv4(int fd)
{
    struct sockaddr_storage local;
    socklen_t len = sizeof(local);

    if (getsockname(fd, (struct sockaddr *)&local, &len) == 0 && local.ss_family == AF_INET)
        atomic_store(&pmi_local_ipv4, ((struct sockaddr_in *)&local)->sin_addr.s_addr);
}

/* The source address the routing table picks towards IPv4 address @text
 * (network order), or 0. */
static uint32_t route_source_ipv4(const char *text)
{
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(9)};
    struct sockaddr_in local;
    socklen_t len = sizeof(local);
    uint32_t found = 0;
    int fd;

    if (text == NULL || inet_pton(AF_INET, text, &peer.sin_addr) != 1)
        return 0;
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    /* a UDP connect sends nothing: it only chooses the route */
    if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)) == 0 &&
        getsockname(fd, (struct sockaddr *)&local, &len) == 0)
        found = local.sin_addr.s_addr;
    close(fd);
    return found;
}

uint32_t pb_boot_pmi_local_ipv4(void)
{
    uint32_t found = atomic_load(&pmi_local_ipv4);

    if (found == 0)
        found = route_source_ipv4(getenv("SLURM_LAUNCH_NODE_IPADDR"));
    return found;
}

/* pmi_call for the message that names this rank (@id) to a PMI_PORT
 * server: a server that asks for the token proof first gets it. */
static pb_status_t pmi_call_proven(pb_boot_pmi_t *pmi, const pb_boot_pmi_msg_t *query, int version,
                                   const char *expect, const char *id, pb_boot_pmi_msg_t *reply)
{
    pb_status_t status = pmi_send(pmi, query, version);

    if (status == PB_OK)
        status = pmi_recv(pmi, reply, version);
    if (status == PB_OK && strcmp(pb_boot_pmi_msg_cmd(reply), "auth-challenge") == 0) {
        status = pmi_answer_challenge(pmi, reply, version, id);
        if (status == PB_OK)
            status = pmi_recv(pmi, reply, version);
    }
    if (status != PB_OK)
        return status;
    status = pmi_check_reply(query, reply, expect, 1);
    pmi->proven = status == PB_OK;
    return status;
}

/* Parse the integer @key of @reply into *@value_p. */
static pb_status_t pmi_reply_int(const pb_boot_pmi_msg_t *reply, const char *key, int *value_p)
{
    const char *text = pb_boot_pmi_msg_get(reply, key);
    char *end;
    long value;

    if (text == NULL) {
        pb_error("PMI: reply '%s' lacks %s", pb_boot_pmi_msg_cmd(reply), key);
        return PB_ERR_PROTOCOL;
    }
    errno = 0;
    value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < -1 || value > 1 << 30) {
        pb_error("PMI: reply '%s' has a bad %s '%s'", pb_boot_pmi_msg_cmd(reply), key, text);
        return PB_ERR_PROTOCOL;
    }
    *value_p = (int)value;
    return PB_OK;
}

/* Copy the string @key of @reply to @out (@len bytes). */
static pb_status_t pmi_reply_string(const pb_boot_pmi_msg_t *reply, const char *key, char *out,
                                    size_t len)
{
    const char *text = pb_boot_pmi_msg_get(reply, key);

    if (text == NULL || strlen(text) >= len) {
        pb_error("PMI: reply '%s' lacks %s or it is longer than %zu bytes",
                 pb_boot_pmi_msg_cmd(reply), key, len - 1);
        return PB_ERR_PROTOCOL;
    }
    memcpy(out, text, strlen(text) + 1);
    return PB_OK;
}

/* ---- environment ------------------------------------------------------------ */

static pb_status_t pmi_env_int(const char *name, int min, int *value_p)
{
    const char *text = getenv(name);
    char *end;
    long value;

    errno = 0;
    value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < min || value > 1 << 30) {
        pb_error("PMI: %s='%s' is not a valid number", name, text);
        return PB_ERR_INVALID_PARAM;
    }
    *value_p = (int)value;
    return PB_OK;
}

static pb_status_t pmi_choose_version(int *version_p)
{
    const char *text;

    if (getenv("POSTBOX_PMI_VERSION") == NULL) {
        /* Slurm's --mpi=pmi2 sets PMI_JOBID, and speaks only PMI-2 */
        *version_p = getenv("PMI_JOBID") != NULL ? 2 : 1;
        return PB_OK;
    }
    text = pb_config_get_string("POSTBOX_PMI_VERSION");
    if (strcmp(text, "1") == 0 || strcmp(text, "2") == 0) {
        *version_p = text[0] - '0';
        return PB_OK;
    }
    pb_error("POSTBOX_PMI_VERSION='%s': use 1 or 2", text);
    return PB_ERR_INVALID_PARAM;
}

/* Did the launcher set a PMIx server's variables? */
static int pmi_env_offers_pmix(void)
{
    extern char **environ;

    if (getenv("PMIX_NAMESPACE") != NULL || getenv("PMIX_RANK") != NULL)
        return 1;
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, "PMIX_SERVER_URI", strlen("PMIX_SERVER_URI")) == 0)
            return 1;
    }
    return 0;
}

const char *pb_boot_pmi_flavour_name(pb_boot_pmi_flavour_t flavour)
{
    switch (flavour) {
    case PB_BOOT_PMI_1: return "pmi1";
    case PB_BOOT_PMI_2: return "pmi2";
    case PB_BOOT_PMI_X: return "pmix";
    default: return "singleton";
    }
}

pb_status_t pb_boot_pmi_choose(pb_boot_pmi_flavour_t *flavour_p)
{
    const char *forced = getenv("POSTBOX_PMI");
    int wire = getenv("PMI_FD") != NULL || getenv("PMI_PORT") != NULL;
    int version;
    pb_status_t status;

    if (forced != NULL && *forced != '\0' && strcmp(forced, "auto") != 0) {
        if (strcmp(forced, "pmix") == 0) {
            if (!pmi_env_offers_pmix()) {
                pb_error("POSTBOX_PMI=pmix, but the launcher set no PMIX_NAMESPACE, PMIX_RANK or "
                         "PMIX_SERVER_URI* (was this process started by a PMIx launcher such as "
                         "prterun or srun --mpi=pmix?)");
                return PB_ERR_INVALID_PARAM;
            }
            *flavour_p = PB_BOOT_PMI_X;
            return PB_OK;
        }
        if (strcmp(forced, "pmi1") != 0 && strcmp(forced, "pmi2") != 0) {
            pb_error("POSTBOX_PMI='%s': use pmi1, pmi2 or pmix (or auto, or leave it unset, to "
                     "choose from what the launcher offers)",
                     forced);
            return PB_ERR_INVALID_PARAM;
        }
        if (!wire) {
            pb_error("POSTBOX_PMI=%s, but the launcher set neither PMI_FD nor PMI_PORT (was this "
                     "process started by a PMI launcher such as postbox run, mpiexec.hydra or "
                     "srun --mpi=pmi2?)",
                     forced);
            return PB_ERR_INVALID_PARAM;
        }
        *flavour_p = forced[3] == '1' ? PB_BOOT_PMI_1 : PB_BOOT_PMI_2;
        return PB_OK;
    }
    /* a bad POSTBOX_PMI_VERSION is an error whatever the launcher */
    status = pmi_choose_version(&version);
    if (status != PB_OK)
        return status;
    if (wire)
        *flavour_p = version == 2 ? PB_BOOT_PMI_2 : PB_BOOT_PMI_1;
    else
        *flavour_p = pmi_env_offers_pmix() ? PB_BOOT_PMI_X : PB_BOOT_PMI_SINGLETON;
    return PB_OK;
}

/* Take POSTBOX_PMI_TOKEN (32 hex digits) out of the environment (wiping
 * it there) into @pmi; its absence is no error (PMI_FD, Hydra). */
static pb_status_t pmi_take_token(pb_boot_pmi_t *pmi)
{
    char text[2 * PMI_TOKEN_LEN + 1];
    int got = pb_boot_env_take("POSTBOX_PMI_TOKEN", text, sizeof(text));

    if (got == 0)
        return PB_OK;
    if (got < 0 || pmi_hex_parse(text, pmi->token, sizeof(pmi->token)) != 0) {
        explicit_bzero(text, sizeof(text));
        pb_error("PMI: POSTBOX_PMI_TOKEN is not %d lowercase hex digits", 2 * PMI_TOKEN_LEN);
        return PB_ERR_INVALID_PARAM;
    }
    explicit_bzero(text, sizeof(text));
    pmi->has_token = 1;
    return PB_OK;
}

static pb_status_t pmi_connect_port(const char *address, int *fd_p)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list, *ai;
    char host[256];
    const char *colon = strrchr(address, ':');
    size_t host_len;
    int ret, fd = -1, one = 1;

    if (colon == NULL || colon == address || colon[1] == '\0' ||
        (host_len = (size_t)(colon - address)) >= sizeof(host)) {
        pb_error("PMI: PMI_PORT='%s' is not host:port", address);
        return PB_ERR_INVALID_PARAM;
    }
    memcpy(host, address, host_len);
    host[host_len] = '\0';
    ret = getaddrinfo(host, colon + 1, &hints, &list);
    if (ret != 0) {
        pb_error("PMI: cannot resolve PMI_PORT='%s': %s", address, gai_strerror(ret));
        return PB_ERR_UNREACHABLE;
    }
    for (ai = list; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(list);
    if (fd < 0) {
        pb_error("PMI: cannot connect to the process manager at PMI_PORT='%s': %m", address);
        return PB_ERR_UNREACHABLE;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    record_local_ipv4(fd);
    *fd_p = fd;
    return PB_OK;
}

/* ---- init ------------------------------------------------------------------ */

/* PMI-1 port mode: "cmd=initack pmiid=<id>" is answered by "cmd=initack",
 * with rank and size on that line or on following "cmd=set key=val" lines
 * (size, rank, then debug, which ends the list). */
static pb_status_t pmi_v1_initack(pb_boot_pmi_t *pmi, const char *id)
{
    pb_boot_pmi_msg_t query, reply;
    int have_rank = 0, have_size = 0;
    pb_status_t status;

    pb_boot_pmi_msg_init(&query, "initack");
    pb_boot_pmi_msg_add(&query, "pmiid", id);
    status = pmi_call_proven(pmi, &query, 1, "initack", id, &reply);
    if (status != PB_OK)
        return status;
    if (pb_boot_pmi_msg_get(&reply, "rank") != NULL && pb_boot_pmi_msg_get(&reply, "size"))
        goto one_line;
    for (;;) {
        const char *key;

        status = pmi_recv_v1(pmi, &reply);
        if (status != PB_OK)
            return status;
        if (strcmp(pb_boot_pmi_msg_cmd(&reply), "set") != 0 || reply.count != 2) {
            pb_error("PMI: expected 'cmd=set' after initack, got '%s'",
                     pb_boot_pmi_msg_cmd(&reply));
            return PB_ERR_PROTOCOL;
        }
        key = reply.pairs[1].key;
        if (strcmp(key, "rank") == 0) {
            status = pmi_reply_int(&reply, "rank", &pmi->rank);
            have_rank = 1;
        } else if (strcmp(key, "size") == 0) {
            status = pmi_reply_int(&reply, "size", &pmi->size);
            have_size = 1;
        }
        if (status != PB_OK)
            return status;
        if (strcmp(key, "debug") == 0)
            break;
    }
    if (!have_rank || !have_size) {
        pb_error("PMI: initack gave no %s", have_rank ? "size" : "rank");
        return PB_ERR_PROTOCOL;
    }
    return PB_OK;

one_line:
    status = pmi_reply_int(&reply, "rank", &pmi->rank);
    if (status == PB_OK)
        status = pmi_reply_int(&reply, "size", &pmi->size);
    return status;
}

static pb_status_t pmi_v1_init(pb_boot_pmi_t *pmi)
{
    const char *id = getenv("PMI_ID");
    pb_boot_pmi_msg_t query, reply;
    pb_status_t status;

    if (id != NULL && getenv("PMI_FD") == NULL) {
        status = pmi_v1_initack(pmi, id);
        if (status != PB_OK)
            return status;
    }
    pb_boot_pmi_msg_init(&query, "init");
    pb_boot_pmi_msg_add(&query, "pmi_version", "1");
    pb_boot_pmi_msg_add(&query, "pmi_subversion", "1");
    status = pmi_call(pmi, &query, 1, "response_to_init", 1, &reply);
    if (status != PB_OK)
        return status;
    if (pmi->rank < 0) {
        if (getenv("PMI_RANK") == NULL) {
            pb_error("PMI: PMI_FD is set but PMI_RANK is not");
            return PB_ERR_INVALID_PARAM;
        }
        status = pmi_env_int("PMI_RANK", 0, &pmi->rank);
        if (status != PB_OK)
            return status;
    }
    if (pmi->size < 0 && getenv("PMI_SIZE") != NULL) {
        status = pmi_env_int("PMI_SIZE", 1, &pmi->size);
        if (status != PB_OK)
            return status;
    }
    if (pmi->size < 0) {
        pb_boot_pmi_msg_init(&query, "get_universe_size");
        status = pmi_call(pmi, &query, 1, "universe_size", 1, &reply);
        if (status == PB_OK)
            status = pmi_reply_int(&reply, "size", &pmi->size);
        if (status != PB_OK)
            return status;
    }
    pb_boot_pmi_msg_init(&query, "get_appnum");
    status = pmi_call(pmi, &query, 1, "appnum", 1, &reply);
    if (status == PB_OK)
        status = pmi_reply_int(&reply, "appnum", &pmi->appnum);
    if (status != PB_OK)
        return status;
    pb_boot_pmi_msg_init(&query, "get_my_kvsname");
    status = pmi_call(pmi, &query, 1, "my_kvsname", 1, &reply);
    if (status != PB_OK)
        return status;
    return pmi_reply_string(&reply, "kvsname", pmi->kvsname, sizeof(pmi->kvsname));
}

/* PMI-2: the init handshake in v1 form, then fullinit and job-getid. */
static pb_status_t pmi_v2_init(pb_boot_pmi_t *pmi)
{
    const char *jobid = getenv("PMI_JOBID"), *rank = getenv("PMI_RANK"), *id = getenv("PMI_ID");
    pb_boot_pmi_msg_t query, reply;
    pb_status_t status;

    pb_boot_pmi_msg_init(&query, "init");
    pb_boot_pmi_msg_add(&query, "pmi_version", "2");
    pb_boot_pmi_msg_add(&query, "pmi_subversion", "0");
    status = pmi_call(pmi, &query, 1, "response_to_init", 1, &reply);
    if (status != PB_OK)
        return status;
    pb_boot_pmi_msg_init(&query, "fullinit");
    if (jobid != NULL)
        pb_boot_pmi_msg_add(&query, "pmijobid", jobid);
    /* Hydra's port mode sets only PMI_ID (the rank) but wants pmirank */
    if (rank != NULL || id != NULL)
        pb_boot_pmi_msg_add(&query, "pmirank", rank != NULL ? rank : id);
    if (id != NULL)
        pb_boot_pmi_msg_add(&query, "pmiid", id);
    pb_boot_pmi_msg_add(&query, "threaded", "FALSE");
    if (getenv("PMI_FD") == NULL && id != NULL)
        status = pmi_call_proven(pmi, &query, 2, "fullinit-response", id, &reply);
    else
        status = pmi_call(pmi, &query, 2, "fullinit-response", 1, &reply);
    if (status == PB_OK)
        status = pmi_reply_int(&reply, "rank", &pmi->rank);
    if (status == PB_OK)
        status = pmi_reply_int(&reply, "size", &pmi->size);
    if (status != PB_OK)
        return status;
    if (pb_boot_pmi_msg_get(&reply, "appnum") != NULL) {
        status = pmi_reply_int(&reply, "appnum", &pmi->appnum);
        if (status != PB_OK)
            return status;
    }
    pb_boot_pmi_msg_init(&query, "job-getid");
    status = pmi_call(pmi, &query, 2, "job-getid-response", 1, &reply);
    if (status != PB_OK)
        return status;
    return pmi_reply_string(&reply, "jobid", pmi->kvsname, sizeof(pmi->kvsname));
}

/*
 * Connect to PMI_PORT and run the init handshake.  The launcher may close a
 * connection that has not proven its rank yet (to make room when others
 * crowd its port): then try again with a growing pause, for
 * PMI_PORT_RETRY_MS at most (a refused connect is no such case: nothing
 * listens there).  The token is good until
 * a proof is accepted, so a retry can prove it again.
 */
static pb_status_t pmi_port_init(pb_boot_pmi_t *pmi, const char *port)
{
    int64_t give_up = pb_time_now_ms() + PMI_PORT_RETRY_MS;
    long pause_ms = 10;
    pb_status_t status;

    for (;;) {
        pmi->rank = -1;
        pmi->size = -1;
        pmi->rstart = pmi->rend = 0;
        status = pmi_connect_port(port, &pmi->fd);
        if (status == PB_OK) {
            status = pmi->version == 2 ? pmi_v2_init(pmi) : pmi_v1_init(pmi);
            if (status == PB_OK)
                return PB_OK;
            close(pmi->fd);
            pmi->fd = -1;
        }
        if (status != PB_ERR_IO || pmi->proven || pb_time_now_ms() + pause_ms >= give_up)
            return status;
        pb_warn("PMI: the connection to PMI_PORT='%s' ended before this rank was accepted; "
                "trying again in %ld ms",
                port, pause_ms);
        nanosleep(&(struct timespec){pause_ms / 1000, (pause_ms % 1000) * 1000000L}, NULL);
        pause_ms = pause_ms * 2 > 1000 ? 1000 : pause_ms * 2;
    }
}

/* Join the PMIx server of the launcher (flavour PB_BOOT_PMI_X). */
static pb_status_t pmi_pmix_init(pb_boot_pmi_t *pmi)
{
    pb_boot_pmix_job_t job;
    pb_status_t status = pb_boot_pmix_init(&pmi->pmix, &job);

    if (status != PB_OK)
        return status;
    pmi->rank = job.rank;
    pmi->size = job.size;
    pmi->appnum = job.appnum;
    snprintf(pmi->kvsname, sizeof(pmi->kvsname), "%s", job.nspace);
    pb_debug("PMIx: rank %d of %d, namespace %s", pmi->rank, pmi->size, pmi->kvsname);
    return PB_OK;
}

pb_status_t pb_boot_pmi_init(pb_boot_pmi_t **pmi_p)
{
    const char *fd_text = getenv("PMI_FD"), *port = getenv("PMI_PORT");
    pb_boot_pmi_flavour_t flavour;
    pb_boot_pmi_t *pmi;
    pb_status_t status;
    int version;

    status = pb_boot_pmi_choose(&flavour);
    if (status != PB_OK)
        return status;
    version = flavour == PB_BOOT_PMI_2 ? 2 : 1;
    pmi = calloc(1, sizeof(*pmi));
    if (pmi == NULL) {
        pb_error("PMI: out of memory");
        return PB_ERR_NO_MEMORY;
    }
    pmi->flavour = flavour;
    pmi->fd = -1;
    pmi->rank = -1;
    pmi->size = -1;
    status = pmi_take_token(pmi);
    if (status != PB_OK)
        goto err_free;
    if (flavour == PB_BOOT_PMI_X) {
        status = pmi_pmix_init(pmi);
        if (status != PB_OK)
            goto err_free;
        *pmi_p = pmi;
        return PB_OK;
    }
    if (flavour == PB_BOOT_PMI_SINGLETON) {
        /* a singleton: rank 0 of 1, with its own key-value space */
        pmi->rank = 0;
        pmi->size = 1;
        snprintf(pmi->kvsname, sizeof(pmi->kvsname), "singleton-%d", (int)getpid());
        *pmi_p = pmi;
        return PB_OK;
    }
    if (fd_text != NULL) {
        status = pmi_env_int("PMI_FD", 0, &pmi->fd);
        if (status != PB_OK)
            goto err_free;
        if (fcntl(pmi->fd, F_SETFD, FD_CLOEXEC) < 0) {
            pb_error("PMI: PMI_FD=%d is not an open descriptor: %m", pmi->fd);
            pmi->fd = -1;
            status = PB_ERR_INVALID_PARAM;
            goto err_free;
        }
    } else {
        pmi->version = version;
        status = pmi_port_init(pmi, port);
        if (status != PB_OK)
            goto err_free;
        goto check;
    }
    pmi->version = version;
    status = version == 2 ? pmi_v2_init(pmi) : pmi_v1_init(pmi);
    if (status != PB_OK)
        goto err_close;
check:
    explicit_bzero(pmi->token, sizeof(pmi->token));
    pmi->has_token = 0;
    if (pmi->size < 1 || pmi->rank < 0 || pmi->rank >= pmi->size) {
        pb_error("PMI: the process manager gave rank %d of size %d", pmi->rank, pmi->size);
        status = PB_ERR_PROTOCOL;
        goto err_close;
    }
    pb_debug("PMI-%d: rank %d of %d, kvs %s", version, pmi->rank, pmi->size, pmi->kvsname);
    *pmi_p = pmi;
    return PB_OK;

err_close:
    close(pmi->fd);
err_free:
    explicit_bzero(pmi->token, sizeof(pmi->token));
    free(pmi);
    return status;
}

int pb_boot_pmi_rank(const pb_boot_pmi_t *pmi)
{
    return pmi->rank;
}

int pb_boot_pmi_size(const pb_boot_pmi_t *pmi)
{
    return pmi->size;
}

int pb_boot_pmi_appnum(const pb_boot_pmi_t *pmi)
{
    return pmi->appnum;
}

int pb_boot_pmi_version(const pb_boot_pmi_t *pmi)
{
    return pmi->version;
}

pb_boot_pmi_flavour_t pb_boot_pmi_flavour(const pb_boot_pmi_t *pmi)
{
    return pmi->flavour;
}

int pb_boot_pmi_launcher_local_ranks(pb_boot_pmi_t *pmi, int *ranks, int max)
{
    return pmi->pmix != NULL ? pb_boot_pmix_local_peers(pmi->pmix, ranks, max) : -1;
}

const char *pb_boot_pmi_kvsname(const pb_boot_pmi_t *pmi)
{
    return pmi->kvsname;
}

/* ---- key-value space ---------------------------------------------------------- */

static pmi_kv_t *pmi_local_find(pb_boot_pmi_t *pmi, const char *key)
{
    for (pmi_kv_t *kv = pmi->local_kvs; kv != NULL; kv = kv->next) {
        if (strcmp(kv->key, key) == 0)
            return kv;
    }
    return NULL;
}

static pb_status_t pmi_local_put(pb_boot_pmi_t *pmi, const char *key, const char *value)
{
    pmi_kv_t *kv = pmi_local_find(pmi, key);
    char *copy = strdup(value);

    if (copy == NULL)
        goto err_no_memory;
    if (kv == NULL) {
        kv = calloc(1, sizeof(*kv));
        if (kv == NULL)
            goto err_free_copy;
        kv->key = strdup(key);
        if (kv->key == NULL)
            goto err_free_kv;
        kv->next = pmi->local_kvs;
        pmi->local_kvs = kv;
    }
    free(kv->value);
    kv->value = copy;
    return PB_OK;

err_free_kv:
    free(kv);
err_free_copy:
    free(copy);
err_no_memory:
    pb_error("PMI: out of memory for key %s", key);
    return PB_ERR_NO_MEMORY;
}

static pb_status_t pmi_check_key(const char *key, const char *value)
{
    if (!pmi_key_valid(key) || strlen(key) >= PB_BOOT_PMI_KEY_MAX) {
        pb_error("PMI: bad key '%s': use 1 to %d of [A-Za-z0-9_/-]", key ? key : "(null)",
                 PB_BOOT_PMI_KEY_MAX - 1);
        return PB_ERR_INVALID_PARAM;
    }
    if (value != NULL && strlen(value) >= PB_BOOT_PMI_VALUE_MAX) {
        pb_error("PMI: value of key '%s' is longer than %d bytes", key, PB_BOOT_PMI_VALUE_MAX - 1);
        return PB_ERR_INVALID_PARAM;
    }
    return PB_OK;
}

pb_status_t pb_boot_pmi_put(pb_boot_pmi_t *pmi, const char *key, const char *value)
{
    pb_boot_pmi_msg_t query, reply;
    pb_status_t status = pmi_check_key(key, value == NULL ? "" : value);

    if (status != PB_OK)
        return status;
    if (value == NULL)
        value = "";
    if (pmi->pmix != NULL)
        return pb_boot_pmix_put(pmi->pmix, key, value);
    if (pmi->version == 0)
        return pmi_local_put(pmi, key, value);
    if (pmi->version == 2) {
        pb_boot_pmi_msg_init(&query, "kvs-put");
        pb_boot_pmi_msg_add(&query, "key", key);
        pb_boot_pmi_msg_add(&query, "value", value);
        return pmi_call(pmi, &query, 2, "kvs-put-response", 1, &reply);
    }
    pb_boot_pmi_msg_init(&query, "put");
    pb_boot_pmi_msg_add(&query, "kvsname", pmi->kvsname);
    pb_boot_pmi_msg_add(&query, "key", key);
    pb_boot_pmi_msg_add(&query, "value", value);
    return pmi_call(pmi, &query, 1, "put_result", 1, &reply);
}

pb_status_t pb_boot_pmi_get(pb_boot_pmi_t *pmi, const char *key, char *value, size_t len,
                            int *found_p)
{
    pb_boot_pmi_msg_t query, reply;
    const char *text = NULL, *found;
    pb_status_t status = pmi_check_key(key, NULL);

    if (status != PB_OK)
        return status;
    if (pmi->pmix != NULL)
        return pb_boot_pmix_get(pmi->pmix, key, value, len, found_p);
    if (pmi->version == 0) {
        pmi_kv_t *kv = pmi_local_find(pmi, key);

        text = kv ? kv->value : NULL;
    } else if (pmi->version == 2) {
        pb_boot_pmi_msg_init(&query, "kvs-get");
        pb_boot_pmi_msg_add(&query, "jobid", pmi->kvsname);
        pb_boot_pmi_msg_add(&query, "key", key);
        status = pmi_call(pmi, &query, 2, "kvs-get-response", 1, &reply);
        if (status != PB_OK)
            return status;
        found = pb_boot_pmi_msg_get(&reply, "found");
        if (found == NULL || strcmp(found, "TRUE") == 0) {
            text = pb_boot_pmi_msg_get(&reply, "value");
            if (text == NULL) {
                pb_error("PMI: kvs-get-response for %s carries no value", key);
                return PB_ERR_PROTOCOL;
            }
        }
    } else {
        pb_boot_pmi_msg_init(&query, "get");
        pb_boot_pmi_msg_add(&query, "kvsname", pmi->kvsname);
        pb_boot_pmi_msg_add(&query, "key", key);
        status = pmi_call(pmi, &query, 1, "get_result", 0, &reply);
        if (status != PB_OK)
            return status;
        /* Hydra answers a missing key with rc=-1 msg=key_<k>_not_found */
        found = pb_boot_pmi_msg_get(&reply, "found");
        if (pmi_reply_ok(&reply) && (found == NULL || strcmp(found, "FALSE") != 0)) {
            text = pb_boot_pmi_msg_get(&reply, "value");
            if (text == NULL) {
                pb_error("PMI: get_result for %s carries no value", key);
                return PB_ERR_PROTOCOL;
            }
        }
    }
    if (text == NULL) {
        *found_p = 0;
        if (len > 0)
            value[0] = '\0';
        return PB_OK;
    }
    if (strlen(text) >= len) {
        pb_error("PMI: value of %s (%zu bytes) does not fit in %zu bytes", key, strlen(text), len);
        return PB_ERR_INVALID_PARAM;
    }
    memcpy(value, text, strlen(text) + 1);
    *found_p = 1;
    return PB_OK;
}

/* ---- name service -------------------------------------------------------------- */

/* The three name-service requests, by wire form: the PMI-1 command and its
 * answer, the PMI-2 command (answered by "<command>-response"). */
typedef struct {
    const char *v1, *v1_reply, *v2, *v2_reply;
} pmi_name_op_t;

static const pmi_name_op_t pmi_name_publish = {"publish_name", "publish_result", "name-publish",
                                               "name-publish-response"};
static const pmi_name_op_t pmi_name_unpublish = {"unpublish_name", "unpublish_result",
                                                 "name-unpublish", "name-unpublish-response"};
static const pmi_name_op_t pmi_name_lookup = {"lookup_name", "lookup_result", "name-lookup",
                                              "name-lookup-response"};

/* Are @service (and @port, if not NULL) fit for the name service? */
static int pmi_name_valid(const char *service, const char *port)
{
    return service != NULL && *service != '\0' && strlen(service) < PB_BOOT_PMI_VALUE_MAX &&
           (port == NULL || strlen(port) < PB_BOOT_PMI_VALUE_MAX);
}

/* Send @op for @service (with @port, if not NULL) and receive the answer
 * into @reply; *@refused_p = whether the process manager said no (rc not
 * 0, or PMI-2 found=FALSE).  @return PB_OK; PB_ERR_UNSUPPORTED for a
 * singleton or a process manager that answers with another command (it
 * has no name service); PB_ERR_INVALID_PARAM for a service name or port
 * too long for a message; PB_ERR_IO; PB_ERR_PROTOCOL. */
static pb_status_t pmi_name_call(pb_boot_pmi_t *pmi, const pmi_name_op_t *op, const char *service,
                                 const char *port, pb_boot_pmi_msg_t *reply, int *refused_p)
{
    pb_boot_pmi_msg_t query;
    const char *found;
    pb_status_t status;

    if (pmi->version == 0)
        return PB_ERR_UNSUPPORTED;
    if (!pmi_name_valid(service, port))
        return PB_ERR_INVALID_PARAM;
    pb_boot_pmi_msg_init(&query, pmi->version == 2 ? op->v2 : op->v1);
    pb_boot_pmi_msg_add(&query, pmi->version == 2 ? "name" : "service", service);
    if (port != NULL)
        pb_boot_pmi_msg_add(&query, "port", port);
    status = pmi_send(pmi, &query, pmi->version);
    if (status == PB_OK)
        status = pmi_recv(pmi, reply, pmi->version);
    if (status != PB_OK)
        return status;
    if (strcmp(pb_boot_pmi_msg_cmd(reply), pmi->version == 2 ? op->v2_reply : op->v1_reply) != 0)
        return PB_ERR_UNSUPPORTED;
    found = pb_boot_pmi_msg_get(reply, "found");
    *refused_p = !pmi_reply_ok(reply) || (found != NULL && strcmp(found, "FALSE") == 0);
    return PB_OK;
}

pb_status_t pb_boot_pmi_name_publish(pb_boot_pmi_t *pmi, const char *service, const char *port)
{
    pb_boot_pmi_msg_t reply;
    int refused = 0;
    pb_status_t status;

    if (pmi->pmix != NULL)
        return pmi_name_valid(service, port) ? pb_boot_pmix_name_publish(pmi->pmix, service, port)
                                             : PB_ERR_INVALID_PARAM;
    status = pmi_name_call(pmi, &pmi_name_publish, service, port, &reply, &refused);

    if (status == PB_OK && refused)
        status = PB_ERR_IN_USE;
    return status;
}

pb_status_t pb_boot_pmi_name_unpublish(pb_boot_pmi_t *pmi, const char *service)
{
    pb_boot_pmi_msg_t reply;
    int refused = 0;
    pb_status_t status;

    if (pmi->pmix != NULL)
        return pmi_name_valid(service, NULL) ? pb_boot_pmix_name_unpublish(pmi->pmix, service)
                                             : PB_ERR_INVALID_PARAM;
    status = pmi_name_call(pmi, &pmi_name_unpublish, service, NULL, &reply, &refused);

    if (status == PB_OK && refused)
        status = PB_ERR_NOT_PUBLISHED;
    return status;
}

pb_status_t pb_boot_pmi_name_lookup(pb_boot_pmi_t *pmi, const char *service, char *port, size_t len)
{
    pb_boot_pmi_msg_t reply;
    int refused = 0;
    const char *text;
    pb_status_t status;

    if (pmi->pmix != NULL)
        return pmi_name_valid(service, NULL)
                   ? pb_boot_pmix_name_lookup(pmi->pmix, service, port, len)
                   : PB_ERR_INVALID_PARAM;
    status = pmi_name_call(pmi, &pmi_name_lookup, service, NULL, &reply, &refused);

    if (status != PB_OK)
        return status;
    if (refused)
        return PB_ERR_NOT_PUBLISHED;
    text = pb_boot_pmi_msg_get(&reply, "port"); /* in both versions (Hydra's too) */
    if (text == NULL) {
        pb_error("PMI: the answer to the lookup of service %s carries no port", service);
        return PB_ERR_PROTOCOL;
    }
    if (strlen(text) >= len)
        return PB_ERR_INVALID_PARAM;
    memcpy(port, text, strlen(text) + 1);
    return PB_OK;
}

/* ---- spawn ----------------------------------------------------------------------- */

/* Append "@key@index=@value@end" to @w (PMI-1 block lines: no escapes, so
 * a value must hold no newline; PMI-2: ';' doubled). */
static void pmi_spawn_field(pmi_writer_t *w, int v2, const char *key, int index, const char *value)
{
    char number[16] = "";

    if (index >= 0)
        snprintf(number, sizeof(number), "%d", index);
    pmi_writer_puts(w, key);
    pmi_writer_puts(w, number);
    pmi_writer_putc(w, '=');
    for (const char *v = value; *v != '\0'; v++) {
        if (*v == '\n' && !v2)
            w->overflow = 1; /* (cannot be written) */
        if (*v == ';' && v2)
            pmi_writer_putc(w, ';');
        pmi_writer_putc(w, *v);
    }
    pmi_writer_putc(w, v2 ? ';' : '\n');
}

static void pmi_spawn_int(pmi_writer_t *w, int v2, const char *key, int value)
{
    char text[16];

    snprintf(text, sizeof(text), "%d", value);
    pmi_spawn_field(w, v2, key, -1, text);
}

static int pmi_argc(const postbox_job_spawn_cmd_t *cmd)
{
    int n = 0;

    while (cmd->argv != NULL && cmd->argv[n] != NULL)
        n++;
    return n;
}

/* The preput keys and values, PMI-1 or PMI-2 names. */
static void pmi_spawn_preput(pmi_writer_t *w, int v2, int npreput, const char *const *keys,
                             const char *const *values)
{
    pmi_spawn_int(w, v2, v2 ? "preputcount" : "preput_num", npreput);
    for (int i = 0; i < npreput; i++) {
        pmi_spawn_field(w, v2, v2 ? "ppkey" : "preput_key_", i, keys[i]);
        pmi_spawn_field(w, v2, v2 ? "ppval" : "preput_val_", i, values[i]);
    }
}

/* One command's fields (after PMI-1's counts, PMI-2's subcmd). */
static void pmi_spawn_command(pmi_writer_t *w, int v2, const postbox_job_spawn_cmd_t *cmd)
{
    int argc = pmi_argc(cmd);

    pmi_spawn_int(w, v2, v2 ? "argc" : "argcnt", argc);
    for (int a = 0; a < argc; a++)
        pmi_spawn_field(w, v2, v2 ? "argv" : "arg", v2 ? a : a + 1, cmd->argv[a]);
}

static void pmi_spawn_info(pmi_writer_t *w, int v2, const postbox_job_spawn_cmd_t *cmd)
{
    pmi_spawn_int(w, v2, v2 ? "infokeycount" : "info_num", cmd->ninfo);
    for (int k = 0; k < cmd->ninfo; k++) {
        pmi_spawn_field(w, v2, v2 ? "infokey" : "info_key_", k, cmd->info_keys[k]);
        pmi_spawn_field(w, v2, v2 ? "infoval" : "info_val_", k, cmd->info_values[k]);
    }
}

/* Write the PMI-1 block of command @i into @buf (@cap bytes).  @return its
 * length, or 0 when it does not fit or cannot be written. */
static size_t pmi_spawn_block_v1(char *buf, size_t cap, int count, int i,
                                 const postbox_job_spawn_cmd_t *cmd, int npreput,
                                 const char *const *keys, const char *const *values)
{
    pmi_writer_t w = {buf, cap - 1, 0, 0};

    pmi_writer_puts(&w, "mcmd=spawn\n");
    pmi_spawn_int(&w, 0, "nprocs", cmd->nprocs);
    pmi_spawn_field(&w, 0, "execname", -1, cmd->command);
    pmi_spawn_int(&w, 0, "totspawns", count);
    pmi_spawn_int(&w, 0, "spawnssofar", i + 1);
    pmi_spawn_command(&w, 0, cmd);
    pmi_spawn_preput(&w, 0, npreput, keys, values);
    pmi_spawn_info(&w, 0, cmd);
    pmi_writer_puts(&w, "endcmd\n");
    return w.overflow ? 0 : w.pos;
}

/* Write the PMI-2 spawn message (length field included) into @buf (@cap
 * bytes).  @return its length, or 0 when it does not fit. */
static size_t pmi_spawn_message_v2(char *buf, size_t cap, int count,
                                   const postbox_job_spawn_cmd_t *cmds, int npreput,
                                   const char *const *keys, const char *const *values)
{
    pmi_writer_t w = {buf, cap - 1, PMI_V2_HEADER, 0};
    char header[PMI_V2_HEADER + 1];

    if (cap <= PMI_V2_HEADER + PB_BOOT_PMI_MSG_MAX)
        w.cap = cap - 1;
    else
        w.cap = PMI_V2_HEADER + PB_BOOT_PMI_MSG_MAX;
    pmi_writer_puts(&w, "cmd=spawn;");
    pmi_spawn_int(&w, 1, "ncmds", count);
    pmi_spawn_preput(&w, 1, npreput, keys, values);
    for (int i = 0; i < count; i++) {
        pmi_spawn_field(&w, 1, "subcmd", -1, cmds[i].command);
        pmi_spawn_int(&w, 1, "maxprocs", cmds[i].nprocs);
        pmi_spawn_command(&w, 1, &cmds[i]);
        pmi_spawn_info(&w, 1, &cmds[i]);
    }
    if (w.overflow)
        return 0;
    snprintf(header, sizeof(header), "%6u", (unsigned)(w.pos - PMI_V2_HEADER));
    memcpy(buf, header, PMI_V2_HEADER);
    return w.pos;
}

pb_status_t pb_boot_pmi_spawn(pb_boot_pmi_t *pmi, int count, const postbox_job_spawn_cmd_t *cmds,
                              int npreput, const char *const *preput_keys,
                              const char *const *preput_values, char *why, size_t why_len)
{
    /* a PMI-1 block may be longer than any other message */
    size_t cap = 65536, len;
    char *buf = malloc(cap);
    pb_boot_pmi_msg_t reply;
    const char *expect = pmi->version == 2 ? "spawn-response" : "spawn_result", *msg;
    pb_status_t status = PB_OK;

    if (pmi->version == 0) {
        free(buf);
        return PB_ERR_UNSUPPORTED;
    }
    if (buf == NULL)
        return PB_ERR_NO_MEMORY;
    for (int i = 0; i < (pmi->version == 2 ? 1 : count) && status == PB_OK; i++) {
        len = pmi->version == 2
                  ? pmi_spawn_message_v2(buf, cap, count, cmds, npreput, preput_keys, preput_values)
                  : pmi_spawn_block_v1(buf, cap, count, i, &cmds[i], npreput, preput_keys,
                                       preput_values);
        status = len == 0 ? PB_ERR_INVALID_PARAM : pmi_send_all(pmi, buf, len);
    }
    free(buf);
    if (status == PB_OK)
        status = pmi_recv(pmi, &reply, pmi->version);
    if (status != PB_OK)
        return status;
    if (strcmp(pb_boot_pmi_msg_cmd(&reply), expect) != 0)
        return PB_ERR_UNSUPPORTED;
    if (pmi_reply_ok(&reply))
        return PB_OK;
    msg = pb_boot_pmi_msg_get(&reply, pmi->version == 2 ? "errmsg" : "msg");
    snprintf(why, why_len, "%s", msg != NULL ? msg : "no reason given");
    for (char *p = why; *p != '\0'; p++) {
        if (*p == '_')
            *p = ' ';
    }
    return PB_ERR_NO_RESOURCE;
}

pb_status_t pb_boot_pmi_fence(pb_boot_pmi_t *pmi)
{
    pb_boot_pmi_msg_t query, reply;

    if (pmi->pmix != NULL)
        return pb_boot_pmix_fence(pmi->pmix);
    if (pmi->version == 0)
        return PB_OK;
    if (pmi->version == 2) {
        pb_boot_pmi_msg_init(&query, "kvs-fence");
        return pmi_call(pmi, &query, 2, "kvs-fence-response", 1, &reply);
    }
    pb_boot_pmi_msg_init(&query, "barrier_in");
    return pmi_call(pmi, &query, 1, "barrier_out", 1, &reply);
}

void pb_boot_pmi_abort(pb_boot_pmi_t *pmi, int exit_code, const char *message)
{
    pb_boot_pmi_msg_t query;
    char code[16];

    if (message == NULL)
        message = "";
    if (pmi != NULL && pmi->pmix != NULL)
        pb_boot_pmix_abort(pmi->pmix, exit_code, message);
    if (pmi != NULL && pmi->version != 0) {
        snprintf(code, sizeof(code), "%d", exit_code);
        if (pmi->version == 2) {
            pb_boot_pmi_msg_init(&query, "abort");
            pb_boot_pmi_msg_add(&query, "isworld", "TRUE");
            pb_boot_pmi_msg_add(&query, "msg", message);
            pmi_send(pmi, &query, 2);
        } else {
            pb_boot_pmi_msg_init(&query, "abort");
            pb_boot_pmi_msg_add(&query, "exitcode", code);
            pmi_send(pmi, &query, 1);
        }
        /* no reply comes: the process manager kills the job */
    }
    _exit(exit_code);
}

pb_status_t pb_boot_pmi_finalize(pb_boot_pmi_t *pmi)
{
    pb_boot_pmi_msg_t query, reply;
    pb_status_t status = PB_OK;

    if (pmi == NULL)
        return PB_OK;
    if (pmi->pmix != NULL) {
        status = pb_boot_pmix_finalize(pmi->pmix);
    } else if (pmi->version == 2) {
        pb_boot_pmi_msg_init(&query, "finalize");
        status = pmi_call(pmi, &query, 2, "finalize-response", 1, &reply);
    } else if (pmi->version == 1) {
        pb_boot_pmi_msg_init(&query, "finalize");
        status = pmi_call(pmi, &query, 1, "finalize_ack", 1, &reply);
    }
    if (pmi->fd >= 0)
        close(pmi->fd);
    explicit_bzero(pmi->token, sizeof(pmi->token));
    while (pmi->local_kvs != NULL) {
        pmi_kv_t *kv = pmi->local_kvs;

        pmi->local_kvs = kv->next;
        free(kv->key);
        free(kv->value);
        free(kv);
    }
    free(pmi);
    return status;
}
