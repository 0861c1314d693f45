"use strict";
// Integers beyond ±(2^53 − 1) between the native core and JavaScript: the core marks them as
// "\u0000int:<decimal>" strings; they reach handlers as BigInt and go back marked.
const test = require("node:test");
const assert = require("node:assert/strict");

const { parseCoreJson, stringifyCoreJson } = require("../dist/json.js");

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
