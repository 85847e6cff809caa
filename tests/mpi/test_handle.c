/* The handle registry (src/mpi/engine/handle.c), through the API of each kind of
 * handle: a garbage, misaligned or freed handle of every kind gets its
 * error class and never crashes the library, even when it points at
 * unmapped memory; toint/fromint round-trip for created and predefined
 * handles of every kind; tables grow past their first chunk; one thread
 * validates while another creates and frees.
 *
 * Each case is its own process and runs MPI as a one-rank job (no
 * launcher), with MPI_ERRORS_RETURN so that errors come back as codes; the
 * fatal cases run a child with the default handler and read its message. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"

static void init_returning(void)
{
    CHECK(MPI_Init(NULL, NULL) == MPI_SUCCESS);
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS);
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN) == MPI_SUCCESS);
}

/* An address no object can have: a page mapped PROT_NONE, so that reading
 * it crashes (the registry must not read it). */
static void *unmapped_page(void)
{
    void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(p != MAP_FAILED);
    return p;
}

/* Heap bytes that are no object, filled with what an object could hold. */
static void *heap_garbage(void)
{
    void *p = malloc(4096);

    CHECK(p != NULL);
    memset(p, 0x51, 4096);
    return p;
}

/* The calls that take one handle of each kind, with the class they must
 * answer for a bad one. */
static int use_comm(void *h)
{
    int n;

    return MPI_Comm_size((MPI_Comm)h, &n);
}

static int use_group(void *h)
{
    int n;

    return MPI_Group_size((MPI_Group)h, &n);
}

static int use_type(void *h)
{
    int n;

    return MPI_Type_size((MPI_Datatype)h, &n);
}

static int use_op(void *h)
{
    int c;

    return MPI_Op_commutative((MPI_Op)h, &c);
}

static int use_info(void *h)
{
    int n;

    return MPI_Info_get_nkeys((MPI_Info)h, &n);
}

static int use_errhandler(void *h)
{
    return MPI_Comm_set_errhandler(MPI_COMM_SELF, (MPI_Errhandler)h);
}

static int use_request(void *h)
{
    MPI_Request r = (MPI_Request)h;

    return MPI_Wait(&r, MPI_STATUS_IGNORE);
}

typedef struct {
    const char *kind;
    int (*use)(void *h);
    int error_class;
} kind_use_t;

static const kind_use_t uses[] = {
    {"comm", use_comm, MPI_ERR_COMM},          {"group", use_group, MPI_ERR_GROUP},
    {"datatype", use_type, MPI_ERR_TYPE},      {"op", use_op, MPI_ERR_OP},
    {"info", use_info, MPI_ERR_INFO},          {"errhandler", use_errhandler, MPI_ERR_ERRHANDLER},
    {"request", use_request, MPI_ERR_REQUEST},
};

static void case_garbage_handle_of_each_kind_gets_its_class(void)
{
    void *bad[] = {unmapped_page(), (char *)unmapped_page() + 16, heap_garbage(),
                   (void *)(uintptr_t)0x7ffff000, (void *)(uintptr_t)0x12345678};

    init_returning();
    for (size_t k = 0; k < PBT_NCASES(uses); k++) {
        for (size_t i = 0; i < PBT_NCASES(bad); i++) {
            int rc = uses[k].use(bad[i]);

            CHECK_MSG(rc == uses[k].error_class, "%s handle %p: %d, expected %d", uses[k].kind,
                      bad[i], rc, uses[k].error_class);
        }
    }
    MPI_Finalize();
}

static void no_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)in, (void)inout, (void)len, (void)type;
}

static void no_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm, (void)code;
}

/* A live handle of each kind (the request is a pending receive from self,
 * cancelled by the caller). */
