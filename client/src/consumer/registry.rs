//! One consumer per (client id, group) in a process. RocketMQ's client instance refuses a
//! second registration of a group ("The consumer group has been created before"); without the
//! check two members with the same client id would each claim every queue in a rebalance.

use std::collections::BTreeSet;

use parking_lot::Mutex;

use crate::error::ClientError;

static CLAIMED: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());

/// Held while a consumer runs; released at shutdown or when dropped.
#[derive(Debug)]
pub(crate) struct GroupClaim {
    key: (String, String),
}

impl GroupClaim {
    pub fn take(client_id: &str, group: &str) -> Result<Self, ClientError> {
        let key = (client_id.to_owned(), group.to_owned());
        if !CLAIMED.lock().insert(key.clone()) {
            return Err(ClientError::Invalid(format!(
                "consumer group {group} is already running in this process as client {client_id}; \
                 give each consumer of a group its own instanceName"
            )));
        }
        Ok(Self { key })
    }
}

impl Drop for GroupClaim {
    fn drop(&mut self) {
        CLAIMED.lock().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_claimed_once_per_client_id() {
        let first = GroupClaim::take("10.0.0.1@a", "registry-test").expect("first claim");
        let again = GroupClaim::take("10.0.0.1@a", "registry-test");
        assert!(matches!(again, Err(ClientError::Invalid(ref m)) if m.contains("instanceName")));
        let other = GroupClaim::take("10.0.0.1@b", "registry-test").expect("other instance");
        drop(first);
        let after = GroupClaim::take("10.0.0.1@a", "registry-test").expect("claim after release");
        drop((other, after));
    }
}
