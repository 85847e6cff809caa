/*
 * The ABI's handle conversions (MPI-5.0 section 20.3.4) for the objects
 * that carry no integer of their own: communicators and error handlers
 * (made by comm.c), and windows, files, sessions and messages, of which
 * Postbox has only the predefined handles.  (Groups, infos, datatypes and
 * ops convert in group.c, info.c, datatype.c and op.c.)
 *
 * A predefined handle converts to its ABI value and back.  A created
 * communicator or error handler gets, on its first MPI_X_toint, the next
 * integer of a table of its kind (PB_MPI_HANDLE_INT_BASE + index) and
 * keeps it: a table entry is only reused once the communicator it names is
 * no longer live (error handlers are never released by comm.c).
 */
#include <stdlib.h>

#include "mpi/comm.h"
#include "mpi/datatype.h"

typedef struct {
    void **objs;
    int n, cap;
} handle_table_t;

static handle_table_t comm_table, errhandler_table;

/* The index of @obj in @t, added if absent (reusing an entry @dead says is
 * free), or -1 when out of memory. */
static int table_index(handle_table_t *t, void *obj, int (*dead)(void *))
{
    int free_at = -1;

    for (int i = 0; i < t->n; i++) {
        if (t->objs[i] == obj)
            return i;
        if (free_at < 0 && dead != NULL && dead(t->objs[i]))
            free_at = i;
    }
    if (free_at >= 0) {
        t->objs[free_at] = obj;
        return free_at;
    }
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        void **objs = realloc(t->objs, (size_t)cap * sizeof(*objs));

        if (objs == NULL)
            return -1;
        t->objs = objs;
        t->cap = cap;
    }
    t->objs[t->n] = obj;
    return t->n++;
}

/* The object of integer @value in @t, or NULL. */
static void *table_at(const handle_table_t *t, int value)
{
    long i = (long)value - PB_MPI_HANDLE_INT_BASE;

    return i >= 0 && i < t->n ? t->objs[i] : NULL;
}

static int comm_dead(void *obj)
{
    return pb_mpi_comm((MPI_Comm)obj) == NULL;
}

/* The integer of @comm: MPI_COMM_NULL's, MPI_COMM_WORLD's or
 * MPI_COMM_SELF's ABI value, or the one a created communicator was given.
 * A handle that is no live communicator raises MPI_ERR_COMM and gives
 * MPI_COMM_NULL's. */
PB_EXPORT int PMPI_Comm_toint(MPI_Comm comm)
{
    int i;

    if ((uintptr_t)comm < PB_MPI_HANDLE_INT_BASE)
        return (int)(uintptr_t)comm;
    if (pb_mpi_comm(comm) == NULL) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_toint",
                     "comm (%p) is not a communicator (freed, or never created)", (void *)comm);
        return (int)(uintptr_t)MPI_COMM_NULL;
    }
    i = table_index(&comm_table, comm, comm_dead);
    if (i < 0) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Comm_toint", "out of memory");
        return (int)(uintptr_t)MPI_COMM_NULL;
    }
    return PB_MPI_HANDLE_INT_BASE + i;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_toint, PMPI_Comm_toint);

/* The communicator of integer @comm (MPI_Comm_toint), or MPI_COMM_NULL
 * when no live communicator has it. */
PB_EXPORT MPI_Comm PMPI_Comm_fromint(int comm)
{
    MPI_Comm c;

    if (comm == (int)(uintptr_t)MPI_COMM_WORLD || comm == (int)(uintptr_t)MPI_COMM_SELF)
        return (MPI_Comm)(uintptr_t)comm;
    c = (MPI_Comm)table_at(&comm_table, comm);
    return c != NULL && pb_mpi_comm(c) != NULL ? c : MPI_COMM_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Comm_fromint, PMPI_Comm_fromint);

/* The integer of @errhandler: a predefined handler's ABI value
 * (MPI_ERRHANDLER_NULL, MPI_ERRORS_ARE_FATAL, _ABORT, _RETURN), or the one
 * a handler of MPI_Comm_create_errhandler was given.  Out of memory raises
 * MPI_ERR_NO_MEM and gives MPI_ERRHANDLER_NULL's. */
PB_EXPORT int PMPI_Errhandler_toint(MPI_Errhandler errhandler)
{
    int i;

    if ((uintptr_t)errhandler < PB_MPI_HANDLE_INT_BASE)
        return (int)(uintptr_t)errhandler;
    i = table_index(&errhandler_table, errhandler, NULL);
    if (i < 0) {
        pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Errhandler_toint", "out of memory");
        return (int)(uintptr_t)MPI_ERRHANDLER_NULL;
    }
    return PB_MPI_HANDLE_INT_BASE + i;
}
PB_MPI_WEAK_ALIAS(MPI_Errhandler_toint, PMPI_Errhandler_toint);

