/*
 * faultvfs.c - the fault-injecting VFS shim of faultvfs.h.
 *
 * Each file the shim opens is a fv_file followed in memory by the real
 * VFS's file object: szOsFile is the sum of both.  Every io method forwards
 * to the real one, except that a counted operation whose turn has come
 * returns the armed error instead (the real operation does not run).
 */
#include <string.h>
#include "faultvfs.h"

typedef struct fv_file {
    sqlite3_file base;      /* pMethods = one of fv_methods[] */
    sqlite3_file *real;     /* the unix VFS's file, right after this struct */
} fv_file;

static sqlite3_vfs fv_vfs;
static sqlite3_vfs *fv_real;                 /* the wrapped "unix" VFS */
static sqlite3_io_methods fv_methods[3];     /* for real iVersion 1, 2, 3 */

static struct {
    int armed, kind, err, sticky;
    long n;                                  /* fail the n-th op of kind */
    long seen[FV__KINDS];                    /* since the last arm */
    long injected;                           /* since the last arm */
    long total[FV__KINDS][256];              /* since install: [kind][code & 0xff] */
} fv;

static const char *const fv_names[FV__KINDS] = {"write", "sync", "truncate", "shm", "read"};

const char *fv_kind_name(int kind)
{
    return kind >= 0 && kind < FV__KINDS ? fv_names[kind] : "?";
}

int fv_ioerr(int kind)
{
    switch (kind) {
    case FV_WRITE: return SQLITE_IOERR_WRITE;
    case FV_SYNC: return SQLITE_IOERR_FSYNC;
    case FV_TRUNCATE: return SQLITE_IOERR_TRUNCATE;
    case FV_READ: return SQLITE_IOERR_READ;
    default: return SQLITE_IOERR_SHMMAP;
    }
}

void fv_arm(int kind, long n, int err, int sticky)
{
    memset(fv.seen, 0, sizeof fv.seen);
    fv.injected = 0;
    fv.kind = kind;
    fv.n = n;
    fv.err = err;
    fv.sticky = sticky;
    fv.armed = 1;
}

void fv_disarm(void)
{
    fv.armed = 0;
}

long fv_seen(int kind)
{
    return kind >= 0 && kind < FV__KINDS ? fv.seen[kind] : 0;
}

long fv_injected_since_arm(void)
{
    return fv.injected;
}

long fv_injected_total(int kind, int err)
{
    long n = 0;
    if (kind < 0 || kind >= FV__KINDS)
        return 0;
    for (int c = 0; c < 256; c++)
        if (err == 0 || c == (err & 0xff))
            n += fv.total[kind][c];
    return n;
}

/* Counts one operation of kind; returns the error to report, or SQLITE_OK
 * to let the real VFS do it. */
static int fv_fault(int kind)
{
    fv.seen[kind]++;
    if (!fv.armed || kind != fv.kind)
        return SQLITE_OK;
    if (fv.seen[kind] == fv.n || (fv.sticky && fv.seen[kind] > fv.n)) {
        fv.injected++;
        fv.total[kind][fv.err & 0xff]++;
        return fv.err;
    }
    return SQLITE_OK;
}

static sqlite3_file *real_of(sqlite3_file *f)
{
    return ((fv_file *)f)->real;
}

/* ---- io methods --------------------------------------------------------- */

static int fv_close(sqlite3_file *f)
{
    sqlite3_file *r = real_of(f);
    int rc = r->pMethods ? r->pMethods->xClose(r) : SQLITE_OK;
    f->pMethods = NULL;
    return rc;
}

static int fv_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
    sqlite3_file *r = real_of(f);
    int rc = fv_fault(FV_READ);
    return rc != SQLITE_OK ? rc : r->pMethods->xRead(r, buf, amt, off);
}

static int fv_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
    sqlite3_file *r = real_of(f);
    int rc = fv_fault(FV_WRITE);
    return rc != SQLITE_OK ? rc : r->pMethods->xWrite(r, buf, amt, off);
}

static int fv_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    sqlite3_file *r = real_of(f);
    int rc = fv_fault(FV_TRUNCATE);
    return rc != SQLITE_OK ? rc : r->pMethods->xTruncate(r, size);
}

static int fv_sync(sqlite3_file *f, int flags)
{
    sqlite3_file *r = real_of(f);
    int rc = fv_fault(FV_SYNC);
    return rc != SQLITE_OK ? rc : r->pMethods->xSync(r, flags);
}

static int fv_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xFileSize(r, size);
}

static int fv_lock(sqlite3_file *f, int lock)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xLock(r, lock);
}

static int fv_unlock(sqlite3_file *f, int lock)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xUnlock(r, lock);
}

static int fv_check_reserved(sqlite3_file *f, int *out)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xCheckReservedLock(r, out);
}

static int fv_file_control(sqlite3_file *f, int op, void *arg)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xFileControl(r, op, arg);
}

static int fv_sector_size(sqlite3_file *f)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xSectorSize(r);
}

static int fv_device_characteristics(sqlite3_file *f)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xDeviceCharacteristics(r);
}

static int fv_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **pp)
{
    sqlite3_file *r = real_of(f);
    int rc = fv_fault(FV_SHM);
    if (rc != SQLITE_OK) {
        *pp = NULL;
        return rc;
    }
    return r->pMethods->xShmMap(r, region, size, extend, pp);
}

static int fv_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    sqlite3_file *r = real_of(f);
    if (flags & SQLITE_SHM_LOCK) {
        int rc = fv_fault(FV_SHM);
        if (rc == SQLITE_IOERR_SHMMAP)
            rc = SQLITE_IOERR_SHMLOCK;
        if (rc != SQLITE_OK)
            return rc;
    }
    return r->pMethods->xShmLock(r, offset, n, flags);
}

