// The events example's generated client against the running example (EVENTS_URL): a
// `Subscription` opened with the runtime's EventSource (node --experimental-eventsource)
// receives the countdown's events in order, typed by name.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Subscription } from "../snapshots/events.client.js";

const base = process.env["EVENTS_URL"];
if (base === undefined) throw new Error("EVENTS_URL is not set");

test("a subscription receives the typed events in order", async () => {
  const seen: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      subscription.close();
      reject(new Error(`no liftoff; seen ${seen.join(", ")}`));
    }, 5000);
    const subscription = new Subscription(
      "get /countdown",
      { from: 3, every_ms: 10 },
      { baseUrl: base },
    )
      .on("tick", (data) => {
        // `data` is `{ left: number }`.
        seen.push(`tick ${data.left.toFixed(0)}`);
      })
      .on("liftoff", (data) => {
        seen.push(`liftoff ${String(data)}`);
        clearTimeout(timer);
        subscription.close();
        resolve();
      });
  });
  assert.deepEqual(seen, ["tick 3", "tick 2", "tick 1", "liftoff null"]);
});
