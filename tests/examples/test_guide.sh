#!/bin/sh
# tests/examples/test_guide.sh - what docs/GUIDE.md tells operators to rely
# on, run against the real library:
#
#   backups   the guide's backup.c (the block after '<!-- guide-test:
#             backup.c -->') and VACUUM INTO (Python's sqlite3) copy a
#             database while another process keeps checking; the copies
#             open with the same counters; the restore procedure works;
#   modes     a new database is 0600 whatever the umask, -wal/-shm follow
#             it, file_mode 0660 shares it;
#   fork      a child may use an inherited handle (its own connection),
#             rls_close() in the child leaves the parent's alone;
#   zones     without zone data, rules naming a zone fail with ECONFIG and
#             the failure policy decides;
#   links     every relative link of the Markdown files of this work points
#             to a file that exists.
. "$(dirname "$0")/../install/suite.sh"

RLCTL=$BUILD_ABS/rlctl
GUIDE=docs/GUIDE.md
[ -x "$RLCTL" ] || { fail "$RLCTL is not built (run make)"; finish; }
PKGS="$(pkg-config --cflags --libs sqlite3 2>/dev/null || echo -lsqlite3)"

# count DB ACTION KEY: units used by KEY in its first limit (rlctl explain)
used() {
    "$RLCTL" --db "$1" --json explain "$2" "$3" 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["limits"][0]["used"])' 2>/dev/null
}

# ---- backups -----------------------------------------------------------------------
db=$TMP/live.db
"$RLCTL" --db "$db" init examples/demo.yaml >/dev/null 2>&1 || fail "rlctl init failed"
for i in 1 2 3 4; do "$RLCTL" --db "$db" --quiet check signup 203.0.113.7; done
sed -n '/^<!-- guide-test: backup.c -->$/,/^```$/p' "$GUIDE" | sed -e '1,2d' -e '$d' >"$TMP/backup.c"
if ! grep -q sqlite3_backup_init "$TMP/backup.c"; then
    fail "$GUIDE: no C block after '<!-- guide-test: backup.c -->'"
else
    # shellcheck disable=SC2086
    if $CC -std=c11 -Wall -Wextra -Werror "$TMP/backup.c" -o "$TMP/rlstore-backup" $PKGS \
            >"$TMP/cc.log" 2>&1; then
        pass
        # a writer keeps checking other keys meanwhile
        ( for i in $(seq 1 200); do "$RLCTL" --db "$db" --quiet check api "user:$i"; done ) &
        writer=$!
        "$TMP/rlstore-backup" "$db" "$TMP/copy1.db" >"$TMP/b.log" 2>&1
        rc=$?
        wait "$writer"
        if [ $rc = 0 ] && [ "$(used "$TMP/copy1.db" signup 203.0.113.7)" = 4 ]; then
            pass
        else
            fail "backup.c: exit $rc ($(cat "$TMP/b.log")), counter in the copy '$(used "$TMP/copy1.db" signup 203.0.113.7)', expected 4"
        fi
    else
        fail "the guide's backup.c does not compile: $(head -n 2 "$TMP/cc.log" | tr '\n' ' ')"
    fi
fi
python3 -c '
import sqlite3, sys
sqlite3.connect(sys.argv[1]).execute("VACUUM INTO ?", (sys.argv[2],))
' "$db" "$TMP/copy2.db" 2>"$TMP/v.log"
if [ "$(used "$TMP/copy2.db" signup 203.0.113.7)" = 4 ]; then
    pass
else
    fail "VACUUM INTO: the copy does not hold the counters: $(cat "$TMP/v.log")"
fi
"$RLCTL" --db "$TMP/copy2.db" --json doctor >"$TMP/doc.json" 2>&1
grep -q '"journal_mode","status":"ok"' "$TMP/doc.json" && pass ||
    fail "a VACUUM INTO copy is not in WAL mode once opened: $(head -c 300 "$TMP/doc.json")"
# Restore: stop (nothing runs here), move the copy into place, delete the
# old -wal/-shm, check.
for i in 1 2 3; do "$RLCTL" --db "$db" --quiet check signup 203.0.113.7; done
cp "$TMP/copy2.db" "$db.new" && mv "$db.new" "$db" && rm -f "$db-wal" "$db-shm" && chmod 600 "$db"
if "$RLCTL" --db "$db" doctor --full >"$TMP/doc.txt" 2>&1 &&
    [ "$(used "$db" signup 203.0.113.7)" = 4 ]; then
    pass
else
    fail "restore: doctor --full or the counters after restoring: $(grep -v '	ok	' "$TMP/doc.txt" | head -n 2 | tr '\n' ' ')"
