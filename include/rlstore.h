/*
 * rlstore.h - the public interface of librlstore, a durable rate limiter.
 *
 * This is the only header an application includes.  Every public name starts
 * with rls_ or RLS_.  Handles are opaque; structs that cross the boundary
 * either carry their own size (rls_options) or reserve room for growth
 * (rls_result), so the ABI grows by appending, never by changing.
 *
 * Conventions
 *   - Every function that can fail returns an int: RLS_OK (0) on success or
 *     one of the RLS_E* codes below.  rls_strerror() gives static text,
 *     rls_errname() the symbolic name and rls_errmsg() the detail of the last
 *     error on a handle.
 *   - Time is int64 milliseconds since the Unix epoch, UTC.  Every function
 *     that reads the clock has an _at twin taking now_ms, for tests and replay.
 *   - Keys and actions are NUL-terminated byte strings.  A key is 1 to
 *     max_key_len bytes (default 256) and may contain any byte but NUL.
 *   - The library never prints, never exits and never aborts.
 *   - A handle is used by one thread at a time, unless it was opened with
 *     rls_options.thread_safe = 1: then any number of threads may call
 *     every function on it at once (rls_close excepted: call it when no
 *     other thread uses the handle).  Checks, peeks and reservations that
 *     arrive while a transaction is open join the next one, or under
 *     durability full the open one before its fsync (group commit:
 *     one COMMIT, one fsync, each check decided on its own in arrival
 *     order and durable before its call returns); other calls take turns.
 *     On such a handle rls_errmsg() is per thread: the detail of this
 *     thread's last call on it.
 *   - A handle inherited across fork() is detected and reopened
 *     transparently in the child; the child never touches the parent's
 *     connection.  Fork while no other thread is inside a call on the
 *     handle (SQLite's and libpq's own locks may be held in the child).
 */
#ifndef RLSTORE_H
#define RLSTORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(RLS_BUILDING)
#define RLS_EXTERN extern
#elif defined(__GNUC__)
#define RLS_EXTERN extern __attribute__((visibility("default")))
#else
#define RLS_EXTERN extern
#endif

/* ---- versions ---------------------------------------------------------
 * Same major version = ABI compatible (see docs/ABI.md). */
#define RLS_VERSION_MAJOR 0
#define RLS_VERSION_MINOR 2
#define RLS_VERSION_PATCH 0
#define RLS_VERSION_STRING "0.2.0"
#define RLS_VERSION_HEX \
    ((RLS_VERSION_MAJOR << 16) | (RLS_VERSION_MINOR << 8) | RLS_VERSION_PATCH)

/* The version of the library actually linked, as RLS_VERSION_HEX. */
RLS_EXTERN unsigned int rls_version(void);
/* The same as a static string such as "0.1.0". */
RLS_EXTERN const char *rls_version_string(void);

/* ---- errors -----------------------------------------------------------
 * One table generates the enum, rls_strerror() and rls_errname().
 * Codes are only ever appended: a code's number never changes. */
#define RLS_ERRNO_MAP(XX)                                                   \
    XX(OK, "success")                                                       \
    XX(EINVAL, "invalid argument")                                          \
    XX(ENOMEM, "out of memory")                                             \
    XX(EKEY, "invalid key: empty, too long or not valid for the action")    \
    XX(ECOST, "invalid cost: must be between 1 and RLS_COST_MAX")           \
    XX(ETIME, "time out of range")                                          \
    XX(ENOACTION, "unknown action")                                         \
    XX(ENOTFOUND, "not found")                                              \
    XX(ECANTOPEN, "cannot open database file")                              \
    XX(EISDIR, "database path is a directory")                              \
    XX(ENOTDB, "file is not an rlstore database")                           \
    XX(ENEWER, "database schema is newer than this library")                \
    XX(EREADONLY, "database is read-only")                                  \
    XX(EBUSY, "database is busy: lock wait timed out")                      \
    XX(EIO, "storage I/O error")                                            \
    XX(EFULL, "disk or database full")                                      \
    XX(ECORRUPT, "database is corrupt")                                     \
    XX(ESTORAGE, "storage error")                                           \
    XX(ECONFIG, "invalid configuration")                                    \
    XX(ENORULES, "no rules have been applied to this database")             \
    XX(EEXPIRED, "reservation expired and was refunded")                    \
    XX(EMISUSE, "library misused: handle not usable")                       \
    XX(EUNSAFE, "database contains objects rlstore did not create")           \
    XX(ECONFLICT, "the rules changed since the version the change was based on") \
    XX(EROLE, "database file has another role (one file, rules or counters) or pair") \
    XX(EOLDSCHEMA, "database schema is older than this library and no_upgrade is set")

