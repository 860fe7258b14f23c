// Calls that do not fit the API must not compile: each `@ts-expect-error` below must stay an
// error (tsc fails on one that is not), so a client that accepts them fails the check.
import { Client, type Response, type StatusResponse } from "../snapshots/library.client.js";
import type { Input } from "../snapshots/library.types.js";
import { Subscription } from "../snapshots/events.client.js";
import type { StatusResponse as OwnBodies } from "../snapshots/statuses.types.js";

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

export async function misuseStatuses(): Promise<void> {
  const response = await client.provideWithStatus("get /v1/books/:id", { id: 7 });
  // @ts-expect-error: the body is not known before the status
  void response.body.data;
  switch (response.status) {
    case 200:
      void response.body.data.title;
      // @ts-expect-error: a 200's body has no `error`
      void response.body.error;
      break;
    case 404:
      void response.body.error.message;
      // @ts-expect-error: a 404's body has no `data`
      void response.body.data;
      break;
    // @ts-expect-error: 201 is not a status of this request
    case 201:
      break;
  }
  // @ts-expect-error: the statuses are the document's, not any number
  const status: StatusResponse<"get /v1/books/:id">["status"] = 418;
  void status;
  // @ts-expect-error: the input is checked as for `provide`
  void client.provideWithStatus("get /v1/books/:id", { id: "7" });
  // @ts-expect-error: a status implementation resolves with the status too
  void new Client(Object.assign(async () => undefined, { withStatus: async () => undefined }));
}

export async function misuseHeaders(): Promise<string> {
  const created = await client.provideWithStatus("post /v1/books", { title: "Emma", genre: "novel" });
  // @ts-expect-error: the headers declared are not known before the status
  const early: string = created.headers.location;
  void early;
  switch (created.status) {
    case 201:
      // Declared for a 201, and required: a string.
      return created.headers.location;
    case 409: {
      void created.body.error.existingId;
      // @ts-expect-error: a 409 declares no location: it may be absent
      const location: string = created.headers.location;
      return location;
    }
    case 403:
      // @ts-expect-error: the 403 (the library is full) is an ordinary error, without a book
      return String(created.body.error.existingId);
    case 503: {
      // Declared for a 503, and optional: a string or undefined.
      const retry: string | undefined = created.headers["retry-after"];
      // @ts-expect-error: an optional header may be absent
      const sure: string = created.headers["retry-after"];
      return `${retry}${sure}`;
    }
    default: {
      // @ts-expect-error: a header the document does not declare may be absent
      const sure: string = created.headers["content-type"];
      return sure;
    }
  }
}

// @ts-expect-error: a status implementation resolves with the headers too
void new Client(Object.assign(async () => undefined, { withStatus: async () => ({ status: 200, body: undefined }) }));

export function narrow(response: OwnBodies<"get /v1/users/:id">): string {
  switch (response.status) {
    case 200:
      return response.body.name;
    case 202:
      // @ts-expect-error: a 202 has no body
      return response.body.name;
    case 404:
      // @ts-expect-error: a 404 is the handler's or the router's envelope, not known which
      return response.body.missing;
    case 409:
      // @ts-expect-error: a 409's body has its own shape
      return response.body.missing;
    case 503:
      return response.body;
    default:
      return "";
  }
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
