//! The types every server reads and writes, so the three answer the same bytes.

use garde::Validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The token the auth middleware accepts (header `token`).
pub(crate) const TOKEN: &str = "secret-token";

/// The user the auth middleware adds to the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct User {
    pub(crate) name: String,
}

/// The user for a valid token, as all three servers decide it.
pub(crate) fn authenticate(token: Option<&[u8]>) -> Option<User> {
    (token == Some(TOKEN.as_bytes())).then(|| User {
        name: "Jane".to_owned(),
    })
}

/// Input of `GET /v1/hello` (the quick start).
#[derive(Debug, Deserialize, Validate, JsonSchema)]
pub(crate) struct HelloInput {
    #[garde(length(chars, min = 1))]
    pub(crate) name: Option<String>,
}

/// Output of `GET /v1/hello` (and of `strata-bench client`'s `GET /v1/hello/:name`).
#[derive(Debug, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct HelloOutput {
    #[garde(skip)]
    pub(crate) greetings: String,
}

/// The hello handler's work.
pub(crate) fn hello(input: &HelloInput) -> HelloOutput {
    let name = input.name.as_deref().unwrap_or("World");
    HelloOutput {
        greetings: format!("Hello, {name}"),
    }
}

/// A postal address (nested object of [`Order`]).
#[derive(Debug, Clone, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct Address {
    #[garde(length(chars, min = 1, max = 100))]
    pub(crate) street: String,
    #[garde(length(chars, min = 1, max = 50))]
    pub(crate) city: String,
    #[garde(length(min = 3, max = 10))]
    pub(crate) zip: String,
    #[garde(length(min = 2, max = 2))]
    pub(crate) country: String,
}

/// One line of an [`Order`].
#[derive(Debug, Clone, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct Item {
    #[garde(length(min = 1, max = 32))]
    pub(crate) sku: String,
    #[garde(length(chars, min = 1, max = 100))]
    pub(crate) name: String,
    #[garde(range(min = 1, max = 1000))]
    pub(crate) quantity: u32,
    #[garde(range(max = 100_000_000))]
    pub(crate) price: u64,
}

/// Input of `POST /v1/orders`: nested objects, a list, length, range and email rules.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct Order {
    #[garde(length(chars, min = 1, max = 64))]
    pub(crate) customer: String,
    #[garde(email)]
    pub(crate) email: String,
    #[garde(range(min = 18, max = 150))]
    pub(crate) age: u32,
    #[garde(dive)]
    pub(crate) address: Address,
    #[garde(length(min = 1, max = 50), dive)]
    pub(crate) items: Vec<Item>,
    #[garde(length(max = 10), inner(length(chars, min = 1, max = 20)))]
    pub(crate) tags: Vec<String>,
    #[garde(inner(length(chars, max = 500)))]
    pub(crate) note: Option<String>,
}

/// Output of `POST /v1/orders`.
#[derive(Debug, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct OrderSummary {
    #[garde(skip)]
    pub(crate) customer: String,
    #[garde(skip)]
    pub(crate) city: String,
    #[garde(skip)]
    pub(crate) lines: usize,
    #[garde(skip)]
    pub(crate) quantity: u64,
    #[garde(skip)]
    pub(crate) total: u64,
}

/// The order handler's work.
pub(crate) fn summarize(order: Order) -> OrderSummary {
    summary(order.customer, order.address.city, &order.items)
}

/// The summary of `items` ordered by `customer` in `city` (both order handlers' work).
fn summary(customer: String, city: String, items: &[Item]) -> OrderSummary {
    OrderSummary {
        quantity: items.iter().map(|i| u64::from(i.quantity)).sum(),
        total: items.iter().map(|i| u64::from(i.quantity) * i.price).sum(),
        lines: items.len(),
        customer,
        city,
    }
}

/// Input of `POST /v1/bulk-orders` (large-input): [`Order`]'s fields and rules, but room for
/// up to 2,000 lines where an `Order` takes 50, so that a ~100 KiB body is valid.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct BulkOrder {
    #[garde(length(chars, min = 1, max = 64))]
    pub(crate) customer: String,
    #[garde(email)]
    pub(crate) email: String,
    #[garde(range(min = 18, max = 150))]
    pub(crate) age: u32,
    #[garde(dive)]
    pub(crate) address: Address,
    #[garde(length(min = 1, max = 2000), dive)]
    pub(crate) items: Vec<Item>,
    #[garde(length(max = 10), inner(length(chars, min = 1, max = 20)))]
    pub(crate) tags: Vec<String>,
    #[garde(inner(length(chars, max = 500)))]
    pub(crate) note: Option<String>,
}

