use std::path::Path;

use super::*;

fn write(s: &dyn Storage, path: &Path, data: &[u8]) -> Arc<dyn StoredFile> {
    let f = s.open(path, Open::Create).expect("create");
    f.write_at(data, 0).expect("write");
    f
}

#[test]
fn a_power_cut_keeps_exactly_what_fsyncs_covered() {
    let sim = Simulated::new();
    let dir = Path::new("/data");
    sim.create_dir_all(dir).expect("dir");
    // Written, fsynced, entry fsynced: survives; then more bytes, not fsynced: lost.
    let kept = write(&sim, &dir.join("kept"), b"durable");
    kept.sync().expect("sync");
    sim.sync_dir(dir).expect("dir sync");
    kept.write_at(b" and not", 7).expect("write");
    // A rename whose directory was not fsynced is undone; a removal likewise.
    let moved = write(&sim, &dir.join("tmp"), b"snapshot");
    moved.sync().expect("sync");
    sim.sync_dir(dir).expect("dir sync");
    sim.rename(&dir.join("tmp"), &dir.join("final"))
        .expect("rename");
    // Fsynced, but its directory entry never was: the file is gone.
    let orphan = write(&sim, &dir.join("orphan"), b"x");
    orphan.sync().expect("sync");
    sim.remove(&dir.join("kept")).expect("remove");
    assert!(!sim.exists(&dir.join("kept")));
    sim.power_cut();
    assert_eq!(sim.read(&dir.join("kept")).expect("kept"), b"durable");
    assert!(!sim.exists(&dir.join("orphan")));
    assert!(sim.exists(&dir.join("tmp")) && !sim.exists(&dir.join("final")));
    // Handles from before the cut are dead.
    assert!(kept.write_at(b"late", 0).is_err());
    // Truncation is a change like any other: undone unless fsynced.
    let f = sim.open(&dir.join("kept"), Open::Existing).expect("open");
    f.set_len(3).expect("truncate");
    assert_eq!(f.len().expect("len"), 3);
    sim.power_cut();
    assert_eq!(sim.read(&dir.join("kept")).expect("kept"), b"durable");
}

#[test]
fn planned_faults_fail_the_named_operation_and_nothing_else() {
    let sim: Arc<dyn Storage> = Arc::new(Simulated::new());
    let (faulty, plan) = Faulty::wrap(Arc::clone(&sim));
    let dir = Path::new("/d");
    faulty.create_dir_all(dir).expect("dir");
    let f = faulty.open(&dir.join("a"), Open::Create).expect("create");
    plan.fail_write(2, 28);
    f.write_at(b"one", 0).expect("first write");
    let e = f.write_at(b"two", 3).expect_err("second write fails");
    assert_eq!(e.raw_os_error(), Some(28));
    f.write_at(b"three", 3).expect("third write");
    // A torn write keeps its first bytes, then fails.
    plan.tear_write(1, 2, 5);
    assert!(f.write_at(b"XYZ", 0).is_err());
    assert_eq!(sim.read(&dir.join("a")).expect("read"), b"XYethree");
    plan.fail_sync(1, 5);
    assert_eq!(f.sync().expect_err("sync").raw_os_error(), Some(5));
    f.sync().expect("the next sync works");
    // Planned faults may be limited to some files.
    plan.only_paths_containing("wal-");
    plan.fail_write(1, 5);
    f.write_at(b"!", 0).expect("not a wal file");
    let w = faulty
        .open(&dir.join("wal-1.log"), Open::Create)
        .expect("create");
    assert!(w.write_at(b"!", 0).is_err());
    // A full disk fails every write and fsync until it is cleared (of the files
    // chosen); a stopped machine fails everything.
    plan.only_paths_containing("");
    plan.fail_all(Some(28));
    assert!(f.write_at(b"x", 0).is_err() && f.sync().is_err());
    plan.fail_all(None);
    f.write_at(b"x", 0).expect("writable again");
    plan.stop();
    assert!(f.len().is_err() && faulty.list(dir).is_err());
    plan.clear();
    assert!(f.len().is_ok());
    // A stop planned after two more changes: the third fails, and everything after.
    plan.stop_after(2);
    f.write_at(b"1", 0).expect("first change");
    f.sync().expect("second change");
    assert!(f.write_at(b"3", 0).is_err() && plan.is_stopped());
    assert!(f.len().is_err());
    plan.clear();
    assert!(plan.injected() >= 6);
}

#[test]
fn the_local_file_system_round_trips() {
    let dir = std::env::temp_dir().join(format!("pion-storage-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = Local;
    s.create_dir_all(&dir).expect("dir");
    let f = write(&s, &dir.join("f-2"), b"hello");
    f.sync().expect("sync");
    write(&s, &dir.join("f-10"), b"x");
    s.sync_dir(&dir).expect("dir sync");
    let mut buf = [0u8; 4];
    f.read_at(&mut buf, 1).expect("read");
    assert_eq!(&buf, b"ello");
    let numbered = list_numbered(&s, &dir, |n| n.strip_prefix("f-")?.parse().ok()).expect("list");
    assert_eq!(
        numbered.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [2, 10]
    );
    s.rename(&dir.join("f-2"), &dir.join("g")).expect("rename");
    assert_eq!(s.read(&dir.join("g")).expect("read"), b"hello");
    let _lock = s.lock_dir(&dir).expect("lock");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_seq_writer_writes_in_order_through_its_buffer() {
    use std::io::Write;
    let sim = Simulated::new();
    sim.create_dir_all(Path::new("/w")).expect("dir");
    let f = sim.open(Path::new("/w/f"), Open::Create).expect("create");
    let mut w = SeqWriter::new(f);
    let big = vec![7u8; SeqWriter::CHUNK + 3];
    w.write_all(b"head").expect("write");
    w.write_all(&big).expect("write");
    w.write_all(b"tail").expect("write");
    w.finish().expect("finish");
    let data = sim.read(Path::new("/w/f")).expect("read");
    assert_eq!(data.len(), 4 + big.len() + 4);
    assert!(data.starts_with(b"head") && data.ends_with(b"tail"));
    sim.power_cut();
    // finish() fsynced the bytes, but the entry's directory was never fsynced.
    assert!(!sim.exists(Path::new("/w/f")));
}
