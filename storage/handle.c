/*
 * handle.c - the handle's life, whatever its backend (backend.h): rls_open
 * picks the backend from the path and has it open the database, rls_close
 * flushes and closes, and every call first checks the handle is usable
 * (a forked child connects anew, abandoning the parent's connection).
 * Also the options.
 */
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "db.h"
#include "group_int.h"
#include "events.h"
#include "memclass.h"

/* The backends rls_open asks, in order: the first that claims the path.
 * PostgreSQL's is a driver module loaded on first use (driver.c). */
static const rls_backend *const backends[] = {&rls__pg_loader, &rls__sqlite_backend};

/*
 * Fork detection without a system call per check: every child increments
 * fork_count (pthread_atfork), and a handle compares it with the count it
 * was connected under; getpid() only when it moved.  Without the handler
 * (registration failed) every call compares the pid, as before.
 */
static unsigned long fork_count;
static int fork_hooked;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
    __atomic_add_fetch(&fork_count, 1, __ATOMIC_RELAXED);
}

static void fork_register(void)
{
    fork_hooked = pthread_atfork(NULL, NULL, fork_child) == 0;
}

static unsigned long forks_now(void)
{
    return __atomic_load_n(&fork_count, __ATOMIC_RELAXED);
}

/*
 * rls_options_init() writes the defaults into the caller's struct, so it
 * must never write more than the program's sizeof(rls_options), which the
 * library cannot see.  The struct grew (counters_path and what follows):
 * programs built against the first header are bound to the symbol version
 * RLSTORE_0 and get rls__options_init_v0, which fills only the first layout;
 * programs built since link rls_options_init@@RLSTORE_0.2 (librlstore.map,
 * docs/ABI.md).  It grew again in RLSTORE_0.7 (thread_safe and what
 * follows): programs built between get rls__options_init_v2, which fills
 * up to file_group.  The next field appended needs the next version node.
 */
#define OPTIONS_V0_SIZE offsetof(rls_options, counters_path)
#define OPTIONS_V2_SIZE offsetof(rls_options, thread_safe)

static void options_defaults(rls_options *opt, size_t size)
{
    memset(opt, 0, size);
    opt->size = size;
    opt->busy_timeout_ms = 5000;
    opt->durability = RLS_DURABILITY_NORMAL;
    opt->on_error = RLS_ON_ERROR_DENY;
    opt->read_only = 0;
    opt->create = 1;
    opt->file_mode = 0600;
    opt->max_key_len = RLS_KEY_MAX_DEFAULT;
    opt->tool = "lib";
    if (size > OPTIONS_V2_SIZE)
        opt->shm_slots = 65536;
}

/* Exported only under their versioned names (the version script makes
 * these names local). */
__attribute__((visibility("default"))) void rls__options_init_v0(rls_options *opt);
__attribute__((visibility("default"))) void rls__options_init_v2(rls_options *opt);
__attribute__((visibility("default"))) void rls__options_init_v7(rls_options *opt);

void rls__options_init_v0(rls_options *opt)
{
    if (opt)
        options_defaults(opt, OPTIONS_V0_SIZE);
}

void rls__options_init_v2(rls_options *opt)
{
    if (opt)
        options_defaults(opt, OPTIONS_V2_SIZE);
}

void rls__options_init_v7(rls_options *opt)
{
    if (opt)
        options_defaults(opt, sizeof *opt);
}

__asm__(".symver rls__options_init_v0, rls_options_init@RLSTORE_0");
__asm__(".symver rls__options_init_v2, rls_options_init@RLSTORE_0.2");
__asm__(".symver rls__options_init_v7, rls_options_init@@RLSTORE_0.7");