typedef enum rls_errno {
#define RLS__ERR_ENUM(name, text) RLS_##name,
    RLS_ERRNO_MAP(RLS__ERR_ENUM)
#undef RLS__ERR_ENUM
    RLS__ERR_COUNT
} rls_errno;

/* Static English text for a code; "unknown error" for an unknown code. */
RLS_EXTERN const char *rls_strerror(int code);
/* Symbolic name without prefix, e.g. "EKEY"; "UNKNOWN" for unknown codes. */
RLS_EXTERN const char *rls_errname(int code);

/* ---- limits of the API ------------------------------------------------ */
#define RLS_KEY_MAX_DEFAULT 256           /* default max key length, bytes */
#define RLS_KEY_MAX_LIMIT   4096          /* largest max_key_len accepted  */
#define RLS_COST_MAX        1000000000LL  /* largest cost of one request   */
#define RLS_LIMIT_MAX       1000000000000LL /* largest limit, burst or override */
#define RLS_NAME_MAX        63            /* action, limit and tier names  */
/* Accepted now_ms: 1970-01-01 .. 9999-12-31 UTC. */
#define RLS_TIME_MIN        0LL
#define RLS_TIME_MAX        253402300799999LL

/* ---- opening ----------------------------------------------------------- */
typedef struct rls_db rls_db;

enum rls_durability {
    RLS_DURABILITY_NORMAL = 0, /* WAL, synchronous=NORMAL: survives a process crash */
    RLS_DURABILITY_FULL = 1    /* fsync on every commit: survives a power loss */
};

enum rls_on_error {
    RLS_ON_ERROR_DENY = 0,  /* a storage failure denies the request */
    RLS_ON_ERROR_ALLOW = 1  /* a storage failure admits the request */
};

/*
 * Options of rls_open().  Always initialise with rls_options_init(), which
 * records sizeof(rls_options) in .size, then change what you need: a library
 * newer than your program reads only the fields your program knew about.
 */
typedef struct rls_options {
    size_t size;            /* set by rls_options_init(); do not change      */
    int busy_timeout_ms;    /* max wait for the write lock (default 5000)    */
    int durability;         /* enum rls_durability (default NORMAL)          */
    int on_error;           /* enum rls_on_error (default DENY); an action's
                               on_error in the rules takes precedence        */
    int read_only;          /* 1: open read-only; checks that would write
                               fail with RLS_EREADONLY (default 0)           */
    int create;             /* 1: create the file if missing (default 1)    */
    unsigned int file_mode; /* mode of a newly created file (default 0600)  */
    int max_key_len;        /* 1..RLS_KEY_MAX_LIMIT (default 256)            */
    const char *tool;       /* name recorded in the audit log (default "lib");
                               copied by rls_open()                          */
    /* appended for privilege separation (docs/SECURITY.md): */
    const char *counters_path; /* NULL (default): one database file.  Else a
                               split deployment: `path` of rls_open() is the
                               rules database (rule sets, tiers, assignments,
                               overrides, manual blocks, audit) and this the
                               counters database (counters, reservations,
                               penalty blocks, stats).  A new rules file gets
                               file_mode without group and other write
                               permission.  Copied by rls_open()             */
    int rules_read_only;    /* 1: open the rules database read-only, as the
                               applications of a split deployment do: checks
                               work, every admin change fails with
                               RLS_EREADONLY (default 0)                     */
    const char *file_group; /* group (name or number) given to files
                               rls_open() creates, e.g. for a group-shared
                               mode such as 0660; NULL (default): the
                               creator's.  Unknown or not allowed: EINVAL    */
    /* appended in RLSTORE_0.7 (issues #19 and #20): */
    int thread_safe;        /* 1: one handle serves any number of threads at
                               once: every call takes the handle in turn,
                               and checks, peeks and reservations arriving
                               while a transaction is open join the next
                               one (group commit: one COMMIT and one fsync
                               for all of them, each decided on its own,
                               in arrival order; a failed COMMIT fails each
                               with its failure policy).  rls_errmsg() is
                               then per thread.  Default 0: one thread at
                               a time; 0 or 1, else EINVAL              */
    const char *shm_dir;    /* folder of the shared-memory table of
                               `durability: memory` limits (one file per
                               database and host, made at the first such
                               check; lost at a reboot); NULL (default):
                               /dev/shm.  Copied by rls_open(); "" is
                               EINVAL; missing or not writable: that check
                               fails with ECANTOPEN (failure policy)       */
    unsigned int shm_slots; /* entries of that table when this handle makes
                               it (default 65536, 0 = default; 32..2^26,
                               else EINVAL; ~900 bytes each with 256-byte
                               keys); an existing table keeps its size;
                               full: a new key's check fails with EFULL  */
    int no_upgrade;         /* 1: never migrate the schema on open; an older
                               one fails with RLS_EOLDSCHEMA (default 0)    */
    void (*log_fn)(void *log_ctx, int level, const char *line);
                            /* NULL (default), or called with one line per
                               event an operator should see (a penalty
                               block, its escalation and expiry); level as
                               syslog's LOG_* values                        */
    void *log_ctx;          /* passed to log_fn                              */
} rls_options;

