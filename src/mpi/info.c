/*
 * Info objects: ordered lists of (key, value) strings (MPI-5.0 chapter 10),
 * and MPI_INFO_ENV, the read-only info of how the program was started.
 *
 * A created info is an object of the handle registry (handle.h), so a
 * freed or made-up handle is reported as MPI_ERR_INFO, never read; the
 * registry also gives its integer for MPI_Info_toint.  Keys keep the order
 * they were first set in (MPI_Info_get_nthkey).  Keys are 1 to
 * MPI_MAX_INFO_KEY - 1 characters, values at most MPI_MAX_INFO_VAL - 1 (the
 * C buffers of those sizes hold them with their NUL).
 *
 * Every function may be called before MPI_Init and after MPI_Finalize (an
 * error then goes to MPI_ERRORS_ARE_FATAL, as MPI_COMM_SELF has no handler
 * yet).
 */
#include "mpi/info.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "mpi/comm.h"
#include "mpi/engine/handle.h"

typedef struct {
    char *key;
    char *value;
} info_entry_t;

struct MPI_ABI_Info {
    int n;           /* entries in use */
    int cap;         /* entries allocated */
    info_entry_t *e; /* in the order the keys were first set */
};

typedef struct MPI_ABI_Info pb_info_t;

/* MPI_INFO_ENV, filled on first use (again once MPI_Init has run, to add
 * what only a running job knows) */
static struct {
    pb_info_t info;
    int filled; /* 0: not yet; 1: before MPI_Init; 2: with the job */
} env;

static void info_clear(pb_info_t *info)
{
    for (int i = 0; i < info->n; i++) {
        free(info->e[i].key);
        free(info->e[i].value);
    }
    free(info->e);
    info->e = NULL;
    info->n = info->cap = 0;
}

static int info_find(const pb_info_t *info, const char *key)
{
    for (int i = 0; i < info->n; i++) {
        if (strcmp(info->e[i].key, key) == 0)
            return i;
    }
    return -1;
}

/* Set @key to @value in @info.  MPI_SUCCESS or MPI_ERR_NO_MEM. */
static int info_put(pb_info_t *info, const char *key, const char *value)
{
    int i = info_find(info, key);
    char *v = strdup(value), *k = NULL;

    if (v == NULL)
        return MPI_ERR_NO_MEM;
    if (i >= 0) {
        free(info->e[i].value);
        info->e[i].value = v;
        return MPI_SUCCESS;
    }
    if (info->n == info->cap) {
        int cap = info->cap ? 2 * info->cap : 8;
        info_entry_t *e = realloc(info->e, (size_t)cap * sizeof(*e));

        if (e == NULL) {
            free(v);
            return MPI_ERR_NO_MEM;
        }
        info->e = e;
        info->cap = cap;
    }
    k = strdup(key);
    if (k == NULL) {
        free(v);
        return MPI_ERR_NO_MEM;
    }
    info->e[info->n++] = (info_entry_t){k, v};
    return MPI_SUCCESS;
}

/* The command line of this process from /proc/self/cmdline: "command" is
 * argv[0], "argv" the other arguments separated by spaces. */
static void env_command_line(pb_info_t *info)
{
    char buf[MPI_MAX_INFO_VAL * 2], args[MPI_MAX_INFO_VAL];
    size_t len = 0, at = 0;
    FILE *f = fopen("/proc/self/cmdline", "r");

    if (f == NULL)
        return;
    len = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[len] = '\0';
    if (len == 0)
        return;
    if (strlen(buf) < MPI_MAX_INFO_VAL)
        info_put(info, "command", buf);
    args[0] = '\0';
    for (size_t i = strlen(buf) + 1; i < len; i += strlen(buf + i) + 1) {
        size_t n = strlen(buf + i);

        if (at + n + 2 > sizeof(args))
            break; /* longer than a value may be: the first arguments only */
        if (at > 0)
            args[at++] = ' ';
        memcpy(args + at, buf + i, n + 1);
        at += n;
    }
    if (at > 0)
        info_put(info, "argv", args);
}

/* The name of thread level @level (MPI_THREAD_SINGLE ...). */
static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "MPI_THREAD_SINGLE";
    }
}

/* The number of ranks of the job: MPI_COMM_WORLD's size once MPI runs;
 * before, what the launcher told this process (PMI_SIZE), else 1 (a
 * program started alone). */
