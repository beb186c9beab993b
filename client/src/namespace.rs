//! Optional namespaces: resources are named `<namespace>%<name>` on the broker, as RocketMQ's
//! `NamespaceUtil` does (`%RETRY%` and `%DLQ%` prefixes stay in front).

const RETRY_PREFIX: &str = "%RETRY%";
const DLQ_PREFIX: &str = "%DLQ%";

/// `name` inside `namespace` (unchanged without one, or if already wrapped).
pub fn wrap(namespace: Option<&str>, name: &str) -> String {
    let Some(ns) = active(namespace) else {
        return name.to_owned();
    };
    // One retry or dead-letter prefix is kept in front, as Java's `NamespaceUtil` keeps it
    // (never peeled repeatedly: a name of a million prefixes is one step, not a million).
    let (prefix, rest) = [RETRY_PREFIX, DLQ_PREFIX]
        .into_iter()
        .find_map(|prefix| Some((prefix, name.strip_prefix(prefix)?)))
        .unwrap_or(("", name));
    let already = rest
        .strip_prefix(ns)
        .is_some_and(|after| after.starts_with('%'));
    if already {
        name.to_owned()
    } else {
        format!("{prefix}{ns}%{rest}")
    }
}

/// [`wrap`] of `name` where it is (no copy without a namespace).
pub fn wrap_in_place(namespace: Option<&str>, name: &mut String) {
    if active(namespace).is_some() {
        *name = wrap(namespace, name);
    }
}

/// A namespace that applies (an empty one does not).
fn active(namespace: Option<&str>) -> Option<&str> {
    namespace.filter(|ns| !ns.is_empty())
}

/// The application's name for a broker-side resource name.
pub fn unwrap<'a>(namespace: Option<&str>, name: &'a str) -> &'a str {
    match active(namespace) {
        Some(ns) => name
            .strip_prefix(ns)
            .and_then(|rest| rest.strip_prefix('%'))
            .unwrap_or(name),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_like_rocketmq() {
        assert_eq!(wrap(Some("ns1"), "Orders"), "ns1%Orders");
        assert_eq!(wrap(Some("ns1"), "ns1%Orders"), "ns1%Orders");
        assert_eq!(wrap(Some("ns1"), "%RETRY%group"), "%RETRY%ns1%group");
        assert_eq!(wrap(None, "Orders"), "Orders");
        assert_eq!(unwrap(Some("ns1"), "ns1%Orders"), "Orders");
        assert_eq!(unwrap(Some("ns1"), "Other"), "Other");
        assert_eq!(wrap(Some("ns1"), "%DLQ%ns1%g"), "%DLQ%ns1%g");
    }

    #[test]
    fn a_name_of_many_prefixes_is_wrapped_in_one_step() {
        let name = "%RETRY%".repeat(1_000_000);
        let wrapped = wrap(Some("ns"), &name);
        assert!(
            wrapped.starts_with("%RETRY%ns%%RETRY%"),
            "{}",
            &wrapped[..20]
        );
        assert_eq!(wrapped.len(), name.len() + 3);
    }
}
