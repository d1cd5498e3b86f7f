/*
 * fuzz_config.c - libFuzzer target for the YAML rule loader, rls__config_parse()
 * (core/config*.c, core/rules.c, libyaml).
 *
 * The input is a rule file (any bytes).  Each input is parsed twice:
 *
 * 1. Normally.  The result must be 0 with a ruleset or -1 with errors
 *    (never -2: nothing fails to allocate here).  On success the ruleset
 *    must be consistent: version 1; at least one action; tiers and actions
 *    sorted, unique, with valid names, found by rls__ruleset_tier/_action; the
 *    default tier defined; every field of every limit (default and per
 *    tier) within the ranges the loader promises, burst only for bucket
 *    algorithms, first_hit only for window algorithms, no duplicate limit
 *    names, at most RESOLVE_MAX_LIMITS distinct limits per action and tier,
 *    a time zone everywhere, places inside the input; every tier list names
 *    a defined tier; every assignment a valid pattern, a defined tier, a
 *    defined action or none, a sane expiry.  On failure: no ruleset, 1 to
 *    CONFIG_MAX_ERRORS errors stored (total >= stored), sorted by place,
 *    each with a line and column inside the input (or 0:0), a non-empty
 *    message that is valid UTF-8 without control characters, and
 *    rls__config_error_format with snprintf semantics.
 *
 * 2. With allocation failure injected at an input-derived point, in the
 *    loader's allocator and in libyaml's (yaml_malloc & co are defined here,
 *    as in tests/core/test_config_yaml.c): the result is -2 with no
 *    ruleset and exactly the error "out of memory", or, if the failure was
 *    never reached, the same result as the normal parse.
 *
 * rls__ruleset_free releases everything; LeakSanitizer reports anything left.
 */
#include "fuzz_util.h"

#include <yaml.h>

#include "algo.h"
#include "config.h"
#include "config_int.h"
#include "keynorm.h"
#include "resolve.h"
#include "rlstore.h"
#include "rules.h"

/* ---- libyaml's allocations under the loader's fault injection -------- */

static long yaml_allocs;   /* counted during the normal parse */

void *yaml_malloc(size_t size);
void *yaml_realloc(void *ptr, size_t size);
yaml_char_t *yaml_strdup(const yaml_char_t *str);

void *yaml_malloc(size_t size)
{
    yaml_allocs++;
    return rls__config_fail_now() ? NULL : malloc(size ? size : 1);
}

void *yaml_realloc(void *ptr, size_t size)
{
    yaml_allocs++;
    if (rls__config_fail_now())
        return NULL;
    return ptr ? realloc(ptr, size ? size : 1) : malloc(size ? size : 1);
}

yaml_char_t *yaml_strdup(const yaml_char_t *str)
{
    if (!str)
        return NULL;
    yaml_allocs++;
    return rls__config_fail_now() ? NULL : (yaml_char_t *)strdup((const char *)str);
}

/* ---- places in the input ---------------------------------------------- */

static int max_line;   /* lines as libyaml counts them (any line break) */
static int max_col;    /* longest '\n'-separated line in bytes, + 1 */

static void measure(const uint8_t *s, size_t n)
{
    size_t i, start = 0;
    int breaks = 0;
    max_col = 1;
    for (i = 0; i < n; i++) {
        if (s[i] == '\n') {
            if ((int)(i - start) + 1 > max_col)
                max_col = (int)(i - start) + 1;
            start = i + 1;
        }
        if (s[i] == '\n' || (s[i] == '\r' && (i + 1 >= n || s[i + 1] != '\n')) ||
            (s[i] == 0xc2 && i + 1 < n && s[i + 1] == 0x85) ||
            (s[i] == 0xe2 && i + 2 < n && s[i + 1] == 0x80 &&
             (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)))
            breaks++;
    }
    if ((int)(n - start) + 1 > max_col)
        max_col = (int)(n - start) + 1;
    max_line = breaks + 1;
}

static void check_place(int line, int col, const char *what)
{
    FUZZ_CHECK(line >= 1 && line <= max_line && col >= 1 && col <= max_col,
               "%s at %d:%d, outside the input (%d lines, longest %d bytes)", what,
               line, col, max_line, max_col - 1);
}

