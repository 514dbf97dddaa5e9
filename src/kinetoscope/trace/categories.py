"""One category set for every Kineto schema generation.

2021 traces say `Operator`, `Kernel`, `Runtime`; current ones `cpu_op`, `kernel`,
`cuda_runtime`. HIP traces keep the `cuda_*` category names but use `hip*`
function names. Everything downstream only sees `Cat`.
"""

from __future__ import annotations

from enum import IntEnum


class Cat(IntEnum):
    OTHER = 0
    CPU_OP = 1
    USER_ANNOTATION = 2
    PYTHON = 3
    RUNTIME = 4
    DRIVER = 5
    KERNEL = 6
    MEMCPY = 7
    MEMSET = 8
    GPU_ANNOTATION = 9
    DEVICE_SYNC = 10
    INSTANT = 11
    MEMORY = 12
    FLOW = 13
    PROFILER = 14
    OVERHEAD = 15
    PROFILER_RANGE = 16


CATEGORY_NAMES: dict[str, Cat] = {
    # current names
    "cpu_op": Cat.CPU_OP,
    "user_annotation": Cat.USER_ANNOTATION,
    "python_function": Cat.PYTHON,
    "cuda_runtime": Cat.RUNTIME,
    "cuda_driver": Cat.DRIVER,
    "kernel": Cat.KERNEL,
    "gpu_memcpy": Cat.MEMCPY,
    "gpu_memset": Cat.MEMSET,
    "gpu_user_annotation": Cat.GPU_ANNOTATION,
    "cuda_sync": Cat.DEVICE_SYNC,
    "cpu_instant_event": Cat.INSTANT,
    "ac2g": Cat.FLOW,
    "fwdbwd": Cat.FLOW,
    "async": Cat.FLOW,
    "trace": Cat.PROFILER,
    "overhead": Cat.OVERHEAD,
    "cuda_profiler_range": Cat.PROFILER_RANGE,
    # 2021 names
    "operator": Cat.CPU_OP,
    "runtime": Cat.RUNTIME,
    "memcpy": Cat.MEMCPY,
    "memset": Cat.MEMSET,
    "python": Cat.PYTHON,
}

#: Categories that live on device lanes (streams).
DEVICE_CATS = frozenset({Cat.KERNEL, Cat.MEMCPY, Cat.MEMSET, Cat.GPU_ANNOTATION, Cat.DEVICE_SYNC})
#: Device activity that occupies the device (annotations and syncs do not).
DEVICE_WORK_CATS = frozenset({Cat.KERNEL, Cat.MEMCPY, Cat.MEMSET})
#: Host events that nest into the per-thread call tree.
HOST_TREE_CATS = frozenset({Cat.CPU_OP, Cat.USER_ANNOTATION, Cat.RUNTIME, Cat.DRIVER, Cat.PYTHON})


def normalize_category(raw: str | None, name: str) -> Cat:
    """Map a raw `cat` (any generation, any case) to `Cat`.

    `[memory]` instants carry no category in 2021 traces and `cpu_instant_event`
    in newer ones; both become `Cat.MEMORY` so memory analysis sees one kind.
    """
    if name == "[memory]":
        return Cat.MEMORY
    if raw is None:
        return Cat.OTHER
    return CATEGORY_NAMES.get(raw.lower(), Cat.OTHER)


#: Host runtime/driver calls that put a kernel on a stream, CUDA and HIP.
LAUNCH_NAMES = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cudaGraphLaunch",
        "cuGraphLaunch",
        "hipLaunchKernel",
        "hipExtLaunchKernel",
        "hipModuleLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipLaunchCooperativeKernel",
        "hipGraphLaunch",
        "hipExtLaunchMultiKernelMultiDevice",
    }
)
#: Host calls that replay a captured CUDA/HIP graph: many kernels from one call.
GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "hipGraphLaunch", "cuGraphLaunch"})
#: Host calls that block the calling thread until device work completes.
SYNC_NAMES = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "hipDeviceSynchronize",
        "hipStreamSynchronize",
        "hipEventSynchronize",
    }
)

#: Names the profiler drops before building its tree and table (`_filter_name`).
PROFILER_INTERNAL_NAMES = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
