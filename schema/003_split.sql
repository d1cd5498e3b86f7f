-- 003_split.sql: what the file is in a deployment (docs/SECURITY.md).
-- role 0: the one file of a single-file deployment; 1: the rules database
-- and 2: the counters database of a split deployment.  pair_id: a rules
-- database's own random id; in a counters database the id of the rules
-- database it belongs to.  Set by rls_open(), never by the admin API.
CREATE TABLE rls_role(
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    role    INTEGER NOT NULL DEFAULT 0,
    pair_id BLOB    NOT NULL DEFAULT x''
);
INSERT INTO rls_role(id) VALUES (1);
