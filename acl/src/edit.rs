//! Changes made through the ACL admin requests (`updateAclConfig`, `deleteAclConfig`,
//! `updateGlobalWhiteAddr`): the file is read again, changed, checked together with every
//! other file, written atomically with its `dataVersion` bumped, and the ACL reloaded. An
//! edit that would leave the ACL unloadable is refused and writes nothing. Blocking.

use std::path::{Path, PathBuf};

use crate::address::{self, AddressPattern};
use crate::error::AclError;
use crate::file::{AccountConfig, FileVersion, PlainAclFile};
use crate::rules::{self, AclRules};
use crate::source::read_file;
use crate::validator::AccessValidator;

/// One account's new settings; `None` keeps what the file has.
#[derive(Clone, Default)]
pub struct AccountEdit {
    pub access_key: String,
    pub secret_key: String,
    pub white_remote_address: Option<String>,
    pub admin: bool,
    pub default_topic_perm: Option<String>,
    pub default_group_perm: Option<String>,
    pub topic_perms: Option<Vec<String>>,
    pub group_perms: Option<Vec<String>>,
}

impl AccountEdit {
    fn validate(&self) -> Result<(), AclError> {
        let keys = AccountConfig {
            access_key: Some(self.access_key.clone()),
            secret_key: Some(self.secret_key.clone()),
            ..AccountConfig::default()
        };
        rules::check_keys(&keys).map_err(AclError::BadEdit)?;
        if let Some(white) = &self.white_remote_address {
            AddressPattern::parse(white)?;
        }
        for perm in [&self.default_topic_perm, &self.default_group_perm]
            .into_iter()
            .flatten()
        {
            rules::parse_default_perm(Some(perm)).map_err(AclError::BadEdit)?;
        }
        rules::parse_resource_perms(self.topic_perms.as_deref().unwrap_or(&[]), "topic")
            .map_err(AclError::BadEdit)?;
        rules::parse_resource_perms(self.group_perms.as_deref().unwrap_or(&[]), "group")
            .map_err(AclError::BadEdit)?;
        Ok(())
    }

    fn apply(&self, account: &mut AccountConfig) {
        account.access_key = Some(self.access_key.clone());
        account.secret_key = Some(self.secret_key.clone());
        account.admin = self.admin;
        if let Some(white) = &self.white_remote_address {
            account.white_remote_address = Some(white.clone());
        }
        let non_empty = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
        if let Some(perm) = non_empty(&self.default_topic_perm) {
            account.default_topic_perm = Some(perm);
        }
        if let Some(perm) = non_empty(&self.default_group_perm) {
            account.default_group_perm = Some(perm);
        }
        if let Some(perms) = &self.topic_perms {
            account.topic_perms = perms.clone();
        }
        if let Some(perms) = &self.group_perms {
            account.group_perms = perms.clone();
        }
    }
}

impl AccessValidator {
    /// Creates or changes an account: in the file that defines it, else the default file.
    pub fn update_account(&self, edit: &AccountEdit, now_ms: i64) -> Result<(), AclError> {
        edit.validate()?;
        let _edit = self.edits.lock();
        let path = self.file_of(&edit.access_key);
        let mut file = read_file(&path)?;
        let key = Some(edit.access_key.clone());
        match file.accounts.iter_mut().find(|a| a.access_key == key) {
            Some(account) => edit.apply(account),
            None => {
                let mut account = AccountConfig::default();
                edit.apply(&mut account);
                file.accounts.push(account);
            }
        }
        self.commit(path, file, now_ms)
    }

    /// Deletes an account; `false` when no file defines it.
    pub fn delete_account(&self, access_key: &str, now_ms: i64) -> Result<bool, AclError> {
        let _edit = self.edits.lock();
        let Some(path) = self.rules().account(access_key).map(|a| a.file.clone()) else {
            return Ok(false);
        };
        let mut file = read_file(&path)?;
        let before = file.accounts.len();
        file.accounts
            .retain(|a| a.access_key.as_deref() != Some(access_key));
        if file.accounts.len() == before {
            return Ok(false);
        }
        self.commit(path, file, now_ms)?;
        Ok(true)
    }

    /// Replaces the global white list of one ACL file (the default file when `file` is
    /// empty). Only a file this ACL loaded can be named: a request never picks a path.
    pub fn update_global_white(
        &self,
        addresses: Vec<String>,
        file: Option<&str>,
        now_ms: i64,
    ) -> Result<(), AclError> {
        address::parse_all(addresses.iter().map(String::as_str))?;
        let _edit = self.edits.lock();
        let path = match file.map(str::trim).filter(|f| !f.is_empty()) {
            None => self.source.default_file().to_owned(),
            Some(named) => self.loaded_file(Path::new(named))?,
        };
        let mut content = read_file(&path)?;
        content.global_white_remote_addresses = addresses;
        self.commit(path, content, now_ms)
    }

    /// Every file's global white list and accounts, secrets included (admins only).
    pub fn all_config(&self) -> (Vec<String>, Vec<AccountConfig>) {
        let rules = self.rules();
        let white = rules
            .files
            .iter()
            .flat_map(|(_, f)| f.global_white_remote_addresses.clone())
            .collect();
        let accounts = rules
            .files
            .iter()
            .flat_map(|(_, f)| f.accounts.clone())
            .collect();
        (white, accounts)
    }

    /// The default file's version (RocketMQ's `version` of GET_BROKER_CLUSTER_ACL_INFO).
    pub fn default_version(&self) -> FileVersion {
        self.rules()
            .file(self.source.default_file())
            .map(PlainAclFile::version)
            .unwrap_or_default()
    }

    /// Every file's version.
    pub fn versions(&self) -> Vec<(PathBuf, FileVersion)> {
        self.rules()
            .files
            .iter()
            .map(|(p, f)| (p.clone(), f.version()))
            .collect()
    }

    fn file_of(&self, access_key: &str) -> PathBuf {
        self.rules()
            .account(access_key)
            .map(|a| a.file.clone())
            .unwrap_or_else(|| self.source.default_file().to_owned())
    }

    fn loaded_file(&self, named: &Path) -> Result<PathBuf, AclError> {
        let wanted = named.canonicalize().ok();
        self.rules()
            .files
            .iter()
            .map(|(p, _)| p.clone())
            .find(|p| wanted.is_some() && p.canonicalize().ok() == wanted)
            .ok_or_else(|| {
                AclError::BadEdit(format!(
                    "{} is not an ACL file of this server",
                    named.display()
                ))
            })
    }

    /// Checks the edited file together with the others, then writes it and reloads.
    fn commit(
        &self,
        path: PathBuf,
        mut content: PlainAclFile,
        now_ms: i64,
    ) -> Result<(), AclError> {
        content.bump_version(now_ms);
        let mut files = self.source.load()?;
        match files.iter_mut().find(|(p, _)| *p == path) {
            Some((_, file)) => *file = content.clone(),
            None => files.push((path.clone(), content.clone())),
        }
        AclRules::compile(files)?;
        let text = content.render()?;
        // Never write what the next load would refuse to read.
        if text.len() as u64 > crate::source::MAX_FILE_BYTES {
            return Err(AclError::BadEdit(format!(
                "the edit would make {} larger than {} bytes",
                path.display(),
                crate::source::MAX_FILE_BYTES
            )));
        }
        stellmq_config::write_atomically(&path, text.as_bytes()).map_err(|source| {
            AclError::Write {
                path: path.clone(),
                source,
            }
        })?;
        self.reload()
    }
}
