/*
 * split.c - the privilege-separated deployment (docs/SECURITY.md) and the
 * group of the files a deployment shares.
 *
 * With rls_options.counters_path the handle's connection has the counters
 * file as its main database and the rules file attached as schema "rules",
 * read-only for applications (rules_read_only): SQLite then refuses every
 * write to the rules file whatever the file's mode.  Statements reach the
 * right file through their split forms (stmt.c).  Here:
 *
 *  - attaching the rules file, after upgrading its schema through a
 *    connection of its own when the handle may write it (migrations create
 *    their tables in the main database of a connection);
 *  - the role each file records (rls_role, schema/003): a counters file is
 *    never taken for a rules file or the other way round, counters are
 *    never paired with the rules of another deployment, and neither file
 *    of a split deployment is opened as a single file (EROLE).  A new or
 *    empty file takes its role at its first split open;
 *  - the deployment's group (rls_options.file_group) for new files, and
 *    -wal, -shm and -ckpt files kept in the group of their database.
 *
 * The files never take a lock of ours and are never opened here: closing
 * any descriptor of a database or -shm file would drop the POSIX locks
 * SQLite holds on it for every connection of the process.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lite.h"
#include "events.h"

extern const int rls__migration_count;

enum file_role { ROLE_SINGLE = 0, ROLE_RULES = 1, ROLE_COUNTERS = 2 };

#define PAIR_ID_BYTES 16

typedef struct file_role_row {
    int role;
    unsigned char pair[PAIR_ID_BYTES];
    int npair;
} file_role_row;

/* "file:" URI of a path, every byte but [A-Za-z0-9/._~-] percent-encoded,
 * so that no path can be read as URI parameters. */
char *rls__file_uri(const char *path, int read_only)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(path), o;
    char *u = malloc(n * 3 + 32);
    if (!u)
        return NULL;
    o = (size_t)sprintf(u, "file:%s", path[0] == '/' ? "//" : "");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '/' || c == '.' || c == '_' || c == '~' || c == '-') {
            u[o++] = (char)c;
        } else {
            u[o++] = '%';
            u[o++] = hex[c >> 4];
            u[o++] = hex[c & 15];
        }
    }
    strcpy(u + o, read_only ? "?mode=ro" : "");
    return u;
}