static void fv_shm_barrier(sqlite3_file *f)
{
    sqlite3_file *r = real_of(f);
    r->pMethods->xShmBarrier(r);
}

static int fv_shm_unmap(sqlite3_file *f, int del)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xShmUnmap(r, del);
}

static int fv_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xFetch(r, off, amt, pp);
}

static int fv_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xUnfetch(r, off, p);
}

/* ---- vfs methods -------------------------------------------------------- */

static int fv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
                   int *out_flags)
{
    fv_file *p = (fv_file *)f;
    p->real = (sqlite3_file *)&p[1];
    p->base.pMethods = NULL;
    int rc = fv_real->xOpen(fv_real, name, p->real, flags, out_flags);
    if (p->real->pMethods) {
        int v = p->real->pMethods->iVersion;
        p->base.pMethods = &fv_methods[v < 1 ? 0 : v > 3 ? 2 : v - 1];
    }
    return rc;
}

static int fv_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    return fv_real->xDelete(fv_real, name, sync_dir);
}

static int fv_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    return fv_real->xAccess(fv_real, name, flags, out);
}

static int fv_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    return fv_real->xFullPathname(fv_real, name, n, out);
}

static void *fv_dlopen(sqlite3_vfs *vfs, const char *name)
{
    return fv_real->xDlOpen(fv_real, name);
}

static void fv_dlerror(sqlite3_vfs *vfs, int n, char *msg)
{
    fv_real->xDlError(fv_real, n, msg);
}

static void (*fv_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
    return fv_real->xDlSym(fv_real, h, sym);
}

static void fv_dlclose(sqlite3_vfs *vfs, void *h)
{
    fv_real->xDlClose(fv_real, h);
}

static int fv_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    return fv_real->xRandomness(fv_real, n, out);
}

static int fv_sleep(sqlite3_vfs *vfs, int us)
{
    return fv_real->xSleep(fv_real, us);
}

static int fv_current_time(sqlite3_vfs *vfs, double *t)
{
    return fv_real->xCurrentTime(fv_real, t);
}

static int fv_get_last_error(sqlite3_vfs *vfs, int n, char *msg)
{
    return fv_real->xGetLastError(fv_real, n, msg);
}

static int fv_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *t)
{
    return fv_real->xCurrentTimeInt64(fv_real, t);
}

static int fv_set_system_call(sqlite3_vfs *vfs, const char *name, sqlite3_syscall_ptr p)
{
    return fv_real->xSetSystemCall(fv_real, name, p);
}

static sqlite3_syscall_ptr fv_get_system_call(sqlite3_vfs *vfs, const char *name)
{
    return fv_real->xGetSystemCall(fv_real, name);
}

static const char *fv_next_system_call(sqlite3_vfs *vfs, const char *name)
{
    return fv_real->xNextSystemCall(fv_real, name);
}

int fv_install(void)
{
    if (fv_real)
        return SQLITE_OK;
    int rc = sqlite3_initialize();
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_vfs *real = sqlite3_vfs_find("unix");
    if (!real)
        return SQLITE_ERROR;
    for (int v = 1; v <= 3; v++) {
        sqlite3_io_methods *m = &fv_methods[v - 1];
        memset(m, 0, sizeof *m);
        m->iVersion = v;
        m->xClose = fv_close;
        m->xRead = fv_read;
        m->xWrite = fv_write;
        m->xTruncate = fv_truncate;
        m->xSync = fv_sync;
        m->xFileSize = fv_file_size;
        m->xLock = fv_lock;
        m->xUnlock = fv_unlock;
        m->xCheckReservedLock = fv_check_reserved;
        m->xFileControl = fv_file_control;
        m->xSectorSize = fv_sector_size;
        m->xDeviceCharacteristics = fv_device_characteristics;
        if (v >= 2) {
            m->xShmMap = fv_shm_map;
            m->xShmLock = fv_shm_lock;
            m->xShmBarrier = fv_shm_barrier;
            m->xShmUnmap = fv_shm_unmap;
        }
        if (v >= 3) {
            m->xFetch = fv_fetch;
            m->xUnfetch = fv_unfetch;
        }
    }
    memset(&fv_vfs, 0, sizeof fv_vfs);
    fv_vfs.iVersion = real->iVersion < 3 ? real->iVersion : 3;
    fv_vfs.szOsFile = (int)sizeof(fv_file) + real->szOsFile;
    fv_vfs.mxPathname = real->mxPathname;
    fv_vfs.zName = "faultvfs";
    fv_vfs.xOpen = fv_open;
    fv_vfs.xDelete = fv_delete;
    fv_vfs.xAccess = fv_access;
    fv_vfs.xFullPathname = fv_full_pathname;
    fv_vfs.xDlOpen = fv_dlopen;
    fv_vfs.xDlError = fv_dlerror;
    fv_vfs.xDlSym = fv_dlsym;
    fv_vfs.xDlClose = fv_dlclose;
    fv_vfs.xRandomness = fv_randomness;
    fv_vfs.xSleep = fv_sleep;
    fv_vfs.xCurrentTime = fv_current_time;
    fv_vfs.xGetLastError = fv_get_last_error;
    if (fv_vfs.iVersion >= 2)
        fv_vfs.xCurrentTimeInt64 = fv_current_time_int64;
    if (fv_vfs.iVersion >= 3) {
        fv_vfs.xSetSystemCall = fv_set_system_call;
        fv_vfs.xGetSystemCall = fv_get_system_call;
        fv_vfs.xNextSystemCall = fv_next_system_call;
    }
    fv_real = real;
    rc = sqlite3_vfs_register(&fv_vfs, 1);
    if (rc != SQLITE_OK)
        fv_real = NULL;
    return rc;
}