/// The bulk order handler's work: the summary [`summarize`] gives, so both order scenarios
/// answer alike.
pub(crate) fn summarize_bulk(order: BulkOrder) -> OrderSummary {
    summary(order.customer, order.address.city, &order.items)
}

/// Input of `GET /v1/products` (large-output): how many products to list.
#[derive(Debug, Deserialize, Validate, JsonSchema)]
pub(crate) struct CatalogInput {
    #[garde(range(min = 1, max = 10_000))]
    pub(crate) count: u32,
}

/// One product of a [`Catalog`]: ~200 bytes of JSON.
#[derive(Debug, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct Product {
    #[garde(skip)]
    pub(crate) id: u32,
    #[garde(skip)]
    pub(crate) sku: String,
    #[garde(skip)]
    pub(crate) name: String,
    #[garde(skip)]
    pub(crate) description: String,
    #[garde(skip)]
    pub(crate) price: u64,
    #[garde(skip)]
    pub(crate) in_stock: bool,
}

/// Output of `GET /v1/products`. No rules, like every other output here: hyper and axum check
/// no output, so rules would time garde rather than the frameworks. Strata still runs its
/// output check over it, as on every endpoint.
#[derive(Debug, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
pub(crate) struct Catalog {
    #[garde(skip)]
    pub(crate) products: Vec<Product>,
}

/// How many products the large-output scenario asks for: ~1 MiB of JSON.
pub(crate) const CATALOG_COUNT: u32 = 5_000;

/// The product list handler's work: `input.count` products, built on every request.
///
/// Built per request rather than once at start-up, so that the three servers do the same work:
/// Strata's handler returns its output by value (the framework serializes and checks what the
/// handler gives), so a list built once would be cloned on every request by Strata alone,
/// while hyper and axum could serialize it by reference. Building it costs all three the same.
pub(crate) fn catalog(input: &CatalogInput) -> Catalog {
    const NAMES: [&str; 5] = [
        "Mechanical keyboard, brown switches",
        "USB-C cable, braided, 2 m",
        "Laptop stand, aluminium",
        "Noise-cancelling headphones",
        "Webcam, 1080p with privacy cover",
    ];
    const DESCRIPTIONS: [&str; 3] = [
        "Ships within two working days from the central warehouse; returns accepted for 30 days.",
        "Made to order in the workshop: allow a week before dispatch, tracked delivery included.",
        "Last units of this batch at this price; the next delivery is expected within a month.",
    ];
    let products = (0..input.count)
        .map(|i| {
            let n = i as usize;
            Product {
                id: i + 1,
                sku: format!("SKU-{:06}", (i + 1) * 7919 % 1_000_000),
                name: NAMES[n % NAMES.len()].to_owned(),
                description: DESCRIPTIONS[n % DESCRIPTIONS.len()].to_owned(),
                price: u64::from(i % 97 + 1) * 1_299,
                in_stock: i % 3 != 0,
            }
        })
        .collect();
    Catalog { products }
}

/// Input of `GET /v1/users/:id`.
#[derive(Debug, Deserialize, Validate, JsonSchema)]
pub(crate) struct UserInput {
    #[garde(length(chars, min = 1, max = 64))]
    pub(crate) id: String,
}

/// Output of `GET /v1/users/:id`.
#[derive(Debug, Serialize, Validate, JsonSchema)]
pub(crate) struct UserOutput {
    #[garde(skip)]
    pub(crate) id: String,
    #[garde(skip)]
    pub(crate) name: String,
}

/// Output of the 10,000 generated routes.
#[derive(Debug, Serialize, Validate, JsonSchema)]
pub(crate) struct Pong {
    #[garde(skip)]
    pub(crate) pong: bool,
}

/// The path of generated route `i` of the routes-10k scenario.
pub(crate) fn generated_path(i: usize) -> String {
    format!("/v1/generated/g{}/r{}", i / 100, i % 100)
}

/// How many generated routes the routes-10k scenario adds.
pub(crate) const GENERATED_ROUTES: usize = 10_000;

/// A valid order of about 1 KiB.
pub(crate) fn sample_order() -> Order {
    let names = [
        "Mechanical keyboard, brown switches",
        "USB-C cable, braided, 2 m",
        "Laptop stand, aluminium",
        "Noise-cancelling headphones",
        "Desk mat, extra large",
        "Webcam, 1080p with privacy cover",
        "Monitor arm, dual, gas spring",
    ];
    Order {
        customer: "Ada Lovelace".to_owned(),
        email: "ada.lovelace@example.com".to_owned(),
        age: 36,
        address: Address {
            street: "12 St James's Square".to_owned(),
            city: "London".to_owned(),
            zip: "SW1Y 4JH".to_owned(),
            country: "GB".to_owned(),
        },
        items: names
            .iter()
            .zip(1u32..)
            .map(|(name, n)| Item {
                sku: format!("SKU-{:06}", n * 7919),
                name: (*name).to_owned(),
                quantity: n,
                price: u64::from(n) * 1_299,
            })
            .collect(),
        tags: ["gift", "express", "office", "priority"]
            .iter()
            .map(|t| (*t).to_owned())
            .collect(),
        note: Some(
            "Please leave the parcel with the concierge if nobody answers the door; \
             the office is closed on Saturdays but the building is staffed."
                .to_owned(),
        ),
    }
}

