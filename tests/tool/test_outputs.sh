#!/bin/sh
# SPDX-License-Identifier: MIT
# What the tool writes never replaces what is not its own.
# `trace export -o PATH` (a file, and a CTF directory) and `bench --plot
# DIR` over each kind of thing at the path, as root and as an ordinary user
# (nobody, in a directory of its own with mode 1777, so that permissions
# alone would not stop a replacement):
#   - refused: a text file, a trace (an input), another user's file (empty,
#     text, or even an earlier export), a symbolic link (to an export of
#     this user's, or dangling), a FIFO with no reader, a socket, a
#     directory, a block device, a character device that is not the null
#     device or a terminal; exit status 1, one line naming the path and
#     what is there, and the thing exactly as it was (type, mode, owner,
#     inode, size, device numbers, content, link target) with nothing left
#     beside it;
#   - written: a new path; this user's empty file (mktemp; its mode kept);
#     an earlier export of this user's in any format (replaced); a FIFO
#     with a reader; /dev/null; a terminal; /dev/stdout, /dev/fd/N;
#   - bench --plot: refused for a link, a file, another user's directory,
#     one writable by others, one of other files, an earlier plot's with a
#     link, a FIFO or another user's file among its names; a new directory
#     and an earlier plot's drawn (a hard link to an old PNG kept);
#   - nothing of a stranger's gone through on the way: a link or a folder
#     another user made in a world-writable sticky folder (root);
#   - a full disk (root: a 16 KB tmpfs in a mount namespace of its own)
#     names the path and the reason (No space left on device), and an
#     earlier export there stays.
# Root-only parts (another user, device nodes, the full disk) and the
# drawing (gnuplot, not installed by make check) say SKIP[root] or
# SKIP[machine] when they cannot run: scripts/test-summary counts them.
#   tests/tool/test_outputs.sh path/to/nanoclock      (make check runs it)
set -u
TOOL=${1:?usage: tests/tool/test_outputs.sh path/to/nanoclock}
cd "$(dirname "$0")/../.." || exit 1
pass=0
fail=0
skip=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# skipped KIND reason: a line scripts/test-summary counts and judges
# (tests/skip.h's kinds)
skipped() { skip=$((skip + 1)) k=$1; shift; echo "SKIP[$k]: tests/tool/test_outputs.sh: $*"; }

w=$(mktemp -d "${TMPDIR:-/tmp}/nc-outputs-XXXXXX")
trap 'rm -rf "$w"' EXIT
chmod 755 "$w" # traversable by nobody
# the tool where nobody can run it
T=$w/nanoclock
cp "$TOOL" "$T" && chmod 755 "$T" || { echo "FAIL: cannot copy $TOOL"; exit 1; }
pub=$w/pub
mkdir -m 1777 "$pub"
umask 022

me=$(id -un)
if [ "$(id -u)" = 0 ]; then
	users="root nobody"
else
	users=$me
	skipped root "not root: only as $me; another user's files, device nodes, the nobody runs and the full disk not tested"
fi
other_of() { [ "$1" = root ] && echo nobody || echo root; }
# as USER COMMAND...: run as that user (nobody: no groups, group nogroup)
as() {
	u=$1
	shift
	if [ "$u" = "$me" ]; then
		"$@"
	else
		setpriv --reuid="$u" --regid=nogroup --clear-groups -- "$@"
	fi
}

"$T" trace demo "$w/t.nct" --threads 1 --items 200 >/dev/null || { echo "FAIL: trace demo"; exit 1; }
chmod 644 "$w/t.nct"
# what an earlier export looks like (copied where one is needed)
"$T" trace export --format csv "$w/t.nct" >"$w/ref.csv" || { echo "FAIL: export to stdout"; exit 1; }
chmod 644 "$w/ref.csv"

# snap PATH...: everything that must not change, for each path and what is
# under it (type, mode, owner, inode, size, device numbers; link target;
# content's sum)
snap() {
	for p; do
		if [ -e "$p" ] || [ -L "$p" ]; then
			find "$p" -xdev | sort | while read -r f; do
				stat -c '%n %F %a %u:%g %i %s %t:%T' "$f"
				[ -L "$f" ] && readlink "$f"
				[ -f "$f" ] && [ ! -L "$f" ] && sha256sum <"$f"
			done
		else
			echo "$p absent"
		fi
	done
	return 0
}