/* ---- the ruleset -------------------------------------------------------- */

static int name_ok(const char *s)
{
    size_t n = strnlen(s, RULES_NAME_MAX + 1);
    return n <= RULES_NAME_MAX && rls__config_name_ok(s, n);
}

static void check_limit(const ruleset *rs, const rule_action *a, const rule_limit *l,
                        const char *tier)
{
    const char *an = a->name;
    FUZZ_CHECK(name_ok(l->name), "%s/%s: limit name '%.70s'", an, tier, l->name);
    FUZZ_CHECK(l->algorithm >= ALGO_FIXED_WINDOW && l->algorithm <= ALGO_LEAKY_BUCKET,
               "%s/%s/%s: algorithm %d", an, tier, l->name, l->algorithm);
    FUZZ_CHECK(l->limit >= 1 && l->limit <= CFG_LIMIT_MAX, "%s/%s: limit %lld", an,
               l->name, (long long)l->limit);
    FUZZ_CHECK(l->window.ms >= 1 && l->window.ms <= DUR_MS_MAX, "%s/%s: window %lld",
               an, l->name, (long long)l->window.ms);
    FUZZ_CHECK(l->window.calendar >= DUR_FIXED && l->window.calendar <= DUR_MONTH &&
                   (l->window.calendar != DUR_DAY || l->window.ms == 86400000LL) &&
                   (l->window.calendar != DUR_WEEK || l->window.ms == 7 * 86400000LL) &&
                   (l->window.calendar != DUR_MONTH || l->window.ms == 30 * 86400000LL),
               "%s/%s: calendar %d with %lld ms", an, l->name, l->window.calendar,
               (long long)l->window.ms);
    FUZZ_CHECK(l->burst >= 0 && l->burst <= CFG_LIMIT_MAX &&
                   (l->burst == 0 || rls__algo_is_bucket(l->algorithm)),
               "%s/%s: burst %lld with algorithm %d", an, l->name, (long long)l->burst,
               l->algorithm);
    FUZZ_CHECK(l->tz != NULL, "%s/%s: no time zone", an, l->name);
    {
        int owned = 0;
        for (int i = 0; i < rs->nzones_; i++)
            owned |= rs->zones_[i] == l->tz;
        FUZZ_CHECK(owned, "%s/%s: time zone not owned by the ruleset", an, l->name);
    }
    FUZZ_CHECK(l->anchor == ANCHOR_ALIGNED ||
                   (l->anchor == ANCHOR_FIRST_HIT &&
                    (l->algorithm == ALGO_FIXED_WINDOW || l->algorithm == ALGO_SLIDING_WINDOW)),
               "%s/%s: anchor %d with algorithm %d", an, l->name, l->anchor, l->algorithm);
    FUZZ_CHECK(l->nblock_for >= 0 && l->nblock_for <= RULES_BLOCK_STEPS,
               "%s/%s: %d block_for steps", an, l->name, l->nblock_for);
    for (int i = 0; i < l->nblock_for; i++)
        FUZZ_CHECK(l->block_for[i] >= 1 && l->block_for[i] <= DUR_MS_MAX,
                   "%s/%s: block_for[%d] = %lld", an, l->name, i,
                   (long long)l->block_for[i]);
    FUZZ_CHECK(l->overage_pct >= 0 && l->overage_pct <= 1000, "%s/%s: overage %d", an,
               l->name, l->overage_pct);
    FUZZ_CHECK(l->mode == MODE_ENFORCE || l->mode == MODE_SHADOW, "mode %d", l->mode);
    FUZZ_CHECK(l->count_denied == 0 || l->count_denied == 1, "count_denied %d",
               l->count_denied);
    FUZZ_CHECK(l->durability >= DURA_NORMAL && l->durability <= DURA_MEMORY,
               "durability %d", l->durability);
    FUZZ_CHECK(l->algorithm != ALGO_SLIDING_LOG ||
                   l->limit + l->limit * l->overage_pct / 100 <= ALGO_SLIDING_LOG_MAX,
               "%s/%s: sliding_log limit %lld overage %d", an, l->name,
               (long long)l->limit, l->overage_pct);
    FUZZ_CHECK(l->id == 0, "%s/%s: storage id %lld set by the loader", an, l->name,
               (long long)l->id);
    check_place(l->line, l->column, "limit");
}

