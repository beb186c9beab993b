//! ACL 1.0 to 2.0, as RocketMQ's `migrateAuthFromV1Enabled` does it: each plain_acl.yml
//! account becomes a user (admin accounts Super users), its topic and group permissions
//! a custom policy and its default permissions a default policy on `Topic:*` and
//! `Group:*`. Address white lists are not carried over (ACL 2.0 has per-entry source
//! addresses instead). An account whose user already exists is left alone.

use super::info::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
use super::registry::AuthRegistry;
use super::AuthError;
use crate::file::{AccountConfig, PlainAclFile};

/// What a migration did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Migrated {
    pub users: usize,
    pub skipped: usize,
    pub failed: usize,
}

/// Migrates every account of `files` (the first file naming an access key wins).
pub fn migrate(registry: &AuthRegistry, files: &[PlainAclFile]) -> Migrated {
    let mut done = Migrated::default();
    let mut seen = std::collections::HashSet::new();
    for account in files.iter().flat_map(|f| f.accounts.iter()) {
        let Some(access_key) = account.access_key.as_deref().map(str::trim) else {
            continue;
        };
        if access_key.is_empty() || !seen.insert(access_key.to_owned()) {
            continue;
        }
        if registry.user(access_key).is_some() {
            done.skipped += 1;
            continue;
        }
        match migrate_account(registry, access_key, account) {
            Ok(()) => done.users += 1,
            Err(e) => {
                done.failed += 1;
                tracing::warn!(access_key, error = %e, "[ACL MIGRATE] cannot migrate this account");
            }
        }
    }
    done
}

fn migrate_account(
    registry: &AuthRegistry,
    access_key: &str,
    account: &AccountConfig,
) -> Result<(), AuthError> {
    let user = UserInfo {
        username: Some(access_key.to_owned()),
        password: account.secret_key.clone(),
        user_type: Some(if account.admin { "Super" } else { "Normal" }.to_owned()),
        user_status: None,
    };
    let mut policies = Vec::new();
    let custom: Vec<_> = account
        .topic_perms
        .iter()
        .filter_map(|p| perm_entry("Topic", p))
        .chain(
            account
                .group_perms
                .iter()
                .filter_map(|p| perm_entry("Group", p)),
        )
        .collect();
    if !custom.is_empty() {
        policies.push(PolicyInfo {
            policy_type: Some("Custom".to_owned()),
            entries: Some(custom),
        });
    }
    let defaults: Vec<_> = [
        ("Topic:*", &account.default_topic_perm),
        ("Group:*", &account.default_group_perm),
    ]
    .into_iter()
    .filter_map(|(resource, perm)| perm.as_deref().map(|p| entry(resource.to_owned(), p)))
    .collect();
    if !defaults.is_empty() {
        policies.push(PolicyInfo {
            policy_type: Some("Default".to_owned()),
            entries: Some(defaults),
        });
    }
    registry.create_user(access_key, &user)?;
    if !policies.is_empty() {
        let acl = AclInfo {
            subject: Some(super::model::user_subject(access_key)),
            policies: Some(policies),
        };
        registry.put_acl(&super::model::user_subject(access_key), &acl)?;
    }
    Ok(())
}

/// `name=PERM` (exactly one `=`) as an entry on `<kind>:<name>`.
fn perm_entry(kind: &str, item: &str) -> Option<PolicyEntryInfo> {
    let mut parts = item.split('=');
    let (name, perm) = (parts.next()?.trim(), parts.next()?.trim());
    if parts.next().is_some() || name.is_empty() {
        return None;
    }
    let name = name.strip_prefix("%RETRY%").unwrap_or(name);
    Some(entry(format!("{kind}:{name}"), perm))
}

/// PUB, SUB and PUB|SUB allow those actions; DENY (and anything else) speaks of All, and
/// only an explicit non-DENY permission allows.
fn entry(resource: String, perm: &str) -> PolicyEntryInfo {
    let perm = perm.trim().to_ascii_uppercase();
    let actions: &[&str] = match perm.as_str() {
        "PUB" => &["Pub"],
        "SUB" => &["Sub"],
        "PUB|SUB" | "SUB|PUB" => &["Pub", "Sub"],
        _ => &["All"],
    };
    let decision = if perm.is_empty() || perm == "DENY" {
        "Deny"
    } else {
        "Allow"
    };
    PolicyEntryInfo {
        resource: Some(resource),
        actions: Some(actions.iter().map(|a| (*a).to_owned()).collect()),
        source_ips: None,
        decision: Some(decision.to_owned()),
    }
}
