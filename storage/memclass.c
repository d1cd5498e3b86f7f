/*
 * memclass.c - `durability: memory` limits in the shared-memory table
 * (memclass.h; the table itself: shm/shmtable.h).
 *
 * The table: one per database, host and table format, "<shm_dir>/rlstore-
 * <identity's hash>-<boot id's and format's hash>.shm" (NULL: /dev/shm).
 * The identity is the backend's (backend.h, identity): of a SQLite database
 * its counters file's device and inode (any path to it, any process); of a
 * PostgreSQL database its cluster's system identifier, the database's and the
 * schema's counters table's oids, however the URI spells them - and the table
 * is per host, so memory limits are per host there.  It is opened at the first
 * memory-class call; the first process makes it with shm_slots entries and
 * max_key_len bytes of key, and every later one attaches it as made.
 *
 * Exactness inside a database transaction (optimistic, as a compare and swap):
 * the decision is made on snapshots (read without a lock, rls__shm_snap, in a
 * write transaction); just before COMMIT every entry the transaction read is
 * locked at once (one shm transaction, buckets in one global order), each
 * snapshot compared with what the entry holds now, and only when all still
 * hold are the new states written.  A snapshot that moved (a fast-path check
 * of another process charged the same key meanwhile) fails the transaction
 * with a retryable RLS_EBUSY: the caller rolls back and decides again on fresh
 * states.  No memory lock is held while the database works, so no process ever
 * waits for the table while holding a database lock or the other way round (no
 * deadlock between the two).  The memory states are written before the
 * database commits: if that COMMIT fails, rls__mem_undo puts back the snapshot
 * wherever the entry still holds what we wrote (else the failed call's charge
 * stays: an over-count, never an over-admission).  A process killed between
 * the two leaves its own unacknowledged call charged on the memory limits and
 * not on the durable ones.
 *
 * The fast path trusts the handle's cached rules and what a committed
 * transaction read about the policy and reservation tables, while the shared
 * generation of "<db>-ckpt" (deny.c) has not moved since before that
 * transaction, for at most MEMTRUST_TTL_MS of real time (the bound for changes
 * made to the file by something else than the library, and for the stats the
 * handle counts meanwhile, which the next transaction flushes).  Every write
 * of a policy row (blocks, tier assignments, overrides: policy.c, the bulk and
 * edit paths, rules, copies) is a transaction that bumps the generation before
 * and after it commits (stmt.c), and so is a check that writes a penalty block
 * or a reservation for an action with a memory limit (rls__check_write asks
 * it, in every path: one check, a group, a batch). Two grains of trust:
 *
 *  - every key: the tables hold no policy row and no reservation at all
 *    (pol_none, res_none, one statement, STMT_EMPTIES).  The zero-cost case:
 *    one transaction per handle and half a second renews it.
 *  - per key (memtrust.h): "this (action, key as given) has no policy row that
 *    applies and no reservation", from the rows the transaction of a check of
 *    that key read (keyctx.c's load: its own rows, the rows of every action in
 *    the key's spellings, everykey.c's addresses) and whether it holds a
 *    reservation.  A row that had expired at the check's time counts as none:
 *    an expired row stays expired, so the entry serves only checks at that
 *    time or later.  A key whose rows apply (blocked, a tier, an override) is
 *    never cached: the database path answers it every time, and a block that
 *    ends makes it clean at its next check there.  The tier from patterns
 *    (rc.patterns: YAML and the table's) is resolved from the cached rules at
 *    each fast check, as the database path resolves it; a pattern changed in
 *    the table moves the rules generation and the deny generation.  The table
 *    is bounded (16384 entries, keys up to 48 bytes: memtrust.h), so any
 *    number of distinct keys costs the same memory; a key it does not hold
 *    takes the database path, as before.
 *
 * A transaction that failed only because a memory state moved keeps the trust
 * it learned (its retry may be answered by the fast path: check.c); one that
 * cannot take it (a batch) and keeps losing holds the fast writers of its
 * buckets off (rls__shm_fair_note) until it commits or a tenth of a second
 * passes: they take the database path, which waits its turn, so fast checks of
 * a hot key cannot starve it into RLS_EBUSY.
 *
 * A handle is used by one thread at a time (a thread-safe handle's calls are
 * serialised: group.h), so the trust needs no lock.  PostgreSQL maps no shared
 * generation (deny.c): its checks never take the fast path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "check.h"
#include "memclass.h"
#include "memtrust.h"

#define MEM_LOG_CAP ((RULES_MEMORY_LOG_MAX + 2) * ALGO_LOG_ENTRY)
#define MEM_KEY_CAP (RLS_KEY_MAX_LIMIT + 64)
#define MEM_RETRIES 64
#define MEM_HOLD_WAITS 250   /* ms a call may wait for others' holds in all */
#define MEM_TO_DB (-1)   /* fast path: the call goes to the database path */
#define MEM_LOOK_MS 1000 /* how often the table's path is looked at again */

