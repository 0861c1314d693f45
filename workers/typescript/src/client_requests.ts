// The arguments of {@link Client}'s calls as the API takes them: bodies and queries in the
// generated wire types (src/generated/types.gen.ts), times as RFC 3339, durations as strings,
// and the CA file it trusts.
import { readFileSync } from "node:fs";

import { TaskerClientError } from "./client_errors";
import type { CreateTaskRequest, ScheduleDefinition, TaskQuery, TaskRef } from "./client_options";
import type * as wire from "./generated/types.gen";
import { stringifyApiJson } from "./json";

/** A task to create as the API takes it (`POST /v1/tasks`, an item of `POST /v1/tasks:batch`). */
export function createBody(task: CreateTaskRequest<unknown>): wire.CreateTask {
  return {
    namespace: task.namespace,
    name: task.name,
    context: task.context,
    version: task.version,
    idempotency_key: task.idempotencyKey,
    run_at: task.runAt === undefined ? undefined : timestamp(task.runAt),
    delay: task.delay === undefined ? undefined : duration(task.delay),
    priority: task.priority,
    dedupe:
      task.dedupe === undefined
        ? undefined
        : { key: task.dedupe.key, ttl: duration(task.dedupe.ttl) },
    debounce:
      task.debounce === undefined
        ? undefined
        : {
            key: task.debounce.key,
            period: duration(task.debounce.period),
            max: task.debounce.max === undefined ? undefined : duration(task.debounce.max),
            mode: task.debounce.mode,
          },
    deadline:
      task.deadline === undefined
        ? undefined
        : { within: duration(task.deadline.within), action: task.deadline.action },
  };
}

/** A task list's filter and page as the API takes them (`GET /v1/tasks`). */
export function taskQuery(query: TaskQuery): NonNullable<wire.ListTasksData["query"]> {
  const { createdAfter, createdBefore, context, idPrefix, idempotencyKey, ...same } = query;
  return {
    ...same,
    id_prefix: idPrefix,
    idempotency_key: idempotencyKey,
    created_after: createdAfter === undefined ? undefined : timestamp(createdAfter),
    created_before: createdBefore === undefined ? undefined : timestamp(createdBefore),
    context: context === undefined ? undefined : stringifyApiJson(context),
  };
}

export function taskId(task: TaskRef<unknown, unknown>): string {
  return typeof task === "string" ? task : task.id;
}

/** A schedule definition's fields as the API names them. */
export function scheduleBody(definition: Partial<ScheduleDefinition<unknown>>): Record<string, unknown> {
  const { catchUp, ...fields } = definition;
  return { ...fields, catch_up: catchUp };
}

/**
 * A time as the API takes it, RFC 3339: a `Date` in UTC, a string as it is (the server judges
 * it). Typed as the generated `Date` it stands for: requests are sent as JSON text or a query
 * string, where both are that text.
 */
export function timestamp(value: Date | string): Date {
  return (typeof value === "string" ? value : value.toISOString()) as unknown as Date;
}

/** A duration as the API takes it: seconds become `"600s"` (`"1500ms"` with a fraction). */
export function duration(value: string | number): string {
  if (typeof value === "string") return value;
  return Number.isInteger(value) ? `${value}s` : `${Math.round(value * 1000)}ms`;
}

export function readCa(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (err) {
    throw new TaskerClientError(`TLS: cannot read the CA file ${file}`, { cause: err });
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
    throw new TaskerClientError(`TLS: ${file} holds no PEM certificate`);
  }
  return pem;
}
