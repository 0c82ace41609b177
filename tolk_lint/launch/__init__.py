"""Launch shapes: which block shape each kernel is linted under, where that
shape came from, and the launch contract inferred when nothing gives one.

A shape comes, in this order, from the command line (``--block``), the
configuration (``[tool.tolk-lint.launch]``), or the code itself:

- `python_calls`: the Numba call sites of the module (``kernel[grid,
  block](...)``, ``kernel[grid, block, stream, shmem]``,
  ``kernel.forall(n)``), the kernel found through the discovery's bindings;
- `cuda_source`: for PTX, ``.reqntid``, then the host launches in the CUDA
  source its ``.file`` names (``<<<grid, block>>>``, ``dim3`` variables,
  ``#define`` / ``constexpr`` / template-argument constants,
  ``cudaLaunchKernel``), the PTX entries matched by name (`mangled` reads
  C++ names); `cuda_structure` finds a source's kernels, functions and
  launches, `cuda_source` values them, `arguments` and `host_eval` read
  what the host's checks say of a launch's arguments, `bounded_block` the
  box a block chosen at run time stays in (``dimBlock.y = min(n / 32,
  16)``, then a check), with `host_ranges` bounding its values;
- `comments`: a ``tolk: launch block=(X,Y,Z)`` comment in the Python file,
  the ``.ptx`` or the ``.cu``;
- `triton`: Triton's PTX, whose ``.maxntid`` is the exact block.

`choose` applies that order (`launch_shapes`, called by the engine's
``prepare``); `variants` lints a kernel under each shape found and merges
what is reported, saying in each message which shape and from where; when
no shape is known, `contract` infers the shapes under which the kernel's
shared and local accesses are race-free and in bounds (TL205). `shapes`
holds the two values everything here passes around (`LaunchShape`,
`Contract`).

Imports: the IR, the Python front end's scopes and discovery
(`python_calls`), the diagnostics, the budget and, in `contract`, the
memory analysis and the solver. Only the engine imports `variants`.
"""