static void check_no_dup(const rule_limit *list, int n, const char *an, const char *tier)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(list[i].name, list[j].name) != 0,
                       "%s/%s: limit '%s' defined twice", an, tier, list[i].name);
}

static void check_ruleset(const ruleset *rs)
{
    FUZZ_CHECK(rs->version == 1, "version %d", rs->version);
    FUZZ_CHECK(rs->default_tz != NULL, "no default time zone");
    FUZZ_CHECK(rs->on_error >= ONERR_INHERIT && rs->on_error <= ONERR_ALLOW,
               "on_error %d", rs->on_error);
    FUZZ_CHECK(rs->ntiers >= 0 && rs->ntiers <= CFG_MAX_TIERS, "%d tiers", rs->ntiers);
    for (int i = 0; i < rs->ntiers; i++) {
        const rule_tier *t = &rs->tiers[i];
        FUZZ_CHECK(name_ok(t->name), "tier name '%.70s'", t->name);
        FUZZ_CHECK(i == 0 || strcmp(rs->tiers[i - 1].name, t->name) < 0,
                   "tiers not sorted or repeated at '%s'", t->name);
        FUZZ_CHECK(rls__ruleset_tier(rs, t->name) == t, "tier '%s' not found", t->name);
        FUZZ_CHECK((t->unlimited == 0 || t->unlimited == 1) &&
                       (t->blocked == 0 || t->blocked == 1) && !(t->unlimited && t->blocked),
                   "tier '%s': unlimited %d blocked %d", t->name, t->unlimited, t->blocked);
    }
    FUZZ_CHECK(rs->default_tier[0] == '\0' || rls__ruleset_tier(rs, rs->default_tier),
               "default tier '%s' not defined", rs->default_tier);
    FUZZ_CHECK(rs->nactions >= 1 && rs->nactions <= CFG_MAX_ACTIONS, "%d actions",
               rs->nactions);
    for (int i = 0; i < rs->nactions; i++) {
        const rule_action *a = &rs->actions[i];
        char names[RESOLVE_MAX_LIMITS * 2][RULES_NAME_MAX + 1];
        FUZZ_CHECK(name_ok(a->name), "action name '%.70s'", a->name);
        FUZZ_CHECK(i == 0 || strcmp(rs->actions[i - 1].name, a->name) < 0,
                   "actions not sorted or repeated at '%s'", a->name);
        FUZZ_CHECK(rls__ruleset_action(rs, a->name) == a, "action '%s' not found", a->name);
        FUZZ_CHECK(a->key_kind >= KEY_STRING && a->key_kind <= KEY_EMAIL,
                   "%s: key kind %d", a->name, a->key_kind);
        FUZZ_CHECK(a->ipv4_prefix >= 0 && a->ipv4_prefix <= 32 && a->ipv6_prefix >= 0 &&
                       a->ipv6_prefix <= 128,
                   "%s: prefixes %d %d", a->name, a->ipv4_prefix, a->ipv6_prefix);
        FUZZ_CHECK(a->key_kind == KEY_IP || (a->ipv4_prefix == 32 && a->ipv6_prefix == 128),
                   "%s: IP prefixes on a %d key", a->name, a->key_kind);
        FUZZ_CHECK(a->on_error >= ONERR_INHERIT && a->on_error <= ONERR_ALLOW,
                   "%s: on_error %d", a->name, a->on_error);
        FUZZ_CHECK(a->nlimits >= 1 && a->nlimits <= RESOLVE_MAX_LIMITS && a->limits,
                   "%s: %d limits", a->name, a->nlimits);
        for (int j = 0; j < a->nlimits; j++) {
            check_limit(rs, a, &a->limits[j], "-");
            memcpy(names[j], a->limits[j].name, sizeof names[j]);
        }
        check_no_dup(a->limits, a->nlimits, a->name, "-");
        FUZZ_CHECK(a->ntiers >= 0 && a->ntiers <= rs->ntiers, "%s: %d tier lists (%d tiers)",
                   a->name, a->ntiers, rs->ntiers);
        for (int j = 0; j < a->ntiers; j++) {
            const rule_tier_limits *tl = &a->tiers[j];
            int distinct = a->nlimits;
            FUZZ_CHECK(rls__ruleset_tier(rs, tl->tier) != NULL, "%s: tier list for undefined "
                       "tier '%.70s'", a->name, tl->tier);
            for (int k = 0; k < j; k++)
                FUZZ_CHECK(strcmp(a->tiers[k].tier, tl->tier) != 0,
                           "%s: two lists for tier '%s'", a->name, tl->tier);
            FUZZ_CHECK(tl->nlimits >= 0 && tl->nlimits <= RESOLVE_MAX_LIMITS &&
                           (tl->nlimits == 0 || tl->limits),
                       "%s/%s: %d limits", a->name, tl->tier, tl->nlimits);
            for (int k = 0; k < tl->nlimits; k++) {
                int known = 0;
                check_limit(rs, a, &tl->limits[k], tl->tier);
                for (int m = 0; m < a->nlimits; m++)
                    known |= strcmp(names[m], tl->limits[k].name) == 0;
                distinct += !known;
            }
            check_no_dup(tl->limits, tl->nlimits, a->name, tl->tier);
            FUZZ_CHECK(distinct <= RESOLVE_MAX_LIMITS, "%s/%s: %d distinct limits",
                       a->name, tl->tier, distinct);
        }
    }
    FUZZ_CHECK(rs->nassignments >= 0 && rs->nassignments <= CFG_MAX_ASSIGNMENTS,
               "%d assignments", rs->nassignments);
    for (int i = 0; i < rs->nassignments; i++) {
        const rule_assignment *s = &rs->assignments[i];
        key_pattern p;
        size_t len;
        FUZZ_CHECK(s->key != NULL, "assignment %d without key", i);
        len = strlen(s->key);
        FUZZ_CHECK(len >= 1 && len <= RLS_KEY_MAX_LIMIT, "assignment %d: key of %zu bytes",
                   i, len);
        FUZZ_CHECK(rls__key_pattern_parse(s->key, &p, NULL) == 0, "assignment %d: pattern "
                   "refused", i);
        FUZZ_CHECK(rls__ruleset_tier(rs, s->tier) != NULL, "assignment %d: tier '%.70s'", i,
                   s->tier);
        FUZZ_CHECK(s->action[0] == '\0' || rls__ruleset_action(rs, s->action) != NULL,
                   "assignment %d: action '%.70s'", i, s->action);
        FUZZ_CHECK(s->expires_ms >= 0 && s->expires_ms <= RLS_TIME_MAX,
                   "assignment %d: expires %lld", i, (long long)s->expires_ms);
        if (s->action[0]) {
            const rule_action *a = rls__ruleset_action(rs, s->action);
            FUZZ_CHECK(p.kind != PAT_CIDR || a->key_kind == KEY_IP,
                       "assignment %d: CIDR for a non-IP action", i);
            if (p.kind == PAT_EXACT && a->key_kind != KEY_STRING) {
                char norm[RLS_KEY_MAX_LIMIT + 64];
                int n = rls__key_normalize(a->key_kind, a->ipv4_prefix, a->ipv6_prefix,
                                      s->key, len, norm, sizeof norm, NULL);
                FUZZ_CHECK(n == (int)len && memcmp(norm, s->key, len) == 0,
                           "assignment %d: key '%.60s' is not normalised for '%s'", i,
                           s->key, a->name);
            }
        }
        for (int j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(rs->assignments[j].key, s->key) != 0 ||
                           strcmp(rs->assignments[j].action, s->action) != 0,
                       "assignment %d repeats %d", i, j);
    }
}

