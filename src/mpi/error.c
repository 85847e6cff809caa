/*
 * Error classes and their messages.  Every error code libmpi_abi returns
 * is one of the standard's error classes, so a code is its own class.
 *
 * The program's own classes and codes (MPI_Add_error_class, _code) are
 * numbered from USER_FIRST (above every predefined class and MPI_T code) up
 * to MPI_ERR_LASTCODE, in the order they are added; a removed one's value
 * is not handed out again.  Each may have a message (MPI_Add_error_string).
 * MPI_LASTUSEDCODE is the largest value handed out so far.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi/error.h"

/* one message per error class of MPI-5.0, indexed by class */
static const char *const class_messages[] = {
    [MPI_SUCCESS] = "success",
    [MPI_ERR_BUFFER] = "invalid buffer pointer",
    [MPI_ERR_COUNT] = "invalid count argument",
    [MPI_ERR_TYPE] = "invalid datatype",
    [MPI_ERR_TAG] = "invalid tag",
    [MPI_ERR_COMM] = "invalid communicator",
    [MPI_ERR_RANK] = "invalid rank",
    [MPI_ERR_REQUEST] = "invalid request",
    [MPI_ERR_ROOT] = "invalid root",
    [MPI_ERR_GROUP] = "invalid group",
    [MPI_ERR_OP] = "invalid operation",
    [MPI_ERR_TOPOLOGY] = "invalid topology",
    [MPI_ERR_DIMS] = "invalid dimension argument",
    [MPI_ERR_ARG] = "invalid argument",
    [MPI_ERR_UNKNOWN] = "unknown error",
    [MPI_ERR_TRUNCATE] = "message truncated: the receive buffer is too small",
    [MPI_ERR_OTHER] = "other error",
    [MPI_ERR_INTERN] = "internal error in the MPI library",
    [MPI_ERR_PENDING] = "request pending",
    [MPI_ERR_IN_STATUS] = "error code is in the status",
    [MPI_ERR_ACCESS] = "permission denied",
    [MPI_ERR_AMODE] = "invalid file access mode",
    [MPI_ERR_ASSERT] = "invalid assert argument",
    [MPI_ERR_BAD_FILE] = "invalid file name",
    [MPI_ERR_BASE] = "invalid base address",
    [MPI_ERR_CONVERSION] = "data conversion failed",
    [MPI_ERR_DISP] = "invalid displacement",
    [MPI_ERR_DUP_DATAREP] = "data representation already registered",
    [MPI_ERR_FILE_EXISTS] = "file exists",
    [MPI_ERR_FILE_IN_USE] = "file in use by another process",
    [MPI_ERR_FILE] = "invalid file handle",
    [MPI_ERR_INFO_KEY] = "info key too long",
    [MPI_ERR_INFO_NOKEY] = "info key not defined",
    [MPI_ERR_INFO_VALUE] = "info value too long",
    [MPI_ERR_INFO] = "invalid info object",
    [MPI_ERR_IO] = "input/output error",
    [MPI_ERR_KEYVAL] = "invalid attribute key",
    [MPI_ERR_LOCKTYPE] = "invalid lock type",
    [MPI_ERR_NAME] = "service name not published",
    [MPI_ERR_NO_MEM] = "out of memory for MPI_Alloc_mem",
    [MPI_ERR_NOT_SAME] = "arguments differ between processes of a collective call",
    [MPI_ERR_NO_SPACE] = "no space left on device",
    [MPI_ERR_NO_SUCH_FILE] = "no such file",
    [MPI_ERR_PORT] = "invalid port name",
    [MPI_ERR_QUOTA] = "disk quota exceeded",
    [MPI_ERR_READ_ONLY] = "file is read-only",
    [MPI_ERR_RMA_ATTACH] = "memory cannot be attached to the window",
    [MPI_ERR_RMA_CONFLICT] = "conflicting accesses to a window",
    [MPI_ERR_RMA_RANGE] = "access outside the window or the attached memory",
    [MPI_ERR_RMA_SHARED] = "memory cannot be shared",
    [MPI_ERR_RMA_SYNC] = "wrong synchronization of a one-sided operation",
    [MPI_ERR_SERVICE] = "invalid service name",
    [MPI_ERR_SIZE] = "invalid size argument",
    [MPI_ERR_SPAWN] = "processes could not be spawned",
    [MPI_ERR_UNSUPPORTED_DATAREP] = "unsupported data representation",
    [MPI_ERR_UNSUPPORTED_OPERATION] = "operation not supported on this file",
    [MPI_ERR_WIN] = "invalid window",
    [MPI_ERR_RMA_FLAVOR] = "wrong window flavor for this operation",
    [MPI_ERR_PROC_ABORTED] = "a peer process aborted",
    [MPI_ERR_VALUE_TOO_LARGE] = "value too large for the output argument",
    [MPI_ERR_SESSION] = "invalid session",
    [MPI_ERR_ERRHANDLER] = "invalid error handler",
    [MPI_ERR_ABI] = "ABI information cannot be set or is inconsistent",
};

