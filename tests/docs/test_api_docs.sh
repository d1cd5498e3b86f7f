#!/bin/sh
# tests/docs/test_api_docs.sh - the section-3 manual pages against the code,
# so they cannot drift apart:
#
#   1. every RLS_EXTERN function of include/rlstore.h is named in the NAME
#      line of exactly one docs/man/*.3 page, and that page's SYNOPSIS
#      declares it with the same prototype; no page names a function that
#      does not exist;
#   2. every page has NAME, SYNOPSIS, DESCRIPTION, RETURN VALUE, ERRORS,
#      EXAMPLE and SEE ALSO, mentions each of its functions in DESCRIPTION,
#      names only error codes that exist, refers only to pages that exist,
#      and says the version of the Makefile in its .TH line;
#   3. rls_strerror(3) lists every error code with its number; rls_check(3)
#      every field of rls_result and every reason; rls_open(3) every field
#      of rls_options; rls_admin(3) every field of rls_usage_query and every
#      sort order;
#   4. the EXAMPLE of every page compiles (-Wall -Wextra -Werror), linked
#      against the library;
#   5. every column of every listing, as the library returns it, is named
#      on the page that documents the listing;
#   6. the BUGS note of rls_reserve(3) (marked '.\" BUG reservation-id-reuse')
#      is there exactly as long as the library hands out an id again.
#
# Needs python3, a C compiler and $BUILD/librlstore.so (built if missing).
# One line per failure; cmocka-style summary; non-zero exit on failure.

cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh   # pass, fail, setup_fail, finish; BUILD, BUILD_ABS
CC=${CC:-cc}
tmp=$SCRATCH

tally() {  # reads "PASS ..." / "FAIL ..." lines
    while IFS= read -r l; do
        case $l in
        PASS*) pass ;;
        FAIL*) fail "${l#FAIL }" ;;
        *) printf '%s\n' "$l" ;;
        esac
    done
}

if ! command -v python3 >/dev/null 2>&1; then
    setup_fail "python3 is not installed (Debian: apt-get install python3)"
fi

san=
if [ ! -f "$BUILD/librlstore.so" ]; then
    echo "note: $BUILD/librlstore.so missing; running make $BUILD/librlstore.so"
    make -s BUILD="$BUILD" "$BUILD/librlstore.so" >"$tmp/make.log" 2>&1
fi
ldd "$BUILD/librlstore.so" 2>/dev/null | grep -q libasan && san="-fsanitize=address,undefined"

# ---- 1-4: parsing and compiling (python drives the compiler) -------------------
python3 - "$tmp" "$CC" "$san" "$BUILD_ABS" >"$tmp/py.out" 2>&1 <<'PY'
import glob, os, re, subprocess, sys

tmp, cc, san, build = sys.argv[1:5]
out = []
def ok(name): out.append("PASS " + name)
def bad(msg): out.append("FAIL " + msg)
def check(cond, name, msg):
    ok(name) if cond else bad(msg)

def norm(proto):
    """A prototype in one canonical spelling."""
    p = re.sub(r"\s+", " ", proto).strip().rstrip(";").strip()
    p = re.sub(r"\s*([(),*])\s*", r"\1", p)
    p = p.replace(",", ", ")
    return p

# ---- the header
# rlstore.h and rlstore_admin.h, which it includes
hdr = "".join(open(h, encoding="utf-8").read() for h in ("include/rlstore.h", "include/rlstore_admin.h"))
code, pp = [], False
for line in hdr.split("\n"):
    if re.match(r"\s*#", line):
        pp = True
    if not pp:
        code.append(line)
    if not line.rstrip().endswith("\\"):
        pp = False
text = re.sub(r"/\*.*?\*/", " ", " ".join(code), flags=re.S)
protos = {}
for decl in text.split(";"):
    if "RLS_EXTERN" not in decl:
        continue
    decl = decl[decl.index("RLS_EXTERN") + len("RLS_EXTERN"):]
    m = re.search(r"(rls_\w+)\s*\(", decl)
    protos[m.group(1)] = norm(decl)
check(len(protos) >= 50, "header parsed", "parsed only %d functions from rlstore.h" % len(protos))

errnames = re.findall(r"XX\((\w+),", hdr[hdr.index("#define RLS_ERRNO_MAP"):])
def struct_fields(name):
    m = re.search(r"typedef struct %s \{(.*?)\} %s;" % (name, name), hdr, re.S)
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return re.findall(r"(\w+)\s*(?:\[[^\]]*\])?\s*;", body)

