//! ACL 2.0 administration of brokers (RocketMQ 5.3+, request codes 3001-3010): users and
//! their policies. The caller signs as a user allowed to manage them (a super user, or one
//! with Update/Get on the cluster) when the broker checks requests.

use serde::de::DeserializeOwned;
use stellmq_remoting::protocol::body::auth::{AclInfo, UserInfo};
use stellmq_remoting::protocol::headers::{
    AclRequestHeader, DeleteAclRequestHeader, ListAclsRequestHeader, ListUsersRequestHeader,
    UserRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{read, request};

fn user_request(code: RequestCode, username: &str) -> RemotingCommand {
    let header = UserRequestHeader {
        username: Some(username.to_owned()),
    };
    request(code, &header)
}

fn acl_request(code: RequestCode, subject: &str) -> RemotingCommand {
    let header = AclRequestHeader {
        subject: Some(subject.to_owned()),
    };
    request(code, &header)
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
        let request = with_json(user_request(RequestCode::AUTH_CREATE_USER, &name), user)?;
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// AUTH_UPDATE_USER: changes what `user` gives of an existing user.
    pub async fn update_user(&self, broker: &str, user: &UserInfo) -> Result<(), ClientError> {
        let name = user.username.clone().unwrap_or_default();
        let request = with_json(user_request(RequestCode::AUTH_UPDATE_USER, &name), user)?;
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// AUTH_DELETE_USER: deletes a user and its policies.
    pub async fn delete_user(&self, broker: &str, username: &str) -> Result<(), ClientError> {
        let request = user_request(RequestCode::AUTH_DELETE_USER, username);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// AUTH_GET_USER: the user, or `None`.
    pub async fn get_user(
        &self,
        broker: &str,
        username: &str,
    ) -> Result<Option<UserInfo>, ClientError> {
        let request = user_request(RequestCode::AUTH_GET_USER, username);
        self.ask(To::Addr(broker), request, optional).await
    }

    /// AUTH_LIST_USER: users whose name contains `filter` (all when empty).
    pub async fn list_users(
        &self,
        broker: &str,
        filter: &str,
    ) -> Result<Vec<UserInfo>, ClientError> {
        let header = ListUsersRequestHeader {
            filter: Some(filter.to_owned()),
        };
        let request = request(RequestCode::AUTH_LIST_USER, &header);
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
        let request = with_json(acl_request(code, &subject), acl)?;
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
        let header = DeleteAclRequestHeader {
            subject: Some(subject.to_owned()),
            policy_type: None,
            resource: resource.map(str::to_owned),
        };
        let request = request(RequestCode::AUTH_DELETE_ACL, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// AUTH_GET_ACL: the subject's policies, or `None`.
    pub async fn get_acl(
        &self,
        broker: &str,
        subject: &str,
    ) -> Result<Option<AclInfo>, ClientError> {
        let request = acl_request(RequestCode::AUTH_GET_ACL, subject);
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
        let header = ListAclsRequestHeader {
            subject_filter: Some(subject_filter.to_owned()),
            resource_filter: Some(resource_filter.to_owned()),
        };
        let request = request(RequestCode::AUTH_LIST_ACL, &header);
        Ok(self
            .ask(To::Addr(broker), request, optional)
            .await?
            .unwrap_or_default())
    }
}
