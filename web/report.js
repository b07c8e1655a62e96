// hotpath lab report: draws every case of the embedded result documents (hotpath-lab/1, docs/lab.md) from their
// JSON alone: no case, variant or metric name is known here. Text from the data only ever goes in through
// textContent or attributes, never as markup. When done, <body> says data-rendered="N charts" and data-errors
// counts script errors (window.onerror, unhandled rejections, console.error); each chart names its series in
// data-series, which the headless browser test reads back.
(function () {
    "use strict";

    const body = document.body;
    function countError(what) {
        body.dataset.errors = String(Number(body.dataset.errors || "0") + 1);
        if (!body.dataset.firstError) {
            body.dataset.firstError = String(what);
        }
    }
    window.addEventListener("error", (e) => countError(e.message + " at " + e.lineno + ":" + e.colno));
    window.addEventListener("unhandledrejection", (e) => countError(e.reason));
    const consoleError = console.error.bind(console);
    console.error = function (...args) {
        countError(args.join(" "));
        consoleError(...args);
    };

    function el(tag, attrs, ...children) {
        const e = document.createElement(tag);
        for (const [k, v] of Object.entries(attrs || {})) {
            e.setAttribute(k, v);
        }
        for (const c of children) {
            if (c !== null && c !== undefined) {
                e.append(c instanceof Node ? c : String(c));
            }
        }
        return e;
    }

    // The SVG namespace, from the HTML parser itself (an <svg> element parsed from markup is in it).
    const svgHolder = document.createElement("div");
    svgHolder.innerHTML = "<svg></svg>";
    const SVG_NS = svgHolder.firstChild.namespaceURI;
    function svg(tag, attrs, ...children) {
        const e = document.createElementNS(SVG_NS, tag);
        for (const [k, v] of Object.entries(attrs || {})) {
            e.setAttribute(k, String(v));
        }
        for (const c of children) {
            e.append(c instanceof Node ? c : String(c));
        }
        return e;
    }

    function cssVar(name) {
        return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    }
    const SERIES_COLOURS = 8;
    function colour(i) {
        return cssVar("--series-" + (i % SERIES_COLOURS));
    }
    function colourVar(i) {
        return "var(--series-" + (i % SERIES_COLOURS) + ")";
    }

    function isNumber(v) {
        return typeof v === "number" && Number.isFinite(v);
    }
    function fmt(v) {
        if (!isNumber(v)) {
            return "\u2013";
        }
        const a = Math.abs(v);
        const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
        return v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
    }
    function asArray(v) {
        return Array.isArray(v) ? v : [];
    }
    function asObject(v) {
        return v !== null && typeof v === "object" && !Array.isArray(v) ? v : {};
    }

    // The latency keys of the variants' latency_ms objects, in the order first seen.
    function latencyKeys(variants) {
        const keys = [];
        for (const v of variants) {
            for (const [k, x] of Object.entries(asObject(v.latency_ms))) {
                if (isNumber(x) && !keys.includes(k)) {
                    keys.push(k);
                }
            }
        }
        return keys;
    }

    // ---- charts (uPlot): each made again on resize of its holder's width and on a change of colour scheme ----
    const charts = [];
    const CHART_HEIGHT = 240;

    function chartWidth(holder) {
        return Math.max(220, Math.floor(holder.clientWidth || holder.getBoundingClientRect().width || 600));
    }

    // Calls `redraw(width)` when the holder's width changes, in the next frame rather than inside the observer's
    // callback: a redraw changes heights, and doing it there would loop the observer (a "ResizeObserver loop" error).
    function onWidthChange(holder, redraw) {
        if (typeof ResizeObserver !== "function") {
            return;
        }
        let width = chartWidth(holder);
        let pending = false;
        new ResizeObserver(() => {
            if (pending) {
                return;
            }
            pending = true;
            requestAnimationFrame(() => {
                pending = false;
                const w = chartWidth(holder);
                if (w !== width) {
                    width = w;
                    redraw(w);
                }
            });
        }).observe(holder);
    }

    function addChart(parent, kind, title, xLabel, yLabel, x, series, options) {
        const holder = el("div", { class: "chart", "data-chart": kind });
        holder.dataset.series = JSON.stringify(series.map((s) => s.label));
        holder.dataset.points = String(x.length);
        const plot = el("div", { class: "plot" });
        holder.append(el("h4", {}, title), plot);
        parent.append(holder);
        const chart = { holder, plot, u: null };
        chart.make = function () {
            if (chart.u) {
                chart.u.destroy();
            }
            const axis = { stroke: cssVar("--muted"), grid: { stroke: cssVar("--grid") }, ticks: { stroke: cssVar("--grid") } };
            const opts = {
                width: chartWidth(holder),
                height: CHART_HEIGHT,
                scales: Object.assign({ x: { time: false } }, (options && options.scales) || {}),
                axes: [
                    Object.assign({}, axis, { label: xLabel }, (options && options.xAxis) || {}),
                    Object.assign({}, axis, { label: yLabel, size: 64 }),
                ],
                series: [{ label: xLabel }].concat(
                    series.map((s, i) => ({
                        label: s.label,
                        stroke: colour(s.colour !== undefined ? s.colour : i),
                        width: 2,
                        dash: s.dash,
                        spanGaps: false,
                        points: { show: x.length <= 40 },
                        value: (u, v) => fmt(v),
                    })),
                ),
                legend: { live: true },
                cursor: { drag: { x: true, y: false } },
            };
            chart.u = new uPlot(opts, [x].concat(series.map((s) => s.values)), plot);
            holder.dataset.width = String(opts.width);
        };
        chart.make();
        charts.push(chart);
        onWidthChange(holder, (w) => {
            chart.u.setSize({ width: w, height: CHART_HEIGHT });
            holder.dataset.width = String(w);
        });
        return holder;
    }

    // Per second of the measured window: the variant's latency figures (all of latency_ms but the mean).
    function latencyOverTime(parent, v) {
        const seconds = asArray(v.seconds);
        const keys = latencyKeys(seconds).filter((k) => k !== "mean");
        const x = seconds.map((s, i) => (isNumber(s.second) ? s.second : i));
        const series = keys.map((k, i) => ({
            label: k,
            colour: i,
            values: seconds.map((s) => (s.responses > 0 && isNumber(asObject(s.latency_ms)[k]) ? s.latency_ms[k] : null)),
        }));
        addChart(parent, "latency-over-time", String(v.name) + ": latency per second", "second", "ms", x, series);
    }

    // Responses (and errors, when there were any) per second, one series per variant.
    function rateOverTime(parent, variants) {
        const length = Math.max(0, ...variants.map((v) => asArray(v.seconds).length));
        const x = Array.from({ length }, (_, i) => i);
        const series = variants.map((v, i) => ({
            label: String(v.name),
            colour: i,
            values: x.map((s) => (s < asArray(v.seconds).length ? asArray(v.seconds)[s].responses : null)),
        }));
        variants.forEach((v, i) => {
            if (asArray(v.seconds).some((s) => s.errors > 0)) {
                series.push({
                    label: String(v.name) + " errors",
                    colour: i,
                    dash: [6, 4],
                    values: x.map((s) => (s < asArray(v.seconds).length ? asArray(v.seconds)[s].errors : null)),
                });
            }
        });
        addChart(parent, "rate-over-time", "Requests per second", "second", "requests/s", x, series);
    }

    // hotpath-load/1 histogram bucket `index` starts at m << shift ns (docs/load-json.md); eight bins per power
    // of two (16 buckets each) smooth the 1 % buckets. Numbers, not 32-bit shifts: values reach 2^37 ns.
    const BUCKETS_PER_BIN = 16;
    function bucketStartNs(r) {
        const shift = Math.floor(r / 128) - 1;
        const m = (r % 128) + 128;
        return m * Math.pow(2, shift);
    }
    function distribution(parent, variants) {
        const perVariant = variants.map((v) => {
            const counts = asArray(asObject(asObject(asObject(v.load).latency).state).counts);
            const bins = new Map();
            let total = 0;
            for (const pair of counts) {
                if (Array.isArray(pair) && isNumber(pair[0]) && isNumber(pair[1])) {
                    const bin = Math.floor((pair[0] + 506) / BUCKETS_PER_BIN);
                    bins.set(bin, (bins.get(bin) || 0) + pair[1]);
                    total += pair[1];
                }
            }
            return { bins, total };
        });
        const all = perVariant.flatMap((p) => Array.from(p.bins.keys()));
        if (all.length === 0) {
            return;
        }
        const first = Math.min(...all) - 1;
        const last = Math.max(...all) + 1;
        const x = [];
        for (let b = first; b <= last; ++b) {
            const lo = bucketStartNs(b * BUCKETS_PER_BIN);
            const hi = bucketStartNs((b + 1) * BUCKETS_PER_BIN);
            x.push(Math.sqrt(lo * hi) / 1e6);
        }
        const series = variants.map((v, i) => ({
            label: String(v.name),
            colour: i,
            values: x.map((_, j) => {
                const p = perVariant[i];
                return p.total > 0 ? (100 * (p.bins.get(first + j) || 0)) / p.total : null;
            }),
        }));
        addChart(parent, "latency-distribution", "Latency distribution (log axis)", "latency, ms", "% of requests", x,
            series, { scales: { x: { time: false, distr: 3, log: 10 } } });
    }

    // ---- bars (inline SVG), one SVG unit per CSS pixel: drawn again when the holder's width changes ----
    function bars(parent, kind, title, groups, unit) {
        const holder = el("div", { class: "chart bars", "data-bars": kind }, el("h4", {}, title));
        holder.dataset.series = JSON.stringify(groups.map((g) => g.label));
        parent.append(holder);
        const rows = groups.flatMap((g) => g.bars);
        const max = Math.max(0, ...rows.map((b) => (isNumber(b.value) ? b.value : 0)));
        let picture = null;
        const draw = (W) => {
            const labelW = 44;
            const valueW = 96;
            const barH = 16;
            const gap = 4;
            let y = 4;
            const g = svg("g");
            for (const group of groups) {
                g.append(svg("text", { x: 0, y: y + 13, "font-weight": 700 }, group.label));
                y += 20;
                for (const b of group.bars) {
                    const w = isNumber(b.value) && max > 0 ? Math.max(1, ((W - labelW - valueW) * b.value) / max) : 0;
                    g.append(svg("text", { x: 8, y: y + 12 }, b.label));
                    g.append(svg("rect", { x: labelW, y, width: w, height: barH, rx: 2, style: "fill: " + colourVar(b.colour) }));
                    g.append(svg("text", { x: labelW + w + 6, y: y + 12 }, fmt(b.value) + " " + unit));
                    y += barH + gap;
                }
                y += 6;
            }
            g.append(svg("line", { class: "axis", x1: labelW, y1: 0, x2: labelW, y2: y }));
            const next = svg("svg", { viewBox: "0 0 " + W + " " + y, width: W, height: y, role: "img", "aria-label": title }, g);
            if (picture) {
                picture.replaceWith(next);
            } else {
                holder.append(next);
            }
            picture = next;
        };
        draw(chartWidth(holder));
        onWidthChange(holder, draw);
    }

    // ---- one case ----
    function verdict(doc) {
        const h = asObject(doc.headline);
        if (!h.label) {
            return null;
        }
        const p = el("p", { class: "verdict" }, String(h.label) + ": ");
        let value;
        let rest = "";
        if (!isNumber(h.value)) {
            value = "not computed";
        } else if (h.denominator) {
            value = h.value.toFixed(1) + "x";
        } else {
            value = fmt(h.value);
            if (isNumber(h.write_up) && h.write_up !== 0) {
                rest = " (" + (h.value / h.write_up).toFixed(2) + "x the write-up)";
            }
        }
        p.append(el("span", { class: "value" }, value));
        p.append("; write-up: " + String(h.write_up_text !== undefined ? h.write_up_text : h.write_up) + rest);
        return p;
    }

    function figuresTable(variants) {
        const keys = latencyKeys(variants);
        const head = el("tr", {}, el("th", {}, ""), ...variants.map((v) => el("th", {}, String(v.name))));
        const rows = [head];
        const row = (label, cell) => rows.push(el("tr", {}, el("td", {}, label), ...variants.map((v) => el("td", {}, cell(v)))));
        for (const k of keys) {
            row(k + " ms", (v) => fmt(asObject(v.latency_ms)[k]));
        }
        row("requests/s", (v) => fmt(v.rps));
        row("requests", (v) => (isNumber(v.requests) ? String(v.requests) : "\u2013"));
        row("errors", (v) => (isNumber(v.errors) ? String(v.errors) : "\u2013"));
        row("measured s", (v) => fmt(v.measured_s));
        // The path loaded: the scheme, host and port were the child service's, gone after the run.
        row("path", (v) => (typeof v.url === "string" ? v.url.replace(/^[a-z]+:\/\/[^\/]*/i, "") : "\u2013"));
        return el("div", { class: "table-wrap" }, el("table", {}, ...rows));
    }

    function diagnosisList(doc) {
        const list = el("ul", { class: "diagnosis" });
        const add = (who, f) => {
            f = asObject(f);
            const tag = el("span", { class: "tag " + (f.problem ? "problem" : "ok") }, f.problem ? "problem" : "ok");
            const where = [f.kind, f.method, f.route].filter((s) => s).join(" ");
            list.append(el("li", {}, tag, el("b", {}, who + ": "), String(f.text !== undefined ? f.text : ""),
                where ? el("span", { class: "note" }, " (" + where + ")") : null));
        };
        for (const v of asArray(doc.variants)) {
            asArray(v.diagnosis).forEach((f) => add(String(v.name), f));
        }
        for (const s of asArray(doc.shared)) {
            asArray(s.diagnosis).forEach((f) => add(String(s.name) + " (shared)", f));
        }
        return list.childElementCount > 0 ? list : null;
    }

    function renderCase(main, doc, index) {
        const id = "case-" + index;
        const section = el("section", { class: "case", id });
        main.append(section);
        if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
            section.append(el("h2", {}, "document " + (index + 1)), el("p", { class: "error" }, "not a result document"));
            return;
        }
        const name = doc.case !== undefined ? String(doc.case) : "case " + (index + 1);
        section.dataset.case = name;
        document.getElementById("cases-nav").append(el("a", { href: "#" + id }, name));
        section.append(el("h2", {}, name + (doc.quick ? " (quick)" : "") + (doc.https ? " over HTTPS" : "")));
        if (doc.title) {
            section.append(el("p", { class: "note" }, String(doc.title)));
        }
        if (typeof doc.schema === "string" && !doc.schema.startsWith("hotpath-lab/")) {
            section.append(el("p", { class: "error" }, "schema " + doc.schema + ": drawn as far as it reads like hotpath-lab/1"));
        }
        section.append(verdict(doc) || "");
        const variants = asArray(doc.variants).filter((v) => v !== null && typeof v === "object");
        if (variants.length === 0) {
            section.append(el("p", { class: "note" }, "no variants in this document"));
            return;
        }
        const diagnosis = diagnosisList(doc);
        if (diagnosis) {
            section.append(el("h3", {}, "Diagnosis"), diagnosis);
        }
        section.append(el("h3", {}, "Variants"), figuresTable(variants));
        const compare = el("div", { class: "grid" });
        section.append(compare);
        const shown = latencyKeys(variants).filter((k) => ["p50", "p95", "p99"].includes(k));
        const keys = shown.length > 0 ? shown : latencyKeys(variants).slice(0, 3);
        bars(compare, "latency", "Latency by variant", variants.map((v, i) => ({
            label: String(v.name),
            bars: keys.map((k) => ({ label: k, value: asObject(v.latency_ms)[k], colour: i })),
        })), "ms");
        bars(compare, "rps", "Requests per second by variant", variants.map((v, i) => ({
            label: String(v.name),
            bars: [{ label: "req/s", value: v.rps, colour: i }],
        })), "/s");
        section.append(el("h3", {}, "Over time and distribution"));
        const grid = el("div", { class: "grid" });
        section.append(grid);
        rateOverTime(grid, variants);
        distribution(grid, variants);
        for (const v of variants) {
            latencyOverTime(grid, v);
        }
    }

    // A `hotpath lab capacity` result (hotpath-capacity/1, docs/capacity.md): the verdict, the fit, the steps, and
    // throughput and latency against users with the fitted curve.
    function renderCapacity(main, doc, index) {
        const id = "case-" + index;
        const section = el("section", { class: "case", id });
        main.append(section);
        const name = "capacity of " + String(doc.url);
        section.dataset.case = name;
        document.getElementById("cases-nav").append(el("a", { href: "#" + id }, "capacity"));
        section.append(el("h2", {}, name));
        const v = asObject(doc.verdict);
        if (v.text) {
            section.append(el("p", { class: "verdict" }, String(v.text)));
        }
        const fit = doc.fit !== null && typeof doc.fit === "object" ? doc.fit : null;
        if (fit) {
            const pm = (x, se) => fmt(x) + (isNumber(se) ? " \u00b1 " + fmt(se) : " (at its bound)");
            section.append(el("p", { class: "note" },
                "X(N) = \u03bbN / (1 + \u03c3(N\u22121) + \u03baN(N\u22121)): \u03bb = " + pm(fit.lambda, fit.lambda_se) +
                "/s, \u03c3 = " + (isNumber(fit.sigma) ? fit.sigma.toPrecision(3) : "\u2013") +
                ", \u03ba = " + (isNumber(fit.kappa) ? fit.kappa.toPrecision(3) : "\u2013") +
                ", R\u00b2 = " + (isNumber(fit.r_squared) ? fit.r_squared.toFixed(3) : "\u2013") +
                (isNumber(fit.peak_users) ? "; peak at " + fmt(fit.peak_users) + " users" : "")));
        }
        const steps = asArray(doc.steps).filter((s) => s !== null && typeof s === "object" && isNumber(s.users));
        if (steps.length === 0) {
            section.append(el("p", { class: "note" }, "no steps in this document"));
            return;
        }
        const table = el("table", {},
            el("thead", {}, el("tr", {}, ...["users", "answers/s", "mean ms", "p99 ms", "errors %", "in flight", "fitted"]
                .map((h) => el("th", {}, h)))));
        const rows = el("tbody");
        for (const s of steps) {
            rows.append(el("tr", {}, el("td", {}, String(s.users)), el("td", {}, fmt(s.throughput)),
                el("td", {}, fmt(s.mean_latency_s * 1000)), el("td", {}, fmt(s.p99_s * 1000)),
                el("td", {}, fmt(s.error_share * 100)), el("td", {}, fmt(s.in_flight)),
                el("td", {}, s.fitted ? "yes" : "no")));
        }
        // The first step that queued, measured again once the steps were done (a capacity that moved with time).
        const again = doc.recheck !== null && typeof doc.recheck === "object" && doc.recheck.again !== null &&
            typeof doc.recheck.again === "object" && isNumber(doc.recheck.again.users) ? doc.recheck.again : null;
        if (again) {
            rows.append(el("tr", { class: "recheck" }, el("td", {}, again.users + ", again at the end"),
                el("td", {}, fmt(again.throughput)), el("td", {}, fmt(again.mean_latency_s * 1000)),
                el("td", {}, fmt(again.p99_s * 1000)), el("td", {}, fmt(again.error_share * 100)),
                el("td", {}, fmt(again.in_flight)), el("td", {}, "no")));
        }
        table.append(rows);
        section.append(el("h3", {}, "Steps"), el("div", { class: "table-wrap" }, table));
        const users = steps.map((s) => s.users);
        const logUsers = { scales: { x: { time: false, distr: 3, log: 2 } } };
        const grid = el("div", { class: "grid" });
        section.append(el("h3", {}, "Against users"), grid);
        const throughput = [{ label: "measured", values: steps.map((s) => (isNumber(s.throughput) ? s.throughput : null)), colour: 0 }];
        if (fit && isNumber(fit.lambda) && isNumber(fit.sigma) && isNumber(fit.kappa)) {
            throughput.push({
                label: "fitted",
                colour: 1,
                dash: [6, 4],
                values: users.map((n) => fit.lambda * n / (1 + fit.sigma * (n - 1) + fit.kappa * n * (n - 1))),
            });
        }
        if (again && users.includes(again.users) && isNumber(again.throughput)) {
            throughput.push({
                label: "again, at the end",
                colour: 3,
                values: users.map((n) => (n === again.users ? again.throughput : null)),
            });
        }
        addChart(grid, "capacity-throughput", "Answers per second", "users", "answers/s", users, throughput, logUsers);
        addChart(grid, "capacity-latency", "Latency", "users", "ms", users, [
            { label: "mean", values: steps.map((s) => (isNumber(s.mean_latency_s) ? s.mean_latency_s * 1000 : null)), colour: 0 },
            { label: "p99", values: steps.map((s) => (isNumber(s.p99_s) ? s.p99_s * 1000 : null)), colour: 2 },
        ], logUsers);
    }

    function render() {
        const main = document.getElementById("report");
        main.textContent = "";
        let docs = [];
        try {
            docs = JSON.parse(document.getElementById("lab-data").textContent);
        } catch (e) {
            main.append(el("p", { class: "error" }, "the embedded data does not parse: " + e.message));
            countError(e.message);
        }
        asArray(docs).forEach((doc, i) => {
            try {
                if (doc !== null && typeof doc === "object" && doc.schema === "hotpath-capacity/1") {
                    renderCapacity(main, doc, i);
                } else {
                    renderCase(main, doc, i);
                }
            } catch (e) {
                main.append(el("p", { class: "error" }, "document " + (i + 1) + ": " + e.message));
                console.error(e && e.stack ? e.stack : e);
            }
        });
        const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)");
        const scheme = () => (dark && dark.matches ? "dark" : "light");
        body.dataset.scheme = scheme();
        if (dark && dark.addEventListener) {
            dark.addEventListener("change", () => {
                body.dataset.scheme = scheme();
                charts.forEach((c) => c.make());
            });
        }
        body.dataset.cases = String(asArray(docs).length);
        // A page of capacity results alone: its note says how they were measured, not the cases' /debug/routes.
        const capacityOnly = asArray(docs).length > 0 &&
            asArray(docs).every((d) => d !== null && typeof d === "object" && d.schema === "hotpath-capacity/1");
        const note = document.querySelector("header.page .note");
        if (capacityOnly && note) {
            note.textContent = "Measured from the outside by hotpath lab capacity (docs/capacity.md): a closed-model " +
                "step load over users, the Universal Scalability Law fitted to its steps.";
        }
        // Wider than the window means a phone would scroll sideways (the tables scroll inside their own box).
        body.dataset.width = document.documentElement.scrollWidth + "/" + document.documentElement.clientWidth;
        body.dataset.rendered = charts.length + " charts";
    }

    render();
})();
