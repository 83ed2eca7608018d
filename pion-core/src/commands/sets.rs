//! sets commands.

use crate::command::CommandSpec;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[];
