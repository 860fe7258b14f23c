// The RealWorld application's generated client against the running application
// (REALWORLD_URL): a user's journey (register, follow, write an article, comment, favorite,
// read the feed) and the specification's errors, each narrowed by its status.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Client,
  createDefaultImplementation,
  type Implementation,
  type PreparedRequest,
} from "../snapshots/realworld.client.js";

const base = process.env["REALWORLD_URL"];
if (base === undefined) throw new Error("REALWORLD_URL is not set");
const fetcher = createDefaultImplementation(base);
const anonymous = new Client(fetcher);
// Names no earlier run against the same server has taken.
const run = Date.now().toString(36);

/** A client that sends `Authorization: Token <token>` with every request. */
function signedIn(token: string): Client {
  const withToken = (request: PreparedRequest): PreparedRequest => ({
    ...request,
    headers: { ...request.headers, authorization: `Token ${token}` },
  });
  const { withStatus } = fetcher;
  if (withStatus === undefined) throw new Error("the default implementation tells statuses");
  const implementation: Implementation = Object.assign(
    (request: PreparedRequest) => fetcher(withToken(request)),
    { withStatus: (request: PreparedRequest) => withStatus(withToken(request)) },
  );
  return new Client(implementation);
}

/** Registers `name`; its token. */
async function register(name: string): Promise<string> {
  const registered = await anonymous.provideWithStatus("post /api/users", {
    user: { username: name, email: `${name}@example.com`, password: `secret-${name}` },
  });
  if (registered.status !== 201) assert.fail(JSON.stringify(registered));
  assert.equal(registered.body.user.username, name);
  return registered.body.user.token;
}

test("register, follow, write, comment, favorite and read the feed", async () => {
  const [adaName, bobName] = [`ada${run}`, `bob${run}`];
  const ada = signedIn(await register(adaName));
  const bob = signedIn(await register(bobName));

  const followed = await bob.provideWithStatus("post /api/profiles/:username/follow", {
    username: adaName,
  });
  if (followed.status !== 200) assert.fail(JSON.stringify(followed));
  assert.equal(followed.body.profile.following, true);

  const written = await ada.provideWithStatus("post /api/articles", {
    article: {
      title: `How to train your dragon ${run}`,
      description: "Ever wonder how?",
      body: "You have to believe",
      tagList: ["training", "dragons"],
    },
  });
  if (written.status !== 201) assert.fail(JSON.stringify(written));
  const { slug } = written.body.article;
  assert.equal(slug, `how-to-train-your-dragon-${run}`);
  // Sorted by name, as RealWorld's reference implementations list them.
  assert.deepEqual(written.body.article.tagList, ["dragons", "training"]);

  const commented = await bob.provideWithStatus("post /api/articles/:slug/comments", {
    slug,
    comment: { body: "Thank you so much!" },
  });
  if (commented.status !== 200) assert.fail(JSON.stringify(commented));
  assert.equal(commented.body.comment.author.username, bobName);

  const favorited = await bob.provideWithStatus("post /api/articles/:slug/favorite", { slug });
  if (favorited.status !== 200) assert.fail(JSON.stringify(favorited));
  assert.equal(favorited.body.article.favorited, true);
  assert.equal(favorited.body.article.favoritesCount, 1);

  const feed = await bob.provideWithStatus("get /api/articles/feed", { limit: 10 });
  if (feed.status !== 200) assert.fail(JSON.stringify(feed));
  assert.equal(feed.body.articlesCount, 1);
  const [first] = feed.body.articles;
  assert.ok(first !== undefined);
  assert.equal(first.slug, slug);
  assert.equal(first.favorited, true);
  assert.equal(first.author.following, true);

  const comments = await anonymous.provideWithStatus("get /api/articles/:slug/comments", { slug });
  if (comments.status !== 200) assert.fail(JSON.stringify(comments));
  assert.deepEqual(
    comments.body.comments.map((comment) => comment.body),
    ["Thank you so much!"],
  );

  // Another's article: 403; the author's deletion: 204 without a body; then 404.
  const refused = await bob.provideWithStatus("delete /api/articles/:slug", { slug });
  assert.equal(refused.status, 403);
  const deleted = await ada.provideWithStatus("delete /api/articles/:slug", { slug });
  assert.deepEqual({ status: deleted.status, body: deleted.body }, { status: 204, body: undefined });
  const gone = await anonymous.provideWithStatus("get /api/articles/:slug", { slug });
  if (gone.status !== 404) assert.fail(JSON.stringify(gone));
  assert.deepEqual(gone.body, { errors: { body: ["Article not found"] } });
});

test("the specification's errors: 422 naming every problem, 401 without a token", async () => {
  const invalid = await anonymous.provideWithStatus("post /api/users", {
    user: { username: "", email: "not an email", password: "secret" },
  });
  if (invalid.status !== 422) assert.fail(JSON.stringify(invalid));
  assert.equal(invalid.body.errors.body.length, 2, JSON.stringify(invalid.body));
  const unsigned = await anonymous.provideWithStatus("get /api/user", {});
  if (unsigned.status !== 401) assert.fail(JSON.stringify(unsigned));
  assert.equal(unsigned.body.errors.body.length, 1);
});
