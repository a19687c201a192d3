// The Overview's chooser: which variant to use for an op at a size, a dtype, on a GPU, called one way.
// It reads data/answers.json, written by the site build from the stored results
// (kernelscope.site.answer_pages.records): nothing here computes an answer, it only picks one.
(function () {
  "use strict";

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => node.setAttribute(k, v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function unique(values) {
    return values.filter((v, i) => values.indexOf(v) === i);
  }

  function code(text) {
    return el("code", {}, text);
  }

  function select(name, label) {
    const wrap = el("label", { class: "ks-chooser-field" }, label + " ");
    const box = el("select", { name: name });
    wrap.appendChild(box);
    return [wrap, box];
  }

  function fill(box, options, keep) {
    const before = keep ? box.value : null;
    box.innerHTML = "";
    options.forEach(([value, text]) => box.appendChild(el("option", { value: value }, text)));
    if (before !== null && options.some(([value]) => value === before)) box.value = before;
  }

  function entry(parent, e, withSlower) {
    parent.appendChild(code(e.variant));
    let text = " " + e.time;
    if (withSlower) text += " (" + e.slower + ")";
    if (e.pct !== null && e.pct !== undefined && !withSlower) text += ", " + e.pct.toFixed(0) + "% of the copy bandwidth";
    parent.appendChild(document.createTextNode(text));
  }

  function draw(root, rows) {
    const questions = {};
    (root.dataset.modes || "").split(";").forEach((pair) => {
      const at = pair.indexOf("=");
      if (at > 0) questions[pair.slice(0, at)] = pair.slice(at + 1);
    });
    const form = el("form", { class: "ks-chooser-form" });
    const fields = {};
    [["op", "op"], ["size", "size"], ["dtype", "dtype"], ["machine", "GPU"], ["mode", "timed"]].forEach(([name, label]) => {
      const [wrap, box] = select(name, label);
      fields[name] = box;
      form.appendChild(wrap);
    });
    const out = el("div", { class: "ks-chooser-answer", "aria-live": "polite" });
    root.appendChild(form);
    root.appendChild(out);

    const byNumel = (a, b) => a.numel - b.numel;
    fill(fields.op, unique(rows.map((r) => r.op)).map((o) => [o, o]));  // update() fills the others from it

    function update() {
      const op = fields.op.value;
      const ofOp = rows.filter((r) => r.op === op);
      const sizes = unique(ofOp.slice().sort(byNumel).map((r) => r.size));
      fill(fields.size, sizes.map((s) => [s, s]), true);
      fill(fields.dtype, unique(ofOp.filter((r) => r.size === fields.size.value).map((r) => r.dtype)).map((d) => [d, d]), true);
      const here = ofOp.filter((r) => r.size === fields.size.value && r.dtype === fields.dtype.value);
      fill(fields.machine, unique(here.map((r) => r.machine)).map((m) => [m, here.find((r) => r.machine === m).gpu]), true);
      const onMachine = here.filter((r) => r.machine === fields.machine.value);
      fill(fields.mode, onMachine.map((r) => [r.mode, r.mode + ": " + (questions[r.mode] || r.mode)]), true);
      const a = onMachine.find((r) => r.mode === fields.mode.value);
      out.innerHTML = "";
      if (!a) {
        out.appendChild(el("p", {}, "Nothing measured for this choice."));
        return;
      }
      const best = el("p", { class: "ks-chooser-best" });
      best.appendChild(el("strong", {}, "Use "));
      entry(best, a.best, false);
      best.appendChild(document.createTextNode("."));
      out.appendChild(best);
      const ties = el("p", { class: "ks-chooser-ties" }, a.ties.length ? "Ties (asv cannot tell them apart): " : "No variant ties with it.");
      a.ties.forEach((t, i) => {
        if (i) ties.appendChild(document.createTextNode(", "));
        entry(ties, t, true);
      });
      out.appendChild(ties);
      const next = el("p", { class: "ks-chooser-next" });
      if (a.next) {
        next.appendChild(document.createTextNode("Next, told apart: "));
        entry(next, a.next, true);
        next.appendChild(document.createTextNode("."));
      } else {
        next.appendChild(document.createTextNode("All " + a.variants + " variants measured here tie."));
      }
      out.appendChild(next);
      const link = el("p", { class: "ks-stamp" });
      link.appendChild(document.createTextNode("Commit "));
      link.appendChild(code(a.commit));
      link.appendChild(document.createTextNode(" on " + a.gpu + "; every size: "));
      link.appendChild(el("a", { href: a.op + "/#which-variant-at-which-size" }, "the " + a.op + " page"));
      link.appendChild(document.createTextNode("."));
      out.appendChild(link);
    }

    Object.values(fields).forEach((box) => box.addEventListener("change", update));
    update();
  }

  function start() {
    document.querySelectorAll(".ks-chooser").forEach((root) => {
      if (root.dataset.drawn) return;
      root.dataset.drawn = "1";
      fetch(root.dataset.src)
        .then((r) => r.json())
        .then((rows) => draw(root, rows))
        .catch((err) => {
          root.appendChild(el("p", {}, "The answers could not be loaded (" + err + "); each op page has them as a table."));
        });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
