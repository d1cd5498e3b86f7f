/*
 * hostile.h - helpers of the hostile-file suites (issue #5, suite 6):
 * test_hostile_open (what is in the file: not a database, truncated, empty,
 * a newer schema, planted objects) and test_hostile_fs (where the file is:
 * read-only file or directory, a directory, symlinks, a full filesystem).
 *
 * make_db() writes a closed rlstore database with rules and some state;
 * refused() / refused_as() assert that rls_open fails with a named error,
 * leaves *db NULL, explains itself and leaves the file byte for byte as it
 * was and its directory with the same entries (snap_take() /
 * snap_assert_same(), dir_listing()).  schema_version() is the newest
 * schema version the library knows.
 */
#ifndef RLS_HOSTILE_H
#define RLS_HOSTILE_H

#include <dirent.h>
#include "reltest.h"

static const char RULES[] =
    "version: 1\n"
    "actions:\n"
    "  api:\n"
    "    limits: [ { name: rate, algorithm: fixed_window, limit: 3, window: 1h } ]\n"
    "  many:\n"
    "    limits: [ { name: rate, algorithm: fixed_window, limit: 3, window: 1d } ]\n";

/* Names and sizes of every entry of dir, sorted, as one string. */
static inline char *dir_listing(const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    size_t cap = 256 + (size_t)(n > 0 ? n : 0) * 320, used = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char p[4200];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, names[i]->d_name);
        if (lstat(p, &sb) != 0)
            sb.st_size = -1;
        if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0)
            used += (size_t)snprintf(out + used, cap - used, "%s:%lld:%o ", names[i]->d_name,
                                     S_ISDIR(sb.st_mode) ? 0LL : (long long)sb.st_size,
                                     (unsigned)sb.st_mode);
        free(names[i]);
    }
    free(names);
    return out;
}

/* A snapshot of a file and of its directory. */
typedef struct snap {
    char path[4200];
    char dir[4200];
    unsigned char *bytes;
    size_t len;
    char *listing;
} snap;

static inline void snap_take(snap *s, const char *path)
{
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->dir, sizeof s->dir, "%s", path);
    char *slash = strrchr(s->dir, '/');
    assert_non_null(slash);
    *slash = '\0';
    s->bytes = rel_slurp(path, &s->len);
    s->listing = dir_listing(s->dir);
}

/* The file has the same bytes and its directory the same entries. */
static inline void snap_assert_same(snap *s, const char *what)
{
    size_t len;
    unsigned char *now = rel_slurp(s->path, &len);
    char *listing = dir_listing(s->dir);
    if ((now == NULL) != (s->bytes == NULL) || len != s->len ||
        (len && memcmp(now, s->bytes, len) != 0))
        fail_msg("%s: the file changed (%zu -> %zu bytes)", what, s->len, len);
    if (strcmp(listing, s->listing) != 0)
        fail_msg("%s: the directory changed:\n  before: %s\n  after:  %s", what, s->listing,
                 listing);
    free(now);
    free(listing);
    free(s->bytes);
    free(s->listing);
    s->bytes = NULL;
    s->listing = NULL;
}

/* rls_open must fail with want (or also_ok, if not RLS_OK), leave *db
 * NULL, explain itself, and leave the file and its directory as they were. */
static inline void refused_as(const char *path, int want, int also_ok, const char *what)
{
    snap s;
    snap_take(&s, path);
    rls_db *db = (rls_db *)1;
    int rc = rls_open(&db, path, NULL);
    if (rc == RLS_OK)
        rls_close(db);
    if (rc != want && (also_ok == RLS_OK || rc != also_ok))
        fail_msg("%s: rls_open gave %s (%s), expected %s", what, rls_errname(rc),
                 rls_errmsg(NULL), rls_errname(want));
    assert_null(db);
    assert_true(strlen(rls_errmsg(NULL)) > 0);
    print_message("%-34s %-9s %s\n", what, rls_errname(rc), rls_errmsg(NULL));
    snap_assert_same(&s, what);
}

static inline void refused(const char *path, int want, const char *what)
{
    refused_as(path, want, RLS_OK, what);
}

/* A closed rlstore database with rules and some state in dir/name. */
static inline void make_db(const char *dir, const char *name, char *path, size_t size, int keys)
{
    rls_db *db;
    rls_result r;
    char key[32];
    tu_path(path, size, dir, name);
    assert_int_equal(rls_open(&db, path, NULL), RLS_OK);
    assert_int_equal(rls_rules_apply_at(db, RULES, strlen(RULES), "r.yaml", NULL, T0, NULL),
                     RLS_OK);
    for (int i = 0; i < keys; i++) {
        snprintf(key, sizeof key, "key:%d", i);
        assert_int_equal(rls_check_at(db, "many", key, 1, T0, &r), RLS_OK);
    }
    rls_close(db);
    /* closed: checkpointed, no -wal or -shm left; the -ckpt side file may
     * stay (it is meant to) */
    char side[4300];
    snprintf(side, sizeof side, "%s-ckpt", path);
    unlink(side);
}

/* The schema version (user_version) of a database this library creates:
 * the newest it knows. */
static inline int64_t schema_version(void)
{
    char *dir = tu_mkdtemp(), path[4200];
    make_db(dir, "version.db", path, sizeof path, 0);
    int64_t v = it_sql_int(path, "PRAGMA user_version");
    assert_true(v >= 1);
    tu_rmdir(dir);
    return v;
}

#endif
