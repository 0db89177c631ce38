#!/bin/sh
# SPDX-License-Identifier: MIT
# The trace exports read by the tools people use, compared with nanoclock's
# own conversion (the CSV export) event by event:
#   - CTF: babeltrace2 reads the directory with nothing on stderr, every
#     event comes back, and its time (--clock-seconds) is the CSV's unix_ns
#     to the nanosecond; for the demo, the example workload, and two files
#     merged into one trace;
#   - Perfetto: protoc decodes it against tests/perfetto/nanoclock_perfetto.proto
#     (Perfetto's field numbers); every event is there, in order, with the
#     CSV's CLOCK_MONOTONIC_RAW ns, type and interned name; clock snapshots
#     tie it to REALTIME;
#   - Chrome JSON: DevTools' trace model (npm: devtools-timeline-model)
#     loads it: every slice and counter, no begin/end argument clash, no
#     error.
# usage: tests/tool/test_trace_export.sh TOOL EXAMPLE      (make check runs it)
# Each reader runs where it is installed (CI installs them all:
# scripts/install-test-deps babeltrace2 protobuf-compiler nodejs npm; make
# check does not): where one is missing its checks say SKIP[machine], which
# scripts/test-summary counts.  The npm reader comes from the npm registry.
set -u
tool=$1
example=$2
cd "$(dirname "$0")/../.."
root=$(pwd)
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAILED: $*"; }

skipped() { echo "SKIP[machine]: tests/tool/test_trace_export.sh: $*"; }
have_bt=$(command -v babeltrace2 || true)
have_protoc=$(command -v protoc || true)
have_node=$(command -v node >/dev/null 2>&1 && command -v npm || true)
npmdir=$root/build/npm
if [ -n "$have_node" ] && { [ ! -f "$npmdir/node_modules/devtools-timeline-model/package.json" ] ||
	! cmp -s tests/npm/package-lock.json "$npmdir/package-lock.json"; }; then
	mkdir -p "$npmdir"
	cp tests/npm/package.json tests/npm/package-lock.json "$npmdir/"
	(cd "$npmdir" && npm ci --no-audit --no-fund >npm.log 2>&1) ||
		{ echo "FAILED: npm ci (see $npmdir/npm.log)"; exit 1; }
fi

w=$(mktemp -d "${TMPDIR:-/tmp}/nc-export-XXXXXX")
trap 'rm -rf "$w"' EXIT

# "file thread seq unix_ns" per event, sorted, from the CSV export, each
# stream's times held where they went back (the system clock set back:
# CTF's rule, docs/traces.md); how many were held into file $2 (Unix ns
# compared as strings of digits: awk's numbers are doubles)
csv_keys() {
	awk -F, 'NR > 1 { print $1, $2, $4, $12 }' "$1" | sort -k1,1n -k2,2n -k3,3n | awk -v hf="$2" '
		{ k = $1 " " $2; u = $4
		  if ((k in mx) && (length(u) < length(mx[k]) ||
		      (length(u) == length(mx[k]) && (u "") < (mx[k] "")))) { u = mx[k]; held++ }
		  mx[k] = u; print $1, $2, $3, u }
		END { print held + 0 > hf }' | sort
}
# the same from babeltrace2's text
bt_keys() {
	awk '{
		ts = substr($1, 2, length($1) - 2); sub(/\./, "", ts)
		match($0, /file = [0-9]+/); f = substr($0, RSTART + 7, RLENGTH - 7)
		match($0, /thread = [0-9]+/); t = substr($0, RSTART + 9, RLENGTH - 9)
		match($0, / seq = [0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7)
		print f, t, s, ts }' "$1" | sort
}

