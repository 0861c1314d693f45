// The API's answers as the client hands them out: the types and schemas that @hey-api/openapi-ts
// generated from the API's OpenAPI document (src/generated, from openapi.json), with the JSON's
// snake_case names in camelCase and timestamps as `Date`. Both follow the document: a field it
// gains is a property here with no edit, typed (`Camel`) and read (`answer`) like the others.
import * as schemas from "./generated/schemas.gen";
import { parseApiJson } from "./json";

/** `snake_case` → `camelCase`, as a type. */
type CamelKey<K extends string> = K extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelKey<Tail>>}`
  : K;

/** `null` for a property the document lets the server leave out: the client reads it as `null`. */
type Absent<T, K extends keyof T> = {} extends Pick<T, K> ? null : never;

/**
 * A generated wire type as the client hands it out: every property camelCased (deeply), present
 * (`null` when the server left it out). JSON the document leaves free (`unknown`: contexts,
 * results, payloads) and `Date`s stay as they are.
 */
export type Camel<T> = T extends Date
  ? T
  : T extends readonly (infer Item)[]
    ? Camel<Item>[]
    : T extends object
      ? { -readonly [K in keyof T as CamelKey<K & string>]-?: Camel<Exclude<T[K], undefined>> | Absent<T, K> }
      : T;

/** The schemas of the document by name (`Task`, `Step`, …). */
type NameOf<K> = K extends `${infer Name}Schema` ? Name : never;
export type SchemaName = NameOf<keyof typeof schemas>;

/** The parts of a JSON Schema the reading looks at. */
interface Schema {
  $ref?: string;
  format?: string;
  type?: string | readonly string[];
  properties?: Readonly<Record<string, Schema>>;
  items?: Schema;
  oneOf?: readonly Schema[];
  anyOf?: readonly Schema[];
}

const byName = schemas as unknown as Record<string, Schema>;

/** The schema `schema` stands for: through `$ref`s, and a nullable one's non-null part. */
function resolve(schema: Schema): Schema {
  if (schema.$ref !== undefined) {
    const name = schema.$ref.slice(schema.$ref.lastIndexOf("/") + 1);
    return resolve(byName[`${name}Schema`] ?? {});
  }
  const options = (schema.oneOf ?? schema.anyOf)?.filter((option) => option.type !== "null");
  return options?.length === 1 ? resolve(options[0]) : schema;
}

function camel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** `value` read by `schema`: objects' properties camelCased, `date-time` strings as `Date`s. */
function read(value: unknown, schema: Schema): unknown {
  if (value === null || value === undefined) return null;
  const s = resolve(schema);
  if (s.format === "date-time" && typeof value === "string") return new Date(value);
  if (Array.isArray(value)) return s.items === undefined ? value : value.map((v) => read(v, s.items as Schema));
  if (typeof value !== "object" || s.properties === undefined) return value;
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, property] of Object.entries(s.properties)) out[camel(key)] = read(source[key], property);
  // A field of a newer server than the document: camelCased, as it came.
  for (const [key, v] of Object.entries(source)) if (!(key in s.properties)) out[camel(key)] = v;
  return out;
}

/**
 * An answer's body (its JSON text, as the transport hands it over, or a value) read as the
 * document's schema `name` says. Integers beyond ±(2^53 − 1) come back as `bigint`s.
 */
export function answer<T>(body: unknown, name: SchemaName): T {
  const json = typeof body === "string" ? (body === "" ? null : parseApiJson(body)) : body;
  return read(json, { $ref: name }) as T;
}
