import { nextLogRecords } from "../index.js";

/** What the core's log records are handed to: `console`, or anything with its four methods. */
export interface Logger {
  error(message: string): void;
  warn(message: string): void;
  info(message: string): void;
  debug(message: string): void;
  /**
   * If present, the core's records are handed over whole instead (the Rust module and the
   * event's fields apart from the message), as {@link jsonLogger} takes them.
   */
  record?(record: LogRecord): void;
}

/** One log record of the worker core, or of this library. */
export interface LogRecord {
  level: "ERROR" | "WARN" | "INFO" | "DEBUG" | "TRACE";
  /** The Rust module that logged it (`tasker_worker::worker`), or `tasker` for this library's. */
  target: string;
  message: string;
  /** The event's fields, when the core sends them apart from its message. */
  fields?: Record<string, unknown>;
}

/** The variable that chooses the format: `text` (the default) or `json`. */
export const FORMAT_VARIABLE = "TASKER_LOG_FORMAT";

/** `TASKER_LOG_FORMAT=json` (any case). */
export function jsonWanted(): boolean {
  return (process.env[FORMAT_VARIABLE] ?? "").trim().toLowerCase() === "json";
}

/**
 * One JSON object a line on stderr, as the Rust binaries write with `TASKER_LOG_FORMAT=json`:
 * `timestamp` (RFC 3339, UTC; milliseconds, JavaScript's clock), `level`, `target` (the Rust
 * module for the core's records, else `target`), `message`, then the record's fields at the top
 * level. `write` replaces stderr.
 */
export function jsonLogger(
  target = "tasker",
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger & Required<Pick<Logger, "record">> {
  const record = (r: LogRecord) => {
    const line: Record<string, unknown> = {
      timestamp: new Date().toISOString(),
      level: r.level,
      target: r.target,
      message: r.message,
    };
    for (const [key, value] of Object.entries(r.fields ?? {})) {
      if (!(key in line)) line[key] = value;
    }
    write(`${safeJson(line)}\n`);
  };
  return {
    error: (message) => record({ level: "ERROR", target, message }),
    warn: (message) => record({ level: "WARN", target, message }),
    info: (message) => record({ level: "INFO", target, message }),
    debug: (message) => record({ level: "DEBUG", target, message }),
    record,
  };
}

/** `JSON.stringify`; BigInts as their digits, and a value it cannot write as its text. */
function safeJson(line: Record<string, unknown>): string {
  const replacer = (_key: string, value: unknown) => (typeof value === "bigint" ? value.toString() : value);
  try {
    return JSON.stringify(line, replacer);
  } catch {
    // A cycle: the line still goes out, every value as text.
    return JSON.stringify(Object.fromEntries(Object.entries(line).map(([k, v]) => [k, String(v)])));
  }
}

/** The logger a worker uses when given none: {@link jsonLogger} with `TASKER_LOG_FORMAT=json`, else `console`. */
export function defaultLogger(): Logger {
  return jsonWanted() ? jsonLogger() : console;
}

/**
 * Hands one of the core's records to `logger`: whole to its `record`, else as
 * `"<rust module>: <message>"` (the fields as ` key=value`) to the method of its level.
 */
export function handOver(logger: Logger, r: LogRecord): void {
  if (logger.record) {
    logger.record(r);
    return;
  }
  const fields = Object.entries(r.fields ?? {}).map(
    ([k, v]) => ` ${k}=${typeof v === "string" ? v : JSON.stringify(v)}`,
  );
  const line = `${r.target}: ${r.message}${fields.join("")}`;
  if (r.level === "ERROR") logger.error(line);
  else if (r.level === "WARN") logger.warn(line);
  else if (r.level === "INFO") logger.info(line);
  else logger.debug(line);
}

/** Workers running in this process: the core's records are drained while there is one. */
let running = 0;
let draining: Promise<void> | undefined;

/**
 * Moves the core's log records to `logger` until {@link stopForwarding} has been called as many
 * times as this.
 */
export function forwardLogs(logger: Logger): void {
  running += 1;
  draining ??= (async () => {
    try {
      while (running > 0) {
        for (const r of JSON.parse(await nextLogRecords(256, 0.5)) as LogRecord[]) {
          handOver(logger, r);
        }
      }
    } finally {
      draining = undefined;
    }
  })();
}

/** One worker of this process no longer needs the core's records. */
export function stopForwarding(): void {
  running -= 1;
}
