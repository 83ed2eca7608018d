#!/usr/bin/env bash
# Runs units of Redis's own Tcl test suite against pion-server, in the harness's
# spawn mode: the harness writes a redis.conf, starts "src/redis-server" on it (here
# pion-server), waits for its log lines and drives it with its own client. Redis's test
# sources are not part of this repository: they come from the Debian source package of
# the same Redis version as the differential oracle, fetched once into a cache outside
# the clone. tests/redis-tcl/units.txt names the units; tests/redis-tcl/skip.txt names
# the tests that cannot pass here, each under a comment saying why. Whole groups are
# left out by the harness's tags: replication (Pion has none).
#
# Usage: scripts/redis-tcl-units.sh [path/to/pion-server] [extra harness options...]
# (PION_TCL_UNITS="unit/multi unit/pubsub" runs other units than units.txt's.)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
CACHE="${PION_REDIS_TCL_CACHE:-${CARGO_TARGET_DIR:-/var/tmp/pion-target}/redis-tcl}"
SERVER="${1:-${CARGO_TARGET_DIR:-/var/tmp/pion-target}/debug/pion-server}"
shift || true
SERVER="$(realpath "$SERVER")"

command -v tclsh >/dev/null 2>&1 || {
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq tcl >/dev/null
}

# The oracle's version, e.g. 7.0.15: the test sources must be that Redis's.
version=$(redis-server --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p')
src="$CACHE/redis-$version"
if [ ! -f "$src/tests/test_helper.tcl" ]; then
  echo "== fetching Redis $version's test sources (Debian source package)"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  . /etc/os-release
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  {
    echo "deb-src [signed-by=$keyring] http://deb.debian.org/debian $VERSION_CODENAME main"
    echo "deb-src [signed-by=$keyring] http://deb.debian.org/debian $VERSION_CODENAME-updates main"
    echo "deb-src [signed-by=$keyring] http://deb.debian.org/debian-security $VERSION_CODENAME-security main"
  } > "$work/sources.list"
  mkdir -p "$work/parts" "$work/lists/partial" "$work/cache/archives/partial"
  apt=(apt-get -q -o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/parts"
       -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1
       -o APT::Sandbox::User=root)
  "${apt[@]}" update >/dev/null
  (cd "$work" && "${apt[@]}" source --download-only redis >/dev/null)
  tarball=$(ls "$work"/redis_"$version".orig.tar.* 2>/dev/null | head -1)
  if [ -z "$tarball" ]; then
    echo "Redis $version's sources are not in the Debian archive" >&2
    exit 1
  fi
  mkdir -p "$CACHE"
  rm -rf "$src" && mkdir -p "$src"
  tar -xf "$tarball" -C "$src" --strip-components=1 "redis-$version/tests"
fi

# The harness's tree: its tests, and src/ with pion-server as redis-server.
run="$CACHE/run"
rm -rf "$run" && mkdir -p "$run/src"
cp -r "$src/tests" "$run/tests"
ln -s "$SERVER" "$run/src/redis-server"
ln -s "$(command -v redis-cli)" "$run/src/redis-cli"
ln -s "$(command -v redis-benchmark)" "$run/src/redis-benchmark"
grep -vE '^\s*(#|$)' "$ROOT/tests/redis-tcl/skip.txt" > "$run/skip.txt" || true
units=()
names=()
while read -r unit; do
  units+=(--single "$unit")
  names+=("$unit")
done < <(if [ -n "${PION_TCL_UNITS:-}" ]; then tr ' ,' '\n\n' <<< "$PION_TCL_UNITS"; \
          else grep -vE '^\s*(#|$)' "$ROOT/tests/redis-tcl/units.txt"; fi)

cd "$run"
# Servers the harness leaves behind when it is interrupted are stopped on the way out.
trap 'rm -rf "${work:-}"; pkill -9 -f "^src/redis-server ./tests/tmp/" 2>/dev/null || true' EXIT
echo "== Redis $version Tcl units against pion-server: ${names[*]}"
set +e
tclsh tests/test_helper.tcl --clients 2 --timeout 600 "${units[@]}" \
  --tags -repl --tags -needs:repl --tags -masterauth --skipfile "$run/skip.txt" "$@" \
  > "$run/output.log" 2>&1
status=$?
set -e
grep -aE 'done.{0,8}\]:|(err|exception).{0,8}\]:' "$run/output.log" || true
echo "$(grep -ac 'ok.\{0,8\}\]:' "$run/output.log") passed, $(grep -ac 'skip.\{0,8\}\]:' "$run/output.log") skipped (tests/redis-tcl/skip.txt says why)"
if [ "$status" -ne 0 ] || ! grep -q "All tests passed without errors" "$run/output.log"; then
  echo "Redis's Tcl units failed against pion-server (full log: $run/output.log)" >&2
  # The harness colours its tags ("[\e[0;31;49mexception\e[0m]:"): match through that.
  grep -a -A20 -E '\[.{0,8}(err|exception).{0,8}\]:' "$run/output.log" | head -160 >&2 || true
  exit 1
fi