static void make_one_of_each(void *h[7])
{
    MPI_Comm comm;
    MPI_Group group;
    MPI_Datatype type;
    MPI_Op op;
    MPI_Info info;
    MPI_Errhandler eh;
    MPI_Request req;
    static int buf;

    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm) == MPI_SUCCESS);
    CHECK(MPI_Comm_group(MPI_COMM_WORLD, &group) == MPI_SUCCESS);
    CHECK(MPI_Type_contiguous(3, MPI_INT, &type) == MPI_SUCCESS);
    CHECK(MPI_Type_commit(&type) == MPI_SUCCESS);
    CHECK(MPI_Op_create(no_op, 1, &op) == MPI_SUCCESS);
    CHECK(MPI_Info_create(&info) == MPI_SUCCESS);
    CHECK(MPI_Comm_create_errhandler(no_handler, &eh) == MPI_SUCCESS);
    CHECK(MPI_Irecv(&buf, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, &req) == MPI_SUCCESS);
    h[0] = comm, h[1] = group, h[2] = type, h[3] = op, h[4] = info, h[5] = eh, h[6] = req;
}

static void case_misaligned_handle_of_each_kind_gets_its_class(void)
{
    void *h[7];

    init_returning();
    make_one_of_each(h);
    for (size_t k = 0; k < PBT_NCASES(uses); k++) {
        for (int off = 1; off < 64; off += 7) {
            int rc = uses[k].use((char *)h[k] + off);

            CHECK_MSG(rc == uses[k].error_class, "%s handle + %d: %d, expected %d", uses[k].kind,
                      off, rc, uses[k].error_class);
        }
        CHECK_MSG(uses[k].use((char *)h[k] - 16) == uses[k].error_class, "%s: the entry header",
                  uses[k].kind);
    }
    /* a handle of one kind is no handle of another */
    CHECK(use_comm(h[1]) == MPI_ERR_COMM && use_type(h[0]) == MPI_ERR_TYPE);
    CHECK(use_request(h[2]) == MPI_ERR_REQUEST && use_op(h[6]) == MPI_ERR_OP);
    CHECK(use_info(h[3]) == MPI_ERR_INFO && use_group(h[4]) == MPI_ERR_GROUP);
    CHECK(MPI_Cancel((MPI_Request *)&h[6]) == MPI_SUCCESS);
    CHECK(MPI_Wait((MPI_Request *)&h[6], MPI_STATUS_IGNORE) == MPI_SUCCESS);
    MPI_Finalize();
}

static void case_freed_handle_of_each_kind_gets_its_class(void)
{
    MPI_Comm comm, comm_copy;
    MPI_Group group, group_copy;
    MPI_Datatype type, type_copy;
    MPI_Op op, op_copy;
    MPI_Info info, info_copy;
    MPI_Request req, req_copy;
    int buf = 7, got = 0;

    init_returning();
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm) == MPI_SUCCESS);
    CHECK(MPI_Comm_group(MPI_COMM_WORLD, &group) == MPI_SUCCESS);
    CHECK(MPI_Type_vector(2, 1, 2, MPI_INT, &type) == MPI_SUCCESS);
    CHECK(MPI_Op_create(no_op, 0, &op) == MPI_SUCCESS);
    CHECK(MPI_Info_create(&info) == MPI_SUCCESS);
    CHECK(MPI_Isend(&buf, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &req) == MPI_SUCCESS);
    CHECK(MPI_Recv(&got, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    comm_copy = comm, group_copy = group, type_copy = type, op_copy = op, info_copy = info;
    req_copy = req;
    CHECK(MPI_Comm_free(&comm) == MPI_SUCCESS && comm == MPI_COMM_NULL);
    CHECK(MPI_Group_free(&group) == MPI_SUCCESS && group == MPI_GROUP_NULL);
    CHECK(MPI_Type_free(&type) == MPI_SUCCESS && type == MPI_DATATYPE_NULL);
    CHECK(MPI_Op_free(&op) == MPI_SUCCESS && op == MPI_OP_NULL);
    CHECK(MPI_Info_free(&info) == MPI_SUCCESS && info == MPI_INFO_NULL);
    CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && req == MPI_REQUEST_NULL);
    CHECK(use_comm(comm_copy) == MPI_ERR_COMM);
    CHECK(MPI_Comm_free(&comm_copy) == MPI_ERR_COMM);
    CHECK(use_group(group_copy) == MPI_ERR_GROUP);
    CHECK(MPI_Group_free(&group_copy) == MPI_ERR_GROUP);
    CHECK(use_type(type_copy) == MPI_ERR_TYPE);
    CHECK(MPI_Type_free(&type_copy) == MPI_ERR_TYPE);
    CHECK(use_op(op_copy) == MPI_ERR_OP);
    CHECK(MPI_Op_free(&op_copy) == MPI_ERR_OP);
    CHECK(use_info(info_copy) == MPI_ERR_INFO);
    CHECK(MPI_Info_free(&info_copy) == MPI_ERR_INFO);
    CHECK(use_request(req_copy) == MPI_ERR_REQUEST);
    CHECK(MPI_Request_free(&req_copy) == MPI_ERR_REQUEST);
    CHECK(MPI_Comm_toint(comm_copy) == (int)(uintptr_t)MPI_COMM_NULL);
    CHECK(MPI_Type_toint(type_copy) == (int)(uintptr_t)MPI_DATATYPE_NULL);
    CHECK(MPI_Request_toint(req_copy) == (int)(uintptr_t)MPI_REQUEST_NULL);
    MPI_Finalize();
}

