"""The README's handler example runs as written (in a fresh interpreter: it registers in the
default registry under names the fixture handlers also use)."""

import re
import subprocess
import sys

from conftest import WORKER_DIR

CHECK = """
import asyncio, sys, tasker
from tasker.worker import load_handlers
load_handlers(sys.argv[1])
def ctx(context, parents):
    return tasker.StepContext("t", "s", "ns", "task", "step", "h", 1, 1, context, parents, 1000)
reg = tasker.default_registry
assert reg.get("double").fn(ctx({"value": 4}, {})) == {"value": 8}
try:
    reg.get("double").fn(ctx({"value": "x"}, {}))
    raise SystemExit("no error")
except tasker.PermanentError as e:
    assert type(e).__name__ == "Rejected"
total = asyncio.run(reg.get("sum_parents").fn(ctx({}, {"a": {"value": 2}, "b": {"value": 3}})))
assert total == {"value": 5} and reg.get("sum_parents").is_async
print("ok")
"""


def test_readme_handler_example(tmp_path) -> None:
    readme = (WORKER_DIR / "README.md").read_text()
    snippet = re.search(r"```python\n(# handlers.py\n.*?)```", readme, re.S).group(1)
    (tmp_path / "handlers.py").write_text(snippet)
    out = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path / "handlers.py")],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
