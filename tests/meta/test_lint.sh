#!/bin/sh
# tests/meta/test_lint.sh - `make lint` (tests/lint.sh) on made-up trees,
# so that the lint itself is tested: each house rule broken once is
# reported as one line naming the file and line, and fails the lint; the
# same tree without the fault passes; a shell suite counting on its own
# is a fault too, and so is a non-static function of core/ or storage/
# without the prefix rls__; the allow-list of long files only shrinks.
# Last, the repository itself passes.
cd "$(dirname "$0")/../.." || exit 2
lint=$(pwd)/tests/lint.sh
. tests/suite_lib.sh
tmp=$SCRATCH

# tree NAME: a clean made-up tree in $tmp/NAME (the folders of the house,
# each with a file that keeps the rules), its path in $t
tree() {
    t=$tmp/$1
    mkdir -p "$t/core" "$t/storage" "$t/cli" "$t/tui" "$t/common" "$t/include" "$t/tests"
    printf 'int rls_open(void);\n' >"$t/include/rlstore.h"
    printf '/* algo.h */\nint rls__algo(int x);\n' >"$t/core/algo.h"
    printf '#include "algo.h"\n\nstatic int twice(int x)\n{\n    return 2 * x;\n}\n\nint\nrls__algo(int x)\n{\n    return twice(x);\n}\n' >"$t/core/algo.c"
    mkdir -p "$t/storage/sqlite" "$t/storage/pg"
    printf '#include <sqlite3.h>\n#include "algo.h"\n\nint rls_open(void)\n{\n    return sqlite3_initialize();\n}\n' >"$t/storage/sqlite/open.c"
    printf '#include <libpq-fe.h>\n\nint rls__pg_ok(void *c)\n{\n    return PQstatus(c) == CONNECTION_OK;\n}\n' >"$t/storage/pg/pg.c"
    printf '#include "backend.h"\n\nint rls__begin(rls_db *db, int w)\n{\n    return db->be->begin(db, w);\n}\n' >"$t/storage/stmt.c"
    printf '#include "rlstore.h"\n#include "dbname.h"\n' >"$t/cli/rlctl.h"
    printf '#include <stdio.h>\n#include "rlctl.h"\n#include "../common/dbname.h"\nint main(void) { return 0; }\n' >"$t/cli/rlctl.c"
    printf '#include "rlstore.h"\n#include "dbname.h"\n' >"$t/tui/rltop.h"
    printf '#include "rltop.h"\n' >"$t/tui/rltop.c"
    printf '#include <rlstore.h>\nint db_is_uri(const char *s);\n' >"$t/common/dbname.h"
    printf '#include "dbname.h"\n' >"$t/common/dbname.c"
}
# lines N: N lines of C
lines() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) print "/* " i " */" }'; }
# lint_run ARGS...: the lint on them, output in $tmp/out, status in $rc
lint_run() {
    sh "$lint" "$@" >"$tmp/out" 2>&1
    rc=$?
}
# expect_fail NAME LINE-REGEX: the last run failed and reported LINE-REGEX,
# one finding in all
expect_fail() {
    if [ "$rc" = 1 ] && grep -q "^lint: $2" "$tmp/out" && grep -q '^lint: 1 finding(s)$' "$tmp/out"; then
        ok "$1"
    else
        bad "$1 (exit $rc)" "$tmp/out"
    fi
}

# 1. a clean tree passes, quietly
tree clean
lint_run "$t"
if [ "$rc" = 0 ] && [ "$(cat "$tmp/out")" = "lint: ok" ]; then
    ok "a tree that keeps the rules passes with one line"
else
    bad "clean tree (exit $rc)" "$tmp/out"
fi

# 2. layering of core/: no SQLite, no libpq
tree sqlh
printf '#include "algo.h"\n#include <sqlite3.h>\n' >"$t/core/x.c"
lint_run "$t"
expect_fail "a core file including <sqlite3.h> is reported" 'core/x.c:2: SQLite in core/'
tree sqlcall
printf '/* x */\nint rls__f(void);\nint rls__f(void)\n{\n    return sqlite3_changes(0);\n}\n' >"$t/core/x.c"
lint_run "$t"
expect_fail "a core file calling sqlite3_* is reported" 'core/x.c:5: SQLite in core/'
tree pqh
printf '#include <libpq-fe.h>\n' >"$t/core/x.h"
lint_run "$t"
expect_fail "a core header including <libpq-fe.h> is reported" 'core/x.h:1: libpq in core/'
tree pqcall
printf 'int rls__f(void *c);\nint rls__f(void *c)\n{\n    return PQstatus(c);\n}\n' >"$t/core/x.c"
lint_run "$t"
expect_fail "a core file calling PQstatus is reported" 'core/x.c:4: libpq in core/'
tree pqword
printf '/* SQLite-free: no PG here, and a PQ alone is no call */\nint PQ;\n' >"$t/core/x.c"
lint_run "$t"
[ "$rc" = 0 ] && ok "\"PQ\" alone in core/ is not libpq" || bad "PQ alone (exit $rc)" "$tmp/out"

