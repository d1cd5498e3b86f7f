/*
 * rlstore_admin.h - the administration API of librlstore: rule sets and
 * their versions, per-key policy (blocks, tiers, overrides), result sets
 * (rls_rows), usage, explain, audit and stats, copies between databases,
 * one limit edited in place, events, metrics and migrations.
 *
 * Included by rlstore.h, which a program includes (this file names its
 * types and conventions: see there); installed beside it.
 */
#ifndef RLSTORE_ADMIN_H
#define RLSTORE_ADMIN_H

#include "rlstore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- rules (minimal admin surface) -----------------------------------
 * Applies a YAML rule set (see rlstore.yaml(5)) atomically as a new
 * version, which becomes active for every process within one second.
 * yaml need not be NUL-terminated.  name is used in error messages (may be
 * NULL).  comment may be NULL.  On success *version (may be NULL) gets the
 * new version number.  On ECONFIG, rls_errmsg() names line and column of
 * the first error; nothing is stored (rls_rules_validate lists them all).
 * Rules that are the same as the active ones once parsed (a comment, key
 * order, quoting or spacing changed, nothing else) store nothing and write
 * no audit row: *version gets the active version, so an application may
 * apply its rules at every start (rls_rules_apply_v2 says which happened).
 */
RLS_EXTERN int rls_rules_apply(rls_db *db, const char *yaml, size_t len,
                               const char *name, const char *comment,
                               int64_t *version);
RLS_EXTERN int rls_rules_apply_at(rls_db *db, const char *yaml, size_t len,
                                  const char *name, const char *comment,
                                  int64_t now_ms, int64_t *version);
/* As rls_rules_apply_at, but only if version `expect` (0 = none yet) is
 * still the active one; otherwise RLS_ECONFLICT and nothing is stored.
 * For editors that read the rules, change them and write them back. */
RLS_EXTERN int rls_rules_apply_if_at(rls_db *db, const char *yaml, size_t len,
                                     const char *name, const char *comment,
                                     int64_t expect, int64_t now_ms, int64_t *version);

/* ---- applying rules, telling what happened (RLSTORE_0.8) --------------
 * As rls_rules_apply_at, and *changed (may be NULL; 0 on any error) says
 * what happened: 1 a new version was stored (*version), 0 the rules are
 * the same as the active ones once parsed: nothing stored or audited,
 * *version the active one.  Same means every value a check acts on is
 * equal: a comment, key order, quoting or spacing is no change; a limit,
 * window, time zone or the order of a list of limits is.  Flags:
 * RLS_APPLY_FORCE stores a version anyway; RLS_APPLY_DRY_RUN stores and
 * writes nothing (a read-only handle may ask): *changed then says whether
 * the call without it would store, *version is the active one (0: none).
 * Another flag is EINVAL.  rls_rules_apply(3).
 */
#define RLS_APPLY_FORCE 1u
#define RLS_APPLY_DRY_RUN 2u
RLS_EXTERN int rls_rules_apply_v2(rls_db *db, const char *yaml, size_t len, const char *name,
                                  const char *comment, unsigned int flags, int64_t *version,
                                  int *changed);
RLS_EXTERN int rls_rules_apply_v2_at(rls_db *db, const char *yaml, size_t len,
                                     const char *name, const char *comment, unsigned int flags,
                                     int64_t now_ms, int64_t *version, int *changed);

/* ---- per-key policy ---------------------------------------------------
 * Minimal setters used by tools and tests; each is audited.
 * until_ms 0 means forever (a negative value is ETIME).  action NULL or ""
 * means every action: such rows match the key as written and as each
 * action normalises it.  With an action, the key is normalised for it. */
RLS_EXTERN int rls_block_set_at(rls_db *db, const char *action,
                                const char *key, int64_t until_ms,
                                const char *reason, int64_t now_ms);
RLS_EXTERN int rls_block_unset_at(rls_db *db, const char *action,
                                  const char *key, int64_t now_ms);
/* Assigns key (exact, CIDR like "10.0.0.0/8" or prefix glob like "user:*")
 * to a tier, optionally until until_ms. */
