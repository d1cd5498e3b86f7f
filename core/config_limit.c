/*
 * config_limit.c - one limit definition of the YAML file: its fields, their
 * defaults, the checks that involve several fields, and inheritance for the
 * per-tier replacement lists of an action.
 *
 * Fields: name (required), algorithm (default fixed_window), limit and
 * window (required), burst, timezone (default: defaults.timezone, else UTC),
 * anchor, block_for, overage, mode, count_denied, durability.
 *
 * Inheritance: an entry of actions.<a>.tiers.<t> whose name is also one of
 * the action's default limits takes every field it does not give from that
 * default limit; an entry with a new name is a complete definition (limit
 * and window required).  burst and anchor are inherited only while they
 * still apply: a tier entry that switches a gcra limit to fixed_window does
 * not inherit the burst.
 */
#include <stdio.h>
#include <string.h>
#include "algo.h"
#include "config_int.h"

enum limit_field {
    LF_NAME, LF_ALGORITHM, LF_LIMIT, LF_WINDOW, LF_BURST, LF_TIMEZONE,
    LF_ANCHOR, LF_BLOCK_FOR, LF_OVERAGE, LF_MODE, LF_COUNT_DENIED,
    LF_DURABILITY, LF_COUNT
};

static const char *const limit_fields[] = {
    "name", "algorithm", "limit", "window", "burst", "timezone", "anchor",
    "block_for", "overage", "mode", "count_denied", "durability", NULL
};

/* In the order of enum algo_kind (index + 1 = kind). */
static const char *const algo_names[] = {
    "fixed_window", "sliding_window", "sliding_log", "token_bucket", "gcra",
    "leaky_bucket", NULL
};
static const char *const anchor_names[] = { "aligned", "first_hit", NULL };
static const char *const mode_names[] = { "enforce", "shadow", NULL };
static const char *const durability_names[] = { "normal", "full", "memory",
                                                 NULL };

static int is_window_algo(int kind)
{
    return kind == ALGO_FIXED_WINDOW || kind == ALGO_SLIDING_WINDOW;
}

/* block_for: one duration, or a list of up to RULES_BLOCK_STEPS (an empty
 * list means no penalty, which lets a tier entry drop an inherited one). */
static int parse_block_for(cfg *c, int v, const char *path, rule_limit *out)
{
    char ip[CFG_PATH_MAX];
    rls_duration d;
    int bad = 0, i = 0;

    if (c->nodes[v].type == CN_SCALAR && !rls__config_is_null(c, v)) {
        if (rls__config_duration(c, v, path, &d) < 0)
            return -1;
        out->block_for[0] = d.ms;
        out->nblock_for = 1;
        return 0;
    }
    if (rls__config_want(c, v, path, CN_SEQ, "a duration or a list of up to 16 "
                     "durations such as [1m, 10m, 1h]") < 0)
        return -1;
    if (c->nodes[v].n > RULES_BLOCK_STEPS) {
        rls__config_err(c, v, path, "expected at most %d durations; got %d",
                    RULES_BLOCK_STEPS, c->nodes[v].n);
        return -1;
    }
    out->nblock_for = 0;
    for (int e = c->nodes[v].first; e >= 0; e = c->nodes[e].next, i++) {
        rls__config_path_index(ip, sizeof ip, path, i);
        if (rls__config_duration(c, e, ip, &d) < 0)
            bad = 1;
        else
            out->block_for[out->nblock_for++] = d.ms;
    }
    return bad ? -1 : 0;
}

/* Checks of a complete (merged) limit that involve several fields.  Errors
 * point at the field if this entry gave it, else at the limit. */
