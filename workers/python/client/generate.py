"""Generates tasker.client's wire types and request functions from the API's OpenAPI document.

    python generate.py [--document openapi.json] [--out DIR] [--force]

Runs openapi-python-client (workers/python/build.sh installs it in the venv) on the document,
by default the repository's openapi.json into python/tasker/client/_api, the package the
hand-written client (tasker.client) is built on. The output is not committed: build.sh runs this
before anything imports the client, and it does nothing when the document, the settings
(openapi-python-client.yaml) and the generator's version are those of the last run. A new field
in an answer of the document is an attribute of the generated class, with no hand edit
(tests/test_contract.py shows it on a scratch copy).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
SETTINGS = HERE / "openapi-python-client.yaml"


def fingerprint(document: Path) -> str:
    """What the output depends on: the document, the settings and the generator's version."""
    digest = hashlib.sha256()
    for part in (document.read_bytes(), SETTINGS.read_bytes()):
        digest.update(hashlib.sha256(part).digest())
    digest.update(importlib.metadata.version("openapi-python-client").encode())
    return digest.hexdigest()


def generate(document: Path, out: Path) -> None:
    """Writes the package for `document` into `out`, replacing what was there at once."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".generating-") as scratch:
        staged = Path(scratch) / out.name
        # The generator's formatter (ruff, installed with it) is found beside this Python.
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        # Quiet unless it fails: it warns about POST /v1/templates (a YAML body, left out: the
        # client does not register templates) on every run.
        done = subprocess.run(
            [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(document),
             "--config", str(SETTINGS), "--meta", "none", "--output-path", str(staged)],
            env=env, capture_output=True, text=True,
        )
        if done.returncode != 0 or not (staged / "__init__.py").is_file():
            sys.exit(f"generate.py: openapi-python-client failed:\n{done.stdout}{done.stderr}")
        if out.exists():
            shutil.rmtree(out)
        staged.rename(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--document", type=Path, default=ROOT / "openapi.json")
    parser.add_argument("--out", type=Path, default=HERE.parent / "python/tasker/client/_api")
    parser.add_argument("--force", action="store_true", help="generate even when up to date")
    args = parser.parse_args()
    out = args.out.resolve()
    # The last run's fingerprint lives in the venv (build state), not in the package it ships.
    stamp = Path(sys.prefix) / "tasker-client-api" / hashlib.sha256(str(out).encode()).hexdigest()
    wanted = fingerprint(args.document)
    if not args.force and out.is_dir() and stamp.is_file() and stamp.read_text() == wanted:
        return 0
    generate(args.document.resolve(), out)
    stamp.parent.mkdir(exist_ok=True)
    stamp.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
