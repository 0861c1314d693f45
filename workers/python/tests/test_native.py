"""The binding itself (tasker._native): start, wait, stop, errors, GIL release."""

import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from tasker import _native

from conftest import TEMPLATES, start_native


@pytest.fixture
def native(broker):
    worker = start_native(health_port=0, concurrency=3)
    yield worker
    worker.stop()


def test_start_reports_health_namespaces_and_concurrency(native) -> None:
    assert native.namespaces == ["python_examples"]
    assert native.concurrency == 3
    host, port = native.health_addr.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    try:
        body = urllib.request.urlopen(f"http://{native.health_addr}/health", timeout=5).read()
    except urllib.error.HTTPError as e:  # 503 until the broker connection is up
        body = e.read()
    health = json.loads(body)
    assert health["language"] == "python" and health["namespaces"] == ["python_examples"]


def test_an_idle_wait_returns_an_empty_batch_after_its_timeout(native) -> None:
    t0 = time.monotonic()
    assert native.take_steps(8, 0.1) == "[]"
    assert time.monotonic() - t0 >= 0.09


def test_waiting_releases_the_gil(native) -> None:
    waiter = threading.Thread(target=native.take_steps, args=(1, 3.0))
    waiter.start()
    # Were the GIL held by take_steps, this thread could not run again until it returned.
    t0 = time.monotonic()
    total = sum(range(100_000))
    assert total and waiter.is_alive() and time.monotonic() - t0 < 2
    native.stop()  # also releases the waiter at once
    waiter.join(timeout=5)
    assert not waiter.is_alive()


def test_stop_is_idempotent_and_later_waits_return_at_once(native) -> None:
    assert not native.stopped
    native.stop()
    native.stop()
    assert native.stopped
    t0 = time.monotonic()
    assert native.take_steps(4, 5.0) == "[]"
    assert time.monotonic() - t0 < 1


def test_malformed_outcomes_are_rejected(native) -> None:
    with pytest.raises((ValueError, _native.WorkerError)):
        native.complete("not json")


def test_bad_templates_give_clear_errors(tmp_path) -> None:
    with pytest.raises(_native.WorkerError, match="No such file or directory"):
        start_native(tmp_path / "missing", health_port=0)
    with pytest.raises(_native.WorkerError, match="no templates found in"):
        start_native(tmp_path, health_port=0)
    (tmp_path / "broken.yaml").write_text("namespace: [unclosed\n")
    with pytest.raises(_native.WorkerError, match="broken.yaml"):
        start_native(tmp_path, health_port=0)
