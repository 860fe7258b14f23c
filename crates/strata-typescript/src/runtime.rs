//! The client's runtime: the code after the types in [`Variant::Client`](crate::Variant)
//! files. It has no dependencies: `fetch`, `FormData`, `Blob` and `URLSearchParams` are in
//! every browser and in Node 18+.

use std::fmt::Write as _;

use crate::ts::string_literal;

/// Where `provide` puts the fields of one request's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Fields sent as headers.
    pub(crate) headers: Vec<String>,
    /// Fields sent as cookies (in a `Cookie` header: Node sends it, a browser sends its own
    /// cookie jar instead, the header being one a script may not set).
    pub(crate) cookies: Vec<String>,
    pub(crate) body: BodyKind,
    /// The form's streamed file (`x-streamed-file`), appended after every other field: the
    /// server reads the fields before it first.
    pub(crate) last: Option<String>,
}

/// How the fields that are neither path parameters nor headers travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// In the query string.
    Query,
    /// A JSON body.
    Json,
    /// A `multipart/form-data` body (the input has files).
    Multipart,
    /// The field `raw` (a `Blob`) is the whole body, of its own type.
    Raw,
}

/// The pagination styles the API's paginated requests use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Styles {
    pub(crate) offset: bool,
    pub(crate) cursor: bool,
}

/// The runtime for `requests` (request key, placement), in order.
pub(crate) fn runtime(
    server_url: &str,
    requests: &[(String, Placement)],
    styles: Styles,
) -> String {
    let mut placements = String::new();
    for (request, placement) in requests {
        let headers: Vec<String> = placement
            .headers
            .iter()
            .map(|h| string_literal(h))
            .collect();
        let body = match placement.body {
            BodyKind::Query => "\"query\"",
            BodyKind::Json => "\"json\"",
            BodyKind::Multipart => "\"multipart\"",
            BodyKind::Raw => "\"raw\"",
        };
        let cookies = if placement.cookies.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = placement
                .cookies
                .iter()
                .map(|c| string_literal(c))
                .collect();
            format!(", cookies: [{}]", names.join(", "))
        };
        let last = match &placement.last {
            Some(name) => format!(", last: {}", string_literal(name)),
            None => String::new(),
        };
        let _ = writeln!(
            placements,
            "  {}: {{ headers: [{}]{cookies}, body: {body}{last} }},",
            string_literal(request),
            headers.join(", ")
        );
    }
    let has_more = match (styles.offset, styles.cursor) {
        (false, false) => HAS_MORE_NONE,
        (true, false) => HAS_MORE_OFFSET,
        (false, true) => HAS_MORE_CURSOR,
        (true, true) => HAS_MORE_BOTH,
    };
    RUNTIME
        .replace("{server_url}", &string_literal(server_url))
        .replace("{placements}\n", &placements)
        .replace("{has_more}", has_more)
}

const HAS_MORE_NONE: &str =
    "  /** Whether another page follows: no request of this API is paginated. */
  public static hasMore(_response: never): boolean {
    return false;
  }
";

