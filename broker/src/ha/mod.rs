//! Master/slave replication: RocketMQ's classic HA (protocol.md 9.2) behind a StellMQ handshake.
//!
//! The master streams its CommitLog over a raw TCP port; a slave reports the end of its log
//! (8 bytes, big-endian) and appends the master's bytes, which its dispatcher then indexes
//! like local writes. Master → slave frames: physical offset (i64) + body size (i32) + raw
//! CommitLog bytes, at most [`TRANSFER_BATCH`] and never across a segment boundary; a size of
//! 0 is a heartbeat.
//!
//! # Handshake (StellMQ extension, version 1)
//!
//! The classic protocol lets any TCP peer read the whole CommitLog and satisfy SYNC_MASTER
//! by reporting the master's end offset. So before anything classic, a slave identifies
//! itself and the master streams nothing, and counts no report, until it admitted the slave
//! (all integers big-endian):
//!
//! 1. slave → master, the hello: [`HANDSHAKE_MAGIC`](protocol::HANDSHAKE_MAGIC)
//!    `FF 53 4D 51 48 41 00 01` (`0xFF "SMQHA"`, version 1; as a classic offset report it
//!    would be negative, which no slave reports), the identity length (u16, at most
//!    1024), then the identity: clusterName (u16 length + UTF-8), brokerName (u16 length +
//!    UTF-8), brokerId (i64).
//! 2. master → slave, the challenge: one byte, the nonce length, then the nonce. Without
//!    `haAuthSecret` the length is 0; with it the nonce is 32 random bytes.
//! 3. slave → master, only after a nonce: the proof, HMAC-SHA256(haAuthSecret, nonce ||
//!    identity bytes), 32 bytes. The master compares it in constant time.
//! 4. master → slave: one byte [`ACCEPTED`](protocol::ACCEPTED) (`01`). From here on the
//!    classic protocol runs unchanged: the slave reports its offset, the master streams.
//!
//! The master refuses a peer, logging its address and the reason and closing the connection
//! without sending anything more, when it sends no complete handshake within
//! [`HANDSHAKE_TIMEOUT`], a bad magic (a classic 8-byte report included), an identity of
//! another cluster or brokerName, a brokerId <= 0, or a wrong or missing proof. A slave with a
//! secret refuses a master that asks for none (and without one, a master that asks for one):
//! the group is configured differently. Classic RocketMQ slaves therefore cannot replicate
//! from a StellMQ master.
//!
//! # Controller mode (handshake version 2)
//!
//! With `enableControllerMode` the master is [`HaMaster::start_controlled`] and the slave
//! [`HaSlave::start_controlled`]: the magic's version is 2, the hello carries the master
//! epoch the slave follows and its epoch entries, and the master answers [`ACCEPTED`]
//! followed by its own entries, or [`protocol::v2::REFUSED_EPOCH`] and its epoch when the
//! slave follows another term (or it is no master). The slave cuts its store back to the last
//! consistent point before it reports its offset ([`protocol::v2`],
//! docs/controller-broker.md). The master tracks the SyncStateSet ([`sync_state`]) within its
//! [`term`]. A master of one version refuses slaves of the other.
//!
//! [`ACCEPTED`]: protocol::ACCEPTED
//!
//! # What a slave appends
//!
//! A slave checks every record before writing it ([`verify`]): frames must be contiguous, and
//! each record needs a known magic, a size within bounds, its own offset in PHYSICALOFFSET and
//! a body matching its CRC; an end-of-file blank must end exactly at its segment's end.
//! Records split across frames are kept (at most one maximum-size record) until whole. On any
//! failure the slave keeps every good record before the bad one, drops the connection with a
//! warning naming the offset and the reason, and reconnects later.

mod master;
pub mod protocol;
mod slave;
pub mod sync_state;
pub mod term;
pub mod verify;

use std::time::Duration;

pub use master::HaMaster;
pub use slave::HaSlave;

/// `haTransferBatchSize`.
pub const TRANSFER_BATCH: usize = 32 * 1024;
/// How often each end of a replication connection sends (`haSendHeartbeatInterval`) and
/// after how long a silent one is closed (`haHousekeepingInterval`).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub heartbeat: Duration,
    pub housekeeping: Duration,
}

