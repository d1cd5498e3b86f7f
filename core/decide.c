/*
 * decide.c - one check's decision over all limits of an action (decide.h).
 *
 * Admission is all-or-nothing: pass one asks every limit without charging;
 * the request is admitted only if every enforcing limit admits (shadow limits
 * are asked but never deny).  Pass two charges every limit when admitted, or
 * only the count_denied limits when denied.  The deciding limit is the
 * denying one with the longest wait (never = -1 dominates), or when admitted
 * the one with the least remaining fraction of its capacity.
 */
#include <stddef.h>
#include <string.h>
#include "arith.h"
#include "decide.h"
#include "window.h"

/* Capacity with a soft-limit overage: c * (100 + pct) / 100, saturating. */
static int64_t with_overage(int64_t c, int pct)
{
    int64_t extra;
    if (pct <= 0)
        return c;
    if (__builtin_mul_overflow(c / 100, (int64_t)pct, &extra))
        return INT64_MAX;
    extra += (c % 100) * pct / 100;
    return sat_add(c, extra);
}

static void item_params(const resolved_limit *rl, algo_params *p)
{
    const rule_limit *d = rl->def;
    p->kind = d->algorithm;
    p->limit = with_overage(rl->limit, d->overage_pct);
    p->burst = with_overage(rl->burst, d->overage_pct);
    p->period_ms = d->window.ms;
    p->anchor_first_hit = d->anchor == ANCHOR_FIRST_HIT;
    p->count_denied = d->count_denied;
}

static void item_window(const rule_limit *d, int64_t t, algo_window *w)
{
    int64_t ignore, next_start;
    rls__window_at(&d->window, d->tz, t, &w->prev_start, &w->start, &w->end);
    w->next_end = 0;  /* only sliding_window needs it (same length if 0) */
    if (d->algorithm == ALGO_SLIDING_WINDOW)
        rls__window_at(&d->window, d->tz, w->end, &ignore, &next_start, &w->next_end);
}

/* Reports soft limits against the nominal capacity: the overage units are
 * admissible but not advertised as remaining. */
static void nominal_meta(const resolved_limit *rl, const algo_params *p,
                         algo_meta *m)
{
    int64_t nominal = rls__algo_is_bucket(p->kind) ? rl->burst : rl->limit;
    int64_t extra = m->capacity - nominal;
    if (extra > 0) {
        m->remaining = m->remaining > extra ? m->remaining - extra : 0;
        m->capacity = nominal;
    }
}

static int64_t clock_safe(const decide_item *items, int n, int64_t now,
                          int64_t floor_ms)
{
    int64_t t = now > floor_ms ? now : floor_ms;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < items[i].nsib; j++)
            if (items[i].sib[j].st.present && items[i].sib[j].st.last_ms > t)
                t = items[i].sib[j].st.last_ms;
        /* a state GC collected may have counted later than now: the
         * limit's floor stands in for its last_ms */
        int64_t last = items[i].st->present ? items[i].st->last_ms : items[i].floor_ms;
        if (last > t)
            t = last;
    }
    return t;
}

/*
 * The earliest instant whose charges still count for the limit at t: the
 * window's start (sliding_window: the previous window's), the log's window,
 * or for a bucket the time it takes to refill from empty.
 */
static int64_t counts_from(const algo_params *p, const algo_window *w, int64_t t)
{
    int64_t refill;
    switch (p->kind) {
    case ALGO_FIXED_WINDOW:
        return p->anchor_first_hit ? sat_sub(t, p->period_ms) : w->start;
    case ALGO_SLIDING_WINDOW:
        return p->anchor_first_hit ? sat_sub(t, p->period_ms * 2) : w->prev_start;
    case ALGO_SLIDING_LOG:
        return sat_sub(t, p->period_ms);
    default:
        if (__builtin_mul_overflow(p->burst, p->period_ms, &refill))
            return INT64_MIN;
        return sat_sub(t, refill / p->limit + 1);
    }
}

/* Units another variant's state may hold that were charged at or after
 * `from`: counts of windows, units of log entries, and for a bucket that
 * is not yet full again, everything (its capacity is not known here). */
