#!/usr/bin/env bash
# rlctl maintenance: gc, stats (table, JSON, Prometheus), doctor.
. "$(dirname "$0")/lib.sh"

T0=2026-11-21T10:00:00Z
write_rules rules.yaml 3
rl --db db init rules.yaml

# ---- stats: totals are counted by the checks of other processes ----
for i in 1 2 3 4; do rl --db db check signup 192.0.2.1 --now "$T0"; done
for i in 1 2; do rl --db db check login "u$i" --now 2026-11-21T10:00:01Z; done
tcase "stats json" 0 --json 't = {r["action"]: r for r in d["totals"]}; assert t["signup"]["allowed"] == 3 and t["signup"]["denied"] == 1 and t["login"]["allowed"] == 2 and t["login"]["denied"] == 0, t' \
    --json 'assert d["seconds"] == 60 and isinstance(d["recent"], list)' -- --db db stats --json
tcase "stats recent window" 0 --json 'assert sum(r["allowed"] for r in d["recent"] if r["action"] == "signup") == 3' \
    -- --db db stats --json --seconds 3600 --now 2026-11-21T10:00:30Z
tcase "stats tsv" 0 --out-has "$(printf 'signup\t3\t1\t3\t1')" --out-has "$(printf 'login\t2\t0\t2\t0')" \
    -- --db db stats --seconds 60 --now 2026-11-21T10:00:30Z
tcase "stats recent excludes older seconds" 0 --out-has "$(printf 'signup\t3\t1\t0\t0')" --out-has "$(printf 'login\t2\t0\t2\t0')" \
    -- --db db stats --seconds 1 --now 2026-11-21T10:00:01.500Z
tcase "stats prometheus" 0 --out-has "# HELP rlstore_checks_total " --out-has "# TYPE rlstore_checks_total counter" \
    --out-has 'rlstore_checks_total{action="signup",result="allowed"} 3' \
    --out-has 'rlstore_checks_total{action="signup",result="denied"} 1' \
    --out-has 'rlstore_checks_total{action="login",result="denied"} 0' -- --db db stats --prometheus
tassert "prometheus lines well formed" python3 -c '
import re, sys
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    assert line.startswith("# HELP ") or line.startswith("# TYPE ") or \
        re.fullmatch(r"rlstore_checks_total\{action=\"[^\"]*\",result=\"(allowed|denied)\"\} [0-9]+", line), line
' "$OUT"
tcase "stats prometheus with json" 2 --err-has "cannot be combined" -- --db db stats --prometheus --json
rl --db fresh.db init
tcase "stats empty" 0 --json 'assert d["totals"] == [] and d["recent"] == []' -- --db fresh.db stats --json

# ---- gc ----
rl --db db check login old --now 2020-01-01T00:00:00Z
tcase "gc" 0 --out-has "deleted " --out-has "expired row(s)" -- --db db gc --now "$T0"
tcase "gc json" 0 --json 'assert isinstance(d["deleted"], int) and d["deleted"] >= 0' -- --db db gc --rows 5 --json --now "$T0"
rl --db g.db init rules.yaml
for i in 1 2 3; do rl --db g.db check login "k$i" --now 2026-01-01T00:00:00Z; done
tcase "gc deletes expired state" 0 --json 'assert d["deleted"] >= 3, d' -- --db g.db gc --json --now "$T0"
tcase "gc leaves nothing for usage" 0 --json 'assert d == []' -- --db g.db usage --json --now "$T0"
tcase "gc bad rows" 2 --err-has "invalid value for --rows: '0'" -- --db db gc --rows 0

# ---- doctor ----
tcase "doctor healthy" 0 --out-has "$(printf 'rules\tok')" -- --db db doctor
tcase "doctor json" 0 --json 'c = {r["check"]: r for r in d["checks"]}; assert d["ok"] is True and c["rules"]["status"] == "ok", d' \
    -- --db db doctor --json
tcase "doctor full" 0 --json 'assert d["ok"] is True and all(r["status"] != "fail" for r in d["checks"]), d' \
    -- --db db doctor --full --json
tcase "doctor without rules warns" 0 --json 'c = {r["check"]: r for r in d["checks"]}; assert c["rules"]["status"] == "warn"' \
    -- --db fresh.db doctor --json
