# SPDX-License-Identifier: MIT
# The LTTng-UST clock plugin (plugins/lttng-ust/nanoclock-lttng-ust.c),
# included by the top Makefile.  Built, and installed by `make install` to
# $(LIBDIR)/nanoclock/, only where LTTng-UST 2.13 or later is installed for
# CC (<lttng/ust-clock.h> and liblttng-ust-common; Debian: liblttng-ust-dev)
# and without sanitizers (the plugin is dlopen()ed by programs that are
# not instrumented).  `make lttng-plugin` builds it; `make lttng-test` also
# builds tests/lttng/'s traced program (tests/tool/test_lttng.sh runs it).
#
# The .so is self-contained: nanoclock comes from the static archive, whose
# objects are position-independent (-fPIC in BASE_CFLAGS), with its symbols
# made local (--exclude-libs), so it exports lttng_ust_clock_plugin_init
# and nothing else and never binds to a libnanoclock of the application.
# It links liblttng-ust-common, which defines the lttng_ust_trace_clock_*
# setters: -z defs then proves nothing else is left undefined, and the
# Debian package gets its dependency from it.

LTTNG_PLUGIN := $(B)/plugins/liblttng-ust-clock-nanoclock.so
LTTNG_PLUGIN_OBJ := $(B)/plugins/lttng-ust/nanoclock-lttng-ust.o
LTTNG_PLUGIN_DIR := $(LIBDIR)/nanoclock
LTTNG_TRACED := $(B)/tests/lttng/traced

# Can CC compile against <lttng/ust-clock.h> and link liblttng-ust-common?
# (A link, not only the header: a cross compiler or LTTng-UST < 2.13 lacks it.)
nc_hash := \#
HAVE_LTTNG_UST := $(if $(SANITIZE),,$(shell printf '$(nc_hash)include <lttng/ust-clock.h>\nint main(void){return lttng_ust_enable_trace_clock_override();}\n' | \
	$(CC) $(CPPFLAGS) $(CFLAGS) -x c - $(LDFLAGS) -llttng-ust-common -o /dev/null >/dev/null 2>&1 && echo yes))

.PHONY: lttng-plugin lttng-test install-lttng-plugin uninstall-lttng-plugin

# The .pc's lttng_ust_clock_plugin variable is commented out where the
# plugin is not built (the comment says why), so that it never names a
# file that was not installed.  CMakeLists.txt (which does not build the
# plugin) does the same.
PC_LTTNG := $(if $(HAVE_LTTNG_UST),,$(nc_hash) not built (no LTTng-UST 2.13 for the compiler): )
SUBST += -e 's|@PC_LTTNG@|$(PC_LTTNG)|g'

ifeq ($(HAVE_LTTNG_UST),yes)
all: $(LTTNG_PLUGIN)
install: install-lttng-plugin
endif
uninstall: uninstall-lttng-plugin

lttng-plugin: $(LTTNG_PLUGIN)

-include $(LTTNG_PLUGIN_OBJ:.o=.d)

# (the object comes from the generic $(B)/%.o rule: -fPIC -fvisibility=hidden)
$(LTTNG_PLUGIN): $(LTTNG_PLUGIN_OBJ) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) -shared $(BIND_NOW) $(ALL_LDFLAGS) -Wl,--exclude-libs,ALL -Wl,-z,defs -o $@ $(LTTNG_PLUGIN_OBJ) \
		$(STATIC) -llttng-ust-common $(LIBS)

# The tests' traced program: one tracepoint provider, linked with nanoclock
# (its payload carries the program's own counter reads), with the
# project's warnings (LTTng's macros expand clean under them, gcc and clang).
LTTNG_TRACED_SRC := tests/lttng/traced.c tests/lttng/tp.c
$(LTTNG_TRACED): $(LTTNG_TRACED_SRC) tests/lttng/tp.h $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Iinclude -Itests/lttng -D_GNU_SOURCE -pthread $(WARN) $(MODEFLAGS) $(CPPFLAGS) $(CFLAGS) \
		$(ALL_LDFLAGS) -o $@ $(LTTNG_TRACED_SRC) $(STATIC) -llttng-ust -ldl $(LIBS)

lttng-test: $(LTTNG_PLUGIN) $(LTTNG_TRACED)

install-lttng-plugin: $(LTTNG_PLUGIN)
	install -d $(DESTDIR)$(LTTNG_PLUGIN_DIR)
	install -m 644 $(LTTNG_PLUGIN) $(DESTDIR)$(LTTNG_PLUGIN_DIR)/

uninstall-lttng-plugin:
	rm -f $(DESTDIR)$(LTTNG_PLUGIN_DIR)/liblttng-ust-clock-nanoclock.so
	-rmdir $(DESTDIR)$(LTTNG_PLUGIN_DIR) 2>/dev/null
