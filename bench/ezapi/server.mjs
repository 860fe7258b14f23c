// express-zod-api answering the strata-bench scenarios, for the side-by-side comparison.
//
// The same routes, rules and answers as the Rust servers (bench/src/model.rs,
// servers/strata_app.rs): GET /v1/hello, POST /v1/orders, GET /v1/users/:id behind a token
// middleware, POST /v1/bulk-orders (a ~100 KiB order), GET /v1/products (~1 MiB of products),
// and for routes-10k the 10,000 generated routes. Configured as a production user
// would: CORS on, the built-in logger at warn, NODE_ENV=production (set by the harness).
//
// For `strata-bench uploads` (scenario `upload`, bench/src/servers/upload_app.rs): POST
// /v1/upload takes one file (`ez.upload()`) through express-fileupload with `useTempFiles`, in
// the system's temporary directory as the Rust servers' files; the handler reads it back (256
// KiB at a time, as they do), answers its size and CRC-32, and removes it.
//
//   node server.mjs <scenario> [--port N]
//
// Prints `listening 127.0.0.1:<port>` on stdout once it accepts connections, like the Rust
// children (child.rs), and exits when its standard input closes.

import { createReadStream } from "node:fs";
import { unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { crc32 } from "node:zlib";
import express from "express";
import createHttpError from "http-errors";
import {
  createConfig,
  createServer,
  defaultEndpointsFactory,
  ez,
  Middleware,
} from "express-zod-api";
import { z } from "zod";

const [scenario = "hello", ...rest] = process.argv.slice(2);
const portFlag = rest.indexOf("--port");
const port = portFlag >= 0 ? Number(rest[portFlag + 1]) : 0;
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`bad port ${rest[portFlag + 1]}`);
  process.exit(2);
}

const TOKEN = "secret-token";
const GENERATED_ROUTES = 10_000;

// garde's messages (the Rust servers' validator), where zod takes a custom message: the 400s
// then differ only in the order of the problems (garde sorts them by path, zod keeps schema
// order). zod counts UTF-16 code units where garde counts chars or bytes: the same for the
// ASCII the scenarios send.
const text = ({ min, max } = {}) => {
  let schema = z.string();
  if (min !== undefined) schema = schema.min(min, `length is lower than ${min}`);
  if (max !== undefined) schema = schema.max(max, `length is greater than ${max}`);
  return schema;
};
const int = ({ min, max }) =>
  z
    .number()
    .int()
    .min(min, `lower than ${min}`)
    .max(max, `greater than ${max}`);
const list = (item, { min, max }) => {
  let schema = z.array(item);
  if (min !== undefined) schema = schema.min(min, `length is lower than ${min}`);
  return schema.max(max, `length is greater than ${max}`);
};
// garde names the first reason an address is not valid; the two a client most often hits are
// spelled out, any other is "not a valid email".
const email = z.email({
  error: (issue) =>
    typeof issue.input !== "string"
      ? undefined
      : issue.input === ""
        ? "not a valid email: value is empty"
        : issue.input.includes("@")
          ? "not a valid email"
          : "not a valid email: value is missing `@`",
});

const address = z.object({
  street: text({ min: 1, max: 100 }),
  city: text({ min: 1, max: 50 }),
  zip: text({ min: 3, max: 10 }),
  country: text({ min: 2, max: 2 }),
});

const item = z.object({
  sku: text({ min: 1, max: 32 }),
  name: text({ min: 1, max: 100 }),
  quantity: int({ min: 1, max: 1000 }),
  price: int({ min: 0, max: 100_000_000 }),
});

// An order of up to `maxItems` lines (`Order`: 50; `BulkOrder`, large-input: 2,000).
const orderOf = (maxItems) =>
  z.object({
    customer: text({ min: 1, max: 64 }),
    email,
    age: int({ min: 18, max: 150 }),
    address,
    items: list(item, { min: 1, max: maxItems }),
    tags: list(text({ min: 1, max: 20 }), { max: 10 }),
    // serde reads `null` for an `Option` as absent.
    note: text({ max: 500 }).nullish(),
  });
const order = orderOf(50);

const hello = defaultEndpointsFactory.build({
  method: "get",
  input: z.object({ name: text({ min: 1 }).optional() }),
  output: z.object({ greetings: z.string() }),
  handler: async ({ input: { name } }) => ({
    greetings: `Hello, ${name ?? "World"}`,
  }),
});

// The order summary (`summarize` in model.rs), for both order endpoints.
const summaryOf = (input) => {
  let quantity = 0;
  let total = 0;
  for (const line of input.items) {
    quantity += line.quantity;
    total += line.quantity * line.price;
  }
  return {
    customer: input.customer,
    city: input.address.city,
    lines: input.items.length,
    quantity,
    total,
  };
};
const summary = z.object({
  customer: z.string(),
  city: z.string(),
  lines: z.number().int(),
  quantity: z.number().int(),
  total: z.number().int(),
});

const orders = defaultEndpointsFactory.build({
  method: "post",
  input: order,
  output: summary,
  handler: async ({ input }) => summaryOf(input),
});

const bulkOrders = defaultEndpointsFactory.build({
  method: "post",
  input: orderOf(2000),
  output: summary,
  handler: async ({ input }) => summaryOf(input),
});