const HAS_MORE_OFFSET: &str =
    "  /** Whether another page follows a successful page: `offset + limit < total`. */
  public static hasMore(response: Response[PaginatedRequest]): boolean {
    if (response.status !== \"success\") return false;
    const page = response.data;
    return page.offset + page.limit < page.total;
  }
";

const HAS_MORE_CURSOR: &str =
    "  /** Whether another page follows a successful page: `nextCursor !== null`. */
  public static hasMore(response: Response[PaginatedRequest]): boolean {
    if (response.status !== \"success\") return false;
    return response.data.nextCursor !== null;
  }
";

const HAS_MORE_BOTH: &str = "  /**
   * Whether another page follows a successful page: `nextCursor !== null` for cursor pages,
   * `offset + limit < total` for offset pages.
   */
  public static hasMore(response: Response[PaginatedRequest]): boolean {
    if (response.status !== \"success\") return false;
    const page = response.data;
    return \"nextCursor\" in page
      ? page.nextCursor !== null
      : page.offset + page.limit < page.total;
  }
";

const RUNTIME: &str = r#"/** The server the default implementation sends requests to. */
export const serverUrl = {server_url};

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "QUERY";

/** A request ready to send: every input field is in the path, the query, a header or the body. */
export interface PreparedRequest {
  method: Method;
  /** The path with its query string, percent-encoded: `/v1/books/7?genre=novel`. */
  path: string;
  headers: Record<string, string>;
  body: string | FormData | Blob | undefined;
  signal: AbortSignal | undefined;
}

/**
 * Sends a prepared request; resolves with the response body: parsed JSON, text for `text/*`,
 * `undefined` for an empty body, a `Blob` otherwise. `Client.provideWithStatus` needs its
 * `withStatus` (the default implementation has one).
 */
export interface Implementation {
  (request: PreparedRequest): Promise<unknown>;
  /** Sends the request the same way; resolves with the status and headers beside the body. */
  readonly withStatus?: StatusImplementation;
}

/**
 * Sends a prepared request; resolves with the response's status code, its headers (by
 * lower-case name, as `fetch` gives them: a repeated header's values joined by `, `) and its
 * body.
 */
export type StatusImplementation = (
  request: PreparedRequest,
) => Promise<{ status: number; headers: ResponseHeaders; body: unknown }>;

/** An implementation with `fetch`, sending to `baseUrl` (an absolute URL outside browsers). */
export const createDefaultImplementation = (baseUrl: string = serverUrl): Implementation => {
  const withStatus: StatusImplementation = async ({ method, path, headers, body, signal }) => {
    const response = await fetch(baseUrl.replace(/\/+$/, "") + path, {
      method,
      headers,
      body: body ?? null,
      signal: signal ?? null,
    });
    const { status } = response;
    const received: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      received[name] = value;
    });
    const answer = (body: unknown) => ({ status, headers: received, body });
    if ([204, 205, 304].includes(status)) return answer(undefined);
    const type = response.headers.get("content-type") ?? "";
    if (/^application\/([\w.-]+\+)?json\s*(;|$)/i.test(type)) {
      const text = await response.text();
      return answer(text === "" ? undefined : (JSON.parse(text) as unknown));
    }
    if (/^text\//i.test(type)) return answer(await response.text());
    const blob = await response.blob();
    return answer(blob.size === 0 ? undefined : blob);
  };
  const bodyOnly = async (request: PreparedRequest): Promise<unknown> =>
    (await withStatus(request)).body;
  return Object.assign(bodyOnly, { withStatus });
};

/** Per call: more headers (credentials, say) and a signal to abort. */
export interface RequestOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** A request's W3C Trace Context: the caller's span, as `traceparent` and `tracestate` send it. */
export interface TraceContext {
  /** `00-{trace id: 32 hex digits}-{span id: 16 hex digits}-{flags: 2 hex digits}`. */
  traceparent: string;
  /** Vendors' entries (`vendor=value,other=value`); sent when given. */
  tracestate?: string | undefined;
}

/** How a `Client` sends every request. */
export interface ClientOptions {
  /**
   * Called for each request: the trace context it returns goes in `traceparent` (and
   * `tracestate`) headers, so that a traced server puts its spans in the caller's trace;
   * `undefined` sends none. A `traceparent` of another shape fails the call with a
   * `TypeError`. Not set (the default): no trace header is sent.
   */
  traceContext?: () => TraceContext | undefined;
}

/** W3C Trace Context's `traceparent` (version, trace id, parent span id, flags). */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The headers of `traceContext`'s answer for one request (none without one). */
const traceHeaders = (traceContext: ClientOptions["traceContext"]): Record<string, string> => {
  const trace = traceContext?.();
  if (trace === undefined) return {};
  if (!TRACEPARENT.test(trace.traceparent)) {
    throw new TypeError(
      `traceContext: traceparent must be 00-{32 hex}-{16 hex}-{2 hex} (W3C Trace Context), got ${JSON.stringify(trace.traceparent)}`,
    );
  }
  const headers: Record<string, string> = { traceparent: trace.traceparent };
  if (trace.tracestate !== undefined && trace.tracestate !== "") {
    headers["tracestate"] = trace.tracestate;
  }
  return headers;
};

interface Placement {
  readonly headers: readonly string[];
  /** Sent in a `Cookie` header; a browser drops it and sends its own cookie jar. */
  readonly cookies?: readonly string[];
  readonly body: "query" | "json" | "multipart" | "raw";
  /** A form's streamed file: the server reads the fields before it, so it is sent last. */
  readonly last?: string;
}

const placements: { readonly [K in Request]: Placement } = {
{placements}
};

/** Adds `value` under `name`: a list as repeated names, `undefined` and `null` as nothing. */
const appendValue = (
  append: (name: string, value: string | Blob) => void,
  name: string,
  value: unknown,
): void => {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) appendValue(append, name, item);
  } else if (value instanceof Blob) {
    append(name, value);
  } else {
    append(name, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
};

/** The path with its parameters substituted, percent-encoded and taken out of `fields`. */
const fillPath = (pattern: string, fields: Record<string, unknown>): string =>
  pattern.replace(/:([^/]+)/g, (_, name: string) => {
    const value = fields[name];
    delete fields[name];
    // `.` and `..` would be resolved away as path segments: escape them.
    const text = String(value);
    return /^\.{1,2}$/.test(text) ? text.replace(/\./g, "%2E") : encodeURIComponent(text);
  });

/** The fields as a query string (`?a=1&b=2`, empty without fields). */
const queryString = (fields: Record<string, unknown>): string => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    // Files travel only in forms and raw bodies: the document puts them nowhere else.
    appendValue(
      (n, v) => {
        if (typeof v === "string") search.append(n, v);
      },
      name,
      value,
    );
  }
  const text = search.toString();
  return text === "" ? "" : `?${text}`;
};

