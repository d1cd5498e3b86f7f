/*
 * filecheck.c - noticing that the files under an open handle were deleted
 * or replaced (issue #17, defect 13).
 *
 * SQLite keeps the database file and its -wal open by descriptor.  When a
 * careless cleanup removes "<db>-wal" (or the database) while processes run,
 * they go on writing into a file that no longer has a name: every commit
 * since is lost when the last of them exits, and a process that opens the
 * database meanwhile creates a new, empty -wal while the shared index
 * (-shm) still describes the old one.  The two groups then read and write
 * different logs through one index: admissions counted twice, then a
 * corrupt database (3x over-admission and broken indexes were observed).
 * SQLite notices none of it.
 *
 * What is detected, at the start of every write transaction (under the
 * write lock, before anything is written):
 *
 *  - the database file, or its -wal, at its path is not the one found when
 *    the handle connected (st_dev and st_ino: one stat() each; a path the
 *    process may no longer look up, as when a directory's mode changed,
 *    tells nothing);
 *  - the -wal the connection reads is not the one the shared index
 *    describes: when the index counts frames (mxFrame > 0), the salts of
 *    its header are those of the log's header (one 8-byte read through
 *    SQLite's own descriptor, and the index from the connection's own
 *    mapping).  Under the write lock neither can change: a writer restarts
 *    the log, and a checkpoint rewrites the header, only holding it.
 *
 * Any of these makes the handle refuse every later write with EIO (and a
 * check's result filled by the failure policy): its process must be
 * restarted, as every process using the database must.
 *
 * The two stat() by name cost about 1 us per write transaction, a tenth of
 * a check.  A file is deleted, renamed or replaced at its path only by
 * changing its directory, which gives the directory a new modification
 * (and change) time, so one fstat() of the directory's descriptor stands
 * for both while the directory keeps the times it had when the files were
 * last found in place.  The times are read before the names are looked
 * up, and trusted only when the clock was past them by more than the file
 * system's time stamp granularity (DIR_QUIET_NS; stamps in whole seconds,
 * DIR_QUIET_WHOLE_NS): a change after the read is then stamped later,
 * never with the same time.  A directory that
 * changes (any file in it created or removed) makes the next write look
 * the names up again.  One pread() each time the log was started over.
 * Not detected: a file replaced by one with the same inode number, a file
 * mounted over (no directory change) while the directory's times stand,
 * the -shm deleted (each process then keeps its own index; a newcomer's is
 * rebuilt from the -wal it finds), and anything done to the files while no
 * process has them open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "lite.h"

#define WAL_INDEX_REGION 32768   /* SQLite's wal-index page size */
/* More than the kernel's coarse clock tick (at most 10 ms) and the time
 * stamp granularity of a file system whose stamps have a fraction of a
 * second (exFAT: 10 ms); stamps in whole seconds (FAT: 2 s) wait longer. */
#define DIR_QUIET_NS (250LL * 1000000)
#define DIR_QUIET_WHOLE_NS (3LL * 1000000000)

static const char *const schemas[2] = {"main", "rules"};

/* The -wal of schema i of the connection, or NULL. */
static const char *wal_path(rls_db *db, int i)
{
    const char *file = sqlite3_db_filename(db->lite->sql, schemas[i]);
    const char *wal = file && *file ? sqlite3_filename_wal(file) : NULL;
    return wal && *wal ? wal : NULL;
}

/* Whether the handle writes schema i. */
static int writes(const rls_db *db, int i)
{
    return !db->ident.opt.read_only && (i == 0 || (db->lite->split && db->lite->rules_rw));
}

/* The database file (k = 0) or -wal (k = 1) of schema i, or NULL. */
static const char *file_path(rls_db *db, int i, int k)
{
    const char *file = sqlite3_db_filename(db->lite->sql, schemas[i]);
    return k ? wal_path(db, i) : file && *file ? file : NULL;
}

void rls__files_forget(rls_db *db)
{
    for (int i = 0; i < 2; i++) {
        if (db->lite->file_dir[i] >= 0)
            close(db->lite->file_dir[i]);   /* a directory: no lock of SQLite's on it */
        db->lite->file_dir[i] = -1;
        db->lite->file_known[i][0] = db->lite->file_known[i][1] = 0;
        db->lite->dir_quiet[i] = 0;
    }
}

