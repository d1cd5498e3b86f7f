# rlstore - plain Makefile.  `make` builds the library and tools, `make test`
# builds and runs every suite, `make SAN=1 test` does it under ASan + UBSan.
# `make bench` measures; `make bench-compare BASE=<rev> QUICK=1` measures a
# revision and this tree in turns and says which scenarios got slower.

CC       ?= cc
PKGS     := sqlite3 yaml-0.1 libpq
# Recursive (=) so they are evaluated after `make deps` may have installed
# them (`make deps all` in one run).
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lsqlite3 -lyaml -lpq)
# librlstore.so and .a link no libpq (docs/ABI.md); the PostgreSQL driver
# module does (storage/driver.h).  -ldl: dlopen, in libc since glibc 2.34
# (an empty libdl.a then, no dependency).
LIB_LIBS   = $(shell pkg-config --libs sqlite3 yaml-0.1 2>/dev/null || echo -lsqlite3 -lyaml) -lm -lpthread -ldl
PG_LIBS    = $(shell pkg-config --libs libpq 2>/dev/null || echo -lpq)
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)
TUI_CFLAGS  = $(shell pkg-config --cflags ncursesw 2>/dev/null)
TUI_LIBS    = $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)

SONAME_MAJOR := 0
VERSION  := 0.2.0

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
CSTD     := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
OPT      ?= -O2 -g

# build-san holds sanitized objects: BUILD=build-san alone (as in a
# standalone `BUILD=build-san sh tests/install/test_install.sh`) means
# SAN=1, so that what links those objects links the sanitizers too.
ifeq ($(origin SAN):$(BUILD),undefined:build-san)
SAN      := 1
endif
ifeq ($(SAN),1)
BUILD    ?= build-san
OPT      := -O1 -g -fno-omit-frame-pointer
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all
else
BUILD    ?= build
SANFLAGS :=
endif

CFLAGS_ALL = $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -Iinclude -Icore -Istorage $(PKG_CFLAGS) $(CFLAGS)
# Every compile writes the headers it read to a .d file beside its output
# (-MMD; -MP adds an empty rule per header, so a deleted header does not
# break the build); the .d files are included at the end of this file.  A
# header change so rebuilds exactly the objects, tools, test binaries and
# examples that include it.  The .d file of $(BUILD)/X is $(BUILD)/dep/X.d
# (named after the output, which also works for the rules that compile and
# link in one step), kept out of the folders of test binaries, which
# scripts may list.
DEPFILE    = $(patsubst $(BUILD)/%,$(BUILD)/dep/%.d,$@)
DEPFLAGS   = -MMD -MP -MF $(DEPFILE)
LIBFLAGS   = -fPIC -fvisibility=hidden -DRLS_BUILDING
LDLIBS_ALL = $(PKG_LIBS) -lm -lpthread -ldl $(LDLIBS)

