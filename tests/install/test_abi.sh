#!/bin/sh
# tests/install/test_abi.sh - the ABI of librlstore, as docs/ABI.md states it.
#
#   1. The dynamic symbols $BUILD/librlstore.so defines (nm -D
#      --defined-only) are exactly the functions declared RLS_EXTERN in
#      include/rlstore.h: no more (no rls__ internals, no SQLite or libyaml
#      symbols), no less; each carries a version node of librlstore.map.
#   2. The SONAME is librlstore.so.<RLS_VERSION_MAJOR>, and the Makefile's
#      VERSION and SONAME_MAJOR agree with the version macros of the header;
#      rls_version() and rls_version_string() return them at run time.
#   3. Against tests/install/abi-baseline.txt (recorded at the release of
#      the current major version): no exported function is gone, error codes,
#      reasons and enum values keep their numbers, the fields of rls_result,
#      rls_options and rls_usage_query keep their offsets and sizes, and
#      sizeof(rls_result) never changes (callers allocate it; it grows only
#      into reserved_).  A change that breaks this must bump the SONAME, and
#      then the baseline is recorded again:
#          sh tests/install/test_abi.sh --record
#   4. The header compiles on its own as C99 with -pedantic and as C++.
. "$(dirname "$0")/suite.sh"

HDR=include/rlstore.h
HDRS="$HDR include/rlstore_admin.h"   # rlstore.h includes the second
MAP=librlstore.map
BASE=tests/install/abi-baseline.txt
LIB=$BUILD/librlstore.so
record=0
[ "${1:-}" = --record ] && record=1

if [ ! -f "$LIB" ]; then
    echo "note: $LIB missing; running make $LIB"
    make -s BUILD="$BUILD" "$LIB" >"$TMP/make.log" 2>&1 ||
        { fail "cannot build $LIB: $(tail -n 2 "$TMP/make.log" | tr '\n' ' ')"; finish; }
fi

# ---- 1. exported symbols == RLS_EXTERN functions ------------------------------
# Declarations may span lines: drop preprocessor lines (and their
# continuations), join the rest, drop comments, split at ';' and take the
# identifier before the first '(' of every RLS_EXTERN declaration.
awk '/^[ \t]*#/ { pp = 1 } !pp { print } { if (!/\\$/) pp = 0 }' $HDRS | tr '\n' ' ' |
    sed -e 's|/\*\([^*]\|\*[^/]\)*\*/||g' -e 's/;/;\n/g' | grep 'RLS_EXTERN' |
    sed -n 's/.*RLS_EXTERN[^(]*[ *]\(rls_[a-z0-9_]*\) *(.*/\1/p' | sort >"$TMP/declared"
ndecl=$(wc -l <"$TMP/declared")
[ "$ndecl" -ge 50 ] && pass || fail "parsed only $ndecl RLS_EXTERN functions from $HDRS"

nm -D --defined-only "$LIB" >"$TMP/nm" 2>&1 || fail "nm -D --defined-only $LIB: $(head -n 1 "$TMP/nm")"
# Version nodes show up as absolute symbols (type A) named like the node.
awk '$2 != "A" { print $3 }' "$TMP/nm" | sed 's/@.*//' | sort -u >"$TMP/exported"
comm -13 "$TMP/declared" "$TMP/exported" >"$TMP/extra"
comm -23 "$TMP/declared" "$TMP/exported" >"$TMP/missing"
if [ -s "$TMP/extra" ]; then
    fail "exported but not declared RLS_EXTERN in $HDR: $(tr '\n' ' ' <"$TMP/extra")"
else
    pass
fi
if [ -s "$TMP/missing" ]; then
    fail "declared RLS_EXTERN but not exported: $(tr '\n' ' ' <"$TMP/missing")"
else
    pass
