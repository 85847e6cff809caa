/*
 * The PMI-1 and PMI-2 wire protocols: a message's parsing and formatting
 * (pure, unit-tested by tests/boot/test_pmi_wire.c), its framing on the
 * process manager's socket (a v1 line, a v2 length field and body), a
 * request and the check of its reply, and the spawn requests (a PMI-1
 * mcmd block, a PMI-2 message), which no pb_boot_pmi_msg_t can hold.
 */
#include "boot/pmi_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"

/* ---- messages ------------------------------------------------------------- */

static int pmi_key_char(int c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '/' || c == '-';
}

int pb_boot_pmi_key_valid(const char *key)
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

/* Copy the key at @src[*@i_p] (@len bytes in all) to *@out_p, NUL-ended,
 * and step both past it and past the '=' that must follow it.  @return
 * the key; NULL when there is none or no '=' follows. */
static const char *pmi_parse_key(const char *src, size_t len, size_t *i_p, char **out_p)
{
    char *key = *out_p, *out = key;
    size_t i = *i_p;

    while (i < len && pmi_key_char(src[i]))
        *out++ = src[i++];
    if (out == key || i == len || src[i] != '=')
        return NULL;
    *out++ = '\0';
    *i_p = i + 1;
    *out_p = out;
    return key;
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
        const char *key, *value;

        while (i < len && line[i] == ' ')
            i++;
        if (i == len)
            break;
        key = pmi_parse_key(line, len, &i, &out);
        if (key == NULL)
            return PB_ERR_PROTOCOL;
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
        if (pb_boot_pmi_msg_add(msg, key, value) != PB_OK)
            return PB_ERR_PROTOCOL; /* too many pairs */
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
        const char *key = pmi_parse_key(body, len, &i, &out), *value;

        if (key == NULL)
            return PB_ERR_PROTOCOL;
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
        if (pb_boot_pmi_msg_add(msg, key, value) != PB_OK)
            return PB_ERR_PROTOCOL; /* too many pairs */
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

/* How a value is written: on a PMI-1 line (' ', '\\' and newline behind a
 * '\\'), in a PMI-1 spawn block (as it is: a newline cannot be written),
 * in a PMI-2 message (';' doubled). */
typedef enum {
    PMI_VALUE_V1,
    PMI_VALUE_V1_BLOCK,
    PMI_VALUE_V2
} pmi_value_form_t;

/* Append @value in @form; one that @form cannot hold overflows @w. */
static void pmi_writer_value(pmi_writer_t *w, const char *value, pmi_value_form_t form)
{
    for (const char *v = value; *v != '\0'; v++) {
        if (form == PMI_VALUE_V1 && (*v == ' ' || *v == '\\' || *v == '\n'))
            pmi_writer_putc(w, '\\');
        else if (form == PMI_VALUE_V1_BLOCK && *v == '\n')
            w->overflow = 1; /* (cannot be written) */
        else if (form == PMI_VALUE_V2 && *v == ';')
            pmi_writer_putc(w, ';');
        pmi_writer_putc(w, *v);
    }
}

/* A writer of a PMI-2 message into @buf (@cap bytes, more than
 * PMI_V2_HEADER), its length field left to pmi_writer_v2_end. */
static pmi_writer_t pmi_writer_v2_start(char *buf, size_t cap)
{
    pmi_writer_t w = {buf, PMI_V2_HEADER + PB_BOOT_PMI_MSG_MAX, PMI_V2_HEADER, 0};

    if (cap - 1 < w.cap)
        w.cap = cap - 1;
    return w;
}

/* Write the length field of the PMI-2 message in @w (not overflowed). */
static void pmi_writer_v2_end(pmi_writer_t *w)
{
    char header[PMI_V2_HEADER + 1];

    snprintf(header, sizeof(header), "%6u", (unsigned)(w->pos - PMI_V2_HEADER));
    memcpy(w->buf, header, PMI_V2_HEADER);
}

static pb_status_t pmi_msg_check_keys(const pb_boot_pmi_msg_t *msg)
{
    if (msg->count == 0 || msg->pairs[0].value == NULL || msg->pairs[0].value[0] == '\0')
        return PB_ERR_INVALID_PARAM;
    for (int i = 0; i < msg->count; i++) {
        if (!pb_boot_pmi_key_valid(msg->pairs[i].key) || msg->pairs[i].value == NULL)
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
        pmi_writer_value(&w, msg->pairs[i].value, PMI_VALUE_V1);
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
    pmi_writer_t w;
    pb_status_t status = pmi_msg_check_keys(msg);

    if (status != PB_OK)
        return status;
    if (cap < PMI_V2_HEADER + 1)
        return PB_ERR_NO_RESOURCE;
    w = pmi_writer_v2_start(buf, cap);
    for (int i = 0; i < msg->count; i++) {
        pmi_writer_puts(&w, msg->pairs[i].key);
        pmi_writer_putc(&w, '=');
        pmi_writer_value(&w, msg->pairs[i].value, PMI_VALUE_V2);
        pmi_writer_putc(&w, ';');
    }
    if (w.overflow)
        return PB_ERR_NO_RESOURCE;
    pmi_writer_v2_end(&w);
    buf[w.pos] = '\0';
    *len_p = w.pos;
    return PB_OK;
}

/* ---- wire I/O -------------------------------------------------------------- */

pb_status_t pb_boot_pmi_wire_send_all(pb_boot_pmi_wire_t *wire, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t sent = send(wire->fd, buf, len, MSG_NOSIGNAL);

        if (sent < 0 && errno == ENOTSOCK)
            sent = write(wire->fd, buf, len);
        if (sent < 0) {
            if (errno == EINTR)
                continue;
            pb_error("PMI: write to the process manager (fd %d) failed: %m", wire->fd);
            return PB_ERR_IO;
        }
        buf += sent;
        len -= (size_t)sent;
    }
    return PB_OK;
}

/* Read more bytes into rbuf (compacting first). */
static pb_status_t pmi_read_more(pb_boot_pmi_wire_t *wire)
{
    ssize_t got;

    if (wire->rstart > 0) {
        memmove(wire->rbuf, wire->rbuf + wire->rstart, wire->rend - wire->rstart);
        wire->rend -= wire->rstart;
        wire->rstart = 0;
    }
    do {
        got = read(wire->fd, wire->rbuf + wire->rend, sizeof(wire->rbuf) - wire->rend);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        pb_error("PMI: read from the process manager (fd %d) failed: %m", wire->fd);
        return PB_ERR_IO;
    }
    if (got == 0) {
        pb_error("PMI: the process manager closed the connection (fd %d)", wire->fd);
        return PB_ERR_IO;
    }
    wire->rend += (size_t)got;
    return PB_OK;
}

pb_status_t pb_boot_pmi_wire_recv_v1(pb_boot_pmi_wire_t *wire, pb_boot_pmi_msg_t *msg)
{
    for (;;) {
        char *start = wire->rbuf + wire->rstart;
        size_t avail = wire->rend - wire->rstart;
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
            wire->rstart += len;
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
        status = pmi_read_more(wire);
        if (status != PB_OK)
            return status;
    }
}

static pb_status_t pmi_recv_v2(pb_boot_pmi_wire_t *wire, pb_boot_pmi_msg_t *msg)
{
    size_t body = 0, digits = 0;
    pb_status_t status;
    const char *start;

    while (wire->rend - wire->rstart < PMI_V2_HEADER) {
        status = pmi_read_more(wire);
        if (status != PB_OK)
            return status;
    }
    start = wire->rbuf + wire->rstart;
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
    while (wire->rend - wire->rstart < PMI_V2_HEADER + body) {
        status = pmi_read_more(wire);
        if (status != PB_OK)
            return status;
    }
    start = wire->rbuf + wire->rstart;
    status = pb_boot_pmi_parse_v2(start + PMI_V2_HEADER, body, msg);
    wire->rstart += PMI_V2_HEADER + body;
    if (status != PB_OK)
        pb_error("PMI: malformed reply from the process manager: '%.*s'",
                 (int)(body < 200 ? body : 200), start + PMI_V2_HEADER);
    return status;
}

pb_status_t pb_boot_pmi_wire_send(pb_boot_pmi_wire_t *wire, const pb_boot_pmi_msg_t *msg,
                                  int version)
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
    return pb_boot_pmi_wire_send_all(wire, buf, len);
}

