"use strict";
// docs/testing.md's TypeScript handler and workflow tests run as written with `node --test` (its imports of
// the package pointed at this build).
const test = require("node:test");
const assert = require("node:assert/strict");
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { pathToFileURL } = require("node:url");

test("the docs' TypeScript handler test passes", () => {
  const docs = fs.readFileSync(path.join(__dirname, "../../../docs/testing.md"), "utf8");
  const block = /```js\n(\/\/ route\.test\.mjs\n[\s\S]*?)```/.exec(docs)?.[1];
  assert.ok(block, "docs/testing.md has no `// route.test.mjs` block");
  const dist = path.join(__dirname, "../dist");
  const local = block
    .replace('"tasker-workflows/testing"', JSON.stringify(pathToFileURL(path.join(dist, "testing.mjs")).href))
    .replace('"tasker-workflows"', JSON.stringify(pathToFileURL(path.join(dist, "index.mjs")).href));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docs-testing-"));
  try {
    fs.writeFileSync(path.join(dir, "route.test.mjs"), local);
    // A test run of its own, not a subtest of this one (node marks its children).
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const out = execFileSync(process.execPath, ["--test", "route.test.mjs"], { cwd: dir, env, encoding: "utf8" });
    assert.match(out, /# pass 2/);
    assert.match(out, /# fail 0/);
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});

test("the docs' TypeScript workflow test passes", () => {
  const docs = fs.readFileSync(path.join(__dirname, "../../../docs/testing.md"), "utf8");
  const block = /```js\n(\/\/ week\.test\.mjs\n[\s\S]*?)```/.exec(docs)?.[1];
  const template = /`templates\/week\.yaml`:\n\n```yaml\n([\s\S]*?)```/.exec(docs)?.[1];
  assert.ok(block && template, "docs/testing.md has no `// week.test.mjs` block or templates/week.yaml");
  const dist = path.join(__dirname, "../dist");
  const local = block
    .replace('"tasker-workflows/testing"', JSON.stringify(pathToFileURL(path.join(dist, "testing.mjs")).href))
    .replace('"tasker-workflows"', JSON.stringify(pathToFileURL(path.join(dist, "index.mjs")).href));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docs-testing-"));
  try {
    fs.mkdirSync(path.join(dir, "templates"));
    fs.writeFileSync(path.join(dir, "templates", "week.yaml"), template);
    fs.writeFileSync(path.join(dir, "week.test.mjs"), local);
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const out = execFileSync(process.execPath, ["--test", "week.test.mjs"], { cwd: dir, env, encoding: "utf8" });
    assert.match(out, /# pass 1/);
    assert.match(out, /# fail 0/);
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});
