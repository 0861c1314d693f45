// The streams benchmark's TypeScript reader (benches/throughput/streams.rs): creates a task of
// NAMESPACE/NAME with CONTEXT_JSON through the TypeScript client, follows its stream to the end
// and prints one line of JSON: for each text chunk, when it was emitted (ms since the epoch) and
// its latency in ms, from its emission to its arrival here (one host, one clock). The handler (the fixture `stream_emitter` with `stamp`) writes
// the time it emits a chunk, in ns since the epoch, as its text: a chunk's `at` is a `Date` in
// this client, whole milliseconds only. The task is created only once this process runs, so
// every chunk can arrive live.
// usage: node stream_follow.mjs URL NAMESPACE NAME CONTEXT_JSON
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const entry = path.join(here, "../../workers/typescript/dist/client_index.mjs");
const { Client } = await import(entry);

const [url, namespace, name, context] = process.argv.slice(2);
if (!context) {
  console.error("usage: node stream_follow.mjs URL NAMESPACE NAME CONTEXT_JSON");
  process.exit(2);
}
const now = () => performance.timeOrigin + performance.now();
const client = new Client(url);
const task = await client.createTask(namespace, name, JSON.parse(context));
const samples = [];
for await (const chunk of client.stream(task.id)) {
  if (chunk.end) continue;
  const emitted = Number(BigInt(chunk.text)) / 1e6;
  samples.push([emitted, now() - emitted]);
}
process.stdout.write(JSON.stringify({ task_id: task.id, samples }) + "\n");