/* Copies the fields the caller's struct has (it may be older and smaller). */
static int options_take(rls_options *dst, const rls_options *src)
{
    options_defaults(dst, sizeof *dst);
    if (!src)
        return RLS_OK;
    if (src->size < offsetof(rls_options, busy_timeout_ms) + sizeof(int) ||
        src->size > sizeof(rls_options) * 4)
        return RLS_EINVAL;
    size_t n = src->size < sizeof *dst ? src->size : sizeof *dst;
    memcpy(dst, src, n);
    dst->size = sizeof *dst;
    if (!dst->tool)
        dst->tool = "lib";
    if (dst->busy_timeout_ms < 0 || dst->max_key_len < 1 ||
        dst->max_key_len > RLS_KEY_MAX_LIMIT ||
        (dst->durability != RLS_DURABILITY_NORMAL &&
         dst->durability != RLS_DURABILITY_FULL) ||
        (dst->on_error != RLS_ON_ERROR_DENY && dst->on_error != RLS_ON_ERROR_ALLOW) ||
        (dst->file_mode & ~0777u) != 0 || (dst->thread_safe != 0 && dst->thread_safe != 1))
        return RLS_EINVAL;
    return RLS_OK;
}

static void who_am_i(rls_db *db)
{
    struct passwd pw, *res = NULL;
    char buf[1024];
    if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res)
        snprintf(db->ident.os_user, sizeof db->ident.os_user, "%s", pw.pw_name);
    else
        snprintf(db->ident.os_user, sizeof db->ident.os_user, "uid:%ld", (long)geteuid());
}

/* The shared-memory table's options (memclass.c): shm_dir copied, as the
 * caller's string may not outlive the handle; shm_slots 0 is the default. */
static int shm_options(rls_db *db)
{
    rls_options *o = &db->ident.opt;
    if (o->shm_slots == 0)
        o->shm_slots = 65536;
    if (o->shm_slots < 2 * RLS__SHM_WAYS || o->shm_slots > RLS__SHM_SLOTS_MAX)
        return rls__error(db, RLS_EINVAL, "rls_open: shm_slots %u is outside %d..%u",
                          o->shm_slots, 2 * RLS__SHM_WAYS, (unsigned)RLS__SHM_SLOTS_MAX);
    if (o->shm_dir && !*o->shm_dir)
        return rls__error(db, RLS_EINVAL, "rls_open: shm_dir is empty");
    if (o->shm_dir && !(o->shm_dir = strdup(o->shm_dir)))
        return rls__error(db, RLS_ENOMEM, "out of memory");
    db->shm_dir_owned = (char *)o->shm_dir;
    return RLS_OK;
}

/* Checks the options no backend could honour; the backend refuses the
 * ones it cannot (init). */
static int options_check(rls_db *db)
{
    const char *counters = db->ident.opt.counters_path;
    if (counters && !*counters)
        return rls__error(db, RLS_EINVAL, "rls_open: counters_path is empty");
    if (db->ident.opt.rules_read_only && !counters)
        return rls__error(db, RLS_EINVAL, "rls_open: rules_read_only needs counters_path "
                          "(a split deployment)");
    return shm_options(db);
}

/* Frees what rls_open allocated; the connection is closed or abandoned. */
static void handle_free(rls_db *db)
{
    db->be->release(db);
    rls__mem_close(db);
    free(db->ctx_spare);
    free(db->shm_dir_owned);
    free(db->ident.path);
    free(db);
}

int rls_open(rls_db **out, const char *path, const rls_options *opt)
{
    int rc;
    rls_db *db;

    rls__error(NULL, RLS_OK, "%s", "");   /* no failed open to tell of yet */
    if (!out)
        return rls__error(NULL, RLS_EINVAL, "rls_open: db is NULL");
    *out = NULL;
    if (!path || !*path)
        return rls__error(NULL, RLS_EINVAL, "rls_open: path is NULL or empty");
    db = calloc(1, sizeof *db);
    if (!db)
        return rls__error(NULL, RLS_ENOMEM, "out of memory");
    rls__cache_forget(db);
    if ((rc = options_take(&db->ident.opt, opt))) {
        free(db);
        return rls__error(NULL, rc, "rls_open: invalid options");
    }
    snprintf(db->ident.tool, sizeof db->ident.tool, "%s", db->ident.opt.tool);
    db->ident.opt.tool = db->ident.tool;
    for (size_t i = 0; !db->be; i++)
        if (backends[i]->claims(path))
            db->be = backends[i];
    who_am_i(db);
    pthread_once(&fork_once, fork_register);
    db->ident.forks = forks_now();
    db->ident.pid = getpid();
    db->conn.rng = (uint32_t)db->ident.pid * 2654435761u + 1;
    rc = options_check(db);
    if (rc == RLS_OK)
        rc = db->be->init(db, path);
    if (rc == RLS_OK)
        rc = db->be->connect(db);
    if (rc == RLS_OK)
        rls__mem_init(db);   /* the table opens at the first memory-class check */
    if (rc == RLS_OK && db->ident.opt.thread_safe)
        rc = rls__group_open(db);
    if (rc != RLS_OK) {
        rls__error(NULL, rc, "%s", db->errmsg);   /* rls_errmsg(NULL) tells it */
        /* A file this call created stays: another process may have opened
         * it as soon as it was there (create.c) */
        db->be->disconnect(db);
        handle_free(db);
        return rc;
    }
    *out = db;
    return RLS_OK;
}

