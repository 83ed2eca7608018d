//! The C ABI called from Rust as C would call it: statuses, reply trees, handles
//! after close, many threads at once.

use super::*;
use std::ptr;

fn open_memory() -> *mut PionEngine {
    let mut engine = ptr::null_mut();
    // SAFETY: null options, `engine` writable.
    assert_eq!(
        unsafe { pion_open(ptr::null(), &mut engine) },
        PionStatus::PION_OK
    );
    engine
}

/// Runs a command, returning its status and (when OK) its reply root.
fn run(engine: *mut PionEngine, args: &[&[u8]]) -> (PionStatus, *mut PionReply) {
    let ptrs: Vec<*const u8> = args.iter().map(|a| a.as_ptr()).collect();
    let lens: Vec<usize> = args.iter().map(|a| a.len()).collect();
    let mut reply = ptr::null_mut();
    // SAFETY: `args.len()` entries in each array, each pointer valid for its length.
    let status = unsafe {
        pion_execute(
            engine,
            0,
            args.len(),
            ptrs.as_ptr(),
            lens.as_ptr(),
            &mut reply,
        )
    };
    (status, reply)
}

fn bytes(node: *const PionReply) -> Vec<u8> {
    let mut len = 0;
    // SAFETY: `node` is live; `len` writable.
    let p = unsafe { pion_reply_bytes(node, &mut len) };
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: the library returns `len` readable bytes.
    unsafe { std::slice::from_raw_parts(p, len) }.to_vec()
}

