use super::*;

fn fields(v: &str) -> Fields {
    vec![b"f".to_vec(), v.as_bytes().to_vec()].into_boxed_slice()
}

fn filled(n: u64, limits: NodeLimits) -> StreamValue {
    let mut s = StreamValue::new();
    for i in 1..=n {
        s.append(StreamId::new(i, 0), fields("v"), limits);
    }
    s
}

#[test]
fn nodes_fill_to_the_entry_limit() {
    let s = filled(250, NodeLimits::default());
    assert_eq!(s.len(), 250);
    assert_eq!(s.node_count(), 3);
    let ids: Vec<u64> = s
        .range(StreamId::new(99, 0), StreamId::new(102, 0), false)
        .map(|(id, _)| id.ms)
        .collect();
    assert_eq!(ids, vec![99, 100, 101, 102]);
    let rev: Vec<u64> = s
        .range(StreamId::new(99, 0), StreamId::new(102, 0), true)
        .map(|(id, _)| id.ms)
        .collect();
    assert_eq!(rev, vec![102, 101, 100, 99]);
    assert!(s.get(StreamId::new(150, 0)).is_some());
    assert!(s.get(StreamId::new(150, 1)).is_none());
}

#[test]
fn approximate_trims_drop_whole_nodes() {
    let mut s = filled(1000, NodeLimits::default());
    let trim = Trim {
        strategy: TrimStrategy::MaxLen(555),
        approx: true,
        limit: 10_000,
    };
    assert_eq!(s.trim(trim), 400);
    assert_eq!(s.len(), 600);
    assert_eq!(s.first_id, StreamId::new(401, 0));
    let exact = Trim {
        strategy: TrimStrategy::MaxLen(555),
        approx: false,
        limit: 0,
    };
    assert_eq!(s.trim(exact), 45);
    assert_eq!(s.len(), 555);
}

#[test]
fn deletes_keep_tombstone_bookkeeping() {
    let mut s = filled(3, NodeLimits::default());
    assert!(s.delete(StreamId::new(1, 0)));
    assert!(!s.delete(StreamId::new(1, 0)));
    assert_eq!(s.first_id, StreamId::new(2, 0));
    assert_eq!(s.max_deleted, StreamId::new(1, 0));
    assert!(!s.range_has_tombstones(StreamId::MIN, None));
    assert!(s.delete(StreamId::new(3, 0)));
    assert!(s.range_has_tombstones(StreamId::MIN, None));
    assert_eq!(s.estimate_distance(StreamId::new(3, 0)), 3);
}

#[test]
fn a_groups_size_counts_every_pending_entry_without_walking_them() {
    use super::group::ConsumerGroup;
    let mut g = ConsumerGroup::new(StreamId::MIN, 0);
    g.create_consumer(b"alice", 1);
    g.create_consumer(b"bob-the-consumer", 1);
    for seq in 1..=300u64 {
        let id = StreamId { ms: 1, seq };
        let who: &[u8] = if seq % 3 == 0 {
            b"alice"
        } else {
            b"bob-the-consumer"
        };
        g.deliver(id, who, 5);
    }
    // Some move to another consumer, some are acknowledged.
    for seq in (1..=300u64).step_by(7) {
        g.reassign(StreamId { ms: 1, seq }, b"alice");
    }
    for seq in (2..=300u64).step_by(11) {
        g.ack(StreamId { ms: 1, seq });
    }
    // What walking the pending list entry by entry gives.
    let walked: usize = g.pel.values().map(|p| p.consumer.len() + 48).sum::<usize>()
        + g.consumers
            .iter()
            .map(|(n, c)| n.len() + 48 + c.pel.len() * 24)
            .sum::<usize>();
    assert_eq!(g.mem_usage(), walked);
}