/* ---- errors ------------------------------------------------------------- */

static void check_errors(const config_errors *e)
{
    FUZZ_CHECK(e->n >= 1 && e->n <= CONFIG_MAX_ERRORS && e->total >= e->n,
               "%d errors stored, %d found", e->n, e->total);
    for (int i = 0; i < e->n; i++) {
        const config_error *x = &e->e[i];
        size_t len = strnlen(x->msg, sizeof x->msg);
        FUZZ_CHECK(len > 0 && len < sizeof x->msg, "error %d: message of %zu bytes", i,
                   len);
        FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)x->msg, len),
                   "error %d: message is not valid UTF-8: %s", i, x->msg);
        for (size_t k = 0; k < len; k++)
            FUZZ_CHECK((unsigned char)x->msg[k] >= 0x20 && x->msg[k] != 0x7f,
                       "error %d: control byte 0x%02x in message: %s", i,
                       (unsigned char)x->msg[k], x->msg);
        if (x->line == 0)
            FUZZ_CHECK(x->column == 0, "error %d: column %d without a line", i, x->column);
        else
            check_place(x->line, x->column, x->msg);
        if (i > 0)
            FUZZ_CHECK(e->e[i - 1].line < x->line ||
                           (e->e[i - 1].line == x->line && e->e[i - 1].column <= x->column),
                       "errors not sorted at %d", i);
    }
    /* rls__config_error_format: snprintf semantics, with and without a file */
    for (int f = 0; f < 2; f++) {
        const char *file = f ? "rules.yaml" : NULL;
        char full[400];
        int n = rls__config_error_format(&e->e[0], file, full, sizeof full);
        FUZZ_CHECK(n > 0 && (size_t)n < sizeof full && strlen(full) == (size_t)n,
                   "rls__config_error_format: %d", n);
        FUZZ_CHECK(rls__config_error_format(&e->e[0], file, NULL, 0) == n, "length");
        for (size_t size = 1; size <= (size_t)n + 1; size += 1 + size / 8) {
            char *b = fuzz_buf(size);
            size_t w = size - 1 < (size_t)n ? size - 1 : (size_t)n;
            FUZZ_CHECK(rls__config_error_format(&e->e[0], file, b, size) == n, "size %zu", size);
            FUZZ_CHECK(memchr(b, '\0', size) == b + w && memcmp(b, full, w) == 0,
                       "size %zu: not a NUL-terminated prefix", size);
            free(b);
        }
    }
}

