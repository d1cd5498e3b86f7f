-- 002_key_counts.sql: how many keys each action tracks, so that a listing
-- knows its length without counting a million rows.
--
-- keys is the number of distinct keys with at least one rls_state row of
-- one of the action's limits (any rls_limits row of the action, also of a
-- limit no longer in the rules).  It is kept exact in the transaction of
-- every write that adds a key's first row for the action or removes its
-- last one (storage/keycount.c: checks, refunds, GC, reset).
CREATE TABLE rls_key_counts(
    action TEXT    PRIMARY KEY,
    keys   INTEGER NOT NULL
) WITHOUT ROWID;

-- An existing database: count what is there.
INSERT INTO rls_key_counts(action, keys)
    SELECT l.action, count(DISTINCT s.key)
    FROM rls_state s JOIN rls_limits l ON l.lid = s.lid
    GROUP BY l.action;