// `catalog` in model.rs: `count` products built per request, the same fields in the same
// order (serde's), so the answers are byte for byte the Rust servers'.
const NAMES = [
  "Mechanical keyboard, brown switches",
  "USB-C cable, braided, 2 m",
  "Laptop stand, aluminium",
  "Noise-cancelling headphones",
  "Webcam, 1080p with privacy cover",
];
const DESCRIPTIONS = [
  "Ships within two working days from the central warehouse; returns accepted for 30 days.",
  "Made to order in the workshop: allow a week before dispatch, tracked delivery included.",
  "Last units of this batch at this price; the next delivery is expected within a month.",
];
const products = defaultEndpointsFactory.build({
  method: "get",
  // A query parameter is text: read as the Rust servers read it (digits only, then a range).
  input: z.object({
    count: z
      .string()
      .regex(/^[0-9]+$/, "not a number")
      .transform(Number)
      .pipe(int({ min: 1, max: 10_000 })),
  }),
  output: z.object({
    products: z.array(
      z.object({
        id: z.number().int(),
        sku: z.string(),
        name: z.string(),
        description: z.string(),
        price: z.number().int(),
        in_stock: z.boolean(),
      }),
    ),
  }),
  handler: async ({ input: { count } }) => {
    const list = [];
    for (let i = 0; i < count; i++) {
      list.push({
        id: i + 1,
        sku: `SKU-${String(((i + 1) * 7919) % 1_000_000).padStart(6, "0")}`,
        name: NAMES[i % NAMES.length],
        description: DESCRIPTIONS[i % DESCRIPTIONS.length],
        price: ((i % 97) + 1) * 1_299,
        in_stock: i % 3 !== 0,
      });
    }
    return { products: list };
  },
});

const auth = new Middleware({
  security: { type: "header", name: "token" },
  handler: async ({ request }) => {
    if (request.headers.token !== TOKEN) {
      throw createHttpError(401, "Invalid token");
    }
    return { user: { name: "Jane" } };
  },
});

const user = defaultEndpointsFactory.addMiddleware(auth).build({
  method: "get",
  input: z.object({ id: text({ min: 1, max: 64 }) }),
  output: z.object({ id: z.string(), name: z.string() }),
  handler: async ({ input: { id }, ctx }) => ({ id, name: ctx.user.name }),
});

const routing = {
  v1: {
    hello,
    orders,
    "bulk-orders": bulkOrders,
    products,
    users: { ":id": user },
  },
};

if (scenario === "routes-10k") {
  const pong = defaultEndpointsFactory.build({
    method: "get",
    input: z.object({}),
    output: z.object({ pong: z.boolean() }),
    handler: async () => ({ pong: true }),
  });
  // /v1/generated/g{i / 100}/r{i % 100}, as `generated_path` in model.rs.
  const generated = {};
  for (let i = 0; i < GENERATED_ROUTES; i++) {
    const group = (generated[`g${Math.floor(i / 100)}`] ??= {});
    group[`r${i % 100}`] = pong;
  }
  routing.v1.generated = generated;
}

// The Rust upload servers' limit: 1 GiB and 1 MiB (FILE_LIMIT in upload_app.rs).
const FILE_LIMIT = 1025 * 1024 * 1024;
const READ_BUFFER = 256 * 1024;
if (scenario === "upload") {
  routing.v1.upload = defaultEndpointsFactory.build({
    method: "post",
    input: z.object({ file: ez.upload() }),
    output: z.object({ size: z.number().int(), crc32: z.number().int() }),
    handler: async ({ input: { file } }) => {
      let size = 0;
      let crc = 0;
      try {
        const stream = createReadStream(file.tempFilePath, { highWaterMark: READ_BUFFER });
        for await (const chunk of stream) {
          size += chunk.length;
          crc = crc32(chunk, crc);
        }
      } finally {
        await unlink(file.tempFilePath);
      }
      return { size, crc32: crc };
    },
  });
}

const config = createConfig({
  http: { listen: { port, host: "127.0.0.1" } },
  cors: true,
  logger: { level: "warn", color: false },
  // express.json() reads 100 KiB at most: large-input's 101 KiB body needs more. 1 MiB, as
  // the Rust servers' limit.
  jsonParser: express.json({ limit: "1mb" }),
  // 405 with `Allow` for a known path and an unknown method is the default
  // (`hintAllowedMethods: true`, formerly `wrongMethodBehavior: 405`).
  // The logo is only printed; off so that stdout carries the `listening` line alone.
  startupLogo: false,
  // Uploads on for the `upload` scenario alone: express-fileupload writes each file to a
  // temporary file as it arrives (it also computes an MD5 of it, its default).
  ...(scenario === "upload"
    ? {
        upload: {
          useTempFiles: true,
          tempFileDir: tmpdir(),
          limits: { fileSize: FILE_LIMIT },
          limitError: createHttpError(413, "The file is too large"),
        },
      }
    : {}),
});

const { servers } = createServer(config, routing);
const [server] = servers;
if (!server.listening) {
  await new Promise((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
}
const { address: host, port: bound } = server.address();

// The harness may stop reading stdout after the first line: a later write must not crash us.
process.stdout.on("error", () => {});
process.stdout.write(`listening ${host}:${bound}\n`);

// Serve until the parent closes our standard input (or goes away).
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
