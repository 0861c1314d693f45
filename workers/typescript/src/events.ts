// Events sent to a namespace (`/v1/events`, docs/events.md): each starts a task of every template
// whose trigger (`on:`) matches it. {@link Client} has these calls (it extends EventMethods, which
// only needs it to send a generated request and read the answer); the answers' types are the
// document's (src/generated/types.gen.ts) in camelCase (`Camel`, client_wire.ts), the requests
// Tasker's own. Semantics follow the Rust client (tasker-client/src/namespace_events.rs).
import type { Camel } from "./client_wire";
import * as api from "./generated/sdk.gen";
import type * as wire from "./generated/types.gen";
import type { JsonObject } from "./json";
import { TaskCountMethods } from "./counts";
import type { BatchItemError } from "./task";

/** What an event did to one template whose trigger matched it: the `taskId` it started, or why it was `refused`. */
export type EventStart = Omit<Camel<wire.EventStart>, "refused"> & { refused: BatchItemError | null };
/**
 * A stored event and what it `started` (one entry per template whose trigger matched it; empty
 * when none did); `senderId` is the sender's own id, if it gave one.
 */
export type Event = Omit<Camel<wire.Event>, "data" | "started"> & { data: JsonObject; started: EventStart[] };
/** One page of events, newest first: `nextBefore` is the next page's `before` (`null` on the last). */
export type EventPage = Omit<Camel<wire.EventPage>, "events"> & { events: Event[] };
/**
 * What {@link EventMethods.sendEvents} did with the event at `index` of the request: `created`,
 * `existing` (its `id` was sent before, or earlier in the batch; `taskIds` are those it started
 * the first time) or `refused` (nothing stored for it; `error` says why).
 */
export type EventItem = Omit<Camel<wire.EventItem>, "error"> & { error: BatchItemError | null };
/** What {@link EventMethods.sendEvents} did, each event's result in request order. */
export type EventsSent = Omit<Camel<wire.EventsSent>, "results"> & { results: EventItem[] };
/** An event, or its id. */
export type EventRef = string | Pick<Event, "id">;

/** Options of {@link EventMethods.sendEvent}. */
export interface SendEventOptions {
  /** What the event is about (a customer, an order): 1–255 characters. */
  key?: string;
  /**
   * The sender's own id for it, 1–255 characters: sending the same id to the namespace again
   * answers the event stored the first time and starts nothing (a retried send is safe).
   */
  id?: string;
}

/** One item of {@link EventMethods.sendEvents}: what {@link EventMethods.sendEvent} takes, in one object. */
export interface SendEventRequest extends SendEventOptions {
  namespace: string;
  /** 1–64 of `[A-Za-z0-9_.-]`, such as `order.created`. */
  name: string;
  /** A JSON object; `{}` by default. */
  data?: JsonObject;
}

/** Filter and page of {@link EventMethods.events}; every field is optional. */
export interface EventQuery {
  namespace?: string;
  /** The event's name. */
  name?: string;
  /** The previous page's `nextBefore`: events older than this one. */
  before?: string;
  /** Events per page: 1–500, default 50. */
  limit?: number;
}

/** The events calls; {@link Client} extends this. */
export abstract class EventMethods extends TaskCountMethods {
  /**
   * Sends the event `name` to `namespace` with `data` (`POST /v1/events`) and resolves with it as
   * stored: `started` has one entry per template whose trigger matched it, with the task it
   * started or why it was refused. Sending an `id` again answers the event stored the first time
   * and starts nothing ({@link EventMethods.sendEvents} tells a repeat apart: `existing`). `400
   * invalid_event_name`, `invalid_event_data` (not an object, or over the server's
   * `max_context_bytes`), `invalid_event_key` or `invalid_event_id`; `403 forbidden` for a
   * namespace the token does not cover. Nothing is stored then.
   */
  async sendEvent(namespace: string, name: string, data?: JsonObject, options: SendEventOptions = {}): Promise<Event> {
    const body: wire.SendEvent = { namespace, name, data, key: options.key, id: options.id };
    return this.request("Event", (send) => api.sendEvent({ ...send, body }));
  }

  /**
   * Sends many events in one request and one transaction (`POST /v1/events:batch`, at most the
   * server's `max_batch_tasks`, 10,000 by default): each item what {@link EventMethods.sendEvent}
   * takes. Resolves with each item's result in request order: `created`, `existing` or `refused`
   * (its `error` has the code `sendEvent` would reject with). One refused item does not fail the
   * others. The whole request is refused, nothing stored, with `400 empty_batch`, `413
   * batch_too_large` (`details`: `{ events, limit }`) or `413 body_too_large`.
   */
  async sendEvents(events: SendEventRequest[]): Promise<EventsSent> {
    const body: wire.SendEvents = { events };
    return this.request("EventsSent", (send) => api.sendEvents({ ...send, body }));
  }

  /**
   * One page of events, newest first (`GET /v1/events/log`), each with what it started: of
   * `namespace` and `name` if given, `limit` of them older than `before` (the previous page's
   * `nextBefore`). A token scoped to namespaces reads its namespaces' events (`403 forbidden`
   * for another `namespace`); `400 invalid_limit`.
   */
  async events(query: EventQuery = {}): Promise<EventPage> {
    return this.request("EventPage", (send) => api.listEvents({ ...send, query: { ...query } }));
  }

  /** An event with what it started (`404 event_not_found`; `403 forbidden` for another namespace's). */
  async event(event: EventRef): Promise<Event> {
    const id = typeof event === "string" ? event : event.id;
    return this.request("Event", (send) => api.getEvent({ ...send, path: { id } }));
  }
}