# make KIND PATH OWNER: a thing of that kind at PATH, OWNER's
make_kind() {
	k=$1 p=$2 u=$3
	case $k in
	text) as "$u" sh -c 'printf "precious notes\n" >"$1"' sh "$p" ;;
	trace) as "$u" sh -c 'cat "$1" >"$2"' sh "$w/t.nct" "$p" ;;
	empty) as "$u" sh -c ': >"$1"' sh "$p" ;;
	export) as "$u" sh -c 'cat "$1" >"$2"' sh "$w/ref.csv" "$p" ;;
	linkfile) # to an export of the same user's: still not followed
		as "$u" sh -c 'cat "$1" >"$2.target"; ln -s "$2.target" "$2"' sh "$w/ref.csv" "$p" ;;
	dangling) as "$u" ln -s "$p.nowhere" "$p" ;;
	fifo) as "$u" mkfifo "$p" ;;
	socket) as "$u" perl -MSocket -e 'socket(S, PF_UNIX, SOCK_STREAM, 0) && bind(S, pack_sockaddr_un($ARGV[0])) or die "$!\n"' "$p" ;;
	dir) as "$u" mkdir "$p" ;;
	dirfull) as "$u" sh -c 'mkdir "$1" && printf "mine\n" >"$1/inside"' sh "$p" ;;
	linkdir) as "$u" sh -c 'mkdir "$1.target" && ln -s "$1.target" "$1"' sh "$p" ;;
	block) mknod "$p" b 240 0 ;; # a local-use number: no driver behind it
	char) mknod "$p" c 1 5 ;;    # /dev/zero's numbers: harmless even if written
	nullnode) mknod "$p" c 1 3 ;;
	esac
	# another user's things (and device nodes) are writable by all: policy
	# must refuse them, not permissions
	case $k in block | char | nullnode) u=anyone ;; esac
	if [ "$u" != "$U" ]; then
		case $k in
		linkfile | dangling | linkdir) ;;
		dir | dirfull) chmod 777 "$p" ;;
		*) chmod 666 "$p" ;;
		esac
	fi
	return 0
}

# refused USER WHAT WORD PATH COMMAND...: status 1, one line on stderr
# naming PATH with WORD in it; PATH (and $also) unchanged, nothing new beside
refused() {
	u=$1 what=$2 word=$3 p=$4
	shift 4
	dir=$(dirname "$p")
	before=$(snap "$p" $also; ls -A "$dir")
	as "$u" timeout 60 "$@" >"$w/out" 2>"$w/err" </dev/null
	st=$?
	after=$(snap "$p" $also; ls -A "$dir")
	lines=$(wc -l <"$w/err")
	if [ $st -eq 1 ] && [ "$lines" -eq 1 ] && grep -qF "$p" "$w/err" && grep -q "$word" "$w/err" &&
		[ "$before" = "$after" ]; then
		ok "$u: $what: refused: $(cat "$w/err")"
	else
		bad "$u: $what: status $st (want 1), stderr ($lines lines, want '$word'): $(head -c 400 "$w/err")"
		[ "$before" = "$after" ] || { echo "  before:"; echo "$before" | sed 's/^/    /'; echo "  after:"; echo "$after" | sed 's/^/    /'; }
	fi
	also=
}
also=

export_to() { # USER FORMAT PATH: the export command as USER, output on $w/out, $w/err
	as "$1" timeout 60 "$T" trace export --format "$2" -o "$3" "$w/t.nct" >"$w/out" 2>"$w/err" </dev/null
}
is_csv() { head -n 1 "$1" 2>/dev/null | grep -q '^file,thread,thread_name,seq,'; }
uid_of() { id -u "$1"; }

