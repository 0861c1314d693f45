"""The API client against a real orchestrator, with the Python worker running the fixture
handlers (conftest: ``tasker_env``, ``orchestrator``, ``python_worker``). Nothing sleeps: every
wait is the API's long poll, with a timeout."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

import tasker
from conftest import WORKER_DIR, Orchestrator, TaskerEnv, free_port

NS = "python_examples"
LINEAR_RESULT = {"halve": {"value": 242}}  # linear with {"value": 6}: 12, 22, 484, 242


@pytest.fixture
def client(orchestrator: Orchestrator, python_worker: Any) -> Iterator[tasker.Client]:
    with tasker.Client(orchestrator.url) as c:
        yield c


@pytest.fixture(scope="module")
def capped(tasker_env: TaskerEnv) -> Orchestrator:
    """A second orchestrator of the same cluster whose long polls last at most 1 s."""
    return tasker_env.start_orchestrator({"TASKER_ORCHESTRATOR__MAX_WAIT_SECONDS": "1"})


def test_a_task_is_created_waited_for_and_complete_with_its_result(client: tasker.Client) -> None:
    created = client.create_task(NS, "linear", {"value": 6})
    assert isinstance(created, tasker.Task)
    assert (created.namespace, created.name, created.version) == (NS, "linear", "1.0.0")
    assert created.context == {"value": 6} and created.idempotency_key is None
    assert isinstance(created.created_at, datetime) and created.created_at.tzinfo is not None

    done = client.wait(created.id, timeout=60)
    assert done.id == created.id
    assert done.state == "complete" and done.is_terminal
    assert done.result == LINEAR_RESULT
    assert done.error is None and done.open_steps == 0
    assert done.completed_at is not None and done.completed_at >= done.created_at
    assert done.duration_ms is not None and done.duration_ms >= 0
    assert client.get_task(uuid.UUID(created.id)) == done


def test_a_repeated_idempotency_key_gives_the_same_task_and_another_context_a_conflict(
    client: tasker.Client,
) -> None:
    key = f"order-{uuid.uuid4()}"
    first = client.create_task(NS, "linear", {"value": 6}, idempotency_key=key)
    again = client.create_task(NS, "linear", {"value": 6}, idempotency_key=key)
    assert again.id == first.id and again.idempotency_key == key

    with pytest.raises(tasker.Conflict) as refused:
        client.create_task(NS, "linear", {"value": 7}, idempotency_key=key)
    e = refused.value
    assert isinstance(e, tasker.ApiError) and isinstance(e, tasker.ClientError)
    assert (e.status, e.code) == (409, "idempotency_key_reused")
    assert first.id in e.message and str(e).startswith("409 idempotency_key_reused: ")
    assert client.wait(first.id, 60).result == LINEAR_RESULT


def test_wait_loops_past_a_server_whose_cap_is_shorter(
    client: tasker.Client, capped: Orchestrator
) -> None:
    with tasker.Client(capped.url) as short:
        task = short.create_task(NS, "slow_chain", {"sleep_ms": 2500})
        # One long poll beyond the cap is refused...
        with pytest.raises(tasker.InvalidRequest) as refused:
            short.get_task(task.id, wait=25)
        assert (refused.value.status, refused.value.code) == (400, "invalid_wait")
        # ...and `wait` takes any timeout: it halves its polls until the server accepts them.
        started = time.monotonic()
        done = short.wait(task.id, timeout=30)
        took = time.monotonic() - started
    assert done.state == "complete", done
    assert done.result["quick"]["parents"] == {"slow": {"slept_ms": 2500}}
    assert took > 1.0, "finished within one capped poll: the loop was not tested"


def test_wait_returns_the_running_task_when_its_timeout_runs_out(
    client: tasker.Client, capped: Orchestrator
) -> None:
    task = client.create_task(NS, "slow_chain", {"sleep_ms": 3000})
    # Requests time out after 0.2 s, but a long poll gets its wait on top.
    with tasker.Client(capped.url, timeout=0.2) as short:
        started = time.monotonic()
        assert short.get_task(task.id, wait=1).state == "running"
        still = short.wait(task.id, timeout=1.5)
        took = time.monotonic() - started
    assert still.state == "running" and not still.is_terminal
    assert 2.4 < took < 10, took
    assert client.wait(task.id, 60).state == "complete"


def test_paging_walks_every_task_once(client: tasker.Client) -> None:
    # A template no other test creates tasks of, so the set listed is exactly these.
    created = [client.create_task(NS, "hierarchical_tree", {"value": n}).id for n in range(7)]
    pages: list[tasker.TaskPage] = []
    before: str | None = None
    while True:
        page = client.list_tasks(namespace=NS, name="hierarchical_tree", limit=2, before=before)
        assert len(page.tasks) <= 2
        pages.append(page)
        if page.next_before is None:
            break
        before = page.next_before
    walked = [t.id for p in pages for t in p.tasks]
    assert len(walked) == len(set(walked)) == 7
    assert walked == list(reversed(created)), "newest first"
    assert len(pages) == 4

    iterated = [
        t.id for t in client.iter_tasks(namespace=NS, name="hierarchical_tree", page_size=3)
    ]
    assert iterated == walked

    for n, task_id in enumerate(created):
        assert client.wait(task_id, 60).result == {"merge": {"value": 12 * n * n + 6 * n + 50}}
    complete = list(client.iter_tasks(state="complete", name="hierarchical_tree", page_size=5))
    assert {t.id for t in complete} == set(created)
    assert all(t.result is None for t in complete), "listed tasks carry no result"
    assert client.list_tasks(state="running", name="hierarchical_tree").tasks == []

    with pytest.raises(tasker.InvalidRequest) as refused:
        client.list_tasks(state="finished")
    assert refused.value.code == "invalid_state"


def test_cancel_stops_a_running_task_and_refuses_a_finished_one(client: tasker.Client) -> None:
    running = client.create_task(NS, "slow_chain", {"sleep_ms": 2000})
    cancelled = client.cancel(running.id)
    assert cancelled.id == running.id and cancelled.state == "cancelled"

    finished = client.create_task(NS, "linear", {"value": 6})
    assert client.wait(finished.id, 60).state == "complete"
    for task_id in (running.id, finished.id):
        with pytest.raises(tasker.Conflict) as refused:
            client.cancel(task_id)
        assert (refused.value.status, refused.value.code) == (409, "task_not_running")


def test_steps_page_by_page_and_history(client: tasker.Client) -> None:
    task = client.create_task(NS, "linear", {"value": 6})
    assert client.wait(task.id, 60).state == "complete"

    steps = client.steps(task.id)
    assert [s.name for s in steps] == ["double", "add_ten", "square", "halve"]
    assert [s.result for s in steps] == [{"value": v} for v in (12, 22, 484, 242)]
    for s in steps:
        assert isinstance(s, tasker.Step)
        assert (s.state, s.attempt, s.step_type) == ("completed", 1, "standard")
        assert s.handler == s.name and s.error is None
        assert s.dispatched_at and s.started_at and s.finished_at and s.processed_at
        assert s.dispatched_at <= s.processed_at

    walked: list[tasker.Step] = []
    after: str | None = None
    while True:
        page = client.steps_page(task.id, after=after, limit=1)
        assert len(page.steps) <= 1
        walked.extend(page.steps)
        if page.next is None:
            break
        after = page.next
    assert walked == steps

    history = client.history(task.id)
    assert all(isinstance(t, tasker.Transition) for t in history)
    task_states = [(t.from_, t.to) for t in history if t.step is None]
    assert task_states[-1] == ("running", "complete")
    assert [t.at for t in history] == sorted(t.at for t in history), "oldest first"
    for name in ("double", "halve"):
        assert "completed" in [t.to for t in history if t.step == name]
    assert all(t.by is None for t in history)


def test_retry_and_resolve_repair_a_failed_task(client: tasker.Client) -> None:
    task = client.create_task(NS, "permanent_failure")
    failed = client.wait(task.id, 60)
    assert failed.state == "error" and failed.error is not None

    again = client.retry(task.id, by="user:test", reason="try once more")
    # `running` again, unless the worker was quicker than the answer.
    assert again.id == task.id and again.state in ("running", "error")
    assert client.wait(task.id, 60).state == "error", "the handler fails for good every time"
    doomed = [s for s in client.steps(task.id) if s.name == "doomed"]
    assert [s.state for s in doomed] == ["failed"] and doomed[0].attempt >= 2

    with pytest.raises(tasker.NotFound) as missing:
        client.resolve(task.id, "nope", {"value": 1})
    assert missing.value.code == "step_not_found"

    client.resolve(task.id, "doomed", {"value": 1}, by="user:test", reason="done by hand")
    done = client.wait(task.id, 60)
    assert done.state == "complete" and done.result == {"never": {"value": 2}}
    repairs = {t.reason for t in client.history(task.id) if t.by == "user:test"}
    assert "retried: try once more" in repairs and "resolved: done by hand" in repairs

    with pytest.raises(tasker.Conflict) as refused:
        client.retry(task.id)
    assert refused.value.code == "task_not_failed"
    with pytest.raises(tasker.Conflict) as refused:
        client.retry(task.id, step="doomed")
    assert refused.value.code == "task_not_failed", "the task is not in error, whatever the step"


def test_an_unknown_task_is_not_found_and_a_malformed_id_invalid(client: tasker.Client) -> None:
    unknown = str(uuid.uuid4())
    for call in (client.get_task, client.steps, client.history, client.cancel):
        with pytest.raises(tasker.NotFound) as missing:
            call(unknown)
        assert (missing.value.status, missing.value.code) == (404, "task_not_found")
        assert unknown in missing.value.message
    with pytest.raises(tasker.InvalidRequest) as invalid:
        client.get_task("not-a-uuid")
    assert invalid.value.code == "invalid_id"
    with pytest.raises(tasker.NotFound) as template:
        client.create_task(NS, "no_such_template", {})
    assert template.value.code == "unknown_template"
    with pytest.raises(tasker.InvalidRequest) as schema:
        client.create_task(NS, "linear", {"value": "six"})
    assert (schema.value.status, schema.value.code) == (422, "context_schema_violation")
    assert schema.value.details, "the schema's complaints"


class Gateway(BaseHTTPRequestHandler):
    """What may stand between a client and the API: answers 503 as the API does, anything else
    with a proxy's 502 page."""

    def do_GET(self) -> None:
        if self.path.partition("?")[0] == "/v1/tasks":
            status, kind = 503, "application/json"
            body = b'{"error": {"code": "storage_unavailable", "message": "try again"}}'
        else:
            status, kind, body = 502, "text/html", b"<html>Bad Gateway</html>"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_server_errors_are_typed_even_when_not_the_apis_own() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with tasker.Client(f"http://127.0.0.1:{server.server_address[1]}") as c:
            with pytest.raises(tasker.ServerError) as unavailable:
                c.list_tasks()
            e = unavailable.value
            assert (e.status, e.code, e.message) == (503, "storage_unavailable", "try again")
            with pytest.raises(tasker.ServerError) as proxy:
                c.get_task(str(uuid.uuid4()))
            assert (proxy.value.status, proxy.value.code) == (502, "unknown")
            assert "Bad Gateway" in proxy.value.message
    finally:
        server.shutdown()
        server.server_close()


