/*
 * RSM helpers shared by the tests in tests/rsm/: the controller under test
 * (POSTBOX_TEST_CONTROLLER, default "shm") and an "exporter server", a peer
 * process that exports and publishes a segment and then obeys commands sent
 * over its pipe (read or write its own memory, unpublish, post, wait, ...).
 * Every case is written against the API only, so the same suite runs on
 * every transport.
 */
#ifndef PBT_RSM_UTIL_H
#define PBT_RSM_UTIL_H

#include "harness.h"

/* The controller name under test. */
const char *pbt_ctlr_name(void);
/* 1 if the controller under test is the shm transport (or an alias). */
int pbt_is_shm(void);
/* Skip a case whose processes end without closing the transport (killed,
 * or _exit while connected) when that leaves files behind by design:
 * the ofi transport over libfabric's shm provider, which keeps a file in
 * /dev/shm until its endpoint closes (docs/ofi.md). */
void pbt_skip_if_ending_leaves_files(void);
/* rsm_get_controller(pbt_ctlr_name()), which must succeed. */
rsmapi_controller_handle_t pbt_ctlr_get(void);

/* Special ae_node values resolved by the exporter server: the node of the
 * test process (its importer), and a node id that is neither its own nor
 * the importer's. */
#define PBT_NODE_LOCAL 0xFFFFFFFFu
#define PBT_NODE_OTHER 0xFFFFFFFEu

typedef struct {
    size_t size;           /* bytes, a page multiple; 0: 4 pages */
    uint_t create_flags;   /* RSM_ALLOW_REBIND, ... */
    rsm_memseg_id_t segid; /* 0: the library picks */
    int no_publish;        /* 1: create only */
    uint_t acl_len;        /* 0: NULL access list */
    rsmapi_access_entry_t acl[4];
    unsigned seed;               /* memory is filled with pbt_pattern(i, seed) */
    rsm_node_id_t importer_node; /* set by pbt_exporter_start: PBT_NODE_LOCAL */
} pbt_export_opts_t;

typedef struct {
    pbt_peer_t peer;
    rsm_node_id_t node;
    rsm_memseg_id_t segid;
    size_t size;
    unsigned seed;
} pbt_exporter_t;

enum {
    EX_READ = 1,  /* a=offset b=length: reply with the exporter's own bytes */
    EX_WRITE,     /* a=offset b=length, data: store into its own memory */
    EX_READ_OLD,  /* like EX_READ, from the memory replaced by EX_REBIND */
    EX_UNPUBLISH, /* reply rc */
    EX_PUBLISH,   /* publish again under the same id and list */
    EX_REPUBLISH, /* a=perm for the local node (0: NULL list) */
    EX_DESTROY,
    EX_POST,    /* a=flags */
    EX_WAIT,    /* a=timeout ms */
    EX_REBIND,  /* a=seed of the new memory; b=size (0: segment size) */
    EX_CLAIM,   /* a=1: pb_rsm_progress_claim, a=0: pb_rsm_progress_release */
    EX_HANDLER, /* a=0: no call handler; a=1 or 2: pbt_call_handler with that id */
    EX_COMPUTE, /* a=ms: compute that long without calling the library, then reply */
    EX_EXIT     /* clean up (unpublish, destroy, release) and exit 0 */
};

/* A request to pbt_call_handler, the exporter server's call handler
 * (little endian, as every host Postbox runs on). */
typedef struct {
    uint32_t op;
    uint32_t length;
    uint64_t offset;
    uint64_t value;
} pbt_call_req_t;

enum {
    PBT_CALL_ADD = 1, /* add value to the uint64_t at offset; reply: the old value */
    PBT_CALL_READ,    /* reply: length bytes of the segment at offset */
    PBT_CALL_ECHO,    /* reply: the request itself, as much as fits */
    PBT_CALL_WHO,     /* reply: the handler's id (uint32_t) */
    PBT_CALL_OVERSAY  /* fill the reply room, and say it is value bytes longer */
};

/* The exporter server's call handler; @arg points to its id (uint32_t). */
void pbt_call_handler(void *arg, void *seg_base, size_t seg_size, const void *request,
                      size_t request_len, void *reply, size_t reply_max, size_t *reply_len);

/* Fork an exporter server and wait until its segment is published.  With
 * POSTBOX_TEST_PEER_NODE=N in the environment the server is the program
 * POSTBOX_TEST_EXPORTER_SERVER, exec'd as RSM node N: the test's imports
 * then cross nodes (the tcp transport's runs set this). */
void pbt_exporter_start(pbt_exporter_t *ex, const pbt_export_opts_t *opts);
/* The exporter server's body, run in the forked or exec'd peer @self. */
void pbt_exporter_main(pbt_peer_t *self, const pbt_export_opts_t *opts);

/* Send a command; @data is sent (EX_WRITE) or received (EX_READ*).
 * Returns the RSM code of the exporter's call. */
int pbt_exporter_cmd(pbt_exporter_t *ex, int op, uint64_t a, uint64_t b, void *data);
/* pbt_exporter_cmd in two halves: send the command (@data: EX_WRITE's),
 * then, later, take its answer (EX_READ's data into @data). */
void pbt_exporter_cmd_send(pbt_exporter_t *ex, int op, uint64_t a, uint64_t b, const void *data);
int pbt_exporter_cmd_answer(pbt_exporter_t *ex, void *data);
/* EX_EXIT and join (the exporter's cleanup calls must all succeed). */
void pbt_exporter_stop(pbt_exporter_t *ex);
/* Fail unless the exporter's memory at [off, off+len) equals @expect. */
void pbt_exporter_expect(pbt_exporter_t *ex, size_t off, const void *expect, size_t len,
                         const char *what);
/* Fail unless the exporter's whole memory still holds its initial pattern. */
void pbt_exporter_expect_pristine(pbt_exporter_t *ex, const char *what);

/* Connect to the exporter's segment. */
int pbt_connect(rsmapi_controller_handle_t ctlr, const pbt_exporter_t *ex, rsm_permission_t perm,
                rsm_memseg_import_handle_t *im);

/* A segment exported (and, unless @no_publish, published with a NULL list)
 * by the calling process. */
typedef struct {
    rsmapi_controller_handle_t ctlr;
    rsm_memseg_export_handle_t h;
    void *mem;
    size_t size;
    rsm_memseg_id_t segid;
    rsm_node_id_t node;
    int published;
} pbt_local_export_t;

void pbt_local_export(pbt_local_export_t *le, size_t size, uint_t flags, int no_publish);
void pbt_local_export_end(pbt_local_export_t *le);

/* What an exporter in the calling process sends an importer peer. */
typedef struct {
    rsm_node_id_t node;
    rsm_memseg_id_t segid;
    uint64_t size;
} pbt_seginfo_t;

#endif
