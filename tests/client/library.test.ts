// The library example's generated client against the running example (LIBRARY_URL): every
// call goes through `provide` or `provideWithStatus`, and every value read from a response (a
// body, or a header the document declares) is typed by the client.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Client,
  createDefaultImplementation,
  type Book,
  type PreparedRequest,
} from "../snapshots/library.client.js";

const base = process.env["LIBRARY_URL"];
if (base === undefined) throw new Error("LIBRARY_URL is not set");
const client = new Client(createDefaultImplementation(base));

test("creates, reads, lists and deletes a book", async () => {
  const created = await client.provide("post /v1/books", { title: "Emma & co", genre: "novel" });
  assert.equal(created.status, "success");
  if (created.status !== "success") return;
  const book: Book = created.data;
  assert.equal(book.title, "Emma & co");

  const read = await client.provide("get /v1/books/:id", { id: book.id });
  assert.deepEqual(read, { status: "success", data: book });

  const novels = await client.provide("get /v1/books", { genre: "novel", limit: 10 });
  assert.equal(novels.status, "success");
  if (novels.status !== "success") return;
  assert.ok(novels.data.books.some((b) => b.id === book.id));
  assert.ok(novels.data.books.every((b) => b.genre === "novel"));

  const removed = await client.provide("delete /v1/books/:id", { id: book.id });
  assert.deepEqual(removed, { status: "success", data: book });
  const gone = await client.provide("get /v1/books/:id", { id: book.id });
  assert.equal(gone.status, "error");
  if (gone.status === "error") assert.equal(gone.error.message, `No book has the id ${book.id}`);
});

test("finds books with a QUERY request whose criteria travel in a JSON body", async () => {
  const created = await client.provide("post /v1/books", { title: "Querying Moby", genre: "novel" });
  assert.equal(created.status, "success");
  if (created.status !== "success") return;
  const found = await client.provide("query /v1/books/search", {
    words: ["QUERYING", "moby"],
    genres: ["novel"],
  });
  assert.equal(found.status, "success");
  if (found.status !== "success") return;
  assert.deepEqual(found.data.books, [created.data]);
  const none = await client.provide("query /v1/books/search", { words: ["moby"], genres: ["poetry"] });
  assert.deepEqual(none, { status: "success", data: { books: [] } });
  // The body is validated as any other input: an empty word is refused.
  const refused = await client.provide("query /v1/books/search", { words: [""] });
  assert.equal(refused.status, "error");
  if (refused.status === "error") assert.match(refused.error.message, /words\[0\]/);
  await client.provide("delete /v1/books/:id", { id: created.data.id });
});

test("a validation error is a typed error envelope", async () => {
  const refused = await client.provide("post /v1/books", { title: "", genre: "poetry" });
  assert.equal(refused.status, "error");
  if (refused.status !== "error") return;
  assert.match(refused.error.message, /title/);
});

test("provideWithStatus: the body and the declared headers typed by the status code", async () => {
  const created = await client.provideWithStatus("post /v1/books", {
    title: "Sense and Sensibility",
    genre: "novel",
  });
  assert.equal(created.status, 201);
  if (created.status !== 201) return;
  const { id } = created.body.data;
  // The header the document declares for a 201, typed: where the book is now.
  const location: string = created.headers.location;
  assert.equal(location, `/v1/books/${id}`);
  // Every other header, by lower-case name: a string, or undefined when absent.
  assert.match(created.headers["content-type"] ?? "", /^application\/json/);
  assert.equal(created.headers["x-absent"], undefined);

  // A title the library has (in any case): a 409 whose body names the book there.
  for (const title of ["SENSE AND SENSIBILITY", "persuasion"]) {
    const again = await client.provideWithStatus("post /v1/books", { title, genre: "novel" });
    switch (again.status) {
      case 409:
        assert.equal(again.body.error.existingId, title === "persuasion" ? 5 : id);
        assert.match(again.body.error.message, /already/);
        break;
      case 201:
        assert.fail(`a second copy at ${again.headers.location}`);
        break;
      default:
        assert.fail(`status ${again.status}`);
    }
  }
  // `provide` reads the same 409 as an error whose `message` is there, as every error's is.
  const duplicate = await client.provide("post /v1/books", { title: "Persuasion", genre: "novel" });
  assert.equal(duplicate.status, "error");
  if (duplicate.status === "error") assert.match(duplicate.error.message, /"Persuasion" already/);

  const read = await client.provideWithStatus("get /v1/books/:id", { id });
  switch (read.status) {
    case 200:
      assert.equal(read.body.data.title, "Sense and Sensibility");
      break;
    default:
      assert.fail(`status ${read.status}: ${read.body.error.message}`);
  }

  await client.provide("delete /v1/books/:id", { id });
  const gone = await client.provideWithStatus("get /v1/books/:id", { id });
  switch (gone.status) {
    case 404:
      assert.equal(gone.body.error.message, `No book has the id ${id}`);
      break;
    case 200:
      assert.fail(`a removed book is still there: ${gone.body.data.title}`);
      break;
    default:
      assert.fail(`status ${gone.status}`);
  }

  const refused = await client.provideWithStatus("post /v1/books", { title: "", genre: "poetry" });
  assert.equal(refused.status, 400);
  if (refused.status === 400) assert.match(refused.body.error.message, /title/);
});

