//! Optional namespaces: resources are named `<namespace>%<name>` on the broker, as RocketMQ's
//! `NamespaceUtil` does (`%RETRY%` and `%DLQ%` prefixes stay in front).

const RETRY_PREFIX: &str = "%RETRY%";
const DLQ_PREFIX: &str = "%DLQ%";

/// `name` inside `namespace` (unchanged without one, or if already wrapped).
pub fn wrap(namespace: Option<&str>, name: &str) -> String {
    let Some(ns) = active(namespace) else {
        return name.to_owned();
    };
    for prefix in [RETRY_PREFIX, DLQ_PREFIX] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return format!("{prefix}{}", wrap(Some(ns), rest));
        }
    }
    if name.starts_with(&format!("{ns}%")) {
        name.to_owned()
    } else {
        format!("{ns}%{name}")
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
    }
}
