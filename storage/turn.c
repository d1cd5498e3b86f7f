/*
 * turn.c - first come, first served among the processes that write checks
 * to one database, in turns of half a millisecond.
 *
 * Why: SQLite's write lock is taken by polling.  A waiter sleeps in the busy
 * handler and retries; a writer that has just committed starts its next
 * transaction a microsecond later and takes the lock again before any
 * sleeper wakes.  Under saturation some processes then wait hundreds of
 * milliseconds while others write thousands of times.  Handing the lock to
 * the longest waiter after every transaction is fair but slow: each hand-over
 * costs a wake-up, and the next writer starts with a cold page cache (SQLite
 * drops its cache when another connection has written), so the total halves.
 *
 * How: a ticket lock in memory shared by every process (the second page of
 * the side file "<db>-ckpt", wal.c).  A check takes a ticket before BEGIN IMMEDIATE
 * and waits until it is served.  The holder keeps the turn for the checks it
 * makes during TURN_LEASE_NS, or for as long as nobody waits, and then passes
 * it on after its commit (and after any checkpoint that commit ran).  The
 * next in line sleeps until just before the lease ends and then spins, so
 * the turn changes hands without a wake-up's delay; the others sleep on a
 * futex word of their own and are woken one by one as their turn nears
 * (waking them all at each hand-over costs the holder its CPU).  Writes come in batches (the
 * page cache stays warm) and a waiter waits about (writers ahead) x
 * TURN_LEASE_NS.  SQLite's lock still guarantees correctness: the turn only
 * orders the contenders, and everything works as before without it.
 *
 * Nobody must wait for a process that is gone or not coming:
 *  - a holder between two checks past its lease loses the turn to the first
 *    waiter that notices (at once if the waiter is a handle of the same
 *    process: the holder's thread is then not in a check);
 *  - a ticket given up (busy timeout) is skipped at once, one whose process
 *    died is skipped as soon as a waiter notices (kill(pid, 0)), and one
 *    whose owner does not take it up within TURN_GRACE_MS anyway;
 *  - a holder that died inside its transaction is skipped as soon as
 *    noticed, one that stays in it TURN_STALL_MS (stopped) anyway.
 * A holder skipped while alive simply meets SQLite's lock.  Without a
 * writable side file, without futexes, or with a busy timeout of 0, checks
 * take SQLite's lock directly.
 */
#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "db.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#define HAVE_FUTEX 1
#endif

#define TURN_LEASE_NS 500000    /* a holder keeps the turn this long */
#define TURN_SPIN_NS 30000      /* the next in line spins from this long before
                                   the end of the holder's lease ... */
#define TURN_SPIN_AFTER_NS 300000 /* ... to this long after it (one check) */
#define TURN_SLACK_NS 50000     /* Linux's default timer slack */
#define TURN_PROBE_NS 1000000   /* then asks whether the process lives */
#define TURN_GRACE_MS 20        /* for a served ticket's owner to show up */
#define TURN_STALL_MS 100       /* a transaction this long is passed over */
#define TURN_SLEEP_NS 1000000   /* the next in line looks at least this often */
#define TURN_NAP_NS 10000000    /* the others at least this often */
#define TURN_RING 64            /* owners of the latest tickets */

#define MS ((int64_t)1000000)

/*
 * The shared page.  Each field describing a ticket is written only by that
 * ticket's owner and tagged with the ticket, or trusted only while that
 * ticket is served: an owner passed over while writing misleads nobody for
 * long, and SQLite's lock is never in question.
 */
typedef struct turn {
    uint32_t next;       /* the next ticket to hand out */
    uint32_t serving;    /* the ticket whose owner may write now */
    uint32_t sleepers;   /* waiters in a futex wait */
    uint32_t taken;      /* the last ticket whose owner took up its turn */
    uint64_t busy;       /* ticket << 1 | 1 inside a transaction, | 0 between */
    int64_t until;       /* CLOCK_MONOTONIC ns: the lease of ticket `taken` */
    int32_t holder;      /* pid of the owner of ticket `taken` */
    int32_t pad;
    struct {
        uint64_t tag;    /* ticket << 2 | OWNER_WAITING or OWNER_GONE */
        int32_t pid;
        uint32_t wake;   /* futex word of the ticket's owner: bumped when its
                            turn comes or it becomes next in line */
    } owner[TURN_RING];
} turn;

enum { OWNER_WAITING = 1, OWNER_GONE = 2 };

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#ifdef HAVE_FUTEX
#define LOAD(p) __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_SEQ_CST)

