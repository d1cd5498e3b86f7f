/*
 * stmt.c - the statement table: each statement is prepared once per
 * connection (through its driver, sql.h) on first use, reset after every
 * use, and finalized at close.  Also transactions and the audit row.
 *
 * In a split deployment the same tables are prepared in their split form
 * (db.h, RLS_STMT_SPLIT_MAP): the text is rewritten once, at prepare time,
 * so a one-file handle runs exactly the statements it always did.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "admin.h"
#include "sqlite/lite.h"

static const char *const stmt_sql[STMT__COUNT] = {
#define RLS__STMT_SQL(name, sql) sql,
    RLS_STMT_MAP(RLS__STMT_SQL)
#undef RLS__STMT_SQL
};

/* The split form of each statement that needs one (db.h, admin.h). */
typedef struct split_form {
    int side;          /* enum rls_split_side; SPLIT_NONE: rules tables only */
    const char *sql;   /* SPLIT_OWN: the text to prepare */
} split_form;

static const split_form stmt_split[STMT__COUNT] = {
#define RLS__SPLIT_FORM(name, side, sql) [STMT_##name] = {side, sql},
    RLS_STMT_SPLIT_MAP(RLS__SPLIT_FORM)
};
static const split_form astmt_split[ASTMT__COUNT] = {
#define RLS__ASPLIT_FORM(name, side, sql) [ASTMT_##name] = {side, sql},
    RLS_ADMIN_SPLIT_MAP(RLS__ASPLIT_FORM)
#undef RLS__ASPLIT_FORM
#undef RLS__SPLIT_FORM
};

/* The PostgreSQL form of each statement that needs one (db.h). */
static const char *const stmt_pg[STMT__COUNT] = {
#define RLS__PG_FORM(name, sql) [STMT_##name] = sql,
    RLS_STMT_PG_MAP(RLS__PG_FORM)
#undef RLS__PG_FORM
};

static const char *const rules_tables[] = {RLS_RULES_TABLES};
static const char *const both_tables[] = {RLS_BOTH_TABLES};

static int word_in(const char *w, size_t n, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(list[i]) == n && memcmp(list[i], w, n) == 0)
            return 1;
    return 0;
}

/*
 * The split form of sql: every table of the rules file qualified "rules.",
 * rls_blocks and rls_meta qualified by `side`.  Names already qualified and
 * string literals are left alone.  NULL: out of memory (*bad NULL), or the
 * statement names a table of both files without a side (*bad: its name).
 */
static char *split_text(const char *sql, int side, const char **bad, size_t *badlen)
{
    size_t len = strlen(sql), o = 0;
    char prev = 0;  /* the last byte copied that is not a blank */
    /* a qualified name grows by at most 6 bytes and is at least 8 long */
    char *out = malloc(len * 2 + 1);
    *bad = NULL;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)sql[i];
        if (c == '\'') {                     /* 'text', '' inside */
            size_t j = i + 1;
            while (j < len && !(sql[j] == '\'' && sql[j + 1] != '\''))
                j += sql[j] == '\'' ? 2 : 1;
            j = j < len ? j + 1 : len;
            memcpy(out + o, sql + i, j - i);
            o += j - i;
            prev = '\'';
            i = j;
            continue;
        }
        if (isalpha(c) || c == '_') {
            size_t j = i;
            while (j < len && (isalnum((unsigned char)sql[j]) || sql[j] == '_'))
                j++;
            const char *q = NULL;
            if (prev != '.' && word_in(sql + i, j - i, rules_tables,
                                       sizeof rules_tables / sizeof rules_tables[0]))
                q = "rules.";
            else if (prev != '.' && word_in(sql + i, j - i, both_tables,
                                            sizeof both_tables / sizeof both_tables[0])) {
                if (side != SPLIT_RULES && side != SPLIT_COUNTERS) {
                    *bad = sql + i;
                    *badlen = j - i;
                    free(out);
                    return NULL;
                }
                q = side == SPLIT_RULES ? "rules." : "main.";
            }
            if (q) {
                memcpy(out + o, q, strlen(q));
                o += strlen(q);
            }
            memcpy(out + o, sql + i, j - i);
            o += j - i;
            prev = sql[j - 1];
            i = j;
            continue;
        }
        out[o++] = (char)c;
        if (!isspace(c))
            prev = (char)c;
        i++;
    }
    out[o] = '\0';
    return out;
}