RLS_EXTERN int rls_tier_set_at(rls_db *db, const char *key, const char *tier,
                               int64_t until_ms, int64_t now_ms);
RLS_EXTERN int rls_tier_unset_at(rls_db *db, const char *key, int64_t now_ms);
/* The same for one action (NULL or "" = every action, as above); an exact
 * key for one action is normalised for it. */
RLS_EXTERN int rls_tier_assign_at(rls_db *db, const char *action, const char *key,
                                  const char *tier, int64_t until_ms, int64_t now_ms);
RLS_EXTERN int rls_tier_unassign_at(rls_db *db, const char *action, const char *key,
                                    int64_t now_ms);
/* Replaces the capacity of one limit of an action for one key.  ENOTFOUND
 * if the action has no limit of that name (in any tier). */
RLS_EXTERN int rls_override_set_at(rls_db *db, const char *action,
                                   const char *key, const char *limit_name,
                                   int64_t limit, int64_t until_ms,
                                   int64_t now_ms);
RLS_EXTERN int rls_override_unset_at(rls_db *db, const char *action,
                                     const char *key, const char *limit_name,
                                     int64_t now_ms);

/* Runs one bounded step of garbage collection: deletes up to max_rows
 * expired state rows and refunds expired reservations.  The library also
 * does this by itself during checks; this is for tools.  *deleted (may be
 * NULL) receives the number of rows removed. */
RLS_EXTERN int rls_gc_at(rls_db *db, int max_rows, int64_t now_ms,
                         int64_t *deleted);

/* ---- result sets of the admin API ------------------------------------
 * Listings return an rls_rows: a small table of named columns, each
 * integer or text (NULL allowed), owned by the caller and freed with
 * rls_rows_free().  Columns are looked up by name, so a newer library may
 * add columns without breaking older programs.  Text stays valid until the
 * rows are freed.  Keys are returned as stored (normalised, raw bytes):
 * escape them before display.
 */
typedef struct rls_rows rls_rows;

enum rls_col_type { RLS_COL_INT = 1, RLS_COL_TEXT = 2 };

RLS_EXTERN int rls_rows_count(const rls_rows *rows);       /* 0 for NULL */
RLS_EXTERN int rls_rows_columns(const rls_rows *rows);     /* 0 for NULL */
RLS_EXTERN const char *rls_rows_name(const rls_rows *rows, int col);
RLS_EXTERN int rls_rows_type(const rls_rows *rows, int col);
/* Index of the column called name, or -1. */
RLS_EXTERN int rls_rows_find(const rls_rows *rows, const char *name);
RLS_EXTERN int rls_rows_is_null(const rls_rows *rows, int row, int col);
/* 0 for NULL, out-of-range or text cells. */
RLS_EXTERN int64_t rls_rows_int(const rls_rows *rows, int row, int col);
/* NULL for NULL, out-of-range or integer cells. */
RLS_EXTERN const char *rls_rows_text(const rls_rows *rows, int row, int col);
RLS_EXTERN void rls_rows_free(rls_rows *rows);             /* NULL is a no-op */

/* Frees memory the library returned (rls_rules_get).  NULL is a no-op. */
RLS_EXTERN void rls_free(void *p);

/* ---- rule sets ------------------------------------------------------- */
/* Every stored version: version, created_ms, os_user, tool, source,
 * comment, bytes, active (1 for the one in force), newest first. */
RLS_EXTERN int rls_rules_versions(rls_db *db, rls_rows **out);
/* The YAML of a version (0 = the active one), NUL-terminated, verbatim as
 * applied; free with rls_free().  ENOTFOUND / ENORULES. */
RLS_EXTERN int rls_rules_get(rls_db *db, int64_t version, char **yaml, size_t *len);
/* Makes an older version active again by applying its YAML as a new
 * version (audited, so history only grows).  *new_version may be NULL. */
RLS_EXTERN int rls_rules_rollback_at(rls_db *db, int64_t version, const char *comment,
                                     int64_t now_ms, int64_t *new_version);
