#!/bin/sh
# tests/install/test_driver.sh - the PostgreSQL backend as a driver module
# (storage/driver.h, docs/ABI.md "The PostgreSQL driver module").
#
#   1. librlstore.so neither names nor loads libpq (readelf, ldd); the
#      module $BUILD/rlstore/rlstore-pg.so needs libpq and exports only
#      rls__pg_driver_entry;
#   2. a program on a SQLite file never loads the module nor libpq, one
#      given a postgresql:// URI loads both (LD_DEBUG=files), from beside
#      the library: the error is then the server's, not the driver's;
#   3. no module: rls_open fails with ECANTOPEN, "PostgreSQL driver not
#      installed", naming where it looked; RLSTORE_PG_DRIVER naming a file
#      that is missing or not a driver is refused with its reason;
#   4. the module refuses a table of another build (NULL, wrong sizes);
#   5. a program linked with librlstore.a loads the module too.
# No server is needed: a URI of a closed port gives libpq's own error,
# which proves the driver ran.
. "$(dirname "$0")/suite.sh"

LIB=$BUILD/librlstore.so
DRV=$BUILD/rlstore/rlstore-pg.so
RLCTL=$BUILD_ABS/rlctl
for f in "$LIB" "$DRV" "$RLCTL"; do
    [ -f "$f" ] || { fail "$f missing: run make"; finish; }
done
# A port nothing listens on (connect is refused at once).
URI=postgresql://rlstore@127.0.0.1:1/none

# ---- 1. who needs libpq --------------------------------------------------------
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
case " $(needed "$LIB")" in
*libpq*) fail "$LIB names libpq: $(needed "$LIB")" ;;
*) pass ;;
esac
ldd "$LIB" | grep -q libpq && fail "ldd $LIB shows libpq" || pass
case " $(needed "$DRV")" in
*" libpq.so."*) pass ;;
*) fail "$DRV does not name libpq: $(needed "$DRV")" ;;
esac
readelf -d "$DRV" | grep -q '(SONAME)' && fail "$DRV has a SONAME (a module is never linked against)" || pass
syms=$(nm -D --defined-only "$DRV" | awk '$2 != "A" { print $3 }' | tr '\n' ' ')
[ "$syms" = "rls__pg_driver_entry " ] && pass || fail "$DRV exports '$syms', expected only rls__pg_driver_entry"

# ---- 2. loaded on first use of a postgresql:// URI only ---------------------------
"$RLCTL" --db "$TMP/s.db" init examples/demo.yaml >"$TMP/init.log" 2>&1 ||
    fail "rlctl init on a SQLite file: $(head -n 2 "$TMP/init.log")"
LD_DEBUG=files "$RLCTL" --db "$TMP/s.db" --quiet check signup 192.0.2.1 >"$TMP/sqlite.log" 2>&1
if grep -q 'file=libsqlite3' "$TMP/sqlite.log"; then
    grep -Eq 'rlstore-pg|libpq' "$TMP/sqlite.log" &&
        fail "a check on a SQLite file loaded $(grep -Eo 'file=[^ ]*(rlstore-pg|libpq)[^ ]*' "$TMP/sqlite.log" | head -n 2 | tr '\n' ' ')" ||
        pass
else
    skip "SQLite-only program loads no libpq" "LD_DEBUG=files shows no loading here"
fi
LD_DEBUG=files "$RLCTL" --db "$URI" --quiet check signup 192.0.2.1 >"$TMP/pg.log" 2>&1
st=$?
if grep -q 'file=libsqlite3' "$TMP/pg.log"; then
    grep -q "file=.*$BUILD/rlstore/rlstore-pg.so" "$TMP/pg.log" && grep -q 'file=libpq.so' "$TMP/pg.log" && pass ||
        fail "a postgresql:// URI did not load $DRV and libpq"
fi
grep -v '^ *[0-9]*:' "$TMP/pg.log" >"$TMP/pg.err"
if [ "$st" != 0 ] && ! grep -q 'driver' "$TMP/pg.err" && grep -Eqi 'connect|refused' "$TMP/pg.err"; then
    pass
else
    fail "rlctl on a closed port: status $st, '$(head -c 300 "$TMP/pg.err")' (expected a connection error)"
fi

# ---- 3. no module, or not a module ------------------------------------------------
# The last place the library looks (its build's install directory): a
# module installed there would be found, and these tests would not apply.
fallback=$(strings -a "$LIB" | grep -m 1 '^/.*/rlstore-pg\.so$')
if [ -n "$fallback" ] && [ -e "$fallback" ]; then
    skip "no module: ECANTOPEN" "a module is installed at $fallback"
    skip "librlstore.a program without the module" "a module is installed at $fallback"
    NOFALLBACK=0
else
    NOFALLBACK=1
fi
mkdir -p "$TMP/bare"
cp -L "$LIB" "$TMP/bare/librlstore.so.0" && cp "$RLCTL" "$TMP/bare/rlctl" ||
    fail "cannot copy rlctl and the library"
