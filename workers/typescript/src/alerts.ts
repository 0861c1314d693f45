// Alert rules (`/v1/alerts`, docs/events.md "Alerts out"): a condition of one namespace watched
// every second, and a sink told once when it fires and once when it clears. {@link Client} has
// the calls that save (an admin token), list, show (with what each last did) and remove them (it
// extends AlertMethods, which only needs it to send a generated request and read the answer); the
// answers' types are the document's (src/generated/types.gen.ts) in camelCase (`Camel`,
// client_wire.ts), the request Tasker's own. Semantics follow the Rust client
// (tasker-client/src/alerts.rs).
import { duration } from "./client_requests";
import type { Camel } from "./client_wire";
import * as api from "./generated/sdk.gen";
import type * as wire from "./generated/types.gen";
import { WebhookMethods } from "./webhooks";

/** What an alert rule watches in its namespace. */
export type AlertKind = wire.AlertKind;

/**
 * Where a rule's notices go: `{ kind: "webhook", url }` (the notice as JSON, signed as Tasker's
 * generic webhooks are, with the rule's secret), `{ kind: "slack", url }` (`{"text": …}`, what
 * Slack's incoming webhooks take) or `{ kind: "email", to }` (1–20 addresses, through the
 * orchestrators' SMTP server).
 */
export type AlertSink = wire.AlertSink;

/** When a rule fires, as the answers give it: the fields it was saved without are `null`. */
export type AlertCondition = Camel<wire.AlertCondition>;

/**
 * An alert rule and what it last did: `state` (`firing` or `ok`), what it `observed` at its last
 * check (`checkedAt`), `firedAt`, `resolvedAt`, its notices `sent`, `failed` and `suppressed`,
 * and `lastError` (why the last delivery failed, or why the rule is not checked). `secret` is the
 * one Tasker made for its webhook sink, only in the answer of the {@link AlertMethods.putAlert}
 * that created it (`null` in every other answer).
 */
export type Alert = Omit<Camel<wire.Alert>, "sink"> & { sink: AlertSink };

/**
 * When a rule fires, as {@link AlertMethods.putAlert} takes it: `count` (1 by default) or more of
 * `kind`. An answer's `when` is one too. Durations are strings such as `"1m"`, or seconds.
 */
export interface AlertRuleCondition {
  kind: AlertKind;
  count?: number | null;
  /** The window counted back from now (every kind but `steps_waiting`): `"5m"` by default, at most a day. */
  within?: string | number | null;
  /** How long a step has waited to count (`steps_waiting`): `"5m"` by default. */
  longerThan?: string | number | null;
  /** Only tasks of this template (`failures`, `deadline_passed`). */
  template?: string | null;
  /** Only this schedule (`schedule_skipped`). */
  schedule?: string | null;
}

/** An alert rule, as {@link AlertMethods.putAlert} takes it. */
export interface AlertRule {
  /** The namespace it watches. */
  namespace: string;
  when: AlertRuleCondition;
  sink: AlertSink;
  /**
   * A webhook sink's secret, 16–256 characters. Left out: a new rule gets one Tasker makes (in
   * the answer, this once), a changed one keeps its own.
   */
  secret?: string;
  /**
   * After a notice that it fired, how long another is held back (a duration, or seconds):
   * `"15m"` by default, `"0s"` to a day.
   */
  suppress?: string | number;
}

/** A duration given, as the API takes it; none left out. */
function window(value: string | number | null | undefined): string | undefined {
  return value === null || value === undefined ? undefined : duration(value);
}

/** A rule as the API takes it: snake_case, durations as strings, fields not given left out. */
function alertBody(rule: AlertRule): wire.PutAlert {
  const { when, suppress, ...fields } = rule;
  const { kind, count, within, longerThan, template, schedule } = when;
  const condition: wire.AlertCondition = {
    kind,
    count: count ?? undefined,
    within: window(within),
    longer_than: window(longerThan),
    template: template ?? undefined,
    schedule: schedule ?? undefined,
  };
  return { ...fields, when: condition, suppress: window(suppress) };
}

/** The alert rules calls; {@link Client} extends this. */
export abstract class AlertMethods extends WebhookMethods {
  /**
   * Creates the alert rule `name` (1–128 ASCII letters, digits, `_`, `-` and `.`), or replaces
   * the whole of it (what it last did stays, and its webhook sink's secret unless a new one is
   * given), and resolves with it as stored (`PUT /v1/alerts/{name}`); it is checked within a
   * second. Without `secret`, a new rule's webhook sink gets one Tasker makes: the answer's
   * `secret`, shown this once. It takes an admin token covering the namespace (`403 forbidden`
   * otherwise, also for a name another namespace's rule holds); `400 invalid_alert` (`details`:
   * `{ field, problem }`; an email sink without an SMTP server is refused at `sink.kind`).
   */
  async putAlert(name: string, rule: AlertRule): Promise<Alert> {
    const body = alertBody(rule);
    return this.request("Alert", (send) => api.putAlert({ ...send, path: { name }, body }));
  }

  /** Every alert rule of the namespaces the token covers, by name, with what each last did (`GET /v1/alerts`; the API takes no filter). */
  async listAlerts(): Promise<Alert[]> {
    const list = await this.request<{ alerts: Alert[] }>("AlertList", (send) => api.listAlerts({ ...send }));
    return list.alerts;
  }

  /** An alert rule and what it last did, without its secret (`404 alert_not_found`; `403 forbidden` for another namespace's). */
  async getAlert(name: string): Promise<Alert> {
    return this.request("Alert", (send) => api.getAlert({ ...send, path: { name } }));
  }

  /**
   * Removes an alert rule: it is checked no more, and its notices not sent yet go. It takes an
   * admin token covering its namespace; `404 alert_not_found` for none.
   */
  async deleteAlert(name: string): Promise<void> {
    // 204: no body, read as null.
    await this.request<null>("Alert", (send) => api.deleteAlert({ ...send, path: { name } }));
  }
}
