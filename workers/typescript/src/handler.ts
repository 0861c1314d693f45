import type { StepContext } from "./context";
import type { JsonValue } from "./json";

/** What a handler may return: a JSON-able value, directly or through a Promise. */
export type HandlerResult = JsonValue | undefined | Promise<JsonValue | undefined>;

/** A handler as a function: sync or async. */
export type HandlerFn = (ctx: StepContext) => HandlerResult;

/**
 * A handler as a class. One instance serves every step of its name (concurrently), so it may
 * hold clients or caches.
 *
 * ```ts
 * class Double extends Handler {
 *   static handlerName = "double";
 *   async call(ctx: StepContext) { return { value: Number(ctx.context.value) * 2 }; }
 * }
 * registerHandler(Double);
 * ```
 */
export abstract class Handler {
  /** The name templates use in `handler:`. */
  static handlerName: string;
  abstract call(ctx: StepContext): HandlerResult;
}

/** A concrete subclass of {@link Handler}. */
export type HandlerClass = { handlerName: string; new (): Handler };

/** Handlers by name. */
export class Registry {
  readonly #handlers = new Map<string, HandlerFn>();

  /** Registers a function under `name`, or a {@link Handler} subclass under its `handlerName`. */
  register(name: string, fn: HandlerFn): this;
  register(cls: HandlerClass): this;
  register(nameOrClass: string | HandlerClass, fn?: HandlerFn): this {
    let name: string;
    let call: HandlerFn;
    if (typeof nameOrClass === "string") {
      if (typeof fn !== "function") {
        throw new TypeError(`handler "${nameOrClass}" must be a function`);
      }
      name = nameOrClass;
      call = fn;
    } else if (typeof nameOrClass === "function" && typeof nameOrClass.prototype?.call === "function") {
      name = nameOrClass.handlerName;
      if (typeof name !== "string" || name === "") {
        throw new TypeError(`${nameOrClass.name} needs a static handlerName`);
      }
      const instance = new nameOrClass();
      call = (ctx) => instance.call(ctx);
    } else {
      throw new TypeError("register(name, fn) or register(HandlerSubclass)");
    }
    // A silent replacement would make the outcome depend on the order handler files load.
    if (this.#handlers.has(name)) {
      throw new Error(`a handler named "${name}" is already registered`);
    }
    this.#handlers.set(name, call);
    return this;
  }

  get(name: string): HandlerFn | undefined {
    return this.#handlers.get(name);
  }

  names(): string[] {
    return [...this.#handlers.keys()].sort();
  }
}

// One process-wide registry, kept on globalThis so a handler file that resolves another copy of
// this package (a nested node_modules, a relative import of the sources) still registers into
// the registry the worker reads.
const KEY = Symbol.for("tasker.handlers.registry");
type WithRegistry = { [KEY]?: Registry };

/** The registry {@link registerHandler} fills and the worker entry point runs. */
export function defaultRegistry(): Registry {
  const g = globalThis as WithRegistry;
  return (g[KEY] ??= new Registry());
}

/** Registers a handler in the default registry: `registerHandler("double", fn)` or `registerHandler(Double)`. */
export function registerHandler(name: string, fn: HandlerFn): void;
export function registerHandler(cls: HandlerClass): void;
export function registerHandler(nameOrClass: string | HandlerClass, fn?: HandlerFn): void {
  if (typeof nameOrClass === "string") {
    defaultRegistry().register(nameOrClass, fn as HandlerFn);
  } else {
    defaultRegistry().register(nameOrClass);
  }
}
