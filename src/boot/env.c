/*
 * Taking a value out of the environment so that no trace of it is left.
 */
#include "boot/env.h"

#include <stdlib.h>
#include <string.h>

int pb_boot_env_take(const char *name, char *value, size_t len)
{
    extern char **environ;
    size_t name_len = strlen(name);
    char *entry = NULL;
    int got = 0;

    for (char **env = environ; env != NULL && *env != NULL; env++) {
        if (strncmp(*env, name, name_len) == 0 && (*env)[name_len] == '=') {
            entry = *env;
            break;
        }
    }
    if (entry == NULL)
        return 0;
    if (strlen(entry + name_len + 1) < len) {
        memcpy(value, entry + name_len + 1, strlen(entry + name_len + 1) + 1);
        got = 1;
    } else {
        got = -1;
        if (len > 0)
            value[0] = '\0';
    }
    /* unsetenv only drops the pointer from environ: the bytes stay where
     * the kernel put them (and /proc/<pid>/environ shows them) unless
     * wiped (a second "NAME=" entry, which no launcher makes, is unset but
     * not wiped) */
    unsetenv(name);
    explicit_bzero(entry, strlen(entry));
    return got;
}
