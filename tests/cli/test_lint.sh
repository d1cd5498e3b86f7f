#!/usr/bin/env bash
# Deploys an operator can repeat and errors an operator can act on (issue
# #20): apply of the same rules stores nothing and says so, --force stores
# anyway; init, apply, apply --dry-run and lint print every error of a rule
# file as file:line:col: path: message with "did you mean" for a misspelt
# field; lint and apply --check need no database; a mistyped command,
# subcommand or option gets a suggestion and exit status 2.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
write_rules rules.yaml
{ echo "# deployed by the pipeline"; sed 's/^\(  *\)- { name: daily,/\1-   { name: daily,/' rules.yaml; } >same.yaml
sed 's/limit: 3,/limit: 4,/' rules.yaml >changed.yaml
cat >bad.yaml <<'EOF'
version: 1
tiers: { free: {} }
actions:
  signup:
    key: ip
    limits:
      - { name: daily, algorthm: fixed_window, limt: 20, window: 1d }
      - { name: weekly, limit: 100, window: 1x }
  api:
    kye: string
    limits: [ { name: r, limit: -5, window: 1s } ]
EOF
nversions() {  # DB: the number of stored versions, in $REPLY
    rl --db "$1" versions --json
    REPLY=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$OUT")
}
naudit() {
    rl --db "$1" audit --json
    REPLY=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$OUT")
}

# ---- idempotent apply ----
tcase "init" 0 --out "created rlstore database 'db', applied rules as version 1" -- --db db init rules.yaml --now "$T0"
naudit db; audits=$REPLY
tcase "apply the same file: unchanged" 0 \
    --out "unchanged: 'rules.yaml' is the same as the active version 1 (nothing stored; --force stores it)" \
    -- --db db apply rules.yaml --now "$T0"
tcase "a comment and spacing are no change" 0 --out-has "unchanged: 'same.yaml'" -- --db db apply same.yaml --now "$T0"
tcase "from standard input" 0 --stdin same.yaml --out-has "unchanged: '<stdin>'" -- --db db apply - --now "$T0"
tcase "quiet" 0 --out "" -- --db db apply same.yaml --quiet --now "$T0"
tcase "init of an existing database with the same rules" 0 \
    --out "opened existing rlstore database 'db', rules unchanged (version 1)" -- --db db init same.yaml --now "$T0"
nversions db
tassert "no version stored" test "$REPLY" = 1
naudit db
tassert "no audit row written" test "$REPLY" = "$audits"
tcase "export still gives the file applied first" 0 -- --db db export
tassert "export equals rules.yaml" cmp -s "$OUT" rules.yaml
tcase "--force stores the same rules" 0 --out "applied 'same.yaml' as version 2" -- --db db apply same.yaml --force --now "$T0"
tcase "a changed limit is a change" 0 --out "applied 'changed.yaml' as version 3" -- --db db apply changed.yaml --now "$T0"
tcase "the change is enforced" 0 --json 'assert d["limit"] == 4' -- --db db check signup 192.0.2.1 --json --now "$T0"
tcase "back to the first file is a change too" 0 --out "applied 'rules.yaml' as version 4" \
    -- --db db apply rules.yaml --now "$T0"
naudit db
tassert "three audit rows for three versions" test "$REPLY" = $((audits + 3))
tcase "dry run of a comment: the same once parsed" 0 --out-has "+# deployed by the pipeline" \
    --out-has "the rules are the same once parsed: applying stores nothing (--force stores it)" \
    -- --db db apply same.yaml --dry-run --now "$T0"
tcase "dry run of a comment, json" 0 --json 'assert d["changed"] is False and d["diff"] and d["active_version"] == 4' \
    -- --db db apply same.yaml --dry-run --json --now "$T0"
tcase "dry run of a change, json" 0 --json 'assert d["changed"] is True' \
    -- --db db apply changed.yaml --dry-run --json --now "$T0"
tcase "--dry-run takes no --force" 2 --err-has "--dry-run stores nothing" -- --db db apply rules.yaml --dry-run --force

