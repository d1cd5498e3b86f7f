/*
 * busy.c - the writers' turn: writers of every process take tickets in
 * shared memory ("<db>-ckpt", wal.c), sleep on a futex until served and
 * then keep the turn for a short lease, instead of polling for SQLite's
 * write lock (which lets a writer that just committed win again and again).
 * The turn only orders the writers; SQLite's lock keeps the data safe, so
 * a turn skipped by mistake costs fairness, never correctness.  Holders and
 * tickets of processes that are gone or stuck are skipped.  Without the
 * shared memory the busy handler sleeps in growing, jittered steps.  Why
 * each rule is so, and the figures: docs/DESIGN-NOTES.md, "The writers'
 * turn".  busy.c owns the connection's statement trace hook.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "busy.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#define HAVE_FUTEX 1
#endif

#define US ((int64_t)1000)
#define MS ((int64_t)1000000)

#define LEASE_NS (2 * MS)       /* a holder keeps the turn this long ... */
#define HURRY_NS (4 * MS)       /* ... unless the next in line waited this long */
#define QUEUE_NAP_NS (1 * MS)   /* longest sleep of a waiter: its heartbeat */
#define PROBE_NS (3 * MS)       /* a silent ticket: does its process live? */
#define STALE_NS (50 * MS)      /* a silent ticket is skipped anyway */
#define TX_STALE_NS (2000 * MS) /* ... and a transaction this long past the lease */
#define HOLD_WAIT_NS (20 * MS)  /* a checkpoint waits this long for the holder */
#define HOLD_MAX_NS (50 * MS)   /* writers are held off at most this long */
#define LOCK_POLL_FIRST_NS (20 * US) /* waits for SQLite's lock: first ... */
#define LOCK_POLL_NS (500 * US)      /* ... doubling up to this */

#define TURN_OFFSET 1024        /* the turn's place in it (wal.c: 0-15, deny.c: 64-71) */
#define TURN_MAGIC 0x524c5442u  /* "RLTB", layout 1 */
#define RING 64                 /* slots of the latest tickets */

enum { SLOT_WAITING = 1, SLOT_GONE = 2 };

/* A ticket's owner: written only by it (the ticket field last), trusted
 * only while the ticket field matches. */
struct slot {
    uint32_t ticket;
    uint32_t state;             /* SLOT_* */
    int32_t pid;
    uint32_t wake;              /* futex word: bumped when the ticket is served */
    uint64_t thread;            /* its thread, within the process */
    int64_t since;              /* CLOCK_MONOTONIC ns: taken */
    int64_t hb;                 /* ... last sign of life */
};

struct turn {
    uint32_t magic;
    uint32_t next;              /* the next ticket to hand out */
    uint32_t serving;           /* the ticket whose owner may write */
    uint32_t taken;             /* ... once its owner has taken the turn up */
    uint32_t released;          /* bumped when a write transaction ends; futex */
    uint32_t q_sleepers;        /* waiters asleep on their slot's word */
    uint32_t r_sleepers;        /* connections asleep on `released` */
    uint32_t pad;
    uint64_t busy;              /* taken << 1, | 1 inside a write transaction */
    int64_t until;              /* the lease of ticket `taken` ends */
    int64_t served_at;          /* `serving` last moved */
    uint32_t hold;              /* nonzero: writers held off (wal.c); futex */
    int32_t hold_pid;           /* ... by this process */
    int64_t hold_since;         /* ... since then */
    struct slot ring[RING];
};

_Static_assert(TURN_OFFSET + sizeof(struct turn) <= RLS_SIDE_BYTES, "the turn fits the page");

/* The handle's part (db->lite->busy). */
struct rls_busy {
    void *map;                  /* the side file's first page, or NULL */
    struct turn *turn;          /* in it */
    int unavailable;            /* cannot be mapped: sleeps only */
    pid_t pid;                  /* the process that installed it */
    int ticketed;               /* holds `ticket` (waiting or served) */
    uint32_t ticket;
    int in_tx;                  /* between the turn's gate and the end of the tx */
    int64_t gate_deadline;      /* the busy timeout, counted from the gate */
    int holding_off;            /* it set `hold` */
    int waiting;                /* a wait for SQLite's lock is under way ... */
    int64_t deadline;           /* ... and fails then */
    int64_t poll;               /* its next sleep */
    uint32_t seen;              /* `released` before its last try */
};

