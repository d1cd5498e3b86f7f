/*
 * statecache.h - the states a PostgreSQL handle last wrote or read, per
 * (limit, key): what the one-round-trip check (pg_fast.c) decides from.
 */
#ifndef RLS_STATECACHE_H
#define RLS_STATECACHE_H

#include "db.h"

/* 1 and *st filled (a sliding log in a new buffer with room for one more
 * entry) when (lid, key) is known under algorithm alg; 2 when the key is
 * marked as having policy rows; 0 if neither; -1 out of memory. */
int rls__sc_get(rls_db *db, int64_t lid, const char *key, size_t klen, int alg,
                algo_state *st);
void rls__sc_put(rls_db *db, int64_t lid, const char *key, size_t klen, int alg,
                 const algo_state *st);
void rls__sc_mark_policy(rls_db *db, int64_t lid, const char *key, size_t klen);
/* The policy generation at which (lid, key)'s key was seen without policy
 * rows, or -1 (not known, or not kept); setting it needs a kept state. */
int64_t rls__sc_clean_gen(rls_db *db, int64_t lid, const char *key, size_t klen);
void rls__sc_set_clean_gen(rls_db *db, int64_t lid, const char *key, size_t klen, int64_t gen);
void rls__sc_drop(rls_db *db, int64_t lid, const char *key, size_t klen);
void rls__sc_free(rls_db *db);

#endif