test("provideWithStatus needs an implementation that tells the status", async () => {
  const bodyOnly = new Client(async () => ({ status: "success", data: null }));
  await assert.rejects(bodyOnly.provideWithStatus("get /v1/books/:id", { id: 1 }), TypeError);

  // A custom implementation: the body for `provide`, the status beside it for
  // `provideWithStatus`; both get the same prepared request.
  const seen: PreparedRequest[] = [];
  const withStatus = async (request: PreparedRequest) => {
    seen.push(request);
    const body = { status: "error", error: { message: "none" } };
    return { status: 404, headers: { "x-served-by": "test" }, body };
  };
  const custom = new Client(
    Object.assign(async (request: PreparedRequest) => (await withStatus(request)).body, {
      withStatus,
    }),
  );
  const answer = await custom.provideWithStatus("get /v1/books/:id", { id: 7 });
  assert.deepEqual(answer, {
    status: 404,
    headers: { "x-served-by": "test" },
    body: { status: "error", error: { message: "none" } },
  });
  assert.deepEqual(await custom.provide("get /v1/books/:id", { id: 8 }), answer.body);
  assert.deepEqual(
    seen.map((request) => `${request.method} ${request.path}`),
    ["GET /v1/books/7", "GET /v1/books/8"],
  );
});

test("walks every offset page with hasMore", async () => {
  const ids: number[] = [];
  let total = -1;
  let pages = 0;
  for (let offset = 0; ; pages += 1) {
    const page = await client.provide("get /v1/books", { limit: 2, offset });
    assert.equal(page.status, "success");
    if (page.status !== "success") return;
    ids.push(...page.data.books.map((b) => b.id));
    total = page.data.total;
    if (!Client.hasMore(page)) break;
    offset += page.data.limit;
  }
  assert.ok(total >= 7, `total ${total}`);
  assert.equal(ids.length, total);
  assert.equal(new Set(ids).size, total);
  assert.equal(pages, Math.ceil(total / 2) - 1);
});

test("walks every cursor page with hasMore", async () => {
  const everything = await client.provide("get /v1/books", { limit: 10 });
  assert.equal(everything.status, "success");
  if (everything.status !== "success") return;
  const ids: number[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await client.provide(
      "get /v1/books/feed",
      cursor === undefined ? { limit: 3 } : { limit: 3, cursor },
    );
    assert.equal(page.status, "success");
    if (page.status !== "success") return;
    ids.push(...page.data.books.map((b) => b.id));
    if (!Client.hasMore(page)) {
      assert.equal(page.data.nextCursor, null);
      break;
    }
    cursor = page.data.nextCursor ?? undefined;
  }
  assert.equal(ids.length, everything.data.total);
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
});

test("uploads a file as multipart/form-data", async () => {
  const bytes = new Uint8Array(4096).fill(0x89);
  const cover = new Blob([bytes], { type: "image/png" });
  const saved = await client.provide("post /v1/books/:id/cover", { id: 2, cover, caption: "Front" });
  assert.equal(saved.status, "success");
  if (saved.status !== "success") return;
  assert.deepEqual(
    { ...saved.data, name: undefined },
    { book: 2, size: 4096, mimetype: "image/png", caption: "Front", name: undefined },
  );
  const missing = await client.provide("post /v1/books/:id/cover", { id: 999, cover });
  assert.equal(missing.status, "error");
});

test("places every field: path parameters encoded and removed, lists repeated, nulls left out", async () => {
  const seen: PreparedRequest[] = [];
  const recorder = new Client(async (request) => {
    seen.push(request);
    return { status: "success", data: null };
  });
  // A path parameter the server would refuse, to see the encoding.
  await recorder.provide("get /v1/books/:id", { id: "a/b c?" as unknown as number });
  // Optional query fields are typed as absent or a value (a query string carries no null); a
  // null that gets there anyway (untyped JavaScript) is left out all the same.
  await recorder.provide("get /v1/books", { genre: null as unknown as "novel", limit: 2 });
  // The library has no list field; a list where one would be, to see repeated keys.
  await recorder.provide("get /v1/books", { genre: ["novel", "poetry"] as unknown as "novel" });
  await recorder.provide("post /v1/books", { title: "Ode", genre: "poetry" });
  await recorder.provide("delete /v1/books/:id", { id: 7 }, { headers: { "x-request-id": "abc" } });
  await recorder.provide("post /v1/books/:id/cover", { id: 3, cover: new Blob(["x"]), caption: "c" });
  const [read, list, repeated, create, remove, upload] = seen;
  assert.equal(read?.path, "/v1/books/a%2Fb%20c%3F");
  assert.equal(read?.method, "GET");
  assert.equal(read?.body, undefined);
  assert.equal(list?.path, "/v1/books?limit=2");
  assert.equal(repeated?.path, "/v1/books?genre=novel&genre=poetry");
  assert.equal(create?.method, "POST");
  assert.equal(create?.path, "/v1/books");
  assert.equal(create?.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(String(create?.body)), { title: "Ode", genre: "poetry" });
  assert.equal(remove?.method, "DELETE");
  assert.equal(remove?.path, "/v1/books/7");
  assert.equal(remove?.headers["x-request-id"], "abc");
  assert.equal(upload?.path, "/v1/books/3/cover");
  const form = upload?.body;
  assert.ok(form instanceof FormData);
  assert.deepEqual([...form.keys()].sort(), ["caption", "cover"]);
  // The form sets its own content type, with its boundary.
  assert.equal(upload?.headers["content-type"], undefined);
});
