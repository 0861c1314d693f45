"""How the client reaches an orchestrator: an unreachable one, the async twin, settings from
the environment, tokens, TLS with a private CA, and the README's example apps."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

import tasker
from conftest import WORKER_DIR, Orchestrator, TaskerEnv, free_port
from client_stand_in import NS, LINEAR_RESULT


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
