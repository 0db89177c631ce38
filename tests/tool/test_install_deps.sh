#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/install-test-deps with apt-get, dpkg-query and the compiler
# replaced by stubs (nothing is installed): it names what it installs, one
# package per word, and asks apt-get for exactly those packages.
#   tests/tool/test_install_deps.sh
set -u
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
# apt-get records its arguments, and whether services were held back
# (policy-rc.d there while it ran); dpkg-query knows no package; the
# compiler cannot link cmocka; id says root (no sudo)
cat > "$tmp/bin/apt-get" <<STUB
#!/bin/sh
echo "\$*" >> "$tmp/apt.log"
case "\$*" in install*) [ -x "$tmp/policy-rc.d" ] && echo held >> "$tmp/apt.log" ;; esac
STUB
printf '#!/bin/sh\nexit 1\n' > "$tmp/bin/dpkg-query"
printf '#!/bin/sh\nexit 1\n' > "$tmp/bin/nocc"
printf '#!/bin/sh\necho 0\n' > "$tmp/bin/id"
chmod +x "$tmp/bin/"*
# the PATH is the stubs and the few programs the script runs besides:
# command -v finds no strace, node, gnuplot... whatever this machine has
for c in sh tee chmod rm cat; do ln -s "$(command -v $c)" "$tmp/bin/$c"; done
pass=0
fail=0
# case WANT-MESSAGE WANT-PACKAGES ARGS...
case_() {
	want=$1 pkgs=$2
	shift 2
	: > "$tmp/apt.log"
	PATH="$tmp/bin" CC=nocc NC_POLICY_RC_D="$tmp/policy-rc.d" scripts/install-test-deps "$@" \
		2> "$tmp/err" > /dev/null
	# services held back while apt-get ran, and the hold lifted after
	if [ -e "$tmp/policy-rc.d" ]; then
		fail=$((fail + 1))
		echo "FAIL: install-test-deps $*: left policy-rc.d behind"
	fi
	msg=$(grep 'installing' "$tmp/err")
	got=$(grep '^install' "$tmp/apt.log" | sed 's/.*DPkg::Lock::Timeout=600 //')
	held=$(grep -c '^held' "$tmp/apt.log")
	if [ "$msg" = "$want" ] && [ "$got" = "$pkgs" ] && [ "$held" = 1 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: install-test-deps $*: said '$msg' (want '$want'), installed '$got' (want '$pkgs')"
	fi
}
case_ "install-test-deps: installing libcmocka-dev strace" "libcmocka-dev strace"
case_ "install-test-deps: installing scdoc cmake" "scdoc cmake" scdoc cmake
case_ "install-test-deps: installing chrony liblttng-ust-dev lttng-tools babeltrace2 protobuf-compiler nodejs npm gnuplot-nox linuxptp iproute2" \
	"chrony liblttng-ust-dev lttng-tools babeltrace2 protobuf-compiler nodejs npm gnuplot-nox linuxptp iproute2" optional
case_ "install-test-deps: installing liblttng-ust-dev lttng-tools babeltrace2" \
	"liblttng-ust-dev lttng-tools babeltrace2" lttng
echo "tests/tool/test_install_deps.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
