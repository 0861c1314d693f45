// Checks the TypeScript client against the API's OpenAPI document: every field it reads from an
// answer exists in that answer's schema, and a field it reads as always there is one the schema
// requires. Run by tests/fast/openapi.rs with the document the orchestrator serves, so a server
// change that breaks the client fails the test suite:
//
//     node workers/typescript/test/contract_check.mjs path/to/openapi.json
//
// Prints nothing and exits 0 when the client agrees with the document; otherwise prints each
// disagreement and exits 1. The same check as workers/python/tests/contract_check.py, over the
// TypeScript compiler's syntax tree:
// - In src/task.ts and src/audit.ts, each function that reads the answer's JSON (a parameter typed `Wire`, or a
//   `const x = json as Wire`) reads the schema its declared return type names (`Task` → Task,
//   SCHEMA_OF for the others).
// - In src/client.ts, an answer read in place (`(await this.#http.send("GET", "/v1/tasks")) as
//   { tasks: unknown[]; … }`) is the success answer of that operation in the document.
// - A read is tolerant of a missing field when it is the left of `??`, compared (`== null`,
//   `=== true`), tested (`?:`, `&&`, `!`, `Array.isArray`) or passed to a local function whose
//   parameter may be `null` or `undefined` (`date(t.completed_at)`); any other read (`t.id`,
//   `new Date(t.created_at)`, `t.tasks.map(…)`) counts on it. A field read both ways in one
//   function counts as tolerated.
// - `a.b.c` reads `c` in the schema of `b` when that is an object schema of the document.
// Under `node --test` (npm test runs every file in test/) without a document, it skips.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import ts from "typescript";

const SRC = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "src");

// Answer types named otherwise in the document.
const SCHEMA_OF = {
  TaskChild: "ChildLink",
  BatchItemResult: "BatchItem",
  PurgeResult: "Purged",
  BackfillResult: "Backfilled",
};
// Parts of a step the document gives as free-form JSON objects (described in prose): nothing
// to check them against.
const FREE_FORM = new Set(["StepWait", "StepChild", "StepThrottle", "StepLimits"]);

function main(docFile) {
  const doc = JSON.parse(fs.readFileSync(docFile, "utf8"));
  const problems = [];
  const checked = new Set();
  for (const file of ["task.ts", "audit.ts", "client.ts"]) {
    const source = ts.createSourceFile(file, fs.readFileSync(path.join(SRC, file), "utf8"), ts.ScriptTarget.Latest, true);
    const reader = new Reader(doc, source, problems);
    reader.visit(source, { vars: new Map() });
    for (const name of reader.checked) checked.add(name);
  }
  if (checked.size < 20) problems.push(`only ${checked.size} answer readers found in ${SRC}`);
  for (const p of problems) console.log(p);
  return problems.length ? 1 : 0;
}

/** Walks one source file, finding the answer's JSON where it is read and checking each read. */
class Reader {
  constructor(doc, source, problems) {
    this.doc = doc;
    this.schemas = doc.components.schemas;
    this.source = source;
    this.problems = problems;
    this.checked = new Set();
    // The file's top-level functions, for the routes their paths build and their parameters.
    this.functions = new Map();
    for (const s of source.statements) {
      if (ts.isFunctionDeclaration(s) && s.name) this.functions.set(s.name.text, s);
    }
  }

