#!/usr/bin/env bash
# rltop without a terminal: batch snapshots (-b -n N, and automatically
# when stdout is not a terminal), the options and their errors, exit
# statuses, and docs/man/rltop.1 against `rltop --help` (options, the key
# table of tui/keys.h, exit statuses, environment), groff-clean.
. "$(dirname "$0")/lib.sh"

run() {  # ARGS...: rltop with stdout/stderr in out/err, status in $rc
    "$RLTOP" "$@" </dev/null >out 2>err
    rc=$?
}
expect_rc() {  # NAME WANT
    if [ "$rc" = "$2" ]; then report "$1"; else
        report "$1" "exit status $rc, expected $2 (stderr: $(head -c 300 err | tr '\n' ' '))"
    fi
}
has() { grep -qF -- "$1" out; }
err_has() { grep -qF -- "$1" err; }

prepare_db db

# ---- batch output ----
run --db db -b -n 2 -d 0.2
expect_rc "batch -n 2 exits 0" 0
check "batch: two snapshots" test "$(grep -c '^rltop ' out)" = 2
check "batch: separated by a blank line" grep -qx '' out
check "batch: header figures" has "checks/s:"
check "batch: rules version" has "rules v1"
check "batch: tracked and blocked keys" grep -q 'keys: 6 tracked, 1 blocked' out
check "batch: column titles" grep -q '^ACTION  KEY ' out
check "batch: a full key" grep -q '^signup  192\.0\.2\.1 .*3  *3  *0 .*limited$' out
check "batch: a blocked key with its countdown" grep -q '192\.0\.2\.9 .*blocked [0-9]' out
check "batch: keys escaped" has 'ctl\x07key'
check "batch: no raw control byte" sh -c "! LC_ALL=C grep -q \$(printf '\\007') out"
check "batch: no escape sequences" sh -c "! LC_ALL=C grep -q \$(printf '\\033') out"
check "batch: stderr empty" test ! -s err
run --db db -b --rows 2
check "--rows limits the keys" grep -q '^(4 more; --rows N shows more)$' out
run --db db -b --action login
check "--action shows only that action" sh -c "! grep -q '^signup ' out && grep -q '^login ' out"

# stdout not a terminal: batch mode without -b
"$RLTOP" --db db </dev/null 2>err | cat >out
check "not a terminal: batch automatically" grep -q '^ACTION  KEY ' out
RLSTORE_DB=db "$RLTOP" -b >out 2>err
check "RLSTORE_DB names the database" grep -q 'rules v1' out

# ---- the memory class: the applications' table (--shm-dir) ----
mkdir -p shmd
printf '%s\n' 'version: 1' 'actions:' '  burst:' \
    '    limits: [ { name: b, algorithm: fixed_window, limit: 3, window: 1h, durability: memory } ]' \
    >mem.yaml
"$RLCTL" --db memdb init mem.yaml >/dev/null 2>&1
for i in 1 2 3; do "$RLCTL" --db memdb --shm-dir shmd check burst 203.0.113.5 >/dev/null 2>&1; done
run --db memdb --shm-dir shmd -b
check "--shm-dir: a memory-class key at its limit" grep -q '^burst  *203\.0\.113\.5 .*3  *3  *0 .*limited$' out
RLSTORE_SHM_DIR=shmd "$RLTOP" --db memdb -b </dev/null >out 2>err
check "RLSTORE_SHM_DIR names the folder" grep -q '^burst  *203\.0\.113\.5 ' out
run --db memdb -b
check "without it: /dev/shm holds no count of this database" sh -c "! grep -q '203\.0\.113\.5' out"
run --db memdb --shm-dir '' -b
expect_rc "--shm-dir empty: usage error" 2

