/*
 * keystats.c - keys under pressure, counted in process.
 *
 * Every check that is denied, or whose deciding limit is at least half used,
 * is noted in a small open-addressing table (action, key) -> (denials,
 * last denial, fraction used, last seen).  The table is written to
 * rls_key_stats together with the stats, at most once a second, inside a
 * check's own transaction; it is bounded (KACC_SLOTS), and a key that finds
 * it full is not noted until the next flush: like the stats, these figures
 * may lose a little, counters never.  Usage listings and rltop start from
 * these keys instead of peeking at every key in the database.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "db.h"
#include "pressure.h"

#define KACC_SLOTS 4096            /* power of two */
#define KACC_MAX (KACC_SLOTS / 4 * 3)

struct key_acc {
    char action[RLS_NAME_MAX + 1];
    char *key;                     /* NULL = free slot */
    size_t keylen;
    int64_t denied, last_denied, ppm, seen;
};

static uint32_t hash(const char *action, const char *key, size_t keylen)
{
    uint32_t h = 2166136261u;      /* FNV-1a */
    for (const char *p = action; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ 0xff) * 16777619u;
    for (size_t i = 0; i < keylen; i++)
        h = (h ^ (unsigned char)key[i]) * 16777619u;
    return h;
}

/* The slot of (action, key): its entry, or the free slot it would take. */
static struct key_acc *slot_of(rls_db *db, const char *action, const char *key, size_t keylen)
{
    uint32_t i = hash(action, key, keylen) & (KACC_SLOTS - 1);
    for (;;) {
        struct key_acc *e = &db->stats.kacc[i];
        if (!e->key || (e->keylen == keylen && memcmp(e->key, key, keylen) == 0 &&
                        strcmp(e->action, action) == 0))
            return e;
        i = (i + 1) & (KACC_SLOTS - 1);
    }
}

int rls__keystat_note(rls_db *db, const char *action, const char *key, size_t keylen,
                      const rls_result *res, int64_t now)
{
    int64_t ppm;
    if (!rls__pressure_of_check(res, &ppm))
        return 0;   /* admitted, not under pressure (core/pressure.c) */
    if (!db->stats.kacc && !(db->stats.kacc = calloc(KACC_SLOTS, sizeof *db->stats.kacc)))
        return 0;
    struct key_acc *e = slot_of(db, action, key, keylen);
    if (e->key)
        goto found;
    if (db->stats.nkacc >= KACC_MAX || !(e->key = malloc(keylen ? keylen : 1)))
        return 0;  /* full until the next flush: these figures may lose a little */
    memcpy(e->key, key, keylen);
    e->keylen = keylen;
    snprintf(e->action, sizeof e->action, "%s", action);
    e->denied = e->last_denied = 0;
    db->stats.nkacc++;
found:
    if (!res->allowed) {
        e->denied++;
        e->last_denied = now;
    }
    e->ppm = ppm;
    e->seen = now;
    return 1;
}

void rls__keystat_unnote(rls_db *db, const char *action, const char *key, size_t keylen,
                         const rls_result *res)
{
    struct key_acc *e = db->stats.kacc ? slot_of(db, action, key, keylen) : NULL;
    if (e && e->key && !res->allowed && e->denied > 0)
        e->denied--;   /* the rest are last values: the next note sets them */
}

int rls__keystat_pending(const rls_db *db)
{
    return db->stats.nkacc;
}

static void clear(rls_db *db)
{
    for (int i = 0; db->stats.kacc && i < KACC_SLOTS; i++) {
        free(db->stats.kacc[i].key);
        db->stats.kacc[i].key = NULL;
    }
    db->stats.nkacc = 0;
}

int rls__keystat_flush(rls_db *db)
{
    if (db->stats.nkacc == 0)
        return RLS_OK;
    rls_stmt *st = rls__stmt(db, STMT_KEY_STATS_ADD);
    if (!st)
        return rls__stmt_failed(db);
    for (int i = 0; i < KACC_SLOTS; i++) {
        const struct key_acc *e = &db->stats.kacc[i];
        if (!e->key)
            continue;
        sql_bind_text(st, 1, e->action, -1, SQL_STATIC);
        sql_bind_blob(st, 2, e->key, (int)e->keylen, SQL_STATIC);
        sql_bind_int64(st, 3, e->denied);
        sql_bind_int64(st, 4, e->last_denied);
        sql_bind_int64(st, 5, e->ppm);
        sql_bind_int64(st, 6, e->seen);
        int rc = sql_step(st);
        sql_reset(st);
        if (rc != SQL_DONE)
            return rls__sql_error(db, rc, "cannot write key stats");
    }
    /* Cleared once written: a rolled-back transaction loses them, which the
     * contract allows (they are statistics). */
    clear(db);
    return RLS_OK;
}

void rls__keystat_free(rls_db *db)
{
    clear(db);
    free(db->stats.kacc);
    db->stats.kacc = NULL;
}