#define LOAD(p) __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST)
#define SUB(p, v) __atomic_sub_fetch(p, v, __ATOMIC_SEQ_CST)
#define CAS(p, expect, v) \
    __atomic_compare_exchange_n(p, expect, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Sleeps in steps growing from 20 us to 2 ms, with jitter, until `limit`
 * ms in all (counted from the steps).
 */
static int sleep_wait(rls_db *db, int count, int limit)
{
    int64_t waited_us = 0, step = 20;
    for (int i = 0; i < count; i++) {
        waited_us += step;
        if (step < 2000)
            step = step * 3 / 2 + 1;
    }
    if (waited_us / 1000 >= limit)
        return 0;
    db->conn.rng ^= db->conn.rng << 13;
    db->conn.rng ^= db->conn.rng >> 17;
    db->conn.rng ^= db->conn.rng << 5;
    struct timespec ts = {0, (long)(step * 1000 + db->conn.rng % (uint32_t)(step * 500 + 1))};
    nanosleep(&ts, NULL);
    return 1;
}

#ifdef HAVE_FUTEX
static _Thread_local char thread_mark;  /* its address names the thread */

static uint64_t this_thread(void)
{
    return (uint64_t)(uintptr_t)&thread_mark;
}

static void futex_wait(uint32_t *word, uint32_t val, int64_t ns)
{
    if (ns <= 0)
        return;
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake(uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * Maps the turn, once per connection, once it is in service (rls__wal_setup
 * ran: migrations at open do not take turns, and an open that fails leaves
 * no side file).  Any failure: the busy handler only, for this connection.
 */
static struct turn *turn_map(rls_db *db, struct rls_busy *b)
{
    if (b->turn || b->unavailable || db->lite->ckpt_soft <= 0)
        return b->turn;
    b->unavailable = 1;
    if (db->ident.opt.read_only || db->ident.opt.busy_timeout_ms == 0)
        return NULL;
    void *p = rls__wal_side_map(db);
    if (!p)
        return NULL;
    struct turn *t = (struct turn *)((unsigned char *)p + TURN_OFFSET);
    uint32_t magic = 0;
    if (!CAS(&t->magic, &magic, TURN_MAGIC) && magic != TURN_MAGIC) {
        munmap(p, RLS_SIDE_BYTES);  /* another layout: leave it alone */
        return NULL;
    }
    b->map = p;
    b->turn = t;
    b->unavailable = 0;
    return t;
}

/* Serves ticket s + 1 if s is still served, and wakes its owner. */
static void advance(struct turn *t, uint32_t s, int64_t now)
{
    if (!CAS(&t->serving, &s, s + 1))
        return;
    STORE(&t->served_at, now);
    struct slot *sl = &t->ring[(s + 1) % RING];
    ADD(&sl->wake, 1);
    if (LOAD(&t->q_sleepers) > 0)
        futex_wake(&sl->wake);
}

/* Gives the ticket up: marked gone, and the next one served if it was. */
static void pass_turn(struct turn *t, struct rls_busy *b, int64_t now)
{
    if (!b->ticketed)
        return;
    b->ticketed = 0;
    struct slot *sl = &t->ring[b->ticket % RING];
    if (LOAD(&sl->ticket) == b->ticket)
        STORE(&sl->state, (uint32_t)SLOT_GONE);
    if (LOAD(&t->serving) == b->ticket)
        advance(t, b->ticket, now);
}

static void take_ticket(struct turn *t, struct rls_busy *b, int64_t now)
{
    uint32_t mine = ADD(&t->next, 1) - 1;
    struct slot *sl = &t->ring[mine % RING];
    STORE(&sl->pid, (int32_t)b->pid);
    STORE(&sl->thread, this_thread());
    STORE(&sl->since, now);
    STORE(&sl->hb, now);
    STORE(&sl->state, (uint32_t)SLOT_WAITING);
    STORE(&sl->ticket, mine);
    b->ticket = mine;
    b->ticketed = 1;
    /* more waiters than slots: the oldest are unknown, serve the oldest known */
    uint32_t s = LOAD(&t->serving);
    if ((int32_t)(mine - s) >= RING && CAS(&t->serving, &s, mine - RING + 1)) {
        STORE(&t->served_at, now);
        if (LOAD(&t->q_sleepers) > 0)
            futex_wake(&t->ring[(mine + 1) % RING].wake);
    }
}

static int pid_gone(int32_t pid)
{
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Should the holder of ticket s pass the turn on?  Someone waits, and the
 * lease is over or the next in line has waited HURRY_NS (after a
 * checkpoint, say: the line then moves one transaction per holder). */
static int time_to_pass(struct turn *t, uint32_t s, int64_t now)
{
    if (LOAD(&t->next) == s + 1)
        return 0;
    if (now >= LOAD(&t->until))
        return 1;
    struct slot *sl = &t->ring[(s + 1) % RING];
    return LOAD(&sl->ticket) == s + 1 && now - LOAD(&sl->since) >= HURRY_NS;
}

/* Should the waiter `b` pass over ticket s, served?  Its owner is gone,
 * stuck, idle past its lease, or b's own thread. */
static int stalled(struct turn *t, const struct rls_busy *b, uint32_t s, int64_t now)
{
    struct slot *sl = &t->ring[s % RING];
    uint32_t tk = LOAD(&sl->ticket);
    if (tk != s)  /* overwritten by a later ticket, or never written */
        return (int32_t)(tk - s) > 0 || now - LOAD(&t->served_at) > PROBE_NS;
    if (LOAD(&sl->state) != SLOT_WAITING)
        return 1;
    if (LOAD(&sl->pid) == (int32_t)b->pid && LOAD(&sl->thread) == this_thread())
        return 1;  /* this thread waits here: that handle is not in a transaction */
    if (LOAD(&t->taken) != s) {
        /* served, its owner not awake yet */
        int64_t age = now - LOAD(&sl->hb);
        return age > STALE_NS || age < -PROBE_NS ||  /* another boot's clock */
               (age > PROBE_NS && pid_gone(LOAD(&sl->pid)));
    }
    int64_t until = LOAD(&t->until);
    if (now < until)
        return 0;
    if (LOAD(&t->busy) != ((uint64_t)s << 1 | 1))
        return 1;  /* between two transactions, lease over */
    return now - until > TX_STALE_NS || (now - until > PROBE_NS && pid_gone(LOAD(&sl->pid)));
}

/* Takes the turn up (ticket served) and enters the transaction. */
static void take_up(struct turn *t, struct rls_busy *b, int64_t now)
{
    STORE(&t->until, now + LEASE_NS);
    STORE(&t->taken, b->ticket);
    STORE(&t->busy, (uint64_t)b->ticket << 1 | 1);
    b->in_tx = 1;
}

/*
 * Before BEGIN IMMEDIATE: waits for the turn, until the busy timeout.  At
 * the timeout the ticket is given up and the BEGIN meets SQLite's lock with
 * what is left of the timeout (none).
 */
/* Writers are held off (the last step of a checkpoint): waits until that
 * ends, or the process holding them off is gone or took HOLD_MAX_NS. */
static void held_off(struct turn *t)
{
    for (;;) {
        uint32_t h = LOAD(&t->hold);
        if (!h)
            return;
        int64_t now = mono_ns(), age = now - LOAD(&t->hold_since);
        if (age > HOLD_MAX_NS || age < -PROBE_NS || pid_gone(LOAD(&t->hold_pid))) {
            CAS(&t->hold, &h, 0);
            return;
        }
        ADD(&t->q_sleepers, 1);
        futex_wait(&t->hold, h, QUEUE_NAP_NS);
        SUB(&t->q_sleepers, 1);
    }
}

static void gate(rls_db *db, struct rls_busy *b, struct turn *t)
{
    b->gate_deadline = 0;  /* from the first wait for the lock, if any */
    if (LOAD(&t->hold))
        held_off(t);
    if (b->ticketed) {
        uint32_t s = LOAD(&t->serving);
        if (s == b->ticket && LOAD(&t->taken) == s && LOAD(&t->next) == s + 1) {
            STORE(&t->busy, (uint64_t)s << 1 | 1);  /* nobody waits: kept */
            b->in_tx = 1;
            return;
        }
    }
    int64_t now = mono_ns();
    b->gate_deadline = now + (int64_t)db->ident.opt.busy_timeout_ms * MS;
    if (b->ticketed) {
        uint32_t s = LOAD(&t->serving);
        if (s == b->ticket && LOAD(&t->taken) == s) {
            /* its turn: kept while the lease runs */
            if (!time_to_pass(t, s, now)) {
                STORE(&t->busy, (uint64_t)s << 1 | 1);
                b->in_tx = 1;
                return;
            }
            pass_turn(t, b, now);
        } else if (s != b->ticket) {
            pass_turn(t, b, now);  /* passed over: line up again */
        }
    }
    if (!b->ticketed)
        take_ticket(t, b, now);
    for (;;) {
        uint32_t s = LOAD(&t->serving);
        int32_t ahead = (int32_t)(b->ticket - s);
        if (ahead == 0) {
            take_up(t, b, now);
            return;
        }
        if (ahead < 0 || now >= b->gate_deadline) {
            pass_turn(t, b, now);  /* passed over, or too late: SQLite's lock decides */
            b->in_tx = 1;
            return;
        }
        struct slot *mine = &t->ring[b->ticket % RING];
        if (LOAD(&mine->ticket) == b->ticket)
            STORE(&mine->hb, now);
        if (stalled(t, b, s, now)) {
            advance(t, s, now);
            now = mono_ns();
            continue;  /* the next one at once */
        }
        /* sleep until woken, the holder's lease ends, or the heartbeat */
        int64_t wait = QUEUE_NAP_NS, until = LOAD(&t->until);
        if (LOAD(&t->taken) == s && until > now && until - now + 20 * US < wait)
            wait = until - now + 20 * US;
        if (wait > b->gate_deadline - now)
            wait = b->gate_deadline - now;
        uint32_t w = LOAD(&mine->wake);
        ADD(&t->q_sleepers, 1);
        if (LOAD(&t->serving) == s)
            futex_wait(&mine->wake, w, wait);
        SUB(&t->q_sleepers, 1);
        now = mono_ns();
    }
}

/* The end of a write transaction (the lock released): the turn passes on
 * if it is time (time_to_pass); waiters for the lock are woken. */
static void tx_end(struct turn *t, struct rls_busy *b)
{
    b->in_tx = 0;
    if (b->ticketed) {
        uint32_t s = b->ticket;
        if (LOAD(&t->serving) != s || LOAD(&t->taken) != s) {
            b->ticketed = 0;  /* passed over meanwhile */
        } else {
            STORE(&t->busy, (uint64_t)s << 1);
            if (LOAD(&t->next) != s + 1) {
                int64_t now = mono_ns();
                if (time_to_pass(t, s, now))
                    pass_turn(t, b, now);
            }
        }
    }
    ADD(&t->released, 1);
    if (LOAD(&t->r_sleepers) > 0)
        futex_wake(&t->released);
}

/* Waits for SQLite's lock, held by something outside the turn: on
 * `released` with growing timeouts, at once if a transaction ended since
 * the last try.  Gives the turn up at the timeout. */
static int lock_wait(rls_db *db, struct rls_busy *b, struct turn *t, int count)
{
    int64_t now = mono_ns();
    if (!b->waiting) {
        b->waiting = 1;
        b->deadline = b->in_tx && b->gate_deadline ? b->gate_deadline
                                                   : now + (int64_t)db->ident.opt.busy_timeout_ms * MS;
        b->poll = LOCK_POLL_FIRST_NS;
        b->seen = LOAD(&t->released);
    }
    if (now >= b->deadline) {
        if (b->in_tx)
            tx_end(t, b);  /* the BEGIN fails */
        return 0;
    }
    uint32_t rel = LOAD(&t->released);
    if (count > 0 && rel != b->seen) {
        b->seen = rel;
        return 1;
    }
    int64_t wait = b->poll < b->deadline - now ? b->poll : b->deadline - now;
    b->poll = b->poll * 2 < LOCK_POLL_NS ? b->poll * 2 : LOCK_POLL_NS;
    ADD(&t->r_sleepers, 1);
    if (LOAD(&t->released) == rel)
        futex_wait(&t->released, rel, wait);
    SUB(&t->r_sleepers, 1);
    b->seen = LOAD(&t->released);
    return 1;
}

/* Statement trace hook: the gate before each BEGIN IMMEDIATE. */
static int trace_hook(unsigned type, void *arg, void *stmt, void *text)
{
    rls_db *db = arg;
    const char *sql = text;
    struct rls_busy *b = db->lite->busy;
    if (type != SQLITE_TRACE_STMT || !b || !sql || sql[0] != 'B' ||
        strncmp(sql, "BEGIN IMMEDIATE", 15) != 0)
        return 0;
    struct turn *t = turn_map(db, b);
    if (t)
        gate(db, b, t);
    return 0;
}
#endif /* HAVE_FUTEX */

static int busy_handler(void *arg, int count)
{
    rls_db *db = arg;
    struct rls_busy *b = db->lite->busy;
    int limit = db->ident.opt.busy_timeout_ms;
    if (b && count == 0)
        b->waiting = 0;  /* a new wait */
    if (db->lite->busy_cap_ms > 0 && db->lite->busy_cap_ms < limit)
        return sleep_wait(db, count, db->lite->busy_cap_ms);  /* a checkpoint's wait */
#ifdef HAVE_FUTEX
    if (b && b->turn)
        return lock_wait(db, b, b->turn, count);
#endif
    return sleep_wait(db, count, limit);
}

/* Before a commit.  One outside rls__commit (migrations) ends the turn's
 * transaction here, since no rls__busy_after_commit follows it. */
static int commit_hook(void *arg)
{
#ifdef HAVE_FUTEX
    rls_db *db = arg;
    struct rls_busy *b = db->lite->busy;
    if (b && b->in_tx && !db->conn.in_tx && b->turn)
        tx_end(b->turn, b);
#endif
    return 0;
}

static void rollback_hook(void *arg)
{
#ifdef HAVE_FUTEX
    rls_db *db = arg;
    struct rls_busy *b = db->lite->busy;
    if (b && b->in_tx && b->turn)
        tx_end(b->turn, b);
#endif
}

void rls__busy_after_commit(rls_db *db)
{
#ifdef HAVE_FUTEX
    struct rls_busy *b = db->lite->busy;
    struct turn *t = b ? b->turn : NULL;
    if (t && b->holding_off) {
        b->holding_off = 0;
        STORE(&t->hold, 0u);
        futex_wake(&t->hold);
        ADD(&t->released, 1);
        if (LOAD(&t->r_sleepers) > 0)
            futex_wake(&t->released);
    }
    if (t && b->in_tx)
        tx_end(t, b);
#endif
}

void rls__busy_leave(rls_db *db)
{
#ifdef HAVE_FUTEX
    struct rls_busy *b = db->lite->busy;
    struct turn *t = b ? b->turn : NULL;
    if (!t || !b->in_tx)
        return;
    tx_end(t, b);
    if (b->ticketed && LOAD(&t->next) != b->ticket + 1)
        pass_turn(t, b, mono_ns());
#endif
}

void rls__busy_hold_off(rls_db *db)
{
#ifdef HAVE_FUTEX
    struct rls_busy *b = db->lite->busy;
    struct turn *t = b ? turn_map(db, b) : NULL;
    if (!t)
        return;
    int64_t now = mono_ns(), end = now + HOLD_WAIT_NS;
    STORE(&t->hold_pid, (int32_t)b->pid);
    STORE(&t->hold_since, now);
    STORE(&t->hold, 1u);
    b->holding_off = 1;
    while (now < end) {
        uint32_t s = LOAD(&t->serving), rel = LOAD(&t->released);
        if (LOAD(&t->taken) != s || LOAD(&t->busy) != ((uint64_t)s << 1 | 1) ||
            (b->ticketed && b->ticket == s) || stalled(t, b, s, now))
            return;
        ADD(&t->r_sleepers, 1);
        if (LOAD(&t->released) == rel)
            futex_wait(&t->released, rel, 200 * US);
        SUB(&t->r_sleepers, 1);
        now = mono_ns();
    }
#endif
}

void rls__busy_install(rls_db *db)
{
    rls__busy_close(db);
    db->lite->busy = calloc(1, sizeof *db->lite->busy);  /* NULL: the busy handler only */
    if (db->lite->busy)
        db->lite->busy->pid = getpid();
    sqlite3_busy_handler(db->lite->sql, busy_handler, db);
    sqlite3_commit_hook(db->lite->sql, commit_hook, db);
    sqlite3_rollback_hook(db->lite->sql, rollback_hook, db);
#ifdef HAVE_FUTEX
    if (db->lite->busy && !db->ident.opt.read_only)
        sqlite3_trace_v2(db->lite->sql, SQLITE_TRACE_STMT, trace_hook, db);
#endif
}

void rls__busy_close(rls_db *db)
{
    struct rls_busy *b = db->lite->busy;
    if (!b)
        return;
#ifdef HAVE_FUTEX
    /* the turn passes on at once; a forked child leaves the parent's alone */
    if (b->turn && b->ticketed && b->pid == getpid())
        pass_turn(b->turn, b, mono_ns());
#endif
    if (b->map)
        munmap(b->map, RLS_SIDE_BYTES);
    free(b);
    db->lite->busy = NULL;
}

int rls__busy_probe(const rls_db *db, int *holding, int *queued)
{
    *holding = 0;
    *queued = 0;
#ifdef HAVE_FUTEX
    struct rls_busy *b = db->lite->busy;
    struct turn *t = b ? b->turn : NULL;
    if (!t)
        return 0;
    uint32_t s = LOAD(&t->serving);
    *holding = b->ticketed && b->ticket == s && LOAD(&t->taken) == s;
    *queued = (int)(LOAD(&t->next) - s);
    return 1;
#else
    return 0;
#endif
}