/// How many lines [`bulk_order`] has: ~100 KiB of JSON (~86 bytes a line).
pub(crate) const BULK_LINES: u32 = 1_200;

/// A valid bulk order of about 100 KiB: the sample order's customer, address, tags and note,
/// and [`BULK_LINES`] lines, each valid under [`Item`]'s rules.
pub(crate) fn bulk_order() -> BulkOrder {
    let Order {
        customer,
        email,
        age,
        address,
        items,
        tags,
        note,
    } = sample_order();
    let items = (0..BULK_LINES)
        .map(|i| {
            let line = &items[i as usize % items.len()];
            Item {
                sku: format!("SKU-{:06}", (i + 1) * 7919 % 1_000_000),
                name: line.name.clone(),
                quantity: i % 20 + 1,
                price: u64::from(i % 97 + 1) * 1_299,
            }
        })
        .collect();
    BulkOrder {
        customer,
        email,
        age,
        address,
        items,
        tags,
        note,
    }
}

/// The sample order with three violations: an invalid email, an age over 150, a zero quantity.
pub(crate) fn invalid_order() -> Order {
    let mut order = sample_order();
    "not-an-email".clone_into(&mut order.email);
    order.age = 200;
    order.items[1].quantity = 0;
    order
}

/// garde's report as Strata writes it: `path: message; path: message` (field names here are
/// the same in Rust and on the wire).
pub(crate) fn describe_report(report: &garde::Report) -> String {
    let mut out = String::new();
    for (path, error) in report.iter() {
        if !out.is_empty() {
            out.push_str("; ");
        }
        out.push_str(&path.to_string());
        out.push_str(": ");
        out.push_str(error.message());
    }
    out
}

/// `{"status":"success","data":...}`.
pub(crate) fn success_body<T: Serialize>(data: &T) -> Vec<u8> {
    #[derive(Serialize)]
    struct Envelope<'a, T> {
        status: &'static str,
        data: &'a T,
    }
    serde_json::to_vec(&Envelope {
        status: "success",
        data,
    })
    .unwrap_or_default()
}

/// `{"status":"error","error":{"message":...}}`.
pub(crate) fn error_body(message: &str) -> Vec<u8> {
    let mut body = Vec::with_capacity(message.len() + 44);
    body.extend_from_slice(br#"{"status":"error","error":{"message":"#);
    let _ = serde_json::to_writer(&mut body, message);
    body.extend_from_slice(b"}}");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_order_is_valid_and_about_one_kib() {
        let order = sample_order();
        assert!(order.validate().is_ok());
        let size = serde_json::to_vec(&order).map_or(0, |v| v.len());
        assert!((900..=1300).contains(&size), "{size} bytes");
    }

    #[test]
    fn the_bulk_order_is_valid_and_about_100_kib() {
        let order = bulk_order();
        assert!(order.validate().is_ok());
        assert_eq!(order.items.len(), 1_200);
        let size = serde_json::to_vec(&order).map_or(0, |v| v.len());
        assert!((95 * 1024..=110 * 1024).contains(&size), "{size} bytes");
        // One line over a rule: refused like an `Order`'s.
        let mut invalid = order;
        invalid.items[500].quantity = 0;
        let message = invalid.validate().err().map(|r| describe_report(&r));
        assert_eq!(
            message.as_deref(),
            Some("items[500].quantity: lower than 1")
        );
    }

    #[test]
    fn the_catalog_is_about_one_mib() {
        let catalog = catalog(&CatalogInput {
            count: CATALOG_COUNT,
        });
        assert_eq!(catalog.products.len(), 5_000);
        assert!(catalog.validate().is_ok());
        let size = success_body(&catalog).len();
        assert!((900 * 1024..=1100 * 1024).contains(&size), "{size} bytes");
    }

    #[test]
    fn the_invalid_order_has_three_violations() {
        let report = invalid_order().validate().err();
        let message = report.as_ref().map(describe_report).unwrap_or_default();
        assert_eq!(message.split("; ").count(), 3, "{message}");
        assert!(message.starts_with("age: greater than 150; "), "{message}");
        assert!(message.contains("email: not a valid email"), "{message}");
        assert!(
            message.contains("items[1].quantity: lower than 1"),
            "{message}"
        );
    }
}