for U in $users; do
	O=$(other_of "$U")
	d=$pub/$U
	as "$U" mkdir -m 1777 "$d"
	uid=$(uid_of "$U")

	# ---- -o FILE: refused ----
	for spec in text:me:"not an earlier" trace:me:"not an earlier" empty:other:"another user" \
		text:other:"another user" export:other:"another user" linkfile:me:"symbolic link" \
		dangling:me:"symbolic link" fifo:me:"no reader" socket:me:"socket" dir:me:"directory" \
		dirfull:me:"directory" block:root:"block device" char:root:"character device"; do
		k=${spec%%:*} rest=${spec#*:}
		owner=${rest%%:*} word=${rest#*:}
		[ "$owner" = me ] && owner=$U
		[ "$owner" = other ] && owner=$O
		case $k in block | char) [ "$(id -u)" = 0 ] || continue ;; esac
		case $owner in "$U") ;; *) [ "$(id -u)" = 0 ] || continue ;; esac
		p=$d/$k.$owner
		make_kind "$k" "$p" "$owner"
		case $k in linkfile | dangling) also="$p.target $p.nowhere" ;; esac
		refused "$U" "-o over $k ($owner's)" "$word" "$p" "$T" trace export --format csv -o "$p" "$w/t.nct"
	done
	# every format refuses the same way (a text file of this user's)
	for f in chrome perfetto; do
		p=$d/text-$f
		make_kind text "$p" "$U"
		refused "$U" "--format $f over a text file" "not an earlier" "$p" "$T" trace export --format $f -o "$p" "$w/t.nct"
	done

	# ---- -o FILE: written ----
	p=$d/new.csv
	if export_to "$U" csv "$p" && is_csv "$p" && [ "$(stat -c '%F %a %u' "$p")" = "regular file 644 $uid" ]; then
		ok "$U: -o a new path: written, mode 644, owner $U"
	else
		bad "$U: -o a new path: $(cat "$w/err"); $(stat -c '%F %a %u' "$p" 2>&1)"
	fi
	# an earlier export is replaced, whatever its format and the new one's
	prev=csv
	for f in chrome perfetto csv csv; do
		ino=$(stat -c %i "$p")
		if export_to "$U" $f "$p"; then
			case $f in
			csv) is_csv "$p" ;;
			chrome) head -c 40 "$p" | grep -q '^{"displayTimeUnit"' ;;
			perfetto) [ "$(od -An -tx1 -N1 "$p" | tr -d ' ')" = 0a ] ;;
			esac && [ "$(stat -c %i "$p")" != "$ino" ] &&
				ok "$U: $f over an earlier $prev export: replaced" ||
				bad "$U: $f over an earlier $prev export: not replaced"
		else
			bad "$U: $f over an earlier $prev export: status $?, $(cat "$w/err")"
		fi
		prev=$f
	done
	# the mktemp pattern: an empty file of this user's, its mode kept
	p=$(as "$U" mktemp "$d/mktemp.XXXXXX")
	if export_to "$U" csv "$p" && is_csv "$p" && [ "$(stat -c '%a %u' "$p")" = "600 $uid" ]; then
		ok "$U: -o an empty mktemp file: written, mode 600 kept"
	else
		bad "$U: -o an empty mktemp file: $(cat "$w/err"); $(stat -c '%F %a %u' "$p" 2>&1)"
	fi
	# a FIFO with a reader
	p=$d/fifo-read
	as "$U" mkfifo "$p"
	before=$(snap "$p")
	cat "$p" >"$w/fifo.got" &
	rpid=$!
	sleep 0.2
	export_to "$U" csv "$p"
	st=$?
	wait $rpid
	[ $st -eq 0 ] && is_csv "$w/fifo.got" && [ "$before" = "$(snap "$p")" ] &&
		ok "$U: -o a FIFO with a reader: written into it" ||
		bad "$U: -o a FIFO with a reader: status $st, $(cat "$w/err")"
	# /dev/null and the null device's numbers elsewhere
	before=$(snap /dev/null)
	export_to "$U" csv /dev/null && [ "$before" = "$(snap /dev/null)" ] &&
		ok "$U: -o /dev/null" || bad "$U: -o /dev/null: $(cat "$w/err")"
	if [ "$(id -u)" = 0 ]; then
		p=$d/null
		make_kind nullnode "$p" root
		before=$(snap "$p")
		export_to "$U" csv "$p" && [ "$before" = "$(snap "$p")" ] &&
			ok "$U: -o a null device node (1:3) elsewhere: written, unchanged" ||
			bad "$U: -o a null device node: $(cat "$w/err")"
	fi
	# /dev/stdout: the standard output the shell opened
	p=$d/stdout.csv
	as "$U" sh -c '"$1" trace export --format csv -o /dev/stdout "$2" >"$3"' sh "$T" "$w/t.nct" "$p" 2>"$w/err" &&
		is_csv "$p" && ok "$U: -o /dev/stdout: standard output" || bad "$U: -o /dev/stdout: $(cat "$w/err")"
	# /dev/fd/N: a descriptor the shell opened (what `>(...)` names)
	p=$d/fd3.csv
	as "$U" sh -c '"$1" trace export --format csv -o /dev/fd/3 "$2" 3>"$3"' sh "$T" "$w/t.nct" "$p" 2>"$w/err" &&
		is_csv "$p" && ok "$U: -o /dev/fd/3: the descriptor the shell opened" || bad "$U: -o /dev/fd/3: $(cat "$w/err")"
	# a terminal (script(1) gives the command one)
	if command -v script >/dev/null 2>&1; then
		for t in /dev/tty '$(tty)'; do
			as "$U" script -qec "\"$T\" trace export --format csv -o $t \"$w/t.nct\"" /dev/null \
				</dev/null >"$w/out" 2>&1
			st=$?
			[ $st -eq 0 ] && grep -q '^file,thread,thread_name' "$w/out" &&
				ok "$U: -o $t (a terminal)" || bad "$U: -o $t: status $st, $(head -c 300 "$w/out")"
		done
	else
		skipped machine "$U: -o a terminal: no script(1) (util-linux)"
	fi

	# ---- -o DIR (CTF) ----
	for spec in dirfull:me:"not an earlier" dir:other:"another user" linkdir:me:"symbolic link" \
		text:me:"not a directory" fifo:me:"not a directory"; do
		k=${spec%%:*} rest=${spec#*:}
		owner=${rest%%:*} word=${rest#*:}
		[ "$owner" = me ] && owner=$U
		[ "$owner" = other ] && owner=$O
		case $owner in "$U") ;; *) [ "$(id -u)" = 0 ] || continue ;; esac
		p=$d/ctf-$k.$owner
		make_kind "$k" "$p" "$owner"
		[ "$k" = linkdir ] && also=$p.target
		refused "$U" "--format ctf -o over $k ($owner's)" "$word" "$p" "$T" trace export --format ctf -o "$p" "$w/t.nct"
	done
	p=$d/ctf
	as "$U" mkdir "$p"
	export_to "$U" ctf "$p" && [ -f "$p/metadata" ] && ok "$U: ctf into an empty directory of this user's" ||
		bad "$U: ctf into an empty directory: $(cat "$w/err")"
	export_to "$U" ctf "$p" && [ -f "$p/metadata" ] && ok "$U: ctf over an earlier ctf export" ||
		bad "$U: ctf over an earlier ctf export: $(cat "$w/err")"
