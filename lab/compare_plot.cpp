// The compare tool's plot: wall time against N on log-log axes, one line per program.
//
// Log-log, because N spans four decades and so do the times, and because the two ways of waiting
// are then two straight lines: one request at a time takes N x delay (a slope of one: ten times the
// requests, ten times the time), all at once takes about one delay (flat) until something else
// (CPU, descriptors, the kernel's accept queue) starts to cost per request and the line bends up.
// Both ideals are drawn dashed, so each stage can be read against them.
//
// A run at a single N has no line to draw: it gets one bar per program instead.
#include <algorithm>
#include <cmath>
#include <set>

#include "lab/compare.hpp"
#include "lab/svg.hpp"

namespace sixways::lab {

namespace {

// The picture's layout, in SVG units (pixels at 100 %).
constexpr double width = 900, height = 540;
constexpr double plot_left = 80, plot_right = 610, plot_top = 50, plot_bottom = 460;
constexpr double legend_left = 630;
constexpr double inset = 14;  // the decades end this far inside the frame, so no dot is cut in half

// Colours that stay apart from each other on white: Tableau's ten (yellow left out) first, then ten
// more, so that a run with two servers and the peers (up to 18 lines) still gives every line a
// colour of its own.
constexpr const char* colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                   "#b07aa1", "#9c755f", "#ff9da7", "#bcbd22", "#555555",
                                   "#a0cbe8", "#ffbe7d", "#6a3d9a", "#1b9e77", "#8cd17d",
                                   "#e7298a", "#d7b5a6", "#7570b3", "#b6992d", "#bab0ac"};

// A log axis from 10^low to 10^high mapped onto pixels [from, to].
struct LogAxis {
    int low, high;
    double from, to;

