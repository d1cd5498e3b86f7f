#!/usr/bin/env bash
# rlctl and rltop with a PostgreSQL URI in --db: the password of a URI is
# never shown (user:***@, password=***, sslpassword=***), the options that
# are about SQLite files (--counters, $RLSTORE_COUNTERS, init --mode and
# --group) are refused as usage errors before anything is opened, and a
# file path is never taken for a URI.  The first part needs no server (a
# closed port); the second needs RLSTORE_TEST_PG and is skipped without it.
. "$(dirname "$0")/lib.sh"

RLTOP=$(dirname "$RLCTL")/rltop
write_rules rules.yaml
# A closed port: libpq fails at once with "Connection refused".
NOSRV=postgresql://app:s3cret@127.0.0.1:1/limits
NOSRV_SHOWN=postgresql://app:***@127.0.0.1:1/limits

# ---- redaction, without a server ----
tcase "user:password@ masked" 5 --err-has "rlctl: cannot open '$NOSRV_SHOWN': cannot connect to PostgreSQL" \
    --out "" -- --db "$NOSRV" blocks
tassert "user:password@: no password in stderr" sh -c "! grep -q s3cret '$ERR'"
tcase "masked in the JSON error" 5 \
    --json "m = d['error']['message']; assert m.startswith(\"cannot open '$NOSRV_SHOWN'\") and 's3cret' not in m, m" \
    -- --db "$NOSRV" blocks --json
tcase "postgres:// masked" 5 --err-has "cannot open 'postgres://app:***@127.0.0.1:1/limits'" \
    -- --db postgres://app:s3cret@127.0.0.1:1/limits blocks
tcase "percent-encoded password masked whole" 5 --err-has "cannot open 'postgresql://app:***@127.0.0.1:1/x'" \
    -- --db "postgresql://app:p%40ss%3Aw@127.0.0.1:1/x" blocks
tcase "password= masked, other parameters kept" 5 \
    --err-has "cannot open 'postgresql://app@127.0.0.1:1/x?connect_timeout=2&password=***&sslmode=disable'" \
    -- --db "postgresql://app@127.0.0.1:1/x?connect_timeout=2&password=s3cret&sslmode=disable" blocks
tcase "percent-encoded keyword masked" 5 --err-has "cannot open 'postgresql://127.0.0.1:1/x?pass%77ord=***'" \
    -- --db "postgresql://127.0.0.1:1/x?pass%77ord=s3cret" blocks
tcase "sslpassword= masked" 5 --err-has "cannot open 'postgresql://127.0.0.1:1/x?sslpassword=***'" \
    -- --db "postgresql://127.0.0.1:1/x?sslpassword=s3cret" blocks
tcase "both forms in one URI" 5 --err-has "cannot open 'postgresql://app:***@127.0.0.1:1/x?password=***'" \
    -- --db "postgresql://app:s3cret@127.0.0.1:1/x?password=s3cret" blocks
tassert "both forms: no password in stderr" sh -c "! grep -q s3cret '$ERR'"
export RLSTORE_DB=$NOSRV
tcase "RLSTORE_DB masked" 5 --err-has "cannot open '$NOSRV_SHOWN'" -- blocks
unset RLSTORE_DB
tcase "a user without password is shown as is" 5 --err-has "cannot open 'postgresql://app@127.0.0.1:1/x'" \
    -- --db "postgresql://app@127.0.0.1:1/x" blocks
sqlite_only "a file path"
tcase "a file path is no URI" 0 --out "created rlstore database 'app:s3cret@local.db'" \
    -- --db "app:s3cret@local.db" init
tassert "the file path was used as given" test -f "app:s3cret@local.db"
end_sqlite_only
tcase "malformed URI: no password in the message" 5 --err-has "cannot open 'postgresql://app:***@[::1/x'" \
    -- --db "postgresql://app:s3cret@[::1/x" blocks
tassert "malformed URI: no password in stderr" sh -c "! grep -q s3cret '$ERR'"

# ---- options about SQLite files: usage errors, nothing opened ----
tcase "--counters with a URI" 2 --err-has "rlctl: --counters is for a split deployment of SQLite files, not for a PostgreSQL database" \
    --out "" -- --db "$NOSRV" --counters c.db blocks
tassert "--counters with a URI: one line, no password" sh -c "test \$(wc -l <'$ERR') = 1 && ! grep -q s3cret '$ERR'"
tcase "--counters with a URI: init" 2 --err-has "--counters is for a split deployment of SQLite files" \
    -- --db "$NOSRV" --counters c.db init rules.yaml
tassert "--counters with a URI: no file created" test ! -e c.db
tcase "--counters with a URI: json" 2 --json 'assert d["error"]["exit"] == 2 and d["error"]["code"] == "USAGE"' \
    -- --db "$NOSRV" --counters c.db blocks --json
