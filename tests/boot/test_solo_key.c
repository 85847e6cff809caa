/* The solo job's key file (src/boot/solo_key.c): created whole, 0600, in a
 * 0700 directory; read back unchanged; refused when the file or directory
 * is not the user's alone.  Each case points XDG_RUNTIME_DIR at a fresh
 * private directory of its own. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot/solo_key.h"
#include "harness.h"

static char runtime[64];
static char keydir[128];
static char keyfile[192];

/* a fresh runtime directory with @mode; the key's paths under it */
static void setup(mode_t mode)
{
    snprintf(runtime, sizeof(runtime), "/tmp/pbt-runtime-XXXXXX");
    CHECK(mkdtemp(runtime) != NULL);
    CHECK_SYS(chmod(runtime, mode));
    setenv("XDG_RUNTIME_DIR", runtime, 1);
    snprintf(keydir, sizeof(keydir), "%s/postbox", runtime);
    snprintf(keyfile, sizeof(keyfile), "%s/solo-key", keydir);
}

static void cleanup(void)
{
    unlink(keyfile);
    rmdir(keydir);
    chmod(runtime, 0700);
    CHECK_SYS(rmdir(runtime));
}

static void write_key_file(const void *bytes, size_t len, mode_t mode)
{
    FILE *f;

    CHECK_SYS(mkdir(keydir, 0700));
    f = fopen(keyfile, "w");
    CHECK(f != NULL);
    CHECK(fwrite(bytes, 1, len, f) == len);
    CHECK(fclose(f) == 0);
    CHECK_SYS(chmod(keyfile, mode));
}

/* the first load creates the file, 0600, 16 bytes, in a 0700 directory;
 * the next load reads the same key */
static void case_created_private(void)
{
    uint8_t key[PB_BOOT_SECRET_LEN], again[PB_BOOT_SECRET_LEN];
    static const uint8_t zero[PB_BOOT_SECRET_LEN];
    struct stat st;

    setup(0700);
    CHECK(pb_boot_solo_key_load(key) == PB_OK);
    CHECK(memcmp(key, zero, sizeof(key)) != 0);
    CHECK_SYS(lstat(keydir, &st));
    CHECK(S_ISDIR(st.st_mode) && st.st_uid == geteuid());
    CHECK_MSG((st.st_mode & 0777) == 0700, "directory mode %o", st.st_mode & 0777);
    CHECK_SYS(lstat(keyfile, &st));
    CHECK(S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size == PB_BOOT_SECRET_LEN);
    CHECK_MSG((st.st_mode & 0777) == 0600, "key file mode %o", st.st_mode & 0777);
    CHECK(pb_boot_solo_key_load(again) == PB_OK);
    CHECK(memcmp(key, again, sizeof(key)) == 0);
    /* nothing else is left in the directory: the temporary name is gone */
    CHECK_SYS(unlink(keyfile));
    CHECK_SYS(rmdir(keydir));
    CHECK_SYS(rmdir(runtime));
}

/* an existing key is used as it is */
static void case_existing_key_read(void)
{
    const uint8_t want[PB_BOOT_SECRET_LEN] = "0123456789abcde";
    uint8_t key[PB_BOOT_SECRET_LEN];

    setup(0700);
    write_key_file(want, sizeof(want), 0600);
    CHECK(pb_boot_solo_key_load(key) == PB_OK);
    CHECK(memcmp(key, want, sizeof(key)) == 0);
    cleanup();
}

/* a key file others may read or write is refused, and left alone */
static void case_bad_mode_refused(void)
{
    static const mode_t modes[] = {0644, 0640, 0604, 0620, 0602, 0660};
    const uint8_t bytes[PB_BOOT_SECRET_LEN] = "0123456789abcde";

    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        uint8_t key[PB_BOOT_SECRET_LEN] = {0};
        struct stat st;

        setup(0700);
        write_key_file(bytes, sizeof(bytes), modes[i]);
        CHECK_MSG(pb_boot_solo_key_load(key) == PB_ERR_PERMISSION, "mode %o accepted", modes[i]);
        CHECK(key[0] == 0);
        CHECK_SYS(stat(keyfile, &st));
        CHECK((st.st_mode & 0777) == modes[i]);
        cleanup();
    }
}

