"""`tolk-lint validate`: checking a fixed kernel against its original, from
the cheapest check to the most expensive (static proof, assembler, CPU
interpreter, Numba simulator, GPU).
"""
