"""The rules shared between two processes (`rules/two_cores.py`) give exactly what one
process gives, and every way the child can fail falls back to running its rules here."""

from __future__ import annotations

import os
import select
import time
from pathlib import Path

import pytest

import kinetoscope
from kinetoscope.rules import engine, two_cores
from kinetoscope.rules.base import Rule
from kinetoscope.rules.engine import RuleOutcome, run_rules

CORPUS = Path(__file__).resolve().parent.parent / "data" / "traces"
#: traces with device work, host-only work, compile regions, collectives and LLM passes
SHARED_TRACES = [
    "gpu/resnet50_dataloader_workers0.pt.trace.json.gz",
    "gpu/tracelens_torch_compile_triton__trace.json.gz",
    "cpu/cpu_only_rank34.pt.trace.json.gz",
]

#: the longest a test's child waits, at its first rule, for this process to take one
CHILD_WAIT_S = 60.0

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _rules(count: int, per_module: int = 1) -> list[Rule]:
    """Fake rules in `count // per_module` modules (a rule's module is its check's)."""
    rules = []
    for i in range(count):

        def check(ctx):  # never called: `run_shared` calls the check given to it
            raise AssertionError

        check.__module__ = f"fake_rules_{i // per_module}"
        rules.append(Rule(f"rule-{i}", "fake", "", {}, check))
    return rules


@pytest.fixture
def forked(monkeypatch, request) -> list[int]:
    """The pids `run_shared` forks, to check each was reaped. Parametrized indirectly with
    "parent late" or "child late", that side sleeps a moment after the fork, as a loaded
    scheduler can leave it, so that the other reaches the rules first."""
    pids: list[int] = []
    real_fork = os.fork
    late = getattr(request, "param", None)

    def fork() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        if late == ("parent late" if pid else "child late"):
            time.sleep(0.2)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids


def _taking_turns(check, marks: Path):
    """`check` as `run_shared` calls it, with the child marking each rule it takes (a file
    `<pid>-<rule>` in `marks`) and each process's first call held until the other has
    taken one. Which process runs first is the scheduler's: on a loaded machine this one
    ran every group before the child ran at all (CI's run at d9b9b49), and beside two CPU
    hogs the child, first on the CPU after the fork, ran all 24 groups before this one
    took any (run 96, at 56cd6e1); a test that needs both to take some passed or failed
    by chance. Each side, at its first rule, writes a byte to the other's pipe, closes
    its copy of the other's write end and reads its own pipe: the other's byte, or end of
    file once the other side holds no write end (it exited before taking a rule). The
    child's wait is bounded (`CHILD_WAIT_S`) so that a parent that never takes a rule
    cannot leave it hanging; `run_shared` then runs the child's rules here."""
    parent = os.getpid()
    to_parent_read, to_parent_write = os.pipe()
    to_child_read, to_child_write = os.pipe()
    done = {"first": False}  # the child's copy after the fork is its own

    def turn(rule, *args):
        in_child = os.getpid() != parent
        if in_child:
            (marks / f"{os.getpid()}-{rule.id}").touch()
        if not done["first"]:
            done["first"] = True
            if in_child:
                pipes = (to_parent_write, to_parent_read), (to_child_read, to_child_write)
            else:
                pipes = (to_child_write, to_child_read), (to_parent_read, to_parent_write)
            (mine, mine_read), (theirs_read, theirs_write) = pipes
            os.write(mine, b"x")  # this side still holds a read end: never a broken pipe
            for fd in (mine, mine_read, theirs_write):
                os.close(fd)
            if not in_child or select.select([theirs_read], [], [], CHILD_WAIT_S)[0]:
                os.read(theirs_read, 1)
            os.close(theirs_read)
        return check(rule, *args)

    return turn


def _all_reaped(pids: list[int]) -> bool:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped already: no zombie, nothing running
            continue
        return False
    return bool(pids)


def _outcome_json(outcome: RuleOutcome) -> list:
    return [f.to_dict() for f in outcome.findings] + [s.to_dict() for s in outcome.not_checked]


@pytest.mark.parametrize("name", SHARED_TRACES)
def test_shared_rules_give_the_one_process_outcome_on_corpus_traces(
    name, monkeypatch, forked, tmp_path
):
    path = CORPUS / name
    monkeypatch.setattr(two_cores, "SHARE_MIN_EVENTS", 1 << 62)
    alone = run_rules(kinetoscope.load(path))
    assert not two_cores.worth_sharing(kinetoscope.load(path))
    monkeypatch.setattr(two_cores, "SHARE_MIN_EVENTS", 0)
    monkeypatch.setattr(two_cores, "cores", lambda: 2)
    shared_trace = kinetoscope.load(path)
    assert two_cores.worth_sharing(shared_trace)
    real_check = engine._check

    def check(rule, ctx, strict):  # a file per rule run, named by the process that ran it
        (tmp_path / f"{os.getpid()}-{rule.id}").touch()
        return real_check(rule, ctx, strict)

    monkeypatch.setattr(engine, "_check", _taking_turns(check, tmp_path))
    shared = run_rules(shared_trace)
    assert _outcome_json(shared) == _outcome_json(alone)
    runs = [f.name.split("-", 1) for f in tmp_path.iterdir()]
    by_child = {rule for pid, rule in runs if int(pid) != os.getpid()}
    ran = [rule for _, rule in runs]
    assert by_child  # the child took modules, and its real findings came back:
    assert sorted(ran) == sorted(set(ran)) == sorted(engine.load_rules())  # none run twice
    assert _all_reaped(forked)


