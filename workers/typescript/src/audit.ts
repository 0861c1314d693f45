// The audit log (`GET /v1/audit`), as Client.audit reads it: who asked to change what, when,
// from where, and what they were answered.
import type { JsonObject } from "./json";

// The answer's JSON as it arrives (each reader below names the fields it reads).
type Wire = Record<string, any>;

/**
 * One request that asked to change something: the token it came with (`tokenId`, `tokenName`;
 * `null` with tokens off or without a valid token), its `method` and `route` (the pattern,
 * `/v1/tasks/{id}/cancel`), the answer's `status` (refusals included), the `peer` it came from
 * (and its X-Forwarded-For when the orchestrator keeps it), the `namespaces` it named, the task
 * it acted on and its other targets by kind (`template`, `schedule`, `token`, `dead_letter`, …).
 */
export interface AuditEntry {
  id: number;
  at: Date;
  tokenId: number | null;
  tokenName: string | null;
  method: string;
  route: string;
  status: number;
  peer: string | null;
  forwardedFor: string | null;
  namespaces: string[];
  taskId: string | null;
  target: JsonObject;
}

/** One page of the audit log, newest first; `nextBefore` is the `before` of the next page. */
export interface AuditPage {
  entries: AuditEntry[];
  nextBefore: number | null;
}

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
export function auditQuery(query: AuditQuery): Record<string, string | number | undefined> {
  const { since, until, ...same } = query;
  const time = (t: Date | string | undefined) => (t === undefined || typeof t === "string" ? t : t.toISOString());
  return { ...same, since: time(since), until: time(until) };
}

/** A page of the audit log from the API's JSON. */
export function auditPageFromJson(json: unknown): AuditPage {
  const p = json as Wire;
  return { entries: p.entries.map(auditEntryFromJson), nextBefore: p.next_before ?? null };
}

/** An audit row from the API's JSON. */
export function auditEntryFromJson(json: unknown): AuditEntry {
  const e = json as Wire;
  return {
    id: e.id,
    at: new Date(e.at),
    tokenId: e.token_id ?? null,
    tokenName: e.token_name ?? null,
    method: e.method,
    route: e.route,
    status: e.status,
    peer: e.peer ?? null,
    forwardedFor: e.forwarded_for ?? null,
    namespaces: e.namespaces,
    taskId: e.task_id ?? null,
    target: e.target,
  };
}
