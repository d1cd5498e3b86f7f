/*
 * wal.c - keeping the WAL short and bounded with checkpoints the library
 * runs itself, serialised across processes.
 *
 * Why not SQLite's auto-checkpoint: it runs a PASSIVE checkpoint from
 * whichever connection commits past 1000 frames.  PASSIVE never blocks
 * writers, so while several processes keep writing some frames are always
 * newer than the checkpoint, the WAL is never started over and grows without
 * bound (4 processes x 20,000 checks left a 650 MB WAL).  Two processes can
 * also checkpoint at once, and SQLite before 3.51.3 has a rare WAL-reset
 * corruption race between a checkpoint and a writer starting the WAL over
 * right after another checkpoint completed.  Instead:
 *
 *  - A WAL hook (which replaces the auto-checkpoint) only records how many
 *    frames the WAL holds after each commit of this connection.
 *  - After a commit, when the WAL has grown by CKPT_SOFT_BYTES since the last
 *    checkpoint, the connection copies it back with a PASSIVE checkpoint,
 *    which blocks nobody, while the other writers take their turns
 *    (busy.c); then it holds the writers off and runs a RESTART checkpoint:
 *    it holds SQLite's writer lock while it copies what was written
 *    meanwhile (so no writer can start the WAL over, and no new frame
 *    escapes it), then waits briefly for readers to leave the WAL, so the
 *    next commit starts it over.  With 4 writers that holds them off about
 *    1.2 ms instead of 4.5 ms for a RESTART alone; the WAL reaches about
 *    CKPT_SOFT_BYTES plus what they write meanwhile.  Waits are capped at
 *    CKPT_WAIT_MS (the busy handler's cap), never the handle's busy timeout.
 *    With one writer it costs what a PASSIVE one would.
 *  - Past CKPT_HARD_BYTES (readers kept old snapshots) a TRUNCATE checkpoint
 *    waits up to CKPT_HARD_WAIT_MS for them and empties the file.  After any
 *    attempt, successful or not, the next one comes only after another
 *    CKPT_SOFT_BYTES of WAL: a reader holding an old snapshot costs one short
 *    wait per soft size, not one per commit.
 *  - Every checkpoint runs under an exclusive flock() on the side file
 *    "<db>-ckpt", taken without waiting: a handle that finds it held skips,
 *    since another one is checkpointing.  flock() locks belong to the open
 *    file description, so two handles of one process exclude each other too
 *    (POSIX fcntl locks would not).  The side file also records the WAL size
 *    and generation at the last checkpoint, so a handle that saw a long WAL
 *    before someone else checkpointed it does not checkpoint again at once.
 *  - PRAGMA journal_size_limit shrinks a WAL that grew past the usual size
 *    when it is next started over.
 *
 * With 1 KiB pages (open.c) CKPT_SOFT_BYTES is about 4,000 one-limit checks;
 * one checkpoint then costs a few milliseconds (mostly the WAL fdatasync),
 * borne by the check that triggers it.
 *
 * Checkpoint failures are not errors of the call that triggered them: its
 * transaction has committed; a later commit tries again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>
#include "busy.h"

#define CKPT_SOFT_BYTES (4LL << 20)   /* RESTART checkpoint after this much WAL */
#define CKPT_HARD_BYTES (64LL << 20)  /* TRUNCATE checkpoint past this */
#define CKPT_WAIT_MS 20               /* longest wait for the writer and readers */
#define CKPT_HARD_WAIT_MS 200         /* the same past the hard size */
#define SIDE_PATH_MAX 4200            /* "<db>-ckpt", "<db>-wal" (SQLite allows 512) */

static int wal_hook(void *arg, sqlite3 *sql, const char *name, int frames)
{
    rls_db *db = arg;
    if (name && strcmp(name, "rules") == 0)
        db->lite->rules_wal_frames = frames;   /* split: an admin change */
    else
        db->lite->wal_frames = frames;
    return SQLITE_OK;
}