# ---- the pages
def unescape(s):
    s = re.sub(r"\\f[BIRP]|\\f\(..|\\&|\\%|\\c$", "", s)
    for a, b in (("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\(lq", '"'),
                 ("\\(rq", '"'), ("\\(bu", "*"), ("\\e", "\\"), ("\\ ", " ")):
        s = s.replace(a, b)
    return s

def text_of(lines):
    """Plain text of roff lines: requests dropped except the font macros."""
    res = []
    for l in lines:
        if l.startswith('.\\"'):
            continue
        m = re.match(r"\.(B|I|BR|IR|RB|RI|BI|IB)\s+(.*)", l)
        if m:
            res.append(unescape(m.group(2).replace('"', "")).replace(" ", "")
                       if m.group(1) in ("BR", "IR", "RB", "RI", "BI", "IB")
                       else unescape(m.group(2).strip('"')))
        elif l.startswith("."):
            continue
        else:
            res.append(unescape(l))
    return "\n".join(res)

pages = {}
for path in sorted(glob.glob("docs/man/*.3")):
    lines = open(path, encoding="utf-8").read().split("\n")
    secs, cur = {}, None
    for l in lines:
        m = re.match(r'\.SH\s+"?([^"]*)"?$', l)
        if m:
            cur = m.group(1)
            secs[cur] = []
        elif cur:
            secs[cur].append(l)
    pages[path] = (lines, secs)

version = re.search(r"^VERSION\s*:=\s*(\S+)", open("Makefile").read(), re.M).group(1)
documented = {}
for path, (lines, secs) in pages.items():
    base = os.path.basename(path)[:-2]
    name_line = unescape(" ".join(l for l in secs.get("NAME", []) if not l.startswith(".")))
    names = [n.strip() for n in name_line.split(" - ")[0].split(",")]
    need = ["NAME", "SYNOPSIS", "DESCRIPTION", "RETURN VALUE", "ERRORS", "EXAMPLE", "SEE ALSO"]
    missing = [s for s in need if s not in secs]
    check(not missing, base + " sections", "%s lacks the section(s) %s" % (path, ", ".join(missing)))
    th = next((l for l in lines if l.startswith(".TH ")), "")
    check('"rlstore %s"' % version in th, base + " version",
          "%s: .TH says '%s', the Makefile's VERSION is %s" % (path, th, version))
    if base == "librlstore":
        continue
    syn_lines, pp = [], False
    for l in secs.get("SYNOPSIS", []):
        if l.startswith("."):
            continue
        l = unescape(l)
        if l.startswith("#"):
            pp = True
        if not pp:
            syn_lines.append(l)
        if not l.rstrip().endswith("\\"):
            pp = False
    synopsis = "\n".join(syn_lines)
    syn_protos = {}
    for decl in synopsis.split(";"):
        m = re.search(r"(rls_\w+)\s*\(", decl)
        if m:
            syn_protos[m.group(1)] = norm(decl)
    desc = text_of(secs.get("DESCRIPTION", []))
    for n in names:
        documented.setdefault(n, []).append(path)
        if n not in protos:
            bad("%s names '%s', which rlstore.h does not declare" % (path, n))
            continue
        if n not in syn_protos:
            bad("%s: SYNOPSIS does not declare %s" % (path, n))
        elif syn_protos[n] != protos[n]:
            bad("%s: SYNOPSIS declares '%s'; rlstore.h has '%s'" % (path, syn_protos[n], protos[n]))
        else:
            ok(n + " synopsis")
        check(n + "()" in desc or n + "(" in desc, n + " described",
              "%s: DESCRIPTION never mentions %s()" % (path, n))
    extra = sorted(set(syn_protos) - set(names))
    check(not extra, base + " synopsis names", "%s: SYNOPSIS declares %s, not in NAME" % (path, extra))
    # error codes named on the page exist
    for e in sorted(set(re.findall(r"RLS_(E[A-Z]+)\b", "\n".join(lines)))):
        if e not in errnames:
            bad("%s names RLS_%s, which is not an error code" % (path, e))
    # references to other pages exist
    for ref in sorted(set(re.findall(r"^\.BR (\w[\w.]*) \((\d)\)", "\n".join(lines), re.M))):
        page, sec = ref
        if page.startswith("rls_") or page == "librlstore":
            target = "docs/man/%s.%s" % (page, sec)
            if not os.path.exists(target) and page not in protos:
                bad("%s refers to %s(%s), which is neither a page nor a function" % (path, page, sec))

for n in sorted(protos):
    where = documented.get(n, [])
    if len(where) == 1:
        ok(n + " documented")
    elif not where:
        bad("%s (RLS_EXTERN in rlstore.h) is documented in no section-3 page" % n)
    else:
        bad("%s is named by several pages: %s" % (n, ", ".join(where)))

