//! Prometheus metrics at `/metrics`: requests counted by route template (never the slug), and
//! the exposition itself outside the API.

mod common;

use std::collections::BTreeMap;

use common::{Backend, start};

/// The samples of an exposition: series (with its labels) to value.
fn samples(exposition: &str) -> BTreeMap<String, String> {
    exposition
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .map(|(series, value)| (series.to_owned(), value.to_owned()))
        .collect()
}

#[tokio::test]
async fn requests_are_counted_by_route_template() {
    let conduit = start(Backend::Sqlite).await;
    let token = conduit.register("jake").await;
    for slug in ["one", "two", "three"] {
        let answer = conduit
            .send("GET", &format!("/articles/{slug}"), None, Some(&token))
            .await;
        assert_eq!(answer.status, 404);
    }
    assert_eq!(conduit.send("GET", "/tags", None, None).await.status, 200);

    let origin = conduit.base.trim_end_matches("/api");
    let response = conduit
        .client
        .get(format!("{origin}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let exposition = response.text().await.unwrap();
    let samples = samples(&exposition);
    let count = |route: &str, method: &str, status: &str| {
        samples
            .get(&format!(
                "strata_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}}"
            ))
            .cloned()
    };
    assert_eq!(
        count("/api/articles/:slug", "GET", "404").as_deref(),
        Some("3"),
        "{exposition}"
    );
    assert_eq!(count("/api/users", "POST", "201").as_deref(), Some("1"));
    assert_eq!(count("/api/tags", "GET", "200").as_deref(), Some("1"));
    assert!(
        !exposition.contains("/api/articles/one"),
        "a slug is not a label: {exposition}"
    );
}
