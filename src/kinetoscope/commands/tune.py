"""`kinetoscope tune WORKLOAD|script.py`: profile, choose knobs from the verdict, measure
each in a subprocess, keep what beats the noise, combine, report.

Options after the known ones set the workload's fixed settings (`--batch 8
--num-workers 0`, `--dtype fp32`, `--compile default`) or, after `--`, are the
script's own arguments. Everything goes to a folder of this session's own,
`OUT/tune/<name>` (`_2`, ... when taken; `--force` reuses it): each trial's
trace and table, `tune.txt`, `tune.json`, `tune.png`/`.svg` and the
baseline-to-best `diff.txt`. The user's files are only read.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..errors import UsageError


def register(app: typer.Typer) -> None:
    app.command(
        "tune",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(tune_command)


def tune_command(
    ctx: typer.Context,
    target: str = typer.Argument(
        ..., metavar="WORKLOAD|SCRIPT.py", help="Built-in workload or a script."
    ),
    knob: list[str] = typer.Option([], "--knob", help="NAME=V1,V2,... to try (repeatable); "
                                   "default: the knobs the baseline's verdict points at."),
    pass_as_arg: bool = typer.Option(False, "--pass-as-arg", help="Script: give knob values as "
                                     "--NAME VALUE arguments instead of kinetoscope.knob()."),
    trials: int | None = typer.Option(None, "--trials", min=1, help="At most this many trials "
                                      "after the baseline."),
    time_budget: float | None = typer.Option(None, "--time", min=1, help="Seconds for the whole "
                                             "session; no trial starts that would overrun it."),
    timeout: float = typer.Option(300, "--timeout", min=1, help="Seconds allowed per trial."),
    warmup: int = typer.Option(5, "--warmup", min=1, help="Untimed steps first in each trial."),
    blocks: int = typer.Option(10, "--blocks", min=3, help="Timed blocks per trial (samples)."),
    block_steps: int = typer.Option(5, "--block-steps", min=1, help="Fewest steps per timed "
                                    "block."),
    block_ms: float = typer.Option(100, "--block-ms", min=1, help="Shortest timed block: "
                                   "fast steps are grouped until a block lasts this long."),
    device: str = typer.Option("auto", "--device", help="auto, cuda or cpu."),
    step_on: str | None = typer.Option(None, "--step-on", help="Script: module:function whose "
                                       "calls are the steps (default optimizer.step())."),
    samples_per_step: float | None = typer.Option(None, "--samples-per-step", min=0,
                                                  help="Samples in one step, for samples/s "
                                                  "(default: the batch knob's value)."),
    memory_limit: float = typer.Option(0.9, "--memory-limit", min=0.05, max=1.0, help="GPU: "
                                       "share of device memory a larger batch may use."),
    out: Path = typer.Option(Path("traces"), "--out", help="Output folder."),
    force: bool = typer.Option(False, "--force", help="Reuse OUT/tune/<name> and replace its "
                               "files (default: a new <name>_2, ...)."),
    format: str = typer.Option("text", "--format", "-f", help="text or json (stdout)."),
) -> None:  # fmt: skip
    """Tune a workload or script: baseline, knobs from the verdict, trials, best setting."""
    from ..files.outputs import claim_folder, remove_empty_folders
    from ..tune.knobs import parse_knob
    from ..tune.session import Budget, Session, run_session
    from ..tune.trials import Timing

    if format not in ("text", "json"):
        raise UsageError(f"unknown format {format!r} (choose text or json)")
    if device not in ("auto", "cuda", "cpu"):
        raise UsageError(f"unknown device {device!r} (choose auto, cuda or cpu)")
    tgt = _target(target, list(ctx.args), device, step_on, pass_as_arg, samples_per_step)
    user_knobs = [parse_knob(k) for k in knob]
    if tgt.kind == "script" and not user_knobs:
        raise UsageError(
            "a script's knobs are its own: give --knob NAME=V1,V2,... "
            "(read with kinetoscope.knob(NAME, default) or --pass-as-arg)"
        )
    folder = claim_folder(out / "tune" / Path(target).stem, force)
    session = Session(tgt, Timing(warmup, blocks, block_steps, block_ms / 1e3), folder)
    try:
        with _progress_bar() as progress:
            run_session(session, user_knobs, Budget(trials, time_budget), timeout, force,
                        progress, memory_limit)  # fmt: skip
    except BaseException:  # a failed baseline or Ctrl-C before it finished: leave no empty folder
        remove_empty_folders([folder])
        raise
    _write_outputs(session, format, force)


def _target(target, extra, device, step_on, pass_as_arg, samples_per_step):
    from ..capture.workloads import WORKLOADS
    from ..tune.trials import Target

    if target.endswith(".py") or Path(target).is_file():
        if not Path(target).is_file():
            raise UsageError(f"{target}: no such script")
        args = extra[1:] if extra[:1] == ["--"] else extra
        return Target("script", target, {}, device, args, step_on, pass_as_arg, samples_per_step)
    if target not in WORKLOADS:
        raise UsageError(
            f"unknown workload {target!r}: choose one of {', '.join(WORKLOADS)} or give a script.py"
        )
    if step_on or pass_as_arg:
        raise UsageError("--step-on and --pass-as-arg apply to scripts, not built-in workloads")
    return Target("workload", target, _settings(extra), device, [], None, False, samples_per_step)


def _settings(extra: list[str]) -> dict:
    """`--batch 8 --num-workers 0 --pin-memory` -> {"batch": 8, "num_workers": 0, ...}."""
    from ..tune.knobs import literal

    settings, i = {}, 0
    while i < len(extra):
        token = extra[i]
        if not token.startswith("--") or token == "--":
            raise UsageError(f"{token!r}: workload settings are --NAME VALUE (e.g. --batch 8)")
        name, eq, value = token[2:].partition("=")
        if not eq:
            if i + 1 < len(extra) and not extra[i + 1].startswith("--"):
                value, i = extra[i + 1], i + 1
            else:
                value = "true"
        settings[name.replace("-", "_")] = None if name == "compile" and value == "off" else (
            literal(value) if name not in ("dtype", "compile") else value
        )  # fmt: skip
        i += 1
    return settings


def _progress_bar():
    """Trial k of N with elapsed and remaining time (`kinetoscope.progress`: a rich line
    on a terminal, one line per trial on a piped stderr; stdout stays clean for
    --format json)."""
    import contextlib

    from .. import progress

    @contextlib.contextmanager
    def running():
        done = [0]
        with progress.reporting():

            def update(label, planned):
                if planned is None:  # the baseline: what follows depends on its verdict
                    done[0] += label is None
                    if label is not None:
                        progress.stage(f"tune: trial 1: {label} (its verdict chooses what to try)")
                elif label is None:
                    done[0] += 1
                    progress.count(f"tune: trial {done[0]} of {planned} done", done[0], planned)
                else:
                    what = f"tune: trial {done[0] + 1} of {planned}: {label}"
                    progress.count(what, done[0], planned, line=True)

            yield update
            progress.pause()

    return running()


def _write_outputs(session, format: str, force: bool) -> None:
    from ..files.figures import save_figure
    from ..files.outputs import write_text
    from ..formatting.jsontext import dumps
    from ..report.console import output_width
    from ..report.plotting import pyplot
    from ..report.tune_render import figure, table, to_text
    from ..tune.document import session_document

    whole, _ = table(session)
    diff, conclusion = _diff(session, force)
    written = [Path(t.trace) for t in session.trials if t.trace] + [
        Path(t.table) for t in session.trials if t.table
    ]
    if diff:
        written.append(Path(diff["file"]))
    text = to_text(session, whole, conclusion)
    written.append(write_text(session.folder / "tune.txt", text, force=force))
    plt = pyplot("tune's plot")
    pictures = [session.folder / f"tune.{ext}" for ext in ("png", "svg")]
    written += [path for _, path in save_figure(plt, figure(plt, session), pictures, force)]
    json_path = session.folder / "tune.json"
    names = [str(p) for p in written] + [str(json_path)]
    document = dumps(session_document(session, diff, names), indent=2) + "\n"
    written.append(write_text(json_path, document, force=force))
    if session.interrupted:  # the CLI prints the one line (what was kept) and exits 130
        raise KeyboardInterrupt
    if format == "json":
        sys.stdout.write(document)
        return
    fitted, note = table(session, output_width())
    if note:  # the terminal gets columns that fit it; tune.txt keeps them all
        fitted += f"\n({note}; all of them are in {session.folder / 'tune.txt'})"
    sys.stdout.write(text.replace(whole, fitted, 1))
    for path in written:
        print(f"wrote {path}")


def _diff(session, force: bool):
    """(JSON part, conclusion) of `diff` baseline -> best, written to diff.txt."""
    from ..compare.conclusion import conclude
    from ..compare.diff import diff_runs
    from ..compare.runs import load_run
    from ..errors import KinetoscopeError
    from ..files.outputs import write_text
    from ..report.diff_render import to_text

    base = session.baseline
    best = session.trial(session.best) if session.best else None
    if best is None or not (base.trace and best.trace):
        return None, None
    try:
        d = diff_runs(load_run(base.trace), load_run(best.trace))
    except KinetoscopeError as exc:
        session.notes.append(f"diff baseline -> best failed: {exc}")
        return None, None
    path = write_text(session.folder / "diff.txt", to_text(d, width=100) + "\n", force=force)
    conclusion = conclude(d)
    return {"baseline": base.trace, "best": best.trace, "conclusion": conclusion,
            "file": str(path)}, conclusion  # fmt: skip
