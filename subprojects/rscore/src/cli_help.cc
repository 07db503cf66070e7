#include "rscore/cli_help.h"

#include <boost/program_options/cmdline.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <sstream>

#include "rscore/cli.h"

namespace rs::cli {

namespace po = boost::program_options;

namespace {

constexpr size_t kNameWidth = 26;
constexpr size_t kLineWidth = 96;

// `text` wrapped at kLineWidth, every line after the first indented by `indent`.
std::string Wrap(const std::string& text, size_t indent, size_t first_column) {
  std::string out, word;
  size_t column = first_column;
  std::istringstream words(text);
  bool first = true;
  while (words >> word) {
    if (!first && column + 1 + word.size() > kLineWidth) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (!first) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    first = false;
  }
  return out;
}

std::string OptionName(const po::option_description& o) {
  const std::string shown = o.canonical_display_name(po::command_line_style::allow_dash_for_short);
  const bool has_short = shown.size() == 2 && shown[0] == '-' && shown[1] != '-';
  std::string name = has_short ? shown + ", " : "    ";
  name += "--" + o.long_name();
  if (o.semantic()->max_tokens() > 0) name += " " + o.semantic()->name();
  return name;
}

}  // namespace

std::string FormatHelp(const HelpText& text, const po::options_description& options) {
  std::ostringstream out;
  std::istringstream usage(text.usage);
  std::string line;
  bool first = true;
  while (std::getline(usage, line)) {
    out << (first ? "usage: " : "       ") << line << "\n";
    first = false;
  }
  if (!text.about.empty()) out << "\n" << text.about << (text.about.back() == '\n' ? "" : "\n");
  out << "\noptions:\n";
  for (const auto& o : options.options()) {
    std::string name = "  " + OptionName(*o);
    if (name.size() + 2 > kNameWidth) {
      out << name << "\n" << std::string(kNameWidth, ' ');
    } else {
      out << name << std::string(kNameWidth - name.size(), ' ');
    }
    out << Wrap(o->description(), kNameWidth, kNameWidth) << "\n";
  }
  if (!text.examples.empty()) {
    out << "\nexamples:\n";
    for (const auto& [command, what] : text.examples) {
      out << "  " << command << "\n      " << Wrap(what, 6, 6) << "\n";
    }
  }
  out << "\n" << kExitStatusHelp << text.more_exit_codes << ".\n";
  if (!text.man_page.empty()) out << "See " << text.man_page << ".\n";
  return out.str();
}

std::vector<std::string> ArgsOf(int argc, const char* const* argv) {
  return std::vector<std::string>(argv + (argc > 0 ? 1 : 0), argv + argc);
}

Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                             const boost::program_options::options_description& visible,
                             const boost::program_options::options_description& hidden) {
  namespace po = boost::program_options;
  ParsedArgs out;
  po::options_description all;
  all.add(visible).add(hidden);
  all.add_options()("rankscope-positional", po::value<std::vector<std::string>>());
  po::positional_options_description pos;
  pos.add("rankscope-positional", -1);
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), out.vm);
    po::notify(out.vm);
  } catch (const po::error& e) {
    return Error(e.what());
  }
  if (out.vm.count("rankscope-positional")) {
    out.positional = out.vm["rankscope-positional"].as<std::vector<std::string>>();
  }
  return out;
}

}  // namespace rs::cli
