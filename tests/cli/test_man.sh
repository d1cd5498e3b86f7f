#!/usr/bin/env bash
# docs/man/rlctl.1 against `rlctl --help`: the commands (in order), the
# global options, the exit statuses and the environment must be the same,
# so the man page cannot drift from the command table in cli/rlctl.c.
# Also: every listed command answers `--help` with its synopsis, and groff
# formats the page without warnings.
. "$(dirname "$0")/lib.sh"

MAN=$ROOT/docs/man/rlctl.1
"$RLCTL" --help >help.txt 2>&1
tassert "help exits 0" test $? = 0

python3 - "$MAN" help.txt >cmp.txt 2>&1 <<'PY'
import re, sys

man_lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
help_lines = open(sys.argv[2], encoding="utf-8").read().split("\n")

def text(roff):
    """Plain text of one roff source line."""
    s = roff
    if s.startswith(".B ") or s.startswith(".I "):
        s = s[3:].replace('"', "")
    s = re.sub(r"\\f[BIRP]", "", s)
    s = s.replace("\\-", "-").replace("\\(aq", "'").replace("\\(dq", '"').replace("\\e", "\\")
    s = s.replace("\\ ", " ").replace("\\&", "").replace("\\%", "")
    return s.strip()

# man: section -> list of (tag, body text)
man, section, i = {}, None, 0
while i < len(man_lines):
    line = man_lines[i]
    if line.startswith(".SH "):
        section = line[4:].strip().strip('"')
        man.setdefault(section, [])
    elif line == ".TP" and section and i + 1 < len(man_lines):
        tag = text(man_lines[i + 1])
        body = []
        j = i + 2
        while j < len(man_lines) and not man_lines[j].startswith((".TP", ".SH")):
            if not man_lines[j].startswith(".\\\""):
                body.append(text(man_lines[j]))
            j += 1
        man[section].append((tag, " ".join(b for b in body if b)))
        i = j
        continue
    i += 1

# help: section -> entries
hs, cur = {}, None
for line in help_lines:
    if line and not line.startswith(" ") and line.endswith(":"):
        cur = line[:-1]
        hs[cur] = []
    elif cur and line.startswith("  ") and not line.startswith("      "):
        hs[cur].append(line[2:])

fails = []
results = []
def same(what, got, want):
    if got == want:
        msg = ""
    else:
        lacks = [w for w in want if w not in got]
        extra = [g for g in got if g not in want]
        msg = " man page lacks %r; man page has extra %r" % (lacks, extra) if lacks or extra \
            else " same entries, different order"
    results.append((what, msg))

def help_section(prefix):
    for k in hs:
        if k.startswith(prefix):
            return hs[k]
    fails.append("help has no section " + prefix)
    return []

same("commands (in order)", [t for t, _ in man.get("COMMANDS", [])], help_section("Commands"))
same("global options", [t for t, _ in man.get("GLOBAL OPTIONS", [])],
     [re.split(r"\s{2,}", e)[0] for e in help_section("Global options")])
same("exit statuses", [(t, b) for t, b in man.get("EXIT STATUS", [])],
     [tuple(re.split(r"\s{2,}", e, maxsplit=1)) for e in help_section("Exit status")])
same("environment", [(t, b) for t, b in man.get("ENVIRONMENT", [])],
     [tuple(re.split(r"\s{2,}", e, maxsplit=1)) for e in help_section("Environment")])
for sec in ("NAME", "SYNOPSIS", "DESCRIPTION", "GLOBAL OPTIONS", "COMMANDS", "EXIT STATUS",
            "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"):
    if sec not in man:
        fails.append("man page lacks section " + sec)
for c in help_section("Commands"):
    print("CMD\t" + c)
for what, msg in results:
    print("RESULT\t%s\t%s" % (what, msg))
for f in fails:
    print("RESULT\tman page structure\t " + f)
PY
tassert "man/help comparison ran" grep -q "^RESULT" cmp.txt
grep -v "^CMD\|^RESULT" cmp.txt
while IFS=$'\t' read -r _ what msg; do
    if [ -n "$msg" ]; then report "man page $what" "$msg"; else report "man page $what"; fi
done < <(grep "^RESULT" cmp.txt)
tassert "help lists at least 25 commands" test "$(grep -c '^CMD' cmp.txt)" -ge 25

# Every command of the help is dispatchable and describes itself the same.
while IFS=$'\t' read -r _ syn; do
    words=()
    for w in $syn; do
        case $w in [a-z]*) words+=("$w") ;; *) break ;; esac
    done
    tcase "'${words[*]} --help' matches" 0 --out-has "usage: rlctl $syn" -- "${words[@]}" --help
done < <(grep "^CMD" cmp.txt)

# groff lint.
if command -v groff >/dev/null 2>&1; then
    groff -man -Tutf8 -ww -z "$MAN" >groff.txt 2>&1
    tassert "groff exits 0" test $? = 0
    [ -s groff.txt ] && sed 's/^/    groff: /' groff.txt
    tassert "groff prints no warnings" test ! -s groff.txt
else
    echo "note: groff not installed, man page formatting not checked"
fi

finish
