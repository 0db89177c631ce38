#!/bin/sh
# SPDX-License-Identifier: MIT
# The LTTng-UST clock plugin (plugins/lttng-ust), end to end: a session
# daemon of the test's own and tests/lttng/traced (one tracepoint
# provider) both load the plugin through LTTNG_UST_CLOCK_PLUGIN (the
# daemon writes the trace's metadata: the clock's name, uuid, frequency
# and offset come from its copy of the plugin), and babeltrace2 reads the
# trace back:
#   - the plugin exports lttng_ust_clock_plugin_init and nothing else;
#   - every event is there, once, in order;
#   - the metadata's clock is "nanoclock", with a version-8 uuid that is
#     not the boot id (LTTng's monotonic clock's) and is the same when
#     another daemon process computes it, at nanoclock info's rate (to the
#     two processes' stated uncertainties, doubled, plus the 1 Hz
#     rounding; exactly, rounded, when both are given it in NANOCLOCK_HZ),
#     and a description naming the counter, rate, uncertainty and source;
#   - each event's stamp, in cycles, IS nanoclock's counter: it lies
#     between the program's ordered reads taken just before it and just
#     before the next event;
#   - the first-to-last interval in the trace matches the program's own
#     nc_now_ns() interval within what both state (see below);
#   - converted to time (LTTng adds the clock's offset, measured by the
#     daemon, so the stamps are Unix time) the events lie between
#     CLOCK_REALTIME read by the program before the first and after the
#     last, within the offset's error (see below);
#   - with an OS clock (NANOCLOCK_COUNTER=clock_monotonic_raw, as
#     nanoclock's fallback) events are still stamped, at 1 GHz, inside the
#     program's CLOCK_MONOTONIC_RAW before/after, and the description says
#     it is an OS clock;
#   - when nc_init() fails (NANOCLOCK_COUNTER names no counter) events are
#     stamped all the same, and the description gives the error;
#   - without the plugin the clock is LTTng's own ("monotonic", uuid = the
#     boot id): what the checks above would see if the plugin did nothing.
# usage: tests/tool/test_lttng.sh [BUILD_DIR [TOOL]]     (make check runs it)
# Runs where LTTng is installed (CI installs it: scripts/install-test-deps
# lttng; make check does not); skips (exit 0, a SKIP[machine] line that
# scripts/test-summary counts) where it is missing, or where root's session daemon is
# already running and no mount namespace can hide it.
# Never leaves a daemon behind: every daemon it starts is stopped on exit.
set -u
cd "$(dirname "$0")/../.."
B=${1:-build}
TOOL=${2:-./$B/nanoclock}
N=${NC_LTTNG_EVENTS:-200}
GAP_US=100
# The tolerances are what the clocks state, with what this run measured,
# never a round figure:
#   - the interval: the trace converts cycles at the clock's freq, the
#     daemon's rate rounded to 1 Hz (its stated uncertainty, in the
#     description, and half a Hz); nc_now_ns() follows the program's
#     measured rate (its stated uncertainty) and slews toward
#     CLOCK_MONOTONIC_RAW at most 500 ppm (man 3); each nc_now_ns() was
#     read between two ordered counter reads, so its distance from its
#     event's stamp is at most the stamp less the read before it (the
#     first event's is the longest: LTTng's first tracepoint sets up its
#     buffers, 13 to 73 us here); and 1 ns of truncation at each
#     nc_now_ns();
#   - Unix time: the daemon measures the clock's offset to CLOCK_REALTIME
#     once, after it starts, from the narrowest of ten brackets of two
#     clock reads around CLOCK_REALTIME: its error is that bracket's half
#     width (the program measures the same bracket the same way), and then
#     the rate's: the daemon's stated uncertainty, half a Hz and how far
#     the kernel may be moving CLOCK_REALTIME's rate (adjtimex: frequency
#     and tick, the PLL's and adjtime()'s slews), over the time from the
#     daemon's start to the program's last read.  Measured
#     here (2-vCPU VM, printed below): every event inside, the first
#     1.3 to 73 us after "before" (LTTng's first tracepoint, on a busy
#     machine), the last 0.4 to 2.7 us before "after", against 300 to 650
#     ns allowed outside.
me=tests/tool/test_lttng.sh
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }
skip() { # [KIND] reason: judged by scripts/test-summary (tests/skip.h's kinds)
	kind=machine
	case $1 in cross) kind=$1 && shift ;; esac
	echo "SKIP[$kind]: $me: $*"
	echo "$me: 0 passed, 0 failed (skipped)"
	exit 0
}

