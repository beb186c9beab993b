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
