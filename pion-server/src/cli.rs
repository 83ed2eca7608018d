//! Command-line options and the configuration file: one table of flags (name, topic,
//! help) that drives parsing and the `--help` text. As with redis-server, the first
//! argument may name a configuration file, and every `--directive value …` after it
//! overrides the file; a directive is a flag of the table, a `CONFIG SET` parameter,
//! or one of the few start-up directives listed in [`START_UP`].

use std::net::IpAddr;

use pion_core::config::file::{self, Directive};
use pion_core::config::{Config, ConfigValues, DebugCommand};
use pion_core::durability::{DurabilityOptions, FsyncPolicy, RecoverMode};

/// What a flag sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opt {
    Port,
    Bind,
    RequirePass,
    RequirePassFile,
    Dir,
    Threads,
    MaxClients,
    Databases,
    Wal,
    AppendFsync,
    WalRecover,
    WalSegmentSize,
    SnapshotWalSize,
    KvBudget,
    KvCache,
    KvCachePort,
    EmbedModel,
    Help,
    Version,
}

struct Flag {
    name: &'static str,
    takes_value: bool,
    opt: Opt,
    topic: &'static str,
    help: &'static str,
}

const FLAGS: &[Flag] = &[
    Flag { name: "--port", takes_value: true, opt: Opt::Port, topic: "Network", help: "TCP port for the Redis protocol (default 1974)" },
    Flag { name: "--bind", takes_value: true, opt: Opt::Bind, topic: "Network", help: "addresses to listen on, space separated (default 127.0.0.1; all interfaces when a password is set)" },
    Flag { name: "--maxclients", takes_value: true, opt: Opt::MaxClients, topic: "Network", help: "most simultaneous clients (default 10000)" },
    Flag { name: "--requirepass", takes_value: true, opt: Opt::RequirePass, topic: "Security", help: "password clients must send with AUTH (also PION_REQUIREPASS)" },
    Flag { name: "--requirepass-file", takes_value: true, opt: Opt::RequirePassFile, topic: "Security", help: "read the password from this file (first line)" },
    Flag { name: "--dir", takes_value: true, opt: Opt::Dir, topic: "Storage", help: "data directory, created if missing (default ./pion-data)" },
    Flag { name: "--databases", takes_value: true, opt: Opt::Databases, topic: "Storage", help: "number of logical databases (default 16)" },
    Flag { name: "--wal", takes_value: true, opt: Opt::Wal, topic: "Durability", help: "on: every acknowledged write is in the write-ahead log and survives a crash (default); off: a pure cache, nothing is written to disk and everything is lost on restart" },
    Flag { name: "--appendfsync", takes_value: true, opt: Opt::AppendFsync, topic: "Durability", help: "when the log is fsynced: always (before each reply, one fsync per batch), everysec (default; a machine crash may lose up to a second, a process crash nothing), no" },
    Flag { name: "--wal-recover", takes_value: true, opt: Opt::WalRecover, topic: "Durability", help: "strict (default): refuse to start on a damaged log, naming file and offset; truncate: drop everything from the damage on, with a warning" },
    Flag { name: "--wal-segment-size", takes_value: true, opt: Opt::WalSegmentSize, topic: "Durability", help: "log segment file size before a new one starts (default 64M; K/M/G suffixes)" },
    Flag { name: "--snapshot-wal-size", takes_value: true, opt: Opt::SnapshotWalSize, topic: "Durability", help: "take a snapshot after this much log (default 256M; 0: only on SAVE/BGSAVE); bounds recovery time" },
    Flag { name: "--kv-budget", takes_value: true, opt: Opt::KvBudget, topic: "Prompt cache", help: "bytes of K/V blocks kept (K/M/G suffixes; default 0: no limit); least recently used leaf blocks are evicted beyond it" },
    Flag { name: "--kvcache", takes_value: true, opt: Opt::KvCache, topic: "Prompt cache", help: "on (default): serve the binary lane for bulk K/V on --kvcache-port; off: RESP only" },
    Flag { name: "--kvcache-port", takes_value: true, opt: Opt::KvCachePort, topic: "Prompt cache", help: "port of the binary lane (default: --port + 1)" },
    Flag { name: "--embed-model", takes_value: true, opt: Opt::EmbedModel, topic: "AI", help: "a sentence-transformers model folder (config.json, model.safetensors, tokenizer.json; e.g. all-MiniLM-L6-v2) that AI.EMBED and AI.SEMANTIC_CACHE embed with; loaded at start-up, never downloaded" },
    Flag { name: "--threads", takes_value: true, opt: Opt::Threads, topic: "Performance", help: "worker threads serving clients; all share one keyspace (default 1)" },
    Flag { name: "--help", takes_value: false, opt: Opt::Help, topic: "General", help: "print this help" },
    Flag { name: "--version", takes_value: false, opt: Opt::Version, topic: "General", help: "print the version" },
];

