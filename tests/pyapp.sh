# tests/pyapp.sh - an application for the tool suites: `py ARGS` runs
# python3 with the Python binding over the library $LIB of this build
# (under SAN=1 with the sanitizer runtimes preloaded, as
# tests/examples/test_python.sh does).  Needs ROOT (the checkout) and LIB.
PRELOAD=
if readelf -d "$LIB" 2>/dev/null | grep -q 'libasan'; then
    PRELOAD="$(${CC:-cc} -print-file-name=libasan.so) $(${CC:-cc} -print-file-name=libubsan.so)"
fi
py() {
    LD_PRELOAD=$PRELOAD ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS} \
        RLSTORE_LIB=$LIB PYTHONPATH=$ROOT/bindings/python python3 "$@"
}
