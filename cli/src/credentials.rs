//! The credentials the tools sign with (plain ACL): `--accessKey`/`--secretKey`, or else
//! RocketMQ's `conf/tools.yml` (`accessKey:` and `secretKey:`) under `$ROCKETMQ_HOME` or
//! `$STELLMQ_HOME`, as RocketMQ's `mqadmin` reads it. Flags win over the file.

use std::path::{Path, PathBuf};

use stellmq_client::SessionCredentials;
use thiserror::Error;

/// Where RocketMQ keeps the tools' credentials, under its home directory.
pub const TOOLS_YML: &str = "conf/tools.yml";

/// Home directories searched for [`TOOLS_YML`], in order.
pub const HOME_VARIABLES: [&str; 2] = ["ROCKETMQ_HOME", "STELLMQ_HOME"];

#[derive(Debug, Error)]
pub enum CredentialsError {
    #[error("give both --accessKey and --secretKey, or neither")]
    Incomplete,
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid YAML: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: yaml_serde::Error,
    },
}

/// The `accessKey` and `secretKey` of a tools.yml text; `None` when either is missing or
/// blank (RocketMQ then signs nothing). Numbers are read as their text
/// (`secretKey: 12345678`).
pub fn parse_tools_yml(text: &str) -> Result<Option<SessionCredentials>, yaml_serde::Error> {
    let doc: yaml_serde::Value = yaml_serde::from_str(text)?;
    let field = |key: &str| -> Option<String> {
        let text = match doc.get(key)? {
            yaml_serde::Value::String(s) => s.clone(),
            yaml_serde::Value::Number(n) => n.to_string(),
            yaml_serde::Value::Bool(b) => b.to_string(),
            _ => return None,
        };
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    };
    Ok(field("accessKey")
        .zip(field("secretKey"))
        .map(|(access, secret)| SessionCredentials::new(access, secret)))
}

/// The credentials in the tools.yml at `path`; `None` when there is no such file.
pub fn read_tools_yml(path: &Path) -> Result<Option<SessionCredentials>, CredentialsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(CredentialsError::Read {
                path: path.to_owned(),
                source,
            })
        }
    };
    parse_tools_yml(&text).map_err(|source| CredentialsError::Parse {
        path: path.to_owned(),
        source,
    })
}

/// The tools.yml files to look at, from the home directories `env` names.
pub fn tools_yml_candidates(env: impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    HOME_VARIABLES
        .iter()
        .filter_map(|var| env(var))
        .filter(|home| !home.trim().is_empty())
        .map(|home| Path::new(&home).join(TOOLS_YML))
        .collect()
}

