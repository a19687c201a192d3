"""Vega-Lite specs for the site's charts.

Each function returns a spec (a dict) that reads its data from a JSON file the
build writes under ``data/`` (see :mod:`kernelscope.site.chart_data`); pages
embed it in a ```` ```vegalite ```` fence, which mkdocs-charts-plugin renders
with the vega files shipped in the site. Interaction is Vega-Lite's own:
inputs bound to parameters switch mode, machine and dtype; a point selection
bound to the legend isolates series (click; shift-click adds; double-click
clears); every point carries a tooltip with its exact value, interval and
commit.
"""

from __future__ import annotations

import json

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
INTENSITY_RANGE = (1 / 32, 256)  # FLOP/byte: the four ops sit between 1/8 and 9/8; an H100's ridge near 22
# Point shapes on the roofline: the lecture's kernels, the ones written for speed, the rest.
KIND_SHAPES = {"lecture": "circle", "tuned": "triangle-up", "other": "square"}
LEGEND_HINT = "Click a legend entry to isolate its series, shift-click to add more, double-click to show all."
# Sizes: tables and tooltips name a case as its shape ("4096x4096", 1-D "16777216"); an axis of element counts
# labels its ticks as powers of two, and its title says so.
POW2_X = {"field": "numel", "type": "quantitative", "scale": {"type": "log", "base": 2},
          "axis": {"title": "elements, 2^n (log scale)", "labelExpr": "'2^' + round(log(datum.value) / log(2))",
                   "tickCount": 10}}
# The overview's cells: under the copy bandwidth red, at it near white, over it (a kernel the copy does not bound,
# or noise) blue; the domain is the data's own range, with 100 always in it and at the middle colour. The ends are
# mid-tones, so black text reads on every cell.
PCT_OF_COPY_COLOUR = {"type": "linear", "domain": {"unionWith": [100]}, "domainMid": 100,
                      "range": ["#d6604d", "#f7f7f7", "#4393c3"]}


def _title(text: str, hint: str = LEGEND_HINT) -> dict:
    return {"text": text, "subtitle": hint, "subtitleFontStyle": "italic"}


def _switches(modes: list[str] | None, machines: list[str], dtypes: list[str] | None = None
              ) -> tuple[list[dict], str]:
    """Parameters bound to inputs, and the filter expression that applies them.

    An input appears only when there is a choice: one machine needs no switch.
    Without ``modes`` or ``dtypes`` the data is not filtered on them.
    """
    params, terms = [], []
    if modes:
        params.append({"name": "mode", "value": modes[0],
                       "bind": {"input": "radio", "options": modes, "name": "timing mode "}})
        terms.append("datum.mode === mode")
    for name, options, label in (("machine", machines, "machine "), ("dtype", dtypes, "dtype ")):
        if not options:
            continue
        param = {"name": name, "value": options[0]}
        if len(options) > 1:
            param["bind"] = {"input": "select", "options": options, "name": label}
        params.append(param)
        terms.append(f"datum.{name} === {name}")
    return params, " && ".join(terms)


def _series_selection(field: str = "variant") -> dict:
    return {"name": "series", "select": {"type": "point", "fields": [field]}, "bind": "legend"}


def _faded_unless_selected() -> dict:
    return {"condition": {"param": "series", "value": 1, "empty": True}, "value": 0.12}


TIMING_TOOLTIP = [
    {"field": "variant"}, {"field": "variant_kind", "title": "kind"}, {"field": "size"}, {"field": "dtype"},
    {"field": "mode"},
    {"field": "time", "title": "median time"}, {"field": "ci", "title": "99% interval"},
    {"field": "interval_note", "title": "interval from"},
    {"field": "gbps_text", "title": "bandwidth"}, {"field": "pct_text", "title": "of copy bandwidth"},
    {"field": "samples"}, {"field": "commit"},
]
# Launch-bound points (timing.processes) are drawn hollow: their time is mostly the GPU's
# per-launch cost, and their interval spans processes.
HOLLOW_IF_LAUNCH_BOUND = {"condition": {"test": "datum.launch_bound", "value": 0}, "value": 1}


