//! Request processors and the bounded lanes they run in.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::channel::{Channel, InFlight};
use crate::protocol::codes::busy_remark;
use crate::protocol::error::{BodyError, HeaderError, RecordError};
use crate::protocol::{RemotingCommand, ResponseCode};

/// What a processor produces: a response now, none (oneway, or answered later through the
/// context's channel, as long polling does), or an error mapped to a response code.
pub type ProcessResult = Result<Option<RemotingCommand>, ProcessorError>;

/// The boxed future a processor returns.
pub type ProcessFuture = Pin<Box<dyn Future<Output = ProcessResult> + Send>>;

/// A request-processing error: a RocketMQ response code and a human-readable remark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessorError {
    pub code: ResponseCode,
    pub remark: String,
}

impl ProcessorError {
    pub fn new(code: ResponseCode, remark: impl Into<String>) -> Self {
        Self {
            code,
            remark: remark.into(),
        }
    }

    pub fn system(remark: impl Into<String>) -> Self {
        Self::new(ResponseCode::SYSTEM_ERROR, remark)
    }
}

impl std::fmt::Display for ProcessorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.remark)
    }
}

impl std::error::Error for ProcessorError {}

impl From<HeaderError> for ProcessorError {
    fn from(e: HeaderError) -> Self {
        Self::system(e.to_string())
    }
}

impl From<BodyError> for ProcessorError {
    fn from(e: BodyError) -> Self {
        match e {
            BodyError::OverBudget(_) => Self::new(ResponseCode::SYSTEM_BUSY, e.to_string()),
            e => Self::system(e.to_string()),
        }
    }
}

impl From<RecordError> for ProcessorError {
    fn from(e: RecordError) -> Self {
        Self::new(ResponseCode::MESSAGE_ILLEGAL, e.to_string())
    }
}

/// Where a request came from and how long it waited.
#[derive(Clone)]
pub struct RequestContext {
    pub channel: Channel,
    /// When the frame was decoded.
    pub received_at: Instant,
    /// When a lane worker picked it up (for a request run on the connection's reader
    /// first, when it was read: it never waited for a worker).
    pub started_at: Instant,
    /// The lane worker this request runs on, until [`Self::release_worker`].
    worker: Arc<Mutex<Option<OwnedSemaphorePermit>>>,
}

impl RequestContext {
    fn new(
        channel: Channel,
        received_at: Instant,
        started_at: Instant,
        worker: OwnedSemaphorePermit,
    ) -> Self {
        Self {
            channel,
            received_at,
            started_at,
            worker: Arc::new(Mutex::new(Some(worker))),
        }
    }

    /// Gives the lane worker back while the request only waits (for a disk flush, a
    /// replica): other requests of the lane run meanwhile. The request still counts
    /// against the lane's capacity and its connection's in-flight limit until answered.
    pub fn release_worker(&self) {
        self.worker.lock().take();
    }

    /// Time spent queued in the lane before processing began.
    pub fn queued_for(&self) -> Duration {
        self.started_at.saturating_duration_since(self.received_at)
    }
}

/// Handles requests of one or more codes.
pub trait RequestProcessor: Send + Sync + 'static {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture;
}

/// One request kind's handler: a method of a processor `P`.
pub type HandlerFn<P> = fn(Arc<P>, RequestContext, RemotingCommand) -> ProcessFuture;

/// One request kind's handler that answers at once: a method of a processor `P`.
pub type AnswerFn<P> = fn(&P, RequestContext, RemotingCommand) -> ProcessResult;

/// A processor's method bound to the processor, registered for exactly one request code:
/// no `match` on the code, so no code can reach a handler meant for another.
pub struct Handler<P> {
    processor: Arc<P>,
    handle: HandlerFn<P>,
}

impl<P: Send + Sync + 'static> RequestProcessor for Handler<P> {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        (self.handle)(self.processor.clone(), ctx, request)
    }
}

