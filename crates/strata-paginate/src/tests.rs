use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use strata::Endpoint;
use strata::prelude::*;
use strata_testing::{TestArgs, TestRequest, test_endpoint};

use crate::{
    CursorInput, CursorPage, OffsetInput, OffsetPage, decode_cursor, encode_cursor, pagination,
};

pagination! { Offsets: offset { items_name: "users", max_limit: 3, default_limit: 2 } }
pagination! { Cursors: cursor { items_name: "events", max_limit: 3, default_limit: 2 } }

#[derive(Debug, Clone, Serialize, Validate, JsonSchema)]
struct Item {
    #[garde(skip)]
    id: u64,
    #[garde(skip)]
    role: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Role {
    Admin,
    User,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Validate, JsonSchema)]
struct Filters {
    #[garde(skip)]
    role: Option<Role>,
    #[garde(length(chars, min = 2))]
    search: Option<String>,
}

fn all() -> Vec<Item> {
    (1..=5)
        .map(|id| Item {
            id,
            role: if id % 2 == 0 { "admin" } else { "user" },
        })
        .collect()
}

fn keep(item: &Item, role: Option<Role>) -> bool {
    match role {
        Some(Role::Admin) => item.role == "admin",
        Some(Role::User) => item.role == "user",
        None => true,
    }
}

fn offset_endpoint() -> Endpoint {
    default_endpoints_factory()
        .get()
        .handler(async |input: OffsetInput<Offsets, Filters>| {
            let matching: Vec<Item> = all()
                .into_iter()
                .filter(|i| keep(i, input.filters.role))
                .collect();
            let page = matching
                .iter()
                .skip(usize::try_from(input.offset).unwrap_or(usize::MAX))
                .take(input.limit as usize)
                .cloned()
                .collect();
            Ok(OffsetPage::new(page, matching.len() as u64, &input))
        })
}

fn cursor_endpoint() -> Endpoint {
    default_endpoints_factory()
        .get()
        .handler(async |input: CursorInput<Cursors>| {
            let after: u64 = match &input.cursor {
                Some(cursor) => decode_cursor(cursor)?,
                None => 0,
            };
            let page: Vec<Item> = all()
                .into_iter()
                .filter(|i| i.id > after)
                .take(input.limit as usize)
                .collect();
            let next = page
                .last()
                .filter(|last| last.id < 5)
                .map(|last| encode_cursor(&last.id));
            Ok(CursorPage::new(page, next, &input))
        })
}

async fn get(endpoint: &Endpoint, query: &[(&str, &str)]) -> (u16, Value) {
    let request = query
        .iter()
        .fold(TestRequest::get(), |r, (k, v)| r.query(*k, *v));
    let outcome = test_endpoint(endpoint, TestArgs::new(request)).await;
    (
        outcome.response.status_code(),
        outcome.response.json_data().unwrap_or_default(),
    )
}

fn ids(page: &Value, name: &str) -> Vec<u64> {
    page[name]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn offset_pages_first_middle_last_and_past_the_end() {
    let endpoint = offset_endpoint();
    for (offset, expected, more) in [
        ("0", vec![1, 2], true),
        ("2", vec![3, 4], true),
        ("4", vec![5], false),
        ("9", vec![], false),
    ] {
        let (status, body) = get(&endpoint, &[("offset", offset)]).await;
        assert_eq!(status, 200);
        let data = &body["data"];
        assert_eq!(ids(data, "users"), expected, "offset {offset}");
        assert_eq!(
            (data["total"].as_u64(), data["limit"].as_u64()),
            (Some(5), Some(2))
        );
        let meta = crate::Offset {
            total: 5,
            limit: 2,
            offset: offset.parse().unwrap(),
        };
        let page: OffsetPage<Offsets, u8> = OffsetPage::from_parts(vec![], meta);
        assert_eq!(page.has_more(), more, "offset {offset}");
    }
    let (_, body) = get(&endpoint, &[("limit", "3"), ("offset", "1")]).await;
    assert_eq!(ids(&body["data"], "users"), [2, 3, 4]);
}

#[tokio::test]
async fn cursor_pages_to_the_end() {
    let endpoint = cursor_endpoint();
    let mut cursor: Option<String> = None;
    let mut seen = Vec::new();
    for _ in 0..5 {
        let query: Vec<(&str, &str)> = cursor
            .as_deref()
            .map(|c| vec![("cursor", c)])
            .unwrap_or_default();
        let (status, body) = get(&endpoint, &query).await;
        assert_eq!(status, 200);
        seen.extend(ids(&body["data"], "events"));
        cursor = body["data"]["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            assert!(
                body["data"]["nextCursor"].is_null(),
                "null, not absent, on the last page"
            );
            break;
        }
    }
    assert_eq!(seen, [1, 2, 3, 4, 5]);
    let (status, body) = get(&endpoint, &[("cursor", "not-a-cursor")]).await;
    assert_eq!(
        (status, body["error"]["message"].as_str()),
        (400, Some("cursor: damaged or altered"))
    );
}

