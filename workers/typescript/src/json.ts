/** A value that survives `JSON.stringify` / `JSON.parse` unchanged: what handlers receive and return. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export type JsonObject = { [key: string]: JsonValue };
