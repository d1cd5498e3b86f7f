/*
 * test_denycache.c - the cache of denials (core/denycache.c): SipHash-2-4
 * against the reference vectors, when an entry answers and when it must
 * not (generation, real-time expiry, time window, cost), the answer's
 * countdown, replacement within a set, and which decisions may be cached.
 */
#include "testutil.h"
#include "denycache.h"

static const unsigned char SEED[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

#define NOW 1767225600000LL

static void test_siphash_reference_vectors(void **state)
{
    unsigned char msg[64];
    (void)state;
    for (int i = 0; i < 64; i++)
        msg[i] = (unsigned char)i;
    /* key 00..0f, message 00..(n-1): the paper's appendix (n = 15) and
     * the first of the reference implementation's vectors (n = 0) */
    assert_true(rls__deny_siphash(SEED, msg, 0) == 0x726fdb47dd0e0e31ULL);
    assert_true(rls__deny_siphash(SEED, msg, 15) == 0xa129ca6149be45e5ULL);
    /* every length hashes differently, and the key matters */
    unsigned char other[16] = {1};
    for (int n = 1; n < 64; n++) {
        assert_true(rls__deny_siphash(SEED, msg, (size_t)n) != rls__deny_siphash(SEED, msg, (size_t)n - 1));
        assert_true(rls__deny_siphash(SEED, msg, (size_t)n) != rls__deny_siphash(other, msg, (size_t)n));
    }
}

static rls_result denial(int reason, int64_t retry, int64_t reset, const char *rule)
{
    rls_result r;
    memset(&r, 0, sizeof r);
    r.allowed = 0;
    r.reason = reason;
    r.limit = 10;
    r.remaining = 0;
    r.retry_after_ms = retry;
    r.reset_ms = reset;
    r.window_ms = 60000;
    snprintf(r.rule, sizeof r.rule, "%s", rule);
    return r;
}

static void test_fingerprint_separates_action_and_key(void **state)
{
    (void)state;
    deny_cache *c = rls__denycache_new(SEED);
    assert_non_null(c);
    uint64_t a = rls__denycache_fp(c, "ab", "c", 1), b = rls__denycache_fp(c, "a", "bc", 2);
    assert_true(a != b);
    assert_true(a != 0 && b != 0);
    assert_true(rls__denycache_fp(c, "a", "k\0x", 3) != rls__denycache_fp(c, "a", "k", 1));
    deny_cache *d = rls__denycache_new((const unsigned char *)"another seed 16b");
    assert_true(rls__denycache_fp(d, "ab", "c", 1) != a);
    rls__denycache_free(d);
    rls__denycache_free(c);
}

static void test_answer_counts_down(void **state)
{
    (void)state;
    deny_cache *c = rls__denycache_new(SEED);
    uint64_t fp = rls__denycache_fp(c, "api", "k", 1);
    rls_result in = denial(RLS_REASON_LIMIT, 5000, 7000, "minute"), out;
    assert_int_equal(rls__denycache_put(c, fp, 1, NOW, 100, 7, &in), 0);
    assert_int_equal(rls__denycache_get(c, fp, 1, NOW + 1200, 200, 7, &out), 1);
    assert_int_equal(out.allowed, 0);
    assert_int_equal(out.reason, RLS_REASON_LIMIT);
    assert_int_equal(out.limit, 10);
    assert_int_equal(out.remaining, 0);
    assert_int_equal(out.retry_after_ms, 3800);
    assert_int_equal(out.reset_ms, 5800);
    assert_int_equal(out.window_ms, 60000);
    assert_int_equal(out.delay_ms, 0);
    assert_string_equal(out.rule, "minute");
    /* up to the last millisecond before the retry time, not at it */
    assert_int_equal(rls__denycache_get(c, fp, 1, NOW + 4999, 300, 7, &out), 1);
    assert_int_equal(out.retry_after_ms, 1);
    assert_int_equal(rls__denycache_get(c, fp, 1, NOW + 5000, 300, 7, &out), 0);
    /* and gone for good */
    assert_int_equal(rls__denycache_get(c, fp, 1, NOW + 10, 300, 7, &out), 0);
    rls__denycache_free(c);
}

static void test_what_invalidates(void **state)
{
    (void)state;
    deny_cache *c = rls__denycache_new(SEED);
    uint64_t fp = rls__denycache_fp(c, "api", "k", 1);
    rls_result in = denial(RLS_REASON_LIMIT, 60000, 60000, "l"), out;
    assert_int_equal(rls__denycache_put(c, fp, 2, NOW, 1000, 3, &in), 0);
    /* another cost: not answered, but kept */
    assert_int_equal(rls__denycache_get(c, fp, 1, NOW, 1000, 3, &out), 0);
    assert_int_equal(rls__denycache_get(c, fp, 3, NOW, 1000, 3, &out), 0);
    /* an earlier time (a clock step back): not answered, kept */
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW - 1, 1000, 3, &out), 0);
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW, 1000, 3, &out), 1);
    /* real time: trusted for less than DENYCACHE_TTL_MS */
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW, 1000 + DENYCACHE_TTL_MS - 1, 3, &out), 1);
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW, 1000 + DENYCACHE_TTL_MS, 3, &out), 0);
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW, 1000, 3, &out), 0);  /* dropped */
    /* a new generation: something was given back somewhere */
    assert_int_equal(rls__denycache_put(c, fp, 2, NOW, 1000, 3, &in), 0);
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW, 1000, 4, &out), 0);
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW, 1000, 3, &out), 0);
    /* forget and clear */
    assert_int_equal(rls__denycache_put(c, fp, 2, NOW, 1000, 3, &in), 0);
    rls__denycache_forget(c, fp);
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW, 1000, 3, &out), 0);
    assert_int_equal(rls__denycache_put(c, fp, 2, NOW, 1000, 3, &in), 0);
    rls__denycache_clear(c);
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW, 1000, 3, &out), 0);
    /* what may not be put at all */
    rls_result ok = in;
    ok.allowed = 1;
    assert_int_equal(rls__denycache_put(c, fp, 2, NOW, 1000, 3, &ok), -1);
    rls_result left = in;
    left.remaining = 1;
    assert_int_equal(rls__denycache_put(c, fp, 2, NOW, 1000, 3, &left), -1);
    assert_int_equal(rls__denycache_get(c, fp, 2, NOW, 1000, 3, &out), 0);
    rls__denycache_free(c);
}