/* One entry a database transaction read (and maybe changed). */
struct mem_pend {
    int64_t lid;
    int kind;
    size_t keylen;
    char key[MEM_KEY_CAP];
    algo_state snap, cur;               /* as read; as to be written */
    unsigned char snaplog[MEM_LOG_CAP], curlog[MEM_LOG_CAP];
    int dirty;                          /* cur is to be written */
};

struct rls_memclass {
    char path[4096 + 64];
    int state;                          /* 0 closed, 1 open, -1 no identity */
    rls__shm *t;
    /* the open database transaction's entries */
    struct mem_pend p[RLS__SHM_TXN_MAX];
    size_t n;
    int64_t now;
    int written;                        /* prepare wrote them */
    int conflict;                       /* prepare found a snapshot moved */
    rls__shm_fair fair;                 /* its conflicts in a row, its hold */
    int txn_writers;                    /* every memory writer is a database
                                         * transaction (PostgreSQL): each waits
                                         * for the others' holds */
    int held, waits;                    /* prepare met another's hold; the ms
                                         * this call has waited for holds */
    struct mem_fast_trust ft;           /* the fast path's trust (memtrust.h) */
    int64_t seen_ms;                    /* when the path last named m->t */
    unsigned mode;                      /* a table this handle makes: its */
    long gid;                           /* mode and group (backend.h)     */
    struct rls_memlane *lane;           /* the fast lane's actions (memlane.c) */
};

int64_t rls__mem_coarse_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int mem_count(const rule_limit *ls, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += rls__mem_limit(&ls[i]) != 0;
    return k;
}

int rls__mem_action_count(const ruleset *rs, const char *action)
{
    const rule_action *a = rs && action ? rls__ruleset_action(rs, action) : NULL;
    int most = 0;
    for (int t = 0; a && t < a->ntiers; t++) {
        int k = mem_count(a->tiers[t].limits, a->tiers[t].nlimits);
        most = k > most ? k : most;
    }
    return a ? mem_count(a->limits, a->nlimits) + most : 0;
}

int rls__mem_action_has(const ruleset *rs, const char *action)
{
    return rls__mem_action_count(rs, action) > 0;
}

void rls__mem_init(rls_db *db)
{
    char id[512];
    if (db->mem)
        return;
    db->mem = calloc(1, sizeof *db->mem);
    if (!db->mem)
        return;
    if (db->be->identity(db, id, sizeof id, &db->mem->mode, &db->mem->gid) != RLS_OK) {
        db->mem->state = -1;   /* memory-class calls say so (rls__mem_table) */
        db->errmsg[0] = '\0';
        return;
    }
    db->mem->txn_writers = strcmp(db->be->name, "sqlite") != 0;
    const char *dir = db->ident.opt.shm_dir ? db->ident.opt.shm_dir : "/dev/shm";
    if (rls__shm_path(db->mem->path, sizeof db->mem->path, dir, id) != RLS_OK)
        db->mem->state = -1;
}

void rls__mem_close(rls_db *db)
{
    if (!db->mem)
        return;
    rls__shm_close(db->mem->t);
    rls__memtrust_fini(&db->mem->ft);
    rls__memlane_free(db->mem->lane);
    free(db->mem);
    db->mem = NULL;
}

void rls__mem_after_fork(rls_db *db)
{
    if (!db->mem)
        return;
    db->mem->n = 0;
    rls__memtrust_forget(&db->mem->ft);
}

const char *rls__mem_path(const rls_db *db)
{
    return db->mem && db->mem->state >= 0 ? db->mem->path : "";
}