def test_an_unreachable_orchestrator_is_a_connection_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    with tasker.Client(url, timeout=5) as c:
        with pytest.raises(tasker.ConnectionFailed) as failed:
            c.get_task(str(uuid.uuid4()))
    assert isinstance(failed.value, tasker.ClientError)
    assert not isinstance(failed.value, tasker.ApiError)
    assert isinstance(failed.value.__cause__, httpx.ConnectError)
    assert url in str(failed.value)

    async def unreachable() -> tasker.ConnectionFailed:
        async with tasker.AsyncClient(url, timeout=5) as c:
            with pytest.raises(tasker.ConnectionFailed) as failed:
                await c.list_tasks()
            return failed.value

    assert isinstance(asyncio.run(unreachable()).__cause__, httpx.ConnectError)


def test_the_async_client_has_the_same_calls(
    orchestrator: Orchestrator, python_worker: Any
) -> None:
    async def scenario() -> None:
        async with tasker.AsyncClient(orchestrator.url) as c:
            # Several tasks waited for at once, on one event loop.
            created = await asyncio.gather(
                *(c.create_task(NS, "diamond", {"value": n}) for n in range(3))
            )
            done = await asyncio.gather(*(c.wait(t.id, 60) for t in created))
            # diamond: 2n -> (4n², 2n + 10) -> 4n² + 2n + 10
            assert [t.result for t in done] == [
                {"join": {"value": 4 * n * n + 2 * n + 10}} for n in range(3)
            ]
            key = f"async-{uuid.uuid4()}"
            first = await c.create_task(NS, "diamond", {"value": 1}, idempotency_key=key)
            again = await c.create_task(NS, "diamond", {"value": 1}, idempotency_key=key)
            assert again.id == first.id
            with pytest.raises(tasker.Conflict) as reused:
                await c.create_task(NS, "diamond", {"value": 2}, idempotency_key=key)
            assert reused.value.code == "idempotency_key_reused"

            listed = [t.id async for t in c.iter_tasks(name="diamond", page_size=2)]
            assert set(listed) >= {t.id for t in created} | {first.id}
            assert len(listed) == len(set(listed))
            page = await c.list_tasks(name="diamond", limit=1)
            assert len(page.tasks) == 1 and page.next_before == page.tasks[0].id

            task = done[0]
            assert (await c.get_task(task.id)) == task
            assert [s.name for s in await c.steps(task.id)] == ["start", "left", "right", "join"]
            assert len((await c.steps_page(task.id, limit=3)).steps) == 3
            assert (await c.history(task.id))[-1].to == "complete"
            with pytest.raises(tasker.Conflict) as refused:
                await c.cancel(task.id)
            assert refused.value.code == "task_not_running"
            with pytest.raises(tasker.NotFound):
                await c.get_task(str(uuid.uuid4()))

            failed = await c.create_task(NS, "permanent_failure")
            assert (await c.wait(failed.id, 60)).state == "error"
            assert (await c.retry(failed.id)).id == failed.id
            assert (await c.wait(failed.id, 60)).state == "error"
            await c.resolve(failed.id, "doomed", {"value": 5})
            assert (await c.wait(failed.id, 60)).result == {"never": {"value": 10}}

    asyncio.run(scenario())


