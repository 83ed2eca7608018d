//! `pion-server`: parse the command line, open the engine, serve until stopped.

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;

use pion_core::util::log;
use pion_core::{log_notice, log_verbose, log_warning, Engine, EngineOptions};
use pion_server::cli::{self, Command};
use pion_server::Server;

// mimalloc: the server allocates small argument and reply buffers per command; a
// thread-caching allocator keeps that off the hot path (measured in doc/benchmarks.md).
// Counted, so that `used_memory` and `maxmemory` see what the process really holds.
#[global_allocator]
static GLOBAL: pion_core::util::alloc::CountingAlloc = pion_core::util::alloc::CountingAlloc;

fn main() -> ExitCode {
    // Before the keyspace allocates: huge pages would hold its freed memory resident,
    // and only the vector indexes' arrays ask for them.
    pion_core::util::hugepages::huge_pages_only_where_advised();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = match cli::parse(&args, std::env::var("PION_REQUIREPASS").ok()) {
        Ok(Command::Serve(opts)) => opts,
        Ok(Command::Help) => {
            print!("{}", cli::help_text());
            return ExitCode::SUCCESS;
        }
        Ok(Command::Version) => {
            println!(
                "pion-server {} (Redis {} compatible)",
                pion_core::VERSION,
                pion_core::REDIS_VERSION
            );
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("pion-server: {e}");
            return ExitCode::from(1);
        }
    };
    // As redis-server does, `dir` becomes the working directory, so relative paths of
    // later directives (aclfile, logfile, pidfile) are inside it.
    if let Err(e) = enter_dir(&mut opts) {
        eprintln!("pion-server: {e}");
        return ExitCode::from(1);
    }
    let cfg = &opts.config;
    log::set_level(cfg.loglevel);
    if let Err(e) = log::set_file(&cfg.logfile) {
        eprintln!("pion-server: Can't open the log file {}: {e}", cfg.logfile);
        return ExitCode::from(1);
    }
    log_notice!("oO0OoO0OoO0Oo Pion is starting oO0OoO0OoO0Oo");
    log_notice!(
        "Pion version={} (Redis {} compatible), pid={}, just started",
        pion_core::VERSION,
        pion_core::REDIS_VERSION,
        std::process::id()
    );
    // Directives for machinery Pion does not have are kept; say that they do nothing.
    for name in cfg.compat.keys() {
        if let Some(c) = pion_core::config::COMPAT.iter().find(|c| c.name == *name) {
            log_verbose!(
                "'{name}' is kept for compatibility and changes nothing: {}",
                c.why
            );
        }
    }
    match &opts.config_file {
        Some(path) => log_notice!("Configuration loaded from {}", path.display()),
        None => log_warning!(
            "No config file specified, using the default config. In order to specify a config file use pion-server /path/to/pion.conf"
        ),
    }
    let addrs = match cli::bind_addrs(&cfg.bind) {
        Ok(a) => a,
        Err(e) => {
            log_warning!("{e}");
            return ExitCode::from(2);
        }
    };
    // One listening socket per --bind address.
    let mut listeners = Vec::new();
    for ip in &addrs {
        let addr = SocketAddr::new(*ip, cfg.port);
        match TcpListener::bind(addr) {
            Ok(l) => listeners.push(l),
            Err(e) => {
                log_warning!("Warning: Could not create server TCP listening socket {addr}: {e}");
                log_warning!("Failed listening on port {} (tcp), aborting.", cfg.port);
                return ExitCode::from(1);
            }
        }
    }
    let unix = if cfg.unixsocket.is_empty() {
        None
    } else {
        match pion_server::stream::bind_unix(&cfg.unixsocket, cfg.unixsocketperm) {
            Ok(l) => Some((l, cfg.unixsocket.clone())),
            Err(e) => {
                log_warning!("Failed opening Unix socket {}: {e}", cfg.unixsocket);
                return ExitCode::from(1);
            }
        }
    };
    let threads = cfg.threads;
    let port = cfg.port;
    // The sentence model first: a folder that does not load stops the start-up
    // before the data directory is touched.
    let embedder = match &opts.embed_model {
        Some(dir) => match pion_core::embed::open(dir) {
            Ok(service) => {
                log_notice!(
                    "embedding model {} loaded ({} dimensions, {} tokens)",
                    service.model(),
                    service.dim(),
                    service.max_tokens()
                );
                Some(std::sync::Arc::new(service))
            }
            Err(e) => {
                log_warning!("Cannot load the --embed-model folder: {e}");
                return ExitCode::from(1);
            }
        },
        None => None,
    };
    let options = EngineOptions {
        config: cfg.clone(),
        ..EngineOptions::default()
    };
    let engine = match &opts.durability {
        Some(d) => {
            log_notice!(
                "data in {}, write-ahead log on (appendfsync {})",
                d.dir.display(),
                d.fsync.name()
            );
            match Engine::open_with(options, d.clone()) {
                Ok(e) => e,
                Err(e) => {
                    log_warning!("Cannot open the data directory: {e}");
                    return ExitCode::from(1);
                }
            }
        }
        None => {
            log_notice!(
                "--wal off: a pure cache, nothing is written to disk and \
                 everything is lost when the server stops"
            );
            Engine::in_memory(options)
        }
    };
    if let Some(service) = embedder {
        engine.set_embedder(service);
    }
    if let Err(e) = pion_server::startup::prepare(&engine, &opts) {
        log_warning!("{e}");
        return ExitCode::from(1);
    }
    let engine_for_close = engine.clone();
    let mut lane_listeners = Vec::new();
    if let Some(lane_port) = opts.kvcache_port {
        for ip in &addrs {
            let addr = SocketAddr::new(*ip, lane_port);
            match TcpListener::bind(addr) {
                Ok(l) => {
                    log_notice!("binary lane (prompt cache) on {addr}");
                    lane_listeners.push(l);
                }
                Err(e) => {
                    log_warning!("Cannot serve the binary lane on {addr}: {e} (--kvcache off to run without it)");
                    return ExitCode::from(1);
                }
            }
        }
    }
    let mut server =
        Server::with_listeners(engine, listeners, threads).with_lane_listeners(lane_listeners);
    if let Some((l, path)) = unix {
        server = server.with_unix_socket(l, path);
    }
    let stop = server.stop_handle();
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(sig, stop.flag()) {
            log_warning!("Cannot install a signal handler: {e}");
        }
    }
    let shown: Vec<String> = addrs
        .iter()
        .map(|ip| SocketAddr::new(*ip, port).to_string())
        .collect();
    if opts.show_logo {
        log::write_raw(&banner(port, threads));
    }
    log_notice!(
        "Pion {} listening on {} with {threads} thread(s)",
        pion_core::VERSION,
        shown.join(", ")
    );
    log_notice!("Running mode=standalone, port={port}.");
    log_notice!("Server initialized");
    log_notice!("Ready to accept connections tcp");
    if !opts.config.unixsocket.is_empty() {
        log_notice!("Ready to accept connections unix");
    }
    let result = server.run();
    if let Err(e) = engine_for_close.flush_log() {
        log_warning!("Could not flush the write-ahead log: {e}");
    }
    match result {
        Ok(()) => {
            log_notice!("Pion is now ready to exit, bye bye...");
            ExitCode::SUCCESS
        }
        Err(e) => {
            log_warning!("{e}");
            ExitCode::from(1)
        }
    }
}

