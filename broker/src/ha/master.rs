//! The master side: admits slaves through the handshake, streams the CommitLog to them and
//! tracks what they acknowledged.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::RngCore;
use stellmq_store::MessageStore;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use super::protocol::{self, SlaveIdentity, NONCE_LEN, PROOF_LEN};
use super::{
    read_exact, HaError, HaGroup, HANDSHAKE_TIMEOUT, HEARTBEAT_INTERVAL, HOUSEKEEPING_INTERVAL,
    TRANSFER_BATCH,
};

/// Connections still in their handshake at once; more are closed at once, so a flood of
/// silent peers cannot pile up.
const MAX_HANDSHAKING: usize = 64;

/// The master side: accepts slaves and tracks what they acknowledged. Only slaves that
/// completed the handshake are listed, and only their reports count.
pub struct HaMaster {
    store: Arc<MessageStore>,
    group: HaGroup,
    /// Woken after local appends so connections send new data at once.
    new_data: Notify,
    /// The highest offset any admitted slave has reported (what SYNC_MASTER waits for).
    acked: watch::Sender<i64>,
    slaves: Mutex<HashMap<SocketAddr, i64>>,
    handshaking: Arc<Semaphore>,
    /// Connections refused (no or a bad handshake, or too many handshaking at once).
    refused: AtomicU64,
    stop: CancellationToken,
}

impl HaMaster {
    /// Listens on `listener` until `stop` is cancelled, admitting slaves of `group`.
    pub fn start(
        store: Arc<MessageStore>,
        listener: TcpListener,
        group: HaGroup,
        stop: CancellationToken,
    ) -> Arc<Self> {
        let master = Arc::new(Self {
            store,
            group,
            new_data: Notify::new(),
            acked: watch::Sender::new(0),
            slaves: Mutex::new(HashMap::new()),
            handshaking: Arc::new(Semaphore::new(MAX_HANDSHAKING)),
            refused: AtomicU64::new(0),
            stop,
        });
        tokio::spawn(accept_slaves(master.clone(), listener));
        master
    }

    /// Tells slave connections that the CommitLog grew.
    pub fn wake(&self) {
        self.new_data.notify_waiters();
    }

    /// Admitted slaves and the offset each acknowledged.
    pub fn slaves(&self) -> Vec<(SocketAddr, i64)> {
        let mut v: Vec<_> = self.slaves.lock().iter().map(|(a, o)| (*a, *o)).collect();
        v.sort();
        v
    }

    pub fn has_slaves(&self) -> bool {
        !self.slaves.lock().is_empty()
    }

    /// How many connections were refused since the start.
    pub fn refused_peers(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn refuse(&self, peer: SocketAddr, reason: &dyn std::fmt::Display) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(event = "HA_PEER_REFUSED", %peer, %reason, "HA peer refused: nothing streamed");
    }

    pub fn acked_offset(&self) -> i64 {
        *self.acked.borrow()
    }

    /// Waits until some admitted slave acknowledged `offset`; false on timeout.
    pub async fn wait_for_slave(&self, offset: i64, timeout: Duration) -> bool {
        let mut rx = self.acked.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|acked| *acked >= offset))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    fn record_ack(&self, slave: SocketAddr, offset: i64) {
        self.slaves.lock().insert(slave, offset);
        self.acked.send_if_modified(|acked| {
            let grew = offset > *acked;
            if grew {
                *acked = offset;
            }
            grew
        });
    }
}

