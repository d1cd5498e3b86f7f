/*
 * test_doctor_shm.c - the doctor and the shared-memory tables of
 * `durability: memory` limits (storage/doctor_mem.c, shmlist.h).
 *
 * Covered: memory_table says where the table will be before the first
 * memory-class check, and the doctor does not make it; afterwards its
 * path, slots and live entries.  Tables of the same folder: a table of
 * this database forged with another boot (header and name, as a reboot
 * leaves it in a shm_dir on disk) is reported and removed by
 * RLS_DOCTOR_FIX; the table in use, a table of this database whose boot
 * is unknown, a file with a table's name that is not one, a symbolic link
 * and a FIFO with that name (no hang), and another database's tables
 * (current and of an earlier boot) are never removed, and the other
 * database's are not even reported; counts in the table in use survive
 * the fix.  Unknown flags: EINVAL.  On PostgreSQL too (the table is per
 * host there: its identity is the URI).
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "itest.h"

static const char *RULES =
    "version: 1\n"
    "actions:\n"
    "  m:\n"
    "    limits: [ { name: mm, algorithm: fixed_window, limit: 100, window: 1h,"
    " durability: memory } ]\n";

#define BOOT_OFF 72   /* the header's boot hash (shmfile.c's static assert) */

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static rls_db *open_mem(const itest *t, const char *dir)
{
    rls_options o;
    rls_db *db = NULL;
    rls_options_init(&o);
    o.shm_dir = dir;
    o.shm_slots = 64;
    int rc = rls_open(&db, t->path, &o);
    if (rc != RLS_OK)
        fail_msg("open: %s: %s", rls_errname(rc), rls_errmsg(NULL));
    return db;
}

/* The one table file in dir other than skip (NULL: none), into buf. */
static int table_in(const char *dir, const char *skip, char *buf, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "rlstore-", 8) != 0 || strlen(e->d_name) != 37 ||
            (skip && strcmp(e->d_name, skip) == 0))
            continue;
        snprintf(buf, cap, "%s", e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

/* The doctor's rows named check, their details joined by newlines. */
static int rows_of(rls_db *db, unsigned flags, const char *check, const char *status,
                   char *details, size_t cap)
{
    rls_rows *r = NULL;
    int n = 0, rc = rls_doctor_v2(db, flags, &r);
    if (rc != RLS_OK)
        fail_msg("doctor: %s: %s", rls_errname(rc), rls_errmsg(db));
    details[0] = '\0';
    for (int i = 0; i < rls_rows_count(r); i++) {
        if (strcmp(rls_rows_text(r, i, rls_rows_find(r, "check")), check) != 0)
            continue;
        const char *s = rls_rows_text(r, i, rls_rows_find(r, "status"));
        const char *d = rls_rows_text(r, i, rls_rows_find(r, "detail"));
        if (strcmp(s, status) != 0)
            fail_msg("%s is %s, not %s: %s", check, s, status, d);
        size_t used = strlen(details);
        snprintf(details + used, cap - used, "%s\n", d);
        n++;
    }
    rls_rows_free(r);
    return n;
}

static void admit(rls_db *db, const char *key)
{
    rls_result r;
    int rc = rls_check(db, "m", key, 1, &r);   /* the real clock: the doctor's */
    if (rc != RLS_OK || !r.allowed)
        fail_msg("check of %s: %s: %s", key, rls_errname(rc), rls_errmsg(db));
}

static void reports_the_table_in_use(void **state)
{
    itest *t = it_new(RULES);
    rls_db *db = open_mem(t, t->dir);
    char name[64], d[8192];
    assert_int_equal(rows_of(db, 0, "memory_table", "ok", d, sizeof d), 1);
    assert_non_null(strstr(d, "no table at"));
    assert_non_null(strstr(d, t->dir));
    assert_int_equal(table_in(t->dir, NULL, name, sizeof name), 0);  /* not made */
    admit(db, "a");
    admit(db, "b");
    admit(db, "c");
    assert_int_equal(table_in(t->dir, NULL, name, sizeof name), 1);
    assert_int_equal(rows_of(db, 0, "memory_table", "ok", d, sizeof d), 1);
    if (!strstr(d, name) || !strstr(d, "64 slots") || !strstr(d, "3 live entries") ||
        !strstr(d, "0 locks taken over"))
        fail_msg("memory_table: %s", d);
    assert_int_equal(rows_of(db, 0, "memory_stale", "warn", d, sizeof d), 0);
    rls_rows *r = NULL;
    assert_int_equal(rls_doctor_v2(db, 4, &r), RLS_EINVAL);
    assert_null(r);
    rls_close(db);
    it_free(t);
}

/* Copies the table src to dst with boot as its header's boot. */
static void forge(const char *src, const char *dst, uint64_t boot)
{
    unsigned char head[4096];
    int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0600);
    struct stat st;
    assert_true(in >= 0 && out >= 0);
    assert_int_equal(fstat(in, &st), 0);
    assert_int_equal(pread(in, head, sizeof head, 0), (ssize_t)sizeof head);
    memcpy(head + BOOT_OFF, &boot, sizeof boot);
    assert_int_equal(write(out, head, sizeof head), (ssize_t)sizeof head);
    assert_int_equal(ftruncate(out, st.st_size), 0);   /* as large, sparse */
    close(in);
    close(out);
}

