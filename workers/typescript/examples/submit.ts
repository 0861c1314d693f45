// An app that submits a task and waits for its result: `node submit.js 6` prints
// `complete: halve = 242`. The orchestrator is TASKER_URL (default
// http://127.0.0.1:8080), with TASKER_TOKEN and TASKER_TLS_CA_FILE when it needs them.
import { ApiError, Client } from "tasker-workflows";

/** The context and result of typescript_examples/linear (double, add ten, square, halve). */
interface Linear {
  value: number;
}
interface LinearResult {
  halve: { value: number };
}

async function main(): Promise<number> {
  const client = new Client();
  const value = Number(process.argv[2] ?? 6);
  const task = await client.createTask<Linear, LinearResult>("typescript_examples", "linear", { value });
  // `wait` takes the task, so it knows its types: `done.result` is a LinearResult.
  const done = await client.wait(task, 60_000);
  if (done.state !== "complete") {
    console.error(`task ${done.id} is ${done.state}`, done.error ?? "");
    return 1;
  }
  console.log(`${done.state}: halve = ${done.result?.halve.value}`);
  return 0;
}

main().then(
  (code) => (process.exitCode = code),
  (err) => {
    // An ApiError carries the API's stable code (`unknown_template`, `context_schema_violation`, …).
    console.error(err instanceof ApiError ? `${err.status} ${err.code}: ${err.message}` : err);
    process.exitCode = 1;
  },
);