static int env_job_size(int active)
{
    const char *text = getenv("PMI_SIZE");
    long n = text != NULL ? strtol(text, NULL, 10) : 1;

    if (active)
        return pb_mpi_comm_world()->size; /* also when only sessions run */
    return n >= 1 && n <= INT_MAX ? (int)n : 1;
}

/* Fill MPI_INFO_ENV with every key of MPI-5.0 section 11.2.4: command and
 * argv (this process's command line; argv "" without arguments), maxprocs
 * and soft (the ranks of the job: Postbox takes no soft request),
 * host (the node's name), arch, wdir, file ("": Postbox reads no file of
 * further start-up information) and thread_level (the level the program
 * asked MPI_Init_thread for; MPI_THREAD_SINGLE for MPI_Init and before
 * MPI_Init). */
static pb_info_t *env_info(void)
{
    int active = pb_mpi_active(), len;
    char value[MPI_MAX_INFO_VAL];
    struct utsname uts;

    if (env.filled == (active ? 2 : 1) || (env.filled == 2 && !active))
        return &env.info;
    info_clear(&env.info);
    env_command_line(&env.info);
    if (info_find(&env.info, "argv") < 0)
        info_put(&env.info, "argv", "");
    snprintf(value, sizeof(value), "%d", env_job_size(active));
    info_put(&env.info, "maxprocs", value);
    info_put(&env.info, "soft", value);
    if (active && PMPI_Get_processor_name(value, &len) == MPI_SUCCESS)
        info_put(&env.info, "host", value);
    else if (gethostname(value, sizeof(value)) == 0) {
        value[sizeof(value) - 1] = '\0';
        info_put(&env.info, "host", value);
    }
    if (uname(&uts) == 0)
        info_put(&env.info, "arch", uts.machine);
    if (getcwd(value, sizeof(value)) != NULL)
        info_put(&env.info, "wdir", value);
    info_put(&env.info, "file", "");
    info_put(&env.info, "thread_level",
             thread_level_name(active ? pb_mpi_thread_requested() : MPI_THREAD_SINGLE));
    env.filled = active ? 2 : 1;
    return &env.info;
}

/* The info of @handle, or NULL (MPI_INFO_NULL, freed, made up). */
static pb_info_t *info_of(MPI_Info handle)
{
    if (handle == MPI_INFO_ENV)
        return env_info();
    if (!pb_eng_handle_valid(PB_ENG_HANDLE_INFO, handle))
        return NULL;
    return (pb_info_t *)handle;
}

int pb_mpi_info_check(MPI_Comm comm, MPI_Info info, int null_ok, const char *func)
{
    if (info == MPI_INFO_NULL) {
        if (null_ok)
            return MPI_SUCCESS;
        return pb_mpi_raise(comm, MPI_ERR_INFO, func, "info is MPI_INFO_NULL");
    }
    if (info_of(info) == NULL)
        return pb_mpi_raise(comm, MPI_ERR_INFO, func,
                            "info (%p) is not an info object (freed, or never created)",
                            (void *)info);
    return MPI_SUCCESS;
}

int pb_mpi_info_valid(MPI_Info info)
{
    return info != MPI_INFO_NULL && info_of(info) != NULL;
}

const char *pb_mpi_info_value(MPI_Info info, const char *key)
{
    pb_info_t *i = info == MPI_INFO_NULL ? NULL : info_of(info);
    int at = i != NULL ? info_find(i, key) : -1;

    return at >= 0 ? i->e[at].value : NULL;
}

/* ---- argument checks --------------------------------------------------------------- */

/* The info @handle of @func, or a raised MPI_ERR_INFO.  @writable: the
 * call changes it (MPI_INFO_ENV is read-only). */
static int info_arg(MPI_Info handle, const char *func, int writable, pb_info_t **info_p)
{
    int rc = pb_mpi_info_check(MPI_COMM_NULL, handle, 0, func);

    if (rc != MPI_SUCCESS)
        return rc;
    if (writable && handle == MPI_INFO_ENV)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_INFO, func, "MPI_INFO_ENV is read-only");
    *info_p = info_of(handle);
    return MPI_SUCCESS;
}

