import { NativeWorker } from "../index.js";
import type { Job } from "./context";
import { ReferenceUnavailable } from "./errors";
import { execute } from "./execute";
import { defaultRegistry, type Registry } from "./handler";
import { parseCoreJson } from "./json";
import { defaultLogger, forwardLogs, stopForwarding, type Logger } from "./logs";
import { outcomeJson, type Outcome } from "./outcome";

/** How to start a {@link Worker}. Absent values keep the configured ones (file, `TASKER_*`, defaults). */
export interface WorkerOptions {
  /** Folder of task templates; the worker consumes their namespaces' queues. */
  templates: string;
  /** TOML configuration file (see config/tasker.reference.toml). */
  configFile?: string;
  /** Port of `/health` on 127.0.0.1; 0 picks a free one. */
  healthPort?: number;
  /** Steps run at once. */
  concurrency?: number;
  /** The orchestrator the templates are registered with. */
  orchestratorUrl?: string;
  /**
   * How long handlers running when {@link Worker.stop} is called may take to finish and report,
   * in seconds (`worker.shutdown_timeout_ms`, 30 by default).
   */
  shutdownTimeout?: number;
  /** @deprecated The same in milliseconds; use {@link shutdownTimeout} (seconds). */
  shutdownTimeoutMs?: number;
  /**
   * Handlers to run; {@link defaultRegistry} (what `registerHandler` fills) by default. Their
   * names, as registered when the worker starts, choose the namespaces it consumes.
   */
  registry?: Registry;
  /**
   * Where the worker core's log records go (consuming, publishing results, reconnecting), each
   * at its level as `"<rust module>: <message>"` (or whole, to its `record` method); `console`
   * by default, or with `TASKER_LOG_FORMAT=json` one JSON object a line on stderr
   * ({@link jsonLogger}). `RUST_LOG` chooses what the core emits at all (`info` by default).
   */
  logger?: Logger;
  /**
   * Longest wait for steps before the loop looks again, in seconds (0.2 by default). Only
   * bounds how soon `stop()` is noticed: steps arriving during the wait are taken at once.
   */
  poll?: number;
  /** @deprecated The same in milliseconds; use {@link poll} (seconds). */
  pollMs?: number;
  /** The broker, instead of the configured one (a test environment's). */
  amqpUrl?: string;
  /** The queue prefix with `amqpUrl` (`tasker` when absent). */
  queuePrefix?: string;
  /** Whether to register the templates with the orchestrator (`worker.register_templates`). */
  registerTemplates?: boolean;
}

/**
 * The worker protocol's `start_options` (tasker-worker/protocol.schema.json) as JSON text, from
 * a {@link Worker}'s options: absent values are left out, so the configured ones hold.
 * `handlers`: the names of the handlers registered (the core then consumes only the namespaces
 * of the steps they run; all its templates' when absent).
 */
export function startOptions(options: WorkerOptions, handlers?: readonly string[]): string {
  const shutdownTimeout =
    options.shutdownTimeout ?? (options.shutdownTimeoutMs === undefined ? undefined : options.shutdownTimeoutMs / 1000);
  return JSON.stringify({
    templates: options.templates,
    config: options.configFile,
    health_port: options.healthPort,
    concurrency: options.concurrency,
    orchestrator_url: options.orchestratorUrl,
    shutdown_timeout: shutdownTimeout,
    handlers: handlers === undefined ? undefined : [...handlers],
    amqp_url: options.amqpUrl,
    queue_prefix: options.queuePrefix,
    register_templates: options.registerTemplates,
  });
}

/**
 * A worker: the native core consumes the queues, publishes results and acks; this loop takes
 * batches of steps (at most the free slots) as the core reports them queued, runs their handlers
 * concurrently on the event loop and reports the outcomes of handlers that finish together in
 * one call.
 */
export class Worker {
  readonly #native: NativeWorker;
  readonly #registry: Registry;
  readonly #logger: Logger;
  /** Milliseconds, for setInterval. */
  readonly #pollMs: number;
  readonly #inFlight = new Set<Promise<void>>();
  #pending: Outcome[] = [];
  #flushScheduled = false;
  #stopping = false;
  #closed = false;
  #wake: (() => void) | undefined;
  #kickedMeanwhile = false;
  #running: Promise<void> | undefined;

  private constructor(native: NativeWorker, registry: Registry, logger: Logger, pollMs: number) {
    this.#native = native;
    this.#registry = registry;
    this.#logger = logger;
    this.#pollMs = pollMs;
  }

  /**
   * Starts the native core (it connects to RabbitMQ in the background and serves `/health`).
   * Throws with the reason if the options, the configuration or the templates are invalid.
   * The same three calls in every language: `Worker.start`, {@link run}, {@link stop}.
   *
   * The core is told the names of the registry's handlers (register them before starting): it
   * consumes only the namespaces of the template steps whose handler is one of them (a step's
   * own `namespace:`, else its template's), so the worker takes no step it cannot run.
   */
  static start(options: WorkerOptions): Worker {
    const registry = options.registry ?? defaultRegistry();
    const native = NativeWorker.start(startOptions(options, registry.names()));
    const logger = options.logger ?? defaultLogger();
    forwardLogs(logger);
    const pollMs = options.poll === undefined ? (options.pollMs ?? 200) : options.poll * 1000;
    return new Worker(native, registry, logger, pollMs);
  }

