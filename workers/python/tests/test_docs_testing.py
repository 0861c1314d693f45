"""docs/testing.md's Python handler and workflow tests run as written, with pytest, in a folder of
their own."""

import re
import subprocess
import sys
from pathlib import Path

from conftest import WORKER_DIR

DOCS = WORKER_DIR.parent.parent / "docs/testing.md"


def run_docs_test(folder: Path, name: str, files: dict[str, str], passed: int) -> None:
    """Writes the docs' block headed `# name` (and `files`) into `folder` and runs it with
    pytest: all `passed` of its tests pass."""
    docs = DOCS.read_text()
    block = re.search(rf"```python\n(# {re.escape(name)}\n.*?)```", docs, re.DOTALL)
    assert block, f"docs/testing.md has no `# {name}` block"
    for path, text in {name: block.group(1), **files}.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{passed} passed" in run.stdout, run.stdout


def test_the_docs_python_handler_test_passes(tmp_path) -> None:
    run_docs_test(tmp_path, "test_route.py", {}, passed=2)


def test_the_docs_python_workflow_test_passes(tmp_path) -> None:
    template = re.search(
        r"`templates/week\.yaml`:\n\n```yaml\n(.*?)```", DOCS.read_text(), re.DOTALL
    )
    assert template, "docs/testing.md has no templates/week.yaml"
    run_docs_test(
        tmp_path, "test_week.py", {"templates/week.yaml": template.group(1)}, passed=1
    )