have_lttng() {
	command -v lttng >/dev/null 2>&1 && command -v lttng-sessiond >/dev/null 2>&1 &&
		command -v babeltrace2 >/dev/null 2>&1 &&
		printf '#include <lttng/ust-clock.h>\n#include <lttng/tracepoint.h>\n' |
		${CC:-cc} -E -x c - >/dev/null 2>&1
}

if [ -z "${NC_LTTNG_NS:-}" ]; then
	# a cross build run natively (check-cross's i686): the program is the
	# target's, the session daemon this machine's, and Debian's lttng-tools
	# ships a consumer daemon for its own architecture only (not
	# co-installable with another's): nothing here can trace it, whatever
	# is installed; the plugin is tested by the native build.  A cross
	# build is one whose compiler targets another machine than this one's
	# (not merely one that says so: NC_CROSS_TARGET alone excuses nothing)
	target=$(${CC:-cc} -dumpmachine 2>/dev/null || echo unknown)
	native=$(cc -dumpmachine 2>/dev/null || echo unknown)
	if [ -n "${NC_CROSS_TARGET:-}" ] && [ "$target" != "$native" ]; then
		skip cross "a cross build ($target, on $native): this machine's LTTng session" \
			"daemon has a consumer for $native programs only (Debian's lttng-tools is one" \
			"architecture's); the plugin is tested in the native build"
	fi
	# not installed by make check (45 packages for one test): CI installs
	# them (scripts/install-test-deps lttng)
	have_lttng || skip "LTTng-UST, lttng-tools or babeltrace2 is not installed (scripts/install-test-deps lttng)"
	# A root session daemon lives in /run/lttng and its apps' wait page in
	# /dev/shm, whatever LTTNG_HOME says: run in a mount namespace of our
	# own with both private, so that a daemon of the system's (or of
	# another test run) neither sees our program nor is disturbed.
	if [ "$(id -u)" = 0 ]; then
		if unshare -m --propagation private true 2>/dev/null; then
			NC_LTTNG_NS=1 exec unshare -m --propagation private sh tests/tool/test_lttng.sh "$B" "$TOOL"
		fi
		if [ -e /run/lttng/sessiond.pid ] || [ -S /run/lttng/client-lttng-sessiond ]; then
			skip "root's session daemon is running (/run/lttng) and no mount namespace can be made to test beside it"
		fi
	fi
elif [ "$NC_LTTNG_NS" = 1 ]; then
	if ! mount -t tmpfs nc-lttng-run /run || ! mount -t tmpfs nc-lttng-shm /dev/shm; then
		bad "cannot mount private /run and /dev/shm in the namespace"
		exit 1
	fi
fi

