/**
 * A value that survives `JSON.stringify` / `JSON.parse` unchanged: what handlers receive and
 * return. Integers outside ±(2^53 − 1) arrive as `bigint` (exactly), and a `bigint` in a result
 * goes back as an exact JSON integer; every other integer is a `number`.
 */
export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | JsonObject;
export type JsonObject = { [key: string]: JsonValue };

/**
 * How the native core marks an integer JavaScript cannot hold exactly, in the JSON it hands
 * over and takes back: the string `"\u0000int:<decimal>"`.
 */
const BIG_INT = "\u0000int:";

/**
 * JSON text from the native core (jobs, parent result pages) as values; marked integers become
 * `bigint`. The reviver (which slows parsing) runs only when the text holds a mark: the escape
 * `\u0000int:` as it appears in JSON text.
 */
export function parseCoreJson(text: string): unknown {
  return text.includes("\\u0000int:") ? JSON.parse(text, reviveBigInt) : JSON.parse(text);
}

function reviveBigInt(_key: string, value: unknown): unknown {
  if (typeof value === "string" && value.startsWith(BIG_INT)) {
    const digits = value.slice(BIG_INT.length);
    if (/^-?\d+$/.test(digits)) return BigInt(digits);
  }
  return value;
}

/**
 * A value as JSON text for the native core: `JSON.stringify`, and only if that fails on a
 * `bigint`, again with each `bigint` marked (the core writes it as an exact integer). Throws
 * as `JSON.stringify` does otherwise (a cycle, …).
 */
export function stringifyCoreJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof TypeError && err.message.includes("BigInt"))) throw err;
    return JSON.stringify(value, markBigInt);
  }
}

function markBigInt(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? BIG_INT + value.toString() : value;
}