/*
 * A table removed while processes map it (by hand, a cleaner of /dev/shm):
 * the next process to come makes a new one at the path, and the processes
 * still on the old mapping would count apart from it for as long as they
 * live.  So, at most once a second, the path is looked at again; when it
 * no longer names the mapped table the handle lets go of it (the next
 * memory-class call opens what the path holds, or makes it).  Between the
 * removal and that look, this process and the newcomers count apart: at
 * most a second of checks (DESIGN-NOTES).
 */
static void let_go_if_replaced(struct rls_memclass *m)
{
    struct stat sb;
    rls__shm_info info;
    int64_t mono = rls__mem_coarse_ms();
    if (m->state != 1 || mono < 0 || mono - m->seen_ms < MEM_LOOK_MS)
        return;
    m->seen_ms = mono;
    if (rls__shm_info_get(m->t, &info) == RLS_OK && stat(m->path, &sb) == 0 &&
        (uint64_t)sb.st_dev == info.dev && (uint64_t)sb.st_ino == info.ino)
        return;
    rls__shm_close(m->t);
    m->t = NULL;
    m->state = 0;
}

int rls__mem_table(rls_db *db, rls__shm **out)
{
    struct rls_memclass *m = db->mem;
    *out = NULL;
    if (!m)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    if (m->state < 0)
        return rls__error(db, RLS_ECANTOPEN, "the shared-memory table of durability: memory "
                          "limits has no name: the database's identity cannot be read");
    let_go_if_replaced(m);
    if (m->state == 0) {
        char why[256] = "";
        /* an existing table keeps its geometry (rlstore.h, shm_slots); the
         * tools open with RLS_KEY_MAX_LIMIT to read any key, which is not
         * a length keys are made with: their table takes the default */
        int kl = db->ident.opt.max_key_len;
        rls__shm_geom g = {db->ident.opt.shm_slots,
                           (uint32_t)(kl == RLS_KEY_MAX_LIMIT ? RLS_KEY_MAX_DEFAULT : kl),
                           RULES_MEMORY_LOG_MAX};
        int rc = rls__shm_open(&m->t, m->path, NULL, why, sizeof why);
        if (rc == RLS_ENOTFOUND)
            rc = rls__shm_open_as(&m->t, m->path, &g, m->mode, m->gid, why, sizeof why);
        if (rc != RLS_OK)
            return rls__error(db, rc, "cannot open the shared-memory table '%s' of "
                              "durability: memory limits: %s", m->path,
                              why[0] ? why : "failed");
        m->state = 1;
        m->seen_ms = rls__mem_coarse_ms();
    }
    *out = m->t;
    return RLS_OK;
}

/* Maps a failure of the table to a recorded error. */
static int shm_error(rls_db *db, int rc)
{
    if (rc == RLS_EFULL)
        return rls__error(db, RLS_EFULL, "the shared-memory table '%s' is full: no free or "
                          "expired entry for this key (raise shm_slots and remove the table, "
                          "or shorten the memory limits' windows)", db->mem->path);
    if (rc == RLS_EKEY)
        return rls__error(db, RLS_EKEY, "key is longer than the shared-memory table '%s' "
                          "was made for", db->mem->path);
    return rls__error(db, rc, "shared-memory table '%s': %s", db->mem->path,
                      rc == RLS_ECORRUPT ? "a lock cannot be taken" : rls_strerror(rc));
}

static void item_of(rls__shm_item *it, int64_t lid, int kind, const void *key, size_t keylen)
{
    it->lid = lid;
    it->kind = kind;
    it->key = key;
    it->key_len = keylen;
}

/* Copies a state and its log into dst (whose log buffer is dlog, cap). */
static int state_copy(algo_state *dst, unsigned char *dlog, size_t cap, const algo_state *src)
{
    size_t len = src->present && src->log ? src->log_len : 0;
    if (len > cap)
        return -1;
    unsigned char *keep = dlog;
    *dst = *src;
    if (len)
        memcpy(keep, src->log, len);
    dst->log = keep;
    dst->log_len = len;
    dst->log_cap = cap;
    return 0;
}

