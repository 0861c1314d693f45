"""One step through the Python worker's runner, as `cargo bench --bench step_path` times it.

argv: the job's JSON text (what the core hands out), then pauses in milliseconds. For each
pause, prints `pause_ms p50_us p95_us`: from the job's JSON text to its outcome handed to
`complete`, through `Runner` (parse, context, handler, encoded outcome) with a stand-in for
the native core, sampled after that pause (0: back to back).
"""

import json
import sys
import time
from pathlib import Path

root = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(root / "workers/python/fixtures"))

import handlers  # noqa: E402,F401  (registers the fixture handlers)
from tasker.registry import default_registry  # noqa: E402
from tasker.runner import Runner  # noqa: E402


class Core:
    """Takes the outcomes `complete` reports; the runner asks nothing else of it here."""

    concurrency = 1
    stopped = False
    outcomes = ""

    def complete(self, outcomes: str) -> None:
        self.outcomes = outcomes

    def shutdown(self) -> None:
        pass

    def take_steps(self, max: int, wait: float) -> str:
        return "[]"

    def heartbeat(self, job: int) -> bool:
        return True


def main() -> None:
    raw, pauses = "[" + sys.argv[1] + "]", [float(p) for p in sys.argv[2:]]
    core = Core()
    runner = Runner(core, default_registry)
    for pause in pauses:
        samples = []
        for _ in range(2000 if pause == 0 else 100):
            if pause:
                time.sleep(pause / 1000)
            start = time.perf_counter()
            for job in json.loads(raw):
                # What the handler thread does with a job it took (runner._take_loop).
                runner._free.acquire()
                with runner._slots:
                    runner._in_flight += 1
                runner._start(job)
            samples.append((time.perf_counter() - start) * 1e6)
        assert '"status":"success"' in core.outcomes.replace(" ", ""), core.outcomes
        samples.sort()
        print(pause, samples[len(samples) // 2], samples[len(samples) * 95 // 100], flush=True)


main()
