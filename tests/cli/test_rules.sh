#!/usr/bin/env bash
# rlctl rule sets: apply, export, dry run, versions, rollback, rules, and
# refusal of bad input with the stored rules unchanged.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
write_rules v1.yaml 3
write_rules v2.yaml 5
rl --db db init

tcase "apply v1" 0 --out "applied 'v1.yaml' as version 1" -- --db db apply v1.yaml --now "$T0"
tcase "export is verbatim" 0 -- --db db export
tassert "export equals the applied file" cmp -s "$OUT" v1.yaml
rl --db db export
cp "$OUT" exported.yaml
tcase "round trip: dry run of export shows no changes" 0 --out-has "no changes to the rules" \
    --out-lacks "@@" -- --db db apply --dry-run exported.yaml
tcase "round trip: dry run json" 0 \
    --json 'assert d["dry_run"] is True and d["changed"] is False and d["diff"] == "" and d["over"] == [] and d["active_version"] == 1' \
    -- --db db apply --dry-run exported.yaml --json
tcase "dry run stored nothing" 0 --json 'assert len(d) == 1' -- --db db versions --json

# Use the limit, then dry-run a lower one: the key is over it.
for i in 1 2 3; do rl --db db check signup 192.0.2.7 --now "$T0"; done
write_rules v0.yaml 2
tcase "dry run shows the diff" 0 --out-has "--- active (version 1)" --out-has "+++ v0.yaml" \
    --out-has "-      - { name: daily, algorithm: fixed_window, limit: 3, window: 1d }" \
    --out-has "+      - { name: daily, algorithm: fixed_window, limit: 2, window: 1d }" \
    --out-has "@@ -8,7 +8,7 @@" -- --db db apply --dry-run v0.yaml --now "$T0"
tcase "dry run lists keys over the new limit" 0 --out-has "$(printf 'signup\t192.0.2.7\tdaily\t3\t3\t2')" \
    -- --db db apply --dry-run v0.yaml --now "$T0"
tcase "dry run json over" 0 \
    --json 'o=d["over"]; assert d["changed"] is True and len(o) == 1 and o[0]["key"] == "192.0.2.7" and o[0]["used"] == 3 and o[0]["old_limit"] == 3 and o[0]["new_limit"] == 2' \
    -- --db db apply --dry-run v0.yaml --now "$T0" --json
printf 'version: 1\nactions:\n  x:\n    limits: [ { name: a, limit: -1, window: 1s } ]\n' >broken.yaml
printf '%s' "$(cat v1.yaml)" >nonl.yaml
tcase "dry run: missing final newline" 0 --out-has "\\ No newline at end of file" --out-has "+      - { name: hourly" \
    -- --db db apply --dry-run nonl.yaml
tcase "dry run of invalid rules" 4 --err-has "broken.yaml:4:33: actions.x.limits[0].limit: expected an integer" \
    --err-has "rlctl: cannot apply 'broken.yaml': 1 error" -- --db db apply --dry-run broken.yaml

# Live pick-up: the new limit applies to the next check (a new process).
tcase "denied under v1" 1 -- --db db check signup 192.0.2.7 --now "$T0"
tcase "apply v2 with comment" 0 --out "applied 'v2.yaml' as version 2" -- --db db apply v2.yaml --comment "raise to 5" --now "$T0"
tcase "admitted under v2 (counters kept)" 0 --json 'assert d["allowed"] and d["limit"] == 5 and d["remaining"] == 1' \
    -- --db db check signup 192.0.2.7 --now "$T0" --json
tcase "versions" 0 --json 'assert [v["version"] for v in d] == [2, 1] and d[0]["active"] == 1 and d[0]["comment"] == "raise to 5" and d[1]["active"] == 0 and d[0]["source"] == "v2.yaml"' \
    -- --db db versions --json
tcase "versions tsv" 0 --out-has "$(printf '2\tyes\t')" --out-has "raise to 5" -- --db db versions
tcase "export old version" 0 -- --db db export 1
tassert "export 1 equals v1" cmp -s "$OUT" v1.yaml
tcase "export missing version" 3 --err-has "cannot export version 9" -- --db db export 9
tcase "export json" 0 --json 'assert d["version"] == 2 and d["yaml"] == open("v2.yaml").read()' -- --db db export --json
tcase "audit has apply" 0 --json 'assert d[0]["op"] == "rules.apply" and d[0]["after"] == "version 2" and d[0]["tool"] == "rlctl"' \
    -- --db db audit --json

# Rollback.
tcase "rollback" 0 --out "rolled back to version 1 as version 3" -- --db db rollback 1 --comment "too generous" --now "$T0"
tcase "rollback active" 0 --json 'assert d[0]["version"] == 3 and d[0]["active"] == 1 and d[0]["comment"] == "too generous"' \
    -- --db db versions --json
tcase "rollback export" 0 -- --db db export
tassert "rolled-back rules equal v1" cmp -s "$OUT" v1.yaml
tcase "rollback takes effect" 1 --json 'assert d["limit"] == 3 and d["allowed"] is False' \
    -- --db db check signup 192.0.2.7 --now "$T0" --json
