/*
 * test_shm_table.c - the shared-memory table of `durability: memory`
 * (storage/shm/): a new table finds nothing, keeps what is written and
 * shows it to a second handle; a state of another algorithm reads absent;
 * a transaction that writes nothing changes nothing; expired entries are
 * reused and a full table says RLS_EFULL with nothing changed; two-choice
 * buckets fill most of the table; live entries are listed and dropped
 * entries read absent; foreign, truncated and other-geometry
 * files are refused with their own codes and left as they were; bad
 * arguments are refused.  The multi-process suites (racing creators,
 * exactness, kill -9 inside the critical section) are in
 * test_shm_procs.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "rlstore.h"
#include "shm/shmtable.h"
#include "shm/shm_int.h"
#include "shm/shmlist.h"

#define SHMUNIT_NAME "shmtab"
#include "shmunit.h"

static void a_new_table_finds_nothing_and_keeps_what_is_written(void **state)
{
    rls__shm *t = open_ok(new_path(), &G);
    assert_int_equal(get(t, 1, "k"), -1);
    assert_int_equal(put(t, 1, "k", 5, 1000, 0), RLS_OK);
    assert_int_equal(get(t, 1, "k"), 5);
    assert_int_equal(put(t, 1, "k", 6, 1000, 0), RLS_OK);   /* updated in place */
    assert_int_equal(get(t, 1, "k"), 6);
    assert_int_equal(get(t, 2, "k"), -1);    /* another limit */
    assert_int_equal(get(t, 1, "kk"), -1);   /* another key: bytes, not a prefix */
    assert_int_equal(get(t, 1, "K"), -1);
    /* a second handle (another process would map the same pages) */
    rls__shm *u = open_ok(path, &G);
    assert_int_equal(get(u, 1, "k"), 6);
    assert_int_equal(put(u, 1, "k", 7, 1000, 0), RLS_OK);
    assert_int_equal(get(t, 1, "k"), 7);
    rls__shm_info a, b;
    assert_int_equal(rls__shm_info_get(t, &a), RLS_OK);
    assert_int_equal(rls__shm_info_get(u, &b), RLS_OK);
    assert_true(a.ino == b.ino && a.dev == b.dev);
    assert_int_equal(a.geom.slots, 64);
    assert_int_equal(a.recoveries, 0);
    /* attached without a geometry: whatever the file has */
    rls__shm *v = open_ok(path, NULL);
    assert_int_equal(get(v, 1, "k"), 7);
    rls__shm_close(v);
    rls__shm_close(u);
    rls__shm_close(t);
    /* closed and reopened: the state stays (a process restart) */
    t = open_ok(path, &G);
    assert_int_equal(get(t, 1, "k"), 7);
    rls__shm_close(t);
    rls__shm_close(NULL);
}

static void a_state_of_another_algorithm_reads_absent(void **state)
{
    rls__shm *t = open_ok(new_path(), &G);
    assert_int_equal(put(t, 1, "k", 5, 1000, 0), RLS_OK);
    rls__shm_txn tx;
    rls__shm_item it = item(1, "k");
    it.kind = ALGO_GCRA;
    algo_state s = shm_count(99, 99);
    assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_read(&tx, 0, &s), RLS_OK);
    assert_int_equal(s.present, 0);
    assert_int_equal(s.a, 0);
    algo_state w = shm_count(3, 1000);
    assert_int_equal(rls__shm_write(&tx, 0, &w), RLS_OK);   /* the new kind's state */
    rls__shm_unlock(&tx);
    rls__shm_unlock(&tx);   /* idempotent */
    assert_int_equal(get(t, 1, "k"), -1);    /* fixed_window's is gone */
    assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_read(&tx, 0, &s), RLS_OK);
    assert_int_equal(s.present, 1);
    assert_int_equal(s.a, 3);
    rls__shm_unlock(&tx);
    rls__shm_close(t);
}

