//! The proxy's remoting port for RocketMQ 4.x clients (`enableRemotingProxy`,
//! `remotingListenPort`): clients set their name server address to the proxy and reach the
//! whole cluster through it, as through RocketMQ 5's proxy.
//!
//! - On `remotingListenPort` the proxy answers as a name server: route queries are asked of
//!   the real name servers and every broker's address is replaced by a port of the proxy
//!   that belongs to that broker name ([`relay`]); every other request is relayed to a name
//!   server as it came (signatures untouched, so name-server changes are checked against the
//!   client's own credentials).
//! - On a broker's port the proxy relays the connection, byte for byte, to that broker's
//!   master: sends, pulls, heartbeats, offsets, transactions and the broker's own calls to
//!   the client (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED, ...) all work, and the
//!   broker checks ACL on the client's own signatures.
//!
//! Unlike RocketMQ's proxy, which reads the broker from a `bname` header 4.x clients before
//! 4.9.5 and the C++ SDK never send, the port a connection arrives on names its broker, so
//! every 4.x client works.

pub mod relay;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::net::{
    ClientConfig, Lane, ProcessFuture, ProcessorError, RemotingClient, RemotingServer,
    RequestContext, RequestProcessor, ServerConfig, ServerHandle,
};
use stellmq_remoting::protocol::body::{fastjson, BrokerData, ClusterInfo, TopicRouteData};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use tokio_util::sync::CancellationToken;

use relay::Relays;

/// Java clients from 4.9.4 on read standard JSON route bodies (as the name server decides).
const V4_9_4: i32 = 397;
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// The running remoting side.
pub struct RemotingGateway {
    server: ServerHandle,
    relays: Arc<Relays>,
    namesrv_client: Arc<RemotingClient>,
}

impl RemotingGateway {
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    pub async fn shutdown(self) {
        self.relays.stop();
        self.server.shutdown().await;
        self.namesrv_client.shutdown().await;
    }
}

/// Answers as a name server: routes rewritten to the proxy's broker ports, the rest relayed.
struct NameServerFront {
    namesrv: Vec<String>,
    client: Arc<RemotingClient>,
    relays: Arc<Relays>,
    /// The host routes name; empty: the address the client connected to.
    access_host: String,
}

impl NameServerFront {
    /// Relays `request` to each name server in turn; the first answer is the client's.
    async fn relay(&self, request: RemotingCommand) -> Result<RemotingCommand, ProcessorError> {
        let mut last = String::from("no name server is configured");
        for addr in &self.namesrv {
            match self
                .client
                .invoke(addr, request.clone(), CALL_TIMEOUT)
                .await
            {
                Ok(answer) => return Ok(answer),
                Err(e) => last = format!("{addr}: {e}"),
            }
        }
        Err(ProcessorError::system(format!(
            "the proxy cannot reach a name server: {last}"
        )))
    }

    /// The host routes name: `remotingAccessAddr`, else the address the client dialled.
    fn host(&self, ctx: &RequestContext) -> String {
        if self.access_host.is_empty() {
            ctx.channel.local().ip().to_string()
        } else {
            self.access_host.clone()
        }
    }

    /// Points a broker's entry at its relay port (the master only).
    async fn rewrite(&self, host: &str, broker: &mut BrokerData) -> Result<(), ProcessorError> {
        let Some(master) = broker.master_addr().map(str::to_owned) else {
            return Ok(());
        };
        let port = self
            .relays
            .port_for(&broker.broker_name, &master)
            .await
            .map_err(|e| ProcessorError::system(format!("no relay port: {e}")))?;
        // Only the master: the relay port reaches it (reads suggested from a slave fall
        // back to the master).
        broker.broker_addrs.0.clear();
        broker.broker_addrs.0.insert(0, format!("{host}:{port}"));
        Ok(())
    }

