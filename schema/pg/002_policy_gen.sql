-- A generation of the policy tables: every statement that inserts or
-- updates a block, a tier assignment or an override adds one to
-- rls_meta.policy_gen, in the writer's own transaction, whoever the writer
-- is (the library, rlctl, rltop, or SQL typed by hand).  A handle that saw
-- a key without policy rows at generation g knows it still has none while
-- policy_gen is g: the one-round-trip check (storage/pg_fast.c) then
-- compares one column of rls_meta, which it reads anyway, instead of
-- probing three tables for the key.  Deletions do not count: a key that
-- loses its policy rows is read again by the usual path.  The trigger
-- names rls_meta through the schema of the table written, so a session
-- whose search_path is another schema updates the right row.
ALTER TABLE rls_meta ADD COLUMN policy_gen bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION rls_policy_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('UPDATE %I.rls_meta SET policy_gen = policy_gen + 1 WHERE id = 1',
                   TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;

CREATE TRIGGER rls_blocks_written AFTER INSERT OR UPDATE ON rls_blocks
    FOR EACH STATEMENT EXECUTE FUNCTION rls_policy_written();
CREATE TRIGGER rls_assignments_written AFTER INSERT OR UPDATE ON rls_assignments
    FOR EACH STATEMENT EXECUTE FUNCTION rls_policy_written();
CREATE TRIGGER rls_overrides_written AFTER INSERT OR UPDATE ON rls_overrides
    FOR EACH STATEMENT EXECUTE FUNCTION rls_policy_written();
