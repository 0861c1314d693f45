import { randomUUID } from "node:crypto";

/**
 * A value that survives `JSON.stringify` / `JSON.parse` unchanged: what handlers receive and
 * return, and what the API `Client` sends and reads (contexts, results, payloads).
 * Integers outside ±(2^53 − 1) arrive as `bigint` (exactly), and a `bigint` in a result, a
 * context or any request goes out as an exact JSON integer; every other integer is a `number`.
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

const reviveBigInt = reviverOf(BIG_INT);

/** A reviver turning strings `mark + <decimal>` into `bigint`. */
function reviverOf(mark: string): (key: string, value: unknown) => unknown {
  return (_key, value) => {
    if (typeof value === "string" && value.startsWith(mark)) {
      const digits = value.slice(mark.length);
      if (/^-?\d+$/.test(digits)) return BigInt(digits);
    }
    return value;
  };
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

/** A run of 16 digits: the shortest integer beyond ±(2^53 − 1) has 16. */
const LONG_DIGITS = /\d{16}/;
/** Number.MAX_SAFE_INTEGER's digits: a 16-digit integer above them (compared as text) is not safe. */
const MAX_SAFE_DIGITS = String(Number.MAX_SAFE_INTEGER);
/** A JSON integer (no fraction, no exponent). */
const JSON_INTEGER = /^-?(?:0|[1-9]\d*)$/;

/**
 * JSON text from the orchestrator's API as values: like `JSON.parse`, but an integer outside
 * ±(2^53 − 1) becomes an exact `bigint` instead of a rounded `number` (Node 20's `JSON.parse`
 * cannot show a reviver the number's text). Text without a run of 16 digits goes straight to
 * `JSON.parse`; other text is scanned once, each such integer token (outside strings, not a
 * key) rewritten as a marked string, and parsed with the reviver of {@link parseCoreJson}.
 * Floats (`1.5e300`, `12345678901234567.5`) stay `number`s, digits inside strings stay text.
 * Throws a `SyntaxError` for text that is not JSON, as `JSON.parse` does.
 */
export function parseApiJson(text: string): unknown {
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  // No string of the text itself may start with the mark: a text with a U+0000 in a string (as
  // JSON writes it, `\u0000`) gets a mark with a fresh nonce instead.
  const mark = text.includes("\\u0000") ? `\u0000int-${randomUUID()}:` : BIG_INT;
  const marked = markBigIntegers(text, mark);
  return marked === text ? JSON.parse(text) : JSON.parse(marked, mark === BIG_INT ? reviveBigInt : reviverOf(mark));
}

/**
 * `text` with each integer token beyond ±(2^53 − 1) written as the JSON string `mark +
 * <decimal>`; everything else as it was. One pass: strings are skipped whole (escapes and all),
 * and a number in an object's key position (not JSON) is left for `JSON.parse` to refuse.
 */
function markBigIntegers(text: string, mark: string): string {
  const quotedMark = JSON.stringify(mark).slice(0, -1); // `"` and the escaped mark, no closing `"`
  const chunks: string[] = [];
  let copied = 0; // text before this is in chunks
  // Open containers, true for an object; whether a value here would be an object's key.
  const inObject: boolean[] = [];
  let keyNext = false;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i++;
      while (i < n) {
        const s = text.charCodeAt(i);
        if (s === 0x5c /* \ */) i += 2;
        else if (s === 0x22) break;
        else i++;
      }
      i++; // past the closing quote
      keyNext = false;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      i++;
      while (i < n && isNumberChar(text.charCodeAt(i))) i++;
      if (!keyNext && i - start >= 16) {
        const token = text.slice(start, i);
        const digits = token.charCodeAt(0) === 0x2d ? token.slice(1) : token;
        const unsafe = digits.length > 16 || (digits.length === 16 && digits > MAX_SAFE_DIGITS);
        if (unsafe && JSON_INTEGER.test(token)) {
          chunks.push(text.slice(copied, start), quotedMark, token, '"');
          copied = i;
        }
      }
    } else {
      if (c === 0x7b /* { */) {
        inObject.push(true);
        keyNext = true;
      } else if (c === 0x5b /* [ */) {
        inObject.push(false);
        keyNext = false;
      } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
        inObject.pop();
        keyNext = false;
      } else if (c === 0x2c /* , */) {
        keyNext = inObject.length > 0 && inObject[inObject.length - 1];
      } else if (c === 0x3a /* : */) {
        keyNext = false;
      }
      i++;
    }
  }
  if (copied === 0) return text;
  chunks.push(text.slice(copied));
  return chunks.join("");
}

/** A character of a JSON number token after its first: digits, `.`, `e`, `E`, `+`, `-`. */
function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;
}

/**
 * A value as JSON text for the orchestrator's API: `JSON.stringify`, and only if that fails on
 * a `bigint`, again with each `bigint` written as a bare, exact JSON integer. Throws as
 * `JSON.stringify` does otherwise (a cycle, …).
 */
export function stringifyApiJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof TypeError && err.message.includes("BigInt"))) throw err;
  }
  // Each bigint as a string no other value holds (the mark has a fresh nonce), then the quotes
  // and the mark around its digits dropped.
  const mark = `\u0000bigint-${randomUUID()}:`;
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? mark + v.toString() : v));
  const [head, ...rest] = text.split(JSON.stringify(mark).slice(0, -1)); // `"` and the mark
  return head + rest.map((part) => part.replace(/^(-?\d+)"/, "$1")).join("");
}