/// Directives accepted at start-up only, with what each means here.
pub const START_UP: &[(&str, &str)] = &[
    ("daemonize", "only 'no': the server runs in the foreground"),
    (
        "supervised",
        "only 'no' or 'auto': no supervisor protocol is spoken",
    ),
    (
        "logfile",
        "the log file, appended to ('': standard output, as redis-server)",
    ),
    (
        "unixsocket",
        "also listen on this Unix-domain socket (unixsocketperm: its mode, octal)",
    ),
    (
        "enable-debug-command",
        "no (default), yes, or local: who may run DEBUG",
    ),
    (
        "pidfile",
        "the process id is written to this file at start-up",
    ),
    (
        "aclfile",
        "users are loaded from and saved to this ACL file",
    ),
    ("user", "a user and its ACL rules, as in an ACL file"),
    (
        "protected-mode",
        "yes: only loopback clients while the default user has no password",
    ),
    (
        "appendonly",
        "yes: the write-ahead log on; no: off only with save \"\" (Redis's pure cache), else on (--wal decides when given)",
    ),
    (
        "always-show-logo",
        "yes: a start-up banner (version, port, PID) is logged",
    ),
    (
        "set-proc-title",
        "accepted: the process title is left alone",
    ),
];

/// What the server runs with.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The engine's configuration.
    pub config: ConfigValues,
    /// Where and how data is kept; `None` with `--wal off`.
    pub durability: Option<DurabilityOptions>,
    /// Port of the binary lane; `None` with `--kvcache off`.
    pub kvcache_port: Option<u16>,
    /// The configuration file given first on the command line.
    pub config_file: Option<std::path::PathBuf>,
    /// The values before the file and the flags were applied (what `CONFIG REWRITE`
    /// leaves out).
    pub defaults: ConfigValues,
    /// `user` directives of the configuration file: (where, name and rules).
    pub users: Vec<Directive>,
    /// `pidfile`.
    pub pidfile: Option<String>,
    /// `always-show-logo`: log the start-up banner.
    pub show_logo: bool,
    /// `--embed-model`: the sentence model's folder.
    pub embed_model: Option<std::path::PathBuf>,
}

/// What the command line asked for.
#[derive(Debug)]
pub enum Command {
    /// Run the server with these options.
    Serve(Box<ServeOptions>),
    /// Print the help text.
    Help,
    /// Print the version.
    Version,
}

/// The `--help` text, grouped by topic.
pub fn help_text() -> String {
    let mut out = format!(
        "pion-server {} — a Redis-compatible memory engine\n\nUsage: pion-server [/path/to/pion.conf] [OPTIONS] [--directive value ...]\n",
        pion_core::VERSION
    );
    let mut topics: Vec<&str> = Vec::new();
    for f in FLAGS {
        if !topics.contains(&f.topic) {
            topics.push(f.topic);
        }
    }
    for topic in topics {
        out.push_str(&format!("\n{topic}:\n"));
        for f in FLAGS.iter().filter(|f| f.topic == topic) {
            let name = if f.takes_value {
                format!("{} <value>", f.name)
            } else {
                f.name.to_string()
            };
            out.push_str(&format!("  {name:<28} {}\n", f.help));
        }
    }
    out
}