/* Check @key: MPI_ERR_INFO_KEY when NULL, empty or too long. */
static int key_arg(const char *key, const char *func)
{
    if (key == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_INFO_KEY, func, "key is NULL");
    if (key[0] == '\0')
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_INFO_KEY, func, "key is empty");
    if (strnlen(key, MPI_MAX_INFO_KEY) >= MPI_MAX_INFO_KEY)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_INFO_KEY, func,
                            "key is longer than MPI_MAX_INFO_KEY - 1 (%d) characters",
                            MPI_MAX_INFO_KEY - 1);
    return MPI_SUCCESS;
}

static int new_info(const char *func, pb_info_t **info_p)
{
    pb_info_t *i = pb_eng_handle_new(PB_ENG_HANDLE_INFO, sizeof(*i));

    *info_p = i;
    if (i == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory");
    return MPI_SUCCESS;
}

static void delete_info(pb_info_t *i)
{
    info_clear(i);
    pb_eng_handle_delete(PB_ENG_HANDLE_INFO, i);
}

/* ---- the functions ----------------------------------------------------------------- */

/* Make *@info, an empty info object.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Info_create(MPI_Info *info)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i;
    int rc;

    if (info == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Info_create", "info is NULL");
    rc = new_info("MPI_Info_create", &i);
    if (rc == MPI_SUCCESS)
        *info = (MPI_Info)i;
    return rc;
}
PB_MPI_WEAK_ALIAS(MPI_Info_create, PMPI_Info_create);

/* Make *@info holding what MPI_INFO_ENV holds (every key of MPI-5.0
 * section 11.2.4, also before MPI_Init), with "command" and "argv" taken
 * from @argc and @argv when @argv is not NULL (MPI_ARGV_NULL).
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL info, negative argc);
 *         MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Info_create_env(int argc, char *argv[], MPI_Info *info)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i, *e = env_info();
    char args[MPI_MAX_INFO_VAL];
    size_t at = 0;
    int rc;

    if (info == NULL || argc < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Info_create_env",
                            info == NULL ? "info is NULL" : "argc %d is negative", argc);
    rc = new_info("MPI_Info_create_env", &i);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int k = 0; k < e->n && rc == MPI_SUCCESS; k++)
        rc = info_put(i, e->e[k].key, e->e[k].value);
    if (rc == MPI_SUCCESS && argv != NULL && argc > 0 && argv[0] != NULL &&
        strlen(argv[0]) < MPI_MAX_INFO_VAL) {
        rc = info_put(i, "command", argv[0]);
        args[0] = '\0';
        for (int k = 1; k < argc && argv[k] != NULL; k++) {
            size_t n = strlen(argv[k]);

            if (at + n + 2 > sizeof(args))
                break;
            if (at > 0)
                args[at++] = ' ';
            memcpy(args + at, argv[k], n + 1);
            at += n;
        }
        if (rc == MPI_SUCCESS)
            rc = info_put(i, "argv", args);
    }
    if (rc != MPI_SUCCESS) {
        delete_info(i);
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Info_create_env", "out of memory");
    }
    *info = (MPI_Info)i;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_create_env, PMPI_Info_create_env);

/* Set @key to @value in @info (replacing its value if it has one).
 * @return MPI_SUCCESS; MPI_ERR_INFO (not an info, MPI_INFO_ENV);
 *         MPI_ERR_INFO_KEY (NULL, empty, >= MPI_MAX_INFO_KEY chars);
 *         MPI_ERR_INFO_VALUE (NULL, >= MPI_MAX_INFO_VAL chars); MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Info_set(MPI_Info info, const char *key, const char *value)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i;
    int rc = info_arg(info, "MPI_Info_set", 1, &i);

    if (rc == MPI_SUCCESS)
        rc = key_arg(key, "MPI_Info_set");
    if (rc != MPI_SUCCESS)
        return rc;
    if (value == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_INFO_VALUE, "MPI_Info_set", "value is NULL");
    if (strnlen(value, MPI_MAX_INFO_VAL) >= MPI_MAX_INFO_VAL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_INFO_VALUE, "MPI_Info_set",
                            "value of %s is longer than MPI_MAX_INFO_VAL - 1 (%d) characters", key,
                            MPI_MAX_INFO_VAL - 1);
    if (info_put(i, key, value) != MPI_SUCCESS)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Info_set", "out of memory");
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_set, PMPI_Info_set);

/* Remove @key from @info.
 * @return MPI_SUCCESS; MPI_ERR_INFO; MPI_ERR_INFO_KEY; MPI_ERR_INFO_NOKEY
 *         (@info has no such key). */
PB_EXPORT int PMPI_Info_delete(MPI_Info info, const char *key)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i;
    int rc = info_arg(info, "MPI_Info_delete", 1, &i), at;

    if (rc == MPI_SUCCESS)
        rc = key_arg(key, "MPI_Info_delete");
    if (rc != MPI_SUCCESS)
        return rc;
    at = info_find(i, key);
    if (at < 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_INFO_NOKEY, "MPI_Info_delete",
                            "the info has no key %s", key);
    free(i->e[at].key);
    free(i->e[at].value);
    memmove(&i->e[at], &i->e[at + 1], (size_t)(i->n - at - 1) * sizeof(i->e[0]));
    i->n--;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_delete, PMPI_Info_delete);

