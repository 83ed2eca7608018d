//! Start-up with a damaged log, through the real `pion-server` binary: a torn tail is
//! truncated with a warning that counts the bytes, a flipped byte in the middle stops
//! start-up with an error naming the file, the offset and the flag that would
//! truncate there, and that flag then starts the server with everything before it.

use std::path::{Path, PathBuf};

use pion_core::durability::record::scan_segment;
use pion_tests::process::{temp_dir, PionProcess};
use pion_tests::RespValue;

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("wal-"))
        })
        .collect();
    v.sort();
    v
}

/// Writes `n` keys and kills the server; returns the segment holding them.
fn write_and_kill(dir: &Path, n: usize) -> PathBuf {
    let mut server = PionProcess::start(dir, &["--snapshot-wal-size", "0"]);
    let mut c = server.client();
    for i in 0..n {
        assert_eq!(
            c.cmd(&["SET", &format!("k{i}"), &format!("value-{i}")]),
            RespValue::Line(b'+', b"OK".to_vec())
        );
    }
    server.kill9();
    segments(dir)
        .into_iter()
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 100))
        .expect("a segment with the records")
}

fn dbsize(server: &PionProcess) -> RespValue {
    server.client().cmd(&["DBSIZE"])
}

#[test]
fn torn_tail_is_truncated_with_a_warning() {
    let dir = temp_dir("torn-tail");
    let seg = write_and_kill(dir.path(), 20);
    // Zero the end of the last record, as a crash during its write leaves it in the
    // zero-filled segment.
    let mut bytes = std::fs::read(&seg).expect("read");
    let end = scan_segment(&bytes).records_end;
    bytes[end - 7..end].fill(0);
    std::fs::write(&seg, &bytes).expect("write");
    let server = PionProcess::start(dir.path(), &[]);
    let log = server.stderr_text();
    assert!(log.contains("torn record"), "{log}");
    assert!(log.contains("truncating"), "{log}");
    assert_eq!(dbsize(&server), RespValue::Line(b':', b"19".to_vec()));
}

#[test]
fn mid_log_damage_stops_start_up_until_truncate_is_asked_for() {
    let dir = temp_dir("mid-log");
    let seg = write_and_kill(dir.path(), 20);
    let mut bytes = std::fs::read(&seg).expect("read");
    let mid = scan_segment(&bytes).records_end / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&seg, &bytes).expect("write");
    let err = match PionProcess::try_start(dir.path(), &[]) {
        Ok(_) => panic!("started on a damaged log"),
        Err(e) => e,
    };
    assert!(err.contains(&seg.display().to_string()), "{err}");
    assert!(err.contains("damaged at offset"), "{err}");
    assert!(err.contains("--wal-recover truncate"), "{err}");
    // Strict start-up changed nothing: the same refusal again.
    assert!(PionProcess::try_start(dir.path(), &[]).is_err());
    let server = PionProcess::start(dir.path(), &["--wal-recover", "truncate"]);
    let log = server.stderr_text();
    assert!(log.contains("--wal-recover truncate"), "{log}");
    let RespValue::Line(b':', n) = dbsize(&server) else {
        panic!("DBSIZE failed");
    };
    let n: usize = String::from_utf8_lossy(&n).parse().expect("number");
    assert!((1..20).contains(&n), "kept {n} of 20 keys");
    // Exactly the keys before the damage, with their values.
    let mut c = server.client();
    for i in 0..n {
        assert_eq!(
            c.cmd(&["GET", &format!("k{i}")]),
            RespValue::Bulk(b'$', Some(format!("value-{i}").into_bytes()))
        );
    }
}
