/*
 * memlane.c - the memory-class fast lane: rls_check of an action whose
 * limits are all `durability: memory`, for a key the fast path's trust
 * covers (memclass.c has the design), without the pipeline's general
 * stages.
 *
 * The pipeline's fast path (rls__mem_fast) finds again, at every check,
 * what does not change between two checks of one action: the action
 * (looked up by name twice), its limits for a key without policy rows
 * (the tier resolved against the patterns), whether they are all
 * memory-class, whether the commit would be fsynced, the window each
 * limit is in; and it decides in two passes, copies the states into a
 * 29 kB key context, allocates a sliding log's buffer, and counts the
 * metrics and stats by looking the action up by name.  The lane keeps
 * per handle, for the last few actions, what the rules make of them,
 * valid while the handle's rules (pointer and generation) and patterns
 * are the same: a check is then a name compare, the key's length (and,
 * for an IP or email action, a quick test that it is already in its
 * normal form: core/keynorm.c), the trust's test (memtrust.c), the table's
 * lock, the one-limit decision (core/decide.c rls__decide_one, proven
 * equal to the general one) and the counts through remembered indexes.
 *
 * The answers, the states written, the stats, key stats and metrics are
 * the fast path's, case for case; whatever the lane does not cover it
 * leaves, before it has done anything, to the pipeline (which then runs
 * as without the lane): invalid arguments, an action that is not all
 * memory-class, a blocked tier, a key the trust does not cover, a table
 * not open yet or due for its look (memclass.c), a lock the table
 * refuses, a limit core refuses, a decision that imposes a penalty
 * block.  Only a failure after the first write (a state the table cannot
 * take) is answered here, as the fast path answers it.
 *
 * The lane is the handle's: used under the handle's serialisation, as
 * the trust is (memclass.c).
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "events.h"
#include "keynorm.h"
#include "group.h"
#include "memclass.h"

#define LANE_ACTS 4                   /* actions remembered per handle */
#define LANE_MAX RLS__SHM_TXN_MAX     /* limits of one check */
#define LANE_LOG_CAP ((RULES_MEMORY_LOG_MAX + 2) * ALGO_LOG_ENTRY)

/* What the rules make of one action. */
struct lane_act {
    /* valid while the handle's rules and patterns are these: the rule
     * set by its serial too (its pointers are kept here: a rule set freed
     * and reloaded at the same address, of the same generation, after a
     * fork or a copy rolled back, is another) */
    const ruleset *rules;
    uint64_t serial;
    int64_t rules_gen;
    const assign_cand *patterns;
    int npatterns;
    char name[RLS_NAME_MAX + 1];
    int serves;                       /* 0: the pipeline answers the action */
    const rule_action *act;
    int act_idx;                      /* its index in the rules (the trust's) */
    int plain_keys;                   /* a string action: keys are their own form */
    int by_key;                       /* a pattern may give a key a tier: the limits
                                       * are resolved at each check */
    int behaviour;                    /* without by_key: the tier's (TIER_NORMAL,
                                       * TIER_UNLIMITED) */
    int n;                            /* without by_key: the limits */
    resolved_limit rl[LANE_MAX];
    decide_wcache wc;                 /* the one limit's window (n == 1) */
    const rule_limit *wc_def;         /* ... of this limit */
    rls__hint met_hint, stat_hint;    /* where its counts were last (metrics.c, gc.c) */
};

struct rls_memlane {
    struct lane_act a[LANE_ACTS];
    int last;                         /* the entry found last */
    unsigned next;                    /* the entry a new action takes */
    char key[RLS_KEY_MAX_LIMIT + 64]; /* a key normalised */
    unsigned char log[LANE_MAX][LANE_LOG_CAP];   /* the states' logs */
    uint64_t served;                  /* checks answered (tests) */
    uint64_t timed;                   /* ... of which timed (tests) */
    uint64_t prepared;                /* entries made (tests) */
};

int rls__memlane_enabled = 1;

uint64_t rls__memlane_served(rls_db *db)
{
    struct rls_memlane **slot = rls__mem_lane_slot(db);
    return slot && *slot ? (*slot)->served : 0;
}

uint64_t rls__memlane_timed(rls_db *db)
{
    struct rls_memlane **slot = rls__mem_lane_slot(db);
    return slot && *slot ? (*slot)->timed : 0;
}

