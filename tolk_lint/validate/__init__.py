"""`tolk-lint validate`: checking a fixed kernel against its original, from
the cheapest check to the most expensive (static proof, assembler, CPU
interpreter, Numba simulator, GPU).

`spec` (the TOML launch spec) and `result` (`StageResult`, the exit status)
first; `inputs` makes the random arguments; one module per stage: `static`
(a), `assembler` (b), `interpreter` (c), `gpu_ptx` (e, PTX; it imports only
numpy, cuda-bindings, `spec`, `result` and `inputs`, so it runs where the
analyses are not installed). The Numba stages, `simulate` (d) and
`numba_gpu` (e), are imported by the command only when asked for.
"""
