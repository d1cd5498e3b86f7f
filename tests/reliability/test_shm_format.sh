#!/bin/sh
# tests/reliability/test_shm_format.sh - a memory-class table file that is
# not this library's table, at the very path of the database's table
# (issue #19, round 8's attack on format 3): a format 2 table renamed in,
# the file truncated (to a part, to a few bytes, to nothing), grown with
# zeros.  Each time a memory-class check fails with a named error (exit
# 5, the reason in its message), `rlctl doctor` says what the file is,
# and nothing of the database is lost: durable checks go on counting and
# the database's own checks pass.  A format 2 table under another name of
# the database is reported and left alone, by --fix too; removing the bad
# file lets the next check make a new table.
cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
RL=$BUILD_ABS/rlctl
[ -x "$RL" ] || setup_fail "$RL is not built (run make)"
cd "$SCRATCH" || exit 2
cat >mem.yaml <<'YAML'
version: 1
actions:
  m:
    limits: [ { name: mm, algorithm: fixed_window, limit: 100, window: 1h, durability: memory } ]
  d:
    limits: [ { name: dd, algorithm: fixed_window, limit: 100, window: 1h } ]
YAML
mkdir shm
"$RL" --db mem.db init mem.yaml >/dev/null 2>&1 || setup_fail "rlctl init failed"
"$RL" --db mem.db --shm-dir shm check m a >/dev/null 2>&1 || setup_fail "the first memory check failed"
T=$(ls shm)
ID=${T%-*}
D=0   # durable checks of d/a so far

# report NAME with the messages in $msgs (none: passed).
verdict() {
    if [ -n "$msgs" ]; then report "$1" "${msgs#; }"; else report "$1"; fi
}

# The version field (offset 8) of FILE set to V.
set_version() {
    python3 - "$1" "$2" <<'PY'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(8)
    f.write(struct.pack("<I", int(sys.argv[2])))
PY
}

# NAME WANT: a memory check fails (5) naming WANT, the doctor's
# memory_table fails naming it, durable checks count on, the database is
# whole.
refused() {
    msgs=""
    "$RL" --db mem.db --shm-dir shm check m a >out 2>err
    rc=$?
    [ $rc -eq 5 ] || msgs="$msgs; memory check exit $rc, want 5"
    grep -q "shared-memory table.*$2" err || msgs="$msgs; check said: $(cat err)"
    "$RL" --db mem.db --shm-dir shm doctor >doc 2>&1
    grep -q "^memory_table	fail	shm/$T: $2" doc ||
        msgs="$msgs; doctor said: $(grep memory_table doc)"
    grep -q "^integrity_check	ok" doc || msgs="$msgs; integrity_check: $(grep integrity doc)"
    D=$((D + 1))
    "$RL" --db mem.db check d a >out 2>&1 || msgs="$msgs; durable check failed: $(cat out)"
    grep -q "^remaining	$((100 - D))\$" out || msgs="$msgs; durable count: $(grep remaining out), want $((100 - D))"
    verdict "$1"
}

D=$((D + 1))
"$RL" --db mem.db check d a >/dev/null 2>&1 || setup_fail "the first durable check failed"
cp "shm/$T" keep.shm
set_version "shm/$T" 2
refused "a format 2 table at the table's path" "table format version 2, this library reads 3"
set_version "shm/$T" 4
refused "a format 4 table at the table's path" "table format version 4, this library reads 3"
set_version "shm/$T" 3
check "set back to format 3, the table serves again, its count kept" \
    sh -c "'$RL' --db mem.db --shm-dir shm check m a | grep -q '^remaining	98\$'"
SIZE=$(wc -c <"shm/$T")
truncate -s 1000000 "shm/$T"
refused "the table truncated to a part" "table file is 1000000 bytes, its header says $SIZE"
truncate -s 100 "shm/$T"
refused "the table truncated to 100 bytes" "table file is 100 bytes, its header says $SIZE"
truncate -s 40 "shm/$T"
refused "the table truncated to 40 bytes (less than a header)" "not an rlstore shared-memory table"
truncate -s 0 "shm/$T"
refused "an empty file at the table's path" "not an rlstore shared-memory table"
truncate -s $((SIZE + 4096)) "shm/$T"
refused "zeros of another size at the table's path" "not an rlstore shared-memory table"
cp keep.shm "shm/$T"
truncate -s $((SIZE + 4096)) "shm/$T"
refused "the table grown by a page" "table file is $((SIZE + 4096)) bytes, its header says $SIZE"

# A format 2 table under another name of this database: reported, left alone.
cp keep.shm "shm/$ID-12345678.shm"
set_version "shm/$ID-12345678.shm" 2
rm "shm/$T"
"$RL" --db mem.db --shm-dir shm doctor --fix >doc 2>&1
msgs=""
grep -q "^memory_stale	warn	shm/$ID-12345678.shm: .*table format version 2, this library reads 3; left alone" doc ||
    msgs="$msgs; doctor said: $(grep memory_ doc)"
[ -e "shm/$ID-12345678.shm" ] || msgs="$msgs; --fix removed it"
verdict "a format 2 table under another name of the database: named, left alone by --fix"
check "the bad file removed, the next memory check makes a new table (its count anew)" \
    sh -c "'$RL' --db mem.db --shm-dir shm check m a | grep -q '^remaining	99\$' && test -e 'shm/$T'"
finish
