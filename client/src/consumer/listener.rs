//! A push consumer's listener: a plain function, run on tokio's blocking pool so it may block,
//! or an async function, run as a task of its own. Either way a listener that panics asks for
//! the messages again later ([`ConsumeResult::ReconsumeLater`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::push::ConsumeResult;
use crate::message::ReceivedMessage;

type BoxedResult = Pin<Box<dyn Future<Output = ConsumeResult> + Send>>;
type Blocking = dyn Fn(&[ReceivedMessage]) -> ConsumeResult + Send + Sync;
type Async = dyn Fn(Vec<ReceivedMessage>) -> BoxedResult + Send + Sync;

/// What consumes the messages of a push consumer.
#[derive(Clone)]
pub(crate) enum Listener {
    Blocking(Arc<Blocking>),
    Async(Arc<Async>),
}

impl Listener {
    pub fn blocking(
        f: impl Fn(&[ReceivedMessage]) -> ConsumeResult + Send + Sync + 'static,
    ) -> Self {
        Listener::Blocking(Arc::new(f))
    }

    pub fn from_async<F, Fut>(f: F) -> Self
    where
        F: Fn(Vec<ReceivedMessage>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ConsumeResult> + Send + 'static,
    {
        Listener::Async(Arc::new(move |messages| Box::pin(f(messages))))
    }

    /// Runs the listener on `messages`.
    pub async fn consume(&self, messages: Vec<ReceivedMessage>) -> ConsumeResult {
        let outcome = match self {
            Listener::Blocking(f) => {
                let f = f.clone();
                tokio::task::spawn_blocking(move || f(&messages)).await
            }
            Listener::Async(f) => tokio::spawn(f(messages)).await,
        };
        outcome.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the listener panicked; the messages are consumed again later");
            ConsumeResult::ReconsumeLater
        })
    }
}