/* Fills *opt with the defaults above.  NULL is a no-op.  It writes exactly
 * the rls_options a program was built with: one symbol version per layout
 * (a program built against 0.1 fills only the fields up to tool, one built
 * against RLSTORE_0.2..0.6 those up to file_group). */
RLS_EXTERN void rls_options_init(rls_options *opt);

/*
 * Opens (and if needed creates and migrates) the database at path: a
 * SQLite file, or with a "postgresql://" or "postgres://" libpq URI a
 * PostgreSQL database (the tables in the connection's current schema).
 * On success *db is a new handle; on failure *db is NULL and
 * rls_errmsg(NULL) gives the detail (per thread; a URI's password never
 * appears in it).  opt may be NULL for defaults.
 * Errors: EINVAL, ENOMEM, ECANTOPEN, EISDIR, ENOTDB, ENEWER, EREADONLY,
 * EUNSAFE, EBUSY, EIO, ECORRUPT; ENOTFOUND for a PostgreSQL database
 * without rlstore's schema when opt->create is 0.  A failed open never
 * modifies the file or database.
 */
RLS_EXTERN int rls_open(rls_db **db, const char *path, const rls_options *opt);

/* Closes the handle and frees everything it owns.  NULL is a no-op. */
RLS_EXTERN void rls_close(rls_db *db);

/*
 * Detail of the last error on db, e.g. "action 'x' is not defined".
 * Static "out of memory" or "" if none.  Valid until the next call on db.
 * With db == NULL: the detail of the last failed rls_open() in this thread.
 * On a thread-safe handle: the detail of this thread's last call on db
 * (a thread keeps it for its last four thread-safe handles), valid until
 * this thread's next call on db.
 */
RLS_EXTERN const char *rls_errmsg(rls_db *db);

/* ---- checking -------------------------------------------------------- */
enum rls_reason {
    RLS_REASON_OK = 0,            /* admitted                                */
    RLS_REASON_LIMIT = 1,         /* denied: a limit is exhausted            */
    RLS_REASON_BLOCKED = 2,       /* denied: key blocked or tier 'blocked'   */
    RLS_REASON_COST_EXCEEDS = 3,  /* denied: cost > capacity, never admitted */
    RLS_REASON_SHADOW = 4,        /* admitted, but a shadow limit would deny */
    RLS_REASON_DEGRADED = 5,      /* storage failed; decided by on_error     */
    RLS_REASON_BATCH = 6          /* denied: admissible itself, not charged
                                     because another item of its batch was
                                     denied (rls_check_many)                 */
};

/* "ok", "limit", "blocked", "cost_exceeds_limit", "shadow", "degraded",
 * "batch". */
RLS_EXTERN const char *rls_reason_name(int reason);

/*
 * The outcome of a check for the deciding limit: the one that denied, or else
 * the one with the least remaining fraction.  All fields are filled by every
 * check, also on error (then reason is DEGRADED).
 */
typedef struct rls_result {
    int allowed;             /* 1 admitted, 0 denied                           */
    int reason;              /* enum rls_reason                                */
    int64_t limit;           /* capacity: limit, or burst for bucket algorithms */
    int64_t remaining;       /* units still admissible now; never negative     */
    int64_t reset_ms;        /* ms until fully replenished if idle             */
    int64_t retry_after_ms;  /* 0 if admitted; ms until the same request would
                                be admitted; -1 never                           */
    int64_t delay_ms;        /* shaping delay (leaky_bucket), else 0           */
    int64_t window_ms;       /* the deciding limit's window length; for a
                                calendar window (1d, 1w, 1mo) the current
                                one's in its zone: 23 or 25 h on a DST day */
    char rule[RLS_NAME_MAX + 1];  /* deciding limit's name; "" if none         */
    int64_t reserved_[8];    /* room for future fields; ignore                 */
} rls_result;

