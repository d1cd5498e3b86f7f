/*
 * algo.c - the six rate-limiting algorithms as pure functions (see algo.h
 * and shared/DESIGN.md section 2).
 *
 * Every algorithm follows the same four steps: load the stored state as it
 * stands at `now` (rolling windows, refilling tokens), decide whether `cost`
 * is admissible, apply the charge when asked to, then describe the resulting
 * state in the metadata.  Arithmetic is int64 and saturating; products that
 * must be exact (the sliding-window weighting) go through mul_frac().
 *
 * Decisions the contract leaves open, chosen here:
 *
 *   count_denied  A denied request with cost <= capacity is charged as far as
 *       the algorithm's state can hold it: the windows and the log count its
 *       units; token_bucket drains to zero tokens (a denied request takes
 *       what is there, never goes into debt); gcra and leaky_bucket move TAT
 *       to now + tolerance (the bucket becomes exactly full, the same as zero
 *       tokens).  A request with cost > capacity is never charged: it is a
 *       malformed request, not traffic over the limit.  sliding_log keeps at
 *       most `limit` entries: a counted denial that would add an entry beyond
 *       that is merged into the newest entry, which moves to now (its units
 *       then count a little longer, never shorter).  Without count_denied the
 *       log can never exceed `limit` entries.
 *
 *   refund  fixed_window: only while the stored window is still the current
 *       one and charged_at lies in it.  sliding_window: from the current
 *       count if charged_at lies in the current window, from the previous
 *       count if it lies in the previous one (the weighting then gives back
 *       exactly the part that still counts).  sliding_log: units are removed
 *       newest first from the entries stamped at or before charged_at that
 *       are still inside the window.
 *       token_bucket: tokens += cost, capped at burst.  gcra/leaky_bucket:
 *       TAT -= cost * T, but never below now.  Bucket refunds are therefore
 *       an upper bound: units that would have been capped by a full bucket in
 *       between are not tracked.  A refund never exceeds full capacity.
 *
 *   rounding  retry_after_ms and reset_ms are rounded up to whole ms, so that
 *       retrying after retry_after_ms always succeeds (absent other traffic).
 *       gcra's remaining truncates toward zero like redis-cell.  gcra's
 *       emission interval is at least 1 ns (limits above 1e6 per ms are
 *       treated as 1e6 per ms).  sliding_window assumes the window after the
 *       current one has the current window's length when it predicts a
 *       retry or reset across the window boundary (calendar months vary).
 *
 *   redis-cell  gcra reports retry_after_ms = 0 when admitted (redis-cell
 *       says -1), per algo.h.  A denied request's reset never goes negative.
 *
 *   saturation  Admission compares cost <= limit - used, never a saturated
 *       sum.  Where a scaled product itself saturates (token_bucket's
 *       burst * period_ms or cost * period_ms beyond 9.2e18, gcra's TAT in
 *       ns is 128-bit, exact to the year 9999) results stay defined and never
 *       negative, but lose precision: e.g. such a token bucket admits only
 *       when full.
 */
#include "algo.h"

#include <string.h>
#include "arith.h"

#define NS_PER_MS 1000000

/* ---- names --------------------------------------------------------------- */

static const char *const kind_names[] = {
    NULL, "fixed_window", "sliding_window", "sliding_log",
    "token_bucket", "gcra", "leaky_bucket"
};
#define KIND_MAX ALGO_LEAKY_BUCKET

const char *rls__algo_name(int kind)
{
    if (kind < 1 || kind > KIND_MAX)
        return NULL;
    return kind_names[kind];
}

int rls__algo_from_name(const char *name)
{
    if (!name)
        return 0;
    for (int k = 1; k <= KIND_MAX; k++)
        if (strcmp(name, kind_names[k]) == 0)
            return k;
    return 0;
}

/* ---- shared pieces ------------------------------------------------------- */

/* A charge is applied when asked for, and the request was admitted or is
 * counted although denied (never for a cost no capacity admits). */