ctf_check() { # name, files...
	[ -n "$have_bt" ] || { skipped "CTF $1: no babeltrace2 (apt-get install babeltrace2)"; return; }
	name=$1
	shift
	if ! $tool trace export --format csv -o "$w/$name.csv" "$@" ||
		! $tool trace export --format ctf -o "$w/$name.ctf" "$@"; then
		bad "$name: export"
		return
	fi
	babeltrace2 --clock-seconds "$w/$name.ctf" >"$w/$name.bt" 2>"$w/$name.bt.err"
	rc=$?
	if [ $rc -ne 0 ] || [ -s "$w/$name.bt.err" ]; then
		bad "$name: babeltrace2 exit $rc, stderr: $(head -3 "$w/$name.bt.err")"
		return
	fi
	csv_keys "$w/$name.csv" "$w/$name.held" >"$w/$name.k1"
	bt_keys "$w/$name.bt" >"$w/$name.k2"
	n=$(wc -l <"$w/$name.k1")
	held=$(cat "$w/$name.held")
	said=$(sed -n 's/.*nanoclock_times_held = \([0-9]*\);.*/\1/p' "$w/$name.ctf/metadata")
	if [ "$n" -gt 0 ] && cmp -s "$w/$name.k1" "$w/$name.k2" && [ "$held" = "$said" ]; then
		ok "$name: babeltrace2 shows all $n events at nanoclock's Unix ns exactly ($held held where the" \
			"system clock was set back, as the metadata says)"
	else
		bad "$name: babeltrace2 differs from nanoclock's CSV ($n events; held $held, the metadata says" \
			"${said:-nothing}): $(diff "$w/$name.k1" "$w/$name.k2" | head -4 | tr '\n' ' ')"
	fi
}

$tool trace demo "$w/demo.nct" --threads 2 --items 20000 >/dev/null || bad "demo"
$tool trace demo "$w/demo2.nct" --threads 1 --items 5000 --gseq --cputime >/dev/null || bad "demo2"
$example "$w/example.nct" >/dev/null || bad "example"
ctf_check demo "$w/demo.nct"
ctf_check example "$w/example.nct"
ctf_check merged "$w/demo.nct" "$w/demo2.nct" "$w/example.nct"
[ -n "$have_bt" ] || $tool trace export --format ctf -o "$w/merged.ctf" "$w/demo.nct" "$w/demo2.nct" \
	"$w/example.nct" >/dev/null || bad "merged: export"
streams=$(ls "$w/merged.ctf" | grep -c '^stream_')
threads=$(for f in demo demo2 example; do $tool trace stats --json "$w/$f.nct"; done |
	awk -F': ' '/"threads"/ { s += $2 } END { print s + 0 }')
[ "$streams" -eq "$threads" ] && ok "merged: one CTF trace, a stream per thread ($streams)" ||
	bad "merged: $streams streams for $threads threads"
grep -q 'file2_counter' "$w/merged.ctf/metadata" && grep -q 'precision = ' "$w/merged.ctf/metadata" &&
	ok "merged: clock-domain records of the 3 files in env" || bad "merged: env"

