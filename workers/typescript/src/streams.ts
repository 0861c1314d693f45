// Step streams (`GET /v1/tasks/{id}/stream`, issue 47): what a task's handlers emitted while
// they ran (`ctx.emit`, `ctx.emitText`), each chunk with a dense task-wide `offset`. Read a page at
// a time ({@link StreamMethods.readStream}) or followed as Server-Sent Events as they come
// ({@link StreamMethods.stream}), which resumes by itself after a dropped connection
// (client_sse.ts). {@link Client} has these calls (it extends StreamMethods, which only needs its
// transport). The types are written here, camelCased as the client's answers are: they are the
// document's `StreamChunk` and `StreamPage` (tasker-shared/src/api/streams.rs), and one reader
// reads a page's chunks and an event's alike.
import { AlertMethods } from "./alerts";
import { TaskerClientError } from "./client_errors";
import type { TaskRef } from "./client_options";
import { taskId } from "./client_requests";
import { Backoff, isTransient, pause } from "./client_retry";
import { StreamCursor } from "./client_sse";
import { parseApiJson, type JsonValue } from "./json";
import type { Transport } from "./transport";

/** How long {@link StreamMethods.stream} keeps opening its connection again while every attempt fails. */
const RECONNECT_FOR_MS = 30_000;

/**
 * One chunk of a task's stream. `offset`: its place in the task's stream (0, 1, 2 … in the order
 * the orchestrator kept the chunks of all the task's steps); `taskId`: the task whose step emitted
 * it (the stream's own task, or, read with `children: true`, one of its child tasks at any depth);
 * `stepId` and `step` (the name) of the step that emitted it, in its `attempt` (from 1); `seq` its
 * place in that attempt's stream (from 0); `text` (what `emitText` sent) or `data` (what `emit`
 * sent), the other `null`; `end`: the attempt's stream ended here (no text or data); `retry`: the
 * first chunk of a step's retry, so what that step streamed under its earlier attempts is
 * superseded; `at`: when it was emitted.
 */
export interface StreamChunk {
  offset: number;
  taskId: string;
  stepId: string;
  step: string;
  attempt: number;
  seq: number;
  topic: string;
  text: string | null;
  data: JsonValue | null;
  end: boolean;
  retry: boolean;
  at: Date;
}

/**
 * A page of a task's stream: its `chunks` in offset order, `next` the offset to read from next
 * (`{ from: page.next }`), and `complete`: the task has ended and so has every step attempt's
 * stream, so nothing will follow `next`.
 */
export interface StreamPage {
  taskId: string;
  chunks: StreamChunk[];
  next: number;
  complete: boolean;
}

/** Which chunks {@link StreamMethods.stream} follows; every field is optional. */
export interface StreamOptions {
  /** The first offset (inclusive); 0 by default. */
  from?: number;
  /** Chunks of this topic only. */
  topic?: string;
  /**
   * With the chunks of the task's child tasks (`child:` steps, at any depth) merged in, at offsets
   * of this task's stream, of the namespaces the token covers; each chunk's `taskId` says whose it
   * is. False by default.
   */
  children?: boolean;
  /** Aborting it ends the stream: the iteration rejects with its reason. */
  signal?: AbortSignal;
}

/** A page of {@link StreamMethods.readStream}: {@link StreamOptions}' `from`, `topic` and `children`, and its size. */
export interface ReadStreamOptions {
  from?: number;
  topic?: string;
  children?: boolean;
  /** Chunks per page: 1–1,000, the server's default 500. */
  limit?: number;
}

/** A chunk as the API writes it (`text` and `data` may be left out), camelCased. */
export function readChunk(json: unknown): StreamChunk {
  const c = (json ?? {}) as Record<string, unknown>;
  if (
    typeof c.offset !== "number" ||
    typeof c.task_id !== "string" ||
    typeof c.step_id !== "string" ||
    typeof c.at !== "string"
  ) {
    throw new TaskerClientError(`not a stream chunk: ${JSON.stringify(Object.keys(c))}`);
  }
  return {
    offset: c.offset,
    taskId: c.task_id,
    stepId: c.step_id,
    step: String(c.step),
    attempt: Number(c.attempt),
    seq: Number(c.seq),
    topic: String(c.topic),
    text: typeof c.text === "string" ? c.text : null,
    data: c.data === undefined ? null : (c.data as JsonValue),
    end: c.end === true,
    retry: c.retry === true,
    at: new Date(c.at),
  };
}