CORE_SRCS    := $(sort $(wildcard core/*.c))
STORAGE_SRCS := $(sort $(wildcard storage/*.c storage/sqlite/*.c))
# The shared-memory table of `durability: memory` (storage/memclass.c uses it).
STORAGE_SRCS += $(sort $(wildcard storage/shm/*.c))
SCHEMA_SQL   := $(sort $(wildcard schema/*.sql))
SCHEMA_PG    := $(sort $(wildcard schema/pg/*.sql))
LIB_OBJS     := $(patsubst %.c,$(BUILD)/obj/%.o,$(CORE_SRCS) $(STORAGE_SRCS)) $(BUILD)/obj/schema_embed.o
# The PostgreSQL backend: not in the library but a driver module of its
# own, $(BUILD)/rlstore/rlstore-pg.so (installed as
# $(LIBDIR)/rlstore/rlstore-pg.so), loaded by storage/driver.c on first use
# of a postgresql:// URI.  PG_OBJS are its objects; pg_host.c (the calls
# into the library through the table the library passes, driver.h) is the
# module's alone.  The test binaries link PG_OBJS and driver.c compiled
# with RLS_PG_BUILTIN (PG_TEST_OBJS): the backend linked in, no dlopen.
PG_SRCS      := $(filter-out storage/pg/pg_host.c,$(sort $(wildcard storage/pg/*.c)))
PG_OBJS      := $(patsubst %.c,$(BUILD)/obj/%.o,$(PG_SRCS)) $(BUILD)/obj/schema_pg_embed.o
PG_DRIVER    := $(BUILD)/rlstore/rlstore-pg.so
PG_TEST_OBJS := $(BUILD)/obj/storage/driver_builtin.o $(PG_OBJS)

# The suites of one module each mirror the tree: tests/core/test_<module>.c
# tests core/<module>.c, tests/storage/test_<module>.c storage/<module>.c.
UNIT_SRCS    := $(sort $(wildcard tests/core/test_*.c tests/storage/test_*.c))
INTEG_SRCS   := $(sort $(wildcard tests/integration/test_*.c))
REL_SRCS     := $(sort $(wildcard tests/reliability/test_*.c))
TEST_BINS    := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRCS) $(INTEG_SRCS) $(REL_SRCS))
CLI_TESTS    := $(sort $(wildcard tests/cli/test_*.sh))
DOC_TESTS    := $(sort $(wildcard tests/docs/test_*.sh))
TUI_TESTS    := $(sort $(wildcard tests/tui/test_*.sh))
# Script suites of the reliability and fuzz work (each prints cmocka-style
# summary lines, see tests/run_suites.sh).
REL_TESTS    := $(sort $(wildcard tests/reliability/test_*.sh))
FUZZ_TESTS   := $(sort $(wildcard tests/fuzz/test_*.sh))
# Script suites of the examples, the Python binding and the installation.
EXAMPLE_TESTS := $(sort $(wildcard tests/examples/test_*.sh))
INSTALL_TESTS := $(sort $(wildcard tests/install/test_*.sh))
# The runner of these suites, on made-up suites.
META_TESTS   := $(sort $(wildcard tests/meta/test_*.sh))

# The suites that run a second time against a throw-away PostgreSQL server
# (tests/pg/server.sh, RLSTORE_TEST_PG set; see tests/run_suites.sh): the
# integration suites except those about SQLite files alone (WAL, the
# writers' turn, split files), the reliability suites that neither inject
# SQLite VFS, file-system or allocation faults nor measure the file
# (test_growth), the rlctl suites and the
# rltop suite that makes its databases with test_db (tests/tui/lib.sh).
# Tests inside them that are about SQLite files skip themselves
# (IT_SQLITE_ONLY, itest.h; tests/cli/lib.sh) and are reported as skipped.
# Under the sanitizers the PostgreSQL pass leaves out test_usage_scale: its
# listing logic runs sanitized in the SQLite pass, the driver code it uses
# in the other PostgreSQL suites, and on PostgreSQL it is the slowest suite
# (about 70 s plain), which keeps .ci/run within its time.
# Likewise the reliability suites there run with smaller sizes (PG_KNOBS,
# tests/run_suites.sh): their full sizes run in the plain PostgreSQL pass.
PG_SQLITE_ONLY := test_wal test_busy test_split test_split_perm
PG_SAN_LEAVE := $(if $(filter 1,$(SAN)),test_usage_scale)
PG_KNOBS     := $(if $(filter 1,$(SAN)),RLS_CLOCK_TICKS=12 RLS_EXACT_CAP=300 RLS_CRASH_ROUNDS=60)
PG_RELIABILITY := test_pg_stall test_exact test_crash test_clock test_pg_faults test_respelled \
                  test_rule_changes test_action_isolation test_time_ends test_batch_exact \
                  test_crash_group
PG_INTEG     := $(patsubst tests/%.c,$(BUILD)/tests/%,$(filter-out $(addprefix %/,$(addsuffix .c,$(PG_SQLITE_ONLY) $(PG_SAN_LEAVE))),$(INTEG_SRCS)))
# The slowest first, so that they do not end the run alone (suites run side
# by side).
PG_BINS      := $(filter %/test_usage_scale,$(PG_INTEG)) \
                $(addprefix $(BUILD)/tests/reliability/,$(PG_RELIABILITY)) \
                $(filter-out %/test_usage_scale,$(PG_INTEG))
# tests/pg/test_pgbouncer.sh runs in this pass only: it needs the server.
PG_SCRIPTS   := $(filter-out %/test_man.sh,$(CLI_TESTS)) $(filter %/test_rltop.sh %/test_longkeys.sh %/test_htopkeys.sh %/test_events.sh,$(TUI_TESTS)) \
                $(sort $(wildcard tests/pg/test_*.sh))

BENCH_SRCS   := $(sort $(wildcard bench/*.c))
# The benchmark harness's own cheap suite (rlbench --smoke, JSON, plot).
BENCH_TESTS  := $(sort $(wildcard tests/bench/test_*.sh))

CLI_SRCS     := $(sort $(wildcard cli/*.c))
TUI_SRCS     := $(sort $(wildcard tui/*.c))
# What rlctl and rltop share (display escaping, database names): each tool
# compiles it; neither includes the other's folder.
COMMON_SRCS  := $(sort $(wildcard common/*.c))
TOOLS        := $(if $(CLI_SRCS),$(BUILD)/rlctl) $(if $(TUI_SRCS),$(BUILD)/rltop)
EXAMPLES     := $(BUILD)/examples/quickstart $(BUILD)/examples/simulate \
                $(BUILD)/examples/signup $(BUILD)/examples/http429

# zsh and fish completions of rlctl, generated from its command table as
# `rlctl --help` prints it (completions/gen.sh), so they follow every new
# command and option; the bash one is written by hand and checked against
# the same help (tests/install/test_completion.sh).
COMPLETIONS := $(if $(CLI_SRCS),$(BUILD)/completions/_rlctl $(BUILD)/completions/rlctl.fish)

.PHONY: all deps test test-bins test-pg check-deps bench bench-compare demo clean sanitize valgrind check stress fuzz
.PHONY: install uninstall lint bench-shm package-test
all: $(BUILD)/librlstore.so $(BUILD)/librlstore.a $(PG_DRIVER) $(TOOLS) $(EXAMPLES) $(COMPLETIONS)

$(BUILD)/completions/_rlctl: completions/gen.sh $(BUILD)/rlctl
	@mkdir -p $(dir $@)
	sh completions/gen.sh zsh $(BUILD)/rlctl > $@.tmp && mv $@.tmp $@
$(BUILD)/completions/rlctl.fish: completions/gen.sh $(BUILD)/rlctl
	@mkdir -p $(dir $@)
	sh completions/gen.sh fish $(BUILD)/rlctl > $@.tmp && mv $@.tmp $@

# ---- dependencies ----------------------------------------------------------
# Only on request (`make deps`; the README's `make deps && make test`): as
# root on Debian/Ubuntu, installs what is missing with apt-get, otherwise
# prints the exact install line and fails.  `make` itself never installs.
deps:
	@sh tests/deps.sh

# ---- lint ------------------------------------------------------------------
# The house rules grep can check (tests/lint.sh says which; about a second, no
# build, no network): layering (no SQLite or libpq in core/; the tools and
# common/ include no header of core/, storage/ or the other tool), no .c or
# .h over 800 lines but those of tests/lint-long.txt (a list that only
# shrinks), every non-static function of core/ and storage/ named rls__
# (internal) or rls_ (public, in rlstore.h); one line per finding and a
# failure when there is one.  tests/meta/test_lint.sh tests the lint on
# made-up trees.
lint:
	@sh tests/lint.sh

# ---- library ---------------------------------------------------------------
$(BUILD)/obj/%.o: %.c $(BUILD)/dep/obj/%.o.d
	@mkdir -p $(dir $@) $(dir $(DEPFILE))
	$(CC) $(CFLAGS_ALL) $(LIBFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/schema_embed.c: $(SCHEMA_SQL) schema/embed.sh
	@mkdir -p $(BUILD)
	sh schema/embed.sh $(SCHEMA_SQL) > $@

$(BUILD)/schema_pg_embed.c: $(SCHEMA_PG) schema/embed.sh
	@mkdir -p $(BUILD)
	sh schema/embed.sh -n rls__pg_migrations $(SCHEMA_PG) > $@

$(BUILD)/obj/schema_embed.o: $(BUILD)/schema_embed.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LIBFLAGS) -c $< -o $@

$(BUILD)/obj/schema_pg_embed.o: $(BUILD)/schema_pg_embed.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LIBFLAGS) -c $< -o $@

$(BUILD)/librlstore.so: $(LIB_OBJS) librlstore.map
	$(CC) -shared $(SANFLAGS) -Wl,-soname,librlstore.so.$(SONAME_MAJOR) -Wl,-z,defs \
	    -Wl,--version-script=librlstore.map -o $(BUILD)/librlstore.so.$(VERSION) $(LIB_OBJS) $(LIB_LIBS) $(LDLIBS) $(LDFLAGS)
	ln -sf librlstore.so.$(VERSION) $(BUILD)/librlstore.so.$(SONAME_MAJOR)
	ln -sf librlstore.so.$(VERSION) $@

$(BUILD)/librlstore.a: $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $(LIB_OBJS)

# ---- the PostgreSQL driver module (storage/driver.h) --------------------------
# The library looks for it in $$RLSTORE_PG_DRIVER, then in rlstore/ beside
# the librlstore.so it was loaded from, last in PG_DRIVER_DIR as it was
# when driver.o was compiled (storage/driver.c).  `make install` does not
# recompile for another PREFIX (the place beside the library finds the
# module wherever both are installed); a build for a package passes its
# PREFIX and LIBDIR to the build too (debian/rules).
PG_DRIVER_DIR = $(LIBDIR)/rlstore
$(BUILD)/obj/storage/driver.o: CFLAGS_ALL += -DRLS_PG_DRIVER_DIR='"$(PG_DRIVER_DIR)"'

$(BUILD)/obj/storage/driver_builtin.o: storage/driver.c $(BUILD)/dep/obj/storage/driver_builtin.o.d
	@mkdir -p $(dir $@) $(dir $(DEPFILE))
	$(CC) $(CFLAGS_ALL) $(LIBFLAGS) -DRLS_PG_BUILTIN $(DEPFLAGS) -c $< -o $@

# No SONAME: a module found by its path, never linked against.
$(PG_DRIVER): $(PG_OBJS) $(BUILD)/obj/storage/pg/pg_host.o storage/pg/driver.map
	@mkdir -p $(dir $@)
	$(CC) -shared $(SANFLAGS) -Wl,-z,defs -Wl,--version-script=storage/pg/driver.map -o $@ \
	    $(PG_OBJS) $(BUILD)/obj/storage/pg/pg_host.o $(PG_LIBS) -lm $(LDLIBS) $(LDFLAGS)

# ---- tools and examples (public API only, linked to the shared library) -----
# One template for both tools, called once per tool below: $(1) the tool,
# $(2) its folder, $(3) extra compile flags, $(4) extra link flags.  Each
# tool compiles its folder's sources and common/ (what rlctl and rltop
# share: display escaping, database names) into objects of its own, with
# -Iinclude -I<folder> -Icommon only: a tool that includes a header of the
# library's internals or of the other tool does not compile.  It makes two
# links of the same objects: $(BUILD)/<tool>, which finds the library
# next to it ($$ORIGIN), and $(BUILD)/install/<tool>, relinked for `make
# install` without the build tree's rpath.
define TOOL_RULES
$(1)_SRCS := $$(sort $$(wildcard $(2)/*.c)) $$(COMMON_SRCS)
$(1)_OBJS := $$(patsubst %.c,$$(BUILD)/obj/$(1)/%.o,$$($(1)_SRCS))
$(1)_LINK  = $$(CC) $$(OPT) $$(SANFLAGS) $$(CFLAGS) $$($(1)_OBJS) -o $$@ -L$$(BUILD) -lrlstore
TOOL_OBJS += $$($(1)_OBJS)

$$(BUILD)/obj/$(1)/%.o: %.c $$(BUILD)/dep/obj/$(1)/%.o.d
	@mkdir -p $$(dir $$@) $$(dir $$(DEPFILE))
	$$(CC) $$(CSTD) $$(WARN) $$(OPT) $$(SANFLAGS) -Iinclude -I$(2) -Icommon $(3) $$(CFLAGS) $$(DEPFLAGS) -c $$< -o $$@

$$(BUILD)/$(1): $$($(1)_OBJS) $$(BUILD)/librlstore.so
	$$($(1)_LINK) -Wl,-rpath,'$$$$ORIGIN' $(4) $$(LDFLAGS)

$$(BUILD)/install/$(1): $$($(1)_OBJS) $$(BUILD)/librlstore.so
	@mkdir -p $$(dir $$@)
	$$($(1)_LINK) $(4) $$(LDFLAGS)
endef
TOOL_OBJS :=
$(if $(CLI_SRCS),$(eval $(call TOOL_RULES,rlctl,cli,,)))
$(if $(TUI_SRCS),$(eval $(call TOOL_RULES,rltop,tui,$$(TUI_CFLAGS),$$(TUI_LIBS) -lm)))

$(BUILD)/examples/%: examples/%.c $(BUILD)/dep/examples/%.d $(BUILD)/librlstore.so
	@mkdir -p $(dir $@) $(dir $(DEPFILE))
	$(CC) $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -Iinclude $(CFLAGS) $(DEPFLAGS) $< -o $@ \
	    -L$(BUILD) -lrlstore -Wl,-rpath,'$$ORIGIN/..' $(LDFLAGS)

# ---- tests -----------------------------------------------------------------
# Unit and integration suites link the static library so they can reach
# internal (rls__/core) functions.  A suite that needs extra link flags
# (e.g. -Wl,--wrap=malloc for allocation-failure loops) names them in a
# file next to it: tests/<dir>/<name>.ldflags.  The headers a suite
# includes come from its .d file (DEPFLAGS).
$(BUILD)/tests/%: tests/%.c $(BUILD)/dep/tests/%.d $(BUILD)/librlstore.a $(PG_TEST_OBJS)
	@mkdir -p $(dir $@) $(dir $(DEPFILE))
	$(CC) $(CFLAGS_ALL) -Itests -Itests/integration $(DEPFLAGS) $< -o $@ $(PG_TEST_OBJS) $(BUILD)/librlstore.a \
	    $(shell cat tests/$*.ldflags 2>/dev/null) $(CMOCKA_LIBS) $(LDLIBS_ALL) $(LDFLAGS)

# What the suites run: `make -j2 test-bins` builds it in parallel first.
test-bins: all $(TEST_BINS) $(if $(CLI_TESTS),$(BUILD)/rlctl) $(if $(BENCH_TESTS),$(BUILD)/bench/rlbench)

# Every suite, and (after --pg) the PostgreSQL pass: one summary line at
# the end counts both.  PG=0 leaves the PostgreSQL pass out.  Suites run
# side by side (TEST_JOBS, see tests/run_suites.sh), the PostgreSQL pass
# started first: its slowest suites take longer than any SQLite one, and
# started last they would end the run alone.  The fuzzing smoke
# suite builds its own sanitized targets whatever SAN is, so it runs in the
# plain pass only.  So do the suites whose subject is not the C code's
# memory (SAN_PLAIN_ONLY: documents, the lint, the benchmark harness,
# generated completions, versions, units, the web frameworks' glue): under
# the sanitizers they would cost minutes of CI and find nothing new.
FUZZ_SMOKE   := $(if $(filter 1,$(SAN)),,$(FUZZ_TESTS))
SAN_PLAIN_ONLY := $(DOC_TESTS) $(META_TESTS) $(BENCH_TESTS) tests/install/test_completion.sh \
                  tests/install/test_completion_shells.sh tests/install/test_version.sh \
                  tests/install/test_units.sh tests/examples/test_python_web.sh \
                  tests/examples/test_grafana.sh
san_plain = $(if $(filter 1,$(SAN)),$(filter-out $(SAN_PLAIN_ONLY),$(1)),$(1))
# The out-of-memory suites are the slowest SQLite ones (four minutes under
# the sanitizers): started first, they never end the run alone; under the
# sanitizers they fail every third allocation past the hundredth (the
# plain pass fails every one: tests/reliability/oomtest.h).
OOM_KNOB     := $(if $(filter 1,$(SAN)),RLS_OOM_STRIDE=3)
SLOW_FIRST   := $(filter %/test_oom_data,$(TEST_BINS)) $(filter %/test_oom_admin,$(TEST_BINS))
test: test-bins
	@BUILD=$(BUILD) PG_KNOBS="$(PG_KNOBS)" $(OOM_KNOB) bash tests/run_suites.sh $(if $(filter 0,$(PG)),,--pg $(PG_BINS) $(PG_SCRIPTS) --sqlite) \
	    $(call san_plain,$(SLOW_FIRST) $(filter-out $(SLOW_FIRST),$(TEST_BINS)) $(CLI_TESTS) $(TUI_TESTS) $(DOC_TESTS) $(REL_TESTS) $(FUZZ_SMOKE) \
	    $(EXAMPLE_TESTS) $(INSTALL_TESTS) $(BENCH_TESTS) $(META_TESTS) $(NODE_TESTS) $(AUTH_TESTS))

# The PostgreSQL pass alone.
test-pg: all $(PG_BINS) $(if $(PG_SCRIPTS),$(BUILD)/rlctl $(BUILD)/rltop)
	@BUILD=$(BUILD) PG_KNOBS="$(PG_KNOBS)" bash tests/run_suites.sh --pg $(PG_BINS) $(PG_SCRIPTS)

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
	@BUILD=$(BUILD) VALGRIND=1 bash tests/run_suites.sh $(filter-out %/test_concurrency,$(TEST_BINS))

# ---- benchmarks ------------------------------------------------------------
# rlbench (bench/*.c, public API plus SQLite for the floor) runs every
# scenario of issue #6 against baselines and peers measured in the same run:
# `make bench` takes a few minutes, `make bench QUICK=1` under one (reduced
# op counts, 200k instead of 1M keys).  Results: $(BUILD)/bench/results.json
# and, drawn from it by bench/plot.py, $(BUILD)/bench/results.svg.  rltop is
# found next to the binary ($(BUILD)/rltop).  `make bench` first installs the
# peers it compares with when they are missing (bench/peers.sh: redis-server
# and the PostgreSQL server, as root through apt-get, else one line saying
# so; their figures are then reported MISSING); `make` never does.
# The memory group (bench/memory.c) drives storage/shm's table, whose API is
# internal (not exported by librlstore.so): its sources are compiled into
# rlbench, hence -Icore -Istorage.
BENCH_SHM_SRCS := $(sort $(wildcard storage/shm/*.c))
$(BUILD)/bench/rlbench: $(BENCH_SRCS) $(BENCH_SHM_SRCS) $(wildcard bench/*.h storage/shm/*.h) $(BUILD)/librlstore.so
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O2 -g $(SANFLAGS) -Iinclude -Icore -Istorage $(PKG_CFLAGS) $(CFLAGS) \
	    $(BENCH_SRCS) $(BENCH_SHM_SRCS) -o $@ \
	    -L$(BUILD) -lrlstore -Wl,-rpath,'$$ORIGIN/..' $(PKG_LIBS) -lm -lpthread $(LDFLAGS)

bench: all $(BUILD)/bench/rlbench
	@sh bench/peers.sh
	@$(BUILD)/bench/rlbench $(if $(QUICK),--quick) --json $(BUILD)/bench/results.json; st=$$?; \
	if command -v python3 >/dev/null 2>&1; then \
	    python3 bench/plot.py $(BUILD)/bench/results.json $(BUILD)/bench/results.svg && \
	    echo "plot: $(BUILD)/bench/results.svg" || st=1; \
	else echo "plot skipped: python3 not found"; fi; exit $$st

# The shared-memory table's micro-benchmark (the table alone; full memory-
# class checks are rlbench's memory group): ns per locked update, one
# process and two.  It uses the table's
# internal API, so it links the static library.  Figures only, no verdicts.
$(BUILD)/bench/shm_bench: bench/shm/shm_bench.c $(BUILD)/librlstore.a
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O2 -g $(SANFLAGS) -Iinclude -Icore -Istorage $(CFLAGS) $< -o $@ \
	    $(BUILD)/librlstore.a $(LDLIBS_ALL) $(LDFLAGS)

bench-shm: $(BUILD)/bench/shm_bench
	@$(BUILD)/bench/shm_bench $(if $(QUICK),200000)

# Before and after a change (issue #18: "no scenario slower by more than the
# run-to-run noise"): `make bench-compare` builds BASE (a git revision;
# default `git merge-base HEAD main`, where this branch left main) in a
# temporary git worktree and this working tree in $(BUILD), runs the two
# rlbench binaries in turns, base then after, ROUNDS times (default 5; at
# least 2, the noise is their spread), and prints per scenario each side's
# median, after/base, each side's noise and a verdict ("slower beyond
# noise", "within noise", ...).  QUICK=1 (a few minutes) or SMOKE=1 (the
# script's own test) run reduced modes; PG=1 adds the pg group (rlstore on
# PostgreSQL, a private cluster rlbench starts).  No peers.  Exit 0 whatever
# the verdicts; 1 when a build or run failed, 2 for a bad BASE or ROUNDS.
# Runs and table: $(BUILD)/bench/compare/ (COMPARE_DIR=<dir> elsewhere).
# See docs/PERFORMANCE.md.
bench-compare:
	@BUILD=$(BUILD) SAN=$(SAN) sh bench/compare.sh $(if $(BASE),--base $(BASE)) \
	    $(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(QUICK),--quick) $(if $(SMOKE),--smoke) \
	    $(if $(filter 1,$(PG)),--pg) $(if $(COMPARE_DIR),--out $(COMPARE_DIR))

# ---- rlstore-auth (issue #21) ----------------------------------------------
# The forward-auth service for nginx auth_request, Traefik ForwardAuth and
# Caddy forward_auth (auth/, rlstore-auth(8)): a tool like rlctl (rlstore.h
# and common/ only, TOOL_RULES) over libmicrohttpd.  A machine without
# libmicrohttpd builds everything else and says so in one line; its suite
# (tests/auth) then skips.  `make bench` also runs bench/auth/run.sh: the
# proxied request through nginx + auth_request + rlstore-auth against nginx
# limit_req (figures in docs/PERFORMANCE.md); `make bench-auth` alone.
AUTH_SRCS    := $(sort $(wildcard auth/*.c))
AUTH_TESTS   := $(filter-out %/test_pg.sh,$(sort $(wildcard tests/auth/test_*.sh)))
# rlstore-auth on PostgreSQL: the PostgreSQL pass only
PG_SCRIPTS   += $(wildcard tests/auth/test_pg.sh)
MHD_FOUND    := $(shell pkg-config --exists libmicrohttpd 2>/dev/null && echo 1)
ifeq ($(MHD_FOUND)$(if $(AUTH_SRCS),1),11)
MHD_CFLAGS   := $(shell pkg-config --cflags libmicrohttpd)
MHD_LIBS     := $(shell pkg-config --libs libmicrohttpd)
$(eval $(call TOOL_RULES,rlstore-auth,auth,$$(MHD_CFLAGS),$$(MHD_LIBS) -lpthread))
all: $(BUILD)/rlstore-auth
else ifneq ($(AUTH_SRCS),)
$(info rlstore-auth: not built: libmicrohttpd is missing (apt-get install libmicrohttpd-dev))
endif
# `make install-auth`: the program (relinked without the build tree's
# rpath) and rlstore-auth(8); dist/systemd/rlstore-auth.service is copied
# by hand (its comment says how).  Not part of `make install`, which works
# without libmicrohttpd.
.PHONY: bench-auth install-auth uninstall-auth
install-auth: $(BUILD)/install/rlstore-auth
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8
	$(INSTALL) -m 0755 $(BUILD)/install/rlstore-auth $(DESTDIR)$(BINDIR)/rlstore-auth
	$(INSTALL) -m 0644 docs/man/rlstore-auth.8 $(DESTDIR)$(MANDIR)/man8/rlstore-auth.8
uninstall-auth:
	rm -f $(DESTDIR)$(BINDIR)/rlstore-auth $(DESTDIR)$(MANDIR)/man8/rlstore-auth.8
$(BUILD)/bench/authload: bench/auth/authload.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O2 -g $(CFLAGS) $< -o $@ -lpthread -lm $(LDFLAGS)
bench-auth: all $(BUILD)/bench/authload
	@BUILD=$(BUILD) sh bench/auth/run.sh $(if $(QUICK),--quick)
bench: bench-auth

# ---- demo ------------------------------------------------------------------
demo: all
	@sh examples/demo.sh $(BUILD)

# ---- install ---------------------------------------------------------------
# `make install` / `make uninstall`, honouring PREFIX (default /usr/local) and
# DESTDIR (a staging root for packages: files go to $(DESTDIR)$(PREFIX)/...,
# while rlstore.pc names $(PREFIX)).  Installs the header, the shared library
# (real name librlstore.so.$(VERSION), SONAME link librlstore.so.$(SONAME_MAJOR),
# development link librlstore.so), the PostgreSQL driver module
# ($(LIBDIR)/rlstore/rlstore-pg.so), the static library, rlstore.pc, rlctl,
# rltop (when it is built), the manual pages of sections 1, 3 and 5 (plus a
# ".so" stub per function named in a section-3 page, so `man rls_peek_at`
# works) and the bash, zsh and fish completions of rlctl.  The tools are relinked for
# installation without the build tree's $$ORIGIN rpath.  Uninstall removes the
# same files (directories are left: they may be shared).
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
DATADIR      ?= $(PREFIX)/share
MANDIR       ?= $(DATADIR)/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR  ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR   ?= $(DATADIR)/zsh/vendor-completions
FISHCOMPDIR  ?= $(DATADIR)/fish/vendor_completions.d
INSTALL      ?= install

INSTALL_TOOLS := $(if $(CLI_SRCS),$(BUILD)/install/rlctl) $(if $(TUI_SRCS),$(BUILD)/install/rltop)
MAN_PAGES     := $(sort $(wildcard docs/man/*.1 docs/man/*.3 docs/man/*.5))
INSTALL_MAN   := $(if $(TUI_SRCS),$(MAN_PAGES),$(filter-out docs/man/rltop.1,$(MAN_PAGES)))
# In rlstore.pc, directories below PREFIX are written relative to ${prefix}.
pc_rel = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
# Shell: prints "page alias" for every function named in the NAME line of
# each section-3 page other than the page's own name.
MAN3_ALIASES = for p in $(filter %.3,$(INSTALL_MAN)); do \
	    b=$$(basename "$$p" .3); \
	    for f in $$(sed -n '/^\.SH NAME/{n;s/ *\\-.*//;s/,/ /g;p;q;}' "$$p"); do \
	        [ "$$f" = "$$b" ] || echo "$$b $$f"; \
	    done; \
	done

# $(BUILD)/install/rlctl and rltop: see TOOL_RULES.
install: $(BUILD)/librlstore.so $(BUILD)/librlstore.a $(PG_DRIVER) $(INSTALL_TOOLS) $(COMPLETIONS) rlstore.pc.in
	$(INSTALL) -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	    $(DESTDIR)$(PG_DRIVER_DIR) \
	    $(DESTDIR)$(BINDIR) $(DESTDIR)$(BASHCOMPDIR) \
	    $(if $(COMPLETIONS),$(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)) \
	    $(addprefix $(DESTDIR)$(MANDIR)/man,$(sort $(subst .,,$(suffix $(INSTALL_MAN)))))
	$(INSTALL) -m 0644 include/rlstore.h include/rlstore_admin.h $(DESTDIR)$(INCLUDEDIR)/
	$(INSTALL) -m 0644 $(BUILD)/librlstore.so.$(VERSION) $(DESTDIR)$(LIBDIR)/librlstore.so.$(VERSION)
	ln -sf librlstore.so.$(VERSION) $(DESTDIR)$(LIBDIR)/librlstore.so.$(SONAME_MAJOR)
	ln -sf librlstore.so.$(SONAME_MAJOR) $(DESTDIR)$(LIBDIR)/librlstore.so
	$(INSTALL) -m 0644 $(BUILD)/librlstore.a $(DESTDIR)$(LIBDIR)/librlstore.a
	$(INSTALL) -m 0644 $(PG_DRIVER) $(DESTDIR)$(PG_DRIVER_DIR)/rlstore-pg.so
	sed -e 's|@prefix@|$(PREFIX)|' -e 's|@libdir@|$(call pc_rel,$(LIBDIR))|' \
	    -e 's|@includedir@|$(call pc_rel,$(INCLUDEDIR))|' -e 's|@version@|$(VERSION)|' \
	    rlstore.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/rlstore.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/rlstore.pc
	$(if $(strip $(INSTALL_TOOLS)),$(INSTALL) -m 0755 $(strip $(INSTALL_TOOLS)) $(DESTDIR)$(BINDIR)/)
	set -e; $(foreach s,1 3 5,$(if $(filter %.$(s),$(INSTALL_MAN)),\
	    $(INSTALL) -m 0644 $(filter %.$(s),$(INSTALL_MAN)) $(DESTDIR)$(MANDIR)/man$(s)/;))
	@set -e; $(MAN3_ALIASES) | while read -r page name; do \
	    printf '.so man3/%s.3\n' "$$page" > "$(DESTDIR)$(MANDIR)/man3/$$name.3"; \
	    chmod 0644 "$(DESTDIR)$(MANDIR)/man3/$$name.3"; \
	done
	$(INSTALL) -m 0644 completions/rlctl.bash $(DESTDIR)$(BASHCOMPDIR)/rlctl
	$(if $(COMPLETIONS),$(INSTALL) -m 0644 $(BUILD)/completions/_rlctl $(DESTDIR)$(ZSHCOMPDIR)/_rlctl)
	$(if $(COMPLETIONS),$(INSTALL) -m 0644 $(BUILD)/completions/rlctl.fish $(DESTDIR)$(FISHCOMPDIR)/rlctl.fish)
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then \
	    echo ldconfig; ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/rlstore.h $(DESTDIR)$(INCLUDEDIR)/rlstore_admin.h \
	    $(DESTDIR)$(LIBDIR)/librlstore.so.$(VERSION) \
	    $(DESTDIR)$(LIBDIR)/librlstore.so.$(SONAME_MAJOR) \
	    $(DESTDIR)$(LIBDIR)/librlstore.so $(DESTDIR)$(LIBDIR)/librlstore.a \
	    $(DESTDIR)$(PG_DRIVER_DIR)/rlstore-pg.so \
	    $(DESTDIR)$(PKGCONFIGDIR)/rlstore.pc \
	    $(DESTDIR)$(BINDIR)/rlctl $(DESTDIR)$(BINDIR)/rltop \
	    $(DESTDIR)$(BASHCOMPDIR)/rlctl $(DESTDIR)$(ZSHCOMPDIR)/_rlctl \
	    $(DESTDIR)$(FISHCOMPDIR)/rlctl.fish \
	    $(foreach p,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(notdir $(p)))
	@$(MAN3_ALIASES) | while read -r page name; do \
	    rm -f "$(DESTDIR)$(MANDIR)/man3/$$name.3"; \
	done

# ---- Debian packages (debian/) ------------------------------------------------
# `make package-test`: tests/install/test_package.sh --install builds the
# packages from a copy of the tree (dpkg-buildpackage -us -uc -b, about
# 45 s), runs lintian, checks their contents and dependencies, runs them
# unpacked, then (as root) installs them for real, runs the installed
# programs and purges them.  `make test` runs the same suite without the
# real installation.
package-test:
	@BUILD=$(BUILD) sh tests/install/test_package.sh --install

clean:
	rm -rf build build-san

# ---- Node.js binding (bindings/node, issue #21) ----------------------------
# The N-API addon bindings/node/src/*.c, compiled straight against node's own
# headers (found beside the node binary, as node-gyp does; NODE_INCLUDE=dir
# elsewhere) and linked to librlstore.so with an rpath to this build: no
# node-gyp, no download.  Without node or its headers it is not built and
# tests/node/test_node.sh skips with one line.  `npm install` of the package
# builds the same sources with bindings/node/build.js.
NODE         ?= node
NODE_INCLUDE ?= $(shell $(NODE) -p "require('path').resolve(process.execPath, '../../include/node')" 2>/dev/null)
NODE_SRCS    := $(sort $(wildcard bindings/node/src/*.c))
NODE_ADDON   := $(if $(wildcard $(NODE_INCLUDE)/node_api.h),$(BUILD)/node/rlstore.node)
NODE_TESTS   := $(sort $(wildcard tests/node/test_*.sh))
# (also in the PostgreSQL pass, where it runs bindings/node/test/pg.test.js)
PG_SCRIPTS   += $(NODE_TESTS)
$(BUILD)/node/rlstore.node: $(NODE_SRCS) bindings/node/src/nd.h include/rlstore.h include/rlstore_admin.h $(BUILD)/librlstore.so
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) $(SANFLAGS) -fPIC -shared -Iinclude -isystem $(NODE_INCLUDE) $(CFLAGS) \
	    $(NODE_SRCS) -o $@ -L$(BUILD) -lrlstore -lpthread -Wl,-rpath,'$$ORIGIN/..' $(LDFLAGS)
.PHONY: node
node: $(NODE_ADDON)
test-bins: $(NODE_ADDON)

# ---- header dependencies (DEPFLAGS) -----------------------------------------
# The .d files of everything compiled above; a missing one (nothing built
# yet) is no error.  Each compile also depends on its .d file, which has no
# recipe: a target whose .d file is missing (built before .d files existed,
# or the file was removed) is built again, so its headers are known.
$(BUILD)/dep/%.d: ;
.PRECIOUS: $(BUILD)/dep/%.d
-include $(patsubst $(BUILD)/%,$(BUILD)/dep/%.d,$(LIB_OBJS) $(PG_OBJS) $(BUILD)/obj/storage/pg/pg_host.o \
    $(BUILD)/obj/storage/driver_builtin.o $(TOOL_OBJS) $(TEST_BINS) $(EXAMPLES))