/* a key file of the wrong size, a link, or a directory is refused */
static void case_bad_file_refused(void)
{
    const uint8_t bytes[PB_BOOT_SECRET_LEN + 1] = "0123456789abcdef";
    uint8_t key[PB_BOOT_SECRET_LEN];
    char target[256];

    setup(0700);
    write_key_file(bytes, sizeof(bytes), 0600);
    CHECK(pb_boot_solo_key_load(key) == PB_ERR_PERMISSION);
    cleanup();

    setup(0700);
    write_key_file(bytes, PB_BOOT_SECRET_LEN, 0600);
    snprintf(target, sizeof(target), "%s/real-key", keydir);
    CHECK_SYS(rename(keyfile, target));
    CHECK_SYS(symlink(target, keyfile));
    CHECK(pb_boot_solo_key_load(key) == PB_ERR_PERMISSION);
    CHECK_SYS(unlink(target));
    cleanup();

    setup(0700);
    CHECK_SYS(mkdir(keydir, 0700));
    CHECK_SYS(mkdir(keyfile, 0700));
    CHECK(pb_boot_solo_key_load(key) == PB_ERR_PERMISSION);
    CHECK_SYS(rmdir(keyfile));
    cleanup();
}

/* a key file or directory of another user is refused (needs root to make) */
static void case_other_owner_refused(void)
{
    const uint8_t bytes[PB_BOOT_SECRET_LEN] = "0123456789abcde";
    uint8_t key[PB_BOOT_SECRET_LEN];

    if (geteuid() != 0)
        pbt_skip("needs root to give a file to another user");
    setup(0700);
    write_key_file(bytes, sizeof(bytes), 0600);
    CHECK_SYS(chown(keyfile, 65534, 65534));
    CHECK(pb_boot_solo_key_load(key) == PB_ERR_PERMISSION);
    cleanup();

    setup(0700);
    CHECK_SYS(mkdir(keydir, 0700));
    CHECK_SYS(chown(keydir, 65534, 65534));
    CHECK(pb_boot_solo_key_load(key) == PB_ERR_PERMISSION);
    cleanup();
}

/* a key directory others may enter is refused */
static void case_open_directory_refused(void)
{
    uint8_t key[PB_BOOT_SECRET_LEN];

    setup(0700);
    CHECK_SYS(mkdir(keydir, 0700));
    CHECK_SYS(chmod(keydir, 0755));
    CHECK(pb_boot_solo_key_load(key) == PB_ERR_PERMISSION);
    cleanup();
}

/* a runtime directory that is not the user's alone is passed over for
 * /tmp/postbox-<uid> */
static void case_fallback_to_tmp(void)
{
    uint8_t key[PB_BOOT_SECRET_LEN];
    char fallback[64], fallback_key[128];
    struct stat st;

    snprintf(fallback, sizeof(fallback), "/tmp/postbox-%u", (unsigned)geteuid());
    snprintf(fallback_key, sizeof(fallback_key), "%s/solo-key", fallback);
    if (lstat(fallback, &st) == 0)
        pbt_skip("%s exists already (run as root for a private /tmp)", fallback);
    setup(0755);
    CHECK(pb_boot_solo_key_load(key) == PB_OK);
    CHECK_MSG(lstat(keydir, &st) != 0 && errno == ENOENT, "the open runtime directory was used");
    CHECK_SYS(lstat(fallback, &st));
    CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
    CHECK_SYS(lstat(fallback_key, &st));
    CHECK((st.st_mode & 0777) == 0600);
    CHECK_SYS(unlink(fallback_key));
    CHECK_SYS(rmdir(fallback));
    cleanup();
}

/* processes that start at once all end up with the one key */
static void racer(pbt_peer_t *self, void *arg)
{
    uint8_t key[PB_BOOT_SECRET_LEN];

    (void)arg;
    pbt_recv_u32(self->rd);
    CHECK(pb_boot_solo_key_load(key) == PB_OK);
    pbt_send(self->wr, key, sizeof(key));
}

static void case_concurrent_creation_one_key(void)
{
    enum {
        RACERS = 8
    };
    pbt_peer_t peers[RACERS];
    uint8_t first[PB_BOOT_SECRET_LEN], key[PB_BOOT_SECRET_LEN];

    setup(0700);
    for (int i = 0; i < RACERS; i++)
        peers[i] = pbt_peer_start(racer, NULL);
    for (int i = 0; i < RACERS; i++)
        pbt_send_u32(peers[i].wr, 1);
    for (int i = 0; i < RACERS; i++) {
        pbt_recv(peers[i].rd, i == 0 ? first : key, sizeof(key));
        CHECK_MSG(i == 0 || memcmp(first, key, sizeof(key)) == 0, "process %d has another key", i);
        pbt_peer_join(&peers[i], 5000, 0);
    }
    cleanup();
}

static const pbt_case_t cases[] = {
    PBT_CASE(created_private),     PBT_CASE(existing_key_read),
    PBT_CASE(bad_mode_refused),    PBT_CASE(bad_file_refused),
    PBT_CASE(other_owner_refused), PBT_CASE(open_directory_refused),
    PBT_CASE(fallback_to_tmp),     PBT_CASE(concurrent_creation_one_key),
};

int main(int argc, char **argv)
{
    return pbt_main(argc, argv, cases, PBT_NCASES(cases));
}
