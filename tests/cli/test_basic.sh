#!/usr/bin/env bash
# rlctl basics: help, version, usage errors, global options, init and
# the rule that only init creates a database.
. "$(dirname "$0")/lib.sh"

write_rules rules.yaml
T0=2026-11-21T10:00:00Z

# ---- help, version, usage errors ----
tcase "help lists commands" 0 --out-has "check ACTION KEY [ACTION KEY ...] [--cost N] [--peek]" \
    --out-has "Exit status:" --out-has "RLSTORE_DB" -- --help
tcase "help command" 0 --out-has "usage: rlctl apply FILE [--dry-run] [--check] [--force] [--comment TEXT]" -- help apply
tcase "command --help" 0 --out-has "usage: rlctl tier set KEY TIER [--action ACTION] [--for DUR]" \
    --out-has "--for DUR" -- tier set --help
tcase "tier --help lists subcommands" 0 --out-has "rlctl tier unset KEY" --out-has "rlctl tier list" -- tier --help
tcase "version" 0 --out "rlctl $(sed -n 's/^#define RLS_VERSION_STRING "\(.*\)"/\1/p' "$ROOT/include/rlstore.h")" -- --version
tcase "no command" 2 --err-has "rlctl: no command given" --out "" -- 
tcase "unknown command" 2 --err-has "rlctl: 'frobnicate' is not an rlctl command" --out "" -- frobnicate
tcase "unknown command json" 2 --json 'assert d["error"]["exit"] == 2 and d["error"]["code"] == "USAGE"' -- frobnicate --json
tcase "unknown subcommand" 2 --err-has "'tier frob' is not an rlctl command" -- tier frob
tcase "missing subcommand" 2 --err-has "'tier' needs a subcommand: set, unset, list" -- tier
tcase "unknown option" 2 --err-has "unknown option '--bogus' for 'check'" -- check a b --bogus
tcase "unknown global option" 2 --err-has "unknown option '--bogus'" -- --bogus check a b
tcase "missing option value" 2 --err-has "option '--cost' needs a value" -- check a b --cost
tcase "flag with value" 2 --err-has "option '--peek' takes no value" -- check a b --peek=1
tcase "too few arguments" 2 --err-has "'check' needs ACTION KEY" -- check onlyone
tcase "too many arguments" 2 --err-has "unexpected argument 'c'" -- check a b c
tcase "diagnostic is one line" 2 -- check a b c
tassert "diagnostic is one line (count)" test "$(wc -l <"$ERR")" = 1
tcase "bad cost" 2 --err-has "invalid value for --cost: 'x'" -- --db nope.db check a b --cost x
tcase "cost zero" 2 --err-has "invalid value for --cost: '0'" -- --db nope.db check a b --cost 0
tcase "bad duration" 2 --err-has "invalid duration for --for: '3 days'" -- --db nope.db block k --for "3 days"
tcase "bad ttl" 2 --err-has "invalid duration for --ttl: '-5s'" -- --db nope.db reserve a b --ttl -5s
tcase "bad --now" 2 --err-has "invalid time for --now: 'yesterday'" -- --now yesterday --db nope.db blocks
tcase "bad --now date" 2 --err-has "invalid time for --now: '2026-13-01T00:00:00Z'" -- blocks --now 2026-13-01T00:00:00Z
tcase "bad --sort" 2 --err-has "invalid value for --sort: 'size'" -- usage --sort size
tcase "bad --top" 2 --err-has "invalid value for --top: '0'" -- usage --top 0
tcase "bad --seconds" 2 --err-has "invalid value for --seconds: '4000'" -- stats --seconds 4000
tcase "bad reservation id" 2 --err-has "invalid reservation id: 'abc'" -- commit abc
tassert "usage errors created no database" db_absent nope.db

# ---- missing database: exit 3 (PostgreSQL: a schema without the rlstore
# tables, exit 5), nothing created ----
for cmd in "blocks" "check signup 1.2.3.4" "apply rules.yaml" "export" "tier list" "doctor" "audit"; do
    # shellcheck disable=SC2086
    tcase "missing db: $cmd" "$NODB_RC" --err-has "rlctl: cannot open 'missing.db': $NODB_MSG" \
        --out "" -- --db missing.db $cmd