  /**
   * Visits `node` in `scope`: `vars`, the answers in sight (name → { reader, schema }), and in a
   * function its name (`reader`), its return type's name (`returns`) and the fields it `reads`.
   */
  visit(node, scope) {
    if (ts.isFunctionLike(node) && node.body) {
      const inner = this.enter(node, scope);
      ts.forEachChild(node, (child) => this.visit(child, inner));
      this.report(inner);
      return;
    }
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      const found = this.answerOf(node.initializer, scope);
      if (found) scope.vars.set(node.name.text, found);
    } else if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) {
      if (!isAccessBase(node)) this.check(node, scope);
    }
    ts.forEachChild(node, (child) => this.visit(child, scope));
  }

  /** A function's scope: its parameters typed `Wire` read the schema its return type names. */
  enter(fn, outer) {
    const returns = fn.type ? typeName(fn.type) : null;
    const reader = fn.name ? fn.name.text : `${outer.reader}'s ${returns ?? "function"}`;
    // The fields of each schema it reads, tolerated or not: checked on leaving it.
    const scope = { vars: new Map(outer.vars), reader, returns, reads: new Map() };
    for (const param of fn.parameters) {
      if (ts.isIdentifier(param.name) && param.type && typeName(param.type) === "Wire") {
        scope.vars.set(param.name.text, this.schemaFor(reader, returns));
      }
    }
    return scope;
  }

  /** What `json as Wire` or `(await this.#http.send(METHOD, PATH)) as { … }` reads, if either. */
  answerOf(expr, scope) {
    if (!ts.isAsExpression(expr) || scope.reader === undefined) return null;
    if (typeName(expr.type) === "Wire") return this.schemaFor(scope.reader, scope.returns);
    let call = expr.expression;
    while (ts.isParenthesizedExpression(call) || ts.isAwaitExpression(call)) call = call.expression;
    if (!ts.isCallExpression(call) || !ts.isPropertyAccessExpression(call.expression)) return null;
    if (call.expression.name.text !== "send" || call.arguments.length < 2) return null;
    const method = call.arguments[0];
    if (!ts.isStringLiteral(method)) return null;
    const route = this.route(call.arguments[1]);
    const reader = `Client.${scope.reader} (${method.text} ${route})`;
    const schema = this.answerSchema(method.text, route);
    if (schema === null) this.problems.push(`${reader}: the document describes no JSON answer of it`);
    return { reader, schema };
  }

  /** What a reader returning the type `type` reads: its schema, null when there is none to check. */
  schemaFor(reader, type) {
    if (FREE_FORM.has(type)) return { reader, schema: null };
    const schema = SCHEMA_OF[type] ?? type;
    if (type === null) {
      this.problems.push(`${reader} reads an answer but declares no return type to check it against`);
    } else if (!this.schemas[schema]) {
      this.problems.push(`${reader}: no schema "${schema}" in the document`);
    }
    return { reader, schema: this.schemas[schema] ? schema : null };
  }

  /** A path as the client builds it, each part it does not spell out as `{}`. */
  route(expr) {
    if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr)) return expr.text;
    if (ts.isTemplateExpression(expr)) {
      return expr.head.text + expr.templateSpans.map((s) => this.route(s.expression) + s.literal.text).join("");
    }
    if (ts.isCallExpression(expr) && ts.isIdentifier(expr.expression)) {
      const body = this.functions.get(expr.expression.text)?.body;
      const returned = body?.statements.length === 1 && ts.isReturnStatement(body.statements[0]);
      if (returned) return this.route(body.statements[0].expression);
    }
    return "{}";
  }

  /** The name of the schema of the success answer of `method path`, or null. */
  answerSchema(method, route) {
    const [, item] =
      Object.entries(this.doc.paths).find(([p]) => p.replace(/\{[^}]*\}/g, "{}") === route) ?? [];
    const responses = item?.[method.toLowerCase()]?.responses ?? {};
    for (const [status, answer] of Object.entries(responses)) {
      const ref = answer.content?.["application/json"]?.schema?.$ref;
      if (status.startsWith("2") && ref) return ref.split("/").pop();
    }
    return null;
  }

  /** Records the read `node` (the last access of a chain such as `t.error.code`) makes. */
  check(node, scope) {
    const chain = [];
    let root = node;
    while (ts.isPropertyAccessExpression(root) || ts.isElementAccessExpression(root)) {
      chain.unshift(root);
      root = root.expression;
    }
    const answer = ts.isIdentifier(root) ? scope.vars.get(root.text) : undefined;
    if (!answer || answer.schema === null) return;
    if (ts.isCallExpression(node.parent) && node.parent.expression === node) chain.pop(); // a method
    let schema = answer.schema;
    for (const access of chain) {
      const field = ts.isPropertyAccessExpression(access) ? access.name.text : literal(access.argumentExpression);
      if (field === null || schema === null) return;
      const key = `${answer.reader}\u0000${schema}`;
      if (!scope.reads.has(key)) scope.reads.set(key, { reader: answer.reader, schema, fields: new Map() });
      const fields = scope.reads.get(key).fields;
      fields.set(field, (fields.get(field) ?? false) || this.tolerates(access));
      schema = this.objectSchema(this.schemas[schema]?.properties?.[field]);
    }
  }

  /** Whether the read `node` goes on when the field is missing (`undefined`). */
  tolerates(node) {
    let expr = node;
    while (ts.isParenthesizedExpression(expr.parent)) expr = expr.parent;
    const parent = expr.parent;
    if (isAccessBase(node)) return Boolean(node.parent.questionDotToken);
    if (ts.isBinaryExpression(parent)) {
      const op = parent.operatorToken.kind;
      const K = ts.SyntaxKind;
      if (op === K.QuestionQuestionToken || op === K.AmpersandAmpersandToken || op === K.BarBarToken) {
        return parent.left === expr;
      }
      return [K.EqualsEqualsToken, K.ExclamationEqualsToken, K.EqualsEqualsEqualsToken, K.ExclamationEqualsEqualsToken].includes(op);
    }
    if (ts.isConditionalExpression(parent)) return parent.condition === expr;
    if (ts.isPrefixUnaryExpression(parent) || ts.isTypeOfExpression(parent)) return true;
    if (ts.isCallExpression(parent) && parent.expression !== expr) {
      const callee = parent.expression.getText(this.source);
      if (callee === "Array.isArray") return true;
      const param = this.functions.get(callee)?.parameters[parent.arguments.indexOf(expr)];
      return Boolean(param && (param.questionToken || /\b(null|undefined)\b/.test(param.type?.getText(this.source) ?? "")));
    }
    return false;
  }

  /** The schema name an object-valued property refers to (directly, or or-null), else null. */
  objectSchema(property) {
    if (!property) return null;
    if (property.$ref) return property.$ref.split("/").pop();
    for (const branch of property.oneOf ?? property.anyOf ?? []) {
      if (branch.$ref) return branch.$ref.split("/").pop();
    }
    return null;
  }

  /** Checks what one function read, once its whole body has been visited. */
  report(scope) {
    for (const { reader, schema, fields } of scope.reads.values()) {
      const { properties = {}, required = [] } = this.schemas[schema];
      for (const [field, tolerated] of [...fields].sort()) {
        if (!(field in properties)) {
          this.problems.push(`${reader} reads "${field}", which ${schema} does not have`);
        } else if (!tolerated && !required.includes(field)) {
          this.problems.push(`${reader} reads "${field}" as always there; ${schema} does not require it`);
        }
      }
      this.checked.add(`${reader} ${schema}`);
    }
  }
}

/** Whether `node` is the object of a further access (`t.error` in `t.error.code`). */
function isAccessBase(node) {
  const parent = node.parent;
  return (ts.isPropertyAccessExpression(parent) || ts.isElementAccessExpression(parent)) && parent.expression === node;
}

function literal(expr) {
  return ts.isStringLiteral(expr) ? expr.text : null;
}

function typeName(type) {
  return ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName) ? type.typeName.text : null;
}

const doc = process.argv[2];
if (doc === undefined) {
  if (process.env.NODE_TEST_CONTEXT === undefined) {
    console.error("usage: node contract_check.mjs path/to/openapi.json");
    process.exitCode = 2;
  }
} else {
  process.exitCode = main(doc);
}