/*
 * Checks and, if admitted, charges `cost` units of `action` for `key`.
 * An action's limits are all-or-nothing: the request is admitted only if
 * every limit admits it, and then every limit is charged, in one
 * transaction.  A denied request consumes nothing (unless a limit says
 * count_denied).  Returns RLS_OK whether admitted or denied: look at
 * res->allowed.  On a storage error returns the code AND fills res per the
 * failure policy (allowed per on_error, reason DEGRADED).
 * Errors: EINVAL (NULL argument), EKEY, ECOST, ETIME, ENOACTION, ENORULES,
 * EREADONLY, EBUSY, EIO, EFULL, ECORRUPT, ESTORAGE, ENOMEM.
 */
RLS_EXTERN int rls_check(rls_db *db, const char *action, const char *key,
                         int64_t cost, rls_result *res);
RLS_EXTERN int rls_check_at(rls_db *db, const char *action, const char *key,
                            int64_t cost, int64_t now_ms, rls_result *res);

/* ---- batch checks ------------------------------------------------------
 * One request of a batch: `cost` units of `action` for `key`. */
typedef struct rls_item {
    const char *action;
    const char *key;
    int64_t cost;
} rls_item;

/* The most items one rls_check_many call takes (more: RLS_EINVAL). */
#define RLS_BATCH_MAX 64

/*
 * Checks the n items (n <= RLS_BATCH_MAX) in one transaction: the batch is
 * admitted only if every item is admitted, and then every item is
 * charged; otherwise no item is charged.  results[i] is item i's own
 * decision, as rls_check would answer it:
 *   - batch admitted: every results[i].allowed is 1 (reason OK or SHADOW);
 *   - batch denied: an item that denied has its own denial (LIMIT,
 *     BLOCKED, COST_EXCEEDS) and writes what a denied rls_check writes for
 *     it (a count_denied limit's charge, a block_for penalty); an item that
 *     would have been admitted is not charged and answers allowed 0,
 *     reason RLS_REASON_BATCH, its limit, remaining, reset_ms, window_ms
 *     and rule as its admission would have left them, delay_ms 0 and
 *     retry_after_ms the batch's: the longest wait of the items that
 *     denied (-1 if one never admits).
 * A denial the handle has cached for one item may answer the whole batch
 * without a transaction: its other items are then RLS_REASON_BATCH with
 * only retry_after_ms set.
 * Two items of the same action and key (after normalisation) are refused:
 * RLS_EINVAL naming both indices, nothing charged (one item with the sum
 * of their costs says the same).  n == 0 is RLS_OK with nothing read or
 * written (items and results may then be NULL).  An invalid item is the
 * error of rls_check (EKEY, ECOST, ENOACTION...), rls_errmsg() naming its
 * index ("item 2: ..."), nothing charged.  On a storage error every
 * result is DEGRADED, admitted only if the failure policy of every item's
 * action admits.  Returns RLS_OK whether admitted or denied.
 * Errors: those of rls_check; EINVAL also for NULL items or results with
 * n > 0, n > RLS_BATCH_MAX (results then not written), a repeated
 * (action, key), items holding more than 16 `durability: memory` limits
 * in all (counting each action's largest tier: one transaction locks its
 * memory entries together, 16 at most).
 */
RLS_EXTERN int rls_check_many(rls_db *db, const rls_item *items, size_t n,
                              rls_result *results);
RLS_EXTERN int rls_check_many_at(rls_db *db, const rls_item *items, size_t n,
                                 int64_t now_ms, rls_result *results);

/* As rls_check, but charges nothing and writes nothing: "would it pass?". */
RLS_EXTERN int rls_peek(rls_db *db, const char *action, const char *key,
                        int64_t cost, rls_result *res);
RLS_EXTERN int rls_peek_at(rls_db *db, const char *action, const char *key,
                           int64_t cost, int64_t now_ms, rls_result *res);

/*
 * Gives `cost` units back to every limit of the action for key, as charged in
 * the current window (a unit charged in a window that has already ended is
 * not refunded: that window's quota is gone anyway).  Never raises a counter
 * above full capacity.
 */
RLS_EXTERN int rls_refund(rls_db *db, const char *action, const char *key,
                          int64_t cost);
RLS_EXTERN int rls_refund_at(rls_db *db, const char *action, const char *key,
                             int64_t cost, int64_t now_ms);
