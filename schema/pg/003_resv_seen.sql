-- Whether a reservation was ever stored: set by the first insert into
-- rls_reservations, whoever the writer is (the library, a copy, SQL typed
-- by hand), in the writer's own transaction, and never cleared.  While it
-- is false no key has a reservation, so the one-round-trip check
-- (storage/pg_fast.c) asks for it in the row of rls_meta it reads anyway
-- instead of probing rls_reservations for an expired reservation of the
-- key.  Once it is true the check probes, as before.  Only the first
-- reservation writes rls_meta (the UPDATE matches no row afterwards, so
-- it takes no lock): reservations are not serialised on the control row.
ALTER TABLE rls_meta ADD COLUMN resv_seen boolean NOT NULL DEFAULT false;
UPDATE rls_meta SET resv_seen = EXISTS (SELECT 1 FROM rls_reservations) WHERE id = 1;

CREATE OR REPLACE FUNCTION rls_reservation_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('UPDATE %I.rls_meta SET resv_seen = true WHERE id = 1 AND NOT resv_seen',
                   TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;

CREATE TRIGGER rls_reservations_written AFTER INSERT ON rls_reservations
    FOR EACH STATEMENT EXECUTE FUNCTION rls_reservation_written();