int rls__prepare_form(rls_db *db, const char *sql, const char *pg_sql, int side,
                      const char *split_sql, rls_stmt **out)
{
    const char *text = db->pg && pg_sql ? pg_sql : sql;
    char *rewritten = NULL;
    *out = NULL;
    if (db->lite->split) {
        if (side == SPLIT_OWN) {
            text = split_sql;
        } else {
            const char *bad;
            size_t badlen = 0;
            text = rewritten = split_text(sql, side, &bad, &badlen);
            if (!text && bad)
                return db->conn.stmt_code = rls__error(db, RLS_ESTORAGE, "statement on '%.*s' has "
                                                  "no split-deployment form", (int)badlen, bad);
            if (!text)
                return db->conn.stmt_code = rls__error(db, RLS_ENOMEM, "out of memory");
        }
    }
    int rc = sql_prepare(db, text, out);
    free(rewritten);
    if (rc != SQL_OK) {
        *out = NULL;
        return db->conn.stmt_code = rls__sql_error(db, rc, "cannot prepare statement");
    }
    return RLS_OK;
}

int rls__prepare(rls_db *db, int admin, int id, const char *sql, rls_stmt **out)
{
    const split_form *f = admin ? &astmt_split[id] : &stmt_split[id];
    return rls__prepare_form(db, sql, admin ? NULL : stmt_pg[id], f->side, f->sql, out);
}

rls_stmt *rls__stmt(rls_db *db, int id)
{
    rls_stmt *st = db->conn.stmt[id];
    if (st)
        return st;
    if (rls__prepare(db, 0, id, stmt_sql[id], &st) != RLS_OK)
        return NULL;
    if (db->pg)
        rls__pg_stmt_quick(st);   /* a check's statement: the check's deadline (pg_io.c) */
    db->conn.stmt[id] = st;
    return st;
}

int rls__stmt_failed(rls_db *db)
{
    return db->conn.stmt_code ? db->conn.stmt_code : RLS_ESTORAGE;
}

void rls__stmt_finalize_all(rls_db *db)
{
    for (int i = 0; i < STMT__COUNT; i++) {
        sql_finalize(db->conn.stmt[i]);
        db->conn.stmt[i] = NULL;
    }
    for (size_t i = 0; i < sizeof db->conn.astmt / sizeof db->conn.astmt[0]; i++) {
        sql_finalize(db->conn.astmt[i]);
        db->conn.astmt[i] = NULL;
    }
}

int rls__exec_simple(rls_db *db, int id)
{
    rls_stmt *st = rls__stmt(db, id);
    if (!st)
        return rls__stmt_failed(db);
    int rc = sql_step(st);
    sql_reset(st);
    if (rc == SQL_DONE || rc == SQL_ROW)
        return RLS_OK;
    return rls__sql_error(db, rc, "statement failed");
}

int rls__begin(rls_db *db, int write)
{
    rls__pg_tx_start(db);
    int rc = rls__exec_simple(db, write ? STMT_BEGIN_IMM : STMT_BEGIN_READ);
    /* nothing is written to files that are no longer the database's */
    if (rc == RLS_OK && write && db->lite->sql && (rc = rls__files_verify(db, 1)) != RLS_OK)
        rls__exec_simple(db, STMT_ROLLBACK);
    if (rc == RLS_OK) {
        db->conn.in_tx = 1;
        db->conn.tx_write = write;
        db->trust.tx_refreshed = 0;
    }
    return rc;
}

