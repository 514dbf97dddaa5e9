"""A tune session (`tune.session.Session` of `tune.trials.Trial`) as a table, text and a
plot, and the words of each trial's result the JSON document (`tune.document`) carries.
Renders; decides nothing.

The figures come from `tune.decide` (medians, quartiles, speed-up intervals) over the
samples `tune.trials` measured, through the trial's `step_spread`/`throughput_spread`;
the regime of each trial is what `explain` says of its profiled steps. The table is a
`report.tables` one (rich), the plot uses the `report.plotting` set-up.
"""

from __future__ import annotations

from ..formatting.units import fmt_us
from .plotting import DPI
from .tables import fit_table, table_text, text_table

HEADERS = ["#", "trial", "stage", "step time", "throughput", "speed-up (95% CI)", "result",
           "regime"]  # fmt: skip


def headers(session) -> list[str]:
    """`HEADERS` with the throughput column named by its unit (`samples/s`)."""
    return [unit(session) if h == "throughput" else h for h in HEADERS]


def unit(session) -> str:
    """`samples/s` when every trial knows its batch, else `steps/s`."""
    ok = [t for t in session.trials if t.ok]
    return "samples/s" if ok and all(t.samples_per_step for t in ok) else "steps/s"


#: columns left out first when the table is wider than the terminal
DROP_FIRST = ("stage", "step time", "regime")


def table(session, width: int | None = None) -> tuple[str, str | None]:
    """(the trial table as text, note): every column (tune.txt) when `width` is None,
    else columns left out in `DROP_FIRST` order to fit `width`, the note naming them."""
    if width is None:
        return table_text(text_table(headers(session), rows(session))), None
    fitted, note = fit_table(headers(session), rows(session), width, DROP_FIRST)
    return table_text(fitted, width), note


def rate(x: float) -> str:
    """A rate with 3 significant digits and an SI prefix: `60.6k`, `1.25M`, `812`."""
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{prefix}"
    return f"{x:.3g}"


def outcome(t, best: str | None) -> str:
    if t.error:
        return "OOM" if t.oom else "failed"
    if t.stage == "baseline":
        return "reference"
    if t.stage in ("baseline again", "reference again"):
        return "reference again"
    mark = " (best)" if t.label == best else ""
    if t.speed is None or t.speed.low is None:
        return "too few blocks"
    if t.judgement is not None and t.judgement.fault:
        return "measurement fault" if t.judgement.after is not None else "not judged"
    if t.accepted:
        return "accepted" + mark
    return "slower" if t.speed.worse else "within noise"


def speed_text(t) -> str:
    s = t.speed_vs_baseline
    if s is None:
        return "1" if t.stage == "baseline" and t.ok else "-"
    if t.judgement is not None and t.judgement.after is not None and t.reference == "baseline":
        j = t.judgement  # the pooled figure, then against the run before and after
        return (
            f"{s.ratio:.2f}x ({s.low:.2f}-{s.high:.2f}; {j.before.ratio:.2f}/{j.after.ratio:.2f})"
        )
    if s.low is None:
        return f"{s.ratio:.2f}x"
    return f"{s.ratio:.2f}x ({s.low:.2f}-{s.high:.2f})"


def rows(session) -> list[list[str]]:
    out = []
    for t in session.trials:
        if t.ok:
            step, thr = t.step_spread(), t.throughput_spread()
            step_text = f"{fmt_us(step.median)} ±{fmt_us(step.iqr / 2)}"
            thr_text = f"{rate(thr.median)} ±{rate(thr.iqr / 2)}"  # unit: headers()
        else:
            step_text = thr_text = "-"
        result = outcome(t, session.best)
        if t.error:
            result += f": {t.error}"
        out.append([str(t.index), t.label, t.stage, step_text, thr_text, speed_text(t), result,
                    t.regime or "-"])  # fmt: skip
    return out


def reasons(session) -> list[str]:
    """Why each knob was tried or not, one line each."""
    lines = [f"tried {p.name} = {', '.join(map(str, p.values))}: {p.why}" for p in session.plans]
    lines += [f"not tried {name}: {why}" for name, why in session.skipped]
    return lines


def best_line(session) -> str:
    best = session.trial(session.best) if session.best else None
    if best is None:
        faults = [t for t in session.trials if t.judgement is not None and t.judgement.fault]
        why = "measurement faults, and none beat the noise" if faults else "none beat the noise"
        return f"best configuration: the baseline (no change was accepted: {why})"
    s = best.speed_vs_baseline
    return (
        f"best configuration: {best.label}: {s.ratio:.2f}x the baseline's {unit(session)} "
        f"(95% CI {s.low:.2f}-{s.high:.2f})"
    )


def to_text(session, table: str, diff_conclusion: str | None) -> str:
    """The whole session as plain text (`table` is the rendered table)."""
    t = session.timing
    lines = [
        f"tune {session.target.name}: {len(session.trials)} trials in {session.seconds:.0f} s"
        + (" (interrupted: finished trials only)" if session.interrupted else ""),
        f"each trial: {t.warmup} warm-up steps (untimed: compilation happens there), then "
        f"{t.blocks} blocks timed, each of at least {t.block_steps} steps and "
        f"{t.min_block_s * 1e3:g} ms (step time and throughput: median ± half the "
        "interquartile range over blocks), then 4 profiled steps for the regime",
        "each trial runs between two runs of its reference (baseline, trial, baseline, ...); "
        "speed-up: over the baseline runs around it (against the run before / after)",
        f"rule: {session.rule}; result over the trial's reference",
        *reasons(session),
        "",
        table,
        "",
        *[f"not run {label}: {why}" for label, why in session.not_run],
        *session.notes,
        best_line(session),
    ]
    if diff_conclusion:
        lines += ["", "diff baseline -> best: " + diff_conclusion]
    return "\n".join(lines).rstrip() + "\n"


def figure(plt, session):
    """Throughput per trial (median, quartile whiskers), the baseline's band shaded."""
    ok = [t for t in session.trials if t.ok]
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.45 * max(len(ok), 1)), dpi=DPI)
    base = session.baseline
    if base is not None and base.ok:
        b = base.throughput_spread()
        ax.axvspan(b.q1, b.q3, color="0.88", zorder=0, label="baseline IQR")
    for y, t in enumerate(reversed(ok)):
        s = t.throughput_spread()
        color = "tab:green" if t.accepted else ("tab:blue" if t.stage == "baseline" else "0.45")
        if t.label == session.best:
            color = "tab:red"
        ax.errorbar(s.median, y, xerr=[[s.median - s.q1], [s.q3 - s.median]], fmt="o",
                    color=color, capsize=3)  # fmt: skip
    ax.set_yticks(range(len(ok)))
    ax.set_yticklabels([f"#{t.index} {t.label}"[:40] for t in reversed(ok)], fontsize=8)
    ax.set_xlabel(f"throughput ({unit(session)}): median and quartiles over timed blocks")
    ax.set_title(f"tune {session.target.name}: green accepted, red best", fontsize=9)
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