/* Under the default handler (MPI_ERRORS_ARE_FATAL) a garbage handle of
 * each kind ends the process with an exit status and a message naming the
 * call, never with a signal. */
static void case_garbage_handle_is_fatal_with_a_message_not_a_crash(void)
{
    static const char *const funcs[] = {
        "MPI_Comm_size",      "MPI_Group_size",          "MPI_Type_size", "MPI_Op_commutative",
        "MPI_Info_get_nkeys", "MPI_Comm_set_errhandler", "MPI_Wait"};

    for (size_t k = 0; k < PBT_NCASES(uses); k++) {
        int fds[2], status;
        char out[2048];
        ssize_t n, len = 0;
        pid_t pid;

        CHECK(pipe(fds) == 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            void *bad = unmapped_page();

            dup2(fds[1], 2);
            close(fds[0]);
            MPI_Init(NULL, NULL);
            uses[k].use(bad);
            _exit(0); /* not reached: the error is fatal */
        }
        close(fds[1]);
        while ((n = read(fds[0], out + len, sizeof(out) - 1 - (size_t)len)) > 0)
            len += n;
        out[len] = '\0';
        close(fds[0]);
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) != 0,
                  "%s: the child ended with status 0x%x (a signal is a crash)", uses[k].kind,
                  status);
        CHECK_MSG(strstr(out, funcs[k]) != NULL && strstr(out, "postbox mpi") != NULL,
                  "%s: the message \"%s\" does not name %s", uses[k].kind, out, funcs[k]);
    }
}

