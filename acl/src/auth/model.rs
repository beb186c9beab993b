//! ACL 2.0's model (RocketMQ 5.3+): users, and per subject a list of policies whose entries
//! allow or deny actions on resources. Names and spellings are RocketMQ's, so users and
//! policies written by its mqadmin read the same here.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::AuthError;

/// Defines an enum spelled on the wire by name, read case-insensitively as RocketMQ does.
macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Case-insensitive, as RocketMQ's `getByName`.
            pub fn by_name(text: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|v| v.name().eq_ignore_ascii_case(text.trim()))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                $name::by_name(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!(concat!("unknown ", stringify!($name), " {:?}"), text))
                })
            }
        }
    };
}

named_enum!(
    /// Super users pass every authorization; normal users need policies.
    UserType { Super => "Super", Normal => "Normal" }
);
named_enum!(
    /// A disabled user cannot sign in.
    UserStatus { Enable => "enable", Disable => "disable" }
);
named_enum!(
    /// What a request does to a resource. `Any` only appears in what a request asks for
    /// (any action matches); `All` only in policies (every action is granted or denied).
    Action {
        All => "All",
        Any => "Any",
        Pub => "Pub",
        Sub => "Sub",
        Create => "Create",
        Update => "Update",
        Delete => "Delete",
        Get => "Get",
        List => "List",
    }
);
named_enum!(
    ResourceType {
        Any => "Any",
        Cluster => "Cluster",
        Namespace => "Namespace",
        Topic => "Topic",
        Group => "Group",
    }
);
named_enum!(ResourcePattern { Any => "ANY", Literal => "LITERAL", Prefixed => "PREFIXED" });
named_enum!(Decision { Allow => "Allow", Deny => "Deny" });
named_enum!(
    /// Custom policies are what users write; default ones apply when no custom entry
    /// matches.
    PolicyType { Custom => "Custom", Default => "Default" }
);

/// A user of ACL 2.0.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub username: String,
    pub password: String,
    pub user_type: UserType,
    pub user_status: UserStatus,
}

impl fmt::Debug for User {
    // The password never reaches a log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("User")
            .field("username", &self.username)
            .field("user_type", &self.user_type)
            .field("user_status", &self.user_status)
            .finish_non_exhaustive()
    }
}

/// The subject key of a user: `User:<name>`.
pub fn user_subject(username: &str) -> String {
    format!("User:{username}")
}

/// The user a subject key names (`User:<name>`, the type read case-insensitively).
pub fn subject_user(subject: &str) -> Option<&str> {
    let (kind, name) = subject.split_once(':')?;
    (kind.eq_ignore_ascii_case("User") && !name.trim().is_empty()).then_some(name)
}

/// A resource as policies name it (`Topic:orders`, `Group:app-*`, `Topic:*`, `*`) and as
/// requests touch it (always literal).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resource {
    pub kind: ResourceType,
    /// Empty for the ANY pattern.
    pub name: String,
    pub pattern: ResourcePattern,
}

impl Resource {
    pub fn literal(kind: ResourceType, name: impl Into<String>) -> Resource {
        Resource {
            kind,
            name: name.into(),
            pattern: ResourcePattern::Literal,
        }
    }

    pub fn topic(name: &str) -> Resource {
        Resource::literal(ResourceType::Topic, name)
    }

    /// A group; a `%RETRY%<group>` or `%DLQ%<group>` name means the group, as in RocketMQ.
    pub fn group(name: &str) -> Resource {
        let name = name
            .strip_prefix("%RETRY%")
            .or_else(|| name.strip_prefix("%DLQ%"))
            .unwrap_or(name);
        Resource::literal(ResourceType::Group, name)
    }

    pub fn cluster(name: &str) -> Resource {
        Resource::literal(ResourceType::Cluster, name)
    }

    /// Parses a resource key as RocketMQ writes it; `None` when the type is unknown.
    pub fn parse(key: &str) -> Option<Resource> {
        let key = key.trim();
        if key.is_empty() {
            return None;
        }
        if key == "*" {
            return Some(Resource {
                kind: ResourceType::Any,
                name: String::new(),
                pattern: ResourcePattern::Any,
            });
        }
        let (kind, name) = key.split_once(':').unwrap_or((key, ""));
        let kind = ResourceType::by_name(kind)?;
        let (name, pattern) = if name == "*" {
            (String::new(), ResourcePattern::Any)
        } else if let Some(prefix) = name.strip_suffix('*') {
            (prefix.to_owned(), ResourcePattern::Prefixed)
        } else {
            (name.to_owned(), ResourcePattern::Literal)
        };
        Some(Resource {
            kind,
            name,
            pattern,
        })
    }