fi
# Every exported function has a version from librlstore.map.
nodes=$(sed -n 's/^\([A-Z][A-Z0-9_.]*\) *{.*/\1/p' "$MAP" | tr '\n' ' ')
[ -n "$nodes" ] && pass || fail "no version node found in $MAP"
awk '$2 != "A" { print $3 }' "$TMP/nm" >"$TMP/versioned"
bad=
while IFS= read -r s; do
    node=${s#*@}
    node=${node#@}
    case " $nodes " in
    *" $node "*) ;;
    *) bad="$bad $s" ;;
    esac
done <"$TMP/versioned"
[ -z "$bad" ] && pass || fail "symbols without a version node of $MAP:$bad"
# Undefined references only to the C library, SQLite and libyaml: a
# dependency added by accident shows up here.  Not libpq: PostgreSQL is
# the driver module's (docs/ABI.md), neither named nor loaded with the
# library.
readelf -d "$LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort >"$TMP/needed"
unexpected=$(grep -Ev '^(libc|libm|libpthread|libsqlite3|libyaml-0|libasan|libubsan|libgcc_s|libdl|libz|ld-linux[-a-z0-9_]*)\.so' "$TMP/needed" | tr '\n' ' ')
[ -z "$unexpected" ] && pass || fail "$LIB needs unexpected libraries: $unexpected"
if ldd "$LIB" >"$TMP/ldd" 2>&1; then
    grep -q 'libpq' "$TMP/ldd" && fail "ldd $LIB shows libpq: $(grep libpq "$TMP/ldd" | tr -s ' \t' ' ')" || pass
else
    fail "ldd $LIB: $(head -n 1 "$TMP/ldd")"
fi

# ---- 2. SONAME and versions ---------------------------------------------------
major=$(sed -n 's/^#define RLS_VERSION_MAJOR \([0-9]*\)$/\1/p' "$HDR")
minor=$(sed -n 's/^#define RLS_VERSION_MINOR \([0-9]*\)$/\1/p' "$HDR")
patch=$(sed -n 's/^#define RLS_VERSION_PATCH \([0-9]*\)$/\1/p' "$HDR")
vstring=$(sed -n 's/^#define RLS_VERSION_STRING "\(.*\)"$/\1/p' "$HDR")
mk_version=$(sed -n 's/^VERSION *:= *//p' Makefile)
mk_major=$(sed -n 's/^SONAME_MAJOR *:= *//p' Makefile)
[ "$vstring" = "$major.$minor.$patch" ] && pass ||
    fail "RLS_VERSION_STRING '$vstring' is not MAJOR.MINOR.PATCH ($major.$minor.$patch)"
[ "$mk_version" = "$vstring" ] && pass ||
    fail "Makefile VERSION $mk_version differs from RLS_VERSION_STRING $vstring"
[ "$mk_major" = "$major" ] && pass ||
    fail "Makefile SONAME_MAJOR $mk_major differs from RLS_VERSION_MAJOR $major"
soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "librlstore.so.$major" ] && pass ||
    fail "SONAME is '$soname', expected librlstore.so.$major"
[ -f "$BUILD/librlstore.so.$mk_version" ] && [ "$(readlink "$BUILD/librlstore.so.$major")" = "librlstore.so.$mk_version" ] &&
    pass || fail "$BUILD/librlstore.so.$major does not link to librlstore.so.$mk_version"

