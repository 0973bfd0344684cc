// Draws a lineage graph: dagre lays it out in layers, left to right; SVG draws it; the
// visitor pans (drag, arrow keys), zooms (wheel, + and -), fits (0) and opens a node
// (click, Enter). A node's state is an icon and words, never colour alone.
import { h, s } from "./dom.js";

const NODE_H = 46;
const CHAR_W = 7.1;
const MAX_CHARS = 40;
const READABLE = 0.75;

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

function drawNode(n, box, focus, tooltip, onOpen) {
  const el = s("g", {
    class: `node ${n.kind} ${n.tone}${n.id === focus ? " focus" : ""}`,
    transform: `translate(${box.x - box.width / 2},${box.y - box.height / 2})`,
    tabindex: 0, role: "button", "data-id": n.id, "data-state": n.state || "",
    "aria-label": [n.label, n.sub, ...n.tip].join(". "),
  },
  s("rect", { width: box.width, height: box.height, rx: n.kind === "job" ? 23 : 5 }),
  s("text", { x: 14, y: 19, class: "label" }, clip(n.label)),
  s("text", { x: 14, y: 36, class: "sub" }, n.sub));
  const show = () => tooltip.show(el, n);
  el.addEventListener("mouseenter", show);
  el.addEventListener("focus", show);
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
  const apply = () => root.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
  const zoom = (factor, cx, cy) => {
    const k = Math.min(3, Math.max(0.1, view.k * factor));
    view.x = cx - ((cx - view.x) * k) / view.k;
    view.y = cy - ((cy - view.y) * k) / view.k;
    view.k = k;
    apply();
  };
  const fit = () => {
    const w = svg.clientWidth || 800;
    const hgt = svg.clientHeight || 500;
    view.k = Math.min(1.2, w / size.width, hgt / size.height);
    view.x = (w - size.width * view.k) / 2;
    view.y = (hgt - size.height * view.k) / 2;
    apply();
  };
  // A graph too wide to read whole opens at a readable scale around its focus node.
  const start = () => {
    fit();
    if (view.k >= READABLE || !size.focus) return;
    const w = svg.clientWidth || 800;
    const hgt = svg.clientHeight || 500;
    const keep = (at, room, span) => (span < room ? (room - span) / 2 : Math.min(0, Math.max(room - span, at)));
    view.k = READABLE;
    view.x = keep(w / 2 - size.focus.x * view.k, w, size.width * view.k);
    view.y = keep(hgt / 2 - size.focus.y * view.k, hgt, size.height * view.k);
    apply();
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
  return { zoom, fit, start, center: () => [svg.clientWidth / 2, svg.clientHeight / 2] };
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
  for (const n of nodes) root.append(drawNode(n, g.node(n.id), focus, tooltip, onOpen));
  const size = {
    width: g.graph().width || 1,
    height: g.graph().height || 1,
    focus: focus && g.hasNode(focus) ? g.node(focus) : null,
  };
  const view = viewport(svg, root, size);
  const tools = h("div", { class: "graph-tools", role: "toolbar", "aria-label": "Zoom" },
    h("button", { type: "button", onclick: () => view.zoom(1.2, ...view.center()), "aria-label": "Zoom in" }, "+"),
    h("button", { type: "button", onclick: () => view.zoom(1 / 1.2, ...view.center()), "aria-label": "Zoom out" }, "−"),
    h("button", { type: "button", onclick: view.fit }, "Fit"));
  // Fit once the graph is in the document and has a size.
  requestAnimationFrame(() => view.start());
  return h("div", { class: "graph-box" }, tools, svg);
}