# ---- errors and exit statuses ----
run --db missing.db -b
expect_rc "missing database: exit 3" 3
check "missing database: says how to create one" err_has "cannot open 'missing.db': no such database (create it with 'rlctl init')"
check "missing database: not created" test ! -e missing.db
run --db db -b --action nope
expect_rc "unknown --action: exit 3" 3
check "unknown --action: says so" err_has "action 'nope' is not defined"
run --db db -d 0
expect_rc "-d 0: usage error" 2
check "-d 0: names the option" err_has "invalid value for --delay: '0'"
run --db db -b -d 0.25 -n 1
expect_rc "-d accepts decimals" 0
run --db db -b -n 0
expect_rc "-n 0: usage error" 2
run --bogus
expect_rc "unknown option: exit 2" 2
check "unknown option: message" err_has "rltop: unknown option '--bogus'"
run extra
expect_rc "stray argument: exit 2" 2
echo "not a database" >junk.db
run --db junk.db -b
expect_rc "not an rlstore database: exit 5" 5
"$RLCTL" --db empty.db init >/dev/null
run --db empty.db -b
expect_rc "no rules: exit 4" 4
check "no rules: says so" has "no rules have been applied"
run --version
expect_rc "--version exits 0" 0
check "--version prints it" grep -q '^rltop [0-9]' out

# ---- the manual against --help ----
run --help
expect_rc "--help exits 0" 0
MAN=$ROOT/docs/man/rltop.1
python3 - "$MAN" out >cmp.txt 2>&1 <<'PY'
import re, sys
man = open(sys.argv[1], encoding="utf-8").read().split("\n")
helptext = open(sys.argv[2], encoding="utf-8").read().split("\n")

def text(roff):
    s = roff
    if s.startswith(".B ") or s.startswith(".I "):
        s = s[3:].replace('"', "")
    s = re.sub(r"\\f[BIRP]", "", s)
    s = s.replace("\\-", "-").replace("\\(aq", "'").replace("\\e", "\\").replace("\\%", "")
    return s.strip()

sections, sec, i = {}, None, 0
while i < len(man):
    line = man[i]
    if line.startswith(".SH "):
        sec = line[4:].strip().strip('"')
        sections.setdefault(sec, [])
    elif line == ".TP" and sec and i + 1 < len(man):
        tag, body, j = text(man[i + 1]), [], i + 2
        while j < len(man) and not man[j].startswith((".TP", ".SH", ".PP")):
            body.append(text(man[j]))
            j += 1
        sections[sec].append((tag, " ".join(b for b in body if b)))
        i = j
        continue
    i += 1

hs, cur = {}, None
for line in helptext:
    if line and not line.startswith(" ") and line.endswith(":"):
        cur = line[:-1]
        hs[cur] = []
    elif cur and line.startswith("  "):
        hs[cur].append(tuple(re.split(r"\s{2,}", line.strip(), maxsplit=1)))

def cmp(what, got, want):
    if got == want:
        print("RESULT\t%s\t" % what)
    else:
        lacks = [w for w in want if w not in got]
        extra = [g for g in got if g not in want]
        print("RESULT\t%s\t man page lacks %r; has extra %r%s" % (what, lacks, extra,
              "" if lacks or extra else " (order differs)"))

cmp("options", sections.get("OPTIONS", []), hs.get("Options", []))
cmp("keys (tui/keys.h)", sections.get("KEYS", []), hs.get("Keys", []))
cmp("exit statuses", sections.get("EXIT STATUS", []), hs.get("Exit status", []))
cmp("environment", sections.get("ENVIRONMENT", []), hs.get("Environment", []))
print("COUNT\t%d" % len(hs.get("Keys", [])))
PY
check "man/help comparison ran" grep -q '^RESULT' cmp.txt
grep -v '^RESULT\|^COUNT' cmp.txt
while IFS=$'\t' read -r _ what msg; do
    if [ -n "$msg" ]; then report "man page $what" "$msg"; else report "man page $what"; fi
done < <(grep '^RESULT' cmp.txt)
check "help lists at least 25 keys" test "$(sed -n 's/^COUNT\t//p' cmp.txt)" -ge 25
if command -v groff >/dev/null 2>&1; then
    groff -man -Tutf8 -ww -z "$MAN" >groff.txt 2>&1
    check "groff formats rltop.1 without warnings" test ! -s groff.txt
    sed 's/^/    groff: /' groff.txt
else
    report "groff formats rltop.1" "groff is not installed (Debian: groff-base)"
fi

finish
