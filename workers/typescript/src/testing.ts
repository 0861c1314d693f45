/**
 * Handler tests without servers (docs/testing.md), `tasker-workflows/testing`:
 *
 *     import { runHandler } from "tasker-workflows/testing";
 *
 *     const out = await runHandler("route_by_size", {
 *       template: "templates/conditional.yaml", step: "route",
 *       parentResults: { check: { value: 7 } },
 *     });
 *     assert.ok(out.success);
 *     assert.deepEqual(out.branches, ["small"]);
 *
 * `runHandler` builds the step context a worker would hand the handler — a context, parent
 * results, the attempt and (for a batch worker) its batch, or all of a template's step — runs
 * the handler as the worker runs it (its `signal` aborted at the step's timeout) and resolves with
 * its {@link TestOutcome} as the engine reads it: the worker core judges it (a result that is
 * not JSON or too large, a decision naming a branch it does not have, a batchable step without
 * its batches all fail as in production) and says whether the engine would retry it. No server
 * is involved.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { testJob, testJudge } from "../index.js";
import type { Job } from "./context";
import { execute } from "./execute";
import { defaultRegistry, Registry, type HandlerClass, type HandlerFn } from "./handler";
import type { Client } from "./client";
import { loadHandlers } from "./load_handlers";
import { parseCoreJson, stringifyCoreJson, type JsonObject, type JsonValue } from "./json";
import { outcomeJson } from "./outcome";
import type { StepInputs } from "./step_inputs";

export { WorkflowEnv, type Place, type WorkflowEnvOptions } from "./workflow_env";

/** One attempt of one step. Every field is optional. */
export interface TestStepOptions {
  /** The task's context (`{}`). */
  context?: JsonValue;
  /** Parent results by step name. */
  parentResults?: JsonObject;
  /** A batch worker's batch. */
  input?: JsonValue;
  /** From 1. */
  attempt?: number;
  maxAttempts?: number;
  /** A template file: the step's handler, type, branches, retry policy and timeout are its. */
  template?: string;
  /** The step of `template`, by name. */
  step?: string;
  stepType?: "standard" | "decision" | "convergence" | "batchable" | "batch_worker";
  /** A decision's branches. */
  branches?: string[];
  /** Seconds. */
  timeout?: number;
  taskId?: string;
  stepId?: string;
  /** Where a handler given by name is looked up (the default registry). */
  registry?: Registry;
}

/** An attempt's outcome as the engine reads it. */
export interface TestOutcome {
  status: "success" | "failure";
  success: boolean;
  /** A success's result. */
  result?: JsonValue;
  /** A decision's chosen branches. */
  branches?: string[];
  /** A batchable step's batches. */
  batches?: JsonValue[];
  /** A failure as the handler threw it. */
  retryable?: boolean;
  /** Whether the engine runs another attempt, after `retryIn` seconds. */
  retried?: boolean;
  kind?: string;
  message?: string;
  backtrace?: string;
  retryIn?: number;
  /** What the handler streamed, as `[topic, data or text]`. */
  emitted: Array<[string, JsonValue]>;
}

/**
 * Runs `handler` — a registered name, a function or a `Handler` class — on one attempt of a step
 * and resolves with its {@link TestOutcome}. Throws if the core cannot make the step.
 */
export async function runHandler(
  handler: string | HandlerFn | HandlerClass,
  options: TestStepOptions = {},
): Promise<TestOutcome> {
  const registry = options.registry ?? defaultRegistry();
  let fn: HandlerFn | undefined;
  let name: string | undefined;
  if (typeof handler === "string") {
    name = handler;
    fn = registry.get(handler);
  } else if (typeof handler.prototype?.call === "function" && "handlerName" in handler) {
    const instance = new (handler as HandlerClass)();
    name = options.template ? undefined : (handler as HandlerClass).handlerName;
    fn = (ctx) => instance.call(ctx);
  } else {
    name = options.template ? undefined : handler.name || "handler";
    fn = handler as HandlerFn;
  }
  const spec = stringifyCoreJson(
    dropUndefined({
      handler: name,
      context: options.context,
      parent_results: options.parentResults,
      input: options.input,
      attempt: options.attempt ?? 1,
      max_attempts: options.maxAttempts,
      template: options.template,
      step: options.step,
      step_type: options.stepType,
      branches: options.branches,
      timeout: options.timeout,
      task_id: options.taskId,
      step_id: options.stepId,
    }),
  );
  return runSpec(spec, fn, registry);
}

/** Runs `fn` (undefined: the step's handler in `registry`) on the test step given as JSON. */
async function runSpec(spec: string, fn: HandlerFn | undefined, registry: Registry): Promise<TestOutcome> {
  const job = parseCoreJson(testJob(spec)) as Job;
  fn ??= registry.get(job.handler);
  const local = new Registry();
  if (fn) local.register(job.handler, fn);
  const emitted: Array<[string, JsonValue]> = [];
  const until = Date.now() + job.timeout_ms;
  const outcome = await execute(local, job, {
    heartbeat: () => Date.now() < until,
    emit: (_id, topic, payload, text) => {
      emitted.push([topic, text ? payload : (parseCoreJson(payload) as JsonValue)]);
      return null;
    },
  });
  const judged = parseCoreJson(testJudge(spec, outcomeJson(outcome))) as JudgedOutcome;
  return {
    status: judged.status,
    success: judged.status === "success",
    result: judged.result,
    branches: judged.branches,
    batches: judged.batches,
    retryable: judged.retryable,
    retried: judged.retried,
    kind: judged.error?.kind,
    message: judged.error?.message,
    backtrace: judged.error?.backtrace,
    retryIn: judged.retry_in,
    emitted,
  };
}

