//! Python bindings: `pion.Engine(path)` runs the engine in-process, durable in `path`
//! (no server), with the same commands and the same guarantees as `pion-server`.
//! Replies become Python values; error replies raise `pion.PionError` with the
//! server's message. The GIL is released while a command runs.
//!
//! The prompt cache moves layers without copies on the Python side: a store reads
//! each layer from its buffer in place (numpy, mlx, bytes — anything with the buffer
//! protocol) into the one buffer the store keeps, and a fetch hands out read-only
//! views of the store's own buffers ([`LayerBuffer`]), kept alive by the views. The
//! buffer protocol is in Python's stable ABI from 3.11, hence the `abi3-py311` floor.

// The engine's memory is counted as pion-server counts it (`used_memory`, `maxmemory`):
// every Rust allocation in this module goes through the counting allocator.
#[global_allocator]
static ALLOC: pion_core::util::alloc::CountingAlloc = pion_core::util::alloc::CountingAlloc;

use std::os::raw::c_int;

use pion_core::durability::DurabilityOptions;
use pion_core::prefix::block_id::{tokens_from_le, BlockId};
use pion_core::{Engine as CoreEngine, EngineOptions, Reply};
use pyo3::buffer::PyBuffer;
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

/// One stored layer lent to Python: a read-only buffer over the store's own bytes,
/// which stay valid while any view of them lives (even if the block is evicted).
#[pyclass(module = "pion._pion", frozen)]
struct LayerBuffer {
    data: pion_core::Bytes,
}

#[pymethods]
impl LayerBuffer {
    /// The buffer protocol: one dimension of unsigned bytes, read-only.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let data = &slf.get().data;
        let len = pyo3::ffi::Py_ssize_t::try_from(data.len())
            .map_err(|_| pyo3::exceptions::PyBufferError::new_err("layer too large"))?;
        // SAFETY: `view` is the struct Python passed to fill; the pointer and length
        // describe `data`, which lives as long as this object, and `PyBuffer_FillInfo`
        // takes a reference to the object for the view (readonly = 1: a request for a
        // writable buffer is refused with BufferError).
        let rc = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                data.as_ptr() as *mut std::os::raw::c_void,
                len,
                1,
                flags,
            )
        };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.data.len()
    }
}

/// A fetched block as Python gets it: its token count and its layers' views (None:
/// absent recurrent state).
type FetchedBlock = (u32, Vec<Option<Py<LayerBuffer>>>);

/// A layer's bytes borrowed from a Python buffer (which must be C-contiguous).
fn buffer_bytes(buf: &PyBuffer<u8>) -> PyResult<&[u8]> {
    if !buf.is_c_contiguous() {
        return Err(PionError::new_err("a layer must be a C-contiguous buffer"));
    }
    // SAFETY: a C-contiguous buffer of `u8` items is `len_bytes()` bytes from
    // `buf_ptr()`, valid while `buf` (which holds the exporter's view) lives; the
    // slice does not outlive `buf`. The exporter's contents must not change during
    // the call (as for any buffer handed to C code with the GIL released).
    Ok(unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, buf.len_bytes()) })
}

/// The embedded engine.
#[pyclass(module = "pion._pion", subclass)]
struct Engine {
    engine: Option<CoreEngine>,
}

impl Engine {
    fn open(&self) -> PyResult<CoreEngine> {
        Ok(self
            .engine
            .as_ref()
            .ok_or_else(|| PionError::new_err("the engine is closed"))?
            .clone())
    }
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
        let engine = self.open()?;
        if args.is_empty() {
            return Err(PionError::new_err("execute() needs a command"));
        }
        let argv: Vec<Vec<u8>> = args.iter().map(to_arg).collect::<PyResult<_>>()?;
        let reply = py.allow_threads(|| engine.execute(0, &argv));
        to_py(py, reply)
    }

    /// `KV.PUT` with each layer read in place from its buffer (bytes, or a
    /// C-contiguous unsigned-byte view such as `memoryview(array).cast("B")`) into
    /// the buffer the store keeps: one copy, made with the GIL released (a durable
    /// engine then writes it to its block file and keeps the file's view instead).
    /// `parent` is a block id in hex or `root`, `tokens` little-endian u32 bytes.
    fn _store_block(
        &self,
        py: Python<'_>,
        namespace: &str,
        parent: &[u8],
        tokens: &[u8],
        layers: Vec<PyBuffer<u8>>,
    ) -> PyResult<String> {
        let engine = self.open()?;
        let parent = BlockId::from_arg(parent).ok_or_else(|| {
            PionError::new_err(
                "ERR invalid block id: 32 hex digits, or root for a sequence's first block",
            )
        })?;
        let tokens = tokens_from_le(tokens)
            .ok_or_else(|| PionError::new_err("tokens must be little-endian u32 bytes"))?;
        let views = layers
            .iter()
            .map(buffer_bytes)
            .collect::<PyResult<Vec<&[u8]>>>()?;
        let stored = py.allow_threads(|| {
            let shared = views
                .iter()
                .map(|v| pion_core::util::shared_copy::shared_copy(v))
                .collect();
            engine.kv_put_shared(namespace, parent, &tokens, shared)
        });
        stored
            .map(BlockId::hex)
            .map_err(|e| PionError::new_err(e.wire_text().into_owned()))
    }

    /// `KV.MGET`: each block's token count and its layers (those asked for, or all)
    /// as read-only buffers over the store's bytes (None: absent recurrent state).
    #[pyo3(signature = (namespace, block_ids, layers=None))]
    fn _fetch_many(
        &self,
        py: Python<'_>,
        namespace: &str,
        block_ids: Vec<String>,
        layers: Option<Vec<usize>>,
    ) -> PyResult<Vec<FetchedBlock>> {
        let engine = self.open()?;
        let ids = block_ids
            .iter()
            .map(|h| {
                BlockId::from_arg(h.as_bytes())
                    .ok_or_else(|| PionError::new_err(format!("ERR invalid block id '{h}'")))
            })
            .collect::<PyResult<Vec<BlockId>>>()?;
        let fetched = py
            .allow_threads(|| engine.kv_fetch(namespace, &ids, layers.as_deref()))
            .map_err(|e| PionError::new_err(e.wire_text().into_owned()))?;
        fetched
            .into_iter()
            .map(|block| {
                let views = block
                    .layers
                    .into_iter()
                    .map(|layer| {
                        layer
                            .map(|data| Py::new(py, LayerBuffer { data }))
                            .transpose()
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                Ok((block.tokens, views))
            })
            .collect()
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
    m.add_class::<LayerBuffer>()?;
    m.add("PionError", m.py().get_type::<PionError>())?;
    m.add("__version__", pion_core::VERSION)?;
    Ok(())
}
