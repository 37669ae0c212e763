"""The classroom around the book: nbgrader coursework (:mod:`classroom.course`), Voila demos and slides
(:mod:`classroom.demo`), the static edition (:mod:`classroom.site`) and the browser assets they need offline
(:mod:`classroom.assets`). Run from the repository root by the Makefile (``make assignments``, ``make grade``,
``make demo``, ``make slides``, ``make site``); never imported by the core library."""
