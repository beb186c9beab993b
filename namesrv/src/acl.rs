//! The name server's side of the plain ACL: with aclEnable on, its changes (topic and
//! broker-permission edits, KV config, configuration updates) need a signed admin account
//! from `<rocketmqHome>/conf/plain_acl.yml`; route queries and broker registration stay
//! open, as in RocketMQ.

use std::path::Path;
use std::sync::Arc;

use stellmq_acl::resource::needs_admin;
use stellmq_acl::{AccessValidator, AclError, AclSource};
use stellmq_remoting::net::{ProcessFuture, ProcessorError, RequestContext, RequestProcessor};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

/// Loads the ACL files (blocking, once at start).
pub async fn open(home: &str) -> Result<Arc<AccessValidator>, AclError> {
    let source = AclSource::in_home(Path::new(home));
    let acl = tokio::task::spawn_blocking(move || AccessValidator::open(source))
        .await
        .map_err(|e| AclError::Render(e.to_string()))??;
    Ok(Arc::new(acl))
}

/// A processor whose admin requests are checked against the ACL first.
pub struct AdminGate {
    pub inner: Arc<dyn RequestProcessor>,
    pub acl: Arc<AccessValidator>,
}

impl AdminGate {
    /// `inner` behind the gate when the ACL is on, else as it is.
    pub fn wrap(
        inner: Arc<dyn RequestProcessor>,
        acl: &Option<Arc<AccessValidator>>,
    ) -> Arc<dyn RequestProcessor> {
        match acl {
            Some(acl) => Arc::new(AdminGate {
                inner,
                acl: acl.clone(),
            }),
            None => inner,
        }
    }
}

impl RequestProcessor for AdminGate {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        if needs_admin(request.code) {
            if let Err(denied) = self.acl.check(ctx.channel.peer().ip(), &request) {
                self.acl
                    .log_refusal(ctx.channel.peer(), request.code, &denied);
                let refusal = ProcessorError::new(ResponseCode::NO_PERMISSION, denied.0);
                return Box::pin(std::future::ready(Err(refusal)));
            }
        }
        self.inner.process(ctx, request)
    }
}
