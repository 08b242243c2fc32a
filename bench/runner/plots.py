"""PNG plots from the unfiltered samples: every repetition is a dot, the line
or bar marker is the median. Groups whose rows vary in threads get one panel
per other parameter combination (e.g. per size) with threads on the x axis;
other groups get dots per row label."""

import os
import statistics

from .report import Table, higher_is_better, unit_of


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _label(d, keys):
    return " ".join("%s=%s" % (k, d[k]) for k in keys if k in d) or "all"


def wants_log_axis(values):
    """Values that span more than ~1.5 decades (numa_alloc_onnode's 140,000 ns
    next to nodal's 7 ns) get a log axis; on a linear one the small values
    are flattened onto zero. Zero or negative values keep the linear axis."""
    return bool(values) and min(values) > 0 and max(values) / min(values) > 30


def axis_label(metric, log_axis=False):
    """The y axis: what is measured, in which unit, which way is better."""
    unit = unit_of(metric)
    return "%s%s\n%s is better%s" % (metric, " (%s)" % unit if unit else "",
                                      "higher" if higher_is_better(metric) else "lower",
                                      ", log scale" if log_axis else "")


def plot_table(t, path, footer):
    plt = _plt()
    by_threads = "threads" in t.cols
    other = [k for k in t.cols if k != "threads"]
    panels = {}
    for row in t.rows:
        d = dict(row)
        panels.setdefault(_label(d, other) if by_threads else "all", []).append(row)
    n = len(panels)
    ncols = min(n, 4)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(4.2 * ncols, 7.5), 3.4 * nrows + 0.6),
                             squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (title, rows) in zip(axes.flat, panels.items()):
        for i, v in enumerate(t.variants):
            c = colors[i % len(colors)]
            if by_threads:
                xs, meds = [], []
                for row in rows:
                    x = float(dict(row)["threads"])
                    vals = t.values.get(row, {}).get(v.name, [])
                    ax.scatter([x] * len(vals), vals, s=9, color=c, alpha=0.45)
                    if vals:
                        xs.append(x)
                        meds.append(statistics.median(vals))
                ax.plot(xs, meds, "-o", color=c, ms=3, lw=1.2, label=v.name)
                ax.set_xscale("log", base=2)
                ax.set_xticks(sorted({float(dict(r)["threads"]) for r in rows}))
                ax.get_xaxis().set_major_formatter(plt.FuncFormatter(lambda x, _: "%g" % x))
                ax.set_xlabel("threads")
            else:
                for j, row in enumerate(rows):
                    vals = t.values.get(row, {}).get(v.name, [])
                    x = j + (i - (len(t.variants) - 1) / 2) * 0.8 / max(1, len(t.variants))
                    ax.scatter([x] * len(vals), vals, s=9, color=c, alpha=0.45)
                    if vals:
                        ax.plot([x - 0.05, x + 0.05], [statistics.median(vals)] * 2, color=c, lw=2.5,
                                label=v.name if j == 0 else None)
                ax.set_xticks(range(len(rows)))
                ax.set_xticklabels([_label(dict(r), t.cols) for r in rows], rotation=20, fontsize=7)
        ax.set_title(title, fontsize=9)
        log_axis = wants_log_axis([x for r in rows for xs in t.values.get(r, {}).values() for x in xs])
        if log_axis:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.set_ylabel(axis_label(t.metric, log_axis), fontsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("%s: %s (every repetition shown; line = median)" % (t.group, t.metric), fontsize=10)
    fig.text(0.01, 0.005, footer, fontsize=6, color="gray")
    fig.tight_layout(rect=(0, 0.02, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_all(samples, variants_by_group, groups, outdir, footer, log):
    made = []
    try:
        _plt()
    except ImportError:
        log("warning: matplotlib missing (apt-get install python3-matplotlib); no plots")
        return made
    for group, (_, metrics, _) in groups.items():
        variants = variants_by_group.get(group)
        if not variants:
            continue
        for metric in metrics:
            t = Table(samples, group, metric, variants)
            if not t.rows or metric == "misplaced":
                continue
            path = os.path.join(outdir, "%s-%s.png" % (group, metric))
            plot_table(t, path, footer)
            made.append(os.path.basename(path))
    return made
