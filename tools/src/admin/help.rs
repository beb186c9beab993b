//! RocketMQ's help screens: `mqadmin` alone (or `mqadmin help`) lists every command with a
//! one-line description, `mqadmin help <command>` prints the command's options by their
//! RocketMQ letters in commons-cli's layout. Command names match case-insensitively, as
//! RocketMQ's `findSubCommand` does.

use clap::CommandFactory;

use super::not_offered::refusal;
use super::Cli;

/// The command list `mqadmin` prints without arguments.
pub fn command_list() -> String {
    let cli = Cli::command();
    let mut out = String::from("The most commonly used mqadmin commands are:\n");
    for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let first = about.lines().next().unwrap_or_default();
        out.push_str(&format!("   {:<20} {first}\n", sub.get_name()));
    }
    out.push_str("\nRocketMQ commands not available in StellMQ (each says why):\n");
    for chunk in super::not_offered::NOT_OFFERED.chunks(4) {
        let names: Vec<&str> = chunk.iter().map(|(name, _)| *name).collect();
        out.push_str(&format!("   {}\n", names.join(", ")));
    }
    out.push_str("\nSee 'mqadmin help <command>' for more information on a specific command.\n");
    out
}

/// The command named `name` (any case, or one of its aliases), by its canonical name.
pub fn canonical_name(name: &str) -> Option<String> {
    let cli = Cli::command();
    let found = cli.get_subcommands().find(|s| {
        s.get_name().eq_ignore_ascii_case(name)
            || s.get_all_aliases().any(|a| a.eq_ignore_ascii_case(name))
    });
    found.map(|s| s.get_name().to_owned())
}

/// RocketMQ's description of an option by its long name, for options documented nowhere else.
fn default_help(long: &str) -> &'static str {
    match long {
        "aclFileFullPath" => {
            "update global white address of specified acl file, eg: /xxx/plain_test.yml"
        }
        "admin" => "set admin flag in acl config file",
        "beginTimestamp" => "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]",
        "endTimestamp" => "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]",
        "body" => "UTF-8 string format of the message body",
        "broker" => "Send message to target broker",
        "brokerAddr" => "Broker address",
        "brokerId" => "consumer from which broker id",
        "brokerName" => "Broker Name",
        "cluster" | "clusterName" => "cluster name",
        "consumeBroadcastEnable" => "broadcast",
        "consumeEnable" => "consume enable",
        "consumeFromMinEnable" => "from min offset",
        "consumeMessageOrderly" => "consume message orderly",
        "consumerGroup" | "groupName" => "consumer group name",
        "defaultGroupPerm" => "set default GroupPerm in acl config file",
        "defaultTopicPerm" => "set default topicPerm in acl config file",
        "destGroup" => "set destination consumer group",
        "srcGroup" => "set source consumer group",
        "globalWhiteRemoteAddresses" => {
            "set globalWhiteRemoteAddress list, eg: 10.10.103.*,192.168.0.*"
        }
        "group" => "set the consumer group",
        "groupPerms" => "set groupPerms list, eg: groupD=DENY,groupD=SUB",
        "topicPerms" => "set topicPerms list, eg: topicA=DENY,topicD=SUB",
        "index" => "start queue index",
        "key" => "config key",
        "value" => "config value",
        "msgId" => "Message Id",
        "msgKey" => "Message Key",
        "namespace" => "set the namespace",
        "notifyConsumerIdsChanged" => "notify consumerId changed",
        "offset" => "Queue offset",
        "perm" => "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]",
        "producerGroup" => "producer group name",
        "qid" => "Send message to target queue",
        "queue" => "queue num, ie. 1",
        "queueId" => "Queue Id",
        "retryMaxTimes" => "retry max times",
        "retryQueueNums" => "retry queue nums",
        "tags" => "Message tags",
        "topic" | "topicName" => "topic name",
        "whichBrokerWhenConsumeSlowly" => "which broker id when consume slowly",
        "order" => "set topic's order(true|false)",
        "readQueueNums" => "set read queue nums",
        "writeQueueNums" => "set write queue nums",
        "MessageNumber" => "Number of message to be consumed",
        "messageSize" => "Message Size, Default: 128",
        "count" => "message count",
        "amount" => "message amount | default 100",
        "size" => "message size | default 128 Byte",
        "force" => "set the force rollback by timestamp switch[true|false]",
        "whiteRemoteAddress" => "set white ip Address for account in acl config file",
        _ => "",
    }
}

/// One option as commons-cli lists it: `-b,--brokerAddr <arg>` and its description.
struct OptionLine {
    sort_key: String,
    left: String,
    usage: String,
    help: String,
}