def test_settings_come_from_the_environment_when_not_given(
    monkeypatch: pytest.MonkeyPatch, orchestrator: Orchestrator
) -> None:
    for name in ("TASKER_URL", "TASKER_TOKEN", "TASKER_TLS_CA_FILE"):
        monkeypatch.delenv(name, raising=False)
    with tasker.Client() as c:
        assert c.base_url == tasker.client.DEFAULT_URL == "http://127.0.0.1:8080"
    monkeypatch.setenv("TASKER_URL", orchestrator.url + "/")
    with tasker.Client() as c:
        assert c.base_url == orchestrator.url
        assert c.list_tasks(limit=1).tasks is not None
    with tasker.Client("http://elsewhere:1") as c:
        assert c.base_url == "http://elsewhere:1", "an argument beats the environment"
    with pytest.raises(tasker.ClientError, match="must start with http"):
        tasker.Client("127.0.0.1:8080")


def test_tokens_are_sent_and_auth_errors_are_typed(
    monkeypatch: pytest.MonkeyPatch, tasker_env: TaskerEnv, start_orchestrator: Any,
    python_worker: Any,
) -> None:
    # The orchestrator refuses to start requiring tokens while none exists.
    reader = tasker_env.create_token(f"reader-{uuid.uuid4().hex[:8]}", "read")
    writer = tasker_env.create_token(f"writer-{uuid.uuid4().hex[:8]}", "write")
    guarded = start_orchestrator({"TASKER_ORCHESTRATOR__AUTH": "tokens"})
    monkeypatch.delenv("TASKER_TOKEN", raising=False)

    with tasker.Client(guarded.url) as anonymous:
        with pytest.raises(tasker.AuthError) as refused:
            anonymous.list_tasks()
        assert (refused.value.status, refused.value.code) == (401, "unauthenticated")
    with tasker.Client(guarded.url, token=reader) as c:
        assert c.list_tasks(limit=1) is not None
        with pytest.raises(tasker.AuthError) as forbidden:
            c.create_task(NS, "linear", {"value": 6})
        assert (forbidden.value.status, forbidden.value.code) == (403, "forbidden")
    monkeypatch.setenv("TASKER_TOKEN", writer)
    with tasker.Client(guarded.url) as c:
        task = c.create_task(NS, "linear", {"value": 6})
        assert c.wait(task.id, 60).result == LINEAR_RESULT


