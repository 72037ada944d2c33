// The console's live parts, with no library: each <figure class="chart" data-chart="URL"> is
// redrawn as an SVG line chart from its JSON every refresh, and a running job's page follows the
// job until it ends.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04",
    "#db2777", "#4b5563", "#65a30d"];
  const WIDTH = 400, HEIGHT = 170, LEFT = 44, RIGHT = 6, TOP = 8, BOTTOM = 20;

  function node(name, attributes, text) {
    const element = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
    if (text !== undefined) element.textContent = text;
    return element;
  }

  // 1234567 -> "1.2M", 5 -> "5", 0.25 -> "0.25": axis labels and legends stay short.
  function short(value) {
    const size = Math.abs(value);
    for (const [limit, suffix] of [[1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
      if (size >= limit) return Number((value / limit).toFixed(1)) + suffix;
    }
    return String(Number(value.toFixed(size >= 10 ? 0 : 2)));
  }

  // The axis top: the largest value rounded up to 1, 2 or 5 times a power of ten (at least 1);
  // the caller adds a tenth of headroom, so a flat line (zeros, a constant lag) sits inside.
  function ceiling(largest) {
    if (largest <= 1) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(largest)));
    return [1, 2, 5, 10].map((m) => m * power).find((top) => top >= largest);
  }

  function clock(ms) {
    return new Date(ms).toLocaleTimeString([], {hour12: false});
  }

  function draw(figure, chart) {
    figure.querySelector("figcaption").textContent = chart.title + " (" + chart.unit + ")";
    const plot = figure.querySelector(".plot");
    plot.replaceChildren();
    if (chart.series.length === 0) {
      const empty = document.createElement("p");
      empty.className = "empty";
      empty.textContent = "—";
      plot.append(empty);
      return;
    }
    const points = chart.series.flatMap((s) => s.points);
    const x0 = Math.min(...points.map((p) => p[0]));
    const x1 = Math.max(...points.map((p) => p[0]), x0 + 1);
    const y1 = ceiling(1.1 * Math.max(...points.map((p) => p[1])));
    const x = (t) => LEFT + ((t - x0) / (x1 - x0)) * (WIDTH - LEFT - RIGHT);
    const y = (v) => TOP + (1 - v / y1) * (HEIGHT - TOP - BOTTOM);
    const svg = node("svg", {viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img"});
    for (const fraction of [0, 0.5, 1]) {
      const level = y(y1 * fraction);
      svg.append(node("line", {x1: LEFT, x2: WIDTH - RIGHT, y1: level, y2: level, class: "grid"}));
      svg.append(node("text", {x: LEFT - 4, y: level + 4, "text-anchor": "end"},
        short(y1 * fraction)));
    }
    svg.append(node("text", {x: LEFT, y: HEIGHT - 6}, clock(x0)));
    svg.append(node("text", {x: WIDTH - RIGHT, y: HEIGHT - 6, "text-anchor": "end"}, clock(x1)));
    const legend = document.createElement("ul");
    legend.className = "legend";
    chart.series.forEach((series, index) => {
      const color = COLORS[index % COLORS.length];
      const coordinates = series.points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`);
      if (series.points.length === 1) {
        const [cx, cy] = coordinates[0].split(",");
        svg.append(node("circle", {cx, cy, r: 3, fill: color}));
      } else {
        svg.append(node("polyline", {points: coordinates.join(" "), stroke: color, fill: "none"}));
      }
      const item = document.createElement("li");
      const last = series.points[series.points.length - 1][1];
      item.style.setProperty("--swatch", color);
      item.textContent = `${series.name}: ${short(last)}`;
      legend.append(item);
    });
    plot.append(svg, legend);
  }

  async function refresh(figure) {
    try {
      const response = await fetch(figure.dataset.chart, {cache: "no-store"});
      if (response.ok) draw(figure, await response.json());
    } catch (error) {
      // The console is restarting or the network dropped: the next refresh tries again.
    }
  }

  function charts() {
    const figures = Array.from(document.querySelectorAll("figure.chart"));
    if (figures.length === 0) return;
    const every = Number(document.body.dataset.refreshMs) || 5000;
    figures.forEach(refresh);
    setInterval(() => figures.forEach(refresh), every);
  }

  function follow(section) {
    const timer = setInterval(async () => {
      let job;
      try {
        const response = await fetch("/api/jobs/" + section.dataset.job, {cache: "no-store"});
        if (!response.ok) return;
        job = await response.json();
      } catch (error) {
        return;
      }
      const state = document.getElementById("job-state");
      state.textContent = job.state;
      state.className = "state-" + job.state;
      const bar = document.getElementById("job-progress");
      if (job.fraction !== null) bar.value = job.fraction;
      document.getElementById("job-status").textContent = job.status || "";
      const steps = document.getElementById("job-steps");
      steps.replaceChildren(...job.steps.map((text) => {
        const item = document.createElement("li");
        item.textContent = text;
        return item;
      }));
      const error = document.getElementById("job-error");
      error.textContent = job.error || "";
      error.hidden = !job.error;
      if (job.done) {
        clearInterval(timer);
        section.dataset.done = "true";
      }
    }, 500);
  }

  document.addEventListener("DOMContentLoaded", () => {
    charts();
    const job = document.getElementById("job");
    if (job && job.dataset.done !== "true") follow(job);
  });
})();
