#include "report/html_report.h"

namespace vmlab {
namespace {

// Light, print-friendly, no web fonts: what every browser has offline.
constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:2em auto;max-width:1100px;color:#222;background:#fff}
h1{font-size:1.5em;border-bottom:2px solid #36c;padding-bottom:.2em}
h2{font-size:1.2em;margin-top:1.6em;color:#234}
pre{background:#f6f8fa;border:1px solid #dde;padding:.8em;overflow-x:auto;font-size:.85em;line-height:1.3}
figure{margin:1em 0}figcaption{font-size:.9em;color:#555}
figure svg{max-width:100%;height:auto;border:1px solid #eee}
.meta{color:#555;font-size:.9em})";

void section(std::string& out, const std::string& id, const std::string& heading, const std::string& pre) {
  out += "<section id=\"" + id + "\"><h2>" + html_escape(heading) + "</h2>\n<pre>" + html_escape(pre) +
         "</pre></section>\n";
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string inline_svg(const std::string& svg) {
  const size_t at = svg.find("<svg");
  return at == std::string::npos ? std::string() : svg.substr(at);
}

std::string format_html_report(const html_report& r) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                    html_escape(r.title) + "</title>\n<style>\n" + kStyle + "\n</style>\n</head>\n<body>\n";
  out += "<h1>" + html_escape(r.title) + "</h1>\n<p class=\"meta\">scenario: <code>" + html_escape(r.scenario_name) +
         "</code>";
  for (const auto& s : r.settings) out += " &middot; --set <code>" + html_escape(s) + "</code>";
  out += "</p>\n";
  if (!r.charts.empty()) {
    out += "<section id=\"charts\"><h2>Charts</h2>\n";
    for (const auto& f : r.charts)
      out += "<figure>" + inline_svg(f.svg) + "<figcaption>" + html_escape(f.caption) + "</figcaption></figure>\n";
    out += "</section>\n";
  }
  if (!r.compare_table.empty()) section(out, "compare", "Designs side by side (vmlab compare)", r.compare_table);
  section(out, "run", "The run (vmlab run)", r.run_table);
  if (!r.notes.empty()) section(out, "notes", "Notes", r.notes);
  section(out, "scenario", "The scenario", r.scenario_text);
  return out + "</body>\n</html>\n";
}

}  // namespace vmlab
