"""The results: a markdown table (results.md), the raw numbers (results.json) and PNG plots."""

import json
import math
import os

from realprograms import IMPLS, speedups
from roofline import BANDWIDTH_TARGET
from roofline import IMPLS as ROOF_IMPLS
from roofline import NAMES as ROOF_NAMES

# Datasheet arithmetic rates (dense, without tensor cores) of the H100/H200 SXM, in FLOP/s:
# leads for the floor, next to the copy bandwidth measured in the same run.
PEAK_FLOPS = {"float32": 67e12, "float64": 34e12}
GEOMEAN_VS_EAGER, GEOMEAN_VS_COMPILE = 1.5, 1.0
# The host-overhead rows the cached-call target compares (names as overheads.py gives them).
HOST_PARIR, HOST_TORCH = "parir add(a, b, c): torch.add's work", "torch.add(a, b, out=c)"


def _ms(r):
    return f"{r['median_ms']:.3f}" if r and "median_ms" in r else _status_cell(r)


def _status_cell(r):
    if not r:
        return "-"
    s = r.get("status", "-")
    return s.split(":")[0] if s != "ok" else "-"


def _ratio(a, b):
    if a and b and "median_ms" in a and "median_ms" in b:
        return b["median_ms"] / a["median_ms"]
    return None


def _fmt_ratio(x):
    return f"{x:.2f}x" if x else "-"


def floor_ms(cost, dtype, copy_gbps):
    t_mem = cost["bytes"] / (copy_gbps * 1e9)
    t_flop = cost["flops"] / PEAK_FLOPS[dtype]
    return max(t_mem, t_flop) * 1e3, ("memory" if t_mem >= t_flop else "compute")


def targets(results):
    """Every target of the requirement as (target, measured, passed) rows."""
    rows = []
    for r in results.get("roofline", []):
        for desc, ok in r.get("targets", []):
            if "copy" in desc:
                measured = f"{r['parir_GBps']:.0f} GB/s = {r['fraction_of_copy']:.0%} of copy"
            elif "Triton" in desc:
                measured = (f"{r['parir_ms']:.3f} ms vs {r['best_alt']} {r['best_alt_ms']:.3f} ms "
                            f"= {r['vs_best']:.2f}x")
            elif "torch" in desc:
                measured = f"{r.get('parir_ms', 0):.3f} ms vs {r.get('torch_ms', 0):.3f} ms"
            else:
                measured = r.get("status", "")
            rows.append((f"roofline {r['kernel']}: {desc}", measured, ok))
    sp = results.get("speedups", {})
    for (dt, other), g in sorted(sp.items()):
        need = GEOMEAN_VS_EAGER if other == "torch eager" else GEOMEAN_VS_COMPILE
        gm = g["geomean"]
        rows.append((f"real programs {dt}: geomean speed-up vs {other} >= {need}x",
                     f"{gm:.2f}x over {g['n']} of {g['of']} programs" if gm else
                     "no program timed on both sides", bool(gm and gm >= need)))
    over = results.get("overheads", {})
    host = over.get("host overhead")
    if isinstance(host, list):
        by = {r["name"]: r for r in host}
        p, t = by.get(HOST_PARIR, {}), by.get(HOST_TORCH, {})
        if "us_per_call" in p and "us_per_call" in t:
            p, t = p["us_per_call"], t["us_per_call"]
            rows.append(("cached-call overhead <= 1.5x torch.add's",
                         f"{p:.2f} us vs {t:.2f} us = {p / t:.2f}x", p / t <= 1.5))
        else:
            why = p.get("status") if p.get("status", "ok") != "ok" else t.get("status", "missing")
            rows.append(("cached-call overhead <= 1.5x torch.add's", why, False))
    elif isinstance(host, dict):
        rows.append(("cached-call overhead <= 1.5x torch.add's", host.get("status", ""), False))
    lat = over.get("compile latency")
    if isinstance(lat, dict) and "cold_ms" in lat:
        rows.append(("cold compile <= 150 ms", f"{lat['cold_ms']:.1f} ms", lat["cold_ms"] <= 150))
        rows.append(("warm compile <= 5 ms", f"{lat['warm_ms']:.2f} ms", lat["warm_ms"] <= 5))
    elif isinstance(lat, dict):
        rows.append(("cold compile <= 150 ms, warm <= 5 ms", lat.get("status", ""), False))
    for name, sec in results.get("sections", {}).items():
        if sec["status"] != "ok":
            rows.append((f"section {name} runs to the end", sec["status"], False))
    return rows