sqlite_only "SQLite's own checks and a damaged file"
tcase "doctor healthy: SQLite checks" 0 --out-has "$(printf 'journal_mode\tok')" --out-has "quick_check" -- --db db doctor
tcase "doctor json: SQLite checks" 0 --json 'c = {r["check"]: r for r in d["checks"]}; assert c["journal_mode"]["status"] == "ok" and c["quick_check"]["status"] == "ok" and "sqlite_version" in c' \
    -- --db db doctor --json
tcase "doctor: an old SQLite's WAL-reset race is avoided by the checkpoint lock" 0 \
    --json 'c = {r["check"]: r for r in d["checks"]}; v = c["sqlite_version"]; assert v["status"] == "ok" and ("take turns" in v["detail"] or "predates" not in v["detail"]), v' \
    -- --db db doctor --json
skipping || { cp db nockpt.db; rm -f nockpt.db-ckpt; mkdir nockpt.db-ckpt; }
tcase "doctor: without the checkpoint lock an old SQLite is a warning" 0 \
    --json 'c = {r["check"]: r for r in d["checks"]}; v = c["sqlite_version"]; import re; m = re.match(r"SQLite (\d+)\.(\d+)\.(\d+)", v["detail"]); old = tuple(map(int, m.groups())) < (3, 51, 3); assert v["status"] == ("warn" if old else "ok") and (not old or "cannot be opened" in v["detail"]), v' \
    -- --db nockpt.db doctor --json
tcase "doctor full: integrity check" 0 --json 'assert any(r["check"] == "integrity_check" and r["status"] == "ok" for r in d["checks"])' \
    -- --db db doctor --full --json
skipping || cp g.db bad.db
skipping || python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(4096 + 8)
    f.write(b"\xde\xad" * 100)
' bad.db
tcase "doctor on a damaged database" 5 \
    --json 'assert ("error" in d) or (d["ok"] is False and any(r["status"] == "fail" for r in d["checks"])), d' \
    -- --db bad.db doctor --json --full
end_sqlite_only

# ---- doctor: the memory-class table, tables of earlier boots, --fix ----
# An application (ctypes over the Python binding's library: shm_dir and a
# 64-slot table) makes the table in ./shm; a reboot is forged by copying
# it under another boot's name with another boot in its header.
cat >mem.yaml <<'EOF'
version: 1
actions:
  m:
    limits: [ { name: mm, algorithm: fixed_window, limit: 100, window: 1h, durability: memory } ]
EOF
rl --db mem.db init mem.yaml
rl --db other.db init mem.yaml
mkdir -p shm
LIB=$(dirname "$RLCTL")/librlstore.so
. "$ROOT/tests/pyapp.sh"
memapp() {  # NAME KEY...: the application admits a check of m for each KEY
    db_of "$1"
    local db=$REPLY
    shift
    py - "$db" "$W/shm" "$@" <<'PY'
import ctypes, sys
from rlstore import _ffi
lib = _ffi.get()
opt = _ffi.Options()
lib.rls_options_init(ctypes.byref(opt))
opt.shm_dir = sys.argv[2].encode()
opt.shm_slots = 64
db = ctypes.c_void_p()
assert lib.rls_open(ctypes.byref(db), sys.argv[1].encode(), ctypes.byref(opt)) == 0
for k in sys.argv[3:]:
    r = _ffi.CResult()
    assert lib.rls_check(db, b"m", k.encode(), 1, ctypes.byref(r)) == 0 and r.allowed, k
lib.rls_close(db)
PY
}
forge() {  # SRC DST BOOT: a copy of table SRC whose header says boot BOOT
    python3 - "$1" "$2" "$3" <<'PY'
import os, struct, sys
src, dst, boot = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, "rb") as f:
    head = bytearray(f.read(4096))
head[72:80] = struct.pack("<Q", boot)
with open(dst, "xb") as f:
    f.write(head)
    f.truncate(os.path.getsize(src))
PY
}
if py -c 'import rlstore._ffi; rlstore._ffi.get()' 2>/dev/null; then
tcase "doctor: no memory table yet, and none made" 0 \
    --json 'c = {r["check"]: r for r in d["checks"]}; assert c["memory_table"]["status"] == "ok" and "no table at shm/rlstore-" in c["memory_table"]["detail"], c' \
    -- --db mem.db doctor --shm-dir shm --json
