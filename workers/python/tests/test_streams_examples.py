"""The runnable examples of docs/streams.md (``examples/streams/``) against a real orchestrator
(conftest: ``tasker_env``, ``orchestrator``): the import that reports its progress, the LLM step
that streams its answer from a fake model, and ``follow.py``, the reader, run as a script. A
worker of this file's own runs the examples' handlers and registers the examples' templates
(the folder itself) with the session's orchestrator."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

import tasker
import tasker.registry
from conftest import REPO, WORKER_DIR, Orchestrator, TaskerEnv, registering_worker

EXAMPLE = WORKER_DIR / "examples/streams"
NS = "python_streams_example"


def load_example_handlers() -> tuple[ModuleType, tasker.Registry]:
    """Imports examples/streams/handlers.py with its ``@tasker.handler`` decorators registering
    in a registry of this file's own, not in ``tasker.default_registry`` (which the session's
    fixture worker runs)."""
    registry = tasker.Registry()
    spec = importlib.util.spec_from_file_location("streams_example_handlers",
                                                  EXAMPLE / "handlers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as patch:
        # `tasker.handler(name)` registers in the registry module's `default_registry`.
        patch.setattr(tasker.registry, "default_registry", registry)
        spec.loader.exec_module(module)
    assert registry.names() == ["answer", "import_rows"]
    assert "import_rows" not in tasker.default_registry and "answer" not in tasker.default_registry
    return module, registry


handlers, registry = load_example_handlers()


@pytest.fixture(scope="module")
def example_worker(tasker_env: TaskerEnv, orchestrator: Orchestrator) -> Iterator[tasker.Worker]:
    """A worker running the examples' handlers; it registers their templates with the session's
    orchestrator when it starts."""
    yield from registering_worker(tasker_env, orchestrator, EXAMPLE, registry, NS)


@pytest.fixture
def client(orchestrator: Orchestrator, example_worker: tasker.Worker) -> Iterator[tasker.Client]:
    with tasker.Client(orchestrator.url) as c:
        yield c


def follow(task_id: object, url: str) -> subprocess.CompletedProcess[str]:
    """``python follow.py TASK_ID URL``, as the examples' README says."""
    return subprocess.run(
        [sys.executable, str(EXAMPLE / "follow.py"), str(task_id), url],
        check=False, capture_output=True, text=True, timeout=120,
    )


PROGRESS = [{"done": n, "of": 40} for n in (10, 20, 30, 40)]


def test_the_import_reports_its_progress_after_each_batch(client: tasker.Client) -> None:
    task = client.create_task(NS, "import", {"rows": 40, "batch": 10})
    followed = list(client.stream(task.id))
    # Dense offsets from 0: four progress chunks, then the attempt's end.
    assert [c.offset for c in followed] == list(range(5))
    assert [c.data for c in followed if not c.end] == PROGRESS
    assert all((c.step, c.topic, c.text) == ("load", "progress", None)
               for c in followed if not c.end)
    assert followed[-1].end
    done = client.wait(task.id, 60)
    assert (done.state, done.result) == ("complete", {"load": {"rows": 40}})


def test_the_chat_streams_the_fake_models_answer_token_by_token(client: tasker.Client) -> None:
    expected = list(handlers.FakeModel().complete("hi"))
    assert "".join(expected) == "You asked: hi. Here is a short answer."
    task = client.create_task(NS, "chat", {"prompt": "hi"})
    followed = [c for c in client.stream(task.id) if not c.end]
    # One chunk per token, in order.
    assert [c.text for c in followed] == expected
    assert {(c.step, c.topic) for c in followed} == {("answer", "tokens")}
    done = client.wait(task.id, 60)
    assert done.state == "complete"
    assert done.result["answer"]["answer"] == "".join(c.text or "" for c in followed)
    assert done.result == {"answer": {"answer": "".join(expected)}}


def test_follow_py_prints_a_finished_tasks_text_and_progress(
    client: tasker.Client, orchestrator: Orchestrator
) -> None:
    chat = client.create_task(NS, "chat", {"prompt": "what streams?"})
    answer = client.wait(chat.id, 60).result["answer"]["answer"]
    assert answer == "You asked: what streams?. Here is a short answer."
    printed = follow(chat.id, orchestrator.url)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == answer + "\n"

    load = client.create_task(NS, "import", {"rows": 25, "batch": 10})
    assert client.wait(load.id, 60).state == "complete"
    printed = follow(load.id, orchestrator.url)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.splitlines() == ["progress: 10/25", "progress: 20/25", "progress: 25/25"]


def test_follow_py_says_when_the_task_is_unknown(orchestrator: Orchestrator) -> None:
    printed = follow("00000000-0000-0000-0000-000000000000", orchestrator.url)
    assert (printed.returncode, printed.stdout) == (2, "")
    assert printed.stderr.startswith("refused: task_not_found")


def test_docs_streams_md_quotes_the_handlers_as_they_are() -> None:
    doc = (REPO / "docs/streams.md").read_text()
    quoted = re.findall(
        r"```python\n# workers/python/examples/streams/handlers.py \(excerpt\)\n(.*?)```", doc, re.DOTALL
    )
    assert len(quoted) == 1, "docs/streams.md quotes examples/streams/handlers.py once"
    assert "def import_rows" in quoted[0] and "class FakeModel" in quoted[0]
    assert quoted[0] in (EXAMPLE / "handlers.py").read_text(), "docs/streams.md's copy is stale"
