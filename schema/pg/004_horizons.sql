-- The PostgreSQL form of schema/004_horizons.sql: the clock floor of each
-- limit (the latest exp_ms GC deleted for it), so that the states collected
-- under one action never move another action's clock.
CREATE TABLE rls_horizons(
    lid     bigint PRIMARY KEY,
    horizon bigint NOT NULL
);
INSERT INTO rls_horizons(lid, horizon)
    SELECT lid, (SELECT gc_horizon FROM rls_meta WHERE id = 1) FROM rls_limits
    WHERE (SELECT gc_horizon FROM rls_meta WHERE id = 1) > 0;
