/*
 * shmtable.h - the shared-memory table of `durability: memory` limits
 * (issue #19, item 1; storage/memclass.c puts it on the check path).
 *
 * One file (under /dev/shm or beside the database, its name derived from
 * the database's identity: rls__shm_path) holds a fixed number of slots,
 * each the state (core/algo.h's algo_state) of one (limit id, key).  Every
 * process that opens the file maps it MAP_SHARED, so a state charged by one
 * process is seen by all at once, with no system call on the way.
 *
 * Layout (format version 3): a header page (magic, version, geometry, the
 * size of pthread_mutex_t: another ABI is another format), then buckets,
 * then hot records, then cold records.  A bucket is one cache line: one
 * robust process-shared mutex and the one-byte tags of its RLS__SHM_WAYS
 * slots (0: free, else 1..255 from the hash), compared at once.  A hot
 * record (128 bytes, two lines loaded as a pair) holds what every check of
 * an entry reads: a publish counter seq, the limit id, the key's length and
 * first 16 bytes, and two copies of the state (numbers, kind, log length).
 * A cold record holds the whole key and the two copies' sliding logs: read
 * only for a key longer than 16 bytes, a sliding_log state, or a listing.
 * An entry lives in one of two buckets chosen by its hash, the emptier
 * when it is made (two-choice hashing: measured, a 4096-slot table of
 * 16-way buckets is 90% full before a key first finds both its buckets
 * full of live entries; 8-way buckets gave 82%), in the way its tag names
 * (one of the 4 lowest) when that way is free, so that a lookup prefetches
 * that hot record with the buckets (the misses overlap).  The hot records
 * are kept way by way (way 0 of every bucket, then way 1, ...), so that a
 * table far from full keeps its live records in one stretch: fewer pages
 * and lines per check.  Finding an entry compares the tags of
 * its two buckets, then the identity in the hot record; no allocator lives
 * in the shared memory (fixed-size records).
 *
 * Creation is race-free: the first of N racing processes builds the whole
 * table in a temporary file beside the path (header, every mutex
 * initialised, space reserved with posix_fallocate so that a full /dev/shm
 * fails the open instead of raising SIGBUS later) and link()s it to the
 * path; link() either publishes a finished table or fails with EEXIST, and
 * the losers attach the winner's.  No process can see a half-made table.
 *
 * Locking: a transaction (one decision: read every state, decide, write
 * every state or none) locks the two buckets of each of its items, in
 * ascending bucket order (one global order: no deadlock among any number
 * of processes and threads), each lock taken once.  When every item's
 * entry exists (the common case: a key checked before), it locks only
 * the bucket holding each entry: found by its tag and identity without a
 * lock (a hint), then verified under that lock; a miss unlocks and takes
 * the two-bucket path.  One bucket is enough because an entry is made,
 * reused and dropped only under the lock of the bucket holding its slot
 * (the two-bucket path holds both, the slot's among them): an entry found
 * under its bucket's lock cannot move, and no second entry of its item
 * can be made meanwhile.  Every path still locks in ascending bucket
 * order.  Uncontended, a robust mutex is a compare-and-swap in user space
 * (no system call); contended it sleeps on a futex.
 *
 * A process killed while holding locks: the kernel marks its robust
 * mutexes owner-dead and the next locker gets EOWNERDEAD; we call
 * pthread_mutex_consistent() and go on.  No repair is needed, because a
 * state is never written in place: the hot record holds two copies, copy
 * seq & 1 current; a write fills the other copy (and its log) and then
 * stores seq + 1 with one release store (the publish).  A process killed
 * before the publish leaves the old state, after it the new one, never a
 * mix.  A new entry clears its slot's tag first (an expired state is a
 * fresh one, so "absent" is the same state), writes identity, key and
 * state, publishes seq and then its tag.  Why two copies rather than an
 * undo copy: recovery then does nothing at all (an undo copy must be
 * restored by whoever sees EOWNERDEAD, one more path to get wrong), a
 * write costs the same one copy of the state either way, and a reader
 * needs no lock (below).
 *
 * Reading without a lock (rls__shm_snap): a writer only fills the copy
 * that is not current, so a reader that reads seq, the identity and copy
 * seq & 1, then finds seq and the slot's tag unchanged, read a state the
 * entry held whole (a seqlock; a reuse clears the tag before touching the
 * identity and bumps seq before publishing its new tag).  For callers that
 * verify under the lock before they act (memclass.c's snapshots).
 *
 * Crash atomicity is per slot: the writes of one transaction are published
 * one after the other, so a process killed between two of them leaves its
 * (never acknowledged) call charged on the limits written before the kill
 * and not on the others.  Each limit's count so stays within
 * [acknowledged, acknowledged + the killed call]: never torn, never more
 * than the killed call's own charge.  The decision itself is all or
 * nothing: the caller writes only when every limit admits.
 *
 * sliding_log: a slot has room for log_max entries of ALGO_LOG_ENTRY bytes
 * (in its cold record; a geometry field, fixed when the table is made); a
 * memory-class sliding_log limit whose limit exceeds it is refused by the rules
 * loader (a configuration error), never truncated.  The bound keeps slots
 * one size, the table one flat array without an allocator to crash in.
 *
 * Survives: process restarts (the file stays, every state in it).  Lost:
 * a host reboot (/dev/shm is memory; a file kept on disk carries the boot
 * id it was made in and is refused after a reboot, and rls__shm_path names
 * a new one) or the file's removal.  Processes sharing a table share one
 * PID namespace (robust futexes name their owner by thread id) and do not
 * fork while holding a transaction.
 *
 * Threads: a handle (rls__shm) may be shared by threads; a transaction
 * (rls__shm_txn) belongs to one thread, which holds no other transaction
 * of the same table at the same time (that would deadlock on itself).
 */
