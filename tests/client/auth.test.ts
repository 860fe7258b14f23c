// The auth example's generated client against the running example (AUTH_URL): an endpoint
// behind the authentication middleware, with and without its credentials, and a text endpoint.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, createDefaultImplementation } from "../snapshots/auth.client.js";

const base = process.env["AUTH_URL"];
if (base === undefined) throw new Error("AUTH_URL is not set");
const fetcher = createDefaultImplementation(base);
const anonymous = new Client(fetcher);
// The session token is a header the middleware reads, not an input field: a custom
// implementation adds it to every request.
const signedIn = new Client((request) =>
  fetcher({ ...request, headers: { ...request.headers, token: "456" } }),
);

test("without credentials: 401 naming the missing one; wrong ones: the middleware's 401", async () => {
  const denied = await anonymous.provide("get /v1/profile", { key: "123" });
  assert.deepEqual(denied, { status: "error", error: { message: "Missing credential: token (header)" } });
  const wrongKey = await signedIn.provide("get /v1/profile", { key: "999" });
  assert.deepEqual(wrongKey, { status: "error", error: { message: "Invalid key" } });
});

test("with credentials: the profile", async () => {
  const profile = await signedIn.provide("get /v1/profile", { key: "123", detail: 2 });
  assert.deepEqual(profile, { status: "success", data: { name: "Jane", detail: 2 } });
  // The same per call, through the options.
  const again = await anonymous.provide("get /v1/profile", { key: "123" }, { headers: { token: "456" } });
  assert.equal(again.status === "success" && again.data.detail, 1);
});

test("a declared error and a text endpoint", async () => {
  const limited = await signedIn.provide("get /v1/limited", { key: "123" });
  assert.deepEqual(limited, { status: "error", error: { message: "Too many requests" } });
  const text: string = await signedIn.provide("get /v1/plain", { key: "123" });
  assert.match(text, /^ok \{"name":"Jane","detail":1\}$/);
  const refused: string = await anonymous.provide("get /v1/plain", { key: "123" });
  assert.equal(refused, "failed: Missing credential: token (header)");
});