static int takes_charge(const algo_params *p, int charge, int ok, int never)
{
    return charge && (ok || (p->count_denied && !never));
}

/* Marks *st as written at now, fresh-equivalent from expires. */
static void stamp(algo_state *st, int64_t now, int64_t expires)
{
    st->present = 1;
    st->last_ms = now;
    st->expires_ms = expires;
}

static void meta_fill(algo_meta *m, int ok, int64_t capacity,
                      int64_t remaining, int64_t reset, int64_t retry)
{
    m->allowed = ok;
    m->capacity = capacity;
    m->used = sat_sub(capacity, remaining);
    m->remaining = remaining > 0 ? remaining : 0;
    m->reset_ms = reset > 0 ? reset : 0;
    m->retry_after_ms = retry;
    m->delay_ms = 0;
}

/* The window [start, end) in force at now and the one before it. */
typedef struct span {
    int64_t prev_start, start, end, next_end;
} span;

/*
 * fixed_window: the caller's aligned window, or with anchor_first_hit the
 * stored window [a, a + period) while now is inside it (or, should time
 * ever be behind it, still the stored one: never an early reset), else a
 * new window starting now.
 */
static inline span fixed_span(const algo_params *p, const algo_window *w,
                       const algo_state *st, int64_t now)
{
    span s;
    if (!p->anchor_first_hit) {
        s.prev_start = w->prev_start;
        s.start = w->start;
        s.end = w->end;
        s.next_end = w->next_end > w->end ? w->next_end
                                          : sat_add(w->end, sat_sub(w->end, w->start));
        return s;
    }
    s.start = now;
    if (st->present && now < sat_add(st->a, p->period_ms))
        s.start = st->a;
    s.prev_start = sat_sub(s.start, p->period_ms);
    s.end = sat_add(s.start, p->period_ms);
    s.next_end = sat_add(s.end, p->period_ms);
    return s;
}

/*
 * sliding_window with anchor_first_hit: windows of period_ms on the grid
 * a + k * period; the stored window (k = 0), the next one (k = 1, so the
 * stored count becomes the previous count), or after a longer idle period
 * a new grid starting now (both counts are zero by then).
 */
static span sliding_span(const algo_params *p, const algo_window *w,
                         const algo_state *st, int64_t now)
{
    span s;
    int64_t k = 2;
    if (!p->anchor_first_hit)
        return fixed_span(p, w, st, now);
    if (st->present)
        k = now <= st->a ? 0 : sat_sub(now, st->a) / p->period_ms;
    if (k == 0)
        s.start = st->a;
    else if (k == 1)
        s.start = sat_add(st->a, p->period_ms);
    else
        s.start = now;
    s.prev_start = sat_sub(s.start, p->period_ms);
    s.end = sat_add(s.start, p->period_ms);
    s.next_end = sat_add(s.end, p->period_ms);
    return s;
}

/* ---- fixed_window -------------------------------------------------------- */

static void fixed_decide(const algo_params *p, const algo_window *w,
                         algo_state *st, int64_t now, int64_t cost,
                         int charge, algo_meta *out)
{
    span s = fixed_span(p, w, st, now);
    int64_t count = st->present && st->a == s.start ? max64(st->b, 0) : 0;
    int never = cost > p->limit;
    int ok = !never && cost <= p->limit - count;
    int64_t until_end = sat_sub(s.end, now);

    if (takes_charge(p, charge, ok, never)) {
        count = sat_add(count, cost);
        st->a = s.start;
        st->b = count;
        st->c = 0;
        stamp(st, now, s.end);
    }
    meta_fill(out, ok, p->limit, sat_sub(p->limit, count),
              count > 0 ? until_end : 0, ok ? 0 : never ? -1 : until_end);
}

static void fixed_refund(const algo_params *p, const algo_window *w,
                         algo_state *st, int64_t now, int64_t charged_at,
                         int64_t cost)
{
    span s = fixed_span(p, w, st, now);
    if (st->a != s.start || charged_at < s.start)
        return;  /* the window it was charged in has ended */
    st->b = st->b > cost ? st->b - cost : 0;
    stamp(st, now, s.end);
}