def _copy_rule(x_field: str | None = None) -> list[dict]:
    """The machine's measured copy bandwidth as a dashed horizontal line, labelled."""
    agg = {"aggregate": [{"op": "max", "field": "copy_gbps", "as": "copy_gbps"}]}
    return [
        {"transform": [agg], "mark": {"type": "rule", "strokeDash": [6, 4], "color": "#888"},
         "encoding": {"y": {"field": "copy_gbps", "type": "quantitative"}}},
        {"transform": [agg, {"calculate": "'measured copy bandwidth ' + format(datum.copy_gbps, ',.0f') + ' GB/s'",
                             "as": "label"}],
         "mark": {"type": "text", "align": "left", "baseline": "bottom", "dx": 4, "dy": -4, "color": "#888"},
         "encoding": {"y": {"field": "copy_gbps", "type": "quantitative"}, "x": {"value": 0},
                      "text": {"field": "label"}}},
    ]


def size_sweep(data_url: str, modes: list[str], machines: list[str], dtypes: list[str], title: str) -> dict:
    """GB/s against size (log x), one line per variant, the copy bandwidth as a roof: the lecture's perf_report plot."""
    params, where = _switches(modes, machines, dtypes)
    y = {"field": "gbps", "type": "quantitative", "title": "GB/s (bytes the op must move / median time)"}
    color = {"field": "variant", "type": "nominal", "scale": {"scheme": "tableau20"},
             "legend": {"title": "variant", "symbolOpacity": 1}}
    return {
        "$schema": SCHEMA, "title": _title(title), "width": "container", "height": 380,
        "data": {"url": data_url}, "params": params,
        "transform": [{"filter": f"{where} && datum.current && datum.sweep && datum.gbps != null"}],
        "layer": [
            {"mark": {"type": "line", "strokeWidth": 2},
             "encoding": {"x": POW2_X, "y": y, "color": color, "opacity": _faded_unless_selected()}},
            {"mark": {"type": "rule"}, "encoding": {"x": POW2_X, "y": {"field": "gbps_low", "type": "quantitative"},
                                                     "y2": {"field": "gbps_high"}, "color": color,
                                                     "opacity": _faded_unless_selected()}},
            {"mark": {"type": "point", "filled": True, "size": 70, "strokeWidth": 2}, "params": [_series_selection()],
             "encoding": {"x": POW2_X, "y": y, "color": color, "stroke": {**color, "legend": None},
                          "fillOpacity": HOLLOW_IF_LAUNCH_BOUND, "opacity": _faded_unless_selected(),
                          "tooltip": TIMING_TOOLTIP}},
            *_copy_rule(),
        ],
    }


REGIME_MODES = ("host", "warm", "graph")  # a Python loop's time per call, the GPU's, the GPU's without launches


def regimes(data_url: str, variants: list[str], machines: list[str], dtypes: list[str], title: str) -> dict:
    """One variant's time per call against size in host, warm and graph mode (log-log): where a loop of calls
    is host-bound (host over warm), where the GPU's per-launch cost dominates (warm over graph), and where the
    three meet (bandwidth-bound)."""
    params, where = _switches(None, machines, dtypes)
    params.append({"name": "variant", "value": variants[0],
                   "bind": {"input": "select", "options": variants, "name": "variant "}})
    color = {"field": "mode", "type": "nominal", "sort": list(REGIME_MODES),
             "scale": {"domain": list(REGIME_MODES), "range": ["#e45756", "#4c78a8", "#54a24b"]},
             "legend": {"title": "mode"}}
    y = {"field": "time_us", "type": "quantitative", "scale": {"type": "log"}, "title": "time per call (µs)"}
    modes = json.dumps(list(REGIME_MODES))
    return {
        "$schema": SCHEMA, "title": _title(title, "Pick a variant below the chart; hover a point for its numbers."),
        "width": "container", "height": 320, "data": {"url": data_url}, "params": params,
        "transform": [{"filter": f"{where} && datum.variant === variant && datum.current && datum.sweep "
                                 f"&& datum.time_us != null && indexof({modes}, datum.mode) >= 0"}],
        "layer": [
            {"mark": {"type": "line", "strokeWidth": 2}, "encoding": {"x": POW2_X, "y": y, "color": color}},
            # filled points only: a hollow point needs a stroke channel on the same field, whose legend
            # setting Vega-Lite reports as conflicting with color's here (the tooltip says launch-bound)
            {"mark": {"type": "point", "filled": True, "size": 70},
             "encoding": {"x": POW2_X, "y": y, "color": color, "tooltip": TIMING_TOOLTIP}},
        ],
    }


