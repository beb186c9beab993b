//! The accounts and white lists of every ACL file, compiled for checking requests.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::address::{self, AddressPattern};
use crate::error::AclError;
use crate::file::{AccountConfig, PlainAclFile};
use crate::perm::Perm;
use crate::resource::Resource;

/// RocketMQ refuses access and secret keys of this length or shorter.
pub const KEY_MIN_LENGTH: usize = 6;

/// One account, ready to check requests against.
pub struct Account {
    pub access_key: String,
    secret_key: String,
    white: AddressPattern,
    pub admin: bool,
    default_topic: Perm,
    default_group: Perm,
    topics: HashMap<String, Perm>,
    groups: HashMap<String, Perm>,
    /// The file the account is defined in (edits go back there).
    pub file: PathBuf,
}

impl Account {
    pub fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// Whether the peer is on this account's own white list (then no signature is needed).
    pub fn white_listed(&self, peer: IpAddr) -> bool {
        self.white.matches(peer)
    }

    /// What the account owns of a resource, and whether that came from the defaults.
    pub fn owned(&self, resource: &Resource) -> (Perm, bool) {
        let (explicit, default) = match resource {
            Resource::Topic(name) => (self.topics.get(name), self.default_topic),
            Resource::Group(name) => (self.groups.get(name), self.default_group),
        };
        match explicit {
            Some(perm) => (*perm, false),
            None => (default, true),
        }
    }
}

/// Every loaded file's accounts and global white list.
#[derive(Default)]
pub struct AclRules {
    global_white: Vec<AddressPattern>,
    accounts: HashMap<String, Account>,
    /// The files as read, for admin reads and edits.
    pub files: Vec<(PathBuf, PlainAclFile)>,
}

impl AclRules {
    /// Compiles files in order; an access key defined in two files is kept from the first.
    pub fn compile(files: Vec<(PathBuf, PlainAclFile)>) -> Result<AclRules, AclError> {
        let mut rules = AclRules::default();
        for (path, file) in &files {
            let white = address::parse_all(
                file.global_white_remote_addresses
                    .iter()
                    .map(String::as_str),
            )?;
            rules.global_white.extend(white);
            for config in &file.accounts {
                let account = compile_account(config, path)?;
                if rules.accounts.contains_key(&account.access_key) {
                    tracing::warn!(access_key = %account.access_key, file = %path.display(), "access key defined in more than one ACL file; the first is kept");
                    continue;
                }
                rules.accounts.insert(account.access_key.clone(), account);
            }
        }
        rules.files = files;
        Ok(rules)
    }

    pub fn globally_white_listed(&self, peer: IpAddr) -> bool {
        self.global_white.iter().any(|p| p.matches(peer))
    }

    pub fn account(&self, access_key: &str) -> Option<&Account> {
        self.accounts.get(access_key)
    }

    pub fn file(&self, path: &Path) -> Option<&PlainAclFile> {
        self.files.iter().find(|(p, _)| p == path).map(|(_, f)| f)
    }
}

/// Checks an account's keys as RocketMQ does: both present and longer than 6 characters.
pub fn check_keys(config: &AccountConfig) -> Result<(), String> {
    let long_enough = |key: &Option<String>| key.as_ref().is_some_and(|k| k.len() > KEY_MIN_LENGTH);
    if !long_enough(&config.access_key) || !long_enough(&config.secret_key) {
        let access_key = config.access_key.as_deref().unwrap_or("");
        return Err(format!("The accessKey={access_key} and its secretKey cannot be null and their length should be longer than {KEY_MIN_LENGTH}"));
    }
    Ok(())
}

/// A `defaultTopicPerm` / `defaultGroupPerm` value: absent means DENY, as in RocketMQ.
pub fn parse_default_perm(value: Option<&str>) -> Result<Perm, String> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(Perm::DENY),
        Some(text) => Perm::parse(text).ok_or_else(|| {
            format!("unknown permission {text:?}; expected DENY, PUB, SUB or PUB|SUB")
        }),
    }
}