/* The error handler of integer @errhandler (MPI_Errhandler_toint), or
 * MPI_ERRHANDLER_NULL for an integer no handler was given. */
PB_EXPORT MPI_Errhandler PMPI_Errhandler_fromint(int errhandler)
{
    void *e;

    if (errhandler == (int)(uintptr_t)MPI_ERRORS_ARE_FATAL ||
        errhandler == (int)(uintptr_t)MPI_ERRORS_ABORT ||
        errhandler == (int)(uintptr_t)MPI_ERRORS_RETURN)
        return (MPI_Errhandler)(uintptr_t)errhandler;
    e = table_at(&errhandler_table, errhandler);
    return e != NULL ? (MPI_Errhandler)e : MPI_ERRHANDLER_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Errhandler_fromint, PMPI_Errhandler_fromint);

/* ---- objects Postbox does not make: only their predefined handles ------------------- */

/* The integer of a handle of a kind Postbox never creates: its ABI value
 * when it is predefined; any other value is no handle (raises
 * MPI_ERR_ARG) and gives @null's. */
static int predefined_only_toint(uintptr_t handle, uintptr_t null, const char *func)
{
    if (handle < PB_MPI_HANDLE_INT_BASE)
        return (int)handle;
    pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, func,
                 "the handle (%p) is not one (Postbox makes no such objects yet)", (void *)handle);
    return (int)null;
}

/* MPI_WIN_NULL converts to its ABI value (0x110) and back; no window
 * exists yet, so any other integer gives MPI_WIN_NULL. */
PB_EXPORT int PMPI_Win_toint(MPI_Win win)
{
    return predefined_only_toint((uintptr_t)win, (uintptr_t)MPI_WIN_NULL, "MPI_Win_toint");
}
PB_MPI_WEAK_ALIAS(MPI_Win_toint, PMPI_Win_toint);

PB_EXPORT MPI_Win PMPI_Win_fromint(int win)
{
    (void)win;
    return MPI_WIN_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Win_fromint, PMPI_Win_fromint);

/* MPI_FILE_NULL converts to its ABI value (0x118) and back; no file is
 * ever open, so any other integer gives MPI_FILE_NULL. */
PB_EXPORT int PMPI_File_toint(MPI_File file)
{
    return predefined_only_toint((uintptr_t)file, (uintptr_t)MPI_FILE_NULL, "MPI_File_toint");
}
PB_MPI_WEAK_ALIAS(MPI_File_toint, PMPI_File_toint);

PB_EXPORT MPI_File PMPI_File_fromint(int file)
{
    (void)file;
    return MPI_FILE_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_File_fromint, PMPI_File_fromint);

/* MPI_SESSION_NULL converts to its ABI value (0x120) and back; no session
 * exists yet, so any other integer gives MPI_SESSION_NULL. */
PB_EXPORT int PMPI_Session_toint(MPI_Session session)
{
    return predefined_only_toint((uintptr_t)session, (uintptr_t)MPI_SESSION_NULL,
                                 "MPI_Session_toint");
}
PB_MPI_WEAK_ALIAS(MPI_Session_toint, PMPI_Session_toint);

PB_EXPORT MPI_Session PMPI_Session_fromint(int session)
{
    (void)session;
    return MPI_SESSION_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Session_fromint, PMPI_Session_fromint);

/* MPI_MESSAGE_NULL and MPI_MESSAGE_NO_PROC convert to their ABI values
 * (0x128, 0x129) and back; no matched message exists yet (MPI_Mprobe is
 * not built), so any other integer gives MPI_MESSAGE_NULL. */
PB_EXPORT int PMPI_Message_toint(MPI_Message message)
{
    return predefined_only_toint((uintptr_t)message, (uintptr_t)MPI_MESSAGE_NULL,
                                 "MPI_Message_toint");
}
PB_MPI_WEAK_ALIAS(MPI_Message_toint, PMPI_Message_toint);

PB_EXPORT MPI_Message PMPI_Message_fromint(int message)
{
    return message == (int)(uintptr_t)MPI_MESSAGE_NO_PROC ? MPI_MESSAGE_NO_PROC : MPI_MESSAGE_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Message_fromint, PMPI_Message_fromint);