def row_shapes(data_url: str, modes: list[str], machines: list[str], dtypes: list[str], sizes: list[str],
               title: str) -> dict:
    """GB/s per row shape at a similar element count: where one program per row runs out of rows."""
    params, where = _switches(modes, machines, dtypes)
    color = {"field": "variant", "type": "nominal", "scale": {"scheme": "tableau20"},
             "legend": {"title": "variant", "symbolOpacity": 1}}
    y = {"field": "gbps", "type": "quantitative", "title": "GB/s"}
    return {
        "$schema": SCHEMA, "title": _title(title), "width": "container", "height": 320,
        "data": {"url": data_url}, "params": params,
        "transform": [{"filter": f"{where} && datum.current && datum.gbps != null "
                                 f"&& indexof({json.dumps(sizes)}, datum.size) >= 0"}],
        "layer": [
            {"mark": {"type": "bar"}, "params": [_series_selection()],
             "encoding": {"x": {"field": "size", "type": "nominal", "sort": sizes, "title": "rows x columns",
                                "axis": {"labelAngle": 0}},
                          "xOffset": {"field": "variant"}, "y": y, "color": color,
                          "opacity": _faded_unless_selected(), "tooltip": TIMING_TOOLTIP}},
            *_copy_rule(),
        ],
    }


def overview_matrix(data_url: str, machines: list[str], ops: list[str], backends: list[str], title: str) -> dict:
    """Op x backend: the best variant's percent of copy bandwidth at the op's largest size."""
    x = {"field": "backend", "type": "nominal", "sort": backends, "title": None, "axis": {"orient": "top", "labelAngle": 0}}
    y = {"field": "op", "type": "nominal", "sort": ops, "title": None}
    # On every layer, the labels too: they sit on top of the cells and catch the pointer.
    cell_tip = [{"field": "op"}, {"field": "backend"}, {"field": "variant", "title": "best variant"},
                {"field": "time", "title": "median time"}, {"field": "ci", "title": "99% interval"},
                {"field": "gbps_text", "title": "bandwidth"}, {"field": "pct_text", "title": "of copy bandwidth"},
                {"field": "speedup_text", "title": "speedup vs best PyTorch eager"}, {"field": "size"},
                {"field": "commit"},
                {"field": "why", "title": "empty because"}]
    return {
        "$schema": SCHEMA, "title": _title(title, "Hover a cell for its numbers."), "width": "container",
        "height": 60 * len(ops),
        "data": {"url": data_url},
        "params": [{"name": "machine", "value": machines[0]}],
        "transform": [{"filter": "datum.machine === machine"}],
        "encoding": {"x": x, "y": y, "tooltip": cell_tip},
        "layer": [
            {"transform": [{"filter": "datum.variant == null"}],
             "mark": {"type": "rect", "stroke": "white", "strokeWidth": 2, "color": "#9e9e9e", "opacity": 0.25}},
            {"transform": [{"filter": "datum.variant != null"}],
             "mark": {"type": "rect", "stroke": "white", "strokeWidth": 2},
             "encoding": {"color": {"field": "pct", "type": "quantitative", "title": "% of copy BW",
                                    "scale": PCT_OF_COPY_COLOUR, "legend": {"gradientLength": 160}}}},
            {"mark": {"type": "text", "baseline": "middle", "lineBreak": "\n", "fontSize": 12, "color": "black"},
             "encoding": {"text": {"field": "label"}}},
        ],
    }


