"""The entry point as users run it: ready line, /health, clean stop on SIGTERM, clear errors."""

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

from conftest import TEMPLATES, WORKER_DIR


def worker(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tasker.worker", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**(env or os.environ), "NO_COLOR": "1"},
    )


def test_ready_line_health_and_sigterm(broker) -> None:
    p = worker("--templates", str(TEMPLATES), "--handlers", str(WORKER_DIR / "fixtures/handlers.py"),
               "--health-port", "0", "--concurrency", "2")
    try:
        line = p.stdout.readline()
        assert line.startswith("tasker worker ready: language=python health=127.0.0.1:"), line
        assert line.rstrip().endswith(" namespaces=python_examples")
        addr = line.split("health=")[1].split()[0]
        try:
            body = urllib.request.urlopen(f"http://{addr}/health", timeout=5).read()
        except urllib.error.HTTPError as e:
            body = e.read()
        assert json.loads(body)["language"] == "python"
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=20) == 0
        err = p.stderr.read()
        # A graceful stop ends with its own line and logs no error on the way.
        assert err.rstrip().splitlines()[-1].endswith("INFO tasker: stopped"), err
        assert "ERROR" not in err, err
    finally:
        p.kill()
        p.communicate()


def test_a_missing_templates_folder_is_a_clear_error(tmp_path) -> None:
    p = worker("--templates", str(tmp_path / "nope"), "--health-port", "0")
    out, err = p.communicate(timeout=20)
    # 1: it could not start (as in every language; 2 is for bad flags).
    assert p.returncode == 1 and out == ""
    assert "tasker-worker-python: template" in err and "No such file or directory" in err


def test_handlers_can_be_a_module_and_a_bad_one_fails_loudly(broker, tmp_path) -> None:
    (tmp_path / "my_handlers.py").write_text(
        "import tasker\n\n@tasker.handler('hello')\ndef hello(ctx):\n    return 'hi'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    p = worker("--templates", str(TEMPLATES), "--handlers", "my_handlers", "--health-port", "0",
               env=env)
    try:
        assert p.stdout.readline().startswith("tasker worker ready:")
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=20) == 0
    finally:
        p.kill()
        _, err = p.communicate()
    assert "handlers: hello" in err

    p = worker("--templates", str(TEMPLATES), "--handlers", "no_such_module_xyz")
    _, err = p.communicate(timeout=20)
    assert p.returncode != 0 and "No module named 'no_such_module_xyz'" in err
