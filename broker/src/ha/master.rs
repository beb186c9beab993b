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

use super::protocol::{self, v2, SlaveIdentity, NONCE_LEN, PROOF_LEN};
use super::sync_state::{SyncStateSet, SyncStateTracker};
use super::term::{Controlled, Term};
use super::{read_exact, HaError, HaGroup, Timing, HANDSHAKE_TIMEOUT, TRANSFER_BATCH};

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
    /// Controller mode (handshake version 2, terms, SyncStateSet); `None` for a classic master.
    controlled: Option<Controlled>,
}

/// How often a controller-mode master checks whether members fell behind.
const SHRINK_CHECK: Duration = Duration::from_millis(200);

impl HaMaster {
    /// Listens on `listener` until `stop` is cancelled, admitting slaves of `group`.
    pub fn start(
        store: Arc<MessageStore>,
        listener: TcpListener,
        group: HaGroup,
        stop: CancellationToken,
    ) -> Arc<Self> {
        Self::start_inner(store, listener, group, stop, None)
    }

    /// A master in controller mode: it speaks handshake version 2, admits slaves only
    /// during a term ([`Self::begin_term`]) and only those following that term's epoch,
    /// and tracks the SyncStateSet (members leave after `max_not_caught_up` behind).
    pub fn start_controlled(
        store: Arc<MessageStore>,
        listener: TcpListener,
        group: HaGroup,
        stop: CancellationToken,
        epochs: Arc<stellmq_store::epoch::EpochFile>,
        max_not_caught_up: Duration,
    ) -> Arc<Self> {
        let controlled = Controlled::new(epochs, SyncStateTracker::new(max_not_caught_up));
        let master = Self::start_inner(store, listener, group, stop, Some(controlled));
        tokio::spawn(check_sync_state_set(master.clone()));
        tokio::spawn(publish_confirm_offset(master.clone()));
        master
    }