#ifndef RLS_SHMTABLE_H
#define RLS_SHMTABLE_H

#include <stddef.h>
#include <stdint.h>
#include "algo.h"

#define RLS__SHM_WAYS 16        /* slots per bucket                          */
#define RLS__SHM_TXN_MAX 16      /* items one transaction may lock            */
#define RLS__SHM_SLOTS_MAX (1u << 26) /* largest table: 64M slots             */
#define RLS__SHM_KEY_DEFAULT 256 /* key_max matching RLS_KEY_MAX_DEFAULT      */
#define RLS__SHM_LOG_DEFAULT 16  /* sliding_log entries per slot by default   */

/* The shape of a table, fixed when it is made. */
typedef struct rls__shm_geom {
    uint32_t slots;     /* entries, >= 2 * RLS__SHM_WAYS; rounded up to a
                           multiple of RLS__SHM_WAYS                      */
    uint32_t key_max;   /* longest key in bytes, 1..RLS_KEY_MAX_LIMIT          */
    uint32_t log_max;   /* sliding_log entries per slot, 0..ALGO_SLIDING_LOG_MAX
                           (0: no sliding_log limit fits)                     */
} rls__shm_geom;

typedef struct rls__shm rls__shm;

/* What a table is, for tools and tests. */
typedef struct rls__shm_info {
    rls__shm_geom geom;      /* as stored (slots rounded up)               */
    uint64_t file_size;      /* bytes                                      */
    uint64_t dev, ino;       /* the file: two handles on one table agree   */
    uint64_t recoveries;     /* locks taken over from killed processes     */
} rls__shm_info;

/*
 * Writes "<dir>/rlstore-<16 hex>-<8 hex>.shm" into buf: a hash of identity
 * (e.g. the database's path or a PostgreSQL database's name), so that
 * every process of one database finds one table, and a hash of the host's
 * boot id, so that a table kept on disk (beside the database) is never
 * used after a reboot: its lock words may name threads of the earlier
 * boot, which no kernel will ever mark dead.  RLS_OK, or RLS_EINVAL (NULL,
 * empty, or buf too small; buf then holds "").
 */
int rls__shm_path(char *buf, size_t cap, const char *dir, const char *identity);

/*
 * Opens the table at path, making it (mode 0600) if it does not exist and
 * g is not NULL.  With g, an existing table must have that geometry (slots
 * compared after rounding up); with g NULL an existing table is attached
 * whatever its geometry (a tool reading it).  On success *out is a handle
 * to rls__shm_close.  Errors (*out NULL, nothing left behind; why, when
 * not NULL, gets a line of detail):
 *   RLS_EINVAL   bad arguments or geometry
 *   RLS_ENOTFOUND  no table at path and g NULL
 *   RLS_EISDIR   path is a directory
 *   RLS_ECANTOPEN  cannot open or create (permissions, missing folder)
 *   RLS_ENOTDB   the file is not a table of this format (magic, version,
 *                ABI, or too short to hold a header)
 *   RLS_ECORRUPT the header is ours but the file size disagrees with it,
 *                or the table was made before the host's last restart
 *   RLS_ECONFIG  a valid table of another geometry than g
 *   RLS_EFULL    no space to make the table (ENOSPC on /dev/shm)
 *   RLS_ENOMEM   out of memory, or mmap failed
 */