"$TMP/bare/rlctl" --db "$URI" check signup 192.0.2.1 >"$TMP/bare.out" 2>"$TMP/bare.err"
st=$?
[ $NOFALLBACK = 0 ] || {
    [ "$st" != 0 ] && grep -q "PostgreSQL driver not installed: no $TMP/bare/rlstore/rlstore-pg.so nor $fallback" "$TMP/bare.err" &&
        pass || fail "without a module: status $st, '$(head -c 300 "$TMP/bare.err")'"
}
# the file named by RLSTORE_PG_DRIVER, and nothing else
RLSTORE_PG_DRIVER=$TMP/none.so "$RLCTL" --db "$URI" check signup 192.0.2.1 >/dev/null 2>"$TMP/env.err"
grep -q "PostgreSQL driver cannot be loaded: $TMP/none.so" "$TMP/env.err" && pass ||
    fail "RLSTORE_PG_DRIVER=<missing file>: '$(head -c 300 "$TMP/env.err")'"
RLSTORE_PG_DRIVER=$BUILD_ABS/librlstore.so.0 "$RLCTL" --db "$URI" check signup 192.0.2.1 >/dev/null 2>"$TMP/env2.err"
grep -q "refused: no rls__pg_driver_entry" "$TMP/env2.err" && pass ||
    fail "RLSTORE_PG_DRIVER=<not a driver>: '$(head -c 300 "$TMP/env2.err")'"
# the same through the API: the code and rls_errmsg(NULL)
cat >"$TMP/open.c" <<'C'
#include <rlstore.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    rls_db *db = NULL;
    int rc = rls_open(&db, argv[1], NULL);
    printf("%s|%s\n", rls_errname(rc), rls_errmsg(NULL));
    rls_close(db);
    return argc < 2;
}
C
if $CC -std=c11 $SAN -Iinclude "$TMP/open.c" -o "$TMP/bare/open" -L"$TMP/bare" -l:librlstore.so.0 \
        -Wl,-rpath,'$ORIGIN' >"$TMP/cc.log" 2>&1; then
    out=$("$TMP/bare/open" "$URI")
    case $NOFALLBACK:$out in
    0:*|"1:ECANTOPEN|PostgreSQL driver not installed: "*) pass ;;
    *) fail "rls_open without a module: '$out'" ;;
    esac
    out=$("$TMP/bare/open" "$TMP/bare.db")
    [ "$out" = "OK|" ] && pass || fail "rls_open of a SQLite file without the module: '$out'"
else
    fail "cannot build a program against $TMP/bare: $(head -n 2 "$TMP/cc.log")"
fi

# ---- 4. the module checks the library's table -----------------------------------
cat >"$TMP/entry.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
typedef const void *entry_fn(const void *host, char *why, size_t size);
int main(int argc, char **argv)
{
    static unsigned char table[4096];   /* zeroes: no version, no sizes */
    char why[256] = "";
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
    entry_fn *entry = (entry_fn *)dlsym(h, "rls__pg_driver_entry");
    if (!entry) { printf("no entry\n"); return 1; }
    if (entry(NULL, why, sizeof why)) { printf("accepted NULL\n"); return 1; }
    memset(table, 0xff, 4);   /* version 255.255.255 */
    if (entry(table, why, sizeof why)) { printf("accepted a wrong table\n"); return 1; }
    printf("%s\n", why);
    return argc < 2;
}
C
if $CC -std=c11 $SAN "$TMP/entry.c" -o "$TMP/entry" -ldl >"$TMP/cc.log" 2>&1; then
    out=$("$TMP/entry" "$DRV" 2>&1)
    case $out in
    "built for librlstore "*", loaded by librlstore 255.255.255 of another build"*) pass ;;
    *) fail "the module and a wrong table: '$out'" ;;
    esac
else
    fail "cannot build the table test: $(head -n 2 "$TMP/cc.log")"
fi

# ---- 5. a program linked with librlstore.a ---------------------------------------
if $CC -std=c11 $SAN -Iinclude "$TMP/open.c" -o "$TMP/static_open" "$BUILD/librlstore.a" \
        $(pkg-config --libs sqlite3 yaml-0.1) -lm -lpthread -ldl >"$TMP/cc.log" 2>&1; then
    # nothing beside the program (it has no library file): not installed
    out=$("$TMP/static_open" "$URI")
    case $NOFALLBACK:$out in
    0:*) ;;
    *"driver not installed: no $fallback ("*) pass ;;
    *) fail "librlstore.a program without RLSTORE_PG_DRIVER: '$out'" ;;
    esac
    out=$(RLSTORE_PG_DRIVER=$BUILD_ABS/rlstore/rlstore-pg.so "$TMP/static_open" "$URI")
    case $out in
    *driver*) fail "librlstore.a program with the module: '$out'" ;;
    ECANTOPEN*|ESTORAGE*|EIO*|EBUSY*) pass ;;
    *) fail "librlstore.a program with the module: '$out' (expected a connection error)" ;;
    esac
else
    fail "cannot link a program with librlstore.a: $(head -n 2 "$TMP/cc.log")"
fi
finish