tcase "audit has rollback" 0 --json 'assert d[0]["op"] == "rules.rollback" and d[0]["reason"] == "too generous"' \
    -- --db db audit --json --limit 1
tcase "rollback missing version" 3 --err-has "cannot roll back to version 42" -- --db db rollback 42
tcase "rollback bad version" 2 --err-has "invalid version: 'latest'" -- --db db rollback latest

# rules summary.
tcase "rules summary" 0 --out-has "$(printf 'version\t3')" --out-has "$(printf 'tiers\tfree pro vip')" \
    --out-has "$(printf 'actions\tlogin signup')" \
    --out-has "$(printf 'signup\t*\tdaily\tfixed_window\t3\t3\t86400000')" \
    --out-has "$(printf 'login\t*\thourly\tsliding_log\t5\t5\t3600000')" \
    --out-has "$(printf 'signup\tpro\tdaily\tfixed_window\t10\t10\t86400000')" -- --db db rules
tcase "rules json tiers" 0 --json 'assert d["actions"][1]["tiers"]["pro"][0]["limit"] == 10 and [t["name"] for t in d["tiers"] if t["unlimited"]] == ["vip"] and [t["name"] for t in d["tiers"] if t["is_default"]] == ["free"]' \
    -- --db db rules --json
tcase "rules json" 0 --json 'assert d["version"]["version"] == 3 and [t["name"] for t in d["tiers"]] == ["free","pro","vip"] and [a["name"] for a in d["actions"]] == ["login","signup"] and [l["name"] for l in d["actions"][0]["limits"]] == ["burst","hourly"] and d["actions"][0]["limits"][1]["algorithm"] == "sliding_log"' \
    -- --db db rules --json

# Bad input: the stored rules stay exactly as they were.
rl --db db export
cp "$OUT" before.yaml
printf 'version: 1\nactions:\n  signup:\n    limits: [ { name: d, limit: 1, window: 1x } ]\n' >bad1.yaml
tcase "invalid rules" 4 --err-has "bad1.yaml:4:44: actions.signup.limits[0].window: expected a duration" \
    --err-has "rlctl: cannot apply 'bad1.yaml': 1 error" -- --db db apply bad1.yaml
printf 'version: 1\nactions: {\n  "unterminated\n' >bad2.yaml
tcase "malformed yaml" 4 --err-has "cannot apply 'bad2.yaml'" -- --db db apply bad2.yaml
head -c 65536 /dev/urandom >garbage.bin
tcase "binary garbage" 4 --err-has "cannot apply 'garbage.bin'" -- --db db apply garbage.bin
printf '' >empty.yaml
tcase "empty file" 4 --err-has "cannot apply 'empty.yaml'" -- --db db apply empty.yaml
head -c 104857600 /dev/zero | tr '\0' 'a' >huge.yaml
tcase "100 MB file" 4 --err-has "cannot apply 'huge.yaml'" -- --db db apply huge.yaml
rm -f huge.yaml
tcase "stdin garbage" 4 --stdin garbage.bin --err-has "cannot apply '<stdin>'" -- --db db apply -
# A FILE that is not a rule file: a usage error when it cannot be read, not
# found when it is not there, a configuration error when it reads as no
# rules; never a hang (a FIFO without a writer reads as empty).  The
# timeout only turns a hang into a failure; it decides nothing else.
tcase "directory as file" 2 --err-has "cannot read '.': Is a directory" -- --db db apply .
tcase "directory as file: dry run" 2 --err-has "cannot read '.'" -- --db db apply --dry-run .
tcase "directory as file: json" 2 --json 'assert d["error"]["exit"] == 2 and d["error"]["code"] == "USAGE", d' \
    -- --db db apply /etc --json
tcase "missing file" 3 --err-has "cannot read 'nope.yaml'" -- --db db apply nope.yaml
tcase "missing directory of the file" 3 --err-has "cannot read 'before.yaml/x'" -- --db db apply before.yaml/x
tcase "/dev/null" 4 --err-has "empty configuration" -- --db db apply /dev/null
mkfifo fifo
db_of db
timeout 300 "$RLCTL" --db "$REPLY" apply --dry-run fifo >"$OUT" 2>"$ERR"
tassert "FIFO without a writer: no wait, exit 4" test $? = 4
tassert "FIFO without a writer: reads as empty" grep -q "empty configuration" "$ERR"
tcase "a pipe being written is read to its end" 0 --stdin before.yaml \
    --out-has "no changes to the rules" -- --db db apply --dry-run /dev/stdin
