#!/bin/sh
# tests/lint.sh [ROOT] - the house rules that grep can check
# (`make lint`; tests/meta/test_lint.sh runs it on made-up trees).  Fast,
# no network, no build.  One line per finding, "lint: FILE:LINE: what";
# exits 1 when there is any.
#  1. Layering: core/ names no SQLite (sqlite3_, <sqlite3.h>) and no libpq
#     (PQxxx, <libpq-fe.h>); the tools (cli/, tui/, auth/) and common/ include no
#     header of core/ or storage/, of the other tool's folder, nor
#     <sqlite3.h> or <libpq-fe.h>: a tool includes its own folder's headers,
#     common/ and include/ (rlstore.h) only, common/ the last two.
#     The backends (storage/backend.h): SQLite (sqlite3_, SQLITE_,
#     <sqlite3.h>, the handle's lite part, "sqlite/..." headers) only in
#     storage/sqlite/, libpq (PQxxx, PGresult, PGconn, <libpq-fe.h>, the
#     handle's pg part, "pg/..." headers) only in storage/pg/; the rest of
#     storage calls the backend's operations.
#  2. No .c or .h file over 800 lines, except those in tests/lint-long.txt:
#     "PATH LINES", a file that may keep at most LINES lines until it is
#     split.  The list only shrinks: an entry whose file is gone or back
#     under the bound is a finding too (remove the entry), as is a listed
#     file grown past its LINES.
#  3. Internal names: a function of core/ or storage/ that is not static
#     carries the prefix rls__ (internal) or rls_ (public, and then it is
#     declared in include/rlstore.h), so that librlstore.a exports no
#     name an application could collide with.
#  4. Shell suites count through tests/suite_lib.sh: no other .sh file under
#     tests/ defines a counting function of its own (pass, fail, ok, bad,
#     skip, report, check, finish, summary, ...), adds to the counters
#     (passed=$((...)), ...) or prints a summary line ("[  PASSED  ] ...").
#     Exempt: the harness, the runners that add up other suites' lines
#     (run_suites.sh, reliability/stress.sh), the tests of the runner and
#     of this lint (their made-up suites do all this on purpose).
# ROOT defaults to the repository this script is in.
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
MAX_LINES=800
ALLOW=tests/lint-long.txt
out=$(mktemp "${TMPDIR:-/tmp}/lint.XXXXXX") || exit 2
trap 'rm -f "$out"' EXIT

find_() {  # find_ DIR...: the .c and .h files under the existing DIRs
    for d in "$@"; do [ -d "$d" ] && find "$d" -type f \( -name '*.c' -o -name '*.h' \); done | sort
}
finding() { echo "lint: $*" >>"$out"; }

# ---- 1. layering -------------------------------------------------------------
core_files=$(find_ core)
if [ -n "$core_files" ]; then
    # shellcheck disable=SC2086
    grep -nE 'sqlite3_|<sqlite3\.h>' $core_files | while IFS=: read -r f n _; do
        finding "$f:$n: SQLite in core/ (core knows no backend)"; done
    # shellcheck disable=SC2086
    grep -nE '(^|[^A-Za-z0-9_])PQ[a-zA-Z]+|<libpq-fe\.h>' $core_files | while IFS=: read -r f n _; do
        finding "$f:$n: libpq in core/ (core knows no backend)"; done
fi

# where_is NAME: the folders (of the library and the tools) holding NAME
where_is() {
    for d in core storage cli tui auth common include; do
        [ -f "$d/$1" ] && printf '%s/ ' "$d"
    done | sed 's/ $//'
}
for f in $(find_ cli tui auth common); do
    dir=${f%%/*}
    case $dir in common) allowed="common include" ;; *) allowed="$dir common include" ;; esac
    grep -n '^[[:space:]]*#[[:space:]]*include' "$f" |
        sed -n 's/^\([0-9]*\):[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\2 \1/p' |
        while read -r inc n; do
        name=$(printf '%s' "$inc" | tr -d '<>"')
        case $inc in
        '<sqlite3.h>' | '<libpq-fe.h>')
            finding "$f:$n: includes $inc (the tools use rlstore.h only)"
            continue ;;
        '<'*) continue ;;  # a system header
        esac
        # the folder the header is found in: the file's own folder first
        # (or the path it names), then -Icommon, -Iinclude
        case $name in
        */*) got=$(realpath -m --relative-to=. "$(dirname "$f")/$name" 2>/dev/null)
             got=${got%%/*}
             [ -f "$(dirname "$f")/$name" ] || got="" ;;
        *) got=""
           for d in $allowed; do [ -f "$d/$name" ] && { got=$d; break; }; done ;;
        esac
        if [ -n "$got" ]; then
            case " $allowed " in *" $got "*) continue ;; esac
            finding "$f:$n: includes \"$name\" of $got/ (allowed: $allowed)"
        else
            w=$(where_is "$(basename "$name")")
            finding "$f:$n: includes \"$name\", found in none of $allowed${w:+ (it is in $w)}"
        fi
    done
done

# The backends: each engine only in its folder of storage/.
SQLITE_RE='sqlite3_|SQLITE_|<sqlite3\.h>|db->lite|->lite->|#[[:space:]]*include[[:space:]]*"sqlite/'
PQ_RE='(^|[^A-Za-z0-9_])PQ[a-zA-Z]+|PGresult|PGconn|<libpq-fe\.h>|db->pg([^A-Za-z0-9_]|$)|#[[:space:]]*include[[:space:]]*"pg/'
for f in $(find_ storage); do
    case $f in
    storage/sqlite/*) ;;
    *) grep -nE "$SQLITE_RE" "$f" | while IFS=: read -r n _; do
           finding "$f:$n: SQLite outside storage/sqlite/ (call the backend's operations, storage/backend.h)"
       done ;;
    esac
    case $f in
    storage/pg/*) ;;
    *) grep -nE "$PQ_RE" "$f" | while IFS=: read -r n _; do
           finding "$f:$n: libpq outside storage/pg/ (call the backend's operations, storage/backend.h)"
       done ;;
    esac
done

# ---- 2. file length ----------------------------------------------------------
# every .c and .h of the tree but the build directories
all_files=$(find . \( -path ./.git -o -path ./build -o -path './build-*' \) -prune -o \
    -type f \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
allow() {  # allow PATH: the LINES of PATH's entry, or nothing
    [ -f "$ALLOW" ] && sed 's/#.*//' "$ALLOW" | awk -v p="$1" '$1 == p { print $2 }'
}
for f in $all_files; do
    lines=$(wc -l <"$f")
    [ "$lines" -gt $MAX_LINES ] || continue
    cap=$(allow "$f")
    if [ -z "$cap" ]; then
        finding "$f:$lines: $lines lines, over $MAX_LINES (split it by responsibility)"
    elif [ "$lines" -gt "$cap" ]; then
        finding "$f:$lines: $lines lines, over $MAX_LINES and grown past the $cap of $ALLOW"
    fi
