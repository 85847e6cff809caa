/*
 * Error classes and their messages.  Every error code libmpi_abi returns
 * is one of the standard's error classes, so a code is its own class; user
 * classes and codes (MPI_Add_error_class, _code) come with the rest of the
 * error handling.
 */
#include <string.h>

#include "mpi/mpi_impl.h"

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

/* the message of @code, or NULL when @code is no error class or MPI_T code */
static const char *pb_mpi_error_message(int code)
{
    if (code >= 0 && code < (int)PB_ARRAY_SIZE(class_messages))
        return class_messages[code];
    if (code >= MPI_T_ERR_CANNOT_INIT && code <= MPI_T_ERR_PVAR_NO_ATOMIC)
        return tool_messages[code - MPI_T_ERR_CANNOT_INIT];
    return NULL;
}

/* Store the error class of @errorcode in @errorclass.  Every code this
 * library returns is a class, so this is the identity on the classes of
 * the standard (MPI_SUCCESS..MPI_ERR_ABI) and on the MPI_T codes.
 * @return MPI_SUCCESS; MPI_ERR_ARG when @errorclass is NULL or @errorcode
 * is no code this library knows. */
PB_EXPORT int PMPI_Error_class(int errorcode, int *errorclass)
{
    if (errorclass == NULL || pb_mpi_error_message(errorcode) == NULL)
        return MPI_ERR_ARG;
    *errorclass = errorcode;
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
