//! A full dump of what a client can observe — every key of every database, its type,
//! full content and absolute deadline — read over the wire, and the comparison of two
//! dumps that names the keys that differ. Restart and durability tests compare the
//! dump before and after a restart.

use std::collections::{BTreeMap, BTreeSet};

use crate::{Client, RespValue};

/// Commands sent per pipelined batch.
const PIPELINE: usize = 256;

/// A key's observable content; the variant is its TYPE.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A string.
    Str(Vec<u8>),
    /// A list, in order.
    List(Vec<Vec<u8>>),
    /// A set: members sorted.
    Set(Vec<Vec<u8>>),
    /// A hash: field/value pairs sorted by field.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// A sorted set: member/score pairs in ZRANGE order, scores as printed.
    ZSet(Vec<(Vec<u8>, Vec<u8>)>),
    /// A stream: `XINFO STREAM … FULL COUNT 0` rendered (entries, ids, counters,
    /// groups with their pending entries and consumers, times included).
    Stream(String),
}

/// A key as a client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Dumped {
    /// Type and content.
    pub content: Content,
    /// PEXPIRETIME: absolute deadline in Unix ms, or -1.
    pub pexpiretime: i64,
}

/// Every key of every database: (db, key) → what it holds.
pub type Dump = BTreeMap<(usize, Vec<u8>), Dumped>;

/// Commands to send in pipelined batches; every reply must be a non-error.
#[derive(Default)]
pub struct Batch {
    cmds: Vec<Vec<Vec<u8>>>,
}

impl Batch {
    /// Queues one command.
    pub fn push<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        self.cmds
            .push(args.iter().map(|a| a.as_ref().to_vec()).collect());
    }

    /// Sends everything, pipelined, on `client`; returns the replies.
    pub fn run(self, client: &mut Client) -> Vec<RespValue> {
        let replies = pipeline(client, &self.cmds);
        for (cmd, reply) in self.cmds.iter().zip(&replies) {
            assert!(
                !reply.is_error(),
                "`{}` failed: {}",
                render_cmd(cmd),
                reply.render()
            );
        }
        replies
    }
}

