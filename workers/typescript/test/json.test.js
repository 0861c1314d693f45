"use strict";
// Integers beyond ±(2^53 − 1) between the native core and JavaScript: the core marks them as
// "\u0000int:<decimal>" strings; they reach handlers as BigInt and go back marked. The API
// client reads them from plain JSON text as BigInt and writes BigInt as bare integers.
const test = require("node:test");
const assert = require("node:assert/strict");

const { parseApiJson, parseCoreJson, stringifyApiJson, stringifyCoreJson } = require("../dist/json.js");

test("9007199254740993 survives a round trip as a BigInt", () => {
  // As the core writes it (serde_json escapes U+0000 as \u0000).
  const fromCore = '[{"context":{"id":"\\u0000int:9007199254740993","n":5,"neg":"\\u0000int:-9007199254740993"}}]';
  const [job] = parseCoreJson(fromCore);
  assert.equal(job.context.id, 9007199254740993n);
  assert.equal(job.context.neg, -9007199254740993n);
  assert.equal(job.context.n, 5);
  const text = stringifyCoreJson({ result: job.context });
  assert.equal(text, '{"result":{"id":"\\u0000int:9007199254740993","n":5,"neg":"\\u0000int:-9007199254740993"}}');
  assert.deepEqual(parseCoreJson(text), { result: job.context });
});

test("text without a mark parses plainly; other strings stay strings", () => {
  assert.deepEqual(parseCoreJson('{"a":"int:1","b":9007199254740993}'), { a: "int:1", b: 9007199254740992 });
  // A marked-looking string that is not an integer is left alone.
  assert.deepEqual(parseCoreJson('{"a":"\\u0000int:x1"}'), { a: "\u0000int:x1" });
});

test("values without BigInt serialize as JSON.stringify does; other errors still throw", () => {
  const v = { a: [1, "x", null, { b: true }], c: 1.5 };
  assert.equal(stringifyCoreJson(v), JSON.stringify(v));
  const cycle = {};
  cycle.self = cycle;
  assert.throws(() => stringifyCoreJson(cycle), TypeError);
});

test("the API's integers beyond 2^53 are read exactly as BigInt", () => {
  const text = '{"result":{"id":9007199254740993,"neg":-9007199254740993,"n":5,"max":9007199254740991,"list":[12345678901234567890,-1]}}';
  const value = parseApiJson(text);
  assert.deepEqual(value, {
    result: { id: 9007199254740993n, neg: -9007199254740993n, n: 5, max: 9007199254740991, list: [12345678901234567890n, -1] },
  });
  assert.equal(typeof value.result.max, "number");
  // Whitespace around tokens, a bare top-level integer, and 2^53 itself (a rounded 2^53 + 1 reads the same).
  assert.deepEqual(parseApiJson('[ 9007199254740993 ,\n\t{ "a" : -9007199254740993 } ]'), [
    9007199254740993n,
    { a: -9007199254740993n },
  ]);
  assert.equal(parseApiJson("9007199254740993"), 9007199254740993n);
  assert.equal(parseApiJson("9007199254740992"), 9007199254740992n);
  assert.equal(parseApiJson("-9007199254740991"), -9007199254740991);
});

test("digits in strings and floats are left alone", () => {
  assert.deepEqual(parseApiJson('{"id":"9007199254740993","key9007199254740993":1}'), {
    id: "9007199254740993",
    key9007199254740993: 1,
  });
  const floats = parseApiJson('[1.5e300,12345678901234567.5,-12345678901234567.5,9007199254740993e0,1E+20,90071992547409930]');
  assert.deepEqual(floats.slice(0, 5), [1.5e300, 12345678901234567.5, -12345678901234567.5, 9007199254740993e0, 1e20]);
  for (const f of floats.slice(0, 5)) assert.equal(typeof f, "number");
  assert.equal(floats[5], 90071992547409930n);
  // Escaped quotes and backslashes inside strings before a big number: the scanner stays in step.
  const tricky = String.raw`{"a":"say \"9007199254740993\" \\","b":9007199254740993,"c":"\\\"x\\\\","d":[-9007199254740993]}`;
  assert.deepEqual(parseApiJson(tricky), {
    a: 'say "9007199254740993" \\',
    b: 9007199254740993n,
    c: '\\"x\\\\',
    d: [-9007199254740993n],
  });
});

test("a string that looks marked stays a string; text that is not JSON still throws", () => {
  // As it would come from the API: a string starting with U+0000 "int:", beside a big integer.
  assert.deepEqual(parseApiJson('{"s":"\\u0000int:5","n":9007199254740993}'), { s: "\u0000int:5", n: 9007199254740993n });
  assert.deepEqual(parseApiJson('{"s":"\\u0000int:5","n":1}'), { s: "\u0000int:5", n: 1 });
  assert.throws(() => parseApiJson("{9007199254740993:1}"), SyntaxError);
  assert.throws(() => parseApiJson('{"a":9007199254740993,}'), SyntaxError);
  assert.throws(() => parseApiJson("[09007199254740993]"), SyntaxError);
  assert.throws(() => parseApiJson('{"a":"9007199254740993'), SyntaxError);
});

test("stringifyApiJson writes BigInt as bare integers and round-trips", () => {
  const value = {
    context: { id: 9007199254740993n, neg: -9007199254740993n, small: 5n, n: 1.5, s: "9007199254740993" },
    list: [12345678901234567890n, "\u0000int:7", 'a "quoted" \\ string'],
  };
  const text = stringifyApiJson(value);
  assert.equal(
    text,
    '{"context":{"id":9007199254740993,"neg":-9007199254740993,"small":5,"n":1.5,"s":"9007199254740993"},' +
      '"list":[12345678901234567890,"\\u0000int:7","a \\"quoted\\" \\\\ string"]}',
  );
  assert.deepEqual(parseApiJson(text), { ...value, context: { ...value.context, small: 5 } });
  assert.equal(stringifyApiJson(9007199254740993n), "9007199254740993");
  const plain = { a: [1, "x", null, { b: true }], c: 1.5 };
  assert.equal(stringifyApiJson(plain), JSON.stringify(plain));
  const cycle = { n: 1n };
  cycle.self = cycle;
  assert.throws(() => stringifyApiJson(cycle), TypeError);
});
