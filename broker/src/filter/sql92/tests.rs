use std::collections::HashMap;

use super::*;

fn check(selector: &str, props: &[(&str, &str)]) -> bool {
    let map: HashMap<&str, &str> = props.iter().copied().collect();
    Selector::parse(selector)
        .unwrap_or_else(|e| panic!("{selector}: {e}"))
        .matches(|k| map.get(k).copied())
}

#[test]
fn the_documented_example() {
    let selector = "a > 5 AND b = 'abc'";
    assert!(check(selector, &[("a", "10"), ("b", "abc"), ("c", "true")]));
    assert!(!check(selector, &[("a", "1"), ("b", "abc"), ("c", "true")]));
}

#[test]
fn numeric_comparisons_convert_property_strings() {
    let props = [("a", "7"), ("f", "2.5")];
    for yes in [
        "a = 7",
        "a >= 7",
        "a <= 7.0",
        "a > 6.5",
        "a < 8",
        "a BETWEEN 1 AND 7",
        "a NOT BETWEEN 8 AND 9",
        "f > 2",
        "f = 2.5",
        "-a < 0",
        "a > -1",
        "a = 7L",
        "f < 3e0",
    ] {
        assert!(check(yes, &props), "{yes}");
    }
    for no in [
        "a <> 7",
        "a > 7",
        "a BETWEEN 8 AND 9",
        "f > 3",
        "a = 'seven'",
    ] {
        assert!(!check(no, &props), "{no}");
    }
    assert!(!check("x > 1", &[("x", "not a number")]));
}

#[test]
fn strings_in_and_is_null() {
    let props = [("region", "eu-west"), ("TAGS", "TagA")];
    for yes in [
        "region = 'eu-west'",
        "region <> 'us'",
        "region IN ('us', 'eu-west')",
        "region NOT IN ('us')",
        "TAGS = 'TagA'",
        "missing IS NULL",
        "region IS NOT NULL",
        "region CONTAINS 'west'",
        "region NOT CONTAINS 'east'",
        "region STARTSWITH 'eu'",
        "region ENDSWITH 'west'",
        "region = 'eu-west' -- a comment",
        "/* leading */ region = 'eu-west'",
    ] {
        assert!(check(yes, &props), "{yes}");
    }
    assert!(check("q = 'it''s'", &[("q", "it's")]));
}

#[test]
fn missing_properties_are_unknown_in_three_valued_logic() {
    let props = [("a", "1")];
    assert!(!check("b = 1", &props));
    assert!(!check("NOT (b = 1)", &props), "NOT unknown is unknown");
    assert!(!check("b IN ('x')", &props));
    assert!(!check("b NOT IN ('x')", &props));
    assert!(check("b = 1 OR a = 1", &props), "unknown OR true");
    assert!(!check("b = 1 AND a = 1", &props), "unknown AND true");
    assert!(
        check("NOT (b = 1 AND a = 2)", &props),
        "unknown AND false is false"
    );
}

#[test]
fn logic_precedence_and_booleans() {
    let props = [("a", "1"), ("b", "2"), ("flag", "true"), ("off", "FALSE")];
    assert!(
        check("a = 1 OR a = 2 AND b = 3", &props),
        "AND binds tighter"
    );
    assert!(!check("(a = 1 OR a = 2) AND b = 3", &props));
    assert!(check("flag", &props));
    assert!(check("flag = TRUE", &props));
    assert!(!check("off", &props));
    assert!(check("NOT off", &props));
    assert!(check("TRUE", &[]));
    assert!(!check("FALSE OR NULL IS NOT NULL", &[]));
    assert!(check("a = 1 and b = 2", &props), "keywords in any case");
}

#[test]
fn bad_selectors_are_refused() {
    for bad in [
        "",
        "a >",
        "a = 'unterminated",
        "a IN (1, 2)",
        "5",
        "a = 1 b",
        "(a = 1",
        "a BETWEEN 1",
        "a ! 1",
        "5 AND a = 1",
        "a = 007",
        "a IS 5",
    ] {
        assert!(Selector::parse(bad).is_err(), "{bad:?} should not parse");
    }
}