/// What a tool signs with: both flags; else the first tools.yml that exists (from
/// `env`'s home directories); else nothing.
pub fn resolve(
    access_key: Option<&str>,
    secret_key: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<SessionCredentials>, CredentialsError> {
    match (access_key, secret_key) {
        (Some(access), Some(secret)) => {
            return Ok(Some(SessionCredentials::new(access.trim(), secret.trim())))
        }
        (None, None) => {}
        _ => return Err(CredentialsError::Incomplete),
    }
    for path in tools_yml_candidates(env) {
        if path.exists() {
            return read_tools_yml(&path);
        }
    }
    Ok(None)
}

/// [`resolve`] with the process environment.
pub fn from_flags_or_tools_yml(
    access_key: Option<&str>,
    secret_key: Option<&str>,
) -> Result<Option<SessionCredentials>, CredentialsError> {
    resolve(access_key, secret_key, |var| std::env::var(var).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(c: &Option<SessionCredentials>) -> Option<(&str, &str)> {
        c.as_ref()
            .map(|c| (c.access_key.as_str(), c.secret_key.as_str()))
    }

    #[test]
    fn rocketmqs_sample_tools_yml_parses() {
        let text = "# Licensed to the ASF\n\n\naccessKey: rocketmq2\nsecretKey: 12345678\n    \n";
        let parsed = parse_tools_yml(text).expect("valid");
        assert_eq!(keys(&parsed), Some(("rocketmq2", "12345678")));
    }

    #[test]
    fn the_shipped_conf_tools_yml_parses() {
        let text = include_str!("../../conf/tools.yml");
        let parsed = parse_tools_yml(text).expect("valid");
        assert_eq!(keys(&parsed), Some(("rocketmq2", "12345678")));
        // conf/plain_acl.yml makes that account an admin, as admin commands need.
        let acl = include_str!("../../conf/plain_acl.yml");
        let account = acl
            .split("  - accessKey: ")
            .find(|a| a.starts_with("rocketmq2\n    secretKey: 12345678\n"))
            .expect("the tools' account in plain_acl.yml");
        assert!(account.contains("\n    admin: true\n"), "{account}");
    }

    #[test]
    fn quoted_values_and_blank_or_missing_keys() {
        let parsed = parse_tools_yml("accessKey: 'ak 1'\nsecretKey: \"s:k\"\n").expect("ok");
        assert_eq!(keys(&parsed), Some(("ak 1", "s:k")));
        assert_eq!(keys(&parse_tools_yml("accessKey: ak\n").expect("ok")), None);
        assert_eq!(
            keys(&parse_tools_yml("accessKey: ak\nsecretKey: '  '\n").expect("ok")),
            None
        );
        assert_eq!(keys(&parse_tools_yml("").expect("empty file")), None);
        assert_eq!(keys(&parse_tools_yml("- a\n- b\n").expect("a list")), None);
        assert!(parse_tools_yml("accessKey: [unclosed\n").is_err());
    }

    #[test]
    fn flags_win_over_the_file_and_must_come_in_pairs() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir_all(dir.path().join("conf")).expect("conf");
        std::fs::write(
            dir.path().join(TOOLS_YML),
            "accessKey: fromFile\nsecretKey: fileSecret\n",
        )
        .expect("write");
        let home = dir.path().display().to_string();
        let rocketmq_home = |var: &str| (var == "ROCKETMQ_HOME").then(|| home.clone());
        let stellmq_home = |var: &str| (var == "STELLMQ_HOME").then(|| home.clone());
        let nowhere = |_: &str| None;

        let flags = resolve(Some("ak"), Some("sk"), rocketmq_home).expect("flags");
        assert_eq!(keys(&flags), Some(("ak", "sk")));
        let file = resolve(None, None, rocketmq_home).expect("file");
        assert_eq!(keys(&file), Some(("fromFile", "fileSecret")));
        let file = resolve(None, None, stellmq_home).expect("file");
        assert_eq!(keys(&file), Some(("fromFile", "fileSecret")));
        assert_eq!(keys(&resolve(None, None, nowhere).expect("none")), None);
        assert!(matches!(
            resolve(Some("ak"), None, nowhere),
            Err(CredentialsError::Incomplete)
        ));
    }

    #[test]
    fn the_first_existing_home_is_used_and_a_broken_file_is_an_error() {
        let empty = tempfile::tempdir().expect("dir");
        let broken = tempfile::tempdir().expect("dir");
        std::fs::create_dir_all(broken.path().join("conf")).expect("conf");
        std::fs::write(broken.path().join(TOOLS_YML), "accessKey: [x\n").expect("write");
        let (e, b) = (
            empty.path().display().to_string(),
            broken.path().display().to_string(),
        );
        let env = |var: &str| match var {
            "ROCKETMQ_HOME" => Some(e.clone()),
            "STELLMQ_HOME" => Some(b.clone()),
            _ => None,
        };
        assert_eq!(
            tools_yml_candidates(env),
            [empty.path().join(TOOLS_YML), broken.path().join(TOOLS_YML)]
        );
        let err = resolve(None, None, env).expect_err("broken file");
        assert!(err.to_string().contains("tools.yml"), "{err}");
    }
}
