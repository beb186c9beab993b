//! Users and their policies held by brokers, as servers without a store of their own see
//! them (mqproxy, the name server): read with AUTH_GET_USER and AUTH_GET_ACL from the first
//! master that answers and cached for a while, unknown users too, so a stream of made-up
//! names costs the brokers one lookup per name and period at most. The transport is the
//! caller's ([`AskBroker`]); this module holds no socket.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use stellmq_protocol::body::auth::{AclInfo, UserInfo};
use stellmq_protocol::body::fastjson;
use stellmq_protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use super::info::{AclInfoExt, UserInfoExt};
use super::model::{user_subject, Acl, User};

/// How a server sends one request to a broker.
pub trait AskBroker: Send + Sync {
    fn ask(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> impl Future<Output = Result<RemotingCommand, String>> + Send;
}

/// A user and its policies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub user: User,
    pub acl: Option<Acl>,
}

/// The most users remembered; beyond it the cache starts over.
const MAX_CACHED: usize = 10_000;

/// What was read of a user (`None`: no such user) and when.
type Known = (Option<Arc<Subject>>, Instant);

pub struct RemoteSubjects {
    ttl: Duration,
    cache: Mutex<HashMap<String, Known>>,
}

impl RemoteSubjects {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            cache: Mutex::default(),
        }
    }

    /// What is known of `username` and still fresh: `Some(None)` for a user known not to
    /// exist, `None` when it must be read.
    pub fn cached(&self, username: &str) -> Option<Option<Arc<Subject>>> {
        let cache = self.cache.lock();
        let (known, at) = cache.get(username)?;
        (at.elapsed() < self.ttl).then(|| known.clone())
    }

    /// The user `username` and its policies as the first answering master of `masters`
    /// holds them (remembered); `None` when it has no such user.
    pub async fn load(
        &self,
        broker: &impl AskBroker,
        masters: &[String],
        username: &str,
    ) -> Result<Option<Arc<Subject>>, String> {
        let subject = fetch(broker, masters, username).await?.map(Arc::new);
        let mut cache = self.cache.lock();
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(username.to_owned(), (subject.clone(), Instant::now()));
        Ok(subject)
    }
}

async fn fetch(
    broker: &impl AskBroker,
    masters: &[String],
    username: &str,
) -> Result<Option<Subject>, String> {
    if masters.is_empty() {
        // No broker registered yet: nobody but the server's own users exists.
        return Ok(None);
    }
    let mut last_error = String::new();
    for addr in masters {
        match fetch_from(broker, addr, username).await {
            Ok(subject) => return Ok(subject),
            Err(e) => last_error = e,
        }
    }
    Err(last_error)
}

async fn fetch_from(
    broker: &impl AskBroker,
    addr: &str,
    username: &str,
) -> Result<Option<Subject>, String> {
    let user: Option<UserInfo> = ask_json(
        broker,
        addr,
        RequestCode::AUTH_GET_USER,
        "username",
        username,
    )
    .await?;
    let Some(user) = user.and_then(|u| u.to_new_user(username).ok()) else {
        return Ok(None);
    };
    let subject = user_subject(username);
    let acl: Option<AclInfo> =
        ask_json(broker, addr, RequestCode::AUTH_GET_ACL, "subject", &subject).await?;
    let acl = acl.and_then(|a| a.to_acl(&subject).ok());
    Ok(Some(Subject { user, acl }))
}

async fn ask_json<T: serde::de::DeserializeOwned>(
    broker: &impl AskBroker,
    addr: &str,
    code: RequestCode,
    field: &str,
    value: &str,
) -> Result<Option<T>, String> {
    let mut fields = ExtFields::new();
    fields.insert(field, value);
    let response = broker
        .ask(addr, RemotingCommand::request(code, fields))
        .await?;
    if response.code != ResponseCode::SUCCESS.as_i32() {
        return Err(format!(
            "{addr} answered {code:?} with {}: {}",
            response.code,
            response.remark_str()
        ));
    }
    if response.body.is_empty() {
        return Ok(None);
    }
    fastjson::decode(&response.body)
        .map(Some)
        .map_err(|e| format!("{addr}: {code:?} body: {e}"))
}
