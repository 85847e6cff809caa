/*
 * Joining the process manager over PMI_FD (an inherited socket) or
 * PMI_PORT (a TCP address, with the one-time token's proof when the server
 * asks, and connecting again when the server closed the connection before
 * it accepted this rank), and the init handshake of each wire protocol.
 */
#include "boot/pmi_impl.h"

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
#include "util/log.h"
#include "util/random.h"
#include "util/siphash.h"
#include "util/time.h"

/* the nonces of the token proof (bytes; each travels as twice as many hex
 * digits) */
#define PMI_NONCE_LEN 16
/* how long a PMI_PORT client keeps trying when its connection is closed
 * before the server accepted it */
#define PMI_PORT_RETRY_MS 15000

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
    return pb_boot_pmi_wire_send(&pmi->wire, &query, version);
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

/* pb_boot_pmi_wire_call for the message that names this rank (@id) to a PMI_PORT
 * server: a server that asks for the token proof first gets it. */
static pb_status_t pmi_call_proven(pb_boot_pmi_t *pmi, const pb_boot_pmi_msg_t *query, int version,
                                   const char *expect, const char *id, pb_boot_pmi_msg_t *reply)
{
    pb_status_t status = pb_boot_pmi_wire_send(&pmi->wire, query, version);

    if (status == PB_OK)
        status = pb_boot_pmi_wire_recv(&pmi->wire, reply, version);
    if (status == PB_OK && strcmp(pb_boot_pmi_msg_cmd(reply), "auth-challenge") == 0) {
        status = pmi_answer_challenge(pmi, reply, version, id);
        if (status == PB_OK)
            status = pb_boot_pmi_wire_recv(&pmi->wire, reply, version);
    }
    if (status != PB_OK)
        return status;
    status = pb_boot_pmi_reply_check(query, reply, expect, 1);
    pmi->proven = status == PB_OK;
    return status;
}

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

pb_status_t pb_boot_pmi_join_take_token(pb_boot_pmi_t *pmi)
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

        status = pb_boot_pmi_wire_recv_v1(&pmi->wire, &reply);
        if (status != PB_OK)
            return status;
        if (strcmp(pb_boot_pmi_msg_cmd(&reply), "set") != 0 || reply.count != 2) {
            pb_error("PMI: expected 'cmd=set' after initack, got '%s'",
                     pb_boot_pmi_msg_cmd(&reply));
            return PB_ERR_PROTOCOL;
        }
        key = reply.pairs[1].key;
        if (strcmp(key, "rank") == 0) {
            status = pb_boot_pmi_reply_int(&reply, "rank", &pmi->rank);
            have_rank = 1;
        } else if (strcmp(key, "size") == 0) {
            status = pb_boot_pmi_reply_int(&reply, "size", &pmi->size);
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
    status = pb_boot_pmi_reply_int(&reply, "rank", &pmi->rank);
    if (status == PB_OK)
        status = pb_boot_pmi_reply_int(&reply, "size", &pmi->size);
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
    status = pb_boot_pmi_wire_call(&pmi->wire, &query, 1, "response_to_init", 1, &reply);
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
        status = pb_boot_pmi_wire_call(&pmi->wire, &query, 1, "universe_size", 1, &reply);
        if (status == PB_OK)
            status = pb_boot_pmi_reply_int(&reply, "size", &pmi->size);
        if (status != PB_OK)
            return status;
    }
    pb_boot_pmi_msg_init(&query, "get_appnum");
    status = pb_boot_pmi_wire_call(&pmi->wire, &query, 1, "appnum", 1, &reply);
    if (status == PB_OK)
        status = pb_boot_pmi_reply_int(&reply, "appnum", &pmi->appnum);
    if (status != PB_OK)
        return status;
    pb_boot_pmi_msg_init(&query, "get_my_kvsname");
    status = pb_boot_pmi_wire_call(&pmi->wire, &query, 1, "my_kvsname", 1, &reply);
    if (status != PB_OK)
        return status;
    return pb_boot_pmi_reply_string(&reply, "kvsname", pmi->kvsname, sizeof(pmi->kvsname));
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
    status = pb_boot_pmi_wire_call(&pmi->wire, &query, 1, "response_to_init", 1, &reply);
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
        status = pb_boot_pmi_wire_call(&pmi->wire, &query, 2, "fullinit-response", 1, &reply);
    if (status == PB_OK)
        status = pb_boot_pmi_reply_int(&reply, "rank", &pmi->rank);
    if (status == PB_OK)
        status = pb_boot_pmi_reply_int(&reply, "size", &pmi->size);
    if (status != PB_OK)
        return status;
    if (pb_boot_pmi_msg_get(&reply, "appnum") != NULL) {
        status = pb_boot_pmi_reply_int(&reply, "appnum", &pmi->appnum);
        if (status != PB_OK)
            return status;
    }
    pb_boot_pmi_msg_init(&query, "job-getid");
    status = pb_boot_pmi_wire_call(&pmi->wire, &query, 2, "job-getid-response", 1, &reply);
    if (status != PB_OK)
        return status;
    return pb_boot_pmi_reply_string(&reply, "jobid", pmi->kvsname, sizeof(pmi->kvsname));
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
        pmi->wire.rstart = pmi->wire.rend = 0;
        status = pmi_connect_port(port, &pmi->wire.fd);
        if (status == PB_OK) {
            status = pmi->version == 2 ? pmi_v2_init(pmi) : pmi_v1_init(pmi);
            if (status == PB_OK)
                return PB_OK;
            close(pmi->wire.fd);
            pmi->wire.fd = -1;
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

pb_status_t pb_boot_pmi_join(pb_boot_pmi_t *pmi, int version)
{
    const char *fd_text = getenv("PMI_FD");
    pb_status_t status;

    pmi->version = version;
    if (fd_text != NULL) {
        status = pmi_env_int("PMI_FD", 0, &pmi->wire.fd);
        if (status != PB_OK)
            return status;
        if (fcntl(pmi->wire.fd, F_SETFD, FD_CLOEXEC) < 0) {
            pb_error("PMI: PMI_FD=%d is not an open descriptor: %m", pmi->wire.fd);
            pmi->wire.fd = -1;
            return PB_ERR_INVALID_PARAM;
        }
        status = version == 2 ? pmi_v2_init(pmi) : pmi_v1_init(pmi);
        if (status != PB_OK)
            goto err_close;
    } else {
        /* (pmi_port_init closes what it connected when it fails) */
        status = pmi_port_init(pmi, getenv("PMI_PORT"));
        if (status != PB_OK)
            return status;
    }
    explicit_bzero(pmi->token, sizeof(pmi->token));
    pmi->has_token = 0;
    if (pmi->size < 1 || pmi->rank < 0 || pmi->rank >= pmi->size) {
        pb_error("PMI: the process manager gave rank %d of size %d", pmi->rank, pmi->size);
        status = PB_ERR_PROTOCOL;
        goto err_close;
    }
    pb_debug("PMI-%d: rank %d of %d, kvs %s", version, pmi->rank, pmi->size, pmi->kvsname);
    return PB_OK;

err_close:
    close(pmi->wire.fd);
    pmi->wire.fd = -1;
    return status;
}
