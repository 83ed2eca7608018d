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
