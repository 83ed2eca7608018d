//! The binary lane: a second port (the RESP port + 1) for bulk K/V. Requests and
//! replies are length-prefixed frames ([`codec`]); a fetch is written with vectored
//! I/O straight from the stored block buffers, with no RESP encoding and no copy.
//!
//! Each connection gets its own thread (bulk transfers, few connections) and its own
//! session, so every operation runs through the same commands as over RESP —
//! `KV.MATCH`, `KV.PUT`, `AUTH` — with the same checks, log records and errors; only a
//! fetch reads the store directly, to hand its buffers to the socket.

pub mod codec;

use std::io::{self, ErrorKind, IoSlice, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pion_core::prefix::BlockId;
use pion_core::{Engine, Reply};

use codec::{header, parse_header, parse_request, Request, ERROR, HEADER_LEN};

/// Serves the binary lane on `listener` until `stop` is set.
pub fn serve(
    engine: Engine,
    listener: TcpListener,
    stop: Arc<AtomicBool>,
) -> io::Result<JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("pion-kv-accept".into())
        .spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        // The same client limit as the RESP port (lane sessions are
                        // registered clients too).
                        let maxclients = engine.config().with(|c| c.maxclients);
                        if engine.clients().len() >= maxclients {
                            let msg = b"ERR max number of clients reached";
                            let _ = stream.set_nonblocking(false);
                            let _ = stream.write_all(&header(ERROR, msg.len()));
                            let _ = stream.write_all(msg);
                            engine
                                .server_stats()
                                .rejected_connections
                                .fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        let engine = engine.clone();
                        let stop = Arc::clone(&stop);
                        let spawned = std::thread::Builder::new()
                            .name("pion-kv-conn".into())
                            .spawn(move || {
                                let _ = stream.set_nodelay(true);
                                let _ = stream.set_nonblocking(false);
                                let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                                if let Err(e) = Connection::new(&engine, stream).run(&stop) {
                                    if e.kind() != ErrorKind::UnexpectedEof {
                                        pion_core::log_notice!(
                                            "binary-lane connection closed: {e}"
                                        );
                                    }
                                }
                            });
                        if let Err(e) = spawned {
                            pion_core::log_warning!(
                                "binary lane cannot start a connection thread: {e}"
                            );
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Err(e) => {
                        pion_core::log_warning!("binary-lane accept failed: {e}");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        })
}

struct Connection<'a> {
    engine: &'a Engine,
    stream: TcpStream,
    session: pion_core::Session,
}