static uint64_t boot_of(const char *path)
{
    uint64_t b;
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &b, sizeof b, BOOT_OFF), (ssize_t)sizeof b);
    close(fd);
    return b;
}

/* dir/<the identity part of name><suffix>.shm */
static void sibling(char *buf, size_t cap, const char *dir, const char *name, const char *suffix)
{
    snprintf(buf, cap, "%s/%.25s%s.shm", dir, name, suffix);
}

static void fix_removes_only_this_databases_tables_of_earlier_boots(void **state)
{
    itest *t = it_new(RULES), *u = it_new(RULES);
    rls_db *db = open_mem(t, t->dir), *other = open_mem(u, t->dir);
    char mine[64], theirs[64], cur[4200], ocur[4200], stale[4200], unknown[4200],
        junk[4200], link_[4200], fifo[4200], ostale[4200], d[16384];
    struct stat before, after;
    admit(db, "a");
    assert_int_equal(table_in(t->dir, NULL, mine, sizeof mine), 1);
    admit(other, "z");
    assert_int_equal(table_in(t->dir, mine, theirs, sizeof theirs), 1);
    assert_memory_not_equal(mine, theirs, 25);   /* two identities */
    tu_path(cur, sizeof cur, t->dir, mine);
    tu_path(ocur, sizeof ocur, t->dir, theirs);
    uint64_t boot = boot_of(cur);
    assert_true(boot != 0);   /* /proc/sys/kernel/random/boot_id is readable */
    const char *other_boot = strncmp(mine + 25, "0badb007", 8) ? "0badb007" : "0badb008";

    /* what a reboot leaves, and what must stay */
    sibling(stale, sizeof stale, t->dir, mine, other_boot);
    forge(cur, stale, boot ^ 0x100);
    sibling(unknown, sizeof unknown, t->dir, mine, "00000000");
    forge(cur, unknown, 0);
    sibling(junk, sizeof junk, t->dir, mine, "11111111");
    write_text(junk, "not a table\n");
    sibling(link_, sizeof link_, t->dir, mine, "22222222");
    assert_int_equal(symlink(stale, link_), 0);
    sibling(fifo, sizeof fifo, t->dir, mine, "33333333");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    sibling(ostale, sizeof ostale, t->dir, theirs, other_boot);
    forge(ocur, ostale, boot ^ 0x100);
    assert_int_equal(stat(cur, &before), 0);

    /* reported, nothing removed */
    assert_int_equal(rows_of(db, 0, "memory_stale", "warn", d, sizeof d), 5);
    if (!strstr(d, stale) || !strstr(d, "earlier boot") || !strstr(d, unknown) ||
        !strstr(d, "boot is unknown") || !strstr(d, junk) || !strstr(d, link_) ||
        !strstr(d, fifo) || strstr(d, theirs))
        fail_msg("memory_stale rows:\n%s", d);
    assert_true(exists(stale));

    /* --fix: the stale table of this database goes, nothing else */
    rls_rows *r = NULL;
    assert_int_equal(rls_doctor_v2(db, RLS_DOCTOR_FIX, &r), RLS_OK);
    int removed = 0;
    for (int i = 0; i < rls_rows_count(r); i++) {
        const char *c = rls_rows_text(r, i, rls_rows_find(r, "check"));
        const char *s = rls_rows_text(r, i, rls_rows_find(r, "status"));
        const char *x = rls_rows_text(r, i, rls_rows_find(r, "detail"));
        if (strcmp(c, "memory_stale") == 0 && strstr(x, stale) && strncmp(x, "removed ", 8) == 0)
            removed += strcmp(s, "ok") == 0;
        else if (strcmp(c, "memory_stale") == 0 && strcmp(s, "warn") != 0)
            fail_msg("after the fix: %s %s: %s", c, s, x);
    }
    rls_rows_free(r);
    assert_int_equal(removed, 1);
    assert_false(exists(stale));
    assert_true(exists(unknown) && exists(junk) && exists(fifo) && exists(ocur) &&
                exists(ostale));
    assert_true(exists(link_));   /* the link itself stays */
    assert_int_equal(stat(cur, &after), 0);
    assert_true(before.st_ino == after.st_ino);
    /* the table in use kept its counts: "a" has 1 of 100 used */
    rls_result res;
    assert_int_equal(rls_check(db, "m", "a", 1, &res), RLS_OK);
    assert_int_equal(res.remaining, 98);
    /* a second fix finds nothing more to remove */
    assert_int_equal(rows_of(db, RLS_DOCTOR_FIX, "memory_stale", "warn", d, sizeof d), 4);
    rls_close(other);
    rls_close(db);
    it_free(u);
    it_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reports_the_table_in_use),
        cmocka_unit_test(fix_removes_only_this_databases_tables_of_earlier_boots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
