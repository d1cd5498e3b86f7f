/*
 * checks.c - single-process rlstore scenarios: rls_check in a loop on a
 * fresh database, one key per operation from the same pseudo-random walk as
 * the floor (the first `keys` operations insert new state rows).
 *
 *   admitted   one rule, two limits (daily + weekly), each algorithm, and
 *              durability FULL: every check must be admitted
 *   denied     every key over its limit (limit 1 a day, charged once before
 *              the timing), or every key blocked by an operator
 *              (rls_block_set_at, forever): every check must be denied
 *
 * Denied scenarios use rls_check_at on a clock that starts at noon UTC, so
 * no window ends during the run.  A spec with a target opens that database
 * (a PostgreSQL URI of a fresh schema, pg_backend.c) instead of a file.
 */
#include <stdio.h>
#include <string.h>
#include <rlstore.h>
#include "bench.h"

const char RULES_ONE[] =
    "version: 1\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    limits: [ { name: daily, algorithm: fixed_window, limit: 1000000000, window: 1d } ]\n";

const char RULES_TWO[] =
    "version: 1\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    limits:\n"
    "      - { name: daily, algorithm: fixed_window, limit: 1000000000, window: 1d }\n"
    "      - { name: weekly, algorithm: fixed_window, limit: 1000000000, window: 1w }\n";

const char RULES_DENY[] =
    "version: 1\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    limits: [ { name: daily, algorithm: fixed_window, limit: 1, window: 1d } ]\n";

const char *const ALGORITHMS[6] = {"fixed_window", "sliding_window", "sliding_log",
                                   "token_bucket", "gcra", "leaky_bucket"};

/* The same limit for every algorithm: 10,000 a day (sliding_log allows at
 * most 10,000), far more than any key gets in a run. */
void rules_for_algorithm(char *buf, size_t size, const char *alg)
{
    snprintf(buf, size,
             "version: 1\n"
             "actions:\n"
             "  signup:\n"
             "    key: ip\n"
             "    limits: [ { name: daily, algorithm: %s, limit: 10000, window: 1d } ]\n",
             alg);
}

static int64_t clock_of(const check_spec *sp)
{
    return sp->vclock ? noon_clock_ms() : wall_ms();
}

int bench_warm(rls_db *db, long keys, int vclock, char *err, size_t errsize)
{
    return bench_warm_part(db, keys, 0, 1, vclock, err, errsize);
}

int bench_warm_part(rls_db *db, long keys, long first, long step, int vclock, char *err,
                    size_t errsize)
{
    char key[64];
    rls_result res;
    for (long i = first; i < keys; i += step) {
        key_name(key, sizeof key, (unsigned long)i);
        int rc = rls_check_at(db, "signup", key, 1, vclock ? noon_clock_ms() : wall_ms(), &res);
        if (rc != RLS_OK || !res.allowed) {
            snprintf(err, errsize, "warming key %s: %s: %s, allowed %d", key, rls_strerror(rc),
                     rls_errmsg(db), res.allowed);
            return -1;
        }
    }
    return 0;
}

/* Checks every key once (warm), or charges every key once (over limit) or
 * blocks it, then checks it once. */
static int prepare(rls_db *db, const check_spec *sp, char *err, size_t errsize)
{
    char key[64];
    rls_result res;
    if (sp->prepare == PREP_WARM)
        return bench_warm(db, sp->keys, sp->vclock, err, errsize);
    for (long i = 0; i < sp->keys; i++) {
        int rc;
        key_name(key, sizeof key, (unsigned long)i);
        if (sp->prepare == PREP_OVER_LIMIT)
            rc = rls_check_at(db, "signup", key, 1, clock_of(sp), &res);
        else
            rc = rls_block_set_at(db, "signup", key, 0, "rlbench", clock_of(sp));
        if (rc != RLS_OK) {
            snprintf(err, errsize, "preparing key %s: %s: %s", key, rls_strerror(rc),
                     rls_errmsg(db));
            return -1;
        }
    }
    /* One denied check per key: the steady state of a key under attack,
     * whose first denial is a transaction like any check. */
    for (long i = 0; i < sp->keys; i++) {
        key_name(key, sizeof key, (unsigned long)i);
        int rc = rls_check_at(db, "signup", key, 1, clock_of(sp), &res);
        if (rc != RLS_OK || res.allowed) {
            snprintf(err, errsize, "preparing key %s: not denied: %s", key, rls_strerror(rc));
            return -1;
        }
    }
    return 0;
}