# ---- tables of the header in their pages
def page_text(name):
    lines, secs = pages["docs/man/%s.3" % name]
    return "\n".join(lines)
strerr = page_text("rls_strerror")
for i, e in enumerate(errnames):
    check(re.search(r"RLS_%s \" \(%d\)\"" % (e, i), strerr) is not None, "errors " + e,
          "rls_strerror.3 does not list RLS_%s with its number (%d)" % (e, i))
def words_in(page, words, what):
    t = page_text(page)
    miss = [w for w in words if not re.search(r"(^|[^\w])%s([^\w]|$)" % re.escape(w), t)]
    check(not miss, "%s in %s" % (what, page), "%s.3 does not mention %s %s" % (page, what, miss))
words_in("rls_check", [f for f in struct_fields("rls_result")], "rls_result fields")
words_in("rls_check", re.findall(r"(RLS_REASON_\w+)\s*=", hdr), "reasons")
words_in("rls_open", struct_fields("rls_options"), "rls_options fields")
words_in("rls_admin", struct_fields("rls_usage_query"), "rls_usage_query fields")
words_in("rls_admin", re.findall(r"(RLS_SORT_\w+)\s*=", hdr), "sort orders")

# ---- every EXAMPLE compiles and links
for path, (lines, secs) in pages.items():
    base = os.path.basename(path)[:-2]
    ex, on = [], False
    for l in secs.get("EXAMPLE", []):
        if l.startswith(".EX"):
            on = True
        elif l.startswith(".EE"):
            break
        elif on:
            ex.append(unescape(l))
    if not ex:
        bad("%s: EXAMPLE has no .EX/.EE code" % path)
        continue
    src = os.path.join(tmp, base + "_example.c")
    open(src, "w").write("\n".join(ex) + "\n")
    has_main = re.search(r"\bint main\(", "\n".join(ex)) is not None
    args = [cc, "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror",
            "-Iinclude"] + san.split() + [src]
    if has_main:
        args += ["-o", src[:-2], "-L" + build, "-lrlstore", "-Wl,-rpath," + build]
    else:
        args += ["-c", "-o", src[:-2] + ".o"]
    r = subprocess.run(args, capture_output=True, text=True)
    msg = (r.stderr.strip().split("\n") or [""])[0]
    check(r.returncode == 0, base + " example", "%s: the EXAMPLE does not compile: %s" % (path, msg))

print("\n".join(out))
PY
tally <"$tmp/py.out"

# ---- 5. listing columns and 6. the BUGS probe -----------------------------------
cat >"$tmp/columns.c" <<'EOF'
/* Prints "page listing column" for every column of every listing, and
 * whether reservation ids are handed out again. */
#include <stdio.h>
#include <string.h>
#include "rlstore.h"

static void cols(const char *page, const char *what, int rc, rls_rows *r)
{
    if (rc != RLS_OK) {
        printf("ERROR %s %s %s\n", page, what, rls_errname(rc));
        return;
    }
    for (int c = 0; c < rls_rows_columns(r); c++)
        printf("COL %s %s %s\n", page, what, rls_rows_name(r, c));
    rls_rows_free(r);
}

