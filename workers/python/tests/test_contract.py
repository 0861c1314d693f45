"""The client is generated from the API's contract (the repository's openapi.json, through
client/generate.py): a field added to an answer there reaches the client with no hand edit, and
the contract's enums are types that ``mypy --strict`` holds callers to."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

WORKER_DIR = Path(__file__).resolve().parent.parent
ROOT = WORKER_DIR.parent.parent
CLIENT = WORKER_DIR / "python" / "tasker" / "client"

# Run in a copy of the client: a stand-in API answers a task with the new fields, and the client
# reads it through its public call and types.
USES_THE_NEW_FIELDS = '''
import json, threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import tasker.client

TASK = json.loads(%r)

class Api(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        data = json.dumps(TASK).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
threading.Thread(target=server.serve_forever, daemon=True).start()
with tasker.client.Client(f"http://127.0.0.1:{server.server_address[1]}") as client:
    task = client.get_task(TASK["id"])
shipped: datetime = task.shipped_at
carrier: str = task.carrier
print(json.dumps({"shipped_at": shipped.isoformat(), "carrier": carrier,
                  "aware": shipped.tzinfo is not None}))
'''

TASK = {
    "id": "019a0000-0000-7000-8000-000000000001", "namespace": "shop", "name": "ship",
    "version": "1.0.0", "state": "complete", "context": {}, "idempotency_key": None,
    "open_steps": 0, "result": {"done": True}, "error": None,
    "created_at": "2026-11-26T09:00:00Z", "completed_at": "2026-11-26T09:00:01Z",
    "duration_ms": 1000.0, "run_at": None, "parent_task_id": None, "parent_step_id": None,
    "depth": 0, "children": [], "priority": "normal",
}


def test_a_field_added_to_an_answer_reaches_the_client_after_generation(tmp_path: Path) -> None:
    document = json.loads((ROOT / "openapi.json").read_text())
    task = document["components"]["schemas"]["Task"]
    task["properties"]["shipped_at"] = {"type": "string", "format": "date-time"}
    task["properties"]["carrier"] = {"type": "string"}
    task["required"] += ["shipped_at", "carrier"]
    scratch = tmp_path / "openapi.json"
    scratch.write_text(json.dumps(document))

    # The client's hand-written modules as they are, the generated ones from the scratch copy.
    package = tmp_path / "site" / "tasker"
    shutil.copytree(CLIENT, package / "client", ignore=shutil.ignore_patterns("_api", "__pycache__"))
    (package / "__init__.py").write_text("")  # ahead of the worker's tasker on sys.path
    subprocess.run(
        [sys.executable, str(WORKER_DIR / "client" / "generate.py"), "--document", str(scratch),
         "--out", str(package / "client" / "_api"), "--force"],
        check=True,
    )

    answer = {**TASK, "shipped_at": "2026-11-26T09:30:00Z", "carrier": "owl post"}
    program = tmp_path / "uses_them.py"
    program.write_text(USES_THE_NEW_FIELDS % json.dumps(answer))
    env = {"PYTHONPATH": str(package.parent), "PATH": str(Path(sys.executable).parent)}
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", str(program)],
        env=env, capture_output=True, text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ran = subprocess.run([sys.executable, str(program)], env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {
        "shipped_at": "2026-11-26T09:30:00+00:00", "carrier": "owl post", "aware": True,
    }


UNKNOWN_VALUES = '''
import tasker.client

def submit(client: tasker.client.Client) -> None:
    client.create_task("shop", "ship", {}, priority="urgent")
    client.list_tasks(state="finished")
    client.purge("30d", states=["running"])
    task = client.get_task("019a0000-0000-7000-8000-000000000001")
    if task.state == "done":
        print("never")
    client.create_task("shop", "ship", {}, priority="high")
    client.list_tasks(state="complete")


def handle(error: tasker.client.ApiError) -> bool:
    return error.code == "task_vanished" or error.code == "task_not_found"
'''


def test_mypy_strict_refuses_a_state_priority_or_code_the_contract_does_not_have(
    tmp_path: Path,
) -> None:
    program = tmp_path / "unknown_values.py"
    program.write_text(UNKNOWN_VALUES)
    env = {"MYPYPATH": str(WORKER_DIR / "python"), "PATH": str(Path(sys.executable).parent)}
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", str(program)],
        env=env, capture_output=True, text=True, cwd=tmp_path,
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    # One error for each unknown value (lines 5 to 9, and the unknown error code on 16), none for
    # the known ones.
    assert [int(line.split(":")[1]) for line in errors] == [5, 6, 7, 9, 16], checked.stdout
    assert "'urgent'" in errors[0] and "'high', 'low', 'normal'" in errors[0]
    assert "'finished'" in errors[1] and "'running'" in errors[2] and "'done'" in errors[3]
    assert "'task_vanished'" in errors[4]