static void a_sliding_log_is_kept_up_to_the_tables_bound(void **state)
{
    rls__shm *t = open_ok(new_path(), &G);   /* log_max 4 */
    unsigned char log[5 * ALGO_LOG_ENTRY], back[5 * ALGO_LOG_ENTRY];
    for (size_t i = 0; i < sizeof log; i++)
        log[i] = (unsigned char)(i * 7 + 1);
    rls__shm_txn tx;
    rls__shm_item it = item(1, "k");
    it.kind = ALGO_SLIDING_LOG;
    algo_state s = shm_count(2, 1000);
    s.log = log;
    s.log_len = 5 * ALGO_LOG_ENTRY;
    assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_EINVAL);   /* over log_max */
    s.log_len = 3 * ALGO_LOG_ENTRY + 1;
    assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_EINVAL);   /* not whole entries */
    s.log_len = 3 * ALGO_LOG_ENTRY;
    assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_OK);
    rls__shm_unlock(&tx);
    algo_state r;
    memset(&r, 0, sizeof r);
    r.log = back;
    r.log_cap = 2 * ALGO_LOG_ENTRY;   /* too small: refused, nothing copied */
    assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_read(&tx, 0, &r), RLS_EINVAL);
    assert_int_equal(r.present, 0);
    r.log_cap = sizeof back;
    assert_int_equal(rls__shm_read(&tx, 0, &r), RLS_OK);
    assert_int_equal(r.log_len, 3 * ALGO_LOG_ENTRY);
    assert_memory_equal(back, log, 3 * ALGO_LOG_ENTRY);
    assert_ptr_equal(r.log, back);
    /* a shorter log replaces it */
    s.log = log + ALGO_LOG_ENTRY;
    s.log_len = ALGO_LOG_ENTRY;
    assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_OK);
    rls__shm_unlock(&tx);
    assert_int_equal(rls__shm_lock(t, &it, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_read(&tx, 0, &r), RLS_OK);
    assert_int_equal(r.log_len, ALGO_LOG_ENTRY);
    assert_memory_equal(back, log + ALGO_LOG_ENTRY, ALGO_LOG_ENTRY);
    rls__shm_unlock(&tx);
    rls__shm_close(t);
}

static void a_transaction_that_writes_nothing_changes_nothing(void **state)
{
    rls__shm *t = open_ok(new_path(), &G);
    rls__shm_txn tx;
    rls__shm_item its[3] = { item(1, "a"), item(2, "a"), item(1, "b") };
    assert_int_equal(put(t, 2, "a", 4, 1000, 0), RLS_OK);
    assert_int_equal(rls__shm_lock(t, its, 3, 0, &tx), RLS_OK);
    rls__shm_unlock(&tx);   /* a denial: nothing written */
    assert_int_equal(get(t, 1, "a"), -1);
    assert_int_equal(get(t, 2, "a"), 4);
    assert_int_equal(get(t, 1, "b"), -1);
    rls__shm_close(t);
}

