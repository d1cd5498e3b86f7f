/*
 * doctor_mem.c - the doctor's rows of the memory class (durability:
 * memory): this database's shared-memory table (memory_table), and the
 * tables of this database that an earlier boot of the host left in the
 * same folder (memory_stale), which a doctor run with RLS_DOCTOR_FIX
 * removes.
 *
 * Why they pile up: a table's name carries the boot it was made in
 * (storage/shm/shmfile.c, rls__shm_path), so after a reboot every process
 * makes a new one.  In /dev/shm the old one went with the reboot; in a
 * shm_dir on disk (beside the database) it stays, a file as large as the
 * table (59 MB with the default 65,536 slots), and no process will ever
 * use it again (shmlist.h).  Only tables of this database's identity are
 * looked at: another database's table is never read, reported or removed,
 * and neither is this boot's.
 *
 * The doctor attaches the current table read-only in effect: it never
 * makes one (a missing table is reported as such), and counts the live
 * entries one bucket lock at a time, as `rlctl usage` does.
 */
#include <stdio.h>
#include <string.h>
#include "admin.h"
#include "memclass.h"
#include "shm/shmlist.h"

struct mem_doctor {
    rls_rows *r;
    int *bad;
    int fix;
};

static int count_live(void *ctx, int64_t lid, int kind, const void *key, size_t key_len,
                      const algo_state *st)
{
    (void)lid, (void)kind, (void)key, (void)key_len, (void)st;
    ++*(uint64_t *)ctx;
    return 0;
}

/* "58.9 MB" */
static void size_text(uint64_t bytes, char *buf, size_t cap)
{
    if (bytes >= 1000000)
        snprintf(buf, cap, "%.1f MB", (double)bytes / 1e6);
    else if (bytes >= 1000)
        snprintf(buf, cap, "%.1f kB", (double)bytes / 1e3);
    else
        snprintf(buf, cap, "%llu bytes", (unsigned long long)bytes);
}

/* A table this user may not open for writing (its locks): what its
 * header says, without the live entries. */
static void header_row(struct mem_doctor *m, const char *path, const char *open_why)
{
    char detail[4600], why[256] = "", size[32];
    rls__shm_file f;
    if (rls__shm_file_read(path, &f, why, sizeof why) != RLS_OK) {
        snprintf(detail, sizeof detail, "%s: %s", path, open_why);
        *m->bad |= rls__doctor_add(m->r, "memory_table", "fail", detail);
        return;
    }
    size_text(f.st_size, size, sizeof size);
    snprintf(detail, sizeof detail, "%s: %s, %u slots, keys up to %u bytes, sliding logs "
             "of %u; %llu locks taken over from killed processes; live entries not "
             "counted (%s)", path, size, f.geom.slots, f.geom.key_max, f.geom.log_max,
             (unsigned long long)f.recoveries, open_why);
    *m->bad |= rls__doctor_add(m->r, "memory_table", "warn", detail);
}

/* The row of the table this boot's processes use: never made here. */
static void current_row(struct mem_doctor *m, const char *path)
{
    char detail[4600], why[256] = "", size[32];
    rls__shm *t = NULL;
    rls__shm_info info;
    uint64_t live = 0;
    int64_t now;
    int rc = rls__shm_open(&t, path, NULL, why, sizeof why);
    if (rc == RLS_ENOTFOUND) {
        snprintf(detail, sizeof detail, "no table at %s yet: the first check of a "
                 "durability: memory limit makes it", path);
        *m->bad |= rls__doctor_add(m->r, "memory_table", "ok", detail);
        return;
    }
    if (rc == RLS_ECANTOPEN) {
        header_row(m, path, why);
        return;
    }
    if (rc == RLS_OK && (rls__now(&now) != RLS_OK || rls__shm_info_get(t, &info) != RLS_OK))
        rc = RLS_EIO;
    if (rc == RLS_OK)
        rc = rls__shm_each(t, now, count_live, &live);
    rls__shm_close(t);
    if (rc != RLS_OK) {
        /* the checks of memory limits fail the same way (failure policy) */
        snprintf(detail, sizeof detail, "%s: %s", path, why[0] ? why : rls_strerror(rc));
        *m->bad |= rls__doctor_add(m->r, "memory_table", "fail", detail);
        return;
    }
    size_text(info.file_size, size, sizeof size);
    snprintf(detail, sizeof detail, "%s: %s, %u slots, keys up to %u bytes, sliding logs "
             "of %u; %llu live entries; %llu locks taken over from killed processes",
             path, size, info.geom.slots, info.geom.key_max, info.geom.log_max,
             (unsigned long long)live, (unsigned long long)info.recoveries);
    *m->bad |= rls__doctor_add(m->r, "memory_table", "ok", detail);
}

