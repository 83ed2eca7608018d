//! What start-up does between opening the engine and serving: load the users (from the
//! ACL file, or the configuration file's `user` lines), remember the configuration
//! file for `CONFIG REWRITE`, write the pid file. Any failure stops start-up with a
//! message naming the file and line.

use pion_core::config::file::ConfigFile;
use pion_core::Engine;

use crate::cli::ServeOptions;

/// Prepares `engine` for serving with `opts`.
pub fn prepare(engine: &Engine, opts: &ServeOptions) -> Result<(), String> {
    let acl = engine.acl();
    if !opts.config.aclfile.is_empty() {
        let path = std::path::PathBuf::from(&opts.config.aclfile);
        pion_core::acl::file::load(acl, &path)?;
        acl.set_file(Some(path));
    }
    for d in &opts.users {
        let (name, rules) = d
            .args
            .split_first()
            .ok_or_else(|| d.error("user name is missing"))?;
        // As in Redis, a configured user starts from nothing (even `default`).
        let rules: Vec<String> = std::iter::once("reset".to_string())
            .chain(rules.iter().cloned())
            .collect();
        acl.set_user(name, &rules)
            .map_err(|e| d.error(e.error().to_string().trim_start_matches("ERR ")))?;
    }
    if let Some(path) = &opts.config_file {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        engine.set_config_file(ConfigFile {
            path,
            defaults: opts.defaults.clone(),
        });
    }
    if let Some(pidfile) = &opts.pidfile {
        std::fs::write(pidfile, format!("{}\n", std::process::id()))
            .map_err(|e| format!("cannot write the pid file {pidfile}: {e}"))?;
    }
    Ok(())
}