/// `name=PERM` items of `topicPerms` / `groupPerms`.
pub fn parse_resource_perms(items: &[String], kind: &str) -> Result<HashMap<String, Perm>, String> {
    let mut perms = HashMap::new();
    for item in items {
        let parsed = item.split_once('=').and_then(|(name, perm)| {
            let name = name.trim();
            (!name.is_empty() && !perm.contains('=')).then_some((name, Perm::parse(perm)?))
        });
        let Some((name, perm)) = parsed else {
            return Err(format!("bad {kind} permission {item:?}; expected name=PERM with PERM one of DENY, PUB, SUB, PUB|SUB"));
        };
        perms.insert(name.to_owned(), perm);
    }
    Ok(perms)
}

fn compile_account(config: &AccountConfig, path: &Path) -> Result<Account, AclError> {
    let invalid = |reason: String| AclError::Invalid {
        path: path.to_owned(),
        reason,
    };
    check_keys(config).map_err(invalid)?;
    let white = AddressPattern::parse(config.white_remote_address.as_deref().unwrap_or(""))?;
    Ok(Account {
        access_key: config.access_key.clone().unwrap_or_default(),
        secret_key: config.secret_key.clone().unwrap_or_default(),
        white,
        admin: config.admin,
        default_topic: parse_default_perm(config.default_topic_perm.as_deref()).map_err(invalid)?,
        default_group: parse_default_perm(config.default_group_perm.as_deref()).map_err(invalid)?,
        topics: parse_resource_perms(&config.topic_perms, "topic").map_err(invalid)?,
        groups: parse_resource_perms(&config.group_perms, "group").map_err(invalid)?,
        file: path.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(ak: &str, sk: &str) -> AccountConfig {
        AccountConfig {
            access_key: Some(ak.to_owned()),
            secret_key: Some(sk.to_owned()),
            ..AccountConfig::default()
        }
    }

    fn compile(accounts: Vec<AccountConfig>) -> Result<AclRules, AclError> {
        AclRules::compile(vec![(
            PathBuf::from("a.yml"),
            PlainAclFile {
                accounts,
                ..Default::default()
            },
        )])
    }

    #[test]
    fn short_keys_and_bad_perms_refuse_the_file() {
        assert!(compile(vec![account("short", "12345678")]).is_err());
        assert!(compile(vec![account("longenough", "123456")]).is_err());
        let mut bad_perm = account("longenough", "12345678");
        bad_perm.topic_perms = vec!["topicA=PUBLISH".to_owned()];
        let e = compile(vec![bad_perm]).err().expect("refused");
        assert!(e.to_string().contains("topicA=PUBLISH"), "{e}");
        let mut no_eq = account("longenough", "12345678");
        no_eq.group_perms = vec!["groupA".to_owned()];
        assert!(compile(vec![no_eq]).is_err());
    }

    #[test]
    fn explicit_perms_win_over_defaults() {
        let mut config = account("RocketMQ", "12345678");
        config.default_topic_perm = Some("DENY".to_owned());
        config.default_group_perm = Some("SUB".to_owned());
        config.topic_perms = vec!["topicB=PUB|SUB".to_owned()];
        config.group_perms = vec!["groupA=DENY".to_owned()];
        let rules = compile(vec![config]).expect("compiles");
        let a = rules.account("RocketMQ").expect("account");
        assert_eq!(
            a.owned(&Resource::Topic("topicB".into())),
            (Perm::PUB_SUB, false)
        );
        assert_eq!(
            a.owned(&Resource::Topic("other".into())),
            (Perm::DENY, true)
        );
        assert_eq!(
            a.owned(&Resource::Group("groupA".into())),
            (Perm::DENY, false)
        );
        assert_eq!(
            a.owned(&Resource::Group("groupZ".into())),
            (Perm::SUB, true)
        );
    }

    #[test]
    fn first_definition_of_a_key_wins() {
        let mut first = account("RocketMQ", "12345678");
        first.admin = true;
        let second = account("RocketMQ", "87654321");
        let rules = AclRules::compile(vec![
            (
                PathBuf::from("a.yml"),
                PlainAclFile {
                    accounts: vec![first],
                    ..Default::default()
                },
            ),
            (
                PathBuf::from("b.yml"),
                PlainAclFile {
                    accounts: vec![second],
                    ..Default::default()
                },
            ),
        ])
        .expect("compiles");
        let a = rules.account("RocketMQ").expect("account");
        assert!(a.admin);
        assert_eq!(a.file, PathBuf::from("a.yml"));
    }
}
