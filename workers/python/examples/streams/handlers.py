"""The two handlers of docs/streams.md, runnable: an import that reports its progress, and an
LLM step that streams its answer token by token (from a fake model, so it runs anywhere).

    python -m tasker.worker --templates examples/streams --handlers examples/streams/handlers.py
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import tasker


def load(batch: range) -> int:
    """Stands in for the real work (an INSERT of the batch's rows, say); returns the rows loaded."""
    return len(batch)


@tasker.handler("import_rows")
def import_rows(ctx: tasker.StepContext) -> dict[str, int]:
    total = int(ctx.context.get("rows", 40))
    size = int(ctx.context.get("batch", 10))
    delay = int(ctx.context.get("delay_ms", 0)) / 1000  # pacing, to watch it live
    rows = range(total)
    done = 0
    for start in range(0, total, size):
        if delay:
            time.sleep(delay)
        done += load(rows[start:start + size])
        ctx.emit("progress", {"done": done, "of": total})  # JSON: chunk.data
    return {"rows": total}


class FakeModel:
    """A language model's interface without the model: ``complete`` yields a canned answer
    to the prompt a token at a time (a word and the space after it)."""

    def complete(self, prompt: str) -> Iterator[str]:
        reply = f"You asked: {prompt}. Here is a short answer."
        yield from re.findall(r"\S+\s*", reply)


model = FakeModel()


@tasker.handler("answer")
def answer(ctx: tasker.StepContext) -> dict[str, str]:
    delay = int(ctx.context.get("delay_ms", 0)) / 1000
    text = ""
    for token in model.complete(ctx.context["prompt"]):
        if delay:
            time.sleep(delay)
        ctx.emit_text("tokens", token)  # text: chunk.text
        text += token
    return {"answer": text}