def markdown(results):
    L = [f"# parir-torch benchmarks on {results['device']}", "",
         f"torch {results['torch']}, parir-torch {results['parir']}, {results['date']}; "
         f"command `{results['command']}`; {results['elapsed_s']:.0f} s.", ""]
    if "copy_GBps" in results:
        L += [f"Device-to-device copy bandwidth measured in this run: **{results['copy_GBps']:.0f} "
              f"GB/s** (bytes read + written). Floors below: max(bytes / that, flops / datasheet "
              f"rate: {PEAK_FLOPS['float32'] / 1e12:.0f} TFLOP/s float32, "
              f"{PEAK_FLOPS['float64'] / 1e12:.0f} TFLOP/s float64).", ""]
    secs = results.get("sections")
    if secs:
        L += ["Sections (each in its own process): " + ", ".join(
            f"{name} {sec['wall_s']:.0f} s" + ("" if sec["status"] == "ok" else " (FAILED)")
            + (f" (went on in a new process {len(sec['restarts'])} time(s))"
               if sec.get("restarts") else "")
            for name, sec in secs.items()) + ".", ""]
    t = targets(results)
    if t:
        L += ["## Targets", "", "| target | measured | |", "|---|---|---|"]
        L += [f"| {d} | {m} | {'PASS' if ok else 'MISS'} |" for d, m, ok in t]
        L.append("")
    roof = results.get("roofline")
    if roof:
        methods = sorted({r["timing_method"] for r in roof if "timing_method" in r})
        L += ["## Roofline (float32)", "",
              "Times in ms (median" + (f"; {', '.join(methods)}" if methods else "") + "). "
              "torch.compile compiles the torch eager version (default mode); Triton kernels "
              "are written as Triton's tutorials write them (triton_kernels.py). parir/best: the "
              "faster of Triton and torch.compile's time over parir's (above 1.00x parir is "
              "faster). parir % of copy: parir's bandwidth over the copy bandwidth.", "",
              "| kernel | shape | parir ms | torch ms | torch.compile ms | Triton ms | parir/best "
              "| parir % of copy | targets |", "|---|---|---|---|---|---|---|---|---|"]
        for r in roof:
            tg = ", ".join(f"{'PASS' if ok else 'MISS'} {d}" for d, ok in r.get("targets", []))
            st = "" if r.get("status") == "ok" else f" ({r.get('status')})"
            best = f"{r['vs_best']:.2f}x ({r['best_alt']})" if "vs_best" in r else "-"
            copy = f"{r['fraction_of_copy']:.0%}" if "fraction_of_copy" in r else "-"
            L.append(f"| {r['kernel']}{st} | {r.get('shape', '')} | "
                     + " | ".join(_roof_ms(r, w) for w in ROOF_IMPLS)
                     + f" | {best} | {copy} | {tg} |")
        L.append("")
    progs = results.get("real_programs")
    if progs:
        L += ["## Real programs (npbench-derived)", "",
              "Times in ms (median). Speed-up = other's time / parir's time. Floor: see above. "
              "Error: worst ||out - ref|| / ||ref|| of parir's outputs against the float64 "
              "reference. Sizes: the size column (npbench preset L as recalled; see NOTES.md).", ""]
        for dt in ("float32", "float64"):
            rows = [r for r in progs if r["dtype"] == dt]
            if not rows:
                continue
            L += [f"### {dt}", "",
                  "| program | size | parir | torch eager | torch.compile | vs eager | vs compile "
                  "| floor | parir / floor | parir error |", "|---|---|---|---|---|---|---|---|---|---|"]
            for r in rows:
                im = r["impls"]
                p = im.get("parir")
                fl, bound = (floor_ms(r["cost"], dt, results["copy_GBps"])
                             if "cost" in r and "copy_GBps" in results else (None, ""))
                size = ", ".join(f"{k}={v}" for k, v in r["size"].items())
                L.append(f"| {r['program']} | {size} | {_ms(p)} | {_ms(im.get('torch eager'))} | "
                         f"{_ms(im.get('torch.compile'))} | "
                         f"{_fmt_ratio(_ratio(p, im.get('torch eager')))} | "
                         f"{_fmt_ratio(_ratio(p, im.get('torch.compile')))} | "
                         + (f"{fl:.3f} ({bound}) | " if fl else "- | ")
                         + (f"{p['median_ms'] / fl:.1f}x | " if fl and p and "median_ms" in p else "- | ")
                         + (f"{p['rel_err']:.1e} |" if p and "rel_err" in p else "- |"))
            L.append("")
        L += ["| geometric mean of parir's speed-up | over eager | over torch.compile |",
              "|---|---|---|"]
        sp = results.get("speedups", {})
        for dt in ("float32", "float64"):
            e, c = sp.get((dt, "torch eager")), sp.get((dt, "torch.compile"))
            if e or c:
                L.append(f"| {dt} | {_gm(e)} | {_gm(c)} |")
        L.append("")
    over = results.get("overheads", {})
    host = over.get("host overhead")
    if isinstance(host, list):
        L += ["## Per-call host overhead", "",
              f"Back-to-back calls on {1024} floats, wall time per call (the GPU is not the "
              "bottleneck; method in overheads.py).", "", "| launcher | us per call |", "|---|---|"]
        for r in host:
            v = f"{r['us_per_call']:.2f}" if "us_per_call" in r else r["status"]
            L.append(f"| {r['name']} | {v} |")
        L.append("")
    lat = over.get("compile latency")
    if isinstance(lat, dict):
        L += ["## Compile latency of a single-kernel function (first call, through its sync)", ""]
        if "cold_ms" in lat:
            L += ["| cache | ms |", "|---|---|",
                  f"| cold: new process, empty disk cache | {lat['cold_ms']:.1f} |",
                  f"| warm: new process, disk cache filled | {lat['warm_ms']:.2f} |",
                  f"| hot: same process, in-memory cache | {lat['hot_ms']:.3f} |", ""]
        else:
            L += [lat.get("status", ""), ""]
    model = over.get("model step")
    if isinstance(model, list):
        shape = next((r["shape"] for r in model if "shape" in r), "")
        L += [f"## Model step ({shape}: Linear, GELU, Linear, residual, RMSNorm; no grad)",
              "", "| variant | ms per step | graph breaks | error vs float64 |", "|---|---|---|---|"]
        for r in model:
            v = f"{r['median_ms']:.4f}" if "median_ms" in r else r.get("status", "")
            L.append(f"| {r['name']} | {v} | {r.get('graph_breaks', '-')} | "
                     f"{r['rel_err']:.1e} |" if "rel_err" in r else
                     f"| {r['name']} | {v} | {r.get('graph_breaks', '-')} | - |")
        L.append("")
    elif isinstance(model, dict):
        L += ["## Model step", "", model.get("status", ""), ""]
    failures = _failures(results)
    if failures:
        L += ["## Failures, wrong results and skips", ""] + [f"* {f}" for f in failures] + [""]
    if results.get("plots"):
        L += ["## Plots", ""] + [f"![{os.path.splitext(f)[0]}]({f})" for f in results["plots"]] + [""]
    if results.get("plot_note"):
        L += [results["plot_note"], ""]
    return "\n".join(L)


