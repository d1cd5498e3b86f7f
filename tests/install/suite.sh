# suite.sh - the layer over tests/suite_lib.sh for the script suites of
# tests/install and tests/examples (sourced, not run).
#
# After sourcing, the working directory is the top of the source tree and
#   ROOT, BUILD (default build), BUILD_ABS   paths (suite_lib.sh)
#   CC                                       the C compiler (default cc)
#   SAN                                      -fsanitize flags when the library
#                                            was built with make SAN=1, else ""
#   TMP                                      a scratch directory, removed on
#                                            exit (suite_lib.sh's SCRATCH)
#   pass / fail TEXT / check NAME CMD... / finish, on_exit: suite_lib.sh
# Every failure prints exactly one line starting with "FAIL: ".

cd "$(dirname "$0")/../.." || exit 2
. tests/suite_lib.sh
CC=${CC:-cc}
export LC_ALL=C
TMP=$SCRATCH

# A library built with make SAN=1 needs sanitised programs.
SAN=
if [ -f "$BUILD/librlstore.so" ] && ldd "$BUILD/librlstore.so" 2>/dev/null | grep -q libasan; then
    SAN="-fsanitize=address,undefined"
fi