/* One row per other table file of this database's identity. */
static int sibling_row(void *ctx, const char *path)
{
    struct mem_doctor *m = ctx;
    char detail[4600], why[256] = "", size[32];
    rls__shm_file f;
    int rc = rls__shm_file_read(path, &f, why, sizeof why);
    if (rc == RLS_ENOTFOUND)
        return 0;   /* removed meanwhile */
    if (rc != RLS_OK) {
        snprintf(detail, sizeof detail, "%s: named as a table of this database, but %s; "
                 "left alone", path, why);
        *m->bad |= rls__doctor_add(m->r, "memory_stale", "warn", detail);
        return 0;
    }
    size_text(f.st_size, size, sizeof size);
    if (!rls__shm_boot_stale(f.boot)) {
        snprintf(detail, sizeof detail, "%s: %s, a table of this database %s; left alone",
                 path, size, f.boot ? "made in this boot of the host under another name"
                                    : "whose boot is unknown (it may be in use)");
        *m->bad |= rls__doctor_add(m->r, "memory_stale", "warn", detail);
        return 0;
    }
    if (!m->fix) {
        snprintf(detail, sizeof detail, "%s: %s, a table of this database from an earlier "
                 "boot of the host, which no process can use (the doctor's fix option, "
                 "rlctl doctor --fix, removes it)", path, size);
        *m->bad |= rls__doctor_add(m->r, "memory_stale", "warn", detail);
        return 0;
    }
    rc = rls__shm_remove_stale(path, why, sizeof why);
    if (rc == RLS_OK || rc == RLS_ENOTFOUND) {
        snprintf(detail, sizeof detail, "removed %s: %s, a table of this database from an "
                 "earlier boot of the host", path, size);
        *m->bad |= rls__doctor_add(m->r, "memory_stale", "ok", detail);
        return 0;
    }
    snprintf(detail, sizeof detail, "%s: %s from an earlier boot, not removed: %s", path,
             size, why);
    *m->bad |= rls__doctor_add(m->r, "memory_stale", "fail", detail);
    return 0;
}

int rls__doctor_mem(rls_db *db, int fix, rls_rows *r, int *bad)
{
    struct mem_doctor m = {r, bad, fix};
    char detail[4600];
    const char *path = rls__mem_path(db);
    if (!*path) {
        *bad |= rls__doctor_add(r, "memory_table", "warn", "the table of durability: memory "
                                "limits has no name: the database's identity cannot be read");
        return RLS_OK;
    }
    current_row(&m, path);
    int rc = rls__shm_each_sibling(path, sibling_row, &m);
    if (rc == RLS_ECANTOPEN) {
        snprintf(detail, sizeof detail, "cannot list the folder of %s: tables of earlier "
                 "boots not looked for", path);
        *bad |= rls__doctor_add(r, "memory_stale", "warn", detail);
    } else if (rc != RLS_OK) {
        return rls__error(db, rc, "doctor: cannot list the shared-memory tables");
    }
    return RLS_OK;
}
