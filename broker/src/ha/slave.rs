//! The slave side: keeps a connection to the master's HA port, identifies itself, and
//! appends what the master streams once [`ReplicaVerifier`] has checked it.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::BytesMut;
use stellmq_remoting::protocol::message::record::BLANK_MAGIC;
use stellmq_store::epoch::{EpochEntry, EpochFile, EpochList};
use stellmq_store::MessageStore;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{watch, Mutex as AsyncMutex, Notify, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use super::protocol::{self, v2, SlaveIdentity, FRAME_HEADER_LEN, MIN_NONCE_LEN, PROOF_LEN};
use super::verify::{Append, ReplicaVerifier};
use super::{read_exact, HaError, HaGroup, Timing, HANDSHAKE_TIMEOUT, TRANSFER_BATCH};
use crate::metadata_journal::JournalApplier;

/// The slave side: keeps a connection to the master's HA port and appends what it streams.
pub struct HaSlave {
    group: HaGroup,
    broker_id: AtomicI64,
    master_addr: watch::Sender<Option<String>>,
    /// Notified when the master cannot be reached, so the broker asks the name servers again
    /// (a restarted master may have a new address).
    lost_master: Arc<Notify>,
    /// The master's log end as last seen in a frame header.
    master_offset: watch::Sender<i64>,
    /// Held while connected to a master (and by a truncation running for that
    /// connection), so [`HaSlave::stop_following`] can wait until no master's bytes arrive.
    following: Arc<AsyncMutex<()>>,
    /// Controller mode (handshake version 3, or 2 with an older master); `None` for a
    /// classic slave.
    controlled: Option<SlaveTerm>,
    /// Applies the master's metadata records before their bytes are appended.
    journal: OnceLock<Arc<JournalApplier>>,
    /// Connection attempts that failed since the last one that got through.
    failures_in_a_row: AtomicU64,
}

/// A controller-mode slave's epoch history and the master epoch it follows.
struct SlaveTerm {
    epochs: Arc<EpochFile>,
    followed: AtomicI32,
    /// Dial with handshake version 3 (frames carry the master's confirm offset); a master
    /// that closes the connection before its challenge may speak only version 2, so the next
    /// attempt alternates.
    speak_v3: AtomicBool,
}

impl HaSlave {
    /// Replicates, as `broker_id` of `group`, from the master at the address set with
    /// [`HaSlave::set_master`] (it may be learnt later from the name server), reconnecting
    /// after a break (attempts begin at most every `retry`).
    pub fn start(
        store: Arc<MessageStore>,
        group: HaGroup,
        broker_id: i64,
        retry: Duration,
        stop: CancellationToken,
    ) -> Arc<Self> {
        Self::start_with(
            store,
            group,
            broker_id,
            retry,
            stop,
            Arc::new(Notify::new()),
        )
    }

    /// Like [`HaSlave::start`], notifying `lost_master` after every failed or broken connection.
    pub fn start_with(
        store: Arc<MessageStore>,
        group: HaGroup,
        broker_id: i64,
        retry: Duration,
        stop: CancellationToken,
        lost_master: Arc<Notify>,
    ) -> Arc<Self> {
        Self::start_inner(store, group, broker_id, retry, stop, lost_master, None)
    }

    /// A slave in controller mode: handshake version 3 (frames carry the master's confirm
    /// offset; version 2 with an older master) with the epoch it follows
    /// ([`Self::follow`]) and its epoch history; before replicating it cuts its log back to
    /// the last point it shares with the master, and it records the master's terms as their
    /// bytes arrive. It dials no master until told one.
    pub fn start_controlled(
        store: Arc<MessageStore>,
        group: HaGroup,
        broker_id: i64,
        retry: Duration,
        stop: CancellationToken,
        epochs: Arc<EpochFile>,
    ) -> Arc<Self> {
        let term = SlaveTerm {
            epochs,
            followed: AtomicI32::new(-1),
            speak_v3: AtomicBool::new(true),
        };
        let lost_master = Arc::new(Notify::new());
        Self::start_inner(
            store,
            group,
            broker_id,
            retry,
            stop,
            lost_master,
            Some(term),
        )
    }

    fn start_inner(
        store: Arc<MessageStore>,
        group: HaGroup,
        broker_id: i64,
        retry: Duration,
        stop: CancellationToken,
        lost_master: Arc<Notify>,
        controlled: Option<SlaveTerm>,
    ) -> Arc<Self> {
        let slave = Arc::new(Self {
            group,
            broker_id: AtomicI64::new(broker_id),
            master_addr: watch::Sender::new(None),
            lost_master,
            master_offset: watch::Sender::new(0),
            following: Arc::new(AsyncMutex::new(())),
            failures_in_a_row: AtomicU64::new(0),
            controlled,
            journal: OnceLock::new(),
        });
        tokio::spawn(replicate(slave.clone(), store, retry, stop));
        slave
    }

    /// From now on the master's metadata records are applied (and in the config files)
    /// before the bytes that carry them are appended, and so before they are acknowledged.
    pub fn set_journal_applier(&self, applier: Arc<JournalApplier>) {
        let _ = self.journal.set(applier);
    }

    /// Controller mode: replicate as `broker_id` from the master at `ha_addr`, elected with
    /// `epoch`. A new epoch reconnects even to the same address (the handshake then compares
    /// histories again).
    pub fn follow(&self, ha_addr: &str, epoch: i32, broker_id: i64) {
        self.broker_id.store(broker_id, Ordering::Release);
        if let Some(term) = &self.controlled {
            let old = term.followed.swap(epoch, Ordering::AcqRel);
            if old != epoch {
                self.clear_master();
            }
        }
        self.set_master(ha_addr);
    }

    /// Stops replicating and waits until the connection (and any truncation it started)
    /// is over, so no master's byte is appended after this returns.
    pub async fn stop_following(&self) {
        self.clear_master();
        drop(self.following.lock().await);
    }

    /// Controller mode: the master epoch this slave follows (-1 before any).
    pub fn followed_epoch(&self) -> i32 {
        self.controlled
            .as_ref()
            .map_or(-1, |t| t.followed.load(Ordering::Acquire))
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

    /// The first failure in a row is a warning, its repeats are not (attempts run every
    /// second while the master is away).
    fn note_failure(&self, addr: &str, reason: &HaError) {
        let n = self.failures_in_a_row.fetch_add(1, Ordering::Relaxed) + 1;
        if n == 1 || n.is_multiple_of(60) {
            tracing::warn!(master = %addr, %reason, failures = n, "HA connection to the master closed");
        } else {
            tracing::debug!(master = %addr, %reason, failures = n, "HA connection attempt failed");
        }
    }

    fn identity(&self) -> SlaveIdentity {
        SlaveIdentity {
            cluster_name: self.group.cluster_name.clone(),
            broker_name: self.group.broker_name.clone(),
            broker_id: self.broker_id.load(Ordering::Acquire),
        }
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
        let attempt_began = tokio::time::Instant::now();
        if let Some(addr) = addr {
            tokio::select! {
                _ = stop.cancelled() => return,
                // A new master address ends the connection to the old one.
                _ = addrs.changed() => continue,
                r = async {
                    let guard = slave.following.clone().lock_owned().await;
                    follow_master(&slave, &store, &addr, guard).await
                } => {
                    if let Err(reason) = r {
                        slave.note_failure(&addr, &reason);
                    }
                    slave.lost_master.notify_one();
                }
            }
        }
        // Attempts begin every `retry` at most: one that waited out its connect timeout
        // (behind a partition) is not followed by a full `retry` of waiting too.
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep_until(attempt_began + retry) => {}
            _ = addrs.changed() => {}
        }
    }
}

async fn follow_master(
    slave: &HaSlave,
    store: &Arc<MessageStore>,
    addr: &str,
    guard: OwnedMutexGuard<()>,
) -> Result<(), HaError> {
    let stream = tokio::time::timeout(super::CONNECT_TIMEOUT, TcpStream::connect(addr))
        .await
        .map_err(|_| HaError::Timeout("connect timed out"))?
        .map_err(HaError::io("connect"))?;
    super::tune_connection(&stream);
    let (mut reader, mut writer) = stream.into_split();
    let (master_epochs, confirmed) = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        handshake(slave, &mut reader, &mut writer),
    )
    .await
    .map_err(|_| HaError::Timeout("the master did not complete the handshake within 5 s"))??;
    let (mut later_terms, _guard) = match (&slave.controlled, master_epochs) {
        (Some(term), Some(master)) => {
            let (store, epochs) = (store.clone(), term.epochs.clone());
            tokio::task::spawn_blocking(move || {
                (
                    join_master_history(&store, &epochs, &master, confirmed),
                    guard,
                )
            })
            .await
            .map_err(|e| HaError::Truncate(e.to_string()))
            .and_then(|(joined, guard)| Ok((joined?, guard)))?
        }
        _ => (Vec::new(), guard),
    };
    let failed = slave.failures_in_a_row.swap(0, Ordering::Relaxed);
    tracing::info!(event = "HA_MASTER_CONNECTED", master = %addr, failed_attempts = failed, "replicating from the master");
    let config = store.config();
    let reported = store.commit_log_max_offset();
    let mut verifier = ReplicaVerifier::new(
        reported,
        config.mapped_file_size_commit_log,
        config.max_message_size,
    );
    // Reports go out from a task of their own, on every change and at least every
    // heartbeat interval even while nothing arrives: behind a partition the report stays
    // unacknowledged and the connection fails within seconds (TCP_USER_TIMEOUT), and a
    // master that dropped the connection answers the next report with a reset. Without
    // them a slave waiting inside a frame whose rest never comes would wait forever.
    let timing = Timing::of(store);
    let (local_tx, local_rx) = watch::channel(reported);
    let mut reporter = tokio::spawn(report_offsets(writer, local_rx, timing.heartbeat));
    let result = loop {
        let read = tokio::time::timeout(timing.housekeeping, read_frame(&mut reader, confirmed));
        let (frame, confirm, body) = tokio::select! {
            read = read => match read {
                Ok(Ok(frame)) => frame,
                Ok(Err(e)) => break Err(e),
                Err(_) => break Err(HaError::Timeout(
                    "nothing from the master within haHousekeepingInterval",
                )),
            },
            ended = &mut reporter => break Err(reporter_ended(ended)),
        };
        let taken = take_frame(
            slave,
            store,
            &mut verifier,
            &mut later_terms,
            frame,
            confirm,
            body,
        );
        if let Err(e) = taken.await {
            break Err(e);
        }
        local_tx.send_if_modified(|reported| {
            let local = store.commit_log_max_offset();
            let moved = local != *reported;
            *reported = local;
            moved
        });
    };
    reporter.abort();
    result
}