/*
 * The rules of a version (0 = the active one), as the library understood
 * them.  *tiers: name, unlimited, blocked, is_default (1 for the default
 * tier).  *limits: one row per limit and tier that defines it: action,
 * key_kind, tier ("" = the action's default limits), name, algorithm,
 * limit, burst (as used: the limit when not given), window (as written,
 * e.g. "1d"), window_ms, timezone, anchor ("aligned", "first_hit"), mode
 * ("enforce", "shadow"), block_for (e.g. "1m,10m,1h"; "" none), overage,
 * count_denied, durability ("normal", "full", "memory"), calendar (1: the
 * window follows its zone's calendar: 1d, 1w, 1mo).  Either pointer may be
 * NULL.
 */
RLS_EXTERN int rls_rules_describe(rls_db *db, int64_t version, rls_rows **tiers,
                                  rls_rows **limits);

/*
 * What applying yaml would do, without storing anything: validates it
 * (ECONFIG with the same message as rls_rules_apply) and lists the keys that
 * would be over a new or changed limit right now: action, tier ("" = the
 * action's default limits), key, limit (the limit's name), used (units in
 * use now), old_limit (capacity before; 0 if the limit is new), new_limit.
 */
RLS_EXTERN int rls_rules_dry_run_at(rls_db *db, const char *yaml, size_t len,
                                    const char *name, int64_t now_ms, rls_rows **over);

/*
 * (RLSTORE_0.8) Validates a rule file as rls_rules_apply would, without a
 * database (`rlctl lint`, a deploy script's check): RLS_OK if valid,
 * RLS_ECONFIG if not, RLS_ENOMEM, or RLS_EINVAL (yaml NULL with len > 0).
 * *errors (may be NULL) gets one row per error, in file order: line and
 * column (1-based; 0 when the error has no place, e.g. an empty file),
 * path (e.g. "actions.signup.limits[0]"; NULL when none), message (e.g.
 * "unknown field 'limt' (did you mean 'limit'?)") and text, the error as
 * tools print it: "NAME:LINE:COL: PATH: MESSAGE" (name NULL or "":
 * "rules").  At most 64 errors, then a row "N more errors not listed".
 * No rows when valid; NULL on ENOMEM and EINVAL.  Thread-safe.
 */
RLS_EXTERN int rls_rules_validate(const char *yaml, size_t len, const char *name,
                                  rls_rows **errors);

/* ---- listings of per-key policy ---------------------------------------
 * Unexpired rows only, ordered by key. */
/* pattern, kind ("exact", "cidr", "prefix"), action ("" = all), tier,
 * expires_ms (0 = never), created_ms, source ("operator" or "file"). */
RLS_EXTERN int rls_tier_list_at(rls_db *db, int64_t now_ms, rls_rows **out);
/* key, action, limit_name, limit, expires_ms, created_ms; filters may be
 * NULL.  The key filter matches a row's key as written or as the row's
 * action normalises it (any spelling of the key). */
RLS_EXTERN int rls_override_list_at(rls_db *db, const char *action, const char *key,
                                    int64_t now_ms, rls_rows **out);
/* Active blocks: key, action ("" = all), until_ms (0 = forever), kind
 * ("manual" or "penalty"), level, rule, reason, os_user, created_ms. */
RLS_EXTERN int rls_block_list_at(rls_db *db, int64_t now_ms, rls_rows **out);

/* Forgets the counters of every limit of action for key (normalised for
 * the action): the key starts fresh.  Audited.  ENOTFOUND if it had none. */
RLS_EXTERN int rls_reset_at(rls_db *db, const char *action, const char *key,
                            int64_t now_ms);

/* ---- usage, explain, audit, stats ------------------------------------ */
enum rls_usage_sort {
    RLS_SORT_USED = 0, RLS_SORT_KEY = 1, RLS_SORT_RESET = 2, RLS_SORT_DENIED = 3
};

