# tests/fuzz/lib.sh - shared by run.sh and test_fuzz_smoke.sh (POSIX sh,
# sourced from the repository root).
#
# Builds each libFuzzer target straight from the core sources it needs
# (clang, -fsanitize=fuzzer,address,undefined; no SQLite) into
# $BUILD/fuzz/<target>, and runs one target over its seed corpus.
#
#   fuzz_targets                  the target names
#   fuzz_toolchain_ok             0 if clang can link a libFuzzer + ASan +
#                                 UBSan program; else prints what to install
#   fuzz_build TARGET             (re)builds $FUZZ_OUT/TARGET if stale
#   fuzz_replay TARGET            runs every file of regressions/TARGET once
#   fuzz_run TARGET SECONDS LOG   fuzzes for SECONDS, new units to a temp dir
#   fuzz_stats LOG                "EXECS CORPUS_UNITS" from a run's log
#   fuzz_excerpt LOG [N]          what went wrong, from a crash's log

FUZZ_DIR=tests/fuzz
FUZZ_CC=${FUZZ_CC:-clang}
FUZZ_OUT=${BUILD:-build}/fuzz
# The Debian packages that provide clang's libFuzzer and sanitizer runtimes.
FUZZ_PACKAGES="clang libclang-rt-14-dev"

# Readable stack traces: ASan looks for llvm-symbolizer in PATH only.
if ! command -v llvm-symbolizer >/dev/null 2>&1 && [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
    for s in /usr/lib/llvm-*/bin/llvm-symbolizer; do
        [ -x "$s" ] && export ASAN_SYMBOLIZER_PATH="$s"
    done
fi

FUZZ_CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
-fno-sanitize-recover=all -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
-Wall -Wextra -Iinclude -Icore"

# Sources of the pure text helpers (result.c wraps them for the public API).
FUZZ_PURE="core/duration.c core/headers.c core/keynorm.c core/result.c core/timefmt.c core/tz.c core/unicode.c"

fuzz_targets() {
    echo "fuzz_config fuzz_duration fuzz_keynorm fuzz_headers fuzz_time fuzz_tzif"
}

fuzz_sources() {
    case $1 in
    fuzz_config)
        echo "core/config.c core/config_assign.c core/config_limit.c core/config_value.c \
core/config_yaml.c core/rules.c core/algo.c core/duration.c core/keynorm.c core/timefmt.c core/tz.c core/unicode.c" ;;
    *)
        echo "$FUZZ_PURE" ;;
    esac
}

fuzz_libs() {
    case $1 in
    fuzz_config) echo "-lyaml -lm" ;;
    *) echo "-lm" ;;
    esac
}

# libFuzzer flags of a target beyond the common ones.
fuzz_flags() {
    case $1 in
    fuzz_config)   echo "-max_len=8192 -dict=$FUZZ_DIR/fuzz_config.dict" ;;
    fuzz_duration) echo "-max_len=128" ;;
    fuzz_keynorm)  echo "-max_len=4200" ;;
    fuzz_headers)  echo "-max_len=4400" ;;
    fuzz_time)     echo "-max_len=64" ;;
    fuzz_tzif)     echo "-max_len=16384" ;;
    esac
}

fuzz_toolchain_ok() {
    probe_dir=$(mktemp -d) || return 1
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
        > "$probe_dir/probe.c"
    if ! command -v "$FUZZ_CC" >/dev/null 2>&1; then
        echo "fuzz: '$FUZZ_CC' not found: libFuzzer needs clang;" \
             "install the Debian packages: apt-get install $FUZZ_PACKAGES" >&2
        rm -rf "$probe_dir"
        return 1
    fi
    if ! "$FUZZ_CC" -fsanitize=fuzzer,address,undefined "$probe_dir/probe.c" \
            -o "$probe_dir/probe" >"$probe_dir/log" 2>&1; then
        echo "fuzz: '$FUZZ_CC' cannot link -fsanitize=fuzzer,address,undefined" \
             "(libFuzzer/sanitizer runtimes missing);" \
             "install the Debian packages: apt-get install $FUZZ_PACKAGES" >&2
        sed 's/^/    /' "$probe_dir/log" | tail -n 5 >&2
        rm -rf "$probe_dir"
        return 1
    fi
    rm -rf "$probe_dir"
    return 0
}

# 0 if $FUZZ_OUT/$1 is missing or older than anything it is built from.
fuzz_stale() {
    bin=$FUZZ_OUT/$1
    [ -x "$bin" ] || return 0
    for f in "$FUZZ_DIR/$1.c" "$FUZZ_DIR"/*.h "$FUZZ_DIR/lib.sh" include/*.h core/*.h \
             $(fuzz_sources "$1"); do
        # shellcheck disable=SC3013 # -nt: dash and bash have it
        [ "$f" -nt "$bin" ] && return 0
    done
    return 1
}

fuzz_build() {
    mkdir -p "$FUZZ_OUT" || return 1
    fuzz_stale "$1" || return 0
    # shellcheck disable=SC2046,SC2086 # word splitting of the lists is intended
    $FUZZ_CC $FUZZ_CFLAGS "$FUZZ_DIR/$1.c" $(fuzz_sources "$1") $(fuzz_libs "$1") \
        -o "$FUZZ_OUT/$1.tmp" && mv "$FUZZ_OUT/$1.tmp" "$FUZZ_OUT/$1"
}

# Runs each saved reproducer once; prints a line per failure.  Returns the
# number of failures (0 = all pass); sets FUZZ_NREG to the number replayed.
fuzz_replay() {
    FUZZ_NREG=0
    bad=0
    for f in "$FUZZ_DIR/regressions/$1"/*; do
        [ -f "$f" ] || continue
        FUZZ_NREG=$((FUZZ_NREG + 1))
        if ! "$FUZZ_OUT/$1" -runs=1 "$f" >"$FUZZ_OUT/$1.replay.log" 2>&1; then
            bad=$((bad + 1))
            echo "    regression $f fails again:"
            fuzz_excerpt "$FUZZ_OUT/$1.replay.log" 3 | sed 's/^/      /'
        fi
    done
    return "$bad"
}

# Fuzzes $1 for $2 seconds over its seed corpus; new units go to a temp
# dir (removed afterwards), crashes to $FUZZ_OUT/crashes/$1/.  Log in $3.
fuzz_run() {
    mkdir -p "$FUZZ_OUT/crashes/$1" || return 1
    new=$(mktemp -d) || return 1
    # shellcheck disable=SC2046,SC2086 # word splitting of the flag lists is intended
    "$FUZZ_OUT/$1" -max_total_time="$2" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$FUZZ_OUT/crashes/$1/" \
        $(fuzz_flags "$1") ${FUZZ_EXTRA:-} "$new" "$FUZZ_DIR/corpus/$1" >"$3" 2>&1
    rc=$?
    rm -rf "$new"
    return $rc
}

# The few lines of a libFuzzer log that say what went wrong (the broken
# invariant or sanitizer report, the saved input), at most $2 (default 6),
# with bytes outside printable ASCII shown as '?' (messages may quote the
# hostile input).
fuzz_excerpt() {
    grep -a -E 'invariant failed|^  [^ ]|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY|Test unit written' "$1" |
        head -n "${2:-6}" | LC_ALL=C tr -c '\n -~' '?'
}

fuzz_stats() {
    execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$1" | tail -n 1)
    corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' "$1" | tail -n 1)
    echo "${execs:-0} ${corp:-0}"
}
