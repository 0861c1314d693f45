# examples/submit_and_wait.py
"""An app that runs a workflow through the API client: submit a task, wait for it, print it.

    TASKER_URL=http://127.0.0.1:8080 python examples/submit_and_wait.py
"""

import json
import sys

import tasker


def main() -> int:
    # TASKER_URL (default http://127.0.0.1:8080), TASKER_TOKEN, TASKER_TLS_CA_FILE
    with tasker.Client() as client:
        try:
            task = client.create_task("python_examples", "linear", {"value": 6})
            done = client.wait(task.id, timeout=60)
        except tasker.ApiError as e:  # refused: e.status, e.code, e.message, e.details
            print(f"refused: {e.code}: {e.message}", file=sys.stderr)
            return 2
        except tasker.ConnectionFailed as e:
            print(e, file=sys.stderr)
            return 2
    print(done.state, json.dumps(done.result))
    return 0 if done.state == "complete" else 1


if __name__ == "__main__":
    sys.exit(main())
