// The audit log (`GET /v1/audit`), as Client.audit reads it: who asked to change what, when,
// from where, and what they were answered. The answer's types are the document's
// (src/generated/types.gen.ts) in camelCase (`Camel`, client_wire.ts); the query is Tasker's own.
import type { Camel } from "./client_wire";
import type * as wire from "./generated/types.gen";
import type { JsonObject } from "./json";

/**
 * One request that asked to change something: the token it came with (`tokenId`, `tokenName`;
 * `null` with tokens off or without a valid token), its `method` and `route` (the pattern,
 * `/v1/tasks/{id}/cancel`), the answer's `status` (refusals included), the `peer` it came from
 * (and its X-Forwarded-For when the orchestrator keeps it), the `namespaces` it named, the task
 * it acted on and its other targets by kind (`template`, `schedule`, `token`, `dead_letter`, …).
 */
export type AuditEntry = Omit<Camel<wire.AuditEntry>, "target"> & { target: JsonObject };

/** One page of the audit log, newest first; `nextBefore` is the `before` of the next page. */
export type AuditPage = Omit<Camel<wire.AuditPage>, "entries"> & { entries: AuditEntry[] };

/** Filter and page of {@link Client.audit}; every field is optional. */
export interface AuditQuery {
  /** Rows naming this namespace. */
  namespace?: string;
  /** Rows of the token of this name. */
  token?: string;
  /** Rows of this route pattern (`"/v1/tasks/{id}/cancel"`). */
  route?: string;
  /** Rows of this method (`POST`, `PUT`, `PATCH`, `DELETE`). */
  method?: string;
  /** Requests that arrived at or after this time (a `Date`, or an RFC 3339 string). */
  since?: Date | string;
  /** Requests that arrived strictly before this time. */
  until?: Date | string;
  /** Rows per page: 1–500, default 50. */
  limit?: number;
  /** The previous page's `nextBefore`. */
  before?: number;
}

/** The query string of {@link AuditQuery}, as the API takes it. */
export function auditQuery(query: AuditQuery): { [key: string]: string | number | undefined } {
  const { since, until, ...same } = query;
  const time = (t: Date | string | undefined) => (t === undefined || typeof t === "string" ? t : t.toISOString());
  return { ...same, since: time(since), until: time(until) };
}
