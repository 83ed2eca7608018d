//! Keyspace notifications: the `__keyspace@<db>__:<key>` / `__keyevent@<db>__:<event>`
//! messages that handlers emit through [`Ctx::notify`](crate::command::ctx::Ctx::notify),
//! for the classes `notify-keyspace-events` turns on (its flag letters live in
//! [`config::keyspace_events`](crate::config::keyspace_events)).

use super::Hub;
pub use crate::config::keyspace_events::*;

impl Hub {
    /// Publishes one keyspace event (the caller checked the class is on).
    pub fn keyspace_event(&self, class: u32, event: &str, key: &[u8], db: usize) {
        let flags = self.notify_flags();
        if flags & class == 0 {
            return;
        }
        if flags & KEYSPACE != 0 {
            let mut channel = format!("__keyspace@{db}__:").into_bytes();
            channel.extend_from_slice(key);
            self.publish(&channel, event.as_bytes());
        }
        if flags & KEYEVENT != 0 {
            let channel = format!("__keyevent@{db}__:{event}");
            self.publish(channel.as_bytes(), key);
        }
    }
}
