/*
 * create.c - creating a new database file so that no process ever sees it
 * half made, and so that no file another process may have opened is ever
 * removed.
 *
 * Creating the file empty at its path and migrating it there (as rlstore
 * once did) lets processes that open the same new path at once meet a file
 * without a header, a schema half written in rollback-journal mode, or a
 * journal mode still to switch; and a creator that failed removed the file
 * and its -wal and -shm while the others already used them (two counter
 * stores, admissions counted twice; issue #17).  Instead the complete file
 * (every migration, the application id, WAL mode) is built in memory, its
 * bytes written to an unnamed file in the target directory (O_TMPFILE) with
 * the configured mode and group and synced, and then linked to the path
 * with linkat(2), which never replaces: the path holds either nothing or a
 * whole database.  A creator that loses the race (EEXIST) uses the
 * winner's file; one that fails, or is killed, leaves nothing behind.
 *
 * Where O_TMPFILE or /proc is missing, the bytes go to a named temporary
 * file "<path>.XXXXXX" linked the same way (rename with RENAME_NOREPLACE
 * where hard links are not supported) and then unlinked: only its creator
 * ever knows that name, and only a creator killed in between leaves one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "lite.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

/* The bytes of a new database: every migration, in WAL mode.  *img is
 * sqlite3_malloc'd. */
static int build_image(rls_db *db, const char *path, unsigned char **img, sqlite3_int64 *size)
{
    sqlite3 *m = NULL;
    *img = NULL;
    int rc = sqlite3_open_v2(":memory:", &m, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                             SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_close(m);
        return rls__error(db, RLS_ENOMEM, "out of memory");
    }
    rls__conn_defaults(m);
    int code = rls__file_upgrade(db, m, path, 0, 0);
    if (code == RLS_OK) {
        *img = sqlite3_serialize(m, "main", size, 0);
        if (!*img || *size < 100)
            code = rls__error(db, RLS_ENOMEM, "out of memory");
        else
            (*img)[18] = (*img)[19] = 2;  /* file format 2: WAL (SQLite's file format) */
    }
    sqlite3_close(m);
    return code;
}

/* The error of a failed system call on the new file. */
static int create_error(rls_db *db, const char *path, int e)
{
    int code = e == ENOSPC || e == EDQUOT                 ? RLS_EFULL
               : e == EACCES || e == EROFS || e == EPERM ? RLS_EREADONLY
                                                         : RLS_ECANTOPEN;
    return rls__error(db, code, "cannot create '%s': %s", path, strerror(e));
}

/* Writes the image to fd with the file's mode and group, synced. */
static int fill(rls_db *db, int fd, const char *path, unsigned int mode,
                const unsigned char *img, sqlite3_int64 size)
{
    for (sqlite3_int64 off = 0; off < size;) {
        ssize_t n = pwrite(fd, img + off, (size_t)(size - off), (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return create_error(db, path, n < 0 ? errno : ENOSPC);
        off += n;
    }
    if (fchmod(fd, mode) != 0) { /* the umask must not widen or narrow it: best effort */ }
    int rc = rls__file_group_set(db, fd, path);
    if (rc == RLS_OK && fsync(fd) != 0)
        rc = create_error(db, path, errno);
    return rc;
}

/* The directory of path, into buf. */
static void dir_of(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, size, ".");
    else if (slash == path)
        snprintf(buf, size, "/");
    else
        snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

/* The new entry survives a power loss once its directory is synced. */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        if (fsync(fd) != 0) { /* some file systems cannot: the file is there */ }
        close(fd);
    }
}

/* Links the named temporary file to path without ever replacing it: 0, or
 * -1 with errno (EEXIST: another process was first).  *moved is set when
 * the temporary name is gone (renamed). */
static int link_named(const char *tmp, const char *path, int *moved)
{
    *moved = 0;
    if (link(tmp, path) == 0)
        return 0;
    if (errno != EPERM && errno != EOPNOTSUPP && errno != EXDEV)
        return -1;
#ifdef SYS_renameat2
    /* no hard links here: a rename that refuses to replace */
    if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) != 0)
        return -1;
    *moved = 1;
    return 0;
#else
    return -1;
#endif
}

/* The fallback: a named temporary file next to path. */
static int create_named(rls_db *db, const char *path, unsigned int mode,
                        const unsigned char *img, sqlite3_int64 size, int *created)
{
    size_t n = strlen(path) + 8;
    char *tmp = malloc(n);
    if (!tmp)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    snprintf(tmp, n, "%s.XXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int rc = create_error(db, path, errno);
        free(tmp);
        return rc;
    }
    int rc = fill(db, fd, path, mode, img, size), moved = 0;
    if (rc == RLS_OK && link_named(tmp, path, &moved) == 0)
        *created = 1;
    else if (rc == RLS_OK && errno != EEXIST)
        rc = create_error(db, path, errno);
    if (!moved)
        unlink(tmp);   /* the temporary name, which only this call knows */
    close(fd);
    free(tmp);
    return rc;
}

int rls__file_create(rls_db *db, const char *path, unsigned int mode, int *created)
{
    unsigned char *img = NULL;
    sqlite3_int64 size = 0;
    char dir[4200], proc[64];
    *created = 0;
    if (strlen(path) >= sizeof dir - 16)
        return rls__error(db, RLS_ECANTOPEN, "cannot create '%s': path too long", path);
    int rc = build_image(db, path, &img, &size);
    if (rc != RLS_OK)
        return rc;
    dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        rc = create_named(db, path, mode, img, size, created);
    } else if (fd < 0) {
        rc = create_error(db, path, errno);
    } else {
        rc = fill(db, fd, path, mode, img, size);
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        if (rc == RLS_OK && linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
            *created = 1;
        else if (rc == RLS_OK && errno == ENOENT && access(proc, F_OK) != 0)
            rc = create_named(db, path, mode, img, size, created);  /* no /proc */
        else if (rc == RLS_OK && errno != EEXIST)
            rc = create_error(db, path, errno);
        close(fd);
    }
    sqlite3_free(img);
    if (*created)
        sync_dir(dir);
    return rc;
}