/// A command as readable text (for failure messages).
pub fn render_cmd(cmd: &[Vec<u8>]) -> String {
    cmd.iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Sends commands in pipelined batches and returns every reply, in order.
pub fn pipeline(client: &mut Client, cmds: &[Vec<Vec<u8>>]) -> Vec<RespValue> {
    let mut replies = Vec::with_capacity(cmds.len());
    for chunk in cmds.chunks(PIPELINE) {
        let mut bytes = Vec::new();
        for cmd in chunk {
            bytes.extend(Client::encode(cmd));
        }
        client.send_raw(&bytes).expect("send a pipelined batch");
        for _ in chunk {
            replies.push(client.read_reply().expect("read a pipelined reply").0);
        }
    }
    replies
}

/// Sends one command; fails the test if the reply is an error.
pub fn ok(client: &mut Client, args: &[&str]) -> RespValue {
    let reply = client.cmd(args);
    assert!(
        !reply.is_error() && !matches!(reply, RespValue::Line(b'!', _)),
        "`{}` failed: {}",
        args.join(" "),
        reply.render()
    );
    reply
}

/// The payload of a bulk reply (fails the test otherwise).
pub fn bulk(v: &RespValue) -> Vec<u8> {
    match v {
        RespValue::Bulk(_, Some(b)) => b.clone(),
        other => panic!("expected a bulk string, got {}", other.render()),
    }
}

/// The bulk items of an array reply (fails the test otherwise).
pub fn items(v: &RespValue) -> Vec<Vec<u8>> {
    match v {
        RespValue::Agg(_, Some(items)) => items.iter().map(bulk).collect(),
        other => panic!("expected an array, got {}", other.render()),
    }
}

/// The value of an integer reply (fails the test otherwise).
pub fn integer(v: &RespValue) -> i64 {
    match v {
        RespValue::Line(b':', n) => String::from_utf8_lossy(n)
            .parse()
            .expect("an integer reply"),
        other => panic!("expected an integer, got {}", other.render()),
    }
}

/// A flat list as consecutive pairs.
pub fn pairs(flat: Vec<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = flat.into_iter();
    let mut out = Vec::new();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    out
}

/// The server's number of databases (`CONFIG GET databases`).
pub fn database_count(client: &mut Client) -> usize {
    let reply = ok(client, &["CONFIG", "GET", "databases"]);
    let flat = items(&reply);
    flat.get(1)
        .and_then(|n| String::from_utf8_lossy(n).parse().ok())
        .unwrap_or(16)
}

/// Every key of every database with TYPE, full content (sets and hashes sorted) and
/// PEXPIRETIME. Leaves the connection on database 0.
pub fn dump(client: &mut Client) -> Dump {
    let mut out = Dump::new();
    for db in 0..database_count(client) {
        ok(client, &["SELECT", &db.to_string()]);
        let mut keys = BTreeSet::new();
        let mut cursor = b"0".to_vec();
        loop {
            let reply = client.cmd(&[b"SCAN".as_slice(), &cursor, b"COUNT", b"1000"]);
            let RespValue::Agg(_, Some(parts)) = &reply else {
                panic!("SCAN replied {}", reply.render());
            };
            cursor = bulk(&parts[0]);
            keys.extend(items(&parts[1]));
            if cursor == b"0" {
                break;
            }
        }
        let keys: Vec<Vec<u8>> = keys.into_iter().collect();
        let types: Vec<RespValue> = pipeline(
            client,
            &keys
                .iter()
                .map(|k| vec![b"TYPE".to_vec(), k.clone()])
                .collect::<Vec<_>>(),
        );
        let mut reads = Vec::new();
        for (key, ty) in keys.iter().zip(&types) {
            let RespValue::Line(b'+', ty) = ty else {
                panic!("TYPE replied {}", ty.render());
            };
            let k = key.clone();
            let read: Vec<Vec<u8>> = match ty.as_slice() {
                b"string" => vec![b"GET".to_vec(), k],
                b"list" => vec![b"LRANGE".to_vec(), k, b"0".to_vec(), b"-1".to_vec()],
                b"set" => vec![b"SMEMBERS".to_vec(), k],
                b"hash" => vec![b"HGETALL".to_vec(), k],
                b"zset" => vec![
                    b"ZRANGE".to_vec(),
                    k,
                    b"0".to_vec(),
                    b"-1".to_vec(),
                    b"WITHSCORES".to_vec(),
                ],
                b"stream" => vec![
                    b"XINFO".to_vec(),
                    b"STREAM".to_vec(),
                    k,
                    b"FULL".to_vec(),
                    b"COUNT".to_vec(),
                    b"0".to_vec(),
                ],
                other => panic!(
                    "db {db} key {:?}: unexpected TYPE {}",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(other)
                ),
            };
            reads.push(read);
            reads.push(vec![b"PEXPIRETIME".to_vec(), key.clone()]);
        }
        let replies = pipeline(client, &reads);
        for (i, key) in keys.into_iter().enumerate() {
            let (content, ttl) = (&replies[2 * i], &replies[2 * i + 1]);
            let content = match reads[2 * i][0].as_slice() {
                b"GET" => Content::Str(bulk(content)),
                b"LRANGE" => Content::List(items(content)),
                b"SMEMBERS" => {
                    let mut m = items(content);
                    m.sort();
                    Content::Set(m)
                }
                b"HGETALL" => {
                    let mut p = pairs(items(content));
                    p.sort();
                    Content::Hash(p)
                }
                b"XINFO" => Content::Stream(content.render()),
                _ => Content::ZSet(pairs(items(content))),
            };
            out.insert(
                (db, key),
                Dumped {
                    content,
                    pexpiretime: integer(ttl),
                },
            );
        }
    }
    ok(client, &["SELECT", "0"]);
    out
}

/// Text cut to 300 characters for failure messages.
pub fn short(text: String) -> String {
    let chars = text.chars().count();
    if chars > 300 {
        format!(
            "{}… ({chars} chars)",
            text.chars().take(300).collect::<String>()
        )
    } else {
        text
    }
}

/// A dumped key as readable text (for failure messages).
pub fn describe(d: Option<&Dumped>) -> String {
    match d {
        None => "(absent)".into(),
        Some(d) => {
            let show = |b: &Vec<u8>| format!("{:?}", String::from_utf8_lossy(b));
            let content = match &d.content {
                Content::Str(s) => format!("string {}", show(s)),
                Content::List(l) => format!("list {:?}", l.iter().map(show).collect::<Vec<_>>()),
                Content::Set(s) => format!("set {:?}", s.iter().map(show).collect::<Vec<_>>()),
                Content::Hash(h) => format!(
                    "hash {:?}",
                    h.iter()
                        .map(|(f, v)| (show(f), show(v)))
                        .collect::<Vec<_>>()
                ),
                Content::Stream(s) => format!("stream {s}"),
                Content::ZSet(z) => format!(
                    "zset {:?}",
                    z.iter()
                        .map(|(m, s)| (show(m), show(s)))
                        .collect::<Vec<_>>()
                ),
            };
            short(format!("{content}, pexpiretime {}", d.pexpiretime))
        }
    }
}

/// Fails with the first differences if the two dumps are not identical.
pub fn assert_same(label: &str, before: &Dump, after: &Dump) {
    if before == after {
        return;
    }
    let keys: BTreeSet<&(usize, Vec<u8>)> = before.keys().chain(after.keys()).collect();
    let diffs: Vec<String> = keys
        .into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| {
            format!(
                "db {} key {:?}:\n    before {}\n    after  {}",
                k.0,
                String::from_utf8_lossy(&k.1),
                describe(before.get(k)),
                describe(after.get(k))
            )
        })
        .collect();
    panic!(
        "{label}: {} keys differ ({} keys before, {} after); first ones:\n{}",
        diffs.len(),
        before.len(),
        after.len(),
        diffs
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