static void test_block_answers_any_cost_forever(void **state)
{
    (void)state;
    deny_cache *c = rls__denycache_new(SEED);
    uint64_t fp = rls__denycache_fp(c, "api", "k", 1);
    rls_result in = denial(RLS_REASON_BLOCKED, -1, 0, ""), out;
    in.limit = 0;
    assert_int_equal(rls__denycache_put(c, fp, 1, NOW, 0, 0, &in), 0);
    assert_int_equal(rls__denycache_get(c, fp, 99, NOW + 86400000LL * 365, 10, 0, &out), 1);
    assert_int_equal(out.reason, RLS_REASON_BLOCKED);
    assert_int_equal(out.retry_after_ms, -1);
    assert_int_equal(out.reset_ms, 0);
    assert_string_equal(out.rule, "");
    rls__denycache_free(c);
}

/* Keys whose fingerprints fall into one set, found by search. */
static int same_set_keys(deny_cache *c, char keys[][16], int want)
{
    int n = 0;
    uint64_t set0 = rls__denycache_fp(c, "a", "k0", 2) & (DENYCACHE_SETS - 1);
    for (int i = 0; n < want && i < 10000000; i++) {
        char k[16];
        int kl = snprintf(k, sizeof k, "k%d", i);
        if ((rls__denycache_fp(c, "a", k, (size_t)kl) & (DENYCACHE_SETS - 1)) == set0)
            memcpy(keys[n++], k, sizeof k);
    }
    return n;
}

static void test_least_recently_used_is_replaced(void **state)
{
    (void)state;
    deny_cache *c = rls__denycache_new(SEED);
    char keys[DENYCACHE_WAYS + 1][16];
    assert_int_equal(same_set_keys(c, keys, DENYCACHE_WAYS + 1), DENYCACHE_WAYS + 1);
    rls_result in = denial(RLS_REASON_LIMIT, 1000, 1000, "l"), out;
    uint64_t fp[DENYCACHE_WAYS + 1];
    for (int i = 0; i <= DENYCACHE_WAYS; i++)
        fp[i] = rls__denycache_fp(c, "a", keys[i], strlen(keys[i]));
    for (int i = 0; i < DENYCACHE_WAYS; i++)
        assert_int_equal(rls__denycache_put(c, fp[i], 1, NOW, 0, 0, &in), 0);
    /* use the first: the second is now the least recently used */
    assert_int_equal(rls__denycache_get(c, fp[0], 1, NOW, 0, 0, &out), 1);
    assert_int_equal(rls__denycache_put(c, fp[DENYCACHE_WAYS], 1, NOW, 0, 0, &in), 0);
    assert_int_equal(rls__denycache_get(c, fp[1], 1, NOW, 0, 0, &out), 0);
    assert_int_equal(rls__denycache_get(c, fp[0], 1, NOW, 0, 0, &out), 1);
    for (int i = 2; i <= DENYCACHE_WAYS; i++)
        assert_int_equal(rls__denycache_get(c, fp[i], 1, NOW, 0, 0, &out), 1);
    rls__denycache_free(c);
}