def roofline(data_url: str, machines: list[str], title: str) -> dict:
    """Achieved FLOP/s against arithmetic intensity, under the bandwidth and compute roofs (log-log)."""
    params, where = _switches(None, machines)
    x = {"field": "intensity", "type": "quantitative", "scale": {"type": "log", "domain": list(INTENSITY_RANGE)},
         "title": "arithmetic intensity (FLOP per byte moved, log scale)"}
    y = {"field": "gflops", "type": "quantitative", "scale": {"type": "log"}, "title": "GFLOP/s (log scale)"}
    label = {"type": "text", "color": "#888", "fontStyle": "italic"}
    return {
        "$schema": SCHEMA, "title": _title(title), "width": "container", "height": 420,
        "data": {"url": data_url}, "params": params,
        "transform": [{"filter": where}],
        "layer": [
            {"transform": [{"filter": "datum.kind === 'point'"},
                           {"aggregate": [{"op": "max", "field": "gflops", "as": "gflops"}],
                            "groupby": ["op", "intensity"]}],
             "mark": {**label, "dy": -14, "fontStyle": "normal", "fontWeight": "bold"},
             "encoding": {"x": x, "y": y, "text": {"field": "op"}}},
            {"transform": [{"filter": "datum.kind === 'roof'"}],
             "mark": {"type": "line", "color": "#888", "strokeWidth": 2},
             "encoding": {"x": x, "y": y, "detail": {"field": "roof"},
                          "tooltip": [{"field": "roof_text", "title": "roof"}]}},
            {"transform": [{"filter": "datum.kind === 'roof_label' && datum.roof === 'memory'"}],
             "mark": {**label, "align": "left", "dx": 8, "dy": 14},
             "encoding": {"x": x, "y": y, "text": {"field": "roof_text"}}},
            {"transform": [{"filter": "datum.kind === 'roof_label' && datum.roof === 'compute'"}],
             "mark": {**label, "align": "right", "dy": -8},
             "encoding": {"x": x, "y": y, "text": {"field": "roof_text"}}},
            {"transform": [{"filter": "datum.kind === 'point'"}],
             "mark": {"type": "point", "filled": True, "size": 90}, "params": [_series_selection("backend")],
             "encoding": {"x": x, "y": y,
                          "color": {"field": "backend", "type": "nominal",
                                    "legend": {"title": "backend", "symbolOpacity": 1}},
                          "shape": {"field": "variant_kind", "type": "nominal", "title": "variant",
                                    "scale": {"domain": list(KIND_SHAPES), "range": list(KIND_SHAPES.values())}},
                          "opacity": _faded_unless_selected(),
                          "tooltip": [{"field": "variant"}, {"field": "variant_kind", "title": "kind"},
                                      {"field": "op"}, {"field": "size"},
                                      {"field": "intensity_text", "title": "FLOP/byte"},
                                      {"field": "gflops_text", "title": "achieved"},
                                      {"field": "pct_of_roof_text", "title": "of the roof here"},
                                      {"field": "time", "title": "median time"}, {"field": "commit"}]}},
        ],
    }


def history(data_url: str, modes: list[str], machines: list[str], dtypes: list[str], sizes: list[str],
            title: str) -> dict:
    """Median time across commits per variant, the 99% interval as a band, a link per commit."""
    params, where = _switches(modes, machines, dtypes)
    params.append({"name": "size", "value": sizes[-1],
                   "bind": {"input": "select", "options": sizes, "name": "size "}})
    x = {"field": "commit", "type": "ordinal", "sort": {"field": "order"}, "title": "commit (oldest to newest)",
         "axis": {"labelAngle": -40}}
    y = {"field": "time_us", "type": "quantitative", "scale": {"type": "log"},
         "title": "median time, µs (log scale)"}
    color = {"field": "variant", "type": "nominal", "scale": {"scheme": "tableau20"},
             "legend": {"title": "variant", "symbolOpacity": 1}}
    return {
        "$schema": SCHEMA, "title": _title(title, LEGEND_HINT + " Click a point to open its commit."),
        "width": "container", "height": 340,
        "data": {"url": data_url}, "params": params,
        "transform": [{"filter": f"{where} && datum.size === size && datum.time_us != null"}],
        "encoding": {"x": x},
        "layer": [
            {"mark": {"type": "area", "opacity": 0.18},
             "encoding": {"y": {"field": "ci_low_us", "type": "quantitative"}, "y2": {"field": "ci_high_us"},
                          "color": color, "detail": {"field": "version"}}},
            {"mark": {"type": "line"}, "encoding": {"y": y, "color": color, "detail": {"field": "version"},
                                                     "opacity": _faded_unless_selected()}},
            {"mark": {"type": "point", "filled": True, "size": 60, "cursor": "pointer"},
             "params": [_series_selection()],
             "encoding": {"y": y, "color": color, "href": {"field": "href"}, "opacity": _faded_unless_selected(),
                          "tooltip": [{"field": "variant"}, {"field": "size"}, {"field": "mode"},
                                      {"field": "time", "title": "median time"},
                                      {"field": "ci", "title": "99% interval"}, {"field": "commit"},
                                      {"field": "subject", "title": "commit message"},
                                      {"field": "version", "title": "benchmark version"}]}},
        ],
    }


