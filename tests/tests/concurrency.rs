//! One coherent keyspace at any thread count: a write acknowledged on one connection is
//! visible to the next read on any other connection, whichever worker serves it.

use pion_tests::{Client, PionServer, RespValue};

#[test]
fn read_your_writes_across_connections_four_threads() {
    let pion = PionServer::start(4);
    let mut clients: Vec<Client> = (0..8)
        .map(|_| Client::connect(pion.port).expect("connect"))
        .collect();
    for i in 0..2000usize {
        let writer = i % clients.len();
        let reader = (i * 7 + 3) % clients.len();
        let key = format!("key:{}", i % 37);
        let value = format!("v{i}");
        assert_eq!(
            clients[writer].cmd(&["SET", &key, &value]),
            RespValue::Line(b'+', b"OK".to_vec())
        );
        let got = clients[reader].cmd(&["GET", &key]);
        assert_eq!(
            got,
            RespValue::Bulk(b'$', Some(value.into_bytes())),
            "iteration {i}"
        );
    }
}

#[test]
fn concurrent_incr_is_atomic_across_threads() {
    let pion = PionServer::start(4);
    let port = pion.port;
    let workers: Vec<_> = (0..6)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Client::connect(port).expect("connect");
                for _ in 0..500 {
                    c.cmd(&["INCR", "counter"]);
                    c.cmd(&["HINCRBY", "h", "f", "2"]);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let mut c = Client::connect(port).expect("connect");
    assert_eq!(
        c.cmd(&["GET", "counter"]),
        RespValue::Bulk(b'$', Some(b"3000".to_vec()))
    );
    assert_eq!(
        c.cmd(&["HGET", "h", "f"]),
        RespValue::Bulk(b'$', Some(b"6000".to_vec()))
    );
    assert_eq!(c.cmd(&["DBSIZE"]), RespValue::Line(b':', b"2".to_vec()));
}

/// A pipelined batch passes the execution gate once, yet keeps Redis's order within
/// it: a push serves the clients blocked on the key (on other workers) before the
/// batch's next command runs, and a transaction inside the batch still runs alone,
/// while other clients pipeline and run transactions on every worker.
#[test]
fn pipelined_batches_serve_waiters_and_transactions_in_order() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let pion = PionServer::start(4);
    let port = pion.port;
    let stop = Arc::new(AtomicBool::new(false));
    // Background load: pipelines ending in a transaction, on the other workers.
    let load: Vec<_> = (0..3)
        .map(|t| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut c = Client::connect(port).expect("connect");
                let mut bytes = Vec::new();
                for i in 0..16 {
                    bytes.extend(Client::encode(&["INCR", &format!("load:{t}:{i}")]));
                }
                let tx: [&[&str]; 4] = [&["MULTI"], &["INCR", "tx"], &["INCR", "tx"], &["EXEC"]];
                for cmd in tx {
                    bytes.extend(Client::encode(cmd));
                }
                while !stop.load(Ordering::Relaxed) {
                    c.send_raw(&bytes).expect("send");
                    for _ in 0..20 {
                        c.read_reply().expect("reply");
                    }
                }
            })
        })
        .collect();
    let integer = |n: &str| RespValue::Line(b':', n.as_bytes().to_vec());
    for round in 0..50 {
        let list = format!("queue:{round}");
        let mut waiter = Client::connect(port).expect("connect");
        waiter
            .send_raw(&Client::encode(&["BLPOP", &list, "5"]))
            .expect("send");
        let mut pusher = Client::connect(port).expect("connect");
        // The waiter is blocked once CLIENT LIST flags it so (`b`).
        while !pusher
            .cmd(&["CLIENT", "LIST"])
            .render()
            .contains("flags=b ")
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut bytes = Client::encode(&["RPUSH", &list, "a"]);
        bytes.extend(Client::encode(&["LLEN", &list]));
        pusher.send_raw(&bytes).expect("send");
        assert_eq!(pusher.read_reply().expect("reply").0, integer("1"));
        assert_eq!(
            pusher.read_reply().expect("reply").0,
            integer("0"),
            "round {round}: the waiter takes the element before LLEN runs"
        );
        let popped = waiter.read_reply().expect("reply").0.render();
        assert!(popped.contains("\"a\""), "round {round}: {popped}");
    }
    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.join().expect("load");
    }
    let mut c = Client::connect(port).expect("connect");
    let RespValue::Bulk(_, Some(n)) = c.cmd(&["GET", "tx"]) else {
        panic!("the transactions ran");
    };
    let n: u64 = String::from_utf8_lossy(&n).parse().expect("integer");
    assert!(
        n > 0 && n.is_multiple_of(2),
        "each transaction adds two: {n}"
    );
}
