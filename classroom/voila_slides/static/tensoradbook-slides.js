/* The slides of a chapter for a lecture hall, live (Voila) and static (classroom/deck.py, the PDF) alike:
 * reveal.js with 1280 x 720 slides shown at scale 1 on such a screen, every slide in document order with Space,
 * the arrows and N / P (navigationMode "linear": the right arrow no longer skips vertical subslides), the
 * speaker view on S (reveal's notes plugin, nothing fetched), and the fit rule: a slide is a fixed frame, and
 * when what it holds is taller, its tallest blocks give way, tallest first and only as far as needed --
 * a picture shrinks, code, an output or long prose scrolls inside its own frame -- down to FRAME_MIN_PX each.
 */
(function () {
  "use strict";
  var WIDTH = 1280, HEIGHT = 720, FRAME_MIN_PX = 180;
  // Blocks that may give way: a cell's code, its outputs together or one of them, a markdown cell's prose.
  var BLOCKS = ".jp-InputArea-editor, .jp-OutputArea, .jp-OutputArea-output, .jp-RenderedMarkdown";

  function leaves() {
    return Array.prototype.filter.call(document.querySelectorAll(".reveal .slides section"),
      function (s) { return !s.querySelector("section"); });
  }

  function reset(slide) {
    slide.querySelectorAll("[data-fit]").forEach(function (el) {
      el.style.maxHeight = "";
      el.removeAttribute("data-fit");
    });
  }

  // The pictures directly in a block (a figure, a widget's plot): shrinking them keeps all of it in sight.
  function pictures(block) {
    return Array.prototype.filter.call(block.querySelectorAll("img"), function (img) { return img.offsetHeight > 0; });
  }

  function fit(slide) {
    reset(slide);
    var over = slide.scrollHeight - slide.clientHeight;
    for (var step = 0; over > 0 && step < 50; step++, over = slide.scrollHeight - slide.clientHeight) {
      var blocks = Array.prototype.filter.call(slide.querySelectorAll(BLOCKS), function (b) {
        return b.offsetHeight > FRAME_MIN_PX && !b.parentElement.closest("[data-fit]");
      });
      if (!blocks.length) return;  // nothing left to give way: the browser test reports the slide
      var block = blocks.reduce(function (a, b) { return a.offsetHeight >= b.offsetHeight ? a : b; });
      var height = block.offsetHeight, target = Math.max(FRAME_MIN_PX, height - over);
      var imgs = pictures(block), tallest = imgs.reduce(function (a, b) {
        return a && a.offsetHeight >= b.offsetHeight ? a : b; }, null);
      if (tallest && !tallest.hasAttribute("data-fit") && target - (height - tallest.offsetHeight) >= FRAME_MIN_PX / 2) {
        // the picture alone can give the room and stays legible: all of it stays in sight
        tallest.style.maxHeight = (target - (height - tallest.offsetHeight)) + "px";
        tallest.setAttribute("data-fit", "shrink");
      } else {
        block.style.maxHeight = target + "px";
        block.setAttribute("data-fit", "scroll");
      }
    }
  }

  // Every slide laid out (not reveal's display: none for the far ones) while it is measured.
  function fitAll() {
    document.documentElement.classList.add("tab-measuring");
    leaves().forEach(fit);
    document.documentElement.classList.remove("tab-measuring");
  }

  // Live widgets and MathJax change a slide's height after it is shown: fit that slide again, at most once a
  // frame. A slide that reveal hides or shows again changes its cells' sizes too, and is fitted as it is shown.
  function refitOnChange() {
    var changed = new Set();
    var observer = new ResizeObserver(function (entries) {
      entries.forEach(function (entry) {
        var slide = entry.target.closest("section");
        if (slide && slide.offsetHeight > 0) changed.add(slide);
      });
      if (changed.size) requestAnimationFrame(function () {
        changed.forEach(fit);
        changed.clear();
      });
    });
    leaves().forEach(function (slide) {
      slide.querySelectorAll(".jp-Cell").forEach(function (cell) { observer.observe(cell); });
    });
  }

  window.tensoradbookSlides = function (Reveal, RevealNotes, options) {
    Reveal.initialize(Object.assign({
      width: WIDTH, height: HEIGHT, margin: 0, minScale: 0.2, maxScale: 2, center: false,
      navigationMode: "linear", controls: true, controlsLayout: "bottom-right", progress: true, hash: true,
      slideNumber: "c/t", transition: "none", backgroundTransition: "none",
      plugins: [RevealNotes],
      // print-pdf: one page a slide (the fit rule already keeps each on one), fragments shown at once
      pdfMaxPagesPerSlide: 1, pdfSeparateFragments: false
    }, options || {}));
    Reveal.on("ready", function () {
      fitAll();
      refitOnChange();
      document.documentElement.setAttribute("data-slides-ready", "true");
    });
    window.tensoradbookReveal = Reveal;
  };
  window.tensoradbookFit = { fit: fit, fitAll: fitAll, reset: reset, leaves: leaves };
})();