impl Timing {
    /// The intervals of `store`'s configuration (100 ms at least each).
    pub fn of(store: &stellmq_store::MessageStore) -> Self {
        let c = store.config();
        Self {
            heartbeat: Duration::from_millis(c.ha_send_heartbeat_interval.max(100)),
            housekeeping: Duration::from_millis(c.ha_housekeeping_interval.max(100)),
        }
    }
}
/// Data sent on an HA connection that stays unacknowledged this long ends the connection
/// (`TCP_USER_TIMEOUT`). Both ends send at least every heartbeat interval ([`Timing`]), so behind a
/// partition the connection breaks within seconds and the slave's next attempt finds the
/// master as soon as the link heals; without it a healed connection waits out TCP's
/// retransmission backoff or the 20 s housekeeping timeout (RocketMQ's behaviour).
pub const UNACKED_TIMEOUT: Duration = Duration::from_secs(3);

/// Small frames go out at once, and a connection behind a partition fails fast (see
/// [`UNACKED_TIMEOUT`]). Either option failing leaves the connection usable as it is.
fn tune_connection(stream: &tokio::net::TcpStream) {
    let _ = stream.set_nodelay(true);
    if let Err(e) = socket2::SockRef::from(stream).set_tcp_user_timeout(Some(UNACKED_TIMEOUT)) {
        tracing::debug!(error = %e, "TCP_USER_TIMEOUT not set on an HA connection");
    }
}

/// A slave's connection attempt to its master gives up after this long (a SYN dropped by a
/// partition is otherwise resent for minutes).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The whole handshake must be done within this time after the connection is accepted.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// The replication group a broker belongs to, and the secret its members share.
#[derive(Clone, Default)]
pub struct HaGroup {
    pub cluster_name: String,
    pub broker_name: String,
    /// `haAuthSecret`; empty = none.
    pub secret: String,
}

impl HaGroup {
    pub fn new(cluster_name: &str, broker_name: &str) -> Self {
        Self {
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            secret: String::new(),
        }
    }

    pub fn with_secret(mut self, secret: &str) -> Self {
        self.secret = secret.to_owned();
        self
    }

    fn secret(&self) -> Option<&[u8]> {
        (!self.secret.is_empty()).then_some(self.secret.as_bytes())
    }
}

impl std::fmt::Debug for HaGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HaGroup")
            .field("cluster_name", &self.cluster_name)
            .field("broker_name", &self.broker_name)
            .field("secret", &self.secret().map(|_| "<set>"))
            .finish()
    }
}

/// Why an HA connection ended.
#[derive(Debug, thiserror::Error)]
pub enum HaError {
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("{0}")]
    Timeout(&'static str),
    #[error("{0}")]
    Closed(&'static str),
    #[error("handshake refused: {0}")]
    Handshake(#[from] protocol::HandshakeError),
    #[error("{0}")]
    Misconfigured(&'static str),
    #[error("bad frame from the master: {0}")]
    Frame(#[from] protocol::FrameError),
    #[error("refused the master's bytes: {0}")]
    Verify(#[from] verify::VerifyError),
    #[error("cannot append the master's bytes: {0}")]
    Append(#[from] stellmq_store::commitlog::ReplicaError),
    #[error("slave reports offset {reported} beyond this master's log end {max}")]
    AheadOfMaster { reported: i64, max: i64 },
    #[error(
        "the slave follows master epoch {followed} but this master's epoch is {master} \
         (-1: not master): one of them has not learnt the controller's latest election"
    )]
    EpochMismatch { followed: i32, master: i32 },
    #[error("bad epoch entries: {0}")]
    Epochs(#[from] protocol::v2::EpochWireError),
    #[error(
        "no consistent point between this slave's epochs {local:?} and the master's \
         {master:?}: the logs share no term; clear this broker's store to rejoin"
    )]
    NoConsistentPoint {
        local: Vec<(i32, i64)>,
        master: Vec<(i32, i64)>,
    },
    #[error("cannot cut the log back to the consistent point: {0}")]
    Truncate(String),
}

impl HaError {
    fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> HaError {
        move |source| HaError::Io { what, source }
    }
}

/// Reads exactly `buf.len()` bytes; an end of stream before that is [`HaError::Closed`]
/// with `context`.
async fn read_exact(
    reader: &mut (impl tokio::io::AsyncRead + Unpin),
    buf: &mut [u8],
    context: &'static str,
) -> Result<(), HaError> {
    use tokio::io::AsyncReadExt;
    match reader.read_exact(buf).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(HaError::Closed(context)),
        Err(source) => Err(HaError::Io {
            what: "read",
            source,
        }),
    }
}
