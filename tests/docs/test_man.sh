#!/bin/sh
# tests/docs/test_man.sh - checks of the manual pages in docs/man.
#
#   1. every page docs/man/*.[1-8] renders with groff -man -Tutf8 -ww
#      without a single warning (one test per page; a missing groff is a
#      failed test, never a silent skip);
#   2. the EXAMPLES file of rlstore.yaml(5) - the text between the
#      '.\" BEGIN EXAMPLE' and '.\" END EXAMPLE' comments - is what a
#      reader sees, loads through rls_rules_apply() on a temporary
#      database, and behaves as the prose after it says;
#   3. every name in the loader's field and value tables (core/config*.c)
#      is documented in rlstore.yaml(5), so the page cannot drift from the
#      code.
#
# Needs groff (Debian: groff-base), a C compiler and the shared library
# ($BUILD/librlstore.so, BUILD defaults to build; built with make if
# missing).  Prints one line per failure and ends with cmocka-style
# "[  PASSED  ] N test(s)." and, on failure, "[  FAILED  ] M test(s)";
# exits non-zero if anything failed.  Run from anywhere.

cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh   # pass, fail, fail_lines, finish; BUILD, BUILD_ABS
CC=${CC:-cc}
PAGE=docs/man/rlstore.yaml.5
tmp=$SCRATCH

have_groff=0
command -v groff >/dev/null 2>&1 && have_groff=1

# ---- 1. every page renders without warnings -------------------------------
pages=$(ls docs/man/*.[1-8] 2>/dev/null)
if [ -z "$pages" ]; then
    fail "no manual pages found in docs/man/*.[1-8]"
elif [ "$have_groff" = 0 ]; then
    fail "groff is not installed, so no page could be rendered; install it" \
         "(Debian/Ubuntu: apt-get install groff-base)"
else
    for p in $pages; do
        groff -man -Tutf8 -ww -z "$p" >"$tmp/warn" 2>&1
        rc=$?
        if [ "$rc" != 0 ] && [ ! -s "$tmp/warn" ]; then
            echo "groff exited with status $rc" >"$tmp/warn"
        fi
        if [ -s "$tmp/warn" ]; then
            fail_lines "render $p" "$tmp/warn"
        else
            pass
        fi
    done
fi

# ---- 2. the EXAMPLES file ----------------------------------------------------
# The source between the markers, without .EX/.EE, with the roff escapes
# used in it undone.  Any other escape would make the extraction unfaithful.
yaml=$tmp/example.yaml
if [ ! -f "$PAGE" ]; then
    fail "$PAGE does not exist"
else
    sed -n '/^\.\\" BEGIN EXAMPLE/,/^\.\\" END EXAMPLE/p' "$PAGE" |
        sed -e '1d' -e '$d' | grep -v '^\.E[XE]$' >"$tmp/example.roff"
    sed -e 's/\\-/-/g' -e 's/\\&//g' "$tmp/example.roff" >"$yaml"
    if ! grep -q '^version: 1$' "$yaml"; then
        fail "$PAGE: no EXAMPLES file between '.\\\" BEGIN EXAMPLE' and" \
             "'.\\\" END EXAMPLE' (or it lacks 'version: 1')"
    elif grep -n '[\]' "$yaml" >"$tmp/esc"; then
        fail_lines "$PAGE: EXAMPLES uses a roff escape the test cannot undo" \
                   "$tmp/esc"
    elif grep -n '^[.'"'"']' "$yaml" >"$tmp/esc"; then
        fail_lines "$PAGE: EXAMPLES line would be read as a roff request" \
                   "$tmp/esc"
    else
        pass
    fi
fi

# What the reader sees: the rendered example must be the extracted file.
if [ -s "$yaml" ] && [ "$have_groff" = 1 ]; then
    groff -man -Tutf8 -P-c -P-b -P-u "$PAGE" 2>/dev/null >"$tmp/page.txt"
    n=$(wc -l <"$yaml")
    # the indentation of the rendered "version: 1" line after EXAMPLES
    ind=$(awk '/^EXAMPLES/ { on = 1 }
               on && /^ *version: 1$/ { match($0, /^ */); print RLENGTH; exit }' \
              "$tmp/page.txt")
    if [ -z "$ind" ]; then
        fail "rendered $PAGE: the EXAMPLES file is not shown"
    else
        awk -v ind="$ind" -v n="$n" '
            /^EXAMPLES/ { on = 1 }
            on && !go && /^ *version: 1$/ { go = 1 }
            go && k < n { print substr($0, ind + 1); k++ }' \
            "$tmp/page.txt" >"$tmp/shown.yaml"
        if diff "$yaml" "$tmp/shown.yaml" >"$tmp/diff"; then
            pass
        else
            fail_lines "rendered EXAMPLES differs from its source" "$tmp/diff"
        fi
    fi
