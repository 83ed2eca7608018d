//! Command-level tests of the list family, with replies checked against Redis 7.0.15.
