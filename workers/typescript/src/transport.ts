// HTTP(S) for the client, on node:http / node:https: Node's fetch cannot be given a CA to trust,
// https.Agent can, and one code path serves both schemes. It is the `fetch` of the generated
// request functions (src/generated): it adds the token, bounds each request in time (a long poll,
// `?wait=`, by its wait on top) and turns an answer that is not a success, or no answer, into the
// client's errors. `events` opens a step stream's Server-Sent Events the same way, its body read
// as it arrives.
import * as http from "node:http";
import * as https from "node:https";
import { text } from "node:stream/consumers";
import { rootCertificates } from "node:tls";

import { ApiError, ConnectionError, TaskerClientError } from "./client_errors";

/** How a {@link Transport} reaches the orchestrator. */
export interface TransportOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** PEM text of CA certificates trusted beside Node's built-in roots (https:// only). */
  caPem?: string;
  /** How long a request may take beyond any wait the server was asked for (ms). */
  timeoutMs: number;
}

/** Sends the requests of one orchestrator's client. */
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
   * `fetch` for one request to the orchestrator: resolves with its successful answer, the body
   * as text; rejects with an {@link ApiError} subclass for a non-2xx answer, a
   * {@link ConnectionError} when there is none, and the reason of `request.signal` once it aborts.
   */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request ? input : new Request(input, init);
    const url = new URL(request.url);
    const headers: Record<string, string> = { ...this.#headers };
    const type = request.headers.get("content-type");
    const text = request.body === null ? "" : await request.text();
    const body = text === "" ? undefined : Buffer.from(text);
    if (body !== undefined) {
      headers["content-type"] = type ?? "application/json";
      headers["content-length"] = String(body.length);
    }
    // A long poll answers after up to its wait: the usual timeout starts after it.
    const waitMs = 1000 * Number(url.searchParams.get("wait") ?? 0);
    const timeoutMs = this.#timeoutMs + (Number.isFinite(waitMs) ? waitMs : 0);
    // One signal for the request: the timeout or the caller's abort, whichever comes first.
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    const onAbort = () => abort.abort();
    request.signal.addEventListener("abort", onAbort, { once: true });
    let status: number;
    let answer: string;
    try {
      request.signal.throwIfAborted();
      [status, answer] = await this.#exchange(url, request.method, headers, body, abort.signal);
    } catch (err) {
      if (request.signal.aborted) throw request.signal.reason;
      const target = `${request.method} ${url.origin}${url.pathname}`;
      if (abort.signal.aborted) {
        throw new ConnectionError(`no answer from the Tasker API within ${timeoutMs} ms (${target})`, { cause: err });
      }
      throw new ConnectionError(`cannot reach the Tasker API (${target}): ${describe(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener("abort", onAbort);
    }
    if (status < 200 || status > 299) throw ApiError.fromAnswer(status, answer);
    return new Response(status === 204 || answer === "" ? null : answer, { status });
  };

  /**
   * Opens `GET route` (the path and query after the base URL) answered as Server-Sent Events, with
   * `headers` over the client's (`accept: text/event-stream`, `last-event-id`). Resolves once the
   * answer's head came, with the body's text as it arrives: a piece at a time, until the server
   * ends it. A read that waits longer than the client's timeout for any byte (the server sends
   * keep-alives) breaks the connection off. Rejects as `fetch` does: an {@link ApiError} subclass
   * for a non-2xx answer, a {@link ConnectionError} when there is none (or when the body breaks
   * off), a {@link TaskerClientError} for an answer that is not an event stream; and with the
   * reason of `signal` once it aborts, also while the body is read.
   */
  async events(route: string, headers: Record<string, string>, signal?: AbortSignal): Promise<AsyncGenerator<string, void>> {
    const url = new URL(this.#base + route);
    const target = `GET ${url.origin}${url.pathname}`;
    // One signal for the connection: the caller's abort, or no answer in time.
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => signal?.removeEventListener("abort", onAbort);
    const timer = setTimeout(() => abort.abort(), this.#timeoutMs);
    let res: http.IncomingMessage;
    try {
      signal?.throwIfAborted();
      res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const options = { method: "GET", headers: { ...this.#headers, ...headers }, agent: this.#agent, signal: abort.signal };
        this.#request(url, options, resolve).on("error", reject).end();
      });
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 299) throw ApiError.fromAnswer(status, await text(res));
    } catch (err) {
      done();
      if (signal?.aborted) throw signal.reason;
      if (err instanceof TaskerClientError) throw err;
      if (abort.signal.aborted) {
        throw new ConnectionError(`no answer from the Tasker API within ${this.#timeoutMs} ms (${target})`, { cause: err });
      }
      throw new ConnectionError(`cannot reach the Tasker API (${target}): ${describe(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
    const type = String(res.headers["content-type"] ?? "");
    if (type.split(";")[0].trim().toLowerCase() !== "text/event-stream") {
      res.destroy();
      done();
      throw new TaskerClientError(`${target}: the answer is ${type || "untyped"}, not text/event-stream`);
    }
    return pieces(res, this.#timeoutMs, target, signal, done);
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
 * The text of an event stream's body as it arrives. A body that breaks off (the connection
 * dropped, or no byte within `idleMs`) rejects with a {@link ConnectionError}, or with the reason
 * of `signal` once it aborted. Leaving it early, or its end, closes the connection.
 */
async function* pieces(
  res: http.IncomingMessage,
  idleMs: number,
  target: string,
  signal: AbortSignal | undefined,
  done: () => void,
): AsyncGenerator<string, void> {
  res.setEncoding("utf8");
  res.setTimeout(idleMs, () => res.destroy(new Error(`no data within ${idleMs} ms`)));
  try {
    for await (const piece of res) yield piece as string;
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new ConnectionError(`the Tasker API's event stream broke off (${target}): ${describe(err)}`, { cause: err });
  } finally {
    res.destroy();
    done();
  }
}

/** An error's message; a failed connection to every address of a name is an AggregateError with none of its own. */
function describe(err: unknown): string {
  if (err instanceof AggregateError && !err.message) {
    return err.errors.map(describe).join("; ");
  }
  return err instanceof Error ? err.message : String(err);
}