uint64_t rls__memlane_prepared(rls_db *db)
{
    struct rls_memlane **slot = rls__mem_lane_slot(db);
    return slot && *slot ? (*slot)->prepared : 0;
}

void rls__memlane_free(struct rls_memlane *l)
{
    free(l);
}

/* Are the limits rl[0..n) ones the lane serves: one or more, all
 * memory-class, under a tier that is not blocked? */
static int servable(const resolved_limit *rl, int n, int behaviour)
{
    if (n < 1 || n > LANE_MAX || behaviour == TIER_BLOCKED)
        return 0;
    for (int i = 0; i < n; i++)
        if (!rls__mem_limit(rl[i].def))
            return 0;
    return 1;
}

/* The tier of key and the limits it gives, as keyctx.c resolves them for
 * a key without policy rows: rl's count, or -1 when more than LANE_MAX. */
static int resolve(const rls_db *db, const struct lane_act *e, const char *key, size_t keylen,
                   int64_t now, resolved_limit *rl, int *behaviour)
{
    const assign_cand *const lists[1] = {db->rc.patterns};
    const int counts[1] = {db->rc.npatterns};
    tier_choice tier;
    rls__resolve_tier(db->rc.rules, e->act->name, key, keylen, lists, counts, 1, now, &tier);
    *behaviour = TIER_NORMAL;
    if (tier.def && tier.def->blocked)
        *behaviour = TIER_BLOCKED;
    else if (tier.def && tier.def->unlimited)
        *behaviour = TIER_UNLIMITED;
    return rls__resolve_limits(e->act, tier.tier, NULL, 0, now, rl, LANE_MAX);
}

/* Entry e made for action (alen bytes) under the handle's rules. */
static void prepare(rls_db *db, struct lane_act *e, const char *action, size_t alen)
{
    const ruleset *rs = db->rc.rules;
    memset(e, 0, sizeof *e);
    e->rules = rs;
    e->serial = rls__ruleset_serial(db->rc.rules);
    e->rules_gen = db->rc.rules_gen;
    e->patterns = db->rc.patterns;
    e->npatterns = db->rc.npatterns;
    memcpy(e->name, action, alen + 1);
    e->met_hint.i = e->stat_hint.i = -1;
    if (!(e->act = rls__ruleset_action(rs, action)))
        return;   /* the pipeline says it is not defined */
    e->act_idx = (int)(e->act - rs->actions);
    e->plain_keys = e->act->key_kind == KEY_STRING;
    /* a pattern of this action or of every action, of a tier that
     * exists, may match a key: without one every key has the default
     * tier (resolve.c), whatever the key and the time */
    for (int i = 0; i < db->rc.npatterns; i++) {
        const assign_cand *c = &db->rc.patterns[i];
        if ((c->action[0] == '\0' || strcmp(c->action, action) == 0) &&
            rls__ruleset_tier(rs, c->tier))
            e->by_key = 1;
    }
    if (e->by_key) {
        e->serves = rls__mem_action_has(rs, action);   /* each key's limits are tested */
        return;
    }
    e->n = resolve(db, e, "", 0, 0, e->rl, &e->behaviour);
    e->serves = servable(e->rl, e->n, e->behaviour);
}

/* Is e made under the handle's rules and patterns as they are now? */
static inline int entry_current(const rls_db *db, const struct lane_act *e)
{
    return e->rules == db->rc.rules && e->serial == db->rc.rules->serial_ &&
           e->rules_gen == db->rc.rules_gen && e->patterns == db->rc.patterns &&
           e->npatterns == db->rc.npatterns;
}

/* strcmp(name, action) == 0 for the short names of actions, without
 * strcmp's call: a check compares one name, of a few bytes. */
static inline int name_is(const char *name, const char *action)
{
    size_t i = 0;
    while (name[i] == action[i]) {
        if (name[i] == '\0')
            return 1;
        i++;
    }
    return 0;
}

/* find() past the entry found last: another entry, or one made. */
static struct lane_act *find_other(rls_db *db, struct rls_memlane *l, const char *action)
{
    for (int k = 1; k < LANE_ACTS; k++) {
        int i = (l->last + k) % LANE_ACTS;
        struct lane_act *e = &l->a[i];
        if (entry_current(db, e) && name_is(e->name, action)) {
            l->last = i;
            return e;
        }
    }
    size_t alen = strnlen(action, RLS_NAME_MAX + 1);
    if (alen == 0 || alen > RLS_NAME_MAX)
        return NULL;
    l->last = (int)(l->next++ % LANE_ACTS);
    prepare(db, &l->a[l->last], action, alen);
    l->prepared++;
    return &l->a[l->last];
}