/*
 * As rls_refund, and *refunded (may be NULL) receives the units actually
 * given back: the most any limit of the action got back.  Less than cost
 * when fewer units were in use, or were charged in a window that has
 * ended; 0 when nothing was given back.  0 on error.
 */
RLS_EXTERN int rls_refund_units(rls_db *db, const char *action, const char *key,
                                int64_t cost, int64_t *refunded);
RLS_EXTERN int rls_refund_units_at(rls_db *db, const char *action, const char *key,
                                   int64_t cost, int64_t now_ms, int64_t *refunded);

/* ---- reservations -----------------------------------------------------
 * Two-phase consumption.  rls_reserve() decides and charges like rls_check();
 * if admitted, *id receives a reservation id (> 0).  rls_commit() makes the
 * charge final; rls_cancel() refunds it.  A reservation neither committed nor
 * cancelled within ttl_ms is refunded automatically: at the next check of
 * the same action and key at the latest, and by the library's background
 * GC steps.  Commit or cancel of an unknown (or already resolved) id:
 * ENOTFOUND.  Commit of an expired one: EEXPIRED (it has been refunded);
 * cancel of an expired one: OK (refunded either way).  A reservation whose
 * check failed under the allow policy (reason DEGRADED) has no id and
 * needs neither commit nor cancel.
 */
#define RLS_RESERVE_TTL_DEFAULT 60000LL
RLS_EXTERN int rls_reserve(rls_db *db, const char *action, const char *key,
                           int64_t cost, int64_t ttl_ms, int64_t *id,
                           rls_result *res);
RLS_EXTERN int rls_reserve_at(rls_db *db, const char *action, const char *key,
                              int64_t cost, int64_t ttl_ms, int64_t now_ms,
                              int64_t *id, rls_result *res);
RLS_EXTERN int rls_commit(rls_db *db, int64_t id);
RLS_EXTERN int rls_commit_at(rls_db *db, int64_t id, int64_t now_ms);
RLS_EXTERN int rls_cancel(rls_db *db, int64_t id);
RLS_EXTERN int rls_cancel_at(rls_db *db, int64_t id, int64_t now_ms);

/* ---- HTTP headers -----------------------------------------------------
 * Formats the IETF RateLimit-Policy and RateLimit fields
 * (draft-ietf-httpapi-ratelimit-headers) and, for a denied result with a
 * known retry time, Retry-After (seconds, rounded up), as CRLF-terminated
 * header lines into buf.  Returns the length written (excluding NUL), or the
 * length that would have been written if bufsize is too small (as snprintf);
 * -1 if res or buf is invalid.  policy may be NULL for the rule name.
 */
RLS_EXTERN int rls_format_headers(const rls_result *res, const char *policy,
                                  char *buf, size_t bufsize);

/* ---- text helpers for tools ------------------------------------------
 * Parse a duration such as "250ms", "10s", "1h30m", "1d", "1w", "1mo"
 * (1mo = 30 days here) into *ms.  RLS_OK or RLS_EINVAL. */
RLS_EXTERN int rls_duration_parse(const char *text, int64_t *ms);
/* Parse a time: epoch milliseconds ("1767225600000") or ISO-8601 UTC
 * ("2026-11-21T10:00:00Z", "2026-11-21T10:00:00.250Z", "2026-11-21"),
 * within RLS_TIME_MIN..RLS_TIME_MAX.  RLS_OK or RLS_EINVAL. */
RLS_EXTERN int rls_time_parse(const char *text, int64_t *ms);
/* Formats ms as "2026-11-21T10:00:00.250Z" (snprintf-style return). */
RLS_EXTERN int rls_time_format(int64_t ms, char *buf, size_t size);
/* Writes key escaped for display: control bytes, DEL, backslash and invalid
 * UTF-8 as \xHH / \\, valid UTF-8 as is except the characters that show
 * nothing but reorder or hide text (Unicode format characters such as the
 * bidi controls U+202A..U+202E, U+2066..U+2069, zero-width U+200B..U+200F,
 * U+FEFF; line and paragraph separators), which get \xHH per byte
 * (snprintf-style return). */
RLS_EXTERN int rls_key_escape(const char *key, char *buf, size_t size);

/* The administration API (rules and their versions, per-key policy,
 * listings, usage, explain, audit, stats, copies, events, metrics and
 * migrations), apart by responsibility; always part of this header. */
#ifdef __cplusplus
}
#endif
#include "rlstore_admin.h"
#endif /* RLSTORE_H */