int rls__shm_open(rls__shm **out, const char *path, const rls__shm_geom *g,
                  char *why, size_t whylen);

/* rls__shm_open making a table with mode (read and write bits; the
 * umask does not narrow it) and group gid (-1: the creator's; a group
 * the creator is not a member of stays the creator's), both set before
 * the table is published: processes of the group attach it from its
 * first moment.  An existing table is attached as it is. */
int rls__shm_open_as(rls__shm **out, const char *path, const rls__shm_geom *g, unsigned mode,
                     long gid, char *why, size_t whylen);

/* Unmaps and frees a handle (the file stays).  NULL is a no-op. */
void rls__shm_close(rls__shm *t);

/* Fills *info.  RLS_OK or RLS_EINVAL. */
int rls__shm_info_get(const rls__shm *t, rls__shm_info *info);

/* One (limit, key) of a transaction.  key bytes stay valid until unlock. */
typedef struct rls__shm_item {
    int64_t lid;        /* the limit's id                                  */
    int kind;           /* its algorithm (enum algo_kind): a state stored
                           under another kind reads as absent             */
    const void *key;
    size_t key_len;     /* 1..key_max                                      */
} rls__shm_item;

/* A transaction in progress: caller-allocated (on the stack), filled by
 * rls__shm_lock, ended by rls__shm_unlock.  Fields are private. */
typedef struct rls__shm_txn {
    rls__shm *t;
    size_t n;
    size_t nlocked;
    uint32_t locked[2 * RLS__SHM_TXN_MAX];  /* bucket numbers, ascending   */
    uint32_t slot[RLS__SHM_TXN_MAX];        /* slot number of each item    */
    uint32_t tag[RLS__SHM_TXN_MAX];
    unsigned char fresh[RLS__SHM_TXN_MAX];  /* 1: reserved, not published  */
    rls__shm_item item[RLS__SHM_TXN_MAX];
} rls__shm_txn;

/*
 * Locks the entries of items[0..n) (n 1..RLS__SHM_TXN_MAX, no (lid, key)
 * twice) for one decision at time now (ms): each is found, or a slot is
 * reserved for it (a free one, or one whose state expired at or before
 * now: expired entries are reused).  Nothing is written until
 * rls__shm_write: a transaction that writes nothing changes nothing.
 * Returns RLS_OK with every lock held, or without any lock held:
 *   RLS_EINVAL  bad arguments (n, a duplicate item)
 *   RLS_EKEY    a key empty or longer than key_max
 *   RLS_EFULL   an absent key's two buckets hold only live entries:
 *               the table is full for it; nothing changed
 *   RLS_ECORRUPT  a lock cannot be taken (not recoverable)
 */
int rls__shm_lock(rls__shm *t, const rls__shm_item *items, size_t n, int64_t now,
                  rls__shm_txn *tx);

/*
 * Like rls__shm_lock, for a transaction that only reads (a peek, usage):
 * never RLS_EFULL; an absent item that would find no room reads absent,
 * and writing it fails with RLS_EFULL (nothing written).
 */
int rls__shm_lock_peek(rls__shm *t, const rls__shm_item *items, size_t n, int64_t now,
                       rls__shm_txn *tx);

/*
 * The state of item i: present 0 if the entry is new or holds another
 * kind.  The sliding log is copied into st->log (the caller's buffer of
 * st->log_cap bytes, which must hold the stored log; NULL when log_max is
 * 0); st->log and st->log_cap are kept.  RLS_OK, or RLS_EINVAL (i out of
 * range, log buffer too small: *st unchanged).
 */
int rls__shm_read(const rls__shm_txn *tx, size_t i, algo_state *st);

/*
 * One item's transaction for a writer of the memory lane, in one call:
 * rls__shm_lock of it; then RLS_EBUSY (no lock held) when a losing writer
 * holds a bucket it locked at mono_ms (rls__shm_held); then its state read
 * into *st as by rls__shm_read (whose RLS_EINVAL leaves no lock held).
 * RLS_OK: the locks held, *st read; other errors as rls__shm_lock's.
 */
int rls__shm_lock_read1(rls__shm *t, const rls__shm_item *it, int64_t now, int64_t mono_ms,
                        rls__shm_txn *tx, algo_state *st);

