/*
 * lite.h - the SQLite backend's part of the handle (db->lite) and its
 * internal functions: opening a file (open.c, create.c), the split
 * deployment (split.c), checkpoints (wal.c), the writers' turn (busy.c) and
 * the files under the connection (filecheck.c).  Only storage/sqlite/
 * includes it (and tests that look into a SQLite handle); the rest of
 * storage reaches this backend through db->be (backend.h).
 */
#ifndef RLS_LITE_H
#define RLS_LITE_H

#include <sqlite3.h>
#include <sys/types.h>
#include "db.h"

struct rls_lite {
    sqlite3 *sql;                  /* the connection */

    /* checkpoints (wal.c) */
    int wal_frames;                /* WAL size after this connection's last commit */
    int wal_base;                  /* WAL size at the last known checkpoint */
    int ckpt_soft, ckpt_hard;      /* thresholds, in frames */
    int ckpt_fd;                   /* "<db>-ckpt", RLS_CKPT_FD_* when not open */
    int busy_cap_ms;               /* > 0: shorter busy wait than the option */
    struct rls_busy *busy;         /* the writers' turn (busy.c) */

    /* split deployment (open.c): main is the counters file, schema "rules"
     * the attached rules file */
    int split;                     /* counters_path was given */
    int rules_rw;                  /* this handle may write the rules */
    char *counters_path;           /* copy of the option */
    int rules_wal_frames;          /* as wal_frames, for the rules file */

    /* what the handle may trust (lite_backend.c, backend.h's mark and
     * unchanged): the data versions right after the last commit, and the
     * ones at which the handle's knowledge was marked */
    unsigned int commit_dv, rules_commit_dv;
    int commit_dv_ok;              /* ... could be read */
    unsigned int meta_dv, rules_meta_dv;
    int meta_dv_ok;                /* a mark is valid */
    int rules_ckpt_fd;             /* "<rules>-ckpt", RLS_CKPT_FD_* when not open */

    /* the files under the connection (filecheck.c): main ([0]) and the
     * rules file ([1]), [k][0] the database, [k][1] its -wal, as found at
     * connect */
    dev_t file_dev[2][2];
    ino_t file_ino[2][2];
    int file_known[2][2];
    int file_dir[2];               /* O_PATH descriptor of their directory, or -1 */
    int64_t dir_mtime[2], dir_ctime[2];  /* the directory's times (ns) when its
                                          * files were last found in place */
    int dir_quiet[2];              /* ... and they may stand for a look (filecheck.c) */
    unsigned char wal_salts[2][8]; /* index salts last found in the -wal's header */
    int wal_salts_ok[2];           /* ... valid */
    int files_gone;                /* one was deleted or replaced: no writes */
    int files_gone_schema;         /* ... of main (0) or the rules file (1) */
    int have_gid;                  /* file_group was given: ... */
    gid_t gid;                     /* ... the group of files rls_open creates */
};

#define RLS_CKPT_FD_NONE (-1)         /* not opened yet */
#define RLS_CKPT_FD_UNAVAILABLE (-2)  /* cannot be opened: never checkpoint */

/* ---- the backend's operations (backend.h) ----------------------------- */
int rls__lite_init(rls_db *db, const char *path);       /* open.c */
int rls__lite_connect(rls_db *db);
void rls__lite_disconnect(rls_db *db);
int rls__lite_prepare(rls_db *db, int table, int id, const char *sql, rls_stmt **out);  /* splitform.c */
int rls__lite_doctor(rls_db *db, int full, rls_rows *r, int *bad, int *done);      /* lite_doctor.c */

/* Per-file steps of opening, on connection c (the handle's, or a helper
 * connection on the rules file) and its database `schema`. */
int rls__conn_error(rls_db *db, sqlite3 *c, int src, const char *what);
void rls__conn_defaults(sqlite3 *c);
int rls__file_check(rls_db *db, sqlite3 *c, const char *schema, const char *path,
                    int64_t *ver, int64_t *nobj);
int rls__file_upgrade(rls_db *db, sqlite3 *c, const char *path, int64_t ver, int64_t nobj);
int rls__schema_check(rls_db *db, sqlite3 *c, const char *schema, const char *path);
int rls__set_wal(rls_db *db, sqlite3 *c, const char *schema, const char *path);
/* Creates a new database file at path, whole (create.c); *created is 0
 * when another process created it first. */
int rls__file_create(rls_db *db, const char *path, unsigned int mode, int *created);

/* ---- split.c ---------------------------------------------------------- */
char *rls__file_uri(const char *path, int read_only);  /* malloc'd; NULL: no memory */
int rls__split_attach(rls_db *db);            /* attaches (and upgrades) the rules file */
int rls__roles_check(rls_db *db);             /* each file plays its part */
int rls__split_precheck(rls_db *db);          /* before a new rules file is created */
int rls__group_resolve(rls_db *db, const char *group);  /* file_group -> db->lite->gid */
int rls__file_group_set(rls_db *db, int fd, const char *path);  /* on a new file */
void rls__share_side_files(rls_db *db);       /* -wal, -shm, -ckpt in the file's group */

int rls__sqlite_error(rls_db *db, int src, const char *what);

/* ---- wal.c ------------------------------------------------------------ */
int rls__wal_setup(rls_db *db);               /* hook and limits, at connect */
void rls__wal_after_commit(rls_db *db);       /* checkpoint if the WAL is long */
void rls__wal_close(rls_db *db);              /* closes the side file */
int rls__wal_serialised(rls_db *db);          /* 1: checkpoints go through
                                                 "<db>-ckpt"'s lock */
/*
 * Under the write lock (SQLite): the files the connection writes are still
 * the ones at their paths, and its -wal is the one the shared index
 * describes; else EIO, and every later write of the handle is refused.
 * locked = 0 (a read-only handle's doctor): the index is compared without
 * the lock, so a checkpoint in between may be taken for a mismatch (the
 * caller asks again).
 */
int rls__files_verify(rls_db *db, int locked);
void rls__files_identify(rls_db *db);         /* at connect: the files as found */
void rls__files_forget(rls_db *db);           /* at disconnect (and in a forked child) */
void *rls__wal_side_map(rls_db *db);          /* its first page, or NULL */

#endif