w=$(mktemp -d "${TMPDIR:-/tmp}/nc-lttng-XXXXXX")
daemons=""
# SIGTERM: a daemon stops its consumer daemons and exits; wait for it (10 s),
# then SIGKILL
stop_daemons() {
	for p in "$@"; do
		kill "$p" 2>/dev/null
		i=0
		while kill -0 "$p" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] &&
			[ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$p" 2>/dev/null
	done
}
cleanup() {
	# shellcheck disable=SC2086 # one word per pid
	stop_daemons $daemons
	rm -rf "$w"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

echo "$me: building the plugin and the traced program (make B=$B lttng-test)"
if ! make --no-print-directory B="$B" lttng-test >"$w/build.log" 2>&1; then
	cat "$w/build.log"
	bad "make lttng-test"
	exit 1
fi
PLUGIN=$(pwd)/$B/plugins/liblttng-ust-clock-nanoclock.so
TRACED=./$B/tests/lttng/traced

exports=$(nm -D --defined-only "$PLUGIN" | awk '{ print $NF }' | sort | paste -sd' ' -)
if [ "$exports" = lttng_ust_clock_plugin_init ]; then
	ok "the plugin exports lttng_ust_clock_plugin_init only"
else
	bad "the plugin exports: $exports"
fi

boot_id=$(cat /proc/sys/kernel/random/boot_id)

# run NAME PLUGIN(or "") ENV...: a daemon of its own, a session, the
# program traced, the daemon stopped.  Leaves $w/NAME.out (the program's
# "key value" lines), $w/NAME.meta (the CTF metadata), $w/NAME.cyc and
# $w/NAME.sec (babeltrace2's text with stamps in cycles and in seconds).
run() {
	name=$1 plugin=$2
	shift 2
	home=$w/$name.home
	mkdir -p "$home"
	# shellcheck disable=SC2030,SC2031 # each subshell sets its own
	(
		export LTTNG_HOME="$home"
		[ -z "$plugin" ] || export LTTNG_UST_CLOCK_PLUGIN="$plugin"
		for e in "$@"; do export "${e?}"; done
		# before the daemon measures its clock's offset to CLOCK_REALTIME
		date +%s%N >"$w/$name.launch"
		lttng-sessiond --no-kernel --daemonize >"$w/$name.sessiond.log" 2>&1
	) || { bad "$name: lttng-sessiond did not start: $(tail -3 "$w/$name.sessiond.log")"; return 1; }
	# its pid: from its pid file (root's run directory, or LTTNG_HOME's),
	# else the daemon whose environment holds our LTTNG_HOME
	if [ "$(id -u)" = 0 ]; then pidf=/run/lttng/lttng-sessiond.pid; else pidf=$home/.lttng/lttng-sessiond.pid; fi
	pid=$(cat "$pidf" 2>/dev/null)
	if [ -z "$pid" ]; then
		for p in $(pgrep -x lttng-sessiond); do
			tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "LTTNG_HOME=$home" && pid="$pid $p"
		done
	fi
	daemons="$daemons $pid"
	[ -n "$pid" ] || { bad "$name: no $pidf, and no daemon of ours found"; return 1; }
	rc=0
	# shellcheck disable=SC2030,SC2031
	(
		export LTTNG_HOME="$home"
		set -e
		lttng create "nc-$name" --output="$w/$name.trace" >/dev/null
		lttng enable-event --userspace 'nanoclock_test:*' >/dev/null
		lttng start >/dev/null
		# wait for the daemon's registration (it is already up): the
		# events from the first one on are recorded
		# shellcheck disable=SC2086
		env LTTNG_UST_REGISTER_TIMEOUT=-1 ${plugin:+LTTNG_UST_CLOCK_PLUGIN=$plugin} "$@" \
			timeout 60 "$TRACED" "$N" "$GAP_US" >"$w/$name.out"
		lttng stop >/dev/null
		lttng destroy >/dev/null
	) >"$w/$name.lttng.log" 2>&1 || rc=1
	# stop the daemon now: the next run starts its own
	# shellcheck disable=SC2086 # one word per pid
	stop_daemons $pid
	daemons=""
	if [ $rc -ne 0 ]; then
		bad "$name: the session failed: $(tail -5 "$w/$name.lttng.log")"
		return 1
	fi
	meta=$(find "$w/$name.trace" -name metadata | head -1)
	[ -n "$meta" ] || { bad "$name: no metadata in $w/$name.trace"; return 1; }
	if ! babeltrace2 --output-format=ctf-metadata "$(dirname "$meta")" >"$w/$name.meta" 2>"$w/$name.err" ||
		! babeltrace2 --clock-cycles "$w/$name.trace" >"$w/$name.cyc" 2>>"$w/$name.err" ||
		! babeltrace2 --clock-seconds "$w/$name.trace" >"$w/$name.sec" 2>>"$w/$name.err"; then
		bad "$name: babeltrace2: $(head -3 "$w/$name.err")"
		return 1
	fi
	return 0
}

val() { awk -v k="$2" '$1 == k { print $2 }' "$w/$1.out"; }
# the clock's field from the metadata's clock block: name, uuid, freq, description
clock_field() {
	awk -v k="$2" '/^clock \{/ { c = 1 } c && $1 == k {
		sub(/^[^=]*= */, ""); sub(/ *\/\*.*\*\/ *$/, ""); sub(/;$/, ""); gsub(/"/, ""); print; exit } c && /^\};/ { c = 0 }' "$w/$1.meta"
}
# "cycles seq ticks" per event
events() {
	awk '{ c = $1; gsub(/[^0-9]/, "", c)
		match($0, /seq = [0-9]+/); s = substr($0, RSTART + 6, RLENGTH - 6)
		match($0, /ticks = [0-9]+/); t = substr($0, RSTART + 8, RLENGTH - 8)
		print c, s, t }' "$w/$1.cyc"
}

# events NAME: all N, in order, each stamp after its own read and before
# the next event's (cycles vs the program's ticks): "in" bounds the stamps
# to this counter
check_events() {
	name=$1
	events "$name" >"$w/$name.ev"
	n=$(wc -l <"$w/$name.ev")
	if [ "$n" -eq "$N" ] && awk '$2 != NR - 1 { exit 1 }' "$w/$name.ev"; then
		ok "$name: all $N events, in order"
	else
		bad "$name: $n events (want $N, seq 0..$((N - 1)))"
		return
	fi
	end=$(val "$name" ticks_end)
	# cycles[i] in [ticks[i], ticks[i+1]] (the last: [ticks, ticks_end]);
	# both reads are ordered, LTTng's is between them in program order
	r=$(awk -v end="$end" '{ c[NR] = $1; t[NR] = $3 } END {
		bad = 0; maxd = 0; mind = -1
		for (i = 1; i <= NR; i++) {
			hi = i < NR ? t[i + 1] : end
			if (c[i] < t[i] || c[i] > hi || (i > 1 && c[i] <= c[i - 1])) bad++
			d = c[i] - t[i]; if (d > maxd) maxd = d; if (mind < 0 || d < mind) mind = d
		}
		printf "%d %.0f %.0f\n", bad, mind, maxd }' "$w/$name.ev")
	# shellcheck disable=SC2086 # three numbers
	set -- $r
	if [ "$1" -eq 0 ]; then
		ok "$name: every stamp is nanoclock's counter, between the program's reads around it ($2..$3 ticks after the read before it), increasing"
	else
		bad "$name: $1 of $N stamps outside the program's reads around them, or not increasing (after the read by $2..$3 ticks)"
	fi
}

# ---- with the plugin: the hardware counter (as nanoclock chooses it) ----
"$TOOL" info --json >"$w/info.json" 2>/dev/null || bad "nanoclock info --json"
info_hz=$(sed -n 's/^ *"hz": \([0-9.]*\),$/\1/p' "$w/info.json" | head -1)
info_ppm=$(sed -n 's/^ *"hz_uncertainty_ppm": \([0-9.e+-]*\),$/\1/p' "$w/info.json" | head -1)
info_counter=$(sed -n 's/^ *"counter": "\([^"]*\)",$/\1/p' "$w/info.json" | head -1)

if run plugin "$PLUGIN"; then
	name=$(clock_field plugin name)
	uuid=$(clock_field plugin uuid)
	freq=$(clock_field plugin freq)
	desc=$(clock_field plugin description)
	echo "  clock: name $name, uuid $uuid, freq $freq"
	echo "  description: $desc"
	echo "  nanoclock info: $info_counter at $info_hz Hz +-$info_ppm ppm"
	if [ "$name" = nanoclock ]; then ok "plugin: the clock is named nanoclock"; else bad "plugin: the clock is named '$name'"; fi
	if echo "$uuid" | grep -Eq '^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' &&
		[ "$uuid" != "$boot_id" ]; then
		ok "plugin: uuid $uuid is a version-8 uuid, not the boot id $boot_id"
	else
		bad "plugin: uuid '$uuid' (boot id $boot_id)"
	fi
	# the description's uncertainty: "+-X ppm"
	dppm=$(echo "$desc" | sed -n 's/.*+-\([0-9.e+-]*\) ppm.*/\1/p')
	if awk -v f="$freq" -v h="$info_hz" -v a="$dppm" -v b="$info_ppm" 'BEGIN {
		tol = 2 * h * (a + b) * 1e-6 + 1; d = f - h; if (d < 0) d = -d
		printf "  freq - nanoclock info'\''s rate: %.1f Hz (allowed %.1f: twice both processes'\'' stated uncertainties + 1 Hz)\n", f - h, tol
		exit !(f == int(f) && d <= tol) }'; then
		ok "plugin: freq $freq Hz is nanoclock info's rate $info_hz Hz rounded, to twice the stated uncertainties"
	else
		bad "plugin: freq '$freq' vs nanoclock info's $info_hz Hz (+-$info_ppm ppm; plugin +-$dppm ppm)"
	fi
	case $desc in
	*"counter $info_counter read inline"*"$freq Hz"*"ppm, rate "*) ok "plugin: the description names the counter, rate, uncertainty and source" ;;
	*) bad "plugin: description '$desc'" ;;
	esac
	check_events plugin
	# the interval: trace (cycles / freq) vs the program's nc_now_ns, to
	# what both state (above)
	f0=$(val plugin nc_first_ns)
	f1=$(val plugin nc_last_ns)
	if awk -v f="$freq" -v a="$f0" -v b="$f1" -v dppm="$dppm" -v pppm="$(val plugin ppm)" \
		-v p0="$(val plugin ticks_pre_first)" -v p1="$(val plugin ticks_pre_last)" '{ c[NR] = $1 } END {
		tr = (c[NR] - c[1]) / f * 1e9; pg = b - a; d = tr - pg; if (d < 0) d = -d
		rates = tr * (dppm * 1e-6 + 0.5 / f) + pg * (pppm + 500) * 1e-6
		w0 = (c[1] - p0) / f * 1e9; w1 = (c[NR] - p1) / f * 1e9; pos = w0 > w1 ? w0 : w1
		tol = rates + pos + 2
		printf "  first to last event: trace %.0f ns, program (nc_now_ns) %.0f ns, differ by %.0f ns (allowed %.0f: the rates %.0f (+-%s ppm, +-%s ppm and 500 ppm of slew), each nc_now_ns before its stamp by up to %.0f and %.0f, 2 of truncation)\n", tr, pg, d, tol, rates, dppm, pppm, w0, w1
		exit !(d <= tol) }' "$w/plugin.ev"; then
		ok "plugin: the trace's first-to-last interval is the program's nc_now_ns interval, to what both state"
	else
		bad "plugin: the trace's interval differs from the program's by more than both state"
	fi
	# Unix time: the offset LTTng adds makes the stamps CLOCK_REALTIME's,
	# to the offset's error (above)
	r0=$(val plugin realtime_before)
	r1=$(val plugin realtime_after)
	# (to the ns: a double holds ns only within 100 days, so every time is
	# taken relative to the second of r0, split as strings)
	if awk -v r0="$r0" -v r1="$r1" -v launch="$(cat "$w/plugin.launch")" -v f="$freq" -v dppm="$dppm" \
		-v kppm="$(val plugin kernel_ppm)" -v br="$(val plugin offset_bracket_ticks)" '
	function rel(s, n) { return (substr(s, 1, length(s) - 9) - base) * 1e9 + substr(s, length(s) - 8) }
	BEGIN { base = substr(r0, 1, length(r0) - 9) }
	{
		s = substr($1, 2, length($1) - 2); split(s, p, ".")
		ns = (p[1] - base) * 1e9 + p[2]
		if (NR == 1) first = ns; last = ns }
	END {
		age = rel(r1) - rel(launch)
		hw = br / 2 / f * 1e9
		tol = hw + age * (dppm * 1e-6 + 0.5 / f + kppm * 1e-6) + 2
		before = rel(r0) - first; after = last - rel(r1)
		printf "  first event %.3f us after the program'\''s CLOCK_REALTIME before, last %.3f us before its after (outside by at most %.0f ns allowed: the offset bracket'\''s half width %.0f, and +-%s ppm, half a Hz and the kernel'\''s +-%s ppm over the %.3f s since the daemon started)\n", -before / 1e3, -after / 1e3, tol, hw, dppm, kppm, age / 1e9
		exit !(before <= tol && after <= tol) }' "$w/plugin.sec"; then
		ok "plugin: the events' Unix times lie between the program's CLOCK_REALTIME before and after, to the offset's error"
	else
		bad "plugin: the events' Unix times are outside the program's CLOCK_REALTIME before/after by more than the offset's error"
	fi