done
tcase "missing db json" "$NODB_RC" --json "assert d['error']['exit'] == $NODB_RC and 'missing.db' in d['error']['message']" \
    -- --db missing.db blocks --json
tassert "missing db not created" db_absent missing.db
sqlite_only "missing files"
tassert "missing db: no side files" test ! -e missing.db-wal -a ! -e missing.db-shm
tcase "missing db in missing dir" 3 -- --db nodir/x.db blocks
tassert "missing dir not created" test ! -e nodir
end_sqlite_only

# ---- init ----
tcase "init creates" 0 --out "created rlstore database 'new.db'" -- --db new.db init
tassert "init database exists" db_exists new.db
sqlite_only "file modes"
tassert "init file mode 0600" sh -c 'test "$(stat -c %a new.db)" = 600'
end_sqlite_only
tcase "init again" 0 --out-has "opened existing rlstore database 'new.db'" -- --db new.db init
tcase "init no rules yet: export" 4 --err-has "no rules applied" -- --db new.db export
tcase "init no rules yet: check" 4 --err-has "cannot check 'signup' for '1.2.3.4'" -- --db new.db check signup 1.2.3.4
tcase "init with file" 0 --out "created rlstore database 'db1', applied rules as version 1" -- init rules.yaml --db db1
tcase "init json" 0 --json 'assert d["created"] is True and d["version"] == 1 and d["db"] == "db2"' \
    -- --json --db db2 init rules.yaml
tcase "init with missing file" 3 --err-has "cannot read 'nonexistent-dir/x.yaml'" \
    -- --db db3 init nonexistent-dir/x.yaml
tassert "init with missing file created nothing" db_absent db3
printf 'version: 1\nactions: [\n' >broken.yaml
tcase "init with invalid rules" 4 --err-has "cannot apply 'broken.yaml'" -- --db db3 init broken.yaml
sqlite_only "init removes the files it created (PostgreSQL keeps the empty tables)"
tassert "init with invalid rules created nothing" test ! -e db3 -a ! -e db3-wal -a ! -e db3-shm
end_sqlite_only
tcase "init existing db with invalid rules" 4 -- --db new.db init broken.yaml
tassert "init kept the existing db" db_exists new.db
tcase "init kept its rules: none" 4 --err-has "no rules applied" -- --db new.db export
tcase "init quiet" 0 --out "" -- --db db4 --quiet init

# ---- --db and RLSTORE_DB ----
tcase "default ./rlstore.db missing" 3 --err-has "'./rlstore.db'" -- blocks
export RLSTORE_DB=db1
tcase "RLSTORE_DB used" 0 --out-has "signup" -- rules
tcase "--db overrides RLSTORE_DB" "$NODB_RC" --err-has "'other.db'" -- --db other.db rules
unset RLSTORE_DB
tcase "--db=PATH form" 0 --out-has "daily" -- rules --db=db1

# ---- not a database ----
sqlite_only "files that are not databases"
printf 'this is not sqlite\n' >garbage.db
tcase "garbage db" 5 --err-has "rlctl: cannot open 'garbage.db': file is not an rlstore database" -- --db garbage.db blocks
tassert "garbage db untouched" test "$(cat garbage.db)" = "this is not sqlite"
mkdir adir
tcase "db is a directory" 5 --err-has "cannot open 'adir'" -- --db adir blocks
end_sqlite_only

# ---- --now: both forms, before and after the command ----
rl --db db1 check signup 10.1.1.1 --now "$T0"
tcase "--now epoch ms" 0 --json 'assert d["remaining"] == 1' -- --now 1795255200000 --db db1 check signup 10.1.1.1 --json
tcase "--now ISO with ms after command" 0 --json 'assert d["remaining"] == 0' \
    -- --db db1 check signup 10.1.1.1 --json --now 2026-11-21T10:00:00.250Z
tcase "--now same day denied" 1 --json 'assert d["allowed"] is False and d["retry_after_ms"] == 14*3600*1000' \
    -- --db db1 check signup 10.1.1.1 --json --now 2026-11-21T10:00:00Z
tcase "--now next day admitted" 0 --json 'assert d["allowed"] is True and d["remaining"] == 2' \
    -- --db db1 check signup 10.1.1.1 --json --now 2026-11-22
tcase "-- ends options" 2 --err-has "key is not valid for action 'signup'" -- --db db1 check signup -- --not-an-ip

finish