/* Look up @key in @info: *@flag = whether it is there; if so, copy its
 * value into @value, at most *@buflen - 1 characters and a NUL (nothing when
 * *@buflen is 0), and set *@buflen to the value's length + 1.
 * @return MPI_SUCCESS; MPI_ERR_INFO; MPI_ERR_INFO_KEY; MPI_ERR_ARG (NULL
 *         buflen or flag, negative *buflen, NULL value with *buflen > 0). */
PB_EXPORT int PMPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value,
                                   int *flag)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i;
    int rc = info_arg(info, "MPI_Info_get_string", 0, &i), at;
    size_t len;

    if (rc == MPI_SUCCESS)
        rc = key_arg(key, "MPI_Info_get_string");
    if (rc != MPI_SUCCESS)
        return rc;
    if (buflen == NULL || flag == NULL || *buflen < 0 || (*buflen > 0 && value == NULL))
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Info_get_string",
                            buflen == NULL || flag == NULL ? "buflen or flag is NULL"
                            : *buflen < 0                  ? "buflen is negative"
                                                           : "value is NULL");
    at = info_find(i, key);
    *flag = at >= 0;
    if (at < 0)
        return MPI_SUCCESS;
    len = strlen(i->e[at].value);
    if (*buflen > 0) {
        size_t n = len < (size_t)*buflen - 1 ? len : (size_t)*buflen - 1;

        memcpy(value, i->e[at].value, n);
        value[n] = '\0';
    }
    *buflen = (int)len + 1;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_get_string, PMPI_Info_get_string);

/* Deprecated form of MPI_Info_get_string: copy at most @valuelen
 * characters of @key's value and a NUL into @value (which holds
 * @valuelen + 1 bytes); *@flag = whether @info has @key.
 * @return MPI_SUCCESS; MPI_ERR_INFO; MPI_ERR_INFO_KEY; MPI_ERR_ARG (NULL
 *         value or flag, @valuelen <= 0). */
PB_EXPORT int PMPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i;
    int rc = info_arg(info, "MPI_Info_get", 0, &i), at;

    if (rc == MPI_SUCCESS)
        rc = key_arg(key, "MPI_Info_get");
    if (rc != MPI_SUCCESS)
        return rc;
    if (value == NULL || flag == NULL || valuelen <= 0)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Info_get",
                            valuelen <= 0 ? "valuelen %d is not positive" : "value or flag is NULL",
                            valuelen);
    at = info_find(i, key);
    *flag = at >= 0;
    if (at >= 0) {
        size_t len = strlen(i->e[at].value), n = len < (size_t)valuelen ? len : (size_t)valuelen;

        memcpy(value, i->e[at].value, n);
        value[n] = '\0';
    }
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_get, PMPI_Info_get);

/* Deprecated: *@valuelen = the length of @key's value without its NUL,
 * *@flag = whether @info has @key.
 * @return MPI_SUCCESS; MPI_ERR_INFO; MPI_ERR_INFO_KEY; MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i;
    int rc = info_arg(info, "MPI_Info_get_valuelen", 0, &i), at;

    if (rc == MPI_SUCCESS)
        rc = key_arg(key, "MPI_Info_get_valuelen");
    if (rc != MPI_SUCCESS)
        return rc;
    if (valuelen == NULL || flag == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Info_get_valuelen",
                            "valuelen or flag is NULL");
    at = info_find(i, key);
    *flag = at >= 0;
    if (at >= 0)
        *valuelen = (int)strlen(i->e[at].value);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_get_valuelen, PMPI_Info_get_valuelen);

/* *@nkeys = the number of keys of @info.
 * @return MPI_SUCCESS; MPI_ERR_INFO; MPI_ERR_ARG (NULL). */