/* ---- sliding_window ------------------------------------------------------ */

/* The current window with both counts, after rolling the stored state. */
typedef struct sliding {
    span s;
    int64_t len;   /* W: length of the current window */
    int64_t prev;  /* count of the window before */
    int64_t curr;  /* count of the current window */
} sliding;

static sliding sliding_load(const algo_params *p, const algo_window *w,
                            const algo_state *st, int64_t now)
{
    sliding z;
    z.s = sliding_span(p, w, st, now);
    z.len = max64(sat_sub(z.s.end, z.s.start), 1);
    z.prev = 0;
    z.curr = 0;
    if (st->present && st->a == z.s.start) {
        z.curr = max64(st->b, 0);
        z.prev = max64(st->c, 0);
    } else if (st->present && st->a == z.s.prev_start) {
        z.prev = max64(st->b, 0);
    }
    return z;
}

/* floor(prev * (W - elapsed) / W) + curr at t (elapsed clamped to [0, W]). */
static int64_t sliding_used(const sliding *z, int64_t t)
{
    int64_t e = min64(max64(sat_sub(t, z->s.start), 0), z->len);
    return sat_add(mul_frac(z->prev, z->len - e, z->len, NULL), z->curr);
}

/*
 * The earliest instant t >= now at which, with no further traffic, the
 * weighted count is at most x (x >= 0).  Inside the current window the
 * previous count decays: floor(prev * (W - e) / W) <= room holds exactly
 * when W - e <= ceil((room + 1) * W / prev) - 1.  If that is not reached
 * before the window ends, the next window (assumed of length W) has
 * prev' = curr, curr' = 0 and the same rule applies.
 */
static int64_t sliding_earliest(const sliding *z, int64_t now, int64_t x)
{
    int64_t m;
    if (sliding_used(z, now) <= x)
        return now;
    if (z->curr <= x) {
        /* here prev >= weighted > x - curr, so room + 1 <= prev, and
         * m >= 0; m == 0 means the boundary, where prev' = curr <= x */
        m = mul_frac_ceil(z->len, x - z->curr + 1, z->prev) - 1;
        return sat_sub(z->s.end, m);
    }
    m = mul_frac_ceil(z->len, x + 1, z->curr) - 1;  /* x + 1 <= curr */
    return sat_add(z->s.end, z->len - m);
}

static void sliding_store(algo_state *st, const sliding *z, int64_t now)
{
    st->a = z->s.start;
    st->b = z->curr;
    st->c = z->prev;
    /* curr counts until the end of the next window (whose length may
     * differ: months, DST days), prev until this end */
    stamp(st, now, z->curr > 0 ? z->s.next_end : z->s.end);
}

static void sliding_decide(const algo_params *p, const algo_window *w,
                           algo_state *st, int64_t now, int64_t cost,
                           int charge, algo_meta *out)
{
    sliding z = sliding_load(p, w, st, now);
    int never = cost > p->limit;
    int ok = !never && cost <= p->limit - sliding_used(&z, now);
    int64_t retry = 0;

    if (takes_charge(p, charge, ok, never)) {
        z.curr = sat_add(z.curr, cost);
        sliding_store(st, &z, now);
    }
    if (!ok && never)
        retry = -1;
    else if (!ok)
        retry = sat_sub(sliding_earliest(&z, now, p->limit - cost), now);
    meta_fill(out, ok, p->limit, sat_sub(p->limit, sliding_used(&z, now)),
              sat_sub(sliding_earliest(&z, now, 0), now), retry);
}

static void sliding_refund(const algo_params *p, const algo_window *w,
                           algo_state *st, int64_t now, int64_t charged_at,
                           int64_t cost)
{
    sliding z = sliding_load(p, w, st, now);
    if (charged_at >= z.s.start)
        z.curr = z.curr > cost ? z.curr - cost : 0;
    else if (charged_at >= z.s.prev_start)
        z.prev = z.prev > cost ? z.prev - cost : 0;
    else
        return;  /* charged before the previous window: no longer counts */
    sliding_store(st, &z, now);
}

