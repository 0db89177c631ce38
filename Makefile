# SPDX-License-Identifier: MIT
# nanoclock — GNU Make build.
#   make            library (static + shared) and the nanoclock tool
#   make run        build, then run `nanoclock info`
#   make check      install the core tests' dependencies if missing, build and run
#                   the tests; never changes the machine's clock
#   make check-destructive  the tests that step and slew the clock (root, and
#                   NANOCLOCK_TEST_DESTRUCTIVE=1; the clock's state put back after)
#   make check-disturbed  make check while another process steps and slews the
#                   clock (the same conditions)
#   make check SANITIZE=address,undefined | SANITIZE=thread
#   make check MODE=debug   internal consistency checks compiled in
#   make bench      build, then run `nanoclock bench`
#   make fuzz-trace fuzz the trace decoder for FUZZ_SECONDS (15)
#   make install    PREFIX=/usr/local DESTDIR= (LIBDIR INCDIR BINDIR MANDIR CMAKEDIR);
#                   NOMAN=1 without the man pages.  Needs only a C compiler and make.
#   make man        regenerate man/nanoclock.1 and man/nanoclock.3 from man/*.scd
#                   (needs scdoc; the generated pages are kept in the tree)
# Honours CC, CPPFLAGS, CFLAGS, LDFLAGS, PREFIX, DESTDIR (and BIND_NOW, below).  Cross: make CC=aarch64-linux-gnu-gcc

CC ?= cc
CFLAGS ?= -O2 -g
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR ?= $(LIBDIR)/cmake/nanoclock
SCDOC ?= scdoc
SANITIZE ?=
# Prefix for running test programs (e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu)
RUN ?=
# A test program that runs longer than this (seconds) has hung: it fails
TEST_TIMEOUT ?= 900

# The version is written once, in include/nanoclock.h.
VERSION := $(shell sed -n 's/^\#define NC_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' include/nanoclock.h | paste -sd. -)
# The soname's number is the ABI version.  It changes whenever a program
# built against one release could misbehave with another: the layout of
# struct nc_impl_state or the NC_IMPL_KIND_* values (nanoclock_impl.h,
# compiled into callers of the inline functions), or the signature or
# meaning of an exported function.  Adding functions does not change it.
# CMakeLists.txt reads it here; the Debian package's name carries it
# (libnanoclock$(SOVERSION): debian/control); scripts/check-version checks both.
SOVERSION := 1

# MODE=debug: the library's internal checks compiled in (src/base/debug.c),
# every read handed to the library to be checked, reports through the log
# hook.  MODE=release (default): none of that.
MODE ?= release
comma := ,
# One build tree per sanitizer setting and mode so objects never mix.
ifeq ($(MODE),debug)
MODEFLAGS := -DNC_DEBUG=1
MODEDIR := debug
else ifeq ($(MODE),release)
MODEFLAGS :=
MODEDIR :=
else
$(error MODE must be release or debug)
endif
ifeq ($(SANITIZE),)
B ?= build$(if $(MODEDIR),/$(MODEDIR))
SANFLAGS :=
else
B := build/san-$(subst $(comma),-,$(SANITIZE))$(if $(MODEDIR),-$(MODEDIR))
SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

# clang's thread-safety analysis: the lock rules the annotations state
# (src/base/compiler.h, src/base/lock.h), an error whatever CFLAGS say.
# Only where the compiler has the flag (clang): gcc refuses it.
TSA_WARN := $(shell $(CC) -Werror -Wthread-safety -fsyntax-only -x c /dev/null >/dev/null 2>&1 && \
	echo -Wthread-safety -Werror=thread-safety)
WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes $(TSA_WARN)
# _FILE_OFFSET_BITS=64: traces over 2 GiB on 32-bit targets (i686); no
# public header uses off_t, so the ABI does not change
BASE_CFLAGS := -std=gnu11 -Iinclude -Isrc -fPIC -fvisibility=hidden -pthread -D_GNU_SOURCE \
	-D_FILE_OFFSET_BITS=64 $(WARN) $(SANFLAGS) $(MODEFLAGS)
