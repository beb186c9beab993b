//! ACL 2.0 administration of brokers (RocketMQ 5.3+, request codes 3001-3010): users and
//! their policies. The caller signs as a user allowed to manage them (a super user, or one
//! with Update/Get on the cluster) when the broker checks requests.

use serde::de::DeserializeOwned;
use stellmq_remoting::protocol::body::auth::{AclInfo, UserInfo};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{bare, read};

fn with_fields(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
    let mut request = bare(code);
    for (key, value) in fields {
        request.ext_fields.insert(*key, *value);
    }
    request
}

fn with_json(
    mut request: RemotingCommand,
    body: &impl serde::Serialize,
) -> Result<RemotingCommand, ClientError> {
    let bytes = serde_json::to_vec(body).map_err(|e| ClientError::Invalid(e.to_string()))?;
    request.body = bytes.into();
    Ok(request)
}

/// An answer's JSON body, or `None` when the broker sent none (nothing found).
fn optional<T: DeserializeOwned>(response: RemotingCommand) -> Result<Option<T>, ClientError> {
    if response.body.is_empty() {
        return Ok(None);
    }
    read::json(response).map(Some)
}

impl AdminClient {
    /// AUTH_CREATE_USER: creates `user` (its `username`) on `broker`.
    pub async fn create_user(&self, broker: &str, user: &UserInfo) -> Result<(), ClientError> {
        let name = user.username.clone().unwrap_or_default();
        let request = with_json(
            with_fields(RequestCode::AUTH_CREATE_USER, &[("username", &name)]),
            user,
        )?;
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// AUTH_UPDATE_USER: changes what `user` gives of an existing user.
    pub async fn update_user(&self, broker: &str, user: &UserInfo) -> Result<(), ClientError> {
        let name = user.username.clone().unwrap_or_default();
        let request = with_json(
            with_fields(RequestCode::AUTH_UPDATE_USER, &[("username", &name)]),
            user,
        )?;
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// AUTH_DELETE_USER: deletes a user and its policies.
    pub async fn delete_user(&self, broker: &str, username: &str) -> Result<(), ClientError> {
        let request = with_fields(RequestCode::AUTH_DELETE_USER, &[("username", username)]);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// AUTH_GET_USER: the user, or `None`.
    pub async fn get_user(
        &self,
        broker: &str,
        username: &str,
    ) -> Result<Option<UserInfo>, ClientError> {
        let request = with_fields(RequestCode::AUTH_GET_USER, &[("username", username)]);
        self.ask(To::Addr(broker), request, optional).await
    }

    /// AUTH_LIST_USER: users whose name contains `filter` (all when empty).
    pub async fn list_users(
        &self,
        broker: &str,
        filter: &str,
    ) -> Result<Vec<UserInfo>, ClientError> {
        let request = with_fields(RequestCode::AUTH_LIST_USER, &[("filter", filter)]);
        Ok(self
            .ask(To::Addr(broker), request, optional)
            .await?
            .unwrap_or_default())
    }

    /// AUTH_CREATE_ACL: adds `acl`'s policies to its subject's.
    pub async fn create_acl(&self, broker: &str, acl: &AclInfo) -> Result<(), ClientError> {
        self.put_acl(RequestCode::AUTH_CREATE_ACL, broker, acl)
            .await
    }

    /// AUTH_UPDATE_ACL: changes the entries `acl` names of its subject's policies.
    pub async fn update_acl(&self, broker: &str, acl: &AclInfo) -> Result<(), ClientError> {
        self.put_acl(RequestCode::AUTH_UPDATE_ACL, broker, acl)
            .await
    }

    async fn put_acl(
        &self,
        code: RequestCode,
        broker: &str,
        acl: &AclInfo,
    ) -> Result<(), ClientError> {
        let subject = acl.subject.clone().unwrap_or_default();
        let request = with_json(with_fields(code, &[("subject", &subject)]), acl)?;
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// AUTH_DELETE_ACL: one resource's entry of the subject's custom policy, or (without
    /// a resource) the subject's whole ACL.
    pub async fn delete_acl(
        &self,
        broker: &str,
        subject: &str,
        resource: Option<&str>,
    ) -> Result<(), ClientError> {
        let mut fields = vec![("subject", subject)];
        if let Some(resource) = resource {
            fields.push(("resource", resource));
        }
        let request = with_fields(RequestCode::AUTH_DELETE_ACL, &fields);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// AUTH_GET_ACL: the subject's policies, or `None`.
    pub async fn get_acl(
        &self,
        broker: &str,
        subject: &str,
    ) -> Result<Option<AclInfo>, ClientError> {
        let request = with_fields(RequestCode::AUTH_GET_ACL, &[("subject", subject)]);
        self.ask(To::Addr(broker), request, optional).await
    }

    /// AUTH_LIST_ACL: ACLs whose subject contains `subject_filter` with the entries whose
    /// resource contains `resource_filter` (all when empty).
    pub async fn list_acls(
        &self,
        broker: &str,
        subject_filter: &str,
        resource_filter: &str,
    ) -> Result<Vec<AclInfo>, ClientError> {
        let request = with_fields(
            RequestCode::AUTH_LIST_ACL,
            &[
                ("subjectFilter", subject_filter),
                ("resourceFilter", resource_filter),
            ],
        );
        Ok(self
            .ask(To::Addr(broker), request, optional)
            .await?
            .unwrap_or_default())
    }
}
