/*
 * test_action_isolation.c - one action's history never changes another's
 * decisions (issue #17, defect 15).
 *
 * Property: random per-action sequences of checks of one key give the same
 * answers (allowed, remaining, reset_ms, retry_after_ms) when each action
 * has a database of its own and when all of them share one database, with
 * every action's run starting again at the same early time after the
 * others have run (and GC has collected their states).  The limits are the
 * issue's: sliding_log and first-hit fixed_window, 1 and 3 per 1000 ms,
 * plus one of each other algorithm.  Also: however clock safety is kept, a
 * fresh key's window never lasts longer than the limit's own length.
 *
 * Knobs: RLS_ISO_CHECKS (checks per action, default 750), RLS_ISO_SEED.
 * Runs on SQLite and (make test-pg) PostgreSQL.
 */
#include "reltest.h"

static const char *const RULES =
    "version: 1\n"
    "actions:\n"
    "  sl1: { limits: [ { name: l, algorithm: sliding_log, limit: 1, window: 1000ms } ] }\n"
    "  sl3: { limits: [ { name: l, algorithm: sliding_log, limit: 3, window: 1000ms } ] }\n"
    "  fh1: { limits: [ { name: l, algorithm: fixed_window, limit: 1, window: 1000ms,"
    " anchor: first_hit } ] }\n"
    "  fh3: { limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 1000ms,"
    " anchor: first_hit } ] }\n"
    "  fw3: { limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 1s } ] }\n"
    "  sw3: { limits: [ { name: l, algorithm: sliding_window, limit: 3, window: 1s } ] }\n"
    "  tb3: { limits: [ { name: l, algorithm: token_bucket, limit: 3, window: 1s } ] }\n"
    "  gc3: { limits: [ { name: l, algorithm: gcra, limit: 3, window: 1s } ] }\n";

static const char *const ACTIONS[] = {"sl1", "sl3", "fh1", "fh3", "fw3", "sw3", "tb3", "gc3"};
#define NACT ((int)(sizeof ACTIONS / sizeof ACTIONS[0]))

typedef struct answer {
    int allowed;
    int64_t remaining, reset, retry;
} answer;

static uint64_t rng_state;

static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

/* Times of one action's run: from T0, steps of 0..400 ms. */
static void make_times(int64_t *t, int n)
{
    int64_t now = T0;
    for (int i = 0; i < n; i++) {
        now += rnd() % 401;
        t[i] = now;
    }
}

/* Runs one action's sequence on db; GC steps at the sequence's own time
 * every 50 checks, as housekeeping would. */
static void run_action(rls_db *db, const char *action, const int64_t *t, int n, answer *out)
{
    for (int i = 0; i < n; i++) {
        rls_result r;
        it_check_on(db, action, "key", 1, t[i], &r);
        out[i].allowed = r.allowed;
        out[i].remaining = r.remaining;
        out[i].reset = r.reset_ms;
        out[i].retry = r.retry_after_ms;
        if (i % 50 == 49)
            assert_int_equal(rls_gc_at(db, 1000, t[i], NULL), RLS_OK);
    }
}

static void test_separate_equals_shared(void **state)
{
    int n = (int)rel_knob("RLS_ISO_CHECKS", 750, 100);
    int64_t *t[NACT];
    answer *alone[NACT], *shared[NACT];
    int differ = 0, total = 0;
    (void)state;
    rng_state = (uint64_t)rel_knob("RLS_ISO_SEED", 17, 17);
    for (int a = 0; a < NACT; a++) {
        t[a] = malloc(sizeof *t[a] * (size_t)n);
        alone[a] = calloc((size_t)n, sizeof *alone[a]);
        shared[a] = calloc((size_t)n, sizeof *shared[a]);
        assert_true(t[a] && alone[a] && shared[a]);
        make_times(t[a], n);
    }
    for (int a = 0; a < NACT; a++) {
        itest *x = it_new(RULES);
        run_action(x->db, ACTIONS[a], t[a], n, alone[a]);
        it_free(x);
    }
    itest *one = it_new(RULES);
    for (int a = 0; a < NACT; a++)
        run_action(one->db, ACTIONS[a], t[a], n, shared[a]);
    it_free(one);
    for (int a = 0; a < NACT; a++) {
        for (int i = 0; i < n; i++, total++) {
            if (memcmp(&alone[a][i], &shared[a][i], sizeof(answer)) == 0)
                continue;
            if (differ++ < 5)
                print_message("%s check %d at %lld: alone %d/%lld/%lld/%lld, shared "
                              "%d/%lld/%lld/%lld\n", ACTIONS[a], i, (long long)t[a][i],
                              alone[a][i].allowed, (long long)alone[a][i].remaining,
                              (long long)alone[a][i].reset, (long long)alone[a][i].retry,
                              shared[a][i].allowed, (long long)shared[a][i].remaining,
                              (long long)shared[a][i].reset, (long long)shared[a][i].retry);
        }
        free(t[a]);
        free(alone[a]);
        free(shared[a]);
    }
    if (differ)
        fail_msg("%d of %d answers differ between separate databases and one", differ, total);
}

/* The symptom: a key's first check under another action, dated
 * well before the latest time seen (and collected) under the first,
 * reports a reset within its own 1 s window. */
static void test_fresh_key_window_is_own_length(void **state)
{
    itest *x = it_new(RULES);
    rls_result r;
    int64_t late = T0 + 77 * 60000LL;
    (void)state;
    for (int i = 0; i < 10; i++)
        it_check(x, "fh1", "key", 1, late + i * 1000, &r);
    assert_int_equal(rls_gc_at(x->db, 1000, late + 60000, NULL), RLS_OK);
    for (int a = 0; a < NACT; a++) {
        if (strcmp(ACTIONS[a], "fh1") == 0)
            continue;
        /* sliding_window's count weighs until the end of the next window */
        int64_t longest = strcmp(ACTIONS[a], "sw3") == 0 ? 2000 : 1000;
        assert_true(it_check(x, ACTIONS[a], "key", 1, T0, &r));
        if (r.reset_ms > longest)
            fail_msg("%s: reset %lld ms for a 1 s window", ACTIONS[a], (long long)r.reset_ms);
    }
    it_free(x);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_separate_equals_shared),
        cmocka_unit_test(test_fresh_key_window_is_own_length),
    };
    rel_init(argc > 0 ? argv[0] : NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