/* the return codes of the MPI_T functions, from MPI_T_ERR_CANNOT_INIT up */
static const char *const tool_messages[] = {
    [MPI_T_ERR_CANNOT_INIT - MPI_T_ERR_CANNOT_INIT] = "the tool interface cannot be initialized",
    [MPI_T_ERR_NOT_ACCESSIBLE - MPI_T_ERR_CANNOT_INIT] = "the tool interface is not accessible",
    [MPI_T_ERR_NOT_INITIALIZED - MPI_T_ERR_CANNOT_INIT] = "the tool interface is not initialized",
    [MPI_T_ERR_NOT_SUPPORTED - MPI_T_ERR_CANNOT_INIT] = "not supported by the tool interface",
    [MPI_T_ERR_MEMORY - MPI_T_ERR_CANNOT_INIT] = "out of memory in the tool interface",
    [MPI_T_ERR_INVALID - MPI_T_ERR_CANNOT_INIT] = "invalid use of the tool interface",
    [MPI_T_ERR_INVALID_INDEX - MPI_T_ERR_CANNOT_INIT] = "invalid tool interface index",
    [MPI_T_ERR_INVALID_ITEM - MPI_T_ERR_CANNOT_INIT] = "invalid item index of an enumeration",
    [MPI_T_ERR_INVALID_SESSION - MPI_T_ERR_CANNOT_INIT] = "invalid performance variable session",
    [MPI_T_ERR_INVALID_HANDLE - MPI_T_ERR_CANNOT_INIT] = "invalid tool interface handle",
    [MPI_T_ERR_INVALID_NAME - MPI_T_ERR_CANNOT_INIT] = "invalid tool interface variable name",
    [MPI_T_ERR_OUT_OF_HANDLES - MPI_T_ERR_CANNOT_INIT] = "out of tool interface handles",
    [MPI_T_ERR_OUT_OF_SESSIONS - MPI_T_ERR_CANNOT_INIT] = "out of performance variable sessions",
    [MPI_T_ERR_CVAR_SET_NOT_NOW - MPI_T_ERR_CANNOT_INIT] = "control variable cannot be set now",
    [MPI_T_ERR_CVAR_SET_NEVER - MPI_T_ERR_CANNOT_INIT] = "control variable can never be set",
    [MPI_T_ERR_PVAR_NO_WRITE - MPI_T_ERR_CANNOT_INIT] = "performance variable cannot be written",
    [MPI_T_ERR_PVAR_NO_STARTSTOP - MPI_T_ERR_CANNOT_INIT] =
        "performance variable cannot be started or stopped",
    [MPI_T_ERR_PVAR_NO_ATOMIC - MPI_T_ERR_CANNOT_INIT] =
        "performance variable cannot be read and reset atomically",
};

/* the first value of the program's classes and codes */
#define USER_FIRST (MPI_T_ERR_PVAR_NO_ATOMIC + 1)

/* a class or code of the program's */
typedef struct {
    int live;     /* added and not removed */
    int class_of; /* its class (itself for a class) */
    char *string; /* its message (MPI_Add_error_string), or NULL */
} user_code_t;

static struct {
    user_code_t *codes; /* codes[i] is value USER_FIRST + i */
    int n, cap;         /* values handed out; allocated */
} user;

/* The program's live class or code @code, or NULL. */
static user_code_t *user_code(int code)
{
    if (code < USER_FIRST || code - USER_FIRST >= user.n || !user.codes[code - USER_FIRST].live)
        return NULL;
    return &user.codes[code - USER_FIRST];
}

int pb_mpi_error_last_used(void)
{
    return USER_FIRST - 1 + user.n;
}

