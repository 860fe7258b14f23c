//! File names and media types through the server, written by both multipart writers: the typed
//! client (`strata::client::Client`) and `strata::upload::MultipartForm`. Both write part headers
//! with `strata_input::multipart_writer`, so what the server's reader (multer) reads back is the
//! name and type sent; what a header line cannot carry is refused by the client
//! (`ClientError::Input`) and replaced by the form, and never changes the file's bytes.

#![allow(clippy::unwrap_used)] // tests fail loudly by design

use garde::Validate;
use http_body_util::{BodyExt, Full};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata::client::{Client, ClientError};
use strata::prelude::*;
use strata::upload::MultipartForm;
use strata::{Operation, Router, Routing, UploadedFile};
use tower::ServiceExt;

#[derive(Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Upload {
    file: UploadedFile,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, Validate, JsonSchema)]
#[garde(allow_unvalidated)]
struct Received {
    name: String,
    mimetype: String,
    bytes: Vec<u8>,
}

const UPLOAD: Operation<Upload, Received> = Operation::post("/files");

/// The file's bytes: a multipart-looking payload, so that a header leaking into it shows.
const DATA: &[u8] = b"\x89PNG\r\n\r\nthe bytes\r\n--not-a-boundary\r\n";

/// A router whose endpoint answers the name, media type and bytes of the file it received.
fn router() -> Router {
    let upload =
        default_endpoints_factory()
            .endpoint()
            .implement(&UPLOAD, async |input: Upload| {
                Ok(Received {
                    name: input.file.name().to_owned(),
                    mimetype: input.file.mimetype().to_owned(),
                    bytes: input.file.data().expect("in memory").to_vec(),
                })
            });
    let config = create_config()
        .cors(Cors::Disabled)
        .upload(strata::UploadLimits::new())
        .build();
    Router::new(&Routing::new().operation(upload), &config).unwrap()
}

fn long(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len())
}

/// Names and media types that a part header carries: each arrives as it was sent.
fn carried() -> Vec<(String, String)> {
    let type_10k = format!("application/x-{}", long("a", 10 * 1024));
    let name_10k = format!("{}.png", long("a\"b\\c é ", 10 * 1024));
    vec![
        ("plain.png".into(), "image/png".into()),
        ("say \"cheese\".png".into(), "image/png".into()),
        ("back\\slash.png".into(), "image/png".into()),
        (
            "both \\\" and \"\\ and \\\\\"\".png".into(),
            "image/png".into(),
        ),
        ("\"quoted\"".into(), "image/png".into()),
        (
            "semi;colon name=x filename=y.png".into(),
            "image/png".into(),
        ),
        ("tab\there.txt".into(), "text/plain; charset=utf-8".into()),
        ("résumé €.txt".into(), "text/plain".into()),
        ("日本語 🦀.png".into(), "image/png".into()),
        (name_10k, type_10k),
    ]
}

/// What a header line cannot carry, and what the typed client's error names.
fn refused() -> Vec<(String, String, &'static str)> {
    vec![
        // The injection: a media type that would end the part's headers.
        (
            "cover.png".into(),
            "image/png\r\n\r\nINJECTED".into(),
            "media type",
        ),
        (
            "cover.png".into(),
            "text/plain\r\nX-Injected: 1".into(),
            "media type",
        ),
        ("cover.png".into(), "not a type".into(), "media type"),
        (
            "line\r\nbreak.png".into(),
            "image/png".into(),
            "control character",
        ),
        (
            "nul\0byte.png".into(),
            "image/png".into(),
            "control character",
        ),
        (
            "delete\u{7f}.png".into(),
            "image/png".into(),
            "control character",
        ),
        (
            "ends with a backslash\\".into(),
            "image/png".into(),
            "backslash",
        ),
    ]
}

#[tokio::test]
async fn the_typed_client_sends_names_and_types_as_they_are() {
    let client = Client::new(router());
    for (name, mimetype) in carried() {
        let file = UploadedFile::new(name.clone(), mimetype.clone(), DATA);
        let received = client.call(&UPLOAD, Upload { file }).await;
        let received = received.unwrap_or_else(|error| panic!("{name:?} {mimetype:?}: {error}"));
        assert_eq!(
            received,
            Received {
                name,
                mimetype,
                bytes: DATA.to_vec()
            }
        );
    }
}

#[tokio::test]
async fn the_typed_client_refuses_what_a_part_header_cannot_carry() {
    let client = Client::new(router());
    let file = UploadedFile::new("cover.png", "image/png\r\n\r\nINJECTED", DATA);
    let error = client.call(&UPLOAD, Upload { file }).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        ClientError::Input(
            "the file \"cover.png\" of the field `file`: the media type \
             \"image/png\\r\\n\\r\\nINJECTED\" cannot be sent: it holds the control character \
             U+000D at character 10 (a media type is `type/subtype`, optionally `; name=value` \
             parameters)"
                .into()
        )
        .to_string()
    );
    for (name, mimetype, problem) in refused() {
        let file = UploadedFile::new(name.clone(), mimetype.clone(), DATA);
        match client.call(&UPLOAD, Upload { file }).await {
            Err(ClientError::Input(message)) => {
                assert!(message.contains("`file`"), "{message}");
                assert!(message.contains(problem), "{message}");
                // The value is named, escaped as Rust writes it.
                let shown = if problem == "media type" {
                    &mimetype
                } else {
                    &name
                };
                let start: String = format!("{shown:?}").chars().take(12).collect();
                assert!(message.contains(&start), "{message} (wanted {start})");
            }
            // What must never happen: the file's bytes or its name changed on the way.
            other => panic!("{name:?} {mimetype:?}: {other:?}"),
        }
    }
}

async fn send(form: MultipartForm) -> Received {
    let request = http::Request::post("/files")
        .header(http::header::CONTENT_TYPE, form.content_type())
        .body(Full::new(form.into_bytes()))
        .unwrap();
    let response = router().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    serde_json::from_value(body["data"].clone()).unwrap()
}

#[tokio::test]
async fn a_multipart_form_sends_names_and_types_as_they_are() {
    for (name, mimetype) in carried() {
        let file = UploadedFile::new(name.clone(), mimetype.clone(), DATA);
        let received = send(MultipartForm::new().file("file", file)).await;
        assert_eq!(
            received,
            Received {
                name,
                mimetype,
                bytes: DATA.to_vec()
            }
        );
    }
}

#[tokio::test]
async fn a_multipart_form_replaces_what_a_part_header_cannot_carry() {
    // Control characters and a closing backslash become spaces; a media type that is not one is
    // not sent (the server reads none: `application/octet-stream`). The bytes arrive intact.
    let replaced = [
        ("line\r\nbreak.png", "line  break.png"),
        ("nul\0byte.png", "nul byte.png"),
        ("delete\u{7f}.png", "delete .png"),
        ("ends with a backslash\\", "ends with a backslash "),
    ];
    for (sent, arrives) in replaced {
        let file = UploadedFile::new(sent, "image/png", DATA);
        let received = send(MultipartForm::new().file("file", file)).await;
        assert_eq!(
            received,
            Received {
                name: arrives.into(),
                mimetype: "image/png".into(),
                bytes: DATA.to_vec()
            }
        );
    }
    for (_, mimetype, problem) in refused() {
        if problem != "media type" {
            continue;
        }
        let file = UploadedFile::new("cover.png", mimetype, DATA);
        let received = send(MultipartForm::new().file("file", file)).await;
        assert_eq!(
            received,
            Received {
                name: "cover.png".into(),
                mimetype: "application/octet-stream".into(),
                bytes: DATA.to_vec()
            }
        );
    }
}
