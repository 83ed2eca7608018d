//! An embedded client of an engine: what a connection is to the server, for an
//! application that links `pion-core` (its selected database and protocol persist
//! between commands, and it is listed by `CLIENT LIST`).

use crate::clients::ClientState;
use crate::engine::Engine;
use crate::reply::Reply;

/// A client of an embedded engine: keeps its selected database and protocol between
/// commands, like a connection does.
pub struct Session {
    engine: Engine,
    /// The session's client state.
    pub client: ClientState,
}

impl Session {
    /// A session for `client` (registered by the engine).
    pub(crate) fn new(engine: Engine, client: ClientState) -> Session {
        Session { engine, client }
    }

    /// Runs a command in this session.
    pub fn execute<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Reply {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_ref().to_vec()).collect();
        self.execute_argv(&argv)
    }

    /// Runs a command given as owned arguments (no copy).
    pub fn execute_argv(&mut self, argv: &[Vec<u8>]) -> Reply {
        let reply = crate::command::execute(&self.engine, &mut self.client, argv);
        self.engine.acknowledged(&self.client, reply)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.engine.clients().unregister(self.client.id());
    }
}
