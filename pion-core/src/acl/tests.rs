//! Permission checks against the command table.

use super::*;
use crate::command::resolve;

fn user(ops: &[&str]) -> User {
    let mut r = UserRules::new();
    for op in ops {
        r.apply(op).expect("valid rule");
    }
    User::new("u", r)
}

fn run(u: &User, args: &[&str]) -> Result<(), Denial> {
    let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    let r = resolve(&argv).expect("known command");
    crate::command::access::check(u, r.spec, r.full_name, r.stat, &argv)
}

#[test]
fn commands_keys_and_first_args() {
    // The command table registers the catalogue rules are read against.
    crate::command::table();
    let u = user(&[
        "on",
        "~a*",
        "%R~r*",
        "+get",
        "+set",
        "+select|0",
        "+config|get",
    ]);
    assert_eq!(run(&u, &["GET", "a1"]), Ok(()));
    assert_eq!(run(&u, &["GET", "b"]), Err(Denial::Key(b"b".to_vec())));
    assert_eq!(run(&u, &["GET", "r1"]), Ok(()));
    assert_eq!(
        run(&u, &["SET", "r1", "x"]),
        Err(Denial::Key(b"r1".to_vec()))
    );
    assert_eq!(run(&u, &["DEL", "a"]), Err(Denial::Command("del".into())));
    assert_eq!(run(&u, &["SELECT", "0"]), Ok(()));
    assert_eq!(
        run(&u, &["SELECT", "1"]),
        Err(Denial::Command("select".into()))
    );
    assert_eq!(run(&u, &["CONFIG", "GET", "x"]), Ok(()));
    assert_eq!(
        run(&u, &["CONFIG", "SET", "x", "y"]),
        Err(Denial::Command("config|set".into()))
    );
    // AUTH and HELLO need no permission.
    assert_eq!(run(&u, &["AUTH", "x"]), Ok(()));
}

#[test]
fn write_only_patterns_and_selectors() {
    // The command table registers the catalogue rules are read against.
    crate::command::table();
    let u = user(&["on", "%W~w*", "+@all"]);
    assert_eq!(run(&u, &["SET", "w1", "x"]), Ok(()));
    assert_eq!(
        run(&u, &["SET", "w1", "x", "GET"]),
        Err(Denial::Key(b"w1".to_vec()))
    );
    assert_eq!(run(&u, &["GET", "w1"]), Err(Denial::Key(b"w1".to_vec())));
    let u = user(&["on", "+get", "~a", "(+set ~b)"]);
    assert_eq!(run(&u, &["SET", "b", "1"]), Ok(()));
    assert_eq!(run(&u, &["GET", "a"]), Ok(()));
    assert_eq!(run(&u, &["GET", "b"]), Err(Denial::Key(b"b".to_vec())));
}

#[test]
fn channels() {
    // The command table registers the catalogue rules are read against.
    crate::command::table();
    let u = user(&["on", "&news.*"]);
    assert_eq!(check_channel(&u, b"news.1", false), Ok(()));
    assert!(check_channel(&u, b"other", false).is_err());
    assert_eq!(check_channel(&u, b"news.*", true), Ok(()));
    assert!(check_channel(&u, b"news.1*", true).is_err());
    let all = User::new("all", UserRules::permissive());
    assert_eq!(check_channel(&all, b"x", true), Ok(()));
}

#[test]
fn setuser_is_all_or_nothing() {
    // The command table registers the catalogue rules are read against.
    crate::command::table();
    let acl = Acl::new();
    let ops = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    acl.set_user("x", &ops(&["on", "+get"])).expect("valid");
    let before = acl.list();
    let err = acl
        .set_user("x", &ops(&["+set", "bogus"]))
        .expect_err("invalid");
    assert_eq!(
        err.error().to_string(),
        "ERR Error in ACL SETUSER modifier 'bogus': Syntax error"
    );
    assert_eq!(acl.list(), before);
    assert!(acl.set_user("y z", &ops(&[])).is_err());
    assert!(acl.user("nobody").is_none());
    acl.set_default_password("pw");
    assert!(acl.auth_required());
    assert!(acl.authenticate(b"default", b"pw").is_some());
    acl.set_default_password("");
    assert!(!acl.auth_required());
}