/* ---- sliding_log --------------------------------------------------------- */

static int64_t log_time(const algo_state *st, size_t i)
{
    return get_le64(st->log + i * ALGO_LOG_ENTRY);
}

static int64_t log_units(const algo_state *st, size_t i)
{
    return max64(get_le64(st->log + i * ALGO_LOG_ENTRY + 8), 0);
}

static void log_put(algo_state *st, size_t i, int64_t t, int64_t units)
{
    put_le64(st->log + i * ALGO_LOG_ENTRY, t);
    put_le64(st->log + i * ALGO_LOG_ENTRY + 8, units);
}

static size_t log_count(const algo_state *st)
{
    return st->present ? st->log_len / ALGO_LOG_ENTRY : 0;
}

/* Units inside (now - W, now] and the time of the newest such entry. */
static int64_t log_used(const algo_state *st, int64_t cutoff, int64_t *newest)
{
    int64_t used = 0;
    size_t n = log_count(st);
    *newest = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        int64_t t = log_time(st, i);
        if (t > cutoff && log_units(st, i) > 0) {
            used = sat_add(used, log_units(st, i));
            *newest = max64(*newest, t);
        }
    }
    return used;
}

/* Removes entries outside the window and empty ones, keeping the order;
 * updates a and log_len and marks the state present (it is being written). */
static void log_compact(algo_state *st, int64_t cutoff)
{
    size_t n = log_count(st), k = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t t = log_time(st, i), u = log_units(st, i);
        if (t > cutoff && u > 0)
            log_put(st, k++, t, u);
    }
    st->log_len = k * ALGO_LOG_ENTRY;
    st->a = (int64_t)k;
    st->present = 1;
}

/* Appends (now, cost), merging into a newest entry of the same instant; a
 * counted denial that would exceed `limit` entries merges into the newest
 * entry and moves it to now.  Call after log_compact. */
static void log_append(algo_state *st, const algo_params *p, int64_t now,
                       int64_t cost)
{
    size_t n = st->log_len / ALGO_LOG_ENTRY;
    if (n > 0 && (log_time(st, n - 1) == now || (int64_t)n >= p->limit)) {
        log_put(st, n - 1, now, sat_add(log_units(st, n - 1), cost));
        return;
    }
    log_put(st, n, now, cost);
    st->log_len = (n + 1) * ALGO_LOG_ENTRY;
    st->a = (int64_t)(n + 1);
}

/* Time until `excess` units have left the window, walking oldest first. */
static int64_t log_wait(const algo_state *st, int64_t cutoff, int64_t now,
                        int64_t window, int64_t excess)
{
    int64_t freed = 0;
    size_t n = log_count(st);
    for (size_t i = 0; i < n; i++) {
        int64_t t = log_time(st, i);
        if (t <= cutoff)
            continue;
        freed = sat_add(freed, log_units(st, i));
        if (freed >= excess)
            return max64(sat_sub(sat_add(t, window), now), 1);
    }
    return window;  /* unreachable for a sorted log and cost <= limit */
}

static void log_decide(const algo_params *p, algo_state *st, int64_t now,
                       int64_t cost, int charge, algo_meta *out)
{
    int64_t cutoff = sat_sub(now, p->period_ms), newest;
    int64_t used = log_used(st, cutoff, &newest);
    int never = cost > p->limit;
    int ok = !never && cost <= p->limit - used;
    int64_t retry = 0, reset = 0;

    if (takes_charge(p, charge, ok, never)) {
        log_compact(st, cutoff);
        log_append(st, p, now, cost);
        used = log_used(st, cutoff, &newest);
        stamp(st, now, sat_add(newest, p->period_ms));
    }
    if (used > 0)
        reset = sat_sub(sat_add(newest, p->period_ms), now);
    if (!ok)
        retry = never ? -1
                      : log_wait(st, cutoff, now, p->period_ms,
                                 sat_sub(sat_add(used, cost), p->limit));
    meta_fill(out, ok, p->limit, sat_sub(p->limit, used), reset, retry);
}