fn refused_as_too_deep(selector: &str) {
    match Selector::parse(selector) {
        Err(SqlError(msg)) => assert!(msg.contains("deeper than"), "{msg}"),
        Ok(_) => panic!("a selector nesting too deep was accepted"),
    }
}

/// Before the depth limit, each of these overflowed the stack and aborted the broker.
#[test]
fn deep_nesting_is_a_parse_error_not_a_stack_overflow() {
    let n = MAX_SELECTOR_LEN / 16;
    refused_as_too_deep(&"(".repeat(n));
    refused_as_too_deep(&format!("{}a = 1{}", "(".repeat(n), ")".repeat(n)));
    refused_as_too_deep(&format!("{}a", "NOT ".repeat(n)));
    refused_as_too_deep(&format!("a = {}1", "- ".repeat(n)));
    refused_as_too_deep(&format!("a = {}1", "+".repeat(n)));
    // Chained comparisons build a tree as high as the chain is long.
    refused_as_too_deep(&format!("a{}", " > 1".repeat(n)));
    refused_as_too_deep(&format!("a{}", " = 1".repeat(n)));
    refused_as_too_deep(&format!("a{}", " IS NULL".repeat(n)));
    refused_as_too_deep(&format!("a{}", " BETWEEN 1 AND 2".repeat(200)));
    // The parser's own guard holds whatever the length limit.
    for huge in ["(".repeat(100_000), "NOT ".repeat(100_000) + "a"] {
        let tokens = super::lex::tokenize(&huge).expect("tokens");
        let err = super::parse::Parser::new(tokens)
            .selector()
            .expect_err("too deep");
        assert!(err.0.contains("deeper than"), "{err}");
    }
    assert!(Selector::parse(&"(".repeat(100_000)).is_err());
}

#[test]
fn the_depth_limit_is_exact() {
    let nested = |levels: usize| format!("{}a = 1{}", "(".repeat(levels), ")".repeat(levels));
    assert!(check(&nested(MAX_DEPTH), &[("a", "1")]));
    refused_as_too_deep(&nested(MAX_DEPTH + 1));
    // `NOT` over a property: the property is one level, each NOT one more.
    let nots = |n: usize| format!("{}flag", "NOT ".repeat(n));
    assert!(check(&nots(MAX_DEPTH - 2), &[("flag", "true")]));
    refused_as_too_deep(&nots(MAX_DEPTH));
}

#[test]
fn long_and_or_chains_are_one_level() {
    let terms = MAX_SELECTOR_LEN / 12;
    let ors = vec!["a = 2"; terms].join(" OR ") + " OR a = 1";
    assert!(ors.len() <= MAX_SELECTOR_LEN);
    assert!(check(&ors, &[("a", "1")]));
    assert!(!check(&ors, &[("a", "3")]));
    let ands = vec!["a = 1"; terms].join(" AND ");
    assert!(check(&ands, &[("a", "1")]));
    assert!(!check(&(ands + " AND b = 1"), &[("a", "1")]));
}

#[test]
fn over_long_selectors_are_refused() {
    let longest = format!("a = '{}'", "x".repeat(MAX_SELECTOR_LEN - 6));
    assert_eq!(longest.len(), MAX_SELECTOR_LEN);
    assert!(Selector::parse(&longest).is_ok());
    let err = Selector::parse(&format!("{longest} ")).expect_err("too long");
    assert!(err.0.contains("bytes long"), "{err}");
}

#[test]
fn between_keeps_three_valued_logic() {
    assert!(!check("a BETWEEN 1 AND b", &[("a", "1")]), "unknown bound");
    assert!(
        !check("a NOT BETWEEN 1 AND b", &[("a", "1")]),
        "NOT unknown is unknown"
    );
    assert!(
        check("a NOT BETWEEN 2 AND b", &[("a", "1")]),
        "false AND unknown is false"
    );
}
