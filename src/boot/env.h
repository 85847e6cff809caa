/*
 * Values handed to a process in its environment that must not stay there:
 * the job secret and the PMI token.  Removing a variable with unsetenv
 * leaves its bytes where the kernel put them at exec, readable in
 * /proc/<pid>/environ by the process's user and root; these are wiped.
 */
#ifndef PB_BOOT_ENV_H
#define PB_BOOT_ENV_H

#include <stddef.h>

/* Take the environment variable @name: copy its value to @value (@len
 * bytes, NUL terminated), remove it from the environment and overwrite the
 * bytes of the original "NAME=value" string, so that it is gone from
 * /proc/<pid>/environ too.  For the job secret and the PMI token.
 * @return 1 if it was set, 0 if not, -1 if its value did not fit in @len
 * (it is removed and wiped all the same; @value is then ""). */
int pb_boot_env_take(const char *name, char *value, size_t len);

#endif
