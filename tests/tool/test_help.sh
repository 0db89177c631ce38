#!/bin/sh
# SPDX-License-Identifier: MIT
# Help where people look, and the manual agrees with it:
#   - `nanoclock` alone, -h, --help and `help`: the usage on stdout, exit 0;
#     --version: the version of include/nanoclock.h, exit 0;
#   - every command and subcommand accepts -h and --help: exit 0, its usage
#     on stdout, nothing on stderr;
#   - the options each one's --help lists are exactly those nanoclock(1)
#     gives it (man/nanoclock.1.scd: the COMMANDS entry, or entries, whose
#     head names the command), and the top-level usage line of each command
#     lists the same options as the manual's SYNOPSIS line.
# -h/--help themselves are left out of the comparison (the manual says
# once, for all commands, that they take them).  The trace commands'
# help is tools/trace.c's: a trace command whose --help does not exit 0
# yet is reported as not compared (and counted apart), never passed.
#   tests/tool/test_help.sh path/to/nanoclock [path/to/nanoclock.1.scd]
set -u
TOOL=${1:?usage: tests/tool/test_help.sh path/to/nanoclock [man/nanoclock.1.scd]}
MAN=${2:-$(dirname "$0")/../../man/nanoclock.1.scd}
RUN=${RUN:-}
HDR=$(dirname "$0")/../../include/nanoclock.h
tmp=$(mktemp -d)
trap '[ -n "${NC_KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
notyet=0
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*"
}

# the options named in a text: --word or -x, after a space, [, |, ( or
# the start of a line; one a line, sorted
options() {
	grep -oE '(^|[][ |(,*])--?[a-zA-Z][a-zA-Z-]*' | sed -E 's/^[][ |(,*]//' |
		grep -vxE -- '-h|--help' | sort -u
}