static void log_refund(const algo_params *p, algo_state *st, int64_t now,
                       int64_t charged_at, int64_t cost)
{
    int64_t cutoff = sat_sub(now, p->period_ms), newest;
    size_t n = log_count(st);
    /* Newest first among the units charged at or before charged_at that
     * still count: a reservation finds its own entry, a plain refund at
     * now takes back the most recent units. */
    for (size_t i = n; i-- > 0 && cost > 0;) {
        int64_t u = log_units(st, i), t = log_time(st, i);
        if (t > charged_at || t <= cutoff)
            continue;
        log_put(st, i, t, u - min64(u, cost));
        cost -= min64(u, cost);
    }
    log_compact(st, cutoff);
    log_used(st, cutoff, &newest);
    stamp(st, now, st->a > 0 ? sat_add(newest, p->period_ms) : now);
}

/* ---- token_bucket -------------------------------------------------------- */

/* Tokens scaled by period_ms at now: the stored level (clamped to the
 * current capacity, should the rule have shrunk) refilled by
 * elapsed * limit, or a full bucket for a fresh key. */
static int64_t token_level(const algo_params *p, const algo_state *st,
                           int64_t now, int64_t cap)
{
    int64_t tokens;
    if (!st->present)
        return cap;
    tokens = min64(max64(st->a, 0), cap);
    if (now > st->b)
        tokens = min64(cap, sat_add(tokens, sat_mul(now - st->b, p->limit)));
    return tokens;
}

static void token_store(const algo_params *p, algo_state *st, int64_t now,
                        int64_t tokens, int64_t cap)
{
    st->a = tokens;
    st->b = now;
    st->c = 0;
    stamp(st, now, sat_add(now, ceil_div(cap - tokens, p->limit)));
}

static void token_decide(const algo_params *p, algo_state *st, int64_t now,
                         int64_t cost, int charge, algo_meta *out)
{
    int64_t cap = sat_mul(p->burst, p->period_ms);
    int64_t need = sat_mul(cost, p->period_ms);
    int64_t tokens = token_level(p, st, now, cap);
    int never = cost > p->burst;
    int ok = !never && tokens >= need;
    int64_t retry = 0;

    if (takes_charge(p, charge, ok, never)) {
        tokens = ok ? tokens - need : 0;  /* a counted denial drains */
        token_store(p, st, now, tokens, cap);
    }
    if (!ok)
        retry = never ? -1 : ceil_div(need - tokens, p->limit);
    meta_fill(out, ok, p->burst, tokens / p->period_ms,
              ceil_div(cap - tokens, p->limit), retry);
}

static void token_refund(const algo_params *p, algo_state *st, int64_t now,
                         int64_t cost)
{
    int64_t cap = sat_mul(p->burst, p->period_ms);
    int64_t tokens = token_level(p, st, now, cap);
    tokens = min64(cap, sat_add(tokens, sat_mul(cost, p->period_ms)));
    token_store(p, st, now, tokens, cap);
}

/* ---- gcra and leaky_bucket ----------------------------------------------- */

/*
 * Times in ns over the accepted range (up to year 9999, 2.5e20 ns) do not
 * fit in int64, so gcra computes in 128 bits, exactly, and stores TAT as
 * whole ms (a) plus the ns within that ms (b), marked by c = GCRA_SPLIT.  A
 * state written before (c = 0) holds TAT in ns in a, which is still read.
 */
__extension__ typedef __int128 i128;
#define GCRA_SPLIT 1
/* 2^100 ns (4e13 years): products are capped there, far beyond any time,
 * so sums of them stay far below the 2^127 of i128. */
#define GCRA_NS_CAP ((i128)1 << 100)