# ---- every error ----
every_error() {  # NAME RC ARGS...: stderr has every error of bad.yaml, in order
    local name=$1 rc=$2
    shift 2
    tcase "$name" "$rc" \
        --err-has "bad.yaml:7:9: actions.signup.limits[0]: missing required field 'limit'" \
        --err-has "bad.yaml:7:24: actions.signup.limits[0]: unknown field 'algorthm' (did you mean 'algorithm'?)" \
        --err-has "bad.yaml:7:48: actions.signup.limits[0]: unknown field 'limt' (did you mean 'limit'?)" \
        --err-has "bad.yaml:8:45: actions.signup.limits[1].window: expected a duration" \
        --err-has "bad.yaml:10:5: actions.api: unknown field 'kye' (did you mean 'key'?)" \
        --err-has "bad.yaml:11:33: actions.api.limits[0].limit: expected an integer from 1" \
        -- "$@"
    tassert "$name: one line per error, then the summary" python3 -c '
import sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 7, lines
assert [l.split(":")[1] for l in lines[:6]] == ["7", "7", "7", "8", "10", "11"], lines
assert lines[6].startswith("rlctl: cannot ") and lines[6].endswith(": 6 errors"), lines[6]' "$ERR"
}
every_error "apply: every error" 4 --db db apply bad.yaml
every_error "apply --dry-run: every error" 4 --db db apply --dry-run bad.yaml
every_error "init: every error" 4 --db new.db init bad.yaml
tassert "init created nothing" db_absent new.db
every_error "lint: every error" 4 lint bad.yaml
tcase "nothing stored by the refusals" 0 --json 'assert len(d) == 4' -- --db db versions --json

# 70 actions with an error each: 64 listed, then how many more
{ echo "version: 1"; echo "actions:"; for i in $(seq 70); do echo "  a$i: { limits: [ { name: l, limit: 0, window: 1s } ] }"; done; } >many.yaml
tcase "more than 64 errors" 4 --err-has "many.yaml: 6 more errors not listed" --err-has "rlctl: cannot validate 'many.yaml': 65 errors" \
    -- lint many.yaml
# a file name with control bytes is escaped in every line
cp bad.yaml "$(printf 'b\033[2Jad.yaml')"
tcase "a file name with ESC is escaped" 4 --err-has 'b\x1b[2Jad.yaml:7:9: ' -- lint "$(printf 'b\033[2Jad.yaml')"
tassert "no raw ESC on stderr" sh -c '! grep -q "$(printf "\033")" "$1"' _ "$ERR"

# ---- lint without a database ----
tcase "lint: ok" 0 --out "rules.yaml: ok" -- lint rules.yaml
tcase "lint: quiet" 0 --out "" -- lint rules.yaml --quiet
tcase "lint from standard input" 0 --stdin rules.yaml --out "<stdin>: ok" -- lint -
tcase "lint: missing file" 3 --err-has "cannot read 'nope.yaml'" -- lint nope.yaml
mkdir adir
tcase "lint: a directory" 2 --err-has "cannot read 'adir'" -- lint adir
tcase "lint: an empty file" 4 --err-has "/dev/null: empty configuration" -- lint /dev/null
tcase "lint needs FILE" 2 --err-has "'lint' needs FILE" -- lint
tcase "apply --check: ok, no database needed" 0 --out "rules.yaml: ok" -- --db nodb apply --check rules.yaml
tcase "apply --check: invalid" 4 --err-has "bad.yaml:10:5: actions.api: unknown field 'kye'" -- --db nodb apply --check bad.yaml
tassert "apply --check created no database" db_absent nodb
tcase "apply --check takes no --force" 2 --err-has "--check validates only" -- apply --check --force rules.yaml
tcase "a time zone this host lacks" 4 --err-has "unknown time zone 'Mars/Olympus'" \
    --stdin <(printf 'version: 1\nactions: { a: { limits: [ { name: x, limit: 1, window: 1d, timezone: Mars/Olympus } ] } }\n') \
    -- lint -

# ---- did you mean ----
tcase "a mistyped command" 2 --err-has "rlctl: 'chek' is not an rlctl command; did you mean 'check'?" -- chek signup k
tcase "a swapped pair of letters" 2 --err-has "did you mean 'apply'?" -- aplpy x.yaml
tcase "nothing near" 2 --err-has "rlctl: 'frobnicate' is not an rlctl command; see 'rlctl --help'" -- frobnicate
tcase "a mistyped subcommand" 2 --err-has "'tier lst' is not an rlctl command; did you mean 'tier list'?" -- tier lst
tcase "a mistyped option" 2 --err-has "unknown option '--dry-rn' for 'apply'; did you mean '--dry-run'?" -- apply x --dry-rn
tcase "a mistyped global option" 2 --err-has "did you mean '--json'?" -- --jsn rules
tcase "help of a mistyped command" 2 --err-has "did you mean 'explain'?" -- help explian
tcase "the suggestion in JSON" 2 --json 'assert d["error"]["code"] == "USAGE" and "did you mean" in d["error"]["message"]' -- chek --json
finish
