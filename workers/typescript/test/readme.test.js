"use strict";
// The README's handler example compiles and behaves as the README says.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const ts = require("typescript");

test("the README example registers working handlers", async (t) => {
  const readme = fs.readFileSync(path.join(__dirname, "../README.md"), "utf8");
  const source = readme.match(/```ts\n([\s\S]*?)```/)[1];
  const { outputText, diagnostics } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    reportDiagnostics: true,
  });
  assert.deepEqual(diagnostics, []);
  // Inside the package, so `require("tasker-workflows")` resolves to this package (self-reference).
  const file = path.join(__dirname, ".readme-handlers.js");
  fs.writeFileSync(file, outputText);
  t.after(() => fs.rmSync(file, { force: true }));
  require(file);

  const { ParentResults, defaultRegistry, isPermanent } = require("tasker-workflows");
  const ctx = (context, parents = {}) => ({ context, parentResults: new ParentResults(parents), attempt: 1 });
  assert.deepEqual(await defaultRegistry().get("double")(ctx({ value: 21 })), { value: 42 });
  await assert.rejects(async () => defaultRegistry().get("double")(ctx({})), isPermanent);
  assert.deepEqual(await defaultRegistry().get("sum_parents")(ctx({}, { a: { value: 2 }, b: { value: 3 } })), {
    value: 5,
  });
});
