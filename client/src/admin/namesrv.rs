//! Name servers: broker write permissions, the KV config (order topic configs among others)
//! and the name servers' own config.

use stellmq_remoting::protocol::headers::{
    BrokerNameRequestHeader, KvConfigKeyRequestHeader, PutKvConfigRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::broker::properties_line;
use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{bare, read, request};

impl AdminClient {
    /// WIPE_WRITE_PERM_OF_BROKER on one name server; returns the topic count.
    pub async fn wipe_write_perm(
        &self,
        namesrv: &str,
        broker_name: &str,
    ) -> Result<i32, ClientError> {
        let code = RequestCode::WIPE_WRITE_PERM_OF_BROKER;
        self.write_perm(namesrv, broker_name, code, "wipeTopicCount")
            .await
    }

    /// ADD_WRITE_PERM_OF_BROKER on one name server; returns the topic count.
    pub async fn add_write_perm(
        &self,
        namesrv: &str,
        broker_name: &str,
    ) -> Result<i32, ClientError> {
        let code = RequestCode::ADD_WRITE_PERM_OF_BROKER;
        self.write_perm(namesrv, broker_name, code, "addTopicCount")
            .await
    }

    /// A write-permission change of `broker_name`; the name server reports how many topics
    /// it changed in the response field `count_field` (0 when absent).
    async fn write_perm(
        &self,
        namesrv: &str,
        broker_name: &str,
        code: RequestCode,
        count_field: &str,
    ) -> Result<i32, ClientError> {
        let header = BrokerNameRequestHeader {
            broker_name: broker_name.to_owned(),
        };
        let count = |response: RemotingCommand| {
            Ok(response
                .ext_fields
                .get(count_field)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0))
        };
        self.ask(To::Addr(namesrv), request(code, &header), count)
            .await
    }

    /// Puts a KV config entry in every name server.
    pub async fn put_kv(&self, namespace: &str, key: &str, value: &str) -> Result<(), ClientError> {
        let header = PutKvConfigRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
        };
        self.tell_every_namesrv(request(RequestCode::PUT_KV_CONFIG, &header))
            .await
    }

    pub async fn get_kv(&self, namespace: &str, key: &str) -> Result<Option<String>, ClientError> {
        let header = KvConfigKeyRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
        };
        let request = request(RequestCode::GET_KV_CONFIG, &header);
        let value = |r: RemotingCommand| Ok(r.ext_fields.get("value").map(str::to_owned));
        let found = self
            .ask_or_none(
                To::NameServer,
                request,
                ResponseCode::QUERY_NOT_FOUND,
                value,
            )
            .await?;
        Ok(found.flatten())
    }

    /// Deletes a KV config entry in every name server.
    pub async fn delete_kv(&self, namespace: &str, key: &str) -> Result<(), ClientError> {
        let header = KvConfigKeyRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
        };
        self.tell_every_namesrv(request(RequestCode::DELETE_KV_CONFIG, &header))
            .await
    }

    pub async fn namesrv_config(&self, namesrv: &str) -> Result<String, ClientError> {
        let request = bare(RequestCode::GET_NAMESRV_CONFIG);
        self.ask(To::Addr(namesrv), request, read::text).await
    }

    pub async fn update_namesrv_config(
        &self,
        namesrv: &str,
        key: &str,
        value: &str,
    ) -> Result<(), ClientError> {
        let request =
            bare(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(properties_line(key, value));
        self.ask(To::Addr(namesrv), request, read::nothing).await
    }
}