function readPage(json: unknown): StreamPage {
  const page = (json ?? {}) as Record<string, unknown>;
  if (!Array.isArray(page.chunks) || typeof page.next !== "number") {
    throw new TaskerClientError(`not a page of a stream: ${JSON.stringify(Object.keys(page))}`);
  }
  return { taskId: String(page.task_id), chunks: page.chunks.map(readChunk), next: page.next, complete: page.complete === true };
}

/** The stream's route with its query (`from` always, the others when given; `children` only when true). */
function streamRoute(task: TaskRef<unknown, unknown>, query: ReadStreamOptions): string {
  const params = new URLSearchParams({ from: String(query.from ?? 0) });
  if (query.topic !== undefined) params.set("topic", query.topic);
  if (query.limit !== undefined) params.set("limit", String(query.limit));
  if (query.children === true) params.set("children", "true");
  return `/v1/tasks/${encodeURIComponent(taskId(task))}/stream?${params}`;
}

/** The step stream calls; {@link Client} extends this. */
export abstract class StreamMethods extends AlertMethods {
  /** The transport the client sends its requests with. */
  protected abstract get transport(): Transport;

  /**
   * One page of a task's stream (`GET /v1/tasks/{id}/stream`): the chunks from the offset `from`
   * on (inclusive; 0 by default), of `topic` only if given, at most `limit` of them; with
   * `children: true`, its child tasks' chunks merged in (each chunk's `taskId`). Read on from
   * its `next`; once `complete` is true nothing more will come. `400 invalid_id` or
   * `invalid_query`, `403 forbidden` (the token does not cover the task's namespace), `404
   * task_not_found`, `410 task_purged`.
   */
  async readStream(task: TaskRef<unknown, unknown>, options: ReadStreamOptions = {}): Promise<StreamPage> {
    const answer = await this.transport.fetch(this.transport.baseUrl + streamRoute(task, options));
    return readPage(parseApiJson(await answer.text()));
  }

  /**
   * Every chunk of a task's stream from the offset `from` on (of `topic` only if given, with its
   * child tasks' chunks merged in when `children` is true), as they come (`GET
   * /v1/tasks/{id}/stream` as Server-Sent Events), until the stream is complete: the task has
   * ended and so has every step attempt's stream (the server's `end` event).
   * `for await (const chunk of client.stream(task)) …`; a chunk with `retry` starts a step's new
   * attempt, superseding what that step streamed before.
   *
   * A connection that drops, goes quiet for the client's `timeoutMs` (the server sends keep-alives)
   * or that the server closes before the end is opened again with backoff (100 ms doubling to
   * 2 s), with `last-event-id` set to the last offset received: no chunk is missed or repeated.
   * Failures of the connection (and a gateway's 502, 503, 504) reject only once they have lasted
   * 30 s in a row; an answer of the API rejects at once (the errors of
   * {@link StreamMethods.readStream}, and `429 too_many_streams` when the orchestrator serves as
   * many streams as it may). Leaving the loop early closes the connection.
   */
  async *stream(task: TaskRef<unknown, unknown>, options: StreamOptions = {}): AsyncGenerator<StreamChunk, void, undefined> {
    const route = streamRoute(task, { from: options.from, topic: options.topic, children: options.children });
    const cursor = new StreamCursor(route, readChunk);
    const backoff = new Backoff();
    let failingSince: number | undefined;
    while (!cursor.ended) {
      try {
        const body = await this.transport.events(route, cursor.headers(), options.signal);
        failingSince = undefined;
        cursor.opened();
        for await (const text of body) {
          for (const chunk of cursor.push(text)) {
            backoff.reset();
            yield chunk;
          }
          if (cursor.ended) return;
        }
      } catch (err) {
        failingSince ??= performance.now();
        const failing = performance.now() - failingSince;
        if (!isTransient(err) || options.signal?.aborted || failing >= RECONNECT_FOR_MS) throw err;
      }
      await pause(backoff.next(), options.signal);
    }
  }
}