    double position(double value) const {
        double fraction = (std::log10(value) - low) / (high - low);
        return from + fraction * (to - from);
    }
};

// The decades that hold every value: [floor(log10 min), ceil(log10 max)], at least one decade.
LogAxis decades_around(const std::vector<double>& values, double from, double to) {
    if (values.empty()) {
        return {0, 1, from, to};
    }
    auto [smallest, largest] = std::minmax_element(values.begin(), values.end());
    int low = static_cast<int>(std::floor(std::log10(*smallest) + 1e-9));
    int high = static_cast<int>(std::ceil(std::log10(*largest) - 1e-9));
    return {low, std::max(high, low + 1), from, to};
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attributes) {
    return "<line x1=\"" + svg::number(x1) + "\" y1=\"" + svg::number(y1) + "\" x2=\"" +
           svg::number(x2) + "\" y2=\"" + svg::number(y2) + "\" " + attributes + "/>\n";
}

std::string text(double x, double y, const std::string& content, const std::string& attributes) {
    return "<text x=\"" + svg::number(x) + "\" y=\"" + svg::number(y) + "\" " + attributes + ">" +
           svg::escape(content) + "</text>\n";
}

// Grid lines and labels: a labelled line at each power of ten, faint ones at 2..9 times it.
std::string draw_axes(const LogAxis& x, const LogAxis& y) {
    std::string out;
    for (int decade = x.low; decade <= x.high; ++decade) {
        double base = std::pow(10.0, decade);
        for (int multiple = 1; multiple <= 9 && (multiple == 1 || decade < x.high); ++multiple) {
            double px = x.position(base * multiple);
            out += line(px, plot_top, px, plot_bottom,
                        multiple == 1 ? "stroke=\"#cccccc\"" : "stroke=\"#eeeeee\"");
        }
        out += text(x.position(base), plot_bottom + 18, svg::tick_label(base),
                    "text-anchor=\"middle\"");
    }
    // Times often span only a decade or two: then 2 and 5 times each power of ten are labelled too.
    const bool label_more = y.high - y.low <= 2;
    for (int decade = y.low; decade <= y.high; ++decade) {
        double base = std::pow(10.0, decade);
        for (int multiple = 1; multiple <= 9 && (multiple == 1 || decade < y.high); ++multiple) {
            double py = y.position(base * multiple);
            out += line(plot_left, py, plot_right, py,
                        multiple == 1 ? "stroke=\"#cccccc\"" : "stroke=\"#eeeeee\"");
            if (multiple == 1 || (label_more && (multiple == 2 || multiple == 5))) {
                out += text(plot_left - 8, py + 4, svg::tick_label(base * multiple),
                            multiple == 1 ? "text-anchor=\"end\""
                                          : "text-anchor=\"end\" fill=\"#777777\"");
            }
        }
    }
    out += "<rect x=\"" + svg::number(plot_left) + "\" y=\"" + svg::number(plot_top) +
           "\" width=\"" + svg::number(plot_right - plot_left) + "\" height=\"" +
           svg::number(plot_bottom - plot_top) + "\" fill=\"none\" stroke=\"#333333\"/>\n";
    out += text((plot_left + plot_right) / 2, plot_bottom + 42, "requests (N), log scale",
                "text-anchor=\"middle\"");
    double middle = (plot_top + plot_bottom) / 2;
    out += text(24, middle, "wall time (s), log scale",
                "text-anchor=\"middle\" transform=\"rotate(-90 24 " + svg::number(middle) + ")\"");
    return out;
}

std::string polyline(const std::vector<std::pair<double, double>>& points,
                     const std::string& attributes) {
    std::string out = "<polyline points=\"";
    for (std::size_t i = 0; i < points.size(); ++i) {
        out += (i == 0 ? "" : " ") + svg::number(points[i].first) + "," +
               svg::number(points[i].second);
    }
    return out + "\" fill=\"none\" " + attributes + "/>\n";
}

// The median wall time of `program` at `n`, NaN if it has none; and whether some requests failed.
struct Point {
    double wall = std::nan("");
    bool some_failed = false;
};

Point point_of(const std::vector<Row>& rows, const std::string& program, std::size_t n) {
    Point point;
    for (const Row& row : rows) {
        if (row.program == program && row.requests == n) {
            point = {row.wall_s(), row.failed().value_or(0) > 0};
        }
    }
    return point;
}

std::string bracketed(const std::string& about) { return about.empty() ? "" : " (" + about + ")"; }

std::string rect(double x, double y, double w, double h, const std::string& attributes) {
    return "<rect x=\"" + svg::number(x) + "\" y=\"" + svg::number(y) + "\" width=\"" +
           svg::number(w) + "\" height=\"" + svg::number(h) + "\" " + attributes + "/>\n";
}

// One N: a horizontal bar per program, its length the wall time on a linear axis from zero (a
// bar's length has to be proportional to what it shows, which on a log axis it is not), the time
// written at its end. The ideals are dashed vertical lines where they fall on the axis: at
// N = 10,000 and a 100 ms delay, "delay" (0.1 s) does, "N x delay" (1,000 s) does not.
std::string bar_chart(const std::vector<Row>& rows, const std::vector<std::string>& programs,
                      std::size_t n, const PlotOptions& options) {
    const std::string title = "Wall time" + bracketed(options.about);
    constexpr double names_right = 300, bars_left = 310, bars_right = 790;
    constexpr double top = 50, pitch = 26, bar_height = 16;
    const double bars_bottom = top + pitch * static_cast<double>(programs.size()) + 6;

    std::vector<Point> points;
    double longest = 0;
    for (const std::string& program : programs) {
        points.push_back(point_of(rows, program, n));
        if (points.back().wall > longest) longest = points.back().wall;
    }
    struct Reference {
        double seconds;
        std::string colour, label;
    };
    std::vector<Reference> references;
    const double delay_s = std::chrono::duration<double>(options.delay).count();
    if (options.reference_lines && delay_s > 0) {
        const double one_at_a_time = static_cast<double>(n) * delay_s;
        if (one_at_a_time <= longest) {
            references.push_back({one_at_a_time, "#333333", "N × delay (one at a time)"});
        }
        references.push_back({delay_s, "#999999", "delay (all at once)"});
    }
    for (const Reference& reference : references) longest = std::max(longest, reference.seconds);

    // The axis ends at the first round tick at or past the longest bar.
    std::vector<double> ticks = svg::linear_ticks(0, longest > 0 ? longest : 1, 8);
    const double step = ticks[1] - ticks[0];
    while (ticks.back() < longest * (1 - 1e-9)) ticks.push_back(ticks.back() + step);
    const double axis_end = ticks.back();
    auto x_of = [&](double seconds) {
        return bars_left + seconds / axis_end * (bars_right - bars_left);
    };

    const bool any_failed = std::any_of(points.begin(), points.end(), [](const Point& point) {
        return point.wall > 0 && point.some_failed;
    });
    const std::size_t legend_lines = references.size() + (any_failed ? 1 : 0);
    const double chart_height = bars_bottom + 60 + 22 * static_cast<double>(legend_lines);

    std::string out = svg::open_document(width, chart_height);
    out += text(width / 2, 28, title,
                "text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\"");
    for (double tick : ticks) {
        const double px = x_of(tick);
        out += line(px, top - 6, px, bars_bottom,
                    tick == 0 ? "stroke=\"#333333\"" : "stroke=\"#dddddd\"");
        out += text(px, bars_bottom + 18, svg::tick_label(tick), "text-anchor=\"middle\"");
    }
    out += text((bars_left + bars_right) / 2, bars_bottom + 42,
                "wall time (s) at N = " + std::to_string(n), "text-anchor=\"middle\"");

    for (std::size_t p = 0; p < programs.size(); ++p) {
        const std::string colour = colours[p % std::size(colours)];
        const double y = top + pitch * static_cast<double>(p);
        out += text(names_right, y + bar_height - 3, programs[p], "text-anchor=\"end\"");
        const Point& point = points[p];
        if (!(point.wall > 0)) {
            out += text(bars_left + 6, y + bar_height - 3, "no time", "fill=\"#777777\"");
            continue;
        }
        // A hollow bar where some requests failed: its time is not the time of N answers.
        out += rect(bars_left, y, x_of(point.wall) - bars_left, bar_height,
                    point.some_failed ? "fill=\"white\" stroke-width=\"2\" stroke=\"" + colour +
                                            "\" class=\"bar failed\""
                                      : "fill=\"" + colour + "\" class=\"bar\"");
        out += text(x_of(point.wall) + 6, y + bar_height - 3, format_value(point.wall) + " s", "");
    }

    double legend_y = bars_bottom + 70;
    for (const Reference& reference : references) {
        const std::string dashed =
            "stroke=\"" + reference.colour + "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"";
        const double px = x_of(reference.seconds);
        out += line(px, top - 6, px, bars_bottom, dashed + " class=\"reference\"");
        out += line(bars_left, legend_y, bars_left + 26, legend_y, dashed);
        out += text(bars_left + 34, legend_y + 4, reference.label, "");
        legend_y += 22;
    }
    if (any_failed) {
        out += rect(bars_left, legend_y - 6, 26, 12,
                    "fill=\"white\" stroke-width=\"2\" stroke=\"#555555\"");
        out += text(bars_left + 34, legend_y + 4, "some requests failed", "");
    }
    return out + svg::close_document();
}

}  // namespace

