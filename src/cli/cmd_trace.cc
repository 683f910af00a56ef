// vmlab trace SCENARIO [-o FILE]
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "workload/trace.h"

namespace vmlab::cli {

action add_trace(CLI::App& app) {
  struct opts {
    std::string scenario, out;
    std::vector<std::string> settings;
  };
  auto o = std::make_shared<opts>();
  app.add_option("scenario", o->scenario, "Scenario file or built-in name")->required();
  app.add_option("-o,--output", o->out, "Write the trace here (default: standard output)");
  add_set_option(app, o->settings);
  return [o]() -> int {
    auto in = load_input(o->scenario, false, o->settings);
    if (!in.ok()) return report_error(in.error());
    const std::string text = write_trace(in.value());
    if (o->out.empty() || o->out == "-") {
      std::cout << text;
      return 0;
    }
    std::ofstream f(o->out, std::ios::binary);
    f << text;
    f.close();
    if (!f) return report_error(status::io_error("cannot write " + o->out));
    return 0;
  };
}

}  // namespace vmlab::cli
