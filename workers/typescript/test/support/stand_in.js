"use strict";
const { after, before } = require("node:test");
const http = require("node:http");

// A stand-in API server for the describe block that calls it: it answers `answers["METHOD
// /path"]` (`[status, JSON or null for no body]`, or a list of them in turn, the last one again
// once the others are used; 404 `no_route` for any other route) and shows `record` each request
// with its body. Up before the block's tests, down after them; the function returned gives its
// base URL.
function standIn(answers, record) {
  let server;
  let url;
  before(async () => {
    server = http.createServer(async (req, res) => {
      let text = "";
      for await (const chunk of req) text += chunk;
      record(req, text);
      let found = answers[`${req.method} ${req.url.split("?")[0]}`] ?? [
        404,
        { error: { code: "no_route", message: req.url } },
      ];
      if (Array.isArray(found[0])) found = found.length > 1 ? found.shift() : found[0];
      const [status, answer] = found;
      res.writeHead(status, { "content-type": "application/json" });
      res.end(answer === null ? "" : JSON.stringify(answer));
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${server.address().port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return () => url;
}

// A stand-in that keeps every request it answered, in order, as `[method, url, JSON body or null]`
// in `requests`; `base()` gives its URL.
function recordedStandIn(answers) {
  const requests = [];
  const base = standIn(answers, (req, text) =>
    requests.push([req.method, req.url, text === "" ? null : JSON.parse(text)]),
  );
  return { requests, base };
}

module.exports = { recordedStandIn, standIn };
