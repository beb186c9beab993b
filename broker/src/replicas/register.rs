//! How a broker in controller mode gets its id (RocketMQ 5's `ReplicasManager.register`).
//!
//! 1. A granted id in `brokerIdentity` is used as it is.
//! 2. Otherwise an id being applied for in `brokerIdentity-temp` is applied for again, with
//!    the same check code, so a broker that died between asking and hearing the answer does
//!    not take a second id.
//! 3. Otherwise the broker asks the controller for the next free id
//!    (CONTROLLER_GET_NEXT_BROKER_ID), writes it with a new check code to the temp file, and
//!    applies for it (CONTROLLER_APPLY_BROKER_ID). A refusal (another broker took the id
//!    first) clears the temp file so the next attempt starts over.
//!
//! The granted id then moves to `brokerIdentity` and the broker registers its address
//! (CONTROLLER_REGISTER_BROKER).

use std::sync::Arc;

use stellmq_controller_client::{ControllerClient, ControllerClientError};
use stellmq_remoting::protocol::body::SyncStateSet;
use stellmq_remoting::protocol::headers::{
    ApplyBrokerIdRequestHeader, RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
};

use super::metadata::{BrokerIdentityFile, IdentityFiles, MetadataError};

/// Who this broker is, as its config says.
#[derive(Debug, Clone)]
pub struct Applicant {
    pub cluster_name: String,
    pub broker_name: String,
    /// `ip:port` of the broker's remoting listener.
    pub address: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    #[error("controller: {0}")]
    Controller(#[from] ControllerClientError),
    #[error("the controller gave no broker id")]
    NoId,
    #[error("identity file task failed: {0}")]
    Task(String),
}

/// Runs file I/O on a blocking thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, MetadataError> + Send + 'static,
) -> Result<T, RegisterError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RegisterError::Task(e.to_string()))?
        .map_err(RegisterError::from)
}

/// The id the controller granted this broker, applying for one when it has none.
pub async fn obtain_broker_id(
    client: &ControllerClient,
    files: &Arc<IdentityFiles>,
    me: &Applicant,
) -> Result<i64, RegisterError> {
    let f = files.clone();
    if let Some(granted) = blocking(move || f.read_assigned()).await? {
        granted.check_belongs(&files.assigned, &me.cluster_name, &me.broker_name)?;
        return Ok(granted.broker_id);
    }
    let f = files.clone();
    let applying = match blocking(move || f.read_temp()).await? {
        Some(temp) => {
            temp.check_belongs(&files.temp, &me.cluster_name, &me.broker_name)?;
            temp
        }
        None => {
            let next = client
                .get_next_broker_id(&me.cluster_name, &me.broker_name)
                .await?;
            if next <= 0 {
                return Err(RegisterError::NoId);
            }
            let temp = BrokerIdentityFile {
                cluster_name: me.cluster_name.clone(),
                broker_name: me.broker_name.clone(),
                broker_id: next,
                register_check_code: Some(format!("{};{}", me.address, now_ms())),
            };
            let (f, t) = (files.clone(), temp.clone());
            blocking(move || f.write_temp(&t)).await?;
            temp
        }
    };
    let header = ApplyBrokerIdRequestHeader {
        cluster_name: Some(me.cluster_name.clone()),
        broker_name: me.broker_name.clone(),
        applied_broker_id: applying.broker_id,
        register_check_code: applying.register_check_code.clone().unwrap_or_default(),
    };
    if let Err(e) = client.apply_broker_id(&header).await {
        if e.remote_code().is_some() {
            // Refused: the id went to another broker. Start over next time.
            let f = files.clone();
            blocking(move || f.clear_temp()).await?;
        }
        return Err(e.into());
    }
    let f = files.clone();
    let granted = applying.clone();
    blocking(move || f.promote_temp(&granted)).await?;
    tracing::info!(
        broker_id = applying.broker_id,
        "the controller granted this broker its id"
    );
    Ok(applying.broker_id)
}

/// CONTROLLER_REGISTER_BROKER with the granted id: the current master, if any, and the
/// SyncStateSet.
pub async fn register_address(
    client: &ControllerClient,
    me: &Applicant,
    broker_id: i64,
) -> Result<(RegisterBrokerToControllerResponseHeader, SyncStateSet), RegisterError> {
    let header = RegisterBrokerToControllerRequestHeader {
        cluster_name: Some(me.cluster_name.clone()),
        broker_name: me.broker_name.clone(),
        broker_id,
        broker_address: me.address.clone(),
        invoke_time: Some(now_ms()),
    };
    Ok(client.register_broker(&header).await?)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