def _roof_ms(row, which):
    """A roofline implementation's median ms, or the first word of why there is none."""
    if f"{which}_ms" in row:
        return f"{row[f'{which}_ms']:.3f}"
    return row.get(f"{which}_status", "-").split(":")[0]


def _gm(g):
    return f"{g['geomean']:.2f}x ({g['n']} of {g['of']})" if g and g["geomean"] else "-"


def _failures(results):
    out = []
    for r in results.get("roofline", []):
        for k in ("status",) + tuple(f"{w}_status" for w in ROOF_IMPLS):
            if r.get(k, "ok") != "ok" and not r[k].startswith("unavailable"):
                which = k.split("_")[0]
                out.append(f"roofline {r['kernel']} ({ROOF_NAMES.get(which, which)}): {r[k]}")
    for r in results.get("real_programs", []):
        for impl in IMPLS:
            s = r["impls"].get(impl, {}).get("status", "missing")
            if s != "ok":
                out.append(f"{r['program']} {r['dtype']} {impl}: {s}")
    for name, sec in results.get("sections", {}).items():
        for status in sec.get("restarts", []):
            out.append(f"section {name}: its process ended early ({status}); the rest ran in a "
                       f"new process")
    for name, part in results.get("overheads", {}).items():
        rows = part if isinstance(part, list) else [part]
        for r in rows:
            if r.get("status", "ok") != "ok":
                out.append(f"{name} {r.get('name', '')}: {r['status']}")
    return out


