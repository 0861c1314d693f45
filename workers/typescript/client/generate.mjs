// Generates the client's wire types, request functions and schemas from the API's OpenAPI
// document, with @hey-api/openapi-ts (build.sh installs it: package.json pins its version):
//
//   node client/generate.mjs [--document openapi.json] [--out DIR] [--force]
//
// By default from the repository's openapi.json into src/generated/, the modules the
// hand-written client (src/client*.ts) is built on. The output is not committed: build.sh runs
// this before tsc, and it does nothing when the document, this file and the generator's version
// are those of the last run. A new field of an answer in the document is a property of the
// client's answer types, with no hand edit (test/contract.test.js shows it on a scratch copy).
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, mkdtempSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { createClient } from "@hey-api/openapi-ts";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, "..");
const { values } = parseArgs({
  options: {
    document: { type: "string", default: resolve(pkg, "../../openapi.json") },
    out: { type: "string", default: resolve(pkg, "src/generated") },
    force: { type: "boolean", default: false },
  },
});
const document = resolve(values.document);
const out = resolve(values.out);

// What the output depends on: the document, these settings and the generator's version.
const generator = JSON.parse(readFileSync(join(pkg, "node_modules/@hey-api/openapi-ts/package.json"), "utf8"));
const fingerprint = createHash("sha256")
  .update(readFileSync(document))
  .update(readFileSync(fileURLToPath(import.meta.url)))
  .update(generator.version)
  .digest("hex");
// The last run's fingerprint lives with the installed packages (build state), not in the output.
const stamp = join(pkg, "node_modules/.cache/tasker-client", createHash("sha256").update(out).digest("hex"));
if (!values.force && existsSync(out) && existsSync(stamp) && readFileSync(stamp, "utf8") === fingerprint) {
  process.exit(0);
}

mkdirSync(dirname(out), { recursive: true });
const scratch = mkdtempSync(join(dirname(out), ".generating-"));
try {
  await createClient({
    input: document,
    output: { path: scratch },
    logs: { level: "silent" },
    plugins: [
      // The answers' and requests' types; enums as unions of string literals.
      "@hey-api/typescript",
      // A function per operation, on the fetch client the generator bundles (no dependency).
      "@hey-api/client-fetch",
      "@hey-api/sdk",
      // The schemas as values: the client reads answers by them (camelCase, Dates).
      "@hey-api/schemas",
      // Timestamps typed as `Date` (the client reads them so: client_wire.ts); integers as `number`.
      { name: "@hey-api/transformers", dates: true, bigInt: false },
    ],
  });
  rmSync(out, { recursive: true, force: true });
  renameSync(scratch, out);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
mkdirSync(dirname(stamp), { recursive: true });
writeFileSync(stamp, fingerprint);