fi

# The library and a small checker that applies the file and verifies what
# the prose after the example promises.
lib_ok=1
if [ ! -f "$BUILD/librlstore.so" ]; then
    echo "note: $BUILD/librlstore.so missing; running make $BUILD/librlstore.so"
    make -s BUILD="$BUILD" "$BUILD/librlstore.so" >"$tmp/make.log" 2>&1 || lib_ok=0
fi
if [ "$lib_ok" = 0 ] || [ ! -f "$BUILD/librlstore.so" ]; then
    tail -n 5 "$tmp/make.log" 2>/dev/null >"$tmp/why"
    [ -s "$tmp/why" ] || echo "no $BUILD/librlstore.so" >"$tmp/why"
    fail_lines "cannot build $BUILD/librlstore.so to load the example" "$tmp/why"
elif [ -s "$yaml" ]; then
    cat >"$tmp/example_check.c" <<'EOF'
/* Applies the EXAMPLES file of rlstore.yaml(5) and checks its prose. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rlstore.h"

static rls_db *db;
static int bad;
static int nerr;            /* checks that failed since the last ok() */
static char firsterr[300];  /* the first of them */

/* One line per claim; failed checks are summarised in it. */
static void ok(int cond, const char *what, const char *detail)
{
    if (nerr) {
        printf("not ok %s: %s; %d check(s) failed, first: %s\n", what, detail,
               nerr, firsterr);
        cond = 0;
    } else if (cond) {
        printf("ok %s\n", what);
    } else {
        printf("not ok %s: %s\n", what, detail);
    }
    bad |= !cond;
    nerr = 0;
}

static rls_result check(const char *action, const char *key, int64_t t)
{
    rls_result r;
    int rc = rls_check_at(db, action, key, 1, t, &r);
    if (rc != RLS_OK) {
        if (nerr++ == 0)
            snprintf(firsterr, sizeof firsterr, "%s %s: %s: %s", action, key,
                     rls_errname(rc), rls_errmsg(db));
        memset(&r, 0, sizeof r);
    }
    return r;
}

/* How many of n checks at the same instant are admitted. */
static int admitted(const char *action, const char *key, int n, int64_t t)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += check(action, key, t).allowed;
    return k;
}

