//! Protected mode: a server whose default user has no password answers only clients
//! on the loopback interface, so that one started carelessly on a public address is
//! not open to the world. Other clients get Redis's explanation and are closed.

use std::net::IpAddr;

/// The reply a refused client gets before its connection closes.
pub const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Whether a peer is on this machine's loopback interface (IPv4-mapped IPv6 included).
pub fn is_loopback(peer: IpAddr) -> bool {
    match peer {
        IpAddr::V4(a) => a.is_loopback(),
        IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

/// The decision itself: refuse a peer when protected mode is on, the default user
/// takes no password, and the peer is not a loopback address.
pub fn refuses(protected_mode: bool, default_nopass: bool, peer: IpAddr) -> bool {
    protected_mode && default_nopass && !is_loopback(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_without_a_password() {
        let lan: IpAddr = "192.168.1.7".parse().expect("ip");
        let v6: IpAddr = "2001:db8::1".parse().expect("ip");
        for local in ["127.0.0.1", "127.3.4.5", "::1", "::ffff:127.0.0.1"] {
            assert!(!refuses(true, true, local.parse().expect("ip")), "{local}");
        }
        assert!(refuses(true, true, lan));
        assert!(refuses(true, true, v6));
        assert!(!refuses(false, true, lan), "protected-mode no");
        assert!(!refuses(true, false, lan), "a password is set");
    }
}
