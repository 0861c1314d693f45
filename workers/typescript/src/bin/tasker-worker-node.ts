#!/usr/bin/env node
// The worker entry point, `tasker-worker-node`: loads handler files, starts the core, prints the
// ready line and runs until SIGTERM/SIGINT, then stops gracefully (the same flags and shutdown
// as every language's worker: docs/handlers.md).
import path from "node:path";
import { parseArgs } from "node:util";

import { loadHandlers } from "../load_handlers";
import { jsonLogger, jsonWanted } from "../logs";
import { Worker } from "../worker";

const USAGE = `usage: tasker-worker-node --templates DIR [--handlers FILE_OR_MODULE]... [--concurrency N]
                          [--health-port N] [--config FILE] [--orchestrator-url URL]
                          [--shutdown-timeout SECONDS]

  --templates DIR     folder of task templates; the worker consumes their namespaces
  --handlers X        a file (./handlers.js) or package that registers handlers; repeatable
  --concurrency N     steps run at once (default: worker.concurrency, 64)
  --health-port N     port of /health (on worker.health_bind, 127.0.0.1 by default); 0 picks a free one (default 8100)
  --config FILE       TOML configuration file (also TASKER_CONFIG)
  --orchestrator-url URL      orchestrator API the templates are registered with (default http://127.0.0.1:8080, or TASKER_WORKER__ORCHESTRATOR_URL)
  --shutdown-timeout SECONDS  how long handlers running at SIGTERM may take to finish and report (default 30)

DATABASE_URL, AMQP_URL and TASKER_* configure the rest (config/tasker.reference.toml).`;

class UsageError extends Error {}

/** This command's own lines: `tasker-worker-node: …`, or JSON lines with TASKER_LOG_FORMAT=json. */
const say: (message: string) => void = jsonWanted()
  ? jsonLogger().info
  : (message) => process.stderr.write(`tasker-worker-node: ${message}\n`);

function integer(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) {
    return undefined;
  }
  if (!/^\d+$/.test(value)) {
    throw new UsageError(`${flag} must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        templates: { type: "string" },
        handlers: { type: "string", multiple: true },
        concurrency: { type: "string" },
        "health-port": { type: "string" },
        config: { type: "string" },
        "orchestrator-url": { type: "string" },
        "shutdown-timeout": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!values.templates) {
    throw new UsageError("--templates DIR is required");
  }
  const concurrency = integer("--concurrency", values.concurrency);
  if (concurrency === 0) {
    throw new UsageError("--concurrency must be at least 1");
  }
  const healthPort = integer("--health-port", values["health-port"]);
  const shutdown = values["shutdown-timeout"];
  let shutdownTimeout: number | undefined;
  if (shutdown !== undefined) {
    const seconds = Number(shutdown);
    if (shutdown.trim() === "" || !Number.isFinite(seconds) || seconds < 0 || seconds > 86_400) {
      throw new UsageError(`--shutdown-timeout must be 0 to 86400 seconds, got ${JSON.stringify(shutdown)}`);
    }
    shutdownTimeout = seconds;
  }
  for (const spec of values.handlers ?? []) {
    await loadHandlers(spec);
  }

  const worker = Worker.start({
    templates: path.resolve(values.templates),
    configFile: values.config ?? process.env.TASKER_CONFIG,
    healthPort,
    concurrency,
    orchestratorUrl: values["orchestrator-url"],
    shutdownTimeout,
  });
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      // A second signal means "now": unacked steps return to their queues anyway.
      process.exit(130);
    }
    say(`${signal}: finishing running steps, then stopping`);
    void worker.stop();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  // Writes to a pipe or file are synchronous on Linux: the line is out before we go on.
  process.stdout.write(
    `tasker worker ready: language=typescript health=${worker.healthAddr} namespaces=${worker.namespaces.join(",")}\n`,
  );
  await worker.run();
  // The last line of a graceful stop, as every language's worker ends.
  say("stopped");
  return 0;
}

main(process.argv.slice(2)).then(
  // exit() rather than waiting for the loop to drain: a handler that ignored its abort signal
  // may still hold a timer.
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`tasker-worker-node: ${err.message}\n\n${USAGE}\n`);
      process.exit(2);
    }
    process.stderr.write(`tasker-worker-node: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