static int state_same(const algo_state *x, const algo_state *y)
{
    if (!x->present || !y->present)
        return x->present == y->present;
    return x->a == y->a && x->b == y->b && x->c == y->c && x->last_ms == y->last_ms &&
           x->expires_ms == y->expires_ms && x->log_len == y->log_len &&
           (x->log_len == 0 || memcmp(x->log, y->log, x->log_len) == 0);
}

/* A state read into ctx: a log buffer of its own for a sliding log (the
 * key context frees it), with room for a charge. */
static int ctx_take(rls_db *db, key_ctx *ctx, int i, const algo_state *src)
{
    algo_state *s = &ctx->st[i];
    *s = *src;
    s->log = NULL;
    s->log_len = s->log_cap = 0;
    if (ctx->rl[i].def->algorithm != ALGO_SLIDING_LOG)
        return RLS_OK;
    size_t len = src->present && src->log ? src->log_len : 0;
    s->log = malloc(MEM_LOG_CAP);
    if (!s->log)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    if (len)
        memcpy(s->log, src->log, len);
    s->log_len = len;
    s->log_cap = MEM_LOG_CAP;
    return RLS_OK;
}

static struct mem_pend *pend_find(struct rls_memclass *m, int64_t lid, const char *key,
                                  size_t keylen)
{
    for (size_t j = 0; j < m->n; j++)
        if (m->p[j].lid == lid && m->p[j].keylen == keylen &&
            memcmp(m->p[j].key, key, keylen) == 0)
            return &m->p[j];
    return NULL;
}

static int too_many(rls_db *db)
{
    return rls__error(db, RLS_ECONFIG, "more than %d durability: memory limits in one "
                      "transaction", RLS__SHM_TXN_MAX);
}

static int attach(rls_db *db);

static void snap_clear(struct mem_pend *p)
{
    memset(&p->snap, 0, sizeof p->snap);
    p->snap.log = p->snaplog;
    p->snap.log_cap = MEM_LOG_CAP;
}

/* Snapshots of it[0..k) into m->p[first..] without a lock: RLS_OK, RLS_EBUSY
 * (an entry kept moving: take the lock), or another error. */
static int snap_free(struct rls_memclass *m, rls__shm *t, const rls__shm_item *it,
                     size_t first, int k)
{
    for (int j = 0; j < k; j++) {
        struct mem_pend *p = &m->p[first + (size_t)j];
        snap_clear(p);
        int rc = rls__shm_snap(t, &it[j], &p->snap);
        if (rc)
            return rc;
    }
    return RLS_OK;
}

/* Snapshots of the memory items of ctx not yet in the transaction, in one
 * shm transaction, as new entries of m->p (from index first). */
static int snapshot(rls_db *db, key_ctx *ctx, const int *idx, int k)
{
    struct rls_memclass *m = db->mem;
    rls__shm *t;
    rls__shm_item it[RLS__SHM_TXN_MAX];
    rls__shm_txn tx;
    size_t first = m->n;
    int rc, reading = !(db->conn.in_tx && db->conn.tx_write);
    if (reading) {   /* a read makes no table: without one, every state is new */
        int a = attach(db);
        if (a < 0)
            return -a;
        if (a == 0) {
            for (int j = 0; j < k; j++)
                memset(&m->p[first + (size_t)j].snap, 0, sizeof m->p[0].snap);
            return RLS_OK;
        }
    }
    if ((rc = rls__mem_table(db, &t)))
        return rc;
    if (m->n + (size_t)k > RLS__SHM_TXN_MAX)
        return too_many(db);
    for (int j = 0; j < k; j++) {
        struct mem_pend *p = &m->p[first + (size_t)j];
        const rule_limit *def = ctx->rl[idx[j]].def;
        p->lid = def->id;
        p->kind = def->algorithm;
        p->keylen = ctx->keylen;
        memcpy(p->key, ctx->key, ctx->keylen);
        p->dirty = 0;
        item_of(&it[j], p->lid, p->kind, p->key, p->keylen);
    }
    /* a write transaction compares every snapshot under the lock before
     * it writes (rls__mem_prepare): its snapshots need no lock, only to
     * be whole (rls__shm_snap); a read's answer is its snapshots, taken
     * under the lock at one moment */
    if (!reading && (rc = snap_free(m, t, it, first, k)) != RLS_EBUSY) {
        if (rc)
            return shm_error(db, rc);
        m->n = first + (size_t)k;
        return RLS_OK;
    }
    if ((rc = rls__shm_lock_peek(t, it, (size_t)k, ctx->now, &tx)))
        return shm_error(db, rc);
    for (int j = 0; j < k && rc == RLS_OK; j++) {
        struct mem_pend *p = &m->p[first + (size_t)j];
        snap_clear(p);
        rc = rls__shm_read(&tx, (size_t)j, &p->snap);
    }
    rls__shm_unlock(&tx);
    if (rc)
        return shm_error(db, rc);
    if (!reading)
        m->n = first + (size_t)k;   /* a read (a peek, a listing) keeps nothing */
    return RLS_OK;
}