# 2b. the backends: SQLite only in storage/sqlite/, libpq only in storage/pg/
tree stsql
printf '/* x */\nint rls__f(void *c);\nint rls__f(void *c)\n{\n    return sqlite3_changes(c);\n}\n' >"$t/storage/x.c"
lint_run "$t"
expect_fail "a storage file outside storage/sqlite/ calling sqlite3_* is reported" \
    'storage/x.c:5: SQLite outside storage/sqlite/'
tree stlite
printf '#include "db.h"\n\nint rls__f(rls_db *db)\n{\n    return db->lite->split;\n}\n' >"$t/storage/x.c"
lint_run "$t"
expect_fail "a storage file reading the handle's SQLite part is reported" \
    'storage/x.c:5: SQLite outside storage/sqlite/'
tree stlitehdr
printf '#include "sqlite/lite.h"\n' >"$t/storage/x.h"
lint_run "$t"
expect_fail "a storage header including the SQLite backend's header is reported" \
    'storage/x.h:1: SQLite outside storage/sqlite/'
tree stpq
printf '#include <libpq-fe.h>\n' >"$t/storage/x.c"
lint_run "$t"
expect_fail "a storage file including <libpq-fe.h> is reported" 'storage/x.c:1: libpq outside storage/pg/'
tree stpg
printf '#include "db.h"\n\nint rls__f(rls_db *db)\n{\n    return db->pg != 0;\n}\n' >"$t/storage/x.c"
lint_run "$t"
expect_fail "a storage file testing the handle's PostgreSQL part is reported" \
    'storage/x.c:5: libpq outside storage/pg/'
tree stcross
printf '/* x */\nint rls__f(void *c);\nint rls__f(void *c)\n{\n    return sqlite3_changes(c);\n}\n' >"$t/storage/pg/x.c"
lint_run "$t"
expect_fail "SQLite in the PostgreSQL backend's folder is reported" \
    'storage/pg/x.c:5: SQLite outside storage/sqlite/'
tree stcross2
printf '#include <libpq-fe.h>\n' >"$t/storage/sqlite/x.c"
lint_run "$t"
expect_fail "libpq in the SQLite backend's folder is reported" \
    'storage/sqlite/x.c:1: libpq outside storage/pg/'

# 3. layering of the tools
tree clicore
printf '#include "rlctl.h"\n#include "../core/algo.h"\n' >"$t/cli/cmd.c"
lint_run "$t"
expect_fail "a tool including a core/ header by path is reported" 'cli/cmd.c:2: includes "../core/algo.h" of core/'
tree clicore2
printf '#include "algo.h"\n' >"$t/cli/cmd.c"
lint_run "$t"
expect_fail "a tool including a core/ header by name is reported" 'cli/cmd.c:1: includes "algo.h", found in none of cli common include (it is in core/)'
tree tuistorage
printf 'int x;\n#include "../storage/stmt.c"\n' >"$t/tui/x.c"
lint_run "$t"
expect_fail "a tool including a storage/ file is reported" 'tui/x.c:2: includes "../storage/stmt.c" of storage/'
tree tuicli
printf '#include "rltop.h"\n#include "../cli/rlctl.h"\n' >"$t/tui/x.c"
lint_run "$t"
expect_fail "rltop including rlctl's header is reported" 'tui/x.c:2: includes "../cli/rlctl.h" of cli/'
tree tuicli2
printf '# include "rlctl.h"\n' >"$t/tui/x.h"
lint_run "$t"
expect_fail "rltop including rlctl's header by name is reported" 'tui/x.h:1: includes "rlctl.h", found in none of tui common include (it is in cli/)'
tree commoncli
printf '#include "../cli/rlctl.h"\n' >"$t/common/x.c"
lint_run "$t"
expect_fail "common/ including a tool's header is reported" 'common/x.c:1: includes "../cli/rlctl.h" of cli/'
tree clisqlite
printf '#include <sqlite3.h>\n' >"$t/cli/x.c"
lint_run "$t"
expect_fail "a tool including <sqlite3.h> is reported" 'cli/x.c:1: includes <sqlite3.h>'
tree tuipq
printf '#include <libpq-fe.h>\n' >"$t/tui/x.c"
lint_run "$t"
expect_fail "a tool including <libpq-fe.h> is reported" 'tui/x.c:1: includes <libpq-fe.h>'

