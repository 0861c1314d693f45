// JSON over HTTP(S) for the client, on node:http / node:https: fetch cannot be given a CA to
// trust, https.Agent can, and one code path serves both schemes.
import * as http from "node:http";
import * as https from "node:https";
import { text } from "node:stream/consumers";
import { rootCertificates } from "node:tls";

import { ApiError, ConnectionError, TaskerClientError } from "./client_errors";
import { parseApiJson, stringifyApiJson } from "./json";

/** How a {@link Transport} reaches the orchestrator. */
export interface TransportOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** PEM text of CA certificates trusted beside Node's built-in roots (https:// only). */
  caPem?: string;
  /** How long a request may take beyond any wait the server was asked for (ms). */
  timeoutMs: number;
}

/** One request: query values left `undefined` are not sent. */
export interface Request {
  query?: Record<string, string | number | undefined>;
  /** Sent as JSON; a `bigint` as an exact integer. */
  body?: unknown;
  /** Time the server was asked to hold the answer (a long poll), added to the timeout (ms). */
  waitMs?: number;
  /** The caller's: aborting it rejects the call with the signal's reason. */
  signal?: AbortSignal;
}

/** Sends requests to one orchestrator and decodes their answers. */
export class Transport {
  readonly #base: string;
  readonly #request: typeof http.request;
  readonly #agent: http.Agent;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;

  constructor(baseUrl: string, options: TransportOptions) {
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch (err) {
      throw new TaskerClientError(`invalid orchestrator URL ${JSON.stringify(baseUrl)}`, { cause: err });
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new TaskerClientError(`orchestrator URL ${baseUrl} must be http:// or https://`);
    }
    // A base with a path (behind a proxy) keeps it: routes are appended to it.
    this.#base = url.href.replace(/\/+$/, "");
    // Keep-alive sockets are unref'd while idle, so they never hold a process open.
    if (url.protocol === "https:") {
      this.#request = https.request;
      // `ca` replaces the trusted roots: keep Node's own beside the file's.
      const ca = options.caPem === undefined ? undefined : [...rootCertificates, options.caPem];
      this.#agent = new https.Agent({ keepAlive: true, ca });
    } else {
      this.#request = http.request;
      this.#agent = new http.Agent({ keepAlive: true });
    }
    this.#headers = { accept: "application/json" };
    if (options.token) {
      this.#headers.authorization = `Bearer ${options.token}`;
    }
    this.#timeoutMs = options.timeoutMs;
  }

  /** The base URL requests go to, without a trailing `/`. */
  get baseUrl(): string {
    return this.#base;
  }

  /**
   * Sends `method path` and resolves with the answer's JSON (`undefined` for an empty one);
   * integers beyond ±(2^53 − 1) in it are `bigint`s.
   * Rejects with an {@link ApiError} subclass for a non-2xx answer and a {@link ConnectionError}
   * when there is none.
   */
  async send(method: string, path: string, req: Request = {}): Promise<unknown> {
    const url = new URL(this.#base + path);
    for (const [key, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers = { ...this.#headers };
    let body: Buffer | undefined;
    if (req.body !== undefined) {
      body = Buffer.from(stringifyApiJson(req.body));
      headers["content-type"] = "application/json";
      headers["content-length"] = String(body.length);
    }
    const timeoutMs = this.#timeoutMs + (req.waitMs ?? 0);
    // One signal for the request: the timeout or the caller's abort, whichever comes first.
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    const onAbort = () => abort.abort();
    req.signal?.addEventListener("abort", onAbort, { once: true });
    let status: number;
    let answer: string;
    try {
      req.signal?.throwIfAborted();
      [status, answer] = await this.#exchange(url, method, headers, body, abort.signal);
    } catch (err) {
      if (req.signal?.aborted) throw req.signal.reason;
      const target = `${method} ${url.origin}${url.pathname}`;
      if (abort.signal.aborted) {
        throw new ConnectionError(`no answer from the Tasker API within ${timeoutMs} ms (${target})`, { cause: err });
      }
      throw new ConnectionError(`cannot reach the Tasker API (${target}): ${describe(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener("abort", onAbort);
    }
    if (status < 200 || status > 299) {
      throw ApiError.fromAnswer(status, answer);
    }
    if (answer === "") return undefined;
    try {
      return parseApiJson(answer);
    } catch (err) {
      throw new TaskerClientError(`${method} ${url.pathname}: the answer is not JSON`, { cause: err });
    }
  }

  /** Status and body text of one request. */
  #exchange(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: Buffer | undefined,
    signal: AbortSignal,
  ): Promise<[number, string]> {
    return new Promise((resolve, reject) => {
      const request = this.#request(url, { method, headers, agent: this.#agent, signal }, (res) => {
        // Rejects too when the connection drops or the signal aborts mid-body.
        text(res).then((t) => resolve([res.statusCode ?? 0, t]), reject);
      });
      request.on("error", reject);
      request.end(body);
    });
  }
}

/**
 * Every item of a list the API answers a page at a time (schedules, concurrency and rate keys),
 * following each page's `next` as the following one's `after`.
 */
export async function everyPage<T>(
  http: Transport,
  path: string,
  query: Record<string, string | undefined>,
  key: string,
  parse: (item: unknown) => T,
): Promise<T[]> {
  const found: T[] = [];
  let after: string | undefined;
  for (;;) {
    const page = (await http.send("GET", path, { query: { ...query, after } })) as Record<string, unknown>;
    found.push(...(page[key] as unknown[]).map(parse));
    const next = page.next;
    if (typeof next !== "string") return found;
    after = next;
  }
}

/** An error's message; a failed connection to every address of a name is an AggregateError with none of its own. */
function describe(err: unknown): string {
  if (err instanceof AggregateError && !err.message) {
    return err.errors.map(describe).join("; ");
  }
  return err instanceof Error ? err.message : String(err);
}
