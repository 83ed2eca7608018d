//! `pion-server`: parse the command line, open the engine, serve until stopped.

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;

use pion_core::{Engine, EngineOptions};
use pion_server::cli::{self, Command};
use pion_server::Server;

// mimalloc: the server allocates small argument and reply buffers per command; a
// thread-caching allocator keeps that off the hot path (measured in doc/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match cli::parse(&args, std::env::var("PION_REQUIREPASS").ok()) {
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
    let cfg = &opts.config;
    eprintln!(
        "pion-server version={} (Redis {} compatible), pid={}, just started",
        pion_core::VERSION,
        pion_core::REDIS_VERSION,
        std::process::id()
    );
    match &opts.config_file {
        Some(path) => eprintln!("Configuration loaded from {}", path.display()),
        None => eprintln!(
            "No config file specified, using the default config. In order to specify a config file use pion-server /path/to/pion.conf"
        ),
    }
    let addrs = match cli::bind_addrs(&cfg.bind) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pion-server: {e}");
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
                eprintln!("pion-server: cannot listen on {addr}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let threads = cfg.threads;
    let port = cfg.port;
    let options = EngineOptions {
        config: cfg.clone(),
        ..EngineOptions::default()
    };
    let engine = match &opts.durability {
        Some(d) => {
            eprintln!(
                "pion-server: data in {}, write-ahead log on (appendfsync {})",
                d.dir.display(),
                d.fsync.name()
            );
            match Engine::open_with(options, d.clone()) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("pion-server: cannot open the data directory: {e}");
                    return ExitCode::from(1);
                }
            }
        }
        None => {
            eprintln!(
                "pion-server: --wal off: a pure cache, nothing is written to disk and \
                 everything is lost when the server stops"
            );
            Engine::in_memory(options)
        }
    };
    if let Err(e) = pion_server::startup::prepare(&engine, &opts) {
        eprintln!("pion-server: {e}");
        return ExitCode::from(1);
    }
    let engine_for_close = engine.clone();
    let lane_engine = engine.clone();
    let server = Server::with_listeners(engine, listeners, threads);
    let stop = server.stop_handle();
    if let Some(lane_port) = opts.kvcache_port {
        for ip in &addrs {
            let addr = SocketAddr::new(*ip, lane_port);
            let started = TcpListener::bind(addr)
                .and_then(|l| pion_server::binary::serve(lane_engine.clone(), l, stop.flag()));
            match started {
                Ok(_) => eprintln!("pion-server binary lane (prompt cache) on {addr}"),
                Err(e) => {
                    eprintln!("pion-server: cannot serve the binary lane on {addr}: {e} (--kvcache off to run without it)");
                    return ExitCode::from(1);
                }
            }
        }
    }
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(sig, stop.flag()) {
            eprintln!("pion-server: cannot install signal handler: {e}");
        }
    }
    let shown: Vec<String> = addrs
        .iter()
        .map(|ip| SocketAddr::new(*ip, port).to_string())
        .collect();
    eprintln!(
        "pion-server {} listening on {} with {threads} thread(s)",
        pion_core::VERSION,
        shown.join(", ")
    );
    eprintln!("Running mode=standalone, port={port}.");
    eprintln!("Ready to accept connections tcp");
    let result = server.run();
    if let Err(e) = engine_for_close.flush_log() {
        eprintln!("pion-server: could not flush the write-ahead log: {e}");
    }
    match result {
        Ok(()) => {
            eprintln!("pion-server: shut down cleanly");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pion-server: {e}");
            ExitCode::from(1)
        }
    }
}