# ---- Perfetto ----
perfetto_check() { # name, files...
	[ -n "$have_protoc" ] || { skipped "Perfetto $1: no protoc (apt-get install protobuf-compiler)"; return; }
	name=$1
	shift
	$tool trace export --format perfetto -o "$w/$name.pftrace" "$@" || { bad "$name: perfetto export"; return; }
	if ! protoc --proto_path=tests/perfetto --decode=perfetto.protos.Trace nanoclock_perfetto.proto \
		<"$w/$name.pftrace" >"$w/$name.pf.txt" 2>"$w/$name.pf.err"; then
		bad "$name: protoc --decode: $(head -2 "$w/$name.pf.err")"
		return
	fi
	# per event packet: "timestamp type name_iid" in file order; names by iid
	awk '
		/^packet \{/ { ts = ""; type = ""; iid = ""; seq = ""; te = 0 }
		/^  timestamp: / { ts = $2 }
		/^  trusted_packet_sequence_id: / { seq = $2 }
		/^  track_event \{/ { te = 1 }
		/^    type: / && te { type = $2 }
		/^    name_iid: / && te { iid = $2 }
		/^    event_names \{/ { en = 1 }
		/^      iid: / && en { niid = $2 }
		/^      name: / && en { sub(/^      name: /, ""); names[seq " " niid] = $0; en = 0 }
		/^\}/ && te { print ts, type, (iid == "" ? "-" : names[seq " " iid]) }
	' "$w/$name.pf.txt" >"$w/$name.pf.ev"
	awk -F, 'NR > 1 {
		t = "TYPE_INSTANT"
		if ($6 == "begin") t = "TYPE_SLICE_BEGIN"
		if ($6 == "end") t = "TYPE_SLICE_END"
		if ($6 == "counter") t = "TYPE_COUNTER"
		n = ($6 == "end" || $6 == "counter") ? "-" : "\"" substr($8, 2, length($8) - 2) "\""
		print ($11 < 0 ? 0 : $11), t, n }' "$w/$name.csv" >"$w/$name.csv.ev"
	n=$(wc -l <"$w/$name.csv.ev")
	if [ "$n" -gt 0 ] && cmp -s "$w/$name.csv.ev" "$w/$name.pf.ev"; then
		ok "$name: Perfetto decodes to all $n events, in order, at nanoclock's ns, with their names"
	else
		bad "$name: Perfetto events differ from the CSV: $(diff "$w/$name.csv.ev" "$w/$name.pf.ev" | head -4 | tr '\n' ' ')"
	fi
	snaps=$(grep -c 'clock_snapshot {' "$w/$name.pf.txt")
	tracks=$(grep -c 'thread {' "$w/$name.pf.txt")
	[ "$snaps" -ge "$#" ] && grep -q 'primary_trace_clock: BUILTIN_CLOCK_REALTIME' "$w/$name.pf.txt" &&
		[ "$tracks" -ge 1 ] && ok "$name: $snaps clock snapshots, $tracks thread tracks" ||
		bad "$name: $snaps snapshots, $tracks thread tracks"
}
perfetto_check demo "$w/demo.nct"
perfetto_check merged "$w/demo.nct" "$w/demo2.nct" "$w/example.nct"

# ---- Chrome JSON in DevTools' model ----
chrome_check() { # name, file
	[ -n "$have_node" ] || { skipped "Chrome JSON $1: no node and npm (apt-get install nodejs npm)"; return; }
	$tool trace export --format chrome -o "$w/$1.json" "$2" || { bad "$1: chrome export"; return; }
	# the CSV to compare with (ctf_check's, or made here where it did not run)
	[ -f "$w/$1.csv" ] || $tool trace export --format csv -o "$w/$1.csv" "$2" || { bad "$1: csv export"; return; }
	out=$(NODE_PATH="$npmdir/node_modules" node tests/npm/chrome_reader.js "$w/$1.json" 2>&1)
	begins=$(awk -F, 'NR > 1 && $6 == "begin"' "$w/$1.csv" | wc -l)
	counters=$(awk -F, 'NR > 1 && $6 == "counter"' "$w/$1.csv" | wc -l)
	echo "$out" | grep -q "\"slices\":$begins,\"instants\":0,\"counters\":$counters,\"argClashes\":0,\"errors\":0," &&
		ok "$1: DevTools' model loads $begins slices and $counters counter values, no clash, no error" ||
		bad "$1: DevTools' model: $(echo "$out" | cut -c1-300)"
}
chrome_check demo "$w/demo.nct"
chrome_check example "$w/example.nct"

# ---- two machines: each event's UTC interval, the concurrency marks ----
# A ClockBound segment (PROTOCOL.md, version 2) stating a 200 us bound is
# the UTC source of two demos, files of two machines (host names changed
# in place); every export must carry the same interval
# and the same concurrent mark for every event as the CSV (whose marks
# test_utc's trace_concurrent checks against the intervals themselves).
python3 - "$w/cb.seg" <<'PY'
import struct, sys, time
now = time.clock_gettime_ns(6)  # CLOCK_MONOTONIC_COARSE, as clockbound-d
void = now + 3600 * 10**9
b = struct.pack('=IIIHHqqqqqQIi', 0x414d5a4e, 0x43420200, 80, 2, 2, now // 10**9, now % 10**9,
                void // 10**9, void % 10**9, 200000, 0, 15000, 1)
open(sys.argv[1], 'wb').write(b + bytes(80 - len(b)))
PY
NANOCLOCK_UTC_SOURCE=clockbound:$w/cb.seg $tool trace demo "$w/m1.nct" --threads 1 --items 3000 >/dev/null
NANOCLOCK_UTC_SOURCE=clockbound:$w/cb.seg $tool trace demo "$w/m2.nct" --threads 1 --items 3000 >/dev/null
# m3: m1 again as another machine's (every event concurrent with its twin);
# m2, recorded after m1, of that machine too (concurrent only where in time)
cp "$w/m1.nct" "$w/m3.nct"
for f in m2 m3; do
	python3 -c "
import sys
f = open(sys.argv[1], 'r+b'); f.seek(24 + 8 + 176); f.write(b'another-machine'.ljust(64, b'\0'))" "$w/$f.nct"
done
set -- "$w/m1.nct" "$w/m2.nct" "$w/m3.nct"
$tool trace export --format csv -o "$w/m.csv" "$@" &&
	$tool trace export --format ctf -o "$w/m.ctf" "$@" &&
	$tool trace export --format chrome -o "$w/m.json" "$@" &&
	$tool trace export --format perfetto -o "$w/m.pftrace" "$@" || bad "two machines: export"
# "file thread seq earliest latest concurrent" per event (not counters: Chrome's
# counter args are its series)
awk -F, 'NR > 1 && $6 != "counter" { print $1, $2, $4, $14, $15, $(NF) }' "$w/m.csv" | sort >"$w/m.k1"
n=$(wc -l <"$w/m.k1")
nconc=$(awk '$6 == 1' "$w/m.k1" | wc -l)
nsync=$(awk -F, 'NR > 1 && $16 == "synchronised"' "$w/m.csv" | wc -l)
[ "$n" -gt 0 ] && [ "$nconc" -gt 0 ] && [ "$nsync" -eq "$(($(wc -l <"$w/m.csv") - 1))" ] &&
	ok "two machines: all $nsync events synchronised with an interval, $nconc of $n concurrent" ||
	bad "two machines: $nsync synchronised of $(($(wc -l <"$w/m.csv") - 1))"
if [ -z "$have_bt" ]; then
	skipped "two machines: CTF: no babeltrace2 (apt-get install babeltrace2)"
else
babeltrace2 "$w/m.ctf" 2>"$w/m.bt.err" | awk '$0 !~ /nanoclock:counter/ {
	match($0, /file = [0-9]+/); f = substr($0, RSTART + 7, RLENGTH - 7)
	match($0, /thread = [0-9]+/); t = substr($0, RSTART + 9, RLENGTH - 9)
	match($0, / seq = [0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7)
	match($0, /utc_earliest_ns = -?[0-9]+/); e = substr($0, RSTART + 18, RLENGTH - 18)
	match($0, /utc_latest_ns = -?[0-9]+/); l = substr($0, RSTART + 16, RLENGTH - 16)
	match($0, /concurrent = [0-9]+/); c = substr($0, RSTART + 13, RLENGTH - 13)
	print f, t, s, e, l, c }' | sort >"$w/m.k2"
cmp -s "$w/m.k1" "$w/m.k2" && [ ! -s "$w/m.bt.err" ] &&
	ok "two machines: CTF (babeltrace2) has every event's interval and mark as the CSV" ||
	bad "two machines: CTF differs: $(diff "$w/m.k1" "$w/m.k2" | head -4 | tr '\n' ' ') $(head -2 "$w/m.bt.err")"
fi
python3 - "$w/m.json" >"$w/m.k3" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e["ph"] in ("M", "C"):
        continue
    a = e["args"]
    p = "end_" if e["ph"] == "E" else ""
    print(e["pid"] - 1, e["tid"] - 1, a[p + "seq"], a[p + "utc_earliest_ns"], a[p + "utc_latest_ns"],
          1 if a[p + "concurrent"] else 0)
PY
sort "$w/m.k3" >"$w/m.k3s"
cmp -s "$w/m.k1" "$w/m.k3s" &&
	ok "two machines: Chrome JSON has every event's interval and mark as the CSV" ||
	bad "two machines: Chrome JSON differs: $(diff "$w/m.k1" "$w/m.k3s" | head -4 | tr '\n' ' ')"
# Perfetto: per track event in order, "earliest latest concurrent" from its
# annotations (iids 7, 8, 10 at a begin or instant, 17, 18, 20 at an end)
if [ -z "$have_protoc" ]; then
	skipped "two machines: Perfetto: no protoc (apt-get install protobuf-compiler)"
else
protoc --proto_path=tests/perfetto --decode=perfetto.protos.Trace nanoclock_perfetto.proto \
	<"$w/m.pftrace" 2>"$w/m.pf.err" | awk '
	/^  track_event \{/ { te = 1; e = ""; l = ""; c = ""; ctr = 0 }
	/^    type: TYPE_COUNTER/ && te { ctr = 1 }
	/^      name_iid: / && te { iid = $2 }
	/^      int_value: / && te { if (iid == 7 || iid == 17) e = $2; if (iid == 8 || iid == 18) l = $2 }
	/^      bool_value: / && te { if (iid == 10 || iid == 20) c = ($2 == "true") }
	/^  \}/ && te { if (!ctr) print e, l, c; te = 0 }' >"$w/m.k4"
awk -F, 'NR > 1 && $6 != "counter" { print $14, $15, $(NF) }' "$w/m.csv" >"$w/m.k4csv"
cmp -s "$w/m.k4csv" "$w/m.k4" &&
	ok "two machines: Perfetto has every event's interval and mark as the CSV, in order" ||
	bad "two machines: Perfetto differs: $(diff "$w/m.k4csv" "$w/m.k4" | head -4 | tr '\n' ' ') $(head -2 "$w/m.pf.err")"
fi

# ---- an export interrupted: its temporary removed, nothing put in place ----
# SIGINT, SIGTERM and SIGHUP, a file (CSV) and a directory (CTF); the
# export started with the signals at their default (a background job of
# a shell starts with SIGINT ignored, and the tool keeps what it was given)
$tool trace demo "$w/big.nct" --threads 2 --items 200000 >/dev/null || bad "interrupted: demo"
for sig in INT TERM HUP; do
	for fmt in csv ctf; do
		d=$w/sig-$sig-$fmt
		mkdir "$d"
		env --default-signal=INT,TERM,HUP "$tool" trace export --format $fmt -o "$d/out.$fmt" \
			"$w/big.nct" 2>/dev/null &
		p=$!
		i=0
		while [ $i -lt 500 ] && [ -z "$(ls -A "$d")" ]; do
			sleep 0.01
			i=$((i + 1))
		done
		tmpname=$(ls -A "$d")
		kill -$sig $p 2>/dev/null
		wait $p
		st=$?
		left=$(ls -A "$d")
		case $tmpname in
		.out.$fmt.*)
			if [ -z "$left" ] && [ $st -gt 128 ]; then
				ok "interrupted by SIG$sig ($fmt): $tmpname removed, nothing put in place (status $st)"
			else
				bad "interrupted by SIG$sig ($fmt): status $st, left: $left"
			fi ;;
		*) bad "interrupted by SIG$sig ($fmt): no temporary seen before the signal (found '$tmpname')" ;;
		esac
	done
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
