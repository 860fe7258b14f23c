// A small social app in memory, on express-zod-api 29 / zod 4: the twin of Strata's
// examples/users_api.rs, for comparing how much code the same API takes (README, "How much you
// write"). Not run in CI: it was typechecked once with `tsc --noEmit --strict --module nodenext
// --moduleResolution nodenext --target es2022 --skipLibCheck` beside the pinned packages plus
// @types/express@5, @types/node@24, @types/http-errors@2 and express-fileupload's types.
import createHttpError from "http-errors";
import {
  createConfig,
  createServer,
  defaultEndpointsFactory,
  ensureHttpError,
  EndpointsFactory,
  EventStreamFactory,
  ez,
  getMessageFromError,
  Middleware,
  ResultHandler,
  type Routing,
} from "express-zod-api";
import { z } from "zod";

const roleSchema = z.enum(["admin", "member"]);
const userSchema = z.object({
  id: z.int(),
  name: z.string(),
  email: z.email(),
  role: roleSchema,
  age: z.int().nullable(),
  hasAvatar: z.boolean(),
});
const postSchema = z.object({ id: z.int(), authorId: z.int(), text: z.string(), likes: z.int() });
const commentSchema = z.object({
  id: z.int(),
  postId: z.int(),
  authorId: z.int(),
  text: z.string(),
});
type User = z.output<typeof userSchema>;
type Post = z.output<typeof postSchema>;
type Comment = z.output<typeof commentSchema>;
type Account = Omit<User, "hasAvatar"> & { password: string };
type StoredPost = Omit<Post, "likes"> & { likedBy: Set<number> };

const db = {
  nextId: 2,
  users: new Map<number, Account>([
    [
      1,
      {
        id: 1,
        name: "Admin",
        email: "admin@example.com",
        role: "admin",
        age: null,
        password: "admin-password",
      },
    ],
  ]),
  tokens: new Map<string, number>(),
  avatars: new Map<number, { data: Buffer; mimetype: string }>(),
  posts: new Map<number, StoredPost>(),
  comments: new Map<number, Comment>(),
  following: new Map<number, Set<number>>(), // follower -> followees
};
const feed = new Set<(post: Post) => void>(); // listeners of the event stream

const toUser = ({ password: _, ...user }: Account): User => ({
  ...user,
  hasAvatar: db.avatars.has(user.id),
});
const toPost = ({ likedBy, ...post }: StoredPost): Post => ({ ...post, likes: likedBy.size });
const findUser = (id: number) => {
  const user = db.users.get(id);
  if (!user) throw createHttpError(404, "User not found");
  return user;
};
const findPost = (id: number) => {
  const post = db.posts.get(id);
  if (!post) throw createHttpError(404, "Post not found");
  return post;
};
const checkEmailFree = (email: string) => {
  if ([...db.users.values()].some((user) => user.email === email))
    throw createHttpError(409, "Email already registered");
};
const requireAdmin = (me: Account) => {
  if (me.role !== "admin") throw createHttpError(403, "Admins only");
};
const followeesOf = (id: number) => db.following.get(id) ?? new Set<number>();

const id = z.coerce.number().int().positive(); // path parameters are text
const name = z.string().min(1).max(50);
const age = z.coerce.number().int().min(0).max(150); // also accepts "42" in JSON
const text = z.string().min(1).max(500);
const newUser = z.object({
  name,
  email: z.email(),
  password: z.string().min(8),
  age: age.optional(),
});
const userChanges = z.object({ name: name.optional(), age: age.optional() }); // null is refused
const usersOutput = z.object({ users: z.array(userSchema) });

const createAccount = (input: z.output<typeof newUser>, role: User["role"]) => {
  checkEmailFree(input.email);
  const user: Account = { id: db.nextId++, role, age: null, ...input };
  db.users.set(user.id, user);
  return user;
};
const startSession = (user: Account) => {
  const token = crypto.randomUUID();
  db.tokens.set(token, user.id);
  return { token, user: toUser(user) };
};
const sessionOutput = z.object({ token: z.string(), user: userSchema });

