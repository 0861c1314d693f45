"use strict";
// The client is generated from the API's contract (the repository's openapi.json, through
// client/generate.mjs): a field added to an answer there reaches the client with no hand edit,
// and the contract's enums are types that `tsc --strict` holds callers to.
const { describe, it } = require("node:test");
const assert = require("node:assert/strict");
const { execFileSync, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const pkg = path.resolve(__dirname, "..");
const root = path.resolve(pkg, "../..");
const tsc = path.join(pkg, "node_modules/.bin/tsc");
// The client's hand-written modules (client_index.ts and what it imports).
const clientModules = fs
  .readdirSync(path.join(pkg, "src"))
  .filter((f) => /^(alerts|audit|client.*|counts|events|json|operations|outcome|step_inputs|clock|streams|task|transport|webhooks)\.ts$/.test(f) || f === "fetch_globals.d.ts");

/** A TypeScript project in a new folder: `files`, the package's node_modules, strict options. */
function project(files, options = { rootDir: "src", outDir: "dist" }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tasker-contract-"));
  fs.symlinkSync(path.join(pkg, "node_modules"), path.join(dir, "node_modules"), "dir");
  const tsconfig = {
    compilerOptions: {
      target: "ES2022", module: "node16", moduleResolution: "node16", lib: ["ES2022"], types: ["node"],
      strict: true, skipLibCheck: true, ...options,
    },
    include: ["src/**/*.ts"],
  };
  fs.mkdirSync(path.join(dir, "src"));
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(tsconfig));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, "src", name), text);
  return dir;
}

const TASK = {
  id: "019a0000-0000-7000-8000-000000000001", namespace: "shop", name: "ship", version: "1.0.0",
  state: "complete", context: {}, idempotency_key: null, open_steps: 0, result: { done: true },
  error: null, created_at: "2026-11-26T09:00:00Z", completed_at: "2026-11-26T09:00:01Z",
  duration_ms: 1000, run_at: null, parent_task_id: null, parent_step_id: null, depth: 0,
  children: [], priority: "normal",
};

// Compiled in the scratch project: a stand-in API answers a task with the new fields, and the
// client reads it through its public call and types.
const USES_THE_NEW_FIELDS = `
import * as http from "node:http";
import { Client } from "./client_index";

const answer = JSON.stringify(${JSON.stringify({ ...TASK, shipped_at: "2026-11-26T09:30:00Z", carrier: "owl post" })});
const server = http.createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(answer));
server.listen(0, "127.0.0.1", async () => {
  const { port } = server.address() as { port: number };
  const task = await new Client(\`http://127.0.0.1:\${port}\`).getTask("${TASK.id}");
  const shipped: Date = task.shippedAt;
  const carrier: string = task.carrier;
  console.log(JSON.stringify({ shipped: shipped.toISOString(), isDate: shipped instanceof Date, carrier }));
  server.close();
});
`;

describe("the contract", () => {
  it("a field added to an answer reaches the client after generation, typed", () => {
    const document = JSON.parse(fs.readFileSync(path.join(root, "openapi.json"), "utf8"));
    const task = document.components.schemas.Task;
    task.properties.shipped_at = { type: "string", format: "date-time" };
    task.properties.carrier = { type: "string" };
    task.required.push("shipped_at", "carrier");
    const files = Object.fromEntries(
      clientModules.map((f) => [f, fs.readFileSync(path.join(pkg, "src", f), "utf8")]),
    );
    const dir = project({ ...files, "uses.ts": USES_THE_NEW_FIELDS });
    try {
      const scratch = path.join(dir, "openapi.json");
      fs.writeFileSync(scratch, JSON.stringify(document));
      execFileSync(process.execPath, [
        path.join(pkg, "client/generate.mjs"), "--document", scratch, "--out", path.join(dir, "src/generated"), "--force",
      ]);
      const compiled = spawnSync(tsc, ["-p", dir], { encoding: "utf8" });
      assert.equal(compiled.status, 0, compiled.stdout + compiled.stderr);
      const out = execFileSync(process.execPath, [path.join(dir, "dist/uses.js")], { encoding: "utf8" });
      assert.deepEqual(JSON.parse(out), { shipped: "2026-11-26T09:30:00.000Z", isDate: true, carrier: "owl post" });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("tsc --strict refuses a state, priority or error code the contract does not have", () => {
    const uses = `import { ApiError, Client } from "${path.join(pkg, "src/client_index").replaceAll("\\", "/")}";
export async function submit(client: Client): Promise<void> {
  await client.createTask("shop", "ship", {}, { priority: "urgent" });
  await client.listTasks({ state: "finished" });
  await client.purge({ olderThan: "30d", states: ["running"] });
  const task = await client.getTask("019a0000-0000-7000-8000-000000000001");
  if (task.state === "done") console.log("never");
  await client.createTask("shop", "ship", {}, { priority: "high" });
  await client.listTasks({ state: "complete" });
}
export function handle(err: ApiError): boolean {
  return err.code === "task_vanished" || err.code === "task_not_found";
}
`;
    const dir = project({ "uses.ts": uses }, {});
    try {
      const compiled = spawnSync(tsc, ["-p", dir, "--noEmit"], { encoding: "utf8" });
      const errors = compiled.stdout.split("\n").filter((line) => /uses\.ts\(\d+,/.test(line));
      // One error for each unknown value (lines 3 to 7, and the unknown error code on 12), none
      // for the known ones.
      assert.deepEqual(
        errors.map((line) => Number(/uses\.ts\((\d+),/.exec(line)[1])),
        [3, 4, 5, 7, 12],
        compiled.stdout,
      );
      assert.match(errors[0], /"urgent"/);
      assert.match(errors[1], /"finished"/);
      assert.match(errors[2], /"running"/);
      assert.match(errors[3], /"done"/);
      assert.match(errors[4], /"task_vanished"/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