def make_tls(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate it signs for 127.0.0.1 (as cargo-make/services.sh makes
    them): the CA's file, the certificate's, its key's."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, csr, ext = (folder / f"server.{e}" for e in ("pem", "key", "csr", "ext"))
    ext.write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
    )
    for command in (
        ["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2",
         "-subj", "/CN=Tasker pytest CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-days", "2", "-extfile", ext, "-out", cert],
    ):
        subprocess.run(["openssl", *map(str, command)], check=True, capture_output=True, timeout=60)
    return ca, cert, key


def test_https_with_a_private_ca(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, start_orchestrator: Any, python_worker: Any
) -> None:
    monkeypatch.delenv("TASKER_TLS_CA_FILE", raising=False)
    ca, cert, key = make_tls(tmp_path)
    secure = start_orchestrator({
        "TASKER_ORCHESTRATOR__TLS_CERT_FILE": str(cert),
        "TASKER_ORCHESTRATOR__TLS_KEY_FILE": str(key),
    })
    assert secure.url.startswith("https://")
    with tasker.Client(secure.url, tls_ca_file=ca) as c:
        task = c.create_task(NS, "linear", {"value": 6})
        assert c.wait(task.id, 60).result == LINEAR_RESULT

    # Without the CA, the certificate cannot be verified.
    with tasker.Client(secure.url) as c:
        with pytest.raises(tasker.ConnectionFailed) as refused:
            c.get_task(task.id)
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)

    not_a_ca = tmp_path / "empty.pem"
    not_a_ca.write_text("no certificate here\n")
    for path in (not_a_ca, tmp_path / "missing.pem"):
        with pytest.raises(tasker.ClientError, match="TLS: cannot use"):
            tasker.Client(secure.url, tls_ca_file=path)


EXAMPLES = WORKER_DIR / "examples"


@pytest.mark.parametrize("example, output", [
    ("submit_and_wait.py", ['complete {"halve": {"value": 242}}']),
    # diamond: 2n -> (4n², 2n + 10) -> 4n² + 2n + 10
    ("submit_many.py", ["1 complete 16", "2 complete 30", "3 complete 52"]),
])
def test_the_example_apps_run_and_the_readme_shows_them(
    example: str, output: list[str], orchestrator: Orchestrator, python_worker: Any
) -> None:
    path = EXAMPLES / example
    done = subprocess.run(
        [sys.executable, str(path)], env={**os.environ, "TASKER_URL": orchestrator.url},
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == output

    readme = (WORKER_DIR / "README.md").read_text()
    shown = re.search(rf"```python\n(# examples/{re.escape(example)}\n.*?)```", readme, re.S)
    assert shown, f"the README shows examples/{example}"
    assert shown.group(1) == path.read_text(), "the README's copy of the example is stale"
