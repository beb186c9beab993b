//! `plain_acl.yml` as RocketMQ writes it: `globalWhiteRemoteAddresses`, `accounts` and
//! `dataVersion`. Scalars are read leniently (`secretKey: 12345678` is a YAML number; RocketMQ
//! reads it as text), absent and null keys are `None`.

use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::AclError;

/// One ACL file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlainAclFile {
    #[serde(
        default,
        deserialize_with = "text_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub global_white_remote_addresses: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accounts: Vec<AccountConfig>,
    #[serde(
        default,
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub data_version: Vec<FileVersion>,
}

/// One account, as written in the file and as `updateAclConfig` sends it.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountConfig {
    #[serde(default, deserialize_with = "text")]
    pub access_key: Option<String>,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "Option::is_none"
    )]
    pub secret_key: Option<String>,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "Option::is_none"
    )]
    pub white_remote_address: Option<String>,
    #[serde(default, deserialize_with = "flag")]
    pub admin: bool,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "Option::is_none"
    )]
    pub default_topic_perm: Option<String>,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "Option::is_none"
    )]
    pub default_group_perm: Option<String>,
    #[serde(
        default,
        deserialize_with = "text_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub topic_perms: Vec<String>,
    #[serde(
        default,
        deserialize_with = "text_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub group_perms: Vec<String>,
}

impl std::fmt::Debug for AccountConfig {
    // Never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountConfig")
            .field("access_key", &self.access_key)
            .field("white_remote_address", &self.white_remote_address)
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

/// `dataVersion` of a file: bumped by every change made through the admin requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileVersion {
    #[serde(default)]
    pub counter: i64,
    #[serde(default)]
    pub timestamp: i64,
}

impl PlainAclFile {
    pub fn parse(text: &str, path: &Path) -> Result<PlainAclFile, AclError> {
        if text.trim().is_empty() {
            return Ok(PlainAclFile::default());
        }
        yaml_serde::from_str::<Option<PlainAclFile>>(text)
            .map(Option::unwrap_or_default)
            .map_err(|e| AclError::Parse {
                path: path.to_owned(),
                reason: e.to_string(),
            })
    }

    pub fn render(&self) -> Result<String, AclError> {
        yaml_serde::to_string(self).map_err(|e| AclError::Render(e.to_string()))
    }

    /// The file's version (RocketMQ keeps it as a one-element list).
    pub fn version(&self) -> FileVersion {
        self.data_version.first().copied().unwrap_or_default()
    }

    /// Bumps the version as RocketMQ's DataVersion.nextVersion does.
    pub fn bump_version(&mut self, now_ms: i64) {
        let current = self.version();
        self.data_version = vec![FileVersion {
            counter: current.counter + 1,
            timestamp: now_ms,
        }];
    }
}

/// A YAML scalar of any type as text.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scalar {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    fn into_text(self) -> String {
        match self {
            Scalar::Text(s) => s,
            Scalar::Int(n) => n.to_string(),
            Scalar::Float(x) => x.to_string(),
            Scalar::Bool(b) => b.to_string(),
        }
    }
}

fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<Scalar>::deserialize(d)?.map(Scalar::into_text))
}

fn text_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<Option<Scalar>>>::deserialize(d)?
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .map(Scalar::into_text)
        .collect())
}

fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let value = Option::<Scalar>::deserialize(d)?;
    match value {
        None => Ok(false),
        Some(Scalar::Bool(b)) => Ok(b),
        Some(Scalar::Text(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Scalar::Text(s)) if s.eq_ignore_ascii_case("false") || s.is_empty() => Ok(false),
        Some(_) => Err(serde::de::Error::custom("expected true or false")),
    }
}

fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
dataVersion:
  - counter: 3
    timestamp: 1700000000000
"#;

    #[test]
    fn reads_rocketmqs_sample() {
        let file = PlainAclFile::parse(SAMPLE, Path::new("plain_acl.yml")).expect("parses");
        assert_eq!(
            file.global_white_remote_addresses,
            ["10.10.103.*", "192.168.0.*"]
        );
        let first = &file.accounts[0];
        assert_eq!(first.access_key.as_deref(), Some("RocketMQ"));
        assert_eq!(
            first.secret_key.as_deref(),
            Some("12345678"),
            "a YAML number read as text"
        );
        assert_eq!(first.white_remote_address, None);
        assert_eq!(first.topic_perms, ["topicA=DENY", "topicB=PUB|SUB"]);
        assert!(file.accounts[1].admin);
        assert_eq!(file.version().counter, 3);
    }

    #[test]
    fn empty_and_broken_files() {
        assert_eq!(
            PlainAclFile::parse("", Path::new("x")).expect("empty"),
            PlainAclFile::default()
        );
        assert_eq!(
            PlainAclFile::parse("# only a comment\n", Path::new("x")).expect("comment"),
            PlainAclFile::default()
        );
        let broken = PlainAclFile::parse("accounts: [ {accessKey: a", Path::new("x"));
        assert!(matches!(broken, Err(AclError::Parse { .. })), "{broken:?}");
        let wrong_type = PlainAclFile::parse("accounts: 5\n", Path::new("x"));
        assert!(wrong_type.is_err());
    }

    #[test]
    fn renders_and_reads_back() {
        let mut file = PlainAclFile::parse(SAMPLE, Path::new("x")).expect("parses");
        file.bump_version(42);
        let again =
            PlainAclFile::parse(&file.render().expect("renders"), Path::new("x")).expect("reads");
        assert_eq!(again, file);
        assert_eq!(
            again.version(),
            FileVersion {
                counter: 4,
                timestamp: 42
            }
        );
    }
}