int main(int argc, char **argv)
{
    static char yaml[1 << 20];
    char path[4096], msg[600];
    int64_t version = 0;
    const int64_t T0 = 1795428000000LL;  /* Mon 2026-11-23 10:00:00 UTC */
    const int64_t MIN = 60000, Y2027 = 1798848000000LL; /* 2027-01-02 */
    FILE *f;
    size_t n;
    int rc;

    if (argc != 3)
        return 2;
    f = fopen(argv[1], "rb");
    if (!f)
        return 2;
    n = fread(yaml, 1, sizeof yaml, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/example.db", argv[2]);
    if ((rc = rls_open(&db, path, NULL)) != RLS_OK) {
        printf("not ok open %s: %s\n", path, rls_errmsg(NULL));
        return 1;
    }
    rc = rls_rules_apply_at(db, yaml, n, "EXAMPLES", NULL, T0 - 1000, &version);
    snprintf(msg, sizeof msg, "%s: %s", rls_errname(rc), rls_errmsg(db));
    ok(rc == RLS_OK && version >= 1, "the EXAMPLES file applies", msg);
    if (rc != RLS_OK) {
        rls_close(db);
        return 1;
    }

    /* A /64 is one client; a fourth sign-up in 10 minutes is denied by
     * 'burst', without a penalty. */
    int a = check("signup", "2001:db8:7:1::5", T0).allowed;
    a += check("signup", "2001:db8:7:1::6", T0 + 1000).allowed;
    a += check("signup", "2001:db8:7:1::7", T0 + 2000).allowed;
    rls_result r = check("signup", "2001:db8:7:1::99", T0 + 3000);
    snprintf(msg, sizeof msg, "admitted %d of 3, then allowed=%d rule=%s "
             "reason=%s", a, r.allowed, r.rule, rls_reason_name(r.reason));
    ok(a == 3 && !r.allowed && strcmp(r.rule, "burst") == 0 &&
       r.reason == RLS_REASON_LIMIT,
       "a fourth sign-up from one /64 within 10 minutes is denied", msg);
    r = check("signup", "2001:db8:7:1::5", T0 + 10 * MIN + 1);
    snprintf(msg, sizeof msg, "allowed=%d reason=%s", r.allowed,
             rls_reason_name(r.reason));
    ok(r.allowed, "that denial imposes no penalty", msg);

    /* The 21st sign-up of a day is denied and blocks for an hour. */
    a = 0;
    for (int i = 0; i < 20; i++)
        a += check("signup", "203.0.113.7", T0 + i * 4 * MIN).allowed;
    int64_t t21 = T0 + 80 * MIN;
    r = check("signup", "203.0.113.7", t21);
    rls_result b1 = check("signup", "203.0.113.7", t21 + 59 * MIN);
    rls_result b2 = check("signup", "203.0.113.7", t21 + 61 * MIN);
    snprintf(msg, sizeof msg, "admitted %d of 20; 21st allowed=%d rule=%s "
             "retry=%lld; +59m reason=%s; +61m reason=%s", a, r.allowed,
             r.rule, (long long)r.retry_after_ms, rls_reason_name(b1.reason),
             rls_reason_name(b2.reason));
    ok(a == 20 && !r.allowed && strcmp(r.rule, "daily") == 0 &&
       r.retry_after_ms >= 60 * MIN && b1.reason == RLS_REASON_BLOCKED &&
       b2.reason != RLS_REASON_BLOCKED,
       "a sign-up beyond the 20th of a day blocks the address for an hour",
       msg);

    /* Staff and banned networks. */
    a = admitted("signup", "10.1.2.3", 30, T0);
    r = check("signup", "198.51.100.7", T0);
    snprintf(msg, sizeof msg, "staff admitted %d of 30; banned reason=%s", a,
             rls_reason_name(r.reason));
    ok(a == 30 && r.reason == RLS_REASON_BLOCKED,
       "10.0.0.0/8 is unlimited and 198.51.100.0/24 blocked for sign-ups",
       msg);

    /* API plans: free 20 at once, pro 200 at once, the trial until 2027. */
    int fr = admitted("api", "user:1", 21, T0);
    int pro = admitted("api", "user:pro:9", 201, T0);
    int trial = admitted("api", "user:4711", 201, T0);
    int later = admitted("api", "user:4711", 201, Y2027);
    snprintf(msg, sizeof msg, "free %d of 21, pro %d of 201, trial %d of "
             "201, trial in 2027 %d of 201", fr, pro, trial, later);
    ok(fr == 20 && pro == 200 && trial == 200 && later == 20,
       "API bursts: free 20, pro and the trial until 2027 200", msg);

    /* Known bug (BUGS in the page): a check that charges a durability:
     * full limit fails when the handle was opened with the default
     * durability.  Reported so the page's note cannot outlive the bug. */
    static const char probe[] =
        "version: 1\n"
        "actions: { p: { limits: [ { name: r, limit: 5, window: 1m, "
        "durability: full } ] } }\n";
    rc = rls_rules_apply_at(db, probe, sizeof probe - 1, "probe", NULL, T0,
                            &version);
    if (rc == RLS_OK) {
        rls_result pr;
        rc = rls_check_at(db, "p", "k", 1, T0, &pr);
        printf("durability_full %s\n", rc == RLS_OK ? "works" : "fails");
    } else {
        printf("not ok the durability probe applies: %s\n", rls_errmsg(db));
        bad = 1;
    }
    rls_close(db);
    return bad;
}
EOF
    # a sanitised library (make SAN=1) needs a sanitised program
    san=
    ldd "$BUILD/librlstore.so" 2>/dev/null | grep -q libasan &&
        san="-fsanitize=address,undefined"
    if ! $CC -std=c11 -D_DEFAULT_SOURCE $san -Iinclude "$tmp/example_check.c" \
            -o "$tmp/example_check" -L"$BUILD" -lrlstore \
            -Wl,-rpath,"$BUILD_ABS" >"$tmp/cc.log" 2>&1; then
        fail_lines "cannot compile the example checker" "$tmp/cc.log"
    else
        "$tmp/example_check" "$yaml" "$tmp" >"$tmp/run.log" 2>&1
        rc=$?
        while IFS= read -r l; do
            case $l in
            "ok "*) pass ;;
            "not ok "*) fail "EXAMPLES: ${l#not ok }" ;;
            "durability_full "*)
                # the BUGS note of the page must match the library
                noted=0
                grep -q '^\.\\" BUG durability-full' "$PAGE" && noted=1
                if [ "${l#durability_full }" = works ] && [ "$noted" = 1 ]; then
                    fail "$PAGE: checks charging a durability: full limit no" \
                         "longer fail with $BUILD/librlstore.so; if the bug is" \
                         "fixed, remove its note from BUGS (marked" \
                         "'.\\\" BUG durability-full')"
                elif [ "${l#durability_full }" = fails ] && [ "$noted" = 0 ]; then
                    fail "$PAGE: checks charging a durability: full limit fail" \
                         "(RLS_ESTORAGE) but BUGS does not say so"
                else
                    pass
                fi ;;
            *) fail "EXAMPLES checker: $l" ;;
            esac
        done <"$tmp/run.log"
        if [ "$rc" != 0 ] && ! grep -q '^not ok' "$tmp/run.log"; then
            fail "EXAMPLES checker exited with status $rc"
        fi
    fi