std::string plot_svg(const std::vector<Row>& rows, const PlotOptions& options) {
    // The programs in order of appearance, the counts in ascending order, and what was measured.
    std::vector<std::string> programs;
    std::set<std::size_t> count_set;
    std::vector<double> counts_seen, times_seen;
    for (const Row& row : rows) {
        if (std::find(programs.begin(), programs.end(), row.program) == programs.end()) {
            programs.push_back(row.program);
        }
        if (row.requests > 0) {
            count_set.insert(row.requests);
            counts_seen.push_back(static_cast<double>(row.requests));
        }
        if (double wall = row.wall_s(); row.requests > 0 && wall > 0) {
            times_seen.push_back(wall);
        }
    }
    const std::vector<std::size_t> counts(count_set.begin(), count_set.end());
    if (counts.size() == 1) {
        return bar_chart(rows, programs, counts.front(), options);
    }
    const double delay_s = std::chrono::duration<double>(options.delay).count();
    const bool references = options.reference_lines && delay_s > 0;
    if (references) {
        times_seen.push_back(delay_s);  // the flat line is always in view; N x delay may leave it
    }
    const LogAxis x = decades_around(counts_seen, plot_left + inset, plot_right - inset);
    const LogAxis y = decades_around(times_seen, plot_bottom - inset, plot_top + inset);

    std::string out = svg::open_document(width, height);
    out += text(width / 2, 28, "Wall time against N" + bracketed(options.about),
                "text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\"");
    out += draw_axes(x, y);
    out += "<clipPath id=\"plot-area\"><rect x=\"" + svg::number(plot_left) + "\" y=\"" +
           svg::number(plot_top) + "\" width=\"" + svg::number(plot_right - plot_left) +
           "\" height=\"" + svg::number(plot_bottom - plot_top) + "\"/></clipPath>\n";
    out += "<g clip-path=\"url(#plot-area)\">\n";

    // The ideals, across the whole N axis (past it, to the frame; the clip path cuts them there):
    // N x delay (one at a time) and delay (all at once).
    const double n_low = std::pow(10.0, x.low) / 2, n_high = std::pow(10.0, x.high) * 2;
    const std::string dashed = "stroke-width=\"1.5\" stroke-dasharray=\"6 4\" class=\"reference\"";
    if (references) {
        out += polyline({{x.position(n_low), y.position(n_low * delay_s)},
                         {x.position(n_high), y.position(n_high * delay_s)}},
                        "stroke=\"#333333\" " + dashed);
        out += polyline({{x.position(n_low), y.position(delay_s)},
                         {x.position(n_high), y.position(delay_s)}},
                        "stroke=\"#999999\" " + dashed);
    }

    // Each program: segments between consecutive counts that both have a time, and a dot on each.
    std::string dots;
    bool any_failed = false;
    for (std::size_t p = 0; p < programs.size(); ++p) {
        const std::string colour = colours[p % std::size(colours)];
        std::vector<std::pair<double, double>> segment;
        auto end_segment = [&] {
            if (segment.size() >= 2) {
                out += polyline(segment, "stroke=\"" + colour +
                                             "\" stroke-width=\"2\" class=\"series\"");
            }
            segment.clear();
        };
        for (std::size_t n : counts) {
            // Where some requests failed, the time is not that of N answers: a hollow dot.
            const auto [wall, some_failed] = point_of(rows, programs[p], n);
            if (!(wall > 0)) {
                end_segment();
                continue;
            }
            double px = x.position(static_cast<double>(n)), py = y.position(wall);
            segment.push_back({px, py});
            dots += "<circle cx=\"" + svg::number(px) + "\" cy=\"" + svg::number(py) +
                    (some_failed ? "\" r=\"4.5\" fill=\"white\" stroke-width=\"2\" stroke=\"" +
                                       colour + "\" class=\"point failed\"/>\n"
                                 : "\" r=\"3.5\" fill=\"" + colour + "\" class=\"point\"/>\n");
            any_failed = any_failed || some_failed;
        }
        end_segment();
    }
    out += dots + "</g>\n";

    // The legend, to the right of the plot.
    double legend_y = plot_top + 8;
    for (std::size_t p = 0; p < programs.size(); ++p, legend_y += 22) {
        const std::string colour = colours[p % std::size(colours)];
        out += line(legend_left, legend_y, legend_left + 26, legend_y,
                    "stroke=\"" + colour + "\" stroke-width=\"2\"");
        out += "<circle cx=\"" + svg::number(legend_left + 13) + "\" cy=\"" +
               svg::number(legend_y) + "\" r=\"3.5\" fill=\"" + colour + "\"/>\n";
        out += text(legend_left + 34, legend_y + 4, programs[p], "");
    }
    if (references) {
        legend_y += 10;
        out += line(legend_left, legend_y, legend_left + 26, legend_y,
                    "stroke=\"#333333\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
        out += text(legend_left + 34, legend_y + 4, "N × delay (one at a time)", "");
        legend_y += 22;
        out += line(legend_left, legend_y, legend_left + 26, legend_y,
                    "stroke=\"#999999\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
        out += text(legend_left + 34, legend_y + 4, "delay (all at once)", "");
    }
    if (any_failed) {
        legend_y += 32;
        out += "<circle cx=\"" + svg::number(legend_left + 13) + "\" cy=\"" +
               svg::number(legend_y) + "\" r=\"4.5\" fill=\"white\" stroke-width=\"2\" " +
               "stroke=\"#555555\"/>\n";
        out += text(legend_left + 34, legend_y + 4, "some requests failed", "");
    }
    return out + svg::close_document();
}

}  // namespace sixways::lab