static int64_t sib_units(const decide_sib *s, int64_t from, int64_t t)
{
    const algo_state *c = &s->st;
    int64_t u = 0;
    if (!c->present || c->last_ms < from)
        return 0;
    switch (s->alg) {
    case ALGO_FIXED_WINDOW:
        return c->b > 0 ? c->b : 0;
    case ALGO_SLIDING_WINDOW:
        return sat_add(c->b > 0 ? c->b : 0, c->c > 0 ? c->c : 0);
    case ALGO_SLIDING_LOG:
        for (size_t i = 0; c->log && i + ALGO_LOG_ENTRY <= c->log_len; i += ALGO_LOG_ENTRY) {
            int64_t units = get_le64(c->log + i + 8);
            if (get_le64(c->log + i) >= from && units > 0)
                u = sat_add(u, units);
        }
        return u;
    default:
        return c->expires_ms > t ? INT64_MAX : 0;
    }
}

/* Charges item's state with what its other variants recorded after it was
 * last written (decide.h), up to its capacity in all: a variant's count may
 * hold units carried from this one (a change and back), so counting them
 * again past capacity would only show usage that never happened.  1 if it
 * charged. */
static int carry_over(decide_item *it, const algo_params *p, const algo_window *w,
                      int64_t t)
{
    int64_t units = 0, from = counts_from(p, w, t);
    for (int j = 0; j < it->nsib; j++)
        if (!it->st->present || it->sib[j].st.last_ms > it->st->last_ms)
            units = sat_add(units, sib_units(&it->sib[j], from, t));
    if (units <= 0)
        return 0;
    algo_params cp = *p;
    algo_meta m;
    if (rls__algo_decide(p, w, it->st, t, 1, 0, &m) != 0)   /* a peek: units in use now */
        return 0;
    int64_t room = m.capacity - m.used;
    if (room <= 0)
        return 0;
    cp.count_denied = 1;  /* spent is spent, admissible or not */
    return rls__algo_decide(&cp, w, it->st, t, units < room ? units : room, 1, &m) == 0;
}

static int64_t shift(int64_t v, int64_t by)
{
    return v > 0 ? sat_add(v, by) : v;
}

static int better_denier(const algo_meta *a, const algo_meta *b)
{
    if (b->retry_after_ms < 0)
        return 0;
    if (a->retry_after_ms < 0)
        return 1;
    return a->retry_after_ms > b->retry_after_ms;
}

/* a has less remaining fraction than b: a.rem/a.cap < b.rem/b.cap,
 * compared by cross-multiplication (exact unless it overflows). */
static int less_fraction(const algo_meta *a, const algo_meta *b)
{
    int64_t ac = a->capacity > 0 ? a->capacity : 1;
    int64_t bc = b->capacity > 0 ? b->capacity : 1;
    int64_t l, r;
    if (__builtin_mul_overflow(a->remaining, bc, &l) ||
        __builtin_mul_overflow(b->remaining, ac, &r))
        return (long double)a->remaining / ac < (long double)b->remaining / bc;
    return l < r;
}

/* Is the limit's window_ms its calendar window's real length (a 23-hour
 * day) rather than the nominal d->window.ms? */
static int window_is_calendar(const rule_limit *d)
{
    return d->window.calendar != DUR_FIXED && d->anchor != ANCHOR_FIRST_HIT &&
           (d->algorithm == ALGO_FIXED_WINDOW || d->algorithm == ALGO_SLIDING_WINDOW);
}

int64_t rls__decide_window_ms(const rule_limit *d, int64_t t)
{
    if (!window_is_calendar(d))
        return d->window.ms;
    int64_t prev, start, end;
    rls__window_at(&d->window, d->tz, t, &prev, &start, &end);
    return end - start;
}

/* The rule name into res->rule, cut to fit as snprintf("%s") would: a
 * check fills it every time, and printf's machinery costs more than the
 * rest of the result. */
static void copy_rule(rls_result *res, const char *name)
{
    size_t n = name ? strnlen(name, sizeof res->rule - 1) : 0;
    memcpy(res->rule, name ? name : "", n);
    res->rule[n] = '\0';
}

/* copy_rule of a limit's name, a whole array of RULES_NAME_MAX + 1 bytes
 * (readable to its end), into a result zeroed before: eight bytes at a
 * time up to the word holding the first NUL, whose bytes from the NUL on
 * stay zero.  The lowest byte the zero-byte test flags is always the
 * first NUL (a borrow flags only bytes above it). */