done

# ---- a full disk: the path and the reason ----
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then
	mkdir "$w/full"
	# inside: an earlier (small) export at out.csv, then a large one over it
	# shellcheck disable=SC2016
	unshare -m sh -c '
		mount -t tmpfs -o size=16k,mode=755 tmpfs "$1" || { echo nomount; exit 1; }
		head -n 3 "$3" >"$1/out.csv"
		before=$(sha256sum <"$1/out.csv")
		"$2" trace export --format csv -o "$1/out.csv" "$4" 2>"$5/err.csv"
		echo "csv $? $(ls -A "$1" | tr "\n" " ")"
		[ "$(sha256sum <"$1/out.csv")" = "$before" ] && echo "csv kept"
		"$2" trace export --format ctf -o "$1/ctf" "$4" 2>"$5/err.ctf"
		echo "ctf $? $(ls -A "$1" | tr "\n" " ")"
	' sh "$w/full" "$T" "$w/ref.csv" "$w/t.nct" "$w" >"$w/full.out" 2>&1
	if grep -q '^csv 1 out.csv $' "$w/full.out" && grep -q '^csv kept$' "$w/full.out" &&
		[ "$(wc -l <"$w/err.csv")" -eq 1 ] && grep -q "$w/full/out.csv.*No space left on device" "$w/err.csv"; then
		ok "full disk, csv: status 1, $(cat "$w/err.csv"); the earlier export kept, nothing left beside it"
	elif grep -q '^nomount' "$w/full.out"; then
		skipped machine "full disk: could not mount a tmpfs: $(head -c 200 "$w/full.out")"
	else
		bad "full disk, csv: $(cat "$w/full.out" "$w/err.csv" 2>&1 | head -c 600)"
	fi
	if grep -q '^csv' "$w/full.out"; then
		grep -q '^ctf 1 out.csv $' "$w/full.out" && [ "$(wc -l <"$w/err.ctf")" -eq 1 ] &&
			grep -q "$w/full/ctf: .*No space left on device" "$w/err.ctf" &&
			ok "full disk, ctf: status 1, $(cat "$w/err.ctf"); nothing left" ||
			bad "full disk, ctf: $(cat "$w/full.out" "$w/err.ctf" 2>&1 | head -c 600)"
	fi