/* The entry of action under the handle's rules, made when missing; NULL
 * for a name no action can have.  The entry found last first (the lane
 * asks it itself: a check of the action of the check before, the usual
 * case, is then a few compares without a call). */
static struct lane_act *find(rls_db *db, struct rls_memlane *l, const char *action)
{
    struct lane_act *e = &l->a[l->last];
    if (entry_current(db, e) && name_is(e->name, action))
        return e;
    return find_other(db, l, action);
}

/* The key as the action normalises it: key itself when it is its own
 * normal form, else written into the lane's buffer; NULL when it is not
 * valid (the pipeline says why). */
static const char *norm_key(const rls_db *db, struct rls_memlane *l, const struct lane_act *e,
                            const char *key, size_t *len)
{
    const rule_action *a = e->act;
    const char *why = "";
    if (e->plain_keys || rls__key_is_normal(a->key_kind, a->ipv4_prefix, a->ipv6_prefix, key,
                                            *len))
        return key;
    int kl = rls__key_normalize(a->key_kind, a->ipv4_prefix, a->ipv6_prefix, key, *len, l->key,
                                sizeof l->key, &why);
    if (kl < 0 || kl > db->ident.opt.max_key_len)
        return NULL;
    *len = (size_t)kl;
    return l->key;
}

/* State i (st, its log buffer set by log_set and read by the table) as
 * memclass.c's ctx_take keeps it: a log only for a sliding_log limit;
 * item i of the decision made of it. */
static inline void log_set(struct rls_memlane *l, int i, algo_state *st)
{
    st->log = l->log[i];   /* the read sets every other field */
    st->log_cap = LANE_LOG_CAP;
}

static inline void item_set(const resolved_limit *rl, algo_state *st, decide_item *item)
{
    if (rl->def->algorithm != ALGO_SLIDING_LOG) {
        st->log = NULL;
        st->log_len = st->log_cap = 0;
    }
    item->rl = rl;    /* meta, changed, denied: the decision's */
    item->st = st;
    item->floor_ms = 0;
    item->sib = NULL;
    item->nsib = 0;
}

/* Under the table's locks: state i read into st, item i of the decision
 * made of it.  0, or -1 for a state the table refuses. */
static int take(struct rls_memlane *l, const rls__shm_txn *tx, int i, const resolved_limit *rl,
                algo_state *st, decide_item *item)
{
    log_set(l, i, st);
    if (rls__shm_read(tx, (size_t)i, st) != RLS_OK)
        return -1;
    item_set(rl, st, item);
    return 0;
}

/* The check of one limit under a normal tier (the usual memory check):
 * its entry locked, read, decided by rls__decide_one, written when
 * changed, unlocked.  RLS_OK; the table's refusal of the write (answered
 * here, as the fast path answers it); or -1 for the pipeline, nothing
 * written (a lock the table refuses, a losing transaction's hold, a state
 * the table refuses, a limit core refuses, a penalty block to write). */
static int charge_one(struct rls_memlane *l, struct lane_act *e, rls__shm *t,
                      const resolved_limit *rl, const char *key, size_t klen, int64_t now,
                      int64_t mono, int64_t cost, algo_state *st, decide_item *item,
                      rls_result *res)
{
    rls__shm_item it = {rl->def->id, rl->def->algorithm, key, klen};
    rls__shm_txn tx;
    decide_out out;
    log_set(l, 0, st);
    if (rls__shm_lock_read1(t, &it, now, mono, &tx, st) != RLS_OK)
        return -1;   /* no lock held */
    item_set(rl, st, item);
    if (e->wc_def != rl->def) {   /* another tier's limit: another window */
        memset(&e->wc, 0, sizeof e->wc);
        e->wc_def = rl->def;
    }
    if (rls__decide_one(item, now, cost, &e->wc, res, &out) != 0 || out.penalty >= 0) {
        rls__shm_unlock(&tx);
        return -1;
    }
    int rc = item->changed ? rls__shm_write(&tx, 0, st) : RLS_OK;
    rls__shm_unlock(&tx);
    return rc;
}