ALL_CFLAGS = $(BASE_CFLAGS) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SANFLAGS) -pthread $(LDFLAGS)
# The library, the tool and the LTTng plugin bind their symbols when
# loaded (-z now, as Debian's hardened builds do), not one at a time during
# the first call, where each cold lazy binding goes through the resolver
# (the cold shared start is faster, the loader a little slower: the figures
# are in docs/measurements/).  Before LDFLAGS, so -Wl,-z,lazy
# there wins; BIND_NOW= drops it.
BIND_NOW ?= -Wl,-z,now
LIBS := -lm

LIB_SRC := $(sort $(wildcard src/*.c src/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
# The installed headers: every file in include/ (the one list; internal
# headers live in src/).  CMakeLists.txt globs the same directory.
HEADERS := $(sort $(wildcard include/*.h include/*.hpp))

# The tool: every file in tools/ and its folders (tools/bench/; CMakeLists.txt globs the same).
TOOL_SRC := $(sort $(wildcard tools/*.c) $(wildcard tools/*/*.c))
TOOL_OBJ := $(TOOL_SRC:%.c=$(B)/%.o)
# the tool sees only the public headers (and its own): the compiler
# refuses an include of the library's internals, but for the one it shares
# by its relative path, src/base/safefile.h (where a writer may write)
$(TOOL_OBJ): ALL_CFLAGS = $(filter-out -Isrc,$(BASE_CFLAGS)) $(CPPFLAGS) $(CFLAGS)

