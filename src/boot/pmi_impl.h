/*
 * What the files of the PMI client (boot/pmi.h) share; private to them.
 *
 *   pmi_wire.c  the PMI-1 and PMI-2 wire protocols: messages, their framing
 *               on the process manager's socket, a request and its reply,
 *               the spawn requests
 *   pmi_join.c  joining the process manager over PMI_FD or PMI_PORT: the
 *               connection, the token proof and the init handshakes
 *   pmi.c       the flavour (PMI-1, PMI-2, PMIx, singleton) and the API of
 *               boot/pmi.h over each
 */
#ifndef PB_BOOT_PMI_IMPL_H
#define PB_BOOT_PMI_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "boot/pmi.h"
#include "boot/pmix.h"
#include "postbox/job.h"
#include "util/status.h"

/* the v2 length field: "%6u" */
#define PMI_V2_HEADER 6
/* the one-time token of a rank started by `postbox run --hosts` (bytes;
 * it travels as twice as many hex digits) */
#define PMI_TOKEN_LEN 16

/* The socket to the process manager and the bytes read from it that no
 * message has consumed yet. */
typedef struct {
    int fd;              /* -1: none */
    size_t rstart, rend; /* unread bytes are rbuf[rstart, rend) */
    char rbuf[2 * PB_BOOT_PMI_MSG_MAX + PMI_V2_HEADER];
} pb_boot_pmi_wire_t;

struct pmi_kv; /* a singleton's key-value pair (pmi.c) */

struct pb_boot_pmi {
    pb_boot_pmi_flavour_t flavour;
    pb_boot_pmix_t *pmix;    /* PMIx's client (flavour PB_BOOT_PMI_X) */
    pb_boot_pmi_wire_t wire; /* fd -1 for a singleton and PMIx */
    int version;             /* the wire protocol: 1, 2, or 0 (singleton, PMIx) */
    int rank;
    int size;
    int appnum;
    char kvsname[PB_BOOT_PMI_NAME_MAX];
    uint8_t token[PMI_TOKEN_LEN]; /* POSTBOX_PMI_TOKEN, wiped after init */
    int has_token;
    int proven;               /* PMI_PORT: the server accepted this rank's initack/fullinit */
    struct pmi_kv *local_kvs; /* a singleton's key-value space */
};

/* ---- pmi_wire.c: messages ---------------------------------------------------- */

/* Is @key 1 or more of [A-Za-z0-9_/-]? */
int pb_boot_pmi_key_valid(const char *key);

/* Is @reply's rc absent or 0? */
int pb_boot_pmi_reply_ok(const pb_boot_pmi_msg_t *reply);

/* Check that @reply to @query is the command @expect; with @check_rc, also
 * that its rc is 0.  @return PB_OK; PB_ERR_PROTOCOL (logged). */
pb_status_t pb_boot_pmi_reply_check(const pb_boot_pmi_msg_t *query, const pb_boot_pmi_msg_t *reply,
                                    const char *expect, int check_rc);

/* Parse the integer @key of @reply (-1 to 2^30) into *@value_p.
 * @return PB_OK; PB_ERR_PROTOCOL (logged) if it is absent or malformed. */
pb_status_t pb_boot_pmi_reply_int(const pb_boot_pmi_msg_t *reply, const char *key, int *value_p);

/* Copy the string @key of @reply to @out (@len bytes).  @return PB_OK;
 * PB_ERR_PROTOCOL (logged) if it is absent or does not fit. */
pb_status_t pb_boot_pmi_reply_string(const pb_boot_pmi_msg_t *reply, const char *key, char *out,
                                     size_t len);

/* Write the PMI-1 mcmd=spawn block of command @i (@cmd) of @count, with
 * the @npreput @keys = @values, into @buf (@cap bytes).  @return its
 * length, or 0 when it does not fit or cannot be written (a newline in a
 * value). */
size_t pb_boot_pmi_format_spawn_v1(char *buf, size_t cap, int count, int i,
                                   const postbox_job_spawn_cmd_t *cmd, int npreput,
                                   const char *const *keys, const char *const *values);

/* Write the PMI-2 spawn message of the @count @cmds, with the @npreput
 * @keys = @values, length field included, into @buf (@cap bytes).
 * @return its length, or 0 when it does not fit. */
size_t pb_boot_pmi_format_spawn_v2(char *buf, size_t cap, int count,
                                   const postbox_job_spawn_cmd_t *cmds, int npreput,
                                   const char *const *keys, const char *const *values);

/* ---- pmi_wire.c: the socket ---------------------------------------------------- */

/* Write the @len bytes of @buf to @wire's socket (or pipe).
 * @return PB_OK; PB_ERR_IO (logged). */
pb_status_t pb_boot_pmi_wire_send_all(pb_boot_pmi_wire_t *wire, const char *buf, size_t len);

/* Send @msg in wire form @version (1 or 2).  @return PB_OK;
 * PB_ERR_INVALID_PARAM if it cannot be encoded; PB_ERR_IO (logged). */
pb_status_t pb_boot_pmi_wire_send(pb_boot_pmi_wire_t *wire, const pb_boot_pmi_msg_t *msg,
                                  int version);

/* Receive one message in wire form @version (1 or 2) into @msg.
 * @return PB_OK; PB_ERR_IO if the read fails or the peer closed;
 * PB_ERR_PROTOCOL if it is too long or malformed (logged). */
pb_status_t pb_boot_pmi_wire_recv(pb_boot_pmi_wire_t *wire, pb_boot_pmi_msg_t *msg, int version);

/* pb_boot_pmi_wire_recv of a v1 line. */
pb_status_t pb_boot_pmi_wire_recv_v1(pb_boot_pmi_wire_t *wire, pb_boot_pmi_msg_t *msg);

/* Send @query in wire form @version, receive the reply into @reply and
 * check it (pb_boot_pmi_reply_check).  @return as those. */
pb_status_t pb_boot_pmi_wire_call(pb_boot_pmi_wire_t *wire, const pb_boot_pmi_msg_t *query,
                                  int version, const char *expect, int check_rc,
                                  pb_boot_pmi_msg_t *reply);

/* ---- pmi_join.c ------------------------------------------------------------------ */

/* Take POSTBOX_PMI_TOKEN (32 hex digits) out of the environment (wiping
 * it there) into @pmi; its absence is no error (PMI_FD, Hydra).
 * @return PB_OK; PB_ERR_INVALID_PARAM (logged) if it is malformed. */
pb_status_t pb_boot_pmi_join_take_token(pb_boot_pmi_t *pmi);

/* Connect @pmi to the process manager over PMI_FD or PMI_PORT and run the
 * init handshake of wire form @version (pb_boot_pmi_init); the token is
 * wiped after it.  @return as pb_boot_pmi_init; on an error the connection
 * is closed. */
pb_status_t pb_boot_pmi_join(pb_boot_pmi_t *pmi, int version);

#endif