/* charge_one of n limits rl[0..n) under any tier the lane serves, by
 * the general decision; a write the table refuses stops the writes after
 * it (answered here, as the fast path answers it). */
static int charge(struct rls_memlane *l, rls__shm *t, const resolved_limit *rl, int n,
                  int behaviour, const char *key, size_t klen, int64_t now, int64_t mono,
                  int64_t cost, algo_state *st, decide_item *items, rls_result *res)
{
    rls__shm_item it[LANE_MAX];
    rls__shm_txn tx;
    decide_out out;
    for (int i = 0; i < n; i++) {
        it[i].lid = rl[i].def->id;
        it[i].kind = rl[i].def->algorithm;
        it[i].key = key;
        it[i].key_len = klen;
    }
    if (rls__shm_lock(t, it, (size_t)n, now, &tx) != RLS_OK)
        return -1;
    int rc = rls__shm_held(&tx, mono) ? -1 : 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = take(l, &tx, i, &rl[i], &st[i], &items[i]);
    if (rc != 0 ||
        rls__decide_check(items, n, behaviour, now, 0, cost, 1, res, &out) != 0 ||
        out.penalty >= 0) {
        rls__shm_unlock(&tx);
        return -1;
    }
    for (int i = 0; i < n && rc == RLS_OK; i++)
        rc = items[i].changed ? rls__shm_write(&tx, (size_t)i, &st[i]) : RLS_OK;
    rls__shm_unlock(&tx);
    return rc;
}

int rls__mem_lane_check(rls_db *db, const char *action, const char *key, int64_t cost,
                        int64_t now, rls_result *res, int *rcp)
{
    struct rls_memlane **slot, *l;
    struct lane_act *e;
    if (!rls__memlane_enabled || !db || !action || !key || !res || cost < 1 || cost > RLS_COST_MAX ||
        now < RLS_TIME_MIN || now > RLS_TIME_MAX || !(slot = rls__mem_lane_slot(db)) ||
        rls__db_usable(db) != RLS_OK || !db->rc.rules || db->rc.rules_gen < 0 ||
        !db->deny.deny_gen)
        return 0;
    if (!(l = *slot) && !(l = *slot = calloc(1, sizeof *l)))
        return 0;
    e = &l->a[l->last];
    if (!entry_current(db, e) || !name_is(e->name, action))
        e = find_other(db, l, action);
    if (!e || !e->serves)
        return 0;
    /* the latency of one check in RLS_MET_LANE_SAMPLE (events.h); the
     * trust's age and holds by the coarse clock when not timed */
    int64_t t0 = rls__metrics_lane_timed(db, action, &e->met_hint) ? rls__metrics_clock()
                                                                   : RLS_MET_UNTIMED;
    int64_t mono = t0 >= 0 ? t0 / 1000000 : rls__mem_coarse_ms();
    size_t klen = strlen(key), nlen = klen;
    const char *nkey;
    if (klen == 0 || klen > (size_t)db->ident.opt.max_key_len ||
        !(nkey = norm_key(db, l, e, key, &nlen)))
        return 0;
    rls__shm *t = rls__mem_lane_open(db, e->act_idx, key, klen, now, mono);
    resolved_limit own[LANE_MAX];
    const resolved_limit *rl = e->rl;
    int n = e->n, behaviour = e->behaviour;
    if (!t)
        return 0;
    if (e->by_key) {   /* the key's tier, by the patterns */
        n = resolve(db, e, nkey, nlen, now, own, &behaviour);
        if (!servable(own, n, behaviour))
            return 0;
        rl = own;
    }

    algo_state st[LANE_MAX];
    decide_item items[LANE_MAX];
    int rc = n == 1 && behaviour == TIER_NORMAL
                 ? charge_one(l, e, t, rl, nkey, nlen, now, mono, cost, st, items, res)
                 : charge(l, t, rl, n, behaviour, nkey, nlen, now, mono, cost, st, items, res);
    if (rc < 0)
        return 0;
    db->errmsg[0] = '\0';
    if (rc) {   /* the pipeline's result stage: the failure policy */
        rc = rls__mem_lane_failed(db, rc);
        int failure = rls__check_is_storage_failure(rc);
        rls__decide_degraded(res, failure && rls__check_policy_allows(db, action));
        if (failure)   /* else refused input: not counted (metrics.c) */
            rls__metrics_lane_count(db, action, &e->met_hint, res, NULL, NULL, 0, t0);
        *rcp = rc;
        return 1;
    }
    rls__stats_count_hint(db, e->name, now, res->allowed, &e->stat_hint);
    /* a check admitted with less than a quarter of its limit used is not
     * under pressure (core/pressure.c: half): keystats.c would note nothing */
    if (!res->allowed || res->limit <= 0 || res->limit - res->remaining >= res->limit / 4)
        rls__keystat_note(db, e->name, nkey, nlen, res, now);
    rls__metrics_lane(db, action, &e->met_hint, res, items, rl, n, t0);
    l->served++;
    l->timed += t0 != RLS_MET_UNTIMED;
    *rcp = RLS_OK;
    return 1;
}

