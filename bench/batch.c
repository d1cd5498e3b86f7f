/*
 * batch.c - the batch_2 scenario (issue #19, item 3): rls_check_many of
 * two items, one fixed_window limit each on two actions, the same key walk
 * as fixed_window_10k, every batch admitted.  Its throughput (batches per
 * second) is reported beside one single-item check's (target >= 0.9x).
 */
#include <stdio.h>
#include <string.h>
#include <rlstore.h>
#include "bench.h"

static const char RULES_BATCH[] =
    "version: 1\n"
    "actions:\n"
    "  signup:\n"
    "    key: ip\n"
    "    limits: [ { name: daily, algorithm: fixed_window, limit: 1000000000, window: 1d } ]\n"
    "  login:\n"
    "    limits: [ { name: daily, algorithm: fixed_window, limit: 1000000000, window: 1d } ]\n";

int bench_batch2(const bench_cfg *cfg, long ops, bench_lat *out, char *err, size_t errsize)
{
    char path[4096], key[64];
    rls_db *db = NULL;
    rls_result res[2];
    lat_rec lat = {0};
    int rc, ret = -1;
    snprintf(path, sizeof path, "%s/%s", cfg->dir, "batch.db");
    remove_db(path);
    if ((rc = rls_open(&db, path, NULL)) != RLS_OK) {
        snprintf(err, errsize, "open: %s: %s", rls_strerror(rc), rls_errmsg(NULL));
        goto out;
    }
    if ((rc = rls_rules_apply_at(db, RULES_BATCH, strlen(RULES_BATCH), "bench", NULL,
                                 wall_ms(), NULL)) != RLS_OK) {
        snprintf(err, errsize, "rules: %s: %s", rls_strerror(rc), rls_errmsg(db));
        goto out;
    }
    if (lat_init(&lat, ops) != 0) {
        snprintf(err, errsize, "out of memory");
        goto out;
    }
    double t0 = now_us();
    for (long i = 0; i < ops; i++) {
        key_of(key, sizeof key, i, cfg->keys);
        rls_item items[2] = {{"signup", key, 1}, {"login", key, 1}};
        double a = now_us();
        rc = rls_check_many(db, items, 2, res);
        lat.v[lat.n++] = now_us() - a;
        if (rc != RLS_OK || !res[0].allowed || !res[1].allowed) {
            snprintf(err, errsize, "batch %ld of key %s: %s (%s), allowed %d %d", i, key,
                     rls_strerror(rc), rls_errmsg(db), res[0].allowed, res[1].allowed);
            goto out;
        }
    }
    lat_summary(&lat, (now_us() - t0) / 1e6, out);
    ret = 0;
out:
    lat_free(&lat);
    rls_close(db);
    remove_db(path);
    return ret;
}