typedef struct rls_usage_query {
    size_t size;             /* sizeof(rls_usage_query); set by the caller */
    const char *action;      /* NULL = every action */
    const char *key_substr;  /* NULL = every key */
    int sort;                /* enum rls_usage_sort */
    int offset;              /* rows to skip (paging) */
    int limit;               /* rows to return, 1..100000 */
} rls_usage_query;

/*
 * One row per (action, key) with its most pressing limit, as a check would
 * see it at now_ms (nothing is charged): action, key, tier, rule, used,
 * limit, remaining, fraction_ppm (used / limit in millionths; a key of an
 * unlimited tier sorts with the idle ones whatever its fraction), reset_ms,
 * blocked (1/0), block_until_ms, state ("ok", "near" (>= 80 %), "limited",
 * "blocked", "shadow"), denied (denials counted for the key; written at
 * most once a second per process).
 *
 * The list has two parts.  First the keys under pressure, in the order
 * asked for: RLS_SORT_USED blocked keys (by key), then keys at 50 % or more
 * by fraction used; RLS_SORT_RESET those same keys by soonest reset;
 * RLS_SORT_DENIED keys with denials, most first.  Then every other key in
 * key order (then action); RLS_SORT_KEY has only this part.  The keys
 * under pressure are found from the rls_key_stats notes (denied, or at
 * least half used when last seen; written at most once a second per
 * process) and the blocks, so the work does not grow with the number of
 * keys.  A database of at most a few hundred keys, or a key filter that
 * at most a few hundred keys contain, is examined whole; otherwise a key
 * that reached 50 % in the last second may still show in key order.
 * offset <= 1000000000.
 *
 * Pages in the key-ordered part cost a step per row skipped from the
 * start: rls_usage_near_at() pages a long list from a known row instead.
 */
RLS_EXTERN int rls_usage_at(rls_db *db, const rls_usage_query *q, int64_t now_ms,
                            rls_rows **out);

/*
 * A position in a usage list, for rls_usage_near_at(): a row of an earlier
 * page (its key and action) and its offset, or with key NULL the end of a
 * list of `offset` rows (its length, from rls_usage_count_at()).
 */
typedef struct rls_usage_anchor {
    size_t size;             /* sizeof(rls_usage_anchor); set by the caller */
    const char *key;         /* NULL: the end of the list */
    const char *action;      /* the row's action */
    int offset;              /* the row's offset, or the list's length */
} rls_usage_anchor;

/*
 * rls_usage_at() for a page near a known position: the rows are counted
 * from the anchor in key order, forward or back, so a page costs its
 * distance from the anchor, not its offset, and a page at the end of a
 * list of a million keys (anchored at its length) costs what the first
 * one does.  The result is the page as seen from the anchor: rows added or
 * removed before it since it was read do not move it.  The anchor is not
 * used (the page is rls_usage_at()'s) when it is NULL, when the start is
 * closer, when its row is one of the keys under pressure, or when the
 * walk from it reaches them before q->offset.
 */
RLS_EXTERN int rls_usage_near_at(rls_db *db, const rls_usage_query *q,
                                 const rls_usage_anchor *anchor, int64_t now_ms,
                                 rls_rows **out);

/*
 * The length of the list rls_usage_at() would give for q's action and
 * key_substr (sort, offset, limit and anchor are ignored): the keys with
 * counters of each action plus the blocked keys without.  Without
 * key_substr it is read from counts kept exact by every write, whatever
 * the number of keys; with it every key is examined (about 0.1 s of CPU
 * per million keys).  Keys without counters that are under pressure (a
 * blocked tier's keys) are listed but not counted.
 */
RLS_EXTERN int rls_usage_count_at(rls_db *db, const rls_usage_query *q, int64_t now_ms,
                                  int64_t *count);