/**
 * Sends the API's requests through `implementation` (default: `fetch` to `serverUrl`).
 *
 * Trace context is opt-in: with `traceContext`, each request carries the `traceparent` (and
 * `tracestate`) it returns. The client depends on nothing; with OpenTelemetry's API, say:
 *
 * ```ts
 * import { context, propagation } from "@opentelemetry/api";
 *
 * const client = new Client(createDefaultImplementation(), {
 *   traceContext: () => {
 *     const carrier: { traceparent?: string; tracestate?: string } = {};
 *     propagation.inject(context.active(), carrier);
 *     const { traceparent, tracestate } = carrier;
 *     return traceparent === undefined ? undefined : { traceparent, tracestate };
 *   },
 * });
 * ```
 */
export class Client {
  readonly #implementation: Implementation;
  readonly #options: ClientOptions;

  public constructor(
    implementation: Implementation = createDefaultImplementation(),
    options: ClientOptions = {},
  ) {
    this.#implementation = implementation;
    this.#options = options;
  }

  /**
   * Sends `request` (`"get /v1/books/:id"`) with its input: path parameters substituted and
   * percent-encoded, the other fields in the query (GET, DELETE), as JSON, or as a form with
   * files, as the server reads them.
   */
  public provide<K extends Request>(
    request: K,
    params: Input[K],
    options: RequestOptions = {},
  ): Promise<Response[K]> {
    // (Typed wider, so that an API without requests still compiles.)
    const key: string = request;
    const placement: Placement = placements[request];
    const space = key.indexOf(" ");
    const method = key.slice(0, space).toUpperCase() as Method;
    const rest: Record<string, unknown> = { ...(params as object) };
    const path = fillPath(key.slice(space + 1), rest);
    let trace: Record<string, string>;
    try {
      trace = traceHeaders(this.#options.traceContext);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    // The call's own headers win over the client's trace context.
    const headers: Record<string, string> = { ...trace, ...options.headers };
    for (const name of placement.headers) {
      const value = rest[name];
      delete rest[name];
      if (value !== undefined && value !== null) headers[name] = String(value);
    }
    const cookies: string[] = [];
    for (const name of placement.cookies ?? []) {
      const value = rest[name];
      delete rest[name];
      if (value !== undefined && value !== null) {
        cookies.push(`${name}=${encodeURIComponent(String(value))}`);
      }
    }
    if (cookies.length > 0) headers["cookie"] = cookies.join("; ");
    let query = "";
    let body: string | FormData | Blob | undefined;
    if (placement.body !== "query") {
      // The body sets its own content type (and a form's boundary): none from the options.
      for (const name of Object.keys(headers)) {
        if (name.toLowerCase() === "content-type") delete headers[name];
      }
    }
    if (placement.body === "json") {
      headers["content-type"] = "application/json";
      body = JSON.stringify(rest);
    } else if (placement.body === "raw") {
      // The bytes as they are, of the Blob's own type; other fields go in the query string.
      const raw = rest["raw"];
      delete rest["raw"];
      if (raw instanceof Blob) {
        headers["content-type"] = raw.type === "" ? "application/octet-stream" : raw.type;
        body = raw;
      }
      query = queryString(rest);
    } else if (placement.body === "multipart") {
      const form = new FormData();
      const append = (n: string, v: string | Blob) => form.append(n, v);
      for (const [name, value] of Object.entries(rest)) {
        if (name !== placement.last) appendValue(append, name, value);
      }
      if (placement.last !== undefined) appendValue(append, placement.last, rest[placement.last]);
      body = form;
    } else {
      query = queryString(rest);
    }
    return this.#implementation({
      method,
      path: path + query,
      headers,
      body,
      signal: options.signal,
    }) as Promise<Response[K]>;
  }

