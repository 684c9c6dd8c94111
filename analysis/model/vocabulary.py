"""Every TensorFlow name tftrace matches: files, planes, stats, thread and event names.

TF's names are its interface here: no schema promises them, and they change between
versions. Each one is spelled once, below, with where TF writes it and, where it
matters, in which versions it was seen (the sample traces hold TF 2.16, 2.18 and 2.21).
How a name is matched (whole, as a prefix, as a pattern) stays with the code that
matches it, vectorised over columns; the predicates below test one name at a time.

Standard library only: the recorder imports this inside the user's workload process.
"""

from __future__ import annotations

import re

# -- Profiler output ------------------------------------------------------------------------
# tf.profiler.experimental.start(logdir) writes logdir/plugins/profile/<session>/<host>.xplane.pb,
# the layout TensorBoard's profile plugin reads; <session> is a YYYY_MM_DD_HH_MM_SS timestamp.
PROFILE_DIR_PARTS = ("plugins", "profile")
XPLANE_SUFFIX = ".xplane.pb"

# -- Planes of the XSpace, and their stats ---------------------------------------------------
HOST_PLANE = "/host:CPU"  # one line per host thread; every event analysed here is on it
TASK_PLANE = "Task Environment"  # run-wide facts, as plane stats:
PROFILE_START_STAT = "profile_start_time"  # ns since the epoch; line timestamps count from it
PROFILE_STOP_STAT = "profile_stop_time"

# -- Flow stats on host events (TF's StatType kProducerId, kConsumerId, ...) -----------------
# ThreadpoolListener::Record carries _pt=15 and _p=<closure id>; the StartRegion of the
# worker that runs the closure carries _ct=15 and _c=<the same id>. Executor events carry
# _ct=2 and _c too.
PRODUCER_ID_STAT = "_p"
CONSUMER_ID_STAT = "_c"
PRODUCER_TYPE_STAT = "_pt"
CONSUMER_TYPE_STAT = "_ct"
# _ct of an executor event (TF's ContextType::kTfExecutor): its _c names one run of a graph or
# function executor, the same on every event of that run whatever thread it is on.
EXECUTOR_CONTEXT_TYPE = 2

# -- Thread names -----------------------------------------------------------------------------
# TF names the threads it starts "tf_<name>". Their host lines are named "<that name>/<TF's
# thread id>" (e.g. "tf_Compute/-4654371164022893192"); the line of a thread TF did not start
# bears the OS name alone ("python3"). TF's name is also the first member of the ThreadParams
# its threads start with.
TF_THREAD_PREFIX = "tf_"
INTER_OP_THREAD_PREFIX = "tf_Compute"  # the inter-op pool (NewThreadPoolFromSessionOptions)
# The intra-op (Eigen) pool: "tf_numa_<node>_Eigen", usually "tf_numa_-1_Eigen"; plain
# "tf_Eigen" is accepted too.
INTRA_OP_THREAD = re.compile(r"^tf_(numa_-?\d+_)?Eigen")
# tf.data's pools: tf_data_private_threadpool, tf_data_iterator_resource, ...
TF_DATA_THREAD_PREFIX = "tf_data"
GRAPH_RUNNER_THREAD = "tf_graph_runner"
# OS names (prefixes) that only TF sets. The OS shows TF's name only from TF 2.21 (2.20 and
# older set none) and only where it fits Linux's 15 bytes: "tf_Compute" and "tf_graph_runner"
# do; "tf_numa_-1_Eigen" (16 bytes) and most "tf_data_..." names do not.
OS_NAMES_SET_BY_TF = (INTER_OP_THREAD_PREFIX, GRAPH_RUNNER_THREAD, TF_DATA_THREAD_PREFIX + "_")
# Threads of TF's profiler service and of the gRPC library bundled with it.
PROFILER_THREAD_MARKER = "profiler"  # anywhere in the name, any case
GRPC_THREAD_PREFIX = "grpc"
# Parts of the file names of the shared objects that start TF's threads
# (libtensorflow_framework.so.2, ...; TSL and XLA are TF's platform layer and compiler).
TF_LIBRARY_MARKERS = ("tensorflow", "tsl", "xla")