# ---- 3. layout of the public types, against the baseline ----------------------
cat >"$TMP/layout.c" <<'EOF'
/* Prints every number the ABI depends on, one "name value" per line. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "rlstore.h"

#define FIELD(t, f) printf("offsetof %s.%s %zu\nsizeof %s.%s %zu\n", #t, #f, \
                           offsetof(t, f), #t, #f, sizeof(((t *)0)->f))
#define VALUE(n) printf("value %s %lld\n", #n, (long long)(n))

int main(void)
{
#define ERR(name, text) printf("value RLS_%s %d\n", #name, RLS_##name);
    RLS_ERRNO_MAP(ERR)
#undef ERR
    VALUE(RLS_REASON_OK); VALUE(RLS_REASON_LIMIT); VALUE(RLS_REASON_BLOCKED);
    VALUE(RLS_REASON_COST_EXCEEDS); VALUE(RLS_REASON_SHADOW); VALUE(RLS_REASON_DEGRADED);
    VALUE(RLS_DURABILITY_NORMAL); VALUE(RLS_DURABILITY_FULL);
    VALUE(RLS_ON_ERROR_DENY); VALUE(RLS_ON_ERROR_ALLOW);
    VALUE(RLS_COL_INT); VALUE(RLS_COL_TEXT);
    VALUE(RLS_SORT_USED); VALUE(RLS_SORT_KEY); VALUE(RLS_SORT_RESET);
    VALUE(RLS_KEY_MAX_DEFAULT); VALUE(RLS_KEY_MAX_LIMIT); VALUE(RLS_COST_MAX);
    VALUE(RLS_NAME_MAX); VALUE(RLS_TIME_MIN); VALUE(RLS_TIME_MAX);
    VALUE(RLS_RESERVE_TTL_DEFAULT);
    printf("sizeof rls_result %zu\n", sizeof(rls_result));
    FIELD(rls_result, allowed); FIELD(rls_result, reason); FIELD(rls_result, limit);
    FIELD(rls_result, remaining); FIELD(rls_result, reset_ms);
    FIELD(rls_result, retry_after_ms); FIELD(rls_result, delay_ms);
    FIELD(rls_result, window_ms); FIELD(rls_result, rule); FIELD(rls_result, reserved_);
    FIELD(rls_options, size); FIELD(rls_options, busy_timeout_ms);
    FIELD(rls_options, durability); FIELD(rls_options, on_error);
    FIELD(rls_options, read_only); FIELD(rls_options, create);
    FIELD(rls_options, file_mode); FIELD(rls_options, max_key_len); FIELD(rls_options, tool);
    FIELD(rls_usage_query, size); FIELD(rls_usage_query, action);
    FIELD(rls_usage_query, key_substr); FIELD(rls_usage_query, sort);
    FIELD(rls_usage_query, offset); FIELD(rls_usage_query, limit);
    /* what the library itself believes: rls_options_init() records its size */
    rls_options o;
    memset(&o, 0, sizeof o);
    rls_options_init(&o);
    printf("runtime options_size_matches %d\n", o.size == sizeof o);
    printf("runtime version_matches %d\n", rls_version() == RLS_VERSION_HEX &&
           strcmp(rls_version_string(), RLS_VERSION_STRING) == 0);
    printf("runtime version_hex %u\n", rls_version());
    return 0;
}
EOF
if $CC -std=c11 -Wall -Wextra -Werror $SAN -Iinclude "$TMP/layout.c" -o "$TMP/layout" \
        -L"$BUILD" -lrlstore -Wl,-rpath,"$BUILD_ABS" >"$TMP/cc.log" 2>&1 &&
    "$TMP/layout" >"$TMP/layout.txt" 2>"$TMP/run.log"; then
    pass
    grep -qx 'runtime options_size_matches 1' "$TMP/layout.txt" && pass ||
        fail "rls_options_init() records a size other than sizeof(rls_options) of the header"
    hex=$(printf '%d' $(( (major << 16) | (minor << 8) | patch )))
    grep -qx 'runtime version_matches 1' "$TMP/layout.txt" &&
        grep -qx "runtime version_hex $hex" "$TMP/layout.txt" && pass ||
        fail "rls_version()/rls_version_string() differ from the header's $vstring"
    grep -v '^runtime ' "$TMP/layout.txt" >"$TMP/current"
    if [ $record = 1 ]; then
        {
            echo "# ABI baseline of librlstore.so.$major, recorded from $vstring by"
            echo "# sh tests/install/test_abi.sh --record.  See docs/ABI.md."
            echo "soname librlstore.so.$major"
            echo "arch $(uname -m)"
            sed 's/^/symbol /' "$TMP/declared"
            cat "$TMP/current"
        } >"$BASE"
        echo "recorded $BASE"
    fi
    if [ ! -f "$BASE" ]; then
        fail "$BASE is missing; record it with: sh tests/install/test_abi.sh --record"
    elif [ "$(sed -n 's/^soname //p' "$BASE")" != "librlstore.so.$major" ]; then
        fail "$BASE is for $(sed -n 's/^soname //p' "$BASE"), the library is" \
             "librlstore.so.$major: record a new baseline (sh tests/install/test_abi.sh --record)"
    else
        # functions: none may disappear within a major version
        sed -n 's/^symbol //p' "$BASE" | sort >"$TMP/base_syms"
        gone=$(comm -23 "$TMP/base_syms" "$TMP/exported" | tr '\n' ' ')
        [ -z "$gone" ] && pass ||
            fail "functions removed without a SONAME bump (docs/ABI.md): $gone"
        # every recorded number must be unchanged, except the sizes of the
        # two structs that carry their own size (they may grow at the end)
        grep -Ev '^(#|soname |arch |symbol |sizeof rls_options |sizeof rls_usage_query )' "$BASE" >"$TMP/base_nums"
        # Struct layouts were recorded on one architecture; elsewhere only
        # the values are compared.
        if [ "$(sed -n 's/^arch //p' "$BASE")" != "$(uname -m)" ]; then
            echo "note: $BASE was recorded on $(sed -n 's/^arch //p' "$BASE"); comparing values only"
            grep '^value ' "$TMP/base_nums" >"$TMP/base_vals"
            mv "$TMP/base_vals" "$TMP/base_nums"
        fi
        changed=
        while IFS= read -r line; do
            grep -qxF "$line" "$TMP/current" || changed="$changed [$line -> $(grep -F "${line% *} " "$TMP/current" | head -n 1)]"
        done <"$TMP/base_nums"
        [ -z "$changed" ] && pass ||
            fail "ABI numbers changed without a SONAME bump (docs/ABI.md):$changed"
        # an appended error code must be new at the end of the table
        n_base=$(grep -c '^value RLS_E\|^value RLS_OK ' "$BASE")
        n_now=$(grep -c '^value RLS_E\|^value RLS_OK ' "$TMP/current")
        [ "$n_now" -ge "$n_base" ] && pass || fail "error codes were removed ($n_base -> $n_now)"
    fi
