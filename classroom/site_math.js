// Typesets the TeX of static pages at build time (classroom/site.py, `make site`), so that a reader never sees
// raw TeX while a browser-side MathJax works through a chapter, and the pages need no MathJax at all.
//
//   node classroom/site_math.js <MathJax's es5 folder> page.html...
//
// Each page is rewritten in place: the math between $...$, \(...\), $$...$$, \[...\] and in \begin{...}
// environments (what nbconvert's MathJax 2 configuration finds, code and <pre> skipped) becomes SVG, with
// MathML beside it for screen readers. SVG needs no web font, so the pages look the same over file://.
// Prints one JSON line per page: {"page", "math", "errors"} (errors: the TeX of formulas MathJax rejected).

const [mathjaxDir, ...pages] = process.argv.slice(2);
const fs = require('fs');
const path = require('path');

require(path.resolve(mathjaxDir, 'node-main.js')).init({
  loader: {
    versionWarnings: false,  // liteDOM carries no version stamp: nothing to warn about
    paths: {mathjax: path.resolve(mathjaxDir)},
    load: ['adaptors/liteDOM', 'input/tex-full', 'output/svg', 'a11y/assistive-mml'],
  },
  tex: {
    inlineMath: [['$', '$'], ['\\(', '\\)']],
    displayMath: [['$$', '$$'], ['\\[', '\\]']],
    processEscapes: true,
    processEnvironments: true,
    tags: 'ams',
  },
  // one set of glyph shapes per page, shared by its formulas
  svg: {fontCache: 'global'},
  startup: {typeset: false},
}).then((MathJax) => {
  const adaptor = MathJax.startup.adaptor;
  for (const page of pages) {
    // The output jax serves every page: a fresh glyph cache and style sheet for each (it hands out its style
    // element once, and a style element already in the previous page is not put in this one's <head>).
    MathJax.startup.output.clearFontCache();
    MathJax.startup.output.svgStyles = null;
    const doc = MathJax.startup.getDocument(fs.readFileSync(page, 'utf8'));
    doc.render();
    const math = Array.from(doc.math);
    const errors = math.filter((m) => adaptor.outerHTML(m.typesetRoot).includes('data-mml-node="merror"'))
      .map((m) => m.math);
    if (math.length === 0) adaptor.remove(doc.outputJax.svgStyles);
    fs.writeFileSync(page, adaptor.doctype(doc.document) + '\n' + adaptor.outerHTML(adaptor.root(doc.document)));
    console.log(JSON.stringify({page, math: math.length, errors}));
  }
}).catch((err) => {
  console.error(err && err.stack || err);
  process.exit(1);
});