def is_tf_thread_name(name: str) -> bool:
    """Whether a thread name (a trace line's name before "/<id>") is one TF gave."""
    return name.startswith(TF_THREAD_PREFIX)


def is_inter_op_thread(name: str) -> bool:
    return name.startswith(INTER_OP_THREAD_PREFIX)


def is_intra_op_thread(name: str) -> bool:
    return INTRA_OP_THREAD.match(name) is not None


def is_tf_data_thread(name: str) -> bool:
    return name.startswith(TF_DATA_THREAD_PREFIX)


def is_profiler_thread(name: str) -> bool:
    """TF's profiler service or gRPC, by the thread's name."""
    return PROFILER_THREAD_MARKER in name.lower() or name.startswith(GRPC_THREAD_PREFIX)


def is_tf_library(shared_object: str) -> bool:
    """Whether a shared object's file name is one of TF's libraries."""
    return any(marker in shared_object for marker in TF_LIBRARY_MARKERS)


# -- Thread-pool events (ThreadpoolListener) --------------------------------------------------
# Instant events (duration 0) on every pool's lines, the only events Eigen workers write:
# Record on the thread that schedules a closure, StartRegion / StopRegion on the worker that
# runs it. Present in the TF 2.18 and 2.21 traces, absent from 2.16's.
# Collective ops of TF's distributed runtime (CollectiveReduceV2, CollectiveGatherV2,
# CollectiveBcastSend/Recv, NcclAllReduce, ...): asynchronous kernels whose op event lasts until
# every worker has joined, so its length includes the wait for the slowest.
COLLECTIVE_OP_PREFIXES = ("Collective", "Nccl", "AllReduce")

THREADPOOL_RECORD = "ThreadpoolListener::Record"
THREADPOOL_START_REGION = "ThreadpoolListener::StartRegion"
THREADPOOL_STOP_REGION = "ThreadpoolListener::StopRegion"

# -- Executor events (tf_Compute lines, or inline on the caller) ------------------------------
EXECUTOR_PROCESS = "ExecutorState::Process"
EXECUTOR_DONE = "ExecutorDoneCallback"
EXECUTOR_PREFIX = "Executor"  # the executor's other bookkeeping

# -- TF's Python API and eager dispatch (the Python thread that calls TF) --------------------
TFE_PY_PREFIX = "TFE_Py_"  # TFE_Py_FastPathExecute_C, TFE_Py_Execute, TFE_Py_ExecuteCancelable
EAGER_EXECUTE = "EagerExecute"  # stats eager_op, is_func
EAGER_LOCAL_EXECUTE = "EagerLocalExecute"
# One eager op: "EagerLocalExecute: <op type>" (the type of a tf.function call is its
# "__inference_..." name).
EAGER_OP_PREFIX = EAGER_LOCAL_EXECUTE + ": "
# The calls into TF that dispatch an op or a function (exact names).
TF_CALL_EVENTS = (
    EAGER_EXECUTE,
    "EagerKernelExecute",
    "KernelAndDeviceFunc::Run",
    "TFE_Py_FastPathExecute_C",
    "TFE_Py_Execute",
    "TFE_Execute",
)
# A line with any of these is a Python thread calling TF's Python API.
PYTHON_API_PREFIXES = (TFE_PY_PREFIX, EAGER_EXECUTE, EAGER_LOCAL_EXECUTE)


def is_python_api_event(name: str) -> bool:
    return name.startswith(PYTHON_API_PREFIXES)


# -- tf.function ------------------------------------------------------------------------------
# A tf.function's concrete function is "__inference_<python name>_<uid>" (Keras 3's fit step:
# "__inference_multi_step_on_iterator_<uid>"); the event of a call, and the op type of its
# EagerLocalExecute. Under a gradient tape the halves are "__forward_..." / "__backward_...".
INFERENCE_FUNCTION_PREFIX = "__inference_"
FUNCTION_PREFIXES = (INFERENCE_FUNCTION_PREFIX, "__forward_", "__backward_")
# TF's own annotation around every eager execution from Python (an op or a function call,
# pywrap_tfe): never a loop's step. It covers a step's call and any other call beside it (a
# last collective after the loop), so it could win over the step's own tf.function.
EAGER_EXECUTE_ANNOTATION_PREFIX = "TFE_Py_Execute"

