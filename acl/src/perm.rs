//! Permissions as RocketMQ's plain ACL spells and checks them.

use std::fmt;

/// A set of permission bits: DENY, ANY (needed only), PUB, SUB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Perm(u8);

impl Perm {
    pub const DENY: Perm = Perm(1);
    /// Needed by requests that any of PUB or SUB may make (a route query).
    pub const ANY: Perm = Perm(2);
    pub const PUB: Perm = Perm(4);
    pub const SUB: Perm = Perm(8);
    pub const PUB_SUB: Perm = Perm(4 | 8);

    /// Reads `DENY`, `PUB`, `SUB`, `PUB|SUB` or `SUB|PUB`; anything else is `None`.
    pub fn parse(text: &str) -> Option<Perm> {
        match text.trim() {
            "DENY" => Some(Perm::DENY),
            "PUB" => Some(Perm::PUB),
            "SUB" => Some(Perm::SUB),
            "PUB|SUB" | "SUB|PUB" => Some(Perm::PUB_SUB),
            _ => None,
        }
    }

    fn has(self, other: Perm) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether an account owning `self` may do what needs `needed`: DENY refuses all,
    /// ANY is met by PUB or SUB, otherwise one needed bit must be owned.
    pub fn grants(self, needed: Perm) -> bool {
        if self.has(Perm::DENY) {
            return false;
        }
        if needed.has(Perm::ANY) {
            return self.has(Perm::PUB) || self.has(Perm::SUB);
        }
        self.has(needed)
    }
}

impl fmt::Display for Perm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match *self {
            Perm::DENY => "DENY",
            Perm::ANY => "ANY",
            Perm::PUB => "PUB",
            Perm::SUB => "SUB",
            Perm::PUB_SUB => "PUB|SUB",
            _ => "?",
        };
        f.write_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rocketmq_spellings() {
        assert_eq!(Perm::parse(" PUB|SUB "), Some(Perm::PUB_SUB));
        assert_eq!(Perm::parse("SUB|PUB"), Some(Perm::PUB_SUB));
        assert_eq!(Perm::parse("DENY"), Some(Perm::DENY));
        assert_eq!(Perm::parse("pub"), None);
        assert_eq!(Perm::parse(""), None);
    }

    #[test]
    fn grants_as_rocketmq_checks() {
        assert!(Perm::PUB.grants(Perm::PUB));
        assert!(!Perm::SUB.grants(Perm::PUB));
        assert!(Perm::PUB_SUB.grants(Perm::SUB));
        assert!(!Perm::DENY.grants(Perm::PUB));
        assert!(Perm::SUB.grants(Perm::ANY));
        assert!(!Perm::DENY.grants(Perm::ANY));
    }
}
