//! The examples run, and answer what their docs say.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

#[allow(dead_code)]
#[path = "../examples/hello.rs"]
mod hello;

#[allow(dead_code)]
#[path = "../examples/tower_stack.rs"]
mod tower_stack;

#[allow(dead_code)]
#[path = "../examples/routing.rs"]
mod routing;

#[tokio::test]
async fn hello_answers_like_the_quick_start() {
    let endpoint = hello::hello_endpoint();
    assert_eq!(
        hello::ask(&endpoint, "/v1/hello").await,
        (
            200,
            r#"{"status":"success","data":{"greetings":"Hello, World"}}"#.to_owned()
        )
    );
    assert_eq!(
        hello::ask(&endpoint, "/v1/hello?name=Strata").await,
        (
            200,
            r#"{"status":"success","data":{"greetings":"Hello, Strata"}}"#.to_owned()
        )
    );
    assert_eq!(
        hello::ask(&endpoint, "/v1/hello?name=").await,
        (
            400,
            r#"{"status":"error","error":{"message":"name: length is lower than 1"}}"#.to_owned()
        )
    );
    assert_eq!(endpoint.meta().tag.as_deref(), Some("greetings"));
}

#[tokio::test]
async fn tower_stack_runs_the_stages_by_hand() {
    let results = tower_stack::run().await;
    assert_eq!(
        results,
        [
            (200, r#"{"status":"success","data":{"total":6}}"#.to_owned()),
            (
                400,
                r#"{"status":"error","error":{"message":"numbers: length is lower than 1"}}"#
                    .to_owned()
            ),
            (
                422,
                r#"{"status":"error","error":{"message":"The total does not fit in 64 bits"}}"#
                    .to_owned()
            ),
            (
                401,
                r#"{"status":"error","error":{"message":"Who is calling?"}}"#.to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn routing_example_answers_each_route() {
    let lines = routing::run().await;
    let expected = [
        r#"GET /v1/users -> 200 {"status":"success","data":{"users":[{"id":1,"name":"user 1"},{"id":2,"name":"user 2"}]}}"#,
        r#"POST /v1/users -> 201 {"status":"success","data":{"id":3,"name":"Ada"}}"#,
        r#"GET /v1/users/2 -> 200 {"status":"success","data":{"id":2,"name":"user 2"}}"#,
        r#"GET /v1/users/2/friends -> 200 {"status":"success","data":{"users":[{"id":1,"name":"user 1"}]}}"#,
        r#"GET /v1/users/9 -> 404 {"status":"error","error":{"message":"No user 9"}}"#,
        r#"DELETE /v1/users/1 -> 200 {"status":"success","data":{"id":1,"name":"user 1"}}"#,
        r#"PUT /v1/users -> 405 (Allow: GET, POST, HEAD, OPTIONS) {"status":"error","error":{"message":"PUT is not allowed"}}"#,
        r#"GET /v2 -> 404 {"status":"error","error":{"message":"Can not GET /v2"}}"#,
    ];
    assert_eq!(lines, expected);
}