/* a * b for 0 <= a, b, capped at GCRA_NS_CAP (monotone, so comparisons
 * between capped values keep their sense). */
static i128 mul_cap(i128 a, i128 b)
{
    if (a == 0 || b == 0)
        return 0;
    if (a > GCRA_NS_CAP / b)
        return GCRA_NS_CAP;
    return a * b;
}

static i128 max128(i128 a, i128 b)
{
    return a > b ? a : b;
}

/* x clamped to the int64 range. */
static int64_t clamp64(i128 x)
{
    if (x > INT64_MAX)
        return INT64_MAX;
    if (x < INT64_MIN)
        return INT64_MIN;
    return (int64_t)x;
}

/* ns rounded up to whole ms, clamped to int64. */
static int64_t ceil_ms128(i128 ns)
{
    i128 q = ns / NS_PER_MS;
    if (ns > 0 && ns % NS_PER_MS != 0)
        q++;
    return clamp64(q);
}

/* Emission interval T in ns (at least 1) and tolerance burst * T. */
typedef struct gcra {
    i128 t_ns, tol_ns, now_ns, tat;
} gcra;

static i128 gcra_stored_tat(const algo_state *st)
{
    if (st->c == GCRA_SPLIT)
        return (i128)st->a * NS_PER_MS + st->b;
    return st->a;  /* a state of an older version: TAT in ns */
}

static void gcra_store(algo_state *st, i128 tat, int64_t now)
{
    i128 ms = tat / NS_PER_MS, ns = tat % NS_PER_MS;
    if (ns < 0) {
        ms--;
        ns += NS_PER_MS;
    }
    if (ms > INT64_MAX) {  /* beyond any time: a bucket full for ever */
        ms = INT64_MAX;
        ns = 0;
    }
    st->a = (int64_t)ms;
    st->b = (int64_t)ns;
    st->c = GCRA_SPLIT;
    stamp(st, now, ceil_ms128(tat));
}

static gcra gcra_load(const algo_params *p, const algo_state *st, int64_t now)
{
    gcra g;
    g.t_ns = max128((i128)p->period_ms * NS_PER_MS / p->limit, 1);
    g.tol_ns = mul_cap(p->burst, g.t_ns);
    g.now_ns = (i128)now * NS_PER_MS;
    /* a TAT in the past means an empty bucket: the same as now */
    g.tat = st->present ? max128(gcra_stored_tat(st), g.now_ns) : g.now_ns;
    return g;
}

/*
 * redis-cell's CL.THROTTLE with max_burst = burst - 1: the request is
 * admitted when max(TAT, now) + cost*T - tolerance <= now; remaining is
 * (tolerance - (TAT - now)) / T truncated, reset is TAT - now and retry the
 * distance to the allow-at instant, both rounded up to ms.  leaky_bucket
 * adds the shaping delay TAT_before - now of an admitted request.  Every
 * operand is at most now + 2^101 ns: no overflow.
 */
static void gcra_decide(const algo_params *p, algo_state *st, int64_t now,
                        int64_t cost, int charge, int leaky, algo_meta *out)
{
    gcra g = gcra_load(p, st, now);
    i128 inc = mul_cap(cost, g.t_ns);
    i128 before = g.tat, ttl = g.tat - g.now_ns;
    int64_t retry = 0;
    int never = cost > p->burst;
    int ok = !never && inc <= g.tol_ns - ttl;

    if (takes_charge(p, charge, ok, never)) {
        /* a counted denial fills the bucket exactly (TAT = now + tol) */
        g.tat = ok ? g.tat + inc : max128(g.tat, g.now_ns + g.tol_ns);
        gcra_store(st, g.tat, now);
    }
    ttl = g.tat - g.now_ns;  /* >= 0: tat >= now_ns */
    if (!ok)  /* until TAT + inc - tolerance */
        retry = never ? -1 : ceil_ms128(inc - (g.tol_ns - ttl));
    meta_fill(out, ok, p->burst, clamp64((g.tol_ns - ttl) / g.t_ns),
              ceil_ms128(ttl), retry);
    if (leaky && ok)
        out->delay_ms = ceil_ms128(before - g.now_ns);
}

