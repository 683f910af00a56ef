// `vmlab report`: one self-contained HTML file (inline CSS, the charts as inline SVG, no
// script, no external resource), so it opens offline and can be mailed or attached to a
// bug. The charts are gnuplot's SVG (report/plot.h) with the XML prologue removed.
#pragma once

#include <string>
#include <vector>

namespace vmlab {

struct html_report {
  std::string title;          // "vmlab report: examples/oltp-small"
  std::string scenario_name;  // path or built-in name
  std::string scenario_text;  // the TOML as written (before --set)
  std::vector<std::string> settings;  // --set PATH=VALUE
  std::string run_table;      // `vmlab run`'s table (format_table)
  std::string compare_table;  // `vmlab compare`'s table, or "" without variants
  struct figure {
    std::string caption;
    std::string svg;  // a whole SVG document as gnuplot wrote it
  };
  std::vector<figure> charts;
  std::string notes;  // format_notes, one line each with the long form
};

// "&lt;" and friends for &, <, >, " and '.
std::string html_escape(const std::string& s);

// An SVG document made fit to inline: everything before "<svg" (XML declaration,
// DOCTYPE) removed.
std::string inline_svg(const std::string& svg);

std::string format_html_report(const html_report& r);

}  // namespace vmlab
