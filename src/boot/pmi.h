/*
 * A PMI client: the PMI-1 and PMI-2 wire protocols, spoken directly over
 * the socket a launcher hands us (no PMI library is linked).
 *
 *   PMI_FD=<fd>                  an inherited, connected socket (Hydra's
 *                                default, Slurm --mpi=pmi2, `postbox run`)
 *   PMI_PORT=<host>:<port>       a TCP address to connect to, with
 *   PMI_ID=<id>                  the id the PMI-1 `initack` handshake sends
 *   POSTBOX_PMI_TOKEN=<32 hex>   (postbox run --hosts) the rank's one-time
 *                                token: taken out of the environment (and
 *                                wiped) at init, and used to answer the
 *                                server's auth-challenge, never sent
 *
 * Without either the process is a singleton: rank 0 of 1, with a KVS of its
 * own.  The protocol version is POSTBOX_PMI_VERSION (1 or 2); when unset,
 * PMI-2 is chosen if PMI_JOBID is set (Slurm), else PMI-1.
 *
 * Under a PMIx launcher (PMIX_NAMESPACE, PMIX_RANK or PMIX_SERVER_URI*
 * set, and neither PMI_FD nor PMI_PORT) the client is PMIx's
 * (boot/pmix.h).  POSTBOX_PMI=pmi1|pmi2|pmix forces a flavour
 * (pb_boot_pmi_choose).
 *
 * Wire forms (REFERENCE.md F):
 *   v1  "cmd=<name> key=val key=val\n"; '\' escapes the next character
 *   v2  "%6u" length, then "cmd=<name>;key=val;...;"; ';;' is a literal ';'
 * Messages are bounded by PB_BOOT_PMI_MSG_MAX bytes; anything longer or
 * malformed is a PB_ERR_PROTOCOL, never an overflow.
 */
#ifndef PB_BOOT_PMI_H
#define PB_BOOT_PMI_H

#include <stddef.h>

#include "postbox/job.h"
#include "util/status.h"

/* longest wire message (a v1 line with its newline, or a v2 body): the
 * launcher's get_maxes advertises keys of 64 and values of 1024 bytes, and
 * a put or get answer of such a pair, every byte escaped, fits */
#define PB_BOOT_PMI_MSG_MAX 4096
/* most key=value pairs in one message, "cmd" included */
#define PB_BOOT_PMI_MAX_PAIRS 32
/* longest kvsname, key and value we keep (PMI2_MAX_KEYLEN, _VALLEN) */
#define PB_BOOT_PMI_NAME_MAX 256
#define PB_BOOT_PMI_KEY_MAX 64
#define PB_BOOT_PMI_VALUE_MAX 1024

/* ---- messages ------------------------------------------------------------- */

/* One parsed or to-be-written message.  Keys and values point into @text
 * (after parsing, unescaped and NUL-terminated) or to the caller's strings
 * (when building one to send).  pairs[0] is always "cmd" (or "mcmd"). */
typedef struct {
    int count;
    struct {
        const char *key;
        const char *value;
    } pairs[PB_BOOT_PMI_MAX_PAIRS];
    char text[PB_BOOT_PMI_MSG_MAX + 1];
} pb_boot_pmi_msg_t;

/* Start @msg as command @cmd (a string that outlives @msg). */
void pb_boot_pmi_msg_init(pb_boot_pmi_msg_t *msg, const char *cmd);

/* Append @key=@value (strings that outlive @msg).
 * @return PB_OK; PB_ERR_NO_RESOURCE if @msg has PB_BOOT_PMI_MAX_PAIRS. */
pb_status_t pb_boot_pmi_msg_add(pb_boot_pmi_msg_t *msg, const char *key, const char *value);

/* The command name of @msg ("" if none). */
const char *pb_boot_pmi_msg_cmd(const pb_boot_pmi_msg_t *msg);

/* The value of @key in @msg, or NULL if it has none (the first wins). */
const char *pb_boot_pmi_msg_get(const pb_boot_pmi_msg_t *msg, const char *key);

/* Parse the v1 line @line of @len bytes (the trailing newline optional)
 * into @msg.  @return PB_OK; PB_ERR_PROTOCOL if it is too long, does not
 * start with cmd= or mcmd=, has a key outside [A-Za-z0-9_/-], a token
 * without '=', a dangling '\' or too many pairs.  Nothing is logged. */
pb_status_t pb_boot_pmi_parse_v1(const char *line, size_t len, pb_boot_pmi_msg_t *msg);

/* Parse the v2 body @body of @len bytes (without its 6-byte length field).
 * @return PB_OK; PB_ERR_PROTOCOL as pb_boot_pmi_parse_v1.  Nothing is
 * logged. */
