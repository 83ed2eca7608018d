//! A real `pion-server` child process for the durability tests. Durability can only be
//! proven across process lifetimes: the server must be SIGKILLed mid-write, stopped
//! cleanly, and started again on the same data directory, and when it refuses to start
//! (a corrupt log, a held lock) its stderr is the evidence. The in-process `PionServer`
//! can do none of that, so this module runs the binary.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::resp::{Client, RespValue};
use crate::servers::free_port;

/// How long a start may take: recovery replays the log before the port answers.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a clean stop may take before the test gives up on it.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// A fresh directory under the system temp dir, removed with its contents on drop.
///
/// When the drop happens while the thread is panicking (a failing test), or when
/// `PION_KEEP_TEMP` is set, the directory is kept and its path printed, so the data
/// files and server logs of a failure can be inspected.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("PION_KEEP_TEMP").is_some() {
            eprintln!("kept {} for inspection", self.path.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Makes a unique, empty directory named after `name` under `std::env::temp_dir()`.
pub fn temp_dir(name: &str) -> TempDir {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path =
            std::env::temp_dir().join(format!("pion-{name}-{}-{n}-{nanos}", std::process::id()));
        match std::fs::create_dir(&path) {
            Ok(()) => return TempDir { path },
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot create temp dir {}: {e}", path.display()),
        }
    }
}

