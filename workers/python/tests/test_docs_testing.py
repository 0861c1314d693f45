"""docs/testing.md's Python handler and workflow tests run as written, with pytest, in a folder of
their own."""

import re
import subprocess
import sys

from conftest import WORKER_DIR


def test_the_docs_python_handler_test_passes(tmp_path) -> None:
    docs = (WORKER_DIR.parent.parent / "docs/testing.md").read_text()
    block = re.search(r"```python\n(# test_route\.py\n.*?)```", docs, re.DOTALL).group(1)
    (tmp_path / "test_route.py").write_text(block)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_route.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout, run.stdout


def test_the_docs_python_workflow_test_passes(tmp_path) -> None:
    docs = (WORKER_DIR.parent.parent / "docs/testing.md").read_text()
    test = re.search(r"```python\n(# test_week\.py\n.*?)```", docs, re.DOTALL).group(1)
    template = re.search(r"`templates/week\.yaml`:\n\n```yaml\n(.*?)```", docs, re.DOTALL).group(1)
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "week.yaml").write_text(template)
    (tmp_path / "test_week.py").write_text(test)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_week.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout, run.stdout