PB_EXPORT int PMPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i;
    int rc = info_arg(info, "MPI_Info_get_nkeys", 0, &i);

    if (rc != MPI_SUCCESS)
        return rc;
    if (nkeys == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Info_get_nkeys", "nkeys is NULL");
    *nkeys = i->n;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_get_nkeys, PMPI_Info_get_nkeys);

/* Copy the @n-th key of @info (0-based, in the order the keys were first
 * set) into @key, which holds MPI_MAX_INFO_KEY characters.
 * @return MPI_SUCCESS; MPI_ERR_INFO; MPI_ERR_ARG (@n not in 0..nkeys-1,
 *         NULL key). */
PB_EXPORT int PMPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i;
    int rc = info_arg(info, "MPI_Info_get_nthkey", 0, &i);

    if (rc != MPI_SUCCESS)
        return rc;
    if (key == NULL || n < 0 || n >= i->n)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Info_get_nthkey",
                            key == NULL ? "key is NULL" : "n %d is not in 0..%d", n, i->n - 1);
    snprintf(key, MPI_MAX_INFO_KEY, "%s", i->e[n].key);
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_get_nthkey, PMPI_Info_get_nthkey);

/* Make *@newinfo, a new info with the keys and values of @info, in the
 * same order.  @return MPI_SUCCESS; MPI_ERR_INFO; MPI_ERR_ARG (NULL);
 * MPI_ERR_NO_MEM. */
PB_EXPORT int PMPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i, *n;
    int rc = info_arg(info, "MPI_Info_dup", 0, &i);

    if (rc != MPI_SUCCESS)
        return rc;
    if (newinfo == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Info_dup", "newinfo is NULL");
    rc = new_info("MPI_Info_dup", &n);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int k = 0; k < i->n; k++) {
        if (info_put(n, i->e[k].key, i->e[k].value) != MPI_SUCCESS) {
            delete_info(n);
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Info_dup", "out of memory");
        }
    }
    *newinfo = (MPI_Info)n;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_dup, PMPI_Info_dup);

/* Free *@info and set it to MPI_INFO_NULL.
 * @return MPI_SUCCESS; MPI_ERR_ARG (NULL); MPI_ERR_INFO (not a created
 *         info: MPI_INFO_NULL, MPI_INFO_ENV, freed). */
PB_EXPORT int PMPI_Info_free(MPI_Info *info)
{
    PB_MPI_THREAD_GUARD;
    pb_info_t *i;
    int rc;

    if (info == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Info_free", "info is NULL");
    rc = info_arg(*info, "MPI_Info_free", 1, &i);
    if (rc != MPI_SUCCESS)
        return rc;
    delete_info(i);
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}
PB_MPI_WEAK_ALIAS(MPI_Info_free, PMPI_Info_free);

/* The integer of @info: a predefined handle's ABI value (MPI_INFO_NULL
 * 0x130, MPI_INFO_ENV 0x131), or the one a created info was given (from
 * PB_ENG_HANDLE_INT_BASE up).  A bad handle raises MPI_ERR_INFO and gives
 * MPI_INFO_NULL's. */
PB_EXPORT int PMPI_Info_toint(MPI_Info info)
{
    pb_info_t *i;

    if ((uintptr_t)info < PB_ENG_HANDLE_INT_BASE)
        return (int)(uintptr_t)info;
    if (info_arg(info, "MPI_Info_toint", 0, &i) != MPI_SUCCESS)
        return (int)(uintptr_t)MPI_INFO_NULL;
    return pb_eng_handle_toint(PB_ENG_HANDLE_INFO, i);
}
PB_MPI_WEAK_ALIAS(MPI_Info_toint, PMPI_Info_toint);

/* The info of integer @info (MPI_Info_toint), or MPI_INFO_NULL when no
 * live info has it. */
PB_EXPORT MPI_Info PMPI_Info_fromint(int info)
{
    void *i;

    if (info == (int)(uintptr_t)MPI_INFO_ENV)
        return MPI_INFO_ENV;
    if (info < PB_ENG_HANDLE_INT_BASE)
        return MPI_INFO_NULL;
    i = pb_eng_handle_fromint(PB_ENG_HANDLE_INFO, info);
    return i != NULL ? (MPI_Info)i : MPI_INFO_NULL;
}
PB_MPI_WEAK_ALIAS(MPI_Info_fromint, PMPI_Info_fromint);