fi

# ---- 3. the page names everything the loader accepts -------------------------
# Prints the strings of array `arr` (declared as "arr[] = {" up to "};") that
# follows the first line of file matching regex `start`.
table() {
    awk -v start="$2" -v decl="$3[] = {" '
        !on && $0 ~ start { on = 1 }
        on && !grab && index($0, decl) { grab = 1 }
        grab { print }
        grab && /};/ { exit }' "$1" | grep -o '"[^"]*"' | tr -d '"'
}

# check_table WHAT MIN FILE START ARRAY MODE: every name of the table must
# be in the page: MODE "limit" = as an entry (".BI name:", ".BR name:" or
# "\fBname:") of the LIMITS section, "field" = "name:" somewhere, "key" =
# a ".B name" line, "word" = the word somewhere.  A "\%" (no hyphenation)
# may precede the name.
sed -n '/^\.SH LIMITS/,/^\.SH /p' "$PAGE" 2>/dev/null >"$tmp/limits.roff"
check_table() {
    what=$1 min=$2 file=$3 start=$4 arr=$5 mode=$6
    table "$file" "$start" "$arr" >"$tmp/names"
    count=$(grep -c . "$tmp/names")
    if [ "$count" -lt "$min" ]; then
        fail "$what: found $count names in $file ($arr) where at least $min" \
             "were expected; has the table moved?"
        return
    fi
    : >"$tmp/missing"
    while IFS= read -r name; do
        case $mode in
        limit) grep -Eq "^(\\.B[IR]? (\\\\%)?$name:|\\\\fB(\\\\%)?$name:)" "$tmp/limits.roff" ;;
        field) grep -Fq "$name:" "$PAGE" ;;
        key) grep -Eq "^\\.B (\\\\%)?$name\$" "$PAGE" ;;
        word) grep -qw -- "$name" "$PAGE" ;;
        esac || echo "$name" >>"$tmp/missing"
    done <"$tmp/names"
    if [ -s "$tmp/missing" ]; then
        sed "s|.*|'&' (from $file) is not documented in $PAGE|" "$tmp/missing" >"$tmp/missing.why"
        fail_lines "$what" "$tmp/missing.why"
    else
        pass
    fi
}

if [ -f "$PAGE" ]; then
    check_table "limit fields" 12 core/config_limit.c 'limit_fields\[\] = \{' limit_fields limit
    check_table "algorithms" 6 core/config_limit.c 'algo_names\[\] = \{' algo_names word
    check_table "anchor values" 2 core/config_limit.c 'anchor_names\[\] = \{' anchor_names word
    check_table "mode values" 2 core/config_limit.c 'mode_names\[\] = \{' mode_names word
    check_table "durability values" 3 core/config_limit.c 'durability_names\[\] = \{' durability_names word
    check_table "top-level keys" 5 core/config.c '^static void walk_root\(' fields key
    check_table "defaults fields" 3 core/config.c '^static void walk_defaults\(' fields field
    check_table "tier fields" 2 core/config.c '^static void walk_tier\(' fields field
    check_table "action fields" 6 core/config.c '^static void walk_action\(' fields field
    check_table "key kinds" 3 core/config.c '^static void walk_action\(' kinds word
    check_table "on_error values" 2 core/config.c 'on_error_names\[\] = \{' on_error_names word
    check_table "assignment fields" 4 core/config_assign.c '^static int walk_one\(' fields field
fi

finish
