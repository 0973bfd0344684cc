// Draws a lineage graph: dagre lays it out in layers, left to right; SVG draws it; the
// visitor pans (drag, arrow keys), zooms (wheel, + and -), fits (0) and opens a node
// (click, Enter). A node's state is an icon and words, never colour alone.
import { h, s } from "./dom.js";

const NODE_H = 46;
const CHAR_W = 7.1;
const MAX_CHARS = 40;
// Text is never drawn below 11 px: the 11.5 px second line needs a scale of 0.96, the
// 13 px label 0.85. Below 0.96 nodes turn compact (the label alone, grown to stay 11 px).
const MIN_TEXT_PX = 11;
const FULL = MIN_TEXT_PX / 11.5;
const READABLE = MIN_TEXT_PX / 13;

function clip(text) {
  return text.length > MAX_CHARS ? `${text.slice(0, MAX_CHARS - 1)}…` : text;
}

function layout(nodes, edges) {
  const g = new window.dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 14, ranksep: 64, marginx: 24, marginy: 24 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) {
    const chars = Math.max(clip(n.label).length, n.sub.length + 2);
    g.setNode(n.id, { width: Math.min(320, Math.max(130, chars * CHAR_W + 30)), height: NODE_H });
  }
  for (const [from, to] of edges) if (g.hasNode(from) && g.hasNode(to)) g.setEdge(from, to);
  window.dagre.layout(g);
  return g;
}

function edgePath(points) {
  const [first, ...rest] = points;
  return `M${first.x},${first.y} ` + rest.map((p) => `L${p.x},${p.y}`).join(" ");
}

function drawNode(n, box, focus, tooltip, onOpen, reveal) {
  const el = s("g", {
    class: `node ${n.kind} ${n.tone}${n.id === focus ? " focus" : ""}`,
    transform: `translate(${box.x - box.width / 2},${box.y - box.height / 2})`,
    tabindex: 0, role: "button", "data-id": n.id, "data-state": n.state || "",
    "aria-label": [n.label, n.sub, ...n.tip].join(". "),
  },
  s("rect", { width: box.width, height: box.height, rx: n.kind === "job" ? 23 : 5 }),
  s("text", { x: 14, y: 19, class: "label", "data-full": n.label, "data-width": box.width }, clip(n.label)),
  s("text", { x: 14, y: 36, class: "sub" }, n.sub));
  const show = () => tooltip.show(el, n);
  el.addEventListener("mouseenter", show);
  el.addEventListener("focus", () => {
    reveal(box);
    show();
  });
  el.addEventListener("mouseleave", tooltip.hide);
  el.addEventListener("blur", tooltip.hide);
  el.addEventListener("click", () => onOpen(n));
  el.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      onOpen(n);
    }
  });
  return el;
}

function tooltips() {
  const tip = document.getElementById("tooltip");
  return {
    show(el, n) {
      tip.replaceChildren(h("strong", null, n.label), h("div", null, n.sub), ...n.tip.map((t) => h("div", null, t)));
      const r = el.getBoundingClientRect();
      tip.hidden = false;
      tip.style.left = `${Math.max(4, Math.min(window.innerWidth - tip.offsetWidth - 4, r.left + window.scrollX))}px`;
      tip.style.top = `${r.bottom + window.scrollY + 6}px`;
    },
    hide() {
      tip.hidden = true;
    },
  };
}

