//! `client-output-buffer-limit` for Pub/Sub: a subscriber that never reads while a
//! publisher floods it is disconnected once its pending output passes the hard limit,
//! and every other client goes on unaffected.

use std::time::{Duration, Instant};

use pion_tests::{Client, PionServer, RespValue};

fn client_list(c: &mut Client) -> String {
    match c.cmd(&["CLIENT", "LIST"]) {
        RespValue::Bulk(_, Some(text)) => String::from_utf8_lossy(&text).into_owned(),
        other => panic!("CLIENT LIST replied {}", other.render()),
    }
}

#[test]
fn a_subscriber_that_never_reads_is_disconnected_at_the_hard_limit() {
    let pion = PionServer::start(4);
    let mut admin = Client::connect(pion.port).expect("connect");
    let set = admin.cmd(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "pubsub 1mb 512kb 60",
    ]);
    assert_eq!(set.render(), "+OK");
    let mut slow = Client::connect(pion.port).expect("connect");
    slow.cmd(&["CLIENT", "SETNAME", "slow-subscriber"]);
    slow.cmd(&["SUBSCRIBE", "flood"]);
    assert!(client_list(&mut admin).contains("name=slow-subscriber"));

    // A bystander on another thread, subscribed to a quiet channel.
    let mut bystander = Client::connect(pion.port).expect("connect");
    bystander.cmd(&["SUBSCRIBE", "quiet"]);

    let payload = "x".repeat(16 * 1024);
    let mut publisher = Client::connect(pion.port).expect("connect");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut gone = false;
    while Instant::now() < deadline {
        for _ in 0..64 {
            publisher.cmd(&["PUBLISH", "flood", payload.as_str()]);
        }
        if !client_list(&mut admin).contains("name=slow-subscriber") {
            gone = true;
            break;
        }
    }
    assert!(
        gone,
        "the subscriber past its hard limit was never disconnected"
    );
    // Its subscription goes with it: its connection's thread closes it (unsubscribing)
    // on its next pass, which a loaded machine may delay a little.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut numsub = publisher.cmd(&["PUBSUB", "NUMSUB", "flood"]).render();
    while numsub != "*[\"flood\", :0]" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        numsub = publisher.cmd(&["PUBSUB", "NUMSUB", "flood"]).render();
    }
    assert_eq!(numsub, "*[\"flood\", :0]");
    // Everyone else is unaffected.
    assert_eq!(
        publisher.cmd(&["PUBLISH", "quiet", "still here"]).render(),
        ":1"
    );
    let (msg, _) = bystander.read_reply().expect("bystander message");
    assert!(msg.render().contains("still here"), "{}", msg.render());
    assert_eq!(admin.cmd(&["PING"]).render(), "+PONG");
}