/*
 * Writes the state of item i (published at once, see the file comment).
 * RLS_OK, or RLS_EINVAL (i out of range, st->log_len over the table's
 * log_max entries or not a whole number of them): nothing written.
 */
int rls__shm_write(rls__shm_txn *tx, size_t i, const algo_state *st);

/*
 * Removes the entry of item i (a reset): from now on it reads absent.  One
 * store, so a process killed around it leaves the entry or nothing.
 * RLS_OK (also when there was no entry), or RLS_EINVAL.
 */
int rls__shm_drop(rls__shm_txn *tx, size_t i);

/*
 * The state of one item read without any lock (a seqlock read, see the
 * file comment): a state the entry held whole at one moment during the
 * call, or absent when no entry of the item was seen.  For a reader that
 * verifies what it read under the lock before acting on it (memclass.c's
 * snapshot, compared at commit): an item made, reused or dropped during
 * the call may read either way.  The log is copied as by rls__shm_read.
 * RLS_OK; RLS_EBUSY when the entry kept moving under the reader (a few
 * tries: take the lock then); RLS_EINVAL (bad arguments, log buffer too
 * small), RLS_EKEY.
 */
int rls__shm_snap(const rls__shm *t, const rls__shm_item *it, algo_state *st);

/*
 * Fairness for a writer that keeps losing (memclass.c: a database
 * transaction whose snapshot moved at every attempt because fast writers
 * of other processes charge its key meanwhile).  Under tx's locks, after
 * its compare, rls__shm_fair_note records whether it lost: the
 * RLS__SHM_HOLD_AFTER-th loss in a row asks the fast writers of every
 * bucket tx holds to keep off for RLS__SHM_HOLD_MS (CLOCK_MONOTONIC ms,
 * system-wide; a later hold stays), a win lifts its hold if still its
 * own.  rls__shm_held: is a bucket tx holds held at mono_ms (a fast writer
 * then unlocks and takes the slow path)?  A process killed while holding
 * leaves a hold that ends by itself.
 */
#define RLS__SHM_HOLD_AFTER 2
#define RLS__SHM_HOLD_MS 100
typedef struct rls__shm_fair {
    int conflicts;      /* losses in a row */
    int64_t hold;       /* the hold it set, 0 none */
} rls__shm_fair;
void rls__shm_fair_note(rls__shm_txn *tx, rls__shm_fair *f, int lost, int64_t mono_ms);
int rls__shm_held(const rls__shm_txn *tx, int64_t mono_ms);
/* Is a bucket tx holds held at mono_ms by another writer than f (f's own
 * hold aside)?  Where every memory writer is a database transaction
 * (PostgreSQL: no fast path), they wait for each other's holds. */
int rls__shm_held_by_other(const rls__shm_txn *tx, const rls__shm_fair *f, int64_t mono_ms);

/* Releases every lock of tx.  Idempotent. */
void rls__shm_unlock(rls__shm_txn *tx);

/*
 * Calls fn for every entry whose state has not expired at now (usage
 * listings, counts), one bucket locked at a time: each entry is seen
 * whole, the table not at one instant.  st->log points into the table and
 * is valid during the call only; neither fn nor the caller may hold a
 * transaction of the table (that would wait for itself).  A nonzero
 * return of fn stops the walk and is returned; else RLS_OK, or
 * RLS_ECORRUPT when a lock cannot be taken.
 */
typedef int (*rls__shm_each_fn)(void *ctx, int64_t lid, int kind, const void *key,
                                size_t key_len, const algo_state *st);
int rls__shm_each(rls__shm *t, int64_t now, rls__shm_each_fn fn, void *ctx);

/*
 * Tests only: when not NULL, called at the points below inside the
 * critical section (item: the item being written, else 0), so that a
 * test can stop a process there and kill it.  NULL in production.
 */
enum {
    RLS__SHM_AT_LOCKED = 1,    /* every lock held, nothing written          */
    RLS__SHM_AT_HALF = 2,      /* half of a new copy written                */
    RLS__SHM_AT_WRITTEN = 3,   /* a new copy written, not yet published     */
    RLS__SHM_AT_PUBLISHED = 4, /* that copy published                       */
    RLS__SHM_AT_SNAP = 5       /* rls__shm_snap (no lock held): the publish
                                  counter read, the state not yet copied     */
};
extern void (*rls__shm_hook)(int point, size_t item);

#endif
