// A task's stream read as Server-Sent Events (`GET /v1/tasks/{id}/stream` with `accept:
// text/event-stream`): the text of an answer into events, and where a stream stands across its
// connections (`StreamCursor`). {@link StreamMethods.stream} (streams.ts) opens the connections
// and hands the text over.
//
// The events: `chunk` (its `id` the chunk's offset, its data the chunk as JSON), `end` (data
// `{"next": N}`: the stream is complete and the server closes) and comments (keep-alives). A
// connection that drops, or that the server closes before `end`, is opened again with
// `last-event-id` set to the last offset received: the server resumes after it, and a chunk at or
// below it is skipped, so the caller sees each chunk once and in order.
import { TaskerClientError } from "./client_errors";
import { parseApiJson } from "./json";

/** The media type of an event stream. */
export const EVENT_STREAM = "text/event-stream";

/** One event: its type (`message` when it names none), its `id` (`null` when it has none) and its data lines joined. */
export interface SseEvent {
  event: string;
  id: string | null;
  data: string;
}

/**
 * An event stream's text, in pieces as they arrive, into events, as the HTML standard reads
 * them: lines ending in CR LF, LF or CR; `field: value` lines, one leading space of the value
 * dropped; `data` lines joined with LF; comment lines (`:`) and unknown fields ignored; an event
 * dispatched at a blank line (none when it has no data).
 */
export class SseParser {
  #buffer = "";
  #event = "";
  #id: string | null = null;
  #data: string[] = [];

  /** Reads a piece of the text; the events it completes. */
  push(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    const buffer = this.#buffer + text;
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer[i];
      if (c !== "\n" && c !== "\r") continue;
      // A CR last in the piece may be the first half of a CR LF: wait for the next piece.
      if (c === "\r" && i + 1 === buffer.length) break;
      const event = this.#line(buffer.slice(start, i));
      if (event !== null) events.push(event);
      if (c === "\r" && buffer[i + 1] === "\n") i++;
      start = i + 1;
    }
    this.#buffer = buffer.slice(start);
    return events;
  }

  /** Forgets a half-read event (a new connection starts afresh). */
  reset(): void {
    this.#buffer = "";
    this.#event = "";
    this.#id = null;
    this.#data = [];
  }

  #line(line: string): SseEvent | null {
    if (line === "") return this.#dispatch();
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") this.#event = value;
    else if (name === "data") this.#data.push(value);
    else if (name === "id" && !value.includes("\0")) this.#id = value;
    return null;
  }

  #dispatch(): SseEvent | null {
    const event = { event: this.#event || "message", id: this.#id, data: this.#data.join("\n") };
    const hadData = this.#data.length > 0;
    this.#event = "";
    this.#id = null;
    this.#data = [];
    return hadData ? event : null;
  }
}

/**
 * Where one {@link StreamMethods.stream} stands across its connections: the headers of the next
 * connection (`last-event-id` once a chunk came), the last offset yielded, and whether the `end`
 * event came. `read` reads a chunk's JSON.
 */
export class StreamCursor<Chunk extends { offset: number }> {
  /** The offset of the last chunk yielded, `null` before the first. */
  last: number | null = null;
  /** Whether the `end` event came: the stream is complete. */
  ended = false;
  readonly #parser = new SseParser();
  readonly #read: (json: unknown) => Chunk;
  readonly #route: string;

  constructor(route: string, read: (json: unknown) => Chunk) {
    this.#route = route;
    this.#read = read;
  }

  /** The request headers of the next connection. */
  headers(): Record<string, string> {
    const headers: Record<string, string> = { accept: EVENT_STREAM };
    if (this.last !== null) headers["last-event-id"] = String(this.last);
    return headers;
  }

  /** A new connection was answered: its text starts afresh. */
  opened(): void {
    this.#parser.reset();
  }

  /** Reads a piece of the answer's text; the new chunks it completes. Sets `ended` at the `end` event. */
  push(text: string): Chunk[] {
    const chunks: Chunk[] = [];
    for (const event of this.#parser.push(text)) {
      if (this.ended) break;
      if (event.event === "end") {
        this.ended = true;
      } else if (event.event === "chunk") {
        const chunk = this.#chunk(event.data);
        // Sent again after a reconnection: yielded already.
        if (this.last !== null && chunk.offset <= this.last) continue;
        this.last = chunk.offset;
        chunks.push(chunk);
      }
    }
    return chunks;
  }

  #chunk(data: string): Chunk {
    try {
      return this.#read(parseApiJson(data));
    } catch (err) {
      throw new TaskerClientError(`GET ${this.#route}: a chunk that is not the API's: ${data.slice(0, 200)}`, {
        cause: err,
      });
    }
  }
}