static int exec_main(rls_db *db, const char *sql, const char *what)
{
    int rc = sqlite3_exec(db->lite->sql, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? RLS_OK : rls__sqlite_error(db, rc, what);
}

/* Whether path exists (the -shm of a read-only rules file must). */
static int exists(const char *path, const char *suffix)
{
    char name[4200];
    struct stat sb;
    snprintf(name, sizeof name, "%s%s", path, suffix);
    return stat(name, &sb) == 0;
}

static int attach_rules(rls_db *db, int rw)
{
    sqlite3_stmt *st = NULL;
    char *uri = rls__file_uri(db->ident.path, !rw);
    if (!uri)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    int rc = sqlite3_prepare_v2(db->lite->sql, "ATTACH DATABASE ?1 AS rules", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, uri, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    free(uri);
    if (rc == SQLITE_DONE)
        return RLS_OK;
    /* SQLITE_CANTOPEN, or SQLITE_READONLY_* as SQLite cannot create them */
    if (!rw && (!exists(db->ident.path, "-shm") || !exists(db->ident.path, "-wal")))
        return rls__error(db, RLS_ECANTOPEN, "cannot read the rules database '%s': a reader "
                          "that may not write its directory needs its -wal and -shm files, "
                          "which an admin handle creates and keeps (docs/SECURITY.md)",
                          db->ident.path);
    return rls__sqlite_error(db, rc, "cannot attach the rules database");
}

/*
 * Brings the rules file to the library's schema through a connection of its
 * own, where it is the main database.  That connection keeps the -wal and
 * -shm files when it closes, as the handle's does: readers that may not
 * write the directory cannot create them.
 */
static int rules_upgrade(rls_db *db)
{
    sqlite3 *c = NULL;
    int64_t ver = 0, nobj = 0;
    int one = 1, code;
    int rc = sqlite3_open_v2(db->ident.path, &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                             SQLITE_OPEN_EXRESCODE, NULL);
    if (rc != SQLITE_OK) {
        code = c ? rls__conn_error(db, c, rc, "cannot open the rules database")
                 : rls__error(db, RLS_ENOMEM, "out of memory");
        sqlite3_close(c);
        return code;
    }
    rls__conn_defaults(c);
    sqlite3_busy_timeout(c, db->ident.opt.busy_timeout_ms);
    sqlite3_file_control(c, "main", SQLITE_FCNTL_PERSIST_WAL, &one);
    if (sqlite3_db_readonly(c, "main") == 1)
        code = rls__error(db, RLS_EREADONLY, "the rules database '%s' is not writable by this "
                          "user; open it with rules_read_only", db->ident.path);
    else
        code = rls__file_check(db, c, "main", db->ident.path, &ver, &nobj);
    if (code == RLS_OK && ver < rls__migration_count)
        code = rls__file_upgrade(db, c, db->ident.path, ver, nobj);
    if (code == RLS_OK)
        code = rls__set_wal(db, c, "main", db->ident.path);
    sqlite3_close(c);
    return code;
}

static int rules_journal(rls_db *db, int rw)
{
    sqlite3_stmt *st = NULL;
    char mode[16] = "";
    int rc = sqlite3_prepare_v2(db->lite->sql, "PRAGMA rules.journal_mode", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(mode, sizeof mode, "%s", t ? (const char *)t : "");
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return rls__sqlite_error(db, rc, "cannot read the journal mode of the rules database");
    if (strcmp(mode, "wal") == 0)
        return RLS_OK;
    if (rw)
        return rls__set_wal(db, db->lite->sql, "rules", db->ident.path);
    return rls__error(db, RLS_ESTORAGE, "the rules database '%s' is not in WAL mode (%s): open "
                      "it once with an admin handle", db->ident.path, mode);
}

int rls__split_attach(rls_db *db)
{
    int rw = db->lite->rules_rw, rc;
    int64_t ver = 0, nobj = 0;
    /* SQLite would open a file it may not write read-only, and read it,
     * creating -wal and -shm files it cannot share */
    if (rw && faccessat(AT_FDCWD, db->ident.path, W_OK, AT_EACCESS) != 0 && errno != ENOENT)
        return rls__error(db, RLS_EREADONLY, "the rules database '%s' is not writable by this "
                          "user (%s); open it with rules_read_only", db->ident.path, strerror(errno));
    if ((rc = attach_rules(db, rw)))
        return rc;
    if (rw && sqlite3_db_readonly(db->lite->sql, "rules") == 1)
        return rls__error(db, RLS_EREADONLY, "the rules database '%s' is not writable by this "
                          "user; open it with rules_read_only", db->ident.path);
    if ((rc = rls__file_check(db, db->lite->sql, "rules", db->ident.path, &ver, &nobj)))
        return rc;
    if (ver < rls__migration_count) {
        char what[300];
        snprintf(what, sizeof what, "the rules database '%s'", db->ident.path);
        if ((ver != 0 || nobj != 0) &&
            (rc = rls__schema_upgrade_ok(db, what, ver, rls__migration_count)))
            return rc;
        if (!rw)
            return rls__error(db, RLS_EREADONLY, "the rules database '%s' has schema version "
                              "%lld and needs an upgrade to %d, but is opened read-only: open "
                              "it once with an admin tool that may write it (rlctl --db PATH "
                              "--counters PATH doctor)", db->ident.path, (long long)ver,
                              rls__migration_count);
        if ((rc = exec_main(db, "DETACH DATABASE rules", "cannot detach the rules database")) ||
            (rc = rules_upgrade(db)) || (rc = attach_rules(db, rw)) ||
            (rc = rls__file_check(db, db->lite->sql, "rules", db->ident.path, &ver, &nobj)))
            return rc;
    }
    if ((rc = rls__schema_check(db, db->lite->sql, "rules", db->ident.path)) || (rc = rules_journal(db, rw)))
        return rc;
    if (rw) {
        /* admin changes are always synced; keep -wal and -shm for readers */
        int one = 1;
        sqlite3_file_control(db->lite->sql, "rules", SQLITE_FCNTL_PERSIST_WAL, &one);
        rc = exec_main(db, "PRAGMA rules.synchronous = FULL", "cannot configure database");
    }
    return rc;
}

/* ---- roles --------------------------------------------------------------- */

static int role_read(rls_db *db, const char *schema, file_role_row *r)
{
    sqlite3_stmt *st = NULL;
    char sql[96];
    memset(r, 0, sizeof *r);
    snprintf(sql, sizeof sql, "SELECT role, pair_id FROM %s.rls_role WHERE id = 1", schema);
    int rc = sqlite3_prepare_v2(db->lite->sql, sql, -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        r->role = sqlite3_column_int(st, 0);
        r->npair = sqlite3_column_bytes(st, 1);
        if (r->npair > PAIR_ID_BYTES)
            r->npair = PAIR_ID_BYTES;
        if (r->npair > 0)
            memcpy(r->pair, sqlite3_column_blob(st, 1), (size_t)r->npair);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return RLS_OK;
    if (rc == SQLITE_DONE)
        return rls__error(db, RLS_ECORRUPT, "'%s': the role row is missing",
                          strcmp(schema, "rules") == 0 ? db->ident.path : db->lite->counters_path);
    return rls__sqlite_error(db, rc, "cannot read the role of the database");
}

static int query_flag(rls_db *db, const char *sql, int *flag)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->lite->sql, sql, -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        *flag = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? RLS_OK : rls__sqlite_error(db, rc, "cannot read the database");
}

/* A single file that never counted a check may become a rules file; only
 * an empty one a counters file. */
#define RULES_HAS_COUNTERS                                                    \
    "SELECT EXISTS (SELECT 1 FROM rules.rls_state)"                           \
    " OR EXISTS (SELECT 1 FROM rules.rls_reservations)"                       \
    " OR EXISTS (SELECT 1 FROM rules.rls_blocks WHERE kind <> 0)"             \
    " OR EXISTS (SELECT 1 FROM rules.rls_stats_total)"
#define COUNTERS_HAS_DATA                                                     \
    "SELECT EXISTS (SELECT 1 FROM main.rls_rulesets)"                         \
    " OR EXISTS (SELECT 1 FROM main.rls_limits)"                              \
    " OR EXISTS (SELECT 1 FROM main.rls_state)"                               \
    " OR EXISTS (SELECT 1 FROM main.rls_assignments)"                         \
    " OR EXISTS (SELECT 1 FROM main.rls_overrides)"                           \
    " OR EXISTS (SELECT 1 FROM main.rls_blocks)"                              \
    " OR EXISTS (SELECT 1 FROM main.rls_reservations)"                        \
    " OR EXISTS (SELECT 1 FROM main.rls_stats_total)"                         \
    " OR EXISTS (SELECT 1 FROM main.rls_audit)"

/* The refusals that taking a role cannot cure; RLS_OK otherwise. */
static int role_refusal(rls_db *db, const file_role_row *r, const file_role_row *c)
{
    int has = 0, rc;
    if (r->role == ROLE_COUNTERS)
        return rls__error(db, RLS_EROLE, "'%s' is a counters database, not a rules database",
                          db->ident.path);
    if (r->role != ROLE_RULES && r->role != ROLE_SINGLE)
        return rls__error(db, RLS_EROLE, "'%s' has an unknown role %d", db->ident.path, r->role);
    if (c->role == ROLE_RULES)
        return rls__error(db, RLS_EROLE, "'%s' is a rules database, not a counters database",
                          db->lite->counters_path);
    if (c->role != ROLE_COUNTERS && c->role != ROLE_SINGLE)
        return rls__error(db, RLS_EROLE, "'%s' has an unknown role %d", db->lite->counters_path,
                          c->role);
    if (r->role == ROLE_RULES && c->role == ROLE_COUNTERS &&
        (r->npair != c->npair || memcmp(r->pair, c->pair, (size_t)r->npair) != 0))
        return rls__error(db, RLS_EROLE, "'%s' holds the counters of another rules database "
                          "than '%s'", db->lite->counters_path, db->ident.path);
    if (r->role == ROLE_SINGLE) {
        if (!db->lite->rules_rw)
            return rls__error(db, RLS_EROLE, "'%s' is not the rules database of a split "
                              "deployment yet: open it once with an admin tool that may "
                              "write it", db->ident.path);
        if ((rc = query_flag(db, RULES_HAS_COUNTERS, &has)))
            return rc;
        if (has)
            return rls__error(db, RLS_EROLE, "'%s' is a single-file database that has counted "
                              "checks: a split deployment needs a rules database that never "
                              "did (a new one, with the rules applied)", db->ident.path);
        if (c->role == ROLE_COUNTERS)
            return rls__error(db, RLS_EROLE, "'%s' holds the counters of another rules "
                              "database than '%s'", db->lite->counters_path, db->ident.path);
    }
    if (c->role == ROLE_SINGLE) {
        if (db->ident.opt.read_only)
            return rls__error(db, RLS_EROLE, "'%s' is not the counters database of a split "
                              "deployment yet, and is opened read-only", db->lite->counters_path);
        if ((rc = query_flag(db, COUNTERS_HAS_DATA, &has)))
            return rc;
        if (has)
            return rls__error(db, RLS_EROLE, "'%s' is a database with data, not a new "
                              "counters database", db->lite->counters_path);
    }
    return RLS_OK;
}

static int role_take(rls_db *db, const char *sql, const unsigned char *pair, int npair)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->lite->sql, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        if (pair)
            sqlite3_bind_blob(st, 1, pair, npair, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? RLS_OK : rls__sqlite_error(db, rc, "cannot record the role");
}

/*
 * Before a new rules file is created for an existing counters file: the
 * refusals that no new rules file can cure (role_refusal), so that a
 * refused open creates nothing (a file, once there, is never removed:
 * create.c).  Anything this cannot read is left to the open itself.
 */
int rls__split_precheck(rls_db *db)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *st = NULL;
    int role = -1, has = 0;
    if (sqlite3_open_v2(db->lite->counters_path, &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        NULL) == SQLITE_OK) {
        rls__conn_defaults(c);
        sqlite3_busy_timeout(c, db->ident.opt.busy_timeout_ms);
        if (sqlite3_prepare_v2(c, "SELECT role, (" COUNTERS_HAS_DATA ") FROM main.rls_role"
                               " WHERE id = 1", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            role = sqlite3_column_int(st, 0);
            has = sqlite3_column_int(st, 1);
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(c);
    /* a process opening the same new pair may have created the rules file
     * and paired the two meanwhile: the open decides then */
    if (exists(db->ident.path, ""))
        return RLS_OK;
    if (role == ROLE_COUNTERS)
        return rls__error(db, RLS_EROLE, "'%s' holds the counters of another rules database "
                          "than '%s'", db->lite->counters_path, db->ident.path);
    if (role == ROLE_RULES)
        return rls__error(db, RLS_EROLE, "'%s' is a rules database, not a counters database",
                          db->lite->counters_path);
    if (role == ROLE_SINGLE && has)
        return rls__error(db, RLS_EROLE, "'%s' is a database with data, not a new counters "
                          "database", db->lite->counters_path);
    return RLS_OK;
}

/* Inside the handle's write transaction: new files take their roles. */
static int roles_take(rls_db *db, const file_role_row *r, const file_role_row *c,
                      int64_t now)
{
    unsigned char pair[PAIR_ID_BYTES];
    char after[600];
    int rc = RLS_OK;
    if (r->role == ROLE_SINGLE) {
        sqlite3_randomness(sizeof pair, pair);
        rc = role_take(db, "UPDATE rules.rls_role SET role = 1, pair_id = ?1 WHERE id = 1",
                       pair, (int)sizeof pair);
    }
    if (rc == RLS_OK && c->role == ROLE_SINGLE)
        rc = role_take(db, "UPDATE main.rls_role SET role = 2, pair_id ="
                       " (SELECT pair_id FROM rules.rls_role WHERE id = 1) WHERE id = 1",
                       NULL, 0);
    if (rc == RLS_OK && db->lite->rules_rw) {
        snprintf(after, sizeof after, "rules database '%s' with counters database '%s'",
                 db->ident.path, db->lite->counters_path);
        rc = rls__audit(db, now, "split.pair", "", NULL, "unpaired", after, "");
    }
    return rc;
}

int rls__roles_check(rls_db *db)
{
    file_role_row r, c;
    int64_t now = 0;
    int rc;
    if ((rc = role_read(db, "main", &c)))
        return rc;
    if (c.role == ROLE_RULES) {
        /* a rules file opened as main (and refused below): its -wal and -shm
         * must outlive this connection, as readers need them */
        int one = 1;
        sqlite3_file_control(db->lite->sql, "main", SQLITE_FCNTL_PERSIST_WAL, &one);
    }
    if (!db->lite->split) {
        if (c.role == ROLE_RULES)
            return rls__error(db, RLS_EROLE, "'%s' is the rules database of a split deployment: "
                              "open it with its counters database (counters_path, rlctl "
                              "--counters)", db->ident.path);
        if (c.role == ROLE_COUNTERS)
            return rls__error(db, RLS_EROLE, "'%s' is the counters database of a split "
                              "deployment: open its rules database with this file as "
                              "counters_path", db->ident.path);
        if (c.role != ROLE_SINGLE)
            return rls__error(db, RLS_EROLE, "'%s' has an unknown role %d", db->ident.path, c.role);
        return RLS_OK;
    }
    /* Read without a lock, a pair that another process is giving its
     * roles may show one file's new role and the other's old one (a commit
     * to two WAL files is atomic for each file, not for both): anything but
     * a settled pair is decided again under the write lock, where it is
     * whole.  A read-only handle cannot take it: it answers what it saw. */
    if ((rc = role_read(db, "rules", &r)) == RLS_OK && (rc = role_read(db, "main", &c)) == RLS_OK)
        rc = role_refusal(db, &r, &c);
    if (rc != RLS_OK && (rc != RLS_EROLE || db->ident.opt.read_only))
        return rc;
    if (rc == RLS_OK && r.role == ROLE_RULES && c.role == ROLE_COUNTERS)
        return RLS_OK;
    /* A new file takes its role, under the write lock of both files (a
     * concurrent opener may have given it one meanwhile). */
    if ((rc = rls__now(&now)) || (rc = exec_main(db, "BEGIN IMMEDIATE", "cannot record roles")))
        return rc;
    if ((rc = role_read(db, "rules", &r)) == RLS_OK && (rc = role_read(db, "main", &c)) == RLS_OK &&
        (rc = role_refusal(db, &r, &c)) == RLS_OK)
        rc = roles_take(db, &r, &c, now);
    if (rc == RLS_OK)
        rc = exec_main(db, "COMMIT", "cannot record roles");
    if (rc != RLS_OK)
        sqlite3_exec(db->lite->sql, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- group ---------------------------------------------------------------- */

int rls__group_resolve(rls_db *db, const char *group)
{
    char *end;
    if (!*group)
        return rls__error(db, RLS_EINVAL, "rls_open: file_group is empty");
    if (isdigit((unsigned char)group[0])) {
        errno = 0;
        unsigned long v = strtoul(group, &end, 10);
        if (*end || errno || v >= (unsigned long)(gid_t)-1)
            return rls__error(db, RLS_EINVAL, "rls_open: group '%s' is not a valid number",
                              group);
        db->lite->gid = (gid_t)v;
        db->lite->have_gid = 1;
        return RLS_OK;
    }
    size_t size = 4096;
    for (;;) {
        struct group gr, *res = NULL;
        char *buf = malloc(size);
        if (!buf)
            return rls__error(db, RLS_ENOMEM, "out of memory");
        int e = getgrnam_r(group, &gr, buf, size, &res);
        if (e == 0 && res)
            db->lite->gid = res->gr_gid;
        free(buf);
        if (e == ERANGE && size < (1u << 20)) {
            size *= 4;
            continue;
        }
        if (e == 0 && res) {
            db->lite->have_gid = 1;
            return RLS_OK;
        }
        if (e == 0 || e == ENOENT || e == ESRCH)
            return rls__error(db, RLS_EINVAL, "rls_open: group '%s' does not exist", group);
        return rls__error(db, RLS_EINVAL, "rls_open: cannot look up group '%s': %s", group,
                          strerror(e));
    }
}

int rls__file_group_set(rls_db *db, int fd, const char *path)
{
    if (!db->lite->have_gid || fchown(fd, (uid_t)-1, db->lite->gid) == 0)
        return RLS_OK;
    int e = errno;
    return rls__error(db, RLS_EINVAL, "cannot give '%s' to group %lu: %s (its creator must "
                      "belong to the group)", path, (unsigned long)db->lite->gid, strerror(e));
}

/*
 * SQLite creates -wal and -shm with the mode of their database, but in the
 * creator's group unless the directory is setgid: readers of the group
 * could then not open them.  A handle that may write a group-shared file
 * gives its side files the file's group (those it owns; root may do it
 * for any).  lchown: never through a link, and never an open() (see top).
 */
static void share_one(const char *file)
{
    static const char *const sides[] = {"-wal", "-shm", "-ckpt"};
    struct stat db, sb;
    char side[4200];
    if (!file || !*file || stat(file, &db) != 0 || (db.st_mode & 070) == 0)
        return;
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
        if ((size_t)snprintf(side, sizeof side, "%s%s", file, sides[i]) >= sizeof side)
            return;
        if (lstat(side, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_gid != db.st_gid &&
            (sb.st_uid == geteuid() || geteuid() == 0) &&
            lchown(side, (uid_t)-1, db.st_gid) != 0) {
            /* not a member of the group: the operator's setgid directory
             * (docs/SECURITY.md) is the way then */
        }
    }
}

void rls__share_side_files(rls_db *db)
{
    if (!db->ident.opt.read_only)
        share_one(sqlite3_db_filename(db->lite->sql, "main"));
    if (db->lite->split && db->lite->rules_rw)
        share_one(sqlite3_db_filename(db->lite->sql, "rules"));
}