/*
 * Everything that decides checks of (action, key) at now_ms, charging
 * nothing.  *info has one row: action, key (normalised), key_kind, tier,
 * tier_source ("default", "pattern", "exact"), tier_pattern, behaviour
 * ("normal", "unlimited", "blocked"), blocked, block_until_ms, block_reason,
 * block_rule, allowed, reason, retry_after_ms.  *limits has one row per
 * limit: name, algorithm, limit, burst, window_ms, overridden, mode,
 * used, remaining, reset_ms, retry_after_ms, allowed, last_ms, window (as
 * written), calendar, timezone, window_now_ms (the length of the window
 * holding now_ms: a calendar day's 23 or 25 hours when the clocks change).
 * Either pointer may be NULL if not wanted.
 */
RLS_EXTERN int rls_explain_at(rls_db *db, const char *action, const char *key,
                              int64_t now_ms, rls_rows **info, rls_rows **limits);

/* Newest first, at most limit rows (1..100000); key NULL = all keys, else
 * the rows of key in any spelling (as written, canonical, or as the row's
 * action normalises it, rls_policy(3)):
 * id, ts_ms, os_user, tool, op, action, key, before, after, reason. */
RLS_EXTERN int rls_audit_list(rls_db *db, const char *key, int limit, rls_rows **out);

/*
 * Admitted and denied checks: *recent has action, sec, allowed, denied for
 * the last `seconds` seconds before now_ms (1..3600); *totals has action,
 * allowed, denied since the database was created.  Stats are written at
 * most once a second per process, so the last second may be incomplete.
 */
RLS_EXTERN int rls_stats_at(rls_db *db, int seconds, int64_t now_ms, rls_rows **recent,
                            rls_rows **totals);

/*
 * Health report of the database: one row per check with columns check,
 * status ("ok", "warn", "fail") and detail: sqlite_version (warns below
 * 3.51.3, the WAL-reset race), journal_mode, schema_version, files (the
 * database file and its -wal are the ones at their paths), quick_check,
 * integrity_check (with full != 0 always, otherwise on files up to
 * 64 MiB), file_mode, dir_mode, wal_size, rules, memory_table,
 * memory_stale.  rls_admin(3) has the whole list.
 */
RLS_EXTERN int rls_doctor(rls_db *db, int full, rls_rows **out);

/*
 * rls_doctor with flags (appended in RLSTORE_0.10): RLS_DOCTOR_FULL as
 * full != 0 above; RLS_DOCTOR_FIX also removes the shared-memory tables of
 * this database left by an earlier boot of the host (rows memory_stale),
 * never the table in use nor another database's.  Both report the
 * memory-class table (row memory_table: path, size, geometry, live
 * entries, locks taken over from killed processes) in the handle's
 * shm_dir.  Unknown flags: EINVAL.
 */
#define RLS_DOCTOR_FULL 1u
#define RLS_DOCTOR_FIX 2u
RLS_EXTERN int rls_doctor_v2(rls_db *db, unsigned int flags, rls_rows **out);

/* ---- copying between databases ----------------------------------------
 * What rls_copy_at() copies: an OR of the kinds, optionally with DRY_RUN. */
enum rls_copy_what {
    RLS_COPY_RULES = 1,       /* the active rule set                        */
    RLS_COPY_POLICY = 2,      /* operator tier assignments, overrides, manual
                                 and penalty blocks                         */
    RLS_COPY_COUNTERS = 4,    /* counter states, open reservations          */
    RLS_COPY_ALL = 7,
    RLS_COPY_DRY_RUN = 0x100  /* do and report everything, then roll back   */
};

