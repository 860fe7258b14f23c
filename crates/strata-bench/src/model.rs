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
    OrderSummary {
        quantity: order.items.iter().map(|i| u64::from(i.quantity)).sum(),
        total: order
            .items
            .iter()
            .map(|i| u64::from(i.quantity) * i.price)
            .sum(),
        lines: order.items.len(),
        customer: order.customer,
        city: order.address.city,
    }
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