/* ---- a thread-safe handle ---------------------------------------------- */

/*
 * A thread-safe handle's checks queue for a leader that runs them under
 * the handle lock (group.c): a hand-off between threads per check, which
 * a memory check (a few hundred nanoseconds) cannot afford (8 threads
 * shared 270k checks/s that way, where one handle of one thread makes
 * several million).  So a check of an action the lane serves takes the
 * handle lock itself and runs the lane; anything the lane declines goes
 * to the group as before, with nothing done.
 *
 * Which actions the lane serves is remembered per thread, a hint and
 * nothing more: wrong, it costs a lock taken in vain or a check through a
 * group, never a different answer.  An action the lane declined (durable,
 * mixed, a blocked tier...) is tried again every LANE_PROBE-th check of
 * this thread; a try never waits for the handle lock (a failed trylock
 * leaves the try to the next check), so the checks of a durable action
 * keep queueing for group commit instead of waiting for the lock behind
 * a leader's transaction; a rule change that makes an action memory-only
 * is so seen within LANE_PROBE checks.
 */
#define LANE_HINTS 4
#define LANE_PROBE 64

struct lane_hint {
    const rls_db *db;                 /* NULL: unused */
    char name[RLS_NAME_MAX + 1];
    int serves;                       /* the lane served its last check here */
    unsigned skip;                    /* declined: checks until the next try */
};

static _Thread_local struct lane_hint hints[LANE_HINTS];
static _Thread_local unsigned hint_next;

static struct lane_hint *hint_of(const rls_db *db, const char *action)
{
    for (int i = 0; i < LANE_HINTS; i++)
        if (hints[i].db == db && strcmp(hints[i].name, action) == 0)
            return &hints[i];
    size_t alen = strnlen(action, RLS_NAME_MAX + 1);
    if (alen == 0 || alen > RLS_NAME_MAX)
        return NULL;   /* the pipeline's error */
    struct lane_hint *h = &hints[hint_next++ % LANE_HINTS];
    h->db = db;
    memcpy(h->name, action, alen + 1);
    h->serves = 0;
    h->skip = 0;      /* tried at once */
    return h;
}

/* Does the lane serve action's checks under the handle's rules (some keys
 * of it, for an action whose tiers go by key)?  1 while the handle has
 * not loaded them yet.  The handle lock held. */
static int action_serves(rls_db *db, const char *action)
{
    struct rls_memlane **slot = rls__mem_lane_slot(db);
    struct lane_act *e;
    if (!slot)
        return 0;   /* no memory class here */
    if (!db->rc.rules || (!*slot && !(*slot = calloc(1, sizeof **slot))))
        return 1;
    return (e = find(db, *slot, action)) && e->serves;
}

int rls__mem_lane_shared(rls_db *db, const char *action, const char *key, int64_t cost,
                         int64_t now, rls_result *res, int *rcp)
{
    struct lane_hint *h = action && rls__memlane_enabled ? hint_of(db, action) : NULL;
    if (!h)
        return 0;
    if (!h->serves && h->skip > 0) {
        h->skip--;
        return 0;
    }
    rls_db *held = h->serves ? rls__serial_enter(db) : rls__serial_try(db);
    if (!held)   /* a leader's transaction: not worth the wait for a try;
                  * the next check tries again */
        return 0;
    int served = rls__mem_lane_check(db, action, key, cost, now, res, rcp);
    /* declined: for this check only (a key the trust does not cover yet,
     * the table's first open), or for the action (not all memory-class
     * under the rules the handle has) */
    h->serves = served || action_serves(db, action);
    rls__serial_leave(&held);
    if (!h->serves)
        h->skip = LANE_PROBE;
    return served;
}
