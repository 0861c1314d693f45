# examples/submit_many.py
"""The same with the async client: several tasks at once, waited for together.

    TASKER_URL=http://127.0.0.1:8080 python examples/submit_many.py
"""

import asyncio

import tasker


async def main() -> None:
    async with tasker.AsyncClient() as client:
        tasks = await asyncio.gather(
            *(client.create_task("python_examples", "diamond", {"value": n}) for n in (1, 2, 3))
        )
        done = await asyncio.gather(*(client.wait(t.id, timeout=60) for t in tasks))
    for task in done:
        print(task.context["value"], task.state, task.result["join"]["value"])


if __name__ == "__main__":
    asyncio.run(main())
