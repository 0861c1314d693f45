#!/usr/bin/env bash
# Builds the Python binding in release mode into workers/python/.venv (maturin develop puts
# tasker/_native.abi3.so next to the Python sources). Idempotent: installs only what is missing
# (python3 >= 3.11 with venv through cargo-make/ensure-deps.sh, then maturin, hatchling (the
# client package's build backend), pytest, pika, httpx and attrs (the API client's),
# openapi-python-client (generates the client's wire types and requests), mypy (the client's
# type test), jsonschema (the protocol check) and openapi-spec-validator (the test of
# /openapi.json, tests/fast/openapi.rs) in the venv), then generates tasker/client/_api from the
# repository's openapi.json (client/generate.py: only when the document changed). Runs from any
# folder; honours CARGO_TARGET_DIR (default: the repository's target/).
# `build.sh --venv` prepares the venv and the generated client only, without Rust (what
# `package.sh --client` needs).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
venv="$here/.venv"

has_python() {
    python3 -c 'import sys, venv, ensurepip; assert sys.version_info >= (3, 11)' 2>/dev/null
}
# The "python" group of cargo-make/dependencies.txt: Debian's python3 and python3-venv, installed
# only when dpkg lacks them and no python3 >= 3.11 with venv is there otherwise (pyenv's counts).
"$root/cargo-make/ensure-deps.sh" python
has_python || { echo "build.sh: python3 >= 3.11 with the venv module is required" >&2; exit 1; }

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# The generator is pinned: its output is part of the client (a new version is a reviewed change).
generator="openapi-python-client==0.29.1"
if ! "$venv/bin/python" - "${generator##*==}" 2>/dev/null <<'PY'
import importlib.metadata, sys
import maturin, hatchling, pytest, pika, httpx, attrs, mypy, jsonschema, openapi_spec_validator
sys.exit(importlib.metadata.version("openapi-python-client") != sys.argv[1])
PY
then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "maturin>=1.16,<2" "hatchling>=1.26,<2" "pytest>=8" "pika>=1.3" "httpx>=0.28,<1" \
        "attrs>=23.2" "$generator" "mypy==2.4.1" "jsonschema>=4.18,<5" "openapi-spec-validator>=0.7,<1"
fi
# tasker/client/_api from ../../openapi.json (not committed; nothing to do when it is current).
"$venv/bin/python" "$here/client/generate.py"
[[ "${1:-}" == "--venv" ]] && exit 0

# The worker depends on tasker-workflows-client, and `maturin develop` pip-installs dependencies:
# installed here first, editable (a .pth to python/, no copies), pip finds it satisfied instead of
# asking PyPI for it. The distribution's old name (tasker-py) goes, if an older build left it.
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
if "${pip[@]}" show --quiet tasker-py 2>/dev/null; then
    "${pip[@]}" uninstall --quiet --yes tasker-py
fi
client_installed() {  # at the version client/pyproject.toml says (the one the worker pins)
    "$venv/bin/python" - "$here/client/pyproject.toml" 2>/dev/null <<'PY'
import importlib.metadata, sys, tomllib
with open(sys.argv[1], "rb") as f:
    wanted = tomllib.load(f)["project"]["version"]
sys.exit(importlib.metadata.version("tasker-workflows-client") != wanted)
PY
}
if ! client_installed; then
    "${pip[@]}" install --quiet --no-deps --no-build-isolation --editable "$here/client"
fi

cd "$here"
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --release --quiet 2>&1 \
    | grep -v -e '^ *Compiling' -e '^ *Finished' -e 'Blocking waiting' || true
# maturin's exit status is lost in the pipe: check the result instead.
"$venv/bin/python" -c 'import tasker._native' \
    || { echo "build.sh: the tasker._native extension did not build" >&2; exit 1; }
