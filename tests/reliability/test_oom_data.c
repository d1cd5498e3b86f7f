/*
 * test_oom_data.c - out of memory (issue #5, suite 4), the calls of an
 * application: allocation-failure loops over rls_open (an existing and a
 * new database), rls_check (the first check of a handle loads the rules;
 * fixed_window+gcra and sliding_log) and the cancel of a reservation (a
 * refund).  The admin API is test_oom_admin.c; the failing allocators, the
 * database with its model and the loops are in oomtest.h, which says what
 * every call must do.  Linked with test_oom_data.ldflags (-Wl,--wrap=...).
 */
#include <sys/stat.h>
#include "oomtest.h"

static int open_run(call *c)
{
    return rls_open(&c->opened, c->x->path, NULL);
}

static void open_done(call *c, int rc)
{
    if (rc == RLS_OK) {
        assert_non_null(c->opened);
        rls_close(c->opened);
    } else {
        assert_null(c->opened);
        assert_true(rls_errmsg(NULL)[0] != '\0');
    }
}

static int stat_ok(const char *path, const char *suffix)
{
    char p[4300];
    struct stat sb;
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return stat(p, &sb) == 0;
}

static void open_new_prepare(call *c)
{
    snprintf(c->newpath, sizeof c->newpath, "%s/new.db", c->x->dir);
}

static int open_new_run(call *c)
{
    return rls_open(&c->opened, c->newpath, NULL);
}

/* A failed open leaves no file, or (failing after the database was
 * linked into place, where another process may already use it: it is
 * never removed, issue #17) a whole database that the next open uses; a
 * successful one a working database. */
static void open_new_done(call *c, int rc)
{
    char side[4300];
    if (rc != RLS_OK) {
        assert_null(c->opened);
        if (!stat_ok(c->newpath, "")) {
            assert_false(stat_ok(c->newpath, "-wal"));
            assert_false(stat_ok(c->newpath, "-shm"));
            return;
        }
        must(NULL, rls_open(&c->opened, c->newpath, NULL), "open of the database a failed "
             "open left");
    }
    rls_result r;
    must(c->opened, rls_rules_apply_at(c->opened, RULES_A, strlen(RULES_A), NULL, NULL, T0,
                                       NULL), "apply on the new database");
    must(c->opened, rls_check_at(c->opened, "api", "k", 1, T0, &r), "check on the new database");
    assert_int_equal(r.allowed, 1);
    rls_close(c->opened);
    sqlite3 *s = plain_open(c->newpath);
    assert_int_equal(plain_int(s, SQL_ADMITTED), 1);
    sqlite3_close(s);
    unlink(c->newpath);
    snprintf(side, sizeof side, "%s-ckpt", c->newpath);
    unlink(side);
}

static int check_run(call *c)
{
    return rls_check_at(c->db, "api", "k", 1, T0, &c->res);
}

static void check_done(call *c, int rc)
{
    if (rc == RLS_OK) {
        assert_int_equal(c->res.allowed, 1);
        assert_int_equal(c->res.reason, RLS_REASON_OK);
        c->x->admitted++;
        return;
    }
    assert_int_equal(c->res.reason, RLS_REASON_DEGRADED);
    assert_int_equal(c->res.allowed, c->allow);
}

/* sliding_log: the library copies the stored log into a buffer of its own */
static int check_log_run(call *c)
{
    return rls_check_at(c->db, "login", "192.0.2.1", 1, T0, &c->res);
}

static void check_log_done(call *c, int rc)
{
    if (rc == RLS_OK) {
        assert_int_equal(c->res.reason, RLS_REASON_OK);
        return;
    }
    assert_int_equal(c->res.reason, RLS_REASON_DEGRADED);
    assert_int_equal(c->res.allowed, c->allow);
}

static void cancel_prepare(call *c)
{
    rls_result r;
    must(c->db, rls_reserve_at(c->db, "api", "k", 1, 60000, T0, &c->x->res_id, &r), "reserve");
    assert_int_equal(r.allowed, 1);
    c->x->admitted++;
    c->x->pending++;
}

static int cancel_run(call *c)
{
    return rls_cancel_at(c->db, c->x->res_id, T0);
}

static void cancel_done(call *c, int rc)
{
    if (rc == RLS_OK) {
        c->x->pending--;
        c->x->admitted--;   /* refunded */
    }
}

enum { OP_OPEN, OP_OPEN_NEW, OP_CHECK, OP_CHECK_LOG, OP_CANCEL, OP__COUNT };

/* name, writes, opens, parses, prepare, run, done */
static const oom_op OPS[OP__COUNT] = {
    {"open", 0, 1, 0, NULL, open_run, open_done},
    {"open_new", 0, 1, 0, open_new_prepare, open_new_run, open_new_done},
    {"check", 1, 0, 1, NULL, check_run, check_done},
    {"check_sliding_log", 1, 0, 1, NULL, check_log_run, check_log_done},
    {"cancel", 1, 0, 0, cancel_prepare, cancel_run, cancel_done},
};

/* Allocation failures per operation and allocator (for the summary). */
static long failures[OP__COUNT][L__COUNT];

static void run_case(void **state)
{
    int opi = *(const int *)*state;
    oom_case(&OPS[opi], failures[opi]);
}

int main(void)
{
    static int args[OP__COUNT];
    static char names[OP__COUNT][96];
    struct CMUnitTest tests[OP__COUNT];

    if (oom_setup() != 0)
        return 1;
    for (int op = 0; op < OP__COUNT; op++) {
        args[op] = op;
        snprintf(names[op], sizeof names[op],
                 "%s_out_of_memory_returns_enomem_leaks_nothing_keeps_db_intact", OPS[op].name);
        tests[op] = (struct CMUnitTest){names[op], run_case, NULL, NULL, &args[op]};
    }
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    oom_report(OPS, OP__COUNT, failures);
    return failed;
}
