//! Articles, favorites and tags over real sockets, with their errors and the concurrent cases
//! (slugs of one title created at once, one article favorited by many at once).

// The tests are `async fn(Backend)` bodies that `on_both!` turns into `#[tokio::test]`s: clippy
// does not see them as tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Backend, Conduit, errors, start};
use serde_json::{Value, json};

fn new_article(title: &str, tags: &[&str]) -> Value {
    json!({ "article": { "title": title, "description": "About it", "body": "It is so.", "tagList": tags } })
}

async fn create(conduit: &Conduit, token: &str, title: &str, tags: &[&str]) -> Value {
    let answer = conduit
        .send(
            "POST",
            "/articles",
            Some(new_article(title, tags)),
            Some(token),
        )
        .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body["article"].clone()
}

async fn create_get_update_and_delete_an_article(backend: Backend) {
    let conduit = start(backend).await;
    let jake = conduit.register("jake").await;
    let article = create(
        &conduit,
        &jake,
        "How to train your dragon",
        &["training", "dragons", "Zebras"],
    )
    .await;
    assert_eq!(article["slug"], "how-to-train-your-dragon");
    // Sorted, as the reference implementations and their shared API tests list them (in code
    // point order: capitals first), whatever order they were given in.
    assert_eq!(article["tagList"], json!(["Zebras", "dragons", "training"]));
    assert_eq!(article["favorited"], false);
    assert_eq!(article["favoritesCount"], 0);
    assert_eq!(article["author"]["username"], "jake");
    assert_eq!(article["body"], "It is so.");
    assert!(article["createdAt"].as_str().unwrap().ends_with('Z'));

    let read = conduit
        .send("GET", "/articles/how-to-train-your-dragon", None, None)
        .await;
    assert_eq!(read.status, 200);
    assert_eq!(read.body["article"], article);

    let changed = conduit
        .send(
            "PUT",
            "/articles/how-to-train-your-dragon",
            Some(json!({ "article": { "body": "Carefully." } })),
            Some(&jake),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_eq!(changed.body["article"]["body"], "Carefully.");
    assert_eq!(changed.body["article"]["title"], "How to train your dragon");

    let deleted = conduit
        .send(
            "DELETE",
            "/articles/how-to-train-your-dragon",
            None,
            Some(&jake),
        )
        .await;
    assert_eq!((deleted.status, deleted.body.clone()), (204, Value::Null));
    let gone = conduit
        .send("GET", "/articles/how-to-train-your-dragon", None, None)
        .await;
    assert_eq!(
        (gone.status, errors(&gone.body)),
        (404, vec!["Article not found".to_owned()])
    );
    assert_eq!(
        conduit.send("GET", "/tags", None, None).await.body,
        json!({ "tags": [] })
    );
}

async fn each_validation_problem_is_one_entry(backend: Backend) {
    let conduit = start(backend).await;
    // Even one quoting the separator Strata joins them with in its message.
    let quoted = conduit
        .send("GET", "/articles?limit=a;%20b&offset=-1", None, None)
        .await;
    assert_eq!(
        (quoted.status, errors(&quoted.body)),
        (
            422,
            vec![
                r#"limit: expected integer, received string "a; b""#.to_owned(),
                "offset: lower than 0".to_owned()
            ]
        )
    );
}

async fn article_errors_401_403_404_and_422(backend: Backend) {
    let conduit = start(backend).await;
    let jake = conduit.register("jake").await;
    let anne = conduit.register("anne").await;
    create(&conduit, &jake, "Mine", &[]).await;

    let anonymous = conduit
        .send("POST", "/articles", Some(new_article("x", &[])), None)
        .await;
    assert_eq!(anonymous.status, 401);
    let invalid = conduit
        .send(
            "POST",
            "/articles",
            Some(json!({ "article": { "title": "" } })),
            Some(&jake),
        )
        .await;
    assert_eq!(invalid.status, 422);
    assert_eq!(
        errors(&invalid.body),
        [
            "article.body: required",
            "article.description: required",
            "article.title: length is lower than 1"
        ]
    );

    let put = conduit
        .send(
            "PUT",
            "/articles/mine",
            Some(json!({ "article": { "body": "mine now" } })),
            Some(&anne),
        )
        .await;
    assert_eq!(
        (put.status, errors(&put.body)),
        (
            403,
            vec!["Only the author may change or delete this article".to_owned()]
        )
    );
    let delete = conduit
        .send("DELETE", "/articles/mine", None, Some(&anne))
        .await;
    assert_eq!(delete.status, 403);
    assert_eq!(
        conduit
            .send("DELETE", "/articles/mine", None, None)
            .await
            .status,
        401
    );
    assert_eq!(
        conduit
            .send("DELETE", "/articles/nothing", None, Some(&jake))
            .await
            .status,
        404
    );
    assert_eq!(
        conduit
            .send(
                "PUT",
                "/articles/nothing",
                Some(json!({ "article": {} })),
                Some(&jake)
            )
            .await
            .status,
        404
    );
    assert_eq!(
        conduit
            .send("POST", "/articles/nothing/favorite", None, Some(&jake))
            .await
            .status,
        404
    );
    assert_eq!(
        conduit
            .send("POST", "/articles/mine/favorite", None, None)
            .await
            .status,
        401
    );
    let limit = conduit.send("GET", "/articles?limit=0", None, None).await;
    assert_eq!(limit.status, 422);
    assert_eq!(
        conduit
            .send("GET", "/articles/feed", None, None)
            .await
            .status,
        401
    );
}

async fn lists_filter_by_tag_author_and_favorited_page_and_feed(backend: Backend) {
    let conduit = start(backend).await;
    let jake = conduit.register("jake").await;
    let anne = conduit.register("anne").await;
    for i in 0..3 {
        create(&conduit, &jake, &format!("Jake {i}"), &["jake", "all"]).await;
        create(&conduit, &anne, &format!("Anne {i}"), &["anne", "all"]).await;
    }
    let all = conduit.send("GET", "/articles", None, None).await;
    assert_eq!(all.body["articlesCount"], 6);
    let titles: Vec<&str> = all.body["articles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["Anne 2", "Jake 2", "Anne 1", "Jake 1", "Anne 0", "Jake 0"]
    );
    assert!(
        all.body["articles"][0].get("body").is_none(),
        "lists leave the body out"
    );

    let tagged = conduit.send("GET", "/articles?tag=anne", None, None).await;
    assert_eq!(tagged.body["articlesCount"], 3);
    let by = conduit
        .send("GET", "/articles?author=jake&limit=2&offset=1", None, None)
        .await;
    assert_eq!(by.body["articlesCount"], 3);
    let titles: Vec<&str> = by.body["articles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Jake 1", "Jake 0"]);

    assert_eq!(
        conduit
            .send("POST", "/articles/anne-1/favorite", None, Some(&jake))
            .await
            .status,
        200
    );
    let favorited = conduit
        .send("GET", "/articles?favorited=jake", None, Some(&jake))
        .await;
    assert_eq!(favorited.body["articlesCount"], 1);
    assert_eq!(favorited.body["articles"][0]["slug"], "anne-1");
    assert_eq!(favorited.body["articles"][0]["favorited"], true);
    assert_eq!(favorited.body["articles"][0]["favoritesCount"], 1);

    let empty = conduit
        .send("GET", "/articles/feed", None, Some(&jake))
        .await;
    assert_eq!(empty.body, json!({ "articles": [], "articlesCount": 0 }));
    conduit
        .send("POST", "/profiles/anne/follow", None, Some(&jake))
        .await;
    let feed = conduit
        .send("GET", "/articles/feed?limit=2", None, Some(&jake))
        .await;
    assert_eq!(feed.body["articlesCount"], 3);
    assert_eq!(feed.body["articles"].as_array().unwrap().len(), 2);
    assert_eq!(feed.body["articles"][0]["author"]["following"], true);

    let tags = conduit.send("GET", "/tags", None, None).await;
    assert_eq!(tags.body, json!({ "tags": ["all", "anne", "jake"] }));

    let unfavorite = conduit
        .send("DELETE", "/articles/anne-1/favorite", None, Some(&jake))
        .await;
    assert_eq!(
        (
            unfavorite.body["article"]["favorited"].clone(),
            unfavorite.body["article"]["favoritesCount"].clone()
        ),
        (json!(false), json!(0))
    );
}