static void copy_limit_name(rls_result *res, const char *name)
{
    _Static_assert(sizeof res->rule == RULES_NAME_MAX + 1 && sizeof res->rule % 8 == 0,
                   "a limit's name fills the result's rule");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (size_t i = 0; i < sizeof res->rule; i += 8) {
        uint64_t w, z;
        memcpy(&w, name + i, 8);
        z = (w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL;
        if (z)
            w &= ((z & -z) >> 7) - 1;   /* the bytes before the first NUL */
        memcpy(res->rule + i, &w, 8);
        if (z)
            return;
    }
    res->rule[sizeof res->rule - 1] = '\0';   /* cut as snprintf would */
#else
    copy_rule(res, name);
#endif
}

/* w: the window the deciding limit was asked in at t (window_ms as
 * rls__decide_window_ms(def, t) gives it, without computing it again). */
static void fill_result(rls_result *res, const decide_item *it, const algo_window *w,
                        int allowed, int reason, int64_t t, int64_t skew)
{
    const rule_limit *d = it->rl->def;
    /* every byte as memset(res, 0) and the stores below leave them, its
     * parts zeroed apart (two stores of 64 bytes, no rep stos) */
    _Static_assert(sizeof *res == offsetof(rls_result, reserved_) + sizeof res->reserved_ &&
                       offsetof(rls_result, reserved_) ==
                           offsetof(rls_result, rule) + sizeof res->rule &&
                       offsetof(rls_result, rule) == offsetof(rls_result, window_ms) + 8,
                   "rls_result: fields, rule, reserved_, without padding");
    memset(res->rule, 0, sizeof res->rule);
    memset(res->reserved_, 0, sizeof res->reserved_);
    res->allowed = allowed;
    res->reason = reason;
    res->limit = it->meta.capacity;
    res->remaining = it->meta.remaining < 0 ? 0 : it->meta.remaining;
    res->reset_ms = shift(it->meta.reset_ms, skew);
    res->retry_after_ms = allowed ? 0 : shift(it->meta.retry_after_ms, skew);
    res->delay_ms = allowed ? shift(it->meta.delay_ms, skew) : 0;
    res->window_ms = window_is_calendar(d) ? w->end - w->start : d->window.ms;
    copy_limit_name(res, d->name);
}

int rls__decide_check(decide_item *items, int n, int behaviour, int64_t now,
                 int64_t floor_ms, int64_t cost, int charge,
                 rls_result *res, decide_out *out)
{
    int64_t t = clock_safe(items, n, now, floor_ms);
    int all_ok = 1, shadow_hit = 0, deciding = -1, never = 0;
    algo_params p[RESOLVE_MAX_LIMITS];
    algo_window w[RESOLVE_MAX_LIMITS];
    unsigned char carried[RESOLVE_MAX_LIMITS];

    if (n > RESOLVE_MAX_LIMITS)
        return -1;
    out->now = t;
    out->deciding = -1;
    out->penalty = -1;

    /* Pass one: ask every limit, change nothing. */
    for (int i = 0; i < n; i++) {
        decide_item *it = &items[i];
        item_params(it->rl, &p[i]);
        item_window(it->rl->def, t, &w[i]);
        it->changed = 0;
        carried[i] = (unsigned char)(it->nsib > 0 && carry_over(it, &p[i], &w[i], t));
        if (rls__algo_decide(&p[i], &w[i], it->st, t, cost, 0, &it->meta) != 0)
            return -1;
        it->denied = !it->meta.allowed;
        if (!it->denied)
            continue;
        if (it->rl->def->mode == MODE_SHADOW) {
            shadow_hit = 1;
            continue;
        }
        all_ok = 0;
        if (deciding < 0 || better_denier(&it->meta, &items[deciding].meta))
            deciding = i;
    }
    if (behaviour == TIER_UNLIMITED) {
        all_ok = 1;
        deciding = -1;
    }

    /* Pass two: charge. */
    for (int i = 0; charge && i < n; i++) {
        decide_item *it = &items[i];
        /* Admitted: charge every limit that admits (a shadow limit that
         * would deny is left as it is; under an unlimited tier every limit
         * counts the request, as count_denied would).  Denied: only
         * count_denied limits count it. */
        int unlimited = behaviour == TIER_UNLIMITED;
        int take = all_ok ? !it->denied || unlimited : p[i].count_denied;
        if (!take)
            continue;
        algo_params cp = p[i];
        if (unlimited)
            cp.count_denied = 1;  /* counted for visibility even when full */
        algo_meta m;
        if (rls__algo_decide(&cp, &w[i], it->st, t, cost, 1, &m) != 0)
            return -1;
        /* a request that can never pass charges nothing, not even here */
        it->changed = it->st->present;
        if (all_ok)
            it->meta = m;
    }

    for (int i = 0; i < n; i++) {
        if (carried[i])
            items[i].changed = 1;  /* the usage carried over is kept */
        nominal_meta(items[i].rl, &p[i], &items[i].meta);
    }

    if (all_ok) {
        for (int i = 0; i < n; i++) {
            if (items[i].denied && behaviour != TIER_UNLIMITED)
                continue;  /* a shadow limit's meta says "denied" */
            if (deciding < 0 || less_fraction(&items[i].meta, &items[deciding].meta))
                deciding = i;
        }
        if (deciding < 0)
            deciding = 0;
    }
    if (n == 0) {
        memset(res, 0, sizeof *res);
        res->allowed = behaviour != TIER_BLOCKED;
        res->reason = res->allowed ? RLS_REASON_OK : RLS_REASON_BLOCKED;
        res->retry_after_ms = res->allowed ? 0 : -1;
        return 0;
    }

    out->deciding = deciding;
    never = !all_ok && items[deciding].meta.retry_after_ms < 0;
    if (all_ok) {
        fill_result(res, &items[deciding], &w[deciding], 1,
                    shadow_hit && behaviour != TIER_UNLIMITED
                        ? RLS_REASON_SHADOW : RLS_REASON_OK,
                    t, t - now);
    } else {
        fill_result(res, &items[deciding], &w[deciding], 0,
                    never ? RLS_REASON_COST_EXCEEDS : RLS_REASON_LIMIT, t, t - now);
        /* The penalty of the deciding limit, else of another enforcing
         * limit that denied; never for a request that can never pass. */
        for (int i = -1; !never && out->penalty < 0 && i < n; i++) {
            int j = i < 0 ? deciding : i;
            const decide_item *it = &items[j];
            if (it->denied && it->rl->def->mode != MODE_SHADOW &&
                it->meta.retry_after_ms >= 0 && it->rl->def->nblock_for > 0)
                out->penalty = j;
        }
    }
    return 0;
}

/* Does the algorithm of p read the aligned window (algo.h)? */
static int uses_window(const algo_params *p)
{
    return !p->anchor_first_hit &&
           (p->kind == ALGO_FIXED_WINDOW || p->kind == ALGO_SLIDING_WINDOW);
}

/* The window of d at t as item_window computes it, from *wc when it holds
 * t; else computed and kept there. */
static void cached_window(const rule_limit *d, int64_t t, decide_wcache *wc, algo_window *w)
{
    if (!wc || t < wc->start || t >= wc->end) {
        item_window(d, t, w);
        if (!wc || t < w->start || t >= w->end)
            return;   /* never (window.h): not kept then */
        wc->prev_start = w->prev_start;   /* its parameters stay */
        wc->start = w->start;
        wc->end = w->end;
        wc->next_end = w->next_end;
        return;
    }
    w->prev_start = wc->prev_start;
    w->start = wc->start;
    w->end = wc->end;
    w->next_end = wc->next_end;
}

int rls__decide_one(decide_item *it, int64_t now, int64_t cost, decide_wcache *wc,
                    rls_result *res, decide_out *out)
{
    const rule_limit *d = it->rl->def;
    algo_state *st = it->st;
    algo_params p;
    algo_window w = {0, 0, 0, 0};
    /* the general decision asks first and charges after: one call is the
     * same unless a denial is charged too (count_denied), a shadow limit
     * is asked (never charged when it would deny), or a sliding_log charge
     * has no room (the ask succeeds, the charge is refused) */
    if (it->nsib > 0 || d->mode != MODE_ENFORCE || d->count_denied ||
        (d->algorithm == ALGO_SLIDING_LOG &&
         (!st->log || st->log_cap < (st->present ? st->log_len : 0) + ALGO_LOG_ENTRY)))
        return rls__decide_check(it, 1, TIER_NORMAL, now, 0, cost, 1, res, out);
    int64_t last = st->present ? st->last_ms : it->floor_ms;
    int64_t t = now > 0 ? now : 0;   /* clock_safe's floor_ms is 0 */
    if (last > t)
        t = last;
    out->now = t;
    out->deciding = -1;
    out->penalty = -1;
    if (wc && wc->have_p) {
        p = wc->p;
    } else {
        item_params(it->rl, &p);
        if (wc) {
            wc->p = p;
            wc->have_p = 1;
        }
    }
    /* only a window algorithm reads the window (and only its result's
     * length can be a calendar window's) */
    if (uses_window(&p))
        cached_window(d, t, wc, &w);
    it->changed = 0;
    if (rls__algo_decide(&p, &w, st, t, cost, 1, &it->meta) != 0)
        return -1;
    it->denied = !it->meta.allowed;
    it->changed = !it->denied && st->present;
    nominal_meta(it->rl, &p, &it->meta);
    out->deciding = 0;
    if (!it->denied) {
        fill_result(res, it, &w, 1, RLS_REASON_OK, t, t - now);
        return 0;
    }
    int never = it->meta.retry_after_ms < 0;
    fill_result(res, it, &w, 0, never ? RLS_REASON_COST_EXCEEDS : RLS_REASON_LIMIT, t,
                t - now);
    if (!never && d->nblock_for > 0)
        out->penalty = 0;
    return 0;
}

int rls__decide_refund(decide_item *items, int n, int64_t now, int64_t floor_ms,
                  int64_t charged_at, int64_t cost)
{
    int64_t t = clock_safe(items, n, now, floor_ms);
    if (charged_at > t)
        charged_at = t;
    for (int i = 0; i < n; i++) {
        algo_params p;
        algo_window w;
        decide_item *it = &items[i];
        it->changed = 0;
        if (!it->st->present)
            continue;  /* nothing charged survives: nothing to give back */
        item_params(it->rl, &p);
        item_window(it->rl->def, t, &w);
        if (rls__algo_refund(&p, &w, it->st, t, charged_at, cost) != 0)
            return -1;
        it->changed = 1;
    }
    return 0;
}

/* Units in use of each item at now: a peek of cost 1 (algo_meta.used),
 * which changes nothing. */
static int items_in_use(decide_item *items, int n, int64_t now, int64_t *used)
{
    rls_result res;
    decide_out dout;
    unsigned char changed[RESOLVE_MAX_LIMITS];
    for (int i = 0; i < n; i++)
        changed[i] = (unsigned char)items[i].changed;
    if (rls__decide_check(items, n, TIER_NORMAL, now, 0, 1, 0, &res, &dout) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        used[i] = items[i].meta.used;
        items[i].changed = changed[i];   /* a peek changes nothing */
    }
    return 0;
}

int rls__decide_refund_given(decide_item *items, int n, int64_t now, int64_t charged_at,
                             int64_t cost, int64_t *given)
{
    int64_t before[RESOLVE_MAX_LIMITS], after[RESOLVE_MAX_LIMITS];
    *given = 0;
    if (n > RESOLVE_MAX_LIMITS || items_in_use(items, n, now, before) != 0 ||
        rls__decide_refund(items, n, now, 0, charged_at, cost) != 0 ||
        items_in_use(items, n, now, after) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (before[i] - after[i] > *given)
            *given = before[i] - after[i];
    return 0;
}

void rls__decide_blocked(rls_result *res, int64_t now, int64_t until_ms,
                    const char *rule)
{
    memset(res, 0, sizeof *res);
    res->allowed = 0;
    res->reason = RLS_REASON_BLOCKED;
    res->retry_after_ms = until_ms > now ? until_ms - now : -1;
    res->reset_ms = res->retry_after_ms > 0 ? res->retry_after_ms : 0;
    copy_rule(res, rule);
}

void rls__decide_blocked_keep(rls_result *res, int64_t now, int64_t until_ms,
                         const char *rule)
{
    int64_t limit = res->limit, remaining = res->remaining, window = res->window_ms;
    rls__decide_blocked(res, now, until_ms, rule);
    res->limit = limit;
    res->remaining = remaining;
    res->window_ms = window;
}

int64_t rls__decide_overage(int64_t c, int pct)
{
    return with_overage(c, pct);
}

void rls__decide_degraded(rls_result *res, int allow)
{
    memset(res, 0, sizeof *res);
    res->allowed = allow ? 1 : 0;
    res->reason = RLS_REASON_DEGRADED;
    res->retry_after_ms = allow ? 0 : -1;
}
