//! Plain-ACL administration of brokers (RocketMQ 4.x ACL 1.0, request codes 50-54): accounts,
//! the global white list, and what a broker's ACL files hold. The caller needs an admin
//! account's credentials ([`AdminClient::with_credentials`]).

use stellmq_remoting::protocol::body::{AclConfig, ClusterAclVersionInfo, PlainAccessConfig};
use stellmq_remoting::protocol::headers::{
    CreateAccessConfigRequestHeader, DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader, UpdateGlobalWhiteAddrsConfigRequestHeader,
};
use stellmq_remoting::protocol::RequestCode;

use super::{AdminClient, To};
use crate::error::ClientError;
use crate::request::{bare, read, request};

impl AdminClient {
    /// UPDATE_AND_CREATE_ACL_CONFIG: creates the account of `account.access_key` on
    /// `broker`, or changes it.
    pub async fn create_and_update_plain_access_config(
        &self,
        broker: &str,
        account: &PlainAccessConfig,
    ) -> Result<(), ClientError> {
        if account.access_key.as_deref().is_none_or(str::is_empty) {
            return Err(ClientError::Invalid("an account needs an accessKey".into()));
        }
        let header = CreateAccessConfigRequestHeader::from(account);
        let request = request(RequestCode::UPDATE_AND_CREATE_ACL_CONFIG, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// DELETE_ACL_CONFIG: deletes the account of `access_key` on `broker`.
    pub async fn delete_plain_access_config(
        &self,
        broker: &str,
        access_key: &str,
    ) -> Result<(), ClientError> {
        let header = DeleteAccessConfigRequestHeader {
            access_key: access_key.to_owned(),
        };
        let request = request(RequestCode::DELETE_ACL_CONFIG, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replaces the global white list (`addrs`,
    /// comma-separated) of the default ACL file, or of `acl_file_full_path`.
    pub async fn update_global_white_addr_config(
        &self,
        broker: &str,
        addrs: &str,
        acl_file_full_path: Option<&str>,
    ) -> Result<(), ClientError> {
        let header = UpdateGlobalWhiteAddrsConfigRequestHeader {
            global_white_addrs: addrs.to_owned(),
            acl_file_full_path: acl_file_full_path.map(str::to_owned),
        };
        let request = request(RequestCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, &header);
        self.ask(To::Addr(broker), request, read::nothing).await
    }

    /// GET_BROKER_CLUSTER_ACL_INFO: the versions of `broker`'s ACL files.
    pub async fn examine_broker_cluster_acl_version_info(
        &self,
        broker: &str,
    ) -> Result<ClusterAclVersionInfo, ClientError> {
        let request = bare(RequestCode::GET_BROKER_CLUSTER_ACL_INFO);
        let header: GetBrokerAclConfigResponseHeader =
            self.ask(To::Addr(broker), request, read::header).await?;
        Ok(ClusterAclVersionInfo::from_header(&header)?)
    }

    /// GET_BROKER_CLUSTER_ACL_CONFIG: every global white address and account of `broker`.
    pub async fn examine_broker_cluster_acl_config(
        &self,
        broker: &str,
    ) -> Result<AclConfig, ClientError> {
        let request = bare(RequestCode::GET_BROKER_CLUSTER_ACL_CONFIG);
        self.ask(To::Addr(broker), request, read::json).await
    }
}
