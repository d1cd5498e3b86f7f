# rlstore - plain Makefile.  `make` builds the library and tools, `make test`
# builds and runs every suite, `make SAN=1 test` does it under ASan + UBSan.

CC       ?= cc
PKGS     := sqlite3 yaml-0.1
# Recursive (=) so they are evaluated after `deps` may have installed them.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lsqlite3 -lyaml)
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

SONAME_MAJOR := 0
VERSION  := 0.1.0

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CSTD     := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
OPT      ?= -O2 -g

ifeq ($(SAN),1)
BUILD    ?= build-san
OPT      := -O1 -g -fno-omit-frame-pointer
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
else
BUILD    ?= build
SANFLAGS :=
endif

CFLAGS_ALL = $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -Iinclude -Icore -Istorage $(PKG_CFLAGS) $(CFLAGS)
LIBFLAGS   = -fPIC -fvisibility=hidden -DRLS_BUILDING
LDLIBS_ALL = $(PKG_LIBS) -lm -lpthread $(LDLIBS)

CORE_SRCS    := $(sort $(wildcard core/*.c))
STORAGE_SRCS := $(sort $(wildcard storage/*.c))
SCHEMA_SQL   := $(sort $(wildcard schema/*.sql))
LIB_OBJS     := $(patsubst %.c,$(BUILD)/obj/%.o,$(CORE_SRCS) $(STORAGE_SRCS)) $(BUILD)/obj/schema_embed.o

UNIT_SRCS    := $(sort $(wildcard tests/unit/test_*.c))
INTEG_SRCS   := $(sort $(wildcard tests/integration/test_*.c))
REL_SRCS     := $(sort $(wildcard tests/reliability/test_*.c))
TEST_BINS    := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRCS) $(INTEG_SRCS) $(REL_SRCS))
CLI_TESTS    := $(sort $(wildcard tests/cli/test_*.sh))
DOC_TESTS    := $(sort $(wildcard tests/docs/test_*.sh))
# Script suites of the reliability and fuzz work (each prints cmocka-style
# summary lines, see tests/run_suites.sh).
REL_TESTS    := $(sort $(wildcard tests/reliability/test_*.sh))
FUZZ_TESTS   := $(sort $(wildcard tests/fuzz/test_*.sh))

BENCH_SRCS   := $(sort $(wildcard bench/*.c))

CLI_SRCS     := $(sort $(wildcard cli/*.c))
TUI_SRCS     := $(sort $(wildcard tui/*.c))
TOOLS        := $(if $(CLI_SRCS),$(BUILD)/rlctl) $(if $(TUI_SRCS),$(BUILD)/rltop)
EXAMPLES     := $(BUILD)/examples/quickstart

.PHONY: all deps test check-deps bench demo clean sanitize valgrind check stress fuzz
all: deps $(BUILD)/librlstore.so $(BUILD)/librlstore.a $(TOOLS) $(EXAMPLES)

# ---- dependencies ----------------------------------------------------------
# Installs what is missing when run as root on Debian/Ubuntu, otherwise prints
# the exact install line and stops.
deps:
	@sh tests/deps.sh

# ---- library ---------------------------------------------------------------
$(BUILD)/obj/%.o: %.c $(wildcard include/*.h core/*.h storage/*.h) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LIBFLAGS) -c $< -o $@

$(BUILD)/schema_embed.c: $(SCHEMA_SQL) schema/embed.sh
	@mkdir -p $(BUILD)
	sh schema/embed.sh $(SCHEMA_SQL) > $@

$(BUILD)/obj/schema_embed.o: $(BUILD)/schema_embed.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LIBFLAGS) -c $< -o $@

$(BUILD)/librlstore.so: $(LIB_OBJS) librlstore.map
	$(CC) -shared $(SANFLAGS) -Wl,-soname,librlstore.so.$(SONAME_MAJOR) \
	    -Wl,--version-script=librlstore.map -o $(BUILD)/librlstore.so.$(VERSION) $(LIB_OBJS) $(LDLIBS_ALL) $(LDFLAGS)
	ln -sf librlstore.so.$(VERSION) $(BUILD)/librlstore.so.$(SONAME_MAJOR)
	ln -sf librlstore.so.$(VERSION) $@

$(BUILD)/librlstore.a: $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $(LIB_OBJS)

# ---- tools and examples (public API only, linked to the shared library) -----
$(BUILD)/rlctl: $(CLI_SRCS) $(wildcard cli/*.h) $(BUILD)/librlstore.so
	$(CC) $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -Iinclude -Icli $(CFLAGS) $(CLI_SRCS) -o $@ \
	    -L$(BUILD) -lrlstore -Wl,-rpath,'$$ORIGIN' $(LDFLAGS)

$(BUILD)/examples/%: examples/%.c $(BUILD)/librlstore.so
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -Iinclude $(CFLAGS) $< -o $@ \
	    -L$(BUILD) -lrlstore -Wl,-rpath,'$$ORIGIN/..' $(LDFLAGS)

# ---- tests -----------------------------------------------------------------
# Unit and integration suites link the static library so they can reach
# internal (rls__/core) functions.  A suite that needs extra link flags
# (e.g. -Wl,--wrap=malloc for allocation-failure loops) names them in a
# file next to it: tests/<dir>/<name>.ldflags.
$(BUILD)/tests/%: tests/%.c tests/testutil.h tests/integration/itest.h $(wildcard tests/*/*.h) $(BUILD)/librlstore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests -Itests/integration $< -o $@ $(BUILD)/librlstore.a \
	    $(shell cat tests/$*.ldflags 2>/dev/null) $(CMOCKA_LIBS) $(LDLIBS_ALL) $(LDFLAGS)

test: all $(TEST_BINS) $(if $(CLI_TESTS),$(BUILD)/rlctl)
	@BUILD=$(BUILD) sh tests/run_suites.sh $(TEST_BINS) $(CLI_TESTS) $(DOC_TESTS) $(REL_TESTS) $(FUZZ_TESTS)

sanitize:
	$(MAKE) SAN=1 test

# Everything under ASan + UBSan, then the suites under valgrind memcheck.
check:
	$(MAKE) SAN=1 test
	$(MAKE) valgrind

# Long soak variants of the reliability suites, and long fuzzing runs.
stress: all $(TEST_BINS)
	@BUILD=$(BUILD) sh tests/reliability/stress.sh

fuzz: all
	@BUILD=$(BUILD) sh tests/fuzz/run.sh $(if $(FUZZ_SECONDS),$(FUZZ_SECONDS),60)

# Every suite under memcheck except the multi-process one (its timing-based
# kill loop means little at valgrind speed).
valgrind: all $(TEST_BINS)
	@BUILD=$(BUILD) VALGRIND=1 sh tests/run_suites.sh $(filter-out %/test_concurrency,$(TEST_BINS))

# ---- benchmarks ------------------------------------------------------------
$(BUILD)/bench/rlbench: $(BENCH_SRCS) $(wildcard bench/*.h) $(BUILD)/librlstore.so
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O2 -g -Iinclude $(PKG_CFLAGS) $(CFLAGS) $(BENCH_SRCS) -o $@ \
	    -L$(BUILD) -lrlstore -Wl,-rpath,'$$ORIGIN/..' $(PKG_LIBS) -lm $(LDFLAGS)

bench: all $(BUILD)/bench/rlbench
	$(BUILD)/bench/rlbench $(if $(QUICK),--quick)

# ---- demo ------------------------------------------------------------------
demo: all
	@sh examples/demo.sh $(BUILD)

clean:
	rm -rf build build-san