  /**
   * Sends `request` as `provide` does; resolves with the status code, the headers and the
   * body, typed by the status the document gives them: `switch (response.status)` narrows
   * `body`, and `headers` has the names the document declares for that status (a `201`'s
   * `location`, say). A status the document does not give (a proxy's 502, say) arrives all the
   * same, outside the type. Needs the implementation's `withStatus`: the default
   * implementation has it.
   */
  public async provideWithStatus<K extends Request>(
    request: K,
    params: Input[K],
    options: RequestOptions = {},
  ): Promise<StatusResponse<K>> {
    const { withStatus } = this.#implementation;
    if (withStatus === undefined) {
      throw new TypeError("provideWithStatus: the client's implementation has no withStatus");
    }
    // The request `provide` prepares, sent by the implementation that tells the status.
    const response = await new Client(withStatus, this.#options).provide(request, params, options);
    return response as unknown as StatusResponse<K>;
  }

{has_more}}

/** What a subscription needs of an `EventSource` (the browser's, or a polyfill's). */
export interface EventSourceLike {
  addEventListener(type: string, listener: (event: { data: string }) => void): void;
  close(): void;
}

/** Where a subscription connects, and how it opens the stream. */
export interface SubscriptionOptions {
  /** Default: `serverUrl`. */
  baseUrl?: string;
  /** Default: the global `EventSource`. */
  open?: (url: string) => EventSourceLike;
}

/**
 * An event-stream request opened with an `EventSource`, its events typed by name. Its input
 * goes in the path and the query string (an `EventSource` sends no headers of its own).
 */
export class Subscription<K extends keyof Events> {
  public readonly source: EventSourceLike;

  public constructor(request: K, params: Input[K], options: SubscriptionOptions = {}) {
    // (Typed wider, so that an API without event streams still compiles.)
    const key: string = request;
    const rest: Record<string, unknown> = { ...(params as object) };
    const path = fillPath(key.slice(key.indexOf(" ") + 1), rest);
    const base = (options.baseUrl ?? serverUrl).replace(/\/+$/, "");
    const open =
      options.open ??
      ((url: string): EventSourceLike =>
        new (globalThis as unknown as { EventSource: new (url: string) => EventSourceLike })
          .EventSource(url));
    this.source = open(base + path + queryString(rest));
  }

  /** Calls `listener` with the data of each `event` (parsed JSON). */
  public on<E extends keyof Events[K] & string>(
    event: E,
    listener: (data: Events[K][E]) => void,
  ): this {
    this.source.addEventListener(event, ({ data }) => {
      // `error` and `open` are also the EventSource's own events, which carry no data.
      if (typeof data === "string") listener(JSON.parse(data) as Events[K][E]);
    });
    return this;
  }

  /** Closes the stream (the server stops its handler). */
  public close(): void {
    this.source.close();
  }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_and_the_pagination_rule_are_filled_in() {
        let requests = [
            (
                "get /v1/books/:id".to_owned(),
                Placement {
                    headers: vec!["x-trace".to_owned()],
                    cookies: vec!["session".to_owned()],
                    body: BodyKind::Query,
                    last: None,
                },
            ),
            (
                "post /v1/books/:id/cover".to_owned(),
                Placement {
                    headers: Vec::new(),
                    cookies: Vec::new(),
                    body: BodyKind::Multipart,
                    last: Some("cover".to_owned()),
                },
            ),
        ];
        let code = runtime(
            "http://localhost:8091",
            &requests,
            Styles {
                offset: true,
                cursor: false,
            },
        );
        assert!(code.contains("export const serverUrl = \"http://localhost:8091\";"));
        assert!(code.contains(
            "  \"get /v1/books/:id\": { headers: [\"x-trace\"], cookies: [\"session\"], body: \"query\" },\n  \"post /v1/books/:id/cover\": { headers: [], body: \"multipart\", last: \"cover\" },\n};"
        ));
        assert!(code.contains("page.offset + page.limit < page.total"));
        assert!(!code.contains("nextCursor"));
        for placeholder in ["{server_url}", "{placements}", "{has_more}"] {
            assert!(!code.contains(placeholder), "{placeholder}");
        }
        let none = runtime("", &[], Styles::default());
        assert!(none.contains("hasMore(_response: never)"));
        assert!(none.contains("const placements: { readonly [K in Request]: Placement } = {\n};"));
    }
}