pb_status_t pb_boot_pmi_parse_v2(const char *body, size_t len, pb_boot_pmi_msg_t *msg);

/* Write @msg in v1 form, newline included, to @buf of @cap bytes (NUL
 * terminated); store its length in @len_p.  Spaces, '\', '=' and newlines
 * in values are escaped with '\'.  @return PB_OK; PB_ERR_INVALID_PARAM if
 * a key is malformed; PB_ERR_NO_RESOURCE if the line would exceed
 * PB_BOOT_PMI_MSG_MAX or @cap. */
pb_status_t pb_boot_pmi_format_v1(const pb_boot_pmi_msg_t *msg, char *buf, size_t cap,
                                  size_t *len_p);

/* Write @msg in v2 form, 6-byte length field included, to @buf of @cap
 * bytes (NUL terminated); store the total length in @len_p.  ';' in values
 * is doubled.  @return as pb_boot_pmi_format_v1. */
pb_status_t pb_boot_pmi_format_v2(const pb_boot_pmi_msg_t *msg, char *buf, size_t cap,
                                  size_t *len_p);

/* ---- connection ------------------------------------------------------------ */

/* A connection to the process manager, or a singleton.  Fill nothing in by
 * hand: pb_boot_pmi_init does. */
typedef struct pb_boot_pmi pb_boot_pmi_t;

/* How this process speaks to its launcher. */
typedef enum {
    PB_BOOT_PMI_SINGLETON = 0, /* no launcher */
    PB_BOOT_PMI_1 = 1,         /* the PMI-1 wire protocol */
    PB_BOOT_PMI_2 = 2,         /* the PMI-2 wire protocol */
    PB_BOOT_PMI_X = 3          /* PMIx, through libpmix */
} pb_boot_pmi_flavour_t;

/* Choose the flavour from the environment into *@flavour_p: POSTBOX_PMI
 * (pmi1, pmi2, pmix; unset, empty or auto: choose) wins; then PMI_FD or
 * PMI_PORT give PMI-1 or PMI-2 (POSTBOX_PMI_VERSION, else PMI-2 when
 * PMI_JOBID is set); then PMIX_NAMESPACE, PMIX_RANK or a PMIX_SERVER_URI*
 * variable give PMIx; else a singleton.
 * @return PB_OK; PB_ERR_INVALID_PARAM (logged) for a bad POSTBOX_PMI or
 * POSTBOX_PMI_VERSION, or a POSTBOX_PMI whose launcher variables are
 * absent. */
pb_status_t pb_boot_pmi_choose(pb_boot_pmi_flavour_t *flavour_p);

/* "singleton", "pmi1", "pmi2" or "pmix". */
const char *pb_boot_pmi_flavour_name(pb_boot_pmi_flavour_t flavour);

/* Connect to the process manager named by the environment (or become a
 * singleton) and run the init handshake of the chosen version (over
 * PMI_PORT: with the token proof when the server asks, and connecting
 * again, for 15 s at most, when the server closes the connection before it
 * accepted the rank).  On success *@pmi_p is a new connection; free it
 * with pb_boot_pmi_finalize.
 * @return PB_OK; PB_ERR_INVALID_PARAM if PMI_FD/PMI_PORT/PMI_RANK or
 * POSTBOX_PMI_VERSION is malformed; PB_ERR_IO if a connect, read or write
 * fails (the peer closed); PB_ERR_PROTOCOL if the server's reply is
 * malformed or refuses; PB_ERR_NO_MEMORY.  The cause is logged. */
pb_status_t pb_boot_pmi_init(pb_boot_pmi_t **pmi_p);

/* Rank, size, appnum, wire version (1 or 2; 0 for a singleton and PMIx),
 * flavour, and the kvsname (PMI-1), job id (PMI-2) or namespace (PMIx) of
 * @pmi. */
int pb_boot_pmi_rank(const pb_boot_pmi_t *pmi);
int pb_boot_pmi_size(const pb_boot_pmi_t *pmi);
int pb_boot_pmi_appnum(const pb_boot_pmi_t *pmi);
int pb_boot_pmi_version(const pb_boot_pmi_t *pmi);
pb_boot_pmi_flavour_t pb_boot_pmi_flavour(const pb_boot_pmi_t *pmi);
const char *pb_boot_pmi_kvsname(const pb_boot_pmi_t *pmi);

/* The ranks the launcher says share this process's node, up to @max into
 * @ranks (PMIx's PMIX_LOCAL_PEERS).  @return their number (may exceed
 * @max), or -1 when the launcher does not say (PMI-1, PMI-2, singleton). */