/* 32 slots: 2 buckets of 16, every key's two choices are both. */
static void expired_entries_are_reused_and_a_full_table_changes_nothing(void **state)
{
    const rls__shm_geom g32 = { 32, 32, 0 };
    rls__shm *t = open_ok(new_path(), &g32);
    char key[16];
    for (int i = 0; i < 32; i++) {
        snprintf(key, sizeof key, "k%d", i);
        /* k3 expires at 500, the others at 1000 + i */
        assert_int_equal(put(t, 1, key, i + 1, i == 3 ? 500 : 1000 + i, 0), RLS_OK);
    }
    /* full at 499: a new key is refused, alone or with a present one */
    assert_int_equal(put(t, 1, "new", 77, 2000, 499), RLS_EFULL);
    rls__shm_txn tx;
    rls__shm_item two[2] = { item(1, "k0"), item(1, "new") };
    assert_int_equal(rls__shm_lock(t, two, 2, 499, &tx), RLS_EFULL);
    assert_int_equal(tx.nlocked, 0);
    for (int i = 0; i < 32; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(get(t, 1, key), i + 1);   /* nothing changed */
    }
    /* a read-only transaction sees "new" absent and cannot write it */
    rls__shm_item nw = item(1, "new");
    algo_state s = shm_count(1, 1);
    assert_int_equal(rls__shm_lock_peek(t, &nw, 1, 499, &tx), RLS_OK);
    assert_int_equal(rls__shm_read(&tx, 0, &s), RLS_OK);
    assert_int_equal(s.present, 0);
    assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_EFULL);
    rls__shm_unlock(&tx);
    /* at 500 k3 has expired: its slot is taken, no other */
    assert_int_equal(put(t, 1, "new", 77, 2000, 500), RLS_OK);
    assert_int_equal(get(t, 1, "new"), 77);
    assert_int_equal(get(t, 1, "k3"), -1);
    for (int i = 0; i < 32; i++) {
        snprintf(key, sizeof key, "k%d", i);
        if (i != 3)
            assert_int_equal(get(t, 1, key), i + 1);
    }
    /* two new keys in one transaction take two slots (k0, k1 expired) */
    rls__shm_item nn[2] = { item(2, "x"), item(2, "y") };
    assert_int_equal(rls__shm_lock(t, nn, 2, 1001, &tx), RLS_OK);
    assert_int_not_equal(tx.slot[0], tx.slot[1]);
    rls__shm_unlock(&tx);
    /* a present key whose state expired keeps its slot: it is found */
    rls__shm_item k0[2] = { item(1, "k0"), item(2, "x") };
    assert_int_equal(rls__shm_lock(t, k0, 2, 1001, &tx), RLS_OK);
    assert_int_equal(tx.fresh[0], 0);
    assert_int_not_equal(tx.slot[0], tx.slot[1]);
    rls__shm_unlock(&tx);
    rls__shm_close(t);
}

static void two_choices_fill_most_of_the_table(void **state)
{
    const rls__shm_geom g = { 4096, 32, 0 };
    rls__shm *t = open_ok(new_path(), &g);
    char key[32];
    int n = 0;
    for (;; n++) {
        snprintf(key, sizeof key, "203.0.113.%d:%d", n % 256, n);
        int rc = put(t, 1 + n % 3, key, n + 1, 1000, 0);
        if (rc == RLS_EFULL)
            break;
        assert_int_equal(rc, RLS_OK);
    }
    print_message("first RLS_EFULL after %d of 4096 slots (%.1f%%)\n", n, 100.0 * n / 4096);
    assert_true(n >= 4096 * 85 / 100);
    for (int i = 0; i < n; i += 97) {   /* and they are all there */
        snprintf(key, sizeof key, "203.0.113.%d:%d", i % 256, i);
        assert_int_equal(get(t, 1 + i % 3, key), i + 1);
    }
    rls__shm_close(t);
}

struct listing {
    int n;
    int64_t sum;
    int stop_at;
};

static int list_one(void *ctx, int64_t lid, int kind, const void *key, size_t key_len,
                    const algo_state *st)
{
    struct listing *l = ctx;
    assert_int_equal(kind, ALGO_FIXED_WINDOW);
    assert_int_equal(key_len, 2);
    assert_int_equal(((const char *)key)[0], 'k');
    assert_int_equal(st->b, 2 * st->a);
    l->n++;
    l->sum += lid * 1000 + st->a;
    return l->n == l->stop_at ? 7 : 0;
}

static void entries_are_listed_and_dropped(void **state)
{
    rls__shm *t = open_ok(new_path(), &G);
    char key[16];
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(put(t, 1 + i % 2, key, i + 1, i == 4 ? 100 : 1000, 0), RLS_OK);
    }
    struct listing l = { 0, 0, 0 };
    assert_int_equal(rls__shm_each(t, 100, list_one, &l), RLS_OK);   /* k4 expired */
    assert_int_equal(l.n, 4);
    assert_int_equal(l.sum, 1001 + 2002 + 1003 + 2004);
    l = (struct listing){ 0, 0, 2 };
    assert_int_equal(rls__shm_each(t, 100, list_one, &l), 7);   /* stopped */
    assert_int_equal(l.n, 2);

    rls__shm_txn tx;
    rls__shm_item its[2] = { item(2, "k1"), item(1, "zz") };
    assert_int_equal(rls__shm_lock(t, its, 2, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_drop(&tx, 0), RLS_OK);
    assert_int_equal(rls__shm_drop(&tx, 1), RLS_OK);   /* absent: nothing to do */
    assert_int_equal(rls__shm_drop(&tx, 2), RLS_EINVAL);
    rls__shm_unlock(&tx);
    assert_int_equal(get(t, 2, "k1"), -1);
    l = (struct listing){ 0, 0, 0 };
    assert_int_equal(rls__shm_each(t, 100, list_one, &l), RLS_OK);
    assert_int_equal(l.n, 3);
    /* dropped and written again in one transaction: the new state */
    assert_int_equal(rls__shm_lock(t, its, 1, 0, &tx), RLS_OK);
    algo_state s = shm_count(9, 1000);
    assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_OK);
    assert_int_equal(rls__shm_drop(&tx, 0), RLS_OK);
    assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_OK);
    rls__shm_unlock(&tx);
    assert_int_equal(get(t, 2, "k1"), 9);
    assert_int_equal(rls__shm_each(NULL, 0, list_one, &l), RLS_EINVAL);
    rls__shm_close(t);
}