    /// The key RocketMQ writes: `Topic:orders`, `Group:app-*`, `Topic:*`, `*`.
    pub fn key(&self) -> String {
        if self.kind == ResourceType::Any {
            return "*".to_owned();
        }
        match self.pattern {
            ResourcePattern::Any => format!("{}:*", self.kind),
            ResourcePattern::Literal => format!("{}:{}", self.kind, self.name),
            ResourcePattern::Prefixed => format!("{}:{}*", self.kind, self.name),
        }
    }

    /// Whether this (policy) resource covers the literal resource a request touches.
    pub fn covers(&self, wanted: &Resource) -> bool {
        if self.kind == ResourceType::Any {
            return true;
        }
        if self.kind != wanted.kind {
            return false;
        }
        match self.pattern {
            ResourcePattern::Any => true,
            ResourcePattern::Literal => self.name == wanted.name,
            ResourcePattern::Prefixed => wanted.name.starts_with(&self.name),
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// A source address or network of a policy entry: `10.0.0.7`, `10.0.0.0/24`, `fd00::/8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceNet {
    addr: IpAddr,
    prefix: u8,
}

impl SourceNet {
    pub fn parse(text: &str) -> Result<SourceNet, AuthError> {
        let bad = || AuthError::Invalid("The source ip is invalid.".to_owned());
        let text = text.trim();
        if text.is_empty() {
            return Err(AuthError::Invalid("The source ip is empty.".to_owned()));
        }
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(SourceNet { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V6(v6)) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            _ => ip,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_equal(&net.octets(), &ip.octets(), self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_equal(&net.octets(), &ip.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

fn prefix_equal(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let mut left = usize::from(prefix);
    for (x, y) in a.iter().zip(b) {
        if left == 0 {
            return true;
        }
        let bits = left.min(8);
        let mask = (0xff00u16 >> bits) as u8;
        if x & mask != y & mask {
            return false;
        }
        left -= bits;
    }
    true
}

/// One entry of a policy: the actions on one resource it allows or denies, from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyEntry {
    pub resource: Resource,
    pub actions: Vec<Action>,
    /// Empty: from anywhere. Kept as written, for answers.
    pub source_ips: Vec<String>,
    pub nets: Vec<SourceNet>,
    pub decision: Decision,
}

impl PolicyEntry {
    /// Whether the entry speaks of one of the actions a request needs.
    pub fn covers_actions(&self, wanted: &[Action]) -> bool {
        if self.actions.is_empty() {
            return false;
        }
        if wanted.contains(&Action::Any) {
            return true;
        }
        wanted
            .iter()
            .any(|a| self.actions.contains(a) || self.actions.contains(&Action::All))
    }

    pub fn covers_source(&self, ip: Option<IpAddr>) -> bool {
        if self.nets.is_empty() {
            return true;
        }
        ip.is_some_and(|ip| self.nets.iter().any(|n| n.contains(ip)))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub policy_type: PolicyType,
    pub entries: Vec<PolicyEntry>,
}

/// A subject's policies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    /// `User:<name>`.
    pub subject: String,
    pub policies: Vec<Policy>,
}

impl Acl {
    pub fn policy(&self, policy_type: PolicyType) -> Option<&Policy> {
        self.policies.iter().find(|p| p.policy_type == policy_type)
    }

    /// Merges policies in as RocketMQ's createAcl/updateAcl do: an entry for a resource
    /// already there replaces its actions, addresses and decision; others are added.
    pub fn merge(&mut self, policies: Vec<Policy>) {
        for policy in policies {
            match self
                .policies
                .iter_mut()
                .find(|p| p.policy_type == policy.policy_type)
            {
                None => self.policies.push(policy),
                Some(old) => {
                    for entry in policy.entries {
                        match old
                            .entries
                            .iter_mut()
                            .find(|e| e.resource == entry.resource)
                        {
                            Some(slot) => *slot = entry,
                            None => old.entries.push(entry),
                        }
                    }
                }
            }
        }
    }

    /// Removes the entry of one resource; a policy left empty goes too.
    pub fn remove_entry(&mut self, policy_type: PolicyType, resource: &Resource) {
        if let Some(policy) = self
            .policies
            .iter_mut()
            .find(|p| p.policy_type == policy_type)
        {
            policy.entries.retain(|e| e.resource != *resource);
        }
        self.policies.retain(|p| !p.entries.is_empty());
    }
}
