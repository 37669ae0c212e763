"""Report sec. 4, exact integer linear algebra: matrices of Python integers and fractions
(:mod:`.matrix`), the Smith normal form and integer solutions of ``A alpha = beta`` (Alg. 1-2,
:mod:`.smith`), Fourier-Motzkin elimination (Alg. 3, :mod:`.fourier_motzkin`) and the geometry of
index boxes and polytopes the chapters draw (:mod:`.geometry`). The bottom layer: it imports nothing
else of tensoradbook."""