@pytest.mark.parametrize("forked", ["parent late", "child late"], indirect=True)
def test_each_module_goes_to_one_process_and_both_take_some(forked, tmp_path):
    parent = os.getpid()

    def check(rule, strict):
        return os.getpid()

    rules = _rules(24, per_module=2)
    results = two_cores.run_shared(rules, _taking_turns(check, tmp_path), strict=True)
    assert set(results) == {r.id for r in rules}
    by_module = {}
    for rule in rules:
        by_module.setdefault(rule.check.__module__, set()).add(results[rule.id])
    assert all(len(pids) == 1 for pids in by_module.values())  # a module is not split
    pids = set(results.values())
    assert parent in pids and len(pids) == 2  # the child took some
    assert _all_reaped(forked)


def test_a_rule_that_fails_in_the_child_runs_again_here(forked, tmp_path):
    parent = os.getpid()

    def check(rule, strict):
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return "here"

    results = two_cores.run_shared(_rules(12), _taking_turns(check, tmp_path), strict=False)
    assert set(results.values()) == {"here"}
    assert list(tmp_path.iterdir())  # the child took some, and they were run again
    assert _all_reaped(forked)


def test_a_child_that_dies_leaves_its_rules_to_the_parent(forked, tmp_path):
    parent = os.getpid()

    def check(rule, strict):
        if os.getpid() != parent:
            os._exit(3)  # killed mid-way: nothing sent back
        return "here"

    results = two_cores.run_shared(_rules(12), _taking_turns(check, tmp_path), strict=False)
    assert set(results.values()) == {"here"}
    assert list(tmp_path.iterdir())
    assert _all_reaped(forked)


def test_findings_that_do_not_pickle_are_run_again_here(forked, tmp_path):
    parent = os.getpid()

    def check(rule, strict):
        return (lambda: None) if os.getpid() != parent else "here"

    results = two_cores.run_shared(_rules(12), _taking_turns(check, tmp_path), strict=False)
    assert set(results.values()) == {"here"}
    assert list(tmp_path.iterdir())
    assert _all_reaped(forked)


def test_a_stuck_child_is_stopped_and_its_rules_run_here(forked, tmp_path, monkeypatch):
    monkeypatch.setattr(two_cores, "CHILD_GRACE_S", 0.5)
    parent = os.getpid()

    def check(rule, strict):
        if os.getpid() != parent:
            time.sleep(20)  # stuck (a lock taken before the fork, say)
            return "from the child, had it been waited for"
        return "here"

    results = two_cores.run_shared(_rules(12), _taking_turns(check, tmp_path), strict=False)
    assert set(results.values()) == {"here"}  # stopped after the grace, its rules run here
    assert list(tmp_path.iterdir())
    assert _all_reaped(forked)


def test_a_strict_error_here_raises_and_leaves_no_child(forked):
    def check(rule, strict):
        raise ValueError("broken rule")

    with pytest.raises(ValueError, match="broken rule"):
        two_cores.run_shared(_rules(12), check, strict=True)
    assert _all_reaped(forked)


def test_not_shared_when_small_out_of_core_on_one_core_or_under_a_budget(monkeypatch):
    trace = kinetoscope.load(CORPUS / SHARED_TRACES[0])
    monkeypatch.setattr(two_cores, "cores", lambda: 2)
    monkeypatch.setattr(two_cores, "SHARE_MIN_EVENTS", len(trace))
    assert two_cores.worth_sharing(trace)
    monkeypatch.setattr(two_cores, "SHARE_MIN_EVENTS", len(trace) + 1)
    assert not two_cores.worth_sharing(trace)  # smaller than the threshold
    monkeypatch.setattr(two_cores, "SHARE_MIN_EVENTS", 0)
    trace.out_of_core = "because --max-memory 1MB is less than ..."
    assert not two_cores.worth_sharing(trace)  # columns in files: a budget to keep
    trace.out_of_core = None
    monkeypatch.setattr(two_cores, "cores", lambda: 1)
    assert not two_cores.worth_sharing(trace)
    monkeypatch.setattr(two_cores, "cores", lambda: 2)
    budgeted = kinetoscope.load(CORPUS / SHARED_TRACES[0], max_memory="64GB")
    assert budgeted.out_of_core is None and budgeted.memory_budget == 64 << 30
    assert not two_cores.worth_sharing(budgeted)  # in memory, but a budget to keep


def test_one_module_is_not_shared(forked):
    results = two_cores.run_shared(_rules(3, per_module=3), lambda rule, strict: "here", True)
    assert results == {"rule-0": "here", "rule-1": "here", "rule-2": "here"}
    assert forked == []  # nothing to hand out: no second process


def test_a_rank_worker_keeps_its_rules_in_one_process(monkeypatch, forked):
    """`ranks` runs a worker per rank: those already use the cores, so none forks again."""
    from kinetoscope.ranks.summary import summarize_rank

    monkeypatch.setattr(two_cores, "SHARE_MIN_EVENTS", 0)
    monkeypatch.setattr(two_cores, "cores", lambda: 2)
    summary = summarize_rank(str(CORPUS / SHARED_TRACES[0]))
    assert summary.error is None and forked == []
    run_rules(kinetoscope.load(CORPUS / SHARED_TRACES[0]))  # the same trace, not a worker
    assert len(forked) == 1
