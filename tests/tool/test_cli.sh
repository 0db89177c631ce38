#!/bin/sh
# SPDX-License-Identifier: MIT
# Bad input everywhere, through the tool: every option and every
# environment variable with empty, garbage, huge, negative, NaN and
# overlong values.  Each must give exactly one line on stderr and a
# non-zero exit (2: bad command line; 4: nc_init() refused a NANOCLOCK_*
# setting, the command's output still printed), never a crash.
#   tests/tool/test_cli.sh path/to/nanoclock      (RUN="qemu-aarch64 -L /" to emulate)
# Under emulation (RUN set) every third case only: a run of the tool costs
# ~0.5 s under qemu, and the parsers are portable C, fuzzed natively.
set -u
TOOL=${1:?usage: tests/tool/test_cli.sh path/to/nanoclock}
RUN=${RUN:-}
quick=${NC_CLI_QUICK:-}
[ -z "$RUN" ] || quick=1
seq_no=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
long=$(printf '9%.0s' $(seq 1 300))             # 300 nines: 10^300 - 1
longtext=$(printf 'x%.0s' $(seq 1 5000))        # 5000 characters
nl='a
b'                                              # a newline inside the value

# expect STATUS(es) DESCRIPTION -- command...: stderr must be one line
expect() {
	want=$1 desc=$2
	shift 3
	seq_no=$((seq_no + 1))
	if [ -n "$quick" ] && [ $((seq_no % 3)) != 1 ]; then
		st=skipped
		: >"$tmp/out"
		return 0
	fi
	"$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	lines=$(wc -l <"$tmp/err")
	chars=$(wc -c <"$tmp/err")
	ok=1
	case " $want " in *" $st "*) ;; *) ok=0 ;; esac
	if [ "$st" != 0 ]; then
		# exactly one non-empty line, ending in a newline
		[ "$lines" -eq 1 ] && [ "$chars" -gt 1 ] || ok=0
	fi
	if [ $ok = 1 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $desc: exit $st (want $want), $lines stderr lines:"
		head -c 600 "$tmp/err" | sed 's/^/    /'
	fi
}

opt() { # options that must be refused: exit 2, one line, nothing on stdout
	expect 2 "nanoclock $*" -- env -u NANOCLOCK_HZ $RUN "$TOOL" "$@"
	if [ "$st" != skipped ] && [ -s "$tmp/out" ]; then
		fail=$((fail + 1))
		echo "FAIL: nanoclock $*: printed on stdout despite the error"
	fi
}

# ---- the command line ----
opt ""
opt bogus
opt "$longtext"
opt "$nl"
opt help check
opt --help info
opt --version extra
opt info --bogus
opt info --json extra
opt info ""
opt now --bogus
opt now ""
opt now "$nl"
opt check --bogus
opt check --method
opt check --method ""
opt check --method bogus
opt check --method "$longtext"
for o in --probes --rounds; do
	opt check $o
	for v in "" abc -1 0 1.5 nan NaN inf -inf 1e9 1e400 0x10 "$long" "$longtext" "$nl" "+" " 5" "5 "; do
		opt check $o "$v"
	done
done
opt bench bogus
opt bench ""
opt bench "$longtext"
opt bench --bogus
opt bench --runs 5
opt bench --quick extra
opt bench init --quick
opt bench sync --idle 1
opt bench unix --threads 2
opt bench stress --calls 1000000
opt bench latency --seconds 1
opt bench trace --runs 3
opt bench --seconds 5
opt bench --plot
opt bench --plot ""
opt bench --init-once --quick
opt bench --floor-once --quick
opt bench unix --plot /tmp
opt trace
opt trace bogus
opt trace stats
opt trace export
opt trace export --format bogus /dev/null
opt trace demo
for sub in init sync; do
	opt bench $sub --runs
	for v in "" abc -1 0 nan 1e400 100001 "$long" "$longtext" "$nl" 2.5; do
		opt bench $sub --runs "$v"
	done
done
opt bench init --idle
for v in "" abc -1 nan inf 1e400 3601 "$long" "$longtext" "$nl" 0x1p3; do
	opt bench init --idle "$v"
done
for sub in unix stress; do
	opt bench $sub --seconds
	for v in "" abc -1 0 0.01 nan inf 1e400 86401 "$long" "$longtext" "$nl"; do
		opt bench $sub --seconds "$v"
	done
done
opt bench stress --threads
for v in "" abc -1 0 1025 nan 1e3 "$long" "$longtext" "$nl"; do
	opt bench stress --threads "$v"
done
opt bench latency --calls
for v in "" abc -1 0 9999 nan 1e8 100000000001 "$long" "$longtext" "$nl"; do
	opt bench latency --calls "$v"
done

