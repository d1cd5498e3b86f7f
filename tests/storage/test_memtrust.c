/*
 * test_memtrust.c - the per-key trust table of the memory-class fast path
 * (storage/memtrust.c): an entry answers only its own (action, key) bytes,
 * under its rule set, deny generation, at its caller's time or later and
 * within MEMTRUST_TTL_MS; keys too long are not kept; a million distinct
 * keys leave it at its fixed size and count; a recent key survives in
 * its set; drop and clear forget.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "memtrust.h"

static const int RULES_A = 1, RULES_B = 2;   /* two rule sets: their addresses */
#define GEN 7
#define NOW 1000000
#define MONO 5000

static int get(mem_trust *c, int act, const char *key, uint64_t gen, int64_t now, int64_t mono)
{
    return rls__memtrust_get(c, &RULES_A, 3, act, key, strlen(key), gen, now, mono);
}

static void put(mem_trust *c, int act, const char *key, int64_t mono)
{
    rls__memtrust_put(c, &RULES_A, 3, act, key, strlen(key), GEN, NOW, mono);
}

static void answers_its_own_key_only(void **state)
{
    (void)state;
    mem_trust *c = rls__memtrust_new();
    assert_non_null(c);
    assert_int_equal(get(c, 0, "k", GEN, NOW, MONO), 0);   /* empty */
    put(c, 0, "k", MONO);
    assert_int_equal(get(c, 0, "k", GEN, NOW, MONO), 1);
    assert_int_equal(get(c, 1, "k", GEN, NOW, MONO), 0);     /* another action */
    assert_int_equal(get(c, 0, "K", GEN, NOW, MONO), 0);     /* another spelling */
    assert_int_equal(get(c, 0, "k ", GEN, NOW, MONO), 0);
    assert_int_equal(get(c, 0, "", GEN, NOW, MONO), 0);
    /* a key with a NUL inside is its bytes */
    rls__memtrust_put(c, &RULES_A, 3, 0, "a\0b", 3, GEN, NOW, MONO);
    assert_int_equal(rls__memtrust_get(c, &RULES_A, 3, 0, "a\0b", 3, GEN, NOW, MONO), 1);
    assert_int_equal(rls__memtrust_get(c, &RULES_A, 3, 0, "a\0c", 3, GEN, NOW, MONO), 0);
    assert_int_equal(rls__memtrust_get(c, &RULES_A, 3, 0, "a", 1, GEN, NOW, MONO), 0);
    rls__memtrust_free(c);
}

static void valid_only_under_what_it_was_learned(void **state)
{
    (void)state;
    mem_trust *c = rls__memtrust_new();
    put(c, 2, "k", MONO);
    assert_int_equal(get(c, 2, "k", GEN + 1, NOW, MONO), 0);                 /* generation */
    assert_int_equal(get(c, 2, "k", GEN, NOW - 1, MONO), 0);                 /* earlier time */
    assert_int_equal(get(c, 2, "k", GEN, NOW + 86400000, MONO), 1);          /* later: yes */
    assert_int_equal(get(c, 2, "k", GEN, NOW, MONO + MEMTRUST_TTL_MS - 1), 1);
    assert_int_equal(get(c, 2, "k", GEN, NOW, MONO + MEMTRUST_TTL_MS), 0);   /* trust over */
    assert_int_equal(get(c, 2, "k", GEN, NOW, MONO - 1), 0);                 /* clock odd */
    /* another rule set: nothing, and a put under it forgets the others */
    assert_int_equal(rls__memtrust_get(c, &RULES_B, 3, 2, "k", 1, GEN, NOW, MONO), 0);
    assert_int_equal(rls__memtrust_get(c, &RULES_A, 4, 2, "k", 1, GEN, NOW, MONO), 0);
    rls__memtrust_put(c, &RULES_B, 3, 2, "j", 1, GEN, NOW, MONO);
    assert_int_equal(rls__memtrust_count(c), 1);
    assert_int_equal(rls__memtrust_get(c, &RULES_B, 3, 2, "j", 1, GEN, NOW, MONO), 1);
    assert_int_equal(rls__memtrust_get(c, &RULES_B, 3, 2, "k", 1, GEN, NOW, MONO), 0);
    rls__memtrust_free(c);
}

static void long_keys_and_odd_actions_are_not_kept(void **state)
{
    (void)state;
    mem_trust *c = rls__memtrust_new();
    char key[MEMTRUST_KEY_MAX + 2];
    memset(key, 'x', sizeof key);
    key[MEMTRUST_KEY_MAX] = '\0';
    put(c, 0, key, MONO);
    assert_int_equal(get(c, 0, key, GEN, NOW, MONO), 1);   /* the longest kept */
    key[MEMTRUST_KEY_MAX] = 'x';
    key[MEMTRUST_KEY_MAX + 1] = '\0';
    put(c, 0, key, MONO);
    assert_int_equal(get(c, 0, key, GEN, NOW, MONO), 0);
    put(c, -1, "k", MONO);
    put(c, 65536, "k", MONO);
    assert_int_equal(get(c, -1, "k", GEN, NOW, MONO), 0);
    assert_int_equal(get(c, 65536, "k", GEN, NOW, MONO), 0);
    assert_int_equal(get(c, 0, "k", GEN, NOW, MONO), 0);   /* not 65536 wrapped */
    assert_int_equal(rls__memtrust_count(c), 1);
    rls__memtrust_free(c);
}

/* A million distinct keys: the table's size and count stay at their
 * bound; the most recent key of all is there; drop and clear forget. */
static void a_million_keys_stay_bounded(void **state)
{
    (void)state;
    mem_trust *c = rls__memtrust_new();
    char key[32];
    put(c, 0, "first", MONO);
    size_t bytes = rls__memtrust_bytes(c);
    assert_true(bytes < 2u * 1024 * 1024);
    for (int i = 0; i < 1000000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        put(c, i % 3, key, MONO + 1 + i / 1000);
    }
    assert_int_equal(rls__memtrust_bytes(c), bytes);
    assert_true(rls__memtrust_count(c) <= MEMTRUST_SETS * MEMTRUST_WAYS);
    assert_true(rls__memtrust_count(c) > MEMTRUST_SETS * MEMTRUST_WAYS / 2);
    int64_t mono = MONO + 1 + 999999 / 1000;
    assert_int_equal(get(c, 999999 % 3, "k999999", GEN, NOW, mono), 1);
    assert_int_equal(get(c, 0, "first", GEN, NOW, mono), 0);   /* the oldest went */
    rls__memtrust_drop(c, 999999 % 3, "k999999", 7);
    assert_int_equal(get(c, 999999 % 3, "k999999", GEN, NOW, mono), 0);
    put(c, 0, "again", mono);
    size_t n = rls__memtrust_count(c);
    put(c, 0, "again", mono + 1);   /* the same key again: the same entry */
    assert_int_equal(rls__memtrust_count(c), n);
    assert_int_equal(get(c, 0, "again", GEN, NOW, mono + 1), 1);
    rls__memtrust_clear(c);
    assert_int_equal(rls__memtrust_count(c), 0);
    assert_int_equal(get(c, 0, "again", GEN, NOW, mono), 0);
    rls__memtrust_free(c);
    rls__memtrust_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(answers_its_own_key_only),
        cmocka_unit_test(valid_only_under_what_it_was_learned),
        cmocka_unit_test(long_keys_and_odd_actions_are_not_kept),
        cmocka_unit_test(a_million_keys_stay_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
