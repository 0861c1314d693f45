// Node's types (@types/node) declare fetch, Request and Response globally, but not BodyInit,
// which the fetch client that @hey-api/openapi-ts generates (src/generated/client) names in two
// casts. Declared here from the same source, undici's types, rather than with the DOM library
// and everything else it would bring in.
type BodyInit = import("undici-types").BodyInit;