int rls__mem_read(rls_db *db, key_ctx *ctx)
{
    struct rls_memclass *m = db->mem;
    int idx[RESOLVE_MAX_LIMITS], k = 0, rc;
    if (!m)
        return rls__error(db, RLS_ENOMEM, "out of memory");
    size_t base = m->n;
    for (int i = 0; i < ctx->n; i++) {
        if (!rls__mem_limit(ctx->rl[i].def))
            continue;
        const struct mem_pend *p = pend_find(m, ctx->rl[i].def->id, ctx->key, ctx->keylen);
        if (p) {
            if ((rc = ctx_take(db, ctx, i, p->dirty ? &p->cur : &p->snap)))
                return rc;
        } else {
            idx[k++] = i;
        }
    }
    if (k == 0)
        return RLS_OK;
    m->now = ctx->now;
    if ((rc = snapshot(db, ctx, idx, k)))
        return rc;
    for (int j = 0; j < k; j++)
        if ((rc = ctx_take(db, ctx, idx[j], &m->p[base + (size_t)j].snap)))
            return rc;
    return RLS_OK;
}

int rls__mem_stage(rls_db *db, key_ctx *ctx)
{
    struct rls_memclass *m = db->mem;
    for (int i = 0; i < ctx->n; i++) {
        if (!rls__mem_limit(ctx->rl[i].def) || !ctx->items[i].changed)
            continue;
        struct mem_pend *p = m ? pend_find(m, ctx->rl[i].def->id, ctx->key, ctx->keylen)
                               : NULL;
        if (!p)
            return rls__error(db, RLS_EMISUSE, "a memory-class state written without "
                              "being read in the transaction");
        if (state_copy(&p->cur, p->curlog, RULES_MEMORY_LOG_MAX * ALGO_LOG_ENTRY,
                       &ctx->st[i]) != 0)
            return rls__error(db, RLS_ECONFIG, "limit '%s' keeps more than %d sliding_log "
                              "entries, more than the shared-memory table holds",
                              ctx->rl[i].def->name, RULES_MEMORY_LOG_MAX);
        p->dirty = 1;
    }
    return RLS_OK;
}

/* Locks every entry of the transaction (reserving the new ones). */
static int lock_all(rls_db *db, rls__shm_txn *tx)
{
    struct rls_memclass *m = db->mem;
    rls__shm_item it[RLS__SHM_TXN_MAX];
    for (size_t j = 0; j < m->n; j++)
        item_of(&it[j], m->p[j].lid, m->p[j].kind, m->p[j].key, m->p[j].keylen);
    int rc = rls__shm_lock(m->t, it, m->n, m->now, tx);
    return rc ? shm_error(db, rc) : RLS_OK;
}

