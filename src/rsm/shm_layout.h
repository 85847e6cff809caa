/*
 * Everything the shm transport keeps in shared memory or sends over its
 * rendezvous socket, declared once.
 *
 * Each publication of a segment has two control pages, each its own memfd:
 * what the exporter writes and what importers write.
 *
 * The exporter's page (pb_shm_ctl_t).  The exporter maps it read-write and
 * then seals it with F_SEAL_FUTURE_WRITE: no one else, root included, can
 * map it writable or write(2) it, so importers map it read-only and none
 * can mark the publication withdrawn or forge the exporter's posts:
 *
 *   offset 0    +--------------------------------------------------+
 *               | magic | version | segid | exporter pid | size     |  written once
 *   offset 64   +--------------------------------------------------+
 *               | state (LIVE / WITHDRAWN)                         |  exporter writes
 *   offset 128  +--------------------------------------------------+
 *               | import_generation                                |  exporter posts,
 *               |                                                  |  importers observe
 *   offset 192  +--------------------------------------------------+
 *               | export_waiters                                   |  exporter threads asleep
 *               |                                                  |  on export_events
 *   offset 256  +--------------------------------------------------+
 *
 * The importers' page (pb_shm_inbox_t), mapped read-write by the exporter
 * and every importer:
 *
 *   offset 0    +--------------------------------------------------+
 *               | export_events                                    |  importers post,
 *               |                                                  |  exporter consumes
 *   offset 64   +--------------------------------------------------+
 *               | import_waiters                                   |  importer threads asleep
 *               |                                                  |  on import_generation
 *   offset 128  +--------------------------------------------------+
 *
 * Writers of different words sit on different cache lines.  The data
 * itself lives in a third memfd, so a read-only importer can be given a
 * read-only descriptor of it.  The exporter's liveness (its service
 * thread's robust futex, rsm/service.h) is a fourth, sealed like the
 * exporter's page.
 */
#ifndef PB_RSM_SHM_LAYOUT_H
#define PB_RSM_SHM_LAYOUT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define PB_SHM_CTL_MAGIC 0x50425348u /* "PBSH" */
#define PB_SHM_LAYOUT_VERSION 2
#define PB_SHM_CTL_SIZE 4096

enum {
    PB_SHM_STATE_LIVE = 1,
    PB_SHM_STATE_WITHDRAWN = 2 /* unpublished or destroyed: importers are cut off */
};

/* a shared 32-bit word; the struct keeps plain accesses out */
typedef struct {
    _Atomic uint32_t value;
} pb_shm_word_t;

typedef struct {
    uint32_t magic;
    uint16_t layout_version;
    uint16_t reserved;
    uint32_t segid;
    uint32_t exporter_pid;
    uint64_t size;
    uint8_t pad0[40];

    pb_shm_word_t state;
    uint8_t pad1[60];

    pb_shm_word_t import_generation; /* bumped by each exporter-to-importer post */
    uint8_t pad2[60];

    pb_shm_word_t export_waiters; /* exporter threads asleep on export_events */
    uint8_t pad3[60];
} pb_shm_ctl_t;

typedef struct {
    pb_shm_word_t export_events; /* pending importer-to-exporter events */
    uint8_t pad0[60];

    pb_shm_word_t import_waiters; /* importer threads asleep on import_generation */
    uint8_t pad1[60];
} pb_shm_inbox_t;

_Static_assert(sizeof(pb_shm_ctl_t) == 256, "exporter's page header size");
_Static_assert(offsetof(pb_shm_ctl_t, state) == 64, "state on its own line");
_Static_assert(offsetof(pb_shm_ctl_t, import_generation) == 128, "import events line");
_Static_assert(offsetof(pb_shm_ctl_t, export_waiters) == 192, "exporter waiters line");
_Static_assert(sizeof(pb_shm_inbox_t) == 128, "importers' page header size");
_Static_assert(offsetof(pb_shm_inbox_t, import_waiters) == 64, "importer waiters line");

/*
 * The rendezvous: an exporter listens on the abstract unix socket
 * "\0postbox-rsm/<job id>/<node>/<segid in hex>" (SOCK_SEQPACKET), which
 * vanishes with the process.  An import is a challenge-response:
 *
 *   exporter -> importer   HELLO   (exporter nonce)
 *   importer -> exporter   REQUEST (node, segid, perm, importer nonce, MAC)
 *   exporter -> importer   REPLY   (status, size, MAC) + descriptors
 *                                   [data memfd, exporter's page,
 *                                    importers' page, liveness page]
 *
 * The MACs are SipHash-2-4 keyed with the job secret, over both nonces and
 * the request, so the secret never crosses the socket and each side proves
 * it belongs to the job.  The connection then stays open: its end tells the
 * exporter that the importer has gone.
 *
 * A REQUEST whose MAC is wrong is answered with REFUSED instead of REPLY
 * (a reply without MAC, status and descriptors): the exporter MACs nothing
 * for a peer that has not proven it is of the job, so it cannot be used
 * to MAC values of a stranger's choosing.  REFUSED carries no proof, but
 * believing it costs the importer nothing a close would not.
 */
#define PB_SHM_MSG_MAGIC 0x50424d53u /* "PBMS" */
#define PB_SHM_PROTOCOL_VERSION 3
#define PB_SHM_NONCE_LEN 16

enum {
    PB_SHM_MSG_HELLO = 1,
    PB_SHM_MSG_REQUEST = 2,
    PB_SHM_MSG_REPLY = 3,
    PB_SHM_MSG_REFUSED = 4 /* a pb_shm_msg_reply_t, all zero but its header */
};

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
} pb_shm_msg_hdr_t;

typedef struct {
    pb_shm_msg_hdr_t hdr;
    uint8_t nonce[PB_SHM_NONCE_LEN];
} pb_shm_msg_hello_t;

typedef struct {
    pb_shm_msg_hdr_t hdr;
    uint32_t node;
    uint32_t segid;
    uint32_t perm;
    uint32_t reserved;
    uint8_t nonce[PB_SHM_NONCE_LEN];
    uint64_t mac;
} pb_shm_msg_request_t;

typedef struct {
    pb_shm_msg_hdr_t hdr;
    int32_t status; /* pb_status_t */
    uint32_t perm;  /* granted */
    uint64_t size;
    uint64_t mac;
} pb_shm_msg_reply_t;

#define PB_SHM_REPLY_FDS 4

_Static_assert(sizeof(pb_shm_msg_hello_t) == 24, "hello size");
_Static_assert(sizeof(pb_shm_msg_request_t) == 48, "request size");
_Static_assert(sizeof(pb_shm_msg_reply_t) == 32, "reply size");

#endif