pb_status_t pb_boot_pmi_wire_recv(pb_boot_pmi_wire_t *wire, pb_boot_pmi_msg_t *msg, int version)
{
    return version == 2 ? pmi_recv_v2(wire, msg) : pb_boot_pmi_wire_recv_v1(wire, msg);
}

int pb_boot_pmi_reply_ok(const pb_boot_pmi_msg_t *reply)
{
    const char *rc = pb_boot_pmi_msg_get(reply, "rc");

    return rc == NULL || strcmp(rc, "0") == 0;
}

pb_status_t pb_boot_pmi_reply_check(const pb_boot_pmi_msg_t *query, const pb_boot_pmi_msg_t *reply,
                                    const char *expect, int check_rc)
{
    if (strcmp(pb_boot_pmi_msg_cmd(reply), expect) != 0) {
        pb_error("PMI: the process manager answered '%s' with '%s', expected '%s'",
                 pb_boot_pmi_msg_cmd(query), pb_boot_pmi_msg_cmd(reply), expect);
        return PB_ERR_PROTOCOL;
    }
    if (check_rc && !pb_boot_pmi_reply_ok(reply)) {
        const char *why = pb_boot_pmi_msg_get(reply, "msg");

        if (why == NULL)
            why = pb_boot_pmi_msg_get(reply, "errmsg");
        pb_error("PMI: the process manager refused '%s': rc=%s%s%s", pb_boot_pmi_msg_cmd(query),
                 pb_boot_pmi_msg_get(reply, "rc"), why ? " " : "", why ? why : "");
        return PB_ERR_PROTOCOL;
    }
    return PB_OK;
}

