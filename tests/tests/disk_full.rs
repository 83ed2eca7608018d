//! A disk that refuses the log: writes get Redis's MISCONF error, reads keep working,
//! the write that met the failure is not acknowledged until the disk holds it, writes
//! resume once the server has healed (a snapshot of memory and a fresh segment) after
//! the disk works again, and recovery loses nothing that was acknowledged.
//!
//! Two ways: a fault-injecting storage behind an in-process server, and a real, tiny
//! tmpfs filled to the brim under a `pion-server` process (where the machine lets the
//! test mount one).

use std::process::Command;
use std::time::Duration;

use pion_tests::process::{temp_dir, PionProcess};
use pion_tests::{PionServer, RespValue};

fn line(t: u8, s: &str) -> RespValue {
    RespValue::Line(t, s.as_bytes().to_vec())
}

fn is_misconf(v: &RespValue) -> bool {
    matches!(v, RespValue::Line(b'-', l) if l.starts_with(b"MISCONF Errors writing to the write-ahead log"))
}

#[test]
fn injected_failure_holds_the_reply_refuses_writes_and_resumes() {
    let server = PionServer::start(2);
    let mut a = pion_tests::Client::connect(server.port).expect("connect");
    let mut b = pion_tests::Client::connect(server.port).expect("connect");
    assert_eq!(a.cmd(&["SET", "a", "1"]), line(b'+', "OK"));
    server.faults.fail_all(Some(28)); // ENOSPC
                                      // The write that meets the full disk: applied in memory, but its reply waits.
    a.send_raw(&pion_tests::Client::encode(&["SET", "b", "2"]))
        .expect("send");
    a.set_read_timeout(Duration::from_millis(400))
        .expect("timeout");
    assert!(
        a.read_reply().is_err(),
        "a write was acknowledged without its log record"
    );
    // Other clients: writes refused with MISCONF, reads answered.
    assert!(is_misconf(&b.cmd(&["SET", "c", "3"])));
    assert!(is_misconf(&b.cmd(&["INCR", "n"])));
    assert!(
        is_misconf(&b.cmd(&["PING"])),
        "PING reports the failure, as in Redis"
    );
    assert_eq!(
        b.cmd(&["GET", "a"]),
        RespValue::Bulk(b'$', Some(b"1".to_vec()))
    );
    assert_eq!(b.cmd(&["EXISTS", "c"]), line(b':', "0"));
    // The disk recovers: the held reply goes out, writes are accepted again.
    server.faults.fail_all(None);
    a.set_read_timeout(Duration::from_secs(5)).expect("timeout");
    let (held, _) = a.read_reply().expect("the held reply arrives");
    assert_eq!(held, line(b'+', "OK"));
    assert_eq!(b.cmd(&["SET", "c", "3"]), line(b'+', "OK"));
    assert_eq!(b.cmd(&["PING"]), line(b'+', "PONG"));
}

/// Runs a shell command; true when it succeeded.
fn sh(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", cmd])
        .status()
        .is_ok_and(|s| s.success())
}

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        sh(&format!("umount -l '{}'", self.0.display()));
    }
}

#[test]
fn a_real_full_filesystem() {
    let base = temp_dir("tiny-fs");
    let mnt = base.path().join("mnt");
    std::fs::create_dir_all(&mnt).expect("mkdir");
    if !sh(&format!(
        "mount -t tmpfs -o size=1m tmpfs '{}' 2>/dev/null",
        mnt.display()
    )) {
        eprintln!("a_real_full_filesystem: cannot mount a tmpfs here (needs root); covered by the injected failure test only");
        return;
    }
    let _mount = Mount(mnt.clone());
    let dir = mnt.join("data");
    let mut server = PionProcess::start(
        &dir,
        &["--wal-segment-size", "64K", "--snapshot-wal-size", "0"],
    );
    let mut c = server.client();
    let value = "v".repeat(1000);
    let mut acked = Vec::new();
    let mut held = None;
    c.set_read_timeout(Duration::from_secs(2)).expect("timeout");
    for i in 0..5000 {
        let key = format!("k{i}");
        match c.call(&["SET", &key, &value]) {
            Ok((RespValue::Line(b'+', _), _)) => acked.push(key),
            // The write that met the full disk: its reply waits for the log.
            Err(_) => {
                held = Some(key);
                break;
            }
            Ok((other, _)) => panic!("unexpected {}", other.render()),
        }
    }
    let held = held.expect("a 1 MiB filesystem must fill up");
    assert!(acked.len() > 100, "only {} writes fitted", acked.len());
    // Reads still work while the disk is full.
    let mut reader = server.client();
    assert_eq!(
        reader.cmd(&["GET", &acked[0]]),
        RespValue::Bulk(b'$', Some(value.clone().into_bytes()))
    );
    assert!(is_misconf(&reader.cmd(&["SET", "x", "1"])));
    // Give the disk room again: once the server has healed (a snapshot of memory and
    // a fresh segment), writes resume.
    assert!(sh(&format!("mount -o remount,size=8m '{}'", mnt.display())));
    let mut resumed = false;
    for _ in 0..600 {
        if reader.cmd(&["SET", "after", "room"]) == line(b'+', "OK") {
            resumed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(resumed, "writes did not resume after the disk recovered");
    let (reply, _) = c.read_reply().expect("the held reply arrives");
    assert_eq!(reply, line(b'+', "OK"));
    acked.push(held);
    // Nothing acknowledged is lost across a crash.
    server.kill9();
    drop(c);
    drop(reader);
    let server = PionProcess::start(&dir, &[]);
    let mut c = server.client();
    for key in &acked {
        assert_eq!(
            c.cmd(&["STRLEN", key]),
            line(b':', "1000"),
            "acknowledged {key} lost"
        );
    }
    assert_eq!(
        c.cmd(&["GET", "after"]),
        RespValue::Bulk(b'$', Some(b"room".to_vec()))
    );
}