done
if [ -f "$ALLOW" ]; then
    awk '{ sub(/#.*/, "") } NF { print NR, $1 }' "$ALLOW" | while read -r n f; do
        if [ ! -f "$f" ]; then
            finding "$ALLOW:$n: $f is gone: remove its entry"
        elif [ "$(wc -l <"$f")" -le $MAX_LINES ]; then
            finding "$ALLOW:$n: $f has $(wc -l <"$f") lines now: remove its entry"
        fi
    done
fi

# ---- 3. internal names -------------------------------------------------------
# A definition is a line in column 0 that is not static, names a function
# (an identifier and "(") and is followed, after its parameter lines, by a
# "{" line in column 0 (the house style; a return type alone on the line
# before the name counts with it).
unprefixed() {
    for f in $(find_ core storage); do
        case $f in *.c) ;; *) continue ;; esac
        awk -v file="$f" '
        /^[A-Za-z_]/ {
            if (decl != "" && decl !~ /\(/ && decl !~ /[;=}]/) { decl = decl " " $0 }
            else { decl = $0; at = FNR }
            next
        }
        /^\{/ {
            if (decl ~ /\(/ && decl !~ /^(static|typedef|struct|union|enum)[ \t]/ && decl !~ /=/) {
                s = decl; sub(/\(.*/, "", s); sub(/.*[^A-Za-z0-9_]/, "", s)
                if (s != "") print file ":" at ": " s
            }
            decl = ""; next
        }
        /^[ \t]/ { if (decl != "") decl = decl " " $0; next }
        { decl = "" }
        ' "$f"
    done | while IFS=: read -r f n name; do
        name=${name# }
        case $name in
        rls__*) ;;
        rls_*) cat include/rlstore.h include/rlstore_admin.h 2>/dev/null | grep -qw "$name" ||
            echo "$f:$n: $name has the public prefix but is not in include/rlstore.h" ;;
        *) echo "$f:$n: $name is not static and has no prefix rls__" ;;
        esac
    done
}
unprefixed | while IFS= read -r line; do finding "$line"; done

# ---- 4. one harness of the shell suites --------------------------------------
OWN_COUNT="tests/suite_lib.sh tests/run_suites.sh tests/reliability/stress.sh
    tests/meta/test_run_suites.sh tests/meta/test_lint.sh"
if [ -d tests ]; then
    # lines of code only: a comment may quote what the harness prints
    for f in $(find tests -type f -name '*.sh' | sort); do
        case " $(echo $OWN_COUNT) " in *" $f "*) continue ;; esac
        grep -nE '^[[:space:]]*(pass|fail|ok|bad|skip|skip_all|fail_lines|fail_quiet|report|check|setup_fail|finish|summary)[[:space:]]*\(\)' "$f" |
            while IFS=: read -r n _; do
            finding "$f:$n: defines a counting function of its own (the harness is tests/suite_lib.sh)"; done
        grep -nE '(^|[^A-Za-z0-9_])(pass|fail|passed|failed|skipped)=\$\(\(' "$f" | grep -vE '^[0-9]+:[[:space:]]*#' | while IFS=: read -r n _; do
            finding "$f:$n: counts tests on its own (the harness is tests/suite_lib.sh)"; done
        grep -nE '\[  (PASSED  |FAILED  |SKIPPED )\] ' "$f" | grep -vE '^[0-9]+:[[:space:]]*#' | while IFS=: read -r n _; do
            finding "$f:$n: prints a summary line of its own (the harness is tests/suite_lib.sh)"; done
    done
fi

nfind=$(grep -c . "$out")
cat "$out"
if [ "$nfind" -gt 0 ]; then
    echo "lint: $nfind finding(s)"
    exit 1
fi
echo "lint: ok"