  /** `ip:port` of the `/health` endpoint. */
  get healthAddr(): string {
    return this.#native.healthAddr;
  }

  get namespaces(): string[] {
    return this.#native.namespaces;
  }

  get concurrency(): number {
    return this.#native.concurrency;
  }

  /** Steps whose handlers are running now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * Runs until {@link stop}: then lets running handlers finish (within the shutdown timeout;
   * each is bounded by its step's timeout too), reports their outcomes, which the core
   * publishes, and stops the core; steps not reported by then go back to their queues. Calling
   * it again returns the same run.
   */
  run(): Promise<void> {
    this.#running ??= this.#loop();
    return this.#running;
  }

  /** Asks the loop to stop; resolves when {@link run} has finished. */
  async stop(): Promise<void> {
    this.#stopping = true;
    // The core takes no more steps from now on, and its shutdown timeout starts with ours.
    this.#native.shutdown();
    this.#kick();
    if (this.#running) {
      await this.#running;
    } else {
      this.#close();
    }
  }

  /** Stops the core (once) and, with the last worker of the process, the log forwarding. */
  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#native.stop();
    stopForwarding();
  }

  async #loop(): Promise<void> {
    const concurrency = Math.max(1, this.#native.concurrency);
    // The core calls back from its own thread as steps are queued (and when it stops); they are
    // taken at once, without waiting on another thread. The callback does not keep the process
    // alive: the interval does while the loop runs, and bounds how soon a stop is noticed.
    this.#native.onReady(() => this.#kick());
    const poll = setInterval(() => this.#kick(), this.#pollMs);
    try {
      while (!this.#stopping) {
        const free = concurrency - this.#inFlight.size;
        if (free > 0) {
          const jobs = parseCoreJson(this.#native.takeReadySteps(free)) as Job[];
          for (const job of jobs) {
            this.#launch(job);
          }
          // A full batch may have left more queued; otherwise the next callback tells.
          if (jobs.length === free) continue;
        }
        await this.#kicked();
      }
      // Running handlers get the shutdown timeout; what is still running then is left to
      // time out (its step goes back to its queue when the core stops).
      let timer: NodeJS.Timeout | undefined;
      const timeUp = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.#native.shutdownTimeout * 1000);
      });
      await Promise.race([Promise.all(this.#inFlight), timeUp]);
      clearTimeout(timer);
      this.#flush();
    } finally {
      clearInterval(poll);
      this.#close();
    }
  }

  #launch(job: Job): void {
    const pages = (after: string | null) =>
      this.#native.parentResultsPage(job.task_id, job.step_id, after).catch((err: unknown) => {
        // The orchestrator could not answer (or the core stopped): retried like any error.
        if ((err as { code?: unknown })?.code === "GenericFailure") {
          throw new ReferenceUnavailable(err instanceof Error ? err.message : String(err), { cause: err });
        }
        throw err;
      });
    const heartbeat = (id: number) => this.#native.heartbeat(id);
    const emit = (id: number, topic: string, payload: string, text: boolean) =>
      this.#native.emit(id, topic, payload, text);
    const run: Promise<void> = execute(this.#registry, job, { pages, heartbeat, emit }).then((outcome) => {
      this.#inFlight.delete(run);
      this.#pending.push(outcome);
      this.#scheduleFlush();
      this.#kick();
    });
    this.#inFlight.add(run);
  }

  /** Wakes the loop: steps were queued, a handler finished, or stop() was called. */
  #kick(): void {
    const wake = this.#wake;
    if (wake) {
      this.#wake = undefined;
      wake();
    } else {
      this.#kickedMeanwhile = true;
    }
  }

  /** Resolves at the next {@link kick}, or at once if there was one since the last wait. */
  #kicked(): Promise<void> {
    if (this.#kickedMeanwhile) {
      this.#kickedMeanwhile = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#wake = resolve;
    });
  }

  // Outcomes of handlers that settle together (in the same microtask checkpoint) go out as one
  // batch, as soon as the code that settled them has run: not a turn of the event loop later.
  #scheduleFlush(): void {
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      queueMicrotask(() => this.#flush());
    }
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (this.#pending.length === 0) {
      return;
    }
    const batch = this.#pending;
    this.#pending = [];
    try {
      this.#native.complete(`[${batch.map(outcomeJson).join(",")}]`);
    } catch (err) {
      // Only a stopped core refuses outcomes; its unacked steps return to their queues.
      const message = `reporting ${batch.length} outcome(s) failed: ${String(err)}`;
      // A JSON line names its target; a text line says who wrote it.
      this.#logger.error(this.#logger.record ? message : `tasker-worker: ${message}`);
    }
  }
}
