/*
 * floor.c - the raw SQLite floors: one prepared
 * "INSERT ... ON CONFLICT DO UPDATE ... RETURNING" per transaction
 * (autocommit), WAL, on the key distribution of the rlstore scenarios: what
 * one durable counter update costs.
 *
 *   floor        synchronous=NORMAL (the default durability of rlstore)
 *   floor_fsync  synchronous=FULL: an fsync of the WAL per commit, the floor
 *                of durability FULL
 *
 * Note: SQLite runs its auto-checkpoint only when sqlite3_step() returns
 * SQLITE_DONE, and this loop resets after the RETURNING row, so the floor
 * never checkpoints and its WAL grows by about one page per commit for the
 * whole run; rlstore keeps its WAL bounded and pays for its checkpoints.
 * Kept that way so the figures compare with earlier runs.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include "bench.h"

int bench_floor(const bench_cfg *cfg, int full_sync, long ops, bench_lat *out,
                char *err, size_t errsize)
{
    char path[4096], key[64];
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    lat_rec lat = {0};
    int rc = -1;
    snprintf(path, sizeof path, "%s/%s", cfg->dir, full_sync ? "floor-fsync.db" : "floor.db");
    remove_db(path);
    if (sqlite3_open(path, &db) != SQLITE_OK)
        goto out;
    if (sqlite3_exec(db, full_sync ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                                   : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "CREATE TABLE c(key BLOB PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(db, "INSERT INTO c(key, n) VALUES (?1, 1) ON CONFLICT(key) "
                               "DO UPDATE SET n = n + 1 RETURNING n",
                           -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
        goto out;
    if (lat_init(&lat, ops) != 0)
        goto out;
    double t0 = now_us();
    for (long i = 0; i < ops; i++) {
        key_of(key, sizeof key, i, cfg->keys);
        double a = now_us();
        sqlite3_bind_blob(st, 1, key, (int)strlen(key), SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW)
            goto out;
        sqlite3_reset(st);
        lat.v[lat.n++] = now_us() - a;
    }
    lat_summary(&lat, (now_us() - t0) / 1e6, out);
    rc = 0;
out:
    if (rc != 0)
        snprintf(err, errsize, "sqlite: %s", db ? sqlite3_errmsg(db) : "cannot open");
    lat_free(&lat);
    sqlite3_finalize(st);
    sqlite3_close(db);
    remove_db(path);
    return rc;
}
