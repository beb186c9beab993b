//! StellMQ embedded in an application's tests, like an embedded database: one line starts a
//! name server and a broker on `127.0.0.1` ephemeral ports with temporary files, dropping
//! the value stops both and removes the files.
//!
//! They run on a thread and tokio runtime of their own, so an [`EmbeddedStack`] works the
//! same in a plain `#[test]` and in any `#[tokio::test]`, and its drop (which waits for
//! the broker to unregister and close its store) never needs the test's runtime.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use stellmq_broker::BrokerStartConfig;
use tokio::sync::oneshot;

use crate::stack::Stack;

/// A name server and `broker-a` of `DefaultCluster`, registered with it, running until
/// dropped (see the module documentation). Clients connect through
/// [`EmbeddedStack::namesrv_addr`], as they would to a real cluster.
pub struct EmbeddedStack {
    namesrv_addr: String,
    broker_addr: String,
    dir: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// What the stack's thread reports once both servers serve.
struct Started {
    namesrv_addr: String,
    broker_addr: String,
    dir: PathBuf,
}

impl EmbeddedStack {
    /// Starts the name server and the broker (the test kit's small-file configuration,
    /// [`crate::broker_config`]) and returns once both serve. Panics if they cannot start.
    pub fn start() -> Self {
        Self::start_with(|_| {})
    }

    /// Like [`EmbeddedStack::start`], with the broker's configuration changed by `tweak`
    /// (e.g. `|c| c.broker.enable_property_filter = true`).
    pub fn start_with(tweak: impl FnOnce(&mut BrokerStartConfig) + Send + 'static) -> Self {
        let (started_tx, started_rx) = mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("stellmq-embedded".into())
            .spawn(move || serve(tweak, started_tx, stopped))
            .expect("a thread for the embedded stack");
        let Ok(started) = started_rx.recv() else {
            // The thread ended without starting: show its panic.
            match thread.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => panic!("the embedded name server and broker did not start"),
            }
        };
        Self {
            namesrv_addr: started.namesrv_addr,
            broker_addr: started.broker_addr,
            dir: started.dir,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The name server's address (`127.0.0.1:<port>`), what clients are configured with.
    pub fn namesrv_addr(&self) -> &str {
        &self.namesrv_addr
    }

    /// The broker's address (`127.0.0.1:<port>`), as registered with the name server.
    pub fn broker_addr(&self) -> &str {
        &self.broker_addr
    }

    /// The broker's temporary directory (its store is the `store` subdirectory); removed on
    /// drop.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for EmbeddedStack {
    /// Stops the broker (it unregisters and closes its store), then the name server, and
    /// removes their files; returns once all is done.
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // A panic on that thread was already printed; do not panic again in a drop.
            let _ = thread.join();
        }
    }
}

/// The stack's thread: a runtime of its own serving until `stopped` resolves (or its
/// sender is dropped).
fn serve(
    tweak: impl FnOnce(&mut BrokerStartConfig),
    started: mpsc::Sender<Started>,
    stopped: oneshot::Receiver<()>,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("stellmq-embedded-rt")
        .enable_all()
        .build()
        .expect("a tokio runtime for the embedded stack");
    runtime.block_on(async move {
        let stack = Stack::start_with(tweak).await;
        let _ = started.send(Started {
            namesrv_addr: stack.ns_addr().to_owned(),
            broker_addr: stack.addr().to_owned(),
            dir: stack.dir().to_owned(),
        });
        let _ = stopped.await;
        stack.stop().await;
    });
}