const auth = new Middleware({
  security: { type: "header", name: "authorization" },
  handler: async ({ request }) => {
    const token = String(request.headers.authorization ?? "").replace(/^Bearer /, "");
    const userId = db.tokens.get(token);
    if (userId === undefined) throw createHttpError(401, "Invalid token");
    return { token, me: findUser(userId) };
  },
});
const authed = defaultEndpointsFactory.addMiddleware(auth);

const health = defaultEndpointsFactory.build({
  output: z.object({ status: z.literal("ok") }),
  handler: async () => ({ status: "ok" as const }),
});

const signUp = defaultEndpointsFactory.build({
  method: "post",
  input: newUser,
  output: sessionOutput,
  handler: async ({ input }) => startSession(createAccount(input, "member")),
});

const signIn = defaultEndpointsFactory.build({
  method: "post",
  input: z.object({ email: z.email(), password: z.string() }),
  output: sessionOutput,
  handler: async ({ input: { email, password } }) => {
    const user = [...db.users.values()].find((u) => u.email === email && u.password === password);
    if (!user) throw createHttpError(401, "Invalid email or password");
    return startSession(user);
  },
});

const signOut = authed.buildVoid({
  method: "delete",
  handler: async ({ ctx: { token } }) => void db.tokens.delete(token),
});

const userPages = ez.paginated({
  style: "offset",
  itemSchema: userSchema,
  itemsName: "users",
  maxLimit: 50,
  defaultLimit: 20,
});

const listUsers = authed.build({
  input: userPages.input.and(
    z.object({
      role: roleSchema.optional(),
      q: z.string().optional(),
      hasAvatar: z.stringbool().optional(),
    }),
  ),
  output: userPages.output,
  handler: async ({ input: { limit, offset, role, q, hasAvatar } }) => {
    const users = [...db.users.values()]
      .map(toUser)
      .filter((user) => role === undefined || user.role === role)
      .filter((user) => q === undefined || user.name.toLowerCase().includes(q.toLowerCase()))
      .filter((user) => hasAvatar === undefined || user.hasAvatar === hasAvatar);
    return { users: users.slice(offset, offset + limit), total: users.length, limit, offset };
  },
});

const getUser = authed.build({
  input: z.object({ id }),
  output: userSchema,
  handler: async ({ input }) => toUser(findUser(input.id)),
});

const createUser = authed.build({
  method: "post",
  input: newUser.extend({ role: roleSchema.default("member") }),
  output: userSchema,
  handler: async ({ input: { role, ...input }, ctx: { me } }) => {
    requireAdmin(me);
    return toUser(createAccount(input, role));
  },
});

const updateUser = authed.build({
  method: "patch",
  input: userChanges.extend({ id, role: roleSchema.optional() }),
  output: userSchema,
  handler: async ({ input: { id, ...changes }, ctx: { me } }) => {
    requireAdmin(me);
    return toUser(Object.assign(findUser(id), changes));
  },
});

const deleteUser = authed.buildVoid({
  method: "delete",
  input: z.object({ id }),
  handler: async ({ input, ctx: { me } }) => {
    requireAdmin(me);
    findUser(input.id);
    db.users.delete(input.id);
    db.avatars.delete(input.id);
    db.following.delete(input.id);
    for (const followees of db.following.values()) followees.delete(input.id);
    for (const [token, userId] of db.tokens) if (userId === input.id) db.tokens.delete(token);
  },
});

const getMe = authed.build({
  output: userSchema,
  handler: async ({ ctx: { me } }) => toUser(me),
});

const updateMe = authed.build({
  method: "patch",
  input: userChanges,
  output: userSchema,
  handler: async ({ input, ctx: { me } }) => toUser(Object.assign(me, input)),
});