/** A recorded attempt run again by the local handler. */
export interface Replayed {
  /** Its outcome now. */
  outcome: TestOutcome;
  /** The error the step's latest attempt failed with; null if that attempt did not fail or
   * another attempt was replayed. */
  recorded: { kind: string; message: string; backtrace?: string } | null;
  /** Whether the handler failed again with the recorded error's kind (undefined: nothing
   * recorded to compare with). */
  reproduced: boolean | undefined;
}

/**
 * Fetches one attempt of a step as its handler received it (the latest unless `attempt`) with
 * `client` and runs the local handler of its name (in `registry`, the default one unless given)
 * on exactly those inputs.
 */
export async function replay(
  client: Client,
  task: string,
  step: string,
  options: { attempt?: number; registry?: Registry } = {},
): Promise<Replayed> {
  const inputs = await client.stepInputs(task, step, { attempt: options.attempt });
  return replayInputs(inputs, options);
}

/** Runs the local handler on inputs fetched before: `client.stepInputs`'s answer, or the file
 * `tasker replay --save` writes, parsed. */
export async function replayInputs(
  inputs: StepInputs | Record<string, unknown>,
  options: { registry?: Registry } = {},
): Promise<Replayed> {
  const wire = "task_id" in inputs ? (inputs as Record<string, unknown>) : wireInputs(inputs as StepInputs);
  const outcome = await runSpec(stringifyCoreJson({ inputs: wire }), undefined, options.registry ?? defaultRegistry());
  const recorded =
    wire.attempt === wire.latest_attempt ? ((wire.error ?? null) as Replayed["recorded"]) : null;
  return {
    outcome,
    recorded,
    reproduced: recorded === null ? undefined : !outcome.success && outcome.kind === recorded.kind,
  };
}

/** The client's camelCased answer as the API writes it (what `tasker replay --save` saves). */
export function wireInputs(i: StepInputs): Record<string, unknown> {
  return {
    task_id: i.taskId,
    step_id: i.stepId,
    namespace: i.namespace,
    task_name: i.taskName,
    step_name: i.stepName,
    handler: i.handler,
    step_type: i.stepType,
    branches: i.branches,
    attempt: i.attempt,
    max_attempts: i.maxAttempts,
    retry: { backoff: i.retry.backoff, base_ms: i.retry.baseMs, max_ms: i.retry.maxMs },
    timeout_ms: i.timeoutMs,
    context: i.context,
    parent_results: i.parentResults,
    input: i.input ?? null,
    state: i.state,
    latest_attempt: i.latestAttempt,
    error: i.error ?? null,
  };
}

interface JudgedOutcome {
  status: "success" | "failure";
  result?: JsonValue;
  branches?: string[];
  batches?: JsonValue[];
  retryable?: boolean;
  retried?: boolean;
  error?: { kind: string; message: string; backtrace?: string };
  retry_in?: number;
}

function dropUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/**
 * `node -e 'require("tasker-workflows/testing").main()' -- --handlers handlers.js [INPUTS]`:
 * runs the handler of a step's recorded attempt on its inputs (INPUTS, else the file
 * `TASKER_REPLAY` names: `tasker replay TASK STEP -- node -e …`) and prints its outcome next to
 * the recorded one. Sets the exit code: 0 when they agree (or nothing was recorded), 1 when
 * they differ, 2 for bad arguments.
 */
export async function main(argv: string[] = process.argv.slice(1)): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv.filter((a) => a !== "--"),
    options: { handlers: { type: "string", multiple: true } },
    allowPositionals: true,
  });
  const file = positionals[0] ?? process.env.TASKER_REPLAY;
  if (!file) {
    console.error("name the inputs file (tasker replay TASK STEP --save FILE) or set TASKER_REPLAY");
    return (process.exitCode = 2);
  }
  for (const spec of values.handlers ?? []) await loadHandlers(spec);
  const inputs = parseCoreJson(readFileSync(file, "utf8")) as Record<string, unknown>;
  const { outcome, recorded, reproduced } = await replayInputs(inputs);
  const step = `${String(inputs.step_name)} (attempt ${String(inputs.attempt)})`;
  if (outcome.success) {
    console.log(`${step}: succeeded with ${stringifyCoreJson(outcome.result)}`);
  } else {
    console.log(`${step}: failed with ${outcome.kind}: ${outcome.message}`);
    if (outcome.backtrace) console.log(outcome.backtrace);
  }
  if (recorded !== null) {
    console.log(`recorded: ${recorded.kind}: ${recorded.message} — ${reproduced ? "reproduced" : "differs"}`);
  }
  return (process.exitCode = recorded !== null && !reproduced ? 1 : 0);
}