/* the message of @code, or NULL when @code is no error class or code */
static const char *pb_mpi_error_message(int code)
{
    const user_code_t *u = user_code(code);

    if (code >= 0 && code < (int)PB_ARRAY_SIZE(class_messages))
        return class_messages[code];
    if (code >= MPI_T_ERR_CANNOT_INIT && code <= MPI_T_ERR_PVAR_NO_ATOMIC)
        return tool_messages[code - MPI_T_ERR_CANNOT_INIT];
    if (u != NULL)
        return u->string != NULL ? u->string : "";
    return NULL;
}

/* Hand out the next value, of class @class_of (-1: the new value itself).
 * @return MPI_SUCCESS; MPI_ERR_NO_MEM; MPI_ERR_OTHER when every value up to
 * MPI_ERR_LASTCODE is taken. */
static int user_code_add(const char *func, int class_of, int *code_p)
{
    int code = USER_FIRST + user.n;

    if (code > MPI_ERR_LASTCODE)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "every error value up to MPI_ERR_LASTCODE (%d) is taken",
                            MPI_ERR_LASTCODE);
    if (user.n == user.cap) {
        int cap = user.cap ? 2 * user.cap : 16;
        user_code_t *codes = realloc(user.codes, (size_t)cap * sizeof(*codes));

        if (codes == NULL)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
        user.codes = codes;
        user.cap = cap;
    }
    user.codes[user.n++] = (user_code_t){1, class_of < 0 ? code : class_of, NULL};
    *code_p = code;
    return MPI_SUCCESS;
}

/* MPI_Add_error_class and the others need a running MPI (they change
 * MPI_COMM_WORLD's MPI_LASTUSEDCODE). */
static int user_codes_usable(const char *func)
{
    if (!pb_mpi_active())
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_OTHER, func,
                            "called before MPI_Init or after MPI_Finalize");
    return MPI_SUCCESS;
}

/* Make a new error class in *@errorclass (with the message "" until
 * MPI_Add_error_string); MPI_LASTUSEDCODE grows to it.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL); MPI_ERR_OTHER (no MPI running,
 * no value left); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Add_error_class(int *errorclass)
{
    PB_MPI_THREAD_GUARD;
    int rc = user_codes_usable("MPI_Add_error_class");

    if (rc != MPI_SUCCESS)
        return rc;
    if (errorclass == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Add_error_class",
                            "errorclass is NULL");
    return user_code_add("MPI_Add_error_class", -1, errorclass);
}
PB_MPI_WEAK_ALIAS(MPI_Add_error_class, PMPI_Add_error_class);

/* Make a new error code of class @errorclass (predefined or the
 * program's) in *@errorcode; MPI_LASTUSEDCODE grows to it.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL, no such class); MPI_ERR_OTHER;
 * MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Add_error_code(int errorclass, int *errorcode)
{
    PB_MPI_THREAD_GUARD;
    const user_code_t *u = user_code(errorclass);
    int rc = user_codes_usable("MPI_Add_error_code");

    if (rc != MPI_SUCCESS)
        return rc;
    if (errorcode == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Add_error_code", "errorcode is NULL");
    if (!(errorclass >= 0 && errorclass < (int)PB_ARRAY_SIZE(class_messages)) &&
        (u == NULL || u->class_of != errorclass))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Add_error_code",
                            "%d is not an error class", errorclass);
    return user_code_add("MPI_Add_error_code", errorclass, errorcode);
}
PB_MPI_WEAK_ALIAS(MPI_Add_error_code, PMPI_Add_error_code);

/* Give the program's class or code @errorcode the message @string (which
 * replaces the one it had).
 * @return MPI_SUCCESS; MPI_ERR_ARG (a predefined or unknown value, a NULL
 * string, one of MPI_MAX_ERROR_STRING characters or more); MPI_ERR_OTHER;
 * MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Add_error_string(int errorcode, const char *string)
{
    PB_MPI_THREAD_GUARD;
    user_code_t *u = user_code(errorcode);
    char *copy;
    int rc = user_codes_usable("MPI_Add_error_string");

    if (rc != MPI_SUCCESS)
        return rc;
    if (u == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Add_error_string",
                            "%d is no error class or code added by the program", errorcode);
    if (string == NULL || strnlen(string, MPI_MAX_ERROR_STRING) >= MPI_MAX_ERROR_STRING)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Add_error_string",
                            string == NULL ? "string is NULL"
                                           : "string has MPI_MAX_ERROR_STRING characters or more");
    copy = strdup(string);
    if (copy == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Add_error_string", "out of memory");
    free(u->string);
    u->string = copy;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Add_error_string, PMPI_Add_error_string);

/* Remove the program's error class @errorclass (its message with it).
 * @return MPI_SUCCESS; MPI_ERR_ARG (not a class the program added, or
 * one with codes not yet removed); MPI_ERR_OTHER. */