/// Verifies a frame's bytes and appends what passed; then takes its confirm offset.
async fn take_frame(
    slave: &HaSlave,
    store: &Arc<MessageStore>,
    verifier: &mut ReplicaVerifier,
    later_terms: &mut Vec<(i32, i64)>,
    frame: protocol::FrameHeader,
    confirm: Option<i64>,
    body: BytesMut,
) -> Result<(), HaError> {
    let pushed = verifier.push(frame.offset, body.freeze());
    for append in &pushed.appends {
        if let (Some(journal), Append::Records { bytes, .. }) = (slave.journal.get(), append) {
            journal.apply_records(bytes).await;
        }
        apply(store, append).await?;
    }
    if let Some(term) = &slave.controlled {
        record_terms(store, &term.epochs, later_terms).await?;
    }
    if let Some(refused) = pushed.error {
        return Err(refused.into());
    }
    if let Some(confirm) = confirm {
        store.set_confirm_offset(confirm);
    }
    slave
        .master_offset
        .send_replace(frame.offset + frame.size as i64);
    Ok(())
}

/// Sends the slave's log end to the master when it moves, and at least every
/// `heartbeat`; ends when the connection fails or the follower stops.
async fn report_offsets(
    mut writer: OwnedWriteHalf,
    mut local: watch::Receiver<i64>,
    heartbeat: Duration,
) -> Result<(), HaError> {
    loop {
        let offset = *local.borrow_and_update();
        report(&mut writer, offset).await?;
        tokio::select! {
            changed = local.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
            _ = tokio::time::sleep(heartbeat) => {}
        }
    }
}