/* Commits, records the data version (cache.c) and checkpoints when the WAL
 * is long (wal.c).  A write transaction ends the handle's trust in what it
 * knew (a check re-establishes it); a read one only if the version moved. */
int rls__commit(rls_db *db)
{
    int rc = rls__exec_simple(db, STMT_COMMIT);
    if (rc != RLS_OK) {
        rls__rollback(db);
        return rc;
    }
    db->trust.commit_dv_ok = db->lite->sql &&
                       sqlite3_file_control(db->lite->sql, "main", SQLITE_FCNTL_DATA_VERSION,
                                            &db->trust.commit_dv) == SQLITE_OK;
    /* a split handle knows what it knows of both files (cache.c) */
    if (db->lite->split && db->trust.commit_dv_ok)
        db->trust.commit_dv_ok = sqlite3_file_control(db->lite->sql, "rules", SQLITE_FCNTL_DATA_VERSION,
                                                &db->lite->rules_commit_dv) == SQLITE_OK;
    if (db->conn.tx_write || !db->trust.commit_dv_ok || db->trust.commit_dv != db->trust.meta_dv ||
        (db->lite->split && db->lite->rules_commit_dv != db->lite->rules_meta_dv))
        db->trust.meta_dv_ok = 0;
    if (db->conn.tx_write && (!db->conn.check_tx || db->conn.gave_back))
        rls__deny_bump(db);  /* it may admit a cached denial sooner (deny.c) */
    db->conn.check_tx = 0;
    db->conn.gave_back = 0;
    db->conn.in_tx = 0;
    db->conn.tx_write = 0;
    db->trust.tx_trusted = 0;
    if (db->lite->sql)
        rls__wal_after_commit(db);
    return RLS_OK;
}

void rls__rollback(rls_db *db)
{
    if (sql_in_tx(db)) {
        char keep[sizeof db->errmsg];
        memcpy(keep, db->errmsg, sizeof keep);
        rls__exec_simple(db, STMT_ROLLBACK);
        memcpy(db->errmsg, keep, sizeof keep);  /* keep the first error */
    }
    db->conn.in_tx = 0;
    db->conn.tx_write = 0;
    db->trust.tx_trusted = 0;
    db->trust.meta_dv_ok = 0;
    db->conn.check_tx = 0;
    db->conn.gave_back = 0;
}

int rls__write_tx(rls_db *db, rls_tx_fn fn, void *arg)
{
    int rc, attempt = 0;
    do {
        if ((rc = rls__begin(db, 1)) != RLS_OK)
            continue;   /* a connection lost while idle may be retried too */
        rc = fn(db, arg);
        if (rc == RLS_OK)
            rc = rls__commit(db);
        else
            rls__rollback(db);
    } while (rls__tx_retry(db, rc, &attempt));
    return rc;
}

static void bind_text_or_null(rls_stmt *st, int i, const char *s)
{
    sql_bind_text(st, i, s ? s : "", -1, SQL_STATIC);
}

int rls__audit(rls_db *db, int64_t now, const char *op, const char *action,
               const char *key, const char *before, const char *after,
               const char *reason)
{
    rls_stmt *st = rls__stmt(db, STMT_AUDIT_ADD);
    if (!st)
        return rls__stmt_failed(db);
    sql_bind_int64(st, 1, now);
    sql_bind_text(st, 2, db->ident.os_user, -1, SQL_STATIC);
    sql_bind_text(st, 3, db->ident.tool, -1, SQL_STATIC);
    bind_text_or_null(st, 4, op);
    bind_text_or_null(st, 5, action);
    if (key)
        sql_bind_blob(st, 6, key, (int)strlen(key), SQL_STATIC);
    else
        sql_bind_null(st, 6);
    bind_text_or_null(st, 7, before);
    bind_text_or_null(st, 8, after);
    bind_text_or_null(st, 9, reason);
    int rc = sql_step(st);
    sql_reset(st);
    sql_clear_bindings(st);
    return rc == SQL_DONE ? RLS_OK : rls__sql_error(db, rc, "cannot write audit row");
}