PB_EXPORT int PMPI_Remove_error_class(int errorclass)
{
    PB_MPI_THREAD_GUARD;
    user_code_t *u = user_code(errorclass);
    int rc = user_codes_usable("MPI_Remove_error_class");

    if (rc != MPI_SUCCESS)
        return rc;
    if (u == NULL || u->class_of != errorclass)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Remove_error_class",
                            "%d is no error class added by the program", errorclass);
    for (int i = 0; i < user.n; i++) {
        if (user.codes[i].live && user.codes[i].class_of == errorclass &&
            USER_FIRST + i != errorclass)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Remove_error_class",
                                "class %d still has code %d (remove it first)", errorclass,
                                USER_FIRST + i);
    }
    free(u->string);
    *u = (user_code_t){0, 0, NULL};
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Remove_error_class, PMPI_Remove_error_class);

/* Remove the program's error code @errorcode.
 * @return MPI_SUCCESS; MPI_ERR_ARG (not a code the program added, or one
 * whose message is not yet removed); MPI_ERR_OTHER. */
PB_EXPORT int PMPI_Remove_error_code(int errorcode)
{
    PB_MPI_THREAD_GUARD;
    user_code_t *u = user_code(errorcode);
    int rc = user_codes_usable("MPI_Remove_error_code");

    if (rc != MPI_SUCCESS)
        return rc;
    if (u == NULL || u->class_of == errorcode)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Remove_error_code",
                            "%d is no error code added by the program", errorcode);
    if (u->string != NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Remove_error_code",
                            "code %d still has a message (MPI_Remove_error_string first)",
                            errorcode);
    *u = (user_code_t){0, 0, NULL};
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Remove_error_code, PMPI_Remove_error_code);

/* Remove the message of the program's class or code @errorcode (its
 * message is "" again).
 * @return MPI_SUCCESS; MPI_ERR_ARG (not the program's, or without a
 * message); MPI_ERR_OTHER. */
PB_EXPORT int PMPI_Remove_error_string(int errorcode)
{
    PB_MPI_THREAD_GUARD;
    user_code_t *u = user_code(errorcode);
    int rc = user_codes_usable("MPI_Remove_error_string");

    if (rc != MPI_SUCCESS)
        return rc;
    if (u == NULL || u->string == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Remove_error_string",
                            "%d has no message added by MPI_Add_error_string", errorcode);
    free(u->string);
    u->string = NULL;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Remove_error_string, PMPI_Remove_error_string);

/* Store the error class of @errorcode in @errorclass.  Every code this
 * library returns is a class, so this is the identity on the classes of
 * the standard (MPI_SUCCESS..MPI_ERR_ABI) and on the MPI_T codes; a code
 * of the program's (MPI_Add_error_code) gives the class it was added to.
 * @return MPI_SUCCESS; MPI_ERR_ARG when @errorclass is NULL or @errorcode
 * is no code this library knows. */
PB_EXPORT int PMPI_Error_class(int errorcode, int *errorclass)
{
    PB_MPI_THREAD_GUARD;
    const user_code_t *u = user_code(errorcode);

    if (errorclass == NULL || pb_mpi_error_message(errorcode) == NULL)
        return MPI_ERR_ARG;
    *errorclass = u != NULL ? u->class_of : errorcode;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Error_class, PMPI_Error_class);

/* Write the message of @errorcode, NUL-terminated, into @string (which
 * holds MPI_MAX_ERROR_STRING chars) and its length without the NUL into
 * @resultlen.
 * @return MPI_SUCCESS; MPI_ERR_ARG when a pointer is NULL or @errorcode is
 * no code this library knows (@string is then left unchanged). */
PB_EXPORT int PMPI_Error_string(int errorcode, char *string, int *resultlen)
{
    PB_MPI_THREAD_GUARD;
    const char *message = pb_mpi_error_message(errorcode);
    size_t len;

    if (string == NULL || resultlen == NULL || message == NULL)
        return MPI_ERR_ARG;
    len = strlen(message);
    memcpy(string, message, len + 1);
    *resultlen = (int)len;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Error_string, PMPI_Error_string);