async fn slugs_stay_unique_when_one_title_is_created_at_once(backend: Backend) {
    let conduit = start(backend).await;
    let jake = conduit.register("jake").await;
    let creations = (0..20).map(|_| create(&conduit, &jake, "Same title", &["same"]));
    let articles = futures_join_all(creations).await;
    let mut slugs: Vec<String> = articles
        .iter()
        .map(|a| a["slug"].as_str().unwrap().to_owned())
        .collect();
    slugs.sort();
    slugs.dedup();
    assert_eq!(slugs.len(), 20, "{slugs:?}");
    assert!(slugs.contains(&"same-title".to_owned()));
    assert_eq!(
        conduit
            .send("GET", "/articles?tag=same", None, None)
            .await
            .body["articlesCount"],
        20
    );
}

async fn favorite_counts_are_right_when_many_favorite_at_once(backend: Backend) {
    let conduit = start(backend).await;
    let author = conduit.register("author").await;
    create(&conduit, &author, "Popular", &[]).await;
    let mut tokens = Vec::new();
    for i in 0..12 {
        tokens.push(conduit.register(&format!("fan{i}")).await);
    }
    // Every fan favorites twice at once: 24 requests, 12 favorites.
    let favorites = tokens
        .iter()
        .chain(tokens.iter())
        .map(|token| conduit.send("POST", "/articles/popular/favorite", None, Some(token)));
    for answer in futures_join_all(favorites).await {
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    let article = conduit.send("GET", "/articles/popular", None, None).await;
    assert_eq!(article.body["article"]["favoritesCount"], 12);
    let removals = tokens[..5]
        .iter()
        .map(|token| conduit.send("DELETE", "/articles/popular/favorite", None, Some(token)));
    futures_join_all(removals).await;
    let article = conduit
        .send("GET", "/articles/popular", None, Some(&tokens[0]))
        .await;
    assert_eq!(article.body["article"]["favoritesCount"], 7);
    assert_eq!(article.body["article"]["favorited"], false);
}

/// Runs the futures at once (each its own task would need `'static`; joined in place they
/// still send their requests concurrently over separate connections).
async fn futures_join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in pinned.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(Option::unwrap).collect()
}

on_both!(
    create_get_update_and_delete_an_article,
    each_validation_problem_is_one_entry,
    article_errors_401_403_404_and_422,
    lists_filter_by_tag_author_and_favorited_page_and_feed,
    slugs_stay_unique_when_one_title_is_created_at_once,
    favorite_counts_are_right_when_many_favorite_at_once,
);
