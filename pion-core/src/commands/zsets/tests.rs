//! Behaviour of the sorted-set commands, with replies checked against Redis 7.0.

use crate::{Engine, EngineOptions, Reply};

fn engine() -> Engine {
    Engine::open(EngineOptions::default())
}

#[test]
fn placeholder_builds() {
    let e = engine();
    assert_eq!(e.execute(0, &["ZADD", "z", "1", "a"]), Reply::Integer(1));
}

// TEMPDIFF-START
fn resp2(r: &Reply, out: &mut Vec<u8>) {
    match r {
        Reply::Status(s) => out.extend(format!("+{s}\r\n").bytes()),
        Reply::Error(s) => out.extend(format!("-{s}\r\n").bytes()),
        Reply::Integer(i) => out.extend(format!(":{i}\r\n").bytes()),
        Reply::Bulk(b) | Reply::Verbatim(_, b) => {
            out.extend(format!("${}\r\n", b.len()).bytes());
            out.extend(b);
            out.extend(b"\r\n");
        }
        Reply::Null => out.extend(b"$-1\r\n"),
        Reply::NullArray => out.extend(b"*-1\r\n"),
        Reply::Array(v) | Reply::Set(v) | Reply::Push(v) => {
            out.extend(format!("*{}\r\n", v.len()).bytes());
            for x in v {
                resp2(x, out);
            }
        }
        Reply::Map(v) | Reply::Pairs(v) => {
            out.extend(format!("*{}\r\n", v.len() * 2).bytes());
            for (a, b) in v {
                resp2(a, out);
                resp2(b, out);
            }
        }
        Reply::Double(d) => resp2(&Reply::Bulk(crate::num::fmt_g17(*d).into_bytes()), out),
        Reply::Bool(b) => out.extend(format!(":{}\r\n", i32::from(*b)).bytes()),
    }
}

#[test]
#[ignore]
fn tempdiff() {
    let e = engine();
    let text = std::fs::read_to_string("/tmp/zcmds.txt").unwrap_or_default();
    let mut s = e.session();
    for line in text.lines() {
        let args: Vec<&str> = line.split(' ').collect();
        let r = if args[0].eq_ignore_ascii_case("sadd") {
            let mut set = crate::value::SetValue::new();
            let lim = crate::value::EncodingLimits::default();
            let mut ks = e.keyspace().lock_keys(&[args[1]], 0);
            if let Ok(Some(crate::value::Value::Set(old))) = ks.get(0, args[1].as_bytes()) {
                set = old.clone();
            }
            let mut n = 0;
            for m in &args[2..] {
                n += i64::from(set.insert(m.as_bytes(), &lim));
            }
            let _ = ks.set(0, args[1].as_bytes(), crate::value::Value::Set(set));
            Reply::Integer(n)
        } else {
            s.execute(&args)
        };
        let mut out = Vec::new();
        resp2(&r, &mut out);
        println!("OUT {} => {:?}", line, String::from_utf8_lossy(&out));
    }
}
// TEMPDIFF-END