fi

# ---- the same again, computed by another daemon and program: the same uuid ----
if run plugin2 "$PLUGIN"; then
	uuid2=$(clock_field plugin2 uuid)
	if [ -n "$uuid2" ] && [ "$uuid2" = "${uuid:-}" ]; then
		ok "plugin: another daemon process gives the same uuid (boot id + counter)"
	else
		bad "plugin: another daemon process gives uuid '$uuid2', the first '${uuid:-}'"
	fi
fi

# ---- the rate stated (NANOCLOCK_HZ = nanoclock info's): the clock's freq is
# that rate rounded, exactly (two calibrations agree only to their
# uncertainty; a stated rate that the measurement confirms is used as is) ----
if [ -n "$info_hz" ] && run stated "$PLUGIN" NANOCLOCK_HZ="$info_hz"; then
	freq=$(clock_field stated freq)
	desc=$(clock_field stated description)
	want=$(awk -v h="$info_hz" 'BEGIN { printf "%.0f", h }')
	echo "  description: $desc"
	if [ "$freq" = "$want" ]; then
		ok "stated: freq $freq Hz is nanoclock info's rate $info_hz Hz rounded to 1 Hz"
	else
		bad "stated: freq '$freq', want $want (nanoclock info's $info_hz Hz rounded)"
	fi
	case $desc in
	*"rate env NANOCLOCK_HZ"*) ok "stated: the description gives the rate's source (env NANOCLOCK_HZ)" ;;
	*) bad "stated: description '$desc' (want the source env NANOCLOCK_HZ)" ;;
	esac
