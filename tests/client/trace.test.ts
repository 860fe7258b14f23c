// W3C Trace Context from a generated client, opt-in: a small Node server records the headers
// each request arrives with, over a real socket, through the default implementation. Without
// `traceContext` no trace header is sent; with it, each request carries what it returns then
// (`traceparent`, and `tracestate` when given), `provideWithStatus` too; a call's own headers
// win; a malformed `traceparent` fails the call, naming the field. (That a traced Strata server
// continues such a trace is tests/tracing_otlp.rs's: its requests carry the same headers.)
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import {
  Client,
  createDefaultImplementation,
  type ClientOptions,
  type TraceContext,
} from "../snapshots/shapes.client.js";

const STATS = '{"status":"success","data":{"count":2,"label":null}}';

/** Serves `GET /stats` to `run`'s clients; the headers of each request the server saw. */
const served = async (
  run: (client: (options?: ClientOptions) => Client) => Promise<void>,
): Promise<IncomingHttpHeaders[]> => {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    seen.push(request.headers);
    response.writeHead(200, { "content-type": "application/json" }).end(STATS);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const implementation = createDefaultImplementation(`http://127.0.0.1:${port}`);
  try {
    await run((options) => new Client(implementation, options));
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return seen;
};

const PARENT_1 = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const PARENT_2 = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-00";

test("without traceContext, no trace header is sent", async () => {
  const seen = await served(async (client) => {
    assert.equal((await client().provide("get /stats", {})).status, "success");
    assert.equal((await client({}).provideWithStatus("get /stats", {})).status, 200);
  });
  assert.equal(seen.length, 2);
  for (const headers of seen) {
    assert.equal(headers["traceparent"], undefined);
    assert.equal(headers["tracestate"], undefined);
  }
});

test("with traceContext, each request carries what it returns when it is sent", async () => {
  const contexts: (TraceContext | undefined)[] = [
    { traceparent: PARENT_1, tracestate: "vendor=1,other=2" },
    { traceparent: PARENT_2 },
    undefined,
    { traceparent: PARENT_1, tracestate: undefined },
  ];
  let calls = 0;
  const seen = await served(async (client) => {
    const traced = client({ traceContext: () => contexts[calls++] });
    assert.equal((await traced.provide("get /stats", {})).status, "success");
    const withStatus = await traced.provideWithStatus("get /stats", {});
    assert.equal(withStatus.status, 200);
    assert.equal((await traced.provide("get /stats", {})).status, "success");
    // The call's own headers win over the client's context.
    await traced.provide("get /stats", {}, { headers: { traceparent: PARENT_2 } });
  });
  assert.equal(calls, 4, "called once per request");
  assert.deepEqual(
    seen.map((headers) => [headers["traceparent"], headers["tracestate"]]),
    [
      [PARENT_1, "vendor=1,other=2"],
      [PARENT_2, undefined],
      [undefined, undefined],
      [PARENT_2, undefined],
    ],
  );
});

test("a traceparent of another shape fails the call, naming the field", async () => {
  const seen = await served(async (client) => {
    for (const traceparent of ["", "4bf92f3577b34da6a3ce929d0e0e4736", `${PARENT_1}\nx: y`]) {
      const traced = client({ traceContext: () => ({ traceparent }) });
      await assert.rejects(traced.provide("get /stats", {}), (error: unknown) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, /^traceContext: traceparent must be 00-/);
        return true;
      });
      await assert.rejects(traced.provideWithStatus("get /stats", {}), TypeError);
    }
  });
  assert.deepEqual(seen, [], "nothing was sent");
});
