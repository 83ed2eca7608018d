//! Enforcing `client-output-buffer-limit` (the setting's value lives in
//! [`config::output_limits`](crate::config::output_limits)): a client whose undelivered
//! output passes its class's limits is closed.

use std::sync::atomic::Ordering;

use crate::clients::ClientShared;
pub use crate::config::output_limits::{ClassLimit, OutputLimits};

/// Closes `c` if its pending output passed its class's limits, as Redis does when it
/// adds output to a client.
pub fn enforce(limits: &OutputLimits, c: &ClientShared) {
    let m = &c.pubsub;
    let limit = if m.subscribed() {
        limits.pubsub
    } else {
        limits.normal
    };
    if limit.hard == 0 && limit.soft == 0 {
        return;
    }
    let used = (m.bytes.load(Ordering::Relaxed) + c.buffers.output.load(Ordering::Relaxed)) as u64;
    let hard = limit.hard > 0 && used >= limit.hard;
    let mut soft = false;
    if limit.soft > 0 && used >= limit.soft {
        let now = crate::util::clock::system_unix_ms();
        let since = m.soft_since_ms.load(Ordering::Relaxed);
        if since == 0 {
            m.soft_since_ms.store(now, Ordering::Relaxed);
        } else if ((now - since) / 1000) as u64 > limit.soft_seconds {
            soft = true;
        }
    } else {
        m.soft_since_ms.store(0, Ordering::Relaxed);
    }
    if (hard || soft) && !c.killed.load(Ordering::Relaxed) {
        crate::log_notice!(
            "Client {} scheduled to be closed ASAP for overcoming of output buffer limits.",
            crate::clients::client_line(c, crate::util::clock::system_unix_ms())
        );
        c.kill();
    }
}