/* Flushes what the handle counted in memory, in a last transaction. */
static void flush_on_close(rls_db *db)
{
    int64_t now;
    if (rls__now(&now) == RLS_OK && rls__begin(db, 1) == RLS_OK) {
        rls__tx_mark_check(db, 1);  /* stats only: gives nothing back (deny.c) */
        if (rls__stats_flush(db, now, 1) == RLS_OK)
            rls__commit(db);
        else
            rls__rollback(db);
    }
}

void rls_close(rls_db *db)
{
    if (!db)
        return;
    if (db->ident.pid == getpid()) {
        if (rls__connected(db) && !db->conn.in_tx &&
            (rls__stats_pending(db) || rls__keystat_pending(db) || rls__metrics_pending(db)))
            flush_on_close(db);
        db->be->disconnect(db);
    } else {
        /* In a forked child the parent's connection is abandoned, never
         * closed: closing could disturb the parent's locks or WAL. */
        db->be->after_fork(db);
    }
    rls__cache_free(db);
    rls__deny_close(db);
    rls__keystat_free(db);
    rls__events_free(db);
    free(db->stats.acc);
    rls__group_close(db);
    handle_free(db);
}

/* group.c: a thread-safe handle re-makes its locks when this changes. */
unsigned long rls__fork_epoch(void)
{
    return fork_hooked ? forks_now() : (unsigned long)getpid();
}

int rls__connected(const rls_db *db)
{
    return db->be->connected(db);
}

/*
 * Checks that the handle can be used.  After fork() the child gets a fresh
 * connection of its own; the inherited one is abandoned untouched.
 */
int rls__db_usable(rls_db *db)
{
    if (!db)
        return RLS_EINVAL;
    if (fork_hooked && db->ident.forks == forks_now() && rls__connected(db))
        return RLS_OK;  /* no fork since it connected */
    if (db->ident.pid == getpid()) {
        if (!rls__connected(db))
            return rls__error(db, RLS_EMISUSE, "handle has no open connection");
        return RLS_OK;
    }
    db->be->after_fork(db);
    rls__stmt_forget(db);
    rls__stats_forget(db);
    rls__keystat_free(db);  /* the parent flushes its own */
    rls__events_forget(db);
    rls__cache_forget(db);
    rls__mem_after_fork(db);
    db->ident.pid = getpid();
    db->ident.forks = forks_now();
    int rc = db->be->connect(db);
    if (rc != RLS_OK) {
        db->be->disconnect(db);
        db->ident.pid = 0;  /* not connected: the next call tries again */
        return rc;
    }
    return RLS_OK;
}

int rls__rules_writable(rls_db *db)
{
    if (db->ident.opt.read_only)
        return rls__error(db, RLS_EREADONLY, "'%s' is opened read-only", db->ident.path);
    if (!db->be->rules_writable(db))
        return rls__error(db, RLS_EREADONLY, "the rules database '%s' is opened read-only "
                          "(rules_read_only): changes of rules, tiers, overrides, blocks and "
                          "counters need an admin handle", db->ident.path);
    return RLS_OK;
}

int rls__tx_retry(rls_db *db, int rc, int *attempt)
{
    return db && rc != RLS_OK &&
           (rls__mem_retry(db, rc, attempt) || db->be->tx_retry(db, rc, attempt));
}