#[tokio::test]
async fn limits_are_rejected_not_clamped() {
    let endpoint = offset_endpoint();
    for (query, message) in [
        (vec![("limit", "4")], "limit: greater than 3"),
        (vec![("limit", "0")], "limit: lower than 1"),
        (
            vec![("limit", "many")],
            "limit: expected integer, received string \"many\"",
        ),
        (vec![("offset", "-1")], "offset: lower than 0"),
        // One past the document's maximum (`u64::MAX`).
        (
            vec![("offset", "18446744073709551616")],
            "offset: greater than 18446744073709551615",
        ),
    ] {
        let (status, body) = get(&endpoint, &query).await;
        assert_eq!(
            (status, body["error"]["message"].as_str()),
            (400, Some(message)),
            "{query:?}"
        );
    }
    let (status, body) = get(&cursor_endpoint(), &[("limit", "9")]).await;
    assert_eq!(
        (status, body["error"]["message"].as_str()),
        (400, Some("limit: greater than 3"))
    );
}

#[tokio::test]
async fn filters_combine_with_the_page() {
    let endpoint = offset_endpoint();
    let (_, body) = get(&endpoint, &[("role", "admin")]).await;
    assert_eq!(ids(&body["data"], "users"), [2, 4]);
    assert_eq!(body["data"]["total"], 2);
    // validated together: every problem listed
    let (status, body) = get(&endpoint, &[("limit", "9"), ("search", "x")]).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["message"],
        "limit: greater than 3; search: length is lower than 2"
    );
    let (status, body) = get(&endpoint, &[("role", "owner")]).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("role: expected one of \"admin\" | \"user\", received string \"owner\"")
    );
}

#[test]
fn schemas_show_the_page_fields_filters_and_items_name() {
    let meta = offset_endpoint();
    let input = meta.meta().input_schema.as_ref().unwrap().as_value();
    let properties: Vec<&str> = input["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(properties, ["limit", "offset", "role", "search"]);
    assert_eq!(input["properties"]["limit"]["maximum"], 3);
    assert_eq!(
        meta.meta().input_fields,
        ["limit", "offset", "role", "search"]
    );
    let output = meta.meta().output_schema.as_ref().unwrap().as_value();
    assert_eq!(
        output["required"],
        json!(["users", "total", "limit", "offset"])
    );
    let cursor = cursor_endpoint();
    let output = cursor.meta().output_schema.as_ref().unwrap().as_value();
    assert_eq!(output["required"], json!(["events", "nextCursor", "limit"]));
}

/// Cursors of the application's own making (say, a database's page tokens).
struct OwnCursors;

impl crate::PageConfig for OwnCursors {
    const ITEMS_NAME: &'static str = "items";
    const MAX_LIMIT: u32 = 10;
    const DEFAULT_LIMIT: u32 = 5;
}

impl crate::CursorConfig for OwnCursors {
    const ENCODED_CURSORS: bool = false;
}

#[test]
fn the_cursor_is_documented_as_the_codec_writes_it() {
    let cursor = cursor_endpoint();
    let input = cursor.meta().input_schema.as_ref().unwrap().as_value();
    let schema = &input["properties"]["cursor"];
    assert_eq!(schema["type"], "string");
    assert_eq!(schema["pattern"], "^[A-Za-z0-9_-]+$");
    assert_eq!(schema["minLength"], crate::MIN_CURSOR_LENGTH);
    assert!(schema.get("maxLength").is_none(), "a position has no bound");
    let description = schema["description"].as_str().unwrap();
    assert!(description.contains("refused with 400"), "{description}");
    // Every cursor the codec writes fits it, and what fits it may still be refused (400).
    let written = encode_cursor(&3u64);
    assert!(written.len() >= crate::MIN_CURSOR_LENGTH);
    assert_eq!(decode_cursor::<u64>("AAAAAAAA").unwrap_err().status(), 400);

    // Cursors of the application's own: any string.
    let own = CursorInput::<OwnCursors>::json_schema(&mut schemars::SchemaGenerator::default());
    let schema = &own.as_value()["properties"]["cursor"];
    assert_eq!(
        schema,
        &json!({
            "type": "string",
            "description": "The `nextCursor` of the page before, as it came; absent for the first page."
        })
    );
}

/// An item as a client reads it back.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
struct Read {
    id: u64,
    role: String,
}

fn admins() -> Filters {
    Filters {
        role: Some(Role::Admin),
        search: Some("ad".into()),
    }
}

#[test]
fn inputs_serialize_as_the_server_reads_them() {
    let first = OffsetInput::<Offsets, Filters>::first(admins());
    assert_eq!((first.limit, first.offset), (2, 0));
    let input = first.clone().with_limit(3);
    let input = OffsetInput::<Offsets, Filters>::new(input.limit, 4, input.filters);
    let wire = serde_json::to_value(&input).unwrap();
    assert_eq!(
        wire,
        json!({"limit": 3, "offset": 4, "role": "admin", "search": "ad"})
    );
    let back: OffsetInput<Offsets, Filters> = serde_json::from_value(wire).unwrap();
    assert_eq!(back, input);

    // The first cursor page leaves `cursor` out; no filters add nothing.
    let first = CursorInput::<Cursors>::first(crate::NoFilters);
    assert_eq!(serde_json::to_value(&first).unwrap(), json!({"limit": 2}));
    let back: CursorInput<Cursors> = serde_json::from_value(json!({"limit": 2})).unwrap();
    assert_eq!(back, first);
    let next = CursorInput::<Cursors, Filters>::new(1, Some(encode_cursor(&2u64)), admins());
    let wire = serde_json::to_value(&next).unwrap();
    assert_eq!(wire["cursor"], encode_cursor(&2u64));
    assert_eq!(wire["limit"], 1);
    assert_eq!(wire["role"], "admin");
    let back: CursorInput<Cursors, Filters> = serde_json::from_value(wire).unwrap();
    assert_eq!(back, next);
    assert_eq!(
        serde_json::to_value(OffsetInput::<Offsets>::first(crate::NoFilters)).unwrap(),
        json!({"limit": 2, "offset": 0})
    );
}

#[test]
fn pages_deserialize_from_what_they_serialize() {
    let items = vec![
        Read {
            id: 2,
            role: "admin".into(),
        },
        Read {
            id: 4,
            role: "admin".into(),
        },
    ];
    let input = OffsetInput::<Offsets, Filters>::new(2, 2, admins());
    let page = OffsetPage::new(items.clone(), 9, &input);
    let wire = serde_json::to_value(&page).unwrap();
    assert_eq!(wire["total"], 9);
    let back: OffsetPage<Offsets, Read> = serde_json::from_value(wire).unwrap();
    assert_eq!(back, page);

    let input = CursorInput::<Cursors>::first(crate::NoFilters);
    for next in [Some(encode_cursor(&4u64)), None] {
        let page = CursorPage::new(items.clone(), next, &input);
        let text = serde_json::to_string(&page).unwrap();
        let back: CursorPage<Cursors, Read> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, page);
    }
}

