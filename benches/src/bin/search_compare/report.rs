//! search_compare's output: the side-by-side tables with their ratios, and the same
//! figures as JSON (`--json`).

use pion_benches::knn::{matched, Point};

use super::{Args, Data, Report, BATCH, FILTERS, RECALL_FLOOR};

fn ratio(p: f64, o: f64) -> String {
    if o > 0.0 && p.is_finite() && o.is_finite() {
        format!("{:.2}", p / o)
    } else {
        "-".into()
    }
}

fn sweep_table(title: &str, o: &[Point], p: &[Point]) {
    println!("\n{title}");
    println!(
        "{:>5} {:>11} {:>10} {:>11} {:>10} {:>9}",
        "ef", "oracle R@10", "oracle QPS", "pion R@10", "pion QPS", "QPS ratio"
    );
    let efs: Vec<usize> = {
        let mut v: Vec<usize> = o.iter().chain(p).map(|x| x.ef).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let cell = |s: &[Point], ef| s.iter().find(|x| x.ef == ef).copied();
    let show = |x: Option<Point>| {
        x.map_or(("-".into(), "-".into()), |x| {
            (format!("{:.4}", x.recall), format!("{:.0}", x.qps))
        })
    };
    for ef in efs {
        let (oo, pp) = (cell(o, ef), cell(p, ef));
        let (or, oq) = show(oo);
        let (pr, pq) = show(pp);
        let ra = match (oo, pp) {
            (Some(x), Some(y)) => ratio(y.qps, x.qps),
            _ => "-".into(),
        };
        println!("{ef:>5} {or:>11} {oq:>10} {pr:>11} {pq:>10} {ra:>9}");
    }
    println!("at matched recall (oracle points with R@10 >= {RECALL_FLOOR}):");
    let m = matched(o, p, RECALL_FLOOR);
    if m.is_empty() {
        println!("  none: the oracle never reached {RECALL_FLOOR}");
    }
    for (x, y) in m {
        match y {
            Some(y) => println!(
                "  oracle ef {} R@10 {:.4} {:.0} QPS ~ pion ef {} R@10 {:.4} {:.0} QPS: ratio {}",
                x.ef,
                x.recall,
                x.qps,
                y.ef,
                y.recall,
                y.qps,
                ratio(y.qps, x.qps)
            ),
            None => println!(
                "  oracle ef {} R@10 {:.4} {:.0} QPS ~ pion never reaches that recall",
                x.ef, x.recall, x.qps
            ),
        }
    }
}

pub(crate) fn print_tables(a: &Args, d: &Data, o: &Report, p: &Report) {
    println!(
        "search_compare: {} docs x {} dims (COSINE, HNSW M 16, EF_CONSTRUCTION 200), {} \
         queries; client: {} connections, load batches of {BATCH}, query depth {}, >= {} s \
         per point; oracle: 1 thread, pion --threads {}{}\nCPU: {}",
        a.n,
        d.dim,
        d.queries.len() / d.dim,
        a.conns,
        a.depth,
        a.secs,
        a.threads,
        if a.optimize {
            ", FT.OPTIMIZE after load"
        } else {
            ""
        },
        pion_benches::cpu_summary()
    );
    println!(
        "\nLoad + build (FT.CREATE, then HSET of {} docs; times from the first HSET)",
        a.n
    );
    println!(
        "{:<26} {:>10} {:>10} {:>11}",
        "", "oracle", "pion", "pion/oracle"
    );
    let row = |name: &str, x: f64, y: f64, prec: usize| {
        println!("{name:<26} {x:>10.prec$} {y:>10.prec$} {:>11}", ratio(y, x));
    };
    row("load s", o.load_s, p.load_s, 2);
    row("searchable s", o.searchable_s, p.searchable_s, 2);
    row("graph built s", o.graph_s, p.graph_s, 2);
    row("first KNN after load ms", o.first_knn_ms, p.first_knn_ms, 1);
    row("used_memory MiB", o.used_mb, p.used_mb, 1);
    row("RSS at start MiB", o.rss_start_mb, p.rss_start_mb, 1);
    row("RSS MiB", o.rss_mb, p.rss_mb, 1);
    row(
        "vector_index_sz_mb",
        o.vector_index_mb,
        p.vector_index_mb,
        1,
    );
    let truth = if d.knn_from_gt {
        "gt.ivecs"
    } else {
        "brute force over the loaded rows"
    };
    sweep_table(
        &format!("KNN 10, EF_RUNTIME sweep (recall vs {truth})"),
        &o.knn,
        &p.knn,
    );
    println!(
        "\nFiltered KNN, EF_RUNTIME {} (recall vs brute force over the passing rows)",
        a.filter_ef
    );
    println!(
        "{:>6} {:<24} {:>11} {:>10} {:>10} {:>10} {:>9}",
        "docs", "filter", "oracle R@10", "oracle QPS", "pion R@10", "pion QPS", "QPS ratio"
    );
    for (i, f) in FILTERS.iter().enumerate() {
        let cell = |x: Option<Point>| {
            x.map_or(("failed".to_string(), "-".to_string()), |x| {
                (format!("{:.4}", x.recall), format!("{:.0}", x.qps))
            })
        };
        let (x, y) = (
            o.filtered.get(i).copied().flatten(),
            p.filtered.get(i).copied().flatten(),
        );
        let ((xr, xq), (yr, yq)) = (cell(x), cell(y));
        let r = match (x, y) {
            (Some(x), Some(y)) => ratio(y.qps, x.qps),
            _ => "-".to_string(),
        };
        println!(
            "{:>6} {:<24} {xr:>11} {xq:>10} {yr:>10} {yq:>10} {r:>9}",
            f.name, f.query
        );
    }
    println!("\nVector set ({} x VADD FP32, Q8)", a.vset_n);
    println!(
        "{:<26} {:>10} {:>10} {:>11}",
        "", "oracle", "pion", "pion/oracle"
    );
    row("VADD load s", o.vset_load_s, p.vset_load_s, 2);
    row("used_memory delta MiB", o.vset_mem_mb, p.vset_mem_mb, 1);
    row("RSS delta MiB", o.vset_rss_mb, p.vset_rss_mb, 1);
    sweep_table(
        "VSIM COUNT 10, EF sweep (recall vs brute force over the set)",
        &o.vsim,
        &p.vsim,
    );
    for (name, r) in [("oracle", o), ("pion", p)] {
        for e in &r.errors {
            println!("{name} error: {e}");
        }
    }
}

fn json_points(ps: &[Point]) -> String {
    let v: Vec<String> = ps
        .iter()
        .map(|p| {
            format!(
                "{{\"ef\":{},\"recall10\":{:.4},\"qps\":{:.1}}}",
                p.ef, p.recall, p.qps
            )
        })
        .collect();
    format!("[{}]", v.join(","))
}

fn json_filtered(ps: &[Option<Point>]) -> String {
    let v: Vec<String> = FILTERS
        .iter()
        .zip(ps)
        .map(|(f, p)| match p {
            Some(p) => format!(
                "{{\"docs\":{:?},\"recall10\":{:.4},\"qps\":{:.1}}}",
                f.name, p.recall, p.qps
            ),
            None => format!("{{\"docs\":{:?},\"failed\":true}}", f.name),
        })
        .collect();
    format!("[{}]", v.join(","))
}

fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "null".into()
    }
}

pub(crate) fn json_report(r: &Report) -> String {
    let errors: Vec<String> = r.errors.iter().map(|e| format!("{e:?}")).collect();
    format!(
        "{{\"load_s\":{},\"searchable_s\":{},\"graph_built_s\":{},\"first_knn_ms\":{},\
         \"used_memory_mb\":{},\"rss_start_mb\":{},\"rss_mb\":{},\"vector_index_sz_mb\":{},\"knn\":{},\"filtered\":{},\
         \"vset_load_s\":{},\"vset_memory_mb\":{},\"vset_rss_mb\":{},\"vsim\":{},\"errors\":[{}]}}",
        json_num(r.load_s),
        json_num(r.searchable_s),
        json_num(r.graph_s),
        json_num(r.first_knn_ms),
        json_num(r.used_mb),
        json_num(r.rss_start_mb),
        json_num(r.rss_mb),
        json_num(r.vector_index_mb),
        json_points(&r.knn),
        json_filtered(&r.filtered),
        json_num(r.vset_load_s),
        json_num(r.vset_mem_mb),
        json_num(r.vset_rss_mb),
        json_points(&r.vsim),
        errors.join(",")
    )
}
