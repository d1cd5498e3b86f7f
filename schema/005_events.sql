-- 005_events.sql: what an operator should see happen, and the counters
-- behind `rlctl metrics` (issue #20).
--
-- rls_events: one row per penalty block imposed ('block': the first step
-- of its block_for list; 'escalate': a later step) and per penalty block
-- that ran out ('expire', timed at the block's end and written by the next
-- GC sweep, at most a minute later, or by the key's next penalty).  Written
-- in the transaction that writes the block.  Rows older than the retention
-- (30 days) are collected by GC; `rlctl events prune` removes sooner.
-- level is the step of the list (0: the first), as in rls_blocks.
CREATE TABLE rls_events(
    id       INTEGER PRIMARY KEY,
    ts_ms    INTEGER NOT NULL,
    event    TEXT    NOT NULL,
    action   TEXT    NOT NULL,
    key      BLOB    NOT NULL,
    rule     TEXT    NOT NULL DEFAULT '',
    level    INTEGER NOT NULL DEFAULT 0,
    until_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX rls_events_ts ON rls_events(ts_ms);
CREATE INDEX rls_events_key ON rls_events(key, action);

-- Counters since this migration, per action: checks by reason, denials and
-- shadow would-denials by limit, degraded checks, penalties, the check
-- latency histogram.  Counted in process like rls_stats and written with
-- them (at most once a second, and at rls_close); penalties in the
-- transaction of the block.  name/label: see storage/metrics.c.
CREATE TABLE rls_counters(
    action TEXT    NOT NULL,
    name   TEXT    NOT NULL,
    label  TEXT    NOT NULL DEFAULT '',
    n      INTEGER NOT NULL,
    PRIMARY KEY (action, name, label)
) WITHOUT ROWID;