int bench_check(const bench_cfg *cfg, const check_spec *sp, long ops, bench_lat *out,
                double *prep_secs, char *err, size_t errsize)
{
    return bench_check_cpu(cfg, sp, ops, out, prep_secs, NULL, NULL, err, errsize);
}

int bench_check_cpu(const bench_cfg *cfg, const check_spec *sp, long ops, bench_lat *out,
                    double *prep_secs, int (*server_cpu)(double *us), cpu_use *cpu,
                    char *err, size_t errsize)
{
    char path[4096], key[64];
    rls_db *db = NULL;
    rls_options opt;
    rls_result res;
    lat_rec lat = {0};
    int rc, ret = -1;
    int want_reason = sp->prepare == PREP_BLOCK ? RLS_REASON_BLOCKED
                      : sp->expect_allowed    ? RLS_REASON_OK
                                              : RLS_REASON_LIMIT;
    double srv0 = 0, srv1 = 0;
    int have_srv = 0;
    if (sp->target)
        snprintf(path, sizeof path, "%s", sp->target);
    else
        snprintf(path, sizeof path, "%s/%s", cfg->dir, sp->file);
    if (!sp->target)
        remove_db(path);
    rls_options_init(&opt);
    opt.durability = sp->durability;
    if ((rc = rls_open(&db, path, &opt)) != RLS_OK) {
        snprintf(err, errsize, "open: %s: %s", rls_strerror(rc), rls_errmsg(NULL));
        goto out;
    }
    if ((rc = rls_rules_apply_at(db, sp->rules, strlen(sp->rules), "bench", NULL,
                                 clock_of(sp), NULL)) != RLS_OK) {
        snprintf(err, errsize, "rules: %s: %s", rls_strerror(rc), rls_errmsg(db));
        goto out;
    }
    double p0 = now_us();
    if (sp->prepare != PREP_NONE && prepare(db, sp, err, errsize) != 0)
        goto out;
    if (prep_secs)
        *prep_secs = (now_us() - p0) / 1e6;
    if (lat_init(&lat, ops) != 0) {
        snprintf(err, errsize, "out of memory");
        goto out;
    }
    have_srv = server_cpu && server_cpu(&srv0) == 0;
    double c0 = cpu_self_us();
    double t0 = now_us();
    for (long i = 0; i < ops; i++) {
        key_of(key, sizeof key, i, sp->keys);
        double a = now_us();
        rc = sp->vclock ? rls_check_at(db, "signup", key, 1, noon_clock_ms(), &res)
                        : rls_check(db, "signup", key, 1, &res);
        lat.v[lat.n++] = now_us() - a;
        if (rc != RLS_OK || res.allowed != sp->expect_allowed || res.reason != want_reason) {
            snprintf(err, errsize, "check %ld of key %s: %s (%s), allowed %d, reason %s", i,
                     key, rls_strerror(rc), rls_errmsg(db), res.allowed,
                     rls_reason_name(res.reason));
            goto out;
        }
    }
    double t1 = now_us();
    if (cpu) {
        cpu->client_us = cpu_self_us() - c0;
        have_srv = have_srv && server_cpu(&srv1) == 0;  /* the connection still open */
        cpu->server_us = have_srv ? srv1 - srv0 : -1;
    }
    lat_summary(&lat, (t1 - t0) / 1e6, out);
    ret = 0;
out:
    lat_free(&lat);
    rls_close(db);
    if (!sp->target)
        remove_db(path);
    return ret;
}
