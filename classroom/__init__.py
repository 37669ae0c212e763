"""The classroom around the book: nbgrader coursework (:mod:`classroom.course`, the exercises' one home
``course/exercises/`` read by :mod:`classroom.assignments`), autograding in a sandbox (:mod:`classroom.grading`),
the class server (:mod:`classroom.hub`), Voila demos and slides (:mod:`classroom.demo`,
:mod:`classroom.voila_serve`), the static edition (:mod:`classroom.site`) and the browser assets they need offline
(:mod:`classroom.assets`); what they share is in :mod:`classroom.paths`. Run from the repository root by the
Makefile (``make assignments``, ``make grade``, ``make demo``, ``make slides``, ``make site``); never imported by
the core library."""