static void test_many_rule_names(void **state)
{
    (void)state;
    deny_cache *c = rls__denycache_new(SEED);
    rls_result out;
    char name[32], key[32];
    /* more distinct names than the name table holds: older entries may be
     * dropped, but every answer carries its own name */
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "rule%d", i);
        int kl = snprintf(key, sizeof key, "key%d", i);
        rls_result in = denial(RLS_REASON_LIMIT, 1000, 1000, name);
        uint64_t fp = rls__denycache_fp(c, "a", key, (size_t)kl);
        assert_int_equal(rls__denycache_put(c, fp, 1, NOW, 0, 0, &in), 0);
        assert_int_equal(rls__denycache_get(c, fp, 1, NOW, 0, 0, &out), 1);
        assert_string_equal(out.rule, name);
    }
    rls__denycache_free(c);
}

/* ---- rls__deny_cacheable ---------------------------------------------------- */

typedef struct fixture {
    rule_limit def[2];
    resolved_limit rl[2];
    algo_state st[2];
    decide_item items[2];
    decide_out out;
    rls_result res;
} fixture;

static void fixture_init(fixture *f, int algorithm)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 2; i++) {
        snprintf(f->def[i].name, sizeof f->def[i].name, "l%d", i);
        f->def[i].algorithm = algorithm;
        f->def[i].limit = 10;
        f->rl[i].def = &f->def[i];
        f->rl[i].limit = 10;
        f->items[i].rl = &f->rl[i];
        f->items[i].st = &f->st[i];
    }
    f->items[0].denied = 1;
    f->out.deciding = 0;
    f->out.penalty = -1;
    f->res = denial(RLS_REASON_LIMIT, 3000, 3000, "l0");
}

static void test_cacheable_decisions(void **state)
{
    fixture f;
    (void)state;
    fixture_init(&f, ALGO_GCRA);
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 1), 1);
    /* more than one unit under a refilling algorithm: "0 remaining" may
     * turn into 1 before the request passes */
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 2), 0);
    /* ... but a fixed window refills only at its reset */
    fixture_init(&f, ALGO_FIXED_WINDOW);
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 5), 1);
    /* something remains (a request larger than what is left) */
    f.res.remaining = 2;
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 5), 0);
    /* a penalty is imposed now: the next answer is a block */
    fixture_init(&f, ALGO_FIXED_WINDOW);
    f.out.penalty = 0;
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 1), 0);
    /* two limits deny */
    fixture_init(&f, ALGO_FIXED_WINDOW);
    f.items[1].denied = 1;
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 1), 0);
    /* a limit counts denials (either one) */
    fixture_init(&f, ALGO_FIXED_WINDOW);
    f.def[1].count_denied = 1;
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 1), 0);
    /* a soft limit decides */
    fixture_init(&f, ALGO_FIXED_WINDOW);
    f.def[0].overage_pct = 10;
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 1), 0);
    /* never admissible, admitted, shadow, degraded */
    fixture_init(&f, ALGO_FIXED_WINDOW);
    f.res.reason = RLS_REASON_COST_EXCEEDS;
    f.res.retry_after_ms = -1;
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 11), 0);
    fixture_init(&f, ALGO_FIXED_WINDOW);
    f.res.allowed = 1;
    f.res.reason = RLS_REASON_OK;
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 1), 0);
    f.res.reason = RLS_REASON_SHADOW;
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 1), 0);
    fixture_init(&f, ALGO_FIXED_WINDOW);
    f.res.reason = RLS_REASON_DEGRADED;
    assert_int_equal(rls__deny_cacheable(f.items, 2, &f.out, &f.res, 1), 0);
    /* a block, with or without limits read */
    fixture_init(&f, ALGO_TOKEN_BUCKET);
    f.res = denial(RLS_REASON_BLOCKED, -1, 0, "");
    assert_int_equal(rls__deny_cacheable(NULL, 0, NULL, &f.res, 7), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_siphash_reference_vectors),
        cmocka_unit_test(test_fingerprint_separates_action_and_key),
        cmocka_unit_test(test_answer_counts_down),
        cmocka_unit_test(test_what_invalidates),
        cmocka_unit_test(test_block_answers_any_cost_forever),
        cmocka_unit_test(test_least_recently_used_is_replaced),
        cmocka_unit_test(test_many_rule_names),
        cmocka_unit_test(test_cacheable_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
