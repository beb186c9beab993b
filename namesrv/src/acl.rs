//! The name server's side of the plain ACL (and the gate ACL 2.0's check shares): with aclEnable on, its changes (topic and
//! broker-permission edits, KV config, configuration updates) need a signed admin account
//! from `<rocketmqHome>/conf/plain_acl.yml`; route queries and broker registration stay
//! open, as in RocketMQ.

use std::path::Path;
use std::sync::Arc;

use stellmq_acl::resource::needs_admin;

use crate::auth::NamesrvAuth;
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

/// A processor whose admin requests (the name server's changes) are checked first: against
/// ACL 2.0 (a signed super user) and the plain ACL (a signed admin account), whichever are
/// on.
pub struct AdminGate {
    pub inner: Arc<dyn RequestProcessor>,
    pub acl: Option<Arc<AccessValidator>>,
    pub auth: Option<Arc<NamesrvAuth>>,
}

impl AdminGate {
    /// `inner` behind the gate when either check is on, else as it is.
    pub fn wrap(
        inner: Arc<dyn RequestProcessor>,
        acl: &Option<Arc<AccessValidator>>,
        auth: &Option<Arc<NamesrvAuth>>,
    ) -> Arc<dyn RequestProcessor> {
        if acl.is_none() && auth.is_none() {
            return inner;
        }
        Arc::new(AdminGate {
            inner,
            acl: acl.clone(),
            auth: auth.clone(),
        })
    }
}

fn refuse(reason: String) -> ProcessFuture {
    let refusal = ProcessorError::new(ResponseCode::NO_PERMISSION, reason);
    Box::pin(std::future::ready(Err(refusal)))
}

impl RequestProcessor for AdminGate {
    fn process(&self, ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        if !needs_admin(request.code) {
            return self.inner.process(ctx, request);
        }
        if let Some(acl) = &self.acl {
            if let Err(denied) = acl.check(ctx.channel.peer().ip(), &request) {
                acl.log_refusal(ctx.channel.peer(), request.code, &denied);
                return refuse(denied.0);
            }
        }
        let Some(auth) = self.auth.clone() else {
            return self.inner.process(ctx, request);
        };
        let inner = self.inner.clone();
        Box::pin(async move {
            if let Err(reason) = auth.check_change(ctx.channel.peer(), &request).await {
                return Err(ProcessorError::new(ResponseCode::NO_PERMISSION, reason));
            }
            inner.process(ctx, request).await
        })
    }
}
