//! Mutated requests: every request code with a superset header of plausible values, some
//! fields swapped for hostile ones, a body from the decoders' corpus (mutated or not), in
//! either header encoding; and now and then bytes that are no frame at all.

use std::collections::BTreeMap;

use stellmq_remoting::protocol::{
    frame, ExtFields, LanguageCode, RemotingCommand, RequestCode, SerializeType,
};

use super::vocabulary::{self, FIELDS};
use crate::mutate::{Mutator, Rng};
use crate::seeds;

/// Admin requests whose documented effect is to remove stored data or hand the broker's
/// role away: a run checks that acknowledged messages stay intact, which these break by
/// design (without ACL, RocketMQ lets anyone send them too).
pub const NOT_SENT: &[RequestCode] = &[
    RequestCode::TRIGGER_DELETE_FILES,
    RequestCode::DELETE_EXPIRED_COMMITLOG,
    RequestCode::RESET_MASTER_FLUSH_OFFSET,
    RequestCode::NOTIFY_BROKER_ROLE_CHANGED,
    RequestCode::CLEAN_BROKER_DATA,
];

/// The requests a name server serves (`namesrv/src/lib.rs`); a name server connection sends
/// these four times in five, any other code the fifth.
pub const NAMESRV_CODES: &[RequestCode] = &[
    RequestCode::ADD_WRITE_PERM_OF_BROKER,
    RequestCode::BROKER_HEARTBEAT,
    RequestCode::DELETE_KV_CONFIG,
    RequestCode::DELETE_TOPIC_IN_NAMESRV,
    RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    RequestCode::GET_BROKER_CLUSTER_INFO,
    RequestCode::GET_BROKER_MEMBER_GROUP,
    RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST,
    RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    RequestCode::GET_KVLIST_BY_NAMESPACE,
    RequestCode::GET_KV_CONFIG,
    RequestCode::GET_NAMESRV_CONFIG,
    RequestCode::GET_ROUTEINFO_BY_TOPIC,
    RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS,
    RequestCode::GET_TOPICS_BY_CLUSTER,
    RequestCode::GET_UNIT_TOPIC_LIST,
    RequestCode::PUT_KV_CONFIG,
    RequestCode::QUERY_DATA_VERSION,
    RequestCode::REGISTER_BROKER,
    RequestCode::REGISTER_TOPIC_IN_NAMESRV,
    RequestCode::UNREGISTER_BROKER,
    RequestCode::UPDATE_NAMESRV_CONFIG,
    RequestCode::WIPE_WRITE_PERM_OF_BROKER,
];

/// Which server a generator's requests are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    NameServer,
    Broker,
}

/// One thing to send on a connection.
pub enum Attack {
    /// A well-formed frame; the server should answer `opaque` unless `oneway`.
    Request {
        code: i32,
        opaque: i32,
        oneway: bool,
        bytes: Vec<u8>,
    },
    /// Bytes that are not a well-formed frame, or a frame cut short; `drip` sends them a
    /// few bytes at a time. The connection is closed after them.
    Raw {
        kind: &'static str,
        bytes: Vec<u8>,
        drip: bool,
    },
}

/// Makes attacks from a seed: the same seed makes the same sequence.
pub struct Generator {
    rng: Rng,
    mutator: Mutator<'static>,
    codes: Vec<i32>,
    server: Server,
    now_ms: i64,
    json_bodies: Vec<Vec<u8>>,
    batches: Vec<Vec<u8>>,
    registrations: Vec<Vec<u8>>,
    texts: Vec<Vec<u8>>,
    broker_addr: String,
    next_opaque: i32,
}

const BODY_TOKENS: &[&[u8]] = &[b"{", b"}", b"\"", b":", b",", b"\x01", b"\x02", b"=", b"\n"];

/// Bodies of UPDATE_BROKER_CONFIG and UPDATE_NAMESRV_CONFIG: keys that exist, values that
/// do not, and text that is no configuration at all.
const CONFIG_BODIES: &[&str] = &[
    "brokerPermission=6\n",
    "sendMessageThreadPoolNums=-1\n",
    "maxMessageSize=x\n",
    "messageDelayLevel=1s \u{e9}m\n",
    "scanNotActiveBrokerInterval=\u{1f600}\n",
    "\u{e9}=\u{e9}\n",
    "=\n=\n",
    "a\\\n b=c\n",
    "orderMessageEnable=maybe\n",
];

impl Generator {
    /// Requests for `server`, naming the broker at `broker_addr` and times around `now_ms`.
    pub fn new(seed: u64, server: Server, broker_addr: &str, now_ms: i64) -> Self {
        let bodies_of = |target: &str| -> Vec<Vec<u8>> {
            seeds::for_target(target)
                .into_iter()
                .map(|(_, b)| b)
                .collect()
        };
        let codes = RequestCode::ALL
            .iter()
            .filter(|c| !NOT_SENT.contains(c))
            .map(|c| c.as_i32())
            .collect();
        Self {
            rng: Rng::new(seed),
            mutator: Mutator::new(seed ^ 0x5EED, BODY_TOKENS, 64 * 1024),
            codes,
            server,
            now_ms,
            json_bodies: bodies_of("json_body"),
            batches: bodies_of("batch"),
            registrations: bodies_of("register_compressed"),
            texts: bodies_of("text")
                .into_iter()
                .map(|t| t.get(1..).unwrap_or_default().to_vec())
                .collect(),
            broker_addr: broker_addr.to_owned(),
            next_opaque: 1,
        }
    }