const uploadAvatar = authed.build({
  method: "post",
  input: z.object({ avatar: ez.upload() }),
  output: z.object({ size: z.int() }),
  handler: async ({ input: { avatar }, ctx: { me } }) => {
    if (!avatar.mimetype.startsWith("image/")) throw createHttpError(415, "Avatars are images");
    db.avatars.set(me.id, { data: avatar.data, mimetype: avatar.mimetype });
    return { size: avatar.size };
  },
});

// Binary answers need a result handler of their own; errors keep the default envelope.
const imageFactory = new EndpointsFactory(
  new ResultHandler({
    positive: { schema: ez.buffer(), mimeType: "image/*" },
    negative: z.object({ status: z.literal("error"), error: z.object({ message: z.string() }) }),
    handler: ({ error, output, response }) => {
      if (error) {
        const { statusCode } = ensureHttpError(error);
        return void response
          .status(statusCode)
          .json({ status: "error", error: { message: getMessageFromError(error) } });
      }
      response.type(String(output.mimetype)).send(output.data as Buffer);
    },
  }),
).addMiddleware(auth);

const downloadAvatar = imageFactory.build({
  input: z.object({ id }),
  output: z.object({ data: ez.buffer(), mimetype: z.string() }),
  handler: async ({ input }) => {
    const avatar = db.avatars.get(findUser(input.id).id);
    if (!avatar) throw createHttpError(404, "No avatar");
    return avatar;
  },
});

const follow = authed.buildVoid({
  method: "post",
  input: z.object({ id }),
  handler: async ({ input, ctx: { me } }) => {
    if (findUser(input.id).id === me.id) throw createHttpError(400, "You can not follow yourself");
    db.following.set(me.id, followeesOf(me.id).add(input.id));
  },
});

const unfollow = authed.buildVoid({
  method: "delete",
  input: z.object({ id }),
  handler: async ({ input, ctx: { me } }) => void followeesOf(me.id).delete(findUser(input.id).id),
});

const followers = authed.build({
  input: z.object({ id }),
  output: usersOutput,
  handler: async ({ input }) => {
    findUser(input.id);
    const users = [...db.users.values()].filter((user) => followeesOf(user.id).has(input.id));
    return { users: users.map(toUser) };
  },
});

const following = authed.build({
  input: z.object({ id }),
  output: usersOutput,
  handler: async ({ input }) => ({
    users: [...followeesOf(findUser(input.id).id)].map((followee) => toUser(findUser(followee))),
  }),
});

const postPages = ez.paginated({
  style: "cursor",
  itemSchema: postSchema,
  itemsName: "posts",
  maxLimit: 50,
  defaultLimit: 20,
});

const listPosts = authed.build({
  input: postPages.input.and(z.object({ authorId: id.optional() })),
  output: postPages.output,
  handler: async ({ input: { cursor, limit, authorId } }) => {
    const after = cursor === undefined ? 0 : Number(cursor);
    if (!Number.isInteger(after)) throw createHttpError(400, "cursor: not a cursor of this list");
    const posts = [...db.posts.values()]
      .filter((post) => post.id > after && (authorId === undefined || post.authorId === authorId))
      .slice(0, limit + 1);
    const nextCursor = posts.length > limit ? String(posts[limit - 1]!.id) : null;
    return { posts: posts.slice(0, limit).map(toPost), nextCursor, limit };
  },
});

const getPost = authed.build({
  input: z.object({ id }),
  output: postSchema,
  handler: async ({ input }) => toPost(findPost(input.id)),
});

const createPost = authed.build({
  method: "post",
  input: z.object({ text }),
  output: postSchema,
  handler: async ({ input, ctx: { me } }) => {
    const post: StoredPost = {
      id: db.nextId++,
      authorId: me.id,
      text: input.text,
      likedBy: new Set(),
    };
    db.posts.set(post.id, post);
    for (const listener of feed) listener(toPost(post));
    return toPost(post);
  },
});

const findOwnPost = (id: number, me: Account) => {
  const post = findPost(id);
  if (post.authorId !== me.id) throw createHttpError(403, "Only the author can change a post");
  return post;
};

