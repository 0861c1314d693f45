#!/usr/bin/env bash
# Create (or reuse) a throwaway virtualenv holding the pinned Celery used by celery_chain.py.
#
# Usage: setup_celery_venv.sh [VENV_DIR]      (default: <repo>/target/celery-venv, which is
#                                              /work/main/target/celery-venv in this checkout)
# The last line printed is the venv's python, so callers can do:
#   PY=$(benches/peers/setup_celery_venv.sh | tail -n1)
set -euo pipefail

# Newest Celery 5.x on PyPI when this was written; pinned so peer figures stay comparable.
CELERY_VERSION="5.7.0"

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV_DIR="${1:-$REPO_ROOT/target/celery-venv}"

if [[ ! -x "$VENV_DIR/bin/python" ]]; then
    echo "creating venv at $VENV_DIR" >&2
    python3 -m venv "$VENV_DIR"
fi
# Absolute, so the path printed last works from any directory.
PY="$(cd "$VENV_DIR" && pwd)/bin/python"

# Ask the venv's own pip which Celery it has (empty if none); `pip show` exits 1 when absent.
installed="$("$PY" -m pip show celery 2>/dev/null | sed -n 's/^Version: //p' || true)"

if [[ "$installed" == "$CELERY_VERSION" ]]; then
    echo "celery $CELERY_VERSION already installed in $VENV_DIR" >&2
else
    echo "installing celery==$CELERY_VERSION into $VENV_DIR (found: ${installed:-none})" >&2
    "$PY" -m pip install --quiet --disable-pip-version-check "celery==$CELERY_VERSION" >&2
fi

echo "$PY"
