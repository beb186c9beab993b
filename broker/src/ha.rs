//! Classic RocketMQ HA (spec 9.2): the master streams its CommitLog over a raw TCP port; a
//! slave reports the end of its log (8 bytes, big-endian) and appends exactly the master's
//! bytes, which its dispatcher then indexes like local writes.
//!
//! Master → slave frames: physical offset (i64) + body size (i32) + raw CommitLog bytes, at
//! most [`TRANSFER_BATCH`] and never across a segment boundary; a size of 0 is a heartbeat.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use stellmq_remoting::protocol::message::record;
use stellmq_store::MessageStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

/// `haTransferBatchSize`.
pub const TRANSFER_BATCH: usize = 32 * 1024;
/// `haSendHeartbeatInterval`.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(5);
/// `haHousekeepingInterval`: a silent peer is dropped after this long.
pub const HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(20);
const HEADER_LEN: usize = 12;

/// The master side: accepts slaves and tracks what they acknowledged.
pub struct HaMaster {
    store: Arc<MessageStore>,
    /// Woken after local appends so connections send new data at once.
    new_data: Notify,
    /// The highest offset any slave has reported (what SYNC_MASTER waits for).
    acked: watch::Sender<i64>,
    slaves: Mutex<HashMap<SocketAddr, i64>>,
    stop: CancellationToken,
}

impl HaMaster {
    /// Listens on `listener` until `stop` is cancelled.
    pub fn start(
        store: Arc<MessageStore>,
        listener: TcpListener,
        stop: CancellationToken,
    ) -> Arc<Self> {
        let master = Arc::new(Self {
            store,
            new_data: Notify::new(),
            acked: watch::Sender::new(0),
            slaves: Mutex::new(HashMap::new()),
            stop,
        });
        tokio::spawn(accept_slaves(master.clone(), listener));
        master
    }

    /// Tells slave connections that the CommitLog grew.
    pub fn wake(&self) {
        self.new_data.notify_waiters();
    }

    /// Connected slaves and the offset each acknowledged.
    pub fn slaves(&self) -> Vec<(SocketAddr, i64)> {
        let mut v: Vec<_> = self.slaves.lock().iter().map(|(a, o)| (*a, *o)).collect();
        v.sort();
        v
    }

    pub fn has_slaves(&self) -> bool {
        !self.slaves.lock().is_empty()
    }

    pub fn acked_offset(&self) -> i64 {
        *self.acked.borrow()
    }