int rls__mem_prepare(rls_db *db)
{
    struct rls_memclass *m = db->mem;
    rls__shm_txn tx;
    unsigned char logbuf[MEM_LOG_CAP];
    int dirty = 0, rc;
    if (!m || m->n == 0)
        return RLS_OK;
    m->conflict = m->written = 0;
    for (size_t j = 0; j < m->n; j++)
        dirty |= m->p[j].dirty;
    if (!dirty)
        return RLS_OK;   /* read only: the snapshots were the answer */
    if ((rc = lock_all(db, &tx)))
        return rc;
    if (m->txn_writers && rls__shm_held_by_other(&tx, &m->fair, rls__mem_coarse_ms())) {
        rls__shm_unlock(&tx);   /* a transaction that keeps losing goes first */
        m->conflict = m->held = 1;
        return rls__error(db, RLS_EBUSY, "a durability: memory state is held for a "
                          "transaction that kept losing it");
    }
    for (size_t j = 0; j < m->n && rc == RLS_OK; j++) {
        algo_state now = {0};
        now.log = logbuf;
        now.log_cap = sizeof logbuf;
        rc = rls__shm_read(&tx, j, &now);
        if (rc == RLS_OK && !state_same(&now, &m->p[j].snap))
            m->conflict = 1;
    }
    if (rc == RLS_OK && !m->conflict)
        for (size_t j = 0; j < m->n && rc == RLS_OK; j++)
            if (m->p[j].dirty)
                rc = rls__shm_write(&tx, j, &m->p[j].cur);
    rls__shm_fair_note(&tx, &m->fair, m->conflict, rls__mem_coarse_ms());
    rls__shm_unlock(&tx);
    if (rc)
        return shm_error(db, rc);
    if (m->conflict)
        return rls__error(db, RLS_EBUSY, "a durability: memory state changed during the "
                          "transaction");
    m->written = 1;
    m->waits = 0;
    return RLS_OK;
}

void rls__mem_undo(rls_db *db)
{
    struct rls_memclass *m = db->mem;
    rls__shm_txn tx;
    unsigned char logbuf[MEM_LOG_CAP];
    if (!m || !m->written || m->n == 0)
        return;
    char keep[sizeof db->errmsg];
    memcpy(keep, db->errmsg, sizeof keep);   /* the COMMIT's error is the call's */
    if (lock_all(db, &tx) == RLS_OK) {
        for (size_t j = 0; j < m->n; j++) {
            algo_state now = {0};
            now.log = logbuf;
            now.log_cap = sizeof logbuf;
            if (!m->p[j].dirty || rls__shm_read(&tx, j, &now) != RLS_OK ||
                !state_same(&now, &m->p[j].cur))
                continue;   /* changed by another call since: its charge stays */
            if (m->p[j].snap.present)
                rls__shm_write(&tx, j, &m->p[j].snap);
            else
                rls__shm_drop(&tx, j);
        }
        rls__shm_unlock(&tx);
    }
    memcpy(db->errmsg, keep, sizeof keep);
    m->written = 0;
}

void rls__mem_forget(rls_db *db)
{
    if (db->mem) {
        db->mem->n = 0;
        db->mem->written = 0;
    }
}

int rls__mem_retry(rls_db *db, int rc, int *attempt)
{
    struct rls_memclass *m = db ? db->mem : NULL;
    if (!m || rc != RLS_EBUSY || !m->conflict)
        return 0;
    m->conflict = 0;
    if (m->held) {   /* not a loss: waits a millisecond for the hold to go */
        m->held = 0;
        if (m->waits++ >= MEM_HOLD_WAITS)
            return m->waits = 0;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
        return 1;
    }
    if (++*attempt < MEM_RETRIES)
        return 1;
    m->fair.conflicts = m->waits = 0;   /* given up */
    return 0;
}

/* ---- the fast path ----------------------------------------------------- */

int rls__mem_learn(rls_db *db, struct check_call *call)
{
    return db->mem ? rls__memtrust_learn(db, &db->mem->ft, call) : RLS_OK;
}

void rls__mem_trust(rls_db *db, struct check_call *call)
{
    /* committed, or rolled back only because a memory state moved: what
     * the transaction read stands (it changed none of it) */
    if (!db->mem)
        return;
    int retried = !call->committed && db->mem->conflict;
    rls__memtrust_commit(db, &db->mem->ft, call, call->committed || retried);
    /* the attempt to come learns under the generation read before it,
     * not the first attempt's (which may have moved since: its trust
     * would never hold, and every retry would lose to the fast checks) */
    if (retried && call->deny_usable && db->deny.deny_gen)
        call->deny_gen = __atomic_load_n(db->deny.deny_gen, __ATOMIC_ACQUIRE);
}

/* May the fast path serve this call (memtrust.c)? */
static int fast_allowed(rls_db *db, const struct check_call *call)
{
    return db->mem && !db->conn.in_tx && db->deny.deny_gen &&
           (call->op == CHECK_OP_CHECK || call->op == CHECK_OP_PEEK) &&
           rls__memtrust_allows(db, &db->mem->ft, call);
}

