/*
 * The MPI tool information interface (src/mpi/tools.c) through the
 * standard API, under `postbox run -n 2` (one node or two):
 *
 *   before MPI_Init   reference-counted init and finalize, every call's
 *                     MPI_T_ERR_NOT_INITIALIZED, 4 threads using MPI_T at
 *                     once; the control variables and their errors, the
 *                     launcher's -x POSTBOX_YIELDS=7 read back, the job
 *                     secret never shown
 *   MPI_Init..        writes of POSTBOX_RENDEZVOUS and the counts of
 *                     messages per protocol they change; the unexpected
 *                     queue's length and high-water mark; the waiting timer;
 *                     a collective's algorithm count; one-sided calls; sessions, handles and
 *                     their errors; categories; events: the unexpected
 *                     messages and the collectives' algorithms seen by
 *                     callbacks, element by element, dropped for a
 *                     callback that needs no restriction, a registration
 *                     freed from its own callback; the time source
 *   after MPI_Finalize  MPI_T still answers, writes are refused
 *
 * `pbt-mpi-mpit --cvars` (no launcher, no MPI_Init) prints one line per
 * control variable: name, type (int, unsigned_long, string) and value,
 * tab-separated; tests/python/test_mpi_mpit.py compares them with
 * `postbox info --config`.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* @call must return @want */
#define RC(call, want)                                                                             \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        CHECK(rc_ == (want), "%s returned %d, not %s (%d)", #call, rc_, #want, (want));            \
    } while (0)

#define STRING_MAX 4096

static int peer;

static int cvar_index(const char *name)
{
    int index = -1;

    OK(MPI_T_cvar_get_index(name, &index));
    return index;
}

static int pvar_index(const char *name, int var_class)
{
    int index = -1;

    OK(MPI_T_pvar_get_index(name, var_class, &index));
    return index;
}

/* the value of integer control variable @name, read through a handle */
static long cvar_read_long(const char *name)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    int index = cvar_index(name), count = 0;
    long value = -1;

    OK(MPI_T_cvar_get_info(index, NULL, NULL, NULL, &type, NULL, NULL, NULL, NULL, NULL));
    OK(MPI_T_cvar_handle_alloc(index, NULL, &h, &count));
    CHECK(count == 1, "%s: count %d", name, count);
    if (type == MPI_INT) {
        int v = -1;

        OK(MPI_T_cvar_read(h, &v));
        value = v;
    } else {
        unsigned long v = 0;

        CHECK(type == MPI_UNSIGNED_LONG, "%s: not an integer variable", name);
        OK(MPI_T_cvar_read(h, &v));
        value = (long)v;
    }
    OK(MPI_T_cvar_handle_free(&h));
    return value;
}

/* Write @value to integer control variable @name; @return the code. */
static int cvar_write_long(const char *name, long value)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    int index = cvar_index(name), count = 0, rc;

    OK(MPI_T_cvar_get_info(index, NULL, NULL, NULL, &type, NULL, NULL, NULL, NULL, NULL));
    OK(MPI_T_cvar_handle_alloc(index, NULL, &h, &count));
    if (type == MPI_INT) {
        int v = (int)value;

        rc = MPI_T_cvar_write(h, &v);
    } else {
        unsigned long v = (unsigned long)value;

        rc = MPI_T_cvar_write(h, &v);
    }
    OK(MPI_T_cvar_handle_free(&h));
    return rc;
}

/* ---- before MPI_Init ---------------------------------------------------- */

