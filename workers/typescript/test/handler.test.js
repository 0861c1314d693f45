"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");

const { Handler, Registry, registerHandler, defaultRegistry, PermanentError, isPermanent } = require("../dist/index.js");

test("functions register under a name", () => {
  const fn = () => 1;
  const r = new Registry().register("one", fn);
  assert.equal(r.get("one"), fn);
  assert.equal(r.get("two"), undefined);
  assert.deepEqual(r.names(), ["one"]);
});

test("classes register under their static handlerName, one instance for every call", async () => {
  const seen = [];
  class Double extends Handler {
    static handlerName = "double";
    async call(ctx) {
      seen.push(this);
      return { value: ctx.context.value * 2 };
    }
  }
  const r = new Registry().register(Double);
  assert.deepEqual(await r.get("double")({ context: { value: 4 } }), { value: 8 });
  await r.get("double")({ context: { value: 1 } });
  assert.ok(seen[0] instanceof Double);
  assert.equal(seen[0], seen[1]);
});

test("a duplicate name or a malformed handler is refused with a clear error", () => {
  const r = new Registry().register("x", () => 1);
  assert.throws(() => r.register("x", () => 2), /already registered/);
  assert.throws(() => r.register("y"), /must be a function/);
  class Nameless extends Handler {
    call() {}
  }
  assert.throws(() => r.register(Nameless), /Nameless needs a static handlerName/);
  assert.throws(() => r.register({}), TypeError);
});

test("registerHandler fills the process-wide registry, shared by every copy of the package", () => {
  registerHandler("global_one", () => 1);
  assert.ok(defaultRegistry().get("global_one"));
  // Another copy of the package (say a nested node_modules) finds the same registry.
  const other = Symbol.for("tasker.handlers.registry");
  assert.equal(globalThis[other], defaultRegistry());
});

test("PermanentError keeps its subclass name and is recognised without instanceof", () => {
  class InvalidOrder extends PermanentError {}
  const e = new InvalidOrder("no items");
  assert.equal(e.name, "InvalidOrder");
  assert.ok(isPermanent(e));
  assert.ok(!isPermanent(new Error("x")));
  assert.ok(!isPermanent("text"));
  // What a second copy of the package would throw: a different class, the same marker.
  const foreign = new Error("from elsewhere");
  Object.defineProperty(foreign, Symbol.for("tasker.permanent_error"), { value: true });
  assert.ok(isPermanent(foreign));
});
