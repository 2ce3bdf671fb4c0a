// gotrace flame graph: click a frame to zoom into it, "Reset zoom" or
// Escape to see everything, "Search" or Ctrl-F to highlight the frames
// whose names match a regular expression (with the share of the samples
// they hold). A URL ending in #search=REGEXP highlights at load,
// #zoom=NAME zooms into the widest frame of that name (both: joined by &).
(function () {
	"use strict";
	var svg = document.getElementById("fg");
	var total = +svg.getAttribute("data-total");
	var unit = svg.getAttribute("data-unit");
	var pad = +svg.getAttribute("data-pad");
	var plot = +svg.getAttribute("data-plot");
	var charWidth = +svg.getAttribute("data-char");
	var details = document.getElementById("fg-details");
	var matched = document.getElementById("fg-matched");
	var highlight = "rgb(220,60,220)";

	// Each frame: its group, its place in weights and its depth.
	var frames = Array.prototype.map.call(svg.querySelectorAll(".fg-f"), function (g) {
		return {
			g: g,
			rect: g.querySelector("rect"),
			text: g.querySelector("text"),
			name: g.getAttribute("data-n"),
			x: +g.getAttribute("data-x"),
			w: +g.getAttribute("data-w"),
			d: +g.getAttribute("data-d")
		};
	});

	function share(w) {
		return (w * 100 / total).toFixed(2) + "%";
	}

	// label cuts a name to what fits width, as the generator does.
	function label(name, width) {
		var fit = Math.floor((width - 6) / charWidth);
		if (fit < 3) {
			return "";
		}
		var chars = Array.from(name);
		return chars.length <= fit ? name : chars.slice(0, fit - 2).join("") + "..";
	}

	// show draws the frames within [x0, x0+w0) from depth d0 up across
	// the whole width; the frames below d0 that hold that range span it,
	// dimmed; every other frame is hidden.
	function show(x0, w0, d0) {
		frames.forEach(function (f) {
			var inside = f.d >= d0 && f.x >= x0 && f.x + f.w <= x0 + w0;
			var below = f.d < d0 && f.x <= x0 && f.x + f.w >= x0 + w0;
			if (!inside && !below) {
				f.g.style.display = "none";
				return;
			}
			f.g.style.display = "";
			var left = inside ? pad + (f.x - x0) / w0 * plot : pad;
			var width = inside ? f.w / w0 * plot : plot;
			f.rect.setAttribute("x", left.toFixed(2));
			f.rect.setAttribute("width", width.toFixed(2));
			f.text.setAttribute("x", (left + 3).toFixed(2));
			f.text.textContent = label(f.name, width);
			f.g.classList.toggle("fg-above", below);
		});
	}

	function reset() {
		show(0, total, 0);
	}

	// search highlights the frames matching pattern and says which share
	// of the total they hold, each sample counted once however many of
	// its frames match.
	function search(pattern) {
		var re;
		try {
			re = pattern ? new RegExp(pattern) : null;
		} catch (e) {
			matched.textContent = "bad regular expression: " + e.message;
			return;
		}
		var hits = [];
		frames.forEach(function (f) {
			var hit = re !== null && re.test(f.name);
			f.rect.setAttribute("fill", hit ? highlight : f.rect.getAttribute("data-fill"));
			if (hit) {
				hits.push(f);
			}
		});
		if (re === null) {
			matched.textContent = " ";
			return;
		}
		// A frame inside a counted frame's range is above it: its
		// samples are already counted.
		hits.sort(function (a, b) { return a.x - b.x || b.w - a.w; });
		var sum = 0, end = 0;
		hits.forEach(function (f) {
			if (f.x >= end) {
				sum += f.w;
				end = f.x + f.w;
			}
		});
		matched.textContent = "Matched " + pattern + ": " + share(sum) + " (" + sum + " " + unit + ")";
	}

	frames.forEach(function (f) {
		f.g.addEventListener("click", function () {
			show(f.x, f.w, f.d);
		});
		f.g.addEventListener("mouseover", function () {
			details.textContent = f.name + " (" + f.w + " " + unit + ", " + share(f.w) + ")";
		});
		f.g.addEventListener("mouseout", function () {
			details.textContent = " ";
		});
	});
	document.getElementById("fg-reset").addEventListener("click", function () {
		reset();
		search("");
	});
	document.getElementById("fg-search").addEventListener("click", function () {
		var pattern = window.prompt("Search frames (regular expression):", "");
		if (pattern !== null) {
			search(pattern);
		}
	});
	window.addEventListener("keydown", function (e) {
		if (e.key === "Escape") {
			reset();
			search("");
		} else if (e.key === "f" && (e.ctrlKey || e.metaKey)) {
			e.preventDefault();
			document.getElementById("fg-search").dispatchEvent(new MouseEvent("click"));
		}
	});
	// #zoom=NAME zooms into the widest frame of that name, #search=REGEXP
	// highlights; joined by &.
	window.location.hash.replace(/^#/, "").split("&").forEach(function (part) {
		var eq = part.indexOf("=");
		var value = decodeURIComponent(part.slice(eq + 1));
		if (part.slice(0, eq) === "search") {
			search(value);
		} else if (part.slice(0, eq) === "zoom") {
			var widest = null;
			frames.forEach(function (f) {
				if (f.name === value && (widest === null || f.w > widest.w)) {
					widest = f;
				}
			});
			if (widest !== null) {
				show(widest.x, widest.w, widest.d);
			}
		}
	});
})();