const updatePost = authed.build({
  method: "patch",
  input: z.object({ id, text }),
  output: postSchema,
  handler: async ({ input, ctx: { me } }) =>
    toPost(Object.assign(findOwnPost(input.id, me), { text: input.text })),
});

const deletePost = authed.buildVoid({
  method: "delete",
  input: z.object({ id }),
  handler: async ({ input, ctx: { me } }) => {
    db.posts.delete(findOwnPost(input.id, me).id);
    for (const comment of db.comments.values())
      if (comment.postId === input.id) db.comments.delete(comment.id);
  },
});

const like = authed.build({
  method: "post",
  input: z.object({ id }),
  output: postSchema,
  handler: async ({ input, ctx: { me } }) => {
    const post = findPost(input.id);
    post.likedBy.add(me.id);
    return toPost(post);
  },
});

const unlike = authed.build({
  method: "delete",
  input: z.object({ id }),
  output: postSchema,
  handler: async ({ input, ctx: { me } }) => {
    const post = findPost(input.id);
    post.likedBy.delete(me.id);
    return toPost(post);
  },
});

const likers = authed.build({
  input: z.object({ id }),
  output: usersOutput,
  handler: async ({ input }) => ({
    users: [...findPost(input.id).likedBy].map((liker) => toUser(findUser(liker))),
  }),
});

const listComments = authed.build({
  input: z.object({ id }),
  output: z.object({ comments: z.array(commentSchema) }),
  handler: async ({ input }) => {
    findPost(input.id);
    return { comments: [...db.comments.values()].filter((comment) => comment.postId === input.id) };
  },
});

const addComment = authed.build({
  method: "post",
  input: z.object({ id, text }),
  output: commentSchema,
  handler: async ({ input, ctx: { me } }) => {
    const comment = {
      id: db.nextId++,
      postId: findPost(input.id).id,
      authorId: me.id,
      text: input.text,
    };
    db.comments.set(comment.id, comment);
    return comment;
  },
});

const deleteComment = authed.buildVoid({
  method: "delete",
  input: z.object({ id, commentId: id }),
  handler: async ({ input, ctx: { me } }) => {
    const comment = db.comments.get(input.commentId);
    if (!comment || comment.postId !== input.id) throw createHttpError(404, "Comment not found");
    if (comment.authorId !== me.id)
      throw createHttpError(403, "Only the author can delete a comment");
    db.comments.delete(comment.id);
  },
});

const events = new EventStreamFactory({ post: postSchema }).buildVoid({
  input: z.object({ authorId: id.optional() }),
  handler: async ({ input: { authorId }, ctx: { emit, signal } }) => {
    const listener = (post: Post) => {
      if (authorId === undefined || post.authorId === authorId) emit("post", post);
    };
    feed.add(listener);
    await new Promise((resolve) => signal.addEventListener("abort", resolve));
    feed.delete(listener);
  },
});

export const routing: Routing = {
  v1: {
    health,
    signup: signUp,
    sessions: { post: signIn, delete: signOut },
    users: {
      get: listUsers,
      post: createUser,
      ":id": {
        get: getUser,
        patch: updateUser,
        delete: deleteUser,
        avatar: downloadAvatar,
        follow: { post: follow, delete: unfollow },
        followers,
        following,
      },
    },
    me: { get: getMe, patch: updateMe, avatar: uploadAvatar },
    posts: {
      get: listPosts,
      post: createPost,
      ":id": {
        get: getPost,
        patch: updatePost,
        delete: deletePost,
        like: { post: like, delete: unlike },
        likes: likers,
        comments: { get: listComments, post: addComment, ":commentId": deleteComment },
      },
    },
    events,
  },
};

export const config = createConfig({
  http: { listen: Number(process.env.PORT ?? 8090) },
  cors: true,
  upload: {
    limits: { fileSize: 1024 * 1024 },
    limitError: createHttpError(413, "Avatars are 1 MiB at most"),
  },
});

createServer(config, routing);