# The test programs, grouped by the part they test (tests/AREA/test_*.c),
# built side by side as $(B)/tests/test_*; the headers they share are in
# tests/ (-Itests)
TEST_SRC := $(sort $(wildcard tests/*/test_*.c))
TEST_BIN := $(addprefix $(B)/tests/,$(basename $(notdir $(TEST_SRC))))
# nanoclock.hpp, tested as C++11 and C++20 with the C++ compiler that goes
# with CC (g++ for gcc, clang++ for clang, the cross g++ for a cross gcc),
# and natively with clang++ too where it is installed
CXX_FOR_CC := $(patsubst %gcc,%g++,$(patsubst %clang,%clang++,$(patsubst cc,g++,$(CC))))
NC_CXX := $(if $(filter default,$(origin CXX)),$(CXX_FOR_CC),$(CXX))
HAVE_CXX := $(shell command -v $(firstword $(NC_CXX)) >/dev/null 2>&1 && echo yes)
# (only when CC builds for this machine: clang++ would link a cross build's library)
NATIVE_CC := $(filter $(shell uname -m)-%,$(shell $(CC) -dumpmachine 2>/dev/null))
HAVE_CLANGXX := $(if $(RUN),,$(if $(NATIVE_CC),$(shell command -v clang++ >/dev/null 2>&1 && echo yes)))
CPP_TEST_BIN := $(if $(HAVE_CXX),$(B)/tests/cpp11 $(B)/tests/cpp20) \
	$(if $(HAVE_CLANGXX),$(B)/tests/cpp11-clang $(B)/tests/cpp20-clang)
CXXWARN := -Wall -Wextra -Wpedantic -Wshadow
EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLE_BIN := $(EXAMPLE_SRC:examples/%.c=$(B)/examples/%)
# C++ examples, where the C++ compiler that goes with CC exists
EXAMPLE_CXX_SRC := $(wildcard examples/*.cpp)
EXAMPLE_CXX_BIN := $(if $(HAVE_CXX),$(EXAMPLE_CXX_SRC:examples/%.cpp=$(B)/examples/%))

# ---- man pages: nanoclock(1) and nanoclock(3), written in man/*.scd and
# generated by scdoc into man/nanoclock.1 and man/nanoclock.3, which are kept
# in the tree so that building and installing need no scdoc.  `make man`
# regenerates them; scripts/check-man-fresh (in `make check` where scdoc is
# installed, and in CI's scripts/check-man) fails when one is stale.  Each
# public function's name (scripts/api-names reads them from the headers) is
# also a page, a `.so` link written at install, so that `man nc_now_ns`
# opens nanoclock(3), the whole library manual. ----
HAVE_SCDOC := $(shell command -v $(SCDOC) >/dev/null 2>&1 && echo yes)
API_NAMES := $(shell ./scripts/api-names)
MAN_SRC := man/nanoclock.1.scd man/nanoclock.3.scd
MAN_PAGES := man/nanoclock.1 man/nanoclock.3
# a man tree in the build directory (man -M build/man nc_now_ns)
MAN_TREE := $(B)/man/man1/nanoclock.1 $(B)/man/man3/nanoclock.3
MAN_LINKS := $(API_NAMES:%=$(B)/man/man3/%.3)

STATIC := $(B)/libnanoclock.a
SHARED := $(B)/libnanoclock.so.$(VERSION)
TOOL := $(B)/nanoclock

.PHONY: all run check check-destructive check-disturbed bench install uninstall clean examples deps tests check-cross check-inline \
	check-symbols check-version man man-tree check-man-fresh print-version print-soversion fuzz-trace \
	check-hygiene check-valgrind check-matrix fuzz fuzz-run
all: $(STATIC) $(SHARED) $(TOOL) man-tree

print-version:
	@echo $(VERSION)
print-soversion:
	@echo $(SOVERSION)

# -MMD -MP: each object's header dependencies, tracked by the compiler
$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d)

$(STATIC): $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(SHARED): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libnanoclock.so.$(SOVERSION) $(BIND_NOW) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
	ln -sf libnanoclock.so.$(VERSION) $(B)/libnanoclock.so.$(SOVERSION)
	ln -sf libnanoclock.so.$(SOVERSION) $(B)/libnanoclock.so

$(TOOL): $(TOOL_OBJ) $(STATIC)
	$(CC) $(BIND_NOW) $(ALL_LDFLAGS) -o $@ $(TOOL_OBJ) $(STATIC) $(LIBS)

run: $(TOOL)
	./$(TOOL) info

bench: $(TOOL)
	./$(TOOL) bench

examples: $(EXAMPLE_BIN) $(EXAMPLE_CXX_BIN)
$(B)/examples/%: examples/%.c $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP $(ALL_LDFLAGS) -o $@ $< $(STATIC) $(LIBS)

$(B)/examples/%: examples/%.cpp $(STATIC) $(HEADERS)
	@mkdir -p $(dir $@)
	$(NC_CXX) -std=c++11 -Iinclude $(CXXWARN) $(SANFLAGS) $(CPPFLAGS) $(CFLAGS) -pthread -o $@ $< $(STATIC) $(LIBS) $(LDFLAGS)

# ---- man pages ----
# Regenerates the pages in the tree (a phony target: git does not keep file
# times, so `make` never decides by itself that scdoc must run).
man:
	@command -v $(SCDOC) >/dev/null 2>&1 || { echo "make man needs scdoc: apt-get install scdoc" >&2; exit 1; }
	for p in $(MAN_PAGES); do $(SCDOC) < $$p.scd > $$p.tmp && mv $$p.tmp $$p || exit 1; done

# Is every page in man/ what scdoc makes of its source now?
check-man-fresh:
	./scripts/check-man-fresh

man-tree: $(MAN_TREE) $(MAN_LINKS)
$(B)/man/man1/nanoclock.1: man/nanoclock.1
	@mkdir -p $(dir $@)
	cp $< $@
$(B)/man/man3/nanoclock.3: man/nanoclock.3
	@mkdir -p $(dir $@)
	cp $< $@
$(MAN_LINKS): $(B)/man/man3/%.3:
	@mkdir -p $(dir $@)
	@echo '.so man3/nanoclock.3' > $@

# ---- tests (cmocka) ----
deps:
	@[ -n "$(NC_SKIP_DEPS)" ] || CC="$(CC)" ./scripts/install-test-deps

define TEST_RULE
$(B)/tests/$(basename $(notdir $(1))): $(1) $$(STATIC) | deps
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) -Itests -MMD -MP -MF $$@.dep $$(ALL_LDFLAGS) -o $$@ $$< $$(STATIC) -lcmocka $$(LIBS)
endef
$(foreach t,$(TEST_SRC),$(eval $(call TEST_RULE,$(t))))

# (.dep: the .d files of a build directory from before the tests moved
# into areas name sources that are gone)
-include $(TEST_BIN:=.dep) $(EXAMPLE_BIN:=.d)

$(B)/tests/cpp%-clang: tests/api/test_cpp.cpp $(STATIC) $(HEADERS) include/nanoclock.hpp | deps
	@mkdir -p $(dir $@)
	clang++ -std=c++$* -Iinclude -Itests $(CXXWARN) $(SANFLAGS) $(CFLAGS) -pthread -o $@ $< $(STATIC) -lcmocka $(LIBS) $(LDFLAGS)

$(B)/tests/cpp%: tests/api/test_cpp.cpp $(STATIC) $(HEADERS) include/nanoclock.hpp | deps
	@mkdir -p $(dir $@)
	$(NC_CXX) -std=c++$* -Iinclude -Itests $(CXXWARN) $(SANFLAGS) $(CFLAGS) -pthread -o $@ $< $(STATIC) -lcmocka $(LIBS) $(LDFLAGS)

tests: $(TEST_BIN) $(CPP_TEST_BIN) $(TOOL) $(EXAMPLE_BIN) $(EXAMPLE_CXX_BIN)

# The symbol check reads the release shared library: skipped under
# sanitizers (instrumentation adds symbols of its own); it runs for cross
# targets too (their nm).  The version check reads sources: native only.
# The tests share a calibration record of their own, new for each run
# (the first program writes it, the others adopt it), never the user's.
check: tests $(if $(SANITIZE),,$(SHARED))
	@pass=0; fail=0; failed=""; logs=$(B)/logs; rm -rf $$logs; mkdir -p $$logs; \
	logrun() { n=$$1; shift; { "$$@"; echo $$? > $$logs/$$n.rc; } 2>&1 | tee $$logs/$$n.log; \
		r=$$(cat $$logs/$$n.rc); [ "$$r" = 0 ] || failed="$$failed $$n"; return $$r; }; \
	rm -f $(B)/shared-record $(B)/shared-record.new; \
	NANOCLOCK_SHARED=$(abspath $(B))/shared-record; export NANOCLOCK_SHARED; \
	for t in $(TEST_BIN) $(CPP_TEST_BIN); do \
		echo "== $$t"; t0=$$(date +%s); \
		if logrun $$(basename $$t) env NC_TEST_RUN="$(RUN)" timeout $(TEST_TIMEOUT) $(RUN) $$t; \
		then pass=$$((pass+1)); \
		else fail=$$((fail+1)); echo "FAILED: $$t"; fi; \
		echo "== $$t: $$(($$(date +%s) - t0)) s"; \
	done; \
	echo "== tool smoke test"; \
	if $(RUN) ./$(TOOL) info --json > $(B)/info.json && grep -q '"candidates"' $(B)/info.json; then \
		pass=$$((pass+1)); else fail=$$((fail+1)); echo "FAILED: nanoclock info --json"; fi; \
	for e in $(EXAMPLE_BIN) $(EXAMPLE_CXX_BIN); do \
		if $(RUN) $$e > /dev/null; then pass=$$((pass+1)); else fail=$$((fail+1)); echo "FAILED: $$e"; fi; \
	done; \
	if [ -z "$(RUN)" ]; then \
		if ./scripts/check-inline "$(CC)"; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
		if ./scripts/check-hygiene $(B); then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
		if ./scripts/check-bind-now $(B) "$(BIND_NOW)" "$(LDFLAGS)"; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
		if ./scripts/check-layers $(B); then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
		if ./scripts/check-paths; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
		if ./tests/tool/test_install_deps.sh; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
		if logrun check-man-fresh ./scripts/check-man-fresh; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
		if ./scripts/check-guarantees; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
	fi; \
	if [ -z "$(SANITIZE)" ]; then \
		if ./scripts/check-symbols "$(SHARED)" "$(CC)"; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
	fi; \
	if [ -z "$(SANITIZE)$(RUN)" ]; then \
		if ./scripts/check-version; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
	fi; \
	if [ -z "$(RUN)" ]; then \
		echo "== tests/tool/test_help.sh"; \
		if logrun test_help.sh ./tests/tool/test_help.sh ./$(TOOL); then pass=$$((pass+1)); \
		else fail=$$((fail+1)); echo "FAILED: tests/tool/test_help.sh"; fi; \
		echo "== scripts/check-doc-samples"; \
		if CC="$(CC)" NC_CFLAGS="$(SANFLAGS) $(MODEFLAGS)" ./scripts/check-doc-samples ./$(TOOL); \
		then pass=$$((pass+1)); \
		else fail=$$((fail+1)); echo "FAILED: scripts/check-doc-samples"; fi; \
	fi; \
	echo "== tests/tool/test_cli.sh"; \
	if logrun test_cli.sh env RUN="$(RUN)" NC_TEST_SANITIZE="$(SANITIZE)" NC_TEST_MODE="$(MODE)" \
	    ./tests/tool/test_cli.sh ./$(TOOL); then pass=$$((pass+1)); \
	else fail=$$((fail+1)); echo "FAILED: tests/tool/test_cli.sh"; fi; \
	if [ -z "$(RUN)" ]; then \
		echo "== tests/tool/test_daemon.sh"; \
		if logrun test_daemon.sh ./tests/tool/test_daemon.sh ./$(TOOL); then pass=$$((pass+1)); \
		else fail=$$((fail+1)); echo "FAILED: tests/tool/test_daemon.sh"; fi; \
		echo "== tests/tool/test_trace_export.sh (babeltrace2, protoc, DevTools' model)"; \
		if logrun test_trace_export.sh ./tests/tool/test_trace_export.sh ./$(TOOL) ./$(B)/examples/trace_pc; \
		then pass=$$((pass+1)); \
		else fail=$$((fail+1)); echo "FAILED: tests/tool/test_trace_export.sh"; fi; \
		echo "== tests/tool/test_outputs.sh (-o and --plot over each kind of thing, as root and nobody)"; \
		if logrun test_outputs.sh ./tests/tool/test_outputs.sh ./$(TOOL); then pass=$$((pass+1)); \
		else fail=$$((fail+1)); echo "FAILED: tests/tool/test_outputs.sh"; fi; \
	fi; \
	if [ -z "$(RUN)$(SANITIZE)" ]; then \
		echo "== tests/tool/test_lttng.sh (the LTTng-UST clock plugin: lttng-sessiond, babeltrace2)"; \
		if logrun test_lttng.sh env CC="$(CC)" ./tests/tool/test_lttng.sh $(B) ./$(TOOL); then pass=$$((pass+1)); \
		else fail=$$((fail+1)); echo "FAILED: tests/tool/test_lttng.sh"; fi; \
	fi; \
	echo "test programs: $$pass passed, $$fail failed"; \
	for n in $$failed; do echo "== failed: $$n, its last lines ($$logs/$$n.log):"; \
		tail -n 8 $$logs/$$n.log | sed 's/^/   /'; done; \
	NC_TEST_RUN="$(RUN)" NC_TEST_SANITIZE="$(SANITIZE)" ./scripts/test-summary $$logs || \
		fail=$$((fail+1)); \
	test $$fail -eq 0

# The cases that step and slew the machine's clock (tests/destructive.h):
# refused without NANOCLOCK_TEST_DESTRUCTIVE=1; the kernel's clock state
# saved first and put back after (scripts/check-destructive).
$(B)/tests/clockwatch: tests/clockwatch.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< -lm
check-destructive:
	@[ "$$NANOCLOCK_TEST_DESTRUCTIVE" = 1 ] && [ "$$(id -u)" = 0 ] || \
		{ NANOCLOCK_TEST_DESTRUCTIVE=$$NANOCLOCK_TEST_DESTRUCTIVE ./scripts/check-destructive $(B); exit 2; }
	$(MAKE) $(B)/tests/test_real_clock $(B)/tests/test_utc $(B)/tests/clockwatch
	RUN="$(RUN)" ./scripts/check-destructive $(B)
# make check while another process steps and slews the clock, as a time
# daemon may (scripts/check-disturbed; the same refusal and restore).
check-disturbed:
	./scripts/check-disturbed

# Cross-build for arm64, ppc64le, riscv64 and i686 and run every test under
# qemu-user (installs toolchains, qemu and the targets' cmocka as needed).
check-cross:
	./scripts/check-cross

# The fast path has no call but to nc_impl_*_slow (disassembly).
check-inline:
	./scripts/check-inline "$(CC)"

# The shared library exports the public nc_* functions and nothing else
# (nm -D), each declared in a public header and listed in debian/*.symbols.
check-symbols: $(SHARED)
	./scripts/check-symbols "$(SHARED)" "$(CC)"

# One version: the header's, in CMake, debian/changelog, the soname and the
# Debian package's name.
check-version:
	./scripts/check-version

# libFuzzer on the trace decoder (clang; installs it if missing).
fuzz-trace:
	./scripts/fuzz-trace $(FUZZ_SECONDS)

# The library's objects reference nothing that prints, exits or aborts.
check-hygiene: $(STATIC) $(SHARED)
	./scripts/check-hygiene $(B)

# valgrind memcheck over every test program and the tool, in a build of its
# own (-O1 -g, no sanitizer): errors, leaks, file descriptors left open.
check-valgrind:
	@[ -n "$(NC_SKIP_DEPS)" ] || ./scripts/install-test-deps valgrind
	$(MAKE) B=build/valgrind SANITIZE= CFLAGS="-O1 -g" NC_SKIP_DEPS=1 tests
	./scripts/check-valgrind build/valgrind

# libFuzzer harnesses (clang): NANOCLOCK_HZ and the numeric settings, the
# NANOCLOCK_* reader with a fuzzed environment, the tool's command line.
FUZZ_CC ?= clang
FUZZ_FLAGS := -std=gnu11 -Iinclude -Isrc -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -g -O1 $(WARN) -Werror \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_BIN := build/fuzz/fuzz_hz build/fuzz/fuzz_env build/fuzz/fuzz_cli
fuzz: $(FUZZ_BIN)
build/fuzz/fuzz_hz: fuzz/fuzz_hz.c fuzz/fuzz_util.h src/base/config.c src/base/config.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ fuzz/fuzz_hz.c src/base/config.c -lm
build/fuzz/fuzz_env: fuzz/fuzz_env.c fuzz/fuzz_util.h src/base/config.c src/base/config.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ fuzz/fuzz_env.c src/base/config.c -lm
build/fuzz/fuzz_cli: fuzz/fuzz_cli.c fuzz/fuzz_util.h tools/opts.c tools/opts.h tools/args.c \
		tools/args.h tools/bench_opts.c tools/bench/bench.h tools/help.c tools/help.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ fuzz/fuzz_cli.c tools/opts.c tools/args.c tools/bench_opts.c \
		tools/help.c -lm
# Each harness for FUZZ_SECONDS (CI: a short run) or FUZZ_RUNS executions.
FUZZ_SECONDS ?= 15
fuzz-run:
	@[ -n "$(NC_SKIP_DEPS)" ] || ./scripts/install-test-deps clang
	$(MAKE) fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) ./scripts/fuzz-run

# The CI build matrix (gcc/clang x -O0/-O2, sanitizers, valgrind, -Werror).
check-matrix:
	./scripts/ci-matrix

# ---- install ----
# The paths written into nanoclock.pc and nanoclockConfig.cmake are the
# final ones (PREFIX, LIBDIR, INCDIR), never DESTDIR's staging directory.
# nanoclock.pc's Libs carry -Wl,-rpath,${libdir} when LIBDIR is not a
# directory the dynamic loader searches by default (/lib, /usr/lib, their
# lib64 and multiarch forms), e.g. PREFIX=$(HOME)/.local or /usr/local:
# a program built with `pkg-config --libs nanoclock` then starts without
# LD_LIBRARY_PATH or ldconfig.  PC_RPATH=yes or no decides it by hand.
PC_RPATH ?= auto
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
SYSTEM_LIBDIRS := /lib /usr/lib /lib64 /usr/lib64 $(if $(MULTIARCH),/lib/$(MULTIARCH) /usr/lib/$(MULTIARCH))
ifeq ($(PC_RPATH),auto)
PC_RPATH_FLAG := $(if $(filter $(patsubst %/,%,$(LIBDIR)),$(SYSTEM_LIBDIRS)),,-Wl$(comma)-rpath$(comma)$${libdir} )
else ifeq ($(PC_RPATH),yes)
PC_RPATH_FLAG := -Wl$(comma)-rpath$(comma)$${libdir} 
else ifeq ($(PC_RPATH),no)
PC_RPATH_FLAG :=
else
$(error PC_RPATH must be auto, yes or no)
endif
SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@PC_RPATH@|$(PC_RPATH_FLAG)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCDIR@|$(INCDIR)|g' \
	-e 's|@VERSION@|$(VERSION)|g' -e 's|@SOVERSION@|$(SOVERSION)|g' \
	-e "s|@SIZEOF_VOID_P@|$$(printf '' | $(CC) -dM -E - | sed -n 's/.*__SIZEOF_POINTER__ //p')|g"

# The LTTng-UST clock plugin: built and installed where LTTng-UST is (after
# SUBST, which it extends).
include plugins/lttng-ust/plugin.mk

install: all
	install -d $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(CMAKEDIR) $(DESTDIR)$(BINDIR)
	install -m 644 $(HEADERS) $(DESTDIR)$(INCDIR)/
	install -m 644 $(STATIC) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(SHARED) $(DESTDIR)$(LIBDIR)/
	ln -sf libnanoclock.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libnanoclock.so.$(SOVERSION)
	ln -sf libnanoclock.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libnanoclock.so
	install -m 755 $(TOOL) $(DESTDIR)$(BINDIR)/
	$(SUBST) nanoclock.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/nanoclock.pc
	$(SUBST) cmake/nanoclockConfig.cmake.in > $(DESTDIR)$(CMAKEDIR)/nanoclockConfig.cmake
	$(SUBST) cmake/nanoclockConfigVersion.cmake.in > $(DESTDIR)$(CMAKEDIR)/nanoclockConfigVersion.cmake
	$(if $(NOMAN),,install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3)
	$(if $(NOMAN),,install -m 644 man/nanoclock.1 $(DESTDIR)$(MANDIR)/man1/)
	$(if $(NOMAN),,install -m 644 man/nanoclock.3 $(MAN_LINKS) $(DESTDIR)$(MANDIR)/man3/)

uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCDIR)/,$(notdir $(HEADERS))) \
		$(DESTDIR)$(LIBDIR)/libnanoclock.* $(DESTDIR)$(PKGCONFIGDIR)/nanoclock.pc \
		$(DESTDIR)$(CMAKEDIR)/nanoclockConfig.cmake $(DESTDIR)$(CMAKEDIR)/nanoclockConfigVersion.cmake \
		$(DESTDIR)$(BINDIR)/nanoclock $(DESTDIR)$(MANDIR)/man1/nanoclock.1 \
		$(DESTDIR)$(MANDIR)/man3/nanoclock.3 $(API_NAMES:%=$(DESTDIR)$(MANDIR)/man3/%.3)
	-rmdir $(DESTDIR)$(CMAKEDIR) 2>/dev/null

clean:
	rm -rf build