# the manual's COMMANDS entries: "key<TAB>text" a line, where the key is the
# head's bold words without options ("bench", "bench init") and the text the
# head and the indented paragraphs under it
awk '
	/^# / { in_cmds = ($0 == "# COMMANDS"); next }
	!in_cmds { next }
	/^\*/ {
		head = $0
		key = ""
		while (match(head, /\*[^*]+\*/)) {
			w = substr(head, RSTART + 1, RLENGTH - 2)
			head = substr(head, RSTART + RLENGTH)
			if (w ~ /^-/) continue
			n = split(w, parts, " ")
			for (i = 1; i <= n; i++) if (parts[i] !~ /^-/) key = key (key ? " " : "") parts[i]
			if (head ~ /^ *\[|^ *_/) break
		}
		cur = key
		print cur "\t" $0
		next
	}
	/^\t/ && cur != "" { print cur "\t" $0 }
' "$MAN" > "$tmp/man-entries"
# SYNOPSIS lines: "key<TAB>line"
awk '
	/^# / { in_syn = ($0 == "# SYNOPSIS"); next }
	in_syn && /^\*nanoclock/ {
		line = $0
		key = ""
		rest = line
		while (match(rest, /\*[^*]+\*/)) {
			w = substr(rest, RSTART + 1, RLENGTH - 2)
			rest = substr(rest, RSTART + RLENGTH)
			n = split(w, parts, " ")
			for (i = 1; i <= n; i++) if (parts[i] !~ /^-/ && parts[i] != "nanoclock") key = key (key ? " " : "") parts[i]
			if (rest ~ /^ *\[|^ *_/) break
		}
		print key "\t" line
	}
' "$MAN" > "$tmp/man-synopsis"

# ---- the top level ----
for args in "" "-h" "--help" "help"; do
	# shellcheck disable=SC2086 # no argument at all for ""
	$RUN "$TOOL" $args > "$tmp/out" 2> "$tmp/err"
	st=$?
	if [ "$st" = 0 ] && head -n 1 "$tmp/out" | grep -q '^usage: nanoclock' && [ ! -s "$tmp/err" ]; then
		pass=$((pass + 1))
	else
		bad "nanoclock $args: exit $st, stdout '$(head -n 1 "$tmp/out")', stderr '$(head -n 1 "$tmp/err")'"
	fi
done
cp "$tmp/out" "$tmp/top"
v=$(sed -n 's/^#define NC_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$HDR" | paste -sd. -)
got=$($RUN "$TOOL" --version 2>&1)
st=$?
if [ "$st" = 0 ] && [ "$got" = "nanoclock $v" ]; then
	pass=$((pass + 1))
else
	bad "nanoclock --version: exit $st, '$got' (want 'nanoclock $v')"
fi

# every command of the top-level usage: "nanoclock a [b]" where b is a word
commands=$(sed -n 's/^\(usage:\)\? *nanoclock \([a-z][a-z]*\)\( \([a-z][a-z]*\)\)\?\b.*/\2 \4/p' "$tmp/top" |
	sed 's/ *$//' | sort -u)
[ -n "$commands" ] || bad "no command found in the usage"
printf '%s\n' "$commands" > "$tmp/commands"
while read -r cmd; do
	# its line(s) in the top-level usage against the SYNOPSIS
	awk -v c="nanoclock $cmd" '
		/^(usage: |       )nanoclock / { on = (index($0, c " ") || $0 ~ c "$") && !(c == "nanoclock bench" && $0 ~ /bench (init|unix|sync|stress|latency|trace)/) }
		/^                            / && on { print; next }
		/^(usage: |       )nanoclock / && on { print }
	' "$tmp/top" | options > "$tmp/top-opts"
	awk -F '\t' -v k="$cmd" '$1 == k { sub(/^[^\t]*\t/, ""); print }' "$tmp/man-synopsis" | options > "$tmp/syn-opts"
	if [ ! -s "$tmp/syn-opts" ] && ! grep -q "^$cmd	" "$tmp/man-synopsis"; then
		bad "nanoclock(1) has no SYNOPSIS line for 'nanoclock $cmd'"
	elif ! cmp -s "$tmp/top-opts" "$tmp/syn-opts"; then
		bad "nanoclock $cmd: the usage lists [$(tr '\n' ' ' < "$tmp/top-opts")], the SYNOPSIS [$(tr '\n' ' ' < "$tmp/syn-opts")]"
	else
		pass=$((pass + 1))
	fi

	# its own --help and -h
	for h in --help -h; do
		# shellcheck disable=SC2086 # the command's words
		$RUN "$TOOL" $cmd $h > "$tmp/out" 2> "$tmp/err"
		st=$?
		if [ "$st" != 0 ] && [ "${cmd%% *}" = trace ]; then
			notyet=$((notyet + 1))
			echo "NOT COMPARED: nanoclock $cmd $h exits $st (the trace command's help is tools/trace.c's)"
			continue 2
		fi
		if [ "$st" != 0 ] || [ -s "$tmp/err" ] || ! grep -q "nanoclock $cmd" "$tmp/out"; then
			bad "nanoclock $cmd $h: exit $st, stderr '$(head -n 1 "$tmp/err")', stdout '$(head -n 1 "$tmp/out")'"
			continue 2
		fi
		grep -q -- '--help' "$tmp/out" || { bad "nanoclock $cmd $h does not say it takes --help"; continue 2; }
	done
	pass=$((pass + 1))
	options < "$tmp/out" > "$tmp/help-opts"
	awk -F '\t' -v k="$cmd" '$1 == k { sub(/^[^\t]*\t/, ""); print }' "$tmp/man-entries" | options > "$tmp/man-opts"
	if ! grep -q "^$cmd	" "$tmp/man-entries"; then
		bad "nanoclock(1) has no COMMANDS entry for '$cmd'"
	elif ! cmp -s "$tmp/help-opts" "$tmp/man-opts"; then
		bad "nanoclock $cmd: --help lists [$(tr '\n' ' ' < "$tmp/help-opts")], nanoclock(1) [$(tr '\n' ' ' < "$tmp/man-opts")]"
	else
		pass=$((pass + 1))
	fi
done < "$tmp/commands"
grep -q -- '\*--help\*' "$MAN" && grep -q -- '\*--version\*' "$MAN" ||
	bad "nanoclock(1) does not say that every command takes --help, or does not name --version"

echo "tests/tool/test_help.sh: $(wc -l < "$tmp/commands") commands; $notyet not compared (no --help yet)"
echo "tests/tool/test_help.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