    /// GET_BROKER_CLUSTER_INFO with every broker's address replaced by its relay port, so
    /// admin tools work through the proxy too.
    async fn cluster_info(
        &self,
        ctx: &RequestContext,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ProcessorError> {
        let answer = self.relay(request.clone()).await?;
        if answer.code != ResponseCode::SUCCESS.as_i32() {
            return Ok(with_opaque(answer, &request));
        }
        let mut info: ClusterInfo = fastjson::decode(&answer.body).map_err(|e| {
            ProcessorError::system(format!(
                "the name server's cluster info cannot be read: {e}"
            ))
        })?;
        let host = self.host(ctx);
        for broker in info.broker_addr_table.values_mut() {
            self.rewrite(&host, broker).await?;
        }
        Ok(with_opaque(answer, &request).with_body(fastjson::encode(&info)))
    }

    async fn route(
        &self,
        ctx: &RequestContext,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ProcessorError> {
        let standard = request.version >= V4_9_4
            || request.ext_fields.get("acceptStandardJsonOnly") == Some("true");
        let answer = self.relay(request.clone()).await?;
        if answer.code != ResponseCode::SUCCESS.as_i32() {
            return Ok(with_opaque(answer, &request));
        }
        let mut route: TopicRouteData = fastjson::decode(&answer.body).map_err(|e| {
            ProcessorError::system(format!("the name server's route cannot be read: {e}"))
        })?;
        let host = self.host(ctx);
        for broker in &mut route.broker_datas {
            self.rewrite(&host, broker).await?;
        }
        let body = if standard {
            fastjson::encode_standard(&route)
        } else {
            fastjson::encode(&route)
        };
        Ok(with_opaque(answer, &request).with_body(body))
    }
}

/// The answer relayed back under the client's request id.
fn with_opaque(mut answer: RemotingCommand, request: &RemotingCommand) -> RemotingCommand {
    answer.opaque = request.opaque;
    answer
}

/// The processor of the name-server side.
struct Front(Arc<NameServerFront>);

impl RequestProcessor for Front {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        let front = self.0.clone();
        Box::pin(async move {
            if request.is_oneway() {
                if let Some(addr) = front.namesrv.first() {
                    let _ = front.client.invoke_oneway(addr, request).await;
                }
                return Ok(None);
            }
            let answer = if request.code == RequestCode::GET_ROUTEINFO_BY_TOPIC.as_i32() {
                front.route(&ctx, request).await?
            } else if request.code == RequestCode::GET_BROKER_CLUSTER_INFO.as_i32() {
                front.cluster_info(&ctx, request).await?
            } else {
                let answer = front.relay(request.clone()).await?;
                with_opaque(answer, &request)
            };
            Ok(Some(answer))
        })
    }
}

/// Binds `bind:port` and serves until [`RemotingGateway::shutdown`].
pub async fn start(
    bind: &str,
    port: u16,
    access_host: &str,
    namesrv: Vec<String>,
    stop: &CancellationToken,
) -> Result<RemotingGateway, String> {
    let listen: SocketAddr = format!("{bind}:{port}")
        .parse()
        .map_err(|_| format!("invalid remoting address {bind}:{port}"))?;
    let relays = Arc::new(Relays::new(bind.to_owned(), stop.child_token()));
    // Unsigned: a client's request keeps its own signature.
    let client = Arc::new(RemotingClient::new(ClientConfig::default()));
    let front = Arc::new(NameServerFront {
        namesrv,
        client: client.clone(),
        relays: relays.clone(),
        access_host: access_host.to_owned(),
    });
    let mut server = RemotingServer::new(ServerConfig {
        listen_addr: listen,
        ..ServerConfig::default()
    });
    server.register_default(
        Arc::new(Front(front)),
        Lane::new("remoting-front", 8, 10_000),
    );
    let server = server
        .start()
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    tracing::info!(addr = %server.local_addr(), "remoting port for 4.x clients");
    Ok(RemotingGateway {
        server,
        relays,
        namesrv_client: client,
    })
}