static void gcra_refund(const algo_params *p, algo_state *st, int64_t now,
                        int64_t cost)
{
    gcra g = gcra_load(p, st, now);
    gcra_store(st, max128(g.now_ns, g.tat - mul_cap(cost, g.t_ns)), now);
}

/* ---- entry points -------------------------------------------------------- */

/* Parameters, window and state a call can work with; 0 if valid. */
static inline int check_args(const algo_params *p, const algo_window *w,
                      const algo_state *st, int64_t now, int64_t cost)
{
    if (!p || !st || !rls__algo_name(p->kind) || p->limit < 1 || p->burst < 1 ||
        p->period_ms < 1 || cost < 1)
        return -1;
    if ((p->kind == ALGO_FIXED_WINDOW || p->kind == ALGO_SLIDING_WINDOW) &&
        !p->anchor_first_hit &&
        (!w || w->prev_start >= w->start || now < w->start || now >= w->end))
        return -1;
    if (p->kind == ALGO_SLIDING_LOG &&
        (p->limit > ALGO_SLIDING_LOG_MAX ||
         (st->present && (st->log_len % ALGO_LOG_ENTRY != 0 ||
                          (st->log_len > 0 && !st->log)))))
        return -1;
    return 0;
}

/* Contract in algo.h.  Also -1 (nothing modified) for an aligned
 * fixed/sliding window that does not contain now, and for a sliding_log
 * charge without log_cap >= log_len + ALGO_LOG_ENTRY. */
int rls__algo_decide(const algo_params *p, const algo_window *w, algo_state *st,
                int64_t now, int64_t cost, int charge, algo_meta *out)
{
    if (!out || check_args(p, w, st, now, cost) != 0)
        return -1;
    if (p->kind == ALGO_SLIDING_LOG && charge &&
        (!st->log || st->log_cap < (st->present ? st->log_len : 0) +
                                       ALGO_LOG_ENTRY))
        return -1;  /* no room for the entry a charge may append */

    switch (p->kind) {
    case ALGO_FIXED_WINDOW:
        fixed_decide(p, w, st, now, cost, charge, out);
        break;
    case ALGO_SLIDING_WINDOW:
        sliding_decide(p, w, st, now, cost, charge, out);
        break;
    case ALGO_SLIDING_LOG:
        log_decide(p, st, now, cost, charge, out);
        break;
    case ALGO_TOKEN_BUCKET:
        token_decide(p, st, now, cost, charge, out);
        break;
    default:
        gcra_decide(p, st, now, cost, charge, p->kind == ALGO_LEAKY_BUCKET,
                    out);
        break;
    }
    return 0;
}

/* Contract in algo.h.  charged_at later than now is taken as now; the
 * recorded last_ms never moves back. */
int rls__algo_refund(const algo_params *p, const algo_window *w, algo_state *st,
                int64_t now, int64_t charged_at, int64_t cost)
{
    int64_t last;
    if (check_args(p, w, st, now, cost) != 0)
        return -1;
    if (!st->present)
        return 0;  /* nothing was charged that still counts */
    last = st->last_ms;
    if (charged_at > now)
        charged_at = now;

    switch (p->kind) {
    case ALGO_FIXED_WINDOW:
        fixed_refund(p, w, st, now, charged_at, cost);
        break;
    case ALGO_SLIDING_WINDOW:
        sliding_refund(p, w, st, now, charged_at, cost);
        break;
    case ALGO_SLIDING_LOG:
        log_refund(p, st, now, charged_at, cost);
        break;
    case ALGO_TOKEN_BUCKET:
        token_refund(p, st, now, cost);
        break;
    default:
        gcra_refund(p, st, now, cost);
        break;
    }
    if (st->last_ms < last)
        st->last_ms = last;  /* the recorded time never goes back */
    return 0;
}