pb_status_t pb_boot_pmi_wire_call(pb_boot_pmi_wire_t *wire, const pb_boot_pmi_msg_t *query,
                                  int version, const char *expect, int check_rc,
                                  pb_boot_pmi_msg_t *reply)
{
    pb_status_t status = pb_boot_pmi_wire_send(wire, query, version);

    if (status != PB_OK)
        return status;
    status = pb_boot_pmi_wire_recv(wire, reply, version);
    if (status != PB_OK)
        return status;
    return pb_boot_pmi_reply_check(query, reply, expect, check_rc);
}

pb_status_t pb_boot_pmi_reply_int(const pb_boot_pmi_msg_t *reply, const char *key, int *value_p)
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

pb_status_t pb_boot_pmi_reply_string(const pb_boot_pmi_msg_t *reply, const char *key, char *out,
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
    pmi_writer_value(w, value, v2 ? PMI_VALUE_V2 : PMI_VALUE_V1_BLOCK);
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

size_t pb_boot_pmi_format_spawn_v1(char *buf, size_t cap, int count, int i,
                                   const postbox_job_spawn_cmd_t *cmd, int npreput,
                                   const char *const *keys, const char *const *values)
{
    pmi_writer_t w = {buf, cap - 1, 0, 0};

    if (cap == 0)
        return 0;
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

size_t pb_boot_pmi_format_spawn_v2(char *buf, size_t cap, int count,
                                   const postbox_job_spawn_cmd_t *cmds, int npreput,
                                   const char *const *keys, const char *const *values)
{
    pmi_writer_t w;

    if (cap < PMI_V2_HEADER + 1)
        return 0;
    w = pmi_writer_v2_start(buf, cap);
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
    pmi_writer_v2_end(&w);
    return w.pos;
}
