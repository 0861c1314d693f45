"""Follows a task's stream as it comes: text chunks (a model's tokens) as one running text,
progress chunks as lines. It ends once the task and its steps' streams have ended.

    python follow.py TASK_ID [URL]     # URL: else TASKER_URL, else http://127.0.0.1:8080
"""

from __future__ import annotations

import json
import sys

import tasker


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python follow.py TASK_ID [URL]", file=sys.stderr)
        return 2
    url = argv[2] if len(argv) == 3 else None  # None: TASKER_URL, else http://127.0.0.1:8080
    in_text = False  # the last thing printed was text, with no newline after it
    # TASKER_TOKEN and TASKER_TLS_CA_FILE are read as well.
    with tasker.Client(url) as client:
        try:
            for chunk in client.stream(argv[1]):
                if chunk.retry:
                    print(f"\n[{chunk.step}: attempt {chunk.attempt} starts over; what it streamed "
                          "before is superseded]", file=sys.stderr)
                if chunk.text is not None:
                    print(chunk.text, end="", flush=True)
                    in_text = True
                elif chunk.data is not None:
                    if in_text:
                        print()
                        in_text = False
                    if chunk.topic == "progress":
                        print(f"progress: {chunk.data['done']}/{chunk.data['of']}", flush=True)
                    else:
                        print(f"{chunk.topic}: {json.dumps(chunk.data)}", flush=True)
        except tasker.ApiError as e:  # task_not_found, task_purged, forbidden, ...
            print(f"refused: {e.code}: {e.message}", file=sys.stderr)
            return 2
        except tasker.ConnectionFailed as e:
            print(e, file=sys.stderr)
            return 2
    if in_text:
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