else
	skipped root "full disk: needs root and unshare (a tmpfs of 16 KB in a mount namespace): not tested"
fi

# ---- bench --plot DIR ----
gp_line='# Drawn by `nanoclock bench --plot`: cd to this directory and run gnuplot plot.gp'
plot() { # USER DIR: the plot command (short) as USER
	as "$1" timeout 120 "$T" bench --plot "$2" --quick --seconds 0.1 >"$w/out" 2>"$w/err" </dev/null
}
make_plotdir() { # PATH OWNER: an earlier plot's directory
	as "$2" sh -c 'mkdir -m 755 "$1" && printf "%s\n" "$2" >"$1/plot.gp" && : >"$1/cost.dat"' sh "$1" "$gp_line"
}
for U in $users; do
	O=$(other_of "$U")
	d=$pub/$U
	uid=$(uid_of "$U")
	p=$d/plot-link
	make_kind linkdir "$p" "$U"
	also=$p.target
	refused "$U" "--plot a symbolic link to a directory" "symbolic link" "$p" "$T" bench --plot "$p" --quick --seconds 0.1
	p=$d/plot-text
	make_kind text "$p" "$U"
	refused "$U" "--plot a text file" "not a directory" "$p" "$T" bench --plot "$p" --quick --seconds 0.1
	if [ "$(id -u)" = 0 ]; then
		p=$d/plot-other
		make_kind dir "$p" "$O"
		refused "$U" "--plot another user's empty directory" "another user" "$p" "$T" bench --plot "$p" --quick --seconds 0.1
	fi
	p=$d/plot-777
	as "$U" mkdir -m 777 "$p"
	refused "$U" "--plot a directory writable by others" "writable by others" "$p" "$T" bench --plot "$p" --quick --seconds 0.1
	p=$d/plot-full
	make_kind dirfull "$p" "$U"
	as "$U" chmod 755 "$p"
	refused "$U" "--plot a directory of other files" "not an earlier plot" "$p" "$T" bench --plot "$p" --quick --seconds 0.1
	p=$d/plot-pnglink
	make_plotdir "$p" "$U"
	as "$U" sh -c 'printf "precious\n" >"$1.target" && ln -s "$1.target" "$1/cost.png"' sh "$p"
	also=$p.target
	refused "$U" "--plot an earlier plot whose cost.png is a link" "symbolic link" "$p/cost.png" "$T" bench --plot "$p" --quick --seconds 0.1
	p=$d/plot-fifo
	make_plotdir "$p" "$U"
	as "$U" sh -c 'rm "$1/cost.dat" && mkfifo "$1/cost.dat"' sh "$p"
	refused "$U" "--plot an earlier plot whose cost.dat is a FIFO" "FIFO" "$p/cost.dat" "$T" bench --plot "$p" --quick --seconds 0.1
	if [ "$(id -u)" = 0 ]; then
		p=$d/plot-otherpng
		make_plotdir "$p" "$U"
		as "$O" sh -c 'printf "theirs\n" >"$1"' sh "$pub/otherpng"
		mv "$pub/otherpng" "$p/offset.png"
		refused "$U" "--plot an earlier plot with another user's offset.png" "another user" "$p/offset.png" "$T" bench --plot "$p" --quick --seconds 0.1
	fi
	if ! command -v gnuplot >/dev/null 2>&1; then
		skipped machine "$U: --plot drawing: no gnuplot (apt-get install gnuplot-nox)"
		continue
	fi
	p=$d/plots/a
	if plot "$U" "$p" && [ "$(stat -c '%F %a %u' "$p")" = "directory 755 $uid" ] &&
		[ "$(head -n 1 "$p/plot.gp")" = "$gp_line" ] && [ -s "$p/cost.png" ] && [ -s "$p/calib.png" ]; then
		ok "$U: --plot a new directory: made (mode 755), 3 PNGs"
	else
		bad "$U: --plot a new directory: $(cat "$w/err"); $(ls -la "$p" 2>&1 | head -5)"
	fi
	# again, with cost.png kept elsewhere by a hard link: that one stays
	as "$U" ln "$p/cost.png" "$d/kept.png" 2>/dev/null
	before=$(snap "$d/kept.png")
	if plot "$U" "$p" && [ "$before" = "$(snap "$d/kept.png")" ] && [ -s "$p/cost.png" ]; then
		ok "$U: --plot an earlier plot's directory: drawn again; a hard link to the old cost.png kept"
	else
		bad "$U: --plot again: $(cat "$w/err"); kept.png before '$before' after '$(snap "$d/kept.png")'"
	fi
