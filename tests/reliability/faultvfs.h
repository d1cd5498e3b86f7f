/*
 * faultvfs.h - a test-only SQLite VFS that wraps the default "unix" VFS and
 * fails chosen file operations, so that a suite can drive the library's
 * I/O error paths without changing the library.
 *
 * fv_install() registers it as the default VFS (sqlite3_vfs_register with
 * makeDflt = 1): every connection opened afterwards without an explicit VFS
 * name, rls_open's included, goes through it.  A verifying connection that
 * must see the file as it is opens with the VFS name "unix".
 *
 * Operations are counted per kind, on every file of every connection:
 *   FV_WRITE     xWrite (database, WAL, journal)
 *   FV_SYNC      xSync
 *   FV_TRUNCATE  xTruncate
 *   FV_SHM       xShmMap, and xShmLock when it takes a lock (an unlock is
 *                never failed: SQLite ignores its result, so failing it
 *                would only leak the lock, which no real VFS does)
 *   FV_READ      xRead (a failing read returns the error and no data)
 * fv_arm(kind, n, err, sticky) makes the n-th operation of that kind from
 * now (1-based) fail with err without reaching the real VFS; with sticky,
 * every later one of that kind fails too (a disk that stays full or dead).
 * One kind is armed at a time.  Single-threaded use only.
 *
 * Include it once per test program (the suites are built from one source
 * file each): #include "faultvfs.c".
 */
#ifndef RLS_FAULTVFS_H
#define RLS_FAULTVFS_H

#include <sqlite3.h>

enum fv_kind { FV_WRITE = 0, FV_SYNC = 1, FV_TRUNCATE = 2, FV_SHM = 3, FV_READ = 4,
               FV__KINDS = 5 };

/* Registers the shim as the default VFS; idempotent.  SQLITE_OK or the
 * error of sqlite3_vfs_register (no "unix" VFS: SQLITE_ERROR). */
int fv_install(void);

/* Fails the n-th (n >= 1) operation of kind from now with err, and with
 * sticky != 0 every later one too.  Resets the per-arm counters. */
void fv_arm(int kind, long n, int err, int sticky);

/* Stops failing; counters stay readable. */
void fv_disarm(void);

/* Operations of kind seen since the last fv_arm (failed ones included). */
long fv_seen(int kind);

/* Faults injected since the last fv_arm (all kinds). */
long fv_injected_since_arm(void);

/* Faults injected since fv_install, per kind: with err 0 all of them, else
 * those whose primary code (err & 0xff) is err's: SQLITE_IOERR,
 * SQLITE_FULL, SQLITE_BUSY, ... */
long fv_injected_total(int kind, int err);

/* "write", "sync", "truncate", "shm", "read". */
const char *fv_kind_name(int kind);

/* The I/O error SQLite's unix VFS would report for kind:
 * SQLITE_IOERR_WRITE, _FSYNC, _TRUNCATE, _SHMMAP (xShmLock gets
 * SQLITE_IOERR_SHMLOCK instead when armed with this code), _READ. */
int fv_ioerr(int kind);

#endif