int pb_boot_pmi_launcher_local_ranks(pb_boot_pmi_t *pmi, int *ranks, int max);

/* Put @key=@value in the job's key-value space; others see it after the
 * next fence.  @return PB_OK; PB_ERR_INVALID_PARAM if the key or value is
 * too long or the key is malformed; PB_ERR_IO; PB_ERR_PROTOCOL (logged). */
pb_status_t pb_boot_pmi_put(pb_boot_pmi_t *pmi, const char *key, const char *value);

/* Get @key into @value (@len bytes, NUL terminated); *@found_p is 0 if the
 * space has no such key (@value is then "").  @return PB_OK;
 * PB_ERR_INVALID_PARAM if the key is malformed or the value does not fit
 * in @len; PB_ERR_IO; PB_ERR_PROTOCOL (logged). */
pb_status_t pb_boot_pmi_get(pb_boot_pmi_t *pmi, const char *key, char *value, size_t len,
                            int *found_p);

/* Collective: wait until every rank has fenced, making all earlier puts
 * visible (PMI-1 barrier_in/out, PMI-2 kvs-fence).
 * @return PB_OK; PB_ERR_IO; PB_ERR_PROTOCOL (logged). */
pb_status_t pb_boot_pmi_fence(pb_boot_pmi_t *pmi);

/* The process manager's name service (MPI_Publish_name and the others):
 * publish @service as @port; withdraw @service; look @service up into
 * @port (@len bytes, NUL terminated).  PMI-1 publish_name/unpublish_name/
 * lookup_name, PMI-2 name-publish/-unpublish/-lookup, PMIx_Publish/
 * _Unpublish/_Lookup.
 * @return PB_OK; PB_ERR_IN_USE (publish: the service is published
 * already); PB_ERR_NOT_PUBLISHED (unpublish, lookup: no such service);
 * PB_ERR_UNSUPPORTED (a singleton, or a process manager without a name
 * service); PB_ERR_INVALID_PARAM (an empty or too long service or port, a
 * port longer than @len - 1); PB_ERR_IO; PB_ERR_PROTOCOL.  Only the last
 * two are logged. */
pb_status_t pb_boot_pmi_name_publish(pb_boot_pmi_t *pmi, const char *service, const char *port);
pb_status_t pb_boot_pmi_name_unpublish(pb_boot_pmi_t *pmi, const char *service);
pb_status_t pb_boot_pmi_name_lookup(pb_boot_pmi_t *pmi, const char *service, char *port,
                                    size_t len);

/* Ask the process manager to start the processes of @count commands
 * (@cmds, postbox/job.h) as one new world, with the @npreput keys
 * @preput_keys = @preput_values in its key-value space: PMI-1 mcmd=spawn
 * blocks, PMI-2 spawn.  On a refusal the process manager's reason (its
 * msg, underscores made spaces) is written to @why (@why_len bytes).
 * @return PB_OK when it started every process; PB_ERR_NO_RESOURCE when it
 * refused (nothing logged); PB_ERR_UNSUPPORTED for a singleton, PMIx or a
 * process manager that answers with another command; PB_ERR_INVALID_PARAM
 * when a request would not fit a message (a PMI-2 body of more than
 * PB_BOOT_PMI_MSG_MAX bytes, a PMI-1 line with a newline); PB_ERR_IO;
 * PB_ERR_PROTOCOL. */
pb_status_t pb_boot_pmi_spawn(pb_boot_pmi_t *pmi, int count, const postbox_job_spawn_cmd_t *cmds,
                              int npreput, const char *const *preput_keys,
                              const char *const *preput_values, char *why, size_t why_len);

/* Ask the process manager to end the whole job with @exit_code, reporting
 * @message (may be NULL); then exit this process with @exit_code. */
void pb_boot_pmi_abort(pb_boot_pmi_t *pmi, int exit_code, const char *message)
    __attribute__((noreturn));

/* Say goodbye to the process manager, close the connection and free @pmi
 * (NULL is ok).  @return PB_OK; PB_ERR_IO or PB_ERR_PROTOCOL if the
 * goodbye failed (logged; @pmi is freed anyway). */
pb_status_t pb_boot_pmi_finalize(pb_boot_pmi_t *pmi);

/* The IPv4 address (network order) of this host that the job's other hosts
 * reach: the one this process reached its launcher from over PMI_PORT, or
 * under Slurm the one the routing table picks towards the node srun ran on
 * (SLURM_LAUNCH_NODE_IPADDR).  0 when neither applies (a local launcher). */
uint32_t pb_boot_pmi_local_ipv4(void);

#endif