else
    fail "cannot build or run the layout probe: $(cat "$TMP/cc.log" "$TMP/run.log" | head -n 3 | tr '\n' ' ')"
fi

# ---- 4. the header on its own --------------------------------------------------
printf '#include "rlstore.h"\nint main(void) { return rls_version() == 0; }\n' >"$TMP/alone.c"
check "rlstore.h compiles alone as C99 -pedantic" \
    $CC -std=c99 -pedantic -Wall -Wextra -Werror -Iinclude -fsyntax-only "$TMP/alone.c"
printf '#include "rlstore_admin.h"\nint main(void) { return rls_rows_count(NULL) != 0; }\n' >"$TMP/admin.c"
check "rlstore_admin.h included first compiles too (it includes rlstore.h)" \
    $CC -std=c99 -pedantic -Wall -Wextra -Werror -Iinclude -fsyntax-only "$TMP/admin.c"
cp "$TMP/alone.c" "$TMP/alone.cc"
CXX=${CXX:-c++}
if command -v "$CXX" >/dev/null 2>&1; then
    check "rlstore.h compiles as C++ (extern \"C\")" \
        "$CXX" -std=c++11 -Wall -Wextra -Werror -Iinclude -fsyntax-only "$TMP/alone.cc"
else
    fail "no C++ compiler ($CXX) to check rlstore.h from C++ (Debian: apt-get install g++)"
fi

finish
