use super::signature::sorted_query;

#[test]
fn the_query_is_signed_sorted_by_key() {
    // The gateway document's example (1.2.3.1): query `c=3&a=1&b=2` is signed as `a=1&b=2&c=3`
    // (the `Sign` of the whole example is pinned by the gateway's own tests).
    assert_eq!(sorted_query(Some("c=3&a=1&b=2")), "a=1&b=2&c=3");
}