fn parse_num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("invalid value for {flag}: '{v}'"))
}

/// Splits the command line into directives: an optional configuration file first
/// (its directives, in order), then each `--name value …` (values run up to the next
/// `--name`; `--name=value` also works).
fn directives(args: &[String]) -> Result<(Option<std::path::PathBuf>, Vec<Directive>), String> {
    let mut out = Vec::new();
    let mut rest = args;
    let mut file = None;
    if let Some(first) = args.first().filter(|a| !a.starts_with("--")) {
        let path = std::path::PathBuf::from(first);
        out = file::read(&path)?;
        file = Some(path);
        rest = &args[1..];
    }
    let mut i = 0;
    while i < rest.len() {
        let arg = &rest[i];
        let Some(body) = arg.strip_prefix("--") else {
            return Err(format!("unexpected argument '{arg}' (see --help)"));
        };
        let mut d = Directive {
            name: String::new(),
            args: Vec::new(),
            file: "(command line)".into(),
            line: 0,
            text: arg.clone(),
        };
        match body.split_once('=') {
            Some((n, v)) => {
                d.name = n.to_ascii_lowercase();
                d.args.push(v.to_string());
            }
            None => d.name = body.to_ascii_lowercase(),
        }
        i += 1;
        let takes_value = FLAGS
            .iter()
            .find(|f| f.name[2..] == d.name)
            .is_none_or(|f| f.takes_value);
        if d.args.is_empty() && takes_value {
            // A flag's value may itself begin with dashes; other directives take every
            // argument up to the next `--name`.
            let single = FLAGS.iter().any(|f| f.name[2..] == d.name);
            while i < rest.len() && (!rest[i].starts_with("--") || (single && d.args.is_empty())) {
                d.args.push(rest[i].clone());
                i += 1;
                if single {
                    break;
                }
            }
        }
        out.push(d);
    }
    Ok((file, out))
}

fn yes_no(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "yes" | "on" => Some(true),
        "no" | "off" => Some(false),
        _ => None,
    }
}