/// Reads exactly `buf.len()` bytes, waiting through read timeouts (used to notice a
/// stop request) unless stopping. EOF before the first byte is a clean close.
fn read_full(stream: &mut TcpStream, buf: &mut [u8], stop: &AtomicBool) -> io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        match stream.read(&mut buf[at..]) {
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => at += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.load(Ordering::SeqCst) {
                    return Err(ErrorKind::UnexpectedEof.into());
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes every slice, as many `writev` calls as it takes (at most 512 slices each).
fn write_all_vectored(stream: &mut TcpStream, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !bufs.is_empty() {
        let upto = bufs.len().min(512);
        let n = stream.write_vectored(&bufs[..upto])?;
        if n == 0 {
            return Err(ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut bufs, n);
    }
    Ok(())
}

impl<'a> Connection<'a> {
    fn new(engine: &'a Engine, stream: TcpStream) -> Connection<'a> {
        let mut session = engine.session();
        session.client.authenticated = !engine.requires_auth();
        Connection {
            engine,
            stream,
            session,
        }
    }

    fn reply(&mut self, opcode: u8, body: &[u8]) -> io::Result<()> {
        let h = header(opcode, body.len());
        write_all_vectored(
            &mut self.stream,
            &mut [IoSlice::new(&h), IoSlice::new(body)],
        )
    }

    fn error(&mut self, text: &str) -> io::Result<()> {
        self.reply(ERROR, text.as_bytes())
    }

    fn run(mut self, stop: &AtomicBool) -> io::Result<()> {
        let limit = self.engine.config().with(|c| c.client_query_buffer_limit);
        loop {
            let mut h = [0u8; HEADER_LEN];
            read_full(&mut self.stream, &mut h, stop)?;
            let hd = match parse_header(&h) {
                Ok(hd) => hd,
                Err(e) => {
                    // Out of step with the peer: say why and close.
                    self.error(&e)?;
                    return Ok(());
                }
            };
            if u64::from(hd.len) > limit {
                self.error(&format!(
                    "ERR binary-lane frame of {} bytes is over the limit ({limit}, client-query-buffer-limit)",
                    hd.len
                ))?;
                return Ok(());
            }
            let mut body = vec![0u8; hd.len as usize];
            read_full(&mut self.stream, &mut body, stop)?;
            match parse_request(hd.opcode, &body) {
                Ok(req) => {
                    drop(body);
                    self.handle(hd.opcode, req)?;
                }
                Err(e) => self.error(&e)?,
            }
        }
    }

    fn handle(&mut self, opcode: u8, req: Request) -> io::Result<()> {
        if let Request::Ping(b) = &req {
            return self.reply(opcode | 0x80, b);
        }
        if let Request::Auth(user, pass) = req {
            let mut args = vec![b"AUTH".to_vec()];
            args.extend(user);
            args.push(pass);
            return match self.session.execute_argv(&args) {
                Reply::Error(e) => self.error(&e),
                _ => self.reply(opcode | 0x80, &[]),
            };
        }
        if !self.session.client.authenticated {
            return self.error("NOAUTH Authentication required.");
        }
        match req {
            Request::Match { ns, tokens } => {
                let le: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
                let reply = self
                    .session
                    .execute_argv(&[b"KV.MATCH".to_vec(), ns.into_bytes(), le]);
                match reply {
                    Reply::Array(v) => match (v.first(), v.get(1)) {
                        (Some(Reply::Integer(n)), Some(Reply::Array(ids))) => {
                            let mut body = (*n as u64).to_le_bytes().to_vec();
                            body.extend_from_slice(&(ids.len() as u32).to_le_bytes());
                            for id in ids {
                                if let Reply::Bulk(hex) = id {
                                    let id = BlockId::parse(hex).unwrap_or_default();
                                    body.extend_from_slice(&id.0.to_le_bytes());
                                }
                            }
                            self.reply(opcode | 0x80, &body)
                        }
                        _ => self.error("ERR internal error: unexpected KV.MATCH reply"),
                    },
                    Reply::Error(e) => self.error(&e),
                    _ => self.error("ERR internal error: unexpected KV.MATCH reply"),
                }
            }
            Request::Put {
                ns,
                parent,
                tokens,
                layers,
            } => {
                let mut args = vec![
                    b"KV.PUT".to_vec(),
                    ns.into_bytes(),
                    BlockId(parent).hex().into_bytes(),
                    tokens.iter().flat_map(|t| t.to_le_bytes()).collect(),
                ];
                args.extend(layers);
                match self.session.execute_argv(&args) {
                    Reply::Bulk(hex) => {
                        let id = BlockId::parse(&hex).unwrap_or_default();
                        self.reply(opcode | 0x80, &id.0.to_le_bytes())
                    }
                    Reply::Error(e) => self.error(&e),
                    _ => self.error("ERR internal error: unexpected KV.PUT reply"),
                }
            }
            Request::Fetch {
                ns,
                ids,
                layers,
                batch,
            } => self.fetch(opcode, &ns, &ids, layers.as_deref(), batch),
            Request::Ping(_) | Request::Auth(..) => Ok(()),
        }
    }

    /// Fetches blocks and writes them straight from the stored buffers.
    fn fetch(
        &mut self,
        opcode: u8,
        ns: &str,
        ids: &[u128],
        layers: Option<&[usize]>,
        batch: bool,
    ) -> io::Result<()> {
        let mut blocks = Vec::with_capacity(ids.len());
        {
            let mut store = self.engine.prefix().lock();
            for &id in ids {
                match store.get(ns, BlockId(id), layers) {
                    Ok(b) => blocks.push(b),
                    Err(e) => {
                        drop(store);
                        return self.error(&e.0);
                    }
                }
            }
        }
        // A reply shows only what the log already holds (as over RESP).
        if let Some(d) = self.engine.durability() {
            if d.wal().failure().is_none() {
                let _ = self.engine.make_durable(d.wal().appended_seq());
            }
        }
        // Headers first (they must outlive the slices that point into them).
        let mut heads: Vec<Vec<u8>> = Vec::with_capacity(blocks.len() * 8 + 1);
        let mut total = if batch { 4 } else { 0 };
        if batch {
            heads.push((blocks.len() as u32).to_le_bytes().to_vec());
        }
        for (tokens, data) in &blocks {
            let mut h = tokens.to_le_bytes().to_vec();
            h.extend_from_slice(&(data.len() as u32).to_le_bytes());
            total += 8;
            heads.push(h);
            for l in data {
                let mut lh = Vec::with_capacity(9);
                match l {
                    None => lh.push(0),
                    Some(bytes) => {
                        lh.push(1);
                        lh.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
                        total += bytes.len();
                    }
                }
                total += lh.len();
                heads.push(lh);
            }
        }
        let frame = header(opcode | 0x80, total);
        let mut slices = Vec::with_capacity(heads.len() * 2 + 1);
        slices.push(IoSlice::new(&frame));
        let mut hi = heads.iter();
        if batch {
            if let Some(h) = hi.next() {
                slices.push(IoSlice::new(h));
            }
        }
        for (_, data) in &blocks {
            if let Some(h) = hi.next() {
                slices.push(IoSlice::new(h));
            }
            for l in data {
                if let Some(h) = hi.next() {
                    slices.push(IoSlice::new(h));
                }
                if let Some(bytes) = l {
                    slices.push(IoSlice::new(bytes));
                }
            }
        }
        write_all_vectored(&mut self.stream, &mut slices)
    }
}