fi

# ---- modes ---------------------------------------------------------------------------
cat >"$TMP/modes.c" <<'EOF'
/* Creates a database with the given umask and file_mode (0: default),
 * checks once and prints the modes of the file and its -wal/-shm while
 * the handle is open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "rlstore.h"

static unsigned mode_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (unsigned)(sb.st_mode & 0777) : 0;
}

int main(int argc, char **argv)
{
    static const char rules[] =
        "version: 1\nactions: { a: { limits: [ { name: d, limit: 5, window: 1d } ] } }\n";
    rls_options opt;
    rls_db *db;
    rls_result res;
    char side[4200];

    if (argc != 4)
        return 2;
    umask((mode_t)strtol(argv[2], NULL, 8));
    rls_options_init(&opt);
    if (strtol(argv[3], NULL, 8))
        opt.file_mode = (unsigned)strtol(argv[3], NULL, 8);
    if (rls_open(&db, argv[1], &opt) != RLS_OK ||
        rls_rules_apply(db, rules, strlen(rules), NULL, NULL, NULL) != RLS_OK ||
        rls_check(db, "a", "k", 1, &res) != RLS_OK)
        return 1;
    printf("%03o", mode_of(argv[1]));
    snprintf(side, sizeof side, "%s-wal", argv[1]);
    printf(" %03o", mode_of(side));
    snprintf(side, sizeof side, "%s-shm", argv[1]);
    printf(" %03o\n", mode_of(side));
    rls_close(db);
    return 0;
}
EOF
if $CC -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror $SAN -Iinclude "$TMP/modes.c" \
        -o "$TMP/modes" -L"$BUILD" -lrlstore -Wl,-rpath,"$BUILD_ABS" >"$TMP/cc.log" 2>&1; then
    for case in "022 0 600 600 600" "000 0 600 600 600" "077 660 660 660 660"; do
        set -- $case
        got=$("$TMP/modes" "$TMP/m$1$2.db" "$1" "$2" 2>&1)
        [ "$got" = "$3 $4 $5" ] && pass ||
            fail "umask $1, file_mode $2: modes of db, -wal, -shm are '$got', expected '$3 $4 $5'"
    done
else
    fail "cannot compile the modes probe: $(head -n 2 "$TMP/cc.log" | tr '\n' ' ')"
fi

# ---- fork ----------------------------------------------------------------------------
cat >"$TMP/fork.c" <<'EOF'
/* The parent checks, forks; the child checks through the inherited handle
 * and closes it; the parent checks again.  Prints the three results and
 * the units used at the end. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "rlstore.h"

int main(int argc, char **argv)
{
    static const char rules[] =
        "version: 1\nactions: { a: { limits: [ { name: d, limit: 10, window: 1d } ] } }\n";
    rls_db *db;
    rls_result res;
    int status;

    if (argc != 2 || rls_open(&db, argv[1], NULL) != RLS_OK ||
        rls_rules_apply(db, rules, strlen(rules), NULL, NULL, NULL) != RLS_OK)
        return 1;
    printf("parent %s\n", rls_errname(rls_check(db, "a", "k", 1, &res)));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = rls_check(db, "a", "k", 1, &res);
        printf("child %s remaining %lld\n", rls_errname(rc), (long long)res.remaining);
        fflush(stdout);
        rls_close(db);
        _exit(rc == RLS_OK ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    int rc = rls_check(db, "a", "k", 1, &res);
    printf("parent-after %s remaining %lld child-exit %d\n", rls_errname(rc),
           (long long)res.remaining, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    rls_close(db);
    return 0;
}
EOF
if $CC -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror $SAN -Iinclude "$TMP/fork.c" \
        -o "$TMP/fork" -L"$BUILD" -lrlstore -Wl,-rpath,"$BUILD_ABS" >"$TMP/cc.log" 2>&1; then
    "$TMP/fork" "$TMP/fork.db" >"$TMP/fork.out" 2>&1
    if grep -qx 'parent OK' "$TMP/fork.out" && grep -qx 'child OK remaining 8' "$TMP/fork.out" &&
        grep -qx 'parent-after OK remaining 7 child-exit 0' "$TMP/fork.out"; then
        pass
    else
        fail "fork: $(tr '\n' '|' <"$TMP/fork.out")"
    fi
else
    fail "cannot compile the fork probe: $(head -n 2 "$TMP/cc.log" | tr '\n' ' ')"
fi

# ---- zones ---------------------------------------------------------------------------
printf 'version: 1\nactions:\n  a: { on_error: allow, limits: [ { name: d, limit: 3, window: 1d, timezone: Europe/Berlin } ] }\n' >"$TMP/tz.yaml"
if [ -f /usr/share/zoneinfo/Europe/Berlin ] || [ -n "${TZDIR:-}" ]; then
    "$RLCTL" --db "$TMP/tz.db" init "$TMP/tz.yaml" >/dev/null 2>&1 || fail "rlctl init with a time zone failed"
    mkdir -p "$TMP/nozones"
    TZDIR=$TMP/nozones "$RLCTL" --db "$TMP/tz.db" --json check a k >"$TMP/tz.json" 2>/dev/null
    grep -q '"code":"ECONFIG"' "$TMP/tz.json" && grep -q "unknown time zone 'Europe/Berlin'" "$TMP/tz.json" &&
        pass || fail "without zone data: $(head -c 300 "$TMP/tz.json")"
    cat >"$TMP/tz.c" <<'EOF'
#include <stdio.h>
#include "rlstore.h"
int main(int argc, char **argv)
{
    rls_db *db;
    rls_result res;
    if (argc != 2 || rls_open(&db, argv[1], NULL) != RLS_OK)
        return 1;
    int rc = rls_check(db, "a", "k", 1, &res);
    printf("%s %d %s\n", rls_errname(rc), res.allowed, rls_reason_name(res.reason));
    rls_close(db);
    return 0;
}
EOF
    if $CC -std=c11 -Wall -Wextra -Werror $SAN -Iinclude "$TMP/tz.c" -o "$TMP/tz" -L"$BUILD" -lrlstore \
            -Wl,-rpath,"$BUILD_ABS" >"$TMP/cc.log" 2>&1; then
        got=$(TZDIR=$TMP/nozones "$TMP/tz" "$TMP/tz.db" 2>&1)
        # the action says on_error: allow - but the rules cannot be read, so
        # the handle's policy (deny by default) decides
        [ "$got" = "ECONFIG 0 degraded" ] && pass ||
            fail "a check without zone data: '$got', expected 'ECONFIG 0 degraded' (the handle's policy)"
    else
        fail "cannot compile the zone probe"
    fi
else
    fail "no zone data in /usr/share/zoneinfo (Debian: apt-get install tzdata)"
fi

# ---- the README's build line -----------------------------------------------------------
# The block after '<!-- readme-test: build -->', run from a copy of the
# tree's layout in a scratch directory: the program it builds must run from
# anywhere, without LD_LIBRARY_PATH (the README's rpath).
sed -n '/^<!-- readme-test: build -->$/,/^```$/p' README.md | sed -e '1,2d' -e '$d' >"$TMP/readme.sh"
if nm -D "$BUILD_ABS/librlstore.so" 2>/dev/null | grep -q __asan_init; then
    # a sanitized library needs its runtime linked first: the README's
    # plain cc line is for the plain build (checked in that pass)
    skip "the README's build line" "the library is built with sanitizers"
elif grep -q '^cc ' "$TMP/readme.sh"; then
    mkdir -p "$TMP/rm/include" "$TMP/rm/examples" "$TMP/rm/elsewhere"
    cp include/rlstore.h include/rlstore_admin.h "$TMP/rm/include/" && cp examples/quickstart.c "$TMP/rm/examples/"
    ln -s "$BUILD_ABS" "$TMP/rm/build"
    sed -i "s|/tmp/quickstart.db|$TMP/rm/q.db|" "$TMP/readme.sh"
    if (cd "$TMP/rm" && unset LD_LIBRARY_PATH && sh -e "$TMP/readme.sh") >"$TMP/readme.log" 2>&1 &&
        (cd "$TMP/rm/elsewhere" && unset LD_LIBRARY_PATH && ../quickstart "$TMP/rm/q2.db") >>"$TMP/readme.log" 2>&1; then
        pass
    else
        fail "the README's build line: $(tail -n 3 "$TMP/readme.log" | tr '\n' '|')"
    fi
else
    fail "README.md: no cc line after '<!-- readme-test: build -->'"
fi

# ---- links -----------------------------------------------------------------------------
for md in docs/GUIDE.md docs/ABI.md README.md examples/prometheus/README.md bindings/python/README.md; do
    [ -f "$md" ] || { fail "$md does not exist"; continue; }
    dir=$(dirname "$md")
    bad=
    for link in $(grep -o '](\([^)#]*\)[#)]' "$md" | sed 's/^](//; s/[#)]$//' | grep -v '^[a-z]*:' | sort -u); do
        [ -n "$link" ] || continue
        [ -e "$dir/$link" ] || bad="$bad $link"
    done
    [ -z "$bad" ] && pass || fail "$md links to missing files:$bad"
done

finish