static void case_toint_fromint_round_trip_each_kind(void)
{
    void *h[7];
    int n[7];

    init_returning();
    make_one_of_each(h);
    n[0] = MPI_Comm_toint(h[0]);
    n[1] = MPI_Group_toint(h[1]);
    n[2] = MPI_Type_toint(h[2]);
    n[3] = MPI_Op_toint(h[3]);
    n[4] = MPI_Info_toint(h[4]);
    n[5] = MPI_Errhandler_toint(h[5]);
    n[6] = MPI_Request_toint(h[6]);
    for (int k = 0; k < 7; k++)
        CHECK_MSG(n[k] >= 0x1000, "%s: a created handle's integer is %d", uses[k].kind, n[k]);
    CHECK(MPI_Comm_fromint(n[0]) == (MPI_Comm)h[0] && MPI_Comm_toint(h[0]) == n[0]);
    CHECK(MPI_Group_fromint(n[1]) == (MPI_Group)h[1] && MPI_Group_toint(h[1]) == n[1]);
    CHECK(MPI_Type_fromint(n[2]) == (MPI_Datatype)h[2] && MPI_Type_toint(h[2]) == n[2]);
    CHECK(MPI_Op_fromint(n[3]) == (MPI_Op)h[3] && MPI_Op_toint(h[3]) == n[3]);
    CHECK(MPI_Info_fromint(n[4]) == (MPI_Info)h[4] && MPI_Info_toint(h[4]) == n[4]);
    CHECK(MPI_Errhandler_fromint(n[5]) == (MPI_Errhandler)h[5] &&
          MPI_Errhandler_toint(h[5]) == n[5]);
    CHECK(MPI_Request_fromint(n[6]) == (MPI_Request)h[6] && MPI_Request_toint(h[6]) == n[6]);
    /* an integer of one kind is nothing of another, unless that kind has
     * an entry of the same index */
    CHECK(MPI_Comm_fromint(0x7ffffff) == MPI_COMM_NULL);
    CHECK(MPI_Request_fromint(0x7ffffff) == MPI_REQUEST_NULL);
    CHECK(MPI_Cancel((MPI_Request *)&h[6]) == MPI_SUCCESS);
    CHECK(MPI_Wait((MPI_Request *)&h[6], MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(MPI_Request_fromint(n[6]) == MPI_REQUEST_NULL);
    CHECK(MPI_Comm_free((MPI_Comm *)&h[0]) == MPI_SUCCESS);
    CHECK(MPI_Comm_fromint(n[0]) == MPI_COMM_NULL);
    MPI_Finalize();
}

/* The predefined handles convert to the ABI's values (include/mpi.h) and
 * back, as before the registry. */
static void case_toint_fromint_predefined_values(void)
{
    init_returning();
    CHECK(MPI_Comm_toint(MPI_COMM_WORLD) == (int)(uintptr_t)MPI_COMM_WORLD);
    CHECK(MPI_Comm_toint(MPI_COMM_SELF) == (int)(uintptr_t)MPI_COMM_SELF);
    CHECK(MPI_Comm_toint(MPI_COMM_NULL) == (int)(uintptr_t)MPI_COMM_NULL);
    CHECK(MPI_Comm_fromint((int)(uintptr_t)MPI_COMM_WORLD) == MPI_COMM_WORLD);
    CHECK(MPI_Comm_fromint((int)(uintptr_t)MPI_COMM_SELF) == MPI_COMM_SELF);
    CHECK(MPI_Group_toint(MPI_GROUP_EMPTY) == (int)(uintptr_t)MPI_GROUP_EMPTY);
    CHECK(MPI_Group_fromint((int)(uintptr_t)MPI_GROUP_EMPTY) == MPI_GROUP_EMPTY);
    CHECK(MPI_Type_toint(MPI_DOUBLE) == (int)(uintptr_t)MPI_DOUBLE);
    CHECK(MPI_Type_fromint((int)(uintptr_t)MPI_DOUBLE) == MPI_DOUBLE);
    CHECK(MPI_Op_toint(MPI_MAXLOC) == (int)(uintptr_t)MPI_MAXLOC);
    CHECK(MPI_Op_fromint((int)(uintptr_t)MPI_MAXLOC) == MPI_MAXLOC);
    CHECK(MPI_Info_toint(MPI_INFO_ENV) == (int)(uintptr_t)MPI_INFO_ENV);
    CHECK(MPI_Info_fromint((int)(uintptr_t)MPI_INFO_ENV) == MPI_INFO_ENV);
    CHECK(MPI_Errhandler_toint(MPI_ERRORS_RETURN) == (int)(uintptr_t)MPI_ERRORS_RETURN);
    CHECK(MPI_Errhandler_fromint((int)(uintptr_t)MPI_ERRORS_RETURN) == MPI_ERRORS_RETURN);
    CHECK(MPI_Errhandler_fromint((int)(uintptr_t)MPI_ERRORS_ARE_FATAL) == MPI_ERRORS_ARE_FATAL);
    CHECK(MPI_Request_toint(MPI_REQUEST_NULL) == (int)(uintptr_t)MPI_REQUEST_NULL);
    CHECK(MPI_Request_fromint((int)(uintptr_t)MPI_REQUEST_NULL) == MPI_REQUEST_NULL);
    MPI_Finalize();
}

/* More objects than the first chunk holds: every one valid and with its
 * own integer while it lives, none once freed. */
static void case_tables_grow_past_their_first_chunk(void)
{
    enum {
        N = 300
    };
    static MPI_Comm comms[N];
    static MPI_Datatype types[N];
    static int ints[N];

    init_returning();
    for (int i = 0; i < N; i++) {
        CHECK(MPI_Comm_dup(MPI_COMM_SELF, &comms[i]) == MPI_SUCCESS);
        CHECK(MPI_Type_contiguous(i + 1, MPI_CHAR, &types[i]) == MPI_SUCCESS);
    }
    for (int i = 0; i < N; i++) {
        int size;

        CHECK(MPI_Type_size(types[i], &size) == MPI_SUCCESS && size == i + 1);
        CHECK(use_comm(comms[i]) == MPI_SUCCESS);
        ints[i] = MPI_Type_toint(types[i]);
        CHECK(MPI_Type_fromint(ints[i]) == types[i]);
        CHECK(MPI_Comm_fromint(MPI_Comm_toint(comms[i])) == comms[i]);
        for (int j = 0; j < i; j += 37)
            CHECK(ints[j] != ints[i]);
    }
    for (int i = 0; i < N; i++) {
        MPI_Datatype t = types[i];

        CHECK(MPI_Type_free(&types[i]) == MPI_SUCCESS);
        CHECK(use_type(t) == MPI_ERR_TYPE);
        CHECK(MPI_Type_fromint(ints[i]) == MPI_DATATYPE_NULL);
    }
    MPI_Finalize(); /* frees the communicators */
}

static atomic_int stop;

/* Create and free infos and datatypes until told to stop, growing both
 * tables. */
static void *churn(void *arg)
{
    enum {
        N = 200
    };
    MPI_Info infos[N];
    MPI_Datatype types[N];

    (void)arg;
    while (!atomic_load(&stop)) {
        for (int i = 0; i < N; i++) {
            if (MPI_Info_create(&infos[i]) != MPI_SUCCESS ||
                MPI_Type_contiguous(2, MPI_INT, &types[i]) != MPI_SUCCESS)
                abort();
        }
        for (int i = 0; i < N; i++) {
            if (MPI_Info_free(&infos[i]) != MPI_SUCCESS || MPI_Type_free(&types[i]) != MPI_SUCCESS)
                abort();
        }
    }
    return NULL;
}

/* One thread validates handles of two kinds while another creates and
 * frees objects of those kinds (the datatype and info calls need no
 * MPI_Init). */
static void case_validation_while_another_thread_creates(void)
{
    MPI_Datatype t;
    MPI_Info info;
    pthread_t thread;

    CHECK(MPI_Type_contiguous(5, MPI_INT, &t) == MPI_SUCCESS);
    CHECK(MPI_Info_create(&info) == MPI_SUCCESS);
    CHECK(pthread_create(&thread, NULL, churn, NULL) == 0);
    for (int i = 0; i < 200000; i++) {
        int size, nkeys;

        CHECK(MPI_Type_size(t, &size) == MPI_SUCCESS && size == 5 * (int)sizeof(int));
        CHECK(MPI_Info_get_nkeys(info, &nkeys) == MPI_SUCCESS && nkeys == 0);
    }
    atomic_store(&stop, 1);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(MPI_Type_free(&t) == MPI_SUCCESS);
    CHECK(MPI_Info_free(&info) == MPI_SUCCESS);
}

int main(int argc, char **argv)
{
    static const pbt_case_t cases[] = {
        PBT_CASE(garbage_handle_of_each_kind_gets_its_class),
        PBT_CASE(misaligned_handle_of_each_kind_gets_its_class),
        PBT_CASE(freed_handle_of_each_kind_gets_its_class),
        PBT_CASE(garbage_handle_is_fatal_with_a_message_not_a_crash),
        PBT_CASE(toint_fromint_round_trip_each_kind),
        PBT_CASE(toint_fromint_predefined_values),
        PBT_CASE(tables_grow_past_their_first_chunk),
        PBT_CASE(validation_while_another_thread_creates),
    };

    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