int main(int argc, char **argv)
{
    static const char rules[] =
        "version: 1\n"
        "tiers: { free: {}, pro: {} }\n"
        "actions:\n"
        "  a: { limits: [ { name: d, limit: 2, window: 1d, block_for: 1h } ] }\n";
    const int64_t T = 1795392000000LL;
    rls_db *db;
    rls_rows *x = NULL, *y = NULL;
    rls_result res;
    char path[4096];
    int64_t id1, id2;

    if (argc != 2)
        return 2;
    snprintf(path, sizeof path, "%s/columns.db", argv[1]);
    if (rls_open(&db, path, NULL) != RLS_OK ||
        rls_rules_apply_at(db, rules, strlen(rules), "r", NULL, T, NULL) != RLS_OK)
        return 1;
    for (int i = 0; i < 4; i++)
        rls_check_at(db, "a", "k", 1, T, &res);
    rls_block_set_at(db, NULL, "b", 0, "why", T);
    rls_tier_set_at(db, "user:*", "pro", 0, T);
    rls_override_set_at(db, "a", "o", "d", 5, 0, T);
    int rc = rls_rules_versions(db, &x);
    cols("rls_rules_apply", "versions", rc, x);
    x = y = NULL;
    rc = rls_rules_describe(db, 0, &x, &y);
    cols("rls_rules_apply", "describe_tiers", rc, x);
    cols("rls_rules_apply", "describe_limits", rc, y);
    x = NULL;
    rc = rls_rules_dry_run_at(db, rules, strlen(rules), "r", T, &x);
    cols("rls_rules_apply", "dry_run", rc, x);
    x = NULL;
    rc = rls_rules_validate("version: 2\n", 11, "r", &x);
    cols("rls_rules_apply", "validate", rc == RLS_ECONFIG ? RLS_OK : rc, x);
    x = NULL;
    rc = rls_rules_limit_list(db, 0, &x);
    cols("rls_rules_set_limit_at", "limit_list", rc, x);
    x = NULL;
    rc = rls_tier_list_at(db, T, &x);
    cols("rls_policy", "tiers", rc, x);
    x = NULL;
    rc = rls_override_list_at(db, NULL, NULL, T, &x);
    cols("rls_policy", "overrides", rc, x);
    x = NULL;
    rc = rls_block_list_at(db, T, &x);
    cols("rls_policy", "blocks", rc, x);
    rls_usage_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.limit = 10;
    x = NULL;
    rc = rls_usage_at(db, &q, T, &x);
    cols("rls_admin", "usage", rc, x);
    x = y = NULL;
    rc = rls_explain_at(db, "a", "k", T, &x, &y);
    cols("rls_admin", "explain_info", rc, x);
    cols("rls_admin", "explain_limits", rc, y);
    x = NULL;
    rc = rls_audit_list(db, NULL, 10, &x);
    cols("rls_admin", "audit", rc, x);
    x = y = NULL;
    rc = rls_stats_at(db, 60, T, &x, &y);
    cols("rls_admin", "stats_recent", rc, x);
    cols("rls_admin", "stats_totals", rc, y);
    x = NULL;
    rc = rls_doctor(db, 1, &x);
    if (rc == RLS_OK)
        for (int r = 0; r < rls_rows_count(x); r++)
            printf("COL rls_admin doctor_check %s\n", rls_rows_text(x, r, rls_rows_find(x, "check")));
    cols("rls_admin", "doctor", rc, x);
    /* the report of a copy (a dry run into a second database) */
    rls_db *other = NULL;
    snprintf(path, sizeof path, "%s/columns-copy.db", argv[1]);
    x = NULL;
    rc = rls_open(&other, path, NULL);
    if (rc == RLS_OK)
        rc = rls_copy_at(other, db, RLS_COPY_ALL | RLS_COPY_DRY_RUN, T, &x);
    cols("rls_copy", "copy", rc, x);
    rls_close(other);
    /* A resolved reservation's id handed out again? */
    rls_reserve_at(db, "a", "r1", 1, 60000, T, &id1, &res);
    rls_commit_at(db, id1, T);
    rls_reserve_at(db, "a", "r2", 1, 60000, T, &id2, &res);
    printf("IDREUSE %s\n", id1 > 0 && id1 == id2 ? "yes" : "no");
    rls_close(db);
    return 0;
}
EOF
if $CC -std=c11 -Wall -Wextra -Werror $san -Iinclude "$tmp/columns.c" -o "$tmp/columns" \
        -L"$BUILD" -lrlstore -Wl,-rpath,"$BUILD_ABS" >"$tmp/cc.log" 2>&1 &&
    "$tmp/columns" "$tmp" >"$tmp/columns.out" 2>&1; then
    pass
    n=0
    : >"$tmp/missing"
    while read -r tag page what col; do
        case $tag in
        COL)
            n=$((n + 1))
            # named as a word of the page (in .I, \fI..\fP, or plain text)
            grep -Eq "(^|[^a-z_])$col([^a-z_]|\$)" "docs/man/$page.3" ||
                echo "$page.3 does not name the column '$col' of $what" >>"$tmp/missing" ;;
        ERROR) echo "$page: the $what listing failed: $col" >>"$tmp/missing" ;;
        IDREUSE)
            noted=0
            grep -q '^\.\\" BUG reservation-id-reuse' docs/man/rls_reserve.3 && noted=1
            if [ "$what" = yes ] && [ $noted = 0 ]; then
                echo "rls_reserve.3: the library hands out a resolved reservation's id again, but BUGS does not say so" >>"$tmp/missing"
            elif [ "$what" = no ] && [ $noted = 1 ]; then
                echo "rls_reserve.3: reservation ids are no longer reused; remove the BUGS note marked '.\\\" BUG reservation-id-reuse'" >>"$tmp/missing"
            else
                pass
            fi ;;
        esac
    done <"$tmp/columns.out"
    if [ -s "$tmp/missing" ]; then
        while IFS= read -r l; do fail "$l"; done <"$tmp/missing"
    fi
    [ "$n" -ge 90 ] && pass || fail "the column probe printed only $n columns"
else
    fail "cannot build or run the column probe: $(cat "$tmp/cc.log" "$tmp/columns.out" 2>/dev/null | head -n 2 | tr '\n' ' ')"
fi

finish
