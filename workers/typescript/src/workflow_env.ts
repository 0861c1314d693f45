/**
 * Workflow tests on the real engine with a clock the test controls (docs/testing.md):
 *
 *     const env = await WorkflowEnv.start("templates", { registry });
 *     const task = await env.client.createTask("shop", "follow_up", {});
 *     assert.equal((await env.wait(task)).state, "complete"); // its `sleep: 7d` skipped
 *     await env.stop();
 *
 * It starts `tasker-orchestrator test-env` (`TASKER_ORCHESTRATOR_BIN`, else
 * `tasker-orchestrator` on `PATH`): an orchestrator in test mode on a database and queue prefix
 * of its own, on the PostgreSQL and RabbitMQ that `DATABASE_URL` and `AMQP_URL` name. It
 * registers the templates and runs the registry's handlers in this process, as a worker would.
 * {@link WorkflowEnv.stop} stops both; the orchestrator then drops the database and the queues.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { Client } from "./client";
import type { Clock, Skipped } from "./clock";
import type { TaskRef } from "./client_options";
import type { Registry } from "./handler";
import type { JsonObject } from "./json";
import type { Task } from "./task";
import { Worker } from "./worker";

/** What `tasker-orchestrator test-env` says once it serves. */
export interface Place {
  url: string;
  queue_prefix: string;
  amqp_url: string;
  database_url: string;
}

/** How to start a {@link WorkflowEnv}. */
export interface WorkflowEnvOptions {
  /** The handlers; `defaultRegistry()` (what `registerHandler` fills) by default. */
  registry?: Registry;
  /** Whether {@link WorkflowEnv.wait} skips the clock to the next timer (true by default). */
  timeSkipping?: boolean;
}

/** The first line `child` writes on stdout: where it serves. */
function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => {
      lines.close();
      resolve(line);
    });
    child.once("error", (err) => reject(new Error(`cannot run tasker-orchestrator test-env: ${err.message}; build it and put it on PATH or in TASKER_ORCHESTRATOR_BIN`)));
    child.once("exit", () => reject(new Error("tasker-orchestrator test-env ended before serving (its error is on stderr)")));
  });
}

/** An orchestrator in test mode and this process's handlers; see the module's docs. */
export class WorkflowEnv {
  readonly client: Client;
  timeSkipping: boolean;
  readonly #child: ChildProcess;
  readonly #worker: Worker;
  readonly #running: Promise<void>;

  private constructor(readonly place: Place, child: ChildProcess, worker: Worker, timeSkipping: boolean) {
    this.client = new Client(place.url);
    this.#child = child;
    this.#worker = worker;
    this.#running = worker.run();
    this.timeSkipping = timeSkipping;
  }

  /** Starts the orchestrator, registers the templates of `templates` and starts the handlers. */
  static async start(templates: string, options: WorkflowEnvOptions = {}): Promise<WorkflowEnv> {
    const bin = process.env.TASKER_ORCHESTRATOR_BIN || "tasker-orchestrator";
    const child = spawn(bin, ["test-env"], { stdio: ["pipe", "pipe", "inherit"] });
    let place: Place;
    try {
      place = JSON.parse(await firstLine(child)) as Place;
    } catch (err) {
      child.kill();
      throw err;
    }
    try {
      const worker = Worker.start({
        templates,
        registry: options.registry,
        healthPort: 0,
        orchestratorUrl: place.url,
        amqpUrl: place.amqp_url,
        queuePrefix: place.queue_prefix,
        registerTemplates: true,
      });
      return new WorkflowEnv(place, child, worker, options.timeSkipping ?? true);
    } catch (err) {
      child.stdin?.end();
      throw err;
    }
  }

  /** The engine's time. */
  async now(): Promise<Date> {
    return (await this.client.clock()).now;
  }

  /** Moves the engine's clock forward by `by` (`"7d"`, `"90s"`); due timers have rung when it resolves. */
  advance(by: string): Promise<Clock> {
    return this.client.advanceClock(by);
  }

  /** Moves the engine's clock to its next timer if no step is with a worker. */
  skip(): Promise<Skipped> {
    return this.client.skipClock();
  }

  /** Waits up to `timeoutMs` of wall time for a task to end (skipping time when {@link timeSkipping}). */
  wait<Ctx = JsonObject, Res = JsonObject>(task: TaskRef<Ctx, Res>, timeoutMs = 60_000): Promise<Task<Ctx, Res>> {
    return this.timeSkipping ? this.client.waitSkipping(task, timeoutMs) : this.client.wait(task, timeoutMs);
  }

  /** Stops the handlers, then the orchestrator, which drops the environment's database and queues. */
  async stop(): Promise<void> {
    await this.#worker.stop();
    await this.#running;
    const exited = new Promise((resolve) => this.#child.once("exit", resolve));
    // Its stdin closing is what ends it.
    this.#child.stdin?.end();
    if (this.#child.exitCode === null) await exited;
  }
}