/// Creates the data directory and makes it the working directory; `dir` becomes its
/// absolute path (what `CONFIG GET dir` answers, as in Redis).
fn enter_dir(opts: &mut cli::ServeOptions) -> Result<(), String> {
    // The configuration file stays where it was named (CONFIG REWRITE writes it).
    if let Some(file) = opts.config_file.as_mut() {
        if let Ok(abs) = std::fs::canonicalize(&*file) {
            *file = abs;
        }
    }
    let dir = std::path::PathBuf::from(&opts.config.dir);
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::canonicalize(&dir))
        .and_then(|abs| std::env::set_current_dir(&abs).map(|()| abs))
        .map(|abs| {
            opts.config.dir = abs.display().to_string();
            if let Some(d) = opts.durability.as_mut() {
                d.dir = abs;
            }
        })
        .map_err(|e| format!("Can't chdir to '{}': {e}", dir.display()))
}

/// The start-up banner of `always-show-logo yes`: what runs, where, and its PID (tools
/// that start the server look for `PID: `).
fn banner(port: u16, threads: usize) -> String {
    let lines = [
        format!("Pion {}", pion_core::VERSION),
        format!("Redis {} compatible", pion_core::REDIS_VERSION),
        format!("Port: {port}"),
        format!("PID: {}", std::process::id()),
        format!("Threads: {threads}"),
    ];
    let width = lines.iter().map(|l| l.len()).max().unwrap_or(0) + 4;
    let rule = format!("+{}+\n", "-".repeat(width));
    let mut out = rule.clone();
    for l in &lines {
        out.push_str(&format!("|  {l:<w$}|\n", w = width - 2));
    }
    out.push_str(&rule);
    out
}
