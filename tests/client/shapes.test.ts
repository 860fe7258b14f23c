// The runtime of a generated client on shapes the examples do not have: header fields, lists
// in the query, a JSON body beside a path parameter, `.`/`..` as a path parameter, a caller's
// content type, cursor-only `hasMore`; and the default implementation against a small Node
// server answering JSON, an empty JSON body, no content (204), text and another media type,
// with and without the status (`provideWithStatus`).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import {
  Client,
  createDefaultImplementation,
  type GetEventsResponse,
  type PreparedRequest,
} from "../snapshots/shapes.client.js";

test("each field goes where the server reads it", async () => {
  const seen: PreparedRequest[] = [];
  const client = new Client(async (request) => {
    seen.push(request);
    return undefined;
  });
  await client.provide("get /v1/users", { tags: ["a", "b c"], active: true, "x-trace": "t-1" });
  await client.provide(
    "patch /v1/users/:id",
    { id: 7, name: "Ada" },
    { headers: { "Content-Type": "text/plain", authorization: "Bearer x" } },
  );
  await client.provide("get /v1/users/:id", { id: ".." as unknown as number });
  await client.provide("get /v1/users/:id", { id: "." as unknown as number });
  const [search, rename, up, here] = seen;
  assert.equal(search?.method, "GET");
  assert.equal(search?.path, "/v1/users?tags=a&tags=b+c&active=true");
  assert.deepEqual(search?.headers, { "x-trace": "t-1" });
  assert.equal(search?.body, undefined);
  assert.equal(rename?.method, "PATCH");
  assert.equal(rename?.path, "/v1/users/7");
  assert.deepEqual(JSON.parse(String(rename?.body)), { name: "Ada" });
  // The body's content type replaces the caller's, whatever its case; other headers stay.
  assert.deepEqual(rename?.headers, {
    authorization: "Bearer x",
    "content-type": "application/json",
  });
  assert.equal(up?.path, "/v1/users/%2E%2E");
  assert.equal(here?.path, "/v1/users/%2E");
});

test("a raw body is the Blob itself, of its own type", async () => {
  const seen: PreparedRequest[] = [];
  const client = new Client(async (request) => {
    seen.push(request);
    return undefined;
  });
  const signed = new Blob([new Uint8Array([0, 1, 255])], { type: "application/x-signed" });
  await client.provide("post /hooks/:source", { source: "git hub", raw: signed });
  await client.provide("post /hooks/:source", { source: "plain", raw: new Blob(["x"]) });
  const [typed, untyped] = seen;
  assert.equal(typed?.path, "/hooks/git%20hub");
  assert.equal(typed?.body, signed);
  assert.deepEqual(typed?.headers, { "content-type": "application/x-signed" });
  assert.deepEqual(untyped?.headers, { "content-type": "application/octet-stream" });
});

test("a streamed file is the form's last part, whatever the order of the input's keys", async () => {
  const seen: PreparedRequest[] = [];
  const client = new Client(async (request) => {
    seen.push(request);
    return undefined;
  });
  const file = new Blob(["bytes"], { type: "application/x-tar" });
  await client.provide("post /archives", { file, title: "Backup" });
  const form = seen[0]?.body;
  assert.ok(form instanceof FormData);
  assert.deepEqual(
    [...form.keys()],
    ["title", "file"],
  );
});

test("hasMore on cursor pages", () => {
  const page = (nextCursor: string | null): GetEventsResponse => ({
    status: "success",
    data: { events: [], nextCursor, limit: 2 },
  });
  assert.equal(Client.hasMore(page("abc")), true);
  assert.equal(Client.hasMore(page(null)), false);
  assert.equal(Client.hasMore({ status: "error", error: { message: "no" } }), false);
});

test("the default implementation reads JSON, text, no content and other bodies", async () => {
  const server = createServer((request, response) => {
    const answers: Record<string, [number, Record<string, string>, string]> = {
      "DELETE /v1/users/1": [204, {}, ""],
      "GET /stats": [
        200,
        { "content-type": "application/json; charset=utf-8" },
        '{"status":"success","data":{"count":2,"label":null}}',
      ],
      "GET /reserved": [200, { "content-type": "application/json" }, ""],
      "GET /events": [200, { "content-type": "application/json-seq" }, "\u001e{}\n"],
      "GET /v1/users/2": [200, { "content-type": "text/plain; charset=utf-8" }, "hello"],
    };
    const [status, headers, body] = answers[`${request.method} ${request.url}`] ?? [404, {}, ""];
    response.writeHead(status, headers).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  // A trailing slash on the base URL is fine.
  const client = new Client(createDefaultImplementation(`http://127.0.0.1:${port}/`));
  try {
    assert.equal(await client.provide("delete /v1/users/:id", { id: 1 }), undefined);
    assert.deepEqual(await client.provide("get /stats", {}), {
      status: "success",
      data: { count: 2, label: null },
    });
    assert.equal(await client.provide("get /reserved", {}), undefined);
    const sequence: unknown = await client.provide("get /events", {});
    assert.ok(sequence instanceof Blob);
    const text: unknown = await client.provide("get /v1/users/:id", { id: 2 });
    assert.equal(text, "hello");
    // With the status: the same bodies, the status and the headers (by lower-case name) beside
    // them; one the document does not give (this server's 404 for what it does not know)
    // arrives as it is.
    const removed = await client.provideWithStatus("delete /v1/users/:id", { id: 1 });
    assert.deepEqual([removed.status, removed.body], [204, undefined]);
    const stats = await client.provideWithStatus("get /stats", {});
    assert.equal(stats.status, 200);
    if (stats.status === 200) assert.equal(stats.body.data.count, 2);
    assert.equal(stats.headers["content-type"], "application/json; charset=utf-8");
    assert.equal(stats.headers["x-absent"], undefined);
    const unknown: { status: number; body: unknown } = await client.provideWithStatus(
      "get /v1/users/:id",
      { id: 3 },
    );
    assert.deepEqual([unknown.status, unknown.body], [404, undefined]);
  } finally {
    server.close();
  }
});