# 4. file length and the allow-list
tree len800
lines 800 >"$t/core/big.c"
lint_run "$t"
[ "$rc" = 0 ] && ok "a file of 800 lines passes" || bad "800 lines (exit $rc)" "$tmp/out"
tree len801
lines 801 >"$t/tests/big.c"
lint_run "$t"
expect_fail "a file of 801 lines is reported, tests/ too" 'tests/big.c:801: 801 lines, over 800'
tree allowed
lines 900 >"$t/core/big.c"
printf '# why\n\ncore/big.c 900\n' >"$t/tests/lint-long.txt"
lint_run "$t"
[ "$rc" = 0 ] && ok "a listed file within its LINES passes" || bad "allowed (exit $rc)" "$tmp/out"
lines 901 >"$t/core/big.c"
lint_run "$t"
expect_fail "a listed file grown past its LINES is reported" 'core/big.c:901: 901 lines, over 800 and grown past the 900'
lines 700 >"$t/core/big.c"
lint_run "$t"
expect_fail "a listed file back under the bound asks for its entry to go" 'tests/lint-long.txt:3: core/big.c has 700 lines now: remove its entry'
rm "$t/core/big.c"
lint_run "$t"
expect_fail "a listed file that is gone asks for its entry to go" 'tests/lint-long.txt:3: core/big.c is gone: remove its entry'
tree build
mkdir -p "$t/build/obj" "$t/build-san"
lines 900 >"$t/build/gen.c"
lines 900 >"$t/build-san/gen.c"
lint_run "$t"
[ "$rc" = 0 ] && ok "the build directories are not linted" || bad "build dirs (exit $rc)" "$tmp/out"

# 5. internal names: a non-static function without rls__ (or a public rls_ one not in rlstore.h) fails
tree names
cat >"$t/storage/names.c" <<'EOF'
#include "algo.h"

static int helper(int x)
{
    return x;
}

int store_check(int x,
                int y)
{
    return helper(x) + y;
}

const char *
algo_name(int a)
{
    return a ? "a" : "b";
}

int rls__fine(void)
{
    return 0;
}

int rls_open(void)
{
    return 1;
}

int rls_secret(void)
{
    return 2;
}

int proto_only(void);
struct s
{
    int a;
};
int table[] =
{
    1,
};
EOF
lint_run "$t"
if [ "$rc" = 1 ] && [ "$(grep -c '^lint: storage/names.c:' "$tmp/out")" = 3 ] &&
    grep -q '^lint: storage/names.c:8: store_check is not static' "$tmp/out" &&
    grep -q '^lint: storage/names.c:14: algo_name is not static' "$tmp/out" &&
    grep -q '^lint: storage/names.c:30: rls_secret has the public prefix but is not in include/rlstore.h' "$tmp/out" &&
    grep -q '^lint: 3 finding(s)$' "$tmp/out"; then
    ok "unprefixed non-static functions are findings, each with its file and line"
else
    bad "unprefixed names (exit $rc)" "$tmp/out"
fi

# 6. several findings: one line each, all counted
tree many
printf '#include <sqlite3.h>\n' >"$t/core/x.c"
printf '#include "../cli/rlctl.h"\n' >"$t/tui/x.c"
lines 801 >"$t/storage/big.c"
lint_run "$t"
if [ "$rc" = 1 ] && [ "$(grep -c '^lint: [a-z]*/[a-z.]*:[0-9]*: ' "$tmp/out")" = 3 ] &&
    grep -q '^lint: 3 finding(s)$' "$tmp/out"; then
    ok "three faults: three lines and a count"
else
    bad "three findings (exit $rc)" "$tmp/out"
fi

# 7. the shell suites count through tests/suite_lib.sh only
tree harness
mkdir -p "$t/tests/x"
printf 'finish() { echo "[  PASSED  ] $passed test(s)."; }\nok() { passed=$((passed + 1)); }\n' >"$t/tests/suite_lib.sh"
printf '# prints "[  PASSED  ] N test(s)." through finish()\n. tests/suite_lib.sh\nok "one"\nfinish\n' >"$t/tests/x/test_a.sh"
lint_run "$t"
[ "$rc" = 0 ] && ok "a suite counting through suite_lib.sh passes" || bad "harness (exit $rc)" "$tmp/out"
printf '. tests/suite_lib.sh\n  finish () {\n    exit 0\n}\n' >"$t/tests/x/test_b.sh"
lint_run "$t"
expect_fail "a suite defining finish() is reported" 'tests/x/test_b.sh:2: defines a counting function of its own'
rm "$t/tests/x/test_b.sh"
printf '. tests/suite_lib.sh\nif true; then failed=$((failed + 1)); fi\n' >"$t/tests/x/test_c.sh"
lint_run "$t"
expect_fail "a suite adding to the counters is reported" 'tests/x/test_c.sh:2: counts tests on its own'
rm "$t/tests/x/test_c.sh"
printf '. tests/suite_lib.sh\necho "[  SKIPPED ] 3 test(s)."\n' >"$t/tests/x/test_d.sh"
lint_run "$t"
expect_fail "a suite printing a summary line is reported" 'tests/x/test_d.sh:2: prints a summary line of its own'

# 8. the repository itself
lint_run
[ "$rc" = 0 ] && ok "the repository passes its lint" || bad "make lint on the repository (exit $rc)" "$tmp/out"
finish