#[test]
fn a_page_needs_its_own_properties_and_ignores_others() {
    let read = |value: Value| serde_json::from_value::<OffsetPage<Offsets, u8>>(value);
    let page = read(json!({"extra": [1], "offset": 0, "users": [7], "limit": 2, "total": 1}));
    assert_eq!(page.unwrap().items, [7]);
    for (value, message) in [
        (
            json!({"users": [], "limit": 2, "offset": 0}),
            "missing field `total`",
        ),
        (
            json!({"items": [], "total": 0, "limit": 2, "offset": 0}),
            "missing field `users`",
        ),
        (
            json!({"users": ["x"], "total": 0, "limit": 2, "offset": 0}),
            "invalid type: string \"x\", expected u8",
        ),
        (
            json!([1]),
            "invalid type: sequence, expected a page of `users`",
        ),
    ] {
        let error = read(value.clone()).unwrap_err().to_string();
        assert!(error.starts_with(message), "{value}: {error}");
    }
    for (text, field) in [
        (
            r#"{"users": [], "total": 0, "total": 1, "limit": 2, "offset": 0}"#,
            "total",
        ),
        (
            r#"{"users": [], "total": 0, "users": [1], "limit": 2, "offset": 0}"#,
            "users",
        ),
    ] {
        let error = serde_json::from_str::<OffsetPage<Offsets, u8>>(text).unwrap_err();
        let expected = format!("duplicate field `{field}`");
        assert!(error.to_string().starts_with(&expected), "{error}");
    }
    // `nextCursor` is required: null on the last page, never absent.
    let cursor =
        serde_json::from_value::<CursorPage<Cursors, u8>>(json!({"events": [], "limit": 2}));
    assert!(
        cursor
            .unwrap_err()
            .to_string()
            .starts_with("missing field `nextCursor`")
    );

    // Another style's names are free for the items.
    pagination! { Totals: cursor { items_name: "total" } }
    let page: CursorPage<Totals, u8> =
        serde_json::from_value(json!({"total": [1, 2], "nextCursor": null, "limit": 20})).unwrap();
    assert_eq!((page.has_more(), page.items), (false, vec![1, 2]));
}

#[tokio::test]
async fn a_client_reads_the_endpoint_s_page() {
    let (status, body) = get(&offset_endpoint(), &[("role", "admin"), ("limit", "1")]).await;
    assert_eq!(status, 200);
    let page: OffsetPage<Offsets, Read> = serde_json::from_value(body["data"].clone()).unwrap();
    assert_eq!(
        page.items,
        [Read {
            id: 2,
            role: "admin".into()
        }]
    );
    assert_eq!(
        page.meta,
        crate::Offset {
            total: 2,
            limit: 1,
            offset: 0
        }
    );
    assert!(page.has_more());
}
