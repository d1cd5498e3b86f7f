/*
 * driver.c - finding the PostgreSQL backend for a postgresql:// URI
 * (driver.h): rls__pg_loader stands in the list of backends rls_open asks
 * (handle.c); its init loads the driver module on first use and hands the
 * handle over to the backend it returns.
 *
 * Where the module is, first found wins:
 *   1. $RLSTORE_PG_DRIVER, the module's file (tests, unusual layouts;
 *      ignored in set-user-ID programs: secure_getenv);
 *   2. rlstore/rlstore-pg.so in the directory librlstore.so was loaded
 *      from (the build tree, or any installed prefix, with no setting);
 *   3. RLS_PG_DRIVER_DIR/rlstore-pg.so, the install directory the library
 *      was built for ($(LIBDIR)/rlstore, Makefile).
 * A file that exists but does not load (another version, a missing libpq)
 * is an error of its own: the next place is not tried, so that a stale
 * module never hides behind a working one.
 *
 * The module is loaded once per process and never unloaded; a failed load
 * is tried again at the next open (the package may have been installed
 * since).  Compiled with RLS_PG_BUILTIN (the test binaries, which link the
 * backend's objects), the loader takes the linked-in backend instead.
 */
#define _GNU_SOURCE   /* dladdr, secure_getenv */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "driver.h"

#ifndef RLS_PG_DRIVER_DIR
#define RLS_PG_DRIVER_DIR "/usr/local/lib/rlstore"
#endif

/* The same test as the driver's claims (rls__pg_uri, pg_open.c), which
 * the library cannot call before the driver is loaded. */
static int pg_uri(const char *path)
{
    return strncmp(path, "postgresql://", 13) == 0 || strncmp(path, "postgres://", 11) == 0;
}

#ifdef RLS_PG_BUILTIN

static int pg_find(rls_db *db, const rls_backend **out)
{
    (void)db;
    *out = &rls__pg_backend;
    return RLS_OK;
}

#else

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static const rls_backend *loaded;   /* under load_lock; never unloaded */

#define HOST_FN(ret, name, params, args) .name = rls__##name,
#define HOST_VOID(name, params, args) .name = rls__##name,
static const rls__driver_host host = {
    .version = RLS_VERSION_HEX,
    .size = sizeof(rls__driver_host),
    .db_size = sizeof(rls_db),
    .backend_size = sizeof(rls_backend),
    .call_size = sizeof(struct check_call),
    .keyctx_size = sizeof(key_ctx),
    .error = rls__error,
    RLS__DRIVER_HOST_MAP(HOST_FN, HOST_VOID)
};
#undef HOST_FN
#undef HOST_VOID

/* Place 2: beside the librlstore.so this code was loaded from, when it was
 * (linked from librlstore.a into a program, it has no directory of its
 * own).  0 when there is no such place. */
static int beside_library(char *buf, size_t size)
{
    Dl_info info;
    if (!dladdr((void *)pg_uri, &info) || !info.dli_fname)
        return 0;
    const char *slash = strrchr(info.dli_fname, '/');
    const char *base = slash ? slash + 1 : info.dli_fname;
    if (strncmp(base, "librlstore.so", 13) != 0)
        return 0;
    int dir = slash ? (int)(slash - info.dli_fname) : 1;
    int n = snprintf(buf, size, "%.*s/%s", dir, slash ? info.dli_fname : ".",
                     RLS__PG_DRIVER_FILE);
    return n > 0 && (size_t)n < size;
}

/* Loads the module at path and accepts its backend; under load_lock. */
static int pg_load(rls_db *db, const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return rls__error(db, RLS_ECANTOPEN, "PostgreSQL driver cannot be loaded: %s", dlerror());
    /* POSIX guarantees a function's address converts from dlsym's void * */
    rls__driver_entry_fn *entry = (rls__driver_entry_fn *)dlsym(h, RLS__PG_DRIVER_ENTRY);
    char why[256] = "no " RLS__PG_DRIVER_ENTRY " in it";
    const rls_backend *be = entry ? entry(&host, why, sizeof why) : NULL;
    if (!be) {
        dlclose(h);
        return rls__error(db, RLS_ECANTOPEN, "PostgreSQL driver '%s' refused: %s", path, why);
    }
    loaded = be;
    return RLS_OK;
}

static int pg_find(rls_db *db, const rls_backend **out)
{
    char beside[4096];
    const char *env = secure_getenv("RLSTORE_PG_DRIVER");
    const char *places[3] = {NULL, NULL, RLS_PG_DRIVER_DIR "/rlstore-pg.so"};
    int rc = RLS_OK;

    if (env && *env)
        places[0] = env;
    else if (beside_library(beside, sizeof beside))
        places[1] = beside;
    pthread_mutex_lock(&load_lock);
    if (!loaded) {
        const char *path = NULL;
        for (int i = 0; i < 3 && !path; i++)
            if (places[i] && (i == 0 || access(places[i], F_OK) == 0))
                path = places[i];
        if (path)
            rc = pg_load(db, path);
        else
            rc = rls__error(db, RLS_ECANTOPEN, "PostgreSQL driver not installed: no %s%s%s "
                            "(install the PostgreSQL driver of librlstore, e.g. the package "
                            "librlstore0-pg, or name the file in RLSTORE_PG_DRIVER)",
                            places[1] ? places[1] : "", places[1] ? " nor " : "", places[2]);
    }
    *out = loaded;
    pthread_mutex_unlock(&load_lock);
    return rc;
}

#endif

/* Hands the handle over to the backend: from here on db->be is its. */
static int loader_init(rls_db *db, const char *path)
{
    const rls_backend *be = NULL;
    int rc = pg_find(db, &be);
    if (rc != RLS_OK)
        return rc;
    db->be = be;
    return be->init(db, path);
}

/* Until init succeeds the handle has no backend part: nothing to close. */
static void loader_nothing(rls_db *db)
{
    (void)db;
}

static int loader_connected(const rls_db *db)
{
    (void)db;
    return 0;
}

/* Only what rls_open calls before init and on its failure path. */
const rls_backend rls__pg_loader = {
    .name = "postgresql",
    .claims = pg_uri,
    .init = loader_init,
    .disconnect = loader_nothing,
    .after_fork = loader_nothing,
    .release = loader_nothing,
    .connected = loader_connected,
};
