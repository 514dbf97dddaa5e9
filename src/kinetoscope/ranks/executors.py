"""Where per-trace work runs: here (a process pool), or on a Dask or Ray cluster.

Multi-rank analysis maps one function over trace paths; each call loads one
trace and returns a small summary. The executor only decides where the calls
run, so paths go out and summaries come back: no trace crosses the network.
On a cluster the paths must be readable by the workers (a shared file system)
and kinetoscope must be installed there (`pip install kinetoscope[dask]` or
`[ray]`, the same version as the driver). See docs/scale.md.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from ..errors import UsageError

EXECUTORS = ("local", "dask", "ray")
T = TypeVar("T")


def run_each(
    task: Callable[[str, Any], T],
    paths: list[str],
    shared: Any,
    executor: str = "local",
    jobs: int = 1,
    address: str | None = None,
) -> list[T]:
    """`[task(p, shared) for p in paths]`, computed by `executor`, results in order.

    `jobs` is the number of local worker processes (local, or the local cluster
    dask and ray start when no `address` is given).
    """
    if executor == "local":
        if address is not None:
            raise UsageError("--address needs --executor dask or ray")
        return _local(task, paths, shared, jobs)
    if executor == "dask":
        return _dask(task, paths, shared, jobs, address)
    if executor == "ray":
        return _ray(task, paths, shared, jobs, address)
    raise UsageError(f"unknown executor {executor!r}: choose one of {', '.join(EXECUTORS)}")


def _local(task, paths, shared, jobs):
    if jobs <= 1 or len(paths) == 1:
        return [task(p, shared) for p in paths]
    workers = min(jobs, len(paths))
    chunk = -(-len(paths) // workers)  # one batch of files per worker: fewer round trips
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(task, paths, [shared] * len(paths), chunksize=chunk))


def _dask(task, paths, shared, jobs, address):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "--executor dask needs the dask extra: pip install 'kinetoscope[dask]'"
        ) from None
    cluster = None
    try:
        if address is None:
            cluster = LocalCluster(
                n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = Client(cluster)
        else:
            client = Client(address, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"cannot reach the dask scheduler at {address}: {exc}") from None
    try:
        return client.gather(client.map(task, paths, [shared] * len(paths), pure=False))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _ray(task, paths, shared, jobs, address):
    try:
        import ray
    except ImportError:
        raise UsageError(
            "--executor ray needs the ray extra: pip install 'kinetoscope[ray]'"
        ) from None
    started = not ray.is_initialized()
    if started:
        options = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        try:
            if address is None:
                ray.init(num_cpus=jobs, **options)
            else:
                ray.init(address=address, **options)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise UsageError(f"cannot reach the ray cluster at {address}: {exc}") from None
    try:
        remote = ray.remote(num_cpus=1)(task)
        shared_ref = ray.put(shared)
        return ray.get([remote.remote(p, shared_ref) for p in paths])
    finally:
        if started:
            ray.shutdown()