/*
 * Copies what decides checks from the database of src to the one of dst,
 * from any backend to any backend (SQLite file or PostgreSQL): to move a
 * deployment, e.g. from SQLite to PostgreSQL (docs/SCALING.md).
 *
 *   RLS_COPY_RULES     src's active rule set becomes dst's active one, as
 *                      a new version audited as "rules.copy", unless dst's
 *                      active YAML is already byte for byte the same.  The
 *                      history of versions stays in src.
 *   RLS_COPY_POLICY    tier assignments made by operators (exact keys and
 *                      patterns), overrides, manual blocks with their
 *                      reason, penalty blocks with their escalation level
 *                      and the time it is forgotten.  The assignments of
 *                      the rule file come with the rules.
 *   RLS_COPY_COUNTERS  the counter state of every (limit, key), verbatim;
 *                      open reservations under the same ids, so that an
 *                      application commits or cancels them on dst by the
 *                      ids src gave (dst hands out only larger ids
 *                      afterwards); the keys' counts (rls_usage_count_at)
 *                      kept exact; GC's time horizon.
 *
 * Limits are matched by action and limit name: their ids differ between
 * databases.  A row is copied only where it has a place in dst's active
 * rules (after the rules step, src's); otherwise it is dropped: a state of
 * a limit those rules do not define or define with another algorithm; an
 * override of an action or limit they lack; an assignment to an action or
 * tier they lack; a block or a reservation of an action they lack.  A
 * reservation keeps the limits dst has.  A split source may hold a manual
 * block and a penalty of the same key and action: the manual block is
 * copied, the penalty dropped (one database holds one block per key and
 * action).  Where dst already has a row of the same identity (the state
 * of a limit and key; the block of a key and action; the assignment of a
 * pattern and action; the override of a key, action and limit; a
 * reservation id), dst's row is kept and src's is not copied: resolve
 * reservations before copying into a database that has some.  Rows
 * expired at now_ms are not copied: states whose expiry (the time they
 * equal a fresh state) has passed, blocks past their end and their
 * escalation memory, assignments and overrides past their expiry.
 * Reservations past their TTL are copied: they still owe their refund,
 * which dst gives at the key's next check or a GC step, as src would have.
 * Statistics, the keys' statistics, the audit log and the rule-set history
 * are not copied.
 *
 * src is read in one snapshot (a read transaction; on PostgreSQL
 * REPEATABLE READ, READ ONLY) and may be a read-only handle or a split
 * deployment.  dst is written in one write transaction, rules included,
 * committed durably (SQLite synchronous=FULL, PostgreSQL
 * synchronous_commit on) with one audit row "copy" naming src and the
 * counts: all or nothing.  Rows are read and written in pages, so memory
 * does not grow with the database.  Until it commits, dst's writers wait
 * (SQLite's write lock; on PostgreSQL the tables it copies into are locked
 * against writes, reads go on) and may time out (EBUSY, answered by their
 * failure policy): stop them for the time of the copy.
 *
 * *report (may be NULL) receives one row per kind asked for, in this
 * order: what ("rules", "assignments", "overrides", "blocks", "states",
 * "reservations"), copied (rows written to dst; for rules 1 when a new
 * version was stored), kept (rows of src not copied because dst had a row
 * of the same identity; for rules 1 when the YAML was the same), dropped
 * (rows without a place in dst's rules), expired (rows of src expired at
 * now_ms, not copied) and detail (text: the rule-set version stored or
 * kept, why rows were dropped; "" if nothing to say).  Free it with
 * rls_rows_free().  With RLS_COPY_DRY_RUN everything is done and reported,
 * then rolled back: dst is unchanged.
 *
 * Errors: EINVAL (dst or src NULL, `what` without a kind or with an
 * unknown bit, src and dst the same database, dst a split deployment),
 * ETIME, EREADONLY (dst is read-only), ENORULES (RLS_COPY_RULES and src
 * has no rules; without it, dst has none), ECONFIG (src's rules do not
 * load here), EBUSY, EIO, EFULL, ECORRUPT, ESTORAGE, ENOMEM.
 * rls_errmsg(dst) says what failed, also when reading src failed.  On any
 * error dst is unchanged and *report is NULL.
 */
RLS_EXTERN int rls_copy_at(rls_db *dst, rls_db *src, unsigned int what, int64_t now_ms,
                           rls_rows **report);

