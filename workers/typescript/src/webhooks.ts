// Webhooks (`/v1/webhooks`, docs/events.md "Webhooks in"): URLs another service (GitHub, Stripe,
// your own) posts to with no token, each request it signed with the webhook's secret an event of
// the webhook's namespace. {@link Client} has the calls that save, list, show and remove them (it
// extends WebhookMethods, which only needs it to send a generated request and read the answer);
// the inbound `POST /v1/webhooks/{name}` is the sender's, not the client's. The answers' types are
// the document's (src/generated/types.gen.ts) in camelCase (`Camel`, client_wire.ts), the request
// Tasker's own. Semantics follow the Rust client (tasker-client/src/webhooks.rs).
import { duration } from "./client_requests";
import type { Camel } from "./client_wire";
import { EventMethods } from "./events";
import * as api from "./generated/sdk.gen";
import type * as wire from "./generated/types.gen";

/** How a webhook's requests are signed, and which event each makes by default (`generic`, `github`, `stripe`). */
export type WebhookFormat = wire.WebhookFormat;

/**
 * A webhook as the API shows it: its `namespace`, `format`, `event`, `key` and `id` (`null` when
 * the format's default is used), `toleranceSeconds`, and the requests it turned into events
 * (`received`, `lastReceivedAt`). `secret` is the one Tasker made, only in the answer of the
 * {@link WebhookMethods.putWebhook} that created it (`null` in every other answer).
 */
export type Webhook = Camel<wire.Webhook>;

/** A webhook's definition, as {@link WebhookMethods.putWebhook} takes it. */
export interface WebhookDefinition {
  /** The namespace its events go to. */
  namespace: string;
  /** How its requests are signed, and which event each makes; `generic` by default. */
  format?: WebhookFormat;
  /**
   * The shared secret, 16–256 characters (Stripe's `whsec_…` as Stripe shows it). Left out: a
   * new webhook gets one Tasker makes (in the answer, this once), a changed one keeps its own.
   */
  secret?: string;
  /** The name of every event it makes, instead of the format's. */
  event?: string;
  /** A JSON pointer into the body: the event's key. */
  key?: string;
  /** A JSON pointer into the body: the event's id, so a delivery sent twice is one event. */
  id?: string;
  /**
   * How far a signed timestamp may be from now (generic and Stripe), 1s to 1h: a duration such
   * as `"2m"`, or seconds; `"5m"` by default.
   */
  tolerance?: string | number;
}

/** The webhooks calls; {@link Client} extends this. */
export abstract class WebhookMethods extends EventMethods {
  /**
   * Creates the webhook `name` (1–128 ASCII letters, digits, `_`, `-` and `.`: the last part of
   * its URL), or replaces the whole of it (its counts stay, and its secret unless a new one is
   * given), and resolves with it as stored (`PUT /v1/webhooks/{name}`). Without `secret`, a new
   * webhook's `secret` in the answer is the one Tasker made, shown this once. Each request it
   * receives is judged with the token that saved it. `400 invalid_webhook` (`details`: `{ field,
   * problem }`); `403 forbidden` for a namespace the token does not cover (or a name another
   * namespace's webhook holds).
   */
  async putWebhook(name: string, definition: WebhookDefinition): Promise<Webhook> {
    const { tolerance, ...fields } = definition;
    const body: wire.PutWebhook = { ...fields, tolerance: tolerance === undefined ? undefined : duration(tolerance) };
    return this.request("Webhook", (send) => api.putWebhook({ ...send, path: { name }, body }));
  }

  /** Every webhook of the namespaces the token covers, by name (`GET /v1/webhooks`; the API takes no filter). */
  async listWebhooks(): Promise<Webhook[]> {
    const list = await this.request<{ webhooks: Webhook[] }>("WebhookList", (send) => api.listWebhooks({ ...send }));
    return list.webhooks;
  }

  /** A webhook, without its secret (`404 webhook_not_found`; `403 forbidden` for another namespace's). */
  async getWebhook(name: string): Promise<Webhook> {
    return this.request("Webhook", (send) => api.getWebhook({ ...send, path: { name } }));
  }

  /** Removes a webhook: its URL answers `404 webhook_not_found` from now on (and so does this, for none). */
  async deleteWebhook(name: string): Promise<void> {
    // 204: no body, read as null.
    await this.request<null>("Webhook", (send) => api.deleteWebhook({ ...send, path: { name } }));
  }
}
