#!/usr/bin/env bash
# Build a free-threaded CPython 3.13 (configure --disable-gil); see usage() below.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: tools/build_free_threaded_python.sh [--prefix DIR] [--jobs N] [--suite SUITE]

Builds a free-threaded CPython 3.13 ("3.13t": ./configure --disable-gil) into
DIR and prints the path of its interpreter (DIR/bin/python3.13t) as the last
line of its output.

Where the source comes from: the pristine upstream tarball
(python3.13_<version>.orig.tar.xz, python.org's Python-<version>.tar.xz
unchanged) that Debian's "python3.13" source package ships, fetched with
`apt-get source --download-only python3.13` from a deb-src entry for a Debian
suite that has Python 3.13 (default: trixie). apt checks the tarball against
the SHA-256 in that suite's Sources index, which the Debian archive key signs.
The entry lives in a private apt configuration under DIR/src: the machine's
apt sources and lists are not touched. Debian's patches (the .debian.tar.xz)
are not applied: this is upstream's CPython.

Idempotent: when DIR/bin/python3.13t exists, runs, and reports the GIL
disabled, it is reused (nothing is downloaded or built). Delete DIR to
rebuild.

Options (each also as an environment variable):
  --prefix DIR    FREE_THREADED_PREFIX; default
                  ${XDG_CACHE_HOME:-$HOME/.cache}/modelmanager-lockstep/python3.13t
                  (keep it outside the repository)
  --jobs N        FREE_THREADED_JOBS; make -jN, default: the number of CPUs
  --suite SUITE   FREE_THREADED_SUITE; the Debian suite, default trixie

Needs: apt-get and dpkg-dev (apt-get source), a C toolchain, and the usual
CPython build dependencies (libssl-dev, libffi-dev, zlib1g-dev, libbz2-dev,
liblzma-dev, libsqlite3-dev, libreadline-dev, uuid-dev); as root the missing
ones are installed with apt-get. Measured: about 2.5 minutes with make -j2 on
a 2-core machine (no profile-guided optimisation: it would take several times
longer).
EOF
}

prefix="${FREE_THREADED_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/modelmanager-lockstep/python3.13t}"
jobs="${FREE_THREADED_JOBS:-$(nproc)}"
suite="${FREE_THREADED_SUITE:-trixie}"
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        --suite) suite="${2:?--suite needs a Debian suite}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$jobs" in
    ''|*[!0-9]*|0) echo "--jobs must be a positive integer, got '$jobs'" >&2; exit 2 ;;
esac
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
python="$prefix/bin/python3.13t"

is_free_threaded() {
    [ -x "$python" ] && "$python" -c '
import sys, sysconfig
sys.exit(0 if sysconfig.get_config_var("Py_GIL_DISABLED") and not sys._is_gil_enabled() else 1)
' 2>/dev/null
}

if is_free_threaded; then
    echo "reusing $("$python" -VV | head -1) (GIL disabled) in $prefix"
    echo "$python"
    exit 0
fi

started=$SECONDS
# The build dependencies (root only; otherwise they must be there already).
needed=(dpkg-dev build-essential libssl-dev libffi-dev zlib1g-dev libbz2-dev liblzma-dev
        libsqlite3-dev libreadline-dev uuid-dev xz-utils)
missing=()
for package in "${needed[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" \
        || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "missing build dependencies (install them as root): ${missing[*]}" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# A private apt configuration with one deb-src entry: the suite's Sources index only.
src="$prefix/src"
mkdir -p "$src/apt/lists/partial" "$src/apt/cache/archives/partial"
echo "deb-src http://deb.debian.org/debian $suite main" > "$src/apt/sources.list"
apt_private=(-o "Dir::Etc::SourceList=$src/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
             -o "Dir::State::Lists=$src/apt/lists" -o "Dir::Cache=$src/apt/cache"
             -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
echo "== fetching the python3.13 source package of Debian $suite =="
apt-get "${apt_private[@]}" update -qq
(cd "$src" && apt-get "${apt_private[@]}" source --download-only -qq python3.13)
tarball="$(ls -t "$src"/python3.13_*.orig.tar.xz | head -1)"
echo "upstream tarball: $(basename "$tarball")"

build="$src/build"
rm -rf "$build"
mkdir -p "$build"
tar -xf "$tarball" -C "$build" --strip-components=1
cd "$build"
# The compiler's output goes to a log (thousands of warnings), shown when a step fails.
log="$src/build.log"
step() {
    "$@" >>"$log" 2>&1 || { tail -n 60 "$log" >&2; echo "failed: $* (log: $log)" >&2; exit 1; }
}
: > "$log"
echo "== configure --disable-gil --prefix=$prefix =="
step ./configure --disable-gil --prefix="$prefix" --with-ensurepip=install
echo "== make -j$jobs =="
step make -j"$jobs"
step make install
cd "$prefix"
rm -rf "$build"
if ! is_free_threaded; then
    echo "built $python, but it is not a free-threaded interpreter with the GIL off" >&2
    exit 1
fi
echo "built $("$python" -VV | head -1) in $((SECONDS - started)) s (GIL disabled)"
echo "$python"