fi

# ---- nanoclock on an OS clock (its fallback): still stamped ----
if run os "$PLUGIN" NANOCLOCK_COUNTER=clock_monotonic_raw; then
	name=$(clock_field os name)
	freq=$(clock_field os freq)
	desc=$(clock_field os description)
	uuid3=$(clock_field os uuid)
	echo "  clock: name $name, uuid $uuid3, freq $freq"
	echo "  description: $desc"
	if [ "$name" = nanoclock ] && [ "$freq" = 1000000000 ] && [ "$uuid3" != "${uuid:-}" ]; then
		ok "os: the clock is nanoclock at 1 GHz, with a uuid of its own (another counter)"
	else
		bad "os: clock $name at $freq Hz, uuid $uuid3"
	fi
	case $desc in
	*"counter clock_monotonic_raw, an OS clock"*) ok "os: the description says it is an OS clock" ;;
	*) bad "os: description '$desc'" ;;
	esac
	check_events os
	m0=$(val os monoraw_before)
	m1=$(val os monoraw_after)
	if awk -v a="$m0" -v b="$m1" '$1 < a || $1 > b { bad++ } END { exit bad > 0 }' "$w/os.ev"; then
		ok "os: every stamp lies between the program's CLOCK_MONOTONIC_RAW before and after"
	else
		bad "os: stamps outside the program's CLOCK_MONOTONIC_RAW [$m0, $m1]"
	fi