static int check_combination(cfg *c, int map, const int *at, const char *path,
                             const rule_limit *l)
{
    char fp[CFG_PATH_MAX];
    int64_t cap = l->burst ? l->burst : l->limit;
    int where;

    /* The engine admits limit * (100 + overage) / 100 units. */
    if (l->algorithm == ALGO_SLIDING_LOG &&
        l->limit + l->limit * l->overage_pct / 100 > ALGO_SLIDING_LOG_MAX) {
        where = at[LF_LIMIT] >= 0 ? at[LF_LIMIT] : map;
        rls__config_path_field(fp, sizeof fp, path, "limit");
        rls__config_err(c, where, fp, "sliding_log keeps one entry per unit and "
                    "accepts a limit (with its overage) of at most %d; got %lld "
                    "(use sliding_window for larger limits)", ALGO_SLIDING_LOG_MAX,
                    (long long)(l->limit + l->limit * l->overage_pct / 100));
        return -1;
    }
    /* A memory-class log lives in a fixed-size slot of the shared-memory
     * table (storage/shm): refused here, never truncated there. */
    if (l->algorithm == ALGO_SLIDING_LOG && l->durability == DURA_MEMORY &&
        l->limit + l->limit * l->overage_pct / 100 > RULES_MEMORY_LOG_MAX) {
        where = at[LF_LIMIT] >= 0 ? at[LF_LIMIT] : map;
        rls__config_path_field(fp, sizeof fp, path, "limit");
        rls__config_err(c, where, fp, "a `durability: memory` sliding_log keeps at most %d "
                    "entries in the shared-memory table; got a limit (with its overage) of "
                    "%lld (use sliding_window, or durability: normal)", RULES_MEMORY_LOG_MAX,
                    (long long)(l->limit + l->limit * l->overage_pct / 100));
        return -1;
    }
    where = at[LF_BURST] >= 0 ? at[LF_BURST]
          : at[LF_LIMIT] >= 0 ? at[LF_LIMIT] : map;
    rls__config_path_field(fp, sizeof fp, path, l->burst ? "burst" : "limit");
    if (l->algorithm == ALGO_TOKEN_BUCKET &&
        cap > INT64_MAX / l->window.ms) {
        rls__config_err(c, where, fp, "%lld units per bucket with a window of "
                    "%lld ms is too large for token_bucket", (long long)cap,
                    (long long)l->window.ms);
        return -1;
    }
    if (l->algorithm == ALGO_GCRA || l->algorithm == ALGO_LEAKY_BUCKET) {
        int64_t t_ns = l->window.ms * 1000000 / l->limit;  /* <= 3.2e18 */
        if (t_ns < 1) {
            where = at[LF_LIMIT] >= 0 ? at[LF_LIMIT] : map;
            rls__config_path_field(fp, sizeof fp, path, "limit");
            rls__config_err(c, where, fp, "%lld per %lld ms is faster than one "
                        "unit per nanosecond, which %s cannot represent",
                        (long long)l->limit, (long long)l->window.ms,
                        algo_names[l->algorithm - 1]);
            return -1;
        }
        if (cap > INT64_MAX / t_ns) {
            rls__config_err(c, where, fp, "a burst of %lld at %lld per %lld ms "
                        "is too large for %s", (long long)cap,
                        (long long)l->limit, (long long)l->window.ms,
                        algo_names[l->algorithm - 1]);
            return -1;
        }
    }
    return 0;
}

/* The default limit called name among defs, or NULL. */
static const rule_limit *find_base(const char *name, const rule_limit *defs,
                                   const unsigned char *defs_ok, int ndefs,
                                   int *ok)
{
    for (int i = 0; i < ndefs; i++)
        if (strcmp(defs[i].name, name) == 0) {
            *ok = defs_ok[i];
            return &defs[i];
        }
    return NULL;
}