/* Can a key of action a resolve to memory-class limits alone?  Only if
 * the action's own limits or one of its tiers' are all memory-class: the
 * check that has a durable limit whatever the key's tier skips resolving
 * the key for the fast path (a mixed action's checks, and a durable
 * action's on a handle whose fast path is trusted). */
static int mem_only_possible(const rule_action *a)
{
    for (int t = -1; t < a->ntiers; t++) {
        const rule_limit *ls = t < 0 ? a->limits : a->tiers[t].limits;
        int n = t < 0 ? a->nlimits : a->tiers[t].nlimits, all = 1;
        for (int i = 0; i < n && all; i++)
            all = rls__mem_limit(&ls[i]);
        if (all)
            return 1;
    }
    return 0;
}

/* Under the table's locks: read, decide, write. */
static int fast_decide(rls_db *db, struct check_call *call, rls__shm_txn *tx)
{
    key_ctx *ctx = call->ctx;
    unsigned char logbuf[MEM_LOG_CAP];
    int rc;
    for (int i = 0; i < ctx->n; i++) {
        algo_state s = {0};
        s.log = logbuf;
        s.log_cap = sizeof logbuf;
        if ((rc = rls__shm_read(tx, (size_t)i, &s)) || (rc = ctx_take(db, ctx, i, &s)))
            return rc == RLS_EINVAL ? shm_error(db, rc) : rc;
        ctx->items[i].rl = &ctx->rl[i];
        ctx->items[i].st = &ctx->st[i];
    }
    call->states_read = 1;
    if ((rc = rls__check_decide(db, call, 0)))
        return rc;
    if (call->penalty)
        return MEM_TO_DB;   /* a block to write: the database path */
    for (int i = 0; i < ctx->n && call->op == CHECK_OP_CHECK && !call->blocked; i++)
        if (ctx->items[i].changed && (rc = rls__shm_write(tx, (size_t)i, &ctx->st[i])))
            return shm_error(db, rc);
    return RLS_OK;
}

int rls__mem_fast(rls_db *db, struct check_call *call, int *rcp)
{
    key_ctx *ctx = call->ctx;
    rls__shm *t;
    rls__shm_item it[RLS__SHM_TXN_MAX];
    rls__shm_txn tx;
    int rc;
    /* the plan's own tests first: a mixed or durable action never pays
     * for the trust's lookup (a hash of the key, memtrust.c) */
    if (ctx->planned == KEYCTX_NONE || !ctx->act || ctx->plan_rules != db->rc.rules ||
        ctx->plan_gen != db->rc.rules_gen || !mem_only_possible(ctx->act) ||
        !fast_allowed(db, call) || !rls__keyctx_resolve_trusted(db, ctx, call->now) ||
        ctx->n > RLS__SHM_TXN_MAX)
        return 0;
    for (int i = 0; i < ctx->n; i++)
        if (!rls__mem_limit(ctx->rl[i].def))
            return 0;
    if (call->op == CHECK_OP_PEEK ? attach(db) <= 0 : rls__mem_table(db, &t) != RLS_OK) {
        db->errmsg[0] = '\0';
        return 0;   /* the database path reports it (a peek makes no table) */
    }
    t = db->mem->t;
    for (int i = 0; i < ctx->n; i++)
        item_of(&it[i], ctx->rl[i].def->id, ctx->rl[i].def->algorithm, ctx->key, ctx->keylen);
    if (ctx->n > 0) {
        rc = call->op == CHECK_OP_PEEK ? rls__shm_lock_peek(t, it, (size_t)ctx->n, call->now, &tx)
                                       : rls__shm_lock(t, it, (size_t)ctx->n, call->now, &tx);
        if (rc) {
            *rcp = shm_error(db, rc);
            return 1;
        }
        if (call->op == CHECK_OP_CHECK && rls__shm_held(&tx, rls__mem_coarse_ms()))
            return rls__shm_unlock(&tx), 0;   /* a losing transaction holds us off */
    }
    rc = fast_decide(db, call, &tx);
    if (ctx->n > 0)
        rls__shm_unlock(&tx);
    if (rc == MEM_TO_DB) {
        rls__keyctx_release(ctx);
        db->errmsg[0] = '\0';
        return 0;
    }
    if (rc == RLS_OK && call->op == CHECK_OP_CHECK) {
        rls__stats_count(db, ctx->act->name, call->now, call->res->allowed);
        rls__keystat_note(db, ctx->act->name, ctx->key, ctx->keylen, call->res, call->now);
    }
    *rcp = rc;
    return 1;
}

