//! The admin API: name server and broker admin requests with typed results, one file per
//! area as in `mqadmin` (topics, groups, offsets, brokers, messages, name servers, questions
//! to running consumers, store housekeeping).
//!
//! Every request goes through `AdminClient::ask`: a typed header in, the answer read by one
//! of `request::read`'s readers, RocketMQ's response codes mapped in `request.rs`. A request
//! that names a "nothing found" code uses `AdminClient::ask_or_none`.

mod acl;
mod auth;
mod broker;
mod consumer;
mod group;
mod lite;
mod maintenance;
mod message;
mod namesrv;
mod offset;
mod topic;

use std::time::Duration;

use stellmq_remoting::net::tls::{ClientTls, ClientTlsConfig};
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::signature::SessionCredentials;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use crate::error::ClientError;
use crate::request::{answer, answer_or_none, read};

pub use stellmq_remoting::protocol::message::now_ms;

const TIMEOUT: Duration = Duration::from_secs(5);

/// Talks to name servers (first that answers) and brokers (by address).
pub struct AdminClient {
    namesrv: Vec<String>,
    remoting: RemotingClient,
    timeout: Duration,
}

/// Where an admin request goes.
#[derive(Debug, Clone, Copy)]
enum To<'a> {
    /// One broker or name server, by address.
    Addr(&'a str),
    /// The name servers in turn: the first that answers at all decides.
    NameServer,
}

impl To<'_> {
    /// How errors name the one that answered.
    fn label(&self) -> &str {
        match self {
            To::Addr(addr) => addr,
            To::NameServer => "name server",
        }
    }
}

impl AdminClient {
    /// `namesrv` is RocketMQ's `ip:port;ip:port` list.
    pub fn new(namesrv: &str) -> Result<Self, ClientError> {
        Self::connect(namesrv, &ClientTlsConfig::default(), None)
    }

    /// An admin client whose connections use `tls` (when enabled).
    pub fn with_tls(namesrv: &str, tls: &ClientTlsConfig) -> Result<Self, ClientError> {
        Self::connect(namesrv, tls, None)
    }

    /// Like [`Self::new`]; with `credentials`, every request is signed (plain ACL), as
    /// RocketMQ's `DefaultMQAdminExt(rpcHook)` signs.
    pub fn with_credentials(
        namesrv: &str,
        credentials: Option<SessionCredentials>,
    ) -> Result<Self, ClientError> {
        Self::connect(namesrv, &ClientTlsConfig::default(), credentials)
    }

    /// An admin client with TLS settings and, optionally, credentials to sign with.
    pub fn connect(
        namesrv: &str,
        tls: &ClientTlsConfig,
        credentials: Option<SessionCredentials>,
    ) -> Result<Self, ClientError> {
        let list = crate::namesrv::parse_list(namesrv);
        if list.is_empty() {
            return Err(ClientError::NoNameServer);
        }
        let config = ClientConfig {
            tls: ClientTls::from_config(tls)?,
            credentials,
            ..ClientConfig::default()
        };
        Ok(Self {
            namesrv: list,
            remoting: RemotingClient::new(config),
            timeout: TIMEOUT,
        })
    }

    pub fn name_servers(&self) -> &[String] {
        &self.namesrv
    }

    /// Sends to one address and requires SUCCESS.
    pub async fn call(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        self.ask(To::Addr(addr), request, Ok).await
    }

    /// Sends to one address, returning any response code.
    pub async fn call_any(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        self.exchange(To::Addr(addr), request).await
    }

    pub async fn shutdown(&self) {
        self.remoting.shutdown().await;
    }

    /// Sends `request` and returns the response, whatever its code.
    async fn exchange(
        &self,
        to: To<'_>,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        match to {
            To::Addr(addr) => Ok(self.remoting.invoke(addr, request, self.timeout).await?),
            To::NameServer => {
                let any = |_: &RemotingCommand| true;
                crate::namesrv::ask_in_turn(
                    &self.remoting,
                    &self.namesrv,
                    &request,
                    self.timeout,
                    any,
                )
                .await
            }
        }
    }

    /// The one request helper: sends `request` to `to` and reads a SUCCESS answer with `read`;
    /// any other response code is the remote's refusal.
    async fn ask<T>(
        &self,
        to: To<'_>,
        request: RemotingCommand,
        read: impl FnOnce(RemotingCommand) -> Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        let response = self.exchange(to, request).await?;
        answer(to.label(), response, read)
    }

    /// Like [`Self::ask`], but `none` (the request's "nothing found" code) is `None`.
    async fn ask_or_none<T>(
        &self,
        to: To<'_>,
        request: RemotingCommand,
        none: ResponseCode,
        read: impl FnOnce(RemotingCommand) -> Result<T, ClientError>,
    ) -> Result<Option<T>, ClientError> {
        let response = self.exchange(to, request).await?;
        answer_or_none(to.label(), response, none, read)
    }

    /// Sends `request` to every name server in turn; the first refusal stops it.
    async fn tell_every_namesrv(&self, request: RemotingCommand) -> Result<(), ClientError> {
        for ns in &self.namesrv {
            self.ask(To::Addr(ns), request.clone(), read::nothing)
                .await?;
        }
        Ok(())
    }
}