def machine_ratio(data_url: str, modes: list[str], ops: list[str], machine_a: str, machine_b: str) -> dict:
    """Per benchmark, B's speedup over A (time on A / time on B) against size, beside the ratio of copy
    bandwidths."""
    params = [{"name": "mode", "value": modes[0], "bind": {"input": "radio", "options": modes, "name": "timing mode "}},
              {"name": "op", "value": ops[0], "bind": {"input": "select", "options": ops, "name": "op "}}]
    color = {"field": "variant", "type": "nominal", "scale": {"scheme": "tableau20"},
             "legend": {"title": "variant", "symbolOpacity": 1}}
    x = POW2_X
    return {
        "$schema": SCHEMA, "title": _title(f"{machine_b} against {machine_a}: speedup per benchmark"),
        "width": "container", "height": 340,
        "data": {"url": data_url}, "params": params,
        "transform": [{"filter": "datum.mode === mode && datum.op === op"}],
        "layer": [
            {"mark": {"type": "line"}, "encoding": {"x": x, "y": {"field": "speedup", "type": "quantitative"},
                                                     "color": color, "opacity": _faded_unless_selected()}},
            {"mark": {"type": "point", "filled": True, "size": 60}, "params": [_series_selection()],
             "encoding": {"x": x, "y": {"field": "speedup", "type": "quantitative",
                                        "title": f"speedup: time on {machine_a} / time on {machine_b}"},
                          "color": color, "opacity": _faded_unless_selected(),
                          "tooltip": [{"field": "variant"}, {"field": "size"}, {"field": "mode"},
                                      {"field": "time_a_text", "title": f"time on {machine_a}"},
                                      {"field": "time_b_text", "title": f"time on {machine_b}"},
                                      {"field": "speedup_text", "title": "speedup"},
                                      {"field": "bandwidth_ratio_text", "title": "copy bandwidth ratio"}]}},
            {"transform": [{"aggregate": [{"op": "max", "field": "bandwidth_ratio", "as": "bandwidth_ratio"}]},
                           {"calculate": "'copy bandwidth ratio ' + format(datum.bandwidth_ratio, '.2f')",
                            "as": "label"}],
             "mark": {"type": "rule", "strokeDash": [6, 4], "color": "#888"},
             "encoding": {"y": {"field": "bandwidth_ratio", "type": "quantitative"},
                          "tooltip": {"field": "label"}}},
        ],
    }


def fixed_block(data_url: str, machines: list[str], title: str) -> dict:
    """The lecture's row kernel with BLOCK_SIZE fixed at 1024: the bandwidth its plot reports, per width.

    Each point is one width, coloured and shaped by whether the output matched the reference; the dashed line
    is the machine's measured copy bandwidth. Past 1024 columns the kernel squares only each row's first 1024
    elements, so dividing all of the tensor's bytes by its time gives numbers above the copy bandwidth.
    """
    params, where = _switches(None, machines)
    x = {"field": "cols", "type": "quantitative", "scale": {"type": "log", "base": 2},
         "axis": {"title": "row width (columns, log scale)", "labelExpr": "format(datum.value, ',')"}}
    y = {"field": "reported_gbps", "type": "quantitative", "scale": {"type": "log"},
         "title": "GB/s the lecture's plot reports (all bytes / time, log scale)"}
    check = {"field": "check", "type": "nominal", "title": "output",
             "scale": {"domain": ["matches the reference", "wrong"], "range": ["#2e7d32", "#c62828"]},
             "legend": {"symbolOpacity": 1}}
    return {
        "$schema": SCHEMA, "title": _title(title, "Hover a point for its numbers."), "width": "container",
        "height": 320, "data": {"url": data_url}, "params": params,
        "transform": [{"filter": where}],
        "layer": [
            {"mark": {"type": "line", "color": "#bbb"}, "encoding": {"x": x, "y": y}},
            {"mark": {"type": "point", "filled": True, "size": 110},
             "encoding": {"x": x, "y": y, "color": check,
                          "shape": {**check, "scale": {"domain": check["scale"]["domain"],
                                                       "range": ["circle", "cross"]}},
                          "tooltip": [{"field": "cols", "title": "columns", "format": ","},
                                      {"field": "check", "title": "output"},
                                      {"field": "rel_err_text", "title": "relative error"},
                                      {"field": "time", "title": "time"},
                                      {"field": "gbps_text", "title": "reported bandwidth"},
                                      {"field": "pct_text", "title": "of copy bandwidth"}]}},
            *_copy_rule(),
        ],
    }