tassert "doctor made no table" test -z "$(ls shm)"
tassert "an application makes the table" memapp mem.db a b c
MINE=$(ls shm)
tassert "another database's application makes its own" memapp other.db z
THEIRS=$(ls shm | grep -v "^$MINE\$")
ID=${MINE%-*}
OBOOT=0badb007
[ "${MINE#"$ID"-}" = "$OBOOT.shm" ] && OBOOT=0badb008
BOOT=$(python3 -c 'import struct,sys; print(struct.unpack("<Q", open(sys.argv[1], "rb").read(80)[72:80])[0])' "shm/$MINE")
STALE=$ID-$OBOOT.shm
UNKNOWN=$ID-00000000.shm
OSTALE=${THEIRS%-*}-$OBOOT.shm
forge "shm/$MINE" "shm/$STALE" $((BOOT ^ 256))
forge "shm/$MINE" "shm/$UNKNOWN" 0
forge "shm/$THEIRS" "shm/$OSTALE" $((BOOT ^ 256))
tcase "doctor: the table in use" 0 \
    --json 'c = {r["check"]: r for r in d["checks"]}; t = c["memory_table"]; assert t["status"] == "ok" and "shm/'"$MINE"'" in t["detail"] and "64 slots" in t["detail"] and "3 live entries" in t["detail"], t' \
    -- --db mem.db doctor --shm-dir shm --json
tcase "doctor: a table of an earlier boot warns, one of unknown boot is left alone, another database's is not looked at" 0 \
    --json 's = [r for r in d["checks"] if r["check"] == "memory_stale"]; assert d["ok"] and len(s) == 2 and all(r["status"] == "warn" for r in s) and "'"$STALE"'" in s[1]["detail"] and "earlier boot" in s[1]["detail"] and "'"$UNKNOWN"'" in s[0]["detail"] and "'"${THEIRS%-*}"'" not in str(d), s' \
    -- --db mem.db doctor --shm-dir shm --json
tassert "nothing removed without --fix" test -e "shm/$STALE"
tcase "doctor --fix removes the table of an earlier boot" 0 --out-has "$(printf 'memory_stale\tok\tremoved shm/%s' "$STALE")" \
    -- --db mem.db doctor --shm-dir shm --fix
tassert "it is gone" test ! -e "shm/$STALE"
tassert "the table in use, the one of unknown boot and the other database's stay" \
    test -e "shm/$MINE" -a -e "shm/$UNKNOWN" -a -e "shm/$THEIRS" -a -e "shm/$OSTALE"
tassert "the application goes on with its counts" memapp mem.db a
tcase "--shm-dir (global) reads the applications' memory counts" 0 \
    --json 'assert d["limits"][0]["name"] == "mm" and d["limits"][0]["used"] == 2, d["limits"]' \
    -- --db mem.db --shm-dir shm explain m a --json
RLSTORE_SHM_DIR=shm tcase "RLSTORE_SHM_DIR does the same" 0 \
    --json 'assert d["limits"][0]["used"] == 2, d["limits"]' \
    -- --db mem.db explain m a --json
tcase "without it, /dev/shm: not the applications' table" 0 \
    --json 'assert d["limits"][0]["used"] == 0, d["limits"]' \
    -- --db mem.db explain m a --json
tcase "a check through rlctl charges the applications' table" 0 \
    -- --db mem.db --shm-dir shm check m a
tcase "and it is in the applications' table" 0 \
    --json 'assert d["limits"][0]["used"] == 3, d["limits"]' \
    -- --db mem.db --shm-dir shm explain m a --json
tcase "doctor --fix again: nothing more to remove" 0 \
    --json 's = [r for r in d["checks"] if r["check"] == "memory_stale"]; assert len(s) == 1 and s[0]["status"] == "warn" and "'"$UNKNOWN"'" in s[0]["detail"], s' \
    -- --db mem.db doctor --shm-dir shm --fix --json
else
    skip "doctor and the memory table: the Python binding cannot load $LIB"
fi
tcase "doctor --shm-dir empty" 2 --err-has "invalid value for --shm-dir" -- --db mem.db doctor --shm-dir ''

finish