/* ---- editing one limit of the rules (RLSTORE_0.5) ----------------------
 * Changes one number of the rules without rewriting the file: only the
 * bytes of that value change, so comments, order, quoting, a UTF-8 byte
 * order mark and CRLF line ends stay as they were.  The value must be
 * written in the file as a plain decimal integer: the `limit:` (field
 * "limit", or NULL) or `burst:` (field "burst") of a default limit of an
 * action (tier NULL or "") or of a tier's replacement of it (tier named).
 * A tier that does not replace the limit, or replaces it without giving
 * that field, inherits the default's value: such a value is not written
 * for the tier and is refused with ENOTFOUND (rls_errmsg says "uses the
 * default limit" or "has no 'limit:' of its own"); change the default, or
 * write the tier's replacement with rls_rules_apply_if_at.  value is from
 * 1 to RLS_LIMIT_MAX (else EINVAL).  The edited text must then load like
 * any rule file (ECONFIG otherwise, nothing changed).
 */
/* The values a version (0 = the active one) writes for its limits, in file
 * order: action, tier ("" = the default limits), name (the limit's),
 * field ("limit" or "burst"), value, line (1-based, of the value).  These
 * are what rls_rules_set_limit_at can change; inherited values are not
 * listed (rls_rules_describe lists every limit as used). */
RLS_EXTERN int rls_rules_limit_list(rls_db *db, int64_t version, rls_rows **out);
/* The YAML of version (0 = the active one) with one value changed, as
 * rls_rules_set_limit_at would store it, validated but not stored (for a
 * preview or rls_rules_dry_run_at).  *yaml is NUL-terminated, free it with
 * rls_free(); *len and *line (the 1-based line changed) may be NULL. */
RLS_EXTERN int rls_rules_limit_edit(rls_db *db, int64_t version, const char *action,
                                    const char *tier, const char *limit_name,
                                    const char *field, int64_t value, char **yaml,
                                    size_t *len, int *line);
/* Applies the active rules with one value changed as a new version (as
 * rls_rules_apply_if_at: one transaction, active for every process within
 * a second, audited as "rules.set_limit").  if_version > 0: only if that
 * version is still the active one, else ECONFLICT and nothing is stored
 * (for an operator who looked at that version); 0: whatever version is
 * active (a version applied between the read and the write is never
 * overwritten: ECONFLICT then too).  name is stored as the version's
 * source (NULL: "set-limit"); comment may be NULL (one is made up naming
 * the change).  *new_version may be NULL.  ENORULES when none is active. */
RLS_EXTERN int rls_rules_set_limit_at(rls_db *db, const char *action, const char *tier,
                                      const char *limit_name, const char *field,
                                      int64_t value, const char *name, const char *comment,
                                      int64_t if_version, int64_t now_ms,
                                      int64_t *new_version);

/* ---- RLSTORE_0.9: rls_events(3), rls_metrics(3), rls_migrate(3) ------
 * Penalty events newest first, filtered (NULL: any); limit 1..100000. */
RLS_EXTERN int rls_events_list_at(rls_db *db, const char *action, const char *key,
                                  const char *event, int64_t since_ms, int limit,
                                  rls_rows **out);
/* Delete events / audit rows older than before_ms (the latter audited). */
RLS_EXTERN int rls_events_prune_at(rls_db *db, int64_t before_ms, int64_t now_ms,
                                   int64_t *deleted);
RLS_EXTERN int rls_audit_prune_at(rls_db *db, int64_t before_ms, int64_t now_ms,
                                  int64_t *deleted);
/* Reason audited with db's later changes that have none (NULL clears). */
RLS_EXTERN int rls_admin_reason(rls_db *db, const char *reason);
RLS_EXTERN int rls_block_unset_all_at(rls_db *db, const char *action, int64_t now_ms,
                                      int64_t *count);
RLS_EXTERN int rls_reset_action_at(rls_db *db, const char *action, int64_t now_ms,
                                   int64_t *count);
RLS_EXTERN int rls_metrics_at(rls_db *db, int64_t now_ms, rls_rows **out);
RLS_EXTERN int rls_migrate(const char *path, const rls_options *opt, int dry_run,
                           int64_t *from, int64_t *to);
/* fn(ctx, rows) after each page of rows a long call (rls_copy_at) reads. */
RLS_EXTERN int rls_set_progress(rls_db *db, void (*fn)(void *ctx, int64_t rows), void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* RLSTORE_ADMIN_H */