export RLSTORE_COUNTERS=c.db
tcase "RLSTORE_COUNTERS with a URI" 2 \
    --err-has "RLSTORE_COUNTERS is for a split deployment of SQLite files, not for a PostgreSQL database (unset it)" \
    -- --db "$NOSRV" blocks
unset RLSTORE_COUNTERS
tcase "a URI as --counters" 2 --err-has "invalid value for --counters: the counters database of a split deployment is a SQLite file, not a PostgreSQL URI" \
    -- --db r.db --counters "$NOSRV" init
tassert "a URI as --counters: no file created" test ! -e r.db
tcase "init --mode with a URI" 2 --err-has "rlctl: --mode is for SQLite files, not for a PostgreSQL database" \
    --out "" -- --db "$NOSRV" init --mode 0600
tcase "init --group with a URI" 2 --err-has "rlctl: --group is for SQLite files, not for a PostgreSQL database" \
    -- --db "$NOSRV" init rules.yaml --group daemon
tcase "init --mode with a URI: before reading FILE" 2 --err-has "--mode is for SQLite files" \
    -- --db "$NOSRV" init missing.yaml --mode 0600

# ---- rltop ----
if [ -x "$RLTOP" ]; then
    "$RLTOP" -b --db "$NOSRV" >"$OUT" 2>"$ERR"
    tassert "rltop: cannot open exits 5" test $? = 5
    tassert "rltop: URI masked" grep -qF "rltop: cannot open '$NOSRV_SHOWN'" "$ERR"
    tassert "rltop: no password in stderr" sh -c "! grep -q s3cret '$ERR'"
    "$RLTOP" -b --db "$NOSRV" --counters c.db >"$OUT" 2>"$ERR"
    tassert "rltop --counters with a URI: exit 2" test $? = 2
    tassert "rltop --counters with a URI: says why" \
        grep -qF "rltop: --counters is for a split deployment of SQLite files, not for a PostgreSQL database" "$ERR"
    RLSTORE_COUNTERS=c.db "$RLTOP" -b --db "$NOSRV" >"$OUT" 2>"$ERR"
    tassert "rltop RLSTORE_COUNTERS with a URI: exit 2" test $? = 2
else
    report "rltop built" " $RLTOP is missing"
fi

# ---- with a server ----
pg_only "a live database"
if ! skipping; then
    db_of u1    # a fresh schema; the URI below names it with a passphrase
    U1=$PG${_pg_sep}sslpassword=s3cret\&options=-csearch_path%3D${REPLY##*%3D}
    U1_SHOWN=$PG${_pg_sep}sslpassword=***\&options=-csearch_path%3D${REPLY##*%3D}
    db_of u2
else
    U1=unused U1_SHOWN=unused
fi
tcase "no rlstore tables: masked, exit 3" 3 --err-has "rlctl: cannot open '$U1_SHOWN': no such database (create it with 'rlctl init')" \
    -- --db "$U1" blocks
tassert "no rlstore tables: nothing created" db_absent u1
tcase "init creates the tables" 0 --out "created rlstore database '$U1_SHOWN', applied rules as version 1" \
    -- --db "$U1" init rules.yaml
tassert "init created the tables" db_exists u1
tcase "init again: opened existing" 0 --json "assert d == {'db': '$U1_SHOWN', 'counters': None, 'created': False, 'version': None, 'changed': False}, d" \
    -- --db "$U1" init --json
tcase "check through the URI" 0 --json 'assert d["allowed"] is True and d["limit"] == 3' \
    -- --db "$U1" check signup 192.0.2.1 --json
tcase "hold names it masked" 0 --out "holding '$U1_SHOWN' open" -- --db "$U1" hold --for 1ms
tcase "doctor" 0 --out-lacks s3cret -- --db "$U1" doctor
tassert "doctor: no password in stderr" sh -c "! grep -q s3cret '$ERR'"
tcase "init --mode with a URI creates nothing" 2 -- --db u2 init --mode 0600
tassert "init --mode with a URI: no tables" db_absent u2
if [ -x "$RLTOP" ] && ! skipping; then
    "$RLTOP" -b --db "$U1" >"$OUT" 2>"$ERR"
    rc=$?
else
    rc=
fi
tassert "rltop batch with a URI" test "$rc" = 0
tassert "rltop title masked" sh -c "head -n 1 '$OUT' | grep -qF '$U1_SHOWN'"
tassert "rltop: no password shown" sh -c "! grep -q s3cret '$OUT' '$ERR'"
tassert "rltop: the key of the check" grep -qF 192.0.2.1 "$OUT"
tassert "rltop: no file sizes for PostgreSQL" sh -c "! grep -q 'wal ' '$OUT'"
end_pg_only

finish