    fn start_inner(
        store: Arc<MessageStore>,
        listener: TcpListener,
        group: HaGroup,
        stop: CancellationToken,
        controlled: Option<Controlled>,
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
            controlled,
        });
        tokio::spawn(accept_slaves(master.clone(), listener));
        master
    }

    /// The controller-mode state; `None` on a classic master.
    pub fn controlled(&self) -> Option<&Controlled> {
        self.controlled.as_ref()
    }

    /// Controller mode: this broker is master of `epoch` from now on (`local_id` is its
    /// controller broker id, `set` the SyncStateSet the controller gave). Connections of an
    /// earlier term are closed.
    pub fn begin_term(&self, epoch: i32, local_id: i64, set: SyncStateSet) {
        if let Some(c) = &self.controlled {
            c.begin(epoch, local_id, set, self.store.commit_log_max_offset());
        }
    }

    /// Controller mode: this broker is no longer master; its slaves are disconnected and no
    /// slave is admitted until the next term.
    pub fn end_term(&self) {
        if let Some(c) = &self.controlled {
            // The confirm offset stays: what lies past it may be cut when this broker
            // follows the new master (the slave lifts it once it has joined that history).
            c.end();
        }
    }

    /// The epoch of the current term (controller mode, while master).
    pub fn term_epoch(&self) -> Option<i32> {
        self.controlled
            .as_ref()
            .and_then(|c| c.term())
            .map(|t| t.epoch)
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

    fn record_ack(&self, slave: SocketAddr, slave_id: i64, offset: i64) {
        self.slaves.lock().insert(slave, offset);
        if let Some(c) = &self.controlled {
            c.sync
                .report(slave_id, offset, self.store.commit_log_max_offset());
        }
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
                super::tune_connection(&stream);
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
        handshake(master, &mut reader, &mut writer),
    )
    .await
    .unwrap_or(Err(HaError::Timeout("no complete handshake within 5 s")));
    drop(permit);
    let (identity, term, confirmed) = match handshake {
        Ok(admitted) => admitted,
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
    let slave_id = identity.broker_id;
    let served = match (&master.controlled, term) {
        (Some(c), Some(term)) => {
            c.sync.connected(slave_id);
            let served = tokio::select! {
                r = serve_slave(master, reader, writer, peer, slave_id, confirmed) => r,
                _ = term.connections.cancelled() => Err(HaError::Closed("the master's term ended")),
            };
            c.sync.disconnected(slave_id);
            served
        }
        _ => serve_slave(master, reader, writer, peer, slave_id, false).await,
    };
    if let Err(reason) = served {
        tracing::warn!(%peer, broker_id = slave_id, %reason, "slave connection closed");
    }
}

/// Controller mode: asks members that fell behind to leave the SyncStateSet.
async fn check_sync_state_set(master: Arc<HaMaster>) {
    loop {
        tokio::select! {
            _ = master.stop.cancelled() => return,
            _ = tokio::time::sleep(SHRINK_CHECK) => {}
        }
        if let Some(c) = &master.controlled {
            if c.term().is_some() {
                c.sync.check_shrink(master.store.commit_log_max_offset());
            }
        }
    }
}

/// Controller mode: keeps the store's confirm offset at what every SyncStateSet member has
/// while this broker is master, so consumers read only what survives any election.
/// Recomputed on every acknowledgement and set change.
async fn publish_confirm_offset(master: Arc<HaMaster>) {
    let Some(c) = &master.controlled else {
        return;
    };
    let mut progress = c.sync.progress();
    loop {
        progress.borrow_and_update();
        if c.term().is_some() {
            master.store.set_confirm_offset(c.sync.confirm_offset());
        }
        tokio::select! {
            _ = master.stop.cancelled() => return,
            changed = progress.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(SHRINK_CHECK) => {}
        }
    }
}

/// The master's half of the handshake (see the module docs); the admitted slave's identity,
/// in controller mode the term it was admitted to, and whether its frames carry the confirm
/// offset (version 3).
async fn handshake(
    master: &HaMaster,
    reader: &mut OwnedReadHalf,
    writer: &mut OwnedWriteHalf,
) -> Result<(SlaveIdentity, Option<Term>, bool), HaError> {
    let group = &master.group;
    // Controller mode speaks version 3 (frames carry the confirm offset) and still version 2.
    let versions: &[u16] = if master.controlled.is_some() {
        &[2, 3]
    } else {
        &[1]
    };
    // The magic alone first, so a classic peer (8-byte report, then silence) is refused at
    // once rather than at the timeout.
    let mut magic = [0u8; 8];
    read_exact(
        reader,
        &mut magic,
        "the peer closed the connection before its handshake",
    )
    .await?;
    let version = protocol::check_magic_versions(&magic, versions)?;
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
    let followed = if version >= 2 {
        Some(read_slave_term(reader).await?)
    } else {
        None
    };
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
    let (Some(controlled), Some(followed)) = (&master.controlled, followed) else {
        send(writer, &[protocol::ACCEPTED]).await?;
        return Ok((identity, None, false));
    };
    match controlled.term() {
        Some(term) if term.epoch == followed => {
            let entries = controlled
                .epochs
                .list_ending_at(master.store.commit_log_max_offset());
            let mut answer = vec![protocol::ACCEPTED];
            answer.extend_from_slice(&v2::encode_master_entries(entries.entries())?);
            send(writer, &answer).await?;
            Ok((identity, Some(term), version >= 3))
        }
        term => {
            let master_epoch = term.map_or(-1, |t| t.epoch);
            let mut answer = vec![v2::REFUSED_EPOCH];
            answer.extend_from_slice(&master_epoch.to_be_bytes());
            send(writer, &answer).await?;
            Err(HaError::EpochMismatch {
                followed,
                master: master_epoch,
            })
        }
    }
}

/// Version 2: the epoch the slave follows (its entries are for its own truncation and only
/// checked for form here).
async fn read_slave_term(reader: &mut OwnedReadHalf) -> Result<i32, HaError> {
    let mut head = [0u8; v2::TERM_HEAD_LEN];
    read_exact(
        reader,
        &mut head,
        "the peer closed the connection during its handshake",
    )
    .await?;
    let (followed, count) = v2::decode_term_head(&head)?;
    let mut entries = vec![0u8; count * v2::SLAVE_ENTRY_LEN];
    read_exact(
        reader,
        &mut entries,
        "the peer closed the connection during its handshake",
    )
    .await?;
    v2::decode_slave_entries(&entries, count)?;
    Ok(followed)
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
    slave_id: i64,
    confirmed: bool,
) -> Result<(), HaError> {
    let timing = Timing::of(&master.store);
    let first = read_report(&mut reader, timing).await?;
    check_report(master, first)?;
    master.record_ack(peer, slave_id, first);
    let (report_tx, mut report_rx) = watch::channel(first);
    let reports = tokio::spawn(async move {
        while let Ok(offset) = read_report(&mut reader, timing).await {
            if report_tx.send(offset).is_err() {
                return;
            }
        }
    });
    let mut frames = FrameWriter {
        writer: &mut writer,
        confirmed,
        sent_confirm: None,
    };
    let result = stream_log(
        master,
        &mut frames,
        &mut report_rx,
        (peer, slave_id),
        (first, timing),
    )
    .await;
    reports.abort();
    result
}

async fn stream_log(
    master: &Arc<HaMaster>,
    writer: &mut FrameWriter<'_>,
    reports: &mut watch::Receiver<i64>,
    (peer, slave_id): (SocketAddr, i64),
    (first, timing): (i64, Timing),
) -> Result<(), HaError> {
    let mut next = master.store.replication_start(first);
    let mut acked = first;
    let mut last_report = tokio::time::Instant::now();
    let mut last_sent = tokio::time::Instant::now();
    loop {
        let offset = *reports.borrow_and_update();
        if offset != acked {
            check_report(master, offset)?;
            master.record_ack(peer, slave_id, offset);
            acked = offset;
            last_report = tokio::time::Instant::now();
        }
        if last_report.elapsed() > timing.housekeeping {
            return Err(HaError::Timeout(
                "no report from the slave within haHousekeepingInterval",
            ));
        }
        let woken = master.new_data.notified();
        if let Some(chunk) = master.store.replication_chunk(next, TRANSFER_BATCH) {
            if let Some(c) = &master.controlled {
                c.sync
                    .sample(slave_id, master.store.commit_log_max_offset());
            }
            writer.write(master, next, &chunk).await?;
            next += chunk.len() as i64;
            last_sent = tokio::time::Instant::now();
            continue;
        }
        // A heartbeat also when the confirm offset moved: a slave serves reads up to it.
        if last_sent.elapsed() >= timing.heartbeat || writer.confirm_moved(master) {
            writer.write(master, next, &[]).await?;
            last_sent = tokio::time::Instant::now();
        }
        tokio::select! {
            _ = master.stop.cancelled() => return Ok(()),
            _ = woken => {}
            r = reports.changed() => r.map_err(|_| HaError::Closed("the slave's reports ended (closed, reset or timed out)"))?,
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

async fn read_report(reader: &mut OwnedReadHalf, timing: Timing) -> Result<i64, HaError> {
    let mut buf = [0u8; 8];
    tokio::time::timeout(
        timing.housekeeping,
        read_exact(reader, &mut buf, "the slave closed the connection"),
    )
    .await
    .map_err(|_| HaError::Timeout("no report from the slave within haHousekeepingInterval"))??;
    Ok(i64::from_be_bytes(buf))
}

/// Writes frames to one slave: version 1 and 2 headers, or version 3 ones that carry the
/// store's confirm offset.
struct FrameWriter<'a> {
    writer: &'a mut OwnedWriteHalf,
    confirmed: bool,
    sent_confirm: Option<i64>,
}

impl FrameWriter<'_> {
    async fn write(&mut self, master: &HaMaster, offset: i64, body: &[u8]) -> Result<(), HaError> {
        if self.confirmed {
            let confirm = master.store.confirm_offset();
            let header = v2::encode_confirmed_frame_header(offset, body.len(), confirm);
            send(self.writer, &header).await?;
            self.sent_confirm = Some(confirm);
        } else {
            send(
                self.writer,
                &protocol::encode_frame_header(offset, body.len()),
            )
            .await?;
        }
        send(self.writer, body).await
    }

    /// Whether the slave has yet to hear the store's confirm offset as it is now.
    fn confirm_moved(&self, master: &HaMaster) -> bool {
        self.confirmed && self.sent_confirm != Some(master.store.confirm_offset())
    }
}
