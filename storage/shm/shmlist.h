/*
 * shmlist.h - finding and judging table files without using them, for the
 * doctor (storage/doctor_mem.c): the tables of one database's identity in
 * a folder, what their headers say, and removing the ones made in an
 * earlier boot of the host (shmfile.c).
 *
 * A table's name carries its boot (rls__shm_path: "rlstore-<identity
 * hash>-<boot hash>.shm"), and every process opens only the name of the
 * boot it runs in; a header whose boot differs from the running one is
 * refused by rls__shm_open.  So a table of this identity whose header
 * names another known boot is used by no process and never will be: that
 * is what "stale" means here.  A table whose header says nothing of its
 * boot (made where /proc could not be read) may be in use: never stale.
 */
#ifndef RLS_SHMLIST_H
#define RLS_SHMLIST_H

#include <stddef.h>
#include <stdint.h>
#include "shmtable.h"

/* What the header of a table file says, read without mapping it. */
typedef struct rls__shm_file {
    rls__shm_geom geom;      /* as stored                                   */
    uint64_t st_size;        /* bytes of the file                           */
    uint64_t boot;           /* hash of the boot it was made in, 0 unknown  */
    uint64_t recoveries;     /* locks taken over from killed processes      */
} rls__shm_file;

/*
 * Reads the header of the table file at path (never following a final
 * symbolic link) into *out.  RLS_OK; RLS_ENOTFOUND (no file);
 * RLS_ENOTDB (not a regular file, or not a table of this format: why
 * says which); RLS_ECANTOPEN (cannot be read).
 */
int rls__shm_file_read(const char *path, rls__shm_file *out, char *why, size_t whylen);

/* 1 when a table made in boot (its header's) belongs to an earlier boot
 * of this host: both boots known and different. */
int rls__shm_boot_stale(uint64_t boot);

/*
 * Calls fn(ctx, name) with the path of every file in the folder of path
 * whose name is a table name of the same identity ("rlstore-<same
 * hash>-<8 hex>.shm") other than path's own, in name order.  A nonzero
 * return of fn stops the walk and is returned.  RLS_OK (also when the
 * folder does not exist), RLS_EINVAL (path not a table name),
 * RLS_ECANTOPEN (the folder cannot be read), RLS_ENOMEM.
 */
int rls__shm_each_sibling(const char *path, int (*fn)(void *ctx, const char *path),
                          void *ctx);

/*
 * Removes the table file at path if it is stale (above), judged from the
 * file it opens, which must still be the one at path when it is unlinked.
 * RLS_OK removed; RLS_EBUSY not stale (left alone; why says why);
 * RLS_ENOTFOUND gone already; RLS_ENOTDB not a table; RLS_ECANTOPEN the
 * unlink failed (why: the system's reason).
 */
int rls__shm_remove_stale(const char *path, char *why, size_t whylen);

#endif
