//! Command transcripts per command group: every expected reply was taken from
//! Redis 7.0.15 (the RESP2 bytes compared equal), rendered by [`super::show`].

use super::{engine, plain_set, transcript};

#[test]
fn zadd_and_zincrby() {
    transcript(
        &engine(),
        r#"
        ZADD z nx xx 1 a -> -ERR XX and NX options at the same time are not compatible
        ZADD z gt lt 1 a -> -ERR GT, LT, and/or NX options at the same time are not compatible
        ZADD z gt nx 1 a -> -ERR GT, LT, and/or NX options at the same time are not compatible
        ZADD z lt nx 1 a -> -ERR GT, LT, and/or NX options at the same time are not compatible
        ZADD z incr 1 a 2 b -> -ERR INCR option supports a single increment-element pair
        ZADD z 1 a 2 -> -ERR syntax error
        ZADD z abc a -> -ERR value is not a valid float
        ZADD z nan a -> -ERR value is not a valid float
        ZADD z 1e400 a -> -ERR value is not a valid float
        ZADD z 0x10 hx -> :1
        ZSCORE z hx -> ,16
        ZADD z incr 1 a -> ,1
        ZADD z incr nx 1 a -> nil
        ZADD z incr xx 5 b -> nil
        ZADD z ch 2 a 3 b -> :2
        ZADD z gt ch 1 a 5 b -> :1
        ZADD z lt 1 a -> :0
        ZADD z xx 1 c -> :0
        ZADD z incr +inf a -> ,inf
        ZADD z incr -inf a -> -ERR resulting score is not a number (NaN)
        ZADD z 1 a gt -> -ERR syntax error
        SET s v -> +OK
        ZADD s 1 a -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZADD s abc a -> -ERR value is not a valid float
        ZADD z incr gt 0.5 a -> nil
        ZADD z incr lt 0.5 a -> nil
        ZADD z gt incr -10 b -> nil
        ZADD z nx ch 1 -> -ERR syntax error
        ZADD z nx xx 1 -> -ERR syntax error
        ZADD z incr abc a x y -> -ERR INCR option supports a single increment-element pair
        ZADD z nx xx abc a -> -ERR XX and NX options at the same time are not compatible
        ZADD z gt lt xx 1 a -> -ERR GT, LT, and/or NX options at the same time are not compatible
        ZADD z incr incr 1 a -> ,inf
        ZADD z -> -ERR wrong number of arguments for 'zadd' command
        ZADD z 1 -> -ERR wrong number of arguments for 'zadd' command
        ZADD z2 -0 m -> :1
        ZSCORE z2 m -> ,0
        ZADD z3 1 a -> :1
        ZADD z3 ch 1 a -> :0
        ZADD z3 ch incr 0 a -> ,1
        ZADD z3 ch incr 1 a -> ,2
        ZADD z3 ch incr 1 n -> ,1
        ZADD z3 NX 5 a 6 new -> :1
        ZADD z3 XX CH 7 a 8 other -> :1
        ZADD z3 GT CH 1 a 9 n 10 third -> :2
        ZADD z3 LT CH 100 a 0 n -> :1
        ZRANGE z3 0 -1 WITHSCORES -> [("n" ,0) ("new" ,6) ("a" ,7) ("third" ,10)]
        ZADD nokey xx 1 a -> :0
        ZADD nokey xx incr 1 a -> nil
        GET nokey -> nil
        ZADD zr 0.1 a 0.2 b 1e20 c -1.5e-7 d 3.0 e -> :5
        ZRANGE zr 0 -1 WITHSCORES -> [("d" ,-1.4999999999999999e-07) ("a" ,0.10000000000000001) ("b" ,0.20000000000000001) ("e" ,3) ("c" ,1e+20)]
        ZADD zr 1 a 1 a 2 a -> :0
        ZSCORE zr a -> ,2
        ZINCRBY zr 0.2 a -> ,2.2000000000000002
        ZINCRBY zr abc a -> -ERR value is not a valid float
        ZINCRBY zr 1 -> -ERR wrong number of arguments for 'zincrby' command
        ZINCRBY s 1 y -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZINCRBY zr -0.1 new -> ,-0.10000000000000001
        ZINCRBY zi inf x -> ,inf
        ZINCRBY zi -inf x -> -ERR resulting score is not a number (NaN)
        ZINCRBY zi 1 y -> ,1
        ZINCRBY zi 1e400 y -> -ERR value is not a valid float
        "#,
    );
}