# ---- the environment: nc_init() refuses, the tool says so in one line, exit 4 ----
envcase() { # want var value
	want=$1 var=$2 val=$3
	expect "$want" "$var='$(printf '%s' "$val" | head -c 40)' nanoclock now" -- \
		env -u NANOCLOCK_HZ -u NANOCLOCK_COUNTER -u NANOCLOCK_HZ_FORCE -u NANOCLOCK_CALIB_PPM \
		-u NANOCLOCK_CALIB_MAX_MS -u NANOCLOCK_UNIX_REFRESH_MS -u NANOCLOCK_UTC_SOURCE \
		-u NANOCLOCK_UTC_DRIFT_PPM -u NANOCLOCK_UTC_HORIZON_S "$var=$val" $RUN "$TOOL" now
	if [ "$st" = 4 ] && ! [ -s "$tmp/out" ]; then
		fail=$((fail + 1))
		echo "FAIL: $var: the time was not printed although the clock works"
	fi
	# the line names the variable refused (NANOCLOCK_HZ_FORCE's names
	# NANOCLOCK_HZ: it forces that one's rate)
	if [ "$st" = 4 ] && ! grep -q "${var%_FORCE}" "$tmp/err"; then
		fail=$((fail + 1))
		echo "FAIL: $var: the line does not name it: $(head -c 300 "$tmp/err")"
	fi
}
bad_values() { # var, then values refused for it
	var=$1
	shift
	for v in "" garbage -1 nan NaN inf 1e400 "$long" "$longtext" "$nl" 0x10 " " "-0"; do
		envcase 4 "$var" "$v"
	done
	for v in "$@"; do
		envcase 4 "$var" "$v"
	done
}
bad_values NANOCLOCK_COUNTER no-such-counter "tsc " TSC
bad_values NANOCLOCK_HZ 0 999 1e12 "2e9x" "2e9 2e9"
bad_values NANOCLOCK_HZ_FORCE yes 2 true 01
bad_values NANOCLOCK_CALIB_PPM 0 0.0001 1001 1e9
bad_values NANOCLOCK_CALIB_MAX_MS 0 0.01 10001 1e9
bad_values NANOCLOCK_UNIX_REFRESH_MS 0 0.5 60001 1e9
bad_values NANOCLOCK_UTC_SOURCE bogus chrony:localhost:11323 chrony:127.0.0.1:99999 chrony: \
	"chrony:127.0.0.1:" clockbound:relative/path vmclock:x "off:1" adjtimex:1 "auto "