fn reporter_ended(ended: Result<Result<(), HaError>, tokio::task::JoinError>) -> HaError {
    match ended {
        Ok(Err(e)) => e,
        Ok(Ok(())) => HaError::Closed("the report task stopped"),
        Err(e) => HaError::Closed(if e.is_panic() {
            "the report task panicked"
        } else {
            "the report task was cancelled"
        }),
    }
}

/// One frame: its header, the master's confirm offset (version 3) and its body.
async fn read_frame(
    reader: &mut OwnedReadHalf,
    confirmed: bool,
) -> Result<(protocol::FrameHeader, Option<i64>, BytesMut), HaError> {
    let (frame, confirm) = read_frame_header(reader, confirmed).await?;
    let mut body = BytesMut::zeroed(frame.size);
    read_exact(
        reader,
        &mut body,
        "the master closed the connection inside a frame",
    )
    .await?;
    Ok((frame, confirm, body))
}

/// A frame header, and with version 3 the master's confirm offset.
async fn read_frame_header(
    reader: &mut OwnedReadHalf,
    confirmed: bool,
) -> Result<(protocol::FrameHeader, Option<i64>), HaError> {
    if confirmed {
        let mut header = [0u8; v2::CONFIRMED_FRAME_HEADER_LEN];
        read_exact(reader, &mut header, "the master closed the connection").await?;
        let (frame, confirm) = v2::decode_confirmed_frame_header(&header)?;
        return Ok((frame, Some(confirm)));
    }
    let mut header = [0u8; FRAME_HEADER_LEN];
    read_exact(reader, &mut header, "the master closed the connection").await?;
    Ok((protocol::decode_frame_header(&header)?, None))
}

