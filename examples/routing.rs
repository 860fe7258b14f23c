//! A routing tree written with the `routing!` macro (the builder `Routing::new().route(..)` works
//! too): nested keys, a path parameter, method keys, an explicit `"<method> <path>"` key and a
//! nested endpoint. The router is one tower service; this example calls it directly.
//!
//! `cargo run --example routing`

use http::{Method, Request};
use http_body_util::BodyExt;
use strata::prelude::*;
use strata::{Router, Routing};
use tower::ServiceExt;

#[strata::model(input)]
struct UserId {
    #[garde(range(min = 1))]
    id: u32,
}

#[strata::model(input)]
struct NewUser {
    #[garde(length(chars, min = 1, max = 64))]
    name: String,
}

#[strata::model(output)]
struct User {
    id: u32,
    name: String,
}

#[strata::model(output)]
struct Users {
    #[garde(dive)]
    users: Vec<User>,
}

fn user(id: u32) -> User {
    User {
        id,
        name: format!("user {id}"),
    }
}

/// The application's routing.
pub(crate) fn app_routing() -> Routing {
    let factory = default_endpoints_factory();
    let list = factory.get().handler_without_input(async || {
        Ok(Users {
            users: vec![user(1), user(2)],
        })
    });
    let create = factory.post().handler(async |input: NewUser| {
        Ok(Reply::created(User {
            id: 3,
            name: input.name,
        }))
    });
    let one = factory.get().handler(async |input: UserId| {
        if input.id > 2 {
            return Err(http_error!(404, "No user {}", input.id));
        }
        Ok(user(input.id))
    });
    let remove = factory
        .delete()
        .handler(async |input: UserId| Ok(user(input.id)));
    let friends = factory.get().handler(async |input: UserId| {
        Ok(Users {
            users: vec![user(input.id % 2 + 1)],
        })
    });
    routing! {
        "v1" => {
            "users" => {
                "get" => list,
                "post" => create,
                ":id" => one.nest(routing! { "friends" => friends }),
            },
            "delete /users/:id" => remove,
        },
    }
}

/// Sends each request through the router; returns `METHOD path -> status body` lines.
pub(crate) async fn run() -> Vec<String> {
    let config = create_config().cors(Cors::Enabled).build();
    let router = Router::new(&app_routing(), &config).expect("the routing is valid");
    let requests = [
        (Method::GET, "/v1/users", None),
        (Method::POST, "/v1/users", Some(r#"{"name":"Ada"}"#)),
        (Method::GET, "/v1/users/2", None),
        (Method::GET, "/v1/users/2/friends", None),
        (Method::GET, "/v1/users/9", None),
        (Method::DELETE, "/v1/users/1", None),
        (Method::PUT, "/v1/users", None),
        (Method::GET, "/v2", None),
    ];
    let mut lines = Vec::new();
    for (method, path, body) in requests {
        let mut request = Request::builder().method(method.clone()).uri(path);
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(body.unwrap_or_default().to_owned())
            .expect("valid request");
        let response = router
            .clone()
            .oneshot(request)
            .await
            .expect("the router never fails");
        let status = response.status().as_u16();
        let allow = response
            .headers()
            .get("allow")
            .map(|v| format!(" (Allow: {})", v.to_str().unwrap_or("")));
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("in-memory body")
            .to_bytes();
        lines.push(format!(
            "{method} {path} -> {status}{} {}",
            allow.unwrap_or_default(),
            String::from_utf8_lossy(&bytes)
        ));
    }
    lines
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    for line in run().await {
        println!("{line}");
    }
}