    /// Waits until some slave acknowledged `offset`; false on timeout.
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
                let _ = stream.set_nodelay(true);
                tracing::info!(event = "HA_SLAVE_CONNECTED", %peer, "slave connected");
                let master = master.clone();
                tokio::spawn(async move {
                    if let Err(reason) = serve_slave(&master, stream, peer).await {
                        tracing::warn!(%peer, %reason, "slave connection closed");
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

/// Reads reports in one task and streams the log in this one.
async fn serve_slave(
    master: &Arc<HaMaster>,
    stream: TcpStream,
    peer: SocketAddr,
) -> Result<(), String> {
    let (mut reader, mut writer) = stream.into_split();
    let first = read_report(&mut reader).await?;
    check_report(master, first)?;
    master.record_ack(peer, first);
    let (report_tx, mut report_rx) = watch::channel(first);
    let reports = tokio::spawn(async move {
        loop {
            match read_report(&mut reader).await {
                Ok(offset) => {
                    if report_tx.send(offset).is_err() {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    });
    let result = stream_log(master, &mut writer, &mut report_rx, peer, first).await;
    reports.abort();
    result
}

async fn stream_log(
    master: &Arc<HaMaster>,
    writer: &mut tokio::net::tcp::OwnedWriteHalf,
    reports: &mut watch::Receiver<i64>,
    peer: SocketAddr,
    first: i64,
) -> Result<(), String> {
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
            return Err("no report from the slave for 20 s".into());
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
            r = reports.changed() => r.map_err(|_| "slave closed the connection".to_owned())?,
            // Appends by paths that do not wake us are still picked up promptly.
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}

fn check_report(master: &HaMaster, offset: i64) -> Result<(), String> {
    let max = master.store.commit_log_max_offset();
    if offset > max {
        return Err(format!(
            "slave reports offset {offset} beyond this master's log end {max}"
        ));
    }
    Ok(())
}

async fn read_report(reader: &mut tokio::net::tcp::OwnedReadHalf) -> Result<i64, String> {
    let mut buf = [0u8; 8];
    match tokio::time::timeout(HOUSEKEEPING_INTERVAL, reader.read_exact(&mut buf)).await {
        Ok(Ok(_)) => Ok(i64::from_be_bytes(buf)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no report from the slave for 20 s".into()),
    }
}

async fn write_frame(
    writer: &mut tokio::net::tcp::OwnedWriteHalf,
    offset: i64,
    body: &[u8],
) -> Result<(), String> {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&offset.to_be_bytes());
    header[8..].copy_from_slice(&(body.len() as i32).to_be_bytes());
    writer.write_all(&header).await.map_err(|e| e.to_string())?;
    writer.write_all(body).await.map_err(|e| e.to_string())
}

/// The slave side: keeps a connection to the master's HA port and appends what it streams.
pub struct HaSlave {
    master_addr: watch::Sender<Option<String>>,
    /// Notified when the master cannot be reached, so the broker asks the name servers again
    /// (a restarted master may have a new address).
    lost_master: Arc<Notify>,
    /// The master's log end as last seen in a frame header.
    master_offset: watch::Sender<i64>,
}

impl HaSlave {
    /// Replicates from the master at the address set with [`HaSlave::set_master`] (it may be
    /// learnt later from the name server), reconnecting every `retry` after a break.
    pub fn start(store: Arc<MessageStore>, retry: Duration, stop: CancellationToken) -> Arc<Self> {
        Self::start_with(store, retry, stop, Arc::new(Notify::new()))
    }

    /// Like [`HaSlave::start`], notifying `lost_master` after every failed or broken connection.
    pub fn start_with(
        store: Arc<MessageStore>,
        retry: Duration,
        stop: CancellationToken,
        lost_master: Arc<Notify>,
    ) -> Arc<Self> {
        let slave = Arc::new(Self {
            master_addr: watch::Sender::new(None),
            lost_master,
            master_offset: watch::Sender::new(0),
        });
        tokio::spawn(replicate(slave.clone(), store, retry, stop));
        slave
    }

    pub fn set_master(&self, addr: &str) {
        self.master_addr.send_if_modified(|current| {
            let changed = current.as_deref() != Some(addr);
            if changed {
                *current = Some(addr.to_owned());
            }
            changed
        });
    }

    pub fn clear_master(&self) {
        self.master_addr
            .send_if_modified(|current| current.take().is_some());
    }

    pub fn master(&self) -> Option<String> {
        self.master_addr.borrow().clone()
    }

    pub fn master_offset(&self) -> i64 {
        *self.master_offset.borrow()
    }
}

async fn replicate(
    slave: Arc<HaSlave>,
    store: Arc<MessageStore>,
    retry: Duration,
    stop: CancellationToken,
) {
    let mut addrs = slave.master_addr.subscribe();
    loop {
        let addr = addrs.borrow_and_update().clone();
        if addr.is_none() {
            // Registered before the master did: ask the name servers again.
            slave.lost_master.notify_one();
        }
        if let Some(addr) = addr {
            tokio::select! {
                _ = stop.cancelled() => return,
                // A new master address ends the connection to the old one.
                _ = addrs.changed() => continue,
                r = follow_master(&slave, &store, &addr) => {
                    if let Err(reason) = r {
                        tracing::warn!(master = %addr, %reason, "HA connection to the master closed");
                    }
                    slave.lost_master.notify_one();
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(retry) => {}
            _ = addrs.changed() => {}
        }
    }
}

async fn follow_master(slave: &HaSlave, store: &MessageStore, addr: &str) -> Result<(), String> {
    let stream = tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(addr))
        .await
        .map_err(|_| "connect timed out".to_owned())?
        .map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    tracing::info!(event = "HA_MASTER_CONNECTED", master = %addr, "replicating from the master");
    let (mut reader, mut writer) = stream.into_split();
    let mut reported = store.commit_log_max_offset();
    // A log that ends on a record boundary (fully dispatched) can check that the master's
    // first bytes start a record there.
    let mut verify_first = reported > 0 && store.dispatch_behind_bytes() == 0;
    report(&mut writer, reported).await?;
    let mut last_report = tokio::time::Instant::now();
    let mut header = [0u8; HEADER_LEN];
    let mut body = Vec::with_capacity(TRANSFER_BATCH);
    loop {
        tokio::time::timeout(HOUSEKEEPING_INTERVAL, reader.read_exact(&mut header))
            .await
            .map_err(|_| "nothing from the master for 20 s".to_owned())?
            .map_err(|e| e.to_string())?;
        let offset = i64::from_be_bytes(header[..8].try_into().unwrap_or_default());
        let size = i32::from_be_bytes(header[8..].try_into().unwrap_or_default());
        if !(0..=(4 * TRANSFER_BATCH) as i32).contains(&size) {
            return Err(format!("bad frame size {size} from the master"));
        }
        body.resize(size as usize, 0);
        reader
            .read_exact(&mut body)
            .await
            .map_err(|e| e.to_string())?;
        if size > 0 {
            if verify_first {
                continues_log(offset, &body)?;
                verify_first = false;
            }
            store
                .append_replicated(offset, &body)
                .await
                .map_err(|e| e.to_string())?;
        }
        slave.master_offset.send_replace(offset + i64::from(size));
        let local = store.commit_log_max_offset();
        if local != reported || last_report.elapsed() >= HEARTBEAT_INTERVAL {
            report(&mut writer, local).await?;
            reported = local;
            last_report = tokio::time::Instant::now();
        }
    }
}

/// The classic HA protocol has no handshake, so a slave that reaches some other group's
/// master (a stale address now reused) would append foreign bytes. The first bytes for a
/// slave whose log ends on a record boundary must start a record (or an end-of-file blank)
/// that says it lives at `offset`; anything else is refused before it is written.
fn continues_log(offset: i64, bytes: &[u8]) -> Result<(), String> {
    let refuse = || {
        format!(
            "the bytes this master sends at {offset} do not start a record: it is not this \
             slave's master, or the logs diverged"
        )
    };
    let (total, magic) = record::peek(bytes).map_err(|_| refuse())?;
    if total <= 0 {
        return Err(refuse());
    }
    match magic {
        record::BLANK_MAGIC => Ok(()),
        record::MAGIC_V1 | record::MAGIC_V2 => {
            let pos = record::PHYSICAL_OFFSET_POS;
            match bytes.get(pos..pos + 8) {
                Some(field)
                    if i64::from_be_bytes(field.try_into().unwrap_or_default()) != offset =>
                {
                    Err(refuse())
                }
                _ => Ok(()),
            }
        }
        _ => Err(refuse()),
    }
}

async fn report(writer: &mut tokio::net::tcp::OwnedWriteHalf, offset: i64) -> Result<(), String> {
    writer
        .write_all(&offset.to_be_bytes())
        .await
        .map_err(|e| e.to_string())
}
