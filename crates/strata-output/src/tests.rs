use std::collections::BTreeMap;

use garde::Validate;
use http::Request;
use schemars::JsonSchema;
use serde::Serialize;
use strata_core::{ApiError, ErrorKind, Output, http_error};
use tower::{ServiceExt, service_fn};

use crate::OutputLayer;

#[derive(Serialize, Validate, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Page {
    #[garde(dive)]
    items: Vec<Item>,
    #[garde(range(max = 10))]
    total_count: u32,
}

#[derive(Serialize, Validate, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Item {
    #[garde(length(chars, min = 1))]
    display_name: String,
}

async fn run(page: Result<Page, ApiError>) -> Result<Output, ApiError> {
    let service = tower_layer::Layer::layer(
        &OutputLayer::<Page>::new(),
        service_fn(move |_: Request<()>| {
            let page = match &page {
                Ok(p) => Ok(Page {
                    items: p
                        .items
                        .iter()
                        .map(|i| Item {
                            display_name: i.display_name.clone(),
                        })
                        .collect(),
                    total_count: p.total_count,
                }),
                Err(e) => Err(ApiError::from_code(
                    e.status().as_u16(),
                    e.message().to_owned(),
                )),
            };
            async move { page }
        }),
    );
    service.oneshot(Request::new(())).await
}

#[tokio::test]
async fn serializes_once_with_wire_names() {
    let page = Page {
        items: vec![Item {
            display_name: "a".into(),
        }],
        total_count: 1,
    };
    let output = run(Ok(page)).await.unwrap();
    assert_eq!(output.status(), 200);
    assert_eq!(
        output.data().get(),
        r#"{"items":[{"displayName":"a"}],"totalCount":1}"#
    );
}

#[tokio::test]
async fn rule_violations_are_500_naming_output_fields() {
    let page = Page {
        items: vec![Item {
            display_name: String::new(),
        }],
        total_count: 11,
    };
    let error = run(Ok(page)).await.unwrap_err();
    assert_eq!(error.status(), 500);
    assert_eq!(error.kind(), ErrorKind::OutputValidation);
    assert_eq!(
        error.message(),
        "output.items[0].displayName: length is lower than 1; output.totalCount: greater than 10"
    );
}

#[tokio::test]
async fn handler_errors_pass_through() {
    let error = run(Err(http_error!(404, "no such page")))
        .await
        .unwrap_err();
    assert_eq!(error.status(), 404);
    assert_eq!(error.message(), "no such page");
}

#[tokio::test]
async fn serialization_failures_are_500() {
    // JSON object keys must be strings: a map keyed by tuples cannot be serialized.
    #[derive(Serialize, Validate, JsonSchema)]
    struct Bad {
        #[garde(skip)]
        map: BTreeMap<(u8, u8), u8>,
    }
    let service = tower_layer::Layer::layer(
        &OutputLayer::<Bad>::new(),
        service_fn(|_: Request<()>| async {
            Ok::<_, ApiError>(Bad {
                map: BTreeMap::from([((1, 2), 3)]),
            })
        }),
    );
    let error = service.oneshot(Request::new(())).await.unwrap_err();
    assert_eq!(error.status(), 500);
    assert!(
        error
            .message()
            .starts_with("Failed to serialize the output: "),
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn handlers_may_choose_another_success_status() {
    use http::StatusCode;

    use crate::Reply;

    let service = tower_layer::Layer::layer(
        &OutputLayer::<Item>::new(),
        service_fn(|request: Request<StatusCode>| async move {
            let status = *request.body();
            Ok::<_, ApiError>(
                Reply::new(Item {
                    display_name: "new".into(),
                })
                .status(status),
            )
        }),
    );
    let output = service
        .clone()
        .oneshot(Request::new(StatusCode::CREATED))
        .await
        .unwrap();
    assert_eq!(output.status(), 201);
    assert_eq!(output.data().get(), r#"{"displayName":"new"}"#);
    let error = service
        .oneshot(Request::new(StatusCode::NOT_FOUND))
        .await
        .unwrap_err();
    assert_eq!(error.status(), 500);
    assert_eq!(
        error.message(),
        "A handler answered success with status 404 Not Found; errors are ApiErrors"
    );
}

#[tokio::test]
async fn a_handler_s_not_modified_becomes_the_304_response() {
    let service = tower_layer::Layer::layer(
        &OutputLayer::<Page>::new(),
        service_fn(|_: Request<()>| async {
            Err::<Page, _>(
                ApiError::not_modified()
                    .with_header(http::header::ETAG, http::HeaderValue::from_static("\"v1\"")),
            )
        }),
    );
    let output = service.oneshot(Request::new(())).await.unwrap();
    assert_eq!(output.status(), http::StatusCode::NOT_MODIFIED);
    assert!(output.is_streamed(), "no JSON body");
    assert_eq!(output.headers().unwrap()["etag"], "\"v1\"");
    // Other errors pass through.
    let error = run(Err(http_error!(409, "Conflict"))).await.unwrap_err();
    assert_eq!(error.status(), 409);
}