fn last_error() -> String {
    // SAFETY: the thread's message, live until its next failure.
    unsafe { CStr::from_ptr(pion_last_error()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn commands_run_and_replies_walk() {
    let e = open_memory();
    let (s, r) = run(e, &[b"SET", b"k\0ey", b"v\x00\xff"]);
    assert_eq!(s, PionStatus::PION_OK);
    // SAFETY: `r` is a live root until freed below.
    unsafe {
        assert_eq!(pion_reply_kind(r), PionReplyKind::PION_REPLY_STATUS as i32);
        assert_eq!(bytes(r), b"OK");
        pion_reply_free(r);
    }
    let (_, r) = run(e, &[b"GET", b"k\0ey"]);
    assert_eq!(bytes(r), b"v\x00\xff");
    // SAFETY: as above.
    unsafe { pion_reply_free(r) };
    let (_, r) = run(e, &[b"HSET", b"h", b"a", b"1", b"b", b"2"]);
    // SAFETY: as above.
    unsafe {
        assert_eq!(pion_reply_integer(r), 2);
        pion_reply_free(r);
    }
    let (_, r) = run(e, &[b"HGETALL", b"h"]);
    // SAFETY: `r` and its children are live until the root is freed.
    unsafe {
        assert_eq!(pion_reply_kind(r), PionReplyKind::PION_REPLY_MAP as i32);
        assert_eq!(pion_reply_len(r), 4);
        let keys: Vec<Vec<u8>> = (0..4).map(|i| bytes(pion_reply_element(r, i))).collect();
        assert_eq!(
            keys,
            vec![b"a".to_vec(), b"1".to_vec(), b"b".to_vec(), b"2".to_vec()]
        );
        assert!(pion_reply_element(r, 4).is_null());
        pion_reply_free(r);
    }
    let (_, r) = run(e, &[b"ZADD", b"z", b"1.5", b"m"]);
    // SAFETY: as above.
    unsafe { pion_reply_free(r) };
    let (_, r) = run(e, &[b"ZSCORE", b"z", b"m"]);
    assert_eq!(bytes(r), b"1.5");
    // SAFETY: as above.
    unsafe { pion_reply_free(r) };
    let (s, r) = run(e, &[b"NOSUCHCOMMAND"]);
    assert_eq!(s, PionStatus::PION_OK, "an error reply is a reply");
    // SAFETY: as above.
    unsafe {
        assert_eq!(pion_reply_kind(r), PionReplyKind::PION_REPLY_ERROR as i32);
        assert!(bytes(r).starts_with(b"ERR unknown command"));
        pion_reply_free(r);
    }
    let (_, r) = run(e, &[b"GET", b"missing"]);
    // SAFETY: as above.
    unsafe {
        assert_eq!(pion_reply_kind(r), PionReplyKind::PION_REPLY_NIL as i32);
        pion_reply_free(r);
    }
    assert_eq!(pion_close(e), PionStatus::PION_OK);
}

#[test]
fn bad_input_is_a_status_never_undefined() {
    let e = open_memory();
    let mut reply = ptr::null_mut();
    // SAFETY: every pointer is null or valid; the function must check the nulls.
    unsafe {
        assert_eq!(
            pion_execute(e, 0, 1, ptr::null(), ptr::null(), &mut reply),
            PionStatus::PION_ERR_NULL
        );
        let p = [ptr::null::<u8>()];
        let n = [3usize];
        assert_eq!(
            pion_execute(e, 0, 1, p.as_ptr(), n.as_ptr(), &mut reply),
            PionStatus::PION_ERR_NULL
        );
        assert_eq!(last_error(), "argv[0] is null");
        assert_eq!(
            pion_execute(e, 0, 0, p.as_ptr(), n.as_ptr(), &mut reply),
            PionStatus::PION_ERR_INVALID
        );
        assert_eq!(
            pion_open(ptr::null(), ptr::null_mut()),
            PionStatus::PION_ERR_NULL
        );
        let options = PionOptions {
            version: 99,
            dir: ptr::null(),
        };
        let mut other = ptr::null_mut();
        assert_eq!(
            pion_open(&options, &mut other),
            PionStatus::PION_ERR_INVALID
        );
        assert!(last_error().contains("options version 99"));
        assert_eq!(pion_reply_kind(ptr::null()), 0);
        assert_eq!(pion_reply_len(ptr::null()), 0);
        pion_reply_free(ptr::null_mut());
    }
    assert_eq!(pion_close(e), PionStatus::PION_OK);
    let (s, _) = run(e, &[b"PING"]);
    assert_eq!(s, PionStatus::PION_ERR_CLOSED, "use after close");
    assert_eq!(pion_close(e), PionStatus::PION_ERR_CLOSED);
    assert_eq!(pion_close(ptr::null_mut()), PionStatus::PION_OK);
}

#[test]
fn a_durable_engine_keeps_what_it_acknowledged() {
    let dir = std::env::temp_dir().join(format!("pion-ffi-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = std::ffi::CString::new(dir.display().to_string()).expect("no NUL");
    let options = PionOptions {
        version: PION_OPTIONS_VERSION,
        dir: path.as_ptr(),
    };
    for round in 0..2 {
        let mut e = ptr::null_mut();
        // SAFETY: valid options and out pointer.
        assert_eq!(unsafe { pion_open(&options, &mut e) }, PionStatus::PION_OK);
        if round == 0 {
            let (_, r) = run(e, &[b"SET", b"kept", b"yes"]);
            // SAFETY: a live root.
            unsafe { pion_reply_free(r) };
            // The directory is held while open.
            let mut second = ptr::null_mut();
            // SAFETY: as above.
            assert_eq!(
                unsafe { pion_open(&options, &mut second) },
                PionStatus::PION_ERR_OPEN
            );
        } else {
            let (_, r) = run(e, &[b"GET", b"kept"]);
            assert_eq!(bytes(r), b"yes");
            // SAFETY: a live root.
            unsafe { pion_reply_free(r) };
        }
        assert_eq!(pion_close(e), PionStatus::PION_OK);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn many_threads_share_an_engine_and_one_closes_it() {
    let e = open_memory() as usize;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let key = format!("n{}", t % 2);
                for _ in 0..500 {
                    let (s, r) = run(e as *mut PionEngine, &[b"INCR", key.as_bytes()]);
                    assert_eq!(s, PionStatus::PION_OK);
                    // SAFETY: a live root.
                    unsafe { pion_reply_free(r) };
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    let (_, r) = run(e as *mut PionEngine, &[b"MGET", b"n0", b"n1"]);
    // SAFETY: `r` and its children are live until freed.
    unsafe {
        assert_eq!(bytes(pion_reply_element(r, 0)), b"2000");
        assert_eq!(bytes(pion_reply_element(r, 1)), b"2000");
        pion_reply_free(r);
    }
    assert_eq!(pion_close(e as *mut PionEngine), PionStatus::PION_OK);
}

const MANIFEST: &std::ffi::CStr = c"{\"model\":\"m\",\"block_tokens\":4,\"dtype\":\"f16\",\"layers\":[{\"kind\":\"attention\",\"kv_heads\":1,\"head_dim\":8},{\"kind\":\"recurrent\",\"state_bytes\":6}]}";

/// A block's layers for `n` tokens: K/V of one head of 8 f16s per token, and a
/// recurrent state when `state`.
fn layers(seed: u8, n: usize, state: bool) -> Vec<Vec<u8>> {
    let kv = (0..2 * n * 8 * 2)
        .map(|i| seed.wrapping_add(i as u8))
        .collect();
    vec![kv, if state { vec![seed; 6] } else { Vec::new() }]
}

fn put(
    e: *mut PionEngine,
    parent: Option<&PionBlockId>,
    tokens: &[u32],
    layers: &[Vec<u8>],
) -> (PionStatus, PionBlockId) {
    let ptrs: Vec<*const u8> = layers.iter().map(|l| l.as_ptr()).collect();
    let lens: Vec<usize> = layers.iter().map(Vec::len).collect();
    let mut id = PionBlockId::default();
    let parent = parent.map_or(ptr::null(), |p| p as *const PionBlockId);
    // SAFETY: every array holds what its count says; `id` writable.
    let s = unsafe {
        pion_kv_put(
            e,
            c"ns".as_ptr(),
            parent,
            tokens.as_ptr(),
            tokens.len(),
            layers.len(),
            ptrs.as_ptr(),
            lens.as_ptr(),
            &mut id,
        )
    };
    (s, id)
}

#[test]
fn the_prompt_cache_stores_matches_and_fetches_views() {
    let e = open_memory();
    // SAFETY: NUL-terminated strings.
    unsafe {
        assert_eq!(
            pion_kv_register(e, c"ns".as_ptr(), MANIFEST.as_ptr()),
            PionStatus::PION_OK
        );
        assert_eq!(
            pion_kv_register(e, c"ns".as_ptr(), c"{".as_ptr()),
            PionStatus::PION_ERR_COMMAND
        );
    }
    assert!(last_error().starts_with("ERR"), "{}", last_error());
    let first = layers(1, 4, true);
    let (s, a) = put(e, None, &[1, 2, 3, 4], &first);
    assert_eq!(s, PionStatus::PION_OK);
    let second = layers(9, 4, true);
    let (s, b) = put(e, Some(&a), &[5, 6, 7, 8], &second);
    assert_eq!(s, PionStatus::PION_OK);
    // A block without its recurrent state: stored, but a prefix cannot end there.
    let third = layers(20, 2, false);
    let (s, c) = put(e, Some(&b), &[9, 10], &third);
    assert_eq!(s, PionStatus::PION_OK);
    let (s, _) = put(e, Some(&a), &[5, 6], &[vec![0u8; 3], Vec::new()]);
    assert_eq!(s, PionStatus::PION_ERR_COMMAND, "a layer of the wrong size");

    let mut matched = 0u64;
    let mut n = 0usize;
    let mut ids = [PionBlockId::default(); 1];
    let query: Vec<u32> = (1..=10).collect();
    // SAFETY: `ids` holds one id; the other outs are writable.
    let s = unsafe {
        pion_kv_match(
            e,
            c"ns".as_ptr(),
            query.as_ptr(),
            query.len(),
            &mut matched,
            ids.as_mut_ptr(),
            1,
            &mut n,
        )
    };
    assert_eq!(s, PionStatus::PION_OK);
    assert_eq!(
        (matched, n),
        (8, 2),
        "two blocks, only the first fits the array"
    );
    assert_eq!(ids[0], a);

    let mut blocks = ptr::null_mut();
    // SAFETY: three ids; `blocks` writable.
    let s = unsafe {
        pion_kv_fetch(
            e,
            c"ns".as_ptr(),
            [a, b, c].as_ptr(),
            3,
            ptr::null(),
            0,
            &mut blocks,
        )
    };
    assert_eq!(s, PionStatus::PION_OK);
    // SAFETY: `blocks` is live until freed below.
    unsafe {
        assert_eq!(pion_kv_blocks_len(blocks), 3);
        assert_eq!(pion_kv_block_tokens(blocks, 2), 2);
        assert_eq!(pion_kv_block_layers(blocks, 0), 2);
        let mut len = 0;
        let p = pion_kv_block_layer(blocks, 1, 0, &mut len);
        assert_eq!(std::slice::from_raw_parts(p, len), second[0].as_slice());
        let p = pion_kv_block_layer(blocks, 0, 1, &mut len);
        assert_eq!(std::slice::from_raw_parts(p, len), first[1].as_slice());
        assert!(
            pion_kv_block_layer(blocks, 2, 1, &mut len).is_null(),
            "no state stored"
        );
        assert_eq!(len, 0);
        // The views outlive the blocks' deletion.
        let (_, r) = run(e, &[b"KV.DROP", b"ns"]);
        pion_reply_free(r);
        let p = pion_kv_block_layer(blocks, 0, 0, &mut len);
        assert_eq!(std::slice::from_raw_parts(p, len), first[0].as_slice());
        pion_kv_blocks_free(blocks);
    }
    // Layers asked by index: only the recurrent one.
    let (s, a) = {
        // SAFETY: NUL-terminated strings.
        assert_eq!(
            unsafe { pion_kv_register(e, c"ns".as_ptr(), MANIFEST.as_ptr()) },
            PionStatus::PION_OK
        );
        put(e, None, &[1, 2, 3, 4], &first)
    };
    assert_eq!(s, PionStatus::PION_OK);
    // SAFETY: one id, one layer index; `blocks` writable.
    let s = unsafe {
        pion_kv_fetch(
            e,
            c"ns".as_ptr(),
            [a].as_ptr(),
            1,
            [1u32].as_ptr(),
            1,
            &mut blocks,
        )
    };
    assert_eq!(s, PionStatus::PION_OK);
    // SAFETY: `blocks` is live until freed.
    unsafe {
        assert_eq!(pion_kv_block_layers(blocks, 0), 1);
        let mut len = 0;
        let p = pion_kv_block_layer(blocks, 0, 0, &mut len);
        assert_eq!(std::slice::from_raw_parts(p, len), first[1].as_slice());
        pion_kv_blocks_free(blocks);
    }
    let (_, r) = run(e, &[b"KV.DROP", b"ns"]);
    // SAFETY: a live root.
    unsafe { pion_reply_free(r) };
    let mut none = ptr::null_mut();
    // SAFETY: as above.
    let s = unsafe {
        pion_kv_fetch(
            e,
            c"ns".as_ptr(),
            [a].as_ptr(),
            1,
            ptr::null(),
            0,
            &mut none,
        )
    };
    assert_eq!(s, PionStatus::PION_ERR_COMMAND);
    assert_eq!(pion_close(e), PionStatus::PION_OK);
}

#[test]
fn vectors_are_added_searched_and_removed() {
    let e = open_memory();
    let points: [[f32; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.7, 0.7, 0.0]];
    for (i, p) in points.iter().enumerate() {
        let name = format!("p{i}");
        let mut added = -1;
        // SAFETY: every pointer valid for its length.
        let s = unsafe {
            pion_vector_add(
                e,
                0,
                c"vs".as_ptr(),
                name.as_ptr(),
                name.len(),
                p.as_ptr(),
                3,
                PION_VECTOR_NOQUANT,
                &mut added,
            )
        };
        assert_eq!((s, added), (PionStatus::PION_OK, 1));
    }
    let mut out = ptr::null_mut();
    // SAFETY: as above.
    let s = unsafe {
        pion_vector_search(
            e,
            0,
            c"vs".as_ptr(),
            [1.0f32, 0.1, 0.0].as_ptr(),
            3,
            2,
            50,
            &mut out,
        )
    };
    assert_eq!(s, PionStatus::PION_OK);
    // SAFETY: `out` is live until freed.
    unsafe {
        assert_eq!(pion_neighbors_len(out), 2);
        let mut len = 0;
        let p = pion_neighbors_element(out, 0, &mut len);
        assert_eq!(std::slice::from_raw_parts(p, len), b"p0");
        assert!(pion_neighbors_score(out, 0) > pion_neighbors_score(out, 1));
        assert!(pion_neighbors_score(out, 2).is_nan());
        pion_neighbors_free(out);
    }
    let mut removed = -1;
    // SAFETY: as above.
    let s = unsafe { pion_vector_remove(e, 0, c"vs".as_ptr(), b"p0".as_ptr(), 2, &mut removed) };
    assert_eq!((s, removed), (PionStatus::PION_OK, 1));
    // A one-float vector "x" with these flags.
    let add_x = |flags: u32| {
        // SAFETY: every pointer valid for its length; `added` may be null.
        unsafe {
            pion_vector_add(
                e,
                0,
                c"vs".as_ptr(),
                b"x".as_ptr(),
                1,
                [1.0f32].as_ptr(),
                1,
                flags,
                ptr::null_mut(),
            )
        }
    };
    assert_eq!(
        add_x(0),
        PionStatus::PION_ERR_COMMAND,
        "a vector of another dimension"
    );
    assert_eq!(add_x(3), PionStatus::PION_ERR_INVALID, "two quantisations");
    let (_, r) = run(e, &[b"SET", b"str", b"v"]);
    // SAFETY: a live root.
    unsafe { pion_reply_free(r) };
    // SAFETY: as above.
    let s =
        unsafe { pion_vector_search(e, 0, c"str".as_ptr(), [1.0f32].as_ptr(), 1, 1, 0, &mut out) };
    assert_eq!(s, PionStatus::PION_ERR_COMMAND);
    assert!(last_error().starts_with("WRONGTYPE"), "{}", last_error());
    // SAFETY: as above.
    let s = unsafe {
        pion_vector_search(
            e,
            0,
            c"nokey".as_ptr(),
            [1.0f32].as_ptr(),
            1,
            1,
            0,
            &mut out,
        )
    };
    assert_eq!(s, PionStatus::PION_OK);
    // SAFETY: `out` is live until freed.
    unsafe {
        assert_eq!(pion_neighbors_len(out), 0);
        pion_neighbors_free(out);
    }
    assert_eq!(pion_close(e), PionStatus::PION_OK);
}

fn session_run(s: *mut PionSession, args: &[&[u8]]) -> Vec<u8> {
    let ptrs: Vec<*const u8> = args.iter().map(|a| a.as_ptr()).collect();
    let lens: Vec<usize> = args.iter().map(|a| a.len()).collect();
    let mut reply = ptr::null_mut();
    // SAFETY: `args.len()` entries in each array, each valid for its length.
    let status =
        unsafe { pion_session_execute(s, args.len(), ptrs.as_ptr(), lens.as_ptr(), &mut reply) };
    assert_eq!(status, PionStatus::PION_OK, "{}", last_error());
    // SAFETY: a live root, freed here.
    unsafe {
        let out = match pion_reply_kind(reply) {
            k if k == PionReplyKind::PION_REPLY_INTEGER as i32 => {
                pion_reply_integer(reply).to_string().into_bytes()
            }
            k if k == PionReplyKind::PION_REPLY_ARRAY as i32 => {
                format!("array {}", pion_reply_len(reply)).into_bytes()
            }
            _ => bytes(reply),
        };
        pion_reply_free(reply);
        out
    }
}

#[test]
fn sessions_keep_their_database_and_transaction() {
    let e = open_memory();
    let mut s = ptr::null_mut();
    // SAFETY: `s` writable.
    assert_eq!(unsafe { pion_session_open(e, &mut s) }, PionStatus::PION_OK);
    assert_eq!(session_run(s, &[b"SELECT", b"3"]), b"OK");
    assert_eq!(session_run(s, &[b"SET", b"k", b"in3"]), b"OK");
    let (_, r) = run(e, &[b"GET", b"k"]);
    // SAFETY: a live root.
    unsafe {
        assert_eq!(
            pion_reply_kind(r),
            PionReplyKind::PION_REPLY_NIL as i32,
            "db 0 has no k"
        );
        pion_reply_free(r);
    }
    assert_eq!(session_run(s, &[b"MULTI"]), b"OK");
    assert_eq!(session_run(s, &[b"INCR", b"n"]), b"QUEUED");
    assert_eq!(session_run(s, &[b"INCR", b"n"]), b"QUEUED");
    assert_eq!(session_run(s, &[b"EXEC"]), b"array 2");
    assert_eq!(session_run(s, &[b"GET", b"n"]), b"2");
    // The engine's handle closes; the session keeps the engine until it closes too.
    assert_eq!(pion_close(e), PionStatus::PION_OK);
    assert_eq!(session_run(s, &[b"GET", b"k"]), b"in3");
    assert_eq!(pion_session_close(s), PionStatus::PION_OK);
    assert_eq!(pion_session_close(s), PionStatus::PION_ERR_CLOSED);
    let mut reply = ptr::null_mut();
    // SAFETY: a closed handle must be refused, not read.
    let status = unsafe {
        pion_session_execute(
            s,
            1,
            [b"PING".as_ptr()].as_ptr(),
            [4usize].as_ptr(),
            &mut reply,
        )
    };
    assert_eq!(status, PionStatus::PION_ERR_CLOSED);
    // SAFETY: a closed engine must be refused.
    assert_eq!(
        unsafe { pion_session_open(e, &mut s) },
        PionStatus::PION_ERR_CLOSED
    );
}