async fn accept_slaves(master: Arc<HaMaster>, listener: TcpListener) {
    loop {
        let accepted = tokio::select! {
            _ = master.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                let Ok(permit) = master.handshaking.clone().try_acquire_owned() else {
                    master.refuse(peer, &"too many connections in their handshake");
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let master = master.clone();
                tokio::spawn(async move {
                    let stop = master.stop.clone();
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = serve_peer(&master, stream, peer, permit) => {}
                    }
                    master.slaves.lock().remove(&peer);
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "HA accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn serve_peer(
    master: &Arc<HaMaster>,
    stream: TcpStream,
    peer: SocketAddr,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let (mut reader, mut writer) = stream.into_split();
    let handshake = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        handshake(&master.group, &mut reader, &mut writer),
    )
    .await
    .unwrap_or(Err(HaError::Timeout("no complete handshake within 5 s")));
    drop(permit);
    let identity = match handshake {
        Ok(identity) => identity,
        Err(reason) => {
            master.refuse(peer, &reason);
            return;
        }
    };
    tracing::info!(
        event = "HA_SLAVE_CONNECTED",
        %peer,
        broker_name = %identity.broker_name,
        broker_id = identity.broker_id,
        "slave connected"
    );
    if let Err(reason) = serve_slave(master, reader, writer, peer).await {
        tracing::warn!(%peer, broker_id = identity.broker_id, %reason, "slave connection closed");
    }
}

/// The master's half of the handshake (see the module docs); the admitted slave's identity.
async fn handshake(
    group: &HaGroup,
    reader: &mut OwnedReadHalf,
    writer: &mut OwnedWriteHalf,
) -> Result<SlaveIdentity, HaError> {
    // The magic alone first, so a classic peer (8-byte report, then silence) is refused at
    // once rather than at the timeout.
    let mut magic = [0u8; 8];
    read_exact(
        reader,
        &mut magic,
        "the peer closed the connection before its handshake",
    )
    .await?;
    protocol::check_magic(&magic)?;
    let mut len = [0u8; 2];
    read_exact(
        reader,
        &mut len,
        "the peer closed the connection during its handshake",
    )
    .await?;
    let len = protocol::decode_identity_len(len)?;
    let mut identity_bytes = vec![0u8; len];
    read_exact(
        reader,
        &mut identity_bytes,
        "the peer closed the connection during its handshake",
    )
    .await?;
    let identity = SlaveIdentity::decode(&identity_bytes)?;
    protocol::admit(&identity, &group.cluster_name, &group.broker_name)?;
    match group.secret() {
        None => send(writer, &protocol::encode_challenge(None)).await?,
        Some(secret) => {
            let mut nonce = [0u8; NONCE_LEN];
            rand::thread_rng().fill_bytes(&mut nonce);
            send(writer, &protocol::encode_challenge(Some(&nonce))).await?;
            let mut proof = [0u8; PROOF_LEN];
            read_exact(
                reader,
                &mut proof,
                "the peer closed the connection before its haAuthSecret proof",
            )
            .await?;
            protocol::verify_proof(secret, &nonce, &identity_bytes, &proof)?;
        }
    }
    send(writer, &[protocol::ACCEPTED]).await?;
    Ok(identity)
}

async fn send(writer: &mut OwnedWriteHalf, bytes: &[u8]) -> Result<(), HaError> {
    writer
        .write_all(bytes)
        .await
        .map_err(HaError::io("writing to the slave"))
}

/// Reads reports in one task and streams the log in this one.
async fn serve_slave(
    master: &Arc<HaMaster>,
    mut reader: OwnedReadHalf,
    mut writer: OwnedWriteHalf,
    peer: SocketAddr,
) -> Result<(), HaError> {
    let first = read_report(&mut reader).await?;
    check_report(master, first)?;
    master.record_ack(peer, first);
    let (report_tx, mut report_rx) = watch::channel(first);
    let reports = tokio::spawn(async move {
        while let Ok(offset) = read_report(&mut reader).await {
            if report_tx.send(offset).is_err() {
                return;
            }
        }
    });
    let result = stream_log(master, &mut writer, &mut report_rx, peer, first).await;
    reports.abort();
    result
}

async fn stream_log(
    master: &Arc<HaMaster>,
    writer: &mut OwnedWriteHalf,
    reports: &mut watch::Receiver<i64>,
    peer: SocketAddr,
    first: i64,
) -> Result<(), HaError> {
    let mut next = master.store.replication_start(first);
    let mut acked = first;
    let mut last_report = tokio::time::Instant::now();
    let mut last_sent = tokio::time::Instant::now();
    loop {
        let offset = *reports.borrow_and_update();
        if offset != acked {
            check_report(master, offset)?;
            master.record_ack(peer, offset);
            acked = offset;
            last_report = tokio::time::Instant::now();
        }
        if last_report.elapsed() > HOUSEKEEPING_INTERVAL {
            return Err(HaError::Timeout("no report from the slave for 20 s"));
        }
        let woken = master.new_data.notified();
        if let Some(chunk) = master.store.replication_chunk(next, TRANSFER_BATCH) {
            write_frame(writer, next, &chunk).await?;
            next += chunk.len() as i64;
            last_sent = tokio::time::Instant::now();
            continue;
        }
        if last_sent.elapsed() >= HEARTBEAT_INTERVAL {
            write_frame(writer, next, &[]).await?;
            last_sent = tokio::time::Instant::now();
        }
        tokio::select! {
            _ = master.stop.cancelled() => return Ok(()),
            _ = woken => {}
            r = reports.changed() => r.map_err(|_| HaError::Closed("the slave closed the connection"))?,
            // Appends by paths that do not wake us are still picked up promptly.
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}

fn check_report(master: &HaMaster, offset: i64) -> Result<(), HaError> {
    let max = master.store.commit_log_max_offset();
    if offset > max {
        return Err(HaError::AheadOfMaster {
            reported: offset,
            max,
        });
    }
    Ok(())
}

async fn read_report(reader: &mut OwnedReadHalf) -> Result<i64, HaError> {
    let mut buf = [0u8; 8];
    tokio::time::timeout(
        HOUSEKEEPING_INTERVAL,
        read_exact(reader, &mut buf, "the slave closed the connection"),
    )
    .await
    .map_err(|_| HaError::Timeout("no report from the slave for 20 s"))??;
    Ok(i64::from_be_bytes(buf))
}

async fn write_frame(writer: &mut OwnedWriteHalf, offset: i64, body: &[u8]) -> Result<(), HaError> {
    let header = protocol::encode_frame_header(offset, body.len());
    send(writer, &header).await?;
    send(writer, body).await
}