#[test]
fn card_score_rank_count_rem() {
    transcript(
        &engine(),
        r#"
        ZADD z 1 a 2 b 3 c 4 d 5 e -> :5
        SET s v -> +OK
        ZRANK z c -> :2
        ZRANK z c withscore -> -ERR wrong number of arguments for 'zrank' command
        ZREVRANK z c -> :2
        ZRANK nokey a -> nil
        ZRANK z nom -> nil
        ZREVRANK z nom -> nil
        ZRANK s a -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZREVRANK s a -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZRANK z -> -ERR wrong number of arguments for 'zrank' command
        ZCARD z -> :5
        ZCARD nokey -> :0
        ZCARD s -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZCARD z z -> -ERR wrong number of arguments for 'zcard' command
        ZSCORE z c -> ,3
        ZSCORE z nom -> nil
        ZSCORE nokey a -> nil
        ZSCORE s a -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZMSCORE z c nom a -> [,3 nil ,1]
        ZMSCORE nokey a b -> [nil nil]
        ZMSCORE s a -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZMSCORE z -> -ERR wrong number of arguments for 'zmscore' command
        ZCOUNT z a b -> -ERR min or max is not a float
        ZCOUNT z (1 +inf -> :4
        ZCOUNT z -inf +inf -> :5
        ZCOUNT z (1 (5 -> :3
        ZCOUNT z 0x2 5 -> :4
        ZCOUNT z ( 2 -> :2
        ZCOUNT nokey a b -> -ERR min or max is not a float
        ZCOUNT nokey 1 2 -> :0
        ZCOUNT s 1 2 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZCOUNT s a 2 -> -ERR min or max is not a float
        ZCOUNT z 3 1 -> :0
        ZCOUNT z 3 3 -> :1
        ZCOUNT z (3 3 -> :0
        ZCOUNT z 1 -> -ERR wrong number of arguments for 'zcount' command
        ZADD zl 0 a 0 b 0 c 0 d 0 e -> :5
        ZLEXCOUNT zl - + -> :5
        ZLEXCOUNT zl a b -> -ERR min or max not valid string range item
        ZLEXCOUNT zl [a (c -> :2
        ZLEXCOUNT zl (a [c -> :2
        ZLEXCOUNT zl + - -> :0
        ZLEXCOUNT zl [c [a -> :0
        ZLEXCOUNT zl +a + -> -ERR min or max not valid string range item
        ZLEXCOUNT nokey a b -> -ERR min or max not valid string range item
        ZLEXCOUNT nokey - + -> :0
        ZLEXCOUNT s - + -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZREM z a nom a -> :1
        ZREM z nom -> :0
        ZREM nokey a -> :0
        ZREM s a -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZREM z -> -ERR wrong number of arguments for 'zrem' command
        ZREM z b c d e -> :4
        ZCARD z -> :0
        GET z -> nil
        "#,
    );
}

#[test]
fn range_family() {
    transcript(
        &engine(),
        r#"
        ZADD z 1 a 2 b 3 c 4 d 5 e -> :5
        SET s v -> +OK
        ZRANGE z 0 -1 withscores -> [("a" ,1) ("b" ,2) ("c" ,3) ("d" ,4) ("e" ,5)]
        ZRANGE z 1 2 rev -> ["d" "c"]
        ZRANGE z 0 -1 limit 0 1 -> -ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX
        ZRANGE z (1 3 byscore -> ["b" "c"]
        ZRANGE z x 3 byscore -> -ERR min or max is not a float
        ZRANGE z [a x bylex -> -ERR min or max not valid string range item
        ZRANGE z 0 -1 byscore bylex -> -ERR syntax error
        ZRANGE z 0 -1 withscores withscores -> [("a" ,1) ("b" ,2) ("c" ,3) ("d" ,4) ("e" ,5)]
        ZRANGE z 5 (2 byscore rev limit 1 2 withscores -> [("d" ,4) ("c" ,3)]
        ZRANGE z a b -> -ERR value is not an integer or out of range
        ZRANGE z 0 -1 limit 1 -> -ERR syntax error
        ZRANGE z 0 -1 foo -> -ERR syntax error
        ZRANGE z 0 -> -ERR wrong number of arguments for 'zrange' command
        ZRANGEBYSCORE z -inf +inf limit 1 -1 -> ["b" "c" "d" "e"]
        ZRANGEBYSCORE z -inf +inf limit -1 2 -> []
        ZRANGE z + - bylex rev limit 0 2 -> ["e" "d"]
        ZRANGE z 0 -1 bylex -> -ERR min or max not valid string range item
        ZRANGEBYLEX z - + withscores -> -ERR syntax error, WITHSCORES not supported in combination with BYLEX
        ZREVRANGE z 0 0 withscores -> [("e" ,5)]
        ZREVRANGE z 0 0 limit 0 1 -> -ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX
        ZRANGEBYSCORE z 1 2 withscores limit -> -ERR syntax error
        ZRANGEBYSCORE z 1 2 limit 0 a -> -ERR value is not an integer or out of range
        ZREVRANGE z 0 0 byscore -> -ERR syntax error
        ZRANGEBYSCORE z 1 2 byscore -> -ERR syntax error
        ZRANGEBYSCORE z 1 2 rev -> -ERR syntax error
        ZRANGEBYLEX z - + bylex -> -ERR syntax error
        ZRANGE s 0 -1 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZRANGE s 0 -1 foo -> -ERR syntax error
        ZRANGE s a b -> -ERR value is not an integer or out of range
        ZRANGE nokey a b -> -ERR value is not an integer or out of range
        ZRANGE nokey 0 -1 withscores -> []
        ZRANGE z 2 1 byscore rev -> ["b" "a"]
        ZRANGE z ( 2 byscore -> ["a" "b"]
        ZRANGE z (2 (2 byscore -> []
        ZRANGE z 2 (2 byscore -> []
        ZRANGE z (2 (3 byscore -> []
        ZRANGE z inf -inf byscore rev -> ["e" "d" "c" "b" "a"]
        ZRANGE z +inf (-inf byscore rev -> ["e" "d" "c" "b" "a"]
        ZRANGE z [ [ bylex -> []
        ZRANGE z [b (c bylex -> ["b"]
        ZRANGE z (b [c bylex -> ["c"]
        ZRANGE z + - bylex -> []
        ZRANGE z - - bylex -> []
        ZRANGE z - [ bylex -> []
        ZRANGE z 0x2 5 byscore -> ["b" "c" "d" "e"]
        ZRANGE z 1e400 5 byscore -> []
        ZRANGE z -1e400 2 byscore -> ["a" "b"]
        ZRANGE z 2  5 byscore -> -ERR syntax error
        ZRANGE z (nan 5 byscore -> -ERR min or max is not a float
        ZRANGE z infinity 5 byscore -> []
        ZRANGE z +2 5 byscore -> ["b" "c" "d" "e"]
        ZRANGE z .5e1 5 byscore -> ["e"]
        ZRANGE z ((2 5 byscore -> -ERR min or max is not a float
        ZRANGE z 0 -1 REV REV -> -ERR syntax error
        ZRANGE z 0 -1 LIMIT 0 1 LIMIT 0 2 BYSCORE -> []
        ZRANGE z 0 -1 BYSCORE BYSCORE -> -ERR syntax error
        ZRANGE z 0 -1 BYLEX WITHSCORES LIMIT 0 1 -> -ERR syntax error, WITHSCORES not supported in combination with BYLEX
        ZRANGE z 0 1 WITHSCORES LIMIT 0 1 BYLEX -> -ERR syntax error, WITHSCORES not supported in combination with BYLEX
        ZRANGE z -100 100 -> ["a" "b" "c" "d" "e"]
        ZRANGE z -2 -1 WITHSCORES -> [("d" ,4) ("e" ,5)]
        ZRANGE z 3 2 -> []
        ZRANGE z 5 10 -> []
        ZRANGE z -1 -2 REV -> []
        ZRANGE z 0 1 REV WITHSCORES -> [("e" ,5) ("d" ,4)]
        ZRANGE z -2 -1 REV -> ["b" "a"]
        ZRANGE z 0 9223372036854775807 -> ["a" "b" "c" "d" "e"]
        ZRANGE z -9223372036854775808 0 -> ["a"]
        ZRANGE z 0 9223372036854775808 -> -ERR value is not an integer or out of range
        ZREVRANGE z 0 -1 -> ["e" "d" "c" "b" "a"]
        ZREVRANGE z 1 -2 WITHSCORES -> [("d" ,4) ("c" ,3) ("b" ,2)]
        ZREVRANGEBYSCORE z 4 2 -> ["d" "c" "b"]
        ZREVRANGEBYSCORE z (4 2 WITHSCORES LIMIT 1 5 -> [("b" ,2)]
        ZREVRANGEBYSCORE z 2 4 -> []
        ZREVRANGEBYSCORE s 2 4 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZRANGEBYSCORE z 2 4 LIMIT 1 1 -> ["c"]
        ZRANGEBYSCORE z 2 4 LIMIT 5 1 -> []
        ZRANGEBYSCORE z 2 4 LIMIT 0 0 -> []
        ZRANGEBYSCORE z 2 4 LIMIT 0 -5 WITHSCORES -> [("b" ,2) ("c" ,3) ("d" ,4)]
        ZRANGEBYSCORE z -inf +inf LIMIT 2 9223372036854775807 -> ["c" "d" "e"]
        ZREVRANGEBYLEX z + - LIMIT 1 2 -> ["d" "c"]
        ZREVRANGEBYLEX z [c (a -> ["c" "b"]
        ZRANGEBYLEX z (a [c -> ["b" "c"]
        ZRANGEBYLEX z [c [a -> []
        ZRANGEBYLEX z a c -> -ERR min or max not valid string range item
        ZRANGEBYLEX nokey a c -> -ERR min or max not valid string range item
        ZRANGEBYLEX nokey [a [c -> []
        "#,
    );
}

#[test]
fn rangestore_and_range_removals() {
    transcript(
        &engine(),
        r#"
        ZADD z 1 a 2 b 3 c 4 d 5 e -> :5
        SET s v -> +OK
        ZRANGESTORE d z 0 -1 -> :5
        ZRANGESTORE d z 0 -1 withscores -> -ERR syntax error
        ZRANGESTORE d nokey 0 -1 -> :0
        GET d -> nil
        ZRANGESTORE d s 0 -1 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZRANGESTORE s2 z 0 1 -> :2
        ZRANGESTORE d z 3 1 byscore rev limit 0 1 -> :1
        ZRANGE d 0 -1 withscores -> [("c" ,3)]
        ZRANGESTORE d z [b [d bylex -> :3
        ZRANGE d 0 -1 withscores -> [("b" ,2) ("c" ,3) ("d" ,4)]
        ZRANGESTORE d z 0 -1 LIMIT 0 1 -> -ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX
        ZRANGESTORE s z 0 0 -> :1
        ZRANGE s 0 -1 WITHSCORES -> [("a" ,1)]
        ZRANGESTORE s z 9 10 -> :0
        GET s -> nil
        ZRANGESTORE d z -> -ERR wrong number of arguments for 'zrangestore' command
        ZADD zl 0 a 0 b 0 c 0 d 0 e 0 f -> :6
        ZREMRANGEBYLEX zl [b (d -> :2
        ZRANGE zl 0 -1 -> ["a" "d" "e" "f"]
        ZREMRANGEBYLEX zl + - -> :0
        ZREMRANGEBYLEX zl a b -> -ERR min or max not valid string range item
        ZREMRANGEBYSCORE zl (0 1 -> :0
        ZREMRANGEBYSCORE zl -inf (0 -> :0
        ZREMRANGEBYSCORE zl x 1 -> -ERR min or max is not a float
        ZREMRANGEBYSCORE zl 0 0 -> :4
        GET zl -> nil
        ZADD zk 1 a 2 b 3 c 4 d 5 e -> :5
        ZREMRANGEBYRANK zk -2 -1 -> :2
        ZREMRANGEBYRANK zk 5 10 -> :0
        ZREMRANGEBYRANK zk 1 0 -> :0
        ZREMRANGEBYRANK zk a 0 -> -ERR value is not an integer or out of range
        ZRANGE zk 0 -1 -> ["a" "b" "c"]
        ZREMRANGEBYRANK zk -100 100 -> :3
        GET zk -> nil
        SET str x -> +OK
        ZREMRANGEBYRANK nokey 0 1 -> :0
        ZREMRANGEBYSCORE nokey a 1 -> -ERR min or max is not a float
        ZREMRANGEBYLEX nokey a 1 -> -ERR min or max not valid string range item
        ZREMRANGEBYLEX str a 1 -> -ERR min or max not valid string range item
        ZREMRANGEBYLEX str - + -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZREMRANGEBYRANK str a 1 -> -ERR value is not an integer or out of range
        ZREMRANGEBYRANK str 0 1 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZREMRANGEBYSCORE str 0 1 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZREMRANGEBYRANK str 0 -> -ERR wrong number of arguments for 'zremrangebyrank' command
        "#,
    );
}

#[test]
fn pops() {
    transcript(
        &engine(),
        r#"
        ZADD z 1 a 2 b 3 c 4 d 5 e -> :5
        SET s v -> +OK
        ZPOPMIN z 0 -> []
        ZPOPMIN z -1 -> -ERR value is out of range, must be positive
        ZPOPMIN nokey -> []
        ZPOPMIN nokey 2 -> []
        ZPOPMAX z 2 -> [("e" ,5) ("d" ,4)]
        ZPOPMIN z a -> -ERR value is out of range, must be positive
        ZPOPMAX z -5 -> -ERR value is out of range, must be positive
        ZPOPMIN z 1 2 -> -ERR syntax error
        ZPOPMIN s -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZPOPMAX s 1 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZPOPMIN z -> ["a" ,1]
        ZPOPMIN z 10 -> [("b" ,2) ("c" ,3)]
        GET z -> nil
        ZADD z 1 a 2 b 3 c 4 d 5 e -> :5
        ZMPOP 1 z -> -ERR wrong number of arguments for 'zmpop' command
        ZMPOP 1 z foo -> -ERR syntax error
        ZMPOP 1 z min count 0 -> -ERR count should be greater than 0
        ZMPOP 1 z min count -1 -> -ERR count should be greater than 0
        ZMPOP 1 z min count a -> -ERR count should be greater than 0
        ZMPOP 1 z min count -> -ERR syntax error
        ZMPOP 1 z min count 1 count 2 -> -ERR syntax error
        ZMPOP 1 z min foo -> -ERR syntax error
        ZMPOP 2 nokey z max count 2 -> ["z" [["e" ,5] ["d" ,4]]]
        ZMPOP 1 nokey min -> nil*
        ZMPOP a z min -> -ERR numkeys should be greater than 0
        ZMPOP -1 z min -> -ERR numkeys should be greater than 0
        ZMPOP 0 z min -> -ERR numkeys should be greater than 0
        ZMPOP 5 z min -> -ERR syntax error
        ZMPOP 2 z min -> -ERR syntax error
        ZMPOP 2 s z min -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZMPOP 2 z s min -> ["z" [["a" ,1]]]
        ZMPOP 1 z MIN -> ["z" [["b" ,2]]]
        ZMPOP 1 z max COUNT 100 -> ["z" [["c" ,3]]]
        GET z -> nil
        "#,
    );
}

#[test]
fn union_inter_diff() {
    let e = engine();
    plain_set(&e, "set", &["a", "b", "c"]);
    transcript(
        &e,
        r#"
        ZADD z1 1 a 2 b inf c -> :3
        ZADD z2 2 a -inf c 5 d -> :3
        ZADD z3 1 x 2 y 3 b -> :3
        SET s v -> +OK
        ZUNION 1 s WEIGHTS x -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZUNION 2 z1 s foo -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZINTERCARD 1 s LIMIT -1 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZINTERCARD 2 z1 s -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZUNION 2 z1 z2 WITHSCORES -> [("c" ,0) ("b" ,2) ("a" ,3) ("d" ,5)]
        ZUNION 2 z1 set WITHSCORES -> [("a" ,2) ("b" ,3) ("c" ,inf)]
        ZUNION 3 z1 z2 z3 -> ["c" "x" "y" "a" "b" "d"]
        ZINTER 2 z1 z2 WITHSCORES -> [("c" ,0) ("a" ,3)]
        ZINTER 2 z1 z2 WITHSCORES AGGREGATE MAX -> [("a" ,2) ("c" ,inf)]
        ZINTER 2 z1 z2 WITHSCORES AGGREGATE min WEIGHTS 2 0 -> [("a" ,0) ("c" ,inf)]
        ZINTER 2 z1 z2 WITHSCORES AGGREGATE max WEIGHTS 0 1 -> [("c" ,0) ("a" ,2)]
        ZUNION 2 z1 z2 WITHSCORES WEIGHTS -1 1 -> [("c" ,-inf) ("b" ,-2) ("a" ,1) ("d" ,5)]
        ZUNION 2 z1 z2 WEIGHTS 0 0 WITHSCORES -> [("a" ,0) ("b" ,0) ("c" ,0) ("d" ,0)]
        ZUNION 2 z1 z2 WEIGHTS 0 0 WITHSCORES AGGREGATE MIN -> [("a" ,0) ("b" ,0) ("c" ,0) ("d" ,0)]
        ZDIFF 2 z1 z2 WITHSCORES -> [("b" ,2)]
        ZDIFF 3 z1 z2 z3 WITHSCORES -> []
        ZDIFF 2 z1 set WITHSCORES -> []
        ZDIFF 2 set z1 -> []
        ZDIFF 2 nokey z1 -> []
        ZDIFF 2 z1 nokey -> ["a" "b" "c"]
        ZINTERCARD 2 z1 z2 -> :2
        ZINTERCARD 2 z1 z2 LIMIT 1 -> :1
        ZINTERCARD 2 z1 z2 LIMIT 0 -> :2
        ZINTERCARD 3 z1 z2 set -> :2
        ZINTERCARD 2 z1 nokey -> :0
        ZUNIONSTORE d 2 z1 z2 -> :4
        ZRANGE d 0 -1 WITHSCORES -> [("c" ,0) ("b" ,2) ("a" ,3) ("d" ,5)]
        ZUNIONSTORE d 2 z1 s -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZUNIONSTORE s3 1 z1 -> :3
        ZINTERSTORE d 2 z1 nokey -> :0
        GET d -> nil
        ZUNION 1 z1 WEIGHTS inf WITHSCORES -> [("a" ,inf) ("b" ,inf) ("c" ,inf)]
        ZUNION 1 z1 WEIGHTS nan -> -ERR weight value is not a float
        ZUNION 1 z1 WEIGHTS 0x2 WITHSCORES -> [("a" ,2) ("b" ,4) ("c" ,inf)]
        ZUNION 2 z1 z1 WEIGHTS inf -inf WITHSCORES -> [("a" ,0) ("b" ,0) ("c" ,0)]
        ZINTER 1 set WITHSCORES -> [("a" ,1) ("b" ,1) ("c" ,1)]
        ZINTER 2 set set WITHSCORES -> [("a" ,2) ("b" ,2) ("c" ,2)]
        ZDIFF 1 set -> ["a" "b" "c"]
        ZINTERCARD 1 nokey -> :0
        ZINTERCARD 0 nokey -> -ERR at least 1 input key is needed for 'zintercard' command
        ZINTERCARD 1 nokey LIMIT -1 -> -ERR LIMIT can't be negative
        ZINTERCARD 1 nokey LIMIT a -> -ERR LIMIT can't be negative
        ZINTERCARD 1 nokey foo -> -ERR syntax error
        ZINTERCARD 2 nokey -> -ERR syntax error
        ZINTERCARD a nokey -> -ERR value is not an integer or out of range
        ZINTERCARD -1 nokey -> -ERR at least 1 input key is needed for 'zintercard' command
        ZUNION 0 a -> -ERR at least 1 input key is needed for 'zunion' command
        ZUNION a a -> -ERR value is not an integer or out of range
        ZUNION -1 a -> -ERR at least 1 input key is needed for 'zunion' command
        ZUNION 2 a -> -ERR syntax error
        ZUNION 9223372036854775807 a -> -ERR syntax error
        ZUNION 1 a WEIGHTS -> -ERR syntax error
        ZUNION 1 a WEIGHTS x -> -ERR weight value is not a float
        ZUNION 1 a WEIGHTS 1 2 -> -ERR syntax error
        ZUNION 1 a AGGREGATE foo -> -ERR syntax error
        ZUNION 1 a AGGREGATE -> -ERR syntax error
        ZUNION 1 a foo -> -ERR syntax error
        ZUNIONSTORE d 0 a -> -ERR at least 1 input key is needed for 'zunionstore' command
        ZUNIONSTORE d a a -> -ERR value is not an integer or out of range
        ZUNIONSTORE d 2 a -> -ERR syntax error
        ZUNIONSTORE d 1 a WITHSCORES -> -ERR syntax error
        ZDIFF 1 a WEIGHTS 1 -> -ERR syntax error
        ZDIFF 1 a AGGREGATE SUM -> -ERR syntax error
        ZDIFFSTORE d 0 a -> -ERR at least 1 input key is needed for 'zdiffstore' command
        ZDIFF 0 a -> -ERR at least 1 input key is needed for 'zdiff' command
        ZINTER 0 a -> -ERR at least 1 input key is needed for 'zinter' command
        ZINTERSTORE d 0 a -> -ERR at least 1 input key is needed for 'zinterstore' command
        ZUNIONSTORE d 1 -> -ERR wrong number of arguments for 'zunionstore' command
        ZDIFFSTORE d 2 z1 z2 -> :1
        ZRANGE d 0 -1 WITHSCORES -> [("b" ,2)]
        ZINTERSTORE d 2 z1 z2 AGGREGATE MIN -> :2
        ZRANGE d 0 -1 WITHSCORES -> [("c" ,-inf) ("a" ,1)]
        ZINTERSTORE z1 2 z1 z3 -> :1
        ZRANGE z1 0 -1 WITHSCORES -> [("b" ,5)]
        ZUNION 3 z1 z2 nokey AGGREGATE MAX WITHSCORES AGGREGATE SUM -> [("c" ,-inf) ("a" ,2) ("b" ,5) ("d" ,5)]
        ZUNIONSTORE s 1 set -> :3
        ZRANGE s 0 -1 WITHSCORES -> [("a" ,1) ("b" ,1) ("c" ,1)]
        "#,
    );
}

#[test]
fn randmember_and_scan() {
    transcript(
        &engine(),
        r#"
        ZADD z1 1 a 2 b inf c -> :3
        SET s v -> +OK
        ZRANDMEMBER z1 a -> -ERR value is not an integer or out of range
        ZRANDMEMBER z1 0 -> []
        ZRANDMEMBER z1 0 WITHSCORES -> []
        ZRANDMEMBER z1 1 foo -> -ERR syntax error
        ZRANDMEMBER z1 1 WITHSCORES x -> -ERR syntax error
        ZRANDMEMBER z1 -9223372036854775808 -> -ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807
        ZRANDMEMBER z1 -9223372036854775807 WITHSCORES -> -ERR value is out of range
        ZRANDMEMBER z1 -4611686018427387904 WITHSCORES -> -ERR value is out of range
        ZRANDMEMBER z1 10 WITHSCORES -> [("c" ,inf) ("b" ,2) ("a" ,1)]
        ZRANDMEMBER z1 3 -> ["c" "b" "a"]
        ZRANDMEMBER s 1 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZRANDMEMBER s -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZRANDMEMBER nokey a -> -ERR value is not an integer or out of range
        ZRANDMEMBER nokey -> nil
        ZRANDMEMBER nokey 3 -> []
        ZRANDMEMBER nokey -3 WITHSCORES -> []
        ZSCAN z1 abc -> -ERR invalid cursor
        ZSCAN z1 -1 -> ["0" ["a" "1" "b" "2" "c" "inf"]]
        ZSCAN z1 0 COUNT 0 -> -ERR syntax error
        ZSCAN z1 0 COUNT a -> -ERR value is not an integer or out of range
        ZSCAN z1 0 MATCH -> -ERR syntax error
        ZSCAN z1 0 foo bar -> -ERR syntax error
        ZSCAN z1 0 MATCH a* -> ["0" ["a" "1"]]
        ZSCAN z1 0 MATCH * COUNT 1 -> ["0" ["a" "1" "b" "2" "c" "inf"]]
        ZSCAN s 0 -> -WRONGTYPE Operation against a key holding the wrong kind of value
        ZSCAN nokey 0 -> ["0" []]
        ZSCAN nokey 0 COUNT 0 -> ["0" []]
        ZSCAN z1 18446744073709551615 -> ["0" ["a" "1" "b" "2" "c" "inf"]]
        ZSCAN z1 18446744073709551616 -> -ERR invalid cursor
        ZSCAN nokey abc -> -ERR invalid cursor
        ZSCAN s abc -> -ERR invalid cursor
        ZSCAN z1 +0 COUNT 1 -> ["0" ["a" "1" "b" "2" "c" "inf"]]
        ZSCAN z1 -> -ERR wrong number of arguments for 'zscan' command
        ZADD sc 9007199254740994 a 1e18 b 9.2e18 c 9.3e18 d -9.3e18 e 1e15 f -0 g 4503599627370496 h 4503599627370497.0 i -4.6e18 j 4.61e18 k 0.5 l -> :12
        ZSCAN sc 0 -> ["0" ["e" "-9.3e+18" "j" "-4600000000000000000" "g" "0" "l" "0.5" "f" "1000000000000000" "h" "4503599627370496" "i" "4503599627370497" "a" "9007199254740994" "b" "1000000000000000000" "k" "4610000000000000000" "c" "9.2e+18" "d" "9.3e+18"]]
        "#,
    );
}

#[test]
fn edge_cases() {
    transcript(
        &engine(),
        r#"
        ZADD a 1 x 2 y 3 z -> :3
        ZADD b 1 x 2 y 3 w -> :3
        ZADD c 0.1 x 0.2 y 0.3 z -> :3
        ZUNION 3 a b c WITHSCORES -> [("x" ,2.1000000000000001) ("w" ,3) ("z" ,3.2999999999999998) ("y" ,4.2000000000000002)]
        ZINTER 3 a b c WITHSCORES -> [("x" ,2.1000000000000001) ("y" ,4.2000000000000002)]
        ZINTER 3 c b a WITHSCORES -> [("x" ,2.1000000000000001) ("y" ,4.2000000000000002)]
        ZUNION 3 c b a WITHSCORES WEIGHTS 0.1 0.2 0.3 -> [("x" ,0.51000000000000001) ("w" ,0.60000000000000009) ("z" ,0.92999999999999994) ("y" ,1.02)]
        ZINTER 2 a a WITHSCORES AGGREGATE MAX -> [("x" ,1) ("y" ,2) ("z" ,3)]
        ZUNIONSTORE a 2 a b -> :4
        ZRANGE a 0 -1 WITHSCORES -> [("x" ,2) ("w" ,3) ("z" ,3) ("y" ,4)]
        ZADD g GT CH 5 new -> :1
        ZADD g LT CH 6 new -> :0
        ZADD g GT 4 new -> :0
        ZADD g GT INCR -1 new -> nil
        ZADD g LT INCR -1 new -> ,4
        ZADD g XX GT CH INCR 1 new -> ,5
        ZRANGE g 0 -1 WITHSCORES -> [("new" ,5)]
        ZADD dup 1 a 2 a 3 a -> :1
        ZRANGE dup 0 -1 WITHSCORES -> [("a" ,3)]
        ZADD dup CH 1 a 1 a -> :1
        ZADD dup CH 5 a 1 a -> :2
        ZADD dup NX CH 9 a 1 b -> :1
        ZRANGE dup 0 -1 WITHSCORES -> [("a" ,1) ("b" ,1)]
        ZRANGE dup 0 -1 BYSCORE LIMIT 9223372036854775807 1 -> []
        ZRANGE dup -inf +inf BYSCORE LIMIT 0 9223372036854775807 WITHSCORES -> [("a" ,1) ("b" ,1)]
        ZRANGE dup (1 (1 BYSCORE -> []
        ZRANGE dup [b [a BYLEX -> []
        ZRANGE dup [a [b BYLEX REV -> []
        ZRANGE dup [b [a BYLEX REV -> ["b" "a"]
        ZRANGESTORE dup dup 1 1 -> :1
        ZRANGE dup 0 -1 WITHSCORES -> [("b" ,1)]
        ZADD e 1.0000000000000002 a 0.1 b 1e-300 c 5e-324 d -> :4
        ZRANGE e 0 -1 WITHSCORES -> [("d" ,4.9406564584124654e-324) ("c" ,1e-300) ("b" ,0.10000000000000001) ("a" ,1.0000000000000002)]
        ZSCAN e 0 -> ["0" ["d" "4.9406564584124654e-324" "c" "1e-300" "b" "0.10000000000000001" "a" "1.0000000000000002"]]
        ZINCRBY e 1e-300 c -> ,2.0000000000000001e-300
        ZADD ee 0x1p-1074 a -> :1
        ZADD ee 0x1p-1080 a -> -ERR value is not a valid float
        ZADD ee 0X1P4 b -> :1
        ZADD ee 1e-320 c -> :1
        ZRANGE ee 0 -1 WITHSCORES -> [("a" ,4.9406564584124654e-324) ("c" ,9.9998886718268301e-321) ("b" ,16)]
        ZPOPMAX e -> ["a" ,1.0000000000000002]
        ZPOPMIN e 0 -> []
        ZPOPMIN e 100 -> [("d" ,4.9406564584124654e-324) ("c" ,2.0000000000000001e-300) ("b" ,0.10000000000000001)]
        ZMPOP 3 none1 none2 e MAX COUNT 1 -> nil*
        ZINTERCARD 2 a b LIMIT 9223372036854775807 -> :3
        ZINTERCARD 2 a b LIMIT 1 LIMIT 2 -> :2
        ZINTERCARD 2 a b LIMIT -> -ERR syntax error
        ZUNION 2 a b WEIGHTS 1 -> -ERR syntax error
        ZUNION 2 a b WEIGHTS 1 2 3 -> -ERR syntax error
        ZUNION 2 a b WEIGHTS 1 2 WEIGHTS 3 4 WITHSCORES -> [("z" ,9) ("x" ,10) ("y" ,20) ("w" ,21)]
        ZDIFFSTORE a 1 nokey -> :0
        ZRANGE a 0 -1 -> []
        ZDIFF 2 b b -> []
        ZADD lx 0 a 0 b 0 c -> :3
        ZRANGEBYLEX lx [b + LIMIT 0 1 -> ["b"]
        ZREVRANGEBYLEX lx + [b LIMIT 0 1 -> ["c"]
        ZREVRANGEBYLEX lx + [b LIMIT 1 -1 -> ["b"]
        ZRANGEBYLEX lx (a (c LIMIT 0 1 LIMIT 1 1 -> []
        ZREMRANGEBYLEX lx (a + -> :2
        ZRANGE lx 0 -1 -> ["a"]
        ZRANDMEMBER lx 1 WITHSCORES -> [("a" ,0)]
        ZRANDMEMBER lx -1 -> ["a"]
        ZRANDMEMBER lx 2 WITHSCORES -> [("a" ,0)]
        "#,
    );
}