done

# ---- the way to the output: nothing of a stranger's in a sticky folder ----
# A link or a folder that another user made in a world-writable sticky
# folder (here $pub, as /tmp) is never gone through on the way to an
# output, whatever fs.protected_symlinks says (it is 0 on some machines):
# its owner may point it anywhere, at any time.
if [ "$(id -u)" = 0 ]; then
	prey=$w/prey
	mkdir -m 777 "$prey"
	ln -s "$prey" "$pub/evil" && chown -h nobody "$pub/evil"
	mkdir -m 777 "$pub/theirs" && chown nobody "$pub/theirs"
	for via in evil theirs; do
		p=$pub/$via/out.csv
		refused root "-o past a stranger's $via in a sticky folder" "not followed" "$p" "$T" trace export --format csv -o "$p" "$w/t.nct"
		p=$pub/$via/out-ctf
		refused root "-o (ctf) past a stranger's $via in a sticky folder" "not followed" "$p" "$T" trace export --format ctf -o "$p" "$w/t.nct"
		p=$pub/$via/plot
		refused root "--plot past a stranger's $via in a sticky folder" "not followed" "$p" "$T" bench --plot "$p" --quick --seconds 0.1
		p=$pub/$via/deeper/plot
		refused root "--plot (folders to make) past a stranger's $via" "not followed" "$p" "$T" bench --plot "$p" --quick --seconds 0.1
	done
	if [ -z "$(ls -A "$prey")" ]; then
		ok "nothing written where the stranger's link leads"
	else
		bad "written where the stranger's link leads: $(ls -A "$prey")"
	fi
	# this user's own link there is followed as usual
	ln -s "$prey" "$pub/mine"
	if export_to root csv "$pub/mine/out.csv" && is_csv "$prey/out.csv"; then
		ok "-o through this user's own link in a sticky folder: written"
	else
		bad "-o through this user's own link: $(cat "$w/err")"
	fi
	rm -rf "$pub/evil" "$pub/theirs" "$pub/mine" "$prey"
else
	skipped root "not root: no link of another user's can be planted; the way to an output not tested"
fi

echo "tests/tool/test_outputs.sh: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