rl --db init-dir.db init .
tassert "init with a directory exits 2" test $? = 2
tassert "init with a directory creates nothing" db_absent init-dir.db
# a file this user may not read (as root: read by nobody, see other_user)
mkdir -m 1777 pub
rl --db pub/db init
printf 'secret' >unreadable.yaml
chmod 000 unreadable.yaml
skipping || chmod 666 pub/db
if other_user; then
    db_of pub/db
    "${AS[@]+"${AS[@]}"}" "$OTHER_RLCTL" --db "$REPLY" apply unreadable.yaml >"$OUT" 2>"$ERR"
    tassert "unreadable file exits 2" test $? = 2
    tassert "unreadable file: says why" grep -q "cannot read 'unreadable.yaml': Permission denied" "$ERR"
else
    echo "skipping the unreadable-file case: $OTHER_SKIP"
fi

# A UTF-8 byte order mark (Windows editors write one) is no part of the
# rules; UTF-16 is refused by name; CRLF line ends are fine.
printf '\357\273\277' >bom.yaml
cat before.yaml >>bom.yaml
tcase "byte order mark: init" 0 --out "created rlstore database 'bom.db', applied rules as version 1" \
    -- --db bom.db init bom.yaml
tcase "byte order mark: dry run shows the mark escaped" 0 --out-has "-\\xef\\xbb\\xbfversion: 1" \
    --out-has "+version: 1" -- --db bom.db apply --dry-run before.yaml
sed 's/$/\r/' bom.yaml >bom-crlf.yaml
tcase "byte order mark and CRLF: the same rules" 0 \
    --out "unchanged: 'bom-crlf.yaml' is the same as the active version 1 (nothing stored; --force stores it)" \
    -- --db bom.db apply bom-crlf.yaml
tcase "byte order mark and CRLF, forced" 0 --out "applied 'bom-crlf.yaml' as version 2" \
    -- --db bom.db apply bom-crlf.yaml --force
tcase "stored verbatim, mark included" 0 -- --db bom.db export
tassert "export equals the applied file" cmp -s "$OUT" bom-crlf.yaml
tcase "the rules of a file with a mark are enforced" 0 --json 'assert d["limit"] == 3, d' \
    -- --db bom.db check signup 192.0.2.1 --json
printf '\357\273\277' >bom-only.yaml
tcase "byte order mark alone" 4 --err-has "bom-only.yaml: empty configuration" -- --db db apply bom-only.yaml
printf '\357\273\277version: 1\nactions: 7\n' >bom-bad.yaml
tcase "byte order mark: line and column as an editor shows them" 4 \
    --err-has "bom-bad.yaml:2:10: " -- --db db apply bom-bad.yaml
printf '\377\376v\000e\000r\000' >utf16.yaml
tcase "UTF-16 refused by name" 4 --err-has "the file is UTF-16 text" -- --db db apply utf16.yaml
tcase "bad input json" 4 --json 'assert d["error"]["code"] == "ECONFIG" and d["error"]["exit"] == 4' -- --db db apply bad1.yaml --json
tcase "rules unchanged after bad input" 0 -- --db db export
tassert "export equals before" cmp -s "$OUT" before.yaml
tcase "no version added by bad input" 0 --json 'assert len(d) == 3' -- --db db versions --json

# stdin.
tcase "apply from stdin" 0 --stdin v2.yaml --out "applied '<stdin>' as version 4" -- --db db apply -
tcase "stdin version source" 0 --json 'assert d[0]["source"] == "<stdin>"' -- --db db versions --json
tcase "dry run from stdin" 0 --stdin v2.yaml --out-has "no changes to the rules" -- --db db apply --dry-run -
tcase "apply quiet" 0 --out "" -- --db db apply v1.yaml --quiet
tcase "apply json" 0 --json 'assert d == {"file": "v2.yaml", "version": 6, "changed": True}' -- --db db apply v2.yaml --json

# A database this user may not write (exit 5), still readable.
sqlite_only "file permissions"
if ! skipping; then
    mkdir -m 1777 ro
    rl --db ro/db init v1.yaml
    chmod 644 ro/db
    chmod 755 "$W"
fi
[ "$(id -u)" = 0 ] || skipping || chmod 444 ro/db
if ! skipping && ! other_user; then
    echo "skipping the read-only cases: $OTHER_SKIP"
else
    skipping || "${AS[@]+"${AS[@]}"}" "$OTHER_RLCTL" --db ro/db apply v2.yaml >"$OUT" 2>"$ERR"
    tassert "read-only apply exits 5" test $? = 5
    tassert "read-only apply says read-only" grep -q "readonly\|read-only" "$ERR"
    skipping || "${AS[@]+"${AS[@]}"}" "$OTHER_RLCTL" --db ro/db block k >"$OUT" 2>"$ERR"
    tassert "read-only block exits 5" test $? = 5
    skipping || "${AS[@]+"${AS[@]}"}" "$OTHER_RLCTL" --db ro/db export >"$OUT" 2>"$ERR"
    tassert "read-only export still works" cmp -s "$OUT" v1.yaml
fi
tcase "read-only db unchanged" 0 --json 'assert len(d) == 1' -- --db ro/db versions --json
tcase "read-only db no block" 0 --out "" -- --db ro/db blocks
end_sqlite_only

finish