fn option_line(arg: &clap::Arg, required: bool) -> Option<OptionLine> {
    let long = arg.get_long();
    let short = arg.get_short();
    if long.is_none() && short.is_none() {
        return None;
    }
    let takes_value = arg.get_action().takes_values();
    let value = if takes_value { " <arg>" } else { "" };
    let name = match (short, long) {
        (Some(s), Some(l)) => format!("-{s},--{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, Some(l)) => format!("   --{l}"),
        (None, None) => return None,
    };
    let flag = match short {
        Some(s) => format!("-{s}"),
        None => format!("--{}", long.unwrap_or_default()),
    };
    let usage = if required {
        format!("{flag}{value}")
    } else {
        format!("[{flag}{value}]")
    };
    let help = arg
        .get_help()
        .map(|h| h.to_string())
        .unwrap_or_else(|| default_help(long.unwrap_or_default()).to_owned());
    let sort_key = short.map_or_else(
        || format!("~{}", long.unwrap_or_default()),
        |s| s.to_string(),
    );
    Some(OptionLine {
        sort_key,
        left: format!(" {name}{value}"),
        usage,
        help: help.lines().next().unwrap_or_default().to_owned(),
    })
}

fn option_lines(cli: &clap::Command, sub: &clap::Command) -> Vec<OptionLine> {
    let globals = cli.get_arguments().filter(|a| a.is_global_set());
    let mut lines: Vec<OptionLine> = sub
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_id() != "help" && a.get_id() != "version")
        .filter_map(|a| option_line(a, a.is_required_set()))
        .chain(globals.filter_map(|a| option_line(a, false)))
        .collect();
    lines.push(OptionLine {
        sort_key: "h".into(),
        left: " -h,--help".into(),
        usage: "[-h]".into(),
        help: "Print help".into(),
    });
    lines.sort_by(|a, b| a.sort_key.cmp(&b.sort_key));
    lines
}

/// `mqadmin help <command>`: RocketMQ's usage line and option table, or `None` for an
/// unknown command.
pub fn command_help(name: &str) -> Option<String> {
    let cli = Cli::command();
    let canonical = canonical_name(name)?;
    let sub = cli.find_subcommand(&canonical)?;
    let lines = option_lines(&cli, sub);
    let usage: Vec<&str> = lines.iter().map(|l| l.usage.as_str()).collect();
    let mut out = format!("usage: mqadmin {canonical} {}\n", usage.join(" "));
    let width = lines.iter().map(|l| l.left.len()).max().unwrap_or(0) + 3;
    for l in &lines {
        out.push_str(&format!("{:<width$}{}\n", l.left, l.help));
    }
    Some(out)
}

/// What `mqadmin` does with its arguments (program name excluded) before clap parses them.
pub enum Early {
    /// Print this and exit 0.
    Print(String),
    /// Print this to stderr and exit 1.
    Fail(String),
    /// Parse these arguments (the command name made canonical).
    Parse(Vec<String>),
}

/// RocketMQ's `MQAdminStartup` rules: no arguments or `help` list the commands, `help X`
/// prints X's options, and a command name matches in any case.
pub fn early(args: Vec<String>) -> Early {
    // RocketMQ 5's controller commands take the two-letter `-bn` (brokerName), which clap
    // has no short form for.
    let args: Vec<String> = args
        .into_iter()
        .map(|a| {
            if a == "-bn" {
                "--brokerName".to_owned()
            } else {
                a
            }
        })
        .collect();
    match args.as_slice() {
        [] => Early::Print(command_list()),
        [help] if help == "help" => Early::Print(command_list()),
        [help, name] if help == "help" => match command_help(name) {
            Some(text) => Early::Print(text),
            None => Early::Fail(
                refusal(name).unwrap_or_else(|| format!("The sub command {name} not exist.")),
            ),
        },
        [first, rest @ ..] if !first.starts_with('-') && first != "help" => {
            match canonical_name(first) {
                Some(name) => Early::Parse(std::iter::once(name).chain(rest.to_vec()).collect()),
                None => Early::Fail(
                    refusal(first).unwrap_or_else(|| format!("The sub command {first} not exist.")),
                ),
            }
        }
        _ => Early::Parse(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_names_every_command_once() {
        let list = command_list();
        assert!(list.starts_with("The most commonly used mqadmin commands are:\n"));
        assert!(list.contains("   updateTopic          Update or create topic\n"));
        assert!(!list.contains("   help "));
    }

    #[test]
    fn help_of_a_command_uses_rocketmq_letters() {
        let text = command_help("UPDATETOPIC").unwrap_or_default();
        assert!(text.starts_with("usage: mqadmin updateTopic "), "{text}");
        assert!(text.contains(" -t,--topic <arg>"), "{text}");
        assert!(text.contains(" -n,--namesrvAddr <arg>"), "{text}");
        assert!(text.contains(" -h,--help"), "{text}");
        assert!(command_help("noSuchCommand").is_none());
    }

    #[test]
    fn names_match_in_any_case() {
        let parsed = early(vec!["clusterlist".into(), "-n".into(), "x".into()]);
        assert!(matches!(parsed, Early::Parse(a) if a[0] == "clusterList"));
        assert!(matches!(early(vec!["nope".into()]), Early::Fail(_)));
        assert!(matches!(early(vec![]), Early::Print(_)));
    }
}
