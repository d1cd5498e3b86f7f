-- 004_horizons.sql: the clock floor of each limit.
-- GC deletes a state once it is equivalent to a fresh one.  Should a later
-- check of that key come with an earlier time, the floor (the latest exp_ms
-- GC deleted for the limit) keeps time from running backwards for it.  It
-- is kept per limit, so that the states collected under one action never
-- move another action's clock (rls_meta.gc_horizon stays the maximum over
-- all limits).  Limits known now start at the floor they had in common.
CREATE TABLE rls_horizons(
    lid     INTEGER PRIMARY KEY,
    horizon INTEGER NOT NULL
);
INSERT INTO rls_horizons(lid, horizon)
    SELECT lid, (SELECT gc_horizon FROM rls_meta WHERE id = 1) FROM rls_limits
    WHERE (SELECT gc_horizon FROM rls_meta WHERE id = 1) > 0;
