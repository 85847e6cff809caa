#include "boot/solo_key.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/random.h"

#define SOLO_KEY_FILE "solo-key"

/* Whether @st, of @path, is a @type (S_IFDIR, S_IFREG) of this user's
 * alone; logs why not. */
static int solo_key_private(const struct stat *st, mode_t type, const char *path)
{
    if ((st->st_mode & S_IFMT) != type) {
        pb_error("solo key: %s is not a %s", path, type == S_IFDIR ? "directory" : "regular file");
        return 0;
    }
    if (st->st_uid != geteuid()) {
        pb_error("solo key: %s belongs to uid %u, not to this user (%u)", path,
                 (unsigned)st->st_uid, (unsigned)geteuid());
        return 0;
    }
    if ((st->st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        pb_error("solo key: %s has mode %04o: group and others must have no access", path,
                 (unsigned)(st->st_mode & 07777));
        return 0;
    }
    return 1;
}

/* Open directory @path, creating it 0700 if it is missing, and check that
 * it is this user's alone.  @return its descriptor, or -1 with
 * *status_p set. */
static int solo_key_open_dir(const char *path, pb_status_t *status_p)
{
    struct stat st;
    int fd;

    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        pb_error("solo key: mkdir(%s) failed: %m", path);
        *status_p = PB_ERR_IO;
        return -1;
    }
    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        /* ELOOP or ENOTDIR: a link or a file squats the name */
        pb_error("solo key: opening directory %s failed: %m", path);
        *status_p = errno == ELOOP || errno == ENOTDIR ? PB_ERR_PERMISSION : PB_ERR_IO;
        return -1;
    }
    if (fstat(fd, &st) != 0 || !solo_key_private(&st, S_IFDIR, path)) {
        close(fd);
        *status_p = PB_ERR_PERMISSION;
        return -1;
    }
    return fd;
}

/* The directory the key lives in, opened. */
static int solo_key_dir(char *path, size_t size, pb_status_t *status_p)
{
    const char *runtime = getenv("XDG_RUNTIME_DIR");

    struct stat st;

    if (runtime != NULL && runtime[0] == '/') {
        if (stat(runtime, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
            (st.st_mode & (S_IRWXG | S_IRWXO)) == 0) {
            snprintf(path, size, "%s/postbox", runtime);
            return solo_key_open_dir(path, status_p);
        }
        pb_warn("solo key: XDG_RUNTIME_DIR (%s) is not a directory of this user's alone: using "
                "/tmp",
                runtime);
    }
    snprintf(path, size, "/tmp/postbox-%u", (unsigned)geteuid());
    return solo_key_open_dir(path, status_p);
}

/* Read the key file in @dir_fd; PB_ERR_NOT_PUBLISHED is "there is none". */
static pb_status_t solo_key_read(int dir_fd, const char *dir, uint8_t key[PB_BOOT_SECRET_LEN])
{
    char path[PATH_MAX + sizeof(SOLO_KEY_FILE)];
    struct stat st;
    ssize_t n;
    int fd = openat(dir_fd, SOLO_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    snprintf(path, sizeof(path), "%s/%s", dir, SOLO_KEY_FILE);
    if (fd < 0) {
        if (errno == ENOENT)
            return PB_ERR_NOT_PUBLISHED;
        pb_error("solo key: opening %s failed: %m", path);
        return errno == ELOOP ? PB_ERR_PERMISSION : PB_ERR_IO;
    }
    if (fstat(fd, &st) != 0 || !solo_key_private(&st, S_IFREG, path)) {
        close(fd);
        return PB_ERR_PERMISSION;
    }
    if (st.st_size != PB_BOOT_SECRET_LEN) {
        pb_error("solo key: %s has %lld bytes, not %d", path, (long long)st.st_size,
                 PB_BOOT_SECRET_LEN);
        close(fd);
        return PB_ERR_PERMISSION;
    }
    do {
        n = pread(fd, key, PB_BOOT_SECRET_LEN, 0);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n != PB_BOOT_SECRET_LEN) {
        pb_error("solo key: reading %s failed: %m", path);
        return PB_ERR_IO;
    }
    return PB_OK;
}

/* Write a fresh key under a temporary name and link it to its name; an
 * existing file (another process won) is left as it is. */
static pb_status_t solo_key_create(int dir_fd, const char *dir)
{
    uint8_t key[PB_BOOT_SECRET_LEN];
    uint8_t tag[8];
    char temp[64];
    pb_status_t status = PB_OK;
    int fd;

    if (pb_random_bytes(key, sizeof(key)) != 0 || pb_random_bytes(tag, sizeof(tag)) != 0) {
        pb_error("solo key: getrandom failed: %m");
        return PB_ERR_IO;
    }
    snprintf(temp, sizeof(temp), "%s.%02x%02x%02x%02x%02x%02x%02x%02x", SOLO_KEY_FILE, tag[0],
             tag[1], tag[2], tag[3], tag[4], tag[5], tag[6], tag[7]);
    fd = openat(dir_fd, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        pb_error("solo key: creating %s/%s failed: %m", dir, temp);
        return PB_ERR_IO;
    }
    if (write(fd, key, sizeof(key)) != (ssize_t)sizeof(key) || fsync(fd) != 0) {
        pb_error("solo key: writing %s/%s failed: %m", dir, temp);
        status = PB_ERR_IO;
    }
    close(fd);
    /* unlike rename, link never replaces a key another process already uses */
    if (status == PB_OK && linkat(dir_fd, temp, dir_fd, SOLO_KEY_FILE, 0) != 0 && errno != EEXIST) {
        pb_error("solo key: linking %s/%s to %s failed: %m", dir, temp, SOLO_KEY_FILE);
        status = PB_ERR_IO;
    }
    unlinkat(dir_fd, temp, 0);
    return status;
}

pb_status_t pb_boot_solo_key_load(uint8_t key[PB_BOOT_SECRET_LEN])
{
    char dir[PATH_MAX];
    pb_status_t status;
    int dir_fd = solo_key_dir(dir, sizeof(dir), &status);

    if (dir_fd < 0)
        return status;
    status = solo_key_read(dir_fd, dir, key);
    if (status == PB_ERR_NOT_PUBLISHED) {
        status = solo_key_create(dir_fd, dir);
        if (status == PB_OK)
            status = solo_key_read(dir_fd, dir, key);
        if (status == PB_ERR_NOT_PUBLISHED) {
            pb_error("solo key: %s/%s vanished as it was created", dir, SOLO_KEY_FILE);
            status = PB_ERR_IO;
        }
    }
    close(dir_fd);
    return status;
}
