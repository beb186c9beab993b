//! ACL 2.0's admin requests (RocketMQ 5.3+, codes 3001-3010): users and their policies.
//! They work whether or not the checks are on, as in RocketMQ; when authorization is on,
//! the guard has already asked for Update or Get on `Cluster:<brokerClusterName>`. Only a
//! super user may create, change or delete a super user. Changes are committed to the
//! metadata store before they are answered.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use stellmq_acl::auth::info::{acl_info, user_info, AclInfo, UserInfo};
use stellmq_acl::auth::{AuthError, AuthRegistry, PolicyType, Resource, UserType};
use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::signature::ACCESS_KEY;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

pub struct AuthAdminProcessor {
    pub registry: Arc<AuthRegistry>,
}

/// RocketMQ answers a refused user or policy change with NO_PERMISSION and its reason.
fn refused(e: AuthError) -> ProcessorError {
    match e {
        AuthError::Store(_) => ProcessorError::system(e.to_string()),
        e => ProcessorError::new(ResponseCode::NO_PERMISSION, e.to_string()),
    }
}

fn field<'a>(request: &'a RemotingCommand, name: &str) -> Option<&'a str> {
    request
        .ext_fields
        .get(name)
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

fn username(request: &RemotingCommand) -> Result<String, ProcessorError> {
    field(request, "username")
        .map(str::to_owned)
        .ok_or_else(|| {
            ProcessorError::new(ResponseCode::INVALID_PARAMETER, "The username is blank")
        })
}

fn body<T: DeserializeOwned>(request: &RemotingCommand, what: &str) -> Result<T, ProcessorError> {
    if request.body.is_empty() {
        return Err(ProcessorError::system(format!(
            "The body of {what} is null"
        )));
    }
    fastjson::decode(&request.body).map_err(|e| {
        ProcessorError::new(
            ResponseCode::INVALID_PARAMETER,
            format!("The body of {what} is not valid JSON: {e}"),
        )
    })
}

fn json_body(request: &RemotingCommand, value: &impl serde::Serialize) -> ProcessResult {
    let bytes = serde_json::to_vec(value).map_err(|e| ProcessorError::system(e.to_string()))?;
    Ok(Some(request.success_to().with_body(bytes)))
}

impl AuthAdminProcessor {
    /// Runs a change on a blocking thread (it commits to the metadata store).
    async fn change(
        &self,
        change: impl FnOnce(&AuthRegistry) -> Result<(), AuthError> + Send + 'static,
    ) -> Result<(), ProcessorError> {
        let registry = self.registry.clone();
        tokio::task::spawn_blocking(move || change(&registry))
            .await
            .map_err(|e| ProcessorError::system(e.to_string()))?
            .map_err(refused)
    }

    /// Whether the request's signer is not a super user (RocketMQ's
    /// `isNotSuperUserLogin`): an unsigned request is one of a broker without
    /// authentication, and may.
    fn signer_is_not_super(&self, request: &RemotingCommand) -> bool {
        match field(request, ACCESS_KEY) {
            None => false,
            Some(name) => self
                .registry
                .user(name)
                .is_none_or(|u| u.user_type != UserType::Super),
        }
    }

    fn wants_super(info: &UserInfo) -> bool {
        info.user_type
            .as_deref()
            .and_then(UserType::by_name)
            .is_some_and(|t| t == UserType::Super)
    }

    fn is_super(&self, username: &str) -> bool {
        self.registry
            .user(username)
            .is_some_and(|u| u.user_type == UserType::Super)
    }

    /// AUTH_CREATE_USER: header `username`, body UserInfo.
    pub async fn create_user(&self, request: RemotingCommand) -> ProcessResult {
        let name = username(&request)?;
        let info: UserInfo = body(&request, "user")?;
        if Self::wants_super(&info) && self.signer_is_not_super(&request) {
            return Err(ProcessorError::system(
                "The super user can only be create by super user",
            ));
        }
        let user = name.clone();
        self.change(move |r| r.create_user(&user, &info)).await?;
        tracing::info!(event = "AUTH_USER_CREATED", user = %name);
        Ok(Some(request.success_to()))
    }

