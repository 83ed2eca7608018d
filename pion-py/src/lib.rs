//! Python bindings: `pion.Engine(path)` runs the engine in-process, durable in `path`
//! (no server), with the same commands and the same guarantees as `pion-server`.
//! Replies become Python values; error replies raise `pion.PionError` with the
//! server's message. The GIL is released while a command runs.

// The engine's memory is counted as pion-server counts it (`used_memory`, `maxmemory`):
// every Rust allocation in this module goes through the counting allocator.
#[global_allocator]
static ALLOC: pion_core::util::alloc::CountingAlloc = pion_core::util::alloc::CountingAlloc;

use pion_core::durability::DurabilityOptions;
use pion_core::{Engine as CoreEngine, EngineOptions, Reply};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

pyo3::create_exception!(_pion, PionError, PyException, "An error reply from Pion.");

/// Converts a reply to a Python value.
fn to_py(py: Python<'_>, reply: Reply) -> PyResult<PyObject> {
    Ok(match reply {
        Reply::Status(s) => s.into_pyobject(py)?.into_any().unbind(),
        Reply::Error(e) => return Err(PionError::new_err(e.to_string())),
        Reply::Integer(n) => n.into_pyobject(py)?.into_any().unbind(),
        Reply::Double(d) | Reply::ShortDouble(d) | Reply::HumanDouble(d) => {
            d.into_pyobject(py)?.into_any().unbind()
        }
        Reply::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Reply::Bulk(b) | Reply::Verbatim(_, b) => PyBytes::new(py, &b).into_any().unbind(),
        // A big number becomes a Python int (arbitrary precision) when it parses.
        Reply::BigNumber(digits) => match py.get_type::<pyo3::types::PyInt>().call1((&digits,)) {
            Ok(n) => n.unbind(),
            Err(_) => digits.into_pyobject(py)?.into_any().unbind(),
        },
        Reply::Attributed(_, inner) => to_py(py, *inner)?,
        Reply::Null | Reply::NullArray => py.None(),
        Reply::Array(items) | Reply::Set(items) | Reply::Push(items) | Reply::Several(items) => {
            let list = PyList::empty(py);
            for r in items {
                list.append(to_py(py, r)?)?;
            }
            list.into_any().unbind()
        }
        Reply::Map(pairs) | Reply::Pairs(pairs) | Reply::PairsMap(pairs) => {
            let d = PyDict::new(py);
            for (k, v) in pairs {
                d.set_item(to_py(py, k)?, to_py(py, v)?)?;
            }
            d.into_any().unbind()
        }
    })
}

/// An argument: bytes as given, str as UTF-8, int as its decimal text.
fn to_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(s) = obj.extract::<String>() {
        return Ok(s.into_bytes());
    }
    if let Ok(n) = obj.extract::<i64>() {
        return Ok(n.to_string().into_bytes());
    }
    if let Ok(b) = obj.extract::<Vec<u8>>() {
        return Ok(b);
    }
    Err(PionError::new_err(
        "arguments must be bytes, str or int".to_string(),
    ))
}

/// The embedded engine.
#[pyclass(module = "pion._pion", subclass)]
struct Engine {
    engine: Option<CoreEngine>,
}

#[pymethods]
impl Engine {
    /// Opens (or creates) the durable engine in `path`; `path=None` keeps everything in
    /// memory only. `appendfsync` is "always", "everysec" or "no". `embed_model` is a
    /// sentence-transformers model folder (`config.json`, `model.safetensors`,
    /// `tokenizer.json`) that `AI.EMBED` and `AI.SEMANTIC_CACHE` embed with, as
    /// `pion-server --embed-model` loads it; a folder that does not load is an error
    /// before the data directory is touched.
    #[new]
    #[pyo3(signature = (path=None, appendfsync="everysec", embed_model=None))]
    fn new(
        py: Python<'_>,
        path: Option<String>,
        appendfsync: &str,
        embed_model: Option<String>,
    ) -> PyResult<Engine> {
        let embedder = match embed_model {
            Some(dir) => Some(std::sync::Arc::new(
                py.allow_threads(|| pion_core::embed::open(std::path::Path::new(&dir)))
                    .map_err(|e| PionError::new_err(e.to_string()))?,
            )),
            None => None,
        };
        let engine = match path {
            None => CoreEngine::in_memory(EngineOptions::default()),
            Some(p) => {
                let mut d = DurabilityOptions::new(p);
                d.fsync = pion_core::durability::FsyncPolicy::parse(appendfsync)
                    .ok_or_else(|| PionError::new_err("appendfsync: always, everysec or no"))?;
                py.allow_threads(|| CoreEngine::open_with(EngineOptions::default(), d))
                    .map_err(|e| PionError::new_err(e.to_string()))?
            }
        };
        if let Some(service) = embedder {
            engine.set_embedder(service);
        }
        Ok(Engine {
            engine: Some(engine),
        })
    }

    /// Runs any command, like `redis.execute_command`: `execute("SET", "k", b"v")`.
    #[pyo3(signature = (*args))]
    fn execute(&self, py: Python<'_>, args: Vec<Bound<'_, PyAny>>) -> PyResult<PyObject> {
        let engine = self
            .engine
            .as_ref()
            .ok_or_else(|| PionError::new_err("the engine is closed"))?
            .clone();
        if args.is_empty() {
            return Err(PionError::new_err("execute() needs a command"));
        }
        let argv: Vec<Vec<u8>> = args.iter().map(to_arg).collect::<PyResult<_>>()?;
        let reply = py.allow_threads(|| engine.execute(0, &argv));
        to_py(py, reply)
    }

    /// Flushes the log and releases the data directory (also on garbage collection).
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        if let Some(engine) = self.engine.take() {
            py.allow_threads(|| engine.flush_log())
                .map_err(|e| PionError::new_err(e.to_string()))?;
        }
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, py: Python<'_>, _exc: Vec<Bound<'_, PyAny>>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

/// The native module.
#[pymodule]
fn _pion(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add("PionError", m.py().get_type::<PionError>())?;
    m.add("__version__", pion_core::VERSION)?;
    Ok(())
}