static void futex_wait(uint32_t *addr, uint32_t val, int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake_all(uint32_t *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int gone(int32_t pid)
{
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/*
 * Maps the turn page of the side file; NULL if it cannot be shared.  The
 * page (the side file's second page) is first given real storage by
 * writing zeros to it, under the side file's checkpoint lock so that no two
 * handles do it at once and a page in use is never zeroed: a store to a
 * mapped hole of a file on a full filesystem would raise SIGBUS (SQLite
 * writes its -shm file for the same reason).  A full filesystem, a file
 * size limit or a read-only side file: SQLite's lock only.  Like SQLite's
 * -shm file, the side file must not be truncated while processes use it.
 */
static turn *turn_map(rls_db *db)
{
    if (db->turn_map)
        return db->turn_map;
    if (db->turn_unavailable || db->opt.read_only || db->opt.busy_timeout_ms == 0)
        return NULL;
    long page = sysconf(_SC_PAGESIZE);
    int fd = rls__wal_side_fd(db);
    struct stat sb;
    void *p = MAP_FAILED;
    if (page < (long)sizeof(turn))
        page = 65536;
    if (fd >= 0 && flock(fd, LOCK_EX) == 0) {
        int ok = fstat(fd, &sb) == 0;
        if (ok && sb.st_size < 2 * page) {
            static const char zeros[4096];
            for (off_t off = sb.st_size > page ? sb.st_size : page; ok && off < 2 * page;) {
                size_t n = (size_t)(2 * page - off) < sizeof zeros ? (size_t)(2 * page - off)
                                                                    : sizeof zeros;
                ssize_t w = pwrite(fd, zeros, n, off);
                ok = w > 0;
                off += w > 0 ? w : 0;
            }
        }
        if (ok)
            p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)page);
        flock(fd, LOCK_UN);
    }
    if (p == MAP_FAILED) {
        db->turn_unavailable = 1;
        return NULL;
    }
    db->turn_map = p;
    db->turn_size = (size_t)page;
    db->turn_pid = getpid();
    return p;
}

static void wake_owner(turn *t, uint32_t ticket)
{
    uint32_t *w = &t->owner[ticket % TURN_RING].wake;
    __atomic_fetch_add(w, 1, __ATOMIC_SEQ_CST);
    if (LOAD(&t->sleepers) > 0)
        futex_wake_all(w);
}

/* Moves the turn from ticket s to the next one, if it is still at s, and
 * wakes the owners of the new turn and of the one after it (which then
 * times its spin); the others sleep on. */
static void advance(turn *t, uint32_t s)
{
    if (__atomic_compare_exchange_n(&t->serving, &s, s + 1, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
        wake_owner(t, s + 1);
        wake_owner(t, s + 2);
    }
}

static void start_turn(rls_db *db, turn *t, uint32_t mine, int64_t now, int renewed)
{
    db->turn_held = 1;
    db->turn_kept = 0;
    db->turn_ticket = mine;
    if (!renewed) {
        STORE(&t->until, now + TURN_LEASE_NS);
        STORE(&t->holder, (int32_t)db->turn_pid);
        STORE(&t->taken, mine);
    }
    STORE(&t->busy, (uint64_t)mine << 1 | 1);
}

/* Should a waiter pass the turn at ticket s on?  `moved`: when it saw s
 * served first. */
static int stalled(const rls_db *db, turn *t, uint32_t s, int64_t now, int64_t moved)
{
    int64_t waited = now - moved;
    if (LOAD(&t->taken) != s) {
        /* not taken up (yet): given up, died, or just slow to wake */
        uint64_t tag = LOAD(&t->owner[s % TURN_RING].tag);
        if (tag == ((uint64_t)s << 2 | OWNER_GONE))
            return 1;
        if (waited >= TURN_PROBE_NS && tag == ((uint64_t)s << 2 | OWNER_WAITING) &&
            gone(LOAD(&t->owner[s % TURN_RING].pid)))
            return 1;
        return waited >= TURN_GRACE_MS * MS;
    }
    if (LOAD(&t->busy) == ((uint64_t)s << 1 | 1)) {
        /* inside a transaction */
        if (waited >= TURN_PROBE_NS && gone(LOAD(&t->holder)))
            return 1;
        return waited >= TURN_STALL_MS * MS;
    }
    /* between two checks: past its lease (or a lease from before a reboot,
     * further ahead than any lease), a handle of this very process (this
     * thread waits, so the holder is not in a check), or a dead process */
    int64_t until = LOAD(&t->until);
    int32_t holder = LOAD(&t->holder);
    return now >= until || until - now > TURN_LEASE_NS || holder == (int32_t)db->turn_pid ||
           (waited >= TURN_PROBE_NS && gone(holder));
}
#endif

int rls__turn_take(rls_db *db)
{
    db->turn_held = 0;
#ifdef HAVE_FUTEX
    turn *t = turn_map(db);
    if (!t) {
        db->turn_kept = 0;
        return RLS_OK;
    }
    int64_t now = mono_ns();
    if (db->turn_kept) {
        uint32_t s = LOAD(&t->serving);
        db->turn_kept = 0;
        if (s == db->turn_ticket && LOAD(&t->taken) == s) {
            /* still ours: within the lease, or nobody is waiting */
            if (now < LOAD(&t->until) || LOAD(&t->next) == s + 1) {
                start_turn(db, t, s, now, 1);
                return RLS_OK;
            }
            advance(t, s);
        }
    }
    uint32_t mine = __atomic_fetch_add(&t->next, 1, __ATOMIC_SEQ_CST);
    STORE(&t->owner[mine % TURN_RING].pid, (int32_t)db->turn_pid);
    STORE(&t->owner[mine % TURN_RING].tag, (uint64_t)mine << 2 | OWNER_WAITING);
    int64_t start = now, moved = now;
    int64_t limit = (int64_t)db->opt.busy_timeout_ms * MS;
    uint32_t last = LOAD(&t->serving);
    for (;;) {
        uint32_t s = LOAD(&t->serving);
        if (s == mine) {
            start_turn(db, t, mine, mono_ns(), 0);
            return RLS_OK;
        }
        if ((int32_t)(mine - s) < 0)
            return RLS_OK;  /* passed over: SQLite's lock decides */
        now = mono_ns();
        if (s != last) {
            last = s;
            moved = now;
        }
        if (stalled(db, t, s, now, moved)) {
            advance(t, s);
            moved = now;
            continue;
        }
        if (now - start >= limit) {
            /* gives up: the ticket is skipped when it comes */
            STORE(&t->owner[mine % TURN_RING].tag, (uint64_t)mine << 2 | OWNER_GONE);
            if (LOAD(&t->serving) == mine)
                advance(t, mine);
            return rls__error(db, RLS_EBUSY, "waited %d ms for the write lock "
                              "(busy timeout)", db->opt.busy_timeout_ms);
        }
        /* further back in line: woken when next in line, or now and then
         * to look for a stall */
        int64_t sleep = mine - s == 1 ? TURN_SLEEP_NS : TURN_NAP_NS;
        if (mine - s == 1 && LOAD(&t->taken) != s)
            sleep = TURN_SPIN_NS;  /* its holder is about to start: look again */
        else if (mine - s == 1) {
            /* next in line: spin around the end of the holder's lease */
            int64_t u = LOAD(&t->until);
            if (now >= u - TURN_SPIN_NS && now < u + TURN_SPIN_AFTER_NS) {
                sched_yield();
                continue;
            }
            /* futex timeouts may end up to 50 us late (timer slack) */
            if (now < u - TURN_SPIN_NS && u - TURN_SPIN_NS - TURN_SLACK_NS - now < sleep)
                sleep = u - TURN_SPIN_NS - TURN_SLACK_NS - now;
            if (sleep < 1000)
                sleep = 1000;
        }
        uint32_t *w = &t->owner[mine % TURN_RING].wake;
        uint32_t seen = LOAD(w);
        __atomic_fetch_add(&t->sleepers, 1, __ATOMIC_SEQ_CST);
        if (LOAD(&t->serving) == s)
            futex_wait(w, seen, sleep);
        __atomic_fetch_sub(&t->sleepers, 1, __ATOMIC_SEQ_CST);
    }
#else
    return RLS_OK;
#endif
}

void rls__turn_pass(rls_db *db)
{
#ifdef HAVE_FUTEX
    turn *t = db->turn_map;
    if (!db->turn_held || !t)
        return;
    db->turn_held = 0;
    uint32_t mine = db->turn_ticket;
    if (LOAD(&t->serving) != mine)
        return;  /* passed over meanwhile */
    STORE(&t->busy, (uint64_t)mine << 1);
    if (mono_ns() < LOAD(&t->until) || LOAD(&t->next) == mine + 1) {
        db->turn_kept = 1;  /* for this handle's next checks */
        return;
    }
    advance(t, mine);
#else
    (void)db;
#endif
}

void rls__turn_close(rls_db *db)
{
#ifdef HAVE_FUTEX
    turn *t = db->turn_map;
    /* a kept turn goes to the next in line at once; never from a forked
     * child, whose parent may still be using it */
    if (t && db->turn_kept && db->turn_pid == getpid())
        advance(t, db->turn_ticket);
    if (t)
        munmap(t, db->turn_size);
#endif
    db->turn_map = NULL;
    db->turn_held = 0;
    db->turn_kept = 0;
    db->turn_unavailable = 0;
}