// Pan and zoom by rewriting one transform; the layout is never recomputed.
function viewport(svg, root, size) {
  const view = { x: 0, y: 0, k: 1 };
  const room = () => [svg.clientWidth || 800, svg.clientHeight || 500];
  const apply = () => {
    root.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
    compact(svg, view.k);
  };
  const zoom = (factor, cx, cy) => {
    const k = Math.min(3, Math.max(0.1, view.k * factor));
    view.x = cx - ((cx - view.x) * k) / view.k;
    view.y = cy - ((cy - view.y) * k) / view.k;
    view.k = k;
    apply();
  };
  const fitScale = () => {
    const [w, hgt] = room();
    return Math.min(1.2, w / size.width, hgt / size.height);
  };
  const fit = () => {
    const [w, hgt] = room();
    view.k = fitScale();
    view.x = (w - size.width * view.k) / 2;
    view.y = (hgt - size.height * view.k) / 2;
    apply();
  };
  const centre = (box) => {
    const [w, hgt] = room();
    view.x = w / 2 - box.x * view.k;
    view.y = hgt / 2 - box.y * view.k;
    apply();
  };
  // Opens fitted when the whole graph reads at 11 px or more; else at 100 % on its node.
  const start = () => {
    if (fitScale() >= READABLE || !size.focus) return fit();
    view.k = 1;
    return centre(size.focus);
  };
  // A node reached by Tab that is off-screen comes into view.
  const reveal = (box) => {
    const [w, hgt] = room();
    const [left, top] = [view.x + (box.x - box.width / 2) * view.k, view.y + (box.y - box.height / 2) * view.k];
    const [right, bottom] = [left + box.width * view.k, top + box.height * view.k];
    if (left < 0 || top < 0 || right > w || bottom > hgt) centre(box);
  };
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    const r = svg.getBoundingClientRect();
    zoom(event.deltaY < 0 ? 1.15 : 1 / 1.15, event.clientX - r.left, event.clientY - r.top);
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    if (event.target.closest(".node")) return;
    drag = { x: event.clientX - view.x, y: event.clientY - view.y };
    svg.setPointerCapture(event.pointerId);
  });
  svg.addEventListener("pointermove", (event) => {
    if (!drag) return;
    view.x = event.clientX - drag.x;
    view.y = event.clientY - drag.y;
    apply();
  });
  svg.addEventListener("pointerup", () => { drag = null; });
  svg.addEventListener("keydown", (event) => {
    const middle = () => zoom(event.key === "-" ? 1 / 1.2 : 1.2, svg.clientWidth / 2, svg.clientHeight / 2);
    const moves = { ArrowLeft: [40, 0], ArrowRight: [-40, 0], ArrowUp: [0, 40], ArrowDown: [0, -40] };
    if (event.key === "+" || event.key === "=" || event.key === "-") middle();
    else if (event.key === "0") fit();
    else if (moves[event.key] && event.target === svg) {
      view.x += moves[event.key][0];
      view.y += moves[event.key][1];
      apply();
    } else return;
    event.preventDefault();
  });
  return { zoom, fit, start, reveal, center: () => [svg.clientWidth / 2, svg.clientHeight / 2] };
}

// Below full scale nodes show their label alone, sized to stay 11 px on screen and
// clipped to the node's width.
function compact(svg, k) {
  const small = k < FULL;
  if (!small && !svg.classList.contains("compact")) return;
  svg.classList.toggle("compact", small);
  const px = small ? Math.max(13, MIN_TEXT_PX / k) : 13;
  svg.style.setProperty("--label-px", `${px}px`);
  for (const label of svg.querySelectorAll("text.label")) {
    const fits = Math.max(4, Math.floor((Number(label.dataset.width) - 20) / (CHAR_W * (px / 13))));
    const full = label.dataset.full;
    label.textContent = small && full.length > fits ? `${full.slice(0, fits - 1)}…` : clip(full);
  }
}

export function drawGraph(nodes, edges, { focus, onOpen }) {
  const g = layout(nodes, edges);
  const tooltip = tooltips();
  const root = s("g", { class: "viewport" });
  const svg = s("svg", {
    class: "graph", tabindex: 0, role: "group",
    "aria-label": `Lineage graph: ${nodes.length} nodes, ${edges.length} edges. Tab to a node, Enter opens it; + and - zoom, arrows pan, 0 fits.`,
  },
  s("defs", null, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
    s("path", { d: "M 0 0 L 10 5 L 0 10 z" }))),
  root);
  for (const e of g.edges()) {
    root.append(s("path", { class: "edge", d: edgePath(g.edge(e).points), "marker-end": "url(#arrow)", "data-from": e.v, "data-to": e.w }));
  }
  const size = {
    width: g.graph().width || 1,
    height: g.graph().height || 1,
    focus: focus && g.hasNode(focus) ? g.node(focus) : null,
  };
  const view = viewport(svg, root, size);
  for (const n of nodes) root.append(drawNode(n, g.node(n.id), focus, tooltip, onOpen, view.reveal));
  const tools = h("div", { class: "graph-tools", role: "toolbar", "aria-label": "Zoom" },
    h("button", { type: "button", onclick: () => view.zoom(1.2, ...view.center()), "aria-label": "Zoom in" }, "+"),
    h("button", { type: "button", onclick: () => view.zoom(1 / 1.2, ...view.center()), "aria-label": "Zoom out" }, "−"),
    h("button", { type: "button", onclick: view.fit }, "Fit"));
  // Fit once the graph is in the document and has a size.
  requestAnimationFrame(() => view.start());
  return h("div", { class: "graph-box" }, tools, svg);
}