static void write_file(const char *p, const void *data, size_t n)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static int open_code(const char *p, const rls__shm_geom *g)
{
    rls__shm *t = (rls__shm *)&t;   /* set to NULL on failure */
    char why[200];
    int rc = rls__shm_open(&t, p, g, why, sizeof why);
    print_message("%s: %s\n", rls_errname(rc), why);
    if (rc == RLS_OK)
        rls__shm_close(t);
    else
        assert_null(t);
    return rc;
}

static void foreign_and_wrong_size_files_are_refused_and_left_alone(void **state)
{
    static char zeros[8192];
    char text[] = "SQLite format 3\0 and more";
    const char *p = new_path();
    write_file(p, text, sizeof text);
    assert_int_equal(open_code(p, &G), RLS_ENOTDB);
    assert_int_equal(open_code(p, NULL), RLS_ENOTDB);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, sizeof text);   /* not overwritten */
    write_file(p, zeros, sizeof zeros);
    assert_int_equal(open_code(p, &G), RLS_ENOTDB);
    write_file(p, "", 0);
    assert_int_equal(open_code(p, &G), RLS_ENOTDB);

    /* a table of ours made in another boot of the host */
    const char *b = new_path();
    rls__shm_close(open_ok(b, &G));
    int bfd = open(b, O_RDWR);
    uint64_t boot = 12345;
    assert_int_equal(pwrite(bfd, &boot, sizeof boot, 72), sizeof boot);   /* head.boot */
    close(bfd);
    assert_int_equal(open_code(b, &G), RLS_ECORRUPT);

    /* a table of ours, then truncated, grown, of another geometry or version */
    const char *q = new_path();
    rls__shm *t = open_ok(q, &G);
    assert_int_equal(put(t, 1, "k", 5, 1000, 0), RLS_OK);
    rls__shm_info info;
    rls__shm_info_get(t, &info);
    rls__shm_close(t);
    const rls__shm_geom other[3] = { { 128, 32, 4 }, { 64, 33, 4 }, { 64, 32, 5 } };
    for (int i = 0; i < 3; i++)
        assert_int_equal(open_code(q, &other[i]), RLS_ECONFIG);
    const rls__shm_geom rounded = { 49, 32, 4 };   /* 49 rounds up to 64 */
    assert_int_equal(open_code(q, &rounded), RLS_OK);
    assert_int_equal(truncate(q, (off_t)info.file_size - 64), 0);
    assert_int_equal(open_code(q, &G), RLS_ECORRUPT);
    assert_int_equal(truncate(q, (off_t)info.file_size + 4096), 0);
    assert_int_equal(open_code(q, &G), RLS_ECORRUPT);
    assert_int_equal(truncate(q, (off_t)info.file_size), 0);
    t = open_ok(q, &G);
    assert_int_equal(get(t, 1, "k"), 5);   /* the state survived the refusals */
    rls__shm_close(t);
    /* the formats before this one (1: keys and logs inline in the slot;
     * 2: hot records bucket by bucket) and a later one are refused as
     * other versions, with or without a geometry (the memory class's
     * first open has none), and left alone */
    const uint32_t versions[3] = { 1, 2, 4 };
    for (int i = 0; i < 3; i++) {
        int fd = open(q, O_RDWR);
        uint32_t v = versions[i];
        assert_int_equal(pwrite(fd, &v, sizeof v, 8), sizeof v);   /* the version */
        close(fd);
        assert_int_equal(open_code(q, &G), RLS_ENOTDB);
        assert_int_equal(open_code(q, NULL), RLS_ENOTDB);
        struct stat sb;
        assert_int_equal(stat(q, &sb), 0);
        assert_int_equal((uint64_t)sb.st_size, info.file_size);
    }

    assert_int_equal(open_code(dir, &G), RLS_EISDIR);
    assert_int_equal(open_code(new_path(), NULL), RLS_ENOTFOUND);
    char nodir[600];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir.shm", dir);
    assert_int_equal(open_code(nodir, &G), RLS_ECANTOPEN);
}