/* ---- the target ----------------------------------------------------------- */

static config_errors errs, errs2;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    ruleset *rs = (ruleset *)1, *rs2 = (ruleset *)1;
    int rc, rc2;
    long k;

    measure(data, size);
    rls__config_fail_after(-1);
    yaml_allocs = 0;
    rc = rls__config_parse(text, size, &rs, &errs);
    FUZZ_CHECK(rc == 0 || rc == -1, "rls__config_parse returned %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(rs != NULL && rs != (ruleset *)1, "success without a ruleset");
        FUZZ_CHECK(errs.n == 0 && errs.total == 0, "success with %d errors", errs.total);
        check_ruleset(rs);
    } else {
        FUZZ_CHECK(rs == NULL, "failure with a ruleset");
        check_errors(&errs);
    }

    /* the same input with the k-th allocation failing (and all after it) */
    k = (long)(fuzz_hash(data, size) % (unsigned long)(2 * yaml_allocs + 16));
    rls__config_fail_after(k);
    rc2 = rls__config_parse(text, size, &rs2, &errs2);
    {
        int exhausted = rls__config_fail_now();
        rls__config_fail_after(-1);
        if (rc2 == -2) {
            FUZZ_CHECK(exhausted, "-2 without an allocation failure");
            FUZZ_CHECK(rs2 == NULL, "out of memory with a ruleset");
            FUZZ_CHECK(errs2.n == 1 && errs2.total == 1 &&
                           strcmp(errs2.e[0].msg, "out of memory") == 0 &&
                           errs2.e[0].line == 0,
                       "out of memory reported as %d errors, first '%s'", errs2.n,
                       errs2.n ? errs2.e[0].msg : "");
        } else {
            FUZZ_CHECK(rc2 == rc, "allocation %ld failing turned %d into %d", k, rc, rc2);
            FUZZ_CHECK(rc2 != 0 || rs2 != NULL, "success without a ruleset");
            if (rc2 != 0)
                FUZZ_CHECK(rs2 == NULL && errs2.total == errs.total,
                           "allocation %ld failing changed the errors (%d -> %d)", k,
                           errs.total, errs2.total);
        }
    }
    if (rc2 == 0)
        rls__ruleset_free(rs2);
    if (rc == 0)
        rls__ruleset_free(rs);
    return 0;
}