/// The `pion-server` binary the tests run.
///
/// `$PION_SERVER_BIN` when set; otherwise the binary in the test executable's profile
/// directory (`target/<profile>/deps/<test>` → `target/<profile>/pion-server`), which
/// cargo builds (or finds current) once per test process.
pub fn server_bin() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BIN.get_or_init(locate_or_build) {
        Ok(path) => path.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn locate_or_build() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("PION_SERVER_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("unexpected test executable path {}", exe.display()))?;
    let bin = profile_dir.join(format!("pion-server{}", std::env::consts::EXE_SUFFIX));
    let target_dir = profile_dir
        .parent()
        .ok_or_else(|| format!("no target dir above {}", profile_dir.display()))?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|root| root.join("Cargo.toml"))
        .filter(|m| m.exists());
    // Build even when a binary is there: a stale one would test yesterday's server.
    // Cargo makes this a quick no-op when it is current. Without a workspace or a cargo
    // to build with (a test binary run elsewhere), the binary found is used as is.
    let Some(manifest) = manifest else {
        return bin
            .exists()
            .then(|| bin.clone())
            .ok_or_else(|| format!("no {} and no workspace to build it", bin.display()));
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args([
            "build",
            "--quiet",
            "-p",
            "pion-server",
            "--bin",
            "pion-server",
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir);
    if exe.components().any(|c| c.as_os_str() == "release") {
        build.arg("--release");
    }
    match build.status() {
        Ok(status) if status.success() && bin.exists() => Ok(bin),
        Ok(status) => Err(format!(
            "building pion-server failed ({status}); set PION_SERVER_BIN to a built binary"
        )),
        Err(_) if bin.exists() => Ok(bin),
        Err(e) => Err(format!("cannot run cargo to build pion-server: {e}")),
    }
}

/// Why a start did not produce a ready server.
enum NotReady {
    /// Another process holds the port; worth another try on a new one.
    PortClash(String),
    /// The server exited, or never answered; the text says why.
    Failed(String),
}

/// A `pion-server` child process on a free port, with its stderr captured to a file.
/// Killed (SIGKILL) on drop if still running.
pub struct PionProcess {
    port: u16,
    child: Child,
    exited: Option<ExitStatus>,
    stderr_path: PathBuf,
    /// The config's `logfile` and its length when the process started: a server that
    /// logs to a file says why it could not start there, not on stderr.
    config_log: Option<(PathBuf, u64)>,
    _logs: TempDir,
}

impl PionProcess {
    /// Starts `pion-server --port <free> --dir <dir> <extra_args>` and waits until it
    /// answers PING. Panics with the server's stderr if it does not come up.
    pub fn start(dir: &Path, extra_args: &[&str]) -> PionProcess {
        PionProcess::try_start(dir, extra_args)
            .unwrap_or_else(|e| panic!("pion-server on {} did not start: {e}", dir.display()))
    }

    /// Like [`PionProcess::start`], but a server that exits (or never answers) before it
    /// is ready is an `Err` carrying its exit status and stderr: the refusals the
    /// corruption and locking tests expect. A port taken by someone else is retried.
    pub fn try_start(dir: &Path, extra_args: &[&str]) -> Result<PionProcess, String> {
        PionProcess::spawn(None, dir, extra_args)
    }

    /// Like [`PionProcess::try_start`] with a configuration file first on the command
    /// line (`pion-server pion.conf --port … --dir … <extra_args>`), as redis-server
    /// takes one.
    pub fn try_start_with_config(
        config: &Path,
        dir: &Path,
        extra_args: &[&str],
    ) -> Result<PionProcess, String> {
        PionProcess::spawn(Some(config), dir, extra_args)
    }

    fn spawn(
        config: Option<&Path>,
        dir: &Path,
        extra_args: &[&str],
    ) -> Result<PionProcess, String> {
        let bin = server_bin();
        let log_file = config.and_then(config_log_file);
        let mut last = String::new();
        // What the tries that lost their port printed: a try can get as far as
        // recovering the log (and warning about it) before it fails to bind, and the
        // tests read those lines from the server that did start.
        let mut earlier = String::new();
        for _ in 0..5 {
            let config_log = log_file.as_ref().map(|path| {
                let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                (path.clone(), len)
            });
            let port = free_port();
            let logs = temp_dir("log");
            let stderr_path = logs.path().join("server.log");
            let mut log = File::create(&stderr_path)
                .map_err(|e| format!("create {}: {e}", stderr_path.display()))?;
            log.write_all(earlier.as_bytes())
                .map_err(|e| format!("write {}: {e}", stderr_path.display()))?;
            let log_out = log
                .try_clone()
                .map_err(|e| format!("clone log handle: {e}"))?;
            let child = Command::new(&bin)
                .args(config)
                .arg("--port")
                .arg(port.to_string())
                .arg("--dir")
                .arg(dir)
                .args(extra_args)
                .stdin(Stdio::null())
                .stdout(log_out)
                .stderr(log)
                .spawn()
                .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
            let mut process = PionProcess {
                port,
                child,
                exited: None,
                stderr_path,
                config_log,
                _logs: logs,
            };
            match process.wait_ready() {
                Ok(()) => return Ok(process),
                Err(NotReady::PortClash(text)) => {
                    earlier = process.stderr_text();
                    last = text;
                }
                Err(NotReady::Failed(text)) => return Err(text),
            }
        }
        Err(format!("no usable port after 5 tries; last: {last}"))
    }

    fn wait_ready(&mut self) -> Result<(), NotReady> {
        let deadline = Instant::now() + READY_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(status) = self.poll_exit() {
                let text = self.stderr_text() + &self.config_log_text();
                let msg = format!("pion-server exited with {status} before it was ready:\n{text}");
                if text.contains("Address already in use") || text.contains("cannot listen") {
                    return Err(NotReady::PortClash(msg));
                }
                return Err(NotReady::Failed(msg));
            }
            if let Ok(mut client) = Client::connect(self.port) {
                match client.call(&["PING"]) {
                    Ok((RespValue::Line(b'-', line), _)) if line.starts_with(b"LOADING") => {}
                    Ok(_) => {
                        // Something answers; make sure it is our child and not another
                        // server that grabbed the port between free_port and bind. (Not
                        // with PION_SERVER_BIN: that may be a wrapper whose child serves.)
                        let direct = std::env::var_os("PION_SERVER_BIN").is_none();
                        return match server_pid(&mut client) {
                            Some(pid) if direct && pid != self.child.id() => {
                                self.kill9();
                                Err(NotReady::PortClash(format!(
                                    "port {} answered from pid {pid}",
                                    self.port
                                )))
                            }
                            _ => Ok(()),
                        };
                    }
                    Err(_) => {}
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill9();
        Err(NotReady::Failed(format!(
            "pion-server did not answer PING within {READY_TIMEOUT:?}:\n{}",
            self.stderr_text()
        )))
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A new connection to it.
    pub fn client(&self) -> Client {
        Client::connect(self.port)
            .unwrap_or_else(|e| panic!("connect to pion-server on port {}: {e}", self.port))
    }

    /// Everything it wrote on stderr (and stdout) so far.
    pub fn stderr_text(&self) -> String {
        std::fs::read(&self.stderr_path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// What this process wrote to the config's `logfile` (empty without one).
    fn config_log_text(&self) -> String {
        let Some((path, start)) = &self.config_log else {
            return String::new();
        };
        std::fs::read(path)
            .map(|b| {
                let from = usize::try_from(*start).unwrap_or(0).min(b.len());
                String::from_utf8_lossy(&b[from..]).into_owned()
            })
            .unwrap_or_default()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.poll_exit().is_none()
    }

    fn poll_exit(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exited = Some(status);
            }
        }
        self.exited
    }

    /// SIGKILL (no chance to flush or clean up), then reaps it. A no-op if it has exited.
    pub fn kill9(&mut self) {
        if self.poll_exit().is_some() {
            return;
        }
        let _ = self.child.kill();
        if let Ok(status) = self.child.wait() {
            self.exited = Some(status);
        }
    }

    /// Stops it with the SHUTDOWN command and waits for it to exit; returns its exit
    /// status. Panics (after a SIGKILL) if it does not exit in time.
    pub fn shutdown(&mut self) -> ExitStatus {
        if let Ok(mut client) = Client::connect(self.port) {
            // SHUTDOWN closes the connection instead of replying; a reply is an error.
            if let Ok((reply, _)) = client.call(&["SHUTDOWN"]) {
                assert!(
                    !reply.is_error(),
                    "SHUTDOWN refused: {}\n{}",
                    reply.render(),
                    self.stderr_text()
                );
            }
        }
        self.wait_stopped("SHUTDOWN")
    }

    /// Stops it with SIGTERM and waits for it to exit; returns its exit status. Panics
    /// (after a SIGKILL) if it does not exit in time.
    pub fn terminate(&mut self) -> ExitStatus {
        if self.poll_exit().is_none() {
            let sent = Command::new("kill")
                .arg("-TERM")
                .arg(self.child.id().to_string())
                .status();
            assert!(
                sent.map(|s| s.success()).unwrap_or(false),
                "could not send SIGTERM to pion-server"
            );
        }
        self.wait_stopped("SIGTERM")
    }

    /// Waits up to `timeout` for the process to exit; its status if it did.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.poll_exit() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn wait_stopped(&mut self, how: &str) -> ExitStatus {
        match self.wait_exit(STOP_TIMEOUT) {
            Some(status) => status,
            None => {
                self.kill9();
                panic!(
                    "pion-server did not exit within {STOP_TIMEOUT:?} of {how}:\n{}",
                    self.stderr_text()
                );
            }
        }
    }
}

/// The `logfile` a redis.conf names, if any.
fn config_log_file(config: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(config).ok()?;
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next()? == "logfile")
            .then(|| words.next().map(|w| PathBuf::from(w.trim_matches('"'))))
            .flatten()
            .filter(|p| !p.as_os_str().is_empty())
    })
}

impl Drop for PionProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The `process_id` field of `INFO server`, if the server reports one.
fn server_pid(client: &mut Client) -> Option<u32> {
    let (reply, _) = client.call(&["INFO", "server"]).ok()?;
    let RespValue::Bulk(_, Some(text)) = reply else {
        return None;
    };
    String::from_utf8_lossy(&text)
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|v| v.trim().parse().ok())
}
