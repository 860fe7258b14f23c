// Calls that do not fit the API must not compile: each `@ts-expect-error` below must stay an
// error (tsc fails on one that is not), so a client that accepts them fails the check.
import { Client, type Response } from "../snapshots/library.client.js";
import type { Input } from "../snapshots/library.types.js";
import { Subscription } from "../snapshots/events.client.js";

declare const client: Client;

// @ts-expect-error: a required field is missing
void client.provide("post /v1/books", { title: "Emma" });
// @ts-expect-error: a field of the wrong type
void client.provide("get /v1/books/:id", { id: "7" });
// @ts-expect-error: a value outside the enum
void client.provide("post /v1/books", { title: "Emma", genre: "drama" });
// @ts-expect-error: a route the API does not have
void client.provide("get /v1/authors", {});
// @ts-expect-error: a method the path does not have
void client.provide("put /v1/books/:id", { id: 7 });
// @ts-expect-error: a field the input does not have
void client.provide("get /v1/books/:id", { id: 7, verbose: true });
// @ts-expect-error: an optional field set to undefined (exactOptionalPropertyTypes)
void client.provide("get /v1/books", { limit: undefined });
// @ts-expect-error: a QUERY body's words are a list
void client.provide("query /v1/books/search", { words: "moby" });
// @ts-expect-error: a file field needs a Blob
void client.provide("post /v1/books/:id/cover", { id: 1, cover: "cover.png" });

export async function misuse(response: Response["get /v1/books/:id"]): Promise<void> {
  // @ts-expect-error: `data` is not known before `status` says success
  void response.data;
  if (response.status === "error") {
    // @ts-expect-error: an error has no `data`
    void response.data;
  }
  // @ts-expect-error: hasMore takes only paginated responses
  void Client.hasMore(response);
  // @ts-expect-error: the types file's inputs are the client's
  const input: Input["get /v1/books/:id"] = { id: "7" };
  void input;
}

{
  const subscription = new Subscription("get /countdown", { from: 3 });
  // @ts-expect-error: an event the stream does not have
  subscription.on("boom", () => undefined);
  // @ts-expect-error: a tick's data has no `right`
  subscription.on("tick", (data) => data.right);
  // @ts-expect-error: a request that is not an event stream
  void new Subscription("get /v1/books", {});
  // @ts-expect-error: the stream's input is checked too
  void new Subscription("get /countdown", { from: "3" });
}