# -- Op types ---------------------------------------------------------------------------------
# An op event: "<node name>:<op type>" (e.g. "MatMul:_MklMatMul"); node names may hold "/",
# op types are identifiers.
OP_EVENT = re.compile(r"^(?P<name>[^\s:][^\s:]*):(?P<type>[A-Za-z_][A-Za-z0-9_]*)$")

# -- oneDNN kernels ---------------------------------------------------------------------------
# With oneDNN on (TF's default on x86 CPUs with AVX-512-class features; TF_ENABLE_ONEDNN_OPTS=1
# forces it on, =0 off), TF's graph rewrite (mkl_layout_pass.cc, names from mkl_graph_util.h)
# renames an op to its oneDNN kernel: "_Mkl" + op (MatMul, BatchMatMulV2, Einsum, Transpose,
# Softmax, Quantized*...), "_MklNative" + op (Conv2D, FusedBatchNormV3, AvgPool...) or, for
# eager ops, "_MklEager" + op. TF's internal fused ops lose their leading "_" on the way:
# _FusedMatMul -> _MklFusedMatMul, _FusedConv2D -> _MklNativeFusedConv2D. Seen in TF 2.16-2.21.
ONEDNN_OP_PREFIXES = ("_MklNative", "_MklEager", "_Mkl")  # longest first
# Fused* ops that are public TF ops, so keep no leading "_" once the prefix is gone.
PUBLIC_FUSED_OP = re.compile(r"^Fused(BatchNorm(Grad)?(V2|V3)?|PadConv2D|ResizeAndPadConv2D)$")
# oneDNN's layout conversions (blocked format, before TF 2.8): no stock op to show instead.
ONEDNN_OWN_OPS = ("_MklToTf", "_MklInputConversion")
ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"
# Ops the rewrite always replaces (for float32) when oneDNN is on: seen under their own name in
# a trace, they say oneDNN was off.
ONEDNN_REWRITTEN_OPS = (
    "MatMul",
    "BatchMatMulV2",
    "Conv2D",
    "Conv2DBackpropFilter",
    "Conv2DBackpropInput",
    "Conv3D",
    "DepthwiseConv2dNative",
    "_FusedMatMul",
    "_FusedConv2D",
)


def is_onednn_kernel(op_kernel: str) -> bool:
    """Whether an op type as the trace names it is one of oneDNN's kernels."""
    return op_kernel.startswith(ONEDNN_OP_PREFIXES[-1])


def op_type_of_kernel(op_kernel: str) -> str:
    """The op a kernel implements: "_MklMatMul" -> "MatMul", "_MklNativeConv2D" -> "Conv2D",
    "_MklFusedMatMul" -> "_FusedMatMul"; any other name is returned as it is, so an op type
    reads the same with oneDNN on and off."""
    if op_kernel in ONEDNN_OWN_OPS:
        return op_kernel
    for prefix in ONEDNN_OP_PREFIXES:
        if op_kernel.startswith(prefix) and len(op_kernel) > len(prefix):
            op = op_kernel[len(prefix) :]
            if op.startswith("Fused") and not PUBLIC_FUSED_OP.match(op):
                return "_" + op
            return op
    return op_kernel


# tf.py_function (EagerPyFunc) and tf.numpy_function / tf.compat.v1.py_func (PyFunc,
# PyFuncStateless): Python code run as an op, holding the GIL.
PY_FUNCTION_OPS = ("EagerPyFunc", "PyFunc", "PyFuncStateless")
# Ops that move, name or hold data and never hand work to the intra-op pool however large
# their input: they are not "too small to split", whatever parallelism they show.
BOOKKEEPING_OPS = (
    "Const",
    "_EagerConst",
    "Identity",
    "IdentityN",
    "NoOp",
    "Placeholder",
    "_Arg",
    "_Retval",
    "_Send",
    "_Recv",
    "VarHandleOp",
    "ReadVariableOp",
    "AssignVariableOp",
    "DestroyResourceOp",
    "MakeIterator",
    "AnonymousIteratorV3",
    "DeleteIterator",
    "OptionalFromValue",
    "OptionalHasValue",
    "OptionalGetValue",
    "Shape",
    "Reshape",
)
# The main thread waiting for the input pipeline's next element (an op type, and a prefix of
# the event "IteratorGetNextOp::DoCompute").
ITERATOR_GET_NEXT = "IteratorGetNext"
# The kernel of one fetch of an input element, wherever it runs (eager next(iterator), inside a
# tf.function, Keras 3's get_next_as_optional): one per batch a step consumes (TF 2.16-2.21).
ITERATOR_FETCH_EVENTS = ("IteratorGetNextOp::DoCompute", "IteratorGetNextAsOptionalOp::DoCompute")