int rls__wal_setup(rls_db *db)
{
    sqlite3_stmt *st = NULL;
    int64_t page = 4096;
    char sql[96];

    db->lite->ckpt_fd = RLS_CKPT_FD_NONE;
    db->lite->rules_ckpt_fd = RLS_CKPT_FD_NONE;
    db->lite->wal_frames = 0;
    db->lite->rules_wal_frames = 0;
    db->lite->wal_base = 0;
    if (db->ident.opt.read_only)
        return RLS_OK;   /* never commits, never checkpoints */
    /* split: the rules file's WAL is emptied after every admin change */
    if (db->lite->split && db->lite->rules_rw &&
        sqlite3_exec(db->lite->sql, "PRAGMA rules.journal_size_limit = 0", NULL, NULL, NULL) !=
            SQLITE_OK)
        return rls__sqlite_error(db, sqlite3_errcode(db->lite->sql), "cannot configure database");
    if (sqlite3_prepare_v2(db->lite->sql, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        page = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (page < 512)
        page = 4096;
    db->lite->ckpt_soft = (int)(CKPT_SOFT_BYTES / page);
    db->lite->ckpt_hard = (int)(CKPT_HARD_BYTES / page);
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %lld", 4 * CKPT_SOFT_BYTES);
    int rc = sqlite3_exec(db->lite->sql, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return rls__sqlite_error(db, rc, "cannot configure database");
    sqlite3_wal_hook(db->lite->sql, wal_hook, db);
    return RLS_OK;
}

/*
 * Opens "<db>-ckpt" of the database `schema` into *fdp, creating it with the
 * database file's mode and group (and owner, as SQLite does for -wal and
 * -shm when running as root).  Read-only access is enough for flock() when
 * another user created it.  The file is never removed: unlinking a lock
 * file lets two processes lock two different files.
 */
static int side_open(rls_db *db, const char *schema, int *fdp)
{
    char name[SIDE_PATH_MAX];
    if (*fdp != RLS_CKPT_FD_NONE)
        return *fdp >= 0;
    /* next to the file SQLite opened (symlinks resolved), whatever path
     * spelling this handle was given */
    const char *file = db->lite->sql ? sqlite3_db_filename(db->lite->sql, schema) : NULL;
    if (!file || !*file)
        file = db->lite->split && strcmp(schema, "main") == 0 ? db->lite->counters_path : db->ident.path;
    if ((size_t)snprintf(name, sizeof name, "%s-ckpt", file) >= sizeof name) {
        *fdp = RLS_CKPT_FD_UNAVAILABLE;
        return 0;
    }
    struct stat sb;
    int have_sb = stat(file, &sb) == 0;
    mode_t mode = have_sb ? sb.st_mode & 0666 : 0600;
    int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd >= 0) {
        if (fchmod(fd, mode) != 0) { /* the umask narrowed it: best effort */ }
        if (have_sb && geteuid() == 0 && fchown(fd, sb.st_uid, sb.st_gid) != 0) { }
        /* a group-shared database: its group, if the creator belongs to it */
        if (have_sb && geteuid() != 0 && fchown(fd, (uid_t)-1, sb.st_gid) != 0) { }
    } else if (errno == EEXIST) {
        fd = open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM))
            fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    *fdp = fd >= 0 ? fd : RLS_CKPT_FD_UNAVAILABLE;
    return fd >= 0;
}

static int ckpt_open(rls_db *db)
{
    return side_open(db, "main", &db->lite->ckpt_fd);
}

/* Whether this handle's checkpoints are serialised with every other
 * rlstore handle's (doctor: the WAL-reset race of old SQLite needs two
 * checkpoints at once, which the lock rules out). */
int rls__wal_serialised(rls_db *db)
{
    return db->lite && ckpt_open(db);
}

/*
 * The side file holds the WAL size (frames) at the last checkpoint of any
 * handle and the salts of the WAL header then, which SQLite changes each time
 * the WAL is started over: a frame count is only comparable within one WAL
 * generation.  Both little-endian: bytes 0-7 the size, 8-15 the salts.
 */
typedef struct ckpt_mark {
    int64_t frames;
    uint64_t salts;
} ckpt_mark;

static uint64_t get_le(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static void put_le(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void mark_read(int fd, ckpt_mark *m)
{
    unsigned char b[16];
    m->frames = 0;
    m->salts = 0;
    if (pread(fd, b, sizeof b, 0) != (ssize_t)sizeof b)
        return;
    m->frames = (int64_t)(get_le(b) & 0x7fffffff);
    m->salts = get_le(b + 8);
}

static void mark_write(int fd, const ckpt_mark *m)
{
    unsigned char b[16];
    put_le(b, (uint64_t)m->frames);
    put_le(b + 8, m->salts);
    if (pwrite(fd, b, sizeof b, 0) != (ssize_t)sizeof b) { /* read-only side file */ }
}

/* Salt-1 and salt-2 of the current WAL header (bytes 16-23, see SQLite's
 * file format); 0 if unreadable.  Reading the -wal file through a
 * descriptor of our own is harmless: SQLite holds no locks on it. */
static uint64_t wal_salts(const rls_db *db)
{
    char name[SIDE_PATH_MAX];
    unsigned char h[8];
    uint64_t v = 0;
    const char *file = sqlite3_db_filename(db->lite->sql, "main");
    const char *wal = file && *file ? sqlite3_filename_wal(file) : NULL;
    if ((size_t)snprintf(name, sizeof name, "%s", wal && *wal ? wal : "") >= sizeof name ||
        !*name)
        return 0;
    int fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    if (pread(fd, h, sizeof h, 16) == (ssize_t)sizeof h)
        v = get_le(h);
    close(fd);
    return v;
}

/*
 * Under the lock: checkpoints unless another handle already did since the
 * WAL reached `frames` frames (same WAL generation, size below `frames` plus
 * the soft size).  Records the WAL size and generation for the next one.
 */
static void checkpoint(rls_db *db, int frames)
{
    if (!ckpt_open(db) || flock(db->lite->ckpt_fd, LOCK_EX | LOCK_NB) != 0)
        return;   /* another handle is checkpointing, or no side file */
    ckpt_mark last;
    uint64_t salts = wal_salts(db);
    mark_read(db->lite->ckpt_fd, &last);
    int64_t base = last.frames;
    if (salts == 0 || salts != last.salts || frames < base)
        base = 0;  /* the WAL was started over since that checkpoint */
    int hard = frames >= db->lite->ckpt_hard;
    if (frames - base >= db->lite->ckpt_soft) {
        int nlog = -1, nckpt = -1;
        rls__busy_leave(db);     /* the others write while most is copied */
        sqlite3_wal_checkpoint_v2(db->lite->sql, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        rls__busy_hold_off(db);  /* the rest with writers held off */
        db->lite->busy_cap_ms = hard ? CKPT_HARD_WAIT_MS : CKPT_WAIT_MS;
        int mode = hard ? SQLITE_CHECKPOINT_TRUNCATE : SQLITE_CHECKPOINT_RESTART;
        int rc = sqlite3_wal_checkpoint_v2(db->lite->sql, "main", mode, &nlog, &nckpt);
        db->lite->busy_cap_ms = 0;
        if (hard && rc == SQLITE_OK) {
            base = 0;      /* the WAL is empty */
            salts = 0;
        } else {
            base = nlog > frames ? nlog : frames;
        }
        last.frames = base;
        last.salts = salts;
        mark_write(db->lite->ckpt_fd, &last);
    }
    db->lite->wal_base = (int)base;
    flock(db->lite->ckpt_fd, LOCK_UN);
}

/*
 * Maps the first RLS_SIDE_BYTES of the side file shared and writable: bytes
 * 0-15 hold the checkpoint mark (read with pread above), 64-71 the denial
 * cache's generation (deny.c), 1024-4095 the writers' turn (busy.c).  The
 * page gets real storage first: a store to a hole of a mapped file on a
 * full filesystem would raise SIGBUS.  It is never shrunk.  NULL when the
 * file cannot be opened read-write, grown or mapped; the caller unmaps.
 */
void *rls__wal_side_map(rls_db *db)
{
    struct stat sb;
    if (!ckpt_open(db) || fstat(db->lite->ckpt_fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        return NULL;
    int fl = fcntl(db->lite->ckpt_fd, F_GETFL);
    if (fl < 0 || (fl & O_ACCMODE) != O_RDWR)
        return NULL;
    if (sb.st_size < RLS_SIDE_BYTES && ftruncate(db->lite->ckpt_fd, RLS_SIDE_BYTES) != 0)
        return NULL;
#ifdef SYS_fallocate
    if (syscall(SYS_fallocate, db->lite->ckpt_fd, 0, (off_t)0, (off_t)RLS_SIDE_BYTES) != 0 &&
        errno != EOPNOTSUPP && errno != ENOSYS)
        return NULL;
#endif
    void *p = mmap(NULL, RLS_SIDE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, db->lite->ckpt_fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

/*
 * Split deployment: after a commit that changed the rules file (an admin
 * change), a TRUNCATE checkpoint of it, under "<rules>-ckpt".  Applications
 * read the rules file with a -shm they may not write, which SQLite then
 * rebuilds in memory from the WAL at each transaction: an empty WAL keeps
 * that free.  Readers can make it fail (the wait is capped); the next
 * admin change tries again.
 */
static void rules_checkpoint(rls_db *db)
{
    db->lite->rules_wal_frames = 0;
    if (!side_open(db, "rules", &db->lite->rules_ckpt_fd) ||
        flock(db->lite->rules_ckpt_fd, LOCK_EX | LOCK_NB) != 0)
        return;
    db->lite->busy_cap_ms = CKPT_HARD_WAIT_MS;
    sqlite3_wal_checkpoint_v2(db->lite->sql, "rules", SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    db->lite->busy_cap_ms = 0;
    flock(db->lite->rules_ckpt_fd, LOCK_UN);
}

void rls__wal_after_commit(rls_db *db)
{
    if (db->lite->rules_wal_frames > 0)
        rules_checkpoint(db);
    int frames = db->lite->wal_frames;
    db->lite->wal_frames = 0;
    if (frames > 0 && db->lite->ckpt_soft > 0) {
        if (frames < db->lite->wal_base)
            db->lite->wal_base = 0;  /* the WAL was started over */
        if (frames - db->lite->wal_base >= db->lite->ckpt_soft)
            checkpoint(db, frames);
    }
    rls__busy_after_commit(db);  /* the lock is free: the next writer's turn */
}

void rls__wal_close(rls_db *db)
{
    rls__busy_close(db);      /* its mapping of the side file (busy.c) */
    if (db->lite->ckpt_fd >= 0)
        close(db->lite->ckpt_fd);   /* releases nothing another handle holds */
    db->lite->ckpt_fd = RLS_CKPT_FD_NONE;
    if (db->lite->rules_ckpt_fd >= 0)
        close(db->lite->rules_ckpt_fd);
    db->lite->rules_ckpt_fd = RLS_CKPT_FD_NONE;
    rls__files_forget(db);
}