    /// The next attack.
    pub fn next_attack(&mut self) -> Attack {
        let (code, command) = self.request();
        let mut bytes = frame::encode_prefix(&command).to_vec();
        bytes.extend_from_slice(&command.body);
        match self.rng.below(40) {
            0 => Attack::Raw {
                kind: "flipped frame",
                bytes: self.mutator.mutate(&bytes, &[]),
                drip: false,
            },
            1 => {
                let cut = self.rng.below(bytes.len());
                bytes.truncate(cut);
                Attack::Raw {
                    kind: "cut frame",
                    bytes,
                    drip: self.rng.one_in(2),
                }
            }
            2 => {
                let lie = [4i32, 5, 8, -1, i32::MAX, 64 << 20][self.rng.below(6)];
                bytes.splice(0..4, lie.to_be_bytes());
                Attack::Raw {
                    kind: "lying length",
                    bytes,
                    drip: false,
                }
            }
            3 => Attack::Raw {
                kind: "noise",
                bytes: (0..self.rng.below(512))
                    .map(|_| self.rng.next_u64() as u8)
                    .collect(),
                drip: false,
            },
            _ => Attack::Request {
                code,
                opaque: command.opaque,
                oneway: command.is_oneway(),
                bytes,
            },
        }
    }

    /// A request of a random code with a mutated superset header and a body.
    fn request(&mut self) -> (i32, RemotingCommand) {
        let code = if self.rng.one_in(50) {
            self.rng.next_u64() as i32
        } else if self.server == Server::NameServer && !self.rng.one_in(5) {
            NAMESRV_CODES[self.rng.below(NAMESRV_CODES.len())].as_i32()
        } else {
            self.codes[self.rng.below(self.codes.len())]
        };
        let mut fields = BTreeMap::new();
        for (name, kind) in FIELDS {
            if !self.rng.one_in(10) {
                let value = vocabulary::plausible(
                    name,
                    *kind,
                    &mut self.rng,
                    &self.broker_addr,
                    self.now_ms,
                );
                fields.insert((*name).to_owned(), value);
            }
        }
        for _ in 0..[0, 1, 1, 2, 3][self.rng.below(5)] {
            let (name, _) = FIELDS[self.rng.below(FIELDS.len())];
            fields.insert(name.to_owned(), vocabulary::hostile(&mut self.rng));
        }
        if self.rng.one_in(20) {
            // A key of its own (short: the binary header gives a key an i16 length).
            let key = vocabulary::HOSTILE[self.rng.below(vocabulary::HOSTILE.len())];
            fields.insert(key.to_owned(), vocabulary::hostile(&mut self.rng));
        }
        let mut command =
            RemotingCommand::request_code(code, fields.into_iter().collect::<ExtFields>());
        command.opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        command.language = LanguageCode::Java;
        if self.rng.one_in(2) {
            command.serialize_type = SerializeType::RocketMq;
        }
        if self.rng.one_in(30) {
            command.mark_oneway();
        }
        if self.rng.one_in(30) {
            command.remark = Some(vocabulary::hostile(&mut self.rng));
        }
        let body = self.body(code, &mut command);
        (code, command.with_body(body))
    }

    /// A body fitting `code` (sometimes mutated), or none.
    fn body(&mut self, code: i32, command: &mut RemotingCommand) -> Vec<u8> {
        let pick = |rng: &mut Rng, pool: &[Vec<u8>]| pool[rng.below(pool.len())].clone();
        let body = match RequestCode::from_i32(code) {
            Some(RequestCode::SEND_MESSAGE | RequestCode::SEND_MESSAGE_V2) => {
                b"net fuzz body".to_vec()
            }
            Some(RequestCode::SEND_BATCH_MESSAGE) => pick(&mut self.rng, &self.batches),
            Some(RequestCode::REGISTER_BROKER) => {
                command.ext_fields.insert("compressed", "true");
                command.ext_fields.insert("bodyCrc32", "0");
                pick(&mut self.rng, &self.registrations)
            }
            Some(RequestCode::UPDATE_BROKER_CONFIG | RequestCode::UPDATE_NAMESRV_CONFIG) => {
                CONFIG_BODIES[self.rng.below(CONFIG_BODIES.len())]
                    .as_bytes()
                    .to_vec()
            }
            _ if self.rng.one_in(4) => pick(&mut self.rng, &self.texts),
            _ if self.rng.one_in(6) => Vec::new(),
            _ => pick(&mut self.rng, &self.json_bodies),
        };
        if self.rng.one_in(3) {
            let other = pick(&mut self.rng, &self.json_bodies);
            self.mutator.mutate(&body, &other)
        } else {
            body
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    #[test]
    fn requests_decode_as_frames_and_the_seed_replays() {
        let mut a = Generator::new(7, Server::Broker, "127.0.0.1:10911", 1_700_000_000_000);
        let mut b = Generator::new(7, Server::Broker, "127.0.0.1:10911", 1_700_000_000_000);
        let mut requests = 0;
        for _ in 0..500 {
            let (x, y) = (a.next_attack(), b.next_attack());
            match (x, y) {
                (Attack::Request { bytes, opaque, .. }, Attack::Request { bytes: again, .. }) => {
                    assert_eq!(bytes, again, "the same seed, the same request");
                    let mut buf = BytesMut::from(&bytes[..]);
                    let decoded = frame::decode(&mut buf, 16 << 20)
                        .expect("a frame")
                        .expect("complete");
                    assert_eq!(decoded.opaque, opaque);
                    requests += 1;
                }
                (Attack::Raw { bytes, .. }, Attack::Raw { bytes: again, .. }) => {
                    assert_eq!(bytes, again)
                }
                _ => panic!("the same seed made different attacks"),
            }
        }
        assert!(requests > 400, "{requests} requests");
    }
}