# -- Op kinds: which ops are work, and which can be too small to split ------------------------
# Op types a thread only waits inside (prefixes): a tf.function call, whose ops are traced on
# their own, and the wait for the input pipeline's next element. Never work of their own.
WAIT_OP_PREFIXES = (*FUNCTION_PREFIXES, ITERATOR_GET_NEXT)
# Op types never "too small to split" however little Eigen work they show: Python run as an op
# (its time is Python's, as is every op its Python calls) and bookkeeping (nothing to split).
# With the waits above, every op type the headline and the rule leave out of small ops.
NEVER_SPLIT_OPS = (*PY_FUNCTION_OPS, *BOOKKEEPING_OPS)

# -- A tf.function's first call (the warm-up) -------------------------------------------------
# TF annotates each tf.function call with the function's Python name (covering tracing too) and
# its tracing with "tf.function-graph_building"; the traced function then runs as an eager op
# "__inference_...", whose KernelAndDeviceFunc::Run is the run itself: the time before it in
# the op is instantiation and graph optimisation (Grappler), which writes no events of its own.
GRAPH_BUILDING_EVENT = "tf.function-graph_building"
FUNCTION_RUN_EVENT = "KernelAndDeviceFunc::Run"
# Variable creation and initial values, run eagerly on the main thread while a model is built
# or a tf.function lifts its variables out of the graph ("initialize_variables" is the function
# TF builds to run their initialisers).
VARIABLE_INIT_OPS = (
    "VarHandleOp",
    "AssignVariableOp",
    "VarIsInitializedOp",
    "RandomUniform",
    "RandomStandardNormal",
    "TruncatedNormal",
    "StatelessRandomGetKeyCounter",
    "StatelessRandomUniformV2",
    "StatelessRandomNormalV2",
    "StatelessTruncatedNormalV2",
)
VARIABLE_INIT_FUNCTION = INFERENCE_FUNCTION_PREFIX + "initialize_variables"

# -- tf.data events ---------------------------------------------------------------------------
# Iterator::Root::MapAndBatch::..., tf_data_...; MapAndBatchProduce / PrefetchProduce on the
# pipeline's own threads, MapAndBatchConsume where an element is taken (the Produce events
# are in the TF 2.18 and 2.21 traces, not in 2.16's).
DATA_EVENT_PREFIXES = ("Iterator::", "tf_data")
DATA_EVENT_SUFFIXES = ("Produce", "Consume")

# -- TraceMe names TF itself writes on Python threads (not user annotations) ------------------
# MemoryAllocation, BasicCPUAllocator::Alloc, ParallelFor, ...
TF_INTERNAL_TRACEME_PREFIXES = (
    "MemoryAllocation",
    "MemoryDeallocation",
    "BasicCPUAllocator",
    "ParallelFor",
)
# tf.profiler.experimental.Trace(name, step_num=N): the keyword that marks a training step.
STEP_NUM_ARG = "step_num"

# -- Settings ---------------------------------------------------------------------------------
# The environment variables that size the pools when the setting is 0 (else: the schedulable
# CPUs), keyed like TF's inter_op / intra_op_parallelism_threads.
INTER_OP_THREADS_ENV = "TF_NUM_INTEROP_THREADS"
INTRA_OP_THREADS_ENV = "TF_NUM_INTRAOP_THREADS"
POOL_ENV_VARS = {"inter_op": INTER_OP_THREADS_ENV, "intra_op": INTRA_OP_THREADS_ENV}
# Distributions that install TF, and those that read its profiles (for the manifest).
TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly")
PROFILE_VIEWER_DISTRIBUTIONS = ("tensorboard", "tensorboard-plugin-profile", "xprof")
