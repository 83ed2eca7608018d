//! search_compare's output: the side-by-side tables with their ratios, and the same
//! figures as JSON (`--json`).

use pion_benches::knn::{matched, Point};

use super::{Args, Data, FilterPoint, Report, BATCH, FILTERS, RECALL_FLOOR};

fn ratio(p: f64, o: f64) -> String {
    if o > 0.0 && p.is_finite() && o.is_finite() {
        format!("{:.2}", p / o)
    } else {
        "-".into()
    }
}

fn sweep_table(title: &str, at: usize, o: &[Point], p: &[Point]) {
    println!("\n{title}");
    let (ro, rp) = (format!("oracle R@{at}"), format!("pion R@{at}"));
    println!(
        "{:>5} {ro:>12} {:>10} {rp:>12} {:>10} {:>9}",
        "ef", "oracle QPS", "pion QPS", "QPS ratio"
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
        println!("{ef:>5} {or:>12} {oq:>10} {pr:>12} {pq:>10} {ra:>9}");
    }
    println!("at matched recall (oracle points with R@{at} >= {RECALL_FLOOR}):");
    let m = matched(o, p, RECALL_FLOOR);
    if m.is_empty() {
        println!("  none: the oracle never reached {RECALL_FLOOR}");
    }
    matched_lines("", "ef", at, &m);
}

/// One line per matched pair: the oracle point, the Pion point paired with it and
/// their QPS ratio; each line starts with `label`.
fn matched_lines(label: &str, knob: &str, at: usize, pairs: &[(Point, Option<Point>)]) {
    for (x, y) in pairs {
        match y {
            Some(y) => println!(
                "  {label}oracle {knob} {} R@{at} {:.4} {:.0} QPS ~ pion {knob} {} R@{at} {:.4} {:.0} QPS: ratio {}",
                x.ef,
                x.recall,
                x.qps,
                y.ef,
                y.recall,
                y.qps,
                ratio(y.qps, x.qps)
            ),
            None => println!(
                "  {label}oracle {knob} {} R@{at} {:.4} {:.0} QPS ~ pion never reaches that recall",
                x.ef, x.recall, x.qps
            ),
        }
    }
}

pub(crate) fn print_tables(a: &Args, d: &Data, o: &Report, p: &Report) {
    println!(
        "search_compare: {} docs x {} dims (COSINE, HNSW M 16, EF_CONSTRUCTION 200), {} \
         queries; client: {} connections, load batches of {BATCH}, query depth {}, >= {} s \
         per point; oracle: 1 thread{}, pion --threads {}{}\nCPU: {}",
        a.n,
        d.dim,
        d.queries.len() / d.dim,
        a.conns,
        a.depth,
        a.secs,
        if a.vsim_nothread {
            " (VSIM NOTHREAD)"
        } else {
            " (VSIM on the module's threads)"
        },
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
        10,
        &o.knn,
        &p.knn,
    );
    if !o.knn100.is_empty() || !p.knn100.is_empty() {
        sweep_table(
            &format!("KNN 100, LIMIT 0 100, EF_RUNTIME sweep (recall vs {truth})"),
            100,
            &o.knn100,
            &p.knn100,
        );
    }
    filtered_tables(
        &format!(
            "Filtered KNN, EF_RUNTIME {:?} (recall vs brute force over the passing rows)",
            a.filter_efs
        ),
        (&a.filter_efs, "ef"),
        &o.filtered,
        &p.filtered,
        |f| f.query,
    );
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
        10,
        &o.vsim,
        &p.vsim,
    );
    filtered_tables(
        &format!(
            "VSIM COUNT 10 FILTER, EF {:?} (recall vs brute force over the set's passing elements)",
            a.filter_efs
        ),
        (&a.filter_efs, "ef"),
        &o.vsim_filtered,
        &p.vsim_filtered,
        |f| f.vsim,
    );
    if !a.filter_efforts.is_empty() {
        filtered_tables(
            &format!(
                "VSIM COUNT 10 FILTER, EF {}, FILTER-EF {:?}",
                a.filter_efs.first().copied().unwrap_or(40),
                a.filter_efforts
            ),
            (&a.filter_efforts, "f-ef"),
            &o.vsim_effort,
            &p.vsim_effort,
            |f| f.vsim,
        );
    }
    for (name, r) in [("oracle", o), ("pion", p)] {
        for e in &r.errors {
            println!("{name} error: {e}");
        }
    }
}

