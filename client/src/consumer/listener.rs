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

    /// Runs the listener on `messages`; a panic is `Err` with its message.
    pub async fn try_consume(
        &self,
        messages: Vec<ReceivedMessage>,
    ) -> Result<ConsumeResult, String> {
        let outcome = match self {
            Listener::Blocking(f) => {
                let f = f.clone();
                tokio::task::spawn_blocking(move || f(&messages)).await
            }
            Listener::Async(f) => tokio::spawn(f(messages)).await,
        };
        outcome.map_err(|e| {
            if !e.is_panic() {
                return "the listener was cancelled".to_owned();
            }
            let panic = e.into_panic();
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            format!("the listener panicked: {text}")
        })
    }
}
