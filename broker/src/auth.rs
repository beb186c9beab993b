//! ACL 2.0 on a broker: its users and policies live in the metadata store (committed
//! before a change is answered), `initAuthenticationUser` and the inner credentials are
//! super users, a plain_acl.yml is migrated on request, and with authenticationEnabled or
//! authorizationEnabled every request passes the [`AuthChecker`] before any processor.

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use stellmq_acl::auth::info::{acl_info, AclInfo, AclInfoExt, UserInfo};
use stellmq_acl::auth::{
    migrate, parse_whitelist, Acl, AuthChecker, AuthError, AuthPersist, AuthRegistry, AuthSettings,
    User,
};
use stellmq_acl::AclSource;
use stellmq_metadata::{MetadataStore, Named};
use stellmq_remoting::protocol::body::DataVersion;

use crate::config::BrokerConfig;
use crate::context::now_ms;
use crate::server::BrokerError;

/// A broker's ACL 2.0: the registry always (the admin requests work whether or not the
/// checks are on), the checker when they are.
pub struct BrokerAuth {
    pub registry: Arc<AuthRegistry>,
    pub checker: Option<Arc<AuthChecker>>,
}

/// Commits each user or ACL change to the metadata store.
struct StoredAuth {
    store: Arc<MetadataStore>,
    versions: Mutex<(DataVersion, DataVersion)>,
}

impl StoredAuth {
    fn save<V: serde::Serialize>(
        &self,
        named: Named,
        key: &str,
        value: Option<V>,
    ) -> Result<(), AuthError> {
        let version = {
            let mut versions = self.versions.lock();
            let version = match named {
                Named::Users => &mut versions.0,
                _ => &mut versions.1,
            };
            version.next(now_ms());
            *version
        };
        self.store
            .write_named(named, &[(key.to_owned(), value)], &version)
            .map_err(|e| AuthError::Store(e.to_string()))
    }
}

impl AuthPersist for StoredAuth {
    fn save_user(&self, username: &str, user: Option<&User>) -> Result<(), AuthError> {
        self.save(Named::Users, username, user)
    }

    fn save_acl(&self, subject: &str, acl: Option<&Acl>) -> Result<(), AuthError> {
        self.save(Named::Acls, subject, acl.map(acl_info))
    }
}

/// Loads the users and policies, creates the configured super users, migrates ACL 1.0
/// when asked, and builds the checker (blocking).
pub fn open(bc: &BrokerConfig, store: Arc<MetadataStore>) -> Result<BrokerAuth, BrokerError> {
    let (users, users_version) = store.named::<User>(Named::Users)?;
    let (acls, acls_version) = store.named::<AclInfo>(Named::Acls)?;
    let acls: Vec<Acl> = acls
        .into_iter()
        .filter_map(|(subject, info)| match info.to_acl(&subject) {
            Ok(acl) => Some(acl),
            Err(e) => {
                tracing::warn!(%subject, error = %e, "stored ACL is invalid; left out");
                None
            }
        })
        .collect();
    let now = now_ms();
    let persist = StoredAuth {
        store,
        versions: Mutex::new((
            users_version.unwrap_or_else(|| DataVersion::new(now)),
            acls_version.unwrap_or_else(|| DataVersion::new(now)),
        )),
    };
    let registry = Arc::new(AuthRegistry::new(
        users.into_values().collect(),
        acls,
        Box::new(persist),
    ));
    create_super_users(bc, &registry)?;
    if bc.migrate_auth_from_v1_enabled {
        migrate_plain_acl(bc, &registry)?;
    }
    let checker = (bc.authentication_enabled || bc.authorization_enabled).then(|| {
        tracing::info!(
            event = "AUTH_ENABLED",
            authentication = bc.authentication_enabled,
            authorization = bc.authorization_enabled,
            users = registry.user_count(),
            "requests are checked against ACL 2.0"
        );
        let settings = AuthSettings {
            authentication: bc.authentication_enabled,
            authorization: bc.authorization_enabled,
            authentication_whitelist: parse_whitelist(&bc.authentication_whitelist),
            authorization_whitelist: parse_whitelist(&bc.authorization_whitelist),
            cluster: bc.broker_cluster_name.clone(),
        };
        Arc::new(AuthChecker::new(settings, registry.clone()))
    });
    Ok(BrokerAuth { registry, checker })
}

fn rejected(key: &str, reason: impl std::fmt::Display) -> BrokerError {
    BrokerError::Config(stellmq_config::ConfigError::Rejected {
        key: key.into(),
        reason: reason.to_string(),
    })
}

/// `initAuthenticationUser` and the inner credentials become super users when no user of
/// their name exists, as in RocketMQ.
fn create_super_users(bc: &BrokerConfig, registry: &AuthRegistry) -> Result<(), BrokerError> {
    let mut supers = Vec::new();
    let init = bc.init_authentication_user.trim();
    if !init.is_empty() {
        let info: UserInfo = serde_json::from_str(init).map_err(|_| {
            rejected(
                "initAuthenticationUser",
                r#"expected {"username":"...","password":"..."}"#,
            )
        })?;
        let name = info.username.clone().unwrap_or_default();
        supers.push(("initAuthenticationUser", name, info.password));
    }
    if let Some(inner) = bc
        .inner_credentials()
        .map_err(|e| rejected("innerClientAuthenticationCredentials", e))?
    {
        supers.push((
            "innerClientAuthenticationCredentials",
            inner.access_key,
            Some(inner.secret_key),
        ));
    }
    for (key, name, password) in supers {
        if registry.user(name.trim()).is_some() {
            continue;
        }
        let info = UserInfo {
            username: Some(name.clone()),
            password,
            user_type: Some("Super".to_owned()),
            user_status: None,
        };
        registry
            .create_user(name.trim(), &info)
            .map_err(|e| rejected(key, e))?;
        tracing::info!(event = "AUTH_SUPER_USER_CREATED", user = %name.trim(), from = key);
    }
    Ok(())
}

fn migrate_plain_acl(bc: &BrokerConfig, registry: &AuthRegistry) -> Result<(), BrokerError> {
    let source = AclSource::in_home(Path::new(&bc.rocketmq_home));
    let files: Vec<_> = source.load()?.into_iter().map(|(_, file)| file).collect();
    let done = migrate::migrate(registry, &files);
    tracing::info!(
        event = "AUTH_MIGRATED_FROM_V1",
        users = done.users,
        skipped = done.skipped,
        failed = done.failed,
        file = %source.default_file().display(),
        "plain ACL accounts migrated to ACL 2.0"
    );
    Ok(())
}
