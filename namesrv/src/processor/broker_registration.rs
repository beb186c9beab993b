//! REGISTER_BROKER, UNREGISTER_BROKER, BROKER_HEARTBEAT and QUERY_DATA_VERSION.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use stellmq_remoting::net::{
    ProcessFuture, ProcessResult, ProcessorError, RequestContext, RequestProcessor,
};
use stellmq_remoting::protocol::body::{fastjson, DataVersion, KvTable, RegisterBrokerBody};
use stellmq_remoting::protocol::headers::{
    BrokerHeartbeatRequestHeader, CommandHeader, QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader, RegisterBrokerRequestHeader, RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::header;
use super::RouteTables;
use crate::inflate_budget::{InflateBudget, Reservation};
use crate::kv::ORDER_TOPIC_CONFIG;
use crate::route::Registration;

#[derive(Clone)]
pub struct BrokerRegistrationProcessor {
    tables: RouteTables,
    inflate_budget: Arc<InflateBudget>,
}

impl BrokerRegistrationProcessor {
    pub fn new(tables: RouteTables) -> Self {
        let budget = tables.config.read().registration_inflate_budget_bytes;
        Self {
            tables,
            inflate_budget: Arc::new(InflateBudget::new(
                usize::try_from(budget).unwrap_or(usize::MAX),
            )),
        }
    }

    /// The body of a registration: compressed ones are inflated on a blocking thread
    /// against the server's inflate budget, which they hold until the routes are updated.
    async fn read_body(
        &self,
        ctx: &RequestContext,
        h: &RegisterBrokerRequestHeader,
        body: Bytes,
    ) -> Result<(RegisterBrokerBody, Option<Reservation>), ProcessorError> {
        if body.is_empty() {
            return Ok((RegisterBrokerBody::default(), None));
        }
        if !h.compressed.unwrap_or(false) {
            return Ok((fastjson::decode::<RegisterBrokerBody>(&body)?, None));
        }
        let Some(mut reservation) = self.inflate_budget.reserve(ctx.channel.id()) else {
            return Err(ProcessorError::new(
                ResponseCode::SYSTEM_BUSY,
                "this connection is already inflating a registration body",
            ));
        };
        let max = self.tables.config.read().registration_max_inflated_bytes;
        tokio::task::spawn_blocking(move || {
            let decoded = RegisterBrokerBody::decode_compressed_charged(&body, max, |n| {
                reservation.charge(n)
            })?;
            Ok((decoded, Some(reservation)))
        })
        .await
        .map_err(|e| ProcessorError::system(format!("inflating the body failed: {e}")))?
    }

    async fn register(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessResult {
        let h: RegisterBrokerRequestHeader = header(&request)?;
        if h.broker_name.trim().is_empty() || h.broker_addr.trim().is_empty() {
            return Err(ProcessorError::system(
                "brokerName and brokerAddr must not be empty",
            ));
        }
        if let Some(expected) = h.body_crc32.filter(|crc| *crc != 0) {
            let actual = (crc32fast::hash(&request.body) & 0x7FFF_FFFF) as i32;
            if actual != expected {
                tracing::warn!(broker = %h.broker_name, addr = %h.broker_addr, expected, actual, "registration body CRC mismatch");
                return Err(ProcessorError::system("crc32 not match"));
            }
        }
        let (body, reservation) = self.read_body(&ctx, &h, request.body.clone()).await?;
        let timeout = h.heartbeat_timeout_millis.filter(|ms| *ms > 0).map_or_else(
            || Duration::from_millis(self.tables.config.read().broker_channel_expired_time),
            |ms| Duration::from_millis(ms as u64),
        );
        let outcome = self.tables.routes.register(Registration {
            cluster_name: h.cluster_name,
            broker_name: h.broker_name,
            broker_addr: h.broker_addr,
            broker_id: h.broker_id,
            ha_server_addr: h.ha_server_addr,
            topics: body.topic_config_serialize_wrapper,
            filter_servers: body.filter_server_list,
            channel_id: Some(ctx.channel.id()),
            timeout,
        });
        drop(reservation);
        let response_header = RegisterBrokerResponseHeader {
            ha_server_addr: outcome.ha_server_addr,
            master_addr: outcome.master_addr,
        };
        let mut response = request
            .success_to()
            .with_ext_fields(response_header.to_ext_fields());
        if let Some(table) = self.tables.kv.namespace(ORDER_TOPIC_CONFIG) {
            response = response.with_body(fastjson::encode(&KvTable { table }));
        }
        Ok(Some(response))
    }

    fn unregister(&self, request: &RemotingCommand) -> ProcessResult {
        let h: UnregisterBrokerRequestHeader = header(request)?;
        self.tables
            .routes
            .unregister(&h.broker_name, &h.broker_addr, h.broker_id);
        Ok(Some(request.success_to()))
    }

    fn heartbeat(&self, request: &RemotingCommand) -> ProcessResult {
        let h: BrokerHeartbeatRequestHeader = header(request)?;
        self.tables.routes.touch(&h.broker_addr);
        Ok(Some(request.success_to()))
    }

    fn query_data_version(&self, request: &RemotingCommand) -> ProcessResult {
        let h: QueryDataVersionRequestHeader = header(request)?;
        let offered: DataVersion = fastjson::decode(&request.body)?;
        let stored = self.tables.routes.data_version(&h.broker_addr);
        let changed = stored != Some(offered);
        if !changed {
            self.tables.routes.touch(&h.broker_addr);
        }
        let mut response = request
            .success_to()
            .with_ext_fields(QueryDataVersionResponseHeader { changed }.to_ext_fields());
        if let Some(stored) = stored {
            response = response.with_body(fastjson::encode(&stored));
        }
        Ok(Some(response))
    }
}

impl RequestProcessor for BrokerRegistrationProcessor {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        if request.request_code_typed() == Some(RequestCode::REGISTER_BROKER) {
            let this = self.clone();
            return Box::pin(async move { this.register(ctx, request).await });
        }
        let result = match request.request_code_typed() {
            Some(RequestCode::UNREGISTER_BROKER) => self.unregister(&request),
            Some(RequestCode::BROKER_HEARTBEAT) => self.heartbeat(&request),
            Some(RequestCode::QUERY_DATA_VERSION) => self.query_data_version(&request),
            _ => Ok(Some(request.not_supported_to())),
        };
        Box::pin(std::future::ready(result))
    }
}