/// The slave's half of the handshake (see the module docs); in controller mode the master's
/// epoch entries, and whether frames carry its confirm offset (version 3).
async fn handshake(
    slave: &HaSlave,
    reader: &mut OwnedReadHalf,
    writer: &mut OwnedWriteHalf,
) -> Result<(Option<Vec<EpochEntry>>, bool), HaError> {
    let identity_bytes = slave.identity().encode()?;
    let mut hello = protocol::encode_hello(&identity_bytes)?;
    let mut confirmed = false;
    if let Some(term) = &slave.controlled {
        confirmed = term.speak_v3.load(Ordering::Acquire);
        if let Some((magic, _)) = hello.split_first_chunk_mut::<8>() {
            *magic = if confirmed {
                v2::HANDSHAKE_MAGIC_V3
            } else {
                v2::HANDSHAKE_MAGIC_V2
            };
        }
        let local = term.epochs.list();
        hello.extend_from_slice(&v2::encode_term(
            term.followed.load(Ordering::Acquire),
            local.entries(),
        )?);
    }
    send(writer, &hello).await?;
    let mut len = [0u8; 1];
    let challenge = read_exact(
        reader,
        &mut len,
        "the master closed the connection during the handshake: it refused this slave's clusterName, brokerName or brokerId, \
         its handshake version, or is no StellMQ master",
    )
    .await;
    if let (Err(_), Some(term)) = (&challenge, &slave.controlled) {
        // An older master speaks version 2 only: the next attempt tries the other version.
        term.speak_v3.store(!confirmed, Ordering::Release);
    }
    challenge?;
    let nonce_len = protocol::decode_challenge_len(len[0])?;
    match (nonce_len, slave.group.secret()) {
        (0, None) => {}
        (0, Some(_)) => {
            return Err(HaError::Misconfigured(
                "the master asks for no haAuthSecret, but this slave has one",
            ))
        }
        (_, None) => {
            return Err(HaError::Misconfigured(
                "the master requires haAuthSecret, which this slave does not have",
            ))
        }
        (n, Some(secret)) => {
            debug_assert!(n >= MIN_NONCE_LEN);
            let mut nonce = vec![0u8; n];
            read_exact(
                reader,
                &mut nonce,
                "the master closed the connection during the handshake",
            )
            .await?;
            let proof: [u8; PROOF_LEN] = protocol::proof(secret, &nonce, &identity_bytes);
            send(writer, &proof).await?;
        }
    }
    let mut accepted = [0u8; 1];
    read_exact(
        reader,
        &mut accepted,
        "the master closed the connection during the handshake: it refused this slave's proof (haAuthSecret differs)",
    )
    .await?;
    if slave.controlled.is_some() && accepted[0] == v2::REFUSED_EPOCH {
        let mut epoch = [0u8; 4];
        read_exact(reader, &mut epoch, "the master closed the connection").await?;
        return Err(HaError::EpochMismatch {
            followed: slave.followed_epoch(),
            master: i32::from_be_bytes(epoch),
        });
    }
    if accepted[0] != protocol::ACCEPTED {
        return Err(HaError::Misconfigured(
            "the master ended the handshake with an unknown byte",
        ));
    }
    if slave.controlled.is_none() {
        return Ok((None, false));
    }
    let mut count = [0u8; 2];
    read_exact(
        reader,
        &mut count,
        "the master closed the connection during the handshake",
    )
    .await?;
    let count = v2::decode_master_count(count)?;
    let mut entries = vec![0u8; count * v2::MASTER_ENTRY_LEN];
    read_exact(
        reader,
        &mut entries,
        "the master closed the connection during the handshake",
    )
    .await?;
    Ok((Some(v2::decode_master_entries(&entries, count)?), confirmed))
}