/// A handler that runs `handle` on `processor`.
pub fn handler<P: Send + Sync + 'static>(
    processor: &Arc<P>,
    handle: HandlerFn<P>,
) -> Arc<dyn RequestProcessor> {
    Arc::new(Handler {
        processor: processor.clone(),
        handle,
    })
}

struct Answer<P> {
    processor: Arc<P>,
    answer: AnswerFn<P>,
}

impl<P: Send + Sync + 'static> RequestProcessor for Answer<P> {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        Box::pin(std::future::ready((self.answer)(
            &self.processor,
            ctx,
            request,
        )))
    }
}

/// A handler that answers at once with `answer` run on `processor`.
pub fn answer<P: Send + Sync + 'static>(
    processor: &Arc<P>,
    answer: AnswerFn<P>,
) -> Arc<dyn RequestProcessor> {
    Arc::new(Answer {
        processor: processor.clone(),
        answer,
    })
}

/// Told about every request answered by a processor (for metrics): its code, the response's
/// code (`None` for a oneway request) and the time since it was received. Called on the
/// answering task: it must be cheap and never block.
pub trait RequestObserver: Send + Sync + 'static {
    fn on_answered(&self, request_code: i32, response_code: Option<i32>, elapsed: Duration);
}

/// What the server lends a dispatch: its task tracker and its observer.
pub(crate) struct ServerSide<'a> {
    pub tracker: &'a tokio_util::task::TaskTracker,
    pub observer: Option<&'a Arc<dyn RequestObserver>>,
}

/// A bounded execution lane: at most `workers` requests run at once and at most `queue` more
/// wait. A request arriving at a full lane is answered SYSTEM_BUSY at once, so one busy area
/// (say, pulls) can never starve another (say, admin calls).
///
/// An [inline](Lane::run_inline_first) lane first runs a request on the connection's reader
/// task, up to its first wait: most sends finish there (no task, no hand-off to another
/// thread), and one that has to wait (a flush, a replica, a segment) moves to a task of its
/// own at that point, still holding its lane worker until it gives it back.
pub struct Lane {
    name: String,
    admitted: Arc<Semaphore>,
    running: Arc<Semaphore>,
    inline_first: bool,
    workers: usize,
    queue: usize,
}

/// What a request holds while it runs in a lane.
struct Admitted {
    _admission: OwnedSemaphorePermit,
    /// Released once the response is queued (or the request parked for later).
    _in_flight: InFlight,
}

/// The parts of a request its answer needs after the request moved into its processor.
struct Answering {
    channel: Channel,
    received_at: Instant,
    observer: Option<Arc<dyn RequestObserver>>,
    oneway: bool,
    code: i32,
    opaque: i32,
    serialize_type: crate::protocol::SerializeType,
}

impl Answering {
    fn of(
        channel: &Channel,
        request: &RemotingCommand,
        received_at: Instant,
        observer: Option<Arc<dyn RequestObserver>>,
    ) -> Self {
        Self {
            channel: channel.clone(),
            received_at,
            observer,
            oneway: request.is_oneway(),
            code: request.code,
            opaque: request.opaque,
            serialize_type: request.serialize_type,
        }
    }

    fn answer(self, result: ProcessResult) {
        let response = match result {
            Ok(response) => response,
            Err(e) => {
                tracing::debug!(code = self.code, error = %e, peer = %self.channel.peer(), "request failed");
                Some(RemotingCommand::new_response(e.code, Some(e.remark)))
            }
        };
        if let Some(observer) = &self.observer {
            // A parked request (no response yet) is answered later, outside this path.
            let code = response.as_ref().map(|r| r.code);
            if self.oneway || code.is_some() {
                let code = if self.oneway { None } else { code };
                observer.on_answered(self.code, code, self.received_at.elapsed());
            }
        }
        if let (Some(mut response), false) = (response, self.oneway) {
            // Responses always echo the request's opaque and header encoding.
            response.opaque = self.opaque;
            response.serialize_type = self.serialize_type;
            response.flag |= crate::protocol::command::FLAG_RESPONSE;
            // Never waits: a peer that does not read is disconnected instead.
            if !self.channel.try_send(response) {
                tracing::debug!(code = self.code, peer = %self.channel.peer(), "response not queued: connection closed or not reading");
            }
        }
    }
}