bad_values NANOCLOCK_UTC_DRIFT_PPM -3 0 100001 1e9
bad_values NANOCLOCK_UTC_HORIZON_S 0 0.5 1000001 1e9
# well-formed but contradicted by measurement (refused: 4), or ignored
# where the counter is an exact-rate OS clock (0)
envcase "0 4" NANOCLOCK_HZ 1k
# and good values pass
envcase 0 NANOCLOCK_HZ_FORCE 0
envcase 0 NANOCLOCK_CALIB_PPM 0.5
envcase 0 NANOCLOCK_COUNTER clock_monotonic_raw
envcase 0 NANOCLOCK_UTC_SOURCE off
envcase 0 NANOCLOCK_UTC_SOURCE "chrony:[::1]:9"
envcase 0 NANOCLOCK_UTC_DRIFT_PPM 20
envcase 0 NANOCLOCK_UTC_HORIZON_S 60
# the exit status the manual gives an inconclusive check: one probe per CPU
# is never the 50 enclosed probes a verdict needs (one CPU: nothing to
# compare, consistent)
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
if [ "$ncpu" -ge 2 ]; then
	$RUN "$TOOL" check --probes 1 --rounds 1 >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ "$st" -eq 3 ] && grep -q '^inconclusive' "$tmp/out" && [ ! -s "$tmp/err" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: nanoclock check --probes 1 --rounds 1: exit $st (want 3, inconclusive): $(head -c 300 "$tmp/out")"
	fi
fi
# one cold start's figures, as bench and scripts read them: time, rate,
# stated uncertainty, status, source, page faults, a first touch's cost
$RUN "$TOOL" bench --init-once >"$tmp/out" 2>"$tmp/err"
st=$?
if [ "$st" -eq 0 ] && [ ! -s "$tmp/err" ] && awk 'NF == 7 && $1 > 0 && $2 > 0 && $3 >= 0 &&
    $4 == 0 && $6 ~ /^[0-9]+$/ && $7 > 0 { ok = 1 } END { exit !ok }' "$tmp/out"; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL: nanoclock bench --init-once: exit $st, printed '$(head -c 200 "$tmp/out")'"
fi
# bench init's floor: the same line, its source "floor", status 0 where it
# read the file and the boot id; the library is never initialised in it (its
# debug log, which a start writes, stays empty), and a missing file gives
# status 1 (no floor) and is not made
printf 'not a record' >"$tmp/floor-file"
NANOCLOCK_LOG=stderr:debug NANOCLOCK_SHARED=$tmp/floor-file $RUN "$TOOL" bench --floor-once \
	>"$tmp/out" 2>"$tmp/err"
st=$?
NANOCLOCK_LOG=stderr:debug NANOCLOCK_SHARED=$tmp/no-floor-file $RUN "$TOOL" bench --floor-once \
	>"$tmp/out2" 2>>"$tmp/err"
st2=$?
if [ "$st" -eq 0 ] && [ "$st2" -eq 0 ] && [ ! -s "$tmp/err" ] && [ ! -e "$tmp/no-floor-file" ] &&
    awk 'NF == 7 && $1 > 0 && $4 == 0 && $5 == "floor" && $6 ~ /^[0-9]+$/ { ok = 1 }
	END { exit !ok }' "$tmp/out" &&
    awk 'NF == 7 && $4 == 1 && $5 == "floor" { ok = 1 } END { exit !ok }' "$tmp/out2"; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL: nanoclock bench --floor-once: exit $st/$st2, printed '$(head -c 200 "$tmp/out")' / '$(head -c 200 "$tmp/out2")', stderr '$(head -c 200 "$tmp/err")'"
fi
# ... and its system calls are a shared start's: the names of the calls
# `bench --init-once` makes inside nc_init() when it adopts a record (between
# its second and third getrusage) are those `bench --floor-once` makes
# between the same marks, in the same order (a call the start gains or
# loses must be mirrored in the floor, or bench init misstates it).  Left
# out where a build adds calls of its own: a sanitizer's runtime maps its
# shadow memory (mmap, munmap, mprotect, madvise: NC_TEST_SANITIZE), and
# MODE=debug's lock checks ask getpid again (NC_TEST_MODE=debug: the first
# is kept, the others are warm calls); LeakSanitizer cannot run traced.
floor_calls() { # OUT MODE: the call names between the marks, one a line
	NANOCLOCK_SHARED=$tmp/floor-rec ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -o "$tmp/strace" "$TOOL" bench "$2" >"$tmp/line" 2>/dev/null &&
		awk -F'(' -v san="${NC_TEST_SANITIZE:-}" -v debug="${NC_TEST_MODE:-}" '
		{ sub(/^[0-9]+ +/, "", $1); n = $1 }
		n == "getrusage" { g++; next }
		g != 2 { next }
		san != "" && (n == "mmap" || n == "munmap" || n == "mprotect" || n == "madvise") { next }
		debug == "debug" && n == "getpid" && seen++ { next }
		{ print n }' "$tmp/strace" >"$1"
}
if [ -n "$RUN" ]; then
	echo "SKIP[emulator]: the floor's system calls against a start's: strace would trace the emulator"
elif ! command -v strace >/dev/null 2>&1; then
	echo "SKIP[machine]: the floor's system calls against a start's: no strace (make check installs it)"
else
	# a record to adopt: on a busy machine (a sanitizer's make check beside)
	# the first calibration may not reach its goal and keep none, and the
	# start then measures: made again, 5 times at most
	shared_start=no
	for try in 1 2 3 4 5; do
		rm -f "$tmp/floor-rec"
		NANOCLOCK_CALIB_PPM=1 NANOCLOCK_SHARED=$tmp/floor-rec "$TOOL" bench --init-once >/dev/null 2>&1
		if floor_calls "$tmp/calls.start" --init-once &&
		    awk '$5 == "shared" { ok = 1 } END { exit !ok }' "$tmp/line"; then
			shared_start=yes
			break
		fi
	done
	if [ "$shared_start" = yes ] &&
	    floor_calls "$tmp/calls.floor" --floor-once && [ -s "$tmp/calls.start" ] &&
	    cmp -s "$tmp/calls.start" "$tmp/calls.floor"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: bench --floor-once's system calls are not a shared start's (start: $(tr '\n' ' ' <"$tmp/calls.start" 2>/dev/null); floor: $(tr '\n' ' ' <"$tmp/calls.floor" 2>/dev/null); start's line: $(cat "$tmp/line" 2>/dev/null))"
	fi
fi
# a path that is not UTF-8 (a path may hold any byte) keeps info --json JSON
bad_path="/tmp/nc-$(printf '\377')-$(printf '\303\251')"
if NANOCLOCK_SHARED=$bad_path $RUN "$TOOL" info --json 2>"$tmp/err" |
    python3 -c 'import json,sys; p=json.load(sys.stdin)["shared"]["path"]; assert p == "/tmp/nc-\ufffd-\u00e9", p'; then
	pass=$((pass + 1))
else
	fail=$((fail + 1))
	echo "FAIL: info --json with a path that is not UTF-8: not JSON, or the path not as expected: $(head -c 200 "$tmp/err")"
fi
expect 0 "nanoclock --help" -- $RUN "$TOOL" --help
expect 0 "nanoclock (no command: the usage)" -- $RUN "$TOOL"

echo "tests/tool/test_cli.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