/// One filtered sweep per `FILTERS` entry, side by side, then the ratios at matched
/// recall; `expr` gives the filter as that sweep's queries wrote it.
fn filtered_tables(
    title: &str,
    (knobs, knob): (&[usize], &str),
    o: &[Vec<Point>],
    p: &[Vec<Point>],
    expr: fn(&FilterPoint) -> &'static str,
) {
    println!("\n{title}");
    println!(
        "{:>6} {:<24} {:>5} {:>11} {:>10} {:>10} {:>10} {:>9}",
        "docs", "filter", knob, "oracle R@10", "oracle QPS", "pion R@10", "pion QPS", "QPS ratio"
    );
    let none = Vec::new();
    // A side that ran no filtered point at all was left out by `--only`.
    let cell = |x: Option<&Point>, ran: bool| {
        let missing = if ran { "failed" } else { "-" };
        x.map_or((missing.to_string(), "-".to_string()), |x| {
            (format!("{:.4}", x.recall), format!("{:.0}", x.qps))
        })
    };
    for (i, f) in FILTERS.iter().enumerate() {
        let (os, ps) = (o.get(i).unwrap_or(&none), p.get(i).unwrap_or(&none));
        for &ef in knobs {
            let (x, y) = (
                os.iter().find(|x| x.ef == ef),
                ps.iter().find(|x| x.ef == ef),
            );
            let (xr, xq) = cell(x, !o.is_empty());
            let (yr, yq) = cell(y, !p.is_empty());
            let r = match (x, y) {
                (Some(x), Some(y)) => ratio(y.qps, x.qps),
                _ => "-".to_string(),
            };
            println!(
                "{:>6} {:<24} {ef:>5} {xr:>11} {xq:>10} {yr:>10} {yq:>10} {r:>9}",
                f.name,
                expr(f)
            );
        }
    }
    println!("at matched recall (each oracle point, the pion point of the lowest recall at or above it):");
    for (i, f) in FILTERS.iter().enumerate() {
        let (os, ps) = (o.get(i).unwrap_or(&none), p.get(i).unwrap_or(&none));
        matched_lines(&format!("{:>4}: ", f.name), knob, 10, &matched(os, ps, 0.0));
    }
}

fn json_points(ps: &[Point], at: usize) -> String {
    let v: Vec<String> = ps
        .iter()
        .map(|p| {
            format!(
                "{{\"ef\":{},\"recall{at}\":{:.4},\"qps\":{:.1}}}",
                p.ef, p.recall, p.qps
            )
        })
        .collect();
    format!("[{}]", v.join(","))
}

fn json_filtered(ps: &[Vec<Point>]) -> String {
    let v: Vec<String> = FILTERS
        .iter()
        .zip(ps)
        .map(|(f, p)| {
            format!(
                "{{\"docs\":{:?},\"points\":{}}}",
                f.name,
                json_points(p, 10)
            )
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
         \"used_memory_mb\":{},\"rss_start_mb\":{},\"rss_mb\":{},\"vector_index_sz_mb\":{},\"knn\":{},\"knn100\":{},\"filtered\":{},\
         \"vset_load_s\":{},\"vset_memory_mb\":{},\"vset_rss_mb\":{},\"vsim\":{},\"vsim_filtered\":{},\"vsim_filter_effort\":{},\"errors\":[{}]}}",
        json_num(r.load_s),
        json_num(r.searchable_s),
        json_num(r.graph_s),
        json_num(r.first_knn_ms),
        json_num(r.used_mb),
        json_num(r.rss_start_mb),
        json_num(r.rss_mb),
        json_num(r.vector_index_mb),
        json_points(&r.knn, 10),
        json_points(&r.knn100, 100),
        json_filtered(&r.filtered),
        json_num(r.vset_load_s),
        json_num(r.vset_mem_mb),
        json_num(r.vset_rss_mb),
        json_points(&r.vsim, 10),
        json_filtered(&r.vsim_filtered),
        json_filtered(&r.vsim_effort),
        errors.join(",")
    )
}
