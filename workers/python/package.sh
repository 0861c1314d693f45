#!/usr/bin/env bash
# Builds a Python package into DIR (default <repo>/target/packages) and prints the wheel's path.
#
# - `package.sh [DIR]`: the worker, tasker-workflows: one abi3 wheel (CPython >= 3.11, this
#   platform) with the `tasker` package but tasker/client, its types (py.typed and
#   tasker/_native.pyi, the native module's stub), the release build of the extension and the
#   `tasker-worker-python` command; it depends on tasker-workflows-client of its version.
#   `build.sh --venv` first (the venv with maturin; `maturin build` compiles the extension,
#   reusing the release crates of any earlier build). Not the whole build.sh: its `maturin
#   develop` reinstalls the binding in place, under the feet of a worker starting from it (the
#   slow suites run beside tests/slow/packages.rs). Honours CARGO_TARGET_DIR.
# - `package.sh --client [DIR]`: the API client alone, tasker-workflows-client: a pure-Python
#   wheel (py3-none-any) with tasker/client and its py.typed, built by hatchling from
#   client/pyproject.toml in the venv (`build.sh --venv`: no Rust).
#
# Runs from any folder. Install the worker with the client beside it, from the same folder:
#
#   workers/python/package.sh --client DIR && workers/python/package.sh DIR
#   python -m pip install --find-links DIR tasker-workflows          # or tasker-workflows-client
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
client=false
if [[ "${1:-}" == "--client" ]]; then
    client=true
    shift
fi
out="${1:-$root/target/packages}"
python="$here/.venv/bin/python"

"$here/build.sh" --venv >&2
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The pin in the worker's dependencies and the client's version must be the worker's version
# (Cargo.toml's, which maturin gives the worker wheel): one release is one version of both.
"$python" - "$here/pyproject.toml" "$here/client/pyproject.toml" "$root/Cargo.toml" <<'PY' >&2
import sys, tomllib
def load(path):
    with open(path, "rb") as f:
        return tomllib.load(f)
worker, client, cargo = (load(p) for p in sys.argv[1:])
version = cargo["workspace"]["package"]["version"]
pin = f"tasker-workflows-client=={version}"
problems = []
if client["project"]["version"] != version:
    problems.append(f"client/pyproject.toml's version is {client['project']['version']}, not {version}")
if pin not in worker["project"]["dependencies"]:
    problems.append(f"pyproject.toml's dependencies lack {pin}")
if problems:
    sys.exit("package.sh: " + "; ".join(problems))
PY

# Built into a folder of its own, so the path printed is this build's wheel and no other.
mkdir -p "$CARGO_TARGET_DIR"
staging="$(mktemp -d "$CARGO_TARGET_DIR/tmp-wheel.XXXXXX")"
trap 'rm -rf "$staging"' EXIT
cd "$here"
if $client; then
    # No build isolation: hatchling comes from the venv, so nothing is fetched here.
    "$python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
        --wheel-dir "$staging" "$here/client" >&2
else
    VIRTUAL_ENV="$here/.venv" PATH="$here/.venv/bin:$PATH" \
        maturin build --release --quiet --out "$staging" >&2
fi
wheels=("$staging"/*.whl)
[[ ${#wheels[@]} == 1 && -f "${wheels[0]}" ]] \
    || { echo "package.sh: expected one wheel, got: ${wheels[*]}" >&2; exit 1; }

# Each wheel holds its own half of `tasker`: the client's only tasker/client (no tasker/__init__.py,
# nothing compiled), the worker's everything else.
"$python" - "${wheels[0]}" "$client" <<'PY' >&2
import sys, zipfile
wheel, client = sys.argv[1], sys.argv[2] == "true"
files = [n for n in zipfile.ZipFile(wheel).namelist() if not n.split("/")[0].endswith(".dist-info")]
if client:
    wrong = [n for n in files if not n.startswith("tasker/client/") or n.endswith((".so", ".pyd"))]
    missing = {"tasker/client/__init__.py", "tasker/client/py.typed"} - set(files)
else:
    wrong = [n for n in files if n.startswith("tasker/client/")]
    missing = {"tasker/__init__.py", "tasker/py.typed", "tasker/_native.pyi"} - set(files)
if wrong or missing:
    sys.exit(f"package.sh: {wheel}: should not hold {wrong}, lacks {sorted(missing)}")
PY
wheel="$out/$(basename "${wheels[0]}")"
mv -f "${wheels[0]}" "$wheel"
echo "$wheel"