static void init_counts(void)
{
    int provided = -1, n = 0;

    RC(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    RC(MPI_T_pvar_session_create(&(MPI_T_pvar_session){0}), MPI_T_ERR_NOT_INITIALIZED);
    RC(MPI_T_category_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    RC(MPI_T_event_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    RC(MPI_T_source_get_timestamp(0, &(MPI_Count){0}), MPI_T_ERR_NOT_INITIALIZED);
    RC(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    RC(MPI_T_init_thread(12345, &provided), MPI_T_ERR_INVALID);
    RC(MPI_T_init_thread(MPI_THREAD_SINGLE, NULL), MPI_T_ERR_INVALID);
    OK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    OK(MPI_T_finalize());
    OK(MPI_T_cvar_get_num(&n)); /* one init is still open */
    CHECK(n > 0, "%d control variables", n);
    OK(MPI_T_finalize());
    RC(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    RC(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
}

/* the handles of a finalized MPI_T are gone */
static void handles_die_with_finalize(void)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    MPI_T_pvar_session s = MPI_T_PVAR_SESSION_NULL;
    int provided, count, v;

    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    OK(MPI_T_cvar_handle_alloc(cvar_index("POSTBOX_SPIN"), NULL, &h, &count));
    OK(MPI_T_pvar_session_create(&s));
    OK(MPI_T_finalize());
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    RC(MPI_T_cvar_read(h, &v), MPI_T_ERR_INVALID_HANDLE);
    RC(MPI_T_pvar_session_free(&s), MPI_T_ERR_INVALID_SESSION);
    OK(MPI_T_finalize());
}

#define THREAD_ROUNDS 300

static void *tool_thread(void *arg)
{
    int *bad = arg, provided, count, value, n;

    for (int i = 0; i < THREAD_ROUNDS; i++) {
        MPI_T_cvar_handle h;
        MPI_T_pvar_session s;
        MPI_T_pvar_handle p;
        unsigned long long v;
        int index = -1;

        *bad += MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS;
        *bad += MPI_T_cvar_get_index("POSTBOX_NUMPOSTBOX", &index) != MPI_SUCCESS;
        *bad += MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS;
        *bad += MPI_T_cvar_read(h, &value) != MPI_SUCCESS || value != 16;
        *bad += MPI_T_cvar_handle_free(&h) != MPI_SUCCESS;
        *bad += MPI_T_pvar_session_create(&s) != MPI_SUCCESS;
        *bad += MPI_T_pvar_get_num(&n) != MPI_SUCCESS;
        *bad += MPI_T_pvar_handle_alloc(s, i % n, NULL, &p, &count) != MPI_SUCCESS;
        *bad += MPI_T_pvar_read(s, p, &v) != MPI_SUCCESS;
        *bad += MPI_T_pvar_session_free(&s) != MPI_SUCCESS;
        *bad += MPI_T_finalize() != MPI_SUCCESS;
    }
    return NULL;
}

/* 4 threads init, use and finalize MPI_T at once (-x POSTBOX_NUMPOSTBOX
 * is not set: its value is the default, 16) */
static void threads(void)
{
    pthread_t t[4];
    int bad[4] = {0};

    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, tool_thread, &bad[i]) == 0, "pthread_create");
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(bad[i] == 0, "thread %d: %d calls failed", i, bad[i]);
    }
}

static void cvars_each(void)
{
    int n = 0;

    OK(MPI_T_cvar_get_num(&n));
    for (int i = 0; i < n; i++) {
        char name[128], desc[1024];
        int name_len = sizeof(name), desc_len = sizeof(desc), verbosity, bind, scope, count;
        int index = -1;
        MPI_Datatype type;
        MPI_T_enum e;
        MPI_T_cvar_handle h;

        OK(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &e, desc, &desc_len, &bind,
                               &scope));
        CHECK(strncmp(name, "POSTBOX_", 8) == 0, "cvar %d is %s", i, name);
        CHECK(name_len == (int)strlen(name) + 1, "%s: name_len %d", name, name_len);
        CHECK(desc_len > 1 && desc_len == (int)strlen(desc) + 1, "%s: desc_len %d", name, desc_len);
        CHECK(type == MPI_INT || type == MPI_UNSIGNED_LONG || type == MPI_CHAR, "%s: type", name);
        CHECK(bind == MPI_T_BIND_NO_OBJECT, "%s: bind %d", name, bind);
        CHECK(scope == MPI_T_SCOPE_CONSTANT || scope == MPI_T_SCOPE_READONLY ||
                  scope == MPI_T_SCOPE_LOCAL,
              "%s: scope %d", name, scope);
        CHECK(verbosity >= MPI_T_VERBOSITY_USER_BASIC && verbosity <= MPI_T_VERBOSITY_MPIDEV_ALL,
              "%s: verbosity %d", name, verbosity);
        OK(MPI_T_cvar_get_index(name, &index));
        CHECK(index == i, "%s: index %d, not %d", name, index, i);
        if (e != MPI_T_ENUM_NULL) {
            int items = 0, value = -1, len = 0;

            CHECK(type == MPI_INT, "%s: an enumeration of a type not MPI_INT", name);
            OK(MPI_T_enum_get_info(e, &items, NULL, &len));
            CHECK(items >= 2 && len > 1, "%s: enumeration of %d items, name %d", name, items, len);
            OK(MPI_T_enum_get_item(e, items - 1, &value, NULL, &len));
            CHECK(value == items - 1 && len > 1, "%s: last item %d", name, value);
            RC(MPI_T_enum_get_item(e, items, &value, NULL, &len), MPI_T_ERR_INVALID_INDEX);
        }
        OK(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
        if (type == MPI_CHAR) {
            char *value = malloc((size_t)count);

            CHECK(count == STRING_MAX, "%s: count %d", name, count);
            OK(MPI_T_cvar_read(h, value));
            CHECK(strlen(value) < (size_t)count, "%s: not terminated", name);
            free(value);
        } else {
            CHECK(count == 1, "%s: count %d", name, count);
        }
        OK(MPI_T_cvar_handle_free(&h));
        CHECK(h == MPI_T_CVAR_HANDLE_NULL, "%s: handle not nulled", name);
    }
}

static void cvars_values(void)
{
    MPI_T_cvar_handle h;
    char secret[STRING_MAX], name[5];
    int count, len = sizeof(name);
    MPI_T_enum e;

    /* the launcher's -x */
    CHECK(cvar_read_long("POSTBOX_YIELDS") == 7, "POSTBOX_YIELDS reads %ld",
          cvar_read_long("POSTBOX_YIELDS"));
    CHECK(cvar_read_long("POSTBOX_NUMPOSTBOX") == 16, "POSTBOX_NUMPOSTBOX reads %ld",
          cvar_read_long("POSTBOX_NUMPOSTBOX"));
    /* set by the launcher, never shown */
    OK(MPI_T_cvar_handle_alloc(cvar_index("POSTBOX_JOB_SECRET"), NULL, &h, &count));
    memset(secret, 'x', sizeof(secret));
    OK(MPI_T_cvar_read(h, secret));
    CHECK(secret[0] == '\0', "the job secret reads '%.40s'", secret);
    OK(MPI_T_cvar_handle_free(&h));
    /* a short name buffer: cut, terminated, the whole length told */
    OK(MPI_T_cvar_get_info(cvar_index("POSTBOX_POLLALL"), name, &len, NULL, NULL, &e, NULL, NULL,
                           NULL, NULL));
    CHECK(strcmp(name, "POST") == 0 && len == (int)strlen("POSTBOX_POLLALL") + 1,
          "cut name '%s', len %d", name, len);
    len = 0;
    OK(MPI_T_enum_get_item(e, 1, &count, NULL, &len));
    CHECK(count == 1 && len == (int)strlen("all") + 1, "polling item 1: %d, len %d", count, len);
    /* bad input */
    RC(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
       MPI_T_ERR_INVALID_INDEX);
    RC(MPI_T_cvar_get_index("POSTBOX_NO_SUCH", &count), MPI_T_ERR_INVALID_NAME);
    RC(MPI_T_cvar_get_index(NULL, &count), MPI_T_ERR_INVALID);
    RC(MPI_T_cvar_get_num(NULL), MPI_T_ERR_INVALID);
    RC(MPI_T_cvar_handle_alloc(100000, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
    RC(MPI_T_cvar_handle_alloc(0, NULL, NULL, &count), MPI_T_ERR_INVALID);
    RC(MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, &count), MPI_T_ERR_INVALID_HANDLE);
    RC(MPI_T_cvar_handle_free(NULL), MPI_T_ERR_INVALID);
    h = MPI_T_CVAR_HANDLE_NULL;
    RC(MPI_T_cvar_handle_free(&h), MPI_T_ERR_INVALID_HANDLE);
    RC(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &count, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    /* read-only, and writable ones before MPI_Init */
    RC(cvar_write_long("POSTBOX_NUMPOSTBOX", 8), MPI_T_ERR_CVAR_SET_NEVER);
    RC(cvar_write_long("POSTBOX_RENDEZVOUS", 4096), MPI_T_ERR_CVAR_SET_NOT_NOW);
}

/* ---- between MPI_Init and MPI_Finalize ----------------------------------- */

/* the counters of one protocol, through a session's handles */
typedef struct {
    MPI_T_pvar_handle messages, bytes;
} proto_t;

static proto_t proto_open(MPI_T_pvar_session s, const char *name)
{
    char what[64];
    proto_t p;
    int count;

    snprintf(what, sizeof(what), "p2p_%s_messages", name);
    OK(MPI_T_pvar_handle_alloc(s, pvar_index(what, MPI_T_PVAR_CLASS_COUNTER), NULL, &p.messages,
                               &count));
    snprintf(what, sizeof(what), "p2p_%s_bytes", name);
    OK(MPI_T_pvar_handle_alloc(s, pvar_index(what, MPI_T_PVAR_CLASS_COUNTER), NULL, &p.bytes,
                               &count));
    return p;
}

/* rank 0 sends @bytes; what its counters of @p rose by since their reset */
static void send_counted(MPI_T_pvar_session s, proto_t p, int bytes, const char *name)
{
    static char buf[16384];
    unsigned long long messages = 99, moved = 99;

    OK(MPI_T_pvar_reset(s, p.messages));
    OK(MPI_T_pvar_reset(s, p.bytes));
    if (rank == 0)
        OK(MPI_Send(buf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
    else
        OK(MPI_Recv(buf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_T_pvar_readreset(s, p.messages, &messages));
    OK(MPI_T_pvar_read(s, p.bytes, &moved));
    if (rank == 0)
        CHECK(messages == 1 && moved == (unsigned long long)bytes,
              "%d bytes: %s counted %llu messages, %llu bytes", bytes, name, messages, moved);
    else
        CHECK(messages == 0 && moved == 0, "the receiver counted %llu %s sends", messages, name);
    OK(MPI_T_pvar_read(s, p.messages, &messages));
    CHECK(messages == 0, "%s after readreset: %llu", name, messages);
}

/* Rank 0 sends @count messages of @bytes to rank 1, which checks them;
 * @return how many rank 0's counter @p rose by (0 on rank 1). */
static unsigned long long send_many(MPI_T_pvar_session s, proto_t p, int count, int bytes)
{
    static unsigned char buf[32768];
    unsigned long long messages = 0;

    OK(MPI_T_pvar_reset(s, p.messages));
    for (int i = 0; i < count; i++) {
        if (rank == 0) {
            memset(buf, i & 0xff, (size_t)bytes);
            OK(MPI_Send(buf, bytes, MPI_BYTE, peer, 2, MPI_COMM_WORLD));
        } else {
            memset(buf, 0, (size_t)bytes);
            OK(MPI_Recv(buf, bytes, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(buf[0] == (i & 0xff) && buf[bytes - 1] == (i & 0xff),
                  "message %d of %d bytes arrived with %d ... %d", i, bytes, buf[0],
                  buf[bytes - 1]);
        }
    }
    OK(MPI_T_pvar_read(s, p.messages, &messages));
    return messages;
}

/* A rank of the node that a sender's pool copies show far gets 32 KB
 * messages by single copy (src/mpi/engine/far.h): a rate no copy reaches
 * makes every peer of the node far once enough pieces were timed (a
 * round of PB_ENG_FAR_ROUND pieces of 16 KB and more, one in
 * PB_ENG_FAR_SAMPLE: 64 messages when the pool has room for each whole,
 * more when a slow receiver leaves it cut into shorter runs); then all
 * but the rechecks (one in 256) go by single copy; with the rate 0 none
 * does.  Across nodes there is no single copy. */
static void far_peer(MPI_T_pvar_session s)
{
    proto_t single = proto_open(s, "single_copy");
    MPI_Comm node;
    int node_size, far, sent;
    unsigned long long got;

    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    OK(MPI_Comm_size(node, &node_size));
    OK(MPI_Comm_free(&node));
    OK(cvar_write_long("POSTBOX_FAR_COPY_RATE", 1L << 30));
    /* on the node, until the verdict: the first single copies (rank 0
     * tells rank 1) */
    far = node_size != 2;
    for (sent = 0; !far && sent < 2048; sent += 16) {
        far = send_many(s, single, 16, 32768) > 0;
        OK(MPI_Bcast(&far, 1, MPI_INT, 0, MPI_COMM_WORLD));
    }
    CHECK(far, "no single copy in %d messages to a far peer", sent);
    got = send_many(s, single, 256, 32768);
    if (rank == 0 && node_size == 2)
        CHECK(got == 255, "%llu of 256 messages to a far peer by single copy (1 recheck)", got);
    else
        CHECK(got == 0, "%llu single copies across nodes or counted by the receiver", got);
    OK(cvar_write_long("POSTBOX_FAR_COPY_RATE", 0));
    got = send_many(s, single, 16, 32768);
    CHECK(got == 0, "%llu single copies with POSTBOX_FAR_COPY_RATE 0", got);
    OK(cvar_write_long("POSTBOX_FAR_COPY_RATE", 4000));
    OK(MPI_T_pvar_handle_free(s, &single.messages));
    OK(MPI_T_pvar_handle_free(s, &single.bytes));
}

static void protocols(void)
{
    MPI_T_pvar_session s;
    proto_t inline_, eager, rndv;
    unsigned long long v = 0;

    OK(MPI_T_pvar_session_create(&s));
    inline_ = proto_open(s, "inline");
    eager = proto_open(s, "eager");
    rndv = proto_open(s, "rendezvous");
    /* every rank's threshold to 4 KiB, the copy through the pool (no single copy) */
    OK(cvar_write_long("POSTBOX_RENDEZVOUS", 4096));
    OK(cvar_write_long("POSTBOX_SINGLE_COPY", 0));
    CHECK(cvar_read_long("POSTBOX_RENDEZVOUS") == 4096, "RENDEZVOUS reads %ld",
          cvar_read_long("POSTBOX_RENDEZVOUS"));
    RC(cvar_write_long("POSTBOX_RENDEZVOUS", 0), MPI_T_ERR_INVALID); /* below its range */
    RC(cvar_write_long("POSTBOX_POLLALL", 2), MPI_T_ERR_INVALID);
    send_counted(s, inline_, 16, "inline");
    send_counted(s, eager, 1000, "eager");
    send_counted(s, rndv, 8192, "rendezvous");
    OK(cvar_write_long("POSTBOX_RENDEZVOUS", 1 << 20));
    send_counted(s, eager, 8192, "eager");
    OK(cvar_write_long("POSTBOX_SINGLE_COPY", 65536));
    far_peer(s);
    /* a handle's own view: written, then read back */
    v = 1234;
    OK(MPI_T_pvar_write(s, eager.bytes, &v));
    v = 0;
    OK(MPI_T_pvar_read(s, eager.bytes, &v));
    CHECK(v == 1234, "written 1234, read %llu", v);
    /* continuous: no start or stop */
    RC(MPI_T_pvar_start(s, eager.bytes), MPI_T_ERR_PVAR_NO_STARTSTOP);
    RC(MPI_T_pvar_stop(s, eager.bytes), MPI_T_ERR_PVAR_NO_STARTSTOP);
    OK(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES)); /* none to start: fine */
    OK(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES));
    OK(MPI_T_pvar_read(s, eager.bytes, &v));
    CHECK(v == 0, "after resetting all: %llu", v);
    RC(MPI_T_pvar_read(s, MPI_T_PVAR_ALL_HANDLES, &v), MPI_T_ERR_INVALID_HANDLE);
    RC(MPI_T_pvar_read(s, eager.bytes, NULL), MPI_T_ERR_INVALID);
    OK(MPI_T_pvar_handle_free(s, &eager.bytes));
    CHECK(eager.bytes == MPI_T_PVAR_HANDLE_NULL, "handle not nulled");
    RC(MPI_T_pvar_read(s, eager.bytes, &v), MPI_T_ERR_INVALID_HANDLE);
    OK(MPI_T_pvar_session_free(&s));
    CHECK(s == MPI_T_PVAR_SESSION_NULL, "session not nulled");
    RC(MPI_T_pvar_read(s, inline_.messages, &v), MPI_T_ERR_INVALID_SESSION);
}

/* rank 0 sends 3 messages rank 1 has no receive for, then one it has */
static void unexpected_queue(void)
{
    MPI_T_pvar_session s;
    MPI_T_pvar_handle arrived, length, most;
    unsigned long long n = 99, queued = 99, top = 0, v = 5;
    int count, data = 0;

    OK(MPI_T_pvar_session_create(&s));
    OK(MPI_T_pvar_handle_alloc(s, pvar_index("p2p_unexpected_messages", MPI_T_PVAR_CLASS_COUNTER),
                               NULL, &arrived, &count));
    OK(MPI_T_pvar_handle_alloc(s, pvar_index("p2p_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL),
                               NULL, &length, &count));
    OK(MPI_T_pvar_handle_alloc(
        s, pvar_index("p2p_unexpected_queue_max", MPI_T_PVAR_CLASS_HIGHWATERMARK), NULL, &most,
        &count));
    OK(MPI_T_pvar_reset(s, arrived));
    if (rank == 0) {
        /* rank 1 has reset its counter */
        OK(MPI_Recv(&data, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int tag = 10; tag <= 13; tag++)
            OK(MPI_Send(&tag, 1, MPI_INT, peer, tag, MPI_COMM_WORLD));
        /* nothing more goes to rank 1 before it counted */
        OK(MPI_Recv(&data, 1, MPI_INT, peer, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Send(&data, 1, MPI_INT, peer, 9, MPI_COMM_WORLD));
        /* tags 10..12 arrive first (one sender's messages keep their order) */
        OK(MPI_Recv(&data, 1, MPI_INT, peer, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_T_pvar_read(s, arrived, &n));
        OK(MPI_T_pvar_read(s, length, &queued));
        OK(MPI_T_pvar_read(s, most, &top));
        CHECK(n == 3 || n == 4, "%llu unexpected messages, not 3 (or 4)", n);
        CHECK(queued == 3, "the unexpected queue holds %llu, not 3", queued);
        CHECK(top >= 3, "high-water mark %llu", top);
        for (int tag = 10; tag <= 12; tag++) {
            OK(MPI_Recv(&data, 1, MPI_INT, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(data == tag, "tag %d carried %d", tag, data);
        }
        OK(MPI_T_pvar_read(s, length, &queued));
        CHECK(queued == 0, "the queue holds %llu after the receives", queued);
        OK(MPI_Send(&data, 1, MPI_INT, peer, 14, MPI_COMM_WORLD));
    }
    /* read-only variables */
    RC(MPI_T_pvar_write(s, length, &v), MPI_T_ERR_PVAR_NO_WRITE);
    RC(MPI_T_pvar_reset(s, most), MPI_T_ERR_PVAR_NO_WRITE);
    RC(MPI_T_pvar_readreset(s, most, &v), MPI_T_ERR_PVAR_NO_WRITE);
    OK(MPI_T_pvar_session_free(&s));
}

static void wait_timer(void)
{
    MPI_T_pvar_session s, other;
    MPI_T_pvar_handle timer, theirs;
    int index = pvar_index("engine_wait_time", MPI_T_PVAR_CLASS_TIMER), count, continuous = 1;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    double seconds = -1, again = -1;

    OK(MPI_T_pvar_get_info(index, NULL, NULL, NULL, NULL, &type, NULL, NULL, NULL, NULL, NULL,
                           &continuous, NULL));
    CHECK(type == MPI_DOUBLE && !continuous, "engine_wait_time: a continuous or not double timer");
    OK(MPI_T_pvar_session_create(&s));
    OK(MPI_T_pvar_session_create(&other));
    OK(MPI_T_pvar_handle_alloc(s, index, NULL, &timer, &count));
    OK(MPI_T_pvar_handle_alloc(other, index, NULL, &theirs, &count));
    RC(MPI_T_pvar_read(s, theirs, &seconds), MPI_T_ERR_INVALID_HANDLE); /* another session's */
    OK(MPI_T_pvar_read(s, timer, &seconds));
    CHECK(seconds == 0, "a timer never started reads %g", seconds);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES));
    if (rank == 0) {
        usleep(100 * 1000);
        OK(MPI_Send(&count, 1, MPI_INT, peer, 20, MPI_COMM_WORLD));
    } else {
        OK(MPI_Recv(&count, 1, MPI_INT, peer, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    OK(MPI_T_pvar_stop(s, timer));
    OK(MPI_T_pvar_read(s, timer, &seconds));
    if (rank == 1)
        CHECK(seconds >= 0.05 && seconds < 10, "waited %g s for a message sent 0.1 s later",
              seconds);
    usleep(20 * 1000);
    OK(MPI_T_pvar_read(s, timer, &again));
    CHECK(again == seconds, "a stopped timer moved: %g, then %g", seconds, again);
    OK(MPI_T_pvar_readreset(s, timer, &again));
    OK(MPI_T_pvar_read(s, timer, &again));
    CHECK(again == 0, "after readreset: %g", again);
    seconds = -1;
    RC(MPI_T_pvar_write(s, timer, &seconds), MPI_T_ERR_INVALID);
    OK(MPI_T_pvar_session_free(&other));
    OK(MPI_T_pvar_session_free(&s));
}

/* one MPI_Allreduce counts one run of one of its algorithms */
static void collective_counts(void)
{
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h[16];
    int n = 0, handles = 0, count, in = 1, out = 0;
    unsigned long long total = 0;

    OK(MPI_T_pvar_get_num(&n));
    OK(MPI_T_pvar_session_create(&s));
    for (int i = 0; i < n && handles < 16; i++) {
        char name[64];
        int len = sizeof(name);

        OK(MPI_T_pvar_get_info(i, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                               NULL));
        if (strncmp(name, "coll_allreduce_", 15) == 0)
            OK(MPI_T_pvar_handle_alloc(s, i, NULL, &h[handles++], &count));
    }
    CHECK(handles >= 2, "%d allreduce algorithms", handles);
    OK(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES));
    OK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(out == 2, "allreduce gave %d", out);
    for (int i = 0; i < handles; i++) {
        unsigned long long v = 0;

        OK(MPI_T_pvar_read(s, h[i], &v));
        total += v;
    }
    CHECK(total == 1, "one allreduce counted %llu runs", total);
    OK(MPI_T_pvar_session_free(&s));
    /* the switch that prints them at MPI_Finalize, on and off again */
    OK(cvar_write_long("POSTBOX_COLL_STATS", 1));
    CHECK(cvar_read_long("POSTBOX_COLL_STATS") == 1, "COLL_STATS not set");
    OK(cvar_write_long("POSTBOX_COLL_STATS", 0));
}

/* one put, two gets and one accumulate in a fence epoch count as such */
static void rma_counts(void)
{
    static const char *const names[] = {"rma_put_calls", "rma_get_calls", "rma_accumulate_calls",
                                        "rma_compare_and_swap_calls"};
    const unsigned long long want[] = {1, 2, 1, 0};
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h[4];
    int window[2] = {0, 0}, mine = rank + 1, got[2] = {-1, -1}, count;
    MPI_Win win;

    OK(MPI_T_pvar_session_create(&s));
    for (int i = 0; i < 4; i++)
        OK(MPI_T_pvar_handle_alloc(s, pvar_index(names[i], MPI_T_PVAR_CLASS_COUNTER), NULL, &h[i],
                                   &count));
    OK(MPI_Win_create(window, sizeof(window), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    OK(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Put(&mine, 1, MPI_INT, peer, 0, 1, MPI_INT, win));
    OK(MPI_Accumulate(&mine, 1, MPI_INT, peer, 1, 1, MPI_INT, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Get(&got[0], 1, MPI_INT, peer, 0, 1, MPI_INT, win));
    OK(MPI_Get(&got[1], 1, MPI_INT, peer, 1, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));
    CHECK(got[0] == rank + 1 && got[1] == rank + 1, "read back %d %d from the peer's window",
          got[0], got[1]);
    for (int i = 0; i < 4; i++) {
        unsigned long long v = 99;

        OK(MPI_T_pvar_read(s, h[i], &v));
        CHECK(v == want[i], "%s: %llu, not %llu", names[i], v, want[i]);
    }
    OK(MPI_Win_free(&win));
    OK(MPI_T_pvar_session_free(&s));
}

static void pvars_each(void)
{
    int n = 0;

    OK(MPI_T_pvar_get_num(&n));
    CHECK(n >= 12, "%d performance variables", n);
    for (int i = 0; i < n; i++) {
        char name[64];
        int len = sizeof(name), cls, bind, readonly, continuous, atomic, index = -1;
        MPI_Datatype type;

        OK(MPI_T_pvar_get_info(i, name, &len, NULL, &cls, &type, NULL, NULL, NULL, &bind, &readonly,
                               &continuous, &atomic));
        OK(MPI_T_pvar_get_index(name, cls, &index));
        CHECK(index == i, "%s: index %d", name, index);
        CHECK(bind == MPI_T_BIND_NO_OBJECT, "%s: bind %d", name, bind);
        CHECK(type == (cls == MPI_T_PVAR_CLASS_TIMER ? MPI_DOUBLE : MPI_UNSIGNED_LONG_LONG),
              "%s: type", name);
        CHECK(readonly ? !atomic : atomic, "%s: readonly %d, atomic %d", name, readonly, atomic);
        RC(MPI_T_pvar_get_index(
               name, cls == MPI_T_PVAR_CLASS_STATE ? MPI_T_PVAR_CLASS_SIZE : MPI_T_PVAR_CLASS_STATE,
               &index),
           MPI_T_ERR_INVALID_NAME);
    }
    RC(MPI_T_pvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                           NULL),
       MPI_T_ERR_INVALID_INDEX);
    RC(MPI_T_pvar_handle_alloc(MPI_T_PVAR_SESSION_NULL, 0, NULL, &(MPI_T_pvar_handle){0}, &n),
       MPI_T_ERR_INVALID_SESSION);
}

static void categories(void)
{
    int cats = 0, cvars = 0, pvars = 0, sum_c = 0, sum_p = 0, index = -1, first = 0, second = 1;
    int events = 0, sum_e = 0;
    int *seen_c, *seen_p;

    OK(MPI_T_category_get_num(&cats));
    OK(MPI_T_cvar_get_num(&cvars));
    OK(MPI_T_pvar_get_num(&pvars));
    CHECK(cats == 5, "%d categories", cats);
    seen_c = calloc((size_t)cvars, sizeof(int));
    seen_p = calloc((size_t)pvars, sizeof(int));
    for (int c = 0; c < cats; c++) {
        char name[64];
        int len = sizeof(name), nc = -1, np = -1, nsub = -1, nev = -1;
        int indices[64];

        OK(MPI_T_category_get_info(c, name, &len, NULL, NULL, &nc, &np, &nsub));
        OK(MPI_T_category_get_index(name, &index));
        CHECK(index == c, "%s: index %d", name, index);
        CHECK(nsub == 0, "%s: %d subcategories", name, nsub);
        OK(MPI_T_category_get_num_events(c, &nev));
        CHECK(nev >= 0 && nev <= 64, "%s: %d events", name, nev);
        sum_e += nev;
        CHECK(nc <= 64 && np <= 64, "%s: %d cvars, %d pvars", name, nc, np);
        OK(MPI_T_category_get_cvars(c, nc, indices));
        for (int i = 0; i < nc; i++)
            seen_c[indices[i]]++;
        OK(MPI_T_category_get_pvars(c, np, indices));
        for (int i = 0; i < np; i++)
            seen_p[indices[i]]++;
        sum_c += nc;
        sum_p += np;
        OK(MPI_T_category_get_events(c, nev, indices));
        for (int i = 0; i < nev; i++) {
            char ename[64];
            int elen = sizeof(ename);

            OK(MPI_T_event_get_info(indices[i], ename, &elen, NULL, NULL, NULL, NULL, NULL, NULL,
                                    NULL, NULL, NULL));
            CHECK(strncmp(ename, name, strlen(name)) == 0, "event %s in category %s", ename, name);
        }
        OK(MPI_T_category_get_categories(c, 0, NULL));
    }
    CHECK(sum_c == cvars && sum_p == pvars, "categories hold %d of %d cvars, %d of %d pvars", sum_c,
          cvars, sum_p, pvars);
    OK(MPI_T_event_get_num(&events));
    CHECK(sum_e == events, "categories hold %d of %d events", sum_e, events);
    for (int i = 0; i < cvars; i++)
        CHECK(seen_c[i] == 1, "cvar %d in %d categories", i, seen_c[i]);
    for (int i = 0; i < pvars; i++)
        CHECK(seen_p[i] == 1, "pvar %d in %d categories", i, seen_p[i]);
    free(seen_c);
    free(seen_p);
    RC(MPI_T_category_get_info(cats, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
       MPI_T_ERR_INVALID_INDEX);
    RC(MPI_T_category_get_cvars(0, -1, NULL), MPI_T_ERR_INVALID);
    RC(MPI_T_category_get_pvars(0, 3, NULL), MPI_T_ERR_INVALID);
    RC(MPI_T_category_get_index("no_such", &index), MPI_T_ERR_INVALID_NAME);
    OK(MPI_T_category_changed(&first));
    OK(MPI_T_category_changed(&second));
    CHECK(first == second, "categories changed: %d, then %d", first, second);
}

/* what the callbacks of events() saw */
#define SEEN_MAX 16
typedef struct {
    int calls, dropped, freed, source_index;
    int source[SEEN_MAX], tag[SEEN_MAX], copy_tag[SEEN_MAX];
    MPI_Count bytes[SEEN_MAX], copy_bytes[SEEN_MAX], stamp[SEEN_MAX];
    int run[SEEN_MAX];
    MPI_T_cb_safety level;
    MPI_Aint displs[3];
    MPI_T_event_registration self_freeing;
} seen_t;

static void on_unexpected(MPI_T_event_instance e, MPI_T_event_registration r, MPI_T_cb_safety level,
                          void *user_data)
{
    seen_t *s = user_data;
    int k = s->calls++;
    char copy[64];

    (void)r;
    s->level = level;
    if (k >= SEEN_MAX)
        return;
    OK(MPI_T_event_read(e, 0, &s->source[k]));
    OK(MPI_T_event_read(e, 1, &s->tag[k]));
    OK(MPI_T_event_read(e, 2, &s->bytes[k]));
    OK(MPI_T_event_copy(e, copy));
    memcpy(&s->copy_tag[k], copy + s->displs[1], sizeof(int));
    memcpy(&s->copy_bytes[k], copy + s->displs[2], sizeof(MPI_Count));
    OK(MPI_T_event_get_timestamp(e, &s->stamp[k]));
    OK(MPI_T_event_get_source(e, &s->source_index));
    RC(MPI_T_event_read(e, 3, copy), MPI_T_ERR_INVALID_INDEX);
}

static void on_coll_run(MPI_T_event_instance e, MPI_T_event_registration r, MPI_T_cb_safety level,
                        void *user_data)
{
    seen_t *s = user_data;

    (void)r;
    (void)level;
    if (s->calls < SEEN_MAX)
        OK(MPI_T_event_read(e, 0, &s->run[s->calls]));
    s->calls++;
}

/* a callback that frees its own registration at its first event */
static void on_coll_run_free_self(MPI_T_event_instance e, MPI_T_event_registration r,
                                  MPI_T_cb_safety level, void *user_data)
{
    seen_t *s = user_data;

    (void)e;
    (void)level;
    s->calls++;
    if (r == s->self_freeing) {
        s->self_freeing = NULL;
        OK(MPI_T_event_handle_free(r, s, NULL));
    }
}

static void never_called(MPI_T_event_instance e, MPI_T_event_registration r, MPI_T_cb_safety level,
                         void *user_data)
{
    seen_t *s = user_data;

    (void)e;
    (void)r;
    (void)level;
    s->calls++;
}

static void on_dropped(MPI_Count count, MPI_T_event_registration r, int source_index,
                       MPI_T_cb_safety level, void *user_data)
{
    seen_t *s = user_data;

    (void)r;
    (void)source_index;
    (void)level;
    s->dropped += (int)count;
}

static void on_free(MPI_T_event_registration r, MPI_T_cb_safety level, void *user_data)
{
    seen_t *s = user_data;

    (void)r;
    s->freed++;
    s->level = level;
}

static int event_index(const char *name)
{
    int i = -1;

    OK(MPI_T_event_get_index(name, &i));
    return i;
}

/* rank 0 sends 3 messages rank 1 has no receive for yet: 4, 100, 4000 bytes */
static void send_unexpected(void)
{
    static int data[1000];
    int go = 0;

    if (rank == 0) {
        OK(MPI_Recv(&go, 1, MPI_INT, peer, 19, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Send(data, 1, MPI_INT, peer, 20, MPI_COMM_WORLD));
        OK(MPI_Send(data, 25, MPI_INT, peer, 21, MPI_COMM_WORLD));
        OK(MPI_Send(data, 1000, MPI_INT, peer, 22, MPI_COMM_WORLD));
        OK(MPI_Send(data, 1, MPI_INT, peer, 23, MPI_COMM_WORLD));
        OK(MPI_Recv(&go, 1, MPI_INT, peer, 24, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        OK(MPI_Send(&go, 1, MPI_INT, peer, 19, MPI_COMM_WORLD));
        /* one sender's messages keep their order: 20..22 are queued by now */
        OK(MPI_Recv(data, 1, MPI_INT, peer, 23, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Recv(data, 1, MPI_INT, peer, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Recv(data, 25, MPI_INT, peer, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Recv(data, 1000, MPI_INT, peer, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Send(&go, 1, MPI_INT, peer, 24, MPI_COMM_WORLD));
    }
}

static void events_unexpected(void)
{
    static seen_t seen, none;
    MPI_T_event_registration reg, none_reg;
    MPI_Datatype types[3];
    MPI_T_enum enumtype = NULL;
    MPI_Info info = MPI_INFO_NULL;
    int n = 3, bind = -1, verbosity = -1, ev = event_index("postbox_p2p_unexpected");
    MPI_Count before = 0;

    OK(MPI_T_event_get_info(ev, NULL, NULL, &verbosity, types, seen.displs, &n, &enumtype, &info,
                            NULL, NULL, &bind));
    CHECK(n == 3 && types[0] == MPI_INT && types[1] == MPI_INT && types[2] == MPI_COUNT,
          "postbox_p2p_unexpected: %d elements", n);
    CHECK(bind == MPI_T_BIND_NO_OBJECT && enumtype == MPI_T_ENUM_NULL && info != MPI_INFO_NULL,
          "postbox_p2p_unexpected: bind %d", bind);
    MPI_Info_free(&info);
    OK(MPI_T_event_handle_alloc(ev, NULL, MPI_INFO_NULL, &reg));
    OK(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL, &seen,
                                     on_unexpected));
    OK(MPI_T_event_callback_get_info(reg, MPI_T_CB_REQUIRE_MPI_RESTRICTED, &info));
    MPI_Info_free(&info);
    RC(MPI_T_event_callback_get_info(reg, MPI_T_CB_REQUIRE_THREAD_SAFE, &info), MPI_T_ERR_INVALID);
    RC(MPI_T_event_register_callback(reg, (MPI_T_cb_safety)7, MPI_INFO_NULL, NULL, on_unexpected),
       MPI_T_ERR_INVALID);
    /* a callback that needs no restriction cannot run inside MPI: dropped */
    OK(MPI_T_event_handle_alloc(ev, NULL, MPI_INFO_NULL, &none_reg));
    OK(MPI_T_event_register_callback(none_reg, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, &none,
                                     never_called));
    OK(MPI_T_event_set_dropped_handler(none_reg, on_dropped));
    OK(MPI_T_source_get_timestamp(0, &before));
    send_unexpected();
    if (rank == 1) {
        CHECK(seen.calls == 3 || seen.calls == 4, "%d unexpected events, not 3 (or 4)", seen.calls);
        for (int k = 0; k < 3; k++) {
            MPI_Count want = k == 0 ? 4 : k == 1 ? 100 : 4000;

            CHECK(seen.source[k] == 0 && seen.tag[k] == 20 + k && seen.bytes[k] == want,
                  "unexpected event %d: source %d tag %d %lld bytes", k, seen.source[k],
                  seen.tag[k], (long long)seen.bytes[k]);
            CHECK(seen.copy_tag[k] == seen.tag[k] && seen.copy_bytes[k] == seen.bytes[k],
                  "event %d copied: tag %d, %lld bytes", k, seen.copy_tag[k],
                  (long long)seen.copy_bytes[k]);
            CHECK(seen.stamp[k] >= before && (k == 0 || seen.stamp[k] >= seen.stamp[k - 1]),
                  "event %d at %lld", k, (long long)seen.stamp[k]);
        }
        CHECK(seen.level == MPI_T_CB_REQUIRE_MPI_RESTRICTED && seen.source_index == 0,
              "called at level %d, source %d", (int)seen.level, seen.source_index);
        CHECK(none.calls == 0 && none.dropped == seen.calls,
              "the unrestricted callback: %d calls, %d dropped of %d", none.calls, none.dropped,
              seen.calls);
    }
    OK(MPI_T_event_handle_free(reg, &seen, on_free));
    CHECK(seen.freed == 1 && seen.level == MPI_T_CB_REQUIRE_NONE,
          "free callback: %d calls, level %d", seen.freed, (int)seen.level);
    RC(MPI_T_event_handle_free(reg, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    OK(MPI_T_event_handle_free(none_reg, NULL, NULL));
    /* nobody listens: nothing is called */
    seen.calls = 0;
    send_unexpected();
    CHECK(seen.calls == 0, "%d events after the registration was freed", seen.calls);
}

static void events_coll_run(void)
{
    static seen_t seen, self;
    MPI_T_event_registration reg, self_reg;
    MPI_T_enum enumtype = NULL;
    int n = 1, ev = event_index("postbox_coll_run"), items = 0, found = 0;
    MPI_Datatype type;
    MPI_Aint displ;

    OK(MPI_T_event_get_info(ev, NULL, NULL, NULL, &type, &displ, &n, &enumtype, NULL, NULL, NULL,
                            NULL));
    CHECK(n == 1 && type == MPI_INT && displ == 0 && enumtype != MPI_T_ENUM_NULL,
          "postbox_coll_run: %d elements", n);
    OK(MPI_T_event_handle_alloc(ev, NULL, MPI_INFO_NULL, &reg));
    OK(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE, MPI_INFO_NULL, &seen,
                                     on_coll_run));
    OK(MPI_T_event_handle_alloc(ev, NULL, MPI_INFO_NULL, &self_reg));
    self.self_freeing = self_reg;
    OK(MPI_T_event_register_callback(self_reg, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL,
                                     &self, on_coll_run_free_self));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(seen.calls == 2, "%d collective events for 2 barriers", seen.calls);
    CHECK(self.calls == 1 && self.self_freeing == NULL, "the self-freeing callback ran %d times",
          self.calls);
    OK(MPI_T_enum_get_info(enumtype, &items, NULL, NULL));
    for (int i = 0; i < items; i++) {
        char name[64];
        int len = sizeof(name), value = -1;

        OK(MPI_T_enum_get_item(enumtype, i, &value, name, &len));
        if (value == seen.run[0])
            found = strncmp(name, "barrier_", 8) == 0;
    }
    CHECK(found, "the barrier's run %d is no barrier_ item of %d", seen.run[0], items);
    OK(MPI_T_event_handle_free(reg, NULL, NULL));
}

static void events_and_source(void)
{
    char name[64];
    int n = -1, len = sizeof(name), source = -1, index = -1;
    MPI_Count ticks = 0, max = 0, t1 = 0, t2 = 0;
    MPI_T_source_order order = MPI_T_SOURCE_UNORDERED;
    MPI_Info info = MPI_INFO_ENV;
    MPI_T_event_registration reg = NULL;

    OK(MPI_T_event_get_num(&n));
    CHECK(n == 2, "%d events", n);
    for (int i = 0; i < n; i++) {
        len = sizeof(name);
        OK(MPI_T_event_get_info(i, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                NULL));
        OK(MPI_T_event_get_index(name, &index));
        CHECK(index == i, "event %s: index %d", name, index);
    }
    RC(MPI_T_event_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
       MPI_T_ERR_INVALID_INDEX);
    RC(MPI_T_event_get_index("anything", &n), MPI_T_ERR_INVALID_NAME);
    RC(MPI_T_event_handle_alloc(-1, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);
    RC(MPI_T_event_handle_free(reg, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    RC(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, NULL, NULL),
       MPI_T_ERR_INVALID_HANDLE);
    RC(MPI_T_event_get_source(NULL, &source), MPI_T_ERR_INVALID_HANDLE);
    events_unexpected();
    events_coll_run();
    len = sizeof(name);
    OK(MPI_T_source_get_num(&n));
    CHECK(n == 1, "%d sources", n);
    OK(MPI_T_source_get_info(0, name, &len, NULL, NULL, &order, &ticks, &max, &info));
    CHECK(strcmp(name, "postbox_clock") == 0 && order == MPI_T_SOURCE_ORDERED &&
              ticks == 1000000000 && max > 0 && info == MPI_INFO_NULL,
          "source 0: %s, order %d, %lld ticks/s", name, (int)order, (long long)ticks);
    OK(MPI_T_source_get_timestamp(0, &t1));
    usleep(1000);
    OK(MPI_T_source_get_timestamp(0, &t2));
    CHECK(t2 - t1 >= 1000000, "1 ms took %lld ticks", (long long)(t2 - t1));
    RC(MPI_T_source_get_timestamp(1, &t1), MPI_T_ERR_INVALID_INDEX);
    RC(MPI_T_source_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
       MPI_T_ERR_INVALID_INDEX);
}

/* ---- --cvars ------------------------------------------------------------- */

static int print_cvars(void)
{
    int provided, n = 0;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS ||
        MPI_T_cvar_get_num(&n) != MPI_SUCCESS)
        return 1;
    for (int i = 0; i < n; i++) {
        char name[128], value[STRING_MAX];
        int len = sizeof(name), count;
        MPI_Datatype type;
        MPI_T_cvar_handle h;

        if (MPI_T_cvar_get_info(i, name, &len, NULL, &type, NULL, NULL, NULL, NULL, NULL) ||
            MPI_T_cvar_handle_alloc(i, NULL, &h, &count) || MPI_T_cvar_read(h, value))
            return 1;
        if (type == MPI_INT)
            printf("%s\tint\t%d\n", name, *(int *)value);
        else if (type == MPI_UNSIGNED_LONG)
            printf("%s\tunsigned_long\t%lu\n", name, *(unsigned long *)value);
        else
            printf("%s\tstring\t%s\n", name, value);
        MPI_T_cvar_handle_free(&h);
    }
    return MPI_T_finalize() != MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int provided, size, status, n;

    if (argc > 1 && strcmp(argv[1], "--cvars") == 0)
        return print_cvars();
    init_counts();
    handles_die_with_finalize();
    threads();
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    cvars_each();
    cvars_values();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            printf("pbt-mpi-mpit needs 2 ranks, not %d\n", size);
        MPI_Finalize();
        return 2;
    }
    peer = 1 - rank;
    protocols();
    unexpected_queue();
    wait_timer();
    collective_counts();
    rma_counts();
    pvars_each();
    categories();
    events_and_source();
    status = check_summary("mpit", MPI_COMM_WORLD, 99);
    MPI_Finalize();
    /* MPI_T outlives MPI */
    OK(MPI_T_cvar_get_num(&n));
    RC(cvar_write_long("POSTBOX_SPIN", 10), MPI_T_ERR_CVAR_SET_NOT_NOW);
    CHECK(cvar_read_long("POSTBOX_YIELDS") == 7, "POSTBOX_YIELDS after MPI_Finalize");
    OK(MPI_T_finalize());
    return status || failures != 0;
}
