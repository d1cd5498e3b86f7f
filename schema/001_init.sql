-- 001_init.sql: the first schema of an rlstore database.
-- Keys are BLOBs with explicit length; times are int64 ms since the epoch.

-- One row of database-wide control values.
CREATE TABLE rls_meta(
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    active_version INTEGER NOT NULL DEFAULT 0, -- rls_rulesets.version in force
    rules_gen      INTEGER NOT NULL DEFAULT 0, -- bumped by every change that
                                               -- handles cache (rules, patterns)
    gc_horizon     INTEGER NOT NULL DEFAULT 0, -- latest exp_ms GC ever deleted
    gc_lid         INTEGER NOT NULL DEFAULT 0, -- incremental GC cursor
    gc_key         BLOB    NOT NULL DEFAULT x''
);
INSERT INTO rls_meta(id) VALUES (1);

-- Every rule set ever applied; the YAML is kept verbatim.
CREATE TABLE rls_rulesets(
    version    INTEGER PRIMARY KEY,
    created_ms INTEGER NOT NULL,
    os_user    TEXT    NOT NULL,
    tool       TEXT    NOT NULL,
    source     TEXT    NOT NULL DEFAULT '',
    comment    TEXT    NOT NULL DEFAULT '',
    yaml       TEXT    NOT NULL
);

-- Stable ids for (action, limit name): counters are keyed by them.
CREATE TABLE rls_limits(
    lid    INTEGER PRIMARY KEY,
    action TEXT NOT NULL,
    name   TEXT NOT NULL,
    UNIQUE (action, name)
);

-- Counter state of one (limit, key); meaning of a, b, c per algorithm.
CREATE TABLE rls_state(
    lid     INTEGER NOT NULL,
    key     BLOB    NOT NULL,
    alg     INTEGER NOT NULL,
    a       INTEGER NOT NULL,
    b       INTEGER NOT NULL,
    c       INTEGER NOT NULL,
    last_ms INTEGER NOT NULL,
    exp_ms  INTEGER NOT NULL,
    log     BLOB,
    PRIMARY KEY (key, lid)   -- a key's limits share a page: one check, one page
) WITHOUT ROWID;

-- Key -> tier.  kind 0 exact key, 1 CIDR, 2 prefix glob; action '' = all.
CREATE TABLE rls_assignments(
    pattern    BLOB    NOT NULL,
    action     TEXT    NOT NULL,
    kind       INTEGER NOT NULL,
    tier       TEXT    NOT NULL,
    expires_ms INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (pattern, action)
) WITHOUT ROWID;

-- Per-key replacement of one limit's capacity.
CREATE TABLE rls_overrides(
    key        BLOB    NOT NULL,
    action     TEXT    NOT NULL,
    limit_name TEXT    NOT NULL,
    lim        INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (key, action, limit_name)
) WITHOUT ROWID;

-- Blocks: manual (kind 0) or penalty (kind 1).  until_ms 0 = forever.
-- A penalty row outlives its block until forget_ms to remember the
-- escalation level of the next penalty.
CREATE TABLE rls_blocks(
    key        BLOB    NOT NULL,
    action     TEXT    NOT NULL,
    until_ms   INTEGER NOT NULL,
    kind       INTEGER NOT NULL,
    level      INTEGER NOT NULL DEFAULT 0,
    forget_ms  INTEGER NOT NULL DEFAULT 0,
    rule       TEXT    NOT NULL DEFAULT '',
    reason     TEXT    NOT NULL DEFAULT '',
    os_user    TEXT    NOT NULL DEFAULT '',
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (key, action)
) WITHOUT ROWID;

-- Two-phase consumption; lids lists the limits charged (int64 LE each).
-- AUTOINCREMENT: an id is never reused, so a late commit of a resolved
-- reservation cannot touch a newer one.
CREATE TABLE rls_reservations(
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    action     TEXT    NOT NULL,
    key        BLOB    NOT NULL,
    cost       INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    lids       BLOB    NOT NULL
);
CREATE INDEX rls_reservations_exp ON rls_reservations(expires_ms);
CREATE INDEX rls_reservations_key ON rls_reservations(key, action);

-- Admitted/denied per action per second (recent), and totals.
CREATE TABLE rls_stats(
    action  TEXT    NOT NULL,
    sec     INTEGER NOT NULL,
    allowed INTEGER NOT NULL,
    denied  INTEGER NOT NULL,
    PRIMARY KEY (action, sec)
) WITHOUT ROWID;
CREATE TABLE rls_stats_total(
    action  TEXT PRIMARY KEY,
    allowed INTEGER NOT NULL,
    denied  INTEGER NOT NULL
) WITHOUT ROWID;

-- Keys under pressure: a key's denials and the fraction of its most
-- pressing limit in use (millionths) when last seen at 50 % or more.
-- Counted in process, written with the stats at most once a second; rows
-- not seen for a day are collected.  Lets usage listings start from the
-- keys that matter without peeking at every key.
CREATE TABLE rls_key_stats(
    action         TEXT    NOT NULL,
    key            BLOB    NOT NULL,
    denied         INTEGER NOT NULL DEFAULT 0,
    last_denied_ms INTEGER NOT NULL DEFAULT 0,
    ppm            INTEGER NOT NULL DEFAULT 0,
    seen_ms        INTEGER NOT NULL,
    PRIMARY KEY (action, key)
) WITHOUT ROWID;
CREATE INDEX rls_key_stats_ppm ON rls_key_stats(action, ppm);
CREATE INDEX rls_key_stats_denied ON rls_key_stats(action, denied);

-- Every admin change, written in the same transaction as the change.
CREATE TABLE rls_audit(
    id      INTEGER PRIMARY KEY,
    ts_ms   INTEGER NOT NULL,
    os_user TEXT    NOT NULL,
    tool    TEXT    NOT NULL,
    op      TEXT    NOT NULL,
    action  TEXT    NOT NULL DEFAULT '',
    key     BLOB,
    before  TEXT    NOT NULL DEFAULT '',
    after   TEXT    NOT NULL DEFAULT '',
    reason  TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX rls_audit_key ON rls_audit(key);