impl Lane {
    pub fn new(name: impl Into<String>, workers: usize, queue: usize) -> Arc<Self> {
        Self::build(name.into(), workers, queue, false)
    }

    /// A lane whose requests start on the connection's reader task (see [`Lane`]). Only for
    /// processors that never block a thread before their first `.await` that waits.
    pub fn run_inline_first(name: impl Into<String>, workers: usize, queue: usize) -> Arc<Self> {
        Self::build(name.into(), workers, queue, true)
    }

    fn build(name: String, workers: usize, queue: usize, inline_first: bool) -> Arc<Self> {
        let workers = workers.max(1);
        Arc::new(Self {
            name,
            admitted: Arc::new(Semaphore::new(workers + queue)),
            running: Arc::new(Semaphore::new(workers)),
            inline_first,
            workers,
            queue,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Requests waiting for a worker (RocketMQ's thread pool queue size).
    pub fn queued(&self) -> usize {
        let admitted =
            (self.workers + self.queue).saturating_sub(self.admitted.available_permits());
        let running = self
            .workers
            .saturating_sub(self.running.available_permits());
        admitted.saturating_sub(running)
    }

    /// How many requests may wait for a worker.
    pub fn queue_capacity(&self) -> usize {
        self.queue
    }

    /// Requests admitted but not finished (queued plus running).
    pub fn in_flight(&self, capacity: usize) -> usize {
        capacity.saturating_sub(self.admitted.available_permits())
    }

    /// Runs `request` through `processor` in this lane, answering on `channel`.
    pub(crate) fn dispatch(
        self: &Arc<Self>,
        processor: Arc<dyn RequestProcessor>,
        channel: Channel,
        request: RemotingCommand,
        received_at: Instant,
        in_flight: InFlight,
        server: &ServerSide<'_>,
    ) {
        let (tracker, observer) = (server.tracker, server.observer.cloned());
        let Ok(admission) = self.admitted.clone().try_acquire_owned() else {
            tracing::warn!(lane = %self.name, code = request.code, peer = %channel.peer(), "lane full, answering SYSTEM_BUSY");
            if !request.is_oneway() {
                let busy = request.response_to(
                    ResponseCode::SYSTEM_BUSY,
                    Some(busy_remark::REJECT_REQUEST.to_owned()),
                );
                channel.try_send(busy);
            }
            return;
        };
        let admitted = Admitted {
            _admission: admission,
            _in_flight: in_flight,
        };
        let answering = Answering::of(&channel, &request, received_at, observer);
        if self.inline_first {
            if let Ok(worker) = self.running.clone().try_acquire_owned() {
                let ctx = RequestContext::new(channel, received_at, received_at, worker);
                let mut work = processor.process(ctx, request);
                // One poll here; a request that has to wait finishes in a task of its own
                // (every future re-registers its waker when polled again there).
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                match work.as_mut().poll(&mut cx) {
                    std::task::Poll::Ready(result) => answering.answer(result),
                    std::task::Poll::Pending => {
                        tracker.spawn(async move {
                            let _admitted = admitted;
                            answering.answer(work.await);
                        });
                    }
                }
                return;
            }
        }
        let running = self.running.clone();
        tracker.spawn(async move {
            let _admitted = admitted;
            let Ok(worker) = running.acquire_owned().await else {
                return;
            };
            let ctx = RequestContext::new(channel, received_at, Instant::now(), worker);
            answering.answer(processor.process(ctx, request).await);
        });
    }
}
