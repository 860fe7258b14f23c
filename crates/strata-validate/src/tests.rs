use garde::Validate;
use http::Request;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use strata_core::{ApiError, ErrorKind, HCons, HNil, Validated};
use strata_input::{Input, InputValue, Staged, TextValue};
use tower::{ServiceExt, service_fn};

use crate::ValidateLayer;

#[derive(Debug, Deserialize, Validate, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Signup {
    #[garde(length(chars, min = 1))]
    name: Option<String>,
    #[garde(range(max = 150))]
    age: u8,
    #[garde(dive)]
    pets: Vec<Pet>,
    #[garde(skip)]
    tags: Vec<String>,
    #[garde(skip)]
    newsletter: bool,
}

#[derive(Debug, Deserialize, Validate, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Pet {
    #[garde(length(chars, min = 1))]
    pet_name: String,
}

async fn validate<C: Send + 'static>(
    input: Input,
    ctx: C,
) -> Result<Validated<Signup, C>, ApiError> {
    let service = tower_layer::Layer::layer(
        &ValidateLayer::<Signup>::new(),
        service_fn(|request: Request<Validated<Signup, C>>| async move {
            Ok::<_, ApiError>(request.into_body())
        }),
    );
    service.oneshot(Request::new(Staged { input, ctx })).await
}

fn input(entries: &[(&str, InputValue)]) -> Input {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

#[tokio::test]
async fn decodes_text_and_json_and_keeps_ctx() {
    let input = input(&[
        ("age", "42".into()),
        ("pets", InputValue::Json(json!([{"petName": "Rex"}]))),
        ("tags", "solo".into()),
        ("newsletter", "true".into()),
    ]);
    let validated = validate(input, HNil.push(7u8)).await.unwrap();
    assert_eq!(validated.input.age, 42);
    assert_eq!(validated.input.tags, ["solo"]);
    assert!(validated.input.newsletter);
    assert_eq!(validated.input.pets[0].pet_name, "Rex");
    assert_eq!(
        validated.ctx,
        HCons {
            head: 7u8,
            tail: HNil
        }
    );
}

#[tokio::test]
async fn every_rule_violation_is_listed_with_wire_paths() {
    let input = input(&[
        ("name", "".into()),
        ("age", "151".into()),
        (
            "pets",
            InputValue::Json(json!([{"petName": "ok"}, {"petName": ""}])),
        ),
        ("tags", TextValue::Many(vec!["a".into(), "b".into()]).into()),
        ("newsletter", "false".into()),
    ]);
    let error = validate(input, HNil).await.unwrap_err();
    assert_eq!(error.status(), 400);
    assert_eq!(error.kind(), ErrorKind::InputValidation);
    assert_eq!(
        error.message(),
        "age: greater than 150; name: length is lower than 1; pets[1].petName: length is lower than 1"
    );
}

#[tokio::test]
async fn each_problem_is_kept_apart_even_when_a_value_holds_the_separator() {
    // Rule problems (garde).
    let rules = input(&[
        ("name", "".into()),
        ("age", "151".into()),
        ("pets", InputValue::Json(json!([]))),
        ("tags", TextValue::Many(vec!["a".into()]).into()),
        ("newsletter", "false".into()),
    ]);
    let error = validate(rules, HNil).await.unwrap_err();
    let problems: Vec<&str> = error.problems().collect();
    assert_eq!(
        problems,
        ["age: greater than 150", "name: length is lower than 1"]
    );
    // Decoding problems (explained from the schema), one quoting "; ".
    let decoding = input(&[
        ("name", "Ann".into()),
        ("age", "a; b".into()),
        ("newsletter", InputValue::Json(json!(3))),
    ]);
    let error = validate(decoding, HNil).await.unwrap_err();
    let problems: Vec<&str> = error.problems().collect();
    assert_eq!(
        problems,
        [
            r#"age: expected integer, received string "a; b""#,
            "newsletter: expected boolean, received number 3",
            "pets: required",
            "tags: required",
        ]
    );
    assert_eq!(error.message(), problems.join("; "));
}

#[tokio::test]
async fn json_values_are_strict() {
    let input = input(&[
        ("age", InputValue::Json(json!("5"))),
        ("pets", InputValue::Json(json!([]))),
        ("tags", InputValue::Json(json!([]))),
        ("newsletter", InputValue::Json(json!(false))),
    ]);
    let error = validate(input, HNil).await.unwrap_err();
    assert_eq!(
        error.message(),
        "age: expected integer, received string \"5\""
    );
}

#[tokio::test]
async fn type_errors_name_the_nested_path() {
    let input = input(&[
        ("age", "1".into()),
        (
            "pets",
            InputValue::Json(json!([{"petName": "a"}, {"petName": 3}])),
        ),
        ("tags", "t".into()),
        ("newsletter", "nope".into()),
    ]);
    let error = validate(input, HNil).await.unwrap_err();
    assert_eq!(
        error.message(),
        "newsletter: expected boolean, received string \"nope\"; \
         pets[1].petName: expected string, received number 3"
    );
}

#[tokio::test]
async fn lenient_bool_rejects_other_words() {
    let input = input(&[
        ("age", "1".into()),
        ("pets", InputValue::Json(json!([]))),
        ("tags", "t".into()),
        ("newsletter", "nope".into()),
    ]);
    let error = validate(input, HNil).await.unwrap_err();
    assert_eq!(
        error.message(),
        "newsletter: expected boolean, received string \"nope\""
    );
}
