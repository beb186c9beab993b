//! The benchmark's ACL options, as RocketMQ's benchmark has them: `-a/--aclEnable true`
//! signs every request with `-ak/--accessKey` and `-sk/--secretKey` (defaults: RocketMQ's
//! sample account `rocketmq2` / `12345678`).

use std::ffi::OsString;

use stellmq_client::SessionCredentials;

/// RocketMQ benchmark's default account (its `AclClient`).
pub const DEFAULT_ACCESS_KEY: &str = "rocketmq2";
pub const DEFAULT_SECRET_KEY: &str = "12345678";

#[derive(clap::Args, Debug, Clone, Default)]
pub struct BenchAclArgs {
    /// Sign requests (plain ACL).
    #[arg(short = 'a', long = "aclEnable", default_value_t = false, action = clap::ArgAction::Set)]
    pub acl_enable: bool,
    /// Acl access key (also -ak), default rocketmq2.
    #[arg(long = "accessKey")]
    pub access_key: Option<String>,
    /// Acl secret key (also -sk), default 12345678.
    #[arg(long = "secretKey")]
    pub secret_key: Option<String>,
}

impl BenchAclArgs {
    /// The credentials to sign with; `None` unless `-a true`.
    pub fn credentials(&self) -> Option<SessionCredentials> {
        self.acl_enable.then(|| {
            SessionCredentials::new(
                self.access_key.as_deref().unwrap_or(DEFAULT_ACCESS_KEY),
                self.secret_key.as_deref().unwrap_or(DEFAULT_SECRET_KEY),
            )
        })
    }
}

/// RocketMQ's two-letter options `-ak`, `-sk` and `-ri` (which clap has no short form for)
/// as `--accessKey`, `--secretKey` and `--reportInterval`; every other argument unchanged.
pub fn expand_two_letter_options(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .map(|arg| match arg.to_str() {
            Some("-ak") => OsString::from("--accessKey"),
            Some("-sk") => OsString::from("--secretKey"),
            Some("-ri") => OsString::from("--reportInterval"),
            _ => arg,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser, Debug)]
    struct Bench {
        #[command(flatten)]
        acl: BenchAclArgs,
    }

    fn parse(args: &[&str]) -> BenchAclArgs {
        let argv = std::iter::once("mqbench")
            .chain(args.iter().copied())
            .map(OsString::from);
        Bench::try_parse_from(expand_two_letter_options(argv))
            .expect("parses")
            .acl
    }

    fn keys(c: Option<SessionCredentials>) -> Option<(String, String)> {
        c.map(|c| (c.access_key, c.secret_key))
    }

    #[test]
    fn rocketmqs_benchmark_options() {
        assert_eq!(keys(parse(&[]).credentials()), None);
        assert_eq!(
            keys(parse(&["-ak", "ak", "-sk", "sk"]).credentials()),
            None,
            "keys without -a true sign nothing"
        );
        assert_eq!(
            keys(parse(&["-a", "true"]).credentials()),
            Some(("rocketmq2".into(), "12345678".into()))
        );
        assert_eq!(
            keys(parse(&["-a", "true", "-ak", "ak", "-sk", "sk"]).credentials()),
            Some(("ak".into(), "sk".into()))
        );
        assert_eq!(
            keys(
                parse(&[
                    "--aclEnable",
                    "true",
                    "--accessKey",
                    "x",
                    "--secretKey",
                    "y"
                ])
                .credentials()
            ),
            Some(("x".into(), "y".into()))
        );
    }
}