/// Parses the arguments (without the program name). `env_pass` is `PION_REQUIREPASS`.
/// An error from a file directive names the file and line.
pub fn parse(args: &[String], env_pass: Option<String>) -> Result<Command, String> {
    let mut cfg = ConfigValues {
        dir: "./pion-data".into(),
        ..ConfigValues::default()
    };
    let defaults = cfg.clone();
    let mut bind: Option<String> = None;
    let mut pass = env_pass;
    // `--wal` decides when given; otherwise redis.conf's `appendonly` (see below).
    let mut wal: Option<bool> = None;
    let mut appendonly: Option<bool> = None;
    let mut kvcache = true;
    let mut kvcache_port: Option<u16> = None;
    let mut embed_model: Option<std::path::PathBuf> = None;
    let mut durability = DurabilityOptions::new("");
    let mut users = Vec::new();
    let mut pidfile = None;
    let mut show_logo = false;
    if args.iter().any(|a| a == "--help") {
        return Ok(Command::Help);
    }
    if args.iter().any(|a| a == "--version") {
        return Ok(Command::Version);
    }
    let (config_file, list) = directives(args)?;
    for d in list {
        let fail = |e: String| {
            if d.line == 0 {
                e
            } else {
                d.error(&e)
            }
        };
        let name = d.name.as_str();
        let value = d.args.join(" ");
        let one = || -> Result<String, String> {
            match d.args.as_slice() {
                [v] => Ok(v.clone()),
                _ => Err(format!("wrong number of arguments for '{name}'")),
            }
        };
        if let Some(flag) = FLAGS.iter().find(|f| f.name[2..] == *name) {
            let value = if flag.opt == Opt::Bind && !d.args.is_empty() {
                // `bind 127.0.0.1 ::1`: several addresses, as in redis.conf.
                value.clone()
            } else if flag.takes_value {
                one().map_err(|_| fail(format!("--{name} needs a value")))?
            } else {
                String::new()
            };
            let name = flag.name;
            let applied: Result<(), String> = (|| {
                match flag.opt {
                    Opt::Help | Opt::Version => {}
                    Opt::Port => cfg.port = parse_num(name, &value)?,
                    Opt::Bind => bind = Some(value),
                    Opt::RequirePass => pass = Some(value),
                    Opt::RequirePassFile => {
                        let text = std::fs::read_to_string(&value)
                            .map_err(|e| format!("cannot read {value}: {e}"))?;
                        pass = Some(text.lines().next().unwrap_or("").to_string());
                    }
                    Opt::Dir => cfg.dir = value,
                    Opt::Threads => {
                        cfg.threads = parse_num(name, &value)?;
                        if cfg.threads == 0 || cfg.threads > 1024 {
                            return Err(format!(
                                "--threads must be between 1 and 1024, got {value}"
                            ));
                        }
                    }
                    Opt::MaxClients => cfg.maxclients = parse_num(name, &value)?,
                    Opt::Wal => {
                        wal = Some(
                            yes_no(&value)
                                .ok_or_else(|| format!("--wal takes on or off, got '{value}'"))?,
                        )
                    }
                    Opt::AppendFsync => {
                        durability.fsync = FsyncPolicy::parse(&value).ok_or_else(|| {
                            format!("--appendfsync takes always, everysec or no, got '{value}'")
                        })?;
                        cfg.appendfsync = durability.fsync;
                    }
                    Opt::WalRecover => {
                        durability.recover = match value.to_ascii_lowercase().as_str() {
                            "strict" => RecoverMode::Strict,
                            "truncate" => RecoverMode::Truncate,
                            _ => {
                                return Err(format!(
                                    "--wal-recover takes strict or truncate, got '{value}'"
                                ))
                            }
                        }
                    }
                    Opt::WalSegmentSize => {
                        durability.segment_bytes = parse_size(name, &value)?;
                        if durability.segment_bytes < 4096 {
                            return Err(format!("{name} must be at least 4K, got {value}"));
                        }
                    }
                    Opt::SnapshotWalSize => {
                        durability.snapshot_after_bytes = parse_size(name, &value)?
                    }
                    Opt::KvBudget => cfg.kv_budget = parse_size(name, &value)?,
                    Opt::KvCache => {
                        kvcache = yes_no(&value)
                            .ok_or_else(|| format!("--kvcache takes on or off, got '{value}'"))?
                    }
                    Opt::KvCachePort => kvcache_port = Some(parse_num(name, &value)?),
                    Opt::EmbedModel => embed_model = Some(value.clone().into()),
                    Opt::Databases => {
                        cfg.databases = parse_num(name, &value)?;
                        if cfg.databases == 0 || cfg.databases > 1_000_000 {
                            return Err(format!(
                                "--databases must be between 1 and 1000000, got {value}"
                            ));
                        }
                    }
                }
                Ok(())
            })();
            applied.map_err(fail)?;
            continue;
        }
        let applied: Result<(), String> = match name {
            "daemonize" | "supervised" => match value.to_ascii_lowercase().as_str() {
                "no" => Ok(()),
                "auto" if name == "supervised" => Ok(()),
                _ => Err(format!(
                    "'{name} {value}' is not supported: run pion-server in the foreground"
                )),
            },
            "logfile" => {
                cfg.logfile = value.clone();
                Ok(())
            }
            "unixsocket" => {
                cfg.unixsocket = value.clone();
                Ok(())
            }
            "unixsocketperm" => u32::from_str_radix(&value, 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .map(|m| cfg.unixsocketperm = m)
                .ok_or_else(|| "Invalid socket file permissions".to_string()),
            "enable-debug-command" => match DebugCommand::parse(&value) {
                Some(v) => {
                    cfg.enable_debug_command = v;
                    Ok(())
                }
                None => Err("argument(s) must be one of the following: no, yes, local".into()),
            },
            "always-show-logo" => yes_no(&value)
                .map(|on| show_logo = on)
                .ok_or_else(|| "argument must be 'yes' or 'no'".to_string()),
            "set-proc-title" => yes_no(&value)
                .map(|_| ())
                .ok_or_else(|| "argument must be 'yes' or 'no'".to_string()),
            "pidfile" => {
                pidfile = (!value.is_empty()).then(|| value.clone());
                Ok(())
            }
            "aclfile" => {
                cfg.aclfile = value.clone();
                Ok(())
            }
            "user" if !d.args.is_empty() => {
                if users.iter().any(|u: &Directive| u.args[0] == d.args[0]) {
                    Err(format!(
                        "Error in user declaration '{}': Duplicate user found. A user can only be defined once in config files",
                        d.args[0]
                    ))
                } else {
                    users.push(d.clone());
                    Ok(())
                }
            }
            "appendonly" => yes_no(&value)
                .map(|on| {
                    appendonly = Some(on);
                })
                .ok_or_else(|| "argument must be 'yes' or 'no'".to_string()),
            _ => match Config::param(name) {
                Some(p) => match p.set {
                    Some(set) => set(&mut cfg, &value),
                    None => Err(format!("'{name}' cannot be set at start-up here")),
                },
                None => Err("Bad directive or wrong number of arguments".to_string()),
            },
        };
        applied.map_err(|e| {
            if d.line == 0 {
                format!("--{name}: {e}")
            } else {
                d.error(&e)
            }
        })?;
    }
    if !cfg.aclfile.is_empty() && !users.is_empty() {
        return Err("Configuring users in the configuration file and an ACL file at the same time is not supported: keep the users in the ACL file".into());
    }
    // Pion has no snapshot-only mode: `appendonly no` with a `save` schedule (Redis's
    // RDB persistence) keeps the log on, which is at least as durable; `appendonly no`
    // with `save ""` is Redis's pure cache, and so it is here.
    let wal = wal
        .or(appendonly.map(|on| on || !cfg.save.is_empty()))
        .unwrap_or(true);
    cfg.appendonly = wal;
    cfg.requirepass = pass.unwrap_or_default();
    cfg.bind = match bind {
        Some(b) => b,
        None if !cfg.requirepass.is_empty() => "0.0.0.0".into(),
        None => "127.0.0.1".into(),
    };
    bind_addrs(&cfg.bind)?;
    durability.dir = cfg.dir.clone().into();
    let lane_port = match kvcache_port {
        Some(p) => Some(p),
        None => Some(cfg.port.checked_add(1).ok_or(
            "--port 65535 leaves no port for the binary lane: set --kvcache-port or --kvcache off",
        )?),
    };
    Ok(Command::Serve(Box::new(ServeOptions {
        config: cfg,
        durability: wal.then_some(durability),
        kvcache_port: if kvcache { lane_port } else { None },
        config_file,
        defaults,
        users,
        pidfile,
        show_logo,
        embed_model,
    })))
}

/// Parses a byte size with an optional K, M or G suffix (powers of 1024; `kb`, `mb`,
/// `gb` too, as Redis's configuration accepts).
pub fn parse_size(flag: &str, v: &str) -> Result<u64, String> {
    let lower = v.trim().to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(digits_end);
    let mult: u64 = match unit {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        _ => {
            return Err(format!(
                "invalid size for {flag}: '{v}' (use a number with K, M or G)"
            ))
        }
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("invalid size for {flag}: '{v}'"))
}

/// Parses the `bind` list into IP addresses; an unparsable entry is an error.
pub fn bind_addrs(bind: &str) -> Result<Vec<IpAddr>, String> {
    let addrs: Result<Vec<IpAddr>, String> = bind
        .split_whitespace()
        .map(|a| {
            let a = a.trim_start_matches('-');
            a.parse::<IpAddr>()
                .map_err(|_| format!("invalid bind address '{a}'"))
        })
        .collect();
    let addrs = addrs?;
    if addrs.is_empty() {
        return Err("no bind address given".into());
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_options(args: &[&str]) -> ServeOptions {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args, None) {
            Ok(Command::Serve(c)) => *c,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn serve(args: &[&str], env: Option<&str>) -> ConfigValues {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args, env.map(String::from)) {
            Ok(Command::Serve(c)) => c.config,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn defaults_and_password_bind() {
        let c = serve(&[], None);
        assert_eq!((c.port, c.bind.as_str(), c.threads), (1974, "127.0.0.1", 1));
        let c = serve(&["--requirepass", "s3cret"], None);
        assert_eq!(c.bind, "0.0.0.0");
        let c = serve(&[], Some("envpass"));
        assert_eq!(c.requirepass, "envpass");
        let c = serve(&["--port=7000", "--threads", "4"], None);
        assert_eq!((c.port, c.threads), (7000, 4));
    }

    #[test]
    fn durability_flags() {
        let d = serve_options(&[]).durability.expect("on by default");
        assert_eq!(d.fsync, FsyncPolicy::EverySec);
        assert_eq!(d.dir, std::path::PathBuf::from("./pion-data"));
        let o = serve_options(&[
            "--dir",
            "/x",
            "--appendfsync",
            "always",
            "--wal-segment-size",
            "8M",
            "--snapshot-wal-size=1g",
            "--wal-recover",
            "truncate",
        ]);
        let d = o.durability.expect("on");
        assert_eq!(d.dir, std::path::PathBuf::from("/x"));
        assert_eq!(d.fsync, FsyncPolicy::Always);
        assert_eq!(
            (d.segment_bytes, d.snapshot_after_bytes),
            (8 << 20, 1 << 30)
        );
        assert_eq!(d.recover, RecoverMode::Truncate);
        assert!(serve_options(&["--wal", "off"]).durability.is_none());
        assert_eq!(parse_size("f", "512"), Ok(512));
        assert_eq!(parse_size("f", "4kb"), Ok(4096));
        assert!(parse_size("f", "12x").is_err());
        assert!(parse_size("f", "99999999999G").is_err());
    }

    #[test]
    fn appendonly_follows_redis_persistence() {
        // Redis's pure cache: no log.
        assert!(serve_options(&["--appendonly", "no", "--save", ""])
            .durability
            .is_none());
        // RDB snapshots asked for: Pion keeps the log, at least as durable.
        let o = serve_options(&["--save", "900 1", "--appendonly", "no"]);
        assert!(o.durability.is_some());
        assert_eq!(o.config.save, vec![(900, 1)]);
        assert!(serve_options(&["--appendonly", "yes"]).durability.is_some());
        // --wal decides when given.
        assert!(serve_options(&["--appendonly", "yes", "--wal", "off"])
            .durability
            .is_none());
        assert!(parse(&["--save".to_string(), "900".to_string()], None).is_err());
    }

    #[test]
    fn bad_input_is_an_error() {
        let bad =
            |a: &[&str]| parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>(), None).is_err();
        assert!(bad(&["--bind", "not-an-ip"]));
        assert!(bad(&["--port", "99999"]));
        assert!(bad(&["--threads", "0"]));
        assert!(bad(&["--nope"]));
        assert!(bad(&["--port"]));
        assert!(bad(&["--wal", "maybe"]));
        assert!(bad(&["--appendfsync", "sometimes"]));
        assert!(bad(&["--wal-segment-size", "1"]));
        assert!(bad(&["--wal-recover", "skip"]));
    }

    #[test]
    fn help_groups_topics() {
        let h = help_text();
        assert!(h.contains("Network:") && h.contains("Security:") && h.contains("--threads"));
    }
}