def plots(results, out_dir):
    """PNG plots; returns the files written, or a note why there are none."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return [], f"No plots: matplotlib is not importable ({e})."
    files = []
    roof = [r for r in results.get("roofline", []) if "parir_GBps" in r]
    if roof:
        fig, ax = plt.subplots(figsize=(11, 4))
        xs = range(len(roof))
        width = 0.8 / len(ROOF_IMPLS)
        for k, w in enumerate(ROOF_IMPLS):
            ax.bar([x + (k - (len(ROOF_IMPLS) - 1) / 2) * width for x in xs],
                   [r.get(f"{w}_GBps", 0) for r in roof], width, label=ROOF_NAMES[w])
        ax.axhline(results["copy_GBps"], color="k", ls="--", label="copy bandwidth")
        ax.axhline(BANDWIDTH_TARGET * results["copy_GBps"], color="gray", ls=":",
                   label=f"{BANDWIDTH_TARGET:.0%} of copy")
        ax.set_xticks(list(xs), [r["kernel"] for r in roof], rotation=20, ha="right")
        ax.set_ylabel("GB/s")
        ax.set_title(f"Roofline kernels, float32, {results['device']}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        files.append(_save(fig, out_dir, "roofline.png"))
    progs = results.get("real_programs", [])
    for dt in ("float32", "float64"):
        rows = [r for r in progs if r["dtype"] == dt and "median_ms" in r["impls"].get("parir", {})]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(11, 4))
        xs = range(len(rows))
        for off, other in ((-0.2, "torch eager"), (0.2, "torch.compile")):
            ax.bar([x + off for x in xs], [_ratio(r["impls"]["parir"], r["impls"].get(other)) or 0
                                           for r in rows], 0.4, label=f"vs {other}")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_yscale("log")
        ax.set_xticks(list(xs), [r["program"] for r in rows], rotation=35, ha="right")
        ax.set_ylabel("parir speed-up (other time / parir time)")
        ax.set_title(f"Real programs, {dt}, {results['device']}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        files.append(_save(fig, out_dir, f"real_programs_{dt}.png"))
    host = results.get("overheads", {}).get("host overhead")
    if isinstance(host, list) and any("us_per_call" in r for r in host):
        rows = [r for r in host if "us_per_call" in r]
        fig, ax = plt.subplots(figsize=(9, 4))
        ax.barh([r["name"] for r in rows], [r["us_per_call"] for r in rows])
        ax.set_xlabel("us per call (host)")
        ax.set_title("Per-call host overhead")
        fig.tight_layout()
        files.append(_save(fig, out_dir, "host_overhead.png"))
    return files, ""


def _save(fig, out_dir, name):
    import matplotlib.pyplot as plt

    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write(results, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    results["speedups"] = speedups(results.get("real_programs", []))
    files, note = plots(results, out_dir)
    results["plots"], results["plot_note"] = [os.path.basename(f) for f in files], note
    text = markdown(results)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(text)
    serializable = dict(results, speedups={f"{dt} vs {o}": v
                                           for (dt, o), v in results["speedups"].items()})
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(serializable, f, indent=1, default=_json_default)
    return text


def _json_default(o):
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    return str(o)
