//! The authorization decision of ACL 2.0, in RocketMQ's order: a super user may do
//! anything; otherwise, per resource a request touches, the entries of the subject's custom
//! policy that cover the resource, one of the actions and the source address are taken
//! (the default policy's when no custom entry does), the most specific resource first
//! (literal, then the longest prefix, then any; a Deny before an Allow of the same rank),
//! and the first one decides. No matching entry is a refusal.

use std::cmp::Reverse;
use std::net::IpAddr;

use super::model::{
    Acl, Action, Decision, PolicyEntry, PolicyType, Resource, ResourcePattern, ResourceType, User,
    UserType,
};

/// What a request needs: actions on one resource (any of them suffices, as RocketMQ's
/// `isMatchAction`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub resource: Resource,
    pub actions: Vec<Action>,
}

impl Need {
    pub fn new(resource: Resource, actions: &[Action]) -> Need {
        Need {
            resource,
            actions: actions.to_vec(),
        }
    }
}

/// Whether `user` (with its ACL) may do everything in `needs` from `source`; the refusal
/// text names the subject, the resource and the address, never a secret.
pub fn authorize(
    user: &User,
    acl: Option<&Acl>,
    needs: &[Need],
    source: Option<IpAddr>,
) -> Result<(), String> {
    if user.user_type == UserType::Super {
        return Ok(());
    }
    for need in needs {
        let refuse = |detail: &str| {
            let from = source.map(|ip| ip.to_string()).unwrap_or_default();
            format!(
                "User:{} has no permission to access {} from {from}, {detail}",
                user.username, need.resource
            )
        };
        let Some(acl) = acl else {
            return Err(refuse("no matched policies."));
        };
        match deciding_entry(acl, need, source).map(|e| e.decision) {
            None => return Err(refuse("no matched policies.")),
            Some(Decision::Deny) => return Err(refuse("the decision is deny.")),
            Some(Decision::Allow) => {}
        }
    }
    Ok(())
}

/// The entry that decides `need`, if any covers it.
pub fn deciding_entry<'a>(
    acl: &'a Acl,
    need: &Need,
    source: Option<IpAddr>,
) -> Option<&'a PolicyEntry> {
    let deciding = |policy_type| {
        acl.policy(policy_type)
            .into_iter()
            .flat_map(|p| p.entries.iter())
            .filter(|e| {
                e.resource.covers(&need.resource)
                    && e.covers_actions(&need.actions)
                    && e.covers_source(source)
            })
            .min_by_key(|e| specificity(e))
    };
    deciding(PolicyType::Custom).or_else(|| deciding(PolicyType::Default))
}

/// Sort key: smaller is more specific.
fn specificity(entry: &PolicyEntry) -> (bool, u8, Reverse<usize>, bool) {
    let r = &entry.resource;
    let pattern = match r.pattern {
        ResourcePattern::Literal => 0,
        ResourcePattern::Prefixed => 1,
        ResourcePattern::Any => 2,
    };
    let prefix_len = if r.pattern == ResourcePattern::Prefixed {
        r.name.len()
    } else {
        0
    };
    (
        r.kind == ResourceType::Any,
        pattern,
        Reverse(prefix_len),
        entry.decision != Decision::Deny,
    )
}