/* ---- the fast lane's (memlane.c) ------------------------------------------ */

int rls__mem_lane_failed(rls_db *db, int rc)
{
    return shm_error(db, rc);
}

struct rls_memlane **rls__mem_lane_slot(rls_db *db)
{
    return db->mem ? &db->mem->lane : NULL;
}

rls__shm *rls__mem_lane_open(rls_db *db, int act, const char *key, size_t keylen,
                             int64_t now, int64_t mono)
{
    struct rls_memclass *m = db->mem;
    rls__shm *t;
    const struct mem_fast_trust *ft = &m->ft;
    if (db->conn.in_tx || !db->deny.deny_gen)
        return NULL;
    /* the trust of every key, as rls__memtrust_allows_key tests it first
     * (which also forgets it when it no longer holds) */
    if (!(ft->trusted && mono >= 0 && ft->rules == db->rc.rules &&
          ft->rules_gen == db->rc.rules_gen && mono - ft->mono < MEMTRUST_TTL_MS &&
          __atomic_load_n(db->deny.deny_gen, __ATOMIC_ACQUIRE) == ft->gen) &&
        !rls__memtrust_allows_key(db, &m->ft, act, key, keylen, now, mono))
        return NULL;
    /* looked at within MEM_LOOK_MS by the coarse clock, which is never
     * ahead of mono: let_go_if_replaced would not look now either */
    if (m->state == 1 && mono >= m->seen_ms && mono - m->seen_ms < MEM_LOOK_MS)
        return m->t;
    if (rls__mem_table(db, &t) != RLS_OK) {
        db->errmsg[0] = '\0';   /* the fast path or the database path reports it */
        return NULL;
    }
    return t;
}

/* ---- tools ------------------------------------------------------------- */

/* Attaches the table without making it (a tool): 1 open, 0 none, or an
 * error recorded. */
static int attach(rls_db *db)
{
    char why[256] = "";
    if (!db->mem || db->mem->state < 0)
        return 0;
    let_go_if_replaced(db->mem);
    if (db->mem->state == 1)
        return 1;
    int rc = rls__shm_open(&db->mem->t, db->mem->path, NULL, why, sizeof why);
    if (rc == RLS_ENOTFOUND)
        return 0;
    if (rc)
        return -rls__error(db, rc, "cannot open the shared-memory table '%s': %s",
                           db->mem->path, why);
    db->mem->state = 1;
    db->mem->seen_ms = rls__mem_coarse_ms();
    return 1;
}

int rls__mem_each(rls_db *db, int64_t now, rls__shm_each_fn fn, void *arg)
{
    int a = attach(db);
    if (a <= 0)
        return -a;
    int rc = rls__shm_each(db->mem->t, now, fn, arg);
    return rc == RLS_ECORRUPT ? shm_error(db, rc) : rc;
}

int rls__mem_drop(rls_db *db, int64_t lid, int kind, const void *key, size_t keylen,
                  int64_t now, int *found)
{
    rls__shm_item it;
    rls__shm_txn tx;
    unsigned char logbuf[MEM_LOG_CAP];
    algo_state s = {0};
    int rc, a = attach(db);
    *found = 0;
    if (a <= 0)
        return -a;   /* no table: nothing to drop */
    item_of(&it, lid, kind, key, keylen);
    if ((rc = rls__shm_lock_peek(db->mem->t, &it, 1, now, &tx)))
        return shm_error(db, rc);
    s.log = logbuf;
    s.log_cap = sizeof logbuf;
    if ((rc = rls__shm_read(&tx, 0, &s)) == RLS_OK && (*found = s.present && s.expires_ms > now))
        rc = rls__shm_drop(&tx, 0);
    rls__shm_unlock(&tx);
    return rc ? shm_error(db, rc) : RLS_OK;
}