/// Blocking: cuts the log back to the last point it shares with the master (RocketMQ's
/// `AutoSwitchHAClient.doTruncate`; a slave without history keeps its log), takes the
/// master's terms up to its log end as its own history, and returns the later terms, to
/// be recorded as their bytes arrive.
fn join_master_history(
    store: &MessageStore,
    epochs: &EpochFile,
    master: &[EpochEntry],
    confirmed: bool,
) -> Result<Vec<(i32, i64)>, HaError> {
    let local_max = store.commit_log_max_offset();
    let local = epochs.list_ending_at(local_max);
    let master = EpochList::from_entries(master.to_vec());
    if !local.is_empty() {
        let pairs = |l: &EpochList| -> Vec<(i32, i64)> {
            l.entries()
                .iter()
                .map(|e| (e.epoch, e.start_offset))
                .collect()
        };
        let point =
            local
                .find_consistent_point(&master)
                .ok_or_else(|| HaError::NoConsistentPoint {
                    local: pairs(&local),
                    master: pairs(&master),
                })?;
        if point < local_max {
            tracing::warn!(
                event = "HA_TRUNCATE",
                local_max,
                consistent_point = point,
                "cutting bytes the new master never had"
            );
            store
                .truncate_to(point)
                .map_err(|e| HaError::Truncate(e.to_string()))?;
        }
    }
    if confirmed {
        // What is left is the master's history, but not all of it is confirmed in its term:
        // what was consumable stays so (up to the cut), the rest waits for the confirm
        // offset the master's frames carry.
        store.set_confirm_offset(store.confirm_offset().min(store.commit_log_max_offset()));
    } else {
        // A version 2 master sends no confirm offset: what is left is the master's history
        // and may be consumed (a demoted master held its unconfirmed tail back until now).
        store.set_confirm_offset(i64::MAX);
    }
    let end = store.commit_log_max_offset();
    let (have, later): (Vec<EpochEntry>, Vec<EpochEntry>) =
        master.entries().iter().partition(|e| e.start_offset <= end);
    epochs
        .replace(EpochList::from_pairs(
            have.iter().map(|e| (e.epoch, e.start_offset)),
        ))
        .map_err(|e| HaError::Truncate(e.to_string()))?;
    Ok(later.iter().map(|e| (e.epoch, e.start_offset)).collect())
}

/// Records the master's terms whose first bytes this slave now has.
async fn record_terms(
    store: &MessageStore,
    epochs: &Arc<EpochFile>,
    later: &mut Vec<(i32, i64)>,
) -> Result<(), HaError> {
    let end = store.commit_log_max_offset();
    let reached: Vec<(i32, i64)> = later.iter().copied().filter(|(_, s)| *s <= end).collect();
    if reached.is_empty() {
        return Ok(());
    }
    later.retain(|(_, s)| *s > end);
    let epochs = epochs.clone();
    tokio::task::spawn_blocking(move || {
        for (epoch, start) in reached {
            epochs.append(epoch, start)?;
        }
        Ok::<_, stellmq_store::epoch::EpochFileError>(())
    })
    .await
    .map_err(|e| HaError::Truncate(e.to_string()))?
    .map_err(|e| HaError::Truncate(e.to_string()))
}

/// The filler written after a blank's header.
static ZEROS: [u8; TRANSFER_BATCH] = [0; TRANSFER_BATCH];

/// Writes checked bytes. A blank is written whole: its header, then zeros to the segment end.
async fn apply(store: &MessageStore, append: &Append) -> Result<(), HaError> {
    match append {
        Append::Records { offset, bytes } => {
            store.append_replicated(*offset, bytes).await?;
        }
        Append::Blank { offset, len } => {
            let mut head = [0u8; 8];
            head[..4].copy_from_slice(&i32::try_from(*len).unwrap_or(i32::MAX).to_be_bytes());
            head[4..].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
            let mut at = store.append_replicated(*offset, &head).await?;
            let end = offset + *len as i64;
            while at < end {
                let n = usize::try_from(end - at).unwrap_or(usize::MAX);
                let zeros = ZEROS.get(..n).unwrap_or(&ZEROS);
                at = store.append_replicated(at, zeros).await?;
            }
        }
    }
    Ok(())
}

async fn send(writer: &mut OwnedWriteHalf, bytes: &[u8]) -> Result<(), HaError> {
    writer
        .write_all(bytes)
        .await
        .map_err(HaError::io("writing to the master"))
}

async fn report(writer: &mut OwnedWriteHalf, offset: i64) -> Result<(), HaError> {
    send(writer, &offset.to_be_bytes()).await
}