/* Contract: see config_int.h. */
int rls__config_limit(cfg *c, int map, const char *path, const rule_limit *defs,
                  const unsigned char *defs_ok, int ndefs, rule_limit *out)
{
    int at[LF_COUNT];
    char fp[CFG_PATH_MAX];
    const rule_limit *base = NULL;
    int base_ok = 1, bad = 0, idx, v;
    int64_t n;

    memset(out, 0, sizeof *out);
    out->line = c->nodes[map].line;
    out->column = c->nodes[map].col;
    out->tz = c->rs->default_tz;
    if (rls__config_want(c, map, path, CN_MAP, "a limit: a mapping such as "
                     "{ name: daily, limit: 20, window: 1d }") < 0)
        return -1;
    for (int i = 0; i < LF_COUNT; i++)
        at[i] = -1;
    for (int k = c->nodes[map].first; k >= 0; k = rls__config_next_pair(c, k)) {
        if (c->nodes[k].skip)
            continue;
        idx = rls__config_field(c, k, path, limit_fields);
        if (idx < 0)
            bad = 1;
        else
            at[idx] = c->nodes[k].next;
    }

    /* name first: it selects what a tier entry inherits */
    rls__config_path_field(fp, sizeof fp, path, "name");
    if (at[LF_NAME] < 0) {
        rls__config_missing(c, map, path, "name", NULL);
        bad = 1;
    } else if (rls__config_name(c, at[LF_NAME], fp, "a limit name",
                            out->name) < 0) {
        bad = 1;
        base_ok = 0;  /* unknown base: do not report missing fields */
    }
    if (ndefs >= 0 && out->name[0])
        base = find_base(out->name, defs, defs_ok, ndefs, &base_ok);
    if (base) {
        *out = *base;
        out->line = c->nodes[map].line;
        out->column = c->nodes[map].col;
    }

    out->algorithm = base ? base->algorithm : ALGO_FIXED_WINDOW;
    if ((v = at[LF_ALGORITHM]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "algorithm");
        if (rls__config_enum(c, v, fp, algo_names, &idx) < 0 ||
            rls__algo_from_name(algo_names[idx]) != idx + 1)
            bad = 1;
        else
            out->algorithm = idx + 1;
    }
    if ((v = at[LF_LIMIT]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "limit");
        if (rls__config_int(c, v, fp, 1, CFG_LIMIT_MAX, &out->limit) < 0)
            bad = 1;
    } else if (!base) {
        if (base_ok)
            rls__config_missing(c, map, path, "limit", ndefs >= 0 ?
                            "(no default limit of this name to inherit it "
                            "from)" : NULL);
        bad = 1;
    }
    if ((v = at[LF_WINDOW]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "window");
        if (rls__config_duration(c, v, fp, &out->window) < 0)
            bad = 1;
    } else if (!base) {
        if (base_ok)
            rls__config_missing(c, map, path, "window", ndefs >= 0 ?
                            "(no default limit of this name to inherit it "
                            "from)" : NULL);
        bad = 1;
    }
    if (!rls__algo_is_bucket(out->algorithm))
        out->burst = 0;  /* an inherited burst no longer applies */
    if ((v = at[LF_BURST]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "burst");
        if (!rls__algo_is_bucket(out->algorithm)) {
            rls__config_err(c, v, fp, "not valid for %s (only token_bucket, "
                        "gcra and leaky_bucket have a burst)",
                        algo_names[out->algorithm - 1]);
            bad = 1;
        } else if (rls__config_int(c, v, fp, 1, CFG_LIMIT_MAX, &out->burst) < 0) {
            bad = 1;
        }
    }
    if ((v = at[LF_TIMEZONE]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "timezone");
        if (rls__config_zone(c, v, fp, &out->tz) < 0)
            bad = 1;
    }
    if (!is_window_algo(out->algorithm))
        out->anchor = ANCHOR_ALIGNED;  /* an inherited anchor no longer applies */
    if ((v = at[LF_ANCHOR]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "anchor");
        if (rls__config_enum(c, v, fp, anchor_names, &out->anchor) < 0) {
            bad = 1;
        } else if (out->anchor == ANCHOR_FIRST_HIT &&
                   !is_window_algo(out->algorithm)) {
            rls__config_err(c, v, fp, "first_hit is not valid for %s (only "
                        "fixed_window and sliding_window have windows to "
                        "anchor)", algo_names[out->algorithm - 1]);
            bad = 1;
        }
    }
    if ((v = at[LF_BLOCK_FOR]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "block_for");
        if (parse_block_for(c, v, fp, out) < 0)
            bad = 1;
    }
    if ((v = at[LF_OVERAGE]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "overage");
        if (rls__config_int(c, v, fp, 0, 1000, &n) < 0)
            bad = 1;
        else
            out->overage_pct = (int)n;
    }
    if ((v = at[LF_MODE]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "mode");
        if (rls__config_enum(c, v, fp, mode_names, &out->mode) < 0)
            bad = 1;
    }
    if ((v = at[LF_COUNT_DENIED]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "count_denied");
        if (rls__config_bool(c, v, fp, &out->count_denied) < 0)
            bad = 1;
    }
    if ((v = at[LF_DURABILITY]) >= 0) {
        rls__config_path_field(fp, sizeof fp, path, "durability");
        if (rls__config_enum(c, v, fp, durability_names, &out->durability) < 0)
            bad = 1;
    }
    if (bad || !base_ok)
        return -1;
    return check_combination(c, map, at, path, out);
}
