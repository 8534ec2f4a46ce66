use super::signature::{sign, sorted_query};

#[test]
fn sign_follows_the_documented_example() {
    // The gateway document's example (1.2.3.1): query `c=3&a=1&b=2`, the JSON body, secret
    // `d1209cfefe895364e03`, timestamp `20201101021435`.
    let q = sorted_query(Some("c=3&a=1&b=2"));
    assert_eq!(q, "a=1&b=2&c=3");
    assert_eq!(
        sign(
            &q,
            r#"{"name":"xf","age":"dd"}"#,
            "d1209cfefe895364e03",
            "20201101021435"
        ),
        "3863613035653132306631333231313733383637376333326536316631643934"
    );
}