/* The last component of path. */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/*
 * At connect: the identity of each file as found, and a descriptor of its
 * directory, so that a check looks up one name, not the whole path (the
 * -wal is next to its database).
 */
void rls__files_identify(rls_db *db)
{
    rls__files_forget(db);
    db->lite->files_gone = 0;
    db->lite->wal_salts_ok[0] = db->lite->wal_salts_ok[1] = 0;
    for (int i = 0; i < 2 && db->lite->sql && (i == 0 || db->lite->split); i++) {
        const char *file = file_path(db, i, 0);
        char dir[4200];
        if (!file || strlen(file) >= sizeof dir || !strchr(file, '/'))
            continue;
        snprintf(dir, sizeof dir, "%.*s", (int)(base_name(file) - file - 1), file);
        db->lite->file_dir[i] = open(*dir ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        for (int k = 0; k < 2 && db->lite->file_dir[i] >= 0; k++) {
            struct stat sb;
            const char *p = file_path(db, i, k);
            db->lite->file_known[i][k] = p && fstatat(db->lite->file_dir[i], base_name(p), &sb, 0) == 0;
            if (db->lite->file_known[i][k]) {
                db->lite->file_dev[i][k] = sb.st_dev;
                db->lite->file_ino[i][k] = sb.st_ino;
            }
        }
    }
}

/* 1 when file k of schema i is no longer the one found at connect: gone
 * from its path or another file there.  A name this process may not look
 * up any more (a directory's mode changed) tells nothing. */
static int replaced(rls_db *db, int i, int k)
{
    struct stat sb;
    const char *p = db->lite->file_known[i][k] ? file_path(db, i, k) : NULL;
    if (!p)
        return 0;
    if (fstatat(db->lite->file_dir[i], base_name(p), &sb, 0) != 0)
        return errno == ENOENT || errno == ENOTDIR;
    return sb.st_dev != db->lite->file_dev[i][k] || sb.st_ino != db->lite->file_ino[i][k];
}

/*
 * 1 when the log schema i's connection reads is the one the shared index
 * describes (or the index counts no frame), 0 if not; a failure to read the
 * log's header is SQLite's error code, negated.
 */
static int index_matches(rls_db *db, int i)
{
    sqlite3_file *f = NULL, *w = NULL;
    volatile void *map = NULL;
    unsigned char hdr[48], salts[8];
    uint32_t mx_frame;
    if (sqlite3_file_control(db->lite->sql, schemas[i], SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK ||
        !f || !f->pMethods || f->pMethods->iVersion < 2 || !f->pMethods->xShmMap ||
        sqlite3_file_control(db->lite->sql, schemas[i], SQLITE_FCNTL_JOURNAL_POINTER, &w) !=
            SQLITE_OK || !w || !w->pMethods)
        return 1;   /* not a WAL connection of the usual VFS: nothing to compare */
    if (f->pMethods->xShmMap(f, 0, WAL_INDEX_REGION, 0, &map) != SQLITE_OK || !map)
        return 1;
    /* the first copy of the index header (SQLite's wal format): mxFrame at
     * 16, the log's salts at 32, in native byte order */
    memcpy(hdr, (const void *)map, sizeof hdr);
    memcpy(&mx_frame, hdr + 16, sizeof mx_frame);
    if (mx_frame == 0)
        return 1;
    /* The log's header changes only when it is started over, with new
     * random salts in the index too: index salts this connection already
     * found in its log's header need no read. */
    if (db->lite->wal_salts_ok[i] && memcmp(db->lite->wal_salts[i], hdr + 32, sizeof salts) == 0)
        return 1;
    /* a log shorter than its header (a new, empty one) does not match */
    int rc = w->pMethods->xRead(w, salts, sizeof salts, 16);
    if (rc == SQLITE_IOERR_SHORT_READ)
        return 0;
    if (rc != SQLITE_OK)
        return -rc;
    if (memcmp(salts, hdr + 32, sizeof salts) != 0)
        return 0;
    memcpy(db->lite->wal_salts[i], salts, sizeof salts);
    db->lite->wal_salts_ok[i] = 1;
    return 1;
}

static int64_t ts_ns(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* 1 when schema i's directory has the times it had when its files were
 * last found in place, and they may stand for looking the names up (see
 * the top); *sb is the directory's now, *have whether it was read. */
static int dir_quiet(rls_db *db, int i, struct stat *sb, int *have)
{
    *have = db->lite->file_dir[i] >= 0 && fstat(db->lite->file_dir[i], sb) == 0;
    return *have && db->lite->dir_quiet[i] && ts_ns(sb->st_mtim) == db->lite->dir_mtime[i] &&
           ts_ns(sb->st_ctim) == db->lite->dir_ctime[i];
}

/* The files of schema i were found in place after the directory's times
 * sb were read: they stand for the next look if the clock is far enough
 * past them. */
static void dir_note(rls_db *db, int i, const struct stat *sb)
{
    struct timespec now;
    int64_t m = ts_ns(sb->st_mtim), c = ts_ns(sb->st_ctim);
    db->lite->dir_mtime[i] = m;
    db->lite->dir_ctime[i] = c;
    int64_t quiet = sb->st_mtim.tv_nsec || sb->st_ctim.tv_nsec ? DIR_QUIET_NS
                                                                : DIR_QUIET_WHOLE_NS;
    db->lite->dir_quiet[i] = clock_gettime(CLOCK_REALTIME, &now) == 0 &&
                             ts_ns(now) - (m > c ? m : c) > quiet;
}

/* The database file and its -wal of schema i at their paths are the ones
 * found at connect: 0, else GONE_DB or GONE_WAL.  A write looks the names
 * up only when the directory changed (dir_quiet). */
static int files_in_place(rls_db *db, int i, int locked)
{
    struct stat sb;
    int have = 0;
    if (locked && dir_quiet(db, i, &sb, &have))
        return 0;
    if (replaced(db, i, 0))
        return 1;
    if (replaced(db, i, 1))
        return 2;
    if (have)
        dir_note(db, i, &sb);
    return 0;
}

enum { GONE_DB = 1, GONE_WAL, GONE_INDEX };

/* The error of what was found (db->lite->files_gone), for schema i. */
static int gone(rls_db *db, int kind, int i)
{
    static const char *const what[] = {
        "", "the database file '%s' was deleted or replaced while this handle had it open",
        "the write-ahead log '%s' was deleted or replaced while this handle had it open",
        "the write-ahead log '%s' is not the one the shared index describes (it was deleted "
        "or replaced while other processes had it open)"};
    const char *file = sqlite3_db_filename(db->lite->sql, schemas[i]);
    const char *path = kind == GONE_DB ? file : wal_path(db, i);
    char head[4400];
    db->lite->files_gone = kind;
    db->lite->files_gone_schema = i;
    snprintf(head, sizeof head, what[kind], path ? path : "?");
    return rls__error(db, RLS_EIO, "%s: writes are refused, as "
                      "they would be lost or counted twice; restart every process that uses "
                      "the database (docs/RELIABILITY.md)", head);
}

int rls__files_verify(rls_db *db, int locked)
{
    if (!db->lite->sql)
        return RLS_OK;
    if (db->lite->files_gone)
        return gone(db, db->lite->files_gone, db->lite->files_gone_schema);
    for (int i = 0; i < 2; i++) {
        /* a write: the files it writes; the doctor: every file */
        if (locked ? !writes(db, i) : i == 1 && !db->lite->split)
            continue;
        int moved = files_in_place(db, i, locked);
        if (moved)
            return gone(db, moved == 1 ? GONE_DB : GONE_WAL, i);
        const char *wal = wal_path(db, i);
        int m = index_matches(db, i);
        if (m == 0 && !locked)
            m = index_matches(db, i);   /* without the lock: ask again */
        if (m < 0) {
            int code = rls__sqlite_error(db, -m, "cannot read the write-ahead log");
            return rls__error(db, code, "cannot read the write-ahead log '%s': %s",
                              wal ? wal : "?", sqlite3_errstr(-m));
        }
        if (m == 0)
            return gone(db, GONE_INDEX, i);
    }
    return RLS_OK;
}
