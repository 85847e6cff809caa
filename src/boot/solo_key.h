/*
 * The solo job's key: the secret of the job "solo-<uid>" that every
 * process of a user started outside a launcher belongs to.  It is 16
 * random bytes in a file only that user can read, created by the first
 * process that needs it:
 *
 *   $XDG_RUNTIME_DIR/postbox/solo-key   when XDG_RUNTIME_DIR names a
 *                                       directory of the user's alone
 *   /tmp/postbox-<uid>/solo-key         otherwise
 *
 * Each directory on the way that Postbox creates is 0700; each is refused
 * unless it is a directory (not a link) owned by the user without group or
 * other permission bits, and so is the file (a regular file, 0600 or less,
 * exactly 16 bytes).  The file appears whole or not at all: it is written
 * under a temporary name opened with O_EXCL and linked to its name, which
 * fails if another process got there first; that one's key is then read.
 */
#ifndef PB_BOOT_SOLO_KEY_H
#define PB_BOOT_SOLO_KEY_H

#include <stdint.h>

#include "boot/identity.h"
#include "util/status.h"

/* Read the solo job's key into @key, creating the file (and its
 * directory) first if there is none.
 * @return PB_OK; PB_ERR_PERMISSION if the directory or the file is not
 * the user's alone (a link, another owner, group or other bits, not a
 * regular file or not 16 bytes); PB_ERR_IO if a system call failed.
 * Errors are logged; @key is then unchanged. */
pb_status_t pb_boot_solo_key_load(uint8_t key[PB_BOOT_SECRET_LEN]);

#endif
