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

const docs = () => fs.readFileSync(path.join(__dirname, "../../../docs/testing.md"), "utf8");

// Writes the docs' block headed `// name` (its imports pointed at this build) and `files` into a folder
// of their own and runs it: all `passed` of its tests pass.
function runDocsTest(name, files, passed) {
  const escaped = name.replace(/[.]/g, "\\.");
  const block = new RegExp("```js\\n(// " + escaped + "\\n[\\s\\S]*?)```").exec(docs())?.[1];
  assert.ok(block, `docs/testing.md has no \`// ${name}\` block`);
  const dist = path.join(__dirname, "../dist");
  const local = block
    .replace('"tasker-workflows/testing"', JSON.stringify(pathToFileURL(path.join(dist, "testing.mjs")).href))
    .replace('"tasker-workflows"', JSON.stringify(pathToFileURL(path.join(dist, "index.mjs")).href));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docs-testing-"));
  try {
    for (const [file, text] of Object.entries({ ...files, [name]: local })) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), text);
    }
    // A test run of its own, not a subtest of this one (node marks its children).
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const out = execFileSync(process.execPath, ["--test", name], { cwd: dir, env, encoding: "utf8" });
    assert.match(out, new RegExp(`# pass ${passed}\\b`));
    assert.match(out, /# fail 0/);
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
}

test("the docs' TypeScript handler test passes", () => {
  runDocsTest("route.test.mjs", {}, 2);
});

test("the docs' TypeScript workflow test passes", () => {
  const template = /`templates\/week\.yaml`:\n\n```yaml\n([\s\S]*?)```/.exec(docs())?.[1];
  assert.ok(template, "docs/testing.md has no templates/week.yaml");
  runDocsTest("week.test.mjs", { "templates/week.yaml": template }, 1);
});
