#!/usr/bin/env bash
# Builds the Python package into DIR (default <repo>/target/packages) and prints the wheel's path:
# one abi3 wheel (CPython >= 3.11, this platform) with the `tasker` package, its types (py.typed
# and tasker/_native.pyi, the native module's stub) and the release build of the extension, and
# the `tasker-worker-python` command. build.sh first (the venv with maturin, and the binding:
# `maturin build` then reuses its compiled crates). Honours CARGO_TARGET_DIR. Runs from any folder.
#
#   workers/python/package.sh [DIR]
#   python -m pip install DIR/tasker_py-0.1.0-cp311-abi3-*.whl
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
out="${1:-$root/target/packages}"

"$here/build.sh" >&2
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# Built into a folder of its own, so the path printed is this build's wheel and no other.
staging="$(mktemp -d "$CARGO_TARGET_DIR/tmp-wheel.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
cd "$here"
VIRTUAL_ENV="$here/.venv" PATH="$here/.venv/bin:$PATH" \
    maturin build --release --quiet --out "$staging" >&2
wheels=("$staging"/*.whl)
[[ ${#wheels[@]} == 1 && -f "${wheels[0]}" ]] \
    || { echo "package.sh: expected one wheel from maturin, got: ${wheels[*]}" >&2; exit 1; }
wheel="$out/$(basename "${wheels[0]}")"
mv -f "${wheels[0]}" "$wheel"
echo "$wheel"
