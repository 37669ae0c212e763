/* The slides of a chapter for a lecture hall, live (Voila) and static (classroom/deck.py, the PDF) alike:
 * reveal.js with 1280 x 720 slides shown at scale 1 on such a screen, every slide in document order with Space,
 * the arrows and N / P (navigationMode "linear": the right arrow no longer skips vertical subslides), the
 * speaker view on S (reveal's notes plugin, nothing fetched), and the fit rule: a slide is a fixed frame; a
 * formula wider than it is scaled down to its width; prose that runs past its bottom goes on, with what follows
 * it, on a new slide after it, cut at the last sentence that fits (a lecturer does not scroll prose in front of a
 * room); and when what is left is taller, its tallest blocks give way, tallest first and only as far as needed --
 * a picture shrinks, code or an output scrolls inside its own frame -- down to FRAME_MIN_PX each.
 */
(function () {
  "use strict";
  var WIDTH = 1280, HEIGHT = 720, FRAME_MIN_PX = 180, BELOW_LAST_PX = 12;
  // Blocks that may give way: a cell's code, its outputs together or one of them (prose goes on instead).
  var BLOCKS = ".jp-InputArea-editor, .jp-OutputArea, .jp-OutputArea-output";
  // A sentence ends at . ! or ? (and the quote or bracket that closes it) before a space, and not before a small
  // letter or a digit (e.g. the, sec. 4.2).
  var SENTENCE_END = /[.!?]["'\u201d\u2019)\]]*\s+(?![a-z0-9])/g;
  var reveal = null;  // set as reveal.js starts: a slide added after that is announced to it (sync)

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

  // How many screen pixels a slide's CSS pixel is (reveal.js scales the slides to the screen).
  function zoom(slide) {
    return slide.getBoundingClientRect().width / slide.offsetWidth || 1;
  }

  // The bottom of a slide's content on the screen: above its padding, which clears reveal's controls, and the
  // margin of the last paragraph or list and the padding of its cell below that.
  function contentBottom(slide) {
    var bottom = slide.clientHeight - parseFloat(getComputedStyle(slide).paddingBottom) - BELOW_LAST_PX;
    return slide.getBoundingClientRect().top + bottom * zoom(slide);
  }

  // A formula wider than the block it is in: MathJax sizes its output (CHTML or SVG, in ex) from the font size, so
  // a smaller one scales the formula as a whole.
  function scaleMath(slide) {
    var z = zoom(slide);
    slide.querySelectorAll("mjx-container").forEach(function (math) {
      var drawn = math.firstElementChild, block = math.parentElement.closest("p, li, div, section");
      if (!drawn) return;
      var left = drawn.getBoundingClientRect().left;
      var room = block.getBoundingClientRect().right - parseFloat(getComputedStyle(block).paddingRight) * z - left;
      // in steps: the browser rounds the ex that MathJax's SVG is sized in to whole pixels
      for (var k = 0, width; k < 20 && (width = drawn.getBoundingClientRect().width) > room; k++) {
        var size = parseFloat(getComputedStyle(math).fontSize);
        math.style.fontSize = Math.min(size * room / width, size - 0.5) + "px";
      }
    });
  }

  // The prose of a slide, block by block (paragraphs, items of lists, rows of tables, headings, formulas) in
  // document order.
  function proseBlocks(slide) {
    return Array.prototype.filter.call(slide.querySelectorAll(".jp-RenderedMarkdown > *, " +
      ".jp-RenderedMarkdown > ul > li, .jp-RenderedMarkdown > ol > li, .jp-RenderedMarkdown > table > tbody > tr"),
      function (b) { return b.offsetHeight > 0 && !/^(UL|OL|TABLE)$/.test(b.tagName); });
  }

  // Where the text of ``block`` after the last sentence that ends above ``limit`` starts (a collapsed range), or
  // null where its first sentence ends below it already. Formulas and code are not searched for sentence ends.
  function lastSentenceEnd(block, limit) {
    var walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT), found = null, node;
    while ((node = walker.nextNode())) {
      if (node.parentElement.closest("mjx-container, code, pre")) continue;
      SENTENCE_END.lastIndex = 0;
      for (var m = SENTENCE_END.exec(node.data); m; m = SENTENCE_END.exec(node.data)) {
        var mark = document.createRange();
        mark.setStart(node, m.index);
        mark.setEnd(node, m.index + 1);
        if (mark.getBoundingClientRect().bottom > limit) return found;
        found = document.createRange();
        found.setStart(node, m.index + m[0].length);
      }
    }
    return found;
  }

  // A new slide right after ``slide`` (in its stack, or the next horizontal one) with ``first`` and everything
  // after it in the slide, each in a copy of the wrappers it was in (its cell, input area, list) with their empty
  // parts (and a table's head) before it; the wrappers left empty go. A numbered list goes on counting.
  function continueAfter(slide, first) {
    var moved = first, parent = first.parentElement;
    while (parent !== slide) {
      var copy = parent.cloneNode(false), up = parent.parentElement;
      copy.removeAttribute("id");
      for (var before = parent.firstElementChild; before && before !== moved; before = before.nextElementSibling) {
        // a collapser (the same indent), a table's head (the rows go on under it)
        if (!before.textContent.trim() || before.tagName === "THEAD") copy.appendChild(before.cloneNode(true));
      }
      while (moved) {
        var following = moved.nextSibling;
        copy.appendChild(moved);
        moved = following;
      }
      if (parent.tagName === "OL") {
        var kept = parent.children.length - (first.hasAttribute("data-continued") ? 1 : 0);
        copy.setAttribute("start", Number(parent.getAttribute("start") || 1) + kept);
      }
      parent.insertAdjacentElement("afterend", copy);
      if (!parent.textContent.trim() && !parent.querySelector("img, svg")) parent.remove();
      moved = copy;
      parent = up;
    }
    var next = document.createElement("section");
    while (moved) {
      var after = moved.nextSibling;
      next.appendChild(moved);
      moved = after;
    }
    slide.insertAdjacentElement("afterend", next);
    return next;
  }

  // Prose that runs past the slide's bottom is cut after the last sentence that ends above it (in a paragraph or
  // an item), or else before the block it is in, a heading going with what it heads, and goes on on a new slide
  // right after this one. Returns that slide, or null where nothing runs past or nothing would stay.
  function splitProse(slide) {
    var limit = contentBottom(slide), blocks = proseBlocks(slide), k = 0;
    while (k < blocks.length && blocks[k].getBoundingClientRect().bottom <= limit) k++;
    var cells = slide.querySelectorAll(":scope > .jp-Cell"), last = blocks[blocks.length - 1], whole = false;
    if (k === blocks.length && last && slide.scrollHeight > slide.clientHeight &&
        last.closest(".jp-Cell") === cells[cells.length - 1]) {
      k--;  // the last block fits, but not the margins below it (a display formula's): it goes on, whole
      whole = true;
    }
    if (k === blocks.length) return null;
    var block = blocks[k], first = block;
    var end = !whole && /^(P|LI)$/.test(block.tagName) && lastSentenceEnd(block, limit);
    if (end) {
      var rest = document.createRange();
      rest.setStart(end.startContainer, end.startOffset);
      rest.setEnd(block, block.childNodes.length);
      first = block.cloneNode(false);
      first.removeAttribute("id");
      first.appendChild(rest.extractContents());
      if (block.tagName === "LI") first.setAttribute("data-continued", "");  // the same item: no new bullet
      block.insertAdjacentElement("afterend", first);
    } else {
      while (k > 0 && /^H[1-6]$/.test(blocks[k - 1].tagName)) first = blocks[--k];
      var before = document.createRange();
      before.setStart(slide, 0);
      before.setEndBefore(first);
      if (!before.toString().trim()) return null;  // the block is the slide's first: moving it would not help
    }
    return continueAfter(slide, first);
  }

  // Where cells run past the slide's bottom though the frames gave what they could: the first such cell and
  // those after it go on a new slide after this one (not the slide's first cell: it would not help). Returns it.
  function splitCells(slide) {
    var limit = contentBottom(slide), cells = slide.querySelectorAll(":scope > .jp-Cell");
    for (var k = 1; k < cells.length; k++) {
      if (cells[k].offsetHeight > 0 && cells[k].getBoundingClientRect().bottom > limit) {
        return continueAfter(slide, cells[k]);
      }
    }
    return null;
  }

  // The tallest blocks give way, tallest first and only as far as needed; true where the slide then fits.
  function frame(slide) {
    var over = slide.scrollHeight - slide.clientHeight;
    for (var step = 0; over > 0 && step < 50; step++, over = slide.scrollHeight - slide.clientHeight) {
      var blocks = Array.prototype.filter.call(slide.querySelectorAll(BLOCKS), function (b) {
        return b.offsetHeight > FRAME_MIN_PX && !b.parentElement.closest("[data-fit]");
      });
      if (!blocks.length) return false;
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
    return over <= 0;
  }

  // Runs ``fn`` with every slide laid out (not reveal's display: none for the far ones), as they are measured.
  function measuring(fn) {
    var root = document.documentElement, was = root.classList.contains("tab-measuring");
    root.classList.add("tab-measuring");
    fn();
    if (!was) root.classList.remove("tab-measuring");
  }

  // One slide by the fit rule (this file's first comment); a slide it adds after this one is fitted in turn. A
  // slide fitted again (live output, MathJax) is split again where its prose or cells have grown past its bottom.
  function fit(slide) {
    reset(slide);
    scaleMath(slide);
    var added = splitProse(slide);
    if (!frame(slide) && !added) {
      added = splitCells(slide);
      if (added) {
        reset(slide);
        frame(slide);  // what is still too tall, nothing else giving way: the browser test reports it
      }
    }
    if (added) {
      if (reveal) reveal.sync();
      measuring(function () { fit(added); });
    }
  }

  function fitAll() {
    measuring(function () { leaves().forEach(fit); });
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
    // Fitted before reveal.js starts, at its width (it sets the same), since its PDF layout copies the slides then;
    // and again once it has, with what has loaded since.
    document.querySelector(".reveal .slides").style.width = WIDTH + "px";
    fitAll();
    reveal = Reveal;
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
