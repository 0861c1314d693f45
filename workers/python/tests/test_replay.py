"""`tasker replay` and tasker.testing.replay: a step that failed on a real cluster runs again in
this process, on exactly the inputs its failed attempt received (a digest of them compared)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tasker
from conftest import REPO, Orchestrator, TaskerEnv, registering_worker
from tasker.testing import replay, replay_inputs

NS = "python_replay"

TEMPLATE = f"""
namespace: {NS}
name: replayed
version: 1.0.0
steps:
  - name: prepare
    handler: replay_prepare
  - name: charge
    handler: replay_charge
    depends_on: [prepare]
    retry: {{max_attempts: 1}}
"""

# Loaded by the worker here and by `python -m tasker.testing --handlers` in a child process:
# each attempt appends a digest of what its handler received to the file REPLAY_DIGESTS names.
HANDLERS = '''
import hashlib, json, os
import tasker

@tasker.handler("replay_prepare")
def prepare(ctx):
    return {"amount": 12.5, "items": ["b", "a"], "big": 2 ** 60, "nested": {"z": 1, "a": [1.0, 2]}}

@tasker.handler("replay_charge")
def charge(ctx):
    received = json.dumps([ctx.context, ctx.parent_results, ctx.input, ctx.attempt, ctx.max_attempts])
    with open(os.environ["REPLAY_DIGESTS"], "a") as f:
        f.write(hashlib.sha256(received.encode()).hexdigest() + "\\n")
    raise ValueError(f"card declined for {ctx.context['customer']}")
'''


@pytest.fixture(scope="module")
def handlers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, object]]:
    folder = tmp_path_factory.mktemp("replay")
    (folder / "handlers.py").write_text(HANDLERS)
    digests = folder / "digests"
    os.environ["REPLAY_DIGESTS"] = str(digests)
    spec = importlib.util.spec_from_file_location("replay_handlers", folder / "handlers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield folder, module
    os.environ.pop("REPLAY_DIGESTS", None)


@pytest.fixture(scope="module")
def replay_worker(
    tasker_env: TaskerEnv, orchestrator: Orchestrator, handlers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tasker.Worker]:
    templates = tmp_path_factory.mktemp("replay_templates")
    (templates / "replayed.yaml").write_text(TEMPLATE)
    yield from registering_worker(tasker_env, orchestrator, templates, tasker.default_registry, NS)


def test_a_failed_step_replays_with_byte_identical_inputs(orchestrator: Orchestrator, handlers, replay_worker) -> None:
    folder, _ = handlers
    digests = folder / "digests"
    with tasker.Client(orchestrator.url) as client:
        task = client.create_task(NS, "replayed", {"customer": "ana", "cart": [3, 1, 2], "note": "é✓"})
        done = client.wait(task.id, timeout=60)
        assert done.state == "error", done
        live = digests.read_text().split()
        assert len(live) == 1

        # In process, from the testing module.
        replayed = replay(str(task.id), "charge", client=client)
        assert replayed.outcome.kind == "ValueError" and "card declined for ana" in replayed.outcome.message
        assert replayed.reproduced is True
        assert replayed.recorded["kind"] == "ValueError"
        assert digests.read_text().split() == live * 2

        inputs = client.step_inputs(task.id, "charge", attempt=1)
        assert inputs["parent_results"]["prepare"]["big"] == 2 ** 60
        assert replay_inputs(inputs).outcome.kind == "ValueError"
        with pytest.raises(tasker.InvalidRequest):
            client.step_inputs(task.id, "charge", attempt=2)
        with pytest.raises(tasker.NotFound):
            client.step_inputs(task.id, "nope")

    # From the command line: `tasker replay` runs the handler in a child process.
    cli = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target") / "debug" / "tasker"
    run = subprocess.run(
        [str(cli), "--url", orchestrator.url, "replay", str(task.id), "charge", "--",
         sys.executable, "-m", "tasker.testing", "--handlers", str(folder / "handlers.py")],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "charge (attempt 1): failed with ValueError: card declined for ana" in run.stdout
    assert "reproduced" in run.stdout
    assert digests.read_text().split() == live * 4