static void bad_arguments_are_refused(void **state)
{
    rls__shm *t = NULL;
    const rls__shm_geom bad[4] = { { 31, 32, 0 }, { 64, 0, 0 }, { 64, RLS_KEY_MAX_LIMIT + 1, 0 },
                                   { 64, 32, ALGO_SLIDING_LOG_MAX + 1 } };
    for (int i = 0; i < 4; i++)
        assert_int_equal(rls__shm_open(&t, new_path(), &bad[i], NULL, 0), RLS_EINVAL);
    assert_int_equal(rls__shm_open(NULL, new_path(), &G, NULL, 0), RLS_EINVAL);
    assert_int_equal(rls__shm_open(&t, "", &G, NULL, 0), RLS_EINVAL);
    assert_int_equal(rls__shm_open(&t, NULL, &G, NULL, 0), RLS_EINVAL);
    t = open_ok(new_path(), &G);
    rls__shm_txn tx;
    char longkey[40];
    memset(longkey, 'x', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    rls__shm_item its[RLS__SHM_TXN_MAX + 1];
    for (int i = 0; i <= RLS__SHM_TXN_MAX; i++)
        its[i] = item(i, "k");
    assert_int_equal(rls__shm_lock(t, its, 0, 0, &tx), RLS_EINVAL);
    assert_int_equal(rls__shm_lock(t, its, RLS__SHM_TXN_MAX + 1, 0, &tx), RLS_EINVAL);
    assert_int_equal(rls__shm_lock(t, its, RLS__SHM_TXN_MAX, 0, &tx), RLS_OK);  /* the most */
    rls__shm_unlock(&tx);
    rls__shm_item dup[2] = { item(1, "k"), item(1, "k") };
    assert_int_equal(rls__shm_lock(t, dup, 2, 0, &tx), RLS_EINVAL);
    rls__shm_item e = item(1, ""), l = item(1, longkey), z = item(1, "k");
    z.kind = 0;
    assert_int_equal(rls__shm_lock(t, &e, 1, 0, &tx), RLS_EKEY);
    assert_int_equal(rls__shm_lock(t, &l, 1, 0, &tx), RLS_EKEY);
    assert_int_equal(rls__shm_lock(t, &z, 1, 0, &tx), RLS_EINVAL);
    longkey[32] = '\0';   /* exactly key_max */
    assert_int_equal(put(t, 1, longkey, 3, 1000, 0), RLS_OK);
    assert_int_equal(get(t, 1, longkey), 3);
    algo_state s = shm_count(1, 1);
    rls__shm_item k = item(1, "k");
    assert_int_equal(rls__shm_lock(t, &k, 1, 0, &tx), RLS_OK);
    assert_int_equal(rls__shm_read(&tx, 1, &s), RLS_EINVAL);
    assert_int_equal(rls__shm_write(&tx, 1, &s), RLS_EINVAL);
    rls__shm_unlock(&tx);
    assert_int_equal(rls__shm_write(&tx, 0, &s), RLS_EINVAL);   /* after unlock */
    rls__shm_close(t);
}

static void a_table_path_is_derived_from_the_identity(void **state)
{
    char a[128], b[128], c[128], small[20];
    assert_int_equal(rls__shm_path(a, sizeof a, "/dev/shm", "/srv/app/limits.db"), RLS_OK);
    assert_int_equal(rls__shm_path(b, sizeof b, "/dev/shm", "/srv/app/limits.db"), RLS_OK);
    assert_int_equal(rls__shm_path(c, sizeof c, "/dev/shm", "/srv/app/other.db"), RLS_OK);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    assert_int_equal(strncmp(a, "/dev/shm/rlstore-", 17), 0);
    assert_int_equal(strlen(a), strlen("/dev/shm/rlstore-") + 16 + 1 + 8 + 4);
    assert_int_equal(rls__shm_path(small, sizeof small, "/dev/shm", "x"), RLS_EINVAL);
    assert_string_equal(small, "");
    assert_int_equal(rls__shm_path(a, sizeof a, "/dev/shm", ""), RLS_EINVAL);
    assert_int_equal(rls__shm_path(a, sizeof a, NULL, "x"), RLS_EINVAL);
}

/* A library of another table format (an upgrade without a reboot) names
 * another file, so that the processes of each format keep their own
 * table instead of refusing the other's (RLS_ENOTDB would fail every
 * memory check into the failure policy until someone removed it); the
 * doctor still sees the other as a table of the same database. */
static int count_sibling(void *ctx, const char *p)
{
    char *want = ctx;
    if (strcmp(p, want) == 0)
        want[0] = '\0';   /* found once */
    else
        fail_msg("unexpected sibling %s", p);
    return 0;
}

static void a_table_of_another_format_has_its_own_name(void **state)
{
    char now[600], old[600];
    assert_int_equal(rls__shm_path(now, sizeof now, dir, "/srv/app/limits.db"), RLS_OK);
    /* the name format 1 gave it: the boot's hash alone after the identity */
    size_t id_end = strlen(now) - 8 - 4;
    snprintf(old, sizeof old, "%.*s%08x.shm", (int)id_end, now,
             (unsigned)(rls__shm_boot() & 0xffffffffu));
    assert_string_not_equal(now, old);
    rls__shm *t = open_ok(old, &G);
    assert_int_equal(put(t, 1, "k", 7, 1000, 0), RLS_OK);
    rls__shm_close(t);
    int fd = open(old, O_RDWR);
    uint32_t v = 1;
    assert_int_equal(pwrite(fd, &v, sizeof v, 8), sizeof v);   /* format 1's version */
    close(fd);
    assert_int_equal(open_code(old, &G), RLS_ENOTDB);

    t = open_ok(now, &G);   /* this format's table, beside it */
    assert_int_equal(put(t, 1, "k", 3, 1000, 0), RLS_OK);
    assert_int_equal(get(t, 1, "k"), 3);
    rls__shm_close(t);
    char want[600];
    snprintf(want, sizeof want, "%s", old);
    assert_int_equal(rls__shm_each_sibling(now, count_sibling, want), RLS_OK);
    assert_string_equal(want, "");   /* listed, once */
    assert_int_equal(unlink(old), 0);
    assert_int_equal(unlink(now), 0);
}

/* An entry that exists is locked by the bucket holding it alone (shmtable.h:
 * the bucket of its slot, the lock every path that makes, reuses or drops
 * it holds); an absent one by both its buckets, in ascending order. */
static void a_present_entry_locks_its_own_bucket_alone(void **state)
{
    rls__shm *t = open_ok(new_path(), &G);
    char key[16];
    for (int k = 0; k < 20; k++) {
        snprintf(key, sizeof key, "key-%d", k);
        rls__shm_item its[2] = { item(1, key), item(2, key) };
        rls__shm_txn tx;
        assert_int_equal(rls__shm_lock(t, its, 2, 0, &tx), RLS_OK);   /* both absent */
        assert_true(tx.nlocked >= 2 && tx.nlocked <= 4);
        for (size_t i = 1; i < tx.nlocked; i++)
            assert_true(tx.locked[i - 1] < tx.locked[i]);
        for (size_t i = 0; i < 2; i++) {
            algo_state st = shm_count(k, INT64_MAX);
            assert_int_equal(rls__shm_write(&tx, i, &st), RLS_OK);
        }
        rls__shm_unlock(&tx);
        assert_int_equal(rls__shm_lock(t, its, 2, 0, &tx), RLS_OK);   /* both present */
        uint32_t home0 = tx.slot[0] / RLS__SHM_WAYS, home1 = tx.slot[1] / RLS__SHM_WAYS;
        assert_int_equal(tx.nlocked, home0 == home1 ? 1 : 2);
        assert_int_equal(tx.locked[0], home0 < home1 ? home0 : home1);
        assert_int_equal(tx.locked[tx.nlocked - 1], home0 > home1 ? home0 : home1);
        rls__shm_unlock(&tx);
        assert_int_equal(get(t, 1, key), k);
        assert_int_equal(get(t, 2, key), k);
    }
    rls__shm_close(t);
}

/* Keys of every length up to key_max, in pairs that differ in one byte
 * only: the first, a middle one, the last, and (past the 16 bytes the hot
 * record holds) one kept only in the cold record.  Every key is its own
 * entry, read back and listed whole. */
struct keyset {
    char k[200][48];
    size_t len[200];
    int n;
};

static void keyset_add(struct keyset *ks, size_t len, size_t flip)
{
    memset(ks->k[ks->n], 'k', len);
    ks->k[ks->n][len] = '\0';
    for (size_t i = 0; i < len; i++)
        ks->k[ks->n][i] = (char)('a' + (i * 7) % 26);
    if (flip < len)
        ks->k[ks->n][flip] = '#';
    ks->len[ks->n++] = len;
}

static int list_key(void *ctx, int64_t lid, int kind, const void *key, size_t key_len,
                    const algo_state *st)
{
    const struct keyset *ks = ctx;
    (void)lid;
    (void)kind;
    assert_true(st->a >= 1 && st->a <= ks->n);
    assert_int_equal(key_len, ks->len[st->a - 1]);
    assert_memory_equal(key, ks->k[st->a - 1], key_len);
    return 0;
}

static void keys_differing_in_one_byte_are_apart(void **state)
{
    const rls__shm_geom g = { 1024, 40, 0 };
    rls__shm *t = open_ok(new_path(), &g);
    static struct keyset ks;
    ks.n = 0;
    for (size_t len = 1; len <= 40; len++) {
        keyset_add(&ks, len, len);        /* the plain key */
        keyset_add(&ks, len, 0);          /* its first byte other */
        if (len > 2)
            keyset_add(&ks, len, len / 2);   /* a middle byte */
        if (len > 1)
            keyset_add(&ks, len, len - 1);   /* its last byte */
        if (len > 18)   /* a byte only the cold record holds (not len / 2) */
            keyset_add(&ks, len, len / 2 == 16 ? 17 : 16);
    }
    for (int i = 0; i < ks.n; i++)
        assert_int_equal(put(t, 1, ks.k[i], i + 1, 1000, 0), RLS_OK);
    for (int i = 0; i < ks.n; i++) {
        assert_int_equal(get(t, 1, ks.k[i]), i + 1);
        assert_int_equal(get(t, 2, ks.k[i]), -1);   /* another limit: absent */
    }
    assert_int_equal(rls__shm_each(t, 0, list_key, &ks), RLS_OK);
    rls__shm_close(t);
}

/* A writer that keeps losing holds the fast writers of its buckets off
 * (rls__shm_fair_note, rls__shm_held): from its second loss in a row, for
 * RLS__SHM_HOLD_MS, whoever locks the item sees the hold; a later hold
 * stays; its win lifts its own hold and no other; a file made before the
 * field reads no hold (zeros). */
static void a_losing_writer_holds_fast_writers_off(void **state)
{
    rls__shm *t = open_ok(new_path(), &G);
    rls__shm_item a = item(1, "hot"), b = item(1, "other");
    rls__shm_txn tx, ty;
    rls__shm_fair f = {0, 0}, g = {0, 0};
    const int64_t now = 1000000;
    assert_int_equal(rls__shm_lock(t, &a, 1, 0, &tx), RLS_OK);
    assert_false(rls__shm_held(&tx, 0));   /* a new table: no hold */
    rls__shm_fair_note(&tx, &f, 1, now);   /* one loss: nothing yet */
    assert_false(rls__shm_held(&tx, now));
    rls__shm_fair_note(&tx, &f, 1, now);   /* two: held */
    assert_int_equal(f.hold, now + RLS__SHM_HOLD_MS);
    rls__shm_unlock(&tx);
    assert_int_equal(rls__shm_lock(t, &a, 1, 0, &ty), RLS_OK);   /* another writer */
    assert_true(rls__shm_held(&ty, now));
    assert_true(rls__shm_held(&ty, now + RLS__SHM_HOLD_MS - 1));
    assert_false(rls__shm_held(&ty, now + RLS__SHM_HOLD_MS));   /* it ends by itself */
    /* writers that are all transactions (PostgreSQL) wait for another's
     * hold, never for their own */
    assert_true(rls__shm_held_by_other(&ty, &g, now));
    assert_false(rls__shm_held_by_other(&ty, &f, now));
    assert_false(rls__shm_held_by_other(&ty, &g, now + RLS__SHM_HOLD_MS));
    assert_false(rls__shm_held_by_other(NULL, &g, now));
    /* another loser's later hold on the same buckets stays when f wins */
    g.conflicts = RLS__SHM_HOLD_AFTER;
    rls__shm_fair_note(&ty, &g, 1, now + 10);
    rls__shm_unlock(&ty);
    assert_int_equal(rls__shm_lock(t, &a, 1, 0, &tx), RLS_OK);
    rls__shm_fair_note(&tx, &f, 0, now + 20);
    assert_int_equal(f.conflicts, 0);
    assert_int_equal(f.hold, 0);
    assert_true(rls__shm_held(&tx, now + RLS__SHM_HOLD_MS + 5));   /* g's */
    rls__shm_fair_note(&tx, &g, 0, now + 30);   /* g through: lifted */
    assert_false(rls__shm_held(&tx, now));
    rls__shm_unlock(&tx);
    /* a hold is of the buckets it was set on: another item elsewhere is free */
    f.conflicts = RLS__SHM_HOLD_AFTER;
    assert_int_equal(rls__shm_lock(t, &a, 1, 0, &tx), RLS_OK);
    rls__shm_fair_note(&tx, &f, 1, now);
    uint32_t held[4];
    size_t nh = tx.nlocked;
    memcpy(held, tx.locked, nh * sizeof held[0]);
    rls__shm_unlock(&tx);
    assert_int_equal(rls__shm_lock(t, &b, 1, 0, &ty), RLS_OK);
    int shared = 0;
    for (size_t i = 0; i < ty.nlocked; i++)
        for (size_t j = 0; j < nh; j++)
            shared |= ty.locked[i] == held[j];
    assert_int_equal(rls__shm_held(&ty, now), shared);
    rls__shm_unlock(&ty);
    rls__shm_fair_note(NULL, &f, 1, now);   /* no transaction, no clock: nothing */
    rls__shm_fair_note(&tx, &f, 1, -1);
    assert_false(rls__shm_held(NULL, now));
    rls__shm_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_new_table_finds_nothing_and_keeps_what_is_written),
        cmocka_unit_test(a_state_of_another_algorithm_reads_absent),
        cmocka_unit_test(a_sliding_log_is_kept_up_to_the_tables_bound),
        cmocka_unit_test(a_transaction_that_writes_nothing_changes_nothing),
        cmocka_unit_test(expired_entries_are_reused_and_a_full_table_changes_nothing),
        cmocka_unit_test(two_choices_fill_most_of_the_table),
        cmocka_unit_test(entries_are_listed_and_dropped),
        cmocka_unit_test(keys_differing_in_one_byte_are_apart),
        cmocka_unit_test(a_present_entry_locks_its_own_bucket_alone),
        cmocka_unit_test(foreign_and_wrong_size_files_are_refused_and_left_alone),
        cmocka_unit_test(bad_arguments_are_refused),
        cmocka_unit_test(a_table_path_is_derived_from_the_identity),
        cmocka_unit_test(a_table_of_another_format_has_its_own_name),
        cmocka_unit_test(a_losing_writer_holds_fast_writers_off),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