fi

# ---- nc_init() fails (a forced counter that does not exist): the library
# runs on its own best counter, and the plugin with it ----
if run initfail "$PLUGIN" NANOCLOCK_COUNTER=no_such_counter; then
	name=$(clock_field initfail name)
	desc=$(clock_field initfail description)
	echo "  description: $desc"
	case $desc in
	*"nc_init failed ("*) ok "initfail: the clock is $name, the description says nc_init failed" ;;
	*) bad "initfail: description '$desc' (want the nc_init error)" ;;
	esac
	[ "$name" = nanoclock ] || bad "initfail: the clock is '$name'"
	check_events initfail
fi

# ---- without the plugin: LTTng's own clock (so the checks above can fail) ----
if run default ""; then
	name=$(clock_field default name)
	uuid4=$(clock_field default uuid)
	if [ "$name" = monotonic ] && [ "$uuid4" = "$boot_id" ]; then
		ok "default: without the plugin the clock is LTTng's monotonic (uuid = boot id)"
	else
		bad "default: without the plugin the clock is '$name', uuid '$uuid4'"
	fi
	n=$(wc -l <"$w/default.cyc")
	if [ "$n" -eq "$N" ]; then ok "default: all $N events"; else bad "default: $n events"; fi
fi

# ---- a plugin path that cannot be loaded: LTTng-UST falls back to its own
# clock silently, so the session's clock is LTTng's, and `nanoclock info`
# (where users look) says the path cannot be opened ----
if run missing /nonexistent/liblttng-ust-clock-nanoclock.so; then
	name=$(clock_field missing name)
	[ "$name" = monotonic ] && ok "missing: a plugin path that does not exist gives LTTng's clock (silently)" ||
		bad "missing: the clock is '$name'"
fi
line=$(LTTNG_UST_CLOCK_PLUGIN=/nonexistent/liblttng-ust-clock-nanoclock.so "./$B/nanoclock" info | grep '^lttng plugin')
case $line in
*"cannot be opened (No such file or directory)"*"its own clock"*) ok "missing: nanoclock info says so: $line" ;;
*) bad "missing: nanoclock info says '$line'" ;;
esac
line=$(LTTNG_UST_CLOCK_PLUGIN=$PLUGIN "./$B/nanoclock" info | grep '^lttng plugin')
case $line in
*": a shared object"*) ok "the built plugin: nanoclock info finds it" ;;
*) bad "the built plugin: nanoclock info says '$line'" ;;
esac

echo "$me: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