    /// AUTH_UPDATE_USER: header `username`, body UserInfo (what it gives replaces).
    pub async fn update_user(&self, request: RemotingCommand) -> ProcessResult {
        let name = username(&request)?;
        let info: UserInfo = body(&request, "user")?;
        let not_super = self.signer_is_not_super(&request);
        if Self::wants_super(&info) && not_super {
            return Err(ProcessorError::system(
                "The super user can only be update by super user",
            ));
        }
        if self.registry.user(&name).is_none() {
            return Err(refused(AuthError::UserNotFound(name)));
        }
        if self.is_super(&name) && not_super {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                "The super user can only be update by super user",
            ));
        }
        let user = name.clone();
        self.change(move |r| r.update_user(&user, &info)).await?;
        tracing::info!(event = "AUTH_USER_UPDATED", user = %name);
        Ok(Some(request.success_to()))
    }

    /// AUTH_DELETE_USER: header `username`; the user's policies go with it. An unknown
    /// user is already gone.
    pub async fn delete_user(&self, request: RemotingCommand) -> ProcessResult {
        let name = username(&request)?;
        if self.is_super(&name) && self.signer_is_not_super(&request) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                "The super user can only be update by super user",
            ));
        }
        let user = name.clone();
        self.change(move |r| r.delete_user(&user)).await?;
        tracing::info!(event = "AUTH_USER_DELETED", user = %name);
        Ok(Some(request.success_to()))
    }

    /// AUTH_GET_USER: the user as UserInfo, or no body when there is none.
    pub fn get_user(&self, request: &RemotingCommand) -> ProcessResult {
        let name = username(request)?;
        match self.registry.user(&name) {
            Some(user) => json_body(request, &user_info(&user)),
            None => Ok(Some(request.success_to())),
        }
    }

    /// AUTH_LIST_USER: users whose name contains `filter`, or no body when none.
    pub fn list_users(&self, request: &RemotingCommand) -> ProcessResult {
        let users: Vec<UserInfo> = self
            .registry
            .list_users(field(request, "filter").unwrap_or_default())
            .iter()
            .map(|u| user_info(u))
            .collect();
        if users.is_empty() {
            return Ok(Some(request.success_to()));
        }
        json_body(request, &users)
    }

    /// AUTH_CREATE_ACL and AUTH_UPDATE_ACL: both merge the body's policies into the
    /// subject's (the body's subject, else the header's).
    pub async fn put_acl(&self, request: RemotingCommand) -> ProcessResult {
        let info: AclInfo = body(&request, "acl")?;
        if info.policies.as_deref().unwrap_or_default().is_empty() {
            return Err(ProcessorError::system("The body of acl is null"));
        }
        let subject = info
            .subject
            .clone()
            .filter(|s| !s.trim().is_empty())
            .or_else(|| field(&request, "subject").map(str::to_owned))
            .unwrap_or_default();
        let who = subject.clone();
        self.change(move |r| r.put_acl(&subject, &info)).await?;
        tracing::info!(event = "AUTH_ACL_CHANGED", subject = %who);
        Ok(Some(request.success_to()))
    }

    /// AUTH_DELETE_ACL: header `subject`, optional `policyType` (Custom) and `resource`;
    /// without a resource the subject's whole ACL goes.
    pub async fn delete_acl(&self, request: RemotingCommand) -> ProcessResult {
        let subject = field(&request, "subject").unwrap_or_default().to_owned();
        let policy_type = field(&request, "policyType").and_then(PolicyType::by_name);
        let resource = match field(&request, "resource") {
            None => None,
            Some(key) => Some(Resource::parse(key).ok_or_else(|| {
                ProcessorError::new(
                    ResponseCode::INVALID_PARAMETER,
                    format!("The resource {key:?} is illegal."),
                )
            })?),
        };
        let who = subject.clone();
        self.change(move |r| r.delete_acl(&subject, policy_type, resource.as_ref()))
            .await?;
        tracing::info!(event = "AUTH_ACL_DELETED", subject = %who);
        Ok(Some(request.success_to()))
    }

    /// AUTH_GET_ACL: the subject's ACL, or no body when it has none.
    pub fn get_acl(&self, request: &RemotingCommand) -> ProcessResult {
        let subject = field(request, "subject").unwrap_or_default();
        match self.registry.get_acl(subject).map_err(refused)? {
            Some(acl) => json_body(request, &acl_info(&acl)),
            None => Ok(Some(request.success_to())),
        }
    }

    /// AUTH_LIST_ACL: ACLs filtered by subject and resource text, or no body when none.
    pub fn list_acls(&self, request: &RemotingCommand) -> ProcessResult {
        let acls: Vec<AclInfo> = self
            .registry
            .list_acls(
                field(request, "subjectFilter").unwrap_or_default(),
                field(request, "resourceFilter").unwrap_or_default(),
            )
            .iter()
            .map(acl_info)
            .collect();
        if acls.is_empty() {
            return Ok(Some(request.success_to()));
        }
        json_body(request, &acls)
    }
}

#[cfg(test)]
mod tests;
